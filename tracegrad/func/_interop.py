"""JAX interop for library users: ``from_jax``/``Tensor.jax()``, DLPack exchange, and
``jax_function`` (a pure JAX function as one tracegrad op with one autograd node)."""
from __future__ import annotations

import functools

import jax
import numpy as np

from ..autograd._dispatch import apply_op
from .._ops.derived import jax_function_op
from .._api.conversion import export_dlpack
from .._tensor.tensor import Tensor
from ._wrap import run_jax


def from_jax(array):
    """A Tensor holding ``array`` (a ``jax.Array``) itself: no copy, same device and dtype.
    JAX arrays are immutable, so the Tensor and the array never diverge by a write to the array;
    an in-place op on the Tensor gives the Tensor a new array and leaves ``array`` unchanged.
    The Tensor does not require grad. Raises TypeError for anything but a ``jax.Array``.
    No torch counterpart (``torch.from_dlpack`` is the closest; it also works here)."""
    if not isinstance(array, jax.Array):
        raise TypeError(f"tracegrad.from_jax: expected a jax.Array, got {type(array).__name__}; use "
                        "tracegrad.from_numpy or tracegrad.tensor for other data")
    return Tensor._make(array)


class _Capsule:
    """A DLPack producer around a legacy capsule: JAX imports only objects with ``__dlpack__``."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, **_):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """Mirrors ``torch.from_dlpack(ext_tensor, *, device=None, copy=None)`` /
    ``torch.utils.dlpack.from_dlpack``: a Tensor sharing memory with ``ext_tensor`` where JAX
    can alias it (CPU arrays with JAX's alignment; JAX may copy otherwise). ``ext_tensor`` is
    any object with ``__dlpack__`` (a torch tensor, numpy array, JAX array, another Tensor) or a
    DLPack capsule (assumed to be on the CPU). ``device`` moves the result there; ``copy=True``
    gives a Tensor of its own. A Tensor comes back as an alias (``detach()``: same storage,
    writes show on both); for other sources writing afterwards is undefined, as for JAX's own
    ``from_dlpack``. Raises RuntimeError for other objects (torch's "invalid capsule")."""
    if isinstance(ext_tensor, Tensor):
        # through its own __dlpack__ checks (BufferError for a tensor requiring grad, as torch's);
        # the result shares its storage, strides and view, as torch's import of a torch tensor
        ext_tensor.__dlpack__()
        out = ext_tensor.detach()
    else:
        if type(ext_tensor).__name__ == "PyCapsule":
            ext_tensor = _Capsule(ext_tensor, (1, 0))
        if not hasattr(ext_tensor, "__dlpack__"):
            raise RuntimeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
                            f"{type(ext_tensor).__name__}")
        out = Tensor._make(run_jax(jax.dlpack.from_dlpack, ext_tensor))
    if device is not None:
        out = out.to(device)
    return out.clone() if copy else out


def to_dlpack(tensor):
    """Mirrors ``torch.utils.dlpack.to_dlpack``: a DLPack capsule of the Tensor's array (no
    copy), to be consumed once. Like torch's, it also exports a tensor that requires grad (its
    value; autograd history does not travel). Raises TypeError for non-Tensors."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    return export_dlpack(tensor)


def _signature(args, kwargs):
    return (tuple((a.shape, a.dtype) if isinstance(a, Tensor) else (type(a), a) for a in args),
            tuple(sorted(kwargs.items())))


class jax_function:  # noqa: N801 -- used like a function decorator, as tracegrad.jax_function
    """Wraps a pure JAX function ``fn(*arrays, **static) -> array | tuple of arrays`` so that
    calling it on Tensors runs it as ONE tracegrad op: the forward is ``jax.jit(fn)``; when an
    input requires grad one autograd node is recorded whose backward is the jitted ``jax.vjp``
    of ``fn`` (so ``backward()``, ``autograd.grad`` and ``create_graph=True`` to any order work).

    Positional arguments: Tensors (differentiable when floating and requiring grad) or Python
    numbers; keyword arguments are static (hashable; one compilation per distinct value).
    Output: a Tensor, or a tuple of Tensors when ``fn`` returns a tuple/list.
    ``name`` sets the node's name (``grad_fn`` is ``<name>Backward``; default ``fn.__name__``).
    Inside ``tracegrad.func`` transforms and ``jax.jit`` the function is traced inline.
    Raises TypeError when ``fn`` returns something other than an array or a tuple of arrays.
    No torch counterpart (the closest is a custom ``autograd.Function``).

    >>> import jax.numpy as jnp
    >>> softplus = tracegrad.jax_function(lambda x: jnp.logaddexp(x, 0.0))
    >>> y = softplus(tracegrad.zeros(2, requires_grad=True))
    """

    def __init__(self, fn, *, name=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        fn_name = getattr(fn, "__name__", "")
        self.name = name or (fn_name if fn_name.isidentifier() else "JaxFunction")
        self._ops: dict = {}
        self._nouts: dict = {}

    def _n_out(self, args, kwargs):
        key = _signature(args, kwargs)
        n = self._nouts.get(key)
        if n is None:
            specs = [jax.ShapeDtypeStruct(a.shape, a._value.dtype) if isinstance(a, Tensor) else a for a in args]
            shape_of = functools.partial(jax.eval_shape, functools.partial(self.fn, **kwargs))
            traced = any(isinstance(a, Tensor) and isinstance(a._value, jax.core.Tracer) for a in args)
            # inside a trace keep the trace's x64 mode (see _wrap.run_jax)
            out = shape_of(*specs) if traced else run_jax(shape_of, *specs)
            if isinstance(out, (tuple, list)) and all(isinstance(o, jax.ShapeDtypeStruct) for o in out):
                n = len(out)
            elif isinstance(out, jax.ShapeDtypeStruct):
                n = 1
            else:
                raise TypeError(f"tracegrad.jax_function({self.name}): the function must return an array or a "
                                f"tuple of arrays, got {jax.tree_util.tree_structure(out)}")
            self._nouts[key] = n
        return n

    def _op(self, nargs, n_out):
        op = self._ops.get((nargs, n_out))
        if op is None:
            fn = self.fn if n_out == 1 else _as_tuple_fn(self.fn)
            op = self._ops[(nargs, n_out)] = jax_function_op(self.name, fn, nargs, n_out, doc=self.__doc__)
        return op

    def __call__(self, *args, **kwargs):
        for a in args:
            if not isinstance(a, (Tensor, int, float, bool, complex, np.number)):
                raise TypeError(f"tracegrad.jax_function({self.name}): positional arguments must be Tensors or "
                                f"Python numbers, got {type(a).__name__}; pass other values as keywords")
        op = self._op(len(args), self._n_out(args, kwargs))
        return apply_op(op, args, tuple(sorted(kwargs.items())))


def _as_tuple_fn(fn):
    @functools.wraps(fn)
    def wrapped(*a, **k):
        return tuple(fn(*a, **k))
    return wrapped
