"""Mirrors ``torch.nn.attention.flex_attention``: attention whose scores a Python ``score_mod``
rewrites and a ``mask_mod`` (through a ``BlockMask``) masks, elementwise.

torch calls both functions on scalar indices under ``vmap``; here they run once on broadcast
index tensors -- ``b`` ``(B,1,1,1)``, ``h`` ``(1,H,1,1)``, ``q_idx`` ``(1,1,Q,1)``, ``kv_idx``
``(1,1,1,K)``, int64 -- so any function written with tensor ops (arithmetic, comparisons,
``where``, indexing a tensor with an index: ``bias[h]``, ``doc[q_idx] == doc[kv_idx]``) gives
the same values. The scores are materialized (torch's eager path does the same; a compiled
step lets XLA fuse them). A query row whose keys are all masked gives zeros and a log-sum-exp
of -inf, as torch; gradients are autograd's through the same formula."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import tracegrad
from tracegrad import Tensor
from ..._ops.warn import warn as _warn

__all__ = ["flex_attention", "create_block_mask", "create_mask", "BlockMask", "and_masks", "or_masks",
           "noop_mask", "AuxRequest", "AuxOutput"]

_DEFAULT_BLOCK = 128


def noop_mask(b, h, q_idx, kv_idx):
    """Mirrors ``flex_attention.noop_mask``: keeps every position."""
    return tracegrad.ones_like(q_idx - kv_idx, dtype=tracegrad.bool)


def and_masks(*mask_mods):
    """Mirrors ``flex_attention.and_masks``: a mask_mod keeping what all of ``mask_mods`` keep."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask(b, h, q_idx, kv_idx):
        out = noop_mask(b, h, q_idx, kv_idx)
        for m in mask_mods:
            out = out & m(b, h, q_idx, kv_idx)
        return out
    return mask


def or_masks(*mask_mods):
    """Mirrors ``flex_attention.or_masks``: a mask_mod keeping what any of ``mask_mods`` keeps."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask(b, h, q_idx, kv_idx):
        out = ~noop_mask(b, h, q_idx, kv_idx)
        for m in mask_mods:
            out = out | m(b, h, q_idx, kv_idx)
        return out
    return mask


def _indices(B, H, Q, K, device=None):
    ar = tracegrad.arange
    return (ar(B).view(B, 1, 1, 1), ar(H).view(1, H, 1, 1), ar(Q).view(1, 1, Q, 1), ar(K).view(1, 1, 1, K))


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """Mirrors ``flex_attention.create_mask``: the dense bool mask ``(B, H, Q_LEN, KV_LEN)`` of a
    mask_mod (``B``/``H`` None count as 1)."""
    B, H = B or 1, H or 1
    return mod_fn(*_indices(B, H, Q_LEN, KV_LEN)).expand(B, H, Q_LEN, KV_LEN).to(tracegrad.bool)


class BlockMask:
    """Mirrors ``flex_attention.BlockMask``: the mask ``create_block_mask`` builds. tracegrad
    keeps the elementwise mask itself (``mask``, bool ``(B, H, Q_LEN, KV_LEN)``) and the
    ``mask_mod``; ``to_dense()`` gives torch's block-level view (a block is kept if any of its
    positions is), ``sparsity()`` the percentage of blocks with nothing kept."""

    def __init__(self, mask, mask_mod, block_size):
        self.mask, self.mask_mod = mask, mask_mod
        self.BLOCK_SIZE = block_size
        self.seq_lengths = tuple(mask.shape[-2:])

    @property
    def shape(self):
        return tuple(self.mask.shape)

    def to_dense(self):
        """Bool-as-int32 ``(B, H, ceil(Q/BQ), ceil(KV/BK))``: 1 where the block keeps anything."""
        B, H, Q, K = self.shape
        bq, bk = self.BLOCK_SIZE
        nq, nk = -(-Q // bq), -(-K // bk)
        padded = tracegrad.zeros(B, H, nq * bq, nk * bk, dtype=tracegrad.bool)
        padded[..., :Q, :K] = self.mask
        return padded.view(B, H, nq, bq, nk, bk).any(5).any(3).to(tracegrad.int32)

    def numel(self):
        return math.prod(self.shape)

    def sparsity(self) -> float:
        dense = self.to_dense()
        return 100.0 * (1.0 - dense.float().mean().item())

    def to(self, device):
        return self

    def __getitem__(self, index):
        return BlockMask(self.mask[index], self.mask_mod, self.BLOCK_SIZE)

    def __repr__(self):
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_BLOCK, _compile=False,
                      **kwargs):
    """Mirrors ``flex_attention.create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE)``:
    evaluates ``mask_mod(b, h, q_idx, kv_idx)`` everywhere (B/H None: one, broadcast to every
    batch/head) into a ``BlockMask``."""
    bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    return BlockMask(create_mask(mask_mod, B, H, Q_LEN, KV_LEN), mask_mod, bs)


@dataclass(frozen=True)
class AuxRequest:
    """Mirrors ``flex_attention.AuxRequest``: which extra outputs ``flex_attention`` returns."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Mirrors ``flex_attention.AuxOutput``: the extra outputs asked for (None otherwise)."""
    lse: Tensor | None = None
    max_scores: Tensor | None = None


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """Mirrors ``torch.nn.attention.flex_attention.flex_attention``.

    query ``(B, Hq, L, E)``, key ``(B, Hkv, S, E)``, value ``(B, Hkv, S, Ev)``; ``Hkv`` divides
    ``Hq`` when ``enable_gqa`` (else they must be equal). Scores ``q k^T * scale`` (default
    ``1/sqrt(E)``) go through ``score_mod(score, b, h, q_idx, kv_idx)``, then positions the
    ``block_mask`` drops are masked, then softmax over keys and the weighted sum of values.
    Returns ``(B, Hq, L, Ev)``; with ``return_lse`` (deprecated, FutureWarning) also the
    log-sum-exp ``(B, Hq, L)``; with ``return_aux=AuxRequest(...)`` ``(out, AuxOutput)``.
    ValueError for mismatched head counts or dims, as torch."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError(f"flex_attention: expected 4-d query, key and value (B, H, L, E), got "
                         f"{query.dim()}-d, {key.dim()}-d and {value.dim()}-d")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but got "
                         f"E={query.shape[-1]} and E={key.shape[-1]}.")
    if key.shape[:3] != value.shape[:3]:
        raise ValueError(f"flex_attention: key {tuple(key.shape)} and value {tuple(value.shape)} must agree in "
                         "batch, heads and length")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} and "
                             f"Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={Hq} "
                             f"and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    compute = scores if scores.dtype not in (tracegrad.float16, tracegrad.bfloat16) else scores.float()
    idx = _indices(B, Hq, L, S)
    if score_mod is not None:
        compute = score_mod(compute, *idx).to(compute.dtype)
    keep = None
    if block_mask is not None:
        keep = block_mask.mask
        if tuple(keep.shape[-2:]) != (L, S):
            raise ValueError(f"flex_attention: the block mask covers {tuple(keep.shape[-2:])} positions, the "
                             f"query and key {(L, S)}")
        compute = compute.masked_fill(~keep, float("-inf"))
    lse = tracegrad.logsumexp(compute, dim=-1)
    empty = tracegrad.isneginf(lse)
    # softmax as exp(s - lse): a row with every key masked gives zeros (and lse -inf), as torch,
    # where softmax would give NaN
    safe = lse.masked_fill(empty, 0.0).unsqueeze(-1)
    weights = tracegrad.where(empty.unsqueeze(-1), 0.0, tracegrad.exp(compute - safe))
    out = weights.to(value.dtype) @ value
    if return_lse:
        _warn("return_lse is deprecated and will be removed in v2.10. Please use "
              "return_aux=AuxRequest(lse=True) instead.", FutureWarning)
        return out, lse
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=compute.amax(-1) if return_aux.max_scores else None)
    return out
