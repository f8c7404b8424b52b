"""Integer positions and slice starts are runtime operands (NOTE [dynamic positions],
tracegrad/_ops/shape.py): indexing at a new position reuses the compiled programs, and every
view semantic stays torch's (values, gradients, writes through views, version counters,
IndexError, compiled == eager)."""
import numpy as np
import pytest
from parity import C, F, check_parity, params

import tracegrad
from tracegrad._ops import host_first

torch = pytest.importorskip("torch")


# ---- values and gradients vs torch -------------------------------------------------------
VALUES = [
    C("int", lambda t, x: x[3], [F(7, 5)]),
    C("int_negative", lambda t, x: x[-2], [F(7, 5)]),
    C("int_second_dim", lambda t, x: x[:, 4], [F(7, 5)]),
    C("int_int", lambda t, x: x[2, -1], [F(7, 5)]),
    C("slice", lambda t, x: x[2:5], [F(7, 5)]),
    C("slice_negative", lambda t, x: x[-4:-1], [F(7, 5)]),
    C("slice_clamped", lambda t, x: x[-100:100], [F(7, 5)]),
    C("slice_empty", lambda t, x: x[5:2], [F(7, 5)]),
    C("slice_start_past_end", lambda t, x: x[9:], [F(7, 5)]),
    C("slice_step", lambda t, x: x[1::3], [F(7, 5)]),
    C("slice_step_stop", lambda t, x: x[1:6:2, ::2], [F(7, 5)]),
    C("slice_open_start", lambda t, x: x[:4], [F(7, 5)]),
    C("int_slice", lambda t, x: x[4, 1:4], [F(7, 5)]),
    C("none_ellipsis", lambda t, x: x[None, 2, ..., 1:3], [F(7, 5, 3)]),
    C("ellipsis_int", lambda t, x: x[..., -1], [F(7, 5, 3)]),
    C("nested", lambda t, x: x[1:6][2][1:], [F(7, 5)]),
    C("nested_step", lambda t, x: x[::2][1:3, 1][-1], [F(7, 5)]),
    C("select", lambda t, x: x.select(1, -2), [F(7, 5)]),
    C("narrow", lambda t, x: x.narrow(0, 2, 3), [F(7, 5)]),
    C("narrow_negative", lambda t, x: x.narrow(-1, -3, 2), [F(7, 5)]),
    C("tensor_split", lambda t, x: x.tensor_split(3, 1), [F(7, 5)]),
    C("int_beside_list", lambda t, x: x[1, :, [0, 2]], [F(4, 5, 3)]),
    C("slice_beside_list", lambda t, x: x[[0, 2], 1:4], [F(4, 5, 3)]),
    C("none_beside_list", lambda t, x: x[None, 1, [0, 1]], [F(4, 5, 3)]),
    C("int_tensor_key", lambda t, x: x[t.tensor(3)], [F(7, 5)]),
    C("view_of_int", lambda t, x: x[2].view(5, 1), [F(7, 5)]),
    C("reshape_of_step", lambda t, x: x[::2, 1:3].reshape(-1), [F(7, 5)]),
]


@params(VALUES)
def test_values_and_grads(case):
    check_parity(case, torch)


def _run_writes(mod):
    """A write-through-views program; returns what it observes."""
    base = mod.tensor(np.arange(30, dtype=np.float32).reshape(6, 5))
    out = []
    v = base[2]
    w = base[1:5:2]
    base[4] = mod.tensor([-1.0] * 5)
    base[0, 1:4] = 7.0
    base[-1].add_(100.0)
    w[0].mul_(2.0)                 # a view of a view
    base[3:5][1, ::2].sub_(0.5)    # nested slice/int/step
    base.narrow(1, 3, 2).select(0, 2).fill_(-9.0)
    out += [base.clone(), v.clone(), w.clone(), base._version]
    for i in range(6):             # a new position each time
        base[i, i % 5] = float(i)
    out += [base.clone(), v._version]
    return out


def test_writes_through_views_match_torch():
    got, want = _run_writes(tracegrad), _run_writes(torch)
    for g, w in zip(got, want):
        if isinstance(w, int):
            assert g == w
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def _run_grad_writes(mod):
    x = mod.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5), requires_grad=True)
    y = mod.tensor(np.linspace(0, 2, 5, dtype=np.float32), requires_grad=True)
    h = x * 2.0
    h[1] = y                       # CopySlices
    h[2, 1:4].mul_(2.0).add_(y[1:4])
    h[-1][::2].add_(1.0)
    loss = (h * h).sum()
    loss.backward()
    return [h.detach(), x.grad, y.grad, type(h.grad_fn).__name__]


def test_in_place_through_views_with_grad_match_torch():
    got, want = _run_grad_writes(tracegrad), _run_grad_writes(torch)
    assert got[-1] == want[-1]
    for g, w in zip(got[:-1], want[:-1]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_grad_fn_and_saved_index_as_torch():
    for mod in (tracegrad, torch):
        x = mod.zeros(5, 4, requires_grad=True)
        assert type(x[-2].grad_fn).__name__ == "SelectBackward0"
        assert type(x[1:3].grad_fn).__name__ == "SliceBackward0"
        assert type(x.narrow(0, 1, 2).grad_fn).__name__ == "SliceBackward0"
    # torch keeps the index as written and shows a negative one as its unsigned 64-bit value
    g, w = (mod.zeros(5, 4, requires_grad=True).select(0, -2).grad_fn for mod in (tracegrad, torch))
    assert (g._saved_index, g._saved_dim) == (w._saved_index, w._saved_dim) == (2 ** 64 - 2, 0)
    g = tracegrad.zeros(5, 4, requires_grad=True).narrow(0, 1, 2).grad_fn
    assert (g._saved_start, g._saved_end) == (1, 3)


def test_double_backward_through_select_and_slice():
    def f(mod):
        x = mod.tensor(np.linspace(0.5, 2, 12, dtype=np.float32).reshape(4, 3), requires_grad=True)
        y = (x[2] ** 3).sum() + (x[1:3, ::2] ** 2).sum()
        (g,) = mod.autograd.grad(y, x, create_graph=True)
        (gg,) = mod.autograd.grad((g[2] * g[1]).sum(), x)
        return g.detach().numpy(), gg.numpy()
    for a, b in zip(f(tracegrad), f(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-5)


# ---- errors ------------------------------------------------------------------------------
ERRORS = [
    C("int_past_end", lambda t, x: x[7], [F(7, 5)]),
    C("int_before_start", lambda t, x: x[-8], [F(7, 5)]),
    C("int_second_dim_past_end", lambda t, x: x[0, 5], [F(7, 5)]),
    C("select_past_end", lambda t, x: x.select(1, 5), [F(7, 5)]),
    C("select_negative", lambda t, x: x.select(0, -8), [F(7, 5)]),
    C("narrow_past_end", lambda t, x: x.narrow(0, 5, 3), [F(7, 5)]),
    C("int_on_0d", lambda t, x: x.sum()[0], [F(7, 5)]),
]


@params(ERRORS)
def test_errors_match_torch(case):
    check_parity(case, torch)


@pytest.mark.parametrize("key,msg", [
    (7, "index 7 is out of bounds for dimension 0 with size 7"),
    (-8, "index -8 is out of bounds for dimension 0 with size 7"),
    ((0, 5), "index 5 is out of bounds for dimension 1 with size 5"),
])
def test_index_error_message_is_torchs(key, msg):
    for mod in (tracegrad, torch):
        with pytest.raises(IndexError, match=msg):
            mod.zeros(7, 5)[key]


# ---- compiled programs: a new position reuses them ----------------------------------------
@pytest.fixture
def compiles(jax_compiles):
    return jax_compiles


def _setitem(a, i):
    a[i] = tracegrad.ones(a.shape[1])


def _add_(a, i):
    a[i].add_(1.0)


def _backward(a, i):
    a[i:i + 3, 1].sum().backward()


def _read_after_write(a, i):
    v = a[i, ::2]
    a.mul_(1.0)
    return v + 0


def _nested(a, i):
    return a[i:i + 4][1][1:3]     # a[i:] would have a new shape per i


def _list(a, i):
    return a[i, [0, 2]]


CASES = {
    "int": lambda a, i: a[i],
    "negative": lambda a, i: a[-i - 1],
    "slice": lambda a, i: a[i:i + 2],
    "int_step": lambda a, i: a[i, 1::2],
    "select": lambda a, i: a.select(0, i),
    "narrow": lambda a, i: a.narrow(0, i, 4),
    "nested": _nested,
    "setitem": _setitem,
    "add_": _add_,
    "backward": _backward,
    "read_after_write": _read_after_write,
    "int_beside_list": _list,
}


@pytest.mark.parametrize("name", list(CASES))
def test_thirty_positions_compile_at_most_two_programs(name, compiles):
    f = CASES[name]
    a = tracegrad.randn(40 + len(name), 6, requires_grad=(name == "backward"))
    def call(i):
        out = f(a, i)
        if isinstance(out, tracegrad.Tensor):
            np.asarray(out.detach())   # a read (numpy() would make the storage numpy-shared)
    for _ in range(host_first.HOST_CALLS + 1):
        call(35)                     # programs this case needs at any position (compiled once
    before = compiles[0]             # their first calls on the host are past: NOTE [host first calls])
    for i in range(30):
        call(i)
    assert compiles[0] - before <= 2, f"{name}: {compiles[0] - before} XLA compiles for 30 positions"


def test_chain_programs_are_keyed_by_structure():
    from tracegrad._tensor import tensor as _tensor
    a = tracegrad.randn(50, 3)
    views = [a[i, 1:] for i in range(20)]
    a.add_(1.0)                       # the views are read again through their chains
    n = len(_tensor._chain_fwd)
    vals = [v.numpy() for v in views]
    assert len(_tensor._chain_fwd) - n <= 1
    ref = a.numpy()
    for i, v in enumerate(vals):
        np.testing.assert_array_equal(v, ref[i, 1:])


def test_version_counter_shared_by_views_at_new_positions():
    a = tracegrad.zeros(10, 2)
    vs = [a[i] for i in range(10)]
    for i, v in enumerate(vs):
        v.fill_(float(i))
    assert a._version == 10 and all(v._version == 10 for v in vs)
    np.testing.assert_array_equal(a.numpy(), np.repeat(np.arange(10.0), 2).reshape(10, 2))


# ---- under tracegrad.compile: positions are constants of the trace ------------------------
def test_compiled_equals_eager_with_views():
    def make():
        tracegrad.manual_seed(0)
        w = tracegrad.randn(6, 4, requires_grad=True)

        def step(x):
            h = x @ w.t()
            out = h[1:, ::2].sum() + h[-1, 2] * h.narrow(1, 2, 3).select(0, 0).sum()
            buf = h.detach().clone()
            buf[0, 1:3] = 0.0
            out.backward()
            return out, buf
        return w, step

    x = tracegrad.tensor(np.random.RandomState(0).randn(3, 4).astype("float32"))
    we, eager = make()
    wc, step = make()
    comp = tracegrad.compile(step)
    for _ in range(3):
        oe, be = eager(x)
        oc, bc = comp(x)
        np.testing.assert_allclose(oc.item(), oe.item(), rtol=1e-5)
        np.testing.assert_allclose(bc.numpy(), be.numpy(), rtol=1e-5)
    np.testing.assert_allclose(wc.grad.numpy(), we.grad.numpy(), rtol=1e-5)


def test_augmented_assignment_through_view_of_view_of_nonleaf():
    # h[-1][::2] += 1 runs add_ on the view (CopySlices) and then copies the view into itself:
    # CopySlices saves only what the wrapped op saves, so the second write does not invalidate
    # the first node (torch runs this); mul_ and exp_ on views need the base's value and keep it
    torch = pytest.importorskip("torch")

    def run(M):
        x = M.arange(12.0).reshape(3, 4).requires_grad_()
        h = x * 2
        h[-1][::2] += 1.0
        h[0].mul_(x[1].detach() + 1)
        h[1, 1:3].exp_()
        (h * h).sum().backward()
        return np.asarray(x.grad.tolist())
    np.testing.assert_allclose(run(tracegrad), run(torch), rtol=1e-5)
