"""Mirrors ``torch.__future__``: opt-in flags for how ``nn.Module._apply`` (``.to``, ``.double``,
``.cpu``, ...) hands back converted parameters. The flags live in ``_state.FUTURE``.

* overwrite (False by default): when True, a conversion that makes a new tensor gives the module
  new Parameter objects (and new ``.grad`` tensors); references held to the old ones keep the old
  dtype. When False the Parameter objects are kept and their ``.data`` replaced.
* swap (False by default): torch swaps the tensors' contents (``torch.utils.swap_tensors``) so
  old references see the conversion. tracegrad keeps the Parameter objects and replaces their
  ``.data``, which is what a program observes through those references too.
"""
from tracegrad import _state

__all__ = ["set_overwrite_module_params_on_conversion", "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Mirrors ``torch.__future__.set_overwrite_module_params_on_conversion``."""
    _state.FUTURE["overwrite_module_params_on_conversion"] = bool(value)


def get_overwrite_module_params_on_conversion() -> bool:
    """Mirrors ``torch.__future__.get_overwrite_module_params_on_conversion`` (default False)."""
    return _state.FUTURE["overwrite_module_params_on_conversion"]


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Mirrors ``torch.__future__.set_swap_module_params_on_conversion``."""
    _state.FUTURE["swap_module_params_on_conversion"] = bool(value)


def get_swap_module_params_on_conversion() -> bool:
    """Mirrors ``torch.__future__.get_swap_module_params_on_conversion`` (default False)."""
    return _state.FUTURE["swap_module_params_on_conversion"]
