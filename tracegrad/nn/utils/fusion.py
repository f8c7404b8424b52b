"""Conv/Linear + BatchNorm folding for inference: mirrors ``torch.nn.utils.fusion``.

An eval-mode BatchNorm after a conv or linear layer is an affine map per output channel,
so it folds into that layer's weight and bias: ``w' = w * gamma / sqrt(var + eps)`` and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``.
"""
from __future__ import annotations

import copy

import tracegrad

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _check_eval(layer, bn):
    # torch asserts these; raised explicitly so ``python -O`` keeps them
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval! Call .eval() on both modules first")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fusion needs a BatchNorm with running statistics (track_running_stats=True)")


def _bn_scale(bn_rm, bn_rv, bn_eps, bn_w):
    """``gamma / sqrt(var + eps)`` per channel (gamma 1 when the BatchNorm is not affine)."""
    scale = tracegrad.rsqrt(bn_rv + bn_eps)
    return scale if bn_w is None else bn_w * scale


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """Mirrors ``torch.nn.utils.fusion.fuse_conv_bn_eval``: a deep copy of ``conv`` whose weight and
    bias include the eval-mode ``bn`` that follows it (``transpose=True`` for ConvTranspose).
    AssertionError when either module is in training mode or ``bn`` keeps no running stats."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """Mirrors ``torch.nn.utils.fusion.fuse_conv_bn_weights``: ``(weight, bias)`` Parameters of the
    fused conv, in the conv's weight and bias dtypes. ``conv_w`` ``(out, in/groups, *k)`` (``(in,
    out/groups, *k)`` with ``transpose``); ``conv_b``, ``bn_w``, ``bn_b`` may be None."""
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    conv_b = tracegrad.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_b = tracegrad.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = _bn_scale(bn_rm, bn_rv, bn_eps, bn_w)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    w = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
    b = ((conv_b - bn_rm) * scale + bn_b).to(bias_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """Mirrors ``torch.nn.utils.fusion.fuse_linear_bn_eval``: a deep copy of ``linear`` with the
    eval-mode ``bn`` folded in. AssertionError in training mode, without running stats, or when
    ``bn.num_features`` is neither ``linear.out_features`` nor 1."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """Mirrors ``torch.nn.utils.fusion.fuse_linear_bn_weights``: ``(weight, bias)`` Parameters of the
    fused linear layer, ``linear_w`` ``(out, in)``; ``linear_b`` may be None."""
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    linear_b = tracegrad.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = _bn_scale(bn_rm, bn_rv, bn_eps, bn_w)
    w = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
    b = ((linear_b - bn_rm) * scale + bn_b).to(bias_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
