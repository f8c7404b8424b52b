"""STYLE 6 / DESIGN 2: the autograd package is plain Python over Tensors -- no module in
``tracegrad/autograd/`` imports jax (JAX lives in _ops/, _tensor.py, _lowering/, compiler)."""
import ast
import pathlib

import tracegrad

AUTOGRAD = pathlib.Path(tracegrad.__file__).parent / "autograd"


def _imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_autograd_modules_do_not_import_jax():
    files = sorted(AUTOGRAD.glob("*.py"))
    assert any(f.name == "engine.py" for f in files)
    bad = {f.name: m for f in files for m in _imports(f) if m == "jax" or m.startswith("jax.")}
    assert not bad, f"autograd modules import jax (move that code to _ops/ or _tensor.py): {bad}"
