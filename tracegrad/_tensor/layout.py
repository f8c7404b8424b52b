"""``torch.layout`` (``strided``, ``sparse_coo``) and the error a sparse tensor raises where an
op needs its dense value.

A sparse COO tensor (``_api/sparse_coo.py``) is a Tensor subclass with no dense value: reading
``_value`` (which every dense op does, in ``apply_op`` or before it) raises ``SparseOperand``,
so the dense per-op path needs no check of its own. The few functions that take a sparse
operand where torch does (``add(dense, sparse)``, ``mm(sparse, dense)``, gradient
accumulation) catch it and hand over to the sparse tensor.
"""
from __future__ import annotations

import os
import sys

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
           "SparseOperand"]


class layout:
    """Mirrors ``torch.layout``: ``tracegrad.strided`` (dense) or ``tracegrad.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tracegrad.{self.name}"   # as dtypes print (torch: "torch.<name>")

    def __reduce__(self):
        return self.name     # pickles as the module-level singleton


strided = layout("strided")
sparse_coo = layout("sparse_coo")
# torch's compressed sparse layouts: no tensor here has them (there is no CSR/CSC/BSR/BSC storage),
# but the names exist so that code naming them (a layout parametrization, a `layout ==` test)
# imports and compares as under torch.
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_GENERIC = {"f", "fn", "wrapper", "with_out", "inner", "op", "accepts_numpy_names", "method"}
# the __torch_function__ machinery: once the protocol is in use a public function runs a trampoline
# into it (NOTE [trampolines] in overridable.py); its frames name no API, the implementation's do
_DISPATCH_FILES = tuple(os.path.join(os.path.dirname(os.path.abspath(__file__)), f)
                        for f in ("overridable.py", "torch_function.py", "<__torch_function__ dispatch>"))
# the argument-checking wrappers (_api/argcheck.py guard, _no_kernel_for...): named by their
# ``api`` only; their other locals (a loop's parameter ``name``) are no op names
_CHECKERS = {"checked"}


def _frame_name(frame):
    """A frame's function name; a generated wrapper is named by the op name it closes over."""
    name = frame.f_code.co_name
    if name in _CHECKERS:
        name = frame.f_locals.get("api")
        name = name if isinstance(name, str) else None
    elif name in _GENERIC or name.startswith("<"):
        name = next((v for k in ("name", "opname", "api") if isinstance(v := frame.f_locals.get(k), str)), None)
    return name.strip("_") if name else None


def _public_caller() -> str:
    """The name of the API the user called: the outermost tracegrad function on the stack with
    a name (not a generated wrapper)."""
    frames, frame = [], sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_PACKAGE) and frame.f_code.co_filename not in _DISPATCH_FILES:
            frames.append(frame)
        frame = frame.f_back
    return next((n for n in map(_frame_name, reversed(frames)) if n), "unknown")


class SparseOperand(NotImplementedError):
    """Raised (torch's NotImplementedError) when an op that has no sparse COO implementation here
    reads a sparse tensor's dense value. ``tensor`` is that sparse tensor."""

    def __init__(self, tensor):
        self.tensor = tensor
        name = _public_caller()
        super().__init__(
            f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' backend: tracegrad "
            f"implements a subset of sparse COO operations (to_dense, coalesce, add, mul, "
            f"mm, sum, ...) and '{name}' is not one of them. Convert with .to_dense() first.")
