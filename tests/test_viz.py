"""``tracegrad.viz``: the DOT source of a small model's autograd graph, parsed back, has the
Nodes torch's graph has for the same program (names and edges), AccumulateGrad leaves named
by ``params``; ``make_dot`` gives a graphviz.Digraph of the same graph."""
import collections
import re
import shutil
import sys

import numpy as np
import pytest

import tracegrad
from tracegrad.viz import make_dot, to_dot

_ID = r'"(?:[^"\\]|\\.)*"|[A-Za-z0-9_.]+'
_STMT = re.compile(rf'({_ID})\s*(?:->\s*({_ID}))?\s*(?:\[([^\]]*)\])?', re.S)
_ATTR = re.compile(rf'(\w+)=({_ID})', re.S)


def _unq(s):
    if s.startswith('"'):
        s = s[1:-1]
    return s.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def parse_dot(src):
    """``(nodes, edges)``: node id -> attrs dict, and a list of (src, dst, attrs)."""
    body = src[src.index("{") + 1:src.rindex("}")]
    nodes, edges = {}, []
    for line in re.split(r"\n\t", body):
        line = line.strip()
        if not line or line.startswith(("graph ", "node ", "edge ")):
            continue
        m = _STMT.fullmatch(line)
        assert m, f"unparsed DOT line: {line!r}"
        a, b, attrs = m.group(1), m.group(2), dict((k, _unq(v)) for k, v in _ATTR.findall(m.group(3) or ""))
        if b is None:
            nodes[_unq(a)] = attrs
        else:
            edges.append((_unq(a), _unq(b), attrs))
    return nodes, edges


def _program(m, x):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(4, 2))
    return model, (model(m.tensor(x)) ** 2).sum()


def _torch_graph(out, names):
    """The edges of torch's graph under ``out`` as (child label, parent label) pairs."""
    seen, edges = set(), collections.Counter()

    def walk(fn):
        if fn in seen:
            return
        seen.add(fn)
        if hasattr(fn, "variable"):
            edges[(names[id(fn.variable)], type(fn).__name__)] += 1
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges[(type(nxt).__name__, type(fn).__name__)] += 1
                walk(nxt)
    walk(out.grad_fn)
    return edges


def _label_edges(nodes, edges):
    def name(i):
        return nodes[i]["label"].split("\n")[0]
    return collections.Counter((name(a), name(b)) for a, b, _ in edges)


X = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)


def test_dot_source_matches_torch_graph():
    torch = pytest.importorskip("torch")
    tmodel, tout = _program(torch, X)
    gmodel, gout = _program(tracegrad, X)
    nodes, edges = parse_dot(to_dot(gout, params=dict(gmodel.named_parameters())))
    want = _torch_graph(tout, {id(p): n for n, p in tmodel.named_parameters()})
    want[("SumBackward0", "()")] = 1          # the output node, labelled with its size
    assert _label_edges(nodes, edges) == want
    # leaves: blue, labelled with name and size; output green
    leaves = {a["label"] for a in nodes.values() if a.get("fillcolor") == "lightblue"}
    assert leaves == {f"{n}\n ({', '.join(map(str, p.shape))})" for n, p in gmodel.named_parameters()}
    assert [a["label"] for a in nodes.values() if a.get("fillcolor") == "darkolivegreen1"] == ["()"]


def test_show_saved_and_attrs():
    model, out = _program(tracegrad, X)
    nodes, edges = parse_dot(to_dot(out, show_saved=True, show_attrs=True))
    saved = [a["label"] for a in nodes.values() if a.get("fillcolor") == "orange"]
    assert "result\n(5, 4)" in saved               # ReLU saves its result
    assert "mat1\n(5, 3)" in saved and "mat1\n(5, 4)" in saved
    assert all(e[2].get("style") == "dotted" for e in edges if nodes[e[0]].get("fillcolor") == "orange")
    assert any(a["label"].startswith("PowBackward0\n") and "exponent: 2" in a["label"] for a in nodes.values())
    plain, _ = parse_dot(to_dot(out))
    assert not [a for a in plain.values() if a.get("fillcolor") == "orange"]


def test_tuple_outputs_and_leaf_output():
    a = tracegrad.ones(2, requires_grad=True)
    b = a * 2
    nodes, edges = parse_dot(to_dot((b, b.sum()), params={"a": a}))
    labels = sorted(v["label"].split("\n")[0] for v in nodes.values())
    assert labels == ["()", "(2)", "AccumulateGrad", "MulBackward0", "SumBackward0", "a"]
    assert len(edges) == 5
    with pytest.raises(TypeError, match="make_dot"):
        to_dot([1.0])
    with pytest.raises(TypeError, match="params"):
        to_dot(b, params=[a])


def test_make_dot_digraph_same_graph():
    graphviz = pytest.importorskip("graphviz")
    model, out = _program(tracegrad, X)
    params = dict(model.named_parameters())
    dot = make_dot(out, params=params)
    assert isinstance(dot, graphviz.Digraph)
    got_nodes, got_edges = parse_dot(dot.source)
    want_nodes, want_edges = parse_dot(to_dot(out, params=params))
    assert {k: v["label"] for k, v in got_nodes.items()} == {k: v["label"] for k, v in want_nodes.items()}
    assert sorted(e[:2] for e in got_edges) == sorted(e[:2] for e in want_edges)
    if shutil.which("dot") is None:   # a clear error from graphviz when the binary is missing
        with pytest.raises(graphviz.ExecutableNotFound):
            dot.pipe(format="svg")


def test_make_dot_without_graphviz_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"tracegrad\[viz\]"):
        make_dot(tracegrad.ones(1, requires_grad=True) * 2)
