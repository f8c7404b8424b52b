"""``num_workers > 0`` without processes: torch's worker-visible behaviour, computed in this process.

torch starts ``num_workers`` processes; each runs ``worker_init_fn(worker_id)``, sees its
``get_worker_info()`` (``id``, ``num_workers``, ``seed = base_seed + id``, ``dataset``), and
the main process hands batch ``i`` to worker ``i % num_workers``. For a map-style dataset the
batches come back in sampler order whichever worker built them; for an IterableDataset each
worker iterates the dataset itself and batches what it yields, and the main process takes one
batch from each still-active worker in turn (so an IterableDataset that does not shard by
``get_worker_info()`` is seen once per worker, as in torch). This module reproduces that order
and those calls in the main process: the results are torch's, without the processes.

Differs from torch: the workers share this process, so the dataset is not copied (a dataset
that mutates itself while loading sees its own changes across workers) and the worker seeds
are reported but not applied to the global generators (no process of its own to seed).
"""
from __future__ import annotations

import os
import warnings

__all__ = ["WorkerInfo", "get_worker_info", "check_worker_number_rationality"]


class WorkerInfo:
    """Mirrors ``torch.utils.data.WorkerInfo``: ``id``, ``num_workers``, ``seed``, ``dataset``;
    read-only once made (RuntimeError on assignment, as torch)."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self):
        return f"{self.__class__.__name__}({', '.join(f'{k}={getattr(self, k)}' for k in self.__keys)})"


_CURRENT = [None]   # the WorkerInfo of the worker whose code is running, None in the main process


def get_worker_info():
    """Mirrors ``torch.utils.data.get_worker_info``: the running worker's ``WorkerInfo`` while a
    ``DataLoader`` with ``num_workers > 0`` loads (``worker_init_fn``, ``__getitem__``,
    ``__iter__`` and the iteration of an IterableDataset), None elsewhere."""
    return _CURRENT[0]


def as_worker(info, fn, *args):
    """``fn(*args)`` run as the worker ``info`` (``get_worker_info()`` returns it meanwhile)."""
    prev, _CURRENT[0] = _CURRENT[0], info
    try:
        return fn(*args)
    finally:
        _CURRENT[0] = prev


def check_worker_number_rationality(num_workers) -> None:
    """torch's UserWarning when ``num_workers`` exceeds the CPUs this process may use (at
    construction and at each ``iter``, as torch)."""
    if not num_workers:
        return
    checked = hasattr(os, "sched_getaffinity")
    suggest = len(os.sched_getaffinity(0)) if checked else os.cpu_count()
    if suggest is not None and num_workers <= suggest:
        return
    if suggest is None:
        why = "DataLoader is not able to compute a suggested max number of worker in current system."
    else:
        why = (f"Our suggested max number of worker in current system is {suggest}"
               f"{'' if checked else ' (`cpuset` is not taken into account)'}, which is smaller than what "
               "this DataLoader is going to create.")
    warnings.warn(f"This DataLoader will create {num_workers} worker processes in total. {why} Please be aware "
                  "that excessive worker creation might get DataLoader running slow or even freeze, lower the "
                  "worker number to avoid potential slowness/freeze if necessary.", UserWarning, stacklevel=3)
