"""torch's ``out=`` keyword on the functions that accept it (they used to accept it and ignore
it), the ``size=`` keyword of the ``*size`` factories, and ``torch.spmm`` on dense tensors;
each compared with torch on the same inputs."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

CALLS = [
    ("cat", lambda m, out: m.cat([m.ones(2), m.arange(2.0)], out=out), lambda m: m.zeros(4)),
    ("stack", lambda m, out: m.stack([m.ones(2), m.arange(2.0)], out=out), lambda m: m.zeros(2, 2)),
    ("zeros", lambda m, out: m.zeros(3, out=out), lambda m: m.ones(3)),
    ("arange", lambda m, out: m.arange(3, out=out), lambda m: m.zeros(3, dtype=m.int64)),
    ("linalg.inv", lambda m, out: m.linalg.inv(m.eye(2) * 2, out=out), lambda m: m.zeros(2, 2)),
    ("float->double", lambda m, out: m.cat([m.ones(2)], out=out), lambda m: m.zeros(2, dtype=m.float64)),
    ("view", lambda m, out: m.cat([m.ones(1), m.ones(2) * 2], out=out), lambda m: m.zeros(2, 3)[1]),
]


@pytest.mark.parametrize("name,call,make_out", CALLS, ids=[c[0] for c in CALLS])
def test_result_is_written_into_out_and_returned(name, call, make_out):
    for m in (torch, tracegrad):
        out = make_out(m)
        base = out._base if out._base is not None else out
        r = call(m, out)
        assert r is out
        if m is torch:
            ref, ref_base, ref_dtype = out.numpy(), base.numpy(), str(out.dtype)
    np.testing.assert_allclose(out.numpy(), ref)
    np.testing.assert_allclose(base.numpy(), ref_base)      # a view's base sees the write
    assert str(out.dtype).split(".")[-1] == ref_dtype.split(".")[-1]


def test_namedtuple_out_for_multi_output_functions():
    a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    res = {}
    for m in (torch, tracegrad):
        q, r = m.zeros(2, 2), m.zeros(2, 2)
        got = m.linalg.qr(m.tensor(a), out=(q, r))
        assert got[0] is q and got[1] is r
        res[m] = (q.numpy(), r.numpy())
    np.testing.assert_allclose(np.abs(res[tracegrad][0]), np.abs(res[torch][0]), atol=1e-6)
    np.testing.assert_allclose(np.abs(res[tracegrad][1]), np.abs(res[torch][1]), atol=1e-6)


def _error(m, fn):
    try:
        fn(m)
    except Exception as e:      # noqa: BLE001  (the class is what is compared)
        return type(e), str(e)
    return None, ""


@pytest.mark.parametrize("fn", [
    lambda m: m.cat([m.ones(2)], out=m.zeros(2, dtype=m.int64)),           # float into long: TypeError
    lambda m: m.linalg.inv(m.eye(2), out=m.zeros(2, 2, dtype=m.int64)),    # linalg wants its own dtype
    lambda m: m.tensordot(m.ones(2), m.ones(2), dims=1, out=m.zeros((), dtype=m.float64)),
    lambda m: m.cat([m.ones(2, requires_grad=True)], out=m.zeros(2)),      # autograd through out=
    lambda m: m.zeros(2, out=m.zeros(2, requires_grad=True)),
], ids=["cat_float_to_long", "inv_to_long", "tensordot_to_double", "input_requires_grad", "out_requires_grad"])
def test_errors_match_torch(fn):
    (tc, tmsg), (gc, gmsg) = _error(torch, fn), _error(tracegrad, fn)
    assert tc is not None and gc is tc, (tmsg, gmsg)
    key = "automatic differentiation" if "automatic" in tmsg else "cast" if "cast" in tmsg else "dtype"
    assert key in gmsg, (tmsg, gmsg)


def test_out_requires_grad_is_allowed_under_no_grad():
    for m in (torch, tracegrad):
        out = m.zeros(2, requires_grad=True)
        with m.no_grad():
            m.cat([m.ones(2)], out=out)
        assert out.requires_grad and out.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("start_numel", [0, 3])
def test_out_of_another_shape_is_resized_warning_unless_empty(start_numel):
    for m in (torch, tracegrad):
        out = m.zeros(start_numel)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.cat([m.ones(2), m.ones(2)], out=out)
        assert tuple(out.shape) == (4,) and out.tolist() == [1.0] * 4
        assert any("was resized" in str(x.message) for x in w) == bool(start_numel), m.__name__


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_of_the_factories(name):
    for m in (torch, tracegrad):
        assert tuple(getattr(m, name)(size=(2, 3)).shape) == (2, 3)
        assert tuple(getattr(m, name)(size=[4]).shape) == (4,)
        with pytest.raises(TypeError):
            getattr(m, name)(2, size=(2,))


def test_spmm_on_dense_tensors_is_mm():
    a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    b = np.random.RandomState(1).randn(4, 2).astype(np.float32)
    outs = {}
    for m in (torch, tracegrad):
        x = m.tensor(a, requires_grad=True)
        y = m.spmm(x, m.tensor(b))
        y.sum().backward()
        outs[m] = (y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__)
    np.testing.assert_allclose(outs[tracegrad][0], outs[torch][0], rtol=1e-5)
    np.testing.assert_allclose(outs[tracegrad][1], outs[torch][1], rtol=1e-5)
    assert outs[tracegrad][2] == outs[torch][2] == "MmBackward0"



def test_out_into_an_outside_buffer_inside_a_compiled_function():
    buf = tracegrad.zeros(4)

    def f(x):
        tracegrad.cat([x, x * 2], out=buf)
        return buf.sum()
    g = tracegrad.compile(f)
    for i in range(3):
        assert g(tracegrad.ones(2) * i).item() == 6.0 * i
        assert buf.tolist() == [i, i, 2 * i, 2 * i]
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]
