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

from .. import Tensor, float64

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step"]


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
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    buf = momentum_buffer
    if momentum != 0:
        if buf is None:
            buf = grad.detach().clone()
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = grad.add(buf, alpha=momentum) if nesterov else buf
    _add_scaled_(param, grad, lr)
    return buf


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, *, lr, beta1, beta2, eps,
              weight_decay, amsgrad, maximize, decoupled_weight_decay=False):
    """One Adam/AdamW update in place. Mirrors torch's ``_single_tensor_adam`` (eager path).

    Args: param, grad, exp_avg, exp_avg_sq: Tensors of one shape; max_exp_avg_sq: Tensor when
        ``amsgrad`` else None; step: float32 0-d tensor, incremented here.
        ``decoupled_weight_decay=True`` is AdamW (``param *= 1 - lr * weight_decay``).
    """
    lr = _scalar(lr)
    if maximize:
        grad = -grad
    step.add_(1)
    if weight_decay != 0:
        if decoupled_weight_decay:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

    t = step.to(float64)
    bias_correction1 = 1 - beta1 ** t
    bias_correction2 = 1 - beta2 ** t
    step_size = _like_lr(lr / bias_correction1, lr)
    bias_correction2_sqrt = bias_correction2.sqrt()
    if amsgrad:
        max_exp_avg_sq.copy_(max_exp_avg_sq.maximum(exp_avg_sq))
        denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    else:
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-step_size)


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
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if centered:
        grad_avg.lerp_(grad, 1 - alpha)
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = square_avg.sqrt()
    avg = avg.add_(eps)
    if momentum > 0:
        momentum_buffer.mul_(momentum).addcdiv_(grad, avg)
        _add_scaled_(param, momentum_buffer, lr)
    else:
        param.addcdiv_(grad, avg, value=-lr)


def adagrad_step(param, grad, state_sum, step, *, lr, lr_decay, eps, weight_decay, maximize):
    """One Adagrad update in place. Mirrors torch's ``_single_tensor_adagrad`` (dense grads).

    The decayed rate ``lr / (1 + (step - 1) * lr_decay)`` is a float64 0-d tensor from ``step``.
    """
    lr = _scalar(lr)
    step.add_(1)
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    clr = _like_lr(lr / (1 + (step.to(float64) - 1) * lr_decay), lr)
    state_sum.addcmul_(grad, grad, value=1)
    std = state_sum.sqrt().add_(eps)
    param.addcdiv_(grad, std, value=-clr)
