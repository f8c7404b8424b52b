"""testinfra42: the rest of PyTorch's test/test_dataloader.py that a training loop relies on:
``TestDatasetRandomSplit``, ``TestTensorDataset``, ``TestStackDataset``, ``TestConcatDataset``,
``TestDataLoader`` (sequential / shuffled / non-batched loading, sampler and batch_sampler
arguments and their errors, drop_last, len() of loaders and samplers, RandomSampler with
replacement / num_samples / generator, SubsetRandomSampler, WeightedRandomSampler, DistributedSampler's
rank check, IterableDataset (len, drop_last, worker sharding), default_collate / default_convert on
numpy arrays, numbers, strings, mappings and sequences and their errors, ChainDataset, a generator
passed to DataLoader, worker_init_fn and the workers' seeds), ``TestDataLoaderPersistentWorkers`` (the
same with persistent_workers=True), ``TestStringDataLoader``, ``TestDictDataLoader``,
``TestNamedTupleDataLoader`` and ``TestCustomPinFn``. Ported in our own code and run on tracegrad
through its own ``tracegrad.testing._internal`` harness; every test is here under its original name
with its original checks. tests/conformance/test_data_ported.py and test_ported_round3.py hold the
earlier, pytest-style ports of some of the same tests.

tracegrad loads in the main process: with ``num_workers > 0`` it reproduces what torch's workers do
that a program can see (worker_init_fn, get_worker_info(), the workers' seeds, per-worker copies of the
dataset, the order batches come back in), so the worker variants run here as in torch.

Adapted: the loader dataset is 20 samples of (2, 3, 5) with labels randperm(10).repeat(2) (100 and
randperm(50)); test_len's expected lengths follow (20 / 10 / 7 for 100 / 50 / 34); test_numpy's dataset
has 24 items (1000). test_splits_reproducibility drops its first check (the exact split torch's
Mersenne-Twister stream gives for seed 1; tracegrad draws from JAX's PRNG, so a seed fixes a split but
not torch's); the rest of it runs. test_worker_seed / test_worker_seed_reproducibility /
test_get_worker_info use the file's datasets without their cross-process barrier
(``SynchronizedDataset.sync_once``, there so that every worker process takes a batch; batch i goes to
worker i % num_workers, so they do here and in torch) and test_get_worker_info runs in this process,
comparing the worker ids (not pids) its init_fn records. test_default_collate_shared_tensor keeps its
checks outside a worker (nothing is shared), not the ``_utils.worker._worker_info`` hack.
test_get_worker_info's read-only checks are torch 2.13's: WorkerInfo is a frozen dataclass there
(FrozenInstanceError "cannot assign to field 'id'"; a new attribute is a TypeError on Python 3.11),
where the file catches an older RuntimeError.
TestCustomPinFn / TestStringDataLoader.test_shuffle_pin_memory / TestDictDataLoader.test_pin_memory /
TestNamedTupleDataLoader run on the CPU with pin_memory=True: the batches must be the collated
types and pinned exactly when an accelerator is present (torch warns and leaves them unpinned
otherwise), where the file skips them without CUDA. TestDataLoaderPersistentWorkers.test_early_exit
runs its script's loader in this process (4 batches of 16 x (4, 4) instead of 28 x 28). test_worker_seed
collects int seeds (the file's set of batch tensors has num_workers members by identity, whatever the
seeds). Under the oracle the spawn / forkserver contexts are run as fork (a spawned torch worker
re-imports torch: seconds each).

Left out, each skipped with its reason: worker-process life cycle tests (test_fd_limit_exceeded,
test_segfault, test_no_segfault, test_timeout, test_large_sampler_indices, test_partial_workers,
test_proper_exit: no processes to kill, time out or leak), test_numpy_gen_state (torch's private
numpy seeding helper), the datapipe tests (test_multiprocessing_iterdatapipe*), CUDA-only tests
(pin_memory_device, CUDA datasets) and TestDataLoaderDeviceType (nested tensors).

Found and left (``TestFixesTI42.test_worker_dataset_copies_are_deep``, an expected failure on
tracegrad): an emulated worker's dataset is a shallow copy, so a dataset that fills a Python
container while loading (a cache dict) fills the main process's and the other workers' one too,
where torch's workers each have their own copy.

Fixes in tracegrad (``TestFixesTI42`` probes each): an IterableDataset that yields more than its
len() warns with torch's words for multi-process loading ("... For multiprocessing data-loading, this
could be caused by not properly configuring the IterableDataset replica at each worker ..."); the
emulated workers run with their own global RNG streams (torch.manual_seed(base_seed + id), Python's
``random``, NumPy's global generator seeded as torch's ``_generate_state``) so torch.initial_seed() in a worker is its seed, worker_init_fn's seeding stays in that
worker and the main process's generator is as it was; WorkerInfo is a frozen dataclass as torch 2.13's
(``dataclasses.FrozenInstanceError`` "cannot assign to field 'id'", an AttributeError; it raised
RuntimeError) with torch's ``rng`` / ``worker_method`` fields; ``multinomial`` with replacement and
more than one draw (WeightedRandomSampler's default) words bad probabilities as torch's kernel for
that case ("invalid multinomial distribution (encountering probability entry < 0)" / "... = infinity
or NaN"), where it used the one-draw kernel's "probability tensor contains either `inf`, `nan` or
element < 0".

``TI42_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in
a subprocess), so every expectation is torch's.
"""
import dataclasses
import functools
import importlib
import itertools
import math
import multiprocessing
import operator
import os
import random
import tempfile
import unittest
import warnings
from collections import Counter, namedtuple
from typing import List

import numpy as np

from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI42_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_data = importlib.import_module(torch.__name__ + ".utils.data")
_utils = importlib.import_module(torch.__name__ + ".utils.data._utils")
_collate = importlib.import_module(torch.__name__ + ".utils.data._utils.collate")
TestCase = _cu.TestCase
TEST_CUDA = _cu.TEST_CUDA
ChainDataset, ConcatDataset, DataLoader, Dataset = (_data.ChainDataset, _data.ConcatDataset, _data.DataLoader,
                                                    _data.Dataset)
IterableDataset, Subset, TensorDataset, StackDataset = (_data.IterableDataset, _data.Subset, _data.TensorDataset,
                                                        _data.StackDataset)
random_split = _data.random_split

# under the oracle torch starts real workers, and a spawn / forkserver worker re-imports torch (seconds
# each): there those contexts are checked with fork (what they must give does not depend on it)
supported_multiprocessing_contexts = [None] + [m if not _ORACLE else "fork"
                                               for m in multiprocessing.get_all_start_methods()]
_SPAWN = "fork" if _ORACLE else "spawn"
_NO_PROCESSES = "tracegrad loads in the main process: no worker processes to start, kill or time out"


# ---- the file's datasets ---------------------------------------------------------------------
class CountingDataset(Dataset):
    """Map-style dataset of the ints 0..n-1."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


class CountingIterableDataset(IterableDataset):
    """IterableDataset of 0..n-1 with len() n (not sharded per worker)."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class ErrorDataset(Dataset):
    """A dataset without __getitem__: every fetch raises NotImplementedError."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size


class SeedDataset(Dataset):
    """Each item is torch.initial_seed() of the process (worker) that loads it."""

    def __init__(self, size):
        self.size = size

    def __getitem__(self, idx):
        return torch.initial_seed()

    def __len__(self):
        return self.size


class WorkerSpecificIterableDataset(IterableDataset):
    """Worker k yields range(sizes[k])."""

    def __init__(self, sizes_for_all_workers):
        self.sizes_for_all_workers = sizes_for_all_workers

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        assert worker_info is not None
        return iter(range(self.sizes_for_all_workers[worker_info.id]))

    def __len__(self):
        return sum(self.sizes_for_all_workers)


class WorkerInfoDataset(Dataset):
    """The file's TestWorkerInfoDataset without the barrier: item = the worker's ``value``."""

    def __init__(self, size):
        self.size = size

    def __getitem__(self, idx):
        return torch.tensor(self.value)

    def __len__(self):
        return self.size


def _worker_info_init_fn(worker_id):
    # the file's _test_worker_info_init_fn (the worker id stands for its pid)
    worker_info = torch.utils.data.get_worker_info()
    assert worker_id == worker_info.id
    assert worker_id < worker_info.num_workers
    assert worker_info.seed == torch.initial_seed()
    dataset = worker_info.dataset
    assert isinstance(dataset, WorkerInfoDataset)
    assert not hasattr(dataset, "value")
    # read-only: torch 2.13's WorkerInfo is a frozen dataclass (the file's RuntimeError is older)
    try:
        worker_info.id = 3999
    except dataclasses.FrozenInstanceError as e:
        assert str(e) == "cannot assign to field 'id'"
    else:
        raise AssertionError("WorkerInfo accepted an assignment")
    try:
        worker_info.a = 3
    except (AttributeError, TypeError):   # torch 2.13 on Python 3.11: the slots dataclass's TypeError
        assert not hasattr(worker_info, "a")
    else:
        raise AssertionError("WorkerInfo accepted a new attribute")
    for k in ["id", "num_workers", "seed", "dataset"]:
        assert f"{k}=" in repr(worker_info)
    dataset.value = [worker_id, worker_id]


def init_fn(worker_id):
    torch.manual_seed(12345)


class ErrorIterableDataset(IterableDataset):
    def __iter__(self):
        raise RuntimeError("Error in __iter__")


def error_worker_init_fn(_):
    raise RuntimeError("Error in worker_init_fn")


class BulkLoadingDataset(Dataset):
    """__getitem__ takes a whole list of indices (batch_size=None with a batch sampler)."""

    def __init__(self, length):
        self.length = length

    def __getitem__(self, indices):
        assert isinstance(indices, (list, tuple))
        return torch.as_tensor(indices)

    def __len__(self):
        return self.length


class BulkLoadingSampler(torch.utils.data.Sampler):
    """Shuffled lists of batch_size indices."""

    def __init__(self, dataset, batch_size):
        self.dataset = dataset
        self.batch_size = batch_size

    def __iter__(self):
        for x in torch.randperm(len(self.dataset)).split(self.batch_size):
            yield x.tolist()

    def __len__(self):
        return int(math.ceil(len(self.dataset) / float(self.batch_size)))


class MultiEpochDataset(IterableDataset):
    """The file's TestMultiEpochDataset: each worker yields its id length // num_workers times."""

    def __init__(self, length):
        self.length = length

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        assert worker_info is not None
        for _ in range(self.length // worker_info.num_workers):
            yield worker_info.id

    def __len__(self):
        return self.length


class CustomList(list):
    pass


class CustomDict(dict):
    pass


# ---- TestDatasetRandomSplit / TestTensorDataset / TestStackDataset / TestConcatDataset ---------
class TestDatasetRandomSplitTI42(TestCase):
    def test_lengths_must_equal_dataset_size(self):
        with self.assertRaises(ValueError):
            random_split([1, 2, 3, 4], [1, 2])

    def test_splits_have_correct_size(self):
        splits = random_split([1, 2, 3, 4, 5, 6], [2, 4])
        self.assertEqual([len(s) for s in splits], [2, 4])
        splits = random_split([1, 2, 3, 4, 5, 6], [0.5, 0.5])
        self.assertEqual([len(s) for s in splits], [3, 3])
        self.assertEqual(len(random_split(range(3), [0.5, 0.5], generator=torch.Generator().manual_seed(1))), 2)
        # the remainder goes round robin to the first splits
        splits = random_split(range(106), [0.1, 0.2, 0.3, 0.4], generator=torch.Generator().manual_seed(1))
        self.assertEqual([len(s) for s in splits], [11, 22, 31, 42])

    def test_splits_are_mutually_exclusive(self):
        for data, lengths in (([5, 2, 3, 4, 1, 6], [2, 4]), ([5, 2, 3, 4, 1, 6], [0.33, 0.67]),
                              ([1, 2, 3, 4], [0.25, 0.75])):
            splits = random_split(data, lengths)
            self.assertListEqual(sorted(data), sorted(list(splits[0]) + list(splits[1])))

    def test_splits_indexing_type(self):
        test = self

        class CustomDataset:
            def __init__(self, custom_list):
                self.data = custom_list

            def __getitem__(self, key):
                test.assertEqual(type(key), int)
                return self.data[key]

            def __len__(self):
                return len(self.data)

        for lengths in ([5], [1.0]):
            for _ in DataLoader(random_split(CustomDataset([1, 2, 3, 4, 5]), lengths)[0]):
                pass

    def test_splits_reproducibility(self):
        # (the first check, torch's exact split for seed 1, is left out: see the module docstring)
        for n, lengths in ((100, [60, 40]), (100, [0.5, 0.5]), (100, [0.33, 0.33, 0.34])):
            self.assertEqual(random_split(range(n), lengths, generator=torch.Generator().manual_seed(42)),
                             random_split(range(n), lengths, generator=torch.Generator().manual_seed(42)))

    def test_incomplete_fractional_splits(self):
        with self.assertRaises(ValueError):
            random_split([1, 2, 3, 4], [0.1])     # fractions that do not sum to 1
        with self.assertRaises(ValueError):
            random_split([1, 2, 3, 4], [1.1])     # a fraction above 1

    def test_splits_generator(self):
        # without a generator random_split draws from the global one ...
        state = torch.get_rng_state()
        a = torch.rand(10)
        torch.set_rng_state(state)
        random_split(range(10), [5, 5])
        self.assertNotEqual(a, torch.rand(10))
        # ... and with one it leaves the global one alone
        state = torch.get_rng_state()
        a = torch.rand(10)
        torch.set_rng_state(state)
        random_split(range(10), [5, 5], generator=torch.Generator().manual_seed(42))
        self.assertEqual(a, torch.rand(10))

    def test_slicing_of_subset_of_dataset(self):
        dataset = TensorDataset(torch.tensor([1, 2, 3, 4, 5]))
        subset = Subset(dataset, [0, 1, 2, 3, 4])
        self.assertEqual(subset[:], dataset[:])
        self.assertEqual(subset[1:2], dataset[1:2])
        self.assertEqual(subset[0:-1:2], dataset[0:-1:2])
        subset1, _ = random_split(dataset, [3, 2])
        self.assertEqual(subset1[:], dataset[subset1.indices[:]])
        self.assertEqual(subset1[0:2], dataset[subset1.indices[0:2]])
        self.assertEqual(subset1[0:-1:2], dataset[subset1.indices[0:-1:2]])

    def test_slicing_of_subset_of_subset(self):
        dataset = TensorDataset(torch.tensor([1, 2, 3, 4, 5]))
        subset_of_subset = Subset(Subset(dataset, [0, 1, 2, 3, 4]), [0, 1, 2, 3, 4])
        self.assertEqual(subset_of_subset[:], dataset[:])
        self.assertEqual(subset_of_subset[0:2], dataset[0:2])
        self.assertEqual(subset_of_subset[0:-1:2], dataset[0:-1:2])
        subset1, _ = random_split(dataset, [4, 1])
        sub1, _ = random_split(subset1, [3, 1])
        idx = [subset1.indices[i] for i in sub1.indices]
        self.assertEqual(sub1[:], dataset[idx.copy()])
        self.assertEqual(sub1[0:2], dataset[idx[0:2]])
        self.assertEqual(sub1[0:-1:2], dataset[idx[0:-1:2]])


class TestTensorDatasetTI42(TestCase):
    def test_len(self):
        self.assertEqual(len(TensorDataset(torch.randn(15, 2, 3), torch.randperm(15))), 15)

    def test_getitem(self):
        t, l = torch.randn(15, 2, 3), torch.randn(15, 4)
        source = TensorDataset(t, l)
        for i in range(15):
            self.assertEqual(t[i], source[i][0])
            self.assertEqual(l[i], source[i][1])

    def test_getitem_1d(self):
        t, l = torch.randn(15), torch.randn(15)
        source = TensorDataset(t, l)
        for i in range(15):
            self.assertEqual(t[i], source[i][0])
            self.assertEqual(l[i], source[i][1])

    def test_single_tensor(self):
        t = torch.randn(5, 10)
        source = TensorDataset(t)
        self.assertEqual(len(source), 5)
        for i in range(5):
            self.assertEqual(t[i], source[i][0])

    def test_many_tensors(self):
        ts = [torch.randn(5, 2, 3), torch.randn(5, 4), torch.randn(5, 2, 5), torch.randn(5, 3, 1)]
        source = TensorDataset(*ts)
        self.assertEqual(len(source), 5)
        for i in range(5):
            for k, t in enumerate(ts):
                self.assertEqual(t[i], source[i][k])


class _GetItemsDataset(Dataset):
    """A dataset with a batched __getitems__ (``short`` returns one item too few)."""

    def __init__(self, short=False):
        self.data = torch.randn(4)
        self.short = short

    def __getitem__(self, item):
        return self.data[item]

    def __getitems__(self, items):
        out = self.data[items]
        return out[:-1] if self.short else out

    def __len__(self):
        return 4


class TestStackDatasetTI42(TestCase):
    def test_empty(self):
        with self.assertRaisesRegex(ValueError, "At least one dataset should be passed"):
            StackDataset()

    def test_mixed(self):
        with self.assertRaisesRegex(ValueError, "Supported either"):
            StackDataset(TensorDataset(torch.randn(15, 10)), a=TensorDataset(torch.randn(10, 15)))

    def test_size_mismatch(self):
        with self.assertRaisesRegex(ValueError, "Size mismatch between datasets"):
            StackDataset(TensorDataset(torch.randn(15, 10)), TensorDataset(torch.randn(10, 15)))
        with self.assertRaisesRegex(ValueError, "Size mismatch between datasets"):
            StackDataset(a=TensorDataset(torch.randn(15, 10)), b=TensorDataset(torch.randn(10, 15)))

    def test_len(self):
        a, b = TensorDataset(torch.randn(15, 10)), TensorDataset(torch.randn(15))
        for source in (StackDataset(a, b), StackDataset(a), StackDataset(a=a, b=b), StackDataset(a=a)):
            self.assertEqual(len(source), 15)

    def test_single(self):
        t = TensorDataset(torch.randn(15, 10))
        source, named = StackDataset(t), StackDataset(a=t)
        for i in range(15):
            self.assertEqual(t[i], source[i][0])
            self.assertEqual(t[i], named[i]["a"])

    def test_getitem(self):
        t, l = TensorDataset(torch.randn(15, 10)), TensorDataset(torch.randn(15, 5, 4))
        source, named = StackDataset(t, l), StackDataset(a=t, b=l)
        for i in range(15):
            self.assertEqual(t[i], source[i][0])
            self.assertEqual(l[i], source[i][1])
            self.assertEqual(t[i], named[i]["a"])
            self.assertEqual(l[i], named[i]["b"])

    def test_getitems(self):
        t, l = _GetItemsDataset(), [1, 2, 3, 4]
        batch = StackDataset(t, l).__getitems__([0, 1, 2, 3])
        named = StackDataset(t=t, l=l).__getitems__([0, 1, 2, 3])
        for i in range(4):
            self.assertEqual(t[i], batch[i][0])
            self.assertEqual(l[i], batch[i][1])
            self.assertEqual(t[i], named[i]["t"])
            self.assertEqual(l[i], named[i]["l"])

    def test_getitems_raises_index_error(self):
        with self.assertRaises(IndexError):
            StackDataset(_GetItemsDataset(), [1, 2, 3, 4]).__getitems__([0, 4])

    def test_getitems_value_error(self):
        with self.assertRaisesRegex(ValueError, "Nested dataset's output size mismatch. Expected 4, got 3"):
            StackDataset(_GetItemsDataset(short=True), [1, 2, 3, 4]).__getitems__([0, 1, 2, 3])


class TestConcatDatasetTI42(TestCase):
    def test_concat_two_singletons(self):
        result = ConcatDataset([[0], [1]])
        self.assertEqual(2, len(result))
        self.assertEqual(0, result[0])
        self.assertEqual(1, result[1])

    def test_concat_two_non_singletons(self):
        result = ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
        self.assertEqual(10, len(result))
        self.assertEqual(0, result[0])
        self.assertEqual(5, result[5])

    def test_concat_two_non_singletons_with_empty(self):
        result = ConcatDataset([[0, 1, 2, 3, 4], [], [5, 6, 7, 8, 9]])
        self.assertEqual(10, len(result))
        self.assertEqual(0, result[0])
        self.assertEqual(5, result[5])

    def test_concat_raises_index_error(self):
        result = ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
        with self.assertRaises(IndexError):
            result[11]

    def test_add_dataset(self):
        d1, d2, d3 = (TensorDataset(torch.rand(7, 3, 4, 4), torch.rand(7)) for _ in range(3))
        result = d1 + d2 + d3
        self.assertEqual(21, len(result))
        self.assertEqual(0, (d1[0][0] - result[0][0]).abs().sum())
        self.assertEqual(0, (d2[0][0] - result[7][0]).abs().sum())
        self.assertEqual(0, (d3[0][0] - result[14][0]).abs().sum())

    def test_iterable_dataset_err(self):
        d1 = TensorDataset(torch.rand(7, 3, 4, 4), torch.rand(7))
        it1, it2 = CountingIterableDataset(5), CountingIterableDataset(10)
        for parts in ([d1, it2, it1], [it2], [it1, d1]):
            with self.assertRaisesRegex(AssertionError, "does not support IterableDataset"):
                ConcatDataset(parts)


# ---- TestDataLoader ----------------------------------------------------------------------------
class TestDataLoaderTI42(TestCase):
    persistent = False

    def setUp(self):
        super().setUp()
        self.data = torch.randn(20, 2, 3, 5)
        self.labels = torch.randperm(10).repeat(2)
        self.dataset = TensorDataset(self.data, self.labels)
        self.persistent_workers = self.persistent

    def _get_data_loader(self, dataset, **kwargs):
        persistent_workers = kwargs.get("persistent_workers", self.persistent_workers)
        if persistent_workers and kwargs.get("num_workers", 0) == 0:
            persistent_workers = False
        kwargs["persistent_workers"] = persistent_workers
        return DataLoader(dataset, **kwargs)

    def _test_sequential(self, loader):
        batch_size = loader.batch_size
        if batch_size is None:
            for idx, (sample, target) in enumerate(loader):
                self.assertEqual(sample, self.data[idx])
                self.assertEqual(target, self.labels[idx])
            self.assertEqual(idx, len(self.dataset) - 1)
        else:
            for i, (sample, target) in enumerate(loader):
                idx = i * batch_size
                self.assertEqual(sample, self.data[idx:idx + batch_size])
                self.assertEqual(target, self.labels[idx:idx + batch_size])
            self.assertEqual(i, math.floor((len(self.dataset) - 1) / batch_size))

    def _find(self, sample):
        # the row of self.data equal to ``sample`` (rows are distinct random draws)
        for data_point_idx, data_point in enumerate(self.data):
            if data_point.eq(sample).all():
                return data_point_idx
        self.fail("a sample that is not in the dataset")

    def _test_shuffle(self, loader):
        found_data = dict.fromkeys(range(self.data.size(0)), 0)
        found_labels = dict.fromkeys(range(self.labels.size(0)), 0)
        batch_size = loader.batch_size
        for i, (batch_samples, batch_targets) in enumerate(loader):
            pairs = [(batch_samples, batch_targets)] if batch_size is None else zip(batch_samples, batch_targets)
            for sample, target in pairs:
                k = self._find(sample)
                self.assertFalse(found_data[k])
                found_data[k] += 1
                self.assertEqual(target, self.labels[k])
                found_labels[k] += 1
            self.assertEqual(sum(found_data.values()), (i + 1) * (batch_size or 1))
            self.assertEqual(sum(found_labels.values()), (i + 1) * (batch_size or 1))
        self.assertEqual(i, math.floor((len(self.dataset) - 1) / (batch_size or 1)))

    def _test_error(self, loader):
        it = iter(loader)
        errors = 0
        while True:
            try:
                next(it)
            except NotImplementedError:
                errors += 1
            except StopIteration:
                self.assertEqual(errors, math.ceil(float(len(loader.dataset)) / loader.batch_size))
                return

    def test_error_in_init(self):
        for num_workers in [0, 2]:
            loader = self._get_data_loader(ErrorIterableDataset(), num_workers=num_workers)
            with self.assertRaisesRegex(RuntimeError, "Error in __iter__"):
                list(iter(loader))
        loader = self._get_data_loader(self.dataset, num_workers=2, worker_init_fn=error_worker_init_fn)
        with self.assertRaisesRegex(RuntimeError, "Error in worker_init_fn"):
            list(iter(loader))

    def test_typing(self):
        # subscripting Dataset / DataLoader must not raise
        class SomeDatasetClass(Dataset[List[torch.Tensor]]):
            pass

        def _create_dataloader(is_train: bool) -> DataLoader[List[torch.Tensor]]:
            pass

    @unittest.skip(_NO_PROCESSES)
    def test_fd_limit_exceeded(self):
        pass

    def test_invalid_assign_after_init(self):
        dl = self._get_data_loader(self.dataset)
        for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset"):
            self.assertRaises(ValueError, lambda: setattr(dl, attr, {}))

    def test_sequential_nonbatch(self):
        self._test_sequential(self._get_data_loader(self.dataset, batch_size=None))

    def test_sequential_batch(self):
        self._test_sequential(self._get_data_loader(self.dataset))
        self._test_sequential(self._get_data_loader(self.dataset, batch_size=2))

    def test_bulk_loading_nobatch(self):
        n = 35
        ds = BulkLoadingDataset(n)
        sampler = BulkLoadingSampler(ds, batch_size=4)
        for num_workers in [0, 4]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # pin_memory without an accelerator
                dl = self._get_data_loader(ds, num_workers=num_workers, batch_size=None, sampler=sampler,
                                           pin_memory=TEST_CUDA)
                self.assertFalse(dl._auto_collation)
                samples = list(dl)
            self.assertEqual(samples[0].is_pinned(), TEST_CUDA)
            self.assertEqual(set(torch.cat(samples, 0).tolist()), set(range(n)))

    def test_growing_dataset(self):
        dataset = [torch.ones(4) for _ in range(4)]
        dataloader_seq = self._get_data_loader(dataset, shuffle=False)
        dataloader_shuffle = self._get_data_loader(dataset, shuffle=True)
        dataset.append(torch.ones(4))
        self.assertEqual(len(dataloader_seq), 5)
        self.assertEqual(len(dataloader_shuffle), 5)

    def test_multiple_dataloaders(self):
        for multiprocessing_context in supported_multiprocessing_contexts:
            loader1_it = iter(self._get_data_loader(self.dataset, num_workers=1))
            loader2_it = iter(self._get_data_loader(self.dataset, num_workers=2,
                                                    multiprocessing_context=multiprocessing_context))
            for it in (loader1_it, loader1_it, loader2_it, loader2_it, loader1_it, loader2_it):
                next(it)
            del loader1_it
            del loader2_it

    @unittest.skip(_NO_PROCESSES)
    def test_segfault(self):
        pass

    @unittest.skip(_NO_PROCESSES)
    def test_no_segfault(self):
        pass

    @unittest.skip(_NO_PROCESSES)
    def test_timeout(self):
        pass

    @unittest.skip(_NO_PROCESSES)
    def test_large_sampler_indices(self):
        pass

    def test_invalid_ctor_args_combinations(self):
        with self.assertRaisesRegex(ValueError, "num_workers option should be non-negative"):
            self._get_data_loader(self.dataset, num_workers=-1)
        with self.assertRaisesRegex(ValueError, "timeout option should be non-negative"):
            self._get_data_loader(self.dataset, timeout=-1)
        with self.assertRaisesRegex(ValueError,
                                    "batch_size=None option disables auto-batching and is mutually exclusive"):
            self._get_data_loader(self.dataset, batch_size=None, drop_last=True)
        valid_ctx = list(multiprocessing.get_all_start_methods())[-1]
        with self.assertRaisesRegex(ValueError, r"multi-process loading \(num_workers > 0\), but got"):
            self._get_data_loader(self.dataset, num_workers=0, multiprocessing_context=valid_ctx)
        with self.assertRaisesRegex(ValueError, "should specify a valid start method in"):
            self._get_data_loader(self.dataset, num_workers=1, multiprocessing_context="bad")
        with self.assertRaisesRegex(TypeError, "multiprocessing_context option should be a valid context "):
            self._get_data_loader(self.dataset, num_workers=1, multiprocessing_context=object())

        # map-style
        sampler = torch.utils.data.SequentialSampler(self.dataset)
        batch_sampler = torch.utils.data.BatchSampler(sampler, 3, False)
        for kw in (dict(batch_size=11, sampler=sampler, shuffle=True),
                   dict(batch_sampler=batch_sampler, sampler=sampler, shuffle=True),
                   dict(batch_sampler=batch_sampler, sampler=sampler, shuffle=3)):
            with self.assertRaisesRegex(ValueError, "sampler option is mutually exclusive with shuffle"):
                self._get_data_loader(self.dataset, **kw)
        for kw in (dict(batch_size=11), dict(shuffle=True), dict(drop_last=True), dict(drop_last=3)):
            with self.assertRaisesRegex(ValueError, "batch_sampler option is mutually exclusive with"):
                self._get_data_loader(self.dataset, batch_sampler=batch_sampler, **kw)

        # iterable-style
        dataset = CountingIterableDataset(20)
        bad = [("shuffle", True), ("shuffle", 3), ("sampler", torch.utils.data.SequentialSampler(dataset)),
               ("sampler", 3),
               ("batch_sampler", torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(dataset), 3, False)),
               ("batch_sampler", 3)]
        for name, value in bad:
            with self.assertRaisesRegex(ValueError, f"DataLoader with IterableDataset: expected unspecified {name}"):
                self._get_data_loader(dataset, **{name: value})

    def test_builtin_collection_conversion(self):
        for coll_ty in (list, tuple):
            for num_workers in (0, 1):
                for dataset in (CountingDataset(20), CountingIterableDataset(20)):
                    fetched = coll_ty(self._get_data_loader(dataset, batch_size=None, num_workers=num_workers))
                    self.assertEqual(fetched, coll_ty(range(20)))
                    fetched = coll_ty(self._get_data_loader(dataset, batch_size=2, num_workers=num_workers))
                    self.assertEqual(fetched, coll_ty(torch.tensor([i, i + 1]) for i in range(0, 20, 2)))

    def _check_workers_iterable(self, batch_size, drop_last, expected):
        # [auto-batching] 3 workers yielding 0, 4 and 20 items
        for prefetch_factor in [2, 3, 4]:
            dataset = WorkerSpecificIterableDataset([0, 4, 20])
            kw = {} if batch_size is None else dict(batch_size=batch_size, drop_last=drop_last)
            fetched = list(self._get_data_loader(dataset, num_workers=3, prefetch_factor=prefetch_factor, **kw))
            self.assertEqual(len(fetched), len(expected))
            self.assertEqual({tuple(t.tolist()) for t in fetched}, expected)

    def test_iterable_style_dataset(self):
        # [no auto-batching] single process loading
        dataset = CountingIterableDataset(20)
        dataloader = self._get_data_loader(dataset, batch_size=None)
        fetched = list(dataloader)
        self.assertEqual(len(fetched), 20)
        for i, d in enumerate(fetched):
            self.assertIsInstance(d, int)     # non-batched ints stay ints
            self.assertEqual(d, i)
        self.assertEqual(len(dataloader), len(dataset))

        # [no auto-batching] with workers
        sizes_for_all_workers = [0, 4, 20]
        expected = sorted(functools.reduce(operator.iadd, (list(range(s)) for s in sizes_for_all_workers), []))
        for prefetch_factor in [2, 3, 4]:
            dataset = WorkerSpecificIterableDataset(sizes_for_all_workers)
            dataloader = self._get_data_loader(dataset, num_workers=3, batch_size=None,
                                               prefetch_factor=prefetch_factor)
            fetched = sorted(iter(dataloader))
            self.assertEqual(len(fetched), len(expected))
            for a, b in zip(fetched, expected):
                self.assertIsInstance(a, int)
                self.assertEqual(a, b)
            self.assertEqual(len(dataloader), len(dataset))
            # NOTE [ IterableDataset and __len__ ]: fetching past len() warns once len() was read
            dataset = CountingIterableDataset(20)
            dataloader = self._get_data_loader(dataset, num_workers=3, prefetch_factor=prefetch_factor)
            it = iter(dataloader)
            for _ in range(40):
                self.assertNotWarn(lambda: next(it), "Should not warn before accessing len(dataloader)")
            self.assertEqual(len(dataloader), len(dataset))
            self.assertEqual(len(dataloader), 20)
            it = iter(dataloader)
            for _ in range(20):
                self.assertNotWarn(lambda: next(it), "Should not warn before exceeding length")
            for _ in range(3):
                with self.assertWarnsRegex(UserWarning,
                                           r"but [0-9]+ samples have been fetched\. For multiprocessing "
                                           r"data-loading, this", msg="Should always warn after exceeding length"):
                    next(it)

        # [auto-batching] single process loading
        fetched = list(self._get_data_loader(CountingIterableDataset(20), batch_size=7))
        self.assertEqual(len(fetched), 3)
        self.assertEqual([t.tolist() for t in fetched], [list(range(7)), list(range(7, 14)), list(range(14, 20))])
        # [auto-batching] workers: 0, 1 and 3 batches
        self._check_workers_iterable(7, False, {tuple(range(4)), tuple(range(7)), tuple(range(7, 14)),
                                                tuple(range(14, 20))})
        # [auto-batching & drop_last] single process loading
        fetched = list(self._get_data_loader(CountingIterableDataset(20), batch_size=7, drop_last=True))
        self.assertEqual([t.tolist() for t in fetched], [list(range(7)), list(range(7, 14))])
        # [auto-batching & drop_last] workers
        self._check_workers_iterable(7, True, {tuple(range(7)), tuple(range(7, 14))})

    def test_chain_iterable_style_dataset(self):
        dataset1, dataset2 = CountingIterableDataset(20), CountingIterableDataset(15)
        expected = list(range(20)) + list(range(15))
        for num_workers in [0, 1]:
            for chained_dataset in [dataset1 + dataset2, ChainDataset([dataset1, dataset2])]:
                fetched = list(self._get_data_loader(chained_dataset, num_workers=num_workers))
                self.assertEqual(len(fetched), len(expected))
                for e, d in zip(expected, fetched):
                    self.assertIsInstance(d, torch.Tensor)
                    self.assertEqual(e, d)
        with self.assertRaisesRegex(AssertionError, "ChainDataset only supports IterableDataset"):
            list(iter(dataset1 + self.dataset))
        with self.assertRaisesRegex(AssertionError, "ChainDataset only supports IterableDataset"):
            list(iter(ChainDataset([dataset1, self.dataset])))

    def test_multiprocessing_contexts(self):
        reference = [torch.arange(3), torch.arange(3, 6), torch.arange(6, 9), torch.arange(9, 11)]
        common = dict(num_workers=3, batch_size=3, pin_memory=(not TEST_CUDA))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # pin_memory without an accelerator
            for ctx in supported_multiprocessing_contexts:
                self.assertEqual(reference, list(self._get_data_loader(CountingDataset(11),
                                                                       multiprocessing_context=ctx, **common)))
                if ctx is not None:   # a context object
                    ctx = multiprocessing.get_context(ctx)
                    self.assertEqual(reference, list(self._get_data_loader(CountingDataset(11),
                                                                           multiprocessing_context=ctx, **common)))

    @unittest.skip("datapipes are out of tracegrad's scope")
    def test_multiprocessing_iterdatapipe(self):
        pass

    def test_worker_seed(self):
        num_workers = 6
        dataloader = self._get_data_loader(SeedDataset(num_workers), batch_size=1, num_workers=num_workers)
        seeds = {int(batch[0]) for batch in dataloader}   # (the file's set of tensors holds 6 by identity)
        self.assertEqual(len(seeds), num_workers)

    def test_worker_seed_reproducibility(self):
        dataset = SeedDataset(6)

        def get_dataloader():
            return DataLoader(dataset, batch_size=1, num_workers=6, generator=torch.Generator().manual_seed(42))

        self.assertEqual({int(batch) for batch in get_dataloader()}, {int(batch) for batch in get_dataloader()})

    def test_multi_epochs_reproducibility(self):
        num_workers, batch_size = 2, 10
        dataloader = self._get_data_loader(MultiEpochDataset(batch_size * num_workers), batch_size=batch_size,
                                           shuffle=False, num_workers=num_workers)
        for _ in range(3):
            for batch_idx, sample in enumerate(dataloader):
                self.assertEqual(sample.tolist(), [batch_idx % num_workers] * batch_size)

    def test_worker_init_fn(self):
        dataloader = self._get_data_loader(SeedDataset(4), batch_size=2, num_workers=2, worker_init_fn=init_fn)
        for batch in dataloader:
            self.assertEqual(12345, batch[0])
            self.assertEqual(12345, batch[1])

    def test_get_worker_info(self):
        self.assertIsNone(torch.utils.data.get_worker_info())
        dataset = WorkerInfoDataset(6)
        dataloader = DataLoader(dataset, batch_size=2, num_workers=2, worker_init_fn=_worker_info_init_fn)
        data = torch.cat(list(dataloader), 0)
        for d in data:
            self.assertEqual(d[1], d[0])       # the [worker_id, worker_id] the worker's copy holds
        self.assertEqual(sorted({int(d[0]) for d in data}), [0, 1])
        self.assertIsNone(torch.utils.data.get_worker_info())
        self.assertFalse(hasattr(dataset, "value"))   # the main process's dataset is untouched
        with self.assertRaises(AttributeError):
            dataset[0]

    def test_shuffle(self):
        self._test_shuffle(self._get_data_loader(self.dataset, shuffle=True))

    def test_shuffle_batch_none(self):
        self._test_shuffle(DataLoader(self.dataset, batch_size=None, shuffle=True))

    def test_shuffle_batch(self):
        self._test_shuffle(self._get_data_loader(self.dataset, batch_size=2, shuffle=True))

    def test_shuffle_reproducibility(self):
        for workers in (0, 2):
            def fn():
                return DataLoader(self.dataset, shuffle=True, num_workers=workers,
                                  generator=torch.Generator().manual_seed(42))
            self.assertEqual(list(fn()), list(fn()))

    def test_sequential_workers(self):
        self._test_sequential(self._get_data_loader(self.dataset, num_workers=4))

    def test_seqential_batch_workers(self):
        self._test_sequential(self._get_data_loader(self.dataset, batch_size=2, num_workers=4))

    def test_seqential_batch_workers_prefetch(self):
        self._test_sequential(DataLoader(self.dataset, batch_size=2, num_workers=4, prefetch_factor=3))

    def test_shuffle_workers(self):
        self._test_shuffle(self._get_data_loader(self.dataset, shuffle=True, num_workers=4))

    def test_shuffle_batch_workers(self):
        self._test_shuffle(self._get_data_loader(self.dataset, batch_size=2, shuffle=True, num_workers=4))

    def test_shuffle_batch_workers_prefetch(self):
        self._test_shuffle(DataLoader(self.dataset, batch_size=2, shuffle=True, num_workers=4, prefetch_factor=3))

    def test_random_sampler(self):
        RandomSampler = torch.utils.data.RandomSampler
        n_ds = len(self.dataset)

        def sample_stat(sampler):
            counts = Counter(sampler)
            return (sum(v > 1 for v in counts.values()), min(counts), max(counts), sum(counts.values()))

        # with replacement, one more draw than items: something repeats
        n = n_ds + 1
        repeated, lo, hi, total = sample_stat(RandomSampler(self.dataset, replacement=True, num_samples=n))
        self.assertTrue(repeated > 0 and lo >= 0 and hi < n_ds and total == n)
        # without replacement, no num_samples: a permutation
        self.assertEqual(sample_stat(RandomSampler(self.dataset)), (0, 0, n_ds - 1, n_ds))
        # without replacement, num_samples = 2 * len: two permutations
        self.assertEqual(sample_stat(RandomSampler(self.dataset, num_samples=2 * n_ds)), (n_ds, 0, n_ds - 1, 2 * n_ds))
        repeated, lo, hi, total = sample_stat(RandomSampler(self.dataset, num_samples=n_ds - 1))
        self.assertTrue(repeated == 0 and lo >= 0 and hi < n_ds and total == n_ds - 1)
        self.assertEqual(sample_stat(RandomSampler(self.dataset, num_samples=n_ds + 1)), (1, 0, n_ds - 1, n_ds + 1))
        with self.assertRaisesRegex(TypeError, "replacement should be a boolean value, but got replacement=0"):
            RandomSampler(self.dataset, replacement=0)

    def _check_random_sampler_len(self, replacement):
        num_samples = len(self.dataset) + 5
        sampler = torch.utils.data.RandomSampler(self.dataset, replacement=replacement, num_samples=num_samples)
        self.assertEqual(num_samples, len(sampler))
        self.assertEqual(num_samples, sum(1 for _ in sampler))
        self.assertEqual(num_samples, len(self._get_data_loader(self.dataset, batch_size=1, sampler=sampler)))
        self.assertEqual(int(math.ceil(float(num_samples) / 6)),
                         len(self._get_data_loader(self.dataset, batch_size=6, sampler=sampler)))

    def test_random_sampler_len_with_replacement(self):
        self._check_random_sampler_len(True)

    def test_random_sampler_len_without_replacement(self):
        self._check_random_sampler_len(False)

    def test_distributed_sampler_invalid_rank(self):
        DistributedSampler = torch.utils.data.distributed.DistributedSampler
        dataset = torch.IntTensor(range(10))
        for rank in (3, -1):
            with self.assertRaisesRegex(ValueError, "Invalid rank"):
                DistributedSampler(dataset, 3, rank)

    def test_duplicating_data_with_drop_last(self):
        DistributedSampler = torch.utils.data.distributed.DistributedSampler
        num_processes, num_batches = 4, 9
        data_set = torch.IntTensor(range(num_batches))
        scanned_data = torch.IntTensor([])
        for i in range(num_processes):
            s = DistributedSampler(data_set, num_processes, i)
            for data in self._get_data_loader(data_set, batch_size=int(num_batches / num_processes),
                                              drop_last=True, sampler=s):
                scanned_data = torch.cat((scanned_data, data), 0)
        self.assertEqual(scanned_data.size(), scanned_data.unique().size())

    def test_sampler_reproducibility(self):
        D = torch.utils.data
        weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]

        def gen():
            return torch.Generator().manual_seed(42)

        for fn in (lambda: D.RandomSampler(self.dataset, num_samples=5, replacement=True, generator=gen()),
                   lambda: D.RandomSampler(self.dataset, replacement=False, generator=gen()),
                   lambda: D.WeightedRandomSampler(weights, num_samples=5, replacement=True, generator=gen()),
                   lambda: D.WeightedRandomSampler(weights, num_samples=5, replacement=False, generator=gen()),
                   lambda: D.SubsetRandomSampler(range(10), generator=gen())):
            self.assertEqual(list(fn()), list(fn()))

        for sampler in (D.RandomSampler(self.dataset, num_samples=5, replacement=True),
                        D.RandomSampler(self.dataset, replacement=False),
                        D.WeightedRandomSampler(weights, num_samples=5, replacement=True),
                        D.WeightedRandomSampler(weights, num_samples=5, replacement=False),
                        D.SubsetRandomSampler(range(10))):
            torch.manual_seed(0)
            l1 = list(sampler) + list(sampler)
            torch.manual_seed(0)
            l2 = list(sampler) + list(sampler)
            self.assertEqual(l1, l2)
            # two interleaved passes after one seeding see the same stream each
            its, ls = (iter(sampler), iter(sampler)), ([], [])
            for idx in range(len(sampler)):
                for i in range(2):
                    if idx == 0:
                        torch.manual_seed(0)
                    ls[i].append(next(its[i]))
            self.assertEqual(ls[0], ls[1])

    def _test_sampler(self, **kwargs):
        dl = self._get_data_loader(self.dataset, sampler=range(2, 12), batch_size=2, **kwargs)
        self.assertEqual(len(dl), 5)
        for i, (input, _target) in enumerate(dl):
            self.assertEqual(len(input), 2)
            self.assertEqual(input, self.data[i * 2 + 2:i * 2 + 4])

    def test_sampler(self):
        self._test_sampler()
        self._test_sampler(num_workers=4)
        self._test_batch_sampler(num_workers=4, multiprocessing_context=_SPAWN)

    def _test_batch_sampler(self, **kwargs):
        # [(0, 1), (2, 3, 4), (5, 6), (7, 8, 9), ...]
        batches = []
        for i in range(0, 20, 5):
            batches.append(tuple(range(i, i + 2)))
            batches.append(tuple(range(i + 2, i + 5)))
        dl = self._get_data_loader(self.dataset, batch_sampler=batches, **kwargs)
        self.assertEqual(len(dl), 8)
        for i, (input, _target) in enumerate(dl):
            offset = i * 5 // 2
            size = 2 if i % 2 == 0 else 3
            self.assertEqual(len(input), size)
            self.assertEqual(input, self.data[offset:offset + size])

    def test_batch_sampler(self):
        self._test_batch_sampler()
        self._test_batch_sampler(num_workers=4)
        self._test_batch_sampler(num_workers=4, multiprocessing_context=_SPAWN)

    def test_numpy(self):
        class NumpyDataset(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return np.ones((2, 3, 4)) * i

            def __len__(self):
                return 24

        batch = next(iter(self._get_data_loader(NumpyDataset(), batch_size=12)))
        self.assertIsInstance(batch, torch.DoubleTensor)
        self.assertEqual(batch.size(), torch.Size([12, 2, 3, 4]))

    @unittest.skip("torch's private numpy seeding helper for worker processes (_utils.worker._generate_state)")
    def test_numpy_gen_state(self):
        pass

    def test_error(self):
        self._test_error(self._get_data_loader(ErrorDataset(100), batch_size=2, shuffle=True))

    def test_error_workers(self):
        self._test_error(self._get_data_loader(ErrorDataset(41), batch_size=2, shuffle=True, num_workers=4))

    @unittest.skip(_NO_PROCESSES)
    def test_partial_workers(self):
        pass

    @unittest.skip(_NO_PROCESSES)
    def test_proper_exit(self):
        pass

    def test_len(self):
        def check_len(dl, expected):
            self.assertEqual(len(dl), expected)
            self.assertEqual(sum(1 for _ in dl), expected)

        check_len(self.dataset, 20)
        check_len(self._get_data_loader(self.dataset, batch_size=2), 10)
        check_len(self._get_data_loader(self.dataset, batch_size=3), 7)

    def test_iterabledataset_len(self):
        class TenItems(torch.utils.data.IterableDataset):
            def __len__(self):
                return 10

            def __iter__(self):
                return iter(range(10))

        for bs, expected, expected_drop in ((1, 10, 10), (2, 5, 5), (3, 4, 3)):
            self.assertEqual(len(DataLoader(TenItems(), batch_size=bs)), expected)
            self.assertEqual(len(DataLoader(TenItems(), batch_size=bs, drop_last=True)), expected_drop)

    def test_numpy_scalars(self):
        class ScalarDataset(torch.utils.data.Dataset):
            def __init__(self, dtype):
                self.dtype = dtype

            def __getitem__(self, i):
                return self.dtype()

            def __len__(self):
                return 4

        dtypes = {np.float64: torch.DoubleTensor, np.float32: torch.FloatTensor, np.float16: torch.HalfTensor,
                  np.int64: torch.LongTensor, np.int32: torch.IntTensor, np.int16: torch.ShortTensor,
                  np.int8: torch.CharTensor, np.uint8: torch.ByteTensor}
        for dt, tt in dtypes.items():
            batch = next(iter(self._get_data_loader(ScalarDataset(dt), batch_size=2)))
            self.assertIsInstance(batch, tt)

    def test_default_convert_mapping_keep_type(self):
        data = CustomDict({"a": 1, "b": 2})
        self.assertEqual(_collate.default_convert(data), data)

    def test_default_convert_sequence_keep_type(self):
        data = CustomList([1, 2, 3])
        self.assertEqual(_collate.default_convert(data), data)

    def test_default_convert_sequence_dont_keep_type(self):
        self.assertEqual(_collate.default_convert(range(2)), [0, 1])

    def test_default_collate_dtype(self):
        arr = [1, 2, -1]
        collated = _collate.default_collate(arr)
        self.assertEqual(collated, torch.tensor(arr))
        self.assertEqual(collated.dtype, torch.int64)
        arr = [1.1, 2.3, -0.9]
        self.assertEqual(_collate.default_collate(arr), torch.tensor(arr, dtype=torch.float64))
        arr = [True, False]
        collated = _collate.default_collate(arr)
        self.assertEqual(collated, torch.tensor(arr))
        self.assertEqual(collated.dtype, torch.bool)
        arr = ["a", "b", "c"]     # strings pass through
        self.assertEqual(arr, _collate.default_collate(arr))

    def test_default_collate_mapping_keep_type(self):
        collated = _collate.default_collate([CustomDict({"a": 1, "b": 2}), CustomDict({"a": 3, "b": 4})])
        self.assertEqual(collated, CustomDict({"a": torch.tensor([1, 3]), "b": torch.tensor([2, 4])}))

    def test_default_collate_sequence_keep_type(self):
        collated = _collate.default_collate([CustomList([1, 2, 3]), CustomList([4, 5, 6])])
        self.assertEqual(collated, CustomList([torch.tensor([1, 4]), torch.tensor([2, 5]), torch.tensor([3, 6])]))

    def test_default_collate_sequence_dont_keep_type(self):
        collated = _collate.default_collate([range(2), range(2)])
        self.assertEqual(collated, [torch.tensor([0, 0]), torch.tensor([1, 1])])

    def test_default_collate_bad_numpy_types(self):
        arr = np.array(["a", "b", "c"])
        self.assertEqual(arr, _collate.default_collate(arr))
        for arr in (np.array([[["a", "b", "c"]]]), np.array([object(), object(), object()]),
                    np.array([[[object(), object(), object()]]])):
            self.assertRaises(TypeError, lambda: _collate.default_collate(arr))

    def test_default_collate_numpy_memmap(self):
        with tempfile.TemporaryFile() as f:
            arr = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
            arr_memmap = np.memmap(f, dtype=arr.dtype, mode="w+", shape=arr.shape)
            arr_memmap[:] = arr[:]
            arr_new = np.memmap(f, dtype=arr.dtype, mode="r", shape=arr.shape)
            tensor = _collate.default_collate(list(arr_new))
        self.assertTrue((tensor == tensor.new_tensor([[0, 1], [2, 3], [4, 5], [6, 7]])).all().item())

    def test_default_collate_bad_sequence_type(self):
        batch = [["X"], ["X", "X"]]
        self.assertRaises(RuntimeError, lambda: _collate.default_collate(batch))
        self.assertRaises(RuntimeError, lambda: _collate.default_collate(batch[::-1]))

    def test_default_collate_shared_tensor(self):
        t_in, n_in = torch.zeros(1), np.zeros(1)
        self.assertEqual(t_in.is_shared(), False)
        self.assertEqual(_collate.default_collate([t_in]).is_shared(), False)
        self.assertEqual(_collate.default_collate([n_in]).is_shared(), False)

    def test_excessive_thread_creation_warning(self):
        with self.assertWarnsRegex(UserWarning,
                                   r"excessive worker creation might get DataLoader running slow or even freeze"):
            DataLoader(self.dataset, batch_size=2, num_workers=1000)


class DummyDataset(torch.utils.data.Dataset):
    """Asserts ``start == 0``: persistent workers keep the copy they got at the first pass."""

    def __init__(self):
        self.data = list(range(10))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        assert self.start == 0
        return self.data[idx]


class TestDataLoaderPersistentWorkersTI42(TestDataLoaderTI42):
    persistent = True

    @unittest.skip(_NO_PROCESSES)
    def test_fd_limit_exceeded(self):
        pass

    def test_dataset_not_reset(self):
        dataset = DummyDataset()
        dataloader = self._get_data_loader(dataset, num_workers=2)
        dataset.start = 0
        for i in range(10):
            for _ in dataloader:
                pass
            dataset.start = i   # the workers' copies keep start == 0

    def test_early_exit(self):
        class RandomDataset(IterableDataset):
            def __init__(self, n, size):
                self.n, self.size = n, size

            def __iter__(self):
                return self

            def __next__(self):
                if self.n <= 0:
                    raise StopIteration
                self.n -= 1
                return torch.randn(self.size)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # pin_memory without an accelerator
            dl = DataLoader(RandomDataset(64, (4, 4)), batch_size=16, num_workers=2, pin_memory=True,
                            persistent_workers=True, multiprocessing_context="fork")
            for batch in dl:
                self.assertEqual(tuple(batch.shape), (16, 4, 4))
                break


# ---- TestStringDataLoader / TestDictDataLoader / TestNamedTupleDataLoader / TestCustomPinFn -----
class StringDataset(Dataset):
    def __init__(self):
        self.s = "12345"

    def __len__(self):
        return len(self.s)

    def __getitem__(self, ndx):
        return (self.s[ndx], ndx)


def _pinned_loader(*args, **kwargs):
    # pin_memory=True on the CPU warns that there is no accelerator to pin for (torch's words)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(DataLoader(*args, pin_memory=True, **kwargs))


class TestStringDataLoaderTI42(TestCase):
    def setUp(self):
        super().setUp()
        self.dataset = StringDataset()

    def test_shuffle_pin_memory(self):
        batches = _pinned_loader(self.dataset, batch_size=2, shuffle=True, num_workers=4)
        for s, n in batches:
            self.assertIsInstance(s[0], str)
            self.assertEqual(n.is_pinned(), TEST_CUDA)
        self.assertEqual(sorted(c for s, _ in batches for c in s), list("12345"))


class DictDataset(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, ndx):
        return {"a_tensor": torch.empty(4, 2).fill_(ndx), "another_dict": {"a_number": ndx}}


class TestDictDataLoaderTI42(TestCase):
    def setUp(self):
        super().setUp()
        self.dataset = DictDataset()

    def test_sequential_batch(self):
        for persistent_workers in (False, True):
            loader = DataLoader(self.dataset, batch_size=2, shuffle=False, persistent_workers=persistent_workers,
                                num_workers=1 if persistent_workers else 0)
            batch_size = loader.batch_size
            for i, sample in enumerate(loader):
                idx = i * batch_size
                self.assertEqual(set(sample.keys()), {"a_tensor", "another_dict"})
                self.assertEqual(set(sample["another_dict"].keys()), {"a_number"})
                t = sample["a_tensor"]
                self.assertEqual(t.size(), torch.Size([batch_size, 4, 2]))
                self.assertTrue((t[0] == idx).all())
                self.assertTrue((t[1] == idx + 1).all())
                n = sample["another_dict"]["a_number"]
                self.assertEqual(n.size(), torch.Size([batch_size]))
                self.assertEqual(n[0], idx)
                self.assertEqual(n[1], idx + 1)

    def test_pin_memory(self):
        for sample in _pinned_loader(self.dataset, batch_size=2):
            self.assertEqual(sample["a_tensor"].is_pinned(), TEST_CUDA)
            self.assertEqual(sample["another_dict"]["a_number"].is_pinned(), TEST_CUDA)


class NamedTupleDataset(Dataset):
    Batch = namedtuple("Batch", ["data", "label", "random_tensor"])
    Data = namedtuple("Data", ["positive", "negative"])

    def __len__(self):
        return 4

    def __getitem__(self, ndx):
        return self.Batch(data=self.Data(positive=ndx, negative=-ndx), label=str(ndx), random_tensor=torch.randn(3))


class TestNamedTupleDataLoaderTI42(TestCase):
    def setUp(self):
        super().setUp()
        self.dataset = NamedTupleDataset()

    def test_dataloader_with_namedtuple(self):
        # auto-collation
        for batch in _pinned_loader(self.dataset, batch_size=2):
            self.assertIsInstance(batch, NamedTupleDataset.Batch)
            self.assertEqual(batch.random_tensor.is_pinned(), TEST_CUDA)
            self.assertIsInstance(batch.data, NamedTupleDataset.Data)
            self.assertIsInstance(batch.data.positive, torch.Tensor)
            self.assertEqual(batch.data.positive.is_pinned(), TEST_CUDA)
        # no auto-collation
        for batch in _pinned_loader(self.dataset, batch_size=None):
            self.assertIsInstance(batch, NamedTupleDataset.Batch)
            self.assertEqual(batch.random_tensor.is_pinned(), TEST_CUDA)
            self.assertIsInstance(batch.data, NamedTupleDataset.Data)
            self.assertNotIsInstance(batch.data.positive, torch.Tensor)


class SimpleCustomBatch:
    """A collated batch object with its own pin_memory (the file's custom pin function)."""

    def __init__(self, data):
        transposed = list(zip(*data))
        self.inp = torch.stack(transposed[0], 0)
        self.tgt = torch.stack(transposed[1], 0)

    def pin_memory(self):
        self.inp = self.inp.pin_memory()
        self.tgt = self.tgt.pin_memory()
        return self

    def is_pinned(self):
        return self.inp.is_pinned() and self.tgt.is_pinned()


def collate_wrapper(batch):
    return SimpleCustomBatch(batch)


def collate_into_packed_sequence(batch):
    data = torch.stack([sample[0] for sample in batch], 1)
    t, b = data.size()
    lengths = torch.randint(1, t, size=(b,), dtype=torch.int64)
    return torch.nn.utils.rnn.pack_padded_sequence(data, lengths, enforce_sorted=False)


def collate_into_packed_sequence_batch_first(batch):
    data = torch.stack([sample[0] for sample in batch], 0)
    b, t = data.size()
    lengths = torch.randint(1, t, size=(b,), dtype=torch.int64)
    return torch.nn.utils.rnn.pack_padded_sequence(data, lengths, batch_first=True, enforce_sorted=False)


class TestCustomPinFnTI42(TestCase):
    def setUp(self):
        super().setUp()
        inps = torch.arange(10 * 5, dtype=torch.float32).view(10, 5)
        tgts = torch.arange(10 * 5, dtype=torch.float32).view(10, 5)
        self.dataset = TensorDataset(inps, tgts)

    def _check(self, **kwargs):
        test_cases = [(collate_wrapper, SimpleCustomBatch),
                      (collate_into_packed_sequence, torch.nn.utils.rnn.PackedSequence),
                      (collate_into_packed_sequence_batch_first, torch.nn.utils.rnn.PackedSequence)]
        for collate_fn, elem_cls in test_cases:
            samples = _pinned_loader(self.dataset, batch_size=2, collate_fn=collate_fn, **kwargs)
            self.assertEqual(len(samples), 5)
            for sample in samples:
                self.assertIsInstance(sample, elem_cls)
                self.assertEqual(sample.is_pinned(), TEST_CUDA)

    def test_custom_batch_pin(self):
        self._check()

    def test_custom_batch_pin_worker(self):
        self._check(num_workers=1)


# ---- probes of the fixes ------------------------------------------------------------------------
class _DrawDataset(Dataset):
    """Item i: (worker seed, torch.initial_seed(), random.random(), np.random.rand(), torch.rand(()))."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return (info.seed, torch.initial_seed(), random.random(), float(np.random.rand()),
                float(torch.rand(())))


class _InfoDataset(Dataset):
    """Item i: the loading worker's WorkerInfo."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.utils.data.get_worker_info()


class TestFixesTI42(TestCase):
    def test_iterable_len_warning_names_workers(self):
        for workers, hint in ((0, False), (2, True)):
            class ReportsOne(CountingIterableDataset):
                def __len__(self):
                    return 1

            dl = DataLoader(ReportsOne(3), num_workers=workers)
            self.assertEqual(len(dl), 1)
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                list(dl)
            msgs = [str(w.message) for w in ws if "samples have been fetched" in str(w.message)]
            self.assertEqual(len(msgs), 3 * max(workers, 1) - 1)   # every sample past the first
            self.assertEqual(all("For multiprocessing data-loading, this could be caused by not properly "
                                 "configuring the IterableDataset replica at each worker" in m for m in msgs), hint)

    def test_workers_have_their_own_seeded_streams(self):
        torch.manual_seed(3)
        random.seed(4)
        np.random.seed(5)
        expected_main = (torch.rand(2), random.random(), np.random.rand())
        torch.manual_seed(3)
        random.seed(4)
        np.random.seed(5)
        # (the base seed comes from the loader's generator: the global one is not drawn from)
        batches = list(DataLoader(_DrawDataset(), batch_size=None, num_workers=2, worker_init_fn=lambda w: None,
                                  generator=torch.Generator().manual_seed(0)))
        # the main process's streams are where they were
        self.assertEqual((torch.rand(2), random.random(), np.random.rand()), expected_main)
        self.assertEqual(torch.initial_seed(), 3)
        for k, (seed, initial, r, n, t) in enumerate(batches):
            self.assertEqual(initial, seed)     # torch.manual_seed(seed) in the worker
            worker_id = k % 2
            if k < 2:                           # each worker's first draws come from its fresh seeds
                self.assertEqual(r, random.Random(seed).random())
                np_state = np.random.SeedSequence([worker_id, seed - worker_id]).generate_state(4)
                self.assertEqual(n, float(np.random.RandomState(np_state).rand()))
                self.assertEqual(t, float(torch.rand((), generator=torch.Generator().manual_seed(seed))))
        self.assertEqual(batches[0][0] + 1, batches[1][0])
        self.assertNotEqual(batches[0][2], batches[2][2])   # a worker's stream goes on between batches

    def test_worker_init_fn_seeding_stays_in_the_worker(self):
        torch.manual_seed(7)
        expected = torch.rand(3)
        torch.manual_seed(7)
        batches = list(DataLoader(SeedDataset(4), batch_size=2, num_workers=2, worker_init_fn=init_fn,
                                  generator=torch.Generator()))
        self.assertEqual([b.tolist() for b in batches], [[12345, 12345]] * 2)
        self.assertEqual(torch.initial_seed(), 7)
        self.assertEqual(torch.rand(3), expected)

    def test_persistent_workers_keep_their_streams(self):
        for persistent in (False, True):
            dl = DataLoader(_DrawDataset(), batch_size=None, num_workers=2, persistent_workers=persistent)
            first, second = list(dl), list(dl)
            # persistent workers keep their seeds and go on drawing; fresh ones get new seeds
            self.assertEqual([b[1] for b in first] == [b[1] for b in second], persistent)
            self.assertNotEqual([b[4] for b in first], [b[4] for b in second])

    def test_weighted_sampler_bad_weights_message(self):
        # WeightedRandomSampler draws num_samples > 1 with replacement: torch's kernel for that
        # checks entry by entry, in its own words
        cases = (([1.0, -2.0], "encountering probability entry < 0"),
                 ([1.0, float("nan")], "encountering probability entry < 0"),
                 ([1.0, float("inf")], r"encountering probability entry = infinity or NaN"),
                 ([0.0, 0.0], r"sum of probabilities <= 0"))
        for weights, msg in cases:
            with self.assertRaisesRegex(RuntimeError, "invalid multinomial distribution \\(" + msg):
                list(torch.utils.data.WeightedRandomSampler(weights, 3))
            with self.assertRaisesRegex(RuntimeError, "invalid multinomial distribution \\(" + msg):
                torch.multinomial(torch.tensor([[1.0, 1.0], weights]), 2, True)
        # one draw, or draws without replacement: the other kernel's words
        for n, replacement in ((1, True), (2, False)):
            with self.assertRaisesRegex(RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"):
                torch.multinomial(torch.tensor([1.0, -2.0]), n, replacement)

    @(unittest.expectedFailure if not _ORACLE else (lambda f: f))
    def test_worker_dataset_copies_are_deep(self):
        # each worker process holds its own copy of the dataset: a cache the dataset fills while
        # loading stays in that worker (tracegrad's emulated workers share the container)
        class Cached(Dataset):
            def __init__(self):
                self.cache = {}

            def __len__(self):
                return 4

            def __getitem__(self, i):
                self.cache[i] = i
                return len(self.cache)

        ds = Cached()
        self.assertEqual([b.tolist() for b in DataLoader(ds, batch_size=1, num_workers=2)], [[1], [1], [2], [2]])
        self.assertEqual(ds.cache, {})

    def test_worker_info_is_frozen(self):
        info = next(iter(DataLoader(_InfoDataset(), batch_size=None, num_workers=1)))
        with self.assertRaisesRegex(dataclasses.FrozenInstanceError, "cannot assign to field 'seed'"):
            info.seed = 1
        self.assertIn("rng=None, worker_method='multiprocessing'", repr(info))
        self.assertEqual((info.id, info.num_workers), (0, 1))


test_oracle_torch_passes = oracle_test("TI42_ORACLE", __file__)
