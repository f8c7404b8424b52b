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
