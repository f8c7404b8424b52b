"""Compile patterns of the sixty-sixth round of public programs
(tests/api/test_public_programs_round66.py; sources in tests/public_programs_round66_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state (where a step draws from the library's own random stream, tracegrad eager and
compiled from one seed):

- William-f-12/SimCLR: ``train``'s loop body (the two-view forward through the projection head's
  ``BatchNorm1d``, the NT-Xent loss with ``fill_diagonal_(float('-inf'))`` in place on the
  similarity matrix, ``zero_grad(set_to_none=True)``, Adam): one trace after the eager first
  call; the ``@torch.no_grad()`` ``encode`` compiled gives a tensor that does not require grad.
- 0nEwEi/Test WGAN-GP: the critic iteration (``gen(noise).detach()``, the gradient penalty's
  ``autograd.grad(create_graph=True)`` through ``InstanceNorm2d`` and its double backward, Adam
  with ``betas=(0.0, 0.9)``) and the generator step, each one trace; ``gradient_penalty`` itself
  compiled is one differentiable node whose backward is the penalty's second derivative.
- Yuting-Gao/DisCo-pytorch: the student's step with ``loss_fn_kd`` (its ``KLDivLoss()``
  warning given on every compiled call as on every eager one): one trace; a temperature changed
  between calls is a new constant, a new trace, never a stale one.
- Fr0do/flows4ad: the RealNVP step (masks rebuilt in the trace by ``mask[..., range(0, d, 2)] =
  True``, ``~mask``, ``chunk``, ``log_det`` summed from ``0.0``) with AdamW and a
  ``CosineAnnealingLR`` stepped between calls (the learning rate an input, not a constant): one
  trace with ``Normal``'s validation off; the reverse pass under ``no_grad`` compiled. With the
  validation on (torch's default) the step runs eagerly with one warning that says how to
  compile it.
"""
import functools
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, compiled_parity, grads as _grads, init_uniform, \
    state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round66 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from public_programs_round66_src import WGANGP_GP, WGANGP_MODEL, program  # noqa: E402
from compile.test_public_patterns_round65 import no_validation  # noqa: E402,F401  (the fixture)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_parity = functools.partial(compiled_parity, torch, tracegrad)


def _one_trace(stats, calls):
    assert stats == {"calls": calls, "traces": 1, "eager_calls": 1, "graph_breaks": []}, stats


# ---------------------------------------------------------------- SimCLR

def _simclr(T, compiled):
    ns = _api.simclr_program(T)
    model = _api.simclr_model(T, ns)
    optimizer, loss_fn = T.optim.Adam(model.parameters(), lr=1e-2), ns.NTXentLoss()

    def step(x_i, x_j):                 # train_loop.py's loop body
        z_i, z_j = model(x_i, x_j)
        loss = loss_fn(z_i, z_j)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(1), []
    for _ in range(4):
        out += _arr(f(*_api._views(T, rs)))
    x1, x2 = _api._views(T, rs)
    encode = T.compile(model.encode) if compiled else model.encode
    h = encode(x1)
    assert not h.requires_grad
    return out + _arr(h) + [np.array(p.grad is None) for p in model.parameters()] + _state(model), f


def test_simclr_step_compiled():
    _one_trace(_parity(_simclr), 4)


# ---------------------------------------------------------------- WGAN-GP

def _wgan(compiled):
    T = tracegrad
    ns = program(T, WGANGP_MODEL + WGANGP_GP)
    gen, critic = init_uniform(T, ns.Generator(4, 3, 1), 1), init_uniform(T, ns.Discriminator(3, 1), 2)
    opt_gen = T.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.0, 0.9))
    opt_critic = T.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.0, 0.9))

    def critic_step(real):              # train.py's critic iteration
        noise = T.randn((2, 4, 1, 1))
        fake = gen(noise).detach()
        critic_real = critic(real).reshape(-1)
        critic_fake = critic(fake).reshape(-1)
        gp = ns.gradient_penalty(critic, real, fake, device="cpu")
        loss_critic = (-(T.mean(critic_real) - T.mean(critic_fake)) + 10 * gp)
        critic.zero_grad()
        loss_critic.backward()
        opt_critic.step()
        return loss_critic, gp

    def gen_step():                     # and its generator step
        fake = gen(T.randn((2, 4, 1, 1)))
        loss_gen = -T.mean(critic(fake).reshape(-1))
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()
        return loss_gen

    fc, fg = (T.compile(critic_step), T.compile(gen_step)) if compiled else (critic_step, gen_step)
    T.manual_seed(0)
    rs, out = np.random.RandomState(3), []
    for _ in range(2):
        real = T.tensor(rs.uniform(-1, 1, (2, 3, 64, 64)).astype(np.float32))
        for _ in range(2):
            out += _arr(*fc(real))
        out += _arr(fg())
    return out + _state(gen) + _state(critic), (fc, fg)


def test_wgan_gp_steps_compiled():
    (eager, _), (comp, (fc, fg)) = _wgan(False), _wgan(True)
    close(eager, comp, 2e-5)
    _one_trace(fc.stats, 4)
    _one_trace(fg.stats, 2)


def _penalty(T, compiled):
    ns = program(T, WGANGP_MODEL + WGANGP_GP)
    critic = init_uniform(T, ns.Discriminator(3, 1), 2)
    f = T.compile(ns.gradient_penalty) if compiled else ns.gradient_penalty
    T.manual_seed(0)
    rs, out = np.random.RandomState(3), []
    for _ in range(3):
        real, fake = (T.tensor(rs.uniform(-1, 1, (2, 3, 64, 64)).astype(np.float32)) for _ in range(2))
        critic.zero_grad()
        gp = f(critic, real, fake, device="cpu")
        gp.backward()
        out += _arr(gp) + _grads(critic)
    return out, f


def test_gradient_penalty_compiled_is_differentiable():
    (eager, _), (comp, f) = _penalty(tracegrad, False), _penalty(tracegrad, True)
    close(eager, comp, 2e-5)
    _one_trace(f.stats, 3)


# ---------------------------------------------------------------- knowledge distillation

def _kd(T, compiled, temps=(4.0,) * 4):
    step, student, _, args = _api.kd_setup(T)
    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(0), []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for temp in temps:
            args.T = temp
            out += _arr(f(*_api.kd_batch(T, rs)))
    warned = sum("reduction: 'mean' divides" in str(m.message) for m in w)
    return out + [np.array(warned)] + _state(student), f


def test_kd_step_compiled_warns_every_call():
    _one_trace(_parity(_kd), 4)
    assert _kd(tracegrad, True)[0][4] == 4


def test_kd_temperature_changed_between_calls():
    stats = _parity(functools.partial(_kd, temps=(1.0, 2.0, 2.0, 4.0)))
    # call 1 eager (1.0), a trace for 2.0 used twice, another for 4.0
    assert stats["traces"] == 2 and stats["eager_calls"] == 1, stats


# ---------------------------------------------------------------- RealNVP

def _flows(T, compiled, n=4):
    ns = _api.flows_program(T)
    m = init_uniform(T, ns.RealNVP(5, 6, 4, mlp_activation="ReLU"), 0, 0.3)
    prior = T.distributions.Normal(loc=0.0, scale=1.0)
    loss_fn = ns.RealNVPLoss(prior)
    opt = T.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.0)
    sch = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, eta_min=1e-5)

    def step(x):
        z, log_det = m(x)
        loss = loss_fn(z, log_det)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def score(x):
        with T.no_grad():
            z, log_det = m(x, reverse=True)
            return (prior.log_prob(z) + log_det).sum(dim=-1)

    f, g = (T.compile(step), T.compile(score)) if compiled else (step, score)
    X = np.random.RandomState(0).randn(n, 4, 5).astype(np.float32)
    out = []
    for x in X:
        out += _arr(f(T.tensor(x)))
        sch.step()
    out += _arr(g(T.tensor(X[0])), g(T.tensor(X[1])))
    return out + _state(m), f


@pytest.mark.usefixtures("no_validation")
def test_real_nvp_step_compiled():
    _one_trace(_parity(_flows), 4)


def test_real_nvp_step_validating_runs_eagerly():
    # Normal's validate_args (torch's default) checks values in Python: eager calls, a warning for
    # each compiled function (the step and the score)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        stats = _parity(functools.partial(_flows, n=2))
    msgs = [str(m.message) for m in w if "tracegrad.compile" in str(m.message)]
    assert stats["traces"] == 0 and stats["eager_calls"] == 2, stats
    assert len(msgs) == 2 and all("Normal.log_prob(validate_args=True)" in m for m in msgs), msgs
    assert "running _flows.<locals>.step eagerly" in msgs[0] and "_flows.<locals>.score" in msgs[1], msgs
