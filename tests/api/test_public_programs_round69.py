"""A sixty-ninth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round69_src.py, executed with ``torch`` bound to either module. Each
test compares losses, printed logs, warnings, gradients and parameters after optimizer steps:

- adambielski/siamese-triplet (BSD-3-Clause), ``networks.py``, ``losses.py`` and ``metrics.py``
  at 4ed17ef, ``utils.py`` at 658b583 and ``trainer.py`` at 93e365d (siamese and triplet
  embedding networks on MNIST): ``fit`` stepping a ``StepLR`` before the epoch's first
  ``optimizer.step()`` (the scheduler-order warning), ``train_epoch``'s ``loss_inputs +=
  (target,)`` tuples and ``loss.item()`` logs, ``test_epoch`` under ``torch.no_grad()``; online
  triplet and pair mining that leaves the tensors for NumPy (``labels.cpu().data.numpy()``,
  ``itertools.combinations``, NumPy arrays indexed by a ``LongTensor`` column, a ``LongTensor``
  indexed by NumPy's ``nonzero()`` tuple, ``distance_matrix`` indexed by NumPy columns and by
  ``LongTensor(np.array(...))`` pairs, ``np.argpartition`` of distances, ``np.random.choice``
  of hard negatives), the selected triplets gathered by ``embeddings[triplets[:, 0]]``; the
  ``AverageNonzeroTripletsMetric`` of ``len(triplets)``, ``AccumulatedAccuracyMetric`` adding a
  0-d tensor to an int; ``EmbeddingNetL2``'s in-place ``output /= norm`` on a Linear output;
  ``SiameseNet``/``TripletNet`` batches of tuples with an empty target list. (Round 52 ran this
  repository's ``train_epoch`` with the embedding net; the losses, miners, metrics and ``fit``
  are new here.)
- mateuszbuda/brain-segmentation-pytorch (MIT), ``unet.py`` and ``loss.py`` at 3329695,
  ``train.py`` and ``utils.py``'s ``dsc``/``log_images`` at 11e6c78 (a U-Net for brain MRI
  segmentation): blocks built by a ``@staticmethod`` from an ``OrderedDict`` of named layers
  (``BatchNorm2d``, ``ReLU(inplace=True)``), skip connections by ``torch.cat``, a sigmoid
  output and the Dice loss of ``[:, 0].contiguous().view(-1)``; ``main`` alternating train and
  valid phases under ``torch.set_grad_enabled(phase == "train")``, the valid predictions taken
  to NumPy for the per-volume DSC, logged images drawn in NumPy from ``x[:, channel]``,
  ``torch.save`` of the best ``state_dict`` and ``json.dump(vars(args))``.
- Iversy/Deep (no license file), ``lab5/ock.py``, ``basic.py``, ``advance.py`` and ``grad.py``
  at 70580a5 (Grad-CAM on two CNNs): a forward hook keeping the target layer's output and a
  non-full ``register_backward_hook`` keeping ``grad_output[0]`` (torch's FutureWarning about
  multi-node forwards), ``one_hot[0][class_idx] = 1`` with a 0-d ``argmax`` tensor,
  ``output.backward(gradient=one_hot)``, the map normalised and taken to NumPy; the shared
  ``nn.ReLU`` module as target (its hooks fire at every use: the last forward's activations
  with the first use's gradients broadcast together), a pooling target whose shapes do not
  broadcast, and ``self.apply`` of ock.py's ``kaiming_normal_(mode='fan_out')`` init.
Changes, the same on both sides: parameters from seeded NumPy streams, synthetic images for
MNIST and the MRI volumes, loaders without shuffling or workers, ``print`` collected, float64
where Adam turns float32's last bits into visible differences over a few steps, tiny sizes
(``UNet``'s ``init_features``; the data set and batch sizes ``fit``/``main`` are given).
"""
import functools
import json
import os
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, default_dtype, init_uniform, same_error, same_logs
from public_programs_round69_src import BRAIN_TRAIN, BRAIN_UNET, BRAIN_UTILS, GRADCAM, SIAMESE_LOSSES, \
    SIAMESE_METRICS, SIAMESE_NETWORKS, SIAMESE_TRAINER, SIAMESE_UTILS, program

torch = pytest.importorskip("torch")

from api.test_public_programs_round66 import seeded_nn  # noqa: E402  (seeded layers)

_compare = functools.partial(compare, torch, tracegrad)


def _both_f64(run):
    """``run(torch)`` and ``run(tracegrad)`` with float64 as the default dtype."""
    out = []
    for T in (torch, tracegrad):
        with default_dtype(T, T.float64):
            out.append(run(T))
    return out


# ---------------------------------------------------------------- siamese-triplet (adambielski)

SIAMESE = SIAMESE_NETWORKS + SIAMESE_LOSSES + SIAMESE_UTILS + SIAMESE_METRICS + SIAMESE_TRAINER


def siamese_program(T, log):
    """The five siamese-triplet files, ``print`` appending to ``log``."""
    return program(T, SIAMESE, print=lambda *a: log.append(" ".join(map(str, a))))


def mnist(T, n=12, seed=0, classes=3):
    """``n`` 28x28 images of the default dtype with labels cycling through ``classes``."""
    rs = np.random.RandomState(seed)
    x = T.tensor(rs.rand(n, 1, 28, 28)).to(T.get_default_dtype())
    return x, T.tensor(np.arange(n) % classes)


def _fit(T, make, loaders, epochs=2, lr=1e-3):
    """trainer.fit on ``make(ns) -> (model, loss_fn, metrics)`` with Adam and the notebooks'
    ``StepLR(optimizer, 8, gamma=0.1)``; the log, warnings, learning rate and parameters."""
    log = []
    ns = siamese_program(T, log)
    model, loss_fn, metrics = make(ns)
    init_uniform(T, model, 1, 0.1)
    optimizer = T.optim.Adam(model.parameters(), lr=lr)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, 8, gamma=0.1, last_epoch=-1)
    np.random.seed(3)                   # the random/semi-hard negatives' np.random.choice
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ns.fit(*loaders(T), model, loss_fn, optimizer, scheduler, epochs, False, 1, metrics=metrics)
    order = [w for w in rec if "lr_scheduler.step()" in str(w.message)]
    facts = [len(order), {w.category for w in order}, scheduler.get_last_lr(), scheduler.last_epoch]
    return facts, log, [p.detach().numpy().copy() for p in model.parameters()]


def _check_fit(run):
    (ref_facts, ref_log, ref), (got_facts, got_log, got) = _both_f64(run)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[:2] == [1, {UserWarning}], ref_facts
    same_logs("\n".join(ref_log), "\n".join(got_log), 1e-6)
    _compare(lambda T: ref if T is torch else got, tol=1e-7)
    return ref_log


def _batches(T, n=12, batch_size=6):
    ds = T.utils.data.TensorDataset(*mnist(T, n))
    return T.utils.data.DataLoader(ds, batch_size=batch_size), T.utils.data.DataLoader(ds, batch_size=n)


_SELECTORS = {
    "all": lambda ns, m: ns.AllTripletSelector(),
    "hardest": lambda ns, m: ns.HardestNegativeTripletSelector(m),
    "random": lambda ns, m: ns.RandomNegativeTripletSelector(m),
    "semihard": lambda ns, m: ns.SemihardNegativeTripletSelector(m),
}


@pytest.mark.parametrize("selector", sorted(_SELECTORS))
def test_online_triplet_fit(selector):
    def make(ns, margin=1.0):
        return (ns.EmbeddingNet(), ns.OnlineTripletLoss(margin, _SELECTORS[selector](ns, margin)),
                [ns.AverageNonzeroTripletsMetric()])
    log = _check_fit(lambda T: _fit(T, make, _batches))
    assert len(log) == 6 and "Average nonzero triplets" in log[0], log


@pytest.mark.parametrize("balance", [False, True])
def test_online_contrastive_fit(balance):
    # HardNegativePairSelector ranks the negative pairs' distances by np.argpartition; the
    # balanced AllPositivePairSelector draws by torch.randperm (other streams), so it is run
    # without training and checked for what the draw keeps
    if not balance:
        def make(ns):
            return ns.EmbeddingNet(), ns.OnlineContrastiveLoss(1.0, ns.HardNegativePairSelector()), []
        log = _check_fit(lambda T: _fit(T, make, _batches))
        assert log[0].startswith("Train: [0/12 (0%)]\tLoss: "), log
        return

    def pairs(T):
        ns = siamese_program(T, [])
        x, y = mnist(T, 12)
        pos, neg = ns.AllPositivePairSelector(balance=True).get_pairs(None, y)
        return [pos.dtype == T.int64, tuple(pos.shape), tuple(neg.shape)], pos.numpy(), neg.numpy(), y.numpy()
    for T in (torch, tracegrad):
        facts, pos, neg, y = pairs(T)
        assert facts == [True, (18, 2), (18, 2)], facts
        assert np.all(y[pos[:, 0]] == y[pos[:, 1]]) and np.all(y[neg[:, 0]] != y[neg[:, 1]])
        assert len({tuple(p) for p in neg}) == 18 and np.all(neg[:, 0] < neg[:, 1])
    _compare(lambda T: [pairs(T)[1]])


def test_classification_net_accuracy_fit():
    def make(ns):
        return ns.ClassificationNet(ns.EmbeddingNet(), 3), torch_or_tg(ns).nn.functional.nll_loss, \
            [ns.AccumulatedAccuracyMetric()]
    log = _check_fit(lambda T: _fit(T, make, _batches))
    assert "\tAccuracy: " in log[0] and "Validation set" in log[2], log


def torch_or_tg(ns):
    """The module a program namespace's ``torch`` is bound to."""
    return ns.torch


class _Pairs:
    """siamese-triplet's SiameseMNIST/TripletMNIST shapes: ``((x1, x2), target)`` or
    ``((anchor, positive, negative), [])`` items from fixed index tuples."""

    def __init__(self, x, y, triplets):
        self.x, self.y, self.triplets = x, y, triplets

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if self.triplets:
            return (self.x[i], self.x[(i + 3) % 12], self.x[(i + 1) % 12]), []
        j = (i + 3) % 12 if i % 2 else (i + 1) % 12
        return (self.x[i], self.x[j]), int(self.y[i] == self.y[j])


def _pair_loaders(kind):
    def loaders(T):
        x, y = mnist(T, 12)
        ds = _Pairs(x, y, kind != "siamese")
        return T.utils.data.DataLoader(ds, batch_size=4), T.utils.data.DataLoader(ds, batch_size=8)
    return loaders


@pytest.mark.parametrize("kind", ["siamese", "triplet"])
def test_siamese_and_triplet_net_fit(kind):
    def make(ns):
        if kind == "siamese":
            return ns.SiameseNet(ns.EmbeddingNet()), ns.ContrastiveLoss(1.0), []
        return ns.TripletNet(ns.EmbeddingNet()), ns.TripletLoss(1.0), []
    log = _check_fit(lambda T: _fit(T, make, _pair_loaders(kind)))
    assert len(log) == 6, log


def test_embedding_net_l2_inplace_norm_fails_alike():
    # ``output /= output.pow(2)...`` overwrites the tensor ``pow`` saved for its backward: the
    # first backward of the triplet loss fails with the same RuntimeError
    def run(T):
        with default_dtype(T, T.float64):
            _fit(T, lambda ns: (ns.TripletNet(ns.EmbeddingNetL2()), ns.TripletLoss(1.0), []),
                 _pair_loaders("triplet"))
    msgs = same_error(torch, tracegrad, run)
    assert all("modified by an inplace operation" in m for m in msgs), msgs


# ---------------------------------------------------------------- brain-segmentation (mateuszbuda)

class _Records(list):
    """The stand-in tensorboard ``Logger``'s calls."""

    def logger(self):
        records = self

        class Logger:
            def __init__(self, log_dir):
                records.append(("logs", os.path.basename(log_dir)))

            def scalar_summary(self, tag, value, step):
                records.append((tag, float(value), step))

            def image_list_summary(self, tag, images, step):
                records.append((tag, np.array(images), step))
        return Logger


def brain_program(T, records, log, features=2, **extra):
    """unet.py, loss.py, utils.py's helpers and train.py with stand-ins: a seeded MRI data set
    (two slices per patient), the logger, ``tqdm``, augmentations, medpy's connected component
    (the identity: the random masks have many components) and a loader without shuffling or
    workers; ``UNet`` built with ``init_features=features``."""
    class Dataset(T.utils.data.Dataset):
        in_channels, out_channels = 3, 1

        def __init__(self, images_dir, subset, image_size, transform=None, random_sampling=True):
            n = 6 if subset == "train" else 4
            rs = np.random.RandomState(len(subset))
            dtype = np.dtype(str(T.get_default_dtype()).split(".")[-1])
            self.x = rs.rand(n, 3, image_size, image_size).astype(dtype)
            self.y = (rs.rand(n, 1, image_size, image_size) > 0.6).astype(dtype)
            self.patient_slice_index = [(i // 2, i % 2) for i in range(n)]

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return T.tensor(self.x[i]), T.tensor(self.y[i])

    def DataLoader(ds, batch_size, shuffle=False, drop_last=False, num_workers=0, worker_init_fn=None):
        return T.utils.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)

    ns = program(T, BRAIN_UNET + BRAIN_UTILS + BRAIN_TRAIN, nn=seeded_nn(T, 3, names=("Conv2d", "ConvTranspose2d")),
                 Dataset=Dataset, Logger=records.logger(), DataLoader=DataLoader, tqdm=lambda it, total=None: it,
                 transforms=lambda **kw: None, largest_connected_component=lambda a: a,
                 print=lambda *a: log.append(" ".join(map(str, a))), **extra)
    unet = ns.UNet
    ns.UNet = lambda in_channels, out_channels: unet(in_channels, out_channels, init_features=features)
    return ns


def _brain_main(T, tmp, epochs=2, image_size=32):
    records, log = _Records(), []
    ns = brain_program(T, records, log)
    args = types.SimpleNamespace(batch_size=2, epochs=epochs, lr=1e-2, device="cuda:0", workers=0, vis_images=3,
                                 vis_freq=10, weights=os.path.join(tmp, "weights"), logs=os.path.join(tmp, "logs"),
                                 images="kaggle_3m", image_size=image_size, aug_scale=0.05, aug_angle=15)
    ns.main(args)
    with open(os.path.join(tmp, "logs", "args.json")) as fp:
        saved_args = {k: v for k, v in json.load(fp).items() if k not in ("weights", "logs")}
    sd = T.load(os.path.join(tmp, "weights", "unet.pt"))
    tags = [(r[0], r[2]) for r in records[1:]]
    images = [r[1] for r in records if r[0].startswith("image/")]
    values = np.array([r[1] for r in records[1:] if not r[0].startswith("image/")])
    return [records[0], tags, log[0].split(": ")[0], saved_args, sorted(sd)], \
        [values] + images + [sd[k].numpy() for k in sorted(sd)], float(log[0].split(": ")[1])


def test_brain_unet_train_main(tmp_path):
    # float64 and 32x32 images: Adam at lr 1e-2 through ten BatchNorms turns float32's last
    # bits into visible differences within six steps, with either library; at 16x16 the
    # bottleneck's BatchNorm normalises two values per channel and its ill-conditioned
    # gradients do the same to float64's
    paths = iter([tmp_path / "torch", tmp_path / "tracegrad"])
    (ref_facts, ref, ref_best), (got_facts, got, got_best) = _both_f64(lambda T: _brain_main(T, next(paths)))
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[2] == "Best validation mean DSC" and ref_facts[3]["image_size"] == 32
    # two valid phases: their images (2 + 1 of the 3 asked for), loss and DSC; the weights saved
    assert [t for t, _ in ref_facts[1]] == ["image/0", "image/1", "val_loss", "val_dsc"] * 2, ref_facts[1]
    assert ref[1].shape == (2, 32, 32, 3) and ref[1].dtype == np.uint8
    assert "bottleneck.bottlenecknorm1.num_batches_tracked" in ref_facts[4]
    np.testing.assert_allclose(got_best, ref_best, rtol=1e-9)
    _compare(lambda T: ref if T is torch else got, tol=1e-7)


def test_dice_loss_asserts_shapes_alike():
    def run(T):
        ns = program(T, BRAIN_UNET)
        ns.DiceLoss()(T.rand(2, 1, 4, 4), T.rand(2, 4, 4))
    same_error(torch, tracegrad, run)


def test_unet_forward_backward_dice():
    def run(T):
        ns = program(T, BRAIN_UNET)
        net = init_uniform(T, ns.UNet(3, 1, init_features=2), 1)
        rs = np.random.RandomState(0)
        x = T.tensor(rs.rand(2, 3, 16, 16).astype(np.float32))
        y = T.tensor((rs.rand(2, 1, 16, 16) > 0.6).astype(np.float32))
        out = net(x)
        loss = ns.DiceLoss()(out, y)
        loss.backward()
        names = [n for n, _ in net.named_children()][:3] + list(dict(net.encoder1.named_children()))
        assert names == ["encoder1", "pool1", "encoder2", "enc1conv1", "enc1norm1", "enc1relu1", "enc1conv2",
                         "enc1norm2", "enc1relu2"], names
        return _arr(loss, out) + [p.grad.numpy() for _, p in sorted(net.named_parameters())] + \
            [b.numpy() for _, b in sorted(net.named_buffers())]
    _compare(run, tol=1e-4)


# ---------------------------------------------------------------- Grad-CAM (Iversy/Deep)

def gradcam_program(T, seed=5):
    """ock.py, basic.py, advance.py and grad.py, the convolutions and linear layers drawing
    their parameters from a NumPy stream."""
    return program(T, GRADCAM, nn=seeded_nn(T, seed, names=("Conv2d", "Linear")))


def _image(T, seed=0):
    return T.tensor(np.random.RandomState(seed).rand(1, 3, 128, 128).astype(np.float32))


def _cam(T, cls, layer, class_idx=None):
    ns = gradcam_program(T)
    model = getattr(ns, cls)().eval()
    cam = ns.GradCAM(model, getattr(model, layer))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        heat = cam(_image(T), class_idx)
    hook_warnings = sorted({(w.category.__name__, str(w.message).split(".")[0]) for w in rec})
    return [hook_warnings, type(heat).__name__], [heat, cam.gradients.numpy(), cam.activations.numpy(),
                                                  model.conv1.weight.grad.numpy()]


@pytest.mark.parametrize("cls,layer,class_idx", [("BasicCNN", "conv2", None), ("AdvancedCNN", "conv3", 2),
                                                 ("AdvancedCNN", "bn3", None), ("BasicCNN", "relu", None)])
def test_gradcam_hooks(cls, layer, class_idx):
    (ref_facts, ref), (got_facts, got) = _cam(torch, cls, layer, class_idx), _cam(tracegrad, cls, layer, class_idx)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    if layer == "relu":
        # the shared ReLU: activations of its last use (fc1's), gradients of its first (conv1's)
        assert ref_facts[0] == [] and ref[1].shape == (1, 32, 128, 128) and ref[2].shape == (1, 128)
        assert ref[0].shape == (128,)
    else:
        assert ref_facts[0] == [("FutureWarning", "Using a non-full backward hook when the forward contains "
                                 "multiple autograd Nodes is deprecated and will be removed in future versions")]
        assert ref[0].min() == 0.0 and ref[0].max() <= 1.0      # class 2's map is all zeros
    _compare(lambda T: ref if T is torch else got, tol=1e-3)


def test_gradcam_pool_target_fails_alike():
    # MaxPool2d is used three times: the gradients (32 channels, its first use) and the
    # activations (128 channels, its last) do not broadcast
    msgs = same_error(torch, tracegrad, lambda T: _cam(T, "AdvancedCNN", "pool"))
    assert "must match the size of tensor b (128)" in msgs[0] and msgs[0] == msgs[1], msgs


def test_kaiming_fan_out_init():
    def run(T):
        ns = gradcam_program(T)
        model = ns.AdvancedCNN(init_type="kaiming")
        convs = [model.conv1, model.conv2, model.conv3]
        stds = [float(c.weight.detach().std()) * np.sqrt(c.out_channels * 9 / 2) for c in convs]
        assert all(0.9 < s < 1.1 for s in stds), stds
        assert all(float(c.bias.detach().abs().max()) == 0.0 for c in convs)
        return _arr(model.fc2.weight, model.bn1.weight)   # untouched: the seeded draw, ones
    _compare(run)


@pytest.mark.parametrize("shape,wshape", [((2, 3), (1,)), ((2, 3, 4, 4), (3,)), ((3,), ()), ((3,), (1,)), ((), (1,))])
def test_prelu_weight_view_node(shape, wshape):
    # torch views the weight to the input's rank before its kernel when the ranks differ: a
    # ViewBackward0 edge, and a non-full module backward hook (GradCAM's) sees that weight's
    # gradient shape, e.g. (1, 1) for nn.PReLU() on (N, F) features
    def run(T):
        x = T.tensor(np.asarray(np.random.RandomState(0).randn(*shape), np.float32), requires_grad=True)
        w = T.full(wshape, 0.25, requires_grad=True)
        y = T.nn.functional.prelu(x, w)
        edges = [type(f).__name__.split("::")[-1] if f is not None else None for f, _ in y.grad_fn.next_functions]
        saved = tuple(y.grad_fn._saved_weight.shape)
        y.sum().backward()
        return edges, saved, _arr(y, x.grad, w.grad)
    (ref_edges, ref_saved, ref), (got_edges, got_saved, got) = run(torch), run(tracegrad)
    assert (ref_edges, ref_saved) == (got_edges, got_saved), (ref_edges, ref_saved, got_edges, got_saved)
    _compare(lambda T: ref if T is torch else got)


def test_prelu_module_non_full_backward_hook_grad_input():
    def run(T):
        m = T.nn.PReLU()
        seen = []
        m.register_backward_hook(lambda mod, gi, go: seen.append([tuple(g.shape) for g in gi]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(T.tensor(np.random.RandomState(1).randn(2, 3).astype(np.float32), requires_grad=True)).sum().backward()
        return seen
    assert run(torch) == run(tracegrad) == [[(2, 3), (1, 1)]]
