"""More of ``torch.nn.functional``'s activations, composed of tracegrad ops: ``threshold``,
``hardshrink``, ``softshrink``, ``tanhshrink``, ``rrelu`` and the in-place ``_`` variants torch
has (``selu_``, ``celu_``, ``elu_``, ``leaky_relu_``, ``hardtanh_``, ``threshold_``, ``rrelu_``).
Re-exported by ``functional.py``. Masks are ``where`` selections (no value read in Python), so
they trace into one program under ``tracegrad.compile``; ``rrelu``'s training slopes come from
tracegrad's generator (reproducible under ``tracegrad.manual_seed``, not torch's draws)."""
from __future__ import annotations

import math
import numbers
import sys

import numpy as np

import tracegrad
from tracegrad._api import nn_functions as _F
from tracegrad._ops.registry import OPS
from tracegrad.autograd._dispatch import apply_op
from tracegrad.autograd.function import _no_derivative
from tracegrad._api.inplace import overlap_allowed
from tracegrad._api.promotion import (_SCALAR_NAME, check_number_fits, check_past_f32,
                                      check_real_scalars, check_scalar_tensor, check_tensors)

__all__ = ["threshold", "threshold_", "hardshrink", "softshrink", "tanhshrink", "rrelu", "rrelu_",
           "selu_", "celu_", "elu_", "leaky_relu_", "hardtanh_"]


def _write(input, fn):
    """``fn(input)`` written into ``input`` (an ``inplace=True`` activation). The activation
    runs on a copy when ``input`` is in a graph: its backward needs the values before the
    write (torch's in-place kernels recompute them from the result), so differentiating
    through the written tensor gives the activation's gradient instead of raising that a
    saved tensor was modified in place. TypeError, named after the calling API, for a
    non-Tensor."""
    if not isinstance(input, tracegrad.Tensor):
        check_tensors(sys._getframe(1).f_code.co_name, input)
    return input.copy_(fn(input.clone() if input.requires_grad else input))


def _write_sloped(input, fn, kernel, slope, api):
    """``_write`` for elu_/celu_/leaky_relu_ (``api``): torch's in-place backward recovers the input's sign
    from the result, which a negative ``slope`` makes ambiguous, so there the written tensor's
    backward raises torch's RuntimeError (the forward runs). RuntimeError for a slope past
    float32's range on a float32 input (torch's checked conversion)."""
    if isinstance(input, tracegrad.Tensor):
        check_past_f32(api, input.dtype, slope, real_kernel=True)
    else:   # torch's TypeError naming celu_/elu_/leaky_relu_ (``_write`` would name this helper)
        check_tensors(api, input)
    if not (isinstance(slope, numbers.Real) and slope < 0):
        return _write(input, fn)

    def refused(x):
        value = fn(x)
        message = (f"In-place {kernel} backward calculation is triggered with a negative slope which is not "
                   "supported. This is caused by calling in-place forward function with a negative slope, "
                   "please call out-of-place version instead.")
        node = "EluBackward1" if kernel == "elu" else "LeakyReluBackward1"
        return _no_derivative(value.detach(), value, kernel, node, (RuntimeError, message))
    return _write(input, refused)


def _threshold(x, threshold, value):
    # torch's test is ``x <= threshold``: a NaN input or a NaN threshold keeps ``x``; for
    # float16/bfloat16 it compares in float32 (threshold 0.1 is not rounded to bf16's 0.1001)
    if _numbers(threshold, value):   # torch's ThresholdBackward0 node
        return apply_op(OPS["threshold"], (x,), (("threshold", threshold), ("value", value)))
    low = x.float() if x.dtype in (tracegrad.bfloat16, tracegrad.float16) else x
    return tracegrad.where(low <= threshold, tracegrad.full_like(x, value), x)


def _numbers(*args):
    """Whether every argument is a plain Python number (a static argument of the op); a 0-dim
    tensor threshold stays a traced value of the composite."""
    return all(type(a) in (int, float, bool) for a in args)


def _check_numbers(api, input, **args):
    """torch's parser for Number arguments (TypeError naming the argument): a number or a 0-dim
    tensor that does not require grad; a complex one for a real ``input`` is RuntimeError.
    Unchecked, a str or None reached the comparison and raised Python's own text ("'<=' not
    supported between...")."""
    for pos, (name, v) in enumerate(args.items(), 2):
        if isinstance(v, tracegrad.Tensor):
            check_scalar_tensor(api, name, v)
        elif not isinstance(v, (numbers.Number, np.bool_)):
            raise TypeError(f"{api}(): argument '{name}' (position {pos}) must be Number, not {type(v).__name__}")
    if isinstance(input, tracegrad.Tensor):
        check_real_scalars(api, input.dtype, **args)   # (floats: float32's range, float16 input too)
        for v in args.values():   # c10's overflow check of the number converted to input's dtype, as torch
            check_number_fits(v, input.dtype, api)
    else:   # a number would be thresholded as one: torch's parser refuses it
        check_tensors(api, input)


def _past_int64(input, v):
    """An int past int64 (up to 2**64, which torch's parser takes) as the float torch reads it
    for a floating input (unchanged, it failed in the op's kernel)."""
    if type(v) is int and v >= 2 ** 63 and isinstance(input, tracegrad.Tensor) and input.dtype._cat != 1:
        return float(v)
    return v


def threshold(input, threshold, value, inplace=False):
    """Mirrors ``torch.nn.functional.threshold``: ``value`` where ``input <= threshold``, else
    ``input`` (so NaNs pass through); same shape and dtype. Gradient 1 where kept, 0 elsewhere.
    TypeError for a ``threshold`` or ``value`` that is not a number (or a 0-dim tensor);
    RuntimeError for a number the input's dtype cannot hold (NaN into an integer tensor)."""
    _check_numbers("threshold", input, threshold=threshold, value=value)
    threshold, value = _past_int64(input, threshold), _past_int64(input, value)
    if inplace:
        return _threshold_write(input, threshold, value)
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """Mirrors ``torch.nn.functional.threshold_`` (in place); as torch, it may write an
    ``expand``ed tensor (every alias of an element gets the same value)."""
    _check_numbers("threshold_", input, threshold=threshold, value=value)
    threshold, value = _past_int64(input, threshold), _past_int64(input, value)
    return _threshold_write(input, threshold, value)


def _threshold_write(input, threshold, value):
    # torch's threshold_ kernel skips the internal-overlap check that other in-place ops make
    with overlap_allowed():
        return _write(input, lambda x: _threshold(x, threshold, value))


def hardshrink(input, lambd=0.5):
    """Mirrors ``torch.nn.functional.hardshrink``: ``x`` where ``|x| > lambd``, else 0."""
    # torch zeroes the closed band [-lambd, lambd] and keeps everything else, NaN included
    if isinstance(input, tracegrad.Tensor):   # 1e39 on float32: torch's checked conversion
        check_past_f32("hardshrink", input.dtype, lambd, real_kernel=True, own_range=True)
    if isinstance(input, tracegrad.Tensor) and _numbers(lambd):   # torch's HardshrinkBackward0 node
        return apply_op(OPS["hardshrink"], (input,), (("lambd", lambd),))
    drop = (input >= -lambd).logical_and(input <= lambd)
    return tracegrad.where(drop, tracegrad.zeros_like(input), input)


# the largest value of each floating dtype (finfo(...).max, looked up per call cost ~2 us)
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308, "float16": 65504.0,
              "bfloat16": 3.3895313892515355e38}


def softshrink(input, lambd=0.5):
    """Mirrors ``torch.nn.functional.softshrink``: ``x - lambd`` above ``lambd``, ``x + lambd``
    below ``-lambd``, 0 between. Raises RuntimeError for a ``lambd`` outside [0, the largest
    value of input's floating dtype] (negative, NaN, inf; 70000 for float16), as torch."""
    is_float = isinstance(input, tracegrad.Tensor) and input.is_floating_point()
    top = _FLOAT_MAX.get(input.dtype.name, _FLOAT_MAX["float32"]) if is_float else _FLOAT_MAX["float32"]
    if not 0 <= lambd <= top:
        name = _SCALAR_NAME.get(input.dtype.name, "Float") if is_float else "Float"
        raise RuntimeError(f"softshrink: lambda must be in range [0, {top:g}] for input dtype {name}, but found "
                           f"{lambd}; pass a finite lambd >= 0")
    if isinstance(input, tracegrad.Tensor) and _numbers(lambd):   # torch's SoftshrinkBackward0 node
        return apply_op(OPS["softshrink"], (input,), (("lambd", lambd),))
    zero = tracegrad.zeros_like(input)
    return tracegrad.where(input > lambd, input - lambd, tracegrad.where(input < -lambd, input + lambd, zero))


def tanhshrink(input):
    """Mirrors ``torch.nn.functional.tanhshrink``: ``x - tanh(x)``."""
    return input - input.tanh()


def _rrelu(x, lower, upper, training):
    # one op with torch's RreluWithNoiseBackward0 node in both modes (was LeakyReluBackward0 in
    # eval, WhereBackward0 in training); as torch's kernel, x <= 0 takes the drawn slope
    if training:
        slope = tracegrad.rand(tuple(x.shape), dtype=x.dtype, device=x.device) * (upper - lower) + lower
        noise = tracegrad.where(x.detach() <= 0, slope, tracegrad.ones_like(slope))
    else:
        noise = tracegrad.ones((0,), dtype=x.dtype, device=x.device)   # unused (torch's empty noise)
    return _F._nn.rrelu_with_noise(x, noise, lower, upper, training)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Mirrors ``torch.nn.functional.rrelu``: randomized leaky ReLU. Training: each negative
    element is scaled by its own slope drawn uniformly from ``[lower, upper]`` (tracegrad's
    generator); eval: the fixed slope ``(lower + upper) / 2``. Raises RuntimeError when
    ``lower > upper`` or a bound is not finite (NaN, inf), as torch's kernel; TypeError for a
    ``training`` that is not a bool (torch's parser takes no 0/1, None or numpy bool)."""
    if training is not True and training is not False:
        kind = type(training)
        kind = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"{'rrelu_' if inplace else 'rrelu'}(): argument 'training' must be bool, not {kind}; "
                        "pass True or False")
    for name, v in (("lower", lower), ("upper", upper)):
        if not math.isfinite(v):
            raise RuntimeError(f"rrelu: {name} bound must be finite, got {v}; pass finite slopes")
    if lower > upper:
        raise RuntimeError("rrelu: Lower bound should be less than or equal to the upper bound; pass lower <= upper")
    if isinstance(input, tracegrad.Tensor):   # 1e39 on float32: torch's checked conversion
        check_past_f32("rrelu", input.dtype, lower, upper, real_kernel=True)
    if getattr(input, "is_complex", lambda: False)():
        # torch's kernels have no complex version; unchecked, the in-place form wrote a result
        kernel = "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR_NAME[input.dtype.name]}'; rrelu takes "
                                  "a real input")
    if inplace:
        return _write(input, lambda x: _rrelu(x, lower, upper, training))
    return _rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """Mirrors ``torch.nn.functional.rrelu_`` (in place)."""
    return rrelu(input, lower, upper, training, inplace=True)


def selu_(input):
    """Mirrors ``torch.nn.functional.selu_`` (in place)."""
    return _write(input, _F.selu)


def celu_(input, alpha=1.0):
    """Mirrors ``torch.nn.functional.celu_`` (in place)."""
    return _write_sloped(input, lambda x: _F.celu(x, alpha), "elu", alpha, "celu_")


def elu_(input, alpha=1.0):
    """Mirrors ``torch.nn.functional.elu_`` (in place)."""
    return _write_sloped(input, lambda x: _F._nn.elu(x, alpha), "elu", alpha, "elu_")


def leaky_relu_(input, negative_slope=0.01):
    """Mirrors ``torch.nn.functional.leaky_relu_`` (in place)."""
    return _write_sloped(input, lambda x: _F._nn.leaky_relu(x, negative_slope), "leakyReLu", negative_slope,
                         "leaky_relu_")


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """Mirrors ``torch.nn.functional.hardtanh_`` (in place). RuntimeError for bool input or uint8
    input with a negative limit, NotImplementedError for complex input, as torch."""
    if getattr(input, "dtype", None) is tracegrad.bool:   # as hardtanh: torch's kernel refuses
        raise RuntimeError("Bool inputs not supported for hardtanh; convert the tensor with .float() or .int()")
    if getattr(input, "is_complex", lambda: False)():   # torch's hardtanh_ is a clamp
        raise NotImplementedError("hardtanh_: clamp is not supported for complex types")
    if getattr(input, "dtype", None) is tracegrad.uint8 and min(min_val, max_val) < 0:
        raise RuntimeError(f"cannot do hardtanh on an unsigned type with negative limits (min_val={min_val}, "
                           f"max_val={max_val}); pass limits of 0 or more, or a signed input")
    if isinstance(input, tracegrad.Tensor):   # torch's checked conversion of the limits
        check_past_f32("hardtanh_", input.dtype, min_val, max_val, own_range=True)
    return _write(input, lambda x: _F.hardtanh(x, min_val, max_val))
