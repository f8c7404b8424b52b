"""testinfra45: the sparse half of PyTorch's test/test_type_promotion.py (``TestTypePromotion``, CPU),
ported in our own code and run on tracegrad through its own ``tracegrad.testing._internal`` harness:
test_sparse_add, test_sparse_mul, test_sparse_div, test_sparse_sub (each through the file's
``_test_sparse_op`` over every dtype pair, in place or not, coalesced or not) and
test_sparse_div_promotion, under their original names. tests/conformance/test_type_promotion_ported.py
holds the dense tests of the same file (it left these out when tracegrad had no sparse tensors).

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

``TI45_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import functools
import importlib
import itertools
import os
import warnings

import numpy as np

from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI45_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
_cdtype = importlib.import_module(torch.__name__ + ".testing._internal.common_dtype")
TestCase = _cu.TestCase
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


test_oracle_torch_passes = oracle_test("TI45_ORACLE", __file__)
