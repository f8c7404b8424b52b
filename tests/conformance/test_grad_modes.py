"""Grad-mode objects as decorators of generator functions (ported from test/test_autograd.py,
TestAutograd.test_set_grad_generator_functions*, test_set_grad_coroutines*), and of coroutines."""
import asyncio

import pytest

MODES = [("no_grad", False), ("enable_grad", True)]


def _mode(T, name):
    return getattr(T, name)()


def _outer(T, inner_enabled):
    # the caller's mode is the opposite of the decorator's
    return T.no_grad() if inner_enabled else T.enable_grad()


@pytest.mark.parametrize("name,enabled", MODES)
def test_set_grad_generator_functions(T, name, enabled):
    # test_set_grad_generator_functions
    @_mode(T, name)
    def gen():
        for i in range(5):
            assert T.is_grad_enabled() is enabled
            yield i

    with _outer(T, enabled):
        for _ in gen():
            assert T.is_grad_enabled() is not enabled


def test_set_grad_generator_functions_recursive(T):
    # test_set_grad_generator_functions_recursive (the decorator half)
    @T.enable_grad()
    def on(depth):
        assert T.is_grad_enabled()
        if depth > 0:
            off(depth - 1)
            assert T.is_grad_enabled()

    @T.no_grad()
    def off(depth):
        assert not T.is_grad_enabled()
        if depth > 0:
            on(depth - 1)
            assert not T.is_grad_enabled()

    for outer in (T.enable_grad, T.no_grad):
        with outer():
            before = T.is_grad_enabled()
            on(6)
            assert T.is_grad_enabled() is before


@pytest.mark.parametrize("name,enabled", MODES)
def test_set_grad_coroutines(T, name, enabled):
    # test_set_grad_coroutines: send() values in, mode inside, caller's mode outside
    @_mode(T, name)
    def coro(n=5):
        assert T.is_grad_enabled() is enabled
        for i in range(n):
            r = yield i
            assert T.is_grad_enabled() is enabled
            assert r == i

    with _outer(T, enabled):
        c, r = coro(), None
        with pytest.raises(StopIteration):
            while True:
                r = c.send(r)
                assert T.is_grad_enabled() is not enabled


@pytest.mark.parametrize("name,enabled", MODES)
def test_set_grad_coroutines_benign_exceptions(T, name, enabled):
    # test_set_grad_coroutines_benign_exceptions: throw() runs the handler in the mode
    class Recoverable(Exception):
        pass

    @_mode(T, name)
    def coro(n=5):
        raised = False
        for i in range(n):
            try:
                assert T.is_grad_enabled() is enabled
                yield (-i if raised else i)
            except Recoverable:
                assert T.is_grad_enabled() is enabled
                raised = True

    with _outer(T, enabled):
        c = coro()
        assert next(c) == 0
        seen = []
        with pytest.raises(StopIteration):
            while True:
                seen.append(c.throw(Recoverable))
                assert T.is_grad_enabled() is not enabled
        assert seen and all(r < 0 for r in seen)


@pytest.mark.parametrize("name,enabled", MODES)
def test_set_grad_coroutines_critical_exceptions(T, name, enabled):
    # test_set_grad_coroutines_critical_exceptions
    class Unrecoverable(Exception):
        pass

    class Secondary(Exception):
        pass

    @_mode(T, name)
    def coro():
        for i in range(5):
            try:
                yield i
            except Unrecoverable:
                assert T.is_grad_enabled() is enabled
                raise Secondary from None

    with _outer(T, enabled):
        c = coro()
        next(c)
        with pytest.raises(Secondary):
            c.throw(Unrecoverable)
        assert T.is_grad_enabled() is not enabled


@pytest.mark.parametrize("name,enabled", MODES)
def test_set_grad_coroutines_exit(T, name, enabled):
    # test_set_grad_coroutines_exit: close() delivers GeneratorExit inside the mode
    state = []

    @_mode(T, name)
    def coro():
        for i in range(10):
            try:
                yield i
            except GeneratorExit:
                state.append(T.is_grad_enabled())
                raise

    with _outer(T, enabled):
        c = coro()
        for _ in range(3):
            next(c)
        c.close()
        assert T.is_grad_enabled() is not enabled
    assert state == [enabled]


def test_generator_return_value(T):
    # not in torch's suite: `return v` inside the generator reaches `yield from`'s caller
    @T.no_grad()
    def gen():
        yield 1
        return "done"

    def outer():
        r = yield from gen()
        return r

    g = outer()
    next(g)
    with pytest.raises(StopIteration) as e:
        next(g)
    assert e.value.value == "done"


@pytest.mark.parametrize("factory", ["inference_mode", "set_grad_enabled"])
def test_inference_and_set_grad_generators(T, factory):
    # TestAutograd.test_set_grad_generator_functions, extended to inference_mode/set_grad_enabled
    deco = T.inference_mode() if factory == "inference_mode" else T.set_grad_enabled(False)

    @deco
    def gen():
        for i in range(3):
            assert not T.is_grad_enabled()
            if factory == "inference_mode":
                assert T.is_inference_mode_enabled()
                assert T.ones(1).is_inference()
            yield i

    for _ in gen():
        assert T.is_grad_enabled()
        assert not T.is_inference_mode_enabled()


@pytest.mark.parametrize("factory", ["no_grad", "inference_mode"])
def test_coroutine_function_decorated(T, factory):
    # torch wraps an async function like a plain one: the mode covers creating the coroutine
    # object only, so its body runs in the caller's mode (no torch test; observed on 2.13)
    @getattr(T, factory)()
    async def f():
        return T.is_grad_enabled(), T.is_inference_mode_enabled()

    assert asyncio.run(f()) == (True, False)
