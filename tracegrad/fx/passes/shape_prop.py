"""Mirrors ``torch.fx.passes.shape_prop``: ``ShapeProp`` runs a GraphModule on example inputs
and records each node's result metadata in ``node.meta['tensor_meta']`` and ``['type']``."""
from __future__ import annotations

from typing import NamedTuple

from ..._tensor.tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """Mirrors ``torch.fx.passes.shape_prop.TensorMetadata``: what a pass needs to know of a
    tensor without holding it."""
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    import tracegrad
    memory_format = None
    for fmt in (tracegrad.contiguous_format, tracegrad.channels_last, tracegrad.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format,
                          False, {})


class ShapeProp(Interpreter):
    """Mirrors ``torch.fx.passes.shape_prop.ShapeProp(gm)``: ``propagate(*args)`` runs ``gm``
    and sets ``meta['tensor_meta']`` (a ``TensorMetadata``, or a structure of them for nested
    results) on every node producing tensors, and ``meta['type']`` on every node."""

    def run_node(self, n):
        """Run the node and record ``tensor_meta`` and ``type`` in its ``meta``."""
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Mirrors ``ShapeProp.propagate``: run the module on ``args``; returns its output."""
        return super().run(*args)
