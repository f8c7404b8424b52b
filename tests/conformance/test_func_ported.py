"""PyTorch's test/functorch/test_eager_transforms.py, test/functorch/test_vmap.py (core cases)
and test/test_stateless.py (functional_call), ported: every case is one program ``fn(mod)`` run
with torch and with tracegrad (``same_outcome``): equal values, dtypes, shapes and result
structure, or the same exception class. Each case names the torch test it follows."""
import numpy as np
import pytest

import tracegrad
from parity import both, outcome_params, same_outcome

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3,))
Y = RNG.standard_normal((3,))
M = RNG.standard_normal((2, 3))
BX = RNG.standard_normal((4, 3))
BY = RNG.standard_normal((4,))


def t(mod, a, **kw):
    return mod.tensor(np.asarray(a), dtype=kw.pop("dtype", mod.float64), **kw)


def sinsum(x):
    return x.sin().sum()


def two(x, y):
    return (x * y.cos()).sum()


# ---- grad / grad_and_value (TestGradTransform) ------------------------------------------------
GRAD = {
    # test_primitive
    "primitive": lambda m: m.func.grad(m.sin)(t(m, 0.3)),
    # test_composite_simple / test_composite_complicated
    "composite": lambda m: m.func.grad(lambda x: (x @ t(m, M).T).sum())(t(m, X)),
    # test_multiple_inputs (argnums int, tuple, negative)
    "argnums_1": lambda m: m.func.grad(two, argnums=1)(t(m, X), t(m, Y)),
    "argnums_tuple": lambda m: m.func.grad(two, argnums=(0, 1))(t(m, X), t(m, Y)),
    "argnums_neg": lambda m: m.func.grad(two, argnums=-2)(t(m, X), t(m, Y)),
    "argnums_tuple_one": lambda m: m.func.grad(two, argnums=(1,))(t(m, X), t(m, Y)),
    # test_grad_fn_name / test_argnums (errors)
    "argnums_out_of_range": lambda m: m.func.grad(two, argnums=2)(t(m, X), t(m, Y)),
    "argnums_neg_out_of_range": lambda m: m.func.grad(two, argnums=-3)(t(m, X), t(m, Y)),
    "argnums_float": lambda m: m.func.grad(two, argnums=0.0)(t(m, X), t(m, Y)),
    "argnums_repeated": lambda m: m.func.grad(two, argnums=(0, 0))(t(m, X), t(m, Y)),
    "argnums_empty": lambda m: m.func.grad(two, argnums=())(t(m, X), t(m, Y)),
    # test_tensor_output / test_nonscalar_output / test_non_tensor_output errors
    "nonscalar_output": lambda m: m.func.grad(lambda x: x.sin())(t(m, X)),
    "non_tensor_output": lambda m: m.func.grad(lambda x: 1.0)(t(m, X)),
    "int_input": lambda m: m.func.grad(lambda x: x.sum())(m.tensor([1, 2])),
    "non_tensor_input": lambda m: m.func.grad(lambda x: m.tensor(x).sum())(1.0),
    # test_has_aux / test_has_aux_pytree
    "has_aux": lambda m: m.func.grad(lambda x: (x.sin().sum(), x.cos()), has_aux=True)(t(m, X)),
    "has_aux_pytree": lambda m: m.func.grad(lambda x: (x.sin().sum(), {"a": x.cos(), "b": [x.exp()]}),
                                            has_aux=True)(t(m, X)),
    "has_aux_not_tuple": lambda m: m.func.grad(lambda x: x.sin().sum(), has_aux=True)(t(m, X)),
    "has_aux_non_tensor": lambda m: m.func.grad(lambda x: (x.sum(), 1.0), has_aux=True)(t(m, X)),
    # test_grad_and_value / test_grad_and_value_has_aux
    "grad_and_value": lambda m: m.func.grad_and_value(sinsum)(t(m, X)),
    "grad_and_value_aux": lambda m: m.func.grad_and_value(lambda x: (sinsum(x), x * 2), has_aux=True)(t(m, X)),
    "grad_and_value_argnums": lambda m: m.func.grad_and_value(two, argnums=(0, 1))(t(m, X), t(m, Y)),
    # test_pytree_inputs (dict and tuple arguments)
    "dict_input": lambda m: m.func.grad(lambda d: (d["a"] * d["b"]).sum())({"a": t(m, X), "b": t(m, Y)}),
    "tuple_input": lambda m: m.func.grad(lambda p: (p[0].exp() + p[1]).sum())((t(m, X), t(m, Y))),
    # test_kwargs: keyword arguments are not differentiated
    "kwargs": lambda m: m.func.grad(lambda x, *, s: (x * s).sum())(t(m, X), s=t(m, Y)),
    # test_unrelated_grad: an input the output does not depend on gets zeros
    "unrelated": lambda m: m.func.grad(lambda x, y: x.sum(), argnums=1)(t(m, X), t(m, Y)),
    # test_simple_grad_of_grad / test_grad_of_grad_of_grad
    "grad_of_grad": lambda m: m.func.grad(m.func.grad(lambda x: x ** 4))(t(m, 0.7)),
    "grad_of_grad_of_grad": lambda m: m.func.grad(m.func.grad(m.func.grad(lambda x: x.sin())))(t(m, 0.7)),
    # test_nested_grad_with_closure: the outer input closed over by the inner function
    "nested_closure": lambda m: m.func.grad(lambda x: m.func.grad(lambda y: (x * y ** 2).sum())(t(m, Y)).sum())(t(m, X)),
    # test_float32 dtype kept
    "float32": lambda m: m.func.grad(sinsum)(t(m, X, dtype=m.float32)),
    # test_inplace_on_view inside grad
    "inplace_inside": lambda m: m.func.grad(lambda x: x.clone().mul_(2).sin().sum())(t(m, X)),
}

# ---- vjp / jvp / linearize (TestVjpTransform, TestJvp, TestLinearize) --------------------------


def _vjp_basic(m):
    out, fn = m.func.vjp(m.sin, t(m, X))
    return out, fn(t(m, Y))


def _vjp_multi_out(m):
    out, fn = m.func.vjp(lambda x, y: (x * y, x + y), t(m, X), t(m, Y))
    return out, fn((t(m, X), t(m, Y)))


def _vjp_aux(m):
    out, fn, aux = m.func.vjp(lambda x: (x.exp(), {"c": x.cos()}), t(m, X), has_aux=True)
    return out, fn(t(m, Y)), aux


def _vjp_twice(m):
    _, fn = m.func.vjp(lambda x: x ** 3, t(m, X))
    return fn(t(m, Y)), fn(t(m, X))


def _vjp_of_vjp(m):
    def inner(x):
        _, fn = m.func.vjp(m.sin, x)
        return fn(t(m, Y))[0]
    out, fn = m.func.vjp(inner, t(m, X))
    return out, fn(t(m, X))


def _vjp_bad_shape(m):
    _, fn = m.func.vjp(m.sin, t(m, X))
    return fn(t(m, M))


def _vjp_bad_structure(m):
    _, fn = m.func.vjp(lambda x: (x, x), t(m, X))
    return fn(t(m, X))


def _linearize(m):
    out, fn = m.func.linearize(lambda x: x.sin() * x, t(m, X))
    return out, fn(t(m, Y)), fn(t(m, X))


VJP = {
    "vjp": _vjp_basic,
    "vjp_multi_out": _vjp_multi_out,
    "vjp_aux": _vjp_aux,
    "vjp_twice": _vjp_twice,
    "vjp_of_vjp": _vjp_of_vjp,
    "vjp_bad_shape": _vjp_bad_shape,
    "vjp_bad_structure": _vjp_bad_structure,
    "vjp_non_tensor_primal": lambda m: m.func.vjp(lambda x: x, 1.0),
    "vjp_non_tensor_output": lambda m: m.func.vjp(lambda x: 1.0, t(m, X)),
    "jvp": lambda m: m.func.jvp(lambda x: x.sin() * x, (t(m, X),), (t(m, Y),)),
    "jvp_two_inputs": lambda m: m.func.jvp(lambda x, y: x * y, (t(m, X), t(m, Y)), (t(m, Y), t(m, X))),
    "jvp_aux": lambda m: m.func.jvp(lambda x: (x.exp(), x.cos()), (t(m, X),), (t(m, Y),), has_aux=True),
    "jvp_pytree_out": lambda m: m.func.jvp(lambda x: {"a": x.exp(), "b": (x, x * 2)}, (t(m, X),), (t(m, Y),)),
    "jvp_primals_not_tuple": lambda m: m.func.jvp(m.sin, t(m, X), (t(m, Y),)),
    "jvp_tangents_not_tuple": lambda m: m.func.jvp(m.sin, (t(m, X),), t(m, Y)),
    "jvp_structure_mismatch": lambda m: m.func.jvp(lambda x, y: x * y, (t(m, X), t(m, Y)), (t(m, Y),)),
    "jvp_shape_mismatch": lambda m: m.func.jvp(m.sin, (t(m, X),), (t(m, M),)),
    "jvp_of_grad": lambda m: m.func.jvp(m.func.grad(lambda x: (x ** 3).sum()), (t(m, X),), (t(m, Y),)),
    "grad_of_jvp": lambda m: m.func.grad(lambda x: m.func.jvp(m.sin, (x,), (t(m, Y),))[1].sum())(t(m, X)),
    "jvp_int_primal": lambda m: m.func.jvp(lambda x: x * 2, (m.tensor([1, 2]),), (m.tensor([1, 2]),)),
    "vjp_int_primal": lambda m: m.func.vjp(lambda x: x * 2, m.tensor([1, 2])),
    # test_grad_of_vjp_composition / test_vjp_of_grad_composition / test_jvp_vjp
    "grad_of_vjp": lambda m: m.func.grad(lambda x: m.func.vjp(m.sin, x)[1](t(m, Y))[0].sum())(t(m, X)),
    "vjp_of_grad": lambda m: m.func.vjp(m.func.grad(lambda x: (x.sin() * x).sum()), t(m, X))[1](t(m, Y)),
    "jvp_of_vjp": lambda m: m.func.jvp(lambda x: m.func.vjp(m.exp, x)[1](t(m, Y))[0], (t(m, X),), (t(m, Y),)),
    "jacrev_of_vmap": lambda m: m.func.jacrev(lambda x: m.func.vmap(m.sin)(x).sum(0))(t(m, BX)),
    "linearize": _linearize,
    "linearize_bad_tangent": lambda m: m.func.linearize(m.sin, t(m, X))[1](t(m, M)),
}

# ---- jacrev / jacfwd / hessian (TestJac, TestHessian) -----------------------------------------
JAC = {}
for _name in ("jacrev", "jacfwd"):
    def _table(api):
        j = lambda m: getattr(m.func, api)  # noqa: E731
        return {
            f"{api}_simple": lambda m: j(m)(m.sin)(t(m, X)),
            f"{api}_matrix": lambda m: j(m)(lambda x: x @ t(m, M).T)(t(m, X)),
            f"{api}_scalar_out": lambda m: j(m)(sinsum)(t(m, X)),
            f"{api}_scalar_in": lambda m: j(m)(lambda x: x * t(m, X))(t(m, 0.5)),
            f"{api}_argnums_tuple": lambda m: j(m)(lambda x, y: x * y, argnums=(0, 1))(t(m, X), t(m, Y)),
            f"{api}_argnums_1": lambda m: j(m)(lambda x, y: x * y.sin(), argnums=1)(t(m, X), t(m, Y)),
            f"{api}_argnums_bad": lambda m: j(m)(lambda x, y: x * y, argnums=2)(t(m, X), t(m, Y)),
            f"{api}_multi_out": lambda m: j(m)(lambda x: (x.sin(), x.sum()))(t(m, X)),
            f"{api}_dict_out": lambda m: j(m)(lambda x: {"s": x.sin(), "c": x.cos()})(t(m, X)),
            f"{api}_dict_in": lambda m: j(m)(lambda d: d["a"] * d["b"])({"a": t(m, X), "b": t(m, Y)}),
            f"{api}_has_aux": lambda m: j(m)(lambda x: (x.sin(), x.cos()), has_aux=True)(t(m, X)),
            f"{api}_aux_not_tuple": lambda m: j(m)(lambda x: x.sin(), has_aux=True)(t(m, X)),
            f"{api}_non_tensor_out": lambda m: j(m)(lambda x: 1.0)(t(m, X)),
            f"{api}_matrix_in": lambda m: j(m)(lambda a: (a ** 2).sum(0))(t(m, M)),
            f"{api}_vmap": lambda m: m.func.vmap(j(m)(m.sin))(t(m, BX)),
        }
    JAC.update(_table(_name))
JAC.update({
    # negative argnums: jacrev only (torch 2.13's jacfwd returns zeros for argnums=-1)
    "jacrev_argnums_neg": lambda m: m.func.jacrev(lambda x, y: x * y.sin(), argnums=-1)(t(m, X), t(m, Y)),
    "jacrev_chunk_float": lambda m: m.func.jacrev(m.sin, chunk_size=1.5)(t(m, X)),
    "vmap_chunk_0": lambda m: m.func.vmap(m.sin, chunk_size=0)(t(m, BX)),
    # test_chunk_jacrev: chunking changes nothing in the values
    "jacrev_chunk_1": lambda m: m.func.jacrev(lambda x: x.sin() * x, chunk_size=1)(t(m, X)),
    "jacrev_chunk_2": lambda m: m.func.jacrev(lambda x: (x.sin(), x.exp()), chunk_size=2)(t(m, X)),
    "jacrev_chunk_0": lambda m: m.func.jacrev(m.sin, chunk_size=0)(t(m, X)),
    "jacrev_int_output": lambda m: m.func.jacrev(lambda x: x.argmax())(t(m, X)),
    "jacrev_of_jacfwd": lambda m: m.func.jacrev(m.func.jacfwd(lambda x: x.sin() * x.sum()))(t(m, X)),
    "jacfwd_of_jacrev": lambda m: m.func.jacfwd(m.func.jacrev(lambda x: x.sin() * x.sum()))(t(m, X)),
    "jacrev_of_jacrev": lambda m: m.func.jacrev(m.func.jacrev(lambda x: x.exp() * x.sum()))(t(m, X)),
    "hessian": lambda m: m.func.hessian(lambda x: (x.sin() * x.sum()).sum())(t(m, X)),
    "hessian_argnums": lambda m: m.func.hessian(lambda x, y: (x * y ** 2).sum(), argnums=1)(t(m, X), t(m, Y)),
    "hessian_argnums_tuple": lambda m: m.func.hessian(lambda x, y: (x ** 2 * y).sum(), argnums=(0, 1))(t(m, X), t(m, Y)),
    "hessian_vmap": lambda m: m.func.vmap(m.func.hessian(lambda x: (x ** 3).sum()))(t(m, BX)),
})

# ---- vmap (TestVmapAPI) -----------------------------------------------------------------------
VMAP = {
    # test_single_input / test_multiple_inputs / test_multiple_outputs
    "single": lambda m: m.func.vmap(m.sin)(t(m, BX)),
    "multiple_inputs": lambda m: m.func.vmap(m.mul)(t(m, BX), t(m, BX)),
    "multiple_outputs": lambda m: m.func.vmap(lambda x: (x * 2, x.sum()))(t(m, BX)),
    "dict_output": lambda m: m.func.vmap(lambda x: {"a": x * 2, "b": [x.sum()]})(t(m, BX)),
    # test_unbatched_input: in_dims=None
    "in_dims_none": lambda m: m.func.vmap(m.mul, in_dims=(0, None))(t(m, BX), t(m, X)),
    "in_dims_1": lambda m: m.func.vmap(lambda x: x.sum(), in_dims=1)(t(m, BX)),
    "in_dims_neg": lambda m: m.func.vmap(lambda x: x * 2, in_dims=-1)(t(m, BX)),
    "out_dims_1": lambda m: m.func.vmap(lambda x: x * 2, out_dims=1)(t(m, BX)),
    "out_dims_neg": lambda m: m.func.vmap(lambda x: x.outer(x), out_dims=-1)(t(m, BX)),
    "out_dims_tuple": lambda m: m.func.vmap(lambda x: (x, x * 2), out_dims=(0, 1))(t(m, BX)),
    "out_dims_none": lambda m: m.func.vmap(lambda x, y: (x * 2, y), in_dims=(0, None), out_dims=(0, None))(t(m, BX), t(m, X)),
    # test_nested_in_dims: pytree in_dims
    "nested_in_dims": lambda m: m.func.vmap(lambda p: p[0] + p[1]["b"], in_dims=((0, {"b": 1}),))(
        (t(m, BX), {"b": t(m, BX).T})),
    "dict_input": lambda m: m.func.vmap(lambda d: d["a"] * d["b"])({"a": t(m, BX), "b": t(m, BX)}),
    "non_tensor_args": lambda m: m.func.vmap(lambda x, k: x * k, in_dims=(0, None))(t(m, BX), 3.0),
    "kwargs_unmapped": lambda m: m.func.vmap(lambda x, *, s: x * s)(t(m, BX), s=t(m, X)),
    # test_chunk_size
    "chunk_size": lambda m: m.func.vmap(m.sin, chunk_size=3)(t(m, BX)),
    "chunk_size_1": lambda m: m.func.vmap(lambda x: x.sum(), chunk_size=1)(t(m, BX)),
    # test_nested_vmap (outer product of batches)
    "nested": lambda m: m.func.vmap(m.func.vmap(m.mul, in_dims=(0, None)), in_dims=(None, 0))(t(m, X), t(m, BY)),
    "nested_same_dims": lambda m: m.func.vmap(m.func.vmap(lambda x: x * 2))(t(m, M)),
    # test_batched_ops inside
    "matmul_batched": lambda m: m.func.vmap(lambda a, b: a @ b, in_dims=(0, None))(t(m, BX), t(m, M).T),
    "reductions": lambda m: m.func.vmap(lambda x: (x.max(), x.mean(), x.argmax()))(t(m, BX)),
    "index": lambda m: m.func.vmap(lambda x: x[1:])(t(m, BX)),
    "view_ops": lambda m: m.func.vmap(lambda x: x.view(3, 1).expand(3, 2).t())(t(m, BX)),
    "softmax": lambda m: m.func.vmap(lambda x: m.nn.functional.softmax(x, 0))(t(m, BX)),
    "inplace_on_batched": lambda m: m.func.vmap(lambda x: x.clone().add_(1))(t(m, BX)),
    "inplace_batched_into_unbatched": lambda m: m.func.vmap(lambda x, y: y.add_(x), in_dims=(0, None))(
        t(m, BX), t(m, X)),
    # errors (test_in_dims_errors / test_out_dims_errors / test_non_tensor_output_raises)
    "mismatched_sizes": lambda m: m.func.vmap(m.mul)(t(m, BX), t(m, M)),
    "in_dims_too_big": lambda m: m.func.vmap(m.sin, in_dims=2)(t(m, BX)),
    "in_dims_wrong_len": lambda m: m.func.vmap(m.mul, in_dims=(0,))(t(m, BX), t(m, BX)),
    "in_dims_float": lambda m: m.func.vmap(m.sin, in_dims=0.0)(t(m, BX)),
    "in_dims_list": lambda m: m.func.vmap(m.mul, in_dims=[0, 0])(t(m, BX), t(m, BX)),
    "all_none": lambda m: m.func.vmap(m.sin, in_dims=None)(t(m, BX)),
    "no_inputs": lambda m: m.func.vmap(lambda: t(m, X))(),
    "non_tensor_output": lambda m: m.func.vmap(lambda x: 3.0)(t(m, BX)),
    "out_dims_wrong_len": lambda m: m.func.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(t(m, BX)),
    "out_dims_too_big": lambda m: m.func.vmap(lambda x: x, out_dims=3)(t(m, BX)),
    "scalar_mapped": lambda m: m.func.vmap(m.sin)(t(m, 1.0)),
    "bad_randomness": lambda m: m.func.vmap(m.sin, randomness="bogus")(t(m, BX)),
    "random_error": lambda m: m.func.vmap(lambda x: x + m.rand(3))(t(m, BX)),
    "random_error_dropout": lambda m: m.func.vmap(lambda x: m.nn.functional.dropout(x, 0.5))(t(m, BX)),
    # data-dependent Python control flow and host reads are errors under vmap (test_data_dependent_control_flow)
    "control_flow": lambda m: m.func.vmap(lambda x: x if x.sum() > 0 else -x)(t(m, BX)),
    "item": lambda m: m.func.vmap(lambda x: x * x.sum().item())(t(m, BX)),
    "numpy": lambda m: m.func.vmap(lambda x: m.tensor(x.numpy()))(t(m, BX)),
    "requires_grad_output": lambda m: m.func.vmap(lambda x: x.requires_grad)(t(m, BX)),
    "backward_inside_grad": lambda m: m.func.grad(lambda x: (x.sum().backward(), x.sum())[1])(t(m, X)),
    "empty_batch": lambda m: m.func.vmap(m.sin)(m.zeros(0, 3)),
    "none_output": lambda m: m.func.vmap(lambda x: (x, None), out_dims=(0, None))(t(m, BX)),
    "in_dims_dict_entry": lambda m: m.func.vmap(lambda d: d["a"] * 2, in_dims=({"a": 1},))({"a": t(m, BX)}),
    "out_dims_none_batched": lambda m: m.func.vmap(lambda x: x, out_dims=None)(t(m, BX)),
    "functional_call_dup_keys": lambda m: m.func.functional_call(
        m.nn.Linear(2, 2), ({"bias": m.zeros(2)}, {"bias": m.ones(2)}), (m.ones(1, 2),)),
    # per-sample gradients: vmap of grad (test_per_sample_grads_simple)
    "vmap_grad": lambda m: m.func.vmap(m.func.grad(lambda w, x, y: ((x @ w - y) ** 2)), in_dims=(None, 0, 0))(
        t(m, X), t(m, BX), t(m, BY)),
    "vmap_grad_aux": lambda m: m.func.vmap(m.func.grad(lambda x: (x.sin().sum(), x.cos()), has_aux=True))(t(m, BX)),
    "grad_of_vmap": lambda m: m.func.grad(lambda x: m.func.vmap(m.sin)(x).sum())(t(m, BX)),
    "vmap_vjp": lambda m: m.func.vmap(lambda x, c: m.func.vjp(m.sin, x)[1](c)[0])(t(m, BX), t(m, BX)),
    "vmap_jvp": lambda m: m.func.vmap(lambda x, v: m.func.jvp(m.exp, (x,), (v,)))(t(m, BX), t(m, BX)),
}


def _random_rows(randomness):
    """Two draws of a vmapped random op: whether the rows are equal and whether the values
    lie in [0, 1) (test_random_behavior: 'same' repeats, 'different' varies)."""
    def program(m, log):
        m.manual_seed(0)
        out = m.func.vmap(lambda x: x + m.rand(64), randomness=randomness)(m.zeros(4, 64))
        log.append(tuple(out.shape))
        log.append(bool((out[0] == out[1]).all()))
        log.append(bool(((out >= 0) & (out < 1)).all()))
    return program


def _captured_inplace(randomness):
    """An in-place random draw into a tensor the function closes over (unbatched): torch raises
    RuntimeError for 'different' (test_random_unbatched_inplace); with 'same' it is allowed."""
    def program(m, log):
        captured = m.zeros(3)
        try:
            m.func.vmap(lambda x: captured.uniform_() + x, randomness=randomness)(m.zeros(4, 3))
            log.append("ok")
        except Exception as e:  # noqa: BLE001 -- the class is compared
            log.append(type(e).__mro__[[c.__module__ for c in type(e).__mro__].index("builtins")].__name__)
    return program


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_vmap_randomness_rows(randomness):
    both(_random_rows(randomness))


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_vmap_random_inplace_on_captured(randomness):
    both(_captured_inplace(randomness))


GRAD_XFAIL = {}
GRAD.update({
    "item_inside_grad": lambda m: m.func.grad(lambda x: x.sin().sum() * x.sum().item())(t(m, X)),
    "requires_grad_inside_grad": lambda m: m.func.grad(lambda x: (x.requires_grad_() * 2).sum())(t(m, X)),
    "control_flow_inside_grad": lambda m: m.func.grad(lambda x: x.sum() if x.sum() > 0 else -x.sum())(t(m, X)),
})


@pytest.mark.parametrize("fn", outcome_params({**GRAD, **VJP}, xfail=GRAD_XFAIL))
def test_grad_vjp_jvp(fn):
    same_outcome(fn)


@pytest.mark.parametrize("fn", outcome_params(JAC))
def test_jacobians(fn):
    same_outcome(fn)


@pytest.mark.parametrize("fn", outcome_params(VMAP))
def test_vmap(fn):
    same_outcome(fn)


def test_backward_through_grad_reaches_inputs():
    """test_grad_with_requires_grad: a transform called on Tensors requiring grad records."""
    def program(m):
        x = t(m, X, requires_grad=True)
        g = m.func.grad(lambda a: (a ** 3).sum())(x)
        g.sum().backward()
        return g.detach(), x.grad
    same_outcome(program)



# ---- closures: tensors the transformed function reads from outside ------------------------------
def _captured_copy(m):
    """test_inplace_on_captures (TestGradTransform, TestJvp): writing into a captured tensor
    inside grad raises RuntimeError, and the captured tensor keeps its value."""
    captured = t(m, Y)

    def foo(x):
        captured.copy_(x)
        return (x * captured).sum()
    try:
        m.func.grad(foo)(t(m, X))
    except RuntimeError:
        return captured
    raise AssertionError("no error")


def _print_captured(m):
    """test_print_captured_tensor_inside_transform: a captured tensor prints as outside."""
    x = t(m, X)
    seen = []
    m.func.vjp(lambda y: seen.append(repr(x)) or y, t(m, Y))
    return seen[0] == repr(x)


def _vmap_of_vjp_fn(m):
    """test_vmap_vjp: a vjp_fn made outside, closed over by the vmapped function."""
    _, vjp_fn = m.func.vjp(m.sin, t(m, X))
    return m.func.vmap(lambda c: vjp_fn(c)[0])(t(m, BX))


def _vjp_of_vjp_fn(m):
    """test_vjp_vjp: vjp of a function closing over another vjp's vjp_fn."""
    x = t(m, X)
    _, vjp_fn = m.func.vjp(m.sin, x)
    y, vjp_fn2 = m.func.vjp(lambda a: vjp_fn(a)[0], x)
    return y, vjp_fn2(t(m, Y))


def _linearize_closure_grad(m):
    """test_linearize_composition_grad: linearize of a grad over a tensor made inside."""
    def fn(x):
        z = m.ones(3, dtype=m.float64)
        return m.func.grad(lambda a: z @ a.sin())(x)
    _, jvp_fn = m.func.linearize(fn, t(m, X))
    return jvp_fn(t(m, Y)), m.func.jvp(fn, (t(m, X),), (t(m, Y),))[1]


CLOSURE = {
    "inplace_on_captures": _captured_copy,
    # test_unrelated_grad / test_unrelated_vjp(_multiple_inputs_outputs): a closed-over constant output
    "unrelated_grad_closure": lambda m: m.func.grad(lambda x: t(m, 2.0))(t(m, 1.0)),
    "unrelated_vjp_closure": lambda m: m.func.vjp(lambda x: t(m, 2.0), t(m, 1.0))[1](t(m, 1.0)),
    "unrelated_vjp_multi": lambda m: m.func.vjp(lambda w, x: (t(m, 2.0), t(m, 2.0), x), t(m, 3.0), t(m, 4.0))[1](
        (t(m, 1.0), t(m, 1.0), t(m, 1.0))),
    # test_unrelated_hessian: jacrev(jacrev) of a function linear in its input over a captured W
    "unrelated_hessian": lambda m: m.func.jacrev(m.func.jacrev(lambda x: t(m, M) @ x))(t(m, X)),
    # TestJac.test_unrelated_output (jacrev and jacfwd), TestJvp.test_unrelated_output
    "jacrev_unrelated_output": lambda m: m.func.jacrev(lambda x: t(m, M))(t(m, M)),
    "jacfwd_unrelated_output": lambda m: m.func.jacfwd(lambda x: t(m, M))(t(m, M)),
    "jvp_unrelated_output": lambda m: m.func.jvp(lambda x: t(m, M), (t(m, M),), (t(m, M),)),
    # TestJvp.test_strict_mode: a captured output with strict=True
    "jvp_strict_captured": lambda m: m.func.jvp(lambda x: (x, t(m, M)), (t(m, M),), (t(m, M),), strict=True),
    "print_captured_tensor_inside_transform": _print_captured,
    "vmap_of_vjp_fn": _vmap_of_vjp_fn,
    "vjp_of_vjp_fn": _vjp_of_vjp_fn,
    "linearize_composition_grad": _linearize_closure_grad,
}


@pytest.mark.parametrize("fn", outcome_params(CLOSURE))
def test_closures(fn):
    same_outcome(fn)


# ---- functional_call / stack_module_state (test/test_stateless.py) -----------------------------
def _net(m):
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(3, 2), m.nn.BatchNorm1d(2))
    with m.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(t(m, RNG_P[i][: p.numel()].reshape(p.shape), dtype=m.float32))
    return net


RNG_P = [np.random.default_rng(i).standard_normal(6) for i in range(4)]


def _params(m, scale=2.0):
    return {n: p.detach() * scale for n, p in _net(m).named_parameters()}


def _fc_params(m):
    net = _net(m)
    x = t(m, BX, dtype=m.float32)
    out = m.func.functional_call(net, _params(m), (x,))
    # the module's own parameters are untouched and restored after the call
    return out, net(x), [p.detach() for p in net.parameters()]


def _fc_buffers(m):
    """test_functional_call_with_buffers: replaced buffers are updated in place by BatchNorm's
    running-statistics write, the module's own buffers are not."""
    net = _net(m)
    bufs = {n: b.clone() for n, b in net.named_buffers()}
    out = m.func.functional_call(net, ({n: p for n, p in net.named_parameters()}, bufs), t(m, BX, dtype=m.float32))
    return out, bufs["1.running_mean"], net[1].running_mean, bufs["1.num_batches_tracked"]


def _fc_tuple_dict_overlap(m):
    net = _net(m)
    p = _params(m)
    return m.func.functional_call(net, (p, {"0.weight": p["0.weight"]}), t(m, BX, dtype=m.float32))


def _fc_strict(m):
    net = _net(m)
    p = _params(m)
    del p["0.bias"]
    return m.func.functional_call(net, p, t(m, BX, dtype=m.float32), strict=True)


def _fc_strict_unexpected(m):
    net = _net(m)
    p = _params(m)
    p["extra"] = p["0.bias"]
    return m.func.functional_call(net, p, t(m, BX, dtype=m.float32), strict=True)


def _fc_partial(m):
    """Names not given keep the module's own tensors (strict=False, the default)."""
    net = _net(m)
    return m.func.functional_call(net, {"0.weight": _params(m)["0.weight"]}, t(m, BX, dtype=m.float32))


class _Kw:
    @staticmethod
    def build(m):
        class Mod(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = m.nn.Linear(3, 3)

            def forward(self, x, *, scale=1.0, extra=None):
                y = self.lin(x) * scale
                return y if extra is None else y + extra
        mod = Mod()
        with m.no_grad():
            mod.lin.weight.copy_(t(m, np.eye(3), dtype=m.float32))
            mod.lin.bias.zero_()
        return mod


def _fc_kwargs(m):
    mod = _Kw.build(m)
    p = {"lin.weight": t(m, M.T @ M, dtype=m.float32), "lin.bias": t(m, X, dtype=m.float32)}
    x = t(m, BX, dtype=m.float32)
    return (m.func.functional_call(mod, p, (x,), {"scale": 2.0}),
            m.func.functional_call(mod, p, x, {"extra": x}))


class _Tied:
    @staticmethod
    def build(m):
        class Tied(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = m.nn.Linear(3, 3, bias=False)
                self.b = m.nn.Linear(3, 3, bias=False)
                self.b.weight = self.a.weight
        mod = Tied()
        with m.no_grad():
            mod.a.weight.copy_(t(m, np.eye(3) * 0.5, dtype=m.float32))
        return mod


def _fc_tied(tie):
    def program(m):
        mod = _Tied.build(m)
        fwd = lambda x: mod.b(mod.a(x))  # noqa: E731
        mod.forward = fwd
        w = t(m, M.T @ M, dtype=m.float32)
        return m.func.functional_call(mod, {"a.weight": w}, t(m, BX, dtype=m.float32), tie_weights=tie)
    return program


def _fc_tied_conflict(m):
    mod = _Tied.build(m)
    mod.forward = lambda x: mod.b(mod.a(x))
    w = t(m, M.T @ M, dtype=m.float32)
    return m.func.functional_call(mod, {"a.weight": w, "b.weight": w * 2}, t(m, BX, dtype=m.float32))


def _fc_grad(m):
    """test_functional_call_with_grad: gradients with respect to the passed parameters."""
    net = m.nn.Linear(3, 1)
    p = {"weight": t(m, M[:1], dtype=m.float32), "bias": t(m, [0.5], dtype=m.float32)}

    def loss(params, x):
        return m.func.functional_call(net, params, (x,)).pow(2).sum()
    return m.func.grad(loss)(p, t(m, BX, dtype=m.float32))


def _fc_per_sample(m):
    net = m.nn.Linear(3, 1)
    p = {"weight": t(m, M[:1], dtype=m.float32), "bias": t(m, [0.5], dtype=m.float32)}

    def loss(params, x, y):
        return ((m.func.functional_call(net, params, (x[None],)) - y) ** 2).sum()
    return m.func.vmap(m.func.grad(loss), in_dims=(None, 0, 0))(p, t(m, BX, dtype=m.float32), t(m, BY, dtype=m.float32))


def _fc_autograd(m):
    """functional_call records: backward reaches the replacement tensors."""
    net = _net(m)
    p = {n: v.requires_grad_() for n, v in _params(m).items()}
    m.func.functional_call(net[0], {"weight": p["0.weight"], "bias": p["0.bias"]}, t(m, BX, dtype=m.float32)).sum().backward()
    return p["0.weight"].grad, p["0.bias"].grad


def _stack_ensemble(m):
    """test_stack_module_state + the ensembling recipe: vmap over stacked parameters."""
    nets = []
    for i in range(3):
        net = m.nn.Linear(3, 2)
        with m.no_grad():
            net.weight.copy_(t(m, np.random.default_rng(10 + i).standard_normal((2, 3)), dtype=m.float32))
            net.bias.fill_(float(i))
        nets.append(net)
    params, buffers = m.func.stack_module_state(nets)
    call = lambda p, b, x: m.func.functional_call(nets[0], (p, b), (x,))  # noqa: E731
    out = m.func.vmap(call, in_dims=(0, 0, None))(params, buffers, t(m, BX, dtype=m.float32))
    return out, params["weight"].requires_grad, params["weight"].is_leaf


FUNCTIONAL_CALL = {
    "params": _fc_params,
    "buffers": _fc_buffers,
    "tuple_of_dicts_overlap": _fc_tuple_dict_overlap,
    "strict_missing": _fc_strict,
    "strict_unexpected": _fc_strict_unexpected,
    "partial": _fc_partial,
    "kwargs": _fc_kwargs,
    "tie_weights": _fc_tied(True),
    "untied": _fc_tied(False),
    "tied_conflict": _fc_tied_conflict,
    "grad": _fc_grad,
    "per_sample": _fc_per_sample,
    "autograd": _fc_autograd,
    "stack_ensemble": _stack_ensemble,
    "stack_empty": lambda m: m.func.stack_module_state([]),
    "stack_mismatched": lambda m: m.func.stack_module_state([m.nn.Linear(3, 2), m.nn.Linear(2, 2)]),
    "not_a_module": lambda m: m.func.functional_call(lambda x: x, {}, (t(m, X),)),
}


@pytest.mark.parametrize("fn", outcome_params(FUNCTIONAL_CALL))
def test_functional_call(fn):
    same_outcome(fn)


def test_tracegrad_func_names_match_torch():
    """Every public transform name of torch.func that tracegrad documents exists."""
    for name in ("grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap",
                 "functional_call", "stack_module_state"):
        assert callable(getattr(tracegrad.func, name)) and callable(getattr(torch.func, name))


# ---- test/test_stateless.py: errors and messages, write-back, tied weights ---------------------
def _mock(m):
    class MockModule(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = m.nn.Linear(1, 1)
            self.register_buffer("buffer", m.ones(1))
            self.foo = 0.0
        def forward(self, x):
            return self.l1(x) + self.buffer
    return MockModule()

def _tied(m):
    class MockTied(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = m.nn.Linear(1, 1)
            self.tied_bias = self.l1.bias
            self.register_buffer("buffer", m.ones(1))
            self.register_buffer("tied_buffer", self.buffer)
        def forward(self, x):
            return self.l1(x) + self.tied_bias + self.buffer + self.tied_buffer
    return MockTied()

class _NonTensor:
    def __repr__(self):
        return "<NonTensor>"

def _stateless_program(m, out):
    """test/test_stateless.py: the MockModule/MockTiedModule cases, each logged as
    (name, outcome class, message or result), so messages must match torch's too."""
    def rec(name, f):
        try:
            r = f()
            out.append((name, "ok", r if isinstance(r, str) else None))
        except Exception as e:  # noqa: BLE001 -- class and message are compared
            out.append((name, type(e).__name__, str(e)))
    x = m.ones(1, 1) * 0.5
    W, B, BUF, EX = m.tensor([[2.0]]), m.tensor([5.0]), m.tensor([3.0]), m.tensor([1.0])
    fc = m.func.functional_call
    mod = _mock(m)
    rec("strict_missing", lambda: fc(mod, {"l1.weight": W}, x, strict=True))
    rec("strict_extra", lambda: fc(mod, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "extra": EX}, x, strict=True))
    rec("strict_both", lambda: fc(mod, {"l1.weight": W, "extra": EX}, x, strict=True))
    rec("extra_nonstrict", lambda: str(fc(mod, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "extra": EX}, x).tolist()))
    rec("none_bias", lambda: str(fc(mod, {"l1.weight": W, "l1.bias": None, "buffer": BUF}, x).tolist()))
    rec("non_tensor", lambda: fc(mod, {"l1.weight": _NonTensor()}, x))
    rec("non_tensor_attr", lambda: fc(mod, {"l1.weight": W, "foo": m.tensor([1.0])}, x))
    rec("no_submodule", lambda: fc(mod, {"l1.weight": W, "l2.bias": B}, x))
    rec("multi_dicts", lambda: fc(mod, ({"l1.weight": W, "l1.bias": B}, {"l1.weight": W}), x))
    rec("empty_tuple", lambda: str(fc(mod, (), x).shape))
    rec("three_dicts", lambda: str(fc(mod, ({"l1.weight": m.ones(1, 1)}, {"l1.bias": m.ones(1)}, {"buffer": m.zeros(1)}), x).tolist()))
    t = _tied(m)
    rec("tied_all", lambda: str(fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF}, x).tolist()))
    rec("tied_conflict_bias", lambda: fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "tied_bias": m.tensor([5.0])}, x))
    rec("tied_conflict_buffer", lambda: fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "tied_buffer": m.tensor([5.0])}, x))
    rec("tied_same_ok", lambda: str(fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "tied_bias": B, "tied_buffer": BUF}, x).tolist()))
    rec("tied_strict_noflag", lambda: fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF}, x, tie_weights=False, strict=True))
    rec("tied_strict_some", lambda: fc(t, {"l1.weight": W, "buffer": BUF}, x, tie_weights=True, strict=True))
    rec("tied_strict_extra_noflag", lambda: fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF, "extra": EX}, x, tie_weights=False, strict=True))
    rec("tied_strict_ok", lambda: str(fc(t, {"l1.weight": W, "l1.bias": B, "buffer": BUF}, x, tie_weights=True, strict=True).tolist()))

    class Foo(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", m.tensor([0.0]))
        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo
    foo = m.tensor([2.0]); a = {"foo": foo}; mod2 = Foo()
    rec("setattr", lambda: (fc(mod2, a, m.ones(1)), str((mod2.foo.tolist(), a["foo"].tolist(), foo.tolist(), a["foo"] is foo)))[1])

    class Foo2(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", m.tensor([0.0]))
        def forward(self, x):
            self.foo.add_(1)
            return x + self.foo
    foo2 = m.tensor([2.0]); a2 = {"foo": foo2}; mod3 = Foo2()
    rec("inplace", lambda: (fc(mod3, a2, m.ones(1)), str((mod3.foo.tolist(), a2["foo"].tolist(), foo2.tolist(), a2["foo"] is foo2)))[1])

    class Bar(m.nn.Module):
        def forward(self, x):
            return x + self.extra
    bar = Bar()
    rec("setattr_new", lambda: str((fc(bar, {"extra": m.zeros(())}, m.ones(())).tolist(), hasattr(bar, "extra"))))
    rec("setattr_new_strict", lambda: fc(bar, {"extra": m.zeros(())}, m.ones(()), strict=True))
    rec("missing_attr", lambda: fc(bar, {}, m.ones(())))

    class Kw(m.nn.Module):
        def __init__(self, x):
            super().__init__()
            self.x = x
        def forward(self, inp, *, other_inp):
            return inp * self.x + other_inp
    kw = Kw(m.ones(2))
    rec("kw_missing", lambda: fc(kw, {"x": m.zeros(2)}, m.ones(2)))
    rec("kw_only", lambda: str(fc(kw, {"x": m.zeros(2)}, (), {"inp": m.ones(2), "other_inp": m.ones(2) * 3}).tolist()))
    rec("kw_kwargs", lambda: str(fc(kw, {"x": m.zeros(2)}, kwargs={"inp": m.ones(2), "other_inp": m.ones(2) * 3}).tolist()))

    class Ref(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = m.nn.Linear(1, 1)
            self.register_buffer("buffer", m.ones(1))
        def forward(self, x):
            return self.l1(x) + self.buffer, tuple(self.parameters()), tuple(self.buffers())
    ref = Ref()
    def member():
        o, ps, bs = fc(ref, {"l1.weight": W, "l1.bias": B, "buffer": BUF}, x)
        return str((o.tolist(), [p is W for p in ps] + [p is B for p in ps], [b is BUF for b in bs]))
    rec("member_reference", member)


def test_stateless_functional_call_cases():
    both(_stateless_program)
