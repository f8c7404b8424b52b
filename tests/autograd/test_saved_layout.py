"""NOTE [saved layout]: a node describes what it keeps of each forward input with a typed
``SavedLayout`` (kinds SAVED/SHAPE/CONST), built by dispatch and read by the node and the op."""
import tracegrad
from tracegrad._ops.registry import CONST, SAVED, SHAPE, SavedLayout


def test_mul_layout_follows_torchs_saved_set():
    x = tracegrad.randn(3, requires_grad=True)
    y = tracegrad.randn(3, requires_grad=True)
    both = (x * y).grad_fn.layout
    assert isinstance(both, SavedLayout)
    assert both.kinds == (SAVED, SAVED) and both.needs == (True, True) and both.edge_pos == (0, 1)
    assert both.avals == () and both.grad_slots() == (0, 1)
    scalar = (x * 2.0).grad_fn.layout       # self is saved only when other needs a gradient
    assert scalar.kinds == (SHAPE, CONST) and scalar.avals == (((3,), x._value.dtype),)
    assert scalar.needs == (True,) and scalar.grad_slots() == (0, -1)
    assert scalar.const_index(1) == 0 and scalar.aval_index(0) == 0
    half = (x * y.detach()).grad_fn.layout  # other saved (self's gradient needs it), self not
    assert half.kinds == (SHAPE, SAVED) and half.needs == (True, False) and half.grad_slots() == (0, -1)


def test_layout_drives_backward_and_saved_attributes():
    x = tracegrad.randn(4, requires_grad=True)
    r = x.exp()
    assert r.grad_fn.layout.save_order(r.grad_fn.op) == [-1]       # exp saves its result
    assert tracegrad.equal(r.grad_fn._saved_result, r)
    (r * 3.0).sum().backward()
    assert tracegrad.allclose(x.grad, 3 * x.exp())
