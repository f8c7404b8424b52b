"""``tracegrad.utils.dlpack``: mirrors ``torch.utils.dlpack`` (``from_dlpack``, ``to_dlpack``).
Tensors hold JAX arrays, so the exchange is JAX's DLPack support: no copy where the device
and alignment allow. Implemented in ``tracegrad.func._interop`` (the layer that may use JAX)."""
from ..func._interop import from_dlpack, to_dlpack  # noqa: F401

__all__ = ["from_dlpack", "to_dlpack"]
