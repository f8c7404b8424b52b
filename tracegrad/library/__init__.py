"""``tracegrad.library`` and ``tracegrad.ops``: torch's Python custom-operator API.

``@library.custom_op("mylib::name", mutates_args=())`` turns a function written with tensor ops
(or NumPy, through ``.numpy()``) into an operator: called directly or as
``tracegrad.ops.mylib.name`` (and ``.default``). Its body runs with gradient recording off, as
torch runs a kernel below autograd; ``register_autograd(backward, setup_context=...)`` gives it
a gradient (an ``autograd.Function`` underneath: the node is torch's
``GeneratedBackwardFor_<ns>_<name>_defaultBackward``), and without one a backward through it
raises torch's RuntimeError. ``register_fake`` is kept (``opcheck`` compares shapes/dtypes with
it; tracegrad needs no fake kernel to trace: the real body runs under the trace).
``register_kernel("cpu"/"cuda", fn)`` replaces the body on that device; ``register_autocast(device,
dtype)`` casts its floating inputs inside autocast and runs it with autocast off. The older
``Library(ns, "DEF"/"IMPL"/"FRAGMENT")`` with ``define(schema)`` / ``impl(name, fn, key)`` maps
onto the same operators (``name.overload`` schemas are operators of their own, reached as
``ops.<ns>.<name>.<overload>``). ``tracegrad.ops.aten.<name>`` is ``tracegrad.<name>``.

Every operator has torch's schema -- inferred from the annotations or parsed from the string --
and each call is bound and checked against it, each result too (NOTE [custom operator schemas]
in ``_schema.py``).
"""
from __future__ import annotations

import contextlib
import inspect
import types
import weakref

import jax

import tracegrad
from tracegrad import Tensor, _autocast, _state
from tracegrad.amp.autocast_mode import get_autocast_dtype
from tracegrad.autograd.function import Function

from . import _schema

__all__ = ["custom_op", "CustomOpDef", "infer_schema", "register_fake", "register_autograd", "register_kernel", "register_autocast",
           "opcheck",
           "Library", "define", "impl", "ops"]

_OPS: dict = {}       # "ns::name" -> CustomOpDef


def _split(qualname):
    if not isinstance(qualname, str) or qualname.count("::") != 1 or not all(qualname.split("::")):
        raise ValueError(f"custom_op: the name must be 'namespace::op_name' (e.g. 'mylib::my_op'), got {qualname!r}")
    return qualname.split("::")


def _check_mutates(mutates_args):
    if isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ValueError("mutates_args must either be a sequence of the names of the arguments that are mutated or "
                         f"the string 'unknown'; got the str {mutates_args!r} (write ({mutates_args!r},) for one "
                         "argument)")


def _device_types(device_types):
    """``device_types`` (None, a device type or an iterable of them) as a list, each checked as
    torch's: a str (TypeError), naming a known device type (RuntimeError) without an index."""
    if device_types is None:
        return [None]
    types_ = [device_types] if isinstance(device_types, str) else list(device_types)
    for d in types_:
        if not isinstance(d, str):
            raise TypeError(f"torch.library: a device type must be a str such as 'cpu' or 'cuda', got "
                            f"{type(d).__name__}")
        if tracegrad.device(d).index is not None:
            raise RuntimeError(f"Expected device_type string to not have a device index; got {d}")
    return types_


def _tensors(value):
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _map_tensors(value, fn):
    """``value`` (an operator's result: a Tensor, None, or a tuple/list of them) with ``fn``
    applied to each Tensor."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map_tensors(v, fn) for v in value)
    return value


class CustomOpDef:
    """Mirrors ``torch._library.custom_ops.CustomOpDef``: the operator ``custom_op`` returns.
    Call it like the function it wraps."""

    def __init__(self, namespace, name, fn, mutates_args, schema=None):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._schema = schema       # None: an operator defined by name only (calls are not checked)
        self._defined = schema is not None
        self._autograd_kernel = False   # custom_op's and Autograd/CompositeImplicit bodies: torch's opcheck passes
        self._overloads = {}        # overload name -> CustomOpDef (``Library.define("name.overload(...)")``)
        self._mutates = () if mutates_args == "unknown" else tuple(mutates_args)
        self._kernels = {}          # device type -> function
        self._fake = None
        self._backward = self._setup_context = None
        self._function = None
        self._autocast = {}         # device type -> dtype its floating inputs take under autocast
        self.__name__ = name
        self.__doc__ = getattr(fn, "__doc__", None)

    def __repr__(self):
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    @property
    def _qualname(self):
        return f"{self._namespace}::{self._name}"

    @property
    def default(self):
        """``torch.ops.<ns>.<name>.default``: the operator itself."""
        return self

    # ---- registration -------------------------------------------------------------------
    def register_fake(self, fn=None, /):
        """Mirrors ``CustomOpDef.register_fake``: the shape/dtype function (usable as a
        decorator). Kept for ``opcheck``; tracing runs the real body."""
        def put(f):
            self._fake = f
            return f
        return put if fn is None else put(fn)

    register_abstract = register_fake

    def register_autograd(self, backward, /, *, setup_context=None):
        """Mirrors ``CustomOpDef.register_autograd``: ``setup_context(ctx, inputs, output)``
        saves what ``backward(ctx, *grads)`` needs; backward returns one gradient (or None) per
        input of the operator."""
        if not callable(backward):
            raise TypeError(f"register_autograd: expected backward to be a function, got {type(backward).__name__}")
        self._backward, self._setup_context = backward, setup_context
        self._function = None

    def register_kernel(self, device_types, fn=None, /):
        """Mirrors ``CustomOpDef.register_kernel``: the body on ``device_types`` ('cpu',
        'cuda', a list of them, or None for every device); usable as a decorator."""
        types = _device_types(device_types)

        def put(f):
            for d in types:
                self._kernels[d] = f
            return f
        return put if fn is None else put(fn)

    def register_autocast(self, device_type, cast_inputs):
        """Mirrors ``CustomOpDef.register_autocast``: inside an autocast region of ``device_type``
        the operator's floating tensors on that device (float64 excepted) are cast to
        ``cast_inputs`` (differentiably) and its body runs with autocast off there. The first
        registration for a device type stays, as torch. Raises ValueError for a device type that
        is not a str or has no autocast ('meta'), RuntimeError for an unknown one."""
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _check_autocast_device(device_type)
        self._autocast.setdefault(device_type, cast_inputs)

    # ---- calling --------------------------------------------------------------------------
    def _kernel(self, args):
        if self._kernels:
            for t in _tensors(list(args)):
                k = self._kernels.get(t.device.type)
                if k is not None:
                    return k
            if None in self._kernels:
                return self._kernels[None]
        return self._init_fn

    def _autograd_function(self):
        if self._function is None:
            op = self

            def forward(*args):
                return op._run(args)

            def setup_context(ctx, inputs, output):
                if op._setup_context is not None:
                    op._setup_context(ctx, inputs, output)

            def backward(ctx, *grads):
                if op._backward is None:
                    raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but no "
                                       "autograd formula was registered. Please use register_autograd to add one.")
                out = op._backward(ctx, *grads)
                return out if isinstance(out, tuple) else (out,)
            name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_default"
            self._function = type(name, (Function,), {"forward": staticmethod(forward),
                                                      "setup_context": staticmethod(setup_context),
                                                      "backward": staticmethod(backward)})
        return self._function

    def _run(self, args):
        # inside a tracegrad.func transform the kernel stays differentiable by it (under
        # no_grad its result would be a constant of the transform: NOTE [grad mode inside
        # transforms] in func/_closure.py)
        pos, kw = self._schema.split(args) if self._schema is not None else (args, {})
        with tracegrad.no_grad() if not _state.FUNC_LEVELS else contextlib.nullcontext():
            out = self._kernel(args)(*pos, **kw)
        if self._schema is not None:
            self._schema.check_result(self._qualname, out)
        ins = {id(t._st) for t in _tensors(list(args))}
        for t in _tensors(out):
            if id(t._st) in ins:
                raise RuntimeError(f"{self._qualname}: the output of this custom operator must not also be an input "
                                   "to it nor alias one (a view of an input): return a clone (x.clone()) instead")
        return out

    def _in_transform(self, args):
        """The operator inside a tracegrad.func transform, as torch 2.13's: a reverse-mode level
        (grad, vjp, jacrev) refuses it (torch's generated Function has no functorch rules),
        and at forward-mode levels (jvp, jacfwd) its outputs have zero tangents; vmap runs the
        kernel on the batch."""
        traced = any(isinstance(t._value, jax.core.Tracer) for t in _tensors(list(args)))
        if traced and "reverse" in _state.FUNC_LEVELS and tracegrad.is_grad_enabled():
            raise RuntimeError(f"{self._qualname}: In order to use an autograd.Function with functorch transforms "
                               "(vmap, grad, jvp, jacrev, ...), it must override the setup_context staticmethod; a "
                               "torch.library custom operator cannot run inside tracegrad.func.grad/vjp/jacrev (as in "
                               "torch). Call it outside the transform, or write a custom autograd.Function with "
                               "setup_context and backward.")
        out = self._run(args)
        if not traced:
            return out
        return _map_tensors(out, lambda t: Tensor._make(jax.lax.stop_gradient(t._value)))

    def __getattr__(self, name):
        # ``ops.<ns>.<name>.<overload>``: the overloads Library.define declared
        overloads = self.__dict__.get("_overloads")
        if overloads and name in overloads:
            return overloads[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}' (no attribute or overload of "
                             f"{self.__dict__.get('_namespace')}::{self.__dict__.get('_name')} has that name)")

    def __call__(self, *args, **kwargs):
        if self._overloads:
            op, args = self._resolve(args, kwargs)
            return op._call_bound(args)
        return self._call_bound(self._bind(args, kwargs))

    def _bind(self, args, kwargs):
        """The call's arguments, one per parameter (NOTE [custom operator schemas] in
        _schema.py); an operator without a schema binds them to its Python body's signature."""
        if self._schema is not None:
            return self._schema.bind(self._qualname, args, kwargs)
        if kwargs:
            try:
                bound = inspect.signature(self._init_fn).bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{self._qualname}: {e}") from None
            bound.apply_defaults()
            return tuple(bound.arguments.values())
        return args

    def _resolve(self, args, kwargs):
        """``(overload, bound arguments)``: the first overload (the default one first) whose
        schema takes the call, as torch's resolution of an overload packet. RuntimeError naming
        every schema's complaint when none does."""
        errors = []
        for op in ([self] if self._defined else []) + list(self._overloads.values()):
            try:
                return op, op._bind(args, kwargs)
            except RuntimeError as e:
                errors.append(str(e))
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match any schema:\n"
                           + "\n\n".join(errors))

    def _call_bound(self, args):
        if self._autocast and _autocast.active():
            on = [d for d in self._autocast if _autocast.dtype_for(d) is not None]
            if on:
                return self._under_autocast(args, on)
        return self._dispatch(args)

    def _under_autocast(self, args, devices):
        """The call inside autocast on ``devices`` (registered with ``register_autocast``):
        inputs cast, the body run with autocast off on those devices."""
        for d in devices:
            dtype = self._autocast[d]
            args = _map_tensors(args, lambda t: t.to(dtype) if (t.is_floating_point() and t.device.type == d
                                                                 and t.dtype is not tracegrad.float64) else t)
        rest = {k: v for k, v in _autocast._state().items() if k not in devices}
        with _autocast.entered(rest):
            return self._dispatch(args)

    def _dispatch(self, args):
        if _state.FUNC_LEVELS:
            out = self._in_transform(args)
        elif tracegrad.is_grad_enabled() and any(t.requires_grad for t in _tensors(list(args))):
            out = self._autograd_function().apply(*args)
        else:
            out = self._run(args)
        prof = _state.PROFILER[0]
        if prof is not None and prof.sees_ops:   # utils.flop_counter: a formula may count it
            prof.custom_op(self._name, args, out)
        return out


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Mirrors ``torch.library.custom_op``: registers ``fn`` (annotated parameters and return)
    as the operator ``name`` ('namespace::op_name'); usable as a decorator. ``mutates_args``
    (required) names the arguments ``fn`` writes in place (or ``"unknown"``).
    ``device_types`` restricts ``fn`` to those devices; ``schema`` (``"(Tensor x) -> Tensor"``)
    replaces the one inferred from the annotations. Raises ValueError for a malformed name, a
    missing or unsupported annotation or an unknown mutated argument, RuntimeError for a name
    that is no identifier or a malformed schema. A name registered before is replaced, as
    torch's ``custom_op`` replaces it. Calls are checked against the schema (NOTE [custom
    operator schemas] in _schema.py)."""
    namespace, opname = _split(name)
    _check_mutates(mutates_args)
    _schema.check_name(opname)
    if namespace == "prim":
        raise ValueError(f"{namespace} is a reserved namespace. Please try creating a library with another name.")

    def register(f):
        if schema is None:
            if mutates_args != "unknown":
                unknown = set(mutates_args) - set(inspect.signature(f).parameters)
                if unknown:
                    raise ValueError(f"custom_op: mutates_args names {sorted(unknown)}, which are not parameters "
                                     f"of {f.__name__}")
            sch = _schema.infer(f, mutates_args, opname)
        else:
            sch = _schema.parse(opname + schema)[1]
        op = CustomOpDef(namespace, opname, f, mutates_args, sch)
        op._autograd_kernel = True      # (torch registers one for every custom_op)
        if device_types is not None:
            op.register_kernel(device_types, f)
        _OPS[name] = op
        return op
    return register if fn is None else register(fn)


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """Mirrors ``torch.library.infer_schema``: the schema string torch gives an operator with
    ``prototype_function``'s annotations (``"(Tensor x, SymInt n=1) -> Tensor"``; prefixed with
    ``op_name`` when given). ``mutates_args`` names the parameters written in place (or
    ``"unknown"``: every tensor one). ValueError, as torch, for an annotation no schema type
    has (NOTE [custom operator schemas] in _schema.py)."""
    _check_mutates(mutates_args)
    return _schema.infer(prototype_function, mutates_args, op_name or "").declaration(op_name or "")


def _op(op, missing=RuntimeError):
    """The operator ``op`` names (a CustomOpDef or its 'ns::name'). A name not registered is
    ``missing`` raised (torch's class differs by API), or with ``missing=None`` an operator
    without a body or schema yet, as torch lets a kernel be registered before the definition."""
    if isinstance(op, CustomOpDef):
        return op
    if not isinstance(op, str):
        raise ValueError(f"torch.library: {op!r} is not a registered custom operator (define it with custom_op)")
    found = _OPS.get(op)
    if found is None:
        ns, name = _split(op)
        if missing is not None:
            raise missing(f"operator {op} does not exist: define it first (custom_op or Library.define)")
        found = _OPS[op] = CustomOpDef(ns, name, _undefined(op), "unknown")
    return found


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    """Mirrors ``torch.library.register_fake(op_or_name, fn)`` (a decorator without ``fn``).
    RuntimeError for a name no operator has."""
    return _op(op).register_fake(fn) if fn is not None else _op(op).register_fake()


register_abstract = register_fake


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Mirrors ``torch.library.register_autograd(op_or_name, backward, setup_context=...)``;
    AttributeError, as torch's look-up of ``ops.<ns>.<name>``, for a name no operator has."""
    _op(op, AttributeError).register_autograd(backward, setup_context=setup_context)


def _check_autocast_device(device_type):
    get_autocast_dtype(device_type)   # (RuntimeError for an unknown device type)
    if device_type == "meta":
        raise ValueError(f"Device type '{device_type}' does not support autocast.")


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Mirrors ``torch.library.register_autocast(op_or_name, device_type, cast_inputs)``: see
    ``CustomOpDef.register_autocast``. A ``device_type`` that is not a str is a TypeError here,
    as torch's (its check runs before the operator's)."""
    if not isinstance(device_type, str):
        raise TypeError(f"register_autocast(): argument 'device_type' (position 2) must be str, not "
                        f"{type(device_type).__name__}; pass 'cpu' or 'cuda'")
    _op(op).register_autocast(device_type, cast_inputs)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    """Mirrors ``torch.library.register_kernel(op_or_name, device_types, fn)``; a name not yet
    defined gets the kernel ahead of its definition, as in torch."""
    return _op(op, None).register_kernel(device_types, fn)


class OpCheckError(Exception):
    """Mirrors ``torch.testing._internal.optests.generate_tests.OpCheckError``: what ``opcheck``
    raises for a failed test ("opcheck(op, ...): test_schema failed with ...")."""


def opcheck(op, args, kwargs=None, *, test_utils=None, raise_exception=True, atol=None, rtol=None):
    """Mirrors ``torch.library.opcheck``: runs the operator on ``args`` and checks what tracegrad
    can: the fake kernel (if registered) gives the real output's shapes and dtypes, the inputs
    not named in ``mutates_args`` are unchanged, and an operator defined through ``Library``
    whose outputs require grad has an autograd kernel (a ``custom_op`` always has one, as in
    torch: it raises at backward without ``register_autograd``). Returns torch's dict of test
    name -> 'SUCCESS'; a failed test raises OpCheckError (or is the exception in the dict, with
    ``raise_exception=False``). ValueError for an unknown ``test_utils`` name."""
    op = _op(op)
    names = (test_utils,) if isinstance(test_utils, str) else test_utils
    if names is not None and not set(names) <= set(_OPCHECK_TESTS):
        raise ValueError(f"opcheck(op, ..., test_utils={names}), expected test_utils to be subset of "
                         f"{_OPCHECK_TESTS} but it was not")
    kwargs = kwargs or {}
    result = {}

    def check(name, fn):
        try:
            fn()
            result[name] = "SUCCESS"
        except Exception as e:  # noqa: BLE001 -- reported as torch's opcheck does
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for stack trace)") from e
            result[name] = e

    def schema():
        before = [t.detach().clone() for t in _tensors(list(args))]
        with tracegrad.no_grad():
            op(*args, **kwargs)
        names = [a.name for a in op._schema.args] if op._schema is not None else []
        positions = {i for i, n in enumerate(names) if n in op._mutates}
        k = 0
        for i, a in enumerate(args):
            for t in _tensors(a):
                if i not in positions and not tracegrad.equal(t.detach(), before[k]):
                    arg = names[i] if i < len(names) else str(i)
                    raise RuntimeError(f"Argument {arg} is not defined as mutable but was mutated: {op._qualname} "
                                       "writes it in place; name it in mutates_args")
                k += 1

    def autograd():
        if op._autograd_kernel:
            return
        if any(t.requires_grad for t in _tensors(list(args))) and op._backward is None:
            out = op(*args, **kwargs)
            if any(t.requires_grad for t in _tensors(out)):
                raise RuntimeError(f"{op._qualname}: at least one output of this operator has requires_grad=True but "
                                   "the operator does not have an autograd kernel defined at an autograd key; "
                                   "register one (Library.impl(..., 'Autograd') or register_autograd)")

    def fake():
        if op._fake is None:
            return
        with tracegrad.no_grad():
            real, fake_out = op(*args, **kwargs), op._fake(*args, **kwargs)
        for r, f in zip(_tensors(real), _tensors(fake_out)):
            if tuple(r.shape) != tuple(f.shape) or r.dtype != f.dtype:
                raise RuntimeError(f"When comparing the output of {op._qualname} on FakeTensor and concrete Tensors, "
                                   f"found mismatched tensor metadata: the fake kernel gives {tuple(f.shape)} "
                                   f"{f.dtype}, the operator {tuple(r.shape)} {r.dtype}")
    chosen = names if names is not None else _OPCHECK_DEFAULT
    for name, fn in (("test_schema", schema), ("test_autograd_registration", autograd), ("test_faketensor", fake),
                     ("test_aot_dispatch_static", lambda: None), ("test_aot_dispatch_dynamic", lambda: None)):
        if name in chosen:
            check(name, fn)
    return result


_OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_static",
                  "test_aot_dispatch_dynamic")
_OPCHECK_DEFAULT = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")

# ---- the older Library API ------------------------------------------------------------------

_KIND = ("DEF", "IMPL", "FRAGMENT")
# torch's dispatch keys a Library.impl may name (torch parses the name; an unknown one is its
# RuntimeError). tracegrad runs CPU/CUDA/Meta/Autograd/Composite bodies; the others are kept as
# a body for every device.
_DISPATCH_KEYS = {"CPU", "CUDA", "HIP", "XLA", "MPS", "XPU", "IPU", "HPU", "Lazy", "Meta", "MTIA", "PrivateUse1",
                  "Autograd", "AutogradCPU", "AutogradCUDA", "AutogradXLA", "AutogradMPS", "AutogradXPU",
                  "AutogradLazy", "AutogradMeta", "AutogradPrivateUse1", "AutogradOther",
                  "CompositeImplicitAutograd", "CompositeExplicitAutograd",
                  "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutogradNestedTensor",
                  "AutocastCPU", "AutocastCUDA", "AutocastXPU", "AutocastMPS", "ADInplaceOrView", "BackendSelect",
                  "Python", "PythonDispatcher", "PythonTLSSnapshot", "Functionalize", "FuncTorchBatched",
                  "FuncTorchDynamicLayerFrontMode", "FuncTorchDynamicLayerBackMode", "Batched", "Tracer",
                  "SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "QuantizedCPU", "QuantizedCUDA",
                  "NestedTensorCPU", "NestedTensorCUDA", "MkldnnCPU", "Undefined", "Dense", "Sparse"}
_DEF_NAMESPACES: set = set()     # namespaces a live Library(kind="DEF") owns
_DEFINED: dict = {}              # (qualname, overload) -> weak reference to the Library that defined it
_KEEP_ALIVE: list = []           # the Libraries of the module-level define/impl (as torch keeps them)


class Library:
    """Mirrors ``torch.library.Library(ns, kind)``: ``define("name(Tensor x) -> Tensor")`` declares
    an operator of the namespace, ``impl("name", fn, "CPU" | "CUDA" | "CompositeImplicitAutograd"
    | "CompositeExplicitAutograd" | "Autograd" | "Meta")`` gives its body (an "Autograd" or
    "CompositeImplicitAutograd" body records its own gradient; the others run with recording off).
    ValueError for an unknown kind, TypeError for a namespace that is no str, RuntimeError for a
    second live "DEF" library of one namespace. What a library defines lasts while it lives,
    as torch's registrations."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in _KIND:
            raise ValueError(f"Unsupported kind: {kind}; use one of {_KIND}")
        if not isinstance(ns, str):
            raise TypeError(f"Library(): argument 'ns' must be str, not {type(ns).__name__}")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                                   "put all of your definitions in a single TORCH_LIBRARY block (or use kind "
                                   "'FRAGMENT' for the later ones)")
            _DEF_NAMESPACES.add(ns)
            weakref.finalize(self, _DEF_NAMESPACES.discard, ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key

    def define(self, schema, alias_analysis="", *, tags=()):
        """Declares the operator ``schema`` names ('name(args) -> ret' or 'name.overload(...)');
        returns its name. RuntimeError, as torch's, for a malformed schema, another namespace
        or an operator (and overload) already defined. Calls of an operator with one overload
        are checked against its schema (NOTE [custom operator schemas] in _schema.py)."""
        ns, sch = _schema.parse(schema)
        if ns is not None and ns != self.ns:
            raise RuntimeError(f"Explicitly provided namespace ({ns}) in schema string does not match namespace of "
                               f"enclosing TORCH_LIBRARY_FRAGMENT block ({self.ns}); define it in a Library of "
                               f"namespace {ns}")
        qual = f"{self.ns}::{sch.name}"
        owner = _DEFINED.get((qual, sch.overload))
        if owner is not None and owner() is not None:
            raise RuntimeError(f"Tried to register an operator ({sch.declaration(qual)}) with the same name and "
                               "overload name multiple times. Each overload's schema should only be registered "
                               "with a single call to def()")
        _DEFINED[(qual, sch.overload)] = weakref.ref(self)
        op = _entry(self.ns, sch.name, sch.overload)
        op._schema, op._defined = sch, True
        return sch.name if ns is None else f"{ns}::{sch.name}"

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Gives operator ``op_name`` (of this namespace) its body for ``dispatch_key``; an
        operator not yet defined gets it ahead of its definition, as in torch. RuntimeError for
        a dispatch key torch does not know (they are CamelCase: "CPU", "CUDA", "Meta"...)."""
        name = op_name if isinstance(op_name, str) else op_name.__name__
        name, _, overload = name.split("::")[-1].partition(".")
        overload = "" if overload == "default" else overload
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if key not in _DISPATCH_KEYS:
            raise RuntimeError(f"could not parse dispatch key: {key}; name one such as 'CPU', 'CUDA', 'Meta' or "
                               "'CompositeExplicitAutograd'")
        op = _entry(self.ns, name, overload)
        if key == "Meta":
            op.register_fake(fn)
        elif key in ("CompositeImplicitAutograd", "Autograd", "AutogradCPU", "AutogradCUDA"):
            _put(self.ns, name, overload, _Implicit(op, fn))
        elif key in ("CPU", "CUDA"):
            op.register_kernel(key.lower(), fn)
        else:
            op.register_kernel(None, fn)

    def _destroy(self):
        pass


class _Implicit(CustomOpDef):
    """An operator whose body records its own gradient (torch's CompositeImplicitAutograd /
    Autograd kernels): called as is, with recording on."""

    def __init__(self, op, fn):
        super().__init__(op._namespace, op._name, fn, "unknown", op._schema)
        self._fake, self._defined, self._autograd_kernel = op._fake, op._defined, True

    def _call_bound(self, args):
        pos, kw = self._schema.split(args) if self._schema is not None else (args, {})
        return self._init_fn(*pos, **kw)


def _entry(ns, name, overload):
    """The operator ``ns::name`` (``overload`` "" for the default one, else that overload of
    it), made -- without a body or schema yet -- when nothing defined it."""
    qual = f"{ns}::{name}"
    packet = _OPS.get(qual)
    if packet is None:
        packet = _OPS[qual] = CustomOpDef(ns, name, _undefined(qual), "unknown")
    if not overload:
        return packet
    op = packet._overloads.get(overload)
    if op is None:
        op = packet._overloads[overload] = CustomOpDef(ns, name, _undefined(f"{qual}.{overload}"), "unknown")
    return op


def _put(ns, name, overload, op):
    """Makes ``op`` the operator ``_entry`` names (the default one keeps the overloads)."""
    qual = f"{ns}::{name}"
    if overload:
        _OPS[qual]._overloads[overload] = op
    else:
        op._overloads = _OPS[qual]._overloads
        _OPS[qual] = op


def _undefined(qual):
    def body(*args, **kwargs):
        raise NotImplementedError(f"{qual} has no implementation for this device: register one with "
                                  "Library.impl or register_kernel")
    return body


def define(qualname, schema, *, lib=None, tags=()):
    """Mirrors ``torch.library.define("ns::name", "(Tensor x) -> Tensor")``: ValueError for a
    schema that does not start with its arguments."""
    ns, name = _split(qualname)
    if not isinstance(schema, str) or not schema.startswith("("):
        raise ValueError(f'define(qualname, schema, ...): expected schema to look like e.g. "(Tensor x) -> Tensor" '
                         f'but got "{schema}"')
    lib = Library(ns, "FRAGMENT")
    lib.define(name + schema)
    _KEEP_ALIVE.append(lib)


def impl(qualname, types, func=None, *, lib=None):
    """Mirrors ``torch.library.impl("ns::name", "cpu" | "cuda" | "default" | [...], fn)``
    (a decorator without ``fn``)."""
    ns, name = _split(qualname)
    keys = [types] if isinstance(types, str) else list(types)

    def put(f):
        for k in keys:
            lib = Library(ns, "FRAGMENT")
            _KEEP_ALIVE.append(lib)
            lib.impl(name, f, {"cpu": "CPU", "cuda": "CUDA", "default": "CompositeExplicitAutograd"}
                                         .get(k, k))
        return f
    return put if func is None else put(func)


# ---- tracegrad.ops -----------------------------------------------------------------------------


class _Namespace:
    """``tracegrad.ops.<ns>``: the operators of one namespace as attributes."""

    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = _OPS.get(f"{self._ns}::{name}")
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")
        return op


class _Aten:
    """``tracegrad.ops.aten.<name>``: torch's ATen operators as tracegrad's functions of the
    same name."""

    # operators torch has only under ``torch.ops.aten`` (no ``torch.<name>``)
    _ONLY_HERE = ("convolution_backward", "_convolution_double_backward")

    def __getattr__(self, name):
        fn = getattr(tracegrad, name, None) or getattr(tracegrad.nn.functional, name, None)
        if fn is None and name in self._ONLY_HERE:
            fn = getattr(tracegrad.nn.grad, name)
        if fn is None and name == "unfold_backward":
            # ATen's unfold gradient, also only under ops.aten
            from .._api.strided import unfold_backward as fn
        if fn is None and not name.startswith("_"):
            # ATen operators torch has only as Tensor methods (view, expand, ...): the method,
            # called with self first as the aten schema takes it
            fn = getattr(tracegrad.Tensor, name, None)
        if fn is None or not callable(fn):
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")
        return AtenOp(name, fn)


class AtenOp(str):
    """``ops.aten.<name>`` and each of its overloads (``.default``, ``.Tensor``, ...: one
    function takes them all): calls ``tracegrad.<name>``, and is the op's name as a string, so
    it names the op wherever tracegrad identifies ops by name (a selective-checkpoint policy's
    ``op == torch.ops.aten.mm.default``, an ``op_list`` entry)."""

    def __new__(cls, name, fn):
        self = str.__new__(cls, name)
        self._fn = fn
        return self

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return AtenOpOverload(str.__str__(self), self._fn)

    def __repr__(self):
        return f"aten.{str.__str__(self)}"


class AtenOpOverload(AtenOp):
    """One overload of an ``ops.aten`` operator (``ops.aten.mm.default``): the same function
    and name; a selective-checkpoint ``op_list`` takes these, not the packet (as torch)."""

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __repr__(self):
        return f"aten.{str.__str__(self)}.default"


class _Ops(types.ModuleType):
    """``tracegrad.ops``: ``ops.<namespace>.<operator>`` (a module object, as torch's)."""

    aten = _Aten()

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _Namespace(ns)

    def load_library(self, path):
        raise NotImplementedError("tracegrad.ops.load_library: tracegrad cannot load compiled C++ operator "
                                  "libraries; define the operator in Python with tracegrad.library.custom_op")


ops = _Ops("tracegrad.ops")
