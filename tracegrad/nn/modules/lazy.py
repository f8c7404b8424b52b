"""Lazy modules: mirror ``torch.nn.modules.lazy.LazyModuleMixin`` and the ``Lazy*`` layers
(``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``,
``LazyInstanceNorm1d/2d/3d``). Their weights are ``UninitializedParameter``s until the first
forward, which reads the input's feature/channel size, materializes them in place (same objects,
so an optimizer built before still trains them), runs ``reset_parameters`` and turns the module
into its ``cls_to_become`` (``LazyLinear`` -> ``Linear``) as torch. A state_dict loaded into a
lazy module materializes the placeholders to the loaded shapes first."""
from __future__ import annotations

import tracegrad

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mirrors ``torch.nn.modules.lazy.LazyModuleMixin``: a forward pre-hook calls
    ``initialize_parameters(*args, **kwargs)`` on the first call, checks nothing is left
    uninitialized (RuntimeError otherwise), removes itself and switches ``__class__`` to
    ``cls_to_become``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        for name, t in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if t is not None and is_lazy(t) and key in state_dict and not is_lazy(state_dict[key]):
                with tracegrad.no_grad():
                    t.materialize(tuple(state_dict[key].shape))

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # placeholders go in as they are (detaching one would lose what it is), as torch's
        for name, t in list(self._parameters.items()) + [
                (k, b) for k, b in self._buffers.items() if k not in self._non_persistent_buffers_set]:
            if t is not None:
                destination[prefix + name] = t if (keep_vars or is_lazy(t)) else t.detach()

    def has_uninitialized_params(self):
        """True while any own parameter or buffer is still a placeholder."""
        return any(t is not None and is_lazy(t)
                   for t in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the placeholders from the first input (each lazy class defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        kwargs = kwargs or {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """Mirrors ``torch.nn.LazyLinear``: ``Linear`` whose ``in_features`` is the last dim of the
    first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, device, dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with tracegrad.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:   # weights loaded from a state_dict: the first input names the size
            if input.shape[-1] != self.weight.shape[-1]:
                raise RuntimeError(f"LazyLinear: the input's last dim {input.shape[-1]} differs from in_features "
                                   f"{self.weight.shape[-1]} of the loaded weight")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        nd = len(self.kernel_size)
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == nd + 2 else input.shape[0]

    def _lazy_placeholders(self, bias, dtype):
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)


def _lazy_conv(name, base):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                                 device, dtype)
        self.out_channels = out_channels
        self._lazy_placeholders(bias, dtype)
    doc = (f"Mirrors ``torch.nn.{name}``: ``{base.__name__}`` whose ``in_channels`` is the channel dim of "
           "the first input (``initialize_parameters``).")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                 "__module__": __name__})


def _lazy_conv_transpose(name, base):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                                 padding_mode, device, dtype)
        self.out_channels = out_channels
        self._lazy_placeholders(bias, dtype)
    doc = (f"Mirrors ``torch.nn.{name}``: ``{base.__name__}`` whose ``in_channels`` is the channel dim of "
           "the first input.")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                 "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = tracegrad.tensor(0, dtype=tracegrad.long)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name, base, affine, track):
    def __init__(self, eps=1e-5, momentum=0.1, affine=affine, track_running_stats=track, device=None, dtype=None,
                 *, bias=True):
        _LazyNormBase.__init__(self, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
    doc = (f"Mirrors ``torch.nn.{name}``: ``{base.__name__}`` whose ``num_features`` is ``input.shape[1]`` "
           "of the first input.")
    # torch's lazy norms derive from the family's base (``_BatchNorm``), not from the layer they
    # become (``isinstance(LazyBatchNorm1d(), nn.BatchNorm1d)`` is False until materialized):
    # the layer's own checks (``_check_input_dim``, ``_nd``) are copied in instead
    own = {k: v for k, v in vars(base).items() if k not in ("__init__", "__doc__", "__module__", "__qualname__",
                                                               "__dict__", "__weakref__")}
    return type(name, (_LazyNormBase, base.__bases__[0]), {**own, "__init__": __init__, "cls_to_become": base,
                                                           "__doc__": doc, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True, True)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True, True)   # torch: True, True too
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True, True)   # torch: True, True too
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True, True)   # torch: True, True too
