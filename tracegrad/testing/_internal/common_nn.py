"""Mirrors the part of ``torch.testing._internal.common_nn`` that ``test/test_nn.py`` and
``test/nn/*.py`` import: ``NNTestCase`` (a ``TestCase`` whose ``check_jacobian`` compares a module's
backward with central finite differences), ``_test_module_empty_input``, ``_test_bfloat16_ops`` and
``PRECISION``, the ``_create_basic_net`` fixture, ``loss_reference_fns``, ``ctcloss_reference``,
``single_batch_reference_fn``, the generated-test classes ``TestBase``/``ModuleTest``/
``NewModuleTest``/``CriterionTest`` and the tables ``module_tests``/``get_new_module_tests()``/
``criterion_tests`` that ``test_nn.py`` turns into ``TestNN`` methods. Everything here is our own
code; the tables are our own modest selection, not torch's.
"""
from __future__ import annotations

import copy
import io
import math

import tracegrad
from tracegrad.testing._internal.common_cuda import TEST_CUDA, TEST_CUDNN, TEST_MULTIGPU  # noqa: F401
from tracegrad.testing._internal.common_utils import TestCase, freeze_rng_state  # noqa: F401  (torch's common_nn re-exports it; test/nn files import it from here)

PRECISION = 1e-5


def _iter_tensors(x):
    if isinstance(x, tracegrad.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from _iter_tensors(item)


class NNTestCase(TestCase):
    """Mirrors ``common_nn.NNTestCase``. A subclass provides ``_forward(module, input)``,
    ``_backward(module, input, output, grad_output)`` (the input's gradient),
    ``_get_parameters(module)`` (``(params, grads)``) and ``_zero_grad_parameters(module)``;
    ``check_jacobian(module, input)`` then asserts that the Jacobian those give (for the input
    and the parameters) is within ``PRECISION`` of central differences (eps 1e-6, use float64)."""
    _do_cuda_memory_leak_check = False
    _do_cuda_non_default_stream = False

    def _forward(self, *args, **kwargs):
        raise NotImplementedError

    def _get_parameters(self, module):
        raise NotImplementedError

    def _zero_grad_parameters(self, module):
        raise NotImplementedError

    def _backward(self, module, input, output, grad_output, create_graph=False):
        raise NotImplementedError

    def _jacobian(self, input, num_out):
        if isinstance(input, tuple):
            return tuple(self._jacobian(elem, num_out) for elem in input)
        if isinstance(input, list):
            return [self._jacobian(elem, num_out) for elem in input]
        return tracegrad.zeros(input.nelement(), num_out)

    def _flatten_tensors(self, x):
        if isinstance(x, tracegrad.Tensor):
            return x.reshape(-1)
        return tuple(self._flatten_tensors(a) for a in x)

    def _zero_grad_input(self, input):
        if isinstance(input, tracegrad.Tensor):
            if input.requires_grad and input.grad is not None:
                input.grad.zero_()
                input.grad.detach_()
        else:
            for i in input:
                self._zero_grad_input(i)

    def _analytical_jacobian(self, module, input, jacobian_input=True, jacobian_parameters=True):
        output = self._forward(module, input)
        n_out = output.nelement()
        if jacobian_input:
            jac_inp = self._jacobian(input, n_out)
            flat_jac_inp = list(_iter_tensors(jac_inp))
        if jacobian_parameters:
            jac_param = tracegrad.zeros(sum(p.numel() for p in self._get_parameters(module)[0]), n_out)
        for i in range(n_out):
            d_out = tracegrad.zeros_like(output)
            d_out.view(-1)[i] = 1
            if jacobian_parameters:
                self._zero_grad_parameters(module)
            if jacobian_input:
                self._zero_grad_input(input)
            d_input = self._backward(module, input, output, d_out)
            # the parameters' grads are read after the backward (torch reads them before and relies on
            # the backward accumulating into those same tensors; a first backward creates them anew)
            params, d_params = self._get_parameters(module)
            d_params = [tracegrad.zeros_like(p) if d is None else d for p, d in zip(params, d_params)]
            if jacobian_input:
                for jac_x, d_x in zip(flat_jac_inp, _iter_tensors(d_input)):
                    jac_x[:, i] = d_x.reshape(-1)
            if jacobian_parameters:
                jac_param[:, i] = tracegrad.cat(self._flatten_tensors(d_params), 0)
        return ((jac_inp,) if jacobian_input else ()) + ((jac_param,) if jacobian_parameters else ())

    def _numerical_jacobian(self, module, input, jacobian_input=True, jacobian_parameters=True, eps=1e-6):
        def out():
            return self._forward(module, input).detach().reshape(-1).clone()

        def columns(targets):
            rows = []
            for t in targets:
                flat = t.data.view(-1)
                for k in range(flat.numel()):
                    orig = flat[k].item()
                    flat[k] = orig + eps
                    plus = out()
                    flat[k] = orig - eps
                    minus = out()
                    flat[k] = orig
                    rows.append((plus - minus) / (2 * eps))
            return rows
        res = ()
        if jacobian_input:
            res += ([tracegrad.stack(columns([t])) for t in _iter_tensors(input)],)
        if jacobian_parameters:
            res += (tracegrad.stack(columns(self._get_parameters(module)[0])),)
        return res

    def check_jacobian(self, module, input, jacobian_input=True):
        """Asserts the analytical and numerical Jacobians (input and parameters) agree within
        ``PRECISION`` (AssertionError otherwise), as torch's ``NNTestCase.check_jacobian``."""
        jacobian_parameters = bool(self._get_parameters(module)[0])
        analytical = list(_iter_tensors(self._analytical_jacobian(module, input, jacobian_input,
                                                                  jacobian_parameters)))
        numerical = list(_iter_tensors(self._numerical_jacobian(module, input, jacobian_input, jacobian_parameters)))
        differences = [(a - n.to(a.dtype)).abs().max() for a, n in zip(analytical, numerical) if a.numel() != 0]
        if differences:
            self.assertLessEqual(max(differences), PRECISION)


def _test_module_empty_input(test_case, module, inp, check_size=True, inference=False):
    """Mirrors ``common_nn._test_module_empty_input``: ``module`` on an empty ``inp`` gives the
    same size (when ``check_size``) and, unless ``inference``, zero gradients for the input and
    every parameter."""
    if not inference:
        inp.requires_grad_(True)
    out = module(inp)
    if not inference:
        out.backward(tracegrad.rand_like(out))
    if check_size:
        test_case.assertEqual(out.size(), inp.size())
    if not inference:
        for p in module.parameters():
            if p.requires_grad:
                test_case.assertEqual(p.grad, tracegrad.zeros_like(p.grad))
        test_case.assertEqual(inp.grad, tracegrad.zeros_like(inp))


def _test_bfloat16_ops(test_case, op, device, inp_dims=(), prec=1e-2, scale_factor=None):
    """Mirrors ``common_nn._test_bfloat16_ops``: ``op`` (a module) in bfloat16 matches float32,
    outputs and input gradients, within ``prec``."""
    input1 = tracegrad.randn(inp_dims, dtype=tracegrad.float32, device=device, requires_grad=True)
    if scale_factor is not None:
        input1 = (tracegrad.rand(inp_dims, dtype=tracegrad.bfloat16, device=device) * scale_factor).float()
        input1.requires_grad_()
    out1 = op(input1)
    grad1 = tracegrad.randn_like(out1, device=device)
    out1.backward(grad1)
    op_bf16 = op.bfloat16()
    input2 = input1.detach().bfloat16().requires_grad_()
    out2 = op_bf16(input2)
    out2.backward(grad1.bfloat16())
    test_case.assertEqual(out1, out2, atol=prec, rtol=prec, exact_dtype=False)
    test_case.assertEqual(input1.grad.data, input2.grad.data, atol=prec, rtol=prec, exact_dtype=False)


def _create_basic_net():
    """Mirrors ``common_nn._create_basic_net``: the fixture ``test/nn`` files use for state-dict
    and hook tests. Returns ``(layer, net, seq)``: ``layer`` holds parameter
    ``layer_dummy_param`` (3, 5) and buffer ``layer_dummy_buf`` (1, 3, 3, 7); ``net`` holds such a
    layer as ``l1`` plus ``dummy_param`` (3, 5) and ``dummy_buf`` (7, 3, 3, 1); ``seq`` is
    ``nn.Sequential(net, net)`` (the same module twice)."""
    nn = tracegrad.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_dummy_param = nn.Parameter(tracegrad.empty(3, 5))
            self.layer_dummy_buf = nn.Buffer(tracegrad.zeros(1, 3, 3, 7))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = Layer()
            self.dummy_param = nn.Parameter(tracegrad.empty(3, 5))
            self.dummy_buf = nn.Buffer(tracegrad.zeros(7, 3, 3, 1))

    layer = Layer()
    net = Net()
    return layer, net, nn.Sequential(net, net)


def _reduce(output, reduction):
    if reduction == "mean":
        return output.mean()
    if reduction == "sum":
        return output.sum()
    return output


def cosineembeddingloss_reference(input1, input2, target, margin=0, reduction="mean"):
    """Reference for ``CosineEmbeddingLoss`` from its definition: per row, ``1 - cos`` where the
    target is 1, else ``max(0, cos - margin)``; ``cos`` with 1e-12 inside each norm."""
    prod = (input1 * input2).sum(1)
    norms = ((input1 * input1).sum(1) + 1e-12).sqrt() * ((input2 * input2).sum(1) + 1e-12).sqrt()
    cos = prod / norms
    output = tracegrad.where(target == 1, 1 - cos, (cos - margin).clamp(min=0))
    return _reduce(output, reduction)


def marginrankingloss_reference(input1, input2, target, margin=0, reduction="mean"):
    """Reference for ``MarginRankingLoss`` from its definition: ``max(0, -y * (x1 - x2) + margin)``."""
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def tripletmarginloss_reference(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                                reduction="mean"):
    """Reference for ``TripletMarginLoss`` from its definition: ``max(0, margin + d(a, p) - d(a, n))``
    with ``d`` the pairwise p-distance; ``swap`` takes ``min(d(a, n), d(p, n))``."""
    dist = tracegrad.nn.functional.pairwise_distance
    d_pos, d_neg = dist(anchor, positive, p, eps), dist(anchor, negative, p, eps)
    if swap:
        d_neg = tracegrad.min(d_neg, dist(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0.0), reduction)


# ``loss_reference_fns``: the references ``test/test_nn.py`` checks losses against (torch's
# table has more; only these are provided)
loss_reference_fns = {
    "CosineEmbeddingLoss": cosineembeddingloss_reference,
    "MarginRankingLoss": marginrankingloss_reference,
    "TripletMarginLoss": tripletmarginloss_reference,
}


def hingeembeddingloss_reference(input, target, margin=1.0, reduction="mean"):
    """Reference for ``HingeEmbeddingLoss``: ``x`` where the target is 1, ``max(0, margin - x)``
    where it is -1."""
    output = tracegrad.where(target == 1, input, (margin - input).clamp(min=0))
    return _reduce(output, reduction)


def l1loss_reference(input, target, reduction="mean"):
    """Reference for ``L1Loss``: ``|x - y|``."""
    return _reduce((input - target).abs(), reduction)


def mseloss_reference(input, target, reduction="mean"):
    """Reference for ``MSELoss``: ``(x - y)^2``."""
    return _reduce((input - target) ** 2, reduction)


def smoothl1loss_reference(input, target, reduction="mean", beta=1.0):
    """Reference for ``SmoothL1Loss``: quadratic ``0.5 d^2 / beta`` below ``beta``, else ``|d| - beta/2``
    (``beta == 0`` is plain L1)."""
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(tracegrad.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huberloss_reference(input, target, reduction="mean", delta=1.0):
    """Reference for ``HuberLoss``: ``0.5 d^2`` below ``delta``, else ``delta (|d| - delta/2)``."""
    d = (input - target).abs()
    return _reduce(tracegrad.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def kldivloss_reference(input, target, reduction="mean", log_target=False):
    """Reference for ``KLDivLoss`` (``input`` holds log-probabilities): ``y (log y - x)``, 0 where
    ``y == 0``; with ``log_target`` the target holds log-probabilities too."""
    if log_target:
        output = target.exp() * (target - input)
    else:
        safe = tracegrad.where(target > 0, target, tracegrad.ones_like(target))
        output = tracegrad.where(target > 0, target * (safe.log() - input), tracegrad.zeros_like(input))
    if reduction == "batchmean":
        return output.sum() / input.size(0)
    return _reduce(output, reduction)


def softmarginloss_reference(input, target, reduction="mean"):
    """Reference for ``SoftMarginLoss``: ``log(1 + exp(-y x))``."""
    return _reduce((1 + (-target * input).exp()).log(), reduction)


def bceloss_reference(input, target, weight=None, reduction="mean"):
    """Reference for ``BCELoss``: ``-(y log x + (1 - y) log(1 - x))``, each log clamped at -100."""
    output = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        output = output * weight
    return _reduce(output, reduction)


def nllloss_reference(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Reference for ``NLLLoss`` on an ``(N, C)`` (or ``(C,)``) input from its definition, element by
    element: ``-w[t] x[n, t]``; ``mean`` divides by the summed weights of the kept targets."""
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    losses, weights = [], []
    for n in range(input.size(0)):
        t = int(target[n])
        if t == ignore_index:
            losses.append(input.new_zeros(()))
            weights.append(0.0)
            continue
        w = 1.0 if weight is None else float(weight[t])
        losses.append(-w * input[n, t])
        weights.append(w)
    output = tracegrad.stack(losses)
    if reduction == "mean":
        return output.sum() / sum(weights)
    return _reduce(output, reduction)


def crossentropyloss_reference(input, target, weight=None, ignore_index=-100, reduction="mean",
                               label_smoothing=0.0):
    """Reference for ``CrossEntropyLoss`` with class-index targets on ``(N, C)``: NLL of the log-softmax,
    mixed with the uniform distribution's loss when ``label_smoothing`` is set."""
    logp = input.log_softmax(-1)
    nll = nllloss_reference(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    if logp.dim() == 1:
        logp, target = logp.unsqueeze(0), target.unsqueeze(0)
    w = tracegrad.ones(logp.size(1), dtype=logp.dtype) if weight is None else weight
    keep = (target != ignore_index).to(logp.dtype)
    smooth = -(logp * w).sum(1) * keep / logp.size(1)
    if reduction == "mean":
        denom = sum(float(w[int(t)]) for t in target if int(t) != ignore_index)
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing * smooth


def multimarginloss_reference(input, target, p=1, margin=1, weight=None, reduction="mean"):
    """Reference for ``MultiMarginLoss`` on ``(N, C)``: per row ``sum_{j != y} max(0, m - x[y] + x[j])^p / C``
    (times ``w[y]``)."""
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    rows = []
    for n in range(input.size(0)):
        y = int(target[n])
        terms = (margin - input[n, y] + input[n]).clamp(min=0) ** p
        if weight is not None:
            terms = terms * weight[y]
        mask = tracegrad.ones(input.size(1), dtype=input.dtype)
        mask[y] = 0
        rows.append((terms * mask).sum() / input.size(1))
    return _reduce(tracegrad.stack(rows), reduction)


def multilabelsoftmarginloss_reference(input, target, weight=None, reduction="mean"):
    """Reference for ``MultiLabelSoftMarginLoss``: the mean over classes of the binary logistic loss."""
    loss = -(target * tracegrad.nn.functional.logsigmoid(input)
             + (1 - target) * tracegrad.nn.functional.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction)


def ctcloss_reference(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean"):
    """Reference for ``CTCLoss`` (mirrors ``common_nn.ctcloss_reference``'s interface): the forward
    (alpha) recursion over the blank-extended target, in log space with Python floats, one sample at a
    time. ``log_probs`` is ``(T, N, C)``; ``targets`` is ``(N, S)`` padded or 1-D concatenated.
    ``mean`` divides each loss by its target length, then averages. Not differentiable."""
    lp = log_probs.detach().double().tolist()
    in_len = [int(v) for v in tracegrad.as_tensor(input_lengths).reshape(-1).tolist()]
    tg_len = [int(v) for v in tracegrad.as_tensor(target_lengths).reshape(-1).tolist()]
    tg = targets.tolist()
    neg_inf = float("-inf")

    def lse(*xs):
        m = max(xs)
        if m == neg_inf:
            return neg_inf
        return m + math.log(sum(math.exp(x - m) for x in xs))

    losses = []
    start = 0
    for b in range(len(in_len)):
        length = tg_len[b]
        labels = tg[b][:length] if targets.dim() == 2 else tg[start:start + length]
        start += length
        ext = [blank]
        for label in labels:
            ext += [int(label), blank]
        alpha = [neg_inf] * len(ext)
        alpha[0] = lp[0][b][ext[0]]
        if len(ext) > 1:
            alpha[1] = lp[0][b][ext[1]]
        for t in range(1, in_len[b]):
            new = [neg_inf] * len(ext)
            for s in range(len(ext)):
                cands = [alpha[s]]
                if s >= 1:
                    cands.append(alpha[s - 1])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    cands.append(alpha[s - 2])
                new[s] = lse(*cands) + lp[t][b][ext[s]]
            alpha = new
        losses.append(-lse(*alpha[-2:]))
    output = tracegrad.tensor(losses, dtype=tracegrad.float64)
    if reduction == "mean":
        output = (output / tracegrad.tensor(tg_len, dtype=tracegrad.float64).clamp(min=1)).mean()
    elif reduction == "sum":
        output = output.sum()
    return output.to(log_probs.dtype)


loss_reference_fns.update({
    "HingeEmbeddingLoss": hingeembeddingloss_reference,
    "L1Loss": l1loss_reference,
    "MSELoss": mseloss_reference,
    "SmoothL1Loss": smoothl1loss_reference,
    "HuberLoss": huberloss_reference,
    "KLDivLoss": kldivloss_reference,
    "SoftMarginLoss": softmarginloss_reference,
    "BCELoss": bceloss_reference,
    "NLLLoss": nllloss_reference,
    "CrossEntropyLoss": crossentropyloss_reference,
    "MultiMarginLoss": multimarginloss_reference,
    "MultiLabelSoftMarginLoss": multilabelsoftmarginloss_reference,
    "CTCLoss": ctcloss_reference,
})


def single_batch_reference_fn(input, parameters, module):
    """Reference for a module given an input without a batch dimension (mirrors
    ``common_nn.single_batch_reference_fn``'s interface): run ``module`` on the input with a batch
    dimension of one added to every tensor, then drop that dimension from the output."""
    inputs = input if isinstance(input, (list, tuple)) else (input,)
    batched = [t.unsqueeze(0) for t in inputs]
    with freeze_rng_state():
        return module(*batched).squeeze(0)


def get_reduction(m):
    """The reduction string of loss module ``m`` (``reduction``, else from the legacy
    ``sizeAverage`` attribute)."""
    result = getattr(m, "reduction", None)
    if result is None:
        from tracegrad.nn import _reduction
        result = _reduction.legacy_get_string(getattr(m, "sizeAverage", None), True, emit_warning=False)
    return result


# --- the generated-test classes of ``test/test_nn.py`` ---------------------------------------

def _map_tensors(obj, fn):
    if isinstance(obj, tracegrad.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    return obj


class TestBase:
    """Mirrors ``common_nn.TestBase``: one generated test built from a table entry. ``constructor``
    builds the module; ``constructor_args``/``extra_args``/``input`` (and ``target`` for criteria)
    each come as the value itself, a ``NAME_fn`` callable or a ``NAME_size`` (random normal of that
    size, a list of sizes gives a list). Every other keyword is kept in ``_extra_kwargs``. The test's
    name is ``test_`` + ``fullname``, else the constructor's ``__name__`` and ``_desc``."""
    _required_arg_names = {"constructor_args", "input", "extra_args"}

    def __init__(self, constructor, desc="", reference_fn=None, fullname=None, **kwargs):
        self.desc = desc
        self.fullname = fullname
        self.constructor = constructor
        self.reference_fn = reference_fn
        for name in self._required_arg_names:
            if name not in kwargs and name + "_fn" not in kwargs and name + "_size" not in kwargs:
                if name in ("constructor_args", "extra_args"):
                    kwargs[name] = ()
                else:
                    raise ValueError(f"{self.get_name()}: Specify {name} by a value, a function to "
                                     f"generate it, or its size!")
        self._extra_kwargs = kwargs
        self._arg_cache = {}

    def get_name(self):
        if self.fullname is not None:
            return "test_" + self.fullname
        name = "test_" + self.constructor.__name__
        if self.desc:
            name += "_" + self.desc
        return name

    def _unpack(self, value):
        if isinstance(value, tracegrad.Tensor):
            return value
        if isinstance(value, (list, tuple)):
            return type(value)(self._unpack(v) for v in value)
        return value

    @property
    def constructor_args(self):
        return self._get_arg("constructor_args", True)

    @property
    def extra_args(self):
        return self._get_arg("extra_args", True)

    def _get_arg(self, name, unpack):
        assert name in self._required_arg_names
        if name not in self._arg_cache:
            kw = self._extra_kwargs
            if name in kw:
                value = kw[name]
            elif name + "_fn" in kw:
                value = kw[name + "_fn"]()
            else:
                def from_sizes(sizes):
                    if isinstance(sizes, list):
                        return [from_sizes(s) for s in sizes]
                    if isinstance(sizes, tracegrad.Tensor):
                        return sizes.double()
                    return tracegrad.randn(sizes)
                value = from_sizes(kw[name + "_size"])
            self._arg_cache[name] = value
        value = self._arg_cache[name]
        return self._unpack(value) if unpack else value

    def _get_input(self, unpack=True):
        return self._get_arg("input", unpack)

    def __call__(self, test_case):
        raise NotImplementedError


class InputVariableMixin:
    """Mirrors ``common_nn.InputVariableMixin``: floating (and complex) input tensors require grad."""

    def _get_input(self):
        def require(t):
            if t.is_floating_point() or t.is_complex():
                t.requires_grad = True
            return t
        return _map_tensors(TestBase._get_input(self, False), require)


def _noncontiguous(t):
    # the same values, laid out every other element of a wider buffer (a fresh leaf when ``t`` is one)
    if t.dim() == 0:
        return t
    wide = tracegrad.stack([t.detach(), tracegrad.zeros_like(t)], -1)
    nc = wide.select(-1, 0)
    if t.requires_grad:
        nc.requires_grad_(True)
    return nc


class ModuleTest(TestBase):
    """Mirrors ``common_nn.ModuleTest``: builds the module (under ``default_dtype``), compares its
    forward with ``reference_fn(input, parameters, module)`` (on deep copies) when given, then (unless
    ``check_forward_only``) checks contiguous and non-contiguous inputs agree, that a pickled copy
    gives the same output (``pickle``) and runs ``_do_test``. CUDA-only keywords are accepted and
    ignored on CPU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.jacobian_input = kwargs.get("jacobian_input", True)
        self.should_test_cuda = kwargs.get("test_cuda", True)
        self.should_test_pickle = kwargs.get("pickle", True)
        self.check_gradgrad = kwargs.get("check_gradgrad", True)
        self.FIXME_no_cuda_gradgrad_comparison = kwargs.get("FIXME_no_cuda_gradgrad_comparison", False)
        self.precision = kwargs.get("precision", 2e-4)
        self.check_forward_only = kwargs.get("check_forward_only", False)
        self.default_dtype = kwargs.get("default_dtype", None)
        if self.default_dtype is None:
            self.default_dtype = tracegrad.get_default_dtype()

    def __call__(self, test_case):
        from tracegrad.testing._internal.common_utils import set_default_dtype
        with set_default_dtype(self.default_dtype):
            module = self.constructor(*self.constructor_args)
            input = self._get_input()
            if self.reference_fn is not None:
                out = test_case._forward(module, input)
                ref_input = copy.deepcopy(input)
                ref_module = copy.deepcopy(module)
                expected = self.reference_fn(ref_input, test_case._get_parameters(module)[0], ref_module)
                test_case.assertEqual(out, expected, exact_dtype=False)
            if self.check_forward_only:
                return
            self.test_noncontig(test_case, module, input)
            if self.should_test_pickle:
                buf = io.BytesIO()
                tracegrad.save(module, buf)
                buf.seek(0)
                module_copy = tracegrad.load(buf, weights_only=False)
                test_case.assertEqual(test_case._forward(module, input), test_case._forward(module_copy, input))
            self._do_test(test_case, module, input)

    def noncontiguize(self, obj):
        return _map_tensors(obj, _noncontiguous)

    def test_noncontig(self, test_case, module, input):
        """Forward and backward on non-contiguous copies of the input (and grad_output) give the
        contiguous run's output, input gradient and parameter gradients."""
        if any(t.dim() == 0 for t in _iter_tensors(input)):
            return

        def run(inp, grad_output):
            test_case._zero_grad_parameters(module)
            test_case._zero_grad_input(inp)
            with freeze_rng_state():
                out = test_case._forward(module, inp)
                if getattr(module, "return_indices", False):
                    out = out[0]
                if grad_output is None:
                    grad_output = tracegrad.randn_like(out)
                d_input = test_case._backward(module, inp, out, grad_output)
            d_param = [None if g is None else g.clone() for g in test_case._get_parameters(module)[1]]
            d_input = _map_tensors(d_input, lambda t: t.clone())
            return out.detach(), grad_output, d_input, d_param

        output, grad_output, d_input, d_param = run(input, None)
        nc_input = self.noncontiguize(input)
        nc_grad = self.noncontiguize(grad_output)
        for inp, go in ((input, nc_grad), (nc_input, grad_output), (nc_input, nc_grad)):
            out, _, grad, param_grads = run(inp, go)
            test_case.assertEqual(out, output)
            test_case.assertEqual(grad, d_input, atol=1e-4, rtol=0)
            test_case.assertEqual(param_grads, d_param)

    def test_cuda(self, test_case):
        import unittest
        if not TEST_CUDA or not self.should_test_cuda:
            raise unittest.SkipTest("Excluded from CUDA tests")
        raise unittest.SkipTest("CUDA module tests are not ported")

    def _do_test(self, test_case, module, input):
        raise NotImplementedError


class NewModuleTest(InputVariableMixin, ModuleTest):
    """Mirrors ``common_nn.NewModuleTest``: after ``ModuleTest``'s checks, ``gradcheck`` over the
    inputs and parameters (``check_jacobian`` for ``has_sparse_gradients`` modules), ``gradgradcheck``
    when ``check_gradgrad``, the module's repr, the in-place variant (``check_inplace``: same output
    and input gradient, the input left alone by the out-of-place module) and ``float()``/``double()``
    casting the parameters."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cudnn = kwargs.get("cudnn", False)
        self.check_inplace = kwargs.get("check_inplace", False)
        self.check_gradgrad = kwargs.get("check_gradgrad", True)
        self.skip_double = kwargs.get("skip_double", False)
        self.skip_half = kwargs.get("skip_half", False)
        self.with_tf32 = kwargs.get("with_tf32", False)
        self.tf32_precision = kwargs.get("tf32_precision", 0.001)
        self.test_cpu = kwargs.get("test_cpu", True)
        self.has_sparse_gradients = kwargs.get("has_sparse_gradients", False)
        self.check_batched_grad = kwargs.get("check_batched_grad", True)
        self.gradcheck_fast_mode = kwargs.get("gradcheck_fast_mode", None)
        self.supports_forward_ad = kwargs.get("supports_forward_ad", False)
        self.supports_fwgrad_bwgrad = kwargs.get("supports_fwgrad_bwgrad", False)

    def _check_gradients(self, test_case, module, input_tuple):
        from tracegrad.autograd import gradcheck, gradgradcheck
        params = tuple(module.parameters())
        num_inputs = len(input_tuple)

        def fn(*inputs_and_params):
            return test_case._forward(module, inputs_and_params[:num_inputs])

        if self.has_sparse_gradients:
            assert num_inputs == 1
            test_case.check_jacobian(module, input_tuple[0], input_tuple[0].is_floating_point())
        else:
            test_case.assertTrue(gradcheck(fn, input_tuple + params, check_batched_grad=self.check_batched_grad,
                                           fast_mode=bool(self.gradcheck_fast_mode),
                                           check_forward_ad=self.supports_forward_ad))
        if self.check_gradgrad:
            test_case.assertTrue(gradgradcheck(fn, input_tuple + params, check_batched_grad=self.check_batched_grad,
                                               fast_mode=bool(self.gradcheck_fast_mode),
                                               check_fwd_over_rev=self.supports_fwgrad_bwgrad))

    def _do_test(self, test_case, module, input):
        input_tuple = input if isinstance(input, tuple) else (input,)
        self._check_gradients(test_case, module, input_tuple)
        repr(module)
        if self.check_inplace:
            # the module classes with an in-place form take exactly one input
            assert len(input_tuple) == 1
            inp = input_tuple[0]
            module_ip = self.constructor(*self.constructor_args, inplace=True)
            version = inp._version
            with freeze_rng_state():
                output = module(inp)
            test_case.assertEqual(inp._version, version)
            inp_ip = copy.deepcopy(inp)
            inp_ip_clone = inp_ip.clone()
            with freeze_rng_state():
                output_ip = module_ip(inp_ip_clone)
            test_case.assertNotEqual(inp_ip_clone._version, version)
            test_case.assertEqual(output, output_ip)
            grad = tracegrad.randn_like(output.detach())
            for t in (inp, inp_ip):
                if t.grad is not None:
                    with tracegrad.no_grad():
                        t.grad.zero_()
            output.backward(grad)
            output_ip.backward(grad)
            test_case.assertEqual(inp.grad, inp_ip.grad)

        def cast(dtype, cdtype):
            def fn(t):
                if t.is_complex():
                    return t.to(cdtype)
                if t.is_floating_point():
                    return t.to(dtype)
                return t
            return fn

        for dtype, cdtype, to_module in ((tracegrad.float32, tracegrad.complex64, module.float),
                                         (tracegrad.float64, tracegrad.complex128, module.double)):
            cast_inputs = tuple(_map_tensors(t, cast(dtype, cdtype)) for t in input_tuple)
            to_module()
            module(*cast_inputs)
            for p in module.parameters():
                if p.is_floating_point():
                    test_case.assertEqual(p.dtype, dtype)
                elif p.is_complex():
                    test_case.assertEqual(p.dtype, cdtype)

    def _get_target(self):
        return self._get_arg("target", False)

    @property
    def constructor_args(self):
        """The constructor arguments: ``constructor_args`` kept apart from ``cpp_constructor_args``."""
        return self._get_arg("constructor_args", False)


class CriterionTest(InputVariableMixin, TestBase):
    """Mirrors ``common_nn.CriterionTest``: a loss module called as ``module(input, target,
    *extra_args)`` (``input`` may be a tuple of two). Compares with ``reference_fn(input, target,
    *extra_args, module)`` when given (``assertEqual``), then (unless ``check_forward_only``) runs
    ``gradcheck`` over the input(s) and parameters, and ``gradgradcheck`` when ``check_gradgrad``.
    ``check_half``/``check_bfloat16``/``check_complex``/``with_tf32`` only concern the CUDA variants,
    which skip here."""
    _required_arg_names = TestBase._required_arg_names.union({"target"})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.should_test_cuda = kwargs.get("test_cuda", True)
        self.check_forward_only = kwargs.get("check_forward_only", False)
        self.check_gradgrad = kwargs.get("check_gradgrad", True)
        self.check_half = kwargs.get("check_half", True)
        self.check_bfloat16 = kwargs.get("check_bfloat16", False)
        self.check_complex = kwargs.get("check_complex", False)
        self.test_cpu = kwargs.get("test_cpu", True)
        self.with_tf32 = kwargs.get("with_tf32", True)
        self.tf32_precision = kwargs.get("tf32_precision", 0.001)
        self.check_batched_grad = kwargs.get("check_batched_grad", True)
        self.default_dtype = kwargs.get("default_dtype", None)
        if self.default_dtype is None:
            self.default_dtype = tracegrad.get_default_dtype()

    def _get_target(self):
        return self._get_arg("target", False)

    def __call__(self, test_case):
        from tracegrad.autograd import gradcheck, gradgradcheck
        from tracegrad.testing._internal.common_utils import set_default_dtype
        with set_default_dtype(self.default_dtype):
            module = self.constructor(*self.constructor_args)
            input = self._get_input()
            repr(module)
            str(module)
            target = self._get_target()
            extra = tuple(self.extra_args)
            if self.reference_fn is not None:
                out = test_case._forward_criterion(module, input, target, extra_args=extra)
                ref_args = (copy.deepcopy(input), copy.deepcopy(target)) + extra + (module,)
                expected = self.reference_fn(*ref_args)
                test_case.assertEqual(out, expected)
            if self.check_forward_only:
                return
            params = tuple(module.parameters())
            inputs = input if isinstance(input, tuple) else (input,)
            n = len(inputs)

            def apply_fn(*args):
                # (inputs..., target, params...): the parameters take part through the module
                return module(*args[:n], args[n], *extra)

            gradcheck(apply_fn, inputs + (target,) + params, check_batched_grad=self.check_batched_grad)
            if self.check_gradgrad:
                gradgradcheck(apply_fn, inputs + (target,) + params, check_batched_grad=self.check_batched_grad)

    def test_cuda(self, test_case, dtype, extra_args=None):
        import unittest
        if not TEST_CUDA or not self.should_test_cuda:
            raise unittest.SkipTest("Excluded from CUDA tests")
        raise unittest.SkipTest("CUDA criterion tests are not ported")


# --- the tables ``test/test_nn.py`` generates ``TestNN`` tests from --------------------------
# Our own modest selection (not torch's tables): tiny sizes, float64 so gradcheck is meaningful.
# Each entry is a dict in torch's format; ``test_nn.py`` pops ``module_name`` (so the tables are
# built afresh by the functions below; ``module_tests``/``criterion_tests`` are one such build).

def _double(**entry):
    entry.setdefault("default_dtype", tracegrad.float64)
    return entry


def _long(*values):
    return lambda: tracegrad.tensor(values, dtype=tracegrad.long)


def _build_module_tests():
    F = tracegrad.nn.functional
    return [
        _double(module_name="Linear", constructor_args=(2, 3), input_size=(2, 2),
                reference_fn=lambda i, p, _: i @ p[0].t() + p[1]),
        _double(module_name="Linear", constructor_args=(2, 3, False), input_size=(2, 2), desc="no_bias",
                reference_fn=lambda i, p, _: i @ p[0].t()),
        _double(module_name="Threshold", constructor_args=(0.5, 2.0), input_size=(2, 3, 4)),
        _double(module_name="ReLU", input_size=(2, 3, 4), check_inplace=True),
        _double(module_name="ReLU6", input_size=(2, 3, 4), check_inplace=True),
        _double(module_name="Hardtanh", input_size=(3, 2, 5), reference_fn=lambda i, *_: i.clamp(-1, 1)),
        _double(module_name="Sigmoid", input_size=(2, 3, 4)),
        _double(module_name="Tanh", input_size=(2, 3, 4)),
        _double(module_name="Softmax", constructor_args=(1,), input_size=(3, 4),
                reference_fn=lambda i, *_: i.exp() / i.exp().sum(1, keepdim=True)),
        _double(module_name="LogSoftmax", constructor_args=(1,), input_size=(3, 4),
                reference_fn=lambda i, *_: i - i.exp().sum(1, keepdim=True).log()),
        _double(module_name="Softplus", input_size=(3, 4),
                reference_fn=lambda i, *_: (1 + i.exp()).log()),
        _double(module_name="ELU", constructor_args=(2.0,), input_size=(3, 2, 4), check_inplace=True),
        _double(module_name="Hardshrink", constructor_args=(0.5,), input_size=(3, 4)),
        _double(module_name="Softshrink", constructor_args=(0.5,), input_size=(3, 4)),
        _double(module_name="Softsign", input_size=(3, 4), reference_fn=lambda i, *_: i / (1 + i.abs())),
        _double(module_name="Tanhshrink", input_size=(3, 4)),
        _double(module_name="Conv1d", constructor_args=(2, 3, 3), input_size=(2, 2, 6)),
        _double(module_name="Conv2d", constructor_args=(2, 3, (2, 2)), input_size=(2, 2, 4, 4)),
        _double(module_name="MaxPool2d", constructor_args=((2, 2), (2, 1)), input_size=(1, 2, 4, 4)),
        _double(module_name="AvgPool1d", constructor_args=(2,), input_size=(2, 3, 6)),
        _double(module_name="BatchNorm1d", constructor_args=(3,), input_size=(4, 3), check_eval=True),
        _double(module_name="PReLU", input_size=(2, 3, 4)),
        _double(module_name="Embedding", constructor_args=(4, 3), input_fn=lambda: _long([0, 1], [3, 2])(),
                check_gradgrad=False),
    ]


def get_new_module_tests():
    """Mirrors ``common_nn.get_new_module_tests``: a fresh list of ``NewModuleTest`` entries."""
    return [
        _double(module_name="Conv1d", constructor_args=(2, 3, 3, 2), input_size=(1, 2, 7), desc="stride"),
        _double(module_name="Conv1d", constructor_args=(2, 2, 2), input_size=(2, 4), desc="no_batch_dim",
                reference_fn=single_batch_reference_fn),
        _double(module_name="Conv2d", constructor_args=(2, 2, 3, 1, 1), input_size=(1, 2, 3, 3), desc="padding"),
        _double(module_name="Conv2d", constructor_args=(4, 4, 2, 1, 0, 1, 2), input_size=(1, 4, 3, 3),
                desc="groups"),
        _double(module_name="MaxPool1d", constructor_args=(2,), input_size=(1, 3, 6)),
        _double(module_name="AvgPool2d", constructor_args=((2, 2),), input_size=(1, 2, 4, 4)),
        _double(module_name="AdaptiveAvgPool2d", constructor_args=((2, 3),), input_size=(1, 2, 5, 4)),
        _double(module_name="AdaptiveMaxPool1d", constructor_args=(3,), input_size=(1, 2, 7)),
        _double(module_name="BatchNorm2d", constructor_args=(2,), input_size=(2, 2, 3, 3), check_eval=True),
        _double(module_name="LayerNorm", constructor_args=([3],), input_size=(2, 3)),
        _double(module_name="GroupNorm", constructor_args=(2, 4), input_size=(2, 4, 3)),
        _double(module_name="InstanceNorm1d", constructor_args=(3,), input_size=(2, 3, 4)),
        _double(module_name="GELU", input_size=(2, 3, 4)),
        _double(module_name="SiLU", input_size=(2, 3), reference_fn=lambda i, *_: i * i.sigmoid()),
        _double(module_name="LeakyReLU", constructor_args=(0.5,), input_size=(3, 4), check_inplace=True),
        _double(module_name="Flatten", input_size=(2, 3, 4), reference_fn=lambda i, *_: i.reshape(2, 12)),
        _double(module_name="Bilinear", constructor_args=(2, 3, 4),
                input_fn=lambda: (tracegrad.randn(3, 2), tracegrad.randn(3, 3))),
        _double(module_name="Linear", constructor_args=(3, 2), input_size=(3,), desc="no_batch_dim",
                reference_fn=single_batch_reference_fn),
        _double(module_name="ReLU", input_size=(4,), desc="no_batch_dim", reference_fn=single_batch_reference_fn),
    ]


def _mean_or(reduction_fn):
    return lambda i, t, m: reduction_fn(i, t, reduction=get_reduction(m))


def _build_criterion_tests():
    return [
        _double(module_name="L1Loss", input_size=(2, 3, 4), target_fn=lambda: tracegrad.randn(2, 3, 4),
                reference_fn=_mean_or(l1loss_reference), check_sum_reduction=True),
        _double(module_name="MSELoss", input_size=(2, 3), target_fn=lambda: tracegrad.randn(2, 3),
                reference_fn=_mean_or(mseloss_reference), check_sum_reduction=True),
        _double(module_name="SmoothL1Loss", input_size=(3, 4), target_fn=lambda: tracegrad.randn(3, 4),
                reference_fn=_mean_or(smoothl1loss_reference), check_sum_reduction=True),
        _double(module_name="HuberLoss", input_size=(3, 4), target_fn=lambda: tracegrad.randn(3, 4),
                reference_fn=_mean_or(huberloss_reference), check_sum_reduction=True),
        _double(module_name="NLLLoss", input_fn=lambda: tracegrad.rand(4, 3).log(),
                target_fn=_long(0, 2, 1, 2), reference_fn=_mean_or(nllloss_reference),
                check_sum_reduction=True),
        _double(module_name="NLLLoss", constructor_args_fn=lambda: (tracegrad.rand(3),),
                input_fn=lambda: tracegrad.rand(4, 3).log(), target_fn=_long(0, 2, 1, 2),
                reference_fn=lambda i, t, m: nllloss_reference(i, t, m.weight, reduction=get_reduction(m)),
                desc="weights"),
        _double(module_name="CrossEntropyLoss", input_size=(4, 3), target_fn=_long(2, 0, 1, 1),
                reference_fn=_mean_or(crossentropyloss_reference), check_sum_reduction=True),
        _double(module_name="CrossEntropyLoss", constructor_args=(None, None, -100, None, "mean", 0.2),
                input_size=(4, 3), target_fn=_long(2, 0, 1, 1), desc="label_smoothing",
                reference_fn=lambda i, t, m: crossentropyloss_reference(i, t, label_smoothing=0.2)),
        _double(module_name="KLDivLoss", input_fn=lambda: tracegrad.rand(3, 4).log(),
                target_fn=lambda: tracegrad.rand(3, 4), reference_fn=_mean_or(kldivloss_reference),
                check_sum_reduction=True),
        _double(module_name="BCELoss", input_fn=lambda: tracegrad.rand(3, 2) * 0.9 + 0.05,
                target_fn=lambda: tracegrad.rand(3, 2).gt(0.5).double(),
                reference_fn=_mean_or(bceloss_reference), check_gradgrad=False),
        _double(module_name="SoftMarginLoss", input_size=(3, 4),
                target_fn=lambda: tracegrad.randn(3, 4).sign(),
                reference_fn=_mean_or(softmarginloss_reference), check_sum_reduction=True),
        _double(module_name="HingeEmbeddingLoss", input_size=(6,),
                target_fn=lambda: tracegrad.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0]),
                reference_fn=_mean_or(hingeembeddingloss_reference), check_sum_reduction=True),
        _double(module_name="MultiMarginLoss", input_size=(3, 4), target_fn=_long(3, 0, 2),
                reference_fn=_mean_or(multimarginloss_reference), check_sum_reduction=True,
                check_gradgrad=False),
        _double(module_name="MultiLabelSoftMarginLoss", input_size=(3, 4),
                target_fn=lambda: tracegrad.rand(3, 4).gt(0.5).double(),
                reference_fn=_mean_or(multilabelsoftmarginloss_reference), check_sum_reduction=True),
        _double(module_name="CosineEmbeddingLoss", input_fn=lambda: (tracegrad.rand(3, 2), tracegrad.rand(3, 2)),
                target_fn=lambda: tracegrad.tensor([1.0, -1.0, 1.0]),
                reference_fn=lambda i, t, m: cosineembeddingloss_reference(i[0], i[1], t,
                                                                            reduction=get_reduction(m)),
                check_sum_reduction=True),
        _double(module_name="MarginRankingLoss", input_fn=lambda: (tracegrad.randn(5), tracegrad.randn(5)),
                target_fn=lambda: tracegrad.tensor([1.0, -1.0, 1.0, 1.0, -1.0]),
                reference_fn=lambda i, t, m: marginrankingloss_reference(i[0], i[1], t,
                                                                          reduction=get_reduction(m)),
                check_sum_reduction=True),
        _double(module_name="CTCLoss", constructor_args=(3,), extra_args=([6, 5], [3, 2]),
                input_fn=lambda: tracegrad.randn(6, 2, 4).log_softmax(2), target_fn=_long([0, 1, 1], [2, 0, 0]),
                reference_fn=lambda i, t, il, tl, m: ctcloss_reference(i, t, il, tl, blank=3,
                                                                       reduction=get_reduction(m)),
                desc="lengths_intlists", check_forward_only=True, check_sum_reduction=True,
                check_gradgrad=False, check_half=False),
    ]


module_tests = _build_module_tests()
criterion_tests = _build_criterion_tests()
