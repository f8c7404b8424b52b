"""``tracegrad._inductor``: the corner of ``torch._inductor`` that programs touch to tune
``torch.compile`` (``torch._inductor.config.coordinate_descent_tuning = True``,
``config.triton.unique_kernel_names = True``, ``config.fx_graph_cache = True``). tracegrad
compiles with XLA, so these settings are kept and read back but change nothing."""
from . import config, utils  # noqa: F401
