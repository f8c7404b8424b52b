"""Random number generation on JAX PRNG keys.

``Generator`` mirrors ``torch.Generator``: ``manual_seed``, ``seed``, ``initial_seed``,
``get_state``/``set_state``. Each draw splits the generator's key, so streams are
reproducible per seed, but differ from torch's (JAX uses threefry, torch Philox/MT).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._x64 import with_x64


class Generator:
    """Mirrors ``torch.Generator(device='cpu')``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # torch's default seed
        self._key = None

    @with_x64   # a 64-bit seed (torch's default is > 2**32) needs x64 to make the key
    def manual_seed(self, seed):
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_generator(self)
        seed = int(seed)
        self._seed = seed
        self._key = jax.random.key_data(jax.random.PRNGKey(seed % (2 ** 63)))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .._factories import tensor
        return tensor(np.asarray(self._current_key()).astype(np.int64))

    def set_state(self, state):
        self._key = jnp.asarray(np.asarray(state.tolist(), dtype=np.uint32))
        return self

    def _current_key(self):
        if self._key is None:
            self.manual_seed(self._seed)
        return self._key

    def next_key(self):
        """Split off a fresh key for one draw (a raw uint32 key array)."""
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_generator(self)
        k = self._current_key()
        new, sub = _split(k)
        self._key = new
        return sub


def _split(k):
    a, b = jax.random.split(jax.random.wrap_key_data(k))
    return jax.random.key_data(a), jax.random.key_data(b)


_split = with_x64(jax.jit(_split))  # one cache entry: always called in the x64 mode


default_generator = Generator()


def manual_seed(seed):
    """Mirrors ``torch.manual_seed``: reseeds the default generator; returns it."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def key_for(generator):
    return (generator or default_generator).next_key()


def _wrap(k):
    return jax.random.wrap_key_data(k)


# NOTE [host draws]
# Eager draws (a concrete key) come from numpy's Philox seeded with the JAX key's bits: the
# stream is still fixed by manual_seed, but no XLA program is compiled per shape (jax.random
# compiles one per new shape, 0.1-3 s each: every nn.init call on a new layer paid it).
# Inside a trace (a tracer key: tracegrad.compile, a checkpointed region) the same numpy draw
# runs through ``jax.pure_callback``, so a compiled step draws exactly the bits eager draws
# from the same generator state (dropout masks equal eager's), at ~50 us per draw.


def _philox(k):
    bits = np.asarray(k).astype(np.uint64)
    return np.random.Generator(np.random.Philox(key=int(bits[0]) << 32 | int(bits[-1])))


def _draw(k, sample, shape, dtype):
    """``sample(numpy_generator) -> numpy array`` of ``shape``/``dtype``, from key ``k``."""
    if not isinstance(k, jax.core.Tracer):
        return with_x64(jnp.asarray)(sample(_philox(k)), dtype)
    dtype = jnp.dtype(dtype)
    return jax.pure_callback(lambda key: np.asarray(sample(_philox(key)), dtype),
                             jax.ShapeDtypeStruct(tuple(shape), dtype), k)


def _np_float(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def uniform(k, shape, dtype, low=0.0, high=1.0):
    return _draw(k, lambda g: g.uniform(low, high, shape).astype(_np_float(dtype)), shape, dtype)


def normal(k, shape, dtype, mean=0.0, std=1.0):
    return _draw(k, lambda g: (mean + std * g.standard_normal(shape)).astype(_np_float(dtype)), shape, dtype)


def randint(k, shape, low, high, dtype):
    return _draw(k, lambda g: g.integers(low, high, shape), shape, dtype)


def permutation(k, n, dtype):
    return _draw(k, lambda g: g.permutation(n), (n,), dtype)


def bernoulli(k, p, shape):
    if isinstance(p, jax.core.Tracer) or isinstance(k, jax.core.Tracer):
        # the same uniform draw eager compares with p; the comparison happens in the program
        return _draw(k, lambda g: g.random(shape), shape, jnp.float64) < p
    return jnp.asarray(_philox(k).random(shape) < np.asarray(p))


def multinomial(k, probs, num_samples, replacement):
    logits = jnp.log(probs)
    if replacement:
        return jax.random.categorical(_wrap(k), logits, shape=(num_samples,) + logits.shape[:-1]).T
    g = jax.random.gumbel(_wrap(k), logits.shape)
    return jnp.argsort(-(logits + g), axis=-1)[..., :num_samples]


def exponential(k, shape, dtype):
    return _draw(k, lambda g: g.exponential(1.0, shape).astype(_np_float(dtype)), shape, dtype)
