"""testinfra18: PyTorch's test/test_reductions.py run unchanged under tracegrad (the CPU tests
torch 2.13 itself passes); the corners it found that tracegrad got wrong, ported here as focused
tests. Each body runs under the ``T`` fixture, once with torch 2.13 and once with tracegrad, so
torch checks every expectation. Each test names its original in test_reductions.py."""
import pytest


# from TestReductions.test_dim_reduction_less_than_64: a 65-dim tensor exists (numpy, on which the
# factories build, holds 64 dims at most); a reduction over named dims of it is refused
def test_65_dim_tensor_reduction_refused(T):
    x = T.randn([1] * 65)
    assert x.dim() == 65
    assert T.zeros([1] * 65).shape == (1,) * 65
    assert x.sum().shape == ()        # dim=None reduces fine
    for op in [T.mean, T.sum, T.nansum, T.std, T.logsumexp, T.var, T.norm]:
        for dim in (64, -1):
            with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
                op(x, dim=dim)


# from TestReductions.test_histc_min_max_errors (uint8/int8/int/long): histc checks min > max
# before it refuses an integer input
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_histc_min_max_checked_before_dtype(T, dtype):
    x = T.tensor([1., 2., 3.], dtype=getattr(T, dtype))
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        T.histc(x, bins=4, min=5, max=1)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        T.histc(x, bins=-1)
    with pytest.raises(NotImplementedError):
        T.histc(x, bins=4)


# from TestReductions.test_histc_value_corner_cases: all values at the dtype's extreme (the
# widened range min - 1 .. max + 1 rounds back to one point) are still counted
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_values_at_dtype_extremes_counted(T, dtype):
    for v in (T.finfo(getattr(T, dtype)).min, T.finfo(getattr(T, dtype)).max):
        h = T.histc(T.tensor([v, v, v], dtype=getattr(T, dtype)), bins=4)
        assert h.sum().item() == 3.0


# from TestReductions.test_nansum_out_dtype (float16): 16-bit float sums accumulate in float32
@pytest.mark.parametrize("fn", ["sum", "nansum"])
@pytest.mark.parametrize("src", ["float16", "float32"])
def test_half_sum_accumulates_in_float32(T, fn, src):
    import numpy as np
    a = (np.random.default_rng(0).standard_normal(3000) * 60).astype(src)
    want = float(np.asarray(a, np.float16).astype(np.float64).sum())
    got = getattr(T, fn)(T.tensor(a), dtype=T.float16)
    assert got.dtype == T.float16
    assert abs(got.item() - want) <= 0.002 * abs(want) + 1
    x = T.tensor(a[:5]).to(T.float16).requires_grad_()
    getattr(T, fn)(x, 0).backward()
    assert x.grad.dtype == T.float16 and x.grad.tolist() == [1.0] * 5


# from TestReductions.test_bucketization: searchsorted warns (once per process) about a
# non-contiguous input or boundary tensor, and still answers
def test_searchsorted_noncontiguous_warns(T):
    import warnings
    v = T.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    old = T.is_warn_always_enabled()
    T.set_warn_always(True)     # torch's once-per-process warnings each time, for this check
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = T.searchsorted(v.permute(2, 1, 0).to(T.float64), v.permute(2, 1, 0).to(T.int32))
    finally:
        T.set_warn_always(old)
    assert r.tolist() == [[[0, 0], [0, 1]], [[2, 0], [0, 1]], [[2, 0], [0, 0]]]
    text = [str(x.message) for x in w]
    assert any("input value tensor is non-contiguous" in m for m in text)
    assert any("boundary tensor is non-contiguous" in m for m in text)



# from TestReductions.test_mean_out_is_alias_of_return: torch._C._is_alias_of tells shared storage;
# anything that is not a Tensor aliases nothing
def test_is_alias_of(T):
    a = T.ones(4)
    o = T.empty(())
    r = T.mean(a, out=o)
    got = (T._C._is_alias_of(a, a[1:]), T._C._is_alias_of(a[1:], a[:2]), T._C._is_alias_of(a, a.clone()),
           T._C._is_alias_of(o, r), T._C._is_alias_of(a.view(2, 2), a.reshape(4)), T._C._is_alias_of(a, 1),
           T._C._is_alias_of("x", a))
    assert got == (True, True, False, True, True, False, False)
