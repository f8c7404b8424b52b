"""Mirrors ``torch.testing._internal.common_device_type``: device-generic test templates.

``instantiate_device_type_tests(TestFoo, globals())`` removes ``TestFoo`` from the module and
adds ``TestFooCPU``, in which every ``test_bar(self, device, ...)`` becomes ``test_bar_cpu`` --
one test per ``@dtypes`` entry (``test_bar_cpu_float32``) and per ``@parametrize`` value set
(``test_bar_x_1_cpu_float32``: parameters, then device, then dtype). The decorators here
(``@onlyCPU``, ``@onlyCUDA``, ``@skipMeta``, ``@precisionOverride``, ``@toleranceOverride``,
``@largeTensorTest``, ``@deviceCountAtLeast``...) behave as torch's do for a CPU test class.
Differs from torch: tracegrad instantiates CPU tests only (``only_for``/``except_for`` filter
that one device type; CUDA/MPS/XPU/lazy bases are never added); no OpInfo ``@ops``.
"""
from __future__ import annotations

import collections
import copy
import functools
import inspect
import os
import threading
import unittest
from collections.abc import Iterable

import tracegrad
from tracegrad.testing._internal._parametrize import compose_parametrize_fns, dtype_name
from tracegrad.testing._internal.common_utils import (  # noqa: F401  (torch's module re-exports these)
    IS_FBCODE, IS_MACOS, IS_REMOTE_GPU, IS_S390X, IS_SANDCASTLE, IS_WINDOWS, NATIVE_DEVICES, TEST_HPU, TEST_MKL,
    TEST_MPS, TEST_WITH_ASAN, TEST_WITH_ROCM,
    TEST_WITH_TORCHDYNAMO, TEST_WITH_TORCHINDUCTOR, TEST_WITH_TSAN, TEST_WITH_UBSAN, TEST_XPU, TestCase,
    skipCUDANonDefaultStreamIf, skipIfTorchDynamo)


def _dtype_test_suffix(dtypes):
    """``_float32`` for a dtype, ``_int64_float32`` for a tuple of them, ``""`` for none."""
    if isinstance(dtypes, (list, tuple)):
        return "" if not dtypes else "_" + "_".join(dtype_name(d) for d in dtypes)
    return f"_{dtype_name(dtypes)}" if dtypes else ""


def _update_param_kwargs(param_kwargs, name, value):
    """Sets ``name`` (or its plural, for a list/tuple value) in ``param_kwargs``."""
    param_kwargs.pop(name, None)
    param_kwargs.pop(f"{name}s", None)
    if isinstance(value, (list, tuple)):
        param_kwargs[f"{name}s"] = value
    elif value is not None:
        param_kwargs[name] = value


tol = collections.namedtuple("tol", ["atol", "rtol"])


class DeviceTypeTestBase(TestCase):
    """Mirrors ``common_device_type.DeviceTypeTestBase``: the base of the generated
    ``TestFoo<DEVICE>`` classes; ``instantiate_test`` makes the device/dtype/parameter variants
    of one generic test. ``precision``/``rel_tol`` are per thread and set per generated test
    from ``@precisionOverride``/``@toleranceOverride``."""
    device_type: str = "generic_device_type"
    bypass_device_restrictions: bool = False
    test_exclusions = None
    _stop_test_suite = False
    _tls = threading.local()
    _tls.precision = TestCase._precision
    _tls.rel_tol = TestCase._rel_tol

    @property
    def precision(self):
        return getattr(self._tls, "precision", TestCase._precision)

    @precision.setter
    def precision(self, prec):
        self._tls.precision = prec

    @property
    def rel_tol(self):
        return getattr(self._tls, "rel_tol", TestCase._rel_tol)

    @rel_tol.setter
    def rel_tol(self, prec):
        self._tls.rel_tol = prec

    @classmethod
    def get_primary_device(cls):
        return cls.device_type

    @classmethod
    def get_all_devices(cls):
        return [cls.get_primary_device()]

    @classmethod
    def _get_test_exclusions(cls, test_class_name):
        exclusions = getattr(cls, "test_exclusions", None)
        return exclusions[test_class_name] if exclusions and test_class_name in exclusions else []

    @classmethod
    def _get_dtypes(cls, test):
        if not hasattr(test, "dtypes"):
            return None
        default = test.dtypes.get("all")
        if default is None:
            raise AssertionError(f"@dtypes is mandatory when using @dtypesIf however '{test.__name__}' "
                                 f"didn't specify it")
        return test.dtypes.get(cls.device_type, default)

    def _get_precision_override(self, test, dtype):
        return getattr(test, "precision_overrides", {}).get(dtype, self.precision)

    def _get_tolerance_override(self, test, dtype):
        if not hasattr(test, "tolerance_overrides"):
            return self.precision, self.rel_tol
        return test.tolerance_overrides.get(dtype, tol(self.precision, self.rel_tol))

    def _apply_precision_override_for_test(self, test, param_kwargs):
        dtype = param_kwargs.get("dtypes", param_kwargs.get("dtype"))
        if dtype:
            self.precision = self._get_precision_override(test, dtype)
            self.precision, self.rel_tol = self._get_tolerance_override(test, dtype)

    @classmethod
    def instantiate_test(cls, name, test, *, generic_cls=None):
        """Adds to ``cls`` the variants of ``test`` (see the module docstring for their names)."""
        def add(test_name, test, param_kwargs, decorator_fn):
            params = inspect.signature(test).parameters
            if "device" in params or "devices" in params:
                device_arg = cls.get_all_devices() if hasattr(test, "num_required_devices") else \
                    cls.get_primary_device()
                _update_param_kwargs(param_kwargs, "device", device_arg)
            for decorator in decorator_fn(param_kwargs):
                test = decorator(test)

            @functools.wraps(test)
            def instantiated_test(self, test=test, param_kwargs=param_kwargs):
                saved = self.precision, self.rel_tol
                try:
                    self._apply_precision_override_for_test(test, param_kwargs)
                    return test(self, **param_kwargs)
                finally:
                    self.precision, self.rel_tol = saved
            if hasattr(cls, test_name):
                raise AssertionError(f"Redefinition of test {test_name}")
            setattr(cls, test_name, instantiated_test)

        def default_parametrize_fn(test, generic_cls, device_cls):
            yield test, "", {}, lambda _: []

        parametrize_fn = getattr(test, "parametrize_fn", default_parametrize_fn)
        dtypes = cls._get_dtypes(test)
        if dtypes is not None:
            def dtype_parametrize_fn(test, generic_cls, device_cls, dtypes=dtypes):
                for dtype in dtypes:
                    kwargs = {}
                    _update_param_kwargs(kwargs, "dtype", dtype)
                    yield test, "", kwargs, lambda _: []     # the dtype goes after the device in the name
            parametrize_fn = compose_parametrize_fns(dtype_parametrize_fn, parametrize_fn)

        for gen_test, suffix, param_kwargs, decorator_fn in parametrize_fn(test, generic_cls, cls):
            suffix = "" if suffix == "" else "_" + suffix
            dtype_kwarg = param_kwargs.get("dtypes", param_kwargs.get("dtype"))
            add(f"{name}{suffix}_{cls.device_type}{_dtype_test_suffix(dtype_kwarg)}", gen_test, param_kwargs,
                decorator_fn)

    def run(self, result=None):
        super().run(result=result)
        if self._stop_test_suite and result is not None:
            result.stop()


class CPUTestBase(DeviceTypeTestBase):
    """Mirrors ``common_device_type.CPUTestBase``: ``device_type = "cpu"``."""
    device_type = "cpu"

    def _should_stop_test_suite(self):
        return False


def get_device_type_test_bases():
    """Mirrors ``common_device_type.get_device_type_test_bases``: ``[CPUTestBase]`` here."""
    return [CPUTestBase]


device_type_test_bases = get_device_type_test_bases()


def filter_desired_device_types(device_type_test_bases, except_for=None, only_for=None):
    """Mirrors ``common_device_type.filter_desired_device_types``: the bases whose device type is
    in ``only_for`` (if given) and not in ``except_for``; a type in both is an AssertionError."""
    both = set(except_for or []) & set(only_for or [])
    if both:
        raise AssertionError(f"device ({both}) appeared in both except_for and only_for")
    bases = list(device_type_test_bases)
    if except_for:
        bases = [b for b in bases if b.device_type not in except_for]
    if only_for:
        bases = [b for b in bases if b.device_type in only_for]
    return bases


def get_desired_device_type_test_bases(except_for=None, only_for=None, include_lazy=False, allow_mps=False,
                                       allow_xpu=False):
    """Mirrors ``common_device_type.get_desired_device_type_test_bases``: CPU only here, then
    filtered by the arguments and ``PYTORCH_TESTING_DEVICE_ONLY_FOR``/``_EXCEPT_FOR``."""
    bases = filter_desired_device_types(device_type_test_bases, except_for, only_for)

    def split(x):
        return x.split(",") if x else []
    return filter_desired_device_types(bases, split(os.getenv("PYTORCH_TESTING_DEVICE_EXCEPT_FOR", "")),
                                       split(os.getenv("PYTORCH_TESTING_DEVICE_ONLY_FOR", "")))


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None, include_lazy=False,
                                  allow_mps=False, allow_xpu=False):
    """Mirrors ``common_device_type.instantiate_device_type_tests``: removes ``generic_test_class``
    from ``scope`` (a module's ``globals()``) and adds ``<name>CPU`` (subclassing ``CPUTestBase``
    and the generic class) with the device-specific tests; the generic class loses its tests.
    ``only_for``/``except_for`` are device types (``"cpu"``, ``"cuda"``...); ``allow_mps``,
    ``allow_xpu``, ``include_lazy`` are accepted (those devices do not exist here).
    ``setUpClass``/``tearDownClass`` of the generic class run for the generated one.
    """
    del scope[generic_test_class.__name__]
    generic_members = set(generic_test_class.__dict__.keys())
    generic_tests = [x for x in generic_members if x.startswith("test")]
    for base in get_desired_device_type_test_bases(except_for, only_for, include_lazy, allow_mps, allow_xpu):
        skipped = base._get_test_exclusions(generic_test_class.__name__)
        if "*" in skipped:
            continue
        class_name = generic_test_class.__name__ + base.device_type.upper()
        device_cls = type(class_name, (base, generic_test_class), {})

        @classmethod
        def _setUpClass(cls, base=base):
            base.setUpClass()
            generic_test_class.setUpClass.__func__(cls)

        @classmethod
        def _tearDownClass(cls, base=base):
            generic_test_class.tearDownClass.__func__(cls)
            base.tearDownClass()
        device_cls.setUpClass = _setUpClass
        device_cls.tearDownClass = _tearDownClass

        for name in generic_members:
            if name in generic_tests:
                if name not in skipped:
                    device_cls.instantiate_test(name, copy.deepcopy(getattr(generic_test_class, name)),
                                                generic_cls=generic_test_class)
            elif name not in device_cls.__dict__:
                setattr(device_cls, name, getattr(generic_test_class, name))
        device_cls.__module__ = generic_test_class.__module__
        scope[class_name] = device_cls
    for name in generic_tests:
        delattr(generic_test_class, name)


# ---- dtype and tolerance decorators -------------------------------------------------------------
class dtypes:
    """Mirrors ``common_device_type.dtypes``: one generated test per dtype (or per tuple of
    dtypes, passed as ``dtypes``); ``device_type`` restricts it to one device (``dtypesIfCPU``...).
    Raises AssertionError for a non-dtype, mixed tuples and plain dtypes, or a second
    ``@dtypes`` for the same device type."""

    def __init__(self, *args, device_type="all"):
        if args and isinstance(args[0], (list, tuple)):
            for arg in args:
                if not isinstance(arg, (list, tuple)):
                    raise AssertionError(f"When one dtype variant is a tuple or list, all dtype variants must be. "
                                         f"Received non-list non-tuple dtype {arg}")
                if not all(isinstance(d, tracegrad.dtype) for d in arg):
                    raise AssertionError(f"Unknown dtype in {arg}")
        elif not all(isinstance(a, tracegrad.dtype) for a in args):
            raise AssertionError(f"Unknown dtype in {args}")
        self.args = args
        self.device_type = device_type

    def __call__(self, fn):
        d = getattr(fn, "dtypes", {})
        if self.device_type in d:
            raise AssertionError(f"dtypes redefinition for {self.device_type}")
        d[self.device_type] = self.args
        fn.dtypes = d
        return fn


class dtypesIfCPU(dtypes):
    """``@dtypes`` for the CPU variant only (overrides the generic list there)."""

    def __init__(self, *args):
        super().__init__(*args, device_type="cpu")


class dtypesIfCUDA(dtypes):
    """``@dtypes`` for CUDA variants (never instantiated here)."""

    def __init__(self, *args):
        super().__init__(*args, device_type="cuda")


class dtypesIfMPS(dtypes):
    """``@dtypes`` for MPS variants (never instantiated here)."""

    def __init__(self, *args):
        super().__init__(*args, device_type="mps")


class dtypesIfXPU(dtypes):
    """``@dtypes`` for XPU variants (never instantiated here)."""

    def __init__(self, *args):
        super().__init__(*args, device_type="xpu")


class dtypesIfHPU(dtypes):
    """``@dtypes`` for HPU variants (never instantiated here)."""

    def __init__(self, *args):
        super().__init__(*args, device_type="hpu")


class precisionOverride:
    """Mirrors ``common_device_type.precisionOverride({dtype: atol})``: the generated test for
    that dtype runs with ``self.precision`` (assertEqual's minimum atol) set to it."""

    def __init__(self, d):
        if not isinstance(d, dict):
            raise AssertionError("precisionOverride not given a dtype : precision dict!")
        for dtype in d:
            if not isinstance(dtype, tracegrad.dtype):
                raise AssertionError(f"precisionOverride given unknown dtype {dtype}")
        self.d = d

    def __call__(self, fn):
        fn.precision_overrides = self.d
        return fn


class toleranceOverride:
    """Mirrors ``common_device_type.toleranceOverride({dtype: tol(atol, rtol)})``: sets both
    ``self.precision`` and ``self.rel_tol`` for that dtype's test (wins over precisionOverride)."""

    def __init__(self, d):
        if not isinstance(d, dict):
            raise AssertionError("toleranceOverride not given a dtype : tol dict!")
        for dtype, prec in d.items():
            if not isinstance(dtype, tracegrad.dtype):
                raise AssertionError(f"toleranceOverride given unknown dtype {dtype}")
            if not isinstance(prec, tol):
                raise AssertionError("toleranceOverride not given a dtype : tol dict!")
        self.d = d

    def __call__(self, fn):
        fn.tolerance_overrides = self.d
        return fn


# ---- device restrictions and skips --------------------------------------------------------------
class skipIf:
    """Mirrors ``common_device_type.skipIf(dep, reason, device_type=None)``: skips when ``dep``
    (a bool, or the name of a truthy attribute of the test case) holds on ``device_type``."""

    def __init__(self, dep, reason, device_type=None):
        self.dep, self.reason, self.device_type = dep, reason, device_type

    def __call__(self, fn):
        @functools.wraps(fn)
        def dep_fn(slf, *args, **kwargs):
            on_device = self.device_type is None or self.device_type == slf.device_type or (
                isinstance(self.device_type, Iterable) and not isinstance(self.device_type, str)
                and slf.device_type in self.device_type)
            if on_device and ((isinstance(self.dep, str) and getattr(slf, self.dep, True))
                              or (isinstance(self.dep, bool) and self.dep)):
                raise unittest.SkipTest(self.reason)
            return fn(slf, *args, **kwargs)
        return dep_fn


def _device_skip(device_type):
    class _Skip(skipIf):
        def __init__(self, dep, reason):
            super().__init__(dep, reason, device_type=device_type)
    _Skip.__name__ = _Skip.__qualname__ = f"skip{device_type.upper()}If"
    _Skip.__doc__ = f"``skipIf`` on the ``{device_type}`` device type."
    return _Skip


skipCPUIf = _device_skip("cpu")
skipCUDAIf = _device_skip("cuda")
skipMetaIf = _device_skip("meta")
skipMPSIf = _device_skip("mps")
skipXPUIf = _device_skip("xpu")
skipXLAIf = _device_skip("xla")
skipLazyIf = _device_skip("lazy")
skipHPUIf = _device_skip("hpu")


class skipGPUIf(skipIf):
    """``skipIf`` on the GPU device types (cuda, xpu, mps...)."""

    def __init__(self, dep, reason):
        super().__init__(dep, reason, device_type=("cuda", "xpu", "mps", "hpu"))


def skipMeta(fn):
    """Skips the test's meta variant (none is generated here)."""
    return skipMetaIf(True, "test doesn't work with meta tensors")(fn)


def skipMPS(fn):
    """Skips the test's MPS variant."""
    return skipMPSIf(True, "test doesn't work on MPS backend")(fn)


def skipXLA(fn):
    """Skips the test's XLA-device variant (torch/xla's; tracegrad's CPU tests are not it)."""
    return skipXLAIf(True, "Marked as skipped for XLA")(fn)


def skipLazy(fn):
    """Skips the test's lazy-tensor variant."""
    return skipLazyIf(True, "test doesn't work with lazy tensors")(fn)


def skipXPU(fn):
    """Skips the test's XPU variant."""
    return skipXPUIf(True, "test doesn't work on XPU backend")(fn)


def skipHPU(fn):
    """Skips the test's HPU variant."""
    return skipHPUIf(True, "test doesn't work on HPU backend")(fn)


def skipCPUIfNoLapack(fn):
    """Never skips: XLA always has its linear algebra."""
    return skipCPUIf(False, "PyTorch compiled without Lapack")(fn)


def skipCPUIfNoFFT(fn):
    """Never skips: XLA always has its FFT."""
    return skipCPUIf(False, "PyTorch is built without FFT support")(fn)


def skipCPUIfNoMkl(fn):
    """Skips the CPU variant when MKL is not available (as torch)."""
    return skipCPUIf(not TEST_MKL, "PyTorch is built without MKL support")(fn)


def skipCPUIfNoMklSparse(fn):
    """Skips the CPU variant (no MKL sparse here)."""
    return skipCPUIf(True, "PyTorch is built without MKL support")(fn)


def skipCPUIfNoMkldnn(fn):
    """Skips the CPU variant (no oneDNN here)."""
    return skipCPUIf(True, "PyTorch is built without mkldnn support")(fn)


skipCPUIfNoOnednn = skipCPUIfNoMkldnn


def _cuda_only_skip(reason):
    def decorator(fn):
        return skipCUDAIf(True, reason)(fn)
    return decorator


def skipCUDAIfRocm(func=None, *, msg="test doesn't currently work on the ROCm stack"):
    """Skips CUDA variants on ROCm (no ROCm here: a no-op on the CPU variant)."""
    dec = skipCUDAIf(TEST_WITH_ROCM, f"skipCUDAIfRocm: {msg}")
    return dec(func) if func is not None else dec


def skipCUDAIfNotRocm(fn):
    """Skips CUDA variants unless on ROCm."""
    return skipCUDAIf(not TEST_WITH_ROCM, "test doesn't currently work on the CUDA stack")(fn)


def skipCUDAIfRocmVersionLessThan(version=None):
    """Skips CUDA variants on old ROCm (a no-op on the CPU variant)."""
    return _cuda_only_skip(f"ROCm {version} is available but {version} required")


def skipCUDAIfCudnnVersionLessThan(version=0):
    """Skips CUDA variants without a new enough cuDNN (a no-op on the CPU variant)."""
    return _cuda_only_skip(f"cuDNN version {version} is required")


def skipCUDAIfVersionLessThan(versions=None):
    """Skips CUDA variants on an old CUDA (a no-op on the CPU variant)."""
    return _cuda_only_skip(f"test skipped for CUDA version older than {versions}")


def skipCUDAVersionIn(versions=None):
    """Skips CUDA variants on the listed CUDA versions (a no-op on the CPU variant)."""
    return _cuda_only_skip(f"test skipped for CUDA versions {versions}")


def skipCUDAIfNoCudnn(fn):
    """Skips CUDA variants without cuDNN."""
    return skipCUDAIfCudnnVersionLessThan(0)(fn)


def skipCUDAIfMiopen(fn):
    """Skips CUDA variants on MIOpen (no ROCm here)."""
    return skipCUDAIf(TEST_WITH_ROCM, "Marked as skipped for MIOpen")(fn)


def skipCUDAIfNoMiopen(fn):
    """Skips CUDA variants without MIOpen."""
    return skipCUDAIf(not TEST_WITH_ROCM, "MIOpen is not available")(skipCUDAIfNoCudnn(fn))


def skipCUDAIfNotMiopenSuggestNHWC(fn):
    """Skips CUDA variants without MIOpen's NHWC suggestion."""
    return skipCUDAIf(True, "test doesn't currently work without MIOpen NHWC activation")(fn)


def skipCUDAIfNoMagma(fn):
    """Skips CUDA variants without MAGMA."""
    return skipCUDAIf("no_magma", "no MAGMA library detected")(skipCUDANonDefaultStreamIf(True)(fn))


def skipCUDAIfNoCusolver(fn):
    """Skips CUDA variants without cuSOLVER."""
    return skipCUDAIf(True, "cuSOLVER not available")(fn)


def skipCUDAIfNoMagmaAndNoCusolver(fn):
    """Skips CUDA variants without MAGMA and cuSOLVER."""
    return skipCUDAIfNoCusolver(fn)


def skipCUDAIfNoMagmaAndNoLinalgsolver(fn):
    """Skips CUDA variants without MAGMA and a linalg solver."""
    return skipCUDAIfNoCusolver(fn)


def skipCUDAIfNoCusolverROCMIfNoMagma(fn):
    """Skips CUDA variants without cuSOLVER."""
    return skipCUDAIfNoCusolver(fn)


class onlyOn:
    """Mirrors ``common_device_type.onlyOn(device_type)``: other device types skip the test
    (``SkipTest("Only runs on <type>")``)."""

    def __init__(self, device_type):
        self.device_type = device_type

    def __call__(self, fn):
        @functools.wraps(fn)
        def only_fn(slf, *args, **kwargs):
            if slf.device_type not in self.device_type and not getattr(slf, "bypass_device_restrictions", False):
                raise unittest.SkipTest(f"Only runs on {self.device_type}")
            return fn(slf, *args, **kwargs)
        return only_fn


def onlyCPU(fn):
    """Runs only the CPU variant (the one generated here)."""
    return onlyOn("cpu")(fn)


def onlyCUDA(fn):
    """Runs only CUDA variants: the CPU variant is skipped."""
    return onlyOn("cuda")(fn)


def onlyCUDAAndPRIVATEUSE1(fn):
    """Runs only CUDA and PrivateUse1-backend variants: the CPU variant is skipped."""
    return onlyOn(("cuda", "privateuseone"))(fn)


def onlyMPS(fn):
    """Runs only MPS variants: the CPU variant is skipped."""
    return onlyOn("mps")(fn)


def onlyXPU(fn):
    """Runs only XPU variants: the CPU variant is skipped."""
    return onlyOn("xpu")(fn)


def onlyHPU(fn):
    """Runs only HPU variants: the CPU variant is skipped."""
    return onlyOn("hpu")(fn)


def onlyAccelerator(fn):
    """Skips CPU and meta variants."""
    @functools.wraps(fn)
    def only_fn(self, *args, **kwargs):
        if self.device_type in ("cpu", "meta"):
            raise unittest.SkipTest("onlyAccelerator: doesn't run on CPU or meta devices")
        return fn(self, *args, **kwargs)
    return only_fn


def onlyNativeDeviceTypes(fn):
    """Runs on torch's native device types (cpu, cuda, meta, mps...): the CPU variant runs."""
    @functools.wraps(fn)
    def only_fn(self, *args, **kwargs):
        if self.device_type not in NATIVE_DEVICES:
            raise unittest.SkipTest(f"onlyNativeDeviceTypes: doesn't run on {self.device_type}")
        return fn(self, *args, **kwargs)
    return only_fn


def onlyNativeDeviceTypesAnd(devices=None):
    """``onlyNativeDeviceTypes`` plus the listed device types."""
    def decorator(fn):
        @functools.wraps(fn)
        def only_fn(self, *args, **kwargs):
            if self.device_type not in NATIVE_DEVICES and self.device_type not in (devices or ()):
                raise unittest.SkipTest(f"onlyNativeDeviceTypesAnd {devices} : doesn't run on {self.device_type}")
            return fn(self, *args, **kwargs)
        return only_fn
    return decorator


class deviceCountAtLeast:
    """Mirrors ``common_device_type.deviceCountAtLeast(n)``: the test receives ``devices`` (a list
    of device strings, one CPU here) and skips when fewer than ``n`` are available."""

    def __init__(self, num_required_devices):
        self.num_required_devices = num_required_devices

    def __call__(self, fn):
        if hasattr(fn, "num_required_devices"):
            raise AssertionError(f"deviceCountAtLeast redefinition for {fn.__name__}")
        fn.num_required_devices = self.num_required_devices

        @functools.wraps(fn)
        def multi_fn(slf, devices, *args, **kwargs):
            if len(devices) < self.num_required_devices:
                raise unittest.SkipTest(f"fewer than {self.num_required_devices} devices detected")
            return fn(slf, devices, *args, **kwargs)
        return multi_fn


def _available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil
        return psutil.virtual_memory().available
    except ImportError:
        return None


def largeTensorTest(size, device=None, inductor=TEST_WITH_TORCHINDUCTOR):
    """Mirrors ``common_device_type.largeTensorTest(size)``: skips when the test's device has
    less free memory than ``size`` (bytes, ``"N GB"``, or a callable of the test's arguments).
    CPU memory is read from ``/proc/meminfo`` (or psutil); other device types skip.
    Raises AssertionError for a size string not in GB."""
    if isinstance(size, str):
        if not size.endswith(("GB", "gb")):
            raise AssertionError(f"only bytes or GB supported, got {size!r}")
        size = 1024 ** 3 * int(size[:-2])

    def inner(fn):
        @functools.wraps(fn)
        def dep_fn(self, *args, **kwargs):
            needed = size(self, *args, **kwargs) if callable(size) else size
            dev = device if device is not None else (
                self.get_primary_device() if hasattr(self, "get_primary_device") else self.device)
            if tracegrad.device(dev).type != "cpu":
                raise unittest.SkipTest(f"Insufficient {dev} memory")
            available = _available_memory()
            if available is None:
                raise unittest.SkipTest("Need psutil to determine if memory is sufficient")
            if TEST_WITH_ASAN or TEST_WITH_TSAN or TEST_WITH_UBSAN:
                needed *= 10
            if available < needed:
                raise unittest.SkipTest(f"Insufficient {dev} memory")
            return fn(self, *args, **kwargs)
        return dep_fn
    return inner


class expectedFailure:
    """Mirrors ``common_device_type.expectedFailure(device_type, dtype=None)``: on that device
    (and dtype) the test must raise; passing there fails it ("expected test to fail")."""

    def __init__(self, device_type, dtype=None):
        self.device_type, self.dtype = device_type, dtype

    def __call__(self, fn):
        @functools.wraps(fn)
        def efail_fn(slf, *args, **kwargs):
            if not hasattr(slf, "device_type") and isinstance(getattr(slf, "device", None), str):
                target = slf.device
            else:
                target = slf.device_type
            target_dtype = kwargs.get("dtype", getattr(slf, "dtype", None))
            if (self.device_type is None or self.device_type == target) and \
                    (self.dtype is None or self.dtype == target_dtype):
                try:
                    fn(slf, *args, **kwargs)
                except Exception:
                    return
                slf.fail("expected test to fail, but it passed")
            return fn(slf, *args, **kwargs)
        return efail_fn


def expectedFailureCPU(fn):
    """The CPU variant must fail."""
    return expectedFailure("cpu")(fn)


def expectedFailureCUDA(fn):
    """CUDA variants must fail (none generated here)."""
    return expectedFailure("cuda")(fn)


def expectedFailureMeta(fn):
    """Meta variants must fail (none generated here)."""
    return skipIfTorchDynamo()(expectedFailure("meta")(fn))


def expectedFailureMPS(fn):
    """MPS variants must fail (none generated here)."""
    return expectedFailure("mps")(fn)


def expectedFailureXLA(fn):
    """XLA-device variants must fail (none generated here)."""
    return expectedFailure("xla")(fn)


def expectedFailureXPU(fn):
    """XPU variants must fail (none generated here)."""
    return expectedFailure("xpu")(fn)


def disablecuDNN(fn):
    """Runs the test with cuDNN off on CUDA: a no-op here."""
    return fn


def disableMkldnn(fn):
    """Runs the test with oneDNN off: a no-op here (no oneDNN)."""
    return fn


disableOnednn = disableMkldnn


def get_all_device_types():
    """``["cpu"]``, plus ``"cuda"`` when a JAX GPU is there (as torch)."""
    return ["cpu", "cuda"] if tracegrad.cuda.is_available() else ["cpu"]
