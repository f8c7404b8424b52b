"""``tracegrad.backends``: mirrors ``torch.backends`` -- settable flags (``cuda.matmul.allow_tf32``,
``cudnn.allow_tf32``, ``cudnn.benchmark``, ``cudnn.deterministic``...) and availability queries.
XLA picks its own kernels, so only the matmul precision flags change results; the others are
stored for programs that set and read them."""
from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
