"""NOTE: the PyTorch test functions this file once held, copied from pytorch/pytorch, were removed
(a public repository's code stays out of this project's commits); what remains is the tests
written here. The text below describes the round as it was.

testinfra31: PyTorch test functions from test/test_sort_and_select.py (``TestSortAndSelect``,
pytorch/pytorch commit 6f3cff94) copied as torch wrote them, with the dtype lists and sizes cut where
noted to keep the file fast, run on tracegrad through its own ``tracegrad.testing._internal``
harness. Then the torch 2.13 behaviours this round's probes of sort/select, shape ops, reductions
and losses found tracegrad getting wrong (now fixed), written in the same style: ``all``/``any``
with ``dim=()`` reduce nothing; ``clamp_min``/``clamp_max`` refuse a number bound the dtype cannot
hold; ``unique``/``unique_consecutive`` along a dim of a 0-d input is torch's IndexError;
``topk(k=0)`` of a 0-d input gives the element; ``smooth_l1_loss(beta=0)`` is ``l1_loss`` (its
grad_fn); ``aminmax``, ``mode``, ``diag_embed``, ``block_diag`` and ``cdist`` (its direct kernel)
are one node each; ``trapezoid``/``cumulative_trapezoid``, ``kron`` and ``renorm`` record torch's
nodes; ``ctc_loss``'s node has one edge, and ``zero_infinity`` adds torch's ``where`` node.
``TestKnownGapsTI31`` holds the strict expected failures. ``TI31_ORACLE=1`` runs the same classes
on torch 2.13 itself (``test_oracle_torch_passes`` does that in a subprocess), so every
expectation is torch's."""
import importlib
import os

import numpy as np

from _ported_helpers import oracle_test

torch = importlib.import_module("torch" if os.environ.get("TI31_ORACLE") else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase


class TestFixesTI31(TestCase):
    """The torch 2.13 behaviours this round fixed in tracegrad (each failed before the fix)."""

    def test_all_any_empty_dims_reduce_nothing(self, device):
        x = torch.tensor([[0, 1], [2, 0]], device=device)
        want = torch.tensor([[False, True], [True, False]], device=device)
        for op in (torch.all, torch.any):
            for dims in ((), []):
                self.assertEqual(op(x, dims), want)
                self.assertEqual(op(x, dim=dims, keepdim=True), want)
        self.assertEqual(x.all(dim=()).dtype, torch.bool)
        u = torch.tensor([0, 2], dtype=torch.uint8, device=device)
        self.assertEqual(u.any(dim=()), torch.tensor([0, 1], dtype=torch.uint8, device=device))
        # a float input gives bools; a 0-d input stays 0-d
        self.assertEqual(torch.tensor([[0., 1.5]], device=device).all(dim=()),
                         torch.tensor([[False, True]], device=device))
        self.assertEqual(torch.tensor(2., device=device).all(dim=()), torch.tensor(True, device=device))
        # dim=None still reduces every dim
        self.assertEqual(x.all(), torch.tensor(False, device=device))

    def test_clamp_min_max_bound_overflow(self, device):
        x = torch.tensor([1, 5], dtype=torch.int8, device=device)
        for fn in (lambda: torch.clamp_max(x, 300), lambda: torch.clamp_min(x, -200),
                   lambda: x.clamp_max(128), lambda: torch.clamp(x, max=300)):
            with self.assertRaisesRegex(RuntimeError, "value cannot be converted to type int8"):
                fn()
        h = torch.tensor([1., 5.], dtype=torch.float16, device=device)
        with self.assertRaisesRegex(RuntimeError, "value cannot be converted to type"):
            torch.clamp_min(h, 1e6)
        # a float bound of an integer input promotes (no overflow check); uint8 wraps as torch
        self.assertEqual(torch.clamp_min(x, 2.5), torch.tensor([2.5, 5.], device=device))
        self.assertEqual(torch.clamp_max(x, 127), x)
        self.assertEqual(torch.clamp_min(torch.tensor([1, 5], dtype=torch.uint8, device=device), -1),
                         torch.tensor([255, 255], dtype=torch.uint8, device=device))

    def test_unique_dim_of_0d_is_index_error(self, device):
        x = torch.tensor(2., device=device)
        for fn in (lambda: torch.unique(x, dim=0), lambda: torch.unique(x, dim=-1, return_counts=True),
                   lambda: x.unique(dim=0), lambda: torch.unique_consecutive(x, dim=0)):
            with self.assertRaisesRegex(IndexError, "Dimension specified as -?[01] but tensor has no dimensions"):
                fn()
        # without a dim a 0-d input is fine
        self.assertEqual(torch.unique(x), torch.tensor([2.], device=device))
        self.assertEqual(torch.unique_consecutive(x), torch.tensor([2.], device=device))

    def test_topk_k0_of_0d(self, device):
        x = torch.tensor(2., device=device)
        val, idx = torch.topk(x, 0)
        self.assertEqual(val, x)
        self.assertEqual(idx, torch.tensor(0, device=device))
        self.assertEqual(x.topk(1).values, x)
        with self.assertRaisesRegex(RuntimeError, "selected index k out of range"):
            torch.topk(x, 2)

    def test_smooth_l1_zero_beta_is_l1(self, device):
        F = torch.nn.functional
        x = torch.tensor([[0.5, -2.], [1., 0.25]], device=device)
        y = torch.zeros(2, 2, device=device)
        for red, name in (("none", "AbsBackward0"), ("mean", "MeanBackward0"), ("sum", "SumBackward0")):
            a = x.clone().requires_grad_()
            b = x.clone().requires_grad_()
            out = F.smooth_l1_loss(a, y, reduction=red, beta=0.)
            ref = F.l1_loss(b, y, reduction=red)
            self.assertEqual(out, ref)
            self.assertEqual(type(out.grad_fn).__name__, name)
            out.sum().backward()
            ref.sum().backward()
            self.assertEqual(a.grad, b.grad)
        a = x.clone().requires_grad_()
        self.assertEqual(type(F.smooth_l1_loss(a, y, beta=0.5).grad_fn).__name__, "SmoothL1LossBackward0")

    def test_ctc_loss_graph(self, device):
        F = torch.nn.functional
        lp = torch.tensor(np.random.RandomState(31).standard_normal((6, 2, 4)), dtype=torch.float32,
                          device=device).log_softmax(2).detach().requires_grad_()
        targets = torch.tensor([[1, 2, 2], [3, 0, 0]], device=device)
        args = (torch.tensor([6, 2], device=device), torch.tensor([3, 1], device=device))
        # the targets and lengths have no edge on the node
        out = F.ctc_loss(lp, targets, *args, reduction="none")
        self.assertEqual(type(out.grad_fn).__name__, "CtcLossBackward0")
        self.assertEqual(len(out.grad_fn.next_functions), 1)
        # zero_infinity: torch puts a where() over the node (both losses here are finite)
        for red, chain in (("none", ["WhereBackward0", "CtcLossBackward0"]),
                           ("sum", ["SumBackward0", "WhereBackward0", "CtcLossBackward0"]),
                           ("mean", ["MeanBackward0", "DivBackward0", "WhereBackward0", "CtcLossBackward0"])):
            node, names = F.ctc_loss(lp, targets, *args, reduction=red, zero_infinity=True).grad_fn, []
            while node is not None and type(node).__name__ != "AccumulateGrad":
                names.append(type(node).__name__)
                node = [n for n, _ in node.next_functions if n is not None][0]
            self.assertEqual(names, chain)
        # sample 1 is impossible (3 labels with repeats need 5 steps, it has 2): loss and gradient zero
        bad = torch.tensor([[1, 1, 1], [1, 1, 1]], device=device)
        out = F.ctc_loss(lp, bad, torch.tensor([6, 2], device=device), torch.tensor([3, 3], device=device),
                         reduction="none", zero_infinity=True)
        self.assertEqual(out[1], torch.tensor(0., device=device))
        out.sum().backward()
        self.assertEqual(lp.grad[:, 1], torch.zeros(6, 4, device=device))

    def test_aminmax_one_node(self, device):
        x = torch.tensor([[1., 5., 5.], [0., 0., 2.]], device=device, requires_grad=True)
        mn, mx = torch.aminmax(x, dim=1)
        self.assertEqual(type(mn.grad_fn).__name__, "AminmaxBackward0")
        self.assertTrue(mn.grad_fn is mx.grad_fn)
        self.assertEqual((mn.output_nr, mx.output_nr), (0, 1))
        (mn + 2 * mx).sum().backward()
        # ties share the gradient evenly, as amin/amax
        self.assertEqual(x.grad, torch.tensor([[1., 1., 1.], [0.5, 0.5, 2.]], device=device))
        mn, mx = x.aminmax()
        self.assertTrue(mn.grad_fn is mx.grad_fn)
        self.assertEqual(torch.aminmax(x, keepdim=True).max.shape, (1, 1))
        with self.assertRaises(NotImplementedError):
            torch.aminmax(torch.tensor([1 + 1j], device=device))

    def test_mode_one_node(self, device):
        x = torch.tensor([[1., 2., 2., 0.], [3., 0., 0., 3.]], device=device, requires_grad=True)
        for keepdim in (False, True):
            v, i = torch.mode(x, 1, keepdim)
            self.assertEqual(type(v.grad_fn).__name__, "ModeBackward0")
            self.assertEqual(v, torch.tensor([2., 0.], device=device).view((2, 1) if keepdim else (2,)))
            self.assertEqual(i, torch.tensor([2, 2], device=device).view((2, 1) if keepdim else (2,)))
        x.grad = None
        torch.mode(x, 0).values.sum().backward()
        self.assertEqual(x.grad.sum(), torch.tensor(4., device=device))
        z = torch.tensor(2., device=device, requires_grad=True)
        self.assertEqual(type(torch.mode(z).values.grad_fn).__name__, "ModeBackward0")

    def test_diag_embed_one_node(self, device):
        x = torch.tensor([[1., 2.], [3., 4.]], device=device, requires_grad=True)
        for offset, dim1, dim2 in ((0, -2, -1), (1, 0, 2), (-1, 2, 0)):
            y = torch.diag_embed(x, offset, dim1, dim2)
            self.assertEqual(type(y.grad_fn).__name__, "DiagEmbedBackward0")
            self.assertTrue(y.is_contiguous())
            self.assertEqual(y.diagonal(offset, dim1, dim2), x)
            self.assertEqual(y.abs().sum(), x.abs().sum())
            x.grad = None
            (y * 2).sum().backward()
            self.assertEqual(x.grad, torch.full((2, 2), 2., device=device))

    def test_trapezoid_nodes(self, device):
        def names(t):
            out, node = [], t.grad_fn
            while node is not None and type(node).__name__ != "AccumulateGrad":
                out.append(type(node).__name__)
                node = [n for n, _ in node.next_functions if n is not None][0]
            return out
        y = torch.tensor([[1., 2., 4.], [0., 3., 1.]], device=device, requires_grad=True)
        # (y.sum(d) - (y[0] + y[-1]) * 0.5) * dx: products by a C++ Scalar
        self.assertEqual(names(torch.trapezoid(y, dx=2.5)), ["MulBackward1", "SubBackward0", "SumBackward1"])
        self.assertEqual(torch.trapezoid(y, dx=2.5), torch.tensor([11.25, 8.75], device=device))
        self.assertEqual(names(torch.trapezoid(y, torch.tensor([0., 1., 3.], device=device)))[:2],
                         ["DivBackward1", "SumBackward1"])
        self.assertEqual(names(torch.cumulative_trapezoid(y))[:2], ["CumsumBackward0", "MulBackward1"])
        # no samples: zeros in y's dtype, no history
        e = torch.trapezoid(torch.ones(2, 0, dtype=torch.int64, device=device))
        self.assertEqual(e, torch.zeros(2, dtype=torch.int64, device=device))
        self.assertIsNone(torch.trapezoid(torch.ones(2, 0, device=device, requires_grad=True)).grad_fn)
        self.assertEqual(type(torch.cumulative_trapezoid(torch.ones(2, 0, device=device, requires_grad=True)).grad_fn).__name__,
                         "CumsumBackward0")

    def test_kron_unsafe_view_nodes(self, device):
        a = torch.tensor([[1., 2.], [3., 4.]], device=device, requires_grad=True)
        b = torch.tensor([[0.5, -1., 2.]], device=device, requires_grad=True)
        r = torch.kron(a, b)
        self.assertEqual(type(r.grad_fn).__name__, "UnsafeViewBackward0")
        mul = r.grad_fn.next_functions[0][0]
        self.assertEqual(type(mul).__name__, "MulBackward0")
        self.assertEqual([type(n).__name__ for n, _ in mul.next_functions], ["UnsafeViewBackward0"] * 2)
        r.sum().backward()
        self.assertEqual(a.grad, torch.full((2, 2), 1.5, device=device))
        self.assertEqual(b.grad, torch.full((1, 3), 10., device=device))

    def test_renorm_one_node(self, device):
        x = torch.tensor([[1., -2., 0.], [0.1, 0.2, 0.], [0., 0., 0.]], device=device, requires_grad=True)
        for p in (1, 2, 0.5, float("inf")):
            r = torch.renorm(x, p, 0, 1.)
            self.assertEqual(type(r.grad_fn).__name__, "RenormBackward0")
            x.grad = None
            r.sum().backward()
            # the slices left alone pass the gradient through; a zero element gets a finite one
            self.assertEqual(x.grad[1:], torch.ones(2, 3, device=device))
            self.assertFalse(x.grad.isnan().any() or x.grad.isinf().any())
        self.assertEqual(torch.renorm(x, 2, 0, 1.)[0].norm(), torch.tensor(1., device=device), atol=1e-6, rtol=0)

    def test_block_diag_one_node(self, device):
        a = torch.ones(2, device=device, requires_grad=True)
        b = torch.tensor(3., dtype=torch.float64, device=device, requires_grad=True)
        c = torch.ones(2, 2, dtype=torch.int64, device=device)
        r = torch.block_diag(a, b, c)
        self.assertEqual(r.dtype, torch.float32)   # a 0-d float64 does not promote
        self.assertEqual(type(r.grad_fn).__name__, "BlockDiagBackward0")
        self.assertEqual([type(n).__name__ if n is not None else None for n, _ in r.grad_fn.next_functions],
                         ["AccumulateGrad", "AccumulateGrad", None])
        (r * torch.arange(r.numel(), device=device).reshape(r.shape)).sum().backward()
        self.assertEqual(a.grad, torch.tensor([0., 1.], device=device))
        self.assertEqual(b.grad, torch.tensor(7., dtype=torch.float64, device=device))

    def test_cdist_one_node(self, device):
        x1 = torch.tensor([[0., 1., 2.], [1., 1., 1.]], device=device, requires_grad=True)
        x2 = torch.tensor([[0., 1., 2.], [2., 1., 0.], [0., 0., 0.]], device=device, requires_grad=True)
        for p in (0., 1., 1.5, 2., float("inf")):
            r = torch.cdist(x1, x2, p)
            self.assertEqual(type(r.grad_fn).__name__, "CdistBackward0")
            x1.grad = x2.grad = None
            r.sum().backward()
            # a zero distance (x1[0] == x2[0]) gives no NaN
            self.assertFalse(x1.grad.isnan().any() or x2.grad.isnan().any())
        r = torch.cdist(x1, x2)
        self.assertEqual(r[1, 1], torch.tensor(2., device=device).sqrt())
        # more than 25 rows: torch's matrix-product path, not the CdistBackward0 kernel
        big = torch.ones(26, 3, device=device, requires_grad=True)
        self.assertNotEqual(type(torch.cdist(big, x2).grad_fn).__name__, "CdistBackward0")


class TestKnownGapsTI31(TestCase):
    """Differences found and left here, fixed later (each passes on tracegrad and the oracle)."""

    def test_rot90_node(self, device):
        # torch records one Rot90Backward0 node whose result has strides (1, 3) for a (2, 3)
        # input turned once; tracegrad composed flip + transpose (TransposeBackward0) until
        # testinfra35 made rot90 one op with torch's strides
        x = torch.zeros(2, 3, device=device, requires_grad=True)
        y = torch.rot90(x)
        self.assertEqual(y.stride(), (1, 3))
        self.assertEqual(type(y.grad_fn).__name__, "Rot90Backward0")


_cdt.instantiate_device_type_tests(TestFixesTI31, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestKnownGapsTI31, globals(), only_for="cpu")

test_oracle_torch_passes = oracle_test("TI31_ORACLE", __file__)
