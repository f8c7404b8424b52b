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
import numpy as np

from .. import _state
from .._ops import dtypes as _dt
from .._x64 import with_x64
from .host import put, to_device
from .tensor import Tensor


class Generator:
    """Mirrors ``torch.Generator(device='cpu')``."""

    def __init__(self, device="cpu"):
        from .device import device as _device   # a sibling module, imported late as storage.py does
        self.device = _device(device)            # RuntimeError for an unknown device, as torch
        if self.device.type != "cpu":
            from .device import cuda_devices
            if self.device.type != "cuda" or not cuda_devices():
                raise RuntimeError(f"Cannot get a {self.device.type} generator: there is no such accelerator on this "
                                   "machine; use Generator('cpu')")
        self._seed = 67280421310721  # torch's default seed
        self._key = None
        if _state.CAPTURE[0] is not None:      # NOTE [generators made in a trace] (capture.py)
            _state.CAPTURE[0].see_generator_made(self)

    @with_x64   # a 64-bit seed (torch's default is > 2**32) needs x64 to make the key
    def manual_seed(self, seed):
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_generator(self)
        if type(seed) is not int and isinstance(seed, int) and not isinstance(seed, bool):
            seed = int(seed)                   # an int subclass (an IntEnum member) is a long to torch
        if type(seed) is not int:
            if not isinstance(seed, np.integer):   # torch's "long" check passes ints and NumPy's ints only
                raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}; pass a Python int "
                                   "(tracegrad.manual_seed converts with int() first)")
            raise TypeError(f"Generator.manual_seed: an integer is required (got {type(seed).__name__}); pass int(seed)")
        if not -2 ** 63 <= seed < 2 ** 64:
            raise ValueError(f"manual_seed: seed {seed} does not fit in 64 bits (Overflow when unpacking long long); "
                             "pass a seed in [-2**63, 2**64)")
        seed %= 2 ** 64                        # a negative seed reads back as its unsigned 64-bit value, as torch
        self._seed = seed
        self._key = _seed_key(seed % (2 ** 63))
        return self

    def seed(self):
        if _state.CAPTURE[0] is not None:     # a fresh seed per eager call: not one baked in
            _state.CAPTURE[0].python_effect("seeding from fresh entropy (seed())")
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """Mirrors ``torch.Generator.initial_seed``: the seed of the last ``manual_seed``/``seed``
        (torch's default one before any). A compiled function that reads it keeps a program per
        seed (a guard), so a reseed between calls is never a frozen number."""
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].guard_attribute(self, "_seed")
        return self._seed

    def get_state(self):
        """Mirrors ``torch.Generator.get_state``: the generator's state as a uint8 tensor (its
        layout is tracegrad's: the 8 bytes of the key, then the 8 bytes of the seed, so
        ``set_state`` also restores ``initial_seed()``, as torch's does). Inside a compiled
        function the call runs eagerly: the state would be a constant of the program, frozen at
        the traced call's (round-15's adversarial tests)."""
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].python_effect("reading a generator's state (get_state(), get_rng_state())")
        key = np.asarray(self._current_key(), dtype=np.uint32)
        raw = np.concatenate([key.astype("<u4").view(np.uint8), np.array([self._seed % 2 ** 64], "<u8").view(np.uint8)])
        t = Tensor._make(to_device(raw))
        if _state.in_inference_mode():   # as every factory (factories._finish)
            t._inference = True
        return t

    def set_state(self, new_state):
        """Mirrors ``torch.Generator.set_state``: restores a state from ``get_state``. Raises
        TypeError for anything but a uint8 tensor and RuntimeError for one of another size."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not _dt.uint8:
            raise TypeError(f"Generator.set_state: RNG state must be a tracegrad.ByteTensor (uint8), "
                            f"as returned by get_state(); got {_describe(new_state)}")
        raw = np.asarray(new_state.detach().numpy(), dtype=np.uint8).reshape(-1)
        if raw.size != _STATE_BYTES:
            raise RuntimeError(f"Generator.set_state: expected a state of {_STATE_BYTES} bytes (from "
                               f"get_state()), but found the input RNG state size to be {raw.size}")
        if _state.CAPTURE[0] is not None:
            _state.CAPTURE[0].see_generator(self)
        self._key = to_device(raw[:8].view("<u4").astype(np.uint32))
        self._seed = int(raw[8:].view("<u8")[0])
        return self

    def clone_state(self):
        """Mirrors ``torch.Generator.clone_state``: a new generator of the same device holding
        this one's state (seed and position in the stream)."""
        if _state.CAPTURE[0] is not None:      # the copy is made in the trace, this one's key is
            _state.CAPTURE[0].see_generator(self)   # state (NOTE [generators made in a trace])
        g = Generator(self.device)
        g._seed, g._key = self._seed, self._key
        return g

    def graphsafe_get_state(self):
        """``torch.Generator.graphsafe_get_state``: a CUDA-graph-safe state, which torch's CPU
        generator does not support (NotImplementedError, as torch); use ``get_state``."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator (a CPU generator); "
                                  "use get_state()")

    def graphsafe_set_state(self, state):
        """``torch.Generator.graphsafe_set_state``: TypeError for a non-Generator, else
        NotImplementedError (torch's CPU generator); use ``set_state``."""
        if not isinstance(state, Generator):
            raise TypeError(f"graphsafe_set_state: expected a Generator, but got {type(state).__name__}")
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator (a CPU generator); "
                                  "use set_state(other.get_state())")

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


def _seed_key(seed):
    """``key_data(PRNGKey(seed))`` for 0 <= seed < 2**63, in the x64 scope. JAX's default
    threefry key of a 64-bit seed is its high and low 32-bit words; made with numpy and put on
    the device that takes ~0.1 ms, where JAX's un-jitted seeding ops took ~1 ms (every test of
    the suite reseeds). Another ``jax_default_prng_impl`` seeds through JAX."""
    if jax.config.jax_default_prng_impl == "threefry2x32":
        return put(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))
    return jax.random.key_data(jax.random.PRNGKey(seed))


def _split(k):
    a, b = jax.random.split(jax.random.wrap_key_data(k))
    return jax.random.key_data(a), jax.random.key_data(b)


_split = with_x64(jax.jit(_split))  # one cache entry: always called in the x64 mode


default_generator = Generator()


_STATE_BYTES = 16


def _describe(v):
    return str(v.dtype) if isinstance(v, Tensor) else type(v).__name__


def manual_seed(seed):
    """Mirrors ``torch.manual_seed``: reseeds the default generator with ``int(seed)`` (a float or
    a one-element tensor is truncated, as torch; ValueError/TypeError from int() for a string or
    None); returns it."""
    return default_generator.manual_seed(int(seed))


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    """Mirrors ``torch.set_rng_state(new_state)``: the default generator's state, as
    ``get_rng_state`` gave it."""
    default_generator.set_state(new_state)


def key_for(generator, api="random draw"):
    """The next key of ``generator`` (None: the default one); TypeError naming ``api`` (the
    op, e.g. ``"randperm()"``) for a ``generator=`` of another kind, as torch's parser."""
    try:   # free on the success path; a generator= of another kind is torch's parser TypeError
        return (default_generator if generator is None else generator).next_key()
    except AttributeError:
        if generator is None or isinstance(generator, Generator):
            raise
        raise TypeError(f"{api} received an invalid combination of arguments: got "
                        f"generator={type(generator).__name__}; pass a tracegrad.Generator (or None)") from None


def peek_key(generator):
    """The key the next draw from ``generator`` (None: the default one) would use, without
    advancing it (a meta tensor's draw, which takes no randomness: NOTE [meta tensors])."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"random draw received an invalid combination of arguments: got "
                        f"generator={type(generator).__name__}; pass a tracegrad.Generator (or None)")
    return (default_generator if generator is None else generator)._current_key()
