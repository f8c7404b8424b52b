"""``tracegrad.func`` transforms over functions that close over Tensors requiring grad, against
``torch.func``: the transform's results stay connected to the outer autograd graph (values,
``grad_fn`` present or absent, and the ``.grad`` an outer ``backward()`` leaves on the
closed-over tensors), for every transform, nested ones, MAML's inner/outer loop, no_grad
outside, constants and non-leaf closures; in-place writes to captured tensors raise as torch."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
W = RNG.standard_normal((2, 3))
V = RNG.standard_normal((3,))
X = RNG.standard_normal((3,))
XS = RNG.standard_normal((4, 3))
TS = RNG.standard_normal((4, 2))


def _t(m, a, rg=False):
    return m.tensor(np.asarray(a), dtype=m.float64, requires_grad=rg)


def _compare(got, want, path="result"):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{path}[{i}]")
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, tracegrad.Tensor), path
        assert tuple(got.shape) == tuple(want.shape), path
        assert got.requires_grad == want.requires_grad, path
        assert (got.grad_fn is None) == (want.grad_fn is None), path
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10,
                                   err_msg=path)
    else:
        assert got == want, path


def _both(program):
    want = program(torch, torch.func)
    got = program(tracegrad, tracegrad.func)
    _compare(got, want)
    return got


def _backward(m, *outs):
    """One outer loss over every result (squared, so gradients depend on values) and backward."""
    sum(((o ** 2).sum() for o in outs), _t(m, 0.0)).backward()


# ---- each transform over a closed-over leaf ------------------------------------------------------

def _grad(m, F, w, x):
    return (F.grad(lambda x: (w @ x).sin().sum())(x),)


def _grad_and_value_aux(m, F, w, x):
    g, (v, aux) = F.grad_and_value(lambda x: ((w @ x).tanh().sum(), w.exp() * 2), has_aux=True)(x)
    return g, v, aux


def _vjp(m, F, w, x):
    out, fn = F.vjp(lambda x: (w @ x).tanh(), x)
    return (out,) + fn(_t(m, W[:, 0]))


def _jvp(m, F, w, x):
    return F.jvp(lambda x: (w @ x).sin(), (x,), (_t(m, V),))


def _jacrev(m, F, w, x):
    return (F.jacrev(lambda x: (w @ x).sin())(x),)


def _jacfwd(m, F, w, x):
    return (F.jacfwd(lambda x: (w @ x).sin())(x),)


def _hessian(m, F, w, x):
    return (F.hessian(lambda x: (w @ x).sin().sum())(x),)


def _vmap(m, F, w, x):
    return (F.vmap(lambda r: (r @ w.T).cos())(_t(m, XS)),)


def _vmap_in_dims_none(m, F, w, x):
    return (F.vmap(lambda r, s: (r @ w.T) * (w @ s), in_dims=(0, None))(_t(m, XS), x),)


def _grad_of_grad(m, F, w, x):
    return (F.grad(lambda x: F.grad(lambda y: (w @ y ** 3).sum())(x).sin().sum())(x),)


def _vmap_of_grad(m, F, w, x):
    # per-sample gradients of a loss that reads a second weight from outside
    w2 = w * 0.5
    loss = lambda a, r, t: (((r @ a.T) * (w2 @ r)) - t).pow(2).sum()  # noqa: E731
    return (F.vmap(F.grad(loss), in_dims=(None, 0, 0))(_t(m, W), _t(m, XS), _t(m, TS)),)


def _jacrev_of_vmap(m, F, w, x):
    return (F.jacrev(lambda x: F.vmap(lambda r: (r * x).sin() @ w.T)(_t(m, XS)))(x),)


TRANSFORMS = {"grad": _grad, "grad_and_value_aux": _grad_and_value_aux, "vjp": _vjp, "jvp": _jvp,
              "jacrev": _jacrev, "jacfwd": _jacfwd, "hessian": _hessian, "vmap": _vmap,
              "vmap_in_dims_none": _vmap_in_dims_none, "grad_of_grad": _grad_of_grad,
              "vmap_of_grad": _vmap_of_grad, "jacrev_of_vmap": _jacrev_of_vmap}


@pytest.mark.parametrize("x_requires_grad", [False, True])
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_closed_over_leaf_gets_its_gradient(name, x_requires_grad):
    def program(m, F):
        w = _t(m, W, rg=True)
        x = _t(m, X, rg=x_requires_grad)
        outs = TRANSFORMS[name](m, F, w, x)
        _backward(m, *outs)
        return outs, w.grad, x.grad
    _both(program)


@pytest.mark.parametrize("name", ["grad", "vjp", "jacrev", "vmap", "grad_of_grad"])
def test_closed_over_non_leaf_and_view(name):
    # a closed-over result of ops on a parameter (and a view of one) carries its history
    def program(m, F):
        p = _t(m, W * 0.3, rg=True)
        w = (p * 2 + 1).tanh()
        outs = TRANSFORMS[name](m, F, w, _t(m, X))
        col = p[:, 1]
        outs = outs + (F.grad(lambda x: (col * x[:2]).exp().sum())(_t(m, X)),)
        _backward(m, *outs)
        return outs, p.grad
    _both(program)


@pytest.mark.parametrize("name", ["grad", "vjp", "jvp", "jacfwd", "vmap", "vmap_of_grad"])
def test_no_grad_outside_and_constants(name):
    # no_grad outside: no graph, the closed-over tensors get nothing; a closed-over tensor that
    # does not require grad stays a constant (the results need no graph)
    def program(m, F):
        w = _t(m, W, rg=True)
        with m.no_grad():
            outs = TRANSFORMS[name](m, F, w, _t(m, X, rg=True))
        consts = TRANSFORMS[name](m, F, _t(m, W), _t(m, X))
        return outs, consts, w.grad
    _both(program)


def test_reads_that_connect_nothing():
    # ops that record no edge to a closed-over tensor requiring grad (a zeros_like of it, an
    # integer argmax) leave the result without history, as torch's
    def program(m, F):
        w = _t(m, W, rg=True)
        out = F.vmap(lambda r: r[:2] * m.ones_like(w)[:, 0] + w.argmax())(_t(m, XS))
        g = F.grad(lambda x: (x * w.detach()[0]).sum())(_t(m, X))
        return out, g
    _both(program)

def test_closure_and_arguments_both_get_gradients_twice():
    # arguments requiring grad and closed-over tensors together; a second call accumulates
    def program(m, F):
        w, b = _t(m, W, rg=True), _t(m, W[:, 0], rg=True)
        x = _t(m, X, rg=True)
        for _ in range(2):
            g = F.grad(lambda x, b: ((w @ x) * b).sin().sum(), argnums=(0, 1))(x, b)
            _backward(m, *g)
        return g, w.grad, b.grad, x.grad
    _both(program)


def test_functional_call_with_closed_over_module_state():
    # vmap over functional_call: the module's own weight (not given) and a given bias, both
    # read from outside the function; grad over functional_call with a closed-over scale
    def program(m, F):
        lin = m.nn.Linear(3, 2).double()
        with m.no_grad():
            lin.weight.copy_(_t(m, W))
            lin.bias.copy_(_t(m, W[:, 1]))
        b = _t(m, W[:, 2], rg=True)
        scale = _t(m, 1.5, rg=True)
        out = F.vmap(lambda r: F.functional_call(lin, {"bias": b}, (r,)))(_t(m, XS))
        params = {k: v.detach() for k, v in lin.named_parameters()}
        g = F.grad(lambda p, r: (F.functional_call(lin, p, (r,)) * scale).tanh().sum())(params, _t(m, X))
        _backward(m, out, *g.values())
        return out, tuple(g.values()), lin.weight.grad, lin.bias.grad, b.grad, scale.grad
    _both(program)


def test_maml_inner_outer_loop():
    # MAML (functorch's maml_regression example, one task loop and its vmap form): the inner
    # grad is taken over the params as arguments, the adapted params close over them
    def program(m, F):
        def net(params, x):
            return (x @ params[0].T + params[1]).tanh() @ params[2].T

        params = [_t(m, W.T * 0.5, rg=True), _t(m, W[0] * 0.1, rg=True), _t(m, W[:1] * 0.3, rg=True)]
        x1, y1 = _t(m, XS[:, :2]), _t(m, TS[:, :1])
        x2, y2 = _t(m, XS[:, 1:]), _t(m, TS[:, 1:])

        def task_loss(x1, y1, x2, y2):
            grads = F.grad(lambda p, x, y: ((net(p, x) - y) ** 2).mean())(tuple(params), x1, y1)
            new = [p - 0.1 * g for p, g in zip(params, grads)]
            return ((net(new, x2) - y2) ** 2).mean()
        loop = task_loss(x1, y1, x2, y2)
        loop.backward()
        first = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        batched = F.vmap(task_loss)(x1[None].expand(2, 4, 2), y1[None].expand(2, 4, 1),
                                    x2[None].expand(2, 4, 2), y2[None].expand(2, 4, 1))
        batched.mean().backward()
        return loop, first, batched, [p.grad for p in params]
    _both(program)


# ---- in-place writes to captured tensors inside a transform --------------------------------------

def _raises(m, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the class is compared
        return [c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"][0]
    return "ok"


INPLACE = {
    # a grad transform refuses any write to a captured tensor, traced value or not
    "grad_traced": lambda m, F, c: F.grad(lambda x: (c.copy_(x) * x).sum())(_t(m, X)),
    "grad_constant": lambda m, F, c: F.grad(lambda x: (c.add_(1) * x).sum())(_t(m, X)),
    "vjp_traced": lambda m, F, c: F.vjp(lambda x: c.mul_(x), _t(m, X)),
    "vmap_of_grad": lambda m, F, c: F.vmap(F.grad(lambda x: (c.add_(1) * x).sum()))(_t(m, XS)),
    # vmap refuses a per-example value written into an unbatched captured tensor
    "vmap_traced": lambda m, F, c: F.vmap(lambda x: c.add_(x))(_t(m, XS)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_captured_raises_and_leaves_it(name):
    def program(m, F):
        c = _t(m, X)
        return _raises(m, lambda: INPLACE[name](m, F, c)), c
    assert _both(program)[0] == "RuntimeError"


def test_inplace_allowed_where_torch_allows():
    def program(m, F):
        c = _t(m, X)
        # vmap: a constant write into a captured tensor happens (once), as torch
        out = F.vmap(lambda x: c.add_(1) * x)(_t(m, XS))
        # a tensor made inside the function may be written (test_new_zeros_materializes_tensor)

        def foo(y, x):
            r = x.new_zeros((3,))
            r.copy_(y)
            return (r * r).sum()
        g = F.vmap(F.grad(foo))(_t(m, XS), _t(m, XS[:, 0]))
        # a closed-over tensor requiring grad written in place: refused (a leaf under vmap)
        w = _t(m, X, rg=True)
        err = _raises(m, lambda: F.vmap(lambda x: w.mul_(2) * x)(_t(m, XS)))
        with m.no_grad():     # ... but not under no_grad: then it happens, once
            done = F.vmap(lambda x: w.mul_(2) * x)(_t(m, XS))
        return out, c, g, err, w, done
    _both(program)
