"""Activation checkpointing: mirrors ``torch.utils.checkpoint``.

Two mechanisms, as torch has them:

* ``use_reentrant=True`` (:class:`CheckpointFunction`): a custom ``autograd.Function`` whose
  forward runs the function under ``no_grad`` and saves only its inputs; its backward re-runs
  the function under ``enable_grad`` on detached inputs and backpropagates through that
  recomputed graph with a nested ``backward`` call.
* ``use_reentrant=False``: the function runs normally (its graph is recorded), but inside a
  ``saved_tensors_hooks`` whose pack stores a small handle instead of each saved tensor. The
  first unpack during a backward call re-runs the function once under a second pair of hooks
  that collects the recomputed saved tensors, in the same order, and hands each back
  (NOTE [recompute once per backward call]). So the activations are freed after forward and
  ``autograd.grad``, nesting, keyword arguments and outputs in containers all work.

Everything here is plain Python over Tensors (no ``.item()``, no branching on values), so it
runs the same inside a trace (``tracegrad.compile``) as eagerly. The recompute reproduces
random draws by restoring the default generator's key taken at entry, and runs under the
autocast settings active at entry (as torch), whatever is active at backward.
"""
from __future__ import annotations

import contextlib
import enum
import itertools
import traceback
import weakref
from collections import defaultdict

import tracegrad
from .. import _autocast, _state
from .._lowering.remat import barrier
from ..autograd import engine as _engine
from ..autograd._graph_impl import SavedTensor, StopAfterOp
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from .._ops.warn import warn as _warn

__all__ = [
    "checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
    "check_backward_validity", "detach_variable", "noop_context_fn", "set_checkpoint_early_stop",
    "set_checkpoint_debug_enabled", "CheckpointPolicy", "SelectiveCheckpointContext",
    "create_selective_checkpoint_contexts", "GraphExecGroup", "DefaultDeviceType", "get_device_states",
    "set_device_states",
]

_DEFAULT_DETERMINISM_MODE = "default"
_debug_enabled = [None]       # set_checkpoint_debug_enabled (None: defer to debug=)
_early_stop_enabled = [None]  # set_checkpoint_early_stop (None: defer to early_stop=)
_graph_exec_group = [None]    # the active GraphExecGroup

_MSG_USE_REENTRANT = (
    "{api}: the use_reentrant parameter should be passed explicitly. {when} use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass "
    "use_reentrant=True. Refer to docs for more details on the differences between the two "
    "variants.")
_DEBUG_TIP = ("\nTip: pass `debug=True` to `tracegrad.utils.checkpoint.checkpoint(...)` or wrap "
              "the code in `with tracegrad.utils.checkpoint.set_checkpoint_debug_enabled(True):` "
              "to list the operations that saved tensors in the forward and in the recomputation.")


class CheckpointError(RuntimeError):
    """Mirrors ``torch.utils.checkpoint.CheckpointError``: the recomputation saved different
    tensors than the original forward, or a recomputed tensor was unpacked twice."""


class DefaultDeviceType:
    """Mirrors ``torch.utils.checkpoint.DefaultDeviceType``: the device type whose RNG state
    checkpoint saves when no argument tensor names one (``"cpu"`` here: tracegrad's tensors are
    all on the host from torch's point of view)."""

    _default_device_type = "cpu"

    @staticmethod
    def set_device_type(device: str = "cpu"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def _infer_device_type(*args):
    """Mirrors ``torch.utils.checkpoint._infer_device_type``: the device type of the non-CPU
    tensors among ``args`` (nested containers searched; ``"cuda"`` first if present, else the
    first met; a warning when there are several), else ``DefaultDeviceType``'s."""
    from ._pytree import tree_leaves
    found = [a.device.type for a in tree_leaves(args)
             if isinstance(a, tracegrad.Tensor) and a.device.type != "cpu"]
    kinds = set(found)
    if len(kinds) > 1:
        _warn("Tensor arguments, excluding CPU tensors, are detected on at least two types of devices; "
              "checkpoint keeps the device state of one device type only.\n"
              f"Device types: {sorted(kinds)} first device type: {found[0]}")
    if not found:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in kinds else found[0]


def get_device_states(*args):
    """Mirrors ``torch.utils.checkpoint.get_device_states``: ``(device_ids, rng_states)`` of the
    accelerator devices ``args``' tensors live on. tracegrad has no per-device RNG state, so
    both lists are empty."""
    return [], []


def set_device_states(devices, states, *, device_type=None) -> None:
    """Mirrors ``torch.utils.checkpoint.set_device_states``: restores the per-device RNG states
    ``get_device_states`` returned (none in tracegrad: nothing to restore). ``ValueError`` when
    the two lists differ in length."""
    if len(devices) != len(states):
        raise ValueError("set_device_states(): devices and states must have the same length")


def noop_context_fn():
    """Mirrors ``torch.utils.checkpoint.noop_context_fn``: two null context managers."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Mirrors ``torch.utils.checkpoint.set_checkpoint_debug_enabled(enabled)``: overrides the
    ``debug`` argument of every checkpoint run inside (``None`` defers to the argument)."""
    prev = _debug_enabled[0]
    _debug_enabled[0] = enabled
    try:
        yield
    finally:
        _debug_enabled[0] = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Mirrors ``torch.utils.checkpoint.set_checkpoint_early_stop(enable)``: whether
    non-reentrant checkpoints created inside stop recomputing once every saved tensor they
    need is back (default True)."""
    prev = _early_stop_enabled[0]
    _early_stop_enabled[0] = enable
    try:
        yield
    finally:
        _early_stop_enabled[0] = prev


class GraphExecGroup:
    """Mirrors ``torch.utils.checkpoint.GraphExecGroup``: backward calls made inside one
    instance share one recomputation of each non-reentrant checkpoint they reach (normally
    every backward call recomputes), so they must cover disjoint parts of the graph: two of
    them needing the same saved activation raise CheckpointError, even with retain_graph.
    Groups do not nest (RuntimeError). No effect on ``use_reentrant=True``."""

    def __enter__(self):
        if _graph_exec_group[0] is not None:
            raise RuntimeError("GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{_graph_exec_group[0]}")
        _graph_exec_group[0] = self
        return self

    def __exit__(self, *exc):
        _graph_exec_group[0] = None


def detach_variable(inputs):
    """Mirrors ``torch.utils.checkpoint.detach_variable``: a tuple with each tensor detached
    and keeping its ``requires_grad``; RuntimeError for anything but a tuple."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, tracegrad.Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs):
    """Mirrors ``torch.utils.checkpoint.check_backward_validity``: UserWarning when no tensor
    input requires grad (the reentrant checkpoint then gives no gradients)."""
    if not any(isinstance(i, tracegrad.Tensor) and i.requires_grad for i in inputs):
        _warn("None of the inputs have requires_grad=True. Gradients will be None")


# ------------------------------------------------------------------------------------- RNG
# The default generator's raw key, read and written directly rather than through
# get_rng_state/set_rng_state: those convert to and from a host int64 tensor, which a traced
# key (inside tracegrad.compile) cannot do. Restoring the key is all torch's fork_rng +
# set_rng_state do for the CPU generator; it costs nothing.

def _rng_key():
    return tracegrad.default_generator._current_key()


def _set_rng_key(key):
    tracegrad.default_generator._key = key


@contextlib.contextmanager
def _forked_rng(key, enabled):
    """Run the block from generator key ``key`` and put the surrounding key back after."""
    if not enabled:
        yield
        return
    outer = _rng_key()
    _set_rng_key(key)
    try:
        yield
    finally:
        _set_rng_key(outer)


def _autocast_as(settings):
    """Run the block under the autocast ``settings`` (a snapshot of ``_autocast._state()``
    taken at checkpoint entry), as torch's checkpoint re-enters the forward's autocast for
    the recomputation: a backward outside autocast must recompute in the forward's dtypes.
    It counts as an autocast context: the casts it caches end with it."""
    return _autocast.entered(settings)


# ------------------------------------------------------------------------ use_reentrant=True

class CheckpointFunction(Function):
    """The reentrant checkpoint (``use_reentrant=True``) as a custom Function; its node is
    ``CheckpointFunctionBackward`` as in torch. ``apply(run_function, preserve_rng_state,
    *args)``: tensors in ``args`` are saved, everything else kept in the ctx."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.fwd_rng_key = _rng_key() if preserve_rng_state else None
        ctx.autocast = dict(_autocast._state())
        ctx.inputs = [None if isinstance(a, tracegrad.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, tracegrad.Tensor)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        with tracegrad.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not _engine._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _forked_rng(ctx.fwd_rng_key, ctx.preserve_rng_state):
            detached = barrier(detach_variable(tuple(inputs)))
            with tracegrad.enable_grad(), _autocast_as(ctx.autocast):
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, tracegrad.Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
                 if isinstance(o, tracegrad.Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        tracegrad.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(d.grad if isinstance(d, tracegrad.Tensor) else None for d in detached)


# ----------------------------------------------------------------------- use_reentrant=False
# NOTE [recompute once per backward call]
# Forward: every tensor saved inside the region is packed as a _Holder (a weak reference to it
# is kept in the frame, in save order), so the activation itself is dropped. Backward: the
# first unpack in a backward call (a graph task, engine NOTE [graph tasks]) re-runs the
# function on the saved inputs under _recompute_hooks, whose pack hands the i-th saved tensor
# to the i-th holder under that task's id; each unpack then takes its tensor and clears it,
# so a recomputed activation lives only until the node that needs it has run. Holders whose
# node was freed are skipped (their weak reference is dead). Nested checkpoints compose:
# an inner checkpoint's inputs are saved through the outer frame's hooks.

class _Handle:
    __slots__ = ("__weakref__",)


class _Holder:
    """What the forward's pack hook returns in place of a saved tensor. ``handles[task]`` is
    the key of the recomputed tensor for that backward call; ``kept`` is set instead when a
    selective-checkpoint policy chose to keep the tensor itself."""

    __slots__ = ("handles", "kept", "__weakref__")

    def __init__(self):
        self.handles = {}
        self.kept = None


class _StopRecomputation(StopAfterOp):
    pass


class _InputsNode:
    """Names the checkpoint's saved inputs in a version-counter error."""

    @staticmethod
    def name():
        return "CheckpointInputs"


def _metadata(x):
    return {"shape": tuple(x.shape), "dtype": x.dtype, "device": x.device}


_DETERMINISM_CHECKS = {_DEFAULT_DETERMINISM_MODE: _metadata, "none": lambda _: None}


class _Frame:
    """One call of the non-reentrant checkpoint: its inputs, the holders of what it saved and
    the tensors recomputed per backward call."""

    def __init__(self, recompute_fn, early_stop, metadata_fn, debug_log):
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args = []
        self.weak_holders = []
        self.metas = []
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        self.policy = None
        self.debug_log = debug_log   # None, or {"forward": [...], "recompute": [...]}

    def save_inputs(self, args):
        # through SavedTensor, so outer saved-tensor hooks (an enclosing checkpoint,
        # save_on_cpu) see the inputs and in-place changes to them are caught at backward
        self.saved_args = [SavedTensor(a) if isinstance(a, tracegrad.Tensor) else a for a in args]

    def get_inputs(self):
        # an enclosing checkpoint's recomputed input comes back detached; SavedTensor's unpack
        # puts it back in the graph (as torch's), so the recomputation records and saves as
        # the forward did
        out = [a.get(_InputsNode, i) if isinstance(a, SavedTensor) else a
               for i, a in enumerate(self.saved_args)]
        # inside tracegrad.compile: keep XLA from merging the recompute with the forward
        return list(barrier(out))

    def log(self, phase, x):
        if self.debug_log is not None:
            gf = x.grad_fn
            where = traceback.extract_stack()[:-4][-3:]
            self.debug_log[phase].append(
                f"{type(gf).__name__ if gf is not None else 'input or leaf'} "
                f"{list(x.shape)} {x.dtype}  at " + " <- ".join(f"{f.filename}:{f.lineno}:{f.name}" for f in reversed(where)))

    def check_recomputed(self, task):
        if self.ignore_saved_mismatch:
            return
        n_fwd, n_re = len(self.weak_holders), self.recomp_counter[task]
        if n_fwd != n_re:
            self.fail("torch.utils.checkpoint: A different number of tensors was saved during the "
                      f"original forward and recomputation.\nNumber of tensors saved during forward: "
                      f"{n_fwd}\nNumber of tensors saved during recomputation: {n_re}.\n")
        bad = ""
        for i, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None or holder.kept is not None:
                continue
            x = self.recomputed[task][holder.handles[task]]
            if self.metas[i] != self.metadata_fn(x):
                bad += (f"tensor at position {i}:\nsaved metadata: {self.metas[i]}\n"
                        f"recomputed metadata: {self.metadata_fn(x)}\n")
        if bad:
            self.fail("torch.utils.checkpoint: Recomputed values for the following tensors have "
                      f"different metadata than during the forward pass.\n{bad}.\n")

    def fail(self, msg):
        if self.debug_log is not None:
            msg += ("\nYou are seeing this error because you passed `debug=True` to checkpoint and "
                    "the tensors saved during the original forward differ from those saved during "
                    "the recomputation.\n"
                    "Tensors saved (producing node, shape, dtype, where) during the original forward:\n"
                    + "\n".join(self.debug_log["forward"])
                    + "\n\nTensors saved during recomputation:\n" + "\n".join(self.debug_log["recompute"]))
        else:
            msg += _DEBUG_TIP
        raise CheckpointError(msg)


class _recompute_hooks(saved_tensors_hooks):
    """Hooks during a recomputation: the k-th saved tensor goes to the frame's k-th holder."""

    def __init__(self, frame_ref, task):
        def pack(x):
            x = x.detach() if x.requires_grad else x
            frame = frame_ref()
            k = frame.recomp_counter[task]
            frame.recomp_counter[task] = k + 1
            frame.log("recompute", x)
            if k >= len(frame.weak_holders):
                if not frame.forward_completed:   # a backward inside the checkpointed forward
                    frame.ignore_saved_mismatch = True
                    return x
                frame.fail("torch.utils.checkpoint: trying to save more tensors during "
                           "recomputation than during the original forward pass.\n")
            holder = frame.weak_holders[k]()
            if holder is not None and holder.kept is None:
                h = holder.handles[task] = _Handle()
                frame.recomputed[task][h] = x
            if frame.early_stop and k + 1 == len(frame.weak_holders):
                raise _StopRecomputation
            return x

        pack._tracegrad_traceable = True   # bookkeeping only: it may run while tracing
        pack._tracegrad_counts_saves = True   # a compiled call inside runs eagerly (compiler.py)
        super().__init__(pack, _identity)


_fresh_ids = itertools.count(-2, -1)  # task ids for unpacks outside any backward call


class _checkpoint_hooks(saved_tensors_hooks):
    """Hooks during the original forward: pack returns a _Holder, unpack recomputes."""

    def __init__(self, frame):
        def pack(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:
                frame.metas.append(frame.metadata_fn(x))
            frame.log("forward", x)
            if frame.policy is not None:
                frame.policy.keep(holder, x)
            return holder

        def unpack(holder):
            # the recomputation is keyed by the backward call (graph task), or by the active
            # GraphExecGroup: all backward calls under one group share one recomputation
            task = _graph_exec_group[0]
            if task is None:
                task = _engine._current_graph_task_id()
                if task == -1:   # e.g. grad_fn._saved_self outside backward: recompute each time
                    task = next(_fresh_ids)
            if frame.policy is not None:
                frame.policy.check_single_backward(task)
            if holder.kept is not None:
                return _SelectiveForward.unkeep(holder, frame)
            if not frame.is_recomputed[task]:
                args = frame.get_inputs()
                try:
                    with _recompute_hooks(weakref.ref(frame), task), tracegrad.enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputation:
                    pass
                frame.is_recomputed[task] = True
                frame.check_recomputed(task)
            h = holder.handles.get(task)
            if h is None:
                overlap = ("Performing two backward calls that overlap (i.e. require the same saved "
                           "activation in order to compute gradients) is not allowed while under the "
                           "torch.utils.checkpoint.GraphExecGroup context. "
                           if _graph_exec_group[0] is not None else "")
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {overlap}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue with "
                    "details on your use case.")
            ret = frame.recomputed[task][h]
            holder.handles[task] = None
            return ret

        pack._tracegrad_traceable = unpack._tracegrad_traceable = True
        pack._tracegrad_counts_saves = True
        super().__init__(pack, unpack)


def _identity(x):
    return x


_identity._tracegrad_traceable = True


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  debug, early_stop, args, kwargs):
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but got "
                         f"{determinism_check}")
    debug = _debug_enabled[0] if _debug_enabled[0] is not None else debug
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    forward_context, recompute_context = context_fn()
    if not tracegrad.is_grad_enabled():   # nothing will be saved: just run it (as torch: no context)
        return function(*args, **kwargs)
    fwd_key = _rng_key() if preserve_rng_state else None
    fwd_autocast = dict(_autocast._state())

    def recompute_fn(*inputs):
        with _forked_rng(fwd_key, preserve_rng_state), _autocast_as(fwd_autocast), recompute_context:
            function(*inputs, **kwargs)

    frame = _Frame(recompute_fn,
                   _early_stop_enabled[0] if _early_stop_enabled[0] is not None else early_stop,
                   _DETERMINISM_CHECKS[determinism_check],
                   {"forward": [], "recompute": []} if debug else None)
    frame.save_inputs(args)
    if isinstance(forward_context, _SelectiveForward):
        frame.policy = forward_context
    done = False
    with _checkpoint_hooks(frame), forward_context:
        out = function(*args, **kwargs)
        done = True
    if not done:   # forward_context swallowed the function's exception: no value to return
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. This is "
                           "not supported because checkpoint cannot return a value for a failed forward.")
    frame.forward_completed = True
    return out


# -------------------------------------------------------------------------------- public API

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate activations; they are
    recomputed in backward. Mirrors ``torch.utils.checkpoint.checkpoint``.

    Args:
        function: any callable over tensors (a Module, a closure over parameters).
        args, kwargs: its arguments; tensors or anything else. Keyword arguments only with
            ``use_reentrant=False``.
        use_reentrant: ``False`` (recommended): saved-tensor hooks, works with
            ``autograd.grad``, nesting, containers of tensors as outputs. ``True``: a custom
            Function (node ``CheckpointFunctionBackward``); only tensor outputs that are
            returned directly (or in a tuple) get gradients. Not passing it warns
            (UserWarning) and means ``True``, as torch 2.13.
        context_fn: returns two context managers: the forward runs under the first, the
            recomputation under the second (e.g. :func:`create_selective_checkpoint_contexts`).
        determinism_check: ``"default"`` compares shape/dtype/device of recomputed saved
            tensors with the forward's; ``"none"`` skips it.
        debug: on a recomputation mismatch, list the saved tensors of both runs.
        early_stop: stop recomputing once every needed tensor is back.
        preserve_rng_state: the recomputation starts from the default generator's state at
            entry, so dropout masks are reproduced exactly.
    Returns: what ``function`` returns.
    Raises: ValueError for keyword arguments, ``context_fn`` or ``debug`` with
        ``use_reentrant=True``, or an unknown ``determinism_check``; RuntimeError when a
        reentrant checkpoint is differentiated with ``autograd.grad``/``backward(inputs=)``;
        :class:`CheckpointError` when the recomputation saves different tensors.
    Differs from torch: only the default CPU generator's state is restored (tracegrad has one
    generator per process); ``debug`` lists saved tensors rather than every operator.
    """
    if use_reentrant is None:
        _warn(_MSG_USE_REENTRANT.format(
            api="torch.utils.checkpoint",
            when="Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception."))
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    cap = _state.CAPTURE[0]
    writes = cap.outside_writes if cap is not None else 0
    lists = cap.list_lengths() if cap is not None else None
    if use_reentrant and not (cap is not None and cap.vjp and tracegrad.is_grad_enabled()
                              and any(isinstance(a, tracegrad.Tensor) and a.requires_grad
                                      for a in args)):
        out = CheckpointFunction.apply(function, preserve_rng_state, *args)
    elif use_reentrant:
        # traced by a compiled function whose results are differentiated outside it: the custom
        # Function's backward would not run in the program, but recomputing by saved-tensor
        # hooks gives the same values and grads (an input requires grad, so both paths record)
        out = _checkpoint_without_reentrant(function, preserve_rng_state, noop_context_fn, "default",
                                            False, None, args, {})
    else:
        out = _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                            debug, early_stop, args, kwargs)
    if cap is not None:    # NOTE [checkpoint side effects] in _lowering/capture.py
        cap.checkpoint_ran(writes, lists)
    return out


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model in ``segments`` chunks. Mirrors
    ``torch.utils.checkpoint.checkpoint_sequential``.

    ``functions`` is an ``nn.Sequential`` or a list of modules/functions, each taking and
    returning one tensor. The list is cut into chunks of ``len(functions) // segments``; every
    chunk but the last is checkpointed, the remainder (the last chunk and anything left over)
    runs normally. ``preserve_rng_state`` may be passed as a keyword; anything else is a
    ValueError. Not passing ``use_reentrant`` warns and means ``True``, as torch 2.13.
    """
    if use_reentrant is None:
        _warn(_MSG_USE_REENTRANT.format(
            api="torch.utils.checkpoint.checkpoint_sequential",
            when="In version 2.9 we will raise an exception if use_reentrant is not passed."))
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, tracegrad.nn.Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


# --------------------------------------------------------- selective activation checkpointing

class CheckpointPolicy(enum.Enum):
    """Mirrors ``torch.utils.checkpoint.CheckpointPolicy``: what selective checkpointing does
    with an op's output: keep it (``*_SAVE``), recompute it (``*_RECOMPUTE``) or keep a copy
    in host memory (``*_CPU_OFFLOAD``)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """Mirrors ``torch.utils.checkpoint.SelectiveCheckpointContext``: first argument of a
    policy function; ``op_output`` is the tensor the policy decides about."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


_SAVE = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)
_OFFLOAD = (CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


def _op_name(node):
    """``MmBackward0`` -> ``"mm"``, ``NativeLayerNormBackward0`` -> ``"native_layer_norm"``:
    the op that produced a tensor, named as torch's aten op."""
    n = type(node).__name__
    n = n[:n.rfind("Backward")] if "Backward" in n else n
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(n))


def _normalize_op(op):
    # "aten.mm.default", "aten::mm", "mm" all name the same op
    name = op.replace("::", ".")
    if name.startswith("aten."):
        name = name[5:]
    return name[:-len(".default")] if name.endswith(".default") else name


class _SelectiveForward:
    """Forward context of :func:`create_selective_checkpoint_contexts`: the checkpoint's pack
    hook asks it, per saved tensor that an op produced, whether to keep that tensor."""

    def __init__(self, policy_fn, allow_cache_entry_mutation):
        self.policy_fn = policy_fn
        self.allow_mutation = allow_cache_entry_mutation
        # one decision per op (grad_fn node), as torch asks once per op call: var_mean's
        # two outputs, or a tensor saved twice, do not ask again
        self.decided = weakref.WeakKeyDictionary()
        self.kept_any = False
        self.used_by = None   # the backward call (task) that used the kept tensors

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keep(self, holder, x):
        gf = x.grad_fn
        if gf is None:   # an input, a leaf or a tensor outside autograd: nothing to decide
            return
        policy = self.decided.get(gf)
        if policy is None:
            policy = self.decided[gf] = self._ask(gf, x)
        if policy in _SAVE:
            holder.kept = (x.detach(), x._version, None)
        elif policy in _OFFLOAD:
            d = x.detach()
            host = d.cpu()
            holder.kept = (d.clone() if host is d else host, None, x.device)   # a copy, as on GPU
        self.kept_any = self.kept_any or holder.kept is not None

    def _ask(self, gf, x):
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=x), _op_name(gf))
        if isinstance(policy, bool):
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        if not isinstance(policy, CheckpointPolicy):
            raise TypeError("torch.utils.checkpoint: a selective checkpoint policy must return a "
                            f"CheckpointPolicy or a bool, got {type(policy).__name__}")
        return policy

    def check_single_backward(self, task):
        """torch consumes the kept tensors in the first backward through the region: a second
        one (another graph task, e.g. after retain_graph=True) is a RuntimeError."""
        if not self.kept_any:
            return
        if self.used_by is None:
            self.used_by = task
        elif self.used_by != task:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to backward "
                               "once on any region computed under selective activation checkpoint.")

    @staticmethod
    def unkeep(holder, frame):
        t, version, device = holder.kept
        if version is not None and not frame.policy.allow_mutation and t._version != version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        return t if device is None else t.to(device)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """Selective activation checkpointing: the ``context_fn`` for a non-reentrant
    :func:`checkpoint` that keeps the outputs of chosen ops instead of recomputing them.
    Mirrors ``torch.utils.checkpoint.create_selective_checkpoint_contexts``.

    Args:
        policy_fn_or_list: a list of op names to keep (``"mm"``, ``"addmm"``, ``"bmm"``; the
            ``aten.`` prefix and ``.default`` suffix are accepted), or
            ``policy_fn(ctx, op_name) -> CheckpointPolicy | bool`` with ``ctx.op_output`` the
            tensor.
        allow_cache_entry_mutation: keep a kept tensor usable after an in-place change
            (default: RuntimeError at backward).
    Returns: ``(forward_context, recompute_context)``.
    Raises: ValueError for a list entry that is not an op name; TypeError otherwise.
    Differs from torch: tracegrad has no ``torch.ops`` objects, so ops are named by strings
    (the aten name of the op that made the tensor, read from its ``grad_fn``); the policy is
    asked once per op (``grad_fn`` node) whose output is saved for backward, not about every
    op the forward runs (tensors without a ``grad_fn`` are recomputed), and gets no op
    arguments; kept ops are still re-run by the recomputation (their values are not
    recomputed into memory: the kept tensor is used), so the saving is memory, not time.
    As torch, a region whose policy kept a tensor can be backpropagated through once: a
    second backward call (``retain_graph=True``) raises RuntimeError.
    """
    if isinstance(policy_fn_or_list, list):
        from ..library import AtenOp, AtenOpOverload
        for op in policy_fn_or_list:
            if not isinstance(op, str):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload (ops.aten.mm.default) or an op "
                                 f"name (str, e.g. 'mm' or 'aten.mm.default') but got: {op} of type {type(op)}.")
            if isinstance(op, AtenOp) and not isinstance(op, AtenOpOverload):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got {op} of type "
                                 f"{type(op)}. If you are using an OpOverloadPacket, e.g. torch.ops.aten.mm, "
                                 "please update the OpOverloadPacket to a specific OpOverload. For example, "
                                 "if you have `torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`.")
        names = {_normalize_op(op) for op in policy_fn_or_list}

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in names else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return _SelectiveForward(policy_fn, allow_cache_entry_mutation), contextlib.nullcontext()
