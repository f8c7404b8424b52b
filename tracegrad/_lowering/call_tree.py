"""A compiled call's arguments and results as JAX pytrees (DESIGN 2.4).

``flatten`` turns a call's ``(args, kwargs)`` (or its result) into leaves and a treedef the
way a compiled program needs them: plain dicts keep insertion order (JAX's pytrees sort keys),
dict subclasses, ``functools.partial`` and sparse COO tensors are nodes, a plain Python object
of a data-container class is a node of its attributes (NOTE [data container arguments]).
``plain`` rebuilds the user's containers from such a tree. On the way out, ``keep_outside``
marks in a result the lists and dicts that existed before the call (``Kept``: returned as
those objects), the arguments' own containers (``ArgBox``, filled per call by
``fill_arg_boxes``) and an object returned at two places (``Shared``/``Again``: NOTE [one
object returned twice]), so every call returns what eager returns, object identity included.
"""
from __future__ import annotations

import collections
import collections.abc
import functools

import jax

from .._api.sparse_coo import SparseCooTensor, make_sparse
from .._tensor.tensor import Tensor
from . import result_objects


def flatten(tree, args=False):
    """Leaves and treedef of arguments or results; plain dicts keep their insertion order (a
    JAX pytree sorts dict keys: a returned ``{"loss": .., "acc": ..}`` came back reordered, and
    a dict argument was iterated in another order inside the trace than eagerly). ``args``: the
    call's arguments (True, or the compiled function's data-container classes, a frozenset:
    NOTE [data container arguments]), where a sparse COO tensor is its indices and values
    (``SparseArg``)."""
    return jax.tree_util.tree_flatten(ordered_args(tree, args) if type(args) is frozenset else ordered(tree, args),
                                      is_leaf=_leaf)


def _leaf(x):
    # an iterator (an argument: ``zip(...)``, ``dict.items()``'s iterator, a generator; a
    # result: a generator function's, the graph break ``_out_recipe`` raises for it) is one
    # leaf, as JAX already made it, but without its DeprecationWarning (an error in a later JAX)
    return isinstance(x, (Tensor, collections.abc.Iterator))


# NOTE [data container arguments]: an argument that is an instance of a plain class (a
# dataclass, a ``class Batch`` holding tensors, a SimpleNamespace) is one opaque leaf, keyed by
# identity: a new batch object per call (a collate function's output) traced a program per call
# until ``cache_size_limit`` made the function eager, where torch.compile guards the object's
# type and the attributes it reads and traces its tensors as inputs. Keyed by value instead,
# a long-lived object the step changes (``state.step += 1`` on a train-state object) would be
# a rebuilt copy (the change lost: a graph break) and its numbers new keys. So the choice is
# made per class, by what the calls do: once a call passes a different instance of a class at
# a place where a cached program had one (``compiler._renewed_containers``), that class is a
# data container of the compiled function and its instances are pytree nodes of the arguments
# (``Rebuilt``: their attributes are children, tensors data arguments, numbers keyed by value),
# rebuilt around the stand-ins for the trace without calling ``__init__`` (``plain``). A call
# that changes one (an attribute set, found by ``arguments_changed``) runs eagerly
# (``ContainerChanged``), and the function keys objects by identity again from then on (a
# holder the step updates keeps its own program); one that returns it gets the caller's object
# (``ArgBox``). An
# object met twice in one call's arguments (``f(b, b)``, ``a.x = a``), or nested deeper than
# ``_OBJECT_DEPTH``, leaves the whole call keyed by identity (its ``is`` would differ).
_OBJECT_DEPTH = 8


class _Twice(Exception):
    """A data-container object met twice while flattening one call's arguments."""


class _Walk:
    """One flattening of a call's arguments with data-container ``classes``: the ids of the
    objects already flattened (``_Twice`` on a second meeting)."""

    __slots__ = ("classes", "seen", "depth")

    def __init__(self, classes):
        self.classes, self.seen, self.depth = classes, set(), 0


def ordered_args(tree, containers: frozenset):
    """``ordered(tree, True)`` with the instances of the ``containers`` classes as ``Rebuilt``
    nodes (NOTE [data container arguments]), unless one is met twice or nested too deep."""
    if containers:
        try:
            return ordered(tree, _Walk(containers))
        except _Twice:
            pass
    return ordered(tree, True)


def _container_arg(x, walk):
    if id(x) in walk.seen or walk.depth >= _OBJECT_DEPTH:
        raise _Twice
    walk.seen.add(id(x))
    walk.depth += 1
    try:
        return result_objects.Rebuilt(type(x), {}, {k: ordered(v, walk) for k, v in result_objects._attrs(x).items()})
    finally:
        walk.depth -= 1


def container_instance(x) -> bool:
    """Whether argument ``x`` may be a data container (NOTE [data container arguments]): an
    instance of a plain Python class that ``result_objects`` can rebuild, not a list, dict or
    tuple (those are containers already)."""
    return not isinstance(x, (list, dict, tuple, set)) and result_objects._candidate(x)


def unflatten(treedef, leaves):
    return plain(jax.tree_util.tree_unflatten(treedef, leaves), {})


class Kept:
    """A list or dict the function returned that existed before the call: returned as that
    object after every call (a result leaf, not rebuilt), as eager returns it."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


class ArgBox:
    """A list or dict among the call's arguments that the function returned (``return x, xs``):
    after every call, the caller's own object at ``path`` in that call's ``(args, kwargs)``, as
    eager returns it, not a copy rebuilt from the flat arguments (``fill_arg_boxes``)."""

    __slots__ = ("path",)

    def __init__(self, path):
        self.path = path


class _Item:
    """An item key in an ``ArgBox`` path read past the container's class (a subclass that
    overrides ``__getitem__``: ``_raw_items``)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


class _Attr:
    """An attribute name in an ``ArgBox`` path (a data container argument's attribute)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def argument_boxes(given, rebuilt, path, out):
    """``out[id(c)] = path`` for each list/dict ``c`` of ``rebuilt`` (the copies of the
    arguments the trace passed), and each sparse tensor rebuilt around stand-ins, with the place
    of the caller's own object in ``given``."""
    t = type(rebuilt)
    if t is SparseCooTensor and type(given) is t and rebuilt is not given:
        out[id(rebuilt)] = path      # rebuilt around stand-ins (``SparseArg``): returned, the caller's
        return
    if t is type(given) and rebuilt is not given and container_instance(rebuilt):
        out[id(rebuilt)] = path      # a data container rebuilt for the trace: returned, the caller's
        was = result_objects._attrs(given)
        for k, v in result_objects._attrs(rebuilt).items():
            if k in was:
                argument_boxes(was[k], v, (*path, _Attr(k)), out)
        return
    if t is not type(given) or not (
            t in (list, dict, tuple) or _plain_sequence_subclass(rebuilt) or _plain_dict_subclass(rebuilt)):
        return
    was, now = _raw_items(given), _raw_items(rebuilt)
    if len(was) != len(now):
        return
    if t is not tuple:         # (a list, a dict, or a subclass of one of the three: SeqArg)
        out[id(rebuilt)] = path
    for k in (now if isinstance(now, dict) else range(len(now))):
        argument_boxes(was[k], now[k], (*path, _Item(k) if t not in (list, dict, tuple) else k), out)


def fill_arg_boxes(result, call, memo=None):
    """``result`` with each ``ArgBox`` replaced by the object at its path in ``call`` (this
    call's ``(args, kwargs)``), inside namedtuples and the objects the call made (NOTE
    [returned objects]: built for this call, so filled in place) too; a container at two places
    stays one (NOTE [one object returned twice])."""
    t = type(result)
    if t is ArgBox:
        obj = call
        for k in result.path:
            obj = getattr(obj, k.name) if type(k) is _Attr else _raw_items(obj)[k.key] if type(k) is _Item else obj[k]
        return obj
    if t not in (dict, list, tuple) and not is_namedtuple(result) \
            and not result_objects.result_candidate(result):
        return result
    memo = {} if memo is None else memo
    if id(result) in memo:
        return memo[id(result)]
    # a container with no ``ArgBox`` inside stays the very object (one an outside object holds)
    if t is dict:
        out = memo[id(result)] = {}
        out.update((k, fill_arg_boxes(v, call, memo)) for k, v in result.items())
        if all(out[k] is v for k, v in result.items()):
            out = memo[id(result)] = result
        return out
    if t is list:
        out = memo[id(result)] = []
        out.extend(fill_arg_boxes(v, call, memo) for v in result)
        if all(a is b for a, b in zip(out, result)):
            out = memo[id(result)] = result
        return out
    if t is tuple or is_namedtuple(result):
        vals = [fill_arg_boxes(v, call, memo) for v in result]
        out = result if all(a is b for a, b in zip(vals, result)) else (tuple(vals) if t is tuple else t(*vals))
        memo[id(result)] = out
        return out
    memo[id(result)] = result
    out = memo[id(result)] = result_objects.refill(result, lambda v: fill_arg_boxes(v, call, memo))
    return out


# NOTE [one object returned twice]: a JAX pytree has no identity, so a list, dict or object the
# call made and returned at two places (``return ys, ys``; ``return a, NS(inner=a)``;
# ``return out, out.ys``) came back from the program as two copies (eagerly one object: an
# append through one shows in the other). The first place is now a ``Shared`` node, the later
# ones ``Again`` leaves with its tag; ``plain`` hands back the first one's object there.
class Shared:
    """The first of the places a returned list, dict or made object occupies (``tag``)."""

    __slots__ = ("tag", "child")

    def __init__(self, tag, child):
        self.tag, self.child = tag, child


jax.tree_util.register_pytree_node(Shared, lambda s: ((s.child,), s.tag), lambda tag, ch: Shared(tag, ch[0]))


class Again:
    """A later place of a returned object (a constant result leaf): ``Shared`` ``tag``'s object."""

    __slots__ = ("tag",)

    def __init__(self, tag):
        self.tag = tag


def is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _repeated(result, made) -> set:
    """Ids of the lists, dicts and made objects (``made``) found at more than one place of
    ``result`` (NOTE [one object returned twice])."""
    seen, again = set(), set()

    def walk(v, depth):
        t = type(v)
        shared = t in (list, dict) or id(v) in made
        if shared:
            if id(v) in seen:
                again.add(id(v))
                return
            seen.add(id(v))
        if depth == 0:
            return
        if t is dict:
            vals = v.values()
        elif t in (list, tuple) or is_namedtuple(v):
            vals = v
        elif id(v) in made:
            vals = result_objects.values_of(v)
        else:
            return
        for e in vals:
            walk(e, depth - 1)
    walk(result, 12)
    return again


def keep_outside(result, outside, kept, boxes, made=frozenset(), shared=None):
    """``result`` with the lists and dicts in ``outside`` (``guards.outside_containers``) as
    ``Kept`` leaves, the argument copies in ``boxes`` (``argument_boxes``) as ``ArgBox``
    leaves and the objects the call made (``made``: NOTE [returned objects]) as ``Rebuilt``
    nodes; ``kept`` gets the guards of those it holds (their places), ``kept[ArgBox]`` whether
    an ``ArgBox`` was made. A list, dict or made object at two places is a ``Shared`` node
    then ``Again`` leaves (NOTE [one object returned twice])."""
    if shared is None:
        shared = {"ids": _repeated(result, made) if made or not _flat_result(result) else set(), "tags": {}}
    i = id(result)
    if i in shared["ids"]:
        if i in shared["tags"]:
            return Again(shared["tags"][i])
        tag = shared["tags"][i] = len(shared["tags"])
        return Shared(tag, _keep_one(result, outside, kept, boxes, made, shared))
    return _keep_one(result, outside, kept, boxes, made, shared)


def _flat_result(result) -> bool:
    """Whether ``result`` holds no list or dict inside a container (nothing to repeat)."""
    t = type(result)
    if t in (tuple, list) or is_namedtuple(result):
        return all(type(v) not in (list, dict, tuple) and not is_namedtuple(v) for v in result)
    return t is not dict


def _keep_one(result, outside, kept, boxes, made, shared):
    def again(v):
        return keep_outside(v, outside, kept, boxes, made, shared)
    if id(result) in boxes:      # a list, dict, sparse tensor or data container argument's copy
        kept[ArgBox] = True
        return ArgBox(boxes[id(result)])
    node = result_objects.as_node(result, made, again)
    if node is not None:
        return node
    t = type(result)
    if t in (list, dict) and id(result) in outside:
        obj, check = outside[id(result)]
        kept[id(result)] = check
        return Kept(obj)
    if t is dict:
        return {k: again(v) for k, v in result.items()}
    if t in (list, tuple):
        return t(again(v) for v in result)
    if is_namedtuple(result):     # a made object inside a namedtuple is rebuilt too
        return t(*(again(v) for v in result))
    return result


def arguments_changed(args, kwargs, treedef, leaves, containers=frozenset()) -> bool:
    """Whether the call changed the list/dict/data-container arguments it was given (their
    rebuilt copies): other leaves, or another structure. Holds no leaf afterwards (escape
    analysis counts them)."""
    now, now_def = flatten((args, kwargs), containers)
    return now_def != treedef or any(x is not y for x, y in zip(now, leaves))


class InOrder(dict):
    """A plain dict inside ``flatten``: a pytree node whose children keep insertion order.
    ``like`` is None for a dict, else ``(OrderedDict or defaultdict, default_factory)``."""

    def __init__(self, items, like=None):
        super().__init__(items)
        self.like = like


class KeyById:
    """A tensor key of a dict among the arguments or results, in ``InOrder``'s treedef: equal to
    another only when it holds the same tensor. The treedef is in the compiled function's cache
    key, and comparing two of them compared their keys with ``==``: a tensor's ``==`` is an op,
    and ``{x: y, 3: z}`` after ``{3: z, x: y}`` raised "Boolean value of Tensor ... ambiguous"
    from the cache lookup (DictTests.test_dict_order_keys_tensors, round 29). Holds the tensor,
    as torch's guard on the key's identity does."""

    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t

    def __eq__(self, other):
        return type(other) is KeyById and other.t is self.t

    def __hash__(self):
        return id(self.t)


def _in_order_aux(d):
    keys = tuple(d)
    for k in keys:      # a loop, not any(): this runs for every dict argument of every call
        if isinstance(k, Tensor):
            keys = tuple(KeyById(k) if isinstance(k, Tensor) else k for k in keys)
            break
    return list(d.values()), (keys, d.like)


def _in_order_rebuild(aux, values):
    keys = aux[0]
    if any(type(k) is KeyById for k in keys):
        keys = tuple(k.t if type(k) is KeyById else k for k in keys)
    return InOrder(zip(keys, values), aux[1])


jax.tree_util.register_pytree_node(InOrder, _in_order_aux, _in_order_rebuild)


class SparseArg:
    """A sparse COO tensor among a call's arguments inside ``flatten(..., args=True)``: a pytree
    node whose children are its indices and values, fed to the program as data arguments (keyed
    by their shapes and dtypes; ``like``, the size and coalesced flag, is in the treedef), and
    rebuilt around the stand-ins for the trace (``plain``). Keyed by identity instead, a
    sparse batch made anew for every call (SpyTorch's ``sparse_data_generator``, read by
    ``to_dense`` inside the step) traced a program per call until ``cache_size_limit`` made the
    function eager. Ops that need the index values on the host (``coalesce``, ``+``) still
    raise while tracing: that signature runs eagerly, as before. One whose values require grad
    keeps the identity key (its ``.grad`` is the caller's values' gradient)."""

    __slots__ = ("indices", "values", "like")

    def __init__(self, indices, values, like):
        self.indices, self.values, self.like = indices, values, like


jax.tree_util.register_pytree_node(SparseArg, lambda s: ((s.indices, s.values), s.like),
                                   lambda like, children: SparseArg(children[0], children[1], like))


class PartialArg:
    """A ``functools.partial`` among a call's arguments inside ``flatten(..., args=True)``: a
    pytree node whose children are its bound arguments and keywords (tensors become data
    arguments, numbers are keyed by value) and whose function is in the treedef (by identity),
    rebuilt around the stand-ins for the trace (``plain``). Keyed as one object by identity, a
    partial made anew for every call (``step(partial(loss, target=y), x)``) traced a program
    per call until ``cache_size_limit`` made the function eager (torch's dynamo ports)."""

    __slots__ = ("func", "args", "keywords")

    def __init__(self, func, args, keywords):
        self.func, self.args, self.keywords = func, args, keywords


jax.tree_util.register_pytree_node(PartialArg, lambda p: ((p.args, p.keywords), p.func),
                                   lambda func, children: PartialArg(func, children[0], children[1]))


class DictViewArg:
    """A dict view (``d.items()``, ``d.keys()``, ``d.values()``) among a call's arguments: a
    pytree node over the dict's entries (``entries``, in order), rebuilt for the trace as the
    same view (``kind``) of a dict of the stand-ins (``plain``). Keyed as one object by
    identity, a view made anew for every call (``step(x, params.items())``) traced a program per
    call until ``cache_size_limit`` made the function eager (torch's dynamo ports)."""

    __slots__ = ("kind", "entries")

    def __init__(self, kind, entries):
        self.kind, self.entries = kind, entries


jax.tree_util.register_pytree_node(DictViewArg, lambda v: ((v.entries,), v.kind),
                                   lambda kind, children: DictViewArg(kind, children[0]))
_DICT_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


class SeqArg:
    """A list or tuple subclass instance among a call's arguments (``class Batch(list)``) that
    is its items alone (``_plain_sequence_subclass``): a pytree node over its items, its class
    in the treedef, rebuilt around the stand-ins for the trace (``plain``) without its
    ``__init__``. An opaque leaf instead was keyed by identity, so a new batch each call traced
    a program per call until ``cache_size_limit`` made the function eager (torch.compile guards
    the type and traces the items; round 36, test_list.py's ``thetype`` subclasses)."""

    __slots__ = ("cls", "items")

    def __init__(self, cls, items):
        self.cls, self.items = cls, items


jax.tree_util.register_pytree_node(SeqArg, lambda s: (s.items, s.cls), lambda cls, ch: SeqArg(cls, list(ch)))


def _raw_items(x) -> list:
    """The items a list, tuple or dict (subclass) stores, by position or key, whatever its class
    overrides (``__iter__``, ``__getitem__``, ``__len__``)."""
    if isinstance(x, dict):
        return dict(dict.items(x))
    return list(tuple.__iter__(x)) if isinstance(x, tuple) else list(list.__iter__(x))


def _plain_sequence_subclass(x) -> bool:
    """Whether argument ``x`` is an instance of a user's ``list`` or ``tuple`` subclass that is
    its items alone: no namedtuple, no instance attributes, its builtin base's ``__new__``, not
    a library class (``torch.Size``)."""
    t = type(x)
    if t is list or t is tuple or not isinstance(x, (list, tuple)) or hasattr(t, "_fields"):
        return False
    mod = getattr(t, "__module__", "") or ""
    return (t.__new__ is (tuple.__new__ if isinstance(x, tuple) else list.__new__)
            and mod != "builtins" and not mod.startswith(("tracegrad", "jax", "numpy"))
            and not result_objects._attrs(x))


_DICT_SUBCLASS = "dict subclass"     # ``InOrder.like``'s factory slot for one (``plain``)


def _plain_dict_subclass(x) -> bool:
    """Whether argument ``x`` is an instance of a user's ``dict`` subclass that is its items
    alone (no instance attributes, no ``__slots__`` values, ``dict.__new__``): ifl-tpp's
    ``Batch``, a dict with attribute access. Such an argument is flattened like a dict and
    rebuilt around the stand-ins (``plain``) with the class kept; an opaque object instead was
    keyed by identity, so a new batch each call traced a program per call until
    ``cache_size_limit`` made the function eager."""
    t = type(x)
    return (isinstance(x, dict) and t.__module__ != "builtins" and t.__new__ is dict.__new__
            and not isinstance(x, (collections.OrderedDict, collections.defaultdict, collections.Counter))
            and type(getattr(x, "__dict__", None)) is dict and not x.__dict__)


def ordered(x, args=False):
    # NOTE [result containers keep their order]: JAX sorts the keys of a dict and a
    # defaultdict, and flattens an OrderedDict's or a namedtuple's children without coming
    # back here, so a dict returned inside a namedtuple or an OrderedDict, or a returned
    # defaultdict, came back with its keys sorted (eagerly: insertion order).
    t = type(x)
    if t is dict or t is collections.OrderedDict or t is collections.defaultdict:
        return InOrder(((k, ordered(v, args)) for k, v in x.items()),
                        None if t is dict else (t, getattr(x, "default_factory", None)))
    if t is list:
        return [ordered(v, args) for v in x]
    if t is tuple:
        return tuple(ordered(v, args) for v in x)
    if isinstance(x, tuple) and hasattr(t, "_fields"):     # a namedtuple
        return t(*(ordered(v, args) for v in x))
    if t is result_objects.Rebuilt:
        return result_objects.Rebuilt(x.cls, {k: ordered(v) for k, v in x.items.items()},
                                      {k: ordered(v) for k, v in x.attrs.items()})
    if args and t is not dict and _plain_dict_subclass(x):
        return InOrder(((k, ordered(v, args)) for k, v in x.items()), (t, _DICT_SUBCLASS))
    if args and _plain_sequence_subclass(x):
        # its stored items (an ``__iter__`` the class overrides runs on the rebuilt copy)
        return SeqArg(t, [ordered(v, args) for v in _raw_items(x)])
    if t is Shared:
        return Shared(x.tag, ordered(x.child))
    if args and t is SparseCooTensor and not x.requires_grad:
        return SparseArg(x._sp_indices, x._sp_values, (tuple(x._sp_size), x._sp_coalesced))
    if type(args) is _Walk and t in args.classes:
        return _container_arg(x, args)
    if args and t in _DICT_VIEWS:
        return DictViewArg(_DICT_VIEWS[t], ordered(dict(x.mapping), args))
    if args and t is functools.partial and not x.__dict__:
        return PartialArg(x.func, tuple(ordered(v, args) for v in x.args),
                           ordered(dict(x.keywords), args))
    return x


def plain(x, memo=None):
    t = type(x)
    if t is Kept:
        return x.obj
    if t is SparseArg:
        return make_sparse(x.indices, x.values, *x.like)
    if t is PartialArg:
        return functools.partial(x.func, *plain(x.args, memo), **plain(x.keywords, memo))
    if t is DictViewArg:
        return getattr(plain(x.entries, memo), x.kind)()
    if t is Shared or t is Again:     # NOTE [one object returned twice]
        memo = {} if memo is None else memo
        if t is Again:
            return memo[x.tag]
        child = x.child
        if type(child) is list:          # registered before its items: one holding itself
            out = memo[x.tag] = []
            out.extend(plain(v, memo) for v in child)
            return out
        if type(child) is result_objects.Rebuilt:
            return result_objects.build(child, lambda v: plain(v, memo),
                                        register=lambda obj: memo.__setitem__(x.tag, obj))
        out = memo[x.tag] = plain(child, memo)
        return out
    if t is result_objects.Rebuilt:
        return result_objects.build(x, lambda v: plain(v, memo))
    if t is SeqArg:
        vals = [plain(v, memo) for v in x.items]
        if issubclass(x.cls, tuple):
            return tuple.__new__(x.cls, vals)
        obj = list.__new__(x.cls)
        list.extend(obj, vals)
        return obj
    if t is InOrder:
        items = ((k, plain(v, memo)) for k, v in x.items())
        if x.like is None:
            return dict(items)
        cls, factory = x.like
        if factory is _DICT_SUBCLASS:     # without the class's __init__ (eager ran it, with the caller's values)
            obj = dict.__new__(cls)
            dict.update(obj, items)
            return obj
        return cls(factory, items) if cls is collections.defaultdict else cls(items)
    if t is list:
        return [plain(v, memo) for v in x]
    if t is tuple:
        return tuple(plain(v, memo) for v in x)
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return t(*(plain(v, memo) for v in x))
    return x
