"""``torch.jit``'s user-facing names, for programs that script or trace a function or module
on the way (``@torch.jit.script`` on a fused activation, ``torch.jit.trace(model, x)`` before
an export, ``@torch.jit.ignore`` on a debugging method).

tracegrad has no TorchScript: ``script`` and ``trace`` return what they are given, which
computes what the scripted or traced version computes (TorchScript's contract is to keep eager
semantics), with gradients as eagerly. To compile a function into one XLA program, use
``tracegrad.compile``. Saving and loading TorchScript archives is not supported: ``save`` and
``load`` raise RuntimeError pointing at ``tracegrad.save`` of the module or its
``state_dict()``.
"""
from __future__ import annotations

import copy
import os
import typing

from tracegrad import Tensor

from .nn.modules.module import Module
from .nn.parameter import Parameter, is_lazy
from ._ops.warn import warn as _warn

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "annotate", "Final", "save", "load", "freeze", "optimize_for_inference", "fork", "wait",
           "ScriptModule", "ScriptFunction", "interface"]

Final = typing.Final


class ScriptModule(Module):
    """Mirrors ``torch.jit.ScriptModule``, an ``nn.Module``: programs written for TorchScript's
    old API subclass it (PlaNet's models: ``class TransitionModel(jit.ScriptModule)`` with
    ``@jit.script_method`` forwards) and get an ordinary module that runs eagerly. Nothing
    tracegrad returns is one (``script`` gives back the module itself)."""


def script_method(fn):
    """Mirrors ``torch.jit.script_method``: returns ``fn`` (the method runs eagerly), with
    torch's DeprecationWarning pointing at ``torch.compile``."""
    _warn("`torch.jit.script_method` is deprecated. Please switch to `torch.compile` or `torch.export`.",
          DeprecationWarning)
    return fn


class ScriptFunction:
    """Stands for ``torch.jit.ScriptFunction`` in ``isinstance`` checks (nothing is one)."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Mirrors ``torch.jit.script`` (and its DeprecationWarning): returns ``obj`` (a function, an ``nn.Module`` or a class)
    unchanged; it runs eagerly with torch's semantics. Use ``tracegrad.compile`` for a
    compiled program.

    Raises: RuntimeError, as torch's scripting does before compiling, for a module (or submodule)
    that still holds lazy (uninitialized) parameters or buffers -- run a forward pass first;
    TypeError, as torch, for a value of a built-in scalar type (a str, a number, None), which
    has no code to script.
    """
    _warn("`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`.",
          DeprecationWarning)
    if obj is None or isinstance(obj, (str, bytes, int, float, complex)):
        raise TypeError(f"{type(obj)} is a built-in class: torch.jit.script takes a function, an nn.Module or a "
                        "class")
    if isinstance(obj, Module):
        for mod in obj.modules():
            _check_module_initialized(mod)
    return obj


def _check_module_initialized(mod):
    # torch.jit._recursive.check_module_initialized, run on every module scripting visits
    name = f"{type(mod).__module__}.{type(mod).__qualname__}"
    for kind, table in (("parameters", mod._parameters), ("buffers", mod._buffers)):
        for key, value in table.items():
            if value is not None and is_lazy(value):
                raise RuntimeError(f"'{name}' has uninitialized {kind} {key}. Did you forget to run a forward pass?")


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Mirrors ``torch.jit.trace`` (and its DeprecationWarning): runs ``func`` once on ``example_inputs`` (a tuple of
    arguments, a list, or one Tensor; or ``example_kwarg_inputs``, a dict), as torch's trace
    does -- so a call that cannot run raises what the eager call raises -- and returns ``func``
    (a function or an ``nn.Module``) unchanged. Unlike a torch trace it keeps data-dependent
    Python control flow live (a trace would freeze the branch the example took); results equal
    eager's either way for the traced inputs. RuntimeError, as torch, without example inputs
    or for ``example_kwarg_inputs`` that is not a dict."""
    _warn("`torch.jit.trace` is deprecated. Please switch to `torch.compile` or `torch.export`.",
          DeprecationWarning)
    if example_inputs is None:
        if not isinstance(example_kwarg_inputs, dict):
            raise RuntimeError("example_kwarg_inputs should be a dict (or give example_inputs, a tuple of the "
                               "arguments to trace with)")
        func(**example_kwarg_inputs)
        return func
    if not callable(func):
        raise RuntimeError(f"torch.jit.trace: expected a function or an nn.Module to trace, got "
                           f"{type(func).__name__}")
    func(*_example_args(example_inputs))
    return func


def _example_args(example_inputs):
    # torch's reading of example_inputs: one Tensor (or dict) is one argument, any other
    # iterable the arguments (TypeError for what is not iterable)
    if isinstance(example_inputs, (Tensor, dict)):
        return (example_inputs,)
    return tuple(example_inputs)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """Mirrors ``torch.jit.trace_module``: runs each method named in ``inputs`` (a dict of
    method name -> example arguments) once, as ``trace`` does, and returns ``mod`` unchanged.
    AttributeError, as torch, for a ``mod`` that is not an nn.Module, ``inputs`` that is not
    a dict, or a method ``mod`` does not have."""
    _warn("`torch.jit.trace_method` is deprecated. Please switch to `torch.compile` or `torch.export`.",
          DeprecationWarning)
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, args in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            method(**args)
        else:
            method(*_example_args(args))
    return mod


def _decorator_with_options(fn=None, **_):
    # usable as ``@ignore`` and ``@ignore(drop=True)``: both leave the function as it is
    if callable(fn):
        return fn
    return lambda f: f


def ignore(drop=False, **kwargs):
    """Mirrors ``torch.jit.ignore`` (``@ignore`` or ``@ignore(drop=True)``): the function is
    left as it is (nothing is compiled by TorchScript here)."""
    return _decorator_with_options(drop, **kwargs)


def unused(fn):
    """Mirrors ``torch.jit.unused``: returns ``fn`` unchanged."""
    return fn


def export(fn):
    """Mirrors ``torch.jit.export``: returns ``fn`` unchanged."""
    return fn


def interface(obj):
    """Mirrors ``torch.jit.interface``: returns the class unchanged."""
    return obj


def is_scripting() -> bool:
    """Mirrors ``torch.jit.is_scripting``: always False (code runs as Python)."""
    return False


def is_tracing() -> bool:
    """Mirrors ``torch.jit.is_tracing``: always False."""
    return False


def annotate(the_type, the_value):
    """Mirrors ``torch.jit.annotate``: returns ``the_value``."""
    return the_value


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Mirrors ``torch.jit.freeze``: a frozen copy of the eval-mode module ``mod`` -- torch's
    clones the module and inlines its parameters and buffers as constants: its results do not
    require grad, and the constants are the same tensors (an in-place change to ``mod``'s
    weights reaches it). Here: a copy of the module whose parameters are detached aliases of
    ``mod``'s (same storage, ``requires_grad=False``) and whose buffers are ``mod``'s own; it
    still lists them in ``parameters()``, where torch's lists none.

    Raises: RuntimeError, as torch, for a module in training mode (call ``.eval()`` first).
    """
    if not isinstance(mod, Module):
        return mod
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call "
                           ".eval() on your module before freezing.")
    memo = {id(b): b for b in mod.buffers()}
    memo.update({id(p): Parameter(p.detach(), requires_grad=False) for p in mod.parameters()})
    return copy.deepcopy(mod, memo)


def optimize_for_inference(mod, other_methods=None):
    """Mirrors ``torch.jit.optimize_for_inference``: returns ``mod`` unchanged."""
    return mod


class _Future:
    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """Mirrors ``torch.jit.fork``: runs ``func`` now and returns a future holding its result
    (``wait`` returns it)."""
    return _Future(func(*args, **kwargs))


def wait(future):
    """Mirrors ``torch.jit.wait``: the result of a ``fork``."""
    return future.wait()


def save(m, f, _extra_files=None):
    """``torch.jit.save`` writes a TorchScript archive, which tracegrad cannot: RuntimeError."""
    raise RuntimeError("tracegrad.jit.save: TorchScript archives are not supported (tracegrad.jit.script "
                       "returns the module itself); save the module with tracegrad.save(model, f) or its "
                       "weights with tracegrad.save(model.state_dict(), f)")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """``torch.jit.load`` reads a TorchScript archive, which tracegrad cannot: RuntimeError
    (ValueError first, as torch, for a path that does not exist or is a directory)."""
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    raise RuntimeError("tracegrad.jit.load: TorchScript archives are not supported; load a checkpoint "
                       "written by tracegrad.save with tracegrad.load(f, weights_only=False)")
