"""Ported from PyTorch's test/test_linalg.py and test/test_spectral_ops.py, round 14: norms
(vector/matrix orders, dims, dtype=, keepdim, empty inputs), det/slogdet/inv/solve/pinv/
matrix_rank/matrix_power/lstsq/cholesky/qr/eigh/svd shapes and errors, cross/vecdot/multi_dot/
householder_product, and the FFT family (norm modes, n= padding/trimming, real/complex input
dtypes, fftfreq/fftshift, hfft/ihfft, 2-D/N-D, errors). Each case is a ``same_outcome``
program: torch 2.13 is the oracle; tracegrad must return equal values or raise the same builtin
exception class."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def m(T, *shape, seed=0, dtype="float64"):
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype(dtype))


def spd(T, n, seed=0):
    a = np.random.RandomState(seed).standard_normal((n, n))
    return T.tensor(a @ a.T + n * np.eye(n))


# ---- norms ----------------------------------------------------------------------------------
def vector_norm_orders(T):
    x = m(T, 5)
    return [T.linalg.vector_norm(x, o) for o in (0, 1, 2, 3.5, float("inf"), -float("inf"), -1, 0.5)]
def vector_norm_dims_keepdim(T):
    x = m(T, 2, 3, 4)
    return (T.linalg.vector_norm(x, dim=(0, 2)), T.linalg.vector_norm(x, 1, dim=-1, keepdim=True), T.linalg.vector_norm(x, dim=()),
            T.linalg.vector_norm(x.float(), dtype=T.float64).dtype)
def vector_norm_empty(T):
    e = T.zeros(0, 3)
    return T.linalg.vector_norm(e), T.linalg.vector_norm(e, 1, dim=0), T.linalg.vector_norm(e, dim=1).shape
def vector_norm_empty_inf_error(T):
    return T.linalg.vector_norm(T.zeros(0, 3), float("inf"))
def vector_norm_int_error(T):
    return T.linalg.vector_norm(T.tensor([1, 2]))
def vector_norm_dtype_downcast_error(T):
    return T.linalg.vector_norm(m(T, 3), dtype=T.float32)
def matrix_norm_orders(T):
    a = m(T, 3, 4)
    return [T.linalg.matrix_norm(a, o) for o in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf"))]
def matrix_norm_batched_dims(T):
    a = m(T, 2, 3, 4)
    return T.linalg.matrix_norm(a), T.linalg.matrix_norm(a, dim=(0, 2)), T.linalg.matrix_norm(a, 1, keepdim=True).shape
def matrix_norm_bad_ord_error(T):
    return T.linalg.matrix_norm(m(T, 3, 3), 3)
def matrix_norm_1d_error(T):
    return T.linalg.matrix_norm(m(T, 3))
def linalg_norm_dispatch(T):
    return (T.linalg.norm(m(T, 4)), T.linalg.norm(m(T, 3, 3)), T.linalg.norm(m(T, 3, 3), "nuc"), T.linalg.norm(m(T, 2, 3, 3), dim=(1, 2)),
            T.linalg.norm(m(T, 4), 3), T.norm(m(T, 3, 3), p="fro"), T.norm(m(T, 2, 3), p=1, dim=1), T.norm(m(T, 5), float("inf")))
def linalg_norm_3d_no_dim_ord_error(T):
    return T.linalg.norm(m(T, 2, 3, 3), 2)
def norm_complex(T):
    c = T.tensor([[1 + 1j, 2 - 1j], [0.5j, -1 + 0j]])
    return T.linalg.vector_norm(c), T.linalg.matrix_norm(c), T.linalg.norm(c, "nuc"), T.linalg.vector_norm(c).dtype


# ---- decompositions and solvers --------------------------------------------------------------
def det_slogdet(T):
    a = m(T, 2, 3, 3)
    s = T.linalg.slogdet(a)
    sing = T.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=T.float64)
    return T.linalg.det(a), s.sign, s.logabsdet, T.det(sing), T.linalg.slogdet(sing), T.logdet(spd(T, 3)), T.logdet(-T.eye(3, dtype=T.float64))
def det_nonsquare_error(T):
    return T.linalg.det(m(T, 2, 3))
def det_int_error(T):
    return T.linalg.det(T.eye(2, dtype=T.int64))
def inv_and_ex(T):
    a = spd(T, 3)
    sing = T.zeros(2, 2, dtype=T.float64)
    r = T.linalg.inv_ex(sing)
    return T.linalg.inv(a) @ a, T.inverse(a).shape, r.info, T.linalg.inv_ex(a).info
def inv_singular_error(T):
    return T.linalg.inv(T.zeros(2, 2))
def solve_variants(T):
    a, b = spd(T, 3), m(T, 3, 2, seed=1)
    return (T.linalg.solve(a, b), T.linalg.solve(a, b[:, 0]), T.linalg.solve(a, b.T, left=False), T.linalg.solve(a.expand(2, 3, 3), b).shape,
            T.linalg.solve_ex(a, b).info)
def solve_shape_error(T):
    return T.linalg.solve(spd(T, 3), m(T, 4, 2))
def solve_singular_error(T):
    return T.linalg.solve(T.zeros(2, 2, dtype=T.float64), T.ones(2, dtype=T.float64))
def pinv_rank(T):
    a = m(T, 4, 3)
    low = m(T, 4, 1) @ m(T, 1, 3, seed=2)
    return (T.linalg.pinv(a), T.linalg.matrix_rank(a), T.linalg.matrix_rank(low), T.linalg.matrix_rank(low, atol=1e-3, rtol=0.0),
            T.linalg.pinv(spd(T, 3), hermitian=True), T.linalg.matrix_rank(m(T, 2, 3, 3)), T.linalg.matrix_rank(T.zeros(0, 3)))
def matrix_power(T):
    a = m(T, 3, 3)
    return T.linalg.matrix_power(a, 3), T.linalg.matrix_power(a, 0), T.linalg.matrix_power(spd(T, 3), -2), T.matrix_power(m(T, 2, 2, 2), 2)
def matrix_power_int(T):
    return T.linalg.matrix_power(T.tensor([[1, 1], [1, 0]]), 10)
def matrix_power_int_negative_error(T):
    return T.linalg.matrix_power(T.tensor([[1, 1], [1, 0]]), -1)
def matrix_power_nonsquare_error(T):
    return T.linalg.matrix_power(m(T, 2, 3), 2)
def lstsq_shapes(T):
    a, b = m(T, 5, 3), m(T, 5, 2, seed=1)
    r = T.linalg.lstsq(a, b)
    return r.solution, r.solution.shape, T.linalg.lstsq(a, b[:, 0:1], driver="gelsd").solution, r.residuals.shape
def cholesky_and_ex(T):
    a = spd(T, 3)
    bad = -T.eye(3, dtype=T.float64)
    return T.linalg.cholesky(a), T.linalg.cholesky(a, upper=True), T.linalg.cholesky_ex(bad).info, T.cholesky(a, upper=False)
def cholesky_not_pd_error(T):
    return T.linalg.cholesky(-T.eye(2))
def cholesky_solve_inverse(T):
    a = spd(T, 3)
    L = T.linalg.cholesky(a)
    b = m(T, 3, 2, seed=3)
    return T.cholesky_solve(b, L), T.cholesky_inverse(L), T.cholesky_solve(b, L.mT, upper=True)
def qr_modes(T):
    a = m(T, 4, 3)
    q, r = T.linalg.qr(a)
    q2, r2 = T.linalg.qr(a, mode="complete")
    q3, r3 = T.linalg.qr(a, mode="r")
    return (q @ r, q.shape, r.shape, q2.shape, r2.shape, q3.shape, (q2.mT @ q2).diagonal())
def qr_bad_mode_error(T):
    return T.linalg.qr(m(T, 3, 3), mode="foo")
def eigh_eigvalsh(T):
    a = spd(T, 4)
    w, v = T.linalg.eigh(a)
    return w, T.linalg.eigvalsh(a), T.linalg.eigvalsh(a, UPLO="U"), (v @ T.diag(w) @ v.mT), v.shape
def eigh_bad_uplo_error(T):
    return T.linalg.eigh(spd(T, 3), UPLO="X")
def svd_svdvals(T):
    a = m(T, 4, 3)
    u, s, vh = T.linalg.svd(a, full_matrices=False)
    u2, s2, vh2 = T.linalg.svd(a)
    return s, T.linalg.svdvals(a), (u * s) @ vh, u.shape, u2.shape, vh2.shape, T.svd(a).V.shape
def eigvals_general(T):
    a = T.tensor([[2.0, 0.0], [0.0, 3.0]], dtype=T.float64)
    w = T.linalg.eigvals(a)
    return w.dtype, T.sort(w.real).values
def cross_vecdot_multidot(T):
    a, b = m(T, 2, 3), m(T, 2, 3, seed=1)
    return (T.linalg.cross(a, b), T.cross(a, b, dim=1), T.linalg.cross(a[:1], b), T.linalg.vecdot(a, b), T.linalg.vecdot(a, b, dim=0),
            T.linalg.multi_dot([m(T, 2, 3), m(T, 3, 4), m(T, 4, 1)]), T.linalg.multi_dot([m(T, 3), m(T, 3, 2), m(T, 2)]))
def cross_ndim_mismatch_error(T):
    return T.linalg.cross(m(T, 3), m(T, 2, 3))
def cross_bad_dim_error(T):
    return T.linalg.cross(m(T, 2, 4), m(T, 2, 4))
def multi_dot_one_error(T):
    return T.linalg.multi_dot([m(T, 2, 2)])
def multi_dot_3d_error(T):
    return T.linalg.multi_dot([m(T, 2, 2), m(T, 2, 2, 2)])
def matrix_exp_diag_ops(T):
    a = m(T, 3, 3) / 3
    return (T.linalg.matrix_exp(a), T.matrix_exp(T.zeros(2, 2)), T.linalg.diagonal(m(T, 2, 3, 3), offset=1), T.trace(m(T, 3, 4)),
            T.linalg.tensorinv(T.eye(4, dtype=T.float64).reshape(4, 2, 2), ind=1).shape, T.linalg.vander(T.tensor([1.0, 2.0, 3.0])))
def tensorsolve(T):
    a = T.eye(6, dtype=T.float64).reshape(2, 3, 6)
    b = m(T, 2, 3)
    return T.linalg.tensorsolve(a, b)
def householder_product(T):
    a = m(T, 4, 3)
    q, r = T.geqrf(a)
    return T.linalg.householder_product(q, r).shape, T.abs(T.linalg.householder_product(q, r)[:, 0] @ T.linalg.householder_product(q, r)[:, 0])
def lu_family(T):
    a = m(T, 3, 3)
    p, l, u = T.linalg.lu(a)
    LU, piv = T.linalg.lu_factor(a)
    b = m(T, 3, 1, seed=1)
    return p @ l @ u, piv.dtype, T.linalg.lu_solve(LU, piv, b), T.linalg.solve(a, b), T.lu_unpack(LU, piv)[0]
def solve_triangular(T):
    a = T.triu(spd(T, 3))
    b = m(T, 3, 2, seed=1)
    return T.linalg.solve_triangular(a, b, upper=True), T.linalg.solve_triangular(a.mT, b, upper=False, unitriangular=True), \
        T.linalg.solve_triangular(a, b.mT, upper=True, left=False)
def solve_triangular_no_upper_error(T):
    return T.linalg.solve_triangular(T.eye(2), T.ones(2, 1))


# ---- spectral ops ----------------------------------------------------------------------------
def fft_norm_modes(T):
    x = m(T, 8)
    return [T.fft.fft(x, norm=n) for n in (None, "backward", "ortho", "forward")] + [T.fft.ifft(T.fft.fft(x), norm="backward").real]
def fft_bad_norm_error(T):
    return T.fft.fft(m(T, 4), norm="bad")
def fft_n_pad_trim(T):
    x = m(T, 6)
    return T.fft.fft(x, n=8), T.fft.fft(x, n=4), T.fft.rfft(x, n=9), T.fft.irfft(T.fft.rfft(x), n=6), T.fft.irfft(T.fft.rfft(x)).shape
def fft_n_zero_error(T):
    return T.fft.fft(m(T, 4), n=0)
def fft_dtypes(T):
    return (T.fft.fft(m(T, 4, dtype="float32")).dtype, T.fft.fft(m(T, 4)).dtype, T.fft.fft(T.tensor([1, 2, 3])).dtype,
            T.fft.rfft(m(T, 4, dtype="float32")).dtype, T.fft.irfft(T.fft.rfft(m(T, 4))).dtype, T.fft.fft(T.tensor([True, False])).dtype)
def rfft_complex_error(T):
    return T.fft.rfft(T.tensor([1 + 1j, 2j]))
def fft_2d_nd(T):
    x = m(T, 3, 4, 5)
    return (T.fft.fft2(x), T.fft.ifft2(x, s=(2, 6)), T.fft.fftn(x, dim=(0, 2)), T.fft.rfftn(x).shape, T.fft.irfftn(T.fft.rfftn(x), s=x.shape[-3:]),
            T.fft.rfft2(x, norm="ortho"), T.fft.fftn(x, s=(4,), dim=(1,)).shape, T.fft.ifftn(x, s=(-1, 3)).shape)
def fft_s_dim_mismatch_error(T):
    return T.fft.fftn(m(T, 3, 4), s=(2, 2), dim=(0,))
def fft_dim_out_of_range_error(T):
    return T.fft.fft(m(T, 3), dim=1)
def fft_repeated_dim_error(T):
    return T.fft.fftn(m(T, 3, 4), dim=(0, 0))
def hfft_ihfft(T):
    x = m(T, 6)
    c = T.fft.ihfft(x).resolve_conj()   # torch's is a conj view, which .numpy() refuses
    return c, T.fft.hfft(c, n=6), T.fft.hfft(c).shape, T.fft.ihfft2(m(T, 4, 4)).shape, T.fft.hfftn(T.fft.ihfftn(m(T, 4, 6)), s=(4, 6))
def fftfreq_shift(T):
    return (T.fft.fftfreq(5), T.fft.fftfreq(6, d=0.5), T.fft.rfftfreq(5), T.fft.rfftfreq(8, 2.0), T.fft.fftfreq(4, dtype=T.float64).dtype,
            T.fft.fftshift(T.arange(6)), T.fft.ifftshift(T.arange(7)), T.fft.fftshift(T.arange(12).reshape(3, 4), dim=1),
            T.fft.fftshift(T.arange(12).reshape(3, 4)))
def fft_backward(T):
    x = m(T, 6).requires_grad_()
    T.fft.rfft(x, norm="ortho").abs().sum().backward()
    y = m(T, 2, 4, seed=1).requires_grad_()
    T.fft.fft2(y).real.sum().backward()
    z = m(T, 5, seed=2).requires_grad_()
    T.fft.irfft(T.fft.rfft(z), n=5).pow(2).sum().backward()
    return x.grad, y.grad, z.grad
def fft_empty_error(T):
    return T.fft.fft(T.zeros(0))
def kaiser_window_beta_without_periodic_error(T):
    return T.kaiser_window(6, beta=8.0)
def kaiser_window_none_beta_error(T):
    return T.kaiser_window(6, True, None)
def stft_istft(T):
    x = m(T, 64, dtype="float32")
    w = T.hann_window(16)
    s = T.stft(x, 16, hop_length=4, window=w, return_complex=True)
    return s.shape, s.dtype, T.istft(s, 16, hop_length=4, window=w, length=64), T.stft(x, 16, return_complex=True, center=False).shape
def stft_requires_return_complex_error(T):
    return T.stft(m(T, 32, dtype="float32"), 8)
def windows(T):
    return (T.hann_window(5), T.hann_window(5, periodic=False), T.hamming_window(4), T.blackman_window(6), T.bartlett_window(5),
            T.kaiser_window(6, True, 8.0), T.kaiser_window(5, periodic=False), T.hann_window(1), T.hann_window(0).shape, T.signal.windows.gaussian(5, std=1.0))


CASES = {k: v for k, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
         and not k.startswith("_") and k not in ("m", "spd", "same_outcome", "outcome_params")}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_linalg_spectral(fn):
    same_outcome(fn)
