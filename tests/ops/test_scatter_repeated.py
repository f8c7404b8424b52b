"""Overwriting and reducing scatters against torch, values and gradients, with repeated
indices: torch gives every written element the gradient of its position, also the ones a
later write overwrote (NOTE [overwriting scatter], ``_ops/indexing.py``)."""
import numpy as np
import pytest

import tracegrad
from parity import A, B, C, F, check_parity, params

torch = pytest.importorskip("torch")

_REP = A([[1, 1, 0, 1], [2, 0, 2, 2]])          # repeats in every row
_TIES = A([[1.0, 5.0, 0.0], [5.0, 2.0, 0.0], [3.0, 5.0, 0.0]])
_TIE_SRC = A([[5.0, 5.0, 7.0], [5.0, 1.0, 0.0]])
_TIE_IDX = A([[0, 0, 1], [0, 0, 1]])

SCATTER = [
    C("scatter_repeat", lambda t, x, i, s: x.scatter(1, i, s), [F(2, 4), _REP, F(2, 4)]),
    C("scatter_repeat_dim0", lambda t, x, i, s: t.scatter(x, 0, i, s), [F(3, 4), A([[0, 0, 2, 1], [0, 1, 2, 1]]), F(2, 4)]),
    C("scatter_repeat_value", lambda t, x, i: x.scatter(1, i, -2.0), [F(2, 4), _REP]),
    C("scatter_repeat_inplace", lambda t, x, i, s: x.clone().scatter_(1, i, s), [F(2, 4), _REP, F(2, 4)]),
    C("scatter_add_repeat", lambda t, x, i, s: x.scatter_add(1, i, s), [F(2, 4), _REP, F(2, 4)]),
    C("index_put_repeat", lambda t, x, i, v: x.index_put((i,), v), [F(4, 3), A([0, 2, 0, 0]), F(4, 3)]),
    C("index_put_repeat_bcast", lambda t, x, i, v: x.index_put((i,), v), [F(4, 3), A([1, 1]), F(3)]),
    C("index_put_repeat_2d", lambda t, x, i, j, v: x.index_put((i, j), v), [F(4, 3), A([1, 1, 0]), A([2, 2, 0]), F(3)]),
    C("index_put_repeat_acc", lambda t, x, i, v: x.index_put((i,), v, accumulate=True), [F(4, 3), A([1, 1]), F(2, 3)]),
    C("setitem_repeat", lambda t, x, i, v: _setitem(x, i, v), [F(2, 5), A([3, 0, 3]), F(2, 1)]),
    C("index_copy", lambda t, x, i, s: t.index_copy(x, 1, i, s), [F(3, 4), A([3, 0]), F(3, 2)]),
    C("index_copy_repeat", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A([2, 0, 2]), F(3, 4)]),
    C("index_copy_inplace", lambda t, x, i, s: x.clone().index_copy_(0, i, s), [F(3, 4), A([1, 1]), F(2, 4)]),
    C("index_copy_scalar_idx", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A(1), F(1, 4)]),
    C("index_copy_2d_idx", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A([[0]]), F(1, 4)], raises=True),
    C("index_copy_float_idx", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A([0.0], grad=False), F(1, 4)], raises=True),
    C("index_copy_bad_shape", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A([0]), F(2, 4)], raises=True),
    C("index_copy_out_of_range", lambda t, x, i, s: x.index_copy(0, i, s), [F(3, 4), A([3]), F(1, 4)], raises=True),
    C("index_copy_dtype", lambda t, x, i, s: x.index_copy(0, i, s.double()), [F(3, 4), A([0]), F(1, 4)], raises=True),
    C("index_fill", lambda t, x, i: t.index_fill(x, 1, i, 2.5), [F(3, 4), A([3, 0, 3])]),
    C("index_fill_tensor_repeat", lambda t, x, i, v: x.index_fill(0, i, v), [F(3, 4), A([2, 0, 2]), F()]),
    C("index_fill_inplace", lambda t, x, i: x.clone().index_fill_(1, i, -1.0), [F(3, 4), A([1, 1])]),
    C("index_fill_vector_value", lambda t, x, i, v: x.index_fill(0, i, v), [F(3, 4), A([0]), F(2)], raises=True),
    C("index_fill_2d_idx", lambda t, x, i: x.index_fill(0, i, 1.0), [F(3, 4), A([[0]])], raises=True),
    C("masked_scatter", lambda t, x, m, s: x.masked_scatter(m, s), [F(3, 4), B(3, 4), F(14)]),
    C("masked_scatter_bcast", lambda t, x, m, s: t.masked_scatter(x, m, s), [F(2, 3), A([True, False, True]), F(3, 3)]),
    C("masked_scatter_grow", lambda t, x, m, s: t.masked_scatter(x, m, s), [F(3), A([[True, False, True], [False, True, True]]), F(6)]),
    C("masked_scatter_inplace", lambda t, x, m, s: x.clone().masked_scatter_(m, s), [F(3, 4), B(3, 4), F(3, 4)]),
    C("masked_scatter_int_mask", lambda t, x, m, s: x.masked_scatter(m, s), [F(3), A([1, 0, 1]), F(3)], raises=True),
    C("masked_scatter_small_source", lambda t, x, m, s: x.masked_scatter(m, s), [F(3), A([True, True, True]), F(2)], raises=True),
    C("masked_scatter_dtype", lambda t, x, m, s: x.masked_scatter(m, s.double()), [F(3), A([True, False, True]), F(3)], raises=True),
]
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        SCATTER.append(C(f"scatter_reduce_{_red}_{_inc}",
                         lambda t, x, i, s, r=_red, inc=_inc: x.scatter_reduce(1, i, s, r, include_self=inc),
                         [F(2, 4), _REP, F(2, 4)]))
        SCATTER.append(C(f"scatter_reduce_{_red}_{_inc}_ties",
                         lambda t, x, i, s, r=_red, inc=_inc: t.scatter_reduce(x, 0, i, s, r, include_self=inc),
                         [_TIES, _TIE_IDX, _TIE_SRC]))
SCATTER += [
    C("scatter_reduce_inplace", lambda t, x, i, s: x.clone().scatter_reduce_(1, i, s, "amax"), [F(2, 4), _REP, F(2, 4)]),
    C("scatter_reduce_int_mean", lambda t, x, i, s: x.scatter_reduce(0, i, s, "mean"),
      [A([[0, 1, 2], [3, 4, 5]]), A([[0, 0, 1]]), A([[7, 8, 9]])]),
    # 0-d self, index and src: one element along dim 0, as torch (the OpInfo samples' scalar case)
    C("scatter_0d", lambda t, x, i, s: x.scatter(0, i, s), [F(), A(0), F()]),
    C("scatter_0d_value_add", lambda t, x, i: t.scatter(x, 0, i, 2.5, reduce="add"), [F(), A(0)],
      grad=False),
    C("scatter_add_0d", lambda t, x, i, s: x.scatter_add(0, i, s), [F(), A(0), F()]),
    C("scatter_reduce_0d", lambda t, x, i, s: x.scatter_reduce(0, i, s, "amax"), [F(), A(0), F()]),
    # an index with no elements: torch skips its dtype check (and gather its shape checks)
    C("gather_empty_uint8_index", lambda t, x, i: t.gather(x, 0, i), [F(5), A(np.zeros((2, 0), np.uint8))],
      no_grad_fn=True),
    C("scatter_empty_uint8_index", lambda t, x, i, s: x.scatter_add(0, i, s), [F(5), A(np.zeros(0, np.uint8)), F(0)]),
    C("scatter_reduce_bad_name", lambda t, x, i, s: x.scatter_reduce(0, i, s, "median"), [F(2, 3), A([[0, 0, 1]]), F(1, 3)], raises=True),
    C("scatter_reduce_dtype", lambda t, x, i, s: x.scatter_reduce(0, i, s.double(), "sum"), [F(2, 3), A([[0, 0, 1]]), F(1, 3)], raises=True),
]


def _setitem(x, i, v):
    y = x.clone()
    y[:, i] = v
    return y


@params(SCATTER)
def test_parity(case):
    check_parity(case, torch)


def test_prod_gradient_with_zeros_matches_torch():
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 4.0]])
    src = np.array([[0.0, 5.0, 2.0], [6.0, 0.0, 0.0], [7.0, 3.0, 0.5]])
    idx = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 1]])
    grads = []
    for mod in (torch, tracegrad):
        a = mod.tensor(x, requires_grad=True)
        b = mod.tensor(src, requires_grad=True)
        y = a.scatter_reduce(0, mod.tensor(idx), b, "prod")
        (y * mod.arange(1.0, 7.0, dtype=mod.float64).reshape(2, 3)).sum().backward()
        grads.append((y.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    for w, g in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("name", ["scatter", "index_put", "index_copy", "scatter_reduce_prod", "scatter_reduce_amax"])
def test_second_order_and_gradcheck(name):
    """The declared tangents are linear: gradcheck and gradgradcheck pass (float64; indices
    unique, where finite differences and torch's rule agree)."""
    idx = tracegrad.tensor([[1, 1, 0], [2, 0, 2]])
    x = tracegrad.randn(3, 3, dtype=tracegrad.float64, requires_grad=True)
    s = tracegrad.randn(2, 3, dtype=tracegrad.float64, requires_grad=True)
    fns = {
        "scatter": lambda x, s: x.scatter(0, idx, s) ** 2,
        "index_put": lambda x, s: x.index_put((tracegrad.tensor([1, 0]),), s) ** 2,
        "index_copy": lambda x, s: x.index_copy(0, tracegrad.tensor([2, 0]), s) ** 2,
        "scatter_reduce_prod": lambda x, s: x.scatter_reduce(0, idx, s, "prod"),
        "scatter_reduce_amax": lambda x, s: x.scatter_reduce(0, idx, s, "amax", include_self=False) ** 2,
    }
    assert tracegrad.autograd.gradcheck(fns[name], (x, s))
    assert tracegrad.autograd.gradgradcheck(fns[name], (x, s))


def test_compiled_step_equals_eager():
    idx = tracegrad.tensor([[1, 1, 0], [2, 0, 2]])

    def step(x, s):
        y = x.scatter(0, idx, s).scatter_reduce(1, idx.t()[:, :2].contiguous() * 0, s.t()[:, :2].contiguous(), "amax")
        y.sum().backward()
        return y.detach()
    out = []
    for f in (step, tracegrad.compile(step), tracegrad.compile(step)):
        x = tracegrad.arange(9.0).reshape(3, 3).requires_grad_()
        s = tracegrad.arange(6.0).reshape(2, 3).requires_grad_()
        out.append((f(x, s).numpy(), x.grad.numpy(), s.grad.numpy()))
    for got in out[1:]:
        for a, b in zip(got, out[0]):
            np.testing.assert_array_equal(a, b)
