"""Modules as functions of their state: ``functional_call``, ``stack_module_state`` (torch.func's)
and ``to_jax`` (a Module as a pure JAX function of a parameter pytree)."""
from __future__ import annotations

import contextlib

import jax

import tracegrad

from .._tensor.tensor import Tensor
from . import _wrap

_MISSING = object()


def _owner(module, name):
    """``(submodule, attribute)`` for a dotted state name such as ``'layers.0.weight'``.
    AttributeError (torch's message) for a path through a submodule that does not exist."""
    prefix, _, attr = name.rpartition(".")
    mod = module
    # as torch's accessor: an empty prefix ('.weight') is the module itself, each step of a
    # path must reach a Module (TypeError naming the path so far: 'bias.x' walks through a
    # Parameter), and the last name may not be empty ('0.', '': KeyError)
    walked = []
    for p in prefix.split(".") if prefix else ():
        if not hasattr(mod, p):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{p}`")
        mod = getattr(mod, p)
        walked.append(p)
        if not _is_module(mod):   # duck-typed: func sits below nn (DESIGN 2)
            raise TypeError(f"submodule `{'.'.join(walked)}`: {mod!r} is not an instance of torch.nn.Module")
    if not attr:
        raise KeyError('tensor name can\'t be empty string ""')
    return mod, attr


def _is_module(obj):
    """A Module by what it holds (its parameter, buffer and submodule dicts)."""
    return all(isinstance(obj.__dict__.get(k) if hasattr(obj, "__dict__") else None, dict)
               for k in ("_parameters", "_buffers", "_modules"))


def _current(module, name):
    """What ``name`` holds now (``_MISSING`` if nothing)."""
    mod, attr = _owner(module, name)
    for store in (mod._parameters, mod._buffers):
        if attr in store:
            return store[attr]
    return mod.__dict__.get(attr, _MISSING)


def _swap(module, name, value):
    """Put ``value`` where ``name`` lives (``_parameters``, ``_buffers`` or a plain attribute)
    and return what was there (``_MISSING`` if nothing); ``value=_MISSING`` removes it."""
    mod, attr = _owner(module, name)
    for store in (mod._parameters, mod._buffers):
        if attr in store:
            old = store[attr]
            if value is _MISSING:
                del store[attr]
            else:
                store[attr] = value
            return old
    # not registered state: a plain attribute, set and removed in the instance dict (what
    # torch's setattr/delattr do for it) without Module.__setattr__'s registration rules
    old = mod.__dict__.get(attr, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor) and value is not _MISSING:
        raise TypeError(f"attribute `{attr}`: {old!r} is not an instance of torch.Tensor")
    if value is _MISSING:
        mod.__dict__.pop(attr, None)
    else:
        mod.__dict__[attr] = value
    return old


def _state_names(module):
    names = [n for n, _ in module.named_parameters(remove_duplicate=False)]
    return names + [n for n, _ in module.named_buffers(remove_duplicate=False)]


def _untie(module, given):
    """torch's ``tie_weights=True``: a value given for one name of a tied group (one tensor
    registered under several names) is used for every name of the group."""
    groups: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), set()).add(name)
    tied = {n: g for g in groups.values() if len(g) > 1 for n in g}
    out = dict(given)
    for name in [n for n in given if n in tied]:
        names = tied[name]
        if len(names & set(given)) > 1 and len({id(given[n]) for n in names if n in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
        for n in names:
            out[n] = given[name]
    return out


@contextlib.contextmanager
def reparametrize(module, values, tie_weights=True, strict=False):
    """Swap ``values`` (name -> Tensor) into ``module`` for the duration of the block; the
    originals come back on exit, also when the block raises. Yields a dict that, after the
    block, holds name -> new tensor for every name the block reassigned (``self.foo = ...``)."""
    if tie_weights:
        values = _untie(module, values)
    if strict:
        valid = _state_names(module)
        unexpected = sorted(k for k in values if k not in valid)
        missing = sorted(k for k in valid if k not in values)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(msgs))
    for v in values.values():
        if v is not None and not isinstance(v, Tensor):
            raise TypeError(f"{v!r} is not an instance of torch.Tensor")
    originals = []
    written: dict = {}
    own = _concrete_state(module)
    try:
        for name, v in values.items():
            originals.append((name, _swap(module, name, v)))
        yield written
    finally:
        for name, old in reversed(originals):
            now = _current(module, name)
            if now is not values[name]:
                written[name] = now
            _swap(module, name, old)
        leaked = _restore_leaks(module, own)
    if leaked:
        raise RuntimeError(
            f"tracegrad.func.functional_call: {module._get_name()} wrote to its own {', '.join(leaked)} inside a "
            "tracegrad.func/JAX transform (e.g. BatchNorm running statistics in train mode); a transformed "
            "function cannot write traced values to tensors outside it. Call module.eval() (or build "
            "BatchNorm with track_running_stats=False) for the transformed call. The module's values were restored.")


def _concrete_state(module):
    """The module's own parameters/buffers holding concrete arrays: name -> (tensor, array)."""
    state = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    return {n: (t, t._st.array) for n, t in state if t is not None and not isinstance(t._st.array, jax.core.Tracer)}


def _restore_leaks(module, own):
    """When a transform overwrote module state with tracers (they would escape the trace and
    break every later use), put back every array the call changed, so the failed call leaves
    the module as it was; returns the names that held tracers."""
    leaked = [name for name, (t, _) in own.items() if isinstance(t._st.array, jax.core.Tracer)]
    if leaked:
        for t, array in own.values():
            if t._st.array is not array:
                t._st.array = array
                t._st.gen += 1
    return leaked


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Mirrors ``torch.func.functional_call``: calls ``module(*args, **kwargs)`` with its
    parameters and buffers replaced by the given tensors (by dotted name, e.g. ``'0.weight'``),
    restoring the originals afterwards (also on exceptions).

    ``parameter_and_buffer_dicts``: a dict, or a tuple/list of dicts with disjoint keys. Names
    not given keep the module's own tensors (``strict=True`` makes that, and unknown names, a
    RuntimeError). ``args``: a tuple, or a single argument. ``tie_weights``: a value for one
    name of tied weights is used for all of them.
    Raises ValueError for repeated keys across dicts, non-dict arguments, or differing values
    for tied names; RuntimeError for missing/unexpected keys with ``strict``.
    Works on tracer-holding Tensors, so it composes with ``vmap``/``grad`` (the per-sample
    gradient and ensembling recipes).
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        dicts = (parameter_and_buffer_dicts,)
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        dicts = tuple(parameter_and_buffer_dicts)
        values = {k: v for d in dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with reparametrize(module, values, tie_weights=tie_weights, strict=strict) as written:
        out = module(*args, **(kwargs or {}))
    # as torch: a tensor the call assigned to a given name (``self.foo = self.foo + 1``) replaces
    # that name's entry in the caller's dict
    for d in dicts:
        for name in d.keys() & written.keys():
            d[name] = written[name]
    return out


def stack_module_state(models):
    """Mirrors ``torch.func.stack_module_state``: ``(params, buffers)``, dicts mapping each
    state name to the models' tensors stacked on a new leading dim (stacked parameters are
    new leaves requiring grad when the originals do), for model ensembling with ``vmap``.
    Raises RuntimeError for no models, mixed train/eval modes, different classes, or a
    parameter that requires grad in some models only."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        per_model = [dict(named(m)) for m in models]
        out = {}
        for k in per_model[0]:
            ts = [d[k] for d in per_model]
            flags = {t.requires_grad for t in ts}
            if len(flags) != 1:
                raise RuntimeError(f"Expected {k} from each model to have the same .requires_grad")
            s = tracegrad.stack(ts)
            out[k] = s.detach()._set_requires_grad(True) if flags == {True} else s
        return out
    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())


def to_jax(module):
    """A Module as a pure JAX function: returns ``(params, apply)`` where ``params`` is a dict
    (dotted name -> ``jax.Array``, the module's parameters, no copy) and
    ``apply(params, *args, **kwargs)`` runs the module on those values and returns its output
    as ``jax.Array``s (a pytree mirroring the output). Arguments may be ``jax.Array``s or Tensors.

    ``apply`` is pure in ``params`` and the arguments, so it works under ``jax.jit``,
    ``jax.grad``, ``jax.vmap`` and with optax. Buffers are read from the module on each call
    (current values); writes the module makes to them during ``apply`` (BatchNorm's running
    stats in train mode) are discarded, so use ``eval()`` or ``functional_call`` with explicit
    buffers for those. Random draws (dropout in train mode) under ``jax.jit`` are made once at
    trace time; call ``module.eval()`` for deterministic functions.
    Has no torch counterpart (torch.func.functional_call is the closest).
    """
    params = {k: v._value for k, v in module.named_parameters()}

    def apply(params, *args, **kwargs):
        values = {k: Tensor._make(v._value) for k, v in module.named_buffers()}
        values.update(_wrap.to_tensors(dict(params)))
        out = functional_call(module, values, _wrap.to_tensors(args), _wrap.to_tensors(kwargs))
        return _wrap.to_arrays(out)
    return params, apply
