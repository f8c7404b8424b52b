"""Reductions, scans and normalisers: sum, mean, prod, var/std, max/min, logsumexp, softmax,
norm, cumsum/cumprod, all/any, sort/topk. ``dim`` is a static tuple of non-negative ints
(or None for all dims)."""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from .elementwise import opmath, quotient, round_to
from .registry import defop


def _on_0d(fn):
    """``fn`` (which reduces or scans along ``dim``) also on a 0-d tensor, whose dim 0 / -1
    torch accepts: run on one element, give back 0-d results (inside the op, so grad_fn
    names are unchanged)."""
    @functools.wraps(fn)
    def g(x, *args, **kw):
        if x.ndim:
            return fn(x, *args, **kw)
        out = fn(x.reshape(1), *args, **kw)
        return tuple(o.reshape(()) for o in out) if isinstance(out, tuple) else out.reshape(())
    return g


def _sum(x, dim, keepdim, dtype):
    if jnp.issubdtype(x.dtype if dtype is None else dtype, jnp.complexfloating):
        # XLA's CPU reduce keeps one running complex sum (0.2% off on 2**18 complex64 terms),
        # while a float reduce is split into many partial sums, close to torch's cascade sum:
        # so the real and imaginary parts are summed as floats
        x = x.astype(dtype or x.dtype)
        part = functools.partial(jnp.sum, axis=dim, keepdims=keepdim)
        return jax.lax.complex(part(jnp.real(x)), part(jnp.imag(x)))
    target = x.dtype if dtype is None else jnp.dtype(dtype)
    if target in _LOW_FLOATS:
        # torch sums 16-bit floats in float32 and rounds once (XLA's CPU reduce keeps a float16
        # running sum: 1.4% off on 3000 terms of 60s, past test_nansum_out_dtype's tolerance)
        return jnp.sum(x.astype(target).astype(jnp.float32), axis=dim, keepdims=keepdim).astype(target)
    return jnp.sum(x, axis=dim, keepdims=keepdim, dtype=dtype)


_LOW_FLOATS = (jnp.dtype(jnp.float16), jnp.dtype(jnp.bfloat16))


def _nansum(x, dim, keepdim, dtype):
    target = x.dtype if dtype is None else jnp.dtype(dtype)
    if target in _LOW_FLOATS:   # float32 accumulation, as _sum
        x = x.astype(target)
        return _sum(jnp.where(jnp.isnan(x), jnp.zeros((), target), x), dim, keepdim, None)
    return jnp.nansum(x, axis=dim, keepdims=keepdim, dtype=dtype)


def _mean(x, dim, keepdim, dtype):
    return jnp.mean(x if dtype is None else x.astype(dtype), axis=dim, keepdims=keepdim)


defop("sum", _sum, grad_fn="SumBackward0")
defop("sum_dim", _sum, grad_fn="SumBackward1")
defop("nansum", _nansum,
      grad_fn="NansumBackward0", saves=("self",))
defop("mean", _mean, grad_fn="MeanBackward0")
defop("mean_dim", _mean, grad_fn="MeanBackward1")
defop("prod", lambda x, dim, keepdim, dtype: jnp.prod(x, axis=dim, keepdims=keepdim, dtype=dtype),
      grad_fn="ProdBackward0", saves=("self", "result"))
defop("prod_dim", lambda x, dim, keepdim, dtype: jnp.prod(x, axis=dim, keepdims=keepdim, dtype=dtype),
      grad_fn="ProdBackward1", saves=("self", "result"))
def _var(x, dim, correction, keepdim):
    # torch divides by max(0, n - correction): a correction past n gives inf (or 0/0 = nan),
    # where numpy's negative divisor would give a negative variance or nan
    n = math.prod(x.shape[d] for d in (range(x.ndim) if dim is None else dim))
    if n - correction > 0 or n == 0:
        return jnp.var(x, axis=dim, ddof=correction, keepdims=keepdim)
    centered = x - jnp.mean(x, axis=dim, keepdims=True)
    squares = jnp.real(centered * jnp.conj(centered)) if jnp.iscomplexobj(x) else centered * centered
    return jnp.sum(squares, axis=dim, keepdims=keepdim) / jnp.zeros((), squares.dtype)


defop("var", _var, grad_fn="VarBackward0", saves=("self",))


def _std(x, dim, correction, keepdim):
    # torch's gradient of std is 0 where std is 0 (a constant slice); sqrt's is inf there
    v = _var(x, dim, correction, keepdim)
    zero = v == 0
    return jnp.where(zero, 0, jnp.sqrt(jnp.where(zero, 1, v)))


defop("std", _std, grad_fn="StdBackward0", saves=("self", "result"))


def _var_mean(x, dim, correction, keepdim):
    return (_var(x, dim, correction, keepdim), jnp.mean(x, axis=dim, keepdims=keepdim))


defop("var_mean", _var_mean, grad_fn="VarMeanBackward0", saves=("self",), n_out=2)
defop("std_mean", lambda x, dim, correction, keepdim: (_std(x, dim, correction, keepdim),
                                                      jnp.mean(x, axis=dim, keepdims=keepdim)),
      grad_fn="StdMeanBackward0", saves=("self",), n_out=2)
defop("amax", lambda x, dim, keepdim: jnp.max(x, axis=dim, keepdims=keepdim), grad_fn="AmaxBackward0",
      saves=("self", "result"))
defop("amin", lambda x, dim, keepdim: jnp.min(x, axis=dim, keepdims=keepdim), grad_fn="AminBackward0",
      saves=("self", "result"))
# aminmax is one node with two outputs (AminmaxBackward0), each gradient split between ties as amin/amax
defop("aminmax", lambda x, dim, keepdim: (jnp.min(x, axis=dim, keepdims=keepdim), jnp.max(x, axis=dim, keepdims=keepdim)),
      grad_fn="AminmaxBackward0", saves=("self",), n_out=2)
# torch spreads the gradient of a whole-tensor max/min over its ties, NaN ties too (JAX's own
# rule gives a NaN result's positions nothing): ``spread_to_equal``, defined below
defop("max_all", lambda x: spread_to_equal(x, jnp.max(x)), grad_fn="MaxBackward1", saves=("self", "result"))
defop("min_all", lambda x: spread_to_equal(x, jnp.min(x)), grad_fn="MinBackward1", saves=("self", "result"))


def _max_dim(x, dim, keepdim):
    i = jnp.argmax(x, axis=dim, keepdims=True)
    v = jnp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = jnp.squeeze(v, dim), jnp.squeeze(i, dim)
    return v, i.astype(jnp.int64)


def _min_dim(x, dim, keepdim):
    i = jnp.argmin(x, axis=dim, keepdims=True)
    v = jnp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = jnp.squeeze(v, dim), jnp.squeeze(i, dim)
    return v, i.astype(jnp.int64)


# values take their gradient through the index actually chosen (torch: scatter to indices)
defop("max_dim", _on_0d(_max_dim), grad_fn="MaxBackward0", n_out=2, n_diff=1, saves=("self",))
defop("min_dim", _on_0d(_min_dim), grad_fn="MinBackward0", n_out=2, n_diff=1, saves=("self",))
defop("argmax", _on_0d(lambda x, dim, keepdim: jnp.argmax(x, axis=dim, keepdims=keepdim).astype(jnp.int64)))
defop("argmin", _on_0d(lambda x, dim, keepdim: jnp.argmin(x, axis=dim, keepdims=keepdim).astype(jnp.int64)))
defop("logsumexp", lambda x, dim, keepdim: jax.scipy.special.logsumexp(x, axis=dim, keepdims=keepdim),
      grad_fn="LogsumexpBackward0", saves=("self", "result"))


def _wide_vjp(vjp):
    """A softmax VJP over float16/bfloat16 ``y`` and ``g`` computed in float32 and rounded once,
    as torch's CPU softmax backward kernels (their sums and products in float32): in 16 bits
    XLA rounded ``exp(y)``, the sum and the product each, and a bfloat16 gradient differed from
    torch's in a third of its values."""
    def f(y, g, dim, dtype=None):
        if y.dtype in (jnp.bfloat16, jnp.float16):
            return vjp(y.astype(jnp.float32), g.astype(jnp.float32), dim).astype(y.dtype)
        return vjp(y, g, dim)
    return f


@_wide_vjp
def _softmax_vjp(y, g, dim):
    return y * (g - jnp.sum(g * y, axis=dim, keepdims=True))


@_wide_vjp
def _log_softmax_vjp(y, g, dim):
    return g - jnp.exp(y) * jnp.sum(g, axis=dim, keepdims=True)


def _cast(x, dtype):
    return x if dtype is None else x.astype(dtype)


def _wide(fn):
    """``fn`` over a float16/bfloat16 input computed in float32 and rounded once, as torch's
    CPU softmax kernels (float accumulation). Computed in 16 bits, where XLA rounds the max,
    the sum and the exponentials depends on what the op is fused with: a compiled program
    gave other last bits than the eager op (a bfloat16 softmax: an eighth of the values)."""
    wide = opmath(fn)

    def f(x, dim, dtype=None):
        return wide(_cast(x, dtype), axis=dim)
    return f


defop("softmax", _wide(jax.nn.softmax),
      grad_fn="SoftmaxBackward0", saves=("result",), vjp_result=_softmax_vjp)
def _log_softmax_lastdim(x, axis):
    """torch's CPU log_softmax over the last dim of a float16/bfloat16 input (its
    ``serial_vec_log_softmax_lastdim_range``): the row sum of ``exp(x - max)`` (float32) is kept
    in the input dtype, so is its log, and ``x - max - log`` is rounded once. Over another dim
    torch's kernel keeps float32 throughout (``_wide``); rounding once here too gave other last
    bits for a quarter of a bfloat16 GPT's log-probabilities, and its loss differed."""
    low = x.dtype
    xf = x.astype(jnp.float32)
    shifted = xf - jnp.max(xf, axis=axis, keepdims=True)
    total = jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True).astype(low).astype(jnp.float32)
    return (shifted - jnp.log(total).astype(low).astype(jnp.float32)).astype(low)


def _log_softmax(x, dim, dtype=None):
    x = _cast(x, dtype)
    if x.dtype in (jnp.bfloat16, jnp.float16) and x.ndim and dim % x.ndim == x.ndim - 1:
        return _log_softmax_lastdim(x, dim)
    return _wide(jax.nn.log_softmax)(x, dim)


defop("log_softmax", _log_softmax,
      grad_fn="LogSoftmaxBackward0", saves=("result",), vjp_result=_log_softmax_vjp)


def _norm(x, ord, dim, keepdim):
    if x.dtype in (jnp.bfloat16, jnp.float16):
        # torch accumulates reduced-precision norms in float32 and rounds the result once
        return _norm(x.astype(jnp.float32), ord, dim, keepdim).astype(x.dtype)
    # |x| as x * sign(x) for real x: torch's norm gradients vanish where x == 0 (JAX's abs has
    # derivative 1 there), for every p; inf/-inf ties at 0 then get 0 too, as torch
    a = jnp.abs(x) if jnp.iscomplexobj(x) else x * jnp.sign(x)
    if ord == 2:
        # sqrt(sum(x^2)) with torch's zero gradient at x == 0 (the double where keeps the
        # untaken sqrt branch from producing nan in the VJP)
        s = jnp.sum(a * a, axis=dim, keepdims=keepdim)
        zero = s == 0
        return jnp.where(zero, 0, jnp.sqrt(jnp.where(zero, 1, s)))
    if ord == float("inf"):
        return jnp.max(a, axis=dim, keepdims=keepdim)
    if ord == float("-inf"):
        return jnp.min(a, axis=dim, keepdims=keepdim)
    if ord == 0:   # the count comes out real, as |x| (a complex input's count is not complex)
        return jnp.sum((a != 0).astype(a.dtype), axis=dim, keepdims=keepdim)
    if ord == 1:
        return jnp.sum(a, axis=dim, keepdims=keepdim)
    if ord < 0:
        # a zero entry's negative power is inf (the norm is then 0); entries all inf sum to 0 (the
        # norm is then inf), as torch's sum(|x|**p)**(1/p). A zero entry takes the inf constant,
        # so no inf * 0 gradient reaches it
        zero = a == 0
        s = jnp.sum(jnp.where(zero, jnp.inf, jnp.where(zero, 1, a) ** ord), axis=dim, keepdims=keepdim)
        return s ** (1.0 / ord)
    # zero entries and a zero total are routed away from the power's infinite derivative
    # (torch's gradient is 0 there; JAX's would be inf * 0 = nan)
    zero = a == 0
    s = jnp.sum(jnp.where(zero, 0, jnp.where(zero, 1, a) ** ord), axis=dim, keepdims=keepdim)
    total_zero = s == 0
    return jnp.where(total_zero, 0, jnp.where(total_zero, 1, s) ** (1.0 / ord))


def _norm_vjp_lowp(static):
    """The 2-norm's backward for float16/bfloat16 input as torch's kernels round it:
    ``grad * (self / result)`` with the norm as saved (rounded to 16 bits), each step rounded
    to 16 bits and 0 where the norm is 0 (linalg_vector_norm_backward). ``jax.vjp`` of
    ``_norm`` divides by the float32 norm and rounds once, a 16-bit step off in about one
    gradient in twenty of ``F.normalize`` (NOTE [16-bit mul backward] in elementwise.py)."""
    if static.get("ord") != 2:
        return None
    dim, keepdim = static.get("dim"), static.get("keepdim")

    def rule(args, diff_pos, grad):
        x = args[0]
        if x.dtype not in (jnp.bfloat16, jnp.float16) or jnp.iscomplexobj(x):
            return None
        rnd = round_to(x.dtype)
        dims = range(x.ndim) if dim is None else (dim,) if isinstance(dim, int) else dim
        axes = tuple(sorted(d % max(x.ndim, 1) for d in dims))
        n32 = _norm(x, 2, axes, True).astype(jnp.float32)
        g32 = grad.astype(x.dtype).astype(jnp.float32)
        if not keepdim:
            g32 = jnp.expand_dims(g32, axes)
        q = jnp.where(n32 == 0, 0, rnd(quotient(x.astype(jnp.float32), jnp.where(n32 == 0, 1, n32))))
        return [rnd(g32 * q).astype(x.dtype)]
    return rule


defop("norm", _norm, grad_fn="LinalgVectorNormBackward0", saves=("self", "result"), vjp_rule=_norm_vjp_lowp)
# NOTE [cumulative scans in a wider type]
# torch's CPU cumsum/cumprod kernel keeps one running value per line in the accumulation type of
# the result dtype and rounds each output once: float for float16/bfloat16, double for float32,
# complex<double> for complex64 (CPU ``acc_type``; CUDA keeps float32 in float). XLA's scan
# accumulates in the result dtype: a float32 cumprod of a DDPM's 9 ``1 - beta`` terms was a
# float32 step off torch in 2 of 9 outputs (tiny-diffusion's ``alphas_cumprod``), and the
# posterior coefficients built from it up to 1e-6 relative off. So the scan runs in that wider
# type and rounds once. The cumsum gradient, a reversed scan, then runs in it too (as torch's
# CumsumBackward0, a cumsum of the flipped gradient); torch's CumprodBackward0 for an input
# without zeros is ``reversed_cumsum(result * grad) / self`` with only the reversed sum wide,
# which ``_cumprod_vjp`` follows (with a zero anywhere in the input torch takes another formula:
# ``jax.vjp`` of the wide scan stands in for it).
_WIDE = {jnp.dtype(jnp.float32): jnp.dtype(jnp.float64), jnp.dtype(jnp.complex64): jnp.dtype(jnp.complex128)}


def _scan_wide(scan):
    """A cumulative ``scan(x, axis=, dtype=)`` run in torch's CPU accumulation type of its result
    dtype (input dtype or ``dtype=``) and rounded once per output: float32 for float16/bfloat16
    (XLA's 16-bit running sum drifted: a cumsum of 200 values ~3 was 0.06 off in float16, 0.25
    in bfloat16), float64 for float32, complex128 for complex64 (NOTE [cumulative scans in a
    wider type]). The gradient's reversed scan is then as wide, as torch's."""
    def f(x, dim, dtype):
        target = x.dtype if dtype is None else jnp.dtype(dtype)
        wide = jnp.float32 if target in _LOW_FLOATS else _WIDE.get(target)
        if wide is not None:
            return scan(x.astype(target).astype(wide), axis=dim).astype(target)
        return scan(x, axis=dim, dtype=dtype)
    return f


_cumprod = _on_0d(_scan_wide(jnp.cumprod))


def _cumprod_vjp(static):
    """CumprodBackward0 for a float32/float64 input as torch computes it when the input holds no
    zero: ``reversed_cumsum(result * grad) / self``, the products and the quotient rounded in the
    input dtype, the reversed sum in float64 (NOTE [cumulative scans in a wider type]); with a
    zero, ``jax.vjp`` of the scan."""
    if static.get("dtype") is not None:
        return None
    dim = static.get("dim")

    def rule(args, diff_pos, grad):
        x = args[0]
        if x.dtype not in (jnp.float32, jnp.float64):
            return None
        grad = grad.astype(x.dtype)
        out, vjp = jax.vjp(lambda a: _cumprod(a, dim, None), x)
        if x.ndim == 0:
            return [grad]
        d = dim % x.ndim
        has_zero = jnp.any(x == 0)
        w = (out * grad).astype(jnp.float64)
        rev = jnp.flip(jnp.cumsum(jnp.flip(w, d), axis=d), d).astype(x.dtype)
        # a safe divisor where the other formula is taken (its gradient must not be inf * 0)
        formula = rev / jnp.where(has_zero, jnp.ones_like(x), x)
        return [jnp.where(has_zero, vjp(grad)[0], formula)]
    return rule


defop("cumsum", _on_0d(_scan_wide(jnp.cumsum)), grad_fn="CumsumBackward0")
defop("cumprod", _cumprod, grad_fn="CumprodBackward0", saves=("self", "result"), vjp_rule=_cumprod_vjp)
def _logical(fn):
    # torch keeps uint8 for all/any of a uint8 tensor (every other dtype gives bool)
    def f(x, dim, keepdim):
        out = fn(x, axis=dim, keepdims=keepdim)
        return out.astype(jnp.uint8) if x.dtype == jnp.uint8 else out
    return f


defop("all", _logical(jnp.all))
defop("any", _logical(jnp.any))
defop("count_nonzero", lambda x, dim: jnp.count_nonzero(x, axis=dim).astype(jnp.int64))


def _sort(x, dim, descending, stable):
    i = jnp.argsort(x, axis=dim, stable=True, descending=descending)
    return jnp.take_along_axis(x, i, axis=dim), i.astype(jnp.int64)


defop("sort", _on_0d(_sort), grad_fn="SortBackward0", n_out=2, n_diff=1, saves=("self",))
defop("argsort", _on_0d(lambda x, dim, descending, stable: _sort(x, dim, descending, stable)[1]))


def _topk(x, k, dim, largest, sorted):
    xm = jnp.moveaxis(x, dim, -1)
    v, i = jax.lax.top_k(xm if largest else -xm, k)
    if not largest:
        v = -v
    return jnp.moveaxis(v, -1, dim), jnp.moveaxis(i, -1, dim).astype(jnp.int64)


defop("topk", _on_0d(_topk), grad_fn="TopkBackward0", n_out=2, n_diff=1, saves=("self",))


def _kthvalue(x, k, dim, keepdim):
    i = jnp.argsort(x, axis=dim, stable=True)
    i = jnp.take(i, jnp.array([k - 1]), axis=dim)
    v = jnp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = jnp.squeeze(v, dim), jnp.squeeze(i, dim)
    return v, i.astype(jnp.int64)


defop("kthvalue", _on_0d(_kthvalue), grad_fn="KthvalueBackward0", n_out=2, n_diff=1, saves=("self",))


def sorted_pick(x, dim, keepdim, pos):
    """The value and (int64) index of the element at sorted position ``pos`` (a count per
    slice, keepdims-shaped) along ``dim``. A stable argsort keeps equal values in input order
    and puts NaNs last, in order."""
    order = jnp.argsort(x, axis=dim, stable=True)
    pos = jnp.broadcast_to(pos, x.shape[:dim] + (1,) + x.shape[dim + 1:])
    i = jnp.take_along_axis(order, pos, axis=dim)
    v = jnp.take_along_axis(x, i, axis=dim)
    if not keepdim:
        v, i = jnp.squeeze(v, dim), jnp.squeeze(i, dim)
    return v, i.astype(jnp.int64)


def _median(x, dim, keepdim):
    # torch: a slice holding NaN has median NaN (index: its first NaN, which sorts right after
    # the non-NaN values), else the lower median
    n = x.shape[dim]
    n_nan = jnp.sum(jnp.isnan(x), axis=dim, keepdims=True) if jnp.issubdtype(x.dtype, jnp.inexact) else 0
    return sorted_pick(x, dim, keepdim, jnp.where(n_nan > 0, n - n_nan, (n + 1) // 2 - 1))


defop("median_dim", _on_0d(_median), grad_fn="MedianBackward1", n_out=2, n_diff=1, saves=("self",))


def _renorm(x, p, dim, maxnorm):
    """torch.renorm: slices along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled by
    ``maxnorm / (norm + 1e-7)``; one RenormBackward0 node, whose JAX derivative is torch's
    renorm_backward formula. The norm of a slice left alone never enters the gradient (its root is
    taken of a safe 1 there: a zero slice's sqrt would give NaN through the unselected branch)."""
    others = tuple(i for i in range(x.ndim) if i != dim)
    low = x.dtype in (jnp.float16, jnp.bfloat16)
    a = jnp.abs(x.astype(jnp.float32) if low else x)   # torch accumulates 16-bit norms in float32
    if p == float("inf"):
        norm = jnp.max(a, axis=others, keepdims=True)
    else:
        # a zero element adds nothing and gets no gradient (torch's norm_backward masks it; |x|**p's
        # derivative there is NaN or infinite for p < 1)
        zero = a == 0
        s = jnp.sum(jnp.where(zero, 0.0, jnp.where(zero, 1.0, a) ** p), axis=others, keepdims=True)
        mask = jax.lax.stop_gradient(s ** (1.0 / p) > maxnorm)
        norm = jnp.where(mask, s, 1.0) ** (1.0 / p)
    mask = jax.lax.stop_gradient(norm > maxnorm) if p == float("inf") else mask
    factor = jnp.where(mask, maxnorm / (norm + 1e-7), 1.0)
    return x * factor.astype(a.dtype).astype(x.real.dtype if jnp.iscomplexobj(x) else x.dtype)


defop("renorm", _renorm, grad_fn="RenormBackward0", saves=("self",))


def _mode_pick(x, indices, dim, keepdim):
    # mode's values, read at the indices the API chose (``keepdim``-shaped): one ModeBackward0 node, as torch
    if x.ndim == 0:   # a 0-d input is its own mode
        return x
    v = jnp.take_along_axis(x, indices, axis=dim)
    return v if keepdim else jnp.squeeze(v, dim)


defop("mode_pick", _mode_pick, args=("self", "indices"), grad_fn="ModeBackward0", saves=("self", "indices"))


def spread_to_equal(x, v):
    """``v`` (the whole tensor's median, max or min, no gradient) with torch's gradient
    (``evenly_distribute_backward``): spread evenly over the elements equal to it, a NaN ``v``
    over the NaN elements. The value is ``v`` itself (a mean of the ties would be NaN for an
    infinite ``v`` and round in half precision)."""
    v = jax.lax.stop_gradient(v)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return v   # nothing to differentiate
    return _spread(x, v)


@jax.custom_jvp
def _spread(x, v):
    return v


@_spread.defjvp
def _spread_jvp(primals, tangents):
    x, v = primals
    mask = (x == v) | (jnp.isnan(x) & jnp.isnan(v))
    den = jnp.sum(mask.astype(x.dtype))
    # linear in the tangent, so JAX transposes it for the backward (and differentiates it again)
    return v, jnp.sum(jnp.where(mask, tangents[0], 0)) / jnp.where(den == 0, 1, den)


def whole_median(x, pick):
    """The median of all of ``x`` chosen by ``pick(flat, dim, keepdim)``, with torch's gradient
    (``spread_to_equal``); NaN for an empty tensor, as torch."""
    if x.size == 0:
        return jnp.full((), jnp.nan, x.dtype)
    return spread_to_equal(x, pick(x.ravel(), 0, False)[0])


defop("median_all", lambda x: whole_median(x, _median), grad_fn="MedianBackward0", saves=("self",))


def _quantile(x, q, dim, keepdim, interpolation):
    # sort + gather + lerp (as torch builds it); jnp.quantile's VJP disagreed with torch's for
    # a vector q along a non-last dim
    if dim is None:   # every dim reduced: keepdim keeps each of them as a 1
        out = _quantile(x.ravel(), q, 0, False, interpolation)
        return out.reshape(out.shape + (1,) * x.ndim) if keepdim else out
    xs = jnp.moveaxis(jnp.sort(x, axis=dim), dim, -1)
    n = xs.shape[-1]
    q = jnp.asarray(q, x.dtype)
    batch = xs.shape[:-1]
    # torch: a slice holding a NaN takes its last sorted element (the NaN) for every q, so the
    # value is NaN and the gradient goes to the NaN's position
    has_nan = jnp.isnan(xs).any(axis=-1).reshape(batch + (1,) * q.ndim)
    pos = jnp.where(has_nan, jnp.asarray(n - 1, x.dtype), jnp.broadcast_to(q * (n - 1), batch + q.shape))
    lo = jnp.floor(pos)
    hi = jnp.ceil(pos)
    if interpolation == "lower":
        pos = lo
    elif interpolation == "higher":
        pos = hi
    elif interpolation == "nearest":
        pos = jnp.round(pos)
    lo_i, hi_i = jnp.floor(pos).astype(jnp.int32), jnp.ceil(pos).astype(jnp.int32)
    frac = 0.5 if interpolation == "midpoint" else (pos - jnp.floor(pos))
    if interpolation == "midpoint":
        lo_i, hi_i = lo.astype(jnp.int32), hi.astype(jnp.int32)
        frac = jnp.where(lo_i == hi_i, 0.0, 0.5).astype(x.dtype)

    def gather(i):   # (..., *q.shape) picks from each slice's sorted values
        flat = jnp.take_along_axis(xs, i.reshape(batch + (-1,)), axis=-1)
        return flat.reshape(batch + q.shape)
    a = gather(lo_i)
    b = gather(hi_i)
    out = a + (b - a) * frac
    out = jnp.moveaxis(out, tuple(range(out.ndim - q.ndim, out.ndim)), tuple(range(q.ndim)))
    if keepdim:
        out = jnp.expand_dims(out, q.ndim + dim) if x.ndim else out
    return out


# torch builds quantile from sort + lerp and names the result's node by its last view
defop("quantile", _quantile, args=("self", "q"), grad_fn="SqueezeBackward4", saves=("self", "q"), no_edge=("q",))
