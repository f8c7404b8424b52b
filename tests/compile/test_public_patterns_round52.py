"""Compile patterns of the fifty-second round of public programs
(tests/api/test_public_programs_round52.py; sources in tests/public_programs_round52_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` over
three calls on the same initial state:

- milesial/Pytorch-UNet (GPL-3.0): ``train.py``'s step (BCE-with-logits, ``clip_grad_value_``,
  RMSprop with momentum) through the U-Net whose ``Up`` pads by one-element tensors built from
  ``x.size()``; the later step with the Dice loss, whose ``sets_sum.item() == 0`` reads a value.
- adambielski/siamese-triplet (BSD-3-Clause): ``trainer.py``'s step for the triplet net (three
  passes through one shared embedding net, ``type(outputs) in (tuple, list)``); the online
  hard-negative triplet mining, which copies embeddings to NumPy and picks indices there.
- cure-lab/LTSF-Linear (Apache-2.0): DLinear's per-channel heads written by slice assignment into
  ``torch.zeros(...).to(x.device)``, MSE and Adam, the learning rate changed in ``param_groups``
  between compiled calls.
- juditacs/deep-morphology (MIT): ``AutoPackedLSTM`` (NumPy sort of the lengths, pack, unpack,
  reorder) inside an SGD step.

Found and fixed: the programs run from a ``SimpleNamespace`` of an exec'd source's globals, which
holds Python's builtins dict as ``__builtins__``. When a compiled step's trace was abandoned (the
U-Net step's first call, RMSprop's state made), ``_lowering/pystate.py`` put the objects the step
reads back with ``dict.clear`` + ``dict.update``, and clearing the builtins dict emptied Python's
builtins for the whole process (``NameError: name 'dict' is not defined`` there, then in every
later call, pytest dying silently). ``_copy`` now skips the builtins dict, which is no user state
(test_object_holding_builtins_namespace_compiled). Left alone: a module ``__dict__`` held the same
way is still put back by clear + update (only tracegrad's own code runs in between).
"""
import numpy as np
import pytest

import tracegrad
from public_programs_round52_src import DLINEAR, PACKED, SIAMESE, UNET_PARTS, program

from .test_public_patterns_round50 import _arr, _close   # round 50's snapshot and comparison

torch = pytest.importorskip("torch")


def _init(T, module, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in module.named_parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def _state(net):
    return _arr(*[t for _, t in sorted(net.state_dict().items())])


def _runs(runner, ref_tol, later_tol, comp_tol=1e-5):
    """torch, tracegrad eager and tracegrad compiled: the first call's values within ``ref_tol``
    of torch's and ``comp_tol`` of eager tracegrad's; the later calls' values and the final state
    within ``later_tol`` of both (Adam's and RMSprop's steps turn float32 rounding in a
    near-zero gradient into a difference of about ``lr``, see the api file, and a compiled
    program's fused sums round in another order); returns the compile stats."""
    ref, eager, comp = runner(torch, False), runner(tracegrad, False), runner(tracegrad, True)
    _close(ref[0][0], eager[0][0], ref_tol)
    _close(ref[0][1], eager[0][1], later_tol)
    _close(eager[0][0], comp[0][0], comp_tol)
    _close(eager[0][1], comp[0][1], max(comp_tol, later_tol))
    return comp[1].stats


def _unet_runs(T, compiled, dice):
    p = program(T, UNET_PARTS)
    net = _init(T, p.UNet(n_channels=3, n_classes=1, bilinear=True), 1)
    optimizer = T.optim.RMSprop(net.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9)
    criterion = T.nn.BCEWithLogitsLoss()

    def step(imgs, true_masks):
        masks_pred = net(imgs)
        loss = criterion(masks_pred, true_masks)
        if dice:
            loss = loss + p.dice_loss(T.sigmoid(masks_pred.squeeze(1)), true_masks.squeeze(1).float(),
                                      multiclass=False)
        optimizer.zero_grad()
        loss.backward()
        T.nn.utils.clip_grad_value_(net.parameters(), 0.1)
        optimizer.step()
        return loss, masks_pred

    if compiled:
        step = T.compile(step)
    first, later = [], []
    for i in range(3):
        rs = np.random.RandomState(20 + i)
        imgs = T.tensor(rs.uniform(0, 1, (2, 3, 19, 21)).astype(np.float32))
        true_masks = T.tensor(rs.randint(0, 2, (2, 1, 19, 21)).astype(np.float32))
        (first if i == 0 else later).extend(_arr(*step(imgs, true_masks)))
    return (first, later + _state(net)), step


def test_unet_step_compiled():
    st = _runs(lambda T, c: _unet_runs(T, c, False), 1e-5, 4e-2)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_unet_step_with_dice_item_compiled():
    st = _runs(lambda T, c: _unet_runs(T, c, True), 1e-5, 4e-2)
    assert len(st["graph_breaks"]) == 1 and "item" in str(st["graph_breaks"][0]), st


def _triplet_runs(T, compiled, online):
    p = program(T, SIAMESE)
    emb = _init(T, p.EmbeddingNet(), 8, scale=0.1)
    if online:
        model, loss_fn = emb, p.OnlineTripletLoss(1.0, p.HardestNegativeTripletSelector(1.0))
    else:
        model, loss_fn = p.TripletNet(emb), p.TripletLoss(1.0)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3)

    def step(data, target):
        # trainer.py's train_epoch body for one batch
        optimizer.zero_grad()
        outputs = model(*data)
        if type(outputs) not in (tuple, list):
            outputs = (outputs,)
        loss_inputs = outputs
        if target is not None:
            target = (target,)
            loss_inputs += target
        loss_outputs = loss_fn(*loss_inputs)
        loss = loss_outputs[0] if type(loss_outputs) in (tuple, list) else loss_outputs
        loss.backward()
        optimizer.step()
        return (loss,) + tuple(outputs)

    if compiled:
        step = T.compile(step)
    first, later = [], []
    for i in range(3):
        rs = np.random.RandomState(40 + i)
        x = T.tensor(rs.uniform(0, 1, (6, 1, 28, 28)).astype(np.float32))
        if online:
            out = step((x,), T.tensor(np.array([0, 1, 2, 0, 1, 2])))
        else:
            out = step((x[:2], x[3:5], x[[1, 2]]), None)
        (first if i == 0 else later).extend(_arr(*out))
    return (first, later + _state(model)), step


def test_triplet_step_compiled():
    st = _runs(lambda T, c: _triplet_runs(T, c, False), 1e-5, 1e-3)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_online_triplet_mining_step_compiled():
    st = _runs(lambda T, c: _triplet_runs(T, c, True), 1e-5, 2.5e-2)
    assert st["graph_breaks"], st


class _Configs:
    seq_len, pred_len, enc_in = 24, 6, 3

    def __init__(self, individual):
        self.individual = individual


def _dlinear_runs(T, compiled, individual):
    p = program(T, DLINEAR)
    model = _init(T, p.Model(_Configs(individual)), 9, scale=0.2)
    model_optim = T.optim.Adam(model.parameters(), lr=0.005)
    criterion = T.nn.MSELoss()

    def step(batch_x, batch_y):
        model_optim.zero_grad()
        outputs = model(batch_x)
        f_dim = 0
        outputs = outputs[:, -6:, f_dim:]
        batch_y = batch_y[:, -6:, f_dim:].to("cpu")
        loss = criterion(outputs, batch_y)
        loss.backward()
        model_optim.step()
        return loss, outputs

    if compiled:
        step = T.compile(step)
    first, later = [], []
    for i in range(3):
        rs = np.random.RandomState(50 + i)
        series = np.cumsum(rs.randn(2, 30, 3), axis=1).astype(np.float32)
        (first if i == 0 else later).extend(_arr(*step(T.tensor(series[:, :24]), T.tensor(series[:, 21:]))))
        for param_group in model_optim.param_groups:
            param_group['lr'] = 0.005 * 0.5 ** (i + 1)
    return (first, later + _state(model)), step


@pytest.mark.parametrize("individual", [False, True])
def test_dlinear_step_compiled(individual):
    st = _runs(lambda T, c: _dlinear_runs(T, c, individual), 1e-5, 1e-5)
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def test_object_holding_builtins_namespace_compiled():
    # the harness's ``program`` namespace (a SimpleNamespace of an exec'd program's globals)
    # holds Python's builtins dict as ``__builtins__``; an abandoned trace put the objects the
    # step reads back by ``dict.clear`` + ``dict.update``, and the clear emptied the builtins of
    # the whole process (NameError: name 'dict' is not defined, then every later call)
    import builtins
    import types

    def runs(T, compiled):
        ns = types.SimpleNamespace(**{"__builtins__": vars(builtins), "scale": 0.5})
        lin = _init(T, T.nn.Linear(3, 2), 11)
        opt = T.optim.Adam(lin.parameters(), lr=0.01)   # its state made on the first call

        def step(x):
            loss = (lin(x) * ns.scale).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        if compiled:
            step = T.compile(step)
        out = [_arr(step(T.tensor(np.random.RandomState(i).randn(4, 3).astype(np.float32))))[0]
               for i in range(3)]
        assert len(vars(builtins)) > 100 and len(out) == 3 and isinstance(ns.__builtins__, dict)
        return out + _state(lin), step

    ref, eager, comp = runs(torch, False), runs(tracegrad, False), runs(tracegrad, True)
    _close(ref[0], eager[0], 1e-5)
    _close(eager[0], comp[0], 1e-5)


def _packed_runs(T, compiled):
    p = program(T, PACKED)
    m = _init(T, p.AutoPackedLSTM(4, 5), 12)
    head = _init(T, T.nn.Linear(5, 2), 13)
    opt = T.optim.SGD(list(m.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9)

    def step(x, lengths, y):
        out, (h, c) = m(x, lengths)
        loss = T.nn.functional.cross_entropy(head(h[-1]), y) + out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, out

    if compiled:
        step = T.compile(step)
    first, later = [], []
    for i in range(3):
        rs = np.random.RandomState(70 + i)
        x = T.tensor(rs.randn(5, 3, 4).astype(np.float32))
        out = step(x, [3, 5, 2], T.tensor(rs.randint(0, 2, 3)))
        (first if i == 0 else later).extend(_arr(*out))
    return (first, later + _state(m) + _state(head)), step


def test_auto_packed_lstm_step_compiled():
    # juditacs/deep-morphology's AutoPackedLSTM (NumPy argsort of the lengths, pack, LSTM,
    # unpack, reorder) in an SGD step: compiled values equal eager's and torch's
    _runs(_packed_runs, 1e-5, 1e-5)
