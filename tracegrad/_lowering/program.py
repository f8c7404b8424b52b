"""A traced region as jitted XLA programs over flat arrays, with donated state.

``Program.trace(fn, inputs)`` traces ``fn`` once to a jaxpr (running the Python once);
``set_donation(indices)`` names the flat inputs whose buffers the program may reuse (state it
overwrites). The jaxpr is jitted on demand twice: with those inputs donated (the steady-state
path) and without, for a call where a donated array is also held by another Python object
(donating would delete that object's buffer under it). Neither variant runs the Python again.
"""
from __future__ import annotations

import sys

import jax
from jax.extend import core as jax_core


class Program:
    __slots__ = ("fun", "out_tree", "donate", "drop", "options", "_donating", "_safe")

    @classmethod
    def trace(cls, fn, inputs, jit_options):
        closed, out_shape = jax.make_jaxpr(_keep_state_sharding(fn, inputs), return_shape=True)(*inputs)
        self = cls()
        self.fun = jax_core.jaxpr_as_fun(closed)
        self.out_tree = jax.tree_util.tree_structure(out_shape)
        self.donate = self.drop = ()
        self.options = jit_options
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
        return jax.tree_util.tree_unflatten(self.out_tree, f(*flat))


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


# NOTE [donation on CPU]
# Donated state lets XLA write the new values into the old buffers. On GPU that saves memory
# and time. On XLA:CPU it is measured here as a memory saving only: a training step that also
# returns its gradients (the new ``.grad``, which eager semantics need) runs slower donated --
# the digits MLP SGD step's program alone, outputs fed back as inputs: 0.48 ms donated vs 0.40
# ms not; a hand-written JAX+optax step that also returns its gradients: 0.50 vs 0.42 (0.39
# donated without them); the digits CNN the same either way. So on CPU state is donated only
# when it is big enough for a second copy to matter.
DONATE_MIN_BYTES_CPU = 32 << 20


def worth_donating(arrays) -> bool:
    """Whether donating ``arrays`` (the state a program overwrites) pays: always off the CPU,
    on CPU from ``DONATE_MIN_BYTES_CPU`` bytes (NOTE [donation on CPU])."""
    if not arrays:
        return False
    if any(d.platform != "cpu" for a in arrays for d in a.devices()):
        return True
    return sum(a.nbytes for a in arrays) >= DONATE_MIN_BYTES_CPU


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
