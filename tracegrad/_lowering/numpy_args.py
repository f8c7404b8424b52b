"""NumPy array arguments of a compiled function traced as program inputs.

NOTE [numpy arguments]
``torch.compile`` takes an ndarray argument into its graph as a tensor input (it traces NumPy
code as tensor code), so a step fed a new batch of arrays on every call compiles once. A
program here holds the values of whatever Python read while tracing, so an ndarray argument
was a constant of its program, keyed by its bytes: every new batch traced again until
``cache_size_limit`` sent the function eagerly. Most steps only hand such an array to
tracegrad (``torch.from_numpy(x)``, ``torch.as_tensor(y)``, ``torch.tensor(x, dtype=...)``);
for those the array is an input like a tensor argument, keyed by its shape and dtype.

The trace cannot know in advance what the function does with the array, so it passes a
stand-in (``NumpyStandIn``) that answers the array's metadata (shape, dtype, strides, flags,
``len``, ``isinstance(x, np.ndarray)``) and hands its traced value to tracegrad's conversions
(``Capture.numpy_inputs``, read by the factories). Anything else -- numpy reading its values
(``np.mean(x)``, ``x * 2``, ``np.asarray(x)``), indexing, iteration, ``x.tolist()``, a copy,
the stand-in kept past the call (stored, returned) -- may put the values
into Python or into the program as constants. The stand-in then records the read and raises
``NumpyValuesRead``; recorded, so a user ``except`` around it cannot hide it. The one
question it cannot answer as the array would is ``type(x) is np.ndarray`` (False for a
stand-in): a function whose own code calls ``type`` gets the arrays themselves from the start
(``asks_type``: a module's ``forward``, a callable's ``__call__``, a partial's function too);
where only a helper it reaches names ``type`` (``trace_region``'s ``helpers_ask_type``), a
stand-in no conversion took (``unconverted``) may have gone down the other branch of such a
test, and is traced again as the array too. Otherwise an unused array stays an (unused)
input: eval calls that leave the labels alone trace once. An argument that is also a global or
closure variable the function reads (``x is REF``) is traced as the array (``also_outside``). A write into the array is a graph
break (NOTE [writes into numpy arguments]). A trace that raises with
stand-ins about (``memoryview(x)`` and C functions refuse one) is tried again with the arrays
too: whether the call raises is then the function's own answer (where it does, new arrays
stay inputs). The compiled
function marks those argument positions as read by value from then on, for calls of the same
context (``compiler._numpy_context``: the arguments' structure and their bools, strings and
Nones, so ``train=False`` calls that read the labels differently do not bake the
``train=True`` calls' labels) (``classify_args``' ``baked``), and traces the call again with
the arrays themselves: constants keyed by their bytes, as before. Only writable arrays of a dtype tensors have, with strides ``from_numpy``
takes, are taken in (a read-only one gets a warning, the others an error); a strided one (a
Fortran-ordered array from pandas, a column slice) is keyed by its strides too, as Python may
read them, and its tensor in the program gets eager's layout (``factories._from_stand_in``):
a Fortran-ordered batch is a column-major tensor, whose ``stride()``, ``is_contiguous()`` and
``view(-1)`` (an error) were the row-major ones in a program before. So does an array traced
as itself (a constant).

A tensor made from the stand-in by ``from_numpy``/``as_tensor`` shares the caller's array
eagerly; in the program it is a copy of the input, so writing it in place is a graph break
(``Capture.numpy_copy``), as for any array converted inside a trace, and so is returning it or
keeping it past the call (eagerly it sees the caller's later writes to the array). An array that shares
memory with a tensor a program reads or writes cannot be an input copied before the program
runs (``aliased_args``).
"""
from __future__ import annotations

import dis
import functools
import types

import numpy as np

from .._ops import dtypes as _dt
from .capture import GraphBreak
from .pystate import _value


class NumpyValuesRead(Exception):
    """A trace read the values of NumPy array arguments (``positions``: their leaf indices)
    other than through tracegrad's conversions (NOTE [numpy arguments])."""

    def __init__(self, positions, what="its values", raised=False):
        super().__init__(f"NumPy argument(s) {sorted(positions)} read by value ({what})")
        self.positions = frozenset(positions)
        self.raised = raised     # the trace raised: maybe the function's own error


_INPUT_DTYPES: dict = {}


def takes_in(a) -> bool:
    """Whether ndarray ``a`` can be a program input (NOTE [numpy arguments]): writable, of a
    dtype tensors have in native byte order, with strides ``from_numpy`` accepts."""
    if not a.flags.writeable or not (a.flags.c_contiguous or all(s >= 0 and s % a.itemsize == 0 for s in a.strides)):
        return False
    ok = _INPUT_DTYPES.get(a.dtype)
    if ok is None:
        try:
            _dt.from_numpy_dtype(a.dtype)
            ok = a.dtype.isnative
        except (TypeError, ValueError):
            ok = False
        _INPUT_DTYPES[a.dtype] = ok
    return ok


def _metadata(name):
    return property(lambda self: getattr(self._real, name))


class NumpyStandIn:
    """What the traced function gets for an ndarray argument (NOTE [numpy arguments]): the
    array's metadata, and its traced value for tracegrad's conversions only."""

    __slots__ = ("_real", "array", "position", "read", "converted", "__weakref__")
    __hash__ = None          # as an ndarray's

    def __init__(self, real, array, position):
        self._real, self.array, self.position = real, array, position
        self.read = self.converted = False

    def value(self):
        """The traced value, for a tracegrad conversion (``_tensor/factories.py``)."""
        self.converted = True
        return self.array

    # ``isinstance(x, np.ndarray)`` holds, as for the caller's array: code that checks it before
    # converting takes the same branch as eagerly
    @property
    def __class__(self):
        return np.ndarray

    shape, dtype, ndim, size, itemsize, nbytes, strides = map(
        _metadata, ("shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides"))

    @property
    def flags(self):
        # the caller's flags object would let ``x.flags.writeable = False`` change the caller's
        # array while tracing only (NOTE [writes into numpy arguments]): reads only
        return _Flags(self)

    def __len__(self):
        return len(self._real)

    def values_read(self, what="its values"):
        """Record that the function read the array by value (``what``), and stop the trace."""
        self.read = True
        raise NumpyValuesRead((self.position,), what)

    def written(self, what):
        """The function writes into the caller's array (``what``): a graph break (NOTE [writes
        into numpy arguments]); recorded by ``GraphBreak``, so a user ``except`` cannot hide it."""
        raise GraphBreak(f"the function writes into its NumPy array argument ({what}): a program would not "
                         "repeat the write on later calls (write into a copy, x = x.copy(), or do it outside "
                         "the compiled function)")

    def __getattr__(self, name):
        if not hasattr(self._real, name):       # what the array lacks, the stand-in lacks too
            raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")
        if name in _WRITING_METHODS:
            self.written(f"x.{name}()")
        self.values_read(name)

    def __array__(self, *args, **kwargs):
        self.values_read()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = getattr(ufunc, "__name__", ufunc)
        if _is_out(self, kwargs.get("out")):
            self.written(f"numpy.{name}(..., out=x)")
        if method == "at" and inputs and inputs[0] is self:     # ``np.add.at(x, idx, 1)``
            self.written(f"numpy.{name}.at(x, ...)")
        self.values_read()

    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", "")
        if (name in _WRITING_FUNCTIONS and args and args[0] is self) or _is_out(self, kwargs.get("out")):
            self.written(f"numpy.{name}(x, ...)" if name in _WRITING_FUNCTIONS else f"numpy.{name}(..., out=x)")
        self.values_read()

    def __setattr__(self, name, value):
        if name in NumpyStandIn.__slots__:
            object.__setattr__(self, name, value)
        elif not hasattr(self._real, name):
            # numpy's own AttributeError, as eagerly (an ndarray takes no new attributes): the
            # array is left as it is
            setattr(self._real, name, value)
        else:
            self.written(f"x.{name} = ...")

    def __setitem__(self, key, value):
        self.written("x[...] = ...")

    def __delitem__(self, key):
        del self._real[key]      # numpy's ValueError, as eagerly: an array's elements cannot be deleted


# NOTE [writes into numpy arguments]: a function that writes into its ndarray argument (``x[m] =
# 0``, ``x -= x0``, ``np.clip(x, 0, 1, out=x)``, ``x.sort()``, ``x.flags.writeable = False``) writes
# into the caller's array on every eager call. Read by value instead (the stand-in's answer to
# everything it does not pass on), the call was traced again with the caller's arrays themselves:
# the write happened while tracing, into that call's array only, and a later call whose array held
# the same bytes ran the program without it (a side effect that happened once). The stand-in
# says a graph break for a write it sees, so such calls run eagerly. A write after a read
# (``x[0][1] = 5`` indexes first) is not seen here: the array is then traced as itself, and
# ``trace_region`` compares its bytes after the call with a copy from before
# (``_check_arrays_unwritten``): changed, a graph break, the bytes put back for the eager run.
_WRITING_METHODS = frozenset("fill sort partition put resize setfield setflags itemset".split())
_WRITING_FUNCTIONS = frozenset("copyto put place putmask fill_diagonal put_along_axis".split())


def _is_out(stand_in, out) -> bool:
    """Whether a NumPy call's ``out`` (an array or a tuple of them) is ``stand_in``."""
    return out is stand_in or (type(out) is tuple and any(o is stand_in for o in out))


class _Flags:
    """A stand-in's ``flags``: the caller's array's, for reading (NOTE [writes into numpy
    arguments])."""

    __slots__ = ("_of",)

    def __init__(self, of):
        object.__setattr__(self, "_of", of)

    def __getattr__(self, name):
        return getattr(self._of._real.flags, name)

    def __getitem__(self, key):
        return self._of._real.flags[key]

    def __setattr__(self, name, value):
        self._of.written(f"x.flags.{name} = ...")

    def __setitem__(self, key, value):
        self._of.written(f"x.flags[{key!r}] = ...")

    def __eq__(self, other):
        return self._of._real.flags == (other._of._real.flags if isinstance(other, _Flags) else other)

    __hash__ = None

    def __repr__(self):
        return repr(self._of._real.flags)


def _reads(name):
    def read(self, *args, **kwargs):
        self.values_read(name)
    read.__name__ = name
    return read


# every other way Python reaches an array's values (operators, conversions, item access,
# iteration, printing, copying, pickling): a read
for _name in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv "
              "mod rmod pow rpow matmul rmatmul lshift rlshift rshift rrshift "
              "and rand or ror xor rxor divmod rdivmod neg pos abs invert eq ne lt le gt ge "
              "bool int float complex index round trunc floor ceil getitem iter reversed contains "
              "repr str format bytes copy deepcopy reduce reduce_ex buffer dlpack dlpack_device").split():
    setattr(NumpyStandIn, f"__{_name}__", _reads(f"__{_name}__"))


def _writes(name):
    def write(self, other):
        self.written(f"x {name}= ...")
    write.__name__ = f"__i{name}__"
    return write


# ``x += 1`` writes into the caller's array (NOTE [writes into numpy arguments])
for _name, _op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"), ("mod", "%"),
                   ("pow", "**"), ("matmul", "@"), ("lshift", "<<"), ("rshift", ">>"), ("and", "&"), ("or", "|"),
                   ("xor", "^")):
    setattr(NumpyStandIn, f"__i{_name}__", _writes(_op))
del _name, _op


def unconverted(stand_ins) -> list:
    """The positions of the stand-ins no tracegrad conversion took (NOTE [numpy arguments]):
    unused by the trace, or used in a way the stand-in cannot see (``type(x) is np.ndarray``
    is False for it, so code branching on that takes the other branch). Traced again with the
    arrays themselves, such a call gets eager's branch."""
    return [s.position for s in stand_ins if not s.converted]


def asks_type(fn) -> bool:
    """Whether ``fn``'s own code (its nested functions' and comprehensions' included) calls the
    builtin ``type``: ``type(x) is np.ndarray`` would be False for a stand-in (NOTE [numpy
    arguments]), so its NumPy arguments are traced as the arrays themselves."""
    return any(_loads_global(code, "type") for code in _own_codes(fn))


def _own_codes(fn, depth=0) -> list:
    """The code objects of the user's own code that calling ``fn`` runs first: a function's or
    bound method's; a ``functools.partial``'s function's; for a callable object (``compile(model)``
    gets the module itself), its class's ``forward`` and ``__call__`` where the user wrote them
    (tracegrad's own ``Module.__call__`` only dispatches to ``forward``)."""
    if depth > 4:
        return []
    inner = getattr(fn, "func", None)          # functools.partial
    if isinstance(fn, functools.partial) and inner is not None:
        return _own_codes(inner, depth + 1)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if isinstance(code, types.CodeType):
        return [code]
    wrapped = getattr(fn, "module", None)
    if wrapped is not None and type(fn).__module__.startswith("tracegrad."):
        # nn's ``_BoundCall`` (what ``compile(module)`` runs; nn sits above this layer): the module
        return _own_codes(wrapped, depth + 1)
    codes = []
    for name in ("forward", "__call__"):
        m = getattr(type(fn), name, None)
        if isinstance(m, types.FunctionType) and not m.__module__.startswith("tracegrad."):
            codes.append(m.__code__)
    return codes


def _loads_global(code, name) -> bool:
    if name in code.co_names and any(ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == name
                                      for ins in dis.get_instructions(code)):
        return True
    return any(_loads_global(c, name) for c in code.co_consts if isinstance(c, types.CodeType))


def also_outside(leaves, kinds, refs) -> list:
    """The positions of NumPy input arguments that are also the value of a global or closure
    variable the function reads (``refs``: ``pystate.python_refs``'): ``x is REF`` there would
    be False for a stand-in, so such an argument is traced as the array itself (NOTE [numpy
    arguments])."""
    outside = set()
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if type(v) is np.ndarray:
            outside.add(id(v))
    return [i for i, (a, k) in enumerate(zip(leaves, kinds)) if k == "ndarray" and id(a) in outside]
