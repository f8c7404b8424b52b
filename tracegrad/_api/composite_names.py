"""Small torch names written with other tracegrad functions: aliases and one-line compositions
(``logaddexp2``, ``msort``, ``diagflat``, ``vdot``, ``addmv``/``addr``/``addbmm``, ``hsplit``
family, ``isposinf``...) and torch's top-level in-place functions (``torch.exp_(x)`` is
``x.exp_()``). Gradients follow from the ops they are made of; grad_fn names are those ops'
(torch names a node of its own for ``addmv``, ``addr``, ``addbmm``: documented per function)."""
from __future__ import annotations

import math

from .. import _autocast
from .._tensor.factories import ones_like as _ones_like, tensor as _tensor
from .._ops.dtypes import bool_ as _bool, can_cast
from .._ops.errors import not_a_tensor
from .._ops.registry import OPS
from ..autograd._dispatch import apply_op
from .shape import by_keyword
from .._tensor.tensor import Tensor, _wrap_dim as _wrap
from ._registry import FUNCTIONS, METHODS, _put, function, int_list_method, method
from .argcheck import guard
from .complex_api import conj
from .inplace import copy_, inplace_via_copy
from .promotion import _SCALAR_NAME, beta_first, check_real_scalars, refuse_complex, require_floating, result_dtype
from .composite import logaddexp
from .elementwise import where
from .linalg import bmm, dot, matmul, mm, outer
from .reduction import check_sortable, return_types, sort
from .shape import _index_all, _index_like, diag, flatten, reshape, tensor_split

_LN2 = math.log(2.0)


def _cpp(dtype):
    return _SCALAR_NAME[dtype.name]


@method("logaddexp2", function=True)
def logaddexp2(input, other):
    """Mirrors ``torch.logaddexp2``: ``log2(2**input + 2**other)`` without overflow;
    NotImplementedError for complex tensors, as torch."""
    refuse_complex("logaddexp2", "logaddexp2_cpu", input, other)
    require_floating("logaddexp2", input, other)    # no integer or bool kernel, as torch
    other = other if isinstance(other, Tensor) else _tensor(other, dtype=input.dtype)
    # the operands in their promoted dtype first (an int64 tensor beside a 0-dim float64 one
    # gives float64, which ``int_tensor * ln2`` would have made float32)
    common = result_dtype(input, other)
    input, other = input.to(common), other.to(common)
    if common.name in ("float16", "bfloat16"):
        # in float32, rounded once, as torch's CPU kernel: three 16-bit roundings (the scalings
        # and the division) put the result a bf16 step off torch's
        return logaddexp2(input.float(), other.float()).to(common)
    if common.name in ("float32", "float64"):    # one Logaddexp2Backward0 node (NOTE [own nodes of composites])
        return apply_op(OPS["logaddexp2"], (input, other))
    # torch's formula: the larger operand plus log1p(2 ** -|a - b|) / ln 2; equal infinities
    # give that infinity
    m = input.maximum(other)
    d = (input - other).abs()
    d = d.nan_to_num(nan=0.0, posinf=float("inf"))
    out = m + (-d).exp2().log1p() * (1.0 / _LN2)
    return where((input == other) & input.isinf(), input, out)


@function()
def spmm(input, mat2):
    """Mirrors ``torch.spmm(input, mat2)``: ``torch.mm`` (grad_fn ``MmBackward0``), for a dense or
    a sparse COO ``input``; shapes and errors are ``mm``'s."""
    return mm(input, mat2)


@method("aminmax", function=True)
def aminmax(input, *, dim=None, keepdim=False):
    """Mirrors ``torch.aminmax``: namedtuple ``(min, max)`` of ``amin``/``amax`` over ``dim``
    (all dims when None), both from one ``AminmaxBackward0`` node. Gradients as
    ``amin``/``amax`` (ties share evenly). An empty input
    reduced whole is torch's RuntimeError, an empty ``dim`` its IndexError, both naming
    ``aminmax`` (amin's own checks would name amin)."""
    if dim is None and input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
    d = None if dim is None else _wrap(dim, input.ndim)   # a 0-d input's dim too (range [-1, 0]), as torch
    if d is not None and input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    check_sortable(input, "aminmax", NotImplementedError)
    if dim is not None and input.ndim > 64:   # torch's kernel along a dim builds the reductions' 64-bit dim mask
        raise RuntimeError(f"only tensors with up to 64 dims are supported (aminmax of a {input.ndim}-d input); "
                           "reshape it to 64 dims or fewer first")
    # one op, so that both results share torch's single AminmaxBackward0 node
    dims = tuple(range(input.ndim)) if dim is None else ((d,) if input.ndim else ())
    return return_types.aminmax(*apply_op(OPS["aminmax"], (input,), (("dim", dims), ("keepdim", keepdim))))


@method("positive", function=True)
def positive(input):
    """Mirrors ``torch.positive``: ``input`` itself. RuntimeError for a bool tensor, as torch."""
    if input.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@method("ravel", function=True)
def ravel(input):
    """Mirrors ``torch.ravel``: input flattened to 1-D and contiguous (a view when input is
    contiguous, else a copy)."""
    return reshape(input.contiguous(), -1)


@method("msort", function=True)
def msort(input):
    """Mirrors ``torch.msort``: ``sort(input, dim=0).values``."""
    return sort(input, 0).values


@method("isposinf", function=True)
def isposinf(input):
    """Mirrors ``torch.isposinf``: bool tensor, True where ``input`` is +inf (never for integers).
    RuntimeError for complex input, as torch."""
    _refuse_complex("isposinf", input)
    return input == math.inf


def _refuse_complex(api, input):
    if input.is_complex():
        raise RuntimeError(f"{api} does not support complex inputs; test .real or .imag")


@method("isneginf", function=True)
def isneginf(input):
    """Mirrors ``torch.isneginf``: bool tensor, True where ``input`` is -inf (never for integers).
    RuntimeError for complex input, as torch."""
    _refuse_complex("isneginf", input)
    return input == -math.inf


@method("isreal", function=True)
def isreal(input):
    """Mirrors ``torch.isreal``: bool tensor, True where the imaginary part is 0 (everywhere for
    real dtypes)."""
    if input.is_complex():
        return input.imag == 0
    return _ones_like(input, dtype=_bool)


@method("diagflat", function=True)
def diagflat(input, offset=0):
    """Mirrors ``torch.diagflat``: the flattened input on the ``offset`` diagonal of a square matrix."""
    return diag(flatten(input), offset)


@method("vdot", function=True)
def vdot(input, other):
    """Mirrors ``torch.vdot``: ``sum(conj(input) * other)`` for two 1-D tensors (``dot`` for
    real ones). RuntimeError unless both are 1-D of one length and dtype (from ``dot``).
    Autograd: torch's own ``VdotBackward0`` node."""
    if (isinstance(input, Tensor) and isinstance(other, Tensor) and input.ndim == other.ndim == 1
            and input.shape == other.shape and input.dtype is other.dtype
            and (input.is_floating_point() or input.is_complex())):
        return apply_op(OPS["vdot"], (input, other), (("dtype", input._value.dtype),))
    return dot(conj(input) if input.is_complex() else input, other)


def _add_scaled(input, prod, beta, alpha, api):
    """``beta * input + alpha * prod`` with torch's rules: ``beta=0`` ignores input's values (its
    NaNs do not propagate) but keeps its shape and a zero gradient; dtypes must match. Integer
    operands take integer scalars (torch truncates ``beta=0.5`` to 0); a complex scalar needs
    complex operands (RuntimeError)."""
    if input.dtype is not prod.dtype:
        raise RuntimeError(f"{api}: expected input and the product to have the same dtype, got {input.dtype} "
                           f"and {prod.dtype}; convert them to one dtype")
    check_real_scalars(api, input.dtype, beta=beta, alpha=alpha)
    if not (input.is_floating_point() or input.is_complex()):
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + where(_tensor(False), input, _tensor(0, dtype=input.dtype))
    return prod + (input if beta == 1 else input * beta)


def _fused_node(api, input, m1, m2, beta, alpha, out_shape):
    """``beta * input + alpha * product`` as the one node torch records for ``api``
    (``AddmvBackward0``, ``AddrBackward0``, ``AddbmmBackward0``, ``BaddbmmBackward0``: their
    gradients and ``next_functions`` are those of that node, not of an AddBackward0 over the
    product). Only for floating/complex operands of one dtype whose input broadcasts to the
    result; None otherwise, and the caller composes the result (integer operands, which
    cannot require grad), raising its errors on bad shapes and dtypes."""
    dt = m1.dtype
    if not (dt.is_floating_point or dt.is_complex) or input.dtype is not dt or m2.dtype is not dt:
        return None
    shape = tuple(input.shape)
    if len(shape) > len(out_shape) or any(a not in (1, b) for a, b in zip(shape[::-1], out_shape[::-1])):
        return None
    check_real_scalars(api, dt, beta=beta, alpha=alpha)
    return apply_op(OPS[api], (input, m1, m2, beta, alpha), (("dtype", m1._value.dtype),))


@method("addmv", function=True)
def addmv(input, mat, vec, *rest, beta=1, alpha=1):
    """Mirrors ``torch.addmv``: ``beta * input + alpha * (mat @ vec)``, mat ``(n, m)``, vec ``(m,)``,
    input broadcastable to ``(n,)``. grad_fn: ``AddmvBackward0``."""
    input, mat, vec, beta, alpha = beta_first("addmv", input, mat, vec, rest, beta, alpha, ("mat", "vec"))
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"addmv: vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] == vec.shape[0]:
        out = _fused_node("addmv", input, mat, vec, beta, alpha, (mat.shape[0],))
        if out is not None:
            return out
    return _add_scaled(input, matmul(mat, vec), beta, alpha, "addmv")


@method("addr", function=True)
def addr(input, vec1, vec2, *rest, beta=1, alpha=1):
    """Mirrors ``torch.addr``: ``beta * input + alpha * outer(vec1, vec2)``; input broadcastable
    to ``(n, m)``; the three promote to one dtype, as torch. grad_fn: ``AddrBackward0``."""
    input, vec1, vec2, beta, alpha = beta_first("addr", input, vec1, vec2, rest, beta, alpha, ("vec1", "vec2"))
    dt = result_dtype(input, vec1, vec2)
    if not (dt.is_floating_point or dt.is_complex):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number; "
                                   f"pass an int (got {v})")
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) and dt is not _bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    input, vec1, vec2 = (x if x.dtype is dt else x.to(dt) for x in (input, vec1, vec2))
    if dt is _bool:
        # torch's bool addr is logical: (beta and input) or (alpha and outer), still bool
        prod = outer(vec1, vec2)
        prod = prod if alpha else prod & False
        return prod.logical_or(input) if beta else prod
    if vec1.ndim == 1 and vec2.ndim == 1:
        out = _fused_node("addr", input, vec1, vec2, beta, alpha, (vec1.shape[0], vec2.shape[0]))
        if out is not None:
            return out
    return _add_scaled(input, outer(vec1, vec2), beta, alpha, "addr")


@method("addbmm", function=True)
def addbmm(input, batch1, batch2, *rest, beta=1, alpha=1):
    """Mirrors ``torch.addbmm``: ``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` for
    ``(b, n, m)`` and ``(b, m, p)``; input broadcastable to ``(n, p)``. grad_fn: ``AddbmmBackward0``.
    Under autocast all three go to its dtype first (torch's list)."""
    input, batch1, batch2, beta, alpha = beta_first("addbmm", input, batch1, batch2, rest, beta, alpha, ("batch1", "batch2"))
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"addbmm: batch1 must be a 3D tensor, got {batch1.ndim}D and {batch2.ndim}D")
    input, batch1, batch2 = _autocast.cast("lower", "addbmm", input, batch1, batch2)
    b, n, m = batch1.shape
    if batch2.shape[:2] == (b, m):
        out = _fused_node("addbmm", input, batch1, batch2, beta, alpha, (n, batch2.shape[2]))
        if out is not None:
            return out
    return _add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha, "addbmm")


def _split_along(input, indices_or_sections, dim, api, min_dims):
    ios = indices_or_sections
    # torch's parser: an int is anything with __index__ (a numpy int, a 0-d integer tensor), the
    # indices any int sequence (a 1-d integer tensor, a list of numpy ints or one-element tensors)
    if isinstance(ios, Tensor) and ios.ndim == 1 and _index_like(ios[0] if len(ios) else _tensor(0)):
        ios = ios.tolist()
    elif _index_like(ios):
        ios = int(ios.__index__())
    if isinstance(ios, (list, tuple)):
        try:       # a leading bool, a float or str element: no overload matches
            ios = None if ios and type(ios[0]) is bool else list(_index_all(ios, api, "indices"))
        except TypeError:
            ios = None
    if isinstance(ios, bool) or not isinstance(ios, (int, list)):
        raise TypeError(f"{api}() received an invalid combination of arguments: expected (Tensor input, int "
                        f"sections) or (Tensor input, tuple of ints indices), got "
                        f"{type(indices_or_sections).__name__}")
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{api} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.ndim} dimensions!")
    if isinstance(ios, int):
        size = input.shape[dim]
        if ios == 0 or size % ios:
            raise RuntimeError(f"torch.{api} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {ios}!")
    # split points are tensor_split's (Python slice bounds: a negative one counts from the end)
    return tensor_split(input, ios, dim)


@int_list_method
@function("hsplit")
def hsplit(input, indices_or_sections):
    """Mirrors ``torch.hsplit``: ``tensor_split`` along dim 1 (dim 0 for 1-D input); an int must
    divide that dim (RuntimeError otherwise)."""
    return _split_along(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


@int_list_method
@function("vsplit")
def vsplit(input, indices_or_sections):
    """Mirrors ``torch.vsplit``: ``tensor_split`` along dim 0 of an at least 2-D input."""
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


@int_list_method
@function("dsplit")
def dsplit(input, indices_or_sections):
    """Mirrors ``torch.dsplit``: ``tensor_split`` along dim 2 of an at least 3-D input."""
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


# torch's top-level in-place functions: the Tensor methods themselves (torch.exp_(x) is x.exp_())
INPLACE_FUNCTIONS = (
    "abs_", "acos_", "asin_", "atan_", "ceil_", "clamp_", "clip_", "conj_physical_", "cos_", "cosh_",
    "detach_", "erf_", "exp2_", "exp_", "expm1_", "fill_", "floor_", "frac_", "index_put_", "log10_",
    "log1p_", "log2_", "log_", "neg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_",
    "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "zero_", "arccos_", "arcsin_", "arctan_",
    "negative_", "fix_", "asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_", "arctanh_",
    # the in-place methods written through copy_ below (looked up when called)
    "addmv_", "clamp_max_", "clamp_min_", "deg2rad_", "erfc_", "i0_", "ldexp_", "logit_", "nan_to_num_",
    "rad2deg_", "sinc_", "xlogy_",
)

_VIA_COPY = ("addbmm", "addmm", "addmv", "addr", "atan2", "baddbmm", "bitwise_and", "bitwise_or", "bitwise_xor",
             "clamp_max", "clamp_min", "copysign", "cumprod", "cumsum", "deg2rad", "digamma", "eq", "erfc",
             "floor_divide", "fmod", "ge", "gt", "heaviside", "hypot", "i0", "ldexp", "le", "lgamma",
             "logical_and", "logical_or", "logical_xor", "logit", "lt", "mvlgamma", "nan_to_num", "ne",
             "nextafter", "polygamma", "rad2deg", "remainder", "sgn", "sinc", "tril", "triu", "xlogy")
_ALIASES_OF = {"atan2": ("arctan2",), "ge": ("greater_equal",), "gt": ("greater",), "le": ("less_equal",),
               "lt": ("less",), "ne": ("not_equal",)}
for _name in _VIA_COPY:
    method(*(n + "_" for n in (_name,) + _ALIASES_OF.get(_name, ())))(inplace_via_copy(_name))
# torch's alias spellings of in-place methods tracegrad has
for _alias, _target in (("multiply_", "mul_"), ("subtract_", "sub_"), ("divide_", "div_"),
                        ("swapdims_", "transpose_")):
    _put(METHODS, (_alias,), METHODS.get(_target) or vars(Tensor)[_target], "Tensor.")


@method("true_divide_")
def true_divide_(self, other):
    """Mirrors ``torch.Tensor.true_divide_(other)``: ``div_`` without a rounding mode (TypeError
    for one, as torch's parser)."""
    return METHODS["div_"](self, other)
for _name in INPLACE_FUNCTIONS:
    # Tensor's own methods (detach_) get the function forms' AttributeError guard here:
    # guard_all looks only at the op families' modules
    _put(FUNCTIONS, (_name,), METHODS.get(_name) or guard(_name, vars(Tensor)[_name], hot=True), "tracegrad.")


@method("sum_to_size")
def sum_to_size(self, *size, **kwargs):
    """Mirrors ``Tensor.sum_to_size(*size)`` (or ``size=``): self summed down to ``size``, which
    must expand to self's shape (leading dims dropped, size-1 dims kept). RuntimeError otherwise."""
    size = by_keyword(size, kwargs, "size", "sum_to_size")
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"; pass the size to sum to')
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    out = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, (s, t) in enumerate(zip(size, shape[lead:])) if s == 1 and t != 1)
    return out.sum(dims, keepdim=True) if dims else out


@method("fill_diagonal_")
def fill_diagonal_(self, fill_value, wrap=False):
    """Mirrors ``Tensor.fill_diagonal_(fill_value, wrap=False)``: writes ``fill_value`` on the
    main diagonal (``i, i, ..., i``); a tall 2-D matrix with ``wrap`` restarts the diagonal
    ``columns + 1`` rows down (one row left out between), as torch.
    Autograd: as torch, each write is ``fill_`` of an ``as_strided`` view of self's storage (the
    diagonal's stride is the sum of self's strides), so self's grad_fn is ``CopySlices``, a leaf
    requiring grad gets the view-of-a-leaf error, and a wrapped fill bumps the version twice.
    Raises: RuntimeError for fewer than 2 dims, above 2 for dims of different lengths, and (as
    torch) where a wrapped diagonal of a non-contiguous matrix runs out of its storage."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.ndim > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    step, offset = sum(self.stride()), self.storage_offset()
    self.as_strided((min(shape),), (step,), offset).fill_(fill_value)
    if wrap and self.ndim == 2 and shape[0] > shape[1] + 1:
        # the wrapped part: the storage walk of the diagonal from row ``columns + 1`` on, as many
        # entries as a contiguous matrix's every-``columns + 1``-th element gives beyond the
        # first ``columns`` (none for 0 columns: an empty fill, which still bumps the version)
        rest = (self.numel() + shape[1]) // (shape[1] + 1) - shape[1]
        self.as_strided((rest,), (step,), offset + (shape[1] + 1) * self.stride(0)).fill_(fill_value)
    return self


def _backward_data_check(api, grad_output, output):
    if not isinstance(grad_output, Tensor) or not isinstance(output, Tensor):
        raise TypeError(f"{api}(): grad_output and output must be Tensors, got "
                        f"{type(grad_output).__name__} and {type(output).__name__}")
    if grad_output.dtype != output.dtype:
        # torch's CPU kernel names grad_output's dtype as the expected one
        raise RuntimeError(f"{api}(): expected scalar type {_cpp(grad_output.dtype)} but found "
                           f"{_cpp(output.dtype)}; pass grad_output and output of one dtype")


@function("_softmax_backward_data")
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """Mirrors ``torch._softmax_backward_data(grad_output, output, dim, input_dtype)``: the
    input gradient of ``softmax`` given its result ``output``,
    ``output * (grad_output - (grad_output * output).sum(dim, keepdim=True))`` (custom
    autograd Functions written for torch call it in their backward, as DeBERTa's XSoftmax).

    Shapes: ``grad_output`` and ``output`` one shape; the result has it. Dtypes: the result has
    ``grad_output``'s dtype. Raises RuntimeError when the two dtypes differ (as torch).
    Differs from torch: grad_fn is the composing ops' (``MulBackward0``; torch names one node
    ``SoftmaxBackwardDataBackward0``), and ``input_dtype`` is not read (torch's CPU kernel
    gives grad_output's dtype as well, raising for a float32 grad with a 16-bit input_dtype)."""
    _backward_data_check("_softmax_backward_data", grad_output, output)
    return output * (grad_output - (grad_output * output).sum(dim, keepdim=True))


@function("_log_softmax_backward_data")
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """Mirrors ``torch._log_softmax_backward_data(grad_output, output, dim, input_dtype)``: the
    input gradient of ``log_softmax`` given its result ``output``,
    ``grad_output - exp(output) * grad_output.sum(dim, keepdim=True)``.

    Shapes, dtypes, errors and differences from torch as ``_softmax_backward_data`` (torch's
    node is ``LogSoftmaxBackwardDataBackward0``)."""
    _backward_data_check("_log_softmax_backward_data", grad_output, output)
    return grad_output - output.exp() * grad_output.sum(dim, keepdim=True)
