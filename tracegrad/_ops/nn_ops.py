"""Neural-network ops: convolution, pooling, normalisation, activations, losses.

Each op is a pure ``jax.lax``/``jax.numpy`` function with torch's ``grad_fn`` name and the
inputs torch saves for backward (NOTE [saved set] in ``registry.py``). Inputs a backward
needs that are not differentiable (targets, running statistics, indices) are in ``saves``:
an unsaved input is rebuilt as zeros inside the jitted backward.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .elementwise import opmath
from .registry import defop

_HI = lax.Precision.HIGHEST
_SPATIAL = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


# ---- convolution ----------------------------------------------------------------------------
def _convolution(x, w, b, *, stride, padding, dilation, transposed, output_padding, groups):
    """``padding`` is a tuple of (lo, hi) pairs, one per spatial dim."""
    nd = x.ndim - 2
    dn = lax.conv_dimension_numbers(x.shape, w.shape, _SPATIAL[nd])
    # torch computes a half/bfloat16 convolution (bias included) and its gradients in float32 and
    # rounds once, as addmm does (autocast's conv layers depend on it); a half-precision product
    # rounded before the bias, or half-precision gradient sums, differ by ulps
    out_dtype = x.dtype
    if out_dtype in (jnp.bfloat16, jnp.float16):
        x, w = x.astype(jnp.float32), w.astype(jnp.float32)
        b = None if b is None else b.astype(jnp.float32)
    if not transposed:
        y = lax.conv_general_dilated(x, w, window_strides=stride, padding=padding, rhs_dilation=dilation,
                                     dimension_numbers=dn, feature_group_count=groups, precision=_HI)
    else:
        # weight (Cin, Cout/g, *k) -> (Cout, Cin/g, *k), spatially flipped
        cin, coutg, ks = w.shape[0], w.shape[1], w.shape[2:]
        wt = w.reshape((groups, cin // groups, coutg) + ks)
        wt = jnp.swapaxes(wt, 1, 2).reshape((groups * coutg, cin // groups) + ks)
        wt = jnp.flip(wt, axis=tuple(range(2, 2 + nd)))
        pads = tuple((d * (k - 1) - lo, d * (k - 1) - hi + op)
                     for k, d, (lo, hi), op in zip(ks, dilation, padding, output_padding))
        dn = lax.conv_dimension_numbers(x.shape, wt.shape, _SPATIAL[nd])
        y = lax.conv_general_dilated(x, wt, window_strides=(1,) * nd, padding=pads, lhs_dilation=stride,
                                     rhs_dilation=dilation, dimension_numbers=dn,
                                     feature_group_count=groups, precision=_HI)
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd).astype(y.dtype)
    return y.astype(out_dtype)


# torch's double backward keeps the edges to input and weight whose values a first derivative
# does not read (a constant weight's input gradient), with an undefined gradient there
defop("convolution", _convolution, args=("input", "weight", "bias"), grad_fn="ConvolutionBackward0",
      saves=("input", "weight"), shape_edges={"input": "undefined", "weight": "undefined"})


# ---- pooling --------------------------------------------------------------------------------
def _pool_out(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1       # the last window must start inside the input or the left padding
    return out


def _pool_pads(shape, kernel, stride, padding, dilation, ceil_mode):
    pads = []
    for size, k, s, p, d in zip(shape, kernel, stride, padding, dilation):
        out = _pool_out(size, k, s, p, d, ceil_mode)
        hi = max((out - 1) * s + d * (k - 1) + 1 - size - p, p)
        pads.append((p, hi))
    return pads


def _max_pool(x, *, kernel, stride, padding, dilation, ceil_mode):
    nd = len(kernel)
    if any(d != 1 for d in dilation):
        # lax has no VJP for dilated max windows: take the max over strided slices instead
        return _max_pool_indices(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                                 ceil_mode=ceil_mode)[0]
    pads = [(0, 0)] * (x.ndim - nd) + _pool_pads(x.shape[-nd:], kernel, stride, padding, dilation, ceil_mode)
    lead = (1,) * (x.ndim - nd)
    # a concrete (numpy) init value makes this lax's differentiable reduce_window_max
    init = np.array(-np.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min, x.dtype)
    return lax.reduce_window(x, init, lax.max, lead + kernel, lead + stride, pads,
                             window_dilation=lead + dilation)


def _max_pool_indices(x, *, kernel, stride, padding, dilation, ceil_mode):
    """(values, flat spatial indices) as torch's ``max_pool2d_with_indices``."""
    nd = len(kernel)
    sp = x.shape[-nd:]
    pads = _pool_pads(sp, kernel, stride, padding, dilation, ceil_mode)
    idx = jnp.arange(int(np.prod(sp))).reshape(sp).astype(x.dtype if x.dtype == jnp.float64 else jnp.float32)
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - nd) + pads, constant_values=-jnp.inf)
    ip = jnp.pad(idx, pads, constant_values=-1)
    outs = [_pool_out(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(sp, kernel, stride, padding, dilation)]
    vals, inds = None, None
    for off in np.ndindex(*kernel):
        sl = tuple(slice(o * d, o * d + (n - 1) * st + 1, st) for o, d, n, st in zip(off, dilation, outs, stride))
        v = xp[(Ellipsis,) + sl]
        i = jnp.broadcast_to(ip[sl], v.shape)
        if vals is None:
            vals, inds = v, i
        else:
            take = (v > vals) | jnp.isnan(v)
            vals, inds = jnp.where(take, v, vals), jnp.where(take, i, inds)
    return vals, inds.astype(jnp.int64)


defop("max_pool2d", _max_pool, grad_fn="MaxPool2DWithIndicesBackward0", saves=("self",))
defop("max_pool2d_with_indices", _max_pool_indices, grad_fn="MaxPool2DWithIndicesBackward0", saves=("self",),
      n_out=2, n_diff=1)


def _avg_pool(x, *, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if x.dtype in (jnp.float16, jnp.bfloat16):
        # torch's kernels sum half/bfloat16 windows in float32 (their accumulate type) and round
        # once; summing in the narrow dtype is off by several ulps on a 7x7 window
        return _avg_pool(x.astype(jnp.float32), kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad, divisor_override=divisor_override).astype(x.dtype)
    nd = len(kernel)
    sp = x.shape[-nd:]
    ones = (1,) * nd
    pads = _pool_pads(sp, kernel, stride, padding, ones, ceil_mode)
    lead = (1,) * (x.ndim - nd)
    full = [(0, 0)] * (x.ndim - nd) + pads
    s = lax.reduce_window(x, np.array(0, x.dtype), lax.add, lead + kernel, lead + stride, full)
    # torch divides integer sums in C++: truncating integer division, the dtype kept
    div = (lambda a, b: lax.div(a, jnp.broadcast_to(jnp.asarray(b, x.dtype), a.shape))) if jnp.issubdtype(x.dtype, jnp.integer) \
        else (lambda a, b: a / b)
    if divisor_override:
        return div(s, divisor_override)
    if count_include_pad:
        # windows count padding cells, but not cells past the padded input (ceil_mode overhang)
        base = np.ones(tuple(n + 2 * p for n, p in zip(sp, padding)), np.float64)
        cpads = [(0, hi - p) for (p, hi) in pads]
    else:
        base = np.ones(sp, np.float64)
        cpads = pads
    cnt = lax.reduce_window(np.asarray(base, x.dtype), np.array(0, x.dtype), lax.add, kernel, stride, cpads)
    return div(s, cnt)


# the pools' and pads' backward ops take ``self`` for its shape, and differentiate to zeros
# there (NOTE [shape edges] in autograd/_dispatch.py)
defop("avg_pool2d", _avg_pool, grad_fn="AvgPool2DBackward0", saves=("self",), shape_edges={"self": "zeros"})


def _adaptive_bounds(n_in, n_out):
    return [(math.floor(i * n_in / n_out), math.ceil((i + 1) * n_in / n_out)) for i in range(n_out)]


def _adaptive_avg(x, *, output_size):
    nd = len(output_size)
    out = x
    for k, o in enumerate(output_size):
        ax = x.ndim - nd + k
        n = x.shape[ax]
        m = np.zeros((o, n))
        for i, (a, b) in enumerate(_adaptive_bounds(n, o)):
            m[i, a:b] = 1.0 / (b - a)
        out = jnp.moveaxis(jnp.tensordot(out, jnp.asarray(m, x.dtype), axes=((ax,), (1,)), precision=_HI), -1, ax)
    return out


def _adaptive_max(x, *, output_size):
    """Adaptive max pool over the trailing ``len(output_size)`` dims, read at the indices torch
    returns: the derivative then reaches the one element torch's does (JAX's max would split
    it between tied elements)."""
    idx = _adaptive_max_indices(x, output_size=output_size)
    lead = x.ndim - len(output_size)
    flat = x.reshape(x.shape[:lead] + (math.prod(x.shape[lead:]),))
    pos = idx.reshape(idx.shape[:lead] + (math.prod(output_size),))
    return jnp.take_along_axis(flat, pos, axis=-1).reshape(idx.shape)


def _adaptive_max_indices(x, *, output_size):
    """torch's ``return_indices`` of an adaptive max pool over the trailing ``len(output_size)``
    dims: per window, the flat position (within those dims) of its first maximum (NaN counts as
    the maximum). Each window is gathered along each pooled dim, padded to the widest window by
    repeating its last element (which cannot change the first maximum)."""
    nd, lead = len(output_size), x.ndim - len(output_size)
    sizes = x.shape[lead:]
    windows = []
    for k, o in enumerate(output_size):
        bounds = _adaptive_bounds(sizes[k], o)
        width = max(b - a for a, b in bounds)
        windows.append(np.array([[min(a + j, b - 1) for j in range(width)] for a, b in bounds]))
    g = x
    for k, w in enumerate(windows):   # axis lead + 2k becomes (output position, place in window)
        ax = lead + 2 * k
        g = jnp.take(g, w.reshape(-1), axis=ax).reshape(g.shape[:ax] + w.shape + g.shape[ax + 1:])
    perm = (*range(lead), *(lead + 2 * k for k in range(nd)), *(lead + 2 * k + 1 for k in range(nd)))
    g = g.transpose(perm).reshape(x.shape[:lead] + tuple(output_size) + (math.prod(w.shape[1] for w in windows),))
    local = jnp.argmax(jnp.where(jnp.isnan(g), jnp.inf, g) if jnp.issubdtype(g.dtype, jnp.floating) else g, axis=-1)
    flat = jnp.zeros(local.shape, jnp.int64)
    for k in reversed(range(nd)):
        width = windows[k].shape[1]
        j, local = local % width, local // width
        pos = jnp.arange(output_size[k]).reshape((-1,) + (1,) * (nd - 1 - k))
        flat = flat + jnp.asarray(windows[k])[pos, j].astype(jnp.int64) * int(np.prod(sizes[k + 1:], dtype=np.int64))
    return flat


defop("adaptive_avg_pool2d", _adaptive_avg, grad_fn="AdaptiveAvgPool2DBackward0", saves=("self",),
      shape_edges={"self": "zeros"})
# one indices op per rank: torch lays out the 2-D pool's indices as its input's suggested memory
# format (channels_last in, channels_last out) but the 3-D pool's always contiguous (memory_format.py)
defop("adaptive_max_pool2d_indices", _adaptive_max_indices)
defop("adaptive_max_pool3d_indices", _adaptive_max_indices)
defop("adaptive_max_pool2d", _adaptive_max, grad_fn="AdaptiveMaxPool2DBackward0", saves=("self",))
defop("adaptive_max_pool3d", _adaptive_max, grad_fn="AdaptiveMaxPool3DBackward0", saves=("self",))


def _max_unpool(x, idx, *, output_size):
    """torch's ``max_unpool2d``/``max_unpool3d`` over the trailing ``len(output_size)`` dims: each
    value written at its flat index of the ``prod(output_size)`` output plane, zeros elsewhere
    (an index outside the plane writes nothing; the caller checks them). The value is a scatter
    (overlapping pool windows write the same maximum twice); the derivative is torch's gather of
    the output gradient at every index, duplicates included: a scatter-add's transpose, added as a
    zero-valued term (JAX's scatter-set would give it to one of the duplicates only)."""
    n = len(output_size)
    lead = x.shape[:x.ndim - n]
    rows, plane = math.prod(lead), math.prod(output_size)
    flat = x.reshape(rows, math.prod(x.shape[x.ndim - n:]))
    pos = idx.reshape(flat.shape)
    pos = jnp.where(pos < 0, plane, pos)   # (jnp would wrap a negative index; drop it as past the end)
    r = jnp.arange(rows)[:, None]
    zeros = jnp.zeros((rows, plane), x.dtype)
    added = zeros.at[r, pos].add(flat, mode="drop")
    out = zeros.at[r, pos].set(lax.stop_gradient(flat), mode="drop") + (added - lax.stop_gradient(added))
    return out.reshape(lead + tuple(output_size))


defop("max_unpool2d", _max_unpool, args=("self", "indices"), grad_fn="MaxUnpool2DBackward0", saves=("indices",))
defop("max_unpool3d", _max_unpool, args=("self", "indices"), grad_fn="MaxUnpool3DBackward0", saves=("indices",))


# ---- normalisation --------------------------------------------------------------------------
def _bshape(x, v):
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def _upcast(x):
    """torch's norm kernels compute float16/bfloat16 input in float32 (with float32 or
    same-dtype parameters); the caller casts the output back to the input's dtype."""
    return x.astype(jnp.float32) if x.dtype in (jnp.float16, jnp.bfloat16) else x


def _batch_norm(x, w, b, rm, rv, *, training, eps):
    """(output, batch mean, biased batch variance); in eval mode the statistics are rm/rv."""
    dt, x = x.dtype, _upcast(x)
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        mean = jnp.mean(x, axis=axes)
        var = jnp.mean(jnp.square(x - _bshape(x, mean)), axis=axes)
    else:
        mean, var = rm.astype(x.dtype), rv.astype(x.dtype)
    y = (x - _bshape(x, mean)) * _bshape(x, lax.rsqrt(var + eps))
    if w is not None:
        y = y * _bshape(x, w)
    if b is not None:
        y = y + _bshape(x, b)
    return y.astype(dt), mean, var


# the running statistics are saved but never differentiated: like torch's node, no edge for them
# (next_functions is (input, weight, bias); a legacy module backward hook sees three grads)
defop("native_batch_norm", _batch_norm, args=("input", "weight", "bias", "running_mean", "running_var"),
      grad_fn="NativeBatchNormBackward0", saves=("input", "weight", "running_mean", "running_var"),
      n_out=3, n_diff=1, no_edge=("running_mean", "running_var"), shape_edges={"input": "undefined"})


def _weight_norm_interface(v, g, *, dim):
    """torch's fused weight norm (its kernel for ``dim`` 0 or the last dim): ``(v * g / ||v||,
    ||v||)``, the 2-norm over every dim but ``dim`` kept in g's shape and computed in float32
    for float16/bfloat16 input (torch's accumulate type: the norms come back float32, the weight in v's
    dtype)."""
    acc = _upcast(v)
    axes = tuple(d for d in range(v.ndim) if d != dim)
    norm = jnp.sqrt(jnp.sum(jnp.square(acc), axis=axes, keepdims=True))
    w = acc * (_upcast(g) / norm)
    return w.astype(v.dtype), norm.reshape(g.shape)


# NOTE [fused weight norm]: the gradient is JAX's of the formula above, first and second order.
# torch 2.13's own double backward of this node (``_weight_norm_differentiable_backward``) does
# not match its composite ``v * (g / norm_except_dim(v))`` (gradgradcheck fails on CPU, float64):
# tracegrad keeps the true second derivative, so only the node's name is torch's
defop("_weight_norm_interface", _weight_norm_interface, args=("v", "g"), grad_fn="WeightNormInterfaceBackward0",
      saves=("v", "g"), n_out=2, n_diff=1)


def _layer_norm(x, w, b, *, n, eps):
    if x.dtype in (jnp.bfloat16, jnp.float16):
        return _layer_norm_low(x, w, b, n, eps)
    return _layer_norm_wide(x, w, b, n=n, eps=eps)


# NOTE [layer_norm on float16/bfloat16]: torch's CPU kernel normalises in float32 and rounds the
# output once (as ``_layer_norm_wide``), but it saves the row mean and rstd in the input's dtype
# and its backward reads those rounded values: ``dx = rstd * (g w - mean(g w) - xhat * mean(g w
# xhat))``, ``dw = sum(g xhat)``, ``db = sum(g)`` with ``xhat = (x - mean) * rstd`` of the rounded
# statistics, in float32, each gradient rounded once. The tangent rule below is that map (linear
# in the tangents, so it transposes to torch's backward); JAX's derivative of the float32
# formula used the exact statistics, and a bfloat16 GPT's gradients differed in a third of
# their values.
@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _layer_norm_low(x, w, b, n, eps):
    return _layer_norm_wide(x, w, b, n=n, eps=eps)


@_layer_norm_low.defjvp
def _layer_norm_low_jvp(n, eps, primals, tangents):
    x, w, b = primals
    dx, dw, db = tangents
    dt = x.dtype
    xf = _upcast(x)
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    rstd = lax.rsqrt(jnp.mean(jnp.square(xf - mean), axis=axes, keepdims=True) + eps)
    mean, rstd = (v.astype(dt).astype(jnp.float32) for v in (mean, rstd))
    xhat = (xf - mean) * rstd
    dxf = _upcast(dx)
    dxhat = rstd * (dxf - jnp.mean(dxf, axis=axes, keepdims=True)
                    - xhat * jnp.mean(dxf * xhat, axis=axes, keepdims=True))
    out = dxhat if w is None else dxhat * _upcast(w)
    if w is not None:
        out = out + _upcast(dw) * xhat
    if b is not None:
        out = out + _upcast(db)
    return _layer_norm_low(x, w, b, n, eps), out.astype(dt)


def _layer_norm_wide(x, w, b, *, n, eps):
    dt, x = x.dtype, _upcast(x)
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) * lax.rsqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y.astype(dt)


defop("native_layer_norm", _layer_norm, args=("input", "weight", "bias"), grad_fn="NativeLayerNormBackward0",
      saves=("input", "weight", "bias"))


def _group_norm(x, w, b, *, groups, eps):
    dt, x = x.dtype, _upcast(x)
    n, c = x.shape[:2]
    # the group size spelled out, not -1: a batch of no samples has no elements to infer it from
    xg = x.reshape((n, groups, (c // groups) * math.prod(x.shape[2:])))
    mean = jnp.mean(xg, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xg - mean), axis=-1, keepdims=True)
    y = ((xg - mean) * lax.rsqrt(var + eps)).reshape(x.shape)
    if w is not None:
        y = y * _bshape(x, w)
    if b is not None:
        y = y + _bshape(x, b)
    return y.astype(dt)


defop("native_group_norm", _group_norm, args=("input", "weight", "bias"), grad_fn="NativeGroupNormBackward0",
      saves=("input", "weight"))


# ---- activations --------------------------------------------------------------------------
# (gelu, leaky_relu, elu, softplus: ``opmath``, float32 math for 16-bit input as torch's kernels)
defop("gelu", opmath(lambda x, approximate: jax.nn.gelu(x, approximate=approximate == "tanh")),
      grad_fn="GeluBackward0", saves=("self",))
defop("leaky_relu", opmath(lambda x, negative_slope: jnp.where(x > 0, x, x * jnp.asarray(negative_slope, x.dtype))),
      grad_fn="LeakyReluBackward0", saves=("self",))
# glu: torch's GluBackward0 (a composite ended in MulBackward0); ``a * sigmoid(b)`` of the two
# halves along ``dim``, in float32 for 16-bit input, rounded once (torch's kernel and backward)
def _glu(x, *, dim):
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


defop("glu", opmath(_glu), grad_fn="GluBackward0", saves=("self",))
# rrelu: torch's RreluWithNoiseBackward0 in both modes. Training: ``x * noise`` with the noise
# (a slope drawn in [lower, upper] where x <= 0, else 1) made by the caller, so the gradient is
# the noise (the drawn slope at 0 too); eval: leaky_relu with slope (lower + upper) / 2.
def _rrelu_with_noise(x, noise, *, lower, upper, training):
    if training:
        return x * noise.astype(x.dtype)
    return jnp.where(x > 0, x, x * jnp.asarray((lower + upper) / 2, x.dtype))


defop("rrelu_with_noise", opmath(_rrelu_with_noise), args=("self", "noise"), grad_fn="RreluWithNoiseBackward0",
      saves=("self", "noise"), no_edge=("noise",))
# the negative branch reads x itself at 0 (not minimum(x, 0), whose gradient splits 1/2 there):
# torch's elu gradient at 0 is alpha; a NaN takes the positive branch (gradient 1), as torch's x <= 0 test
defop("elu", opmath(lambda x, alpha: jnp.where(x <= 0, jnp.asarray(alpha, x.dtype) * jnp.expm1(jnp.where(x <= 0, x, 0)), x)),
      grad_fn="EluBackward0", saves=("self",))


def _scaled_elu(x, alpha, scale, input_scale):
    """torch's elu kernel with its scales (selu: ``scale``; celu: ``input_scale = 1 / alpha``):
    ``x * scale`` above 0, ``expm1(x * input_scale) * (alpha * scale)`` at or below, each
    coefficient rounded to x's dtype once, as torch's kernel does."""
    neg = jnp.where(x <= 0, x, 0)
    if input_scale != 1:
        neg = neg * jnp.asarray(input_scale, x.dtype)
    return jnp.where(x <= 0, jnp.expm1(neg) * jnp.asarray(alpha * scale, x.dtype),
                     x * jnp.asarray(scale, x.dtype) if scale != 1 else x)


# selu is torch's elu node with scale; celu its own node (CeluBackward0)
defop("selu", _scaled_elu, grad_fn="EluBackward0", saves=("self",))
defop("celu", lambda x, alpha: _scaled_elu(x, alpha, 1.0, 1.0 / alpha), grad_fn="CeluBackward0", saves=("self",))
# torch's hardtanh gradient is 0 at the bounds (exclusive mask), unlike clamp's, and 1 at a NaN
# (torch zeroes x <= min or x >= max); bounds in x's dtype: integer inputs stay integers, as torch
defop("hardtanh", lambda x, min_val, max_val: jnp.where(
          ~((x <= min_val) | (x >= max_val)), x,
          jax.lax.stop_gradient(jnp.clip(x, jnp.asarray(min_val).astype(x.dtype), jnp.asarray(max_val).astype(x.dtype)))),
      grad_fn="HardtanhBackward0",
      saves=("self",))
# threshold/hardshrink/softshrink: torch's own nodes, whose backward reads ``self`` (so a first
# derivative taken with create_graph has an edge to the input, as torch's: NOTE [double-backward
# edges]); a composite of ``where`` had WhereBackward0 and no such edge.
def _threshold(x, threshold, value):
    # torch compares ``x <= threshold`` (a NaN keeps x): 16-bit inputs in float32 (0.1 stays
    # 0.1), others against the threshold in x's dtype (an integer input truncates -0.5 to 0)
    if x.dtype in (jnp.float16, jnp.bfloat16):
        low, th = x.astype(jnp.float32), jnp.float32(threshold)
    else:
        low, th = x, jnp.asarray(threshold).astype(x.dtype)
    return jnp.where(low <= th, jnp.asarray(value).astype(x.dtype), x)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _softshrink(x, lambd):
    # torch's kernel: x -/+ lambd outside the band, ``x * 0`` inside (-0.0 for a negative x),
    # computed in float32 for 16-bit inputs; a NaN is outside the band (kept)
    def f(v):
        return jnp.where(v > lambd, v - lambd, jnp.where(v < -lambd, v + lambd, v * 0))
    return opmath(f)(x)


@_softshrink.defjvp
def _softshrink_jvp(lambd, primals, tangents):
    # torch's backward passes the gradient outside the band [-lambd, lambd] tested in x's own
    # dtype (a bf16 -0.3008 is inside the band of 0.3, unlike the float32 forward's test)
    (x,), (t,) = primals, tangents
    return _softshrink(x, lambd), jnp.where((x >= -lambd) & (x <= lambd), jnp.zeros_like(t), t)


defop("threshold", _threshold, grad_fn="ThresholdBackward0", saves=("self",))
# the closed band [-lambd, lambd] goes to 0, everything else (NaN included) is kept
defop("hardshrink", lambda x, lambd: jnp.where((x >= -lambd) & (x <= lambd), jnp.zeros_like(x), x),
      grad_fn="HardshrinkBackward0", saves=("self",))
defop("softshrink", _softshrink, grad_fn="SoftshrinkBackward0", saves=("self",))


def _prelu(x, weight):
    # torch's _prelu_kernel: one slope, or one per channel (dim 1) broadcast over the rest; at
    # 0 the input's gradient is the slope
    w = weight.reshape(()) if weight.size == 1 else weight.reshape((-1,) + (1,) * (x.ndim - 2))
    return jnp.where(x > 0, x, w * x)


# prelu: torch's own node (a composite had WhereBackward0, and its first derivative with a
# constant weight no edge to the input)
defop("prelu", _prelu, args=("self", "weight"), grad_fn="PreluKernelBackward0", saves=("self", "weight"))
defop("softplus", opmath(lambda x, beta, threshold: jnp.where(x * beta > threshold, x, jnp.logaddexp(x * beta, 0) / beta)),
      grad_fn="SoftplusBackward0", saves=("self",))


# NOTE [log_sigmoid]
# torch's log_sigmoid is one op (node LogSigmoidBackward0; it was ``-softplus(-x)`` here, two
# nodes NegBackward0/SoftplusBackward0). Its CPU kernel computes ``min(x, 0) - log1p(z)`` with
# ``z = exp(-|x|)`` in float32 for float16/bfloat16 input, rounds the output once, and keeps
# ``z`` as a buffer in the input's dtype; the backward is
# ``(max_deriv - sign * z / (1 + z)) * grad`` (``max_deriv`` 1 and ``sign`` 1 where x < 0,
# else 0 and -1) with that rounded buffer, in float32, rounded once. The tangent rule is that
# map, linear in the tangent, so it transposes to torch's backward; JAX's derivative of the
# float32 formula used the exact ``z``: a bfloat16 step off in about one gradient in twelve.
@jax.custom_jvp
def _log_sigmoid(x):
    xf = _upcast(x)
    return (jnp.minimum(xf, 0) - jnp.log1p(jnp.exp(-jnp.abs(xf)))).astype(x.dtype)


@_log_sigmoid.defjvp
def _log_sigmoid_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    xf = _upcast(x)
    z = jnp.exp(-jnp.abs(xf))
    if x.dtype in (jnp.float16, jnp.bfloat16):
        z = z.astype(x.dtype).astype(jnp.float32)     # the buffer as torch keeps it
    neg = xf < 0
    coef = jnp.where(neg, 1, 0).astype(xf.dtype) - jnp.where(neg, 1, -1).astype(xf.dtype) * (z / (1 + z))
    return _log_sigmoid(x), (coef * _upcast(t)).astype(x.dtype)


defop("log_sigmoid", _log_sigmoid, grad_fn="LogSigmoidBackward0", saves=("self",))


# ---- embedding / dropout ----------------------------------------------------------------------
def _embedding(w, idx, *, padding_idx, scale_grad_by_freq=False):
    if padding_idx is not None:
        # the padding row receives no gradient (torch: EmbeddingBackward's padding_idx)
        w = w.at[padding_idx].set(lax.stop_gradient(w[padding_idx]))
    rows = jnp.take(w, idx, axis=0)
    return scale_rows_grad_by_freq(rows, idx, w.shape[0]) if scale_grad_by_freq else rows


def scale_rows_grad_by_freq(rows, idx, n):
    """``rows`` unchanged forward; in the backward each row's gradient is divided by how often its
    id occurs in ``idx`` (torch's ``scale_grad_by_freq``). The value is ``rows`` exactly: the scaled
    term is ``0 * scale``."""
    counts = jnp.zeros((n,), rows.dtype).at[idx.reshape(-1)].add(1)
    scale = (1 / counts[idx])[..., None]
    return lax.stop_gradient(rows) + (rows - lax.stop_gradient(rows)) * scale


defop("nn_embedding", _embedding, args=("weight", "indices"), grad_fn="EmbeddingBackward0", saves=("indices",))


# ---- losses ---------------------------------------------------------------------------------
def _reduce(loss, reduction):
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _nll_loss(x, target, w, *, reduction, ignore_index):
    """x: (N, C, *) or (C,) log-probabilities; target: (N, *) or () class indices. Unbatched
    with reduction 'none': a 0-d loss, as torch's."""
    if x.ndim == 1:
        loss = _nll_loss(x[None], target[None], w, reduction=reduction, ignore_index=ignore_index)
        return loss[0] if reduction == "none" else loss
    valid = target != ignore_index
    t = jnp.where(valid, target, 0)
    picked = jnp.take_along_axis(x, t[:, None], axis=1)[:, 0]
    wt = jnp.ones(x.shape[1], x.dtype) if w is None else w.astype(x.dtype)
    wi = jnp.where(valid, wt[t], 0).astype(x.dtype)
    # an ignored target contributes 0, not ``-x * 0``: its stand-in class 0 may hold -inf (a
    # masked logit, as SimCLR's -inf diagonal), which made the product and the whole mean nan
    loss = jnp.where(valid, -picked * wi, 0)
    if reduction == "mean":
        # every target ignored: torch's loss is 0/0 = nan but its gradients are 0; dividing by a
        # safe 1 keeps the gradient finite, the stop-gradient nan gives the value
        den = jnp.sum(wi)
        nan = lax.stop_gradient(jnp.where(den == 0, jnp.nan, 0).astype(x.dtype))
        return jnp.sum(loss) / jnp.where(den == 0, 1, den) + nan
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


# torch's nll_loss nodes have one edge (self): the target and the class weights are not
# differentiated (a legacy module backward hook sees one grad_input)
defop("nll_loss", _nll_loss, args=("self", "target", "weight"), grad_fn="NllLossBackward0",
      saves=("self", "target", "weight"), no_edge=("target", "weight"), shape_edges={"self": "zeros"})
defop("nll_loss2d", _nll_loss, args=("self", "target", "weight"), grad_fn="NllLoss2DBackward0",
      saves=("self", "target", "weight"), no_edge=("target", "weight"), shape_edges={"self": "zeros"})
# eager's range check of class-index targets (IndexError "Target 10 is out of bounds."): one
# program, not the five ops the comparisons would each dispatch
defop("class_indices_out_of_range",
      lambda t, n_classes, ignore_index: jnp.any(((t < 0) | (t >= n_classes)) & (t != ignore_index)),
      args=("target",))
defop("mse_loss", lambda x, t, reduction: _reduce(jnp.square(x - t), reduction), args=("self", "target"),
      grad_fn="MseLossBackward0", saves=("self", "target"))


def _smooth_l1(x, t, *, reduction, beta):
    d = jnp.abs(x - t)
    # beta 0 is l1: |d| as d * sign(d), whose gradient is torch's sign(d), 0 where x == t
    loss = (x - t) * jnp.sign(x - t) if beta == 0 else jnp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


defop("smooth_l1_loss", _smooth_l1, args=("self", "target"), grad_fn="SmoothL1LossBackward0",
      saves=("self", "target"))


def _huber(x, t, *, reduction, delta):
    d = jnp.abs(x - t)
    return _reduce(jnp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


defop("huber_loss", _huber, args=("self", "target"), grad_fn="HuberLossBackward0", saves=("self", "target"))
defop("soft_margin_loss", lambda x, t, reduction: _reduce(jnp.log1p(jnp.exp(-x * t)), reduction),
      args=("self", "target"), grad_fn="SoftMarginLossBackward0", saves=("self", "target"), no_edge=("target",))


# multi_margin_loss/multilabel_margin_loss: torch's own nodes (MultiMarginLossBackward0,
# MultilabelMarginLossBackward0) over the losses' kernels; a composite of tracegrad ops ended in
# MeanBackward0/DivBackward0/ViewBackward0. Inputs ``(N, C)``, ``(C,)`` or ``()``; the hinge has
# gradient 0 at 0 (torch's kernels use a strict ``> 0`` mask).
def _hinge(z):
    return jnp.where(z > 0, z, jnp.zeros_like(z))


def _multi_margin(x, target, w, *, p, margin, reduction):
    """Per sample ``sum over i != y of max(0, margin - x[y] + x[i])^p (* weight[y]) / C``."""
    xs = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    n, c = xs.shape
    t = target.reshape(-1).astype(jnp.int32)
    onehot = jax.nn.one_hot(t, c, dtype=xs.dtype)
    xy = jnp.sum(xs * onehot, 1, keepdims=True)
    z = _hinge(margin - xy + xs)
    if p == 2:
        z = z * z
    if w is not None:
        z = z * w.astype(xs.dtype)[t][:, None]
    loss = jnp.sum(z * (1 - onehot), 1) / c
    if x.ndim < 2 and reduction == "none":
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction)


def _multilabel_margin(x, target, *, reduction):
    """Per sample ``sum over targets j (before the first -1) and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C``; an unbatched input gives a 0-d loss."""
    xs = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    n, c = xs.shape
    t = target.reshape(n, c).astype(jnp.int32)
    valid = jnp.cumprod((t >= 0).astype(jnp.int32), 1).astype(xs.dtype)          # (N, S)
    oh = jax.nn.one_hot(jnp.maximum(t, 0), c, dtype=xs.dtype) * valid[:, :, None]  # (N, S, C)
    is_target = jnp.minimum(jnp.sum(oh, 1), 1)                                     # (N, C)
    xj = jnp.sum(oh * xs[:, None, :], 2)                                           # (N, S)
    z = _hinge(1 - xj[:, :, None] + xs[:, None, :])
    loss = jnp.sum(z * valid[:, :, None] * (1 - is_target)[:, None, :], (1, 2)) / c
    if x.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


defop("multi_margin_loss", _multi_margin, args=("self", "target", "weight"), grad_fn="MultiMarginLossBackward0",
      saves=("self", "target", "weight"), no_edge=("target", "weight"))
defop("multilabel_margin_loss", _multilabel_margin, args=("self", "target"),
      grad_fn="MultilabelMarginLossBackward0", saves=("self", "target"), no_edge=("target",))


def _logsumexp3(a, b, c):
    """``log(exp(a) + exp(b) + exp(c))`` that is -inf (with zero, not NaN, gradients) when all
    three are -inf: CTC's unreachable states."""
    m = jnp.maximum(jnp.maximum(a, b), c)
    m = lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0))
    s = jnp.exp(a - m) + jnp.exp(b - m) + jnp.exp(c - m)
    return jnp.where(s > 0, jnp.log(jnp.where(s > 0, s, 1)) + m, -jnp.inf)


@jax.custom_jvp
def _nan_grad_where(x, bad):
    """``x`` itself; its derivative NaN where ``bad`` (a bool mask of ``x``'s shape), as is."""
    return x


@_nan_grad_where.defjvp
def _nan_grad_where_jvp(primals, tangents):
    x, bad = primals
    return x, tangents[0] * jnp.where(bad, jnp.nan, 1).astype(tangents[0].dtype)


def _ctc_loss(lp, targets, input_lengths, target_lengths, *, blank, zero_infinity):
    """Per-sample CTC negative log-likelihood ``(N,)``: ``lp`` ``(T, N, C)`` log-probabilities,
    ``targets`` ``(N, S)`` padded labels, lengths ``(N,)``. The forward (alpha) recursion over the
    extended label sequence (blanks between and around the labels) is a ``lax.scan`` over time;
    a sample's state stops changing after its input length. As torch's kernel, the gradient with
    respect to ``lp`` is ``exp(lp) - posterior`` for ``t < input_length`` (the gradient for the
    logits when ``lp`` is ``log_softmax(logits)``): a zero-valued ``exp(lp) - stop_gradient``
    term adds the ``exp(lp)`` part to the true gradient ``-posterior``."""
    t_max, n, _ = lp.shape
    s = targets.shape[1]
    ext = jnp.full((n, 2 * s + 1), blank, dtype=targets.dtype).at[:, 1::2].set(targets)
    ext_lp = jnp.take_along_axis(lp, jnp.broadcast_to(ext[None], (t_max,) + ext.shape).astype(jnp.int32), axis=2)
    width = ext.shape[1]
    # the shifted copies are cut back to ``width``: with empty targets (S = 0, width 1) ``x[:, :-2]``
    # is empty and the two-column pad alone would be wider than the state (torch accepts S = 0)
    prev2 = jnp.concatenate([jnp.full((n, 2), blank, ext.dtype), ext[:, :-2]], axis=1)[:, :width]
    skip = (ext != blank) & (ext != prev2) & (jnp.arange(ext.shape[1]) >= 2)[None]
    neg = jnp.asarray(-jnp.inf, lp.dtype)
    pos = jnp.arange(ext.shape[1])[None]
    alpha0 = jnp.where(pos < 2, ext_lp[0], neg)
    alpha0 = jnp.where((pos == 1) & (target_lengths[:, None] == 0), neg, alpha0)

    def step(alpha, xs):
        t, lpt = xs
        a1 = jnp.concatenate([jnp.full((n, 1), neg), alpha[:, :-1]], axis=1)
        a2 = jnp.concatenate([jnp.full((n, 2), neg), alpha[:, :-2]], axis=1)[:, :width]
        new = _logsumexp3(alpha, a1, jnp.where(skip, a2, neg)) + lpt
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    alpha, _ = lax.scan(step, alpha0, (jnp.arange(1, t_max), ext_lp[1:]))
    last = (2 * target_lengths).astype(jnp.int32)
    a_last = jnp.take_along_axis(alpha, last[:, None], axis=1)[:, 0]
    a_prev = jnp.take_along_axis(alpha, jnp.maximum(last - 1, 0)[:, None], axis=1)[:, 0]
    a_prev = jnp.where(target_lengths > 0, a_prev, neg)
    nll = -_logsumexp3(a_last, a_prev, jnp.full_like(a_last, neg))
    # an empty input (input_length 0) aligns only with an empty target: the recursion above
    # starts from frame 0 regardless, so set torch's values (0, else inf; zero gradient) here
    nll = jnp.where(input_lengths == 0, jnp.where(target_lengths == 0, 0.0, jnp.inf).astype(nll.dtype), nll)
    live = (jnp.arange(t_max)[:, None] < input_lengths[None])[..., None]
    # a select, not a product with the mask: frames past a sample's input length get a zero
    # gradient even when the sample's incoming gradient is NaN (below)
    e = jnp.where(live, jnp.exp(lp), 0)
    nll = nll + jnp.sum(e - lax.stop_gradient(e), axis=(0, 2))
    if zero_infinity:
        return jnp.where(jnp.isinf(nll), jnp.zeros_like(nll), nll)
    # an infeasible sample (loss inf): torch's kernel computes its posterior as
    # exp(-inf + inf) and so gives NaN gradients in the sample's frames before its input length
    # (zero after); the recursion here would give zeros, a silently finite step
    return _nan_grad_where(nll, jnp.isinf(lax.stop_gradient(nll)) & (input_lengths > 0))


# targets and lengths are integer tensors with no derivative: torch's node has one edge (log_probs)
defop("ctc_loss", _ctc_loss, args=("log_probs", "targets", "input_lengths", "target_lengths"),
      grad_fn="CtcLossBackward0", saves=("log_probs", "targets", "input_lengths", "target_lengths"),
      no_edge=("targets", "input_lengths", "target_lengths"))


@jax.custom_jvp
def _bce_elem(x, t):
    return -(t * jnp.maximum(jnp.log(x), -100.0) + (1 - t) * jnp.maximum(jnp.log1p(-x), -100.0))


@_bce_elem.defjvp
def _bce_elem_jvp(primals, tangents):
    # torch's derivative: (x - t) / max(x (1 - x), 1e-12), finite at x == 0 or 1 where the
    # clamped log's own derivative is 0 * inf
    x, t = primals
    dx, dt = tangents
    gx = (x - t) / jnp.maximum((1 - x) * x, 1e-12)
    gt = -jnp.log(x / (1 - x))   # the target's: -logit(x), unclamped as torch (inf at x == 0, -inf at 1)
    return _bce_elem(x, t), gx * dx + gt * dt


def _bce(x, t, w, *, reduction):
    loss = _bce_elem(x, t)
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction)


# edges for self and target only, as torch's nodes: the weights are not differentiated
defop("binary_cross_entropy", _bce, args=("self", "target", "weight"), grad_fn="BinaryCrossEntropyBackward0",
      saves=("self", "target", "weight"), no_edge=("weight",))


def _bce_logits(x, t, w, pw, *, reduction):
    log_sig = jax.nn.log_sigmoid(x)
    log_one_minus = jax.nn.log_sigmoid(-x)
    if pw is not None:
        loss = -(pw * t * log_sig + (1 - t) * log_one_minus)
    else:
        loss = -(t * log_sig + (1 - t) * log_one_minus)
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction)


defop("binary_cross_entropy_with_logits", _bce_logits, args=("self", "target", "weight", "pos_weight"),
      grad_fn="BinaryCrossEntropyWithLogitsBackward0", saves=("self", "target", "weight", "pos_weight"),
      no_edge=("weight", "pos_weight"))


# ---- module backward hooks ------------------------------------------------------------------
# torch wraps a module's inputs and outputs in ``BackwardHookFunction`` (an identity Function);
# full backward hooks hang on that node. The identity takes any number of tensors.
defop("backward_hook_function", lambda *xs: tuple(xs), args=tuple(f"in{i}" for i in range(256)),
      grad_fn="BackwardHookFunctionBackward", n_out=-1)

# torch's C++ composites (cross_entropy) multiply/divide by a C++ Scalar: MulBackward1 / DivBackward1
defop("mul_scalar", lambda x, other: x * jnp.asarray(other, x.dtype), args=("self", "other"), grad_fn="MulBackward1")
# a 16-bit ``x`` divides in float32 and rounds once (``_div``'s NOTE: XLA's float16 reciprocal)
defop("div_scalar", lambda x, other: (x.astype(jnp.float32) / jnp.float32(other)).astype(x.dtype)
      if x.dtype in (jnp.float16, jnp.bfloat16) else x / jnp.asarray(other, x.dtype),
      args=("self", "other"), grad_fn="DivBackward1")

# reflect / replicate padding over the last nd dims: one op per torch node name
for _nd in (1, 2, 3):
    defop(f"reflection_pad{_nd}d", lambda x, pad_width: jnp.pad(x, pad_width, mode="reflect"),
          grad_fn=f"ReflectionPad{_nd}DBackward0", saves=("self",), shape_edges={"self": "zeros"})
    defop(f"replication_pad{_nd}d", lambda x, pad_width: jnp.pad(x, pad_width, mode="edge"),
          grad_fn=f"ReplicationPad{_nd}DBackward0", saves=("self",), shape_edges={"self": "zeros"})


def _pdist(x, *, p):
    """torch's pdist: the p-norm distance of rows ``i < j`` in row-major upper-triangle order,
    recorded as one ``PdistBackward0`` node (saving self and the result, as torch)."""
    from .reduction import _norm
    i, j = np.triu_indices(x.shape[0], 1)
    diff = x[i] - x[j]
    if p != float("inf"):
        return _norm(diff, p, 1, False)
    # torch's inf-distance gradient is sign(diff) at every coordinate that reaches the max
    # (ties each get the whole gradient; a max's derivative would split it): max + sum of
    # (a - max) over the tied coordinates has that derivative and the max's value exactly
    a = diff * jnp.sign(diff)
    m = lax.stop_gradient(jnp.max(a, axis=1, keepdims=True, initial=0))
    return m[:, 0] + jnp.sum(jnp.where(a == m, a - m, 0), axis=1)


defop("pdist", _pdist, grad_fn="PdistBackward0", saves=("self", "result"))
