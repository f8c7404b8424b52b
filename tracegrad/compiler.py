"""``tracegrad.compile``: a torch-style function (a whole training step, or a forward) as one
jitted XLA program per call, with eager's observable behaviour (DESIGN 2.5).

The first call of a compiled function runs eagerly: lazily created state (``.grad``,
optimizer state) comes into being as in eager. The second call traces the function once
(``_lowering.trace``): every outside tensor it touches becomes a program input/output,
written back into the same storages after each call. Later calls with the same guards run
the program alone: no Python per op.

Guards (checked on every call, a few microseconds): argument structure, shapes, dtypes and
Python values, whether a tensor argument is a leaf and a view; grad mode, autocast, anomaly mode, the default dtype and the active
``saved_tensors_hooks``;
``_state.STRUCTURE`` (the set of hooks, modules' parameters rebound, ``requires_grad_``
flips; a set of hooks that comes back brings its programs back: NOTE [hook sets come back]); the ``training`` flag of every module the trace called;
which ``.grad``s are None; that every
lifted storage is still used by someone (``p.data = ...``, an optimizer's
``load_state_dict``); optimizer options other than ``lr`` (``lr`` itself is a traced input, so
an lr scheduler never causes a new trace); the Python numbers, flags, small dicts and NumPy
arrays the trace read from modules, objects and globals (``_lowering/guards.value_guards``).
A failed guard traces again (at most
``cache_size_limit`` programs per function, then it runs eagerly with a warning).

What one program cannot reproduce -- Python reading a tensor's value (``.item()``,
``if loss > 1``), a user hook that changes Python state (a pure one -- a gradient clamped, an
output scaled, weight_norm's recomputed weight -- is traced into the program, the Python values
it reads guarded: NOTE [hooks in a trace]), boolean-mask indexing (reading
``x[mask]``; writing one value through one mask is a select), a custom optimizer's ``step``
rebinding a Python value in its state or attributes or changing a list it keeps, a hook
registered or removed inside, ``requires_grad_`` leaving the flag of a tensor from outside changed, a
Python attribute set on a tensor from outside (``p.steps += 1``), a layout change of a tensor from
outside (``buf.t_()``, ``unsqueeze_``, ``resize_``, ``a.data = b.data``) -- is a graph
break: with ``fullgraph=True`` it raises ``GraphBreak`` naming the file and line; otherwise
that call signature runs eagerly (one warning, counted in ``stats()``). Results never differ
from eager silently. A function that raises while traced but not eagerly (an op that works
eagerly only, such as building a sparse COO tensor) is a graph break too: with
``fullgraph=True`` its error is raised, with a note, and nothing of the call has run.
"""
from __future__ import annotations

import collections
import copy
import functools
import inspect
import itertools
import math
import os
import types
import weakref

import jax
import numpy as np

from . import _autocast, _state
from ._x64 import x64_scope
from ._lowering.exc import InvalidBackend, RecompileError
from ._lowering import deferred_step as _deferred_step, fused as _fused, fused_optim as _fused_optim, hyper as _hyper
# NOTE [_guard_len's import]: a merge lost this import; the NameError it raised while tracing
# counted as the user's function raising, so every step reading opt.state_dict() ran eagerly
from ._lowering import guards as _guards, orphans as _orphans
from ._lowering.capture import GraphBreak
from ._lowering.warned import Relocated, code_of, say
from ._lowering.inductor_options import BOOLS as _OPTION_BOOLS, GROUPS as _OPTION_GROUPS, NAMES as _OPTION_NAMES
from ._lowering.call_tree import PartialArg, container_instance, fill_arg_boxes, flatten, ordered_args
from ._compile_callbacks import CallbackTrigger, callback_handler
from ._lowering.guards import unread_identity
from ._lowering.region import (ARG_IS_STATE, SHARED_VIEWS, CallOnlyBreak, ContainerChanged, ValueCheckFailed,
                               aliased_args, classify_args, first_of)
from ._lowering.numpy_args import NumpyValuesRead
from ._lowering.trace import Plan, Retrace, trace_region
from ._lowering import result_objects
from ._tensor import torch_function as _torch_function
from ._tensor.meta import is_meta
from ._api.sparse_coo import SparseCooTensor
from ._tensor.tensor import Tensor
from .autograd import grad_mode

__all__ = ["compile", "reset", "stats", "GraphBreak", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "disable", "allow_in_graph", "cache_size_limit", "accumulated_cache_size_limit", "CompiledFunction", "set_stance",
           "cudagraph_mark_step_begin", "list_backends",
           "nested_compile_region", "assume_constant_result"]

cache_size_limit = 8
# ``torch._dynamo.config.error_on_recompile`` and ``suppress_errors`` (set through tracegrad._dynamo.config):
# a call that needs another program raises RecompileError; a user backend that raises runs the
# function eagerly from then on (``_dynamo_backends.py``) instead of raising BackendCompilerFailed
error_on_recompile = False
suppress_errors = False
# NOTE [dynamic sizes]: torch.compile makes a size that changes between calls symbolic (with
# ``dynamic=True``, for the dims ``mark_dynamic`` names, or automatically after a second size),
# so a varying batch or sequence length never reaches its recompile limit. An XLA program has
# static shapes: each size is traced into a program of its own. Where the user asked for
# dynamic sizes (``compile(dynamic=True)``; ``mark_dynamic``/``maybe_mark_dynamic`` on an
# argument, dims ``mark_static`` names excepted), a program for a call that differs from a
# cached one only in those sizes is not a recompile: it counts toward
# ``accumulated_cache_size_limit`` (torch's bound on all of a function's programs), not toward
# ``cache_size_limit``. Without the ask a size change is one, as under torch's
# ``dynamic=False``, and the limit's warning names the arguments (``_changing_numbers``).
accumulated_cache_size_limit = 256
# NOTE [breaks under a structure]: a graph break is remembered for the signature it broke at
# (and, at one place for two signatures, for the function) together with the structure of the
# moment (``_state.STRUCTURE[0]``: the hooks registered, the modules' layout). Much of what
# breaks a trace is structure: a full backward hook (its module registers tensor hooks on every
# call), a hook that reads a value. Remembered for the signature alone, a hook present for one
# call sent every later call eagerly, the hook long removed. Under another structure the call
# is traced again (the programs the signature had before the break come back first), until
# ``cache_size_limit`` traces of it broke; under one it broke at, it runs eagerly without a new
# trace. Cost: one set lookup on a call that runs eagerly for a break, none on a program's run.
# The structure an eager run of the function leaves is one it broke under too: a function that
# rebinds a buffer or registers a hook itself changes the structure on every eager call, and
# must not be traced again for it.
# NOTE [dead programs]: a program whose outside state is gone for good (its storage held by
# nothing but programs: ``optimizer.load_state_dict`` put new state tensors in, a model's
# Parameters were rebound by ``load_state_dict(assign=True)``) can never run again; its region
# marks itself dead at its guard check (the orphan guard, guard_code.py) and is dropped. torch
# drops a cache entry whose guarded object died too, and its recompile limit counts the live
# entries only. Counting the dead ones sent a loop that rolls back to a checkpoint now and then
# (``opt.load_state_dict(copy.deepcopy(ck))``) into eager for good after ``cache_size_limit``
# rollbacks, each of which retraces once. They still count toward
# ``accumulated_cache_size_limit``, the bound on all programs traced, so a step whose state is
# new on every call still stops tracing there.
_EAGER = "eager"
_ALL: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()
# ``torch._dynamo.utils.counters``, which programs read to count graph breaks and compiled
# graphs: ``["graph_break"][reason]``, ``["stats"]["unique_graphs"]``, ``["frames"]["total"|"ok"]``
# (one frame: one traced signature). Never cleared by ``reset()``, as torch's.
COUNTERS = collections.defaultdict(collections.Counter)
_ORDER = itertools.count()


class _Broke(set):
    """The structures a signature's graph break holds under (NOTE [breaks under a structure]);
    ``traced``: how many traces broke."""
    traced = 0


class _Programs:
    """Every compiled function's program cache, as one entry of ``_state``'s cache registry:
    ``_state.clear_caches()`` forgets them as ``reset()`` does; ``len`` counts cached entries."""

    def clear(self):
        reset()

    def __len__(self):
        return sum(len(cf._cache) for cf in list(_ALL))


_state.register_cache("compiler.programs", _Programs())
# torch's debugging backends (eager, aot_eager and its partitioner variants) all mean "compile"
_DEBUG_BACKENDS = ("eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner",
                   "jax", "xla")
_BACKENDS = (None, "inductor", "cudagraphs") + _DEBUG_BACKENDS
# A user backend (a callable, or a name given to torch._dynamo.register_backend) gets FX graphs,
# not XLA: _dynamo_backends.py (above this layer: it needs fx) puts (resolve, its compiled class) here.
USER_BACKENDS = [None]
USER_BACKEND_TAGS = {}   # name -> tags of each backend registered by name (``list_backends``)
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "lite")


class CompiledFunction:
    """The callable ``tracegrad.compile(fn)`` returns (``functools.wraps`` of ``fn``).

    Attributes: ``stats`` -- calls, traces, eager calls and the graph-break reasons."""

    _tracegrad_state_is_captured = True   # its Python state is tracked by compile (_lowering/pystate.py)

    def __init__(self, fn, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,
                 disable=False, recompile_limit=None):
        functools.update_wrapper(self, fn, updated=())
        self._fn = fn
        self.recompile_limit = recompile_limit    # None: the global ``cache_size_limit``
        self._label = getattr(fn, "__qualname__", None) or type(fn).__name__   # the profiler's event name
        self.fullgraph, self.disabled = bool(fullgraph), bool(disable)
        self.dynamic, self.backend, self.mode, self.options = dynamic, backend, mode, options
        self._cache = {}
        self._plans = {}
        self._programs = 0          # traced programs of this function (torch: per code object)
        self._sized = 0             # ... of them, those for new dynamic sizes (NOTE [dynamic sizes])
        self._dead = 0              # ... of them, those dead for good (NOTE [dead programs])
        self._containers = frozenset()   # NOTE [data container arguments] (_lowering/call_tree.py)
        self._containers_refused = False
        # NOTE [numpy arguments] (_lowering/numpy_args.py): the positions of NumPy arguments read
        # by value, per call context (``_numpy_context``)
        self._numpy_baked = {}
        self._instances_run = weakref.WeakSet()   # NOTE [module arguments]: run eagerly once each
        self._warned = False
        self._break_sites = {}      # file:line of a graph break -> signatures that broke there
        self._always_eager = False
        self._always_tokens = _Broke()  # the structures under which ``_always_eager`` holds
        self._broke = {}            # signature -> (structures it broke under, its programs): NOTE [breaks under a structure]
        self.stats = {"calls": 0, "traces": 0, "eager_calls": 0, "graph_breaks": []}
        self._order = next(_ORDER)
        _ALL.add(self)

    def __get__(self, obj, objtype=None):   # decorating a method keeps binding
        return self if obj is None else functools.partial(self, obj)

    def __deepcopy__(self, memo):
        return copy_compiled(self, memo, recompile_limit=self.recompile_limit)

    def __repr__(self):
        """``<function step at 0x...>`` for a compiled function, as torch shows it: torch.compile
        returns a function wrapping ``fn`` (with ``fn``'s name), and a notebook cell ending
        in the compiled step displays that text. Other callables keep the object's repr."""
        if isinstance(self._fn, (types.FunctionType, types.MethodType)):
            return f"<function {self.__qualname__} at {id(self):#x}>"
        return object.__repr__(self)

    def _repr_pretty_(self, p, cycle):
        """IPython's display (a cell ending in the compiled step): what IPython shows for torch's
        wrapper function, ``<function module.name(signature)>``."""
        if not isinstance(self._fn, (types.FunctionType, types.MethodType)):
            p.text(repr(self))
            return
        name = self.__qualname__
        module = getattr(self, "__module__", None)
        if module and module != "builtins":
            name = f"{module}.{name}"
        try:
            name += str(inspect.signature(self._fn))
        except (TypeError, ValueError):     # a signature Python cannot tell
            pass
        p.text(f"<function {name}>")

    def __call__(self, *args, **kwargs):
        st = self.stats
        st["calls"] += 1
        stance = _STANCE[0]
        if self.disabled or _state.CAPTURE[0] is not None or stance == "force_eager":
            return self._fn(*args, **kwargs)     # nested: part of the outer trace
        if _state.FORWARD_AD[0] is not None:
            # a forward-AD dual level is open: tangents propagate op by op in eager only
            return self._eager(args, kwargs)
        prof = _state.PROFILER[0]
        if prof is not None and prof.sees_ops:
            # a FlopCounterMode counts each op the function runs; a program would hide them
            reason = "a FlopCounterMode is active (it counts every op the function runs)"
            if self.fullgraph:
                raise GraphBreak(reason)
            return self._break(None, reason, None, args, kwargs)
        if _torch_function.is_torch_function_mode_enabled():
            # a TorchFunctionMode sees each call of the eager function; a program would skip it
            reason = "a TorchFunctionMode is active (it must see every call the function makes)"
            if self.fullgraph:
                raise GraphBreak(reason)
            return self._break(None, reason, None, args, kwargs)
        if stance != "default" and stance not in _STANCES:
            raise RuntimeError(f"tracegrad.compiler.set_stance: invalid stance {stance!r}; "
                               f"use one of {', '.join(_STANCES)}")
        if self._always_eager and self._still_breaks(self._always_tokens):
            return self._eager_under(self._always_tokens, args, kwargs)
        leaves, treedef, kinds, key = _signature(args, kwargs, self._containers, self._numpy_baked)
        entries = self._cache.get(key)
        if _under_transform(leaves) and _reads_grad_state(self._fn, self._cache):
            return self._fn(*args, **kwargs)    # NOTE [compiled functions inside func transforms]
        if entries is None and self._programs and not self._containers_refused:
            renewed = _renewed_containers(key, self._cache) - self._containers
            if renewed:      # NOTE [data container arguments]: a new batch object, say
                self._adopt_containers(renewed)
                leaves, treedef, kinds, key = _signature(args, kwargs, self._containers, self._numpy_baked)
                entries = self._cache.get(key)
        if entries is _EAGER:
            tokens, kept = self._broke.get(key, ((), None))
            if not tokens:
                return self._eager(args, kwargs)
            if self._still_breaks(tokens):
                return self._eager_under(tokens, args, kwargs)
            entries = kept      # NOTE [breaks under a structure]: the programs it had, if any
            if kept is None:
                del self._cache[key]
            else:
                self._cache[key] = kept
        aliased = aliased_args(leaves, kinds)
        shared = aliased is SHARED_VIEWS    # views of one tensor: a program that writes neither
        if aliased is not None and not shared:   # this call only: the next one may pass separate tensors
            return self._break(None, aliased, None, args, kwargs)
        if entries:
            for r in entries:
                if r.check() and (not (r.contiguous_args or r.layout_args) or r.args_contiguous(leaves)):
                    if shared and r.arg_writes:
                        return self._break(None, aliased, None, args, kwargs)
                    same = unread_identity(r.unread, leaves, kinds) if r.unread else None
                    if same is not None:       # NOTE [tensors compared by identity]: this call only
                        return self._break(None, ARG_IS_STATE.format(same), None, args, kwargs)
                    prof = _state.PROFILER[0]
                    r.reused = True
                    try:
                        if prof is not None:   # one profiler event per run of the compiled program
                            out = prof.compiled_call(self._label, r.run, leaves, True, (args, kwargs))
                        else:
                            out = r.run(leaves, True, (args, kwargs))
                    except ValueCheckFailed as e:
                        return self._check_failed(args, kwargs, e.reason)
                    return fill_arg_boxes(out, (args, kwargs)) if r.arg_boxes else out
            if any(r.dead for r in entries):
                self._drop_dead(entries)
        broke = self._broke.get(key)
        if broke is not None and self._still_breaks(broke[0]):    # back to a structure it broke under
            if entries:       # the programs traced since, for when the structure changes again
                self._broke[key] = (broke[0], entries)
            self._cache[key] = _EAGER
            return self._eager_under(broke[0], args, kwargs)
        if _state.SAVED_HOOKS and getattr(_state.SAVED_HOOKS[-1][0], "_tracegrad_counts_saves", False):
            # inside a non-reentrant checkpoint: its hooks match the forward's saved tensors
            # with the recomputation's one by one, and a compiled region keeps its residuals
            # itself (none reach the hooks), so the forward and the recomputation would save
            # different tensors. Eager in both, uncached (the hooks are new every checkpoint).
            return self._break(None, "called inside a non-reentrant checkpoint (the recomputation "
                               "must save the tensors the forward saved)", None, args, kwargs)
        if st["calls"] == 1 and not self.fullgraph:
            # the first call runs eagerly, so lazily created state exists before tracing (with
            # fullgraph=True it is traced, so a graph break raises on the first call as in torch;
            # state it creates is written back and the next call traces again with it)
            return self._eager(args, kwargs)
        if self._programs and stance != "default":
            if stance == "eager_on_recompile":
                return self._fn(*args, **kwargs)
            if stance == "fail_on_recompile":
                code = getattr(self._fn, "__code__", None)
                raise RuntimeError("Detected recompile when torch.compile stance is 'fail_on_recompile'. "
                                   f"function name: '{getattr(self._fn, '__qualname__', self._fn)}'"
                                   + (f", filename: '{code.co_filename}', line number: {code.co_firstlineno}"
                                      if code is not None else ""))
        limit = cache_size_limit if self.recompile_limit is None else self.recompile_limit
        # not a recompile in torch: new sizes it was asked to treat as dynamic, or another
        # instance of a module or optimizer argument (NOTE [module arguments]: not counted,
        # but refused once the programs counted, those of instances made for one call among
        # them, reach the limit)
        new_sizes = entries is None and self._programs and self._new_sizes_only(key, leaves)
        instance = not new_sizes and self._programs and (
            bool(self._other_instances(key)) if entries is None else self._restructured_instance(key, entries))
        sized = new_sizes or instance
        if error_on_recompile and self._programs and not sized:
            # torch raises where it would compile again: not for sizes it was asked to make
            # dynamic, nor another instance of a module argument (neither recompiles in torch)
            code = getattr(self._fn, "__code__", None)
            raise RecompileError(f"Recompiling function {getattr(self._fn, '__name__', self._fn)}"
                                 + (f" in {code.co_filename}:{code.co_firstlineno}" if code is not None else "")
                                 + " (torch._dynamo.config.error_on_recompile is set: call it with the "
                                   "arguments its programs were traced for, or unset the flag)")
        # not remembered per key: arguments that differ on every call would fill the cache
        if self._programs - self._sized - self._dead >= limit and not new_sizes:
            return self._break(None, f"guards failed {limit} times (cache_size_limit)"
                               + _changing_numbers(key, self._cache, args, kwargs, self._containers)
                               + _changing_values(entries), None, args, kwargs)
        if self._programs >= accumulated_cache_size_limit:
            return self._break(None, f"{self._programs} programs traced (accumulated_cache_size_limit)",
                               None, args, kwargs)
        if instance and not self.fullgraph and self._first_run_of_instances(key):
            # as the function's own first call: the state the instances create lazily (an
            # optimizer's) exists before the trace, so one program serves them, not two
            return self._eager(args, kwargs)
        if any(isinstance(a, Tensor) and is_meta(a) for a in leaves):
            return self._break(key, "a meta tensor argument has no data for a compiled program to run on (ops on "
                               "meta tensors only infer shapes, eagerly)", None, args, kwargs)
        prof = _state.PROFILER[0]
        if prof is not None:       # the traced run is one event too (its ops are traced, not timed)
            return prof.compiled_call(self._label, self._trace, key, args, kwargs, leaves, treedef, kinds, sized)
        return self._trace(key, args, kwargs, leaves, treedef, kinds, sized)

    def _adopt_containers(self, classes):
        """Flatten the instances of ``classes`` from now on (NOTE [data container arguments]);
        the programs keyed by one of their instances are dropped (no later key can match them)."""
        self._containers |= classes
        for k in [k for k in self._cache if any(type(_part_object(p)) in classes for p in k[1])]:
            del self._cache[k]
            self._plans.pop(k, None)

    @staticmethod
    def _still_breaks(tokens) -> bool:
        """Whether a graph break recorded under the structures ``tokens`` (a ``_Broke``) still
        holds now (NOTE [breaks under a structure]): the structure is one of them, or the code
        broke while tracing under so many that it breaks whatever they are."""
        return _state.STRUCTURE[0] in tokens or tokens.traced >= cache_size_limit

    def _drop_orphans(self, replaced):
        """Forget the programs that read a replaced module or optimizer only the programs hold
        now (NOTE [objects only programs hold] in _lowering/orphans.py), and take it and its
        parameters out of the plans, so nothing of this compiled function keeps it alive. A
        program keyed by such an object (an argument: NOTE [module arguments]) is forgotten
        with its key."""
        lists = [v for v in self._cache.values() if v is not _EAGER]
        keys = list({id(k): k for d in (self._cache, self._plans, self._broke) for k in d}.values())
        # a ``(class, object)`` part refers to the object (a ``_Same`` one is left out: alive)
        parts = [p for k in keys for p in k[1] if type(p) is tuple and _part_object(p) is not None]
        dead, refs = _orphans.dead_regions([r for v in lists for r in v], list(self._plans.values()), replaced,
                                           parts)
        if not refs:
            return
        gone = {id(ref()) for ref in refs}
        for k in keys:
            if any(id(_part_object(p)) in gone for p in k[1]):
                for r in self._cache.pop(k, None) or ():
                    if r is not _EAGER and r not in dead:
                        dead.append(r)
                self._plans.pop(k, None)
                self._broke.pop(k, None)
        owned = {id(p) for ref in refs for p in getattr(ref(), "parameters", lambda: ())()}
        state = any(_holds_a_tensor(ref()) for ref in refs)
        for r in dead:
            r.dead = True
            r.state_died = r.state_died or state
        for v in lists:
            self._drop_dead(v)
        for p in self._plans.values():
            p.optimizers = [o for o in p.optimizers if id(o) not in gone]
            p.owners = {k: t for k, t in p.owners.items() if k not in owned}

    def _drop_dead(self, entries):
        """Forget the programs of ``entries`` (one key's) whose state is gone for good (NOTE
        [dead programs]). A key none of whose programs ran again (its object made anew for each
        call: ``step(model, nn.MSELoss(), x, y)``, a global ``loss_fn`` made in the loop) traced
        for one call: such programs count toward ``cache_size_limit`` as recompiles, dead or
        exempt (NOTE [module arguments]), or each call would trace until
        ``accumulated_cache_size_limit``."""
        # NOTE [programs whose state died]: a key whose programs died with the tensors they
        # read (an optimizer's state loaded from a fresh copy, a new model's parameters) is no
        # object made per call that no program can serve: torch reads such tensors as graph
        # inputs (no recompile), so its programs are dropped uncounted as dead ones (NOTE
        # [dead programs]); one that died with a tensorless object only (a loss module made
        # for each call) still counts
        served = any(r.reused or r.state_died for r in entries)
        for r in entries:
            if not r.dead:
                continue
            sized = getattr(r, "sized", False)
            if served and not sized:
                self._dead += 1
            elif not served and sized:
                self._sized -= 1
        entries[:] = [r for r in entries if not r.dead]

    # NOTE [module arguments]: torch 2.13 traces the parameters and buffers of a built-in
    # nn.Module as graph inputs and guards the module by its class and what the trace reads,
    # so a compiled function called with another instance of a module class (a block function
    # run over each layer of a model, a step given a model made again in a notebook) is not a
    # recompile. Here a module or optimizer argument is keyed by identity: its tensors are
    # the program's state, read by identity. Each instance has a program of its own, but one
    # for a call that differs from a cached key only in such instances counts toward
    # ``accumulated_cache_size_limit``, not ``cache_size_limit`` (twelve layers sent the
    # function eagerly at the ninth, with torch's limit warning); and the instances the other
    # keys were traced for are checked as replaced objects (NOTE [objects only programs
    # hold]): a model made again that only this function's keys and programs hold is
    # forgotten with its programs (they can never match again), not kept alive. An instance's
    # first call runs eagerly, as the function's own first call does: an optimizer's lazily
    # made state then exists when it is traced (one program, not two), and an object made for
    # each call (``step(model, nn.MSELoss(), x, y)``) is never traced for a program no call
    # could run again. Programs of a key none of whose programs ran again count toward
    # ``cache_size_limit`` all the same (``_drop_dead``).
    def _other_instances(self, key) -> dict:
        """id -> object: the module and optimizer arguments of the cached keys that differ from
        ``key`` only in such arguments, each another instance of the class ``key`` has there;
        empty when no cached key does."""
        found = {}
        for _, olds in self._instance_keys(key, list(self._cache) + list(self._plans)):
            found.update((id(o), o) for o in olds)
        return found

    # NOTE [structure changes over instances]: ``_state.STRUCTURE`` is one token for the whole
    # process (a hook registered, a parameter rebound anywhere), so a block function with a
    # program per layer (NOTE [module arguments]) misses on every layer after one hook is
    # registered on one of them: ten layers traced ten programs again, each counted as a
    # recompile, and the function went eagerly at the limit for good -- torch 2.13, guarding
    # the argument's hooks and parameters, recompiles once. The first key traced again under
    # a new token counts; another instance's key traced again under that token (its own
    # programs traced under another one) is that same recompile, not counted, as a new
    # instance is not. A key that fails under the token its programs were traced with (its
    # layer's own attribute changes every call) still counts every time.
    def _restructured_instance(self, key, entries) -> bool:
        """Whether ``key``'s programs (``entries``, none of which holds) were all traced under
        another structure token than now, and another instance's key already has a counted
        program traced under the current one (NOTE [structure changes over instances])."""
        token = _state.STRUCTURE[0]
        if not entries or any(r.structure == token for r in entries):
            return False
        for other, _ in self._instance_keys(key, list(self._cache)):
            regions = self._cache[other]
            if regions is not _EAGER and any(r.structure == token and not getattr(r, "sized", False)
                                             for r in regions):
                return True
        return False

    def _instance_keys(self, key, keys):
        """``(other, objects)`` for each of ``keys`` that differs from ``key`` only in module or
        optimizer arguments, each another instance of the class ``key`` has there: ``objects``
        are those other instances."""
        parts = key[1]
        for other in keys:
            # parts compared as _same_part does: a frozen dataclass argument's __eq__ compares
            # the tensors it holds, and bool() of that raises
            if (len(other[1]) != len(parts) or not _same_part(other[0], key[0])
                    or not _same_part(other[2:], key[2:]) or _same_part(other, key)):
                continue
            olds = []
            for a, b in zip(parts, other[1]):
                if _same_part(a, b):
                    continue
                x, y = _part_object(a), _part_object(b)
                if x is None or y is None or type(x) is not type(y) or not _guards.holds_tensors(x):
                    break
                olds.append(y)
            else:
                yield other, olds

    def _first_run_of_instances(self, key) -> bool:
        """Whether a module or optimizer argument of ``key`` was never passed before (NOTE
        [module arguments]); remembers them, weakly. An object made for one call only is run
        eagerly: its programs could never run again."""
        objs = [o for o in map(_part_object, key[1]) if o is not None and _guards.holds_tensors(o)]
        try:
            new = [o for o in objs if o not in self._instances_run]
            for o in new:
                self._instances_run.add(o)
        except TypeError:       # not weakly referenceable, or unhashable: traced at once
            return False
        return bool(new)

    def _new_sizes_only(self, key, leaves) -> bool:
        """Whether a cached program's key differs from ``key`` only in sizes the user made
        dynamic (NOTE [dynamic sizes]): those of every dim under ``dynamic=True``, else those
        ``mark_dynamic``/``maybe_mark_dynamic`` named on this call's argument, less the dims
        ``mark_static`` named."""
        parts = key[1]
        for other, entries in self._cache.items():
            if entries is _EAGER or other[0] != key[0] or other[2:] != key[2:] or len(other[1]) != len(parts):
                continue
            for a, b, leaf in zip(parts, other[1], leaves):
                if not _same_part(a, b) and not self._dynamic_sizes_apart(a, b, leaf):
                    break
            else:
                return True
        return False

    def _dynamic_sizes_apart(self, a, b, leaf) -> bool:
        if not _sizes_apart(a, b):
            return False
        d = getattr(leaf, "__dict__", {})
        dynamic = d.get("_dynamo_dynamic_indices", set()) | d.get("_dynamo_weak_dynamic_indices", set())
        static = d.get("_dynamo_static_indices", set()) - dynamic
        rank = len(a[1])
        dims = {i % rank for i in dynamic if -rank <= i < rank}
        if self.dynamic is True:
            dims = set(range(rank)) - {i % rank for i in static if -rank <= i < rank}
        return all(x == y or i in dims for i, (x, y) in enumerate(zip(a[1], b[1])))

    def _eager(self, args, kwargs):
        self.stats["eager_calls"] += 1
        _IN_COMPILED[0] += 1      # ``is_compiling()`` is True there, as in torch's compiled frames
        try:
            with Relocated(code_of(self._fn)):    # NOTE [warnings in a trace] rule 5
                return self._fn(*args, **kwargs)
        finally:
            _IN_COMPILED[0] -= 1

    def _trace(self, key, args, kwargs, leaves, treedef, kinds, sized=False):
        # a trace is what torch calls a compile (NOTE [compile callbacks])
        with callback_handler.install_callbacks(CallbackTrigger.DYNAMO, f"{self._order}/{self._programs}"):
            return self._trace_program(key, args, kwargs, leaves, treedef, kinds, sized)

    def _trace_program(self, key, args, kwargs, leaves, treedef, kinds, sized):
        COUNTERS["frames"]["total"] += 1
        _state.watch_modules("tracegrad")     # those imported since (NOTE [library functions patched between calls])
        plan = self._plans.get(key)
        entries = self._cache.get(key)
        # one weakref per object (several programs read the same model): one heap walk each
        replaced = list({id(ref): ref for r in entries for ref in _guards.replaced_objects(r)}.values()) \
            if plan is not None and entries and entries is not _EAGER else ()
        if replaced:
            plan = plan.fresh()       # NOTE [plans after new objects] in _lowering/guards.py
            self._drop_orphans(replaced)
        elif sized and plan is None:
            # NOTE [module arguments]: the instances the other keys were traced for (weakly:
            # the check counts every other reference as the user's)
            others = [weakref.ref(o) for o in self._other_instances(key).values()]
            if others:
                self._drop_orphans(others)
        plan = plan or self._plan_of_other_sizes(key) or Plan()
        plan.containers = self._containers
        plan.numpy_baked = self._numpy_baked.get(_numpy_context(treedef, leaves), frozenset())
        plan.defer_items = True      # NOTE [deferred item] (fullgraph too: torch 2.13 returns the number)
        for _ in range(6):
            try:
                region, result = trace_region(self._fn, args, kwargs, plan, {})
                break
            except Retrace:
                continue
            except NumpyValuesRead as e:      # NOTE [numpy arguments]: baked from now on
                context = _numpy_context(treedef, leaves)
                self._numpy_baked[context] = self._numpy_baked.get(context, frozenset()) | e.positions
                self.stats["calls"] -= 1       # the same call, under its key with the arrays' values
                if not e.raised:
                    return self(*args, **kwargs)
                try:
                    return self(*args, **kwargs)
                except BaseException:
                    # raised with the arrays too: the function's own error, not the stand-ins'
                    self._numpy_baked[context] -= e.positions
                    raise
            except ValueCheckFailed as e:      # the program is good; this call's values are not
                region, result, reason = e.region, ValueCheckFailed, e.reason
                break
            except CallOnlyBreak as e:      # this call only (``SHARED_VIEWS``, an argument that is state)
                if self.fullgraph:
                    raise _own_notes(e)
                if isinstance(e, ContainerChanged):     # NOTE [data container arguments]
                    self._containers, self._containers_refused = frozenset(), True
                return self._break(None, e.reason, e.where, args, kwargs)
            except GraphBreak as e:
                if self.fullgraph:
                    raise _own_notes(e)
                return self._break(key, e.reason, e.where, args, kwargs)
            except Exception as e:     # noqa: BLE001 -- the function raised while tracing
                return self._raised_while_tracing(key, e, args, kwargs)
        else:
            return self._break(key, "outside state kept changing while tracing", None, args, kwargs)
        # programs built (discovery retries not counted), one whose first call runs eagerly
        # (a value check failed, a kept warning is an error now) included: it is cached
        self.stats["traces"] += 1
        COUNTERS["stats"]["unique_graphs"] += 1
        COUNTERS["frames"]["ok"] += 1
        self._plans[key] = plan
        self._cache.setdefault(key, []).insert(0, region)
        self._programs += 1
        self._sized += bool(sized)
        region.sized = bool(sized)
        if result is ValueCheckFailed:
            return self._check_failed(args, kwargs, reason)
        return fill_arg_boxes(result, (args, kwargs)) if region.arg_boxes else result

    # NOTE [plans of other sizes]: a trace starts from what earlier traces of this key found
    # (the outside state to lift, whether results stay differentiable); a key never traced
    # started from nothing, so each new batch size traced the function two or three times (the
    # state found, then ``vjp``) before the trace that builds the program. A key that differs from
    # a traced one only in its tensors' sizes (the last short batch, another sequence length)
    # starts from a copy of that one's plan instead. A storage the new trace does not read is an
    # input it leaves alone (no write, no version bump); a plan missing something still grows.
    # ``vjp`` changes what the trace does (a backward inside it, checkpoints), so one copied, or
    # guessed when the first trace of a key grows its plan and returns tensors with history, is
    # checked at the end of the trace (``Plan.vjp_guess``): a trace that found no differentiable
    # result drops it and traces again, as the key's own discovery would have gone. A forward
    # compiled alone now traces twice for its first size and once for each later one (was 3 and
    # 3), a training step twice and once (was 2 and 2).
    def _plan_of_other_sizes(self, key):
        for other in reversed(self._plans):
            if other[0] == key[0] and other[2:] == key[2:] and len(other[1]) == len(key[1]) and all(
                    _same_part(a, b) or _sizes_apart(a, b) for a, b in zip(key[1], other[1])):
                return self._plans[other].copy()
        return None

    def _check_failed(self, args, kwargs, reason=None):
        """A value check failed in the program (NOTE [value checks at run time] in
        ``_lowering/capture.py``), or ``reason`` (a warning that is an error at this call: NOTE
        [warnings in a trace]): nothing was written back; the call runs eagerly, raising the
        eager error after eager's own side effects (the program stays cached for later calls)."""
        breaks = self.stats["graph_breaks"]
        reason = reason or ("a value check failed at run time (an index or target out of range...): this call "
                            "ran eagerly")
        if not breaks or breaks[-1] != (reason, None):
            breaks.append((reason, None))
        return self._eager(args, kwargs)

    def _raised_while_tracing(self, key, error, args, kwargs):
        """The function raised while being traced; the trace put every storage and Python value
        back. The call then runs eagerly, as it would without compile: the user's own error is
        raised again from there, after the side effects eager has before it (an optimizer step
        ahead of the ``raise``: torch.compile keeps them too). When the eager run succeeds, the
        error came from tracing alone: that signature runs eagerly from now on, with the reason
        in ``stats()``."""
        if getattr(error, "_tracegrad_no_rerun", False) or _library_bug(error):
            raise _own_notes(error)
        if self.fullgraph and not _holds_traced(error):
            # fullgraph=True asks for one program or an error, never an eager run (torch raises
            # at a graph break too): the error itself, state as before the call (the trace put
            # it back); an error of the user's own code is the one eager would raise
            error.add_note(f"tracegrad.compile(fullgraph=True): raised while tracing "
                           f"{getattr(self._fn, '__qualname__', self._fn)}; without fullgraph=True "
                           "the call runs eagerly instead (a graph break)")
            raise _own_notes(error)
        result = self._eager(args, kwargs)
        self.stats["eager_calls"] -= 1      # counted below as a break
        return self._break(key, f"tracing raised {type(error).__name__}: {error}", None, args, kwargs,
                           ran=result)

    def _break(self, key, reason, where, args, kwargs, ran=_EAGER):
        breaks = self.stats["graph_breaks"]
        if not breaks or breaks[-1] != (reason, where):     # once per run of the same reason
            breaks.append((reason, where))
            COUNTERS["graph_break"][reason] += 1
        tokens = None
        if key is not None:
            token = _state.STRUCTURE[0]
            tokens, kept = self._broke.get(key, (_Broke(), None))
            entries = self._cache.get(key)
            tokens.add(token)
            tokens.traced += 1
            self._broke[key] = (tokens, entries if isinstance(entries, list) and entries else kept)
            self._cache[key] = _EAGER
            # the same break in the code for a second signature: the code breaks whatever the
            # arguments, so new signatures run eagerly too instead of each paying a trace
            sites = self._break_sites.setdefault(where, set())
            sites.add(key)
            if where is not None and len(sites) >= 2:
                self._always_eager = True
                self._always_tokens.update(tokens)
                self._always_tokens.traced = max(self._always_tokens.traced, tokens.traced)
        if not self._warned:
            self._warned = True
            say(f"tracegrad.compile: running {getattr(self._fn, '__qualname__', self._fn)} "
                f"eagerly: {reason.rstrip('.')}" + (f" (at {where})" if where else "")
                + ". See tracegrad.compiler.stats().", stacklevel=4)
        if ran is not _EAGER:
            self.stats["eager_calls"] += 1
            return ran
        if tokens is None:
            return self._eager(args, kwargs)
        out = self._eager_under(tokens, args, kwargs)
        if self._always_eager:
            self._always_tokens.update(tokens)
        return out

    def _eager_under(self, tokens, args, kwargs):
        """The call run eagerly for a graph break recorded under the structures ``tokens``; the
        structure the eager run leaves (a buffer it rebinds, a hook it registers) is one more of
        them: its own changes never send the next call back to tracing (NOTE [breaks under a
        structure])."""
        out = self._eager(args, kwargs)
        tokens.add(_state.STRUCTURE[0])
        return out

    def memory_analysis(self, *args, **kwargs):
        """XLA's memory analysis (``temp_size_in_bytes``, ``argument_size_in_bytes``...) of the
        program these arguments run (after the call that traced it), or None when they run
        eagerly. Useful to check that checkpointing saves memory inside a compiled step."""
        leaves, _, _, key = _signature(args, kwargs, self._containers, self._numpy_baked)
        entries = self._cache.get(key)
        if not entries or entries is _EAGER:
            return None
        with x64_scope():
            r = entries[0]
            return r.program.memory_analysis(r.read_inputs(leaves))

    def reset(self):
        self._cache.clear()
        self._plans.clear()
        self._break_sites.clear()
        self._always_eager = False
        self._always_tokens = _Broke()
        self._broke.clear()
        self._programs = self._sized = self._dead = 0
        self._numpy_baked.clear()
        self._instances_run = weakref.WeakSet()
        self._containers, self._containers_refused = frozenset(), False
        self.stats.update(calls=0, traces=0, eager_calls=0, graph_breaks=[])


def _holds_traced(error) -> bool:
    """Whether ``error`` (raised by the user's code while tracing) holds a traced tensor in its
    ``args`` or attributes, directly or in a list/tuple/dict there. NOTE [errors holding traced
    tensors]: under fullgraph=True such an error (``raise ValueError(x * 2)``) left the compiled
    call with the trace's stand-in inside (``tensor(<traced (3,)>)``, no values, unusable):
    that call runs eagerly instead, so the error the caller catches is eager's, its tensors real
    (with eager's side effects before the ``raise``, as without fullgraph)."""
    def traced(v, depth=2):
        if isinstance(v, Tensor):
            return isinstance(getattr(v, "_value", None), jax.core.Tracer)
        if depth and isinstance(v, (list, tuple)):
            return any(traced(e, depth - 1) for e in v)
        if depth and isinstance(v, dict):
            return any(traced(e, depth - 1) for e in v.values())
        return False
    parts = list(getattr(error, "args", ())) + list((getattr(error, "__dict__", None) or {}).values())
    return any(traced(v) for v in parts)


def _own_notes(error):
    """``error`` less the note JAX's traceback filtering adds to an exception leaving a trace
    (it names JAX and its environment variable; a user of tracegrad sees tracegrad's text only)."""
    notes = getattr(error, "__notes__", None)
    if notes:
        kept = [n for n in notes if "JAX_TRACEBACK_FILTERING" not in n]
        if kept:
            error.__notes__ = kept
        else:
            del error.__notes__
    return error


def _misuse(error):
    """``error`` is about calling an API inside a compiled function: raised as it is (not
    answered by running the call eagerly, where it would not occur)."""
    error._tracegrad_no_rerun = True
    return error


# NOTE [compiled functions inside func transforms]
# A compiled function called inside a tracegrad.func transform (``vmap(jacrev(net))`` with
# ``net = tracegrad.compile(module)``: a PINN's derivatives of a compiled network) receives
# tensors holding the transform's JAX tracers. Its program reads the parameters as state, past
# the transform's lifting of the closed-over tensors that require grad (func/_closure.py), and
# it is keyed by the arguments' shapes and dtypes, not by the transforms around the call: the
# outer backward then saw no path to the parameters (``vmap(jacrev(net))`` or ``jacfwd`` after
# a plain call: their gradients silently zero), and ``jacrev(jacrev(net))`` after
# ``jacrev(net)`` raised JAX's UnexpectedTracerError. torch's compiler guards on the
# transforms in force. Here such a call runs the function itself, traced inline by the
# transform (as a compiled function called inside another compiled function is), when it
# reads state that requires grad: a compiled module (or a module's method) with such
# parameters, a function closing over such a module, or one whose programs (for any
# signature) read such state. A function with no such state keeps running its program under
# the transform (NOTE [a program inside a transform]). Not covered: a compiled function
# reading such a module as a global, whose first program is traced under a transform
# (nothing tells before the trace that it reads the parameters).
def _under_transform(leaves):
    """Whether an argument tensor holds a JAX tracer: the call is inside a transform's trace."""
    # (a sparse COO argument has no dense value: its values are a leaf of their own when traced)
    return any(isinstance(a, Tensor) and type(a).__dict__.get("is_sparse") is not True
               and isinstance(a._value, jax.core.Tracer) for a in leaves)


def _reads_grad_state(fn, cache):
    """Whether compiled ``fn`` reads tensors that require grad: a program traced for any
    signature (``cache``'s) read such state, or ``fn`` runs a module (a compiled module's call,
    a module, a module's bound method, a module in its closure) with a parameter that does."""
    if any(entries and entries is not _EAGER and any(r.diff_state for r in entries) for entries in cache.values()):
        return True
    owners = [getattr(fn, "module", None) or getattr(fn, "__self__", None) or fn]
    owners += [c.cell_contents for c in getattr(fn, "__closure__", None) or () if _cell_filled(c)]
    return any(hasattr(o, "_parameters") and callable(getattr(o, "parameters", None))
               and any(p.requires_grad for p in o.parameters()) for o in owners)


def _cell_filled(cell):
    try:
        cell.cell_contents
    except ValueError:     # an empty cell (a name assigned later)
        return False
    return True


def _signature(args, kwargs, containers=frozenset(), numpy_baked=None):
    """(leaves, treedef, kinds, cache key) of one call's arguments; ``containers``: the classes
    whose instances are flattened (NOTE [data container arguments] in _lowering/call_tree.py);
    ``numpy_baked``: call context -> the positions of NumPy arguments read by value there (NOTE
    [numpy arguments] in _lowering/numpy_args.py)."""
    if not kwargs and all(isinstance(a, Tensor) and type(a) is not SparseCooTensor for a in args):
        leaves, treedef = args, len(args)          # the common case, without tree_flatten
    else:
        leaves, treedef = flatten((args, kwargs), containers)   # a sparse argument: its indices, values
    kinds = classify_args(leaves, numpy_baked.get(_numpy_context(treedef, leaves), ()) if numpy_baked else ())
    return leaves, treedef, kinds, _key(leaves, treedef, kinds)


_CONTEXT_VALUES = (bool, str, type(None))


def _numpy_context(treedef, leaves):
    """What decides which NumPy arguments a call reads by value (NOTE [numpy arguments]): the
    arguments' structure and their flags and names (``train=False`` calls may leave the labels
    unused, where ``train=True`` calls convert them). Numbers are left out: each value is a
    program of its own already."""
    return treedef, tuple(a for a in leaves if type(a) in _CONTEXT_VALUES)


_ARRAY_INPUT = "ndarray input"     # a key part's tag: a NumPy argument taken in as an input


def _odd_strides(a):
    """An input array's strides where Python may find others than a row-major array of its
    shape has (NOTE [numpy arguments]): a strided or Fortran-ordered array's, and a C-contiguous
    one's whose size-1 dims have other strides (``arange(4)[:, None]``: (8, 0)); else None."""
    if not a.flags.c_contiguous:
        return a.strides
    step, rowmajor = a.itemsize, []
    for n in reversed(a.shape):
        rowmajor.append(step)
        step *= n
    return None if a.strides == tuple(reversed(rowmajor)) else a.strides


def _key(leaves, treedef, kinds):
    parts = []
    for a, k in zip(leaves, kinds):
        if k == "same":               # NOTE [one tensor passed twice]
            parts.append((k, first_of(leaves, len(parts))))
            continue
        if k == "ndarray":            # NOTE [numpy arguments]
            # (tagged apart from an array keyed by its bytes, ``_unhashable_key``)
            parts.append((_ARRAY_INPUT, a.shape, a.dtype.str, _odd_strides(a)))
            continue
        if k == "const":
            if isinstance(a, weakref.ref):
                # a weakref argument: this object, and whether its referent is alive -- a program
                # traced while ``ref()`` gave a tensor must not run once it gives None (its
                # referent never changes otherwise); ``(type, a)`` hashed and compared the
                # referents, and kept one program for both (ReproTests.test_weakref_del)
                parts.append((weakref.ref, _Same(a), a() is not None))
                continue
            if isinstance(a, float) and not (a and a == a):
                # -0.0 == 0.0, but 1 / k differs: a zero float is keyed by its sign too; NaN != NaN,
                # so a new NaN object per call was a new key (a program per call)
                parts.append((type(a), "nan") if a != a else (type(a), a, math.copysign(1.0, a)))
                continue
            try:
                hash(a)
                parts.append((type(a), a))
            except TypeError:
                parts.append(_unhashable_key(a))
        elif type(a).__dict__.get("is_sparse") is True:   # the class's flag: no __torch_function__ call
            # a sparse COO tensor whose values require grad (the others are their indices and
            # values: call_tree.SparseArg) has no dense value: outside state like a captured one
            # (its values and indices are read by the trace and guarded as such), keyed by identity
            parts.append((k, "sparse", _Same(a)))
        else:
            v = a._value
            # a data argument's leaf-ness, view-ness and inference-ness: NOTE [argument
            # stand-ins] (capture.py); an inference tensor's stand-in is one too (it must raise
            # where eager's would: saved for backward, written in place)
            d = a.__dict__
            parts.append((k, v.shape, v.dtype, a._rg,
                          id(a) if k == "state" else (a._grad is None, a._gf is None, not a._chain,
                                                      _attributes_key(d) if d else ())))
    # the default dtype decides what factories inside make (torch.zeros(3), tensor(1.5)); the
    # saved_tensors_hooks active around the call must run on every call (a trace under them
    # reaches the hooks: a graph break unless allow_in_graph)
    return (treedef, tuple(parts), tuple(grad_mode.STATE.v), _autocast.key(),
            _state.DEFAULT_DTYPE[0], tuple(_state.ANOMALY),
            tuple(_Same(f) for pair in _state.SAVED_HOOKS for f in pair) if _state.SAVED_HOOKS else ())


def _same_part(a, b) -> bool:
    """Whether two cache-key parts are equal; False where comparing them raises (a frozen
    dataclass argument's ``__eq__`` compares the tensors it holds: ``bool`` of a tensor)."""
    try:
        return bool(a == b)
    except Exception:    # noqa: BLE001 -- a user class's __eq__
        return False


def _sizes_apart(a, b) -> bool:
    """Whether two tensor arguments' key parts -- (kind, shape, dtype, requires_grad, identity or
    flags) -- or two NumPy input arguments' (tag, shape, dtype, strides) differ at most
    in their shapes' sizes (same rank)."""
    return (type(a) is tuple and type(b) is tuple and len(a) == len(b) and (len(a) == 5 or a[0] == _ARRAY_INPUT)
            and type(a[1]) is tuple and type(b[1]) is tuple and len(a[1]) == len(b[1]) and a[0] == b[0]
            and a[2:] == b[2:])


def _holds_a_tensor(obj) -> bool:
    """Whether a module holds a parameter or buffer, or an optimizer a parameter (NOTE
    [programs whose state died])."""
    if obj is None:
        return False
    groups = getattr(obj, "param_groups", None)
    if isinstance(groups, list):
        return any(g.get("params") for g in groups if isinstance(g, dict))
    for name in ("parameters", "buffers"):
        f = getattr(obj, name, None)
        if callable(f) and next(iter(f()), None) is not None:
            return True
    return False


def _part_object(part):
    """The object a const argument's key part holds (``(type, value)`` or ``_Same``), or None."""
    if type(part) is _Same:
        return part.obj
    if type(part) is tuple and len(part) == 2 and type(part[1]) is part[0]:
        return part[1]
    return None


def _renewed_containers(key, cache) -> frozenset:
    """The classes of which this call (``key``) passes another instance, at the same place of
    the same argument structure, than the call of a cached program did (NOTE [data container
    arguments] in _lowering/call_tree.py). Objects are compared by identity only: a dataclass's
    ``__eq__`` would compare the tensors it holds."""
    found = set()
    parts = key[1]
    for other in cache:
        if other[0] != key[0] or len(other[1]) != len(parts):
            continue
        for a, b in zip(parts, other[1]):
            x, y = _part_object(a), _part_object(b)
            if x is not None and container_instance(x):
                _renewed_pair(x, y, found, 4)
    return frozenset(found)


def _renewed_pair(x, y, found, depth):
    """Add to ``found`` the class of ``x`` when ``y`` is another instance of it, and so on for
    the objects their attributes (and the lists, tuples and dicts there) hold at the same places,
    ``depth`` levels down: a batch holding an ``Inner`` object made anew too is adopted in one
    call, not one level per call."""
    if x is y or type(x) is not type(y) or depth <= 0:
        return
    if type(x) in (list, tuple):
        for a, b in zip(x, y):
            _renewed_pair(a, b, found, depth - 1)
    elif type(x) is dict:
        for k, a in x.items():
            if k in y:
                _renewed_pair(a, y[k], found, depth - 1)
    elif container_instance(x):
        found.add(type(x))
        was = result_objects._attrs(y)
        for k, a in result_objects._attrs(x).items():
            if k in was:
                _renewed_pair(a, was[k], found, depth - 1)


def _changing_numbers(key, cache, args, kwargs, containers=frozenset()) -> str:
    """A hint for the cache-limit warning: the arguments that differ between this call and the
    cached programs of the same structure, named as the caller wrote them (``args[4]``,
    ``kwargs['lr']``, ``args[3][1]``), not by their place among the flattened leaves (a
    ``global_step`` after a batch tuple of five tensors was "position 8"). Python numbers: each
    value is baked into its own program. Tensor shapes: an XLA program has static shapes, so
    each shape is its own program (torch.compile would make the changing sizes dynamic). NumPy
    arrays: keyed by value (``_unhashable_key``), each array's values are constants of its
    program where the function reads them by value; one it only converts to a tensor is an
    input, keyed by shape and dtype (NOTE [numpy arguments] in _lowering/numpy_args.py)."""
    parts = key[1]
    numbers, shapes, arrays = set(), set(), set()
    for other in cache:
        if other[0] != key[0] or len(other[1]) != len(parts):
            continue
        for i, (a, b) in enumerate(zip(parts, other[1])):
            if _same_part(a, b) or type(a) is not tuple or type(b) is not tuple:
                continue
            if len(a) == 2 and type(a[0]) is type and issubclass(a[0], (int, float, np.number)) \
                    and a[0] is not bool:      # NumPy scalars too (an np.float32 lr from a schedule)
                numbers.add(i)
            elif len(a) == 4 == len(b) and a[0] == "ndarray" == b[0]:
                arrays.add(i)
            elif len(a) == len(b) and (len(a) == 5 or a[0] == _ARRAY_INPUT) and a[0] == b[0] \
                    and type(a[1]) is tuple and a[1] != b[1] and a[2:] == b[2:]:
                shapes.add(i)
    hint = ""
    if numbers:
        where = ", ".join(_leaf_names(args, kwargs, sorted(numbers), containers))
        hint += (f"; the Python number argument(s) {where} change between calls and each value "
                 "is traced into its own program: pass such a value as a tensor (tracegrad.tensor(v)) to "
                 "trace it once")
    if arrays:
        where = ", ".join(_leaf_names(args, kwargs, sorted(arrays), containers))
        hint += (f"; the NumPy array argument(s) {where} hold other values between calls and the function "
                 "reads them by value (NumPy code, indexing, a Python read), so an array's values are constants "
                 "of the program traced with it: convert it with tracegrad.from_numpy(a), outside or before "
                 "any other use inside, to trace it once as an input")
    if shapes:
        where = ", ".join(_leaf_names(args, kwargs, sorted(shapes), containers))
        what = {parts[i][0] == _ARRAY_INPUT for i in shapes}
        what = "NumPy array" if what == {True} else "tensor" if what == {False} else "tensor or NumPy array"
        # (mark_dynamic takes tensors only: an ndarray has nowhere to keep the mark)
        mark = "compile(dynamic=True)" if what == "NumPy array" else \
            "torch._dynamo.mark_dynamic(x, dim) on a tensor, or compile(dynamic=True)"
        hint += (f"; the {what} argument(s) {where} change shape between calls and XLA programs have "
                 "static shapes, so each shape is traced into its own program: pad or bucket them to a "
                 f"few shapes, or mark the changing dims dynamic ({mark}) so that each size is traced once "
                 "without counting toward cache_size_limit")
    return hint


def _changing_values(entries) -> str:
    """A hint for the cache-limit warning: the Python values the function reads (a global, a
    dict entry, an attribute) that hold other values than this argument signature's programs
    were traced with (``guards.changed_values``)."""
    if not entries or entries is _EAGER:
        return ""
    names = []
    for r in entries:
        for n in _guards.changed_values(r):
            if n not in names:
                names.append(n)
    if not names:
        return ""
    if any(" (a new " in n for n in names):
        return (f"; objects the function reads were made again between calls ({', '.join(names[:4])}), and "
                "each program is for the objects it was traced with (those still alive keep their programs): "
                "after making a new model or optimizer (a notebook cell run again), compile the step again "
                "(tracegrad.compile(fn) makes a new compiled function with an empty cache)")
    return (f"; Python values the function reads changed between calls ({', '.join(names[:4])}), and each "
            "value is a constant of its program: keep a value that changes on every call out of the "
            "compiled function, or hold it in a tensor (read as data, it is traced once)")


def _leaf_names(args, kwargs, positions, containers=frozenset()):
    """Names (``args[1]``, ``kwargs['lr']``, ``args[0].x``) of the leaves at these positions of
    ``flatten((args, kwargs), True)``, walked along the same flattening; ``leaf <i>`` where a
    node's children are not reachable by a key."""
    tree = ordered_args((args, kwargs), containers)
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: isinstance(x, Tensor))[0]]
    names = []
    for i in positions:
        if i >= len(paths):
            names.append(f"leaf {i}")
            continue
        node, name = tree, ""
        for k in paths[i]:
            if isinstance(node, dict):          # InOrder: children in insertion order
                key = list(node)[k.key]
                node, name = node[key], f"{name}[{key!r}]"
            elif type(node) is result_objects.Rebuilt:          # a data container's attributes
                key = list(node.attrs)[k.key]
                node, name = node.attrs[key], f"{name}.{key}"
            elif type(node) is PartialArg:      # a partial's bound arguments, then keywords
                node, name = (node.args, node.keywords)[k.key], f"{name}{('.args', '.keywords')[k.key]}"
            elif isinstance(k, jax.tree_util.SequenceKey):
                node, name = node[k.idx], f"{name}[{k.idx}]"
            elif isinstance(k, jax.tree_util.GetAttrKey):
                node, name = getattr(node, k.name), f"{name}.{k.name}"
            else:
                name = None
                break
        names.append(f"leaf {i}" if name is None else ("args" + name[3:] if name.startswith("[0]")
                                                       else "kwargs" + name[3:]))
    return names


class _Same:
    """A cache-key part that is one object by identity. It holds the object, so its id cannot be
    reused by another object while the program is cached (an ``("id", id(a))`` key matched a
    new array at a freed one's address and ran the old one's baked values); what the trace
    read from it is guarded by value (``_lowering/guards.value_guards``)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Same) and other.obj is self.obj


# NOTE [argument attributes]: a tensor argument's Python attributes (``x.test = None``,
# ``x.scale = 2.0``) are set on its stand-in (region.py), so the trace reads what eager reads
# (``hasattr(x, "test")``, ``x * x.scale``); they are part of the key, so a call whose tensor
# has other attributes, or other values in them, gets its own program. Numbers and strings by
# value (NaN as NaN), anything else by identity, weakly (a key keeps no object alive; what the
# trace reads from one is guarded: ``_attribute_objects`` in region.py). Names with a leading underscore are tracegrad's own marks
# (``_cmeta``, ``_fw``, ``_gdt``, ``mark_dynamic``'s ``_dynamo_*`` sets: those key the program
# their own way), except the inference mark. Most tensors have none: one truth test per call.
_ATTRIBUTE_VALUES = (int, float, bool, str, bytes, complex, type(None))


class _WeakSame:
    """A cache-key part that is one object by identity without keeping it alive (an attribute
    holding a new object every call kept every one of them alive in the programs' keys, round
    48). A dead object's key matches nothing, so its id reused by a new object cannot match."""

    __slots__ = ("ref", "oid")

    def __init__(self, obj):
        self.ref, self.oid = weakref.ref(obj), id(obj)

    def __hash__(self):
        return self.oid

    def __eq__(self, other):
        if not isinstance(other, _WeakSame):
            return False
        obj = self.ref()
        return obj is not None and obj is other.ref()


def _attribute_part(v):
    if type(v) in _ATTRIBUTE_VALUES:
        # NaN by value: a new float('nan') each call is the same attribute (was keyed by identity)
        return v if v == v else ("nan", type(v))
    try:
        return _WeakSame(v)
    except TypeError:      # not weakly referenceable (a list, a dict): held, as other arguments
        return _Same(v)


def _attributes_key(d):
    return tuple((k, _attribute_part(v)) for k, v in d.items() if k[0] != "_" or k == "_inference")


def _unhashable_key(a):
    """The key part of an argument that is neither a tensor nor hashable. A NumPy array (and a
    set) is keyed by value: the trace bakes its contents, so an array changed in place or a new
    array at a freed one's address must not match; anything else by identity (``_Same``)."""
    if isinstance(a, np.ndarray):
        return ("ndarray", a.shape, a.dtype.str, hash(a.tobytes()))
    if isinstance(a, set):
        try:
            return ("set", frozenset(a))
        except TypeError:
            pass
    return _Same(a)


def _check_options(options):
    """torch's checks on ``compile(options=...)``: a mapping (AttributeError from ``.items()``
    otherwise, as torch), every name one of inductor's settings (RuntimeError for another)."""
    for name, value in options.items():
        if not isinstance(name, str):   # torch's lookup calls name.replace
            raise AttributeError(f"'{type(name).__name__}' object has no attribute 'replace' (tracegrad.compile: "
                                 "options keys are setting names, strings)")
        group, dot, _rest = name.partition(".")
        if not (name in _OPTION_NAMES if not dot else group in _OPTION_GROUPS):
            raise RuntimeError(f"tracegrad.compile: Unexpected optimization option {name}; options takes torch's "
                               "inductor setting names (max_autotune, triton.cudagraphs, ...), which tracegrad "
                               "accepts and ignores")
        if name in _OPTION_BOOLS and type(value) is not bool:
            raise RuntimeError(f"tracegrad.compile: Unexpected type of attr {name}, got {type(value).__name__} "
                               f"should be bool; pass options={{{name!r}: True}} or False")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, name=None, disable=False, recompile_limit=None, isolate_recompiles=False,
            shapes_spec=None):
    """Mirrors ``torch.compile``: returns ``model`` (a function or an ``nn.Module``) compiled
    into one XLA program per call signature; usable as ``@compile`` and ``@compile(...)``.
    A callable ``backend`` (or a name given to ``torch._dynamo.register_backend``) is a user
    backend instead: it gets FX graphs (``_dynamo_backends.py``).

    Args:
        model: a callable over Tensors (a training step with ``backward()`` and
            ``optimizer.step()`` inside, or a forward), or an ``nn.Module`` (returns a module
            whose calls are compiled; its ``state_dict`` keys gain ``_orig_mod.`` as in torch).
        fullgraph: raise ``GraphBreak`` (a RuntimeError naming file and line), or the error
            tracing raised, instead of running a non-capturable call eagerly.
        dynamic, mode, options: accepted for compatibility; every new input shape is traced
            once and cached. backend: torch's names are accepted ("inductor", "eager",
            "aot_eager", ...); all compile with XLA. A callable: called as
            ``backend(gm, example_inputs)`` per graph; what it returns runs.
        disable: return a wrapper that always runs eagerly.
        recompile_limit: programs traced for this function before its calls run eagerly
            (None: ``torch._dynamo.config.recompile_limit``, 8).
        name, isolate_recompiles, shapes_spec: accepted as torch's (each ``compile`` call
            already keeps its own programs; shapes are always static here).

    Raises:
        AssertionError: ``model`` is not callable, ``dynamic`` is not a bool or None (as
            torch); RuntimeError: an unknown ``mode`` or ``backend``, or a ``mode`` together with
            ``options`` (as torch). With ``model=None`` these are checked when the decorator gets
            its model, as torch.
    """
    if model is None:   # the decorator form: torch checks nothing until the model comes
        args = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, name=name,
                    disable=disable, recompile_limit=recompile_limit, isolate_recompiles=isolate_recompiles,
                    shapes_spec=shapes_spec)

        def decorate(m):
            if m is None:
                raise RuntimeError("tracegrad.compile: Model can't be None; decorate a function or pass an nn.Module")
            return compile(m, **args)
        return decorate
    if not callable(model):
        # torch asserts it (AssertionError), before looking at the other arguments
        raise AssertionError(f"tracegrad.compile: a callable function is expected (a function or an nn.Module), "
                             f"but {type(model)} is provided")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"tracegrad.compile: expected dynamic to be a bool or None, got {type(dynamic)}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    # mode and options are inductor's: torch's other named backends ignore them unchecked
    inductor = backend is None or backend == "inductor"
    if options and inductor:   # torch reads a falsy options as none given
        _check_options(options)
    if mode and inductor and type(mode).__hash__ is None:
        # torch looks an unhashable mode (a list, a dict) up in a dict first: TypeError, not the
        # RuntimeError for an unknown name
        raise TypeError(f"tracegrad.compile: mode must be a str (one of {', '.join(m for m in _MODES if m)}), "
                        f"got unhashable type: '{type(mode).__name__}'")
    if mode and mode not in _MODES and inductor:   # torch reads a falsy mode ("") as none given
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(m for m in _MODES if m)}")
    if recompile_limit is not None and not isinstance(recompile_limit, (int, float)):
        raise TypeError(f"tracegrad.compile: recompile_limit must be an int or None, got {type(recompile_limit).__name__}")
    user = USER_BACKENDS[0][0](backend) if USER_BACKENDS[0] is not None else None
    if backend not in _BACKENDS and user is None:
        raise InvalidBackend(backend, f"tracegrad.compile takes a backend name (one of "
                                      f"{', '.join(b for b in _BACKENDS[:5] if b)}) or a callable")
    kw = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
              disable=disable)
    if recompile_limit is not None and user is None:
        kw["recompile_limit"] = recompile_limit
    cls = CompiledFunction
    if user is not None:
        cls, kw["backend"] = USER_BACKENDS[0][1], user
    # an nn.Module instance; a class (compile(nn.Linear)) is compiled as the callable it is, as torch
    wrap_module = None if isinstance(model, type) else getattr(model, "_tracegrad_compiled_wrapper", None)
    if wrap_module is not None:          # an nn.Module (nn sits above this layer)
        return wrap_module(cls, kw)
    return cls(model, **kw)


def copy_compiled(cf, memo, **extra):
    """``copy.deepcopy`` of a compiled callable (``CompiledFunction``, ``CompiledWithBackend``).

    NOTE [deepcopy of a compiled callable]: ``copy.deepcopy(module)`` after ``Module.compile()``
    reaches the compiled call in the module's ``__dict__``; copying its caches failed (programs
    and class dicts cannot be copied), and in torch the copy gets a compiled call of its own
    that runs the copy. So: a fresh compiled callable (same options, empty caches) over the
    deep-copied callable; a plain function deep-copies to itself, and then so does this.
    (A module's own copy no longer reaches here: ``Module.__getstate__`` drops its compiled
    call, as torch 2.13's drops ``_compiled_call_impl``, so the copy runs eagerly, as torch's.)"""
    fn = copy.deepcopy(cf._fn, memo)
    if fn is cf._fn:
        return cf
    return type(cf)(fn, fullgraph=cf.fullgraph, dynamic=cf.dynamic, backend=cf.backend, mode=cf.mode,
                    options=cf.options, disable=cf.disabled, **extra)


def reset():
    """Mirrors ``torch.compiler.reset``: forget every compiled program (the next call of each
    compiled function runs eagerly, then traces again)."""
    for cf in list(_ALL):
        cf.reset()


def stats():
    """Per compiled function (by qualified name): calls, traces, eager calls and graph-break
    reasons with file and line. Live functions sharing a name (a notebook cell run twice, two
    ``step`` closures) get ``name [2]``, ``name [3]``... in the order they were compiled."""
    out = {}
    for cf in sorted(_ALL, key=lambda cf: cf._order):
        name = base = getattr(cf._fn, "__qualname__", repr(cf._fn))
        k = 1
        while name in out:
            k += 1
            name = f"{base} [{k}]"
        out[name] = dict(cf.stats)
    return out


def traced_optimizer_step(step, opt, hooks, args, kwargs):
    """How ``Optimizer.step`` runs while a compiled function is traced: each group's numeric
    ``lr``, ``momentum`` and ``betas`` are swapped for the traced values the program receives
    (a scheduler changing them between calls needs no new program), and the step hooks are
    reported (their Python side effects must happen on every call)."""
    cap = _state.CAPTURE[0]
    _deferred_step.check_optimizer_step(cap, opt)
    cap.see_optimizer(opt)
    for h in hooks:
        _state.note_hook("optimizer step", h, opt)
    values = cap.hyper_inputs.get(opt)
    if not values:
        out = step(*args, **kwargs)
    else:
        with _hyper.swapped(opt, values):
            out = step(*args, **kwargs)
    cap.see_optimizer_python_state(opt)
    return out


def _param_group_read(group, key):
    """``group[key]`` (an optimizer's param group) is read while a compiled function is traced.
    Outside ``Optimizer.step`` the traced Python gets the number itself, which the program
    would keep: ``hyper.note_read`` makes the region guard that number exactly."""
    cap = _state.CAPTURE[0]
    if cap is not None:
        _deferred_step.check_group_read(cap, group, key)
    _hyper.note_read(group, key)


def _defer_scheduler_step(sched) -> bool:
    """``LRScheduler.step()`` called while a compiled function is traced: recorded, to run after
    the program on every call (NOTE [deferred scheduler step]); False: run it now."""
    cap = _state.CAPTURE[0]
    return cap is not None and not cap.scheduler_made_here(sched) and _deferred_step.defer(cap, sched)


def _guard_read(obj, name):
    """Library code (not the user's, whose reads NOTE [Python values read] finds from its code)
    hands the traced function ``obj.name``, a Python value the program would bake in: guard it
    (a copy of a list, so an in-place change is seen too); a new value traces again."""
    cap = _state.CAPTURE[0]
    if cap is not None:
        cap.guard_attribute(obj, name)


def _note_optimizer_made(opt):
    """``Optimizer.__init__`` ran: in a trace, ``opt`` is the call's own (NOTE [optimizers made
    in a trace] in ``_lowering/capture.py``)."""
    cap = _state.CAPTURE[0]
    if cap is not None:
        cap.see_optimizer_made(opt)


def _note_scheduler_made(sched):
    """An lr scheduler is being built: in a trace, its steps are never deferred
    (``Capture.see_scheduler_made``)."""
    cap = _state.CAPTURE[0]
    if cap is not None:
        cap.see_scheduler_made(sched)


def _note_hook(kind, hook):
    """Library code (an optimizer's ``state_dict``/``load_state_dict``) is about to run the user
    ``hook``: in a trace it is reported (traced with its Python effects repeated on every call,
    or a graph break), never run only while tracing."""
    _state.note_hook(kind, hook)


def _guard_len(container):
    """Library code hands the traced function something whose size is ``len(container)`` (an
    optimizer's ``state_dict()``): guard that length; a new length traces again."""
    cap = _state.CAPTURE[0]
    if cap is not None:
        cap.read_guards.append((_guards._Len(container), None, len(container), None))


def fused_optimizer_group(opt, group, items) -> bool:
    """How an eager ``Optimizer.step`` updates one parameter group when it can: the group's
    update rule as cached XLA programs (``_lowering/fused_optim.py``). Returns False, having
    changed nothing, when the step must run op by op (while tracing, differentiable steps,
    unusual tensors)."""
    return _fused_optim.step_group(opt, group, items)


def fused_inplace(key, fn, tensors):
    """An eager in-place update of ``tensors`` (``fn(stand_ins, ()) -> (new tensors, meta)``,
    as ``_lowering.fused.run_inplace``) as one cached XLA program: ``clip_grad_norm_``'s norm
    and scaling of every gradient, the ``foreach`` kernels' analogue. Returns ``(new, meta)``,
    or None, having changed nothing, when it must run op by op (while tracing, tensors that
    require grad, sparse, complex, inference, dual or sharing a storage)."""
    if len({id(t._st) for t in tensors}) != len(tensors) or \
            any(t._rg or t.is_sparse or t.is_complex() or not _fused.plain(t) for t in tensors):
        return None
    return _fused.run_inplace(key, fn, tensors, (), donate=tuple(range(len(tensors))))


def traced_optimizer_zero_grad(opt):
    """``Optimizer.zero_grad`` while tracing: the parameters' ``.grad`` is compiled state."""
    _state.CAPTURE[0].see_optimizer(opt)


def is_compiling() -> bool:
    """Mirrors ``torch.compiler.is_compiling``: True inside a compiled function: while it is
    traced, and in the calls of it that run its Python eagerly (the first call, a graph
    break's), where torch would run compiled code; False under ``disable=True`` or the
    ``"force_eager"`` stance, and outside."""
    return _state.CAPTURE[0] is not None or _IN_COMPILED[0] > 0


def _tracing() -> bool:
    """A trace is running (the library's own branches: an eager run of a compiled function
    is eager in every other respect)."""
    return _state.CAPTURE[0] is not None


_IN_COMPILED = _state.IN_COMPILED     # depth of compiled functions running their Python eagerly


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    """Mirrors ``torch.compiler.is_exporting``: always False (tracegrad has no export)."""
    return False


def cudagraph_mark_step_begin() -> None:
    """Mirrors ``torch.compiler.cudagraph_mark_step_begin``, which ``mode="reduce-overhead"``
    programs call between steps. A compiled program here never reuses output buffers that
    a previous call returned, so there is nothing to mark: a no-op."""


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Mirrors ``torch.compiler.list_backends``: the backend names ``compile`` accepts, sorted:
    XLA's own (``exclude_tags`` hides the debugging ones, as torch) and those registered with
    ``torch._dynamo.register_backend``, less those tagged with one of ``exclude_tags``."""
    exclude = set(exclude_tags or ())
    ours = (b for b in _BACKENDS if b and not (exclude and b in _DEBUG_BACKENDS))
    user = (n for n, tags in USER_BACKEND_TAGS.items() if not exclude.intersection(tags))
    return sorted({*ours, *user})


_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
            "aot_eager_then_compile")
_STANCE = ["default"]


class set_stance:
    """Mirrors ``torch.compiler.set_stance``: how compiled functions behave from now on; also a
    context manager and a decorator (the previous stance comes back on exit).

    Stances: ``"default"``; ``"force_eager"`` (every compiled function runs its Python
    eagerly); ``"eager_on_recompile"`` (a call whose guards match no cached program runs
    eagerly instead of tracing a new one); ``"fail_on_recompile"`` (that call raises
    RuntimeError); ``"eager_then_compile"`` and ``"aot_eager_then_compile"`` (the first call
    runs eagerly, then calls are compiled: what ``"default"`` already does here).

    Raises:
        AssertionError: called inside a compiled function (as torch's tracer).
        RuntimeError: ``force_backend`` with a stance other than ``"default"``; an unknown stance (when a compiled function next needs it, as torch).
    """

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if force_backend is not None and stance != "default":
            # torch's check, before the stance changes
            raise RuntimeError(f"tracegrad.compiler.set_stance: non-default stance cannot have force_backend set "
                               f"(stance {stance!r}); pass force_backend only with stance='default'")
        if is_compiling():
            # torch's tracer refuses the call with an AssertionError ("forbidden callable")
            raise _misuse(AssertionError("tracegrad.compiler.set_stance: do not call it inside a compiled function; "
                                         "set the stance around the call instead"))
        self.prev, self.stance = _STANCE[0], stance
        _STANCE[0] = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _STANCE[0] = self.prev

    def __call__(self, fn):
        stance = self.stance
        _STANCE[0] = self.prev          # as a decorator it applies only while fn runs

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            with set_stance(stance):
                return fn(*args, **kwargs)
        return with_stance


def nested_compile_region(fn=None, *, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    """Mirrors ``torch.compiler.nested_compile_region`` (a decorator, with or without arguments):
    marks a repeated block (a transformer layer) for torch to compile once and stamp out. XLA
    already compiles the whole traced program at once, so ``fn`` is returned unchanged: its
    calls are traced inline, and run eagerly outside a compiled function."""
    if fn is None:
        return lambda f: nested_compile_region(f, options=options, max_reuse_entries=max_reuse_entries,
                                               reuse_hash_fn=reuse_hash_fn)
    if not callable(fn):
        raise TypeError(f"tracegrad.compiler.nested_compile_region: expected a function, got {type(fn).__name__}")
    return fn


def assume_constant_result(fn):
    """Mirrors ``torch.compiler.assume_constant_result``: ``fn``'s result may be treated as a
    constant while tracing. Here Python called while tracing runs anyway and a number it returns
    is guarded like any other, so ``fn`` is returned unchanged."""
    if not callable(fn):
        raise TypeError(f"tracegrad.compiler.assume_constant_result: expected a function, got {type(fn).__name__}")
    return fn


def allow_in_graph(fn):
    """Mirrors ``torch.compiler.allow_in_graph`` for hooks: ``fn`` (a tensor, Node, module,
    optimizer or saved-tensor hook) is traced into compiled programs without the checks of
    NOTE [hooks in a trace] (a tensor, module or optimizer hook that changes no Python state is
    traced anyway; Node and saved-tensor hooks otherwise break). Its Python runs once, while
    tracing; the tensor math it does runs every call. Returns ``fn``."""
    if not callable(fn):
        raise AssertionError("tracegrad.compiler.allow_in_graph expects a callable")
    try:
        fn._tracegrad_traceable = True
    except AttributeError:
        raise TypeError(f"tracegrad.compiler.allow_in_graph: cannot mark {fn!r}; wrap it in a Python function") from None
    return fn


def disable(fn=None, recursive=True, *, reason=None):
    """Mirrors ``torch.compiler.disable``: ``fn`` always runs eagerly (inside a compiled
    function too, where calling it is a graph break: its Python runs on every call).
    ``reason`` (torch's keyword) is named in that graph break."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if not callable(fn):
        raise AssertionError("tracegrad.compiler.disable: fn must be callable")
    if isinstance(fn, type) or hasattr(fn, "_parameters"):
        # a module class or instance stays one (it is assigned as a child module, isinstance
        # still holds): its forward (a class's __call__ otherwise) is what runs eagerly
        name = "forward" if hasattr(fn, "forward") else "__call__"
        if name == "forward" or any("__call__" in vars(c) for c in type.mro(fn)[:-1]):
            setattr(fn, name, disable(getattr(fn, name), recursive, reason=reason))
        return fn

    @functools.wraps(fn)
    def eager_only(*args, **kwargs):
        if _state.CAPTURE[0] is not None:
            raise GraphBreak(f"{getattr(fn, '__qualname__', fn)} is marked tracegrad.compiler.disable"
                             + (f" ({reason})" if reason is not None else ""))
        return fn(*args, **kwargs)
    return eager_only



_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _library_bug(error) -> bool:
    """A NameError or ImportError raised by tracegrad's own code while tracing: a bug of this
    library, never the user's program. Falling back to eager would hide it (compile24's merge
    dropped an import and every step reading ``opt.state_dict()`` ran eagerly, unnoticed), so it
    propagates."""
    if not isinstance(error, (NameError, ImportError)):
        return False
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep)
