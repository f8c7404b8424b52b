"""``tracegrad.nn.parallel``: mirrors ``torch.nn.parallel`` for a single device."""
from .data_parallel import DataParallel  # noqa: F401
