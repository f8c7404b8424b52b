"""The first calls of a program that only moves data run on the host (NOTE [host first calls])."""
from __future__ import annotations

import math

import jax
import numpy as np

from .._x64 import x64_enter, x64_exit
from .errors import broadcast_shapes

# NOTE [host first calls]
# Eager mode jits one small program per (op, static arguments) and XLA compiles it once per
# input signature: ~12 ms of JAX lowering and ~21 ms of XLA compiling on XLA:CPU, a thousand
# times a call. A notebook cell, a model's first steps or a test meets most signatures a few
# times, and many of those programs only move data: reshape, transpose, broadcast, slices,
# flips, concatenation, padding, copies, integer casts and the integer index arithmetic of
# view chains (a third of the programs a view-heavy test file compiled, two thirds of a
# transformer layer's first step: benchmarks/first_calls.py).
# Such a program computes no floating-point arithmetic, so numpy gives bit for bit XLA's
# result (XLA:CPU flushes denormals only in arithmetic and float conversions, which stay
# XLA's). Its first ``HOST_CALLS`` calls per signature therefore evaluate the traced jaxpr
# with numpy (the trace is the one a compile would make: JAX keeps it) and put the result on
# the device through the C++ call ``device_put`` ends in; the next call compiles, so a
# training loop pays ~20 us a call for its first steps, then runs compiled programs. A
# program that computes is found on its first call and goes straight to jit from then on;
# a weakly typed result, a tracer, several devices or a non-CPU device (numpy
# would mean a round trip through the host) is jitted as before.
HOST_CALLS = 16
# larger results are moved faster by XLA than numpy moves them (a 4096x4096 transpose: more
# than a compile's time per call), so a program making them compiles on its first call
_HOST_BYTES = 1 << 20
_SIGS_MAX = 256      # signatures remembered per program (ever-new shapes start afresh)
_COMPILE = object()  # a signature that is jitted


class _NotHere(Exception):
    """A parameter or dtype the host evaluation does not cover: jit instead."""


def _ints(*xs):
    for x in xs:
        if x.dtype.kind not in "biu":
            raise _NotHere
    return xs


def _int_op(f):
    return lambda *xs, **_: f(*_ints(*xs))


def _c_division(a, b):
    """XLA's integer division and remainder (C's: truncated), where numpy's floor; a zero
    divisor or MIN // -1 (XLA defines both) is left to XLA."""
    _ints(a, b)
    if np.any(b == 0) or (a.dtype.kind == "i" and np.any((b == -1) & (a == np.iinfo(a.dtype).min))):
        raise _NotHere
    q, r = np.floor_divide(a, b), np.remainder(a, b)
    fix = (r != 0) & ((a < 0) != (b < 0))
    return np.where(fix, q + 1, q).astype(q.dtype), np.where(fix, r - b, r).astype(r.dtype)


def _reshape(x, *, new_sizes, dimensions, **_):
    if dimensions is not None:
        raise _NotHere
    return np.reshape(x, new_sizes)


def _broadcast_in_dim(x, *dyn, shape, broadcast_dimensions, **_):
    if dyn:
        raise _NotHere
    mid = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        mid[d] = x.shape[i]
    return np.broadcast_to(np.reshape(x, mid), shape)


_EXACT_FROM_INT = {np.dtype(d) for d in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                          np.uint16, np.uint32, np.uint64, np.float32, np.float64)}


def _convert(x, *, new_dtype, **_):
    new = np.dtype(new_dtype)
    if x.dtype != new and (x.dtype.kind not in "biu" or new not in _EXACT_FROM_INT):
        # XLA:CPU flushes denormals to zero when it converts between float types (numpy
        # keeps them), and float to int conversion of NaN or out-of-range values is the
        # platform's; integer to integer wraps alike and integer to f32/f64 rounds alike
        raise _NotHere
    return x.astype(new)


def _slice(x, *, start_indices, limit_indices, strides, **_):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, e, k) for s, e, k in zip(start_indices, limit_indices, strides))]


def _starts(x, sizes, starts):
    # XLA clamps each start so that the window lies inside the operand
    return tuple(slice(s, s + z) for s, z in
                 ((min(max(int(s), 0), d - z), z) for s, d, z in zip(starts, x.shape, sizes)))


def _dynamic_slice(x, *starts, slice_sizes, **_):
    return x[_starts(x, slice_sizes, starts)]


def _dynamic_update_slice(x, update, *starts, **_):
    out = np.array(x)
    out[_starts(x, update.shape, starts)] = update
    return out


def _pad(x, value, *, padding_config, **_):
    for axis, (lo, hi, interior) in enumerate(padding_config):
        n = x.shape[axis]
        if interior and n > 1:
            shape = list(x.shape)
            shape[axis] = n + (n - 1) * interior
            spread = np.full(shape, value, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(None, None, interior + 1)
            spread[tuple(idx)] = x
            x = spread
        n = x.shape[axis]
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(max(-lo, 0), n - max(-hi, 0))
        x = x[tuple(idx)]
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=value)
    return x


def _iota(*, dtype, shape, dimension, **_):
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise _NotHere
    mid = [1] * len(shape)
    mid[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(mid), shape)


def _select_n(which, *cases, **_):
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]
    return np.choose(which, cases)


def _complex(re, im, **_):
    out = np.empty(broadcast_shapes(re.shape, im.shape), np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def _bitcast(x, *, new_dtype, **_):
    new = np.dtype(new_dtype)
    x = np.ascontiguousarray(x)
    if new.itemsize == x.dtype.itemsize:
        return x.view(new)
    if new.itemsize < x.dtype.itemsize:     # XLA adds a minor dimension
        return x[..., None].view(new)
    return x.view(new)[..., 0]              # XLA removes the minor dimension


def _window_starts(idx, nd, index_map, operand_batching, indices_batching, batch):
    """(windows, nd) start of each index vector's window in the operand."""
    nb = idx.shape[0]
    starts = np.zeros((nb, nd), np.int64)
    for k, d in enumerate(index_map):
        starts[:, d] = idx[:, k]
    if operand_batching:
        grid = np.indices(batch).reshape(len(batch), nb)
        for od, idim in zip(operand_batching, indices_batching):
            starts[:, od] = grid[idim]
    return starts


def _window_index(starts, sizes):
    """numpy advanced index of every window's elements: shape (windows, *sizes)."""
    nb, nd = starts.shape
    return tuple(starts[:, d].reshape((nb,) + (1,) * nd)
                 + np.arange(sizes[d]).reshape((1,) * (d + 1) + (sizes[d],) + (1,) * (nd - d - 1))
                 for d in range(nd))


def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value, **_):
    """XLA's gather: a window of ``slice_sizes`` per index vector (the last axis of
    ``indices``), its start clamped into the operand (or, for FILL_OR_DROP, the window
    filled when it would not fit)."""
    dn, nd = dimension_numbers, operand.ndim
    batch = indices.shape[:-1]
    idx = np.asarray(indices, np.int64).reshape(-1, indices.shape[-1])
    starts = _window_starts(idx, nd, dn.start_index_map, dn.operand_batching_dims,
                            dn.start_indices_batching_dims, batch)
    upper = np.array(operand.shape, np.int64) - np.array(slice_sizes, np.int64)
    valid = np.all((starts >= 0) & (starts <= upper), axis=1)
    starts = np.clip(starts, 0, upper)
    out = operand[_window_index(starts, slice_sizes)] if nd else np.broadcast_to(operand, (len(idx),))
    if mode == jax.lax.GatherScatterMode.FILL_OR_DROP:
        out = np.array(out)
        out[~valid] = np.asarray(fill_value).astype(operand.dtype)
    drop = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = tuple(slice_sizes[d] for d in range(nd) if d not in drop)
    out = out.reshape(batch + kept)
    return np.moveaxis(out, tuple(range(len(batch), len(batch) + len(kept))), tuple(dn.offset_dims))


def _scatter(operand, indices, updates, *, dimension_numbers, mode, update_jaxpr=None, **_):
    """XLA's scatter that replaces: each index vector's window of ``updates`` written into
    the operand; a window that does not fit is clamped (CLIP) or skipped. Windows that
    overlap are left to XLA (which of them wins is XLA's choice)."""
    dn, nd = dimension_numbers, operand.ndim
    batch = indices.shape[:-1]
    idx = np.asarray(indices, np.int64).reshape(-1, indices.shape[-1])
    starts = _window_starts(idx, nd, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                            dn.scatter_indices_batching_dims, batch)
    window = iter(updates.shape[d] for d in dn.update_window_dims)
    single = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    sizes = tuple(1 if d in single else next(window) for d in range(nd))
    upper = np.array(operand.shape, np.int64) - np.array(sizes, np.int64)
    if mode == jax.lax.GatherScatterMode.CLIP:
        starts = np.clip(starts, 0, upper)
    valid = np.all((starts >= 0) & (starts <= upper), axis=1)
    batch_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    upd = np.transpose(updates, batch_axes + list(dn.update_window_dims)).reshape((len(idx),) + sizes)
    out = np.array(operand)
    if nd == 0:
        raise _NotHere
    ix = tuple(i[valid] for i in np.broadcast_arrays(*_window_index(starts, sizes)))
    flat = np.ravel_multi_index(ix, operand.shape).ravel() if ix[0].size else np.zeros(0, np.int64)
    if len(np.unique(flat)) != flat.size:
        raise _NotHere
    out[ix] = upd[valid]
    return out


def _call(*args, jaxpr, **_):
    return evaluate(jaxpr, args)


_RULES = {
    "reshape": _reshape,
    "broadcast_in_dim": _broadcast_in_dim,
    "transpose": lambda x, *, permutation, **_: np.transpose(x, permutation),
    "squeeze": lambda x, *, dimensions, **_: np.squeeze(x, axis=tuple(dimensions)),
    "rev": lambda x, *, dimensions, **_: np.flip(x, axis=tuple(dimensions)) if dimensions else x,
    "slice": _slice,
    "concatenate": lambda *xs, dimension, **_: np.concatenate(xs, axis=dimension),
    "pad": _pad,
    "copy": lambda x, **_: x,
    "copy_p": lambda x, **_: x,
    "convert_element_type": _convert,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "iota": _iota,
    "select_n": _select_n,
    "gather": _gather,
    "scatter": _scatter,
    "real": lambda x, **_: np.real(x),
    "imag": lambda x, **_: np.imag(x),
    "complex": _complex,
    "bitcast_convert_type": _bitcast,
    "jit": _call,
    "pjit": _call,
    # integer index arithmetic (view chains, negative-index wrapping); wraps like XLA's
    "add": _int_op(np.add), "sub": _int_op(np.subtract), "mul": _int_op(np.multiply),
    "neg": _int_op(np.negative), "max": _int_op(np.maximum), "min": _int_op(np.minimum),
    "lt": _int_op(np.less), "le": _int_op(np.less_equal), "gt": _int_op(np.greater),
    "ge": _int_op(np.greater_equal), "eq": _int_op(np.equal), "ne": _int_op(np.not_equal),
    "and": _int_op(np.bitwise_and), "or": _int_op(np.bitwise_or),
    "xor": _int_op(np.bitwise_xor), "not": _int_op(np.invert),
    "div": lambda a, b, **_: _c_division(a, b)[0], "rem": lambda a, b, **_: _c_division(a, b)[1],
}


_INT_ONLY = {"add", "sub", "mul", "neg", "max", "min", "lt", "le", "gt", "ge", "eq", "ne", "and",
             "or", "xor", "not", "div", "rem"}


def _movement_only(jaxpr) -> bool:
    """Whether every equation of ``jaxpr`` has a rule here for its operands' dtypes."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name not in _RULES:
            return False
        if name in _INT_ONLY and any(np.dtype(v.aval.dtype).kind not in "biu" for v in eqn.invars):
            return False
        if name == "convert_element_type":
            old, new = np.dtype(eqn.invars[0].aval.dtype), np.dtype(eqn.params["new_dtype"])
            if old != new and (old.kind not in "biu" or new not in _EXACT_FROM_INT):
                return False
        inner = eqn.params.get("jaxpr")
        if inner is not None and not _movement_only(inner.jaxpr):
            return False
    return True


def evaluate(closed, args) -> list:
    """The outputs of ``closed`` (a ClosedJaxpr of movement primitives) on numpy ``args``.
    Raises ``_NotHere`` for a parameter or dtype it does not cover."""
    jaxpr = closed.jaxpr
    env = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        env[v] = np.asarray(c)
    for v, a in zip(jaxpr.invars, args):
        env[v] = np.asarray(a, v.aval.dtype)

    def read(v):
        if hasattr(v, "val"):      # a Literal
            return np.asarray(v.val, v.aval.dtype)
        return env[v]
    for eqn in jaxpr.eqns:
        out = _RULES[eqn.primitive.name](*map(read, eqn.invars), **eqn.params)
        outs = out if eqn.primitive.multiple_results else (out,)
        for v, o in zip(eqn.outvars, outs):
            o = np.asarray(o)
            if o.shape != v.aval.shape or o.dtype != v.aval.dtype:
                raise _NotHere
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


_CPU: list = []      # [(the one CPU device, put)], or [None] where the host path does not apply


def _host_device():
    if not _CPU:
        devices = jax.devices()
        _CPU.append((devices[0], _putter(devices[0]))
                    if len(devices) == 1 and devices[0].platform == "cpu" else None)
    return _CPU[0]


def _putter(device):
    """``put(ndarray, aval) -> jax.Array`` on ``device``, uncommitted as a jit's output of
    uncommitted inputs. ``jax.device_put`` spends ~100 us in Python per array (measured here
    against ~7 us for the C++ call it ends in, and ~15 us for a jitted call), which would make
    the host path cost as much as a short run of compiled calls; the C++ call is private, so
    a JAX that lacks it gets ``device_put``."""
    from jax.sharding import SingleDeviceSharding
    sharding = SingleDeviceSharding(device)
    try:
        from jax._src.lib import xla_client as xc
        fast = xc.batched_device_put

        def put(o, aval):
            return fast(aval, sharding, [o], [device], False, enable_x64=True)
        probe = np.arange(3, dtype=np.int64)
        prev = x64_enter()
        try:
            if not np.array_equal(np.asarray(put(probe, jax.core.ShapedArray((3,), probe.dtype))), probe):
                raise TypeError
        finally:
            x64_exit(prev)
        return put
    except (ImportError, AttributeError, TypeError, ValueError, RuntimeError):  # another JAX: the public call
        return lambda o, aval: jax.device_put(o)


# concrete arrays (never a tracer). Named, not made: making one at import would start JAX's
# backends, which must wait for the user (jax.distributed.initialize, platform settings). The
# class is private; a JAX without it sends every call to jit.
try:
    from jax._src.array import ArrayImpl as _ArrayImpl
except ImportError:        # pragma: no cover
    _ArrayImpl = None


def _leaf_sig(a):
    """The part of a jit signature an argument other than a concrete array gives."""
    t = type(a)
    if t in (int, float, bool, complex):
        return t
    if t is tuple or t is list:
        return (t, tuple([x.aval if type(x) is _ArrayImpl else _leaf_sig(x) for x in a]))
    if isinstance(a, (np.ndarray, np.generic)):
        return (a.shape, a.dtype)
    raise _NotHere           # a tracer, None, a dict...: the jit decides


def _past_numpy_dims(jaxpr) -> bool:
    """Whether a value of ``jaxpr`` has more dimensions than a numpy array holds (64): torch
    tensors may (torch's tests reduce a 65-d tensor), numpy cannot evaluate such a program."""
    vs = list(jaxpr.invars) + list(jaxpr.outvars) + [v for e in jaxpr.eqns for v in e.outvars]
    return any(len(getattr(getattr(v, "aval", None), "shape", ())) > 64 for v in vs)


class _Plan:
    __slots__ = ("calls", "jaxpr", "out_tree")

    def __init__(self, jaxpr, out_tree):
        self.jaxpr, self.out_tree, self.calls = jaxpr, out_tree, 0


class FirstCallsOnHost:
    """A ``jax.jit`` function whose first ``HOST_CALLS`` calls per input signature run on the
    host when the program only moves data (NOTE [host first calls]); call it as the jit."""

    __slots__ = ("_direct", "_sigs", "jitted", "_retarget")

    def __init__(self, jitted, retarget=None):
        """``retarget(jaxpr)``: another jit to use for every call, chosen from the first traced
        program (NOTE [reductions compile with the fusion emitters] in xla_options.py), or None."""
        self.jitted = jitted
        self._retarget = retarget
        self._sigs: dict = {}
        self._direct = False

    def __call__(self, *args):
        if self._direct:
            return self.jitted(*args)
        try:
            sig = tuple([a.aval if type(a) is _ArrayImpl else _leaf_sig(a) for a in args])
        except _NotHere:             # a tracer (someone's trace) or an unknown leaf
            if self._retarget is not None:
                self._pick(args)
            return self.jitted(*args)
        plan = self._sigs.get(sig)
        if plan is None:
            plan = self._plan(args)
            if plan is None:         # arithmetic: every signature compiles
                self._direct = True
                return self.jitted(*args)
            if len(self._sigs) >= _SIGS_MAX:
                self._sigs.clear()
            self._sigs[sig] = plan
        if plan is _COMPILE:
            return self.jitted(*args)
        plan.calls += 1
        if plan.calls > HOST_CALLS:     # hot: compiled from now on
            self._sigs[sig] = _COMPILE
            return self.jitted(*args)
        try:
            return self._on_host(plan, args)
        except _NotHere:
            self._sigs[sig] = _COMPILE
            return self.jitted(*args)

    def __getattr__(self, name):       # .lower, .trace, .eval_shape, _cache_size ...
        return getattr(self.jitted, name)

    def _pick(self, args, jaxpr=None):
        """Ask ``retarget`` once, on the first program traced (``jaxpr``, or traced here; an
        argument a trace refuses -- a tracer, someone's trace -- leaves the choice for later)."""
        if jaxpr is None:
            if any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(args)):
                return
            try:
                jaxpr = self.jitted.trace(*args).jaxpr.jaxpr
            except Exception:      # the call itself raises it again, as JAX's error
                return
        # one read: another thread may have made the choice meanwhile (backward in threads)
        retarget = self._retarget
        if retarget is None:
            return
        other, self._retarget = retarget(jaxpr), None
        if other is not None:
            self.jitted = other

    def _plan(self, args):
        """The signature's ``_Plan``, ``_COMPILE``, or None for a program that computes."""
        host = _host_device()
        if host is None:
            return None
        device = host[0]
        leaves = jax.tree_util.tree_leaves(args)
        for a in leaves:
            if isinstance(a, jax.Array) and (len(a.devices()) != 1 or a.devices() != {device}):
                return _COMPILE
        traced = self.jitted.trace(*args)    # in the caller's x64 mode, as the jit call would
        closed = traced.jaxpr
        if self._retarget is not None:
            self._pick(args, closed.jaxpr)
        if not _movement_only(closed.jaxpr):
            return None
        outs = [v.aval for v in closed.jaxpr.outvars]
        if _past_numpy_dims(closed.jaxpr):
            return _COMPILE
        if (len(closed.jaxpr.invars) != len(leaves) or any(a.weak_type for a in outs)
                or sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in outs) > _HOST_BYTES):
            return _COMPILE
        return _Plan(closed, traced.out_tree)

    def _on_host(self, plan, args):
        leaves = jax.tree_util.tree_leaves(args)
        with np.errstate(all="ignore"):
            outs = evaluate(plan.jaxpr, leaves)
        put = _CPU[0][1]
        prev = x64_enter()
        try:
            arrays = [put(np.array(o, order="C"), v.aval) for o, v in zip(outs, plan.jaxpr.jaxpr.outvars)]
        finally:
            x64_exit(prev)
        return jax.tree_util.tree_unflatten(plan.out_tree, arrays)

