"""Learning-rate schedulers. Mirrors ``torch.optim.lr_scheduler``.

This module is the public face; the classes live in private modules along one seam each:
``_lr_base.py`` (``LRScheduler`` and shared helpers), ``_lr_schedules.py`` (per-epoch
schedules), ``_lr_composite.py`` (``SequentialLR``, ``ChainedScheduler``), ``_lr_plateau.py``
(``ReduceLROnPlateau``) and ``_lr_cyclic.py`` (``OneCycleLR``, ``CyclicLR``,
``CosineAnnealingWarmRestarts``). Every class reports this module as its ``__module__``, as
torch's do, so reprs and pickles name ``tracegrad.optim.lr_scheduler``. How schedulers
compute (chainable ``get_lr``, closed form for ``step(epoch)``): ``_lr_base.py``.
"""
from ._lr_base import EPOCH_DEPRECATION_WARNING as EPOCH_DEPRECATION_WARNING
from ._lr_base import LRScheduler as LRScheduler
from ._lr_base import _LRScheduler as _LRScheduler
from ._lr_composite import ChainedScheduler as ChainedScheduler
from ._lr_composite import SequentialLR as SequentialLR
from ._lr_cyclic import CosineAnnealingWarmRestarts as CosineAnnealingWarmRestarts
from ._lr_cyclic import CyclicLR as CyclicLR
from ._lr_cyclic import OneCycleLR as OneCycleLR
from ._lr_plateau import ReduceLROnPlateau as ReduceLROnPlateau
from ._lr_schedules import ConstantLR as ConstantLR
from ._lr_schedules import CosineAnnealingLR as CosineAnnealingLR
from ._lr_schedules import ExponentialLR as ExponentialLR
from ._lr_schedules import LambdaLR as LambdaLR
from ._lr_schedules import LinearLR as LinearLR
from ._lr_schedules import MultiplicativeLR as MultiplicativeLR
from ._lr_schedules import MultiStepLR as MultiStepLR
from ._lr_schedules import PolynomialLR as PolynomialLR
from ._lr_schedules import StepLR as StepLR

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "LRScheduler"]

for _cls in (LRScheduler, LambdaLR, MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR,
             ExponentialLR, PolynomialLR, CosineAnnealingLR, SequentialLR, ChainedScheduler,
             ReduceLROnPlateau, OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts, _LRScheduler):
    _cls.__module__ = __name__
del _cls
