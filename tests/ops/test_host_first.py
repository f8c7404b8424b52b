"""NOTE [host first calls]: a data-movement program's first calls run on the host, bit for bit
as XLA runs them, and a hot signature or a computing program is compiled."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import tracegrad
from tracegrad._ops import host_first
from tracegrad._ops.xla_options import eager_jit, nested_options_error
from tracegrad._x64 import x64_scope

pytestmark = pytest.mark.skipif(host_first._host_device() is None, reason="one CPU device only")

_RNG = np.random.default_rng(0)
_F = _RNG.standard_normal((3, 4)).astype(np.float32)
# NaN payloads, signed zero, a denormal and inf: moving data must keep every bit
_F[0, :] = [np.float32("nan"), -0.0, np.float32(1e-40), np.inf]
_F[1, 0] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0]
_I = _RNG.integers(-2**31, 2**31 - 1, (3, 4), dtype=np.int64)
_C = (_RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))).astype(np.complex64)

_PROGRAMS = {
    "reshape": (lambda x: x.reshape(4, 3), _F),
    "transpose": (lambda x: x.T, _F),
    "broadcast": (lambda x: jnp.broadcast_to(x[:, None, :], (3, 2, 4)), _F),
    "broadcast_size1": (lambda x: lax.broadcast_in_dim(x[:1], (2, 3, 4), (1, 2)), _F),
    "squeeze_expand": (lambda x: jnp.squeeze(x[None, :, None], (0, 2)), _F),
    "strided_slice": (lambda x: x[1:, ::-2], _F),
    "lax_slice": (lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), _F),
    "flip": (lambda x: jnp.flip(x, (0, 1)), _F),
    "concat": (lambda x: jnp.concatenate([x, x[:1]], 0), _F),
    "pad": (lambda x: lax.pad(x, np.float32(7), [(1, -1, 1), (-2, 2, 0)]), _F),
    "pad_interior_int": (lambda x: lax.pad(x, np.int64(-5), [(0, 0, 2), (3, 0, 1)]), _I),
    "copy": (lambda x: lax.copy_p.bind(x), _F),
    "int_casts": (lambda x: (x.astype(jnp.int8), x.astype(jnp.uint32), x.astype(jnp.bool_),
                             x.astype(jnp.float32), x.astype(jnp.float64)), _I),
    "dynamic_slice_clamped": (lambda x: (lax.dynamic_slice(x, (np.int32(2), np.int32(-3)), (2, 3)),
                                         lax.dynamic_slice(x, (np.int32(1), np.int32(1)), (1, 2))), _F),
    "dynamic_update_clamped": (lambda x: lax.dynamic_update_slice(x, x[:2, :2] * 0 + x[1:, 2:],
                                                                  (np.int32(5), np.int32(-1))), _I),
    "negative_index": (lambda x: x[-1], _F),
    "iota_select": (lambda x: jnp.where(lax.iota(jnp.int32, 4) % 2 == 0, x, x[::-1]), _F),
    "int_arith_wraps": (lambda x: (x * 3 + x, -x, jnp.maximum(x, 7), x < 0, x & 5, ~x), _I),
    "int_c_division": (lambda x: (lax.div(x, np.int64(-7)), lax.rem(x, np.int64(-7)), lax.div(x, x.T.reshape(3, 4) | 1),
                                  lax.rem(-x, np.int64(5))), _I),
    "complex_parts": (lambda z: (jnp.real(z), jnp.imag(z), lax.complex(jnp.imag(z), jnp.real(z))), _C),
    "bitcast": (lambda x: (lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(x, jnp.uint8),
                           lax.bitcast_convert_type(x[:, :2].reshape(3, 2), jnp.float32)), _F),
    "bitcast_wider": (lambda x: lax.bitcast_convert_type(x.astype(jnp.uint16).reshape(3, 2, 2), jnp.uint32), _I),
    "gather_rows_cols": (lambda x: (x[np.array([2, 0, 2, 1])], x[:, np.array([[3, 0], [1, 1]])],
                                    x[np.array([0, 2]), np.array([3, 1])]), _F),
    "gather_clip_and_fill": (lambda x: (x.at[np.array([5, -7, 1])].get(mode="clip"),
                                        x.at[np.array([5, -7, 1])].get(mode="fill", fill_value=-3),
                                        x.at[:, np.array([9, 0])].get(mode="fill")), _I),
    "gather_batched": (lambda x: (jnp.take_along_axis(x, np.array([[3, 0], [1, 1], [2, 9]]), 1),
                                  jnp.take_along_axis(x, np.array([[0, 1, 2, 0]]), 0)), _F),
    "gather_windows": (lambda x: lax.gather(x, np.array([[0, 1], [2, 3], [-1, 0]]),
                                            lax.GatherDimensionNumbers((1, 2), (), (0, 1)), (2, 2),
                                            mode="clip"), _F),
    "scatter_set": (lambda x: (x.at[np.array([2, 0])].set(x[:2] * 0 + x[1:]), x.at[:, np.array([5, 1, -1])].set(7, mode="drop"),
                               x.at[np.array([4, 0])].set(x[:2, ::-1], mode="clip"), x.at[1, 2].set(-1),
                               x.at[np.array([[0], [2]]), np.array([1, 3])].set(x[:2, :2])), _I),
    "nested_jit": (lambda x: jax.jit(lambda y: y.T[::2])(x), _F),
}


class _JitCalls:
    """Counts the calls a ``FirstCallsOnHost`` hands to its jit (JAX's own C++ cache size is
    not a reliable count: whether a call enters it depends on process-wide JAX state)."""

    def __init__(self, f):
        self.jitted, self.calls = f.jitted, 0
        f.jitted = self

    def __call__(self, *args):
        self.calls += 1
        return self.jitted(*args)

    def __getattr__(self, name):
        return getattr(self.jitted, name)


def _bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.tobytes()


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_host_result_is_xlas_bit_for_bit(name):
    fn, arg = _PROGRAMS[name]
    with x64_scope():
        x = jnp.asarray(arg)
        f = eager_jit(fn)
        jit = _JitCalls(f)
        host = f(x)
        assert jit.calls == 0, "the first call compiled"
        assert not f._direct
        want = jax.jit(fn)(x)
    got_leaves, want_leaves = jax.tree_util.tree_leaves(host), jax.tree_util.tree_leaves(want)
    assert jax.tree_util.tree_structure(host) == jax.tree_util.tree_structure(want)
    for g, w in zip(got_leaves, want_leaves):
        assert isinstance(g, jax.Array) and not g.weak_type
        assert _bits(g) == _bits(w)


def test_computing_program_compiles_and_goes_direct():
    with x64_scope():
        f = eager_jit(lambda x: x[::-1] * 2)  # float arithmetic: XLA's rounding and flushing
        jit = _JitCalls(f)
        x = jnp.asarray(_F)
        f(x)
        assert f._direct and jit.calls == 1
        f = eager_jit(lambda x: x.astype(jnp.float64))   # XLA flushes the denormal, numpy would not
        assert np.asarray(f(x))[0, 2] == 0.0
        assert f._direct


def test_signature_is_compiled_after_its_host_calls():
    with x64_scope():
        f = eager_jit(lambda x: x.reshape(-1))
        jit = _JitCalls(f)
        a, b = jnp.asarray(_F), jnp.asarray(_I)
        for _ in range(host_first.HOST_CALLS):
            f(a)
        f(b)                                   # another signature keeps its own count
        assert jit.calls == 0
        out = f(a)                             # one call more than HOST_CALLS: compiled
        assert jit.calls == 1
        assert _bits(out) == _bits(_F.reshape(-1))
        f(a)
        assert jit.calls == 2                  # and stays compiled
        assert _bits(f(b)) == _bits(_I.reshape(-1))
        assert jit.calls == 2                  # the other signature is still on the host


def test_large_results_compile_at_once():
    with x64_scope():
        f = eager_jit(lambda x: x[::-1])   # (a transpose would take the retargeted jit)
        big = jnp.zeros((host_first._HOST_BYTES // 4 + 1,), jnp.float32).reshape(-1, 1)
        jit = _JitCalls(f)
        f(big)
        assert jit.calls == 1 and not f._direct
        f(jnp.asarray(_F))                     # a small signature of the same program: host
        assert jit.calls == 1


def test_tracers_go_to_jit():
    # met inside someone's trace, the program is the jit's business, which refuses to nest
    # (the op dispatch then traces the pure function: NOTE [eager compile options])
    f = eager_jit(lambda x: x.T)
    with x64_scope(), pytest.raises(ValueError) as e:
        jax.jit(lambda x: f(x) + 1)(jnp.asarray(_F[1:]))
    assert nested_options_error(e.value)
    assert f._sigs == {}


def test_float_convert_is_not_evaluated_on_host():
    # a program whose first signature moves data but a later one converts floats
    with x64_scope():
        f = eager_jit(lambda x: x.astype(jnp.float32))
        jit = _JitCalls(f)
        f(jnp.asarray(_I))
        assert jit.calls == 0
        d = jnp.asarray(np.array([1e-310, 1.5], np.float64))
        assert np.asarray(f(d)).tolist() == np.asarray(jax.jit(lambda x: x.astype(jnp.float32))(d)).tolist()


def test_tensor_results_and_gradients_through_host_programs():
    # eager ops whose programs run on the host: values, views and gradients as torch gives
    torch = pytest.importorskip("torch")
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for lib in (tracegrad, torch):
        x = lib.tensor(a, requires_grad=True)
        v = x.transpose(0, 2)[1:, ::2].reshape(-1)
        w = lib.cat([v, x.flip(1).permute(2, 0, 1)[0].flatten()])
        (w * lib.arange(w.numel(), dtype=lib.float32)).sum().backward()
        if lib is tracegrad:
            got = (w.detach().numpy(), x.grad.numpy())
        else:
            want = (w.detach().numpy(), x.grad.numpy())
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
