"""Reduction names of the losses, and torch's deprecated ways of giving them. Mirrors
``torch.nn._reduction``: ``get_enum``, ``legacy_get_string``, ``legacy_get_enum``.

Before ``reduction=`` a loss took two booleans, ``size_average`` and ``reduce``; torch still
accepts them on every loss that had them, maps them to a reduction name and warns
(UserWarning). ``reduction='elementwise_mean'`` is the old name of ``'mean'``, also with a
UserWarning, on the losses whose torch code reads the name through ``get_enum``."""
from __future__ import annotations

from .._ops.warn import warn as _warn

_ENUM = {"none": 0, "mean": 1, "sum": 2}
_LEGACY_MSG = "size_average and reduce args will be deprecated, please use reduction='{}' instead."
_ELEMENTWISE_MSG = "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead."


def get_enum(reduction: str) -> int:
    """The integer torch's kernels use for a reduction name: none 0, mean 1, sum 2.
    ``'elementwise_mean'`` counts as mean, with torch's UserWarning. ValueError otherwise."""
    if reduction == "elementwise_mean":
        _warn(_ELEMENTWISE_MSG)
        return 1
    if reduction not in _ENUM:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _ENUM[reduction]


def legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
    """The reduction name the deprecated pair stands for; ``None`` means True for either.
    ``reduce=False`` gives 'none' (size_average is then ignored); otherwise 'mean' when
    size_average holds, else 'sum'. Warns (UserWarning) naming the replacement unless
    ``emit_warning`` is False."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    name = ("mean" if size_average else "sum") if reduce else "none"
    if emit_warning:
        _warn(_LEGACY_MSG.format(name))
    return name


def legacy_get_enum(size_average, reduce, emit_warning: bool = True) -> int:
    """``get_enum(legacy_get_string(size_average, reduce, emit_warning))``."""
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))


def resolve(size_average, reduce, reduction, *, old_names=True) -> str:
    """The reduction a functional loss uses: the legacy pair's name when either is given
    (it wins over ``reduction``, with torch's warning), else ``reduction``, where
    'elementwise_mean' becomes 'mean' with torch's warning when ``old_names`` (losses whose
    torch code goes through ``get_enum``). Other names pass unchecked."""
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce)
    if old_names and reduction == "elementwise_mean":
        _warn(_ELEMENTWISE_MSG)
        return "mean"
    return reduction
