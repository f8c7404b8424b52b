"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``ChainDataset``, ``StackDataset`` and ``random_split``.

Mirrors ``torch.utils.data.dataset``; written against tracegrad's public API only.
"""
from __future__ import annotations

import bisect
import itertools
import math

import tracegrad
from ..._ops.warn import warn as _warn

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset:
    """Map-style dataset: subclasses implement ``__getitem__(index)`` and usually ``__len__``.
    Mirrors ``torch.utils.data.Dataset`` (``ds1 + ds2`` is a ``ConcatDataset``); subclasses may
    add ``__getitems__(indices) -> list of samples`` to fetch a batch at once.
    Raises: NotImplementedError from ``__getitem__`` when a subclass does not define it."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):  # Dataset[int] in annotations, as torch's Generic
        return cls


class IterableDataset(Dataset):
    """Stream-style dataset: subclasses implement ``__iter__``. Mirrors
    ``torch.utils.data.IterableDataset``; ``ds1 + ds2`` is a ``ChainDataset``. A DataLoader
    over it takes no ``sampler``/``batch_sampler``/``shuffle`` (ValueError, as torch)."""

    def __new__(cls, *args, **kwargs):
        # torch's IterableDataset is an abstract Iterable: one without its own __iter__ cannot be made
        if cls.__iter__ is IterableDataset.__iter__:
            raise TypeError(f"Can't instantiate abstract class {cls.__name__} with abstract method __iter__ "
                            f"(subclasses of IterableDataset implement __iter__)")
        return super().__new__(cls)

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Dataset of tensors indexed along their first dimension; sample ``i`` is
    ``tuple(t[i] for t in tensors)``. Mirrors ``torch.utils.data.TensorDataset``.
    Args:    ``*tensors``: tensors sharing ``size(0)``.
    Raises:  AssertionError ``"Size mismatch between tensors"`` when first dimensions differ
             (torch's class and message)."""

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of equal length: positional args give tuple samples, keyword args dict
    samples. Mirrors ``torch.utils.data.StackDataset``.
    Raises: ValueError when both kinds are given, none is given, or lengths differ."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(d) for d in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(d) for d in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """The samples at ``indices`` (a list), fetched per member dataset with its own
        ``__getitems__`` when it has one (torch's batched path, used by the DataLoader).
        Raises: ValueError when a member's ``__getitems__`` returns a different number of
        samples than ``indices`` (torch's message)."""
        named = isinstance(self.datasets, dict)
        members = self.datasets.items() if named else enumerate(self.datasets)
        columns = {}
        for key, d in members:
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. "
                                     f"Expected {len(indices)}, got {len(items)}")
                columns[key] = list(items)
            else:
                columns[key] = [d[i] for i in indices]
        if named:
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Concatenation of map-style datasets. Mirrors ``torch.utils.data.ConcatDataset``
    (``cumulative_sizes``; negative indices count from the end).
    Raises: AssertionError for an empty list or an IterableDataset member (torch's classes);
    ValueError for a negative index beyond the length."""

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Chains iterable datasets one after another. Mirrors ``torch.utils.data.ChainDataset``.
    Raises: AssertionError when a member is not an IterableDataset (torch's class)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (any sequence of ints). Mirrors
    ``torch.utils.data.Subset``, including a batched ``__getitems__``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random ``Subset``s. Mirrors
    ``torch.utils.data.random_split``.
    Args:    ``lengths``: ints summing to ``len(dataset)``, or fractions summing to 1 (each
             ``floor(frac * n)``, the remainder added round-robin, a warning for an empty
             split); ``generator``: a ``tracegrad.Generator`` (default: the global one).
    Returns: list of ``Subset``.
    Raises:  ValueError for a fraction outside [0, 1] or lengths not summing to the length.
    Differs from torch: the permutation comes from JAX's PRNG, so the split for a given seed
    differs from torch's (it is reproducible within tracegrad)."""
    if isinstance(lengths, tracegrad.Tensor):   # torch iterates it: a 1-D tensor of lengths or fractions
        lengths = lengths.tolist()
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                _warn(f"Length of split at index {i} is 0. "
                      f"This might result in an empty dataset.")
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = tracegrad.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length: offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
