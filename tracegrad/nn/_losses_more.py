"""More of ``torch.nn.functional``'s losses, composed of tracegrad ops (autograd and
``tracegrad.compile`` for free): margin ranking, hinge embedding, cosine embedding, soft margin,
multilabel soft margin, multi margin, multilabel margin, Poisson and Gaussian NLL, triplet margin
with a distance function, and CTC (``_ctc.py``). Re-exported by ``functional.py``. Masks are
``where``/one-hot selections, never a Python read of tensor values (the few value checks torch
makes, such as a negative ``var``, run eagerly only)."""
from __future__ import annotations

import math

import tracegrad
from tracegrad import _autocast
from tracegrad import _state
from tracegrad._api import nn_functions as _F
from tracegrad._api.argcheck import _is_strict_bool, require_float, strict_error
from tracegrad._api.promotion import _SCALAR_NAME, check_past_f32, check_tensors

from . import _reduction
from ._vision_functional import pairwise_distance

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "triplet_margin_with_distance_loss", "ctc_loss"]


def _legacy(size_average, reduce, reduction, old_names=True):
    return _reduction.resolve(size_average, reduce, reduction, old_names=old_names)


def _reduce(loss, reduction, msg="{} is not a valid value for reduction"):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(msg.format(reduction))


def _zeros(x):
    return tracegrad.zeros_like(x)


def _relu(x):
    """``max(x, 0)`` with gradient 0 at 0 (torch's margin kernels use a strict ``> 0`` mask)."""
    return tracegrad.where(x > 0, x, _zeros(x))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.margin_ranking_loss``: ``max(0, -target * (input1 - input2) +
    margin)``, broadcast, then reduced. Raises RuntimeError when the three tensors differ in
    number of dims; ValueError for an unknown reduction."""
    input1, input2, target = _autocast.cast("fp32", "margin_ranking_loss", input1, input2, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    # torch's margin is a C++ double: integer inputs give a floating loss
    margin = float(require_float("margin_ranking_loss", "margin", margin, 4))
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.hinge_embedding_loss``: ``input`` where ``target == 1`` plus
    ``max(0, margin - input)`` where ``target == -1`` (torch's exact split: an element whose
    target is neither contributes both terms)."""
    input, target = _autocast.cast("fp32", "hinge_embedding_loss", input, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    margin = require_float("hinge_embedding_loss", "margin", margin, 3)
    if isinstance(input, tracegrad.Tensor):   # torch's checked conversion of margin (1e39)
        check_past_f32("hinge_embedding_loss", input.dtype, margin)
    else:   # a number failed at .clamp_min with Python's words: torch's parser refuses it
        check_tensors("hinge_embedding_loss", input)
    margin_clamp = (margin - input).clamp_min(0)
    if not (input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is tracegrad.bool):
        # torch keeps an integer input's dtype (the margin part truncated): 'mean' then refuses it
        margin_clamp = margin_clamp.to(input.dtype)
    out = (tracegrad.where(target != 1, margin_clamp, _zeros(margin_clamp))
           + tracegrad.where(target != -1, input, _zeros(input)))
    return _reduce(out, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.cosine_embedding_loss``: ``1 - cos(x1, x2)`` for
    ``target == 1``, ``max(0, cos - margin)`` for ``target == -1``; inputs ``(N, D)`` or ``(D)``,
    target ``(N)`` or ``()``. Raises RuntimeError for mismatched dims (as torch)."""
    input1, input2, target = _autocast.cast("fp32", "cosine_embedding_loss", input1, input2, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    # torch's parser: three Tensors (a number target failed at .dim() with Python's words)
    check_tensors("cosine_embedding_loss", input1, input2, target, names=("input1", "input2", "target"))
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError("cosine_embedding_loss: 1D target tensor expects 2D input tensors, but found inputs "
                           f"with sizes {list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError("cosine_embedding_loss: 0D target tensor expects 1D input tensors, but found inputs "
                           f"with sizes {list(input1.shape)} and {list(input2.shape)}.")
    margin = require_float("cosine_embedding_loss", "margin", margin, 4)
    d = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    denom = (((input1 * input1).sum(d) + eps) * ((input2 * input2).sum(d) + eps)).sqrt()
    cos = prod / denom
    pos = tracegrad.where(target == 1, 1 - cos, _zeros(cos))
    neg = tracegrad.where(target == -1, (cos - margin).clamp_min(0), _zeros(cos))
    return _reduce(pos + neg, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.soft_margin_loss``: ``log(1 + exp(-target * input))``,
    grad_fn ``SoftMarginLossBackward0``. As torch's kernel, the result has the input's shape and
    dtype (``target`` broadcasts to it).
    Raises: ValueError for an unknown ``reduction``; RuntimeError when ``target`` requires grad
    (torch has no gradient for it), when broadcasting would grow ``input``, or for an integer
    ``input`` (the loss is floating)."""
    input, target = _autocast.cast("fp32", "soft_margin_loss", input, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    # torch's parser: two Tensors (a number computed a loss, a list failed with Python's words)
    check_tensors("soft_margin_loss", input, target, names=("input", "target"))
    if target.requires_grad and tracegrad.is_grad_enabled():
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument "
                           "'target'. This input cannot have requires_grad True; pass target.detach()")
    shape = tracegrad.broadcast_shapes(input.shape, target.shape)
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}: soft_margin_loss writes a loss per input element")
    common = tracegrad.promote_types(input.dtype, target.dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        common = common if common.is_floating_point else tracegrad.get_default_dtype()
        raise RuntimeError(f"result type {_SCALAR_NAME[common.name]} can't be cast to the desired "
                           f"output type {_SCALAR_NAME[input.dtype.name]}; convert the input with "
                           ".float() first")
    if target.dtype is not input.dtype and (input.dtype.is_floating_point or input.dtype.is_complex):
        target = target.to(input.dtype)
    if tuple(target.shape) != tuple(input.shape):
        target = target.expand(input.shape)
    return _F._nn.soft_margin_loss(input, target, reduction)    # grad_fn SoftMarginLossBackward0


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.multilabel_soft_margin_loss``: per-class logistic loss,
    optionally weighted, averaged over the class (last) dim, then reduced over the batch."""
    reduction = _legacy(size_average, reduce, reduction, old_names=False)   # torch: no 'elementwise_mean'
    if not isinstance(reduction, str):   # torch's TypeError (it appends text to the value after the loss)
        raise TypeError(f"multilabel_soft_margin_loss(): reduction must be 'none', 'mean' or 'sum', not "
                        f"{type(reduction).__name__}")
    ls = tracegrad.nn.functional.logsigmoid
    loss = -(target * ls(input) + (1 - target) * ls(-input))
    if weight is not None:
        loss = loss * weight
    d = input.dim() - 1
    loss = loss.sum(dim=d) / input.size(d)
    return _reduce(loss, reduction, "{} is not valid")


def _check_class_input(name, input, target):
    check_tensors(name, input, target, names=("input", "target"))
    # torch's check: a 0-d input, a non-empty vector, or a matrix with classes (a 0-row batch passes);
    # an empty class dim used to reach reshape(-1, 0) and leak its ambiguity error
    if input.dim() > 2 or (input.dim() >= 1 and input.shape[-1] == 0):
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dtype not in (tracegrad.int64, tracegrad.int32, tracegrad.int16, tracegrad.int8, tracegrad.uint8):
        raise RuntimeError(f"{name}: expected target of an integer (class index) dtype, got {target.dtype}")


def _check_class_range(target, lo, hi, message):
    """torch's RuntimeError ``message`` for a class index outside ``[lo, hi)`` (one_hot's own text
    leaked before); checked when a compiled program runs, and not under a transform's tracer."""
    if _state.CAPTURE[0] is not None:
        _state.check_values(target, lambda t: (t < lo) | (t >= hi))
        return
    try:
        bad = bool(((target < lo) | (target >= hi)).any())
    except RuntimeError:   # a tracer: no values
        return
    if bad:
        raise RuntimeError(message)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Mirrors ``torch.nn.functional.multi_margin_loss``: for each sample ``sum over i != y of
    max(0, margin - x[y] + x[i])^p / C`` (times ``weight[y]``); input ``(N, C)`` or ``(C)``,
    int64 target ``(N)`` or ``()``. Raises ValueError for p not 1/2 or a weight that is not 1-D,
    RuntimeError for a weight of another length than C."""
    input, target, weight = _autocast.cast("fp32", "multi_margin_loss", input, target, weight)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    _reduction.get_enum(reduction)   # a bad name is torch's first error, before any on the inputs
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    p = require_float("multi_margin_loss", "p", p, 3, kind="Number")   # the parser's, first
    margin = require_float("multi_margin_loss", "margin", margin, 4, kind="Number")
    _check_class_input("multi_margin_loss", input, target)
    check_past_f32("multi_margin_loss", input.dtype, margin)   # torch's checked conversion (1e39)
    x = input.reshape(-1, input.shape[-1]) if input.dim() else input.reshape(1, 1)
    n, c = x.shape
    t = target.reshape(-1).long()
    if t.numel() != n or target.dim() > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"multi_margin_loss: inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}; give one weight per class")
    if target.dtype is not tracegrad.int64:   # torch's kernel reads int64 class indices only
        raise RuntimeError(f"expected scalar type Long but found {_SCALAR_NAME[target.dtype.name]} "
                           "(multi_margin_loss: convert the target with .long())")
    _check_class_range(t, 0, c, f"multi_margin_loss: target out of range; class indices must lie in [0, {c})")
    if isinstance(margin, complex):   # torch's Scalar takes it, then cannot make it the kernel's double
        raise RuntimeError(f"multi_margin_loss(): margin {margin} cannot be converted to type float without "
                           "overflow; pass a real number")
    # one op with torch's MultiMarginLossBackward0 node (a composite ended in MeanBackward0)
    return _F._nn.multi_margin_loss(input, target, p, margin, weight, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mirrors ``torch.nn.functional.multilabel_margin_loss``: ``target`` holds class indices per
    sample, padded with -1 (the first -1 ends the list); each sample's loss is
    ``sum over targets j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C``. Input and
    target ``(N, C)`` or ``(C)``."""
    input, target = _autocast.cast("fp32", "multilabel_margin_loss", input, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction)
    _reduction.get_enum(reduction)
    _check_class_input("multilabel_margin_loss", input, target)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    x = input.reshape(-1, input.shape[-1]) if input.dim() else input.reshape(1, 1)
    n, c = x.shape
    t = target.reshape(n, c).long()
    _check_class_range(t, -1, c, f"multilabel_margin_loss: argument #2 'target' is out of range; targets are "
                                 f"class indices in [0, {c}), padded with -1")
    # one op with torch's MultilabelMarginLossBackward0 node (a composite ended in MeanBackward0)
    return _F._nn.multilabel_margin_loss(input, target, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Mirrors ``torch.nn.functional.poisson_nll_loss``: ``exp(input) - target * input`` with
    ``log_input``, else ``input - target * log(input + eps)``; ``full`` adds the Stirling term
    ``target * log(target) - target + 0.5 * log(2 * pi * target)`` where ``target > 1``."""
    input, target = _autocast.cast("fp32", "poisson_nll_loss", input, target)   # torch's autocast op list
    reduction = _legacy(size_average, reduce, reduction, old_names=False)   # torch: no 'elementwise_mean'
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    check_tensors("poisson_nll_loss", input, target, names=("input", "target"))   # the parser: TypeError for a list
    for pos, (name, flag) in enumerate((("log_input", log_input), ("full", full)), 3):
        if not _is_strict_bool(flag):   # the parser takes only a bool (a str or None was read for its truth)
            raise strict_error("poisson_nll_loss", name, "bool", flag, pos)
    eps = require_float("poisson_nll_loss", "eps", eps, 5)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = tracegrad.where(target > 1, target, tracegrad.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + tracegrad.where(target > 1, stirling, _zeros(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Mirrors ``torch.nn.functional.gaussian_nll_loss``: ``0.5 * (log(var) + (input - target)^2 /
    var)`` (+ ``0.5 * log(2 pi)`` with ``full``), ``var`` clamped to ``eps`` without gradient
    through the clamp. ``var`` may be a float, the input's shape, the input's shape less the last
    dim, or broadcastable with one mismatched size. Raises ValueError for a negative var (inside
    ``tracegrad.compile`` checked when the program runs), a var of another size, or an unknown
    reduction."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * tracegrad.ones_like(input)
    elif not isinstance(var, tracegrad.Tensor):   # torch takes a float or a Tensor (an int: TypeError)
        raise TypeError(f"gaussian_nll_loss(): var must be a Tensor or a float, not {type(var).__name__}; "
                        f"pass float(var) or a tensor")
    elif tracegrad.compiler._tracing():
        # inside tracegrad.compile: checked when the program runs (a negative entry makes that
        # call run eagerly, raising here); NOTE [value checks at run time]
        _state.check_values(var, lambda t: t < 0)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    check_past_f32("gaussian_nll_loss", var.dtype, eps)   # torch's checked conversion of eps (1e39)
    var = var.clone()
    with tracegrad.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """Mirrors ``torch.nn.functional.triplet_margin_with_distance_loss``: ``max(0, margin +
    d(a, p) - d(a, n))`` with ``distance_function`` (default ``pairwise_distance``); ``swap``
    uses ``min(d(a, n), d(p, n))``. Raises ValueError for an unknown reduction or ``margin <= 0``;
    RuntimeError when the three inputs differ in number of dims; TypeError when
    ``distance_function`` returns something else than a Tensor."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p and p == n):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = tracegrad.minimum(d_neg, _distance_tensor(dist(positive, negative)))
    _distance_tensor(d_pos), _distance_tensor(d_neg)
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _distance_tensor(d):
    # torch's clamp_min/minimum take only a Tensor: a distance_function returning a number, a list
    # or None is a TypeError there (not an AttributeError of the number)
    if not isinstance(d, tracegrad.Tensor):
        raise TypeError("triplet_margin_with_distance_loss: distance_function must return a Tensor of "
                        f"distances, got {type(d).__name__}")
    return d


def _lengths(x, n, name):
    # torch refuses float lengths (a tensor: RuntimeError; a list: no int overload, TypeError)
    # rather than truncating them
    if isinstance(x, tracegrad.Tensor):
        if x.dtype.is_floating_point or x.dtype.is_complex:
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {x.dtype}; pass an integer tensor")
        t = x.long()
    else:
        vals = list(x) if isinstance(x, (list, tuple)) else [x]
        if not all(isinstance(v, int) or (isinstance(v, tracegrad.Tensor) and not v.dtype.is_floating_point)
                   for v in vals):
            raise TypeError(f"ctc_loss(): {name} must be a tuple of ints, got {vals}")
        t = tracegrad.tensor([int(v) for v in vals], dtype=tracegrad.long)
    t = t.reshape(-1)
    if t.numel() != n:
        raise RuntimeError(f"ctc_loss: expected {name} to have {n} entries (one per batch element), got "
                           f"{t.numel()}")
    return t


def _check_ctc_lengths(in_len, tg_len, t_max, s_max):
    """torch's length checks: one host read of the lengths, eagerly only (inside
    ``tracegrad.compile`` the lengths are program values and are not checked)."""
    if tracegrad.compiler._tracing():
        return
    for name, lens in (("input_lengths", in_len), ("target_lengths", tg_len)):
        low = int(lens.min()) if lens.numel() else 0
        if low < 0:
            raise RuntimeError(f"ctc_loss: expected {name} to have value at least 0, but got value {low}; lengths "
                               "count time steps / target labels")
    top = int(in_len.max()) if in_len.numel() else 0
    if top > t_max:
        raise RuntimeError(f"ctc_loss: expected input_lengths to have value at most {t_max}, but got value {top}")
    top = int(tg_len.max()) if tg_len.numel() else 0
    if top > s_max:
        raise RuntimeError(f"ctc_loss: a target length {top} is longer than the targets' size {s_max} at dimension "
                           f"1; pad targets to the longest target")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Mirrors ``torch.nn.functional.ctc_loss``: connectionist temporal classification.

    ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``) log-probabilities (``log_softmax``);
    ``targets`` padded ``(N, S)`` or all targets concatenated 1-D (``sum(target_lengths)``);
    ``input_lengths``/``target_lengths`` ``(N,)`` tensors or lists of ints. ``reduction='mean'``
    divides each sample's loss by its target length (at least 1) then averages over the batch;
    ``zero_infinity`` zeroes infinite losses (impossible alignments) and their gradients.
    The recursion is one op with a JAX-derived backward (``_ops/nn_ops.py``); as torch, the
    gradient given to ``log_probs`` is ``exp(log_probs) - posterior`` (right for the logits
    behind a ``log_softmax``). Raises RuntimeError for a bad layout or a blank outside
    ``[0, C)`` or negative lengths or lengths beyond ``T``/``S`` or concatenated targets of
    another length than ``sum(target_lengths)`` (checked eagerly only); ValueError
    for an unknown reduction; NotImplementedError for log_probs other than float32/float64."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    for name, v in (("log_probs", log_probs), ("targets", targets)):   # torch's parser: Tensors
        if not isinstance(v, tracegrad.Tensor):
            raise TypeError(f"ctc_loss(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if not _is_strict_bool(zero_infinity):   # torch's parser takes only a bool
        raise strict_error("ctc_loss", "zero_infinity", "bool", zero_infinity, 7)
    if isinstance(input_lengths, tracegrad.Tensor) != isinstance(target_lengths, tracegrad.Tensor):
        raise TypeError("ctc_loss(): input_lengths and target_lengths must both be tensors or both be lists/tuples "
                        "of ints")
    if log_probs.numel() == 0:   # torch's first kernel check (the op failed on its empty shapes)
        raise RuntimeError("ctc_loss: log_probs tensor must not be empty; pass at least one time step, sample "
                           "and class")
    if log_probs.dtype not in (tracegrad.float32, tracegrad.float64):
        # torch's CPU kernel is float32/float64 only
        raise NotImplementedError(f"ctc_loss: \"ctc_loss_cpu\" not implemented for '{log_probs.dtype._scalar_name}'; "
                                  "pass float32 or float64 log-probabilities (e.g. log_probs.float())")
    unbatched = log_probs.dim() == 2
    if log_probs.dim() not in (2, 3):
        raise RuntimeError("ctc_loss: expected log_probs to be (T, N, C) or unbatched (T, C), got "
                           f"{list(log_probs.shape)}")
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    n, c = log_probs.shape[1], log_probs.shape[2]
    if not 0 <= blank < c:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {c}), got {blank}")
    in_len = _lengths(input_lengths, n, "input_lengths")
    tg_len = _lengths(target_lengths, n, "target_lengths")
    if targets.dim() == 1:                      # concatenated: gather each sample's run into a padded row
        total = targets.numel()
        if not tracegrad.compiler._tracing() and int(tg_len.sum()) != total:   # (one host read, eagerly)
            raise RuntimeError(f"ctc_loss: Expected tensor to have size {int(tg_len.sum())} at dimension 0, but got "
                               f"size {total} for argument #2 'targets': concatenated targets hold "
                               f"sum(target_lengths) labels")
        offsets = tg_len.cumsum(0) - tg_len
        idx = (offsets.unsqueeze(1) + tracegrad.arange(max(total, 1)).unsqueeze(0)).clamp(0, max(total - 1, 0))
        targets = targets[idx] if total else tracegrad.zeros((n, 0), dtype=tracegrad.long)
    elif targets.dim() != 2 or targets.shape[0] != n:
        raise RuntimeError(f"ctc_loss: expected targets (N, S) padded or 1-D concatenated with N={n}, got "
                           f"{list(targets.shape)}")
    _check_ctc_lengths(in_len, tg_len, log_probs.shape[0], targets.shape[1])
    loss = _F._nn.ctc_loss(log_probs, targets.long(), in_len, tg_len, blank, zero_infinity)
    if zero_infinity:
        # torch then replaces infinite losses with where(loss == inf, 0, loss): the op has zeroed them
        # (and their gradients) already, but the WhereBackward0 node is part of torch's graph
        loss = tracegrad.where(loss == float("inf"), tracegrad.zeros((), dtype=loss.dtype), loss)
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        return (loss / tg_len.clamp_min(1).to(loss.dtype).reshape(loss.shape)).mean()
    return _reduce(loss, reduction)
