"""``tracegrad.nn``: mirrors ``torch.nn`` -- Module, Parameter, layers, losses, ``functional``,
``init`` and ``utils``. Written against tracegrad's public API only (no JAX here)."""
from . import attention, functional, grad, init, utils  # noqa: F401
functional.grad = grad   # torch.nn.functional re-exports torch.nn.grad as F.grad (grad imports functional)
_utils = utils
from .modules import *  # noqa: F401,F403,E402
utils = _utils   # the star import carries nn.modules.utils along under the same name
from .modules import module  # noqa: F401
from .modules.module import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from . import common_types  # noqa: F401,E402
from ._factory_kwargs import factory_kwargs  # noqa: F401,E402
