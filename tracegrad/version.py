"""``tracegrad.version``: mirrors ``torch.version`` -- what the build supports, as scripts print
it (``torch.version.cuda``). tracegrad has no CUDA/ROCm/XPU build of its own: it runs on
whatever JAX has (``tracegrad.cuda.is_available()`` says whether that includes a GPU), so the
toolkit versions are None, as torch's CPU build reports them."""
__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]

__version__ = "0.1.0"   # tracegrad's own version (the package's)
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
