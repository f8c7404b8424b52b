"""Complex tensors: ``real``/``imag`` and ``view_as_real``/``view_as_complex`` (views, as
torch: writes through them change the complex tensor, NOTE [complex part views] in
``_ops/shape.py``), ``conj`` and friends, ``angle``, ``complex``, ``is_complex``.

NOTE [conj views]
As torch, ``conj()`` of a complex tensor is a view of the same storage whose values are the
conjugates (writes through it land conjugated in the base); its conjugate bit, ``is_conj()``,
is an odd number of ``conj`` views in its view chain (``chain_is_conj``), so ``conj().conj()``
has it cleared, and any non-view op gives a tensor without it. ``resolve_conj()`` materializes
(a new tensor with the bit cleared); ``numpy()`` and ``view_as_real`` refuse a tensor with the
bit set, as torch. The negative bit, ``is_neg()``, is set as torch sets it: on the ``imag`` of a
conj view (a view whose values are the negated imaginary parts) and on the views of it
(``chain_is_neg``); ``resolve_neg()`` materializes it, and ``numpy()`` and ``view(dtype)``
refuse it, as torch.
"""
from __future__ import annotations

from ..autograd._dispatch import apply_inplace, apply_op, check_inplace
from .._ops import dtypes as _dt
from .._ops.registry import OPS
from .._ops.shape import chain_is_conj, chain_is_neg
from .._tensor.layout import SparseOperand
from .._tensor.tensor import Tensor, check_no_internal_overlap, storage_offset_of, strides_of
from ._registry import function, method, prop

_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16"}


def _name(d):
    return _NAMES.get(d.name, d.name)


def real(self):
    """Mirrors ``torch.Tensor.real``: for a complex tensor a float view of its real parts
    (``z.real.mul_(2)`` changes ``z``; autograd ``SelectBackward0`` over ``ViewAsRealBackward0``,
    ``RealBackward0`` for a conj view); for a real tensor the tensor
    itself."""
    if self.dtype.is_complex:
        return _part(self, 0, "real_view")
    return self


def _part(self, index, op):
    """The real (``index`` 0) or imaginary (1) part of a complex tensor as a view. As torch 2.13,
    without the conjugate bit it is ``view_as_real(self).select(-1, index)`` (grad_fn
    ``SelectBackward0`` over ``ViewAsRealBackward0``); a conj view takes the one-step part view
    ``op``, which carries the negative bit of ``z.conj().imag`` (NOTE [conj views])."""
    if is_conj(self):
        return apply_op(OPS[op], (self,))
    pairs = apply_op(OPS["view_as_real"], (self,))
    return apply_op(OPS["select"], (pairs,), (("dim", pairs.ndim - 1), ("index", index)))


def imag(self):
    """Mirrors ``torch.Tensor.imag``: a float view of a complex tensor's imaginary parts (writes
    through it change the tensor; autograd as ``real``'s, ``ImagBackward0`` for a conj view). RuntimeError for a real tensor,
    as torch."""
    if not self.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes. "
                           "Use a complex tensor (e.g. x.to(tracegrad.complex64)).")
    return _part(self, 1, "imag_view")


def _set_real(self, value):
    self.real.copy_(value)


def _set_imag(self, value):
    self.imag.copy_(value)


# torch's setters: ``z.real = x`` / ``z.imag = x`` copy ``x`` into the part (through the view)
prop("real", setter=_set_real)(real)
prop("imag", setter=_set_imag)(imag)


@function("real")
def real_fn(input):
    """Mirrors ``torch.real``: ``input.real`` (a view for a complex input)."""
    return input.real


@function("imag")
def imag_fn(input):
    """Mirrors ``torch.imag``: ``input.imag`` (a view; RuntimeError for a real input)."""
    return input.imag


@method("conj", function=True)
def conj(input):
    """Mirrors ``torch.conj``: a view of a complex tensor with conjugated values and the
    conjugate bit flipped (NOTE [conj views]; autograd ``ConjBackward0``); a real tensor is
    returned itself. A sparse COO input gets its own ``conj`` (conjugated values, no bit)."""
    if not input.dtype.is_complex:
        return input
    try:
        return apply_op(OPS["conj"], (input,))
    except SparseOperand as e:   # torch.conj(sparse): NOTE in _tensor/layout.py
        return e.tensor.conj()


@method("conj_physical", function=True)
def conj_physical(input):
    """Mirrors ``torch.conj_physical``: the conjugate computed into a new tensor (autograd
    ``ConjPhysicalBackward0``); a real tensor is returned itself, a sparse COO one gets its own
    ``conj_physical``."""
    if not input.dtype.is_complex:
        return input
    try:
        return apply_op(OPS["conj_physical"], (input,))
    except SparseOperand as e:
        return e.tensor.conj_physical()


@method("conj_physical_")
def conj_physical_(self):
    """Mirrors ``torch.Tensor.conj_physical_``: conjugate in place (the values of a real tensor
    are kept, but as torch it is still an in-place op: a leaf that requires grad is refused, the
    version is bumped and history recorded)."""
    if isinstance(self, Tensor) and not self.dtype.is_complex:
        try:
            check_no_internal_overlap(self)
        except RuntimeError:   # torch's real kernel writes nothing: an expanded tensor is fine
            check_inplace(self)
            return self
    return apply_inplace(OPS["conj_physical"], self, ())


@method("resolve_conj", function=True)
def resolve_conj(input):
    """Mirrors ``torch.resolve_conj``: a tensor with the conjugate bit set (NOTE [conj views])
    becomes a new tensor holding the conjugated values, bit cleared (autograd ``CloneBackward0``);
    any other tensor is returned itself."""
    if is_conj(input):
        return input.clone()
    return input


@method("resolve_neg", function=True)
def resolve_neg(input):
    """Mirrors ``torch.resolve_neg``: a tensor with the negative bit set (NOTE [conj views])
    becomes a new tensor holding its values, bit cleared (autograd ``CloneBackward0``); any
    other tensor is returned itself. TypeError for a non-Tensor (torch's parser)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"resolve_neg(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if is_neg(input):
        return input.clone()
    return input


@method("is_conj", function=True)
def is_conj(input) -> bool:
    """Mirrors ``torch.is_conj``: whether the conjugate bit is set (a complex view through an
    odd number of ``conj()``: NOTE [conj views])."""
    return bool(input._chain) and input.dtype.is_complex and chain_is_conj(input._chain)


@method("is_neg", function=True)
def is_neg(input) -> bool:
    """Mirrors ``torch.is_neg``: whether the negative bit is set (the ``imag`` of a conj view
    and views of it: NOTE [conj views]). TypeError for a non-tensor, as torch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_neg(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return bool(input._chain) and chain_is_neg(input._chain)


@function("is_complex")
def is_complex(input) -> bool:
    """Mirrors ``torch.is_complex``: whether ``input``'s dtype is complex. TypeError for a
    non-tensor, as torch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.dtype.is_complex


@method("angle", function=True)
def angle(input):
    """Mirrors ``torch.angle``: the argument of each element in radians (``atan2(imag, real)``),
    a float tensor (complex64 -> float32; integer inputs give the default float dtype; real
    inputs give 0 or pi). Autograd ``AngleBackward0``."""
    d = input.dtype
    if not (d.is_floating_point or d.is_complex):
        input = input.to(_dt.get_default_dtype())
    return apply_op(OPS["angle"], (input,))


@function("view_as_real")
def view_as_real(input):
    """Mirrors ``torch.view_as_real``: a complex tensor of shape ``s`` seen as a float tensor of
    shape ``s + (2,)`` (real, imaginary); a view, writes go back to ``input``. Autograd
    ``ViewAsRealBackward0``. RuntimeError for a non-complex input or one with the conjugate bit
    set, as torch."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors; got "
                           f"{_name(input.dtype)}. Convert with .to(tracegrad.complex64) first.")
    if is_conj(input):
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors. To resolve the "
                           "conjugate tensor so you can view it as real, use self.resolve_conj()")
    return apply_op(OPS["view_as_real"], (input,))


@function("view_as_complex")
def view_as_complex(input):
    """Mirrors ``torch.view_as_complex``: a float32/float64 tensor whose last dim has size 2
    seen as a complex64/complex128 tensor without that dim; a view, writes go back to
    ``input``. Autograd ``ViewAsComplexBackward0``. RuntimeError for other dtypes or a last
    dim of another size, as torch; NotImplementedError for float16 (torch's complex32 view)."""
    if input.dtype is _dt.float16:
        # torch views half pairs as complex32, a dtype tracegrad has no arrays of (its tensors
        # of complex32 are NotImplementedError too): say so rather than torch's dtype refusal
        raise NotImplementedError("view_as_complex of a float16 tensor would be a complex32 tensor, which "
                                  "tracegrad cannot make; convert with .float() first (complex64)")
    if input.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {_name(input.dtype)}. Convert with .float() first.")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions (view_as_complex reads the last dim "
                           "as (real, imaginary))")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2 (view_as_complex reads the last dim "
                           "as (real, imaginary))")
    strides = strides_of(input)
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1; call .contiguous() first")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension; call "
                           ".contiguous() first")
    if storage_offset_of(input) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2; call .contiguous() first")
    return apply_op(OPS["view_as_complex"], (input,))


@function("complex")
def complex_(real, imag):
    """Mirrors ``torch.complex(real, imag)``: the complex tensor ``real + i*imag`` (broadcast;
    float32 -> complex64, float64 -> complex128). Autograd ``ComplexBackward0``. RuntimeError
    unless both are float tensors of one dtype, as torch."""
    check_complex_parts(real, imag)
    return apply_op(OPS["complex"], (real, imag))


def check_complex_parts(a, b):
    """torch's checks on the two real parts of ``complex``/``polar``: RuntimeError naming both
    scalar types unless each is Half/Float/Double, then one naming the second's type unless they
    match (both texts as torch)."""
    ok = (_dt.float16, _dt.float32, _dt.float64)
    if a.dtype not in ok or b.dtype not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dt.SCALAR_NAMES[a.dtype.name]} and {_dt.SCALAR_NAMES[b.dtype.name]}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dt.SCALAR_NAMES[a.dtype.name]} but got scalar type "
                           f"{_dt.SCALAR_NAMES[b.dtype.name]} for second argument")


__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "is_complex", "angle", "view_as_real", "view_as_complex", "complex_"]

complex_.__name__ = complex_.__qualname__ = "complex"
real_fn.__name__ = real_fn.__qualname__ = "real"
imag_fn.__name__ = imag_fn.__qualname__ = "imag"
