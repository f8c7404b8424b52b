"""Optimizer update rules as small functions over tracegrad Tensors (STYLE 4).

Each function updates one parameter and its state tensors in place, the way torch's
``_single_tensor_<name>`` loops do, op for op, so values agree with torch eager. Call them
under ``tracegrad.no_grad()`` (the optimizer classes do). See NOTE [traceable step] in
``optimizer.py``: Python ``if`` only on hyperparameters and ``None``; the step counter and
everything derived from it (bias corrections, Adagrad's decayed lr) are tensors.

Precision: torch computes bias corrections in Python floats (float64) from ``step.item()``;
here they are float64 0-d tensors computed from the float32 step tensor, which gives the same
float64 values (step counts are exact in float32). They enter float32 math the way a Python
scalar does in torch: cast to the parameter's dtype (0-d tensors do not promote).
"""
from __future__ import annotations

import math

from .. import Tensor, float64, is_grad_enabled, sparse_coo_tensor, stack, where

__all__ = ["sgd_step", "adam_step", "adam_bias_corrections", "rmsprop_step", "adagrad_step", "adadelta_step", "adamax_step",
           "nadam_step", "radam_step", "rprop_step", "asgd_step", "adafactor_step", "muon_step",
           "sparse_adam_step",
           # torch's functional forms
           "adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "nadam", "radam", "rmsprop", "rprop", "sgd",
           "sparse_adam"]


def _scalar(x):
    """A hyperparameter as a Python number or a 0-d Tensor (torch's ``_to_scalar``)."""
    return x.reshape(()) if isinstance(x, Tensor) and x.ndim != 0 else x


def _like_lr(value, lr):
    """torch computes lr-derived scalars in lr's dtype when lr is a Tensor."""
    return value.to(lr.dtype) if isinstance(lr, Tensor) else value


def _add_scaled_(param, t, lr):
    """``param -= lr * t`` in place. A Tensor ``lr`` (0-d, e.g. lifted for compilation) is
    multiplied as a tensor, never read back as a Python number; the product rounds like torch's
    ``add_(t, alpha=-lr)`` (lr cast to param's dtype, then one multiply and one add)."""
    if isinstance(lr, Tensor):
        return param.sub_(t * lr)
    return param.add_(t, alpha=-lr)


def _add_alpha(t, other, alpha):
    """``t.add(other, alpha=alpha)``; a 0-d Tensor ``alpha`` (a hyper-parameter lifted for
    compilation) multiplies as a tensor, rounding like the scalar (cast to t's dtype, one
    multiply, one add)."""
    if isinstance(alpha, Tensor):
        return t.add(other * alpha)
    return t.add(other, alpha=alpha)


def _weight_decay(param, grad, lr, weight_decay, decoupled=False):
    """Weight decay, one rule for every optimizer: L2 returns ``grad + weight_decay * param``;
    ``decoupled`` (AdamW, NAdam/RAdam option) instead shrinks ``param`` in place by
    ``1 - lr * weight_decay`` and returns ``grad`` unchanged."""
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        elif isinstance(weight_decay, Tensor) and weight_decay.requires_grad:
            # differentiable=True with a tensor weight_decay: a product autograd tracks (torch's
            # differentiable branch; ``alpha=`` reads it as a number)
            grad = grad.add(param.clone() * weight_decay)   # a clone: param changes in place next
        else:
            grad = grad.add(param, alpha=weight_decay)
    return grad


def sgd_step(param, grad, momentum_buffer, *, lr, momentum, dampening, nesterov, weight_decay,
             maximize):
    """One SGD update of ``param`` in place. Mirrors torch's ``_single_tensor_sgd``.

    Args: param, grad: Tensors of one shape/dtype; momentum_buffer: Tensor or None (None on
        the first step: the buffer starts as a clone of the (decayed) gradient, as torch).
    Returns: the momentum buffer (a new tensor on the first step), or None when momentum == 0.
    """
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    grad = _weight_decay(param, grad, lr, weight_decay)
    buf = momentum_buffer
    if momentum != 0:
        if buf is None:
            buf = grad.detach().clone()
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = _add_alpha(grad, buf, momentum) if nesterov else buf
    _add_scaled_(param, grad, lr)
    return buf


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step_size, inv_bias_correction2_sqrt, *,
              lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay=False):
    """One Adam/AdamW update in place, after the step count's increment. Mirrors torch's
    ``_single_tensor_adam`` (eager path).

    Args: param, grad, exp_avg, exp_avg_sq: Tensors of one shape; max_exp_avg_sq: Tensor when
        ``amsgrad`` else None; step_size, inv_bias_correction2_sqrt: 0-d tensors from
        ``adam_bias_corrections``. ``decoupled_weight_decay=True`` is AdamW
        (``param *= 1 - lr * weight_decay``).
    """
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    grad = _weight_decay(param, grad, lr, weight_decay, decoupled_weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    if amsgrad:
        prev = max_exp_avg_sq.clone() if is_grad_enabled() else max_exp_avg_sq   # as exp_avg below
        max_exp_avg_sq.copy_(prev.maximum(exp_avg_sq))
        denom = (max_exp_avg_sq.sqrt() * inv_bias_correction2_sqrt).add_(eps)
    else:
        denom = (exp_avg_sq.sqrt() * inv_bias_correction2_sqrt).add_(eps)
    # differentiable=True (grad mode on in step): as torch, divide a clone, since the next
    # step's lerp_ writes exp_avg in place while this step's node still needs its value
    ea = exp_avg.clone() if is_grad_enabled() else exp_avg
    if isinstance(step_size, Tensor) and step_size.requires_grad:
        # a differentiable lr: value= binds numbers and grad-free 0-d tensors only (torch's parser),
        # so fold the step size into the divisor, as torch's differentiable branch does
        param.addcdiv_(ea, denom / -step_size)
    else:
        param.addcdiv_(ea, denom, value=-step_size)


# NOTE [group scalars]
# torch's single-tensor rules derive per-step scalars (Adam's bias corrections) from each
# parameter's step count, as Python floats. Here they are float64 tensors (module docstring).
# Computed parameter by parameter they are a chain of scalar ops per parameter, which a
# compiled step runs as that many tiny XLA:CPU kernels (the digits MLP's AdamW step: 12, some
# 50 us of a 0.6 ms step). So a group's step tensors are stacked once and each derived scalar
# is one vector op for the whole group; each parameter reads its element. The numbers are the
# same float64 values, elementwise; eagerly it is also fewer ops. Torch divides by
# ``sqrt(bias_correction2)``; XLA:CPU computes ``a / scalar`` as ``a * (1 / scalar)`` in the
# parameter's dtype (measured: bit for bit), so that reciprocal is taken here once per group,
# in that dtype, giving the bits the per-parameter division gave.
def _stacked(steps):
    t = steps[0] if len(steps) == 1 else stack(steps)
    # a copy even of a float64 step: pow saves it, and the next step increments it in place
    return t.to(float64, copy=True)


def _each(v, n, dtype):
    # cast once for the group: the parameter's op casts a 0-d operand to its own dtype first
    if dtype is not None:
        v = v.to(dtype)
    return (v,) if n == 1 else v.unbind(0)


def fused_adam_step_low(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, *, lr, beta1, beta2, eps,
                        weight_decay, amsgrad, maximize, decoupled_weight_decay=False):
    """One ``fused=True`` Adam/AdamW update of a float16/bfloat16 parameter in place, after the
    step count's increment, as torch's fused CPU kernel computes it.

    NOTE [fused Adam on float16/bfloat16]: torch's fused kernel reads param, grad and both
    moments as float32, applies weight decay, the ``lerp`` of ``exp_avg``, ``exp_avg_sq * beta2 +
    (1 - beta2) * grad * grad``, ``denom = sqrt(v) / sqrt(1 - beta2**step) + eps`` and ``param -
    step_size * m / denom`` in float32 with the bias corrections in float64, and rounds each
    tensor once on store; the update reads the unrounded moments. The single-tensor path
    (``adam_step``) rounds every in-place op to 16 bits: a bfloat16 AdamW's ``exp_avg_sq``
    differed from torch's in a third of its values after five steps, its parameters in one in
    twenty.

    Args: as ``adam_step``; ``step``: the float32 0-d step count (incremented).
    """
    lr = _scalar(lr)
    low = param.dtype
    p, g = param.float(), grad.float()
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + p * weight_decay
    m = exp_avg.float().lerp(g, 1 - beta1)
    v = exp_avg_sq.float() * beta2 + (1 - beta2) * g * g
    t = step.to(float64)
    step_size = (lr / (1 - beta1 ** t)).float()
    bias_correction2_sqrt = (1 - beta2 ** t).sqrt().float()
    if amsgrad:
        v_max = max_exp_avg_sq.float().maximum(v)
        max_exp_avg_sq.copy_(v_max.to(low))
        denom = v_max.sqrt() / bias_correction2_sqrt + eps
    else:
        denom = v.sqrt() / bias_correction2_sqrt + eps
    exp_avg.copy_(m.to(low))
    exp_avg_sq.copy_(v.to(low))
    param.copy_((p - step_size * m / denom).to(low))


def adam_bias_corrections(steps, lr, beta1, beta2, dtypes):
    """Adam's ``step_size = lr / (1 - beta1**step)`` and ``1 / sqrt(1 - beta2**step)`` for each
    of ``steps`` (float32 0-d tensors, already incremented), as two tuples of 0-d tensors
    (NOTE [group scalars]); step_size in lr's dtype when lr is a Tensor. ``dtypes``: the dtype
    of each parameter they will scale (both come in it)."""
    lr = _scalar(lr)
    t = _stacked(steps)
    bias_correction1 = 1 - beta1 ** t
    bias_correction2 = 1 - beta2 ** t
    step_size = _like_lr(lr / bias_correction1, lr)
    n, common = len(steps), (dtypes[0] if len(set(dtypes)) == 1 else None)
    sqrt = bias_correction2.sqrt()
    if common is not None:
        return _each(step_size, n, common), _each(1 / sqrt.to(common), n, None)
    sqrts = _each(sqrt, n, None)
    return _each(step_size, n, None), tuple(1 / s.to(d) for s, d in zip(sqrts, dtypes))


def rmsprop_step(param, grad, square_avg, grad_avg, momentum_buffer, step, *, lr, alpha, eps,
                 weight_decay, momentum, centered, maximize):
    """One RMSprop update in place. Mirrors torch's ``_single_tensor_rmsprop``.

    Args: grad_avg: Tensor when ``centered`` else None; momentum_buffer: Tensor when
        ``momentum > 0`` else None; step: float32 0-d tensor, incremented here.
    """
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    grad = _weight_decay(param, grad, lr, weight_decay)
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if centered:
        grad_avg.lerp_(grad, 1 - alpha)
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = square_avg.sqrt()
    avg = avg.add(eps)   # out of place: sqrt saved its result (differentiable=True backpropagates)
    if momentum > 0:
        momentum_buffer.mul_(momentum).addcdiv_(grad, avg)
        _add_scaled_(param, momentum_buffer, lr)
    else:
        param.addcdiv_(grad, avg, value=-lr)


def adagrad_step(param, grad, state_sum, step, *, lr, lr_decay, eps, weight_decay, maximize):
    """One Adagrad update in place. Mirrors torch's ``_single_tensor_adagrad``, its sparse
    branch included (a sparse COO ``grad`` updates only the rows it holds; eager only).

    The decayed rate ``lr / (1 + (step - 1) * lr_decay)`` is a float64 0-d tensor from ``step``.
    Raises: RuntimeError for weight decay with a sparse gradient (torch's message).
    """
    lr = _scalar(lr)
    step.add_(1)
    if maximize:
        grad = -grad
    if weight_decay != 0 and grad.is_sparse:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    grad = _weight_decay(param, grad, lr, weight_decay)
    clr = _like_lr(lr / (1 + (step.to(float64) - 1) * lr_decay), lr)
    if grad.is_sparse:
        grad = grad.coalesce()     # the update is not linear in the gradient: one entry per row
        indices, values = grad._indices(), grad._values()
        state_sum.add_(sparse_coo_tensor(indices, values.pow(2), grad.size()))
        std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
        _add_scaled_(param, sparse_coo_tensor(indices, values / std_values, grad.size()), clr)
        return
    state_sum.addcmul_(grad, grad, value=1)
    std = state_sum.sqrt().add(eps)   # out of place: sqrt saved its result
    param.addcdiv_(grad, std, value=-clr)


def adadelta_step(param, grad, square_avg, acc_delta, step, *, lr, rho, eps, weight_decay, maximize):
    """One Adadelta update in place. Mirrors torch's ``_single_tensor_adadelta``."""
    lr = _scalar(lr)
    step.add_(1)
    if maximize:
        grad = -grad
    grad = _weight_decay(param, grad, lr, weight_decay)
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_()
    delta = delta.div(std).mul(grad)   # out of place: sqrt_ saved its result
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    _add_scaled_(param, delta, lr)


def adamax_step(param, grad, exp_avg, exp_inf, step, *, lr, beta1, beta2, eps, weight_decay,
                maximize):
    """One Adamax update in place. Mirrors torch's ``_single_tensor_adamax``; the bias
    correction is a float64 0-d tensor from ``step``."""
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    grad = _weight_decay(param, grad, lr, weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    # out of place before the copy: maximum saves its inputs (differentiable=True backpropagates)
    exp_inf.copy_(exp_inf.mul(beta2).maximum(grad.abs().add_(eps)))
    clr = _like_lr(lr / (1 - beta1 ** step.to(float64)), lr)
    param.addcdiv_(exp_avg, exp_inf, value=-clr)


def nadam_step(param, grad, exp_avg, exp_avg_sq, mu_product, step, *, lr, beta1, beta2, eps,
               weight_decay, momentum_decay, maximize, decoupled_weight_decay=False):
    """One NAdam update in place. Mirrors torch's ``_single_tensor_nadam``. ``mu_product`` is
    the float32 0-d running product of the momentum schedule (updated here, in float32 as
    torch); mu and mu_next are float64 0-d tensors from ``step``."""
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    t = step.to(float64)
    bias_correction2 = 1 - beta2 ** t
    grad = _weight_decay(param, grad, lr, weight_decay, decoupled_weight_decay)
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * momentum_decay)))
    mu_product.mul_(mu.to(mu_product.dtype))    # torch: float32 tensor *= Python float
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = exp_avg_sq.div(bias_correction2).sqrt()
    denom = denom.add(eps)   # out of place: sqrt saved its result
    if mu_product.requires_grad:
        # differentiable=True: the factors multiply the tensors, so that autograd tracks
        # mu_product (torch's differentiable branch); the value= form reads it as a number
        mu_product_next = mu_product * mu_next
        param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
        param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
        return
    mp = mu_product.to(float64)
    mu_product_next = mp * mu_next
    param.addcdiv_(grad, denom, value=_like_lr(-lr * (1.0 - mu) / (1.0 - mp), lr))
    param.addcdiv_(exp_avg, denom, value=_like_lr((-lr * mu_next) / (1.0 - mu_product_next), lr))


def radam_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, beta1, beta2, eps, weight_decay,
               maximize, decoupled_weight_decay=False):
    """One RAdam update in place. Mirrors torch's ``_single_tensor_radam``. torch branches in
    Python on ``rho_t > 5``; here both updates are computed and ``where`` picks one, so the
    step stays traceable (the unused branch may hold NaN; it is never selected)."""
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    t = step.to(float64)
    grad = _weight_decay(param, grad, lr, weight_decay, decoupled_weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** t
    bias_correction2 = 1 - beta2 ** t
    bias_corrected_exp_avg = exp_avg / bias_correction1
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * (beta2 ** t) / bias_correction2
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).sqrt()
    # torch's ``float / tensor`` is ``tensor.reciprocal() * float``: same rounding here
    adaptive_lr = exp_avg_sq.sqrt().add(eps).reciprocal() * bias_correction2.sqrt()
    plain = bias_corrected_exp_avg * lr
    param.sub_(where(rho_t > 5.0, plain * adaptive_lr * rect, plain))


def rprop_step(param, grad, prev, step_size, step, *, etaminus, etaplus, step_size_min,
               step_size_max, maximize):
    """One Rprop update in place. Mirrors torch's ``_single_tensor_rprop``: the per-element step
    size grows by ``etaplus`` where the gradient kept its sign, shrinks by ``etaminus`` where it
    flipped (and that gradient is then zeroed), and is clamped to the step size range."""
    if maximize:
        grad = -grad
    step.add_(1)
    s = grad.mul(prev).sign()
    # the factors in grad's dtype (a float64 parameter gets 1.2, not float32's 1.2)
    factor = where(s > 0, s.new_tensor(etaplus), where(s < 0, s.new_tensor(etaminus), s.new_tensor(1.0)))
    step_size.mul_(factor).clamp_(step_size_min, step_size_max)
    grad = where(factor == factor.new_tensor(etaminus), 0.0, grad).to(grad.dtype)
    param.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)


def asgd_step(param, grad, ax, eta, mu, step, *, lr, lambd, alpha, t0, weight_decay, maximize):
    """One ASGD update in place. Mirrors torch's ``_single_tensor_asgd``; ``eta`` and ``mu`` are
    float32 0-d tensors (the new values are computed in float64 from ``step``, as torch's Python
    floats, then stored in float32); ``ax`` is the running average of the parameter."""
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    t = step.to(float64)
    if weight_decay != 0:
        grad = _add_alpha(grad, param, weight_decay)
    # eta and mu as values (torch reads them with .item()): copies, so that the copy_ below does
    # not change what this step's graph saved
    eta64 = eta.detach().to(float64, copy=True)
    mu_now = mu.detach().clone()
    param.mul_((1 - lambd * eta64).to(param.dtype))
    param.sub_(grad * eta64.to(param.dtype))
    ax.copy_(where(mu_now == 1, param, ax.add(param.sub(ax).mul(mu_now.to(param.dtype)))))
    eta.copy_(lr / ((1 + lambd * lr * t) ** alpha))
    mu.copy_(1 / (t - t0).clamp(min=1))


def adafactor_step(param, grad, row_var, col_var, variance, step, *, lr, beta2_decay, eps1, eps2,
                   d, weight_decay, maximize):
    """One Adafactor update in place. Mirrors torch's ``_single_tensor_adafactor``.

    Args: row_var ``(..., m, 1)`` and col_var ``(..., 1, n)``: the factored second moments of a
        gradient of >= 2 dims (``variance`` None); else ``variance`` like param (the others None).
        eps1: a float (the caller resolves torch's None to the dtype's machine eps).
    torch reads ``step``, ``param.norm()`` and ``update.norm()`` back as Python floats and takes
    ``min``/``max`` of them; here they stay float64 0-d tensors (``clamp``), the same values,
    so the step is traceable.
    """
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    t = step.to(float64)
    one_minus_beta2_t = (t ** beta2_decay).to(param.dtype)     # torch's lerp casts its weight so
    rho_t = (t ** 0.5).reciprocal()
    rho_t = rho_t.minimum(lr.to(float64)) if isinstance(lr, Tensor) else rho_t.clamp(max=lr)
    numel_sqrt = param.numel() ** 0.5
    alpha = (param.norm(2).to(float64) / numel_sqrt).clamp(min=eps2) * rho_t
    if weight_decay != 0:
        param.mul_(1 - lr * weight_decay)
    if grad.dim() > 1:
        # (g * g).mean over the last / second-to-last dim, computed as torch does (a norm)
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2_t)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2_t)
        var_estimate = row_var @ col_var
        var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    else:
        variance.lerp_(grad * grad, one_minus_beta2_t)
        var_estimate = variance.clone()
    update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
    update.mul_(grad)
    denom = (update.norm(2).to(float64) / (update.numel() ** 0.5 * d)).clamp(min=1.0)
    _add_scaled_(param, update, (alpha / denom).to(param.dtype))


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """Muon's orthogonalization of a 2-D ``grad``: ``ns_steps`` quintic Newton-Schulz
    iterations in bfloat16 on the wide orientation (as torch's ``_zeropower_via_newtonschulz``).
    Returns a bfloat16 Tensor of grad's shape.

    Raises: ValueError (torch's messages) for ns_steps >= 100, a non-2-D grad, or not exactly
    three coefficients.
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        x = x.addmm(gram.addmm(gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def muon_lr_ratio(adjust_lr_fn, shape):
    """Muon's learning-rate scale for a ``(A, B)`` parameter: ``sqrt(max(1, A/B))`` for None or
    ``"original"``, ``0.2 * sqrt(max(A, B))`` for ``"match_rms_adamw"`` (torch's ``_adjust_lr``)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return max(1, rows / cols) ** 0.5
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * max(rows, cols) ** 0.5
    return 1.0


def muon_step(param, grad, momentum_buffer, *, lr, weight_decay, momentum, nesterov,
              ns_coefficients, ns_steps, eps, adjust_lr_fn):
    """One Muon update of a 2-D ``param`` in place. Mirrors torch's ``_single_tensor_muon``:
    momentum (Nesterov by default), Newton-Schulz orthogonalization, decoupled weight decay,
    a shape-adjusted lr. Raises ValueError for a gradient that is not 2-D (torch's message)."""
    lr = _scalar(lr)
    if grad.dim() != 2:
        raise ValueError("Param gradient must be a 2D matrix")
    momentum_buffer.lerp_(grad, 1 - momentum)
    update = grad.lerp(momentum_buffer, momentum) if nesterov else momentum_buffer
    update = zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
    param.mul_(1 - lr * weight_decay)
    # torch adds the bfloat16 update in the parameter's dtype (a 0-d Tensor lr must not pull the
    # product down to bfloat16: the cast first, which is exact)
    _add_scaled_(param, update.to(param.dtype), lr * muon_lr_ratio(adjust_lr_fn, param.shape))


def sparse_adam_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, beta1, beta2, eps, maximize):
    """One SparseAdam update in place. Mirrors torch's ``_functional.sparse_adam``: Adam on the
    rows a sparse COO ``grad`` holds (coalesced first); ``step`` is the Python int count after
    this step's increment. Eager only (the rows are found on the host)."""
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    if values.numel() == 0:
        return
    size = grad.size()

    def rows(v):
        return sparse_coo_tensor(indices, v, size)
    old_exp_avg = exp_avg.sparse_mask(grad)._values()
    exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg.add_(rows(exp_avg_update))
    old_exp_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg_sq.add_(rows(exp_avg_sq_update))
    numer = exp_avg_update.add_(old_exp_avg)
    denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param.add_(rows(-step_size * numer.div_(denom)))


# ---------------------------------------------------------------------------------------------
# torch's functional optimizer forms (``torch.optim._functional.adam``, also importable as
# ``torch.optim.adam.adam`` ...): lists of parameters, gradients and state tensors, updated in
# place, one parameter at a time with the rules above (values as torch's for-loop path). The
# ``foreach``/``fused``/``capturable`` switches choose torch kernels; tracegrad has one
# implementation, so they are accepted and computed the same way.

def _check_steps(name, state_steps):
    from .. import compiler
    if not compiler.is_compiling() and not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError(f"{name}: API has changed, `state_steps` argument must contain a list of singleton "
                           "tensors (e.g. tracegrad.tensor(0.0) per parameter)")


def _no_scaler(name, grad_scale, found_inf):
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError(f"{name}: grad_scale and found_inf (torch's fused path) are not supported by "
                           "tracegrad's functional form; unscale the gradients first (GradScaler.unscale_) "
                           "and pass grad_scale=None, found_inf=None")


def _real(*ts):
    """A complex parameter's tensors as real views (torch's ``_view_as_real`` per parameter);
    None entries stay None."""
    from .. import view_as_real
    if ts[0].is_complex():
        return tuple(None if t is None else view_as_real(t) for t in ts)
    return ts


def _adam_each(name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, grad_scale,
               found_inf, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize, decoupled):
    _check_steps(name, state_steps)
    _no_scaler(name, grad_scale, found_inf)
    for i, param in enumerate(params):
        step = state_steps[i]
        max_sq = max_exp_avg_sqs[i] if amsgrad else None
        p, g, m, v, mx = _real(param, grads[i], exp_avgs[i], exp_avg_sqs[i], max_sq)
        step.add_(1)
        (step_size,), (inv_bc2,) = adam_bias_corrections([step], lr, beta1, beta2, [p.dtype])
        adam_step(p, g, m, v, mx, step_size, inv_bc2, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                  weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                  decoupled_weight_decay=decoupled)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Mirrors ``torch.optim._functional.adam`` (``torch.optim.adam.adam``): one Adam step over
    the lists, in place; each ``state_steps`` tensor is incremented first (RuntimeError when
    they are not tensors). ``decoupled_weight_decay=True`` is AdamW."""
    _adam_each("adam", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, grad_scale, found_inf,
               amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
               maximize=maximize, decoupled=decoupled_weight_decay)


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
          differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False, *, amsgrad,
          beta1, beta2, lr, weight_decay, eps, maximize):
    """Mirrors ``torch.optim._functional.adamw`` (``torch.optim.adamw.adamw``): ``adam`` with
    decoupled weight decay (``param *= 1 - lr * weight_decay``)."""
    _adam_each("adamw", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, grad_scale,
               found_inf, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
               eps=eps, maximize=maximize, decoupled=True)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """Mirrors ``torch.optim._functional.sgd`` (``torch.optim.sgd.sgd``): one SGD step in place;
    a ``None`` entry of ``momentum_buffer_list`` is replaced in the list by the new buffer (the
    first step's clone of the gradient), as torch."""
    _no_scaler("sgd", grad_scale, found_inf)
    for i, param in enumerate(params):
        buf = sgd_step(param, d_p_list[i], momentum_buffer_list[i], lr=lr, momentum=momentum,
                       dampening=dampening, nesterov=nesterov, weight_decay=weight_decay, maximize=maximize)
        if momentum != 0:
            momentum_buffer_list[i] = buf


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None,
            maximize=False, differentiable=False, capturable=False, has_complex=False, *, lr, alpha, eps,
            weight_decay, momentum, centered):
    """Mirrors ``torch.optim._functional.rmsprop``: one RMSprop step in place (``grad_avgs``
    read when ``centered``, ``momentum_buffer_list`` when ``momentum > 0``)."""
    _check_steps("rmsprop", state_steps)
    for i, param in enumerate(params):
        ga = grad_avgs[i] if centered else None
        mb = momentum_buffer_list[i] if momentum > 0 else None
        p, g, sq, ga, mb = _real(param, grads[i], square_avgs[i], ga, mb)
        rmsprop_step(p, g, sq, ga, mb, state_steps[i], lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                     momentum=momentum, centered=centered, maximize=maximize)


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    """Mirrors ``torch.optim._functional.adagrad``: one Adagrad step in place (sparse COO
    gradients update only their rows)."""
    _check_steps("adagrad", state_steps)
    _no_scaler("adagrad", grad_scale, found_inf)
    for i, param in enumerate(params):
        p, g, s = (param, grads[i], state_sums[i]) if grads[i].is_sparse else _real(param, grads[i], state_sums[i])
        adagrad_step(p, g, s, state_steps[i], lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                     maximize=maximize)


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    """Mirrors ``torch.optim._functional.adadelta``: one Adadelta step in place."""
    _check_steps("adadelta", state_steps)
    for i, param in enumerate(params):
        p, g, sq, ad = _real(param, grads[i], square_avgs[i], acc_deltas[i])
        adadelta_step(p, g, sq, ad, state_steps[i], lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                      maximize=maximize)


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, has_complex=False, *, eps, beta1, beta2, lr, weight_decay):
    """Mirrors ``torch.optim._functional.adamax``: one Adamax step in place."""
    _check_steps("adamax", state_steps)
    for i, param in enumerate(params):
        p, g, m, u = _real(param, grads[i], exp_avgs[i], exp_infs[i])
        adamax_step(p, g, m, u, state_steps[i], lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                    weight_decay=weight_decay, maximize=maximize)


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False,
          foreach=None, capturable=False, differentiable=False, has_complex=False, maximize=False, *, beta1,
          beta2, lr, weight_decay, momentum_decay, eps):
    """Mirrors ``torch.optim._functional.nadam``: one NAdam step in place (``mu_products``:
    float32 0-d running products, updated)."""
    _check_steps("nadam", state_steps)
    for i, param in enumerate(params):
        p, g, m, v = _real(param, grads[i], exp_avgs[i], exp_avg_sqs[i])
        nadam_step(p, g, m, v, mu_products[i], state_steps[i], lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                   weight_decay=weight_decay, momentum_decay=momentum_decay, maximize=maximize,
                   decoupled_weight_decay=decoupled_weight_decay)


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, eps):
    """Mirrors ``torch.optim._functional.radam``: one RAdam step in place."""
    _check_steps("radam", state_steps)
    for i, param in enumerate(params):
        p, g, m, v = _real(param, grads[i], exp_avgs[i], exp_avg_sqs[i])
        radam_step(p, g, m, v, state_steps[i], lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                   weight_decay=weight_decay, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False, maximize=False,
          differentiable=False, has_complex=False, *, step_size_min, step_size_max, etaminus, etaplus):
    """Mirrors ``torch.optim._functional.rprop``: one Rprop step in place."""
    _check_steps("rprop", state_steps)
    for i, param in enumerate(params):
        p, g, pv, ss = _real(param, grads[i], prevs[i], step_sizes[i])
        rprop_step(p, g, pv, ss, state_steps[i], etaminus=etaminus, etaplus=etaplus,
                   step_size_min=step_size_min, step_size_max=step_size_max, maximize=maximize)


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False, differentiable=False,
         capturable=False, has_complex=False, *, lambd, lr, t0, alpha, weight_decay):
    """Mirrors ``torch.optim._functional.asgd``: one ASGD step in place (``etas``/``mus``:
    0-d tensors, updated)."""
    _check_steps("asgd", state_steps)
    for i, param in enumerate(params):
        if not (param.is_floating_point() or param.is_complex()):
            # asgd_step casts its float factors to the parameter's dtype (ASGD._init_state
            # refuses such a parameter for the class; torch's in-place float update refuses it)
            raise RuntimeError(f"asgd: result type Float can't be cast to the desired output type {param.dtype} "
                               "of a parameter; optimize floating-point (or complex) tensors")
        p, g, ax = _real(param, grads[i], axs[i])
        asgd_step(p, g, ax, etas[i], mus[i], state_steps[i], lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                  weight_decay=weight_decay, maximize=maximize)


def sparse_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, eps, beta1, beta2, lr, maximize):
    """Mirrors ``torch.optim._functional.sparse_adam``: one SparseAdam step in place for sparse
    COO gradients; ``state_steps`` are the Python int counts after this step (not incremented
    here, as torch)."""
    for i, param in enumerate(params):
        sparse_adam_step(param, grads[i], exp_avgs[i], exp_avg_sqs[i], state_steps[i], lr=lr, beta1=beta1,
                         beta2=beta2, eps=eps, maximize=maximize)
