"""torch.segment_reduce (values and gradients, lengths/offsets, axis, initial, unsafe, errors)
and torch.histogramdd (int/sequence/tensor bins, range, weight, density, errors) against torch."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _both(a, **kw):
    return tracegrad.tensor(a, **kw), torch.tensor(a)


SEGMENT_CASES = [
    # data, kwargs (lengths/offsets as lists), axis
    (np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), dict(lengths=[2, 0, 3, 1])),
    (np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), dict(offsets=[0, 2, 2, 5, 6])),
    (np.array([2.0, 2.0, 1.0, 0.0, 5.0, 0.0, 0.0, 3.0]), dict(lengths=[3, 3, 2])),       # max ties, prod zeros
    (np.arange(12.0).reshape(6, 2) / 7, dict(lengths=[2, 4], axis=0)),
    (np.arange(24.0).reshape(2, 6, 2) / 5 - 2, dict(lengths=[[2, 4], [3, 3]], axis=1)),
    (np.array([1.0, 2.0, 3.0, 4.0]), dict(lengths=[3, 1, 0], initial=2.5)),
]


# each case with the reductions it exercises (compiles are the cost: not the full product)
SEGMENT_RUNS = [(0, "sum"), (0, "mean"), (0, "max"), (1, "min"), (1, "prod"), (2, "max"), (2, "min"), (2, "prod"),
                (3, "mean"), (3, "max"), (4, "sum"), (4, "min"), (5, "mean"), (5, "max"), (5, "prod")]


@pytest.mark.parametrize("case, reduce", SEGMENT_RUNS)
def test_segment_reduce_matches_torch(case, reduce):
    data, kw = SEGMENT_CASES[case]
    kw_ours = {k: tracegrad.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
    kw_ref = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
    x = tracegrad.tensor(data, requires_grad=True)
    xr = torch.tensor(data, requires_grad=True)
    y = tracegrad.segment_reduce(x, reduce, **kw_ours)
    yr = torch.segment_reduce(xr, reduce, **kw_ref)
    np.testing.assert_allclose(y.detach().numpy(), yr.detach().numpy(), rtol=1e-12, equal_nan=True)
    assert y.grad_fn.name() == yr.grad_fn.name() == "SegmentReduceBackward0"
    w = np.random.default_rng(case).normal(size=tuple(yr.shape))
    w[~np.isfinite(yr.detach().numpy())] = 0                  # empty segments' nan/inf carry no gradient
    (g,) = tracegrad.autograd.grad((y.nan_to_num(0, 0, 0) * tracegrad.tensor(w)).sum(), x)
    (gr,) = torch.autograd.grad((yr.nan_to_num(0, 0, 0) * torch.tensor(w)).sum(), xr)
    np.testing.assert_allclose(g.numpy(), gr.numpy(), rtol=1e-12, atol=1e-14)


def test_segment_reduce_unsafe_dtypes_and_errors():
    x, xr = _both([1.0, 3.0])
    lengths = [1, 1]
    np.testing.assert_array_equal(tracegrad.segment_reduce(x, "sum", lengths=tracegrad.tensor(lengths), unsafe=True).numpy(),
                                  torch.segment_reduce(xr, "sum", lengths=torch.tensor(lengths), unsafe=True).numpy())
    # lengths running past the end: torch reads past its buffer; here the missing elements are skipped
    assert tracegrad.segment_reduce(x, "sum", lengths=tracegrad.tensor([1, 5]), unsafe=True).tolist() == [1.0, 3.0]
    np.testing.assert_array_equal(
        tracegrad.segment_reduce(tracegrad.zeros(0), "sum", lengths=tracegrad.tensor([0, 0])).numpy(),
        torch.segment_reduce(torch.zeros(0), "sum", lengths=torch.tensor([0, 0])).numpy())
    y = tracegrad.segment_reduce(x.float(), "amax", lengths=tracegrad.tensor([1, 1], dtype=tracegrad.int32))
    assert y.dtype == tracegrad.float32 and y.tolist() == [1.0, 3.0]
    L = tracegrad.tensor([2, 0])
    bad = [
        (RuntimeError, lambda: tracegrad.segment_reduce(x, "sum", lengths=tracegrad.tensor([2, 2]))),
        (RuntimeError, lambda: tracegrad.segment_reduce(x, "foo", lengths=L)),
        (RuntimeError, lambda: tracegrad.segment_reduce(x, "sum")),
        (RuntimeError, lambda: tracegrad.segment_reduce(x, "sum", lengths=tracegrad.tensor([3, -1]))),
        (RuntimeError, lambda: tracegrad.segment_reduce(x, "sum", indices=L)),
        (RuntimeError, lambda: tracegrad.segment_reduce(x.reshape(1, 2), "sum", lengths=L, axis=1)),
        (NotImplementedError, lambda: tracegrad.segment_reduce(x, "sum", lengths=L.float())),
        (NotImplementedError, lambda: tracegrad.segment_reduce(tracegrad.tensor([1, 2]), "sum", lengths=L)),
        (IndexError, lambda: tracegrad.segment_reduce(x, "sum", lengths=L, axis=1)),
    ]
    for cls, f in bad:
        with pytest.raises(cls):
            f()


HIST_CASES = [
    (np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.5, 1.5]]), dict(bins=[3, 3])),
    (np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.5, 0.25]]), dict(bins=2, range=[0.0, 1.0, 0.0, 1.0])),
    (np.random.default_rng(0).normal(size=(4, 5, 3)), dict(bins=(2, 3, 4))),
    (np.random.default_rng(1).normal(size=(20, 1)), dict(bins=4, range=[-1.0, 1.0])),
    (np.array([[0.5, 0.1], [1.5, 1.9], [1.0, 0.0], [3.0, 0.0]]), dict(bins=["e0", "e1"])),
]


@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", range(len(HIST_CASES)))
def test_histogramdd_matches_torch(case, weighted, density):
    pts, kw = HIST_CASES[case]
    edges = {"e0": [0.0, 1.0, 2.0], "e1": [0.0, 0.5, 2.0]}
    kw_ours, kw_ref = dict(kw), dict(kw)
    if kw["bins"] and isinstance(kw["bins"], list) and isinstance(kw["bins"][0], str):
        kw_ours["bins"] = [tracegrad.tensor(edges[b]) for b in kw["bins"]]
        kw_ref["bins"] = [torch.tensor(edges[b]) for b in kw["bins"]]
    w = np.random.default_rng(case).uniform(0.5, 2, size=pts.shape[:-1]) if weighted else None
    ours = tracegrad.histogramdd(tracegrad.tensor(pts, dtype=tracegrad.float32), **kw_ours, density=density,
                                 weight=None if w is None else tracegrad.tensor(w, dtype=tracegrad.float32))
    ref = torch.histogramdd(torch.tensor(pts, dtype=torch.float32), **kw_ref, density=density,
                            weight=None if w is None else torch.tensor(w, dtype=torch.float32))
    assert type(ours).__name__ == "histogramdd" and isinstance(ours.bin_edges, tuple)
    assert ours.hist.dtype == tracegrad.float32
    np.testing.assert_allclose(ours.hist.numpy(), ref.hist.numpy(), rtol=1e-5)
    assert len(ours.bin_edges) == len(ref.bin_edges)
    for a, b in zip(ours.bin_edges, ref.bin_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_histogramdd_errors():
    x = tracegrad.tensor([[0.0, 1.0], [1.0, 0.0]])
    bad = [
        (RuntimeError, lambda: tracegrad.histogramdd(x, bins=[2, 2, 2])),
        (RuntimeError, lambda: tracegrad.histogramdd(x, bins=2, range=[0.0, 1.0])),
        (RuntimeError, lambda: tracegrad.histogramdd(x, bins=0)),
        (RuntimeError, lambda: tracegrad.histogramdd(x, bins=2, weight=tracegrad.ones(3))),
        (RuntimeError, lambda: tracegrad.histogramdd(x, bins=2, range=[1.0, 0.0, 0.0, 1.0])),
        (RuntimeError, lambda: tracegrad.histogramdd(tracegrad.tensor([1.0, 2.0]), bins=2)),
        (NotImplementedError, lambda: tracegrad.histogramdd(x.long(), bins=2)),
    ]
    for cls, f in bad:
        with pytest.raises(cls):
            f()
