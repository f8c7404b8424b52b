"""Round-27 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository's test/dynamo/test_ctx_manager.py: the CtxManagerTests cases earlier
rounds (12, 12b, 15) did not take -- user context managers (a class and a
``contextlib.contextmanager`` function) that set the grad mode, nested and around graph breaks,
returned out of the compiled function; ``set_grad_enabled`` used as a decorator inside; inactive
managers (``set_grad_enabled``/``nullcontext``) made before a graph break or passed through a
callee; autocast regions split by graph breaks in helpers and methods; the
``disable_saved_tensors_hooks`` tests -- and ContextlibContextManagerTests (generator managers
whose ``try``/``finally`` write nonlocals and globals, graph breaks inside the generator, in
``finally``, before and after ``__enter__``, managers passed as arguments and entered or exited
only inside, ``torch._dynamo.disable`` around ``__enter__``/``__exit__``, ``contextlib.suppress``
and ``redirect_stdout``) and CPythonContextManagerTestCase (state lists a manager appends to).

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` on several calls
with fresh inputs (``_dynamo_port.check``/``compare``): outputs, grads, the grad mode after the
call and the Python state the managers change must agree on every call. The programs are
written here in our own code at tiny shapes and keep the construct the torch test checks.
Adapted: torch's tests count frames and ops and compare printed graphs; here only what a user
observes is compared, plus the number of programs traced where the original's point is a
recompile on the caller's grad mode. Where torch's dynamo raises InternalTorchDynamoError
(``__enter__`` after a graph break, ``__enter__``/``__exit__`` under ``disable``, a new manager
returned), the compiled function must still give eager's result, which is what a user of
tracegrad.compile gets. torch.rand inside the originals is replaced by arguments.

Found and fixed here:
- ``torch.autograd._profiler_enabled()`` read inside a compiled function was frozen: traced
  under a profiler, later calls outside took the profiler branch (torch: each call its own
  answer). Now the read guards the program on whether a profiler was recording when the trace
  began (_state.note_profiler_read, _lowering/capture.py ``guard_profiler``): one program per
  answer, and nothing is checked for functions that never ask.
- A ``contextlib.contextmanager`` object passed as an argument and entered or exited inside was
  traced: the trace advanced its generator, so the eager rerun of the abandoned trace raised
  "generator didn't yield", or a tensor of the trace leaked into the caller's list. Now such an
  object is a graph break before tracing, as generators and iterators are
  (_lowering/pystate.py ``_stateful_kind``).
- A manager made and entered inside, whose ``__exit__`` came after a graph break, was left
  suspended by the abandoned trace; the garbage collector ran its ``finally`` after the trace's
  Python state was put back, so its log append happened once more than eagerly. Now the frames
  of an abandoned trace have their own suspended generators closed while the trace is still
  undone (_lowering/pystate.py ``close_abandoned_generators``, called from region.py).
"""
import contextlib
import copy
import io
import traceback
import sys

import pytest

import tracegrad
from ._dynamo_port import CALLS, check, compare, rand, same

torch = pytest.importorskip("torch")


def _x(T, i, *shape, rg=False, seed=0):
    return rand(T, i, *(shape or (2, 3)), rg=rg, seed=seed)


def _ctx_class(T):
    """The original's CustomizedCtxManager: sets the grad mode through ``_C._set_grad_enabled``
    on enter and puts the mode seen at construction back on exit."""
    class CustomizedCtxManager:
        def __init__(self, mode):
            self.prev = T.is_grad_enabled()
            self.mode = mode

        def __enter__(self):
            T._C._set_grad_enabled(self.mode)

        def __exit__(self, exc_type, exc_value, tb):
            T._C._set_grad_enabled(self.prev)
    return CustomizedCtxManager


def _ctx_function(T):
    """The original's customized_ctx_manager: the same as a generator manager."""
    @contextlib.contextmanager
    def customized_ctx_manager(mode):
        prev = T.is_grad_enabled()
        try:
            yield T._C._set_grad_enabled(mode)
        finally:
            T._C._set_grad_enabled(prev)
    return customized_ctx_manager


CTX = {"class": _ctx_class, "contextmanager": _ctx_function}


def _under_modes(build, make_args, modes=(False, True, False, True), traces=None):
    """torch eager and ``tracegrad.compile`` run ``build(T)`` under each outer grad mode of
    ``modes`` in turn (two calls each): outputs, their requires_grad and the grad mode after the
    call agree; ``traces``, given, is the number of programs the compiled function built."""
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i, mode in enumerate(m for m in modes for _ in range(2)):
        seen = []
        for T, fn in fns:
            try:
                with T.set_grad_enabled(mode):
                    out = fn(*make_args(T, i))
                    seen.append((out, T.is_grad_enabled()))
            finally:
                T.set_grad_enabled(True)
        same(seen[0], seen[1], f"call{i} grad mode {mode}")
    if traces is not None:
        assert fns[1][1].stats["traces"] == traces, fns[1][1].stats
    return fns[1][1]


def _compare_state(make, *shape):
    """``compare`` over ``make(T)`` -> ``(fn, state)``: each call's observables are
    ``fn(x)`` on a fresh ``x`` of ``shape`` and a copy of the Python ``state`` (a log list, a
    dict of counters) the function and its managers change."""
    def build(T, wrap):
        fn, state = make(T)
        fn = wrap(fn)

        def run(i):
            return fn(_x(T, i, *shape)), copy.copy(state)
        return run
    compare(build)


# ---- CtxManagerTests: user managers that set the grad mode -------------------------------------

@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("brk", [False, True])
@pytest.mark.parametrize("kind", sorted(CTX))
def test_generic_context_manager(kind, brk, nested):
    # CtxManagerTests.test_generic_context_manager / _with_graph_break and
    # test_nested_generic_context_manager / _with_graph_break: a manager turning grad on, the
    # body reading is_grad_enabled; with ``nested`` grad off inside it. With ``brk`` a graph
    # break in the innermost one: the mode still holds after the break and is undone after.
    # Called under no_grad then enable_grad: one program per outer mode
    def build(T):
        Ctx = CTX[kind](T)

        def fn(x):
            inner = None
            with Ctx(True):
                x = x + 1
                if T.is_grad_enabled():
                    x = x * 2
                with Ctx(False) if nested else contextlib.nullcontext():
                    if nested and T.is_grad_enabled():
                        x = x - 3
                    if brk:
                        T._dynamo.graph_break()
                    if nested:
                        x = x * 1.5
                        inner = x.requires_grad
                x = T.relu(x)
            return x - 1, inner
        return fn
    _under_modes(build, lambda T, i: (_x(T, i, rg=True),), traces=None if brk else 2)


@pytest.mark.parametrize("graph_break", [False, True])
def test_return_context_manager(graph_break):
    # CtxManagerTests.test_return_context_manager / test_return_context_manager_with_graph_break:
    # the manager object made, entered and exited inside comes back with its attributes
    def build(T):
        Ctx = _ctx_class(T)

        def f(x):
            cm = Ctx(False)
            if graph_break:
                T._dynamo.graph_break()
            with cm:
                y = x * 2
            return cm, y
        return f

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            cm, y = fn(_x(T, i, rg=True))
            seen.append((type(cm).__name__, cm.mode, cm.prev, y, T.is_grad_enabled()))
        same(seen[0], seen[1], f"call{i}")


@pytest.mark.parametrize("decorator", [True, False])
@pytest.mark.parametrize("mode", [True, False])
def test_context_wrapping_set_grad_enabled_nested_function(decorator, mode):
    # CtxManagerTests.test_context_wrapping_set_grad_enabled_nested_function: set_grad_enabled
    # applied to an inner function (as a decorator or a call) inside the inverse mode does not
    # change the mode; the wrapped call runs in ``mode``
    def build(T):
        def fn(x):
            with T.set_grad_enabled(not mode):
                if decorator:
                    @T.set_grad_enabled(mode)
                    def inner_func(x):
                        return x.sin()
                else:
                    def inner_func(x):
                        return x.sin()
                    inner_func = T.set_grad_enabled(mode)(inner_func)
                seen = T.is_grad_enabled()
            with T.set_grad_enabled(not mode):
                return inner_func(x), seen
        return fn
    check(build, lambda T, i: (_x(T, i, 4, rg=True),))


def _under_no_grad(build, make_args):
    """torch eager and ``tracegrad.compile`` called under no_grad (the originals' inputs need no
    grad, so the caller's mode is what a manager changes); outputs and the mode after agree."""
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            with T.no_grad():
                seen.append((fn(*make_args(T, i)), T.is_grad_enabled()))
        same(seen[0], seen[1], f"call{i}")


def test_inactive_context_graph_break_local_nullctx():
    # CtxManagerTests.test_inactive_context_graph_break_local_nullctx: a nullcontext made before
    # a graph break and entered after it
    def build(T):
        def fn(x):
            x = x + 1
            ctx = contextlib.nullcontext()
            T._dynamo.graph_break()
            with ctx:
                x = x + 1
            return x
        return fn
    _under_no_grad(build, lambda T, i: (_x(T, i, 4),))


def test_inactive_context_graph_break_local_nullctx2():
    # CtxManagerTests.test_inactive_context_graph_break_local_nullctx2: the break is in a callee
    # that returns a list read inside the nullcontext
    def build(T):
        def gn():
            T._dynamo.graph_break()
            return [0, 1, 2]

        def fn(x):
            x = x + 1
            ctx = contextlib.nullcontext()
            lst = gn()
            with ctx:
                x = x + lst[1]
            return x
        return fn
    _under_no_grad(build, lambda T, i: (_x(T, i, 4),))


def test_inactive_context_graph_break_stack():
    # CtxManagerTests.test_inactive_context_graph_break_stack: a set_grad_enabled(True) object
    # passed through a callee that breaks, then entered under the caller's no_grad
    def build(T):
        def gn(ctx):
            T._dynamo.graph_break()
            return ctx

        def fn(x):
            x = x + 1
            ctx = gn(T.set_grad_enabled(True))
            with ctx:
                x = x + 1
                on = T.is_grad_enabled()
            return x, on
        return fn
    _under_no_grad(build, lambda T, i: (_x(T, i, 4),))


def test_inactive_context_graph_break_stack2():
    # CtxManagerTests.test_inactive_context_graph_break_stack2: the manager is an argument of a
    # call whose last argument is graph_break()'s result
    def build(T):
        def gn(x, ctx, y, z, dummy):
            with ctx:
                return x * y * z, T.is_grad_enabled()

        def fn(x):
            x = x + 1
            return gn(x, T.set_grad_enabled(True), 2, 3, T._dynamo.graph_break())
        return fn
    _under_no_grad(build, lambda T, i: (_x(T, i, 4),))


# ---- CtxManagerTests: autocast split by graph breaks ------------------------------------------

def test_autocast_cpu_graph_break_2():
    # CtxManagerTests.test_autocast_cpu_graph_break_2: mm under bfloat16 autocast, a break,
    # relu of the bfloat16 result still inside
    def build(T):
        def fn(x):
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                x = T.mm(x, x)
                T._dynamo.graph_break()
                x = T.relu(x)
            return x, T.is_autocast_enabled("cpu")
        return fn
    check(build, lambda T, i: (_x(T, i, 4, 4),))


def test_autocast_cpu_graph_break_inner_fn():
    # CtxManagerTests.test_autocast_cpu_graph_break_inner_fn: autocast, disabled autocast inside,
    # autocast again inside that, a static method that breaks; each mm gets its region's dtype
    def build(T):
        class MyModule(T.nn.Module):
            @staticmethod
            def mm_breaks(x, y):
                T._dynamo.graph_break()
                return T.mm(x, y)

            def forward(self, a, b):
                with T.autocast(device_type="cpu", dtype=T.bfloat16):
                    T._dynamo.graph_break()
                    with T.autocast(device_type="cpu", dtype=T.bfloat16, enabled=False):
                        T._dynamo.graph_break()
                        g32 = T.mm(a, b)
                        with T.autocast(device_type="cpu", dtype=T.bfloat16):
                            T._dynamo.graph_break()
                            f16_1 = self.mm_breaks(a, b)
                    f16 = self.mm_breaks(a, b)
                    assert f16.dtype == f16_1.dtype
                return f16, g32
        return MyModule()
    check(build, lambda T, i: (_x(T, i, 4, 4), _x(T, i, 4, 4, seed=3)))


def test_autocast_graph_break_method():
    # CtxManagerTests.test_autocast_graph_break_method: a method that breaks and one that does
    # not, both adding a bfloat16 bias under autocast; their results agree
    def build(T):
        class MyModule(T.nn.Module):
            def __init__(self, bias):
                super().__init__()
                self.bias = bias

            def mm_not_break(self, x, y):
                return T.mm(x, y) + self.bias

            def mm_breaks(self, x, y):
                T._dynamo.graph_break()
                return T.mm(x, y) + self.bias

            def forward(self, a, b):
                with T.autocast(device_type="cpu", dtype=T.bfloat16):
                    with T.autocast(device_type="cpu", dtype=T.bfloat16, enabled=False):
                        g32 = T.mm(a, b)
                    f16 = self.mm_breaks(a, b)
                    assert bool(f16[0][0] == self.mm_not_break(a, b)[0][0])
                return f16, g32
        return MyModule(_x(T, 9, 4, 4).to(T.bfloat16))
    check(build, lambda T, i: (_x(T, i, 4, 4), _x(T, i, 4, 4, seed=3)))


def test_autocast_arguments_binding():
    # CtxManagerTests.test_autocast_arguments_binding (its CPU half): autocast bound with
    # keyword arguments only, disabled
    def build(T):
        def f2(x):
            with T.autocast(device_type="cpu", enabled=False):
                x = T.cos(x + 1)
            return x
        return f2
    check(build, lambda T, i: (_x(T, i, 2, 3, rg=True),), backward=True)


# ---- CtxManagerTests: disable_saved_tensors_hooks ---------------------------------------------

def _pack_count(T, fn, x):
    """``fn(x)`` under a saved_tensors_hooks pair counting packs; the result, the pack count
    and the error class raised (None if none)."""
    packed = []
    try:
        with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            out = fn(x)
        return out, len(packed), None
    except RuntimeError as e:
        return None, len(packed), ("RuntimeError", "not supported" in str(e))


@pytest.mark.parametrize("variant", ["plain", "prev_disabled", "prev_disabled_nested"])
def test_disable_saved_tensors_hooks(variant):
    # CtxManagerTests.test_disable_saved_tensors_hooks / _prev_disabled / _prev_disabled_nested:
    # a function decorated with disable_saved_tensors_hooks made and called inside; afterwards
    # (and with an outer disable, the outer one again) the state is what it was: checked by
    # registering saved-tensor hooks after the call (an error when still disabled)
    def build(T):
        dis = T.autograd.graph.disable_saved_tensors_hooks

        def fn(z):
            @dis("This is not supported")
            def f(x, y):
                if variant == "prev_disabled_nested":
                    @dis("This is not supported inner")
                    def inner_fn(x, y):
                        return x + y
                    return inner_fn(x, y) + x
                return x + y
            return f(T.ones(1), T.zeros(1)) * z
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            z = _x(T, i, 1, rg=True)
            if variant == "plain":
                out = fn(z)
                after = _pack_count(T, lambda x: (x * x).sum(), z)
            else:
                with T.autograd.graph.disable_saved_tensors_hooks("Previously disabled message"):
                    out = fn(z)
                    after = _pack_count(T, lambda x: (x * x).sum(), z)
            seen.append((out, after))
        same(seen[0], seen[1], f"call{i}")


def test_disable_saved_tensors_hooks_graph_break():
    # CtxManagerTests.test_disable_saved_tensors_hooks_graph_break: a graph break inside the
    # disabled region; registering hooks on both sides of the break raises, and after the region
    # hooks work again
    def build(T):
        def fn(x):
            errs = []
            with T.autograd.graph.disable_saved_tensors_hooks("This is not supported"):
                y = x + 1
                errs.append(_pack_count(T, lambda t: t * t, y)[2])
                T._dynamo.graph_break()
                out = y * 2
                errs.append(_pack_count(T, lambda t: t * t, out)[2])
            return out, errs, _pack_count(T, lambda t: t * t, out)[1:]
        return fn
    check(build, lambda T, i: (_x(T, i, 3, rg=True),))


# ---- ContextlibContextManagerTests: generator managers -----------------------------------------

def test_change_parent_nonlocal_1():
    # ContextlibContextManagerTests.test_change_parent_nonlocal_1: the finally reads a nonlocal
    # the caller wrote before entering; both nonlocals seen after every call
    def build(T, wrap):
        state = {"z": 1, "k": 2}

        def create_ctx():
            @contextlib.contextmanager
            def ctx(x):
                try:
                    yield x.sin()
                finally:
                    state["k"] = state["z"]
            return ctx

        def run_ctx(ctx, x, n):
            state["z"] = 100 + n
            with ctx(x) as y:
                return y.cos()

        f = wrap(lambda x, n: run_ctx(create_ctx(), x, n))

        def run(i):
            return f(_x(T, i, 2), i), dict(state)
        return run
    compare(build)


z_glb = 0
k_glb = 0


def _global_ctx_fn(T, which):
    """The original's create_ctx/run_ctx pair writing the module globals ``z_glb``/``k_glb``:
    in the generator's try (``which`` 0) or finally (1), and by the caller."""
    def create_ctx():
        @contextlib.contextmanager
        def ctx(x):
            global k_glb
            try:
                if which == 0:
                    k_glb = k_glb + 100
                yield x.sin()
            finally:
                if which == 1:
                    k_glb = z_glb
        return ctx

    def run_ctx(ctx, x):
        global z_glb
        if which == 1:
            z_glb = z_glb + 100
        with ctx(x) as y:
            if which == 0:
                z_glb = k_glb
            return y.cos()
    return lambda x: run_ctx(create_ctx(), x)


@pytest.mark.parametrize("which", [0, 1])
def test_change_parent_global(which):
    # ContextlibContextManagerTests.test_change_parent_global_0 / _1: module globals written in
    # the generator's try (0) or finally (1) and by the caller inside the with; each run starts
    # from zeros and the globals are read after every call (the runs share the globals, so they
    # run one after another)
    global z_glb, k_glb
    seen = []
    for T, wrap in ((torch, lambda f: f), (tracegrad, lambda f: f), (tracegrad, tracegrad.compile)):
        z_glb, k_glb = 0, 0
        f = wrap(_global_ctx_fn(T, which))
        seen.append([(f(_x(T, i, 2)), z_glb, k_glb) for i in range(CALLS)])
    same(seen[0], seen[2], "compiled vs torch")
    same(seen[1], seen[2], "compiled vs eager")


@pytest.mark.parametrize("which", [0, 1])
def test_change_parent(which):
    # ContextlibContextManagerTests.test_change_parent_0 / _1: the manager function made by a
    # factory (closing over the tensor in _1) and entered in another function
    def build(T):
        def create_ctx(x):
            @contextlib.contextmanager
            def ctx(*a):
                try:
                    yield (a[0] if which == 0 else x).sin()
                finally:
                    pass
            return ctx

        def run_ctx(ctx, x):
            with (ctx(x) if which == 0 else ctx()) as y:
                return y.cos()

        def fn(x):
            return run_ctx(create_ctx(x * 2), x)
        return fn
    check(build, lambda T, i: (_x(T, i, 3, rg=True),), backward=True)


def _whoo(T, log=None, brk="try"):
    """The originals' ``whoo`` generator manager: yields ``tan(x)``; ``brk`` says where a graph
    break sits ("try" before the yield, "finally", or None); ``log`` gets sin(x) before the
    yield and cos(x) in the finally."""
    @contextlib.contextmanager
    def whoo(x):
        y = x.tan()
        try:
            if log is not None:
                log.append(x.sin())
            if brk == "try":
                T._dynamo.graph_break()
            yield y
        finally:
            if brk == "finally":
                T._dynamo.graph_break()
            if log is not None:
                log.append(x.cos())
    return whoo


def _around_whoo(whoo):
    """The originals' ``f``: in-place adds before, inside and after a ``with whoo(x)``."""
    def f(x):
        y = x.sin()
        with whoo(x) as z:
            y += z.neg()
        y += x.cos()
        return y
    return f

def test_graph_break_inside_ctx():
    # ContextlibContextManagerTests.test_graph_break_inside_ctx: in-place adds around a manager
    # that breaks before its yield
    check(lambda T: _around_whoo(_whoo(T)), lambda T, i: (_x(T, i, 2, rg=True),), backward=True)


def test_graph_break_inside_ctx_with_side_effects():
    # ContextlibContextManagerTests.test_graph_break_inside_ctx_with_side_effects: the manager
    # appends to a list before its yield and in its finally, on every call
    def make(T):
        log = []
        return _around_whoo(_whoo(T, log)), log
    _compare_state(make, 2)


def test_graph_break_inside_ctx_1():
    # ContextlibContextManagerTests.test_graph_break_inside_ctx_1: the with (and a return from
    # inside it) is in a callee
    def build(T):
        whoo = _whoo(T)

        def bar(x):
            with whoo(x) as z:
                return z.neg()

        def f(x):
            return x.sin() + bar(x) + x.cos()
        return f
    check(build, lambda T, i: (_x(T, i, 2, rg=True),), backward=True)


def test_graph_break_in_finally():
    # ContextlibContextManagerTests.test_graph_break_in_finally: __enter__/__exit__ called by
    # hand; the finally (with a break) appends to a list on every call
    def make(T):
        log = []
        whoo = _whoo(T, log, brk="finally")

        def fn(x):
            ctx = whoo(x)
            y = ctx.__enter__()
            ctx.__exit__(None, None, None)
            return y
        return fn, log
    _compare_state(make, 1)


@pytest.mark.parametrize("where", ["before", "inside", "after", "before_and_after",
                                   "before_and_disable_exit", "disable_enter", "disable_exit",
                                   "graph_break_and_disable_enter"])
def test_graph_break_around___enter__(where):
    # ContextlibContextManagerTests.test_graph_break_before___enter__ / _inside___enter__ /
    # _after___enter__ / _before_and_after___enter__ / _before___enter___and_disable___exit__ /
    # test_disable___enter__ / test_disable___exit__ / test_graph_break_and_disable___enter__:
    # __enter__/__exit__ called by hand with a break or a dynamo-disabled call around them.
    # torch's dynamo raises InternalTorchDynamoError for before/disable_enter/disable_exit;
    # tracegrad.compile gives eager's result
    def make(T):
        log = []
        dis, brk = T._dynamo.disable, T._dynamo.graph_break

        @contextlib.contextmanager
        def whoo(x):
            log.append("enter")
            try:
                if where == "inside":
                    brk()
                yield x.cos() + 1
            finally:
                log.append("exit")

        def fn(x):
            ctx = whoo(x)
            try:
                if where.startswith(("before", "graph_break")):
                    brk()
                if "disable_enter" in where:
                    y = dis(lambda: ctx.__enter__())()
                else:
                    y = ctx.__enter__()
                if where in ("after", "before_and_after"):
                    brk()
            finally:
                if "disable_exit" in where:
                    dis(lambda: ctx.__exit__(None, None, None))()
                else:
                    ctx.__exit__(None, None, None)
            return y * x
        return fn, log
    _compare_state(make, 2)


def test_contextmanager_as_argument():
    # ContextlibContextManagerTests.test_contextmanager_as_argument: a fresh generator manager
    # passed in each call, entered and exited inside
    def build(T, wrap):
        log = []
        whoo = _whoo(T, log, brk=None)

        def fn(x, ctx):
            y = ctx.__enter__()
            ctx.__exit__(None, None, None)
            return x + y
        fn = wrap(fn)

        def run(i):
            x = _x(T, i, 2)
            return fn(x, whoo(x)), list(log)
        return run
    compare(build)


def test_contextmanager_as_argument_only___enter__():
    # ContextlibContextManagerTests.test_contextmanager_as_argument_only___enter__: entered inside,
    # exited by the caller after the call: the log has one item after the call, two after exit
    def build(T, wrap):
        log = []
        whoo = _whoo(T, log, brk=None)

        def fn(x, ctx):
            return x + ctx.__enter__()
        fn = wrap(fn)

        def run(i):
            x = _x(T, i, 2)
            ctx = whoo(x)
            y = fn(x, ctx)
            n_inside = len(log)
            ctx.__exit__(None, None, None)
            return y, n_inside, list(log)
        return run
    compare(build)


@pytest.mark.parametrize("advanced", [False, True])
def test_contextmanager_as_argument_only___exit__(advanced):
    # ContextlibContextManagerTests.test_contextmanager_as_argument_only___exit__ /
    # test_advanced_contextmanager_as_argument: entered by the caller, exited inside
    def build(T, wrap):
        log = []
        whoo = _whoo(T, log, brk=None)

        def fn(x, ctx):
            ctx.__exit__(None, None, None)
            return x + 1 if advanced else x.sin()
        fn = wrap(fn)

        def run(i):
            x = _x(T, i, 2)
            ctx = whoo(x)
            entered = ctx.__enter__()
            return entered, fn(x, ctx), list(log)
        return run
    compare(build)


def test_advanced_contextmanager_as_argument_error():
    # ContextlibContextManagerTests.test_advanced_contextmanager_as_argument_error: a generator
    # manager entered by the caller and again inside raises AttributeError naming ``args``
    def build(T):
        @contextlib.contextmanager
        def whoo(x):
            try:
                yield x.cos() + 1
            finally:
                pass

        def fn(x, ctx):
            y = ctx.__enter__()
            ctx.__exit__(None, None, None)
            return y
        return whoo, fn

    for T, wrap in ((torch, lambda f: f), (tracegrad, tracegrad.compile)):
        whoo, fn = build(T)
        fn = wrap(fn)
        for i in range(CALLS):
            x = _x(T, i, 1)
            ctx = whoo(x)
            ctx.__enter__()
            with pytest.raises(AttributeError, match="args"):
                fn(x, ctx)


@pytest.mark.parametrize("name", ["disable_ctx_manager", "dynamo_disable_ctx"])
def test_disable_ctx_manager(name):
    # ContextlibContextManagerTests.test_disable_ctx_manager / test_dynamo_disable_ctx: a
    # dynamo-disabled callee using a generator manager
    def build(T):
        @contextlib.contextmanager
        def whoo(x):
            try:
                yield x + 1
            finally:
                pass

        @T._dynamo.disable
        def g(x):
            with whoo(x) as y:
                return y

        return lambda x: g(x) * 2
    check(build, lambda T, i: (_x(T, i, 2, rg=True),), backward=True)


@pytest.mark.parametrize("brk", [True, False])
def test_graph_break_inside_ctx_2(brk):
    # ContextlibContextManagerTests.test_graph_break_inside_ctx_2 / test_disable_trace_contextmanager:
    # a manager yielding cos(x) (after a break, with ``brk``) in the middle of in-place math; the
    # body calls a helper (acos of the cosine). torch's config switch has no counterpart
    def build(T):
        @contextlib.contextmanager
        def whoo(x):
            try:
                if brk:
                    T._dynamo.graph_break()
                yield x.cos()
            finally:
                pass

        def g(x):
            return x.neg() + x.acos()

        def f(x):
            y = x.sin()
            with whoo(x) as z:
                y += g(z)
            y += y.tan()
            return y
        return f
    check(build, lambda T, i: (_x(T, i, 2, rg=True),), backward=True)


@pytest.mark.parametrize("name", ["suppress", "stdout", "stderr"])
def test_contextlib_suppress(name):
    # ContextlibContextManagerTests.test_contextlib_suppress: contextlib.suppress (the error
    # raised inside is swallowed after an in-place add), redirect_stdout/redirect_stderr
    # (what the body prints lands in the buffer on every call)
    def build(T, wrap):
        buf = io.StringIO()

        def fn(t, i):
            y = t.sin()
            if name == "suppress":
                ctx = contextlib.suppress(ValueError)
            elif name == "stdout":
                ctx = contextlib.redirect_stdout(buf)
            else:
                ctx = contextlib.redirect_stderr(buf)
            with ctx:
                y += t.cos()
                print("call", i, file=sys.stderr if name == "stderr" else sys.stdout)
                if name == "suppress":
                    raise ValueError("swallowed")
            return y.tan()
        fn = wrap(fn)

        def run(i):
            return fn(_x(T, i, 2), i), buf.getvalue()
        return run
    compare(build)


def test_contextlib_nullcontext():
    # ContextlibContextManagerTests.test_contextlib_nullcontext: a return from inside a
    # nullcontext, with fullgraph=True (no graph break)
    def build(T):
        def fn(t):
            with contextlib.nullcontext():
                return t.sin()
        return fn
    check(build, lambda T, i: (_x(T, i, 2, rg=True),), backward=True, fullgraph=True)


# ---- CPythonContextManagerTestCase (torch marks these expectedFailure for dynamo) ------------

def test_contextmanager_plain():
    # CPythonContextManagerTestCase.test_contextmanager_plain: a manager appending to a state
    # list before and after its yield; the body appends the yielded value and adds it to a sum
    def make(T):
        state = []

        @contextlib.contextmanager
        def woohoo():
            state.append(1)
            yield 42
            state.append(999)

        def fn(t):
            y = t.sum()
            with woohoo() as x:
                assert state[-1] == 1
                state.append(x)
                y += x
            return y
        return fn, state
    _compare_state(make, 2, 3)


def test_contextmanager_finally():
    # CPythonContextManagerTestCase.test_contextmanager_finally: the body raises; the finally
    # still appends and the error reaches the caller on every call
    def build(T, wrap):
        state = []

        @contextlib.contextmanager
        def woohoo():
            state.append(1)
            try:
                yield 42
            finally:
                state.append(999)

        def fn(t):
            y = t.sum()
            with woohoo() as x:
                state.append(x)
                if x == 42:
                    raise ZeroDivisionError("in body")
            return y
        fn = wrap(fn)

        def run(i):
            with pytest.raises(ZeroDivisionError):
                fn(_x(T, i, 2, 3))
            return list(state)
        return run
    compare(build)


@pytest.mark.parametrize("exc", ["ZeroDivisionError", "RuntimeErrorSubclass", "StopIteration",
                                 "StopIterationSubclass"])
def test_contextmanager_traceback(exc):
    # CPythonContextManagerTestCase.test_contextmanager_traceback / 2 / 3: an error raised in a
    # with over a generator manager and caught around it: the traceback has one frame, the
    # function's own, at the raising line (StopIteration is not swallowed)
    class RuntimeErrorSubclass(RuntimeError):
        pass

    class StopIterationSubclass(StopIteration):
        pass

    kinds = {"ZeroDivisionError": ZeroDivisionError, "RuntimeErrorSubclass": RuntimeErrorSubclass,
             "StopIteration": StopIteration, "StopIterationSubclass": StopIterationSubclass}

    @contextlib.contextmanager
    def f():
        yield

    def build(T):
        def fn(t):
            y = t.sum()
            try:
                with f():
                    raise kinds[exc]("spam")
            except kinds[exc] as e:
                frames = traceback.extract_tb(e.__traceback__)
                return y, len(frames), frames[0].name, frames[0].line, e.args
            return y, None
        return fn
    check(build, lambda T, i: (_x(T, i, 2, 3),))


def test_contextmanager_no_reraise_and_traps():
    # CPythonContextManagerTestCase.test_contextmanager_no_reraise / _trap_yield_after_throw /
    # _trap_no_yield / _trap_second_yield: __exit__ with an error returns False; a generator
    # that yields again after the throw, never yields, or yields twice raises RuntimeError
    @contextlib.contextmanager
    def whee():
        yield

    @contextlib.contextmanager
    def yield_after_throw():
        try:
            yield
        except Exception:
            yield

    @contextlib.contextmanager
    def no_yield():
        if False:
            yield

    @contextlib.contextmanager
    def second_yield():
        yield
        yield

    def build(T):
        def fn(t):
            seen = []
            ctx = whee()
            ctx.__enter__()
            seen.append(ctx.__exit__(TypeError, TypeError("foo"), None))
            for make, exit_args in ((yield_after_throw, (TypeError, TypeError("foo"), None)),
                                    (no_yield, None), (second_yield, (None, None, None))):
                ctx = make()
                try:
                    ctx.__enter__()
                    ctx.__exit__(*exit_args)
                    seen.append("no error")
                except RuntimeError as e:
                    seen.append(str(e))
            return t.sum(), seen
        return fn
    check(build, lambda T, i: (_x(T, i, 2, 3),))


def test_contextmanager_except():
    # CPythonContextManagerTestCase.test_contextmanager_except: the manager catches the body's
    # ZeroDivisionError (so the with swallows it) and records its argument
    def make(T):
        state = []

        @contextlib.contextmanager
        def woohoo():
            state.append(1)
            try:
                yield 42
            except ZeroDivisionError as e:
                state.append(e.args[0])

        def fn(t):
            with woohoo() as x:
                state.append(x)
                raise ZeroDivisionError(999)
            return t * 2
        return fn, state
    _compare_state(make, 2)


def test_contextmanager_wrap_and_unchain():
    # CPythonContextManagerTestCase.test_contextmanager_do_not_unchain_non_stopiteration_exceptions
    # / test_contextmanager_wrap_runtimeerror: a manager re-raising the body's error as a
    # RuntimeError from it; a StopIteration from the body comes out as itself
    @contextlib.contextmanager
    def chained():
        try:
            yield
        except Exception as exc:
            raise RuntimeError(f"caught {type(exc).__name__}") from exc

    def build(T):
        def fn(t):
            seen = []
            for err in (ZeroDivisionError, StopIteration):
                try:
                    with chained():
                        raise err("x")
                except Exception as ex:
                    seen.append((type(ex).__name__, ex.args[0], type(ex.__cause__).__name__))
            return t.cos(), seen
        return fn
    check(build, lambda T, i: (_x(T, i, 2, rg=True),), backward=True)


def test_keywords_and_recursive():
    # CPythonContextManagerTestCase.test_keywords / test_recursive: a manager taking keywords
    # named like _GeneratorContextManager's own attributes; a manager used as a decorator of a
    # recursive function, counting its entries and depth in nonlocals
    def make(T):
        count = {"depth": 0, "ncols": 0}

        @contextlib.contextmanager
        def woohoo_kw(self, func, args, kwds):
            yield (self, func, args, kwds)

        @contextlib.contextmanager
        def woohoo():
            count["ncols"] += 1
            before = count["depth"]
            count["depth"] += 1
            yield
            count["depth"] -= 1
            assert count["depth"] == before

        @woohoo()
        def recursive():
            if count["depth"] < 4:
                recursive()

        def fn(t):
            with woohoo_kw(self=11, func=22, args=33, kwds=44) as target:
                recursive()
                return t * target[3]
        return fn, count
    _compare_state(make, 2)


def test_autograd_profiler_enabled():
    # CtxManagerTests.test_autograd_profiler_enabled: a branch on
    # torch.autograd._profiler_enabled(), called outside and inside a profiler
    def build(T):
        def fn(x):
            if T.autograd._profiler_enabled():
                return x + 1
            return x - 1
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            x = _x(T, i, 2, 2, rg=True)
            out = fn(x)
            with T.autograd.profiler.profile():
                inside = fn(x)
            seen.append((out, inside))
        same(seen[0], seen[1], f"call{i}")
    # one program per answer. Regression: the answer the trace read was frozen into the one
    # program (x + 1 outside the profiler after a trace under it)
    assert fns[1][1].stats["traces"] == 2, fns[1][1].stats


def test_is_autocast_cpu_enabled():
    # CtxManagerTests.test_is_autocast_cpu_enabled: a branch on is_autocast_cpu_enabled()
    # inside an autocast region, fullgraph
    def build(T):
        def fn(a, b):
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                c = T.mm(a, b)
                if T.is_autocast_cpu_enabled():
                    c = c + 1
            return c
        return fn
    check(build, lambda T, i: (_x(T, i, 4, 4), _x(T, i, 4, 4, seed=3)), fullgraph=True)


def test_autocast_cpu_graph_break():
    # CtxManagerTests.test_autocast_cpu_graph_break: breaks before and inside the autocast
    # region of a module's forward; the result is bfloat16 as eagerly
    def build(T):
        class MyModule(T.nn.Module):
            def forward(self, a, b, d):
                T._dynamo.graph_break()
                with T.autocast(device_type="cpu", dtype=T.bfloat16):
                    e16 = T.mm(a, b)
                    T._dynamo.graph_break()
                    return T.mm(d, e16)
        return MyModule()
    check(build, lambda T, i: tuple(_x(T, i, 4, 4, seed=s) for s in (0, 3, 5)))
