"""Ported from PyTorch's test/functorch/test_eager_transforms.py (TestAutogradFunction,
TestAutogradFunctionVmapAPI): a custom ``autograd.Function`` inside ``tracegrad.func``
transforms and eager, each program run with torch (the oracle) and tracegrad
(``parity.same_outcome``: equal values or the same exception class)."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome, scaled_sin_function

torch = pytest.importorskip("torch")


def returns_input(T, save_for, save_tensors, mark_dirty=False):
    class A(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            save = ctx.save_for_forward if save_for == "jvp" else ctx.save_for_backward
            if mark_dirty:
                ctx.mark_dirty(inputs[0])
            if save_tensors == "input":
                save(inputs[0])
            elif save_tensors == "output":
                save(output)

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t.add_(0) if mark_dirty else t.view_as(t)
    return A


def _returns_input_cases():
    # test_function_returns_input: saving an input that forward returned as-is is refused
    # (RuntimeError) when setup_context is overridden, in eager and inside grad/jvp, unless marked dirty
    cases = {}
    for sf in ("jvp", "vjp"):
        for st in ("input", "output", "neither"):
            for dirty in (False, True):
                key = f"{sf}_{st}_{'dirty' if dirty else 'clean'}"
                cases[f"returns_input_grad_{key}"] = (lambda sf, st, dirty: lambda T: T.func.grad(
                    lambda x: returns_input(T, sf, st, dirty).apply(x.clone()))(T.tensor(2.)))(sf, st, dirty)
                cases[f"returns_input_jvp_{key}"] = (lambda sf, st, dirty: lambda T: T.func.jvp(
                    lambda x: returns_input(T, sf, st, dirty).apply(x.clone()), (T.tensor(2.),), (T.tensor(3.),)))(sf, st, dirty)
                cases[f"returns_input_eager_{key}"] = (lambda sf, st, dirty: lambda T: returns_input(T, sf, st, dirty).apply(
                    T.tensor(2., requires_grad=True).clone()))(sf, st, dirty)
            cases[f"returns_input_no_grad_{sf}_{st}"] = (lambda sf, st: lambda T: T.no_grad()(
                returns_input(T, sf, st).apply)(T.tensor([2.])))(sf, st)
    return cases


def needs_input_grad(T, nest):
    # test_needs_input_grads: a Tensor argument the transform does not differentiate has
    # needs_input_grad False at every level (the rule returns None for it)
    seen = []

    class A(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            return

        @staticmethod
        def backward(ctx, g):
            seen.append(tuple(ctx.needs_input_grad))
            return g * 3, None

    f = A.apply
    for _ in range(nest):
        f = T.func.grad(f)
    out = f(T.tensor(2., dtype=T.float64), T.tensor(3., dtype=T.float64))
    return out, seen


def materialize(T, flag, use, nest):
    # test_set_materialize_grads: an output the loss does not use reaches backward as None with
    # set_materialize_grads(False), as zeros otherwise
    seen = []

    class A(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * 1, y * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            if flag is not None:
                ctx.set_materialize_grads(flag)

        @staticmethod
        def backward(ctx, gx, gy):
            seen.append((gx is None, gy is None, None if gy is None else gy.tolist()))
            return (None if gx is None else gx * 2), (None if gy is None else gy * 5)

    def f(y, x):
        a, b = A.apply(x, y)
        return (a ** 2).sum() if use == "first" else (a ** 2 + b).sum()

    if nest == 2:
        inner = T.func.grad(f, argnums=1)
        out = T.func.grad(lambda y, x: inner(y, x).sum(), argnums=(0, 1))
    else:
        out = T.func.grad(f, argnums=(0, 1))
    return out(T.tensor([3.], dtype=T.float64), T.tensor([2.], dtype=T.float64)), seen


def with_vmap(T, seen=None):
    """A Function with its own vmap staticmethod whose result differs from forward's (10 sin x
    against sin x), so the rule is seen to be used; backward 2 g cos x."""
    class Sin(scaled_sin_function(T)):
        @staticmethod
        def vmap(info, in_dims, x):
            if seen is not None:
                seen.append((info.batch_size, info.randomness, in_dims))
            return Sin.apply(x) * 10, in_dims[0]
    return Sin


def two_outputs(T):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(x, ys):
            return x * 2, ys[0] + ys[1]

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x, ys):
            # out_dims per output: the first keeps x's dim, the second is summed over the batch
            d = in_dims[0]
            return (x * 3, (ys[0] + ys[1]).sum(in_dims[1][0]) if in_dims[1][0] is not None else ys[0] + ys[1]), (d, None)
    return Two


def bad_vmap(T, rule, generate=False):
    class Bad(T.autograd.Function):
        generate_vmap_rule = generate

        @staticmethod
        def forward(x):
            return x * 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x):
            return rule(x, in_dims)
    return Bad.apply


def recorded(T, fn):
    seen = []
    return fn(with_vmap(T, seen)), seen


XB = [[0.1, 0.5, -0.3], [1.0, 2.0, 3.0]]


def tb(T):
    return T.tensor(XB, dtype=T.float64)


VMAP_CASES = {
    # test_info_object / test_in_dims_single_input: the rule's info and in_dims, and its result
    "vmap_rule_used": lambda T: recorded(T, lambda F: T.func.vmap(F.apply)(tb(T))),
    "vmap_rule_in_dims_1": lambda T: recorded(T, lambda F: T.func.vmap(F.apply, in_dims=1, out_dims=1)(tb(T))),
    "vmap_rule_in_dims_tuple": lambda T: recorded(T, lambda F: T.func.vmap(F.apply, in_dims=(1,))(tb(T))),
    "vmap_rule_randomness_same": lambda T: recorded(T, lambda F: T.func.vmap(F.apply, randomness="same")(tb(T))),
    "vmap_rule_randomness_different": lambda T: recorded(T, lambda F: T.func.vmap(F.apply, randomness="different")(tb(T))),
    "vmap_rule_nested": lambda T: recorded(T, lambda F: T.func.vmap(T.func.vmap(F.apply))(tb(T)[None].expand(2, 2, 3))),
    "vmap_rule_nested_inner_only": lambda T: recorded(T, lambda F: T.func.vmap(
        lambda a: T.func.vmap(lambda b: F.apply(b) + a.sum())(tb(T)))(tb(T)[:, :1])),
    # test_skips_empty_layer: an argument not batched at the level runs forward
    "vmap_rule_skips_unbatched": lambda T: recorded(T, lambda F: T.func.vmap(
        lambda x: x * F.apply(T.tensor([1.5], dtype=T.float64)))(tb(T))),
    "vmap_rule_pytree_args_out_dims": lambda T: T.func.vmap(two_outputs(T).apply)(tb(T), [tb(T), tb(T) * 2]),
    # the rule composes with the reverse-mode rule around and inside it
    "vmap_rule_vmap_of_grad": lambda T: recorded(T, lambda F: T.func.vmap(T.func.grad(lambda x: F.apply(x).sum()))(tb(T))),
    "vmap_rule_grad_of_vmap": lambda T: recorded(T, lambda F: T.func.grad(lambda x: T.func.vmap(F.apply)(x).sum())(tb(T))),
    "vmap_rule_jacrev": lambda T: recorded(T, lambda F: T.func.jacrev(F.apply)(tb(T)[0])),
    "vmap_rule_jacfwd": lambda T: recorded(T, lambda F: T.func.jacfwd(F.apply)(tb(T)[0])),
    "vmap_rule_vmap_of_jvp": lambda T: recorded(T, lambda F: T.func.vmap(
        lambda x: T.func.jvp(F.apply, (x,), (x * 0 + 1,)))(tb(T))),
    "vmap_rule_jvp_of_vmap": lambda T: recorded(T, lambda F: T.func.jvp(T.func.vmap(F.apply), (tb(T),), (tb(T) + 1,))),
    # test_should_have_two_returns / test_incompatible_out_dims_error_msg /
    # test_has_vmap_staticmethod_and_has_generate_vmap_rule: RuntimeError
    "vmap_rule_one_return": lambda T: T.func.vmap(bad_vmap(T, lambda x, d: x))(tb(T)),
    "vmap_rule_four_returns": lambda T: T.func.vmap(bad_vmap(T, lambda x, d: (x, x, 0, 0)))(tb(T)),
    "vmap_rule_incompatible_out_dims": lambda T: T.func.vmap(bad_vmap(T, lambda x, d: (x, (None,))))(tb(T)),
    "vmap_rule_list_vs_tuple_out_dims": lambda T: T.func.vmap(bad_vmap(T, lambda x, d: ([x], (0,))))(tb(T)),
    "vmap_rule_and_generate_vmap_rule": lambda T: T.func.vmap(bad_vmap(T, lambda x, d: (x, 0), True))(tb(T)),
}

CASES = {
    **VMAP_CASES,
    **_returns_input_cases(),
    "needs_input_grad_grad": lambda T: needs_input_grad(T, 1),
    "needs_input_grad_grad_of_grad": lambda T: needs_input_grad(T, 2),
    **{f"materialize_{flag}_{use}_{nest}": (lambda flag, use, nest: lambda T: materialize(T, flag, use, nest))(flag, use, nest)
       for flag in (None, False, True) for use in ("first", "both") for nest in (1, 2)},
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_function_inside_transforms(fn):
    same_outcome(fn)


def test_vmap_rule_compiled_equals_eager():
    """A Function's vmap staticmethod under tracegrad.compile: the compiled program equals eager
    (the rule's BatchTrace sits inside the compiled trace)."""
    import tracegrad
    F = with_vmap(tracegrad)
    progs = [lambda x: tracegrad.func.vmap(F.apply, in_dims=1, out_dims=1)(x),
             lambda x: tracegrad.func.grad(lambda x: tracegrad.func.vmap(F.apply)(x).sum())(x)]
    for p in progs:
        np.testing.assert_allclose(tracegrad.compile(p)(tb(tracegrad)).numpy(), p(tb(tracegrad)).numpy(), rtol=1e-12)
    # and the eager rule really ran (10 sin x, not forward's sin x)
    np.testing.assert_allclose(progs[0](tb(tracegrad)).numpy(), 10 * np.sin(np.asarray(XB)), rtol=1e-12)
