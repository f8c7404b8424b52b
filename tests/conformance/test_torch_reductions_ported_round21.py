"""Round 21 of PyTorch's own tests, ported: test/test_torch.py (TestTorchDeviceType) on
unique/unique_consecutive (test_unique_dim, test_unique_consecutive*), bincount (test_bincount),
histc (test_histc), cdist (test_cdist_*), nonzero/argwhere (test_nonzero*), masked_fill_
(test_masked_fill*) and index_fill_ (test_index_fill*) edge cases; and test/test_reductions.py
(TestReductions) edge cases beyond tests/conformance/test_reductions_ported_round4.py: empty
inputs (test_reduction_empty_*, test_empty_tensor_*), NaN propagation and the nan* variants
(test_nansum*, test_nanmean*, test_nanmedian*), dtype= arguments (test_sum_dtype,
test_prod_dtype, test_cumsum_dtype), 0-d inputs (test_dim_reduction_*), and the
"degrees of freedom <= 0" warning of var/std. Each check runs with torch 2.13 (the oracle) and
with tracegrad and must give the same value (dtype, shape, values; NaN equal to NaN), the same
exception class, and the same warning classes."""

import numpy as np
import pytest
from _observe_helpers import make_check

torch = pytest.importorskip("torch")


def _norm(v):
    if hasattr(v, "detach") and hasattr(v, "shape"):
        d = v.detach()
        vals = np.asarray((d.abs() if d.is_complex() else d).double().tolist(), dtype=np.float64)
        return "T", str(v.dtype).split(".")[-1], tuple(v.shape), np.where(np.isnan(vals), "nan", np.round(vals, 5)).tolist()
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if type(v).__name__ in ("Size", "dtype"):
        return str(v).split(".")[-1]
    return v


check = make_check(_norm)


X = [[1., 2, 2], [1, 2, 2], [3, 1, 1.]]
V = [2, 1, 1, 3, 3, 3, 2, 0]


def test_unique_bincount_histc_cdist():
    """unique (sorted/unsorted counts, dim=0/1 with inverse and counts, empty inputs and empty
    dims, NaNs kept apart, bool, a bad dim), unique_consecutive (flat and per dim), bincount
    (minlength, float/int weights and the result dtype, empty input, negative, 2-D, float or
    bad-length input errors), histc (min/max given or taken from the data, a constant input,
    empty input, bins=0, min > max, integer input, inf, float64), cdist (p = 2, 1, 0, inf, 3;
    batched and broadcast; mismatched columns, negative p, 1-D and empty inputs)."""
    x, v = (lambda T: T.tensor(X)), (lambda T: T.tensor(V))
    a, b = (lambda T: T.arange(6.).reshape(2, 3)), (lambda T: T.arange(9.).reshape(3, 3) * 0.5)
    check([
        lambda T: T.unique(v(T), sorted=True, return_inverse=True, return_counts=True),
        lambda T: T.unique(v(T), sorted=False, return_counts=True)[1].sum(),
        lambda T: T.unique(x(T), dim=0, return_inverse=True, return_counts=True),
        lambda T: T.unique(x(T), dim=1, return_inverse=True, return_counts=True),
        lambda T: T.unique_consecutive(v(T), return_inverse=True, return_counts=True),
        lambda T: T.unique_consecutive(x(T), dim=0, return_inverse=True, return_counts=True),
        lambda T: T.unique_consecutive(x(T), dim=1, return_counts=True),
        lambda T: T.unique(T.tensor([]), return_inverse=True, return_counts=True),
        lambda T: T.unique(T.zeros(0, 3), dim=0, return_counts=True),
        lambda T: T.unique(T.zeros(2, 0), dim=0, return_counts=True),
        lambda T: T.unique(T.tensor([1., float("nan"), float("nan"), 1.])),
        lambda T: T.unique(T.tensor([True, False, True])), lambda T: T.unique(x(T), dim=5),
        lambda T: T.bincount(v(T), minlength=10), lambda T: T.bincount(v(T), weights=T.arange(8.)),
        lambda T: T.bincount(v(T), weights=T.arange(8, dtype=T.int32)),
        lambda T: T.bincount(v(T), weights=T.arange(8., dtype=T.float32)).dtype,
        lambda T: T.bincount(T.tensor([], dtype=T.long), minlength=3), lambda T: T.bincount(T.tensor([-1, 2])),
        lambda T: T.bincount(T.tensor([[1, 2]])), lambda T: T.bincount(T.tensor([1., 2.])),
        lambda T: T.bincount(v(T), minlength=-1), lambda T: T.bincount(v(T), weights=T.ones(3)),
        lambda T: T.histc(T.tensor([1., 2, 1, 4, 5]), bins=4, min=0, max=3), lambda T: T.histc(T.tensor([1., 2, 1, 4, 5]), bins=4),
        lambda T: T.histc(T.tensor([2., 2, 2]), bins=5), lambda T: T.histc(T.tensor([]), bins=3),
        lambda T: T.histc(T.tensor([1., 2]), bins=0), lambda T: T.histc(T.tensor([1., 2]), bins=3, min=3, max=1),
        lambda T: T.histc(T.tensor([1, 2]), bins=3), lambda T: T.histc(T.tensor([1., float("inf")]), bins=3),
        lambda T: T.histc(T.tensor([1., 2, 3], dtype=T.float64), bins=3, min=1, max=3),
        lambda T: T.cdist(a(T), b(T)), lambda T: T.cdist(a(T), b(T), p=1), lambda T: T.cdist(a(T), b(T), p=0),
        lambda T: T.cdist(a(T), b(T), p=float("inf")), lambda T: T.cdist(a(T), b(T), p=3),
        lambda T: T.cdist(T.arange(12.).reshape(2, 2, 3), b(T)[None]), lambda T: T.cdist(a(T), T.arange(8.).reshape(2, 4)),
        lambda T: T.cdist(a(T), b(T), p=-1), lambda T: T.cdist(T.zeros(0, 3), T.ones(2, 3)),
        lambda T: T.cdist(T.arange(3.), T.arange(3.)),
    ])


def test_nonzero_masked_fill_index_fill():
    """nonzero/argwhere/count_nonzero (as_tuple on n-d, 0-d true/false and empty inputs);
    masked_fill_ (0-d bool mask, 0-d or 1-element value tensors, a 2-element value, a non-bool
    mask, broadcasting a row mask, a mask that must not broadcast the target, an integer target
    with a float value); index_fill_ (negative, out-of-range, float and 2-D index; 0-d tensor
    value, a 1-element value, a 0-d target, an integer target)."""
    x = lambda T: T.tensor(X)
    check([
        lambda T: T.nonzero(x(T) > 1, as_tuple=True), lambda T: T.nonzero(T.tensor(3.), as_tuple=True),
        lambda T: T.nonzero(T.tensor(0.), as_tuple=True), lambda T: T.nonzero(T.tensor(3.)),
        lambda T: T.nonzero(T.zeros(2, 0)), lambda T: T.nonzero(T.zeros(2, 0), as_tuple=True),
        lambda T: T.argwhere(x(T) > 1), lambda T: T.count_nonzero(x(T) - 1, dim=(0, 1)),
        lambda T: x(T).masked_fill_(x(T) > 1, 0.5), lambda T: x(T).masked_fill_(T.tensor(True), 7.),
        lambda T: x(T).masked_fill_(x(T) > 1, T.tensor(9.)), lambda T: x(T).masked_fill_(x(T) > 1, T.tensor([9.])),
        lambda T: x(T).masked_fill_(x(T) > 1, T.tensor([9., 8])), lambda T: x(T).masked_fill_((x(T) > 1).int(), 0.5),
        lambda T: x(T).masked_fill_(T.tensor([True, False, True]), 0.5),
        lambda T: x(T).masked_fill_(T.ones(2, 3, dtype=T.bool), 0.5),
        lambda T: x(T).masked_fill(T.tensor([[[True, False, True]]]), 0.5),
        lambda T: T.arange(3).masked_fill(T.tensor([True, False, True]), 2.7),
        lambda T: T.arange(3).masked_fill(T.tensor([True, False, True]), T.tensor(2.7)),
        lambda T: x(T).index_fill_(1, T.tensor([0, 2]), -1.), lambda T: x(T).index_fill_(0, T.tensor([-1]), -1.),
        lambda T: x(T).index_fill_(1, T.tensor([0, 2]), T.tensor(-2.)),
        lambda T: x(T).index_fill_(1, T.tensor([0, 2]), T.tensor([-2.])), lambda T: x(T).index_fill_(1, T.tensor([3]), -1.),
        lambda T: x(T).index_fill_(1, T.tensor([0.]), -1.), lambda T: x(T).index_fill_(1, T.tensor([[0]]), -1.),
        lambda T: T.tensor(5.).index_fill_(0, T.tensor([0]), 1.), lambda T: T.arange(4).index_fill_(0, T.tensor([1]), 2.5),
    ])


def test_reductions_empty_nan_dtype_and_0d():
    """Reductions of a (0, 3) tensor along each dim (identities, NaN means, errors for max/argmax
    and friends over an empty dim, empty results over the other), the nan* variants and NaN
    propagation of max/sort/cummax/logsumexp, dtype= on sum/prod/mean/cumsum (and mean's error
    for integer inputs without it), integer/bool promotion, dim=() and repeated dims, 0-d
    inputs with dim 0/-1/1, infinities; var/std warn 'degrees of freedom <= 0' also when the
    result is empty (torch counts the reduction factor as 0 then)."""
    e = lambda T: T.zeros(0, 3)
    n = lambda T: T.tensor([[1., float("nan"), 3], [float("nan"), float("nan"), 2]])
    m = lambda T: T.arange(6.).reshape(2, 3)
    i = lambda T: T.arange(6).reshape(2, 3)
    s = lambda T: T.tensor(3.)
    check([
        lambda T: (e(T).sum(0), e(T).sum(1), e(T).prod(0), e(T).mean(0), e(T).amax(1), e(T).logsumexp(0)),
        lambda T: (e(T).norm(dim=0), e(T).all(0), e(T).nansum(0), e(T).nanmean(0)),
        lambda T: e(T).amax(0), lambda T: e(T).max(), lambda T: e(T).argmax(1), lambda T: e(T).argmax(),
        lambda T: e(T).min(dim=1), lambda T: e(T).median(), lambda T: e(T).median(1), lambda T: e(T).mode(1),
        lambda T: e(T).aminmax(dim=0), lambda T: e(T).kthvalue(1, 0),
        lambda T: e(T).std(0), lambda T: e(T).var(1), lambda T: e(T).std(1, keepdim=True), lambda T: T.zeros(1, 0).var(0),
        lambda T: T.std_mean(e(T), 1), lambda T: T.var_mean(e(T), 0),
        lambda T: (e(T).cumsum(0), e(T).sort(0)),
        lambda T: (n(T).nansum(1), n(T).nanmean(1), n(T).nanmedian(1)),
        lambda T: n(T).nanmedian(0, keepdim=True),
        lambda T: n(T).nanmean(dtype=T.float64),
        lambda T: T.tensor([1, 2]).nansum(), lambda T: T.tensor([1, 2]).nanmean(), lambda T: T.tensor([1, 2]).nanmedian(),
        lambda T: (n(T).max(1), n(T).argmax(1), n(T).sort(1)),
        lambda T: (n(T).cummax(1), n(T).logsumexp(1)),
        lambda T: (i(T).sum(dtype=T.float32), i(T).prod(1, dtype=T.float64), i(T).mean(dtype=T.float32)),
        lambda T: i(T).mean(), lambda T: (i(T).cumsum(1, dtype=T.float64), T.ones(3).sum(dtype=T.int32)),
        lambda T: (T.tensor([True, True]).sum(), T.tensor([True, True]).prod(), T.tensor([1, 2], dtype=T.int8).sum()),
        lambda T: (T.tensor([1, 2], dtype=T.uint8).cumsum(0), T.tensor([1, 2], dtype=T.int16).prod()),
        lambda T: (m(T).sum((0, 1), keepdim=True), m(T).sum(()), m(T).amax(())),
        lambda T: m(T).sum((0, 0)), lambda T: m(T).sum(2), lambda T: m(T).norm(p="fro", dim=(0, 1)),
        lambda T: (m(T).var(1, correction=0), m(T).std(1, correction=2), m(T).var(1, unbiased=False, keepdim=True)),
        lambda T: T.tensor([1.]).var(), lambda T: i(T).var(),
        lambda T: (s(T).sum(0), s(T).sum(-1), s(T).amax(0), s(T).max(0), s(T).argmax(0), s(T).median(0)),
        lambda T: (s(T).mode(0), s(T).cumsum(0), s(T).logsumexp(0)), lambda T: s(T).sum(1), lambda T: s(T).var(0),
        lambda T: T.tensor([1, 2]).logsumexp(0), lambda T: T.tensor([1, 2]).std(), lambda T: T.tensor([True, False]).mean(),
        lambda T: (T.tensor([1 + 2j, 3]).sum(), T.tensor([1 + 2j, 3]).var()),
        lambda T: T.tensor([1 + 2j, 3]).amax(),
        lambda T: (m(T).aminmax(dim=1, keepdim=True), m(T).max(1, keepdim=True), m(T).argmax(keepdim=True)),
        lambda T: (i(T).all(1), T.arange(6, dtype=T.uint8).reshape(2, 3).all(1), T.arange(6, dtype=T.uint8).any()),
        lambda T: (T.amax(m(T), (0, 1)), T.amin(m(T), (-1, 0), True)),
        lambda T: (T.logsumexp(T.tensor([float("-inf"), float("-inf")]), 0), T.logsumexp(T.tensor([float("inf"), 1.]), 0)),
        lambda T: (T.tensor([float("inf"), float("-inf")]).sum(), T.tensor([4., 1, 2, 3]).median()),
    ])
