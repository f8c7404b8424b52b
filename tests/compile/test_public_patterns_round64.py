"""Compile patterns of the sixty-fourth round of public programs
(tests/api/test_public_programs_round64.py; sources in tests/public_programs_round64_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- carlosfranzreb/skipgram: ``ModelTrainer.train``'s loop body (``-model(*batch)``, backward,
  ``clip_grad_norm_``, Adam): one trace after the eager first call; the last batch of one row
  (the ``noise.ndim == 1`` branch, another shape) one more trace. The trainer's running loss
  (``self.current_loss -= loss`` across calls, each call's loss with its history) kept
  outside: equal to eager.
- lucidrains/byol-pytorch: the README's step (``learner(images)``: a forward hook stashing the
  hidden layer in a dict, the target under ``no_grad`` with ``detach_()``; Adam; the EMA update
  ``ma_params.data = ...``; SGD for its Adam) for BYOL and SimSiam: one trace after the eager first call (which
  also makes the target encoder by ``copy.deepcopy``). With ``reset_moving_average()`` between
  calls the next call, a trace, makes the target again: until round 64 its program ran for the
  calls after it too, making the target afresh from the online encoder every call (its key was
  the module layout the trace left, not the one it started from); now the call after it traces
  again (NOTE [a layout the trace changed], _lowering/region.py).
- mcmahon-lab/Physics-Aware-Training: the step through ``make_pat_func``'s custom Function
  (forward on the RK4 "physical system"; backward: ``set_grad_enabled(True)``,
  ``autograd.functional.vjp`` of the RK4 digital model on ``ctx.saved_tensors``,
  ``set_grad_enabled(False)``), Adam: one trace after the eager first call. ``vjp`` calls
  ``requires_grad_()`` on ``detach()`` aliases of the saved parameters; tracegrad took those for
  the parameters themselves and ran every call eagerly (a graph break) until round 64.
"""
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compiled_parity, state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round64 as _api  # noqa: E402  (the stand-ins and the tiny sizes)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # graph breaks
        yield


def _parity(runner, ref_tol=2e-5, comp_tol=1e-5):
    return compiled_parity(torch, tracegrad, runner, ref_tol, comp_tol)


# ---------------------------------------------------------------- skip-gram

def _skipgram(T, compiled):
    _, model = _api.skipgram(T)
    opt = T.optim.Adam(model.parameters(), lr=0.01)

    def step(batch):                   # ModelTrainer.train's loop body
        opt.zero_grad()
        loss = -model(*batch)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5)
        opt.step()
        return loss

    f = T.compile(step) if compiled else step
    current, out = 0, []
    for _ in range(2):                 # rows 4, 4, 4, 1 per epoch
        for batch in T.utils.data.DataLoader(_api.Pairs(T, n=13), batch_size=4):
            loss = f(batch)
            current -= loss
            out += _arr(loss)
    return out + _arr(current) + _state(model), f


def test_skipgram_step_compiled():
    stats = _parity(_skipgram)
    assert stats["traces"] == 2 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


# ---------------------------------------------------------------- BYOL / SimSiam

def _byol(T, compiled, use_momentum, calls=4, reset_at=None):
    _, learner = _api.byol(T, use_momentum)
    # SGD for the README's Adam: Adam turns the float noise of the gradients of the Linear biases
    # in front of each BatchNorm (0 exactly) into lr-sized steps, which XLA's fusion changes too
    opt = T.optim.SGD(learner.parameters(), lr=0.1)

    def step(images):                  # the README's loop body
        loss = learner(images)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if use_momentum:
            learner.update_moving_average()
        return loss

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(4), []
    for i in range(calls):
        if i == reset_at:
            # the next call (a trace) makes the target again by ``copy.deepcopy`` behind the
            # ``singleton``'s ``if instance is not None``; the calls after it read that
            # target's own (EMA-updated) parameters
            learner.reset_moving_average()
        out += _arr(f(_api._images(T, rs)))
    learner.eval()
    return out + _arr(*learner(_api._images(T, rs, 2), return_embedding=True)) + _state(learner), f


@pytest.mark.parametrize("use_momentum", [True, False], ids=["byol", "simsiam"])
def test_byol_step_compiled(use_momentum):
    stats = _parity(lambda T, c: _byol(T, c, use_momentum), ref_tol=5e-5)
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


# ---------------------------------------------------------------- physics-aware training

def _pat(T, compiled):
    _, f_pat, w0, k = _api.pat(T)
    opt = T.optim.Adam([w0, k], lr=0.05)

    def step(x0, y):
        loss = ((f_pat(x0, w0, k)[..., 0] - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(0), []
    for _ in range(4):
        x0, y = T.tensor(rs.randn(4, 3, 2).astype(np.float32)), T.tensor(rs.randn(4, 3).astype(np.float32))
        out += _arr(f(x0, y), w0, k, w0.grad, k.grad)
    return out + [np.array(T.is_grad_enabled())], f


def test_pat_step_compiled():
    stats = _parity(_pat)
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats


def _vjp_in_backward(T, compiled, flip=False):
    # the pattern alone: a custom Function whose backward is ``autograd.functional.vjp`` of
    # another function at its saved inputs (``x.detach().requires_grad_()`` of each inside)
    w, u = T.nn.Parameter(T.tensor([0.5, -1.0, 2.0])), T.zeros(2)

    class Surrogate(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return T.sin(x * w)

        @staticmethod
        def backward(ctx, g):
            return T.autograd.functional.vjp(lambda x, w: x * w, ctx.saved_tensors, v=g)[1]

    def step(x):
        y = Surrogate.apply(x, w).sum()
        y.backward()
        if flip:                       # an outside tensor's flag left changed: still a break
            u.requires_grad_(not u.requires_grad)
        return y

    f = T.compile(step) if compiled else step
    out = []
    for i in range(3):
        out += _arr(f(T.tensor([1.0, 2.0, 3.0]) * (i + 1)), w.grad if w.grad is not None else 0.0)
    return out + [np.array(u.requires_grad)], f


def test_vjp_in_custom_backward_compiled():
    stats = _parity(_vjp_in_backward)
    assert stats["traces"] == 1 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats
    stats = _parity(lambda T, c: _vjp_in_backward(T, c, flip=True))
    assert stats["traces"] == 0 and stats["eager_calls"] == 3, stats
    assert "requires_grad_() leaves the flag" in stats["graph_breaks"][0][0], stats


def test_byol_reset_moving_average_between_compiled_calls():
    # the program of the call that made the target ran again for the calls after it until
    # round 64: the target made afresh from the online encoder each call (1e-3 off by the next)
    stats = _parity(lambda T, c: _byol(T, c, True, calls=6, reset_at=3), ref_tol=5e-5)
    assert stats["traces"] == 3 and stats["eager_calls"] == 1 and not stats["graph_breaks"], stats
