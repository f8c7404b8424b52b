"""``tracegrad.utils``: mirrors ``torch.utils`` (``data``, ``hooks``; ``checkpoint`` comes with
the region-lowering issue)."""
from . import data, hooks  # noqa: F401
