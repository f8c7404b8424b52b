"""Mirrors ``torch.testing._internal.common_cuda``: what the CUDA-specific tests check before
running. ``TEST_CUDA`` follows ``tracegrad.cuda.is_available()`` (a JAX GPU); there is no cuDNN,
no TF32 switch, no CUDA graphs or memory-leak checker here, so those flags are False and
their helpers are no-ops."""
from __future__ import annotations

import contextlib
import functools

import tracegrad

TEST_CUDA = tracegrad.cuda.is_available()
TEST_MULTIGPU = TEST_CUDA and tracegrad.cuda.device_count() >= 2
CUDA_DEVICE = tracegrad.device("cuda:0") if TEST_CUDA else None
TEST_CUDNN = False
TEST_CUDNN_VERSION = 0
TEST_MAGMA = False
TEST_CUSPARSE_GENERIC = False
TEST_HIPSPARSE_GENERIC = False
TEST_CUDA_GRAPH = False
TEST_WITH_ROCM = False
SM53OrLater = SM60OrLater = SM70OrLater = SM75OrLater = SM80OrLater = SM89OrLater = SM90OrLater = False
SM100OrLater = SM120OrLater = False
IS_SM89 = IS_SM90 = False
PLATFORM_SUPPORTS_FLASH_ATTENTION = False
PLATFORM_SUPPORTS_MEM_EFF_ATTENTION = False
PLATFORM_SUPPORTS_CUDNN_ATTENTION = False
PLATFORM_SUPPORTS_FUSED_ATTENTION = False
PLATFORM_SUPPORTS_FUSED_SDPA = False
PLATFORM_SUPPORTS_BF16 = False
PLATFORM_SUPPORTS_FP8 = False
PLATFORM_SUPPORTS_MX_GEMM = False
PLATFORM_SUPPORTS_GREEN_CONTEXT = False


def tf32_is_not_fp32():
    """Mirrors ``common_cuda.tf32_is_not_fp32``: False (no TF32 matmul mode here)."""
    return False


@contextlib.contextmanager
def tf32_off():
    """Mirrors ``common_cuda.tf32_off``: nothing to switch."""
    yield


@contextlib.contextmanager
def tf32_on(self, tf32_precision=1e-5):
    """Mirrors ``common_cuda.tf32_on``: sets ``self.precision`` for the block (no TF32 here)."""
    old = self.precision
    self.precision = tf32_precision
    try:
        yield
    finally:
        self.precision = old


def tf32_on_and_off(tf32_precision=1e-5, only_if=True):
    """Mirrors ``common_cuda.tf32_on_and_off``: the test runs once (TF32 does not exist here)."""
    def wrapper(f):
        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapped
    return wrapper


def with_tf32_off(f):
    """Mirrors ``common_cuda.with_tf32_off``: the test as is."""
    return f


def _get_torch_cuda_version():
    return (0, 0)


def _get_torch_rocm_version():
    return (0, 0)


def _check_cusparse_generic_available():
    return False

