"""Round-23 public programs (``tests/api/test_public_programs_round23.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager (== torch where the random streams allow) with the harness (tiny sizes, numpy
data):

- swyoon/pytorch-energy-based-model: ``train_energy_based_model.py``'s step with
  ``sample_langevin`` inside it (a fresh tensor made ``requires_grad = True`` in the step,
  ``autograd.grad(out.sum(), x, only_inputs=True)`` through a chain of non-leaf samples,
  ``.detach().to('cpu')`` snapshots), the contrastive-divergence loss, ``clip_grad_norm_`` and
  Adam: one trace, no break, with the program's ``torch.randn_like`` drawn inside the compiled
  step (compiled == eager tracegrad) and, in a second test, with the noise passed in (== torch);
- JosephKJ/PyTorch-MAML-and-Reptile: one Reptile outer iteration as a compiled function
  (``deepcopy(model.state_dict())``, inner SGD through ``param.data -= lr * param.grad.data``,
  the interpolated ``load_state_dict``), compiled == eager == torch.
"""
import math
from copy import deepcopy

import numpy as np

import tracegrad
from tests.api.test_public_programs_round23 import _ebm_module

from ._harness import check_compiled, data, np_init


# ---- swyoon/pytorch-energy-based-model langevin.py, models.py (FCNet, as the eager round-23 test defines them), the training
# script's loop body (``.cuda()`` dropped; ``randn_like`` is the program's ``torch.randn_like`` or
# a stand-in returning the noise passed to the step) ----------------------------------------------
def _ebm_program(mod, wrap, noise_in):
    drawn = []

    def randn_like(x):
        return drawn.pop(0).clone() if noise_in else mod.randn_like(x)

    sample_langevin, _, FCNet = _ebm_module(mod, randn_like)

    model = np_init(FCNet(in_dim=2, out_dim=1, l_hidden=(8, 8), activation='relu', out_activation='linear'), mod)
    opt = mod.optim.Adam(model.parameters(), lr=1e-3)
    alpha, stepsize, n_steps = 1., 0.1, 2

    def step(pos_x, *noise):
        drawn[:] = list(noise)
        neg_x = randn_like(pos_x)
        neg_x = sample_langevin(neg_x, model, stepsize, n_steps, intermediate_samples=False)

        opt.zero_grad()
        pos_out = model(pos_x)
        neg_out = model(neg_x)

        loss = (pos_out - neg_out) + alpha * (pos_out ** 2 + neg_out ** 2)
        loss = loss.mean()
        loss.backward()

        total_norm = mod.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
        opt.step()
        return loss, total_norm, neg_x

    def batch(i):
        pos_x = math.sqrt(0.5) * data(mod, i, 4, 2)
        if not noise_in:
            return (pos_x,)
        return (pos_x,) + tuple(data(mod, i, 4, 2, seed=300 + 10 * k) for k in range(n_steps + 1))

    state = {"model": model, "opt": opt}
    if not noise_in:
        state["rng"] = mod.default_generator
    return wrap(step), state, batch


def test_ebm_langevin_step_with_randn_like_traces_whole():
    run = check_compiled(lambda mod, wrap: _ebm_program(mod, wrap, False), calls=2, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats
    # a third call on new data reuses the trace; the samples come back detached (``l_samples``
    # holds ``x.detach()``), the gradient norm before clipping is a 0-d tensor
    loss, norm, neg_x = run.step(data(tracegrad, 5, 4, 2))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert not neg_x.requires_grad and neg_x.grad_fn is None and tuple(neg_x.shape) == (4, 2)
    assert norm.dim() == 0 and norm.item() > 0 and loss.grad_fn is not None


def test_ebm_langevin_step_with_given_noise_matches_torch():
    run = check_compiled(lambda mod, wrap: _ebm_program(mod, wrap, True), calls=2, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- JosephKJ/PyTorch-MAML-and-Reptile main.py, experiment('Reptile')'s loop body as a function of
# one task's minibatches (the task sampling stays outside). Changed: ``train_on_batch``'s
# ``to_torch`` runs in the caller: a NumPy array argument is baked into the program by its bytes
# (numpy code in the function needs its values), so a new task's arrays would trace again; the
# ``iteration`` argument is one fixed int (a new int is a new program as well) ----------------------
def _reptile_program(mod, wrap):
    nn = mod.nn
    ag = mod.autograd
    inner_step_size, inner_epochs, outer_stepsize_reptile, n_iterations = 0.02, 1, 0.1, 3
    model = np_init(nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)), mod)
    x_all = np.linspace(-5, 5, 20)[:, None]
    n_train = 5

    def train_on_batch(x, y):
        model.zero_grad()
        ypred = model(x)
        loss = (ypred - y).pow(2).mean()
        loss.backward()
        for param in model.parameters():
            param.data -= inner_step_size * param.grad.data
        return loss

    def iteration_step(iteration, x_batches, y_batches):
        weights_before = deepcopy(model.state_dict())
        losses = []
        for _ in range(inner_epochs):
            for x, y in zip(x_batches, y_batches):
                losses.append(train_on_batch(x, y))
        weights_after = model.state_dict()
        outerstepsize = outer_stepsize_reptile * (1 - iteration / n_iterations)  # linear schedule
        model.load_state_dict({name: weights_before[name] + (weights_after[name] - weights_before[name]) * outerstepsize
                               for name in weights_before})
        return mod.stack(losses).detach()

    def to_torch(x):
        return ag.Variable(mod.Tensor(x))

    def batch(i):
        rng = np.random.RandomState(i)
        phase, ampl = rng.uniform(0, 2 * np.pi), rng.uniform(0.1, 5)
        y_all = np.sin(x_all + phase) * ampl
        inds = rng.permutation(len(x_all))[:-n_train]
        idx = [inds[s:s + n_train] for s in range(0, len(inds), n_train)]
        return 1, [to_torch(x_all[j]) for j in idx], [to_torch(y_all[j]) for j in idx]

    return wrap(iteration_step), {"model": model}, batch


def test_reptile_outer_iteration_compiled():
    # the first call runs eagerly, the second traces, the third (a new task) reuses the program;
    # the state dict's deepcopy and the interpolated load_state_dict write the parameters back
    run = check_compiled(_reptile_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
