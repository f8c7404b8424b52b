"""The package root shows torch's names and nothing private (issue 7, DESIGN 1).

``dir(tracegrad)`` may hold: torch 2.13's public top-level names, the few documented extras
below, tracegrad's own submodules (Python sets ``tracegrad._ops`` when it is imported, as
torch has ``torch._tensor``) and module dunders. A helper leaking out of a private module
(``tracegrad.g``, ``tracegrad._SAME``, ``tracegrad.annotations`` from a star import) fails here.
"""
import ast
import pathlib
import types

import pytest

from tracegrad._api.argcheck import unguarded

import tracegrad

torch = pytest.importorskip("torch")

# Public names torch does not have, each documented in tracegrad/__init__.py's docstring.
EXTRAS = {
    "from_jax": "tracegrad.func: a JAX array as a tracegrad tensor",
    "jax_function": "tracegrad.func: a JAX function as one tracegrad op (its jax.vjp as backward)",
    "viz": "tracegrad.viz: draws the autograd graph",
}
# Names torch has where tracegrad's object is of another kind, with the reason.
KIND_DIFFERS = {
}
PRIVATE_SOURCES = ["tracegrad._api.functions", "tracegrad._api.nn_functions"]
# tracegrad-only subpackages that `import tracegrad` does not load: they appear as attributes
# only once something imports them (`python -m tracegrad.examples.digits`, a test)
ON_DEMAND = {"examples": "the runnable examples (digits, charlm)"}


def _public():
    return [n for n in dir(tracegrad) if not n.startswith("_") and n not in ON_DEMAND]


def test_on_demand_subpackages_are_not_loaded_by_import():
    import subprocess
    import sys
    code = "import tracegrad; print(sorted(n for n in %r if hasattr(tracegrad, n)))" % (sorted(ON_DEMAND),)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_private_names_leak():
    leaked = []
    for name in dir(tracegrad):
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        obj = getattr(tracegrad, name)
        if hasattr(torch, name) and not isinstance(obj, types.ModuleType):
            continue        # torch's own underscore names programs call (torch._foreach_add...)
        if not (isinstance(obj, types.ModuleType) and obj.__name__ == f"tracegrad.{name}"):
            leaked.append(name)
    assert not leaked, f"private helpers visible as tracegrad.<name>: {leaked}"


def test_public_names_are_torch_names_or_documented_extras():
    unknown = [n for n in _public() if not hasattr(torch, n) and n not in EXTRAS]
    assert not unknown, (f"tracegrad.{unknown} are not torch 2.13 names: make them private or add "
                         f"them to EXTRAS with a reason (and to tracegrad/__init__.py's docstring)")


def test_extras_are_not_stale():
    for name in EXTRAS:
        assert hasattr(tracegrad, name), f"EXTRAS lists tracegrad.{name}, which no longer exists"
        assert not hasattr(torch, name), f"torch has {name} now: drop it from EXTRAS"
        assert name in tracegrad.__doc__, f"tracegrad/__init__.py's docstring should mention {name}"


def test_public_modules_are_tracegrad_modules():
    for name in _public():
        obj = getattr(tracegrad, name)
        if isinstance(obj, types.ModuleType):
            assert obj.__name__ == f"tracegrad.{name}", f"tracegrad.{name} is {obj.__name__}"


def test_same_kind_of_object_as_torch():
    differ = []
    for name in _public():
        if name in EXTRAS:
            continue
        ours, theirs = getattr(tracegrad, name), getattr(torch, name)
        kind = [(callable(o), isinstance(o, types.ModuleType), isinstance(o, type)) for o in (ours, theirs)]
        if kind[0] != kind[1]:
            differ.append(name)
    assert sorted(differ) == sorted(KIND_DIFFERS), f"kind differs from torch's: {differ}"


@pytest.mark.parametrize("module", PRIVATE_SOURCES)
def test_torch_names_of_private_namespaces_are_exported(module):
    """The root re-exports by name: a function registered in ``_api/functions.py`` (the
    registry's ``tracegrad.<name>`` functions) or defined in ``_api/nn_functions.py`` under one
    of torch's top-level names must also be added to tracegrad/__init__.py (a module with
    ``__all__`` declares its exports there)."""
    mod = __import__(module, fromlist=["_"])
    missing = [n for n in getattr(mod, "__all__", dir(mod)) if not n.startswith("_") and hasattr(torch, n)
               and not isinstance(getattr(mod, n), types.ModuleType)
               and unguarded(getattr(tracegrad, n, None)) is not unguarded(getattr(mod, n))]
    assert not missing, f"{module} defines torch names {missing} that tracegrad/__init__.py does not re-export"


def test_root_has_no_star_imports():
    tree = ast.parse(pathlib.Path(tracegrad.__file__).read_text())
    stars = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    assert not stars, f"tracegrad/__init__.py star-imports {stars}; re-export names explicitly"
