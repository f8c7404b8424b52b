"""NOTE: the PyTorch test functions this file held (TestTypePromotion's sparse tests,
test/nn/test_pooling.py's and test/test_autocast.py's classes under their names), copied from
pytorch/pytorch (the same statements and literals, lightly edited), were removed (a public
repository's code stays out of this project's commits); what remains is the tests written here. The
text below describes the round as it was.

testinfra45: the sparse half of PyTorch's test/test_type_promotion.py (``TestTypePromotion``, CPU),
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
import warnings


from _ported_helpers import oracle_test, ported_library

_ORACLE, torch, _cu, _cdt, _cdtype = ported_library("TI45_ORACLE")
TestCase = _cu.TestCase
if _ORACLE:   # torch warns that an uncoalesced sparse_coo_tensor skips its invariant checks
    warnings.filterwarnings("ignore", "Sparse invariant checks")


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
