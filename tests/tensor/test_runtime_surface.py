"""Parity with torch for the tensor and runtime surface real programs touch: ``Tensor.type``,
``new_*`` factories, ``stride``, ``pin_memory``, ``nbytes``/``itemsize``, ``tracegrad.cuda``,
``accelerator``, ``backends`` flags, matmul precision and the default device."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

HAS_GPU = tracegrad.cuda.is_available()


def both(fn):
    """``fn(mod)`` for torch and tracegrad; returns the two results (or exception classes)."""
    out = []
    for mod in (torch, tracegrad):
        try:
            out.append(fn(mod))
        except Exception as e:   # compare the class torch raises
            out.append(type(e))
    return out


def _sig(t):
    return (str(t.dtype).split(".")[-1], tuple(t.shape), t.requires_grad, t.detach().numpy().tolist())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                                   "uint8", "bool", "complex64"])
def test_type_names(dtype):
    a, b = both(lambda m: m.zeros(2).to(getattr(m, dtype)).type())
    assert a == b


@pytest.mark.parametrize("arg", ["torch.DoubleTensor", "torch.IntTensor", "torch.BoolTensor", "foo",
                                 "torch.LongTensor", "torch.HalfTensor"])
def test_type_convert_by_name(arg):
    a, b = both(lambda m: _sig(m.tensor([[1.5, -2.0]]).type(arg)))
    assert a == b


def test_type_convert_by_dtype():
    a, b = both(lambda m: _sig(m.tensor([1.5, 2.5]).type(m.int64)))
    assert a == b
    x = tracegrad.ones(2)
    assert x.type(tracegrad.float32) is x   # nothing to change: the same tensor, as torch


@pytest.mark.parametrize("make", ["arange", "double", "bool"])
@pytest.mark.parametrize("cls", ["Tensor", "nn.Module", "int"])
def test_type_convert_by_class(make, cls):
    # eriklindernoren/PyTorch-GAN cyclegan.py: ``Tensor = torch.Tensor``; ``batch["A"].type(Tensor)``
    def go(m):
        x = {"arange": m.arange(3), "double": m.arange(3.).double(), "bool": m.tensor([True, False])}[make]
        target = m.nn.Module if cls == "nn.Module" else (int if cls == "int" else m.Tensor)
        return _sig(x.type(target))
    a, b = both(go)
    assert a == b


NEW = [
    lambda m, x: x.new_zeros(2, 3), lambda m, x: x.new_zeros((2,)), lambda m, x: x.new_ones([3]),
    lambda m, x: x.new_ones(2, dtype=m.float64), lambda m, x: x.new_full((2, 2), 3),
    lambda m, x: x.long().new_full((2,), 3.5), lambda m, x: x.new_empty(2, 3).zero_(),
    lambda m, x: x.new_tensor([1, 2]), lambda m, x: x.new_tensor([1.5, 2], requires_grad=True),
    lambda m, x: x.long().new_tensor([1.7]), lambda m, x: x.new_zeros(2, requires_grad=True),
    lambda m, x: x.new_tensor(np.array([1, 2])), lambda m, x: x.double().new_ones(()),
]


@pytest.mark.parametrize("i", range(len(NEW)))
def test_new_factories(i):
    a, b = both(lambda m: _sig(NEW[i](m, m.ones(2, 3, dtype=m.float32))))
    assert a == b


def test_new_tensor_from_tensor_warns_and_detaches():
    for mod in (torch, tracegrad):
        src = mod.ones(2, requires_grad=True)
        with pytest.warns(UserWarning):
            t = src.new_tensor(src)
        assert not t.requires_grad and t.grad_fn is None


def test_stride_and_sizes():
    progs = [lambda m: m.zeros(2, 3, 4).stride(), lambda m: m.zeros(2, 3, 4).transpose(0, 2).stride(),
             lambda m: m.zeros(2, 3)[:, 1:].stride(), lambda m: m.zeros(2, 3).stride(1),
             lambda m: m.zeros(4, 3).nbytes, lambda m: m.zeros(4, dtype=m.float64).itemsize,
             lambda m: m.zeros(3, dtype=m.int16).nbytes]
    for p in progs:
        a, b = both(p)
        assert a == b


@pytest.mark.skipif(HAS_GPU, reason="without a GPU torch and tracegrad both refuse pinned memory")
def test_pin_memory_without_gpu():
    a, b = both(lambda m: m.ones(2).pin_memory())
    assert a is b is RuntimeError
    assert tracegrad.ones(2).is_pinned() is False


def test_cuda_and_accelerator_report_jax_gpus():
    import jax
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    assert tracegrad.cuda.is_available() == bool(gpus)
    assert tracegrad.cuda.device_count() == len(gpus)
    assert tracegrad.accelerator.is_available() == bool(gpus)
    assert tracegrad.accelerator.device_count() == len(gpus)
    acc = tracegrad.accelerator.current_accelerator()
    assert (acc is None) if not gpus else (acc.type == "cuda")
    if not gpus:
        # torch's CPU build agrees: no accelerator, no CUDA
        assert torch.accelerator.is_available() is False and torch.accelerator.current_accelerator() is None
        a, b = both(lambda m: m.cuda.current_device())
        assert a is b is AssertionError
        assert both(lambda m: (m.cuda.memory_allocated(), m.cuda.max_memory_allocated(), m.cuda.is_initialized(),
                               m.cuda.is_bf16_supported() if m is tracegrad else False,
                               m.cuda.is_tf32_supported())) == [(0, 0, False, False, False)] * 2
    else:
        assert "H" in tracegrad.cuda.get_device_name(0) or tracegrad.cuda.get_device_name(0)
    from tracegrad.cuda.amp import GradScaler, autocast  # noqa: F401  (torch's import path works)


def test_cuda_is_tf32_supported():
    # torch's test files read torch.cuda.is_tf32_supported() at import (it was missing)
    if not tracegrad.cuda.is_available():
        assert tracegrad.cuda.is_tf32_supported() is torch.cuda.is_tf32_supported() is False
    else:
        assert tracegrad.cuda.is_tf32_supported() is True


def test_backend_flags_are_settable():
    import tracegrad.backends.cudnn as cudnn
    assert both(lambda m: (m.backends.cudnn.benchmark, m.backends.cudnn.deterministic, m.backends.cudnn.enabled,
                           m.backends.cudnn.allow_tf32, m.backends.cuda.matmul.allow_tf32,
                           m.backends.mps.is_available())) == [(False, False, True, True, False, False)] * 2
    old = cudnn.benchmark
    try:
        tracegrad.backends.cudnn.benchmark = True
        assert cudnn.benchmark is True
    finally:
        tracegrad.backends.cudnn.benchmark = old


def test_cudnn_flags_block_sets_every_flag_and_restores():
    def probe(m):
        c = m.backends.cudnn
        read = lambda: (c.enabled, c.benchmark, c.deterministic, c.allow_tf32, c.fp32_precision)
        before = read()
        with c.flags(enabled=False, deterministic=True):     # the others take flags()'s defaults
            inside = read()
        with c.flags(benchmark=True, allow_tf32=False):      # note torch's default enabled=False
            second = read()
        return before, inside, second, read()
    a, b = both(probe)
    assert a == b == ((True, False, False, True, "none"), (False, False, True, True, "none"),
                      (False, True, False, False, "none"), (True, False, False, True, "none"))


def test_matmul_precision_flags():
    import jax
    before = jax.config.jax_default_matmul_precision
    try:
        assert tracegrad.get_float32_matmul_precision() == "highest"
        tracegrad.backends.cuda.matmul.allow_tf32 = True
        assert tracegrad.get_float32_matmul_precision() == "high"
        assert jax.config.jax_default_matmul_precision == "tensorfloat32"
        tracegrad.set_float32_matmul_precision("medium")
        assert tracegrad.backends.cuda.matmul.allow_tf32 is True
        with pytest.warns(UserWarning):
            tracegrad.set_float32_matmul_precision("foo")   # torch: warns, no effect
        assert tracegrad.get_float32_matmul_precision() == "medium"
        tracegrad.backends.cuda.matmul.allow_tf32 = False
        assert tracegrad.get_float32_matmul_precision() == "highest"
        assert jax.config.jax_default_matmul_precision == "float32"
        x = tracegrad.ones(3, 3)
        np.testing.assert_allclose((x @ x).numpy(), np.full((3, 3), 3.0))
    finally:
        tracegrad._tensor.runtime._matmul_precision[0] = "highest"
        jax.config.update("jax_default_matmul_precision", before)


def test_default_device():
    import jax
    before = jax.config.jax_default_device
    try:
        assert str(tracegrad.get_default_device()) == ("cuda:0" if HAS_GPU else "cpu")
        tracegrad.set_default_device("cpu")
        assert tracegrad.get_default_device() == tracegrad.device("cpu")
        assert tracegrad.zeros(2).device.type == "cpu"
        if not HAS_GPU:
            with pytest.raises(AssertionError, match="not compiled with CUDA"):
                tracegrad.set_default_device("cuda")
    finally:
        tracegrad.set_default_device(None)
        jax.config.update("jax_default_device", before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.get_default_device() == torch.device("cpu")


LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
          "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("args", [((1.7, 2.5, 0.0),), ([[1, 0], [3, -4]],), (2, 3), ()],
                         ids=["floats", "nested_ints", "sizes", "empty"])
def test_legacy_typed_constructors(name, args):
    """torch.LongTensor([...]) etc. build a tensor of their own dtype (data converted, floats truncated)."""
    def make(m):
        t = getattr(m, name)(*args)
        if args and isinstance(args[0], int):   # sizes: torch's memory is uninitialised, compare dtype/shape only
            return str(t.dtype).split(".")[-1], tuple(t.shape)
        return str(t.dtype).split(".")[-1], tuple(t.shape), t.float().tolist()
    a, b = both(make)
    assert a == b


@pytest.mark.parametrize("name", ["FloatTensor", "LongTensor", "BoolTensor"])
def test_legacy_typed_isinstance_type_and_errors(name):
    for src in ("float32", "int64", "bool"):
        a, b = both(lambda m: isinstance(m.zeros(2, dtype=getattr(m, src)), getattr(m, name)))
        assert a == b
    a, b = both(lambda m: _sig(m.tensor([1.5, 0.0]).type(getattr(m, name))))
    assert a == b
    a, b = both(lambda m: issubclass(getattr(m, name), m.Tensor))
    assert a == b
    a, b = both(lambda m: getattr(m, name)([1], dtype=m.float64))
    assert a == b == TypeError
    a, b = both(lambda m: getattr(m, name)(m.zeros(2, dtype=m.float16)))
    assert a == b == TypeError


@pytest.mark.parametrize("api", ["set_num_threads", "set_num_interop_threads"])
@pytest.mark.parametrize("bad", [0, -3, 2.5, "2", True])
def test_num_threads_errors(api, bad):
    a, b = both(lambda m: getattr(m, api)(bad))
    assert a == b == RuntimeError


def test_num_threads_roundtrip():
    before = tracegrad.get_num_threads(), tracegrad.get_num_interop_threads()
    assert all(isinstance(n, int) and n >= 1 for n in before)
    tracegrad.set_num_threads(3)
    assert tracegrad.get_num_threads() == 3
    tracegrad.set_num_threads(before[0])
    assert tracegrad.get_num_threads() == before[0]


_OTHER_BACKENDS = {
    "mps available": lambda m: m.mps.is_available(),
    "mps count": lambda m: m.mps.device_count(),
    "mps backend": lambda m: m.backends.mps.is_available(),
    "mps seed": lambda m: m.mps.manual_seed(0),
    "mps synchronize": lambda m: m.mps.synchronize(),
    "mps empty_cache": lambda m: m.mps.empty_cache(),
    "mps memory": lambda m: m.mps.current_allocated_memory(),
    "xpu available": lambda m: m.xpu.is_available(),
    "xpu count": lambda m: m.xpu.device_count(),
    "xpu seed": lambda m: m.xpu.manual_seed(0),
    "xpu memory": lambda m: m.xpu.memory_allocated(),
    "xpu synchronize": lambda m: m.xpu.synchronize(),
    "xpu current_device": lambda m: m.xpu.current_device(),
    "device names": lambda m: [str(m.device(s)) for s in ("mps", "xpu:0", "hpu", "xla:1")],
    "device unknown": lambda m: m.device("foo"),
    "tensor to mps": lambda m: m.ones(2).to("mps"),
    "factory on mps": lambda m: m.zeros(2, device="mps"),
    "tensor to xpu": lambda m: m.ones(2).to("xpu"),
    "module to mps": lambda m: m.nn.Linear(2, 2).to("mps"),
    "tensor.xpu()": lambda m: m.ones(2).xpu(),
    "is_xla": lambda m: m.ones(2).is_xla,
    "const_data_ptr": lambda m: (lambda t: t.const_data_ptr() == t.data_ptr())(m.ones(2)),
}


@pytest.mark.parametrize("what", sorted(_OTHER_BACKENDS))
def test_other_backends_as_torch_cpu_build(what):
    """Code that probes for Apple (mps) or Intel (xpu) GPUs gets torch's CPU-build answers:
    False/0, no-op seeding, and the same exception classes where a device is needed."""
    t, g = both(_OTHER_BACKENDS[what])
    if what == "factory on mps":   # torch's dispatcher: NotImplementedError; here torch's .to('mps') error
        assert isinstance(t, type) and isinstance(g, type) and issubclass(g, RuntimeError)
        return
    assert t == g


def test_norm_submodules_keep_functions_bound():
    """``import torch.nn.utils.spectral_norm`` (the module) leaves ``torch.nn.utils.spectral_norm``
    the function, and the modules export torch's names."""
    import tracegrad.nn.utils.spectral_norm   # noqa: F401
    import tracegrad.nn.utils.weight_norm     # noqa: F401
    from tracegrad.nn.utils.spectral_norm import SpectralNorm, spectral_norm  # noqa: F401
    from tracegrad.nn.utils.weight_norm import WeightNorm, weight_norm  # noqa: F401
    assert callable(tracegrad.nn.utils.spectral_norm) and callable(tracegrad.nn.utils.weight_norm)
    m = tracegrad.nn.utils.spectral_norm(tracegrad.nn.Linear(3, 3))
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 3))
    assert sorted(m.state_dict()) == sorted(tm.state_dict())


def test_version_compares_as_the_torch_it_mirrors():
    """``tracegrad.__version__`` is the torch release tracegrad follows, compared the way
    ``torch.__version__`` compares (a ``str`` against strings, tuples and ``Version``s), so
    version-gated programs take torch 2.13's branches (AdaBelief's ``torch.__version__ >=
    "1.5.0"``). The oracle is torch's own ``TorchVersion`` on the same string."""
    from torch.torch_version import TorchVersion
    from torch._vendor.packaging.version import Version   # what torch's TorchVersion compares with
    v = tracegrad.__version__
    assert v is tracegrad.version.__version__ and isinstance(v, str)
    assert v.split("+")[0] == torch.__version__.split("+")[0]
    want = TorchVersion(str(v))
    for other in ("1.5.0", "1.10", "2.9", "2.10", "2.13", "2.13.0", "2.13.0+cpu", "2.13.0rc1",
                  "2.13.1", "3", "parrot", (2, 12), (2, 13, 0), (3,), [2, 13], Version("2.13"),
                  Version("2.14.0")):
        for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
            assert getattr(v, op)(other) == getattr(want, op)(other), (other, op)
    assert {v: 1}[str(v)] == 1 and int(v.split(".")[0]) == int(torch.__version__.split(".")[0])
    # the class, as torch.torch_version exposes it (libraries build their own: "1.10" > "1.9")
    assert type(v).__name__ == type(torch.__version__).__name__ == "TorchVersion"
    assert isinstance(v, tracegrad.torch_version.TorchVersion)
    assert both(lambda m: [m.torch_version.TorchVersion("1.10.0a0") > c for c in ("1.9", (1, 10), "1.10.0")]) \
        == [[True, False, False]] * 2
    with pytest.raises(TypeError):
        v > 3  # noqa: B015 -- torch's raises as well


def test_constants_version_and_device_modules():
    """``torch.pi``/``e``/``inf``/``nan``/``newaxis``, ``torch.version``'s fields as torch's CPU
    build reports them, ``get_device_module`` and ``nn.factory_kwargs`` behave as torch's."""
    for name in ("e", "pi", "inf"):
        assert getattr(tracegrad, name) == getattr(torch, name)
    assert np.isnan(tracegrad.nan) and tracegrad.newaxis is torch.newaxis is None
    x = tracegrad.arange(6.).reshape(2, 3)
    assert tuple(x[:, tracegrad.newaxis].shape) == tuple(torch.arange(6.).reshape(2, 3)[:, torch.newaxis].shape)
    for field in ("cuda", "hip", "debug"):
        if not HAS_GPU:
            assert getattr(tracegrad.version, field) == getattr(torch.version, field)
    assert isinstance(tracegrad.version.__version__, str)
    assert tracegrad.get_device_module("cpu") is tracegrad.cpu
    assert tracegrad.get_device_module(tracegrad.device("cuda")) is tracegrad.cuda
    assert tracegrad.get_device_module("mps") is tracegrad.mps
    assert both(lambda m: m.get_device_module("meta")) == [RuntimeError, RuntimeError]
    assert tracegrad.multiprocessing.get_start_method(allow_none=True) in (None, "fork", "spawn", "forkserver")
    for kw in ({"dtype": "D", "device": "cpu"}, {"factory_kwargs": {"dtype": "D"}}, None, {},
               {"dtype": "D", "factory_kwargs": {"dtype": "E"}}, {"bias": True}, {"factory_kwargs": {"bias": 1}}):
        t, g = both(lambda m: m.nn.factory_kwargs(None if kw is None else dict(kw)))
        assert t == g, kw


def test_nn_common_types_names():
    import tracegrad.nn.common_types as g
    import torch.nn.common_types as t
    names = [n for n in dir(t) if n.startswith("_size") or n.startswith("_ratio") or n.startswith("_scalar")]
    assert names and all(hasattr(g, n) for n in names)


def test_device_never_equals_a_string():
    # aladdinpersson's mixed-precision example: ``assert device == "cuda"`` fails on every device in torch
    a, b = both(lambda m: (m.device("cpu") == "cpu", "cpu" == m.device("cpu"), m.device("cpu") != "cpu"))
    assert a == b


def test_backends_cuda_sdp_kernel_deprecated_context_manager():
    """gpt-fast's decode loop: ``with torch.backends.cuda.sdp_kernel(enable_flash=False, ...)``
    around attention -- torch's FutureWarning, the same attention result inside."""
    def fn(mod):
        q = mod.tensor(np.random.RandomState(0).standard_normal((1, 2, 3, 4)).astype(np.float32))
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with mod.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):
                return mod.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).numpy()
    want, got = both(fn)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_dir_of_a_tensor_lists_only_existing_attributes():
    # torch's test_dir: every name dir(t) lists is an attribute of t (``imag`` of a real tensor
    # raises RuntimeError in both); an unset ``_is_param`` slot used to be listed and missing
    def missing(mod):
        x = mod.randn(2, 2)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in dir(x):
                try:
                    if not hasattr(x, k):
                        out.append(k)
                except RuntimeError:
                    out.append(k + " raises")
        return out
    a, b = both(missing)
    assert a == b == ["imag raises"]
