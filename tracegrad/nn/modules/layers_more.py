"""More layers: mirror ``torch.nn.LPPool1d/2d/3d``, ``MaxUnpool1d/2d/3d``,
``AdaptiveMaxPool3d``, ``LocalResponseNorm``, ``ChannelShuffle``, ``SyncBatchNorm`` and
``FractionalMaxPool2d/3d``
(constructor arguments and ``extra_repr`` as torch)."""
from __future__ import annotations

import tracegrad

from .. import functional as F
from .._layers_functional import cross_map_lrn2d
from .module import Module
from .normalization import _BatchNorm
from .pooling import _AdaptiveMaxPoolNd


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Mirrors ``torch.nn.LPPool1d``: ``F.lp_pool1d``."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Mirrors ``torch.nn.LPPool2d``: ``F.lp_pool2d``."""
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Mirrors ``torch.nn.LPPool3d``: ``F.lp_pool3d``."""
    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _n = 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride if stride is not None else kernel_size, n)
        self.padding = _tuple(padding, n)

    def forward(self, input, indices, output_size=None):
        fn = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[self._n]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Mirrors ``torch.nn.MaxUnpool1d``: ``forward(input, indices, output_size=None)``."""
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Mirrors ``torch.nn.MaxUnpool2d``."""
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Mirrors ``torch.nn.MaxUnpool3d``."""
    _n = 3


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Mirrors ``torch.nn.AdaptiveMaxPool3d`` (``return_indices=True`` raises
    NotImplementedError at forward)."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class LocalResponseNorm(Module):
    """Mirrors ``torch.nn.LocalResponseNorm``."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Mirrors ``torch.nn.CrossMapLRN2d(size, alpha=1e-4, beta=0.75, k=1)``: local response
    normalisation across channels of a 4-D ``(N, C, H, W)`` input with a symmetric window
    (``_layers_functional.cross_map_lrn2d``). ValueError for another number of dims."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Module):
    """Mirrors ``torch.nn.ChannelShuffle``."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class SyncBatchNorm(_BatchNorm):
    """Mirrors ``torch.nn.SyncBatchNorm`` in a single process (tracegrad has no process group to
    reduce over): batch norm over every dim but the channel dim (1). Raises ValueError for an input
    of fewer than 2 dims."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Mirrors ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``: every ``BatchNorm*d`` in
        ``module`` (or ``module`` itself) replaced by a ``SyncBatchNorm`` sharing its parameters and
        buffers, keeping its training mode."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with tracegrad.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        ks = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,)
        if n == 3 and isinstance(kernel_size, (int, tuple, list)) and not all(k > 0 for k in ks):
            # torch checks this in the 3-D module only (the 2-D one and the functionals pool empty
            # windows to -inf)
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and len(self.output_ratio) < n:
            # torch's check indexes ratios 0..n-1: IndexError
            raise IndexError(f"{name}: output_ratio takes one ratio or a tuple of {n}, got {output_ratio}")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio[:n]):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Mirrors ``torch.nn.FractionalMaxPool2d``: ``F.fractional_max_pool2d`` (random starts from
    tracegrad's generator each call unless ``_random_samples`` is given). Raises ValueError for no
    or both of output_size/output_ratio, or a ratio outside (0, 1)."""
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Mirrors ``torch.nn.FractionalMaxPool3d`` (see ``FractionalMaxPool2d``); also ValueError for a
    kernel_size that is not positive (torch's 3-D module only)."""
    _n = 3
