"""Mirrors ``torch.utils._cxx_pytree``: the same API as ``tracegrad.utils._pytree``, one registry.

torch backs this module with optree (C++, importable only where optree is installed) and the
other with Python; both treat None as a leaf and share their node types. tracegrad has one
implementation, so this module is that one under the second name: always importable, and a
type registered through either module is a node in both.
Differs from torch: specs are ``TreeSpec`` (torch's are optree's ``PyTreeSpec`` objects,
printed ``PyTreeSpec(...)``).
"""
from ._pytree import *  # noqa: F401,F403
from ._pytree import __all__, map_only, treespec_dict, treespec_leaf, treespec_tuple  # noqa: F401
