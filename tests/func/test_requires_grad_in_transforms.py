"""Inside tracegrad.func's reverse-mode transforms (grad, vjp, jacrev) the differentiated inputs and
every value computed from them with grad mode on report ``requires_grad``, as torch.func's wrapped
tensors do: inputs are leaves, computed values are not; ``detach()``, results under ``no_grad``,
new factory tensors and values of a jvp or vmap level opened inside report none. Tensor hooks
registered there run on the level's gradient (``func/_hooks.py``); ``retain_grad`` and
``backward()`` are refused as torch refuses them, and ``autograd.grad`` on the level's values
raises a clear RuntimeError (torch computes it; tracegrad records no graph inside a transform).
Each program runs with torch (the oracle) and tracegrad (``parity.same_outcome``: equal values
or the same exception class)."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")

X = [0.1, 0.5, -0.3]
BX = [[0.1, 0.5, -0.3], [0.7, -0.2, 0.4]]


def t(T, a):
    return T.tensor(np.asarray(a), dtype=T.float64)


def flags(T, log):
    """A function that logs requires_grad / is_leaf of its input and of values it computes."""
    def f(x):
        y = x.sin()
        log.append(("x", x.requires_grad, x.is_leaf))
        log.append(("y", y.requires_grad, y.is_leaf))
        log.append(("view", x[0].requires_grad, x[0].is_leaf))
        log.append(("detach", x.detach().requires_grad))
        with T.no_grad():
            log.append(("no_grad", (x * 2).requires_grad))
        log.append(("factory", T.ones(2).requires_grad))
        return y.sum()
    return f


def logged(program):
    def fn(T):
        log = []
        out = program(T, log)
        return log, out
    return fn


def _inner_vmap(T, log):
    def g(x):
        log.append(("inner", x.requires_grad))
        return x.sin()
    return T.func.grad(lambda x: T.func.vmap(g)(x).sum())(t(T, BX))


def _inner_jvp(T, log):
    def h(x):
        log.append(("inner", x.requires_grad, x.sin().requires_grad))
        return x.sin()
    return T.func.grad(lambda x: T.func.jvp(h, (x,), (x,))[1].sum())(t(T, X))


def _vmap_of_grad(T, log):
    def g(x):
        log.append(("inner", x.requires_grad))
        return x.sin().sum()
    return T.func.vmap(T.func.grad(g))(t(T, BX))


def _jvp_alone(T, log):
    def h(x):
        log.append(("jvp", x.requires_grad))
        return x.sin()
    return T.func.jvp(h, (t(T, X),), (t(T, X),))


def _branches(T, log):
    # user code that hooks only what requires grad (gradient clipping written as hooks)
    def f(x):
        y = x * 3
        if y.requires_grad:
            y.register_hook(lambda g: g.clamp(-0.5, 0.5))
        return (y * y).sum()
    return T.func.grad(f)(t(T, X))


FLAGS = {
    "grad": lambda T, log: T.func.grad(flags(T, log))(t(T, X)),
    "vjp": lambda T, log: T.func.vjp(flags(T, log), t(T, X))[0],
    "jacrev": lambda T, log: T.func.jacrev(flags(T, log))(t(T, X)),
    "grad_of_grad": lambda T, log: T.func.grad(lambda x: T.func.grad(flags(T, log))(x).sum())(t(T, X)),
    "vmap_inside_grad": _inner_vmap,
    "jvp_inside_grad": _inner_jvp,
    "grad_inside_vmap": _vmap_of_grad,
    "jvp_alone": _jvp_alone,
    "hook_if_requires_grad": _branches,
}


@pytest.mark.parametrize("program", outcome_params({k: logged(v) for k, v in FLAGS.items()}))
def test_flags_as_torch(program):
    same_outcome(program)


def _hooks_in_order(T):
    def f(x):
        y = x.sin()
        h = y.register_hook(lambda g: g * 3)
        h.remove()
        y.register_hook(lambda g: g * 2)
        y.register_hook(lambda g: g + 1)
        return (y * y).sum()
    return T.func.grad(f)(t(T, X))


def _hook_all_later_uses(T):
    def f(x):
        y = x * 1
        y.register_hook(lambda g: g * 2)
        return (y + y.sin()).sum()
    return T.func.grad(f)(t(T, X))


def _hook_on_input(T):
    def f(x):
        x.register_hook(lambda g: g * 10)
        return (x * x).sum()
    return T.func.grad(f)(t(T, X))


def _hook_returning_none(T):
    seen = []

    def f(x):
        y = x.exp()
        y.register_hook(lambda g: seen.append(tuple(g.shape)))
        return y.sum()
    return T.func.grad(f)(t(T, X)), seen


def _hook_vmap_of_grad(T):
    def f(x):
        y = x.cos()
        y.register_hook(lambda g: g * 0.5)
        return y.sum()
    return T.func.vmap(T.func.grad(f))(t(T, BX))


def _hook_jacrev(T):
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g * 5)
        return y.tanh()
    return T.func.jacrev(f)(t(T, X))


def _hook_wrong_shape(T):
    def f(x):
        y = x.sin()
        y.register_hook(lambda g: g.sum())
        return y.sum()
    return T.func.grad(f)(t(T, X))


def _retain_grad(T):
    def f(x):
        y = x.sin()
        y.retain_grad()
        return y.sum()
    return T.func.grad(f)(t(T, X))


def _backward_inside(T):
    w = T.ones(2, requires_grad=True)

    def f(x):
        (w * 2).sum().backward()
        return x.sin().sum()
    return T.func.grad(f)(t(T, X))


def _backward_inside_vmap(T):
    w = T.ones(2, requires_grad=True)

    def f(x):
        (w * 2).sum().backward()
        return x.sin()
    return T.func.vmap(f)(t(T, BX))


HOOKS = {
    "in_order_removed_skipped": _hooks_in_order,
    "all_later_uses": _hook_all_later_uses,
    "on_the_input": _hook_on_input,
    "returning_none": _hook_returning_none,
    "vmap_of_grad": _hook_vmap_of_grad,
    "jacrev": _hook_jacrev,
    "wrong_shape": _hook_wrong_shape,
    "retain_grad_refused": _retain_grad,
    "backward_refused": _backward_inside,
    "backward_refused_under_vmap": _backward_inside_vmap,
}


@pytest.mark.parametrize("program", outcome_params(HOOKS))
def test_hooks_as_torch(program):
    same_outcome(program)


def test_hook_after_use_is_refused():
    """torch's hook sees every use of the tensor; tracegrad's sees the uses after registration,
    so registering after a use is refused rather than silently missing that use."""
    import tracegrad

    def f(x):
        y = x * x
        x.register_hook(lambda g: g * 10)
        return (y + x).sum()
    with pytest.raises(RuntimeError, match="already used"):
        tracegrad.func.grad(f)(t(tracegrad, X))


def test_autograd_grad_of_level_values_is_a_clear_error():
    import tracegrad

    def f(x):
        y = (x ** 2).sum()
        return tracegrad.autograd.grad(y, x)[0].sum()
    with pytest.raises(RuntimeError, match="tracegrad.func"):
        tracegrad.func.grad(f)(t(tracegrad, X))


def test_hook_gradient_matches_finite_differences():
    """Oracle-free: a hook that doubles the gradient through ``y`` doubles grad's result."""
    import tracegrad
    x = t(tracegrad, X)

    def f(hooked):
        def inner(x):
            y = x.sin()
            if hooked:
                y.register_hook(lambda g: 2 * g)
            return (y * x).sum()
        return inner
    plain = tracegrad.func.grad(f(False))(x).numpy()
    hooked = tracegrad.func.grad(f(True))(x).numpy()
    xs = np.asarray(X)
    # d/dx (sin x * x): the part through y (cos x * x) doubles, the direct part (sin x) does not
    np.testing.assert_allclose(plain, np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    np.testing.assert_allclose(hooked, 2 * np.cos(xs) * xs + np.sin(xs), rtol=1e-12)


def test_hook_reading_the_functions_values_is_a_clear_error():
    """The hook runs when JAX computes the gradient, after the function returned: a hook that
    reads the function's own values (torch allows it) raises a RuntimeError naming the hook."""
    import tracegrad

    def f(x):
        y = x.cos()
        y.register_hook(lambda g: g * x.detach())
        return y.sum()
    with pytest.raises(RuntimeError, match="tensor hook"):
        tracegrad.func.grad(f)(t(tracegrad, X))
