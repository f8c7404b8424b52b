"""Ported from PyTorch's test/test_dataloader.py (datasets, random_split, samplers, DataLoader
options and collation; the datapipe and worker-process tests are left out) and test/test_utils.py
(TestDataLoaderUtils). Each test names its
original. Bodies run under torch and tracegrad (the ``T`` fixture), so torch 2.13 checks every
expectation; tests/utils/test_data.py holds the side-by-side batch comparisons."""
import collections
import math
import multiprocessing
import tempfile
import typing
import warnings
from collections import Counter

import numpy as np
import pytest


def _D(T):
    return T.utils.data


def _vals(x):
    return x.tolist()


class _Counting:
    """Map-style dataset of the ints ``0..n-1`` (CountingDataset)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


def _counting_iterable(D, n, reported=None):
    """IterableDataset of ``0..n-1`` whose ``len()`` is ``reported`` (default ``n``)
    (CountingIterableDataset)."""

    class CountingIterable(D.IterableDataset):
        def __iter__(self):
            return iter(range(n))

        def __len__(self):
            return n if reported is None else reported

    return CountingIterable()


def _labelled(T, n=20):
    """TensorDataset (data, label) where row i of data is filled with i and the label is i % 7."""
    data = T.arange(n, dtype=T.float32).reshape(n, 1, 1).expand(n, 2, 3).contiguous()
    return data, T.arange(n) % 7, _D(T).TensorDataset(data, T.arange(n) % 7)


def _rows(batch):
    return [int(r[0][0]) for r in batch.tolist()]


# ---- TensorDataset / StackDataset ------------------------------------------------------------
def test_tensor_dataset_len_and_items(T):
    # TestTensorDataset.test_len / test_getitem / test_getitem_1d / test_single_tensor /
    # test_many_tensors
    D = _D(T)
    a, b, c = T.randn(5, 4, 3), T.randn(5), T.arange(5)
    for tensors in [(a,), (a, b), (a, b, c)]:
        ds = D.TensorDataset(*tensors)
        assert len(ds) == 5
        for i in range(5):
            item = ds[i]
            assert isinstance(item, tuple) and len(item) == len(tensors)
            for t, got in zip(tensors, item):
                assert _vals(got) == _vals(t[i])


def test_tensor_dataset_size_mismatch(T):
    # TensorDataset's "Size mismatch between tensors" assertion
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        _D(T).TensorDataset(T.zeros(3, 2), T.zeros(4))


def test_stack_dataset_errors(T):
    # TestStackDataset.test_empty / test_mixed / test_size_mismatch
    D = _D(T)
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        D.StackDataset()
    with pytest.raises(ValueError, match="Supported either"):
        D.StackDataset(D.TensorDataset(T.randn(15, 10)), a=D.TensorDataset(T.randn(10, 15)))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(D.TensorDataset(T.randn(15, 10)), D.TensorDataset(T.randn(10, 15)))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(a=D.TensorDataset(T.randn(15, 10)), b=D.TensorDataset(T.randn(10, 15)))


def test_stack_dataset_len_and_getitem(T):
    # TestStackDataset.test_len / test_single / test_getitem
    D = _D(T)
    t, l = D.TensorDataset(T.randn(15, 10)), D.TensorDataset(T.randn(15, 5, 4))
    assert len(D.StackDataset(t)) == len(D.StackDataset(t, l)) == len(D.StackDataset(a=t, b=l)) == 15
    tup, named = D.StackDataset(t, l), D.StackDataset(a=t, b=l)
    for i in (0, 7, 14):
        assert _vals(tup[i][0][0]) == _vals(t[i][0]) and _vals(tup[i][1][0]) == _vals(l[i][0])
        assert set(named[i]) == {"a", "b"} and _vals(named[i]["b"][0]) == _vals(l[i][0])
    assert _vals(D.StackDataset(a=t)[3]["a"][0]) == _vals(t[3][0])


def _getitems_dataset(D, T, short=False):
    class GetItems(D.Dataset):
        def __init__(self):
            self.data = T.arange(4.0)
            self.calls = []

        def __getitem__(self, i):
            return self.data[i]

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            out = self.data[idx]
            return out[:-1] if short else out

        def __len__(self):
            return 4

    return GetItems()


def test_stack_dataset_getitems(T):
    # TestStackDataset.test_getitems: members with __getitems__ are asked for the whole batch
    D = _D(T)
    t, l = _getitems_dataset(D, T), [10, 20, 30, 40]
    batch = D.StackDataset(t, l).__getitems__([0, 2, 3])
    assert t.calls == [[0, 2, 3]]
    assert [(float(x), y) for x, y in batch] == [(0.0, 10), (2.0, 30), (3.0, 40)]
    batch = D.StackDataset(t=t, l=l).__getitems__([1, 0])
    assert [(float(s["t"]), s["l"]) for s in batch] == [(1.0, 20), (0.0, 10)]
    # the DataLoader goes through __getitems__ too
    loaded = list(D.DataLoader(D.StackDataset(t, l), batch_size=3))
    assert t.calls[-2:] == [[0, 1, 2], [3]]
    assert [[_vals(x), _vals(y)] for x, y in loaded] == [[[0.0, 1.0, 2.0], [10, 20, 30]], [[3.0], [40]]]


def test_stack_dataset_getitems_errors(T):
    # TestStackDataset.test_getitems_raises_index_error / test_getitems_value_error
    D = _D(T)
    with pytest.raises(IndexError):
        D.StackDataset(_getitems_dataset(D, T), [1, 2, 3, 4]).__getitems__([0, 4])
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 4, got 3"):
        D.StackDataset(_getitems_dataset(D, T, short=True), [1, 2, 3, 4]).__getitems__([0, 1, 2, 3])


# ---- ConcatDataset / ChainDataset / Subset -------------------------------------------------
def test_concat_dataset_indexing(T):
    # TestConcatDataset.test_concat_two_singletons / _non_singletons / _non_singletons_with_empty,
    # plus ConcatDataset's negative indexing
    D = _D(T)
    assert [D.ConcatDataset([[0], [1]])[i] for i in range(2)] == [0, 1]
    for parts in ([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], [[0, 1, 2, 3, 4], [], [5, 6, 7, 8, 9]], [[], [0, 1], [], [2, 3, 4, 5, 6, 7, 8, 9]]):
        cat = D.ConcatDataset(parts)
        assert len(cat) == 10 and cat.cumulative_sizes[-1] == 10
        assert [cat[i] for i in range(10)] == list(range(10))
        assert [cat[-i] for i in range(1, 11)] == list(range(9, -1, -1))
    cat = D.ConcatDataset(iter([[0, 1], [2]]))  # any iterable of datasets
    assert cat.cumulative_sizes == [2, 3] and cat[2] == 2


def test_concat_dataset_index_errors(T):
    # TestConcatDataset.test_concat_raises_index_error; a negative index beyond the length is a
    # ValueError
    D = _D(T)
    cat = D.ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    with pytest.raises(IndexError):
        cat[11]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-11]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        D.ConcatDataset([])


def test_concat_dataset_add(T):
    # TestConcatDataset.test_add_dataset
    D = _D(T)
    ds = [D.TensorDataset(T.full((7, 3), float(k)), T.arange(7) + 10 * k) for k in range(3)]
    result = ds[0] + ds[1] + ds[2]
    assert isinstance(result, D.ConcatDataset) and len(result) == 21
    assert [int(result[i][1]) for i in (0, 7, 14, 20)] == [0, 10, 20, 26]
    assert _vals(result[8][0]) == [1.0, 1.0, 1.0]


def test_concat_dataset_rejects_iterable_dataset(T):
    # TestConcatDataset.test_iterable_dataset_err
    D = _D(T)
    d1 = D.TensorDataset(T.rand(7, 3), T.rand(7))
    it1, it2 = _counting_iterable(D, 5), _counting_iterable(D, 10)
    for members in ([d1, it2, it1], [it2], [it1, d1]):
        with pytest.raises(AssertionError, match="does not support IterableDataset"):
            D.ConcatDataset(members)


def test_chain_dataset(T):
    # TestDataLoader.test_chain_iterable_style_dataset
    D = _D(T)
    d1, d2 = _counting_iterable(D, 20), _counting_iterable(D, 15)
    expected = list(range(20)) + list(range(15))
    for chained in (d1 + d2, D.ChainDataset([d1, d2])):
        assert isinstance(chained, D.ChainDataset) and len(chained) == 35
        fetched = list(D.DataLoader(chained))
        assert all(isinstance(x, T.Tensor) and tuple(x.shape) == (1,) for x in fetched)
        assert [int(x) for x in fetched] == expected
    _, _, mapped = _labelled(T)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(iter(d1 + mapped))
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(iter(D.ChainDataset([d1, mapped])))


def test_subset_slicing(T):
    # TestDatasetRandomSplit.test_slicing_of_subset_of_dataset / test_slicing_of_subset_of_subset
    D = _D(T)
    ds = D.TensorDataset(T.tensor([1, 2, 3, 4, 5]))
    sub = D.Subset(ds, [0, 1, 2, 3, 4])
    subsub = D.Subset(sub, [0, 1, 2, 3, 4])
    for s in (sub, subsub):
        for sl in (slice(None), slice(1, 2), slice(0, -1, 2)):
            assert _vals(s[sl][0]) == _vals(ds[sl][0])
    s1, _ = D.random_split(ds, [4, 1])
    s11, _ = D.random_split(s1, [3, 1])
    idx = [s1.indices[i] for i in s11.indices]
    assert _vals(s11[:][0]) == _vals(ds[idx][0])
    assert _vals(s11[0:2][0]) == _vals(ds[idx[0:2]][0])
    assert len(D.Subset([7, 8, 9], [2, 0])) == 2 and D.Subset([7, 8, 9], [2, 0])[0] == 9


# ---- random_split ----------------------------------------------------------------------------
def test_random_split_errors(T):
    # TestDatasetRandomSplit.test_lengths_must_equal_dataset_size / test_incomplete_fractional_splits
    D = _D(T)
    with pytest.raises(ValueError, match="Sum of input lengths"):
        D.random_split([1, 2, 3, 4], [1, 2])
    with pytest.raises(ValueError):
        D.random_split([1, 2, 3, 4], [0.1])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        D.random_split([1, 2, 3, 4], [1.1, -0.1])
    with pytest.raises(ValueError):
        D.random_split([1, 2, 3, 4], [1.1])


def test_random_split_sizes(T):
    # TestDatasetRandomSplit.test_splits_have_correct_size: the remainder of fractional splits
    # goes round-robin from the first split
    D = _D(T)
    g = lambda: T.Generator().manual_seed(1)
    assert [len(s) for s in D.random_split([1, 2, 3, 4, 5, 6], [2, 4])] == [2, 4]
    assert [len(s) for s in D.random_split([1, 2, 3, 4, 5, 6], [0.5, 0.5])] == [3, 3]
    assert [len(s) for s in D.random_split(range(3), [0.5, 0.5], generator=g())] == [2, 1]
    assert [len(s) for s in D.random_split(range(106), [0.1, 0.2, 0.3, 0.4], generator=g())] == [11, 22, 31, 42]
    with pytest.warns(UserWarning, match="Length of split at index 2 is 0"):
        assert [len(s) for s in D.random_split(range(3), [0.5, 0.4, 0.1])] == [2, 1, 0]


def test_random_split_partitions(T):
    # TestDatasetRandomSplit.test_splits_are_mutually_exclusive
    D = _D(T)
    for data, lengths in (([5, 2, 3, 4, 1, 6], [2, 4]), ([5, 2, 3, 4, 1, 6], [0.33, 0.67]),
                          ([1, 2, 3, 4], [0.25, 0.75])):
        splits = D.random_split(data, lengths)
        assert all(isinstance(s, D.Subset) for s in splits)
        assert sorted(x for s in splits for x in s) == sorted(data)


def test_random_split_indices_are_ints(T):
    # TestDatasetRandomSplit.test_splits_indexing_type
    D = _D(T)
    seen = []

    class Recording:
        def __getitem__(self, key):
            seen.append(type(key))
            return [1, 2, 3, 4, 5][key]

        def __len__(self):
            return 5

    for lengths in ([5], [1.0]):
        for _ in D.DataLoader(D.random_split(Recording(), lengths)[0]):
            pass
    assert seen == [int] * 10


def test_random_split_reproducibility(T):
    # TestDatasetRandomSplit.test_splits_reproducibility (the exact torch split for seed 1 is
    # torch's stream; tracegrad's JAX stream differs, so only same-seed-same-split is ported)
    D = _D(T)
    for n, lengths in ((10, [3, 7]), (100, [60, 40]), (100, [0.5, 0.5]), (100, [0.33, 0.33, 0.34])):
        a = [list(s) for s in D.random_split(range(n), lengths, generator=T.Generator().manual_seed(42))]
        b = [list(s) for s in D.random_split(range(n), lengths, generator=T.Generator().manual_seed(42))]
        assert a == b and sorted(sum(a, [])) == list(range(n))
    c = [list(s) for s in D.random_split(range(100), [60, 40], generator=T.Generator().manual_seed(43))]
    assert c != [list(s) for s in D.random_split(range(100), [60, 40], generator=T.Generator().manual_seed(42))]


def test_random_split_generator_and_global_rng(T):
    # TestDatasetRandomSplit.test_splits_generator: no generator draws from the global RNG, an
    # explicit one leaves it alone
    D = _D(T)
    state = T.get_rng_state()
    a = _vals(T.rand(10))
    T.set_rng_state(state)
    D.random_split(range(10), [5, 5])
    assert _vals(T.rand(10)) != a
    state = T.get_rng_state()
    a = _vals(T.rand(10))
    T.set_rng_state(state)
    D.random_split(range(10), [5, 5], generator=T.Generator().manual_seed(42))
    assert _vals(T.rand(10)) == a


# ---- samplers --------------------------------------------------------------------------------
def _stats(sampler):
    counts = Counter(sampler)
    return sum(v > 1 for v in counts.values()), min(counts), max(counts), sum(counts.values())


def test_random_sampler_counts(T):
    # TestDataLoader.test_random_sampler
    D = _D(T)
    n = 30
    ds = range(n)
    rep, lo, hi, total = _stats(D.RandomSampler(ds, replacement=True, num_samples=n + 1))
    assert rep > 0 and lo >= 0 and hi < n and total == n + 1
    assert _stats(D.RandomSampler(ds)) == (0, 0, n - 1, n)
    assert _stats(D.RandomSampler(ds, num_samples=2 * n)) == (n, 0, n - 1, 2 * n)
    rep, lo, hi, total = _stats(D.RandomSampler(ds, num_samples=n - 1))
    assert rep == 0 and lo >= 0 and hi < n and total == n - 1
    assert _stats(D.RandomSampler(ds, num_samples=n + 1)) == (1, 0, n - 1, n + 1)


@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(replacement=0), TypeError, "replacement should be a boolean value, but got replacement=0"),
    (dict(num_samples=0), ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
    (dict(num_samples=-3), ValueError, "num_samples should be a positive integer value"),
    (dict(num_samples=2.0), ValueError, "num_samples should be a positive integer value"),
])
def test_random_sampler_errors(T, kwargs, exc, msg):
    # TestDataLoader.test_random_sampler (non-bool replacement) and RandomSampler's num_samples check
    with pytest.raises(exc, match=msg):
        _D(T).RandomSampler(range(5), **kwargs)


@pytest.mark.parametrize("replacement", [True, False])
def test_random_sampler_len(T, replacement):
    # TestDataLoader.test_random_sampler_len_with_replacement / _without_replacement
    D = _D(T)
    _, _, ds = _labelled(T)
    num_samples = len(ds) + 5
    sampler = D.RandomSampler(ds, replacement=replacement, num_samples=num_samples)
    assert len(sampler) == num_samples == sum(1 for _ in sampler)
    assert len(D.DataLoader(ds, batch_size=1, sampler=sampler)) == num_samples
    assert len(D.DataLoader(ds, batch_size=6, sampler=sampler)) == math.ceil(num_samples / 6)


def test_random_sampler_length_follows_dataset(T):
    # TestDataLoader.test_growing_dataset: len is read from the dataset at call time
    D = _D(T)
    data = [T.ones(4) for _ in range(4)]
    seq, shuf = D.DataLoader(data, shuffle=False), D.DataLoader(data, shuffle=True)
    data.append(T.ones(4))
    assert len(seq) == len(shuf) == 5
    assert len(list(shuf)) == 5


_WEIGHTS = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]


def _random_samplers(D, T, generator):
    g = (lambda: T.Generator().manual_seed(42)) if generator else (lambda: None)
    return [lambda: D.RandomSampler(range(20), num_samples=5, replacement=True, generator=g()),
            lambda: D.RandomSampler(range(20), replacement=False, generator=g()),
            lambda: D.WeightedRandomSampler(_WEIGHTS, num_samples=5, replacement=True, generator=g()),
            lambda: D.WeightedRandomSampler(_WEIGHTS, num_samples=5, replacement=False, generator=g()),
            lambda: D.SubsetRandomSampler(range(10), generator=g())]


def test_sampler_reproducibility_with_generator(T):
    # TestDataLoader.test_sampler_reproducibility (explicit generators)
    for make in _random_samplers(_D(T), T, generator=True):
        assert list(make()) == list(make())


def test_sampler_reproducibility_with_global_seed(T):
    # TestDataLoader.test_sampler_reproducibility (global seed): the draw happens when iteration
    # starts, so two iterators started after the same manual_seed agree
    for make in _random_samplers(_D(T), T, generator=False):
        sampler = make()
        T.manual_seed(0)
        l1 = list(sampler) + list(sampler)
        T.manual_seed(0)
        assert list(sampler) + list(sampler) == l1
        its, got = (iter(sampler), iter(sampler)), ([], [])
        for k in range(len(sampler)):
            for i in range(2):
                if k == 0:
                    T.manual_seed(0)
                got[i].append(next(its[i]))
        assert got[0] == got[1]


def test_subset_random_and_sequential_samplers(T):
    # SubsetRandomSampler / SequentialSampler semantics used across test_dataloader.py
    D = _D(T)
    idx = [10, 3, 7, 42]
    s = D.SubsetRandomSampler(idx, generator=T.Generator().manual_seed(0))
    assert len(s) == 4 and sorted(s) == sorted(idx)
    assert list(D.SequentialSampler([5, 6, 7])) == [0, 1, 2] and len(D.SequentialSampler(range(9))) == 9


@pytest.mark.parametrize("weights,num_samples,replacement,msg", [
    ([1.0, 2.0], 0, True, "num_samples should be a positive integer value, but got num_samples=0"),
    ([1.0, 2.0], True, True, "num_samples should be a positive integer value, but got num_samples=True"),
    ([1.0, 2.0], 2.0, True, "num_samples should be a positive integer value"),
    ([1.0, 2.0], 2, 1, "replacement should be a boolean value, but got replacement=1"),
    ([[1.0, 2.0]], 2, True, r"weights should be a 1d sequence but given weights have shape \(1, 2\)"),
])
def test_weighted_random_sampler_errors(T, weights, num_samples, replacement, msg):
    # WeightedRandomSampler's argument checks
    with pytest.raises(ValueError, match=msg):
        _D(T).WeightedRandomSampler(weights, num_samples, replacement=replacement)


def test_weighted_random_sampler_draws(T):
    # WeightedRandomSampler: zero weights are never drawn; without replacement every index once
    D = _D(T)
    draws = list(D.WeightedRandomSampler([0.0, 2.0, 0.0, 1.0], 50, generator=T.Generator().manual_seed(0)))
    assert len(draws) == 50 and set(draws) <= {1, 3}
    once = list(D.WeightedRandomSampler(T.tensor([1.0, 5.0, 2.0]), 3, replacement=False))
    assert sorted(once) == [0, 1, 2] and len(D.WeightedRandomSampler([1.0, 5.0], 7)) == 7


@pytest.mark.parametrize("weights,num_samples,replacement,msg", [
    ([1.0, -2.0], 3, True, "< 0"),
    ([0.0, 0.0], 3, True, "sum of probabilities <= 0"),
])
def test_weighted_random_sampler_bad_weights_fail_when_drawn(T, weights, num_samples, replacement, msg):
    # WeightedRandomSampler defers the distribution checks to multinomial at iteration time
    sampler = _D(T).WeightedRandomSampler(weights, num_samples, replacement=replacement)
    assert len(sampler) == num_samples
    with pytest.raises(RuntimeError, match=msg):
        list(sampler)


def test_random_sampler_generator_advances_across_passes(T):
    # RandomSampler with one generator: each pass is a new permutation drawn from it, and the
    # global seed does not affect it
    D = _D(T)
    s = D.RandomSampler(range(30), generator=T.Generator().manual_seed(3))
    T.manual_seed(0)
    first = list(s)
    T.manual_seed(0)
    second = list(s)
    assert sorted(first) == sorted(second) == list(range(30)) and first != second
    again = D.RandomSampler(range(30), generator=T.Generator().manual_seed(3))
    assert list(again) == first


@pytest.mark.parametrize("batch_size,drop_last,msg", [
    (0, False, "batch_size should be a positive integer value, but got batch_size=0"),
    (2.0, False, "batch_size should be a positive integer value"),
    (True, False, "batch_size should be a positive integer value, but got batch_size=True"),
    (2, 0, "drop_last should be a boolean value, but got drop_last=0"),
    (2, None, "drop_last should be a boolean value"),
])
def test_batch_sampler_errors(T, batch_size, drop_last, msg):
    # BatchSampler's argument checks
    with pytest.raises(ValueError, match=msg):
        _D(T).BatchSampler(range(5), batch_size, drop_last)


def test_batch_sampler_groups(T):
    # BatchSampler batching with and without drop_last, over a sampler and a plain iterable
    D = _D(T)
    assert list(D.BatchSampler(D.SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(D.BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert list(D.BatchSampler([4, 2], 5, True)) == [] and list(D.BatchSampler([4, 2], 5, False)) == [[4, 2]]
    assert (len(D.BatchSampler(range(7), 3, False)), len(D.BatchSampler(range(7), 3, True))) == (3, 2)


def test_distributed_sampler_invalid_rank(T):
    # TestDataLoader.test_distributed_sampler_invalid_rank
    D = _D(T)
    data = T.arange(10)
    for rank in (3, -1):
        with pytest.raises(ValueError, match="Invalid rank"):
            D.distributed.DistributedSampler(data, 3, rank)


def test_distributed_sampler_needs_process_group(T):
    # DistributedSampler without num_replicas/rank asks the (absent) default process group
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        _D(T).DistributedSampler(range(4))


def test_distributed_sampler_drop_last_no_duplicates(T):
    # TestDataLoader.test_duplicating_data_with_drop_last
    D = _D(T)
    data = T.arange(9, dtype=T.int32)
    scanned = []
    for rank in range(4):
        s = D.distributed.DistributedSampler(data, 4, rank)
        for batch in D.DataLoader(data, batch_size=2, drop_last=True, sampler=s):
            scanned += _vals(batch)
    assert len(scanned) == len(set(scanned)) == 8


@pytest.mark.parametrize("n,drop_last", [(10, False), (10, True), (12, False), (3, False)])
def test_distributed_sampler_unshuffled_shares(T, n, drop_last):
    # DistributedSampler (shuffle=False): strided shares, padded from the start or trimmed
    D = _D(T)
    shares = [list(D.DistributedSampler(range(n), 4, r, shuffle=False, drop_last=drop_last)) for r in range(4)]
    lens = {len(D.DistributedSampler(range(n), 4, r, drop_last=drop_last)) for r in range(4)}
    expect_len = n // 4 if drop_last else math.ceil(n / 4)
    assert lens == {expect_len} and all(len(s) == expect_len for s in shares)
    assert shares[1][:2] == [1, 5][:expect_len]
    flat = sorted(sum(shares, []))
    if drop_last:
        assert flat == list(range(4 * expect_len))
    else:
        assert set(flat) == set(range(n))


def test_distributed_sampler_epochs(T):
    # DistributedSampler.set_epoch: same seed and epoch -> same order, a new epoch reshuffles,
    # and the replicas still partition the data
    D = _D(T)
    make = lambda r: D.DistributedSampler(range(40), 2, r, seed=5)
    a, b = make(0), make(1)
    first = list(a)
    assert list(make(0)) == first and sorted(first + list(b)) == list(range(40))
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first and sorted(list(a) + list(b)) == list(range(40))


# ---- DataLoader: construction ---------------------------------------------------------------
def test_invalid_ctor_args_combinations(T):
    # TestDataLoader.test_invalid_ctor_args_combinations
    D = _D(T)
    _, _, ds = _labelled(T)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        D.DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        D.DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching and is mutually exclusive"):
        D.DataLoader(ds, batch_size=None, drop_last=True)
    valid_ctx = multiprocessing.get_all_start_methods()[-1]
    with pytest.raises(ValueError, match=r"multi-process loading \(num_workers > 0\), but got"):
        D.DataLoader(ds, num_workers=0, multiprocessing_context=valid_ctx)
    with pytest.raises(ValueError, match="should specify a valid start method in"):
        D.DataLoader(ds, num_workers=1, multiprocessing_context="bad")
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context "):
        D.DataLoader(ds, num_workers=1, multiprocessing_context=object())
    sampler = D.SequentialSampler(ds)
    batch_sampler = D.BatchSampler(sampler, 3, False)
    for kwargs in (dict(batch_size=11, sampler=sampler, shuffle=True),
                   dict(batch_sampler=batch_sampler, sampler=sampler, shuffle=True),
                   dict(batch_sampler=batch_sampler, sampler=sampler, shuffle=3)):
        with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
            D.DataLoader(ds, **kwargs)
    for kwargs in (dict(batch_size=11), dict(shuffle=True), dict(drop_last=True), dict(drop_last=3)):
        with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with"):
            D.DataLoader(ds, batch_sampler=batch_sampler, **kwargs)
    it = _counting_iterable(D, 20)
    for kwargs, what in ((dict(shuffle=True), "shuffle"), (dict(shuffle=3), "shuffle"),
                         (dict(sampler=D.SequentialSampler(it)), "sampler"), (dict(sampler=3), "sampler"),
                         (dict(batch_sampler=D.BatchSampler(D.SequentialSampler(it), 3, False)), "batch_sampler"),
                         (dict(batch_sampler=3), "batch_sampler")):
        with pytest.raises(ValueError, match=f"DataLoader with IterableDataset: expected unspecified {what}"):
            D.DataLoader(it, **kwargs)


def test_multiprocessing_context_accepted_with_workers(T):
    # TestDataLoader.test_invalid_ctor_args_combinations (the valid side): a start-method name
    # becomes its context object
    loader = _D(T).DataLoader(range(4), num_workers=1, multiprocessing_context="spawn")
    assert isinstance(loader.multiprocessing_context, multiprocessing.context.BaseContext)
    assert loader.multiprocessing_context.get_start_method() == "spawn"


def test_worker_option_errors_without_workers(T):
    # prefetch_factor / persistent_workers need num_workers > 0; prefetch_factor must not be
    # negative
    D = _D(T)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        D.DataLoader(range(4), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        D.DataLoader(range(4), persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor option should be non-negative"):
        D.DataLoader(range(4), num_workers=1, prefetch_factor=-1)
    assert D.DataLoader(range(4), num_workers=1).prefetch_factor == 2


def test_timeout_without_workers(T):
    # TestDataLoader.test_timeout's single-process counterpart: a positive timeout is accepted at
    # construction but loading in the main process asserts timeout == 0
    loader = _D(T).DataLoader(range(4), timeout=3)
    assert loader.timeout == 3
    with pytest.raises(AssertionError, match="timeout == 0"):
        iter(loader)


def test_invalid_assign_after_init_any_value(T):
    # TestDataLoader.test_invalid_assign_after_init (any value is refused, persistent_workers
    # too; test_ported_round3.py has the per-attribute cases), while other attributes stay
    # assignable
    _, _, ds = _labelled(T)
    dl = _D(T).DataLoader(ds)
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(dl, attr, {})
    dl.collate_fn = list
    assert dl.collate_fn is list


def test_typing_subscripts(T):
    # TestDataLoader.test_typing: Dataset[...] / DataLoader[...] / Sampler[...] in annotations
    D = _D(T)

    class SomeDataset(D.Dataset[typing.List[T.Tensor]]):
        pass

    def make(is_train: bool) -> D.DataLoader[typing.List[T.Tensor]]:
        return D.DataLoader(SomeDataset())

    assert issubclass(SomeDataset, D.Dataset)
    assert D.Sampler[int] is not None and D.IterableDataset[int] is not None
    assert isinstance(make(True), D.DataLoader)


# ---- DataLoader: iteration -------------------------------------------------------------------
@pytest.mark.parametrize("batch_size", [None, 1, 2, 3])
def test_sequential(T, batch_size):
    # TestDataLoader.test_sequential_nonbatch / test_sequential_batch / test_len
    D = _D(T)
    data, labels, ds = _labelled(T)
    loader = D.DataLoader(ds, batch_size=batch_size)
    got = list(loader)
    if batch_size is None:
        assert len(loader) == len(got) == 20
        for i, (x, y) in enumerate(got):
            assert tuple(x.shape) == (2, 3) and _vals(x) == _vals(data[i]) and int(y) == int(labels[i])
        return
    assert len(loader) == len(got) == math.ceil(20 / batch_size)
    for i, (x, y) in enumerate(got):
        sl = slice(i * batch_size, (i + 1) * batch_size)
        assert _vals(x) == _vals(data[sl]) and _vals(y) == _vals(labels[sl])


@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_shuffle_is_permutation(T, batch_size):
    # TestDataLoader.test_shuffle / test_shuffle_batch_none / test_shuffle_batch: every sample once,
    # labels stay with their data
    D = _D(T)
    data, labels, ds = _labelled(T)
    seen = []
    loader = D.DataLoader(ds, batch_size=batch_size, shuffle=True)
    for x, y in loader:
        rows = [int(x[0][0])] if batch_size is None else _rows(x)
        ys = [int(y)] if batch_size is None else _vals(y)
        assert ys == [r % 7 for r in rows]
        seen += rows
    assert sorted(seen) == list(range(20)) and seen != list(range(20))
    assert len(loader) == (20 if batch_size is None else math.ceil(20 / batch_size))


def test_sampler_and_batch_sampler_iterables(T):
    # TestDataLoader.test_sampler / test_batch_sampler (plain iterables as sampler/batch_sampler)
    D = _D(T)
    data, _, ds = _labelled(T)
    dl = D.DataLoader(ds, sampler=range(2, 12), batch_size=2)
    assert len(dl) == 5
    assert [_rows(x) for x, _ in dl] == [[2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    batches = []
    for i in range(0, 20, 5):
        batches += [tuple(range(i, i + 2)), tuple(range(i + 2, i + 5))]
    dl = D.DataLoader(ds, batch_sampler=batches)
    assert len(dl) == 8
    assert [_rows(x) for x, _ in dl] == [list(b) for b in batches]


@pytest.mark.parametrize("drop_last,n_batches", [(False, 2), (True, 1)])
def test_tensor_as_dataset(T, drop_last, n_batches):
    # test_utils.py TestDataLoaderUtils.test_single_keep / test_single_drop: a bare tensor
    # (not a Dataset) is indexed along dim 0
    data = T.rand(5, 3, 3, 2)
    batches = list(_D(T).DataLoader(data, batch_size=3, num_workers=0, drop_last=drop_last))
    assert len(batches) == n_batches and tuple(batches[0].shape) == (3, 3, 3, 2)
    assert _vals(batches[0]) == _vals(data[:3])


def test_global_seed_fixes_shuffle_and_random_samples(T):
    # test_utils.py TestDataLoaderUtils.test_random_seed (num_workers=0): after the same
    # manual_seed, a shuffled loader over a dataset that itself draws random numbers gives the
    # same first batch
    D = _D(T)

    class RandomData(D.Dataset):
        def __getitem__(self, i):
            return T.rand(3), i

        def __len__(self):
            return 100

    def run():
        x, i = next(iter(D.DataLoader(RandomData(), batch_size=2, shuffle=True)))
        return _vals(x), _vals(i)

    T.manual_seed(2018)
    first = run()
    T.manual_seed(2018)
    assert run() == first
    assert run() != first


def test_bulk_loading_nobatch(T):
    # TestDataLoader.test_bulk_loading_nobatch: batch_size=None with a sampler of index lists
    D = _D(T)

    class Bulk(D.Dataset):
        def __getitem__(self, indices):
            assert isinstance(indices, (list, tuple))
            return T.as_tensor(indices)

        def __len__(self):
            return 35

    class BulkSampler(D.Sampler):
        def __iter__(self):
            for x in T.randperm(35).split(4):
                yield x.tolist()

        def __len__(self):
            return 9

    dl = D.DataLoader(Bulk(), batch_size=None, sampler=BulkSampler())
    assert not dl._auto_collation and len(dl) == 9
    samples = list(dl)
    assert [len(s) for s in samples] == [4] * 8 + [3]
    assert sorted(_vals(T.cat(samples, 0))) == list(range(35))


def test_builtin_collection_conversion(T):
    # TestDataLoader.test_builtin_collection_conversion (num_workers=0)
    D = _D(T)
    for coll in (list, tuple):
        for ds in (_Counting(20), _counting_iterable(D, 20)):
            assert coll(D.DataLoader(ds, batch_size=None)) == coll(range(20))
            fetched = coll(D.DataLoader(ds, batch_size=2))
            assert isinstance(fetched, coll) and all(isinstance(b, T.Tensor) for b in fetched)
            assert [_vals(b) for b in fetched] == [[i, i + 1] for i in range(0, 20, 2)]


def test_iterable_style_dataset(T):
    # TestDataLoader.test_iterable_style_dataset (single process)
    D = _D(T)
    ds = _counting_iterable(D, 20)
    loader = D.DataLoader(ds, batch_size=None)
    fetched = list(loader)
    assert fetched == list(range(20)) and all(type(d) is int for d in fetched)
    assert len(loader) == len(ds) == 20
    assert [_vals(b) for b in D.DataLoader(ds, batch_size=7)] == [list(range(7)), list(range(7, 14)), list(range(14, 20))]
    assert [_vals(b) for b in D.DataLoader(ds, batch_size=7, drop_last=True)] == [list(range(7)), list(range(7, 14))]


def test_iterable_dataset_len(T):
    # TestDataLoader.test_iterabledataset_len
    D = _D(T)
    ds = _counting_iterable(D, 10)
    expect = {(1, False): 10, (1, True): 10, (2, False): 5, (2, True): 5, (3, False): 4, (3, True): 3}
    for (bs, drop), n in expect.items():
        loader = D.DataLoader(ds, batch_size=bs, drop_last=drop)
        assert len(loader) == n
        assert len(list(loader)) == n


def test_iterable_dataset_len_warning(T):
    # TestDataLoader.test_iterable_style_dataset (NOTE [ IterableDataset and __len__ ]): once
    # len(dataloader) was read, each sample past the reported length warns; none before that
    D = _D(T)
    loader = D.DataLoader(_counting_iterable(D, 8, reported=5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(loader)) == 8  # len() not accessed yet
    assert len(loader) == 5
    it = iter(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            next(it)
    for k in range(6, 9):
        with pytest.warns(UserWarning, match=rf"reported to be 5.*but {k} samples have been fetched"):
            next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_starting_a_pass_draws_from_the_rng(T):
    # _BaseDataLoaderIter draws its base seed when a pass starts (as
    # TestDatasetRandomSplit.test_splits_generator checks for random_split): from the global RNG
    # by default, from the loader's generator when one is given
    D = _D(T)
    state = T.get_rng_state()
    a = _vals(T.rand(4))
    T.set_rng_state(state)
    iter(D.DataLoader(range(6)))
    assert _vals(T.rand(4)) != a
    state = T.get_rng_state()
    a = _vals(T.rand(4))
    T.set_rng_state(state)
    g = T.Generator().manual_seed(1)
    fresh = _vals(T.Generator().manual_seed(1).get_state())
    iter(D.DataLoader(range(6), generator=g))
    assert _vals(T.rand(4)) == a and _vals(g.get_state()) != fresh


def test_iterator_len_and_independent_passes(T):
    # _BaseDataLoaderIter.__len__; each iter() starts a fresh pass (num_workers=0)
    D = _D(T)
    loader = D.DataLoader(_Counting(10), batch_size=4)
    it1 = iter(loader)
    assert len(it1) == 3 and iter(it1) is it1
    first = _vals(next(it1))
    it2 = iter(loader)
    assert _vals(next(it2)) == first == [0, 1, 2, 3]
    assert [_vals(b) for b in it1] == [[4, 5, 6, 7], [8, 9]]


def test_error_per_batch_does_not_end_pass(T):
    # TestDataLoader.test_error: every batch of a dataset without __getitem__ raises, and the
    # pass still visits all of them
    D = _D(T)

    class NoGetItem(D.Dataset):
        def __len__(self):
            return 9

    it = iter(D.DataLoader(NoGetItem(), batch_size=2, shuffle=True))
    errors = 0
    while True:
        try:
            next(it)
        except NotImplementedError:
            errors += 1
        except StopIteration:
            break
    assert errors == 5


def test_error_in_iter(T):
    # TestDataLoader.test_error_in_init (num_workers=0)
    D = _D(T)

    class Broken(D.IterableDataset):
        def __iter__(self):
            raise RuntimeError("Error in __iter__")

    with pytest.raises(RuntimeError, match="Error in __iter__"):
        list(iter(D.DataLoader(Broken())))


def test_worker_info_and_init_fn_without_workers(T):
    # _test_get_worker_info: get_worker_info() is None in the main process, also while the
    # dataset is read; with num_workers=0 worker_init_fn is never called
    D = _D(T)
    calls, infos = [], []

    class Probe(_Counting):
        def __getitem__(self, i):
            infos.append(D.get_worker_info())
            return i

    loader = D.DataLoader(Probe(4), batch_size=2, worker_init_fn=calls.append)
    assert [_vals(b) for b in loader] == [[0, 1], [2, 3]]
    assert calls == [] and infos == [None] * 4 and D.get_worker_info() is None
    assert loader.worker_init_fn == calls.append


def test_tracegrad_num_workers_loads_in_process():
    # tracegrad loads in this process, but as torch's workers would: worker_init_fn runs once per
    # worker, and batch i is fetched as worker i % num_workers (get_worker_info() says which)
    import tracegrad
    D = tracegrad.utils.data
    calls, infos = [], []

    class Probe(_Counting):
        def __getitem__(self, i):
            infos.append(D.get_worker_info().id)
            return i

    loader = D.DataLoader(Probe(6), batch_size=2, num_workers=2, worker_init_fn=calls.append, timeout=5)
    assert [_vals(b) for b in loader] == [[0, 1], [2, 3], [4, 5]]
    assert calls == [0, 1] and infos == [0, 0, 1, 1, 0, 0] and D.get_worker_info() is None


def test_pin_memory_accepted(T):
    # TestDataLoader.test_sequential_pin_memory's CPU side: pin_memory=True gives the same batches
    D = _D(T)
    _, _, ds = _labelled(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when there is no accelerator to pin for
        pinned = [[_vals(x), _vals(y)] for x, y in D.DataLoader(ds, batch_size=6, pin_memory=True)]
    assert pinned == [[_vals(x), _vals(y)] for x, y in D.DataLoader(ds, batch_size=6)]


# ---- collation -------------------------------------------------------------------------------
def test_numpy_batches(T):
    # TestDataLoader.test_numpy
    D = _D(T)

    class NumpyDataset(D.Dataset):
        def __getitem__(self, i):
            return np.ones((2, 3, 4)) * i

        def __len__(self):
            return 100

    batch = next(iter(D.DataLoader(NumpyDataset(), batch_size=12)))
    assert isinstance(batch, T.Tensor) and batch.dtype == T.float64 and tuple(batch.shape) == (12, 2, 3, 4)
    assert float(batch[5, 1, 2, 3]) == 5.0


@pytest.mark.parametrize("np_dtype,name", [(np.float64, "float64"), (np.float32, "float32"),
                                           (np.float16, "float16"), (np.int64, "int64"),
                                           (np.int32, "int32"), (np.int16, "int16"),
                                           (np.int8, "int8"), (np.uint8, "uint8")])
def test_numpy_scalars(T, np_dtype, name):
    # TestDataLoader.test_numpy_scalars
    D = _D(T)

    class ScalarDataset(D.Dataset):
        def __getitem__(self, i):
            return np_dtype(i)

        def __len__(self):
            return 4

    batch = next(iter(D.DataLoader(ScalarDataset(), batch_size=2)))
    assert batch.dtype == getattr(T, name) and _vals(batch) == [0, 1]


class CustomList(list):
    pass


class CustomDict(dict):
    pass


def test_default_convert_keeps_or_drops_type(T):
    # TestDataLoader.test_default_convert_mapping_keep_type / _sequence_keep_type /
    # _sequence_dont_keep_type
    D = _D(T)
    conv = D.default_convert(CustomDict({"a": 1, "b": 2}))
    assert type(conv) is CustomDict and conv == {"a": 1, "b": 2}
    conv = D.default_convert(CustomList([1, 2, 3]))
    assert type(conv) is CustomList and conv == [1, 2, 3]
    assert D.default_convert(range(2)) == [0, 1]
    conv = D.default_convert({"x": np.arange(3, dtype=np.int32), "s": "str", "n": 1.5})
    assert isinstance(conv["x"], T.Tensor) and conv["x"].dtype == T.int32 and conv["s"] == "str" and conv["n"] == 1.5


def test_default_collate_dtype(T):
    # TestDataLoader.test_default_collate_dtype
    D = _D(T)
    c = D.default_collate([1, 2, -1])
    assert c.dtype == T.int64 and _vals(c) == [1, 2, -1]
    c = D.default_collate([1.1, 2.3, -0.9])
    assert c.dtype == T.float64 and _vals(c) == [1.1, 2.3, -0.9]
    c = D.default_collate([True, False])
    assert c.dtype == T.bool and _vals(c) == [True, False]
    assert D.default_collate(["a", "b", "c"]) == ["a", "b", "c"]


def test_default_collate_keeps_or_drops_type(T):
    # TestDataLoader.test_default_collate_mapping_keep_type / _sequence_keep_type /
    # _sequence_dont_keep_type
    D = _D(T)
    c = D.default_collate([CustomDict({"a": 1, "b": 2}), CustomDict({"a": 3, "b": 4})])
    assert type(c) is CustomDict and {k: _vals(v) for k, v in c.items()} == {"a": [1, 3], "b": [2, 4]}
    c = D.default_collate([CustomList([1, 2, 3]), CustomList([4, 5, 6])])
    assert type(c) is CustomList and [_vals(v) for v in c] == [[1, 4], [2, 5], [3, 6]]
    c = D.default_collate([range(2), range(2)])
    assert type(c) is list and [_vals(v) for v in c] == [[0, 0], [1, 1]]
    c = D.default_collate([(1, "a"), (2, "b")])
    # strings pass through as the transposed tuple of samples
    assert type(c) is list and _vals(c[0]) == [1, 2] and c[1] == ("a", "b")


def test_default_collate_bad_numpy_types(T):
    # TestDataLoader.test_default_collate_bad_numpy_types
    D = _D(T)
    arr = np.array(["a", "b", "c"])
    assert (D.default_collate(arr) == arr).all()
    for bad in (np.array([[["a", "b", "c"]]]), np.array([object(), object(), object()]),
                np.array([[[object(), object(), object()]]])):
        with pytest.raises(TypeError):
            D.default_collate(bad)


def test_default_collate_unsupported_type(T):
    # default_collate's error for element types it cannot batch
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists"):
        _D(T).default_collate([{1, 2}, {3}])


def test_empty_datasets(T):
    # DataLoader over empty map-style and iterable datasets: no batches, len 0
    D = _D(T)
    for ds in ([], _Counting(0), _counting_iterable(D, 0)):
        loader = D.DataLoader(ds, batch_size=2)
        assert len(loader) == 0 and list(loader) == []
    assert list(D.SubsetRandomSampler([])) == [] and list(D.SequentialSampler([])) == []


def test_default_collate_numpy_memmap(T):
    # TestDataLoader.test_default_collate_numpy_memmap
    D = _D(T)
    arr = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    with tempfile.TemporaryFile() as f:
        mm = np.memmap(f, dtype=arr.dtype, mode="w+", shape=arr.shape)
        mm[:] = arr[:]
        ro = np.memmap(f, dtype=arr.dtype, mode="r", shape=arr.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: "The given NumPy array is not writable"
            t = D.default_collate(list(ro))
    assert _vals(t) == arr.tolist()


def test_default_collate_bad_sequence_type(T):
    # TestDataLoader.test_default_collate_bad_sequence_type
    D = _D(T)
    batch = [["X"], ["X", "X"]]
    for b in (batch, batch[::-1]):
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
            D.default_collate(b)


def test_dict_dataset_batches(T):
    # TestDictDataLoader.test_sequential_batch
    D = _D(T)

    class DictDataset(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"a_tensor": T.empty(4, 2).fill_(i), "another_dict": {"a_number": i}}

    for k, sample in enumerate(D.DataLoader(DictDataset(), batch_size=2, shuffle=False)):
        idx = 2 * k
        assert set(sample) == {"a_tensor", "another_dict"} and set(sample["another_dict"]) == {"a_number"}
        t, n = sample["a_tensor"], sample["another_dict"]["a_number"]
        assert tuple(t.shape) == (2, 4, 2) and bool((t[0] == idx).all()) and bool((t[1] == idx + 1).all())
        assert tuple(n.shape) == (2,) and _vals(n) == [idx, idx + 1]


Batch = collections.namedtuple("Batch", ["data", "label", "random_tensor"])
Data = collections.namedtuple("Data", ["positive", "negative"])


def test_namedtuple_batches(T):
    # TestNamedTupleDataLoader.test_dataloader_with_namedtuple
    D = _D(T)

    class NamedTupleDataset(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Batch(data=Data(positive=i, negative=-i), label=str(i), random_tensor=T.randn(3))

    for batch in D.DataLoader(NamedTupleDataset(), batch_size=2):
        assert isinstance(batch, Batch) and isinstance(batch.data, Data)
        assert isinstance(batch.data.positive, T.Tensor) and tuple(batch.random_tensor.shape) == (2, 3)
        assert isinstance(batch.label, tuple) and all(isinstance(s, str) for s in batch.label)
    for batch in D.DataLoader(NamedTupleDataset(), batch_size=None):
        assert isinstance(batch, Batch) and isinstance(batch.data, Data)
        assert not isinstance(batch.data.positive, T.Tensor) and isinstance(batch.random_tensor, T.Tensor)


def test_string_dataset_batches(T):
    # TestStringDataLoader (CPU side): strings stay strings, indices become a tensor
    D = _D(T)

    class StringDataset(D.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return "12345"[i], i

    batches = list(D.DataLoader(StringDataset(), batch_size=2))
    assert [s for s, _ in batches] == [("1", "2"), ("3", "4"), ("5",)]
    assert [_vals(n) for _, n in batches] == [[0, 1], [2, 3], [4]]


def test_custom_collate_fn(T):
    # TestCustomPinFn (CPU side): a collate_fn may return any object
    D = _D(T)

    class Simple:
        def __init__(self, data):
            xs, ys = zip(*data)
            self.inp, self.tgt = T.stack(xs, 0), T.stack(ys, 0)

    ds = D.TensorDataset(T.arange(50, dtype=T.float32).view(10, 5), T.arange(10))
    out = list(D.DataLoader(ds, batch_size=4, collate_fn=Simple))
    assert all(isinstance(b, Simple) for b in out)
    assert [tuple(b.inp.shape) for b in out] == [(4, 5), (4, 5), (2, 5)] and _vals(out[2].tgt) == [8, 9]
