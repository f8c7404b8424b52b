"""``tracegrad.nn.parallel``: mirrors ``torch.nn.parallel`` for one process."""
from .data_parallel import DataParallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
