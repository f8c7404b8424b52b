"""A fifty-second round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round52_src.py, executed with ``torch`` bound to either module. Each test
compares forward values, losses, every gradient after ``backward`` and the whole ``state_dict``
(parameters and buffers) after a few optimizer steps:

- milesial/Pytorch-UNet (GPL-3.0), ``unet/unet_parts.py`` and ``unet/unet_model.py`` at 07debeb (the UNet with a width divisor ``W``),
  ``utils/dice_score.py`` at c0147f1 and ``train.py``'s step at 07debeb: ``DoubleConv`` (conv,
  batch norm, in-place ReLU), ``MaxPool2d``, bilinear ``Upsample(align_corners=True)`` or
  ``ConvTranspose2d`` up paths, ``F.pad`` whose pad amounts are one-element int64 tensors
  (``torch.tensor([x2.size()[2] - x1.size()[2]])`` and ``diffX // 2``) on an odd-sized image,
  ``BCEWithLogitsLoss``/``CrossEntropyLoss`` plus the multiclass Dice loss (``torch.dot``,
  ``sets_sum.item() == 0``, Python ``sum`` of tensors), RMSprop with momentum and weight decay,
  ``clip_grad_value_``.
- adambielski/siamese-triplet (BSD-3-Clause), ``networks.py``, ``losses.py``, ``utils.py`` and
  ``trainer.py``'s ``train_epoch`` at 4ed17ef: the 28x28 embedding net with ``PReLU``,
  ``EmbeddingNetL2``'s in-place ``/=`` on a non-leaf output, Siamese/triplet nets with the
  contrastive and triplet losses, online hard-negative pair and triplet mining (labels by
  ``.cpu().data.numpy()``, ``torch.LongTensor`` of NumPy index arrays, indexing by the 2-D result
  of NumPy ``nonzero()``, a distance matrix indexed by NumPy arrays and by a 0-d tensor pair,
  ``np.argpartition``/``np.argmax`` on tensors' NumPy copies), Adam with ``StepLR``.
- cure-lab/LTSF-Linear (Apache-2.0), ``models/DLinear.py`` at da9e674 and ``exp/exp_main.py``'s
  training step: the moving-average decomposition (``repeat`` padding, ``AvgPool1d`` over a
  permuted series), shared or per-channel ``Linear`` heads whose weights are replaced by
  ``nn.Parameter`` after construction, per-channel outputs written into a ``zeros(...).to(device)``
  by slice assignment, MSE, Adam, the ``type1`` learning-rate halving in ``param_groups``.
- juditacs/deep-morphology (MIT), ``deep_morphology/models/packed_lstm.py`` at 0085ec2 and
  ``deep_morphology/models/test_packed_sequence.py`` at 1724926: ``AutoPackedLSTM`` (NumPy
  ``argsort`` of the lengths, ``pack_padded_sequence`` of NumPy-indexed input, ``(h, c)``
  reordered by a NumPy index array), and the packed bidirectional-encoder seq2seq with dot
  attention (``super(self.__class__, self)``, ``torch.LongTensor`` of nested lists,
  ``pad_packed_sequence``, directions summed, ``e[:nl] + e[nl:]`` states, ``bmm`` attention,
  outputs written by ``all_decoder_outputs[t] = ...``, ``CrossEntropyLoss(ignore_index=PAD)``,
  greedy decoding by ``max(-1)`` in ``run_inference``); ``BaseModel`` replaced by a stand-in
  holding one Adam, the dataset by a small sorted-batch stub.

Changes, the same on both sides: tiny sizes (U-Net widths divided by 16 as the ``W`` argument,
batch 2 of 3x19x21 images; siamese batch 6 of 1x28x28; DLinear length 24 -> 6, 3 channels),
parameters overwritten from seeded NumPy streams, synthetic data, loops over lists in place of
``DataLoader``s, logging/tqdm/tensorboard and metrics left out, ``AllPositivePairSelector``'s
``torch.randperm`` balancing not used (two libraries' random streams differ).

Found: no value differences. EmbeddingNetL2's in-place ``/=`` makes torch's own backward raise
"modified by an inplace operation"; tracegrad raises the same RuntimeError (tested). Adam's and
RMSprop's first steps turn float32 rounding in gradients that are zero in exact arithmetic into
differences of about the learning rate, so values after optimizer steps are compared more
loosely than the first forward/backward (which agree to about 1e-7). Under ``tracegrad.compile``
a harness detail found a real bug (fixed in ``_lowering/pystate.py``, see
tests/compile/test_public_patterns_round52.py).
"""
import numpy as np
import pytest

import tracegrad
from public_programs_round52_src import DLINEAR, PACKED, SIAMESE, UNET_PARTS, program

torch = pytest.importorskip("torch")


def _init(T, module, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in module.named_parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def _arr(*ts):
    return [np.array(t.detach().numpy(), copy=True) for t in ts]


def _state(net):
    return _arr(*[t for _, t in sorted(net.state_dict().items())])


def _grads(net):
    # a parameter the loss does not reach (DLinear's unused Linear_Decoder) keeps grad None
    return [np.array(p.grad is None) if p.grad is None else _arr(p.grad)[0]
            for _, p in sorted(net.named_parameters())]


def _compare(run, tol=1e-5, later_tol=None):
    """``run(T)`` returns ``(tight, later)``: values up to the first optimizer step (forward,
    loss, gradients), compared within ``tol``, and values after steps. Adam's and RMSprop's first
    steps move every weight by about ``lr * sign(grad)`` whatever the gradient's size, so float32
    rounding noise in a gradient that is zero in exact arithmetic (the bias of a conv that batch
    norm follows, a dead PReLU unit) becomes a ``2 * lr`` difference: those are compared within
    ``later_tol``."""
    ref, got = run(torch), run(tracegrad)
    for part, t in ((0, tol), (1, later_tol or tol)):
        assert len(ref[part]) == len(got[part])
        for i, (a, b) in enumerate(zip(ref[part], got[part])):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape, (part, i, a.shape, b.shape)
            assert a.dtype == b.dtype, (part, i, a.dtype, b.dtype)
            np.testing.assert_allclose(b, a, rtol=t, atol=t, err_msg=f"part {part} item {i}")


# ---------------------------------------------------------------- milesial/Pytorch-UNet

def _unet_run(T, bilinear, n_classes):
    p = program(T, UNET_PARTS)
    # float64: RMSprop's steps after the first turn the rounding noise of gradients near zero
    # into lr-sized moves, and in float32 the CPU's kernels (AVX-512 against AVX2) left two of
    # 2,304 predictions 0.05 apart after three steps
    net = _init(T, p.UNet(n_channels=3, n_classes=n_classes, bilinear=bilinear), 1).double()
    optimizer = T.optim.RMSprop(net.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9)
    criterion = T.nn.CrossEntropyLoss() if n_classes > 1 else T.nn.BCEWithLogitsLoss()
    first, later = [], []
    for step in range(3):
        out = first if step == 0 else later
        rs = np.random.RandomState(20 + step)
        imgs = T.tensor(rs.uniform(0, 1, (2, 3, 19, 21)))
        if n_classes > 1:
            true_masks = T.tensor(rs.randint(0, n_classes, (2, 19, 21)))
        else:
            true_masks = T.tensor(rs.randint(0, 2, (2, 1, 19, 21)).astype(np.float64))
        imgs = imgs.to(device="cpu", dtype=T.float64)
        mask_type = T.float64 if net.n_classes == 1 else T.long
        true_masks = true_masks.to(device="cpu", dtype=mask_type)

        masks_pred = net(imgs)
        loss = criterion(masks_pred, true_masks)
        if n_classes > 1:   # the later train.py adds the Dice loss
            loss = loss + p.dice_loss(
                F_softmax(T, masks_pred).float(),
                T.nn.functional.one_hot(true_masks, net.n_classes).permute(0, 3, 1, 2).float(),
                multiclass=True)
        else:
            loss = loss + p.dice_loss(T.sigmoid(masks_pred.squeeze(1)), true_masks.squeeze(1).double(),
                                      multiclass=False)
        out.append(loss.item())
        out += _arr(masks_pred)

        optimizer.zero_grad()
        loss.backward()
        if step == 0:
            out += _grads(net)
        T.nn.utils.clip_grad_value_(net.parameters(), 0.1)
        optimizer.step()
    later += _state(net)
    net.eval()
    with T.no_grad():
        later += _arr(net(imgs))
    return first, later


def F_softmax(T, x):
    return T.nn.functional.softmax(x, dim=1)


@pytest.mark.parametrize("bilinear,n_classes", [(True, 1), (False, 3)])
def test_unet_training_steps(bilinear, n_classes):
    _compare(lambda T: _unet_run(T, bilinear, n_classes), later_tol=4e-2)


def test_unet_tensor_pad_amounts():
    # Up.forward pads by one-element int64 tensors: the same padded values and gradient
    def run(T):
        p = program(T, UNET_PARTS)
        up = _init(T, p.Up(8, 4, bilinear=True), 3)
        x1 = T.tensor(np.random.RandomState(4).randn(1, 4, 2, 3).astype(np.float32), requires_grad=True)
        x2 = T.tensor(np.random.RandomState(5).randn(1, 4, 5, 7).astype(np.float32))
        y = up(x1, x2)
        y.pow(2).sum().backward()
        return _arr(y, x1.grad), []
    _compare(run)


# ------------------------------------------------------------- adambielski/siamese-triplet

def _mnist_like(T, seed, n=6):
    rs = np.random.RandomState(seed)
    x = T.tensor(rs.uniform(0, 1, (n, 1, 28, 28)).astype(np.float32))
    y = T.tensor(np.array([0, 1, 2, 0, 1, 2][:n]))
    return x, y


def _siamese_online_run(T, kind):
    p = program(T, SIAMESE)
    model = _init(T, p.EmbeddingNet(), 7, scale=0.1)
    if kind == "triplet":
        loss_fn = p.OnlineTripletLoss(1.0, p.HardestNegativeTripletSelector(1.0))
    elif kind == "all_triplets":
        loss_fn = p.OnlineTripletLoss(1.0, p.AllTripletSelector())
    else:
        loss_fn = p.OnlineContrastiveLoss(1.0, p.HardNegativePairSelector())
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, 8, gamma=0.1, last_epoch=-1)
    loader = [_mnist_like(T, 30 + i) for i in range(2)]
    x, y = loader[0]
    e = model(x)
    lo = loss_fn(e, y)
    first = [lo[1]] if isinstance(lo, tuple) else []
    (lo[0] if isinstance(lo, tuple) else lo).backward()
    first += _arr(e) + _grads(model)
    later = []
    for epoch in range(2):
        later.append(p.train_epoch(loader, model, loss_fn, optimizer, False, 10, []))
        scheduler.step()
    later += _arr(model(x)) + _state(model)
    return first, later


@pytest.mark.parametrize("kind", ["triplet", "all_triplets", "pairs"])
def test_siamese_online_mining(kind):
    _compare(lambda T: _siamese_online_run(T, kind), later_tol=2.5e-2)


def _siamese_offline_run(T, kind):
    p = program(T, SIAMESE)
    emb = _init(T, p.EmbeddingNet(), 8, scale=0.1)
    if kind == "siamese":
        model, loss_fn = p.SiameseNet(emb), p.ContrastiveLoss(1.0)
    elif kind == "triplet":
        model, loss_fn = p.TripletNet(emb), p.TripletLoss(1.0)
    else:
        model = _init(T, p.ClassificationNet(emb, 3), 8, scale=0.1)
        loss_fn = T.nn.NLLLoss()
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3)
    loader = []
    for i in range(3):
        x, y = _mnist_like(T, 40 + i)
        if kind == "siamese":
            loader.append(((x[:3], x[3:]), (y[:3] == y[[0, 2, 1]]).long()))  # target 1 for same class
        elif kind == "triplet":
            loader.append(((x[:2], x[3:5], x[[1, 2]]), ()))
        else:
            loader.append((x, y))
    data, target = loader[0]
    outputs = model(*data) if isinstance(data, tuple) else (model(data),)
    loss = loss_fn(*outputs, *((target,) if len(target) else ()))
    loss.backward()
    first = _arr(loss, *outputs) + _grads(model)
    later = [p.train_epoch(loader, model, loss_fn, optimizer, False, 10, [])]
    return first, later + _state(model)


@pytest.mark.parametrize("kind", ["siamese", "triplet", "classification"])
def test_siamese_offline_training(kind):
    _compare(lambda T: _siamese_offline_run(T, kind), later_tol=1e-3)


# ------------------------------------------------------------------- cure-lab/LTSF-Linear

class _Configs:
    seq_len, pred_len, enc_in = 24, 6, 3

    def __init__(self, individual):
        self.individual = individual


def _dlinear_run(T, individual):
    p = program(T, DLINEAR)
    model = p.Model(_Configs(individual))
    later = []
    # the 1/seq_len weights (the biases are the libraries' own random draws)
    first = _arr(*[t for n, t in sorted(model.state_dict().items())
                   if "Decoder" not in n and n.endswith("weight")])
    _init(T, model, 9, scale=0.2)
    model_optim = T.optim.Adam(model.parameters(), lr=0.005)
    criterion = T.nn.MSELoss()
    pred_len, learning_rate = 6, 0.005
    for epoch in range(2):
        for i in range(2):
            rs = np.random.RandomState(50 + 2 * epoch + i)
            series = np.cumsum(rs.randn(2, 24 + 6, 3), axis=1).astype(np.float32)
            batch_x = T.tensor(series[:, :24]).float()
            batch_y = T.tensor(series[:, 24 - 3:]).float()
            model_optim.zero_grad()
            outputs = model(batch_x)
            f_dim = 0
            outputs = outputs[:, -pred_len:, f_dim:]
            batch_y = batch_y[:, -pred_len:, f_dim:].to("cpu")
            loss = criterion(outputs, batch_y)
            out = first if epoch == 0 and i == 0 else later
            out.append(loss.item())
            loss.backward()
            if epoch == 0 and i == 0:
                out += _arr(outputs) + _grads(model)
            model_optim.step()
        lr_adjust = {epoch + 1: learning_rate * (0.5 ** ((epoch + 1 - 1) // 1))}
        lr = lr_adjust[epoch + 1]
        for param_group in model_optim.param_groups:
            param_group['lr'] = lr
    return first, later + _state(model)


@pytest.mark.parametrize("individual", [False, True])
def test_dlinear_training(individual):
    _compare(lambda T: _dlinear_run(T, individual), later_tol=1e-5)


def test_siamese_l2_embedding_inplace_division_error():
    # EmbeddingNetL2.forward divides its output in place by a norm computed from that output:
    # torch's backward finds the tensor the norm's graph saved modified (version counter), and
    # so must tracegrad's: the same RuntimeError naming the in-place modification
    def run(T):
        p = program(T, SIAMESE)
        model = _init(T, p.EmbeddingNetL2(), 7, scale=0.1)
        x, y = _mnist_like(T, 30)
        e = model(x)
        loss = p.OnlineTripletLoss(1.0, p.AllTripletSelector())(e, y)[0]
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            loss.backward()
        return info.value
    run(torch)
    run(tracegrad)


# ------------------------------------------------------------------ juditacs/deep-morphology

@pytest.mark.parametrize("batch_first", [False, True])
def test_auto_packed_lstm(batch_first):
    # AutoPackedLSTM sorts by length with NumPy, packs, runs, unpacks and restores the order;
    # with batch_first=True it unpacks time-major all the same (as written) and permutes time
    # steps by the batch order: the same on both sides
    def run(T):
        p = program(T, PACKED)
        m = _init(T, p.AutoPackedLSTM(4, 5, batch_first=batch_first), 12)
        shape = (3, 5, 4) if batch_first else (5, 3, 4)
        x = T.tensor(np.random.RandomState(13).randn(*shape).astype(np.float32), requires_grad=True)
        out, (h, c) = m(x, [3, 5, 2])
        (out.sum() + h.pow(2).sum() + c.sum()).backward()
        return _arr(out, h, c, x.grad) + _grads(m), []
    _compare(run)


class _Vocabs:
    src = {"PAD": 0, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    tgt = {"PAD": 0, "SOS": 1, "x": 2, "y": 3, "z": 4}


class _Batch:
    def __init__(self, src, tgt):
        order = sorted(range(len(src)), key=lambda i: -len(src[i]))   # packing wants them sorted
        src, tgt = [src[i] for i in order], [tgt[i] for i in order]
        n, m = max(map(len, src)), max(map(len, tgt))
        self.src = [s + [0] * (n - len(s)) for s in src]
        self.src_len = [len(s) for s in src]
        self.tgt = [t + [0] * (m - len(t)) for t in tgt]
        self.order = order


class _Data:
    vocabs = _Vocabs()

    def __init__(self, seed):
        rs = np.random.RandomState(seed)
        self.samples = [([int(v) for v in rs.randint(1, 6, rs.randint(2, 6))],
                         [int(v) for v in rs.randint(2, 5, rs.randint(2, 5))]) for _ in range(6)]

    def __len__(self):
        return len(self.samples)

    def batched_iter(self, batch_size):
        for i in range(0, len(self.samples), batch_size):
            b = _Batch(*zip(*[(list(s), list(t)) for s, t in self.samples[i:i + batch_size]]))
            yield b, b.order


class _Config:
    dropout, embedding_size, hidden_size, num_layers = 0.0, 6, 5, 1
    share_embedding, mask_pad_in_loss, batch_size, lr = False, True, 3, 0.01

    def __init__(self, packed):
        self.packed = packed


@pytest.mark.parametrize("packed", [True, False])
def test_packed_seq2seq_training(packed):
    def run(T):
        p = program(T, PACKED)
        data = _Data(60)
        model = _init(T, p.TestPackedSeq2seq(_Config(packed), data), 14)
        model.init_optimizers()
        batch, _ = next(data.batched_iter(3))
        output = model(batch)
        loss = model.compute_loss(batch, output)
        loss.backward()
        first = _arr(output, loss) + _grads(model)
        for opt in model.optimizers:
            opt.zero_grad()
        later = [model.run_epoch(data, True) for _ in range(2)]
        later += [np.stack(model.run_inference(data))] if not packed else \
            [np.array(len(model.run_inference(data)))]
        return first, later + _state(model)
    _compare(run, later_tol=1e-3)
