"""PyTorch's test/test_autograd.py, cases of TestAutograd and of its other CPU classes
(TestAutogradForwardMode, TestAutogradInferenceMode, TestMultithreadAutograd, ...) that earlier
rounds left failing, ported as programs run with torch 2.13 (the oracle) and with tracegrad,
whose logs must be equal.

What they cover: forward-grad mode (``torch._C._set_fwd_grad_enabled``,
``forward_ad._is_fwd_grad_enabled``, ``forward_ad._set_fwd_grad_enabled``): while it is off an
open dual level propagates nothing and ``unpack_dual`` sees no tangent, while ``make_dual``
still attaches one. Each test names its original in a comment. Tiny shapes."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _r(v):
    """A tensor or number as nested lists of floats rounded to 6 places (None/bools/ints kept)."""
    if hasattr(v, "tolist"):
        v = v.detach().tolist()
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, (list, tuple)):
        return [_r(x) for x in v]
    return v


def _both(program):
    """``program(T)`` with torch and with tracegrad; their logs must be equal."""
    want = program(torch)
    got = program(tracegrad)
    assert got == want
    return got


def _outcome(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return type(e).__name__
    return "ok"


# TestAutogradForwardMode.test_fwd_grad_enabled / test_set_fwd_grad_enabled
def test_fwd_grad_mode_pauses_tangents():
    def program(T):
        fwAD = T.autograd.forward_ad
        log = [fwAD._is_fwd_grad_enabled(), T._C._is_fwd_grad_enabled()]
        try:
            with fwAD.dual_level():
                x = fwAD.make_dual(T.tensor([1.0, 2.0]), T.tensor([1.0, 1.0]))
                T._C._set_fwd_grad_enabled(False)
                log.append(fwAD._is_fwd_grad_enabled())
                log.append(_r(fwAD.unpack_dual(x).tangent))      # hidden while off
                y = x * 3                                        # propagates nothing
                z = fwAD.make_dual(T.ones(2), T.full((2,), 5.0))  # still attached
                T._C._set_fwd_grad_enabled(True)
                log += [_r(fwAD.unpack_dual(x).tangent), _r(fwAD.unpack_dual(y).tangent),
                        _r(fwAD.unpack_dual(z).tangent), _r(fwAD.unpack_dual(x * z).tangent)]
                with fwAD._set_fwd_grad_enabled(False):
                    log += [fwAD._is_fwd_grad_enabled(), _r(fwAD.unpack_dual(x * 2).tangent)]
                log += [fwAD._is_fwd_grad_enabled(), _r(fwAD.unpack_dual(x * 2).tangent)]
            # a level entered while the mode is off opens paused
            T._C._set_fwd_grad_enabled(False)
            with fwAD.dual_level():
                w = fwAD.make_dual(T.ones(2), T.ones(2))
                log.append(_r(fwAD.unpack_dual(w.exp()).tangent))
                T._C._set_fwd_grad_enabled(True)
                log.append(_r(fwAD.unpack_dual(w * 4).tangent))
        finally:
            T._C._set_fwd_grad_enabled(True)
        log.append(_outcome(lambda: T._C._set_fwd_grad_enabled(1)))
        return log
    assert _both(program)[3] is None
