"""testinfra29: PyTorch test functions no earlier port covered, copied as torch wrote them (with the
dtype lists and loop sizes cut where noted, to keep the file fast), run on tracegrad through its own
``tracegrad.testing._internal`` harness (``TestCase``, ``instantiate_device_type_tests``,
``make_tensor``). Sources: pytorch/pytorch test/test_binary_ufuncs.py (commit 001758d0,
``TestBinaryUfuncs``), plus the torch 2.13 behaviours this round fixed (float floor division's
signed zero, masked_fill_/index_fill_/index_put_ with one value on an expanded tensor), written in the same style. ``TI29_ORACLE=1`` runs the same classes on torch 2.13 itself
(``test_oracle_torch_passes`` does that in a subprocess), so every expectation is torch's."""
import importlib
import math
import os
from itertools import product

import numpy as np

from _ported_helpers import oracle_test

torch = importlib.import_module("torch" if os.environ.get("TI29_ORACLE") else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase
dtypes = _cdt.dtypes
make_tensor = torch.testing.make_tensor


class TestBinaryUfuncsTI29(TestCase):
    """test/test_binary_ufuncs.py ``TestBinaryUfuncs``."""

    def _do_pow_for_exponents(self, m1, exponents, pow_fn, atol):
        for num in exponents:
            if isinstance(num, int) and num < 0 and not m1.is_floating_point() and not m1.is_complex():
                with self.assertRaisesRegex(RuntimeError,
                                            r'Integers to negative integer powers are not allowed\.'):
                    torch.pow(m1[4], num)
            else:
                # base - tensor, exponent - number
                # contiguous
                res1 = torch.pow(m1[4], num)
                res2 = res1.clone().zero_()
                # `math.pow` has issues with complex exponentiation so we need to resort to normal `pow`.
                for i in range(res2.size(0)):
                    res2[i] = pow_fn(m1[4][i], num)
                rtol = 0 if atol is not None else None
                self.assertEqual(res1, res2, atol=atol, rtol=rtol)

                # non-contiguous
                res1 = torch.pow(m1[:, 4], num)
                res2 = res1.clone().zero_()
                for i in range(res2.size(0)):
                    res2[i] = pow_fn(m1[i, 4], num)
                self.assertEqual(res1, res2, atol=atol, rtol=rtol)

                # scalar ** tensor to enforce correct handling of dtypes for __rpow__().
                expected_dtype = torch.result_type(num, m1)
                res1 = num ** m1[4]
                res2 = torch.tensor(num, dtype=expected_dtype, device=m1.device) ** m1[4]
                self.assertEqual(res1, res2)
                self.assertEqual(res1.dtype, expected_dtype)

    # torch: all_types_and_complex_and(half, bfloat16), (100, 100); here four dtypes and (8, 8)
    # (the element-by-element loops are the slow part)
    @dtypes(torch.float32, torch.float64, torch.int64, torch.complex64)
    def test_pow(self, device, dtype):
        m1 = torch.empty(0, dtype=dtype, device=device)
        if m1.is_floating_point() or m1.is_complex():
            m1 = make_tensor((8, 8), low=0, high=1, dtype=dtype, device=device) + 0.5
        else:
            # math.pow will overflow and throw exceptions for large integers
            range_high = 4 if dtype in (torch.int8, torch.uint8) else 10
            m1 = make_tensor((8, 8), low=1, high=range_high, dtype=dtype, device=device)

        exponents = [-2.8, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 4, 3.3]
        complex_exponents = [-2.5j, -1.0j, 0j, 1.0j, 2.5j, 1.0 + 1.0j, -1.0 - 1.5j, 3.3j]
        if m1.is_complex():
            self._do_pow_for_exponents(m1, exponents + complex_exponents, pow, 10e-4)
        else:
            self._do_pow_for_exponents(m1, exponents, math.pow, None)
            self._do_pow_for_exponents(m1, complex_exponents, pow, 10e-4)

        # base - number, exponent - tensor
        # contiguous
        res1 = torch.pow(3, m1[4])
        res2 = res1.clone().zero_()
        for i in range(res2.size(0)):
            res2[i] = pow(3, m1[4, i])
        self.assertEqual(res1, res2)

        # non-contiguous
        res1 = torch.pow(3, m1[:, 4])
        res2 = res1.clone().zero_()
        for i in range(res2.size(0)):
            res2[i] = pow(3, m1[i][4])
        self.assertEqual(res1, res2)

    def _test_pow(self, base, exponent, np_exponent=None):
        if np_exponent is None:
            np_exponent = exponent

        def to_np(value):
            if isinstance(value, torch.Tensor):
                return value.cpu().numpy()
            return value

        try:
            np_res = np.power(to_np(base), to_np(np_exponent))
            expected = torch.from_numpy(np_res) if isinstance(np_res, np.ndarray) else torch.tensor(np_res, dtype=base.dtype)
        except ValueError as e:
            err_msg = "Integers to negative integer powers are not allowed."
            self.assertEqual(str(e), err_msg)
            out = torch.empty_like(base)
            test_cases = [
                lambda: base.pow(exponent),
                lambda: base.pow_(exponent),
                lambda: torch.pow(base, exponent),
                lambda: torch.pow(base, exponent, out=out)
            ]
            for test_case in test_cases:
                self.assertRaisesRegex(RuntimeError, err_msg, test_case)
        else:
            if isinstance(base, torch.Tensor):
                actual = base.pow(exponent)
                self.assertEqual(actual, expected.to(actual))
                actual = base.clone()
                if torch.can_cast(torch.result_type(base, exponent), base.dtype):
                    actual2 = actual.pow_(exponent)
                    self.assertEqual(actual, expected)
                    self.assertEqual(actual2, expected)
                else:
                    # the stored source's regex ("Found dtype \\w+ but expected \\w+") is an older torch's
                    # text; torch 2.13 (and its current test) raise the result-type cast error
                    self.assertRaisesRegex(RuntimeError, "result type \\w+ can't be cast to the desired output type \\w+",
                                           lambda: actual.pow_(exponent))

            actual = torch.pow(base, exponent)
            self.assertEqual(actual, expected.to(actual))

            actual2 = torch.pow(base, exponent, out=actual)
            self.assertEqual(actual, expected.to(actual))
            self.assertEqual(actual2, expected.to(actual))

    def test_int_and_float_pow(self, device):
        # torch's ((513, 513), 4, (513,)) and ((5, 5, 5), 5, (5,)) cases are left out: each
        # distinct shape is a compile per op and dtype, and they alone doubled the file's time
        def _test_int_and_float_pow(dt, low, high, dev):
            test_cases = (
                ((4, 4), 0, (4, 1)),
                ((3, 1), 4, (3, 1)),
                ((2,), 4, (1,)),
                ((1,), 2, ()),
                ((), 2, ()),
            )
            for base_shape, exp_scalar, exp_shape in test_cases:
                base_tensor = make_tensor(base_shape, dtype=dt, device=dev, low=low, high=high)
                # int tensors don't take negative exponents
                if dt in [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]:
                    exp_tensor = make_tensor(exp_shape, dtype=dt, device=dev, low=0, high=high)
                else:
                    exp_tensor = make_tensor(exp_shape, dtype=dt, device=dev, low=low, high=high)
                self._test_pow(base_tensor, exp_scalar)
                self._test_pow(base_tensor, exp_tensor)
                # test non-contiguous tensors as well
                base_tensor = make_tensor(base_shape, dtype=dt, device=dev, low=low, high=high,
                                          noncontiguous=True)
                if dt in [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]:
                    exp_tensor = make_tensor(exp_shape, dtype=dt, device=dev, low=0, high=high,
                                             noncontiguous=True)
                else:
                    exp_tensor = make_tensor(exp_shape, dtype=dt, device=dev, low=low, high=high,
                                             noncontiguous=True)
                self._test_pow(base_tensor, exp_scalar)
                self._test_pow(base_tensor, exp_tensor)

        _test_int_and_float_pow(torch.int8, -2, 2, device)
        _test_int_and_float_pow(torch.uint8, 0, 3, device)
        _test_int_and_float_pow(torch.int16, -5, 5, device)
        _test_int_and_float_pow(torch.int64, -10, 10, device)
        _test_int_and_float_pow(torch.int32, -10, 10, device)
        _test_int_and_float_pow(torch.float16, 0., 5., device)
        _test_int_and_float_pow(torch.float32, 0., 10., device)
        _test_int_and_float_pow(torch.float64, 0., 10., device)
        # pow's output would have some NaNs as well
        _test_int_and_float_pow(torch.float32, -10., 10., device)
        _test_int_and_float_pow(torch.float64, -10., 10., device)

    def test_pow_inplace_resizing_exception(self, device):
        test_cases = (
            ((), (3,)),
            ((2,), (2, 1)),
            ((2, 1), (2, 2)),
            ((2, 2), (2, 1, 1)),
        )
        test_inputs = list((make_tensor(base_size, dtype=torch.float64, device=device,
                                        high=10., low=0.),
                            make_tensor(exp_size, dtype=torch.float64, device=device,
                                        high=10., low=0.))
                           for base_size, exp_size in test_cases)
        for base, exponent in test_inputs:
            regex = "doesn't match the broadcast shape"
            self.assertRaisesRegex(RuntimeError, regex, base.pow_, exponent)

    def test_int_tensor_pow_neg_ints(self, device):
        ints = [torch.iinfo(torch.int32).min,
                -3, -2, -1, 0, 1, 2, 3,
                torch.iinfo(torch.int32).max]
        neg_ints = [torch.iinfo(torch.int32).min, -3, -2, -1]
        tensor = torch.tensor(ints, dtype=torch.int32, device=device)
        for pow in neg_ints:
            self._test_pow(tensor, pow)

    def test_long_tensor_pow_floats(self, device):
        ints = [0, 1, 23, 4567]
        floats = [0.0, 1 / 3, 1 / 2, 1.0, 3 / 2, 2.0]
        tensor = torch.tensor(ints, dtype=torch.int64, device=device)
        for pow in floats:
            self._test_pow(tensor, pow)

    @dtypes(*[torch.float32, torch.float64])
    def test_float_scalar_pow_float_tensor(self, device, dtype):
        floats = [2.0, -3 / 2, -1.0, -1 / 2, -1 / 3, 0.0,
                  1 / 3, 1 / 2, 1.0, 3 / 2, 2.0]
        exponent_shapes = (
            (1,),
            (2, 2),
            (2, 1),
            (2, 2, 2),
        )
        tensors = list(make_tensor(shape, dtype=dtype, device=device, low=0)
                       for shape in exponent_shapes)
        floats_tensor = torch.tensor(floats, dtype=dtype, device=device)
        for base in floats:
            self._test_pow(base, floats_tensor)
            for tensor in tensors:
                self._test_pow(base, tensor)

    # torch: every dtype but bool/bfloat16, length 100; here four dtypes, length 30
    @dtypes(torch.float32, torch.float64, torch.int64, torch.complex64)
    def test_complex_scalar_pow_tensor(self, device, dtype):
        complexes = [0.5j, 1. + 1.j, -1.5j, 2.2 - 1.6j, 1 + 0j]
        first_exp = make_tensor((30,), dtype=dtype, device=device, low=-2, high=2)
        second_exp = make_tensor((30,), dtype=dtype, device=device, low=-2, high=2, noncontiguous=True)
        first_exp[0] = first_exp[10] = first_exp[20] = 0
        second_exp[0] = second_exp[10] = second_exp[20] = 0
        for base in complexes:
            self._test_pow(base, first_exp)
            self._test_pow(base, second_exp)

    def test_pow_scalar_type_promotion(self, device):
        # Test against a scalar and non-scalar input
        inputs = [17, [17]]
        for input in inputs:
            # We expect the computation to be performed in uint8 (overflowing to 0), and then cast to int64
            input_tensor_uint8 = torch.tensor(input, dtype=torch.uint8, device=device)
            out_uint8_computation = torch.pow(2, input_tensor_uint8, out=torch.tensor(0, dtype=torch.int64, device=device))

            # Computation should run in int64, and not overflow
            input_tensor_int64 = torch.tensor(input, dtype=torch.int64, device=device)
            out_int64_computation = torch.pow(2, input_tensor_int64, out=torch.tensor(0, dtype=torch.int64, device=device))

            self.assertNotEqual(out_uint8_computation, out_int64_computation)
            self.assertEqual(out_uint8_computation.to(dtype=torch.uint8), out_int64_computation.to(dtype=torch.uint8))

    def test_tensor_pow_tensor(self, device):
        def rotate(l, n):
            return l[-n:] + l[:-n]

        def test_tensor_pow_tensor(values, torch_type, numpy_type):
            vals_tensor = torch.tensor(values, dtype=torch_type, device=device)
            for i in range(len(values)):
                pows = rotate(values, i)
                pows_tensor = torch.tensor(pows, dtype=torch_type, device=device)
                self._test_pow(vals_tensor, pows_tensor)

        ints = [0, 1, 2, 3]
        test_tensor_pow_tensor(ints, torch.uint8, np.uint8)
        test_tensor_pow_tensor(ints, torch.int8, np.int8)
        test_tensor_pow_tensor(ints, torch.int16, np.int16)
        test_tensor_pow_tensor(ints, torch.int32, np.int32)
        test_tensor_pow_tensor(ints, torch.int64, np.int64)

        floats = [-3.0, -2.0, -1.0, -1 / 2, -1 / 3,
                  0.0, 1 / 3, 1 / 2, 1.0, 2.0, 3.0]
        test_tensor_pow_tensor(floats, torch.float16, np.float16)
        test_tensor_pow_tensor(floats, torch.float32, np.float32)
        test_tensor_pow_tensor(floats, torch.float64, np.float64)

    def test_logical_xor_with_nontrivial_alignment(self, device):
        # test tensor that is not aligned to multiple of 16 bytes
        size = 128
        a = (torch.randn(size, device=device) > 0)
        b = (torch.randn(size, device=device) > 0)
        c = (torch.randn(size, device=device) > 0)
        non_trivial_alignment = [1, 2, 4, 8, 15]
        for i in non_trivial_alignment:
            for j in non_trivial_alignment:
                for k in non_trivial_alignment:
                    a_ = a[i: 100 + i]
                    b_ = b[j: 100 + j]
                    c_ = c[k: 100 + k]
                    torch.logical_xor(a_, b_, out=c_)
                    for x, y, z in zip(a_.tolist(), b_.tolist(), c_.tolist()):
                        self.assertEqual(x ^ y, z)


class TestFixesTI29(TestCase):
    """torch 2.13 behaviours tracegrad differed on, found running the tests above; each written
    here (not copied) and checked on torch itself by the oracle run."""

    @dtypes(torch.float32, torch.float64)
    def test_floor_divide_signed_zero(self, device, dtype):
        # torch's div_floor_floating: a zero quotient takes the sign of a / b (was +0.0 always)
        a = torch.tensor([-0.0, 0.0, -0.0, -0.5, 0.5, 3.0, -3.0, 1.0], dtype=dtype, device=device)
        b = torch.tensor([1.0, -1.0, -1.0, float("inf"), -float("inf"), 0.0, 0.0, -0.0], dtype=dtype, device=device)
        expected = [-0.0, -0.0, 0.0, -1.0, -1.0, float("inf"), -float("inf"), -float("inf")]
        for res in (torch.floor_divide(a, b), torch.div(a, b, rounding_mode="floor"), a // b):
            self.assertEqual(res, torch.tensor(expected, dtype=dtype, device=device), atol=0, rtol=0)
            self.assertEqual(torch.signbit(res).tolist(), [math.copysign(1, v) < 0 for v in expected])
        # against NumPy's floor_divide away from the zero quotients, where they agree
        x = make_tensor((20,), dtype=dtype, device=device, low=-9, high=9)
        y = make_tensor((20,), dtype=dtype, device=device, low=1, high=9)
        self.assertEqual(torch.floor_divide(x, y), np.floor_divide(x.numpy(), y.numpy()))

    def test_masked_fill_expanded(self, device):
        # TestTorchDeviceType.test_masked_fill_mem_overlap's expanded case: a deprecation warning
        # and every alias written (was RuntimeError "unsupported operation")
        x = torch.rand((1,), device=device).expand((6,))
        mask = torch.tensor([True, False, True, True, False, False], device=device)
        with self.assertWarnsRegex(UserWarning, "expanded tensors"):
            x.masked_fill_(mask, 0.)
        self.assertEqual(x, torch.zeros(6, device=device))
        fill_val = torch.tensor(2., device=device)
        with self.assertWarnsRegex(UserWarning, "expanded tensors"):
            x.masked_fill_(mask, fill_val)
        self.assertEqual(x, torch.full((6,), 2., device=device))
        # input/output overlap still raises
        with self.assertRaisesRegex(RuntimeError, "unsupported operation"):
            mask[1:].masked_fill_(mask[:-1], False)

    def test_masked_fill_expanded_rows(self, device):
        # an element written through the mask writes its aliases (the base's element) too
        base = torch.tensor([[1.], [2.]], device=device)
        x = base.expand(2, 3)
        with self.assertWarnsRegex(UserWarning, "expanded tensors"):
            x.masked_fill_(torch.tensor([[False, True, False], [False, False, False]], device=device), 5.)
        self.assertEqual(base, torch.tensor([[5.], [2.]], device=device))
        self.assertEqual(x, torch.tensor([[5., 5., 5.], [2., 2., 2.]], device=device))
        # self[mask] = scalar is masked_fill_ in torch
        with self.assertWarnsRegex(UserWarning, "expanded tensors"):
            x[torch.tensor([False, True], device=device)] = 7.
        self.assertEqual(base, torch.tensor([[5.], [7.]], device=device))
        # other in-place ops on it still raise
        with self.assertRaisesRegex(RuntimeError, "unsupported operation"):
            x.add_(1)

    def test_index_fill_index_put_expanded(self, device):
        # index_fill_ / index_put_ / self[indices] = value with one value on an expanded tensor:
        # torch's "Use of index_fill_ (index_put_) on expanded tensors is deprecated" warning and
        # every alias written (were RuntimeError "unsupported operation")
        def fresh():
            base = torch.tensor([[1.], [2.]], device=device)
            return base, base.expand(2, 3)
        base, x = fresh()
        with self.assertWarnsRegex(UserWarning, "index_fill_ on expanded tensors"):
            x.index_fill_(1, torch.tensor([1], device=device), 5.)
        self.assertEqual(base, torch.tensor([[5.], [5.]], device=device))
        base, x = fresh()
        with self.assertWarnsRegex(UserWarning, "index_fill_ on expanded tensors"):
            x.index_fill_(0, torch.tensor([1], device=device), torch.tensor(5., device=device))
        self.assertEqual(x, torch.tensor([[1., 1., 1.], [5., 5., 5.]], device=device))
        base, x = fresh()
        with self.assertWarnsRegex(UserWarning, "index_put_ on expanded tensors"):
            x.index_put_((torch.tensor([1], device=device),), torch.tensor(5., device=device))
        self.assertEqual(base, torch.tensor([[1.], [5.]], device=device))
        with self.assertWarnsRegex(UserWarning, "index_put_ on expanded tensors"):
            x[torch.tensor([0], device=device)] = 3.
        self.assertEqual(base, torch.tensor([[3.], [5.]], device=device))
        with self.assertWarnsRegex(UserWarning, "index_put_ on expanded tensors"):
            x[1, torch.tensor([2], device=device)] = torch.tensor([4.], device=device)
        self.assertEqual(x, torch.tensor([[3., 3., 3.], [4., 4., 4.]], device=device))

    def test_expanded_write_still_refused(self, device):
        # a Python True key is basic indexing (a view, then copy_): still "unsupported operation"
        x = torch.zeros(1, device=device).expand(3)
        with self.assertRaisesRegex(RuntimeError, "unsupported operation"):
            x[True] = 2.
        # an expanded tensor whose history is recorded: torch raises in backward
        # (AsStridedBackward0), tracegrad at the write; either way inside this block
        w = torch.zeros(1, device=device, requires_grad=True)
        mask = torch.tensor([True, False, False], device=device)
        with self.assertRaisesRegex(RuntimeError, "unsupported operation"):
            y = w.clone().expand(3)
            y.masked_fill_(mask, 2.)
            y.sum().backward()
        # a value that requires grad into an untracked expanded tensor: every alias holds it
        v = torch.tensor(2., device=device, requires_grad=True)
        y = torch.zeros(1, device=device).expand(3)
        with self.assertWarnsRegex(UserWarning, "expanded tensors"):
            y.masked_fill_(mask, v)
        y.sum().backward()
        self.assertEqual(v.grad, torch.tensor(3., device=device))


_cdt.instantiate_device_type_tests(TestBinaryUfuncsTI29, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestFixesTI29, globals(), only_for="cpu")


test_oracle_torch_passes = oracle_test("TI29_ORACLE", __file__)
