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


def flag_properties(values: dict) -> dict:
    """``name -> property`` for each flag of ``values`` (its default), over a new store."""
    store = _Store()
    store.__dict__.update(values)
    _state.register_settings(store, tuple(values))

    def prop(k):
        def get(self):
            _state.note_setting_read()
            return getattr(store, k)

        def put(self, v):
            setattr(store, k, v)
        return property(get, put, doc=f"The ``{k}`` flag (read back as set).")
    return {k: prop(k) for k in values}


def flag_module(name: str, values: dict) -> None:
    """Module ``name`` answers ``values``' flags (read and set as attributes) through
    properties: its class becomes a ``ModuleType`` subclass holding them."""
    sys.modules[name].__class__ = type("FlagModule", (types.ModuleType,), flag_properties(values))
