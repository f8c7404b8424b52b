"""Samplers: which dataset indices a DataLoader reads, and in what order.

Mirrors ``torch.utils.data.sampler`` (same classes, arguments, lengths and errors). Random
samplers draw from a ``tracegrad.Generator``: reproducible per seed within tracegrad, but a
different stream from torch's (JAX PRNG keys).
"""
from __future__ import annotations

import itertools

import tracegrad

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses implement ``__iter__`` (indices, or lists of indices for a batch
    sampler) and optionally ``__len__``. Mirrors ``torch.utils.data.Sampler``, which (since
    torch 2.2) has no ``__init__`` of its own: ``super().__init__(data_source)`` in a subclass
    raises TypeError there, as it does here."""

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):
        return cls


class SequentialSampler(Sampler):
    """Yields ``0, 1, ..., len(data_source) - 1``. Mirrors ``torch.utils.data.SequentialSampler``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    # torch: a new generator seeded from the global one, so a global manual_seed fixes the order
    seed = int(tracegrad.empty((), dtype=tracegrad.int64).random_().item())
    return tracegrad.Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """Random order: a permutation per pass (``replacement=False``) or ``num_samples`` uniform
    draws with replacement. Mirrors ``torch.utils.data.RandomSampler``.
    Args:    ``num_samples`` (default ``len(data_source)``; without replacement, more than the
             length repeats whole permutations); ``generator``: ``tracegrad.Generator`` or None
             (then one seeded from the global generator per ``__iter__``).
    Raises:  TypeError for a non-bool ``replacement``; ValueError for a non-positive
             ``num_samples`` (torch's messages)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # dataset size might change at runtime
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from tracegrad.randint(high=n, size=(32,), dtype=tracegrad.int64, generator=generator).tolist()
            yield from tracegrad.randint(high=n, size=(self.num_samples % 32,), dtype=tracegrad.int64,
                                         generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from tracegrad.randperm(n, generator=generator).tolist()
            yield from tracegrad.randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """A random permutation of ``indices`` (a sequence), without replacement. Mirrors
    ``torch.utils.data.SubsetRandomSampler``."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in tracegrad.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probability proportional to
    ``weights`` (1-D, need not sum to 1). Mirrors ``torch.utils.data.WeightedRandomSampler``.
    Raises: ValueError for a non-positive ``num_samples``, a non-bool ``replacement`` or
    weights that are not 1-D (torch's messages)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = tracegrad.as_tensor(weights, dtype=tracegrad.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rand_tensor = tracegrad.multinomial(self.weights, self.num_samples, self.replacement,
                                            generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``; ``drop_last`` drops a
    short final batch. Mirrors ``torch.utils.data.BatchSampler``.
    Raises: ValueError for a non-positive-int ``batch_size`` or a non-bool ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*([sampler_iter] * self.batch_size)):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
