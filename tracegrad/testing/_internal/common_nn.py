"""Mirrors the part of ``torch.testing._internal.common_nn`` that ``test/nn/*.py`` import:
``NNTestCase`` (a ``TestCase`` whose ``check_jacobian`` compares a module's backward with
central finite differences), ``_test_module_empty_input``, ``_test_bfloat16_ops`` and
``PRECISION``, the ``_create_basic_net`` fixture and part of ``loss_reference_fns``. torch's generated
``module_tests``/``criterion_tests`` tables are not here.
"""
from __future__ import annotations

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
