"""Mirrors ``torch.fx.experimental.optimization``: ``fuse`` folds each eval-mode BatchNorm into
the convolution or Linear feeding it."""
from __future__ import annotations

import copy

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from .._symbolic_trace import symbolic_trace
from ..graph_module import GraphModule
from ..node import Node

__all__ = ["fuse", "matches_module_pattern", "replace_node_module"]

_PATTERNS = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
             (nn.Linear, nn.BatchNorm1d)]


def matches_module_pattern(pattern, node: Node, modules: dict) -> bool:
    """Mirrors ``matches_module_pattern``: ``node`` and its first input are ``call_module``s of
    the types in ``pattern`` (last, first)."""
    if not node.args:
        return False
    nodes = (node.args[0], node)
    for expected, current in zip(pattern, nodes):
        if not isinstance(current, Node) or current.op != "call_module" or not isinstance(current.target, str):
            return False
        if current.target not in modules or type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict, new_module) -> None:
    """Mirrors ``replace_node_module``: install ``new_module`` where ``node``'s target lives."""
    parent_name, _, name = node.target.rpartition(".")
    modules[node.target] = new_module
    setattr(modules[parent_name], name, new_module)


def fuse(model, inplace: bool = False, no_trace: bool = False):
    """Mirrors ``torch.fx.experimental.optimization.fuse``: trace ``model`` (unless
    ``no_trace``: it is a GraphModule already) and fold every BatchNorm (tracking running stats)
    that is the only user of a Conv1d/2d/3d or Linear into it. For inference: the fused
    weights use the running statistics. Works on a deep copy unless ``inplace``. Returns a
    GraphModule computing the same values in eval mode."""
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if (no_trace or isinstance(model, GraphModule)) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in _PATTERNS:
        for node in new_graph.nodes:
            if not matches_module_pattern(pattern, node, modules) or len(node.args[0].users) > 1:
                continue
            first, bn = modules[node.args[0].target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fused = fuse_linear_bn_eval(first, bn) if pattern[0] is nn.Linear else fuse_conv_bn_eval(first, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)
