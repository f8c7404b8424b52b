"""Ported from PyTorch's test/test_weak.py (WeakTest / WeakKeyDictionaryTestCase), round 20:
``keyrefs`` (was missing), ``WeakIdRef`` equality and hashing before and after the referent
dies, ``WeakTensorKeyDictionary`` keyed by identity (two equal tensors are two keys) and
``TensorWeakRef``. The first round is in test_torch_files_ported.py. Each body runs under
torch 2.13 (the oracle) and tracegrad through the ``T`` fixture."""
import gc
import importlib


def _weak(T):
    return importlib.import_module(T.__name__ + ".utils.weak")


def test_keyrefs_and_identity_keys(T):
    # WeakTest.test_weak_keyed_dict (keyrefs part) / test_weak_keys: the references hold the
    # keys while they live, the entries go with them, equal tensors are distinct keys
    W = _weak(T)
    d = W.WeakTensorKeyDictionary()
    a, b = T.ones(2), T.ones(2)
    d[a], d[b] = 1, 2
    refs = d.keyrefs()
    assert isinstance(refs, list) and len(refs) == 2 and all(isinstance(r, W.WeakIdRef) for r in refs)
    assert {id(r()) for r in refs} == {id(a), id(b)}
    assert (len(d), d[a], d[b], a in d, T.ones(2) in d) == (2, 1, 2, True, False)
    del a
    gc.collect()
    assert len(d) == 1 and list(d.values()) == [2] and [r() is b for r in d.keyrefs()] == [True]
    assert [r() for r in refs].count(None) == 1    # the list taken earlier sees the key die


def test_weak_id_ref_equality_and_hash(T):
    # WeakTest.test_weak_id_ref: refs to one object are equal and hash alike (by id), and keep
    # their hash once the object is gone; a TensorWeakRef calls back to its tensor
    W = _weak(T)
    a = T.ones(2)
    r1, r2, r3 = W.WeakIdRef(a), W.WeakIdRef(a), W.WeakIdRef(T.zeros(1))
    h = hash(r1)
    assert (r1 == r2, hash(r1) == hash(r2), r1() is a, r1 == r3) == (True, True, True, False)
    t = W.TensorWeakRef(a)
    assert t() is a
    del a
    gc.collect()
    assert (r1() is None, hash(r1) == h, t() is None) == (True, True, True)
