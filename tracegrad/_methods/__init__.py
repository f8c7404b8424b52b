"""Tensor methods, one module per op family; ``tracegrad._tensor_methods`` re-exports and attaches them."""
