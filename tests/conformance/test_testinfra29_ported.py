"""NOTE: the PyTorch test functions this file once held, copied from pytorch/pytorch, were removed
(a public repository's code stays out of this project's commits); what remains is the tests
written here. The text below describes the round as it was.

testinfra29: PyTorch test functions no earlier port covered, copied as torch wrote them (with the
dtype lists and loop sizes cut where noted, to keep the file fast), run on tracegrad through its own
``tracegrad.testing._internal`` harness (``TestCase``, ``instantiate_device_type_tests``,
``make_tensor``). Sources: pytorch/pytorch test/test_binary_ufuncs.py (commit 001758d0,
``TestBinaryUfuncs``), plus the torch 2.13 behaviours this round fixed (float floor division's
signed zero, masked_fill_/index_fill_/index_put_ with one value on an expanded tensor), written in the same style. ``TI29_ORACLE=1`` runs the same classes on torch 2.13 itself
(``test_oracle_torch_passes`` does that in a subprocess), so every expectation is torch's."""
import importlib
import math
import os

import numpy as np

from _ported_helpers import oracle_test

torch = importlib.import_module("torch" if os.environ.get("TI29_ORACLE") else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase
dtypes = _cdt.dtypes
make_tensor = torch.testing.make_tensor


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


_cdt.instantiate_device_type_tests(TestFixesTI29, globals(), only_for="cpu")

test_oracle_torch_passes = oracle_test("TI29_ORACLE", __file__)
