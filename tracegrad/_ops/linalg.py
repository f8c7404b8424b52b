"""Matrix products. Torch names its nodes by the underlying kernel (``MmBackward0`` for 2-D,
``DotBackward0`` for 1-D, ``BmmBackward0``...); the method layer picks the op by rank."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from .registry import defop

# torch's float32 matmul precision ('highest' by default; ``set_float32_matmul_precision``
# writes it). 'highest' is passed to each product explicitly: XLA:GPU otherwise computes
# float32 products in TF32, so results would differ from torch's -- and eager from compiled,
# where XLA fuses differently. Other settings defer to JAX's default_matmul_precision, which
# the setter also writes; that config is part of JAX's jit cache key, so kernels traced before
# a change are traced again and read this anew.
MATMUL_PRECISION = ["highest"]


def dot_precision():
    """The ``precision=`` for a float32 product: HIGHEST under torch's default, else None."""
    return lax.Precision.HIGHEST if MATMUL_PRECISION[0] == "highest" else None


def _mm(a, b, dtype):
    return jnp.matmul(a.astype(dtype), b.astype(dtype), precision=dot_precision())


defop("mm", _mm, args=("self", "mat2"), grad_fn="MmBackward0", saves=("mat2", "self"),
      save_if={"self": "mat2", "mat2": "self"})
defop("bmm", _mm, args=("self", "mat2"), grad_fn="BmmBackward0", saves=("mat2", "self"),
      save_if={"self": "mat2", "mat2": "self"})
defop("mv", _mm, args=("self", "vec"), grad_fn="MvBackward0", saves=("self", "vec"),
      save_if={"self": "vec", "vec": "self"})
defop("dot", _mm, args=("self", "tensor"), grad_fn="DotBackward0", saves=("self", "tensor"),
      save_if={"self": "tensor", "tensor": "self"})
defop("vdot", lambda a, b, dtype: _mm(jnp.conj(a), b, dtype), args=("self", "other"), grad_fn="VdotBackward0",
      saves=("other", "self"), save_if={"self": "other", "other": "self"})
# matmul of higher ranks: torch reshapes to bmm and returns an unsafe view
defop("matmul", _mm, args=("self", "other"), grad_fn="UnsafeViewBackward0", saves=("other", "self"),
      save_if={"self": "other", "other": "self"})
# 1-D @ 2-D: torch unsqueezes, runs mm and squeezes the result (SqueezeBackward4);
# 2-D @ batched: torch computes (b.mT @ a.mT).mT and copies it (CloneBackward0)
defop("matmul_squeeze", _mm, args=("self", "other"), grad_fn="SqueezeBackward4",
      saves=("other", "self"), save_if={"self": "other", "other": "self"})
defop("matmul_clone", _mm, args=("self", "other"), grad_fn="CloneBackward0",
      saves=("other", "self"), save_if={"self": "other", "other": "self"})


def _scaled_sum(product):
    """``beta * inp + alpha * product(m1, m2, dtype, acc)``: addmm and its kin (addmv, addr,
    addbmm, baddbmm), which torch records as one node of their own (``AddmvBackward0``...)."""
    def f(inp, m1, m2, beta, alpha, dtype):
        # torch computes half/bfloat16 addmm in float32 and rounds once at the end (autocast's
        # linear layers depend on it); rounding the product first differs by one bf16 ulp
        acc = jnp.float32 if jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16) else dtype
        prod = product(m1.astype(dtype), m2.astype(dtype), acc)
        return _add_scaled(jnp.asarray(inp, dtype).astype(acc), prod, beta, alpha, acc, dtype)
    return f


def _add_scaled(inp, prod, beta, alpha, acc, dtype):
    # alpha/beta arrive as traced scalars (dynamic constants): no Python branching on them;
    # beta == 0 ignores inp (nan/inf in it do not propagate), as torch
    prod = jnp.asarray(alpha, acc) * prod
    out = prod + jnp.where(jnp.asarray(beta) == 0, jnp.zeros_like(inp), jnp.asarray(beta, acc) * inp)
    return out.astype(dtype)


def _matmul_acc(a, b, acc):
    return jnp.matmul(a, b, preferred_element_type=acc, precision=dot_precision())


def _outer_acc(a, b, acc):
    return a.astype(acc)[:, None] * b.astype(acc)[None, :]


def _bmm_sum_acc(a, b, acc):
    return jnp.sum(_matmul_acc(a, b, acc), axis=0)


_addmm = _scaled_sum(_matmul_acc)
defop("addmm", _addmm, args=("self", "mat1", "mat2", "beta", "alpha"), grad_fn="AddmmBackward0",
      saves=("mat1", "mat2"), save_if={"mat1": "mat2", "mat2": "mat1"})
# torch records these as nodes of their own, each saving the two factors (each one only when
# the other's gradient is wanted) and alpha/beta as constants
defop("addmv", _addmm, args=("self", "mat", "vec", "beta", "alpha"), grad_fn="AddmvBackward0",
      saves=("mat", "vec"), save_if={"mat": "vec", "vec": "mat"})
def _addr(inp, v1, v2, beta, alpha, dtype):
    """torch's CPU addr kernel is elementwise, ``beta * self + (alpha * vec1) * vec2`` in the
    tensors' own dtype: each step rounds in half/bfloat16 (no float32 accumulation as addmm's;
    rounding once at the end differed from torch by an ulp in 1% of float16 entries)."""
    if jnp.dtype(dtype) not in (jnp.bfloat16, jnp.float16):
        return _scaled_sum(_outer_acc)(inp, v1, v2, beta, alpha, dtype)
    # XLA's CPU backend runs a chain of 16-bit ops in float32 without the rounding in between
    # (excess precision): the chain is written in float32 with each step rounded explicitly
    fi = jnp.finfo(dtype)
    r = functools.partial(jax.lax.reduce_precision, exponent_bits=fi.nexp, mantissa_bits=fi.nmant)
    f32 = jnp.float32
    inp, v1, v2 = (jnp.asarray(t, dtype).astype(f32) for t in (inp, v1, v2))
    beta32, alpha32 = r(jnp.asarray(beta, f32)), r(jnp.asarray(alpha, f32))
    prod = r(r(alpha32 * v1)[:, None] * v2[None, :])
    out = r(prod + jnp.where(jnp.asarray(beta) == 0, jnp.zeros_like(inp), r(beta32 * inp)))
    return out.astype(dtype)


defop("addr", _addr, args=("self", "vec1", "vec2", "beta", "alpha"), grad_fn="AddrBackward0",
      saves=("vec1", "vec2"), save_if={"vec1": "vec2", "vec2": "vec1"})
defop("baddbmm", _addmm, args=("self", "batch1", "batch2", "beta", "alpha"), grad_fn="BaddbmmBackward0",
      saves=("batch1", "batch2"), save_if={"batch1": "batch2", "batch2": "batch1"})
defop("addbmm", _scaled_sum(_bmm_sum_acc), args=("self", "batch1", "batch2", "beta", "alpha"),
      grad_fn="AddbmmBackward0", saves=("batch1", "batch2"), save_if={"batch1": "batch2", "batch2": "batch1"})
defop("einsum", lambda *xs, equation: jnp.einsum(equation, *xs, precision=dot_precision()),
      args=tuple(f"t{i}" for i in range(64)), grad_fn="ViewBackward0",
      saves=tuple(f"t{i}" for i in range(64)))


def _cdist(x1, x2, p):
    """torch.cdist's direct kernel (CdistBackward0) on rows ``(*, P, M)`` x ``(*, R, M)``, with
    torch's gradients: p=0 none, p=1 ``sign(diff)``, p=inf ``sign(diff)`` to every coordinate at
    the maximum (not split), other p the norm's, 0 where a distance or coordinate difference is 0
    (the safe ``where``s keep NaN from the unselected branch of a root or power taken at 0)."""
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    sign = lax.stop_gradient(jnp.sign(diff))
    if p == 0:
        return jnp.sum(lax.stop_gradient(diff != 0).astype(x1.dtype) + 0 * diff, -1)
    size = diff * sign                     # |diff| whose gradient is sign(diff), 0 at 0
    if p == 1:
        return jnp.sum(size, -1)
    if p == float("inf"):
        top = lax.stop_gradient(jnp.max(size, -1, keepdims=True))
        return jnp.squeeze(top, -1) + jnp.sum((size - lax.stop_gradient(size)) * (lax.stop_gradient(size) == top), -1)
    zero = lax.stop_gradient(size == 0)
    powed = size * size if p == 2 else jnp.where(zero, 0.0, jnp.where(zero, 1.0, size) ** p)
    s = jnp.sum(powed, -1)
    szero = lax.stop_gradient(s == 0)
    safe = jnp.where(szero, 1.0, s)
    return jnp.where(szero, 0.0, jnp.sqrt(safe) if p == 2 else safe ** (1.0 / p)).astype(x1.dtype)


defop("cdist", _cdist, args=("x1", "x2"), grad_fn="CdistBackward0", saves=("x1", "x2", "result"))
