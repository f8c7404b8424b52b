"""Mirrors ``torch.fx.subgraph_rewriter``: ``replace_pattern`` finds every non-overlapping
occurrence of a pattern graph in a GraphModule and splices in a replacement graph."""
from __future__ import annotations

import copy
from typing import NamedTuple

from ._symbolic_trace import symbolic_trace
from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """Mirrors ``torch.fx.subgraph_rewriter.Match``: ``anchor``, the pattern's node producing
    its output, and ``nodes_map``, pattern nodes -> the matched nodes of the graph."""
    anchor: Node
    nodes_map: dict


def _graph_of(x) -> Graph:
    if isinstance(x, GraphModule):
        return x.graph
    if isinstance(x, Graph):
        return x
    return symbolic_trace(x).graph


class _Matcher:
    """Matches a pattern (one output value) backwards from an anchor node: placeholders match
    any value (the same one everywhere they appear), other nodes match op, target and
    arguments; inner matched nodes may have no users outside the match."""

    def __init__(self, pattern: Graph):
        self.pattern = pattern
        outs = [n for n in pattern.nodes if n.op == "output"]
        out = outs[0].args[0]
        if not isinstance(out, Node):
            raise NotImplementedError("torch.fx.replace_pattern: the pattern must return one value")
        self.anchor = out
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]

    def match(self, node: Node):
        nodes_map = {}
        if not self._match(self.anchor, node, nodes_map):
            return None
        for pn, gn in nodes_map.items():
            if pn.op == "placeholder" or pn is self.anchor:
                continue
            if any(u not in nodes_map.values() for u in gn.users):
                return None
        return nodes_map

    def _match(self, pn, gn, nodes_map) -> bool:
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            if gn in nodes_map.values():
                return False
            nodes_map[pn] = gn
            return True
        if not isinstance(gn, Node) or pn.op != gn.op or pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        if gn in nodes_map.values():
            return False
        nodes_map[pn] = gn
        pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
        if all(self._match_arg(a, b, nodes_map) for a, b in pairs):
            return True
        del nodes_map[pn]
        return False

    def _match_arg(self, a, b, nodes_map) -> bool:
        if isinstance(a, Node) and a.op == "placeholder" and not isinstance(b, Node):
            if a in nodes_map:   # a pattern input bound to a constant matches that constant only
                return nodes_map[a] == b
            nodes_map[a] = b
            return True
        if isinstance(a, Node):
            return isinstance(b, Node) and self._match(a, b, nodes_map)
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and all(
                self._match_arg(x, y, nodes_map) for x, y in zip(a, b))
        return not isinstance(b, Node) and a == b


def replace_pattern(gm: GraphModule, pattern, replacement) -> list:
    """Mirrors ``torch.fx.replace_pattern(gm, pattern, replacement)``: ``pattern`` and
    ``replacement`` are callables (traced with ``symbolic_trace``), Graphs or GraphModules
    with the same inputs. Every non-overlapping match in ``gm`` is replaced, ``gm`` is
    recompiled, and the matches are returned (pattern node -> replaced node maps).

    Raises: NotImplementedError for a pattern returning several values."""
    matcher = _Matcher(_graph_of(pattern))
    repl = _graph_of(replacement)
    repl_placeholders = [n for n in repl.nodes if n.op == "placeholder"]
    graph = gm.graph
    matches, taken = [], set()
    for node in reversed(graph.nodes):
        if node.op in ("placeholder", "output") or node in taken:
            continue
        nodes_map = matcher.match(node)
        if nodes_map is None:
            continue
        inner = {gn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        if inner & taken:
            continue
        taken |= inner
        matches.append((node, nodes_map))
    matches.reverse()   # found last to first (a later match must not eat an earlier one's inputs); replace in order
    for anchor, nodes_map in matches:
        val_map = {rp: nodes_map[pp] for rp, pp in zip(repl_placeholders, matcher.placeholders)}
        with graph.inserting_before(anchor):
            new_out = graph.graph_copy(copy.deepcopy(repl) if repl is matcher.pattern else repl, val_map)
        anchor.replace_all_uses_with(new_out)
        for pn in reversed(list(matcher.pattern.nodes)):
            gn = nodes_map.get(pn)
            if gn is not None and pn.op != "placeholder" and not gn.users:
                graph.erase_node(gn)
    for node in repl.nodes:
        if node.op in ("get_attr", "call_module") and isinstance(replacement, GraphModule):
            from .graph_module import _copy_attr
            _copy_attr(replacement, gm, node.target)
    gm.recompile()
    return [Match(anchor=matcher.anchor, nodes_map=nodes_map) for _, nodes_map in matches]
