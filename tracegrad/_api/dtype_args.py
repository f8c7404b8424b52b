"""``tracegrad.promote_types`` and ``tracegrad.can_cast``: the dtype rules of ``_ops.dtypes``
behind torch's argument check, so a tensor, a string or None where a dtype goes raises torch's
TypeError, not an AttributeError from inside the rule (the rules themselves stay unchecked for
tracegrad's own callers)."""
from __future__ import annotations

from .._ops import dtypes as _dt
from .argcheck import strict_error


def _require_dtypes(api, **values):
    """The values as dtypes: torch's parser also takes Python's number types (``float`` is
    float64, ``int`` int64...); TypeError for anything else."""
    for pos, (name, value) in enumerate(values.items(), 1):
        if not _dt.is_dtype_arg(value):
            raise strict_error(api, name, "torch.dtype", value, pos)
    return [_dt.to_dtype(v) for v in values.values()]


def promote_types(type1, type2):
    """Mirrors ``torch.promote_types(type1, type2)``: the dtype both promote to. TypeError when
    either is not a ``tracegrad.dtype`` (or a Python number type, read as torch does: ``float``
    is float64); RuntimeError for pairs torch does not promote."""
    return _dt.promote_types(*_require_dtypes("promote_types", type1=type1, type2=type2))


def can_cast(from_, to):
    """Mirrors ``torch.can_cast(from_, to)``: whether casting ``from_`` to ``to`` is allowed
    (no complex -> real, floating -> integral, non-bool -> bool). TypeError when either is not
    a ``tracegrad.dtype`` or a Python number type (``float`` is float64, as torch's parser)."""
    return _dt.can_cast(*_require_dtypes("can_cast", from_=from_, to=to))
