"""Adafactor and Muon against torch: params and state over 3 steps (3-D factored moments, float64,
tall matrices, adjust_lr_fn), torch's state_dict loaded into tracegrad and back, torch's errors;
``Module.share_memory`` / ``Tensor.share_memory_`` / ``is_shared``."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

SHAPES = {"Adafactor": [(2, 3, 4), (3, 2), (5,)], "Muon": [(3, 5), (6, 2)]}


def _values(name, dtype):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES[name]]


def _grad(step, shape, dtype):
    return np.random.default_rng(50 + step).standard_normal(shape).astype(dtype)


def _run(T, name, kw, values, steps, state=None, start=0):
    params = [T.nn.Parameter(T.tensor(v.copy())) for v in values]
    opt = getattr(T.optim, name)(params, **kw)
    if state is not None:
        opt.load_state_dict(state)
    for i in range(start, start + steps):
        for p in params:
            p.grad = T.tensor(_grad(i, tuple(p.shape), values[0].dtype))
        opt.step()
    return params, opt


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _same(p_t, p_g, opt_t, opt_g, rtol, atol):
    for a, b in zip(p_t, p_g):
        np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)
    for a, b in zip(p_t, p_g):
        st_t, st_g = opt_t.state[a], opt_g.state[b]
        assert list(st_t) == list(st_g)
        for k in st_t:
            assert str(st_t[k].dtype).split(".")[-1] == str(st_g[k].dtype).split(".")[-1], k
            np.testing.assert_allclose(_np(st_g[k]), _np(st_t[k]), rtol=rtol, atol=atol, err_msg=k)


CASES = [("Adafactor", {}, np.float32), ("Adafactor", dict(lr=0.05, weight_decay=0.1, maximize=True), np.float32),
         ("Adafactor", dict(beta2_decay=-1.0, d=1.5, eps=(None, 1e-2)), np.float64),
         ("Adafactor", dict(lr=tracegrad.tensor(0.02), eps=(1e-20, 1e-3), foreach=False), np.float32),
         ("Muon", {}, np.float32), ("Muon", dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw"), np.float32),
         ("Muon", dict(lr=0.01, weight_decay=0.0, momentum=0.5, ns_steps=3, adjust_lr_fn="original"), np.float64)]


def _torch_kw(kw):
    return {k: torch.tensor(v.item()) if isinstance(v, tracegrad.Tensor) else v for k, v in kw.items()}


@pytest.mark.parametrize("name,kw,dtype", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_three_steps_match_torch(name, kw, dtype):
    p_t, opt_t = _run(torch, name, _torch_kw(kw), _values(name, dtype), 3)
    p_g, opt_g = _run(tracegrad, name, kw, _values(name, dtype), 3)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-7, atol=1e-9)
    _same(p_t, p_g, opt_t, opt_g, **tol)


def _to_tg(x):
    if isinstance(x, torch.Tensor):
        return tracegrad.tensor(x.detach().numpy())
    if isinstance(x, dict):
        return {k: _to_tg(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_tg(v) for v in x)
    return x


def _to_torch(x):
    if isinstance(x, tracegrad.Tensor):
        return torch.tensor(np.asarray(x.detach().numpy()))
    if isinstance(x, dict):
        return {k: _to_torch(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v) for v in x)
    return x


@pytest.mark.parametrize("name,kw", [("Adafactor", dict(lr=0.05, weight_decay=0.1)), ("Muon", dict(lr=0.02))])
def test_state_dict_round_trip_with_torch(name, kw):
    """torch's state_dict after 2 steps loaded into tracegrad, 1 more step there, loaded back into
    torch, 1 more step: equal to 4 steps of torch alone."""
    values = _values(name, np.float32)
    p_t, opt_t = _run(torch, name, kw, values, 2)
    mid = [_np(p) for p in p_t]
    p_g, opt_g = _run(tracegrad, name, dict(kw, lr=1.0), mid, 1, state=_to_tg(opt_t.state_dict()), start=2)
    assert opt_g.param_groups[0]["lr"] == kw["lr"]
    assert isinstance(opt_g.state[p_g[0]]["step" if name == "Adafactor" else "momentum_buffer"], tracegrad.Tensor)
    p_back, opt_back = _run(torch, name, kw, [_np(p) for p in p_g], 1, state=_to_torch(opt_g.state_dict()), start=3)
    p_ref, opt_ref = _run(torch, name, kw, values, 4)
    _same(p_ref, p_back, opt_ref, opt_back, rtol=1e-5, atol=1e-6)


ERRORS = [("Adafactor", dict(lr=-1.0), ValueError, "Learning rate should be >= 0"),
          ("Adafactor", dict(beta2_decay=0.5), ValueError, "beta2_decay should be <= 0"),
          ("Adafactor", dict(eps=(None, -1.0)), ValueError, "epsilon2 should be >= 0"),
          ("Adafactor", dict(weight_decay=-1.0), ValueError, "weight_decay should be >= 0"),
          ("Muon", dict(momentum=-0.1), ValueError, "momentum should be >= 0"),
          ("Muon", dict(weight_decay=-0.1), ValueError, "weight decay should be >= 0"),
          ("Muon", dict(adjust_lr_fn="bad"), ValueError, "Adjust learning rate function bad is not supported")]


@pytest.mark.parametrize("name,kw,cls,msg", ERRORS)
def test_constructor_errors_match_torch(name, kw, cls, msg):
    for T in (torch, tracegrad):
        with pytest.raises(cls, match=msg):
            getattr(T.optim, name)([T.nn.Parameter(T.ones(2, 2))], **kw)


@pytest.mark.parametrize("case", ["muon_1d", "muon_ns_steps", "muon_coefficients", "complex"])
def test_step_errors_match_torch(case):
    for T in (torch, tracegrad):
        if case == "muon_1d":
            with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
                T.optim.Muon([T.nn.Parameter(T.ones(3))])
            continue
        if case == "complex":
            p = T.nn.Parameter(T.ones(2, 2, dtype=T.complex64))
            p.grad = T.ones(2, 2, dtype=T.complex64)
            for opt in (T.optim.Adafactor([p]), T.optim.Muon([p])):
                with pytest.raises(RuntimeError, match=f"{type(opt).__name__} does not support complex parameters"):
                    opt.step()
            continue
        p = T.nn.Parameter(T.ones(2, 3))
        p.grad = T.ones(2, 3)
        kw = dict(ns_steps=100) if case == "muon_ns_steps" else dict(ns_coefficients=(1.0, 2.0))
        with pytest.raises(ValueError, match="Number of steps|exactly 3 values"):
            T.optim.Muon([p], **kw).step()


def test_share_memory_marks_storage_like_torch():
    for T in (torch, tracegrad):
        m = T.nn.Linear(3, 2)
        m.register_buffer("stat", T.zeros(2))
        m.weight.grad = T.ones(2, 3)
        params = list(m.parameters())
        assert not m.weight.is_shared() and not m.stat.is_shared()
        assert m.share_memory() is m
        assert list(m.parameters())[0] is params[0]          # in place: identities kept
        assert all(t.is_shared() for t in (m.weight, m.bias, m.stat, m.weight.grad))
        x = T.arange(6.0)
        view = x[2:]
        assert x.share_memory_() is x
        assert view.is_shared() and x.untyped_storage().is_shared()   # one storage
        assert not x.clone().is_shared()
