"""NOTE [host arrays]: factories and ``tensor()`` put host data on the device without compiling
an XLA program for each new shape, keep their values independent of the caller's array, and
switch to JAX's compiled path for a shape seen many times without changing any value."""
import contextlib
import logging

import warnings

import numpy as np
import pytest

import tracegrad
from tracegrad._tensor import host

_LOGGERS = ("jax._src.interpreters.pxla", "jax._src.dispatch")


@contextlib.contextmanager
def compiled_programs():
    """The names of the XLA programs JAX compiles (or loads from its cache) inside the block."""
    import jax
    names = []

    class Seen(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            if msg.startswith("Compiling "):
                names.append(msg.split()[1])
    handler, saved = Seen(level=logging.DEBUG), []
    for name in _LOGGERS:
        lg = logging.getLogger(name)
        saved.append((lg, lg.level))
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            yield names
    finally:
        for lg, level in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)


def test_factories_on_new_shapes_compile_nothing():
    arr = np.arange(35, dtype=np.float64).reshape(5, 7) / 3
    with compiled_programs() as names:
        made = [tracegrad.tensor([[1.5, 2.0, -3.0]] * 11),
                tracegrad.tensor(arr),
                tracegrad.tensor(arr, dtype=tracegrad.float16),
                tracegrad.zeros(13, 3), tracegrad.ones(3, 17, dtype=tracegrad.int64),
                tracegrad.full((2, 19), 2.5), tracegrad.full((23,), -1, dtype=tracegrad.uint8),
                tracegrad.eye(29, 3), tracegrad.arange(31), tracegrad.linspace(0, 1, 37),
                tracegrad.empty(41, 2), tracegrad.tensor(7.25, dtype=tracegrad.bfloat16)]
    assert names == [], names
    want = [np.array([[1.5, 2.0, -3.0]] * 11, np.float32), arr, arr.astype(np.float16),
            np.zeros((13, 3), np.float32), np.ones((3, 17), np.int64), np.full((2, 19), 2.5, np.float32),
            np.full(23, 255, np.uint8), np.eye(29, 3, dtype=np.float32), np.arange(31),
            np.linspace(0, 1, 37, dtype=np.float32)]
    for got, w in zip(made, want):
        assert got.numpy().dtype == w.dtype
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-6)
    assert made[10].shape == (41, 2) and made[11].item() == 7.25


def test_values_do_not_follow_the_callers_array(fresh_warn_once):
    for n in (3, 1 << 14):            # small, and large enough for an aligned (aliasable) buffer
        a = np.ones(n, np.float32)
        t = tracegrad.tensor(a)
        a[:] = 5
        assert float(t.sum()) == n
        b = np.ones(n, np.float32)
        b.flags.writeable = False     # from_numpy of a read-only array copies it (torch warns,
        with warnings.catch_warnings(record=True) as log:     # once per process)
            warnings.simplefilter("always")
            u = tracegrad.from_numpy(b)
        assert [w.category for w in log] == ([UserWarning] if n == 3 else [])
        b.flags.writeable = True
        b[:] = 7
        assert float(u.sum()) == n


def test_a_hot_shape_switches_to_the_compiled_path_with_the_same_values(monkeypatch):
    # the counting path is the one an accelerator (or several devices) takes: no C++ put there
    monkeypatch.setattr(host, "_fast_put", lambda arr: None)
    monkeypatch.setattr(host, "_PUT_FIRST", 2)
    monkeypatch.setattr(host, "_SEEN", {})
    rows = [tracegrad.tensor([[i, i + 0.5, -i]] * 43) for i in range(5)]
    assert host._SEEN[((43, 3), np.dtype(np.float32))] == 2
    for i, r in enumerate(rows):
        np.testing.assert_array_equal(r.numpy(), np.array([[i, i + 0.5, -i]] * 43, np.float32))
    monkeypatch.setattr(host, "_SEEN_MAX", 1)     # the counts are bounded
    tracegrad.tensor([1.0] * 47)
    assert len(host._SEEN) == 1


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_large_fills_and_casts_match_jax():
    import jax.numpy as jnp
    shape = (600, 600)                # over the host-fill size: JAX's own fill
    assert not host.small(shape, np.float32) and host.small((10, 10), np.float32)
    for value, dtype in ((-1, np.uint8), (2.7, np.int32), (1e40, np.float32), (True, np.float16), (0.1, np.float64)):
        with tracegrad._x64.x64_scope():
            big = np.asarray(host.filled(shape, value, dtype))
            little = np.asarray(host.filled((3,), value, dtype))
            ref = np.asarray(jnp.full((3,), value, dtype))
        assert big.dtype == little.dtype == ref.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(little, ref)
        np.testing.assert_array_equal(big[:1, :3].reshape(-1), ref)


def test_the_one_cpu_device_puts_without_jax_device_put_and_traces_still_trace(monkeypatch):
    """On the CPU backend a put skips ``jax.device_put``'s Python (the C++ call it ends in);
    inside a JAX trace it must still give the trace's tracer, not a concrete constant."""
    import jax
    if len(jax.devices()) != 1 or jax.devices()[0].platform != "cpu":
        pytest.skip("the C++ put applies to one CPU device")

    def refused(*a, **k):
        raise AssertionError("jax.device_put called outside a trace")
    monkeypatch.setattr(host.jax, "device_put", refused)
    made = [tracegrad.ones(4, dtype=tracegrad.int64), tracegrad.zeros(2, 3), tracegrad.tensor([1.5, -2.0]),
            tracegrad.full((3,), 2 ** 40), tracegrad.eye(2)]
    assert [m.dtype for m in made] == [tracegrad.int64, tracegrad.float32, tracegrad.float32, tracegrad.int64,
                                       tracegrad.float32]
    np.testing.assert_array_equal(made[3].numpy(), np.full(3, 2 ** 40))
    np.testing.assert_array_equal(made[4].numpy(), np.eye(2, dtype=np.float32))
    monkeypatch.undo()

    seen = []

    def f(v):
        a, b = tracegrad.ones(3), tracegrad.tensor([1.0, 2.0, 3.0])
        seen.append(isinstance(a._value, jax.core.Tracer) and isinstance(b._value, jax.core.Tracer))
        t = a + b
        return t._value * v
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(2.0)), [4.0, 6.0, 8.0])
    assert seen == [True]
