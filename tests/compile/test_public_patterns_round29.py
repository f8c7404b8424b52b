"""Round-29 public programs (``tests/api/test_public_programs_round29.py`` runs them whole and
eagerly against torch), with their training step under ``tracegrad.compile`` (compiled == eager
== torch over the harness's calls; tiny sizes, numpy weights and data):

- tanelp/tiny-diffusion ddpm.py: the DDPM training step over the ``NoiseScheduler``'s buffers
  (timesteps gathering ``sqrt_alphas_cumprod``, ``reshape(-1, 1)``), the sinusoidal embeddings'
  frozen ``nn.Parameter``, ``loss.backward(loss)`` (the loss as its own gradient),
  ``clip_grad_norm_`` and AdamW: one trace, no break, reused with new noise and timesteps; and
  the reverse-process ``NoiseScheduler.step`` with the 0-dim timestep ``t[0]``, against eager
  tracegrad (its ``randn_like`` noise included). Indexing a schedule buffer with a 0-dim integer
  tensor reads the index back (torch selects with it: a view), which is a graph break here where
  ``torch.compile(fullgraph=True)`` captures it (strict xfail below).
"""
import numpy as np
import pytest

import tracegrad

from tests.api.test_public_programs_round29 import _Seeded, _tiny_diffusion_module

from ._harness import break_lines, check_compiled


def _moons(mod, i):
    """Call ``i``'s batch of 4 moons points (datasets.py's transform of sklearn's make_moons),
    its noise and its timesteps (ddpm.py draws both with torch; numpy here)."""
    from sklearn.datasets import make_moons
    X, _ = make_moons(n_samples=8, random_state=42, noise=0.03)
    X[:, 0] = (X[:, 0] + 0.3) * 2 - 1
    X[:, 1] = (X[:, 1] + 0.3) * 3 - 1
    rs = np.random.RandomState(30 + i)
    batch = X[4 * (i % 2): 4 * (i % 2) + 4].astype(np.float32)
    return (mod.tensor(batch), mod.tensor(rs.standard_normal((4, 2)).astype(np.float32)),
            mod.tensor(rs.randint(0, 5, (4,))))


def _ddpm_model(mod):
    MLP, NoiseScheduler, _ = _tiny_diffusion_module(mod)
    model = MLP(hidden_size=8, hidden_layers=1, emb_size=4)
    rs = np.random.RandomState(4)     # the trainable weights only: the frequencies stay
    with mod.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.copy_(mod.tensor(rs.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return model, NoiseScheduler(num_timesteps=5, beta_schedule="linear")


# ddpm.py's inner loop body (learning rate 1e-3 -> 2e-2), the loss returned instead of tqdm's
# postfix; the noise and timesteps come in as arguments
def _ddpm_program(mod, wrap):
    F, nn = mod.nn.functional, mod.nn
    model, noise_scheduler = _ddpm_model(mod)
    optimizer = mod.optim.AdamW(model.parameters(), lr=2e-2)
    device = "cpu"

    def step(batch, noise, timesteps):
        noisy = noise_scheduler.add_noise(batch, noise, timesteps)
        noise_pred = model(noisy.to(device), timesteps.to(device))
        loss = F.mse_loss(noise_pred, noise.to(device))
        loss.backward(loss)

        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()

    return wrap(step), {"model": model, "optim": optimizer}, lambda i: _moons(mod, i)


def test_tiny_diffusion_train_step_compiled():
    # call 0 runs eagerly, call 1 traces, call 2 (the other half of the data, new noise and
    # timesteps) reuses the program; losses, parameters and AdamW state equal eager tracegrad's
    # and torch's
    run = check_compiled(_ddpm_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
    model = run.state["model"]
    # the frozen frequencies are parameters without gradients: AdamW left them as built
    emb = model.time_mlp.layer.emb
    assert not emb.requires_grad and emb.grad is None
    np.testing.assert_allclose(emb.detach().numpy(), np.exp(-np.log(1e4) * np.arange(2)), rtol=1e-6)
    # every trainable gradient was cleared by the step's zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_tiny_diffusion_reverse_step_compiled():
    # ddpm.py's sampling loop with ``noise_scheduler.step`` compiled: ``reconstruct_x0``'s
    # ``self.sqrt_inv_alphas_cumprod[t]`` indexes by the 0-dim timestep inside the program
    # (new each call); ``if t > 0`` reads it back, so the step breaks there and finishes
    # eagerly (``get_variance``'s ``if t == 0`` would break next), drawing its ``randn_like``
    # noise from tracegrad's generator as eager does: the same samples as the eager loop under
    # one seed
    model, noise_scheduler = _ddpm_model(tracegrad)
    model.eval()
    compiled_step = tracegrad.compile(noise_scheduler.step)
    frames = []
    for step_fn in (compiled_step, noise_scheduler.step):
        tracegrad.manual_seed(0)
        sample = tracegrad.tensor(np.random.RandomState(5).standard_normal((4, 2)).astype(np.float32))
        for t in list(range(len(noise_scheduler)))[::-1]:
            t = tracegrad.from_numpy(np.repeat(t, 4)).long()
            with tracegrad.no_grad():
                residual = model(sample, t)
            sample = step_fn(residual, t[0], sample)
        frames.append(sample.numpy())
    np.testing.assert_allclose(frames[0], frames[1], rtol=1e-5, atol=1e-6)
    assert np.isfinite(frames[0]).all() and frames[0].shape == (4, 2)
    stats = compiled_step.stats
    assert set(break_lines(stats)) == {"if t > 0:"}, stats
    assert stats["calls"] == 5 and stats["eager_calls"] == 5, stats


# torch.compile(fullgraph=True, backend="eager") captures ``reconstruct_x0``/``q_posterior`` with
# a 0-dim timestep tensor in one graph (dynamo keeps ``buf[t]`` as a tensor op); so does
# tracegrad: inside a trace a 0-dim integer index indexes as an index tensor (eagerly torch's
# rule, a select, reads it as an int)
def test_tiny_diffusion_posterior_with_tensor_timestep_fullgraph():
    _, noise_scheduler = _ddpm_model(tracegrad)
    x0 = tracegrad.tensor(np.random.RandomState(6).standard_normal((4, 2)).astype(np.float32))
    xt = tracegrad.tensor(np.random.RandomState(7).standard_normal((4, 2)).astype(np.float32))

    def posterior(x0, xt, t):
        return noise_scheduler.q_posterior(noise_scheduler.reconstruct_x0(xt, t, x0), xt, t)
    f = tracegrad.compile(posterior, fullgraph=True)
    for t in (3, 1):
        np.testing.assert_allclose(f(x0, xt, tracegrad.tensor(t)).numpy(),
                                   posterior(x0, xt, tracegrad.tensor(t)).numpy(), rtol=1e-6)
