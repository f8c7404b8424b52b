"""Mirrors ``torch.backends.opt_einsum``: whether torch.einsum plans its contraction order with the
opt_einsum package (``enabled``) and with which ``strategy`` ("auto", "greedy", "optimal").
tracegrad's einsum is JAX's, which always plans its path through opt_einsum (a JAX dependency, so
``is_available()`` is True when it imports); the flags are stored and read back, and change no
result (the path only changes the rounding of a contraction). ``set_flags``/``flags`` check them as
torch does; a plain attribute write (``opt_einsum.strategy = "greedy"``) is stored unchecked, as
torch 2.13 stores it (there it also shadows later ``flags(...)`` values from reads, a quirk not
reproduced: one store here)."""
import sys
import types
from contextlib import contextmanager

try:
    import opt_einsum as _opt_einsum
except ImportError:   # pragma: no cover - JAX requires it
    _opt_einsum = None

_STRATEGIES = ("auto", "greedy", "optimal")
_FLAGS = {"enabled": _opt_einsum is not None, "strategy": "auto" if _opt_einsum is not None else None}


def is_available() -> bool:
    """Mirrors ``torch.backends.opt_einsum.is_available``: whether the opt_einsum package imports."""
    return _opt_einsum is not None


def get_opt_einsum():
    """Mirrors ``torch.backends.opt_einsum.get_opt_einsum``: the opt_einsum package, or None."""
    return _opt_einsum


def _set_enabled(value) -> None:
    if not is_available() and value:
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {value} will not reap the benefits "
                         "of calculating an optimal path for einsum; install opt-einsum")
    _FLAGS["enabled"] = value


def _set_strategy(value) -> None:
    if not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {value} will not be meaningful; "
                         "install opt_einsum or unset `strategy`")
    if not _FLAGS["enabled"]:
        raise ValueError(f"opt_einsum is not enabled, so setting a `strategy` to {value} will not be meaningful. "
                         "torch.einsum will bypass path calculation and simply contract from left to right. "
                         "Please set `enabled` to `True` as well or unset `strategy`.")
    if value not in _STRATEGIES:
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
    _FLAGS["strategy"] = value


def set_flags(_enabled=None, _strategy=None):
    """Mirrors ``torch.backends.opt_einsum.set_flags``: sets each flag given (``None`` keeps it),
    ``enabled`` first, and returns the previous ``(enabled, strategy)``. ValueError for a strategy
    outside auto/greedy/optimal or a strategy while disabled, as torch."""
    orig = (_FLAGS["enabled"], _FLAGS["strategy"] if is_available() else None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig


@contextmanager
def flags(enabled=None, strategy=None):
    """Mirrors ``torch.backends.opt_einsum.flags``: sets the flags for a ``with`` block and
    restores the previous values on exit."""
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*orig)


class _OptEinsumModule(types.ModuleType):
    """The module's class: ``enabled`` / ``strategy`` are read and set as attributes (a write is
    not checked, as torch's)."""

    @property
    def enabled(self):
        """Whether einsum plans its path with opt_einsum (read back as set)."""
        return _FLAGS["enabled"]

    @enabled.setter
    def enabled(self, value):
        _FLAGS["enabled"] = value

    @property
    def strategy(self):
        """opt_einsum's path strategy: "auto", "greedy" or "optimal" (read back as set)."""
        return _FLAGS["strategy"]

    @strategy.setter
    def strategy(self, value):
        _FLAGS["strategy"] = value


sys.modules[__name__].__class__ = _OptEinsumModule
