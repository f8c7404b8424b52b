"""Mirrors ``torch.multiprocessing``: Python's ``multiprocessing`` under torch's module name, with
torch's additions (``spawn``, the sharing-strategy functions).

Differs from torch: a tensor's memory cannot be shared between processes. tracegrad's tensors
hold JAX arrays, which live in one process; a tensor sent to a child process (a ``Process``
argument, a ``Queue`` item) arrives as a copy, and the child's writes do not reach the parent.
``Tensor.share_memory_()`` and ``Module.share_memory()`` warn about this (Hogwild-style training,
where children update the parent's parameters in place, has no effect on the parent).
"""
from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (the names torch re-exports)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"] + list(_mp.__all__)

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = [_STRATEGIES[0]]


def get_all_sharing_strategies():
    """Mirrors ``torch.multiprocessing.get_all_sharing_strategies``: the set of strategy names."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """Mirrors ``torch.multiprocessing.get_sharing_strategy``: the current strategy's name."""
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Mirrors ``torch.multiprocessing.set_sharing_strategy``. Only recorded: tensors are copied
    between processes whatever the strategy. AssertionError, as torch, for an unknown name."""
    assert new_strategy in _STRATEGIES
    _strategy[0] = new_strategy


class ProcessException(Exception):
    """Mirrors ``torch.multiprocessing.ProcessException``: a process started by ``spawn`` failed;
    ``error_index`` is its index and ``pid`` its process id."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """Mirrors ``torch.multiprocessing.ProcessRaisedException``: the function raised in a child."""


class ProcessExitedException(ProcessException):
    """Mirrors ``torch.multiprocessing.ProcessExitedException``: a child exited with a non-zero
    code; ``exit_code`` holds it."""

    def __init__(self, msg, error_index, pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1)


class ProcessContext:
    """Mirrors ``torch.multiprocessing.ProcessContext``: the processes ``start_processes`` started;
    ``join()`` waits for them."""

    def __init__(self, processes, errors):
        self.processes, self._errors = processes, errors

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Waits for every process; True when all have exited. Raises ``ProcessRaisedException``
        (the child's traceback in the message) or ``ProcessExitedException`` when one failed."""
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        for i, p in enumerate(self.processes):
            if p.exitcode:
                if not self._errors.empty():
                    index, tb = self._errors.get()
                    raise ProcessRaisedException(f"\n\n-- Process {index} terminated with the following "
                                                 f"error:\n{tb}", index, self.processes[index].pid)
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                                             p.exitcode)
        return True


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Mirrors ``torch.multiprocessing.start_processes``: runs ``fn(i, *args)`` for ``i`` in
    ``range(nprocs)``, each in a process of ``start_method``; with ``join`` waits (see
    ``ProcessContext.join``), else returns the ``ProcessContext``."""
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = [ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon) for i in range(nprocs)]
    for p in processes:
        p.start()
    context = ProcessContext(processes, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Mirrors ``torch.multiprocessing.spawn``: ``start_processes`` with a start method (torch
    warns unless it is 'spawn'; any of Python's methods works here)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
