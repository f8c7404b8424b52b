"""Bad-input parity, round 14 (transforms, autograd, nn): a probe over torch.func misuse (vmap
in_dims, grad/jacrev/jvp/vjp of integer outputs or tangents), autograd.Function and
autograd.grad misuse, nn.utils (clip_grad_norm_, parametrize, prune), distributions with
validate_args=True, and complex inputs to nn functionals. Fixed here: func.grad of an integer
output (JAX's TypeError with its words; torch gives zeros), func.vjp of one (silently zeros;
torch's RuntimeError), func.jvp of one (a crash) and with an integer tangent (ValueError),
complex inputs to clamp_min/clamp_max, losses, pools and norms (JAX computed real-only formulas;
torch has no kernel: NotImplementedError), cdist of non-floating inputs, kl_div of complex ones,
detect_anomaly(check_nan=non-bool). Each call runs under torch (the oracle) and tracegrad: the
same exception class (or none), no text of the layers below tracegrad; ``_ok`` calls torch accepts."""
import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")
import torch.nn.utils.prune  # noqa: E402,F401 -- torch exposes prune only once imported


def _F(T):
    return T.nn.functional


def _c(T, *shape):
    return T.ones(*shape, dtype=T.complex64)


def _fn(T, backward, forward=lambda ctx, x: x * 2, x=None):
    """A custom Function with the given backward, applied and backpropagated."""
    Fn = type("Fn", (T.autograd.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    x = T.ones(2, requires_grad=True) if x is None else x
    Fn.apply(x).sum().backward()
    return x.grad


def _params(T):
    p = T.ones(3, requires_grad=True)
    p.grad = T.ones(3)
    return [p]


def _sym(T):
    return type("Sym", (T.nn.Module,), {"forward": lambda self, x: x + x.T})()


def _D(T):
    return T.distributions


_COMPLEX_NN = {
    "clamp_min": lambda T: _c(T, 2).clamp_min(0), "clamp_max_": lambda T: _c(T, 2).clamp_max_(0),
    "clamp(min tensor)": lambda T: _c(T, 2).clamp(min=T.zeros(2)),
    "mse_loss": lambda T: _F(T).mse_loss(_c(T, 2), _c(T, 2)), "MSELoss": lambda T: T.nn.MSELoss()(_c(T, 2), _c(T, 2)),
    "smooth_l1_loss": lambda T: _F(T).smooth_l1_loss(_c(T, 2), _c(T, 2)),
    "huber_loss": lambda T: _F(T).huber_loss(_c(T, 2), _c(T, 2)),
    "binary_cross_entropy": lambda T: _F(T).binary_cross_entropy(_c(T, 2), _c(T, 2)),
    "binary_cross_entropy_with_logits": lambda T: _F(T).binary_cross_entropy_with_logits(_c(T, 2), _c(T, 2)),
    "max_pool1d": lambda T: _F(T).max_pool1d(_c(T, 1, 1, 4), 2),
    "max_pool2d(return_indices)": lambda T: _F(T).max_pool2d(_c(T, 1, 1, 2, 2), 2, return_indices=True),
    "avg_pool1d": lambda T: _F(T).avg_pool1d(_c(T, 1, 1, 4), 2),
    "adaptive_avg_pool1d": lambda T: _F(T).adaptive_avg_pool1d(_c(T, 1, 1, 4), 2),
    "adaptive_max_pool2d": lambda T: _F(T).adaptive_max_pool2d(_c(T, 1, 1, 2, 2), 1),
    "layer_norm": lambda T: _F(T).layer_norm(_c(T, 2, 2), (2,)),
    "group_norm": lambda T: _F(T).group_norm(_c(T, 1, 2, 2), 1),
    "batch_norm(training)": lambda T: _F(T).batch_norm(_c(T, 2, 2), None, None, training=True),
    "batch_norm(eval)": lambda T: _F(T).batch_norm(_c(T, 2, 2), T.zeros(2), T.ones(2)),
    "layer_norm(float weight)": lambda T: _F(T).layer_norm(_c(T, 2, 2), (2,), T.ones(2)),
    "instance_norm": lambda T: _F(T).instance_norm(_c(T, 1, 2, 2)),
    "local_response_norm": lambda T: _F(T).local_response_norm(_c(T, 1, 2, 2), 2),
    "glu": lambda T: _F(T).glu(_c(T, 2)),
    "kl_div": lambda T: _F(T).kl_div(_c(T, 2), _c(T, 2), reduction="batchmean"),
    "cdist": lambda T: T.cdist(_c(T, 2, 2), _c(T, 2, 2)),
    # torch has these: unchanged
    "adaptive_avg_pool3d_ok": lambda T: _F(T).adaptive_avg_pool3d(_c(T, 1, 1, 2, 2, 2), 1),
    "l1_loss_ok": lambda T: _F(T).l1_loss(_c(T, 2), _c(T, 2)),
    "pairwise_distance_ok": lambda T: _F(T).pairwise_distance(_c(T, 2, 2), _c(T, 2, 2)),
    "silu_ok": lambda T: _F(T).silu(_c(T, 2)),
    "cdist(float64)_ok": lambda T: T.cdist(T.ones(2, 2, dtype=T.float64), T.zeros(2, 2, dtype=T.float64)),
}
CASES = {f"{k}(complex)" if not k.endswith("_ok") else k: v for k, v in _COMPLEX_NN.items()}
CASES.update({
    "cdist(int64)": lambda T: T.cdist(T.ones(2, 2, dtype=T.long), T.ones(2, 2, dtype=T.long)),
    # torch.func: integer outputs and tangents
    "grad(int output)_ok": lambda T: T.func.grad(lambda a: (a > 0).sum())(T.ones(2)),
    "grad_and_value(int output, has_aux)_ok": lambda T: T.func.grad_and_value(
        lambda a: ((a > 0).long().sum(), a), has_aux=True)(T.ones(2)),
    "vjp(int output)": lambda T: T.func.vjp(lambda a: (a > 0).long(), T.ones(2)),
    "vjp(bool output in a tuple)": lambda T: T.func.vjp(lambda a: (a * 2, a > 0), T.ones(2)),
    "jacrev(int output)": lambda T: T.func.jacrev(lambda a: (a > 0).long())(T.ones(2)),
    "jacfwd(int output)_ok": lambda T: T.func.jacfwd(lambda a: (a > 0).long())(T.ones(2)),
    "jvp(int output)_ok": lambda T: T.func.jvp(lambda a: (a > 0).long(), (T.ones(2),), (T.ones(2),)),
    "jvp(int tangent)": lambda T: T.func.jvp(lambda a: a * 2, (T.ones(2),), (T.ones(2, dtype=T.long),)),
    "jvp(int primal)": lambda T: T.func.jvp(lambda a: a * 2, (T.ones(2, dtype=T.long),), (T.ones(2, dtype=T.long),)),
    # torch.func: structure and argument misuse
    "vmap(in_dims too short)": lambda T: T.func.vmap(lambda a, b: a + b, in_dims=(0,))(T.ones(2, 3), T.ones(2, 3)),
    "vmap(in_dims 2 of 2-D)": lambda T: T.func.vmap(lambda a: a, in_dims=2)(T.ones(2, 3)),
    "vmap(batch sizes differ)": lambda T: T.func.vmap(lambda a, b: a + b)(T.ones(2, 3), T.ones(3, 3)),
    "vmap(in_dims 0.5)": lambda T: T.func.vmap(lambda a: a, in_dims=0.5)(T.ones(2)),
    "vmap(out_dims 3)": lambda T: T.func.vmap(lambda a: a, out_dims=3)(T.ones(2, 3)),
    "vmap(0-d input)": lambda T: T.func.vmap(lambda a: a)(T.tensor(1.)),
    "vmap(returns int)": lambda T: T.func.vmap(lambda a: 3)(T.ones(2)),
    "vmap(randomness bogus)": lambda T: T.func.vmap(lambda a: a, randomness="bogus")(T.ones(2)),
    "vmap(item)": lambda T: T.func.vmap(lambda a: a.item())(T.ones(2)),
    "vmap(in_dims on a float)": lambda T: T.func.vmap(lambda a, b: a * b, in_dims=(0, 0))(T.ones(2), 3.0),
    "grad(non-scalar output)": lambda T: T.func.grad(lambda a: a * 2)(T.ones(2)),
    "grad(int input)": lambda T: T.func.grad(lambda a: a.sum())(T.ones(2, dtype=T.long)),
    "grad(argnums 1 of 1)": lambda T: T.func.grad(lambda a: a.sum(), argnums=1)(T.ones(2)),
    "grad(has_aux, no tuple)": lambda T: T.func.grad(lambda a: a.sum(), has_aux=True)(T.ones(2)),
    "vjp(cotangent shape)": lambda T: T.func.vjp(lambda a: a * 2, T.ones(2))[1](T.ones(3)),
    "jvp(tangent shape)": lambda T: T.func.jvp(lambda a: a * 2, (T.ones(2),), (T.ones(3),)),
    "jvp(primals a tensor)": lambda T: T.func.jvp(lambda a: a * 2, T.ones(2), T.ones(2)),
    "functional_call(unknown key, strict)": lambda T: T.func.functional_call(
        T.nn.Linear(2, 2), {"bogus": T.ones(2)}, (T.ones(2),), strict=True),
    # autograd.Function misuse
    "Function(two grads for one input)": lambda T: _fn(T, lambda c, g: (g, g)),
    "Function(extra grad None)_ok": lambda T: _fn(T, lambda c, g: (g, None)),
    "Function(grad of 3 for 2)": lambda T: _fn(T, lambda c, g: T.ones(3)),
    "Function(grad a str)": lambda T: _fn(T, lambda c, g: "a"),
    "Function(save_for_backward(3))": lambda T: _fn(T, lambda c, g: g, lambda c, x: (c.save_for_backward(3), x * 2)[1]),
    "Function(mark_dirty of a leaf)": lambda T: _fn(T, lambda c, g: g, lambda c, x: (c.mark_dirty(x), x.mul_(2))[1]),
    "Function(mark_non_differentiable output)": lambda T: _fn(
        T, lambda c, g: g, lambda c, x: (lambda y: (c.mark_non_differentiable(y), y)[1])(x * 2)),
    "Function(returns 3)": lambda T: _fn(T, lambda c, g: g, lambda c, x: 3),
    # autograd.grad / backward misuse
    "backward(non-scalar)": lambda T: (T.ones(2, requires_grad=True) * 2).backward(),
    "backward(gradient of 3 for 2)": lambda T: (T.ones(2, requires_grad=True) * 2).backward(T.ones(3)),
    "backward(complex gradient for real)": lambda T: (T.ones(2, requires_grad=True) * 2).backward(_c(T, 2)),
    "grad(unused input)": lambda T: (lambda x, y: T.autograd.grad((x * 2).sum(), [x, y]))(
        T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)),
    "grad(grad_outputs int)": lambda T: (lambda x: T.autograd.grad(x * 2, x, grad_outputs=T.ones(2, dtype=T.long)))(
        T.ones(2, requires_grad=True)),
    ".grad = wrong shape": lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(3)),
    "register_hook(no grad)": lambda T: T.ones(2).register_hook(lambda g: g),
    "detect_anomaly(check_nan='a')": lambda T: T.autograd.detect_anomaly(check_nan="a").__enter__(),
    "set_detect_anomaly(1)": lambda T: T.autograd.set_detect_anomaly(1),
    # nn.utils
    "clip_grad_norm_(norm_type 'bogus')": lambda T: T.nn.utils.clip_grad_norm_(_params(T), 1.0, norm_type="bogus"),
    "clip_grad_norm_(nan, error_if_nonfinite)": lambda T: (lambda ps: (ps[0].grad.fill_(float("nan")),
                                                                       T.nn.utils.clip_grad_norm_(
                                                                           ps, 1.0, error_if_nonfinite=True)))(_params(T)),
    "clip_grad_norm_(max_norm 'a')": lambda T: T.nn.utils.clip_grad_norm_(_params(T), "a"),
    "clip_grad_norm_('inf')_ok": lambda T: T.nn.utils.clip_grad_norm_(_params(T), 1.0, norm_type="inf"),
    "vector_to_parameters(too short)": lambda T: T.nn.utils.vector_to_parameters(T.ones(2), [T.ones(3)]),
    "register_parametrization(no such tensor)": lambda T: T.nn.utils.parametrize.register_parametrization(
        T.nn.Linear(2, 2), "bogus", _sym(T)),
    "register_parametrization(changes the shape)": lambda T: T.nn.utils.parametrize.register_parametrization(
        T.nn.Linear(2, 3), "weight", T.nn.Flatten(0)),
    "remove_parametrizations(none)": lambda T: T.nn.utils.parametrize.remove_parametrizations(T.nn.Linear(2, 2), "weight"),
    "prune(amount 1.5)": lambda T: T.nn.utils.prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount=1.5),
    "prune(amount 10 of 4)": lambda T: T.nn.utils.prune.l1_unstructured(T.nn.Linear(2, 2), "weight", amount=10),
    "prune.remove(not pruned)": lambda T: T.nn.utils.prune.remove(T.nn.Linear(2, 2), "weight"),
    "ln_structured(1-D)": lambda T: T.nn.utils.prune.ln_structured(T.nn.Linear(2, 2), "bias", amount=1, n=1, dim=0),
    # distributions with validate_args=True
    "Normal(scale -1)": lambda T: _D(T).Normal(T.zeros(2), -T.ones(2), validate_args=True),
    "Bernoulli.log_prob(0.5)": lambda T: _D(T).Bernoulli(T.tensor(0.3), validate_args=True).log_prob(T.tensor(0.5)),
    "Bernoulli(probs and logits)": lambda T: _D(T).Bernoulli(probs=T.tensor(0.3), logits=T.tensor(0.),
                                                              validate_args=True),
    "Uniform(low > high)": lambda T: _D(T).Uniform(T.ones(1), T.zeros(1), validate_args=True),
    "Dirichlet.log_prob(off the simplex)": lambda T: _D(T).Dirichlet(T.ones(3), validate_args=True).log_prob(T.ones(3)),
    "Independent(2 of 1 batch dims)": lambda T: _D(T).Independent(_D(T).Normal(T.zeros(2), T.ones(2)), 2,
                                                                    validate_args=True),
    "Bernoulli.rsample()": lambda T: _D(T).Bernoulli(T.tensor(0.3)).rsample(),
})


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "mse_loss(complex)": "\"mse_cpu\" not implemented for 'ComplexFloat'",
    "layer_norm(complex)": "\"LayerNormKernelImpl\" not implemented for 'ComplexFloat'",
    "avg_pool1d(complex)": "\"avg_pool2d\" not implemented for 'ComplexFloat'",
    "glu(complex)": "\"glu_cpu\" not implemented for 'ComplexFloat'",
    "clamp_min(complex)": "clamp is not supported for complex types",
    "kl_div(complex)": "kl_div: Complex inputs not supported",
    "cdist(int64)": "cdist only supports floating-point dtypes, X1 got: Long",
    "vjp(int output)": "All outputs of f must be floating-point or complex Tensors, got Tensor with dtype",
    "jvp(int tangent)": "Expected tangent to be floating point or complex, but got",
    "detect_anomaly(check_nan='a')": "argument 'check_nan' (position 2) must be bool, not str",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_integer_outputs_differentiate_as_torch():
    # grad of an integer output: zeros of the input's dtype, the value kept as it was
    x = [0.5, -1.0, 2.0]
    g, v = tracegrad.func.grad_and_value(lambda a: (a > 0).sum())(tracegrad.tensor(x))
    gt, vt = torch.func.grad_and_value(lambda a: (a > 0).sum())(torch.tensor(x))
    assert g.tolist() == gt.tolist() and str(g.dtype)[-7:] == str(gt.dtype)[-7:]
    assert v.item() == vt.item() == 2 and str(v.dtype)[-5:] == str(vt.dtype)[-5:]
    # a float output next to it still differentiates
    g = tracegrad.func.grad(lambda a: ((a * a).sum(), (a > 0).sum()), has_aux=True)(tracegrad.tensor(x))
    assert g[0].tolist() == [1.0, -2.0, 4.0] and g[1].item() == 2
    # jvp: an integer output's tangent is integer zeros; a float output's is J @ t, as torch
    for T in (torch, tracegrad):
        out, tan = T.func.jvp(lambda a: ((a > 0).long(), a * 3), (T.tensor(x),), (T.ones(3),))
        if T is torch:
            want = ([o.tolist() for o in out], [t.tolist() for t in tan], str(tan[0].dtype)[-5:])
    assert ([o.tolist() for o in out], [t.tolist() for t in tan], str(tan[0].dtype)[-5:]) == want
    # the clamp refusal holds for complex only; real clamps keep torch's values
    np.testing.assert_allclose(tracegrad.tensor(x).clamp_min(0).numpy(), torch.tensor(x).clamp_min(0).numpy())
    np.testing.assert_allclose(tracegrad.nn.functional.mse_loss(tracegrad.tensor(x), tracegrad.zeros(3)).item(),
                               torch.nn.functional.mse_loss(torch.tensor(x), torch.zeros(3)).item(), rtol=1e-6)
