"""The layer table (DESIGN 2, STYLE 1 and 6, issue 7), checked by reading every module's imports.

Each module of ``tracegrad/`` belongs to one layer of ``LAYERS`` (bottom up); a module imports
only from its own layer or the layers below, and the import graph has no cycles. Imports are
read with ``ast``: top-level ones and function-local ones alike (a function-local import is an
edge too: it only defers the cycle to call time). Importing ``tracegrad.a.b`` also runs
``tracegrad/a/__init__.py``, so that package is an edge as well (unless the importer lives in
it). The root package ``tracegrad`` is the public API: a module that ``import tracegrad`` to use
``tracegrad.<name>`` at call time depends on the API layer (L4), and the root's own imports are
not checked (it assembles everything). Lazy loads through ``importlib.import_module`` in a
package's ``__getattr__`` (utils, distributed) are not read: they run on first attribute use.

What does not hold yet is listed in ``KNOWN_UPWARD`` and ``KNOWN_CYCLE``, one line of reason
per edge: a new upward import or cycle fails, and fixing a listed one fails until its entry is
removed (no stale entries). ``python tests/test_layering.py`` prints the graph's numbers.

The older rule stays: nn, optim, utils.data, autograd, viz and distributed (but for its one
JAX module) are written against tracegrad's own API and never import jax (STYLE 6).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tracegrad"

# Bottom up. A module belongs to the layer with the longest matching prefix (a prefix matches
# the module itself and everything under it).
LAYERS = [
    ("L0 state", ["tracegrad._state", "tracegrad._x64", "tracegrad._autocast"]),
    ("L1 ops", ["tracegrad._ops"]),
    ("L2 tensor", ["tracegrad._tensor"]),
    ("L3 autograd", ["tracegrad.autograd"]),
    ("L4 API", ["tracegrad", "tracegrad._api"]),
    ("L5 lowering", ["tracegrad._lowering"]),
    ("L6 compile and transforms", ["tracegrad.compiler", "tracegrad._compile_callbacks", "tracegrad._logging", "tracegrad.func", "tracegrad.autograd.functional"]),
    ("L7 library", ["tracegrad.profiler", "tracegrad.autograd.profiler", "tracegrad.autograd.profiler_util", "tracegrad.linalg", "tracegrad._linalg_functions", "tracegrad._linalg_decomp", "tracegrad._linalg_ldl", "tracegrad._lowrank", "tracegrad._lobpcg", "tracegrad.quasirandom", "tracegrad._spectral", "tracegrad.signal", "tracegrad.special", "tracegrad.fft", "tracegrad.nn", "tracegrad.optim", "tracegrad.sparse", "tracegrad.utils", "tracegrad.distributed", "tracegrad.multiprocessing",
                    "tracegrad.amp", "tracegrad.cuda", "tracegrad.mps", "tracegrad.xpu", "tracegrad.random", "tracegrad.testing", "tracegrad.distributions", "tracegrad.backends", "tracegrad.accelerator", "tracegrad.jit", "tracegrad.library", "tracegrad.cpu", "tracegrad._inductor", "tracegrad.types", "tracegrad.functional", "tracegrad.fx", "tracegrad.masked",
                    "tracegrad._dynamo", "tracegrad._dynamo_backends", "tracegrad._dynamo_capture", "tracegrad.__config__"]),
    ("L8 applications", ["tracegrad.serialization", "tracegrad._serialization_torch", "tracegrad.viz", "tracegrad.examples", "tracegrad.hub"]),
]

# (importer, imported): why the upward edge is still there. Remove the entry with the edge.
# An edge to a package (``tracegrad.autograd``) is the implicit one: importing any module of it
# runs its ``__init__``.
KNOWN_UPWARD = {
}

# (importer, imported): the edge that closes an import cycle inside one layer, with why.
KNOWN_CYCLE = {
}

# STYLE 6: these never import jax (a module may be exempted with its reason).
JAX_FREE = ["nn", "optim", "utils/data", "autograd", "viz.py", "distributed", "testing", "distributions", "sparse",
            "multiprocessing"]
JAX_ALLOWED = {
    "distributed/_jax.py": "DESIGN 2.8: torch.distributed's names on jax.sharding; the package's one JAX module",
}


# ---- the import graph -------------------------------------------------------------------------
def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _existing(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree):
    """Yield ``(import node, function-local?)`` for every import in ``tree``, in one pass (a
    parent map walked up from every import cost a third of this file's collection time)."""
    todo = [(tree, False)]
    while todo:
        node, local = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, local
            continue
        local = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        todo.extend((c, local) for c in ast.iter_child_nodes(node))


def imports_of(module: str):
    """Yield ``(imported module, function-local?, line)`` for every tracegrad import in
    ``module``: ``from . import x`` names the submodule x when there is one."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node, local in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for t in targets:
            if t == "tracegrad" or t.startswith("tracegrad."):
                yield _existing(t), local, node.lineno


def _graph():
    """``{importer: {imported: [(local, line), ...]}}``, with the implicit edge to each package
    whose ``__init__`` an import runs."""
    graph = {m: {} for m in MODULES}
    for m in MODULES:
        for t, local, line in imports_of(m):
            if t == "tracegrad":
                graph[m].setdefault(t, []).append((local, line))
            parts = t.split(".")
            for i in range(2, len(parts) + 1):
                pkg = ".".join(parts[:i])
                if pkg == m or (pkg != t and (m + ".").startswith(pkg + ".")):
                    continue   # the importer's own package is loaded before it anyway
                if pkg in MODULES:
                    graph[m].setdefault(pkg, []).append((local, line))
    return graph


GRAPH = _graph()


def layer_of(module: str) -> int:
    best, depth = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    return best


def _edges():
    return [(a, b) for a, targets in GRAPH.items() if a != "tracegrad" for b in targets]


def _upward():
    return {(a, b) for a, b in _edges() if layer_of(b) > layer_of(a)}


def _reaches(graph, start, goal):
    seen, todo = {start}, [start]
    while todo:
        for n in graph.get(todo.pop(), ()):
            if n == goal:
                return True
            if n not in seen and n != "tracegrad":
                seen.add(n)
                todo.append(n)
    return False


def _cycles(ignore):
    """Strongly connected components (size > 1) of the graph without the root and ``ignore``."""
    adj = {a: [b for b in ts if b != "tracegrad" and (a, b) not in ignore] for a, ts in GRAPH.items() if a != "tracegrad"}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # iterative Tarjan (the graph is small, but keep recursion out of it)
        work = [(v, iter(adj[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(adj[w])))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in adj:
        if v not in index:
            visit(v)
    return out


# ---- tests --------------------------------------------------------------------------------------
def test_every_module_has_a_layer():
    missing = [m for m in MODULES if layer_of(m) is None]
    assert not missing, f"add these modules to LAYERS: {missing}"


def test_no_new_upward_import():
    new = sorted(_upward() - set(KNOWN_UPWARD))
    lines = [f"{a} -> {b} (layer {LAYERS[layer_of(a)][0]} -> {LAYERS[layer_of(b)][0]}; line "
             f"{', '.join(str(l) for l in sorted({l for _, l in GRAPH[a][b]}))})" for a, b in new]
    assert not new, "upward imports (move the code down, or list it in KNOWN_UPWARD with why):\n" + "\n".join(lines)


def test_no_new_import_cycle():
    cycles = _cycles(set(KNOWN_UPWARD) | set(KNOWN_CYCLE))
    assert not cycles, f"import cycles (break them, or list the edge that closes each in KNOWN_CYCLE): {cycles}"


def test_known_exceptions_are_not_stale():
    stale = [e for e in KNOWN_UPWARD if e not in _upward()]
    stale += [e for e in KNOWN_CYCLE if e[1] not in GRAPH[e[0]] or not _reaches(GRAPH, e[1], e[0])]
    assert not stale, f"these listed exceptions no longer happen: remove them from the lists: {stale}"


def test_known_cycle_edges_stay_in_one_layer():
    assert all(layer_of(a) == layer_of(b) for a, b in KNOWN_CYCLE), "an upward edge goes in KNOWN_UPWARD"


def _jax_files():
    for rel in JAX_FREE:
        p = ROOT / rel
        if p.is_dir():
            yield from sorted(p.rglob("*.py"))
        elif p.exists():
            yield p


def _absolute_imports(path):
    for node, _ in _imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


@pytest.mark.parametrize("path", list(_jax_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_jax_import(path):
    if str(path.relative_to(ROOT)) in JAX_ALLOWED:
        pytest.skip(JAX_ALLOWED[str(path.relative_to(ROOT))])
    bad = [m for m in _absolute_imports(path) if m.split(".")[0] in ("jax", "jaxlib")]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; use tracegrad's public API instead"


def test_jax_free_layers_exist():
    files = [str(f.relative_to(ROOT)) for f in _jax_files()]
    assert "autograd/engine.py" in files and "optim/optimizer.py" in files and "nn/modules/module.py" in files
    assert all((ROOT / f).exists() for f in JAX_ALLOWED)


def _report():
    local = [(m, t, line) for m in MODULES for t, is_local, line in imports_of(m) if is_local]
    statements = sorted({(m, line) for m, _, line in local})
    print(f"{len(MODULES)} modules, {len(_edges())} import edges (with implicit package edges)")
    print(f"{len(statements)} function-local import statements of tracegrad modules in "
          f"{len({m for m, _ in statements})} modules")
    for m in sorted({m for m, _ in statements}):
        print(f"  {sum(1 for s in statements if s[0] == m):3d} {m}")
    print("upward edges:")
    for a, b in sorted(_upward()):
        print(f"  {a} -> {b}  [{LAYERS[layer_of(a)][0]} -> {LAYERS[layer_of(b)][0]}]"
              f"{'' if (a, b) in KNOWN_UPWARD else '  NEW'}")
    print("cycles left after removing the known edges:", _cycles(set(KNOWN_UPWARD) | set(KNOWN_CYCLE)))


if __name__ == "__main__":
    _report()
