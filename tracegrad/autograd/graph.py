"""``tracegrad.autograd.graph``: mirrors ``torch.autograd.graph``."""
from ._graph_impl import Node as Node
from ._graph_impl import increment_version as increment_version
from ._graph_impl import save_on_cpu as save_on_cpu
from ._graph_impl import saved_tensors_hooks as saved_tensors_hooks

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "increment_version"]
