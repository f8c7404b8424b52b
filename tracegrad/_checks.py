"""Mirrors ``torch._check`` and its family (``_check_index``, ``_check_value``, ``_check_type``,
``_check_not_implemented``, ``_check_with``, ``_check_is_size``, ``_check_tensor_all``): raise
an exception of the given class when a Python bool condition is False, with ``message()``'s text
(a callable, evaluated only on failure) or torch's default text."""
import builtins

from ._tensor.tensor import Tensor
from ._ops.warn import warn as _warn

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be improved? If so, "
                    "please report an enhancement request to PyTorch.)")


def _check_with(error_type, cond, message=None):
    """Mirrors ``torch._check_with(error_type, cond, message)``. AssertionError when
    ``error_type`` is not an Exception class (or is a Warning); TypeError when ``cond`` is not a
    bool or a failing check's ``message`` is not callable; else ``error_type(message())``."""
    if not (isinstance(error_type, type) and issubclass(error_type, Exception)) or issubclass(error_type, Warning):
        raise AssertionError(f"error_type must be a subclass of Exception but not Warning, got {error_type}")
    if not isinstance(cond, builtins.bool):
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if message is None:
        raise error_type(_DEFAULT_MESSAGE)
    if not callable(message):
        raise TypeError("message must be a callable")
    raise error_type(str(message()))


def _check(cond, message=None):
    """Mirrors ``torch._check``: RuntimeError when ``cond`` is False."""
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    """Mirrors ``torch._check_index``: IndexError when ``cond`` is False."""
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    """Mirrors ``torch._check_value``: ValueError when ``cond`` is False."""
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    """Mirrors ``torch._check_type``: TypeError when ``cond`` is False."""
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    """Mirrors ``torch._check_not_implemented``: NotImplementedError when ``cond`` is False."""
    _check_with(NotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """Mirrors ``torch._check_is_size`` (deprecated in torch: FutureWarning): ``_check(i >= 0)``,
    and ``i <= max`` when given."""
    _warn("_check_is_size will be removed in a future PyTorch release along with guard_size_oblivious. "
          "    Use _check(i >= 0) instead.", FutureWarning)
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _check_tensor_all(cond, message=None):
    """Mirrors ``torch._check_tensor_all``: RuntimeError unless every element of the bool tensor
    ``cond`` is True; TypeError when ``cond`` is not a bool tensor."""
    if not isinstance(cond, Tensor) or cond.dtype.name != "bool":
        raise TypeError(f"cond must be a tensor with dtype torch.bool, but got "
                        f"{cond.dtype if isinstance(cond, Tensor) else type(cond)}")
    _check_with(RuntimeError, builtins.bool(cond.all()), message)
