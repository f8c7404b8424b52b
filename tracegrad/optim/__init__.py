"""``tracegrad.optim``: mirrors ``torch.optim`` -- ``Optimizer``, ``SGD``, ``Adam``, ``AdamW``,
``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``, ``Rprop``, ``ASGD``,
``Adafactor``, ``Muon``, ``SparseAdam``, ``lr_scheduler``, ``swa_utils`` and
``swap_in_optimizer_params_and_state``.

Written against tracegrad's public tensor API only (no JAX here, DESIGN 2): the classes keep
torch's API and state layout; the update math is in ``_functional.py``; ``step()`` is
traceable (NOTE [traceable step] in ``optimizer.py``).
"""
from . import lr_scheduler  # noqa: F401
from . import swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from ._stateless import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS",
           "Adafactor", "Muon", "SparseAdam", "lr_scheduler", "swa_utils",
           "swap_in_optimizer_params_and_state"]
