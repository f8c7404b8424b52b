"""tracegrad: PyTorch's eager autograd and training API on JAX/XLA.

``import tracegrad as torch`` -- the same names and semantics as torch 2.13 for tensors,
autograd (graph, hooks, custom Functions), nn, optim and data loading; arrays live on XLA
(CPU or GPU). See DESIGN.md for the architecture and README.md for what differs from torch.
"""
import jax as _jax

# torch has float64 and int64: JAX makes them only in x64 mode. tracegrad turns it on
# thread-locally around its own JAX calls (_x64.py), never for the process: the user's own
# JAX code keeps its float32/int32 defaults (DESIGN 2.7). float32 stays the default dtype.
# Process-global JAX settings tracegrad still changes (README "Runtime settings"):
# Eager tracegrad issues many tiny jitted calls; JAX's CPU async dispatch makes each one
# 1.6-1.8x slower here (benchmarks/eager_overhead.py). JAX reads the flag once, when it creates
# its CPU client: set after that it does nothing, so it is left alone then.
# TRACEGRAD_ASYNC_DISPATCH=1 keeps JAX's default.
import os as _os  # noqa: E402
from jax._src import xla_bridge as _xb  # noqa: E402  (private: whether the client exists yet)
if _os.environ.get("TRACEGRAD_ASYNC_DISPATCH", "0") != "1" and not _xb.backends_are_initialized():
    _jax.config.update("jax_cpu_enable_async_dispatch", False)
# Eager mode compiles one small XLA program per (op, shapes): 20-250 ms each, paid again in
# every new process. A persistent compilation cache makes later runs load them instead (a
# small MLP's first 3 steps: 5-8 s -> 1-2 s). JAX keeps one cache per process (initialised at
# the first compile), so the folder cannot be scoped; the 0 s write threshold (JAX's default, 1 s,
# would skip every eager program) could be, as a thread-local, but that cost 0.3 us per op.
# Both apply only when the user has set no cache folder. TRACEGRAD_CACHE_DIR picks the folder;
# set it empty to turn it off.
_cache = _os.environ.get("TRACEGRAD_CACHE_DIR", _os.path.join(_os.path.expanduser("~"), ".cache", "tracegrad", "xla"))
if _cache and not _jax.config.jax_compilation_cache_dir:
    _jax.config.update("jax_compilation_cache_dir", _cache)
    _jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

from ._ops.dtypes import (bfloat16, complex64, complex128, float16, float32, float64,  # noqa: E402
                          int8, int16, int32, int64, uint8, dtype, get_default_dtype,
                          set_default_dtype, promote_types, can_cast)
from ._ops.dtypes import bool_ as bool  # noqa: E402,A001
from ._ops import dtypes as _dtypes  # noqa: E402

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

from ._tensor import Size, Tensor  # noqa: E402
from . import _tensor_methods  # noqa: E402,F401  (attaches methods)
from ._tensor_methods import return_types  # noqa: E402
from ._device import device  # noqa: E402
from ._ops.random import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: E402
                          manual_seed, seed, set_rng_state)
from ._factories import range  # noqa: E402,A001
from ._factories import (arange, as_tensor, asarray, bernoulli, empty, empty_like, eye,  # noqa: E402
                         from_numpy, full, full_like, linspace, logspace, multinomial, normal,
                         ones, ones_like, rand, rand_like, randint, randint_like, randn,
                         randn_like, randperm, tensor, zeros, zeros_like)
from ._functions import *  # noqa: E402,F401,F403
from ._functions import _SAME  # noqa: E402
from ._nn_functions import *  # noqa: E402,F401,F403
from . import autograd  # noqa: E402
from .serialization import load, save  # noqa: E402
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: E402
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from . import distributed  # noqa: E402  (before nn: nn.parallel uses it)
from . import nn, optim, utils  # noqa: E402  (torch imports these at import, too)
from . import func, viz  # noqa: E402
from .func import from_dlpack, from_jax, jax_function  # noqa: E402
from . import compiler  # noqa: E402
from . import accelerator, amp, backends, cuda  # noqa: E402
from ._runtime import (get_default_device, get_float32_matmul_precision, set_default_device,  # noqa: E402
                       set_float32_matmul_precision)
from .amp import autocast  # noqa: E402
from .amp.autocast_mode import get_autocast_dtype, is_autocast_enabled  # noqa: E402


def is_autocast_cpu_enabled():
    """Mirrors ``torch.is_autocast_cpu_enabled``."""
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    """Mirrors ``torch.get_autocast_cpu_dtype``."""
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """Mirrors ``torch.get_autocast_gpu_dtype``."""
    return get_autocast_dtype("cuda")

from .compiler import compile  # noqa: E402,A001

FloatTensor = DoubleTensor = LongTensor = BoolTensor = Tensor

__version__ = "0.1.0"


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Accepted for compatibility; tracegrad prints with torch's default options."""


def typename(obj):
    return type(obj).__name__
