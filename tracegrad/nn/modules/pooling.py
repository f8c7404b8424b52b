"""Pooling layers: mirror ``torch.nn.MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``,
``AdaptiveMaxPool1d/2d``."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from . import _elsewhere


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}").format(**self.__dict__)


class MaxPool1d(_MaxPoolNd):
    """Mirrors ``torch.nn.MaxPool1d``."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Mirrors ``torch.nn.MaxPool2d``: input ``(N, C, H, W)`` or ``(C, H, W)``; stride defaults to
    kernel_size. grad_fn ``MaxPool2DWithIndicesBackward0``."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(Module):
    """torch's base of the average-pooling layers (``isinstance(m, nn.modules.pooling._AvgPoolNd)``)."""

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mirrors ``torch.nn.AvgPool1d``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        # torch's _single: a non-sequence (None, a float too) is kept, F.avg_pool1d checks it in forward
        one = lambda v: tuple(v) if hasattr(v, "__iter__") else (v,)   # noqa: E731
        self.kernel_size = one(kernel_size)
        self.stride = one(stride if stride is not None else kernel_size)
        self.padding = one(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mirrors ``torch.nn.AvgPool2d``. grad_fn ``AvgPool2DBackward0``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        _AvgPoolNd.__init__(self)     # not super(): AvgPool3d shares this __init__
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        if return_indices:
            self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptiveNd):
    """torch's base of the adaptive average-pooling layers."""


class _AdaptiveMaxPoolNd(_AdaptiveNd):
    """torch's base of the adaptive max-pooling layers: ``output_size``, ``return_indices``."""

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mirrors ``torch.nn.AdaptiveAvgPool1d``."""

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mirrors ``torch.nn.AdaptiveAvgPool2d``: ``output_size`` int, pair, or None entries (keep)."""

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Mirrors ``torch.nn.AdaptiveMaxPool1d``."""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Mirrors ``torch.nn.AdaptiveMaxPool2d``."""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Mirrors ``torch.nn.MaxPool3d``: input ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
    grad_fn ``MaxPool3DWithIndicesBackward0``."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(_AvgPoolNd):
    """Mirrors ``torch.nn.AvgPool3d``. grad_fn ``AvgPool3DBackward0``."""

    __init__ = AvgPool2d.__init__     # the same arguments; not an AvgPool2d, as in torch

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mirrors ``torch.nn.AdaptiveAvgPool3d``."""

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
