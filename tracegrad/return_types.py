"""``tracegrad.return_types``: the named tuples that multi-output functions return (``max`` with a
``dim`` -> ``(values, indices)``, ``linalg.svd`` -> ``(U, S, Vh)``, ...). Mirrors
``torch.return_types``: one type per function, named as torch names it (``linalg_svd``), each with
an ``<name>_out`` twin, importable as a module (``from tracegrad.return_types import *``).

torch's types are C "structseq"s, built from ONE sequence (``return_types.max([v, i])``); ours are
``collections.namedtuple`` subclasses (so ``_fields``, ``_asdict`` and pytree handling work) that
also take that one-sequence form. Differs from torch: the field-wise form ``max(v, i)`` is
accepted too (torch raises TypeError). ``repr`` is torch's, module name included
(``torch.return_types.max(\nvalues=...,\nindices=...)``), as ``Size``'s: programs print it.
"""
from __future__ import annotations

import collections

__all__: list[str] = []


def _from_sequence_new(base_new, name, n):
    def __new__(cls, *args, **kwargs):
        # torch's structseq form: one sequence holding every field
        if len(args) == 1 and not kwargs and n > 1 and isinstance(args[0], (list, tuple)):
            seq = args[0]
            if len(seq) != n:
                raise TypeError(f"tracegrad.return_types.{name}() takes a {n}-sequence "
                                f"({len(seq)}-sequence given)")
            return tuple.__new__(cls, seq)
        return base_new(cls, *args, **kwargs)
    return __new__


def _repr(self):
    return (f"torch.return_types.{type(self).__name__}(\n"
            + ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")")


def _one(name, fields):
    base = collections.namedtuple(name, fields)
    cls = type(name, (base,), {"__slots__": (), "__module__": __name__, "__qualname__": name, "__repr__": _repr,
                               "__new__": _from_sequence_new(base.__new__, name, len(base._fields))})
    globals()[name] = cls
    __all__.append(name)
    return cls


def _structseq(name, fields):
    """The return type ``tracegrad.return_types.<name>`` with ``fields`` (and its ``<name>_out``
    twin, as torch has one per function with an ``out=`` form); returns the first."""
    _one(name + "_out", fields)
    return _one(name, fields)


for _name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"):
    _structseq(_name, ("values", "indices"))
_structseq("aminmax", ("min", "max"))
_structseq("frexp", ("mantissa", "exponent"))
_structseq("histogram", ("hist", "bin_edges"))
_structseq("histogramdd", ("hist", "bin_edges"))
del _name
