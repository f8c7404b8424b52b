"""``tracegrad.autograd``: mirrors ``torch.autograd`` -- ``backward``, ``grad``, ``Function``,
grad modes, anomaly detection, ``gradcheck``/``gradgradcheck``. See README.md here."""
import importlib as _importlib

from .. import _state

from . import graph  # noqa: F401
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                           set_detect_anomaly)
from .engine import backward, grad  # noqa: F401
from .grad_mode import (_unsafe_preserve_version_counter, enable_grad, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled, is_multithreading_enabled, is_view_replay_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from . import function  # noqa: E402,F401
from .function import Function  # noqa: E402,F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from . import forward_ad  # noqa: E402,F401
from . import variable  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401


def _profiler_enabled() -> bool:
    """Mirrors ``torch.autograd._profiler_enabled()``: whether a profiler (``torch.profiler.profile``
    or ``torch.autograd.profiler.profile``) is recording now."""
    return _state.PROFILER[0] is not None


def __getattr__(name):
    # torch.autograd.functional and .profiler are attributes of torch.autograd, but stand on
    # layers above autograd (tracegrad.func, tracegrad.profiler): load them on first use
    if name in ("functional", "profiler"):
        return _importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"functional", "profiler"})
