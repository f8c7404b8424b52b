"""Settable flags of the ``tracegrad.backends`` modules (``cudnn.benchmark = True``,
``cuda.matmul.allow_fp16_reduced_precision_reduction = False``) as properties over one store
registered with ``_state`` (NOTE [settings flags]): a compiled function that sets one is a graph
break, and one that reads one holds its program only while the flags are what it read (a
branch on ``cudnn.benchmark`` is not frozen)."""
import sys
import types

from .. import _state


class _Store:
    """The values of one holder's flags."""


def flag_properties(values: dict, checks: dict | None = None) -> dict:
    """``name -> property`` for each flag of ``values`` (its default), over a new store.
    ``checks`` maps a flag to the function its setter runs first: it raises for a value torch's
    setter refuses and returns the value to store."""
    store = _Store()
    store.__dict__.update(values)
    _state.register_settings(store, tuple(values))
    checks = checks or {}

    def prop(k):
        check = checks.get(k)

        def get(self):
            _state.note_setting_read()
            return getattr(store, k)

        def put(self, v):
            setattr(store, k, check(v) if check is not None else v)
        return property(get, put, doc=f"The ``{k}`` flag (read back as set).")
    return {k: prop(k) for k in values}


def flag_module(name: str, values: dict, checks: dict | None = None) -> None:
    """Module ``name`` answers ``values``' flags (read and set as attributes) through
    properties: its class becomes a ``ModuleType`` subclass holding them (``checks``: see
    ``flag_properties``)."""
    sys.modules[name].__class__ = type("FlagModule", (types.ModuleType,), flag_properties(values, checks))


# ---- the checks of torch's flag setters (its C++ setters take only a bool; its precision
# setters only a known precision name)

def bool_flag(setter: str):
    """A check for a flag torch's ``setter`` takes only as a bool (RuntimeError otherwise: an int
    1 is not one)."""
    def check(v):
        if not isinstance(v, bool):
            raise RuntimeError(f"{setter} expects a bool, but got {type(v).__name__}; set True or False")
        return v
    return check


PRECISIONS = ("ieee", "tf32", "bf16", "none")


def precision_flag(backend: str, supported=PRECISIONS):
    """A check for an ``fp32_precision`` flag: TypeError for a value that is no str,
    RuntimeError for an unknown precision or one ``backend`` does not support."""
    def check(v):
        if not isinstance(v, str):
            raise TypeError(f"fp32_precision expects a str (one of {list(supported)}), got {type(v).__name__}")
        if v not in PRECISIONS:
            raise RuntimeError(f"Unknown precision: {v}; use one of {list(supported)}")
        if v not in supported:
            raise RuntimeError(f"backend '{backend}' does not support precision '{v}'; use one of {list(supported)}")
        return v
    return check


def reduction_flag(name: str):
    """A check for ``matmul.allow_{fp16,bf16}_reduced_precision_reduction``: a bool, or a
    tuple/list ``(allow_reduced_precision[, allow_splitk])`` of bools (the first is stored);
    TypeError otherwise, RuntimeError for ``(True, False)``, as torch."""
    def check(v):
        if isinstance(v, bool):
            return v
        if not isinstance(v, (tuple, list)) or not v:
            raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(v)}")
        if len(v) > 2:
            raise TypeError(f"{name} expects at most two boolean arguments")
        for part, x in zip(("allow_reduced_precision", "allow_splitk"), v):
            if not isinstance(x, bool):
                raise TypeError(f"{name} expects a bool for {part}, but got {type(x)}")
        if len(v) == 2 and v[0] and not v[1]:
            raise RuntimeError("allow_splitk=False is not supported when reduced precision reductions are enabled")
        return v[0]
    return check
