"""Bad-input parity, round 56: areas no earlier round fed -- ``torch.library`` (``custom_op`` names,
``mutates_args``, annotations no schema type has, defaults, ``device_types``, ``schema=`` strings;
calls with missing, extra, keyword-only and wrongly typed arguments; results that do not fit the
schema; ``Library`` kinds, namespaces, ``define`` strings, overloads and ``impl`` dispatch keys;
``register_*`` of unknown names; ``opcheck``'s ``test_utils``; ``infer_schema``),
``torch.profiler`` (results read before it ran, activities, ``record_function``,
``export_stacks``), ``torch.jit`` (trace/trace_module/script/load arguments), ``torch.backends``
flags given other kinds, ``nn.attention.sdpa_kernel`` (its argument; calls no allowed CPU backend
runs), ``torch.accelerator`` without one, and a few ``torch.fx``/``autograd.Function`` asserts.
A probe of ~1,000 calls (written here for this table, no other repository's tests copied; torch
2.13 the oracle) found these differences, fixed in tracegrad:

- a custom operator had no schema (NOTE [custom operator schemas] in ``library/_schema.py``):
  torch infers one from the annotations, parses a ``schema=``/``Library.define`` string, binds
  every call to it and converts each argument and the result. tracegrad ran the Python body on
  whatever it was given: ``op(1.0)`` or ``op([1.0])`` for a Tensor parameter failed inside the
  body (AttributeError), ``op(x, 1.5)`` for an ``int`` one and ``op(x, [1.5])`` for a
  ``List[int]`` one computed, ``op(x, 3)`` for an ``Optional[Tensor]`` ran, a missing or extra
  argument was Python's TypeError (torch: RuntimeError "Expected a value of type 'int' for
  argument 'n' but instead found type 'float'", "is missing value for argument", "expected at
  most 1 argument(s)"), a keyword-only parameter could not be passed at all; a body returning
  ``3`` for a ``-> Tensor`` or one value for a ``-> Tuple[Tensor, Tensor]`` passed (torch:
  RuntimeError "Unable to cast", TypeError); annotations such as ``dict``, ``object``,
  ``Tuple[int, int]`` or ``Optional[List[Tensor]]``, a return ``str`` or ``Optional[Tensor]``, a
  list default, an unresolvable string annotation and a mutated ``int`` were accepted (torch:
  ValueError); schema strings were not parsed (a typo'd type, a missing ``->``, a dangling ``,``
  passed; torch: RuntimeError); names such as ``ns::a-b`` and the reserved ``prim`` namespace were
  accepted. ``library/_schema.py`` now infers, parses, binds and checks as torch does, and
  ``library.infer_schema`` (missing) gives torch's strings.
- ``Library.define("foo.scaled(...)")`` + ``impl("foo.scaled", fn)`` replaced the body of the
  default ``foo`` (a valid program computed the wrong thing), and ``ops.<ns>.foo.scaled`` did not
  exist: overloads are now operators of their own, and a call of the packet resolves the first
  overload whose schema takes it (torch's RuntimeError "failed to match any schema" otherwise).
- ``mutates_args="x"`` was accepted (torch: ValueError); ``device_types``/``register_kernel``
  took any string ("tpu9", "CPU", "cuda:0"; torch: RuntimeError); ``custom_op`` of a name
  registered before raised (torch replaces it); ``Library(3, ...)`` ran (TypeError), a second
  live ``Library(ns, "DEF")`` and a second ``define`` of one operator passed (RuntimeError),
  ``define`` of another namespace passed, ``impl`` with an unknown dispatch key passed
  (RuntimeError), ``impl``/``register_kernel`` before the definition raised (torch accepts
  them); ``register_fake``/``register_autograd`` of an unknown name raised ValueError (torch:
  RuntimeError/AttributeError); ``library.define`` of a schema without its "(" passed;
  ``opcheck(test_utils="bogus")`` ran, ``opcheck`` ran every test whatever was chosen, a failed
  test was a RuntimeError (torch: OpCheckError "opcheck(op, ...): test_schema failed with ..."),
  and it failed a ``custom_op`` without ``register_autograd`` on inputs requiring grad (torch
  passes it: every custom_op has an autograd kernel, which raises at backward).
- ``profiler.profile``: ``events()``/``key_averages()``/``export_chrome_trace()`` before it ran
  were RuntimeError (torch: AssertionError "Profiler must be initialized before ..."),
  ``stop()`` before ``start()`` passed, ``step()`` before ``start()`` was an AttributeError
  (torch follows the schedule); bad ``activities`` were ValueError/TypeError (torch:
  AssertionError "No valid profiler activities found"); ``export_stacks`` was missing;
  ``record_function(3)`` raised TypeError at construction (torch: RuntimeError on entry).
- ``jit.trace`` never ran the function, so example inputs it cannot take (a wrong shape, too few,
  an int), no inputs at all and a non-callable passed (torch runs it once: its errors);
  ``trace_module`` took anything; ``script(3)`` ran (TypeError); ``jit.load`` of a missing path
  was RuntimeError (ValueError); script/trace did not warn their deprecation.
- ``backends`` flags took any value: ``cudnn.benchmark = 1``, ``mkldnn.enabled = "x"``,
  ``cuda.matmul.allow_tf32 = None`` (torch: RuntimeError "expects a bool"), ``fp32_precision``
  names (RuntimeError/TypeError), the reduced-precision-reduction pairs (TypeError/RuntimeError),
  ``cuda.matmul.bogus`` (AttributeError "Unknown attribute").
- ``sdpa_kernel`` with no MATH nor FLASH_ATTENTION, or FLASH_ATTENTION alone on inputs its fused
  CPU kernel cannot take, ran (torch: RuntimeError "No viable backend" / "No available kernel");
  ``sdpa_kernel("math")``/a tuple raised TypeError (torch: AssertionError).
- ``accelerator.current_device_index()``/``synchronize()`` without an accelerator returned
  (torch: RuntimeError); ``set_device_index``/``device_index`` were missing.
- ``fx.symbolic_trace(3)``, ``Graph.create_node("bogus_op", ...)`` and
  ``ctx.save_for_forward(3)`` raised TypeError/ValueError (torch asserts: AssertionError);
  ``fx.wrap(3)`` outside module scope was NotImplementedError (torch checks the type first).

Found and left alone (not tabled): ``register_autograd(3)`` is refused at once by tracegrad
(TypeError) where torch fails only at backward; ``opcheck`` of an operator without a fake kernel
passes in tracegrad (no fake tensors to test; torch's OpCheckError); ``profile.key_averages()``
inside the profiled block is tracegrad's RuntimeError (torch: the events so far);
``export_chrome_trace`` to a missing directory is FileNotFoundError (torch logs and returns);
``make_dual`` of a list is TypeError (torch's AttributeError from inside); ``torch.cuda``'s
``get_device_properties``/``Event``/``stream``/``mem_get_info``/``get_rng_state`` and
``backends.cuda.preferred_linalg_library`` are missing (AttributeError), as are
``distributed.HashStore``/``send``; ``vjp_fn(a, b)`` with a second cotangent is torch's
accidental TypeError, tracegrad's RuntimeError.

Each call runs under torch and tracegrad: the same exception class (or none), no text of the layers
below tracegrad; ``_ok`` calls are ones torch accepts, and they give torch's value.
"""
import itertools
import os
import typing
from typing import List, Optional, Tuple

import pytest

import tracegrad

from _bad_input_helpers import outcome, table_tests, value_test

torch = pytest.importorskip("torch")
# torch.jit's script/trace warn their deprecation, and setting mkldnn's allow_tf32 that it needs an
# Intel GPU, in both libraries (the values are compared here)
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN:UserWarning")]

C = {}
_N = itertools.count()
_KEEP = []     # Libraries kept alive (their registrations last while they live, in both)


def _name(T, base="op"):
    """A fresh 'ns::name' per call (operators are process-global in both libraries)."""
    return f"r56{'t' if T is torch else 'g'}::{base}{next(_N)}"


def _op(T, fn, **kw):
    kw.setdefault("mutates_args", ())
    return T.library.custom_op(_name(T), **kw)(fn)


def _sin(T):
    def f(x: T.Tensor) -> T.Tensor:
        return x.sin()
    return _op(T, f)


def _named(T, q):
    def f(x: T.Tensor) -> T.Tensor:
        return x.sin()
    return T.library.custom_op(q, mutates_args=())(f)


def _with(T, ann, body=lambda x, a: x.clone(), ret=None):
    """An operator ``f(x: Tensor, a: ann) -> ret (Tensor)``."""
    def f(x, a):
        return body(x, a)
    f.__annotations__ = {"x": T.Tensor, "a": ann(T), "return": T.Tensor if ret is None else ret(T)}
    return _op(T, f)


# ---- custom_op: names, mutates_args, device_types
C["name_no_namespace"] = lambda T: _named(T, "noop")
C["name_three_parts"] = lambda T: _named(T, "a::b::c")
C["name_hyphen"] = lambda T: _named(T, "r56x::a-b")
C["name_starts_with_digit"] = lambda T: _named(T, "r56x::1b")
C["name_space"] = lambda T: _named(T, "r56x::a b")
C["name_prim_namespace"] = lambda T: _named(T, "prim::r56foo")
C["name_underscore_ok"] = lambda T: _named(T, f"r56x::_a{next(_N)}")(T.zeros(1)).tolist()


def _twice(T):
    q = _name(T)
    _named(T, q)
    return _named(T, q)(T.zeros(1)).tolist()


C["name_registered_twice_ok"] = _twice


def _mutating(T, mut):
    def f(x: T.Tensor, n: int) -> None:
        x.add_(n)
    return T.library.custom_op(_name(T), mutates_args=mut)(f)


C["mutates_args_str"] = lambda T: _mutating(T, "x")
C["mutates_args_unknown_param"] = lambda T: _mutating(T, ("z",))
C["mutates_args_int_param"] = lambda T: _mutating(T, ("n",))
C["mutates_args_none"] = lambda T: _mutating(T, None)
C["mutates_args_unknown_str_ok"] = lambda T: _mutating(T, "unknown")(T.ones(1), 1)
C["mutates_args_list_ok"] = lambda T: _mutating(T, ["x"])(T.ones(1), 1)


def _on_devices(T, d):
    def f(x: T.Tensor) -> T.Tensor:
        return x.sin()
    return T.library.custom_op(_name(T), mutates_args=(), device_types=d)(f)


for _lab, _d in {"unknown": "tpu9", "upper": "CPU", "with_index": "cuda:0", "int": 3,
                 "list_with_int": ["cpu", 3], "list_with_unknown": ["cpu", "bogus"]}.items():
    C[f"device_types_{_lab}"] = (lambda d: lambda T: _on_devices(T, d))(_d)
    C[f"register_kernel_{_lab}"] = (lambda d: lambda T: _sin(T).register_kernel(d)(lambda x: x))(_d)
C["device_types_list_ok"] = lambda T: _on_devices(T, ["cpu", "cuda"])(T.zeros(1)).tolist()


# ---- custom_op: annotations and defaults (torch's infer_schema)
def _annotated(T, ann, ret=None, default=None):
    def f(x, a=default):
        return x.clone()
    f.__annotations__ = {"x": T.Tensor, "a": ann(T), "return": T.Tensor if ret is None else ret(T)}
    if default is None:
        f.__defaults__ = None
    return _op(T, f)


C["param_unannotated"] = lambda T: _op(T, lambda x: x)
C["param_dict"] = lambda T: _annotated(T, lambda T: dict)
C["param_object"] = lambda T: _annotated(T, lambda T: object)
C["param_tuple_of_ints"] = lambda T: _annotated(T, lambda T: Tuple[int, int])
C["param_optional_list_of_tensors"] = lambda T: _annotated(T, lambda T: Optional[List[T.Tensor]])
C["param_plain_list"] = lambda T: _annotated(T, lambda T: list)
C["param_parameter_class"] = lambda T: _annotated(T, lambda T: T.nn.Parameter)
C["param_list_default"] = lambda T: _annotated(T, lambda T: List[int], default=[1])
C["param_tuple_default"] = lambda T: _annotated(T, lambda T: List[int], default=(1,))
C["return_dict"] = lambda T: _annotated(T, lambda T: int, ret=lambda T: dict)
C["return_str"] = lambda T: _annotated(T, lambda T: int, ret=lambda T: str)
C["return_optional_tensor"] = lambda T: _annotated(T, lambda T: int, ret=lambda T: Optional[T.Tensor])
C["return_list_of_ints"] = lambda T: _annotated(T, lambda T: int, ret=lambda T: List[int])
C["return_bare_tuple"] = lambda T: _annotated(T, lambda T: int, ret=lambda T: tuple)


def _string_annotations(T):
    def f(x):
        return x
    f.__annotations__ = {"x": "Tensr", "return": "Tensor"}    # names this module does not define
    return _op(T, f)


C["annotation_unresolvable_string"] = _string_annotations


def _no_return(T):
    def f(x: T.Tensor):
        return x.clone()
    return _op(T, f)


C["return_unannotated"] = _no_return


def _varargs(T):
    def f(*xs: T.Tensor) -> T.Tensor:
        return xs[0].clone()
    return _op(T, f)


C["param_varargs"] = _varargs


def _defaults(T):
    def f(x: T.Tensor, d: T.dtype = T.float64, s: str = "a", o: Optional[float] = None, b: bool = True,
          n: int = 2) -> T.Tensor:
        return x.to(d) * n * len(s)
    return _op(T, f)(T.ones(1)).tolist()


C["supported_defaults_ok"] = _defaults


# ---- torch.library.infer_schema: the schema strings (annotations, defaults, mutated tensors)
def _prototypes(T):
    def scalars(x: T.Tensor, y: Optional[int] = None, z: float = 2, s: str = "a", b: bool = True,
                d: T.dtype = T.float32, dev: T.device = T.device("cpu"), n: int = -3, fl: float = 1e-5,
                o: Optional[T.Tensor] = None) -> Tuple[T.Tensor, int]:
        pass

    def lists(x: T.Tensor, ys: List[T.Tensor], w: typing.Sequence[int], v: list[float],
              u: Optional[List[int]] = None, t: List[Optional[T.Tensor]] = None) -> None:
        pass

    def numbers(x: T.Tensor, a: typing.Union[int, float, bool], b: Optional[typing.Union[int, float, bool]] = None,
                c: List[typing.Union[int, float, bool]] = None, dev: Optional[T.device] = None,
                dt: Optional[T.dtype] = None, s: Optional[str] = None) -> List[T.Tensor]:
        pass

    def keyword(x: T.Tensor, *, k: int = 1, w: float = float("inf")) -> float:
        pass
    return {"scalars": scalars, "lists": lists, "numbers": numbers, "keyword": keyword}


for _lab, _mut, _opn in (("scalars", (), None), ("lists", {"x", "ys"}, None), ("lists", "unknown", None),
                         ("lists", (), "foo"), ("numbers", (), None), ("keyword", (), None)):
    C[f"infer_schema_{_lab}_{'unknown' if _mut == 'unknown' else len(_mut)}_{_opn}_ok"] = (
        lambda lab, mut, opn: lambda T: T.library.infer_schema(_prototypes(T)[lab], mutates_args=mut, op_name=opn)
    )(_lab, _mut, _opn)
C["infer_schema_mutated_int"] = lambda T: T.library.infer_schema(_prototypes(T)["keyword"], mutates_args={"k"})
C["infer_schema_mutates_args_str"] = lambda T: T.library.infer_schema(_prototypes(T)["keyword"], mutates_args="x")

# ---- custom_op: calls bound and checked against the schema
C["call_missing_argument"] = lambda T: _sin(T)()
C["call_extra_positional"] = lambda T: _sin(T)(T.ones(1), 2)
C["call_unknown_keyword"] = lambda T: _sin(T)(T.ones(1), z=2)
C["call_keyword_ok"] = lambda T: _sin(T)(x=T.zeros(1)).tolist()
C["call_list_for_tensor"] = lambda T: _sin(T)([1.0])
C["call_float_for_tensor"] = lambda T: _sin(T)(1.0)
C["call_none_for_tensor"] = lambda T: _sin(T)(None)       # torch passes None on: the body fails


def _kwonly(T):
    def f(x: T.Tensor, *, n: int) -> T.Tensor:
        return x * n
    return _op(T, f)


C["call_keyword_only_by_position"] = lambda T: _kwonly(T)(T.ones(1), 2)
C["call_keyword_only_ok"] = lambda T: _kwonly(T)(T.ones(1), n=3).tolist()
_INT = lambda T: int            # noqa: E731
_FLOAT = lambda T: float        # noqa: E731
_INTS = lambda T: List[int]     # noqa: E731
_mul = lambda x, a: x * a       # noqa: E731
for _lab, (_ann, _v) in {"int_given_float": (_INT, 1.5), "int_given_str": (_INT, "a"), "int_given_none": (_INT, None),
                         "int_given_huge": (_INT, 2 ** 70), "float_given_str": (_FLOAT, "a"),
                         "float_given_complex": (_FLOAT, 1j), "float_given_none": (_FLOAT, None),
                         "int_list_given_int": (_INTS, 2), "int_list_given_floats": (_INTS, [1.5]),
                         "int_list_given_str": (_INTS, "ab"), "str_given_int": (lambda T: str, 1),
                         "dtype_given_str": (lambda T: T.dtype, "float32"), "dtype_given_type": (lambda T: T.dtype, float),
                         "device_given_int": (lambda T: T.device, 0),
                         "optional_tensor_given_int": (lambda T: Optional[T.Tensor], 3),
                         "tensor_list_given_tensor": (lambda T: List[T.Tensor], "T"),
                         "tensor_list_with_none": (lambda T: List[T.Tensor], "TN"),
                         "scalar_given_str": (lambda T: typing.Union[int, float, bool], "a"),
                         "scalar_given_tensor": (lambda T: typing.Union[int, float, bool], "t")}.items():
    def _case(T, ann=_ann, v=_v):
        v = {"T": T.ones(1), "TN": [T.ones(1), None], "t": T.tensor(2.)}.get(v, v) if isinstance(v, str) else v
        return _with(T, ann)(T.ones(1), v)
    C[f"arg_{_lab}"] = _case
for _lab, (_ann, _v, _body) in {"int_given_bool": (_INT, True, _mul), "int_given_tensor": (_INT, "t2", _mul),
                                "float_given_int": (_FLOAT, 2, _mul), "int_list_given_tuple": (_INTS, (1, 2), None),
                                "str_given_bytes": (lambda T: str, b"a", None),
                                "scalar_given_complex": (lambda T: typing.Union[int, float, bool], 2j, _mul),
                                "optional_tensor_given_none": (lambda T: Optional[T.Tensor], None, None),
                                "device_given_str": (lambda T: T.device, "cpu", None)}.items():
    def _case(T, ann=_ann, v=_v, body=_body):
        v = T.tensor([2]) if v == "t2" else v
        return _with(T, ann, body or (lambda x, a: x.clone()))(T.ones(1), v).tolist()
    C[f"arg_{_lab}_ok"] = _case
C["arg_device_given_bad_str"] = lambda T: _with(T, lambda T: T.device)(T.ones(1), "bogus")


# ---- custom_op: results checked against the schema
def _returning(T, value, ret=None):
    def f(x):
        return value(T, x)
    f.__annotations__ = {"x": T.Tensor, "return": T.Tensor if ret is None else ret(T)}
    return _op(T, f)(T.ones(1))


_PAIR = lambda T: Tuple[T.Tensor, T.Tensor]   # noqa: E731
C["result_int_for_tensor"] = lambda T: _returning(T, lambda T, x: 3)
C["result_list_for_tensor"] = lambda T: _returning(T, lambda T, x: [x + 1])
C["result_none_for_tensor_ok"] = lambda T: _returning(T, lambda T, x: None)
C["result_one_for_pair"] = lambda T: _returning(T, lambda T, x: (x + 1,), _PAIR)
C["result_tensor_for_pair"] = lambda T: _returning(T, lambda T, x: x + 1, _PAIR)
C["result_int_in_pair"] = lambda T: _returning(T, lambda T, x: (x + 1, 3), _PAIR)
C["result_list_for_pair_ok"] = lambda T: _returning(T, lambda T, x: [x + 1, x + 2], _PAIR)
C["result_tensor_for_none"] = lambda T: _returning(T, lambda T, x: x + 1, lambda T: None)
C["result_float_for_int"] = lambda T: _returning(T, lambda T, x: 1.5, lambda T: int)
C["result_tensor_for_list"] = lambda T: _returning(T, lambda T, x: x + 1, lambda T: List[T.Tensor])
C["result_input_itself"] = lambda T: _returning(T, lambda T, x: x)


# ---- custom_op(schema=...), Library and torch.library.define
def _schema_op(T, s):
    def f(x, y):
        return x + y
    return T.library.custom_op(_name(T), mutates_args=(), schema=s)(f)


C["schema_only_a_name"] = lambda T: _schema_op(T, "garbage")
C["schema_unknown_type"] = lambda T: _schema_op(T, "(Tensoor x, Tensor y) -> Tensor")
C["schema_ok"] = lambda T: _schema_op(T, "(Tensor x, Tensor y) -> Tensor")(T.ones(1), T.ones(1)).tolist()


def _lib(T, kind="FRAGMENT"):
    lib = T.library.Library(f"r56{'t' if T is torch else 'g'}L{next(_N)}", kind)
    _KEEP.append(lib)
    return lib


C["library_kind_unknown"] = lambda T: T.library.Library("r56kind", "BAD")
C["library_kind_lowercase"] = lambda T: T.library.Library("r56kind", "def")
C["library_namespace_int"] = lambda T: T.library.Library(3, "FRAGMENT")
C["library_def_twice"] = lambda T: [T.library.Library(f"r56def{'t' if T is torch else 'g'}", "DEF") for _ in range(2)]
for _s in ["garbage(", "foo(Tensor x)", "foo(Tensr x) -> Tensor", "", "(Tensor x) -> Tensor", "foo(Tensor x) ->",
           "foo(Tensor x,) -> Tensor", "foo(Tensor x, int y=1.5.3) -> Tensor", "foo(int x=[1,2]) -> Tensor",
           "other::foo(Tensor x) -> Tensor"]:
    C[f"define[{_s}]"] = (lambda s: lambda T: _lib(T).define(s))(_s)
for _s in ["foo.ov(Tensor x, *, int n=1) -> Tensor", "foo(Tensor(a!) x) -> Tensor(a!)",
           "foo(int[2] x, Tensor? y, Tensor?[] z, int[]? w) -> (Tensor a, Tensor b)", "foo(Tensor x) -> ()",
           "foo(Tensor x, float a=-1e-3, str s='m', bool b=True, ScalarType? d=None) -> Tensor"]:
    C[f"define[{_s}]_ok"] = (lambda s: lambda T: _lib(T).define(s))(_s)


def _define_twice(T):
    lib = _lib(T)
    lib.define("foo(Tensor x) -> Tensor")
    lib.define("foo(Tensor x) -> Tensor")


C["define_twice"] = _define_twice


def _impl(T, key, define=True):
    lib = _lib(T)
    if define:
        lib.define("foo(Tensor x) -> Tensor")
    lib.impl("foo", lambda x: x * 2, key)


C["impl_unknown_dispatch_key"] = lambda T: _impl(T, "NotAKey")
C["impl_lowercase_dispatch_key"] = lambda T: _impl(T, "cpu")
C["impl_before_define_ok"] = lambda T: _impl(T, "CPU", define=False)
C["library_define_no_parens"] = lambda T: T.library.define(_name(T), "Tensor x")
C["library_define_bad_qualname"] = lambda T: T.library.define("noqual", "(Tensor x) -> Tensor")
C["library_define_bad_type"] = lambda T: T.library.define(_name(T), "(Tensr x) -> Tensor")


def _lib_op(T, schema="foo(Tensor x, int n=2) -> Tensor", body=lambda x, n=2: x * n, key="CPU"):
    lib = _lib(T)
    lib.define(schema)
    lib.impl("foo", body, key)
    return getattr(T.ops, lib.ns).foo


C["lib_op_ok"] = lambda T: _lib_op(T)(T.ones(2)).tolist()
C["lib_op_keyword_ok"] = lambda T: _lib_op(T)(T.ones(2), n=3).tolist()
C["lib_op_too_many"] = lambda T: _lib_op(T)(T.ones(2), 3, 4)
C["lib_op_float_for_int"] = lambda T: _lib_op(T)(T.ones(2), 2.5)
C["lib_op_missing"] = lambda T: _lib_op(T)()
C["lib_op_implicit_float_for_int"] = lambda T: _lib_op(T, key="CompositeImplicitAutograd")(T.ones(2), 2.5)
C["lib_op_returns_int"] = lambda T: _lib_op(T, body=lambda x, n=2: 3)(T.ones(2))
C["lib_op_keyword_only_by_position"] = lambda T: _lib_op(T, "foo(Tensor x, *, int n=2) -> Tensor",
                                                         lambda x, *, n=2: x * n)(T.ones(2), 3)
C["lib_op_fixed_int_list_given_int_ok"] = lambda T: _lib_op(T, "foo(Tensor x, int[1] n) -> Tensor",
                                                            lambda x, n: x.sum(n))(T.ones(2, 2), 0).tolist()
C["lib_op_int_list_given_int"] = lambda T: _lib_op(T, "foo(Tensor x, int[] n) -> Tensor",
                                                   lambda x, n: x.sum(n))(T.ones(2, 2), 0)
C["lib_op_optional_tensor_list_ok"] = lambda T: _lib_op(T, "foo(Tensor?[] x) -> Tensor",
                                                        lambda x: x[0] * 2)([T.ones(2), None]).tolist()
C["lib_op_two_results_given_one"] = lambda T: _lib_op(T, "foo(Tensor x) -> (Tensor, Tensor)", lambda x: x + 1)(T.ones(2))
C["lib_op_no_result_given_tensor"] = lambda T: _lib_op(T, "foo(Tensor x) -> ()", lambda x: x + 1)(T.ones(2))
C["lib_op_float_result_given_str"] = lambda T: _lib_op(T, "foo(Tensor x) -> float", lambda x: "a")(T.ones(2))
C["lib_op_defaults_ok"] = lambda T: _lib_op(T, "foo(Tensor x, float a=0.5, str s='mm', int[] d=[0]) -> Tensor",
                                            lambda x, a=0.5, s="mm", d=(0,): x.sum(d) * a * len(s))(T.ones(2, 2)).tolist()


def _overloaded(T):
    lib = _lib(T)
    lib.define("foo(Tensor x) -> Tensor")
    lib.define("foo.scaled(Tensor x, float s) -> Tensor")
    lib.impl("foo", lambda x: x * 2, "CPU")
    lib.impl("foo.scaled", lambda x, s: x * s, "CPU")
    return getattr(T.ops, lib.ns).foo


C["lib_op_overload_default_ok"] = lambda T: _overloaded(T)(T.ones(1)).tolist()
C["lib_op_overload_default_attr_ok"] = lambda T: _overloaded(T).default(T.ones(1)).tolist()
C["lib_op_overload_by_name_ok"] = lambda T: _overloaded(T).scaled(T.ones(1), 3.0).tolist()
C["lib_op_overload_resolved_ok"] = lambda T: _overloaded(T)(T.ones(1), 3.0).tolist()
C["lib_op_overload_no_match"] = lambda T: _overloaded(T)(T.ones(1), "a")
C["lib_op_overload_by_name_missing_arg"] = lambda T: _overloaded(T).scaled(T.ones(1))
C["lib_op_overload_unknown"] = lambda T: _overloaded(T).bogus

# ---- register_* and opcheck
C["register_fake_unknown_name"] = lambda T: T.library.register_fake("r56nope::nothing", lambda x: x)
C["register_autograd_unknown_name"] = lambda T: T.library.register_autograd("r56nope::nothing", lambda c, g: g)
C["register_kernel_before_define_ok"] = lambda T: T.library.register_kernel(_name(T), "cpu", lambda x: x) and None
C["register_fake_not_an_op"] = lambda T: T.library.register_fake(3, lambda x: x)
C["opcheck_unknown_test"] = lambda T: T.library.opcheck(_sin(T), (T.ones(1),), test_utils="bogus")
C["opcheck_unknown_test_in_list"] = lambda T: T.library.opcheck(_sin(T), (T.ones(1),), test_utils=["test_schema", "x"])
C["opcheck_not_an_op"] = lambda T: T.library.opcheck(lambda x: x, (T.ones(1),))
C["opcheck_schema_ok"] = lambda T: T.library.opcheck(_sin(T), (T.ones(1),), test_utils="test_schema")

C["opcheck_custom_op_without_autograd_ok"] = lambda T: T.library.opcheck(
    _sin(T), (T.ones(2, requires_grad=True),), test_utils="test_autograd_registration")


def _opcheck_fake_shape(T):
    op = _sin(T)
    op.register_fake(lambda x: x.new_empty(3))
    return T.library.opcheck(op, (T.ones(2),), test_utils="test_faketensor")


def _opcheck_mutation(T):
    def f(x: T.Tensor) -> None:
        x.add_(1)
    return T.library.opcheck(_op(T, f), (T.ones(2),), test_utils="test_schema")


def _opcheck_cpu_kernel(T):
    op = _lib_op(T, "foo(Tensor x) -> Tensor", lambda x: x.sin())
    return T.library.opcheck(op, (T.ones(2, requires_grad=True),), test_utils="test_autograd_registration")


# opcheck's failures: torch's OpCheckError (a class of its test-internal module; compared by name)
OPCHECK_FAILURES = {"opcheck_fake_kernel_wrong_shape": (_opcheck_fake_shape, "found mismatched tensor metadata"),
                    "opcheck_undeclared_mutation": (_opcheck_mutation, "Argument x is not defined as mutable"),
                    "opcheck_library_cpu_kernel_without_autograd": (
                        _opcheck_cpu_kernel, "does not have an autograd kernel defined at an autograd key")}


@pytest.mark.parametrize("name", list(OPCHECK_FAILURES))
def test_opcheck_failures_raise_opcheck_error(name):
    fn, gist = OPCHECK_FAILURES[name]
    (want, want_msg), (got, got_msg) = outcome(fn, torch), outcome(fn, tracegrad)
    assert want is not None and got is not None and got.__name__ == want.__name__ == "OpCheckError", (want, got)
    assert gist in want_msg and gist in got_msg, got_msg

# ---- torch.profiler
def _profiled(T, **kw):
    with T.profiler.profile(**kw) as p:
        T.ones(2) * 2
    return p


C["profile_events_before_start"] = lambda T: T.profiler.profile().events()
C["profile_key_averages_before_start"] = lambda T: T.profiler.profile().key_averages()
C["profile_export_chrome_trace_before_start"] = lambda T: T.profiler.profile().export_chrome_trace("unused.json")
C["profile_export_stacks_before_start"] = lambda T: T.profiler.profile(with_stack=True).export_stacks("unused.txt")
C["profile_stop_before_start"] = lambda T: T.profiler.profile().stop()


def _step_then_stop(T):
    p = T.profiler.profile(schedule=T.profiler.schedule(wait=1, warmup=1, active=1))
    p.step()        # (torch follows the schedule: this step prepares the trace)
    p.stop()


C["profile_step_before_start_ok"] = _step_then_stop
C["profile_step_before_start_to_record"] = lambda T: T.profiler.profile(
    schedule=T.profiler.schedule(wait=0, warmup=1, active=1)).step()
C["profile_activities_empty"] = lambda T: T.profiler.profile(activities=[])
C["profile_activities_strings"] = lambda T: T.profiler.profile(activities=["cpu"])
C["profile_activities_str"] = lambda T: T.profiler.profile(activities="CPU")
C["profile_activities_mixed"] = lambda T: T.profiler.profile(activities=[T.profiler.ProfilerActivity.CPU, "cpu"])
C["profile_activities_int"] = lambda T: T.profiler.profile(activities=3)
C["record_function_int_name"] = lambda T: T.profiler.record_function(3).__enter__()
C["record_function_none_name"] = lambda T: T.profiler.record_function(None).__enter__()
C["record_function_int_args"] = lambda T: T.profiler.record_function("a", args=3).__enter__()
C["record_function_int_name_not_entered_ok"] = lambda T: T.profiler.record_function(3) and None
C["export_stacks_without_with_stack"] = lambda T: _profiled(T).export_stacks("unused.txt")
C["export_stacks_bad_metric"] = lambda T: _profiled(T, with_stack=True).export_stacks("unused.txt", metric="bogus")


# ---- torch.jit: trace runs the function on its example inputs; script/load argument checks
_lin = lambda T: T.nn.Linear(2, 1)                               # noqa: E731
_add = lambda a, b: a + b                                        # noqa: E731
C["jit_trace_without_inputs"] = lambda T: T.jit.trace(_lin(T))
C["jit_trace_kwarg_inputs_list"] = lambda T: T.jit.trace(_lin(T), example_kwarg_inputs=[1])
C["jit_trace_kwarg_inputs_ok"] = lambda T: T.jit.trace(_lin(T), example_kwarg_inputs={"input": T.ones(2)})(
    T.zeros(2)).shape[0]
C["jit_trace_input_of_wrong_shape"] = lambda T: T.jit.trace(_lin(T), T.ones(3))
C["jit_trace_too_few_inputs"] = lambda T: T.jit.trace(_add, (T.ones(1),))
C["jit_trace_int_inputs"] = lambda T: T.jit.trace(lambda a: a + 1, 3)
C["jit_trace_not_callable"] = lambda T: T.jit.trace(3, T.ones(1))
C["jit_trace_list_inputs_ok"] = lambda T: T.jit.trace(_add, [T.ones(1), T.ones(1)])(T.ones(1), T.ones(1)).tolist()
C["jit_trace_tensor_input_ok"] = lambda T: T.jit.trace(_lin(T), T.ones(2))(T.zeros(2)).shape[0]
C["jit_trace_module_inputs_tuple"] = lambda T: T.jit.trace_module(_lin(T), (T.ones(2),))
C["jit_trace_module_unknown_method"] = lambda T: T.jit.trace_module(_lin(T), {"nope": (T.ones(2),)})
C["jit_trace_module_function"] = lambda T: T.jit.trace_module(lambda x: x, {"forward": (T.ones(2),)})
C["jit_trace_module_ok"] = lambda T: T.jit.trace_module(_lin(T), {"forward": (T.ones(2),)})(T.zeros(2)).shape[0]
C["jit_script_int"] = lambda T: T.jit.script(3)
C["jit_script_str"] = lambda T: T.jit.script("abc")
C["jit_script_none"] = lambda T: T.jit.script(None)
C["jit_load_missing_file"] = lambda T: T.jit.load("/nonexistent_dir_r56/m.pt")
C["jit_load_directory"] = lambda T: T.jit.load(os.path.dirname(os.path.abspath(__file__)))

# ---- torch.fx and autograd.Function argument checks torch asserts
C["fx_wrap_int"] = lambda T: T.fx.wrap(3)
C["fx_symbolic_trace_int"] = lambda T: T.fx.symbolic_trace(3)
C["fx_create_node_unknown_op"] = lambda T: T.fx.Graph().create_node("bogus_op", "target")
C["fx_symbolic_trace_ok"] = lambda T: T.fx.symbolic_trace(lambda x: x * 2)(T.ones(1)).tolist()


def _jvp_function(T, save):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            save(ctx, x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2
    fw = T.autograd.forward_ad
    with fw.dual_level():
        return fw.unpack_dual(Double.apply(fw.make_dual(T.ones(2), T.ones(2)))).tangent.tolist()


C["save_for_forward_int"] = lambda T: _jvp_function(T, lambda ctx, x: ctx.save_for_forward(3))
C["save_for_forward_ok"] = lambda T: _jvp_function(T, lambda ctx, x: ctx.save_for_forward(x))

# ---- torch.backends flags: torch's setters take a bool (a precision name, a bool or a pair)


def _set_flag(T, where, name, value):
    holder = {"cudnn": T.backends.cudnn, "mkldnn": T.backends.mkldnn, "matmul": T.backends.cuda.matmul}[where]
    old = getattr(holder, name)
    try:
        setattr(holder, name, value)
        return getattr(holder, name)
    finally:
        try:
            setattr(holder, name, old)
        except Exception:     # noqa: BLE001 -- (mkldnn's allow_tf32 stays None: nothing to restore)
            pass


_FLAG_CASES = {"cudnn": {"enabled": ("x", 1, None), "benchmark": (1,), "deterministic": (0,), "allow_tf32": ("x",),
                         "fp32_precision": ("bogus", 3, "bf16")},
               "mkldnn": {"enabled": ("x",), "deterministic": (1.5,), "allow_tf32": (1,), "fp32_precision": ("x", None)},
               "matmul": {"allow_tf32": (1, "x"), "fp32_precision": ("auto", "bf16"), "allow_fp16_accumulation": (1,),
                          "allow_fp16_reduced_precision_reduction": ("x", (True, False), (1, 2), (True, True, True)),
                          "allow_bf16_reduced_precision_reduction": (None,)}}
for _where, _flags in _FLAG_CASES.items():
    for _flag, _values in _flags.items():
        for _v in _values:
            C[f"flag_{_where}_{_flag}_{_v!r}"] = (lambda w, f, v: lambda T: _set_flag(T, w, f, v))(_where, _flag, _v)
for _where, _flag, _v in (("cudnn", "benchmark", True), ("cudnn", "benchmark_limit", "any"), ("cudnn", "fp32_precision", "tf32"),
                          ("mkldnn", "fp32_precision", "bf16"), ("mkldnn", "allow_tf32", True),
                          ("matmul", "allow_fp16_reduced_precision_reduction", [False]),
                          ("matmul", "allow_bf16_reduced_precision_reduction", (True,)), ("matmul", "fp32_precision", "ieee")):
    C[f"flag_{_where}_{_flag}_{_v!r}_ok"] = (lambda w, f, v: lambda T: _set_flag(T, w, f, v))(_where, _flag, _v)
C["flag_matmul_unknown_read"] = lambda T: T.backends.cuda.matmul.bogus
C["flag_matmul_unknown_set"] = lambda T: setattr(T.backends.cuda.matmul, "bogus", 1)
C["flag_cudnn_flags_str"] = lambda T: T.backends.cudnn.flags(enabled="x").__enter__()
C["flag_cudnn_set_flags_int"] = lambda T: T.backends.cudnn.set_flags(_benchmark=1)
C["flag_mkldnn_set_flags_int_tf32"] = lambda T: T.backends.mkldnn.set_flags(_allow_tf32=1)

# ---- nn.attention.sdpa_kernel: its argument, and a call no allowed CPU backend runs
_SDPA_CASES = {"4d": lambda T: [T.ones(1, 1, 2, 4)] * 3, "3d": lambda T: [T.ones(1, 2, 4)] * 3,
               "head_sizes": lambda T: [T.ones(1, 1, 2, 4), T.ones(1, 1, 2, 4), T.ones(1, 1, 2, 3)],
               "broadcast": lambda T: [T.ones(2, 1, 2, 4), T.ones(1, 1, 2, 4), T.ones(1, 1, 2, 4)]}


def _sdpa_under(T, backends, inputs="4d", **kw):
    B = T.nn.attention.SDPBackend
    with T.nn.attention.sdpa_kernel([getattr(B, b) for b in backends]):
        return T.nn.functional.scaled_dot_product_attention(*_SDPA_CASES[inputs](T), **kw).tolist()


for _arg in ("math", 3, None, "tuple", "set"):
    C[f"sdpa_kernel_{_arg}"] = (lambda a: lambda T: T.nn.attention.sdpa_kernel(
        {"tuple": (T.nn.attention.SDPBackend.MATH,), "set": {T.nn.attention.SDPBackend.MATH}}.get(a, a)).__enter__())(_arg)
C["sdpa_no_backend"] = lambda T: _sdpa_under(T, [])
C["sdpa_efficient_only"] = lambda T: _sdpa_under(T, ["EFFICIENT_ATTENTION"])
C["sdpa_cudnn_and_efficient"] = lambda T: _sdpa_under(T, ["CUDNN_ATTENTION", "EFFICIENT_ATTENTION"])
C["sdpa_flash_only_3d"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION"], "3d")
C["sdpa_flash_only_head_sizes"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION"], "head_sizes")
C["sdpa_flash_only_broadcast"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION"], "broadcast")
C["sdpa_flash_only_dropout"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION"], dropout_p=0.5)
C["sdpa_flash_only_ok"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION"], is_causal=True)
C["sdpa_math_3d_ok"] = lambda T: _sdpa_under(T, ["MATH"], "3d")
C["sdpa_flash_and_math_broadcast_ok"] = lambda T: _sdpa_under(T, ["FLASH_ATTENTION", "MATH"], "broadcast")

# ---- torch.accelerator without one (torch here is a CPU build: only where tracegrad has no GPU either)
if not tracegrad.cuda.is_available():
    C["accelerator_current_device_index"] = lambda T: T.accelerator.current_device_index()
    C["accelerator_set_device_index_0"] = lambda T: T.accelerator.set_device_index(0)
    C["accelerator_set_device_index_minus_1_ok"] = lambda T: T.accelerator.set_device_index(-1)
    C["accelerator_synchronize"] = lambda T: T.accelerator.synchronize()
    C["accelerator_synchronize_cpu"] = lambda T: T.accelerator.synchronize("cpu")
    C["accelerator_device_index_0"] = lambda T: T.accelerator.device_index(0).__enter__()
    C["accelerator_device_index_none_ok"] = lambda T: T.accelerator.device_index(None).__enter__() and None
    C["accelerator_current_check_available_ok"] = lambda T: T.accelerator.current_accelerator(check_available=True)

GIST = {
    "name_hyphen": "expected eof",
    "name_prim_namespace": "reserved namespace",
    "mutates_args_str": "mutates_args must either be a sequence",
    "mutates_args_int_param": "only Tensors or collections of Tensors can be mutated",
    "device_types_with_index": "to not have a device index",
    "param_dict": "has unsupported type",
    "param_list_default": "unsupported default value type",
    "return_str": "Return has unsupported type",
    "return_unannotated": "No return type annotation",
    "call_missing_argument": "is missing value for argument 'x'",
    "call_extra_positional": "expected at most 1 argument(s) but received 2 argument(s)",
    "call_keyword_only_by_position": "takes 1 positional argument(s) but 2 was/were given",
    "arg_int_given_float": "Expected a value of type 'int' for argument 'a' but instead found type 'float'",
    "arg_int_list_given_int": "Expected a value of type 'List[int]'",
    "arg_optional_tensor_given_int": "Expected a value of type 'Optional[Tensor]'",
    "arg_scalar_given_tensor": "Expected a value of type 'number'",
    "result_int_for_tensor": "Unable to cast 3 to Tensor",
    "result_one_for_pair": "is not an instance of 'sequence'",
    "result_input_itself": "must not also be an input",
    "schema_only_a_name": "only the operator name was given",
    "schema_unknown_type": "unknown type specifier",
    "define[foo(Tensor x)]": "expected arrow",
    "define[other::foo(Tensor x) -> Tensor]": "does not match namespace",
    "define_twice": "with the same name and overload name multiple times",
    "lib_op_overload_no_match": "failed to match any schema",
    "library_def_twice": "Only a single TORCH_LIBRARY can be used to register the namespace",
    "impl_unknown_dispatch_key": "could not parse dispatch key: NotAKey",
    "library_define_no_parens": "expected schema to look like",
    "opcheck_unknown_test": "expected test_utils to be subset of",
    "profile_events_before_start": "Profiler must be initialized before accessing events",
    "profile_key_averages_before_start": "Profiler must be initialized before getting key averages",
    "profile_stop_before_start": "Profiler must be initialized before stopping trace",
    "profile_activities_empty": "No valid profiler activities found",
    "record_function_int_name": "Expected a value of type 'str' for argument 'name'",
    "export_stacks_without_with_stack": "requires with_stack=True",
    "export_stacks_bad_metric": "metric should be one of",
    "jit_trace_without_inputs": "example_kwarg_inputs should be a dict",
    "jit_trace_module_inputs_tuple": "expected a dictionary of (method_name, input) pairs",
    "jit_script_int": "is a built-in class",
    "jit_load_missing_file": "does not exist",
    "jit_load_directory": "is a directory",
    "fx_wrap_int": "Unsupported type for global function",
    "fx_create_node_unknown_op": "is not in _legal_ops",
    "save_for_forward_int": "save_for_forward expects all arguments to be tensors",
}
GIST.update({"flag_cudnn_benchmark_1": "set_benchmark_cudnn expects a bool, but got int",
             "flag_matmul_fp32_precision_'auto'": "Unknown precision: auto",
             "flag_cudnn_fp32_precision_'bf16'": "does not support precision 'bf16'",
             "flag_matmul_allow_fp16_reduced_precision_reduction_(True, False)": "allow_splitk=False is not supported",
             "flag_matmul_unknown_read": "Unknown attribute bogus",
             "sdpa_kernel_tuple": "Backend must be an instance of SDPBackend or a list of SDPBackend instances",
             "sdpa_efficient_only": "No viable backend for scaled_dot_product_attention was found",
             "sdpa_flash_only_3d": "No available kernel"})
if not tracegrad.cuda.is_available():
    GIST["accelerator_synchronize"] = "Cannot access accelerator device when none is available"

test_same_class_as_torch, test_message_gist = table_tests(C, GIST, torch, tracegrad)
test_accepted_value_matches_torch = value_test(C, [k for k in C if k.endswith("_ok")], torch, tracegrad)


def test_profile_export_stacks_writes_collapsed_stacks(tmp_path):
    """tracegrad's ``export_stacks`` (torch's own CPU events carry no stack to compare with):
    every line is frames outermost first, ';'-joined, then a positive integer."""
    with tracegrad.profiler.profile(with_stack=True) as p:
        tracegrad.ones(2).exp()
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines and all(" " not in ln.rsplit(" ", 1)[0] and int(ln.rsplit(" ", 1)[1]) > 0 for ln in lines)
    assert any("test_profile_export_stacks_writes_collapsed_stacks" in ln for ln in lines)
