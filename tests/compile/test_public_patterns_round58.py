"""Compile patterns of the fifty-eighth round of public programs
(tests/api/test_public_programs_round58.py; sources in tests/public_programs_round58_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` over
three calls on the same initial state:

- facebookresearch/dlrm (MIT): the DLRM_Net batch with QR or mixed-dimension embedding bags
  (``sparse=True``, as the program builds them) and SGD: sparse COO gradients are eager-only in
  tracegrad, so each call runs eagerly after the failed trace (a graph break with a warning),
  equal to torch.
- rtqichen/torchdiffeq (MIT): a training step through ``odeint`` (fixed-grid rk4 and adaptive
  dopri5) or ``odeint_adjoint`` compares solver times with ``bool()`` (``while j < len(t) and
  t1 >= t[j]``, the step acceptance): a graph break, every call eager, equal to torch (as
  torch.compile, which breaks there too). The solver's own ``rk4_alt_step_func`` composed over a
  fixed grid inside the step is one program.
Graph breaks are asserted as found. The VAE-GAN's step: tests/compile/test_public_patterns_round58_vaegan.py.
"""
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import compiled_parity, arrays as _arr, init_uniform, state as _state
from public_programs_round58_src import dlrm_batches, dlrm_setup, torchdiffeq_for

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the graph breaks' warnings
        yield


def _check(runner, ref_tol=2e-5, comp_tol=1e-5):
    return compiled_parity(torch, tracegrad, runner, ref_tol, comp_tol)


def _breaks(st):
    return [b[0].split(" ")[0] for b in st["graph_breaks"]]


# ---------------------------------------------------------------- dlrm QR / MD embeddings

def _dlrm_runs(T, compiled, variant, operation):
    tricks, dlrm, opt, ln_emb = dlrm_setup(T, variant, operation)

    def step(X, lS_o, lS_i, target):
        Z = dlrm(X, lS_o, lS_i)
        E = dlrm.loss_fn(Z, target)
        opt.zero_grad()
        E.backward()
        opt.step()
        return Z, E

    if compiled:
        step = T.compile(step)
    out = []
    for batch in dlrm_batches(T, np.random.RandomState(1), ln_emb):
        out += _arr(*step(*batch))
    return out + _state(dlrm), step


@pytest.mark.parametrize("variant,operation", [("qr", "mult"), ("md", None)])
def test_dlrm_sparse_embedding_step_falls_back(variant, operation):
    st = _check(lambda T, c: _dlrm_runs(T, c, variant, operation), comp_tol=1e-6)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(":")[0] for b in st["graph_breaks"]] == ["tracing raised RuntimeError"], st
    assert "sparse COO tensors work in eager mode only" in st["graph_breaks"][0][0], st


# ---------------------------------------------------------------- torchdiffeq

def _ode_model(T):
    net = init_uniform(T, T.nn.Sequential(T.nn.Linear(2, 8), T.nn.Tanh(), T.nn.Linear(8, 2)), 3, 0.5)

    class ODEFunc(T.nn.Module):     # ode_demo.py's dynamics
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, t, y):
            return self.net(y ** 3)
    func = ODEFunc()
    return func, T.optim.RMSprop(func.parameters(), lr=1e-3)


def _ode_batches(T):
    rs = np.random.RandomState(2)
    return [(T.tensor(rs.uniform(-1, 1, (3, 2)).astype(np.float32)),
             T.tensor(rs.uniform(-1, 1, (3, 3, 2)).astype(np.float32))) for _ in range(3)]


def _ode_steps(T, compiled, step, func, with_grid):
    """``step`` (compiled or not) over the three batches; the losses and the final parameters."""
    step = T.compile(step) if compiled else step
    out = []
    for y0, target in _ode_batches(T):
        out += _arr(step(y0, T.linspace(0., 0.5, 3), target) if with_grid else step(y0, target))
    return out + _state(func), step


def _odeint_runs(T, compiled, method, adjoint):
    tde = torchdiffeq_for(T)
    func, opt = _ode_model(T)
    odeint = tde.odeint_adjoint if adjoint else tde.odeint
    options = {} if method == "dopri5" else {"options": {"step_size": 0.125}}

    def step(y0, t, target):
        opt.zero_grad()
        pred = odeint(func, y0, t, method=method, **options)
        loss = T.mean(T.abs(pred - target))
        loss.backward()
        opt.step()
        return loss
    return _ode_steps(T, compiled, step, func, True)


@pytest.mark.parametrize("method,adjoint", [("rk4", False), ("dopri5", False), ("rk4", True)])
def test_odeint_step_breaks_at_time_comparisons(method, adjoint):
    st = _check(lambda T, c: _odeint_runs(T, c, method, adjoint))
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert _breaks(st) == ["bool()"], st


def _rk4_grid_runs(T, compiled):
    # the fixed-grid RK4 solver's step (``rk4_alt_step_func``, the 3/8 rule, through the
    # solver's ``_PerturbFunc`` wrapper) over four steps of a grid the step builds
    impl = torchdiffeq_for(T)._impl
    func, opt = _ode_model(T)
    wrapped = impl.misc._PerturbFunc(func)

    def step(y0, target):
        grid = T.linspace(0., 0.5, 5)
        y, ys = y0, [y0]
        for i in range(4):
            t0, t1 = grid[i], grid[i + 1]
            y = y + impl.rk_common.rk4_alt_step_func(wrapped, t0, t1 - t0, t1, y)
            ys.append(y)
        opt.zero_grad()
        T.mean(T.abs(T.stack(ys[::2]) - target)).backward()
        opt.step()
        return ys[-1]
    return _ode_steps(T, compiled, step, func, False)


def test_rk4_step_over_a_fixed_grid_compiled():
    st = _check(_rk4_grid_runs)
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st
