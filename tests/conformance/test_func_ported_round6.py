"""Round 6 of PyTorch's own tests, ported: test/functorch/test_eager_transforms.py (TestGradTransform,
TestVjp, TestJac, TestHessian, TestJvp, TestComposability, TestLinearize) and the functional_call
parts of test/test_stateless.py, device 'cpu', float64. Each case is one small program run with
torch (the oracle) and with tracegrad (``parity.same_outcome``): equal results (values, dtypes,
shapes, structure) or the same builtin exception class. Cases test_func_ported.py already has
are not repeated."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome, scaled_sin_function

torch = pytest.importorskip("torch")

RS = np.random.RandomState(66)
X3 = RS.standard_normal(3).round(4)
Y3 = RS.standard_normal(3).round(4)
M23 = RS.standard_normal((2, 3)).round(4)


def t(T, a):
    return T.tensor(np.asarray(a), dtype=T.float64)


def no_grad_inside(T):
    # TestGradTransform.test_no_grad_inside: what is computed under no_grad is a constant
    def f(x):
        with T.no_grad():
            shift = x ** 2
        return x ** 2 - shift
    return T.func.grad(f)(t(T, 0.7))


def no_grad_outside(T):
    # test_no_grad_outside: the transform differentiates even under an outer no_grad
    x = t(T, 0.7).requires_grad_()
    with T.no_grad():
        y = T.func.grad(T.sin)(x)
    return y, y.requires_grad


def enable_grad_inside(T):
    # test_enable_grad_inside: enable_grad inside the function under an outer no_grad
    def f(x):
        with T.enable_grad():
            return (x ** 3).sum()
    with T.no_grad():
        return T.func.grad(f)(t(T, X3))


def no_grad_mixed_nested(T):
    # test_no_grad_mixed_nested style: no_grad around the inner grad only hides it from the outer one
    def inner(x):
        with T.no_grad():
            c = T.func.grad(T.sin)(x)
        return c * x ** 2
    return T.func.grad(inner)(t(T, 0.3))


def detach_inside(T):
    # test_detach: a detached value is a constant of the transform
    return T.func.grad(lambda x: (x.detach() * x).sum())(t(T, X3))


def views_inside(T):
    # test_views / test_view_inplace_simple: gradients flow through views and in-place ops on clones
    def f(x):
        y = x.clone()
        y.view(-1)[1:].mul_(2)
        return y.t().reshape(-1).sin().sum()
    return T.func.grad(f)(t(T, M23))


def tensor_methods_inside(T):
    # test_tensor_ops_inside / new_* factories on the traced tensor
    def f(x):
        return (x * x.new_ones(x.shape) + x.new_zeros(()) + x.new_full((3,), 2.)).pow(2).sum()
    return T.func.grad(f)(t(T, X3))


def zero_grad_fn(T):
    # test_zero_grad: an output independent of the input has a zero gradient
    return T.func.grad(lambda x: (x * 0).sum())(t(T, X3))


def argnums_with_kwargs(T):
    # test_argnums_with_kwargs: keyword arguments are not differentiated
    def f(x, y, *, scale):
        return (x * y * scale).sum()
    return T.func.grad(f, argnums=(0, 1))(t(T, X3), t(T, Y3), scale=t(T, 2.))


def vjp_outputs_pytree(T):
    # TestVjp.test_vjp_outputs_can_any_pytree: a list and a dict of outputs
    out, fn = T.func.vjp(lambda x: {"a": [x.sin(), x.cos()], "b": x * 2}, t(T, X3))
    ct = {"a": [T.ones(3, dtype=T.float64), t(T, Y3)], "b": t(T, X3)}
    return out, fn(ct)


def vjp_none_output(T):
    return T.func.vjp(lambda x: None, t(T, X3))


def vjp_pytree_inputs(T):
    # test_vjp_pytree_input: a tuple and a dict of primals
    out, fn = T.func.vjp(lambda p: p[0] * p[1]["w"], (t(T, X3), {"w": t(T, Y3)}))
    return out, fn(T.ones(3, dtype=T.float64))


def vjp_cotangent_wrong_dtype(T):
    out, fn = T.func.vjp(T.sin, t(T, X3))
    return fn(T.ones(3, dtype=T.float32))


def vjp_called_twice(T):
    # test_vjp_two_outputs: the vjp function can be called more than once
    out, fn = T.func.vjp(lambda x: x ** 3, t(T, X3))
    return fn(T.ones(3, dtype=T.float64)), fn(t(T, Y3))


def jvp_has_aux_dict(T):
    # TestJvp.test_jvp_has_aux with a pytree aux
    return T.func.jvp(lambda x: (x.sin(), {"c": x.cos(), "n": 3}), (t(T, X3),), (t(T, Y3),), has_aux=True)


def jvp_of_jvp(T):
    # test_jvp_jvp (second directional derivative)
    def f(x):
        return T.func.jvp(T.sin, (x,), (T.ones_like(x),))[1]
    return T.func.jvp(f, (t(T, X3),), (T.ones(3, dtype=T.float64),))


def jvp_list_primals(T):
    # test_nonpytree_inputs / primals must be a tuple
    return T.func.jvp(T.sin, [t(T, X3)], [t(T, Y3)])


def jvp_length_mismatch(T):
    # test_primals_tangents_length_mismatch
    return T.func.jvp(lambda a, b: a * b, (t(T, X3), t(T, Y3)), (t(T, Y3),))


def jvp_non_tensor_output(T):
    return T.func.jvp(lambda x: 3, (t(T, X3),), (t(T, Y3),))


def jvp_multiple_outputs(T):
    return T.func.jvp(lambda x, y: (x * y, x + y, (x - y).sum()), (t(T, X3), t(T, Y3)), (t(T, Y3), t(T, X3)))


def jac_diff_numel(T, jac):
    # TestJac.test_diff_numel: output of another size than the input
    return jac(lambda x: T.stack([x.sum(), x.prod(), x[0] * x[1], (x ** 2).mean(), x[2].exp()]))(t(T, X3))


def jac_multiple_outputs_multiple_argnums(T, jac):
    # test_multiple_outputs_multiple_argnums: tuple of tuples
    return jac(lambda x, y: (x * y, (x + y).sum()), argnums=(0, 1))(t(T, X3), t(T, Y3))


def jac_multiple_outputs_single_argnums(T, jac):
    return jac(lambda x, y: (x * y, (x + y).sum()), argnums=1)(t(T, X3), t(T, Y3))


def jac_dimensionality(T, jac):
    # test_dimensionality: 0-d and 2-d inputs and outputs
    return (jac(lambda x: x ** 2)(t(T, 0.5)), jac(lambda x: x.sum())(t(T, M23)), jac(lambda x: x * 2)(t(T, 0.5)),
            jac(lambda x: x.t() @ x)(t(T, M23)))


def jac_aux_pytree(T, jac):
    # test_aux_pytree
    return jac(lambda x: (x.sin(), {"a": x.cos(), "b": [x * 2]}), has_aux=True)(t(T, X3))


def jac_aux_non_tensor(T, jac):
    return jac(lambda x: (x.sin(), 3.), has_aux=True)(t(T, X3))


def jac_outputs_pytree(T, jac):
    # test_outputs_can_any_pytree
    return jac(lambda x: {"s": x.sin(), "l": [x.cos().sum(), x[:2]]})(t(T, X3))


def jac_none_output(T, jac):
    return jac(lambda x: None)(t(T, X3))


def jac_vmap_on_jac(T, jac):
    # test_vmap_on_jac: a batch of Jacobians
    return T.func.vmap(jac(lambda x: x.sin() * x.sum()))(t(T, M23))


def jac_nested_multiple_args(T, jac):
    # test_nested_jac_multiple_args
    return jac(jac(lambda x, y: (x * y).sin(), argnums=1), argnums=0)(t(T, X3), t(T, Y3))


def jac_pytree_input(T, jac):
    # test_multiple_args with a dict argument
    return jac(lambda d: d["a"] * d["b"].sum())({"a": t(T, X3), "b": t(T, Y3)})


def jac_int_input(T, jac):
    return jac(lambda x: x * 2)(T.tensor([1, 2]))


def hessian_cubic(T):
    # TestHessian.test_hessian_vectorize_correctness_simple
    return T.func.hessian(lambda x: (x ** 3).sum() + x[0] * x[2])(t(T, X3))


def hessian_two_args(T):
    # test_hessian with argnums=(0, 1): a tuple of tuples of blocks
    return T.func.hessian(lambda x, y: (x * y.sin()).sum(), argnums=(0, 1))(t(T, X3), t(T, Y3))


def hessian_has_aux(T):
    return T.func.hessian(lambda x: ((x ** 2).prod(), x.sum()), has_aux=True)(t(T, X3))


def jacfwd_jacrev_agree(T):
    # test_jacfwd_different_levels / jacrev equals jacfwd
    f = lambda x: (x.sin() * x.cos().sum()).exp()  # noqa: E731
    return T.func.jacfwd(f)(t(T, X3)), T.func.jacrev(f)(t(T, X3))


def linearize_matches_jvp(T):
    # TestLinearize.test_linearize_basic
    out, jvp_fn = T.func.linearize(lambda x: x.sin() * x.sum(), t(T, X3))
    return out, jvp_fn(t(T, Y3)), T.func.jvp(lambda x: x.sin() * x.sum(), (t(T, X3),), (t(T, Y3),))[1]


def linearize_pytree(T):
    out, jvp_fn = T.func.linearize(lambda x, y: {"p": x * y, "s": (x + y).sum()}, t(T, X3), t(T, Y3))
    return out, jvp_fn(t(T, Y3), t(T, X3))


def grad_of_vmap_of_grad(T):
    # TestComposability: grad(vmap(grad)) nesting
    return T.func.grad(lambda x: T.func.vmap(T.func.grad(lambda r: (r ** 3).sum()))(x).sum())(t(T, M23))


def vmap_of_jvp_of_grad(T):
    def hvp(x, v):
        return T.func.jvp(T.func.grad(lambda z: (z.sin() * z).sum()), (x,), (v,))[1]
    return T.func.vmap(hvp)(t(T, M23), t(T, M23 * 2))


def vmap_jacrev_linear_module(T):
    # per-sample Jacobians of a functional_call'd module (test_stateless + test_eager_transforms)
    lin = T.nn.Linear(3, 2).double()
    with T.no_grad():
        lin.weight.copy_(t(T, M23))
        lin.bias.copy_(t(T, [0.1, -0.2]))
    params = dict(lin.named_parameters())
    f = lambda p, x: T.func.functional_call(lin, p, (x,)).sum()  # noqa: E731
    return T.func.vmap(T.func.grad(f), in_dims=(None, 0))(params, t(T, M23 @ M23.T @ M23))


def functional_call_buffers_updated(T):
    # test_stateless: functional_call with a buffer dict sees (and, in train mode, updates) that buffer
    bn = T.nn.BatchNorm1d(3).double()
    rm = T.zeros(3, dtype=T.float64)
    out = T.func.functional_call(bn, {"running_mean": rm}, (t(T, M23),))
    return out, rm, bn.running_mean


def functional_call_kwargs(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.ones(3, dtype=T.float64))

        def forward(self, x, *, scale=1.):
            return self.w * x * scale
    m = M()
    return T.func.functional_call(m, {"w": t(T, Y3)}, (t(T, X3),), {"scale": 3.}), m.w


def functional_call_tuple_of_dicts(T):
    lin = T.nn.Linear(3, 2).double()
    return T.func.functional_call(lin, ({"weight": t(T, M23)}, {"bias": t(T, [1., 2.])}), t(T, X3))


def functional_call_grad_params(T):
    lin = T.nn.Linear(3, 2).double()
    p = {"weight": t(T, M23).requires_grad_(), "bias": t(T, [1., 2.]).requires_grad_()}
    T.func.functional_call(lin, p, (t(T, X3),)).pow(2).sum().backward()
    return p["weight"].grad, p["bias"].grad, lin.weight.grad


def functional_call_strict_missing(T):
    lin = T.nn.Linear(3, 2).double()
    return T.func.functional_call(lin, {"weight": t(T, M23)}, (t(T, X3),), strict=True)


def functional_call_non_module(T):
    return T.func.functional_call(lambda x: x, {}, (t(T, X3),))


def _my_sin(T, new_style=True):
    """TestAutogradFunction's MySin: backward deliberately 2 * cos, jvp 3 * t (so a transform
    that differentiates forward instead of calling them shows)."""
    if not new_style:
        class OldSin(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                return g * ctx.saved_tensors[0].cos() * 2
        return OldSin

    return scaled_sin_function(T)


FUNC = {
    # TestAutogradFunction.test_autograd_function_no_setup_context: refused under a transform
    "function_no_setup_context": lambda T: T.func.grad(lambda x: _my_sin(T, False).apply(x).sum())(t(T, X3)),
    # test_function_returns_input / test_autograd_function (grad, jvp call the Function's own rules)
    "function_grad_uses_backward": lambda T: T.func.grad(lambda x: _my_sin(T).apply(x).sum())(t(T, X3)),
    "function_jvp_uses_jvp": lambda T: T.func.jvp(_my_sin(T).apply, (t(T, X3),), (t(T, Y3),)),
    "function_outside_transform": lambda T: (lambda x: (_my_sin(T).apply(x).sum().backward(), x.grad)[1])(
        t(T, X3).requires_grad_()),
    "no_grad_inside": no_grad_inside,
    "no_grad_outside": no_grad_outside,
    "enable_grad_inside": enable_grad_inside,
    "no_grad_mixed_nested": no_grad_mixed_nested,
    "detach_inside": detach_inside,
    "views_inside": views_inside,
    "tensor_methods_inside": tensor_methods_inside,
    "zero_grad": zero_grad_fn,
    "argnums_with_kwargs": argnums_with_kwargs,
    "vjp_outputs_pytree": vjp_outputs_pytree,
    "vjp_none_output": vjp_none_output,
    "vjp_pytree_inputs": vjp_pytree_inputs,
    "vjp_cotangent_wrong_dtype": vjp_cotangent_wrong_dtype,
    "vjp_called_twice": vjp_called_twice,
    "jvp_has_aux_dict": jvp_has_aux_dict,
    "jvp_of_jvp": jvp_of_jvp,
    "jvp_list_primals": jvp_list_primals,
    "jvp_length_mismatch": jvp_length_mismatch,
    "jvp_non_tensor_output": jvp_non_tensor_output,
    "jvp_multiple_outputs": jvp_multiple_outputs,
    **{f"{jn}_{name}": (lambda fn, jn: lambda T: fn(T, getattr(T.func, jn)))(fn, jn)
       for jn in ("jacrev", "jacfwd")
       for name, fn in (("diff_numel", jac_diff_numel),
                        ("multiple_outputs_multiple_argnums", jac_multiple_outputs_multiple_argnums),
                        ("multiple_outputs_single_argnums", jac_multiple_outputs_single_argnums),
                        ("dimensionality", jac_dimensionality), ("aux_pytree", jac_aux_pytree),
                        ("aux_non_tensor", jac_aux_non_tensor), ("outputs_pytree", jac_outputs_pytree),
                        ("none_output", jac_none_output), ("vmap_on_jac", jac_vmap_on_jac),
                        ("nested_multiple_args", jac_nested_multiple_args), ("pytree_input", jac_pytree_input),
                        ("int_input", jac_int_input))},
    "hessian_cubic": hessian_cubic,
    "hessian_two_args": hessian_two_args,
    "hessian_has_aux": hessian_has_aux,
    "jacfwd_jacrev_agree": jacfwd_jacrev_agree,
    "linearize_matches_jvp": linearize_matches_jvp,
    "linearize_pytree": linearize_pytree,
    "grad_of_vmap_of_grad": grad_of_vmap_of_grad,
    "vmap_of_jvp_of_grad": vmap_of_jvp_of_grad,
    "vmap_grad_functional_call": vmap_jacrev_linear_module,
    "functional_call_buffers_updated": functional_call_buffers_updated,
    "functional_call_kwargs": functional_call_kwargs,
    "functional_call_tuple_of_dicts": functional_call_tuple_of_dicts,
    "functional_call_grad_params": functional_call_grad_params,
    "functional_call_strict_missing": functional_call_strict_missing,
    "functional_call_non_module": functional_call_non_module,
}


XFAIL: dict = {}


@pytest.mark.parametrize("fn", outcome_params(FUNC, XFAIL))
def test_eager_transforms(fn):
    same_outcome(fn)
