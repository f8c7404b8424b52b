"""NOTE [concrete primals]: inside tracegrad.func's grad/vjp/jacrev/hessian (traced over eager
values) Python reads see values as in torch.func, which runs the function eagerly: ``.item()``,
``bool()`` in an ``if``/``while``, ``nonzero``/boolean masks, ``tolist()``, printing; and a
tensor stashed inside is a plain tensor after the transform. Gradients still flow through the
tensor ops, never through the Python numbers. Under vmap and tracegrad.compile the value is
only traced: the errors stay."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.array([0.5, -1.0, 2.0, -0.25], np.float32)


def _program(M, stash, log):
    def f(x):
        y = x.sin()
        stash.append(y)
        log.append((round(y.sum().item(), 5), x.gt(0).tolist()))
        m = x[x > 0]                          # boolean mask: nonzero on the value
        n = 0
        while (y * (n + 1)).abs().max() < 3:  # data-dependent loop
            n += 1
        if y.sum() > 0:
            return (m ** 3).sum() * n + y.sum()
        return (y * x).sum()
    return f


@pytest.mark.parametrize("transform", ["grad", "jacrev", "vjp", "hessian"])
def test_python_reads_inside_transforms_match_torch(transform):
    outs = {}
    for M in (torch, tracegrad):
        stash, log = [], []
        f = _program(M, stash, log)
        x = M.tensor(X)
        if transform == "vjp":
            out, fn = M.func.vjp(f, x)
            res = (out, fn(M.tensor(1.0))[0])
        else:
            res = (getattr(M.func, transform)(f)(x),)
        esc = stash[0]
        outs[M.__name__] = ([r.detach().numpy() for r in res], log,
                            esc.tolist(), float(esc.sum()), (esc * 2).numpy().copy(), repr(esc).split("(")[0])
    want, got = outs["torch"], outs["tracegrad"]
    for w, g in zip(want[0], got[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert got[1] == want[1]                       # what the Python reads saw, call by call
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    assert got[3] == pytest.approx(want[3], rel=1e-6)
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)
    assert got[5] == "tensor"                      # a plain tensor after the transform


def test_nested_grad_reads_the_innermost_value():
    def f(M):
        seen = []

        def inner(x):
            seen.append(x.item())
            return x ** 3 if x.item() > 0 else -x ** 2
        g2 = M.func.grad(M.func.grad(inner))(M.tensor(1.5))
        return float(g2), seen
    assert f(tracegrad) == f(torch)


def test_values_that_are_only_traced_still_raise():
    x = tracegrad.tensor(X)
    with pytest.raises(RuntimeError, match="vmap"):
        tracegrad.func.vmap(lambda r: r * r.sum().item())(x.reshape(2, 2))

    def step(x):
        return tracegrad.func.grad(lambda z: z.sin().sum() * z.sum().item())(x)
    with pytest.raises(tracegrad._dynamo.exc.Unsupported, match="item"):
        tracegrad.compile(step, fullgraph=True)(x)
    compiled = tracegrad.compile(step)          # a graph break: eager's values on every call
    for _ in range(2):
        np.testing.assert_allclose(compiled(x).numpy(), step(x).numpy(), rtol=1e-6)
    assert compiled.stats["graph_breaks"] and compiled.stats["traces"] == 0
