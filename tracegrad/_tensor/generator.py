"""Mirrors ``torch.Generator`` and torch's default-generator functions (``manual_seed``,
``seed``, ``initial_seed``, ``get_rng_state``/``set_rng_state``): the stateful half of random
number generation, at the tensor layer (``get_state`` returns a tensor). The pure draws from a
key are ``_ops/random.py``.

Each draw splits the generator's key (``key_for``), so streams are reproducible per seed, but
differ from torch's (JAX uses threefry, torch Philox/MT). ``default_generator`` is process-wide,
as torch's.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _state
from .._x64 import with_x64
from .tensor import Tensor


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

    @with_x64   # an int64 array
    def get_state(self):
        """The key as an int64 tensor (torch returns a ByteTensor of its own state layout)."""
        t = Tensor._make(jnp.asarray(np.asarray(self._current_key()).astype(np.int64)))
        if _state.in_inference_mode():   # as every factory (factories._finish)
            t._inference = True
        return t

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
