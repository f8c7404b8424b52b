"""``tracegrad.optim``: mirrors ``torch.optim`` -- ``Optimizer``, ``SGD``, ``Adam``, ``AdamW``,
``RMSprop``, ``Adagrad`` and ``lr_scheduler``.

Written against tracegrad's public tensor API only (no JAX here, DESIGN 2): the classes keep
torch's API and state layout; the update math is in ``_functional.py``; ``step()`` is
traceable (NOTE [traceable step] in ``optimizer.py``).
"""
from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
