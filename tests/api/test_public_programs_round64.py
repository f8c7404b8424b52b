"""A sixty-fourth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used (but for BYOL, see
below); the program sources are in tests/public_programs_round64_src.py, executed with ``torch``
bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- carlosfranzreb/skipgram (MIT), ``skipgram/model.py`` and ``skipgram/train.py`` at 27f54c7
  (word2vec skip-gram with negative sampling): two ``nn.Embedding`` tables filled by
  ``.weight.data.uniform_(-1, 1)``, ``unsqueeze``/``transpose(1, 2)`` and ``torch.bmm`` of the
  center, context and negated negative vectors, ``F.logsigmoid`` of ``.squeeze()``-d scores, a
  single-sample branch on ``noise.ndim == 1``; ``ModelTrainer.train``: a ``DataLoader`` of
  ``(center, context, negatives)`` rows made per epoch, ``loss = -model(*[t.to(device) ...])``,
  ``clip_grad_norm_(max_norm=5)``, Adam, ``self.current_loss -= loss`` (an int becoming a tensor
  with history), ``log_loss`` every 100 batches and per epoch with ``logging.info`` f-strings of
  those tensors, ``save_embeddings`` by ``json.dump`` and ``torch.save(model.state_dict())``.
  With one negative per pair ``.squeeze()`` drops that axis too: a loss per row, whose
  ``backward()`` raises the same RuntimeError in both.
- lucidrains/byol-pytorch (MIT), ``byol_pytorch/byol_pytorch.py`` at 6717204 (BYOL, and SimSiam
  with ``use_momentum=False``): a forward hook on the backbone's ``children()[-2]`` stashing
  ``flatten(output)`` in a dict keyed by device, projector and target encoder made lazily by a
  ``singleton`` decorator (``projector.to(hidden)``: ``Module.to`` of a tensor;
  ``copy.deepcopy`` of the online encoder with its hook, ``requires_grad = False`` on the copy),
  ``MLP``/``SimSiamMLP`` with ``BatchNorm1d`` (``affine=False``), ``ReLU(inplace=True)``; the
  loss ``2 - 2 * (x * y).sum(dim=-1)`` of ``F.normalize``-d vectors; targets under ``no_grad``
  with ``detach_()``; the EMA update ``ma_params.data = old * beta + (1 - beta) * new``; the
  mock forward of ``torch.randn(2, 3, size, size, device=device)`` in ``__init__``; its
  ``assert`` on a batch of one; the README's loop (Adam, ``update_moving_average``).
  ``torchvision.transforms`` (not installed) is a stand-in of ``nn.Identity`` builders: only the
  default augmentation uses it, and the tests pass ``augment_fn``/``augment_fn2``. Round 12
  (tests/api/test_public_programs_round12.py) ran an inline copy of this file eagerly, BYOL with
  SGD; this round adds its SimSiam mode, the README's Adam loop, the batch-of-one and
  no-momentum assertions, the float64 paths and its compiled steps (the compile test file).
- mcmahon-lab/Physics-Aware-Training (no license file), ``ode_utils.py`` and ``pat.py`` at
  6dc5bec (physics-aware training with a hand-written RK4 solver): ``rk_loop``'s four stages,
  ``make_ode_map`` over ``Nt`` steps, ``ode_map_all_points`` writing ``xlist[i] = x`` into
  ``torch.empty([Nt, *x0.shape]).to(x0.device)`` (``CopySlices``); ``make_pat_func``'s custom
  ``autograd.Function`` whose forward runs the "physical system" and whose backward (a plain
  method, not a staticmethod) calls ``torch.set_grad_enabled(True)``,
  ``torch.autograd.functional.vjp`` of a digital model on ``ctx.saved_tensors`` and
  ``torch.set_grad_enabled(False)``. The systems are damped/undamped coupled pendula written
  for the tests (the repository's live in notebooks), trained with Adam.
Changes, the same on both sides: parameters overwritten from seeded NumPy streams, the random
draws (``randn``) taken from a NumPy stream, synthetic data, tiny sizes, BatchNorm running
statistics reset after the mock forward (it ran on each library's own initial parameters).
"""
import functools
import io
import json
import logging
import os

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, default_dtype, grads as _grads, init_uniform, \
    numpy_draws, same_error, same_logs, state as _state
from public_programs_round64_src import BYOL, ODE_UTILS, PAT, SKIPGRAM_MODEL, SKIPGRAM_TRAIN, program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


# ---------------------------------------------------------------- skip-gram (carlosfranzreb)

class Pairs:
    """A stand-in for the repository's ``Dataset`` (it reads a corpus file): ``n`` seeded
    ``(center, context, negatives)`` rows over ``n_words`` words, ``k`` negatives each, with the
    ``vocab`` and ``reset()`` the trainer uses."""

    def __init__(self, T, n=10, n_words=7, k=3, seed=0):
        rs = np.random.RandomState(seed)
        self.T, self.resets = T, 0
        self.rows = [(int(rs.randint(n_words)), int(rs.randint(n_words)), rs.randint(0, n_words, k))
                     for _ in range(n)]
        self.vocab = type("Vocab", (), {"n_words": n_words, "entries": [f"w{i}" for i in range(n_words)]})()

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        a, b, c = self.rows[i]
        return self.T.tensor(a), self.T.tensor(b), self.T.tensor(c)

    def reset(self):
        self.resets += 1


def skipgram(T, n_words=7, n_dims=4):
    """The model module's namespace and a ``Skipgram`` with seeded tables."""
    ns = program(T, SKIPGRAM_MODEL)
    return ns, init_uniform(T, ns.Skipgram(n_words, n_dims), 1, 1.0)


@pytest.fixture
def info_log():
    """The root logger's INFO records as text while the test runs."""
    buf, handler, root = io.StringIO(), logging.StreamHandler(), logging.getLogger()
    handler.setStream(buf)
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield buf
    root.removeHandler(handler)
    root.setLevel(level)


def _train(T, tmp, log, rows, batch, epochs):
    ns, model = skipgram(T)
    trainer_ns = program(T, SKIPGRAM_TRAIN, Skipgram=ns.Skipgram, Dataset=Pairs)
    data = Pairs(T, n=rows)
    trainer = trainer_ns.ModelTrainer(5, model, data)
    folder = tmp / T.__name__
    os.makedirs(folder / "skipgram" / "embeddings")
    cwd = os.getcwd()
    os.chdir(folder)
    start = log.tell()
    try:
        trainer.train(batch, epochs, 0.01)
    finally:
        os.chdir(cwd)
    saved = folder / "skipgram" / "embeddings" / "5"
    entries = json.load(open(saved / "entries.json"))
    last = T.load(str(saved / f"epoch_{epochs}.pt"))
    facts = [data.resets, trainer.cnt, trainer.current_loss, trainer.epoch_loss, entries, sorted(last)]
    return log.getvalue()[start:], facts, _state(model) + _arr(*last.values())


def test_skipgram_train_logs_and_saves(tmp_path, info_log):
    # 10 rows in batches of 4: the last batch has 2 rows; 2 epochs
    (ref_log, ref_facts, ref), (got_log, got_facts, got) = (
        _train(T, tmp_path, info_log, 10, 4, 2) for T in (torch, tracegrad))
    assert ref_log.count("Avg. loss of epoch") == 2, ref_log
    same_logs(ref_log, got_log, 2e-5)
    assert ref_facts == got_facts == [2, 0, 0, 0, [f"w{i}" for i in range(7)],
                                      ["input_vectors.weight", "output_vectors.weight"]]
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_skipgram_log_every_100_batches(tmp_path, info_log):
    # 101 batches of one row (the ``noise.ndim == 1`` branch): the 100-batch log of the
    # tensor ``current_loss`` (its f-string), then the epoch's
    (ref_log, _, ref), (got_log, _, got) = (_train(T, tmp_path, info_log, 101, 1, 1) for T in (torch, tracegrad))
    assert ref_log.count("Avg. loss in the last 100 batches") == 1, ref_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: ref if T is torch else got, tol=5e-5)


def _running_loss(T):
    _, model = skipgram(T)
    data = Pairs(T, n=5)
    current = 0
    for batch in T.utils.data.DataLoader(data, batch_size=2):   # rows 2, 2, 1
        loss = -model(*batch)
        current -= loss
    current.backward()
    g = current.grad_fn
    names = [type(g).__name__, type(g.next_functions[0][0]).__name__, current.requires_grad]
    return _arr(current, model.input_vectors.weight.grad, model.output_vectors.weight.grad), names


def test_skipgram_running_loss_keeps_history():
    # ``self.current_loss -= loss`` from the int 0: the sum keeps every batch's graph
    ref, got = _running_loss(torch), _running_loss(tracegrad)
    assert ref[1] == got[1] == ["SubBackward0", "SubBackward0", True], (ref[1], got[1])
    _compare(lambda T: (ref if T is torch else got)[0], tol=2e-5)


def _one_negative(T):
    _, model = skipgram(T)
    loss = -model(T.tensor([0, 1, 2]), T.tensor([1, 2, 3]), T.tensor([[4], [0], [1]]))
    assert tuple(loss.shape) == (3,)
    loss.backward()


def test_skipgram_one_negative_fails_alike():
    msgs = same_error(torch, tracegrad, _one_negative)
    assert all(m.startswith("grad can be implicitly created only for scalar outputs") for m in msgs), msgs


# ---------------------------------------------------------------- BYOL / SimSiam (lucidrains)

def backbone(T):
    """A tiny CNN whose ``children()[-2]`` is ``Flatten`` (the hooked hidden layer)."""
    net = T.nn.Sequential(T.nn.Conv2d(3, 4, 3), T.nn.ReLU(), T.nn.AdaptiveAvgPool2d(1), T.nn.Flatten(),
                          T.nn.Linear(4, 3))
    return init_uniform(T, net, 2)


def byol(T, use_momentum=True, net=None):
    """``BYOL`` on the tiny backbone (6x6 images, projections of 5, hidden 8) with two fixed
    augmentations, its parameters seeded after the mock forward and the running statistics and
    target that forward left behind reset."""
    ns = program(numpy_draws(T, 0), BYOL)
    learner = ns.BYOL(backbone(T) if net is None else net, image_size=6, projection_size=5,
                      projection_hidden_size=8, augment_fn=lambda x: x.flip(-1),
                      augment_fn2=lambda x: x * 0.9, use_momentum=use_momentum)
    init_uniform(T, learner, 3)
    for m in learner.modules():
        if isinstance(m, T.nn.BatchNorm1d):
            m.reset_running_stats()
    if use_momentum:
        learner.reset_moving_average()
    return ns, learner


def _images(T, rs, n=4):
    return T.tensor(rs.rand(n, 3, 6, 6).astype(np.float32))


def _byol_train(T, use_momentum):
    _, learner = byol(T, use_momentum)
    opt = T.optim.Adam(learner.parameters(), lr=3e-4)     # the README's loop
    rs = np.random.RandomState(4)
    losses, first, facts = [], None, []
    for _ in range(3):
        loss = learner(_images(T, rs))
        opt.zero_grad()
        loss.backward()
        first = first or _grads(learner.online_encoder) + _grads(learner.online_predictor)
        opt.step()
        if use_momentum:
            target = learner.target_encoder
            before = list(target.parameters())
            learner.update_moving_average()
            facts += [all(a is b for a, b in zip(before, target.parameters())),
                      any(p.requires_grad or p.grad is not None for p in target.parameters()),
                      sorted(learner.state_dict()) == sorted(learner.online_encoder.state_dict()) and None]
        losses += _arr(loss)
    learner.eval()
    emb = learner(_images(T, rs, 1), return_embedding=True)
    return losses, first, _arr(*emb), _state(learner), facts + sorted(learner.state_dict())


@pytest.mark.parametrize("use_momentum", [True, False], ids=["byol", "simsiam"])
def test_byol_readme_loop(use_momentum):
    ref, got = _byol_train(torch, use_momentum), _byol_train(tracegrad, use_momentum)
    assert ref[4] == got[4]
    # the first step's grads (those of the Linear biases in front of a BatchNorm are 0 but for
    # float noise of 3e-5)
    _compare(lambda T: (ref if T is torch else got)[1], tol=1e-4)
    _compare(lambda T: (ref if T is torch else got)[0], tol=1e-4)
    # the Linear biases in front of each BatchNorm get gradients of 1e-8 noise, which Adam turns
    # into lr-sized steps of either sign (lr=3e-4, the README's; 3 steps part them by 2e-3 at
    # most), and the layers after them follow: parameters and embeddings agree within 2e-3
    _compare(lambda T: (ref if T is torch else got)[2], tol=2e-3)
    _compare(lambda T: (ref if T is torch else got)[3], tol=2e-3)


def _hook_facts(T):
    _, learner = byol(T)
    learner(_images(T, np.random.RandomState(0)))
    online, target = learner.online_encoder, learner.target_encoder
    hooks = list(target.net[-2]._forward_hooks.values())
    return [online.hidden is target.hidden, len(hooks), hooks[0].__self__ is target, target.hidden,
            online.hidden, target.net is online.net, type(online.projector).__name__,
            [p.requires_grad for p in target.parameters()]]


def test_byol_deepcopy_rebinds_the_hook():
    # ``copy.deepcopy`` copies the bound hook with the wrapper: the target's hook fills the
    # target's own ``hidden`` dict (emptied again by ``get_representation``)
    assert _hook_facts(torch) == _hook_facts(tracegrad) == [False, 1, True, {}, {}, False, "Sequential",
                                                            [False] * 10]


def test_byol_batch_of_one():
    msgs = same_error(torch, tracegrad, lambda T: byol(T)[1](T.ones(1, 3, 6, 6)))
    assert msgs[0] == msgs[1] == ("you must have greater than 1 sample when training, due to the "
                                  "batchnorm in the projection layer"), msgs

    def eval_one(T):
        _, learner = byol(T)
        learner(_images(T, np.random.RandomState(1)))       # running statistics, the target
        learner.eval()
        return _arr(learner(T.ones(1, 3, 6, 6)), *learner(T.ones(1, 3, 6, 6), return_embedding=True))
    _compare(eval_one, tol=2e-5)


def test_simsiam_has_no_moving_average():
    msgs = same_error(torch, tracegrad, lambda T: byol(T, use_momentum=False)[1].update_moving_average())
    assert msgs[0] == msgs[1] and msgs[0].startswith("you do not need to update the moving average"), msgs


def test_byol_double_backbone():
    # ``projector.to(hidden)`` follows a float64 backbone, but the mock image of ``__init__`` is
    # float32: the convolution's dtype error in both
    same_error(torch, tracegrad, lambda T: byol(T, net=backbone(T).double()))

    def f64(T):                     # with float64 as the default dtype, everything is float64
        with default_dtype(T, T.float64):
            _, learner = byol(T)
            opt = T.optim.SGD(learner.parameters(), lr=0.1)
            rs = np.random.RandomState(2)
            out = []
            for _ in range(2):
                loss = learner(T.tensor(rs.rand(4, 3, 6, 6)))
                opt.zero_grad()
                loss.backward()
                opt.step()
                learner.update_moving_average()
                out += _arr(loss)
            return out + _state(learner)
    _compare(f64, tol=1e-9)


# ---------------------------------------------------------------- physics-aware training (RK4)

def pendula(T, damping):
    """Coupled pendula ``x[..., 0]`` angles, ``x[..., 1]`` velocities, with eigenfrequencies
    ``w0`` and a coupling ``k``: the "physical system" (``sin``, damped) or the digital model
    (small angles, undamped)."""
    def ode(x, w0, k):
        q, p = x[..., 0], x[..., 1]
        restoring = T.sin(q) if damping else q
        return T.stack((p, -restoring * w0 ** 2 + k * (q.roll(1, -1) - q) - damping * p), -1)
    return ode


def pat(T):
    ode, pat_ns = program(T, ODE_UTILS), program(T, PAT)
    f_pat = pat_ns.make_pat_func(ode.make_ode_map(pendula(T, 0.1), 5, 0.1),
                                 ode.make_ode_map(pendula(T, 0.0), 5, 0.1))
    w0, k = T.nn.Parameter(T.tensor([1.0, 1.5, 2.0])), T.nn.Parameter(T.tensor(0.3))
    return ode, f_pat, w0, k


def _pat_train(T):
    ode, f_pat, w0, k = pat(T)
    opt = T.optim.Adam([w0, k], lr=0.05)
    rs, out = np.random.RandomState(0), []
    for _ in range(3):
        x0, y = T.tensor(rs.randn(4, 3, 2).astype(np.float32)), T.tensor(rs.randn(4, 3).astype(np.float32))
        pred = f_pat(x0, w0, k)[..., 0]
        loss = ((pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        out += _arr(loss, w0.grad, k.grad, w0, k)
    # the backward left grad mode on (``set_grad_enabled(False)`` was inside the engine's call)
    facts = [T.is_grad_enabled(), type(pred.grad_fn).__name__, type(f_pat(x0, w0, k).grad_fn).__name__]
    x0 = T.tensor(rs.randn(2, 3, 2).astype(np.float32), requires_grad=True)
    xs = ode.ode_map_all_points(pendula(T, 0.0), x0, 4, 0.1, w0, k)
    xs.sum().backward()
    facts.append(type(xs.grad_fn).__name__)
    out += _arr(xs, x0.grad, w0.grad, k.grad)
    with T.no_grad():
        out += _arr(ode.ode_map_all_points(pendula(T, 0.1), x0, 4, 0.1, w0, k))
    return out, facts


def test_pat_rk4_training():
    ref, got = _pat_train(torch), _pat_train(tracegrad)
    assert ref[1] == got[1] == [True, "SelectBackward0", "funcBackward", "CopySlices"], (ref[1], got[1])
    _compare(lambda T: (ref if T is torch else got)[0], tol=2e-5)


def _pat_grads(T):
    # the gradient is the digital model's vector-Jacobian product at the saved inputs, not the
    # physical system's
    ode, f_pat, w0, k = pat(T)
    x0 = T.tensor(np.random.RandomState(3).randn(2, 3, 2).astype(np.float32), requires_grad=True)
    f_pat(x0, w0, k).pow(2).sum().backward()
    digital = ode.make_ode_map(pendula(T, 0.0), 5, 0.1)
    w0b, kb = w0.detach().requires_grad_(), k.detach().requires_grad_()
    x0b = x0.detach().requires_grad_()
    with T.no_grad():
        v = 2 * f_pat(x0, w0, k)
    T.autograd.backward(digital(x0b, w0b, kb), v)
    return _arr(x0.grad, w0.grad, k.grad, x0b.grad, w0b.grad, kb.grad)


def test_pat_grads_are_the_digital_models():
    ref = _pat_grads(torch)
    for a, b in zip(ref[:3], ref[3:]):                          # what the test relies on, in torch
        np.testing.assert_allclose(a, b, rtol=1e-6)
    _compare(_pat_grads, tol=2e-5)
