"""``tracegrad._functorch``: the corner of ``torch._functorch`` that programs touch to tune
``torch.compile``'s autograd capture (``torch._functorch.config.enable_autograd_cache = True``,
gpt-fast's generate.py). tracegrad differentiates compiled regions with JAX, so these settings
are kept and read back but change nothing."""
from . import config  # noqa: F401
