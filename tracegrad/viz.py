"""Pictures of the autograd graph: ``make_dot`` (torchviz's name and arguments) and ``to_dot``.

``to_dot(output, params=None)`` returns the graph as Graphviz DOT source (no dependency);
``make_dot`` returns a ``graphviz.Digraph`` of the same graph (optional extra
``tracegrad[viz]``), which displays inline in Jupyter (SVG) and renders to files
(``.render()``, needs the Graphviz ``dot`` binary).

What is drawn, as torchviz draws it: the output tensors (green, labelled with their sizes),
one box per Node labelled with its class name (``MulBackward0``, ``AccumulateGrad``...), for
each AccumulateGrad the leaf it accumulates into (blue, labelled with its name from ``params``
and its size), edges from each Node's ``next_functions`` to the Node, and with
``show_saved=True`` the tensors a Node saved for backward (orange, labelled ``self``,
``result``...). ``show_attrs=True`` adds a Node's non-tensor arguments (``dim``, ``alpha``...).
"""
from __future__ import annotations

from ._tensor.tensor import Tensor

__all__ = ["make_dot", "to_dot"]

_OUTPUT, _LEAF, _SAVED = "darkolivegreen1", "lightblue", "orange"
_GRAPH_ATTR = {"size": "12,12"}
_NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10", "ranksep": "0.1",
              "height": "0.2", "fontname": "monospace"}


def _size(t) -> str:
    return "(" + ", ".join(str(int(s)) for s in t.shape) + ")"


def _saved_items(node):
    """``[(name, value)]`` of what a table op's Node saved (tensors and non-tensor arguments)."""
    op = getattr(node, "op", None)
    if op is None or getattr(node, "released", False):
        return []
    items = []
    # torch's Nodes expose saved inputs and scalar arguments as _saved_<name> (the exponent of
    # pow, the alpha of add); ours answer the same names for saved tensors and constants
    for name in dict.fromkeys(op.saves + op.args):
        try:
            items.append((name, getattr(node, "_saved_" + name)))
        except (AttributeError, RuntimeError):
            continue
    items += [(name, value) for name, value in getattr(node, "static", ()) if name not in dict(items)]
    return items


def _collect(outputs, params, show_attrs, show_saved, max_attr_chars):
    """The graph under ``outputs`` as ``(nodes, edges)``: nodes ``(id, label, fillcolor)``,
    edges ``(src, dst, style)``, in a deterministic depth-first order."""
    names = {id(p): n for n, p in (params or {}).items()}
    nodes, edges, seen = [], [], set()

    def leaf_label(v):
        return f"{names.get(id(v), '')}\n {_size(v)}"

    def add(fn):
        if fn is None or id(fn) in seen:
            return
        seen.add(id(fn))
        label = type(fn).__name__
        saved = _saved_items(fn) if (show_attrs or show_saved) else []
        if show_attrs:
            attrs = [f"{k}: {str(v)[:max_attr_chars]}" for k, v in saved if v is not None and not isinstance(v, Tensor)]
            if attrs:
                label += "\n" + "-" * max(len(a) for a in attrs) + "\n" + "\n".join(attrs)
        nodes.append((str(id(fn)), label, None))
        if show_saved:
            for k, v in saved:
                if isinstance(v, Tensor):
                    sid = f"{id(fn)}_{k}"
                    nodes.append((sid, f"{k}\n{_size(v)}", _SAVED))
                    edges.append((sid, str(id(fn)), "dotted"))
        var = getattr(fn, "variable", None)
        if isinstance(var, Tensor):
            nodes.append((str(id(var)), leaf_label(var), _LEAF))
            edges.append((str(id(var)), str(id(fn)), None))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges.append((str(id(nxt)), str(id(fn)), None))
                add(nxt)

    for out in outputs:
        label = (names[id(out)] + "\n " if id(out) in names else "") + _size(out)
        nodes.append((str(id(out)), label, _OUTPUT))
        if out.grad_fn is not None:
            add(out.grad_fn)
            edges.append((str(id(out.grad_fn)), str(id(out)), None))
    return nodes, edges


def _outputs(var):
    outs = tuple(var) if isinstance(var, (tuple, list)) else (var,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"tracegrad.viz.make_dot: expected a Tensor or a tuple of Tensors, got {type(o).__name__}")
    return outs


def _check_params(params):
    if params is None:
        return None
    if not isinstance(params, dict):
        raise TypeError("tracegrad.viz.make_dot: params must be a dict name -> Tensor, e.g. "
                        f"dict(model.named_parameters()), got {type(params).__name__}")
    return params


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(d) -> str:
    return "[" + " ".join(f"{k}={_quote(str(v))}" for k, v in d.items()) + "]"


def to_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50) -> str:
    """The autograd graph under ``var`` (a Tensor or tuple of Tensors) as Graphviz DOT source.
    ``params``: ``{name: Tensor}`` (e.g. ``dict(model.named_parameters())``) to label leaves.
    No dependency on graphviz. Raises TypeError for non-Tensor ``var`` or non-dict ``params``."""
    nodes, edges = _collect(_outputs(var), _check_params(params), show_attrs, show_saved, max_attr_chars)
    lines = ["digraph {", f"\tgraph {_attrs(_GRAPH_ATTR)}", f"\tnode {_attrs(_NODE_ATTR)}"]
    for nid, label, color in nodes:
        attrs = {"label": label} | ({"fillcolor": color} if color else {})
        lines.append(f"\t{_quote(nid)} {_attrs(attrs)}")
    for src, dst, style in edges:
        lines.append(f"\t{_quote(src)} -> {_quote(dst)}" + (f" {_attrs({'style': style})}" if style else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """Mirrors torchviz's ``make_dot``: a ``graphviz.Digraph`` of the autograd graph under
    ``var`` (see the module docstring for what is drawn). Displays inline in Jupyter; call
    ``.render(path, format="svg")`` to write a file (needs the Graphviz binary; graphviz raises
    ``graphviz.ExecutableNotFound`` if it is missing).
    Raises ImportError naming the extra when the ``graphviz`` Python package is not installed
    (``to_dot`` gives the DOT source without it)."""
    try:
        import graphviz   # local: an optional extra (tracegrad[viz])
    except ImportError:
        raise ImportError("tracegrad.viz.make_dot needs the graphviz Python package: pip install "
                          "'tracegrad[viz]' (or graphviz); tracegrad.viz.to_dot returns the DOT source "
                          "without it") from None
    nodes, edges = _collect(_outputs(var), _check_params(params), show_attrs, show_saved, max_attr_chars)
    dot = graphviz.Digraph(node_attr=dict(_NODE_ATTR), graph_attr=dict(_GRAPH_ATTR))
    for nid, label, color in nodes:
        dot.node(nid, label, **({"fillcolor": color} if color else {}))
    for src, dst, style in edges:
        dot.edge(src, dst, **({"style": style} if style else {}))
    return dot
