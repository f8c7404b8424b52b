"""Round-28 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository's test/dynamo/test_misc.py (MiscTests): the cases earlier rounds (14d,
17, 18) did not take -- Python flags and packed argument lists, exceptions raised with a tensor's
text, in-place ops on fresh tensors and on Python numbers, shape arithmetic and comparisons in
Python, attributes (``.grad`` and custom names) set on inputs and on tensors made inside, user
classes with ``__radd__``/``__setattr__``/``__getattr__``, ``abs`` on tensors and numbers, a
manager object returned with a tensor it stored.

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` on several calls
with fresh inputs (``_dynamo_port.check``/``compare``): outputs, grads and the Python state the
function changes must agree on every call. The programs are written here in our own code at tiny
shapes and keep the construct the torch test checks. Adapted: torch's tests count frames and ops
(``standard_test``); here only what a user observes is compared, plus the number of programs
traced where the original's point is a recompile. Where torch's fullgraph=True traces a write
tracegrad cannot repeat (an append to a dict subclass's own attribute), the port compiles without
fullgraph and checks the eager fallback's result.

Found and fixed here:
- ``hasattr(x, "test")``/``x.scale`` on a tensor argument read the stand-in, which had none of
  the caller's attributes: the branch was frozen at the first trace (a tensor with the attribute
  ran the program traced without it), and a read raised in the trace. A tensor argument's own
  attributes are now set on its stand-in and key the program (compiler.py NOTE [argument
  attributes]; region.py).
- Attributes the function sets on a tensor argument (``x.offloading_activation = flag``) were a
  graph break (fullgraph raised); numbers and strings are now set again on the caller's tensor
  after every run (region.py NOTE [attributes set on arguments]).
- ``y.grad = x`` on a result made inside was lost (the result came back with ``.grad`` None); it
  now comes back as a retained grad does (region.py, NOTE [retained grads of results]).
- ``d.tracker.append(1)`` on a dict/list subclass argument's own attribute ran once, in the
  trace: such an object's attributes were not watched (only its items). Now they are Python state
  like a plain object's, and the call runs eagerly (pystate.py ``effects_signature``).
- ``x * len(repr(config))``: what ``__repr__`` read was not guarded, so a changed ``config.name``
  ran the first trace's length. ``repr``/``str``/``format`` named by the code, or an f-string
  field in it, now reach ``__repr__``/``__str__``/``__format__`` (pystate.py ``_object_names``).
- ``foo.x`` through a user data descriptor storing ``foo._x`` was frozen: a descriptor's
  ``__get__`` is now followed like a property's getter (pystate.py ``_getter``).
- A deque or set argument the function changed (``q.pop()``, ``s.add(3)``) was changed by the
  abandoned trace and again by the eager rerun (the deque popped empty: IndexError), or, for a
  set keyed by value, the program ran without the add. Such an argument is now Python state the
  trace puts back, and the call runs eagerly (pystate.py ``_python_refs``).
- ``tracegrad.fft(x)`` said "'_WatchedModule' object is not callable" where torch says
  "'module' object is not callable" (_state.py).
Left: a helper function that formats the object (``_text_of(config)``) is not followed (strict
xfail in test_repr).
"""
import pytest

import tracegrad
from ._dynamo_port import CALLS, check, compare, rand, same

torch = pytest.importorskip("torch")


def _x(T, i, *shape, rg=False, seed=0):
    return rand(T, i, *(shape or (2, 3)), rg=rg, seed=seed)


def _xy(T, i):
    return _x(T, i, 3, 4), _x(T, i, 3, 4, seed=5)


# ---- MiscTests: Python values around tensors ---------------------------------------------------

def test_boolarg():
    # MiscTests.test_boolarg: a Python flag (True, False, None) picks the branch; one program
    # per flag value, and the flag switching back reuses the first
    def build(T):
        def boolarg(a, b, flag):
            if flag:
                return a - b
            return b - a
        return boolarg
    flags = [True, False, None, True, False, None]
    f = check(build, lambda T, i: (*_xy(T, i), flags[i]), calls=len(flags))
    assert f.stats["graph_breaks"] == [], f.stats
    assert f.stats["traces"] <= 3, f.stats


def test_callpacked():
    # MiscTests.test_callpacked: the arguments come packed in one list or tuple and are unpacked
    def build(T):
        def call_packed(args):
            a, b, c = args
            return a - b * c
        return call_packed

    def args(T, i):
        a, b = _xy(T, i)
        c = _x(T, i, 3, 4, seed=9)
        return ([a, b, c] if i % 2 == 0 else (a, b, c),)
    check(build, args, calls=6)


def test_raises():
    # MiscTests.test_raises: the function computes, then raises the class it was given with the
    # tensor's text; the compiled call raises the same class with the same message
    def fn_of(T):
        def fn(a, b, c, cls):
            x = a + b - c * 10
            raise cls(str(x.sum().item()))
        return fn
    cf = tracegrad.compile(fn_of(tracegrad))
    ef = fn_of(torch)
    for i in range(CALLS):
        cls = (AssertionError, ValueError)[i % 2]
        msgs = []
        for T, f in ((torch, ef), (tracegrad, cf)):
            a, b = _xy(T, i)
            with pytest.raises(cls) as info:
                f(a, b, _x(T, i, 3, 4, seed=3), cls)
            msgs.append(float(str(info.value)))
        assert msgs[1] == pytest.approx(msgs[0], rel=1e-4, abs=1e-4)


def test_module_not_callable():
    # MiscTests.test_module_not_callable: calling the ``fft`` module itself is a TypeError with
    # Python's own text, compiled as eagerly
    def fn_of(T):
        def fn(x):
            return T.fft(x)
        return fn
    x = tracegrad.ones(3)
    with pytest.raises(TypeError, match="'module' object is not callable"):
        fn_of(torch)(torch.ones(3))
    with pytest.raises(TypeError, match="'module' object is not callable"):
        tracegrad.compile(fn_of(tracegrad))(x)


def test_inplace():
    # MiscTests.test_inplace: a fresh ``empty`` filled by ``copy_`` then updated in place
    def build(T):
        def inplace1(a, b):
            o = T.empty((3, 4))
            o.copy_(a)
            o -= b
            return o
        return inplace1
    check(build, lambda T, i: (_x(T, i, 3, 4, rg=True), _x(T, i, 3, 4, seed=4, rg=True)),
          backward=True)


def test_inplace_desugaring():
    # MiscTests.test_inplace_desugaring: ``+=``/``-=`` on a Python int with a tensor on the right
    # make new tensors (int + tensor, int - tensor)
    def build(T):
        def inplace_on_literals(y):
            x0 = 1
            x0 += y
            x1 = 1
            x1 -= y
            return x0, x1
        return inplace_on_literals
    check(build, lambda T, i: (_x(T, i, rg=True),), backward=True)


@pytest.mark.parametrize("query", ["size", "shape"])
def test_unpack4_unpack5(query):
    # MiscTests.test_unpack4 (``a.size()``) and test_unpack5 (``a.shape``): the sliced sizes,
    # unpacked into Python ints, shape a fresh tensor that ``copy_`` fills
    def build(T):
        def unpack(a, b):
            a = a[:2, :]
            b = b[:2, :]
            x, y = a.size() if query == "size" else a.shape
            o = T.empty((x, y))
            o.copy_(a / b)
            return o
        return unpack
    check(build, lambda T, i: (_x(T, i, 4, 3, rg=True), _x(T, i, 4, 3, seed=2).abs() + 1),
          backward=True)


def test_matmul1():
    # MiscTests.test_matmul1: the ``@`` operator
    check(lambda T: (lambda a, b: a @ b),
          lambda T, i: (_x(T, i, 2, 3, rg=True), _x(T, i, 3, 4, seed=1, rg=True)), backward=True)


def test_int_shape_binops():
    # MiscTests.test_int_shape_binops: Python arithmetic on a size with the int on the left
    def build(T):
        def fn(x):
            y = 15 - x.shape[0]
            y = 4 + y
            y = 5 * y
            y = 2 % y
            y = 3 ** y
            y = 10 // y
            y = pow(2, y)
            y = 10 / y
            return x + y
        return fn
    check(build, lambda T, i: (_x(T, i, 3 + i % 2, 2),))


def test_shape_int_inplace_binops():
    # MiscTests.test_shape_int_inplace_binops: augmented assignments on a size
    def build(T):
        def fn(x):
            p = x.shape[0]
            p += 2
            p -= 2
            p **= 2
            p /= 2
            p *= 2
            p //= 2
            p %= 2
            return x + p
        return fn
    check(build, lambda T, i: (_x(T, i, 3 + i % 2, 2),))


def test_int_shape_inplace_binops():
    # MiscTests.test_int_shape_inplace_binops: augmented assignments on an int by a size
    def build(T):
        def fn(x):
            p = x.shape[0]
            out = []
            for op in ("+", "-", "**", "/", "*", "//", "%"):
                y = 2
                if op == "+":
                    y += p
                elif op == "-":
                    y -= p
                elif op == "**":
                    y **= p
                elif op == "/":
                    y /= p
                elif op == "*":
                    y *= p
                elif op == "//":
                    y //= p
                else:
                    y %= p
                out.append(x + y)
            return out
        return fn
    check(build, lambda T, i: (_x(T, i, 3 + i % 2, 2),))


@pytest.mark.parametrize("side", ["int_int", "shape_int", "int_shape"])
def test_int_comparisons(side):
    # MiscTests.test_int_int_comparisons / test_shape_int_comparisons /
    # test_int_shape_comparisons: an if/elif chain over ``!= < > >= <= ==`` between ints or a
    # size and an int (constant left or right); the size changes between calls
    def build(T):
        def fn(x):
            a = x.shape[0] if side != "int_int" else 2
            b = 3
            if side == "int_shape":
                a, b = b, a
            if a != b:
                out = 1 if a < b else 3
            elif a < b or a > b:
                out = 5
            elif a >= b and a <= b and a == b:
                out = 2
            else:
                out = 7
            return x + out
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i % 3, 2),), calls=6)


def test_param_shape_binops():
    # MiscTests.test_param_shape_binops: a module's forward does Python arithmetic on its
    # parameter's size and the input's size (param first)
    def build(T, wrap):
        class MyModule(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.param = T.nn.Parameter(T.ones(7))

            def forward(self, x):
                p = self.param.shape[0]
                y = p - x.shape[0]
                y = p + y
                y = p * y
                y = p % y
                y = p ** y
                y = p // y
                y = pow(p, y)
                y = p / y
                return x * self.param[:x.shape[0]] + y
        mod = MyModule()
        f = wrap(mod)

        def run(i):
            x = _x(T, i, 3)
            out = f(x)
            out.sum().backward()
            return out, mod.param.grad
        return run
    compare(build)


def test_user_defined_binop():
    # MiscTests.test_user_defined_binop: a user object's ``__radd__`` called with a size
    class MyClass:
        def __init__(self, value):
            self.value = value

        def __radd__(self, other):
            return self.value + other

    def build(T):
        def fn(x, c):
            y = x.shape[0] + c
            return x + y
        return fn
    check(build, lambda T, i: (_x(T, i, 3), MyClass(4 + i % 2)))


@pytest.mark.parametrize("kind", ["list", "shape", "tuple"])
@pytest.mark.parametrize("op", ["eq", "ne"])
def test_compare_shapes(kind, op):
    # MiscTests.test_compare_shapes_eq / _neq / _tuple_eq / _tuple_neq: two sizes (as lists, as
    # ``torch.Size`` or as tuples) compared in Python pick the result; the second argument's
    # shape matches the first on some calls only
    def build(T):
        def fn(a, b):
            if kind == "list":
                x, y = list(a.unsqueeze(-1).shape), list(b.unsqueeze(-1).shape)
            elif kind == "tuple":
                x, y = tuple(a.unsqueeze(-1).shape), tuple(b.unsqueeze(-1).shape)
            else:
                x, y = a.shape, b.shape
            if (x == y) if op == "eq" else (x != y):
                return a + 1
            return a + 2
        return fn
    check(build, lambda T, i: (_x(T, i, 2, 3), _x(T, i, 2, 3 + i % 2, seed=1)))


def test_compare_shapes_with_constant():
    # MiscTests.test_compare_shapes_with_constant: ``a.shape[0] != 3`` picks the factor; the
    # shape changes, so a new program (torch: a guard failure on the size)
    def build(T):
        def compare_shapes(a):
            if a.shape[0] != 3:
                return a * 4
            return a * 3
        return compare_shapes
    shapes = [(3, 4), (4, 3), (3, 4), (4, 3)]
    f = check(build, lambda T, i: (_x(T, i, *shapes[i]),))
    assert f.stats["traces"] == 2, f.stats


def test_builtin_abs():
    # MiscTests.test_builtin_abs: ``abs`` on tensors (float, int64) and on Python numbers
    def build(T):
        def fn(x, y):
            return abs(x) + abs(y)
        return fn

    def args(T, i):
        if i % 3 == 0:
            return _xy(T, i)
        if i % 3 == 1:
            return -10, T.arange(-4, 6)
        return -0.1 * i, _x(T, i, 5)
    check(build, args, calls=6)


# ---- MiscTests: attributes on tensors and user objects -----------------------------------------

def test_newly_constructed_tensor_attr_mutation():
    # MiscTests.test_newly_constructed_tensor_attr_mutation: a tensor made inside gets ``.grad``
    # (the input) and a Python attribute; both are seen on the returned tensor
    def build(T):
        def f(x):
            y = x + 10
            y.grad = x
            y.foo = 42 + x.shape[0]
            return y
        return f
    cf = tracegrad.compile(build(tracegrad), fullgraph=True)
    for i in range(CALLS):
        ref = build(torch)(_x(torch, i, 2 + i % 2))
        res = cf(_x(tracegrad, i, 2 + i % 2))
        same((ref, ref.grad, ref.foo), (res, res.grad, res.foo), f"call{i}")


@pytest.mark.parametrize("where", ["input", "intermediate"])
def test_tensor_custom_attr_mutation(where):
    # MiscTests.test_input_tensor_custom_attr_mutation / test_intermediate_tensor_custom_attr_
    # mutation: a flag argument stored as a Python attribute on the input or on a result; the
    # flag changes between calls and every call's value must land
    def build(T):
        def f(x, flag):
            if where == "input":
                x.offloading_activation = flag
                return x + 1
            y = x + 1
            y.offloading_activation = flag
            return y
        return f
    fns = [build(torch), tracegrad.compile(build(tracegrad), fullgraph=True)]
    for i in range(CALLS):
        seen = []
        for T, f in zip((torch, tracegrad), fns):
            x = _x(T, i)
            out = f(x, bool(i % 2))
            seen.append((out, (x if where == "input" else out).offloading_activation))
        same(seen[0], seen[1], f"call{i}")


def test_tensor_hasattr():
    # MiscTests.test_tensor_hasattr: ``hasattr(x, "test")`` on the input picks the branch; the
    # attribute appears on one call's input and not the next
    def build(T):
        def fn(x):
            if hasattr(x, "test"):
                return x + 2
            return x + 1
        return fn

    def args(T, i):
        x = _x(T, i)
        if i % 2:
            x.test = None
        return (x,)
    check(build, args, calls=6)


def test_tensor_call_obj_hasattr_view():
    # MiscTests.test_tensor_call_obj_hasattr_view: a tensor method reached by ``getattr`` with a
    # default, then called
    def build(T):
        def fn(x):
            return getattr(x, "view", None)(6) * 2
        return fn
    check(build, lambda T, i: (_x(T, i, rg=True),), backward=True, fullgraph=True)


def test_mro_type_tensor_no_source():
    # MiscTests.test_mro_type_tensor_no_source: the names along ``type(T.ones(...)).__mro__``
    # built into a list and returned with the type
    def build(T):
        def fn(x):
            input_type = type(T.ones(2, 2))
            z = [cls.__name__ for cls in input_type.__mro__]
            return x * 2, input_type is T.Tensor, z[0], z[-1]
        return fn
    check(build, lambda T, i: (_x(T, i),))


def test_tensor_dynamic_method():
    # MiscTests.test_tensor_dynamic_method: a Parameter with a plain function stored on it as an
    # attribute, called through the parameter; the parameter is trained by the compiled step
    def build(T, wrap):
        def add_one(x):
            return x + 1
        t = T.nn.Parameter(T.ones(1))
        t.add_one = add_one
        opt = T.optim.SGD([t], lr=0.1)

        def step(x):
            opt.zero_grad()
            out = t.add_one(t) * x
            out.sum().backward()
            opt.step()
            return out
        step = wrap(step)

        def run(i):
            return step(_x(T, i, 3)), t.detach().clone()
        return run
    compare(build)


def test_shape_unpack():
    # MiscTests.test_shape_unpack: ``a, b = x.size()`` then a product with the size
    check(lambda T: (lambda x: x * x.size()[1]),
          lambda T, i: (_x(T, i, 2, 3 + i % 2, rg=True),), backward=True)


def test_tensor__iter__():
    # MiscTests.test_tensor__iter__: ``x.__iter__()`` walked by hand, each row bumped in place
    # (views of the input: the input changes, and it is compared after the call)
    def build(T):
        def fn(x):
            for y in x.__iter__():
                y.add_(1.0)
            return y, x
        return fn
    check(build, lambda T, i: (_x(T, i, 4, 2),))


def test_tensor_share_memory():
    # MiscTests.test_tensor_share_memory: ``share_memory_()`` on a tensor made inside a forward
    def build(T, wrap):
        class Model(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden_size = 4
                self.num_layers = 2

            def forward(self, x):
                b = x.size(0)
                h = T.ones(self.num_layers, b, self.hidden_size).share_memory_()
                c = T.zeros(self.num_layers, b, self.hidden_size)
                return x + h.sum() + c.sum()
        m = wrap(Model())
        return lambda i: m(_x(T, i, 3, 2))
    compare(build)


def test_empty_list():
    # MiscTests.test_empty_list: ``len(ll) == 0 and not ll and ll is not None`` for an empty list
    # or tuple; a non-empty one gives None
    def build(T):
        def fn(x, ll):
            if len(ll) == 0 and not ll and ll is not None:
                return x + 1
        return fn
    check(build, lambda T, i: (_x(T, i), ([], (), [1], ())[i]))


@pytest.mark.parametrize("func", ["min", "max"])
def test_min_max_over_iterable(func):
    # MiscTests.test_min_max_over_iterable: ``min``/``max`` of a list, an iterator, a tuple and
    # varargs holding sizes
    def build(T):
        fn_ = min if func == "min" else max

        def fn(a, b):
            lst = [a.shape[0] + 1, 4, a.shape[0]]
            return a + (fn_(lst) + fn_(iter(lst)) + fn_(tuple(lst)) + fn_(*lst)) * b
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i, 3), _x(T, i, 3, seed=2)))


def test_fold():
    # MiscTests.test_fold: a Python ``math.sqrt`` constant added to a tensor
    import math
    check(lambda T: (lambda a: a + math.sqrt(63)), lambda T, i: (_x(T, i, rg=True),),
          backward=True)


# ---- MiscTests: Python state read and written --------------------------------------------------

def test_os_environ_get():
    # MiscTests.test_os_environ_get: the branch follows ``os.environ`` read inside; changing the
    # variable between calls changes the result (torch: a recompile)
    import os
    key = "TRACEGRAD_ROUND28_ENV"

    def build(T):
        def fn(x):
            if os.environ.get(key) == "1":
                return x + 1
            return x - 1
        return fn
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    old = os.environ.get(key)
    try:
        for i, v in enumerate(["1", "0", "1", "0", "1"]):
            os.environ[key] = v
            outs = [f(_x(T, i)) for T, f in zip((torch, tracegrad), fns)]
            same(outs[0], outs[1], f"call{i} env={v}")
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def test_os_environ_set_graph_break():
    # MiscTests.test_os_environ_set_graph_break: the function writes ``os.environ``; the write
    # happens on every call (torch: a graph break), the result is eager's
    import os
    key = "TRACEGRAD_ROUND28_ENV_SET"

    def build(T):
        def fn(x, v):
            x = x + 1
            os.environ[key] = v
            return T.sin(x)
        return fn
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    try:
        for i in range(CALLS):
            seen = []
            for T, f in zip((torch, tracegrad), fns):
                os.environ[key] = "start"
                out = f(_x(T, i), str(i))
                seen.append((out, os.environ[key]))
            same(seen[0], seen[1], f"call{i}")
    finally:
        os.environ.pop(key, None)


def test_sys_modules():
    # MiscTests.test_sys_modules: ``sys.modules`` looked up inside (missing names, ``in``, a
    # default), the found modules' functions applied to tensors
    import sys

    def build(T):
        def fn(x, y):
            assert sys.modules.get("round28_no_such_module") is None
            assert "round28_no_such_module_b" not in sys.modules
            op = sys.modules["operator"]
            bi = sys.modules.get("builtins")
            op2 = sys.modules.get("round28_no_such_module_c", op)
            return op.add(x, y), op2.neg(bi.abs(x))
        return fn
    check(build, lambda T, i: (_x(T, i, rg=True), _x(T, i, seed=3, rg=True)), backward=True)


@pytest.mark.parametrize("message", ["none", "lambda", "global"])
def test_check_predicate(message):
    # MiscTests.test_check_compiles_when_predicate_true_* and
    # test_check_raises_at_runtime_when_predicate_false_*: ``torch._check`` on a size, with no
    # message, a message lambda and a lambda formatting a global; true passes, false raises
    # RuntimeError with the message, compiled as eagerly
    msgs = {"none": None, "lambda": lambda: "Shape is not greater than 3",
            "global": lambda: f"{_GLOBAL_INT} is not greater than 3"}

    def build(T):
        def f(x):
            if msgs[message] is None:
                T._check(x.shape[0] > 3)
            else:
                T._check(x.shape[0] > 3, msgs[message])
            return x + 1
        return f
    fns = [build(torch), tracegrad.compile(build(tracegrad), fullgraph=True)]
    for i, n in enumerate([4, 5, 3, 4, 2]):
        if n > 3:
            same(fns[0](_x(torch, i, n)), fns[1](_x(tracegrad, i, n)), f"call{i}")
            continue
        texts = []
        for T, f in zip((torch, tracegrad), fns):
            with pytest.raises(RuntimeError) as info:
                f(_x(T, i, n))
            texts.append(str(info.value))
        if message != "none":
            assert texts[1] == texts[0] == msgs[message]()


_GLOBAL_INT = 1


def test_tensor_attribute_read_changes_between_calls():
    # after MiscTests.test_tensor_hasattr: an attribute of the input read into the math
    # (``x * x.scale``) takes each call's value; a tensor without it raises AttributeError as
    # eagerly. One program per value (numbers key the program as Python scalar arguments do)
    def build(T):
        def fn(x):
            return x * x.scale
        return fn
    scales = [2.0, 3.0, 2.0, 0.5, 3.0]

    def args(T, i):
        x = _x(T, i, rg=True)
        x.scale = scales[i]
        return (x,)
    f = check(build, args, calls=len(scales), backward=True)
    assert f.stats["graph_breaks"] == [], f.stats
    assert f.stats["traces"] <= 3, f.stats
    with pytest.raises(AttributeError):
        f(tracegrad.ones(2, 3))


def test_input_attribute_deleted_and_rebound():
    # after MiscTests.test_input_tensor_custom_attr_mutation: the function rebinds one attribute
    # of its input and deletes another; each call's caller tensor ends with eager's attributes
    def build(T):
        def f(x, k):
            x.tag = x.tag + k
            del x.drop
            return x * 2
        return f
    fns = [build(torch), tracegrad.compile(build(tracegrad), fullgraph=True)]
    for i in range(CALLS):
        seen = []
        for T, f in zip((torch, tracegrad), fns):
            x = _x(T, i)
            x.tag, x.drop = "t", 1
            out = f(x, str(i % 2))
            seen.append((out, x.tag, hasattr(x, "drop")))
        same(seen[0], seen[1], f"call{i}")


def test_assert():
    # MiscTests.test_assert: a failing ``assert`` on shapes raises AssertionError; a passing one
    # leaves the result
    def fn1(x):
        assert x.shape != x.shape
    with pytest.raises(AssertionError):
        tracegrad.compile(fn1)(tracegrad.ones(3))

    def build(T):
        def fn2(x):
            assert x.shape == x.shape
            return x.abs()
        return fn2
    check(build, lambda T, i: (_x(T, i, rg=True),), backward=True)


def test_config_obj():
    # MiscTests.test_config_obj: a config object's ``count`` (loop trip count) and ``val`` read
    # inside; both changed between calls, each new value is used
    class Cfg:
        def __init__(self):
            self.val = 0.5
            self.count = 3

    def build(T, wrap):
        fn = wrap(lambda x, cfg: _add_loop(x, cfg))
        cfg1, cfg2 = Cfg(), Cfg()
        cfg1.val = 1.0

        def run(i):
            v = T.zeros(1)
            v = fn(v, cfg1)
            v = fn(v, cfg2)
            cfg2.count = 1 + i % 2
            v = fn(v, cfg2)
            cfg2.val = 2.0 + i
            return fn(v, cfg2)
        return run
    compare(build)


def _add_loop(x, cfg):
    for _ in range(cfg.count):
        x = x + cfg.val
    return x


def test_config_getattr_default():
    # MiscTests.test_config_getattr_default: ``getattr(cfg, "just_add_7", False)`` with the
    # attribute added, set False and deleted between calls
    class Cfg:
        def __init__(self):
            self.val = 0.5
            self.count = 4

    def fn(x, cfg):
        if getattr(cfg, "just_add_7", False):
            return x + 7
        return _add_loop(x, cfg)

    def build(T, wrap):
        f = wrap(fn)
        cfg = Cfg()

        def run(i):
            outs = [f(T.zeros(1), cfg), f(T.zeros(1), cfg)]
            cfg.just_add_7 = True
            outs += [f(T.zeros(1), cfg), f(T.zeros(1), cfg)]
            cfg.just_add_7 = False
            outs.append(f(T.zeros(1), cfg))
            del cfg.just_add_7
            return outs
        return run
    compare(build)


def test_size_input():
    # MiscTests.test_size_input: a size passed as ``torch.Size``, tuple and list, unpacked
    def build(T):
        def fn(x, s):
            a, b = s
            return x + (a - b)
        return fn

    def args(T, i):
        v = _x(T, i, 2, 3)
        return v, (v.size(), (2, 3), [2, 5], (4, 3))[i]
    check(build, args)


@pytest.mark.parametrize("graph_break", [False, True])
def test_cell_output(graph_break):
    # MiscTests.test_cell_output1 / test_cell_output2: the result goes out through a
    # ``nonlocal`` cell, not the return; with ``graph_break`` a call that needs a concrete value
    # (torch: ``unsupported``, a graph break) comes before the cell is written
    def build(T, wrap):
        out = None

        def fn(a, b):
            nonlocal out
            c = a.sum().item() if graph_break else 0.0
            out = a + b * 10 + c
        f = wrap(fn)

        def run(i):
            r = f(_x(T, i), _x(T, i, seed=1))
            return r, out
        return run
    compare(build)


def test_return_nested_function():
    # MiscTests.test_return_nested_function: the compiled function returns an inner function
    # (defaults, closures over its tensors, a nonlocal it writes), itself then compiled
    def build(T, wrap):
        out = None

        def fn(a, b):
            c = a + b
            d = a + 1.0

            def fn2(f=7, g=9.0):
                nonlocal out
                out = a + b * 10
                return c * f - d * g
            return fn2
        outer = wrap(fn)

        def run(i):
            inner = wrap(outer(_x(T, i), _x(T, i, seed=1)))
            return inner(1.5 + i), inner(), out
        return run
    compare(build)


@pytest.mark.parametrize("how", ["index", "items", "values", "keys", "union"])
def test_tensor_dict(how):
    # MiscTests.test_tensor_dict1 (``inputs["a"] - inputs["b"] * 1.5``), test_tensor_dict2
    # (summing over ``items()``/``values()``/``keys()``) and test_tensor_dict3 (the union of two
    # dicts' keys, ``in`` tests); the dicts' keys change between calls
    def build(T):
        def fn(inputs, other):
            if how == "index":
                return inputs["a"] - inputs["b"] * 1.5
            total = T.zeros(3)
            if how == "items":
                for _, v in inputs.items():
                    total += v
            elif how == "values":
                for v in inputs.values():
                    total += v
            elif how == "keys":
                for k in inputs.keys():
                    total += inputs[k]
            else:
                for k in sorted(inputs.keys() | other.keys()):
                    if k in inputs:
                        total += inputs[k]
                    if k in other:
                        total = total * other[k]
            return total
        return fn

    def args(T, i):
        keys = ("a", "b") if i % 2 == 0 else ("a", "b", "c")
        d = {k: _x(T, i, 3, seed=j) for j, k in enumerate(keys)}
        return d, {"b": _x(T, i, 3, seed=5), "z" if i % 2 else "c": _x(T, i, 3, seed=6)}
    check(build, args)


def test_dictcomp():
    # MiscTests.test_dictcomp: a dict comprehension over the input dict's items, returned
    check(lambda T: (lambda inputs: {k: v + 1 for k, v in inputs.items()}),
          lambda T, i: ({"a": _x(T, i, rg=True), "b": _x(T, i, seed=1, rg=True)},))


@pytest.mark.parametrize("test", ["is_floating_point2", "is_tensor"])
def test_is_floating_point2_is_tensor(test):
    # MiscTests.test_is_floating_point2 (``b.is_floating_point()``) and test_is_tensor
    # (``torch.is_tensor(b)``) pick whether ``b`` is added; ``b`` float, int64 or a number
    def build(T):
        def fn(a, b):
            x = a + 1.0
            if (b.is_floating_point() if test == "is_floating_point2" else T.is_tensor(b)):
                x = x + b
            return x + 2.0
        return fn

    def args(T, i):
        b = (_x(T, i), T.arange(6).reshape(2, 3), _x(T, i, seed=2), T.arange(6).reshape(2, 3))[i]
        return _x(T, i), (3 if test == "is_tensor" and i == 3 else b)
    check(build, args)


def test_is_tensor2():
    # MiscTests.test_is_tensor2: a dict argument (not a tensor) gives a fresh ones tensor, a
    # tensor argument ``x + 1``
    def build(T):
        def fn(x):
            if T.is_tensor(x):
                return x + 1
            return T.ones([2, 3])
        return fn
    check(build, lambda T, i: (_x(T, i) if i % 2 else {"input": _x(T, i)},))


def test_numel():
    # MiscTests.test_numel: ``a.numel()``, ``torch.numel(a)`` and ``a.nelement()`` as numbers
    check(lambda T: (lambda a: (a + a.numel() + T.numel(a), a + a.nelement())),
          lambda T, i: (_x(T, i, 2, 2 + i),))


def test_pair():
    # MiscTests.test_pair: ``nn.modules.utils._pair`` of a size and ``_ntuple(3)(3)`` shape
    # factories
    def build(T):
        def fn(a):
            u = T.nn.modules.utils
            return T.zeros(u._pair(a.size())) + a + T.ones(u._ntuple(3)(3)).sum()
        return fn
    check(build, lambda T, i: (_x(T, i, 2, 3, rg=True),), backward=True)


def test_tensor_item_capture():
    # MiscTests.test_tensor_item_capture / test_tensor_item_no_capture: ``(a + b).sum().item()``
    # returned as a Python float
    def build(T):
        return lambda a, b: (a + b).sum().item()
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        outs = [f(*_xy(T, i)) for T, f in zip((torch, tracegrad), fns)]
        assert type(outs[1]) is float
        assert outs[1] == pytest.approx(outs[0], rel=1e-5)


def test_namedtuple1_namedtuple2():
    # MiscTests.test_namedtuple1 (a namedtuple built inside, read by field and index, returned)
    # and test_namedtuple2 (unpacked, ``hasattr``, ``_fields``)
    import collections
    MyTuple = collections.namedtuple("MyTuple", ["a", "b", "ab"])

    def build(T):
        def fn(a, b, packed):
            tmp = MyTuple(a, b, a + b)
            p, q, r = packed
            if hasattr(packed, "b"):
                q = packed.b + 1
            return MyTuple(tmp.a, tmp[1], tmp.ab + b), p + q + packed[2] + len(packed._fields)
        return fn

    def args(T, i):
        a, b = _xy(T, i)
        return a, b, MyTuple(a * 2, b, a - b)
    check(build, args)


def test_namedtuple3():
    # MiscTests.test_namedtuple3: ``isinstance(packed, MyTuple)`` for a namedtuple and a plain
    # tuple argument
    import collections
    MyTuple = collections.namedtuple("MyTuple", ["a", "b", "ab"])

    def build(T):
        def fn(x, packed):
            return x + 1 if isinstance(packed, MyTuple) else x - 1
        return fn
    check(build, lambda T, i: (_x(T, i), MyTuple(1, 2, 3) if i % 2 else (1, 2, 3)))


def test_namedtuple_with_custom_getitem():
    # MiscTests.test_namedtuple_with_custom_getitem: a typing.NamedTuple whose ``__getitem__``
    # is overridden; only a field is read
    import typing

    class MyTuple(typing.NamedTuple):
        a: object
        b: object

        def __getitem__(self, index):
            return MyTuple(self.a[index], self.b[index])

    check(lambda T: (lambda t: t.a + 1), lambda T, i: (MyTuple(_x(T, i), _x(T, i, seed=1)),),
          fullgraph=True)


@pytest.mark.parametrize("made", ["argument", "inside"])
def test_namedtuple_dynamic_attributes(made):
    # MiscTests.test_namedtuple_source_dynamic_attributes / _sourceless_dynamic_attributes: an
    # attribute (a tensor) set on an instance of a NamedTuple subclass -- passed in or made
    # inside -- which is returned
    import typing

    class MyNamedTuple(typing.NamedTuple):
        a: object
        b: object

    class Sub(MyNamedTuple):
        pass

    def build(T):
        def f(x, tup):
            if tup is None:
                tup = Sub(a=x * 2, b=x.sum())
            tup.c = x + 3.0
            return tup, tup.c
        return f

    def args(T, i):
        x = _x(T, i, 2)
        return x, (Sub(a=_x(T, i, 1), b=_x(T, i, 1, seed=1)) if made == "argument" else None)
    check(build, args)


def test_namedtuple___eq__():
    # MiscTests.test_namedtuple___eq__: a NamedTuple of ints equals the plain tuple
    import typing

    class MyNamedTuple(typing.NamedTuple):
        a: int
        b: int

    check(lambda T: (lambda x: (x.sin(), MyNamedTuple(a=1, b=2) == (1, 2))),
          lambda T, i: (_x(T, i),), fullgraph=True)


@pytest.mark.parametrize("which", ["max", "qr"])
def test_structseq(which):
    # MiscTests.test_structseq1 (``torch.return_types.max((x, y))`` built and returned) and
    # test_structseq2 (``tuple(torch.return_types.qr(...))``)
    def build(T):
        def fn(x, y):
            if which == "max":
                r = T.return_types.max((x, y))
                return r, r.values, r.indices
            return tuple(T.return_types.qr((2 * x, y - 1)))
        return fn
    f = check(build, lambda T, i: (_x(T, i, 3, 2), _x(T, i, 2, 4, seed=1)), fullgraph=True)
    r = f(tracegrad.ones(3, 2), tracegrad.zeros(2, 4))
    if which == "max":
        assert type(r[0]) is tracegrad.return_types.max


def test_structseq_repr():
    # MiscTests.test_structseq_repr: ``repr`` of a ``max(dim=0)`` result taken inside (torch: a
    # graph break); the values are returned and the text stays eager's
    seen = {}

    def build(T, wrap):
        def fn(x):
            result = T.max(x, dim=0)
            seen[T.__name__] = repr(result)
            return result.values
        f = wrap(fn)

        def run(i):
            x = T.tensor([[1.0, 5.0], [3.0, 2.0 + i]])
            out = f(x)
            return out, seen[T.__name__].replace("torch.return_types", "RT").replace(
                "tracegrad.return_types", "RT")
        return run
    compare(build)


@pytest.mark.parametrize("test", ["range_input", "range_with_shape", "range___iter__"])
def test_range(test):
    # MiscTests.test_range_input (a ``range`` argument iterated), test_range_with_shape
    # (``range(1, a.shape[0])`` bumping the input in place) and test_range___iter__
    # (``next(range(3).__iter__())``)
    def build(T):
        def fn(a, rng):
            if test == "range_input":
                x = a
                for i in rng:
                    x = x + i
                return x
            if test == "range_with_shape":
                for _ in range(1, a.shape[0]):
                    a += 1
                return a
            return a + next(range(3).__iter__())
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i % 3, 2), range(i + 1)))


def test_range_iter_side_effects():
    # MiscTests.test_range_iter_side_effects: the function takes ``next`` of an iterator it is
    # passed; the caller's iterator advances on every call
    def build(T, wrap):
        run_ = wrap(lambda x, it: x + next(it))
        it = iter(range(1, 20))

        def run(i):
            return run_(_x(T, i, 1), it), next(it)
        return run
    compare(build)


def test_build_tuple_unpack():
    # MiscTests.test_build_tuple_unpack: ``(*tmp1, *tmp2)`` and ``fn1(a, *args)`` calls
    def fn1(a, b, c):
        return a - b / c

    def build(T):
        def fn(a, b, c):
            args = (*(a,), *(b, c))

            def fn3(a, *rest):
                return fn1(a, *rest)
            return fn1(*args), fn3(a, b, c)
        return fn
    check(build, lambda T, i: (*_xy(T, i), _x(T, i, 3, 4, seed=8).abs() + 1))


def test_list_tuple_mul():
    # MiscTests.test_list_mul / test_list_slice_mul / test_tuple_mul: a Python int argument
    # repeating lists and tuples; nothing tensor-valued, the result follows the int
    def build(T):
        def fn(count, x):
            a = [1, 2, 3]
            return count * [None] * count, count * a[1:] * count, count * (2, 3) * count, x + count
        return fn
    check(build, lambda T, i: (1 + i % 3, _x(T, i)))


def test_tuple_list_iadd_with_shape():
    # MiscTests.test_tuple_mul_with_shape, test_tuple_iadd_with_shape and
    # test_list_iadd_with_shape: tuples and lists of sizes and tensors grown with ``+=``
    def build(T):
        def fn(a):
            n = a.shape[0]
            y = 2 * (n, 3) * 2
            t = (a + n, a - n)
            t += (a - n, a + n)
            t += (2, 3)
            lst = [a + n, a - n]
            lst += [a - n, a + n]
            lst += (a * n, a / n)
            return a + y[4], t, lst
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i % 2, 2, rg=True),), backward=True)


def test_list_iadd_side_effect():
    # MiscTests.test_list_iadd_side_effect: ``a += [b]`` on a list argument, then a graph break;
    # the caller's list grows on every call
    def build(T, wrap):
        def fn(a, b):
            a += [b]
            b.sum().item()
            return a
        f = wrap(fn)

        def run(i):
            a = [1, 2, 3]
            out = f(a, _x(T, i))
            return out, a, out is a
        return run
    compare(build)


def test_class_binop():
    # MiscTests.test_class_binop: ``+`` on two user objects whose ``__add__`` adds their
    # tensors; ``-`` (no ``__sub__``) raises TypeError compiled as eagerly
    class Foo:
        def __init__(self, x):
            self.x = x

        def __add__(self, other):
            return Foo(self.x + other.x)

    def build(T):
        return lambda a, b: (a + b).x
    check(build, lambda T, i: (Foo(_x(T, i)), Foo(_x(T, i, seed=1))))
    with pytest.raises(TypeError):
        tracegrad.compile(lambda a, b: a - b)(Foo(tracegrad.ones(2)), Foo(tracegrad.ones(2)))


def test_user_getattr():
    # MiscTests.test_user_getattr1 (a dict subclass whose ``__getattr__`` reads its items; the
    # item changed between calls) and test_user_getattr2 (class attribute, instance attribute
    # and ``__getattr__`` fallback)
    class MyConfig(dict):
        def __getattr__(self, name):
            return self[name]

    class MyConfig2:
        defined_on_class = 1

        def __init__(self):
            self.defined_on_object = 2

        def __getattr__(self, name):
            return 3

    def build(T, wrap):
        f = wrap(lambda cfg, cfg2, x: x + x + cfg.offset + cfg2.defined_on_class
                 - cfg2.defined_on_object + cfg2.not_defined)
        cfg, cfg2 = MyConfig(offset=5), MyConfig2()

        def run(i):
            cfg["offset"] = 5 + i % 2
            return f(cfg, cfg2, _x(T, i))
        return run
    compare(build)


def test_getset_descriptor():
    # MiscTests.test_getset_descriptor: ``Tensor.shape``'s descriptor passed in and called with
    # ``__get__`` on the input
    def build(T):
        def fn(g, x):
            T.sin(x)
            return tuple(g.__get__(x))
        return fn
    check(build, lambda T, i: (T.Tensor.shape, _x(T, i, 2, 2 + i % 2)))


def test_set_descriptor():
    # MiscTests.test_set_descriptor: a data descriptor whose ``__set__`` adds twice the value to
    # the instance's own entry; the write happens on every call
    class Field:
        def __set__(self, obj, value):
            obj.__dict__["field"] += value * 2

    class Foo:
        field = Field()

        def __init__(self):
            self.__dict__["field"] = 0

    def build(T, wrap):
        def fn(x, foo):
            foo.field = 10
            return x + foo.field
        f = wrap(fn)
        foo = Foo()
        return lambda i: (f(_x(T, i), foo), foo.__dict__["field"])
    compare(build)


@pytest.mark.parametrize("test", ["dict_with_descriptor", "dict_with_slots_and_dict",
                                  "dict_descriptor_interaction", "dict_with_slots"])
def test_object_dict_writes(test):
    # MiscTests.test_dict_with_descriptor, test_dict_with_slots_and_dict,
    # test_dict_descriptor_interaction and test_dict_with_slots: an argument object's
    # ``__dict__`` written directly (beside a descriptor, beside ``__slots__``), or a slot read;
    # the object ends as eagerly after every call
    class MyDescriptor:
        def __get__(self, obj, objtype=None):
            return self if obj is None else obj.__dict__.get("_value", 0)

        def __set__(self, obj, value):
            obj.__dict__["_value"] = value

    class WithDescriptor:
        prop = MyDescriptor()

        def __init__(self):
            self.prop = 42

    class SlottedWithDict:
        __slots__ = ("x", "__dict__")

        def __init__(self, x):
            self.x = x

    class Slotted:
        __slots__ = ("x",)

        def __init__(self, x):
            self.x = x

    class TextDescriptor:
        def __get__(self, obj, objtype=None):
            return self if obj is None else obj.__dict__.get("_internal", "default")

        def __set__(self, obj, value):
            obj.__dict__["_internal"] = f"desc_{value}"

    class WithText:
        desc = TextDescriptor()

    def build(T, wrap):
        def fn(x, obj, i):
            if test == "dict_with_descriptor":
                obj.__dict__["extra"] = 99 + i
                return x + obj.prop + obj.__dict__["extra"]
            if test == "dict_with_slots_and_dict":
                obj.__dict__["custom"] = 100 + i
                return x + obj.x + obj.__dict__["custom"]
            if test == "dict_with_slots":
                return x * obj.x * 2
            obj.desc = "hello"
            before = obj.desc
            obj.__dict__["_internal"] = "direct"
            return x + len(before), obj.desc
        f = wrap(fn)
        obj = {"dict_with_descriptor": WithDescriptor, "dict_with_slots_and_dict": lambda: SlottedWithDict(7),
               "dict_with_slots": lambda: Slotted(5), "dict_descriptor_interaction": WithText}[test]()

        def run(i):
            if test == "dict_with_slots":
                obj.x = 5 + i
            out = f(_x(T, i), obj, i % 2)
            return out, dict(getattr(obj, "__dict__", {}))
        return run
    compare(build)


@pytest.mark.parametrize("test", ["update", "access_pattern"])
def test_mutable_mapping_dict(test):
    # MiscTests.test_mutable_mapping_dict_update / test_mutable_mapping_dict_access_pattern: an
    # OrderedDict subclass's instance ``__dict__`` written inside (a number, then a list created
    # once and appended to on every call)
    import collections

    class Tracked(collections.OrderedDict):
        pass

    def build(T, wrap):
        def fn(d, x):
            if test == "update":
                d.__dict__["custom_attr"] = 42 + x.shape[0]
                return x + d.__dict__["custom_attr"]
            if "tracker" not in d.__dict__:
                d.__dict__["tracker"] = []
            d.__dict__["tracker"].append(1)
            return x * len(d.__dict__["tracker"])
        f = wrap(fn)
        d = Tracked()
        return lambda i: (f(d, _x(T, i)), dict(d.__dict__))
    compare(build)


@pytest.mark.parametrize("test", ["lazy_dict_initialization", "dict_with_property_setter",
                                  "dict_multiple_accesses"])
def test_mutable_mapping_dict_more(test):
    # MiscTests.test_mutable_mapping_lazy_dict_initialization (a cache dict made once in a dict
    # subclass's ``__dict__``, an item written every call), test_mutable_mapping_dict_with_
    # property_setter (a property setter of an OrderedDict subclass writing its ``__dict__``)
    # and test_mutable_mapping_dict_multiple_accesses (entries written from each other)
    import collections

    class Lazy(dict):
        pass

    class PropertyMapping(collections.OrderedDict):
        def __init__(self):
            super().__init__()
            self.__dict__["_value"] = 0

        @property
        def value(self):
            return self.__dict__.get("_value", 0)

        @value.setter
        def value(self, v):
            self.__dict__["_value"] = v

    class Multi(collections.OrderedDict):
        pass

    def build(T, wrap):
        def fn(m, x, i):
            if test == "lazy_dict_initialization":
                if not hasattr(m, "_cache"):
                    m.__dict__["_cache"] = {}
                m.__dict__["_cache"][f"key{i}"] = "value"
                return x + len(m.__dict__["_cache"])
            if test == "dict_with_property_setter":
                m.value = 100 + i
                return x * m.value
            m.__dict__["a"] = 1 + i
            m.__dict__["b"] = m.__dict__["a"] + 1
            m.__dict__["c"] = m.__dict__["b"] + 1
            return x + m.__dict__["a"] + m.__dict__["b"] + m.__dict__["c"]
        f = wrap(fn)
        m = {"lazy_dict_initialization": Lazy, "dict_with_property_setter": PropertyMapping,
             "dict_multiple_accesses": Multi}[test]()

        def run(i):
            out = f(m, _x(T, i), i)
            return out, {k: dict(v) if isinstance(v, dict) else v for k, v in m.__dict__.items()}
        return run
    compare(build)


def test_get_attr_function():
    # MiscTests.test_get_attr_function: ``Tensor.shape.__get__`` (a bound descriptor getter)
    # passed in and called on the input
    check(lambda T: (lambda g, x: (tuple(g(x)), x * 2)),
          lambda T, i: (T.Tensor.shape.__get__, _x(T, i, 2, 2 + i % 2)))


def test_user_getattribute():
    # MiscTests.test_user_getattribute: a class whose ``__getattribute__`` answers from a dict
    # of tensors first; its method reads both kinds of attribute; the dict's tensor is replaced
    # between calls
    class MyObject:
        def __init__(self, a):
            self.custom_dict = {"a": a}
            self.my_number = 42

        def __getattribute__(self, name):
            custom_dict = super().__getattribute__("custom_dict")
            if name in custom_dict:
                return custom_dict[name]
            return super().__getattribute__(name)

        def run(self, x):
            return self.my_number * x + self.a * x

    def build(T, wrap):
        f = wrap(lambda obj, x: obj.run(x))
        obj = MyObject(_x(T, 0, 2, 2, seed=4))

        def run(i):
            if i == 2:
                obj.custom_dict["a"] = _x(T, i, 2, 2, seed=9)
            obj.my_number = 42 + (i == 3)
            return f(obj, _x(T, i, 2, 2))
        return run
    compare(build)


# ---- MiscTests: .grad of arguments, dict and descriptor arguments ------------------------------

def test_grad_none():
    # MiscTests.test_grad_none: ``.grad`` of an argument that has none is assigned inside, then
    # bumped in place; the caller's tensor keeps that grad after every call
    def build(T):
        def fn(x, y):
            x.grad = T.abs(y)
            x.grad.add_(y)
            return T.abs(y)
        return fn
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        seen = []
        for T, f in zip((torch, tracegrad), fns):
            x, y = _x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)
            out = f(x, y)
            seen.append((out, x.grad))
        same(seen[0], seen[1], f"call{i}")


def test_grad_non_none():
    # MiscTests.test_grad_non_none: an argument's existing ``.grad`` bumped in place inside; the
    # same grad tensor object holds the new values
    def build(T):
        def fn(x, y):
            x.grad.add_(y)
            return T.abs(y)
        return fn
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        seen = []
        for T, f in zip((torch, tracegrad), fns):
            x, y = _x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)
            g = T.arange(4.0).reshape(2, 2) * i
            x.grad = g
            out = f(x, y)
            seen.append((out, x.grad, x.grad is g, g))
        same(seen[0], seen[1], f"call{i}")


def test_new_with_int_list():
    # MiscTests.test_new_with_int_list: ``x.new(*x.size())`` (values unset: only the dtype, shape,
    # strides and offset are compared) plus a number
    def fn_of(T):
        return lambda x: x.new(*x.size()) + 5
    cf = tracegrad.compile(fn_of(tracegrad))
    for i in range(CALLS):
        ref = fn_of(torch)(torch.arange(10).view(2, 5))
        res = cf(tracegrad.arange(10).view(2, 5))
        assert (str(res.dtype).split(".")[-1], tuple(res.shape), tuple(res.stride()), res.storage_offset()) == \
            (str(ref.dtype).split(".")[-1], tuple(ref.shape), tuple(ref.stride()), ref.storage_offset())


def test_hasattr_nn_module_guard():
    # MiscTests.test_hasattr_nn_module_guard: ``hasattr(self, "a")`` on a submodule; the
    # submodule is deleted between calls and the forward takes the other branch
    def build(T, wrap):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = T.nn.Linear(3, 3)
                with T.no_grad():
                    self.a.weight.copy_(T.eye(3) * 2)
                    self.a.bias.fill_(0.5)

            def forward(self, x):
                return self.a(x) if hasattr(self, "a") else x
        m = M()
        f = wrap(m)

        def run(i):
            if i == 2:
                del m.a
            return f(_x(T, i, 2, 3))
        return run
    compare(build)


@pytest.mark.parametrize("kind", ["ordered_dict_move_to_end", "custom_dict"])
def test_dict_argument_kinds(kind):
    # MiscTests.test_ordered_dict_move_to_end (an OrderedDict reordered by ``move_to_end``) and
    # test_custom_dict (a ``dict`` subclass): numbers read from the dict argument; torch does
    # not recompile on the second call; here one program serves both, and a changed value is
    # read on the next call
    import collections

    class MyDict(dict):
        pass

    def build(T, wrap):
        f = wrap(lambda x, d: x * d["foo"] * d["bar"])
        if kind == "custom_dict":
            d = MyDict({"foo": 1, "bar": 2})
        else:
            d = collections.OrderedDict({"foo": 1, "bar": 2})
            d.move_to_end("foo")

        def run(i):
            if i == 3:
                d["bar"] = 5
            return f(_x(T, i, 4), d)
        return run
    f = compare(build)
    assert f is not None


def test_iter_type():
    # MiscTests.test_iter_type: ``isinstance(iter([]), list)`` is False
    check(lambda T: (lambda y: y + 1 if isinstance(iter([]), list) else y + 2),
          lambda T, i: (_x(T, i),), fullgraph=True)


def test_descriptor():
    # MiscTests.test_descriptor: a lazy property (a non-data descriptor that caches its value on
    # the instance with ``setattr`` on first read) read by a method; the compiled call reads it
    # first, so the write happens in the compiled call
    class lazy_property:
        def __init__(self, wrapped):
            self.wrapped = wrapped

        def __get__(self, instance, obj_type=None):
            value = self.wrapped(instance)
            setattr(instance, self.wrapped.__name__, value)
            return value

    class UserDefined:
        def __init__(self):
            self.a = 3

        @lazy_property
        def length(self):
            return 3 + self.a

        def run(self, x):
            return x * self.length

    def build(T, wrap):
        obj = UserDefined()
        f = wrap(lambda x: obj.run(x))
        return lambda i: (f(_x(T, i, 4)), dict(vars(obj)))
    compare(build)


def test_descriptor_side_effect():
    # MiscTests.test_descriptor_side_effect: a read-only property over an entry of the
    # instance's ``__dict__`` of an object made inside, returned
    def fget(obj):
        return obj.__dict__["field"]

    class MyClass:
        def __init__(self, n):
            self.__dict__["field"] = n

        field = property(fget)

    def build(T):
        def fn(x):
            obj = MyClass(42 + x.shape[0])
            return x + obj.field, obj.field, type(obj) is MyClass
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i % 2),), fullgraph=True)


@pytest.mark.parametrize("test", ["data_descriptor_priority_over_instance_dict",
                                  "instance_dict_priority_over_non_data_descriptor"])
def test_descriptor_priority(test):
    # MiscTests.test_data_descriptor_priority_over_instance_dict (a property wins over the
    # instance dict's entry) and test_instance_dict_priority_over_non_data_descriptor (the
    # instance dict's entry wins over a ``__get__``-only descriptor); the entry changes between
    # calls
    class Desc:
        def __init__(self, val):
            self.val = val

        def __get__(self, obj, objtype=None):
            return self.val

    class Foo:
        @property
        def x(self):
            return 10

    class Bar:
        x = Desc(5)

    def build(T, wrap):
        obj = Foo() if test.startswith("data") else Bar()
        f = wrap(lambda t: t + obj.x)

        def run(i):
            obj.__dict__["x"] = 999 + i
            return f(_x(T, i, 4))
        return run
    compare(build)


def test_inspect_signature_parameters():
    # MiscTests.test_inspect_signature_parameters: ``inspect.signature(gn).parameters`` of a
    # function argument picks the branch; another function is passed on later calls
    import inspect

    def gn(a, b):
        return a + b

    def gn2(a=1, b=2):
        return a - b

    def build(T):
        def fn(x, g):
            if inspect.signature(g).parameters["a"].default is inspect.Parameter.empty:
                return T.sin(x + 1)
            return T.cos(x + 1)
        return fn
    check(build, lambda T, i: (_x(T, i), (gn, gn2)[i % 2]))


def test_sourceless_mapping_proxy():
    # MiscTests.test_sourceless_mapping_proxy / test_sourceless_inspect_parameter: a class's
    # mappingproxy taken with ``type.__dict__["__dict__"].__get__``; its length and a default
    # of an ``inspect.Parameter`` class attribute
    import inspect
    get_dict = type.__dict__["__dict__"].__get__

    class MyClass:
        a = 1
        param = inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=42)

    check(lambda T: (lambda x: x + len(get_dict(MyClass)) + get_dict(MyClass)["param"].default),
          lambda T, i: (_x(T, i),), fullgraph=True)


def test_tensor_types():
    # MiscTests.test_tensor_types: a tensor made with each dtype is an instance of the legacy
    # type of that dtype (FloatTensor, DoubleTensor, ...), and of no other
    names = [("float32", "FloatTensor"), ("float64", "DoubleTensor"), ("float16", "HalfTensor"),
             ("bfloat16", "BFloat16Tensor"), ("uint8", "ByteTensor"), ("int8", "CharTensor"),
             ("int64", "LongTensor"), ("int32", "IntTensor"), ("int16", "ShortTensor"), ("bool", "BoolTensor")]

    def build(T):
        def fn(x, dtype):
            e = T.empty(4, dtype=dtype)
            return x + 1, [isinstance(e, getattr(T, t)) for _, t in names]
        return fn
    check(build, lambda T, i: (_x(T, i), getattr(T, names[i * 2 % len(names)][0])), calls=5)


def test_replay_side_effects_config():
    # MiscTests.test_replay_side_effects_config (the default: the append to a list argument is
    # replayed) and test_replay_side_effects_input_mut (a module's forward adds to its input in
    # place): both happen on every call
    def build(T, wrap):
        class Foo(T.nn.Module):
            def forward(self, x):
                x.add_(5)
                return x.cos()
        f = wrap(lambda x, lst: (lst.append(x + 1), x * 2)[1])
        m = wrap(Foo())

        def run(i):
            lst = []
            x = _x(T, i, 3)
            out = f(x, lst)
            y = _x(T, i, 3, seed=2)
            return out, lst, m(y), y
        return run
    compare(build)


def test_function_return_none_creates_constant_variable():
    # MiscTests.test_function_return_none_creates_constant_variable: a helper returning None
    # compared with ``is None`` picks the branch
    def gn(x):
        return

    check(lambda T: (lambda x: (x + 1) + 2 if gn(x + 1) is None else x + 5), lambda T, i: (_x(T, i),))


def test_item():
    # MiscTests.test_item: a module's forward returns ``torch.max(x).int().item()``
    def build(T, wrap):
        class MyMod(T.nn.Module):
            def forward(self, x):
                return T.max(x).int().item()
        m = wrap(MyMod())
        return lambda i: m(T.tensor([[10.6763 + i, 11.7445, -2.2369 * i]]))
    compare(build)


def _text_of(config):
    return f"{config}"


@pytest.mark.parametrize("how", ["repr", "str", "fstring", "format", pytest.param("helper", marks=pytest.mark.xfail(
    strict=True, reason="what __repr__ reads is guarded only when the compiled function's own code calls repr/str/"
    "format or formats an f-string field; a helper function that formats the object is not followed, so the "
    "first trace's text length is kept when config.name changes"))])
def test_repr(how):
    # MiscTests.test_repr: ``len(repr(config))`` of a user object with ``__repr__``; its text
    # changes between calls. Also through ``str``, an f-string field and ``format``, which
    # reach ``__repr__`` without naming it
    body = {"repr": lambda x, config: x * len(repr(config)), "str": lambda x, config: x * len(str(config)),
            "fstring": lambda x, config: x * len(f"{config!r}"), "format": lambda x, config: x * len(format(config)),
            # a helper that formats: its names are not the compiled function's (see the xfail)
            "helper": lambda x, config: x * len(_text_of(config))}[how]

    class Config:
        def __init__(self):
            self.name = "a"

        def __repr__(self):
            return f"Config({self.name})"

    def build(T, wrap):
        cfg = Config()
        f = wrap(body)

        def run(i):
            cfg.name = "a" * (i + 1)
            return f(_x(T, i, 2, 2), cfg)
        return run
    compare(build)


# ---- MiscTests: closures escaping with hooks, properties, containers' own classes --------------

def test_escaping_closure_var_with_backward_hook():
    # MiscTests.test_escaping_closure_var_with_backward_hook: a hook on the input returns a
    # tensor the function computed (its closure outlives the call); the input's grad is that
    # tensor on every call
    def build(T, wrap):
        def fn(x):
            temp = x * x
            captured_var = temp + 1
            x.register_hook(lambda _: captured_var)
            return temp
        f = wrap(fn)

        def run(i):
            x = _x(T, i, 4, rg=True)
            out = f(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_escaping_closure_var_with_nonlocal_var():
    # MiscTests.test_escaping_closure_var_with_nonlocal_var / test_returning_nested_func_with_
    # captured_tensor: an inner function closing over a tensor made inside is stored in a
    # nonlocal (and returned); called after the compiled call, it gives this call's tensor
    def build(T, wrap):
        holder = {}
        nonlocal_fn = None

        def fn(x):
            nonlocal nonlocal_fn
            temp = x * x
            captured_var = x + 1

            def inner():
                return captured_var
            nonlocal_fn = inner
            return temp, inner
        f = wrap(fn)

        def run(i):
            out, returned = f(_x(T, i, 4, rg=True))
            holder["fn"] = nonlocal_fn
            return out, holder["fn"](), returned()
        return run
    compare(build)


def test_property_setter():
    # MiscTests.test_property_setter / test_property_setter_in_init: a property setter that
    # stores twice the value (a tensor), and one that clamps in ``__init__``; the getters read
    # them back, with gradients through the clamp
    def build(T):
        class Box:
            def __init__(self, value):
                self._value = T.tensor([value], dtype=T.float32)

            @property
            def value(self):
                return self._value + 1

            @value.setter
            def value(self, new_value):
                self._value = new_value * 2

        class Clamped:
            def __init__(self, val):
                self.val = val

            @property
            def val(self):
                return self._val

            @val.setter
            def val(self, v):
                self._val = T.clamp(v, 0, 1)

        def fn(x, k):
            b = Box(0.0)
            b.value = k
            return Clamped(x).val * 3, b.value
        return fn
    check(build, lambda T, i: (_x(T, i, 4, rg=True), 5.0 + i), backward=True)


def test_user_defined_data_descriptor():
    # MiscTests.test_user_defined_data_descriptor: a data descriptor (``__set_name__``,
    # ``__get__``, ``__set__``) storing under another name; the value is set between calls
    class ValidatedAttr:
        def __set_name__(self, owner, name):
            self.storage_name = "_" + name

        def __get__(self, obj, cls):
            return self if obj is None else getattr(obj, self.storage_name)

        def __set__(self, obj, value):
            setattr(obj, self.storage_name, value)

    class Foo:
        x = ValidatedAttr()

        def __init__(self, x):
            self.x = x

    def build(T, wrap):
        foo = Foo(10)
        f = wrap(lambda t: t + foo.x)

        def run(i):
            foo.x = 10 + i % 2
            return f(_x(T, i, 4)), vars(foo)
        return run
    compare(build)


@pytest.mark.parametrize("kind", ["tuple", "list", "namedtuple"])
def test_container_class(kind):
    # MiscTests.test_tuple_class / test_list_class / test_namedtuple_class: the argument's own
    # ``__class__`` rebuilds the result from a list
    import collections
    Point = collections.namedtuple("Point", ["x", "y"])

    def build(T):
        def fn(x):
            updated = [v + 1 for v in x]
            return x.__class__(*updated) if kind == "namedtuple" else x.__class__(updated)
        return fn

    def args(T, i):
        a, b = _x(T, i, 2, 2, rg=True), _x(T, i, 2, 2, seed=1, rg=True)
        return ({"tuple": tuple, "list": list, "namedtuple": lambda v: Point(*v)}[kind]((a, b)),)
    f = check(build, args, fullgraph=True)
    assert type(f(args(tracegrad, 0)[0])) is {"tuple": tuple, "list": list, "namedtuple": Point}[kind]


def test_frozenset_of_non_literals():
    # MiscTests.test_frozenset_of_non_literals: an object reached through a frozenset argument
    # and passed itself; ``foo0.x += 1`` is seen through the set's copy, on every call
    class Foo:
        pass

    def build(T, wrap):
        foo = Foo()
        foo.x = 0
        s = frozenset([foo])

        def run_(x, s, foo0):
            foo1 = list(s)[0]
            foo0.x += 1
            return x + 1, foo1.x
        f = wrap(run_)
        return lambda i: (f(_x(T, i, 1), s, foo), foo.x)
    compare(build)


@pytest.mark.parametrize("which", ["eq", "ne"])
def test_ne_operator_with_custom(which):
    # MiscTests.test_ne_operator_with_custom_eq (``!=`` falls back to a user ``__eq__``) and
    # test_ne_operator_with_custom_ne (a user ``__ne__`` that records it ran on the object)
    class Foo:
        def __init__(self, x):
            self.x = x
            self.ne_called = 0

        def __eq__(self, other):
            return self.x == other.x

    class FooNe(Foo):
        def __ne__(self, other):
            self.ne_called += 1
            return not self.__eq__(other)

    def build(T, wrap):
        cls = Foo if which == "eq" else FooNe
        f1, f2 = cls(0), cls(0)
        f = wrap(lambda x: (x + 1, f1 != f2))

        def run(i):
            f2.x = i % 2
            return f(_x(T, i, 1)), f1.ne_called
        return run
    compare(build)


def test_dataclass():
    # MiscTests.test_dataclass: ``dataclasses.replace`` of a frozen dataclass argument, returned
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Foo:
        x: int

    def build(T):
        def run(x, foo0):
            if dataclasses.is_dataclass(foo0):
                return x + 1, dataclasses.replace(foo0, **{"x": foo0.x + 1})
            return x + 2, foo0
        return run
    check(build, lambda T, i: (_x(T, i, 1), Foo(i) if i % 2 else 3))


def test_compare_tensor_with_none():
    # MiscTests.test_compare_tensor_with_none: ``x == None`` of a tensor is False, made a tensor
    check(lambda T: (lambda x: (T.tensor(x == None), x + 1)), lambda T, i: (_x(T, i, 1),))  # noqa: E711


def test_frozen_dict():
    # MiscTests.test_frozen_dict: an OrderedDict subclass that copies its items to attributes
    # and forbids changes, read with ``dict(frozen).items()``
    import collections

    class FrozenDict(collections.OrderedDict):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for key, value in self.items():
                setattr(self, key, value)
            self.__frozen = True

        def __setattr__(self, name, value):
            if hasattr(self, "__frozen") and self.__frozen:
                raise RuntimeError("frozen")
            super().__setattr__(name, value)

    frozen = FrozenDict({"a": 1, "b": 3})

    def build(T):
        def fn(x):
            return T.sin(x) * sum(v for _, v in dict(frozen).items()) + frozen.a
        return fn
    check(build, lambda T, i: (_x(T, i, 4, rg=True),), backward=True, fullgraph=True)


# ---- MiscTests: errors in backward hooks, marked dynamic sizes, graph breaks ------------------

def test_anomaly_aot_autograd():
    # MiscTests.test_anomaly_aot_autograd: a hook registered inside on a result raises in the
    # backward; the user's AssertionError reaches the caller of ``backward()`` on every call
    # (torch's aot_eager backend wraps it at compile time; eager and tracegrad raise it as is)
    def fail():
        raise AssertionError("fail")

    def build(T):
        def f(a):
            r = a.sum()
            r.register_hook(lambda g: fail())
            return r
        return f
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        for T, f in zip((torch, tracegrad), fns):
            a = _x(T, i, 2, 2, rg=True)
            out = f(a)
            with pytest.raises(AssertionError, match="fail"):
                out.backward()
            assert a.grad is None


def test_py_guards_mark_dynamic():
    # MiscTests.test_py_guards_mark_dynamic: ``a.shape[0] > 2`` picks cos or sin; the argument's
    # dims are marked dynamic (one, another, all) and its sizes change across the branch
    def fn_of(T):
        def my_dyn_fn(a):
            if a.shape[0] > 2:
                return a.cos()
            return a.sin()
        return my_dyn_fn
    cf = tracegrad.compile(fn_of(tracegrad))
    for i, (shape, dims) in enumerate([((3, 3, 3), (0,)), ((3, 3, 3), ()), ((3, 3, 3), (1,)),
                                       ((2, 3, 3), (0,)), ((4, 2, 5), (0, 1, 2)), ((1, 3, 3), ())]):
        xs = [_x(T, i, *shape) for T in (torch, tracegrad)]
        for d in dims:
            torch._dynamo.mark_dynamic(xs[0], d)
            tracegrad._dynamo.mark_dynamic(xs[1], d)
        same(fn_of(torch)(xs[0]), cf(xs[1]), f"call{i} {shape} dynamic {dims}")


def test_dynamic_sources_graph_break():
    # MiscTests.test_dynamic_sources_graph_break: a graph break in the middle, the input's size
    # changing on every call
    def foo(x):
        return x * x

    def build(T):
        def fn(x):
            x = x * x
            x.sum().item()
            return foo(x)
        return fn
    check(build, lambda T, i: (_x(T, i, 2 + i),))


# ---- MiscTests: closure cells written across calls and frames ----------------------------------

def test_nested_closure_mutation():
    # MiscTests.test_nested_closure_mutation / test_write_to_closures_in_inlining: a closure
    # whose two tensor cells it bumps (``nonlocal v1, v2``) is compiled itself and called over
    # and over; every call sees the previous call's cells
    def build(T, wrap):
        def fn1():
            v1 = T.ones(3)

            def fn2():
                v2 = T.arange(3.0)

                def fn3():
                    nonlocal v1, v2
                    v1 += 1
                    v2 = v2 + 2
                    return v1 + v2
                return fn3
            rv = fn2()
            rv()
            return rv
        counter = wrap(fn1())
        return lambda i: [counter(), counter()]
    compare(build)


def test_write_to_closures_in_inlining():
    # MiscTests.test_write_to_closures_in_inlining: a counter closure passed in and called twice
    # inside; its cell moves on by two per compiled call
    def build(T, wrap):
        def make_counter():
            x = T.zeros(2)

            def counter():
                nonlocal x
                x = x + 1
                return x
            return counter
        counter = make_counter()
        f = wrap(lambda c: c() + c())
        return lambda i: (f(counter), counter.__closure__[0].cell_contents)
    compare(build)


def test_closure_out_of_scope_cell_with_mutation():
    # MiscTests.test_closure_out_of_scope_cell / _with_mutation: an inner function two frames
    # down bumps a float cell and a tensor cell in place (``cell2 += 10``); three calls of the
    # compiled function see the cells advance
    def build(T, wrap):
        cell1 = 0.5
        cell2 = T.ones(2, 2)

        def indirect():
            return direct()

        def direct():
            def inner():
                nonlocal cell1, cell2
                x = cell2 + 1
                cell1 += 1
                cell2 += 10
                return cell1, cell2, x + cell2
            return inner()
        f = wrap(indirect)
        return lambda i: f()
    compare(build, calls=3)


def test_closure_with_mutation_and_graph_break():
    # MiscTests.test_closure_with_mutation_and_graph_break: a fresh tensor written by an inner
    # function from a cell bound after a data-dependent ``if``
    def build(T):
        def fn(x):
            z = T.zeros(1)

            def subfunc():
                z[0] = backup

            if x[0] >= -1e5:
                pass
            backup = x[1].item() + 1
            subfunc()
            return z
        return fn
    check(build, lambda T, i: (_x(T, i, 3),))


@pytest.mark.parametrize("test", ["closure_write_across_functions", "writes_to_cells_across_frames1",
                                  "writes_to_cells_across_frames2", "write_to_cells_with_name_shadowing"])
def test_cells_written_across_frames(test):
    # MiscTests.test_closure_write_across_functions (a callee rebinds ``z``, a function made
    # inside copies it to ``k``), test_writes_to_cells_across_frames1/2 (a counter cell bumped
    # by a function passed to a method / by a helper then read back by a method) and
    # test_write_to_cells_with_name_shadowing (a setter for another cell named ``x``): the
    # cells hold eager's values after every call
    def build(T, wrap):
        z, k, x = 1, 2, 0
        y = x

        def create_fn():
            def fn(_):
                nonlocal k, z
                k = z
            return fn

        def update_z_and_run_fn(fn, t):
            nonlocal z
            z += 3
            fn(t)
            return t.cos()

        def inc_x():
            nonlocal x
            x += 1

        class MyObj:
            def inc_x_then_return_x(self, fn):
                fn()
                return x

            def get_x(self):
                return x

        def inc_x_and_get_x(obj):
            nonlocal x
            x += 1
            return obj.get_x()

        def make_x_get_set():
            x = y

            def set_x(v):
                nonlocal x
                x = v

            def get_x():
                return x
            return get_x, set_x
        get_x, set_x = make_x_get_set()

        def root(t, i):
            if test == "closure_write_across_functions":
                return update_z_and_run_fn(create_fn(), t)
            if test == "writes_to_cells_across_frames1":
                return t + 1, MyObj().inc_x_then_return_x(inc_x)
            if test == "writes_to_cells_across_frames2":
                return t + 1, inc_x_and_get_x(MyObj())
            set_x(42 + i)
            return t + x
        f = wrap(root)
        return lambda i: (f(_x(T, i, 1), i), z, k, x, get_x())
    compare(build)


def test_free_var_and_local_name_collision():
    # MiscTests.test_free_var_and_local_name_collision / test_cell_captured_by_existing_func_
    # but_not_root_frame: a local ``x`` beside a helper's free ``x``; an inner function over a
    # tensor cell returned and called later
    def build(T, wrap):
        x = 10
        c = T.ones(1)

        def make_func():
            def func():
                return x
            return func

        def get_inner():
            def inner():
                return c + c
            return inner(), inner

        def root(t):
            x = 0
            res, inner = get_inner()
            return t + 1, x, make_func()(), res, inner
        f = wrap(root)

        def run(i):
            a, b, d, res, inner = f(_x(T, i, 1))
            return a, b, d, res, inner()
        return run
    compare(build)


def test_super_calling_with_metaclass():
    # MiscTests.test_super_calling_with_metaclass / test_user_defined_class_python_type: a
    # classmethod calling ``super().add`` and reading ``super().coeff`` through a metaclass'
    # class (with a graph break inside); ``isinstance`` of classes with and without a metaclass
    class ExampleMeta(type):
        pass

    class MyClass1(metaclass=ExampleMeta):
        coeff = 4

        @classmethod
        def add(cls, x):
            return x + 1

    class MyClass2(MyClass1):
        @classmethod
        def add(cls, x):
            x.sum().item()
            return x + super().add(x) + super().coeff

    class Plain:
        pass

    def build(T):
        def fn(x, obj, c):
            kind = 1 if isinstance(c, Plain) else 2 if isinstance(c, MyClass2) else 3
            return x + obj.add(x) + kind
        return fn
    check(build, lambda T, i: (_x(T, i, 3), MyClass2(), (Plain(), MyClass2(), Plain, 1)[i]))


def test_dunder_methods():
    # MiscTests.test_dunder_methods / test_usr_cls_staticmethod / test_usr_cls_classmethod: a
    # user class's arithmetic dunders over tensors, a staticmethod and a classmethod
    class Foo:
        def __init__(self, val):
            self.val = val

        def __add__(self, other):
            return Foo(self.val + other.val)

        def __mul__(self, other):
            return Foo(self.val * other.val)

        def __truediv__(self, other):
            return Foo(self.val / other.val)

        def __sub__(self, other):
            return Foo(self.val - other.val)

        @staticmethod
        def bar(a, b):
            return a + b

        @classmethod
        def baz(cls, a, b):
            return cls.bar(a, b) * 2

    def build(T):
        def fn(a, b, c):
            return (Foo(a) + Foo(b) * Foo(c) / Foo(a) - Foo(b)).val, Foo.bar(a, b) - 1, Foo.baz(a, c)
        return fn
    check(build, lambda T, i: (_x(T, i, 3, rg=True), _x(T, i, 3, seed=1, rg=True),
                               _x(T, i, 3, seed=2).abs() + 1), backward=True)


# ---- MiscTests: deques, generators, modules with replaced forwards -----------------------------

def test_deque_input():
    # MiscTests.test_deque_input: two tensors popped off a deque argument; the caller's deque
    # loses them on every call, as eagerly. Also a set argument the function adds to (both
    # reach the function as themselves, not as rebuilt copies)
    import collections

    def build(T, wrap):
        f = wrap(lambda q: q.pop() * q.pop())
        g = wrap(lambda x, s: (s.add(len(s) + 1), x + len(s))[1])

        def run(i):
            q = collections.deque(["foo", _x(T, i), _x(T, i, seed=1)])
            s = set(range(i % 2 + 1))
            return f(q), list(q), g(_x(T, i), s), sorted(s)
        return run
    compare(build)


@pytest.mark.parametrize("test", ["yield_from", "yield_from_in_a_loop", "yield_gen_and_from",
                                  "yield_from_user_stop_iteration"])
def test_yield_from(test):
    # MiscTests.test_yield_from, test_yield_from_in_a_loop, test_yield_gen_and_from and
    # test_yield_from_user_stop_iteration: generators made inside delegating with ``yield from``
    # (to a list, another generator in a loop, a user iterator raising StopIteration)
    class MyIter:
        def __init__(self, seq):
            self.seq, self.index = seq, 0

        def __iter__(self):
            return self

        def __next__(self):
            self.index += 1
            if self.index <= len(self.seq):
                return self.seq[self.index - 1]
            raise StopIteration(self.index)

    def build(T):
        def fn(t_list, k):
            if test == "yield_from":
                def gen(items):
                    yield from [t * k for t in items]
                return [t * k for t in gen(t_list)]
            if test == "yield_from_in_a_loop":
                def gen2():
                    yield 1

                def gen1():
                    for _ in range(5):
                        yield from gen2()
                return t_list[0] + sum(gen1())
            if test == "yield_gen_and_from":
                def tensors():
                    for i in range(3):
                        yield T.tensor([float(i)])
                made = [t * k for t in tensors()]

                def again():
                    yield from made
                return list(again())

            def gen3(seq):
                yield from MyIter(seq)
            return [t + 1 for t in gen3(t_list)]
        return fn
    check(build, lambda T, i: ([_x(T, i, 2, seed=j) for j in range(3)], 2 + i))


def test_pep0479_convert_stopiteration():
    # MiscTests.test_pep0479_convert_stopiteration: StopIteration raised inside a generator
    # becomes RuntimeError for the caller, caught inside the compiled function
    def gen():
        yield 1
        raise StopIteration("inside")

    def build(T):
        def fn(t):
            try:
                g = gen()
                next(g)
                next(g)
            except RuntimeError:
                return t + 100
            except StopIteration:
                return t + 200
        return fn
    check(build, lambda T, i: (_x(T, i),), fullgraph=True)


def test_derpy_nn_module_usage():
    # MiscTests.test_derpy_nn_module_usage: bare Modules whose ``forward`` is a plain function
    # (reading ``mod1``/``mod2`` through a local ``self``), parameters registered by name;
    # trained by a compiled step whose parameters must follow eager's
    def build(T, wrap):
        mod1, mod2 = T.nn.Module(), T.nn.Module()

        def ff1(x):
            self = mod1
            return T.sigmoid(self.mod2(x) + self.param1)

        def ff2(x):
            self = mod2
            return T.cos(T.sin(x) * self.param2 + 1)
        mod1.register_module("mod2", mod2)
        mod1.register_parameter("param1", T.nn.Parameter(T.linspace(-1.0, 1.0, 4)))
        mod1.forward = ff1
        mod2.register_parameter("param2", T.nn.Parameter(T.linspace(0.5, 1.5, 4)))
        mod2.forward = ff2
        mod1.eval()
        opt = T.optim.SGD(mod1.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            loss = mod1(x).sum()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        return lambda i: (step(_x(T, i, 4)), mod1.param1.detach().clone(), mod2.param2.detach().clone())
    compare(build)


def test_default_args_device_dtype():
    # MiscTests.test_default_args_device_dtype / test_torch_dtype_python_type: a class whose
    # ``__init__`` defaults are a dtype and a device; ``zeros`` made with an argument's dtype
    def build(T):
        class Foo:
            def __init__(self, dtype=T.float16, device=T.device("cpu")):
                self.value = T.tensor(10, dtype=dtype, device=device)

        def fn(target):
            dt = target.dtype
            assert isinstance(dt, T.dtype)
            return Foo().value + 1, T.zeros(2, dtype=dt) + target
        return fn
    check(build, lambda T, i: ((_x(T, i, 2), T.tensor([2, 3]), _x(T, i, 2).half())[i % 3],), fullgraph=True)


@pytest.mark.parametrize("test", ["itertools_repeat", "itertools_infinite_repeat_mutation",
                                  "itertools_accumulate_symint_default_sum"])
def test_itertools_inplace(test):
    # MiscTests.test_itertools_repeat, test_itertools_infinite_repeat_mutation (the repeated
    # object is the argument itself, bumped in place through two names) and
    # test_itertools_accumulate_symint_default_sum (running products of sizes): the input is
    # written in place and compared after the call
    import itertools

    def build(T):
        def fn(x):
            if test == "itertools_repeat":
                for v in itertools.repeat(100.0, 5):
                    x += v
                return x
            if test == "itertools_accumulate_symint_default_sum":
                for v in itertools.accumulate([x.size(0), x.size(1)]):
                    x *= v
                return x
            idx = 0
            for v in itertools.repeat(x):
                x += v
                v += 1
                idx += 1
                if idx > 4:
                    break
            return x
        return fn
    check(build, lambda T, i: (_x(T, i, 2, 3),))
