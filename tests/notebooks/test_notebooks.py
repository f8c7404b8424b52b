"""The notebooks in ``notebooks/`` run top to bottom in a real Jupyter kernel (nbclient +
ipykernel, the kernel being this interpreter) without a cell error, and print what they claim:
the autograd tour's cells tagged ``parity`` print exactly what the same code prints with
PyTorch, the digits notebook reaches its accuracy with equal eager and compiled losses, the
checkpointing notebook's table shows the memory saved, and the func notebook's per-sample
gradients, Jacobians and JAX gradients agree. The stored notebooks carry their outputs."""
import contextlib
import glob
import importlib.util
import io
import os
import re
import warnings

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NB_DIR = os.path.join(ROOT, "notebooks")
_spec = importlib.util.spec_from_file_location("run_notebooks", os.path.join(NB_DIR, "run_notebooks.py"))
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)

# Agg: figures are drawn but not sent to the (headless) test client
KERNEL_ENV = {"MPLBACKEND": "Agg"}
# each has a test below that checks what it prints
TESTED = ["autograd_tour.ipynb", "training_digits.ipynb", "checkpointing.ipynb", "jax_and_func.ipynb"]


def _run(name):
    return run_notebooks.execute(os.path.join(NB_DIR, name), timeout=120, env=KERNEL_ENV)


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _stdout(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _all_stdout(nb):
    return "".join(_stdout(c) for c in _code_cells(nb))


def _number(text, label):
    """The number printed after ``label`` (first match)."""
    m = re.search(re.escape(label) + r"\s*([-+0-9.eE]+)", text)
    assert m, f"{label!r} not printed; output was:\n{text}"
    return float(m.group(1))


def test_every_notebook_is_run_here_and_stored_with_outputs():
    stored = sorted(os.path.basename(p) for p in glob.glob(os.path.join(NB_DIR, "*.ipynb")))
    assert stored == sorted(run_notebooks.NOTEBOOKS)
    assert stored == sorted(TESTED)
    for name in stored:
        nb = nbformat.read(os.path.join(NB_DIR, name), as_version=4)
        cells = _code_cells(nb)
        assert cells, name
        for cell in cells:
            assert cell.execution_count is not None, f"{name}: a code cell was saved without running"
            assert not any(o.output_type == "error" for o in cell.outputs), f"{name}: saved with an error"
        assert sum(bool(c.outputs) for c in cells) >= len(cells) // 2, f"{name}: saved without outputs"


def _torch_stdout(nb):
    """Each code cell's stdout when the notebook's code runs with PyTorch in this process."""
    torch = pytest.importorskip("torch")
    ns = {"__name__": "__notebook__"}
    out = []
    for i, cell in enumerate(_code_cells(nb)):
        src = cell.source.replace("import tracegrad as torch", "import torch")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(src, f"<cell {i}>", "exec"), ns)
        out.append(buf.getvalue())
    assert ns["torch"] is torch
    return out


def test_autograd_tour_prints_what_torch_prints():
    nb = _run("autograd_tour.ipynb")
    ours = [_stdout(c) for c in _code_cells(nb)]
    theirs = _torch_stdout(nb)
    parity = [i for i, c in enumerate(_code_cells(nb)) if "parity" in c.metadata.get("tags", [])]
    assert len(parity) >= 10
    for i in parity:
        assert ours[i], f"parity cell {i} printed nothing"
        assert ours[i] == theirs[i], f"cell {i}:\n{_code_cells(nb)[i].source}"
    text = "".join(ours)
    assert "CopySlices" in text and "ExpBackward" in text and "gradcheck: True" in text


def test_training_digits():
    text = _all_stdout(_run("training_digits.ipynb"))
    assert _number(text, "eager test accuracy:") > 0.9
    assert _number(text, "compiled test accuracy:") > 0.9
    assert _number(text, "max |eager loss - compiled loss|:") < 1e-4
    assert "traces" in text


def test_checkpointing():
    text = _all_stdout(_run("checkpointing.ipynb"))
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*(none|checkpoint per block|checkpoint_sequential[^|]*?)\s*\|"
                     r"\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.eE+-]+)\s*\|", line)
        if m:
            rows[m.group(1).split(" (")[0]] = [float(g) for g in m.groups()[1:]]
    assert set(rows) == {"none", "checkpoint per block", "checkpoint_sequential"}, text
    saved, temp = {k: v[0] for k, v in rows.items()}, {k: v[1] for k, v in rows.items()}
    assert saved["checkpoint per block"] < saved["none"] / 2
    assert saved["checkpoint_sequential"] < saved["none"] / 2
    assert temp["checkpoint per block"] < temp["none"]
    assert all(v[2] < 1e-5 for v in rows.values())   # gradients equal the plain step's


def test_jax_and_func():
    text = _all_stdout(_run("jax_and_func.ipynb"))
    assert _number(text, "per-sample grads, max |vmap(grad) - loop|:") < 1e-5
    assert _number(text, "max |jacrev - autograd.functional.jacobian|:") < 1e-5
    assert _number(text, "max |hessian - jacfwd(jacrev)|:") < 1e-5
    assert _number(text, "max |jax.grad - tracegrad backward|:") < 1e-5
    assert _number(text, "ensemble, max |vmap over stacked models - loop|:") < 1e-5
    assert "AccumulateGrad" in text
