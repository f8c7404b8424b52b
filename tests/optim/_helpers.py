"""Shared pieces for the optim tests: one training program run with torch and tracegrad."""

import numpy as np

import tracegrad  # noqa: F401
import tracegrad.optim  # noqa: F401  (tracegrad.optim may not be imported by the package yet)


def make_params(mod, seed=0, dtype="float32"):
    """Three parameters with fixed numpy init: w (4, 3), b (3,), and ``unused`` (2,), which
    never gets a gradient (optimizers must skip it)."""
    rng = np.random.RandomState(seed)
    arrs = [rng.randn(4, 3), rng.randn(3) * 0.1, rng.randn(2)]
    dt = getattr(mod, dtype)
    return [mod.tensor(a.astype(dtype), dtype=dt, requires_grad=True) for a in arrs]


def inputs(mod, seed=1, dtype="float32"):
    rng = np.random.RandomState(seed)
    return mod.tensor(rng.randn(6, 4).astype(dtype)), mod.tensor(rng.randn(6, 3).astype(dtype))


def loss_fn(mod, params, x, y):
    w, b = params[0], params[1]
    h = (x @ w + b).tanh()
    return ((h - y) ** 2).mean() + 0.05 * (w * w).sum()


def train(mod, opt_name, kw, steps=50, groups=False, dtype="float32", seed=0):
    """Run ``steps`` optimizer steps on the problem drawn with ``seed``; returns
    (params, optimizer)."""
    params = make_params(mod, seed=seed, dtype=dtype)
    x, y = inputs(mod, seed=seed + 1, dtype=dtype)
    cls = getattr(mod.optim, opt_name)
    if groups:
        opt = cls([{"params": [params[0]]}, {"params": params[1:], "lr": kw.get("lr", 1e-2) * 0.5}], **kw)
    else:
        opt = cls(params, **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(mod, params, x, y)
        loss.backward()
        opt.step()
    return params, opt


def to_np(t):
    return np.asarray(t.detach().numpy())
