"""NOTE [limited dtypes]: torch 2.13 has CPU kernels for uint16/uint32/uint64 and the float8
dtypes in only a few ops; every other op raises NotImplementedError (``"add_stub" not
implemented for 'UInt32'``). JAX computes in all of them, so without this guard tracegrad would
answer where torch refuses. The tables below hold the ops torch runs in each family (observed on
torch 2.13 CPU: creation, copies and casts, ==/!=, indexing, cat/stack, where, fill; the unsigned
ones also mul, bitwise and/or/xor, sum/prod/cumsum (into int64), sort, unique, and the unary
float functions, which compute in float32).

An op *computes in* a limited dtype when one of its inputs has that dtype and either an output
has it or no input of another floating type (a float tensor, a Python float) lifted the
computation out of it: ``uint32 + float32`` computes in float32 and is allowed, as in torch.
The test runs while JAX traces the op (the dtypes are static there), so a jitted call pays
nothing for it: the check wraps the function ``jax.jit`` traces (``registry.Op.forward``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from . import dtypes as _dt

# ops torch runs on every limited dtype (views, ``Op.view``, run on any dtype and are not listed)
_COMMON = frozenset({
    "clone", "copy", "to_copy", "index", "cat", "stack", "where", "fill", "zero", "eq", "ne", "isnan",
    "any", "all", "repeat", "roll", "roll_flat", "fill_tensor",
})
_UNSIGNED = _COMMON | frozenset({
    "mul", "div", "div_mode", "bitwise_and", "bitwise_or", "bitwise_xor", "sum", "sum_dim", "prod", "prod_dim", "cumsum",
    "cumprod", "sort", "unique",
    "isclose", "exp", "sqrt", "isinf", "isfinite",
})
_FLOAT8 = _COMMON | frozenset({"mul", "index_put", "masked_select", "index_select"})
# per float8 dtype, as torch 2.13's CPU kernels: e8m0fnu (exponent only) has no abs, mm or
# index_put; isinf/isfinite exist for e5m2 (which has infinities) and isfinite for e8m0fnu only
_F8_EXTRA = {"float8_e4m3fn": {"abs", "mm"}, "float8_e4m3fnuz": {"abs", "mm"}, "float8_e5m2fnuz": {"abs", "mm"},
             "float8_e5m2": {"abs", "mm", "isinf", "isfinite"}, "float8_e8m0fnu": {"isfinite"}}
_ALLOWED = {d.np: ((_UNSIGNED if not d.is_floating_point else
                    (_FLOAT8 - {"index_put"} if d is _dt.float8_e8m0fnu else _FLOAT8) | _F8_EXTRA[d.name]),
                   _dt.SCALAR_NAMES[d.name]) for d in _dt.LIMITED}
# rounding division computes in the input dtype (torch: "div_floor" is not implemented)
_STATIC_DENIED = {"div": ("rounding_mode", ("floor", "trunc")), "div_mode": ("rounding_mode", ("floor", "trunc"))}


class LimitedDtypeError(NotImplementedError):
    """An op torch 2.13 does not implement for a limited dtype; passes the dispatch boundary
    (``errors.op_error``) unchanged."""


# ops torch 2.13 has no complex CPU kernel for: NotImplementedError naming torch's kernel, as
# torch, where JAX would answer (a silently real-only formula) or fail with its own words
_NO_COMPLEX = {
    "erf": "erf_vml_cpu", "erfinv": "erfinv_vml_cpu", "nextafter": "nextafter_cpu", "copysign": "copysign_cpu",
    "copysign_scalar": "copysign_cpu", "igamma": "igamma_cpu", "igammac": "igammac_cpu", "xlogy": "xlogy_cpu",
    "xlogy_scalar_self": "xlogy_cpu", "xlogy_scalar_other": "xlogy_cpu", "xlog1py": "xlog1py_cpu",
    "xlog1py_scalar_self": "xlog1py_cpu", "xlog1py_scalar_other": "xlog1py_cpu", "zeta": "zeta_cpu", "round": "round_vml_cpu", "round_decimals": "round_vml_cpu",
    "polygamma": "polygamma", "softplus": "softplus_cpu", "log_sigmoid": "log_sigmoid_cpu", "hardshrink": "hardshrink_cpu",
    "softshrink": "softshrink_check", "elu": "elu_cpu", "selu": "elu_cpu", "celu": "elu_cpu", "leaky_relu": "leaky_relu_cpu",
    "gelu": "GeluKernelImpl", "mish": "mish_cpu", "softmax": "softmax_lastdim_kernel_impl",
    "log_softmax": "log_softmax_lastdim_kernel_impl", "atan2": "atan2_cpu",
    # losses, pools and normalizations (JAX computes them on complex numbers with real-only formulas)
    "mse_loss": "mse_cpu", "smooth_l1_loss": "smooth_l1_cpu", "huber_loss": "huber_cpu",
    "binary_cross_entropy": "binary_cross_entropy", "binary_cross_entropy_with_logits": "log_sigmoid_cpu",
    "max_pool2d": "max_pool2d", "max_pool2d_with_indices": "max_pool2d", "max_pool3d": "max_pool3d",
    "max_pool3d_with_indices": "max_pool3d", "avg_pool2d": "avg_pool2d", "avg_pool3d": "avg_pool3d_out_frame",
    "adaptive_avg_pool2d": "adaptive_avg_pool2d", "adaptive_max_pool2d": "adaptive_max_pool2d",
    "native_layer_norm": "LayerNormKernelImpl", "native_group_norm": "GroupNormKernelImpl",
    "native_batch_norm": "batch_norm",
}
# clamps: torch's own words (no kernel name) for a complex input
_NO_COMPLEX_CLAMP = {"clamp", "clamp_tensor", "clamp_min", "clamp_min_tensor", "clamp_max", "clamp_max_tensor"}
# the ones torch refuses with a RuntimeError of its own words instead
_NO_COMPLEX_RUNTIME = {"fmax", "fmin"}


def check_complex(name, arrays) -> None:
    """Refuse op ``name`` on a complex input where torch 2.13 has no complex CPU kernel:
    NotImplementedError naming the kernel (RuntimeError for fmax/fmin), torch's exact classes;
    ``dtype_refusal`` marks it for the dispatch boundary (``errors.op_error``) to pass unchanged."""
    kernel = _NO_COMPLEX.get(name)
    if kernel is None and name not in _NO_COMPLEX_RUNTIME and name not in _NO_COMPLEX_CLAMP:
        return
    d = next((_dtype(a) for a in arrays if _dtype(a) is not None and jnp.issubdtype(_dtype(a), jnp.complexfloating)),
             None)
    if d is None and kernel is not None and any(type(a) is complex for a in arrays):
        d = jnp.dtype(jnp.complex64)   # a Python complex number makes the computation complex (x.xlogy(1j))
    if d is None:
        return
    if name in _NO_COMPLEX_CLAMP:
        err = NotImplementedError(f"tracegrad.{name}: clamp is not supported for complex types; clamp .real and "
                                  ".imag apart")
    elif kernel is None:
        err = RuntimeError(f"{name} not implemented for complex tensors; compare .real or .abs() instead")
    else:
        scalar = "ComplexDouble" if d == jnp.complex128 else "ComplexFloat"
        err = NotImplementedError(f"tracegrad.{name}: \"{kernel}\" not implemented for '{scalar}' (torch has no "
                                  "CPU kernel for it either); take .real, .imag or .abs() first")
    err.dtype_refusal = True
    raise err


def _dtype(a):
    return getattr(a, "dtype", None)


def _weak(a) -> bool:
    return isinstance(a, (int, float, complex)) or getattr(getattr(a, "aval", None), "weak_type", False)


def _lifting_float(a) -> bool:
    # a Python float (or a weak 0-d float array from ``as_arg``) or a tensor of a plain floating type
    if isinstance(a, float):
        return True
    d = _dtype(a)
    # jnp's issubdtype knows ml_dtypes' bfloat16 is floating (numpy's does not)
    return d is not None and d not in _ALLOWED and jnp.issubdtype(d, jnp.inexact)


def check(name, view, arrays, static, outputs) -> None:
    """Raise LimitedDtypeError if op ``name`` computes in a limited dtype torch has no kernel for
    (``view``: the op's ``Op.view`` flag)."""
    limited = [_ALLOWED[_dtype(a)] for a in arrays if _dtype(a) in _ALLOWED]
    if not limited or view:
        return
    out_limited = any(_dtype(o) in _ALLOWED for o in jax.tree_util.tree_leaves(outputs))
    if not out_limited and any(_lifting_float(a) for a in arrays):
        return
    allowed, scalar_name = limited[0]
    denied = _STATIC_DENIED.get(name)
    # torch's float8 mul takes two tensors, not a Python number
    scalar_mul = name == "mul" and not allowed >= _UNSIGNED and any(_weak(a) for a in arrays)
    if name in allowed and not (denied and dict(static).get(denied[0]) in denied[1]) and not scalar_mul:
        return
    raise LimitedDtypeError(f"tracegrad.{name}: not implemented for '{scalar_name}' (torch has no CPU kernel "
                            f"for it either); convert the tensor first, e.g. .to(tracegrad.int64) or .float()")


def guarded(name, view, fn, static):
    """``fn`` with the check run on each trace: what ``Op.forward`` hands to ``jax.jit``."""
    def run(*arrays):
        check_complex(name, arrays)
        try:
            out = fn(*arrays)
        except Exception:
            # JAX may have no kernel for a limited dtype either (fmod of float8): torch's refusal
            # is the answer where torch has none, the JAX error only where torch has one
            check(name, view, arrays, static, ())
            raise
        check(name, view, arrays, static, out)
        return out
    # the compiled program keeps the op function's name (jit_add...), as without the wrapper
    run.__name__ = run.__qualname__ = getattr(getattr(fn, "func", fn), "__name__", name)
    return run


def check_dtype(api: str, d, *, unsigned_ok: bool = False) -> None:
    """For functions that are not one op on an input of the dtype (arange, rand, nonzero...):
    LimitedDtypeError when ``d`` (a tracegrad dtype, numpy dtype or None) is a limited dtype
    torch refuses there; ``unsigned_ok`` lets uint16/32/64 through (torch has their kernel)."""
    entry = _ALLOWED.get(getattr(d, "np", d)) if d is not None else None
    if entry is None or (unsigned_ok and entry[0] >= _UNSIGNED):
        return
    raise LimitedDtypeError(f"{api}: not implemented for '{entry[1]}' (torch has no CPU kernel for it either); "
                            "use another dtype and convert the result with .to()")
