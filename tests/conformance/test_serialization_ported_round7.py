"""Round 7 port of PyTorch's test/test_serialization.py (TestSerialization, SerializationMixin):
save/load of tensors, views, containers, modules, module/optimizer/lr-scheduler state dicts to
files, file names, pathlib paths, BytesIO and gzip streams. Each body runs under torch 2.13 (the
oracle) and tracegrad (the ``T`` fixture), every library reading back its own files (tracegrad
writes its own format; storages shared by views are not kept shared: the values are compared)."""
import gzip
import io
import pathlib
import shutil

import numpy as np
import pytest


def rn(T, *shape, seed=0):
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype("float32"))


def data(T):
    a = [rn(T, 3, 3, seed=i) for i in range(2)]
    return [a[0], a[1], a[0], a[1], a[0].reshape(-1)[1:4], T.arange(1, 11).int(),
            {"x": a[0], "y": (a[1], 3, "s")}, T.tensor(2.5, dtype=T.float64)]


def same(T, a, b):
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(T, x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(T, a[k], b[k]) for k in a)
    if isinstance(a, T.Tensor):
        return isinstance(b, T.Tensor) and a.dtype == b.dtype and a.shape == b.shape and T.equal(a, b)
    return a == b


@pytest.mark.parametrize("weights_only", [True, False])
def test_serialization_zipfile(T, tmp_path, weights_only):
    # TestSerialization.test_serialization_zipfile / test_pathlike_serialization: a file object,
    # a file name (also non-ASCII), a pathlib.Path and a BytesIO all round trip
    d = data(T)
    with open(tmp_path / "f.pt", "w+b") as f:
        T.save(d, f)
        f.seek(0)
        assert same(T, T.load(f, weights_only=weights_only), d)
    for name in (str(tmp_path / "n.pt"), str(tmp_path / "非ASCIIパス.pt"), pathlib.Path(tmp_path / "p.pt")):
        T.save(d, name)
        assert same(T, T.load(name, weights_only=weights_only), d)
    buf = io.BytesIO()
    T.save(d, buf)
    buf.seek(0)
    assert same(T, T.load(buf, weights_only=weights_only), d)


def test_serialization_gzip(T, tmp_path):
    # SerializationMixin.test_serialization_gzip: a checkpoint copied through gzip loads from the
    # gzip stream
    d = data(T)
    T.save(d, tmp_path / "a.pt")
    with open(tmp_path / "a.pt", "rb") as fin, gzip.open(tmp_path / "a.gz", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    with gzip.open(tmp_path / "a.gz", "rb") as f:
        assert same(T, T.load(f), d)


def test_loaded_tensors_are_independent_and_writable(T):
    # SerializationMixin._test_serialization_assert (values part): loaded tensors are fresh,
    # writable tensors; writing one leaves the saved originals alone
    d = data(T)
    buf = io.BytesIO()
    T.save(d, buf)
    buf.seek(0)
    c = T.load(buf)
    c[0].fill_(10)
    assert float(c[0].sum()) == 90.0 and not T.equal(d[0], c[0])


def test_module_state_dict_round_trip(T, tmp_path):
    # test_pathlike_serialization / test_serialization_container: a module's state dict round
    # trips and loads into a fresh module; the whole module round trips with weights_only=False
    m = T.nn.Sequential(T.nn.Conv2d(2, 3, 3), T.nn.BatchNorm2d(3), T.nn.Linear(4, 2))
    T.save(m.state_dict(), tmp_path / "sd.pt")
    sd = T.load(tmp_path / "sd.pt")
    assert list(sd) == list(m.state_dict())
    m2 = T.nn.Sequential(T.nn.Conv2d(2, 3, 3), T.nn.BatchNorm2d(3), T.nn.Linear(4, 2))
    m2.load_state_dict(sd)
    for (k, v), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and T.equal(v, v2)
    T.save(m, tmp_path / "m.pt")
    m3 = T.load(tmp_path / "m.pt", weights_only=False)
    assert type(m3) is type(m) and isinstance(m3[0], T.nn.Conv2d) and m3[0].kernel_size == (3, 3)
    assert T.equal(m3[2].weight, m[2].weight) and isinstance(m3[2].weight, T.nn.Parameter)


def test_lr_scheduler_serialization(T):
    # TestSerialization.test_lr_scheduler_serialization: OneCycleLR's state dict round trips
    # without a bound method inside
    sgd = T.optim.SGD([T.zeros(4, 4, requires_grad=True)], lr=0.1, momentum=0.9)
    sched = T.optim.lr_scheduler.OneCycleLR(sgd, 6.0, total_steps=10)
    buf = io.BytesIO()
    T.save(sched.state_dict(), buf)
    buf.seek(0)
    st = T.load(buf)
    assert st["base_lrs"] == sched.base_lrs
    if "anneal_func" in st:
        assert not hasattr(st["anneal_func"], "__self__")
    else:
        assert "_anneal_func_type" in st


def test_optimizer_state_dict_round_trip(T):
    # test_serialization of an optimizer's state dict: tensors in its state, ints in its groups
    p = T.nn.Parameter(rn(T, 3))
    opt = T.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    buf = io.BytesIO()
    T.save(opt.state_dict(), buf)
    buf.seek(0)
    st = T.load(buf)
    assert st["param_groups"][0]["params"] == [0] and st["param_groups"][0]["lr"] == 0.1
    assert T.equal(st["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    opt2 = T.optim.Adam([T.nn.Parameter(p.detach().clone())], lr=0.1)
    opt2.load_state_dict(st)
    assert T.equal(opt2.state_dict()["state"][0]["exp_avg_sq"], opt.state_dict()["state"][0]["exp_avg_sq"])


@pytest.mark.parametrize("weights_only", [False, True])
def test_serialization_math_bits(T, weights_only):
    # TestSerialization.test_serialization_math_bits (conj): a conjugated complex tensor loads
    # with its (resolved) values
    t = rn(T, 2) + 1j * rn(T, 2, seed=1)
    tc = T.conj(t)
    buf = io.BytesIO()
    T.save(tc, buf)
    buf.seek(0)
    out = T.load(buf, weights_only=weights_only)
    assert T.equal(out, tc) and out.dtype == T.complex64


def test_serialization_requires_grad_and_views(T):
    # SerializationMixin data: views and slices round trip by value; requires_grad is kept on
    # leaves, and parameters stay parameters
    a = rn(T, 4, 3)
    p = T.nn.Parameter(rn(T, 2, seed=1))
    leaf = rn(T, 2, seed=2).requires_grad_()
    obj = {"row": a[1], "col": a[:, 2], "t": a.t(), "p": p, "leaf": leaf}
    buf = io.BytesIO()
    T.save(obj, buf)
    buf.seek(0)
    out = T.load(buf)
    for k in ("row", "col", "t"):
        assert T.equal(out[k], obj[k]) and tuple(out[k].shape) == tuple(obj[k].shape)
    assert isinstance(out["p"], T.nn.Parameter) and out["p"].requires_grad
    assert out["leaf"].requires_grad and out["leaf"].is_leaf


def test_empty_and_scalar_tensors(T):
    # SerializationMixin test_serialization_empty / 0-d: empty and 0-d tensors of several dtypes
    obj = [T.empty(0), T.zeros(0, 3, dtype=T.int64), T.tensor(True), T.tensor(7, dtype=T.int16),
           T.tensor(1.5, dtype=T.float16), T.tensor(-2.0, dtype=T.bfloat16)]
    buf = io.BytesIO()
    T.save(obj, buf)
    buf.seek(0)
    assert same(T, T.load(buf), obj)
