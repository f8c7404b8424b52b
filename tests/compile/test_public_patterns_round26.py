"""Round-25 public programs (``tests/api/test_public_programs_round25.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- ctallec/world-models: ``trainmdrnn.py``'s MDRNN step (``transpose(1, 0)`` of every input, an
  ``nn.LSTM`` over ``cat([actions, latents])``, the GMM head sliced and ``view``-ed into means,
  ``exp`` sigmas and ``log_softmax`` weights, ``gmm_loss`` through ``Normal.log_prob`` and the
  max-subtraction log-sum-exp with its ``squeeze()``, ``binary_cross_entropy_with_logits`` and
  ``mse_loss``, RMSprop with ``alpha=.9``): with distribution validation off (as torch.compile
  sets it) one trace, no break, the trace reused on new data; with it on, a graph break naming
  ``Normal`` and ``validate_args``;
- sooftware/attentions: a step through ``MultiHeadAttention`` (the mask ``repeat``-ed per head and
  written with ``masked_fill_(..., -inf)`` into the scores in place) followed by
  ``RelativeMultiHeadAttention`` (u/v biases, the ``cat``-a-zero-column ``view`` shift,
  ``masked_fill_(mask, -1e9)``), an MSE loss and SGD with momentum: one trace, no break.
"""
import numpy as np
import pytest

import tracegrad
from tests.api.test_public_programs_round25 import _attentions_module, _world_models_module

from ._harness import check_compiled, data, np_init


# ---- ctallec/world-models models/mdrnn.py (as the eager round-25 test defines it) with
# trainmdrnn.py's get_loss as the step (LSIZE, ASIZE, RSIZE = 4, 3, 8; 3 mixtures; SEQ_LEN 3,
# BSIZE 2; include_reward=True) ------------------------------------------------------------------
def _mdrnn_program(mod, wrap):
    m = _world_models_module(mod)
    f = mod.nn.functional
    LSIZE = 4
    mdrnn = np_init(m["MDRNN"](LSIZE, 3, 8, 3), mod, scale=0.3)
    gmm_loss = m["gmm_loss"]
    optimizer = mod.optim.RMSprop(mdrnn.parameters(), lr=1e-3, alpha=.9)

    def step(latent_obs, action, reward, terminal, latent_next_obs):
        latent_obs, action,\
            reward, terminal,\
            latent_next_obs = [arr.transpose(1, 0)
                               for arr in [latent_obs, action,
                                           reward, terminal,
                                           latent_next_obs]]
        mus, sigmas, logpi, rs, ds = mdrnn(action, latent_obs)
        gmm = gmm_loss(latent_next_obs, mus, sigmas, logpi)
        bce = f.binary_cross_entropy_with_logits(ds, terminal)
        mse = f.mse_loss(rs, reward)
        scale = LSIZE + 2
        loss = (gmm + bce + mse) / scale
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return dict(gmm=gmm, bce=bce, mse=mse, loss=loss)

    def batch(i):
        terminal = (np.random.RandomState(300 + i).uniform(0, 1, (2, 3)) < 0.3).astype(np.float32)
        return (data(mod, i, 2, 3, LSIZE), data(mod, i, 2, 3, 3, seed=400), data(mod, i, 2, 3, seed=500),
                mod.tensor(terminal), data(mod, i, 2, 3, LSIZE, seed=600))

    return wrap(step), {"mdrnn": mdrnn, "opt": optimizer}, batch


@pytest.fixture
def no_validation():
    """Distributions' default argument validation off in both libraries (restored after), as
    torch.compile turns it off."""
    torch = pytest.importorskip("torch")
    saved = (torch.distributions.Distribution._validate_args,
             tracegrad.distributions.Distribution._validate_args)
    torch.distributions.Distribution.set_default_validate_args(False)
    tracegrad.distributions.Distribution.set_default_validate_args(False)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved[0])
    tracegrad.distributions.Distribution.set_default_validate_args(saved[1])


def test_world_models_mdrnn_train_step_validation_breaks():
    # with validation on (the default) Normal(mus, sigmas) checks its arguments' values in Python:
    # a graph break that names the distribution and validate_args, and every call runs eagerly
    step, _, batch = _mdrnn_program(tracegrad, tracegrad.compile)
    for i in range(2):
        step(*batch(i))
    reasons = [r for r, _ in step.stats["graph_breaks"]]
    assert step.stats["traces"] == 0 and step.stats["eager_calls"] == 2, step.stats
    assert any("Normal" in r and "validate_args=False" in r for r in reasons), reasons


def test_world_models_mdrnn_train_step_compiled(no_validation):
    # call 0 runs eagerly, call 1 traces, call 2 (new data) reuses the program
    run = check_compiled(_mdrnn_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
    out = run.step(*_batch_tracegrad(7))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert out["loss"].dim() == 0 and out["loss"].grad_fn is not None


def _batch_tracegrad(i):
    mod = tracegrad
    return (data(mod, i, 2, 3, 4), data(mod, i, 2, 3, 3, seed=400), data(mod, i, 2, 3, seed=500),
            mod.zeros(2, 3), data(mod, i, 2, 3, 4, seed=600))


# ---- sooftware/attentions attentions.py MultiHeadAttention -> RelativeMultiHeadAttention (as the
# eager round-25 test defines them; d_model 8, 2 heads, batch 2, 3 steps, dropout 0), an MSE
# regression step with SGD and momentum --------------------------------------------------------------
def _attention_program(mod, wrap):
    m = _attentions_module(mod)
    mha = np_init(m["MultiHeadAttention"](8, 2), mod, seed=1, scale=0.3)
    rel = np_init(m["RelativeMultiHeadAttention"](8, 2, 0.0), mod, seed=2, scale=0.3)
    params = list(mha.parameters()) + list(rel.parameters())
    # SGD, not Adam: the key projections' biases get gradients that are zero but for rounding
    # (a softmax ignores a per-query shift), which Adam would scale up to lr-sized steps
    opt = mod.optim.SGD(params, lr=0.1, momentum=0.9)
    mask = mod.tensor(np.array([[[0, 0, 1]] * 3, [[0, 1, 1]] * 3], dtype=bool))

    def step(x, pos, target):
        opt.zero_grad()
        context, attn = mha(x, x, x, mask)
        out = rel(context, context, context, pos, mask[:, :1])
        loss = mod.nn.functional.mse_loss(out, target)
        loss.backward()
        opt.step()
        return loss, attn

    return wrap(step), {"mha": mha, "rel": rel, "opt": opt}, \
        lambda i: (data(mod, i, 2, 3, 8), data(mod, i, 2, 3, 8, seed=700), data(mod, i, 2, 3, 8, seed=800))


def test_attentions_train_step_compiled():
    run = check_compiled(_attention_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
    loss, attn = run.step(*(data(tracegrad, 9, 2, 3, 8, seed=s) for s in (100, 700, 800)))
    assert run.step.stats["traces"] == 1 and loss.dim() == 0, run.step.stats
    # masked keys get exactly zero weight (the -inf fill), each row sums to one; the scores are
    # head-major (h0b0, h0b1, h1b0, h1b1) but the repeated mask is batch-major, so the first two
    # rows get batch 0's mask and the last two batch 1's (the repository's ordering, kept)
    a = attn.detach().numpy()
    assert a.shape == (4, 3, 3) and np.all(a[:2, :, 2] == 0) and np.all(a[2:, :, 1:] == 0)
    np.testing.assert_allclose(a.sum(-1), 1, rtol=1e-5)
