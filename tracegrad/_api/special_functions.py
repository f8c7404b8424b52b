"""``torch.special``'s Bessel, Airy and orthogonal-polynomial functions over the ops of
``_ops/bessel.py`` and ``_ops/orthopoly.py``. torch gives none of them a gradient (their
outputs never require grad) nor a Tensor method; these are plain functions that
``tracegrad.special`` exports (with ``out=``).

Dtypes as torch: float32 and float64 compute in their own dtype, integer and bool inputs in the
default float dtype; half precision and complex inputs raise NotImplementedError (torch has no
kernel for them), a non-Tensor input TypeError.
"""
from __future__ import annotations

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor
from .promotion import _SCALAR_NAME, result_dtype


def _compute_dtype(api, dt):
    if dt.is_complex or dt.name in ("float16", "bfloat16"):
        raise NotImplementedError(f"\"{api}_cpu\" not implemented for '{_SCALAR_NAME.get(dt.name, dt.name)}'; "
                                  f"torch.special.{api} takes float32/float64 (or integer) tensors")
    return dt if dt.is_floating_point else _dt.get_default_dtype()


def unary(api, doc):
    op = OPS["special_" + api]

    def f(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"special_{api}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")
        return apply_op(op, (input,), (("dtype", _compute_dtype(api, input.dtype).np),))
    f.__name__ = f.__qualname__ = api
    f.__doc__ = doc
    return f


def polynomial(api, doc):
    op = OPS["special_" + api]

    def f(x, n):
        if not isinstance(x, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{api}() received an invalid combination of arguments - got "
                            f"({type(x).__name__}, {type(n).__name__}); at least one of x, n must be a Tensor")
        for name, v in (("x", x), ("n", n)):
            if not isinstance(v, (Tensor, int, float, bool)):
                raise TypeError(f"special_{api}(): argument '{name}' must be Tensor or Number, not {type(v).__name__}")
        dt = _compute_dtype(api, result_dtype(x, n))
        x = x if isinstance(x, Tensor) else _tensor(x, dtype=dt)
        n = n if isinstance(n, Tensor) else _tensor(n, dtype=dt)
        return apply_op(op, (x, n), (("dtype", dt.np),))
    f.__name__ = f.__qualname__ = api
    f.__doc__ = doc
    return f
