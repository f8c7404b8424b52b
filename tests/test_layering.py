"""STYLE 6 / DESIGN 2: JAX stays below the public layers. nn, optim, utils.data and the
autograd engine are written against tracegrad's own API; this test parses their imports."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tracegrad"
JAX_FREE = ["nn", "optim", "utils/data", "autograd", "viz.py", "distributed"]


def _files():
    for rel in JAX_FREE:
        p = ROOT / rel
        if p.is_dir():
            yield from sorted(p.rglob("*.py"))
        elif p.exists():
            yield p


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_jax_import(path):
    bad = [m for m in _imports(path) if m.split(".")[0] in ("jax", "jaxlib")]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; use tracegrad's public API instead"


def test_layers_exist():
    files = list(_files())
    assert any("engine.py" in str(f) for f in files)
