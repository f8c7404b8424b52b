"""The factorizations and solves tracegrad.linalg gained from _linalg_decomp.py (LU, Cholesky
with an error code, triangular, least squares, eig, Householder, rank, cond, matrix_exp, tensor
inverse/solve) and torch's top-level spellings (cholesky*, lu*, qr, triangular_solve):
values, gradients and the error classes, against torch."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import A, C, check_parity, params

torch = pytest.importorskip("torch")


def _mat(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape)


def _spd(n, batch=(), seed=0):
    a = _mat(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _chol(n, batch=(), seed=0):
    return np.linalg.cholesky(_spd(n, batch, seed))


def _tri(n, batch=(), upper=False, seed=0):
    a = _mat(*batch, n, n, seed=seed) + 3 * np.eye(n)
    return np.triu(a) if upper else np.tril(a)


NOGRAD = A(np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), grad=False)


def _lu_parts(m, a):
    LU, piv = m.linalg.lu_factor(a)
    return LU, piv


CASES = [
    # LU
    C("lu_factor", lambda m, a: tuple(m.linalg.lu_factor(a)), [_mat(2, 4, 4)], no_grad_fn=True),
    C("lu_factor_rect", lambda m, a: tuple(m.linalg.lu_factor(a)), [_mat(5, 3)], no_grad_fn=True),
    C("lu_factor_ex", lambda m, a: tuple(m.linalg.lu_factor_ex(a)), [_mat(3, 3)], no_grad_fn=True),
    C("lu_factor_ex_singular_info", lambda m, a: m.linalg.lu_factor_ex(a).info,
      [A(np.array([[1.0, 2.0], [2.0, 4.0]]), grad=False)]),
    C("linalg_lu", lambda m, a: tuple(m.linalg.lu(a)), [_mat(2, 3, 3, seed=1)], no_grad_fn=True),
    C("linalg_lu_wide", lambda m, a: tuple(m.linalg.lu(a)), [_mat(3, 5, seed=2)], no_grad_fn=True),
    C("linalg_lu_tall", lambda m, a: tuple(m.linalg.lu(a)), [_mat(5, 3, seed=3)], no_grad_fn=True),
    C("lu_solve", lambda m, a, b: m.linalg.lu_solve(*_lu_parts(m, a), b), [_mat(2, 3, 3), _mat(2, 3, 2, seed=1)],
      no_grad_fn=True),
    C("lu_solve_broadcast_adjoint", lambda m, a, b: m.linalg.lu_solve(*_lu_parts(m, a), b, adjoint=True),
      [_mat(3, 3), _mat(2, 3, 2, seed=1)], no_grad_fn=True),
    C("lu_solve_right", lambda m, a, b: m.linalg.lu_solve(*_lu_parts(m, a), b, left=False),
      [_mat(3, 3), _mat(2, 3, seed=1)], no_grad_fn=True),
    C("torch_lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.lu(a))), [_mat(2, 4, 4, seed=4)], no_grad_fn=True),
    C("torch_lu_infos", lambda m, a: tuple(m.lu(a, get_infos=True)), [_mat(3, 3)], no_grad_fn=True),
    C("torch_lu_solve", lambda m, a, b: (m.lu_solve(b, *m.lu(a)), b.lu_solve(*a.lu())), [_mat(3, 3), _mat(3, 2, seed=1)],
      no_grad_fn=True),
    # Cholesky
    C("cholesky_ex", lambda m, a: tuple(m.linalg.cholesky_ex(a)), [_spd(3, (2,))], no_grad_fn=True),
    C("cholesky_ex_upper", lambda m, a: tuple(m.linalg.cholesky_ex(a, upper=True)), [_spd(3)], no_grad_fn=True),
    C("cholesky_ex_info", lambda m, a: m.linalg.cholesky_ex(a).info, [NOGRAD]),
    C("torch_cholesky", lambda m, a: (m.cholesky(a), a.cholesky(upper=True)), [_spd(3, (2,))], no_grad_fn=True),
    C("cholesky_solve", lambda m, b, l: m.cholesky_solve(b, l), [_mat(2, 3, 2), _chol(3, (2,))], no_grad_fn=True),
    C("cholesky_solve_upper_broadcast", lambda m, b, l: b.cholesky_solve(l, upper=True),
      [_mat(2, 3, 2), np.swapaxes(_chol(3), -1, -2)], no_grad_fn=True),
    C("cholesky_inverse", lambda m, l: m.cholesky_inverse(l), [_chol(3)], no_grad_fn=True),
    C("cholesky_inverse_upper", lambda m, l: l.cholesky_inverse(upper=True), [np.swapaxes(_chol(3, (2,)), -1, -2)],
      no_grad_fn=True),
    # triangular, least squares
    C("solve_triangular_lower", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False),
      [_tri(3, (2,)), _mat(2, 3, 2, seed=1)], no_grad_fn=True),
    C("solve_triangular_upper_right_unit", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=True, left=False, unitriangular=True), [_tri(3, upper=True), _mat(2, 4, 3, seed=1)],
      no_grad_fn=True),
    C("solve_triangular_full_input", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
      [_mat(3, 3) + 3 * np.eye(3), _mat(3, 1, seed=1)], no_grad_fn=True),
    C("triangular_solve", lambda m, b, a: tuple(m.triangular_solve(b, a)), [_mat(3, 2), _tri(3, upper=True)],
      no_grad_fn=True),
    C("triangular_solve_transpose_lower", lambda m, b, a: tuple(b.triangular_solve(a, upper=False, transpose=True)),
      [_mat(2, 3, 2), _tri(3)], no_grad_fn=True),
    C("lstsq_tall", lambda m, a, b: tuple(m.linalg.lstsq(a, b)), [_mat(2, 5, 3), _mat(2, 5, 2, seed=1)],
      no_grad_fn=True),
    C("lstsq_wide_min_norm", lambda m, a, b: m.linalg.lstsq(a, b).solution, [_mat(3, 5), _mat(3, 2, seed=1)],
      no_grad_fn=True),
    C("lstsq_gelsd", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")), [_mat(5, 3), _mat(5, 2, seed=1)],
      no_grad_fn=True),
    C("lstsq_gels_vector", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gels")), [_mat(5, 3), _mat(5, seed=1)],
      no_grad_fn=True),
    # eig, Householder, rank, cond, exp, tensor forms, vander
    C("eigvals", lambda m, a: m.linalg.eigvals(a).abs(), [_mat(2, 3, 3)], no_grad_fn=True),
    C("eig_values_sorted", lambda m, a: m.linalg.eig(a).eigenvalues.real.sort().values, [_spd(4)], no_grad_fn=True),
    C("eig_vectors_phase_free", lambda m, a: m.linalg.eig(a).eigenvectors.abs(), [_spd(3, seed=2)],
      no_grad_fn=True, tol=(1e-6, 1e-6)),
    # 0x0 matrices: empty results whose backward runs (JAX's eig VJP failed on them)
    C("eig_empty", lambda m, a: tuple(x.abs() for x in m.linalg.eig(a)), [np.zeros((2, 0, 0))], no_grad_fn=True),
    C("householder_product", lambda m, a, t: m.linalg.householder_product(a, t), [_mat(2, 4, 3), _mat(2, 2, seed=1)],
      no_grad_fn=True),
    C("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), [A(np.array([[1.0, 2.0], [2.0, 4.0]]), grad=False)]),
    C("matrix_rank_atol_hermitian", lambda m, a: m.linalg.matrix_rank(a, atol=4.5, hermitian=True), [_spd(4)]),
    C("cond", lambda m, a: m.linalg.cond(a), [_mat(2, 3, 3)], no_grad_fn=True),
    # torch's backward of cond(A, "fro") trips its own version check: values only
    C("cond_fro", lambda m, a: m.linalg.cond(a, "fro"), [_spd(3)], no_grad_fn=True, grad=False),
    C("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [_mat(2, 3, 3) * 0.5], no_grad_fn=True),
    C("torch_matrix_exp", lambda m, a: a.matrix_exp(), [_mat(3, 3) * 0.5], no_grad_fn=True),
    C("tensorinv", lambda m, a: m.linalg.tensorinv(a, ind=1), [_spd(4).reshape(4, 2, 2)], no_grad_fn=True),
    C("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a, b), [_spd(6).reshape(2, 3, 6), _mat(2, 3, seed=1)],
      no_grad_fn=True),
    C("inv_ex", lambda m, a: tuple(m.linalg.inv_ex(a)), [_spd(3, (2,))], no_grad_fn=True, grad=False),
    C("inv_ex_grad", lambda m, a: m.linalg.inv_ex(a).inverse.sum(-1), [_spd(3, (2,))], no_grad_fn=True),
    C("solve_ex_right", lambda m, a, b: tuple(m.linalg.solve_ex(a, b, left=False)), [_spd(3), _mat(2, 3, seed=1)],
      no_grad_fn=True),
    C("linalg_vander", lambda m, x: m.linalg.vander(x, N=4), [_mat(2, 3)], no_grad_fn=True),
    C("torch_qr_complete", lambda m, a: tuple(m.qr(a, some=False)), [_mat(4, 3)], no_grad_fn=True, grad=False),
    C("torch_qr_reduced", lambda m, a: m.qr(a).R.abs(), [_mat(4, 3)], no_grad_fn=True),
    C("qr_mode_r", lambda m, a: tuple(m.linalg.qr(a, mode="r")), [_mat(4, 3)], no_grad_fn=True, grad=False),
    # errors: torch's classes
    C("lu_factor_int_raises", lambda m, a: m.linalg.lu_factor(a), [np.eye(3, dtype=np.int64)], raises=True),
    C("lu_factor_no_pivot_raises", lambda m, a: m.linalg.lu_factor(a, pivot=False), [_mat(3, 3)], raises=True),
    C("lu_factor_singular_raises", lambda m, a: m.linalg.lu_factor(a), [np.zeros((2, 2))], raises=True),
    C("cholesky_ex_check_errors_raises", lambda m, a: m.linalg.cholesky_ex(a, check_errors=True), [NOGRAD],
      raises=True),
    C("lu_solve_shape_raises", lambda m, a, b: m.linalg.lu_solve(*_lu_parts(m, a), b), [_mat(3, 3), _mat(4, 2)],
      raises=True),
    C("solve_triangular_1d_raises", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
      [_tri(3), _mat(3)], raises=True),
    C("solve_triangular_nonsquare_raises", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
      [_mat(3, 2), _mat(3, 1)], raises=True),
    C("cholesky_solve_sizes_raise", lambda m, b, l: m.cholesky_solve(b, l), [_mat(4, 2), _chol(3)], raises=True),
    C("lstsq_rows_raise", lambda m, a, b: m.linalg.lstsq(a, b), [_mat(5, 3), _mat(4, 2)], raises=True),
    C("lstsq_driver_raises", lambda m, a, b: m.linalg.lstsq(a, b, driver="nope"), [_mat(5, 3), _mat(5, 2)],
      raises=True),
    C("householder_wide_raises", lambda m, a, t: m.linalg.householder_product(a, t), [_mat(3, 4), _mat(2)],
      raises=True),
    C("tensorinv_ind_raises", lambda m, a: m.linalg.tensorinv(a, ind=0), [_mat(4, 4)], raises=True),
    C("cond_bad_p_raises", lambda m, a: m.linalg.cond(a, 3), [_mat(3, 3)], raises=True),
    C("vander_N1_raises", lambda m, x: m.linalg.vander(x, N=1), [_mat(3)], raises=True),
    C("qr_mode_raises", lambda m, a: m.linalg.qr(a, mode="x"), [_mat(3, 3)], raises=True),
]


@params(CASES)
def test_linalg_more_parity(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the deprecated spellings warn on both sides
        check_parity(case, torch)


def test_lu_pieces_rebuild_the_input():
    a = tracegrad.tensor(_mat(2, 4, 3, seed=5))
    P, L, U = tracegrad.linalg.lu(a)
    np.testing.assert_allclose((P @ L @ U).numpy(), a.numpy(), atol=1e-12)


@pytest.mark.parametrize("name", ["cholesky", "qr", "triangular_solve"])
def test_deprecated_spellings_warn(name, fresh_warn_once):
    a = tracegrad.tensor(_spd(2))
    args = (a, a) if name == "triangular_solve" else (a,)
    with pytest.warns(UserWarning, match="deprecated"):
        getattr(tracegrad, name)(*args)


def test_integer_results_do_not_require_grad():
    a = tracegrad.tensor(_mat(3, 3), requires_grad=True)
    LU, piv, info = tracegrad.linalg.lu_factor_ex(a)
    assert LU.requires_grad and not piv.requires_grad and not info.requires_grad
    assert not tracegrad.linalg.cholesky_ex(tracegrad.tensor(_spd(3), requires_grad=True)).info.requires_grad


def test_cholesky_ex_info_inside_compile():
    f = tracegrad.compile(lambda a: tracegrad.linalg.cholesky_ex(a).info)
    bad = tracegrad.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert int(f(bad)) == 2 and int(f(bad)) == 2


def test_compiled_factorizations_equal_eager():
    def step(a, b):
        LU, piv = tracegrad.linalg.lu_factor(a)
        res = tracegrad.linalg.lstsq(a[:, :2], b, driver="gelsd").residuals
        return tracegrad.linalg.lu_solve(LU, piv, b), res, tracegrad.lu(a)[0]
    a, b = tracegrad.tensor(_mat(4, 4)), tracegrad.tensor(_mat(4, 2, seed=1))
    f = tracegrad.compile(step)
    f(a, b)
    for got, want in zip(f(a, b), step(a, b)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    stats = [v for k, v in tracegrad.compiler.stats().items() if k.endswith("step")]
    assert stats and all(v["graph_breaks"] == [] for v in stats)


def test_cholesky_errors_name_the_leading_minor_and_batch_element():
    # torch's messages: the failing leading minor's order, and for a batch the first failing
    # element; torch.cholesky names itself rather than linalg.cholesky
    bad = NOGRAD.arr
    cases = [(lambda m, a: m.linalg.cholesky(a), bad),
             (lambda m, a: m.linalg.cholesky(a), np.stack([np.eye(3), np.eye(3), bad])),
             (lambda m, a: m.linalg.cholesky_ex(a, check_errors=True), np.stack([np.eye(3), bad])),
             (lambda m, a: m.cholesky(a, upper=True), bad)]
    for fn, a in cases:
        msgs = []
        for m in (torch, tracegrad):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # torch.cholesky's deprecation warning
                with pytest.raises(m.linalg.LinAlgError) as e:
                    fn(m, m.tensor(a))
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
        assert "leading minor of order 2" in msgs[1]
