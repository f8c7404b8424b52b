"""``tracegrad.torch_version``: mirrors ``torch.torch_version`` -- the ``TorchVersion`` class of
``tracegrad.__version__`` (a ``str`` that compares as a version against strings, tuples and
``Version``s; see ``tracegrad.version``) and that version."""
from .version import TorchVersion, __version__

__all__ = ["TorchVersion"]
__version__ = __version__
