"""``tracegrad.autograd``: mirrors ``torch.autograd`` -- ``backward``, ``grad``, ``Function``,
grad modes, anomaly detection, ``gradcheck``/``gradgradcheck``. See README.md here."""
import importlib as _importlib

from .. import _state

from . import graph  # noqa: F401
from ._graph_impl import SavedTensor  # noqa: F401
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                           set_detect_anomaly)
from .engine import backward, grad  # noqa: F401
from .grad_mode import (_force_original_view_tracking, _unsafe_preserve_version_counter, enable_grad, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled, is_multithreading_enabled, is_view_replay_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from . import function  # noqa: E402,F401
from .function import Function  # noqa: E402,F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from . import forward_ad  # noqa: E402,F401
from . import variable  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401


def _calculate_shape(output, grad, is_grads_batched):
    """Mirrors ``torch.autograd._calculate_shape``: the (output shape, gradient shape) pair that
    backward/grad compare; a batched gradient's first dimension is the batch, not part of it."""
    out_shape = output.shape
    grad_shape = grad.shape[1:] if is_grads_batched else grad.shape
    return out_shape, grad_shape


def kineto_available() -> bool:
    """Mirrors ``torch.autograd.kineto_available()`` (torch's CPU builds: True). tracegrad's
    profiler takes ``use_kineto`` and records the same events either way."""
    return True


def _profiler_enabled() -> bool:
    """Mirrors ``torch.autograd._profiler_enabled()``: whether a profiler (``torch.profiler.profile``
    or ``torch.autograd.profiler.profile``) is recording now. Inside ``tracegrad.compile`` the
    program is guarded on it, so a branch on it is taken again when it changes."""
    _state.note_profiler_read()
    return _state.PROFILER[0] is not None


def __getattr__(name):
    # torch.autograd.functional and .profiler are attributes of torch.autograd, but stand on
    # layers above autograd (tracegrad.func, tracegrad.profiler): load them on first use
    if name in ("functional", "profiler", "profiler_util"):
        return _importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"functional", "profiler", "profiler_util"})
