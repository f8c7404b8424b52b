"""``DataLoader``: iterate over a dataset in (optionally shuffled) batches.

Mirrors ``torch.utils.data.DataLoader``: the same arguments, defaults, validation errors,
``__len__`` and sampler/batch-sampler/collate pipeline, for map-style and iterable datasets.

Differs from torch:
- Loading always happens in the main process. With ``num_workers > 0`` no worker processes are
  started; ``_workers.py`` reproduces, in this process, what torch's workers do that a program
  can see: ``worker_init_fn`` calls, ``get_worker_info()``, and the order batches come back in
  (an IterableDataset is iterated once per worker, round robin). XLA already uses the machine's
  cores for the math, and the datasets here are in memory.
- ``pin_memory`` / ``pin_memory_device`` / ``prefetch_factor`` / ``persistent_workers`` /
  ``in_order`` / ``multiprocessing_context`` are validated and otherwise have no effect;
  ``timeout`` likewise with workers, while without workers a nonzero one fails when iterating
  (AssertionError, as torch's single-process iterator).
- Shuffling draws from JAX's PRNG: a seeded ``generator`` gives a reproducible order, but not
  the order torch would give for the same seed.
"""
from __future__ import annotations

import copy
import math
import multiprocessing

import tracegrad

from ._utils.collate import default_collate, default_convert
from ._workers import WorkerInfo, as_worker, check_worker_number_rationality, get_worker_info
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ..._ops.warn import warn as _warn

__all__ = ["DataLoader", "get_worker_info"]


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the sampler of an IterableDataset (torch's private class)."""

    def __iter__(self):
        while True:
            yield None


def _check_multiprocessing_context(context, num_workers):
    """The validated ``multiprocessing_context`` (a start-method name becomes its context), with
    torch's errors: ValueError without workers or for an unknown start method, TypeError for
    anything that is neither a name nor a ``multiprocessing`` context. (No process is started
    with it: see the module notes.)"""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with "
                         "multi-process loading (num_workers > 0), but got "
                         f"num_workers={num_workers}")
    if isinstance(context, str):
        valid = multiprocessing.get_all_start_methods()
        if context not in valid:
            raise ValueError("multiprocessing_context option should specify a valid start method "
                             f"in {valid!r}, but got multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context


class _SingleProcessDataLoaderIter:
    """One pass over a DataLoader, loading in this process. Mirrors torch's iterator object
    rather than a generator because torch's behaviour depends on it: an exception while
    fetching one batch of a map-style dataset does not end the pass (the next ``next()`` reads
    the next batch), ``len(iterator)`` is the number of batches, and once ``len(loader)`` was
    read for an IterableDataset each batch past that count warns.
    Raises: AssertionError for ``timeout != 0`` without workers (as torch's single-process
    iterator), and for ``prefetch_factor=0`` with workers (as torch's multi-process one)."""

    def __init__(self, loader):
        if loader.num_workers == 0 and loader.timeout != 0:
            raise AssertionError("DataLoader with num_workers=0 requires timeout == 0 "
                                 "(single-process loading)")
        if loader.num_workers > 0 and loader.prefetch_factor == 0:
            # torch's multi-process iterator asserts it when a pass starts (the constructor takes
            # 0 and refuses a negative one); unchecked, the emulated workers ran the pass
            raise AssertionError("DataLoader: prefetch_factor must be greater than 0 for multi-process loading "
                                 "(num_workers > 0); leave it None (2 batches per worker) or pass >= 1")
        self._loader = loader
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._num_yielded = 0
        self._sampler_iter = iter(loader._index_sampler)
        if loader.pin_memory and not tracegrad.accelerator.is_available():
            # torch says so on every pass (makemore passes pin_memory=True on any device)
            _warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                  "pinned memory won't be used.", UserWarning)
        # torch draws the workers' base seed here, from the loader's generator or the global
        # RNG. No workers here, but the draw is kept so that starting a pass advances that
        # generator as in torch (code seeding once and then iterating sees the same streams).
        # Its value is read only when there are (emulated) workers to seed: inside
        # tracegrad.compile reading it would be a graph break in every loop over a loader.
        base_seed = tracegrad.empty((), dtype=tracegrad.int64).random_(generator=loader.generator)
        # the emulated workers (_workers.py): one WorkerInfo each, and for an IterableDataset one
        # [iterator, ended] stream each (a single stream, as worker None, without workers)
        # each with its own (shallow) copy of the dataset, as torch's workers get theirs: torch's
        # documented worker_init_fn sets dataset.start/end per worker; persistent workers keep
        # their copies (and ran their init) across passes
        n = loader.num_workers
        self._workers = getattr(loader, "_persistent", None)
        if self._workers is None:
            base_seed = int(base_seed.item()) if n else 0
            self._workers = [WorkerInfo(id=w, num_workers=n, seed=base_seed + w,
                                        dataset=copy.copy(self._dataset)) for w in range(n)] or [None]
            if n and loader.worker_init_fn is not None:
                for info in self._workers:
                    as_worker(info, loader.worker_init_fn, info.id)
            if n and loader.persistent_workers:
                object.__setattr__(loader, "_persistent", self._workers)
        self._turn = 0
        if self._iterable:
            self._streams = [[as_worker(info, iter, self._dataset if info is None else info.dataset), False]
                             for info in self._workers]
        # NOTE [TensorDataset fast path] one gather per tensor instead of len(indices) slices and
        # a stack: the same values, dtypes and list-of-tensors structure as default_collate of
        # the per-sample tuples (only for tensors without grad, so no graph differs).
        self._fast = (type(self._dataset) is TensorDataset and self._collate_fn is default_collate
                      and self._auto_collation
                      and not any(t.requires_grad for t in self._dataset.tensors))

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader._index_sampler)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._IterableDataset_len_called is not None \
                and self._num_yielded > self._IterableDataset_len_called:
            _warn(f"Length of IterableDataset {self._dataset} was reported to be "
                  f"{self._IterableDataset_len_called}(when accessing len(dataloader)), "
                  f"but {self._num_yielded} samples have been fetched. " + (
                      # torch's hint when workers load: each gets a replica of the dataset
                      "For multiprocessing data-loading, this could be caused by not properly configuring "
                      "the IterableDataset replica at each worker. Please see "
                      "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for "
                      "examples." if self._loader.num_workers > 0 else ""))
        return data

    def _next_data(self):
        index = next(self._sampler_iter)  # StopIteration ends the pass
        if self._iterable:
            return self._fetch_iterable(index)
        info = self._workers[self._turn]     # batch i is worker i % num_workers's, as torch
        self._turn = (self._turn + 1) % len(self._workers)
        if info is None:
            return self._fetch_map(self._dataset, index)
        return as_worker(info, self._fetch_map, info.dataset, index)

    def _fetch_map(self, dataset, index):
        if not self._auto_collation:
            return self._collate_fn(dataset[index])
        # the one-gather path only for a non-empty batch of Python ints: an empty batch is
        # default_collate's IndexError and a float/str/tensor index is t[i]'s error, as torch's
        # per-sample fetch (tensor(..., int64) would read [] or 0.5 as positions)
        if self._fast and index and all(type(i) is int for i in index):
            idx = tracegrad.tensor(list(index), dtype=tracegrad.int64)
            return [t[idx] for t in dataset.tensors]
        getitems = getattr(dataset, "__getitems__", None)
        if callable(getitems):
            return self._collate_fn(getitems(index))
        return self._collate_fn([dataset[i] for i in index])

    def _fetch_iterable(self, index):
        # the next batch of the next worker still yielding, in turn (torch's round robin)
        for _ in range(len(self._streams)):
            w = self._turn
            self._turn = (w + 1) % len(self._streams)
            if self._streams[w][1]:
                continue
            try:
                return as_worker(self._workers[w], self._fetch_stream, self._streams[w], index)
            except StopIteration:
                self._streams[w][1] = True
        raise StopIteration

    def _fetch_stream(self, stream, index):
        if not self._auto_collation:
            return self._collate_fn(next(stream[0]))
        batch = []
        for _ in index:
            try:
                batch.append(next(stream[0]))
            except StopIteration:
                stream[1] = True
                break
        if not batch or (self._drop_last and len(batch) < len(index)):
            stream[1] = True
            raise StopIteration
        return self._collate_fn(batch)


class DataLoader:
    """Batches of samples from ``dataset``. Mirrors ``torch.utils.data.DataLoader``.
    Args:    ``batch_size`` (default 1; None turns off automatic batching, each sample then goes
             through ``default_convert``); ``shuffle`` (a ``RandomSampler`` drawing from
             ``generator``, a ``tracegrad.Generator``, or a seed from the global generator);
             ``sampler`` / ``batch_sampler`` (custom index orders); ``drop_last``;
             ``collate_fn`` (default ``default_collate``); ``num_workers`` (emulated in this
             process with torch's order and ``worker_init_fn``/``get_worker_info``: module notes)
             and the other multiprocessing options are accepted.
    Returns: an iterable; ``len(loader)`` is the number of batches (for an IterableDataset,
             computed from ``len(dataset)``).
    Raises:  ValueError with torch's messages for conflicting options: ``sampler`` with
             ``shuffle``; ``batch_sampler`` with ``batch_size``/``shuffle``/``sampler``/
             ``drop_last``; ``batch_size=None`` with ``drop_last``; an IterableDataset with
             ``shuffle``/``sampler``/``batch_sampler``; negative ``num_workers``/``timeout``;
             ``prefetch_factor``, ``persistent_workers`` or ``multiprocessing_context``
             without workers; an unknown start method; setting ``batch_size``/``sampler``/...
             after construction. TypeError for a ``multiprocessing_context`` that is neither a
             start-method name nor a context. AssertionError from ``iter(loader)`` for a
             nonzero ``timeout`` without workers. UserWarning for each batch an
             IterableDataset yields past the ``len(dataset)`` read by ``len(loader)``.

    >>> ds = TensorDataset(tracegrad.arange(10.), tracegrad.arange(10))
    >>> [tuple(x.shape) for x, y in DataLoader(ds, batch_size=4)]
    [(4,), (4,), (2,)]
    """

    __initialized = False

    def __class_getitem__(cls, item):  # DataLoader[T] in annotations, as torch's Generic
        return cls

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        multiprocessing_context = _check_multiprocessing_context(multiprocessing_context, num_workers)
        check_worker_number_rationality(num_workers)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._IterableDataset_len_called = None  # set by __len__ for an IterableDataset

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            # torch cannot check `shuffle is not None`: shuffle=False used to be the default
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._iterable = False

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive "
                                 "with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching "
                             "and is mutually exclusive with drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        check_worker_number_rationality(self.num_workers)   # torch warns again for each pass
        return _SingleProcessDataLoaderIter(self)

    def __len__(self):
        if self._iterable:
            # remembered (a sample count, as torch) so the iterator can warn when the
            # dataset yields more than it reported
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
