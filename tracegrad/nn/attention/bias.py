"""``tracegrad.nn.attention.bias``: mirrors ``torch.nn.attention.bias`` -- causal attention
masks for ``F.scaled_dot_product_attention`` given as an object rather than a tensor.

``causal_upper_left(L, S)`` keeps, for query ``i``, the keys ``j <= i`` (what ``is_causal=True``
does); ``causal_lower_right(L, S)`` aligns the diagonal to the bottom-right corner, keeping
``j <= i + S - L`` (the last query sees every key: what decoding with a cache wants).
Passing either as ``attn_mask`` makes ``scaled_dot_product_attention`` take the causal path
(upper-left, or any square one) or the materialized boolean mask (lower-right).

Differs from torch: ``CausalBias`` is a plain object, not a ``Tensor`` subclass; it is
recognised by ``scaled_dot_product_attention`` only (``_materialize()`` gives the mask as a
tensor for other uses).
"""
from __future__ import annotations

import enum

import tracegrad
from .. import functional as F
from ..._ops.warn import warn as _warn

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Mirrors ``torch.nn.attention.bias.CausalVariant``: where the causal diagonal starts."""
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """Mirrors ``torch.nn.attention.bias.CausalBias(variant, seq_len_q, seq_len_kv)``: a causal
    mask of ``(seq_len_q, seq_len_kv)`` for ``scaled_dot_product_attention``'s ``attn_mask``.
    Raises ValueError when combined with ``is_causal=True`` there."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise TypeError(f"CausalBias: variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            _warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!")

    def _upper_left(self, device):
        return tracegrad.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=tracegrad.bool).tril()

    def _lower_right(self, device):
        return tracegrad.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=tracegrad.bool).tril(
            diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The boolean ``(seq_len_q, seq_len_kv)`` mask (True: the query attends to the key)."""
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    def _sdpa_dispatch(self, query, key, value, dropout_p, is_causal, scale, enable_gqa):
        """What ``scaled_dot_product_attention(..., attn_mask=self)`` computes."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if self.variant == CausalVariant.UPPER_LEFT or self.seq_len_q == self.seq_len_kv:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                  is_causal=True, scale=scale, enable_gqa=enable_gqa)
        return F.scaled_dot_product_attention(query, key, value, attn_mask=self._materialize(query.device),
                                              dropout_p=dropout_p, is_causal=False, scale=scale,
                                              enable_gqa=enable_gqa)

    def __repr__(self):
        return repr(self._materialize())


def causal_upper_left(*size) -> CausalBias:
    """Mirrors ``torch.nn.attention.bias.causal_upper_left(seq_len_q, seq_len_kv)``.
    AssertionError (torch's) unless two sizes are given."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors: pass (seq_len_q, seq_len_kv)")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size) -> CausalBias:
    """Mirrors ``torch.nn.attention.bias.causal_lower_right(seq_len_q, seq_len_kv)``.
    AssertionError (torch's) unless two sizes are given."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors: pass (seq_len_q, seq_len_kv)")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
