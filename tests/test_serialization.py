"""tracegrad.save / tracegrad.load: round trips (values, dtypes, nesting, requires_grad),
atomic writes, clear errors for damaged or foreign files, and no pickle anywhere."""
import collections
import io
import json
import os
import pickle
import struct

import numpy as np
import pytest
import safetensors.numpy

import tracegrad
import tracegrad.serialization as ser

ALL_DTYPES = [tracegrad.float16, tracegrad.bfloat16, tracegrad.float32, tracegrad.float64,
              tracegrad.complex64, tracegrad.complex128, tracegrad.int8, tracegrad.uint8,
              tracegrad.int16, tracegrad.int32, tracegrad.int64, tracegrad.bool]


def sample(dtype, shape):
    x = tracegrad.randn(shape, dtype=tracegrad.float64) * 50
    if dtype.is_complex:
        return (x + 1j * tracegrad.randn(shape, dtype=tracegrad.float64)).to(dtype)
    if dtype is tracegrad.bool:
        return x > 0
    if dtype is tracegrad.uint8:
        return x.abs().to(dtype)
    return x.to(dtype)


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    tracegrad.save(obj, buf)
    buf.seek(0)
    return tracegrad.load(buf, **kw)


def same_tensor(a, b):
    return (type(a) is type(b) and a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
            and a.requires_grad == b.requires_grad
            and a.detach().numpy().tobytes() == b.detach().numpy().tobytes())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 3), (2, 3, 4)])
def test_every_dtype_and_shape_round_trips_bit_exact(dtype, shape):
    t = sample(dtype, shape)
    assert same_tensor(roundtrip(t), t)


def test_special_float_values_round_trip():
    t = tracegrad.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-45], dtype=tracegrad.float32)
    assert same_tensor(roundtrip(t), t)
    back = roundtrip({"nan": float("nan"), "inf": float("inf"), "tiny": 5e-324, "big": 2 ** 80})
    assert np.isnan(back["nan"]) and back["inf"] == float("inf") and back["tiny"] == 5e-324
    assert back["big"] == 2 ** 80 and type(back["big"]) is int


def test_nested_structure_round_trips_with_types():
    w = tracegrad.randn(3, 2)
    obj = {"model": collections.OrderedDict([("fc.weight", w), ("fc.bias", tracegrad.zeros(3))]),
           "optim": {"state": {0: {"step": tracegrad.tensor(3.0), "exp_avg": tracegrad.ones(3, 2)}},
                     "param_groups": [{"params": [0, 1], "lr": 1e-3, "betas": (0.9, 0.999),
                                       "foreach": None, "amsgrad": False, "name": "g"}]},
           "epoch": 4, "history": [1.5, 0.25], "flags": (True, None, "x"), 2.5: "float key",
           None: "none key", True: [[], (), {}]}
    back = roundtrip(obj)
    assert type(back["model"]) is collections.OrderedDict and list(back["model"]) == ["fc.weight", "fc.bias"]
    assert same_tensor(back["model"]["fc.weight"], w)
    st = back["optim"]["state"]
    assert list(st) == [0] and same_tensor(st[0]["step"], tracegrad.tensor(3.0))
    assert back["optim"]["param_groups"] == obj["optim"]["param_groups"]
    assert type(back["optim"]["param_groups"][0]["betas"]) is tuple
    assert back["epoch"] == 4 and back["history"] == [1.5, 0.25] and back["flags"] == (True, None, "x")
    assert back[2.5] == "float key" and back[None] == "none key" and back[True] == [[], (), {}]
    assert type(back) is dict and list(back) == list(obj)


def test_requires_grad_views_and_parameters():
    leaf = tracegrad.randn(4, 3, requires_grad=True)
    nonleaf = leaf * 2
    view = leaf.detach()[1:3].t()
    back = roundtrip({"leaf": leaf, "nonleaf": nonleaf, "view": view})
    assert back["leaf"].requires_grad and back["leaf"].is_leaf and back["leaf"].grad is None
    assert back["nonleaf"].requires_grad and back["nonleaf"].is_leaf
    assert np.array_equal(back["view"].numpy(), view.numpy()) and tuple(back["view"].shape) == (3, 2)
    # tensors sharing storage share it after loading, as in torch (the leaf and its detached view too)
    base = tracegrad.zeros(3)
    a, b = roundtrip([base, base[:2]])
    a.add_(1)
    assert b.tolist() == [1.0, 1.0]
    assert back["view"].stride() == (1, 3) and back["view"].storage_offset() == 3
    Parameter = pytest.importorskip("tracegrad.nn.parameter").Parameter
    p = Parameter(tracegrad.ones(2))
    q = roundtrip({"p": p})["p"]
    assert isinstance(q, Parameter) and q.requires_grad and q.tolist() == [1.0, 1.0]


def test_complex_part_views_save_their_storage_as_torch():
    torch_ref = pytest.importorskip("torch")
    # torch saves ``z.imag`` as a float tensor over the complex storage's bytes (offset 1, stride 2)
    for lib in (torch_ref, tracegrad):
        z = lib.tensor([1 + 2j, 3 + 4j, 5 + 6j])
        buf = io.BytesIO()
        lib.save({"imag": z.imag, "real_tail": z.real[1:], "n": 3}, buf)
        buf.seek(0)
        back = lib.load(buf)
        got = [(k, back[k].tolist(), back[k].stride(), back[k].storage_offset(), back[k].untyped_storage().nbytes())
               for k in ("imag", "real_tail")]
        if lib is torch_ref:
            want = got
        else:
            assert got == want
    # the part view and the complex tensor in one file: torch's "different types" error
    z = tracegrad.tensor([1 + 2j])
    with pytest.raises(RuntimeError, match="different types"):
        tracegrad.save([z, z.imag], io.BytesIO())


def test_path_and_pathlike_and_file_objects(tmp_path):
    sd = {"w": tracegrad.arange(6.0).reshape(2, 3)}
    tracegrad.save(sd, str(tmp_path / "a.tg"))
    tracegrad.save(sd, tmp_path / "b.tg")
    with open(tmp_path / "c.tg", "wb") as fh:
        tracegrad.save(sd, fh)
    for name in ("a.tg", "b.tg", "c.tg"):
        assert same_tensor(tracegrad.load(tmp_path / name)["w"], sd["w"])
        with open(tmp_path / name, "rb") as fh:
            assert same_tensor(tracegrad.load(fh, map_location="cpu", weights_only=False)["w"], sd["w"])
    assert sorted(os.listdir(tmp_path)) == ["a.tg", "b.tg", "c.tg"]  # no temp files left


def test_map_location_forms():
    t = tracegrad.ones(2)
    assert roundtrip(t, map_location=tracegrad.device("cpu")).device == tracegrad.device("cpu")
    assert roundtrip(t, map_location={"cpu": "cpu"}).tolist() == [1.0, 1.0]
    seen = []
    out = roundtrip(t, map_location=lambda x, loc: seen.append(loc) or x * 3)
    assert seen == ["cpu"] and out.tolist() == [3.0, 3.0]


def test_file_is_plain_safetensors_with_json_structure(tmp_path):
    path = tmp_path / "sd.tg"
    tracegrad.save({"w": tracegrad.ones(2, dtype=tracegrad.bfloat16), "n": 3}, path)
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    desc = json.loads(header["__metadata__"]["tracegrad"])
    assert desc["tree"]["t"] == "dict"
    assert [k for k in header if k != "__metadata__"] == ["0"] and header["0"]["dtype"] == "BF16"


def test_foreign_safetensors_file_loads_as_dict(tmp_path):
    path = tmp_path / "plain.safetensors"
    path.write_bytes(safetensors.numpy.save({"a": np.arange(3, dtype=np.int32)}))
    back = tracegrad.load(path)
    assert list(back) == ["a"] and back["a"].dtype is tracegrad.int32 and back["a"].tolist() == [0, 1, 2]


def test_atomic_save_keeps_old_file_when_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.tg"
    tracegrad.save({"v": tracegrad.tensor([1.0])}, path)
    before = path.read_bytes()

    def crash(fd):
        raise OSError("disk on fire")
    monkeypatch.setattr(ser.os, "fsync", crash)  # fails after the temp file was written
    with pytest.raises(OSError, match="disk on fire"):
        tracegrad.save({"v": tracegrad.tensor([2.0])}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert tracegrad.load(path)["v"].tolist() == [1.0]
    assert os.listdir(tmp_path) == ["ckpt.tg"]

    def crash_replace(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(ser.os, "replace", crash_replace)
    with pytest.raises(KeyboardInterrupt):
        tracegrad.save({"v": tracegrad.tensor([3.0])}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.tg"]


class Thing:
    """A user class at module level (picklable by reference, as torch.save needs)."""

    def __init__(self, w):
        self.w, self.name = w, "thing"


def test_other_objects_are_pickled_and_classes_need_allowlisting():
    """Objects JSON cannot describe are pickled; under weights_only=True (the default) a pickle
    naming a class loads only once the class is allowlisted, as torch's weights-only load."""
    w = tracegrad.tensor([1.0, 2.0])
    for obj in [Thing(w), {"a": [1, {2, 3}]}, {(1, 2): w}, np.ones(2), b"x"]:
        buf = io.BytesIO()
        tracegrad.save({"obj": obj}, buf)
        buf.seek(0)
        names_a_class = isinstance(obj, (Thing, np.ndarray))
        if names_a_class:
            with pytest.raises(pickle.UnpicklingError, match="add_safe_globals.*weights_only=False"):
                tracegrad.load(buf)
            buf.seek(0)
        back = tracegrad.load(buf, weights_only=not names_a_class)["obj"]
        if isinstance(obj, Thing):
            assert back.name == "thing" and back.w.tolist() == [1.0, 2.0]
        elif isinstance(obj, np.ndarray):
            assert np.array_equal(back, obj)
        elif isinstance(obj, dict) and (1, 2) in obj:
            assert back[(1, 2)].tolist() == [1.0, 2.0]
        else:
            assert back == obj


def test_unpicklable_objects_raise_pickles_error_naming_the_place():
    class Local:
        pass
    with pytest.raises(AttributeError, match=r"obj\['a'\]\[0\]"):
        roundtrip({"a": [Local()]})
    with pytest.raises((AttributeError, pickle.PicklingError), match="lambda|local"):
        roundtrip({"f": lambda: 1})


def test_whole_module_and_optimizer_roundtrip_like_torch(tmp_path):
    """torch.save(model) / torch.save(optimizer): the object comes back (weights_only=False)
    with equal values, tied weights still one Parameter, optimizer state keyed by the loaded
    parameters."""
    nn = tracegrad.nn
    tracegrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
    model[2].weight = model[0].weight                    # tied
    opt = tracegrad.optim.Adam(model.parameters(), lr=0.1)
    model(tracegrad.ones(2, 3)).sum().backward()
    opt.step()
    path = tmp_path / "whole.pt"
    tracegrad.save({"model": model, "opt": opt, "epoch": 4}, path)
    ck = tracegrad.load(path, weights_only=False)
    m2, o2 = ck["model"], ck["opt"]
    assert ck["epoch"] == 4 and isinstance(m2, nn.Sequential)
    assert m2[2].weight is m2[0].weight and isinstance(m2[0].weight, nn.Parameter)
    x = tracegrad.randn(4, 3)
    np.testing.assert_array_equal(m2(x).detach().numpy(), model(x).detach().numpy())
    assert [id(p) for g in o2.param_groups for p in g["params"]] == [id(p) for p in m2.parameters()]
    st = o2.state[m2[0].weight]
    np.testing.assert_array_equal(st["exp_avg"].numpy(), opt.state[model[0].weight]["exp_avg"].numpy())
    # it trains on from there as the original does
    for m, o in ((model, opt), (m2, o2)):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), m2.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6)


def test_whole_module_load_refused_by_default_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    for mod, path in ((torch, tmp_path / "t.pt"), (tracegrad, tmp_path / "g.pt")):
        mod.save(mod.nn.Linear(2, 2), path)
        with pytest.raises(pickle.UnpicklingError):
            mod.load(path)
        assert isinstance(mod.load(path, weights_only=False), mod.nn.Linear)
        with mod.serialization.safe_globals([mod.nn.Linear]):      # allowlisted: loads as it is
            assert isinstance(mod.load(path), mod.nn.Linear)
        with pytest.raises(pickle.UnpicklingError):                  # the list is put back
            mod.load(path)


def test_weights_only_refuses_before_importing(tmp_path, monkeypatch):
    """A class that is not allowlisted is refused by name: its module is never imported."""
    buf = io.BytesIO()
    tracegrad.save({"obj": Thing(tracegrad.ones(1))}, buf)
    imported = []
    real = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__
    monkeypatch.setattr("builtins.__import__", lambda name, *a, **k: (imported.append(name), real(name, *a, **k))[1])
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Thing"):
        tracegrad.load(buf)
    assert __name__ not in imported


@pytest.mark.parametrize("cut", [0, 4, 8, 20, -1, -7])
def test_truncated_file_raises_runtime_error_naming_file(tmp_path, cut):
    path = tmp_path / "ckpt.tg"
    tracegrad.save({"w": tracegrad.randn(5, 5), "step": 3}, path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    # torch.load: EOFError for an empty file, RuntimeError for a truncated checkpoint
    with pytest.raises(EOFError if cut == 0 else RuntimeError, match="ckpt.tg"):
        tracegrad.load(path)


# torch.load's classes for the same bytes (its legacy reader's KeyError for b"hello world..." is
# an accident of that reader: UnpicklingError here, as for the other non-pickle bytes)
@pytest.mark.parametrize("content, error", [
    (b"", EOFError), (b"hello world, not a checkpoint", pickle.UnpicklingError),
    (b"PK\x03\x04zipzipzip" * 4, RuntimeError), (json.dumps({"a": 1}).encode(), pickle.UnpicklingError),
    (pickle.dumps({"a": 1}), pickle.UnpicklingError)])
def test_foreign_files_raise_torchs_error(tmp_path, content, error):
    path = tmp_path / "foreign.bin"
    path.write_bytes(content)
    with pytest.raises(error, match="foreign.bin"):
        tracegrad.load(path)


def test_torch_save_files_are_recognised_by_content(tmp_path):
    """load tells its own safetensors files from torch.save's zip and legacy files by their
    first bytes, whatever the name (tests/test_serialization_torch.py covers the torch reader)."""
    torch = pytest.importorskip("torch")
    for legacy in (False, True):
        path = tmp_path / f"ckpt-{legacy}.tg"
        torch.save({"w": torch.arange(3.)}, path, _use_new_zipfile_serialization=not legacy)
        np.testing.assert_array_equal(tracegrad.load(path)["w"].numpy(), np.arange(3.))


def test_damaged_structure_description_raises_runtime_error(tmp_path):
    path = tmp_path / "bad.tg"
    for meta in ["{not json", json.dumps({"format": "other/9", "tree": {}}),
                 json.dumps({"format": ser._FORMAT, "tree": {"t": "tensor", "key": "99"}}),
                 json.dumps({"format": ser._FORMAT, "tree": {"t": "evil", "v": "os.system"}})]:
        path.write_bytes(safetensors.numpy.save({"0": np.ones(1, np.float32)}, metadata={"tracegrad": meta}))
        with pytest.raises(RuntimeError, match="bad.tg"):
            tracegrad.load(path)


def test_load_never_unpickles(tmp_path, monkeypatch):
    path = tmp_path / "x.tg"
    tracegrad.save({"a": tracegrad.ones(2), "b": [1, "s"]}, path)

    def forbidden(*a, **k):
        raise AssertionError("pickle used")
    # tensors, containers and plain values: no pickle either way (only other objects are)
    for name in ("load", "loads", "Unpickler", "dump", "dumps", "Pickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    monkeypatch.setattr(ser, "_TensorPickler", forbidden)
    monkeypatch.setattr(ser, "_TensorUnpickler", forbidden)
    tracegrad.save({"a": tracegrad.ones(2)}, tmp_path / "y.tg")
    assert tracegrad.load(path)["b"] == [1, "s"]
    source = open(ser.__file__).read()
    assert "eval(" not in source and "exec(" not in source


def test_torch_can_read_the_arrays():
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    buf = io.BytesIO()
    w = tracegrad.randn(3, 2)
    tracegrad.save({"w": w}, buf)
    arrays = st.load(buf.getvalue())
    assert torch.equal(arrays["0"], torch.tensor(w.numpy()))


def test_safe_globals_context_and_list_as_torch_programs_use_them(tmp_path):
    """Programs written for torch >= 2.6 wrap ``torch.load`` in ``safe_globals([...])`` (the
    examples' word_language_model does); load never unpickles, so the list changes nothing,
    but the calls work and keep torch's list semantics and argument checks."""
    path = tmp_path / "m.pt"
    lin = tracegrad.nn.Linear(2, 1)
    tracegrad.save(lin.state_dict(), path)
    ser.clear_safe_globals()
    with ser.safe_globals([tracegrad.nn.Linear, tracegrad.nn.modules.linear.NonDynamicallyQuantizableLinear]):
        assert ser.get_safe_globals() == [tracegrad.nn.Linear, tracegrad.nn.modules.linear.NonDynamicallyQuantizableLinear]
        sd = tracegrad.load(path)
    assert ser.get_safe_globals() == []
    np.testing.assert_array_equal(sd["weight"].numpy(), lin.weight.detach().numpy())
    ser.add_safe_globals([collections.OrderedDict])
    assert ser.get_safe_globals() == [collections.OrderedDict]
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    with pytest.raises(TypeError, match="list"):
        ser.add_safe_globals(collections.OrderedDict)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        torch.serialization.add_safe_globals(collections.OrderedDict)


@pytest.mark.parametrize("writer", ["tracegrad", "torch"])
def test_load_warns_no_more_than_torch(tmp_path, writer):
    """torch.load of a state_dict (and of a whole module tracegrad saved) warns nothing: the arrays
    read from the file are read-only views, and from_numpy's read-only warning is for a user's
    arrays only."""
    import warnings
    mod = pytest.importorskip("torch") if writer == "torch" else tracegrad
    model = mod.nn.Linear(2, 3)
    path = tmp_path / "m.pt"
    obj = {"sd": model.state_dict(), "steps": mod.arange(3)}
    mod.save(dict(obj, model=model) if mod is tracegrad else obj, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ck = tracegrad.load(path, weights_only=False)
    np.testing.assert_array_equal(ck["sd"]["weight"].numpy(), model.weight.detach().numpy())
    assert ck["steps"].tolist() == [0, 1, 2]


def test_source_change_warning_is_torchs_warning_class():
    # torch's test_conv_backcompat imports it to filter it; torch exports it from serialization
    torch = pytest.importorskip("torch")
    from tracegrad.serialization import SourceChangeWarning
    assert issubclass(SourceChangeWarning, Warning) and "SourceChangeWarning" in tracegrad.serialization.__all__
    assert [c.__name__ for c in SourceChangeWarning.__mro__] == \
        [c.__name__ for c in torch.serialization.SourceChangeWarning.__mro__]
