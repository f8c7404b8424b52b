"""Operator schemas for ``tracegrad.library``: the typed signature torch's dispatcher gives every
custom operator, here so that tracegrad refuses the same calls torch does.

NOTE [custom operator schemas]: torch turns a ``custom_op``'s annotations into a schema string
(``infer_schema``: ``(Tensor x, SymInt n=1) -> Tensor``) and parses it, as it parses the string
of ``Library.define``/``custom_op(schema=...)``; every call then goes through the dispatcher,
which binds the Python arguments to that schema and converts each one to the C++ type (a
RuntimeError "Expected a value of type 'int' for argument 'n' but instead found type 'float'"
where the conversion fails), and converts the kernel's result back (RuntimeError "Unable to cast
3 to Tensor"). tracegrad has no dispatcher and runs the Python body directly, so without these
checks a wrong argument reached the body (an AttributeError from inside it, or a silently
different result), and an unsupported annotation or a malformed schema string was accepted.
This module holds the three steps -- ``infer`` (annotations), ``parse`` (schema strings) and
``Schema.bind``/``Schema.check_result`` -- written from torch's documented behaviour; the accepted
values follow what torch 2.13's converters take (a one-element tensor for an ``int``, anything
for a ``bool``, a str or bytes for a ``str``...), no value is converted.
"""
from __future__ import annotations

import collections.abc
import inspect
import numbers
import re
import types
import typing

import numpy as np

import tracegrad
from tracegrad import Tensor

# the type names a schema string may use (torch's parser knows more: these are the ones an
# operator written in Python can be given)
_BASE_TYPES = {"Tensor", "int", "SymInt", "float", "SymFloat", "bool", "SymBool", "str", "Scalar", "ScalarType",
               "Device", "Layout", "MemoryFormat", "Generator", "Storage", "Stream", "Dimname", "QScheme",
               "complex", "number", "Any", "t", "DeviceIndex"}
# how torch's argument errors name a type
_SHOWN = {"SymInt": "int", "SymFloat": "float", "SymBool": "bool", "Scalar": "number", "number": "number",
          "ScalarType": "int", "DeviceIndex": "int"}
_TYPE_HINT = ("unknown type specifier. Common valid schema types include Tensor, SymInt, int, float, bool, "
              "Scalar")


class Type:
    """One schema type: a base name, a list of ``inner`` (``size`` elements, or None for any
    number), or an optional ``inner``; ``alias`` the text of an alias annotation (``a!`` in
    ``Tensor(a!)``; ``!`` marks a tensor the operator writes)."""

    def __init__(self, kind, name=None, inner=None, size=None, alias=None):
        self.kind, self.name, self.inner, self.size, self.alias = kind, name, inner, size, alias

    def base_type(self):
        t = self
        while t.kind != "base":
            t = t.inner
        return t

    def __str__(self):
        if self.kind == "list":
            return f"{self.inner}[{'' if self.size is None else self.size}]"
        if self.kind == "opt":
            return f"{self.inner}?"
        return self.name + (f"({self.alias})" if self.alias else "")

    def shown(self):
        """The type as torch's argument errors name it (``List[int]``, ``Optional[Tensor]``)."""
        if self.kind == "list":
            return f"List[{self.inner.shown()}]"
        if self.kind == "opt":
            return f"Optional[{self.inner.shown()}]"
        return _SHOWN.get(self.name, self.name)

    def base(self):
        return self.base_type().name

    def accepts(self, v):
        """Whether torch's converter for this type takes the Python value ``v``."""
        if self.kind == "opt":
            return v is None or self.inner.accepts(v)
        if self.kind == "list":
            if isinstance(v, (list, tuple)):
                # a Tensor[] element must be a tensor (None only where the element is Tensor?)
                plain = self.inner.kind == "base" and self.inner.name == "Tensor"
                return all(isinstance(e, Tensor) if plain else self.inner.accepts(e) for e in v)
            if self.inner.kind == "base" and self.inner.name in ("int", "SymInt"):
                # an int list takes a tensor of ints, and a fixed-size one (int[2]) a single int
                return isinstance(v, Tensor) or (self.size is not None and _is_int(v))
            return False
        return _accepts_base(self.name, v)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and -2 ** 63 <= int(v) < 2 ** 63


def _accepts_base(name, v):
    if name == "Tensor":
        return v is None or isinstance(v, Tensor)    # None is torch's undefined tensor: the body gets it
    if name in ("int", "SymInt", "DeviceIndex"):
        return _is_int(v) or (isinstance(v, Tensor) and v.numel() == 1)
    if name in ("float", "SymFloat"):
        return (isinstance(v, numbers.Real) or (isinstance(v, Tensor) and v.numel() == 1))
    if name in ("Scalar", "number", "complex"):
        return isinstance(v, numbers.Number)
    if name == "str":
        return isinstance(v, (str, bytes))
    if name == "ScalarType":
        return isinstance(v, tracegrad.dtype) or (_is_int(v) and not isinstance(v, bool))
    if name == "Device":
        if isinstance(v, str):
            tracegrad.device(v)     # (its own RuntimeError for a malformed device string)
            return True
        return isinstance(v, tracegrad.device)
    return True                     # bool takes any value's truth, as torch's converter


class Arg:
    """One parameter of a schema."""

    def __init__(self, name, type, default=inspect.Parameter.empty, kwarg_only=False):
        self.name, self.type, self.default, self.kwarg_only = name, type, default, kwarg_only

    @property
    def has_default(self):
        return self.default is not inspect.Parameter.empty

    def __str__(self):
        s = f"{self.type} {self.name}"
        if self.has_default:
            d = self.default
            if isinstance(d, (str, tracegrad.device)):
                s += f'="{d}"'
            elif isinstance(d, tracegrad.dtype):
                s += "=" + str(d).replace("tracegrad.", "")
            else:
                s += f"={d!r}" if isinstance(d, float) else f"={d}"
        return s


class Schema:
    """A parsed or inferred operator schema: ``name`` (and ``overload``), ``args`` and
    ``returns`` (a list of Types; empty for an operator returning None)."""

    def __init__(self, name, overload, args, returns, single_return):
        self.name, self.overload, self.args, self.returns = name, overload, args, returns
        self.single_return = single_return     # ``-> Tensor`` rather than ``-> (Tensor)``

    def declaration(self, qualname):
        """The schema as torch prints it: ``ns::name(Tensor x) -> Tensor`` (``qualname`` '':
        the schema without a name, as ``infer_schema`` gives it)."""
        parts, star = [], False
        for a in self.args:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        name = qualname + (f".{self.overload}" if self.overload and qualname else "")
        rets = (str(self.returns[0]) if self.single_return
                else "(" + ", ".join(str(r) for r in self.returns) + ")")
        return f"{name}({', '.join(parts)}) -> {rets}"

    def bind(self, qualname, args, kwargs):
        """``args``/``kwargs`` as torch's dispatcher binds them to this schema: one value per
        parameter, in order (defaults filled in). RuntimeError, as torch's, for too many
        arguments, a keyword-only one given by position, a missing or unknown one, or a value
        the parameter's type does not take."""
        def decl():     # (built for an error only: binding runs on every call)
            return self.declaration(qualname)
        n_pos = sum(not a.kwarg_only for a in self.args)
        if len(args) + len(kwargs) > len(self.args):
            raise RuntimeError(f"{qualname}() expected at most {len(self.args)} argument(s) but received "
                               f"{len(args) + len(kwargs)} argument(s). Declaration: {decl()}")
        if len(args) > n_pos:
            raise RuntimeError(f"{qualname}() takes {n_pos} positional argument(s) but {len(args)} was/were given.  "
                               f"Declaration: {decl()}")
        kwargs, out = dict(kwargs), []
        for i, a in enumerate(self.args):
            if i < len(args):
                if a.name in kwargs:
                    raise RuntimeError(f"{qualname}(): argument '{a.name}' given by name and by position "
                                       f"({i}). Declaration: {decl()}")
                v = args[i]
            elif a.name in kwargs:
                v = kwargs.pop(a.name)
            elif a.has_default:
                out.append(a.default)
                continue
            else:
                raise RuntimeError(f"{qualname}() is missing value for argument '{a.name}'. Declaration: {decl()}")
            if not a.type.accepts(v):
                raise RuntimeError(f"{qualname}() Expected a value of type '{a.type.shown()}' for argument "
                                   f"'{a.name}' but instead found type '{type(v).__name__}'.\nPosition: {i}\n"
                                   f"Value: {v!r}\nDeclaration: {decl()}\nCast error details: pass a value of "
                                   f"that type (the operator's schema, inferred from its annotations or given, "
                                   f"fixes it)")
            out.append(v)
        if kwargs:
            raise RuntimeError(f"Unknown keyword argument '{next(iter(kwargs))}' for operator '{qualname}'. "
                               f"Schema: {decl()}")
        return tuple(out)

    def split(self, values):
        """Bound ``values`` as the ``(args, kwargs)`` to call a Python body with (keyword-only
        parameters by name)."""
        pos = tuple(v for a, v in zip(self.args, values) if not a.kwarg_only)
        kw = {a.name: v for a, v in zip(self.args, values) if a.kwarg_only}
        return pos, kw

    def check_result(self, qualname, out):
        """RuntimeError (TypeError for a non-sequence where several results are due), as torch's
        conversion of a kernel's result, for a result that does not fit the schema's returns."""
        if not self.returns:
            if out is not None:
                raise RuntimeError(f"Expected the kernel of {qualname} to return None but it returned something "
                                   f"else instead ({type(out).__name__}); its schema returns nothing")
            return
        if self.single_return:
            _check_one(qualname, self.returns[0], out)
            return
        if not isinstance(out, (tuple, list)) or len(out) != len(self.returns):
            # (torch unpacks a one-element tuple before its check: the TypeError names the element)
            shown = out[0] if isinstance(out, (tuple, list)) and len(out) == 1 else out
            raise TypeError(f"Object of type '{type(shown).__name__}' is not an instance of 'sequence': {qualname} "
                            f"returns {len(self.returns)} values ({self.declaration(qualname)}); return a tuple of "
                            "them")
        for t, v in zip(self.returns, out):
            _check_one(qualname, t, v)


def _check_one(qualname, t, v):
    name = t.base()
    if t.kind == "list":
        ok = isinstance(v, (list, tuple)) and all(_accepts_result(name, e) for e in v)
    else:
        ok = _accepts_result(name, v)
    if not ok:
        raise RuntimeError(f"Unable to cast {v!r} to {t.shown()}: {qualname}'s schema returns {t}; return a value "
                           "of that type")


def _accepts_result(name, v):
    if name == "Tensor":
        return v is None or isinstance(v, Tensor)    # torch's conversion lets None through
    if name in ("int", "SymInt"):
        return _is_int(v) or isinstance(v, Tensor)
    return _accepts_base(name, v)


# ---- parsing schema strings -------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<arrow>->)|(?P<ns>::)|(?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
                    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<string>'[^']*'|\"[^\"]*\")|(?P<punct>[()\[\],?!*=.|]))")


class _Parser:
    def __init__(self, text):
        self.text, self.toks, pos = text, [], 0
        while True:
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                rest = text[pos:].lstrip()
                if rest:
                    self.toks.append(("char", rest[0], len(text) - len(rest)))
                    pos = len(text) - len(rest) + 1
                    continue
                break
            kind = m.lastgroup
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "", len(self.text))

    def fail(self, want, at=None):
        kind, val, pos = at or self.peek()
        found = val if kind in ("punct", "char", "arrow", "ns") else kind
        raise RuntimeError(f"expected {want} but found '{found}' here:\n{self.text}\n{' ' * pos}~ <--- HERE\n"
                           "(a schema reads 'name(Tensor x, int n=1) -> Tensor')")

    def take(self, kind, val=None, want=None):
        k, v, _ = self.peek()
        if k != kind or (val is not None and v != val):
            self.fail(want or val or kind)
        self.i += 1
        return v

    def at(self, kind, val=None):
        k, v, _ = self.peek()
        return k == kind and (val is None or v == val)

    def type_(self):
        tok = self.peek()
        name = self.take("ident")
        if name not in _BASE_TYPES:
            raise RuntimeError(f"\n{_TYPE_HINT}:\n{self.text}\n{' ' * tok[2]}{'~' * len(name)} <--- HERE\n")
        t = Type("base", name)
        if self.at("punct", "("):          # an alias annotation: Tensor(a!)
            self.i += 1
            parts = []
            while not self.at("punct", ")"):
                if self.at("eof"):
                    self.fail(")")
                parts.append(self.peek()[1])
                self.i += 1
            self.i += 1
            t.alias = "".join(parts)
        while True:
            if self.at("punct", "["):
                self.i += 1
                size = int(self.take("number")) if self.at("number") else None
                self.take("punct", "]")
                t = Type("list", inner=t, size=size)
            elif self.at("punct", "?"):
                self.i += 1
                t = Type("opt", inner=t)
            else:
                return t

    def default(self, t):
        k, v, _ = self.peek()
        if k == "punct" and v == "[" and t.kind in ("list", "opt"):
            self.i += 1
            items = []
            while not self.at("punct", "]"):
                items.append(_literal(self.take("number")))
                if not self.at("punct", "]"):
                    self.take("punct", ",")
            self.i += 1
            return items
        if k in ("number", "string"):
            self.i += 1
            return _literal(v) if k == "number" else v[1:-1]
        if k == "ident":
            self.i += 1
            return {"None": None, "True": True, "False": False}.get(v, v)
        self.fail("number")

    def schema(self, name_required=True):
        ns = None
        name = self.take("ident")
        if self.at("ns"):
            self.i += 1
            ns, name = name, self.take("ident")
        overload = ""
        if self.at("punct", "."):
            self.i += 1
            overload = self.take("ident")
        if self.at("eof"):
            raise RuntimeError(f"Tried to parse a function schema but only the operator name was given: "
                               f"{self.text!r}; add its arguments and returns, e.g. '(Tensor x) -> Tensor'")
        self.take("punct", "(")
        args, kwonly = [], False
        while not self.at("punct", ")"):
            if args or kwonly:
                self.take("punct", ",")
            if self.at("punct", "*"):
                self.i += 1
                kwonly = True
                continue
            t = self.type_()
            a = Arg(self.take("ident"), t, kwarg_only=kwonly)
            if self.at("punct", "="):
                self.i += 1
                a.default = self.default(t)
            args.append(a)
        self.i += 1
        self.take("arrow", want="arrow")
        if self.at("punct", "("):
            self.i += 1
            rets = []
            while not self.at("punct", ")"):
                if rets:
                    self.take("punct", ",")
                rets.append(self.type_())
                if self.at("ident"):
                    self.i += 1
            self.i += 1
            return ns, Schema(name, overload, args, rets, False)
        return ns, Schema(name, overload, args, [self.type_()], True)


def _literal(text):
    return float(text) if any(c in text for c in ".eE") else int(text)


def parse(text):
    """``(namespace or None, Schema)`` of the schema string ``text`` ('name(Tensor x) -> Tensor',
    'ns::name.overload(...)'); RuntimeError, as torch's parser, for a malformed one or an
    unknown type."""
    return _Parser(text).schema()


def check_name(opname):
    """RuntimeError, as torch's schema parser, for an operator name that is not an identifier
    (with an optional ``.overload``)."""
    p = _Parser(opname)
    p.take("ident")
    if p.at("punct", "."):
        p.i += 1
        p.take("ident")
    if not p.at("eof"):
        p.fail("eof")


# ---- inferring a schema from annotations -------------------------------------------------------

_SCALAR = {int, float, bool}


def _union_args(ann):
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return typing.get_args(ann)
    return None


def _elem(ann):
    """A list/Sequence annotation's element (None for anything else)."""
    if typing.get_origin(ann) in (list, collections.abc.Sequence) and len(typing.get_args(ann)) == 1:
        return typing.get_args(ann)[0]
    return None


def _scalar_name(ann):
    if ann is Tensor:
        return "Tensor"
    if ann in (int, float, bool, str):
        return {int: "SymInt", float: "float", bool: "bool", str: "str"}[ann]
    if ann is tracegrad.dtype:
        return "ScalarType"
    if ann is tracegrad.device:
        return "Device"
    u = _union_args(ann)
    if u is not None and set(u) == _SCALAR:
        return "Scalar"
    return None


def param_type(ann):
    """The schema type of a parameter annotation (None where torch's ``infer_schema`` has none)."""
    u = _union_args(ann)
    if u is not None and type(None) in u:
        rest = tuple(a for a in u if a is not type(None))
        if set(rest) == _SCALAR:
            return Type("opt", inner=Type("base", "Scalar"))
        if len(rest) != 1:
            return None
        inner = param_type(rest[0])
        if inner is None or (inner.kind == "list" and inner.base() in ("Tensor", "Scalar")):
            return None          # torch has no Optional[List[Tensor]]
        return Type("opt", inner=inner)
    e = _elem(ann)
    if e is not None:
        eu = _union_args(e)
        if eu is not None and set(eu) == {Tensor, type(None)}:
            return Type("list", inner=Type("opt", inner=Type("base", "Tensor")))
        name = _scalar_name(e)
        if name in ("Tensor", "SymInt", "float", "bool", "Scalar"):
            return Type("list", inner=Type("base", name))
        return None
    name = _scalar_name(ann)
    return None if name is None else Type("base", name)


def _return_types(ann):
    """The schema's returns for a return annotation: ``(types, single)``, or None where torch has
    no such return type."""
    if ann is None or ann is type(None):
        return [], False
    if typing.get_origin(ann) is tuple:
        types_ = [_one_return(a) for a in typing.get_args(ann)]
        return (None if any(t is None for t in types_) else (types_, False))
    t = _one_return(ann)
    return None if t is None else ([t], True)


def _one_return(ann):
    e = _elem(ann) if typing.get_origin(ann) is list else None
    if e is Tensor:
        return Type("list", inner=Type("base", "Tensor"))
    name = _scalar_name(ann)
    return Type("base", name) if name in ("Tensor", "SymInt", "float", "bool", "Scalar") else None


_DEFAULT_KINDS = (type(None), bool, int, float, str, tracegrad.dtype, tracegrad.device)


def infer(fn, mutates_args, opname):
    """The Schema torch's ``infer_schema`` gives ``fn``'s annotations (a str annotation is
    evaluated in ``fn``'s globals). ValueError, as torch's, for a parameter or return without an
    annotation or with one no schema type has, ``*args``/``**kwargs``, an unsupported default,
    or a mutated parameter that is no Tensor."""
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (NameError, AttributeError, SyntaxError) as e:
        raise ValueError(f"infer_schema(func): Unsupported type annotation in {getattr(fn, '__name__', fn)}: it is "
                         f"not a type ({e}). If you are using 'from __future__ import annotations', make sure "
                         "every annotation names a type the function's module can see") from None
    where = f"Got func with signature {sig})"
    args, kwonly = [], False
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameter {p.name} of kind {p.kind} is not supported; give the "
                             f"operator named parameters. {where}")
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation. {where}")
        t = param_type(p.annotation)
        if t is None:
            extra = (" We do not support Tuple inputs in schema; use a List instead (list[int])."
                     if typing.get_origin(p.annotation) is tuple else "")
            raise ValueError(f"infer_schema(func): Parameter {p.name} has unsupported type {p.annotation}.{extra} "
                             "The valid types are Tensor, int, float, bool, str, dtype, device, Union[int, float, "
                             f"bool], their Optional and the Sequence of Tensor, int, float or bool. {where}")
        if p.default is not inspect.Parameter.empty and not isinstance(p.default, _DEFAULT_KINDS):
            raise ValueError(f"infer_schema(func): Parameter {p.name} has an unsupported default value type "
                             f"{type(p.default)}; use None, a number, a bool, a str, a dtype or a device. {where}")
        if mutates_args != "unknown" and p.name in mutates_args:
            if t.base() != "Tensor":
                raise ValueError(f"infer_schema(func): Parameter {p.name} is in mutable_args but only Tensors or "
                                 f"collections of Tensors can be mutated {where}")
        if mutates_args == "unknown" or p.name in mutates_args:
            if t.base() == "Tensor":     # (torch names each written tensor's alias set by position)
                t.base_type().alias = f"a{len(args)}!"
        kwonly = kwonly or p.kind == p.KEYWORD_ONLY
        args.append(Arg(p.name, t, p.default, kwonly))
    if sig.return_annotation is inspect.Signature.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. {where}")
    rets = _return_types(sig.return_annotation)
    if rets is None:
        raise ValueError(f"infer_schema(func): Return has unsupported type {sig.return_annotation}. The valid types "
                         "are Tensor, List[Tensor], int, float, bool, Union[int, float, bool], None and a Tuple of "
                         f"them. {where}")
    return Schema(opname, "", args, rets[0], rets[1])
