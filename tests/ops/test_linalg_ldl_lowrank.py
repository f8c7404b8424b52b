"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve against torch (LD, pivots and info exactly
as LAPACK's for small matrices; solutions), and the randomized low-rank routines (svd_lowrank,
pca_lowrank, lobpcg: reconstructions and eigenvalues against torch, not the random factors)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _sym(rng, n, dtype, hermitian, batch=()):
    A = rng.normal(size=batch + (n, n))
    if np.dtype(dtype).kind == "c":
        A = A + 1j * rng.normal(size=batch + (n, n))
    A = A.astype(dtype)
    At = np.swapaxes(A, -1, -2)
    return (A + (At.conj() if hermitian else At)) / 2


LDL_CASES = [  # n, dtype, hermitian, batch, tweak (each a compile: few, small)
    (5, np.float32, False, (3,), "zero_corner"), (4, np.complex128, False, (), "swap_needed"),
    (4, np.complex128, True, (2,), "integers"),
]


@pytest.mark.parametrize("case", range(len(LDL_CASES)))
def test_ldl_factor_and_solve_match_torch(case):
    n, dtype, herm, batch, tweak = LDL_CASES[case]
    rng = np.random.default_rng(case)
    A = _sym(rng, n, dtype, herm, batch)
    if tweak == "zero_corner":
        A[..., 0, 0] = 0                                   # forces a 2x2 block at the start
        A[1, 2, 3] = A[1, 3, 2] = 40.0                     # and an interchange in one batch member
    elif tweak == "integers":
        A = np.round(A * 3)
    elif tweak == "swap_needed":
        A[..., 0, 0] = 1e-3
    ref = torch.linalg.ldl_factor_ex(torch.tensor(A), hermitian=herm)
    ours = tracegrad.linalg.ldl_factor_ex(tracegrad.tensor(A), hermitian=herm)
    assert type(ours).__name__ == "linalg_ldl_factor_ex"
    assert ours.pivots.dtype == tracegrad.int32 and ours.info.dtype == tracegrad.int32
    np.testing.assert_array_equal(ours.pivots.numpy(), ref.pivots.numpy())
    np.testing.assert_array_equal(ours.info.numpy(), ref.info.numpy())
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(ours.LD.numpy(), ref.LD.numpy(), rtol=tol, atol=tol)
    B = rng.normal(size=batch + (n, 3)).astype(dtype)
    X = tracegrad.linalg.ldl_solve(ours.LD, ours.pivots, tracegrad.tensor(B), hermitian=herm)
    Xr = torch.linalg.ldl_solve(ref.LD, ref.pivots, torch.tensor(B), hermitian=herm)
    np.testing.assert_allclose(X.numpy(), Xr.numpy(), rtol=10 * tol, atol=10 * tol)
    np.testing.assert_allclose(A @ X.numpy(), B, rtol=100 * tol, atol=100 * tol)


def test_ldl_empty_matrices_as_torch():
    # 0x0 matrices (OpInfo's sample): empty LD and pivots, info 0, an empty solution; was a ZeroDivisionError
    for shape in ((0, 0), (2, 0, 0)):
        a = np.zeros(shape, np.float32)
        want = torch.linalg.ldl_factor_ex(torch.tensor(a))
        got = tracegrad.linalg.ldl_factor_ex(tracegrad.tensor(a))
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape) and str(g.dtype)[-5:] == str(w.dtype)[-5:]
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        b = np.zeros(shape[:-1] + (3,), np.float32)
        x = tracegrad.linalg.ldl_solve(got[0], got[1], tracegrad.tensor(b))
        assert tuple(x.shape) == tuple(torch.linalg.ldl_solve(want[0], want[1], torch.tensor(b)).shape)


def test_ldl_singular():
    zero = tracegrad.zeros(3, 3)
    res = tracegrad.linalg.ldl_factor_ex(zero)
    ref = torch.linalg.ldl_factor_ex(torch.zeros(3, 3))
    assert res.info.item() == ref.info.item() == 1 and res.pivots.tolist() == ref.pivots.tolist()
    with pytest.raises(tracegrad.linalg.LinAlgError):
        tracegrad.linalg.ldl_factor(zero)
    with pytest.raises(tracegrad.linalg.LinAlgError):
        tracegrad.linalg.ldl_factor_ex(zero, check_errors=True)


def test_ldl_no_grad_and_errors():
    A = tracegrad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    LD, piv = tracegrad.linalg.ldl_factor(A)
    assert not LD.requires_grad and not piv.requires_grad
    with pytest.raises(RuntimeError, match="square"):
        tracegrad.linalg.ldl_factor(tracegrad.ones(2, 3))
    with pytest.raises(RuntimeError, match="floating point"):
        tracegrad.linalg.ldl_factor(tracegrad.ones(2, 2, dtype=tracegrad.int64))
    with pytest.raises(RuntimeError, match="pivots"):   # (torch 2.13 takes pivots of any integer dtype)
        tracegrad.linalg.ldl_solve(LD, piv.float(), tracegrad.ones(2, 1))
    with pytest.raises(RuntimeError, match="Incompatible"):
        tracegrad.linalg.ldl_solve(LD, piv, tracegrad.ones(3, 1))
    with pytest.raises(RuntimeError):
        tracegrad.linalg.ldl_solve(LD, piv, tracegrad.ones(2, 1, dtype=tracegrad.float64))


def _low_rank(rng, m, n, r, batch=()):
    return rng.normal(size=batch + (m, r)) @ rng.normal(size=batch + (r, n))


def test_svd_lowrank_matches_torch():
    m, n, batch = 7, 10, (2,)                                      # wide: the transposed path
    rng = np.random.default_rng(m)
    A = _low_rank(rng, m, n, 3, batch)
    M = rng.normal(size=(1, n)) * 0.1
    for kw in ({"q": 4, "niter": 1},):
        U, S, V = tracegrad.svd_lowrank(tracegrad.tensor(A), **kw)
        Ur, Sr, Vr = torch.svd_lowrank(torch.tensor(A), **kw)
        assert U.shape == Ur.shape and S.shape == Sr.shape and V.shape == Vr.shape
        np.testing.assert_allclose(S.numpy()[..., :3], Sr.numpy()[..., :3], rtol=1e-10)
        rec = (U * S.unsqueeze(-2)) @ V.mH
        np.testing.assert_allclose(rec.numpy(), A, atol=1e-10)
    # with a mean M: the SVD of A - M (rank 4 at most), q = 5 recovers it
    U, S, V = tracegrad.svd_lowrank(tracegrad.tensor(A), q=5, M=tracegrad.tensor(M))
    Sr = torch.svd_lowrank(torch.tensor(A), q=5, M=torch.tensor(M))[1]
    np.testing.assert_allclose(S.numpy()[..., :4], Sr.numpy()[..., :4], rtol=1e-9)
    np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ V.mH).numpy(), A - M, atol=1e-9)


def test_svd_lowrank_gradient_matches_torch():
    A = _low_rank(np.random.default_rng(3), 6, 5, 2)
    x, xr = tracegrad.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    tracegrad.svd_lowrank(x, q=2, niter=1)[1].sum().backward()
    torch.svd_lowrank(xr, q=2, niter=1)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), atol=1e-9)


def test_pca_lowrank_matches_torch():
    rng = np.random.default_rng(5)
    A = _low_rank(rng, 20, 6, 2) + rng.normal(size=(1, 6)) * 3           # rank 2 after centring
    for center in (True, False):
        U, S, V = tracegrad.pca_lowrank(tracegrad.tensor(A), center=center)
        Ur, Sr, Vr = torch.pca_lowrank(torch.tensor(A), center=center)
        assert S.shape == Sr.shape == (6,)
        k = 2 if center else 3
        np.testing.assert_allclose(S.numpy()[:k], Sr.numpy()[:k], rtol=1e-9)
        target = A - A.mean(0, keepdims=True) if center else A
        np.testing.assert_allclose(((U * S) @ V.mT).numpy(), target, atol=1e-8)
    with pytest.raises(ValueError, match="q"):
        tracegrad.pca_lowrank(tracegrad.tensor(A), q=7)
    with pytest.raises(ValueError, match="niter"):
        tracegrad.pca_lowrank(tracegrad.tensor(A), niter=-1)


def test_lobpcg_matches_torch():
    rng = np.random.default_rng(11)
    A = rng.normal(size=(12, 12))
    A = A @ A.T
    B = np.diag(rng.uniform(1, 2, size=12))
    E, X = tracegrad.lobpcg(tracegrad.tensor(A), k=2)
    Er, _ = torch.lobpcg(torch.tensor(A), k=2)
    np.testing.assert_allclose(E.numpy(), Er.numpy(), rtol=1e-10)                 # largest first
    np.testing.assert_allclose(A @ X.numpy(), X.numpy() * E.numpy(), atol=1e-6)
    E, X = tracegrad.lobpcg(tracegrad.tensor(A), k=2, B=tracegrad.tensor(B), largest=False)
    Er, _ = torch.lobpcg(torch.tensor(A), k=2, B=torch.tensor(B), largest=False)
    np.testing.assert_allclose(E.numpy(), Er.numpy(), rtol=1e-8)                  # smallest first
    np.testing.assert_allclose(X.numpy().T @ B @ X.numpy(), np.eye(2), atol=1e-8)
    with pytest.raises(ValueError, match="3 x"):
        tracegrad.lobpcg(tracegrad.tensor(A), k=5)


def test_lobpcg_gradient_matches_torch():
    A = np.random.default_rng(12).normal(size=(9, 9))
    A = A + A.T
    x, xr = tracegrad.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    E, U = tracegrad.lobpcg(x, k=1, X=tracegrad.ones(9, 1, dtype=tracegrad.float64))
    Er, Ur = torch.lobpcg(xr, k=1, X=torch.ones(9, 1, dtype=torch.float64))
    sign = np.sign(U.detach().numpy()[0, 0] * Ur.detach().numpy()[0, 0])    # eigenvectors up to sign
    w = np.linspace(-1, 1, 9)[:, None]
    (E.sum() + (U * tracegrad.tensor(w * sign)).sum()).backward()
    (Er.sum() + (Ur * torch.tensor(w)).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), x.grad.numpy().T)


def test_lobpcg_double_backward_matches_torch():
    # torch's test_lobpcg gradgradchecks lobpcg: the second derivative goes through the saved
    # eigenpairs (they were saved detached, so d/dA of u dE u^T came out zero)
    A = np.random.default_rng(3).normal(size=(6, 6))
    A = A @ A.T / 10
    gE = np.array([0.3])

    def hess_row(mod):
        x = mod.tensor(A, requires_grad=True)
        E, _ = mod.lobpcg(x, k=1, X=mod.ones(6, 1, dtype=mod.float64))
        (g,) = mod.autograd.grad(E, x, mod.tensor(gE), create_graph=True)
        (h,) = mod.autograd.grad(g[0, 0], x)
        return h.detach().numpy()
    np.testing.assert_allclose(hess_row(tracegrad), hess_row(torch), atol=1e-6)
