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
    __slots__ = ("fun", "out_tree", "donate", "options", "_donating", "_safe")

    @classmethod
    def trace(cls, fn, inputs, jit_options):
        closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*inputs)
        self = cls()
        self.fun = jax_core.jaxpr_as_fun(closed)
        self.out_tree = jax.tree_util.tree_structure(out_shape)
        self.donate = ()
        self.options = jit_options
        self._donating = self._safe = None
        return self

    def __call__(self, flat, donate=True):
        """Run on the flat inputs; returns the output pytree. Call inside the x64 scope.
        ``flat`` must be the only list holding the arrays besides their owners."""
        if donate and self.donate and _exclusively_held(flat, self.donate):
            f = self._donating
            if f is None:
                f = self._donating = jax.jit(self.fun, donate_argnums=self.donate, **self.options)
        else:
            f = self._safe
            if f is None:
                f = self._safe = jax.jit(self.fun, **self.options)
        return jax.tree_util.tree_unflatten(self.out_tree, f(*flat))


    def memory_analysis(self, flat):
        """XLA's memory figures (``temp_size_in_bytes``...) of the compiled program."""
        return jax.jit(self.fun, **self.options).lower(*flat).compile().memory_analysis()


def _exclusively_held(flat, indices):
    # references: the storage (or generator / grad) slot, ``flat``, the call argument
    for i in indices:
        if sys.getrefcount(flat[i]) > 3:
            return False
    return True
