"""The 'meta' device (NOTE [meta tensors] in ``_tensor/storage.py``) and ``with device(...)``
against torch 2.13: what programs read of meta tensors (device, shape, dtype, repr), torch's
errors for reading their data, ``Module.to('meta')``/``to_empty``, factories inside
``with device('meta')`` (the model-ensembling tutorial's meta skeleton is a program test in
tests/api/test_public_programs_round3.py)."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LIBS = (tracegrad, torch)


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(2, 3, device="meta"),
    lambda lib: lib.zeros(0, device="meta"),
    lambda lib: lib.tensor(3.0, device="meta"),
    lambda lib: lib.empty(2, 2, dtype=lib.int64, device=lib.device("meta")),
    lambda lib: lib.randn(4, device="meta"),
    lambda lib: lib.ones(2, 3).to("meta"),
])
def test_meta_factories_and_repr(make):
    ours, theirs = make(tracegrad), make(torch)
    assert str(ours.device) == str(theirs.device) == "meta"
    assert ours.is_meta and theirs.is_meta
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert repr(ours).replace("tracegrad.", "torch.") == repr(theirs)


@pytest.mark.parametrize("read,error", [
    (lambda t: t[:1].reshape(()).item() if t.numel() else None, RuntimeError),
    (lambda t: t.tolist(), NotImplementedError),
    (lambda t: t.numpy(), TypeError),
    (lambda t: t.to("cpu"), NotImplementedError),
    (lambda t: bool(t[0, 0]), RuntimeError),
])
def test_reading_meta_data_raises_as_torch(read, error):
    for lib in LIBS:
        t = lib.ones(2, 3, device="meta")
        with pytest.raises(error):
            read(t)
    assert not tracegrad.ones(2).is_meta


def test_module_to_meta_and_to_empty():
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        w = m[0].weight
        m.to("meta")
        # a meta tensor's data cannot be swapped in place: new Parameter objects, as torch
        assert m[0].weight is not w and type(m[0].weight).__name__ == "Parameter" and m[0].weight.requires_grad
        assert not w.is_meta
        assert all(p.is_meta for p in m.parameters()) and all(b.is_meta for b in m.buffers())
        m.to_empty(device="cpu")
        assert not any(p.is_meta for p in m.parameters()) and str(m[0].weight.device) == "cpu"
        assert tuple(m[0].weight.shape) == (4, 3) and m[1].num_batches_tracked.dtype == lib.int64


def test_device_as_context_manager():
    for lib in LIBS:
        with lib.device("meta"):
            layer = lib.nn.Linear(2, 5)
            inner_default = str(lib.zeros(1).device)
            with lib.device("cpu"):
                assert str(lib.zeros(1).device) == "cpu"
            assert str(lib.zeros(1).device) == "meta"
        assert inner_default == "meta" and layer.weight.is_meta
        assert str(lib.zeros(1).device) == "cpu"
    import jax
    assert jax.config.jax_default_device is None      # the user's JAX setting is back


def test_device_names():
    assert tracegrad.device("meta") == "meta" and repr(tracegrad.device("meta")) == repr(torch.device("meta"))
    with pytest.raises(RuntimeError):
        tracegrad.device("nosuch")


_META_OPS = {
    "add scalar": lambda T, m, c: m + 1,
    "matmul": lambda T, m, c: m @ T.ones(3, 2, device="meta"),
    "with 0-d cpu": lambda T, m, c: m + T.tensor(1.0),
    "sum": lambda T, m, c: m.sum(),
    "index view": lambda T, m, c: m[0],
    "relu": lambda T, m, c: T.nn.functional.relu(m),
    "cat": lambda T, m, c: T.cat([m, m]),
    "max dim": lambda T, m, c: m.max(0),
    "compare": lambda T, m, c: m > 0,
    "linear": lambda T, m, c: T.nn.Linear(3, 4, device="meta")(m),
    "with cpu tensor": lambda T, m, c: m + c,
}


@pytest.mark.parametrize("case", list(_META_OPS))
def test_ops_on_meta_tensors_give_meta_tensors(case):
    """Each result's device and shape (or torch's error class) as torch's."""
    torch = pytest.importorskip("torch")

    def run(T):
        m, c = T.ones(2, 3, device="meta"), T.ones(2, 3)
        try:
            r = _META_OPS[case](T, m, c)
        except RuntimeError as e:
            return "RuntimeError", "meta" in str(e)
        rs = tuple(r) if isinstance(r, tuple) else (r,)
        return [(str(x.device), tuple(x.shape), str(x.dtype).replace("torch.", "").replace("tracegrad.", ""))
                for x in rs]
    assert run(tracegrad) == run(torch)
    assert tracegrad.ones(2).add(1).device.type == "cpu"     # plain tensors stay as they were
