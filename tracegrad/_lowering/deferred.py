"""``tensor.item()`` inside a compiled function whose number Python only hands back.

NOTE [deferred item]: ``return loss.item()`` (or ``{"loss": loss.item(), "acc": acc.item()}``)
ends many compiled training steps. Reading a traced tensor's value is a graph break, and the
whole step then ran eagerly on every call. torch.compile splits the function there instead; the
common case needs no split: the number is only *returned*, so it can be read after the program
ran. While tracing, ``item()`` called from user code returns a ``DeferredItem`` standing for
the number: the traced scalar becomes an output of the program, and each call returns the
Python number read from it (``OutRecipe``'s "item" leaves in region.py), of the type eager's
``item()`` gives (float, int, bool, complex).

Anything else Python does with the stand-in (compare, branch on, format, print, do
arithmetic, convert, hash it) needs the number during the trace: each such use raises the
graph break the value read raised before, with the user's file and line, and the call runs
eagerly as it did. A stand-in kept anywhere but in the returned value (a list, an attribute,
a closure) is found by its reference count after the trace (``check_kept``): a graph break too.
Not deferred: ``item()`` called by tracegrad's own code (its Python reads the number), and
``fullgraph=True``, where torch raises for the value read as well.
"""
from __future__ import annotations

import sys

from .capture import GraphBreak


class DeferredItem:
    """The number ``tensor.item()`` will have (``array``: the traced scalar). Every use of it
    as a number raises ``GraphBreak``."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def _needed(self, *_a, **_k):
        raise GraphBreak("item() reads a tensor's value in Python (data-dependent control flow or a "
                         "value taken out of the program)")


# every operator and conversion Python may apply to a number: each needs its value
for _name in ("bool", "float", "int", "index", "complex", "str", "repr", "format", "hash", "len", "iter",
              "round", "trunc", "floor", "ceil", "abs", "neg", "pos", "invert", "reduce", "reduce_ex",
              "copy", "deepcopy", "getstate", "setstate", "contains", "getitem", "call", "array",
              "eq", "ne", "lt", "le", "gt", "ge", "divmod", "rdivmod", "matmul", "rmatmul",
              *(f"{p}{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift",
                                      "rshift", "and", "or", "xor") for p in ("", "r", "i"))):
    setattr(DeferredItem, f"__{_name}__", DeferredItem._needed)
del _name


def check_kept(made, leaves):
    """Raise ``GraphBreak`` when a stand-in in ``made`` (all this trace handed out) is referenced
    from anywhere but the result: each occurrence among the result's flat ``leaves`` accounts
    for two references (the flat list's and the result container's or variable's)."""
    for d in made:
        n = sum(1 for x in leaves if x is d)
        # references: ``made``, the loop variable, getrefcount's argument
        if sys.getrefcount(d) > 3 + 2 * n:
            raise GraphBreak("the number item() returned is kept in Python (a list, an attribute, a "
                             "closure variable), not only returned: the program would not store it on "
                             "later calls")
