"""NOTE: the PyTorch test functions this file held (test/test_linalg.py's TestLinalg under their
names), copied from pytorch/pytorch (the same statements and literals, lightly edited), were removed
(a public repository's code stays out of this project's commits); what remains is the tests written
here. The text below describes the round as it was.

testinfra39: PyTorch's test/test_linalg.py (``TestLinalg``, pytorch/pytorch commit fcca03a1), the part
after testinfra36/37/38's: linalg.matrix_power (non-negative and negative powers, batches),
linalg.matrix_exp (boundary cases and errors, analytic values, batches, against a Taylor reference in
NumPy), linalg.slogdet / det / logdet (singular, hermitian and batched inputs, errors), linalg.eig /
eigvals (against NumPy for real and complex inputs, errors and out= rules, non-finite inputs), lu_solve
(the old torch.lu_solve, batches, broadcasting; linalg.lu_solve with left/adjoint; the pivots checks),
linalg.solve_triangular (upper/left/unitriangular, transposed/conjugated/expanded operands, batches,
broadcasting), and the BLAS family that lives in test_linalg.py: addmm / addmv / addbmm / baddbmm
(beta=0 with NaN input, out=, 0-strided and transposed operands, sizes and their errors), the empty-input
BLAS cases, alpha/beta with empty products, NaN-filled outs and broadcast fused matmuls. Ported in our
own code and run on tracegrad through its own ``tracegrad.testing._internal`` harness. Every test
function is here under its original name with its original checks.

Adapted: sizes made smaller (matrix_exp_analytic on (3, 3) and (2, 4, 4) instead of up to 200x200 and
its batches, matrix_exp_batch / compare_with_taylor on two shapes each, slogdet's matsizes (0, 3, 5) x
batches ((0,), (3,), (5, 3)) cut to (0, 3) x ((0,), (3,), (2, 2)), det_logdet_slogdet on n in (5, 6)
(one 8x8 orthogonal matrix instead of 250..550, no 512x512 small-value case, the symmetric case as
``(r + r.t()) / 2``), det_logdet_slogdet_batched on matsize 3 with batches (3,) and (2, 3), eig /
eigvals on 4x4 instead of 5x5, eig_with_nan's (10,) batch to (2,), linalg_lu_solve on batches ((), (0,),
(2, 1)) x n in (3, 0) without the (1, 64) / (2, 128) / (1025, 2) path shapes, lu_solve_batched's batch
sizes (1, 3, 4) to (1, 3) with 4 right-hand sides instead of 10, solve_triangular's shape cross
(b in (1, 2, 0), n in (5, 0), k in (3, 1, 0)) cut to b in (1, 2) x (n, k) in ((3, 2), (3, 0)), addmv's
50x100 to 6x8, addmm's 10x50x25 to 4x6x5 with two of the 16 transpose cases, addmm_sizes' 25/10/8 to
3/2/2, baddbmm_nan_input_with_zero_beta's 20x20 to 5x5, addbmm / baddbmm on 2x3x4 @ 2x4x5 products with
4 of the 36 permutation pairs and 8 of the 64 broadcasting cases); dtype lists cut: lu_solve_batched(_
broadcasting), linalg_lu_solve, linalg_lu_cpu_errors and the solve_triangular tests run float32 and
complex128, addbmm / baddbmm float32 and complex64, the BLAS tests drop bfloat16/half (and
blas_alpha_beta_empty runs float, double, long, cfloat instead of every dtype); ``make_tensor`` takes
dtype/device as keywords; ``random`` is a seeded ``random.Random(39)``; warning checks set
``simplefilter("always")``; the matrix_exp helpers are module functions; addmm's reference skips the
bfloat16 upcast (no bfloat16 here). The newer upstream file's calls where the old ones are gone:
linalg.lu_factor(_ex) for torch.lu. torch 2.13's own behaviour where the file's differs (each marked):
slogdet of a bfloat16 input says "Low precision dtypes not supported"; slogdet with two resized outs
warns twice (once per out). Left out: the CUDA-only tests and branches (the device-mismatch checks,
test_lu_solve_large_matrices, pivot=False), the @slowTest many-batch variants,
test_linalg_matrix_exp_utils (torch._compute_linear_combination is private), test_addmm_activation
(torch._addmm_activation is private), test_addmm_baddbmm_overflow (CUDA half), test_mm / test_bmm
(outside this brief's family). linalg.vander was ported before
(tests/conformance/test_tensor_creation_ported_round5.py); linalg.vecdot and solve_ex have no test of
their own in test_linalg.py: ``TestFixesTI39`` checks them against their definitions and torch's words.

Fixes in tracegrad (``TestFixesTI39`` probes each): linalg.eig / eigvals refuse an ``out`` they
cannot safely cast into in torch's words, part by part ("torch.linalg.eig: Expected eigenvectors to be
safely castable from ComplexFloat dtype, but got eigenvectors with dtype Float"; tracegrad had the
generic "eig(): result type ComplexFloat can't be cast ..."); linalg.lu_solve (and torch.lu_solve) and
torch.lu_unpack refuse pivots outside ``[1, n]`` as torch ("Pivots given to lu_solve must all be
greater or equal to 1. ..."; tracegrad solved with the wrong rows silently); the in-place deprecated
scalars-first overloads (``x.addbmm_(1, b1, b2)``, addmm_, addmv_, addr_, baddbmm_) warn under the
in-place name ("This overload of addbmm_ is deprecated"; it said "addbmm"); an expanded ``out`` of no
elements is written (it was refused as overlapping, where torch calls an empty tensor contiguous);
linalg.matrix_exp of float32 / complex64 is computed in double and cast back inside its one op node
(XLA's single-precision Pade missed the double result by up to 2e-4 relative on well-conditioned 3x3
inputs of norm ~10, torch by ~1e-5; half inputs now get torch's single LinalgMatrixExpBackward0 node
too, not two casts around it); linalg.vecdot words mixed dtypes and two vectors of unequal length as torch; solve_ex's
LinAlgError starts "torch.linalg.solve_ex:" as torch's; matrix_power of an integer matrix with n < 0 is
refused by inv in its words ("linalg.inv: Expected a floating point or complex tensor as input. Got
Int").

Found and left alone: linalg.eig's backward does not refuse a loss that depends on the eigenvectors'
phases (torch raises "linalg_eig_backward: The eigenvectors in the complex case are specified up to
multiplication by e^{i phi} ..."; tracegrad differentiates JAX's choice of phase):
``test_eig_backward_phase_dependent_loss_raises`` is a strict expected failure. torch 2.13 gives a
zero gradient for det of the exactly singular [[1, 2], [2, 4]] where tracegrad gives the adjugate
[[4, -2], [-2, 1]] (the derivative); not asserted either way.

``TI39_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in
a subprocess), so every expectation is torch's.
"""
import importlib
import os
import random as _random

import numpy as np
import pytest

from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI39_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase
random = _random.Random(39)


class TestFixesTI39(TestCase):
    """Probes next to the ported tests, for what their fixes touch (each expectation is torch's in
    the oracle run): linalg.eig / eigvals refuse an ``out`` they cannot safely cast into in their own
    words, part by part; lu_solve / lu_unpack refuse pivots outside ``[1, n]``; the in-place
    deprecated scalars-first overloads warn under the in-place name; an expanded empty ``out`` is
    written (no element overlaps); matrix_exp is accurate in single precision; linalg.vecdot and
    solve_ex and matrix_power have torch's words; the gradients of matrix_exp / matrix_power /
    slogdet / det pass gradcheck."""

    def test_eig_out_castable_words(self, device):
        a = torch.tensor([[3., -2.], [4., -1.]], device=device)
        cf, f, i = (torch.empty(0, dtype=d, device=device) for d in (torch.cfloat, torch.float, torch.int))
        for outs, part, got in (((f, cf), "eigenvalues", "Float"), ((cf, f), "eigenvectors", "Float"),
                                ((i, cf), "eigenvalues", "Int"), ((cf, i), "eigenvectors", "Int")):
            with self.assertRaisesRegex(RuntimeError, rf"^torch.linalg.eig: Expected {part} to be safely castable "
                                                      rf"from ComplexFloat dtype, but got {part} with dtype {got}$"):
                torch.linalg.eig(a, out=outs)
        with self.assertRaisesRegex(RuntimeError, r"^torch.linalg.eigvals: Expected eigenvalues to be safely castable "
                                                  r"from ComplexDouble dtype, but got eigenvalues with dtype Float$"):
            torch.linalg.eigvals(a.double(), out=f)
        # a wider complex out is taken
        w, v = torch.empty(0, dtype=torch.cdouble, device=device), torch.empty(0, dtype=torch.cdouble, device=device)
        torch.linalg.eig(a, out=(w, v))
        self.assertEqual(w, torch.linalg.eig(a)[0].to(torch.cdouble))

    def test_lu_pivots_out_of_range(self, device):
        LU, piv = torch.linalg.lu_factor(torch.randn(2, 3, 3, dtype=torch.double, device=device))
        B = torch.randn(2, 3, 1, dtype=torch.double, device=device)
        ask = "Did you properly pass the result of lu_factor\\?"
        for v, words in ((0, "greater or equal to 1"), (-2, "greater or equal to 1"), (4, r"smaller or equal to LU.size\(-2\)")):
            p = piv.clone()
            p[1, 2] = v
            with self.assertRaisesRegex(RuntimeError, rf"^Pivots given to lu_solve must all be {words}. {ask}$"):
                torch.linalg.lu_solve(LU, p, B)
            with self.assertRaisesRegex(RuntimeError, rf"^pivots passed to lu_unpack must be between 1 and "
                                                      rf"LU.size\(-2\) inclusive.{ask}$"):
                torch.lu_unpack(LU, p)
        # in range (any row, not only LAPACK's own choice) is fine
        p = torch.full_like(piv, 3)
        X = torch.linalg.lu_solve(LU, p, B)
        P, L, U = torch.lu_unpack(LU, p)
        self.assertEqual(P @ L @ U @ X, B)

    def test_inplace_deprecated_overload_names(self, device):
        m = torch.ones(2, 2, device=device)
        b = torch.ones(3, 2, 2, device=device)
        v = torch.ones(2, device=device)
        # (method, self, operands, operand names, the product's entries)
        for name, t, operands, names, prod in (("addmm_", torch.ones(2, 2, device=device), (m, m), ("mat1", "mat2"), 2.),
                                               ("addbmm_", torch.ones(2, 2, device=device), (b, b), ("batch1", "batch2"), 6.),
                                               ("addmv_", torch.ones(2, device=device), (m, v), ("mat", "vec"), 2.),
                                               ("addr_", torch.ones(2, 2, device=device), (v, v), ("vec1", "vec2"), 1.)):
            with self.assertWarnsOnceRegex(UserWarning, rf"This overload of {name} is deprecated:\n\t{name}\(Number "
                                                        rf"beta, Number alpha, Tensor {names[0]}, Tensor {names[1]}\)"):
                getattr(t, name)(3, 0.5, *operands)
            self.assertEqual(t, torch.full_like(t, 3 + 0.5 * prod))
        s = torch.zeros(3, 2, 2, device=device)
        with self.assertWarnsOnceRegex(UserWarning, r"This overload of baddbmm_ is deprecated:\n\tbaddbmm_\(Number "
                                                    r"beta, Tensor batch1, Tensor batch2\)"):
            s.baddbmm_(2, b, b)
        self.assertEqual(s, torch.full((3, 2, 2), 2., device=device))

    def test_expanded_empty_out_is_written(self, device):
        out = torch.randn(3, 0, device=device).expand(2, 3, 0)
        self.assertIs(torch.linalg.solve_triangular(torch.eye(3, device=device), torch.randn(2, 3, 0, device=device),
                                                    upper=True, out=out), out)
        out.copy_(torch.ones(2, 3, 0, device=device))
        with self.assertRaisesRegex(RuntimeError, "^unsupported operation: more than one element of the written-to"):
            torch.randn(3, 2, device=device).expand(2, 3, 2).copy_(torch.ones(2, 3, 2, device=device))

    def test_matrix_exp_single_precision(self, device):
        # 16 well-conditioned matrices of norm up to ~10 (several squarings): each within 2e-5 of the
        # double result, relative to its largest entry (XLA's single-precision Pade missed by 2e-4)
        rng = np.random.RandomState(39)
        q = np.eye(3) + rng.rand(16, 3, 3) / 9 * (1 - np.eye(3))
        x = q @ (np.eye(3) * rng.randn(16, 1, 3) * 2.5) @ np.linalg.inv(q)
        for dtype in (torch.float, torch.cfloat):
            xt = torch.tensor(x + (1j * x[::-1] / 4 if dtype.is_complex else 0), device=device).to(dtype)
            ref = torch.linalg.matrix_exp(xt.to(torch.cdouble if dtype.is_complex else torch.double))
            got = torch.linalg.matrix_exp(xt)
            self.assertEqual(got.dtype, dtype)
            err = (got.to(ref.dtype) - ref).abs().flatten(1).max(1)[0] / ref.abs().flatten(1).max(1)[0]
            self.assertLess(err.max().item(), 2e-5)

    def test_vecdot_solve_ex_matrix_power_words(self, device):
        x = torch.randn(2, 3, dtype=torch.cdouble, device=device)
        with self.assertRaisesRegex(RuntimeError, r"^linalg.vecdot: Expected x and y to have the same dtype, but found "
                                                  r"x of type ComplexDouble and y of type ComplexFloat instead$"):
            torch.linalg.vecdot(x, x.to(torch.cfloat))
        with self.assertRaisesRegex(RuntimeError, r"^inconsistent tensor size, expected tensor \[3\] and src \[4\] to "
                                                  r"have the same number of elements, but got 3 and 4 elements"):
            torch.linalg.vecdot(torch.randn(3, device=device), torch.randn(4, device=device))
        self.assertEqual(torch.linalg.vecdot(x, x.flip(0), dim=0), (x.conj() * x.flip(0)).sum(0))

        A = torch.eye(3, device=device).repeat(3, 1, 1)
        A[1, 2, 2] = 0
        res = torch.linalg.solve_ex(A, torch.ones(3, 3, 1, device=device))
        self.assertEqual(res.info, torch.tensor([0, 3, 0], dtype=torch.int32, device=device))
        with self.assertRaisesRegex(torch.linalg.LinAlgError, r"^torch.linalg.solve_ex: \(Batch element 1\): The "
                                                              r"solver failed because the input matrix is singular.$"):
            torch.linalg.solve_ex(A, torch.ones(3, 3, 1, device=device), check_errors=True)

        with self.assertRaisesRegex(RuntimeError, r"^linalg.inv: Expected a floating point or complex tensor as input. "
                                                  r"Got Int$"):
            torch.linalg.matrix_power(torch.ones(2, 2, dtype=torch.int, device=device), -1)
        self.assertEqual(torch.linalg.matrix_power(torch.ones(2, 2, dtype=torch.int, device=device), 3),
                         torch.full((2, 2), 4, dtype=torch.int, device=device))

    def test_linalg_gradcheck(self, device):
        X = torch.randn(3, 3, dtype=torch.double, device=device, requires_grad=True)
        for fn in (torch.linalg.matrix_exp, lambda t: torch.linalg.matrix_power(t, -2),
                   lambda t: torch.linalg.matrix_power(t, 3), lambda t: torch.linalg.slogdet(t)[1], torch.linalg.det):
            self.assertTrue(torch.autograd.gradcheck(fn, (X,)))
        # d det(A) / dA = adj(A)^T for an invertible A
        A = torch.tensor([[2., 1.], [1., 3.]], dtype=torch.double, device=device, requires_grad=True)
        torch.linalg.det(A).backward()
        self.assertEqual(A.grad, torch.tensor([[3., -1.], [-1., 2.]], dtype=torch.double, device=device))


@pytest.mark.xfail(not _ORACLE, strict=True, reason="tracegrad's eig backward (JAX's eig VJP) does not check that "
                   "the loss is invariant to the eigenvectors' phases; torch raises in backward")
def test_eig_backward_phase_dependent_loss_raises():
    A = torch.tensor([[1., 2., 0.], [-3., 1., 1.], [0., 1., 2.]], dtype=torch.double, requires_grad=True)
    w, v = torch.linalg.eig(A)
    with pytest.raises(RuntimeError, match=r"^linalg_eig_backward: The eigenvectors in the complex case are "
                                           r"specified up to multiplication by e\^\{i phi\}"):
        v.real.sum().backward()
    # a phase-invariant loss differentiates
    w, v = torch.linalg.eig(A)
    (w.real.sum() + v.abs().sum()).backward()
    assert A.grad is not None


@pytest.mark.skipif(_ORACLE, reason="tracegrad.compile's programs (the oracle run is torch itself)")
def test_compiled_matrix_exp_and_lu_solve_pivots():
    """Compiled equals eager for the single-precision matrix_exp, and a compiled lu_solve refuses
    out-of-range pivots with eager's words (the check runs with the program)."""
    x = torch.randn(2, 3, 3) * 3
    f = torch.compile(lambda t: torch.linalg.matrix_exp(t))
    assert torch.equal(f(x), torch.linalg.matrix_exp(x))
    LU, piv = torch.linalg.lu_factor(torch.randn(3, 3))
    B = torch.randn(3, 2)
    g = torch.compile(lambda LU, p, B: torch.linalg.lu_solve(LU, p, B))
    assert torch.equal(g(LU, piv, B), torch.linalg.lu_solve(LU, piv, B))
    bad = piv.clone()
    bad[1] = 4
    with pytest.raises(RuntimeError, match=r"^Pivots given to lu_solve must all be smaller or equal to LU.size\(-2\)"):
        g(LU, bad, B)


_cdt.instantiate_device_type_tests(TestFixesTI39, globals(), only_for="cpu")


test_oracle_torch_passes = oracle_test("TI39_ORACLE", __file__)
