"""Ported from PyTorch's test/test_autograd.py, round 9: TestAutogradLogging
(test/autograd/test_logging.py), the single-process parts of TestMultithreadAutograd (Python
threads sharing leaves and graphs), and TestAutogradComplex (test/autograd/test_complex.py). Each
body runs under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture, or as a
``run_both`` program; each test names its original.

Adapted: the originals draw inputs with ``randn``; here they are fixed numpy draws (``rn``) so
both libraries see the same values. Not ported: test_fork_join_in_middle (TorchScript's
``jit._fork``), the CUDA device-thread and DataParallel tests.
"""
import logging
import re
import sys
import threading
import traceback

import numpy as np
import pytest

from _ported_helpers import eq, rn
from parity import run_both


# ---- TestAutogradLogging ------------------------------------------------------------------------
class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _logged_backward(T, fn):
    """Run ``fn()`` with ``set_logs(autograd=DEBUG)``, collecting what the library's
    ``<name>.autograd`` logger sees; the settings are reset after."""
    h = _Records()
    logger = logging.getLogger(T.__name__ + ".autograd")
    logger.addHandler(h)
    try:
        T._logging.set_logs(autograd=logging.DEBUG)
        fn()
    finally:
        T._logging.set_logs()
        logger.removeHandler(h)
    return [r.getMessage() for r in h.records]


def test_logging(T):
    # TestAutogradLogging.test_logging: one debug line per node run, in execution order
    def fn():
        a = T.rand(10, requires_grad=True)
        b = a.mul(2).div(3).sum()
        c = b.clone()
        T.autograd.backward((b, c))
    msgs = _logged_backward(T, fn)
    assert len(msgs) == 5
    for want, got in zip(["CloneBackward0", "SumBackward0", "DivBackward0", "MulBackward0", "AccumulateGrad"], msgs):
        assert want in got


def test_logging_messages_match_torch():
    # TestAutogradLogging.test_logging: the lines themselves (node, dtype and shape of each
    # incoming gradient; object addresses dropped), for backward and autograd.grad
    def program(T, log):
        def fn():
            a = rn(T, 3, 2, dtype="float64", grad=True)
            b = rn(T, 2, seed=1, grad=True)
            out = (a.float() * b).sum(0)
            T.autograd.grad(out.sum(), [b], retain_graph=True)
            out.unbind(0)[1].backward()
        msgs = _logged_backward(T, fn)
        log("lines", [re.sub(r" object at 0x[0-9a-f]+", "", m) for m in msgs])
    run_both(program)


def test_logging_off_after_reset(T):
    # TestAutogradLogging: without autograd=DEBUG (set_logs() resets it) nothing is logged
    h = _Records()
    logger = logging.getLogger(T.__name__ + ".autograd")
    logger.addHandler(h)
    try:
        T._logging.set_logs(autograd=logging.DEBUG)
        T._logging.set_logs()
        x = T.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    finally:
        logger.removeHandler(h)
    assert h.records == []
    assert x.grad.tolist() == [2.0, 2.0]


# ---- TestMultithreadAutograd --------------------------------------------------------------------
def _run_threads(fn, args=(), num_threads=10):
    """The original's _run_py_multithread_fn: start ``num_threads`` threads running ``fn`` and
    re-raise the first exception one of them raised."""
    errors = []

    def target():
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 -- handed to the main thread
            errors.append(e)

    threads = [threading.Thread(target=target) for _ in range(num_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_simple_backward(T):
    # TestMultithreadAutograd.test_simple_backward: each thread trains on its own leaf
    def train_fn():
        x = T.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        assert eq(x.grad, x + 3.5)
    _run_threads(train_fn)


def test_simple_backward_same_input(T):
    # TestMultithreadAutograd.test_simple_backward_same_input: backward from 10 threads into one
    # shared leaf accumulates all 10 gradients; autograd.grad gives each thread its own
    def train_fn_backward(x):
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()

    x = T.ones(5, 5, requires_grad=True)
    _run_threads(train_fn_backward, (x,))
    assert eq(x.grad, 10 * (x + 3.5))

    def train_fn_grad(x):
        y = (x + 3) * (x + 4) * 0.5
        grads = T.autograd.grad(y.sum(), x)
        assert len(grads) == 1
        assert eq(grads[0], x + 3.5)
    _run_threads(train_fn_grad, (x,))
    assert eq(x.grad, 10 * (x + 3.5))   # grad() left .grad alone


def test_python_thread_in_middle(T):
    # TestMultithreadAutograd.test_python_thread_in_middle: threads backpropagating through one
    # shared graph without retain_graph: at least one succeeds, the others get the
    # "Specify retain_graph=True" RuntimeError; with retain_graph all succeed and accumulate
    success_vs_raises = [0, 0]

    def train_fn_no_retain_graph(x):
        y = x + x ** 2
        try:
            y.sum().backward()
            success_vs_raises[0] += 1
        except RuntimeError as error:
            success_vs_raises[1] += 1
            assert "Specify retain_graph=True" in str(error)

    x_no_retain = T.ones(5, 5, requires_grad=True)
    y_no_retain = x_no_retain + x_no_retain ** 2
    _run_threads(train_fn_no_retain_graph, (y_no_retain,), num_threads=5)
    assert success_vs_raises[0] >= 1
    assert sum(success_vs_raises) == 5

    def train_fn_retain_graph(x):
        y = x + x ** 2
        y.sum().backward(retain_graph=True)

    x_retain = T.ones(5, 5, requires_grad=True)
    y_retain = x_retain + x_retain ** 2
    _run_threads(train_fn_retain_graph, (y_retain,), num_threads=5)
    assert eq(x_retain.grad, 5 * (4 * x_retain ** 3 + 6 * (x_retain ** 2) + 4 * x_retain + 1))


def test_grad_mode_is_thread_local(T):
    # TestMultithreadAutograd (grad mode is thread-local, as the originals' threads rely on):
    # no_grad in the main thread does not reach a worker, nor a worker's no_grad the main thread
    seen = []

    def worker():
        seen.append(T.is_grad_enabled())
        with T.no_grad():
            seen.append((T.ones(1, requires_grad=True) * 2).requires_grad)
            barrier.wait()

    barrier = threading.Barrier(2)
    with T.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        barrier.wait()
        main_in = T.is_grad_enabled()
    t.join()
    assert seen == [True, False]
    assert main_in is False
    assert T.is_grad_enabled()


def test_preserve_backtrace(T):
    # TestMultithreadAutograd.test_preserve_backtrace: the traceback of an error raised in a
    # custom Function's backward reaches the caller with the raising line in it
    class Foo(T.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, *grad):
            raise ValueError("something")

    t = T.ones(10, requires_grad=True)
    with pytest.raises(ValueError, match="something"):
        try:
            Foo.apply(t).sum().backward()
        except ValueError:
            tb_str = "\n".join(traceback.format_tb(sys.exc_info()[2]))
            assert 'raise ValueError("something")' in tb_str
            raise


def test_custom_function_propagates_errors(T):
    # TestMultithreadAutograd.test_custom_function_propagates_errors_from_device_thread (CPU):
    # the error class and message of a backward that raises reach backward()'s caller
    class MyFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, gO):
            raise RuntimeError("blah")

    t = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="blah"):
        MyFunc.apply(t).sum().backward()


def test_set_multithreading_enabled(T):
    # TestMultithreadAutograd.test_set_multithreading_enabled_as_context_manager_and_function
    with T.autograd.set_multithreading_enabled(False):
        assert not T.autograd.is_multithreading_enabled()
    assert T.autograd.is_multithreading_enabled()
    with T.autograd.set_multithreading_enabled(True):
        assert T.autograd.is_multithreading_enabled()
    assert T.autograd.is_multithreading_enabled()
    with T.autograd.set_multithreading_enabled(False):
        T.autograd.set_multithreading_enabled(True)
        assert T.autograd.is_multithreading_enabled()
    assert T.autograd.is_multithreading_enabled()
    # a backward with multithreading off still computes the same gradient
    x = T.ones(3, requires_grad=True)
    with T.autograd.set_multithreading_enabled(False):
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_cat_stack_r_to_c(T, op):
    # TestMultithreadAutograd.test_cat_r_to_c / test_cat_stack_r_to_c: joining a real and a
    # complex tensor (promotion to complex) passes gradcheck, forward AD included, both orders
    inp_c = T.tensor(np.random.RandomState(0).rand(3, 2) + 1j * np.random.RandomState(1).rand(3, 2),
                     dtype=T.cdouble, requires_grad=True)
    inp_r = rn(T, 3, 2, seed=2, dtype="float64", grad=True)
    join = getattr(T, op)

    def fn(x1, x2):
        return join((x1, x2), dim=-1)

    assert T.autograd.gradcheck(fn, [inp_r, inp_c], check_forward_ad=True)
    assert T.autograd.gradcheck(fn, [inp_c, inp_r], check_forward_ad=True)


def test_cat_r_to_c_grad_values():
    # TestMultithreadAutograd.test_cat_r_to_c: the gradient a real input gets from a complex
    # result is the real part of the incoming gradient
    def program(T, log):
        inp_c = T.tensor(np.arange(6.0).reshape(3, 2) * (1 + 2j), dtype=T.cdouble, requires_grad=True)
        inp_r = rn(T, 3, 2, dtype="float64", grad=True)
        out = T.cat((inp_r, inp_c), dim=-1)
        w = T.tensor(np.arange(12.0).reshape(3, 4) * (1 - 1j), dtype=T.cdouble)
        (out * w).sum().abs().backward()
        log("out", out)
        log("grad_r", inp_r.grad)
        log("grad_c", inp_c.grad)
    run_both(program)


# ---- TestAutogradComplex --------------------------------------------------------------------------
def test_view_with_multi_output(T):
    # TestAutogradComplex.test_view_with_multi_output: the outputs of unbind of a complex view are
    # multi-output views: modifying one in-place with a grad-requiring value raises, whether or
    # not the real base requires grad
    for base_requires_grad in (False, True):
        x = rn(T, 2, 2, 2, dtype="float64", grad=base_requires_grad)
        x1 = T.view_as_complex(x)
        res = x1.unbind(0)   # taking the views is allowed
        with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
            res[0] += T.ones(2, requires_grad=True)


def test_as_identity(T):
    # TestAutogradComplex.as_identity: view_as_complex then view_as_real act as the identity for
    # autograd (gradcheck passes and the gradient equals that of the plain select)
    def func(z):
        z_ = T.view_as_complex(z)
        z_select = T.select(z_, z_.dim() - 1, 0)
        z_select_real = T.view_as_real(z_select)
        return z_select_real.sum()

    z = rn(T, 4, 2, 2, dtype="float64", grad=True)
    assert T.autograd.gradcheck(func, [z])
    func(z).backward()
    z1 = z.detach().clone().requires_grad_(True)
    T.select(z1, z1.dim() - 2, 0).sum().backward()
    assert eq(z.grad, z1.grad)


def test_view_as_real_inplace_grad():
    # TestAutogradComplex.test_view_func_for_complex_views (case 3, values): an in-place op on a
    # view_as_real of a reshaped complex clone; gradient values through abs of the sum
    def program(T, log):
        x = T.tensor(np.random.RandomState(0).rand(6) + 1j * np.random.RandomState(1).rand(6), dtype=T.cdouble,
                     requires_grad=True)
        b = x.clone().reshape(3, 2)
        r = T.view_as_real(b)
        r.mul_(2)
        log("grad_fn of the base", b.grad_fn)
        r.sum().abs().backward()
        log("grad", x.grad)
    run_both(program)


# ---- TestAutograd (round 9) ---------------------------------------------------------------------
def test_grad_mode_class_decoration(T):
    # TestAutograd.test_grad_mode_class_decoration: decorating a class warns (FutureWarning) and
    # only its __init__ runs under no_grad; decorating functions and methods does not warn
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @T.no_grad()
        class Foo:
            def __init__(self):
                self.init_grad = T.is_grad_enabled()

            def foo(self):
                return T.is_grad_enabled()

        foo = Foo()
    assert foo.init_grad is False
    assert foo.foo() is True

    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @T.no_grad()
        def f():
            return T.is_grad_enabled()

        class Foo2:
            @T.no_grad()
            def __init__(self):
                self.init_grad = T.is_grad_enabled()

            @T.no_grad()
            def foo(self):
                return T.is_grad_enabled()

        assert f() is False
        foo2 = Foo2()
        assert (foo2.init_grad, foo2.foo()) == (False, False)
    assert len(w) == 0


def test_unused_grad_requires_grad_with_materialize(T):
    # TestAutograd.test_unused_grad_requires_grad_with_materialize: materialized zeros for an
    # unused input do not require grad without create_graph
    x = T.ones(10, requires_grad=True)
    y = T.ones(10, requires_grad=True)
    z = (x ** 2).sum()
    g = T.autograd.grad(z, (x, y), allow_unused=True, materialize_grads=True, create_graph=False)
    assert not g[0].requires_grad
    assert not g[1].requires_grad
    assert eq(g[1], T.zeros(10))


def test_legacy_function_deprecation_exception(T):
    # TestAutograd.test_legacy_function_deprecation_exception: calling an instance of a Function
    # with non-static forward raises
    class MyFunction(T.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

    with pytest.warns(DeprecationWarning), \
            pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        MyFunction()(T.ones(3, 4))


def test_saved_tensor_hooks_extra_exit_during_bw_no_crash(T):
    # TestAutograd.test_saved_tensor_hooks_extra_exit_during_bw_no_crash: an unpack hook that
    # exits its own context during backward does not break the caller's hook stack
    def unpack(x):
        ctx_1.__exit__()
        return x

    ctx_1 = T.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
    ctx_2 = T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x)
    for _ in range(10):
        with ctx_2:
            ctx_1.__enter__()
            x = rn(T, 3, 3, grad=True)
            x.sin().sum().backward()
            assert eq(x.grad, x.cos())
    for _ in range(10):
        ctx_1.__exit__()
    # no hooks are left on the stack: a saved tensor registers hooks of its own
    a = T.tensor(1.0, requires_grad=True)
    y = a.exp()
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    y.backward()
    assert eq(a.grad, a.exp())


def test_saved_tensor_hooks_extra_enter_during_bw_no_leak(T):
    # TestAutograd.test_saved_tensor_hooks_extra_enter_during_bw_no_leak: an unpack hook that
    # enters its context during backward leaves nothing behind holding the hook
    import gc
    import weakref

    def scope():
        def unpack(x):
            weak_ctx_1().__enter__()
            return x

        ctx_1 = T.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
        weak_ctx_1 = weakref.ref(ctx_1)
        x = T.ones(3, 3, requires_grad=True)
        with ctx_1:
            x.sin().sum().backward()
        return weakref.ref(unpack)

    gc.disable()
    try:
        unpack_hook_ref = scope()
        assert unpack_hook_ref() is None
    finally:
        gc.enable()


def test_will_engine_execute_node(T):
    # TestAutograd.test_will_engine_execute_node: inside tensor hooks, which nodes the running
    # backward/grad call will execute; the errors outside backward and for a non-node
    counter = [0]

    class MyFunction(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, gO):
            return gO * 2

    def get_grad_fn(t):
        if t.requires_grad and t.grad_fn is None:
            return t.clone().grad_fn.next_functions[0][0]
        return t.grad_fn

    a = rn(T, 2, 3, 4, grad=True)
    a2 = rn(T, 2, 3, 4, seed=1, grad=True)
    b = a * a2
    b2 = b.cos()
    c = MyFunction.apply(b)
    expect = {"run": list(map(get_grad_fn, (a, b, c))), "skip": list(map(get_grad_fn, (a2, b2)))}

    def fn(x):
        counter[0] += 1
        for g in expect["run"]:
            assert T._C._will_engine_execute_node(g)
        for g in expect["skip"]:
            assert not T._C._will_engine_execute_node(g)

    h1 = b.register_hook(fn)
    h2 = c.register_hook(fn)
    out = c.sum()
    T.autograd.backward(out, inputs=(a, b), retain_graph=True)   # backward(inputs=) is fine
    assert counter[0] == 2
    expect = {"run": list(map(get_grad_fn, (a, a2, b, c))), "skip": list(map(get_grad_fn, (b2,)))}
    T.autograd.backward(out, retain_graph=True)
    assert counter[0] == 4
    with pytest.raises(RuntimeError, match=r"are currently running autograd.grad\(\)"):
        T.autograd.grad(out, (a,))   # a leaf's node under autograd.grad

    a = rn(T, 1, 2, 3, grad=True) * 2
    b = a * 2

    def fn2(x):
        counter[0] += 1
        assert T._C._will_engine_execute_node(b.grad_fn)   # a non-leaf under autograd.grad

    h3 = b.register_hook(fn2)
    counter[0] = 0
    T.autograd.grad(b.sum(), (a,))
    assert counter[0] == 1
    with pytest.raises(RuntimeError, match="during the backward pass"):
        T._C._will_engine_execute_node(out.grad_fn)
    with pytest.raises(RuntimeError, match="expects an grad_fn"):
        T._C._will_engine_execute_node(out)
    h1.remove()
    h2.remove()
    h3.remove()


def test_custom_function_vmap_defaults(T):
    # TestAutograd.test_custom_function_vmap_defaults
    class MySquare(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            return gO * 2 * x

    assert MySquare.generate_vmap_rule is False
    assert hasattr(MySquare, "vmap")
    x = T.tensor(3.0, requires_grad=True)
    (gx,) = T.autograd.grad(MySquare.apply(x), x)
    assert gx.item() == 6.0


def test_accumulate_grad_with_zero_numel_grad(T):
    # TestAutograd.test_accumulate_grad_with_zero_numel_grad: a (4, 0) result broadcast from a
    # (4, 1) input gives it zero gradient, and the empty input an empty one
    a = T.rand(4, 0, requires_grad=True)
    b = T.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    assert eq(b.grad, T.zeros(4, 1))
    assert eq(a.grad, T.zeros(4, 0))


def test_inplace_not_requires_grad(T):
    # TestAutograd.test_inplace_not_requires_grad: views of a base that does not require grad,
    # written in place with a value that does -- a custom Function's view (in-place op and
    # copy_) and a multi-output view raise; a plain select view is fine
    class MyFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    a = T.rand(1, 2)
    b = T.rand(1, requires_grad=True)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a += b

    a = T.rand(1, 2)
    b = T.rand(1, requires_grad=True)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a.copy_(b)

    a = T.rand(1, 2)
    b = T.rand(1, requires_grad=True)
    view_a = a.unbind()[0]
    with pytest.raises(RuntimeError, match="This view is the output of a function that returns multiple views"):
        view_a.copy_(b)

    a = T.zeros(1, 2)
    b = T.ones(1, requires_grad=True)
    a.select(1, 0).copy_(b)
    assert a.requires_grad
    a.sum().backward()
    assert b.grad.tolist() == [1.0]


def test_autograd_views_codegen_no_grad_input(T):
    # TestAutograd.test_autograd_views_codegen (grad mode on, input not requiring grad): the
    # outputs of view_as and unbind are views that may be modified in place (nothing requires
    # grad, so there is no history to rebase)
    inp = T.zeros(2).clone()
    out = inp.view_as(inp)
    assert out._is_view()
    out.add_(1)
    inp = T.zeros(2).clone()
    outs = inp.unbind()
    assert outs[0]._is_view() and outs[1]._is_view()
    outs[0].add_(1)
    outs[1].add_(2)
    assert inp.tolist() == [1.0, 2.0]


def test_increment_version(T):
    # TestAutograd.test_increment_version: any dtype; inference tensors do not error
    a = T.rand(5, requires_grad=True)
    v = a._version
    T.autograd.graph.increment_version(a)
    assert a._version == v + 1
    a = T.zeros(5, dtype=T.int)
    v = a._version
    T.autograd.graph.increment_version(a)
    assert a._version == v + 1
    with T.inference_mode():
        a = T.rand(5, requires_grad=True)
        T.autograd.graph.increment_version(a)
    T.autograd.graph.increment_version(a)


@pytest.mark.parametrize("decorator", [True, False])
def test_set_grad_enabled_wraps(T, decorator):
    # TestAutograd.test_set_grad_enabled_wraps: as a decorator it leaves the global mode alone;
    # constructed first, it sets the mode until it wraps a function, which restores it
    with T.enable_grad():
        assert T.is_grad_enabled()
        if decorator:
            @T.set_grad_enabled(False)
            def inner_func(x):
                return x.sin()
        else:
            def inner_func(x):
                return x.sin()
            obj = T.set_grad_enabled(False)
            assert not T.is_grad_enabled()
            inner_func = obj(inner_func)
            assert T.is_grad_enabled()
        assert T.is_grad_enabled()
        x = T.zeros(1, requires_grad=True)
        assert not inner_func(x).requires_grad


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg(T, largest):
    # TestAutograd.test_lobpcg (k=1, one 6x6 size): the extreme eigenpair of a symmetric matrix,
    # with the eigenvector's sign fixed, and a symmetric gradient
    rs = np.random.RandomState(0)
    a = rs.rand(6, 6)
    A = T.tensor((a @ a.T) / 10 + np.diag(np.arange(6.0)), dtype=T.float64).requires_grad_(True)
    X = T.eye(6, 1, dtype=T.float64)
    D, U = T.lobpcg(A=A, k=1, X=X, largest=largest)
    _, idx = U.abs().max(-2, keepdim=True)
    U = U * U.gather(-2, idx).sign()
    w = np.linalg.eigvalsh(A.detach().numpy())
    assert abs(D.item() - (w[-1] if largest else w[0])) < 1e-6
    (D.sum() + U.sum()).backward()
    assert eq(A.grad, A.grad.mT, tol=1e-6)


# ---- TestAutograd: gradcheck ----------------------------------------------------------------------
def _gc(T):
    import importlib
    return importlib.import_module(T.__name__ + ".autograd.gradcheck")


def _fwad(T):
    import importlib
    return importlib.import_module(T.__name__ + ".autograd.forward_ad")


@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_output_shape_or_dtype_depend_on_values(T, fast_mode):
    # TestAutograd.test_gradcheck_output_shape_or_dtype_depend_on_values: outputs whose shape or
    # dtype changes when an input is perturbed by eps are an AssertionError
    def fn(x):
        if T.all(x >= 1):
            return T.cat([x, x])
        return x

    a = T.ones(1, dtype=T.double, requires_grad=True)
    with pytest.raises(AssertionError, match="return outputs with the same shape when inputs are perturbed"):
        T.autograd.gradcheck(fn, (a,), fast_mode=fast_mode)

    def fn2(x):
        if T.all(x >= 1):
            return x.to(T.float32)
        return x

    with pytest.raises(AssertionError, match="return outputs with the same dtype when inputs are perturbed"):
        T.autograd.gradcheck(fn2, (a,), fast_mode=fast_mode)


def test_gradcheck_complex_non_complex_outputs(T):
    # TestAutograd.test_gradcheck_complex_non_complex_outputs
    def fn(x, y):
        return T.complex(x, y), x + 1

    a = T.ones(2, 2, requires_grad=True, dtype=T.float64)
    b = T.ones(2, 2, requires_grad=True, dtype=T.float64)
    assert T.autograd.gradcheck(fn, (a, b))

    def fn2(z):
        return z, T.real(z)

    c = T.ones(2, 2, requires_grad=True, dtype=T.complex128)
    assert T.autograd.gradcheck(fn2, (c))


@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_custom_error(T, fast_mode):
    # TestAutograd.test_gradcheck_custom_error: a mismatch is a GradcheckError (a RuntimeError);
    # raise_exception=False returns False but lets other errors through
    GradcheckError = _gc(T).GradcheckError

    def fn(x):
        y = x.clone()
        y.register_hook(lambda x: x + 1e-2)
        return y

    x = T.ones(2, 2, dtype=T.double, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        T.autograd.gradcheck(fn, (x,), fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
        T.autograd.gradcheck(fn, (x,), fast_mode=fast_mode)
    assert T.autograd.gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode) is False

    def fn2(x):
        raise RuntimeError("Not a GradcheckError!")

    with pytest.raises(RuntimeError, match="Not a GradcheckError!"):
        T.autograd.gradcheck(fn2, (x,), fast_mode=fast_mode, raise_exception=False)


@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_forward_ad(T, fast_mode):
    # TestAutograd.test_gradcheck_forward_ad: real and complex inputs; a function that scales
    # one input's tangent fails the forward-mode check
    fwAD = _fwad(T)

    def fn(x, y):
        return x + y, y

    def bad_fn(x, y):
        if fwAD._current_level >= 0:   # inside gradcheck's dual level
            y_p, y_d = fwAD.unpack_dual(y)
            y = fwAD.make_dual(y_p, y_d * 1.1)
        return x + y, y

    err_msg = "Jacobian computed with forward mode mismatch for output 0 with respect to input 1"
    x = rn(T, 2, dtype="float64", grad=True)
    y = rn(T, 2, seed=1, dtype="float64", grad=True)
    assert T.autograd.gradcheck(fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match=err_msg):
        T.autograd.gradcheck(bad_fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
    assert T.autograd.gradcheck(lambda x: T.view_as_real(T.resolve_conj(x * 1j)), x, check_forward_ad=True,
                                fast_mode=fast_mode)
    xc = T.tensor(np.array([0.3 + 0.1j, 0.6 - 0.2j]), dtype=T.cdouble, requires_grad=True)
    assert T.autograd.gradcheck(fn, (xc, y), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match=err_msg):
        T.autograd.gradcheck(bad_fn, (xc, y), check_forward_ad=True, fast_mode=fast_mode)
    yc = T.tensor(np.array([0.5 + 0.4j, 0.1 - 0.7j]), dtype=T.cdouble, requires_grad=True)
    assert T.autograd.gradcheck(fn, (xc, yc), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(RuntimeError, match=err_msg):
        T.autograd.gradcheck(bad_fn, (xc, yc), check_forward_ad=True, fast_mode=fast_mode)
    assert fwAD._current_level == -1


def test_gradcheck_forward_ad_runs_with_no_requires_grad(T):
    # TestAutograd.test_gradcheck_forward_ad_runs_with_no_requires_grad: under forward mode the
    # function sees inputs that do not require grad
    fwAD = _fwad(T)
    seen = []

    class UserFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            if fwAD._current_level >= 0:
                seen.append((x.requires_grad, y.requires_grad))
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            return x_t, y_t

    x = rn(T, 2, dtype="float64", grad=True)
    y = rn(T, 2, seed=1, dtype="float64", grad=True)
    assert T.autograd.gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_backward_ad=False,
                                check_undefined_grad=False, check_batched_grad=False)
    assert seen and all(s == (False, False) for s in seen)


def test_gradcheck_get_numerical_jacobian(T):
    # TestAutograd.test_gradcheck_get_numerical_jacobian: deprecated (FutureWarning); the
    # Jacobians of the first output, for a target or every input requiring grad
    get_numerical_jacobian = _gc(T).get_numerical_jacobian

    def fn(inputs):
        x, y = inputs[0], inputs[1]
        return 2 * x + y, x + 2 * y

    a = rn(T, 2, 2, dtype="float64", grad=True)
    b = rn(T, 2, 2, seed=1, dtype="float64", grad=True)
    with pytest.warns(FutureWarning, match="`get_numerical_jacobian` was part of PyTorch's private API"):
        jacobian = get_numerical_jacobian(fn, (a, b), target=a, eps=1e-6)
    assert eq(jacobian[0], 2 * T.eye(4, dtype=T.double))
    with pytest.warns(FutureWarning, match="`get_numerical_jacobian` was part of PyTorch's private API"):
        jacobian = get_numerical_jacobian(fn, (a, b), eps=1e-6)
    assert eq(jacobian[0], 2 * T.eye(4, dtype=T.double))
    assert eq(jacobian[1], 1 * T.eye(4, dtype=T.double))
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
        get_numerical_jacobian(fn, (a, b), eps=1e-6, grad_out=2.0)


def test_gradcheck_get_analytical_jacobian(T):
    # TestAutograd.test_gradcheck_get_analytical_jacobian: deprecated (FutureWarning); the
    # reverse-mode Jacobians, and reentrant=False for a backward that is not deterministic
    get_analytical_jacobian = _gc(T).get_analytical_jacobian

    def fn(x, y):
        return 2 * x + y, x + 2 * y

    a = rn(T, 2, 2, dtype="float64", grad=True)
    b = rn(T, 2, 2, seed=1, dtype="float64", grad=True)
    outputs = fn(a, b)
    with pytest.warns(FutureWarning, match="`get_analytical_jacobian` was part of PyTorch's private API"):
        jacobians, reentrant, correct_grad_sizes, correct_grad_types = get_analytical_jacobian((a, b), outputs[0])
    assert eq(jacobians[0], 2 * T.eye(4, dtype=T.double))
    assert eq(jacobians[1], 1 * T.eye(4, dtype=T.double))
    assert reentrant

    class NonDetFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, grad_out):
            return NonDetFunc.apply(grad_out, ctx._jitter) * (1 + T.rand_like(grad_out) * ctx._jitter), None

    outputs = NonDetFunc.apply(a, 1e-6)
    with pytest.warns(FutureWarning, match="`get_analytical_jacobian` was part of PyTorch's private API"):
        jacobians, reentrant, correct_grad_sizes, correct_grad_types = get_analytical_jacobian((a,), outputs)
    assert not reentrant
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
        get_analytical_jacobian((a,), outputs, grad_out=2.0)


@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_undefined_grad(T, request, fast_mode):
    # TestAutograd.test_gradcheck_undefined_grad: gradcheck also backpropagates an undefined
    # (None) output gradient; a tensor hook that cannot take None fails the check, with a
    # warning that the check is new
    if T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "tracegrad's gradcheck has no undefined-output-gradient pass (check_undefined_grad), and "
            "its engine skips tensor hooks for a None gradient")))

    def fn(x):
        def hook(x):
            if x is None:
                raise RuntimeError("x is undefined")
        y = x.clone()
        y.register_hook(hook)
        return y

    x = T.ones(1, dtype=T.double, requires_grad=True)
    with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient support checking feature"):
        with pytest.raises(RuntimeError, match="Expected backward function to handle undefined output grads"):
            T.autograd.gradcheck(fn, (x,), fast_mode=fast_mode)
        assert not T.autograd.gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)


def test_gradcheck_forward_ad_respects_requires_grad(T):
    # TestAutograd.test_gradcheck_forward_ad_respects_requires_grad (its first case, without the
    # undefined-tangent and batched passes): forward mode runs the function once per input
    # element, every differentiable input dual
    jvp_count = [0]

    class UserFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            jvp_count[0] += 1
            return x_t, y_t

    x = T.tensor([0.25], dtype=T.double, requires_grad=True)
    y = T.tensor([0.75], dtype=T.double, requires_grad=True)
    T.autograd.gradcheck(UserFn.apply, (x, y), check_forward_ad=True, check_undefined_grad=False,
                         check_backward_ad=False, check_batched_grad=False, check_batched_forward_grad=False)
    assert jvp_count[0] == 2


def test_gradcheck_forward_ad_batched_grad(T):
    # TestAutograd.test_gradcheck_forward_ad_batched_grad (forward mode on the two functions;
    # the batched-tangent vmap pass is not ported): non-tensor inputs and unrelated inputs
    x = rn(T, 2, dtype="float64", grad=True)

    def fn1(a, b):
        return a.clone(), a + 1

    assert T.autograd.gradcheck(fn1, (x, 1), check_forward_ad=True, check_backward_ad=False,
                                check_batched_grad=False, check_undefined_grad=False)

    def fn2(a, c):   # the tangent of c goes nowhere
        return a.clone()

    assert T.autograd.gradcheck(fn2, (x, x.clone()), check_forward_ad=True, check_backward_ad=False,
                                check_batched_grad=False, check_undefined_grad=False)


# ---- TestAutogradDeviceType (CPU) -------------------------------------------------------------------
def test_sparse_mask_autograd(T):
    # TestAutogradDeviceType.test_sparse_mask_autograd
    tensor = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    mask = T.ones(3)
    mask[1] = 0
    mask = mask.to_sparse()
    converted = tensor.sparse_mask(mask).to_dense()
    converted.sum().backward()
    assert eq(tensor.grad, mask.to_dense())


@pytest.mark.parametrize("order", ["sparse_first", "dense_first", "sparse_only"])
def test_sparse_backward(T, order):
    # TestAutogradDeviceType.test_sparse_backward (float64): sparse and dense gradients flowing
    # into one tensor add up in any order (dense when any is dense, sparse otherwise)
    import warnings

    class FixedGradientFunction(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, grad_x):
            ctx.save_for_backward(grad_x)
            return x

        @staticmethod
        def backward(ctx, grad_x):
            (saved_grad_x,) = ctx.saved_tensors
            return saved_grad_x, None

    size = T.Size([6, 3, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's note that sparse invariant checks are off
        sparse_grad1 = T.sparse_coo_tensor(T.tensor([[0, 3, 4], [0, 2, 2]]), rn(T, 3, 2, dtype="float64"), size)
        sparse_grad2 = T.sparse_coo_tensor(T.tensor([[0, 1, 3, 4], [0, 1, 2, 2]]), rn(T, 4, 2, seed=1, dtype="float64"),
                                           size)
    dense_grad = rn(T, 6, 3, 2, seed=2, dtype="float64")
    fn = FixedGradientFunction
    x = T.ones(size, dtype=T.double, requires_grad=True)
    if order == "sparse_first":
        y = fn.apply(x, sparse_grad1) + fn.apply(x, dense_grad) + fn.apply(x, sparse_grad2)
    elif order == "dense_first":
        y = fn.apply(x, dense_grad) + fn.apply(x, sparse_grad1) + fn.apply(x, sparse_grad2)
    else:
        y = fn.apply(x, sparse_grad1) + fn.apply(x, sparse_grad2)
    y.sum().abs().backward()
    expected = sparse_grad1.to_dense() + sparse_grad2.to_dense()
    if order != "sparse_only":
        expected = expected + dense_grad
    assert x.grad.is_sparse == (order == "sparse_only")
    assert eq(x.grad.to_dense() if x.grad.is_sparse else x.grad, expected)
