"""The API layer (DESIGN 2, L4): Tensor methods, one module per op family, and the
``tracegrad.*`` / ``nn.functional`` functions built on them; ``tensor_methods`` attaches them."""
