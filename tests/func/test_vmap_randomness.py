"""``tracegrad.func.vmap(..., randomness=...)`` against ``torch.func.vmap``: the same program on
both modules gives the same shapes, the same pattern of equal and different rows ('different':
every example its own draw; 'same': one draw for the batch; nested levels combine), and the same
errors. Random streams differ between the two, so values are compared by pattern, not equality."""
import itertools

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

# each program draws inside the mapped function; all are allowed by torch in both modes
PROGRAMS = {
    "rand": lambda m, t: t + m.rand(16),
    "randn_like": lambda m, t: m.randn_like(t),
    "randint": lambda m, t: t + m.randint(0, 1000, (16,)).to(t.dtype),
    "dropout": lambda m, t: m.nn.functional.dropout(t + 1, 0.5),
    "uniform_": lambda m, t: t.clone().uniform_(),
    "normal_": lambda m, t: (t * 0).normal_(),
    "randperm": lambda m, t: m.randperm(7) + t.sum().long(),
    "generator": lambda m, t: t + m.rand(16, generator=m.Generator().manual_seed(3)),
}


def _rows(out):
    a = np.asarray(out.detach().numpy() if hasattr(out, "detach") else out)
    return [a[i] for i in range(a.shape[0])]


def _distinct(rows):
    return all(not np.array_equal(a, b) for a, b in itertools.combinations(rows, 2))


def _equal(rows):
    return all(np.array_equal(rows[0], r) for r in rows[1:])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_different_draws_per_example_same_shares_one(name):
    prog = PROGRAMS[name]
    for m in (torch, tracegrad):
        m.manual_seed(0)
        x = m.zeros(6, 16)   # wide rows: two dropout masks of 16 coincide with probability 2**-16
        diff = m.func.vmap(lambda t: prog(m, t), randomness="different")(x)
        same = m.func.vmap(lambda t: prog(m, t), randomness="same")(x)
        want = (6, 7) if name == "randperm" else (6, 16)
        assert tuple(diff.shape) == tuple(same.shape) == want, m.__name__
        assert diff.dtype == same.dtype
        assert _equal(_rows(same)), m.__name__
        assert _distinct(_rows(diff)), m.__name__


def test_different_values_are_draws_of_the_distribution():
    tracegrad.manual_seed(0)
    x = tracegrad.zeros(512)
    u = tracegrad.func.vmap(lambda t: t + tracegrad.rand(()), randomness="different")(x).numpy()
    assert len(np.unique(u)) == 512 and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.06
    p = tracegrad.func.vmap(lambda t: tracegrad.randperm(6), randomness="different")(x[:20])
    assert all(sorted(r) == list(range(6)) for r in p.tolist())
    mask = tracegrad.func.vmap(lambda t: tracegrad.nn.functional.dropout(t + 1, 0.25),
                               randomness="different")(tracegrad.zeros(64, 16)).numpy()
    assert set(np.unique(mask)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < (mask == 0).mean() < 0.35


@pytest.mark.parametrize("outer,inner", [("different", "different"), ("same", "different"),
                                         ("different", "same"), ("same", "same")])
def test_nested_levels_combine_as_torch(outer, inner):
    def pattern(m):
        m.manual_seed(0)
        f = m.func.vmap(m.func.vmap(lambda t: t + m.rand(()), randomness=inner), randomness=outer)
        out = f(m.zeros(3, 4)).numpy()
        repeats_along_outer = all(_equal(list(out[:, j])) for j in range(4))
        repeats_along_inner = all(_equal(list(out[i])) for i in range(3))
        return out.shape, repeats_along_outer, repeats_along_inner, _distinct(list(out.reshape(-1)))
    assert pattern(tracegrad) == pattern(torch)


@pytest.mark.parametrize("levels", [("error", "different"), ("different", "error"), ("error", "same")])
def test_error_mode_raises_at_any_level(levels):
    outer, inner = levels
    for m in (torch, tracegrad):
        f = m.func.vmap(m.func.vmap(lambda t: t + m.rand(()), randomness=inner), randomness=outer)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            f(m.zeros(2, 3))
    assert tracegrad.rand(2).shape == (2,)   # generators draw again afterwards


def test_different_is_reproducible_and_advances_the_generator():
    f = tracegrad.func.vmap(lambda t: t + tracegrad.rand(4), randomness="different")
    x = tracegrad.zeros(3, 4)
    tracegrad.manual_seed(7)
    a, a2 = f(x), f(x)
    tracegrad.manual_seed(7)
    b, b2 = f(x), f(x)
    assert tracegrad.equal(a, b) and tracegrad.equal(a2, b2)
    assert not np.array_equal(a.numpy(), a2.numpy())


def test_backward_through_vmap_sees_the_forward_draws():
    """The transform's node traces the function again at backward: its draws must repeat, so
    dropout's gradient is the forward's mask."""
    for randomness in ("different", "same"):
        x = tracegrad.ones(4, 6, requires_grad=True)
        y = tracegrad.func.vmap(lambda t: tracegrad.nn.functional.dropout(t, 0.5), randomness=randomness)(x)
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
        y2 = tracegrad.func.vmap(lambda t: t * tracegrad.rand(6), randomness=randomness)(x)
        (g,) = tracegrad.autograd.grad(y2.sum(), x)
        np.testing.assert_array_equal(g.numpy(), y2.detach().numpy())


def test_per_example_grads_with_dropout():
    def loss(w, xi):
        return (tracegrad.nn.functional.dropout(xi * w, 0.5)).sum()
    w, x = tracegrad.ones(8), tracegrad.ones(5, 8)
    tracegrad.manual_seed(1)
    g = tracegrad.func.vmap(tracegrad.func.grad(loss), in_dims=(None, 0), randomness="different")(w, x)
    assert tuple(g.shape) == (5, 8) and _distinct(_rows(g))
    assert set(np.unique(g.numpy())) <= {0.0, 2.0}
    g_same = tracegrad.func.vmap(tracegrad.func.grad(loss), in_dims=(None, 0), randomness="same")(w, x)
    assert _equal(_rows(g_same))


def test_compiled_vmap_different_equals_eager():
    f = tracegrad.func.vmap(lambda t: tracegrad.nn.functional.dropout(t, 0.5) + tracegrad.rand(3),
                            randomness="different")
    x = tracegrad.ones(4, 3)
    tracegrad.manual_seed(0)
    eager = [f(x) for _ in range(3)]
    compiled = tracegrad.compile(f)
    tracegrad.manual_seed(0)
    for e in eager:
        assert tracegrad.equal(compiled(x), e)


def test_different_with_an_empty_batch():
    for m in (torch, tracegrad):
        out = m.func.vmap(lambda t: t + m.rand(3), randomness="different")(m.zeros(0, 3))
        assert tuple(out.shape) == (0, 3), m.__name__
