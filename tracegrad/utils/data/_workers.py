"""``num_workers > 0`` without processes: torch's worker-visible behaviour, computed in this process.

torch starts ``num_workers`` processes; each runs ``worker_init_fn(worker_id)``, sees its
``get_worker_info()`` (``id``, ``num_workers``, ``seed = base_seed + id``, ``dataset``), and
the main process hands batch ``i`` to worker ``i % num_workers``. For a map-style dataset the
batches come back in sampler order whichever worker built them; for an IterableDataset each
worker iterates the dataset itself and batches what it yields, and the main process takes one
batch from each still-active worker in turn (so an IterableDataset that does not shard by
``get_worker_info()`` is seen once per worker, as in torch). This module reproduces that order
and those calls in the main process: the results are torch's, without the processes.

Each emulated worker also has its own global random streams, as a worker process has: on its
first call it is seeded as torch seeds a worker (``random.seed(seed)``, ``torch.manual_seed(seed)``
and NumPy's global generator from ``SeedSequence([id, base_seed])``, torch's ``_generate_state``),
and while it runs those streams replace the main process's, which are put back after (so
``torch.initial_seed()`` in a worker is its seed and a ``worker_init_fn`` that reseeds leaves the
main process's generators alone).

An exception raised in a worker (its ``worker_init_fn``, ``__getitem__``, ``collate_fn`` or the
iteration) reaches the caller as torch re-raises it from a worker process: the same class, with
the message "Caught <class> in DataLoader worker process <id>." and the worker's traceback.

Differs from torch: the workers share this process, so state a dataset keeps outside itself (a
module global, a file) is seen by every worker, and each worker's copy of the dataset is shallow
(``copy.copy``): a container it holds (a cache dict) is the main process's own.
"""
from __future__ import annotations

import dataclasses
import os
import random
import traceback

import numpy as np

from ..._tensor import generator as _generator
from ..._ops.warn import warn as _warn

__all__ = ["WorkerInfo", "get_worker_info", "check_worker_number_rationality"]


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Mirrors ``torch.utils.data.WorkerInfo``: ``id``, ``num_workers``, ``seed``, ``dataset`` (and
    torch's ``rng=None`` / ``worker_method='multiprocessing'``); a frozen dataclass, as torch 2.13's,
    so assigning raises ``dataclasses.FrozenInstanceError`` (an AttributeError)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"

    def __post_init__(self):
        # the worker's own global random streams, made on its first call (_enter); not a field
        object.__setattr__(self, "_rng_streams", None)


_CURRENT = [None]   # the WorkerInfo of the worker whose code is running, None in the main process


def get_worker_info():
    """Mirrors ``torch.utils.data.get_worker_info``: the running worker's ``WorkerInfo`` while a
    ``DataLoader`` with ``num_workers > 0`` loads (``worker_init_fn``, ``__getitem__``,
    ``__iter__`` and the iteration of an IterableDataset), None elsewhere."""
    return _CURRENT[0]


def as_worker(info, fn, *args):
    """``fn(*args)`` run as the worker ``info``: ``get_worker_info()`` returns it and the global
    random streams are the worker's meanwhile (None: the main process, nothing swapped)."""
    prev, _CURRENT[0] = _CURRENT[0], info
    main = None if info is None else _enter(info)
    try:
        return fn(*args)
    except StopIteration:
        raise                       # an IterableDataset's end, not an error
    except Exception as e:
        if info is None:
            raise
        raise _worker_error(info, e) from None
    finally:
        if main is not None:
            object.__setattr__(info, "_rng_streams", _capture())
            _restore(main)
        _CURRENT[0] = prev


class _KeyErrorText(str):
    """A KeyError's message shown as written: KeyError's str() is the repr of its argument,
    which would print the traceback below as one quoted line of ``\\n``s."""

    def __repr__(self):
        return str(self)


def _worker_error(info, e):
    """What a worker's exception ``e`` becomes in the main process: torch re-raises it there as
    a new exception of the same class whose message says which worker caught it and carries the
    worker's traceback (RuntimeError where the class cannot be built from one message), so the
    error names the DataLoader and its worker rather than only, say, ``KeyError: 2``."""
    where = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    msg = (f"Caught {type(e).__name__} in DataLoader worker process {info.id}.\n"
           f"Original {where}")
    if isinstance(e, KeyError):
        msg = _KeyErrorText(msg)
    try:
        return type(e)(msg)
    except Exception:   # noqa: BLE001 -- a class whose constructor wants other arguments
        return RuntimeError(msg)


def _capture():
    # the default generator's seed and key themselves (a key array never changes): what
    # ``get_rng_state`` would copy through a tensor, at ~0.15 ms a batch more
    g = _generator.default_generator
    return (g._seed, g._key), random.getstate(), np.random.get_state()


def _restore(streams):
    g = _generator.default_generator
    g._seed, g._key = streams[0]
    random.setstate(streams[1])
    np.random.set_state(streams[2])


def _enter(info):
    """Swap the worker ``info``'s global random streams in (seeding them on its first call, as
    torch's worker loop does before ``worker_init_fn``); returns the main process's streams."""
    import tracegrad
    main = _capture()
    if info._rng_streams is None:
        random.seed(info.seed)
        tracegrad.manual_seed(info.seed)
        np.random.seed(np.random.SeedSequence([info.id, info.seed - info.id]).generate_state(4))
    else:
        _restore(info._rng_streams)
    return main


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
    _warn(f"This DataLoader will create {num_workers} worker processes in total. {why} Please be aware "
          "that excessive worker creation might get DataLoader running slow or even freeze, lower the "
          "worker number to avoid potential slowness/freeze if necessary.", UserWarning)
