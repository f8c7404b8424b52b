"""torch's numpy bridge (NOTE [numpy bridge] in tracegrad/_tensor/numpy_bridge.py): a tensor and
the ndarray of ``t.numpy()`` / ``torch.from_numpy(a)`` / ``torch.as_tensor(a)`` share memory, so a
write through either is seen by the other -- in eager ops, views, optimizer steps and compiled
steps -- against torch 2.13 on the same programs. Seed 001 states it: "Tensor and numpy can share
their underlying storage, so modifying one changes the other"."""
import copy
import io
import pickle

import numpy as np
import pytest

import tracegrad
from parity import run_both

torch = pytest.importorskip("torch")


def _shares_both_ways(torch, log):
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    log("numpy() sees add_", n.copy())
    n[0] = 7
    log("tensor sees n[0] = 7", t)
    log("an op reads the write", (t * 2).sum())
    a = np.ones(4, dtype=np.float32)
    f = torch.from_numpy(a)
    np.add(a, 1, out=a)
    log("from_numpy sees np.add(out=)", f)
    f.mul_(3)
    log("array sees mul_", a.copy())
    f[1] = -1
    log("array sees setitem", a.copy())


def _views(torch, log):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = torch.from_numpy(a)
    row = t[1]
    log("row", row)
    a[1, 2] = 100
    log("row after the array's write", (row, row.sum()))
    col = t[:, 1:3]
    col.zero_()
    log("array after a view's zero_", a.copy())
    m = torch.arange(12.).reshape(3, 4)
    mt = m.t().numpy()
    log("transposed strides", (mt.strides, mt.flags["F_CONTIGUOUS"]))
    m[0, 1] = -5
    log("transposed view sees the write", mt[1, 0])
    z = torch.zeros(6)
    zn = z[::2].numpy()
    zn[:] = 4
    log("strided numpy() writes reach the tensor", z)
    c = torch.tensor([1 + 2j, 3 + 4j])
    r = c.real.numpy()
    r[:] = 9
    log("real part view", c)


def _dtypes(torch, log):
    for dt in (np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.complex64, np.float16):
        a = np.zeros(3, dtype=dt)
        t = torch.from_numpy(a)
        a[1] = 1
        log(f"{np.dtype(dt).name}", (t, str(t.dtype).split(".")[1]))
    e = torch.from_numpy(np.zeros((0, 3), np.float32))
    log("empty", (tuple(e.shape), e.numpy().shape))


def _as_tensor(torch, log):
    a = np.zeros(3, np.float32)
    t = torch.as_tensor(a)
    a[0] = 1
    log("as_tensor shares", t)
    t[1] = 2
    log("as_tensor writes back", a.copy())
    c = torch.as_tensor(a, dtype=torch.float64)
    a[2] = 3
    log("as_tensor with a new dtype copies", c)
    d = torch.asarray(a, copy=True)
    a[0] = 10
    log("asarray(copy=True) copies", d)
    s = torch.asarray(a)
    a[1] = 20
    log("asarray shares", s)
    k = torch.tensor(a)
    a[2] = 30
    log("tensor() copies", k)


def _training(torch, log):
    m = torch.nn.Linear(3, 2)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        m.bias.zero_()
    w = m.weight.detach().numpy()
    for name, opt in (("sgd", torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)),
                      ("adamw", torch.optim.AdamW(m.parameters(), lr=0.05))):
        for _ in range(3):
            opt.zero_grad()
            m(torch.ones(4, 3)).pow(2).sum().backward()
            opt.step()
        log(f"{name}: numpy() follows the parameter", w.copy())
    w[0, 0] = 2.0
    log("the parameter sees the array's write", m.weight)
    x = torch.from_numpy(np.array([1.0, 2.0, 3.0])).requires_grad_()
    (x * x).sum().backward()
    log("a from_numpy leaf's grad", x.grad)


def test_writes_are_shared_both_ways():
    run_both(_shares_both_ways)


def test_views_and_strides():
    run_both(_views)


def test_dtypes():
    run_both(_dtypes)


def test_as_tensor_and_asarray():
    run_both(_as_tensor)


def test_optimizer_steps_and_leaf_grads():
    run_both(_training)


def test_compiled_steps_read_and_write_the_shared_memory():
    """A compiled step writes the parameters back into the shared buffer (never donating it) and
    reads the array's writes made between calls; its results equal the eager run's."""
    def run(compiled):
        m = tracegrad.nn.Linear(3, 2)
        with tracegrad.no_grad():
            m.weight.copy_(tracegrad.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
            m.bias.zero_()
        w = m.weight.detach().numpy()
        opt = tracegrad.optim.Adam(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = tracegrad.compile(step) if compiled else step
        x = tracegrad.ones(4, 3)
        seen = []
        for i in range(4):
            loss = f(x)
            seen.append((float(loss), w.copy()))
            if i == 1:
                w[0, 0] = 3.0        # between calls, through numpy
        return seen, m.weight.detach().clone().numpy()
    eager, compiled = run(False), run(True)
    for (le, we), (lc, wc) in zip(eager[0], compiled[0]):
        assert le == pytest.approx(lc, rel=1e-5)
        np.testing.assert_allclose(we, wc, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eager[1], compiled[1], rtol=1e-5, atol=1e-6)
    assert compiled[0][2][1][0, 0] != compiled[0][1][1][0, 0]


def test_resize_growth_is_refused_as_torch():
    for mod in (torch, tracegrad):
        t = mod.from_numpy(np.zeros(4, np.float32))
        with pytest.raises(RuntimeError, match="not resizable"):
            t.resize_(10)
        t.resize_(2)                         # shrinking keeps the memory
        assert tuple(t.shape) == (2,)


def test_copies_do_not_share():
    """deepcopy, pickle, clone and torch.save/load make tensors of their own, as torch's."""
    a = np.zeros(3, np.float32)
    t = tracegrad.from_numpy(a)
    copies = [copy.deepcopy(t), pickle.loads(pickle.dumps(t)), t.clone()]
    buf = io.BytesIO()
    tracegrad.save(t, buf)
    buf.seek(0)
    copies.append(tracegrad.load(buf))
    a[:] = 5
    t.add_(1)
    for c in copies:
        np.testing.assert_array_equal(c.numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(a, np.full(3, 6, np.float32))


def test_large_unaligned_array_is_a_documented_snapshot():
    """A user array over 256 KiB that XLA cannot alias (here: one element off its allocation's
    start) is copied once: tensor writes reach it, its later writes are not seen (the README's
    one difference; copying it per read would copy it all per sample of a TensorDataset)."""
    base = np.zeros(100_001, np.float32)
    a = base[1:]
    assert a.ctypes.data % 64 != 0
    t = tracegrad.from_numpy(a)
    t.add_(1)
    assert a.sum() == 100_000
    a[0] = 50
    assert float(t[0]) == 1.0


def test_small_unaligned_and_strided_arrays_share_exactly():
    base = np.zeros(65, np.float32)
    a = base[1:]                             # 4 bytes off: XLA cannot alias it; read per use
    t = tracegrad.from_numpy(a)
    a[3] = 2
    assert float(t[3]) == 2.0 and float(t.sum()) == 2.0
    s = np.zeros((4, 6), np.float32)[:, ::2]
    ts = tracegrad.from_numpy(s)
    s[1, 1] = 7
    assert float(ts[1, 1]) == 7.0
    ts.mul_(2)
    assert s[1, 1] == 14


def test_read_only_array_is_copied_with_a_warning():
    a = np.zeros(3, np.float32)
    a.flags.writeable = False
    prev = tracegrad.is_warn_always_enabled()
    tracegrad.set_warn_always(True)     # torch gives it once per process; this test may not be first
    try:
        with pytest.warns(UserWarning, match="not writable"):
            t = tracegrad.from_numpy(a)
    finally:
        tracegrad.set_warn_always(prev)
    t.add_(1)
    assert a.sum() == 0


def _ndarray_operands(torch, log):
    # torch's operators take an ndarray (they defer to numpy, which promotes with numpy's rules
    # and wraps the result back into a tensor); the function and method forms refuse it
    for dtype, values in (("float", [1.0, 2.0, 4.0]), ("int", [1, 2, 4])):
        t = torch.tensor([1, 2, 3]) if dtype == "int" else torch.tensor([1.0, 2.0, 3.0])
        a = np.array(values)
        for name, f in (("t + a", lambda: t + a), ("t * a", lambda: t * a), ("t - a", lambda: t - a),
                        ("t / a", lambda: t / a), ("a / t", lambda: a / t), ("torch.add", lambda: torch.add(t, a)),
                        ("t.sub", lambda: t.sub(a)), ("torch.mul", lambda: torch.mul(t, a)),
                        ("torch.copysign", lambda: torch.copysign(t, a)),
                        ("torch.bucketize", lambda: torch.bucketize(t, a)),
                        ("requires grad + a", lambda: t.float().requires_grad_() + a)):
            try:
                r = f()
                log(f"{dtype} {name}", (r.dtype, r))
            except (TypeError, RuntimeError) as e:
                log(f"{dtype} {name} raises", type(e).__name__)


def test_ndarray_operands_as_torch():
    run_both(_ndarray_operands)


def test_overlapping_storages_match_numpy_may_share_memory():
    # ``overlapping`` answers from byte bounds kept per storage; it must say what numpy says for
    # views of one buffer (overlapping, adjacent, empty, strided) and separate arrays
    from tracegrad._tensor.numpy_bridge import overlapping
    base = np.arange(24, dtype=np.float32)
    arrays = [base[:6], base[4:10], base[6:], base[3:3], base[::2], base[1::2], base[18:],
              base.reshape(4, 6)[:, 1], np.ones(3, np.float32), np.zeros((2, 2), np.float64)]
    tensors = [tracegrad.from_numpy(a) for a in arrays]
    shared = [t for t in tensors if type(t._st).__name__ == "HostSharedStorage"]
    assert len(shared) == len(arrays)
    for t in shared:
        got = {id(o) for o in overlapping(t._st)}
        want = {id(o._st) for o in shared if o._st is not t._st
                and np.may_share_memory(o._st._np[0], t._st._np[0])}
        assert got == want
    # a freed tensor leaves the registry: the others no longer see it
    last = shared[-1]._st
    held = id(last)
    del tensors, shared, last
    assert all(id(o) != held for t in [tracegrad.from_numpy(base)] for o in overlapping(t._st))
