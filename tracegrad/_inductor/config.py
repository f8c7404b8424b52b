"""``torch._inductor.config``: settings programs assign before ``torch.compile``. Every
assignment is accepted and kept (``config.max_autotune = True`` reads back True), nested groups
(``config.triton``, ``config.cpp``, ``config.trace``, ``config.aot_inductor``) too; none changes
what tracegrad compiles (XLA decides fusion and tuning). Reading a setting never assigned gives
AttributeError, as reading a name torch does not have."""
from __future__ import annotations

import sys
import types


class _Group:
    """A nested settings group (``config.triton``): attributes are whatever was assigned."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        raise AttributeError(f"torch._inductor.config.{self._name}.{attr} was never set (tracegrad keeps what "
                             "programs assign to inductor settings; they do not affect XLA compilation)")

    def __repr__(self):
        return f"<torch._inductor.config.{self._name}: {vars(self)}>"


triton = _Group("triton")
cpp = _Group("cpp")
trace = _Group("trace")
aot_inductor = _Group("aot_inductor")
cuda = _Group("cuda")

# what torch defaults to for the settings programs most often flip (readable before assignment)
coordinate_descent_tuning = False
coordinate_descent_check_all_directions = False
max_autotune = False
max_autotune_gemm = False
max_autotune_pointwise = False
epilogue_fusion = True
aggressive_fusion = False
freezing = False
fx_graph_cache = True
fx_graph_remote_cache = None
shape_padding = True
layout_optimization = True
cpp_wrapper = False
debug = False
compile_threads = 1
benchmark_kernel = False
force_fuse_int_mm_with_mul = False
use_mixed_mm = True
split_reductions = True
permute_fusion = False
triton.unique_kernel_names = False
triton.cudagraphs = False
triton.cudagraph_trees = True
cpp.simdlen = None
trace.enabled = False


def patch(*args, **kwargs):
    """Mirrors ``config.patch(...)``: a context manager (and decorator) setting values for a block."""
    import contextlib   # noqa: PLC0415 -- only patch() needs it

    changes = dict(args[0]) if args and isinstance(args[0], dict) else ({args[0]: args[1]} if args else {})
    changes.update(kwargs)
    module = sys.modules[__name__]

    @contextlib.contextmanager
    def scope():
        old = {k: getattr(module, k, _UNSET) for k in changes}
        for k, v in changes.items():
            setattr(module, k, v)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is _UNSET:
                    delattr(module, k)
                else:
                    setattr(module, k, v)
    return scope()


_UNSET = types.SimpleNamespace()
