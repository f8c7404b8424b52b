"""Integer functions: ``gcd``/``lcm`` and the bit shifts ``bitwise_left_shift``/
``bitwise_right_shift`` (also ``<<``, ``>>``, their reflected and in-place forms), with their
in-place ``*_`` methods. Integer (and bool) tensors only, broadcasting, torch's promotion;
no gradients (integer results)."""
from __future__ import annotations

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._tensor.factories import tensor as _tensor
from .._tensor.tensor import Tensor
from ._registry import inplace_operator, method
from .elementwise import operator
from .inplace import _inplace_binary, check_inplace_result
from .promotion import _SCALAR_NAME, check_not_two_numbers, check_operand_kinds, _check_broadcast, _check_operand, result_dtype


def _require_integer(api, kernel, *operands):
    for v in operands:
        if (isinstance(v, Tensor) and (v.is_floating_point() or v.is_complex())) or isinstance(v, (float, complex)):
            check_operand_kinds(api, *operands)   # gcd_(None) on a float tensor: the parser's TypeError first
            name = _SCALAR_NAME.get(v.dtype.name, v.dtype.name) if isinstance(v, Tensor) else "Float"
            raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{name}'; {api} takes integer (or "
                                      "bool) tensors")


def _no_bool(kernel, a, b):
    """torch's shift, gcd and lcm kernels have no bool version: NotImplementedError when both operands are bool."""
    if isinstance(a, Tensor) and result_dtype(a, b) is _dt.bool_:
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'; convert the tensors with .int()")


def _integer_binary(name, kernel, tensor_other, inplace_function=False):
    def f(input, other):
        if tensor_other and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        if not tensor_other and isinstance(input, (bool, int)) and isinstance(other, Tensor):
            # torch's Scalar_Tensor overload (``bitwise_left_shift(1, t)``): the number takes the
            # promoted dtype, as a wrapped number does (``1 << t`` reaches the same kernel)
            input = _tensor(input, dtype=result_dtype(input, other))
        check_not_two_numbers(name, input, other)
        _check_operand(other, name)
        _require_integer(name, kernel, input, other)
        _no_bool(kernel, input, other)
        if isinstance(other, Tensor) and input._value.shape != other._value.shape:
            _check_broadcast(input, other)
        return apply_op(OPS[name], (input, other), (("dtype", result_dtype(input, other).np),))

    def f_(self, other):
        if tensor_other and not isinstance(other, Tensor):
            raise TypeError(f"{name}_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        if isinstance(self, Tensor):
            # torch checks the in-place shape and cast before the kernel's dtype
            check_inplace_result(name + "_", self, other)
        _require_integer(name + "_", kernel, self, other)
        _no_bool(kernel, self, other)
        return _inplace(self, other)
    _inplace = _inplace_binary(name)
    f.__name__, f_.__name__ = name, name + "_"
    f.__doc__ = (f"Mirrors ``torch.{name}``: elementwise over integer (or bool) tensors, broadcasting, in the "
                 f"promoted dtype; no gradient. NotImplementedError for floating inputs, as torch.")
    f_.__doc__ = f"Mirrors ``torch.Tensor.{name}_``: ``{name}`` written into ``self``."
    return method(name, function=True)(f), method(name + "_", function=inplace_function)(f_)


# torch.gcd_ and torch.lcm_ exist as functions too
gcd, gcd_ = _integer_binary("gcd", "gcd", True, True)
lcm, lcm_ = _integer_binary("lcm", "lcm", True, True)
bitwise_left_shift, bitwise_left_shift_ = _integer_binary("bitwise_left_shift", "lshift", False)
bitwise_right_shift, bitwise_right_shift_ = _integer_binary("bitwise_right_shift", "rshift", False)


def _scalar_first(fn):
    """``number <op> tensor``: the number as a 0-d tensor of the promoted kind."""
    return lambda self, other: fn(_tensor(other), self) if isinstance(other, (bool, int)) else NotImplemented


method("__lshift__")(operator(bitwise_left_shift))
method("__rshift__")(operator(bitwise_right_shift))
method("__rlshift__")(_scalar_first(bitwise_left_shift))
method("__rrshift__")(_scalar_first(bitwise_right_shift))
inplace_operator("__ilshift__", "bitwise_left_shift_")
inplace_operator("__irshift__", "bitwise_right_shift_")

__all__ = ["gcd", "gcd_", "lcm", "lcm_", "bitwise_left_shift", "bitwise_left_shift_", "bitwise_right_shift",
           "bitwise_right_shift_"]
