"""``tracegrad.utils.swap_tensors``: exchange two Tensor objects' contents in place."""
import copyreg
import weakref

from .._tensor.tensor import Tensor

# the gist of torch's words, which tests match on ("Trying to execute AccumulateGrad node that was
# poisoned by swap_tensors")
_POISONED = ("Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can happen when you "
             "try to run backward on a tensor that was swapped. For a module m with "
             "`torch.__future__.set_swap_module_params_on_conversion(True)` you should not change the device or "
             "dtype of the module (e.g. `m.cpu()` or `m.half()`) between running forward and backward. To resolve "
             "this, please only change the device/dtype before running forward (or after both forward and backward).")


def _poisoned(grad_outputs):
    raise RuntimeError(_POISONED)


def swap_tensors(t1, t2):
    """Mirrors ``torch.utils.swap_tensors``: after the call ``t1`` is what ``t2`` was and the
    other way round -- class (``Tensor``/``Parameter``/subclass), data, ``requires_grad``,
    ``grad``, ``grad_fn``, hooks and instance attributes -- while every reference to either
    object (a module's attribute, an optimizer's param list) stays valid. Any shapes and dtypes.

    Autograd: an ``AccumulateGrad`` node alive for either tensor (a graph built before the swap
    and not yet freed) raises RuntimeError when backward reaches it, as torch, also from graphs
    built after the swap while it lives; once it is freed, new graphs are ordinary.
    Raises: TypeError for non-Tensors; RuntimeError, as torch, when either tensor has a weak
    reference, or when their classes have different ``__slots__``.
    Differs from torch: torch also refuses a tensor other C++ objects hold (its use count);
    tracegrad has no such count, so views made of ``t1`` before the swap keep ``t1``'s old data
    and autograd history rather than raising."""
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if weakref.getweakrefcount(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    slots = set(copyreg._slotnames(type(t1)))
    if slots != set(copyreg._slotnames(type(t2))):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    for t in (t1, t2):
        node = t._acc() if t._acc is not None else None
        if node is not None:
            node.register_prehook(_poisoned)
    cls1, cls2 = type(t1), type(t2)
    t1.__class__, t2.__class__ = cls2, cls1
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    # Tensor's own slots hold the data, the view chain and the autograd state
    for name in slots:
        a, b = getattr(t1, name, _MISSING), getattr(t2, name, _MISSING)
        _set(t1, name, b)
        _set(t2, name, a)


_MISSING = object()


def _set(t, name, v):
    if v is _MISSING:
        if hasattr(t, name):
            delattr(t, name)
    else:
        setattr(t, name, v)
