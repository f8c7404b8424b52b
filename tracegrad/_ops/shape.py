"""Shape and movement ops. Those marked ``view=True`` alias their input's storage (torch
views): their single-input ``fn`` is also what a view chain replays (``_tensor.py``)."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .registry import defop

# ---- views ------------------------------------------------------------------------------
defop("view", lambda x, shape: jnp.reshape(x, shape), grad_fn="ViewBackward0", view=True)
defop("alias", lambda x: x, grad_fn="AliasBackward0", view=True)
defop("unsqueeze", lambda x, dim: jnp.expand_dims(x, dim), grad_fn="UnsqueezeBackward0", view=True)
defop("squeeze", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward0", view=True)
defop("squeeze_dim", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward1", view=True)
defop("squeeze_dims", lambda x, dim: jnp.squeeze(x, dim), grad_fn="SqueezeBackward2", view=True)
defop("t", lambda x: x.T, grad_fn="TBackward0", view=True)
defop("transpose", lambda x, dim0, dim1: jnp.swapaxes(x, dim0, dim1), grad_fn="TransposeBackward0",
      view=True)
defop("permute", lambda x, dims: jnp.transpose(x, dims), grad_fn="PermuteBackward0", view=True)
defop("expand", lambda x, size: jnp.broadcast_to(x, size), grad_fn="ExpandBackward0", view="overlap")
defop("slice", lambda x, dim, start, end, step: x[(slice(None),) * dim + (slice(start, end, step),)],
      grad_fn="SliceBackward0", view=True)
defop("select", lambda x, dim, index: x[(slice(None),) * dim + (index,)], grad_fn="SelectBackward0",
      view=True)
# basic indexing (ints, slices, None, Ellipsis) in one step; ``key`` is a static tuple
defop("basic_index", lambda x, key: x[key], grad_fn="SliceBackward0", view=True)
defop("diagonal", lambda x, offset, dim1, dim2: jnp.diagonal(x, offset, dim1, dim2),
      grad_fn="DiagonalBackward0", view=True)
defop("unbind", lambda x, dim: tuple(jnp.moveaxis(x, dim, 0)), grad_fn="UnbindBackward0",
      view=True, n_out=-1)


def _split(x, sizes, dim):
    out, start = [], 0
    for s in sizes:
        out.append(x[(slice(None),) * dim + (slice(start, start + s),)])
        start += s
    return tuple(out)


defop("split", _split, grad_fn="SplitBackward0", view=True, n_out=-1)
defop("split_with_sizes", _split, grad_fn="SplitWithSizesBackward0", view=True, n_out=-1)

# ---- copies -----------------------------------------------------------------------------
defop("reshape_copy", lambda x, shape: jnp.reshape(x, shape), grad_fn="UnsafeViewBackward0")
def _cat(*xs, dim, dtype):
    # torch skips legacy empty 1-D inputs (shape (0,)) when the others have more dims;
    # they stay inputs of the op (and get an empty gradient)
    nd = max(x.ndim for x in xs)
    keep = [x for x in xs if not (nd > 1 and x.shape == (0,))]
    return jnp.concatenate([x.astype(dtype) for x in keep], axis=dim)


defop("cat", _cat, args=tuple(f"t{i}" for i in range(256)), grad_fn="CatBackward0")
defop("stack", lambda *xs, dim, dtype: jnp.stack([x.astype(dtype) for x in xs], axis=dim),
      args=tuple(f"t{i}" for i in range(256)), grad_fn="StackBackward0")
defop("flip", lambda x, dims: jnp.flip(x, dims), grad_fn="FlipBackward0")
defop("roll", lambda x, shifts, dims: jnp.roll(x, shifts, dims), grad_fn="RollBackward0")
defop("roll_flat", lambda x, shifts: jnp.roll(x, shifts), grad_fn="RollBackward0")
defop("repeat", lambda x, repeats: jnp.tile(x, repeats), grad_fn="RepeatBackward0")
# an int ``repeats`` is expand + reshape in torch (ViewBackward0); a tensor is index_select
defop("repeat_interleave", lambda x, repeats, dim: jnp.repeat(x, repeats, axis=dim),
      grad_fn="ViewBackward0")
defop("repeat_interleave_tensor", lambda x, repeats, dim: jnp.repeat(x, np.asarray(repeats), axis=dim,
                                                                    total_repeat_length=sum(repeats)),
      grad_fn="IndexSelectBackward0")
defop("tril", lambda x, diagonal: jnp.tril(x, diagonal), grad_fn="TrilBackward0")
defop("triu", lambda x, diagonal: jnp.triu(x, diagonal), grad_fn="TriuBackward0")
defop("diag_embed", lambda x, diagonal: jnp.diag(x, diagonal), grad_fn="DiagEmbedBackward0")
# torch 2.13 decomposes diag(2-D) into a diagonal copy
defop("diag", lambda x, diagonal: jnp.diag(x, diagonal), grad_fn="DiagonalBackward0_copy")
defop("trace", lambda x: jnp.trace(x), grad_fn="TraceBackward0")
defop("pad", lambda x, pad_width, value: jnp.pad(x, pad_width, constant_values=value),
      grad_fn="ConstantPadNdBackward0")
defop("pad_mode", lambda x, pad_width, mode: jnp.pad(x, pad_width, mode=mode),
      grad_fn="ReflectionPad2DBackward0")
