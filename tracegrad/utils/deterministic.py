"""Mirrors ``torch.utils.deterministic``: the ``fill_uninitialized_memory`` flag (default True).
While ``tracegrad.use_deterministic_algorithms(True)`` is on and the flag is set, new memory
(``empty``, ``empty_like``, ``empty_strided``, ``empty_permuted``, ``new_empty``, the grown part of
``resize_``) holds NaN for floating/complex dtypes, True for bool and the dtype's max for
integers, as torch; otherwise tracegrad's new memory is zeros. The flag lives in ``_state``."""
import sys
import types

from tracegrad import _state


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether new memory is filled under deterministic algorithms (torch's flag)."""
        return _state.FILL_UNINITIALIZED[0]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"expected a bool, but got {type(mode).__name__}: "
                            f"torch.utils.deterministic.fill_uninitialized_memory takes True or False")
        _state.FILL_UNINITIALIZED[0] = mode


sys.modules[__name__].__class__ = _Deterministic
