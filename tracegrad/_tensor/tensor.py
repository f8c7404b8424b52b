"""Storage, Tensor, views and version counters (DESIGN 2.2).

A ``Storage`` holds one ``jax.Array`` and a write generation. A ``Tensor`` is a storage plus
a *view chain*: a tuple of ``(op, static, out_index)`` steps that compute the tensor's value
from the storage's array. Views (slicing, ``view``, ``transpose``, ``expand``...) share the
storage and the version counter; ``detach()`` shares both with an unchanged chain; ``.data``
shares the storage with a fresh counter.

JAX arrays are immutable, so an in-place op computes the new value functionally and writes it
back into the storage through the chain (``write``): the view's elements are located by
running the chain over an iota of the storage's flat indices, then scattered. That is
functionalization; it is what makes ``a.detach().fill_(10.)`` change ``a``. The jitted read and
write programs are keyed by the chain's structure; its positions (select indices, slice starts)
are runtime operands (NOTE [dynamic positions], ``_ops/shape.py``).

Operator methods live in the API layer (``_api/tensor_methods.py`` attaches them); this file holds
the state and its rules. ``Tensor(data)`` converts through ``convert.py``, ``repr`` is ``tensor_str.py``.
"""
from __future__ import annotations

from functools import partial
from operator import index as _index

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._ops import dtypes as _dt
from .._ops.shape import (POSITIONS as _POSITIONS, chain_apply_dyn as _chain_apply_dyn,
                          chain_is_conj as _chain_is_conj, chain_is_neg as _chain_is_neg,
                          chain_scatter_dyn as _chain_scatter_dyn,
                          chain_split, pos_arg)
from .._ops.errors import not_self as _not_self
from .._ops.warn import warn as _warn, warn_once as _warn_once
from .._ops.registry import OPS as _OPS
from .._ops.tracers import concrete_primal
from .._ops.xla_options import eager_jit, nested_options_error
from .._x64 import astype as _astype64, with_x64
from .convert import SizeBase, TensorBase, legacy_array
from .device import device_of
from .meta import ShapeDtypeStruct as _Abstract, check_not_meta
from .numpy_bridge import owned_array, share_storage, strided_view
from .storage import Storage, typed_storage
from .tensor_str import tensor_repr
from .view_strides import chain_layout as _chain_layout, is_contiguous as _layout_contiguous, \
    view_strides as _view_strides
from . import overridable as _overridable, torch_function as _tf
from .torch_function import _disabled_torch_function_impl  # noqa: F401  (torch._C's name; subclasses opt out with it)

_JaxTracer = jax.core.Tracer
# arrays whose values eager code cannot read: a tracer (inside compile or a region) or a meta
# tensor's abstract array (NOTE [meta tensors] in meta.py); value checks (index ranges, masks)
# skip both, as torch's meta kernels skip them
NO_HOST_VALUES = (jax.core.Tracer, _Abstract)


_CAPTURE = _state.CAPTURE


def see_reads(*tensors):
    """Tell a running compile capture that the caller computes on these tensors' values
    directly, not through an op (``searchsorted``'s binary search, the ``binomial``,
    ``bernoulli`` and ``multinomial`` draws): a tensor from outside the function is then
    lifted into the program as ``apply_op`` lifts an op's inputs; unseen, its value at trace
    time was a constant of the program (a later in-place write or ``copy_`` by the caller was
    not followed)."""
    cap = _CAPTURE[0]
    if cap is not None:
        cap.see_tensors(tensors)
_FUNC_READS = _state.FUNC_READS   # set while a tracegrad.func transform traces its function
_FUNC_TRACES = _state.FUNC_TRACES
_Tracer = jax.core.Tracer


def traced_at(value, traces) -> bool:
    """Whether ``value`` is traced at one of ``traces`` (JAX traces of open tracegrad.func
    reverse-mode levels). As in torch.func only the innermost wrapper counts: a value of a jvp
    or vmap level opened inside the reverse one is that level's tracer and reports none; nor do
    the level's constants (``detach()``, results under ``no_grad``: behind stop_gradient)."""
    return isinstance(value, _Tracer) and value._trace in traces


def _check_data_set_in_transform(target, value):
    """``target.data = value`` inside a tracegrad.func transform: torch refuses a write to
    ``.data`` of a tensor batched by ``vmap`` (either side) or wrapped by an open
    ``grad``/``vjp``/``jacrev`` level (the function's differentiated input), as the swap
    would escape the level. RuntimeError with torch's text (TestInputAttrTracking.
    test_set_data_on_batchedtensor / test_set_data_on_gradtrackingtensor); nothing is
    changed. Costs two type checks per ``.data`` write outside transforms."""
    if _state.VMAP_SAME and any(type(t._st.array).__name__ == "BatchTracer" for t in (target, value)):
        raise RuntimeError("mutating directly with `.data` under vmap transform is not allowed.")
    if _FUNC_TRACES and traced_at(target._st.array, _FUNC_TRACES):
        raise RuntimeError("mutating directly with `.data` inside functorch transform is not allowed.")


def level_value(t) -> bool:
    """Whether Tensor ``t`` is a value of an open tracegrad.func reverse-mode level (it then
    reports requires_grad without any tracegrad Node behind it)."""
    return bool(_FUNC_TRACES) and not t._rg and traced_at(t._st.array, _FUNC_TRACES)


# NOTE [dynamic positions] (``_ops/shape.py``): a chain is split into its structure (the
# ops, their static structure) and its positions (select indices, slice starts); the jitted
# read and write programs are keyed by the structure and take the positions as operands, so
# ``x[i]`` for a new ``i`` reuses the program. ``_chain_bound`` keeps, per full chain, the
# structure's program with the chain's positions bound (bounded: it starts afresh when large).
_BOUND_LIMIT = 4096
_chain_fwd: dict = _state.register_cache("_tensor._chain_fwd", {})        # structure -> jit
_chain_write: dict = _state.register_cache("_tensor._chain_write", {})    # structure -> jit
_chain_bound: dict = _state.register_cache("_tensor._chain_bound", {})    # (kind, chain) -> fn


def _chain_apply(chain, root):
    """The chain run over ``root``, an iota of storage positions (NOTE [complex part views]:
    part views map positions with ``POSITIONS``)."""
    x = root
    for op, static, idx in chain:
        pmap = _POSITIONS.get(op)
        if pmap is not None:
            x = pmap(x, **dict(static)) if static else pmap(x)
        else:
            x = op.fn(x, **dict(static)) if static else op.fn(x)
        if idx is not None:
            x = x[idx]
    return x


def _chain_scatter(chain, root, new):
    struct, pos = chain_split(chain)
    return _chain_scatter_dyn(struct, root, new, pos)


def _bound_chain_fn(kind, chain, cache, impl):
    f = _chain_bound.get((kind, chain))
    if f is None:
        struct, dyn = chain_split(chain)
        g = cache.get(struct)
        if g is None:
            g = cache[struct] = (with_x64(eager_jit(partial(impl, struct))), with_x64(partial(impl, struct)))
        jitted, inline = g
        pos = tuple(pos_arg(v) for v in dyn)
        if len(_chain_bound) > _BOUND_LIMIT:
            _chain_bound.clear()

        def f(*arrays):     # (root,) or (root, new)
            try:
                return jitted(*arrays, pos)
            except ValueError as e:
                if not nested_options_error(e):
                    raise
                return inline(*arrays, pos)     # a concrete root inside someone's trace
        _chain_bound[(kind, chain)] = f
    return f


def _meta_view(chain, root):
    """The shape and dtype of the view ``chain`` of the abstract (meta) array ``root``."""
    struct, dyn = chain_split(chain)
    pos = tuple(pos_arg(v) for v in dyn)
    return with_x64(jax.eval_shape)(partial(_chain_apply_dyn, struct), root, pos)


def chain_value_fn(chain):
    """``f(root) -> view value`` for a view chain (one jitted program per chain structure)."""
    return _bound_chain_fn("r", chain, _chain_fwd, _chain_apply_dyn)


def chain_write_fn(chain):
    """``f(root, new) -> new root`` with the view's elements replaced by ``new``."""
    return _bound_chain_fn("w", chain, _chain_write, _chain_scatter_dyn)


_positions: dict = _state.register_cache("_tensor._positions", {})


def element_positions(t):
    """Flat storage position of each element of ``t`` (a numpy int array of t's shape), found
    by running the view chain over an iota; torch's strides are what this array encodes."""
    return chain_positions(t._chain, t._st.array.shape)


def chain_positions(chain, root_shape):
    """``element_positions`` of the view ``chain`` over a storage array of ``root_shape``."""
    key = (chain, root_shape)
    pos = _positions.get(key)
    if pos is None:
        root = np.arange(int(np.prod(root_shape)), dtype=np.int64).reshape(root_shape)
        if len(_positions) > _BOUND_LIMIT:
            _positions.clear()
        # metadata, not data: computed on the host even while a compiled function is traced
        with jax.ensure_compile_time_eval():
            pos = _positions[key] = np.asarray(with_x64(_chain_apply)(chain, root)) if chain else root
    return pos


def is_strided(pos) -> bool:
    """Whether positions ``pos`` can be described by one offset and one stride per dim."""
    if pos.size <= 1:
        return True
    base = pos.reshape(-1)[0]
    strides = [int(np.take(pos, 1, axis=k).reshape(-1)[0] - base) if pos.shape[k] > 1 else 0
               for k in range(pos.ndim)]
    grid = np.indices(pos.shape)
    return bool(np.array_equal(pos, base + np.tensordot(np.asarray(strides), grid, axes=1)))


# Layout answers (contiguity, strides, whether a shape can be viewed) per (chain, storage
# shape): each is an O(numel) pass over the element positions, paid once per view structure
# rather than on every ``view``/``stride()``/``is_contiguous()`` of a large tensor.
_layout_facts: dict = _state.register_cache("_tensor._layout_facts", {})


def _fact(key, compute):
    v = _layout_facts.get(key)
    if v is None:
        if len(_layout_facts) > _BOUND_LIMIT:
            _layout_facts.clear()
        v = _layout_facts[key] = compute()
    return v


def chain_layout_of(t):
    """``(shape, strides, storage offset)`` of view ``t`` by torch's formulas, or None (NOTE
    [strides by formula] in ``view_strides.py``: then the element positions answer)."""
    return _fact(("layout", t._chain, t._st.array.shape), lambda: _chain_layout(t._chain, t._st.array.shape) or False)


def chain_is_contiguous(t) -> bool:
    """torch's ``is_contiguous``: elements lie at consecutive storage positions in row-major order."""
    if not t._chain:
        return True
    lay = chain_layout_of(t)
    if lay:
        return _layout_contiguous(lay[0], lay[1])
    return _fact(("contiguous", t._chain, t._st.array.shape), lambda: _positions_contiguous(element_positions(t)))


def _positions_contiguous(pos):
    pos = pos.reshape(-1)
    return bool(pos.size <= 1 or np.array_equal(pos, pos[0] + np.arange(pos.size)))


def storage_offset_of(t) -> int:
    """torch's ``storage_offset()``: the storage position of t's first element, in t's element
    units (a part view of a complex storage counts floats). An empty view has no element to
    locate: 0."""
    if not t._chain:
        return 0
    lay = chain_layout_of(t)
    if lay:
        return lay[2]
    pos = element_positions(t)
    return int(pos.reshape(-1)[0]) if pos.size else 0


def rowmajor_strides(shape) -> tuple:
    """torch's contiguous strides for ``shape`` (a size-0 or size-1 dim steps as a 1 would)."""
    out, nxt = [0] * len(shape), 1
    for k in range(len(shape) - 1, -1, -1):
        out[k] = nxt
        nxt *= shape[k] or 1
    return tuple(out)


def strides_of(t) -> tuple:
    """torch's ``stride()``: storage positions to step per index of each dim, read off the
    element positions; a size-1 (or empty) dim gets the stride a fresh contiguous layout gives it,
    except under a final permutation, which permutes the strides of what it permutes (as torch's
    permute/transpose views and laid-out tensors, NOTE [storage layouts])."""
    chain = t._chain
    shape = tuple(t._value.shape)
    if not chain:
        return _strides(shape, None, chain, t._st.array.shape)
    lay = chain_layout_of(t)
    if lay:
        return lay[1]
    return _fact(("strides", chain, t._st.array.shape, shape), lambda: _strides(
        shape, element_positions(t) if t._value.size else None, chain, t._st.array.shape))


# the view steps whose strides follow from their input's (``_strides``)
_PERMUTE, _TRANSPOSE, _T = _OPS["permute"], _OPS["transpose"], _OPS["t"]
_SPLIT, _SLICE, _INDEX_SLICE = _OPS["split"], _OPS["slice"], _OPS["index_slice"]
_VIEW_DTYPE = _OPS["view_dtype"]


def _permutation(step, ndim):
    """The dims a chain step permutes by (a permute, transpose or t view), else None."""
    op, static = step[0], step[1]
    if op is _PERMUTE:
        return dict(static)["dims"]
    if op is _TRANSPOSE or (op is _T and ndim == 2):
        st = dict(static)
        a, b = (st["dim0"] % ndim, st["dim1"] % ndim) if op is _TRANSPOSE else (0, 1)
        dims = list(range(ndim))
        dims[a], dims[b] = b, a
        return tuple(dims)
    return None


def _slice_steps(step, ndim):
    """Per dim, the step a view keeping every dim takes through its input (split, narrow,
    slicing with slices only), else None."""
    op, static = step[0], dict(step[1])
    if op is _SPLIT:
        return (1,) * ndim
    if op is _SLICE:
        return tuple(static["step"] if k == static["dim"] else 1 for k in range(ndim))
    if op is _INDEX_SLICE and all(e[0] == "s" for e in static["key"]):
        steps = tuple(e[3] or 1 for e in static["key"])
        return steps + (1,) * (ndim - len(steps))
    return None


def _prefix_strides(chain, root_shape):
    """The strides of the tensor one view step before ``chain``'s last."""
    before = chain_positions(chain[:-1], root_shape)
    return _strides(before.shape, before if before.size else None, chain[:-1], root_shape)


def _strides(shape, pos, chain, root_shape):
    if chain and chain[-1][0] is _VIEW_DTYPE and pos is not None:
        # view(dtype) scales the strides by the ratio of the element sizes (last dim: 1), as torch's
        st = dict(chain[-1][1])
        a, b = st["src"].itemsize, st["dtype"].itemsize
        inner = _prefix_strides(chain, root_shape)
        if a == b:
            return inner
        return tuple(s * (a // b) if a > b else s // (b // a) for s in inner[:-1]) + (1,)
    dims = _permutation(chain[-1], len(shape)) if chain else None
    if dims is not None:
        inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))
        inner = _strides(tuple(shape[i] for i in inverse), None if pos is None else np.transpose(pos, inverse),
                         chain[:-1], root_shape)
        return tuple(inner[d] for d in dims)
    out = [0] * len(shape)
    nxt = 1
    for k in range(len(shape) - 1, -1, -1):
        s = nxt
        if chain and pos is not None and shape[k] > 1:
            s = int(np.take(pos, 1, axis=k).reshape(-1)[0] - pos.reshape(-1)[0])
        out[k] = s
        nxt = s * shape[k] if s and shape[k] else nxt
    if chain and pos is not None and 1 in shape:
        # a dim sliced down to one element keeps its input's stride (times the slice's step), as torch's
        steps = _slice_steps(chain[-1], len(shape))
        if steps is not None:
            inner = _prefix_strides(chain, root_shape)
            out = [inner[k] * steps[k] if n == 1 else s for k, (n, s) in enumerate(zip(shape, out))]
    return tuple(out)


# set while fill_/zero_ with a number write: torch's fill kernel skips the overlap check (every
# aliased element gets the same value), so ``expand(...).fill_(1)`` works there
OVERLAP_OK = [False]


def _real_scalar(t, ctype):
    """``t.item()`` for ``float(t)``/``int(t)``: a complex value only when its imaginary part is
    0 (RuntimeError otherwise, torch's text naming the C type it converts to)."""
    v = t.item()
    if type(v) is complex:
        if v.imag:
            raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
        v = v.real
    return v


def check_no_internal_overlap(t) -> None:
    """RuntimeError, as torch, before writing into a view whose elements alias each other (only
    chains through expand/as_strided/unfold can; then t itself is checked)."""
    if OVERLAP_OK[0]:
        return
    if any(op.view == "overlap" for op, _, _ in t._chain) and has_internal_overlap(t):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def has_internal_overlap(t) -> bool:
    """torch's ``has_internal_overlap`` "yes" case: a dim of more than one element with stride 0
    (several elements of t are one storage element). Other overlaps torch calls "too hard" to
    prove and lets through; so do we. A tensor of no elements never overlaps (torch calls it
    contiguous first), so an expanded empty ``out`` is written."""
    if 0 in t._value.shape:
        return False
    return any(n > 1 and s == 0 for n, s in zip(t._value.shape, strides_of(t)))


def can_view_as(t, shape) -> bool:
    """torch's ``view`` rule: the new shape must be expressible with strides over t's storage."""
    if chain_is_contiguous(t):
        return True
    lay = chain_layout_of(t)
    if lay and lay[0]:
        return _view_strides(lay[0], lay[1], tuple(shape)) is not None
    return _fact(("viewable", t._chain, t._st.array.shape, tuple(shape)),
                 lambda: is_strided(element_positions(t).reshape(shape)))


class Size(SizeBase):
    """Mirrors ``torch.Size``: a tuple of ints with ``numel()``. Built from any iterable of
    integers (bools and 0-d integer tensors count, as in torch); TypeError for anything else."""

    def __new__(cls, sizes=()):
        vals = []
        for i, s in enumerate(sizes):
            try:
                vals.append(s if type(s) is int else _index(s))
            except TypeError:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')") from None
        return tuple.__new__(cls, vals)

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        # printed as torch prints it: programs written for torch print shapes (the seeds do)
        return f"torch.Size([{', '.join(map(str, self))}])"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    # as torch.Size: concatenation and repetition stay Sizes, from either side
    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other))) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n)) if isinstance(n, int) else NotImplemented

    __rmul__ = __mul__


def _trusted_size(shape) -> Size:
    """A Size of an array's own shape (ints already): skips Size's item checks on this hot path."""
    return tuple.__new__(Size, shape)





def _c_type_name(d) -> str:
    """The name torch's messages give a tensor's element type (its C++ type name: 'float' for
    float32, 'double' for float64, 'c10::Half'...)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "bool": "bool"}.get(d.name, d._scalar_name)

class Tensor(TensorBase):
    """Mirrors ``torch.Tensor``: an n-dimensional array on a JAX device with autograd state.

    Build tensors with ``tracegrad.tensor`` and the other factories; ``Tensor(data)`` also
    works (like ``torch.Tensor``, it gives float32; ``Tensor(other)`` aliases a tensor). See the
    package README for what differs from torch.
    """

    # numpy defers a binary operator to the operand with the higher priority: ``np.float64(2) * t``
    # calls ``t.__rmul__`` and gives a tensor, as torch (which sets the same value)
    __array_priority__ = 1000

    # ``_is_param`` (set by Parameter on a tensor subclass) lives in ``__dict__``, not a slot: an
    # unset slot is listed by ``dir()`` yet ``hasattr`` is False, and torch's ``dir(t)`` lists
    # only attributes that exist
    __slots__ = ("_st", "_chain", "_vcache", "_vgen", "_vc", "_base", "_rg", "_gf", "_out_nr",
                 "_gf_ver", "_grad", "_hooks", "_retains_grad", "_post_acc_hooks", "_acc",
                 "__dict__", "__weakref__")

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and isinstance(args[0], Tensor):
            # torch's Tensor(other) / Subclass(other): an alias of ``other`` (its dtype, its
            # storage, a view whose ``_base`` is ``other``, on the autograd graph), not a copy
            if kwargs:
                raise RuntimeError(f"Legacy tensor constructor of the form {cls.__name__}(tensor, "
                                   f"{', '.join(kwargs)}=...) is not supported; use tracegrad.tensor(...) or "
                                   "tracegrad.as_tensor(...) instead")
            return args[0].as_subclass(cls)      # (a method the API layer registers)
        self = cls._make(None)
        if args or kwargs:   # torch's legacy constructor: Tensor(data) / Tensor(*sizes)
            _init_from(self, legacy_array(*args, **kwargs))
        elif cls is Tensor:  # Tensor(): an empty 1-d tensor of the default dtype, as torch's
            _init_from(self, legacy_array([]))
        return self

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__torch_dispatch__" in cls.__dict__:
            # tracegrad has no dispatcher below the public functions: say so where the class is
            # written rather than let the override be skipped silently
            _warn(f"tracegrad: {cls.__qualname__} defines __torch_dispatch__, which tracegrad does not call "
                  "(tracegrad has no ATen dispatcher); use __torch_function__, which it does call",
                  UserWarning)
        if _tf.type_kind(cls) == _tf.OVERLOADED and not cls.__module__.startswith("tracegrad."):
            # NOTE [trampolines]: the protocol starts here. tracegrad's own subclasses
            # (``masked.MaskedTensor``) turn it on when their first instance is made instead, so
            # that importing tracegrad leaves plain tensors at full speed
            _overridable.activate()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Mirrors ``torch.Tensor.__torch_function__``, the override every subclass inherits:
        runs ``func(*args, **kwargs)`` with subclass dispatch off and returns its Tensor results
        (also inside tuples and lists) as ``cls`` instances (``as_subclass``: aliases on the
        autograd graph, ``AliasBackward0`` as torch), except for the field reads of
        ``torch.overrides.get_default_nowrap_functions`` (``t.grad``). NotImplemented when some
        type in ``types`` is not a base of ``cls``. Call it with ``super().__torch_function__``
        from an override."""
        return _tf.default_torch_function(cls, func, types, args, kwargs)

    # ----- construction fast path -------------------------------------------------------
    @classmethod
    def _make(cls, array, requires_grad=False):
        t = object.__new__(cls)
        t._st = Storage(array)
        t._chain = ()
        t._vcache = None
        t._vgen = 0
        t._vc = [0]
        t._base = None
        t._rg = requires_grad
        t._gf = None
        t._out_nr = 0
        t._gf_ver = 0
        t._grad = None
        t._hooks = None
        t._retains_grad = False
        t._post_acc_hooks = None
        t._acc = None
        return t

    # ----- value -------------------------------------------------------------------------
    @property
    def _value(self):
        if not self._chain:
            return self._st.array
        st = self._st
        if self._vgen != st.gen or self._vcache is None:
            if type(st.array) is _Abstract:    # a meta tensor's view: its shape and dtype only
                self._vcache = _meta_view(self._chain, st.array)
            else:
                self._vcache = chain_value_fn(self._chain)(st.array)
            self._vgen = st.gen
        return self._vcache

    def _write(self, new):
        """Write ``new`` (same shape as self) into the storage through the view chain and bump
        the version counter shared with views and ``detach()``."""
        st = self._st
        if type(st.array) is _Abstract:    # meta (NOTE [meta tensors]): no data, the version moves
            self._vc[0] += 1
            return
        if _CAPTURE[0] is not None:
            _CAPTURE[0].see_write(self)
        dt = st.array.dtype
        if self._chain and self._vcache is not None:
            dt = self._vcache.dtype   # a complex part view is float over a complex storage
        new = _astype64(new, dt) if new.dtype != dt else new
        if self._chain:
            check_no_internal_overlap(self)
            st.array = chain_write_fn(self._chain)(st.array, new)
            self._vcache = new
        else:
            st.array = new
        st.gen += 1
        self._vgen = st.gen
        self._vc[0] += 1

    # ----- metadata ----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return _trusted_size(self._value.shape)

    def size(self, dim=None):
        """Mirrors ``torch.Tensor.size``: the ``tracegrad.Size``, or one dim's length."""
        try:
            s = self._value.shape
        except AttributeError:   # Tensor.size(None): only on the error path (NOTE [unbound self])
            raise _not_self("size", self) from None
        if dim is None:
            return _trusted_size(s)
        if not s and type(dim) is int:
            raise _no_dims(dim, "size")
        return s[_wrap_dim(dim, len(s))]

    @property
    def dtype(self):
        return _dt.from_numpy_dtype(self._value.dtype)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def dim(self) -> int:
        try:
            return self._value.ndim
        except AttributeError:   # NOTE [unbound self]
            raise _not_self("dim", self) from None

    ndimension = dim

    def numel(self) -> int:
        try:
            return int(self._value.size)
        except AttributeError:   # NOTE [unbound self]
            raise _not_self("numel", self) from None

    nelement = numel

    def element_size(self) -> int:
        return self._value.dtype.itemsize

    @property
    def device(self):
        return device_of(self._st.array)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    is_cpu = property(lambda self: self.device.type == "cpu")

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_inference(self) -> bool:
        """Mirrors ``torch.Tensor.is_inference``: made by an op inside ``inference_mode()``."""
        return self.__dict__.get("_inference", False)

    def _is_view(self) -> bool:
        return self._base is not None

    def data_ptr(self) -> int:
        """Mirrors ``torch.Tensor.data_ptr``: the address of the first element, the storage's
        (synthetic) address plus ``storage_offset() * element_size()`` (``_tensor/storage.py``)."""
        cap = _state.CAPTURE[0]
        if cap is not None:
            cap.see_layout(self, "data_ptr()", every=True)
        return self._st.data_ptr() + storage_offset_of(self) * self._value.dtype.itemsize

    def storage_offset(self) -> int:
        """Mirrors ``torch.Tensor.storage_offset``: the storage position of the first element."""
        cap = _state.CAPTURE[0]
        if cap is not None:
            cap.see_layout(self, "storage_offset()")
        return storage_offset_of(self)

    def untyped_storage(self):
        """Mirrors ``torch.Tensor.untyped_storage``: the storage shared by the tensor's views."""
        return self._st

    def storage(self):
        """Mirrors the deprecated ``torch.Tensor.storage``: a ``TypedStorage`` of the tensor's dtype."""
        return typed_storage(self)

    @property
    def _version(self) -> int:
        if "_inference" in self.__dict__ and "_inference_vc" not in self.__dict__:
            # torch: inference tensors have no version counter (but see detach)
            raise RuntimeError("Inference tensors do not track version counter; clone() the tensor outside "
                               "inference_mode() to get one that does.")
        cap = _state.CAPTURE[0]
        if cap is not None:
            cap.see_version(self)
        return self._vc[0]

    # ----- autograd state ----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        if _CAPTURE[0] is not None:     # read as Python while tracing: guarded (capture.py)
            _CAPTURE[0].see_rg_read(self)
        if self._base is not None and self._gf is None and self._base._rg and self._base._gf is not None:
            return True
        if not self._rg and _FUNC_TRACES:     # NOTE [requires_grad inside transforms] (func/_closure.py)
            return traced_at(self._st.array, _FUNC_TRACES)
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        if type(value) is not bool:   # torch's attribute setter: RuntimeError, not the method's TypeError
            raise RuntimeError(f"requires_grad must be a bool (got {type(value).__name__}); assign True or False")
        if self._gf is not None:  # the attribute refuses even True on a non-leaf, as torch
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        self._set_requires_grad(value)     # the attribute is allowed inside tracegrad.func transforms

    @requires_grad.deleter
    def requires_grad(self):
        # torch refuses the deletion with RuntimeError (TestAutograd.test_attribute_deletion)
        raise RuntimeError("requires_grad must be a bool")

    def _factory_requires_grad(self):
        """``requires_grad=True`` given to a factory (``zeros``, ``tensor``, ``new_*``, ``*_like``):
        torch's factories word the integer-dtype refusal with a capital "Only"."""
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return self._set_requires_grad(True)

    def requires_grad_(self, requires_grad=True):
        """Mirrors ``torch.Tensor.requires_grad_``. RuntimeError on a non-leaf (use detach())
        or for an integer dtype; TypeError for a flag that is not a bool (as torch's parser)."""
        if type(requires_grad) is not bool and type(requires_grad).__name__ != "bool_":
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type(requires_grad).__name__}; pass True or False")
        if not isinstance(self, Tensor):   # NOTE [unbound self]
            raise _not_self("requires_grad_", self)
        if _state.FUNC_LEVELS or _state.VMAP_SAME:
            # torch refuses the method (not the attribute, not factories' requires_grad=) while
            # any torch.func transform runs, for every tensor
            raise RuntimeError(
                "You are attempting to call Tensor.requires_grad_() (or perhaps using "
                "torch.autograd.functional.* APIs) inside of a function being transformed by a tracegrad.func "
                "transform. This is unsupported: use the tracegrad.func transforms (grad, vjp, jacrev, jacfwd, "
                "hessian) or call requires_grad_() outside of the transformed function instead.")
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            # torch's method words it without "complex" (the attribute setter and factories
            # name both; a complex tensor may require grad either way)
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad):
        """``requires_grad_`` without its argument checks and transform refusal: the attribute
        setter, factories and tracegrad's own code (a Parameter made inside a transform)."""
        if self._gf is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and self.__dict__.get("_inference") and not _state.in_inference_mode():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is "
                               "not allowed. Clone it outside inference_mode() (or use it inside one).")
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if self._rg != bool(requires_grad) and _CAPTURE[0] is not None:
            _CAPTURE[0].see_requires_grad(self)      # a flip inside a compiled trace
        if self._rg != bool(requires_grad) and id(self._st) in _state.HELD_STORAGES:
            # only state a compiled program reads (a parameter frozen between calls); a new
            # tensor made with requires_grad=True changes no program
            _state.note_rg_flip(self)
        self._rg = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        if level_value(self):
            # a value of a reverse-mode transform level: only the level's own inputs are leaves
            return self._base is None and any(id(self._st) in s for s in _state.FUNC_INPUTS)
        return self.grad_fn is None

    @property
    def grad_fn(self):
        if self._base is not None and self._base._rg:
            return VIEW_GRAD_FN[0](self)
        cap = _state.CAPTURE[0]
        if cap is not None and cap.stand_ins:      # NOTE [argument stand-ins] (_lowering/capture.py)
            cap.see_leaf(self)
        return self._gf

    @property
    def output_nr(self) -> int:
        return self._out_nr

    @property
    def volatile(self) -> bool:
        """Mirrors torch's removed ``Variable.volatile``: always False, with a UserWarning
        (``no_grad`` replaced it); assigning it warns and changes nothing."""
        # _warn, not stacklevel=2: with a __torch_function__ subclass alive (an UninitializedParameter
        # of a Lazy module) property reads run through torch_function's dispatch, one frame deeper
        _warn("volatile was removed (Variable.volatile is always False)", UserWarning)
        return False

    @volatile.setter
    def volatile(self, value):
        _warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.", UserWarning)

    @property
    def grad(self):
        if self._gf is not None and not self._retains_grad and self._grad is None:
            _warn(     # at the user's line, through torch_function's dispatch too (see volatile)
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor.", UserWarning)
        cap = _CAPTURE[0]
        if cap is not None and not cap.made_here(self):
            cap.see_grad_owner(self)     # outside state: whether it is None is guarded
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected {tuple(self.shape)}, got {tuple(value.shape)}")
            gd = self.__dict__.get("_gdt", self.dtype)
            if gd is not None and value.dtype is not gd:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_c_type_name(value.dtype)}' to a tensor with "
                    f"grad_dtype '{gd._scalar_name}'. The gradient must match the tensor's grad_dtype (defaults to "
                    "the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or "
                    "None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
                    "gradient may break downstream systems that assume they match.")
            if value.device.type != self.device.type:
                raise RuntimeError(f"attempting to assign a gradient with device type '{value.device.type}' to a "
                                   f"tensor with device type '{self.device.type}'; put the gradient on the "
                                   "tensor's device")
        if _CAPTURE[0] is not None:
            _CAPTURE[0].see_grad_owner(self)
        self._grad = value

    @grad.deleter
    def grad(self):
        # torch: `del t.grad` is the same as `t.grad = None` (TestAutograd.test_attribute_deletion)
        self.grad = None

    @property
    def grad_dtype(self):
        """Mirrors ``torch.Tensor.grad_dtype``: the dtype a leaf's ``.grad`` must have, to which
        the autograd engine casts the gradients flowing into the leaf (``backward`` and
        ``autograd.grad``); the tensor's dtype unless set, None for any dtype. Kept in the
        tensor's ``__dict__`` as ``_gdt`` when set (absent: the default). RuntimeError on a
        non-leaf (after the non-leaf ``.grad`` UserWarning, as torch reads ``.grad`` first)."""
        if self.grad_fn is not None:
            self.grad      # noqa: B018  (torch's getter reads .grad first: its non-leaf warning)
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self.__dict__.get("_gdt", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, _dt.dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        g = self._grad
        if value is not None and g is not None and g.dtype is not value:
            raise RuntimeError(
                f"Cannot set grad_dtype to '{value._scalar_name}' because there is already a gradient with dtype "
                f"'{_c_type_name(g.dtype)}'. Please clear the gradient (.grad = None) before changing grad_dtype, or "
                "ensure the new grad_dtype matches the existing gradient's dtype.")
        self.__dict__["_gdt"] = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _base_tensor(self):
        return self._base

    def detach(self):
        """Mirrors ``torch.Tensor.detach``: a tensor sharing storage and version counter, with
        no history and ``requires_grad=False``. In-place writes to either are seen by both.
        Inside a ``tracegrad.func`` transform the result is a constant of the transform (its
        value behind ``stop_gradient``, in a storage of its own), as torch.func's detach."""
        if _FUNC_READS[0] is not None and isinstance(self, Tensor) and isinstance(self._st.array, jax.core.Tracer):
            return Tensor._make(jax.lax.stop_gradient(self._value))
        t = Tensor._make(None)
        try:
            t._st, t._chain, t._vc = self._st, self._chain, self._vc
        except AttributeError:   # NOTE [unbound self]
            raise _not_self("detach", self) from None
        t._vcache, t._vgen = self._vcache, self._vgen
        if _CAPTURE[0] is not None:     # an alias made while tracing is not from outside (capture.py)
            _CAPTURE[0].see_alias_made(t)
        if "_inference" in self.__dict__:   # torch: a detached alias is an inference tensor iff
            t._inference = True             # its source is (a view's rule), in or out of the mode
            if not _state.in_inference_mode():
                # ... but one made outside the mode gets a version counter of its own, so torch
                # lets it (not its views) be written in place there; .data is this alias too
                t._inference_vc, t._vc = True, [0]
        return t

    def detach_(self):
        """Mirrors ``torch.Tensor.detach_``: drops this tensor's history in place."""
        if not isinstance(self, Tensor):   # NOTE [unbound self]; not a hot path
            raise _not_self("detach_", self)
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._gf = None
        self._rg = False
        self.__dict__.pop("_fw", None)   # as torch, the forward-mode tangent goes too
        return self

    @property
    def data(self):
        """Mirrors ``torch.Tensor.data``: shares storage, but has its own version counter, no
        history and ``requires_grad=False``; in-place changes through it are invisible to
        autograd's checks (as in torch). RuntimeError on a tensor batched by an enclosing
        ``vmap`` (torch refuses ``.data`` of a BatchedTensor)."""
        if _state.VMAP_SAME and type(self._st.array).__name__ == "BatchTracer":   # (JAX keeps the class private)
            raise RuntimeError("accessing `data` under vmap transform is not allowed")
        t = self.detach()
        t._vc = [0]
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        _check_data_set_in_transform(self, value)
        if self._rg and not (value.dtype.is_floating_point or value.dtype.is_complex):
            # torch keeps requires_grad across .data = ..., so the new dtype must allow it
            # (TestAutograd.test_set_data_self_requires_grad)
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        if self.layout != value.layout:
            # torch's set_data refuses another TensorImpl kind: a dense tensor's data cannot be a
            # sparse one's, nor the reverse (TestAutograd.test_set_data_tensorimpl_type)
            raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have "
                               f"incompatible tensor type ({self.layout} and {value.layout}); convert one with "
                               ".to_dense() or .to_sparse() first")
        if (type(self._st.array) is _Abstract) != (type(value._st.array) is _Abstract):
            # torch's set_data refuses another TensorImpl kind: a meta tensor's data cannot be a
            # real tensor's, nor the reverse (a cpu <-> cuda swap is allowed)
            raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have "
                               "incompatible tensor type (one is on the meta device); move both to one kind "
                               "of device first")
        if _CAPTURE[0] is not None:       # inside a compiled trace: undone if it is abandoned
            _CAPTURE[0].see_data_set(self, value)
        # the tensor now shares the value's storage (a view of it where the value is one), as
        # torch's set_data: a later in-place write through either is seen by the other, and
        # ``p.data -= x`` leaves ``p`` on the storage it was on. Its own version counter stays.
        self._st, self._chain = value._st, value._chain
        self._vcache = None

    @data.deleter
    def data(self):
        # torch refuses the deletion with RuntimeError (TestAutograd.test_attribute_deletion)
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    # ----- conversion --------------------------------------------------------------------
    def numpy(self, *, force=False):
        """Mirrors ``torch.Tensor.numpy``: an ndarray sharing this tensor's memory on the CPU
        backend (writes through either are seen by the other, NOTE [numpy bridge]); a copy
        elsewhere (another backend, a sharded array).
        RuntimeError on a tensor that requires grad (call ``.detach().numpy()``); TypeError for a
        ``force`` that is not a bool."""
        if force is not False and type(force) is not bool:
            raise TypeError(f"numpy(): argument 'force' must be bool, not {type(force).__name__}")
        if self.requires_grad and not force and _grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _concrete(self, "numpy()")
        if self._chain and _chain_is_conj(self._chain) and self.dtype.is_complex and not force:
            raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. "
                               "Use tensor.resolve_conj().numpy() instead.")
        if self._chain and _chain_is_neg(self._chain) and not force:   # as torch (z.conj().imag)
            raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. "
                               "Use tensor.resolve_neg().numpy() instead.")
        if self.dtype in _dt.LIMITED and self.dtype.is_floating_point:
            raise TypeError(f"numpy(): numpy has no {self.dtype.name} dtype (torch raises too); convert with "
                            ".float() first")
        # shared wherever the view is a strided window on the storage (not a conj view, which
        # numpy(force=True) resolves into a copy)
        shareable = self.dtype.np is not None and not (self._chain and _chain_is_conj(self._chain))
        host = share_storage(self._st) if shareable else None
        if host is not None and not host.flags.c_contiguous:
            # from_numpy of an array with gaps (a slice): the storage's elements are no row-major
            # block of its memory, so a view by the storage's strides would read other elements;
            # the array itself answers for the whole tensor, a copy for a view of it
            view = host if not self._chain and host.dtype == self.dtype.np else None
        else:
            view = None if host is None else strided_view(host, self.dtype.np, tuple(self.shape),
                                                          storage_offset_of(self), strides_of(self))
        if view is not None:
            return view                                       # shares memory (NOTE [numpy bridge])
        return self._numpy_layout(np.array(self._value))  # a writable copy

    def _numpy_layout(self, arr):
        """``arr`` laid out in memory in the order of this tensor's strides: torch's numpy() is a
        view of the storage, so a transposed tensor gives a Fortran-ordered array (flags and
        ``arr.strides`` order as torch's, though the memory is a copy)."""
        strides = self.stride() if arr.ndim > 1 else ()
        order = sorted(range(arr.ndim), key=lambda d: -strides[d]) if strides else []
        if order == sorted(order):
            return arr
        return np.ascontiguousarray(arr.transpose(order)).transpose(np.argsort(order))

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad and _grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _concrete(self, "numpy conversion")
        if self._chain and _chain_is_conj(self._chain) and self.dtype.is_complex:
            raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. "
                               "Use tensor.resolve_conj().numpy() instead.")
        if self._chain and _chain_is_neg(self._chain):
            raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. "
                               "Use tensor.resolve_neg().numpy() instead.")
        if copy:      # numpy 2's np.array(t): a writable array of its own, as torch's
            return np.array(self._value, dtype=dtype)
        a = np.asarray(self._value)
        return a.astype(dtype) if dtype is not None else a

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A numpy ufunc applied to a tensor gives a tensor, as torch (``np.sin(t)``); a bool
        result becomes uint8, as torch's. TypeError for a dtype tracegrad lacks."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        _dt.from_numpy_dtype(array.dtype)
        return Tensor._make(with_x64(jnp.asarray)(array))

    def tolist(self):
        """Mirrors ``torch.Tensor.tolist``: nested Python lists of Python numbers."""
        a = _concrete(self, "tolist()")
        if a.ndim <= 64:
            return np.asarray(a).tolist()
        # numpy holds 64 dims at most (a tensor more): the flat values, nested by hand
        return _nest(np.asarray(a.reshape(-1)).tolist(), tuple(a.shape))

    def item(self):
        """Mirrors ``torch.Tensor.item``: the Python number of a one-element tensor.
        RuntimeError for more elements."""
        try:
            v = self._value
        except AttributeError:   # NOTE [unbound self]
            raise _not_self("item", self) from None
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        if _CAPTURE[0] is not None and isinstance(v, _JaxTracer):
            c = _CAPTURE[0].constants.value(self)   # NOTE [constants in a trace] in _lowering/constants.py
            if c is not None:
                return np.asarray(c).item()
            d = _CAPTURE[0].deferred_item(self)     # NOTE [deferred item] in _lowering/deferred.py
            if d is not None:
                return d
        a = _concrete(self, "item()")
        return np.asarray(a.reshape(()) if a.ndim > 64 else a).item()   # numpy holds 64 dims at most

    def __float__(self):
        if self._value.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self.requires_grad and _state.GRAD_MODE[0]:
            # torch warns once per process (every time under set_warn_always(True)), and only with
            # grad mode on (LBFGS's float(loss) inside its no_grad step stays silent)
            _warn_once("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                       "Consider using tensor.detach() first.", UserWarning, key="scalar-of-requires-grad")
        return float(_real_scalar(self, "double"))

    def __int__(self):
        if self._value.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(_real_scalar(self, "int64_t"))

    def __complex__(self):
        if self._value.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return complex(self.item())

    def __index__(self):
        # a one-element bool tensor is an index too (torch: ``[1, 2][tensor(True)]`` is 2,
        # ``range(tensor(True))`` is ``range(1)``); where torch reads a size from a tensor the
        # callers refuse a bool one themselves (``bool_size_error``)
        if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        v = self._value
        if v.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(np.asarray(_concrete(self, "bool()")).reshape(()))

    def __len__(self):
        s = self._value.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def __iter__(self):
        if self.dim() == 0:     # dim(), as torch's: a subclass's override sees dim and unbind
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        cap = _CAPTURE[0]
        if cap is not None and cap.stand_ins:      # NOTE [argument stand-ins] (_lowering/capture.py)
            cap.see_identity(self)
        return id(self)

    def __repr__(self):
        if _CAPTURE[0] is not None:      # printing inside a compiled function shows a value
            _CAPTURE[0].python_read(self, "print()/repr()")
        cls = type(self)
        # a user subclass prints its class name, as torch's (tracegrad's own subclasses and
        # Parameter print "tensor(")
        if cls is not Tensor and not cls.__module__.startswith("tracegrad"):
            text = tensor_repr(self, prefix=f"{cls.__name__}(")
            # a subclass instance made a parameter (nn.Parameter keeps its class): torch wraps it
            return f"Parameter({text})" if getattr(self, "_is_param", False) else text
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if _CAPTURE[0] is not None:
            _CAPTURE[0].python_read(self, "format()")
        # as torch: only a plain 0-d tensor formats as its number; a Parameter, a subclass or a
        # meta tensor formats as its str (``f"{p}"`` shows ``Parameter containing:...``) and a
        # non-empty spec is a TypeError
        if self.ndim == 0 and type(self) is Tensor and self.device.type != "meta" \
                and not isinstance(self._value, _JaxTracer):
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        if self._gf is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.")
        t = type(self).__new__(type(self))
        # one new storage per old one (deepcopy's memo): a tensor and its views copied together
        # still share their elements, as torch's storage deepcopy; JAX arrays are immutable, so
        # the new storage may start from the same array and keep the view chain as it is
        st = memo.get(id(self._st))
        if st is None:
            st = memo[id(self._st)] = Storage(owned_array(self._st))
            if getattr(self._st, "_layout", False):    # the copy keeps the layout (memory_format.py)
                st._layout = True
        t._st, t._chain, t._vcache = st, self._chain, None
        t._rg = self._rg
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        t.__dict__.update({k: v for k, v in self.__dict__.items()})
        memo[id(self)] = t
        return t


# The classes report the package as their module, as ``torch.Tensor`` and ``torch.Size`` report
# ``torch``: ``type(t)`` prints ``<class 'tracegrad.Tensor'>`` (not this file's path) and pickle
# finds them as tracegrad.Tensor and tracegrad.Size
Tensor.__module__ = Size.__module__ = "tracegrad"
_tf.PLAIN_TYPES.append(Tensor)
_tf.TRIVIAL.add(Tensor)
_tf.NOWRAP.add(Tensor.grad.__get__)    # torch's get_default_nowrap_functions (_base is a slot here)
_overridable.install_class_observer()


def _init_from(t, array):
    t._st = Storage(array)
    t._chain = ()
    t._vcache = None


# The grad_fn of a view whose base requires grad is built lazily by autograd, a layer above
# this one: autograd/_dispatch.py stores its ``view_grad_fn`` here when it loads (importing
# tracegrad loads it before any tensor can require grad).
VIEW_GRAD_FN: list = [None]


def _grad_enabled():
    return _state.GRAD_MODE[0]


def _nest(flat, shape):
    """``flat`` (a list of ``prod(shape)`` values, C order) as nested lists of ``shape``: what
    ``tolist`` returns for a tensor of more dims than a numpy array holds."""
    if 0 in shape:      # no values: lists down to the first empty dim
        return [] if shape[0] == 0 else [_nest(flat, shape[1:]) for _ in range(shape[0])]
    for size in reversed(shape[1:]):
        flat = [flat[i:i + size] for i in range(0, len(flat), size)]
    return flat


def _concrete(t, what):
    """``t``'s concrete array for a Python-side read (``what``: ``item()``, ``bool()``...): under
    a tracegrad.func transform traced over eager values the primal behind the tracer (NOTE
    [concrete primals]). RuntimeError for a meta tensor or a value that is only traced (in
    tracegrad.compile, vmap)."""
    if type(t._st.array) is _Abstract:     # NOTE [meta tensors]: no data to read
        check_not_meta(t, what)
    if _CAPTURE[0] is not None:
        if what in ("tolist()", "bool()") and isinstance(t._value, _JaxTracer):
            c = _CAPTURE[0].constants.value(t)     # NOTE [constants in a trace]
            if c is not None:
                return c
        _CAPTURE[0].python_read(t, what)
    v = t._value
    if isinstance(v, _JaxTracer):
        p = concrete_primal(v) if _CAPTURE[0] is None else None
        if p is not None:
            return p
        if type(t._value).__name__ == "BatchTracer" and what in ("item()", "bool()"):   # (JAX keeps the class private)
            # inside tracegrad.vmap: torch's own messages
            if what == "item()":
                raise RuntimeError(
                    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
                    "calling .item() on a Tensor, please try to rewrite what you're doing with other operations.")
            raise RuntimeError(
                "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                "We don't support that yet: use tracegrad.where or move the branch out of the vmapped function.")
        if _state.FUNC_LEVELS and _CAPTURE[0] is None:
            raise RuntimeError(
                f"{what} needs a concrete value, but this tensor is being traced by a tracegrad.func "
                f"transform (grad, vjp, jacrev, jacfwd, hessian, jvp); keep the computation in tensor ops "
                f"(tracegrad.where instead of if/else) or move {what} outside the transformed function")
        raise RuntimeError(
            f"{what} needs a concrete value, but this tensor is being traced (inside "
            f"tracegrad.compile or a checkpointed region); keep the computation in tensor ops "
            f"(tracegrad.where instead of if/else) or move {what} outside the compiled function")
    return v


def _no_dims(dim, api):
    """torch's IndexError for one dim of a 0-d tensor (``size(0)``, ``stride(-1)``)."""
    return IndexError(f"Dimension specified as {dim} but tensor has no dimensions ({api}({dim}) of a 0-d tensor; "
                      f"{api}() gives the empty tuple)")


def _wrap_dim(dim, ndim):
    if type(dim) is not int:   # the one check on the common path
        dim = _index_dim(dim)
    n = max(ndim, 1)
    if not -n <= dim < n:
        if not -2 ** 63 <= dim < 2 ** 63:   # torch's parser reads a dim as int64 before any range check
            raise ValueError(f"Overflow when unpacking long long (dim={dim} does not fit int64)")
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _index_dim(dim):
    """``dim`` as an int when it is one for torch's parser (a numpy integer, a one-element integer
    tensor: ``__index__``; not a bool), else the parser's TypeError, naming the function that read
    the dim (a float dim, a string, a tensor of several elements)."""
    import operator
    import sys
    try:
        if type(dim) is bool:      # torch's parser takes no bool for an int (``__index__`` would)
            raise TypeError
        if isinstance(dim, Tensor):
            if dim.ndim != 0:   # torch's parser takes only a 0-d tensor for an int (tensor([1]) is refused)
                raise TypeError
            if dim.dtype._cat != 1:   # a one-element float or bool tensor
                dim = float(dim)
        return operator.index(dim)
    except (TypeError, ValueError, RuntimeError):
        frame = sys._getframe(2)
        while frame.f_back is not None and frame.f_code.co_name.startswith(("_", "<")):   # past helpers (_dim1), comprehensions
            frame = frame.f_back
        api = frame.f_code.co_name
        raise TypeError(f"{api}(): argument 'dim' must be int, not {type(dim).__name__}; "
                        "pass an integer dim") from None


def is_tensor_container(v) -> bool:
    """Whether ``v`` is a non-empty tuple, list (namedtuple included) or dict holding only
    tensors (``(h, c)``, ``{"loss": loss}``): what a compiled function may bind to a place as
    carried state (NOTE [carried state] in ``_lowering/carry.py``); a number in it could differ
    per call and would not be bound again."""
    if type(v) is dict:
        return len(v) > 0 and all(isinstance(x, Tensor) for x in v.values())
    seq = type(v) in (tuple, list) or (isinstance(v, tuple) and hasattr(type(v), "_fields"))
    return seq and len(v) > 0 and all(isinstance(x, Tensor) for x in v)
