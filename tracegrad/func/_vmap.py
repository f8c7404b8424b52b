"""``tracegrad.func.vmap`` on ``jax.vmap`` with torch.func's argument rules and errors."""
from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._tensor import generator as _generator
from .._ops import random as _random
from .._tensor.tensor import Tensor
from . import _wrap

_RANDOMNESS = ("error", "different", "same")


def _name(func):
    return getattr(func, "__name__", type(func).__name__)


def _flat_in_dims(in_dims, args, prefix):
    """One in_dim per leaf of ``args`` (``in_dims`` is an int/None or a tuple tree that is a
    prefix of ``args``' structure), as torch.func broadcasts it."""
    # a bool is an int to torch's structure checks (it fails later, in _check_inputs)
    if isinstance(in_dims, int):
        return [in_dims] * len(_wrap.tensor_leaves(args))
    if not isinstance(in_dims, tuple):
        raise ValueError(f"{prefix}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"{prefix}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                         f"{len(in_dims)} entries but there are {len(args)} inputs.")
    flat = []
    for d, a in zip(in_dims, args):
        flat += _broadcast(d, a, prefix)
    return flat


def _broadcast(d, a, prefix):
    """``d`` (an in_dim or a tree of them that is a prefix of ``a``) as one entry per leaf of
    ``a``, in ``_wrap.flatten``'s order (dict keys in insertion order)."""
    if d is None or isinstance(d, int):   # a bool too: an int to torch's pytree checks
        return [d] * len(_wrap.tensor_leaves(a))
    # (a tuple of dims matches a tuple, a list matches a list: torch's pytree node types)
    if (isinstance(d, (tuple, list)) and isinstance(a, (tuple, list)) and len(d) == len(a)
            and isinstance(d, tuple) == isinstance(a, tuple)):
        return [x for di, ai in zip(d, a) for x in _broadcast(di, ai, prefix)]
    if isinstance(d, dict) and isinstance(a, dict) and set(d) == set(a):
        return [x for k in a for x in _broadcast(d[k], a[k], prefix)]
    raise ValueError(f"{prefix}: in_dims is not compatible with the structure of `inputs`: in_dims entry {d!r} "
                     f"does not match an input of type {type(a).__name__}.")


def _check_inputs(args, flat_dims, prefix):
    sizes = []
    for leaf, d in zip(_wrap.tensor_leaves(args), flat_dims):
        if d is None:
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{prefix}: Got in_dim={d} for an input but the input is of type {type(leaf)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        nd = leaf.dim()
        if not -nd <= d < nd:
            raise ValueError(f"{prefix}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{nd} so expected in_dim to satisfy -{nd} <= in_dim < {nd}.")
        sizes.append(leaf.shape[d])
    # torch takes a bool in_dim through its checks as an int, then its size(dim) refuses it
    if any(isinstance(d, bool) for d in flat_dims):
        raise TypeError(f"size(): argument 'dim' (position 1) must be int, not bool ({prefix}: an in_dim is an "
                        "int or None)")
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _check_out_dims_kind(out_dims, func):
    """torch's ValueError for out_dims that is not an int, None or a (nested) collection of them."""
    def ok(d):
        if d is None or isinstance(d, int):   # a bool too: torch reads True as out_dim 1
            return True
        if isinstance(d, (tuple, list)):
            return all(ok(x) for x in d)
        if isinstance(d, dict):
            return all(ok(x) for x in d.values())
        return False
    if not ok(out_dims):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")


def _bools_as_ints(dims):
    """``dims`` with each bool as the int it is (torch's out_dims=True is 1); anything else kept."""
    if isinstance(dims, bool):
        return int(dims)
    if isinstance(dims, (tuple, list)):
        return type(dims)(_bools_as_ints(d) for d in dims)
    if isinstance(dims, dict):
        return {k: _bools_as_ints(d) for k, d in dims.items()}
    return dims


def _check_out_dims(out_dims, out, func):
    """The out_dim of every output leaf (``_broadcast``, ValueError when the structure does not
    fit); torch's IndexError for an out_dim outside ``[-(ndim+1), ndim]`` of a per-example output."""
    prefix = f"vmap({_name(func)}, ..., out_dims={out_dims})"
    dims = _broadcast(out_dims, out, prefix)
    for d, leaf in zip(dims, _wrap.tensor_leaves(out)):
        nd = leaf.dim() + 1 if isinstance(leaf, Tensor) else None
        if d is not None and nd is not None and not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    return dims


_GUARD_DEPTH = [0]


# NOTE [vmap randomness]
# A draw goes through ``Generator.next_key`` (one key per draw) and then a host draw from that
# key (``_ops/random.py``, NOTE [host draws]). 'same': nothing changes; the key is concrete, so
# the draw has the per-example shape and is broadcast over the batch. 'different': while the
# mapped function runs, ``next_key`` still advances the generator once per draw, and then folds
# in the example's index (a mapped input ``arange(batch)``), so each example gets its own key;
# the host draw from a batched key runs once per example (``_batched_draw``). Nested vmaps fold in
# one index per 'different' level: rows differ along those levels and repeat along 'same' ones,
# as torch. 'error': ``next_key`` refuses. All patches are undone on exit, also on errors.


@jax.jit
def _fold_in(key, index):
    return jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(key), index))


def _batched_draw(k, sample, shape, dtype):
    """``_ops/random._draw`` for a key that may be batched by ``jax.vmap``: each example's key
    seeds its own numpy draw (one host call for the whole batch)."""
    if not isinstance(k, jax.core.Tracer):
        return _ORIG_DRAW(k, sample, shape, dtype)
    dtype = jnp.dtype(dtype)
    shape = tuple(shape)

    def host(keys):
        keys = np.asarray(keys)
        flat = keys.reshape(-1, keys.shape[-1])
        draws = [np.asarray(sample(_random._philox(key)), dtype) for key in flat]
        if not draws:   # an empty batch
            return np.zeros(keys.shape[:-1] + shape, dtype)
        return np.stack(draws).reshape(keys.shape[:-1] + shape)
    return _random.host_call(host, shape, dtype, k, vmap_method="expand_dims")


_ORIG_DRAW = _random._draw


@contextlib.contextmanager
def _different(index):
    """Per-example keys while the mapped function runs (NOTE [vmap randomness])."""
    outer = _generator.Generator.next_key
    prev_draw = _random._draw

    def next_key(self):
        return _fold_in(outer(self), index)
    _generator.Generator.next_key = next_key
    _random._draw = _batched_draw
    try:
        yield
    finally:
        _generator.Generator.next_key = outer
        _random._draw = prev_draw


@contextlib.contextmanager
def _random_guard(randomness):
    """torch's ``randomness='error'``: a random draw inside the mapped function is an error.
    The draw goes through ``Generator.next_key``; it is swapped for a refusing one while the
    function is traced (outermost 'error' vmap only; restored on exit, also on errors)."""
    if randomness != "error" or _GUARD_DEPTH[0]:
        yield
        return
    orig = _generator.Generator.next_key

    def refuse(self):
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")
    _generator.Generator.next_key = refuse
    _GUARD_DEPTH[0] += 1
    try:
        yield
    finally:
        _GUARD_DEPTH[0] -= 1
        _generator.Generator.next_key = orig


def _none_output_mapped(out, out_dims):
    """Whether a None output (or a None element of a tuple/list output) has an out_dim that is
    not None: torch's 'must only return Tensors' ValueError."""
    if out is None:
        return out_dims is not None
    if isinstance(out, (tuple, list)):
        per = out_dims if isinstance(out_dims, (tuple, list)) and len(out_dims) == len(out) else [out_dims] * len(out)
        return any(o is None and d is not None for o, d in zip(out, per))
    return False


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Mirrors ``torch.func.vmap`` on ``jax.vmap``: maps ``func`` over dimension ``in_dims`` of
    its Tensor arguments and stacks the results along ``out_dims``.

    ``in_dims``: an int (every Tensor input), or a tuple with one entry per positional argument
    (int, None for unmapped, or a nested tuple/dict for a tree argument). ``out_dims``: an int or
    one per output (``(d,)`` for a single Tensor output means ``d``; a non-Tensor output needs
    ``None``, and comes back as it is). An in-place op on a batched input writes through to the
    caller's tensor (an input returned as-is comes back as that tensor). ``randomness``: ``'error'`` (default: a random draw inside raises
    RuntimeError), ``'same'`` (one draw shared by the batch: every example sees the same values)
    or ``'different'`` (independent draws per example, reproducible under ``manual_seed``).
    Nested vmaps combine as torch's: values differ along 'different' levels and repeat along
    'same' ones; an 'error' level anywhere raises. ``chunk_size`` is accepted and ignored.
    vmap nests, and composes with ``grad``/``jacrev``/``functional_call``.
    Raises ValueError for in_dims/out_dims that do not fit the inputs/outputs or are not ints,
    no inputs, unequal batch sizes, non-Tensor outputs with an out_dim, a batched output with
    out_dim None; IndexError for an out_dim out of range; RuntimeError for an unknown
    ``randomness``, for ``.item()``, ``.data`` of a batched tensor or data-dependent control flow
    inside the function, and for an in-place op whose other operand is batched where self is
    not (``unbatched.add_(batched)``; use the out-of-place op).
    Differs from torch: the random streams. With 'different', an in-place draw into an
    unbatched tensor made inside the function is allowed (torch raises; into a captured one or
    an unbatched argument it raises as torch). With 'same', a draw whose tensor parameters are
    batched at that level (``bernoulli``/``multinomial``/``poisson`` of a batched input,
    ``normal`` with a batched mean or std) raises RuntimeError, as torch.
    """
    _wrap.check_chunk_size(chunk_size, "vmap")
    out_dims = _bools_as_ints(out_dims)
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_out_dims_kind(out_dims, func)
        if not args:
            raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                             "are trying to vmap over a function with no inputs. The latter is unsupported.")
        prefix = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
        flat_dims = _flat_in_dims(in_dims, args, prefix)
        size = _check_inputs(args, flat_dims, prefix)
        # only Tensor leaves go through jax.vmap; other leaves (numbers, strings, modules) are
        # closed over unchanged, as torch passes non-Tensor arguments through
        leaves, treedef = _wrap.flatten(args)
        tpos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
        different = randomness == "different"

        def jax_fn(*arrs):
            if different:   # the example's index comes last (NOTE [vmap randomness])
                *arrs, index = arrs
            ls = list(leaves)
            for i, a in zip(tpos, arrs):
                ls[i] = Tensor._make(a)
            # this level's batching trace, for torch's 'same' refusal of batched draw parameters
            level = next((getattr(a, "_trace", None) for a, ax in zip(arrs, axes) if ax is not None), None)
            _state.VMAP_SAME.append(level if randomness == "same" else None)
            try:
                with _different(index) if different else contextlib.nullcontext():
                    out = func(*_wrap.unflatten(treedef, ls), **kwargs)
            finally:
                _state.VMAP_SAME.pop()
            _check_unbatched_writes(ls, tpos, arrs, axes, func)
            if single_dim and isinstance(out, Tensor):
                out = (out,)    # torch reads out_dims=(d,) for one Tensor output as d
                unwrap[0] = True
            if _none_output_mapped(out, out_dims):   # None is no pytree leaf: check it here, as torch
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got "
                                 f"type {type(None)}. Did you mean to set out_dims= to None for output?")
            dims = _check_out_dims(out_dims, out, func)
            # a non-Tensor output is allowed where its out_dim is None (torch returns it as it is):
            # it leaves the mapped function as None and is put back afterwards
            flat, odef = _wrap.flatten(out)
            for i, (leaf, d) in enumerate(zip(flat, dims)):
                if not isinstance(leaf, Tensor):
                    if d is not None:
                        raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got "
                                         f"type {type(leaf)}. Did you mean to set out_dims= to None for output?")
                    static[i] = leaf
                    flat[i] = None
            if static:
                out = _wrap.unflatten(odef, flat)
                rebuild[0] = odef
            # in-place writes into batched inputs: their new values leave the mapped function (batch
            # dim first) and are written back into the caller's tensors afterwards, as torch's
            # in-place ops on BatchedTensors write through to the input
            written[:] = [k for k, i in enumerate(tpos) if axes[k] is not None and ls[i]._st.array is not arrs[k]]
            returned[:] = [(j, k) for j, leaf in enumerate(flat) for k in written if leaf is ls[tpos[k]]]
            out_leaf_dims[:] = dims
            return _wrap.to_arrays(out), [ls[tpos[k]]._value for k in written]
        axes = tuple(flat_dims[i] for i in tpos)
        arrays = tuple(leaves[i]._value for i in tpos)
        if different:
            axes, arrays = axes + (0,), arrays + (np.arange(size, dtype=np.uint32),)
        single_dim = isinstance(out_dims, tuple) and len(out_dims) == 1
        unwrap, static, rebuild, written, returned, out_leaf_dims = [False], {}, [None], [], [], []
        run_dims = out_dims[0] if single_dim else out_dims

        def run(*arrs):
            out, extra = jax_fn(*arrs)
            return ((out[0] if unwrap[0] else out) if single_dim else out), extra
        try:
            with _random_guard(randomness):
                out, extra = _wrap.run_jax(jax.vmap(run, in_axes=axes, out_axes=(_wrap.keep_order(run_dims), 0)),
                                           *arrays)
        except ValueError as e:
            if "got axis spec None but output was batched" in str(e):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                 "out_dim is None") from None
            raise
        out = _wrap.to_tensors(out)
        for k, arr in zip(written, extra):
            leaves[tpos[k]].copy_(Tensor._make(arr).movedim(0, axes[k]))
        if static:
            flat = _wrap.flatten(out)[0] if not isinstance(out, Tensor) else [out]
            # (the None placeholders are empty subtrees: rebuild from the recorded structure)
            it = iter(flat)
            n = rebuild[0].num_leaves
            full = [static[i] if i in static else next(it) for i in range(n)]
            out = _wrap.unflatten(rebuild[0], full)
        if returned:
            # an input returned as-is is the caller's tensor itself (a view of it for another out_dim)
            flat, odef = _wrap.flatten(out)
            for j, k in returned:
                src, d = leaves[tpos[k]], out_leaf_dims[j]
                if d % src.dim() == axes[k] % src.dim():
                    flat[j] = src
                else:
                    flat[j] = src.movedim(axes[k], d)
            out = _wrap.unflatten(odef, flat)
        return out
    return _wrap.recorded(wrapper, func, grad_kind=False)


def _check_unbatched_writes(leaves, tpos, arrays, axes, func):
    """torch's RuntimeError for an in-place op that writes a per-example (batched) value into an
    argument mapped with ``in_dims=None``: that argument's array was replaced by a tracer of a
    transform below the caller's own (a batched value), where an unbatched argument may only
    hold values of the level it came from."""
    for i, a, d in zip(tpos, arrays, axes):
        new = leaves[i]._st.array
        if d is not None or new is a or not isinstance(new, jax.core.Tracer):
            continue
        if not isinstance(a, jax.core.Tracer) or getattr(new, "_trace", None) is not getattr(a, "_trace", None):
            raise RuntimeError(f"vmap({_name(func)}, ...): an in-place operation wrote a value that varies over the "
                               "vmapped dimension into an input that is not vmapped over (in_dims=None). Use the "
                               "out-of-place operation instead, or vmap over that input too.")

