"""Round 21 of PyTorch's own tests, ported: test/test_torch.py (TestTorch) on Tensor's Python
protocol and small methods: test_apply/test_map/test_map2 (apply_, map_, map2_ and their
requires-grad, dtype and result checks), test_new (new/new_tensor/new_full/new_empty_strided),
test_is_nonzero/test_is_same_size/test_is_set_to, test_element_size/test_itemsize, test_dim_order,
test_contains, test_format, test_deepcopy, test_index (operator.index), test_bool/len/iter/
reversed of 0-d tensors, Python-number dunders (divmod, round, shifts, pow); and
test/test_autograd.py (TestAutograd.test_inplace_on_view_leaf_errors /
test_inplace_view_of_leaf): in-place writes on a view that was given requires_grad_() (its base
needs no grad) or on a view of one, with the multi-output and no_grad-made view messages. Each
check runs with torch 2.13 (the oracle) and with tracegrad and must give the same value (dtype,
shape, values), or the same exception class (and the gist of the message where it says)."""
import copy
import operator

import numpy as np
import pytest
from _observe_helpers import make_check

import tracegrad

torch = pytest.importorskip("torch")


def _norm(v):
    if hasattr(v, "detach") and hasattr(v, "shape"):
        d = v.detach()
        vals = np.asarray((d.abs() if d.is_complex() else d).double().tolist(), dtype=np.float64)
        return "T", str(v.dtype).split(".")[-1], tuple(v.shape), np.round(vals, 5).tolist(), v.requires_grad
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if type(v).__name__ in ("Size", "dtype"):
        return str(v).split(".")[-1]
    if isinstance(v, str):
        return v.replace("tracegrad", "torch")
    if isinstance(v, np.ndarray):
        return "ndarray", v.dtype.name, v.tolist()
    return v


check = make_check(_norm)


def M(T):
    return T.arange(6.).reshape(2, 3)


def _done(t, _):
    return t


def _no_grad(T, f):
    with T.no_grad():
        return f()


def test_apply_map_map2():
    """apply_/map_/map2_: values (map_/map2_ broadcast their operands), integer targets truncate,
    bools are numbers; RuntimeError when self or an operand requires grad (in no_grad too);
    TypeError for an operand of another dtype or not a tensor, and for a result that is no real
    number; broadcasting errors."""
    check([
        lambda T: _done(M(T), M(T).apply_(lambda v: v * 2)),
        lambda T: (lambda t: _done(t, t.apply_(lambda v: v * 2)))(M(T)),
        lambda T: (lambda t: _done(t, t.map_(T.ones(3), lambda a, b: a - b)))(M(T)),
        lambda T: (lambda t: _done(t, t.map2_(T.ones(3), T.arange(2.)[:, None], lambda a, b, c: a + b * c)))(M(T)),
        lambda T: T.arange(3).apply_(lambda a: a + 0.7), lambda T: T.arange(3.).apply_(lambda a: a > 0),
        lambda T: M(T).requires_grad_().apply_(lambda v: v),
        lambda T: T.arange(3.).map_(T.ones(3, requires_grad=True), lambda a, b: a + b),
        lambda T: T.arange(3.).map2_(T.ones(3), T.ones(3, requires_grad=True), lambda a, b, c: a),
        lambda T: _no_grad(T, lambda: T.arange(3.).requires_grad_().apply_(lambda a: a)),
        lambda T: T.arange(3.).map_(T.ones(3, dtype=T.float64), lambda a, b: a + b),
        lambda T: T.arange(3).map2_(T.ones(3), T.ones(3, dtype=T.int8), lambda a, b, c: 1),
        lambda T: T.arange(3).map2_(T.ones(3, dtype=T.long), T.ones(3, dtype=T.int8), lambda a, b, c: 1),
        lambda T: T.arange(3.).map_([1, 2, 3], lambda a, b: a + b),
        lambda T: T.arange(3.).apply_(lambda a: "x"), lambda T: T.arange(3.).apply_(lambda a: None),
        lambda T: T.arange(3.).apply_(lambda a: 1j), lambda T: T.arange(3.).map_(T.ones(2), lambda a, b: a),
        lambda T: T.tensor(2.).map_(T.ones(3), lambda a, b: a + b),
    ])


def _leaf_view(T, write, make=lambda T: T.arange(6.)[1:].requires_grad_()):
    t = make(T)
    write(T, t)
    return t


def _nograd_view(T):
    with T.no_grad():
        v = T.arange(6.)[1:]
    return v.requires_grad_()


def _message(T, f):
    try:
        f(T)
    except RuntimeError as e:
        return str(e)
    return None


def test_inplace_on_a_view_that_requires_grad_itself():
    """A view given requires_grad_() (its base needs no grad) is a leaf: an in-place write on it
    or on a view of it with grad mode on raises 'a view of a leaf Variable that requires grad'
    (add_, relu_, copy_, setitem); a multi-output view (unbind/split) or one made under no_grad
    reports that instead; writes under no_grad, through .data or .detach() are allowed, and
    backward through such a view reaches its grad. A view of such a view made under no_grad
    does not require grad (torch asks the base, which needs none) and may be written."""
    views = [lambda T: T.arange(6.).reshape(2, 3).requires_grad_(), lambda T: T.arange(6.)[1:].requires_grad_()[1:],
             lambda T: T.arange(6.).unbind(0)[0].requires_grad_(), lambda T: T.arange(6.).split(2)[0].requires_grad_(),
             _nograd_view]
    writes = [lambda T, t: t.add_(1), lambda T, t: t.relu_(), lambda T, t: t.copy_(T.ones(t.shape)),
              lambda T, t: t.__setitem__(0, 1.)]
    check([(lambda mk, w: lambda T: _leaf_view(T, w, mk))(mk, w) for mk in views for w in writes] + [
        lambda T: _leaf_view(T, lambda T, t: t.data.add_(1)),
        lambda T: _leaf_view(T, lambda T, t: t.detach().mul_(2)),
        lambda T: _no_grad(T, lambda: _leaf_view(T, lambda T, t: t.add_(1))),
        lambda T: (lambda v: ((v * T.arange(5.)).sum().backward(), v.grad)[1])(T.arange(6.)[1:].requires_grad_()),
        lambda T: (lambda w: (w.requires_grad, w.is_leaf, w[1:].requires_grad, w.add_(1)))(
            _no_grad(T, lambda: T.arange(6.)[1:].requires_grad_()[1:])),
    ])
    for mk, want in [(views[0], "a view of a leaf Variable that requires grad"), (views[2], "returns multiple views"),
                     (_nograd_view, "A view was created in no_grad mode")]:
        for T in (torch, tracegrad):
            assert want in _message(T, lambda T: _leaf_view(T, writes[0], mk)), T.__name__


def test_python_protocol_and_small_methods():
    """operator.index/bool/int/float/complex/len/iter/reversed/contains/format/deepcopy of
    tensors (0-d and 1-element rules, their exception classes), element_size/nbytes/itemsize,
    dim_order, is_contiguous(channels_last), is_nonzero, is_same_size, is_set_to, storage
    offsets, __array__, Python-number dunders (divmod, round, //, %, **, shifts, bitwise ops)
    and the new_* constructors (dtype kept or given, requires_grad, new() overloads)."""
    check([
        lambda T: operator.index(T.tensor(3)), lambda T: operator.index(T.tensor(3.)), lambda T: operator.index(T.tensor([3])),
        lambda T: bool(T.tensor([1, 2])), lambda T: bool(T.tensor([])), lambda T: bool(T.tensor([0.5])),
        lambda T: len(T.tensor(3.)), lambda T: list(T.tensor(3.)), lambda T: (2 in M(T), 7 in M(T), T.tensor([1., 2]) in M(T)),
        lambda T: "a" in M(T), lambda T: reversed(M(T)), lambda T: reversed(T.tensor(2.)),
        lambda T: (format(T.tensor(2.5), ".2f"), f"{T.tensor(3)}"), lambda T: f"{M(T):.1f}",
        lambda T: (copy.deepcopy(M(T).requires_grad_()), copy.deepcopy(M(T).requires_grad_() * 2)),
        lambda T: (M(T).element_size(), M(T).nbytes, M(T).itemsize, T.ones(2, dtype=T.bool).nbytes,
                   T.ones(2, dtype=T.complex64).itemsize),
        lambda T: (M(T).dim_order(), M(T).t().dim_order(), T.ones(2, 3, 4, 5).permute(0, 2, 3, 1).dim_order()),
        lambda T: T.ones(2, 3, 4, 5).contiguous(memory_format=T.channels_last).is_contiguous(memory_format=T.channels_last),
        lambda T: T.ones(2, 3).is_contiguous(memory_format=T.channels_last),
        lambda T: (T.tensor([0.]).is_nonzero(), T.tensor([1]).is_nonzero()), lambda T: T.tensor([1, 2]).is_nonzero(),
        lambda T: T.tensor([]).is_nonzero(), lambda T: (M(T).is_same_size(T.ones(2, 3)), M(T).is_same_size(T.ones(3, 2))),
        lambda T: (lambda t: (t.is_set_to(t), t.is_set_to(t.view(3, 2)), t.is_set_to(t[:])))(M(T)),
        lambda T: (lambda t: (t[1].data_ptr() - t.data_ptr(), t[1].storage_offset(), t[1:].untyped_storage().nbytes()))(M(T)),
        lambda T: (M(T).__array__().dtype.name, M(T).__array__(dtype=float).dtype.name),
        lambda T: M(T).requires_grad_().__array__(), lambda T: M(T).numpy(force=True).shape,
        lambda T: (abs(T.tensor(-2)), ~T.tensor([True, False]), divmod(T.tensor(7), 2), round(T.tensor(2.567), 2)),
        lambda T: -T.tensor(True), lambda T: ~T.tensor(2.), lambda T: round(T.tensor(2.5)),
        lambda T: int(T.tensor(2.9)), lambda T: int(T.tensor([2.9])), lambda T: float(T.tensor([1, 2])), lambda T: complex(T.tensor(2.)),
        lambda T: (T.tensor(5) // 2, 7 // T.tensor(2.), 7 % T.tensor(-3), T.tensor(-7.) % 3, 2 ** T.tensor([1, 2])),
        lambda T: T.tensor([1, 2]) ** -1, lambda T: T.tensor([2]) ** T.tensor([-1]),
        lambda T: (T.tensor([1, 2]) << 1, 1 << T.tensor([1, 2]), T.tensor([8, -8]) >> 1), lambda T: T.tensor([1., 2]) << 1,
        lambda T: (T.tensor([1, 2]) & True, T.tensor([True]) ^ 1), lambda T: T.tensor([1.]) | 1,
        lambda T: (M(T).new_tensor([1, 2]), M(T).new_tensor([1, 2], dtype=T.int8), M(T).new_full((2,), 3), M(T).new_empty((0,))),
        lambda T: (M(T).new_ones(2, 2), M(T).new_zeros([1, 2], dtype=T.bool), M(T).new_ones(()).shape),
        lambda T: (T.ones(2, dtype=T.int8).new_full((1,), 2.5), T.ones(2, dtype=T.int8).new_tensor(2.5), M(T).new_tensor(M(T))),
        lambda T: (M(T).requires_grad_().new_tensor([1.]).requires_grad, M(T).new_ones(2, requires_grad=True).requires_grad),
        lambda T: M(T).new_empty_strided((2, 2), (1, 2)).stride(),
        lambda T: (M(T).new(2, 3).shape, M(T).new([1, 2]), M(T).new(), M(T).new(T.Size([2])).shape, M(T).new(M(T))),
    ])
