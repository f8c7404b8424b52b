"""Normalisation layers: mirror ``torch.nn.BatchNorm1d/2d/3d``, ``LayerNorm``, ``GroupNorm``, ``RMSNorm``."""
from __future__ import annotations

import numbers

import tracegrad

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from ... import _state
from . import _elsewhere


class _NormBase(Module):
    _version = 2    # version 2 added the num_batches_tracked buffer

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(tracegrad.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(tracegrad.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tracegrad.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", tracegrad.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tracegrad.tensor(0, dtype=tracegrad.long))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def _upgrade_state_dict(self, state_dict, prefix, local_metadata):
        # a dict from before version 2 (or without metadata) has no counter: keep the current one
        # (a meta counter has no value to keep: 0, as torch)
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            current = self.num_batches_tracked
            state_dict[key] = (current if current is not None and not current.is_meta
                               else tracegrad.tensor(0, dtype=tracegrad.long))

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__, use_bias=self.bias is not None))


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is not None:
                factor = self.momentum
            elif _state.CAPTURE[0] is not None:
                # the cumulative average's factor as a float64 program value (a Python float
                # read from the counter would run a compiled step eagerly)
                factor = 1.0 / self.num_batches_tracked.to(tracegrad.float64)
            else:
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None, self.running_var if use_stats else None,
                            self.weight, self.bias, bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Mirrors ``torch.nn.BatchNorm1d``: input ``(N, C)`` or ``(N, C, L)``; buffers running_mean,
    running_var, num_batches_tracked; ``momentum=None`` is a cumulative average.
    ValueError for other input ranks."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Mirrors ``torch.nn.BatchNorm2d``: input ``(N, C, H, W)``. grad_fn ``NativeBatchNormBackward0``."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Mirrors ``torch.nn.BatchNorm3d``."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class LayerNorm(Module):
    """Mirrors ``torch.nn.LayerNorm``: normalises the trailing ``normalized_shape`` dims; weight
    ones, bias zeros (``elementwise_affine``, ``bias``)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine_params(self, elementwise_affine, bias, self.normalized_shape, dtype)

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={use_bias}"
                .format(**self.__dict__, use_bias=self.bias is not None))


class RMSNorm(Module):
    """Mirrors ``torch.nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)``:
    ``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``F.rms_norm``; ``eps=None`` is the dtype's ``finfo.eps``); weight ones, no bias."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tracegrad.empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


def _affine_params(module, affine, bias, shape, dtype):
    """LayerNorm/GroupNorm's optional ``weight``/``bias`` (registered as None when absent),
    initialised to ones/zeros as torch does."""
    if affine:
        module.weight = Parameter(tracegrad.empty(shape, dtype=dtype))
        if bias:
            module.bias = Parameter(tracegrad.empty(shape, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)
    _reset_affine(module)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class GroupNorm(Module):
    """Mirrors ``torch.nn.GroupNorm``: ValueError if num_channels is not divisible by num_groups."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_params(self, affine, bias, num_channels, dtype)

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}"
                .format(**self.__dict__, use_bias=self.bias is not None))


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
