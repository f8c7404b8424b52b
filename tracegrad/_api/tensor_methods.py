"""Tensor's methods, properties and operators (tinygrad keeps op families in mixins the same way).

Each op family lives in ``tracegrad/_api/<family>.py``: it parses torch's arguments, decides the
result dtype with torch's promotion rules, calls the one dispatch path
(``autograd/_dispatch.py``) with a row of the op table, and declares where each function is
defined what it becomes (``_registry``: ``@method("sub", "subtract", function=True)``).
Importing the families here runs those declarations; ``install`` then puts them on ``Tensor``,
once. ``tracegrad.<fn>`` functions (``functions.py``) come from the same registry.
"""
from __future__ import annotations

from .._tensor.tensor import Tensor
from . import (  # noqa: F401  (each family registers its methods at import)
    autograd_methods, complex_api, composite, composite_more, composite_names, conversion, creation, elementwise, indexing, inplace,
    composite_extra, integer_math,
    linalg, random_draws, reduction, scatter, shape,
    special_math, sparse_coo, statistics, strided, pickling, torch_extras, segment_reduce
)
from ._registry import install
from .reduction import return_types as return_types

install(Tensor)
