"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Ported from PyTorch's test/autograd/test_inference_mode.py (TestAutogradInferenceMode),
round 20: the original's ``_is_inference_tensor`` test -- an inference tensor has no version
counter, so reading ``_version`` raises -- applied to every kind of tensor the original makes
(factories, functional / view / in-place results inside and outside the mode, mixed inputs),
plus the mode's flag handling (``inference_mode(mode=False)``, nesting with ``no_grad`` /
``inference_mode(False)``) and ``nn.Parameter`` of an inference tensor. The first round
(test_inference_mode_ported.py) checks ``is_inference()`` / requires_grad / the refusals;
each body here runs under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture.
"""
import pytest


def _is_inference_tensor(t):
    # TestAutogradInferenceMode._is_inference_tensor: the version counter is what tells
    try:
        t._version
    except RuntimeError as e:
        assert "Inference tensors do not track version counter" in str(e)
        return True
    return False


def test_parameter_of_inference_tensor(T):
    # an inference tensor cannot be given requires_grad=True outside the mode, whichever way
    # (requires_grad_, nn.Parameter); inside it the Parameter is an inference tensor too
    with T.inference_mode():
        c = T.ones(2, 3)
        p = T.nn.Parameter(T.ones(2))
    assert _is_inference_tensor(p) and p.requires_grad and isinstance(p, T.nn.Parameter)
    for make in (lambda: T.nn.Parameter(c), lambda: c.requires_grad_(), lambda: c.view(6).requires_grad_()):
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
            make()
    q = T.nn.Parameter(c, requires_grad=False)
    assert not q.requires_grad and T.equal(q, T.ones(2, 3))
    r = T.nn.Parameter(c.clone())   # the documented way out
    assert r.requires_grad and not _is_inference_tensor(r)
    (r * 2).sum().backward()
    assert T.equal(r.grad, T.full((2, 3), 2.0))


def test_grad_mode_switches_inside_inference_mode(T):
    # InferenceMode keeps autograd off whatever grad mode says: enable_grad / set_grad_enabled /
    # _C._set_grad_enabled inside it change what is_grad_enabled() reports (and restore it), but
    # results still have no history and are inference tensors; inference_mode(False) inside
    # turns recording back on. (enable_grad used to turn recording back on there.)
    log = []
    with T.inference_mode():
        with T.enable_grad():
            a = T.ones(2, requires_grad=True)
            z = a * 2
            log.append((T.is_grad_enabled(), z.requires_grad, z.grad_fn is None, _is_inference_tensor(z)))
            with T.no_grad():
                log.append(T.is_grad_enabled())
            with T.inference_mode(False):
                y = T.ones(2, requires_grad=True) * 3
                log.append((T.is_grad_enabled(), y.requires_grad, _is_inference_tensor(y)))
            log.append(T.is_grad_enabled())
        T.set_grad_enabled(True)
        w = T.ones(2, requires_grad=True) * 2
        log.append((T.is_grad_enabled(), w.requires_grad))
        T._C._set_grad_enabled(False)
        log.append(T.is_grad_enabled())
        with T.set_grad_enabled(True):
            log.append(T.is_grad_enabled())
        log.append(T.is_grad_enabled())
    log.append(T.is_grad_enabled())
    with T.no_grad():
        with T.inference_mode(), T.enable_grad():
            log.append(T.is_grad_enabled())
        log.append(T.is_grad_enabled())
    x = T.ones(2, requires_grad=True)
    log += [T.is_grad_enabled(), (x * 2).requires_grad]
    assert log == [(True, False, True, True), False, (True, True, False), True, (True, False), False, True,
                   False, True, True, False, True, True]
