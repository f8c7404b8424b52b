"""torch's class tree and file paths hold in tracegrad: ``isinstance``/``issubclass`` between
public classes (``nn.ReLU6`` is a ``Hardtanh``, ``nn.AvgPool3d`` is no ``AvgPool2d``, a lazy norm
is no ``BatchNorm1d`` until it materializes, built-in lr schedulers are no ``_LRScheduler``) and
the deep import paths user code takes (``torch.nn.modules.batchnorm._BatchNorm``,
``torch.utils.data._utils.collate.default_collate``)."""
import importlib
import inspect

import pytest

import tracegrad

torch = pytest.importorskip("torch")

# (torch namespace, tracegrad namespace) whose public classes are compared pairwise
NAMESPACES = ["", "nn", "nn.parameter", "amp", "autograd.function", "autograd.graph", "utils.checkpoint", "optim", "optim.lr_scheduler", "distributions", "distributions.transforms",
              "distributions.constraints", "utils.data", "autograd", "nn.utils.parametrizations"]
# torch.Storage is torch's storage base of old; tracegrad's ``Storage`` name is the untyped storage
KNOWN = {"Storage"}
KNOWN_PAIRS = set()


def _pairs(path):
    t = importlib.import_module(f"torch.{path}".rstrip("."))
    g = importlib.import_module(f"tracegrad.{path}".rstrip("."))
    out = {}
    for name in dir(t):
        tc, gc = getattr(t, name, None), getattr(g, name, None)
        if inspect.isclass(tc) and inspect.isclass(gc) and tc.__module__.startswith("torch") and name not in KNOWN:
            out[name] = (tc, gc)
    return out


@pytest.mark.parametrize("path", NAMESPACES)
def test_subclass_relations_match_torch(path):
    pairs = _pairs(path)
    assert len(pairs) >= 2
    wrong = []
    for a, (ta, ga) in pairs.items():
        for b, (tb, gb) in pairs.items():
            if a == b or ta is tb or ga is gb or (a, b) in KNOWN_PAIRS:
                continue
            if issubclass(ta, tb) != issubclass(ga, gb):
                wrong.append(f"issubclass({a}, {b}): torch {issubclass(ta, tb)}")
    assert not wrong, wrong


@pytest.mark.parametrize("module,name,public", [
    ("nn.modules.batchnorm", "_BatchNorm", None),
    ("nn.modules.batchnorm", "_NormBase", None),
    ("nn.modules.batchnorm", "BatchNorm2d", "nn.BatchNorm2d"),
    ("nn.modules.batchnorm", "SyncBatchNorm", "nn.SyncBatchNorm"),
    ("nn.modules.batchnorm", "LazyBatchNorm1d", "nn.LazyBatchNorm1d"),
    ("nn.modules.channelshuffle", "ChannelShuffle", "nn.ChannelShuffle"),
    ("nn.modules.conv", "_ConvNd", None),
    ("nn.modules.conv", "LazyConv2d", "nn.LazyConv2d"),
    ("nn.modules.linear", "LazyLinear", "nn.LazyLinear"),
    ("nn.modules.instancenorm", "LazyInstanceNorm2d", "nn.LazyInstanceNorm2d"),
    ("nn.modules.loss", "_Loss", None),
    ("nn.modules.loss", "CTCLoss", "nn.CTCLoss"),
    ("nn.modules.loss", "MarginRankingLoss", "nn.MarginRankingLoss"),
    ("nn.modules.normalization", "LocalResponseNorm", "nn.LocalResponseNorm"),
    ("nn.modules.pooling", "MaxUnpool2d", "nn.MaxUnpool2d"),
    ("nn.modules.pooling", "LPPool2d", "nn.LPPool2d"),
    ("nn.modules.pooling", "_AvgPoolNd", None),
    ("nn.modules.pooling", "_AdaptiveAvgPoolNd", None),
    ("nn.modules.padding", "_ConstantPadNd", None),
    ("nn.modules.padding", "_ReflectionPadNd", None),
    ("nn.modules.utils", "_pair", None),
    ("utils.data._utils.collate", "default_collate", "utils.data.default_collate"),
    ("utils.data._utils.collate", "default_convert", "utils.data.default_convert"),
    ("utils.data._utils.collate", "default_collate_fn_map", None),
    ("optim.lr_scheduler", "_LRScheduler", None),
])
def test_deep_import_paths(module, name, public):
    getattr(importlib.import_module(f"torch.{module}"), name)       # the path is torch's
    obj = getattr(importlib.import_module(f"tracegrad.{module}"), name)
    if public is not None:
        holder, attr = public.rsplit(".", 1)
        assert obj is getattr(importlib.import_module(f"tracegrad.{holder}"), attr)


def test_a_missing_name_of_a_torch_file_is_an_attribute_error():
    conv = importlib.import_module("tracegrad.nn.modules.conv")
    with pytest.raises(AttributeError, match="LazyConv9d"):
        conv.LazyConv9d
    with pytest.raises(ImportError):
        exec("from tracegrad.nn.modules.pooling import NoSuchPool", {})


@pytest.mark.parametrize("lib", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_isinstance_as_user_code_asks(lib):
    nn = lib.nn
    bn = nn.BatchNorm2d(3)
    assert isinstance(bn, nn.modules.batchnorm._BatchNorm)
    assert isinstance(nn.SyncBatchNorm(3), nn.modules.batchnorm._BatchNorm)
    assert isinstance(nn.InstanceNorm2d(3), nn.modules.batchnorm._NormBase)
    assert not isinstance(nn.InstanceNorm2d(3), nn.modules.batchnorm._BatchNorm)
    assert isinstance(nn.ReLU6(), nn.Hardtanh) and (nn.ReLU6().min_val, nn.ReLU6().max_val) == (0.0, 6.0)
    assert not isinstance(nn.Softshrink(), nn.Hardshrink)
    assert not isinstance(nn.AvgPool3d(2), nn.AvgPool2d)
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d) and nn.ZeroPad2d(1).value == 0.0
    lazy = nn.LazyBatchNorm1d()
    assert not isinstance(lazy, nn.BatchNorm1d)
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        lazy(lib.ones(2, 3, 4, 4))          # BatchNorm1d's own input check before it materializes
    lazy(lib.ones(4, 3))
    assert type(lazy) is nn.BatchNorm1d and lazy.num_features == 3
    opt = lib.optim.SGD([nn.Parameter(lib.ones(2))], lr=0.1)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    assert isinstance(sched, lib.optim.lr_scheduler.LRScheduler)
    assert not isinstance(sched, lib.optim.lr_scheduler._LRScheduler)

    class Mine(lib.optim.lr_scheduler._LRScheduler):     # older user schedulers derive from it
        def get_lr(self):
            return [0.5 * g["initial_lr"] for g in self.optimizer.param_groups]
    opt2 = lib.optim.SGD([nn.Parameter(lib.ones(2))], lr=0.1)
    Mine(opt2).step()
    assert opt2.param_groups[0]["lr"] == pytest.approx(0.05)


@pytest.mark.parametrize("lib", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_constraint_classes_as_torch(lib):
    c = lib.distributions.constraints
    assert c.is_dependent(lib.distributions.Categorical.support)
    assert not isinstance(c.nonnegative, type(c.positive))
    assert not isinstance(c.half_open_interval(0.0, 1.0), c.interval)
    assert repr(c.half_open_interval(0.0, 1.0)) == "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)"
    assert isinstance(c.positive_definite, type(c.symmetric))
    m = lib.tensor([[2.0, 1.0], [1.0, 2.0]])
    assert bool(c.positive_definite.check(m)) and not bool(c.positive_definite.check(-m))
    assert not bool(c.positive_definite.check(lib.tensor([[2.0, 1.0], [0.0, 2.0]])))
    assert bool(c.symmetric.check(lib.tensor([[1.0, 2.0 + 1e-6], [2.0, 1.0]])))
    assert not bool(c.symmetric.check(lib.tensor([[1.0, 2.01], [2.0, 1.0]])))


@pytest.mark.parametrize("lib", [torch, tracegrad], ids=["torch", "tracegrad"])
def test_keywords_torch_layers_take(lib):
    nn = lib.nn
    for layer in (nn.InstanceNorm1d(3, affine=True, bias=False), nn.SyncBatchNorm(3, bias=False),
                  nn.BatchNorm2d(3, bias=False)):
        assert layer.bias is None and layer.weight.shape == (3,)
        assert "bias=False" in repr(layer)
    lazy = nn.LazyBatchNorm1d(bias=False)
    assert lazy.bias is None
    lazy(lib.ones(4, 5))
    assert type(lazy) is nn.BatchNorm1d and lazy.bias is None and lazy.weight.shape == (5,)
    with pytest.warns(FutureWarning, match="min_value"):
        h = nn.Hardtanh(min_value=-2.0)
    assert (h.min_val, h.max_val) == (-2.0, 1.0)
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared, nn.Sequential(shared))
    assert len(list(seq.modules())) == 3 and len(list(seq.modules(remove_duplicate=False))) == 5
    x = lib.ones(2)
    v = x._version
    lib.autograd.graph.increment_version(tensor=x)
    lib.autograd.graph.increment_version([x, x])
    assert x._version == v + 3


def _torch_files(package):
    import pkgutil
    pkg = importlib.import_module(f"torch.{package}")
    return [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]


# torch files tracegrad has no counterpart of, with the reason
NO_FILE = {"nn.modules.linear_cross_entropy": "torch 2.13's fused linear+cross-entropy module file "
                                              "(the layer itself is nn.LinearCrossEntropyLoss)",
           "nn.modules.linear_cross_entropy_options": "see nn.modules.linear_cross_entropy"}


@pytest.mark.parametrize("package", ["nn.modules", "optim", "nn.utils", "distributions"])
def test_every_public_class_of_a_torch_file_resolves_there(package):
    """``from torch.<package>.<file> import <Class>`` works with tracegrad for every public
    class torch defines in that file (user code imports layers, optimizers and
    distributions by torch's file)."""
    missing = []
    for name in _torch_files(package):
        if f"{package}.{name}" in NO_FILE:
            continue
        t = importlib.import_module(f"torch.{package}.{name}")
        g = importlib.import_module(f"tracegrad.{package}.{name}")
        for attr, v in vars(t).items():
            if inspect.isclass(v) and not attr.startswith("_") and v.__module__ == t.__name__ \
                    and not hasattr(g, attr):
                missing.append(f"{package}.{name}.{attr}")
    assert not missing, missing
