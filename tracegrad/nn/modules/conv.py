"""Convolutions: mirror ``torch.nn.Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d``."""
from __future__ import annotations

from .. import functional as F
from .linear import reset_kaiming, weight_and_bias
from .module import Module
from .utils import _pair, _single, _triple
from . import _elsewhere


def _ntuple(v, n):
    # torch's _single/_pair/_triple: any iterable as it is (a 0-d tensor's iteration is its
    # TypeError), anything else repeated
    return (_single, _pair, _triple)[n - 1](v)


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], "
                             f"but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.transposed = _ntuple(dilation, n), transposed
        self.output_padding, self.groups, self.padding_mode = _ntuple(output_padding, n), groups, padding_mode
        # torch's name for the F.pad argument of a non-zero padding_mode (last dim first, left then
        # right; 'same' puts a dim's odd element on the right): subclasses overriding
        # _conv_forward read it, as torch's own modules do
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * n
            if padding == "same":
                for i, (d, k) in enumerate(zip(self.dilation, self.kernel_size)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * (n - 1 - i)] = total // 2
                    self._reversed_padding_repeated_twice[2 * (n - 1 - i) + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding) for _ in range(2))
        if transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        weight_and_bias(self, shape, out_channels, bias, dtype)

    def reset_parameters(self):
        reset_kaiming(self.weight, self.bias)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        n = self._n
        if self.padding != (0,) * n:
            s += ", padding={padding}"
        if self.dilation != (1,) * n:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * n:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return self._fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                            self.stride, 0, self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """Mirrors ``torch.nn.Conv1d``: input ``(N, C_in, L)``; weight ``(C_out, C_in/groups, k)``."""
    _n = 1
    _fn = staticmethod(F.conv1d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """Mirrors ``torch.nn.Conv2d``: input ``(N, C_in, H, W)``; weight ``(C_out, C_in/groups, kH, kW)``;
    padding ints or 'same'/'valid'; torch's default init. grad_fn ``ConvolutionBackward0``."""
    _n = 2
    _fn = staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """Mirrors ``torch.nn.Conv3d``."""
    _n = 3
    _fn = staticmethod(F.conv3d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            # torch's transposed convolutions take no padding strings: _single/_pair/_triple split
            # one into its characters, which only the forward's parser refuses (TypeError)
            padding = tuple(padding)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        # as torch: the spatial sizes alone, or with the batch/channel sizes in front
        lead = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {lead + n} "
                             f"elements (got {len(output_size)})")
        mins = [(input.shape[input.ndim - n + d] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        maxs = [m + max(self.stride[d], self.dilation[d]) - 1 for d, m in enumerate(mins)]
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, mins, maxs)):
            raise ValueError(f"requested an output size of {tuple(output_size)}, but valid sizes range from {mins} to "
                             f"{maxs} (for an input of {input.shape[-n:]})")   # torch's "torch.Size([4])"
        return tuple(size - lo for size, lo in zip(output_size, mins))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return self._fnT(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Mirrors ``torch.nn.ConvTranspose1d``: weight ``(C_in, C_out/groups, k)``."""
    _n = 1
    _fnT = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Mirrors ``torch.nn.ConvTranspose2d``: weight ``(C_in, C_out/groups, kH, kW)``; ``output_size``
    in forward picks the output padding."""
    _n = 2
    _fnT = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Mirrors ``torch.nn.ConvTranspose3d``: weight ``(C_in, C_out/groups, kD, kH, kW)``."""
    _n = 3
    _fnT = staticmethod(F.conv_transpose3d)


__getattr__ = _elsewhere.module_getattr(__name__)   # torch's names of this file defined elsewhere here
