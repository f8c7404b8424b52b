"""A sixty-second round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round62_src.py, executed with ``torch`` bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- FarhanRah/Taxi-Fare-Prediction (no license file), ``TabularModel.py`` at 305c955 and
  ``main.py`` at 9779165 (a tabular regression with entity embeddings): a pandas-like frame's
  ``astype('category')`` codes stacked into an int64 tensor, ``nn.ModuleList`` of embeddings
  looked up per column by ``x_cat[:, i]``, ``BatchNorm1d`` on the continuous columns, an MLP
  with ``ReLU(inplace=True)``/``BatchNorm1d``/``Dropout``, ``torch.sqrt`` of ``MSELoss`` as
  RMSE, Adam, f-string logs of ``loss.item()`` and of the test loss formatted by ``:.8f`` (a
  0-d tensor's ``__format__``), ``torch.save`` of the state dict.
- timomernick/pytorch-capsule (no license file) at d2e9aa8 (Dynamic Routing Between Capsules):
  primary capsules as a Python list of conv units registered by ``add_module``, ``stack`` and
  ``squash``; the routing by ``torch.stack([x] * n, dim=2)``, ``cat([W] * batch)``, 5-D
  ``matmul``, ``F.softmax`` without ``dim`` of a 4-D tensor (the implicit dim 1) and logits
  updated by ``mean(dim=0, keepdim=True)``; the margin loss with ``torch.max`` of a tensor and
  a one-element tensor; the reconstruction loss masks the winning capsule by
  ``batch_masked[v_max_index[batch_idx]] = ...`` (a 0-d index tensor, CopySlices); ``main.py``'s
  ``to_one_hot`` writing ``x_one_hot[i, x[i]] = 1.0``, ``print(network)``, Adam re-created per
  epoch, the test loop's ``Variable(..., volatile=True)``, ``max(1, keepdim=True)[1]``,
  ``eq``/``sum`` accumulated into a tensor printed by ``{}`` and ``{:.0f}``.
  As written ``loss.data[0]`` indexes a 0-d tensor (torch 0.3): IndexError in both.
- wonbeomjang/Knowledge-Distilling-PyTorch (MIT) at 4475879: ``train.py`` run as ``__main__``
  with its argparse flags, ``Params`` from JSON files, a teacher loaded by ``torch.load`` from a
  file ``torch.save`` wrote, ``fetch_output`` keeping the teacher's logits as NumPy arrays,
  ``train_model`` with ``torch.from_numpy(...).type_as(preds)`` and ``loss_kd`` (``F.kl_div``
  of temperature-scaled ``log_softmax``/``softmax`` with ``reduction='batchmean'`` plus
  ``cross_entropy``), ``SimpleModel``'s ``AdaptiveAvgPool2d(7)`` of a 2x2 map (windows that
  overlap), ``StepLR`` stepped with an explicit epoch (the deprecated form), a checkpoint per
  epoch.
- leftthomas/SimCLR (no license file), ``model.py`` at 45357c5 and ``main.py`` at 1e4dc8e: the
  encoder built from a backbone's ``named_children`` with ``conv1`` swapped and ``Linear``/
  ``MaxPool2d`` dropped, ``F.normalize``; the NT-Xent loss by ``exp(mm(out, out.t().contiguous())
  / temperature)``, a mask from ``ones_like - eye(...).bool()``, ``masked_select(...).view``;
  the weighted-kNN test by ``topk``, ``gather`` of expanded labels, ``scatter(dim, index,
  value=)``, ``argsort(descending=True)`` and ``any``.
- seanie12/real-nvp (no license file) at acf839e (RealNVP on two moons): coupling layers on
  ``x[:, ::2]``/``x[:, 1::2]`` (strided slices) swapped by parity, ``exp(s) * x1 + t`` and the
  inverse, ``log_det += ld`` into ``torch.zeros(batch_size).to(x.device)``, ``self.flows[::-1]``
  (a sliced ``ModuleList``), a ``MultivariateNormal`` prior's ``log_prob`` and ``sample``,
  ``.to(next(self.flow.parameters()))`` (to a tensor: its dtype and device), ``model.eval()``
  and ``no_grad`` sampling; ``main.py`` run as ``__main__`` with its flags. As written it calls
  ``torch.cuda.current_device()`` first: AssertionError in both without a GPU.
Changes, the same on both sides: parameters overwritten from seeded NumPy streams, synthetic
data, tiny sizes, dropout 0 (random streams differ), stand-ins for pandas, torchvision, tqdm and
tensorboard.
"""
import contextlib
import functools
import io
import json
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, same_error, \
    same_logs, state as _state
from public_programs_round62_src import CAPSNET, CAPSNET_MAIN, KD_LOSS, KD_MODELS, KD_TRAIN, KD_UTILS, \
    RNVP_MAIN, RNVP_MODELS, SIMCLR_MAIN, SIMCLR_MODEL, TAXI_MAIN, TAXI_MODEL, program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # implicit softmax dims, volatile, StepLR's epoch
        yield


def no_dropout(T, model):
    """``model``'s ``nn.Dropout`` modules set to 0 (the libraries' random streams differ)."""
    for m in model.modules():
        if isinstance(m, T.nn.Dropout):
            m.p = 0.0
    return model


def seeded(T, cls, seed, scale=0.3):
    """``cls`` whose instances get parameters from a seeded NumPy stream and no dropout right
    after their own ``__init__`` (the programs build their models themselves)."""
    class Seeded(cls):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            init_uniform(T, no_dropout(T, self), seed, scale)
    Seeded.__name__ = Seeded.__qualname__ = cls.__name__
    return Seeded


class Clock:
    """``time`` for the logs: ``time()`` always 0, so "Duration: 0 seconds." on both sides."""

    @staticmethod
    def time():
        return 0.0


# ---------------------------------------------------------------- taxi fares (entity embeddings)

class Column:
    """A pandas ``Series`` stand-in: ``values``, ``astype('category')`` and ``cat.codes``/
    ``cat.categories`` (sorted unique values, int8 codes as pandas gives)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def astype(self, kind):
        assert kind == "category"
        col = Column(self.values)
        cats, codes = np.unique(self.values, return_inverse=True)
        col.cat = types.SimpleNamespace(categories=list(cats), codes=Column(codes.astype(np.int8)))
        return col


class Frame(dict):
    """A ``DataFrame`` stand-in: ``df[name]`` a Column, ``df[[names]]`` a 2-D Column."""

    def __getitem__(self, key):
        if isinstance(key, list):
            return Column(np.stack([dict.__getitem__(self, k).values for k in key], 1))
        return dict.__getitem__(self, key)


def taxi_frame(n=24, seed=0):
    """The columns ``main.py`` has after its feature engineering, ``n`` rows."""
    rs = np.random.RandomState(seed)
    hour = rs.randint(0, 24, n)
    # a spread of degrees: over a city's 0.05 the float32 rounding of 43.7 (4e-6), summed in
    # another order by each library, moves BatchNorm's normalised inputs by 1e-4
    lat = 43.7 + rs.uniform(-1.0, 1.0, (2, n))
    lon = -79.4 + rs.uniform(-1.0, 1.0, (2, n))
    dist = np.hypot(lat[0] - lat[1], lon[0] - lon[1]) * 111.0
    cols = dict(hour=hour, am_or_pm=np.where(hour > 12, "pm", "am"),
                weekday=np.array(["Fri", "Mon", "Sat", "Sun", "Thu", "Tue", "Wed"])[rs.randint(0, 7, n)],
                pickup_latitude=lat[0], pickup_longitude=lon[0], dropoff_latitude=lat[1],
                dropoff_longitude=lon[1], passenger_count=rs.randint(1, 5, n).astype(np.int64),
                dist_km=dist, fare_amount=2.5 + 1.8 * dist + rs.uniform(0, 1, n))
    return Frame({k: Column(v) for k, v in cols.items()})


# 60000 rows and 300 epochs in the script: 24 rows (the last 4 the test split), 30 epochs
_TAXI_SIZES = [("batch_size = 60000", "batch_size = 24"), ("epochs = 300", "epochs = 30")]


def _taxi(T, tmp):
    src = TAXI_MAIN
    for a, b in _TAXI_SIZES:
        assert a in src
        src = src.replace(a, b)
    model_cls = program(T, TAXI_MODEL).TabularModel
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, src, df=taxi_frame(), TabularModel=seeded(T, model_cls, 3), time=Clock)
    saved = T.load(str(tmp / "TaxiFareRegressionModel.pt"))
    assert len(g.losses) == 30 and all(isinstance(x, T.Tensor) and x.grad_fn is not None for x in g.losses)
    assert sorted(saved) == sorted(g.model.state_dict())
    return buf.getvalue(), [np.array([x.item() for x in g.losses])], \
        _arr(g.y_val, g.loss) + _grads(g.model) + _state(g.model) + _arr(*[t for _, t in sorted(saved.items())])


def test_taxi_fare_main(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (ref_log, *ref), (got_log, *got) = _taxi(torch, tmp_path), _taxi(tracegrad, tmp_path)
    assert "Epoch:  26  Loss:" in got_log and "Root Mean Square Error:" in got_log, got_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: (ref if T is torch else got)[0], tol=5e-5)
    # a hidden unit whose ReLU passes every row has a bias that the next BatchNorm takes away:
    # its gradient is float noise (1e-9, of either sign), which Adam turns into steps of ~lr, so
    # such biases walk apart by up to 3e-3 in 30 epochs (6e-3 seen in a full-suite worker, whose
    # XLA programs may round differently) and the other values by 1e-4..1e-3; the losses and the
    # log above hold the trajectory to 5e-5
    _compare(lambda T: (ref if T is torch else got)[1], tol=2e-2)


# ---------------------------------------------------------------- capsule network

# main.py's sizes are MNIST's (28x28, 256 conv channels, 32*6*6 primary capsules): 20x20 images,
# 4 channels, 32*2*2 capsules, 2 epochs
_CAPS_SIZES = [("image_width=28", "image_width=20"), ("image_height=28", "image_height=20"),
               ("conv_outputs = 256", "conv_outputs = 4"), ("32 * 6 * 6", "32 * 2 * 2"),
               ("num_epochs = 10", "num_epochs = 2")]


def capsnet_main(src=CAPSNET_MAIN):
    """main.py at the tiny sizes."""
    for a, b in _CAPS_SIZES:
        assert a in src
        src = src.replace(a, b)
    return src


def _capsnet(T, src, n_train=8, n_test=4):
    saved = []
    vutils = types.SimpleNamespace(save_image=lambda img, path: saved.append(_arr(img)[0]))
    net = program(T, CAPSNET, vutils=vutils)
    rs = np.random.RandomState(4)
    data = lambda n: T.utils.data.TensorDataset(T.tensor(rs.rand(n, 1, 20, 20).astype(np.float32)),
                                                T.tensor(rs.randint(0, 10, n)))
    # the settings section of main.py, with batches of 4 from synthetic images
    settings = dict(learning_rate=0.01, batch_size=4, test_batch_size=4, early_stop_loss=0.0001,
                    train_loader=T.utils.data.DataLoader(data(n_train), batch_size=4),
                    test_loader=T.utils.data.DataLoader(data(n_test), batch_size=4))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, src, CapsuleNetwork=seeded(T, net.CapsuleNetwork, 5), **settings)
    return buf.getvalue(), [np.array(g.last_loss)] + saved + _grads(g.network), _state(g.network)


def test_capsnet_main_as_written_fails_alike():
    msgs = same_error(torch, tracegrad, lambda T: _capsnet(T, capsnet_main()))
    assert all("invalid index of a 0-dim tensor" in m for m in msgs), msgs


def test_capsnet_main():
    # train's two ``loss.data[0]`` of the 0-d loss as ``loss.item()``; test's
    # ``network.loss(..., size_average=False).data[0]`` (the first sample's loss) stays: 1-D there
    src = capsnet_main().replace("loss.data[0]", "loss.item()")
    (ref_log, *ref), (got_log, *got) = _capsnet(torch, src), _capsnet(tracegrad, src)
    assert "CapsuleNetwork(" in got_log and "Test set: Average loss:" in got_log, got_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: (ref if T is torch else got)[0], tol=5e-5)
    # a few reconstruction weights have gradients near 0 (the gradients agree within 5e-5): Adam
    # at lr=0.01 turns their float noise into steps differing by up to 4e-4
    _compare(lambda T: (ref if T is torch else got)[1], tol=1e-3)


# ---------------------------------------------------------------- knowledge distillation

def progress(iterable, desc=None):
    """A stand-in for ``tqdm``: the iterable itself."""
    return iterable


class Writer:
    """A stand-in for tensorboard's ``SummaryWriter``: keeps the ``add_scalars`` calls."""

    def __init__(self, log_dir):
        self.log_dir, self.scalars = log_dir, []

    def add_scalars(self, tag, values, step):
        self.scalars.append((tag, sorted(values), step, [values[k] for k in sorted(values)]))


_KD_PARAMS = {"base": {"model_name": "base", "teacher_name": "teacher", "alpha": 0.9, "lr": 1e-3,
                       "temperature": 20, "num_epochs": 90, "batch_size": 4},
              "teacher": {"model_name": "teacher", "lr": 1e-3, "batch_size": 4}}
_KD_ARGV = ["train.py", "--num_epoch", "2", "--decay_epoch", "1", "--num_classes", "5",
            "--dataset", "cifar10", "--image_size", "8"]


def _kd(T, tmp, monkeypatch):
    """train.py as ``__main__`` in ``tmp``: the student (params/base.json) learns from a teacher
    whose checkpoint this function writes first."""
    for name, p in _KD_PARAMS.items():
        (tmp / "params").mkdir(exist_ok=True)
        (tmp / "params" / f"{name}.json").write_text(json.dumps(p))
    utils = program(T, KD_UTILS)
    models = program(T, KD_MODELS, tqdm=progress, AverageMeter=utils.AverageMeter, resnet=None,
                     densenet=None, vgg=None)
    teacher_dir = tmp / "checkpoints" / "cifar10" / "teacher"
    teacher_dir.mkdir(parents=True)
    teacher = seeded(T, models.Model, 7, 0.05)(5, utils.Params(str(tmp / "params" / "teacher.json")))
    T.save(teacher.state_dict(), str(teacher_dir / "final.pth"))

    rs = np.random.RandomState(8)
    data = lambda n: T.utils.data.TensorDataset(T.tensor(rs.randn(n, 3, 8, 8).astype(np.float32)),
                                                T.tensor(rs.randint(0, 5, n)))
    loaders = data(8), data(4)

    def get_loader(image_size, batch_size, dataset):
        assert (image_size, batch_size, dataset) == (8, 4, "cifar10")
        return tuple(T.utils.data.DataLoader(d, batch_size=batch_size) for d in loaders)

    writers = []
    monkeypatch.setattr("sys.argv", _KD_ARGV)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, KD_TRAIN, __name__="__main__", SummaryWriter=lambda d: writers.append(Writer(d)) or writers[-1],
                    tqdm=progress, Model=seeded(T, models.Model, 6, 0.05), loss_kd=program(T, KD_LOSS).loss_kd,
                    get_loader=get_loader, Params=utils.Params)
    saved = [T.load(str(tmp / "checkpoints" / "cifar10" / "base" / f"{i}.pth")) for i in range(2)]
    logs = [(tag, keys, step) for tag, keys, step, _ in writers[0].scalars]
    values = np.array([v for *_, vs in writers[0].scalars for v in vs])
    assert g.scheduler.last_epoch == 2 and g.student.epoch == 2
    return buf.getvalue(), logs, [values] + _arr(*g.teacher_train_ans, *g.teacher_val_ans) + \
        [np.array(g.optimizer.param_groups[0]["lr"])], \
        _state(g.student) + [a for s in saved for a in _arr(*[t for _, t in sorted(s.items())])]


def test_kd_train_main(tmp_path, monkeypatch):
    (tmp_path / "torch").mkdir(), (tmp_path / "tracegrad").mkdir()
    monkeypatch.chdir(tmp_path / "torch")
    ref = _kd(torch, tmp_path / "torch", monkeypatch)
    monkeypatch.chdir(tmp_path / "tracegrad")
    got = _kd(tracegrad, tmp_path / "tracegrad", monkeypatch)
    assert got[0] == ref[0] and "[*] There is no params in" in got[0], (ref[0], got[0])
    assert got[1] == ref[1] and got[1][0] == ("teacher_teaches_base /Loss", ["train", "val"], 0), got[1]
    _compare(lambda T: (ref if T is torch else got)[2], tol=5e-5)
    # parameters whose gradient is 0 but for float noise (conv biases whose ReLU passes every
    # position, which the next BatchNorm takes away; a classifier row of a unit that is off):
    # Adam (lr=1e-3) steps the noise, so those entries part by up to ~1.5 lr in the 4 steps
    _compare(lambda T: (ref if T is torch else got)[3], tol=2e-3)


# ---------------------------------------------------------------- SimCLR

def backbone(T):
    """A stand-in for torchvision's ``resnet50``: the children model.py walks (``conv1``, which
    it swaps, ``maxpool`` and ``fc``, which it drops), 2048 features after the pooling."""
    class ResNet(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = T.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = T.nn.BatchNorm2d(64)
            self.relu = T.nn.ReLU(inplace=True)
            self.maxpool = T.nn.MaxPool2d(3, 2, 1)
            self.layer1 = T.nn.Conv2d(64, 2048, 1, bias=False)
            self.avgpool = T.nn.AdaptiveAvgPool2d((1, 1))
            self.fc = T.nn.Linear(2048, 1000)
    return ResNet


class Bar:
    """A stand-in for ``tqdm``: iterates its iterable and prints each ``set_description``."""

    def __init__(self, iterable, desc=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_description(self, s):
        print(s)


def simclr_pairs(T, n, seed):
    """A ``CIFAR10Pair``-like dataset: two views and a label per item, ``targets`` a list."""
    rs = np.random.RandomState(seed)
    x1, x2 = (T.tensor(rs.randn(n, 3, 4, 4).astype(np.float32)) for _ in range(2))
    targets = [int(t) for t in rs.randint(0, 5, n)]

    class Pairs(T.utils.data.Dataset):
        def __init__(self):
            self.targets = targets

        def __len__(self):
            return n

        def __getitem__(self, i):
            return x1[i], x2[i], targets[i]
    return Pairs()


def _simclr(T, epochs=2):
    model = program(T, SIMCLR_MODEL, resnet50=backbone(T))
    net = init_uniform(T, model.Model(8), 9, 0.1)
    g = program(T, SIMCLR_MAIN, tqdm=Bar, utils=None, Model=None, pd=None, profile=None, clever_format=None,
                feature_dim=8, temperature=0.5, k=3, batch_size=4, epochs=epochs, c=5)
    names = g.train.__globals__
    optimizer = T.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-6)
    loader = T.utils.data.DataLoader(simclr_pairs(T, 8, 10), batch_size=4, shuffle=False, drop_last=True)
    memory = T.utils.data.DataLoader(simclr_pairs(T, 8, 10), batch_size=4, shuffle=False)
    tests = T.utils.data.DataLoader(simclr_pairs(T, 6, 11), batch_size=4, shuffle=False)
    buf, losses = io.StringIO(), []
    with contextlib.redirect_stdout(buf):
        for epoch in range(1, epochs + 1):
            names["epoch"] = epoch
            losses.append(g.train(net, loader, optimizer))
            acc = g.test(net, memory, tests)
    assert all(isinstance(x, float) for x in losses + list(acc))
    return buf.getvalue(), [np.array(losses + list(acc))] + _grads(net), _state(net)


def test_simclr_train_and_knn_test():
    (ref_log, *ref), (got_log, *got) = _simclr(torch), _simclr(tracegrad)
    assert "Train Epoch: [2/2] Loss:" in got_log and "Acc@5:100.00%" in got_log, got_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: (ref if T is torch else got)[0], tol=5e-5)
    # two channels of the backbone's BatchNorm bias pass ReLU everywhere and their shift is taken
    # away by the head's BatchNorm1d: gradients of 1e-7 noise (of 0.4 at most), which Adam
    # (lr=1e-3) steps, so those two entries part by ~2 lr over the 4 steps
    _compare(lambda T: (ref if T is torch else got)[1], tol=3e-3)


# ---------------------------------------------------------------- RealNVP

class Plot:
    """A stand-in for ``matplotlib.pyplot``: keeps what ``scatter`` is given, as arrays."""

    def __init__(self):
        self.points = []

    def scatter(self, x, y, **kw):
        self.points += _arr(x, y)

    def __getattr__(self, name):
        return lambda *a, **k: None


def moons(T, seed):
    """``DatasetMoons`` from a seeded NumPy stream (sklearn's ``make_moons`` shape, noise 0.05)."""
    rs = np.random.RandomState(seed)

    class DatasetMoons:
        def sample(self, n):
            a = rs.uniform(0, np.pi, n)
            upper = rs.rand(n) < 0.5
            x = np.where(upper, np.cos(a), 1 - np.cos(a))
            y = np.where(upper, np.sin(a), 0.5 - np.sin(a))
            pts = np.stack([x, y], 1) + rs.normal(0, 0.05, (n, 2))
            return T.from_numpy(pts.astype(np.float32))
    return DatasetMoons


def normal_prior(T, seed):
    """``MultivariateNormal`` whose ``sample`` draws its standard normals from a NumPy stream."""
    rs = np.random.RandomState(seed)

    class MultivariateNormal(T.distributions.MultivariateNormal):
        def sample(self, sample_shape=()):
            eps = T.tensor(rs.randn(*tuple(sample_shape), *self.event_shape).astype(np.float32))
            return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)
    return MultivariateNormal


def _rnvp(T, src, monkeypatch):
    models = program(T, RNVP_MODELS)
    plt = Plot()
    monkeypatch.setattr("sys.argv", ["main.py", "--cpu"])
    made = []

    def coupling(*a, **k):      # seeded, a stream each
        made.append(init_uniform(T, models.CouplingLayer(*a, **k), 20 + len(made), 0.3))
        return made[-1]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        program(T, src, __name__="__main__", plt=plt, DatasetMoons=moons(T, 12), MultivariateNormal=normal_prior(T, 13),
                CouplingLayer=coupling, NormalizingFlow=models.NormalizingFlow,
                NormalizingFlowModel=models.NormalizingFlowModel, datasets=None, transforms=None)
    assert len(made) == 5 and len(plt.points) == 10
    return buf.getvalue(), plt.points, [a for m in made for a in _state(m)]


def test_rnvp_main_as_written_fails_alike(monkeypatch):
    msgs = same_error(torch, tracegrad, lambda T: _rnvp(T, RNVP_MAIN, monkeypatch))
    assert all(m.startswith("Torch not compiled with CUDA enabled") for m in msgs), msgs


def test_rnvp_main(monkeypatch):
    src = RNVP_MAIN.replace("device = torch.cuda.current_device()", "device = 'cpu'")
    (ref_log, *ref), (got_log, *got) = _rnvp(torch, src, monkeypatch), _rnvp(tracegrad, src, monkeypatch)
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: (ref if T is torch else got)[0], tol=1e-4)
    _compare(lambda T: (ref if T is torch else got)[1], tol=1e-4)
