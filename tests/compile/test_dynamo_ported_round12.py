"""Round-12 ports of PyTorch's own torch.compile tests, run as plain ``tracegrad.compile`` calls:
test/dynamo/test_ctx_manager.py (grad modes, inference_mode, autocast in and around compiled
functions), test/dynamo/test_global.py (globals read and written by compiled functions),
test/dynamo/test_recompiles.py (what recompiles, ``recompile_limit``), test/dynamo/test_functions.py
(Python control flow, builtins, closures, containers in and out), test/dynamo/
test_autograd_function.py gaps and test/dynamo/test_aot_autograd.py (compiled forward then
backward, inputs mutated in place, outputs aliasing inputs). Each test names its original; only
what a user can observe is ported (values, grads, side effects on every call, and the number of
traces where the original's point is "no recompile"). The first call of a compiled function runs
eagerly and the second traces, so each test calls at least three times."""
import collections
import dataclasses
import functools

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

CALLS = 4


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=np.float64)


def _is_t(x):
    return hasattr(x, "detach") and hasattr(x, "requires_grad") and hasattr(x, "grad_fn")


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [type(x).__name__] + [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [("keys", tuple(x))] + [v for k in x for v in _flat(x[k])]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [type(x).__name__] + _flat([getattr(x, f.name) for f in dataclasses.fields(x)])
    if _is_t(x):
        return [("t", _np(x), x.requires_grad, str(x.dtype).split(".")[-1], tuple(x.shape))]
    return [x]


def same(a, b, what="out"):
    """``b`` (compiled tracegrad) equals ``a`` (torch or eager tracegrad): values, dtypes, shapes,
    requires_grad and plain Python values, through lists/tuples/dicts/dataclasses."""
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb), f"{what}: {fa} vs {fb}"
    for i, (u, v) in enumerate(zip(fa, fb)):
        if isinstance(u, tuple) and u and u[0] == "t":
            assert isinstance(v, tuple) and v and v[0] == "t", f"{what}[{i}]: tensor vs {v!r}"
            assert u[3:] == v[3:], f"{what}[{i}] dtype/shape {u[3:]} vs {v[3:]}"
            np.testing.assert_allclose(v[1], u[1], rtol=1e-5, atol=1e-6, err_msg=f"{what}[{i}]")
            assert u[2] == v[2], f"{what}[{i}] requires_grad {u[2]} vs {v[2]}"
        else:
            assert u == v, f"{what}[{i}]: {u!r} vs {v!r}"


def rand(T, i, *shape, rg=False, seed=0):
    t = T.tensor(np.random.RandomState(seed + i).randn(*shape).astype("float32"))
    return t.requires_grad_() if rg else t


def check(build, make_args, calls=CALLS, backward=False, **compile_kw):
    """``build(T)`` -> a function over ``T``; ``make_args(T, i)`` -> call ``i``'s arguments.
    torch eager, tracegrad eager and ``tracegrad.compile`` run ``calls`` times on fresh equal
    arguments; outputs (and, with ``backward``, the leaf arguments' grads after
    ``out.sum().backward()``) must agree. Returns the compiled function."""
    fns = [(torch, build(torch)), (tracegrad, build(tracegrad)),
           (tracegrad, tracegrad.compile(build(tracegrad), **compile_kw))]
    for i in range(calls):
        seen = []
        for T, fn in fns:
            args = make_args(T, i)
            out = fn(*args)
            grads = None
            if backward:
                o = out[0] if isinstance(out, (tuple, list)) else out
                o.sum().backward()
                grads = [a.grad for a in args if _is_t(a) and a.is_leaf and a.requires_grad]
            seen.append((out, grads))
        for j, name in ((0, "torch"), (1, "eager")):
            same(seen[j][0], seen[2][0], f"call{i} compiled vs {name}")
            if backward:
                same(seen[j][1], seen[2][1], f"call{i} grads compiled vs {name}")
    return fns[2][1]


def _ab(T, i):
    return rand(T, i, 3, 4), rand(T, i, 3, 4, seed=7)


def _ab_rg(T, i):
    return rand(T, i, 3, 4, rg=True), rand(T, i, 3, 4, seed=7, rg=True)


# ---- test/dynamo/test_ctx_manager.py ---------------------------------------------------------
def test_no_grad_redundant_and_inner():
    # CtxManagerTests.test_no_grad: a no_grad block inside a function that is called both with
    # and without grad mode; the part computed under no_grad takes no gradient
    def build(T):
        def fn(a, b):
            x = a + 1
            with T.no_grad():
                x = x + b           # no gradient to b, and x is cut from a
            x = x + 2
            return x * a
        return fn
    check(build, _ab_rg, backward=True)


def test_no_grad_around_compiled_call():
    # CtxManagerTests.test_no_grad (second half) / test_grad_mode_guard: the same compiled
    # function called under no_grad and then with grad returns tensors that require grad
    # only in the second case (grad mode is part of what a program was traced under)
    def build(T):
        return lambda a, b: (a * b).sin() + a

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        outs = []
        for T, fn in fns:
            a, b = _ab_rg(T, i)
            with T.no_grad():
                o1 = fn(a, b)
            o2 = fn(a, b)
            o2.sum().backward()
            outs.append((o1, o2, a.grad, b.grad))
        same(outs[0], outs[1], f"call{i}")


def test_enable_grad_inside_no_grad():
    # CtxManagerTests.test_enable_grad: enable_grad inside a function called under no_grad
    def build(T):
        def fn(a, b):
            x = a * 2
            with T.enable_grad():
                y = b.exp() * a
            return x, y
        return fn

    fns = [(torch, build(torch)), (tracegrad, build(tracegrad)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        outs = []
        for T, fn in fns:
            a, b = _ab_rg(T, i)
            with T.no_grad():
                x, y = fn(a, b)
            y.sum().backward()
            outs.append((x, y, a.grad, b.grad))
        same(outs[0], outs[2], f"call{i} torch")
        same(outs[1], outs[2], f"call{i} eager")


@pytest.mark.parametrize("flag", [False, True])
def test_set_grad_enabled_context(flag):
    # CtxManagerTests.test_set_grad_enabled / test_nested_grad_mode: set_grad_enabled(flag)
    # as a context manager, nested under no_grad / enable_grad
    def build(T):
        def fn(a, b):
            with T.no_grad():
                with T.set_grad_enabled(flag):
                    x = a * b
                y = a + b
            with T.set_grad_enabled(not flag):
                z = (a - b).cos()
            return x, y, z, T.is_grad_enabled()
        return fn
    check(build, _ab_rg)


def test_set_grad_enabled_as_a_call_persists_after_return():
    # CtxManagerTests.test_set_grad_enabled (torch.set_grad_enabled(False) as a statement):
    # the grad mode it sets outlives the compiled function, on every call
    def build(T):
        def fn(a):
            T.set_grad_enabled(False)
            return a * 2
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            a = rand(T, i, 3, rg=True)
            try:
                out = fn(a)
                after = T.is_grad_enabled()
            finally:
                T.set_grad_enabled(True)
            seen.append((out, after))
        same(seen[0], seen[1], f"call{i}")


def test_grad_mode_restored_after_exception_inside_no_grad():
    # CtxManagerTests.test_disable_saved_tensors_hooks / exception tests: leaving a no_grad
    # block by an exception restores grad mode; the next call works and matches eager
    def build(T):
        def fn(a, raise_it):
            with T.no_grad():
                y = a * 3
                if raise_it:
                    raise ValueError("boom")
            return y + a
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            a = rand(T, i, 3, rg=True)
            with pytest.raises(ValueError, match="boom"):
                fn(a, True)
            assert T.is_grad_enabled()
            seen.append(fn(a, False))
        same(seen[0], seen[1], f"call{i}")


def test_inference_mode_inside():
    # CtxManagerTests.test_inference_mode: inference_mode inside the compiled function;
    # the tensor made there is an inference tensor and takes no grad
    def build(T):
        def fn(x):
            with T.inference_mode():
                y = x * 2 + 1
                inside = T.is_inference_mode_enabled()
            return y, y.is_inference(), y.requires_grad, inside, T.is_inference_mode_enabled()
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, rg=True),))


def test_inference_mode_around_compiled_call():
    # CtxManagerTests.test_inference_mode / test_inference_mode_disable: a compiled function
    # called under inference_mode (and under inference_mode(False) nested) returns inference
    # tensors exactly when eager does
    def build(T):
        return lambda x: (x.sin() * 2, T.is_inference_mode_enabled())

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            x = rand(T, i, 4)
            with T.inference_mode():
                o1 = fn(x)
                with T.inference_mode(False):
                    o2 = fn(rand(T, i, 4))
            seen.append((o1, o1[0].is_inference(), o2, o2[0].is_inference()))
        same(seen[0], seen[1], f"call{i}")


def test_autocast_cpu_bfloat16_inside():
    # CtxManagerTests.test_autocast / test_autocast_cpu: mm under autocast("cpu", bfloat16)
    # gives bfloat16; an op outside the block keeps float32
    def build(T):
        def fn(a, b):
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                c = T.mm(a, b)
                d = T.mm(c, b.t())
            e = a + 1
            return c, d, e
        return fn
    check(build, lambda T, i: (rand(T, i, 3, 3), rand(T, i, 3, 3, seed=5)))


def test_autocast_around_compiled_call_and_disabled_inside():
    # CtxManagerTests.test_autocast_cpu_graph_break / test_autocast_arguments: the caller's
    # autocast applies inside the compiled function; autocast(enabled=False) inside turns it off
    def build(T):
        def fn(a, b):
            c = T.mm(a, b)
            with T.autocast(device_type="cpu", enabled=False):
                d = T.mm(a.float(), b.float())
            return c, d
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            a, b = rand(T, i, 3, 3), rand(T, i, 3, 3, seed=5)
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                seen.append(fn(a, b))
            seen[-1] = (seen[-1], fn(a, b))         # and without autocast: float32
        same(seen[0], seen[1], f"call{i}")


def test_autocast_as_decorator_and_grads():
    # CtxManagerTests.test_autocast_decorator / test_autocast_float64: a function decorated
    # with autocast, backward through it gives float32 leaf grads
    def build(T):
        @T.autocast(device_type="cpu", dtype=T.bfloat16)
        def inner(a, b):
            return T.mm(a, b)

        def fn(a, b):
            return inner(a, b).float().sum(0)
        return fn
    check(build, lambda T, i: (rand(T, i, 3, 3, rg=True), rand(T, i, 3, 3, seed=5, rg=True)), backward=True)


def _grad_mode_after(build, make_args, calls=CALLS):
    """Runs torch eager and ``tracegrad.compile`` ``calls`` times: outputs and the grad mode
    after each call agree (grad mode put back to True between calls)."""
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(calls):
        seen = []
        for T, fn in fns:
            try:
                out = fn(*make_args(T, i))
                seen.append((out, T.is_grad_enabled()))
            finally:
                T.set_grad_enabled(True)
        same(seen[0], seen[1], f"call{i}")
    return fns[1][1]


def test_grad_mode_guard_set_as_statement_with_graph_break():
    # CtxManagerTests.test_grad_mode_guard: set_grad_enabled(False) as a statement, then a graph
    # break (tolist), then the previous mode set back. Regression: the abandoned trace left grad
    # mode False, so the eager rerun read prev=False and the caller's grad mode stayed off
    def build(T):
        def fn(a, b):
            prev_grad = T.is_grad_enabled()
            T.set_grad_enabled(False)
            a = a + 1
            a.tolist()  # graph break
            ret = a + b
            T.set_grad_enabled(prev_grad)
            return ret
        return fn
    _grad_mode_after(build, _ab_rg)


def test_global_setting_changed_before_graph_break_not_leaked():
    # the same bug for another global setting (set_default_dtype as a statement before a break)
    def build(T):
        def fn(x):
            prev = T.get_default_dtype()
            T.set_default_dtype(T.float64)
            y = x + T.ones(3)
            y.tolist()
            T.set_default_dtype(prev)
            return y, T.get_default_dtype() == prev
        return fn
    _grad_mode_after(build, lambda T, i: (rand(T, i, 3),))
    assert tracegrad.get_default_dtype() == tracegrad.float32


def test_nested_grad_mode_graph_break():
    # CtxManagerTests.test_nested_grad_mode_graph_break
    def build(T):
        def fn(x):
            before = T.is_grad_enabled()
            with T.set_grad_enabled(False):
                T._dynamo.graph_break()
                with T.set_grad_enabled(True):
                    x = T.mul(x, 5)
                    T._dynamo.graph_break()
                    x = T.sqrt(x)
                    assert T.is_grad_enabled()
                assert not T.is_grad_enabled()
            assert T.is_grad_enabled() == before
            return x
        return fn
    _grad_mode_after(build, lambda T, i: (rand(T, i, 3, 4).abs().requires_grad_(),))


def test_customized_ctx_managers_with_private_set_grad_enabled():
    # CtxManagerTests.test_context_manager_* with CustomizedCtxManager / customized_ctx_manager:
    # a class and a contextlib manager switching grad mode through torch._C._set_grad_enabled
    import contextlib

    def build(T):
        class Ctx:
            def __init__(self, mode):
                self.prev = T.is_grad_enabled()
                self.mode = mode

            def __enter__(self):
                T._C._set_grad_enabled(self.mode)

            def __exit__(self, exc_type, exc_value, traceback):
                T._C._set_grad_enabled(self.prev)

        @contextlib.contextmanager
        def ctx(mode):
            prev = T.is_grad_enabled()
            try:
                yield T._C._set_grad_enabled(mode)
            finally:
                T._C._set_grad_enabled(prev)

        def fn(x):
            x = x + 1
            with Ctx(False):
                y = x * 2
            with ctx(False):
                z = x * 3
                inside = T.is_grad_enabled()
            return x + y + z, y, z, inside
        return fn
    _grad_mode_after(build, lambda T, i: (rand(T, i, 3, rg=True),))
    for T in (torch, tracegrad):
        with pytest.raises(TypeError):
            T._C._set_grad_enabled(1)


def test_profiler_contexts_inside_compiled_function():
    # CtxManagerTests.test_torch_profiler / test_autograd_profiler: profiler contexts inside do
    # not change values or grads
    def build(T):
        def fn(x):
            y = x ** 2
            with T.autograd.profiler.profile():
                y = y + 2
                with T.autograd.profiler.record_function("my_function"):
                    z = y ** 3
                    z = z + 1
            return z
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 2, rg=True),), backward=True)


# ---- test/dynamo/test_global.py --------------------------------------------------------------
g_counter = 1
g_list = []
g_tensor = None


class _Holder:
    value = 1


def test_store_global_1():
    # TestGlobals.test_store_global_1: read a global, then increment it; each call sees the
    # value the previous call left
    global g_counter

    def fn(x):
        global g_counter
        val = x + g_counter
        g_counter += 1
        return val

    cf = tracegrad.compile(fn)
    for i in range(CALLS):
        g_counter = 1
        ref = _np(fn(rand(tracegrad, i, 3)))
        assert g_counter == 2
        g_counter = 1
        outs = [_np(cf(rand(tracegrad, i, 3))) for _ in range(3)]
        assert g_counter == 4
        np.testing.assert_allclose(outs[0], ref)
        np.testing.assert_allclose(outs[2], ref + 2, rtol=1e-6)


def test_store_global_2_and_read_back():
    # TestGlobals.test_store_global_2: increment, then read the incremented value in the same call
    global g_counter

    def fn(x):
        global g_counter
        g_counter += 1
        val = x + g_counter
        return val

    cf = tracegrad.compile(fn)
    g_counter = 1
    x = rand(tracegrad, 0, 3)
    for k in range(CALLS):
        out = cf(x)
        assert g_counter == 2 + k
        np.testing.assert_allclose(_np(out), _np(x) + 2 + k, rtol=1e-6)


def test_store_global_new_and_list():
    # TestGlobals.test_store_global_new / test_store_global_list / test_store_global_list_2:
    # a function creating a global, appending to a global list, rebinding a global list
    global g_list

    def make():
        def fn(x):
            global g_list
            g_list.append(x.sum())
            out = x * len(g_list)
            return out
        return fn

    cf = tracegrad.compile(make())
    g_list = []
    xs = [rand(tracegrad, i, 3) for i in range(CALLS)]
    for i, x in enumerate(xs):
        out = cf(x)
        assert len(g_list) == i + 1
        np.testing.assert_allclose(_np(out), _np(x) * (i + 1), rtol=1e-6)
        np.testing.assert_allclose(_np(g_list[-1]), _np(x).sum(), rtol=1e-5)

    def rebind(x):
        global g_list
        g_list = [x * 2, x + 1]
        return x.neg()

    cr = tracegrad.compile(rebind)
    for i, x in enumerate(xs):
        g_list = None
        out = cr(x)
        assert isinstance(g_list, list) and len(g_list) == 2
        np.testing.assert_allclose(_np(g_list[0]), _np(x) * 2, rtol=1e-6)
        np.testing.assert_allclose(_np(out), -_np(x))


def test_store_global_tensor_inplace_and_rebind():
    # TestGlobals.test_store_global_tensor / test_global_tensor mutation: a global tensor
    # updated in place every call, and a global rebound to a new tensor every call
    global g_tensor

    def fn(x):
        g_tensor.add_(x)
        return g_tensor * 2

    seen = []
    for f in (fn, tracegrad.compile(fn)):
        g_tensor = tracegrad.zeros(3)
        hist = []
        for i in range(CALLS):
            hist.append((_np(f(rand(tracegrad, i, 3))), _np(g_tensor)))
        seen.append(hist)
    for (o1, g1), (o2, g2) in zip(*seen):
        np.testing.assert_allclose(o2, o1, rtol=1e-6)
        np.testing.assert_allclose(g2, g1, rtol=1e-6)

    def rebind(x):
        global g_tensor
        g_tensor = g_tensor + x
        return g_tensor.sum()

    seen = []
    for f in (rebind, tracegrad.compile(rebind)):
        g_tensor = tracegrad.ones(3)
        seen.append([(_np(f(rand(tracegrad, i, 3))), _np(g_tensor)) for i in range(CALLS)])
    for (o1, g1), (o2, g2) in zip(*seen):
        np.testing.assert_allclose(o2, o1, rtol=1e-5)
        np.testing.assert_allclose(g2, g1, rtol=1e-5)


def test_store_global_crossmodule_attribute():
    # TestGlobals.test_store_global_crossfile / test_store_variable_across_modules: an
    # attribute of another object (a module-level class here) read and written
    def fn(x):
        val = x * _Holder.value
        _Holder.value += 1
        return val

    cf = tracegrad.compile(fn)
    _Holder.value = 1
    x = rand(tracegrad, 0, 3)
    for k in range(CALLS):
        np.testing.assert_allclose(_np(cf(x)), _np(x) * (k + 1), rtol=1e-6)
    assert _Holder.value == CALLS + 1


def test_global_read_changes_between_calls_not_frozen():
    # TestGlobals.test_read_global / MiscTests.test_global_state_guard: a global read by a
    # compiled function and changed between calls from outside is seen, never frozen
    global g_counter

    def fn(x):
        return x * g_counter + (1 if g_counter > 2 else 0)

    cf = tracegrad.compile(fn)
    x = rand(tracegrad, 0, 3)
    for k in (1, 2, 3, 1, 4, 4):
        g_counter = k
        np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-6)


_name = 0


def fresh_name():
    """test/dynamo/test_global.py's name counter: a module global bumped by every call."""
    global _name
    r = f"v{_name}"
    _name += 1
    return r


def test_store_global_inline_class_init_bumps_counter():
    # TestGlobals.test_store_global_inline_1 / _2: a class defined in the test, whose __init__
    # (or a static method constructing it) calls a module function bumping a global counter.
    # Regression: classes the code names were not scanned, so the counter was frozen after the
    # trace (every compiled call returned "v2v3" and left the counter alone)
    global _name

    class Variable:
        def __init__(self, value, name=None):
            self.value = value
            self.name = name or fresh_name()

        @staticmethod
        def constant(value, name=None):
            return Variable(value, name)

    def fn(a, b):
        a = Variable(a)
        b = Variable.constant(b)
        return a.value + b.value, a.name + b.name

    cf = tracegrad.compile(fn)
    _name = 0
    for k in range(CALLS):
        a, b = _ab(tracegrad, k)
        v, s = cf(a, b)
        assert s == f"v{2 * k}v{2 * k + 1}"
        np.testing.assert_allclose(_np(v), _np(a) + _np(b), rtol=1e-6)
    assert _name == 2 * CALLS


def _user_module(name, source):
    import types
    m = types.ModuleType(name)
    exec(source, vars(m))
    return m


def test_store_global_cross_file_tensor_and_counter():
    # TestGlobals.test_store_global_cross_file / test_store_global_object: another module's
    # tensor rebound (``utils.g_tensor_export = utils.g_tensor_export + 1``) and its int and
    # list changed by the compiled function. Regression: a module's attributes were not
    # references: the int and list changes happened once (frozen values after the trace) and
    # the rebound tensor leaked a tracer into the module
    import tracegrad as T
    utils = _user_module("utils_round12", "import tracegrad\ng_tensor_export = tracegrad.zeros(3)\nn = 1\nlog = []\n")

    def fn(x):
        val = x + utils.g_tensor_export + utils.n
        utils.g_tensor_export = utils.g_tensor_export + 1
        utils.n += 1
        utils.log.append(utils.n)
        return val

    cf = T.compile(fn)
    x = rand(T, 0, 3)
    for k in range(CALLS):
        np.testing.assert_allclose(_np(cf(x)), _np(x) + k + (k + 1), rtol=1e-6)
        np.testing.assert_allclose(_np(utils.g_tensor_export), np.full(3, k + 1.0))
        assert utils.n == k + 2 and utils.log == list(range(2, k + 3))


def test_store_global_crossfile_inline_flags():
    # TestGlobals.test_store_global_crossfile_inline: functions of another module set and
    # clear its global flag; the flag after each compiled call is eager's
    mock = _user_module("mock_store_global_crossfile_inline_round12",
                        "global_flag = None\n"
                        "def set_flag_true():\n    global global_flag\n    global_flag = True\n"
                        "def set_flag_false():\n    global global_flag\n    global_flag = False\n")

    def fn(x):
        mock.set_flag_true()
        mock.set_flag_false()
        return x + 1

    def fn_set_true(x):
        mock.set_flag_true()
        return x + 1

    fn, fn_set_true = tracegrad.compile(fn), tracegrad.compile(fn_set_true)
    for _ in range(CALLS):
        np.testing.assert_allclose(_np(fn_set_true(tracegrad.ones(2, 2))), np.full((2, 2), 2.0))
        assert mock.global_flag is True
        fn(tracegrad.ones(2, 2))
        assert mock.global_flag is False


def test_delete_global_every_call_then_name_error():
    # TestDeleteGlobal.test_delete_global / test_delete_missing_global: ``del`` of a global on
    # every call; with the global gone the compiled call raises eager's NameError
    def fn(x):
        global _dg_a
        del _dg_a
        return x + 1

    cf = tracegrad.compile(fn)
    try:
        for _ in range(CALLS):
            globals()["_dg_a"] = 10
            np.testing.assert_allclose(_np(cf(tracegrad.ones(2))), np.full(2, 2.0))
            assert "_dg_a" not in globals()
        with pytest.raises(NameError, match="_dg_a"):
            cf(tracegrad.ones(2))
    finally:
        globals().pop("_dg_a", None)


def test_store_global_dict_and_list_items():
    # TestGlobals.test_store_global_dict / _dict_2 / test_store_global_list: items of a global
    # dict and list bumped in place, and the dict rebound, on every call
    global g_list
    g_dict = {"a": 0, "b": 1}

    def fn(x):
        val = x + g_dict["b"] + g_list[1]
        g_dict["b"] += 1
        g_list[1] += 1
        return val

    g_list = [0, 1, 2]
    cf = tracegrad.compile(fn)
    x = rand(tracegrad, 0, 3)
    for k in range(CALLS):
        np.testing.assert_allclose(_np(cf(x)), _np(x) + 2 + 2 * k, rtol=1e-6)
    assert g_dict == {"a": 0, "b": 1 + CALLS} and g_list == [0, 1 + CALLS, 2]


# ---- test/dynamo/test_recompiles.py ----------------------------------------------------------
def _traces(cf):
    return cf.stats["traces"]


def test_recompiles_true_false_flop():
    # RecompileTests.test_recompiles_true_false_flop: a bool argument flipping between calls
    # gives each branch's value, and once both were traced flipping again traces nothing new
    def build(T):
        def fn(x, switch):
            y = x + 1
            return y * 2 if switch else y - 2
        return fn
    cf = check(build, lambda T, i: (rand(T, i, 3), i % 2 == 0), calls=6)
    n = _traces(cf)
    assert n <= 2
    for i in range(4):
        x = rand(tracegrad, i, 3)
        np.testing.assert_allclose(_np(cf(x, i % 2 == 1)), _np((x + 1) * 2 if i % 2 else (x + 1) - 2), rtol=1e-5, atol=1e-6)
    assert _traces(cf) == n


def test_no_recompile_on_fresh_equal_shaped_inputs():
    # RecompileTests.test_automatic_dynamic_reduce_recompiles (static half): fresh tensors of
    # the same shape and dtype reuse the program
    cf = check(lambda T: (lambda x, y: (x * y).sum(1) + x.mean()), lambda T, i: (rand(T, i, 2, 3), rand(T, i, 2, 3, seed=3)),
               calls=6)
    assert _traces(cf) == 1


def test_shape_changes_give_right_values():
    # RecompileTests.test_automatic_dynamic_reduce_recompiles / test_dynamic_shape_parameter_recompile:
    # the size changes every call; every result equals eager
    def build(T):
        def fn(x):
            n = x.shape[0]
            return x.reshape(n, -1).sum(1) * n + x.size(-1)
        return fn
    check(build, lambda T, i: (rand(T, i, i + 1, 2),), calls=5)


def test_recompile_on_grad_mode_change():
    # RecompileTests.test_recompiles_on_global_state (grad mode): the same inputs under grad and
    # no_grad alternately, with is_grad_enabled read in the function
    def build(T):
        def fn(x):
            y = x * 3
            return (y.sin() if T.is_grad_enabled() else y.cos()), y.requires_grad
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(6):
        seen = []
        for T, fn in fns:
            x = rand(T, 0, 3, rg=True)
            with T.set_grad_enabled(i % 2 == 0):
                seen.append(fn(x))
        same(seen[0], seen[1], f"call{i}")


def test_recompile_limit_falls_back_to_eager_values():
    # RecompileTests.test_recompile_limit / test_cache_size_limit: with recompile_limit=2 a
    # Python number argument that changes on every call still gives eager's value each call,
    # with at most 2 programs traced
    old = tracegrad._dynamo.config.recompile_limit
    tracegrad._dynamo.config.recompile_limit = 2
    try:
        def fn(x, k):
            return x * k + k
        cf = tracegrad.compile(fn, dynamic=False)
        x = rand(tracegrad, 0, 3)
        for k in range(1, 8):
            np.testing.assert_allclose(_np(cf(x, k)), _np(x) * k + k, rtol=1e-6)
        assert _traces(cf) <= 2
    finally:
        tracegrad._dynamo.config.recompile_limit = old


def test_aliased_inputs_then_distinct_inputs():
    # RecompileTests.test_aliasing_guard_failures: the same tensor passed twice (and written in
    # place) then two tensors: each call matches eager
    def build(T):
        def fn(a, b):
            a.add_(1)
            return a * b + b
        return fn

    fns = [(torch, build(torch)), (tracegrad, build(tracegrad)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(6):
        seen = []
        for T, fn in fns:
            a = rand(T, i, 3)
            b = a if i % 2 else rand(T, i, 3, seed=4)
            out = fn(a, b)
            seen.append((out, a, b))
        same(seen[0], seen[2], f"call{i} torch")
        same(seen[1], seen[2], f"call{i} eager")


def test_float_argument_changes_not_frozen():
    # RecompileTests.test_dynamic_shape_parameter_recompile / test_float_constant: a float
    # argument that changes each call is never frozen into the program
    cf = check(lambda T: (lambda x, s: (x * s).exp() - s), lambda T, i: (rand(T, 0, 3), 0.5 + 0.25 * i), calls=5)
    assert cf.stats["calls"] == 5


# ---- test/dynamo/test_functions.py -----------------------------------------------------------
Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Pair:
    a: object
    b: object
    scale: float = 1.0


def test_shape_control_flow_builtins():
    # FunctionTests.test_shape_int / test_len / test_min_max / test_builtin_isinstance /
    # test_math_sqrt: Python control flow and builtins over shapes and constants
    import math

    def build(T):
        def fn(x, ys):
            n = len(ys)
            s = sum(y.sum() for y in ys)
            m = max(x.shape) + min(x.shape)
            if x.dim() == 2 and x.shape[0] < x.shape[1]:
                s = s + x.t().sum()
            scale = math.sqrt(x.shape[-1])
            ok = isinstance(x, T.Tensor) and T.is_tensor(x) and T.is_floating_point(x)
            zs = [y * k for k, y in enumerate(reversed(ys))]
            return s * m / scale + n, zs, ok, x.dtype == T.float32, sorted([x.size(1), x.size(0)])
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3), [rand(T, i, 2, seed=k) for k in range(3)]))


def test_args_kwargs_defaults_keyword_only():
    # FunctionTests.test_default_args / test_kwargs / test_star_args / test_keyword_only:
    def build(T):
        def inner(a, *rest, scale=2.0, **kw):
            out = a * scale
            for r in rest:
                out = out + r
            for k in sorted(kw):
                out = out - kw[k] * len(k)
            return out

        def fn(x, y, *, bias=None, mode="add"):
            z = inner(x, y, y, scale=3.0, foo=x, ba=y)
            if bias is not None:
                z = z + bias
            return z if mode == "add" else -z
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS + 2):
        seen = []
        for T, fn in fns:
            x, y = _ab(T, i)
            kw = {} if i % 3 == 0 else ({"bias": y * 2} if i % 3 == 1 else {"bias": x, "mode": "neg"})
            seen.append(fn(x, y, **kw))
        same(seen[0], seen[1], f"call{i}")


def test_closure_and_nonlocal_counter_every_call():
    # FunctionTests.test_closure / test_nonlocal / MiscTests.test_closure_recompiles: a closure
    # cell read by the function and a nonlocal counter it increments on every call
    def build(T):
        count = 0
        weight = [1.5]

        def fn(x):
            nonlocal count
            count += 1
            return x * weight[0] + count, count
        return fn, weight

    (fr, wr), (fc, wc) = build(torch), build(tracegrad)
    fc = tracegrad.compile(fc)
    for i in range(CALLS + 2):
        if i == 3:
            wr[0] = wc[0] = -2.0          # the closed-over list changes from outside
        same(fr(rand(torch, i, 3)), fc(rand(tracegrad, i, 3)), f"call{i}")


def test_nested_functions_and_partial():
    # FunctionTests.test_nested_function / test_functools_partial / test_inline_lambda
    def build(T):
        def outer(x, y):
            def helper(a, k):
                return a.relu() * k
            add_k = functools.partial(helper, k=3)
            sq = lambda t: t * t  # noqa: E731
            return add_k(x) + sq(y), list(map(sq, [x, y]))
        return outer
    check(build, _ab_rg, backward=True)


def test_namedtuple_in_and_out():
    # FunctionTests.test_namedtuple / test_namedtuple_user_methods: namedtuples as arguments and results
    def build(T):
        def fn(p):
            q = Point(p.x + p.y, p.x * p.y)
            return q, q._replace(y=q.y.neg()), p.x.shape == p.y.shape
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            out = fn(Point(*_ab(T, i)))
            assert type(out[0]) is Point and type(out[1]) is Point
            seen.append(out)
        same(seen[0], seen[1], f"call{i}")


def test_dict_in_out_and_input_dict_mutated_every_call():
    # FunctionTests.test_dict_ops / test_dict_mutation_side_effect: a dict argument read, a new
    # dict returned, and a key written into the caller's dict on every call
    def build(T):
        def fn(d):
            out = {k: v * 2 for k, v in d.items() if k != "meta"}
            d["seen"] = d.get("seen", 0) + 1
            d["last"] = out["a"].sum()
            return out, sorted(d.keys())
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    dicts = []
    for T in (torch, tracegrad):
        a, b = _ab(T, 0)
        dicts.append({"a": a, "b": b, "meta": 1})
    for i in range(CALLS):
        seen = [fn(d) for (T, fn), d in zip(fns, dicts)]
        same(seen[0], seen[1], f"call{i}")
        assert dicts[1]["seen"] == dicts[0]["seen"] == i + 1
        same(dicts[0]["last"], dicts[1]["last"], f"call{i} last")


def test_dataclass_in_and_out():
    # FunctionTests.test_dataclass_* / MiscTests.test_dataclass_fields: dataclasses in and out
    def build(T):
        def fn(p):
            return Pair(p.a + p.b, p.a * p.scale, scale=p.scale * 2)
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            a, b = _ab(T, i)
            out = fn(Pair(a, b, scale=0.5 + i))
            assert isinstance(out, Pair)
            seen.append(out)
        same(seen[0], seen[1], f"call{i}")


def test_list_argument_appended_every_call():
    # FunctionTests.test_list_append_side_effect: an input list appended to on every call
    def build(T):
        def fn(x, acc):
            acc.append(x.sum())
            return x * len(acc)
        return fn

    accs = [[], []]
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        outs = [f(rand(T, i, 3), acc) for f, T, acc in zip(fns, (torch, tracegrad), accs)]
        same(outs[0], outs[1], f"call{i}")
        assert len(accs[1]) == i + 1
    same(accs[0], accs[1], "acc")


# ---- test/dynamo/test_autograd_function.py (gaps) --------------------------------------------
def _functions(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale                 # a Python float on ctx, changing between calls
            ctx.shape = x.shape
            return x * scale

        @staticmethod
        def backward(ctx, g):
            assert g.shape == ctx.shape
            return g * ctx.scale * 2, None

    class SortIdx(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            vals, idx = x.sort(-1)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return vals, idx

        @staticmethod
        def backward(ctx, gv, gi):
            (idx,) = ctx.saved_tensors
            return T.zeros_like(gv).scatter(-1, idx, gv)

    class NeedsGrad(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            ga = g * b if ctx.needs_input_grad[0] else None
            gb = g * a * 3 if ctx.needs_input_grad[1] else None
            return ga, gb

    class Once(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.exp() + 1

    class NoMaterialize(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone() * 2

        @staticmethod
        def backward(ctx, g1, g2):
            out = T.zeros_like(g1 if g1 is not None else g2)
            if g1 is not None:
                out = out + g1
            if g2 is not None:
                out = out + 5 * g2
            return out

    return Scale, SortIdx, NeedsGrad, Once, NoMaterialize


def test_autograd_function_ctx_python_attribute_changes():
    # AutogradFunctionTests.test_function_context_save_and_mark / test_stateful_ctx: a Python
    # attribute stored on ctx in forward (a float argument that changes) is used in backward
    def build(T):
        Scale = _functions(T)[0]
        return lambda x, s: Scale.apply(x.sin(), s).sum(0)
    check(build, lambda T, i: (rand(T, i, 2, 3, rg=True), 0.5 * (i + 1)), backward=True)


def test_autograd_function_mark_non_differentiable_output():
    # AutogradFunctionTests.test_mark_non_differentiable: the index output neither requires
    # grad nor takes a gradient; the values output does
    def build(T):
        SortIdx = _functions(T)[1]

        def fn(x):
            vals, idx = SortIdx.apply(x * 2)
            return vals * vals, idx, idx.requires_grad
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 4, rg=True),), backward=True)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_autograd_function_needs_input_grad(which):
    # AutogradFunctionTests.test_needs_input_grad: only the inputs that require grad get one
    def build(T):
        NeedsGrad = _functions(T)[2]
        return lambda a, b: NeedsGrad.apply(a, b) + 1

    def args(T, i):
        return rand(T, i, 3, rg=which != 1), rand(T, i, 3, seed=9, rg=which != 0)
    check(build, args, backward=True)


def test_autograd_function_once_differentiable():
    # AutogradFunctionTests.test_once_differentiable: backward decorated once_differentiable
    check(lambda T: (lambda x: _functions(T)[3].apply(x * 0.5).sum(1)),
          lambda T, i: (rand(T, i, 2, 3, rg=True),), backward=True)


def test_autograd_function_once_differentiable_double_backward_raises():
    # AutogradFunctionTests.test_once_differentiable (double backward): the gradient of a
    # once_differentiable backward cannot be differentiated again, compiled as eager
    for T, wrap in ((torch, lambda f: f), (tracegrad, tracegrad.compile)):
        Once = _functions(T)[3]
        fn = wrap(lambda x: Once.apply(x).sum())
        for i in range(3):
            x = rand(T, i, 3, rg=True)
            (g,) = T.autograd.grad(fn(x), x, create_graph=True)
            assert not g.requires_grad or g.grad_fn is not None
            with pytest.raises(RuntimeError):
                g.sum().backward()


@pytest.mark.parametrize("use", ["first", "second", "both"])
def test_autograd_function_set_materialize_grads_false(use):
    # AutogradFunctionTests.test_materialize_grads: with set_materialize_grads(False) the
    # unused output's gradient reaches backward as None
    def build(T):
        NoMat = _functions(T)[4]

        def fn(x):
            a, b = NoMat.apply(x)
            return a.sum() if use == "first" else (b.sum() if use == "second" else a.sum() + b.sum())
        return fn
    check(build, lambda T, i: (rand(T, i, 3, rg=True),), backward=True)


# ---- test/dynamo/test_aot_autograd.py --------------------------------------------------------
def test_aot_forward_then_backward_requires_grad_mix():
    # AotAutogradFallbackTests.test_aot_autograd_* / test_requires_grad_mix: one input requires
    # grad and one does not; an output depending only on the second does not require grad
    def build(T):
        def fn(a, b):
            return (a * b).tanh(), b.exp(), a.detach() * 2
        return fn
    check(build, lambda T, i: (rand(T, i, 3, rg=True), rand(T, i, 3, seed=2)), backward=True)


def test_aot_input_mutated_in_place_every_call():
    # AotAutogradFallbackTests.test_input_mutation / test_input_mutation_false_aliasing: a
    # non-grad input mutated in place (whole and through a view) on every call, its new value
    # used by an output that takes a gradient
    def build(T):
        def fn(a, b):
            a.mul_(2)
            a[0].add_(1)
            return a * b
        return fn

    fns = [(torch, build(torch)), (tracegrad, build(tracegrad)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    states = [(rand(T, 0, 2, 3), rand(T, 0, 2, 3, seed=1, rg=True)) for T, _ in fns]
    for i in range(CALLS):
        seen = []
        for (T, fn), (a, b) in zip(fns, states):
            b.grad = None
            out = fn(a, b)
            out.sum().backward()
            seen.append((out, a, b.grad, a._version > 0))
        same(seen[0], seen[2], f"call{i} torch")
        same(seen[1], seen[2], f"call{i} eager")


def test_aot_output_aliases_input_writes_reach_input():
    # AotAutogradFallbackTests.test_output_aliases_input / test_input_output_aliasing: outputs
    # that are views of an input (view, transpose, the input itself) alias it after a compiled
    # call as after an eager one: an in-place write to the output shows in the input
    def build(T):
        def fn(a):
            return a.view(-1), a.t(), a, a[1]
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            a = rand(T, i, 2, 3)
            flat, tr, same_a, row = fn(a)
            assert same_a is a
            flat[0] = 100.0
            tr[2, 1] = -7.0
            row.mul_(3)
            seen.append((a, flat, tr, row))
        same(seen[0], seen[1], f"call{i}")


def test_aot_output_view_of_grad_input_backward():
    # AotAutogradFallbackTests.test_output_op_depending_on_symint / view outputs of a leaf
    # that requires grad: grads flow through both views
    def build(T):
        def fn(a):
            v = a.view(-1)
            return (v * 2).sum() + a.t()[0].sum(), v
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, rg=True),), backward=True)


def test_aot_mutated_grad_input_view_backward():
    # AotAutogradFallbackTests.test_input_mutation_requires_grad: an intermediate made from a
    # requires-grad input, mutated in place, then used; grads equal eager
    def build(T):
        def fn(a, b):
            c = a * 1
            c.mul_(b)
            c[0] = c[0] * 2
            return c.sin()
        return fn
    check(build, _ab_rg, backward=True)


def test_hooks_on_compiled_outputs_every_call():
    # test_hooks.py HooksTests.test_tensor_register_hook_repeated_handle_return / compiled
    # autograd style: a hook registered on a compiled function's output (and retain_grad)
    # runs on every backward, and its change to the gradient reaches the inputs
    def build(T):
        return lambda a, b: (a * b).sin()

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            log = []
            a, b = _ab_rg(T, i)
            out = fn(a, b)
            out.retain_grad()
            out.register_hook(lambda g, log=log: (log.append(g.sum().item()), g * 3)[1])
            out.sum().backward()
            seen.append((a.grad, b.grad, out.grad, len(log)))
            np.testing.assert_allclose(log, [3 * 4], rtol=1e-6)
        same(seen[0], seen[1], f"call{i}")


def test_compiled_output_used_in_second_compiled_function_backward():
    # test_aot_autograd.py test_compiled_forward_used_twice / chained compiled functions: the
    # output of one compiled function fed to another, backward through both, gradient accumulated
    def build(T):
        f = lambda x, w: (x @ w).relu()  # noqa: E731
        g = lambda y, w: (y * y).sum() + w.sum()  # noqa: E731
        return f, g

    pairs = [(torch, build(torch)), (tracegrad, tuple(tracegrad.compile(h) for h in build(tracegrad)))]
    ws = [rand(T, 0, 3, 3, rg=True) for T, _ in pairs]
    for i in range(CALLS):
        seen = []
        for (T, (f, g)), w in zip(pairs, ws):
            x = rand(T, i, 2, 3, rg=True)
            loss = g(f(x, w), w) + g(f(x * 2, w), w)
            loss.backward()
            seen.append((loss, x.grad, w.grad))
        same(seen[0], seen[1], f"call{i}")


def _compare_bodies(body, calls=CALLS):
    """``body(T, fn)`` -> observable values, for torch eager and a compiled tracegrad ``fn``
    (the same compiled function on every call)."""
    cache = {}

    def wrap(f):
        return cache.setdefault(f.__code__, tracegrad.compile(f))
    for i in range(calls):
        same(body(torch, lambda f: f, i), body(tracegrad, wrap, i), f"call{i}")


def test_aot_output_views_of_grad_input_alias_it():
    # AotAutogradFallbackTests.test_output_aliases_input_multi_output_view / test_aot_autograd
    # "outputs aliasing inputs" with an input that requires grad: the outputs are views of the
    # caller's tensor (``_base``), an in-place write to one raises eager's error for a view of a
    # leaf that requires grad, a write under no_grad reaches the input, and grads flow through.
    # Regression: the compiled call returned fresh copies (no ``_base``, writes allowed and lost)
    def fn(a):
        return a[0], a.t(), a.view(-1)

    def body(T, wrap, i):
        a = rand(T, i, 2, 3, rg=True)
        v, t, flat = wrap(fn)(a)
        assert v._base is a and t._base is a and flat._base is a
        with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
            v.add_(1)
        (v.sum() * 2 + t[1, 1] * 5 + flat[4]).backward()
        grad = a.grad.clone()
        with T.no_grad():
            flat.mul_(10)
        return v, t, flat, grad, a
    _compare_bodies(body)


def test_aot_output_views_of_non_leaf_input_backward():
    # the same with a non-leaf argument (a graph built before the call): grads reach its leaf
    def fn(a):
        return a[0], a.t(), (a * 2).sum()

    def body(T, wrap, i):
        x = rand(T, i, 2, 3, rg=True)
        a = x * 3
        v, t, s = wrap(fn)(a)
        assert v._base is a and v.grad_fn is not None
        (v.sum() * 2 + t[1, 1] * 5 + s).backward()
        return v, t, s, x.grad
    _compare_bodies(body)


def test_aot_copy_into_view_of_plain_input_keeps_source_grad():
    # AotAutogradFallbackTests.test_input_mutation_* through a view: a tensor that requires grad
    # copied into a view of an input that does not; the view result carries the copy's grad
    def fn(a, b):
        v = a[0]
        v.copy_(b)
        return v

    def body(T, wrap, i):
        a, b = rand(T, i, 2, 3), rand(T, i, 3, seed=5, rg=True)
        v = wrap(fn)(a, b)
        (v * v).sum().backward()
        return v, a, b.grad, a.requires_grad
    _compare_bodies(body)


def test_aot_mixed_view_and_computed_outputs_and_unbind():
    # view and computed outputs of two inputs that require grad, and unbind's views
    def fn(a, b):
        return a.view(-1), a * b, b[1:], a.unbind(0)

    def body(T, wrap, i):
        a, b = rand(T, i, 2, 2, rg=True), rand(T, i, 2, 2, seed=5, rg=True)
        v, m, s, u = wrap(fn)(a, b)
        (v.sum() + (m * m).sum() + s.sum() * 3 + (u[0] * 2 + u[1]).sum()).backward()
        return v, m, s, u, a.grad, b.grad
    _compare_bodies(body)


def test_aot_view_output_under_no_grad():
    def fn(a):
        return a[0], a.detach()[1]

    def body(T, wrap, i):
        a = rand(T, i, 2, 3, rg=True)
        with T.no_grad():
            v, d = wrap(fn)(a)
        return v, d, v._base is a
    _compare_bodies(body)


def test_aot_view_of_detached_input_has_no_grad_fn():
    # AotAutogradFallbackTests.test_output_aliases_intermediate / detach of an input: a view of
    # ``a.detach()`` returned. Regression: the compiled call rebuilt it as a view of ``a`` itself
    # (``_base is a``) with an AsStridedBackward0 grad_fn although it does not require grad
    def fn(a):
        return a.detach()[1], a.detach().t(), a.data[0]

    def body(T, wrap, i):
        a = rand(T, i, 2, 3, rg=True)
        d, t, v = wrap(fn)(a)
        assert d._base is not a and t._base is not a and v._base is not a
        assert d.grad_fn is None and t.grad_fn is None and v.grad_fn is None
        y = d * 2
        d.mul_(3)                   # shares the caller's storage, as eager's detach
        v.add_(1)                   # ``.data``: its own version counter
        return d, t, v, y, y.requires_grad, a, (d._version, v._version, a._version)
    _compare_bodies(body)


# ---- more of test/dynamo/test_recompiles.py --------------------------------------------------
def test_automatic_dynamic_and_tensor_scalar_swap_values():
    # RecompileTests.test_automatic_dynamic_reduce_recompiles / test_automatic_dynamic_tensor_scalar_change:
    # sizes 2..6 and the second argument swapping between a tensor and a Python int
    def build(T):
        return lambda x, y: x * y

    def args(T, i):
        n = [2, 3, 4, 4, 5, 5, 6][i]
        x = rand(T, i, n)
        return x, (rand(T, i, n, seed=3) if i % 3 != 1 else n)
    check(build, args, calls=7)
    check(build, args, calls=7, dynamic=True)


def test_aliasing_guard_failures_with_globals():
    # RecompileTests.test_aliasing_guard_failures_with_globals: the global read by the function
    # passed as the argument it mutates
    g1 = [rand(tracegrad, 0, 3)]
    g2 = rand(tracegrad, 1, 3)

    def foo(a):
        a.add_(g1[0])
        return g2 + 1

    cf = tracegrad.compile(foo)
    for k in range(CALLS):
        z = rand(tracegrad, k, 3, seed=10)
        z0, g = _np(z), _np(g1[0])
        np.testing.assert_allclose(_np(cf(z)), _np(g2) + 1)
        np.testing.assert_allclose(_np(z), z0 + g, rtol=1e-6)
    for k in range(CALLS):
        g1[0] = rand(tracegrad, k, 3, seed=20)
        g = _np(g1[0])
        np.testing.assert_allclose(_np(cf(g1[0])), _np(g2) + 1)
        np.testing.assert_allclose(_np(g1[0]), 2 * g, rtol=1e-6)      # a.add_(a)


def test_simple_module_recompile_train_eval():
    # RecompileTests.test_simple_module_recompile: a Dropout model toggled between eval and
    # train 10 times traces twice, and the eval results equal eager's
    model = tracegrad.nn.Sequential(tracegrad.nn.Linear(10, 1), tracegrad.nn.Dropout(0.5))
    cm = tracegrad.compile(model, fullgraph=True)
    x = rand(tracegrad, 0, 10)
    for _ in range(10):
        model.eval()
        np.testing.assert_allclose(_np(cm(x)), _np(model(x)), rtol=1e-6)
        model.train()
        out = _np(cm(x))
        assert out.shape == (1,)
    assert cm._compiled_call.stats["traces"] == 2, cm._compiled_call.stats


def test_no_recursive_compile_after_cache_limit_hit_values():
    # RecompileTests.test_no_recursive_compile_after_cache_limit_hit: helpers called by a
    # function past its recompile limit still give the right values, with at most 2 programs
    def f(x, n):
        x = x + n
        return g(x, n)

    def g(x, n):
        x = x + n
        return h(x, n)

    def h(x, n):
        return x + n

    old = tracegrad._dynamo.config.cache_size_limit
    tracegrad._dynamo.config.cache_size_limit = 2
    try:
        opt_f = tracegrad.compile(f, dynamic=False)
        for i in range(10):
            np.testing.assert_allclose(_np(opt_f(tracegrad.ones(3), i)), np.full(3, 1.0 + 3 * i))
        assert opt_f.stats["traces"] <= 2
    finally:
        tracegrad._dynamo.config.cache_size_limit = old


def test_automatic_dynamic_on_closed_ints_values():
    # RecompileTests.test_automatic_dynamic_on_closed_ints: a closure over a different int each
    # call, passed in as an argument
    def f(x):
        def g(y):
            return y + x
        return g

    @tracegrad.compile
    def h(x, g):
        return g(x)

    for i in range(10):
        x = rand(tracegrad, i, 5)
        np.testing.assert_allclose(_np(h(x, f(i))), _np(x) + i, rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="tracegrad.compile runs the first call eagerly (tracing from the "
                   "second), so its two programs are for n=1 and n=2, not torch's n=0 and n=1, and the "
                   "calls past the limit run eagerly with is_compiling() still True")
def test_run_mode_after_cache_limit_hit():
    # RecompileTests.test_run_mode_after_cache_limit_hit: is_compiling() is baked into the two
    # programs and False in the calls run eagerly past the limit
    def f(x, n):
        x = x + n
        if tracegrad._dynamo.is_compiling():
            x = x + 1
        return g(x, n)

    def g(x, n):
        x = x + n
        if tracegrad._dynamo.is_compiling():
            x = x + 2
        return x

    old = tracegrad._dynamo.config.cache_size_limit
    tracegrad._dynamo.config.cache_size_limit = 2
    try:
        opt_f = tracegrad.compile(f, dynamic=False)
        got = [float(opt_f(tracegrad.ones(3), n)[0]) - 1 for n in (0, 1, 2, 3, 0, 1)]
    finally:
        tracegrad._dynamo.config.cache_size_limit = old
    assert got == [3, 5, 4, 6, 3, 5]


# ---- more of test/dynamo/test_autograd_function.py -------------------------------------------
def _more_functions(T):
    class SaveNone(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, None)
            ctx.y_is_none = y is None
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, n = ctx.saved_tensors
            assert n is None
            return g * 2 + (0 if ctx.y_is_none else 1), None

    class SaveOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    class TensorAttr(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.w = w                  # a tensor kept as a ctx attribute, not saved
            ctx.k = x.shape[0]
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g * ctx.w * ctx.k, None

    class Identity(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class NonTensorOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 5, "s"

        @staticmethod
        def backward(ctx, g, *_):
            return g * 2

    class Setup(T.autograd.Function):
        @staticmethod
        def forward(x, s):
            return x * s

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, s = inputs
            ctx.s = s
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.s + x * 0, None

    class Nested(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return SaveOut.apply(x) + 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.exp() * 10

    return dict(SaveNone=SaveNone, SaveOut=SaveOut, TensorAttr=TensorAttr, Identity=Identity,
                NonTensorOut=NonTensorOut, Setup=Setup, Nested=Nested)


FUNCTION_USES = {
    "save_none": lambda F: lambda x, w: F["SaveNone"].apply(x, None) + F["SaveNone"].apply(x, w),
    "save_output": lambda F: lambda x, w: F["SaveOut"].apply(x * w),
    "tensor_ctx_attribute": lambda F: lambda x, w: F["TensorAttr"].apply(x, w * 2),
    "identity_forward": lambda F: lambda x, w: (F["Identity"].apply(x) * w, F["Identity"].apply(w)),
    "non_tensor_outputs": lambda F: lambda x, w: F["NonTensorOut"].apply(x * w),
    "setup_context": lambda F: lambda x, w: F["Setup"].apply(x, 2.5),
    "nested_function": lambda F: lambda x, w: F["Nested"].apply(x),
}


@pytest.mark.parametrize("use", sorted(FUNCTION_USES))
def test_autograd_function_more_patterns(use):
    # AutogradFunctionTests.test_save_for_bwd_none / test_function_with_bound_free_variable /
    # test_tensor_as_ctx_attribute / test_identity / test_non_tensor_outputs /
    # test_setup_context / test_nested_function: values and grads every call
    check(lambda T: FUNCTION_USES[use](_more_functions(T)),
          lambda T, i: (rand(T, i, 3, rg=True), rand(T, i, 3, seed=5)), backward=True)


# ---- more of test/dynamo/test_ctx_manager.py -------------------------------------------------
def _ctx_with_graph_break(T):
    class CustomizedCtxManagerWithGraphBreak:
        def __init__(self, mode):
            self.prev = T.is_grad_enabled()
            self.mode = mode

        def __enter__(self):
            T._dynamo.graph_break()
            T._C._set_grad_enabled(self.mode)

        def __exit__(self, exc_type, exc_value, traceback):
            T._C._set_grad_enabled(self.prev)
    return CustomizedCtxManagerWithGraphBreak


def test_generic_ctx_manager_with_graph_break():
    # CtxManagerTests.test_generic_ctx_manager_with_graph_break
    def build(T):
        Ctx = _ctx_with_graph_break(T)

        def fn(x):
            with Ctx(False):
                if T.is_grad_enabled():
                    z = x + 1000
                else:
                    y = x * 2
                    z = y.sin() + 3
            return z
        return fn
    _grad_mode_after(build, lambda T, i: (rand(T, i, 2, 3, rg=True),))


@pytest.mark.parametrize("call", [True, False])
@pytest.mark.parametrize("inner_grad", [True, False])
def test_context_wrapping_grad_mode_decorator(call, inner_grad):
    # CtxManagerTests.test_context_wrapping_grad_mode_decorator / _nested_function_decorator:
    # wrapping a function with no_grad/enable_grad (called or not) inside the inverse mode does
    # not change the grad mode; the wrapped call uses the wrapper's mode
    def build(T):
        wrapper, inverse = (T.enable_grad, T.no_grad) if inner_grad else (T.no_grad, T.enable_grad)

        def fn(x):
            def inner_func(x):
                return x.sin()
            with inverse():
                inner_func = wrapper()(inner_func) if call else wrapper(inner_func)
                mode = T.is_grad_enabled()
            with inverse():
                return inner_func(x), mode
        return fn
    check(build, lambda T, i: (rand(T, i, 4, rg=True),))


def test_inactive_context_graph_break_local():
    # CtxManagerTests.test_inactive_context_graph_break_local: a set_grad_enabled object made
    # before a graph break and entered after it, under an outer no_grad
    def build(T):
        def fn(x):
            x = x + 1
            ctx = T.set_grad_enabled(True)
            T._dynamo.graph_break()
            with ctx:
                x = x + 1
            return x, T.is_grad_enabled()
        return fn

    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            with T.no_grad():
                seen.append((fn(rand(T, i, 4)), T.is_grad_enabled()))
        same(seen[0], seen[1], f"call{i}")


def test_contextlib_set_default_dtype_and_nonlocal():
    # ContextlibContextManagerTests.test_ctx_basic0 / test_ctx_basic1 / test_change_parent_nonlocal_0
    import contextlib

    def build(T):
        @contextlib.contextmanager
        def set_default_dtype(dtype):
            old_dtype = T.get_default_dtype()
            try:
                T.set_default_dtype(dtype)
                yield
            finally:
                T.set_default_dtype(old_dtype)

        def fn(x):
            z, k = [0], [0]

            @contextlib.contextmanager
            def ctx(x):
                try:
                    k[0] = 100
                    yield x.sin()
                finally:
                    pass
            with set_default_dtype(T.float64):
                y = T.tensor([3.0, 3.0 + 5.0j])
                w = T.tensor([1.5]) + x
            with ctx(x) as s:
                z[0] = k[0]
                c = s.cos()
            return str(y.dtype).split(".")[-1], y.real, y.imag, w, c, z[0], str(T.get_default_dtype())[-7:]
        return fn
    check(build, lambda T, i: (rand(T, i, 1),))


def test_graph_break_inlining_grad_and_autocast():
    # CtxManagerTests.test_graph_break_inlining_grad / test_graph_break_inlining_autocast: a
    # helper that breaks inside no_grad / autocast; values, grads and modes after the call
    def build(T):
        def gn(z, x):
            with T.no_grad():
                T._dynamo.graph_break()
                s = T.sin(z)
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                m = T.mm(x, x)
                T._dynamo.graph_break()
                return s, T.sin(m).float()

        def fn(x, y, z):
            a = T.mm(x, y)
            s, m = gn(z, x.detach())
            return a, s, m, T.is_grad_enabled(), T.is_autocast_enabled("cpu")
        return fn
    check(build, lambda T, i: (rand(T, i, 4, 4, rg=True), rand(T, i, 4, 4, seed=3, rg=True), rand(T, i, 4, seed=5)),
          backward=True)


def test_generator_and_iterator_arguments_advance_every_call():
    # FunctionTests.test_generator_* / test_iter_next: a generator or iterator passed as an
    # argument and advanced inside. Regression: only iterators reached through globals, cells
    # and object attributes were seen; one passed as an argument was read once while tracing
    # and its value frozen into the program (every later call returned the second item)
    def gen():
        i = 0
        while True:
            yield i
            i += 10

    def fn(x, it):
        return x + next(it)

    for make, step in ((gen, 10), (lambda: iter(range(0, 100, 3)), 3)):
        cf, it = tracegrad.compile(fn), make()
        x = rand(tracegrad, 0, 2)
        for k in range(CALLS + 1):
            np.testing.assert_allclose(_np(cf(x, it)), _np(x) + step * k, rtol=1e-6)


def test_aot_same_view_returned_twice_and_requires_grad_flip():
    # AotAutogradFallbackTests.test_output_aliases_input_multi_output_view (one view object
    # returned twice stays one object) and test_requires_grad_mix (an input's requires_grad
    # flipping between calls, the other input returned as itself)
    def fn(a):
        v = a.view_as(a)
        return v, v, a[...]

    def body(T, wrap, i):
        a = rand(T, i, 2, 3, rg=True)
        v, v2, e = wrap(fn)(a)
        (v * 2 + e).sum().backward()
        return v is v2, v._base is a, e._base is a, a.grad
    _compare_bodies(body)

    def gn(a, b):
        return a + b, a

    def body2(T, wrap, i):
        a, b = rand(T, i, 3, rg=True), rand(T, i, 3, seed=4, rg=i % 2 == 0)
        s, a2 = wrap(gn)(a, b)
        (s * a2).sum().backward()
        return s, a.grad, b.grad, a2 is a
    _compare_bodies(body2, calls=6)


def test_aot_metadata_mutation_on_intermediate():
    # AotAutogradFallbackTests.test_input_metadata_mutation (on an intermediate): transpose_ and
    # unsqueeze_ of a clone; shape, strides, values and grads
    def fn(a):
        b = a.clone()
        b.transpose_(0, 1)
        b.unsqueeze_(0)
        return b, tuple(b.shape), b.stride()

    def body(T, wrap, i):
        a = rand(T, i, 2, 3, rg=True)
        b, s, st = wrap(fn)(a)
        b.sum().backward()
        return b, s, st, a.grad
    _compare_bodies(body)
