"""``sys.modules["torch"] = tracegrad``: submodule imports then find tracegrad's own modules.

A program (or a test file of PyTorch's) aliased onto tracegrad this way goes on to ``import
torch.nn`` or ``from torch.testing._internal.common_utils import TestCase``. Python looks such a
name up along the parent's ``__path__`` -- tracegrad's folder -- and would execute
``tracegrad/nn/__init__.py`` a second time under the name ``torch.nn``: a second ``Module``
class, a second op table (whose cache registration then fails). This finder, first on
``sys.meta_path``, answers ``torch.X`` while ``sys.modules["torch"]`` is tracegrad with the
module object ``tracegrad.X`` itself, so ``torch.nn is tracegrad.nn``. It does nothing for the
real torch (then ``sys.modules["torch"]`` is torch) or for names tracegrad lacks (the import
fails as it would: ModuleNotFoundError).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.X`` as the already-importable ``tracegrad.X`` module object."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._spec = module.__spec__       # the import machinery overwrites __spec__ next: put it back after
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec       # the module keeps its own name, spec and package
        if hasattr(module, "__path__"):
            _alias_shadowed_children(module)


def _alias_shadowed_children(package):
    """Registers ``torch.P.X`` for each loaded submodule ``tracegrad.P.X`` that ``tracegrad.P.X``
    (the attribute) does not name: torch.autograd.gradcheck is the function, its module is only
    reached by import. Python's first import of a submodule name sets that attribute of the
    parent to the module, so a first ``from torch.autograd.gradcheck import ...`` through this
    finder would turn ``torch.autograd.gradcheck`` into a module; a name already in
    ``sys.modules`` is returned as it is (torch's own package imported them all first)."""
    ours, prefix = package.__name__, package.__name__ + "."
    alias = "torch" + ours[len("tracegrad"):]
    for name, mod in list(sys.modules.items()):
        child = name[len(prefix):] if name.startswith(prefix) else ""
        if child and "." not in child and vars(package).get(child, mod) is not mod:
            sys.modules.setdefault(alias + "." + child, mod)


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """The ``sys.meta_path`` entry (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch."):
            return None
        root = sys.modules.get("torch")
        if getattr(root, "__name__", None) != "tracegrad":
            return None
        if fullname.count(".") == 1:
            _alias_shadowed_children(root)   # the root package is aliased by assignment, not loaded here
        ours = "tracegrad" + fullname[len("torch"):]
        if ours in sys.modules:
            found = sys.modules[ours]
            is_package = hasattr(found, "__path__")
        else:
            try:
                spec = importlib.util.find_spec(ours)
            except (ImportError, ValueError):
                return None
            if spec is None:
                return None
            is_package = spec.submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(ours), is_package=is_package)


def install():
    """Puts one ``TorchAliasFinder`` first on ``sys.meta_path`` (idempotent)."""
    if not any(type(f).__name__ == "TorchAliasFinder" for f in sys.meta_path):
        sys.meta_path.insert(0, TorchAliasFinder())
