"""scaled_dot_product_attention on half/bfloat16 inputs as torch's fused CPU kernel computes it
(values and gradients), for ``nn.functional.scaled_dot_product_attention``.

NOTE [sdpa: torch's fused CPU kernel on half/bfloat16]: for 4-D half/bfloat16 inputs without
dropout torch runs its flash-attention CPU kernel, which does not round like the math path
(float32 throughout, the result rounded once). It computes ``scale * q @ k^T + mask`` in
float32, then per block of 512 keys the running row max ``m`` and ``p = exp(s - m)``: the row
sum takes ``p`` in float32, but ``p`` is rounded to the input dtype before ``p @ v`` (float32
accumulation; earlier blocks' sums rescaled by ``exp(m_old - m)``); the output is ``acc * (1 /
sum)`` rounded once. Its backward recomputes ``attn = exp(s - logsumexp)`` in float32 per
block of queries (32 rows below 192 queries, 64 below 768, 256 after) and keys (512): ``grad_v
+= round(attn)^T @ grad_out``, ``grad_s = attn * (grad_out @ v^T - rowsum(grad_out * out))``,
``grad_q += scale * round(grad_s) @ k``, ``grad_k += scale * round(grad_s)^T @ q``, each
``+=`` rounding into the input dtype. Rounding where torch rounds makes a bfloat16 GPT's losses
and generated tokens torch's (they differed in the last bits, and argmax sampling then
diverged). The node is torch's ``ScaledDotProductFlashAttentionForCpuBackward0``.
Still differs: the kernel's forward takes ``exp`` of full vectors of keys (16 floats with
AVX-512, 8 with AVX2) by a fast approximation (``exp_u20``) and only the remainder by
``std::exp``; tracegrad's ``exp`` is exact, so rows of that many keys or more can differ in
their last bit. torch's float16 kernel may take its packed (oneDNN) path, and GQA sums its
grouped heads' gradients its own way: both left as they come out here.
"""
from __future__ import annotations

import tracegrad

_KV_SPLIT = 512


def _q_split(length):
    """torch's query block for the kernel's backward at ``length`` queries."""
    return 256 if length >= 768 else 64 if length >= 192 else 32


def _causal_keep(rows, cols, row0, col0):
    """Which of keys ``col0..col0+cols`` queries ``row0..row0+rows`` see (top-left causal)."""
    r = tracegrad.arange(row0, row0 + rows).unsqueeze(-1)
    c = tracegrad.arange(col0, col0 + cols).unsqueeze(0)
    return c <= r


def _scores(q, k, mask, scale, causal, row0, col0):
    """``scale * q @ k^T + mask`` in float32 for one block, causal positions at -inf."""
    s = q.matmul(k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask[..., row0:row0 + q.shape[-2], col0:col0 + k.shape[-2]]
    if causal:
        s = s.masked_fill(~_causal_keep(q.shape[-2], k.shape[-2], row0, col0), float("-inf"))
    return s


class FlashAttentionCpu(tracegrad.autograd.Function):
    """torch's fused CPU attention kernel on half/bfloat16 ``(B, H, L, E)`` inputs (NOTE [sdpa:
    torch's fused CPU kernel on half/bfloat16]); ``mask`` a float32 additive mask broadcast to
    ``(B, H, L, S)`` or None."""

    @staticmethod
    def forward(ctx, query, key, value, mask, causal, scale):
        dtype = query.dtype
        q, k, v = query.float(), key.float(), value.float()
        S = k.shape[-2]
        inf = float("-inf")
        row_max = tracegrad.full(q.shape[:-1] + (1,), inf)
        row_sum = tracegrad.zeros(q.shape[:-1] + (1,))
        acc = tracegrad.zeros(q.shape[:-1] + (v.shape[-1],))
        for n in range(0, S, _KV_SPLIT):
            s = _scores(q, k[..., n:n + _KV_SPLIT, :], mask, scale, causal, 0, n)
            new_max = tracegrad.maximum(row_max, s.amax(-1, keepdim=True))
            dead = new_max == inf               # every key so far masked: nothing to add
            p = (s - tracegrad.where(dead, tracegrad.zeros_like(new_max), new_max)).exp()
            rescale = tracegrad.where(dead, tracegrad.ones_like(new_max), (row_max - new_max).exp())
            row_sum = p.sum(-1, keepdim=True) + rescale * row_sum
            acc = acc * rescale + p.to(dtype).float().matmul(v[..., n:n + _KV_SPLIT, :])
            row_max = new_max
        row_max = tracegrad.where(row_max == inf, tracegrad.zeros_like(row_max), row_max)
        row_sum = tracegrad.where(row_sum == 0, tracegrad.ones_like(row_sum), row_sum)
        out = (acc * (1 / row_sum)).to(dtype)
        ctx.save_for_backward(query, key, value, out, row_max + row_sum.log())
        ctx.mask, ctx.causal, ctx.scale = mask, causal, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        query, key, value, out, lse = ctx.saved_tensors
        mask, causal, scale, dtype = ctx.mask, ctx.causal, ctx.scale, query.dtype
        q, k, v, go = query.float(), key.float(), value.float(), grad_out.to(dtype).float()
        L, S = q.shape[-2], k.shape[-2]
        dsum = (go * out.float()).sum(-1, keepdim=True)
        grad_q, grad_k, grad_v = (tracegrad.zeros_like(t, dtype=dtype) for t in (q, k, v))
        split = _q_split(L)
        for m in range(0, L, split):
            rows = slice(m, m + split)
            q_m, go_m = q[..., rows, :], go[..., rows, :]
            keys = min(m + q_m.shape[-2], S) if causal else S
            for n in range(0, keys, _KV_SPLIT):
                cols = slice(n, n + _KV_SPLIT)
                s = _scores(q_m, k[..., cols, :], mask, scale, causal, m, n)
                attn = (s - lse[..., rows, :]).exp()
                ga = attn * (go_m.matmul(v[..., cols, :].transpose(-2, -1)) - dsum[..., rows, :])
                ga = ga.to(dtype).float()
                grad_v[..., cols, :] = (grad_v[..., cols, :].float()
                                        + attn.to(dtype).float().transpose(-2, -1).matmul(go_m)).to(dtype)
                grad_q[..., rows, :] = (grad_q[..., rows, :].float() + scale * ga.matmul(k[..., cols, :])).to(dtype)
                grad_k[..., cols, :] = (grad_k[..., cols, :].float()
                                        + scale * ga.transpose(-2, -1).matmul(q_m)).to(dtype)
        return grad_q, grad_k, grad_v, None, None, None


FlashAttentionCpu._backward_cls.__name__ = "ScaledDotProductFlashAttentionForCpuBackward0"


def flash_attention_cpu(query, key, value, attn_mask, is_causal, scale):
    """``softmax(q @ k^T * scale + mask) @ v`` on half/bfloat16 ``(B, H, L, E)`` query, key and
    value of equal batch and head sizes (L and S > 0), rounded as torch's fused CPU kernel
    rounds (NOTE [sdpa: torch's fused CPU kernel on half/bfloat16]); ``attn_mask`` bool (True:
    attend), float, or None."""
    mask = None
    if attn_mask is not None:
        if attn_mask.dtype is tracegrad.bool:
            mask = tracegrad.zeros(attn_mask.shape).masked_fill(~attn_mask, float("-inf"))
        else:
            mask = attn_mask.detach().float()
        mask = mask.expand(query.shape[:-1] + (key.shape[-2],))
    return FlashAttentionCpu.apply(query, key, value, mask, is_causal, scale)
