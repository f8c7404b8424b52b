"""Bad-input parity, round 17 (ops): a probe over ~360 wrong calls (forward-mode AD and
autograd.functional misuse, checkpoint, parametrize and prune, functional_call, the nn.utils
vector/clip helpers, histc/histogram/bincount/bucketize/searchsorted, cov, cdist, einsum,
tensordot, the triangle-index factories, torch.linalg on non-square, integer and badly-shaped
inputs) left these differences from torch 2.13, fixed here: ``histogram`` over a range that is
not finite (given, or the data's with a NaN or an inf value) computed empty bins (torch:
RuntimeError), took a ``range`` of one or three numbers (RuntimeError) and a ``range`` next to a
bins tensor (torch's parser: TypeError), as ``histogramdd`` took a non-finite range; ``cov`` took
negative (or NaN) ``fweights``/``aweights`` and a float or bool ``correction`` (torch:
RuntimeError / TypeError); ``tril_indices``/``triu_indices`` ignored ``device`` and ``layout``
(a bad device is RuntimeError, a sparse layout NotImplementedError); and the ``R`` of
``linalg.qr(A, mode='r')`` was differentiated silently where torch's backward refuses (the
derivative needs Q); ``SobolEngine.draw`` took a float ``n`` (TypeError) and an integer or
half ``dtype`` (NotImplementedError), drew nothing for a first ``draw(0)`` (RuntimeError: torch
makes ``n - 1`` rows after its stored first point) and raised IndexError for a negative ``n``
(RuntimeError); ``fork_rng`` took any ``device_type`` (torch: RuntimeError for a name it does not
know or a value that is not a str, even with ``enabled=False``); and ``sparse.sum`` of a dim
named twice summed it once (RuntimeError). Each call runs under torch (the oracle) and tracegrad: the same exception
class (or none), no text of the layers below tracegrad; ``_ok`` calls are ones torch accepts."""
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


def _v(T):
    return T.tensor([1., 2., 4.])


def _x(T):
    return T.tensor([[1., 2., 4.], [0., 1., 5.]])


def _qr_r_backward(T):
    A = T.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
    T.linalg.qr(A, mode="r").R.sum().backward()


def _sobol(T, drawn=0):
    e = T.quasirandom.SobolEngine(2)
    if drawn:
        e.draw(drawn)
    return e


def _forked(T, **kw):
    with T.random.fork_rng(**kw):
        pass


def _sp(T):
    return T.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 2))


CASES = {
    # histogram / histogramdd: the range must be two finite numbers
    "histogram(range=(0, inf))": lambda T: T.histogram(_v(T), bins=2, range=(0., INF)),
    "histogram(range=(nan, 1))": lambda T: T.histogram(_v(T), bins=2, range=(NAN, 1.)),
    "histogram(NaN in data)": lambda T: T.histogram(T.tensor([NAN, 1.]), bins=2),
    "histogram(inf in data)": lambda T: T.histogram(T.tensor([INF, 1.]), bins=2),
    "histogram(range of 3)": lambda T: T.histogram(_v(T), bins=2, range=(0., 1., 2.)),
    "histogram(range of 1)": lambda T: T.histogram(_v(T), bins=2, range=(0.,)),
    "histogram(bins tensor, range)": lambda T: T.histogram(_v(T), bins=T.tensor([0., 1.]), range=(0., 1.)),
    "histogram(range=(3, 1))": lambda T: T.histogram(_v(T), bins=2, range=(3., 1.)),
    "histogram(range=(0, 5))_ok": lambda T: T.histogram(_v(T), bins=2, range=(0., 5.)),
    "histogramdd(inf in data)": lambda T: T.histogramdd(T.tensor([[INF, 1.], [0., 1.]]), bins=2),
    "histogramdd(range non-finite)": lambda T: T.histogramdd(_x(T).T, bins=2, range=[0., 1., 0., INF]),
    # cov: weights are non-negative, correction an int
    "cov(fweights negative)": lambda T: T.cov(_x(T), fweights=T.tensor([1, -1, 1])),
    "cov(aweights negative)": lambda T: T.cov(_x(T), aweights=T.tensor([1., -1., 1.])),
    "cov(aweights NaN)": lambda T: T.cov(_x(T), aweights=T.tensor([1., NAN, 1.])),
    "cov(both negative)": lambda T: T.cov(_x(T), fweights=T.tensor([1, -1, 1]), aweights=T.tensor([1., -1., 1.])),
    "cov(correction=0.5)": lambda T: T.cov(_x(T), correction=0.5),
    "cov(correction=True)": lambda T: T.cov(_x(T), correction=True),
    "cov(correction=None)": lambda T: T.cov(_x(T), correction=None),
    "cov(correction=-1)_ok": lambda T: T.cov(_x(T), correction=-1),
    "cov(correction=tensor(0))_ok": lambda T: T.cov(_x(T), correction=T.tensor(0)),
    "cov(fweights zero)_ok": lambda T: T.cov(_x(T), fweights=T.tensor([1, 0, 2])),
    # the triangle-index factories: device and layout
    "tril_indices(device='foo')": lambda T: T.tril_indices(2, 2, device="foo"),
    "triu_indices(device=3)": lambda T: T.triu_indices(2, 2, device=3),
    "tril_indices(layout=sparse_coo)": lambda T: T.tril_indices(2, 2, layout=T.sparse_coo),
    "triu_indices(layout=3)": lambda T: T.triu_indices(2, 2, layout=3),
    "tril_indices(device='cpu', layout=strided)_ok": lambda T: T.tril_indices(2, 2, device="cpu", layout=T.strided),
    # SobolEngine.draw: n an int, the rows not negative, a float32/float64 dtype
    "SobolEngine.draw(1.5)": lambda T: _sobol(T).draw(1.5),
    "SobolEngine.draw(0) first": lambda T: _sobol(T).draw(0),
    "SobolEngine.draw(-1) later": lambda T: _sobol(T, 1).draw(-1),
    "SobolEngine.draw(True) later": lambda T: _sobol(T, 1).draw(True),
    "SobolEngine.draw(2, int64)": lambda T: _sobol(T).draw(2, dtype=T.int64),
    "SobolEngine.draw(2, float16)": lambda T: _sobol(T).draw(2, dtype=T.float16),
    "SobolEngine.draw_base2(1, bool)": lambda T: _sobol(T).draw_base2(1, dtype=T.bool),
    "SobolEngine.draw(0) later_ok": lambda T: _sobol(T, 1).draw(0),
    "SobolEngine.draw(1, int64) first_ok": lambda T: _sobol(T).draw(1, dtype=T.int64),
    "SobolEngine.draw(tensor(2))_ok": lambda T: _sobol(T).draw(T.tensor(2)),
    # fork_rng's device_type is checked even when disabled
    "fork_rng(device_type='foo')": lambda T: _forked(T, device_type="foo"),
    "fork_rng(device_type='CUDA', enabled=False)": lambda T: _forked(T, device_type="CUDA", enabled=False),
    "fork_rng(device_type=3)": lambda T: _forked(T, device_type=3),
    "fork_rng(device_type='cuda')_ok": lambda T: _forked(T, device_type="cuda"),
    # sparse sums name each dim once
    "sparse.sum(dim=(0, 0))": lambda T: T.sparse.sum(_sp(T), (0, 0)),
    "sparse sum(dim=(1, -1))": lambda T: _sp(T).sum((1, -1)),
    "sparse.sum(dim=(0, 1))_ok": lambda T: T.sparse.sum(_sp(T), (0, 1)),
    # qr's mode 'r' computes no Q: its R has no derivative
    "qr(mode='r') backward": _qr_r_backward,
    "qr(mode='r') no grad_ok": lambda T: T.linalg.qr(T.ones(3, 2), mode="r"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)
    if name.endswith("_ok"):
        assert outcome(CASES[name], tracegrad)[0] is None


GIST = {
    "histogram(range=(0, inf))": "dimension 0's range [0, inf] is not finite",
    "histogram(NaN in data)": "is not finite",
    "histogramdd(range non-finite)": "dimension 1's range [0, inf] is not finite",
    "histogram(range of 3)": "range should have 2 elements, but got 3",
    "cov(fweights negative)": "fweights cannot be negative",
    "cov(aweights NaN)": "aweights cannot be negative",
    "cov(both negative)": "fweights cannot be negative",
    "cov(correction=0.5)": "argument 'correction' must be int, not float",
    "qr(mode='r') backward": "which is not computed when mode='r'",
    "SobolEngine.draw(1.5)": "argument 'n' (position 2) must be int, not float",
    "SobolEngine.draw(0) first": "Trying to create tensor with negative dimension -1: [-1, 2]",
    "SobolEngine.draw(2, int64)": "\"_sobol_engine_draw\" not implemented for 'Long'",
    "fork_rng(device_type=3)": "Invalid value of device '3'",
    "sparse.sum(dim=(0, 0))": "dim 0 appears multiple times in the list of dims",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_fixed_calls_keep_torch_values():
    for T in (torch, tracegrad):
        # zero weights and a negative correction are fine
        c = T.cov(_x(T), fweights=T.tensor([1, 0, 2]), correction=-1)
        want = torch.cov(_x(torch), fweights=torch.tensor([1, 0, 2]), correction=-1)
        assert [[round(v, 4) for v in r] for r in c.tolist()] == [[round(v, 4) for v in r] for r in want.tolist()]
        h, e = T.histogram(_v(T), bins=2, range=(0., 5.))
        assert h.tolist() == [2., 1.] and e.tolist() == [0., 2.5, 5.]
        t = T.triu_indices(2, 3, 1, device="cpu")
        assert t.tolist() == [[0, 0, 1], [1, 2, 2]] and str(t.device) == "cpu"
        # mode 'r': R requires grad with A (torch's LinalgQrBackward0 node), Q is empty; without
        # grad, a plain tensor
        A = T.tensor([[1., 2.], [3., 4.], [5., 6.]], requires_grad=True)
        q, r = T.linalg.qr(A, mode="r")
        assert tuple(q.shape) == (0,) and r.requires_grad and type(r.grad_fn).__name__ == "LinalgQrBackward0"
        assert [round(abs(v), 4) for v in r.detach().reshape(-1).tolist()] == [5.9161, 7.4374, 0.0, 0.8281]
        with T.no_grad():
            assert not T.linalg.qr(A, mode="r").R.requires_grad
        # Sobol points of the forms torch accepts: the stored first point, then the sequence
        e = _sobol(T)
        pts = [e.draw(1).tolist(), e.draw(T.tensor(2)).tolist(), e.draw(0).tolist(),
               e.draw(1, dtype=T.float64).tolist()]
        assert pts == [[[0., 0.]], [[0.5, 0.5], [0.75, 0.25]], [], [[0.25, 0.75]]]
        assert T.sparse.sum(_sp(T), (0, 1)).item() == 3.
