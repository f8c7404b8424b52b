"""One registration for Tensor methods and ``tracegrad.<name>`` functions (DESIGN 2, L4; issue 7).

Each op family declares, where a function is defined, what it becomes:

    @method("sub", "subtract", function=True)   # Tensor.sub, Tensor.subtract, tracegrad.sub, tracegrad.subtract
    def sub(self, other, *, alpha=None): ...

    @method()                                   # Tensor.<fn.__name__> only (names default to fn.__name__)
    @function("cat", "concat", "concatenate")   # tracegrad.<name> only
    prop("T")(lambda self: ...)                 # a Tensor property
    method("__add__", "__radd__")(lambda s, o: add(s, o))   # operators the same way

``tensor_methods`` imports every family, so that their declarations run, and calls
``install(Tensor)`` once; ``functions`` is the ``tracegrad.<name>`` namespace, read from
``FUNCTIONS``. The registered object itself goes on the class (a plain function or a
``property``): no wrapper runs per call, except on functions with a ``dim``/``keepdim``
parameter, which also take torch's NumPy names ``axis``/``keepdims`` (``numpy_names.py``).
A name registered twice with different objects raises.
"""
from __future__ import annotations

from .argcheck import guard_all
from .numpy_names import add_numpy_names

METHODS: dict = {}     # Tensor.<name> -> function, or property
FUNCTIONS: dict = {}   # tracegrad.<name> -> function


def _put(table, names, obj, what):
    if "<locals>" in getattr(obj, "__qualname__", "") and names:
        # a function made by a family's factory (``_unary.<locals>.f``): Python's own TypeError
        # for a wrong argument count names its qualname, which torch's reads as ``sin() takes 1
        # positional argument but 2 were given``
        obj.__qualname__ = names[0]
    for name in names:
        old = table.setdefault(name, obj)
        if old is not obj:
            raise RuntimeError(f"tracegrad: {what}{name} is registered twice ({old!r} and {obj!r})")


def method(*names, function=False):
    """Register the decorated function as ``Tensor.<name>`` for each of ``names`` (default: its
    ``__name__``); with ``function=True`` also as ``tracegrad.<name>``. Returns it unchanged."""
    def register(fn):
        ns = names or (fn.__name__,)
        _put(METHODS, ns, fn, "Tensor.")
        if function:
            _put(FUNCTIONS, ns, fn, "tracegrad.")
        return fn
    return register


def int_list_method(fn=None, name=None, arg="dim", none=True):
    """Register ``Tensor.<name>`` as ``fn`` that also takes its one ``int[]`` argument as separate
    ints: torch's parser reads ``x.squeeze(0, 2)`` as ``x.squeeze((0, 2))`` for a method whose only
    argument is an int list (``count_nonzero``, ``broadcast_to``, ``hsplit``...), while the
    function form keeps one argument (``torch.squeeze(x, 0, 2)`` is its TypeError). ``none=False``:
    an explicit None for it is the parser's TypeError too (``x.squeeze(None)``). Returns ``fn``
    (used bare, ``@int_list_method``, or with arguments, ``@int_list_method(none=False)``)."""
    if fn is None:
        return lambda f: int_list_method(f, name, arg, none)
    api = name or fn.__name__

    def method_form(self, *args, **kwargs):
        if not none and (args[:1] == (None,) or arg in kwargs and kwargs[arg] is None):
            raise TypeError(f"{api}() received an invalid combination of arguments - got {arg}=None: pass an int or "
                            f"a tuple of ints, or no {arg} at all")
        if len(args) > 1:
            if arg in kwargs:
                raise TypeError(f"{api}() got multiple values for argument '{arg}'")
            args = (tuple(args),)
        return fn(self, *args, **kwargs)
    method_form.__name__ = method_form.__qualname__ = api
    method_form.__doc__ = fn.__doc__
    method_form.__module__ = fn.__module__
    _put(METHODS, (api,), method_form, "Tensor.")
    return fn


def inplace_operator(name, inplace):
    """Register ``Tensor.<name>`` (``__iadd__``, ``__imod__``...) as the augmented assignment
    ``x op= o``: the method named ``inplace`` (``add_``), looked up on the tensor when called. A
    TypeError (an operand that is no Tensor or number) becomes NotImplemented, as torch's
    operators: the direct call ``x.__iadd__('a')`` returns it, and ``x += 'a'`` then raises
    Python's TypeError from the out-of-place operator."""
    def op(s, o):
        try:
            return getattr(s, inplace)(o)
        except TypeError:
            return NotImplemented
    op.__name__ = name
    _put(METHODS, (name,), op, "Tensor.")
    return op


def function(*names):
    """Register the decorated function as ``tracegrad.<name>`` only (torch's free functions with
    no Tensor method of the same meaning: ``cat``, ``einsum``, ``where(condition, input, other)``)."""
    def register(fn):
        _put(FUNCTIONS, names or (fn.__name__,), fn, "tracegrad.")
        return fn
    return register


def prop(*names, setter=None):
    """Register the decorated getter as the property ``Tensor.<name>`` (with ``setter`` when
    given: ``t.<name> = v`` calls ``setter(t, v)``). Returns the getter."""
    def register(getter):
        _put(METHODS, names or (getter.__name__,), property(getter, setter, doc=getter.__doc__), "Tensor.")
        return getter
    return register


def install(cls):
    """Put every registered method, property and operator on ``cls`` (``Tensor``), once, at import."""
    add_numpy_names(METHODS)
    guard_all(METHODS, methods=True)   # torch's TypeError for an argument of the wrong kind
    for name, obj in METHODS.items():
        setattr(cls, name, obj)
