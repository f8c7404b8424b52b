"""``tracegrad.nn``: mirrors ``torch.nn`` -- Module, Parameter, layers, losses, ``functional``,
``init`` and ``utils``. Written against tracegrad's public API only (no JAX here)."""
from . import attention, functional, grad, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import module  # noqa: F401
from .modules.module import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
