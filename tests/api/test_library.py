"""``tracegrad.library`` / ``tracegrad.ops`` (torch's Python custom operators) against torch 2.13:
values, gradients through ``register_autograd``, the error without one, in-place operators,
``register_kernel``, the older ``Library`` API, ``opcheck``, and inside ``tracegrad.compile``."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

_LIBS = (tracegrad, torch)


def _np(t):
    return t.detach().numpy()


def _numpy_sin(lib, name):
    @lib.library.custom_op(f"tgtest::{name}", mutates_args=())
    def op(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.numpy(force=True)))
    return op


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, g):
    x, = ctx.saved_tensors
    return g * x.cos()


def test_custom_op_values_and_gradients():
    a = np.linspace(-2, 2, 5).astype(np.float32)
    outs = []
    for lib in _LIBS:
        op = _numpy_sin(lib, "sin_grad")
        x = lib.tensor(a, requires_grad=True)
        y = op(x)
        assert y.requires_grad
        assert type(y.grad_fn).__name__ == "GeneratedBackwardFor_tgtest_sin_grad_defaultBackward"
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            y.sum().backward()
        op.register_autograd(_backward, setup_context=_setup)
        y = lib.ops.tgtest.sin_grad(x)
        (y * lib.arange(5.0)).sum().backward()
        assert lib.ops.tgtest.sin_grad.default(x.detach()).shape == x.shape
        with lib.no_grad():
            assert op(x).grad_fn is None
        outs.append((_np(y), _np(x.grad)))
    for p, q in zip(*outs):
        np.testing.assert_allclose(p, q, rtol=1e-6)


def test_mutating_and_kernel_registration():
    for lib in _LIBS:
        @lib.library.custom_op("tgtest::add_inplace", mutates_args=("x",))
        def add_inplace(x: lib.Tensor, y: float) -> None:
            x.add_(y)
        t = lib.zeros(2)
        assert add_inplace(t, 1.5) is None
        assert t.tolist() == [1.5, 1.5]

        @lib.library.custom_op("tgtest::scaled", mutates_args=())
        def scaled(x: lib.Tensor, k: float = 2.0) -> lib.Tensor:
            return x * k
        assert scaled(lib.ones(2)).tolist() == [2.0, 2.0]
        assert scaled(lib.ones(2), k=3.0).tolist() == [3.0, 3.0]
        scaled.register_kernel("cpu", lambda x, k=2.0: x * k + 1)
        assert scaled(lib.ones(2)).tolist() == [3.0, 3.0]


@pytest.mark.parametrize("case", ["no_namespace", "no_annotation", "no_return", "unknown_mutated"])
def test_registration_errors(case):
    for lib in _LIBS:
        with pytest.raises(ValueError):
            if case == "no_namespace":
                lib.library.custom_op(f"tgtest_{case}", mutates_args=())(lambda x: x)
            elif case == "no_annotation":
                def f(x):
                    return x
                lib.library.custom_op(f"tgtest::{case}", mutates_args=())(f)
            elif case == "no_return":
                def g(x: lib.Tensor):
                    return x
                lib.library.custom_op(f"tgtest::{case}", mutates_args=())(g)
            else:
                def h(x: lib.Tensor) -> lib.Tensor:
                    return x.clone()
                lib.library.custom_op(f"tgtest::{case}", mutates_args=("y",))(h)


def test_output_aliasing_an_input_raises():
    for lib in _LIBS:
        @lib.library.custom_op("tgtest::returns_input", mutates_args=())
        def returns_input(x: lib.Tensor) -> lib.Tensor:
            return x
        with pytest.raises(RuntimeError):
            returns_input(lib.ones(2))


def test_old_library_api():
    for lib in _LIBS:
        my = lib.library.Library("tgtestlib", "DEF")
        my.define("twice(Tensor x) -> Tensor")
        my.impl("twice", lambda x: x * 2, "CPU")
        assert lib.ops.tgtestlib.twice(lib.ones(2)).tolist() == [2.0, 2.0]
        my.define("thrice(Tensor x) -> Tensor")
        my.impl("thrice", lambda x: x * 3, "CompositeImplicitAutograd")
        x = lib.ones(2, requires_grad=True)
        lib.ops.tgtestlib.thrice(x).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        with pytest.raises(ValueError):
            lib.library.Library("tgtestlib2", "WRONG")


def test_opcheck_and_fake():
    for lib in _LIBS:
        op = _numpy_sin(lib, "sin_check")
        op.register_fake(lambda x: lib.empty_like(x))
        op.register_autograd(_backward, setup_context=_setup)
        result = lib.library.opcheck(op, (lib.randn(3),))
        assert all(v == "SUCCESS" for v in result.values()) and "test_faketensor" in result
    assert tracegrad.ops.aten.add.Tensor(tracegrad.ones(2), tracegrad.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(AttributeError):
        tracegrad.ops.tgtest.no_such_op


def test_custom_op_inside_compile_equals_eager():
    @tracegrad.library.custom_op("tgtest::cubed", mutates_args=())
    def cubed(x: tracegrad.Tensor) -> tracegrad.Tensor:
        return x * x * x
    cubed.register_autograd(lambda ctx, g: 3 * g * ctx.saved_tensors[0] ** 2,
                            setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    sin = _numpy_sin(tracegrad, "sin_compiled")

    def step(w, x):
        y = cubed(w * x).sum() + sin(x).sum()
        y.backward()
        return y
    results = []
    for wrap in (lambda f: f, tracegrad.compile):
        w = tracegrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
        f = wrap(step)
        vals = []
        for i in range(3):
            w.grad = None
            x = tracegrad.tensor([1.0, 2.0, 3.0]) + i
            vals.append((f(w, x).item(), w.grad.tolist()))
        results.append(vals)
    for (l0, g0), (l1, g1) in zip(*results):
        assert l0 == pytest.approx(l1, rel=1e-6) and g0 == pytest.approx(g1, rel=1e-6)
