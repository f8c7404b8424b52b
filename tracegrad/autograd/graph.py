"""``tracegrad.autograd.graph``: mirrors ``torch.autograd.graph``."""
from ._graph_impl import Node as Node
from .engine import GradientEdge as GradientEdge
from .engine import get_gradient_edge as get_gradient_edge
from ._graph_impl import increment_version as increment_version
from ._graph_impl import save_on_cpu as save_on_cpu
from ._graph_impl import saved_tensors_hooks as saved_tensors_hooks

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "saved_tensors_hooks", "save_on_cpu",
           "increment_version"]
