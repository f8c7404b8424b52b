"""Compile patterns of the fifty-sixth round of public programs
(tests/api/test_public_programs_round56.py; sources in tests/public_programs_round56_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` over
three calls on the same initial state:

- yaodongyu/TRADES (MIT): ``trades_loss`` + backward + SGD step. The L-inf attack (an inner loop
  of ``torch.autograd.grad`` w.r.t. a fresh ``requires_grad_()`` input under
  ``torch.enable_grad()``, ``model.eval()``/``model.train()`` switched inside the step, the
  noise drawn by ``torch.randn`` in the program) is one program, in float64 as in the eager tests
  (the attack steps by the sign of ~1e-7 gradients). The L2 attack's ``if (grad_norms ==
  0).any():`` reads a value: a graph break, every call eager. ``pgd_attack_mnist.py``'s
  ``_pgd_whitebox`` (a new ``optim.SGD([X_pgd])`` per attack step over a tensor made in the
  call) never compiled: each trace lifted the new optimizer as outside state and traced again,
  six times, then gave up with "outside state kept changing while tracing" (fixed:
  ``_lowering/trace.Plan.absorb`` does not lift an optimizer whose parameters the trace made;
  it is the call's own). It is now one program, equal to torch. With the noise drawn from a NumPy
  stream (the stand-in the eager tests use to match torch) the trace sees the stream's state
  change: a graph break too, every call eager, equal to torch.
- kekmodel/FixMatch-pytorch (MIT): train.py's batch (interleaved forward, the confidence mask,
  the masked cross entropy, Nesterov SGD over two groups, ``LambdaLR.step()`` changing the
  learning rate every call, ``ModelEMA.update`` copying into ``state_dict()`` values) is one
  program, equal to torch.
- rosinality/style-based-gan-pytorch (MIT): train.py's iteration with ``n_critic`` 2 (the
  discriminator step: the WGAN-GP penalty by ``grad(..., create_graph=True)`` through the blur
  ``Function`` whose backward is another ``Function``, the generator's forward through
  equalized-lr forward pre-hooks, Adam) is one program; the latents and ``eps`` come from tracegrad's own
  ``torch.randn``/``torch.rand`` (same draws as eager under one seed; torch's stream differs:
  not compared with torch). With the R1 penalty the step sets ``real_image.requires_grad = True``
  on the batch it was passed: a graph break (``_lowering/region.py`` refuses flags set on a
  tensor argument: the program would set them on a stand-in), every call eager.
  ``adjust_lr``'s ``group.get('mult', 1)`` read for a group without that key, in a function
  that does not step the optimizer, traced again on every call: ``hyper.note_read`` recorded
  the absent key's value as None while its guard reads it as absent (fixed: guarded as
  absent).
  ``accumulate`` (the running generator's EMA through ``.data.mul_(decay).add_(1 - decay,
  tensor)``, the deprecated overload) compiled on its own: one program, equal to torch.
- kuc2477/pytorch-ewc (MIT): train.py's batch (``ewc_loss`` reading the consolidated
  ``{name}_mean``/``{name}_fisher`` buffers by ``getattr``, or catching the AttributeError before
  the first consolidation and returning ``Variable(torch.zeros(1))``; SGD with weight decay)
  compiled across two consolidations (eager ``estimate_fisher`` + ``consolidate`` between the
  tasks): each consolidation registers new buffer tensors, and the step traces again for each
  (three programs), equal to eager and torch.
Graph breaks are asserted as found.
"""
import random
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import (arrays as _arr, close as _close, default_dtype, init_uniform as _init,
                                     numpy_draws, state as _state)
from public_programs_round56_src import EWC, STYLEGAN, TRADES, TRADES_PGD, fixmatch_setup, program, stylegan_setup

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # deprecations and the graph breaks' warnings
        yield


def _check(runner, ref_tol=2e-5, comp_tol=1e-5, torch_ref=True):
    eager, comp = runner(tracegrad, False), runner(tracegrad, True)
    if torch_ref:
        _close(runner(torch, False)[0], eager[0], ref_tol)
    _close(eager[0], comp[0], comp_tol)
    return comp[1].stats


def _trades_runs(T, compiled, distance, numpy_noise=False):
    P = program(numpy_draws(T, 0) if numpy_noise else T, TRADES)
    model = _init(T, P.SmallCNN(drop=0.0), 1, 0.1)
    optimizer = T.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(data, target):    # train_trades_mnist.py's train() body, without the log line
        optimizer.zero_grad()
        loss = P.trades_loss(model=model, x_natural=data, y=target, optimizer=optimizer, step_size=0.01,
                             epsilon=0.3, perturb_steps=2, beta=1.0, distance=distance)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = T.compile(step)
    T.manual_seed(0)
    rs, out = np.random.RandomState(3), []
    for _ in range(3):
        data = T.tensor(rs.rand(2, 1, 28, 28), dtype=T.get_default_dtype())
        out += _arr(step(data, T.tensor(rs.randint(0, 10, 2))))
    return out + _state(model), step


def test_trades_linf_step_compiled():
    def runner(T, c):
        with default_dtype(T, T.float64):
            return _trades_runs(T, c, "l_inf")
    st = _check(runner, torch_ref=False, comp_tol=1e-9)
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def test_trades_l2_step_breaks_at_any():
    st = _check(lambda T, c: _trades_runs(T, c, "l_2"), torch_ref=False)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(" ")[0] for b in st["graph_breaks"]] == ["bool()"], st


def test_trades_step_with_numpy_noise_runs_eagerly():
    def runner(T, c):
        with default_dtype(T, T.float64):
            return _trades_runs(T, c, "l_inf", numpy_noise=True)
    st = _check(runner, ref_tol=1e-9, comp_tol=1e-12)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert len(st["graph_breaks"]) == 1 and "_rs" in st["graph_breaks"][0][0], st


def _fixmatch_runs(T, compiled):
    P, run_state = fixmatch_setup(T)

    def step(*batch):
        return P.train_step(*run_state, *batch)

    if compiled:
        step = T.compile(step)
    rs, out = np.random.RandomState(0), []
    for _ in range(3):
        batch = (T.tensor(rs.rand(2, 3, 8, 8).astype(np.float32)), T.tensor(rs.randint(0, 3, 2)),
                 T.tensor(rs.rand(4, 3, 8, 8).astype(np.float32)), T.tensor(rs.rand(4, 3, 8, 8).astype(np.float32)))
        out += _arr(*step(*batch)) + [np.array(run_state[3].get_last_lr())]
    return out + _state(run_state[1]) + _state(run_state[4].ema), step


def test_fixmatch_step_compiled():
    st = _check(_fixmatch_runs)
    # the first call runs eagerly (lazy momentum buffers), the second traces, the third reuses it
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def _stylegan_runs(T, compiled, loss_kind):
    # the 8x8 level (step 1: the fused up/down-sampling blocks, the blur Functions, the skip
    # blends) and n_critic 2 with the iteration number 0 on every call: a discriminator-only
    # iteration (the generator step is in the eager tests; XLA needs ~10 s for this program on
    # CPU already). A changing Python int ``i`` would make each value its own program.
    P, nets = stylegan_setup(T)
    args = types.SimpleNamespace(loss=loss_kind, mixing=False)

    def step(real_image):
        return P.train_step(args, 0, real_image, *nets, step=1, alpha=0.5, code_size=512, n_critic=2)

    if compiled:
        step = T.compile(step)
    T.manual_seed(0)
    rs, out = np.random.RandomState(1), []
    for _ in range(3):
        out += _arr(*[t for t in step(T.tensor(rs.rand(2, 3, 8, 8).astype(np.float32) * 2 - 1)) if t is not None])
    return out + [s for n in nets[:3] for s in _state(n)], step


def test_stylegan_wgan_gp_step_compiled():
    st = _check(lambda T, c: _stylegan_runs(T, c, "wgan-gp"), torch_ref=False, comp_tol=2e-5)
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def test_stylegan_r1_step_sets_requires_grad_on_its_argument():
    # ``real_image.requires_grad = True`` on the batch passed in (and its ``.grad`` filled by
    # ``real_predict.backward``): a graph break, every call eager with eager's values
    st = _check(lambda T, c: _stylegan_runs(T, c, "r1"), torch_ref=False, comp_tol=1e-6)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert ["sets requires_grad" in b[0] for b in st["graph_breaks"]] == [True], st


def _ewc_runs(T, compiled):
    P = program(T, EWC)
    model = _init(T, P.MLP(12, 4, hidden_size=8, hidden_layer_num=2, hidden_dropout_prob=0, input_dropout_prob=0), 0, 0.4)
    criteriton = T.nn.CrossEntropyLoss()
    optimizer = T.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-5)

    def step(x, y):
        return P.train_step(model, optimizer, criteriton, x, y)

    if compiled:
        step = T.compile(step)
    T.manual_seed(0)
    rs, out = np.random.RandomState(0), []
    for _ in range(3):
        dataset = [(T.tensor(rs.rand(3, 4).astype(np.float32)), int(rs.randint(0, 4))) for _ in range(8)]
        for i in range(0, 8, 4):
            out += _arr(*step(T.stack([d[0] for d in dataset[i:i + 4]]), T.tensor([d[1] for d in dataset[i:i + 4]])))
        model.consolidate(model.estimate_fisher(dataset, 8, batch_size=4))
    return out + _state(model), step


def test_ewc_step_compiled_across_consolidations():
    st = _check(_ewc_runs)
    assert st["traces"] == 3 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def _accumulate_runs(T, compiled):
    # train.py's ``accumulate(g_running, generator.module)``: ``par1[k].data.mul_(decay).add_(1 -
    # decay, par2[k].data)`` (the deprecated ``add_(Number, Tensor)`` overload) in a program,
    # with the source's parameters changed between the calls
    P = program(T, STYLEGAN)
    running, model = P.EqualLinear(6, 4), P.EqualLinear(6, 4)
    _init(T, running, 1)
    _init(T, model, 2)
    step = T.compile(P.accumulate) if compiled else P.accumulate
    out = []
    for k in range(3):
        with T.no_grad():
            model.linear.weight_orig.mul_(-1.5)
        step(running, model, 0.9 if k else 0)
        out += _state(running)
    return out, step


def test_accumulate_deprecated_add_overload_compiled():
    st = _check(_accumulate_runs)
    assert st["traces"] == 1 and not st["graph_breaks"], st


def _pgd_runs(T, compiled):
    # pgd_attack_mnist.py's _pgd_whitebox: a new ``optim.SGD([X_pgd])`` over a tensor made in
    # the call at every attack step (its log line's print bound to a no-op: a print is a graph
    # break). Such an optimizer was lifted as outside state on every trace, a new object each
    # time, so the function never compiled ("outside state kept changing while tracing"; fixed:
    # ``_lowering/trace.Plan.absorb`` leaves an optimizer over tensors the trace made alone).
    args = types.SimpleNamespace(epsilon=0.3, num_steps=3, step_size=0.05)
    P = program(T, TRADES + TRADES_PGD, args=args, print=lambda *a, **k: None)
    model = _init(T, P.SmallCNN(drop=0.0), 1, 0.1)
    model.eval()
    step = T.compile(P._pgd_whitebox) if compiled else P._pgd_whitebox
    rs, out = np.random.RandomState(6), []
    for _ in range(3):
        X = T.tensor(rs.rand(3, 1, 28, 28).astype(np.float32)).requires_grad_()
        out += _arr(*step(model, X, T.tensor(rs.randint(0, 10, 3))))
    return out + _state(model), step


def test_pgd_attack_with_an_optimizer_per_step_compiled():
    st = _check(_pgd_runs)
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st


def test_param_group_get_of_a_missing_key():
    # StyleGAN's ``mult = group.get('mult', 1)`` read in a compiled function for groups of an
    # optimizer it does not step: the group without 'mult' was guarded as holding None while
    # the guard reads it as absent, so every call traced again (fixed: ``hyper.note_read``
    # guards the key as absent). A 'mult' added later is a new program with its value.
    def run(T, compiled):
        w = T.nn.Parameter(T.ones(2))
        opt = T.optim.Adam([w], lr=1e-3)
        opt.add_param_group({'params': [T.nn.Parameter(T.ones(1))], 'lr': 1e-5, 'mult': 0.01})

        def scaled(optimizer, x):
            return [x * group['lr'] * group.get('mult', 1) for group in optimizer.param_groups]

        f = T.compile(scaled) if compiled else scaled
        out = []
        for k in range(6):
            if k == 4:
                opt.param_groups[0]['mult'] = 3.0
            out += _arr(*f(opt, T.ones(2)))
        return out, f
    st = _check(run)
    assert st["traces"] == 2 and st["eager_calls"] == 1 and not st["graph_breaks"], st
