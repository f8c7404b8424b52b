"""Integer ops: ``gcd``, ``lcm`` and the bit shifts. Not differentiable (integer results), as
torch. Operands are cast to the promoted ``dtype`` inside the op; XLA's shifts by the bit
width or more give 0 (left, or right of a non-negative value) or -1 (right of a negative
value), which is what torch's kernels produce too."""
from __future__ import annotations

import jax.numpy as jnp

from .registry import defop


def _binary(fn):
    return lambda a, b, dtype: fn(jnp.asarray(a, dtype), jnp.asarray(b, dtype))


defop("gcd", _binary(jnp.gcd), args=("self", "other"))
defop("lcm", _binary(jnp.lcm), args=("self", "other"))
defop("bitwise_left_shift", _binary(jnp.left_shift), args=("self", "other"))
defop("bitwise_right_shift", _binary(jnp.right_shift), args=("self", "other"))
