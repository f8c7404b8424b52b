"""``tracegrad.utils.tensorboard``: mirrors ``torch.utils.tensorboard`` -- ``SummaryWriter`` and
``FileWriter`` over the ``tensorboard`` package's own event-file writer (which writes the
protobuf records). ``tensorboard`` is optional: importing this module without it (or with a
version below 1.15) raises ImportError saying how to install it, as torch does."""
try:
    import tensorboard as _tensorboard
except ImportError as _e:
    raise ModuleNotFoundError("tracegrad.utils.tensorboard needs the tensorboard package (1.15 or above), which is "
                              "not installed: pip install tensorboard", name="tensorboard") from _e


def _version_tuple(v):
    out = []
    for part in str(v).split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


if _version_tuple(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: pip install -U tensorboard")
del _tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
