"""Random draws at the API layer: the ones that stay differentiable (``standard_gamma``, torch's
private ``torch._standard_gamma``, behind ``distributions.Gamma``, ``Dirichlet`` and ``Beta``),
draws from tensor parameters (``normal(mean, std)`` with tensors, ``poisson``, ``binomial``),
the Tensor spellings of ``bernoulli``/``multinomial`` and ``empty_strided``. Streams come from
tracegrad's generator (they differ from torch's; ``manual_seed`` makes them repeatable)."""
from __future__ import annotations

import functools

import jax.numpy as jnp

from ..autograd._dispatch import apply_op
from .._ops import dtypes as _dt, random as _rnd
from .._ops.errors import broadcast_shape
from .._ops.registry import OPS
from .._tensor import factories as _factories, generator as _generator, memory_format as _mf
from .._tensor.tensor import Tensor, see_reads, strides_of
from .._x64 import with_x64
from ._registry import function, method
from .creation import _sizes
from .out_functions import method_form
from .strided import as_strided
from .._tensor.out import accepts_out


def standard_gamma(concentration, generator=None):
    """Mirrors ``torch._standard_gamma(concentration)``: one Gamma(concentration, rate 1) draw per
    element, same shape and floating dtype, from tracegrad's generator (streams differ from
    torch's). Autograd: ``StandardGammaBackward0``; the gradient with respect to
    ``concentration`` is the implicit reparameterization one (torch's ``_standard_gamma_grad``).
    A draw that underflows is the dtype's smallest normal number, as torch.
    Raises: TypeError unless ``concentration`` is a floating tensor."""
    if not isinstance(concentration, Tensor) or not concentration.dtype.is_floating_point:
        raise TypeError("standard_gamma(): concentration must be a floating-point Tensor")
    k = _generator.key_for(generator, "_standard_gamma()")
    sample = Tensor._make(with_x64(_rnd.standard_gamma)(k, concentration._value))
    return apply_op(OPS["standard_gamma"], (concentration, sample))


@function()
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
           layout=None, pin_memory=False):
    """Mirrors ``torch.normal``'s four overloads: tensor ``mean`` and/or ``std`` (broadcast;
    the other may be a float) give one draw per element, in the tensor's dtype, with a node
    (``NormalBackward1/2/3``) whose gradient for ``mean`` and ``std`` is zero, as torch's; two
    floats and ``size`` give a fresh tensor (``tracegrad.normal`` of the factories), written
    into an ``out=`` of another shape without the resize warning, as torch's factories.
    RuntimeError for a negative ``std`` (tensor values checked in eager only); TypeError for
    ``dtype``/``device``/``layout``/``requires_grad``/``pin_memory`` with a Tensor mean or std
    (torch's tensor overloads take ``generator`` and ``out`` only)."""
    tensors = isinstance(mean, Tensor) or isinstance(std, Tensor)
    if tensors and size is not None:   # only the overload of two floats takes a size
        raise TypeError("normal() received an invalid combination of arguments: size is taken only with a float "
                        "mean and a float std (a Tensor mean or std gives the draw its own shape); drop size")
    if tensors:
        for name, v in (("dtype", dtype), ("device", device), ("layout", layout), ("requires_grad", requires_grad),
                        ("pin_memory", pin_memory)):
            if v is not None and v is not False:   # (requires_grad=True would be dropped silently)
                raise TypeError(f"normal() received an invalid combination of arguments: {name}= is not taken with "
                                "a Tensor mean or std; call .to()/.requires_grad_() on the result, or pass Python "
                                "float mean and std with a size")
    draw = _normal_of_tensors if tensors else _normal_of_size
    return draw(mean, std, size, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad,
                out=out, layout=layout, pin_memory=pin_memory)


def _normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
            layout=None, pin_memory=False):
    if not (isinstance(mean, Tensor) or isinstance(std, Tensor)):
        return _factories.normal(mean, std, size, generator=generator, dtype=dtype, device=device,
                                 requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)
    ref = mean if isinstance(mean, Tensor) else std
    _rnd.check_same_randomness(*(a._value for a in (mean, std) if isinstance(a, Tensor)))
    shape = broadcast_shape((getattr(mean, "shape", ()), getattr(std, "shape", ())), "normal")
    z = _factories.meta_draw((mean, std), shape, ref._value.dtype)    # (meta: no values to check or draw)
    if z is None:
        _rnd.check_std(std._value if isinstance(std, Tensor) else std, "normal()")
    if not (ref.is_floating_point() or ref.is_complex()):
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{_rnd.scalar_name(ref._value.dtype)}'")
    if z is None:
        z = Tensor._make(with_x64(_rnd.normal)(_generator.key_for(generator, "normal()"), shape, ref._value.dtype, api="normal()"))
    sample = (z * std + mean).detach()
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        return apply_op(OPS["normal_tensor_tensor"], (mean, std, sample))
    if isinstance(mean, Tensor):
        return apply_op(OPS["normal_tensor_float"], (mean, sample))
    return apply_op(OPS["normal_float_tensor"], (std, sample))


_normal_of_tensors = accepts_out("normal")(_normal)
_normal_of_size = accepts_out("normal", keep_shape="resize")(_normal)


@function()
def poisson(input, generator=None):
    """Mirrors ``torch.poisson``: one Poisson(``input``) count per element, as floats of
    ``input``'s dtype; gradient zero for ``input`` (``PoissonBackward0``), as torch.
    NotImplementedError for integer input; RuntimeError for a negative rate (eager)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_rnd.scalar_name(input._value.dtype)}'; "
                                  "pass floating rates")
    _rnd.check_same_randomness(input._value)
    sample = Tensor._make(with_x64(_rnd.poisson)(_generator.key_for(generator, "poisson()"), input._value))
    return apply_op(OPS["poisson"], (input, sample))


@function()
def binomial(count, prob, generator=None):
    """Mirrors ``torch.binomial``: one Binomial(``count``, ``prob``) draw per element of the
    broadcast shape, as floats of ``count``'s dtype. Not differentiable (torch's backward is
    not implemented either; here the result simply does not require grad). ValueError for
    non-floating ``count`` or ``prob``, as torch."""
    for name, t in (("count", count), ("prob", prob)):
        if not t.is_floating_point():
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{_rnd.scalar_name(t._value.dtype)}")
    broadcast_shape((count.shape, prob.shape), "binomial")   # (JAX's ValueError otherwise)
    see_reads(count, prob)    # drawn from the values, not through an op
    return Tensor._make(with_x64(_rnd.binomial)(_generator.key_for(generator, "binomial()"), count._value, prob._value))


@function()
@functools.wraps(_factories.bernoulli)
def bernoulli(input, *args, **kwargs):
    """Mirrors ``torch.bernoulli`` (``_factories.bernoulli`` draws); a draw from the
    probabilities in a floating ``input`` that requires grad records ``BernoulliBackward0``,
    whose gradient for ``input`` is zero (NOTE [zero-gradient draws]), as torch: PonderNet's
    ``torch.bernoulli(lambda_n)`` of a sigmoid output requires grad in torch."""
    draw = _factories.bernoulli(input, *args, **kwargs)
    if args or kwargs.get("p") is not None or kwargs.get("out") is not None or not isinstance(input, Tensor) \
            or not input.is_floating_point() or not input.requires_grad or draw.shape != input.shape:
        return draw
    return apply_op(OPS["bernoulli"], (input, draw))


method("bernoulli")(method_form(bernoulli))   # the functions' out= is not the methods'
method("multinomial")(method_form(_factories.multinomial))


@function()
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """Mirrors ``torch.empty_strided``: a tensor of ``size`` laid over a fresh (zero-filled, as
    ``tracegrad.empty``) storage with ``stride`` (``stride()`` reports it). RuntimeError when
    ``stride`` and ``size`` differ in length or a stride is negative; TypeError for a
    ``layout`` that is not one, NotImplementedError for a sparse one (torch has no sparse kernel)."""
    _factories.check_pin_memory(pin_memory, device)
    _factories._dense_layout(layout, "empty_strided")
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(size)}, stride {list(stride)}")
    _factories.check_storage_size(size, _dt.to_dtype(dtype).itemsize if dtype is not None else
                                  _dt.get_default_dtype().itemsize, stride)
    if all(s >= 0 for s in stride) and _mf.non_overlapping_and_dense(size, stride):
        # a dense layout: a laid-out tensor (NOTE [storage layouts]), which ops' outputs follow
        out = _mf.lay_out(_factories.empty(size, dtype=dtype, device=device), _mf.dense_order(size, stride))
        if strides_of(out) == stride:
            return out._factory_requires_grad() if requires_grad else out
    n = 1 + sum((k - 1) * s for k, s in zip(size, stride)) if all(size) else 0
    out = as_strided(_factories.empty(n, dtype=dtype, device=device), size, stride, 0)
    out._base = None      # a tensor of its own (no view of the storage-sized one it was cut from)
    return out._factory_requires_grad() if requires_grad else out


@function()
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """Mirrors ``torch.empty_permuted``: an uninitialised (as ``tracegrad.empty``) dense tensor of
    logical shape ``size`` whose dims lie in memory in the order ``physical_layout`` (outermost
    first): ``empty_permuted((2, 3), (1, 0))`` has strides ``(1, 2)``. RuntimeError when
    ``physical_layout`` is not a permutation of the dims."""
    _factories.check_pin_memory(pin_memory, device)
    if getattr(layout, "name", None) in _factories._COMPRESSED:   # torch strides its result: RuntimeError
        raise RuntimeError(f"empty_permuted(): Sparse CSR tensors do not have strides (layout={layout!r}); "
                           "make a strided tensor and convert it")
    _factories._dense_layout(layout, "empty_permuted")
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(perm)} must be a permutation of the "
                           f"{len(size)} dims of size {list(size)}")
    stride, step = [0] * len(size), 1
    for d in reversed(perm):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    """Mirrors ``Tensor.new_empty_strided``: ``empty_strided`` with ``self``'s dtype by default.
    RuntimeError when ``size`` and ``stride`` differ in length (torch's text for this form)."""
    _factories.check_pin_memory(pin_memory, device)
    if len(_sizes((size,))) != len(tuple(stride)):
        raise RuntimeError(f"dimensionality of sizes ({len(_sizes((size,)))}) must match dimensionality of "
                           f"strides ({len(tuple(stride))})")
    return empty_strided(_sizes((size,)), stride, dtype=dtype or self.dtype, requires_grad=requires_grad)
