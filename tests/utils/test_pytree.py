"""tracegrad.utils._pytree against torch.utils._pytree (torch 2.13) on the same trees.

Each tree is built by ``build(mod)`` once with torch and once with tracegrad (Tensors, Size and
return types come from the module under test); flatten order, leaves, TreeSpec repr, counts,
pprint, key paths, JSON dumps and the exception classes must agree.
"""
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from uuid import SafeUUID

import numpy as np
import pytest

import tracegrad
import tracegrad.utils._pytree as tp

torch = pytest.importorskip("torch")
import torch.utils._pytree as p  # noqa: E402

Point = namedtuple("Point", "x y")
Other = namedtuple("Other", "x y")

TREES = {
    "none": lambda m: None,
    "scalar": lambda m: 3,
    "tensor": lambda m: m.tensor([1.0, 2.0]),
    "nested": lambda m: [1, (2, None), {"b": 3, "a": m.tensor(4)}],
    "dict_order": lambda m: {"b": 1, "a": [2, 3], "c": {"z": 4, "y": 5}},
    "namedtuple": lambda m: Point(1, (2, m.ones(2))),
    "ordereddict": lambda m: OrderedDict(z=1, a=[2]),
    "defaultdict": lambda m: defaultdict(list, b=1, a=(2,)),
    "deque": lambda m: deque([1, [2]], maxlen=4),
    "empties": lambda m: [(), [], {}, [[]], None],
    "size": lambda m: {"shape": m.Size([2, 3])},
    "return_type": lambda m: m.max(m.tensor([[1.0, 5.0], [3.0, 2.0]]), 1),
    "sort": lambda m: [m.sort(m.tensor([3, 1, 2]))],
    "slogdet": lambda m: m.linalg.slogdet(m.eye(2)),
}
RETURN_TYPES = ("return_type", "sort", "slogdet")


def _plain(x):
    if isinstance(x, (torch.Tensor, tracegrad.Tensor)):
        return ("tensor", np.asarray(x.detach().numpy()).tolist())
    if isinstance(x, (torch.Size, tracegrad.Size)):
        return ("size", tuple(x))
    return x


def _outcome(fn):
    try:
        return fn()
    except Exception as e:     # the class is what must agree
        return type(e)


@pytest.mark.parametrize("name", sorted(TREES))
def test_flatten_matches_torch(name):
    ours, theirs = TREES[name](tracegrad), TREES[name](torch)
    (l1, s1), (l2, s2) = tp.tree_flatten(ours), p.tree_flatten(theirs)
    assert [_plain(x) for x in l1] == [_plain(x) for x in l2]
    assert repr(s1) == repr(s2)
    assert (s1.num_nodes, s1.num_leaves, s1.num_children, s1.is_leaf()) == \
           (s2.num_nodes, s2.num_leaves, s2.num_children, s2.is_leaf())
    if name not in RETURN_TYPES:   # their own repr differs: torch prints structseqs over lines
        assert tp.treespec_pprint(s1) == p.treespec_pprint(s2)
    assert [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(ours)] == \
           [p.keystr(k) for k, _ in p.tree_leaves_with_path(theirs)]
    assert [_plain(x) for x in tp.tree_leaves(ours)] == [_plain(x) for x in l1]
    back, torch_back = tp.tree_unflatten(l1, s1), p.tree_unflatten(l2, s2)
    assert repr(tp.tree_structure(back)) == repr(p.tree_structure(torch_back))
    assert _plain(tp.tree_map(_plain, back)) == _plain(p.tree_map(_plain, torch_back))
    dumped, torch_dumped = _outcome(lambda: tp.treespec_dumps(s1)), _outcome(lambda: p.treespec_dumps(s2))
    if isinstance(torch_dumped, str):
        assert dumped == torch_dumped
        assert tp.treespec_loads(dumped) == s1
    else:
        assert dumped is torch_dumped


@pytest.mark.parametrize("name", ["nested", "dict_order", "size", "defaultdict", "deque"])
def test_torch_dumps_load_in_tracegrad(name):
    spec = tp.treespec_loads(p.treespec_dumps(p.tree_structure(TREES[name](torch))))
    assert spec == tp.tree_structure(TREES[name](tracegrad))


def test_key_paths_and_key_get():
    tree = {"a": [1, Point(2, 3)], "b": OrderedDict(c=4)}
    ours, theirs = tp.tree_flatten_with_path(tree), p.tree_flatten_with_path(tree)
    assert [(tp.keystr(k), v) for k, v in ours[0]] == [(p.keystr(k), v) for k, v in theirs[0]]
    assert [repr(k) for k, _ in ours[0]] == [repr(k).replace("torch.utils._pytree.", "") for k, _ in theirs[0]]
    for k, v in ours[0]:
        assert tp.key_get(tree, k) == v
    got = tp.tree_map_with_path(lambda kp, x, y: (tp.keystr(kp), x + y), tree, tree)
    assert got == p.tree_map_with_path(lambda kp, x, y: (p.keystr(kp), x + y), tree, tree)


MAP_CASES = {
    "same": ({"a": 1, "b": [2, 3]}, {"a": 10, "b": [20, 30]}),
    "dict_reordered": ({"a": 1, "b": 2}, {"b": 20, "a": 10}),
    "dict_vs_ordereddict": ({"a": 1, "b": 2}, OrderedDict(b=20, a=10)),
    "prefix": ([1, 2], [[10, 11], {"k": 12}]),
    "missing_key": ({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    "type_mismatch": ([1, 2], (1, 2)),
    "arity": ([1, 2], [1, 2, 3]),
    "namedtuple_class": (Point(1, 2), Other(1, 2)),
    "deque_maxlen_ignored": (deque([1, 2], maxlen=3), deque([5, 6])),
    "leaf_vs_node": ([1, [2]], [1, 2]),
}


@pytest.mark.parametrize("name", sorted(MAP_CASES))
def test_tree_map_rests_match_torch(name):
    a, b = MAP_CASES[name]

    def f(x, y):
        return (x, y)
    assert _outcome(lambda: tp.tree_map(f, a, b)) == _outcome(lambda: p.tree_map(f, a, b))


def test_map_only_all_any_on_tensors():
    def run(m, mp):
        tree = {"w": m.ones(2), "n": 3, "l": [m.zeros(1), "s", None]}
        seen = []
        mp.tree_map_(lambda x: seen.append(type(x).__name__), tree)
        only_ = []
        mp.tree_map_only_(m.Tensor, lambda t: only_.append(t.shape[0]), tree)
        doubled = mp.tree_map_only(m.Tensor, lambda t: (t * 2).tolist(), tree)
        by_pred = mp.tree_map_only(lambda x: isinstance(x, int), lambda i: -i, tree)
        return (seen, only_, _plain(doubled["w"]), doubled["l"][0], by_pred["n"],
                mp.tree_all(lambda x: x is not None, tree), mp.tree_any(lambda x: x is None, tree),
                mp.tree_all_only(m.Tensor, lambda t: t.numel() > 1, tree),
                mp.tree_any_only(m.Tensor, lambda t: t.numel() > 1, tree),
                mp.tree_all_only((int, str), bool, tree), mp.tree_map_(lambda x: x, tree) is tree)
    ours, theirs = run(tracegrad, tp), run(torch, p)
    assert ours[0] == [n.replace("Tensor", "Tensor") for n in theirs[0]]
    assert ours[1:] == theirs[1:]
    with pytest.raises(TypeError):
        tp.tree_map_only(3, lambda x: x, [1])


def test_is_leaf_argument():
    tree = [(1, 2), [3, (4,)]]
    for fn in ("tree_flatten", "tree_leaves"):
        ours = getattr(tp, fn)(tree, is_leaf=lambda x: isinstance(x, tuple))
        theirs = getattr(p, fn)(tree, is_leaf=lambda x: isinstance(x, tuple))
        assert repr(ours) == repr(theirs)
    assert tp.tree_is_leaf((1,), is_leaf=lambda x: True) and tp.tree_is_leaf(None) and not tp.tree_is_leaf({})


class Box:
    def __init__(self, a, b, tag):
        self.a, self.b, self.tag = a, b, tag


def _register(mod, with_keys=True):
    mod.register_pytree_node(
        Box, lambda bx: ([bx.a, bx.b], bx.tag), lambda v, tag: Box(v[0], v[1], tag),
        serialized_type_name="tests.Box",
        flatten_with_keys_fn=(lambda bx: ([(mod.GetAttrKey("a"), bx.a), (mod.GetAttrKey("b"), bx.b)], bx.tag))
        if with_keys else None)


@pytest.fixture
def box_registered():
    _register(tp), _register(p)
    yield
    tp._deregister_pytree_node(Box)
    p._deregister_pytree_node(Box)


@pytest.mark.usefixtures("box_registered")
def test_register_custom_node():
    tree = {"box": Box(1, [2, 3], "t")}
    (l1, s1), (l2, s2) = tp.tree_flatten(tree), p.tree_flatten(tree)
    assert l1 == l2 and repr(s1) == repr(s2)
    assert tp.treespec_dumps(s1) == p.treespec_dumps(s2)
    assert tp.treespec_loads(tp.treespec_dumps(s1)) == s1
    back = tp.tree_unflatten([7, 8, 9], s1)["box"]
    assert (back.a, back.b, back.tag) == (7, [8, 9], "t")
    assert [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(tree)] == \
           [p.keystr(k) for k, _ in p.tree_leaves_with_path(tree)]
    # a second registration, and a context mismatch under tree_map, raise as torch
    for mod in (tp, p):
        with pytest.raises(ValueError):
            _register(mod)
    a, b = Box(1, 2, "t"), Box(1, 2, "u")
    assert _outcome(lambda: tp.tree_map(lambda x, y: x, a, b)) is _outcome(lambda: p.tree_map(lambda x, y: x, a, b))


def test_register_errors_match_torch():
    class NoKeys:
        def __init__(self, v):
            self.v = v
    for mod in (tp, p):
        mod.register_pytree_node(NoKeys, lambda n: ([n.v], None), lambda v, _: NoKeys(v[0]))
    try:
        tree = [NoKeys(1)]
        assert _outcome(lambda: tp.tree_leaves_with_path(tree)) is _outcome(lambda: p.tree_leaves_with_path(tree)) \
            is ValueError
        spec = (tp.tree_structure(tree), p.tree_structure(tree))
        # no serialized_type_name: dumping is NotImplementedError in both
        assert _outcome(lambda: tp.treespec_dumps(spec[0])) is _outcome(lambda: p.treespec_dumps(spec[1])) \
            is NotImplementedError
    finally:
        tp._deregister_pytree_node(NoKeys)
        p._deregister_pytree_node(NoKeys)

    class Half:
        pass
    for mod in (tp, p):
        with pytest.raises(ValueError):
            mod.register_pytree_node(Half, lambda h: ([], None), lambda v, c: Half(), to_dumpable_context=str)
        mod.SUPPORTED_NODES.pop(Half, None)
        mod.SUPPORTED_SERIALIZED_TYPES.pop(Half, None)


def test_deprecated_register_warns_and_replaces():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
    try:
        with pytest.warns(FutureWarning):
            tp._register_pytree_node(Pair, lambda q: ([q.a, q.b], None), lambda v, _: Pair(*v))
        assert tp.tree_leaves(Pair(1, 2)) == [1, 2]
        with pytest.warns(Warning) as record:
            tp._register_pytree_node(Pair, lambda q: ([q.a], None), lambda v, _: Pair(v[0], 0))
        assert {w.category for w in record} == {FutureWarning, UserWarning}   # deprecated, and replaced
        assert tp.tree_leaves(Pair(1, 2)) == [1]
    finally:
        tp._deregister_pytree_node(Pair)


def test_register_dataclass():
    import dataclasses

    @dataclasses.dataclass
    class DC:
        x: int
        y: list
    tp.register_dataclass(DC)
    try:
        leaves, spec = tp.tree_flatten(DC(1, [2, 3]))
        assert leaves == [1, 2, 3] and tp.tree_unflatten([4, 5, 6], spec) == DC(4, [5, 6])
        assert [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(DC(1, [2]))] == [".x", ".y[0]"]
    finally:
        tp._deregister_pytree_node(DC)
    with pytest.raises(TypeError):
        tp.register_dataclass(Box)


def test_treespec_api():
    tree = {"b": [1, 2], "a": Point(3, 4)}
    s1, s2 = tp.tree_structure(tree), p.tree_structure(tree)
    assert s1.type is dict and s1.context == s2.context == ["b", "a"]
    assert repr(s1.child(1)) == repr(s2.child(1)) and len(s1.children()) == 2
    assert s1.child(1).context is Point
    with pytest.warns(FutureWarning):
        assert len(s1.children_specs) == 2
    with pytest.warns(FutureWarning):
        leaf = tp.LeafSpec()
    assert leaf == tp.tree_structure(1) and repr(leaf) == "*" and isinstance(tp.tree_structure(1), tp.LeafSpec)
    # equal specs are equal and hash alike; key order and namedtuple class count
    assert tp.tree_structure({"b": [5, 6], "a": Point(0, 0)}) == s1
    assert hash(tp.tree_structure({"b": [5, 6], "a": Point(0, 0)})) == hash(s1)
    assert tp.tree_structure({"a": Point(3, 4), "b": [1, 2]}) != s1
    assert tp.tree_structure({"b": [1, 2], "a": Other(3, 4)}) != s1
    assert tp.treespec_tuple([leaf, leaf]) == tp.tree_structure((1, 2))
    assert tp.treespec_dict(b=leaf, a=leaf) == tp.tree_structure({"b": 1, "a": 2})
    for mod in (tp, p):
        with pytest.raises(ValueError):
            mod.treespec_tuple([1])
    assert tp.treespec_leaf() is tp.tree_structure(None)


def test_unflatten_errors_match_torch():
    s1, s2 = tp.tree_structure([1, (2, 3)]), p.tree_structure([1, (2, 3)])
    assert _outcome(lambda: tp.tree_unflatten([1, 2], s1)) is _outcome(lambda: p.tree_unflatten([1, 2], s2)) \
        is ValueError
    assert _outcome(lambda: tp.tree_unflatten([1], [2])) is _outcome(lambda: p.tree_unflatten([1], [2])) is TypeError
    assert tp.tree_unflatten(s1, iter([4, 5, 6])) == p.tree_unflatten(s2, iter([4, 5, 6])) == [4, (5, 6)]
    assert _outcome(lambda: tp.treespec_dumps(s1, protocol=7)) is _outcome(lambda: p.treespec_dumps(s2, protocol=7)) \
        is ValueError


def test_namedtuple_serialization_and_enum_context():
    spec = tp.tree_structure(Point(1, 2))
    with pytest.raises(NotImplementedError):
        tp.treespec_dumps(spec)
    tp._register_namedtuple(Point, serialized_type_name="tests.Point")
    p._register_namedtuple(Point, serialized_type_name="tests.Point")
    try:
        assert tp.treespec_dumps(spec) == p.treespec_dumps(p.tree_structure(Point(1, 2)))
        assert tp.treespec_loads(tp.treespec_dumps(spec)) == spec
    finally:
        tp._deregister_pytree_node(Point)
        p._deregister_pytree_node(Point)

    # an Enum in a context goes through JSON as its class path and member name
    ours, theirs = tp.TreeSpec(list, SafeUUID.unknown, [tp.treespec_leaf()]), p.TreeSpec(list, SafeUUID.unknown, [p.treespec_leaf()])
    assert tp.treespec_dumps(ours) == p.treespec_dumps(theirs)
    assert tp.treespec_loads(tp.treespec_dumps(ours)).context is SafeUUID.unknown


def test_namedtuple_and_structseq_predicates():
    r = tracegrad.max(tracegrad.ones(2, 2), 0)
    assert tp.is_namedtuple(Point(1, 2)) and tp.is_namedtuple(Point) and p.is_namedtuple(Point)
    assert tp.is_structseq(r) and tp.is_structseq_class(type(r)) and p.is_structseq(torch.max(torch.ones(2, 2), 0))
    import os
    st = os.stat(".")
    assert tp.is_structseq_instance(st) == p.is_structseq_instance(st) is True
    assert not tp.is_structseq(Point(1, 2)) and not tp.is_namedtuple_instance((1, 2))


def test_broadcast_to_and_flatten():
    spec = tp.tree_structure([1, (2, 3)])
    assert tp._broadcast_to_and_flatten(0, spec) == p._broadcast_to_and_flatten(0, p.tree_structure([1, (2, 3)]))
    assert tp._broadcast_to_and_flatten([0, 1], spec) == [0, 1, 1]
    assert tp._broadcast_to_and_flatten([0, 1, 2], spec) is None
    assert tp.arg_tree_leaves(1, [2], k=(3,)) == [1, 2, 3]


def test_module_names():
    import tracegrad.utils._cxx_pytree as cxx
    assert tracegrad.utils._pytree is tp
    assert cxx.tree_flatten is tp.tree_flatten and cxx.TreeSpec is tp.TreeSpec
    assert set(tp.__all__) == set(p.__all__)
    # torch 2.13 has no public torch.utils.pytree yet
    assert hasattr(tracegrad.utils, "pytree") == hasattr(torch.utils, "pytree") is False
    assert all(hasattr(tp, n) for n in tp.__all__) and all(hasattr(cxx, n) for n in cxx.__all__)
