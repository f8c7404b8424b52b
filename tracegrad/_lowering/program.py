"""A traced region as jitted XLA programs over flat arrays, with donated state.

``Program.trace(fn, inputs)`` traces ``fn`` once to a jaxpr (running the Python once);
``set_donation(indices)`` names the flat inputs whose buffers the program may reuse (state it
overwrites). The jaxpr is jitted on demand twice: with those inputs donated (the steady-state
path) and without, for a call where a donated array is also held by another Python object
(donating would delete that object's buffer under it). Neither variant runs the Python again.
"""
from __future__ import annotations

import contextlib
import sys
import weakref

import jax
import numpy as np
from jax.extend import core as jax_core

from .._ops.errors import out_of_memory
from .._ops.xla_options import nested_options_error


# NOTE [no excess precision]
# Eager runs each op as its own program, so every bfloat16/float16 result is rounded to its
# dtype, as in torch. XLA may skip the rounding between ops it fuses (a bf16 result converted
# back to f32 stays f32: ``xla_allow_excess_precision``, on by default), so one compiled
# program of the same ops gave other low-precision digits than eager (a bias gradient under
# autocast). Compiled programs round as eager does; float32/float64 programs are unchanged.
EXACT_PRECISION = {"xla_allow_excess_precision": False}

# NOTE [a program inside a transform]
# A compiled function called inside ``func.grad``/``vjp``/``jacrev`` of an eager caller
# (``func.grad(lambda x: compiled(x).sum())(x)``) runs its program on that transform's tracers.
# JAX refuses a jit carrying ``compiler_options`` (the options above) staged inside another
# trace, so every such call fell back to eager with JAX's ValueError about
# ``compiler_options`` as its graph-break reason. The program's jaxpr is a pure function of
# its flat inputs: the transform traces through it instead (vmap and jvp batch or push the
# jit itself and never met the error). The options only matter to a program XLA compiles on
# its own; the outer program is compiled with its own caller's options.


class Program:
    __slots__ = ("fun", "jaxpr", "out_tree", "donate", "drop", "options", "_donating", "_safe")

    @classmethod
    def trace(cls, fn, inputs, jit_options):
        with _releasing_abandoned_traces():
            closed, out_shape = jax.make_jaxpr(_keep_state_sharding(fn, inputs), return_shape=True)(*inputs)
        self = cls()
        self.fun = jax_core.jaxpr_as_fun(closed)
        self.jaxpr = closed          # what ``fun`` runs (``torch._dynamo.explain`` counts its ops)
        self.out_tree = jax.tree_util.tree_structure(out_shape)
        self.donate = self.drop = ()
        self.options = {**jit_options, "compiler_options": {**EXACT_PRECISION, **jit_options.get("compiler_options", {})}}
        self._donating = self._safe = None
        return self

    def __call__(self, flat, donate=True):
        """Run on the flat inputs; returns the output pytree. Call inside the x64 scope.
        ``flat`` must be the only list holding the arrays besides their owners."""
        if donate and self.donate and _exclusively_held(flat, self.donate):
            f = self._donating
            if f is None:
                # keep_unused: a donated input the program does not read (the .grad that
                # zero_grad() drops) still lends its buffer to an output of its shape (the new
                # .grad) instead of being freed while a new one is allocated
                f = self._donating = jax.jit(self._pruned(), donate_argnums=self.donate, keep_unused=True,
                                             **self.options)
        else:
            f = self._safe
            if f is None:
                f = self._safe = jax.jit(self._pruned(), **self.options)
        try:
            out = f(*flat)
        except RuntimeError as e:     # NOTE [out of memory] in _ops/errors.py
            oom = out_of_memory(e, "a tracegrad.compile program")
            if oom is None:
                raise
            raise oom from None
        except ValueError as e:
            if not nested_options_error(e):
                raise
            # NOTE [a program inside a transform]: the transform traces through the jaxpr
            out = self._pruned()(*flat)
        return jax.tree_util.tree_unflatten(self.out_tree, out)


    def split_checks(self, position):
        """NOTE [value checks at run time]: the flat output ``position`` (whether a value check
        failed) as a program of its own, a ``Precheck`` (``.failed(flat) -> bool``), when it is cheap to
        compute apart (JAX's dead-code elimination keeps only what the flag needs: a target's
        range check, not the forward). The main program then no longer computes the flag
        (``drop``). None when the flag needs a matmul, convolution, callback or loop (a BCE
        check on the model's output), or many ops: it stays an output of the program."""
        from jax._src.interpreters import partial_eval as pe    # JAX's jaxpr dead-code elimination
        closed = self.jaxpr
        used = [i == position for i in range(len(closed.jaxpr.outvars))]
        jaxpr, used_in = pe.dce_jaxpr(closed.jaxpr, used)
        if _too_heavy(jaxpr, [0]):
            return None
        check = jax.jit(jax_core.jaxpr_as_fun(jax_core.ClosedJaxpr(jaxpr, closed.consts)), **self.options)
        self.drop = tuple(self.drop) + (position,)
        return Precheck(check, tuple(i for i, u in enumerate(used_in) if u))

    def _pruned(self):
        """``fun`` with the flat outputs in ``drop`` (values nobody reads after the trace)
        returned as None, so XLA never computes or copies them."""
        fun, drop = self.fun, frozenset(self.drop)
        if not drop:
            return fun
        return lambda *a: [None if i in drop else o for i, o in enumerate(fun(*a))]

    def memory_analysis(self, flat):
        """XLA's memory figures (``temp_size_in_bytes``...) of the compiled program."""
        return jax.jit(self._pruned(), **self.options).lower(*flat).compile().memory_analysis()


class Precheck:
    """A region's value checks as a program of their own (``Program.split_checks``), run
    before the step on the flat inputs at ``keep``. The arrays of the last run that passed
    are remembered (weakly): JAX arrays are immutable, so the same array objects again (a
    step called on one batch held in memory, full-batch training) pass without running the
    checks, which cost a program dispatch and a wait for its answer on every call."""

    __slots__ = ("check", "keep", "passed")

    def __init__(self, check, keep):
        self.check, self.keep, self.passed = check, keep, ()

    def failed(self, flat) -> bool:
        arrays = [flat[i] for i in self.keep]
        passed = self.passed
        if len(passed) == len(arrays) and all(r() is a for r, a in zip(passed, arrays)):
            return False
        # np.asarray: bool() on a jax.Array costs ~20 us more
        if np.asarray(self.check(*arrays)[0]):
            self.passed = ()
            return True
        try:
            self.passed = tuple(map(weakref.ref, arrays))
        except TypeError:          # a NumPy scalar among them (a hyper-parameter): checked every call
            self.passed = ()
        return False


_HEAVY = frozenset(["dot_general", "conv_general_dilated", "pure_callback", "io_callback", "while", "scan",
                    "cond", "fft", "custom_linear_solve", "triangular_solve", "cholesky", "lu", "eigh", "svd"])
_MAX_CHECK_OPS = 200


def _too_heavy(jaxpr, count) -> bool:
    """Whether ``jaxpr`` (and the jaxprs inside its calls) holds a heavy primitive or more than
    ``_MAX_CHECK_OPS`` ops (``count``: ops seen so far)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in _HEAVY:
            return True
        count[0] += 1
        if count[0] > _MAX_CHECK_OPS:
            return True
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                inner = getattr(sub, "jaxpr", sub)
                if isinstance(inner, jax_core.Jaxpr) and _too_heavy(inner, count):
                    return True
    return False


# NOTE [donation on CPU]
# Donated state lets XLA write the new values into the old buffers, on every platform. An
# earlier measurement on XLA:CPU had a training step that also returns its gradients run
# slower donated; re-measured with JAX 0.10.2 (interleaved calls, the tracegrad.compile step
# against the JAX+optax step, p10 and median ratios), donating is as fast or faster: digits
# MLP SGD 1.09/1.09x not donated vs 1.07/1.09x donated, MLP AdamW 1.18/1.18x vs 1.10/1.10x,
# CNN SGD 1.07/1.07x vs 1.05/1.07x; and it halves the state's memory. So state is always
# donated (a buffer something else still holds never is: ``_exclusively_held``).
# Measured 2026-11-30 (JAX 0.10.2, digits MLP, SGD): the call of a step's program returns only
# after the program ran (wait afterwards ~55 us), for tracegrad's program and for the
# JAX+optax step alike: XLA:CPU runs such programs in the calling thread. So the guards and the
# write-back add to every step instead of overlapping with it (on a GPU they overlap). The two
# programs themselves run equally fast (interleaved, p10 within 2%). Re-measured 2026-12-01:
# the JAX step returning its gradients is slower than one returning none only on 2 cores, by
# the order in which XLA:CPU's scheduler runs independent operations concurrently (flipping
# ``xla_cpu_enable_concurrency_optimized_scheduler`` reverses which is faster); pinned to one
# core the two differ by 1-2% (``benchmarks/compile_step.py --cores 0``). Not donating 0-d and
# other small state (step counters; XLA then copies none of them) removed 13 of 74 operations
# of an AdamW step and no measurable time, so all written state is donated.


# NOTE [abandoned traces]: a trace that ends in an exception (a discovery trace abandoned to
# lift the state it found, a graph break, the user's own error) is not torn down by JAX 0.10.2:
# its ``ensure_no_leaks`` context skips ``invalidate()`` on an exception, and each constant the
# trace captured (the state arrays a discovery trace read before they were lifted) has a
# ``weakref.finalize`` whose callback, a bound method of the trace, keeps the trace, its frame
# and those arrays alive for good: a full copy of the parameters per retrace (measured: +1 MiB
# per new batch size for a 1 MiB model), and the first run could not donate them. So the
# finalizers a failed trace registered are run (``invalidate``) and detached.
@contextlib.contextmanager
def _releasing_abandoned_traces():
    registry = weakref.finalize._registry          # noqa: SLF001 -- CPython's finalizer table
    before = set(registry)
    try:
        yield
    except BaseException:
        for f in [f for f in list(registry) if f not in before]:
            info = registry.get(f)
            trace = getattr(getattr(info, "func", None), "__self__", None)
            if trace is not None and type(trace).__name__ == "DynamicJaxprTrace":
                trace.invalidate()
                f.detach()
        raise


def _exclusively_held(flat, indices):
    # references: the storage (or generator / grad) slot, ``flat``, the call argument
    for i in indices:
        if sys.getrefcount(flat[i]) > 3:
            return False
    return True


def _keep_state_sharding(fn, inputs):
    """NOTE [sharded state]: the written-back state keeps the layout it came in with. A region's
    program takes ``(state, ...)`` and returns ``(results, state_end, ...)``, ``state_end[i]``
    being the new value of ``state[i]`` (None: not written). When a state array is laid out
    over several devices (``DistributedDataParallel``/``FullyShardedDataParallel`` on a mesh),
    its new value is constrained to that same sharding, so XLA's partitioner never returns a
    sharded parameter or optimizer buffer gathered (or a replicated one split). Arrays on one
    device are left alone (no constraint, no cost)."""
    def sharding(a):
        s = getattr(a, "sharding", None)
        return s if isinstance(s, jax.sharding.NamedSharding) and len(s.device_set) > 1 else None
    shardings = [sharding(a) for a in inputs[0]]
    if not any(shardings):
        return fn

    def constrained(*args):
        out = fn(*args)
        state_end = [a if a is None or s is None else jax.lax.with_sharding_constraint(a, s)
                     for a, s in zip(out[1], shardings)]
        return (out[0], state_end) + tuple(out[2:])
    return constrained
