"""Ported from PyTorch's test/test_serialization.py (TestSerialization, TestOldSerialization),
round 11: cases not ported in round 7 -- several objects in one file, offsets into file-like
objects, storage slices, views, dtypes, meta tensors, namedtuples and plain classes, the
pickle protocol/module arguments, the legacy (non-zip) format and mmap loading. Each body runs
under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture, saving and loading with
the same library; each test names its original."""
import collections
import io
import os
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def _roundtrip(T, obj, **save_kw):
    buf = io.BytesIO()
    T.save(obj, buf, **save_kw)
    buf.seek(0)
    return T.load(buf, weights_only=False)


def test_serialization_offset(T, tmp_path):
    # TestOldSerialization.test_serialization_offset: a pickle and two tensors written one after
    # another to one file (torch's legacy format; a zip archive is read to its end) come back
    # in order from one handle
    a, b = T.arange(6.).reshape(2, 3), T.tensor([1, 2], dtype=T.int16)
    i, j = 41, 43
    path = tmp_path / "offset.pt"
    with open(path, "wb") as f:
        pickle.dump(i, f)
        T.save(a, f, _use_new_zipfile_serialization=False)
        pickle.dump(j, f)
        T.save(b, f, _use_new_zipfile_serialization=False)
    with open(path, "rb") as f:
        assert pickle.load(f) == i
        a2 = T.load(f)
        assert pickle.load(f) == j
        b2 = T.load(f)
    assert T.equal(a, a2) and T.equal(b, b2) and b2.dtype == T.int16


def test_serialization_offset_filelike(T):
    # TestOldSerialization.test_serialization_offset_filelike: the same through a BytesIO
    a, b = T.ones(3, 2), T.zeros(4)
    buf = io.BytesIO()
    pickle.dump(7, buf)
    T.save(a, buf, _use_new_zipfile_serialization=False)
    T.save(b, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert pickle.load(buf) == 7
    assert T.equal(T.load(buf), a)
    assert T.equal(T.load(buf), b)


_LIBS = pytest.mark.parametrize("lib", ["torch", "tracegrad"])


@_LIBS
def test_serialization_storage_slice(lib):
    T = __import__(lib)
    # TestSerialization.test_serialization_storage_slice (as views): two views of one storage
    # keep sharing after the round trip, each with its own offset
    base = T.arange(10.)
    x, y = _roundtrip(T, [base[2:5], base[4:8]])
    assert x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert (x.storage_offset(), y.storage_offset()) == (2, 4)
    x[2] = -1.
    assert float(y[0]) == -1.


@_LIBS
def test_save_load_preserves_view(lib):
    T = __import__(lib)
    # views of one base (a transpose, a strided slice) come back as views with the same strides
    base = T.arange(12.).reshape(3, 4)
    t, s = _roundtrip(T, (base.t(), base[:, ::2]))
    assert t.stride() == (1, 4) and s.stride() == (4, 2)
    t[0, 0] = 100.
    assert float(s[0, 0]) == 100.


@pytest.mark.parametrize("dtype", ["uint8", "bool", "int8", "float16", "bfloat16", "complex64", "float64"])
def test_serialization_dtypes(T, dtype):
    # TestSerialization.test_serialization_uint8/bool/complex and the dtype grid of test_serialization
    x = T.tensor(np.arange(6).reshape(2, 3) % 2 == 0) if dtype == "bool" else (T.arange(6).reshape(2, 3) - 2).to(getattr(T, dtype))
    y = _roundtrip(T, x)
    assert y.dtype == x.dtype and T.equal(y, x)


def test_save_different_dtype_unallocated(T):
    # TestSerialization.test_save_different_dtype_unallocated: empty tensors of several dtypes
    # sharing nothing save and load together
    xs = [T.empty(0, dtype=getattr(T, d)) for d in ("float32", "int64", "bool", "complex128")]
    ys = _roundtrip(T, xs)
    assert [y.dtype for y in ys] == [x.dtype for x in xs] and all(y.numel() == 0 for y in ys)


def test_meta_serialization(T):
    # TestSerialization.test_meta_serialization: meta tensors keep shape, dtype and device
    x = T.empty(3, 4, device="meta", dtype=T.float64)
    y = _roundtrip(T, x)
    assert y.is_meta and y.shape == (3, 4) and y.dtype == T.float64


def test_save_namedtuple(T):
    # TestSerialization.test_save_namedtuple (a module-level namedtuple of tensors)
    y = _roundtrip(T, _Pair(T.ones(2), T.zeros(1)))
    assert isinstance(y, _Pair) and T.equal(y.a, T.ones(2)) and T.equal(y.b, T.zeros(1))


_Pair = collections.namedtuple("_Pair", "a b")


class _Empty:
    pass


def test_empty_class_serialization(T):
    # TestSerialization.test_empty_class_serialization (weights_only=False)
    y = _roundtrip(T, _Empty())
    assert isinstance(y, _Empty)


def test_weights_only_refuses_plain_class(T):
    # TestSerialization: weights_only=True refuses an unknown global (UnpicklingError)
    buf = io.BytesIO()
    T.save(_Empty(), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        T.load(buf, weights_only=True)


def test_serialization_parameter(T):
    # a Parameter comes back as a Parameter with requires_grad (and requires_grad=False kept)
    p, q = T.nn.Parameter(T.ones(2)), T.nn.Parameter(T.zeros(2), requires_grad=False)
    p2, q2 = _roundtrip(T, [p, q])
    assert isinstance(p2, T.nn.Parameter) and p2.requires_grad
    assert isinstance(q2, T.nn.Parameter) and not q2.requires_grad


def test_serialization_pickle_protocol(T):
    # TestSerialization.test_serialization_pickle_protocol-like: pickle_protocol is honoured
    for proto in (2, 4, pickle.HIGHEST_PROTOCOL):
        assert T.equal(_roundtrip(T, T.arange(3.), pickle_protocol=proto), T.arange(3.))


def test_serialization_pickle_module(T):
    # TestSerialization.test_serialization_dill (with the stdlib pickle as pickle_module)
    buf = io.BytesIO()
    T.save({"x": T.ones(2)}, buf, pickle_module=pickle)
    buf.seek(0)
    assert T.equal(T.load(buf, pickle_module=pickle, weights_only=False)["x"], T.ones(2))


def test_serialization_new_format_old_format_compat(T, tmp_path):
    # TestSerialization.test_serialization_new_format_old_format_compat: the legacy
    # (_use_new_zipfile_serialization=False) file loads back to the same values
    x = [T.ones(200, 2), T.arange(4) * 3]
    path = tmp_path / "old.pt"
    T.save(x, path, _use_new_zipfile_serialization=False)
    y = T.load(path, weights_only=False)
    assert T.equal(y[0], x[0]) and T.equal(y[1], x[1])


def test_serialization_mmap(T, tmp_path):
    # TestSerialization.test_serialization_mmap: mmap=True needs a path and gives the values
    sd = {"w": T.arange(8.).reshape(2, 4), "b": T.ones(3, dtype=T.int32)}
    path = tmp_path / "mm.pt"
    T.save(sd, path)
    got = T.load(path, mmap=True, weights_only=True)
    assert T.equal(got["w"], sd["w"]) and T.equal(got["b"], sd["b"])
    with open(path, "rb") as f:
        with pytest.raises(ValueError):
            T.load(f, mmap=True)


def test_serialization_pathlike_and_str(T, tmp_path):
    # TestSerialization.test_pathlike_serialization / str paths
    x = T.arange(5)
    T.save(x, str(tmp_path / "s.pt"))
    T.save(x, tmp_path / "p.pt")
    assert T.equal(T.load(os.fspath(tmp_path / "s.pt")), x) and T.equal(T.load(tmp_path / "p.pt"), x)


def test_load_error_on_non_file(T):
    # TestSerialization.test_load_error_msg: loading garbage bytes is an UnpicklingError/
    # RuntimeError, loading a missing path is FileNotFoundError
    with pytest.raises((pickle.UnpicklingError, RuntimeError)):
        T.load(io.BytesIO(b"not a checkpoint at all"))
    with pytest.raises(FileNotFoundError):
        T.load("/nonexistent/dir/file.pt")


def test_serialization_module_state_dict_with_buffers(T):
    # module state dicts with persistent and non-persistent buffers round trip (load_state_dict)
    m = T.nn.BatchNorm1d(3)
    m.register_buffer("tmp", T.ones(1), persistent=False)
    with T.no_grad():
        m.running_mean.add_(2.)
    sd = _roundtrip(T, m.state_dict())
    assert "tmp" not in sd and int(sd["num_batches_tracked"]) == 0
    m2 = T.nn.BatchNorm1d(3)
    m2.load_state_dict(sd)
    assert T.equal(m2.running_mean, T.full((3,), 2.))


def test_serialization_whole_module(T):
    # saving a whole module (weights_only=False) keeps its class, parameters and training flag
    m = T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU()).eval()
    m2 = _roundtrip(T, m)
    assert isinstance(m2[0], T.nn.Linear) and not m2.training
    assert T.equal(m2[0].weight, m[0].weight)
    x = T.ones(1, 2)
    assert T.equal(m2(x), m(x))


def test_serialization_requires_grad_nonleaf_refused(T):
    # saving a non-leaf tensor that requires grad keeps values, drops the history
    x = T.ones(2, requires_grad=True)
    y = _roundtrip(T, x * 2)
    assert y.grad_fn is None and T.equal(y.detach(), T.full((2,), 2.))
