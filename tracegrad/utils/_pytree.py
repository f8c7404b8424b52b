"""Mirrors ``torch.utils._pytree``: nested containers flattened into a list of leaves and a
``TreeSpec`` that rebuilds them.

Nodes, as torch 2.13: tuple, list, dict (insertion order kept, as torch: ``{'b': 1, 'a': 2}``
flattens to ``[1, 2]`` with context ``['b', 'a']``), OrderedDict, defaultdict, deque, every
namedtuple (its spec's type is ``collections.namedtuple`` and its context the class),
``tracegrad.Size`` (unflattened as a plain tuple, as torch) and tracegrad's return types (``tracegrad.return_types.max``..., the
linalg results), which play torch's structseqs. Everything else is a leaf: Tensors, numbers
and ``None`` (a leaf in torch's Python pytree, not an empty node).

Plain Python over a registry (``SUPPORTED_NODES``), not ``jax.tree_util``: JAX sorts dict keys,
treats None as an empty node and keeps no per-node context torch's repr and equality read.
See NOTE [structseq nodes] for the one place tracegrad's types differ from torch's.

Differs from torch: ``TreeSpec`` is not a frozen dataclass (its fields can be assigned; do
not); ``is_namedtuple`` is true for tracegrad's return types (namedtuples here, structseqs in
torch) while their specs still read ``TreeSpec(max, None, [...])`` as torch's.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import importlib
import json
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, NamedTuple

from ._pytree_keys import (  # noqa: F401  (torch.utils._pytree's names)
    _STRUCTSEQ_TYPES, GetAttrKey, MappingKey, SequenceKey, is_namedtuple, is_namedtuple_class,
    is_namedtuple_instance, is_structseq, is_structseq_class, is_structseq_instance, key_get, keystr,
)
from .._ops.warn import warn as _warn

__all__ = [
    "PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext", "ToDumpableContextFn",
    "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec", "keystr", "key_get",
    "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_flatten_with_path", "tree_unflatten",
    "tree_iter", "tree_leaves", "tree_leaves_with_path", "tree_structure", "tree_map",
    "tree_map_with_path", "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
    "tree_all_only", "tree_any_only", "treespec_dumps", "treespec_loads", "treespec_pprint",
    "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance", "is_structseq",
    "is_structseq_class", "is_structseq_instance",
]

# typing names torch exports; plain aliases (torch's are typing constructs of the same meaning)
PyTree = Any
Context = Any
DumpableContext = Any
FlattenFn = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFn = Callable[[Any, Context], PyTree]
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
KeyPath = tuple

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"


class NodeDef(NamedTuple):
    """How one container type flattens: children and context out, the container back in."""
    type: type
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None


class _SerializeNodeDef(NamedTuple):
    typ: type
    serialized_type_name: str
    to_dumpable_context: Callable | None
    from_dumpable_context: Callable | None


_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict = {}
SUPPORTED_SERIALIZED_TYPES: dict = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}


# ---- registration -------------------------------------------------------------------------------
def _register(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
              from_dumpable_context=None, flatten_with_keys_fn=None):
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"register_pytree_node({cls}): give both to_dumpable_context and "
                         "from_dumpable_context, or neither")
    name = NO_SERIALIZED_TYPE_NAME_FOUND if serialized_type_name is None else serialized_type_name
    with _REGISTRY_LOCK:
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a pytree node. Mirrors ``torch.utils._pytree.register_pytree_node``.

    Args: ``flatten_fn(obj) -> (children list, context)``; ``unflatten_fn(children, context) -> obj``;
    ``serialized_type_name`` (the name ``treespec_dumps`` writes; without it dumping raises
    NotImplementedError); ``to_dumpable_context``/``from_dumpable_context`` (context to and from
    JSON-able values; both or neither; default: the context itself through ``json``);
    ``flatten_with_keys_fn(obj) -> ([(key entry, child)...], context)`` for the ``*_with_path`` functions.
    Raises: ValueError if ``cls`` is already registered or only one context converter is given.
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"register_pytree_node: {cls} is already registered as a pytree node; "
                         "register each type once")
    _register(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
              to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
              flatten_with_keys_fn=flatten_with_keys_fn)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, *,
                          serialized_type_name=None, to_dumpable_context=None, from_dumpable_context=None,
                          flatten_with_keys_fn=None) -> None:
    """Deprecated spelling libraries still call (torch warns FutureWarning): registers ``cls``,
    replacing an earlier registration with a UserWarning instead of raising."""
    _warn("`tracegrad.utils._pytree._register_pytree_node` is deprecated. Please use "
          "`tracegrad.utils._pytree.register_pytree_node` instead.", FutureWarning)
    if to_str_fn is not None or maybe_from_str_fn is not None:
        _warn("`to_str_fn` and `maybe_from_str_fn` is deprecated. They are ignored; use "
              "`to_dumpable_context` and `from_dumpable_context` instead.", FutureWarning)
    if cls in SUPPORTED_NODES:
        _warn(f"{cls} is already registered as a pytree node; the new registration replaces it")
    _register(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
              to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
              flatten_with_keys_fn=flatten_with_keys_fn)


def _deregister_pytree_node(cls) -> None:
    """Undo a registration (for tests that register a throwaway type)."""
    with _REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        name = SUPPORTED_SERIALIZED_TYPES.pop(cls).serialized_type_name
        SERIALIZED_TYPE_TO_PYTHON_TYPE.pop(name, None)
        _STRUCTSEQ_TYPES.discard(cls)


def _register_namedtuple(cls, *, serialized_type_name: str) -> None:
    """Give the namedtuple class ``cls`` a name, so specs holding it can be dumped
    (namedtuples are nodes without this; only ``treespec_dumps`` needs it)."""
    _register(cls, _namedtuple_flatten, _namedtuple_unflatten, serialized_type_name=serialized_type_name,
              to_dumpable_context=_namedtuple_dump, from_dumpable_context=_namedtuple_load,
              flatten_with_keys_fn=_namedtuple_flatten_with_keys)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, serialized_type_name=None) -> None:
    """Register a dataclass as a node whose children are its fields (those named in
    ``field_names``, default all ``init`` fields but ``drop_field_names``), keyed by
    ``GetAttrKey``. Mirrors ``torch.utils._pytree.register_dataclass``.
    Raises: TypeError if ``cls`` is not a dataclass and ``field_names`` is not given."""
    if field_names is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"register_dataclass: {cls} is not a dataclass; pass field_names")
        dropped = set(drop_field_names or ())
        field_names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in dropped]
    field_names = list(field_names)

    def flatten(obj):
        return [getattr(obj, n) for n in field_names], None

    def flatten_with_keys(obj):
        return [(GetAttrKey(n), getattr(obj, n)) for n in field_names], None

    register_pytree_node(cls, flatten, lambda values, _: cls(**dict(zip(field_names, values))),
                         serialized_type_name=serialized_type_name, flatten_with_keys_fn=flatten_with_keys)


# ---- the built-in nodes -------------------------------------------------------------------------
def _with_keys(flatten, key):
    """A flatten_with_keys_fn from a flatten_fn and the key entry of child ``i``."""
    def flatten_with_keys(obj):
        children, context = flatten(obj)
        return [(key(obj, context, i), c) for i, c in enumerate(children)], context
    return flatten_with_keys


def _seq_key(obj, context, i):
    return SequenceKey(i)


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_key(obj, context, i):
    keys = context[1] if isinstance(obj, defaultdict) else context
    return MappingKey(keys[i])


def _namedtuple_flatten(t):
    return list(t), type(t)


def _namedtuple_unflatten(values, cls):
    return cls(*values)


def _namedtuple_flatten_with_keys(t):
    return [(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)


def _namedtuple_dump(cls):
    node = SUPPORTED_SERIALIZED_TYPES.get(cls)
    if node is None or node.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"treespec_dumps: the namedtuple class {cls} has no serialized name; "
                                  "register one with _register_namedtuple(cls, serialized_type_name=...)")
    return node.serialized_type_name


def _namedtuple_load(name):
    if name not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"treespec_loads: no namedtuple class is registered as {name!r}; "
                                  "call _register_namedtuple before loading")
    return SERIALIZED_TYPE_TO_PYTHON_TYPE[name]


def _defaultdict_dump(context):
    factory, keys = context
    return {"default_factory_module": factory.__module__, "default_factory_name": factory.__qualname__,
            "dict_context": keys}


def _defaultdict_load(ctx):
    factory = getattr(importlib.import_module(ctx["default_factory_module"]), ctx["default_factory_name"])
    return [factory, ctx["dict_context"]]


_register(tuple, lambda t: (list(t), None), lambda v, _: tuple(v), serialized_type_name="builtins.tuple",
          flatten_with_keys_fn=_with_keys(lambda t: (list(t), None), _seq_key))
_register(list, lambda v: (v, None), lambda v, _: list(v), serialized_type_name="builtins.list",
          flatten_with_keys_fn=_with_keys(lambda v: (v, None), _seq_key))
_register(dict, _dict_flatten, lambda v, keys: dict(zip(keys, v)), serialized_type_name="builtins.dict",
          flatten_with_keys_fn=_with_keys(_dict_flatten, _dict_key))
_register(namedtuple, _namedtuple_flatten, _namedtuple_unflatten, serialized_type_name="collections.namedtuple",
          to_dumpable_context=_namedtuple_dump, from_dumpable_context=_namedtuple_load,
          flatten_with_keys_fn=_namedtuple_flatten_with_keys)
_register(OrderedDict, _dict_flatten, lambda v, keys: OrderedDict(zip(keys, v)),
          serialized_type_name="collections.OrderedDict", flatten_with_keys_fn=_with_keys(_dict_flatten, _dict_key))


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, [d.default_factory, keys]


_register(defaultdict, _defaultdict_flatten, lambda v, ctx: defaultdict(ctx[0], zip(ctx[1], v)),
          serialized_type_name="collections.defaultdict", to_dumpable_context=_defaultdict_dump,
          from_dumpable_context=_defaultdict_load, flatten_with_keys_fn=_with_keys(_defaultdict_flatten, _dict_key))
_register(deque, lambda d: (list(d), d.maxlen), lambda v, maxlen: deque(v, maxlen=maxlen),
          serialized_type_name="collections.deque", flatten_with_keys_fn=_with_keys(lambda d: (list(d), d.maxlen), _seq_key))

STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def _register_structseq(cls, serialized_type_name=None):
    """A tracegrad return type as a node of its own type with context None, as torch's
    structseqs (NOTE [structseq nodes])."""
    _STRUCTSEQ_TYPES.add(cls)
    _register(cls, lambda t: (list(t), None), lambda v, _: cls(*v), serialized_type_name=serialized_type_name,
              flatten_with_keys_fn=_with_keys(lambda t: (list(t), None), _seq_key))


# ---- TreeSpec -----------------------------------------------------------------------------------
def _node_type(tree):
    cls = type(tree)
    if cls in _STRUCTSEQ_TYPES:
        return cls
    # every namedtuple class is one node type, as torch (the class goes in the context)
    return namedtuple if is_namedtuple_class(cls) else cls


class TreeSpec:
    """Mirrors ``torch.utils._pytree.TreeSpec``: the structure of a pytree.

    Attributes: ``type`` (the node's type; ``None`` for a leaf; ``collections.namedtuple`` for
    namedtuples), ``context`` (what unflattening needs: dict keys, the namedtuple class, a deque's
    maxlen...), ``num_nodes``, ``num_leaves``, ``num_children``; ``children()``, ``child(i)``,
    ``children_specs`` (deprecated in torch: FutureWarning), ``is_leaf()``, ``unflatten(leaves)``,
    ``flatten_up_to(tree)``. Equal when types (by name), contexts and children are equal.
    ``repr`` is torch's: ``TreeSpec(dict, ['b', 'a'], [*,\\n  *])``.
    """

    def __init__(self, type, context, children_specs):   # noqa: A002  (torch's argument name)
        self.type = type
        self._context = context
        self._children = children_specs
        if type is None:
            if context is not None or children_specs:
                raise AssertionError("TreeSpec: a leaf (type None) has no context and no children")
            self.num_nodes = self.num_leaves = 1
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)
            self.num_leaves = sum(c.num_leaves for c in children_specs)
        self.num_children = len(children_specs)

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        _warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` or "
              "`treespec.children()`", FutureWarning)
        return self._children

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        return list(self._children)

    def child(self, index: int) -> "TreeSpec":
        return self._children[index]

    def __repr__(self, indent: int = 0) -> str:
        parts = [c.__repr__(indent + 2) for c in self._children]
        inner = (",\n" + " " * (indent + 2)).join(parts)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{inner}])"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        # types compare by name, as torch (a re-imported class still matches)
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        ctx = self._context
        if self.type is defaultdict:
            ctx = (ctx[0], tuple(ctx[1]))
        elif self.type in (dict, OrderedDict):
            ctx = tuple(ctx)
        elif self.type is not None and self.type not in BUILTIN_TYPES:
            ctx = None    # a custom node's context may be unhashable; equal specs still hash equal
        return hash((self.type, ctx, tuple(self._children)))

    def unflatten(self, leaves):
        """Rebuild the pytree from ``leaves`` (any iterable). Raises ValueError on a count mismatch."""
        leaves = leaves if isinstance(leaves, (list, tuple)) else list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): got {len(leaves)} leaves, but the spec holds "
                             f"{self.num_leaves} ({self}); pass one leaf per leaf of the spec")
        return self._build(iter(leaves))

    def _build(self, it):
        if self.is_leaf():
            return next(it)
        return SUPPORTED_NODES[self.type].unflatten_fn([c._build(it) for c in self._children], self._context)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` has this spec as a prefix).
        dict, OrderedDict and defaultdict match each other by keys; other nodes must match type,
        arity and context (a deque's maxlen is ignored). Raises ValueError on a mismatch."""
        out: list = []
        self._up_to(tree, out)
        return out

    def _up_to(self, node, out):
        if self.is_leaf():
            out.append(node)
            return
        kind = _node_type(node)
        if self.type in STANDARD_DICT_TYPES and kind in STANDARD_DICT_TYPES:
            keys = self._context[1] if self.type is defaultdict else self._context
            if set(node) != set(keys):
                missing, extra = set(keys) - set(node), set(node) - set(keys)
                raise ValueError("tree_map/flatten_up_to: dict keys differ from the first tree's"
                                 + (f"; missing key(s): {missing}" if missing else "")
                                 + (f"; extra key(s): {extra}" if extra else ""))
            children = [node[k] for k in keys]
        else:
            if kind != self.type:
                raise ValueError(f"tree_map/flatten_up_to: node type mismatch; expected {self.type!r}, "
                                 f"but got {kind!r}")
            children, context = SUPPORTED_NODES[kind].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(f"tree_map/flatten_up_to: node arity mismatch; expected {self.num_children}, "
                                 f"but got {len(children)}")
            if kind is not deque and context != self._context:
                raise ValueError(f"tree_map/flatten_up_to: node context mismatch for {self.type!r}; "
                                 f"expected {self._context!r}, but got {context!r}")
        for child, spec in zip(children, self._children):
            spec._up_to(child, out)


PyTreeSpec = TreeSpec


class LeafSpec(TreeSpec):
    """Mirrors ``torch.utils._pytree.LeafSpec``: the spec of a leaf, printed ``*``. Constructing
    one warns FutureWarning as torch (use ``treespec_leaf()`` or ``spec.is_leaf()``)."""

    def __init__(self):
        _warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, TreeSpec) and "
              "treespec.is_leaf()` instead. Build a leaf with treespec_leaf().", FutureWarning)
        super().__init__(None, None, [])

    def __repr__(self, indent: int = 0) -> str:
        return "*"


with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    _LEAF_SPEC = LeafSpec()     # every leaf shares one spec


def treespec_leaf() -> LeafSpec:
    """The spec of a leaf."""
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /) -> TreeSpec:
    """A tuple spec from child specs. Raises ValueError for a child that is not a TreeSpec."""
    children = list(iterable)
    if not all(isinstance(c, TreeSpec) for c in children):
        raise ValueError(f"treespec_tuple: expected TreeSpec children, got {children!r}")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping=(), /, **kwargs) -> TreeSpec:
    """A dict spec from child specs by key. Raises ValueError for a value that is not a TreeSpec."""
    d = dict(mapping, **kwargs)
    if not all(isinstance(c, TreeSpec) for c in d.values()):
        raise ValueError(f"treespec_dict: expected TreeSpec values, got {d!r}")
    return TreeSpec(dict, list(d), list(d.values()))


# ---- flatten / unflatten / map ------------------------------------------------------------------
def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` holds or its type is not a registered node.
    Mirrors ``torch.utils._pytree.tree_is_leaf``."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


def tree_flatten(tree, is_leaf=None):
    """``(leaves, TreeSpec)``, leaves depth first in each node's order (dicts: insertion order).
    ``is_leaf(node)`` true stops descent. Mirrors ``torch.utils._pytree.tree_flatten``.
    >>> tree_flatten({'b': 1, 'a': (2, None)})[0]
    [1, 2, None]
    """
    leaves: list = []

    def walk(node):
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        kind = _node_type(node)
        children, context = SUPPORTED_NODES[kind].flatten_fn(node)
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """Inverse of ``tree_flatten``. The two arguments may come in either order, as torch.
    Raises TypeError if neither is a TreeSpec, ValueError on a leaf-count mismatch."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"tree_unflatten: expected `treespec` to be a TreeSpec, got {type(treespec)}")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """An iterator over the leaves of ``tree`` (lazy ``tree_leaves``)."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    for child in SUPPORTED_NODES[_node_type(tree)].flatten_fn(tree)[0]:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree`` in flatten order. Mirrors ``torch.utils._pytree.tree_leaves``."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    """The TreeSpec of ``tree``. Mirrors ``torch.utils._pytree.tree_structure``."""
    return tree_flatten(tree, is_leaf)[1]


def _flat_args(tree, rests, is_leaf):
    leaves, spec = tree_flatten(tree, is_leaf)
    return [leaves] + [spec.flatten_up_to(r) for r in rests], spec


def tree_map(func, tree, *rests, is_leaf=None):
    """A new tree of ``func(leaf, *matching subtrees of rests)``; the structure is ``tree``'s and
    each of ``rests`` must have it as a prefix. Mirrors ``torch.utils._pytree.tree_map``.
    Raises ValueError when a tree in ``rests`` does not match.
    >>> tree_map(lambda x: x + 1, {'x': 7, 'y': (42, 64)})
    {'x': 8, 'y': (43, 65)}
    """
    flat, spec = _flat_args(tree, rests, is_leaf)
    return spec.unflatten(map(func, *flat))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call ``func`` on every leaf for its side effect and return ``tree`` itself."""
    flat, _ = _flat_args(tree, rests, is_leaf)
    collections.deque(map(func, *flat), maxlen=0)
    return tree


def map_only(type_or_types_or_pred, /):
    """Decorator: ``func`` applies to values passing the type test or predicate; others pass
    through. Raises TypeError for anything but a type, a tuple of types or a callable."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x):
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("map_only: the argument must be a type, a tuple of types, or a callable")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    """``tree_map`` applying ``func`` only to leaves of the given type(s) or passing the predicate."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    """``tree_map_`` applying ``func`` only to leaves of the given type(s) or passing the predicate."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for every leaf (stops at the first false)."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for some leaf (stops at the first true)."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    """``tree_all`` over the leaves of the given type(s) only."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    """``tree_any`` over the leaves of the given type(s) only."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """``tree`` (a prefix of ``treespec``'s structure) broadcast to one value per leaf of the
    spec, or None when it is not a prefix (vmap's in_dims rule)."""
    full = treespec.unflatten([0] * treespec.num_leaves)
    out: list = []
    try:
        tree_map_(lambda x, sub: out.extend([x] * tree_structure(sub, is_leaf).num_leaves), tree, full,
                  is_leaf=is_leaf)
    except ValueError:
        return None
    return out


def arg_tree_leaves(*args, **kwargs) -> list:
    """The leaves of ``(args, kwargs)`` without building their spec."""
    return [x for a in (*args, *kwargs.values()) for x in tree_iter(a)]


# ---- key paths ----------------------------------------------------------------------------------
def _key_paths(path, tree, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        yield path, tree
        return
    node = SUPPORTED_NODES.get(_node_type(tree))
    if node is None:
        yield path, tree
        return
    if node.flatten_with_keys_fn is None:
        raise ValueError(f"tree_flatten_with_path: {node.type} has no flatten_with_keys_fn; pass one to "
                         "register_pytree_node")
    for key, child in node.flatten_with_keys_fn(tree)[0]:
        yield from _key_paths((*path, key), child, is_leaf)


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key path, leaf)...], TreeSpec)``; a key path is a tuple of SequenceKey/MappingKey/
    GetAttrKey. Raises ValueError for a registered type without ``flatten_with_keys_fn``.
    Mirrors ``torch.utils._pytree.tree_flatten_with_path``."""
    return list(_key_paths((), tree, is_leaf)), tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    """``[(key path, leaf)...]``. Mirrors ``torch.utils._pytree.tree_leaves_with_path``."""
    return list(_key_paths((), tree, is_leaf))


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """``tree_map`` whose ``func`` receives the key path first: ``func(path, leaf, *rest_subtrees)``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    rest_flat = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(kp, x, *xs) for (kp, x), *xs in zip(pairs, *rest_flat))


# ---- serialization ------------------------------------------------------------------------------
class _EnumEncoder(json.JSONEncoder):
    # an Enum in a context is written as its class path and member name, as torch
    def default(self, obj):
        if isinstance(obj, enum.Enum):
            return {"__enum__": True, "fqn": f"{obj.__class__.__module__}:{obj.__class__.__qualname__}",
                    "name": obj.name}
        return super().default(obj)


def _enum_hook(obj):
    if "__enum__" not in obj:
        return obj
    module, _, qualname = obj["fqn"].partition(":")
    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return cls[obj["name"]]


def _to_json(spec):
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    node = SUPPORTED_SERIALIZED_TYPES.get(spec.type)
    if node is None or node.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"treespec_dumps: {spec.type} has no serialized type name; register it "
                                  "with register_pytree_node(..., serialized_type_name=...)")
    if node.to_dumpable_context is not None:
        context = node.to_dumpable_context(spec._context)
    else:
        try:
            context = json.dumps(spec._context, cls=_EnumEncoder)
        except TypeError as e:
            raise TypeError(f"treespec_dumps: the context of {spec.type} is not JSON-serializable; register "
                            "to_dumpable_context/from_dumpable_context for it") from e
    return {"type": node.serialized_type_name, "context": context,
            "children_spec": [_to_json(c) for c in spec._children]}


def _from_json(d):
    if d["type"] is None and d["context"] is None and not d["children_spec"]:
        return _LEAF_SPEC
    cls = SERIALIZED_TYPE_TO_PYTHON_TYPE.get(d["type"])
    if cls is None:
        raise NotImplementedError(f"treespec_loads: no pytree node is registered as {d['type']!r}")
    node = SUPPORTED_SERIALIZED_TYPES[cls]
    if node.from_dumpable_context is not None:
        context = node.from_dumpable_context(d["context"])
    else:
        context = json.loads(d["context"], object_hook=_enum_hook)
    return TreeSpec(cls, context, [_from_json(c) for c in d["children_spec"]])


def _check_protocol(protocol):
    if protocol != DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL:
        raise ValueError(f"treespec serialization: unknown protocol {protocol}; available protocols: "
                         f"[{DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL}]")


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """The spec as a JSON string ``[protocol, {"type", "context", "children_spec"}]``, the format
    torch writes (so ``torch.utils._pytree.treespec_loads`` reads ours and the other way round).
    Raises NotImplementedError for a node type without a serialized name, TypeError for a
    context JSON cannot hold, ValueError for an unknown protocol."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps: expected a TreeSpec, got {type(treespec)}")
    protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL if protocol is None else protocol
    _check_protocol(protocol)
    return json.dumps((protocol, _to_json(treespec)), cls=_EnumEncoder)


@functools.lru_cache
def treespec_loads(serialized: str) -> TreeSpec:
    """Inverse of ``treespec_dumps``. Raises ValueError for an unknown protocol,
    NotImplementedError for a type name nothing registered."""
    protocol, body = json.loads(serialized)
    _check_protocol(protocol)
    return _from_json(body)


class _Asterisk(str):
    # a leaf placeholder that prints bare: {'a': *}
    def __repr__(self):
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The spec drawn as its container with ``*`` leaves: ``{'b': *, 'a': [*, *]}``."""
    return repr(treespec.unflatten([_Asterisk("*")] * treespec.num_leaves))


# ---- tracegrad's own containers -----------------------------------------------------------------
def _register_tracegrad_types():
    from .._tensor.tensor import Size
    from .. import _linalg_decomp, _linalg_functions, linalg
    from .._api.reduction import return_types

    # as torch: named "torch.Size" (dumped specs read in either library), and it unflattens to a
    # plain tuple (a tree_map may put non-ints in it)
    _register(Size, lambda s: (list(s), None), lambda v, _: tuple(v), serialized_type_name="torch.Size",
              flatten_with_keys_fn=_with_keys(lambda s: (list(s), None), _seq_key))
    seen = set()
    for holder in (return_types, linalg, _linalg_functions, _linalg_decomp):
        for obj in vars(holder).values():
            if is_namedtuple_class(obj) and obj not in seen and (holder is return_types or obj.__module__ == holder.__name__):
                seen.add(obj)
                _register_structseq(obj)


_register_tracegrad_types()
