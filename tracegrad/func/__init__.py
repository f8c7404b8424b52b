"""``tracegrad.func``: mirrors ``torch.func`` on JAX's transforms (DESIGN 2, layer L6).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call``, ``stack_module_state`` -- torch.func's names, arguments and errors; they
nest and compose (per-sample gradients: ``vmap(grad(loss), in_dims=(None, 0, 0))`` over
``functional_call``). A Python function over Tensors runs under JAX's transform by wrapping
each incoming array (a tracer) into a Tensor and unwrapping the results (``_wrap.py``).

JAX interop: ``to_jax(module) -> (params, apply)`` (a Module as a pure JAX function for
``jax.jit``/``jax.grad``/``jax.vmap``/optax), ``from_jax``/``Tensor.jax()``, ``from_dlpack``/
``to_dlpack``, ``jax_function`` (a JAX function as one tracegrad op with one autograd node).
"""
from .. import _state
from . import _custom_function, _hooks
from ._functionalize import functionalize, replace_all_batch_norm_modules_  # noqa: F401
from ._interop import from_dlpack, from_jax, jax_function, to_dlpack  # noqa: F401
from ._module import functional_call, stack_module_state, to_jax  # noqa: F401
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp  # noqa: F401
from ._vmap import vmap  # noqa: F401

_state.FUNC_FUNCTION[0] = _custom_function
_state.FUNC_HOOK[0] = _hooks.register

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state", "functionalize", "replace_all_batch_norm_modules_", "to_jax", "from_jax", "jax_function", "from_dlpack", "to_dlpack"]
