"""Run the notebooks in this folder with a real Jupyter kernel and save them with their outputs.

    python notebooks/run_notebooks.py                 # every notebook, written back with outputs
    python notebooks/run_notebooks.py checkpointing.ipynb --no-write

The kernel is the interpreter running this script (``sys.executable``), started from a kernel
spec written into a temporary folder: nothing is installed for the user, and a ``python3``
kernel registered elsewhere is never picked by mistake. The kernel imports tracegrad from this
checkout (the repository root goes first on its ``PYTHONPATH``). ``tests/notebooks`` executes
the notebooks through ``execute`` and checks their outputs.

Needs the ``notebooks`` extra (``pip install -e ".[notebooks]"``): nbclient, ipykernel,
matplotlib; ipywidgets for tqdm's progress widgets; the Graphviz ``dot`` binary for the graph
picture in ``jax_and_func.ipynb`` (without it the notebook prints the DOT source instead).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNEL = "tracegrad-notebooks"
# the order a newcomer reads them in
NOTEBOOKS = ("autograd_tour.ipynb", "training_digits.ipynb", "checkpointing.ipynb", "jax_and_func.ipynb")


def kernel_manager(folder, env=None):
    """A ``jupyter_client.KernelManager`` for a kernel running ``sys.executable`` with
    ``env`` added to this process's environment; its spec lives in ``folder``."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    kernels = os.path.join(folder, "kernels")
    os.makedirs(os.path.join(kernels, KERNEL), exist_ok=True)
    path = [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (tracegrad)", "language": "python",
            "env": {"PYTHONPATH": os.pathsep.join(path), **(env or {})}}
    with open(os.path.join(kernels, KERNEL, "kernel.json"), "w") as f:
        json.dump(spec, f)
    # local sockets in ``folder`` (ipykernel warns about unencrypted TCP otherwise)
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernels]),
                         transport="ipc", ip=os.path.join(folder, "kernel-ipc"))


def execute(path, timeout=300, env=None):
    """Run every cell of the notebook at ``path`` in a fresh kernel (working directory: the
    notebook's folder) and return the executed ``nbformat`` notebook. Stored outputs are
    cleared first. Raises ``nbclient.exceptions.CellExecutionError`` on the first cell that
    raises."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory(prefix="tracegrad-kernel-") as folder:
        client = NotebookClient(nb, km=kernel_manager(folder, env), timeout=timeout, record_timing=False,
                                resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
        client.execute()
    # a reader's own Python 3 kernel opens it, not the temporary spec
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nb


def without_widgets(nb):
    """``nb`` without progress-bar widget outputs: a stored widget shows only its first frame
    ("0%") on a code host, so the saved notebooks keep the printed results instead."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})]
    return nb


def main(argv=None):
    import nbformat
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="notebooks in this folder (default: all)")
    ap.add_argument("--no-write", action="store_true", help="run only; keep the stored outputs")
    args = ap.parse_args(argv)
    for name in args.names or NOTEBOOKS:
        path = os.path.join(HERE, os.path.basename(name))
        start = time.perf_counter()
        nb = execute(path)
        print(f"{os.path.basename(path)}: ran in {time.perf_counter() - start:.1f} s", flush=True)
        if not args.no_write:
            nbformat.write(without_widgets(nb), path)


if __name__ == "__main__":
    main()
