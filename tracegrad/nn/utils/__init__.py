"""``tracegrad.nn.utils``: mirrors ``torch.nn.utils`` (gradient clipping, parameter vectors, rnn
packing, weight/spectral norm, conv/linear + batch-norm fusion, ``skip_init``, ``prune``)."""
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import fusion, rnn, stateless  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: F401
# the submodules first, then their functions over the names (as torch: a later
# ``import torch.nn.utils.spectral_norm`` finds the module imported and leaves the function bound)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

_LAZY = ("parametrize", "parametrizations", "prune")


def __getattr__(name):
    # loaded on first use: they build on nn.modules, which itself imports nn.utils (rnn packing)
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
