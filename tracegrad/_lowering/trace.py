"""Tracing one call of a function into a ``Region`` (DESIGN 2.4).

``trace_region(fn, args, kwargs, plan)`` runs ``fn`` once under a ``Capture`` inside
``jax.make_jaxpr``, with every piece of outside tensor state it touches (the ``Plan``: storages,
``.grad`` owners, generators, optimizer hyper-parameters) swapped for a traced input, and
builds the ``Region`` (``region.py``) that runs the same call as one program from then on:
its inputs and outputs, the guards that say when it still applies, how results and Python
state (counters, appends, attributes, hooks) come back on every call. Outside state found
late raises ``Retrace`` with the enlarged plan; what cannot be traced raises a ``GraphBreak``.
"""
from __future__ import annotations

import functools
import gc
import os
import sys
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._api import threads
from .._ops import warn as _warn
from .._tensor import runtime
from .._tensor.numpy_bridge import overlapping
from .._tensor.tensor import Tensor
from .._x64 import x64_enter, x64_exit
from ..autograd import grad_mode
from . import hyper
from .capture import Capture, GraphBreak, _grad_leaf, def_site, guard_output, settings_now
from .warned import code_of
from .deferred import DeferredItem, check_kept
from .deferred_step import unseal
from .carry import IMMUTABLE, argument_places, attribute_places, carry_over, get as slot_get
from .carry import InSequence, plan_rebinds, put as slot_put, rebound_places
from .program import Program
from .guards import (KEYS, _Probe, flag_guards, optimizer_state_guards, outside_containers, unread_identity,
                     value_guards)
from .pystate import (CellSlot, append_changes, changed, clock_reads, close_abandoned_generators, counter_changes,
                      cut_appends, effects_signature, grown_lists, int_attributes, lists_read, numpy_sharing,
                      place_key, python_refs, restore, scalar_changes, scalar_counters, scalar_signature, slot_key,
                      snapshot, stateful_reads)
from .remat import REMAT_COMPILER_OPTIONS
from . import result_objects
from .region import (_HELD, _NEW, _OTHER, _SAME, ARG_IS_STATE, DATA_KINDS, SHARED_VIEWS, CallOnlyBreak,
                     ContainerChanged, Region, SharedArgsWritten, aliased_args, classify_args, first_of, input_value)
from .numpy_args import NumpyStandIn, NumpyValuesRead, also_outside, asks_type, unconverted
from .results import _out_recipe, _result_places, _views_of_rebound
from .call_tree import ArgBox, argument_boxes, arguments_changed, flatten, keep_outside, unflatten
from . import custom_function as _custom_function
from .vjp_node import MSG_KEPT, dead_node

_Tracer = jax.core.Tracer


class Retrace(Exception):
    """The trace found outside state it had not lifted; ``plan`` now includes it."""


class Plan:
    """What to lift for the next trace; grows by discovery until a trace finds nothing new."""

    def __init__(self):
        self.storages = {}        # id(storage) -> (weakref to it, weakref to a tensor over it)
        self.owners = {}          # id(tensor) -> leaf tensor whose .grad is state
        self.generators = []
        self.optimizers = []
        self.vjp = False          # outputs stay differentiable: trace under jax.vjp
        self.vjp_guess = False    # ``vjp`` set before a trace found it needed (NOTE [plans of other sizes])
        self.defer_items = False  # NOTE [deferred item] (the compiled function sets it)
        self.containers = frozenset()   # the compiled function's data-container classes (NOTE
        # [data container arguments])
        self.numpy_baked = frozenset()  # NumPy argument positions read by value (NOTE [numpy arguments])

    def copy(self) -> "Plan":
        """A plan with this one's outside state (and ``vjp``): the start of a trace for a call
        that differs from this plan's only in its tensors' sizes (NOTE [plans of other sizes])."""
        p = Plan()
        p.storages, p.owners = dict(self.storages), dict(self.owners)
        p.generators, p.optimizers = list(self.generators), list(self.optimizers)
        p.vjp = p.vjp_guess = self.vjp
        return p

    def fresh(self) -> "Plan":
        """A plan with no outside state, only this one's ``vjp`` (as a guess): the start of a
        trace after the function's objects were replaced (NOTE [plans after new objects] in
        guards.py)."""
        p = Plan()
        p.vjp = p.vjp_guess = self.vjp
        return p

    def absorb(self, cap: Capture) -> bool:
        grown = False
        for k, (t, _) in cap.grad_owners.items():
            if k not in self.owners and not cap.made_here(t):
                self.owners[k] = t
                grown = True
        owner_grads = {id(o._grad._st) for o in self.owners.values() if o._grad is not None}
        for sid in owner_grads:
            self.storages.pop(sid, None)
        for sid, (t, _, st) in cap.found.items():
            known = self.storages.get(sid)
            # an entry whose storage died names another object now: ids are reused, and
            # taking ``st`` for that one left it out of the inputs, its value frozen in the
            # program (a parameter the caller moved onto a new storage between calls)
            if (known is None or known[0]() is not st) and sid not in owner_grads:
                # the storage read, not ``t._st``: ``t.data = ...`` later in the trace moves
                # ``t`` to a storage the trace made (vector_to_parameters)
                self.storages[sid] = (weakref.ref(st), weakref.ref(t))
                grown = True
            elif known is not None and known[1]() is not t and _grad_leaf(t) and (
                    known[1]() is None or not _grad_leaf(known[1]())):
                # NOTE [the leaf of a found storage] (capture.py): found through an alias first
                self.storages[sid] = (known[0], weakref.ref(t))
                grown = True
        for sid, t in cap.data_leaves.items():
            known = self.storages.get(sid)
            if known is not None and known[1]() is not t and (known[1]() is None or not _grad_leaf(known[1]())):
                # NOTE [the leaf of a found storage] (capture.py ``_data_keeps_leaf``)
                self.storages[sid] = (known[0], weakref.ref(t))
                grown = True
        for g in cap.found_generators:
            if g not in self.generators:
                self.generators.append(g)
                grown = True
        for o in cap.optimizers:
            # an optimizer over tensors the trace made (``optim.SGD([delta])`` built inside the
            # function, a PGD attack's per step) is the call's own, made again on every call: no
            # outside state to lift. Lifting it grew the plan on every trace (a new object each
            # time), so such a function never compiled ("outside state kept changing").
            if o not in self.optimizers and not _made_in_trace(cap, o):
                self.optimizers.append(o)
                grown = True
        return grown


def _numpy_read(stand_ins) -> None:
    """``NumpyValuesRead`` for the NumPy arguments the trace read by value, even where the
    function caught the stand-in's own exception (NOTE [numpy arguments])."""
    read = [s.position for s in stand_ins if s.read]
    if read:
        raise NumpyValuesRead(read)


def _check_arrays_unwritten(const_arrays, after) -> None:
    """A graph break where the function wrote into a NumPy argument traced as itself (``x -=
    x.mean()``: NOTE [writes into numpy arguments] in numpy_args.py): the program would not
    repeat the write on later calls."""
    if any(not np.array_equal(a, before, equal_nan=a.dtype.kind in "fc") for a, before in const_arrays):
        raise GraphBreak("the function writes into its NumPy array argument: a program would not repeat the "
                         "write on later calls (write into a copy, x = x.copy(), or do it outside the compiled "
                         "function)", where=after)


def _put_arrays_back(const_arrays) -> None:
    """The NumPy arguments' bytes as before an abandoned trace (its eager rerun writes them)."""
    for a, before in const_arrays:
        if a.flags.writeable:
            np.copyto(a, before)


def _has_history(result) -> bool:
    """Whether a tensor among ``result``'s leaves has a grad_fn (its result will likely stay
    differentiable: a guess, NOTE [plans of other sizes])."""
    return any(isinstance(t, Tensor) and t._gf is not None for t in flatten(result)[0])


def _made_in_trace(cap: Capture, opt) -> bool:
    """Whether optimizer ``opt`` was built during this trace (NOTE [optimizers made in a trace]
    in capture.py), or every parameter of it is a tensor made during this trace."""
    if cap.optimizer_made_here(opt):
        return True
    params = [p for g in opt.param_groups for p in g["params"]]
    return bool(params) and all(cap.made_here(p) for p in params)


def _put_environ_back(env):
    for k in [k for k in os.environ if k not in env]:
        del os.environ[k]
    for k, v in env.items():
        if os.environ.get(k) != v:
            os.environ[k] = v


def _global_modes():
    """The process-wide settings a function may change (``set_grad_enabled``,
    ``set_default_dtype``, ``set_detect_anomaly``, ``set_printoptions``,
    ``set_float32_matmul_precision``, ``use_deterministic_algorithms``, ``set_default_device``,
    ``set_num_threads``, ``set_warn_always``, the ``torch.backends`` flags: NOTE [settings
    flags] in ``_state.py``): one changed while tracing would not be changed again by the
    program."""
    return (tuple(grad_mode.STATE.v), _state.DEFAULT_DTYPE[0], tuple(_state.ANOMALY),
            str(runtime.get_default_device())) + settings_now()


def _put_global_modes_back(modes) -> None:
    """An abandoned trace (a graph break, the function's own error) after the function changed a
    global setting as a statement (``torch.set_grad_enabled(False)`` then ``x.tolist()``): put it
    back, so the eager rerun starts from the caller's settings and leaves what eager leaves."""
    if modes is None or _global_modes() == modes:
        return
    grad, dtype, anomaly, device, opts, prec, (det, warn_only), n, _, always, flags = modes
    _warn.WARN_ALWAYS[0] = always
    _state.put_settings_back(flags)
    grad_mode.STATE[0], grad_mode.STATE[1], grad_mode.STATE[2] = grad
    _state.DEFAULT_DTYPE[0] = dtype
    _state.ANOMALY[:] = anomaly
    _state.PRINT_OPTS.clear()
    _state.PRINT_OPTS.update(opts)
    if runtime._matmul_precision[0] != prec:
        runtime.set_float32_matmul_precision(prec)
    if tuple(runtime._deterministic) != (det, warn_only):
        runtime.use_deterministic_algorithms(det, warn_only=warn_only)
    if str(runtime.get_default_device()) != device:
        runtime.set_default_device(device)
    if threads.get_num_threads() != n:
        threads.set_num_threads(n)


def _attribute_ids(t) -> dict:
    """A stand-in's Python attributes by identity of their values: an attribute set, deleted or
    rebound by the function (the caller's own attributes are already there: NOTE [argument
    attributes], compiler.py)."""
    return {k: id(v) for k, v in t.__dict__.items()}


def _attribute_objects(leaves):
    """``(name, object)`` of the objects set on tensor arguments (``x.box = Box()``; not numbers,
    strings or tensors). NOTE [argument attributes] (compiler.py): such an object keys the
    program by identity, so what the trace reads from it (``x.box.v``) is guarded as an
    argument object's (changed between calls it was frozen at the traced value, round 48) --
    only one the code names: a guard holds it, and one never read must not be kept alive."""
    return [(k, v) for a in leaves if isinstance(a, Tensor) and getattr(a, "__dict__", None)
            for k, v in list(vars(a).items()) if k[0] != "_" and not isinstance(v, (IMMUTABLE, Tensor))]


def _tensor_place(v, call_leaves, wrappers, made):
    """Where the tensor ``v`` set as an argument's attribute comes from on later runs: ``(True,
    position)`` of the argument it is, else ``(False, index)`` in ``made`` (added once)."""
    for j in wrappers:
        if call_leaves[j] is v:
            return True, j
    for n, m in enumerate(made):
        if m is v:
            return False, n
    made.append(v)
    return False, len(made) - 1


def _argument_attribute_writes(call_leaves, wrappers, where, made):
    """NOTE [attributes set on arguments]: the Python attributes the function set on (or deleted
    from) its tensor arguments' stand-ins, as ``((i, {name: value}, (deleted names), {name:
    _tensor_place}), ...)`` for every run to repeat on the caller's tensors
    (``x.offloading_activation = flag``; MiscTests.test_input_tensor_custom_attr_mutation,
    round 28). Like a result's attributes, numbers,
    strings and tuples of them can be repeated (a value the trace computed from Python state it
    changes is already a graph break), and tensors (appended to ``made``: the program returns
    them); anything else is a graph break."""
    writes = []
    for i, (_, before) in wrappers.items():
        now = call_leaves[i].__dict__
        sets = {k: v for k, v in now.items() if before.get(k) != id(v)}
        dels = tuple(k for k in before if k not in now)
        if not (sets or dels):
            continue
        if any(k[0] == "_" for k in (*sets, *dels)):
            # tracegrad's own marks (NOTE [argument attributes]) are not the caller's to get
            raise GraphBreak("the function changes an internal mark of a tensor argument: the program "
                             "would do that to a stand-in, not to the caller's tensor", where=where)
        # a tensor (round 29, TestInputAttrTracking): a tensor argument (``x.y = y``) is repeated
        # as the caller's own argument, by its position (found by identity: ``==`` on tensors is
        # an op); any other tensor (``t.z = y * z``, one made outside) is a result of the
        # program, ``(False, its index in made)``, set again from each run's results
        refs = {k: _tensor_place(v, call_leaves, wrappers, made) for k, v in sets.items()
                if isinstance(v, Tensor)}
        bad = next((k for k, v in sets.items() if k not in refs and not (isinstance(v, IMMUTABLE) or (
            type(v) is tuple and all(isinstance(e, IMMUTABLE) for e in v)))), None)
        if bad is not None:
            raise GraphBreak(f"the function sets the attribute '{bad}' of a tensor argument to a "
                             f"{type(sets[bad]).__name__}: a compiled call can repeat only numbers, strings, "
                             "tuples of them and tensors on the caller's tensor", where=where)
        writes.append((i, {k: v for k, v in sets.items() if k not in refs}, dels, refs))
    return tuple(writes)


def _any_failed(checks):
    """Whether any traced check array is true (a traced bool), or None without checks. A check
    made inside a nested transform (a checkpointed block) holds that transform's tracer, which
    this program cannot return: a graph break."""
    if not checks:
        return None
    try:
        return jnp.any(jnp.stack([jnp.any(b) for b in checks]))
    except jax.errors.UnexpectedTracerError:
        raise GraphBreak("an op checks its input's values (an index or class target in range...) inside a "
                         "checkpointed or transformed block: the program cannot raise eager's error from there") from None


def trace_region(fn, args, kwargs, plan: Plan, jit_options) -> Region:
    """Trace ``fn(*args, **kwargs)`` once under ``plan`` and execute it. Raises ``Retrace``
    (plan grown), ``GraphBreak``, or the function's own exception; in every case the outside
    state is as it was before the call."""
    leaves, treedef = flatten((args, kwargs), plan.containers)
    kinds = classify_args(leaves, plan.numpy_baked)
    if "ndarray" in kinds and asks_type(fn):       # NOTE [numpy arguments]
        raise NumpyValuesRead([i for i, k in enumerate(kinds) if k == "ndarray"], "type() in the function")
    # a storage no tensor holds any more, only programs (a mask a program replaced on its
    # module, NOTE [module tensor attributes]), cannot be read by the function: not an input of
    # a new trace, which would die with it (``Region.check``'s orphan guard)
    for sid, (r, _) in list(plan.storages.items()):
        st = r()
        if st is not None and sys.getrefcount(st) <= 2 + _HELD.get(sid, 0):
            del plan.storages[sid]
        st = None
    live = [(r(), t) for r, t in plan.storages.values() if r() is not None]
    storages = [st for st, _ in live]
    shared_with_state = aliased_args(leaves, kinds, {id(st) for st in storages})
    if shared_with_state is not None and shared_with_state is not SHARED_VIEWS:
        raise GraphBreak(shared_with_state)
    views_shared = shared_with_state is SHARED_VIEWS
    owners = list(plan.owners.values())
    owner_grads = {id(o._grad._st): o for o in owners if o._grad is not None}
    # NOTE [the .grad a call starts with]: the input storages that are an owner's .grad now
    entry_at = {id(o._grad._st): k for k, o in enumerate(owners) if o._grad is not None}
    grad_state = {i: entry_at[id(st)] for i, st in enumerate(storages) if id(st) in entry_at}
    owner_ids = {id(o) for o in owners}
    hyper_slots = hyper.slots(plan.optimizers)
    diff_storages = [i for i, (st, r) in enumerate(live) if plan.vjp and r() is not None and r()._rg]
    diff_args = [i for i, (a, k) in enumerate(zip(leaves, kinds)) if plan.vjp and k == "data" and a._rg]
    info = {}

    def body(state, grads, keys, hypers, data):
        info["warnings"] = []      # NOTE [warnings in a trace] (warned.py): this trace's own
        info["log_levels"] = {}    # NOTE [logger levels read in a trace] (capture.py)
        cap = Capture(set(map(id, storages)) | set(owner_grads), plan.generators,
                      hyper.bind(hyper_slots, hypers), plan.vjp)
        cap.defer_items = DeferredItem if plan.defer_items else None
        cap.counter_candidates = list(counters0) + [(None, place, k, a) for place, k, a in scalars0]
        cap.list_candidates = lists0
        cap.function_rule = _custom_function.rule
        saved = _swap_in(storages, state, owners, grads, plan.generators, keys)
        prev_cap, _state.CAPTURE[0] = _state.CAPTURE[0], cap
        _state.trace_boundary()     # NOTE [objects no trace has seen]
        # NOTE [a layout the trace changed]: a trace that gives a module from outside a
        # submodule or parameter where it held None or nothing (``self.target =
        # copy.deepcopy(self.online)`` behind ``if self.target is None``, after ``self.target =
        # None`` between calls: ``Capture.see_layout_filled``) ran the Python branch of the
        # layout it started from. Keyed on the layout it left, the program ran on later calls
        # for the new layout, its branch included: it made the target again from the online
        # module on every call instead of reading the target's own parameters
        # (lucidrains/byol-pytorch, round 64). Keyed on the layout it started from, the next
        # call traces again for the new one. A module replaced by another (``self.loss_fn =
        # nn.MSELoss()`` in every forward) keeps the key it leaves: eager replaces it on every
        # call as well, and tracing again on every call would only spend the cache.
        structure0 = _state.STRUCTURE[0]
        env = dict(os.environ)
        filters = list(warnings.filters)      # NOTE [warnings in a trace] rule 8 (warned.py)
        modes = None
        try:
            call_leaves = list(leaves)
            d = iter(data)
            data_in, stand_ins = {}, []
            for i, k in enumerate(kinds):
                if k == "ndarray":        # NOTE [numpy arguments]
                    call_leaves[i] = NumpyStandIn(leaves[i], next(d), i)
                    stand_ins.append(call_leaves[i])
                    cap.numpy_inputs[id(call_leaves[i])] = call_leaves[i]
                elif k == "data":
                    w = Tensor._make(next(d))
                    data_in[i] = w._st.array
                    w._rg = leaves[i]._rg
                    own = leaves[i].__dict__
                    if own:
                        # the argument's Python attributes, read as eagerly (NOTE [argument
                        # attributes], compiler.py; keyed there); an inference tensor's stand-in
                        # is one as well, so that saving it for backward or writing it in place
                        # raises as eagerly (keyed there too)
                        w.__dict__.update((k, v) for k, v in own.items() if k[0] != "_" or k == "_inference")
                    call_leaves[i] = w
                elif k == "same":
                    call_leaves[i] = call_leaves[first_of(leaves, i)]
            w = None     # the last wrapper would otherwise look kept (an escape) to _escapes
            cap.stand_ins = {id(call_leaves[i]._st): leaves[i] for i in data_in}
            a2, kw2 = unflatten(treedef, call_leaves)
            modes = _global_modes()
            wrappers = {i: (call_leaves[i]._rg, _attribute_ids(call_leaves[i])) for i in data_in}
            try:
                with guard_output(info["warnings"], code_of(fn), info["log_levels"]):
                    result = fn(*a2, **kw2)
                _numpy_read(stand_ins)
                if helpers_ask_type and unconverted(stand_ins):
                    raise NumpyValuesRead(unconverted(stand_ins), "never converted to a tensor")
                _check_arrays_unwritten(const_arrays, after=def_site(fn))
            except Exception as e:
                _numpy_read(stand_ins)
                if cap.broken is not None and not isinstance(e, (GraphBreak, Retrace)):
                    # a graph break caught on the way (a deferred number's ``__index__`` inside
                    # a size parser's ``except``: ``x.repeat(v.item())``) left a value eager
                    # would not have: that break is the reason, not what the value led to
                    raise GraphBreak(*cap.broken) from None
                if stand_ins and not isinstance(e, (GraphBreak, Retrace, NumpyValuesRead)):
                    # maybe raised for being no ndarray (``memoryview(x)``, a C function's
                    # type check): the arrays themselves say whether the function raises
                    raise NumpyValuesRead([s.position for s in stand_ins], f"tracing raised {type(e).__name__}",
                                          raised=True) from None
                raise
            finally:
                unseal(cap)         # NOTE [deferred scheduler step]
            _state.CAPTURE[0] = prev_cap
            info["deferred"] = tuple(cap.deferred_steps)
            # what the checks below find happened somewhere in the function, not at one op: named
            # by the function's definition (the caller's line said nothing about where)
            after = def_site(fn)
            if os.environ != env:
                raise GraphBreak("the function changes os.environ: the program would not change it on "
                                 "later calls", where=after)
            if warnings.filters != filters:
                raise GraphBreak("the function changes the warning filters (warnings.simplefilter or "
                                 "filterwarnings outside a catch_warnings block): the program would not "
                                 "change them on later calls", where=after)
            if _global_modes() != modes:
                raise GraphBreak("the function leaves a global setting changed (grad mode, the default dtype "
                                 "or device, anomaly mode, print options, matmul precision, deterministic "
                                 "algorithms, thread counts, warn_always, a torch.backends flag): the program "
                                 "would not change it on later calls", where=after)
            if any(call_leaves[i]._rg != w[0] for i, w in wrappers.items()):
                raise GraphBreak("the function sets requires_grad on a tensor argument: the program would do "
                                 "that to a stand-in, not to the caller's tensor", where=after)
            attr_made = []      # the tensors set as attributes of arguments: results too
            info["arg_attrs"] = _argument_attribute_writes(call_leaves, wrappers, after, attr_made)
            if any(call_leaves[i]._chain for i in data_in):
                # the stand-in became a view of itself (``x.t_()``, ``resize_``, ``unsqueeze_``,
                # ``as_strided_``): the caller's tensor would keep its shape and strides
                raise GraphBreak("an in-place op changes the shape or strides of a tensor argument (t_, "
                                 "resize_, unsqueeze_, as_strided_...): the program can write the caller's "
                                 "values, not its layout", where=after)
            if arguments_changed(a2, kw2, treedef, call_leaves, plan.containers):
                # the function got rebuilt copies of its list/dict/data-container arguments;
                # eagerly it changes the caller's own (``acc.append(loss)``, ``batch["x"] = ...``)
                if plan.containers:
                    raise ContainerChanged("the function changes a list, dict or object it was passed (an "
                                           "append, an item or attribute set): this call ran eagerly, and "
                                           "objects passed are keyed by identity from now on", where=after)
                raise GraphBreak("the function changes a list or dict it was passed (an append, an item "
                                 "set): the program would not repeat that on later calls", where=after)
            flipped = cap.flag_left_changed()
            if flipped is not None:
                raise GraphBreak("requires_grad_() leaves the flag of a tensor made outside the compiled "
                                 "function changed: eager changes it on every call, the program would only "
                                 "while tracing (change it outside, between calls, or set it back before "
                                 "returning)", where=flipped)
            moved = cap.attrs_left_changed()
            if moved is not None:     # NOTE [tensor attributes] in capture.py
                raise GraphBreak(f"the function sets the Python attribute '{moved[0]}' of a tensor made outside "
                                 "it: the program would not repeat that on later calls", where=moved[1])
            if cap.made_optimizers_left():     # NOTE [optimizers made in a trace] (capture.py)
                raise GraphBreak("an optimizer made inside the compiled function outlives the call (returned or "
                                 "stored): its state would hold values of the trace; make it outside and "
                                 "pass it in", where=after)
            if cap.made_generators_left():     # NOTE [generators made in a trace] (capture.py)
                raise GraphBreak("a Generator made inside the compiled function outlives the call (returned or "
                                 "stored): its state would hold a value of the trace; make it outside and "
                                 "pass it in", where=after)
            if cap.broken is not None:
                # ``try: v = loss.item() except Exception: v = 0``: the function went on past a
                # break with a value eager would not have; the break stands
                raise GraphBreak(*cap.broken)
            # first the hooks: a list a hook grows holds, when it first ran, what the function
            # appended before it (NOTE [Python appends] in pystate.py: cut from the end back)
            grown = cap.hooks_changed()
            # NOTE [lists hooks grow]: a hook's appends are repeated by every run, after the
            # trace cut them back; the function reading that list (``return len(log)``) would
            # read it as it was while tracing on every call
            if grown and {id(place.get(name)) for place, name, _ in grown} & lists_read(refs, counter_names):
                raise GraphBreak("the function reads a list a hook that ran appends to: it would see the "
                                 "list as it was while tracing on every call", where=after)
            moved = changed(refs, effects0)
            # NOTE [Python counters] in pystate.py: each put back, for every run to add again
            info["counters"] = cap.counters_changed()
            if moved is not None and counters0:
                hooks = list(cap.hooks.values())
                found = counter_changes(counters0, refs + tuple(r for h in hooks for r in h.refs),
                                        ref_names + tuple(n for h in hooks for n in h.names), counter_names)
                if found:
                    info["counters"] += found
                    moved = changed(refs, effects0)
            if moved is not None and scalars0:
                found = scalar_changes(scalars0)
                if found:
                    info["counters"] += found
                    moved = changed(refs, effects0)
            # NOTE [Python appends] in pystate.py: the items each run appends are results
            # (a list on a tensor or module grows unseen by ``changed``: NOTE [lists hooks grow])
            if lists0:
                found = append_changes(lists0)
                if found:
                    grown += found
                    moved = changed(refs, effects0)
                found = None     # (it holds the items: the kept-reference check of NOTE [deferred item])
            info["counters"] = _counters_in_order(info["counters"], cap.deferral_counts, after)
            if moved is not None:
                raise GraphBreak(f"the function changes the Python value '{moved}' (a counter, an "
                                 "append, an attribute...): the program would not repeat that on later calls", where=after)
            # NOTE [numpy views in a trace]: a tensor's numpy view (``w = p.detach().numpy()``,
            # NOTE [numpy bridge]) is the storage's memory, which a trace does not write: what the
            # function reads through the view after the traced write is the old value, and what it
            # writes through it the program's write-back overwrites; both are Python-side work
            # the program would not repeat. A value-changing write shows in ``changed`` above;
            # a read, or a write of the value already there, does not: break on the view itself.
            hosts = [st._np[0] for st, a in zip(storages, state)
                     if getattr(st, "_np", None) is not None and st.array is not a]
            shared = numpy_sharing(py_snap, hosts) if hosts else None
            if hosts and any(o is not st and any(o is s for s in storages)
                             for st, a in zip(storages, state) if st.array is not a for o in overlapping(st)):
                raise GraphBreak("the function writes a tensor made by from_numpy over an array another "
                                 "tensor it reads also shares: the program would not see one's writes "
                                 "in the other", where=after)
            if shared is not None:
                raise GraphBreak(f"the function uses '{shared}', a numpy view of a tensor it updates: "
                                 "the program would not see its reads and writes through it (use the "
                                 "view before or after the call)", where=after)
            info["hooks"] = list(cap.hooks.values())
            grown.reverse()      # cut from the end back: each run grows them in the order made
            # a list the code only appends to that this trace left alone (the append under a
            # branch not taken) is no value read either: a program that guarded its items ran
            # only until a call taking the branch grew it (round 43)
            ids = {id(place.get(name)) for place, name, _ in grown}
            grown += [(place, name, []) for place, name, lst, was in lists0
                      if id(lst) not in ids and place.get(name) is lst and len(lst) == len(was)]
            info["appends"] = tuple((place, name, len(items)) for place, name, items in grown)
            appended = tuple(x for _, _, items in grown for x in items)
            del grown
            if any(name in h.other for _, name, _ in info["appends"] for h in info["hooks"]):
                raise GraphBreak("a hook that ran reads a list the call appends to: it would see the list "
                                 "as it was while tracing", where=after)
            # (an item appended to an outside list is a result too: NOTE [Python appends])
            made = result_objects.returned_made((result, appended), cap.made_modules)
            if made is not None:       # NOTE [stateful objects returned] in result_objects.py
                raise GraphBreak(f"the function hands out the {type(made).__name__} it made (returned or "
                                 "appended to an outside list): a compiled call would hand back the traced "
                                 "one instead of a new one per call (make it outside the compiled function)",
                                 where=after)
            made_class = result_objects.returned_class((result, appended), cap.made_classes)
            if made_class is not None:      # NOTE [classes made in a trace] in result_objects.py
                cls = made_class if isinstance(made_class, type) else type(made_class)
                raise GraphBreak(f"the function returns the class {cls.__qualname__} made by a class statement "
                                 f"inside it{'' if cls is made_class else ' (an instance of it)'}: eager makes a "
                                 "new class on every call, a compiled call would hand back the one made while "
                                 "tracing (define the class outside the compiled function)", where=after)
            if plan.absorb(cap):
                if not plan.vjp and not cap.backward_ran and _has_history(result):
                    # the next trace would find differentiable results and trace again for
                    # them: guessed now, checked below (NOTE [plans of other sizes])
                    plan.vjp = plan.vjp_guess = True
                raise Retrace()
            kept, boxes = {}, {}
            argument_boxes((args, kwargs), (a2, kw2), (), boxes)
            if info["appends"]:
                result = (result, appended)
            appended = None
            info["attr_made"] = bool(attr_made)
            if attr_made:       # NOTE [attributes set on arguments]: outside the appends' pair
                result = (result, tuple(attr_made))
            attr_made = None
            stuck = result_objects.unrebuilt_made(result)
            if stuck is not None:      # NOTE [returned objects that cannot be rebuilt] in result_objects.py
                raise GraphBreak(f"the function returns a {type(stuck[0]).__name__} it made, holding tensors "
                                 f"({stuck[1]}): a compiled call would hand back the traced object instead of a "
                                 "new one per call", where=after)
            made = result_objects.made_objects(result)
            result = keep_outside(result, outside_containers(refs), kept, boxes, made)
            info["arg_boxes"] = kept.pop(ArgBox, False)
            # + the Python values library code read for the traced function (``compiler._guard_read``)
            info["kept"] = tuple(kept.values()) + tuple(cap.read_guards)
            info["rg_reads"] = list(cap.rg_reads.values())
            r_leaves, r_def = flatten(result)
            # (the made objects' originals hold the numbers the rebuilt ones will: NOTE [returned objects])
            check_kept(cap.deferred, r_leaves, made.values())
            made = None
            outside = {id(r()) for _, r in live if r() is not None} | {id(o) for o in owners} \
                | {id(g) for g in saved[1] if g is not None} \
                | {id(a) for a, k in zip(leaves, kinds) if k == "state"}
            recipe, res_arrays, diff_out = _out_recipe(r_leaves, r_def, call_leaves, cap, outside,
                                                       {id(st): (st, r) for st, r in live}, after)
            # the Python places the call bound tensors to (read before ``_escapes`` cuts the
            # graphs of kept tensors: those graphs reach leaves too, NOTE [kept graphs])
            places = rebound_places(py_snap, cap.attr_stores.values())
            # the tensor each rebound place held before the call: a result that is one of them
            # is the place's tensor at the call (``_result_places``)
            info["rebound_before"] = {id(b): slot for slot, b, _ in places if isinstance(b, Tensor)}
            places, info["arg_binds"] = argument_places(places, call_leaves, storages)
            # NOTE [places that held no tensor]: a place the call binds a tensor to that held
            # None (or a number) before it (``self.last = None`` reset between calls, read by
            # ``if self.last is not None``): the guards below see only the tensor bound now, so
            # this program, traced for "no previous tensor", ran for the calls that find one
            # (round-37's adversarial tests). Each such place must hold that value again.
            info["held_before"] = [(slot, b) for slot, b, _ in places if isinstance(b, IMMUTABLE)]
            for i, slots in info["arg_binds"]:
                for slot in slots:          # the caller's tensor, as eagerly: the stand-in dies
                    slot_put(slot, leaves[i])
            if plan.vjp:
                seen_after = [t for t in r_leaves if isinstance(t, Tensor)] + [a for _, _, a in places]
                seen_after += [t._base for t in seen_after if t._base is not None]
                reached = _leaves_reached(list(r_leaves) + [a for _, _, a in places if a._gf is not None],
                                          None if cap.backward_ran else cap, after,
                                          {id(t) for t in seen_after if not any(t is w for w in call_leaves)})
                del seen_after
                ends = [r() for _, r in (live[i] for i in diff_storages)] + [call_leaves[i] for i in diff_args]
                info["unreached"] = frozenset(k for k, t in enumerate(ends) if id(t) not in reached)
                info["reach"] = _result_reach(r_leaves, recipe, ends)
                del ends    # it holds the arguments' stand-ins (the kept-reference check below)
            # NOTE [views of rebound tensors]: a result that is a view of a tensor the call binds
            # to a Python place (``cache["y"] = x * 2; return cache["y"][0]``): candidates by the
            # storage the place's tensor has (ids only: a reference would keep a trace tensor alive)
            bound_sts = {id(a._st): id(a) for _, _, a in places if not a._chain}
            rebound_views = [(n, id(t._st), t._chain) for n, (t, (kind, v)) in enumerate(zip(r_leaves, recipe.leaves))
                             if kind == "new" and t._chain and t._base is not None and v[6] is None
                             and bound_sts.get(id(t._st)) == id(t._base)]
            del bound_sts
            # plain new results by storage, for places bound to them (``self.last = loss.detach()``)
            results = {id(t._st): (k, id(t), t._vc) for k, (t, (kind, _)) in enumerate(zip(r_leaves, recipe.leaves))
                       if kind == "new" and not t._chain and t._base is None}
            if diff_out and not plan.vjp:
                # (also with grad mode off around the call: ``enable_grad()`` inside made them)
                plan.vjp = True
                raise Retrace()
            # NOTE [saved versions of a compiled region]: eager's backward raises when a tensor
            # its ops saved (an argument, a result, a parameter) was written in place after the
            # call; the region's backward reads residuals the program returned, which such a
            # write does not change, so it would use the old values silently. The arguments,
            # results and state tensors that the traced graph of the differentiable results saved
            # get their versions checked instead. A write inside the call after the save (the
            # function changed a tensor its result's graph saved) leaves the expected version
            # behind, so that backward raises too, as eager's does.
            diff_results = [t for t, (kind, v) in zip(r_leaves, recipe.leaves) if kind == "new" and v[1] == "diff"]
            saved_ids = _saved_in_graph(diff_results)
            # NOTE [results computed from results]: over the results and the tensors bound to
            # Python places (NOTE [kept graphs]; which of those become outputs is known after
            # ``plan_rebinds``, when ``_escapes`` has cut their graphs: matched by storage below)
            kept_graphs = [a for _, _, a in places if a._gf is not None]
            through = _through(diff_results + kept_graphs)
            n_results, kept_sts = len(diff_results), [id(a._st) for a in kept_graphs]
            del diff_results, kept_graphs
            s_args = tuple((i, saved_ids[id(call_leaves[i]._vc)][:2]) for i in data_in
                           if id(call_leaves[i]._vc) in saved_ids)
            s_out = tuple((k, saved_ids[id(t._vc)][:2])
                          for k, (t, (kind, _)) in enumerate(zip(r_leaves, recipe.leaves))
                          if kind == "new" and id(t._vc) in saved_ids)
            s_state = tuple((r, saved_ids[id(r()._vc)][:2]) for _, r in live
                            if r() is not None and id(r()._vc) in saved_ids)
            # a tensor made inside and written after its save (``e = x.exp(); z = e * 2;
            # e.add_(1)``, ``e`` not returned): nothing writes it after the call, so a backward
            # from those results always raises, at the versions eager names
            known = {id(call_leaves[i]._vc) for i in data_in} | {id(r()._vc) for _, r in live if r() is not None} \
                | {id(t._vc) for t, (kind, _) in zip(r_leaves, recipe.leaves) if kind == "new"}
            s_state += tuple((_FixedVersion(t), (ks, late)) for v, (ks, late, t) in saved_ids.items()
                             if late and v not in known)
            del saved_ids, known     # (they hold the arguments' stand-ins: the kept-reference check below)
            info["saved"] = (s_args, s_out, s_state)
            owners_end = [(o, o._grad) for o in owners]
            grad_kinds = [_grad_kind(t, g0, cap) for (_, t), g0 in zip(owners_end, saved[1])]
            grads_end = [None if t is None else t._st.array for _, t in owners_end]
            state_end = [st.array if st.array is not a else None for st, a in zip(storages, state)]
            keys_end = [g._key for g in plan.generators]
            # ``manual_seed(n)`` inside: ``initial_seed()`` (and get_rng_state's seed) after every call
            info["seeds"] = tuple((g, g._seed) for g, s0 in zip(plan.generators, saved[4]) if g._seed != s0)
            cap.hyper_inputs.clear()
            info["hyper_signs"] = tuple(cap.hyper_signs.items())
            arg_grads = _arg_grads(kinds, leaves, call_leaves, plan.vjp)
            _returned_grads(recipe, r_leaves, owners_end, grad_kinds,
                            [(i, call_leaves[i]._grad) for i, _ in arg_grads])
            _entry_grads(recipe, saved[1])
            arg_writes = [(i, w._st.array) for i, (w, k) in enumerate(zip(call_leaves, kinds))
                          if k == "data" and w._st.array is not data_in[i]]
            # an argument gets one bump from ``_write`` in ``write_back``, the rest from here
            info["arg_bumps"] = tuple(max(call_leaves[i]._vc[0] - 1, 0) for i, _ in arg_writes)
            if views_shared and arg_writes:
                raise SharedArgsWritten(SHARED_VIEWS)
            wrappers = [(i, weakref.ref(w)) for i, (w, k) in enumerate(zip(call_leaves, kinds)) if k == "data"]
            arrays_in = [(s.position, weakref.ref(s)) for s in stand_ins]
            numpy_returned = bool(cap.numpy_copies) and any(
                cap.numpy_copies.get(t._st) for t in r_leaves if isinstance(t, Tensor))
            cap.numpy_inputs.clear()
            del result, a2, kw2, r_leaves, call_leaves, stand_ins
            cap.grad_owners = {k: v for k, v in cap.grad_owners.items() if not cap.made_here(v[0])}
            escapes = _escapes(cap, storages, owners_end, res_arrays)
            info["rebinds"], info["shared"] = plan_rebinds(
                places, escapes, storages, cap.created,
                {id(o) for o, _ in owners_end} | set(cap.grad_owners), results, cap.backward_ran)
            info["through"] = _through_outputs(through, n_results, kept_sts, info["rebinds"], escapes)
            # NOTE [.data set in a trace]: a tensor moved onto a storage that each call binds to a
            # new tensor elsewhere (``p.data = backup[k]`` with the dict kept, SAM's
            # ``p.data = self.state[p]["old_p"]``) moves onto that call's new tensor too
            # (``Region.run``), so both share one storage as eagerly. A tensor the program could
            # not put there (a view, one with a graph) makes the function run eagerly
            by_escape = {id(escapes[r.index]): n for n, r in enumerate(info["rebinds"])
                         if escapes[r.index] is not None}
            info["data_follows"] = []
            for t, _, _, _ in cap.data_sets.values():
                n = by_escape.get(id(t._st))
                if n is None:
                    continue
                r = info["rebinds"][n]
                if t._chain or t._base is not None or r.requires_grad or cap.made_here(t):
                    raise GraphBreak("a tensor's .data is set to a tensor the function also keeps in a container "
                                     "or attribute (`p.data = backup[name]`): eagerly both share one storage "
                                     "after every call, which the program cannot repeat")
                info["data_follows"].append((n, weakref.ref(t)))
            diff_out = _views_of_rebound(recipe, rebound_views, by_escape, res_arrays, diff_out,
                                         {k for k, _ in info["saved"][1]}, after)
            kept_graph = not cap.backward_ran and any(r.requires_grad and r.kept_graph for r in info["rebinds"])
            if not plan.vjp and kept_graph:
                plan.vjp = True       # NOTE [kept graphs]: a stored tensor is differentiable
                raise Retrace()
            if plan.vjp_guess:        # NOTE [plans of other sizes]: a guess this trace did not need
                plan.vjp_guess = False            # is traced again without it
                if not (diff_out or kept_graph):
                    plan.vjp = False
                    raise Retrace()
            for i, w in wrappers:
                if w() is not None and id(w()) in cap.data_sets:
                    # (the record of the move holds the stand-in: named here, not as a kept reference)
                    raise GraphBreak(f"the function sets .data of its tensor argument {i} (x.data = ...): eagerly "
                                     "the caller's tensor moves onto the other tensor's memory, which a program "
                                     "cannot repeat", where=after)
                if w() is not None:
                    raise GraphBreak(f"the compiled function keeps a reference to its tensor argument "
                                     f"{i} after returning (eager would keep the caller's tensor)")
            kept = [i for i, s in arrays_in if s() is not None]
            if kept:     # stored or returned: a later call would see this trace's stand-in
                raise NumpyValuesRead(kept, "kept after the call")
            if numpy_returned or cap.numpy_argument_kept():
                raise GraphBreak("a tensor sharing a NumPy argument's memory (from_numpy, as_tensor) is returned "
                                 "or kept: eagerly it sees later writes to the caller's array, the program's "
                                 "would be a copy (return or keep a .clone())", where=after)
            if cap.uses_remat:
                jit_options.setdefault("compiler_options", {}).update(REMAT_COMPILER_OPTIONS)
            info["attr_stores"] = list(cap.attr_stores.values())
            info["data_sets"] = [(t, st) for t, st, _, _ in cap.data_sets.values()]
            info.update(recipe=recipe, owners_end=owners_end, grad_kinds=grad_kinds, escapes=escapes, diff_out=diff_out,
                        modules=list(cap.modules.values()),
                        structure=structure0 if cap.layout_filled else _state.STRUCTURE[0],
                        rg_epoch=_state.RG_EPOCH[0],
                        state_written=[a is not None for a in state_end])
            info["arg_grads"] = [i for i, _ in arg_grads]
            info["arg_writes"] = [i for i, _ in arg_writes]
            info["contiguous_args"] = tuple(i for i in data_in if id(leaves[i]) in cap.contiguous_args)
            info["layout_args"] = tuple((i, cap.layout_args[id(leaves[i])][1]) for i in data_in
                                        if id(leaves[i]) in cap.layout_args)
            failed = _any_failed(cap.value_checks)
            info["checked"] = failed is not None
            # NOTE [versions of written state]: eager's in-place ops on outside tensors (an
            # optimizer's ``p.add_``, a buffer's ``+= 1``) bump their version counters on every
            # call; the trace bumped them once (put back below), the program not at all. Each run
            # adds what the trace added, so a graph built before the call that saved such a
            # tensor raises at backward as eagerly, instead of using the new values silently.
            info["bumps"] = tuple((vc, vc[0] - v0) for vc, v0 in cap.versions.values() if vc[0] != v0)
            # NOTE [the .grad a call starts with]: one the call wrote (a backward accumulating into
            # it) and then unbound (``p.grad = p.grad / 2``) keeps that value eagerly
            g_in = iter(grads)
            entry_in = [None if g0 is None else next(g_in) for g0 in saved[1]]
            state_ids = {id(st) for st in storages}
            entry_writes = [(k, g0._st.array) for k, (g0, a0, (_, t)) in enumerate(zip(saved[1], entry_in, owners_end))
                            if g0 is not None and t is not g0 and g0._st.array is not a0
                            and id(g0._st) not in state_ids]
            info["entry_writes"] = tuple(k for k, _ in entry_writes)
            return (res_arrays, state_end, grads_end, keys_end,
                    [st.array for st in escapes] + [g for _, g in arg_grads] + [a for _, a in arg_writes]
                    + [a for _, a in entry_writes], failed)
        except BaseException as error:
            if isinstance(error, Exception):     # a graph break or an error: eager runs the call again
                close_abandoned_generators(error.__traceback__.tb_next)  # its frames below this one
            _put_arrays_back(const_arrays)
            cap.restore_counters()
            cap.restore_hooks()       # before the function's own: its snapshot is the older one
            cap.restore_flags()
            cap.restore_attrs()
            cap.restore_found()       # before the Python state: a numpy array's bytes win
            restore(py_snap)
            cut_appends(lists0)       # NOTE [lists hooks grow]: those on tensors and modules
            cap.restore_objects()
            if os.environ != env:       # an abandoned trace: the eager rerun sets it again
                _put_environ_back(env)
            if warnings.filters != filters:      # so do they
                warnings.filters[:] = filters
                warnings._filters_mutated()
            _put_global_modes_back(modes)
            raise
        finally:
            _state.CAPTURE[0] = prev_cap
            _state.trace_boundary()
            _swap_out(storages, owners, plan.generators, saved)
            for vc, v0 in cap.versions.values():   # NOTE [versions of written state]
                vc[0] = v0
            cap.restore_found()
            for k, (t, g) in cap.grad_owners.items():
                if k not in owner_ids:
                    t._grad = g

    def program(state, grads, keys, hypers, data):
        if not plan.vjp:
            res, st, gr, ks, es, failed = body(state, grads, keys, hypers, data)
            return res, st, gr, ks, es, None, failed

        def f(diff_state, diff_data):
            s2, d2 = list(state), list(data)
            for i, v in zip(diff_storages, diff_state):
                s2[i] = v
            for i, v in zip(diff_data_pos, diff_data):
                d2[i] = v
            res, st, gr, ks, es, failed = body(s2, grads, keys, hypers, d2)
            # NOTE [kept graphs]: a tensor with a graph that the function binds to a Python place
            # (``self.last_loss = loss`` in a forward, as llama2.c's model does) is differentiable
            # after the call, as eagerly: an output of the VJP after the results (a function
            # returning nothing differentiable is traced under the VJP for it). After a backward()
            # inside the function, its graph is consumed: backward through it raises, as eagerly.
            for r in info["rebinds"]:
                r.diff = bool(r.requires_grad and r.kept_graph)
            diff = [res[i] for i in info["diff_out"]] + [es[r.index] for r in info["rebinds"] if r.diff]
            return diff, (res, st, gr, ks, es, failed)
        diff_out, pullback, (res, st, gr, ks, es, failed) = jax.vjp(
            f, [state[i] for i in diff_storages], [data[i] for i in diff_data_pos], has_aux=True)
        return res, st, gr, ks, es, pullback, failed

    data_pos = [i for i, k in enumerate(kinds) if k in DATA_KINDS]
    diff_data_pos = [data_pos.index(i) for i in diff_args]
    hyper0 = hyper.snapshot(plan.optimizers)
    # (tensors of a user subclass too: the methods it overrides are user code the trace runs)
    # NOTE [Python counters] and [Python appends] in pystate.py
    counter_names = (set(), set(), set(), set(), set(), set())
    objects = [a for a, k in zip(leaves, kinds) if k == "const" or (type(a) is not Tensor and k != "ndarray")]
    held = _attribute_objects(leaves)
    loaded = set() if held or "ndarray" in kinds else None
    refs, ref_names = python_refs(fn, objects, loaded, counters_out=counter_names)
    # NOTE [numpy arguments]: a stand-in no conversion took may have met ``type()`` in a helper
    helpers_ask_type = loaded is not None and "type" in loaded
    shared = also_outside(leaves, kinds, refs) if "ndarray" in kinds else ()
    if shared:
        raise NumpyValuesRead(shared, "also a global or closure variable the function reads")
    # NOTE [writes into numpy arguments] (numpy_args.py): arrays traced as themselves
    # (not object arrays: their items are Python objects, compared by their own ``==``)
    const_arrays = [(a, a.copy()) for a, k in zip(leaves, kinds)
                    if k == "const" and type(a) is np.ndarray and a.dtype.kind != "O"]
    if held:
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        loaded |= set(code.co_names) if code is not None else set()
        read = [v for k, v in held if k in loaded and not isinstance(v, (list, dict))]
        if read:
            refs, ref_names = python_refs(fn, objects + read, counters_out=counter_names)
        # a list or dict there is read like a global one (``x.cfg["k"]`` changed in place)
        lists = [(f"attribute {k} of an argument", v) for k, v in held if k in loaded and isinstance(v, (list, dict))]
        refs += tuple((label, None, {label: v}) for label, v in lists)
        ref_names += (frozenset(),) * len(lists)
    stateful = stateful_reads(refs, ref_names)
    if stateful is not None:
        raise GraphBreak(f"the function reads {stateful}, whose position moves on every eager call but "
                         "would move once while tracing (read it outside and pass what it gives as arguments)")
    clock = clock_reads(refs, ref_names)
    if clock is not None:
        raise GraphBreak(f"the function reads {clock}, which gives a new value on every eager call but "
                         "would be read once while tracing (read it outside and pass it as an argument)")
    effects0 = effects_signature(refs)
    counters0 = int_attributes(refs) if counter_names[0] else ()
    scalars0 = scalar_counters(refs, counter_names) if counter_names[2] else ()
    lists0 = grown_lists(refs, counter_names) if counter_names[4] else ()
    py_snap = snapshot(refs)
    prev = x64_enter()
    try:
        state0 = [st.array for st in storages]
        grads0 = [o._grad._st.array for o in owners if o._grad is not None]
        keys0 = [g._current_key() for g in plan.generators]
        hypers0 = hyper.read(hyper_slots)
        data0 = [input_value(leaves[i], kinds[i]) for i in data_pos]
        jitted = Program.trace(program, (state0, grads0, keys0, hypers0, data0), jit_options)
        # donate what the program overwrites: written storages, .grads that stay the owner's
        # grad (the same tensor is the input next call), PRNG keys
        ns, ng = len(state0), len(grads0)
        grads_in = [o for o in owners if o._grad is not None]
        final = {id(o): t for o, t in info["owners_end"]}
        jitted.donate = tuple([i for i, a in enumerate(info["state_written"]) if a]
                              + [ns + i for i, o in enumerate(grads_in) if final[id(o)] is not None]
                              + list(range(ns + ng, ns + ng + len(keys0))))
        del state0, grads0, keys0, hypers0, data0
    except jax.errors.ConcretizationTypeError as e:
        raise GraphBreak(f"a tensor value decides Python control flow or a shape ({type(e).__name__})") from None
    except jax.errors.NonConcreteBooleanIndexError:
        raise GraphBreak("boolean-mask indexing gives a data-dependent shape") from None
    finally:
        x64_exit(prev)
    # The first run links this call's kept graphs to the differentiable state tensors the
    # trace read (NOTE [kept graphs]). One the function rebinds its place away from
    # (``holder["w"] = (holder["w"] * 0.5 + x).requires_grad_()``) was held only by the
    # snapshot deleted below: its weak reference was dead at the first run's write-back
    # (AttributeError). Held here until that run is over, as a later call's place holds it.
    held = [r() for _, r in (live[i] for i in diff_storages)]
    del py_snap     # it holds the closure's containers as they were: old tensors, storages
    rebinds = info["rebinds"]
    rebound = {r.index for r in rebinds}
    escapes = carry_over([None if i in rebound else e for i, e in enumerate(info["escapes"])], storages,
                         {id(storages[r.carried]) for r in (*rebinds, *info["shared"]) if r.carried is not None})
    positions = jax.tree_util.tree_unflatten(jitted.out_tree, range(jitted.out_tree.num_leaves))[4]
    jitted.drop = tuple(positions[j] for j, st in enumerate(escapes) if st is None and j not in rebound)
    region = Region(plan, storages, jitted, kinds, info["recipe"], info["owners_end"], escapes,
                    info["structure"], [live[i][1] for i in diff_storages], diff_args,
                    info["modules"], hyper0)
    region.diff_places = {j: k for k, j in enumerate(diff_storages)}
    if info["checked"]:
        # NOTE [value checks at run time]: the checks alone run first when they are cheap (the
        # state stays donated); otherwise the program reports them and donates nothing
        flag = jitted.out_tree.num_leaves - 1
        region.precheck = jitted.split_checks(flag)
        if region.precheck is None:
            jitted.donate = ()
        else:
            info["checked"] = False
    region.checked = info["checked"]
    region.unreached = info.get("unreached", frozenset())
    region.saved = info.get("saved", ((), (), ()))
    region.through = info.get("through", ())
    region.reach = info.get("reach", ())
    # the Python values the hooks that ran read are guarded as the function's own
    # (NOTE [hooks in a trace])
    refs += tuple(r for h in info["hooks"] for r in h.refs)
    ref_names += tuple(n for h in info["hooks"] for n in h.names)
    region.counters = info.get("counters", ())
    region.warnings = tuple(info.get("warnings", ()))
    region.appends = info.get("appends", ())
    # a closure cell or global counter, or a list only grown, is no value read (NOTE [Python
    # counters] and [Python appends] in pystate.py)
    counted = {slot_key(d, k) for d, k, *_ in region.counters + region.appends}
    if counted:
        kept = [(r, n) for r, n in zip(refs, ref_names) if place_key(r) not in counted]
        refs, ref_names = tuple(r for r, _ in kept), tuple(n for _, n in kept)
    region.py_refs, region.py_scalars = refs, scalar_signature(refs)
    region.tensor_attr_guards = _tensor_attr_guards([r() for _, r in live] + list(plan.owners.values()) + [
        t for m in region.modules for d in (m.__dict__.get("_parameters"), m.__dict__.get("_buffers")) if d
        for t in d.values()])
    readers = [r for _, r in live]
    del live
    region.hyper_slots = hyper_slots
    region.rebinds = tuple(rebinds)
    region.arg_binds = info["arg_binds"]
    region.shared = tuple(info["shared"])
    region.carried = tuple(r for r in (*rebinds, *region.shared) if r.carried is not None)
    follows, region.attr_guards = attribute_places(region.modules, storages, info.pop("attr_stores"),
                                                   {r.carried for r in region.carried})
    region.carried += tuple(follows)
    carried = {r.carried for r in region.carried}
    pinned = {id(st) for j, st in enumerate(storages) if j not in carried}
    followable = {id(st): j for j, st in enumerate(storages)
                  if j not in carried and not info["state_written"][j]}
    checks, places, unread = value_guards(fn, refs, region.modules, ref_names, pinned, followable,
                                          {(id(d), name) for d, name, _, _ in region.attr_guards},
                                          _rebound_places((*rebinds, *region.shared)),
                                          {id(d.get(k)) for d, k, _ in region.appends})
    # a place the call binds an argument to (``self.last = x``) holds the caller's tensor by design
    bound = {id(leaves[i]) for i, _ in region.arg_binds}
    region.unread = tuple(p for p in unread if p[1] is KEYS or id(p[0].get(p[1], None)) not in bound)
    i = unread_identity(region.unread, leaves, kinds)
    if i is not None:
        raise CallOnlyBreak(ARG_IS_STATE.format(i))
    region.data_follows = tuple(info.get("data_follows", ()))
    followers = {id(ref()) for _, ref in region.data_follows}
    # a tensor that follows a rebind's storage is checked by its reader (``_follow_reader``)
    data_sets = [(t, st) for t, st in info.pop("data_sets") if id(t) not in followers]
    held_before = info.pop("held_before", ())
    if held_before:     # what such a place held before the call is its guard, not the tensor bound now
        now = {(id(slot[0]), slot[1]) for slot, _ in held_before}
        checks = tuple(c for c in checks if (id(getattr(c[0], "d", c[0])), c[1]) not in now)
    region.value_guards = checks + info["kept"] + _moved_off_inputs(data_sets, region.storages) + tuple(
        (_Probe(functools.partial(slot_get, slot)), None, b, None) for slot, b in held_before)
    region.value_guards += tuple(      # NOTE [logger levels read in a trace] (capture.py)
        (_Probe(functools.partial(lg.isEnabledFor, level)), f"whether logger '{lg.name}' logs level {level}", on, None)
        for (lg, level), on in info["log_levels"].items())
    region.state_guards = optimizer_state_guards(plan.optimizers, pinned)
    at = {id(st): k for k, st in enumerate(escapes) if st is not None}
    region.data_owners = {at[id(t._st)]: weakref.ref(t) for t, _ in data_sets if id(t._st) in at}
    region.place_groups = tuple(places)
    _result_places(region, places, info.pop("rebound_before", {}))
    followed = carried | {j for j, _, _ in places}
    # the places followed have no reader: the orphan guard alone (a dead weakref: the same)
    region.readers = tuple((j, None if j in followed else r) for j, r in enumerate(readers))
    region.rg_epoch = info["rg_epoch"]
    region.rg_readers = {id(t): (r, t._rg) for _, r in region.readers if r is not None and (t := r()) is not None}
    region.value_guards = tuple(region.value_guards) + tuple(flag_guards(info["rg_reads"], region.rg_readers))
    for d, k, _, _ in region.counters:
        # a counter whose value a guard bakes after all (an object's class methods naming it:
        # NOTE [Python counters] in pystate.py): each run's increment would fail that guard
        cell = d.cell if type(d) is CellSlot else None
        if any(c[1] == k and (c[0] is d or (cell is not None and type(c[0]) is CellSlot and c[0].cell is cell))
               for c in region.value_guards):
            raise GraphBreak(f"the function changes the Python value '{k}' (a counter it also reads): "
                             "the program would not repeat that on later calls", where=def_site(fn))
    region.hyper_signs = info["hyper_signs"]
    region.arg_grads = tuple(info["arg_grads"])
    region.grad_state = grad_state
    region.entry_writes = info["entry_writes"]
    region.arg_writes = tuple(info["arg_writes"])
    region.bumps, region.arg_bumps = info["bumps"], info["arg_bumps"]
    region.seeds = info["seeds"]
    region.contiguous_args = info["contiguous_args"]
    region.layout_args = info["layout_args"]
    region.arg_boxes = info["arg_boxes"]
    region.deferred = info["deferred"]
    region.arg_attrs = info["arg_attrs"]
    region.attr_made = info["attr_made"]
    region.grad_kinds = tuple(info["grad_kinds"])
    region.fresh_in = tuple(o for o, k, none in zip(region.owner_list, region.grad_kinds, region.grad_none)
                            if k is _NEW and not none)
    # donating when nothing else holds the state (``_exclusively_held``), as every later call:
    # one program compiled, not a second one for this first run
    out = region.run(leaves, True, (args, kwargs))
    del held
    return region, out


def _counters_in_order(counters, deferrals, where):
    """``counters`` (``(attributes, name, difference)``, put back) each with whether it is bumped
    before the deferred scheduler steps (``deferrals``: the counters' values at each) or after
    them, as eagerly: a ``LambdaLR`` whose lambda reads ``trainer.global_step`` sees the count
    the eager step had when it called ``sched.step()``."""
    out = []
    for d, k, n in counters:
        a = d.get(k)
        seen = {m.get((id(d), k), a) for m in deferrals}
        if len(seen) > 1 or not seen <= {a, a + n}:
            raise GraphBreak(f"the function bumps the counter '{k}' both before and after lr_scheduler.step(), "
                             "which a compiled call runs after its program", where=where)
        out.append((d, k, n, seen == {a + n}))
    return tuple(out)


def _moved_off_inputs(data_sets, storages):
    """NOTE [.data set in a trace]: ``p.data = new`` moved ``p`` off input storage ``st`` onto
    one the trace made. ``carry_over`` points ``p`` back at ``st`` when nothing else refers to
    ``st`` (the program then writes the new value where it reads it next call); otherwise the
    next call's ``p`` is not the program's input, and a program run would read ``st``'s stale
    value: a check that ``p`` is on ``st`` again, failing into a new trace.
    ``storages`` is the region's list: an input ``Region._write_data`` gave a new storage is
    checked as that one."""
    checks = []
    for t, st in data_sets:
        j = next((j for j, s in enumerate(storages) if st is s), None)
        if j is not None:
            t_ref = weakref.ref(t)
            checks.append((_Probe(lambda t_ref=t_ref, j=j: t_ref() is None or t_ref()._st is storages[j]),
                           None, True, None))
    return tuple(checks)


def _grad_kind(end, entry, cap):
    if end is None:
        return None
    if end is entry:
        return _SAME
    return _NEW if end._st in cap.created else _OTHER


def _swap_in(storages, state, owners, grads, generators, keys):
    saved = ([st.array for st in storages], [o._grad for o in owners],
             [o._grad._st.array for o in owners if o._grad is not None], [g._key for g in generators],
             [g._seed for g in generators])
    for st, a in zip(storages, state):
        st.array = a
        st.gen += 1
    g_it = iter(grads)
    for o in owners:
        if o._grad is not None:
            o._grad._st.array = next(g_it)
            o._grad._st.gen += 1
    for g, k in zip(generators, keys):
        g._key = k
    return saved


def _swap_out(storages, owners, generators, saved):
    arrays, grad_objs, grad_arrays, keys, seeds = saved
    for st, a in zip(storages, arrays):
        st.array = a
        st.gen += 1
    g_it = iter(grad_arrays)
    for o, g in zip(owners, grad_objs):
        o._grad = g
        if g is not None:
            g._st.array = next(g_it)
            g._st.gen += 1
    for g, k, s in zip(generators, keys, seeds):
        g._key, g._seed = k, s


def _leaves_reached(results, cap=None, where=None, seen_after=frozenset()):
    """ids of the leaf tensors whose AccumulateGrad the traced autograd graph of ``results``
    reaches: JAX's VJP of the region gives every differentiable input a gradient (zeros where
    the result does not depend on it differentiably, ``hinge_embedding_loss``'s target), eager
    only those its graph reaches (the others keep ``.grad`` None).

    With ``cap``: a leaf made during the trace (``w = nn.Parameter(x * 2)``,
    ``zeros(3, requires_grad=True)``) that a differentiable result's graph reaches and that the
    caller can see after the call (``seen_after``: ids of the results, the tensors bound to
    Python places and their bases; not the arguments' stand-ins) is a graph break. The region's
    backward node has edges to the program's inputs only, and the leaf comes back as a new
    tensor on every call, so a backward outside would never reach it (``.grad`` None where
    eager accumulates into it). A leaf the caller cannot see (``x.detach().requires_grad_()``
    for an input-gradient penalty) stays in the program: its ``.grad`` is never read."""
    todo = [t.grad_fn for t in results if isinstance(t, Tensor) and t.grad_fn is not None]
    seen, out = set(), set()
    while todo:
        n = todo.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        v = getattr(n, "variable", None)
        if v is not None:
            out.add(id(v))
            if cap is not None and id(v) in seen_after and cap.made_here(v):
                raise GraphBreak("a result's autograd graph reaches a leaf tensor made inside the function "
                                 "(an nn.Parameter or a tensor created with requires_grad=True): a backward "
                                 "after the call would not reach it (return it detached, or run the backward "
                                 "inside)", where)
        todo.extend(e[0] for e in n.next_functions)
    return out


def _rebound_places(rebinds):
    """``(id(container), key)`` of the outermost places the program binds on every call (a
    ``Rebind``'s or ``Shared``'s slots; a tuple or list of tensors there, ``self.hidden = (h,
    c)``, is a new one after every call): not guarded by identity (``guards._guard_container``)."""
    out = set()
    for r in rebinds:
        for c, k in r.slots:
            while isinstance(c, InSequence):
                c, k = c.place
            out.add((id(c), k))
    return frozenset(out)


def _tensor_attr_guards(tensors):
    """Guards on the Python attributes of the outside tensors the trace used (parameters,
    buffers, state): a number kept on a parameter (``p.lr_scale``) that the function reads is
    baked into the program, so a new value there traces again, as a closure's number does.
    Only tensors that have such attributes get one."""
    out, seen = [], set()
    for t in tensors:
        if isinstance(t, Tensor) and id(t) not in seen:
            seen.add(id(t))
            attrs = {k: v for k, v in t.__dict__.items() if k != "_inference"}
            if attrs:
                out.append((weakref.ref(t), attrs))
    return tuple(out)


class _FixedVersion:
    """Called like a state tensor's weakref in ``Region.saved``: a stand-in for a tensor made
    inside the function that it wrote after a save, with that tensor's final version, dtype and
    shape (NOTE [saved versions of a compiled region])."""

    __slots__ = ("_vc", "dtype", "shape")

    def __init__(self, t):
        self._vc, self.dtype, self.shape = [t._vc[0]], t.dtype, tuple(t.shape)

    def __call__(self):
        return self


def _saved_in_graph(roots) -> dict:
    """{id of a version counter (shared by a tensor, its views and detached aliases): (the
    positions in ``roots`` whose traced graph saved that tensor for backward, how many writes
    the function made to it after the save, one such tensor)} (ops' saved tensors, custom
    Functions' ``save_for_backward``; not those a saved_tensors_hooks pair packed): NOTE [saved
    versions of a compiled region]. The traced graph ends at the arguments' stand-ins and the
    state tensors, which are leaves in it."""
    ids = {}
    for k, root in enumerate(roots):
        seen, stack = set(), [root._gf]
        while stack:
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            for s in getattr(n, "saved", None) or getattr(n, "_saved", None) or ():
                t = getattr(s, "tensor", None)
                if t is not None:
                    ks, late, _ = ids.get(id(t._vc), (frozenset(), 0, None))
                    # written in place after it was saved, later in the same call (``y = x @ w``
                    # then ``w.mul_(0.5)`` under no_grad, an optimizer step): eager's backward
                    # from the result raises; the expected version stays that many writes back
                    ids[id(t._vc)] = (ks | {k}, max(late, t._vc[0] - s.version), t)
            stack.extend(e[0] for e in n.next_functions if e is not None)
    return ids


def _result_reach(r_leaves, recipe, ends):
    """NOTE [inputs a result reaches]: per differentiable result of the region (the first
    outputs of its backward node, in order), the positions in ``ends`` (the VJP's inputs) whose
    leaf its traced graph reaches. The region's VJP gives every input a gradient, zeros for one
    that only other results use; with this the node gives such an edge no gradient when the
    backward comes only from results that do not reach it (``out_a, out_b = f(a, b);
    out_a.sum().backward()`` leaves ``b.grad`` None, as eagerly). The node's later outputs (tensors
    bound to Python places) count as reaching every input."""
    pos = {id(t): k for k, t in enumerate(ends)}
    diff = [t for t, (kind, v) in zip(r_leaves, recipe.leaves) if kind == "new" and v[1] == "diff"]
    base = tuple(frozenset(pos[i] for i in _leaves_reached([t]) if i in pos) for t in diff)
    # NOTE [None from a lowered backward] (custom_function.py): known after the backward's trace
    return _custom_function.CutReach.of(diff, pos, base) or base


def _through(results):
    """NOTE [results computed from results]: ((k, positions of the other ``results`` whose
    traced graph goes through result ``k``), ...) for the differentiable results of a region
    (``return logits, loss``: loss's graph goes through logits). The region's backward is one
    node with one output per result, so a gradient from ``loss`` reaches the inputs without
    passing through ``logits``' slot: a hook, ``retain_grad()``, ``autograd.grad`` or
    ``backward(inputs=...)`` at ``logits`` would see only ``logits``' own gradient, where eager's
    sees the part coming from ``loss`` too. ``CompiledFunctionBackward.check_through`` raises in
    that case instead."""
    at = {(id(t._gf), t._out_nr): k for k, t in enumerate(results)}
    through = {}
    for j, t in enumerate(results):
        seen, stack = set(), [t._gf]
        while stack:
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            for e in n.next_functions:
                if e is None or e[0] is None:
                    continue
                k = at.get((id(e[0]), e[1]))
                if k is not None and k != j:
                    through.setdefault(k, set()).add(j)
                stack.append(e[0])
    return tuple((k, frozenset(js)) for k, js in sorted(through.items()))


def _through_outputs(through, n_results, kept_sts, rebinds, escapes):
    """``_through`` over (results, tensors with a graph bound to places) in the positions of
    the region's backward node: the results, then the kept tensors in ``rebinds`` order (those
    ``write_back`` makes differentiable outputs); places that are not outputs dropped."""
    pos = {k: k for k in range(n_results)}
    kept = [r for r in rebinds if r.requires_grad and r.kept_graph]
    for j, r in enumerate(kept):
        st = id(escapes[r.index])
        for p, s in enumerate(kept_sts):
            if s == st:
                pos.setdefault(n_results + p, n_results + j)
    out = []
    for k, js in through:
        if k in pos:
            js = frozenset(pos[j] for j in js if j in pos)
            if js:
                out.append((pos[k], js))
    return tuple(out)


def _arg_grads(kinds, leaves, wrappers, vjp):
    """(index, array) of the ``.grad`` a backward inside the trace gave each tensor argument:
    a leaf argument receives it after every call; for a non-leaf one eager would carry on into
    the graph built outside the call, which one program cannot do."""
    out = []
    for i, (k, w) in enumerate(zip(kinds, wrappers)):
        if k == "data" and w._grad is not None:
            # a view of a tensor needing no grad is a leaf (see ``see_grad_owner`` in capture.py)
            if leaves[i]._gf is not None or (leaves[i]._base is not None and leaves[i]._base._rg):
                raise GraphBreak(f"backward() inside the compiled function reaches argument {i}, "
                                 "whose graph was built outside it")
            out.append((i, w._grad._value))
    return out


def _returned_grads(recipe, r_leaves, owners_end, grad_kinds, arg_grads):
    """NOTE [returned .grad]: a ``.grad`` the call's backward made (``opt.zero_grad()`` then
    ``loss.backward()``, NOTE [new .grad per call]) and the function returned (``return
    p.grad``, ``x.grad`` of an argument) was a "new" result: each call gave the caller one
    tensor and set ``p.grad`` to another holding the same values, so the caller's in-place
    writes to it (``g.zero_()``, clipping, ``g is p.grad``) missed the parameter's gradient.
    Eagerly they are one object: such a leaf now returns the tensor the call left in
    ``.grad``, a view of it a view over that tensor and ``g.detach()``/``g.data`` an alias of
    its storage (the leaf's array is still the program's result, unused)."""
    made = {id(t): ("owner grad", k) for k, ((_, t), kind) in enumerate(zip(owners_end, grad_kinds))
            if kind is _NEW and t is not None}
    made.update((id(g), ("arg grad", i)) for i, g in arg_grads if g is not None)
    if not made:
        return
    stores = {id(t._st): t for (_, t), kind in zip(owners_end, grad_kinds) if kind is _NEW and t is not None}
    stores.update((id(g._st), g) for _, g in arg_grads if g is not None)
    leaves = list(recipe.leaves)
    for n, (t, (kind, v)) in enumerate(zip(r_leaves, leaves)):
        # a plain result (no graph of its own, no retained grad) that is one of those tensors,
        # a detached alias of one or a view of one (over its storage: ``g.view(-1)``, ``g[0]``)
        if kind != "new" or v[0] or v[6] is not None or not isinstance(t, Tensor):
            continue
        if id(t) in made:
            leaves[n] = made[id(t)]
        elif not t._chain and t._base is None and id(t._st) in stores:
            g = stores[id(t._st)]
            leaves[n] = ("grad alias", (made[id(g)], t._vc is g._vc))
        elif t._chain and (b := t._base) is not None and id(b) in made and b._st is t._st:
            leaves[n] = ("grad view", (made[id(b)], t._chain))
    recipe.leaves = leaves


# NOTE [the .grad a call starts with]: a ``.grad`` the call found (``p.grad`` set before it) and
# wrote (a backward accumulating into it) is an input storage of the program; the function may
# then rebind ``p.grad`` (``g = p.grad; p.grad = None; return g``, ``p.grad = p.grad / 2``). The
# program wrote its end value into the trace's tensor and returned that tensor as a constant:
# a later call, which starts with another ``.grad`` object (the one the previous call or the
# caller bound), got the trace's stale object back and the ``.grad`` it started with, which
# eager accumulates into and the caller may hold, kept its old values. Both follow the owner's
# ``.grad`` at the start of each run instead (``Region.grad_state``, "entry grad" leaves).
def _entry_grads(recipe, entry):
    at = {id(g): k for k, g in enumerate(entry) if g is not None}
    leaves = list(recipe.leaves)
    for n, (kind, v) in enumerate(leaves):
        if kind == "const" and isinstance(v, Tensor) and id(v) in at:
            leaves[n] = ("entry grad", at[id(v)])
            recipe.entry_grads = True
        elif kind == "view" and v[0][0] == "state" and id(v[0][1]) in at:   # ``g[0]`` of it
            leaves[n] = ("view", (("entry grad", at[id(v[0][1])]),) + tuple(v[1:]))
            recipe.entry_grads = True
    recipe.leaves = leaves


def _escapes(cap, storages, owners_end, res_arrays):
    """Storages made during the trace that outlive it (other than the results and the new
    ``.grad`` tensors): they must receive their values on every call."""
    skip = {id(st) for st in storages} | {id(t._st) for _, t in owners_end if t is not None}

    def alive():
        return [st for st in list(cap.created) if id(st) not in skip and isinstance(st.array, _Tracer)
                and not any(st.array is a for a in res_arrays)]
    # the trace's reference cycles are young: collecting the young generations is usually
    # enough to see that nothing escapes (a full collection costs ~0.2 s in a large process);
    # a full one only before calling anything an escape
    gc.collect(1)
    out = alive()
    if out:
        gc.collect()
        out = alive()
    if out:
        # a kept tensor's graph is made of traced values: cut it (backward through it raises a
        # clear error), so the trace's intermediates and arguments are not kept alive
        for t in gc.get_referrers(*out):
            if isinstance(t, Tensor) and t._gf is not None:
                t._gf = dead_node(MSG_KEPT)
        gc.collect()
    return out
