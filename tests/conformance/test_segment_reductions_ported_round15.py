"""Round 15 of PyTorch's own tests, ported: test/test_segment_reductions.py
(TestSegmentReductions): ``segment_reduce`` over lengths and offsets, the five reductions with
and without ``initial``, NaN data, empty segments, multi-dimensional data along axis 0 and along
an inner axis (the pytorch_scatter cases), the backward (max/min ties and NaNs, prod's exact
gradient) and gradcheck. The originals compare against hand-written tables; here torch 2.13 is
the oracle and both libraries run the same program. Each test loops over its cases so the whole
file compiles few programs."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")
REDUCTIONS = ("max", "mean", "min", "sum", "prod")
# the original's initial values: 0 for all but min (a high number) and prod (0 would zero it)
INITIAL = {"max": 0, "mean": 0, "sum": 0, "min": 1000, "prod": 2}


def _obs(x):
    if x is None:
        return None
    return (str(x.dtype).split(".")[-1], tuple(x.shape), np.asarray(x.detach().double().tolist()))


def run(T, data, red, *, lengths=None, offsets=None, dtype="float64", ldtype="int64", grad=True, **kw):
    """segment_reduce's result and the gradient of its sum, as (dtype, shape, values)."""
    d = T.tensor(data, dtype=getattr(T, dtype), requires_grad=grad)
    seg = {}
    if lengths is not None:
        seg["lengths"] = T.tensor(lengths, dtype=getattr(T, ldtype))
    if offsets is not None:
        seg["offsets"] = T.tensor(offsets, dtype=getattr(T, ldtype))
    out = T.segment_reduce(data=d, reduce=red, **seg, **kw)
    g = T.autograd.grad(out.sum(), d)[0] if grad else None
    return [_obs(out), _obs(g), type(out.grad_fn).__name__ if grad else None]


def assert_same(case, a, b, tol=1e-3):
    for x, y in zip(a, b):
        if x is None or isinstance(x, str):
            assert x == y, (case, a, b)
            continue
        assert x[:2] == y[:2], (case, x[:2], y[:2])
        assert np.allclose(x[2], y[2], rtol=tol, atol=1e-4, equal_nan=True), (case, x[2], y[2])


def both(case, *args, tol=1e-3, **kw):
    assert_same(case, run(torch, *args, **kw), run(tracegrad, *args, **kw), tol)


def test_simple_1d_every_reduction_with_and_without_initial():
    """test_simple_1d: lengths [1, 2, 3, 0] over data with a NaN; values for both ``initial``
    settings, gradients (NaN elements and ties of max/min take the gradient; prod's NaN
    gradient), axis 0 and -1, unsafe on and off; a float32/int32 and a bfloat16 pass."""
    data, lengths = [1, nan, 3, 4, 5, 5], [1, 2, 3, 0]
    for red in REDUCTIONS:
        for initial in (None, INITIAL[red]):
            both((red, initial), data, red, lengths=lengths, initial=initial)
        init = INITIAL[red]
        both((red, "axis -1, unsafe"), data, red, lengths=lengths, axis=-1, unsafe=True, initial=init)
    for red in ("max", "prod"):
        both((red, "float32/int32"), data, red, lengths=lengths, dtype="float32", ldtype="int32", initial=1)
    # low precision: values only (the original checks float16/bfloat16 with a loose tolerance)
    for red in ("sum", "max"):
        both((red, "bfloat16"), data, red, lengths=lengths, dtype="bfloat16", initial=0, tol=2e-2)


def test_multi_d_simple_lengths_and_offsets():
    """test_multi_d_simple (axis 0 of a (6, 2) input, NaNs in both columns) with lengths and with
    the same segmentation as offsets; test_multi_d: a (5, 2, 5) input with empty first and last
    segments, values only as in the original."""
    data = [[1, 1], [nan, 1], [3, nan], [4, 1], [3, 2], [2, 3]]
    for red in REDUCTIONS:
        for initial in (None, INITIAL[red]):
            both((red, initial), data, red, lengths=[1, 2, 3, 0], initial=initial)
        both((red, "offsets"), data, red, offsets=[0, 1, 3, 6, 6], initial=INITIAL[red])
    big = np.arange(50.0).reshape(5, 2, 5).tolist()
    for red in REDUCTIONS:
        init = {"min": 1000, "prod": 1}.get(red, 0)
        for unsafe in (True, False):
            both((red, "multi_d", unsafe), big, red, lengths=[0, 2, 3, 0], initial=init, unsafe=unsafe, grad=False)


# the original's cases along an inner axis (those along axis 0 are the shapes tested above)
SCATTER_CASES = [
    ([[1, 3, 5, 7, 9, 11], [2, 4, 6, 8, 10, 12]], [[0, 2, 5, 5, 6], [0, 3, 5, 6, 6]]),
    ([[[1, 2], [3, 4], [5, 6]], [[7, 9], [10, 11], [12, 13]]], [[0, 2, 3, 3], [0, 1, 1, 3]]),
    ([[[1, 1], [3, 3]], [[2, 2], [4, 4]]], [[0, 2], [0, 2]]),
]


def test_pytorch_scatter_cases_along_inner_axes():
    """test_pytorch_scatter_test_cases: per-row segmentations (lengths = diff(indptr)) along the
    last axis of the index, zero-length segments filled with the reduction's identity; offsets
    give the same; gradients with ``initial`` as the original's gradcheck sets it."""
    for src, indptr in SCATTER_CASES:
        ip = np.asarray(indptr)
        axis = ip.ndim - 1
        lengths = np.diff(ip, axis=axis).tolist()
        for i, red in enumerate(REDUCTIONS):
            if i % 2:       # identities in the empty segments, values only
                both((red, src), src, red, lengths=lengths, axis=axis, unsafe=True, grad=False)
            else:
                init = {"min": 1000, "max": -1000}.get(red, 1)
                both((red, "offsets", src), src, red, offsets=indptr, axis=axis, initial=init)


def test_gradcheck_and_grad_fn():
    """The original's gradcheck (float64, initial given so empty segments stay finite), on both
    an outer and an inner axis; the node is SegmentReduceBackward0 and sum/mean are twice
    differentiable."""
    x = tracegrad.tensor([[1.0, 2.0, 0.5], [3.0, -4.0, 2.5]], dtype=tracegrad.float64, requires_grad=True)
    for red in REDUCTIONS:
        init = {"min": 1000, "max": -1000}.get(red, 1)

        def rows(t, red=red, init=init):
            return tracegrad.segment_reduce(t, red, lengths=tracegrad.tensor([[2, 0, 1], [1, 2, 0]]), axis=1,
                                            initial=init)

        def cols(t, red=red, init=init):
            return tracegrad.segment_reduce(t, red, lengths=tracegrad.tensor([0, 2]), initial=init)

        assert tracegrad.autograd.gradcheck(rows, (x,)), red
        if red in ("prod", "max"):      # axis 0: the shapes the other tests run already
            assert tracegrad.autograd.gradcheck(cols, (x,)), red
        assert type(rows(x).grad_fn).__name__ == "SegmentReduceBackward0"
    for red in ("sum", "mean"):
        assert tracegrad.autograd.gradgradcheck(
            lambda t, red=red: tracegrad.segment_reduce(t, red, lengths=tracegrad.tensor([0, 2]), initial=1), (x,))


def test_bad_arguments_raise_as_torch():
    """Negative lengths, lengths not summing to the axis, neither lengths nor offsets, an unknown
    reduction, integer data and an axis that is not the lengths' last dimension."""
    cases = [
        dict(data=[1.0, 2.0], red="sum", lengths=[3, -1]),
        dict(data=[1.0, 2.0], red="sum", lengths=[1, 0]),
        dict(data=[1.0, 2.0], red="sum"),
        dict(data=[1.0, 2.0], red="median", lengths=[2]),
        dict(data=[[1.0, 2.0]], red="sum", lengths=[2], axis=1),
    ]
    for kw in cases:
        kw = dict(kw)
        data, red = kw.pop("data"), kw.pop("red")
        errs = []
        for T in (torch, tracegrad):
            with pytest.raises(Exception) as info:
                run(T, data, red, grad=False, **kw)
            errs.append(info.type)
        assert errs[0] is errs[1], (kw, errs)
    for T in (torch, tracegrad):
        with pytest.raises(NotImplementedError):
            T.segment_reduce(T.tensor([1, 2, 3]), "sum", lengths=T.tensor([2, 1]))
