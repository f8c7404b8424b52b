"""``tracegrad.masked``: the masked reductions and normalizations against ``torch.masked`` on
the same inputs and masks -- values, dtypes, gradients and errors."""
import math

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

X = np.random.RandomState(1).randn(3, 4).astype(np.float32)
M = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], dtype=bool)   # row 1 fully masked out


def _both(x=X, m=M):
    return (tracegrad.tensor(x), tracegrad.tensor(m)), (torch.tensor(x), torch.tensor(m))


def _same(ours, theirs, atol=1e-5):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol, equal_nan=True)


REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("kw", [dict(dim=1), dict(dim=None), dict(dim=(0, 1), keepdim=True), dict(dim=-2)])
def test_reductions_match_torch(name, kw):
    (x, m), (tx, tm) = _both()
    _same(getattr(tracegrad.masked, name)(x, mask=m, **kw), getattr(torch.masked, name)(tx, mask=tm, **kw))


@pytest.mark.parametrize("name", ["argmax", "argmin", "median"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_index_reductions_match_torch(name, keepdim):
    (x, m), (tx, tm) = _both()
    _same(getattr(tracegrad.masked, name)(x, 1, mask=m, keepdim=keepdim),
          getattr(torch.masked, name)(tx, 1, mask=tm, keepdim=keepdim))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1])
def test_normalizations_match_torch(name, dim):
    (x, m), (tx, tm) = _both()
    _same(getattr(tracegrad.masked, name)(x, dim, mask=m), getattr(torch.masked, name)(tx, dim, mask=tm))


@pytest.mark.parametrize("ord", [2.0, 1.0, math.inf])
def test_normalize_and_norm_orders(ord):
    (x, m), (tx, tm) = _both()
    _same(tracegrad.masked.normalize(x, ord, 1, mask=m), torch.masked.normalize(tx, ord, 1, mask=tm))
    _same(tracegrad.masked.norm(x, ord, 0, mask=m), torch.masked.norm(tx, ord, 0, mask=tm))


def test_norm_minus_inf_identity_is_inf():
    (x, m), (tx, tm) = _both()
    _same(tracegrad.masked.norm(x, -math.inf, 1, mask=m), torch.masked.norm(tx, -math.inf, 1, mask=tm))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "int64"])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "var"])
def test_integer_dtypes_promote_as_torch(dtype, name):
    v = (np.abs(X) * 3).astype(dtype)
    (x, m), (tx, tm) = _both(v)
    if name in ("amax", "amin", "argmax", "var") and dtype == "bool":   # no identity / no bool subtraction
        error = NotImplementedError if name != "var" else RuntimeError
        with pytest.raises(error):
            getattr(torch.masked, name)(tx, 1, mask=tm)
        with pytest.raises(error):
            getattr(tracegrad.masked, name)(x, 1, mask=m)
        return
    _same(getattr(tracegrad.masked, name)(x, 1, mask=m), getattr(torch.masked, name)(tx, 1, mask=tm))


def test_mask_broadcasts_and_casts_to_bool():
    (x, _), (tx, _) = _both()
    m = np.array([1, 0, 2, 1], dtype=np.int64)
    _same(tracegrad.masked.sum(x, 0, mask=tracegrad.tensor(m)), torch.masked.sum(tx, 0, mask=torch.tensor(m)))
    _same(tracegrad.masked.softmax(x, 1, mask=tracegrad.tensor(m > 0)), torch.masked.softmax(tx, 1, mask=torch.tensor(m > 0)))


def test_dtype_argument_and_no_mask():
    (x, m), (tx, tm) = _both()
    _same(tracegrad.masked.sum(x, 1, dtype=tracegrad.float64, mask=m), torch.masked.sum(tx, 1, dtype=torch.float64, mask=tm))
    _same(tracegrad.masked.mean(x, 0), torch.masked.mean(tx, 0))
    _same(tracegrad.masked.var(x, 1, correction=0), torch.masked.var(tx, 1, correction=0))
    _same(tracegrad.masked.std(x, 1, unbiased=False, mask=m), torch.masked.std(tx, 1, unbiased=False, mask=tm))


def test_logaddexp_masks():
    (x, m), (tx, tm) = _both()
    y = np.flip(X, 1).copy()
    _same(tracegrad.masked.logaddexp(x, tracegrad.tensor(y), input_mask=m, other_mask=m),
          torch.masked.logaddexp(tx, torch.tensor(y), input_mask=tm, other_mask=tm))


@pytest.mark.parametrize("name,args", [("sum", (1,)), ("amax", (1,)), ("mean", (1,)), ("std", (1,)),
                                       ("softmax", (1,)), ("log_softmax", (0,)), ("prod", (0,)),
                                       ("logsumexp", (1,)), ("normalize", (2.0, 1)), ("cumsum", (1,))])
def test_gradients_match_torch(name, args):
    m = M.copy()
    m[1, 2] = True   # no fully masked row: torch's gradient there is nan for several ops
    ours, theirs = tracegrad.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out = getattr(tracegrad.masked, name)(ours, *args, mask=tracegrad.tensor(m))
    tout = getattr(torch.masked, name)(theirs, *args, mask=torch.tensor(m))
    w = np.random.RandomState(2).randn(*tout.shape).astype(np.float32)
    (tracegrad.where(tracegrad.isfinite(out), out, 0) * tracegrad.tensor(w)).sum().backward()
    (torch.where(torch.isfinite(tout), tout, 0) * torch.tensor(w)).sum().backward()
    _same(ours.grad, theirs.grad, atol=1e-4)


def test_errors_as_torch():
    (x, m), (tx, tm) = _both()
    for lib, a, b in ((tracegrad, x, m), (torch, tx, tm)):
        with pytest.raises(ValueError, match="Could not infer output dtype"):
            lib.masked.mean(a.long(), 1, mask=b)
        with pytest.raises(IndexError, match="broadcastable mask"):
            lib.masked.sum(a[0], 0, mask=b)
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.masked.sum(a, 2, mask=b)
        with pytest.raises(RuntimeError, match="appears multiple times"):
            lib.masked.sum(a, (1, 1), mask=b)
        with pytest.raises(ValueError, match="fully masked out rows"):
            lib.masked.median(a.long(), 1, mask=b)
        with pytest.raises(ValueError, match="requires explicit mask"):
            lib.masked._input_mask(a)


def test_output_mask_and_reduction_identity():
    (x, m), (tx, tm) = _both()
    _same(tracegrad.masked._output_mask(tracegrad.masked.sum, x, 1, mask=m),
          torch.masked._output_mask(torch.masked.sum, tx, 1, mask=tm))
    _same(tracegrad.masked._output_mask(tracegrad.masked.softmax, x, 1, mask=m),
          torch.masked._output_mask(torch.masked.softmax, tx, 1, mask=tm))
    for op in ("sum", "prod", "amax", "amin", "logsumexp", "norm"):
        _same(tracegrad.masked._reduction_identity(op, x), torch.masked._reduction_identity(op, tx))
    assert tracegrad.masked._reduction_identity("mean", x) is None
    with pytest.raises(ValueError, match="expected masked operation"):
        tracegrad.masked._output_mask(tracegrad.add, x, mask=m)
