"""Process-wide state that ``tracegrad.compile`` must see (layer L0: imports nothing).

``CAPTURE[0]`` is the region capture running right now (a ``_lowering.capture.Capture``) or
None. Lower layers cannot import ``_lowering``, so they report what a trace must know through
the few functions here; each is called only when ``CAPTURE[0] is not None``, so eager code pays
one list read at each site.

``STRUCTURE[0]`` names the state of what a compiled program cannot see in tensor values: hooks
added or removed, modules' parameters/buffers/submodules rebound. A compiled call compares it
with the token at its trace and re-traces when it differs (one int compare per call instead of
walking every module); a set of hooks that comes back brings its token back (NOTE [hook sets
come back]). ``train()``/``eval()`` flips back and forth in every training loop, so
modules' ``training`` flags are guarded one by one instead; so are ``requires_grad`` flips
(NOTE [requires_grad flips between calls]: ``RG_EPOCH``/``RG_FLIPS``).

``GRAD_MODE`` is the thread-local ``[grad enabled, inference mode]`` pair (as torch: a new
thread starts with grad on), written by ``autograd/grad_mode.py``'s context managers and read
by dispatch with one index; ``INFERENCE_DEPTH[0]`` counts the ``inference_mode(True)`` blocks
open in any thread (a cheap pre-check before the thread-local read). ``grad_mode.STATE`` and
``grad_mode.INFERENCE_DEPTH`` are these same objects.

``SAVED_HOOKS`` is the ``saved_tensors_hooks`` stack of ``(pack, unpack)`` pairs (innermost
last), ``ANOMALY`` is anomaly mode's ``[enabled, check_nan]`` and ``DEFAULT_DTYPE[0]`` is
``get_default_dtype()``'s dtype (``_ops/dtypes.py`` sets it to float32 at import). All three are
process-wide, as in torch; ``autograd._graph_impl.SAVED_HOOKS``/``ANOMALY`` and
``_ops.dtypes._default_float`` are these same objects.

The cache registry: a module that keeps a process-wide memo (jitted functions per op and
static arguments, node classes, promotion results...) registers it once with
``register_cache``; ``clear_caches()`` empties every registered one (``tracegrad.compiler``'s
reset may call it) and ``cache_sizes()`` reports how full each is.
"""
from __future__ import annotations

import sys
import threading
import types
import weakref

CAPTURE: list = [None]
# the sets of ids of storages created while a torch.cond/while_loop branch runs (one per open
# branch, innermost last; empty outside them): a branch may write into the tensors it made,
# not into outside ones (NOTE [torch.cond with a tensor pred] in _api/torch_extras.py)
BORN: list = []
# depth of compiled functions running their Python eagerly (compiler.is_compiling reads it with
# CAPTURE; here so that layers below the compiler can ask too: torch._utils.is_compiling)
IN_COMPILED: list = [0]
STRUCTURE: list = [0]
# NOTE [requires_grad flips between calls]
# A GAN loop freezes the discriminator for the generator's step and unfreezes it for its own,
# between two compiled calls, on every iteration. A global STRUCTURE bump per flip would send
# both steps back to tracing on every call (then to eager at the cache limit). So a flip of a
# tensor on a storage some compiled program reads counts in ``RG_EPOCH[0]`` and is logged in
# ``RG_FLIPS`` (id(tensor) -> (weakref, epoch of its last flip)); a region whose epoch moved
# looks at the flips since: each must be of a tensor its program reads, now with the flag it
# was traced with (``Region._rg_flips_hold``), else it traces again, as a bump would.
RG_EPOCH: list = [0]
RG_FLIPS: dict = {}

# NOTE [objects no trace has seen]
# Building a model registers parameters, submodules and hooks by the dozen; each registration
# bumped ``STRUCTURE``, so building any module (an evaluation copy, a metric, the next
# experiment's model) sent every compiled function back to tracing. A program can only have
# baked in objects that existed while it was traced, so ``TRACE_EPOCH[0]`` moves on when a
# trace starts and when it ends: a module's registries and hook tables stamped at its
# ``__init__`` with the epoch (their ``born``) still equal to ``TRACE_EPOCH[0]`` belong to a
# module no trace has run beside, and changing them leaves every compiled program valid.
# A registry made anywhere else (a copy, a renumbered ``Sequential``) has ``born`` None: never
# fresh, as before.
TRACE_EPOCH: list = [0]


def trace_boundary() -> None:
    """A trace starts or ends: every object made before it may be in a program from now on."""
    TRACE_EPOCH[0] += 1


def fresh(table) -> bool:
    """Whether ``table`` (a module's registry or hook table) was stamped at its module's
    ``__init__`` and no trace has started since (NOTE [objects no trace has seen])."""
    return getattr(table, "born", None) == TRACE_EPOCH[0]


# NOTE [interposer]
# ``INTERPOSE[0]`` is the one slot dispatch (``apply_op``/``apply_inplace``) reads per op: None,
# or an object whose ``apply_op``/``apply_inplace`` take the op instead. Two things interpose:
# the forward-mode AD level while it propagates tangents (``FORWARD_AD[0]``, also read on its
# own by Function.apply, the engine and compile) and the running profiler (``PROFILER[0]``).
# Forward AD sits outside: while it computes (FORWARD_AD[0] None) its primal and tangent ops
# reach the profiler, which times each one and then calls plain dispatch with the slot empty.
# A third sits between them: while a ``tracegrad.func`` transform traces its function eagerly,
# ``FUNC_READS[0]`` notes (or swaps for traced values) the outside tensors requiring grad that
# its ops read (``func/_closure.py``), then passes each op on to the profiler or plain dispatch.
# Write FORWARD_AD/PROFILER/FUNC_READS only through ``set_forward_ad``/``set_profiler``/
# ``set_func_reads``, which keep the slot in step, so entering and leaving any of them in any
# order leaves the right one in charge.
FORWARD_AD: list = [None]
# torch's view-replay mode (``autograd._force_original_view_tracking``): views made while it is
# on regenerate their grad_fn as the original view op's node, not AsStridedBackward0
VIEW_REPLAY: list = [False]
PROFILER: list = [None]
FUNC_READS: list = [None]
INTERPOSE: list = [None]
# the open tracegrad.func transform levels' kinds ("reverse"/"forward"), innermost last: NOTE
# [grad mode inside transforms] in func/_closure.py
FUNC_LEVELS: list = []
# the JAX traces of the open reverse-mode levels (grad, vjp, jacrev), innermost last: a Tensor
# whose value is traced at one of them reports requires_grad, as torch.func's wrapped tensors
# (NOTE [requires_grad inside transforms] in func/_closure.py)
FUNC_TRACES: list = []
# per open level (innermost last): the storage ids of its differentiated inputs (NOTE [inputs of a
# reverse-mode level] in func/_closure.py; an empty set for a forward-mode level)
FUNC_INPUTS: list = []
# ``FUNC_HOOK[0](tensor, hook)``: register_hook on such a value (``func/_hooks.py``; set when
# tracegrad.func loads)
FUNC_HOOK: list = [None]
# ``FUNC_FUNCTION[0]``: the module applying a custom autograd.Function's own rules inside those
# levels (``func/_custom_function.py``; set when tracegrad.func loads, as autograd sits below it)
FUNC_FUNCTION: list = [None]
# id(storage) -> how many live compiled programs read it as state (``_lowering/region.py``)
HELD_STORAGES: dict = {}


def _reslot() -> None:
    """The outermost of forward AD, a transform's reads, the profiler takes the slot."""
    INTERPOSE[0] = next((i for i in (FORWARD_AD[0], FUNC_READS[0], PROFILER[0]) if i is not None), None)


def set_forward_ad(level) -> None:
    """Open (a Level) or pause/close (None) forward-AD tangent propagation; see NOTE [interposer]."""
    FORWARD_AD[0] = level
    _reslot()


def set_profiler(recorder) -> None:
    """Start (a recorder) or stop (None) the profiler's per-op recording; see NOTE [interposer]."""
    PROFILER[0] = recorder
    _reslot()


def set_func_reads(reads) -> None:
    """Start (a ``func/_closure.Reads``) or stop (None) a transform's read tracking; see NOTE
    [interposer]."""
    FUNC_READS[0] = reads
    _reslot()


# NOTE [settings flags]: ``(holder, names)`` of plain process-wide flags that code sets by
# assignment (``torch.backends.cudnn.benchmark = True``, ``backends.cuda.matmul.<flag> = x``),
# registered by the modules that hold them (layers above ``_lowering``): a compiled function
# that changes one while tracing is a graph break, as for the other global settings (the
# program would not set it again on later calls).
SETTINGS: list = []


def register_settings(holder, names) -> None:
    """``holder``'s attributes ``names`` are process-wide flags (NOTE [settings flags])."""
    SETTINGS.append((holder, tuple(names)))


def settings_values() -> tuple:
    """The values of every registered flag (NOTE [settings flags]), in registration order."""
    return tuple(getattr(h, k, None) for h, names in SETTINGS for k in names)


def put_settings_back(values) -> None:
    """Set every registered flag to ``values`` (``settings_values()``'s order)."""
    it = iter(values)
    for h, names in SETTINGS:
        for k in names:
            v = next(it)
            if getattr(h, k, None) is not v:
                setattr(h, k, v)


def note_setting_read() -> None:
    """Python reads a process-wide setting (``are_deterministic_algorithms_enabled()``,
    ``backends.cudnn.benchmark``...): inside a capture, the program then holds only while the
    settings are what the trace read (a branch on one is not frozen)."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.guard_settings()


def note_profiler_read() -> None:
    """Python asks whether a profiler is recording (``torch.autograd._profiler_enabled()``):
    inside a capture, the program then holds only while that answer is what it was when the
    trace began (a branch on it is not frozen; NOTE [profiler read while tracing])."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.guard_profiler()


def note_rg_flip(t) -> None:
    """``t``'s ``requires_grad`` changed while a compiled program reads its storage: NOTE
    [requires_grad flips between calls]."""
    RG_EPOCH[0] += 1
    RG_FLIPS[id(t)] = (weakref.ref(t), RG_EPOCH[0])
    if len(RG_FLIPS) > 4096:          # tensors gone since: their entries say nothing any more
        for k in [k for k, (r, _) in RG_FLIPS.items() if r() is None]:
            del RG_FLIPS[k]


# NOTE [hook sets come back]
# ``STRUCTURE[0]`` is a token, not a count: the same token means the same structure. A hook
# registered for a few calls and removed again (a ``with handle:`` block, an activation logger
# every n steps, a hook removing itself) leaves the hooks exactly as they were, so the programs
# traced for that set of hooks are valid again; a plain count sent every compiled function back
# to tracing on each add and each removal (then to eager at its cache limit). The token names
# (layout epoch, set of live hook ids): ``bump_structure`` (layouts, rebound methods, library
# functions patched, hook dicts written by hand) starts a new epoch and forgets every set; a
# handle made by ``RemovableHandle.__init__`` adds its id to the live set and its ``remove()``
# takes it out, and a set seen before in this epoch gets its old token back. Handle ids come
# from one counter and are never reused, so one id is one registration (its function, its dict,
# its place in it). A removal by a handle that was not counted in (unpickled, deep-copied: its
# id may be a live original's) bumps instead. Sets of more than ``_HOOK_SET_LIMIT`` live hooks
# (those whose dict is gone dropped first) are not remembered (each change is a new token, as a
# count), so a registration costs at most one frozenset of that size.
#
# NOTE [layouts come back]
# The same holds for a module's entries rebound and rebound back between calls: a task's head
# swapped in (``model.head = heads[task]``), a layer replaced by ``nn.Identity()`` for a few
# calls and put back. An entry of a module's ``_parameters``/``_buffers``/``_modules`` set or
# deleted (``layout_entry_set``) is remembered with what it held when the epoch began; the
# token's name holds, besides the live hooks, the entries that hold something else now, by the
# ids of the store and of the object there. Putting the first object back gives the token of
# the layout it came from, whose programs read that object's parameters again. The table keeps
# no object alive (a replaced layer's parameters are freed as eagerly): the first object is held
# weakly (once gone it cannot come back), and when a store or an object some token's name counts
# is gone, the names counting its id are forgotten before the id can be reused. Past
# ``_HOOK_SET_LIMIT`` entries an epoch starts over.
_LIVE_HOOKS: dict = {}       # hook id -> weak reference to the dict it was registered in
_REBOUND: dict = {}          # (id(store), key) -> [ref to what it held at the epoch's start, id of what it holds now]
_NAMED: dict = {}            # id(store or object a token's name counts) -> a ref to it (its death forgets those names)
_GONE: list = []             # ids of named objects gone since ``_forget_gone`` last ran
_DEAD_HOOKS: list = []       # ids of hooks whose dict is gone since ``_new_structure`` last ran
_TOKENS: dict = {(frozenset(), frozenset()): 0}   # (live hook ids, entries rebound) this epoch -> its token
_LAST_TOKEN: list = [0]
_HOOK_SET_LIMIT = 256
ABSENT = object()            # ``layout_entry_set``'s value for a key the store does not hold


def _ref(obj, callback=None):
    """A weak reference to ``obj``, or for an object none can refer to weakly (None, ``ABSENT``,
    an int a user put in a store) a strong one that answers the same way."""
    try:
        return weakref.ref(obj, callback)
    except TypeError:
        return lambda: obj


def _name(obj) -> int:
    """``id(obj)``, for a token's name: forgotten with the names counting it when ``obj`` is gone."""
    i = id(obj)
    if i not in _NAMED:
        # the callback only notes the death (it may come from a garbage collection in the middle
        # of a loop over these tables); ``_forget_gone`` forgets before ids are read again
        _NAMED[i] = _ref(obj, lambda _, i=i: _GONE.append(i))
    return i


def _forget_gone() -> None:
    """The stores and objects named since gone: no token name may count their ids any more."""
    while _GONE:
        i = _GONE.pop()
        _NAMED.pop(i, None)
        for k in [k for k in _REBOUND if k[0] == i]:
            del _REBOUND[k]
        for key in [key for key in _TOKENS if any(n[0][0] == i or n[1] == i for n in key[1])]:
            del _TOKENS[key]


def _changed(entry) -> bool:
    """Whether a ``_REBOUND`` entry holds another object than at the epoch's start (or that one
    is gone: weakly held, dead)."""
    first = entry[0]()
    return id(first) != entry[1] or (first is None and type(entry[0]) is weakref.ref)


def layout_entry_set(store, key, old, new) -> None:
    """Entry ``key`` of a module's store (``_parameters``, ``_buffers``, ``_modules``; one weak
    references can reach) goes from ``old`` to ``new`` (``ABSENT``: not there) outside a
    compiled call: programs traced for the layout it makes trace again, those of a layout it
    brings back run again (NOTE [layouts come back])."""
    _forget_gone()
    k = (_name(store), key)
    entry = _REBOUND.get(k)
    if entry is None:
        if len(_REBOUND) >= _HOOK_SET_LIMIT:
            bump_structure()
            k = (_name(store), key)
        entry = _REBOUND[k] = [_ref(old), None]
    entry[1] = _name(new)
    _new_structure()


def _new_structure() -> None:
    _forget_gone()
    while _DEAD_HOOKS:
        # a hook whose dict is gone can never run again: the set without it is the set that
        # comes back. A full backward hook's module registers hooks on its output tensors at
        # every forward; kept in the set, the hook's removal gave a token never seen before,
        # so the programs traced without the hook were never used again.
        i = _DEAD_HOOKS.pop()
        r = _LIVE_HOOKS.get(i)
        if r is not None and r() is None:
            del _LIVE_HOOKS[i]
    if len(_LIVE_HOOKS) > _HOOK_SET_LIMIT:     # hooks whose dict is gone can never run again
        for k in [k for k, r in _LIVE_HOOKS.items() if r() is None]:
            del _LIVE_HOOKS[k]
    key = (frozenset(_LIVE_HOOKS), frozenset((k, e[1]) for k, e in _REBOUND.items() if _changed(e))) \
        if len(_LIVE_HOOKS) <= _HOOK_SET_LIMIT else None
    token = _TOKENS.get(key) if key is not None else None
    if token is None:
        _LAST_TOKEN[0] += 1
        token = _LAST_TOKEN[0]
        if key is not None:
            if len(_TOKENS) >= 1024:      # an unusual program: forget the old sets (a retrace)
                _TOKENS.clear()
            _TOKENS[key] = token
    STRUCTURE[0] = token


def bump_structure() -> None:
    """Something a compiled program baked in (module layout, methods, modes) changed: no
    earlier program is valid (NOTE [hook sets come back])."""
    _TOKENS.clear()
    _REBOUND.clear()
    _NAMED.clear()
    _GONE.clear()
    _new_structure()


def hook_added(hook_id: int, hooks_dict) -> None:
    """A hook a compiled program may bake in was registered in ``hooks_dict`` (an OrderedDict)
    under the new ``hook_id``."""
    _LIVE_HOOKS[hook_id] = weakref.ref(hooks_dict, lambda _, i=hook_id: _DEAD_HOOKS.append(i))
    _new_structure()


def hook_removed(hook_id: int) -> None:
    """The hook registered under ``hook_id`` was removed: the structure before it was added
    comes back when nothing else changed (NOTE [hook sets come back])."""
    if _LIVE_HOOKS.pop(hook_id, None) is not None:
        _new_structure()
    else:
        bump_structure()


# NOTE [library functions patched between calls]
# A compiled program runs the library functions its trace called: ``F.linear`` patched between
# calls (``mock.patch.object(F, "linear", ...)``, a LoRA wrapper) would keep running the old one.
# Guarding every library name a trace goes through would cost every call, so tracegrad's own
# modules report such a write instead: their class becomes ``_WatchedModule``, whose
# ``__setattr__`` bumps ``STRUCTURE`` when a function or class is rebound (reads are untouched:
# attribute lookup on a module subclass stays the module's own). Flags (``cudnn.benchmark``) and
# submodules bound by imports bump nothing. A module imported after ``watch_modules`` ran is
# watched from the next trace on (the compiler calls it before tracing).
class _WatchedModule(types.ModuleType):
    def __setattr__(self, name, value):
        old = self.__dict__.get(name, _NOTHING)
        super().__setattr__(name, value)
        if old is not value and (_is_code(old) or _is_code(value)):
            bump_structure()

    def __delattr__(self, name):
        old = self.__dict__.get(name, _NOTHING)
        super().__delattr__(name)
        if _is_code(old):
            bump_structure()


# Python's own messages name a module's type by its class name ("'module' object is not
# callable" for ``torch.fft(x)``): the watched class keeps that name, so a user's mistake reads
# the same with tracegrad (MiscTests.test_module_not_callable, round 28).
_WatchedModule.__name__ = _WatchedModule.__qualname__ = "module"

_NOTHING = object()


def _is_code(v) -> bool:
    return callable(v) and not isinstance(v, types.ModuleType)


def watch_modules(prefix: str) -> None:
    """Watch every loaded module named ``prefix`` or under it (NOTE [library functions patched
    between calls])."""
    for name, m in list(sys.modules.items()):
        if type(m) is types.ModuleType and (name == prefix or name.startswith(prefix + ".")):
            m.__class__ = _WatchedModule


def note_hook(kind: str, fn, *receives) -> None:
    """A user hook is about to run inside a capture: report it (the capture decides whether it
    may be traced or the call must run eagerly so its Python side effects happen every call).
    ``receives``: the objects it is called with whose state it may change (a module hook's
    module, an optimizer hook's optimizer: ``m.acts.append(out)``)."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.on_hook(kind, fn, receives)


def note_effect(what: str) -> None:
    """Python state outside the tensors is about to change inside a capture (an attribute set
    on a module): the program would not repeat it, so the capture makes the call run eagerly."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.python_effect(what)


def check_values(x, bad) -> None:
    """An eager value check (an index in range...) on ``x`` (a tensor or array) whose values a
    trace does not have: ``bad(x)`` (any element true: eager raises) is checked when the compiled
    program runs (NOTE [value checks at run time] in ``_lowering/capture.py``). Outside a
    capture (a ``tracegrad.func`` transform, a meta tensor) nothing checks it."""
    cap = CAPTURE[0]
    if cap is not None:
        cap.check_values(x, bad)


# ---- grad mode ----------------------------------------------------------------------------------
class _PerThread(threading.local):
    """A list of slots with a fresh copy of ``initial`` in every thread, indexable like the plain
    list it stands for: torch's thread-local autograd state (grad mode, the evaluating node) is
    read as ``STATE[0]`` whichever thread runs."""

    def __init__(self, *initial):
        self.v = list(initial)

    def __getitem__(self, i):
        return self.v[i]

    def __setitem__(self, i, value):
        self.v[i] = value

    def __iter__(self):
        return iter(self.v)


# ``[grad enabled, inference mode, grad flag inside inference mode]``, per thread as in torch: a
# new thread starts with grad on, whatever the thread that started it is doing. Slot 0 is what
# dispatch reads (record or not); inside ``inference_mode()`` it stays False, and ``enable_grad`` /
# ``no_grad`` / ``set_grad_enabled`` write slot 2 instead, which only ``is_grad_enabled()`` reports
# (torch: InferenceMode keeps autograd off whatever grad mode says).
GRAD_MODE = _PerThread(True, False, False)
INFERENCE_DEPTH: list = [0]


def grad_enabled() -> bool:
    """``torch.is_grad_enabled()``: the grad flag; inside ``inference_mode()`` the one set there."""
    v = GRAD_MODE.v
    return v[2] if v[1] else v[0]


def swap_grad_enabled(value: bool) -> tuple:
    """Set the grad flag (slot 2 inside ``inference_mode()``, else slot 0); returns
    ``(slot, previous value)`` for ``GRAD_MODE[slot] = previous`` to restore it."""
    v = GRAD_MODE.v
    i = 2 if v[1] else 0
    prev = v[i]
    v[i] = value
    return i, prev


def in_inference_mode() -> bool:
    """True in an ``inference_mode(True)`` block of this thread (one list read when no such block
    is open in any thread). ``autograd.grad_mode.in_inference_mode`` is this function."""
    return bool(INFERENCE_DEPTH[0]) and GRAD_MODE[1]


# ---- process-wide modes -------------------------------------------------------------------------
SAVED_HOOKS: list = []            # saved_tensors_hooks stack: innermost (pack, unpack) pair last
ANOMALY: list = [False, True]     # anomaly mode: [enabled, check_nan]
# the node whose backward the engine runs now in this thread (None outside one): anomaly mode
# records it as the parent of nodes made meanwhile, as torch's thread-local current evaluating
# node (a backward running in another thread is not the parent of what this thread makes)
EVALUATING_NODE = _PerThread(None)
# vmap levels, innermost last: the level's batching trace when it maps with randomness='same'
# (a draw whose tensor parameters are batched at that level raises, as torch), else None
VMAP_SAME: list = []
DEFAULT_DTYPE: list = [None]      # [default float dtype]; _ops/dtypes.py sets float32 at import
# torch.utils.deterministic.fill_uninitialized_memory: under deterministic algorithms, new memory
# (empty*, resize_ growth) holds NaN / the integer max instead of tracegrad's zeros
FILL_UNINITIALIZED: list = [True]
# torch.__future__'s conversion flags, read by nn.Module._apply
FUTURE: dict = {"overwrite_module_params_on_conversion": False, "swap_module_params_on_conversion": False}
# ``set_printoptions``' settings, read by ``_tensor/tensor_str.py`` at every ``repr`` (torch's PRINT_OPTS)
PRINT_OPTS: dict = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


# ---- the cache registry -------------------------------------------------------------------------
_CACHES: dict = {}


def register_cache(name: str, cache):
    """Register a process-wide cache under ``name`` (``"module.variable"``) and return it, so a
    module writes ``_BWD = _state.register_cache("autograd._dispatch._BWD", {})``.

    ``cache`` is anything with ``clear()`` (a dict, an OrderedDict) or ``cache_clear()`` (a
    ``functools.lru_cache`` function). Registering another object under a taken name raises
    ValueError (two modules would otherwise share one entry silently); registering the same
    object again is a no-op (a module reloaded by a test).
    """
    if not (callable(getattr(cache, "clear", None)) or callable(getattr(cache, "cache_clear", None))):
        raise TypeError(f"tracegrad._state.register_cache: {name!r} has neither clear() nor "
                        f"cache_clear(); got {type(cache).__name__}")
    old = _CACHES.get(name)
    if old is not None and old is not cache:
        raise ValueError(f"tracegrad._state.register_cache: a different cache is already "
                         f"registered as {name!r}; pick another name")
    _CACHES[name] = cache
    return cache


def clear_caches() -> None:
    """Empty every registered cache (later calls rebuild entries on demand: slower, never
    wrong). Does not touch user-visible state (grad mode, generators, hooks)."""
    for cache in _CACHES.values():
        if callable(getattr(cache, "cache_clear", None)):
            cache.cache_clear()
        else:
            cache.clear()


def cache_sizes() -> dict:
    """``{name: number of entries}`` for every registered cache (``lru_cache`` functions report
    their ``cache_info().currsize``)."""
    out = {}
    for name, cache in _CACHES.items():
        info = getattr(cache, "cache_info", None)
        out[name] = info().currsize if callable(info) else len(cache)
    return out
