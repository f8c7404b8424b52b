"""The Python values a compiled function reads directly: its closure cells and the globals
its code names. A number, string or bool among them is baked into the program when traced, so
it is guarded (a new value traces again); a list, dict or set it changes while tracing (an
``append``, a counter) is a side effect the program would not repeat: a graph break.

Only the function's own code is inspected (not the functions it calls): modules' and
optimizers' Python attributes are guarded elsewhere (training flags, optimizer options).
"""
from __future__ import annotations

_SCALARS = (int, float, bool, str, complex, type(None))
_CONTAINERS = (list, dict, set)


def python_refs(fn):
    """(name, getter) for the closure cells and globals ``fn``'s code reads."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    refs = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        refs.append((name, cell, None))
    g = getattr(fn, "__globals__", {})
    for name in code.co_names:
        if name in g:
            refs.append((name, None, g))
    return tuple(refs)


def _value(cell, g, name):
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:          # not yet assigned
            return None
    return g.get(name)


def scalar_signature(refs):
    """The numbers/strings/bools among ``refs``, also inside short lists/tuples (a new value
    means a new program)."""
    out = []
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if type(v) in _SCALARS:
            out.append((name, v))
        elif type(v) in (list, tuple) and len(v) <= 8 and all(type(e) in _SCALARS for e in v):
            out.append((name, tuple(v)))
    return tuple(out)


def snapshot(refs):
    """What ``restore`` needs to undo a trace's changes to these variables."""
    snap = []
    for name, cell, g in refs:
        v = _value(cell, g, name)
        copy = list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else \
            set(v) if isinstance(v, set) else None
        snap.append((name, cell, g, v, copy))
    return snap


def restore(snap):
    """Undo what an abandoned trace did to the function's closure/global variables (rebinding,
    appends, updates), so no traced value is left behind in them."""
    for name, cell, g, v, copy in snap:
        if cell is not None:
            try:
                if cell.cell_contents is not v:
                    cell.cell_contents = v
            except ValueError:
                pass
        elif g.get(name) is not v:
            g[name] = v
        if isinstance(v, list):
            v[:] = copy
        elif isinstance(v, (dict, set)):
            v.clear()
            v.update(copy)


def effects_signature(refs):
    """Everything a trace could change: scalar values, containers' sizes, bindings."""
    out = []
    for name, cell, g in refs:
        v = _value(cell, g, name)
        if type(v) in _SCALARS:
            out.append((name, v))
        elif type(v) is list and len(v) <= 8 and all(type(e) in _SCALARS for e in v):
            out.append((name, id(v), tuple(v)))      # a counter kept in a one-element list
        elif isinstance(v, _CONTAINERS):
            out.append((name, id(v), len(v)))
        else:
            out.append((name, id(v)))
    return tuple(out)


def changed(refs, before):
    """Name of the first closure/global variable whose value changed since ``before``."""
    now = effects_signature(refs)
    for a, b in zip(before, now):
        if a != b:
            return a[0]
    return None
