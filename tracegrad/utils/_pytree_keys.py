"""Key entries (one step of a key path) and the namedtuple/structseq tests of
``tracegrad.utils._pytree`` (torch.utils._pytree's names); the registry and TreeSpec live there."""
from __future__ import annotations

import dataclasses
from typing import Any

# NOTE [structseq nodes]: torch's return types are C structseqs, nodes of their own type with
# context None. tracegrad's are namedtuples; registered by _pytree they keep torch's spec instead of
# the generic namedtuple one, so this set is consulted before the namedtuple test.
_STRUCTSEQ_TYPES: set = set()


# ---- key entries: one step of a key path ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Mirrors ``torch.utils._pytree.SequenceKey``: the child at position ``idx``; prints ``[idx]``."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """Mirrors ``torch.utils._pytree.MappingKey``: the value under ``key``; prints ``['key']``."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Mirrors ``torch.utils._pytree.GetAttrKey``: the attribute ``name``; prints ``.name``."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp) -> str:
    """Mirrors ``torch.utils._pytree.keystr``: a key path as text, e.g. ``['a'][1].x``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """Mirrors ``torch.utils._pytree.key_get``: the value a key path points at inside ``obj``."""
    for k in kp:
        obj = k.get(obj)
    return obj


# ---- namedtuple / structseq tests ---------------------------------------------------------------
def is_namedtuple_class(cls) -> bool:
    """Whether ``cls`` is a namedtuple class (a tuple subclass with string ``_fields``,
    ``_make`` and ``_asdict``). Mirrors ``torch.utils._pytree.is_namedtuple_class``."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        return False
    fields = getattr(cls, "_fields", None)
    return (isinstance(fields, tuple) and all(type(f) is str for f in fields)
            and callable(getattr(cls, "_make", None)) and callable(getattr(cls, "_asdict", None)))


def is_namedtuple_instance(obj) -> bool:
    """Mirrors ``torch.utils._pytree.is_namedtuple_instance``."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """Whether ``obj`` (an instance or a class) is a namedtuple. Mirrors
    ``torch.utils._pytree.is_namedtuple``."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


_BASETYPE_FLAG = 1 << 10     # CPython's Py_TPFLAGS_BASETYPE: structseq types cannot be subclassed


def is_structseq_class(cls) -> bool:
    """Whether ``cls`` is a C structseq type (``os.stat_result``...) or one of tracegrad's
    return types (NOTE [structseq nodes]). Mirrors ``torch.utils._pytree.is_structseq_class``."""
    if cls in _STRUCTSEQ_TYPES:
        return True
    return (isinstance(cls, type) and cls.__bases__ == (tuple,)
            and all(isinstance(getattr(cls, a, None), int) for a in ("n_fields", "n_sequence_fields", "n_unnamed_fields"))
            and not cls.__flags__ & _BASETYPE_FLAG)


def is_structseq_instance(obj) -> bool:
    """Mirrors ``torch.utils._pytree.is_structseq_instance``."""
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    """Mirrors ``torch.utils._pytree.is_structseq`` (an instance or a class)."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))
