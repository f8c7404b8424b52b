"""Mirrors ``torch.utils.data.distributed.DistributedSampler``: each replica reads its own
strided share of the (optionally shuffled) indices, padded or trimmed to equal length.

The split and padding equal torch's; the shuffled order comes from a ``tracegrad.Generator``
seeded ``seed + epoch`` and so differs from torch's stream (JAX PRNG keys).
"""
from __future__ import annotations

import math

import tracegrad

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Mirrors ``torch.utils.data.distributed.DistributedSampler``.

    Args: ``num_replicas``/``rank`` (default: the process group's world size/rank, ValueError
    before ``init_process_group`` as torch); ``shuffle``; ``seed`` (same on every replica);
    ``drop_last`` (True trims the tail so every replica gets ``len // num_replicas``; False
    repeats indices from the start to fill the last round). ``set_epoch(e)`` changes the
    shuffle of the next pass. ``len()`` is the per-replica count.
    Raises: ValueError for a rank outside ``[0, num_replicas - 1]``.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = tracegrad.distributed.get_world_size()
        if rank is None:
            rank = tracegrad.distributed.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        n = len(dataset)
        if drop_last:
            self.num_samples = n // num_replicas  # whole rounds only
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def _all_indices(self):
        n = len(self.dataset)
        if self.shuffle:
            g = tracegrad.Generator().manual_seed(self.seed + self.epoch)
            return tracegrad.randperm(n, generator=g).tolist()
        return list(range(n))

    def __iter__(self):
        indices = self._all_indices()
        missing = self.total_size - len(indices)
        if missing > 0:  # cycle the order from its start until every replica has a full share
            indices += (indices * math.ceil(missing / len(indices)))[:missing]
        indices = indices[: self.total_size]
        return iter(indices[self.rank: self.total_size: self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch that, added to ``seed``, seeds the next pass's shuffle."""
        self.epoch = epoch
