"""Ported from PyTorch's test/autograd/test_inference_mode.py (TestAutogradInferenceMode),
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


def test_version_counter_marks_inference_tensors(T):
    # test_inference_mode_tensor_creation / _inf_tensor_in_inf_mode_{functional,view,inplace}_op /
    # _inf_tensor_in_normal_mode_{functional,view}_op / test_normal_tensor_*_output_* /
    # test_mix_inference_and_normal_tensor_view_op, read through _version
    s = T.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    with T.inference_mode():
        made = {"factory": T.ones(1, 2, 3), "factory_rg": T.ones(1, 2, 3, requires_grad=True),
                "randn": T.randn(2), "tensor": T.tensor([1.0, 2.0])}
        c = T.ones(1, 2, 3)
        made.update(func=c * c, view=c.view(-1), transpose_=c.transpose_(0, 1), inplace=c.add_(2),
                    normal_view=a.view(-1))
        a.add_(1)                       # a normal tensor stays one (its counter moves)
        made["normal_inplace"] = a
    got = {k: (_is_inference_tensor(v), v.is_inference()) for k, v in made.items()}
    assert got == {"factory": (True, True), "factory_rg": (True, True), "randn": (True, True),
                   "tensor": (True, True), "func": (True, True), "view": (True, True),
                   "transpose_": (True, True), "inplace": (True, True),
                   "normal_view": (False, False), "normal_inplace": (False, False)}
    assert a._version == 1 and made["normal_view"]._version == 1
    # outside the mode: a view of an inference tensor is one, a functional result is not
    assert _is_inference_tensor(c.view(6)) and _is_inference_tensor(c[0])
    assert not _is_inference_tensor(c * 2) and not _is_inference_tensor(c.add(s))
    assert _is_inference_tensor(c.view_as(s)) and not _is_inference_tensor(s.view_as(c))
    assert not _is_inference_tensor(c.clone())


def test_mode_flag_and_nesting(T):
    # test_inference_mode_context_manager / test_inference_mode_decorator, with the flag given
    # by name, and the grad-mode switches nested inside and around the mode
    log = []
    with T.inference_mode(mode=False):
        log.append(T.is_inference_mode_enabled())
    with T.inference_mode(mode=True):
        log.append((T.is_inference_mode_enabled(), T.is_grad_enabled()))
        with T.inference_mode(False):
            log.append((T.is_inference_mode_enabled(), T.is_grad_enabled()))
            y = T.ones(2, requires_grad=True) * 2
            log.append((y.requires_grad, _is_inference_tensor(y)))
        with T.no_grad():
            log.append(T.is_grad_enabled())
        log.append(T.is_grad_enabled())
    with T.no_grad():
        with T.inference_mode():
            log.append(T.is_grad_enabled())
        log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))

    @T.inference_mode(mode=False)
    def off():
        return T.is_inference_mode_enabled()

    @T.inference_mode
    def on(x):
        return x * x, T.is_inference_mode_enabled()

    out, flag = on(T.ones(2, requires_grad=True))
    log += [off(), flag, _is_inference_tensor(out), out.requires_grad]
    assert log == [False, (True, False), (False, True), (True, False), False, False, False, (False, False),
                   False, True, True, False]


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


def test_inference_tensor_as_gradient_and_copy_source(T):
    # inference tensors may be read by autograd when nothing is saved: as the gradient given
    # to backward, as the source of copy_, as an input of add (test_mix_..._functional_op)
    with T.inference_mode():
        g = T.full((2, 3), 3.0)
        c = T.ones(2, 3, requires_grad=True)
    x = T.ones(2, 3, requires_grad=True)
    (x * 2).backward(g)
    y = T.zeros(2, 3).copy_(g)
    out = c.add(x)
    out.sum().backward()
    assert T.equal(x.grad, T.full((2, 3), 7.0)) and T.equal(c.grad, T.ones(2, 3))
    assert T.equal(y, g) and not _is_inference_tensor(y) and y._version == 1
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        c * x


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
