"""testinfra45: the sparse half of PyTorch's test/test_type_promotion.py (``TestTypePromotion``, CPU),
ported in our own code and run on tracegrad through its own ``tracegrad.testing._internal`` harness:
test_sparse_add, test_sparse_mul, test_sparse_div, test_sparse_sub (each through the file's
``_test_sparse_op`` over every dtype pair, in place or not, coalesced or not) and
test_sparse_div_promotion, under their original names. tests/conformance/test_type_promotion_ported.py
holds the dense tests of the same file (it left these out when tracegrad had no sparse tensors).
Then test/nn/test_pooling.py, the tests no earlier port covered (grep tests/ for the names): all of
``TestAvgPool`` (the *_with_divisor and 2-d / 3-d ceil-mode tests are new; the rest run again beside
them), ``TestPoolingNN``'s test_adaptive_pooling_avg_nhwc(_non_contiguous), test_max_unpool,
test_max_unpool3d_input_check, test_MaxUnpool2d_output_size, test_adaptive_pooling_size_none, and
``TestPoolingNNDeviceType``'s zero-batch / zero-size tests (adaptive, fractional, max, unpool),
test_adaptive_pooling_empty_output_size, test_MaxUnpool_index_errors (the CPU branch, its ten cases),
test_adaptive_avg_pool3d_output_size_one, test_max_pool3d_ndhwc, test_avg_pool2d_reduced_floating,
test_MaxPool3d_indices and test_AdaptiveMaxPool{1,2,3}d_indices (the file's _test_maxpool_indices),
test_fractional_max_pool3d (a 5^3 input, gradcheck without gradgradcheck) and
test_fractional_max_pool_nan_inf.
Pooling adapted: inputs a few elements a side instead of tens (50 x 32 -> 10 x 8, 16 channels -> 4,
the 3-d loops over 3 x 2 x 3 windows instead of 5 x 6 x 7; the big nhwc helper calls are left out),
random inputs drawn from NumPy where the test compares two computations on the same numbers.
tracegrad passed every pooling test as ported: no fix was needed there.

Adapted: operands are 3 x 3 instead of 5 x 5 x 5, drawn from NumPy (the file's randn / randint ranges,
zeros mixed in with a bool mask as the file does), so both libraries see the same numbers; the dtypes
are ``get_all_math_dtypes('cpu')`` (uint8 ... int64, float32, float64; the file's helper returns the
complex ones too, which ``_test_sparse_op`` skips, as here). The file's half check
(``common_dtype == torch.half`` on CPU) names ``s1`` before it exists and never runs there (no half in
the CPU math dtypes); it is left out.

Fixes in tracegrad (``TestFixesTI45`` probes each, against torch 2.13's numbers and words): a sparse
subtraction refuses bool operands as torch ("Subtraction, the `-` operator, with a bool tensor ...";
tracegrad subtracted), and negates ``other`` in the result dtype (int8 sparse - uint8 sparse negated
the uint8 values in uint8 first: 3 - 2 gave -251 + ...). In-place sparse add_ / sub_ / mul_ cast the
result back within a category (uint8 += int8 sparse: tracegrad refused "result type tracegrad.int16
can't be cast") and refuse across one with torch's "Can't convert result type Float to output Byte in
add operation"; the dense.add_(sparse) refusal uses the same words. dense + / - sparse casts the sparse
values to the result dtype before duplicates add up (an uncoalesced bool entry counted once, not twice,
and uint8 duplicates wrapped). sparse * sparse (the product at shared positions), sparse * dense and
dense * sparse (a sparse result on the sparse operand's indices), sparse.mul_(dense / sparse) and
dense.mul_(sparse) (a dense result) work as torch (tracegrad raised NotImplementedError or "Could not
run 'aten::mul'"); the mul_ dtype refusal names torch's scalar types ("dtype of values (Float) must
match dtype of sparse tensor (Byte)"; it printed tracegrad.float32). A tensor divisor of a sparse tensor,
or a sparse divisor of anything, is torch's RuntimeError "Sparse division requires a scalar or
zero-dim dense tensor divisor (got shape [3, 3] for divisor)" (tracegrad: NotImplementedError).

Differs from torch (documented in tracegrad/_api/sparse_coo.py, not exercised here): torch 2.13's CPU
kernels refuse sparse + sparse of float16 or bool and sparse * sparse of bool for some coalesced
states; tracegrad computes them.

Then test/test_autocast.py: ``TestAutocastCPU`` (every test but test_autocast_rnn, which needs torch's
mkldnn bfloat16 LSTM) and ``TestTorchAutocast.test_autocast_fast_dtype``. Adapted: torch's
``AutocastCPUTestLists`` (torch.testing._internal.autocast_test_lists) is replaced by our own lists of
the same ops (``_autocast_lists``: small NumPy-drawn tensors; the promoting ops pair float32 with
bfloat16 and expect float32, as torch 2.13's lists do); the private ops (conv_tbc, _addmm_activation,
_native_multi_head_attention, nll_loss2d, reflection_pad1d of ``torch._C._nn``) are left out and the
``torch._C._nn`` functions are called through ``torch.nn.functional``; ``torch.cpu.amp.autocast()`` and
``is_autocast_cpu_enabled`` (deprecated in 2.13) are spelled ``torch.autocast("cpu")`` /
``is_autocast_enabled("cpu")``; the file's torch_bf16 / nn_bf16 lists are 2.13's torch_16 / nn_16.
Fixes in tracegrad (``TestFixesAutocastTI45``): ``prelu`` is on the lower-precision list (it stayed
float32 under autocast); cosine_embedding / hinge_embedding / margin_ranking / poisson_nll / soft_margin /
triplet_margin / multi_margin / multilabel_margin losses are on the float32 lists (CPU and CUDA: they
computed in bfloat16), and a bfloat16 multi_margin / multilabel_margin input under autocast is cast
before the kernel dtype check (it was refused: "multi_margin_loss_cpu_kernel" not implemented for
'BFloat16').

``TI45_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import functools
import importlib
import itertools
import math
import warnings

import numpy as np

from _ported_helpers import oracle_test, ported_library

_ORACLE, torch, _cu, _cdt, _cdtype = ported_library("TI45_ORACLE")
TestCase = _cu.TestCase
inf, nan = float("inf"), float("nan")
dtypes = _cdt.dtypes
get_all_math_dtypes = _cdtype.get_all_math_dtypes
if _ORACLE:   # torch warns that an uncoalesced sparse_coo_tensor skips its invariant checks
    warnings.filterwarnings("ignore", "Sparse invariant checks")


def float_double_default_dtype(fn):
    """The file's decorator: the body runs with float32, then float64, as the default dtype."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        old = torch.get_default_dtype()
        try:
            for dt in (torch.float32, torch.float64):
                torch.set_default_dtype(dt)
                fn(*args, **kwargs)
        finally:
            torch.set_default_dtype(old)
    return wrapped


_SEEDS = itertools.count(1)   # one NumPy seed per drawn tensor


class TestTypePromotionTI45(TestCase):

    def _get_test_tensor(self, device, dtype, remove_zeros=False):
        # the file's draws (randint(remove_zeros, 2) for bool, randn for floating, randint(-5 | 0, 10)
        # for integers, zeros replaced by 5 on request), from NumPy
        rng = np.random.RandomState(next(_SEEDS))
        shape = (3, 3)
        if dtype == torch.bool:
            return torch.tensor(rng.randint(int(remove_zeros), 2, shape).astype(bool), device=device)
        if dtype.is_floating_point or dtype.is_complex:
            v = rng.standard_normal(shape).astype(np.float32)
            if remove_zeros:
                v[np.abs(v) < 0.05] = 5
            return torch.tensor(v, device=device).to(dtype)
        v = rng.randint(-5 if dtype.is_signed else 0, 10, shape)
        if remove_zeros:
            v[v == 0] = 5
        return torch.tensor(v, device=device).to(dtype)

    def _test_sparse_op_input_tensors(self, device, dtype, coalesced, zeros=True):
        t = self._get_test_tensor(device, dtype, not zeros)
        if zeros and dtype != torch.bool:
            t = t * self._get_test_tensor(device, torch.bool)   # a sparse pattern
        s = t.to_sparse()
        if not coalesced:   # every entry twice
            s = torch.sparse_coo_tensor(indices=torch.cat((s.indices(), s.indices()), 1),
                                        values=torch.cat((s.values(), s.values()), 0), size=s.size(),
                                        dtype=dtype, device=device)
            t = s.to_dense()
        self.assertEqual(s.is_coalesced(), coalesced)
        self.assertEqual(s.dtype, dtype)
        self.assertEqual(t.dtype, s.dtype)
        return t, s

    def _test_sparse_op(self, op_name, inplace, dtype1, dtype2, device, coalesced):
        if dtype1.is_complex or dtype2.is_complex:
            return
        suffix = "_" if inplace else ""
        err = f"{'coalesced' if coalesced else 'uncoalesced'} {op_name + suffix}({dtype1}, {dtype2})"

        def op(t1, t2, suf=None):
            return getattr(t1, op_name + (suffix if suf is None else suf))(t2)

        add_sub = op_name in ("add", "sub")
        dense1, sparse1 = self._test_sparse_op_input_tensors(device, dtype1, coalesced)
        dense2, sparse2 = self._test_sparse_op_input_tensors(device, dtype2, coalesced, op_name != "div")
        common_dtype = torch.result_type(dense1, dense2)
        # an in-place op whose result cannot be cast back to self's dtype refuses every form
        if inplace and not torch.can_cast(common_dtype, dtype1):
            self.assertRaises(RuntimeError, lambda: op(dense1, sparse2))
            self.assertRaises(RuntimeError, lambda: op(sparse1, sparse2))
            self.assertRaises(RuntimeError, lambda: op(sparse1, dense2))
            return
        expected = op(dense1.clone(), dense2)
        tensors = [expected, dense1, sparse1, dense2, sparse2]
        e, d1, s1, d2, s2 = [x.clone() for x in tensors] if inplace else tensors
        # op(sparse, sparse): division takes only a scalar divisor
        if op_name != "div":
            sparse = op(s1, s2)
            self.assertEqual(sparse.dtype, e.dtype)
            self.assertEqual(e, sparse.to_dense(), msg=err)
        else:
            self.assertRaises(RuntimeError, lambda: op(s1, s2).to_dense())
        # op(dense, sparse)
        if add_sub or op_name == "mul":
            if inplace:
                e, d1, s1, d2, s2 = [x.clone() for x in tensors]
            dense_sparse = op(d1, s2)
            dense_sparse = dense_sparse.to_dense() if dense_sparse.is_sparse else dense_sparse
            self.assertEqual(e, dense_sparse, msg=err)
        else:
            self.assertRaises(RuntimeError, lambda: op(d1, s2))
        # op(sparse, dense): only mul (add: "use add(dense, sparse)"; div: scalar divisors only)
        if op_name != "mul":
            self.assertRaises(RuntimeError, lambda: op(s1, d2))
        else:
            op(s1, d2, suf="")   # out of place: in-place forms do not promote
        # op(sparse, scalar)
        if not add_sub:
            if inplace:
                e, d1, s1, d2, s2 = [x.clone() for x in tensors]
            scalar = d2.view(d2.numel())[0].item()
            sparse = op(s1, scalar)
            dense_scalar = op(d1, scalar)
            self.assertEqual(sparse.dtype, dense_scalar.dtype)
            self.assertEqual(dense_scalar, sparse.to_dense(), msg=err)
        else:
            self.assertRaises(RuntimeError, lambda: op(s1, d2.view(d2.numel())[0].item()))

    def _run_all_tests_for_sparse_op(self, op_name, device, dtypes):
        for dtype1, dtype2 in itertools.product(dtypes, dtypes):
            for inplace, coalesced in itertools.product([True, False], [True, False]):
                self._test_sparse_op(op_name, inplace, dtype1, dtype2, device, coalesced)

    def test_sparse_add(self, device):
        self._run_all_tests_for_sparse_op("add", device, dtypes=get_all_math_dtypes(device))

    def test_sparse_mul(self, device):
        self._run_all_tests_for_sparse_op("mul", device, dtypes=get_all_math_dtypes(device))

    def test_sparse_div(self, device):
        self._run_all_tests_for_sparse_op("div", device, dtypes=(torch.float32, torch.float64,
                                                                 torch.complex64, torch.complex128))

    def test_sparse_sub(self, device):
        self._run_all_tests_for_sparse_op("sub", device, dtypes=get_all_math_dtypes(device))

    @dtypes(torch.bool, torch.short, torch.uint8, torch.int, torch.long)
    @float_double_default_dtype
    def test_sparse_div_promotion(self, device, dtype):
        for op in (torch.div, torch.true_divide):
            dividend = torch.tensor(np.random.RandomState(7).standard_normal(5), device=device).to(dtype)
            dividend_sparse = dividend.to_sparse()
            casting_result = dividend.to(torch.get_default_dtype()) / 2
            self.assertEqual(casting_result, op(dividend_sparse, 2).to_dense())


_cdt.instantiate_device_type_tests(TestTypePromotionTI45, globals(), only_for="cpu")


def _sp(values, dtype, coalesced=True):
    """A sparse COO tensor of ``values`` (dense, 2-d) in ``dtype``; uncoalesced: every entry twice."""
    s = torch.tensor(values).to(dtype).to_sparse()
    if not coalesced:
        s = torch.sparse_coo_tensor(torch.cat((s.indices(), s.indices()), 1),
                                    torch.cat((s.values(), s.values())), s.size())
    return s


class TestFixesTI45(TestCase):
    A = [[0, 2, 0], [3, 0, 1]]

    def test_sub_bool_and_unsigned(self):
        for a, b in ((_sp(self.A, torch.uint8), _sp(self.A, torch.bool)),
                     (_sp(self.A, torch.bool), _sp(self.A, torch.uint8))):
            for f in (lambda: a - b, lambda: a.sub(b), lambda: a.clone().sub_(b)):
                with self.assertRaisesRegex(RuntimeError, "Subtraction, the `-` operator, with a bool tensor"):
                    f()
        b = _sp(self.A, torch.bool)
        with self.assertRaisesRegex(RuntimeError, "with two bool tensors is not supported"):
            b - b
        # int8 - uint8 is computed in int16: the uint8 values are negated there
        r = _sp([[0, 3, 0], [1, 0, 0]], torch.int8) - _sp([[0, 2, 0], [200, 0, 0]], torch.uint8)
        self.assertEqual(r.dtype, torch.int16)
        self.assertEqual(r.to_dense(), torch.tensor([[0, 1, 0], [-199, 0, 0]], dtype=torch.int16))

    def test_inplace_cast_back(self):
        s = _sp(self.A, torch.uint8)
        s.add_(_sp([[0, 0, 0], [0, 0, -3]], torch.int8))
        self.assertEqual(s.dtype, torch.uint8)
        self.assertEqual(s.to_dense(), torch.tensor([[0, 2, 0], [3, 0, 254]], dtype=torch.uint8))
        s.mul_(_sp([[0, 3, 0], [1, 0, 1]], torch.int16))
        self.assertEqual(s.to_dense(), torch.tensor([[0, 6, 0], [3, 0, 254]], dtype=torch.uint8))
        for f in (lambda: _sp(self.A, torch.uint8).add_(_sp(self.A, torch.float32)),
                  lambda: _sp(self.A, torch.uint8).sub_(_sp(self.A, torch.float32)),
                  lambda: torch.ones(2, 3, dtype=torch.uint8).add_(_sp(self.A, torch.float32))):
            with self.assertRaisesRegex(RuntimeError, "^Can't convert result type Float to output Byte in add operation"):
                f()
        with self.assertRaisesRegex(RuntimeError, "^Can't convert result type Float to output Byte in mul operation"):
            _sp(self.A, torch.uint8).mul_(_sp(self.A, torch.float32))
        with self.assertRaisesRegex(RuntimeError, r"^dtype of values \(Float\) must match dtype of sparse tensor \(Byte\)"):
            _sp(self.A, torch.uint8).mul_(torch.full((2, 3), 2.0))

    def test_dense_with_uncoalesced(self):
        # the sparse values are cast to the result dtype before duplicates add up
        ones = torch.ones(2, 3, dtype=torch.uint8)
        self.assertEqual(ones + _sp(self.A, torch.bool, False),
                         torch.tensor([[1, 3, 1], [3, 1, 3]], dtype=torch.uint8))
        r = torch.zeros(2, 3, dtype=torch.int16) - _sp([[0, 200, 0], [0, 0, 0]], torch.uint8, False)
        self.assertEqual(r, torch.tensor([[0, -400, 0], [0, 0, 0]], dtype=torch.int16))

    def test_mul_forms(self):
        a, b = _sp(self.A, torch.uint8), _sp([[1, 3, 0], [2, 0, 0]], torch.float32)
        r = a * b
        self.assertTrue(r.is_sparse)
        self.assertEqual(r.dtype, torch.float32)
        self.assertEqual(r.to_dense(), torch.tensor([[0.0, 6.0, 0.0], [6.0, 0.0, 0.0]]))
        r = _sp(self.A, torch.int64, False) * _sp(self.A, torch.int64, False)
        self.assertEqual(r.to_dense(), torch.tensor([[0, 16, 0], [36, 0, 4]]))
        d = torch.tensor([[5.0, 2.0, 5.0], [0.5, 5.0, 3.0]])
        for r in (a * d, d * a, torch.mul(d, a), a.mul(d)):
            self.assertTrue(r.is_sparse)
            self.assertEqual(r.dtype, torch.float32)
            self.assertEqual(r.to_dense(), torch.tensor([[0.0, 4.0, 0.0], [1.5, 0.0, 3.0]]))
        r = _sp(self.A, torch.uint8, False) * d   # the duplicates are kept: each is scaled
        self.assertEqual((r.is_coalesced(), r._nnz()), (False, 6))
        self.assertEqual(r.to_dense(), torch.tensor([[0.0, 8.0, 0.0], [3.0, 0.0, 6.0]]))
        self.assertEqual((a * torch.tensor([1.0, 2.0, 3.0])).to_dense(), torch.tensor([[0.0, 4.0, 0.0], [3.0, 0.0, 3.0]]))
        x = torch.ones(2, 3)
        self.assertIs(x.mul_(a), x)
        self.assertEqual(x, torch.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 1.0]]))
        with self.assertRaisesRegex(RuntimeError, "^Can't convert result type Float to output Byte in add operation"):
            torch.ones(2, 3, dtype=torch.uint8).mul_(_sp(self.A, torch.float32))
        s = _sp(self.A, torch.float32, False)
        self.assertIs(s.mul_(torch.full((2, 3), 2, dtype=torch.uint8)), s)
        self.assertFalse(s.is_coalesced())
        self.assertEqual(s.to_dense(), torch.tensor([[0.0, 8.0, 0.0], [12.0, 0.0, 4.0]]))
        # gradients flow to the dense operand at the sparse positions
        d = torch.tensor([[5.0, 2.0, 5.0], [0.5, 5.0, 3.0]], requires_grad=True)
        (d * _sp(self.A, torch.float32)).to_dense().sum().backward()
        self.assertEqual(d.grad, torch.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 1.0]]))

    def test_div_tensor_divisor(self):
        s, d = _sp(self.A, torch.float32), torch.ones(2, 3)
        msg = r"^Sparse division requires a scalar or zero-dim dense tensor divisor \(got shape \[2, 3\] for divisor\)"
        for f in (lambda: s / s, lambda: s / d, lambda: d / s, lambda: s.div_(d), lambda: d.div_(s),
                  lambda: torch.div(d, s), lambda: torch.true_divide(s, d)):
            with self.assertRaisesRegex(RuntimeError, msg):
                f()
        self.assertEqual(d, torch.ones(2, 3))
        self.assertEqual((_sp(self.A, torch.int64) / torch.tensor(2)).to_dense(),
                         torch.tensor([[0.0, 1.0, 0.0], [1.5, 0.0, 0.5]]))



# ---- test/nn/test_pooling.py: TestAvgPool (every test) and TestPoolingNN's adaptive / unpool tests ----
F = torch.nn.functional
nn = torch.nn
gradcheck = torch.autograd.gradcheck
make_tensor = torch.testing.make_tensor
_test_module_empty_input = importlib.import_module(torch.__name__ + ".testing._internal.common_nn")._test_module_empty_input


def _rand(*shape):
    """The file's torch.rand / randn / randint, from NumPy so both libraries see the same numbers."""
    return torch.tensor(np.random.RandomState(next(_SEEDS)).random_sample(shape))


class TestAvgPoolTI45(TestCase):
    def _sum_pool2d(self, x, kernel_size):
        return torch.sum(F.unfold(x, kernel_size=kernel_size, stride=kernel_size), dim=1)

    def _sum_pool3d(self, x, kernel_size):
        # sum over depth blocks of kernel_size[0], then 2-d sum pooling of each block
        h = kernel_size[0]
        blocks = [self._sum_pool2d(t.sum(0).unsqueeze(0).unsqueeze(0), kernel_size[1:])
                  for t in x.split(h) if t.size(0) == h]
        joined = torch.cat(blocks)
        return joined.view(1, joined.numel())

    def _avg_pool2d(self, x, kernel_size):
        return self._sum_pool2d(x, kernel_size) / (kernel_size[0] * kernel_size[1])

    def _avg_pool3d(self, x, kernel_size):
        return self._sum_pool3d(x, kernel_size) / (kernel_size[0] * kernel_size[1] * kernel_size[2])

    def test_doubletensor_avg_pool2d(self):
        n, m = 3, 4
        input = _rand(1, 1, n, m)
        for i, j in itertools.product(range(1, n + 1), range(1, m + 1)):
            actual = F.avg_pool2d(input[0], (i, j))
            self.assertEqual(actual.view(1, actual.numel()), self._avg_pool2d(input, (i, j)), rtol=0, atol=1e-5)

    def test_doubletensor_avg_pool2d_with_divisor(self):
        n, m = 3, 3
        input = _rand(1, 1, n, m)
        for i, j in itertools.product(range(1, n + 1), range(1, m + 1)):
            for divisor in (1, 7, i * j):
                actual = F.avg_pool2d(input[0], (i, j), divisor_override=divisor)
                expected = self._sum_pool2d(input, (i, j)) / divisor
                self.assertEqual(actual.view(1, actual.numel()), expected, rtol=0, atol=1e-5)

    def test_doubletensor_avg_pool3d(self):
        h, w, d = 3, 2, 3
        input = _rand(h, w, d)
        for i, j, k in itertools.product(range(1, h + 1), range(1, w + 1), range(1, d + 1)):
            actual = F.avg_pool3d(input.unsqueeze(0), (i, j, k))
            self.assertEqual(actual.view(1, actual.numel()), self._avg_pool3d(input, (i, j, k)), rtol=0, atol=1e-5)

    def test_doubletensor_avg_pool3d_with_divisor(self):
        h, w, d = 2, 3, 2
        input = _rand(h, w, d)
        for i, j, k in itertools.product(range(1, h + 1), range(1, w + 1), range(1, d + 1)):
            for divisor in (1, 7, i * j):
                actual = F.avg_pool3d(input.unsqueeze(0), (i, j, k), divisor_override=divisor)
                expected = self._sum_pool3d(input, (i, j, k)) / divisor
                self.assertEqual(actual.view(1, actual.numel()), expected, rtol=0, atol=1e-5)

    # gh-36977: a ceil_mode window that starts in the padding must not divide by zero
    def test_avg_pool1d_ceil_mode(self):
        y = F.avg_pool1d(10 * _rand(1, 16, 4), ceil_mode=True, count_include_pad=True, kernel_size=1, stride=2)
        self.assertTrue(not torch.isnan(y).any())

    def test_avg_pool2d_ceil_mode(self):
        y = F.avg_pool2d(10 * _rand(1, 16, 4, 4), ceil_mode=True, count_include_pad=True, kernel_size=(1, 2),
                         padding=(0, 1), stride=2)
        self.assertTrue(not torch.isnan(y).any())

    def test_avg_pool3d_ceil_mode(self):
        y = F.avg_pool3d(10 * _rand(1, 16, 4, 4, 4), ceil_mode=True, count_include_pad=True,
                         kernel_size=(1, 2, 3), stride=2)
        self.assertTrue(not torch.isnan(y).any())


class TestPoolingNNTI45(TestCase):
    def test_adaptive_pooling_size_none(self):
        for numel, pool_type in itertools.product((2, 3), ("Max", "Avg")):
            module = getattr(nn, f"Adaptive{pool_type}Pool{numel}d")((2,) * (numel - 1) + (None,))
            output = module(torch.randn((4,) * (numel + 1)))
            self.assertEqual(output.size(), (4,) + (2,) * (numel - 1) + (4,))

    def _check_avg_nhwc(self, non_contiguous):
        # channels_last in, channels_last out; the same values and gradients as a contiguous input
        input = (_rand(4, 8, 8, 8) * 9).floor().float() + 1
        input = input.contiguous(memory_format=torch.channels_last)
        grad = (_rand(4, 8, 7, 7) * 9).floor().float() + 1
        if non_contiguous:
            input, grad = input[:, ::2, :, :], grad[:, ::2, :, :]
        input.requires_grad_()
        ref_input = input.detach().clone().contiguous().requires_grad_(True)
        out = nn.AdaptiveAvgPool2d((7, 7))(input)
        out.backward(grad)
        ref_out = nn.AdaptiveAvgPool2d((7, 7))(ref_input)
        ref_out.backward(grad.detach().clone().contiguous())
        self.assertTrue(out.is_contiguous(memory_format=torch.channels_last))
        self.assertTrue(ref_out.is_contiguous())
        self.assertEqual(out, ref_out)
        self.assertEqual(input.grad, ref_input.grad)

    def test_adaptive_pooling_avg_nhwc(self):
        self._check_avg_nhwc(False)

    def test_adaptive_pooling_avg_nhwc_non_contiguous(self):
        self._check_avg_nhwc(True)

    def test_MaxUnpool2d_output_size(self):
        m, mu = nn.MaxPool2d(3, stride=2, return_indices=True), nn.MaxUnpool2d(3, stride=2)
        big_t = _rand(1, 1, 6, 6).float()
        big_t[0][0][4][4] = 100
        output_big, indices_big = m(big_t)
        self.assertRaises(RuntimeError, lambda: mu(output_big, indices_big))
        small_t = _rand(1, 1, 5, 5).float()
        for i, j in itertools.product(range(0, 4, 2), range(0, 4, 2)):
            small_t[:, :, i, j] = 100
        output_small, indices_small = m(small_t)
        for h, w in itertools.product(range(3, 10), range(3, 10)):
            if 4 <= h <= 6 and 4 <= w <= 6:
                size = (1, 1, h, w) if h == 6 else (h, w)
                mu(output_small, indices_small, output_size=size)
            else:
                self.assertRaises(ValueError, lambda: mu(output_small, indices_small, (h, w)))


    def test_max_unpool(self):
        with _cu.set_default_dtype(torch.double):
            output, indices = F.max_pool1d(torch.randn([1, 1, 4]), 2, stride=2, return_indices=True)
            self.assertEqual(F.max_unpool1d(output, indices, 2), F.max_unpool1d(output, indices, 2, stride=2))
            # output_size as a torch.Size or a tuple
            input = torch.randn([1, 1, 5], requires_grad=True)
            output, indices = F.max_pool1d(input, 2, stride=2, return_indices=True)
            self.assertEqual(F.max_unpool1d(output, indices, 2, stride=2, output_size=input.shape),
                             F.max_unpool1d(output, indices, 2, stride=2, output_size=input.size()))
            gradcheck(F.max_unpool1d, (output, indices, 2), check_forward_ad=True)
            output, indices = F.max_pool2d(torch.randn([1, 1, 4, 4], requires_grad=True), 2, stride=2,
                                           return_indices=True)
            self.assertEqual(F.max_unpool2d(output, indices, 2), F.max_unpool2d(output, indices, 2, stride=2))
            gradcheck(F.max_unpool2d, (output, indices, 2), check_forward_ad=True)
            output, indices = F.max_pool3d(torch.randn([2, 2, 4, 4, 4], requires_grad=True), 2, stride=2,
                                           return_indices=True)
            self.assertEqual(F.max_unpool3d(output, indices, 2), F.max_unpool3d(output, indices, 2, stride=2))
            gradcheck(F.max_unpool3d, (output, indices, 2), check_forward_ad=True)

    def test_max_unpool3d_input_check(self):
        x = torch.ones(1, 3, 1, 1, 1)
        with self.assertRaises(RuntimeError):
            F.max_unpool3d(x, torch.zeros(x.shape, dtype=int), [1, 1])


class TestPoolingNNDeviceTypeTI45(TestCase):
    @dtypes(torch.float, torch.double)
    def test_adaptive_pooling_zero_batch(self, device, dtype):
        for shape, mod in (((0, 10), nn.AdaptiveAvgPool1d(5)), ((0, 10, 10), nn.AdaptiveAvgPool2d((5, 5))),
                           ((0, 10, 10, 10), nn.AdaptiveAvgPool3d((5, 5, 5)))):
            _test_module_empty_input(self, mod, torch.ones(*shape, dtype=dtype, device=device), check_size=False)

    @dtypes(torch.float32, torch.float64)
    def test_adaptive_pooling_empty_output_size(self, device, dtype):
        # pytorch#78868: a zero output size is refused at backward
        error_msg = "Expected grad_output to have non-zero size for non-batch dimensions"
        make_arg = functools.partial(make_tensor, device=device, dtype=dtype, requires_grad=True)
        input = make_arg((1, 8, 5, 4))
        for fn in (F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.adaptive_max_pool2d, F.adaptive_max_pool3d):
            with self.assertRaisesRegex(RuntimeError, error_msg):
                fn(input, 0).sum().backward()
        input2 = make_arg((1, 8))
        for fn in (F.adaptive_avg_pool1d, F.adaptive_max_pool1d):
            with self.assertRaisesRegex(RuntimeError, error_msg):
                fn(input2, 0).sum().backward()

    def test_FractionalMaxPool2d_zero_batch(self, device):
        mod = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        _test_module_empty_input(self, mod, torch.ones(0, 4, 10, 8, device=device), check_size=False)
        with self.assertRaisesRegex(RuntimeError, "Expected input"):
            mod(torch.randn(1, 0, 10, 8, device=device))

    def test_FractionalMaxPool3d_zero_batch(self, device):
        mod = nn.FractionalMaxPool3d(3, output_ratio=(0.5, 0.5, 0.5))
        _test_module_empty_input(self, mod, torch.ones(0, 4, 10, 8, 8, device=device), check_size=False)
        with self.assertRaisesRegex(RuntimeError, "Expected input"):
            mod(torch.randn(1, 0, 10, 8, 8, device=device))

    def test_FractionalMaxPool2d_zero_out_size(self, device):
        out = nn.FractionalMaxPool2d([2, 2], output_size=[0, 1])(torch.rand([4, 5, 8, 8], device=device))
        self.assertEqual(out, torch.empty((4, 5, 0, 1), device=device))

    def test_FractionalMaxPool3d_zero_out_size(self, device):
        out = nn.FractionalMaxPool3d([3, 2, 2], output_size=[0, 1, 1])(torch.rand([4, 5, 8, 8], device=device))
        self.assertEqual(out, torch.empty((4, 0, 1, 1), device=device))

    def test_FractionalMaxPool2d_zero_samples(self, device):
        mod = nn.FractionalMaxPool2d([2, 2], output_size=[1, 1], _random_samples=torch.rand([0, 4, 2], device=device))
        self.assertEqual(mod(torch.randn([0, 4, 8, 8], device=device)), torch.empty((0, 4, 1, 1), device=device))
        with self.assertRaisesRegex(RuntimeError, "Expect _random_samples"):
            mod(torch.randn([1, 4, 8, 8], device=device))

    def test_FractionalMaxPool3d_zero_samples(self, device):
        mod = nn.FractionalMaxPool3d([3, 2, 2], output_size=[1, 1, 1],
                                     _random_samples=torch.rand([0, 4, 3], device=device))
        self.assertEqual(mod(torch.randn([0, 4, 10, 8, 8], device=device)), torch.empty((0, 4, 1, 1, 1), device=device))
        with self.assertRaisesRegex(RuntimeError, "Expect _random_samples"):
            mod(torch.randn([1, 4, 10, 8, 8], device=device))

    def test_MaxPool_zero_batch_dim(self, device):
        _test_module_empty_input(self, nn.MaxPool1d(3, stride=2), torch.randn(0, 4, 10, device=device), check_size=False)
        mod = nn.MaxPool2d(3, stride=2)
        _test_module_empty_input(self, mod, torch.randn(0, 4, 10, 8, device=device), check_size=False)
        with self.assertRaisesRegex(RuntimeError, "Expected"):
            mod(torch.randn(1, 0, 10, 8, device=device))
        mod = nn.MaxPool3d(3, stride=2)
        _test_module_empty_input(self, mod, torch.ones(0, 4, 10, 8, 7, device=device), check_size=False)
        with self.assertRaisesRegex(RuntimeError, "Expected"):
            mod(torch.ones(1, 0, 10, 8, 7, device=device))

    def test_MaxUnpool_zero_batch_dim(self, device):
        for d, shape in ((1, (0, 4, 6)), (2, (0, 4, 6, 6)), (3, (0, 4, 6, 6, 6))):
            pool = getattr(nn, f"MaxPool{d}d")(2, stride=2, return_indices=True)
            unpool = getattr(nn, f"MaxUnpool{d}d")(2, stride=2)
            inp = torch.randn(*shape, requires_grad=True, device=device)
            output, indices = pool(inp)
            output.requires_grad_(True)
            unpool_out = unpool(output, indices)
            unpool_out.sum().backward()
            self.assertEqual(inp.grad, torch.zeros_like(inp))
            self.assertEqual(unpool_out, torch.zeros_like(unpool_out))

    @_cu.parametrize("module_name,module_size,output_size,test_index,should_error", [
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), -1, True),
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), 2 * 2 * 4 * 5, True),
        ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), (2 * 2 * 4 * 5) - 1, False),
        ("MaxUnpool2d", (2, 3), (2, 1, 4, 2), 2 * 3 * 4 * 2, True),
        ("MaxUnpool2d", (2, 3), (2, 1, 4, 2), (2 * 3 * 4 * 2) - 1, False),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), -1, True),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), 2 * 2 * 2 * 3 * 4 * 5, True),
        ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), (2 * 2 * 2 * 3 * 4 * 5) - 1, False),
        ("MaxUnpool3d", (2, 2, 2), (2, 3, 4, 1), 2 * 2 * 2 * 3 * 4 * 1, True),
        ("MaxUnpool3d", (2, 2, 2), (2, 3, 4, 1), (2 * 2 * 2 * 3 * 4 * 1) - 1, False),
    ])
    def test_MaxUnpool_index_errors(self, device, module_name, module_size, output_size, test_index, should_error):
        unpool = getattr(nn, module_name)(module_size)
        output = torch.rand(output_size, dtype=torch.float32, device=device)
        indices = torch.zeros(output_size, dtype=torch.int64, device=device)
        indices.flatten()[0] = test_index
        if should_error:
            with self.assertRaisesRegex(RuntimeError, r"Found an invalid max index:"):
                unpool(output, indices)
        else:
            unpool(output, indices)

    def test_AdaptiveMaxPool_zero_batch_dim(self, device):
        for d, shape in ((1, (4, 10)), (2, (4, 10, 8)), (3, (4, 10, 8, 7))):
            mod = getattr(nn, f"AdaptiveMaxPool{d}d")(3)
            _test_module_empty_input(self, mod, torch.randn(0, *shape, device=device), check_size=False)
            with self.assertRaisesRegex(RuntimeError, "Expected"):
                mod(torch.randn(1, 0, *shape[1:], device=device))


    def test_adaptive_avg_pool3d_output_size_one(self, device):
        x = torch.randn((2, 3, 4, 4, 4), dtype=torch.float, device=device, requires_grad=True)
        out = nn.AdaptiveAvgPool3d(1)(x)
        ref_out = x.contiguous().mean((-1, -2, -3)).view(out.shape)
        out.sum().backward()
        self.assertEqual(out, ref_out)
        self.assertTrue(out.is_contiguous())
        c = out.size(1)
        self.assertEqual(out.stride(), [c, 1, 1, 1, 1])

    @dtypes(torch.half, torch.bfloat16, torch.float, torch.double)
    def test_max_pool3d_ndhwc(self, device, dtype):
        # channels_last_3d in (batched or not), channels_last_3d out and indices; the same values,
        # indices and gradients as a contiguous input
        def helper(n, c, h, w, d, kernel_size, stride=None):
            batch = n or 1
            input = torch.randn(batch, c, d, h, w, dtype=dtype, device=device)
            input = input.contiguous(memory_format=torch.channels_last_3d).requires_grad_()
            if not n:
                input = input.squeeze(0).detach().clone().requires_grad_()
            kernel_size = [kernel_size] * 3 if isinstance(kernel_size, int) else kernel_size
            stride = kernel_size if stride is None else [stride] * 3 if isinstance(stride, int) else stride
            grad = torch.randn(batch, c, (d - kernel_size[0]) // stride[0] + 1, (h - kernel_size[1]) // stride[1] + 1,
                               (w - kernel_size[2]) // stride[2] + 1, dtype=dtype, device=device)
            grad = grad.contiguous(memory_format=torch.channels_last_3d)
            if not n:
                grad = grad.squeeze(0)
            ref_input = input.detach().clone().contiguous().requires_grad_(True)
            out, ind = nn.MaxPool3d(kernel_size, stride, return_indices=True)(input)
            out.backward(grad)
            ref_out, ref_ind = nn.MaxPool3d(kernel_size, stride, return_indices=True)(ref_input)
            ref_out.backward(grad.detach().clone().contiguous())
            for t in (out, ind):
                t = t.unsqueeze(0) if t.dim() == 4 else t
                self.assertTrue(t.is_contiguous(memory_format=torch.channels_last_3d))
            self.assertTrue(ref_out.is_contiguous())
            self.assertTrue(ref_ind.is_contiguous())
            self.assertEqual(out, ref_out)
            self.assertEqual(ind, ref_ind)
            self.assertEqual(input.grad, ref_input.grad)

        helper(2, 4, 5, 5, 5, 3)
        helper(0, 4, 5, 5, 5, 3)
        helper(2, 3, 6, 5, 4, 2, stride=1)
        helper(1, 5, 5, 5, 5, [1, 2, 3], stride=[1, 2, 1])


    @dtypes(torch.half, torch.bfloat16)
    def test_avg_pool2d_reduced_floating(self, device, dtype):
        # half / bfloat16 avg_pool2d keeps the dtype and memory format and matches float32 rounded
        def helper(n, c, h, w, kernel_size, stride, memory_format):
            input = torch.randn(n, c, h, w, dtype=torch.float32, device=device).to(dtype=dtype)
            input = input.to(memory_format=memory_format).requires_grad_()
            pool = nn.AvgPool2d(kernel_size, stride)
            input2 = input.detach().clone().float().requires_grad_(True)
            out = pool(input)
            out.sum().backward()
            out2 = pool(input2)
            out2.sum().backward()
            self.assertTrue(out.is_contiguous(memory_format=memory_format))
            self.assertEqual(out.dtype, dtype)
            self.assertEqual(input.grad.dtype, dtype)
            self.assertEqual(out, out2.to(dtype=dtype))
            self.assertEqual(input.grad, input2.grad.to(dtype=dtype))

        helper(2, 5, 8, 8, 7, 1, torch.contiguous_format)
        helper(2, 9, 8, 8, 7, 1, torch.channels_last)
        helper(1, 3, 12, 10, 8, 2, torch.contiguous_format)
        helper(1, 3, 12, 10, 8, 2, torch.channels_last)


    def _test_maxpool_indices(self, num_dim, adaptive=False, device="cpu", dtype=torch.float):
        # a 2 x 2 x 4^d arange input pooled by 2: the indices and values of the odd positions,
        # gradient 1 there; an index changed in place makes backward fail
        def expected_indices(dim, dtype):
            if dim == 1:
                return torch.tensor([1, 3], dtype=dtype).repeat(2, 2, 1)
            return torch.tensor([[5, 7], [13, 15]], dtype=dtype).repeat(2, 2, 1, 1)

        def expected_grad(dim, dtype):
            if dim == 1:
                return torch.tensor([0, 1, 0, 1], dtype=dtype).repeat(2, 2, 1)
            grad = expected_grad(dim - 1, dtype=dtype)
            zero = torch.zeros(grad.size(), dtype=dtype)
            return torch.stack((zero, grad, zero, grad), 2)

        def expected_output(dim, dtype):
            if dim == 1:
                return torch.arange(2, 17, 2, dtype=dtype).view(2, 2, 2)
            col = torch.arange(6, 63, 8, dtype=dtype)
            return torch.stack([col, col + 2], 1).view(2, 2, 2, 2)

        module = getattr(nn, f"{'Adaptive' if adaptive else ''}MaxPool{num_dim}d")(2, return_indices=True)
        module = module.to(device, dtype=dtype)
        input = torch.arange(1, 4 ** (num_dim + 1) + 1).view(2, 2, *(4,) * num_dim).to(device, dtype=dtype)
        input_var = input.detach().clone().requires_grad_()
        output, indices = module(input_var)
        if num_dim != 3:
            self.assertEqual(indices.dim(), input.dim())
            self.assertEqual(indices.data.squeeze(), expected_indices(num_dim, indices.dtype))
            self.assertEqual(output.data.squeeze(), expected_output(num_dim, output.dtype))
        self.assertTrue(output.requires_grad)
        self.assertFalse(indices.requires_grad)
        grad_output = torch.ones(output.size(), device=device, dtype=dtype)
        output.backward(grad_output, retain_graph=True)
        self.assertEqual(input_var.grad.data, expected_grad(num_dim, input_var.grad.dtype).view_as(input))
        indices.add_(1)
        self.assertRaises(RuntimeError, lambda: output.backward(grad_output))
        # -inf is a maximum at index 0
        for d, t in ((1, torch.tensor([[[-inf]]])), (2, torch.tensor([[[-inf]]])), (3, torch.tensor([[[[-inf]]]]))):
            output, indices = getattr(nn, f"MaxPool{d}d")(kernel_size=1, return_indices=True)(t)
            self.assertEqual(output.flatten()[0], -inf)
            self.assertEqual(indices.flatten()[0], 0)

    @dtypes(torch.float)
    def test_MaxPool3d_indices(self, device, dtype):
        self._test_maxpool_indices(3, device=device, dtype=dtype)

    @dtypes(torch.float)
    def test_AdaptiveMaxPool1d_indices(self, device, dtype):
        self._test_maxpool_indices(1, adaptive=True, device=device, dtype=dtype)

    @dtypes(torch.float)
    def test_AdaptiveMaxPool2d_indices(self, device, dtype):
        self._test_maxpool_indices(2, adaptive=True, device=device, dtype=dtype)

    @dtypes(torch.float)
    def test_AdaptiveMaxPool3d_indices(self, device, dtype):
        self._test_maxpool_indices(3, adaptive=True, device=device, dtype=dtype)

    def test_fractional_max_pool3d(self, device):
        with _cu.set_default_dtype(torch.double):
            x = torch.randn(1, 1, 5, 5, 5, requires_grad=True, device=device)
            samples = x.new(1, 1, 3).uniform_()

            def func(x):
                return F.fractional_max_pool3d(x, (2, 2, 2), output_size=(3, 3, 3), _random_samples=samples)

            self.assertEqual(func(x).shape, (1, 1, 3, 3, 3))
            gradcheck(func, [x])
            x = torch.randn(1, 5, 5, 5, requires_grad=True, device=device)
            self.assertEqual(func(x).shape, (1, 3, 3, 3))
            gradcheck(func, [x])
            for kernel_size in ((), (1,), (1, 1)):
                with self.assertRaisesRegex(RuntimeError, "kernel_size must either"):
                    F.fractional_max_pool3d(x, kernel_size=kernel_size, output_size=(3, 3, 3), _random_samples=samples)
            large = "too large relative to input "
            for output_size, msg in (((9, 3, 3), large + "time"), ((3, 9, 3), large + "height"),
                                     ((3, 3, 9), large + "width"), ((3, 3), "output_size must either"),
                                     ((3,), "output_size must either"), ((), "output_size must either")):
                with self.assertRaisesRegex(RuntimeError, msg):
                    F.fractional_max_pool3d(x, (2, 2, 2), output_size=output_size, _random_samples=samples)

    @dtypes(torch.float)
    def test_fractional_max_pool_nan_inf(self, device, dtype):
        for num_dim in (2, 3):
            fn = getattr(nn, f"FractionalMaxPool{num_dim}d")(kernel_size=2, output_size=1)
            for value, check in ((nan, math.isnan), (-inf, math.isinf)):
                x = torch.full([1, 1] + num_dim * [3], value, device=device, dtype=dtype, requires_grad=True)
                res = fn(x)
                res.backward(torch.randn_like(res))
                self.assertTrue(check(res.item()))


_cdt.instantiate_device_type_tests(TestPoolingNNDeviceTypeTI45, globals(), only_for="cpu")



# ---- test/test_autocast.py: TestAutocastCPU and TestTorchAutocast ----
def _autocast_lists():
    """Our own op lists in the shape of torch's ``AutocastCPUTestLists`` (op, args[, kwargs | out
    dtype]), on small NumPy-drawn tensors: the lower-precision ops get float32 inputs, the float32
    ops bfloat16 inputs, the promoting ops one float32 and one bfloat16 input (torch 2.13 lists; the file predates them)."""
    rng = np.random.RandomState(3)

    def t(*shape, dtype=torch.float32):
        return torch.tensor(rng.standard_normal(shape).astype(np.float32)).to(dtype)

    b16 = torch.bfloat16
    m, v = t(4, 4), t(4)
    p0, p1 = t(4), t(4, dtype=b16)
    label = torch.tensor([1.0, -1.0, 1.0, -1.0]).to(b16)
    return dict(
        torch_expect_builtin_promote=[(op, (p0, p1), torch.bool) for op in ("eq", "ge", "gt", "le", "lt", "ne")]
        + [(op, (p0, p1), torch.float32) for op in ("add", "div", "mul")],
        methods_expect_builtin_promote=[(f"__{op}__", (p0, p1), torch.bool) for op in ("eq", "ge", "gt", "le", "lt", "ne")]
        + [(f"__{op}__", (p0, p1), torch.float32) for op in ("add", "truediv", "mul")],
        torch_bf16=[("conv1d", (t(2, 3, 5), t(4, 3, 2))), ("conv2d", (t(2, 3, 5, 5), t(4, 3, 2, 2))),
                    ("conv3d", (t(1, 2, 4, 4, 4), t(3, 2, 2, 2, 2))), ("bmm", (t(2, 3, 4), t(2, 4, 3))),
                    ("mm", (m, m)), ("matmul", (m, m)), ("baddbmm", (t(2, 3, 3), t(2, 3, 4), t(2, 4, 3))),
                    ("addmm", (m, m, m)), ("addbmm", (m, t(2, 4, 3), t(2, 3, 4))),
                    ("conv_transpose1d", (t(2, 3, 5), t(3, 4, 2))), ("conv_transpose2d", (t(2, 3, 4, 4), t(3, 2, 2, 2))),
                    ("conv_transpose3d", (t(1, 2, 3, 3, 3), t(2, 2, 2, 2, 2))), ("prelu", (t(2, 3, 4), t(3)))],
        nn_bf16=[("linear", (t(3, 4), t(2, 4), t(2)))],
        torch_fp32=[("poisson_nll_loss", (t(4, dtype=b16), t(4, dtype=b16).abs(), True, False, 1e-8, 1)),
                    ("cosine_embedding_loss", (t(4, 3, dtype=b16), t(4, 3, dtype=b16), label)),
                    ("hinge_embedding_loss", (t(4, dtype=b16), label)),
                    ("margin_ranking_loss", (t(4, dtype=b16), t(4, dtype=b16), label)),
                    ("triplet_margin_loss", (t(4, 3, dtype=b16), t(4, 3, dtype=b16), t(4, 3, dtype=b16))),
                    ("binary_cross_entropy_with_logits", (t(4, dtype=b16), t(4, dtype=b16).sigmoid()))],
        nn_fp32=[("avg_pool3d", (t(1, 2, 4, 4, 4, dtype=b16), 2)),
                 ("binary_cross_entropy", (t(4, dtype=b16).sigmoid(), t(4, dtype=b16).sigmoid())),
                 ("nll_loss", (t(4, 3, dtype=b16).log_softmax(1), torch.tensor([0, 2, 1, 1]))),
                 ("l1_loss", (t(4, dtype=b16), t(4, dtype=b16))), ("smooth_l1_loss", (t(4, dtype=b16), t(4, dtype=b16))),
                 ("mse_loss", (t(4, dtype=b16), t(4, dtype=b16))), ("huber_loss", (t(4, dtype=b16), t(4, dtype=b16))),
                 ("soft_margin_loss", (t(4, dtype=b16), label)),
                 ("multi_margin_loss", (t(4, 3, dtype=b16), torch.tensor([0, 2, 1, 1]))),
                 ("multilabel_margin_loss", (t(2, 3, dtype=b16), torch.tensor([[0, 1, -1], [2, -1, 0]])))],
        torch_need_autocast_promote=[("cat", ((t(2, 3), t(2, 3, dtype=b16)),)),
                                     ("stack", ((t(2, 3), t(2, 3, dtype=b16)),))],
    )


class TestAutocastCPUTI45(TestCase):
    def setUp(self):
        super().setUp()
        self.autocast_lists = _autocast_lists()

    def _run_autocast_outofplace(self, op, args, run_as_type, out_type=None, module=torch, add_kwargs=None):
        def cast(val, to_type):   # floating tensors to ``to_type``, through tuples and lists
            if isinstance(val, torch.Tensor):
                return val.to(to_type) if val.is_floating_point() else val
            if isinstance(val, (tuple, list)):
                return type(val)(cast(v, to_type) for v in val)
            return val

        def compare(first, second):
            if isinstance(first, torch.Tensor):
                return torch.equal(first, second)
            if isinstance(first, (tuple, list)):
                return all(compare(f, s) for f, s in zip(first, second))
            return first == second

        add_kwargs = add_kwargs or {}
        out_type = out_type if out_type is not None else run_as_type
        self.assertFalse(torch.is_autocast_enabled("cpu"))
        with torch.autocast("cpu"):
            self.assertTrue(torch.is_autocast_enabled("cpu"))
            output = output_method = None
            if module is not None and hasattr(module, op):
                output = getattr(module, op)(*args, **add_kwargs)
                if isinstance(output, torch.Tensor):
                    self.assertEqual(output.dtype, out_type, msg=f"autocast for {op}")
            if hasattr(torch.Tensor, op):
                output_method = getattr(args[0], op)(*args[1:], **add_kwargs)
                if isinstance(output_method, torch.Tensor):
                    self.assertEqual(output_method.dtype, out_type, msg=f"autocast for Tensor.{op}")
            self.assertTrue(output is not None or output_method is not None, f"{op} not found")
            if output is not None and output_method is not None:
                self.assertTrue(type(output) is type(output_method))
                self.assertTrue(compare(output, output_method), f"torch.{op} != Tensor.{op}")
            # the same op on inputs cast by hand with autocast off: bitwise equal
            got = output if output is not None else output_method
            with torch.autocast("cpu", enabled=False):
                self.assertFalse(torch.is_autocast_enabled("cpu"))
                if module is not None and hasattr(module, op):
                    control = getattr(module, op)(*cast(args, run_as_type), **add_kwargs)
                else:
                    control = getattr(args[0].to(run_as_type), op)(*cast(args[1:], run_as_type), **add_kwargs)
                self.assertTrue(type(got) is type(control))
                self.assertTrue(compare(got, control), f"{op} result did not match control")
            self.assertTrue(torch.is_autocast_enabled("cpu"))
        self.assertFalse(torch.is_autocast_enabled("cpu"))

    @staticmethod
    def args_maybe_kwargs(op_with_args):
        return (*op_with_args, {}) if len(op_with_args) == 2 else op_with_args

    def test_autocast_torch_expect_builtin_promote(self):
        for op, args, out_type in self.autocast_lists["torch_expect_builtin_promote"]:
            self._run_autocast_outofplace(op, args, torch.float32, out_type=out_type)

    def test_autocast_methods_expect_builtin_promote(self):
        for op, args, out_type in self.autocast_lists["methods_expect_builtin_promote"]:
            self._run_autocast_outofplace(op, args, torch.float32, module=None, out_type=out_type)

    def _run_list(self, name, run_as_type, module=torch):
        for op_with_args in self.autocast_lists[name]:
            op, args, kwargs = self.args_maybe_kwargs(op_with_args)
            self._run_autocast_outofplace(op, args, run_as_type, module=module, add_kwargs=kwargs)

    def test_autocast_torch_bf16(self):
        self._run_list("torch_bf16", torch.bfloat16)

    def test_autocast_nn_bf16(self):
        self._run_list("nn_bf16", torch.bfloat16, module=F)

    def test_autocast_torch_fp32(self):
        self._run_list("torch_fp32", torch.float32)

    def test_autocast_nn_fp32(self):
        self._run_list("nn_fp32", torch.float32, module=F)

    def test_autocast_torch_need_autocast_promote(self):
        for op, args in self.autocast_lists["torch_need_autocast_promote"]:
            self._run_autocast_outofplace(op, args, torch.float32)


class TestTorchAutocastTI45(TestCase):
    def test_autocast_fast_dtype(self):
        self.assertEqual(torch.get_autocast_dtype("cuda"), torch.half)
        self.assertEqual(torch.get_autocast_dtype("cpu"), torch.bfloat16)



class TestFixesAutocastTI45(TestCase):
    def test_prelu_lower_and_losses_fp32(self):
        x = torch.tensor([[-1.0, 2.0, -3.0]], requires_grad=True)
        w = torch.tensor([0.25], requires_grad=True)
        with torch.autocast("cpu"):
            y = F.prelu(x, w)
        self.assertEqual(y.dtype, torch.bfloat16)
        y.float().sum().backward()
        self.assertEqual((x.grad.dtype, w.grad.dtype), (torch.float32, torch.float32))
        self.assertEqual(w.grad, torch.tensor([-4.0]))
        a = torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]]).bfloat16()
        with torch.autocast("cpu"):
            for loss in (F.multi_margin_loss(a, torch.tensor([0, 2])),
                         F.multilabel_margin_loss(a, torch.tensor([[0, -1, 1], [2, -1, 0]])),
                         F.soft_margin_loss(a, a.sign()), F.hinge_embedding_loss(a, a.sign()),
                         F.poisson_nll_loss(a, a.abs()), F.margin_ranking_loss(a[0], a[1], a[0].sign()),
                         F.cosine_embedding_loss(a, a.flip(0), torch.tensor([1.0, -1.0])),
                         F.triplet_margin_loss(a, a.flip(0), a.flip(1))):
                self.assertEqual(loss.dtype, torch.float32)


test_oracle_torch_passes = oracle_test("TI45_ORACLE", __file__)
