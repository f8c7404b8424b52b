"""What a function's code says, read from its bytecode, and whose code it is.

``pystate.py`` finds the Python values a compiled function reaches and watches them for side
effects; this module answers the questions about code it asks on the way: which attribute names
a code object reads through its parameters (``parameter_reads``) or names only to store or bump
them (``counter_uses``: NOTE [Python counters] and [Python appends] in pystate.py), which
globals it loads that nothing defines, whether it formats a value (an f-string field runs
``__format__``), and whether a file, module, class or frame belongs to the user's code rather
than to tracegrad, JAX, NumPy or the standard library (``_user_code``, ``opened_by_user``).
Results are cached per code object or file name.
"""
from __future__ import annotations

import dis
import functools
import operator
import os
import sys
import sysconfig
import types


# ``repr(config)``/``str(config)`` named by the code make a value of what ``__repr__``/``__str__``
# read (``x * len(repr(config))``): reached then, so a changed ``config.name`` traces again
# instead of running the first trace's length (round 28, MiscTests.test_repr). Printing alone
# (``print(trainer)``) does not name them and stays unguarded (NOTE [implicit methods] in pystate.py).
# An f-string's field (``f"{config}"``, ``f"{config!r}"``) and ``format(config)`` call them
# too: code holding one loads the pseudo-name ``_FORMATS`` (``_code_names``).
_FORMATS = "<formats a value>"
_REACHED_BY_BUILTIN = {"repr": ("__repr__",), "ascii": ("__repr__",), "str": ("__str__", "__repr__"),
                       "format": ("__format__", "__str__", "__repr__"),
                       _FORMATS: ("__format__", "__str__", "__repr__")}
_FORMAT_OPS = frozenset(dis.opmap[n] for n in ("FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE")
                        if n in dis.opmap)
_FORMATTING: dict = {}     # code -> whether it formats a value (an f-string field)


def _formats(code) -> bool:
    hit = _FORMATTING.get(code)
    if hit is None:
        hit = _FORMATTING[code] = any(i.opcode in _FORMAT_OPS for i in dis.get_instructions(code))
    return hit


_LIBRARY_DIRS = tuple(
    os.path.dirname(getattr(sys.modules.get(m), "__file__", "") or "") + os.sep
    for m in ("tracegrad", "jax", "jaxlib", "numpy", "ml_dtypes", "opt_einsum")
    if getattr(sys.modules.get(m), "__file__", None)) + tuple(
    {os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_USER: dict = {}      # file name -> whether it is user code


def _user_code(code) -> bool:
    """Code outside tracegrad, JAX, NumPy and the standard library (cached per file)."""
    return _user_file(code.co_filename)


def _user_module(m) -> bool:
    """A module of user code (its file is), or one built at run time (``types.ModuleType``)."""
    f = getattr(m, "__file__", None)
    return _user_file(f) if f else m.__name__ not in sys.builtin_module_names and m.__spec__ is None


def _user_class(v) -> bool:
    """A class defined in user code (its module's file is), whose attributes are user state.
    A class made by code that has no module file (a notebook's ``__main__``, ``exec`` of a
    source text: ``__module__`` is then ``'builtins'``) is a user class when a function it
    defines is user code."""
    if not isinstance(v, type) or v is object:
        return False
    f = getattr(sys.modules.get(v.__module__), "__file__", None)
    if f is not None:
        return _user_file(f)
    return any(isinstance(a, types.FunctionType) and _user_code(a.__code__) for a in vars(v).values())


def _user_file(f) -> bool:
    user = _USER.get(f)
    if user is None:
        path = f if f.startswith("<") else os.path.realpath(f)
        user = _USER[f] = not (f.startswith("<frozen") or path.startswith(_LIBRARY_DIRS)
                               or f.startswith(_LIBRARY_DIRS))
    return user


_STDLIB_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_STDLIB: dict = {}    # file name -> whether it is the standard library's (not its site-packages)
_SOURCE_READERS = ("linecache.py", "tokenize.py")    # a warning or traceback reading source lines


def opened_by_user(frame) -> bool:
    """Whether a file opened from ``frame`` is opened for the user's code: the first frame
    outside the standard library (``pathlib``, ``json``... called by it) is user code."""
    while frame is not None:
        f = frame.f_code.co_filename
        std = _STDLIB.get(f)
        if std is None:
            path = os.path.realpath(f) if not f.startswith("<") else f
            std = _STDLIB[f] = f.startswith("<frozen") or (
                path.startswith(_STDLIB_DIRS) and f"{os.sep}site-packages{os.sep}" not in path)
        if not std:
            return _user_file(f)
        if os.path.basename(f) in _SOURCE_READERS:
            return False
        frame = frame.f_back
    return False


def _absent_globals(code, g):
    """The global names ``code`` (and the code nested in it) loads that ``g`` and the builtins
    do not define."""
    builtins = g.get("__builtins__", {})
    builtins = builtins if isinstance(builtins, dict) else vars(builtins)
    out = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval not in g and ins.argval not in builtins:
            out.add(ins.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _absent_globals(c, g)
    return out


_PARAM_READS: dict = {}     # code -> the attribute names it reads through its parameters
_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def parameter_reads(f) -> frozenset:
    """The attribute names ``f``'s code reads through its parameters (``cfg.k``,
    ``holder.inner.k``: ``inner`` and ``k``), its nested functions' and comprehensions' reads
    of them included; a method's first parameter (``self``, ``cls``) is left out. NOTE
    [attributes read by helpers]."""
    code = f.__code__
    out = _PARAM_READS.get(code)
    if out is None:
        n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        params = set(code.co_varnames[:n])
        qual = f.__qualname__.split(".")
        if len(qual) > 1 and qual[-2] != "<locals>" and code.co_argcount:    # a method
            params.discard(code.co_varnames[0])
        out = _PARAM_READS[code] = frozenset(_reads_through(code, params, set()))
    return out


def _reads_through(code, params, out):
    ins = list(dis.get_instructions(code))
    for i, ins_i in enumerate(ins):
        if ins_i.opname in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE") and ins_i.argval in params:
            j = i + 1
            while j < len(ins) and ins[j].opname in _ATTR_OPS:
                out.add(ins[j].argval)
                j += 1
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            # a nested function or comprehension sees the parameters as free variables (or as
            # its own ``.0`` argument: an iterable, whose items' reads are not followed)
            _reads_through(c, params & set(c.co_freevars), out)
    return out


def _getter_names(f, names):
    """The attribute (method) names the ``operator.attrgetter`` (``methodcaller``) objects ``f``
    holds in its closure or names among its globals read. NOTE: ``get_k = operator.attrgetter("k")`` then
    ``x * get_k(cfg)``: ``k`` is a string the getter holds, no name the code loads, so
    ``cfg.k`` was not guarded and a change between calls ran the traced value (round-36's
    adversarial tests)."""
    values = []
    for cell in f.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:          # not yet assigned
            pass
    g = f.__globals__
    values += [g[n] for n in names if n in g]
    out = set()
    for v in values:
        if type(v) is operator.attrgetter:
            for a in v.__reduce__()[1]:
                out.update(a.split("."))
        elif type(v) is operator.methodcaller:
            # ``operator.methodcaller("scale", ...)``: the method's name (whose code
            # ``_object_names`` then follows), first of its reduce arguments or of its partial's
            fn, args = v.__reduce__()[:2]
            name = fn.args[0] if isinstance(fn, functools.partial) else args[0]
            if type(name) is str:
                out.add(name)
    return out


_DYNAMIC_NAMES = frozenset({"hasattr", "getattr", "attrgetter", "methodcaller"})
_REACH_ALL = _DYNAMIC_NAMES | {"vars", "__dict__"}     # code that may call a method by a computed name


_COUNTER_OPS = frozenset({"+=", "-="})
_APPEND_LOADS = frozenset({"LOAD_DEREF", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_CLASSDEREF"})
_APPEND_METHODS = frozenset({"append", "extend"})
_DEREF_USES = frozenset({"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLASSDEREF"})
_COUNTER_USES: dict = {}    # code -> _CounterUses


class _CounterUses:
    """How one code object (not the code nested in it) uses attribute names without reading
    their values (NOTE [Python counters] in pystate.py)."""

    __slots__ = ("counters", "unread", "stored", "stores", "scalar_counters", "scalar_other", "appended",
                 "append_other")

    def __init__(self, code):
        ins = list(dis.get_instructions(code))
        matched, uses, stores = set(), {}, set()
        for i, x in enumerate(ins):
            if x.opcode in dis.hasname:
                uses.setdefault(x.argval, []).append(i)
            if x.opname == "COPY" and x.arg == 1 and i + 5 < len(ins):
                a, c, op, sw, st = ins[i + 1:i + 6]
                if (a.opname == "LOAD_ATTR" and c.opname == "LOAD_CONST" and type(c.argval) is int
                        and op.opname == "BINARY_OP" and op.argrepr in _COUNTER_OPS and sw.opname == "SWAP"
                        and sw.arg == 2 and st.opname == "STORE_ATTR" and st.argval == a.argval):
                    matched.update((i + 1, i + 5))
                    stores.add(st.offset)
        strings = {c for c in code.co_consts if type(c) is str}
        plain = {i for i, x in enumerate(ins) if x.opname == "STORE_ATTR" and i not in matched}
        appended = set()
        # ``hist.append(v)`` / ``self.losses.extend(vs)``: the list named only to grow it
        # (NOTE [Python appends] in pystate.py); the method's own name is a use of neither
        grown = set()
        for i, x in enumerate(ins):
            if x.opname not in _APPEND_LOADS or x.argrepr.startswith("NULL"):
                continue
            # ``name.append``, or ``name["k"].append`` (a dict of lists: its lists' places)
            k = 3 if [y.opname for y in ins[i + 1:i + 3]] == ["LOAD_CONST", "BINARY_SUBSCR"] else 1
            if i + k < len(ins) and ins[i + k].opname in ("LOAD_METHOD", "LOAD_ATTR") \
                    and ins[i + k].argval in _APPEND_METHODS:
                grown.update(range(i, i + k + 1))
                appended.add(x.argval)
        for start, store in _list_extends(ins):       # ``hist += [v]``: an extend too
            grown.update((start, store))
            appended.add(ins[store].argval)
        self.appended = frozenset(appended - strings)
        init = code.co_name == "__init__"
        self.append_other = frozenset(
            x.argval for i, x in enumerate(ins) if i not in grown and (x.opcode in dis.hasname or x.opname in _DEREF_USES)
            and not (init and i in plain)) | (self.appended & strings)
        names = [(n, at) for n, at in uses.items() if n not in strings]
        # used only as ``obj.name += k``; only so or stored (``obj.name = v``: nothing read)
        self.counters = frozenset(n for n, at in names if all(j in matched for j in at))
        self.unread = frozenset(n for n, at in names if all(j in matched or j in plain for j in at))
        # stored plainly, where that may run in a step (an ``__init__`` runs when the object is made)
        self.stored = frozenset() if code.co_name == "__init__" else frozenset(
            n for n, at in uses.items() if any(j in plain for j in at))
        self.stores = frozenset(stores)      # the offsets of the counters' STORE_ATTRs
        # closure cells and globals: ``nonlocal n; n += k`` / ``global n; n += k`` (a global's
        # name used any other way here, as a global or an attribute, is another use)
        bumped, other = set(), set()
        skip = set()
        for i, x in enumerate(ins[:-3]):
            c, op, st = ins[i + 1:i + 4]
            if ((x.opname, st.opname) in (("LOAD_DEREF", "STORE_DEREF"), ("LOAD_GLOBAL", "STORE_GLOBAL"))
                    and x.argval == st.argval and not x.argrepr.startswith("NULL") and c.opname == "LOAD_CONST"
                    and type(c.argval) is int and op.opname == "BINARY_OP" and op.argrepr in _COUNTER_OPS):
                bumped.add(x.argval)
                skip.update((i, i + 3))
        for i, x in enumerate(ins):
            if i not in skip and (x.opcode in dis.hasname or x.opname in _DEREF_USES):
                other.add(x.argval)
        self.scalar_counters = frozenset(bumped - strings)
        self.scalar_other = frozenset(other | (bumped & strings))


_AUG_STORES = {"STORE_GLOBAL": "LOAD_GLOBAL", "STORE_DEREF": "LOAD_DEREF", "STORE_ATTR": "LOAD_ATTR"}
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _list_extends(ins):
    """``(load, store)`` positions in ``ins`` of each ``name += <expression>`` on a global, a
    closure cell or an attribute (``global hist; hist += [v]``, ``self.losses += [loss.item()]``)
    whose right-hand side does not name it: a list grown there is extended (``list.__iadd__``
    returns the list itself, stored back), the same growth as ``name.extend(...)`` (NOTE [Python
    appends] in pystate.py; test_list.py's global-list tests, round 36). The right-hand side is
    found by stack effects back from the ``+=`` (no jumps in it); a shape not matched adds
    nothing, so the name stays an ordinary use."""
    out = []
    for k, st in enumerate(ins):
        load_op = _AUG_STORES.get(st.opname)
        if load_op is None:
            continue
        op_at = k - 2 if st.opname == "STORE_ATTR" else k - 1
        if op_at < 1 or ins[op_at].opname != "BINARY_OP" or ins[op_at].argrepr != "+=":
            continue
        if st.opname == "STORE_ATTR" and (ins[k - 1].opname != "SWAP" or ins[k - 1].arg != 2):
            continue
        depth, m = 0, op_at - 1
        while m > 0:
            x = ins[m]
            if x.opcode in _JUMPS:
                m = 0
                break
            depth += dis.stack_effect(x.opcode, x.arg if x.opcode >= dis.HAVE_ARGUMENT else None)
            if depth == 1:
                break
            m -= 1
        if m < 1 or depth != 1:
            continue
        load = ins[m - 1]
        if load.opname != load_op or load.argval != st.argval or load.argrepr.startswith("NULL"):
            continue
        if st.opname == "STORE_ATTR" and (m < 2 or ins[m - 2].opname != "COPY" or ins[m - 2].arg != 1):
            continue
        if any(x.argval == st.argval and (x.opcode in dis.hasname or x.opname in _DEREF_USES) for x in ins[m:op_at]):
            continue
        out.append((m - 1, k))
    return out


def counter_uses(code) -> _CounterUses:
    """``code``'s ``_CounterUses`` (CPython 3.11's ``COPY 1; LOAD_ATTR name; LOAD_CONST k;
    BINARY_OP +=/-=; SWAP 2; STORE_ATTR name`` with ``k`` an int literal; another bytecode
    matches nothing, so nothing is left out there)."""
    out = _COUNTER_USES.get(code)
    if out is None:
        out = _COUNTER_USES[code] = _CounterUses(code)
    return out
