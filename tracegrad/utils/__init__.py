"""``tracegrad.utils``: mirrors ``torch.utils`` (``data``, ``checkpoint``, ``hooks``)."""
from . import hooks  # noqa: F401
