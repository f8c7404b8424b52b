"""Mirrors ``torch.testing._internal.common_utils``: the harness PyTorch's own test files (and
torch-style third-party suites) import -- ``TestCase`` with torch's ``assertEqual``,
``run_tests``, parametrization, ``gradcheck``/``gradgradcheck`` with the harness's defaults,
RNG helpers, platform constants and the skip/xfail decorators.

The constants and decorators take the values torch gives them on a CPU build run without
dynamo, crossref, sanitizers or ROCm (each still reads its ``PYTORCH_TEST_WITH_*`` variable,
so ``PYTORCH_TEST_WITH_SLOW=1`` enables ``@slowTest`` tests). Written against tracegrad's
public API; the comparison behind ``assertEqual`` lives in ``_equal.py`` and the
parametrization in ``_parametrize.py``.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import inspect
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

import tracegrad
from tracegrad.testing._creation import make_tensor  # noqa: F401  (torch re-exports it here too)
from tracegrad.testing._internal._equal import assert_equal as _assert_equal
from tracegrad.testing._internal._parametrize import (  # noqa: F401
    _TestParametrizer, compose_parametrize_fns, decorateIf, dtype_name, instantiate_parametrized_tests,
    parametrize, reparametrize, subtest)

try:                                  # torch's TestCase is an expecttest.TestCase (assertExpectedInline)
    import expecttest as _expecttest
    _BaseTestCase = _expecttest.TestCase
except ImportError:                   # expecttest is optional here (a test extra)
    _expecttest = None
    _BaseTestCase = unittest.TestCase


# ---- platform and build constants ----------------------------------------------------------------
def _flag(env_var):
    """A ``PYTORCH_TEST_WITH_*`` style switch: on when the variable is ``1`` (torch's ``def_flag``)."""
    return os.getenv(env_var) == "1"


def _has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


SEED = 1234
IS_LINUX = sys.platform == "linux"
IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"
IS_PPC = platform.machine() == "ppc64le"
IS_X86 = platform.machine() in ("x86_64", "i386")
IS_ARM64 = platform.machine() in ("arm64", "aarch64", "ARM64")
IS_S390X = platform.machine() == "s390x"
IS_JETSON = False
IS_CI = _flag("CI") or os.getenv("CI") == "true"
IS_SANDCASTLE = _flag("SANDCASTLE") or os.getenv("TW_JOB_USER") == "sandcastle"
IS_FBCODE = _flag("PYTORCH_TEST_FBCODE")
IS_REMOTE_GPU = _flag("PYTORCH_TEST_REMOTE_GPU")
IS_FILESYSTEM_UTF8_ENCODING = sys.getfilesystemencoding() == "utf-8"
MACOS_VERSION = float(".".join(platform.mac_ver()[0].split(".")[:2]) or -1)

TEST_NUMPY = _has_module("numpy")
TEST_SCIPY = _has_module("scipy")
TEST_NUMBA = _has_module("numba")
TEST_DILL = _has_module("dill")
TEST_LIBROSA = _has_module("librosa") and not IS_ARM64
TEST_OPT_EINSUM = _has_module("opt_einsum")
TEST_Z3 = _has_module("z3")
TEST_TRANSFORMERS = _has_module("transformers")
TEST_FAIRSEQ = _has_module("fairseq")
TEST_MKL = tracegrad.backends.mkl.is_available()
TEST_ONEDNN = TEST_MKLDNN = False
TEST_ACL = False
TEST_CUDA = tracegrad.cuda.is_available()
TEST_MPS = tracegrad.backends.mps.is_available()
TEST_XPU = False
TEST_HPU = False
TEST_PRIVATEUSE1 = False
TEST_PRIVATEUSE1_DEVICE_TYPE = "privateuse1"
TEST_CUDA_GRAPH = False
TEST_CUDA_CUDSS = False
TEST_CUDA_PYTHON_BINDINGS = False
TEST_NVMATH = False
NO_MULTIPROCESSING_SPAWN = False
NATIVE_DEVICES = ("cpu", "cuda", "xpu", "meta", "mps", "mtia", "privateuse1")

TEST_WITH_ASAN = _flag("PYTORCH_TEST_WITH_ASAN")
TEST_WITH_DEV_DBG_ASAN = _flag("PYTORCH_TEST_WITH_DEV_DBG_ASAN")
TEST_WITH_TSAN = _flag("PYTORCH_TEST_WITH_TSAN")
TEST_WITH_UBSAN = _flag("PYTORCH_TEST_WITH_UBSAN")
TEST_WITH_ROCM = _flag("PYTORCH_TEST_WITH_ROCM")          # no HIP build here
TEST_WITH_MTIA = _flag("PYTORCH_TEST_WITH_MTIA")
TEST_WITH_MIOPEN_SUGGEST_NHWC = os.getenv("PYTORCH_MIOPEN_SUGGEST_NHWC", "0") == "1"
TEST_WITH_SLOW = _flag("PYTORCH_TEST_WITH_SLOW")
TEST_SKIP_FAST = _flag("PYTORCH_TEST_SKIP_FAST")
TEST_WITH_CROSSREF = _flag("PYTORCH_TEST_WITH_CROSSREF")
TEST_SKIP_CUDAGRAPH = _flag("PYTORCH_TEST_SKIP_CUDAGRAPH")
TEST_WITH_TORCHINDUCTOR = _flag("PYTORCH_TEST_WITH_INDUCTOR")
TEST_WITH_AOT_EAGER = _flag("PYTORCH_TEST_WITH_AOT_EAGER")
TEST_WITH_TORCHDYNAMO = _flag("PYTORCH_TEST_WITH_DYNAMO") or TEST_WITH_TORCHINDUCTOR or TEST_WITH_AOT_EAGER
TEST_WITHOUT_COMPILED_AUTOGRAD = _flag("PYTORCH_TEST_WITHOUT_COMPILED_AUTOGRAD")
TEST_WITH_SLOW_GRADCHECK = _flag("PYTORCH_TEST_WITH_SLOW_GRADCHECK")
TEST_CUDA_MEM_LEAK_CHECK = _flag("PYTORCH_TEST_CUDA_MEM_LEAK_CHECK")
TEST_WITH_TV = _flag("PYTORCH_TEST_WITH_TV")
TEST_SAVE_XML = None
TEST_IN_SUBPROCESS = False

# gradcheck's nondet_tol for backward passes that are not deterministic (torch's value)
GRADCHECK_NONDET_TOL = 1e-12
# torch's test_nn tolerances per dtype ("don't use": prefer @toleranceOverride)
dtype2prec_DONTUSE = {tracegrad.float: 1e-5, tracegrad.double: 1e-5, tracegrad.half: 1e-2, tracegrad.bfloat16: 1e-1}

numpy_to_torch_dtype_dict = {
    np.bool_: tracegrad.bool, np.uint8: tracegrad.uint8, np.uint16: tracegrad.uint16, np.uint32: tracegrad.uint32,
    np.uint64: tracegrad.uint64, np.int8: tracegrad.int8, np.int16: tracegrad.int16, np.int32: tracegrad.int32,
    np.int64: tracegrad.int64, np.float16: tracegrad.float16, np.float32: tracegrad.float32,
    np.float64: tracegrad.float64, np.complex64: tracegrad.complex64, np.complex128: tracegrad.complex128}
torch_to_numpy_dtype_dict = {v: k for k, v in numpy_to_torch_dtype_dict.items()}


def numpy_to_torch_dtype(np_dtype):
    """Mirrors ``common_utils.numpy_to_torch_dtype``: the tensor dtype of a numpy dtype (or type)."""
    try:
        return numpy_to_torch_dtype_dict[np_dtype]
    except KeyError:
        return numpy_to_torch_dtype_dict[np.dtype(np_dtype).type]


def has_corresponding_torch_dtype(np_dtype):
    """Mirrors ``common_utils.has_corresponding_torch_dtype``."""
    try:
        numpy_to_torch_dtype(np_dtype)
        return True
    except KeyError:
        return False


# ---- skip / xfail decorators (torch's definitions; their conditions are False here) --------------
def lazy_skip_if(condition_fn, reason):
    """Mirrors ``common_utils.lazy_skip_if``: on a function, skip at run time when
    ``condition_fn()``; on a class, decide once and mark the class skipped."""
    def decorator(fn):
        if isinstance(fn, type):
            if condition_fn():
                fn.__unittest_skip__ = True
                fn.__unittest_skip_why__ = reason
            return fn

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if condition_fn():
                raise unittest.SkipTest(reason)
            return fn(*args, **kwargs)
        return wrapper
    return decorator


def _skip_if_flag(flag_name, reason):
    """A decorator usable bare (``@skipIfRocm``) or called (``@skipIfRocm(msg=...)``)."""
    def outer(func=None, *, msg=reason):
        decorator = lazy_skip_if(lambda: globals()[flag_name], f"{outer.__name__}: {msg}")
        return decorator(func) if func is not None else decorator
    return outer


skipIfRocm = _skip_if_flag("TEST_WITH_ROCM", "test doesn't currently work on the ROCm stack")
skipIfRocm.__name__ = "skipIfRocm"
skipIfXpu = _skip_if_flag("TEST_XPU", "test doesn't currently work on the XPU stack")
skipIfXpu.__name__ = "skipIfXpu"
skipIfWindows = _skip_if_flag("IS_WINDOWS", "test doesn't currently work on the Windows stack")
skipIfWindows.__name__ = "skipIfWindows"


def skipIfCrossRef(fn):
    """Mirrors ``common_utils.skipIfCrossRef`` (crossref mode is never on here)."""
    return lazy_skip_if(lambda: TEST_WITH_CROSSREF, "test doesn't currently with crossref")(fn)


def skipIfTorchDynamo(msg="test doesn't currently work with dynamo"):
    """Mirrors ``common_utils.skipIfTorchDynamo(msg)``: skips when the suite runs under dynamo
    (``PYTORCH_TEST_WITH_DYNAMO=1``), never otherwise. Must be called: ``@skipIfTorchDynamo()``."""
    if not isinstance(msg, str):
        raise AssertionError("Are you using skipIfTorchDynamo correctly?")

    def decorator(fn):
        if isinstance(fn, type):
            if TEST_WITH_TORCHDYNAMO:
                fn.__unittest_skip__ = True
                fn.__unittest_skip_why__ = msg
            return fn

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if TEST_WITH_TORCHDYNAMO:
                raise unittest.SkipTest(msg)
            fn(*args, **kwargs)
        return wrapper
    return decorator


def skipIfTorchInductor(msg="test doesn't currently work with torchinductor", condition=TEST_WITH_TORCHINDUCTOR):
    """Mirrors ``common_utils.skipIfTorchInductor``."""
    def decorator(fn):
        return lazy_skip_if(lambda: condition, msg)(fn)
    return decorator


def skipRocmIfTorchInductor(msg="test doesn't currently work with torchinductor on the ROCm stack"):
    """Mirrors ``common_utils.skipRocmIfTorchInductor``."""
    return skipIfTorchInductor(msg=msg, condition=TEST_WITH_ROCM and TEST_WITH_TORCHINDUCTOR)


def xfailIf(condition):
    """Mirrors ``common_utils.xfailIf``: ``unittest.expectedFailure`` when ``condition``."""
    return lambda func: unittest.expectedFailure(func) if condition else func


def xfailIfTorchDynamo(func):
    """Mirrors ``common_utils.xfailIfTorchDynamo``: an expected failure only under dynamo."""
    return xfailIf(TEST_WITH_TORCHDYNAMO)(func)


def xfailIfLinux(func):
    """Mirrors ``common_utils.xfailIfLinux``."""
    return xfailIf(IS_LINUX and not TEST_WITH_ROCM and not IS_FBCODE)(func)


def xfailIfWindows(func):
    """Mirrors ``common_utils.xfailIfWindows``."""
    return xfailIf(IS_WINDOWS)(func)


def xfailIfPy312Plus(func):
    """Mirrors ``common_utils.xfailIfPy312Plus``."""
    return xfailIf(sys.version_info >= (3, 12))(func)


def xfailIfROCm(func):
    """Mirrors ``common_utils.xfailIfROCm``."""
    return xfailIf(TEST_WITH_ROCM)(func)


def xfailIfS390X(func):
    """Mirrors ``common_utils.xfailIfS390X``."""
    return xfailIf(IS_S390X)(func)


def xfailIfACL(func):
    """Mirrors ``common_utils.xfailIfACL``."""
    return xfailIf(TEST_ACL)(func)


def skipIfMPS(fn):
    """Mirrors ``common_utils.skipIfMPS``: skips a device-generic test instantiated for ``mps``
    (never here: only CPU tests are instantiated), or any test when MPS is the backend."""
    reason = "test doesn't currently work with MPS"
    if isinstance(fn, type):
        return lazy_skip_if(lambda: TEST_MPS, reason)(fn)
    has_device = "device" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if has_device:
            if args and (getattr(args[0], "device_type", None) or getattr(args[0], "device", None)) == "mps":
                raise unittest.SkipTest(reason)
        elif TEST_MPS:
            raise unittest.SkipTest(reason)
        return fn(*args, **kwargs)
    return wrapper


def skipIfHpu(fn):
    """Mirrors ``common_utils.skipIfHpu``."""
    return lazy_skip_if(lambda: TEST_HPU, "test doesn't currently work with HPU")(fn)


def skipIfNoLapack(fn):
    """Mirrors ``common_utils.skipIfNoLapack``: XLA always has its linear algebra, so never skips."""
    return lazy_skip_if(lambda: False, "PyTorch compiled without Lapack")(fn)


def skipIfNoSciPy(fn):
    """Mirrors ``common_utils.skipIfNoSciPy``."""
    return lazy_skip_if(lambda: not TEST_SCIPY, "test require SciPy, but SciPy not found")(fn)


def skipIfNoXPU(fn):
    """Mirrors ``common_utils.skipIfNoXPU`` (no XPU here: always skips)."""
    return lazy_skip_if(lambda: not TEST_XPU, "test required PyTorched compiled with XPU")(fn)


def skipIfNoXNNPACK(fn):
    """Mirrors ``common_utils.skipIfNoXNNPACK`` (no XNNPACK here: always skips)."""
    return lazy_skip_if(lambda: True, "XNNPACK must be enabled for these tests. Please build with USE_XNNPACK=1.")(fn)


def skipIfRocmVersionLessThan(version=None):
    """Mirrors ``common_utils.skipIfRocmVersionLessThan`` (no ROCm: never skips)."""
    return lazy_skip_if(lambda: TEST_WITH_ROCM, f"ROCm version less than {version} required")


def skipIfNotMiopenSuggestNHWC(fn):
    """Mirrors ``common_utils.skipIfNotMiopenSuggestNHWC``."""
    return lazy_skip_if(lambda: not TEST_WITH_MIOPEN_SUGGEST_NHWC,
                        "test doesn't currently work without MIOpen NHWC activation")(fn)


def skip_if_pytest(fn):
    """Mirrors ``common_utils.skip_if_pytest``: skips when run by pytest."""
    return lazy_skip_if(lambda: "PYTEST_CURRENT_TEST" in os.environ, "does not work under pytest")(fn)


def skipIfSlowGradcheckEnv(fn):
    """Mirrors ``common_utils.skipIfSlowGradcheckEnv``."""
    return unittest.skipIf(TEST_WITH_SLOW_GRADCHECK,
                           "Tests that don't use gradcheck don't need to run on slow_gradcheck CI")(fn)


def slowTest(fn):
    """Mirrors ``common_utils.slowTest``: skipped unless ``PYTORCH_TEST_WITH_SLOW=1``."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not TEST_WITH_SLOW:
            raise unittest.SkipTest("test is slow; run with PYTORCH_TEST_WITH_SLOW to enable test")
        fn(*args, **kwargs)
    wrapper.__dict__["slow_test"] = True
    return wrapper


def slowTestIf(condition):
    """Mirrors ``common_utils.slowTestIf``."""
    return slowTest if condition else (lambda fn: fn)


def serialTest(condition=True):
    """Mirrors ``common_utils.serialTest``: marks the test ``pytest.mark.serial`` when pytest is
    importable (the mark only orders tests under pytest-xdist)."""
    if type(condition) is not bool:
        raise AssertionError(f"expected condition to be bool, got {type(condition)}")

    def decorator(fn):
        if condition and _has_module("pytest"):
            import pytest
            return pytest.mark.serial(fn)
        return fn
    return decorator


class SwapTensorsGuard:
    """Mirrors ``common_utils.SwapTensorsGuard``: sets ``torch.__future__``'s swap flag for the
    block (``None`` leaves it alone) and restores the previous value on exit."""

    def __init__(self, use_swap_tensors):
        self.use_swap_tensors = use_swap_tensors

    def __enter__(self):
        from tracegrad import __future__ as future
        self.swap_before = future.get_swap_module_params_on_conversion()
        if self.use_swap_tensors is not None:
            future.set_swap_module_params_on_conversion(self.use_swap_tensors)
        return self

    def __exit__(self, *exc):
        from tracegrad import __future__ as future
        future.set_swap_module_params_on_conversion(self.swap_before)
        return False


def wrapSwapTensorsTest(swap=None):
    """Mirrors ``common_utils.wrapSwapTensorsTest``: runs the test under ``SwapTensorsGuard(swap)``."""
    def dec_fn(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with SwapTensorsGuard(swap):
                fn(*args, **kwargs)
        return wrapper
    return dec_fn


class swap(_TestParametrizer):
    """Mirrors ``common_utils.swap``: one test per value of the swap flag, named ``..._swap_True``."""

    def __init__(self, swap_values):
        super().__init__()
        self.swap_values = swap_values

    def _parametrize_test(self, test, generic_cls, device_cls):
        for value in self.swap_values:
            yield wrapSwapTensorsTest(value)(test), f"swap_{value}", {}, lambda _: []


def markDynamoStrictTest(cls_or_func=None, nopython=False):
    """Mirrors ``common_utils.markDynamoStrictTest``: only records the flags (no dynamo runs here)."""
    def decorator(obj):
        if inspect.isclass(obj):
            obj.dynamo_strict, obj.dynamo_strict_nopython = True, nopython
        return obj
    return decorator if cls_or_func is None else decorator(cls_or_func)


def unMarkDynamoStrictTest(cls=None):
    """Mirrors ``common_utils.unMarkDynamoStrictTest``."""
    def decorator(c):
        c.dynamo_strict = False
        return c
    return decorator if cls is None else decorator(cls)


def runWithoutCompiledAutograd(msg="test doesn't currently work with compiled autograd"):
    """Mirrors ``common_utils.runWithoutCompiledAutograd`` (no compiled autograd here: runs as is)."""
    return lambda func: func


def _cuda_policy_flag(attr):
    def outer(condition):
        def dec(fn):
            if getattr(fn, attr, True):
                setattr(fn, attr, not condition)
            return fn
        return dec
    return outer


skipCUDAMemoryLeakCheckIf = _cuda_policy_flag("_do_cuda_memory_leak_check")
skipCUDAMemoryLeakCheckIf.__doc__ = "Mirrors ``common_utils.skipCUDAMemoryLeakCheckIf`` (records the flag only)."
skipCUDANonDefaultStreamIf = _cuda_policy_flag("_do_cuda_non_default_stream")
skipCUDANonDefaultStreamIf.__doc__ = "Mirrors ``common_utils.skipCUDANonDefaultStreamIf`` (records the flag only)."


def gcIfJetson(fn):
    """Mirrors ``common_utils.gcIfJetson`` (not a Jetson: the test as is)."""
    return fn


def suppress_warnings(fn):
    """Mirrors ``common_utils.suppress_warnings``: runs the test with every warning ignored."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    return wrapper


requires_cuda = unittest.skipUnless(TEST_CUDA, "Requires CUDA")
TEST_ACCELERATOR = TEST_CUDA or TEST_MPS
TEST_MULTIACCELERATOR = TEST_CUDA and tracegrad.cuda.device_count() > 1


def skipIfCompiledWithoutNumpy(fn):
    """Mirrors ``common_utils.skipIfCompiledWithoutNumpy`` (numpy is a dependency: never skips)."""
    return unittest.skipIf(not TEST_NUMPY, "PyTorch was compiled without numpy support")(fn)


def skipIfLegacyJitExecutor(msg="test doesn't currently work with legacy JIT executor"):
    """Mirrors ``common_utils.skipIfLegacyJitExecutor`` (no legacy JIT executor: never skips)."""
    return lambda fn: fn


def skipIfNNModuleInlined(msg="test doesn't currently work with nn module inlining", condition=False):
    """Mirrors ``common_utils.skipIfNNModuleInlined`` (dynamo's module inlining is never on here)."""
    return lambda fn: lazy_skip_if(lambda: condition, msg)(fn)


def skipIfRocmArch(arch):
    """Mirrors ``common_utils.skipIfRocmArch`` (no ROCm: never skips)."""
    return lambda fn: fn


def skipIfFreeThreaded(msg="Test doesn't work with free-threaded python"):
    """Mirrors ``common_utils.skipIfFreeThreaded``."""
    import sysconfig
    return unittest.skipIf(sysconfig.get_config_var("Py_GIL_DISABLED") == 1, msg)


def skip_but_pass_in_sandcastle(reason):
    """Mirrors ``common_utils.skip_but_pass_in_sandcastle``: ``unittest.skip`` off Sandcastle."""
    return skip_but_pass_in_sandcastle_if(True, reason)


def skip_but_pass_in_sandcastle_if(condition, reason):
    """Mirrors ``common_utils.skip_but_pass_in_sandcastle_if``: ``unittest.skipIf`` off Sandcastle,
    a silently passing test on it."""
    def decorator(func):
        if condition:
            if IS_SANDCASTLE:
                @functools.wraps(func)
                def wrapper(*args, **kwargs):
                    print(f"Skipping {func.__name__} on sandcastle for following reason: {reason}", file=sys.stderr)
                return wrapper
            func.__unittest_skip__ = True
            func.__unittest_skip_why__ = reason
        return func
    return decorator


def xpassIfTorchDynamo_np(func):
    """Mirrors ``common_utils.xpassIfTorchDynamo_np``: an expected failure unless under dynamo."""
    return func if TEST_WITH_TORCHDYNAMO else unittest.expectedFailure(func)


def setLinalgBackendsToDefaultFinally(fn):
    """Mirrors ``common_utils.setLinalgBackendsToDefaultFinally`` (one linalg backend here)."""
    return fn


def setBlasBackendsToDefaultFinally(fn):
    """Mirrors ``common_utils.setBlasBackendsToDefaultFinally`` (one BLAS backend here)."""
    return fn


@contextlib.contextmanager
def skip_exception_type(exc_type):
    """Mirrors ``common_utils.skip_exception_type``: that exception inside the block skips the test."""
    try:
        yield
    except exc_type as e:
        raise unittest.SkipTest(f"not implemented: {e}") from e


@contextlib.contextmanager
def disable_gc():
    """Mirrors ``common_utils.disable_gc``: the garbage collector off inside the block."""
    import gc
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def set_cwd(path):
    """Mirrors ``common_utils.set_cwd``: ``os.chdir(path)`` inside the block."""
    return _temporarily(os.getcwd, os.chdir, path)


def first_sample(self, samples):
    """Mirrors ``common_utils.first_sample``: the first of ``samples``; none skips the test."""
    try:
        return next(iter(samples))
    except StopIteration as e:
        raise unittest.SkipTest("Skipped! Need at least 1 sample input") from e


def get_function_arglist(func):
    """Mirrors ``common_utils.get_function_arglist``: the positional parameter names."""
    return inspect.getfullargspec(func).args


def iter_indices(tensor):
    """Mirrors ``common_utils.iter_indices``: every index of ``tensor`` (ints for 1-D, tuples above)."""
    import itertools
    if tensor.dim() == 0:
        return range(0)
    if tensor.dim() == 1:
        return range(tensor.size(0))
    return itertools.product(*(range(s) for s in tensor.size()))


# ---- RNG, dtype and warning helpers -------------------------------------------------------------
def set_rng_seed(seed=None):
    """Mirrors ``common_utils.set_rng_seed``: seeds tracegrad, ``random`` and numpy (default ``SEED``)."""
    seed = SEED if seed is None else seed
    tracegrad.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


@contextlib.contextmanager
def freeze_rng_state():
    """Mirrors ``common_utils.freeze_rng_state``: the default generator's state is restored on
    exit, so draws inside the block do not move the stream seen after it."""
    state = tracegrad.get_rng_state()
    try:
        yield
    finally:
        tracegrad.set_rng_state(state)


@contextlib.contextmanager
def _temporarily(get, set_, value):
    """``set_(value)`` inside the block, the value ``get()`` gave restored after it."""
    saved = get()
    set_(value)
    try:
        yield
    finally:
        set_(saved)


def set_default_dtype(dtype):
    """Mirrors ``common_utils.set_default_dtype``: ``tracegrad.set_default_dtype`` inside the block."""
    return _temporarily(tracegrad.get_default_dtype, tracegrad.set_default_dtype, dtype)


def set_default_tensor_type(tensor_type):
    """Mirrors ``common_utils.set_default_tensor_type``: ``tracegrad.set_default_tensor_type`` inside the block."""
    return _temporarily(lambda: tracegrad.tensor([]).type(), tracegrad.set_default_tensor_type, tensor_type)


def set_warn_always_context(new_val: bool):
    """Mirrors ``common_utils.set_warn_always_context``."""
    return _temporarily(tracegrad.is_warn_always_enabled, tracegrad.set_warn_always, new_val)


class DeterministicGuard:
    """Mirrors ``common_utils.DeterministicGuard``: ``use_deterministic_algorithms`` inside the block."""

    def __init__(self, deterministic, *, warn_only=False, fill_uninitialized_memory=True):
        self.deterministic, self.warn_only = deterministic, warn_only

    def __enter__(self):
        self._saved = (tracegrad.are_deterministic_algorithms_enabled(),
                       tracegrad.is_deterministic_algorithms_warn_only_enabled())
        tracegrad.use_deterministic_algorithms(self.deterministic, warn_only=self.warn_only)

    def __exit__(self, *exc):
        tracegrad.use_deterministic_algorithms(self._saved[0], warn_only=self._saved[1])


@contextlib.contextmanager
def TemporaryFileName(*args, **kwargs):
    """Mirrors ``common_utils.TemporaryFileName``: a fresh file path, removed on exit."""
    with tempfile.NamedTemporaryFile(*args, delete=False, **kwargs) as f:
        name = f.name
    try:
        yield name
    finally:
        if os.path.exists(name):
            os.unlink(name)


@contextlib.contextmanager
def TemporaryDirectoryName(suffix=None):
    """Mirrors ``common_utils.TemporaryDirectoryName``: a fresh directory, removed on exit."""
    name = tempfile.mkdtemp(suffix=suffix)
    try:
        yield name
    finally:
        shutil.rmtree(name, ignore_errors=True)


def download_file(url, binary=True):
    """Mirrors ``common_utils.download_file``'s offline behaviour: a file already in ``test/data``
    next to the running script is returned; anything else skips the test (no network here)."""
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "data", url.split("/")[-1])
    if os.path.exists(path):
        return path
    raise unittest.SkipTest(f"could not download test file '{url}'")


# ---- gradcheck with the harness's defaults -----------------------------------------------------
def _harness_defaults(kwargs):
    # torch's harness checks batched gradients and runs the fast mode unless the slow-gradcheck CI
    # asks for the full one; an explicit None also means the default
    for key, value in (("check_batched_grad", True), ("fast_mode", not TEST_WITH_SLOW_GRADCHECK)):
        if kwargs.get(key) is None:
            kwargs[key] = value
    return kwargs


def gradcheck(fn, inputs, **kwargs):
    """Mirrors ``common_utils.gradcheck``: ``tracegrad.autograd.gradcheck`` with
    ``check_batched_grad=True`` and ``fast_mode=True`` unless given (``None`` also means the
    default; ``PYTORCH_TEST_WITH_SLOW_GRADCHECK=1`` turns the fast mode off). Returns True or
    raises GradcheckError, as the public function."""
    return tracegrad.autograd.gradcheck(fn, inputs, **_harness_defaults(kwargs))


def gradgradcheck(fn, inputs, grad_outputs=None, **kwargs):
    """Mirrors ``common_utils.gradgradcheck``: ``tracegrad.autograd.gradgradcheck`` with the
    same defaults as ``gradcheck`` here."""
    return tracegrad.autograd.gradgradcheck(fn, inputs, grad_outputs, **_harness_defaults(kwargs))


def _assertGradAndGradgradChecks(test_case, apply_fn, inputs, **kwargs):
    """Mirrors ``common_utils._assertGradAndGradgradChecks``."""
    test_case.assertTrue(gradcheck(apply_fn, inputs, **kwargs))
    test_case.assertTrue(gradgradcheck(apply_fn, inputs, **kwargs))


# ---- TestCase ----------------------------------------------------------------------------------
class _RaisesIgnoringNotImplemented(unittest.case._AssertRaisesContext):
    """assertRaises for ``_ignore_not_implemented_error``: a NotImplementedError skips the test."""

    def __exit__(self, exc_type, exc_value, tb):
        if exc_type is not None and issubclass(exc_type, NotImplementedError):
            self.test_case.skipTest(f"not_implemented: {exc_value}")
        return super().__exit__(exc_type, exc_value, tb)


class TestCase(_BaseTestCase):
    """Mirrors ``torch.testing._internal.common_utils.TestCase``, a ``unittest.TestCase`` with:

    - ``setUp``: seeds tracegrad, ``random`` and numpy with ``SEED`` (1234) before every test and
      remembers grad mode, which ``tearDown`` restores; with ``_default_dtype_check_enabled`` both
      assert the default dtype is float32.
    - ``assertEqual(x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
      exact_device=False, ...)``: torch's comparison (see its docstring); ``assertNotEqual``.
    - ``precision`` / ``rel_tol``: minimum atol / rtol of every ``assertEqual`` (set per test by
      ``@precisionOverride`` and ``@toleranceOverride``).
    - ``assertRaisesRegex``/``assertRaises`` as unittest (a NotImplementedError skips the test
      when the class sets ``_ignore_not_implemented_error``); ``assertWarnsOnceRegex``,
      ``assertNotWarn``, ``assertExpected`` (files under ``expect/``), ``assertExpectedInline``
      (when ``expecttest`` is installed), ``assertObjectIn``, ``assertEqualIgnoreType``,
      ``assertEqualBroadcasting``, ``assertGreaterAlmostEqual``, ``compare_with_numpy``.
    Differs from torch: no dynamo/crossref/CUDA-memory policies (those modes do not exist here).
    """
    _precision: float = 0
    _rel_tol: float = 0
    _default_dtype_check_enabled: bool = False
    _do_cuda_memory_leak_check = False
    _do_cuda_non_default_stream = False
    _ignore_not_implemented_error = False
    _diffThreshold = sys.maxsize
    maxDiff = None

    @property
    def precision(self) -> float:
        return self._precision

    @precision.setter
    def precision(self, prec: float) -> None:
        self._precision = prec

    @property
    def rel_tol(self) -> float:
        return self._rel_tol

    @rel_tol.setter
    def rel_tol(self, prec: float) -> None:
        self._rel_tol = prec

    def __init__(self, method_name="runTest", methodName="runTest"):
        if methodName != "runTest":
            method_name = methodName
        super().__init__(method_name)
        method = getattr(self, method_name, None)
        if method is not None and self._ignore_not_implemented_error:
            @functools.wraps(method)
            def skipping_not_implemented(*args, **kwargs):
                try:
                    return method(*args, **kwargs)
                except NotImplementedError as e:
                    raise unittest.SkipTest(f"not_implemented: {e}") from e
            setattr(self, method_name, skipping_not_implemented)

    def setUp(self):
        set_rng_seed()
        if self._default_dtype_check_enabled and tracegrad.get_default_dtype() != tracegrad.float:
            raise AssertionError(f"expected default dtype to be torch.float, got {tracegrad.get_default_dtype()}")
        self._prev_grad_state = tracegrad.is_grad_enabled()

    def tearDown(self):
        if self._default_dtype_check_enabled and tracegrad.get_default_dtype() != tracegrad.float:
            raise AssertionError(f"expected default dtype to be torch.float, got {tracegrad.get_default_dtype()}")
        if hasattr(self, "_prev_grad_state"):
            tracegrad.set_grad_enabled(self._prev_grad_state)

    def assertEqual(self, x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
                    exact_device=False, exact_layout=False, exact_stride=False, exact_is_coalesced=False):
        """torch's ``TestCase.assertEqual``. Inputs, possibly nested in sequences (also
        ``nn.Sequential``/``ModuleList``/``ParameterList``) and mappings (also ``ModuleDict``):

        - tensors and numpy arrays, in any mix: same shape; same dtype unless
          ``exact_dtype=False`` (then promoted); same device only with ``exact_device=True``;
          values within ``atol + rtol * |expected|`` -- defaults by dtype as ``assert_close``
          (float32 ``(1.3e-6, 1e-5)``, float64 ``(1e-7, 1e-7)``, integers exact), raised to at
          least ``self.rel_tol``/``self.precision``; NaNs equal unless ``equal_nan=False``;
        - a tensor against a (nested) list or tuple: the list becomes a tensor of the tensor's dtype;
        - a number against a number or a one-element tensor/array: types never matter (1 == 1.0),
          tolerances as float32 for floats; a bool against a bool, number or one-element tensor:
          truthiness; a multi-element tensor against a number or bool is a ValueError;
        - None, strings, sets, types and other objects through ``==`` (unittest's message).
        ``atol``/``rtol``: both or neither (ValueError). ``msg``: a string appended to the
        generated message, or a callable that maps it. Raises AssertionError on a mismatch,
        TypeError for an uncomparable pair (a tensor against a dict), RuntimeError for an
        empty tensor against a number (torch's classes). Sparse COO tensors compare as
        ``assert_close``'s; a sparse tensor against a dense one compares dense unless
        ``exact_layout=True``. ``exact_is_coalesced`` is accepted and unchecked (as torch's).
        """
        __tracebackhide__ = True
        _assert_equal(x, y, msg, atol=atol, rtol=rtol, equal_nan=equal_nan, exact_dtype=exact_dtype,
                      exact_device=exact_device, exact_stride=exact_stride, exact_layout=exact_layout,
                      atol_override=self.precision,
                      rtol_override=self.rel_tol, long_message=self.longMessage)

    def assertNotEqual(self, x, y, msg=None, *, atol=None, rtol=None, **kwargs):
        """torch's ``assertNotEqual``: passes exactly when ``assertEqual`` raises AssertionError
        (its other errors -- TypeError, ValueError -- propagate)."""
        with self.assertRaises(AssertionError, msg=msg):
            self.assertEqual(x, y, msg, atol=atol, rtol=rtol, **kwargs)

    def assertEqualIgnoreType(self, *args, **kwargs):
        """``assertEqual`` with ``exact_dtype=False`` (torch's name for it)."""
        return self.assertEqual(*args, exact_dtype=False, **kwargs)

    def assertEqualTypeString(self, x, y):
        """Two tensors have the same device and legacy type string (``x.type()``, e.g.
        ``'torch.FloatTensor'``) -- torch's helper of that name."""
        self.assertEqual(x.device, y.device)
        self.assertEqual(x.type(), y.type())

    def assertEqualBroadcasting(self, x, y, *args, **kwargs):
        """``assertEqual(x, y)`` after broadcasting ``y`` (a number or nested list) to ``x``'s shape."""
        if not isinstance(y, tracegrad.Tensor):
            y = tracegrad.ones_like(x) * (y if isinstance(y, (int, float, complex, bool)) else tracegrad.tensor(y))
        return self.assertEqual(x, y, *args, **kwargs)

    def assertObjectIn(self, obj, iterable):
        """Passes when ``obj`` itself (by identity) is in ``iterable``."""
        if not any(id(obj) == id(elem) for elem in iterable):
            raise AssertionError("object not found in iterable")

    def assertRaises(self, expected_exception, *args, **kwargs):
        if self._ignore_not_implemented_error:
            return _RaisesIgnoringNotImplemented(expected_exception, self).handle("assertRaises", args, kwargs)
        return super().assertRaises(expected_exception, *args, **kwargs)

    def assertRaisesRegex(self, expected_exception, expected_regex, *args, **kwargs):
        if self._ignore_not_implemented_error:
            return _RaisesIgnoringNotImplemented(expected_exception, self, expected_regex).handle(
                "assertRaisesRegex", args, kwargs)
        return super().assertRaisesRegex(expected_exception, expected_regex, *args, **kwargs)

    def assertNotWarn(self, callable, msg=""):
        """Passes when ``callable()`` emits no warning at all (warn-always mode on)."""
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                callable()
            self.assertTrue(len(ws) == 0, msg)

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):
        """Context manager: the block must warn ``category`` (exact class) with a message that
        ``re.match``es ``regex``; warn-once warnings are forced to fire (warn-always mode)."""
        pattern = re.compile(regex)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                yield
            if len(ws) == 0:
                self.fail("no warning caught")
            self.assertTrue(any(type(w.message) is category for w in ws))
            self.assertTrue(any(re.match(pattern, str(w.message)) for w in ws),
                            f"{pattern}, {[w.message for w in ws if type(w.message) is category]}")

    def assertGreaterAlmostEqual(self, first, second, places=None, msg=None, delta=None):
        """Passes when ``first >= second``, or within ``delta`` / ``places`` (default 7) below it."""
        if delta is not None and places is not None:
            raise TypeError("specify delta or places not both")
        if first >= second:
            return
        diff = second - first
        if delta is not None and diff <= delta:
            return
        if delta is None and round(diff, 7 if places is None else places) == 0:
            return
        raise self.failureException(self._formatMessage(msg, f"{first} not greater than or equal to {second}"))

    def assertExpected(self, s, subname=None):
        """Compares ``s`` with ``expect/<module>.<test>[-subname].expect`` next to the test file
        (written when ``--accept`` is given or ``EXPECTTEST_ACCEPT=1``)."""
        if not isinstance(s, str):
            raise TypeError("assertExpected is strings only")
        module_id = self.__class__.__module__
        munged = re.sub(r"^test_", "", self.id().split(".")[-1])
        if subname:
            munged += "-" + subname
        base = module_id if module_id != "__main__" else os.path.splitext(os.path.basename(sys.argv[0]))[0]
        path = os.path.join(os.path.dirname(os.path.abspath(inspect.getfile(type(self)))), "expect",
                            f"{base}.{munged}.expect")
        accept = bool(_expecttest is not None and getattr(_expecttest, "ACCEPT", False)) or \
            os.getenv("EXPECTTEST_ACCEPT") == "1"
        if not os.path.exists(path):
            if accept:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(s)
                return
            raise RuntimeError(f"I got this output for {munged}:\n\n{s}\n\nNo expect file exists; to accept the "
                               f"current output, re-run the test with --accept")
        with open(path) as f:
            expected = f.read()
        if accept and expected != s:
            with open(path, "w") as f:
                f.write(s)
            return
        self.assertMultiLineEqual(expected, s)

    if _expecttest is None:
        def assertExpectedInline(self, actual, expect, skip=0, ignore_comments=False, ignore_empty_lines=False):
            """expecttest's inline check without its rewriting: ``actual`` must equal ``expect``
            (after expecttest's de-indentation)."""
            import textwrap
            self.assertMultiLineEqual(textwrap.dedent(expect).strip("\n"), actual.strip("\n"))

    def assertLeaksNoCudaTensors(self, name=None):
        """No CUDA caching allocator here: an empty context."""
        return contextlib.nullcontext()

    def compare_with_reference(self, torch_fn, ref_fn, sample_input, **kwargs):
        """``assertEqual(torch_fn(sample), ref_fn(sample as numpy))`` for an OpInfo ``SampleInput``."""
        numpy_sample = sample_input.numpy()
        n_inp, n_args, n_kwargs = numpy_sample.input, numpy_sample.args, numpy_sample.kwargs
        t_inp, t_args, t_kwargs = sample_input.input, sample_input.args, sample_input.kwargs
        actual = torch_fn(t_inp, *t_args, **t_kwargs)
        expected = ref_fn(n_inp, *n_args, **n_kwargs)
        self.assertEqual(actual, expected, exact_device=False, **kwargs)

    def compare_with_numpy(self, torch_fn, np_fn, tensor_like, device=None, dtype=None, **kwargs):
        """Runs ``torch_fn`` on a tensor and ``np_fn`` on the same values as an array, then
        ``assertEqual``s them (a 0-d numpy result is compared as a number)."""
        if isinstance(tensor_like, tracegrad.Tensor):
            t_cpu = tensor_like.detach().cpu()
            if t_cpu.dtype is tracegrad.bfloat16:
                # as torch's: numpy gets float32 values (a bfloat16 array would give numpy
                # bfloat16 scalars, which assertEqual does not take as numbers)
                t_cpu = t_cpu.float()
            a = t_cpu.numpy()
            t = tensor_like
        else:
            a = np.array(tensor_like, dtype=torch_to_numpy_dtype_dict[dtype] if dtype is not None else None)
            t = tracegrad.tensor(tensor_like, device=device, dtype=dtype)
        np_result = np_fn(a)
        torch_result = torch_fn(t).cpu()
        if isinstance(np_result, np.ndarray):
            try:
                np_result = tracegrad.from_numpy(np_result)
            except Exception:
                # negative strides (np.flip/rot90 views) are refused by from_numpy, as in
                # torch; a copy keeps the array's dtype (tolist() would lose complex128/int widths)
                np_result = tracegrad.from_numpy(np_result.copy())
            if torch_result.dtype == tracegrad.bfloat16 and np_result.dtype == tracegrad.float:
                torch_result = torch_result.to(tracegrad.float)
        self.assertEqual(np_result, torch_result, **kwargs)

    @staticmethod
    def run_process_no_exception(code, env=None):
        """Runs ``python -c code``; returns ``(stdout, stderr)`` bytes."""
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env)
        return p.stdout, p.stderr


class TestCaseBase(TestCase):
    """Mirrors ``common_utils.TestCaseBase`` (a TestCase that is not itself collected)."""
    __test__ = False


class NoTest:
    """Mirrors ``common_utils.NoTest``: mix in to keep pytest from collecting a class."""
    __test__ = False


# ---- running -------------------------------------------------------------------------------------
def parse_cmd_line_args():
    """torch's harness options that change nothing here (``--accept`` sets expecttest's ACCEPT);
    returns the argv left for unittest."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--subprocess", "--accept", "--test-bailouts", "--use-pytest", "--discover-tests",
                 "--rerun-disabled-tests"):
        parser.add_argument(flag, action="store_true")
    for flag in ("--jit-executor", "--log-suffix", "--import-slow-tests", "--import-disabled-tests", "--save-xml",
                 "--pytest-single-test"):
        parser.add_argument(flag, nargs="?")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--run-parallel", type=int, default=1)
    args, remaining = parser.parse_known_args()
    if args.accept and _expecttest is not None:
        _expecttest.ACCEPT = True
    return args, [sys.argv[0]] + remaining


def run_tests(argv=None):
    """Mirrors ``common_utils.run_tests``: runs the ``__main__`` module's tests with
    ``unittest.main`` (and exits with its status); torch's harness flags are parsed and dropped,
    ``--repeat N`` repeats the run."""
    args, remaining = parse_cmd_line_args()
    argv = remaining if argv is None else argv
    set_rng_seed()
    if args.repeat > 1:
        for _ in range(args.repeat):
            if not unittest.main(exit=False, argv=argv).result.wasSuccessful():
                sys.exit(-1)
        return
    unittest.main(argv=argv)


def load_tests(loader, tests, pattern):
    """Mirrors ``common_utils.load_tests`` (unittest's hook): the non-empty suites of the module."""
    suite = unittest.TestSuite()
    for group in tests:
        if getattr(group, "_tests", True):
            suite.addTest(group)
    return suite


# ---- small tensor helpers torch's tests import from here -----------------------------------------
def is_iterable(obj):
    """True when ``iter(obj)`` works."""
    try:
        iter(obj)
        return True
    except TypeError:
        return False


def is_iterable_of_tensors(iterable, include_empty=False):
    """True for a non-tensor iterable whose items are all tensors (empty counts with ``include_empty``)."""
    if isinstance(iterable, tracegrad.Tensor):
        return False
    try:
        if len(iterable) == 0:
            return include_empty
        return all(isinstance(t, tracegrad.Tensor) for t in iter(iterable))
    except TypeError:
        return False


def noncontiguous_like(t):
    """A non-contiguous tensor equal to ``t`` (every second element of a doubled buffer)."""
    if not t.is_contiguous():
        return t
    if t.dtype.is_floating_point or t.dtype.is_complex:
        value = float("nan")
    elif t.dtype == tracegrad.bool:
        value = True
    else:
        value = 12
    result = t.new_empty(t.shape + (2,))
    result[..., 0] = value
    result[..., 1] = t.detach()
    result = result[..., 1]
    result.requires_grad_(t.requires_grad)
    return result


def random_symmetric_matrix(l, *batches, dtype=tracegrad.double, device="cpu"):
    """A random symmetric ``(*batches, l, l)`` matrix."""
    a = tracegrad.randn(*(batches + (l, l)), dtype=dtype, device=device)
    return (a + a.mT).div_(2)


def random_symmetric_psd_matrix(l, *batches, dtype=tracegrad.double, device="cpu"):
    """A random symmetric positive semi-definite ``(*batches, l, l)`` matrix."""
    a = tracegrad.randn(*(batches + (l, l)), dtype=dtype, device=device)
    return a @ a.mT


def random_symmetric_pd_matrix(matrix_size, *batch_dims, dtype=tracegrad.double, device="cpu"):
    """A random symmetric positive definite ``(*batch_dims, n, n)`` matrix."""
    a = tracegrad.randn(*(batch_dims + (matrix_size, matrix_size)), dtype=dtype, device=device)
    return a @ a.mT + tracegrad.eye(matrix_size, dtype=dtype, device=device) * 1e-5


def random_square_matrix_of_rank(l, rank, dtype=tracegrad.double, device="cpu"):
    """A random ``(l, l)`` matrix of the given rank."""
    if not rank <= l:
        raise AssertionError(f"expected rank <= l, got rank={rank}, l={l}")
    a = tracegrad.randn(l, l, dtype=dtype, device=device)
    u, s, vh = tracegrad.linalg.svd(a, full_matrices=False)
    s = tracegrad.where(tracegrad.arange(l, device=device) < rank, s, tracegrad.zeros_like(s))
    return (u * s.to(dtype).unsqueeze(-2)) @ vh


def _real_of(dtype):
    """The real dtype a (possibly complex) ``dtype`` carries its singular values in."""
    return {tracegrad.cfloat: tracegrad.float, tracegrad.cdouble: tracegrad.double}.get(dtype, dtype)


def random_well_conditioned_matrix(*shape, dtype, device, mean=1.0, sigma=0.001):
    """A random ``shape`` matrix (or batch) whose singular values are drawn from N(mean, sigma^2),
    sorted largest first: the smaller ``sigma``, the better conditioned."""
    x = tracegrad.rand(shape, dtype=dtype, device=device)
    m, n = x.size(-2), x.size(-1)
    u, _, vh = tracegrad.linalg.svd(x, full_matrices=False)
    s = tracegrad.randn(*(tuple(shape[:-2]) + (min(m, n),)), dtype=_real_of(dtype), device=device)
    s = (s * sigma + mean).sort(-1, descending=True).values.to(dtype)
    return (u * s.unsqueeze(-2)) @ vh


def make_symmetric_matrices(*shape, device, dtype):
    """A ``make_tensor`` matrix (or batch) symmetrized: ``(t + t.mT) / 2``."""
    if shape[-1] != shape[-2]:
        raise AssertionError(f"expected square matrix, got shape[-1]={shape[-1]} != shape[-2]={shape[-2]}")
    t = make_tensor(shape, device=device, dtype=dtype)
    return (t + t.mT).div_(2)


def make_symmetric_pd_matrices(*shape, device, dtype):
    """A ``make_tensor`` matrix ``t`` turned symmetric positive definite: ``t @ t.mT + 1e-5 I``."""
    if shape[-1] != shape[-2]:
        raise AssertionError(f"expected square matrix, got shape[-1]={shape[-1]} != shape[-2]={shape[-2]}")
    t = make_tensor(shape, device=device, dtype=dtype)
    return t @ t.mT + tracegrad.eye(shape[-1], device=device, dtype=dtype) * 1e-5


def random_hermitian_matrix(l, *batches, dtype=tracegrad.double, device="cpu"):
    """A random Hermitian ``(*batches, l, l)`` matrix: ``(a + a^H) / 2``."""
    a = tracegrad.randn(*(batches + (l, l)), dtype=dtype, device=device)
    return (a + a.mH).div_(2)


def random_hermitian_psd_matrix(matrix_size, *batch_dims, dtype=tracegrad.double, device="cpu"):
    """A random Hermitian positive semi-definite ``(*batch_dims, n, n)`` matrix ``a @ a^H``."""
    a = tracegrad.randn(*(batch_dims + (matrix_size, matrix_size)), dtype=dtype, device=device)
    return a @ a.mH


def random_hermitian_pd_matrix(matrix_size, *batch_dims, dtype, device):
    """A random Hermitian positive definite ``(*batch_dims, n, n)`` matrix ``a @ a^H + I``."""
    a = tracegrad.randn(*(batch_dims + (matrix_size, matrix_size)), dtype=dtype, device=device)
    return a @ a.mH + tracegrad.eye(matrix_size, dtype=dtype, device=device)


def make_fullrank_matrices_with_distinct_singular_values(*shape, device, dtype, requires_grad=False):
    """A ``make_tensor`` matrix (or batch) given the singular values ``1 + 1/s`` for
    ``s = 2, -3, 4, -5, ...``: all distinct, in [2/3, 3/2], so well conditioned."""
    with tracegrad.no_grad():
        t = make_tensor(shape, device=device, dtype=dtype)
        u, _, vh = tracegrad.linalg.svd(t, full_matrices=False)
        k = min(shape[-1], shape[-2])
        s = tracegrad.arange(2, k + 2, dtype=_real_of(dtype), device=device)
        s[1::2] *= -1.0
        s = s.reciprocal().add(1.0)
        x = (u * s.to(u.dtype)) @ vh
    x.requires_grad_(requires_grad)
    return x


def random_matrix(rows, columns, *batch_dims, dtype=tracegrad.double, device="cpu", silent=False, singular=False):
    """A random ``(*batch_dims, rows, columns)`` matrix with singular values evenly spaced in
    (0, 1]; ``singular=True`` zeroes the last one (and the first too when there are more than two),
    so LU has to pivot."""
    a = tracegrad.randn(batch_dims + (rows, columns), dtype=dtype, device=device)
    if a.numel() == 0:
        return a
    u, _, vh = tracegrad.linalg.svd(a, full_matrices=False)
    k = min(rows, columns)
    s = tracegrad.linspace(1 / (k + 1), 1, k, dtype=dtype, device=device)
    if singular:
        s[k - 1] = 0
        if k > 2:
            s[0] = 0
    return (u * s.unsqueeze(-2)) @ vh


def random_lowrank_matrix(rank, rows, columns, *batch_dims, **kwargs):
    """A random ``(*batch_dims, rows, columns)`` matrix of the given rank (a product of two
    ``random_matrix`` factors through ``rank``)."""
    b = random_matrix(rows, rank, *batch_dims, **kwargs)
    c = random_matrix(rank, columns, *batch_dims, **kwargs)
    return b.matmul(c)


def do_test_empty_full(self, dtypes, layout, device):
    """torch's shared check of the empty/full factories (test_tensor_creation_ops.py's
    test_empty_full): for each dtype, ``empty``/``full`` and the ``new_*``/``*_like`` forms give
    the asked shape, dtype, layout and device, and ``full`` the fill value. Our own code."""
    import tracegrad
    shapes = [tracegrad.Size([0]), tracegrad.Size([0, 2]), tracegrad.Size([3]), tracegrad.Size([2, 3, 1])]

    def check(t, shape, dtype, fill=None):
        self.assertEqual(tuple(shape), tuple(t.shape))
        self.assertIs(dtype, t.dtype)
        self.assertIs(layout, t.layout)
        self.assertEqual(tracegrad.device(device).type, t.device.type)
        if fill is not None:
            self.assertEqual(tracegrad.full(shape, fill, dtype=dtype), t.cpu())

    for dtype in dtypes:
        fill = True if dtype is tracegrad.bool else (1 + 1j if dtype.is_complex else 3)
        for shape in shapes:
            check(tracegrad.empty(shape, dtype=dtype, layout=layout, device=device), shape, dtype)
            check(tracegrad.empty(*shape, dtype=dtype, layout=layout, device=device), shape, dtype)
            full = tracegrad.full(shape, fill, dtype=dtype, layout=layout, device=device)
            check(full, shape, dtype, fill)
            check(tracegrad.empty_like(full), shape, dtype)
            check(tracegrad.full_like(full, fill), shape, dtype, fill)
            check(full.new_empty(shape), shape, dtype)
            check(full.new_full(shape, fill), shape, dtype, fill)
            for other in dtypes:
                check(full.new_empty(shape, dtype=other), shape, other)
                check(tracegrad.empty_like(full, dtype=other), shape, other)
