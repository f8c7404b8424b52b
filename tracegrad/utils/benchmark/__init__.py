"""``tracegrad.utils.benchmark``: mirrors ``torch.utils.benchmark`` -- ``Timer`` (timing that waits
for XLA's results), ``Measurement`` and ``Compare``."""
from .common import Measurement, TaskSpec, select_unit
from .compare import Colorize, Compare
from .timer import Language, Timer, timer

__all__ = ["Colorize", "Compare", "Language", "Measurement", "TaskSpec", "Timer", "select_unit", "timer"]
