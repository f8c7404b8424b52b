"""``tracegrad.utils.module_tracker``: mirrors ``torch.utils.module_tracker``.

``ModuleTracker`` keeps the set of modules whose forward (or backward) is running, by their
fully qualified names, from the global module forward hooks and, for backward, multi-grad
hooks on each module's inputs and outputs: a module enters ``parents`` in backward once the
gradients of all its outputs are ready and leaves it once its inputs' gradients are.
"""
from __future__ import annotations

import logging
import weakref

import tracegrad
from ..autograd.graph import register_multi_grad_hook
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

logger = logging.getLogger(__name__)

__all__ = ["ModuleTracker"]


def _grad_tensors(tree):
    leaves, _ = tree_flatten(tree)
    return [a for a in leaves if isinstance(a, tracegrad.Tensor) and a.requires_grad]


class ModuleTracker:
    """Mirrors ``torch.utils.module_tracker.ModuleTracker``: a context manager whose ``parents``
    (a set of str) names every module running its forward or backward, by qualified name from
    the outermost module called (``'Sequential.0'``; the top module by its class name), plus
    ``'Global'`` (always present). ``is_bw`` is True while a backward call runs. As torch's,
    ``parents`` is reset to ``{'Global'}`` at the end of each backward call.

    >>> m = tracegrad.nn.Sequential(tracegrad.nn.Linear(2, 2))
    >>> with ModuleTracker() as tracker:
    ...     _ = m(tracegrad.ones(1, 2))
    >>> tracker.parents
    {'Global'}
    """

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()   # module -> qualified name
        self._seen_modules = weakref.WeakSet()              # modules whose children are named
        self._has_callback = False
        self._hooks = []

    def _maybe_set_engine_callback(self) -> None:
        # assumes one backward call at a time, as torch's
        if self._has_callback:
            return

        def callback():
            self.parents = {"Global"}
            self._has_callback = False

        tracegrad.autograd.Variable._execution_engine.queue_callback(callback)
        self._has_callback = True

    @property
    def is_bw(self) -> bool:
        """Whether a backward call is running now."""
        return tracegrad._C._current_graph_task_id() != -1

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _get_append_fn(self, name, is_bw):
        def enter(*args):
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module was already entered. "
                            "%s during %s", name, "backward" if is_bw else "forward")
            self.parents.add(name)
        return enter

    def _get_pop_fn(self, name, is_bw):
        def leave(*args):
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a Module that was never "
                            "entered. %s during %s", name, "backward" if is_bw else "forward")
        return leave

    def _fw_pre_hook(self, mod, input) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = _grad_tensors(input)
        if tensors:   # backward leaves the module once all its inputs' gradients are computed
            self._hooks.append(register_multi_grad_hook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod, input, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = _grad_tensors(output)
        if tensors:   # backward enters the module once all its outputs' gradients are in
            self._hooks.append(register_multi_grad_hook(tensors, self._get_append_fn(name, True)))

    def __enter__(self):
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
