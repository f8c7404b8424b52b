"""floor_divide (``//``) has no derivative in torch: a result of inputs that require grad gets a
``NotImplemented`` grad_fn, with an edge to each input that requires grad, whose backward raises
RuntimeError. ``div(rounding_mode="floor")`` is differentiable (zeros), and stays so."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _program(T):
    x = T.tensor([1.5, -2.5, 3.0], requires_grad=True)
    y = T.tensor([2.0, 2.0, -1.5], requires_grad=True)
    cases = {"op_number": lambda: x // 2, "both": lambda: T.floor_divide(x, y),
             "number_first": lambda: 5 // y, "method_detached_other": lambda: x.floor_divide(y.detach()),
             "no_grad_input": lambda: x.detach() // 2}
    seen = {}
    for name, f in cases.items():
        z = f()
        seen[name] = (z.tolist(), z.requires_grad,
                      None if z.grad_fn is None else type(z.grad_fn).__name__,
                      None if z.grad_fn is None else [type(n).__name__ for n, _ in z.grad_fn.next_functions])
        if z.requires_grad:
            try:
                z.sum().backward()
                seen[name] += ("ran",)
            except RuntimeError as e:
                seen[name] += (type(e).__name__, str(e))
    with T.no_grad():
        seen["under_no_grad"] = (x // 2).requires_grad
    d = T.div(x, 2, rounding_mode="floor")
    d.sum().backward()
    seen["div_floor_grad"] = x.grad.tolist()
    return seen


def test_floor_divide_has_no_derivative_as_torch():
    assert _program(tracegrad) == _program(torch)
