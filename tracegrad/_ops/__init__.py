"""The op table (DESIGN 2.1): importing this package declares every op once."""
from . import elementwise, indexing, linalg, reduction, shape  # noqa: F401
from . import nn_ops  # noqa: F401
from . import vision  # noqa: F401
from . import rnn  # noqa: F401
from . import special  # noqa: F401
from . import bessel, orthopoly, segment  # noqa: F401
from . import statistics  # noqa: F401
from . import integer  # noqa: F401
from . import strided  # noqa: F401
from . import sparse  # noqa: F401
from .registry import OPS, Op, defop  # noqa: F401
