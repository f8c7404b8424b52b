"""Parity with torch for ``optim.LBFGS`` (closure, curvature history, strong-Wolfe line search,
state) and for schedulers driving it. The problems run in float64 so the float rounding of
two implementations of one algorithm cannot steer them apart; float32 runs compare a few
short steps."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _problem(mod, dtype, seed=0):
    rs = np.random.RandomState(seed)
    X = mod.tensor(rs.randn(20, 3).astype(dtype))
    Y = mod.tensor(rs.randn(20, 1).astype(dtype))
    w1 = mod.tensor(rs.randn(3, 4).astype(dtype) * 0.5, requires_grad=True)
    w2 = mod.tensor(rs.randn(4, 1).astype(dtype) * 0.5, requires_grad=True)
    return X, Y, [w1, w2]


def _run(mod, dtype=np.float64, steps=3, sched=None, **kw):
    X, Y, params = _problem(mod, dtype)
    opt = mod.optim.LBFGS(params, **kw)
    s = sched(mod, opt) if sched else None
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = ((X @ params[0]).tanh() @ params[1] - Y).pow(2).mean()
        loss.backward()
        return loss

    losses = []
    for _ in range(steps):
        losses.append(opt.step(closure).item())
        if s is not None:
            s.step()
    st = opt.state[params[0]]
    return dict(losses=losses, params=[p.detach().numpy() for p in params], calls=calls[0],
                func_evals=st["func_evals"], n_iter=st["n_iter"], hist=len(st["old_dirs"]),
                keys=sorted(st), lr=opt.param_groups[0]["lr"])


CASES = [dict(), dict(line_search_fn="strong_wolfe"), dict(history_size=3), dict(history_size=2, max_iter=7),
         dict(line_search_fn="strong_wolfe", history_size=3, lr=0.5), dict(max_iter=4, max_eval=3),
         dict(tolerance_change=1e-3), dict(tolerance_grad=1e-2, line_search_fn="strong_wolfe")]


@pytest.mark.parametrize("kw", CASES, ids=[str(c) for c in CASES])
def test_lbfgs_matches_torch(kw):
    want, got = _run(torch, **kw), _run(tracegrad, **kw)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-9)
    for a, b in zip(got["params"], want["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    for k in ("calls", "func_evals", "n_iter", "hist", "keys"):
        assert got[k] == want[k], k


def test_lbfgs_float32_short():
    want = _run(torch, np.float32, steps=1, max_iter=3, line_search_fn="strong_wolfe")
    got = _run(tracegrad, np.float32, steps=1, max_iter=3, line_search_fn="strong_wolfe")
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    for a, b in zip(got["params"], want["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    assert got["func_evals"] == want["func_evals"]


def test_lbfgs_with_scheduler():
    def sched(mod, opt):
        return mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    want = _run(torch, steps=3, sched=sched, max_iter=5)
    got = _run(tracegrad, steps=3, sched=sched, max_iter=5)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-9)
    assert got["lr"] == want["lr"]


def test_lbfgs_converged_returns_early():
    # a zero gradient returns after one evaluation and records no iteration
    for mod in (torch, tracegrad):
        w = mod.zeros(3, requires_grad=True)
        opt = mod.optim.LBFGS([w])

        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss
        opt.step(closure)
        assert opt.state[w]["func_evals"] == 1 and opt.state[w]["n_iter"] == 0


def test_lbfgs_state_dict_roundtrip():
    X, Y, params = _problem(tracegrad, np.float64)
    opt = tracegrad.optim.LBFGS(params, max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((X @ params[0]).tanh() @ params[1] - Y).pow(2).mean()
        loss.backward()
        return loss
    opt.step(closure)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["history_size"] == 100 and sd["param_groups"][0]["max_eval"] == 3
    assert list(sd["state"]) == [0]


def test_lbfgs_errors():
    for mod in (torch, tracegrad):
        a, b = mod.zeros(2, requires_grad=True), mod.zeros(2, requires_grad=True)
        with pytest.raises(ValueError):
            mod.optim.LBFGS([{"params": [a]}, {"params": [b]}])
        with pytest.raises(ValueError):
            mod.optim.LBFGS([a], lr=-1.0)
        opt = mod.optim.LBFGS([a], line_search_fn="armijo")

        def closure():
            opt.zero_grad()
            loss = (a - 1).pow(2).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError):
            opt.step(closure)
