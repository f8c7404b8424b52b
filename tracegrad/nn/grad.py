"""``tracegrad.nn.grad``: mirrors ``torch.nn.grad`` -- the gradients of ``conv{1,2,3}d`` with
respect to their input and their weight, for custom ``autograd.Function``s that write a
convolution's backward by hand (the tutorials' fused conv + batch norm).

A convolution is linear in its input and in its weight, so each gradient is the vector-Jacobian
product of the convolution at a zero input (or weight) of the requested size, taken with
``tracegrad.autograd.grad``; ``create_graph`` follows grad mode, so the results are
differentiable in ``weight``/``input`` and ``grad_output`` (double backward), as torch's are.

The same products give ATen's ``convolution_backward`` and ``_convolution_double_backward``,
operators torch has only as ``torch.ops.aten.<name>`` (``tracegrad.ops.aten`` finds them here).
"""
import tracegrad

from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _vjp(conv, api, fixed, fixed_is_input, size, grad_output, *params):
    """d conv(input, weight) / d(the argument of ``size``), applied to ``grad_output``; ``params``
    follow the bias in ``conv``'s signature."""
    size = tuple(size)
    free = tracegrad.zeros(size, dtype=grad_output.dtype, requires_grad=True)
    with tracegrad.enable_grad():
        args = (fixed, free) if fixed_is_input else (free, fixed)
        out = conv(*args, None, *params)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"{api}: grad_output has shape {list(grad_output.shape)}, but the convolution "
                               f"of these sizes gives {list(out.shape)}; check input/weight sizes, stride and padding")
        create = tracegrad.is_grad_enabled() and (grad_output.requires_grad or fixed.requires_grad)
        grad, = tracegrad.autograd.grad(out, free, grad_output, create_graph=create)
    return grad


def _pair(conv, name):
    def input_grad(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _vjp(conv, f"{name}_input", weight, False, input_size, grad_output, stride, padding, dilation, groups)

    def weight_grad(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _vjp(conv, f"{name}_weight", input, True, weight_size, grad_output, stride, padding, dilation, groups)
    input_grad.__name__, weight_grad.__name__ = f"{name}_input", f"{name}_weight"
    input_grad.__doc__ = (f"Mirrors ``torch.nn.grad.{name}_input(input_size, weight, grad_output, stride=1, "
                          f"padding=0, dilation=1, groups=1)``: the gradient of ``F.{name}`` with respect to an "
                          "input of ``input_size``, given ``grad_output`` (the convolution's output shape). "
                          "RuntimeError when the shapes do not fit.")
    weight_grad.__doc__ = (f"Mirrors ``torch.nn.grad.{name}_weight(input, weight_size, grad_output, stride=1, "
                           f"padding=0, dilation=1, groups=1)``: the gradient of ``F.{name}`` with respect to a "
                           "weight of ``weight_size``, given ``input`` and ``grad_output``. RuntimeError when "
                           "the shapes do not fit.")
    return input_grad, weight_grad


conv1d_input, conv1d_weight = _pair(F.conv1d, "conv1d")
conv2d_input, conv2d_weight = _pair(F.conv2d, "conv2d")
conv3d_input, conv3d_weight = _pair(F.conv3d, "conv3d")


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """Mirrors ``torch.ops.aten.convolution_backward``: ``(grad_input, grad_weight, grad_bias)`` of
    ``torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    groups)`` for ``grad_output``; an entry whose ``output_mask`` is False is None. Batched input
    ``(N, C_in, *spatial)``; RuntimeError when ``grad_output`` does not fit the convolution."""
    params = (stride, padding, dilation, transposed, output_padding, groups)
    if input.ndim != grad_output.ndim:
        raise RuntimeError(f"Expected input and grad_output to have the same number of dimensions, but got: "
                           f"{input.ndim} and {grad_output.ndim} (convolution_backward)")
    gi = (_vjp(tracegrad.convolution, "convolution_backward", weight, False, input.shape, grad_output, *params)
          if output_mask[0] else None)
    gw = (_vjp(tracegrad.convolution, "convolution_backward", input, True, weight.shape, grad_output, *params)
          if output_mask[1] else None)
    gb = grad_output.sum([0] + list(range(2, grad_output.ndim))) if output_mask[2] else None
    return gi, gw, gb


def _convolution_double_backward(ggI, ggW, ggb, gO, weight, input, stride, padding, dilation, transposed,
                                 output_padding, groups, output_mask):
    """Mirrors ``torch.ops.aten._convolution_double_backward``: the backward of
    ``convolution_backward`` for the gradients ``ggI``, ``ggW``, ``ggb`` of its outputs (each
    may be None). Returns ``(grad_grad_output, grad_input, grad_weight)``: ``conv(ggI, weight) +
    conv(input, ggW) + ggb``, the input gradient of ``conv(input, ggW)`` and the weight gradient
    of ``conv(ggI, weight)``, both for ``gO``; an entry with nothing to come from is None, as
    torch's undefined tensor (``output_mask`` is accepted, and as in torch decides nothing)."""
    params = (stride, padding, dilation, transposed, output_padding, groups)
    terms = []
    if input.numel() != 0:
        terms += [tracegrad.convolution(ggI, weight, None, *params)] if ggI is not None else []
        terms += [tracegrad.convolution(input, ggW, None, *params)] if ggW is not None else []
    if ggb is not None:
        terms.append(ggb.reshape([1, -1] + [1] * (gO.ndim - 2)).expand(gO.shape))
    ggO = None
    for t in terms:
        ggO = t if ggO is None else ggO + t
    gW = gI = None
    if input.numel() != 0 and ggI is not None:
        gW = _vjp(tracegrad.convolution, "_convolution_double_backward", ggI, True, weight.shape, gO, *params)
    if input.numel() != 0 and ggW is not None:
        gI = _vjp(tracegrad.convolution, "_convolution_double_backward", ggW, False, input.shape, gO, *params)
    return ggO, gI, gW
