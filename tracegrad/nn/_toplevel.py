"""torch's top-level spellings of nn ops (``torch.pdist``, ``torch.threshold``, ``torch.kl_div``...):
ATen signatures, so positional arguments where ``torch.nn.functional`` has keywords and an
integer ``reduction`` for the losses (0 none, 1 mean, 2 sum, as ``torch.nn._reduction.get_enum``).
Each forwards to ``tracegrad.nn.functional``; values, gradients and errors are that function's.
Re-exported by ``tracegrad/__init__.py``.

NOTE [enum reduction]: observed on torch 2.13, these bindings reduce only for 1 (mean) and 2
(sum); any other value, and a reduction left out, gives the unreduced loss (their schema
says 1, the Python binding does not apply it). tracegrad does the same: default 0."""
from __future__ import annotations

import math

import tracegrad
from tracegrad import Tensor
from tracegrad._ops import dtypes as _dt
from tracegrad._tensor.tensor import _wrap_dim

from . import functional as F

__all__ = ["alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "dropout_",
           "celu_", "selu_", "rrelu", "rrelu_", "threshold", "threshold_", "hardshrink", "channel_shuffle",
           "native_channel_shuffle",
           "pixel_shuffle", "pixel_unshuffle", "pdist", "pairwise_distance", "prelu", "bilinear", "rms_norm",
           "conv_transpose3d", "max_pool3d", "instance_norm", "kl_div", "binary_cross_entropy_with_logits",
           "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss", "ctc_loss", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
           "native_layer_norm", "native_group_norm", "native_dropout", "feature_dropout", "feature_dropout_",
           "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "embedding_renorm_", "norm_except_dim",
           "max_pool1d_with_indices", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only", "lstm", "gru", "rnn_tanh", "rnn_relu"]

def _reduction(reduction):
    """The name of an ATen reduction enum (NOTE [enum reduction])."""
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def alpha_dropout(input, p, train):
    """Mirrors ``torch.alpha_dropout(input, p, train)``: ``F.alpha_dropout``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """Mirrors ``torch.alpha_dropout_`` (in place): ``F.alpha_dropout(..., inplace=True)``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """Mirrors ``torch.feature_alpha_dropout(input, p, train)``: ``F.feature_alpha_dropout``."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """Mirrors ``torch.feature_alpha_dropout_`` (in place)."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def dropout_(input, p, train):
    """Mirrors ``torch.dropout_(input, p, train)`` (in place): ``F.dropout(..., inplace=True)``."""
    return F.dropout(input, p, train, inplace=True)


def celu_(input, alpha=1.0):
    """Mirrors ``torch.celu_`` (in place): ``F.celu_``."""
    return F.celu_(input, alpha)


def selu_(input):
    """Mirrors ``torch.selu_`` (in place): ``F.selu_``."""
    return F.selu_(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Mirrors ``torch.rrelu``: ``F.rrelu`` (slopes drawn from tracegrad's generator when
    training; ``generator`` is accepted and not used)."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Mirrors ``torch.rrelu_`` (in place): ``F.rrelu_``."""
    return F.rrelu_(input, lower, upper, training)


def threshold(input, threshold, value):
    """Mirrors ``torch.threshold(input, threshold, value)``: ``value`` where ``input <= threshold``."""
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """Mirrors ``torch.threshold_`` (in place)."""
    return F.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    """Mirrors ``torch.hardshrink``: ``F.hardshrink``."""
    return F.hardshrink(input, lambd)


def channel_shuffle(input, groups):
    """Mirrors ``torch.channel_shuffle``: ``F.channel_shuffle``."""
    return F.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """Mirrors ``torch.native_channel_shuffle``: ``F.native_channel_shuffle`` (the same values,
    errors and autograd as ``channel_shuffle``)."""
    return F.native_channel_shuffle(input, groups)


def pixel_shuffle(input, upscale_factor):
    """Mirrors ``torch.pixel_shuffle``: ``F.pixel_shuffle``."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """Mirrors ``torch.pixel_unshuffle``: ``F.pixel_unshuffle``."""
    return F.pixel_unshuffle(input, downscale_factor)


def pdist(input, p=2):
    """Mirrors ``torch.pdist``: ``F.pdist`` (the upper triangle of the row distance matrix)."""
    return F.pdist(input, p)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """Mirrors ``torch.pairwise_distance``: ``F.pairwise_distance``."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def prelu(input, weight):
    """Mirrors ``torch.prelu``: ``F.prelu``."""
    return F.prelu(input, weight)


def bilinear(input1, input2, weight, bias=None):
    """Mirrors ``torch.bilinear``: ``F.bilinear``."""
    return F.bilinear(input1, input2, weight, bias)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Mirrors ``torch.rms_norm``: ``F.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Mirrors ``torch.conv_transpose3d``: ``F.conv_transpose3d``."""
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """Mirrors ``torch.max_pool3d`` (ATen: no ``return_indices``; an empty ``stride`` is the kernel size)."""
    return F.max_pool3d(input, kernel_size, stride if stride not in ((), []) else None, padding, dilation, ceil_mode)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """Mirrors ``torch.instance_norm`` (ATen argument order): ``F.instance_norm``."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def kl_div(input, target, reduction=0, *, log_target=False):
    """Mirrors ``torch.kl_div``: ``F.kl_div`` with an enum reduction (NOTE [enum reduction]); mean
    (1) averages over all elements, without ``F.kl_div``'s advice to use 'batchmean'."""
    name = _reduction(reduction)
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if name == "none" else (loss.mean() if name == "mean" else loss.sum())


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """Mirrors ``torch.binary_cross_entropy_with_logits`` (enum reduction)."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """Mirrors ``torch.cosine_embedding_loss`` (enum reduction)."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """Mirrors ``torch.hinge_embedding_loss`` (enum reduction)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """Mirrors ``torch.margin_ranking_loss`` (enum reduction)."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Mirrors ``torch.poisson_nll_loss`` (every argument positional, enum reduction)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0):
    """Mirrors ``torch.triplet_margin_loss`` (enum reduction)."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """Mirrors ``torch.ctc_loss`` (enum reduction): ``F.ctc_loss``."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      reduction=_reduction(reduction), zero_infinity=zero_infinity)


# ---- functional recurrent cells (torch's _VF cells) ------------------------------------------


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    return F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """Mirrors ``torch.lstm_cell``: one LSTM step. input ``(B, I)`` (or ``(I,)``); ``hx`` the
    pair ``(h (B, H), c (B, H))``; w_ih ``(4H, I)``, w_hh ``(4H, H)``, biases ``(4H,)`` or None
    (gate order i, f, g, o). Returns ``(h', c')``."""
    h, c = hx
    i, f, g, o = _gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """Mirrors ``torch.gru_cell``: one GRU step (gate order r, z, n; the new gate's hidden part
    scaled by r after its bias, as torch). input ``(B, I)``; hx ``(B, H)``; w_ih ``(3H, I)``,
    w_hh ``(3H, H)``. Returns h'."""
    xr, xz, xn = F.linear(input, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = F.linear(hx, w_hh, b_hh).chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * hx


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """Mirrors ``torch.rnn_tanh_cell``: ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """Mirrors ``torch.rnn_relu_cell``: ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


# ---- native_* spellings ---------------------------------------------------------------------


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Mirrors ``torch.native_layer_norm``: ``(out, mean, rstd)``; mean and rstd have
    ``input``'s leading dims and size 1 in each normalised dim (float32 statistics for
    half-precision inputs, as torch's CPU kernel) and do not require grad (torch's
    NativeLayerNormBackward0 has no gradient for them). RuntimeError for an empty
    ``normalized_shape``, as torch."""
    n = len(normalized_shape)
    if n == 0:
        raise RuntimeError("native_layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    dims = tuple(range(input.dim() - n, input.dim()))
    # detached: torch's mean/rstd outputs are not differentiable (requires_grad False)
    x = (input.float() if input.dtype in (_dt.float16, _dt.bfloat16) else input).detach()
    mean = x.mean(dims, keepdim=True)
    # the mean square deviation, not var(): var warns (0 by 0 elements) on an empty batch, torch's kernel does not
    rstd = ((x - mean).square().mean(dims, keepdim=True) + eps).rsqrt()
    return F.layer_norm(input, list(normalized_shape), weight, bias, eps), mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """Mirrors ``torch.native_group_norm``: ``(out, mean (N, group), rstd (N, group))`` for an
    input of ``N`` samples, ``C`` channels and ``HxW`` elements per channel; all three
    differentiable as torch's."""
    # the group size spelled out, not -1: an input with no samples (N = 0) has no elements to infer it from
    g = input.reshape(N, group, (C // group) * HxW)
    mean = g.mean(-1)
    # the mean square deviation, not var(): var warns (0 by 0 elements) for N = 0, which torch's kernel does not
    rstd = ((g - mean.unsqueeze(-1)).square().mean(-1) + eps).rsqrt()
    return F.group_norm(input, group, weight, bias, eps), mean, rstd


def native_dropout(input, p, train):
    """Mirrors ``torch.native_dropout``: ``(out, mask)`` with a bool mask of kept elements;
    with ``train`` False (or None), ``(input as a new tensor, all-True mask)``."""
    if not train:
        return input.clone(), input.new_ones(input.shape, dtype=_dt.bool_)
    if p >= 1:
        mask = input.new_zeros(input.shape, dtype=_dt.bool_)
        return input * 0, mask
    mask = tracegrad.rand_like(input, dtype=input.dtype if input.is_floating_point() else _dt.float32) >= p
    return input * mask / (1 - p), mask


def feature_dropout(input, p, train):
    """Mirrors ``torch.feature_dropout``: channel dropout (``dropout2d``-like: whole channels
    of a ``(N, C, *)`` input zeroed with probability ``p``, the rest scaled by ``1/(1-p)``)."""
    return F.dropout1d(input, p, train) if input.dim() in (2, 3) else \
        F.dropout2d(input, p, train) if input.dim() == 4 else F.dropout3d(input, p, train)


def feature_dropout_(input, p, train):
    """Mirrors ``torch.feature_dropout_``: ``feature_dropout`` written into ``input`` in place
    (returns ``input``)."""
    F_ = F.dropout1d if input.dim() in (2, 3) else F.dropout2d if input.dim() == 4 else F.dropout3d
    return F_(input, p, train, inplace=True)


# ATen's enums of F.grid_sample's string arguments (torch's GridSamplerInterpolation/Padding)
_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """Mirrors ``torch.grid_sampler``: ``F.grid_sample`` with ATen's integer modes
    (``interpolation_mode`` 0 bilinear, 1 nearest, 2 bicubic; ``padding_mode`` 0 zeros, 1 border,
    2 reflection), 4-D or 5-D input. Raises RuntimeError for a mode outside those (torch reads
    uninitialised memory there) and for the shape errors ``grid_sample`` raises."""
    return _grid_sampler("grid_sampler", None, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Mirrors ``torch.grid_sampler_2d``: ``grid_sampler`` for a 4-D input and grid only."""
    return _grid_sampler("grid_sampler_2d", 4, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Mirrors ``torch.grid_sampler_3d``: ``grid_sampler`` for a 5-D input and grid only."""
    return _grid_sampler("grid_sampler_3d", 5, input, grid, interpolation_mode, padding_mode, align_corners)


def _grid_sampler(name, ndim, input, grid, interpolation_mode, padding_mode, align_corners):
    for arg, value, names in (("interpolation_mode", interpolation_mode, _GRID_MODES),
                              ("padding_mode", padding_mode, _GRID_PADDINGS)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}(): argument '{arg}' must be int, not {type(value).__name__}")
        if not 0 <= value < len(names):
            raise RuntimeError(f"{name}(): {arg} must be one of "
                               + ", ".join(f"{i} ({n})" for i, n in enumerate(names)) + f", but got {value}")
    if ndim is not None and (input.dim() != ndim or grid.dim() != ndim):
        raise RuntimeError(f"{name}(): expected {ndim}D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode],
                         bool(align_corners))


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Mirrors ``torch.embedding_renorm_``: the rows of the embedding matrix ``input`` that
    ``indices`` pick and whose ``norm_type``-norm exceeds ``max_norm`` are rescaled to norm
    ``max_norm`` in place, without autograd (what ``F.embedding(max_norm=...)`` does). Returns
    ``input``."""
    from . import _vision_functional
    _vision_functional.embedding_renorm_(input, indices, max_norm, norm_type)
    return input


def norm_except_dim(v, pow=2, dim=0):
    """Mirrors ``torch.norm_except_dim`` (weight norm's helper): the ``pow``-norm of ``v`` over
    every dimension but ``dim``, shaped to broadcast against ``v`` (size 1 everywhere but
    ``dim``); ``dim=-1`` means the norm of all of ``v``, a 0-d tensor. Raises IndexError for a
    ``dim`` out of range."""
    if dim == -1:
        return v.norm(pow)
    d = _wrap_dim(dim, v.dim())
    others = [k for k in range(v.dim()) if k != d]
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Mirrors ``torch.max_pool1d_with_indices``: ``(values, indices)`` of ``F.max_pool1d``."""
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                        return_indices=True)


def _prelu_method(self, weight):
    """Mirrors ``torch.Tensor.prelu``: ``F.prelu(self, weight)``."""
    return F.prelu(self, weight)


def _hardshrink_method(self, lambd=0.5):
    """Mirrors ``torch.Tensor.hardshrink``: ``F.hardshrink(self, lambd)``."""
    return F.hardshrink(self, lambd)


# methods of nn-level ops: set here, where nn.functional exists (the API layer below cannot see it)
Tensor.prelu, Tensor.hardshrink = _prelu_method, _hardshrink_method


# ---- embedding_bag's ATen form ----------------------------------------------------------------


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Mirrors ``torch.embedding_bag`` (ATen argument order; ``mode`` 0 sum, 1 mean, 2 max):
    ``(output, offset2bag, bag_size, max_indices)``. ``output`` is
    ``nn.functional.embedding_bag``'s (values, gradients, errors). The other three are int64
    tensors with the values of torch's CPU kernel: ``offset2bag`` the bag of each position of
    ``indices`` (empty in sum mode without ``padding_idx``); ``bag_size`` the non-padding ids per
    bag (zeros in sum mode); ``max_indices`` the id of each bag's maximum per feature (max mode,
    ``(bags, D)``, 0 for an empty bag), ``bag_size`` again in mean mode, zeros in sum mode."""
    names = {0: "sum", 1: "mean", 2: "max"}
    if mode not in names:
        raise ValueError(f"embedding_bag: mode has to be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if not isinstance(offsets, Tensor):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not {type(offsets).__name__}")
    # the ATen op's own shape checks: RuntimeError and ATen's text, where nn.functional raises ValueError
    if indices.dim() not in (1, 2):
        raise RuntimeError(f"input has to be a 1D or 2D Tensor, but got Tensor of dimension {indices.dim()}")
    if indices.dim() == 1 and offsets.dim() != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension {offsets.dim()}")
    if weight.dim() != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=names[mode],
                             sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    n_bags = output.shape[0]
    long = dict(dtype=tracegrad.int64)
    with tracegrad.no_grad():
        positions = tracegrad.arange(indices.shape[0])
        bag_of = (tracegrad.searchsorted(offsets[:n_bags].long(), positions, right=True) - 1).clamp_min(0)
        if padding_idx is not None:
            pad = padding_idx + (weight.shape[0] if padding_idx < 0 else 0)
            valid = indices != pad
        else:
            valid = tracegrad.ones_like(indices, dtype=tracegrad.bool)
        offset2bag = bag_of if mode != 0 or padding_idx is not None else tracegrad.zeros(0, **long)
        if mode == 0:
            return output, offset2bag, tracegrad.zeros(n_bags, **long), tracegrad.zeros(n_bags, **long)
        bag_size = tracegrad.zeros(n_bags, **long).index_add(0, bag_of, valid.long())
        if mode == 1:
            return output, offset2bag, bag_size, bag_size.clone()
        # max: the first position (in bag order) holding the bag's maximum, per feature
        rows = weight.detach()[indices].masked_fill(~valid.unsqueeze(1), -math.inf)
        width = rows.shape[1]
        best = output.detach()[bag_of]
        first = tracegrad.where((rows == best) & valid.unsqueeze(1), positions.unsqueeze(1), indices.shape[0])
        winner = tracegrad.full((n_bags, width), indices.shape[0], **long).scatter_reduce(
            0, bag_of.unsqueeze(1).expand(-1, width), first, "amin")
        ids = tracegrad.cat([indices.long(), tracegrad.zeros(1, **long)])   # position L: an empty bag's 0
        return output, offset2bag, bag_size, ids[winner]



def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """Mirrors ``torch._embedding_bag``, the ATen op behind ``torch.embedding_bag``: the same
    arguments and ``(output, offset2bag, bag_size, max_indices)``, gradient
    ``EmbeddingBagBackward0``. Its ``padding_idx`` default is -1, which means none (torch's ATen
    convention, as here)."""
    return embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                         include_last_offset, None if padding_idx == -1 else padding_idx)


def _embedding_bag_forward_only(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                                per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """Mirrors ``torch._embedding_bag_forward_only``: ``_embedding_bag`` for inference. torch has
    no derivative for it, so with grad mode on and ``weight`` or ``per_sample_weights`` requiring
    grad it raises RuntimeError (torch's own text there is an unrelated dtype complaint)."""
    out = _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                         include_last_offset, padding_idx)   # first, so argument errors come first, as torch
    if out[0].requires_grad:
        raise RuntimeError("_embedding_bag_forward_only: it has no derivative, but an input requires grad; use "
                           "torch.embedding_bag (or run it under torch.no_grad()).")
    return out

# ---- functional recurrent nets (torch's _VF.lstm/gru/rnn_tanh/rnn_relu) -----------------------


def _recurrent(mode):
    name = mode.lower()

    def f(*args):
        from .modules.rnn import run_stack
        from .utils.rnn import packed_to_padded, padded_to_packed
        if len(args) != 9 or not isinstance(args[0], Tensor):   # torch's parser: nine arguments, a Tensor first
            got = ", ".join(type(a).__name__ for a in args)
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}); pass "
                            f"{name}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, "
                            f"batch_first) or {name}(data, batch_sizes, hx, params, has_biases, num_layers, "
                            f"dropout, train, bidirectional)")
        packed = isinstance(args[1], Tensor) and (mode == "LSTM" or isinstance(args[2], Tensor))
        if packed:
            data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            sizes = [int(v) for v in batch_sizes.tolist()]
            x, lengths = packed_to_padded(data, sizes)
            lengths, batch_first = tracegrad.tensor(lengths, dtype=tracegrad.int64), False
        else:
            x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
            lengths = None
            x = x.transpose(0, 1) if batch_first else x
        groups = num_layers * (2 if bidirectional else 1)
        if len(params) % groups:
            raise RuntimeError(f"{mode.lower()}: got {len(params)} parameters for {groups} layers and directions; "
                               f"pass the same number of weights for each (w_ih, w_hh[, b_ih, b_hh][, w_hr])")
        per = len(params) // groups
        weights = [list(params[k * per:(k + 1) * per]) for k in range(groups)]
        hx = tuple(hx) if mode == "LSTM" else hx
        out, hidden = run_stack(mode, x, hx, weights, has_biases, num_layers, dropout, train, bidirectional, lengths)
        if packed:
            out = padded_to_packed(out, sizes)
        elif batch_first:
            out = out.transpose(0, 1)
        return (out,) + hidden
    f.__name__ = f.__qualname__ = name
    state = "hx ``(h_0, c_0)``" if mode == "LSTM" else "hx"
    f.__doc__ = (f"Mirrors ``torch.{name}``, the kernel under ``nn.{_NN_NAMES[mode]}``: "
                 f"``{name}(input, {'hx' if mode != 'LSTM' else '(h_0, c_0)'}, params, has_biases, num_layers, "
                 f"dropout, train, bidirectional, batch_first)``, or the packed form ``{name}(data, batch_sizes, "
                 f"hx, params, has_biases, num_layers, dropout, train, bidirectional)``. ``params`` is the flat "
                 f"weight list of every layer and direction in ``nn.{_NN_NAMES[mode]}.all_weights`` order; "
                 f"{state} ``(num_layers * num_directions, B, P)``. Returns ``(output, h_n"
                 f"{', c_n' if mode == 'LSTM' else ''})``; values and gradients are the module's.")
    return f


_NN_NAMES = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}
lstm, gru, rnn_tanh, rnn_relu = (_recurrent(m) for m in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"))
