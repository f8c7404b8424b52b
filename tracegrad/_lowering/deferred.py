"""``tensor.item()`` inside a compiled function whose number Python only hands back.

NOTE [deferred item]: ``return loss.item()`` (or ``{"loss": loss.item(), "acc": acc.item()}``)
ends many compiled training steps. Reading a traced tensor's value is a graph break, and the
whole step then ran eagerly on every call. torch.compile splits the function there instead; the
common case needs no split: the number is only *returned*, so it can be read after the program
ran. While tracing, ``item()`` called from user code returns a ``DeferredItem`` standing for
the number: the traced scalar becomes an output of the program, and each call returns the
Python number read from it (``OutRecipe``'s "item" leaves in results.py), of the type eager's
``item()`` gives (float, int, bool, complex).

Arithmetic with Python numbers is deferred too (``return loss.item() / args.chunk_len``,
``round(acc.item(), 4)``, ``sum(x.item() for x in parts)``): a ``DeferredExpr`` records the
operation and each call applies it, in Python, to that call's numbers after the program ran,
so the result is what eager's Python arithmetic gives, bit for bit and of its type. Only
operations that cannot raise for any value are deferred, since a deferred one would raise after
the program had updated the state the eager call never reached: ``+ - *``, unary ``- + abs``,
``/ // %`` by a nonzero number the trace knows, ``round(v, ndigits)``. A deferred divisor
(``ZeroDivisionError``), ``**`` (``OverflowError``) and ``round(v)`` (inf, NaN) need the value.
The numbers an operation takes are the trace's, as a number a tensor op takes: guarded.

Anything else Python does with the stand-in (compare, branch on, format, print, convert, hash
it) needs the number during the trace: each such use raises the graph break the value read
raised before, with the user's file and line, and the call runs eagerly as it did. A stand-in
kept anywhere but in the returned value (a list, an attribute, a closure) is found by its
reference count after the trace (``check_kept``): a graph break too.
Not deferred: ``item()`` called by tracegrad's own code (its Python reads the number).
``fullgraph=True`` defers too: torch 2.13 returns the number there (``return loss.item() / 2``
compiles with fullgraph) and raises only where Python needs the value; so does tracegrad.
"""
from __future__ import annotations

import operator
import sys

import jax.numpy as jnp

from . import result_objects
from .capture import GraphBreak


_NEEDED = "item() reads a tensor's value in Python (data-dependent control flow or a value taken out of the program)"
_NUMBER_TYPES = (bool, int, float, complex)
# a value of the Python type item() gives for each dtype kind, to learn an operation's result
# type (and its TypeError) while tracing without the number
_SPECIMENS = {"b": True, "i": 3, "u": 3, "f": 1.5, "c": 1.5 + 0.5j}


class Deferred:
    """A number the program computes that Python only hands back: ``tensor.item()``'s
    (``DeferredItem``) or Python arithmetic on such numbers (``DeferredExpr``). ``made`` is the
    trace's list of all of them (``check_kept``); ``specimen`` a number of the type eager's
    would have. Every use but the deferrable arithmetic raises ``GraphBreak``."""

    __slots__ = ("made", "specimen", "bound")

    def _needed(self, *_a, **_k):
        raise GraphBreak(_NEEDED)

    @property
    def __class__(self):
        # ``isinstance(v, float)`` (and ``numbers.Number``) answers as for eager's number: it
        # falls back to ``__class__`` when ``type(v)`` is no subclass. ``type(v)`` itself cannot
        # be answered (NOTE [deferred item]); tracegrad's own checks use ``type()``.
        return type(self.specimen)

    def _apply(self, op, operands):
        """``op(*operands)`` deferred, or the graph break when Python would need the number."""
        try:
            specimen = op(*(o.specimen if isinstance(o, Deferred) else o for o in operands))
        except Exception:     # noqa: BLE001 -- eager raises for the types: it runs eagerly too
            raise GraphBreak(_NEEDED) from None
        if type(specimen) not in _NUMBER_TYPES:
            raise GraphBreak(_NEEDED)
        bounds = [_bound(o) for o in operands]
        if type(specimen) in (float, complex):
            # an int operand is made a float: OverflowError past float's range, which the
            # specimen cannot show (``n * 2 ** 1000 + 0.5`` with a large n)
            if any(b is not None and b >= _FLOAT_SAFE for b in bounds):
                raise GraphBreak(_NEEDED)
            bound = None
        else:
            bound = _INT_BOUND[op](*bounds)
        return DeferredExpr(self.made, specimen, op, operands, bound)

    def evaluator(self, where):
        """A function of a call's numbers (a list: the ``DeferredItem``s' at ``where[id(item)]``)
        giving this number; it holds neither the stand-ins nor their traced arrays."""
        raise NotImplementedError

    def items(self, out):
        """Append the ``DeferredItem``s this number reads to ``out`` (once each)."""
        raise NotImplementedError


# an int below this converts to float without OverflowError (float's max is just under 2 ** 1024)
_FLOAT_SAFE = 2 ** 1023


def _bound(v):
    """The largest magnitude an int (or bool) operand may have; None for float and complex."""
    if isinstance(v, Deferred):
        return v.bound
    return abs(v) if type(v) in (bool, int) else None


# the bound of an int operation's result from its operands' bounds (a deferred ``//`` and ``%``
# only divide a deferred number by a known nonzero one; ``round(n, -k)`` goes to the nearest
# multiple of 10 ** k: at most twice ``|n|``)
_INT_BOUND = {operator.add: lambda a, b: a + b, operator.sub: lambda a, b: a + b,
              operator.mul: lambda a, b: a * b, operator.floordiv: lambda a, b: a + 1,
              operator.mod: lambda a, b: b, operator.neg: lambda a: a, operator.pos: lambda a: a,
              abs: lambda a: a, round: lambda a, nd: 2 * a}


def _number(v) -> bool:
    # (an int past float's range mixed with a float: ``_apply``'s bounds and specimen break)
    return type(v) in _NUMBER_TYPES or isinstance(v, Deferred)


def _constant_divisor(v) -> bool:
    return type(v) in _NUMBER_TYPES and v != 0


def _binary(op, reflected, divides):
    def method(self, other):
        if not _number(other) or (divides and not _constant_divisor(self if reflected else other)):
            raise GraphBreak(_NEEDED)
        return self._apply(op, (other, self) if reflected else (self, other))
    return method


for _op, _divides in ((operator.add, False), (operator.sub, False), (operator.mul, False),
                      (operator.truediv, True), (operator.floordiv, True), (operator.mod, True)):
    _name = _op.__name__.strip("_")
    setattr(Deferred, f"__{_name}__", _binary(_op, False, _divides))
    setattr(Deferred, f"__r{_name}__", _binary(_op, True, _divides))
for _op in (operator.neg, operator.pos, abs):
    setattr(Deferred, f"__{_op.__name__.strip('_')}__", lambda self, _op=_op: self._apply(_op, (self,)))


def _round(self, ndigits=None):
    if type(ndigits) is not int:       # round(inf) and round(nan) raise: the value decides
        raise GraphBreak(_NEEDED)
    return self._apply(round, (self, ndigits))


Deferred.__round__ = _round

# every other operator and conversion Python may apply to a number: each needs its value
for _name in ("bool", "float", "int", "index", "complex", "str", "repr", "format", "hash", "len", "iter",
              "trunc", "floor", "ceil", "invert", "reduce", "reduce_ex", "copy", "deepcopy", "getstate",
              "setstate", "contains", "getitem", "call", "array", "eq", "ne", "lt", "le", "gt", "ge",
              "divmod", "rdivmod", "matmul", "rmatmul",
              *(f"{p}{op}" for op in ("pow", "lshift", "rshift", "and", "or", "xor") for p in ("", "r", "i"))):
    setattr(Deferred, f"__{_name}__", Deferred._needed)
# and the numbers' own attributes (``v.is_integer()``, ``v.real``): the graph break, not an
# AttributeError naming the stand-in
for _name in ("real", "imag", "conjugate", "is_integer", "hex", "as_integer_ratio", "bit_length", "bit_count",
              "numerator", "denominator", "to_bytes"):
    setattr(Deferred, _name, property(Deferred._needed))
del _name, _op, _divides


def _kind(dtype) -> str:
    # bfloat16 and the float8 types are numpy "V" (void) dtypes; their item() is a float
    return "f" if dtype.kind == "V" and jnp.issubdtype(dtype, jnp.floating) else dtype.kind


class DeferredItem(Deferred):
    """The number ``tensor.item()`` will have (``array``: the traced scalar)."""

    __slots__ = ("array",)

    def __init__(self, array, made):
        self.array, self.made = array, made
        kind = _kind(array.dtype)
        self.specimen = _SPECIMENS[kind]
        self.bound = 1 if kind == "b" else 2 ** (8 * array.dtype.itemsize) if kind in "iu" else None
        made.append(self)

    def evaluator(self, where):
        i = where[id(self)]
        return lambda values: values[i]

    def items(self, out):
        if not any(d is self for d in out):
            out.append(self)


class DeferredExpr(Deferred):
    """Python's ``op(*operands)`` on deferred numbers and plain ones, applied after each run."""

    __slots__ = ("op", "operands")

    def __init__(self, made, specimen, op, operands, bound):
        self.made, self.specimen, self.op, self.operands, self.bound = made, specimen, op, operands, bound
        made.append(self)

    def evaluator(self, where):
        op = self.op
        parts = [o.evaluator(where) if isinstance(o, Deferred) else (lambda values, o=o: o) for o in self.operands]
        return lambda values: op(*[p(values) for p in parts])

    def items(self, out):
        for o in self.operands:
            if isinstance(o, Deferred):
                o.items(out)


def _references_within(made, originals) -> dict:
    """id -> how many operands of the deferred operations in ``made``, and values of the
    returned objects the call made (``originals``), are that stand-in (a function of its own, so
    that no loop variable of it holds one while references are counted)."""
    within = {}
    for o in [o for d in made for o in getattr(d, "operands", ())] + \
            [v for obj in originals for v in result_objects.values_of(obj)]:
        if isinstance(o, Deferred):
            within[id(o)] = within.get(id(o), 0) + 1
    return within


def check_kept(made, leaves, originals=()):
    """Raise ``GraphBreak`` when a stand-in in ``made`` (all this trace handed out) is referenced
    from anywhere but the result: each occurrence among the result's flat ``leaves`` accounts
    for two references (the flat list's and the result container's or variable's), and each
    value of a returned object the call made (``originals``: the rebuilt result holds its
    values too, NOTE [returned objects] in result_objects.py) for one."""
    within = _references_within(made, originals)
    for d in made:
        n = sum(1 for x in leaves if x is d)
        # references: ``made``, the loop variable, getrefcount's argument
        if sys.getrefcount(d) > 3 + 2 * n + within.get(id(d), 0):
            raise GraphBreak("the number item() returned is kept in Python (a list, an attribute, a "
                             "closure variable), not only returned: the program would not store it on "
                             "later calls")
