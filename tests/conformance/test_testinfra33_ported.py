"""testinfra33: PyTorch test functions from test/test_reductions.py (``TestReductions``, pytorch/pytorch
commit 002ca671) no earlier port covered: the ReductionOpInfo unit tests (dim errors, the 64-dim
limit, identity, NaN policy, result dtype, empty slices, noncontiguous inputs, NumPy references on
scalar, small, duplicate and extremal inputs) test_sum_parallel, test_sum_noncontig_lowp (smaller shapes), test_histc_lowp and
test_histc_min_max_corner_cases, run on tracegrad through its
own ``tracegrad.testing._internal`` harness.

Adapted: tracegrad has no OpInfo database, so ``_REDUCTIONS`` below restates, per op, the metadata
torch 2.13's ``reduction_ops`` entries carry (identity, nan_policy, supports_multiple_dims,
promotes_int_to_float/int64, result_dtype, complex_to_real, the args each generates, the NumPy
reference); ``@ops`` becomes ``@parametrize("op", ...)`` with the dtype loop inside the test, and
the dtype lists are cut to float32/float64/int64/bool/complex64 (what the op supports) for time;
test_noncontiguous_* share one test per op. The logsumexp ``dim=None`` tests are left out (torch
2.13 refuses ``dim=None`` there).

Fixes in tracegrad (``TestFixesTI33``): test_dim_ndim_limit needs a 65-d tensor, which tracegrad
could not make or read: random fills draw through numpy (64 dims at most) and now draw flat and
reshape; host-first programs over such values compile; item/tolist/nonzero/masked_select/gather/
scatter read flat values; numpy's broadcast_shapes (32 dims at most) is replaced in in-place ops,
copy_, index broadcasting and Function gradients. torch's 64-bit dim mask is followed: an empty
dim list reduces a 65-d tensor, all/any/nanmean/norm/vector_norm/flip/aminmax(dim)/max(dim)/
min(dim) refuse it, median/nanmedian/mode along a dim take it, unique of the flat values too.
Strict expected failures (``_gap``): unique(dim=), unique_consecutive, repr and
``torch.tensor(nested list)`` of a 65-d tensor.

``TI33_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does
that in a subprocess), so every expectation is torch's.
"""
import importlib
import math
import os
import unittest
from itertools import combinations, permutations
from collections.abc import Sequence

import numpy as np

from _ported_helpers import oracle_test

torch = importlib.import_module("torch" if os.environ.get("TI33_ORACLE") else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase
parametrize = _cu.parametrize
dtypes = _cdt.dtypes
make_tensor = torch.testing.make_tensor
inf = float("inf")
nan = float("nan")

# a known gap of tracegrad's, a strict expected failure (the oracle run expects torch to pass)
_gap = (lambda f: f) if os.environ.get("TI33_ORACLE") else unittest.expectedFailure

_INTEGRAL = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)
_ALL = (torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64)
_NOCOMPLEX = (torch.float32, torch.float64, torch.int64, torch.bool)
_FLOAT_COMPLEX = (torch.float32, torch.float64, torch.complex64)
_FLOAT = (torch.float32, torch.float64)


def _reduced_shape(shape, empty_dim_as_none=False, dim=None, keepdim=False):
    if dim is None or (empty_dim_as_none and dim == []):
        return [1] * len(shape) if keepdim else []
    dim = dim if isinstance(dim, Sequence) else [dim]
    dim = {i if i >= 0 else len(shape) + i for i in dim}
    result = []
    for i, size in enumerate(shape):
        if i not in dim:
            result.append(size)
        elif keepdim:
            result.append(1)
    return result


def _np_reduction(f, supports_keepdims=True):
    """torch's ``reference_reduction_numpy``: dim -> axis, keepdim -> keepdims."""
    def wrapper(x, *args, **kwargs):
        keys = set(kwargs)
        dim = kwargs.pop("dim", None)
        keepdim = kwargs.pop("keepdim", False)
        if "dim" in keys:
            dim = tuple(dim) if isinstance(dim, Sequence) else dim
            kwargs["axis"] = None if x.ndim == 0 and dim in {0, -1, (0,), (-1,)} else dim
        if "keepdim" in keys and supports_keepdims:
            kwargs["keepdims"] = keepdim
        result = f(x, *args, **kwargs)
        if keepdim and not supports_keepdims and x.ndim > 0:
            result = np.expand_dims(result, list(range(x.ndim)) if dim is None else dim)
        return result
    return wrapper


def _np_std_var(f):
    def wrapper(x, *args, unbiased=True, **kwargs):
        return _np_reduction(f)(x, *args, ddof=int(unbiased), **kwargs)
    return wrapper


def _np_prod(x, *args, **kwargs):
    # torch's prod_numpy: integral inputs multiply in int64, as torch.prod promotes them
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        kwargs.setdefault("dtype", np.int64)
    return _np_reduction(np.prod)(x, *args, **kwargs)


class _ROp:
    """One ``ReductionOpInfo`` entry of torch 2.13's ``reduction_ops``, restated."""

    def __init__(self, name, fn, *, identity=None, nan_policy=None, multi=True, i2f=False,
                 i2i64=False, result_dtype=None, c2r=False, ref=None, args=({},), dtypes=_ALL):
        self.name, self.fn, self.identity, self.nan_policy = name, fn, identity, nan_policy
        self.supports_multiple_dims, self.promotes_int_to_float = multi, i2f
        self.promotes_int_to_int64, self.result_dtype, self.complex_to_real = i2i64, result_dtype, c2r
        self.ref, self._args, self.dtypes = ref, args, dtypes

    def __call__(self, t, *args, **kwargs):
        return self.fn(t, *args, **kwargs)

    def generate_args_kwargs(self, t, **reduction_kwargs):
        for kw in self._args:
            yield (), dict(kw)

    def __repr__(self):
        return self.name


_UNB = ({"unbiased": True}, {"unbiased": False})
_REDUCTIONS = [
    _ROp("all", torch.all, identity=True, result_dtype=torch.bool, ref=_np_reduction(np.all)),
    _ROp("any", torch.any, identity=False, result_dtype=torch.bool, ref=_np_reduction(np.any)),
    _ROp("amax", torch.amax, nan_policy="propagate", ref=_np_reduction(np.amax), dtypes=_NOCOMPLEX),
    _ROp("amin", torch.amin, nan_policy="propagate", ref=_np_reduction(np.amin), dtypes=_NOCOMPLEX),
    _ROp("argmax", torch.argmax, multi=False, result_dtype=torch.int64,
         ref=_np_reduction(np.argmax, supports_keepdims=False), dtypes=(torch.float32, torch.float64, torch.int64)),
    _ROp("argmin", torch.argmin, multi=False, result_dtype=torch.int64,
         ref=_np_reduction(np.argmin, supports_keepdims=False), dtypes=(torch.float32, torch.float64, torch.int64)),
    _ROp("count_nonzero", torch.count_nonzero, identity=0, result_dtype=torch.int64,
         ref=_np_reduction(np.count_nonzero, supports_keepdims=False)),
    _ROp("mean", torch.mean, nan_policy="propagate", i2f=True, ref=_np_reduction(np.mean), dtypes=_FLOAT_COMPLEX),
    _ROp("nanmean", torch.nanmean, nan_policy="omit", i2f=True, ref=_np_reduction(np.nanmean), dtypes=_FLOAT),
    _ROp("std", torch.std, nan_policy="propagate", i2f=True, c2r=True, ref=_np_std_var(np.std), args=_UNB,
         dtypes=_FLOAT_COMPLEX),
    _ROp("var", torch.var, nan_policy="propagate", i2f=True, c2r=True, ref=_np_std_var(np.var), args=_UNB,
         dtypes=_FLOAT_COMPLEX),
    _ROp("prod", torch.prod, identity=1, nan_policy="propagate", multi=False, i2i64=True, ref=_np_prod),
    _ROp("sum", torch.sum, identity=0, nan_policy="propagate", i2i64=True, ref=_np_reduction(np.sum)),
    _ROp("nansum", torch.nansum, identity=0, nan_policy="omit", i2i64=True, ref=_np_reduction(np.nansum),
         dtypes=_NOCOMPLEX),
    _ROp("linalg_vector_norm", torch.linalg.vector_norm, identity=0, nan_policy="propagate", c2r=True,
         args=tuple({"ord": o} for o in (6, 4, 2, 1, 0, 0.9, inf, -2.1, -inf)), dtypes=_FLOAT_COMPLEX),
]
_REF_OPS = [op for op in _REDUCTIONS if op.ref is not None]
_MULTI = [op for op in _REDUCTIONS if op.supports_multiple_dims]
_NOT_MULTI = [op for op in _REDUCTIONS if not op.supports_multiple_dims]


def _few_dtypes(op):
    other = [d for d in (torch.int64, torch.complex64) if d in op.dtypes][:1]
    return [torch.float32] + (other if op.name != "linalg_vector_norm" else [])


def _by_name(op):
    return op.name


class TestReductionsTI33(TestCase):
    """test/test_reductions.py ``TestReductions`` (ReductionOpInfo unit tests)."""

    def _test_dim_keepdim(self, op, device, *, ndim, **dim_keepdim):
        shape = torch.randint(2, 5, (ndim,)).tolist()
        t = make_tensor(shape, dtype=torch.float, device=device)
        args, kwargs = next(op.generate_args_kwargs(t, **dim_keepdim))
        result = op(t, *args, **dim_keepdim, **kwargs)
        empty_dim_as_none = op.name == "linalg_vector_norm"
        expected_shape = _reduced_shape(shape, empty_dim_as_none, **dim_keepdim)
        self.assertEqual(result.shape, expected_shape, f"""
        expected output shape to be {expected_shape} but got {list(result.shape)}
        for input shape {shape} and {dim_keepdim}
        """)

    @parametrize("op", _MULTI, name_fn=_by_name)
    def test_dim_multi_duplicate(self, device, op):
        with self.assertRaises(RuntimeError):
            self._test_dim_keepdim(op, device, ndim=3, dim=[0, 1, 1, 2])

    @parametrize("op", _NOT_MULTI, name_fn=_by_name)
    def test_dim_multi_unsupported(self, device, op):
        with self.assertRaises(TypeError):
            self._test_dim_keepdim(op, device, ndim=3, dim=[0, 2])

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_dim_offbounds(self, device, op):
        with self.assertRaises(IndexError):
            self._test_dim_keepdim(op, device, ndim=2, dim=2)

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_dim_ndim_limit(self, device, op):
        t = make_tensor([1] * 65, dtype=torch.float, device=device)
        with self.assertRaisesRegex(RuntimeError, "only tensors with up to 64 dims are supported"):
            op(t, dim=0)

    @parametrize("op", [op for op in _REDUCTIONS if op.identity is not None], name_fn=_by_name)
    def test_identity(self, device, op):
        for dtype in op.dtypes:
            t = make_tensor((10,), dtype=dtype, device=device)
            t[1::2] = op.identity
            args, kwargs = next(op.generate_args_kwargs(t))
            result = op(t[::2], *args, **kwargs)
            result_with_identity = op(t, *args, **kwargs)
            self.assertEqual(result, result_with_identity, """
            Adding identity value to the input tensor should not change the result.
            """)

    @parametrize("op", [op for op in _REDUCTIONS if op.nan_policy == "propagate"], name_fn=_by_name)
    def test_nan_policy_propagate(self, device, op):
        for dtype in op.dtypes:
            if not (dtype.is_floating_point or dtype.is_complex):
                continue
            t = make_tensor((5,), dtype=dtype, device=device)
            t[2] = torch.nan
            args, kwargs = next(op.generate_args_kwargs(t))
            result = op(t, *args, **kwargs)
            self.assertTrue(result.isnan())

    @parametrize("op", [op for op in _REDUCTIONS if op.nan_policy == "omit"], name_fn=_by_name)
    def test_nan_policy_omit(self, device, op):
        for dtype in op.dtypes:
            if not (dtype.is_floating_point or dtype.is_complex):
                continue
            t = make_tensor((10,), dtype=dtype, device=device)
            t[1::2] = torch.nan
            args, kwargs = next(op.generate_args_kwargs(t))
            result = op(t[::2], *args, **kwargs)
            result_with_nan = op(t, *args, **kwargs)
            self.assertEqual(result, result_with_nan)

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_result_dtype(self, device, op):
        for dtype in op.dtypes + (torch.uint8, torch.int32, torch.float16, torch.bfloat16):
            if dtype in (torch.uint8, torch.int32) and torch.int64 not in op.dtypes:
                continue
            t = make_tensor((5,), dtype=dtype, device=device)
            args, kwargs = next(op.generate_args_kwargs(t))
            result = op(t, *args, **kwargs)
            if dtype == torch.uint8 and op.name in ("all", "any"):
                # torch's OpInfo marks this an expected failure: all/any keep uint8 for uint8 input
                self.assertEqual(result.dtype, torch.uint8)
                continue
            is_integral = dtype in _INTEGRAL
            if op.promotes_int_to_float and is_integral:
                self.assertTrue(torch.is_floating_point(result))
            elif op.promotes_int_to_int64 and is_integral:
                self.assertEqual(result.dtype, torch.int64)
            elif op.result_dtype is not None:
                self.assertEqual(result.dtype, op.result_dtype)
            elif op.complex_to_real:
                _complex_to_real_dtype_map = {
                    torch.complex128: torch.float64,
                    torch.complex64: torch.float32,
                }
                self.assertEqual(result.dtype, _complex_to_real_dtype_map.get(dtype, dtype))
            else:
                self.assertEqual(result.dtype, dtype)

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_empty_tensor_empty_slice(self, device, op):
        t = make_tensor((0, 2, 3), dtype=torch.float, device=device)
        for dim in [0] + [[0, 2]] if op.supports_multiple_dims else []:
            args, kwargs = next(op.generate_args_kwargs(t, dim=dim))
            if op.identity is not None:
                result = op(t, *args, dim=dim, **kwargs)
                self.assertEqual(result, torch.full_like(result, op.identity))
            elif op.promotes_int_to_float:
                result = op(t, *args, dim=dim, **kwargs)
                self.assertEqual(result, torch.full_like(result, torch.nan))
            else:
                with self.assertRaises(IndexError):
                    op(t, *args, dim=dim, **kwargs)

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_empty_tensor_nonempty_slice(self, device, op):
        t = make_tensor((0, 2, 3), dtype=torch.float, device=device)
        for dim in [1] + [[1, 2]] if op.supports_multiple_dims else []:
            args, kwargs = next(op.generate_args_kwargs(t, dim=dim))
            result = op(t, *args, dim=dim, **kwargs)
            self.assertEqual(result.shape, _reduced_shape(t.shape, dim=dim))

    def _test_noncontiguous(self, op, t, **reduction_kwargs):
        assert not t.is_contiguous()
        t_contig = t.contiguous()
        for args, kwargs in op.generate_args_kwargs(t_contig, **reduction_kwargs):
            kwargs.update(reduction_kwargs)
            result = op(t, *args, **kwargs)
            expected = op(t_contig, *args, **kwargs)
            self.assertEqual(result, expected)

    @parametrize("op", _REDUCTIONS, name_fn=_by_name)
    def test_noncontiguous(self, device, op):
        # test_noncontiguous_innermost / _outermost / _all / _transposed / _expanded; float32 and
        # one integral or complex dtype the op takes, for time
        for dtype in _few_dtypes(op):
            t = make_tensor((10, 10), dtype=dtype, device=device, low=-1, high=1)
            self._test_noncontiguous(op, t[:, ::2], dim=1)
            self._test_noncontiguous(op, t[::2, :], dim=0)
            t = make_tensor((5, 5, 5), dtype=dtype, device=device, low=-1, high=1)
            self._test_noncontiguous(op, t[::2, ::3, 1:-1:2])
            t = make_tensor((5, 5), dtype=dtype, device=device, low=-1, high=1)
            self._test_noncontiguous(op, t.T)
            t = make_tensor((2, 3), dtype=dtype, device=device, low=-1, high=1)
            self._test_noncontiguous(op, t.unsqueeze(1).expand(-1, 5, -1))

    def _test_ref(self, op, t, **reduction_kwargs):
        for args, kwargs in op.generate_args_kwargs(t, **reduction_kwargs):
            kwargs.update(reduction_kwargs)
            result = op(t, *args, **kwargs)
            expected = op.ref(t.detach().cpu().numpy(), *args, **kwargs)
            self.assertEqual(result, expected, exact_dtype=False)

    @parametrize("op", _REF_OPS, name_fn=_by_name)
    def test_ref_scalar_input(self, device, op):
        for dtype in op.dtypes:
            self._test_ref(op, make_tensor([], dtype=dtype, device=device))

    @parametrize("op", _REF_OPS, name_fn=_by_name)
    def test_ref_small_input(self, device, op):
        for dtype in op.dtypes:
            t = make_tensor((5, 3, 4, 2), dtype=dtype, device=device, low=-2, high=2, exclude_zero=True)
            self._test_ref(op, t)
            for dim in [0, 1, 3] + ([[0, 2], [1, 3]] if op.supports_multiple_dims else []):
                self._test_ref(op, t, dim=dim)

    @parametrize("op", _REF_OPS, name_fn=_by_name)
    def test_ref_duplicate_values(self, device, op):
        for dtype in op.dtypes:
            t = make_tensor((4, 4), dtype=dtype, device=device, low=-2, high=2, exclude_zero=True)
            t[::2, ::2] = t[1::2, 1::2]
            self._test_ref(op, t)
            self._test_ref(op, t, dim=0)
            self._test_ref(op, t, dim=1)

    @parametrize("op", _REF_OPS, name_fn=_by_name)
    def test_ref_extremal_values(self, device, op):
        # complex64 left out: a NaN/inf part makes assertEqual's complex difference NaN on torch too
        for dtype in (torch.float32,):
            if dtype not in op.dtypes:
                continue
            t = make_tensor((5,), dtype=dtype, device=device, exclude_zero=True)
            extremals = [0, 1, nan, inf, -inf]
            for extremal in extremals:
                t[2] = extremal
                self._test_ref(op, t)


class TestReductionsLegacyTI33(TestCase):
    """test/test_reductions.py ``TestReductions``'s legacy tests. (Its logsumexp ``dim=None`` tests
    are left out: torch 2.13 refuses ``dim=None`` there, a later torch added it.)"""

    @_cdt.onlyCPU
    def test_sum_parallel(self, device):
        # torch's sizes are kept (they cross its parallel grain size); float64 0/1 sums are exact
        def _run_test(size):
            for dim in range(len(size) + 1):
                nv = np.round(np.random.rand(*size))  # 0s and 1s
                tv = torch.from_numpy(nv)
                self.assertTrue(tv.numel() > 32768)
                if dim == len(size):
                    nvs = nv.sum()
                    tvs = tv.sum()
                else:
                    nvs = nv.sum(dim)
                    tvs = tv.sum(dim)
                diff = np.abs(nvs - tvs.numpy()).sum()
                self.assertEqual(diff, 0)

        _run_test([2, 3, 3, 3, 3, 2, 2, 3, 2, 3, 2, 3, 3])
        _run_test([1, 32770])

    @_cdt.onlyCPU
    @dtypes(torch.bfloat16, torch.half)
    def test_histc_lowp(self, device, dtype):
        actual = torch.histc(
            torch.tensor([1, 2, 1], dtype=dtype, device=device), bins=4, min=0, max=3)
        self.assertEqual(
            torch.tensor([0, 2, 1, 0], dtype=dtype, device=device),
            actual)
        self.assertEqual(actual.dtype, dtype)

    @dtypes(torch.float, torch.double)
    def test_histc_min_max_corner_cases(self, device, dtype):
        actual = torch.histc(
            torch.tensor([1., 2, 1], dtype=dtype, device=device),
            bins=4, min=5, max=5)
        self.assertEqual(
            torch.tensor([2, 0, 0, 1], dtype=dtype, device=device),
            actual)

    @_cdt.onlyCPU
    @dtypes(torch.bfloat16)
    def test_sum_noncontig_lowp(self, device, dtype) -> None:
        # cut for time: bfloat16 only, the 2-d and a smaller 3-d shape (torch: up to 5-d, 50 per
        # side), two permutations of each
        dim_sequences = {
            2: [0, 1],
            3: [0, 1, 2],
        }

        def create_noncontig_inputs(x, ndim):
            if ndim == 2:
                return x[::2, ::2]
            elif ndim == 3:
                return x[::2, ::2, ::2]

        def helper(self, shape, reduce_dims, device, dtype):
            for permute_list in list(permutations(dim_sequences[len(shape)], len(shape)))[::-3]:
                x = torch.ones(shape, device=device, dtype=dtype)
                x = create_noncontig_inputs(x, len(shape))
                x_trans = x.permute(permute_list)
                x_sum = torch.sum(x_trans, reduce_dims)
                x_trans_ref = x_trans.float()
                x_sum_ref = torch.sum(x_trans_ref, reduce_dims)
                self.assertEqual(x_sum, x_sum_ref.to(dtype=dtype))

        shapes = [
            (50, 50),
            (10, 12, 14),
        ]

        for shape in shapes:
            for i in range(1, len(shape) + 1):
                reduce_dims = list(combinations(dim_sequences[len(shape)], i))
                for reduce_dim in reduce_dims:
                    helper(self, shape, reduce_dim, device, dtype)


class TestFixesTI33(TestCase):
    """torch 2.13 behaviours the ports above (test_dim_ndim_limit) and this round's probes around
    them found tracegrad getting wrong, now fixed; written as torch tests."""

    def test_random_fills_past_64_dims(self, device):
        # numpy holds 64 dims at most; a torch tensor more: every random fill makes one
        shape = [2, 3] + [1] * 63
        fills = (lambda: torch.rand(shape, device=device), lambda: torch.rand(shape, dtype=torch.complex64),
                 lambda: torch.randint(0, 3, shape), lambda: torch.empty(shape).uniform_(-1, 1),
                 lambda: torch.empty(shape).normal_(), lambda: torch.empty(shape).random_(0, 5),
                 lambda: torch.empty(shape).bernoulli_(0.5), lambda: torch.empty(shape).bernoulli_(torch.full(shape, 0.5)),
                 lambda: torch.empty(shape).exponential_(), lambda: torch.empty(shape).cauchy_(),
                 lambda: torch.empty(shape).geometric_(0.5), lambda: torch.empty(shape).log_normal_(),
                 lambda: make_tensor(shape, dtype=torch.int64, device=device),
                 lambda: make_tensor(shape, dtype=torch.bool, device=device))
        for fill in fills:
            t = fill()
            self.assertEqual(t.dim(), 65)
            self.assertEqual(t.reshape(6).shape, (6,))
        u = torch.empty(shape).uniform_(2, 3).reshape(6)
        self.assertTrue(bool(((u >= 2) & (u < 3)).all()))
        with self.assertRaisesRegex(RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"):
            torch.empty(shape).bernoulli_(torch.full(shape, 1.5))

    def test_past_64_dims_reductions(self, device):
        x = make_tensor([1] * 65, dtype=torch.float, device=device)
        # an empty dim list reduces every dim: no 64-bit dim mask, torch computes it
        for op in (torch.sum, torch.mean, torch.amax, torch.amin, torch.nansum, torch.count_nonzero):
            for dim in ((), []):
                self.assertEqual(op(x, dim=dim).shape, ())
        # all/any read an empty dim list as "no dim" and still build the mask; vector_norm always
        for fn in (lambda: torch.all(x, dim=()), lambda: torch.any(x, dim=[]), lambda: torch.linalg.vector_norm(x),
                   lambda: torch.linalg.vector_norm(x, dim=[]), lambda: torch.linalg.norm(x, dim=0)):
            with self.assertRaisesRegex(RuntimeError, "only tensors with up to 64 dims are supported"):
                fn()
        self.assertEqual(x.sum(), x.reshape(-1).sum())
        # nanmean, norm and all/any name every dim when dim is None: refused too
        for fn in (lambda: torch.nanmean(x), lambda: torch.norm(x), lambda: x.all(), lambda: x.any(),
                   lambda: torch.allclose(x, x)):
            with self.assertRaisesRegex(RuntimeError, "only tensors with up to 64 dims are supported"):
                fn()
        self.assertTrue(torch.equal(x, x.clone()))
        self.assertFalse(torch.equal(x, x + 1))

    def test_values_out_past_64_dims(self, device):
        x = torch.zeros([2, 3] + [1] * 62 + [2], device=device)
        x[1, 2, ..., 1] = 1.5
        x[0, 1, ..., 0] = 2.5
        self.assertEqual(x.sum().item(), 4.0)
        self.assertEqual(x[0, 1].reshape(-1)[0].item(), 2.5)
        self.assertEqual(torch.ones([1] * 65).item(), 1.0)
        nested = x.tolist()
        self.assertEqual(nested[1][2][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]
                         [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]
                         [0][0][0][0][0][0], [0.0, 1.5])
        self.assertEqual(len(nested), 2)
        self.assertEqual(len(nested[0]), 3)
        self.assertEqual(torch.zeros([2, 0] + [1] * 63).tolist(), [[], []])
        nz = x.nonzero()
        self.assertEqual(nz.shape, (2, 65))
        self.assertEqual(nz[:, :2].tolist(), [[0, 1], [1, 2]])
        self.assertEqual(nz[:, -1].tolist(), [0, 1])
        self.assertEqual([i.tolist() for i in x.nonzero(as_tuple=True)[:2]], [[0, 1], [1, 2]])
        self.assertEqual(x[x > 0].tolist(), [2.5, 1.5])
        self.assertEqual(torch.masked_select(x, x > 2).tolist(), [2.5])

    def test_dim_ops_past_64_dims(self, device):
        x = torch.arange(4.0, device=device).reshape([2] + [1] * 63 + [2])
        y = x.reshape(2, 2)
        # median/nanmedian/mode along a dim take a 65-d tensor (no dim mask in their kernels)
        for fn in (torch.median, torch.nanmedian, torch.mode):
            for d, d2 in ((-1, 1), (0, 0)):
                v, i = fn(x, d)
                v2, i2 = fn(y, d2)
                self.assertEqual(v.dim(), 64)
                self.assertEqual(v.reshape(-1), v2)
                self.assertEqual(i.reshape(-1), i2)
        idx = torch.zeros_like(x, dtype=torch.long)
        self.assertEqual(x.gather(-1, idx).reshape(-1), y.gather(1, idx.reshape(2, 2)).reshape(-1))
        self.assertEqual(torch.zeros_like(x).scatter_add_(-1, idx, x).reshape(2, 2),
                         torch.zeros_like(y).scatter_add_(1, idx.reshape(2, 2), y))
        # max/min/aminmax along a dim, and flip, build a 64-bit dim mask: refused
        for fn in (lambda: x.max(-1), lambda: x.min(0), lambda: torch.aminmax(x, dim=-1), lambda: x.flip(0),
                   lambda: x.flip([])):
            with self.assertRaisesRegex(RuntimeError, "only tensors with up to 64 dims are supported"):
                fn()
        self.assertEqual(x.max(), 3.0)
        self.assertEqual(tuple(torch.aminmax(x)), (0.0, 3.0))

    def test_unique_past_64_dims(self, device):
        x = torch.tensor([3.0, 1.0, 3.0, 0.0], device=device).reshape([2] + [1] * 63 + [2])
        vals, inv, counts = torch.unique(x, return_inverse=True, return_counts=True)
        self.assertEqual(vals, torch.tensor([0.0, 1.0, 3.0]))
        self.assertEqual(inv.shape, x.shape)
        self.assertEqual(inv.reshape(-1), torch.tensor([2, 1, 2, 0]))
        self.assertEqual(counts, torch.tensor([1, 1, 2]))

    @_gap
    def test_unique_dim_and_consecutive_past_64_dims(self, device):
        x = torch.arange(4.0, device=device).reshape([2] + [1] * 63 + [2])
        self.assertEqual(torch.unique(x, dim=0).shape, x.shape)
        self.assertEqual(torch.unique_consecutive(x), torch.arange(4.0))

    @_gap
    def test_repr_and_nested_list_past_64_dims(self, device):
        x = torch.ones([1] * 65)
        self.assertIn("1.", repr(x))
        self.assertEqual(torch.tensor(x.tolist()).dim(), 65)

    def test_broadcast_past_32_dims(self, device):
        # numpy broadcasts shapes of 32 dims at most; in-place ops, copy_ and index broadcasting
        # of tensors with 33 to 64 dims follow torch
        a = torch.ones([2] + [1] * 39, device=device)
        a.add_(torch.ones([1] * 33))
        a.copy_(torch.full([1] * 36, 3.0))
        self.assertEqual(a.sum().item(), 6.0)
        with self.assertRaisesRegex(RuntimeError, "doesn't match the broadcast shape"):
            a.add_(torch.ones([1] * 39 + [3]))
        b = torch.arange(4.0).reshape([2] + [1] * 38 + [2])
        self.assertEqual(b[b > 1].tolist(), [2.0, 3.0])
        i = torch.zeros([1] * 34, dtype=torch.long)
        self.assertEqual(torch.arange(3.0)[i, ].shape, (1,) * 34)
        with self.assertRaisesRegex(IndexError, "shape mismatch"):
            torch.zeros(3, 3)[torch.zeros([1] * 33 + [2], dtype=torch.long), torch.zeros(3, dtype=torch.long)]


_cdt.instantiate_device_type_tests(TestReductionsTI33, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestReductionsLegacyTI33, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestFixesTI33, globals(), only_for="cpu")


test_oracle_torch_passes = oracle_test("TI33_ORACLE", __file__)
