"""optim.swa_utils against torch: AveragedModel (SWA, EMA via multi_avg_fn and avg_fn,
use_buffers), SWALR lr schedule, update_bn, state_dict keys, error classes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _model(mod, seed):
    m = mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.Linear(4, 2))
    rng = np.random.default_rng(seed)
    with mod.no_grad():
        for p in m.parameters():
            p.copy_(mod.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return m


def _x(mod, i):
    return mod.tensor(np.random.default_rng(100 + i).standard_normal((5, 3)).astype(np.float32))


def _run(mod, **kw):
    mk = {}
    if kw.pop("ema_multi", False):
        mk["multi_avg_fn"] = mod.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    if kw.pop("ema_fn", False):
        mk["avg_fn"] = mod.optim.swa_utils.get_ema_avg_fn(0.8)
    m = _model(mod, 0)
    avg = mod.optim.swa_utils.AveragedModel(m, use_buffers=kw.get("use_buffers", False), **mk)
    for i in range(4):
        with mod.no_grad():
            for j, p in enumerate(m.parameters()):
                p.mul_(0.9).add_(0.1 * (i + j))
        m(_x(mod, i))   # train mode: moves BatchNorm's running stats
        avg.update_parameters(m)
    return avg


@pytest.mark.parametrize("kw", [dict(), dict(ema_multi=True), dict(ema_fn=True), dict(use_buffers=True),
                                dict(ema_multi=True, use_buffers=True)])
def test_averaged_model(kw):
    a, t = _run(tracegrad, **dict(kw)), _run(torch, **dict(kw))
    assert list(a.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(a.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
        assert str(a.state_dict()[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1]
    a.eval(); t.eval()
    np.testing.assert_allclose(a(_x(tracegrad, 9)).detach().numpy(), t(_x(torch, 9)).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.2], anneal_epochs=3, anneal_strategy="linear"),
                                dict(swa_lr=0.01, anneal_epochs=0)])
def test_swalr(kw):
    def lrs(mod):
        a, b = mod.zeros(2, requires_grad=True), mod.zeros(2, requires_grad=True)
        opt = mod.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.5)
        sched = mod.optim.swa_utils.SWALR(opt, **kw)
        out = [sched.get_last_lr()]
        for _ in range(12):
            opt.step(); sched.step()
            out.append(sched.get_last_lr())
        return out
    np.testing.assert_allclose(lrs(tracegrad), lrs(torch), rtol=1e-12)


def test_swalr_errors():
    for mod in (tracegrad, torch):
        opt = mod.optim.SGD([mod.zeros(2, requires_grad=True)], lr=0.1)
        for bad in (dict(anneal_strategy="exp"), dict(anneal_epochs=-1), dict(anneal_epochs=1.5)):
            with pytest.raises(ValueError):
                mod.optim.swa_utils.SWALR(opt, 0.05, **bad)
        with pytest.raises(ValueError):
            mod.optim.swa_utils.SWALR(opt, [0.05, 0.1])
        with pytest.raises(ValueError):
            mod.optim.swa_utils.get_ema_multi_avg_fn(1.5)


def test_update_bn():
    def run(mod):
        m = _model(mod, 1)
        m.eval()
        loader = [(_x(mod, i), None) for i in range(3)]
        mod.optim.swa_utils.update_bn(loader, m)
        assert not m.training and m[1].momentum == 0.1
        return {k: v.numpy() for k, v in m.state_dict().items()}
    a, t = run(tracegrad), run(torch)
    assert list(a) == list(t)
    for k in t:
        np.testing.assert_allclose(a[k], t[k], rtol=1e-5, atol=1e-6, err_msg=k)
