"""Shape and movement ops. Those marked ``view=True`` alias their input's storage (torch
views): their single-input ``fn`` is also what a view chain replays (``_tensor/tensor.py``; ``chain_split`` below)."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import _state
from .._x64 import x64_enter, x64_exit
from .registry import CONST, OPS, BACKWARD_NAMES, Op, _make_backward, defop
from .xla_options import eager_jit

# NOTE [dynamic positions]
# Eager ops are jitted per static arguments (registry.Op.forward). For the view ops that pick
# a position (select's index, a slice's start, the ints and slice starts of ``x[key]``), a
# static position would mean one XLA compile (~20-80 ms) per new position: ``for i in
# range(n): x[i]`` compiles n programs. A ``DynViewOp`` keeps torch's static arguments (so
# ``grad_fn._saved_index``, the node's static and the view chain are unchanged) but splits them
# into a *structure* (dims, lengths, steps: what fixes the output shape) and *positions*,
# which its jitted forward and backward take as int64 operands (``lax.dynamic_slice``); one
# program then serves every position of a (structure, shape, dtype). Positions must already be
# in range and non-negative (the methods check and wrap them, as torch does): the dynamic
# slice would clamp an out-of-range start silently. Inside a trace (``tracegrad.compile``) the
# plain ``fn`` runs with the positions as constants. The view chain (``_tensor/tensor.py``) uses the
# same split to read and write views. Double backward (``create_graph=True``) through one of
# these backward ops still compiles per position.
_BOUND_LIMIT = 4096     # per-position closures kept per op; past this the dict starts afresh
_POS: dict = _state.register_cache("_ops.shape._POS", {})


def pos_arg(v: int):
    """Position ``v`` as a cached int64 device scalar (an operand of a jitted call)."""
    a = _POS.get(v)
    if a is None:
        if len(_POS) > _BOUND_LIMIT:
            _POS.clear()
        prev = x64_enter()
        try:
            # concrete even when first asked for inside a trace: the cache outlives it (a
            # traced scalar kept here leaked into later programs as a dead tracer)
            with jax.ensure_compile_time_eval():
                a = _POS[v] = jnp.asarray(np.int64(v))
        finally:
            x64_exit(prev)
    return a


def _index_dtype():
    return jax.dtypes.canonicalize_dtype(np.int64)


class _BoundOp(Op):
    """One position's backward: ``fn`` and the jitted call both close over the positions and
    call the program shared by every position of the structure."""

    __slots__ = ("_call",)

    def forward(self, static):
        return self._call


class _Programs(dict):
    """``Op._fwd`` of a ``DynViewOp``: ``get(static)`` gives the structure's jitted program with
    the positions bound (built on a miss), so ``Op.forward`` stays the one entry point."""

    __slots__ = ("op",)

    def get(self, static, default=None):
        f = dict.get(self, static)
        return f if f is not None else self.op._program(static)


class DynViewOp(Op):
    """A view op whose positions are runtime operands (NOTE [dynamic positions]).

    ``split(static) -> (structure, positions)``: a hashable structure (static keyword
    arguments of ``dfn``) and a tuple of ints; ``()`` positions means "all static" (then the
    op behaves as a plain ``Op``). ``dfn(x, *positions, **structure)`` computes what
    ``fn(x, **static)`` computes."""

    __slots__ = ("split", "dfn", "_dfwd", "_dbwd", "_bbwd")

    def __init__(self, *, name, fn, dfn, split, grad_fn, args=("self",), doc=None):
        super().__init__(name=name, fn=fn, args=args, grad_fn=grad_fn, view=True, doc=doc)
        self.split, self.dfn = split, dfn
        self._fwd = _Programs()
        self._fwd.op = self
        self._dfwd, self._dbwd, self._bbwd = {}, {}, {}

    def _jit_caches(self) -> tuple:
        return (self._fwd, self._bwd, self._dfwd, self._dbwd, self._bbwd)

    def _program(self, static):
        struct, dyn = self.split(static)
        if not dyn:    # kept apart from the bounded dict: never rebuilt
            f = self._dfwd.get((None, static))
            if f is None:
                f = self._dfwd[(None, static)] = eager_jit(partial(self.fn, **dict(static)) if static else self.fn)
        else:
            j = self._dfwd.get(struct)
            if j is None:
                j = self._dfwd[struct] = eager_jit(partial(self.dfn, **dict(struct)))
            pos = tuple(pos_arg(v) for v in dyn)

            def f(x):
                return j(x, *pos)
            if len(self._fwd) > _BOUND_LIMIT:
                self._fwd.clear()
        self._fwd[static] = f
        return f

    def backward_op(self, static, layout, ns, nc):
        struct, dyn = self.split(static)
        if not dyn:
            return Op.backward_op(self, static, layout, ns, nc)
        key = (static, layout, ns, nc)
        b = self._bbwd.get(key)
        if b is not None:
            return b
        k, n = len(dyn), sum(layout.needs)
        skey = (struct, layout, ns, nc)
        shared = self._dbwd.get(skey)
        if shared is None:
            # the positions are constants of the VJP (CONST), after the op's own inputs
            tmpl = Op(name=self.name, fn=self.dfn, args=("self",) + tuple(f"pos{i}" for i in range(k)),
                      grad_fn=self.grad_fn)
            fn = _make_backward(tmpl, struct, layout._replace(kinds=layout.kinds + (CONST,) * k))

            def flat(*a):   # (*saved, *consts, *positions, *grads)
                out = fn(a[:ns], a[ns:ns + nc + k], a[ns + nc + k:])
                return tuple(out) if n > 1 else out[0]
            shared = self._dbwd[skey] = (flat, eager_jit(flat))
        raw, jitted = shared
        m = ns + nc
        pos = tuple(pos_arg(v) for v in dyn)
        names = tuple(f"in{i}" for i in range(len(layout.kinds) + 1 + 256 + 2))
        b = _BoundOp(name=f"{self.name}_backward", fn=lambda *a: raw(*a[:m], *dyn, *a[m:]), args=names,
                     grad_fn=BACKWARD_NAMES.get(self.grad_fn, f"{self.grad_fn}Backward"), saves=names, n_out=n)
        b._call = lambda *a: jitted(*a[:m], *pos, *a[m:])
        if len(self._bbwd) > _BOUND_LIMIT:
            self._bbwd.clear()
        self._bbwd[key] = b
        return b


def defdynview(name, fn, dfn, split, *, grad_fn, doc=None) -> DynViewOp:
    """Declare a ``DynViewOp`` in the op table (the ``defop`` of NOTE [dynamic positions])."""
    if name in OPS:
        raise ValueError(f"op {name!r} declared twice")
    op = OPS[name] = DynViewOp(name=name, fn=fn, dfn=dfn, split=split, grad_fn=grad_fn, doc=doc)
    return op


# ---- view chains --------------------------------------------------------------------------
# A tensor's view chain is a tuple of ``(op, static, out_index)`` steps from its storage's array
# (``_tensor/tensor.py``). These pure functions split a chain into its structure and positions
# and replay it with the positions as operands; the tensor layer's read/write programs and the
# ops built from chains (``derived.py``) use them.

def chain_split(chain):
    """``(structure, positions)`` of a view chain: structure entries are ``(op, static, idx,
    k)``, with ``k`` positions taken from ``positions`` by ``op.dfn`` (``k == 0``: ``op.fn``
    with the entry's full static arguments)."""
    struct, dyn = [], []
    for op, static, idx in chain:
        split = getattr(op, "split", None)
        if split is not None and static:
            s, d = split(static)
            if d:
                struct.append((op, s, idx, len(d)))
                dyn.extend(d)
                continue
        struct.append((op, static, idx, 0))
    return tuple(struct), tuple(dyn)


def chain_apply_dyn(struct, root, pos):
    """The view's value: the chain structure ``struct`` replayed on array ``root`` with the
    positions ``pos`` (ints or int arrays)."""
    x, j = root, 0
    for op, static, idx, k in struct:
        if k:
            x = op.dfn(x, *pos[j:j + k], **dict(static))
            j += k
        else:
            x = op.fn(x, **dict(static)) if static else op.fn(x)
        if idx is not None:
            x = x[idx]
    return x


def chain_scatter_dyn(struct, root, new, pos):
    """``root`` with the view's elements replaced by ``new`` (broadcast, cast to root's dtype)."""
    for i in range(len(struct) - 1, -1, -1):
        unview = UNVIEW.get(struct[i][0])
        if unview is not None:     # NOTE [complex part views]
            j = sum(e[3] for e in struct[:i])
            head, entry = struct[:i], struct[i]
            old_in = chain_apply_dyn(head, root, pos[:j])
            old_out = chain_apply_dyn((entry,), old_in, ())
            new_out = chain_scatter_dyn(struct[i + 1:], old_out, new, pos[j:])
            return chain_scatter_dyn(head, root, unview(old_in, new_out), pos[:j])
    if not struct:
        return jnp.broadcast_to(new.astype(root.dtype), root.shape)
    # each view element's flat position in the root: the chain run over an iota
    at = chain_apply_dyn(struct, jnp.arange(root.size).reshape(root.shape), pos)
    new = jnp.broadcast_to(new.astype(root.dtype), at.shape)
    return root.ravel().at[at.ravel()].set(new.ravel()).reshape(root.shape)


def _start(s):
    return lax.convert_element_type(s, _index_dtype())


def _slice_dyn(x, start, *, dim, length, step):
    span = (length - 1) * step + 1 if length else 0
    y = lax.dynamic_slice_in_dim(x, _start(start), span, axis=dim)
    return lax.slice_in_dim(y, 0, span, step, axis=dim) if step > 1 and length else y


def _slice_split(static):
    st = dict(static)
    start, end, step = st["start"], st["end"], st["step"]
    if start < 0 or end < 0 or step < 1:
        return static, ()
    return (("dim", st["dim"]), ("length", len(range(start, end, step))), ("step", step)), (start,)


def _select_split(static):
    st = dict(static)
    if st["index"] < 0:
        return static, ()
    return (("dim", st["dim"]),), (st["index"],)

# ---- views ------------------------------------------------------------------------------
defop("view", lambda x, shape: jnp.reshape(x, shape), grad_fn="ViewBackward0", view=True)
defop("alias", lambda x: x, grad_fn="AliasBackward0", view=True)
defop("unsqueeze", lambda x, dim: jnp.expand_dims(x, dim), grad_fn="UnsqueezeBackward0", view=True)
defop("squeeze", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward0", view=True)
defop("squeeze_dim", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward1", view=True)
defop("squeeze_dims", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward2", view=True)
defop("t", lambda x: x.T, grad_fn="TBackward0", view=True)
# (a 0-d tensor: torch's dims 0 and -1 both name its one implicit dim, and nothing moves)
defop("transpose", lambda x, dim0, dim1: jnp.swapaxes(x, dim0, dim1) if x.ndim else x, grad_fn="TransposeBackward0",
      view=True)
defop("permute", lambda x, dims: jnp.transpose(x, dims), grad_fn="PermuteBackward0", view=True)


def _expand(x, size):
    """``x`` broadcast to ``size``; a float16/bfloat16 ``x`` is broadcast as float32 (exact) so
    that the gradient's sum over the broadcast dims runs in float32 and rounds once, as torch's
    ``sum_to`` (NOTE [16-bit broadcast gradients] in elementwise.py)."""
    if x.dtype in (jnp.float16, jnp.bfloat16):
        return jnp.broadcast_to(x.astype(jnp.float32), size).astype(x.dtype)
    return jnp.broadcast_to(x, size)


defop("expand", _expand, grad_fn="ExpandBackward0", view="overlap")
# slice/select: positions are operands (NOTE [dynamic positions]); start/end/index in range
defdynview("slice", lambda x, dim, start, end, step: x[(slice(None),) * dim + (slice(start, end, step),)],
           _slice_dyn, _slice_split, grad_fn="SliceBackward0")
defdynview("select", lambda x, dim, index: x[(slice(None),) * dim + (index,)],
           lambda x, index, dim: lax.dynamic_index_in_dim(x, _start(index), dim, keepdims=False),
           _select_split, grad_fn="SelectBackward0")
# basic indexing (ints, slices, None, Ellipsis) in one step; ``key`` is a static tuple
defop("basic_index", lambda x, key: x[key], grad_fn="SliceBackward0", view=True)
defop("diagonal", lambda x, offset, dim1, dim2: jnp.diagonal(x, offset, dim1, dim2),
      grad_fn="DiagonalBackward0", view=True)
defop("unbind", lambda x, dim: tuple(jnp.moveaxis(x, dim, 0)), grad_fn="UnbindBackward0",
      view=True, n_out=-1)


def _split(x, sizes, dim):
    out, start = [], 0
    for s in sizes:
        out.append(x[(slice(None),) * dim + (slice(start, start + s),)])
        start += s
    return tuple(out)


defop("split", _split, grad_fn="SplitBackward0", view=True, n_out=-1)
defop("split_with_sizes", _split, grad_fn="SplitWithSizesBackward0", view=True, n_out=-1)
# torch's unsafe_split/unsafe_chunk: parts autograd does not track as views (they may be written in
# place, ``_is_view()`` is False); here they are new tensors, so such a write leaves the input as it was
defop("unsafe_split", _split, grad_fn="UnsafeSplitBackward0", n_out=-1)
defop("unsafe_split_with_sizes", _split, grad_fn="UnsafeSplitWithSizesBackward0", n_out=-1)

# ---- copies -----------------------------------------------------------------------------
defop("reshape_copy", lambda x, shape: jnp.reshape(x, shape), grad_fn="UnsafeViewBackward0")
def _cat(*xs, dim, dtype):
    # torch skips legacy empty 1-D inputs (shape (0,)) when the others have more dims;
    # they stay inputs of the op (and get an empty gradient)
    nd = max(x.ndim for x in xs)
    keep = [x for x in xs if not (nd > 1 and x.shape == (0,))]
    return jnp.concatenate([x.astype(dtype) for x in keep], axis=dim)


defop("cat", _cat, args=tuple(f"t{i}" for i in range(256)), grad_fn="CatBackward0")
defop("stack", lambda *xs, dim, dtype: jnp.stack([x.astype(dtype) for x in xs], axis=dim),
      args=tuple(f"t{i}" for i in range(256)), grad_fn="StackBackward0")
defop("flip", lambda x, dims: jnp.flip(x, dims), grad_fn="FlipBackward0")
# torch 2.13's rot90 is one op of its own (Rot90Backward0, k and dims saved), no view
defop("rot90", lambda x, k, dims: jnp.rot90(x, k, axes=dims), grad_fn="Rot90Backward0")
defop("roll", lambda x, shifts, dims: jnp.roll(x, shifts, dims), grad_fn="RollBackward0")
defop("roll_flat", lambda x, shifts: jnp.roll(x, shifts), grad_fn="RollBackward0")
defop("repeat", lambda x, repeats: jnp.tile(x, repeats), grad_fn="RepeatBackward0")
# an int ``repeats`` is expand + reshape in torch (ViewBackward0); a tensor is index_select
defop("repeat_interleave", lambda x, repeats, dim: jnp.repeat(x, repeats, axis=dim),
      grad_fn="ViewBackward0")
defop("repeat_interleave_tensor", lambda x, repeats, dim: jnp.repeat(x, np.asarray(repeats), axis=dim,
                                                                    total_repeat_length=sum(repeats)),
      grad_fn="IndexSelectBackward0")
defop("tril", lambda x, diagonal: jnp.tril(x, diagonal), grad_fn="TrilBackward0")
defop("triu", lambda x, diagonal: jnp.triu(x, diagonal), grad_fn="TriuBackward0")
defop("diag_embed", lambda x, diagonal: jnp.diag(x, diagonal), grad_fn="DiagEmbedBackward0")


def _diag_embed_nd(x, offset, dim1, dim2):
    """torch.diag_embed for any batch: x's last dim on the ``offset`` diagonal of new (dim1, dim2)
    planes of size n + |offset|, zeros elsewhere (one DiagEmbedBackward0 node, a contiguous result)."""
    k = abs(offset)
    m = x.shape[-1] + k
    # row i holds x[i] (offset >= 0) or x[i - k] (offset < 0): pad the values to a length-m row index
    xr = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, k) if offset >= 0 else (k, 0)])
    out = jnp.where(jnp.eye(m, k=offset, dtype=bool), xr[..., :, None], jnp.zeros((), x.dtype))
    return jnp.moveaxis(out, (-2, -1), (dim1, dim2))


defop("diag_embed_nd", _diag_embed_nd, grad_fn="DiagEmbedBackward0")


def _block_diag(*xs, dtype):
    """torch.block_diag: 0-d inputs as 1x1, 1-d as one row, on the diagonal of zeros (one
    BlockDiagBackward0 node with an edge per input, as torch)."""
    mats = [x.reshape(1, 1) if x.ndim == 0 else x.reshape(1, -1) if x.ndim == 1 else x for x in xs]
    width = sum(m.shape[1] for m in mats)
    rows, c = [], 0
    for m in mats:   # each block's rows: zeros left of it, the block, zeros right of it
        h, w = m.shape
        rows.append(jnp.concatenate([jnp.zeros((h, c), dtype), m.astype(dtype), jnp.zeros((h, width - c - w), dtype)], 1))
        c += w
    return jnp.concatenate(rows, 0)


defop("block_diag", _block_diag, args=tuple(f"in{i}" for i in range(256)), grad_fn="BlockDiagBackward0")
# torch 2.13 decomposes diag(2-D) into a diagonal copy
defop("diag", lambda x, diagonal: jnp.diag(x, diagonal), grad_fn="DiagonalBackward0_copy")
# torch sums every integer dtype (uint8 included) into int64; jnp.trace would give uint64
defop("trace", lambda x: jnp.trace(x, dtype=jnp.int64 if jnp.issubdtype(x.dtype, jnp.integer) else None),
      grad_fn="TraceBackward0")
# lax.pad takes negative widths (a crop), as torch's constant_pad_nd: one node either way
defop("pad", lambda x, pad_width, value: lax.pad(x, jnp.asarray(value).astype(x.dtype),
                                                 [(lo, hi, 0) for lo, hi in pad_width]),
      grad_fn="ConstantPadNdBackward0")
defop("pad_mode", lambda x, pad_width, mode: jnp.pad(x, pad_width, mode=mode),
      grad_fn="ReflectionPad2DBackward0")


# ---- complex part views --------------------------------------------------------------------------
# NOTE [complex part views]
# torch's ``real``/``imag``/``view_as_real``/``view_as_complex`` are views that reinterpret a
# complex storage as floats (or back). Their elements are not a gather of storage elements, so
# the iota trick of ``chain_scatter_dyn`` cannot place a write; each of these ops instead
# gives ``UNVIEW[op](old_input, new_output) -> new_input``, and a write through a chain that
# holds one is scattered into that op's output first, then mapped back through ``UNVIEW`` and
# scattered on through the rest of the chain.

def _complex_of(re, im):
    return lax.complex(re, im.astype(re.dtype))


def _view_as_real(x):
    return jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)


UNVIEW: dict = {}
UNVIEW[defop("real_view", jnp.real, grad_fn="RealBackward0", view=True)] = (
    lambda old, new: _complex_of(new.astype(jnp.real(old).dtype), jnp.imag(old)))
UNVIEW[defop("imag_view", jnp.imag, grad_fn="ImagBackward0", view=True)] = (
    lambda old, new: _complex_of(jnp.real(old), new.astype(jnp.real(old).dtype)))
UNVIEW[defop("view_as_real", _view_as_real, grad_fn="ViewAsRealBackward0", view=True)] = (
    lambda old, new: _complex_of(new[..., 0].astype(jnp.real(old).dtype), new[..., 1]))
UNVIEW[defop("view_as_complex", lambda x: _complex_of(x[..., 0], x[..., 1]), grad_fn="ViewAsComplexBackward0",
             view=True)] = (lambda old, new: _view_as_real(new).astype(old.dtype))
UNVIEW[defop("conj", jnp.conj, grad_fn="ConjBackward0", view=True)] = (
    lambda old, new: jnp.conj(new).astype(old.dtype))

# storage positions (``element_positions``, strides) of a part view's elements, in units of the
# view's own dtype, as torch's strides count them: a complex storage seen as floats has two
# float positions per complex element (real at 2p, imaginary at 2p + 1). Each map is called
# with the step's static arguments (``view_dtype`` needs them, ``strided.py``).
POSITIONS: dict = {
    OPS["real_view"]: lambda p: 2 * p,
    OPS["imag_view"]: lambda p: 2 * p + 1,
    OPS["view_as_real"]: lambda p: jnp.stack([2 * p, 2 * p + 1], axis=-1),
    OPS["view_as_complex"]: lambda p: p[..., 0] // 2,
    OPS["conj"]: lambda p: p,
}


def chain_is_conj(chain) -> bool:
    """Whether a view chain conjugates its storage (an odd number of ``conj`` views): torch's
    conjugate bit."""
    conj = OPS["conj"]
    return sum(1 for e in chain if e[0] is conj) % 2 == 1


def chain_is_neg(chain) -> bool:
    """Whether a view chain reads negated values off its storage: torch's negative bit, set on
    the ``imag`` of a conjugate view (``z.conj().imag``) and kept by the views taken of it."""
    conj, imag = OPS["conj"], OPS["imag_view"]
    odd = False
    for e in chain:
        if e[0] is conj:
            odd = not odd
        elif e[0] is imag and odd:
            return True
    return False
