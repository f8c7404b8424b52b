"""``tracegrad.utils.data``: datasets, samplers and the DataLoader.

Mirrors ``torch.utils.data`` and is written against tracegrad's public API only (no JAX).
See ``dataloader.py`` for what differs from torch (no worker processes; JAX random streams).
"""
from ._utils.collate import default_collate as default_collate, default_convert as default_convert
from .dataloader import DataLoader as DataLoader, get_worker_info as get_worker_info
from .dataset import (ChainDataset as ChainDataset, ConcatDataset as ConcatDataset,
                      Dataset as Dataset, IterableDataset as IterableDataset,
                      StackDataset as StackDataset, Subset as Subset,
                      TensorDataset as TensorDataset, random_split as random_split)
from . import distributed  # noqa: F401
from .distributed import DistributedSampler as DistributedSampler
from .sampler import (BatchSampler as BatchSampler, RandomSampler as RandomSampler,
                      Sampler as Sampler, SequentialSampler as SequentialSampler,
                      SubsetRandomSampler as SubsetRandomSampler,
                      WeightedRandomSampler as WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
