"""Bad-input parity, round 18 (index_select, resize_, and the same mistakes in a compiled step):
fixed here: ``index_select`` of an index outside the dim raised IndexError everywhere, where
torch's CPU kernel has three paths for a tensor of two or more dims: along dim 1 (its fast path)
and for an empty tensor, RuntimeError "INDICES element is out of DATA bounds", and for a dim of
size 0, RuntimeError "self indexing axis dim should be positive" (IndexError stays for dim 0 and
the dims past 1 of a non-empty tensor, and for 1-D tensors); ``resize_`` to the unchanged shape
of a tensor that requires grad returned it (torch refuses any resize of such a tensor,
RuntimeError); ``index_add`` of an index outside the dim raised RuntimeError for every tensor of 2+
dims, where torch's kernel takes its scatter_add path (RuntimeError) only along the first or last
dim with ``alpha=1`` and an int64 index, and raises IndexError otherwise (a middle dim, another
alpha, an int32 index), and checks nothing when self is empty; and ``index_fill``/``index_copy`` of
an empty tensor: torch looks at no index when the indexed dim has elements (tracegrad raised
IndexError for values outside it) and refuses any index into a dim of size 0 (RuntimeError, from
its storage check; tracegrad's IndexError). Inside ``tracegrad.compile`` a training step that makes one of this round's
mistakes raises the eager class and leaves the parameters and the optimizer state as they were.
Each call runs under torch (the oracle) and tracegrad: the same exception class (or none), no
text of the layers below tracegrad; ``_ok`` calls are ones torch accepts."""
import pytest

import tracegrad

from _bad_input_helpers import FOREIGN, assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")


def _x(T):
    return T.tensor([[1., 2., 3.], [4., 5., 6.]])


def _sel(T, shape, dim, idx):
    return T.ones(*shape).index_select(dim, T.tensor(idx, dtype=T.int64))


def _add(T, shape, dim, idx, idx_dtype=None, alpha=1, inplace=False):
    src = list(shape)
    src[dim] = len(idx)
    args = (dim, T.tensor(idx, dtype=idx_dtype or T.int64), T.zeros(*src))
    x = T.ones(*shape)
    return x.index_add_(*args, alpha=alpha) if inplace else x.index_add(*args, alpha=alpha)


def _resize(T, *size, under_no_grad=False, nonleaf=False):
    x = T.ones(2, requires_grad=True)
    with T.set_grad_enabled(not under_no_grad):
        x = x * 2 if nonleaf else x
        return x.resize_(*size)


CASES = {
    # index_select: torch's CPU paths for a tensor of 2+ dims
    "index_select(2-D, dim 1, 3)": lambda T: _x(T).index_select(1, T.tensor([3])),
    "index_select(2-D, dim -1, -1)": lambda T: _x(T).index_select(-1, T.tensor([-1])),
    "index_select(2-D, dim 1, 0-d 5)": lambda T: _x(T).index_select(1, T.tensor(5)),
    "index_select(2-D, dim 1, int32 [0, 5])": lambda T: _x(T).index_select(1, T.tensor([0, 5], dtype=T.int32)),
    "index_select(3-D, dim 1)": lambda T: _sel(T, (2, 3, 2), 1, [3]),
    "index_select(3-D, dim 2)": lambda T: _sel(T, (2, 3, 2), 2, [2]),
    "index_select(2-D, dim 0)": lambda T: _x(T).index_select(0, T.tensor([2])),
    "index_select(1-D)": lambda T: _sel(T, (3,), 0, [3]),
    "index_select(empty, dim of 0)": lambda T: _sel(T, (0, 3), 0, [0]),
    "index_select(empty, dim 1 of 0)": lambda T: _sel(T, (2, 0), 1, [0]),
    "index_select(empty, other dim)": lambda T: _sel(T, (2, 0, 2), 2, [5]),
    "index_select(empty, dim 0, 5)": lambda T: _sel(T, (2, 0), 0, [5]),
    "index_select(empty, other dim)_ok": lambda T: _sel(T, (2, 0, 2), 2, [1]),
    "index_select(dim of 0, empty index)_ok": lambda T: T.ones(2, 0).index_select(1, T.tensor([], dtype=T.int64)),
    "index_select(2-D, dim 1, [2, 0])_ok": lambda T: _x(T).index_select(1, T.tensor([2, 0])),
    "index_select(out=, dim 1, 5)": lambda T: T.index_select(_x(T), 1, T.tensor([5]), out=T.empty(2, 1)),
    # index_add: torch's scatter_add path (RuntimeError) or its slice loop (IndexError)
    "index_add(2-D, dim 0, 5)": lambda T: _add(T, (2, 3), 0, [5]),
    "index_add(2-D, dim 1, -1)": lambda T: _add(T, (2, 3), 1, [-1]),
    "index_add(3-D, dim 1, 5)": lambda T: _add(T, (2, 3, 2), 1, [5]),
    "index_add(3-D, dim -1, 5)": lambda T: _add(T, (2, 3, 2), -1, [5]),
    "index_add(2-D, dim 0, 5, alpha=2)": lambda T: _add(T, (2, 3), 0, [5], alpha=2),
    "index_add(2-D, dim 0, 5, alpha=True)": lambda T: _add(T, (2, 3), 0, [5], alpha=True),
    "index_add(2-D, dim 0, int32 5)": lambda T: _add(T, (2, 3), 0, [5], T.int32),
    "index_add_(3-D, dim 1, -1)": lambda T: _add(T, (2, 3, 2), 1, [-1], inplace=True),
    "index_add(1-D, 3)": lambda T: _add(T, (3,), 0, [3]),
    "index_add(empty, 5)_ok": lambda T: _add(T, (2, 0), 0, [5]),
    "index_add(empty 3-D, dim 2, 5)_ok": lambda T: _add(T, (2, 0, 2), 2, [5]),
    # index_fill / index_copy of an empty tensor
    "index_fill(empty, dim of 0)": lambda T: T.ones(0, 3).index_fill(0, T.tensor([0]), 1.),
    "index_fill_(1-D empty)": lambda T: T.ones(0).index_fill_(0, T.tensor([5]), 1.),
    "index_copy(empty, dim 1 of 0)": lambda T: T.ones(2, 0).index_copy(1, T.tensor([0]), T.ones(2, 1)),
    "index_fill(empty, other dim, 5)_ok": lambda T: T.ones(0, 3).index_fill(1, T.tensor([5]), 1.),
    "index_copy(empty, other dim, -5)_ok": lambda T: T.ones(2, 0, 2).index_copy(0, T.tensor([-5]), T.ones(1, 0, 2)),
    "index_fill(empty, dim of 0, empty index)_ok": lambda T: T.ones(0, 3).index_fill(0, T.tensor([], dtype=T.int64), 1.),
    # resize_ of a tensor that requires grad: refused whatever the size
    "resize_(same shape) requires grad": lambda T: _resize(T, 2),
    "resize_(same shape) under no_grad": lambda T: _resize(T, 2, under_no_grad=True),
    "resize_as_(same shape) requires grad": lambda T: T.ones(2, requires_grad=True).resize_as_(T.ones(2)),
    "resize_(same shape) non-leaf": lambda T: _resize(T, 2, nonleaf=True),
    "resize_(3) requires grad": lambda T: _resize(T, 3),
    "resize_(same shape) non-leaf made under no_grad_ok": lambda T: _resize(T, 2, nonleaf=True, under_no_grad=True),
    "resize_(same shape) detached_ok": lambda T: T.ones(2, requires_grad=True).detach().resize_(2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)
    if name.endswith("_ok"):
        assert outcome(CASES[name], tracegrad)[0] is None


GIST = {
    "index_select(2-D, dim 1, 3)": "INDICES element is out of DATA bounds, id=3 axis_dim=3",
    "index_select(2-D, dim -1, -1)": "INDICES element is out of DATA bounds, id=-1 axis_dim=3",
    "index_select(3-D, dim 2)": "index out of range in self",
    "index_select(empty, dim of 0)": "self indexing axis dim should be positive",
    "index_select(empty, other dim)": "INDICES element is out of DATA bounds, id=5 axis_dim=2",
    "index_add(2-D, dim 1, -1)": "index -1 is out of bounds for dimension 1 with size 3",
    "index_add(3-D, dim 1, 5)": "index out of range in self",
    "index_fill(empty, dim of 0)": "out of bounds for storage of size 0",
    "resize_(same shape) requires grad": "cannot resize variables that require grad",
    "resize_(same shape) under no_grad": "cannot resize variables that require grad",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_index_select_values_where_torch_accepts():
    for T in (torch, tracegrad):
        assert _x(T).index_select(1, T.tensor([2, 0])).tolist() == [[3., 1.], [6., 4.]]
        assert _x(T).index_select(-1, T.tensor(1)).tolist() == [[2.], [5.]]
        assert tuple(_sel(T, (2, 0, 2), 2, [1, 0, 1]).shape) == (2, 0, 3)
        assert _add(T, (2, 3), 1, [2, 2], alpha=2).tolist() == [[1., 1., 1.], [1., 1., 1.]]
        assert (T.zeros(2, 3).index_add(-1, T.tensor([2, 2]), T.ones(2, 2), alpha=2).tolist()
                == [[0., 0., 4.], [0., 0., 4.]])
        assert tuple(T.ones(0, 3).index_copy(1, T.tensor([5, 0]), T.ones(0, 2)).shape) == (0, 3)
        x = T.ones(2, requires_grad=True)
        with T.no_grad():
            y = x * 2
        assert y.resize_(2) is y and y.resize_(1).tolist() == [2.]


# the same mistakes inside a compiled training step: eager's class, and nothing is updated
def _resize_weight(T, m, h, i):
    m.weight.resize_(3, 2)    # its own shape: still refused, the weight requires grad
    return h.sum()


STEPS = {
    "index_select dim 1 out of range": (RuntimeError, lambda T, m, h, i: h.index_select(1, i + 3).sum()),
    "index_select dim 0 out of range": (IndexError, lambda T, m, h, i: h.index_select(0, i + 3).sum()),
    "resize_ of a weight, same shape": (RuntimeError, _resize_weight),
    "ldexp_ by a complex tensor": (RuntimeError, lambda T, m, h, i: h.sum() + T.ones(2).ldexp_(T.ones(2) * 1j).sum()),
}


def _step_outcome(T, body, compiled):
    T.manual_seed(0)
    m = T.nn.Linear(2, 3)
    opt = T.optim.Adam(m.parameters(), lr=0.1)
    x, i = T.ones(2, 2), T.tensor([0, 1])

    def step(x, i):
        opt.zero_grad()
        loss = body(T, m, m(x), i)
        loss.backward()
        opt.step()
        return loss
    before = [p.detach().clone() for p in m.parameters()]
    run = T.compile(step) if compiled else step
    try:
        run(x, i)
        err = None, ""
    except Exception as e:   # noqa: BLE001 -- the class is what is compared
        err = type(e), str(e)
    unchanged = all(bool((a == p.detach()).all()) for a, p in zip(before, m.parameters()))
    return err, unchanged, len(opt.state)


@pytest.mark.parametrize("name", list(STEPS))
def test_compiled_step_raises_eager_class_and_updates_nothing(name):
    cls, body = STEPS[name]
    for T, compiled in ((torch, False), (tracegrad, False), (tracegrad, True)):
        (got, msg), unchanged, n_state = _step_outcome(T, body, compiled)
        where = f"{T.__name__} compiled={compiled}"
        assert got is cls, f"{where}: {got} {msg[:200]}"
        assert unchanged and n_state == 0, where
        assert T is torch or not FOREIGN.search(msg), f"{where}: {msg[:200]}"
