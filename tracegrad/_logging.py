"""``torch._logging``'s user-facing corner: ``set_logs``, which torch.compile tutorials call
(``torch._logging.set_logs(graph_code=True)``, ``set_logs(dynamo=logging.DEBUG)``).

tracegrad has no Dynamo/AOTAutograd/Inductor stages, so none of their log artifacts exist:
``set_logs`` checks its keywords as torch does and records them (``_SETTINGS``), and prints
nothing. What tracegrad's compiler did is in ``tracegrad.compiler.stats()``. The one component
that logs is ``autograd``: its level goes to the ``tracegrad.autograd`` logger, whose
``tracegrad.autograd.graph`` child names every node the engine runs (torch's
``torch.autograd.graph`` debug lines), printed to stderr as torch's handler prints them.
"""
from __future__ import annotations

import logging
import sys

__all__ = ["set_logs"]

# torch 2.13's set_logs keywords that programs use: component log levels ...
_LEVELS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d", "ddp",
           "fsdp", "dtensor", "onnx", "export")
# ... and on/off artifacts
_ARTIFACTS = ("bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
              "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards", "recompiles",
              "recompiles_verbose", "trace_source", "trace_call", "trace_bytecode", "output_code",
              "kernel_code", "schedule", "perf_hints", "pre_grad_graphs", "post_grad_graphs",
              "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion", "overlap", "cudagraphs",
              "sym_node", "compiled_autograd", "compiled_autograd_verbose", "cudagraph_static_inputs",
              "benchmarking", "autotuning")

_SETTINGS: dict = {}

_AUTOGRAD = logging.getLogger(__name__.split(".")[0] + ".autograd")
_HANDLER: list = [None]   # the stderr handler set_logs attached to _AUTOGRAD, while one is


def _apply_autograd_level(level):
    """torch's set_logs: a named level goes on the component's logger (with its stderr handler);
    every call resets what it does not name to WARNING."""
    if _HANDLER[0] is not None:
        _AUTOGRAD.removeHandler(_HANDLER[0])
        _HANDLER[0] = None
    if level is None:
        _AUTOGRAD.setLevel(logging.WARNING)
        return
    _AUTOGRAD.setLevel(level)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(levelname).1s%(asctime)s %(process)d %(pathname)s:%(lineno)d] "
                                     "%(message)s", "%m%d %H:%M:%S"))
    _AUTOGRAD.addHandler(h)
    _HANDLER[0] = h


def set_logs(**kwargs) -> None:
    """Mirrors ``torch._logging.set_logs(*, dynamo=None, graph_code=False, ..., modules=None)``:
    every call replaces the previous settings (torch resets what a call does not name). Levels
    are ``logging`` levels or None (else ValueError), artifacts booleans (else ValueError);
    ``modules`` maps logger names to levels and is kept unchecked. TypeError for a keyword torch
    does not have. No output follows (tracegrad has no such compile stages: see the module docstring)."""
    for name, value in kwargs.items():
        if name == "modules":
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"set_logs(): modules must be a dict of module names to levels, not {type(value).__name__}")
        elif name in _LEVELS:
            if value is not None and value not in (50, 40, 30, 20, 10, 0):
                raise ValueError(f"set_logs(): unrecognized log level for {name}: {value!r}, valid level values "
                                 "are the logging module's (50, 40, 30, 20, 10, 0) or None")
        elif name in _ARTIFACTS:
            if not isinstance(value, bool):
                raise ValueError(f"set_logs(): expected a bool to enable artifact {name}, received {value!r}")
        else:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    _SETTINGS.clear()
    _SETTINGS.update(kwargs)
    _apply_autograd_level(kwargs.get("autograd", kwargs.get("all")))
