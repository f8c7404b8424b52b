"""``tracegrad.nn.grad``: mirrors ``torch.nn.grad`` -- the gradients of ``conv{1,2,3}d`` with
respect to their input and their weight, for custom ``autograd.Function``s that write a
convolution's backward by hand (the tutorials' fused conv + batch norm).

A convolution is linear in its input and in its weight, so each gradient is the vector-Jacobian
product of the convolution at a zero input (or weight) of the requested size, taken with
``tracegrad.autograd.grad``; ``create_graph`` follows grad mode, so the results are
differentiable in ``weight``/``input`` and ``grad_output`` (double backward), as torch's are.
"""
import tracegrad

from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _vjp(conv, api, fixed, fixed_is_input, size, grad_output, stride, padding, dilation, groups):
    """d conv(input, weight) / d(the argument of ``size``), applied to ``grad_output``."""
    size = tuple(size)
    free = tracegrad.zeros(size, dtype=grad_output.dtype, requires_grad=True)
    with tracegrad.enable_grad():
        args = (fixed, free) if fixed_is_input else (free, fixed)
        out = conv(*args, None, stride, padding, dilation, groups)
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
