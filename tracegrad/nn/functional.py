"""``tracegrad.nn.functional``: mirrors ``torch.nn.functional``.

Written against tracegrad's public API: Tensor methods, ``tracegrad.*`` functions and the
``tracegrad._api.nn_functions`` layer (torch's ``torch._C._nn``). grad_fn names follow torch
(``AddmmBackward0`` for ``linear`` on 2-D input with bias, ``ConvolutionBackward0``,
``NllLossBackward0`` after ``LogSoftmaxBackward0`` for ``cross_entropy``...).
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers

import tracegrad
from tracegrad import _autocast, _state
from tracegrad._tensor.out import accepts_out
from tracegrad._ops.random import scalar_name
from tracegrad._ops.warn import warn as _warn
from tracegrad._ops.errors import broadcast_shape as _broadcast_shape
from tracegrad._api.out_functions import add_out as _add_out
from tracegrad._api import nn_functions as _F
from tracegrad._api.argcheck import _is_int, require_bool as _require_bool, require_float, require_int
from tracegrad._api.promotion import _SCALAR_NAME, check_past_f32, check_real_scalars, check_same_dtype, check_tensors
from tracegrad._api.argcheck import floating_input as _floating_input, guard_all as _guard_all, strict_error as _strict_error

from . import _activations_more as _act
from . import _reduction
from . import _layers_functional as _layers
from . import _losses_more as _losses
from . import _more_functional as _more
from . import _vision_functional as _vision
from ._flash_attention_cpu import flash_attention_cpu
from ._vision_functional import (adaptive_avg_pool3d, affine_grid, avg_pool3d, conv_transpose3d,  # noqa: F401
                                 embedding_bag, fold, grid_sample, instance_norm, interpolate, max_pool3d,
                                 pairwise_distance, pixel_shuffle, pixel_unshuffle, unfold, upsample,
                                 upsample_bilinear, upsample_nearest)

from ._activations_more import (celu_, elu_, hardshrink, hardtanh_, leaky_relu_, rrelu, rrelu_, selu_,  # noqa: F401
                                softshrink, tanhshrink, threshold, threshold_)
from ._layers_functional import (adaptive_max_pool3d, channel_shuffle, local_response_norm,  # noqa: F401
                                 fractional_max_pool2d, fractional_max_pool3d, lp_pool1d, lp_pool2d, lp_pool3d,
                                 max_unpool1d, max_unpool2d, max_unpool3d, pdist)
from ._losses_more import (cosine_embedding_loss, ctc_loss, gaussian_nll_loss, hinge_embedding_loss,  # noqa: F401
                           margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
                           multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss,
                           triplet_margin_with_distance_loss)
from ._linear_cross_entropy import linear_cross_entropy  # noqa: F401,E402
from ._more_functional import (alpha_dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,  # noqa: F401,E402
                               glu, gumbel_softmax, hardsigmoid, hardswish, prelu, rms_norm, triplet_margin_loss,
                               conv_tbc)

_nn = _F._nn

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "batch_norm", "layer_norm", "group_norm", "dropout",
    "embedding", "relu", "relu_", "relu6", "leaky_relu", "gelu", "silu", "mish", "elu", "selu", "celu",
    "softplus", "hardtanh", "sigmoid", "tanh", "logsigmoid", "softsign", "softmax", "log_softmax", "softmin",
    "one_hot", "pad", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "kl_div", "normalize",
    "cosine_similarity", "scaled_dot_product_attention", "flatten", "multi_head_attention_forward",
] + _vision.__all__ + _more.__all__ + _act.__all__ + _losses.__all__ + _layers.__all__


# ---- linear / conv --------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """Affine map ``input @ weight.T + bias``. Mirrors ``torch.nn.functional.linear``.

    Args: input ``(*, in_features)``; weight ``(out_features, in_features)``; bias ``(out_features,)`` or None.
    Returns: ``(*, out_features)``. Autograd: ``AddmmBackward0`` (2-D input with bias),
    ``MmBackward0`` (2-D, no bias), ``ViewBackward0`` (other ranks, 1-D bias: addmm on the
    flattened input), ``AddBackward0`` (other ranks, a bias that is not 1-D, or a non-contiguous
    input with a bias of another dtype: matmul, then the bias added in place, as torch's unfused
    path, so it may broadcast or be of a dtype that casts into the result),
    ``UnsafeViewBackward0``/``SqueezeBackward4`` without bias.
    Raises: RuntimeError if in_features differ or an operand is 0-d; TypeError for a non-Tensor.
    """
    try:
        zero_d = input.ndim == 0 or weight.ndim == 0
    except AttributeError:
        check_tensors("linear", input, weight, names=("input", "weight"))
        raise
    if bias is not None and not isinstance(bias, tracegrad.Tensor):   # torch's parser: a Tensor or None (addmm would
        raise _strict_error("linear", "bias", "Tensor", bias, 3)   # take a number as a broadcast bias)
    if zero_d:
        raise RuntimeError(f"linear: both arguments to linear need to be at least 1D, but they are {input.ndim}D "
                           f"and {weight.ndim}D")
    input, weight, bias = _autocast.cast("lower", "linear", input, weight, bias)
    if bias is None:
        return input.matmul(weight.t())
    if input.ndim == 2:
        return tracegrad.addmm(bias, input, weight.t())
    # torch (aten linear) fuses only a "likely fusable" bias -- 1-D after squeeze and contiguous -- with a
    # contiguous input: addmm on the flattened input, then a view back (ViewBackward0). Otherwise it runs
    # matmul and then an in-place ``add_`` of the bias, so a bias of any broadcastable shape, or of another
    # dtype that casts into the result (a half bias on a transposed double input, as MultiheadAttention's
    # batch_first path gives), is accepted there (AddBackward0). Known difference: a non-contiguous input
    # with a fusable bias of its own dtype still takes addmm here (ViewBackward0 where torch has
    # AddBackward0): switching it moved a bfloat16 autocast transformer's first logits by one ulp from
    # torch's (a public program's test, since removed), for a cause not yet found.
    fusable = (bias.ndim == 1 or bias.squeeze().ndim == 1) and bias.is_contiguous()
    if fusable and (input.is_contiguous() or bias.dtype == input.dtype):
        # (-1 cannot be inferred beside a 0 feature size: Linear(0, n), as in Transformer(dim_feedforward=0))
        rows = -1 if input.shape[-1] else math.prod(input.shape[:-1])
        out = tracegrad.addmm(bias, input.reshape(rows, input.shape[-1]), weight.t())
        return out.view(*input.shape[:-1], weight.shape[0])
    return input.matmul(weight.t()).add_(bias)


def bilinear(input1, input2, weight, bias=None):
    """Mirrors ``torch.nn.functional.bilinear``: ``y_k = x1 @ W_k @ x2 + b_k``; weight
    ``(out, in1, in2)``, inputs ``(*, in1)``, ``(*, in2)``. RuntimeError, as torch's, for inputs
    of different ranks or batch sizes, feature sizes (or a bias) that do not match the weight, or
    a feature size of 0; IndexError for 0-d inputs."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    if input1.dim() == 0:   # torch reads the feature size off dim -1 first
        raise IndexError("bilinear(): Dimension specified as -1 but the inputs have no dimensions; give inputs of "
                         "shape (*, in1_features) and (*, in2_features)")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {input1.shape[d]} "
                               f"and {input2.shape[d]}")
    if weight.dim() < 3:
        d = max(weight.dim(), 1)
        raise IndexError(f"bilinear(): Dimension out of range (expected to be in range of [{-d}, {d - 1}], but got 2); "
                         "weight must be (out_features, in1_features, in2_features)")
    if weight.dim() == 3:
        for i, x in ((1, input1), (2, input2)):
            if x.dim() and x.shape[-1] != weight.shape[i]:
                raise RuntimeError(f"bilinear(): input{i} size does not match weight size: got {x.shape[-1]} but "
                                   f"expected {weight.shape[i]}")
        if not (input1.shape[-1] and input2.shape[-1]):
            # torch flattens the batch with reshape(-1, in_features), ambiguous for 0 features
            raise RuntimeError(f"bilinear(): in1_features and in2_features must be positive, got {input1.shape[-1]} "
                               f"and {input2.shape[-1]}")
        if bias is not None and (bias.dim() == 0 or bias.shape[-1] != weight.shape[0]):
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                               f"{bias.shape[-1] if bias.dim() else 1} but expected {weight.shape[0]}")
    out = tracegrad.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


conv1d, conv2d, conv3d = _F.conv1d, _F.conv2d, _F.conv3d
conv_transpose1d, conv_transpose2d = _F.conv_transpose1d, _F.conv_transpose2d


# ---- pooling --------------------------------------------------------------------------------
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Mirrors ``torch.nn.functional.max_pool2d``: input ``(N, C, H, W)`` or ``(C, H, W)``;
    ``return_indices=True`` also gives int64 flat indices into ``H*W``.
    grad_fn ``MaxPool2DWithIndicesBackward0``. RuntimeError if padding > kernel/2."""
    if return_indices:
        return _F.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Mirrors ``torch.nn.functional.max_pool1d``; ``return_indices=True`` also gives int64 indices."""
    if return_indices:
        return _vision.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mirrors ``torch.nn.functional.avg_pool2d``. grad_fn ``AvgPool2DBackward0``."""
    return _F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mirrors ``torch.nn.functional.avg_pool1d``."""
    return _F.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    """Mirrors ``torch.nn.functional.adaptive_avg_pool2d``: windows ``[floor(i*H/o), ceil((i+1)*H/o))``."""
    return _F.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool1d(input, output_size):
    """Mirrors ``torch.nn.functional.adaptive_avg_pool1d``."""
    return _F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Mirrors ``torch.nn.functional.adaptive_max_pool2d``; with ``return_indices``,
    ``(values, indices)`` (int64 positions ``h * W + w`` in each input plane)."""
    return _F.adaptive_max_pool2d(input, output_size, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Mirrors ``torch.nn.functional.adaptive_max_pool1d``; with ``return_indices``,
    ``(values, indices)``."""
    return _F.adaptive_max_pool1d(input, output_size, return_indices)


# ---- normalisation --------------------------------------------------------------------------
def _zero_channel_affine(input, weight, bias):
    """IndexError, as torch (its kernel reads element 0 of the affine parameters), for an input of
    zero channels given an empty weight or bias (``BatchNorm1d(0)`` on an ``(N, 0)`` input)."""
    if getattr(input, "ndim", 0) >= 2 and input.shape[1] == 0:
        for name, p in (("weight", weight), ("bias", bias)):
            if p is not None and p.numel() == 0:
                raise IndexError(f"batch_norm(): index 0 is out of range for the {name} of size {list(p.shape)} "
                                 "(the input has 0 channels); build the layer with num_features >= 1")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Mirrors ``torch.nn.functional.batch_norm``: input ``(N, C, *)``; in training uses batch
    statistics and updates running stats in place (unbiased var); else uses the running stats.
    grad_fn ``NativeBatchNormBackward0``. ValueError for one value per channel in training, and
    for an ``eps`` that is not positive in training (negative in eval); TypeError for a
    ``training`` that is not a bool (torch's parser: not 1 or None)."""
    _require_bool("batch_norm", "training", training, 6)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    _zero_channel_affine(input, weight, bias)
    if training:
        _F.verify_batch_size(input)
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _F.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Mirrors ``torch.nn.functional.layer_norm``. grad_fn ``NativeLayerNormBackward0``.
    TypeError for a ``normalized_shape`` that is a single number (torch's F.layer_norm takes a
    sequence of ints; nn.LayerNorm takes an int)."""
    if isinstance(normalized_shape, (int, float, complex, str)) or normalized_shape is None:
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}; pass a tuple such as (C,)")
    input, weight, bias = _autocast.cast("fp32", "layer_norm", input, weight, bias)
    return _F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Mirrors ``torch.nn.functional.group_norm``: input ``(N, C, *)``, statistics over each of
    ``num_groups`` channel groups. grad_fn ``NativeGroupNormBackward0``. RuntimeError for fewer
    than 2 dims or C not divisible by num_groups; ValueError (in eval mode too, as torch) when each
    group holds a single value."""
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected at least 2 dimensions for input tensor but received {input.ndim}")
    if type(num_groups) is not int:   # torch's parser: an int (GroupNorm(2.0, C) fails here)
        require_int("group_norm", "num_groups", num_groups, 2)
    if num_groups > 0:
        per_group = input.shape[0] * (input.shape[1] // num_groups)
        for d in input.shape[2:]:
            per_group *= d
        if per_group == 1:
            raise ValueError(f"group_norm: expected more than 1 value per group, got input size "
                             f"{list(input.shape)} with num_groups={num_groups}")
    input, weight, bias = _autocast.cast("fp32", "group_norm", input, weight, bias)
    return _F.group_norm(input, num_groups, weight, bias, eps)


@accepts_out()
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """Mirrors ``torch.nn.functional.normalize``: ``input / max(||input||_p, eps)`` along ``dim``.
    ``p='fro'`` is the 2-norm; another string is RuntimeError (torch's norm takes it as a matrix
    norm over one dim)."""
    if isinstance(p, str):
        if p != "fro":
            raise RuntimeError(f"normalize: linalg.matrix_norm: Order {p} not supported over the single dim {dim}; "
                               f"pass a number p (2.0 by default)")
        p = 2.0
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Mirrors ``torch.nn.functional.cosine_similarity``: over ``dim`` of the broadcast inputs, in
    their common dtype. RuntimeError when that dtype is not floating or ``eps`` is negative, as torch."""
    check_tensors("cosine_similarity", x1, x2, names=("x1", "x2"))
    if dim is None:   # torch's parser: an int dim (None is not the default here)
        raise TypeError("cosine_similarity(): argument 'dim' must be int, not NoneType; pass the dim to compare "
                        "along (default 1)")
    common = tracegrad.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, yet common dtype is "
                           f"{common}; convert the inputs with .float()")
    # torch broadcasts the inputs first: shapes that do not broadcast are its RuntimeError (the
    # norms over ``dim`` of the unbroadcast inputs raised IndexError or compared wrong dims)
    eps = require_float("cosine_similarity", "eps", eps)
    if not eps >= 0:   # torch refuses a negative (or NaN) eps before broadcasting; clamp_min(-1) ran
        raise RuntimeError(f"cosine_similarity: eps must be non-negative, got: {eps:g}; pass a small positive "
                           "eps such as 1e-8")
    shape = tuple(_broadcast_shape([tuple(x1.shape), tuple(x2.shape)], "cosine_similarity"))
    x1, x2 = x1.to(common).expand(shape), x2.to(common).expand(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# ---- dropout / embedding / misc -------------------------------------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    """Mirrors ``torch.nn.functional.dropout``: in training zeroes each element with probability
    ``p`` (tracegrad's RNG stream) and scales the rest by ``1/(1-p)``; identity otherwise.
    ValueError for p outside [0, 1]. Differs from torch: the random mask differs."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if type(training) is not bool and type(training).__name__ != "bool_":   # torch's parser: a bool only
        raise TypeError(f"dropout(): argument 'train' (position 3) must be bool, not {type(training).__name__}; "
                        f"pass training=True or False")
    # torch calls dropout_ for inplace=True: a mul_ by the noise, or nothing at all (p == 0)
    return (_F.dropout_ if inplace else _F.dropout)(input, p, training)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Mirrors ``torch.nn.functional.embedding``: ``weight[input]``; the ``padding_idx`` row gets
    no gradient. grad_fn ``EmbeddingBackward0``. ``max_norm`` renormalises rows in place.
    ``sparse=True``: ``weight``'s gradient is a sparse COO tensor, one uncoalesced entry per
    looked-up index (eager mode only; NotImplementedError with ``scale_grad_by_freq``)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    # torch's Python asserts come first, then its kernel's parser: an int index, a Tensor input
    if padding_idx is not None and type(padding_idx) is not int and not _is_int(padding_idx):
        raise TypeError(f"embedding(): argument 'padding_idx' (position 3) must be int, not "
                        f"{type(padding_idx).__name__}")
    if not isinstance(input, tracegrad.Tensor):
        raise TypeError(f"embedding(): argument 'indices' (position 2) must be Tensor, not {type(input).__name__}; "
                        "pass the indices as an int64 tensor")
    for name, v in (("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
        if type(v) is not bool and type(v).__name__ != "bool_":   # torch's parser: a bool only
            raise TypeError(f"embedding(): argument '{name}' must be bool, not {type(v).__name__}")
    if max_norm is not None:
        if norm_type is None or isinstance(norm_type, str):   # torch's parser: a float
            raise TypeError(f"embedding_renorm_(): argument 'norm_type' must be float, not {type(norm_type).__name__}")
        # torch renormalises the looked-up rows of weight in place, outside autograd
        _vision.embedding_renorm_(weight, input, max_norm, norm_type)
    return _F.embedding(weight, input, -1 if padding_idx is None else padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    """Mirrors ``torch.nn.functional.one_hot``: int64 ``(*, num_classes)``; ``-1`` infers max+1.
    RuntimeError for non-int64 input, negative classes or classes >= ``num_classes`` (values
    checked in eager only; compiled code gives an all-zero row for such a class)."""
    return _F.one_hot(tensor, num_classes)


def _check_pad_ints(pad):
    """torch's parser TypeError for a ``pad`` that is not a sequence of ints (a float, None, a
    string, floats in it); one type check per entry on the common path."""
    if type(pad) in (tuple, list) and all(type(p) is int for p in pad):
        return
    seq = isinstance(pad, (tuple, list, tracegrad.Size))
    wrong = [p for p in pad if not (isinstance(p, int) or hasattr(p, "__index__") and not isinstance(p, float))] \
        if seq else [pad]
    if seq and pad and type(pad[0]) is bool:   # torch's parser tells an int list by its first element
        wrong.insert(0, pad[0])
    for pos, p in enumerate(pad if seq else ()):
        if isinstance(p, tracegrad.Tensor) and p.dtype is tracegrad.bool and p.numel() == 1:
            # pad is read as symbolic ints: a bool tensor passes the parser, its value does not
            raise RuntimeError(f"pad(): argument 'pad': a size or index must be integral, but the tensor at "
                               f"position {pos} is bool; pass ints")
    if wrong:
        bad = wrong[0]
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(bad).__name__}; "
                        "pass the paddings as ints, last dim first")


def pad(input, pad, mode="constant", value=None):
    """Mirrors ``torch.nn.functional.pad``: ``pad=(left, right, top, bottom, ...)`` from the last dim.
    Modes: constant (``ConstantPadNdBackward0``), reflect/replicate (``ReflectionPad2DBackward0``...),
    circular. Differs from torch: circular padding's node is ``IndexSelectBackward0`` (torch: ``CopySlices``).
    TypeError (torch's parser) for a ``pad`` that is not a sequence of ints or a ``mode`` not a str."""
    if not isinstance(input, tracegrad.Tensor):   # torch's parser, before the other arguments
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _check_pad_ints(pad)
    if isinstance(mode, bytes):   # torch's parser reads bytes as a str
        mode = mode.decode()
    if not isinstance(mode, str):   # torch's parser: a str, before the mode is looked at
        raise TypeError(f"pad(): argument 'mode' (position 3) must be str, not {type(mode).__name__}; pass "
                        "'constant', 'reflect', 'replicate' or 'circular'")
    if value is not None and (not isinstance(value, (numbers.Number, tracegrad.Tensor)) or isinstance(value, complex)):
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not {type(value).__name__}; "
                        "pass a number")
    if type(value) is int:   # torch's pad takes ``value`` as a float: 2**70 pads a float tensor, -1 no uint8 one
        value = float(value)
    if mode == "constant":
        return _F.constant_pad_nd(input, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _vision.check_mode_pad(input, pad, mode)
    if mode == "reflect":   # (torch checks the pads against the uncropped input, before any crop)
        for i in range(len(pad) // 2):
            n = input.shape[input.ndim - 1 - i]
            if pad[2 * i] >= n or pad[2 * i + 1] >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({pad[2 * i]}, {pad[2 * i + 1]}) at dimension "
                                   f"{input.ndim - 1 - i} of input {list(input.shape)}")
    # circular: an empty output is never refused for overlapping copies (nothing is copied)
    no_overlap_check = any(input.shape[input.ndim - 1 - i] + pad[2 * i] + pad[2 * i + 1] == 0
                           for i in range(len(pad) // 2))
    if mode in ("reflect", "replicate") and min(pad) < 0:
        dims = [(input.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
        kept = [input.shape[d] + min(lo, 0) + min(hi, 0) for d, lo, hi in dims]
        if mode == "reflect" and (min(kept) < 1 or any(m <= max(lo, hi) for m, (d, lo, hi) in zip(kept, dims))):
            # a crop that empties a dim, or a reflection that reaches past the crop: torch's index
            # map reflects about the ends of the uncropped input
            for d, lo, hi in dims:
                n = input.shape[d]
                idx = [abs(j - lo) if j - lo < n else 2 * (n - 1) - (j - lo) for j in range(n + lo + hi)]
                input = input.index_select(d, tracegrad.tensor(idx, dtype=tracegrad.int64))
            return input
        if all(m >= 1 for m in kept):
            # torch's index map reads the input as cropped by the negative pads: crop, then pad
            for d, lo, hi in dims:
                input = input.narrow(d, max(-lo, 0), input.shape[d] + min(lo, 0) + min(hi, 0))
            return _pad_mode_or_noop(input, tuple(max(p, 0) for p in pad), mode)
        if mode == "replicate":
            # a crop that empties a dim: torch still clamps into the uncropped input
            for d, lo, hi in dims:
                n = input.shape[d]
                idx = [min(max(j - lo, 0), n - 1) for j in range(n + lo + hi)]
                input = input.index_select(d, tracegrad.tensor(idx, dtype=tracegrad.int64))
            return input
    if mode in ("reflect", "replicate") and 1 <= len(pad) // 2 <= 3 and len(pad) % 2 == 0:
        return _F._mode_pad(input, pad, mode)
    out = input
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = out.shape[d]
        if mode == "reflect":
            idx = list(range(lo, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - hi, -1))
        elif mode == "replicate":
            idx = [0] * lo + list(range(n)) + [n - 1] * hi
        elif mode == "circular":
            # as torch, a negative pad crops first and the wrap reads the cropped part
            start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
            if m <= 0:   # nothing left to wrap: torch fills from uninitialized memory; zeros here
                out = out.narrow(d, 0, 0)
                out = tracegrad.cat([out, out.new_zeros(out.shape[:d] + (n + lo + hi,) + out.shape[d + 1:])], d)
                continue
            if max(lo, hi) > m and not no_overlap_check:
                # torch wraps by copying the output into itself; regions that partly overlap are refused
                raise RuntimeError("pad: circular padding of ({}, {}) at dimension {} wraps a cropped size of {}: "
                                   "unsupported operation: some elements of the input tensor and the written-to "
                                   "tensor refer to a single memory location".format(lo, hi, d, m))
            idx = [start + (j - max(lo, 0)) % m for j in range(n + lo + hi)]
        else:
            raise NotImplementedError(f"padding mode {mode!r} is not supported")
        out = out.index_select(d, tracegrad.tensor(idx, dtype=tracegrad.int64))   # (idx may be empty)
    return out


def _pad_mode_or_noop(input, widths, mode):
    """``pad(input, widths, mode)``, or ``input`` itself when every width is 0 (``pad`` is shadowed
    by its own argument inside ``pad``)."""
    return input if not any(widths) else pad(input, widths, mode)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


# ---- activations ----------------------------------------------------------------------------
_write_activation = _act._write   # one helper for every inplace=True activation


def relu(input, inplace=False):
    """Mirrors ``torch.nn.functional.relu``: grad_fn ``ReluBackward0``. TypeError for a non-Tensor."""
    try:
        return input.relu_() if inplace else input.relu()
    except AttributeError:
        check_tensors("relu", input)
        raise


def relu_(input):
    """Mirrors ``torch.nn.functional.relu_``. TypeError for a non-Tensor."""
    try:
        return input.relu_()
    except AttributeError:
        check_tensors("relu_", input)
        raise


def relu6(input, inplace=False):
    """Mirrors ``torch.nn.functional.relu6`` (``hardtanh(0, 6)``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Mirrors ``torch.nn.functional.hardtanh``: grad_fn ``HardtanhBackward0``. ValueError when
    ``min_val > max_val``; RuntimeError for bool input, or uint8 input with a negative limit."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # torch's Scalar limits: a number, or a 0-d tensor (without grad) that stands for its number
    min_val = require_float("hardtanh", "min_val", min_val, 2, kind="Number")
    max_val = require_float("hardtanh", "max_val", max_val, 3, kind="Number")
    if isinstance(min_val, tracegrad.Tensor):
        min_val = min_val.item()
    if isinstance(max_val, tracegrad.Tensor):
        max_val = max_val.item()
    if isinstance(input, tracegrad.Tensor):   # torch's checked conversion of the limits
        check_past_f32("hardtanh", input.dtype, min_val, max_val, real_kernel=True, own_range=True)
    else:   # a number would be clamped as one: torch's parser refuses it
        check_tensors("hardtanh", input)
    if getattr(input, "dtype", None) is tracegrad.bool:   # JAX would clamp it; torch's kernel refuses
        raise RuntimeError("Bool inputs not supported for hardtanh; convert the tensor with .float() or .int()")
    if getattr(input, "is_complex", lambda: False)():   # torch's hardtanh is a clamp
        raise NotImplementedError("hardtanh: clamp is not supported for complex types")
    if getattr(input, "dtype", None) is tracegrad.uint8 and min(min_val, max_val) < 0:
        raise RuntimeError(f"cannot do hardtanh on an unsigned type with negative limits (min_val={min_val}, "
                           f"max_val={max_val}); pass limits of 0 or more, or a signed input")
    if inplace:
        return _write_activation(input, lambda x: _F.hardtanh(x, min_val, max_val))
    return _F.hardtanh(input, min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Mirrors ``torch.nn.functional.leaky_relu``: grad_fn ``LeakyReluBackward0``. RuntimeError for
    a complex slope (torch's checked Scalar conversion)."""
    if isinstance(input, tracegrad.Tensor) and not input.dtype.is_complex:   # (complex: the kernel refuses it)
        check_real_scalars("leaky_relu", input.dtype, negative_slope=negative_slope)
    if inplace:
        return _act.leaky_relu_(input, negative_slope)
    return _nn.leaky_relu(input, negative_slope)


def gelu(input, *, approximate="none"):
    """Mirrors ``torch.nn.functional.gelu``: exact (erf) or ``approximate='tanh'``.
    grad_fn ``GeluBackward0``. RuntimeError for another ``approximate``."""
    if not isinstance(approximate, str):   # torch's parser: a str
        raise TypeError(f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__}; pass "
                        f"'none' or 'tanh'")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return _nn.gelu(input, approximate)


def silu(input, inplace=False):
    """Mirrors ``torch.nn.functional.silu``: ``x * sigmoid(x)``, grad_fn ``SiluBackward0``."""
    return _write_activation(input, _nn.silu) if inplace else _nn.silu(input)


def mish(input, inplace=False):
    """Mirrors ``torch.nn.functional.mish``: grad_fn ``MishBackward0``."""
    return _write_activation(input, _nn.mish) if inplace else _nn.mish(input)


def elu(input, alpha=1.0, inplace=False):
    """Mirrors ``torch.nn.functional.elu``: grad_fn ``EluBackward0``. RuntimeError for a complex
    alpha (torch's checked Scalar conversion)."""
    if isinstance(input, tracegrad.Tensor) and not input.dtype.is_complex:   # (complex: the kernel refuses it)
        check_real_scalars("elu", input.dtype, alpha=alpha)
    if inplace:
        return _act.elu_(input, alpha)
    return _nn.elu(input, alpha)


def selu(input, inplace=False):
    """Mirrors ``torch.nn.functional.selu``: ``scale * elu(x, alpha)`` with torch's constants."""
    return _act.selu_(input) if inplace else _F.selu(input)


def celu(input, alpha=1.0, inplace=False):
    """Mirrors ``torch.nn.functional.celu``: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.
    RuntimeError for an ``alpha`` past float32's range on a float32 input (torch's checked conversion)."""
    if isinstance(input, tracegrad.Tensor):
        check_past_f32("celu", input.dtype, alpha, real_kernel=True)
    return _act.celu_(input, alpha) if inplace else _F.celu(input, alpha)


def softplus(input, beta=1.0, threshold=20.0):
    """Mirrors ``torch.nn.functional.softplus``: grad_fn ``SoftplusBackward0``. TypeError when
    ``beta`` or ``threshold`` is not a number; RuntimeError for one past float32's range on a
    float32 (or narrower) input."""
    for name, v in (("beta", beta), ("threshold", threshold)):
        if not isinstance(v, (numbers.Number, tracegrad.Tensor)):   # torch's Number parser (a str is refused)
            raise TypeError(f"softplus(): argument '{name}' must be Number, not {type(v).__name__}")
    if isinstance(input, tracegrad.Tensor):   # 1e39 on a float32 input: torch's checked conversion
        check_past_f32("softplus", input.dtype, beta, threshold, real_kernel=True)
    return _nn.softplus(input, beta, threshold)


def sigmoid(input):
    """Mirrors ``torch.nn.functional.sigmoid``."""
    return input.sigmoid()


def tanh(input):
    """Mirrors ``torch.nn.functional.tanh``."""
    return input.tanh()


def logsigmoid(input):
    """Mirrors ``torch.nn.functional.logsigmoid``: grad_fn ``LogSigmoidBackward0``, with
    torch's kernel rounding for float16/bfloat16 (NOTE [log_sigmoid] in _ops/nn_ops.py)."""
    return _nn.log_sigmoid(input)


def softsign(input):
    """Mirrors ``torch.nn.functional.softsign``."""
    return input / (input.abs() + 1)


def _softmax_dim(ndim, name="softmax"):
    _warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
          "as an argument.", UserWarning)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Mirrors ``torch.nn.functional.softmax``: grad_fn ``SoftmaxBackward0``."""
    input = _autocast.cast("fp32", "softmax", input)
    if dim is None:
        dim = _softmax_dim(input.ndim)
    return input.softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """Mirrors ``torch.nn.functional.softmin``."""
    if dim is None:
        dim = _softmax_dim(input.ndim, "softmin")
    return (-input).softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Mirrors ``torch.nn.functional.log_softmax``: grad_fn ``LogSoftmaxBackward0``."""
    input = _autocast.cast("fp32", "log_softmax", input)
    if dim is None:
        dim = _softmax_dim(input.ndim, "log_softmax")
    return input.log_softmax(dim, dtype=dtype)


# ---- losses ---------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction):
    return _reduction.resolve(size_average, reduce, reduction)


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_class_loss_kinds(kernel, weight, ignore_index):
    """torch's kernel parser for the class-index losses: a Tensor weight, an int ignore_index (a
    one-element integer tensor counts, a bool does not)."""
    if weight is not None and not isinstance(weight, tracegrad.Tensor):
        raise TypeError(f"{kernel}(): argument 'weight' (position 3) must be Tensor, not {type(weight).__name__}; "
                        "pass the class weights as a tensor")
    if type(ignore_index) is not int and (isinstance(ignore_index, bool) or not _is_int(ignore_index)):
        raise TypeError(f"{kernel}(): argument 'ignore_index' (position 5) must be int, not "
                        f"{type(ignore_index).__name__}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.nll_loss``: input ``(N, C, *)`` or ``(C,)`` log-probabilities,
    target int64 ``(N, *)``/``()``. grad_fn ``NllLossBackward0`` (``NllLoss2DBackward0`` for 4-D).
    ValueError for a bad reduction or a 0-d input; RuntimeError for a floating target; IndexError
    for a class index outside [0, C) (not ignore_index)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_tensors("nll_loss", input, target, names=("input", "target"))
    input, weight = _autocast.cast("fp32", "nll_loss", input, weight)
    _check_reduction(reduction)
    _check_class_loss_kinds("nll_loss_nd", weight, ignore_index)
    if input.ndim == 0:
        raise ValueError("nll_loss: Expected 1 or more dimensions (got 0); the input holds log-probabilities "
                         "of shape (C,) or (N, C, ...)")
    # torch checks the batch sizes before the target's dtype
    # (a 0-d target against a batch counts as a batch of 0, in torch's message; against an empty
    # batch torch then reads its size(0))
    if input.ndim >= 2 and target.ndim == 0 and input.shape[0] == 0:
        raise IndexError("nll_loss: Dimension specified as 0 but tensor has no dimensions (the target is 0-d; "
                         "give one class index per sample)")
    if input.ndim >= 2 and input.shape[0] != (target.shape[0] if target.ndim else 0):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    if input.ndim == 1 and target.ndim == 1:   # one sample of C classes: torch takes a 1-element target too
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        target = target.reshape(())
    _check_target_shape(input, target)
    # torch 2.13 gives a floating target the same message as any other non-Long/Byte one
    if target.dtype not in (tracegrad.int64, tracegrad.uint8):
        raise RuntimeError(f"nll_loss: expected target dtype to be Long or Byte, but got "
                           f"{scalar_name(target.dtype.np)}; convert it with target.long()")
    if weight is not None:
        check_same_dtype("nll_loss", input, weight)
    n_classes = input.shape[1] if input.ndim >= 2 else input.shape[0]
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input.dtype.np)} but found "
                           f"{scalar_name(weight.dtype.np)} (nll_loss: weight must have the input's dtype)")
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    _check_targets(target, n_classes, ignore_index)
    return _nn.nll_loss(input, target, weight, reduction, ignore_index)


def _check_target_shape(input, target):
    """torch's checks of the target's shape against the input's, per input rank (as its
    nll_loss_nd), before the target's dtype: the op failed on these with no torch message."""
    if input.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported (nll_loss: got a target "
                               f"of shape {list(target.shape)} for an input of shape {list(input.shape)})")
        return
    want = [input.shape[0]] + list(input.shape[2:])
    if input.ndim == 4 and target.ndim != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{target.ndim}")
    if list(target.shape) != want:
        raise RuntimeError(f"nll_loss: Expected target size {want}, got {list(target.shape)} (size mismatch: input "
                           f"{list(input.shape)}; the target drops the class dim 1)")


def _check_targets(target, n_classes, ignore_index):
    """IndexError for class indices outside [0, C) (other than ignore_index), as torch; skipped
    while tracing (inside tracegrad.compile there is no value to check)."""
    if _state.CAPTURE[0] is not None:   # checked when the program runs
        _state.check_values(target, lambda t: ((t < 0) | (t >= n_classes)) & (t != ignore_index))
        return
    try:                 # a transform's tracer (tracegrad.func): no value either
        any_bad = bool(_F.class_indices_out_of_range(target, n_classes, ignore_index))
    except RuntimeError:
        return
    if any_bad:
        bad = ((target < 0) | (target >= n_classes)) & (target != ignore_index)
        t = int(target[bad].flatten()[0])
        raise IndexError(f"Target {t} is out of bounds.")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Mirrors ``torch.nn.functional.cross_entropy``: ``nll_loss(log_softmax(input, 1), target)``.

    input ``(N, C, *)`` or ``(C,)`` logits; target int64 class indices ``(N, *)`` or class
    probabilities shaped like input (floating). Supports weight, ignore_index (indices only),
    reduction and label_smoothing <= 1 (a negative value smooths nothing, as torch). grad_fn
    ``NllLossBackward0`` for plain indices. Raises ValueError for a bad reduction or batch sizes
    that differ, RuntimeError for label_smoothing above 1 or a floating target not shaped as input.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_tensors("cross_entropy", input, target, names=("input", "target"))
    input, target, weight = _autocast.cast("fp32", "cross_entropy", input, target, weight)
    _check_reduction(reduction)
    _check_class_loss_kinds("cross_entropy_loss", weight, ignore_index)
    if input.ndim == 0 and not target.dtype.is_floating_point:   # torch reads a 0-d input as probabilities
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_SCALAR_NAME[target.dtype.name]}; a 0-d input has no class dim: pass (C,) logits")
    label_smoothing = require_float("cross_entropy_loss", "label_smoothing", label_smoothing, 6)
    if label_smoothing > 1.0:   # as torch, only the upper bound: a negative value means no smoothing
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if tuple(target.shape) == tuple(input.shape) and not target.dtype.is_floating_point:
        # torch reads a target shaped like input as probabilities and checks its dtype before
        # the log_softmax (an integer input's NotImplementedError came first)
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_SCALAR_NAME[target.dtype.name]}; pass class indices without the class dim or "
                           f"floating probabilities shaped like input")
    cdim = 1 if input.ndim >= 2 else 0
    n_classes = input.shape[cdim]
    logp = input.log_softmax(cdim)
    wshape = [1] * input.ndim
    wshape[cdim] = n_classes
    # a floating target of another shape than input is read as class indices (torch's dispatch),
    # so nll_loss gives torch's errors (batch size ValueError, then target dtype)
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):
        if weight is not None and tuple(weight.shape) != (n_classes,):   # torch's check (view() would take [1, C])
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
                               f"no classes but got weight tensor of shape: {list(weight.shape)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        prod = logp * target
        if weight is not None:
            prod = prod * weight.view(wshape)
        if reduction == "none":
            return -prod.sum(cdim)
        if reduction == "sum":
            return -prod.sum()
        # the batch element count; no classes (issue 73165 in torch) is a 0 / 0 mean: NaN, as torch
        return _nn.div_scalar(-prod.sum(), input.numel() // n_classes if n_classes else 0)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing > 0:   # torch's test: a NaN label_smoothing smooths nothing, as a negative one
        return nll
    ignore = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.view(wshape)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            # the kept targets' weights by a mask, not masked_select: no data-dependent shape,
            # so a compiled step stays one program
            kept = weight.gather(0, target.masked_fill(ignore, 0).flatten()) * (~ignore).flatten().to(weight.dtype)
            ret = smooth.sum() / kept.sum()
        else:
            ret = smooth.sum() / (~ignore).sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return _nn.mul_scalar(nll, 1 - label_smoothing) + _nn.mul_scalar(ret, label_smoothing / n_classes)


def _bcast(input, target, name):
    # torch's loss kernels compute in the operands' promoted dtype: an integer input beside a
    # floating target is accepted (huber writes into the input's dtype: RuntimeError); l1_loss is
    # composite in torch (sub, abs, mean), so its integer/bool operands fail in those ops
    if isinstance(target, tracegrad.Tensor) and target.dtype is not input.dtype and name != "l1_loss":
        common = tracegrad.promote_types(input.dtype, target.dtype)
        if (common.is_floating_point or common.is_complex) and not (input.dtype.is_floating_point
                                                                    or input.dtype.is_complex):
            if name == "huber_loss":
                raise RuntimeError(f"huber_loss(): result type {_SCALAR_NAME[common.name]} can't be cast "
                                   f"to the desired output type {_SCALAR_NAME[input.dtype.name]}; "
                                   f"convert the input with .float() first")
            input = input.to(common)
        elif name == "huber_loss" and (input.dtype.is_floating_point or input.dtype.is_complex):
            target = target.to(input.dtype)   # torch's huber kernel computes in the input's dtype
    if name != "l1_loss" and input.dtype.is_floating_point is False and not input.dtype.is_complex:
        raise NotImplementedError(f"{name}(): not implemented for integer or bool input ({input.dtype}): "
                                  "convert it with .float() first")
    if tuple(input.shape) != tuple(target.shape):
        # torch warns first, then broadcast_tensors raises for shapes that do not broadcast; _warn
        # counts frames (a fixed stacklevel names tracegrad's own line when the loss is reached
        # through torch_function's dispatch, as while a Lazy module's parameter is alive)
        _warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
              f"This will likely lead to incorrect results due to broadcasting. Please ensure they have "
              f"the same size.", UserWarning)
        input, target = tracegrad.broadcast_tensors(input, target)
    return input, target


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """The ``weight=`` path torch's mse_loss/l1_loss/huber_loss take in Python: the elementwise
    loss times ``weight`` (ValueError unless it has input's size), reduced by sum, or for 'mean'
    by ``sum / weight.sum()`` (mse, l1) or ``mean()`` (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return tracegrad.sum(weighted)
    return tracegrad.sum(weighted) / tracegrad.sum(weight) if mean_by_weight else weighted.mean()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mirrors ``torch.nn.functional.mse_loss``: grad_fn ``MseLossBackward0``; with ``weight``
    (input's size, else ValueError) the weighted squared errors, their sum, or for 'mean' their
    sum over ``weight.sum()``, as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _bcast(*_autocast.cast("fp32", "mse_loss", input, target), "mse_loss")
    if weight is not None:
        return _weighted(tracegrad.pow(input - target, 2), weight, input, reduction, True)
    return _nn.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mirrors ``torch.nn.functional.l1_loss``: ``|input - target|`` then mean/sum
    (grad_fn ``MeanBackward0``/``SumBackward0``/``AbsBackward0``, as torch); with ``weight``
    (input's size, else ValueError) the weighted errors, their sum, or for 'mean' their sum over
    ``weight.sum()``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _bcast(*_autocast.cast("fp32", "l1_loss", input, target), "l1_loss")
    loss = (input - target).abs()
    if weight is not None:   # torch: the weighted errors, 'mean' over weight.sum()
        return _weighted(loss, weight, input, reduction, True)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Mirrors ``torch.nn.functional.smooth_l1_loss``: grad_fn ``SmoothL1LossBackward0`` (with
    ``beta=0`` it is ``l1_loss``, and has its grad_fn, as torch).
    ValueError... torch raises RuntimeError for negative beta; so does tracegrad."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    beta = require_float("smooth_l1_loss", "beta", beta, 4)
    if not beta >= 0:   # NaN too, as torch
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:   # torch computes l1_loss then (grad_fn AbsBackward0/MeanBackward0/SumBackward0)
        return l1_loss(input, target, reduction=reduction)
    input, target = _bcast(*_autocast.cast("fp32", "smooth_l1_loss", input, target), "smooth_l1_loss")
    return _nn.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Mirrors ``torch.nn.functional.huber_loss``: grad_fn ``HuberLossBackward0``.
    RuntimeError for ``delta <= 0``. With ``weight`` (input's size, else ValueError) the
    unreduced loss times ``weight``, then its sum or plain mean, as torch."""
    reduction = _reduction.resolve(None, None, reduction)    # 'elementwise_mean' is 'mean', as torch
    _check_reduction(reduction)
    delta = require_float("huber_loss", "delta", delta, 4)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _bcast(*_autocast.cast("fp32", "huber_loss", input, target), "huber_loss")
    if weight is not None:   # torch: the unreduced loss times weight, 'mean' a plain mean
        return _weighted(_nn.huber_loss(input, target, "none", delta), weight, input, reduction, False)
    return _nn.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.binary_cross_entropy``: probabilities in [0, 1], log clamped
    at -100. grad_fn ``BinaryCrossEntropyBackward0``. ValueError if sizes differ, RuntimeError
    for dtypes that differ, NotImplementedError for integer or bool tensors."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target, weight = _autocast.cast("fp32", "binary_cross_entropy", input, target, weight)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:
        # a NumPy array's dtype is never tracegrad's: torch's parser refuses the array itself
        check_tensors("binary_cross_entropy", input, target, names=("input", "target"))
        raise RuntimeError(f"binary_cross_entropy: Found dtype {_SCALAR_NAME[target.dtype.name]} but expected "
                           f"{_SCALAR_NAME[input.dtype.name]}; convert the target with .to(input.dtype)")
    _refuse_no_kernel(input, "binary_cross_entropy")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        weight = weight.expand(input.shape)
    _check_probabilities(input)
    _check_probabilities(target, "target")
    return _nn.binary_cross_entropy(input, target, weight, reduction)


def _check_probabilities(input, what="input"):
    """torch's BCE kernel refuses an input or a target outside [0, 1], NaN included (torch
    2.13); one host read in eager, skipped while tracing (no value to check inside
    tracegrad.compile)."""
    out_of_range = lambda p: ~((p >= 0) & (p <= 1))   # noqa: E731
    if _state.CAPTURE[0] is not None:   # checked when the program runs
        _state.check_values(input, out_of_range)
        return
    try:                 # a transform's tracer (tracegrad.func): no value either
        bad = bool(out_of_range(input).any())
    except RuntimeError:
        return
    if bad:
        raise RuntimeError(f"all elements of {what} should be between 0 and 1: binary_cross_entropy takes "
                           + ("probabilities (apply sigmoid, or use binary_cross_entropy_with_logits)"
                              if what == "input" else "targets in [0, 1]"))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Mirrors ``torch.nn.functional.binary_cross_entropy_with_logits`` (``pos_weight`` broadcast
    over the last dim). grad_fn ``BinaryCrossEntropyWithLogitsBackward0``. ValueError if sizes differ,
    NotImplementedError for integer or bool logits."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target, weight, pos_weight = _autocast.cast("fp32", "binary_cross_entropy_with_logits", input, target,
                                                       weight, pos_weight)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    for pos, name, v in ((3, "weight", weight), (4, "pos_weight", pos_weight)):
        if v is not None and not isinstance(v, tracegrad.Tensor):   # the parser's (a number is no broadcast weight)
            raise _strict_error("binary_cross_entropy_with_logits", name, "Tensor", v, pos)
    _refuse_no_kernel(input, "log_sigmoid_cpu")      # torch's kernel reads log_sigmoid(input) first
    if isinstance(target, tracegrad.Tensor) and not (target.dtype.is_floating_point or target.dtype.is_complex):
        # torch's kernel writes into a tensor of the target's dtype (an integer target fails the
        # in-place cast; a bool one fails its bool subtraction first)
        if target.dtype is tracegrad.bool:
            raise RuntimeError("binary_cross_entropy_with_logits: subtraction with a bool target is not supported; "
                               "pass a floating target (target.float())")
        raise RuntimeError(f"result type {_SCALAR_NAME[input.dtype.name]} can't be cast to the desired output type "
                           f"{_SCALAR_NAME[target.dtype.name]}; pass a floating target (target.float())")
    if isinstance(target, tracegrad.Tensor) and target.dtype is not input.dtype:
        # torch's kernel computes in the target's dtype: (float64 input, float32 target) -> float32
        input, weight, pos_weight = (t.to(target.dtype) if isinstance(t, tracegrad.Tensor) else t
                                     for t in (input, weight, pos_weight))
    return _nn.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Mirrors ``torch.nn.functional.kl_div``: input log-probabilities; target probabilities (or
    log-probabilities with ``log_target``). ``reduction='batchmean'`` divides the sum by the batch size."""
    # torch gives its 'batchmean' advice only for reduction='mean' itself
    legacy = size_average is not None or reduce is not None or reduction == "elementwise_mean"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _autocast.cast("fp32", "kl_div", input, target)
    if type(log_target) is not bool and type(log_target).__name__ != "bool_":   # torch's parser: a bool only
        raise TypeError(f"kl_div(): argument 'log_target' must be bool, not {type(log_target).__name__}")
    if not isinstance(input, tracegrad.Tensor):   # a number computed a loss: torch's parser refuses it
        check_tensors("kl_div", input)
    if any(getattr(t, "is_complex", lambda: False)() for t in (input, target)):
        raise RuntimeError("kl_div: Complex inputs not supported. Take .real or .abs() of the log-probabilities")
    if any(isinstance(t, tracegrad.Tensor) and not t.dtype.is_floating_point for t in (input, target)):
        raise RuntimeError("kl_div: Integral inputs not supported. Convert the input and target with .float()")
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean" and not legacy:
        # _warn: torch names the line that called kl_div (also through KLDivLoss), not its own
        _warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
              "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
              "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        xlogy = tracegrad.xlogy(target, target)     # NaN for a negative target, as torch
        loss = xlogy - target * input
    if reduction == "mean":
        return loss.mean()
    if reduction == "none":
        return loss
    s = loss.sum()
    return s / input.shape[0] if reduction == "batchmean" and input.ndim != 0 else s


# ---- attention ------------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Mirrors ``torch.nn.functional.scaled_dot_product_attention`` (the math reference path):
    ``softmax(q @ k^T * scale + mask) @ v``; q ``(*, L, E)``, k ``(*, S, E)``, v ``(*, S, Ev)``.
    A boolean mask marks positions that take part; a float mask is added; ``is_causal`` masks
    keys after each query (top-left aligned) on top of ``attn_mask`` (RuntimeError for the pair where
    torch takes its math path: inputs not 4-D, head sizes differ, dropout, a mask with grad, or
    ``nn.attention.sdpa_kernel`` not allowing FLASH_ATTENTION). Half / bfloat16 inputs are computed in
    float32 and the result rounded once, as torch's math path; where torch takes its fused CPU
    kernel (4-D inputs of equal batch and head sizes, no dropout) with its roundings and its node
    ``ScaledDotProductFlashAttentionForCpuBackward0`` (nn/_flash_attention_cpu.py). ``enable_gqa``: q
    ``(*, Hq, L, E)`` with k/v ``(*, Hkv, S, E)``, ``Hq % Hkv == 0``, each k/v head serving
    ``Hq // Hkv`` query heads. A query whose keys are all masked gets zeros, as torch's CPU kernel.
    A 4-D result is laid out in memory as ``query`` is (without dropout), as torch's CPU kernel.
    Raises RuntimeError when head counts do not divide (``enable_gqa``), query/key head sizes or
    key/value lengths differ, batch dims do not broadcast, an input has fewer than 2 dims, q/k/v of different dtypes, or for an ``attn_mask`` neither
    bool, float32 nor query's dtype.
    Differs from torch: grad_fn is the composite's (``UnsafeViewBackward0``...), where torch CPU
    shows ``ScaledDotProductFlashAttentionForCpuBackward0``; the dropout mask differs."""
    if type(is_causal) is not bool:   # torch's parser takes only a bool (not 1, None or a tensor)
        raise TypeError(f"scaled_dot_product_attention(): argument 'is_causal' must be bool, not "
                        f"{type(is_causal).__name__}")
    if type(enable_gqa) is not bool:   # likewise
        raise _strict_error("scaled_dot_product_attention", "enable_gqa", "bool", enable_gqa)
    dispatch = getattr(attn_mask, "_sdpa_dispatch", None)   # nn.attention.bias.CausalBias
    if dispatch is not None:
        return dispatch(query, key, value, dropout_p, is_causal, scale, enable_gqa)
    query, key, value, attn_mask = _autocast.cast("lower", "scaled_dot_product_attention", query, key, value,
                                                  attn_mask)
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to all be at least 2 "
                           f"dimensional, but got query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: "
                           f"{value.dim()} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to have the same dtype, but "
                           f"got query.dtype: {query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} "
                           f"instead; convert them with .to(query.dtype)")
    if not (query.dtype.is_floating_point or query.dtype.is_complex) and query.numel() and key.numel():
        # torch's math kernel's scale of the query (RuntimeError); a bool one reached the matmul's
        # NotImplementedError
        raise RuntimeError(f"scaled_dot_product_attention: expected scalar type Float but found "
                           f"{_SCALAR_NAME[query.dtype.name]}; pass floating query, key and value")
    if attn_mask is not None and attn_mask.dtype not in (tracegrad.bool, tracegrad.float32, query.dtype):
        raise RuntimeError(f"scaled_dot_product_attention: Expected attn_mask dtype to be bool or float or to match "
                           f"query dtype, but got attn_mask.dtype: {attn_mask.dtype} and query.dtype: "
                           f"{query.dtype} instead.")
    # torch's fused CPU kernel (4-D inputs of one head size, no dropout, a mask without grad)
    # combines is_causal with attn_mask; its math path, taken otherwise, refuses the pair. The fused
    # kernel is taken only while ``sdpa_kernel`` allows FLASH_ATTENTION: under
    # ``sdpa_kernel(SDPBackend.MATH)`` torch refuses the pair for 4-D inputs too
    if is_causal and attn_mask is not None and not (
            query.dim() == key.dim() == value.dim() == 4 and query.shape[-1] == key.shape[-1] == value.shape[-1]
            and not dropout_p and not attn_mask.requires_grad and _sdpa_fused_allowed()):
        raise RuntimeError("scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True; "
                           "pass one of them (a causal mask as attn_mask, or is_causal=True alone)")
    if enable_gqa and query.dim() >= 3 and (key.shape[-3] != query.shape[-3] or value.shape[-3] != query.shape[-3]):
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query "
                               f"(got {hq} query, {hk} key and {hv} value heads)")
        key, value = key.repeat_interleave(hq // hk, -3), value.repeat_interleave(hq // hv, -3)
    # the shapes the products need, checked here so the error names this op (the matmuls below
    # failed with a generic message); batch dims broadcast, in torch's words when they do not
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: Expected query and key to have the same head size "
                           f"(last dim), but got query.size(-1): {query.shape[-1]} and key.size(-1): "
                           f"{key.shape[-1]} instead.")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: Expected key and value to have the same sequence length "
                           f"(dim -2), but got key.size(-2): {key.shape[-2]} and value.size(-2): "
                           f"{value.shape[-2]} instead.")
    for other in (key, value):
        n = max(query.dim(), other.dim())
        qb = (1,) * (n - query.dim()) + tuple(query.shape[:-2])
        ob = (1,) * (n - other.dim()) + tuple(other.shape[:-2])
        for d, (a, b) in enumerate(zip(qb, ob)):
            if a != b and 1 not in (a, b):
                raise RuntimeError(f"scaled_dot_product_attention: The size of tensor a ({a}) must match the size of "
                                   f"tensor b ({b}) at non-singleton dimension {d} (the batch and head dims of "
                                   f"query, key and value must broadcast)")
    _sdpa_check_backends(query, key, value, attn_mask, dropout_p)
    layout_of, out_dtype = query, query.dtype
    if out_dtype in (tracegrad.float16, tracegrad.bfloat16) and dropout_p == 0.0 and query.device.type == "cpu" \
            and _sdpa_fused_path(query, key, value, attn_mask) \
            and query.shape[:2] == key.shape[:2] == value.shape[:2] and query.shape[-2] and key.shape[-2]:
        # torch's fused CPU kernel rounds its softmax weights to the input dtype (NOTE [sdpa:
        # torch's fused CPU kernel on half/bfloat16]); broadcast batch or head dims and empty
        # inputs take its math path, below, and so do GPU arrays (torch's CUDA kernels are others)
        scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
        return _in_layout_of(flash_attention_cpu(query, key, value, attn_mask, is_causal, scale_factor), layout_of)
    if out_dtype in (tracegrad.float16, tracegrad.bfloat16):
        # torch's CPU kernels (the fused one and the math one) compute half/bfloat16 attention in
        # float32 and round the result once; a float32 mask is taken as it is
        query, key, value = query.float(), key.float(), value.float()
        if attn_mask is not None and attn_mask.dtype is not tracegrad.bool:
            attn_mask = attn_mask.float()
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    attn = query.matmul(key.transpose(-2, -1)) * scale_factor
    if is_causal:
        keep = tracegrad.ones(L, S, dtype=tracegrad.bool).tril(0)
        attn = attn.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is tracegrad.bool:
            attn = attn.masked_fill(~attn_mask, float("-inf"))
        else:
            attn = attn + attn_mask
        # torch's CPU kernel returns zeros, not NaN, for a query with every key masked
        row_ok = (attn != float("-inf")).any(-1, keepdim=True)
        attn = attn.masked_fill(~row_ok, 0.0).softmax(-1).masked_fill(~row_ok, 0.0)
    else:
        attn = attn.softmax(-1)
    if not dropout_p > 0.0 and dropout_p != 0.0 and _sdpa_fused_path(query, key, value, attn_mask):
        # a negative or NaN dropout_p: torch's math path takes it as no dropout (only ``p > 0``
        # drops), but its fused CPU kernel, chosen for 4-D inputs of one head size, refuses any
        # dropout_p other than 0 (RuntimeError)
        raise RuntimeError(f"scaled_dot_product_attention: dropout probability has to be between 0 and 1, "
                           f"but got {dropout_p}; pass dropout_p=0.0 for no dropout")
    if dropout_p > 0.0:
        if dropout_p > 1.0:   # torch's kernel checks it (RuntimeError), not F.dropout's ValueError
            raise RuntimeError(f"scaled_dot_product_attention: dropout probability has to be between 0 and 1, "
                               f"but got {dropout_p}")
        return dropout(attn, dropout_p, True).matmul(value).to(out_dtype)
    if value.shape[-1] != query.shape[-1]:       # torch's math path: a contiguous result
        return attn.matmul(value).to(out_dtype)
    return _in_layout_of(attn.matmul(value).to(out_dtype), layout_of)


def _sdpa_fused_path(query, key, value, attn_mask):
    """Whether torch would run scaled_dot_product_attention through its fused CPU kernel when
    dropout is not positive: 4-D inputs of one head size, a mask without grad, and
    ``sdpa_kernel`` allowing FLASH_ATTENTION."""
    return (query.dim() == key.dim() == value.dim() == 4 and query.shape[-1] == key.shape[-1] == value.shape[-1]
            and not (attn_mask is not None and attn_mask.requires_grad) and _sdpa_fused_allowed())


def _sdpa_check_backends(query, key, value, attn_mask, dropout_p):
    """RuntimeError, as torch's CPU dispatch, when the ``sdpa_kernel`` block allows no backend
    torch has on the CPU for this call: neither MATH nor FLASH_ATTENTION ("No viable backend"),
    or FLASH_ATTENTION alone where its fused kernel cannot run -- inputs not 4-D, head sizes or
    batch/head dims that differ, positive dropout, a mask with grad ("No available kernel").
    GPU arrays are not checked (torch's CUDA build has other kernels; XLA runs them all)."""
    from tracegrad.nn.attention import SDPBackend, current_backends
    allowed = current_backends()
    if query.device.type != "cpu" or SDPBackend.MATH in allowed:
        return
    if SDPBackend.FLASH_ATTENTION not in allowed:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels (allow SDPBackend.MATH in "
                           "sdpa_kernel: the CPU has no other kernels)")
    fused = (query.dim() == key.dim() == value.dim() == 4
             and query.shape[-1] == key.shape[-1] == value.shape[-1]
             and query.shape[:2] == key.shape[:2] == value.shape[:2]
             and not dropout_p > 0.0 and not (attn_mask is not None and attn_mask.requires_grad))
    if not fused:
        raise RuntimeError("No available kernel.  Aborting execution. (FLASH_ATTENTION alone runs 4-D query, key "
                           "and value of one head size and equal batch and head dims, without dropout or a mask "
                           "that requires grad; allow SDPBackend.MATH for the others)")


def _sdpa_fused_allowed():
    """Whether the innermost ``nn.attention.sdpa_kernel`` block (or none) lets
    scaled_dot_product_attention take torch's fused CPU kernel (FLASH_ATTENTION)."""
    # imported here: nn.attention.bias imports this module
    from tracegrad.nn.attention import SDPBackend, current_backends
    return SDPBackend.FLASH_ATTENTION in current_backends()


def _in_layout_of(out, query):
    """``out`` laid out in memory as ``query`` is (its dims ordered by stride), as torch's CPU
    attention kernel allocates its result: the output of heads made by ``q.view(B, T, H,
    D).transpose(1, 2)`` is (B, T, H, D) in memory, so ``y.transpose(1, 2).view(B, T, H * D)``
    works, as the attention tutorials write it. torch's math path (dropout, value's head size not
    query's, or a query that is not 4-D) gives a contiguous result."""
    if query.dim() != 4:
        return out
    strides = query.stride()
    order = sorted(range(query.dim()), key=lambda d: -strides[d])    # stable: ties keep their order
    if order == list(range(query.dim())):
        return out
    return out.permute(order).contiguous().permute([order.index(d) for d in range(query.dim())])


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """Bool masks (True = masked out) become float masks with -inf; float masks pass through.
    Warns (UserWarning, as torch) when ``other_type``, the dtype of the other mask given, differs."""
    if mask is None:
        return None
    if check_other and other_type is not None and mask.dtype != other_type:
        _warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Give both masks the "
              f"same dtype (bool or floating) instead.")
    if mask.dtype is tracegrad.bool:
        return tracegrad.zeros_like(mask, dtype=target_type).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's shape rules for multi-head attention inputs; True for a batched (3-D) query.
    AssertionError (torch's class) for an input of the wrong rank, or a 3-D attn_mask whose
    shape is not ``(num_heads, L, S)`` for an unbatched query."""
    if query.dim() not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                             f"query tensor")
    batched = query.dim() == 3
    want, kpm_dim = (3, 2) if batched else (2, 1)
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.dim() != want or value.dim() != want:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {want}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != kpm_dim:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {kpm_dim}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        if not batched and attn_mask.dim() == 3:
            want_shape = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != want_shape:
                raise AssertionError(f"Expected `attn_mask` shape to be {want_shape} but got {tuple(attn_mask.shape)}")
    return batched


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Mirrors ``torch.nn.functional.multi_head_attention_forward`` (sequence-first layout:
    query ``(L, N, E)`` or unbatched ``(L, E)``), torch's argument order. ``use_separate_proj_weight``
    takes ``q/k/v_proj_weight`` instead of ``in_proj_weight``; ``static_k``/``static_v``
    ``(N * num_heads, S, E / num_heads)`` replace the projected keys/values. Returns (output,
    weights or None). AssertionError when the embedding size is not ``embed_dim_to_check``
    (as torch)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if (key.shape[:2] if use_separate_proj_weight else key.shape) != (value.shape[:2] if use_separate_proj_weight
                                                                       else value.shape):
        raise AssertionError(f"multi_head_attention_forward: key shape {key.shape} does not match value shape "
                             f"{value.shape}" + (" in the sequence and batch dims" if use_separate_proj_weight else ""))
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    assert embed_dim == embed_dim_to_check, \
        f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
    head_dim = embed_dim // num_heads
    # torch's asserts, raised explicitly (``python -O`` keeps them); unchecked, a bad head count or
    # a missing weight failed later in a view or on None
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        for wname, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                         ("v_proj_weight", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {wname} is None")
    elif in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None else
                             "bias_v is set but bias_k is None")
    for sname, s in (("static_k", static_k), ("static_v", static_v)):
        if s is not None:
            if s.size(0) != bsz * num_heads:
                raise AssertionError(f"expecting {sname}.size(0) of {bsz * num_heads}, but got {s.size(0)}")
            if s.size(2) != head_dim:
                raise AssertionError(f"expecting {sname}.size(2) of {head_dim}, but got {s.size(2)}")
    if not use_separate_proj_weight:
        E = embed_dim
        if key is value and query is key:
            proj = linear(query, in_proj_weight, in_proj_bias)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            q, k, v = proj[0], proj[1], proj[2]
        elif key is value:
            w_q, w_kv = in_proj_weight.split([E, E * 2])
            b_q, b_kv = (None, None) if in_proj_bias is None else in_proj_bias.split([E, E * 2])
            q = linear(query, w_q, b_q)
            kv = linear(key, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            k, v = kv[0], kv[1]
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
            q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    else:
        for kind, w, x in (("query", q_proj_weight, query), ("key", k_proj_weight, key), ("value", v_proj_weight, value)):
            want = (embed_dim, x.shape[-1])
            if tuple(w.shape) != want:   # torch asserts each projection's shape
                raise AssertionError(f"expecting {kind} weights shape of {want}, but got {w.shape} (the inputs' "
                                     f"last dim must be the module's {kind[0]}dim)")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)
    if attn_mask is not None:   # torch checks the mask against (target, source) lengths by name
        src_len0 = key.shape[0]
        want = (tgt_len, src_len0) if attn_mask.dim() == 2 else (bsz * num_heads, tgt_len, src_len0)
        if attn_mask.dim() not in (2, 3):
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported; pass a 2-D "
                               "(target, source) or 3-D (batch * num_heads, target, source) mask")
        if tuple(attn_mask.shape) != want:
            raise RuntimeError(f"The shape of the {attn_mask.dim()}D attn_mask is {attn_mask.shape}, but should be "
                               f"{want}.")
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None and bias_v is not None:
        # torch asserts: AssertionError, raised explicitly so ``python -O`` keeps it
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = tracegrad.cat([k, bias_k.repeat(1, bsz, 1)])
        v = tracegrad.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    # static k/v replace the projected ones: torch checks their batch*heads and head sizes
    # (AssertionError; unchecked, a wrong static_k failed later in a matmul or a reshape)
    for name, static in (("static_k", static_k), ("static_v", static_v)):
        if static is not None:
            for d, want in ((0, bsz * num_heads), (2, head_dim)):
                if static.size(d) != want:
                    raise AssertionError(f"expecting {name}.size({d}) of {want}, but got {static.size(d)}")
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        zeros = tracegrad.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k = tracegrad.cat([k, zeros], dim=1)
        v = tracegrad.cat([v, zeros], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        # torch 2.13's words, the batch size checked before the source length
        for d, want in ((0, bsz), (1, src_len)):
            if key_padding_mask.shape[d] != want:
                raise AssertionError(f"Expected key_padded_mask.shape[{d}] to be {want}, but got "
                                     f"{key_padding_mask.shape[d]}")
        key_padding_mask = (key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        B, Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        w = q_scaled.bmm(k.transpose(-2, -1))
        if attn_mask is not None:
            # torch's baddbmm here is on autocast's lower-precision list: a float mask is cast too
            attn_mask = _autocast.cast("lower", "baddbmm", attn_mask)
            if attn_mask.dtype != w.dtype:
                # torch's baddbmm(attn_mask, q, k^T) wants one dtype; unchecked, a float16/float64
                # mask (after adding a key_padding_mask) was promoted with the scores
                raise RuntimeError(f"multi_head_attention_forward: Input dtypes must be the same, got: attn_mask "
                                   f"{attn_mask.dtype}, query {w.dtype}; pass masks of the query's dtype or bool")
            w = attn_mask + w
        w = w.softmax(-1)
        if dropout_p > 0.0:
            w = dropout(w, p=dropout_p)
        out = w.bmm(v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# ---- torch's *_with_indices spellings: the pooling above with return_indices=True ----------
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """Mirrors ``F.max_pool1d_with_indices``: ``(values, indices)`` of ``max_pool1d``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """Mirrors ``F.max_pool2d_with_indices``: ``(values, indices)`` of ``max_pool2d``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """Mirrors ``F.max_pool3d_with_indices``: ``(values, indices)`` of ``max_pool3d``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """Mirrors ``F.fractional_max_pool2d_with_indices``: ``(values, indices)`` of ``fractional_max_pool2d``."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """Mirrors ``F.fractional_max_pool3d_with_indices``: ``(values, indices)`` of ``fractional_max_pool3d``."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def _adaptive_with_indices(pool):
    def with_indices(input, output_size, return_indices=False):
        return pool(input, output_size, return_indices=True)
    with_indices.__name__ = with_indices.__qualname__ = pool.__name__ + "_with_indices"
    with_indices.__doc__ = f"Mirrors ``F.{with_indices.__name__}``: ``(values, indices)`` of ``{pool.__name__}``."
    return with_indices


adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices, adaptive_max_pool3d_with_indices = map(
    _adaptive_with_indices, (adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d))


def native_channel_shuffle(input, groups):
    """Mirrors ``F.native_channel_shuffle``: ``channel_shuffle``."""
    return channel_shuffle(input, groups)


__all__ += ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
            "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "native_channel_shuffle",
            "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices"]


# activations whose torch kernel is defined for floating dtypes only: an integer or bool input is
# torch's NotImplementedError (JAX would compute them, or promote); kernel names as torch's
_FLOATING_KERNELS = {
    "elu": "elu_cpu", "elu_": "elu_cpu", "selu": "elu_cpu", "selu_": "elu_cpu", "celu": "elu_cpu", "celu_": "elu_cpu",
    "gelu": "GeluKernelImpl", "hardshrink": "hardshrink_cpu", "hardsigmoid": "hardsigmoid_cpu",
    "hardswish": "hardswish_cpu", "leaky_relu": "leaky_relu_cpu", "leaky_relu_": "leaky_relu_cpu",
    "rrelu": "leaky_relu_cpu", "rrelu_": "leaky_relu_cpu", "logsigmoid": "log_sigmoid_cpu", "mish": "mish_cpu", "silu": "silu_cpu",
    "softplus": "softplus_cpu", "softshrink": "softshrink_check"}


for _name, _kernel in _FLOATING_KERNELS.items():
    globals()[_name] = _floating_input(globals()[_name], _kernel)
del _name, _kernel


def _refuse_no_kernel(input, kernel, ints=True, halves=False, complexes=False):
    """torch's NotImplementedError for a CPU kernel ``kernel`` that has no bool version and, with
    ``ints`` True, no integer one (``"int64"``: int64 is its only integer one); with ``halves``,
    no float16/bfloat16 one either; with ``complexes``, no complex one; where the layer below
    would compute one."""
    dt = getattr(input, "dtype", None)
    if not isinstance(dt, tracegrad.dtype):
        return
    if (not (dt.is_floating_point or dt.is_complex) and
            (dt is tracegrad.bool or ints is True or (ints == "int64" and dt is not tracegrad.int64))) or \
            (halves and dt in (tracegrad.float16, tracegrad.bfloat16)) or (complexes and dt.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR_NAME[dt.name]}'; convert the "
                                  f"input with {'.real or .abs()' if dt.is_complex else '.float()'}")


def _no_kernel_for(fn, kernel, ints=True, halves=False, complexes=False):
    """``fn`` checking its input's dtype first (``_refuse_no_kernel``); ``kernel`` is torch's
    kernel name or a function of ``fn``'s arguments giving it (None: the call is not refused)."""
    first = next(iter(inspect.signature(fn).parameters))     # (the input passed by keyword too)
    fp32 = any(fn.__name__ in ops for ops in _autocast.FP32_OPS.values())

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        input = args[0] if args else kwargs.get(first)
        if callable(kernel):
            rest = {k: v for k, v in kwargs.items() if k != first}
            name = kernel(input, *args[1:], **rest) if args else kernel(input, **rest)
        else:
            name = kernel
        if name is not None:
            if fp32:   # under autocast, an op of torch's float32 list meets its kernel in float32
                input = _autocast.cast("fp32", fn.__name__, input)   # (bfloat16 multi_margin_loss: cast)
            _refuse_no_kernel(input, name, ints, halves, complexes)
        return fn(*args, **kwargs)
    return checked


def _pad_kernel(input, pad=(), mode="constant", value=None):
    if mode in ("reflect", "replicate") and isinstance(pad, (list, tuple)) and 2 <= len(pad) <= 6:
        return f"{'reflection' if mode == 'reflect' else 'replication'}_pad{len(pad) // 2}d"
    return None


def _conv_kernel(kernel, nd, transposed=False):
    """``kernel`` for a ``conv{nd}d`` (or transposed) call that passes torch's checks made before
    its kernel's dtype check, None otherwise: an input of ``nd + 1`` or ``nd + 2`` dims, a bias of
    the input's dtype (not checked by the transposed convs) and of the output's channel count, and
    the weight's input channel count.
    Unchecked, a bool input to ``Conv2d`` (float bias) or with too few channels raised the
    kernel's NotImplementedError where torch raises its RuntimeError."""
    def name(input, weight=None, bias=None, *rest, **kw):
        if getattr(input, "ndim", None) not in (nd + 1, nd + 2) or getattr(weight, "ndim", None) != nd + 2:
            return None
        if not transposed and bias is not None and getattr(bias, "dtype", None) is not input.dtype:
            return None
        # ``groups`` is the fourth argument after ``bias`` in both signatures
        groups = kw.get("groups", rest[3] if len(rest) > 3 else 1)
        want = weight.shape[0] if transposed else weight.shape[1] * groups
        outs = weight.shape[1] * groups if transposed else weight.shape[0]
        if bias is not None and tuple(getattr(bias, "shape", ())) != (outs,):
            return None
        return kernel if input.shape[input.ndim - nd - 1] == want else None
    return name


def _by_rank(two, three):
    return lambda input, *a, **k: two if getattr(input, "ndim", 0) <= 4 else three


# functions whose torch CPU kernel is floating (and complex) only: integer and bool inputs are
# torch's NotImplementedError, where JAX computes them (kernel names as torch's messages)
_FLOATING_ONLY = {
    "glu": "glu_cpu", "multi_margin_loss": "multi_margin_loss_cpu_kernel", "rms_norm": "rms_norm",
    "multilabel_margin_loss": "multilabel_margin_loss_forward_out_frame",
    "max_unpool1d": "max_unpool2d", "max_unpool2d": "max_unpool2d", "max_unpool3d": "max_unpool3d",
    "grid_sample": _by_rank("grid_sampler_2d_cpu_kernel_impl", "grid_sampler3d_cpu"),
    "nll_loss": lambda input, *a, **k: "nll_loss2d_forward_out_frame" if getattr(input, "ndim", 0) == 4
    else "nll_loss_out_frame",
    # (a weight of another dtype is prelu's own RuntimeError first)
    "prelu": lambda input, weight=None, *a, **k: "prelu_cpu" if getattr(weight, "dtype", None) is
    getattr(input, "dtype", None) else None,
}
# ... those whose kernel has integer versions but no bool one
_NO_BOOL = {
    "conv1d": _conv_kernel("slow_conv2d_cpu", 1), "conv2d": _conv_kernel("slow_conv2d_cpu", 2),
    "conv3d": _conv_kernel("slow_conv3d_cpu", 3),
    "threshold": "threshold_cpu", "threshold_": "threshold_cpu", "bilinear": "bmm", "pad": _pad_kernel,
}
# ... and those whose one integer kernel is int64's
def _at_rank(kernel, *ranks):
    """``kernel`` for an input of one of ``ranks`` dims; None (no kernel check) otherwise: torch
    refuses a wrong rank first (``avg_pool2d`` of a 2-D bool input: the rank's IndexError)."""
    return lambda input, *a, **k: kernel if getattr(input, "ndim", None) in ranks else None


_INT64_ONLY = {
    "conv_transpose1d": _conv_kernel("slow_conv_transpose2d_out_cpu", 1, transposed=True),
    "conv_transpose2d": _conv_kernel("slow_conv_transpose2d_out_cpu", 2, transposed=True),
    "conv_transpose3d": _conv_kernel("slow_conv_transpose3d_out_cpu", 3, transposed=True),
    "avg_pool1d": _at_rank("avg_pool2d", 2, 3), "avg_pool2d": _at_rank("avg_pool2d", 3, 4),
    "avg_pool3d": _at_rank("avg_pool3d_out_frame", 4, 5),
    "local_response_norm": lambda input, *a, **k: "avg_pool2d" if getattr(input, "ndim", 0) == 3
    else "avg_pool3d_out_frame" if getattr(input, "ndim", 0) > 3 else None,
}
for _name, _kernel in _FLOATING_ONLY.items():
    # (prelu's kernel has no complex version: unchecked, a complex input and weight were computed)
    globals()[_name] = _no_kernel_for(globals()[_name], _kernel,
                                      halves=_name in ("multi_margin_loss", "multilabel_margin_loss"),
                                      complexes=_name == "prelu")
# (pdist's integer and bool inputs are its own RuntimeError)
globals()["pdist"] = _no_kernel_for(pdist, lambda input, *a, **k: "pdist" if getattr(input, "is_floating_point",
                                                                                   lambda: False)() else None,
                                    halves=True)
for _name, _kernel in _NO_BOOL.items():
    # (threshold's kernel has no complex version either: unchecked, a complex input was compared
    # by its real part where torch raises)
    globals()[_name] = _no_kernel_for(globals()[_name], _kernel, ints=False, complexes=_name.startswith("threshold"))
for _name, _kernel in _INT64_ONLY.items():
    globals()[_name] = _no_kernel_for(globals()[_name], _kernel, ints="int64")
del _name, _kernel

# torch's native nn functions take ``out=`` (the result's own dtype only)
_add_out(globals(), ("linear", "avg_pool2d", "avg_pool3d", "gelu", "softplus", "logsigmoid", "hardshrink",
                     "softshrink"), exact_dtype=True)

# torch's TypeError for an argument of the wrong kind (tracegrad/_api/argcheck.py), on failure only,
# for the functions torch binds from C++ (its argument parser checks them); torch's Python-level
# functional ones fail with their own classes, as tracegrad's do
_NATIVE = (
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu_", "channel_shuffle", "conv1d",
    "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_similarity",
    "elu_", "gelu", "hardshrink", "hardtanh_", "leaky_relu_", "linear", "logsigmoid", "native_channel_shuffle",
    "one_hot", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_", "rrelu_",
    "scaled_dot_product_attention", "selu_", "softplus", "softshrink", "threshold_")
_guard_all(globals(), names=_NATIVE)
# torch's Python-level functions that hand these arguments straight to a C++ op (others, such as
# interpolate or the adaptive and fractional pools, test them in Python first, as tracegrad does)
_guard_all(globals(), python_level=True, names=(
    "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices", "celu", "elu", "embedding", "fold", "grid_sample",
    "layer_norm", "rrelu",
    "leaky_relu", "log_softmax", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices",
    "max_pool3d", "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "normalize", "rms_norm",
    "softmax", "softmin", "unfold"))
