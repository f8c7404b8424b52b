"""Random number generation on JAX PRNG keys.

``Generator`` mirrors ``torch.Generator``: ``manual_seed``, ``seed``, ``initial_seed``,
``get_state``/``set_state``. Each draw splits the generator's key, so streams are
reproducible per seed, but differ from torch's (JAX uses threefry, torch Philox/MT).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


class Generator:
    """Mirrors ``torch.Generator(device='cpu')``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # torch's default seed
        self._key = None

    def manual_seed(self, seed):
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
        k = self._current_key()
        new, sub = _split(k)
        self._key = new
        return sub


@jax.jit
def _split(k):
    a, b = jax.random.split(jax.random.wrap_key_data(k))
    return jax.random.key_data(a), jax.random.key_data(b)


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


def uniform(k, shape, dtype, low=0.0, high=1.0):
    return jax.random.uniform(_wrap(k), shape, dtype, low, high)


def normal(k, shape, dtype, mean=0.0, std=1.0):
    return mean + std * jax.random.normal(_wrap(k), shape, dtype)


def randint(k, shape, low, high, dtype):
    return jax.random.randint(_wrap(k), shape, low, high, dtype)


def permutation(k, n, dtype):
    return jax.random.permutation(_wrap(k), n).astype(dtype)


def bernoulli(k, p, shape):
    return jax.random.bernoulli(_wrap(k), p, shape)


def multinomial(k, probs, num_samples, replacement):
    logits = jnp.log(probs)
    if replacement:
        return jax.random.categorical(_wrap(k), logits, shape=(num_samples,) + logits.shape[:-1]).T
    g = jax.random.gumbel(_wrap(k), logits.shape)
    return jnp.argsort(-(logits + g), axis=-1)[..., :num_samples]


def exponential(k, shape, dtype):
    return jax.random.exponential(_wrap(k), shape, dtype)
