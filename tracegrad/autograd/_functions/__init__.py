"""``tracegrad.autograd._functions``: mirrors ``torch.autograd._functions`` -- the small
autograd Functions torch keeps there (``Resize``)."""
from .tensor import Resize  # noqa: F401
