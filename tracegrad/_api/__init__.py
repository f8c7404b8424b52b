"""The API layer (DESIGN 2, L4): Tensor methods, one module per op family, and the
``tracegrad.*`` / ``nn.functional`` functions built on them. Each family registers its methods
and functions where it defines them (``_registry``); ``tensor_methods`` installs them on Tensor."""
