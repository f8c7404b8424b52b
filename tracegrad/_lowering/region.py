"""A traced call as one jitted JAX program, run again on every later call (DESIGN 2.4).

A ``Region`` is what ``trace_region`` (``trace.py``) makes of one call: the jitted program
plus the Python-side recipe to feed it (``read_inputs``) and to write its results back into
the same objects (``write_back``), and the guards that say whether it still applies
(``check``: generated code, ``guard_code.py``); ``run`` does one call.

State slots (what the program reads and writes), in input order:
- ``storages``: storages that existed before the call and that the function read or wrote
  (parameters, buffers, optimizer state, any captured tensor) -- read and written in place;
- ``owners``: leaf tensors whose ``.grad`` is state (parameters of the optimizers that ran,
  leaves that received a gradient). Their current ``.grad`` is read through the owner on every
  call (so ``zero_grad`` or a new grad tensor between calls is seen), and after the call each
  owner's ``.grad`` is set to what the traced call left there (None or a tensor);
- ``generators``: PRNG keys (the draws advance the generator exactly as eagerly);
- ``hypers``: each optimizer group's numeric ``lr``, ``momentum`` and ``betas``, passed as
  traced floats so a scheduler changing them between calls needs no new program (``hyper``).
Storages made during the trace that are still referenced afterwards (new ``.grad`` tensors,
an activation stashed in a dict) are outputs too; the program writes them on every call.

How a call's arguments and results become the program's flat inputs and outputs, and come
back as the caller's objects, is ``call_tree.py``; how each result tensor is rebuilt from a
run's arrays (views, aliases of state, graph nodes) is ``results.py``. Also here: the checks a
call's arguments pass before any program runs them (``classify_args``, ``aliased_args``).
"""
from __future__ import annotations

import sys
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._ops.xla_options import nested_options_error
from .._tensor.host import to_device
from .._tensor.numpy_bridge import overlapping, sharing_storages
from .._tensor.storage import Storage
from .._tensor.tensor import Tensor, chain_is_contiguous, chain_value_fn, strides_of
from .._x64 import x64_enter, x64_exit
from ..autograd import grad_mode
from ..autograd._graph_impl import edge as _edge
from . import guard_code, hyper, interrupt
from .capture import GraphBreak
from .warned import KeptBackward
from .deferred_step import run_deferred
from .carry import IMMUTABLE, get as slot_get, put as slot_put
from .program import EXACT_PRECISION
from .call_tree import fill_arg_boxes, unflatten
from .numpy_args import takes_in
from .vjp_node import MSG_KEPT, dead_node

_Tracer = jax.core.Tracer


class Region:
    """One traced specialisation of a function: ``run(args_leaves)`` executes the program on
    the current state and writes everything back; ``check()`` says whether the state still
    has the shape the program was traced for."""

    def __init__(self, plan, storages, program, arg_kinds, out_recipe, owners_end, escapes, structure,
                 diff_state, diff_args, modules, hyper):
        self.arg_grads = self.arg_writes = self.fresh_in = self.seeds = self.contiguous_args = ()
        self.layout_args = ()   # (index, strides) of view arguments whose layout the trace read
        self.bumps = self.arg_bumps = ()   # NOTE [versions of written state]
        self.grad_state = {}       # NOTE [the .grad a call starts with]: storage index -> owner index
        self.entry_writes = ()     # and the owners whose starting .grad the call wrote, then rebound
        self.tensor_attr_guards = ()       # (weakref to an outside tensor, its Python attributes)
        self.arg_boxes = False     # results hold ``ArgBox`` leaves (``fill_arg_boxes``)
        self.checked = False   # the program reports failed value checks (NOTE [value checks at run time])
        self.precheck = None   # or the checks alone, run before the program (``Program.split_checks``)
        self.unreached = frozenset()   # positions of the VJP's inputs no result's graph reaches
        self.reach = ()                # NOTE [inputs a result reaches]: ``_result_reach``
        self.through = ()              # NOTE [results computed from results]: ``_through``
        self.grad_kinds = (_OTHER,) * len(owners_end)     # set by trace_region
        self.dead = False
        self.reused = False        # a later call ran it (``compiler._drop_dead``: NOTE [module arguments])
        self.state_died = False    # dead with tensors it read (NOTE [programs whose state died], compiler.py)
        self._checker = None     # ``check``: NOTE [generated guards] (guard_code.py)
        self.py_refs, self.py_scalars, self.value_guards, self.unread = (), (), (), ()
        self.state_guards = ()     # optimizer state tensors, by place (guards.optimizer_state_guards)
        self.attr_guards = ()      # NOTE [module tensor attributes]
        self.hyper_signs = ()
        self.deferred = ()         # NOTE [deferred scheduler step]: schedulers stepped after each run
        self.arg_attrs = ()        # NOTE [attributes set on arguments]: set again after each run
        self.attr_made = False     # ... and the tensors among them are the results' second half
        # NOTE [Python counters] (pystate.py): (attributes, name, difference, whether before the
        # deferred scheduler steps)
        self.counters = ()
        self.warnings = ()         # NOTE [warnings in a trace] (warned.py): given on every run
        self.backward = KeptBackward(_bwd_program)     # and its backward program's (rule 6)
        self.appends = ()          # NOTE [Python appends] (pystate.py): (place, name, count)
        self.modules = tuple(m for m, _ in modules)
        self.training = tuple(t for _, t in modules)                 # at call start
        self.training_end = tuple((m, m.training) for m, t in modules if m.training is not t)
        self.diff_state, self.diff_args = list(diff_state), diff_args
        self.diff_places = {}     # input index -> place in diff_state (``_follow``)
        # NOTE [state read through a view]: whether a differentiable state tensor may be a view
        # (checked per call only then)
        self.state_views = any(r() is not None and r()._chain for r in self.diff_state)
        self.program = program
        self.arg_kinds = arg_kinds
        self.out_recipe = out_recipe
        self.owners_end = owners_end
        self.escapes = escapes
        self.structure = structure
        self.storages = list(storages)     # a carried input follows its place (NOTE [carried state])
        self.rebinds = self.carried = self.shared = ()
        self.arg_binds = ()        # (argument index, places the call binds it to), ``argument_places``
        self.data_owners = {}      # NOTE [.data set in a trace]: escape index -> weakref to its tensor
        self.data_follows = ()     # (its position in ``rebinds``, weakref to a tensor moved onto it)
        self.readers = ()          # per input storage: (index, weakref to the tensor read through it or None)
        self.rg_epoch, self.rg_readers = 0, {}   # NOTE [requires_grad flips between calls] (_state.py)
        self.place_groups = ()     # NOTE [tensors read by place] in guards.py
        self.generators, self.optimizers = tuple(plan.generators), tuple(plan.optimizers)
        # a carried-over escape is an input storage too: the region holds it twice
        held = self._held = [id(st) for st in self.storages] + [id(st) for st in escapes if st in self.storages]
        for i in held:
            _HELD[i] = _HELD.get(i, 0) + 1
        weakref.finalize(self, _release, held)     # the list as it is then (``_hold``)
        self.owner_list = tuple(plan.owners.values())
        self.grad_none = tuple(o._grad is None for o in self.owner_list)
        # a .grad that is a view of another tensor (``p.grad = big[1]``) when the trace ran:
        # guard_code.checker (not a .grad whose chain is only its own layout: channels_last)
        self.grad_view = any(o._grad is not None and o._grad._chain and o._grad._base is not None
                             for o in self.owner_list)
        self.hyper = hyper       # before the trace: it may create optimizer state

    # ---- guards -------------------------------------------------------------------------
    def check(self) -> bool:
        """Whether the state still has the shape the program was traced for: the guards of
        NOTE [generated guards] (``guard_code.checker``), written for this region on its first
        check (its guards are fixed once the trace is finished)."""
        checker = self._checker
        if checker is None:
            checker = self._checker = guard_code.checker(self)
        return checker(self)

    def _tensor_attrs_hold(self) -> bool:
        """NOTE [tensor attributes] in capture.py: the outside tensors' Python attributes."""
        for ref, attrs in self.tensor_attr_guards:
            t = ref()
            if t is not None and not _same_attrs(t.__dict__, attrs):
                return False
        return True

    def _carried_hold(self) -> bool:
        """Each carried place (NOTE [carried state]) holds a tensor the program can read."""
        for r in self.carried:
            t = slot_get(r.slots[0])
            # the trace read a tensor with this requires_grad (a zero state the caller binds
            # and the tensor the call binds may differ: each gets its own program)
            if not isinstance(t, Tensor) or t._rg != r.read_rg or t._chain:
                return False
            if t._st is not self.storages[r.carried] and not self._follow(r, t):
                return False
        return True

    def _place_groups_hold(self) -> bool:
        """NOTE [tensors read by place] in guards.py: each group's places hold plain tensors on
        one storage, which the program reads (followed when it moved)."""
        for j, slots, chains in self.place_groups:
            st = None
            for slot, chain in zip(slots, chains):
                t = slot_get(slot)
                if type(t) is not Tensor or t._rg or t._chain != chain or (st is not None and t._st is not st):
                    return False
                st = t._st
            if st is not self.storages[j] and not self._follow_storage(j, st):
                return False
        return True

    def _rg_flips_hold(self) -> bool:
        """NOTE [requires_grad flips between calls] (``_state``): every tensor whose flag flipped
        since this region last looked is one its program reads, and has the flag it was traced
        with now (a GAN's discriminator, frozen for the other step and unfrozen for this one).
        A tensor on none of this program's storages is another program's: freezing a layer of
        the next model in a notebook does not send every compiled step back to tracing (a
        ``requires_grad`` this function's Python reads is a flag guard of its own)."""
        since, mine = self.rg_epoch, self.rg_readers
        for ref, epoch in list(_state.RG_FLIPS.values()):
            if epoch > since:
                t = ref()
                if t is None:          # gone: nothing reads it (its storage: the orphan guard)
                    continue
                if id(t) not in mine and id(t._st) not in self._held:
                    continue
                entry = mine.get(id(t))
                if entry is None or entry[0]() is not t or t._rg != entry[1]:
                    return False
        self.rg_epoch = _state.RG_EPOCH[0]
        return True

    def args_contiguous(self, leaves) -> bool:
        """The view arguments whose layout decided a ``reshape``/``view`` in the trace are
        contiguous again (``Capture.see_layout_choice``), and those whose strides it read
        (``Capture.argument_layout``) have them again."""
        return (all(chain_is_contiguous(leaves[i]) for i in self.contiguous_args)
                and all(strides_of(leaves[i]) == st for i, st in self.layout_args))

    def _follow(self, r, t) -> bool:
        """The place of carried input ``r`` holds ``t``, bound there outside the program
        (``carry["h"] = torch.zeros(...)``): read ``t`` from now on, when it can stand for the
        traced tensor."""
        if t._chain or t._base is not None or not self._follow_storage(r.carried, t._st):
            return False
        self._link(r.carried, t)
        return True

    # NOTE [tensors moved off their storage]
    # A program reads state by storage: the storages the trace found (``Plan.storages``). A
    # tensor moved to another storage between calls (``p.data = new``, ``p.set_(new)``, a
    # compiled step's ``.data =`` that must leave a kept alias alone, NOTE [.data set in a
    # trace]) left the program reading the old one. When nothing else holds that storage the
    # orphan guard below drops the region; when something does (``w = p.data`` kept, a
    # ``p.detach()``), the old storage is alive and the program would silently read it. So the
    # tensor each storage was read through (weakly held; not the places NOTE [carried state]
    # and NOTE [tensors read by place] follow themselves) is checked to be on it still, and
    # followed onto its new storage when it moved.
    def _follow_reader(self, j, t) -> bool:
        """NOTE [tensors moved off their storage]: the tensor the trace read input storage ``j``
        through is on another storage now (``p.data = new``, ``p.set_(new)`` outside, while
        another tensor still shares the old one): read its new storage from now on, when the
        program can (else a new trace)."""
        st = t._st    # a plain one: numpy's memory or a layout is the trace's to see
        return not t._chain and t._base is None and type(st) is Storage and not getattr(st, "_layout", False) \
            and self._follow_storage(j, st)

    def _follow_storage(self, j, st) -> bool:
        """Input storage ``j`` is ``st`` from now on, when it has the traced shape and dtype
        and is no other input (the program would read one value for two)."""
        old = self.storages[j].array
        if st.array is None or st.array.shape != old.shape or st.array.dtype != old.dtype \
                or any(s is st for s in self.storages):
            return False
        self._hold(j, st)
        return True

    def _carry_into(self, j, t):
        """Input ``j`` is the tensor ``t`` a place now holds (NOTE [carried state])."""
        self._hold(j, t._st)
        self._link(j, t)

    def _link(self, j, t):
        """When input ``j`` is differentiable (NOTE [kept graphs]), the next call's graph links
        to ``t``, the tensor its place holds then, not the one the trace read (``h = h * 0.5 +
        x`` chains through every call, as eagerly; linked to the trace's tensor, backward
        skipped all the calls between)."""
        k = self.diff_places.get(j)
        if k is not None:
            self.diff_state[k] = weakref.ref(t)
            self.state_views = self.state_views or bool(t._chain)

    def _hold(self, j, st):
        """Input storage ``j`` is ``st`` from now on (the orphan guard's count moves with it)."""
        _release([id(self.storages[j])])
        self._held[self._held.index(id(self.storages[j]))] = id(st)
        _HELD[id(st)] = _HELD.get(id(st), 0) + 1
        self.storages[j] = st

    def _write_data(self, k, a):
        """NOTE [.data set in a trace]: escape ``k`` is the storage the function's ``t.data = new``
        left ``t`` on. Eagerly ``t`` is on a new storage after every call; writing the new value
        ``a`` into the old one is the same only while ``t`` is still on it and no other tensor
        shares it (a ``t.detach()``/``t.data`` kept from an earlier call keeps that call's values;
        a ``t`` the caller moved must still get this call's value). Otherwise ``t`` gets a new
        storage, which the program reads and writes from then on."""
        t = self.data_owners[k]()
        old = self.escapes[k]
        if t is None or t._st is old and self._only_tensor(old):
            old.array = a
            old.gen += 1
            return
        new = Storage(a)
        t._st, t._vcache = new, None
        self.escapes[k] = new
        for j, st in enumerate(self.storages):
            if st is old:       # carried over (``carry_over``): the program reads it next call
                self._hold(j, new)
                ids = self._held
                if id(old) in ids:      # its second count, as the escape
                    _release([id(old)])
                    ids[ids.index(id(old))] = id(new)
                    _HELD[id(new)] = _HELD.get(id(new), 0) + 1

    def _only_tensor(self, st) -> bool:
        """Whether a single tensor refers to escape storage ``st``. The other references: the
        escapes list, the regions' input lists (``_HELD``, where an escape that is this region's
        input too counts twice, its escapes entry included), the caller's and this frame's
        variables, and getrefcount's argument."""
        others = 3 + _HELD.get(id(st), 0) + (0 if any(st is s for s in self.storages) else 1)
        return sys.getrefcount(st) - others <= 1

    def _grads_unshared(self) -> bool:
        """Whether the ``.grad`` tensors this call replaces by new ones (NOTE [new .grad per
        call]) are held only by their parameter: then their buffers may be donated. A ``.grad``
        the user kept (or a view of it) must keep its values, as eagerly."""
        for o in self.fresh_in:
            g = o._grad
            # references: the parameter's slot and getrefcount's argument (and ``g``)
            if sys.getrefcount(g) > 3 or sys.getrefcount(g._st) > 2:
                return False
        return True

    # ---- one call -----------------------------------------------------------------------
    def read_inputs(self, arg_leaves):
        """The program's flat inputs: storages, .grad arrays, PRNG keys (donated), then the
        optimizer hyper-parameters and the data arguments."""
        flat = [st.array for st in self.storages]
        for i, k in self.grad_state.items():   # NOTE [the .grad a call starts with]
            g = self.owner_list[k]._grad
            if g is not None:
                flat[i] = g._st.array
        flat += [o._grad._st.array for o, none in zip(self.owner_list, self.grad_none) if not none]
        flat += [g._current_key() for g in self.generators]
        flat += hyper.read(self.hyper_slots)
        flat += [input_value(a, kind) for a, kind in zip(arg_leaves, self.arg_kinds) if kind in DATA_KINDS]
        return flat

    def run(self, arg_leaves, donate=True, call=None):
        """One run of the program on this call's argument leaves; ``call`` (the call's
        ``(args, kwargs)``) puts the caller's own argument containers into the lists it grows
        (``fill_arg_boxes``). A Ctrl-C meanwhile raises after the write-back (NOTE [interrupts
        and donated state] in interrupt.py)."""
        held = interrupt.hold()
        try:
            return self._run(arg_leaves, donate, call)
        finally:
            interrupt.release(held)

    def _run(self, arg_leaves, donate, call):
        prev = x64_enter()
        try:
            flat = self.read_inputs(arg_leaves)
            # waits for the check (NOTE [value checks at run time])
            if self.precheck is not None and self.precheck.failed(flat):
                raise ValueCheckFailed(self)
            # a warning the filters make an error raises mid-function eagerly (rule 3 of NOTE
            # [warnings in a trace] in warned.py): before the program donates its inputs
            if self.warnings and any(w.raises() for w in self.warnings):
                raise ValueCheckFailed(self, WARNING_IS_ERROR)
            # the refcount check only where this program donates at all (NOTE [donation on CPU])
            donate = donate and bool(self.program.donate) and self._grads_unshared()
            outs = self.program(flat, donate)
            del flat
        finally:
            x64_exit(prev)
        # waits for the program (NOTE [value checks at run time]); np.asarray: bool() on a
        # jax.Array costs ~20 us more
        if self.checked and np.asarray(outs[6]):
            raise ValueCheckFailed(self)
        for w in self.warnings:      # NOTE [warnings in a trace] (warned.py)
            w.give()
        try:
            out = self.write_back(outs, arg_leaves)
            if self.attr_made:
                out, made = out
            for i, sets, dels, refs in self.arg_attrs:     # NOTE [attributes set on arguments]
                d = arg_leaves[i].__dict__
                d.update(sets)
                for k, (arg, j) in refs.items():
                    d[k] = arg_leaves[j] if arg else made[j]
                for k in dels:
                    d.pop(k, None)
            if self.appends:
                out = self._append(out, call)
            for d, k, n, early in self.counters:    # NOTE [Python counters] in pystate.py
                if early:
                    d[k] = d.get(k) + n
            if self.deferred:
                run_deferred(self.deferred)
            for d, k, n, early in self.counters:
                if not early:
                    d[k] = d.get(k) + n
            return out
        except Exception as e:
            # some state may be written already: the first run's caller must not answer this by
            # running the call again eagerly (its updates would happen twice)
            e._tracegrad_no_rerun = True
            raise

    def _append(self, out, call):
        """The function's result, after growing the lists it appended to (NOTE [Python appends]
        in pystate.py) by this run's items, the results after it."""
        out, items = out
        if self.arg_boxes and call is not None:
            # an argument list/dict appended (``seen.append(meta)``) is the caller's object, as
            # the function's result is, not the trace's copy's box (round 43)
            items = fill_arg_boxes(items, call)
        k = 0
        for d, name, n in self.appends:
            d.get(name).extend(items[k:k + n])
            k += n
        return out

    def write_back(self, outs, arg_leaves):
        res, state, grads_end, keys, escapes, pullback = outs[:6]
        # NOTE [the .grad a call starts with]: read before the owners' .grad are set below
        entry = [o._grad for o in self.owner_list] \
            if self.grad_state or self.entry_writes or self.out_recipe.entry_grads else ()
        vjp = None
        if pullback is not None:
            # reversed: the engine then accumulates the last-used parameters first, as eager does
            ends = [r() for r in self.diff_state] + [arg_leaves[i] for i in self.diff_args]
            # a leaf no differentiable result's graph reaches gets no gradient, as eagerly (not zeros)
            edges = tuple(reversed([(None, 0) if k in self.unreached else _edge(t) for k, t in enumerate(ends)]))
            backward = self.backward
            if self.state_views:     # NOTE [state read through a view]
                views = [(k, t._chain) for k, t in enumerate(ends[:len(self.diff_state)])
                         if t is not None and t._chain]
                if views:
                    backward = _StateViews(backward, views)
            vjp = (pullback, edges, self.saved, self.through, self.reach, backward)
        storages = self.storages
        if self.grad_state:                   # this call's .grads, not the trace's objects
            storages = list(storages)
            for i, k in self.grad_state.items():
                if entry[k] is not None:
                    storages[i] = entry[k]._st
        for st, a in zip(storages, state):
            if a is not None:
                st.array = a
                st.gen += 1
        storages = None      # (no reference of this frame may count in ``_write_data``)
        for vc, n in self.bumps:              # NOTE [versions of written state]
            vc[0] += n
        for g, k in zip(self.generators, keys):
            g._key = k
        for g, seed in self.seeds:
            g._seed = seed
        for (o, t), kind, a in zip(self.owners_end, self.grad_kinds, grads_end):
            if kind is _NEW:
                o._grad = Tensor._make(a)      # eager's backward makes a new .grad tensor
                continue
            if kind is _SAME:
                t = o._grad                    # accumulated in place into this call's .grad
            if t is not None and a is not None:
                t._st.array = a
                t._st.gen += 1
            o._grad = t
        owners = self.data_owners
        for k, (st, a) in enumerate(zip(self.escapes, escapes)):
            if st is not None and k not in owners:
                st.array = a
                st.gen += 1
        st = None      # (no reference of this frame may count in ``_write_data``)
        for k in owners:
            self._write_data(k, escapes[k])
        # results that are the tensor a followed place held at the call (``_result_places``),
        # read before the rebinds below put this call's new tensors there
        placed = [slot_get(slot) for slot in self.out_recipe.places]
        kept, made = [], []
        # made under inference_mode() (around the call or inside it): inference tensors, as
        # eager's ops make (NOTE [what a rebound tensor keeps] in carry.py)
        inference = _state.INFERENCE_DEPTH[0] and grad_mode.STATE[1]
        for r in self.rebinds:                # a new tensor per call, as eager binds
            t = (r.cls or Tensor)._make(escapes[r.index])
            t._vc[0] = r.version                # as eager's in-place ops inside left it
            if r.attrs:
                t.__dict__.update(r.attrs)
            if inference or r.inference:
                t._inference = True
            if r.requires_grad:
                t._rg = True
                if r.diff and vjp is not None:
                    kept.append(t)            # NOTE [kept graphs]
                elif r.kept_graph:
                    t._gf = dead_node(MSG_KEPT)
            for slot in r.slots:
                slot_put(slot, t)
            if r.carried is not None:
                self._carry_into(r.carried, t)
            made.append(t)
        for n, ref in self.data_follows:      # NOTE [.data set in a trace]: onto the new tensor's storage
            o = ref()
            if o is not None:
                o._st, o._vcache = made[n]._st, None
        for i, slots in self.arg_binds:      # ``self.X = X``: the caller's tensor
            for slot in slots:
                slot_put(slot, arg_leaves[i])
        for m, flag in self.training_end:     # train()/eval() called inside the function
            object.__setattr__(m, "training", flag)
        rest = escapes[len(self.escapes):]
        for i, a in zip(self.arg_grads, rest):
            arg_leaves[i]._grad = Tensor._make(a)   # the eager backward's leaf .grad
        for i, a, n in zip(self.arg_writes, rest[len(self.arg_grads):], self.arg_bumps):
            arg_leaves[i]._write(a)                 # an in-place op on the argument
            arg_leaves[i]._vc[0] += n               # the eager ops' other bumps
        for k, a in zip(self.entry_writes, rest[len(self.arg_grads) + len(self.arg_writes):]):
            g = entry[k]                            # NOTE [the .grad a call starts with]
            if g is not None:
                g._st.array = a
                g._st.gen += 1
        out = self.out_recipe.leaves_out(res, arg_leaves, vjp, kept, placed,
                                         [o._grad for o, _ in self.owners_end], made, entry)
        del made
        for s in self.shared:                 # the result itself, or a detached alias of it
            t = out[s.result]
            if not s.same:
                t = t.detach()
                if not s.same_version:
                    t._vc = [0]               # ``.data``: its own version counter
                if s.grad is not None:        # NOTE [a place holding what a result detaches] in carry.py
                    t._rg = True
                    if s.grad == "kept":
                        t._gf = dead_node(MSG_KEPT)
            for slot in s.slots:
                slot_put(slot, t)
            if s.carried is not None:
                self._carry_into(s.carried, t)
        return unflatten(self.out_recipe.treedef, out)


class CallOnlyBreak(GraphBreak):
    """A graph break caused by this call's arguments alone: this call runs eagerly, and the
    same signature traces again when called with other arguments."""


class ContainerChanged(CallOnlyBreak):
    """A call changed an argument while data-container classes were flattened (NOTE [data
    container arguments]): maybe a long-lived object the function updates (``state.step += 1``),
    which a program keyed by its identity repeats. The compiled function stops flattening."""


# NOTE [tensors compared by identity] in guards.py
ARG_IS_STATE = ("tensor argument {} is a tensor the function also reaches from outside (a closure, "
                "global or attribute) without reading it as data: Python comparing them by identity "
                "(`x is t`) would see a stand-in while tracing")


class SharedArgsWritten(CallOnlyBreak):
    """This call's arguments share memory and the function writes into one (``SHARED_VIEWS``):
    this call runs eagerly; calls with arguments of their own still use a program."""


WARNING_IS_ERROR = ("a warning the function gives is an error under this call's warning filters: this call "
                    "ran eagerly (the error comes where the function warns, after the state changes before it)")


class ValueCheckFailed(Exception):
    """A value check an eager op makes failed in this run of ``region``'s program (NOTE [value
    checks at run time]): nothing was written back; the call must run eagerly."""

    def __init__(self, region, reason=None):
        super().__init__("a value check failed at run time")
        self.region, self.reason = region, reason


_HELD = _state.HELD_STORAGES   # id(storage) -> how many live regions hold it (the orphan guard's baseline)


def _release(ids):
    for i in ids:
        n = _HELD.get(i, 0) - 1
        if n > 0:
            _HELD[i] = n
        else:
            _HELD.pop(i, None)


# the argument kinds the program takes as inputs (``data`` in ``trace_region``), in leaf order
DATA_KINDS = ("data", "ndarray")


def input_value(a, kind):
    """The program input of argument leaf ``a`` of kind ``kind`` (one of ``DATA_KINDS``): a
    tensor's array, or a copy of an ndarray's (the caller may write the array after the call)."""
    return a._value if kind == "data" else to_device(np.array(a))


def classify_args(leaves, baked=frozenset()):
    """Per flattened argument leaf: "data" (a tensor fed to the program; a leaf that requires
    grad gets its ``.grad`` from the program), "same" (NOTE [one tensor passed twice]), "state"
    (a Parameter or Buffer, or a leaf that already has a ``.grad``: outside state, used as
    itself and keyed by identity), "ndarray" (a NumPy array fed to the program, NOTE [numpy
    arguments]; "same" too when passed twice) or "const" (a Python value baked into the program
    and part of the cache key; also an array at one of the positions ``baked``, which the
    function reads by value)."""
    kinds, data = [], None
    # an array read by value at one place is a constant at every place it is passed (a stand-in
    # there would not be ``is`` the array here)
    baked_ids = {id(leaves[i]) for i in baked if i < len(leaves)} if baked else ()
    for i, a in enumerate(leaves):
        if isinstance(a, Tensor):
            kind = "state" if type(a) is not Tensor or (a._grad is not None and a._gf is None) else "data"
        elif type(a) is np.ndarray:
            kind = "const" if i in baked or id(a) in baked_ids or not takes_in(a) else "ndarray"
        else:
            kind = "const"
        if kind in DATA_KINDS or type(a) is np.ndarray:
            # a repeat: the first one's place (an array passed twice is one object in the trace
            # too, a constant or an input)
            if data is not None and id(a) in data:
                kind = "same"
            else:
                data = data or set()
                data.add(id(a))
        kinds.append(kind)
    return tuple(kinds)


# NOTE [one tensor passed twice]: ``model(ids, labels=ids)`` (a causal LM's own targets) passes
# one tensor as two arguments. Each data argument gets a stand-in of its own in the trace, so
# ``a is b``, and a write through one seen in the other, would differ from eager: such calls
# ran eagerly. A repeat of a data argument is now "same": keyed by the position it repeats
# (``first_of``), never fed to the program, and given that position's stand-in in the trace,
# so the program sees one tensor, as eager does; its gradient, writes and .grad go to that
# one tensor once. A call passing two different tensors there has another key.
def first_of(leaves, i):
    """The position of the first argument that is ``leaves[i]`` (a "same" argument)."""
    a = leaves[i]
    return next(j for j in range(i) if leaves[j] is a)


# ``aliased_args``' answer when distinct tensor arguments share memory (``buf[:-1]`` and
# ``buf[1:]``) and nothing else does: one program runs the call when it writes into no argument
# (each gets an array of its own, and only reads them); one that writes runs the call eagerly.
SHARED_VIEWS = "tensor arguments that share memory (views of one tensor), one of them written in place"


def aliased_args(leaves, kinds, state=_HELD):
    """Why one XLA program cannot run this call: a tensor passed as two arguments (``f(x, x)``:
    ``a is b`` would differ) or a tensor argument sharing memory with outside state the function
    reads (``state``: storage ids; by default those any compiled program holds), whose writes
    would not reach each other; ``SHARED_VIEWS`` when only distinct arguments share memory; None
    when every argument has memory of its own."""
    seen, shared, seen_st, refs, arrays = {}, False, [], (), ()
    for i, (a, k) in enumerate(zip(leaves, kinds)):
        if k == "const" and isinstance(a, weakref.ref):
            refs += (a,)
        if k == "data":
            sid = id(a._st)
            other = seen.get(sid)
            if other is not None:
                if other is a:
                    return f"tensor argument {i} is also another argument"
                shared = True
            if state.get(sid) if isinstance(state, dict) else sid in state:
                return f"tensor argument {i} shares memory with a tensor a compiled function reads from outside"
            # a storage over a numpy array another storage shares (``from_numpy`` twice on one
            # array): as for views of one tensor, with that storage held like this one
            for o in overlapping(a._st):
                if state.get(id(o)) if isinstance(state, dict) else id(o) in state:
                    return (f"tensor argument {i} shares memory (one numpy array) with a tensor a "
                            "compiled function reads from outside")
                shared = shared or any(s is o for s in seen_st)
            seen_st.append(a._st)
            seen[sid] = a
        elif k == "ndarray":
            arrays += ((i, a),)
    for i, a in arrays:
        # copied in before the program runs: eagerly a write to a tensor over its memory would
        # be seen by ``from_numpy`` of it after the write (NOTE [numpy arguments])
        for o in sharing_storages(a):
            if state.get(id(o)) if isinstance(state, dict) else id(o) in state:
                return (f"NumPy array argument {i} shares memory with a tensor a compiled function reads "
                        "from outside")
            shared = shared or any(s is o for s in seen_st)
    for r in refs:
        # ``f(weakref.ref(w), w)`` (ReproTests.test_weakref): ``x_weak() is weight`` compares the
        # caller's tensor with the argument's stand-in in a trace: False, a branch frozen
        t = r()
        if isinstance(t, Tensor) and seen.get(id(t._st)) is t:
            return "a weakref argument refers to a tensor argument (`ref() is x` would differ in the program)"
    return SHARED_VIEWS if shared else None


def _conj_complex(tree):
    return jax.tree_util.tree_map(lambda a: jnp.conj(a) if jnp.iscomplexobj(a) else a, tree)


# NOTE [state read through a view]: a tensor the program reads as outside state whose storage
# it lifts is differentiated through that storage array; when the tensor is a view of it (a leaf
# made by ``torch.arange(6.).reshape(2, 3).requires_grad_()``, a view of a buffer), the VJP's
# gradient had the storage's shape ((6,)) and AccumulateGrad added it to a (2, 3) ``.grad``: a
# JAX broadcasting error at backward on every compiled call after the first (round 31). The
# view's gradient is its view of the storage's gradient (the chain is linear): applied to that
# entry of the backward's output. Checked per call only for a region whose state tensors were
# views when traced or followed (``Region.state_views``): nothing for the others.
class _StateViews:
    """A region's backward whose state gradients ``(k, chain)`` are taken through the view
    chain of the tensor the state was read through."""

    __slots__ = ("backward", "views")

    def __init__(self, backward, views):
        self.backward, self.views = backward, views

    def __call__(self, pullback, cts):
        d_state, d_data = self.backward(pullback, cts)
        d_state = list(d_state)
        for k, chain in self.views:
            d_state[k] = chain_value_fn(chain)(d_state[k])
        return d_state, d_data


def _bwd_body(pullback, cts):
    # NOTE [complex gradients] (_ops/registry.py): torch's gradient is conj(JAX vjp(conj(ct)));
    # decided while tracing, so real programs are unchanged
    return _conj_complex(pullback(_conj_complex(cts)))


_bwd_jitted = jax.jit(_bwd_body, compiler_options=EXACT_PRECISION)    # NOTE [no excess precision]


def _bwd_program(pullback, cts):
    """A region's backward: its jitted program, or -- run inside another JAX trace -- the pure
    function that trace goes through (NOTE [backward of a region inside a transform])."""
    try:
        return _bwd_jitted(pullback, cts)
    except ValueError as e:
        if not nested_options_error(e):
            raise
    return _bwd_body(pullback, cts)


# NOTE [backward of a region inside a transform]
# ``autograd.grad`` through a compiled call's results, run inside ``func.grad``/``vjp``/``vmap``
# (``func.vjp(lambda v: autograd.grad(y, x, v)[0], x)``, y = compiled(x)), gives the region's
# backward cotangents that are that transform's tracers. JAX refuses a jit with
# ``compiler_options`` nested in another trace, so the user got JAX's ValueError about
# ``compiler_options``; torch's compiled backward raises "trying to call a compiled backward
# function within vmap/grad/vjp". The pullback is a pure JAX function of the residuals the
# forward saved, so the transform traces through it instead and the call gives eager's result
# (the program's exact-precision option only matters to a program XLA compiles on its own).


# NOTE [new .grad per call]
# What an owner's ``.grad`` is after the call, by what the trace saw: None; the same tensor it
# had on entry (accumulated in place: the program's result goes into whichever tensor is the
# ``.grad`` on entry of each call); a tensor made during the trace (``zero_grad()`` then
# ``backward()``: eagerly each call makes a new tensor, so a ``.grad`` the user kept from an
# earlier call keeps its values: each call wraps the result in a new tensor); or another
# tensor from outside (``p.grad = t``: that tensor receives the values).
_SAME, _NEW, _OTHER = "same", "new", "other"


def _same_attrs(now, attrs) -> bool:
    """``now`` (a tensor's ``__dict__``) holds what ``attrs`` held: equal numbers and strings,
    the same other objects."""
    if len(now) - ("_inference" in now) != len(attrs):
        return False
    for k, v in attrs.items():
        w = now.get(k, _same_attrs)
        if w is not v and not (type(w) is type(v) and isinstance(v, IMMUTABLE) and w == v):
            return False
    return True

