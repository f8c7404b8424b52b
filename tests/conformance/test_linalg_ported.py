"""Behaviour checks ported from PyTorch's test/test_linalg.py (CPU, float32/float64 and
complex64/complex128), restated as small programs run once with torch (the oracle) and once
with tracegrad (``_linalg_helpers.agree``): values, dtypes and shapes agree, or both raise the
same exception class. Gradients are compared where torch's tests check them (programs return
the gradients of a fixed loss).

Sign and phase conventions of decompositions are implementation-defined (torch's docs say so
for ``eig``, ``eigh``, ``svd``): those programs return invariants instead -- the
reconstruction ``Q @ R``/``U diag(S) Vh``/``V diag(w) V^H``, ``|V|``, orthogonality errors --
and their gradients go through losses that do not depend on the gauge.

Not ported: CUDA/MAGMA/cuSOLVER backends and ``driver=`` values other than CPU's, half and
bfloat16 matmul accuracy tables, large-tensor and performance tests, the OpInfo-driven tests
(test_opinfo.py covers those) and tests of torch internals (``torch._C``, TF32 flags)."""
import math

import pytest

from _linalg_helpers import TOL, agree, rand

pytest.importorskip("torch")

inf = math.inf


def spd(T, n, *batch, dtype="float64", seed=0):
    """A (batch of) Hermitian positive-definite matrices, well conditioned."""
    a = rand(T, *batch, n, n, dtype=dtype, seed=seed)
    return a @ a.mH + n * T.eye(n, dtype=a.dtype)


def well(T, *shape, dtype="float64", seed=0):
    """A (batch of) square matrices with a dominant diagonal: invertible, well conditioned."""
    a = rand(T, *shape, dtype=dtype, seed=seed)
    return a + 3 * shape[-1] ** 0.5 * T.eye(shape[-1], dtype=a.dtype)


def grads(T, fn, *inputs, weights_seed=7):
    """``[outputs..., grads of inputs...]`` for the loss ``sum(w_i * out_i)`` (real parts),
    ``w_i`` fixed per output."""
    xs = [x.detach().requires_grad_() for x in inputs]
    out = fn(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    loss = 0
    for i, o in enumerate(outs):
        if o.is_floating_point() or o.is_complex():
            w = rand(T, *o.shape, dtype="float64", seed=weights_seed + i).to(o.real.dtype if o.is_complex() else o.dtype)
            loss = loss + ((o.real if o.is_complex() else o) * w).sum()
    loss.backward()
    return outs + [x.grad for x in xs]


def case(fn, dtype="float64"):
    return fn, TOL[dtype]


# ---- norms (test_vector_norm*, test_matrix_norm*, test_norm_*, test_cond*) ------------------------
NORMS = {}
for _ord in (2, 1, inf, -inf, 0, 3, -1, 0.5):
    for _dt in ("float32", "float64", "complex128") if _ord in (2, inf) else ("float64",):
        NORMS[f"vector_norm_{_ord}_{_dt}"] = case(lambda T, o=_ord, d=_dt: T.linalg.vector_norm(rand(T, 3, 4, dtype=d), o), _dt)
    NORMS[f"vector_norm_{_ord}_dim_keepdim"] = None if _ord in (-inf, 3, -1, 0.5) else case(
        lambda T, o=_ord: T.linalg.vector_norm(rand(T, 2, 3, 4), o, dim=(0, 2), keepdim=True))
    NORMS[f"vector_norm_{_ord}_empty_dim"] = case(lambda T, o=_ord: T.linalg.vector_norm(T.zeros(2, 0), o, dim=1))
    if _ord in (inf, -1, 0):
        NORMS[f"vector_norm_{_ord}_empty_all"] = case(lambda T, o=_ord: T.linalg.vector_norm(T.zeros(0, 3), o))
    if _ord not in (0, -inf, -1, 0.5):
        NORMS[f"vector_norm_{_ord}_grad"] = case(lambda T, o=_ord: grads(T, lambda x: T.linalg.vector_norm(x, o, 1), rand(T, 3, 4)))
NORMS.update({
    "vector_norm_dtype_upcast": case(lambda T: T.linalg.vector_norm(rand(T, 5, dtype="float32"), dtype=T.float64)),
    "vector_norm_dtype_complex_to_real": case(lambda T: T.linalg.vector_norm(rand(T, 5, dtype="complex64"), dtype=T.float64)),
    "vector_norm_int_input": case(lambda T: T.linalg.vector_norm(T.arange(4))),
    "vector_norm_0d": case(lambda T: T.linalg.vector_norm(T.tensor(-3.), 2)),
    "vector_norm_0d_dim": case(lambda T: T.linalg.vector_norm(T.tensor(-3.), 2, dim=0)),
    "vector_norm_dim_out_of_range": case(lambda T: T.linalg.vector_norm(T.ones(3), dim=1)),
    "vector_norm_zero_grad": case(lambda T: grads(T, lambda x: T.linalg.vector_norm(x), T.zeros(3))),
    "vector_norm_inf_ties_grad": case(lambda T: grads(T, lambda x: T.linalg.vector_norm(x, inf), T.tensor([1., -3., 3.]))),
})
MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, inf, -inf)
for _ord in MATRIX_ORDS:
    for _dt in ("float32", "float64", "complex128") if _ord in ("fro", "nuc", 2) else ("float64",):
        NORMS[f"matrix_norm_{_ord}_{_dt}"] = case(lambda T, o=_ord, d=_dt: T.linalg.matrix_norm(rand(T, 2, 3, 4, dtype=d), o), _dt)
    NORMS[f"matrix_norm_{_ord}_dims_keepdim"] = None if _ord in (-2, -1, -inf) else case(
        lambda T, o=_ord: T.linalg.matrix_norm(rand(T, 3, 2, 4), o, dim=(0, 2), keepdim=True))
    NORMS[f"matrix_norm_{_ord}_grad"] = None if _ord in (-2, -1, -inf, 1) else case(lambda T, o=_ord: grads(T, lambda x: T.linalg.matrix_norm(x, o), rand(T, 2, 3, 4)))
    NORMS[f"norm_2d_ord_{_ord}"] = None if _ord not in ("nuc", -2, inf) else case(lambda T, o=_ord: T.linalg.norm(rand(T, 3, 3), o))
    NORMS[f"cond_{_ord}"] = case(lambda T, o=_ord: T.linalg.cond(well(T, 2, 3, 3), o))
    # (2, -2 and nuc of a singular matrix: rounding noise ~1e16, not inf, on some CPUs: torch's
    # nuc gave 5.96e16 on an AVX-512 machine where XLA's inverse gave inf)
    if _ord in ("fro", 1, -inf):
        NORMS[f"cond_{_ord}_singular"] = case(lambda T, o=_ord: T.linalg.cond(T.stack([T.eye(2, dtype=T.float64),
                                                                                     T.ones(2, 2, dtype=T.float64)]), o))
    NORMS[f"cond_{_ord}_empty"] = None if _ord not in (2, "fro") else case(lambda T, o=_ord: T.linalg.cond(T.zeros(2, 0, 0, dtype=T.float64), o))
NORMS.update({
    "matrix_norm_1d": case(lambda T: T.linalg.matrix_norm(T.ones(3))),
    "matrix_norm_bad_ord": case(lambda T: T.linalg.matrix_norm(T.ones(3, 3), 3)),
    "matrix_norm_same_dims": case(lambda T: T.linalg.matrix_norm(T.ones(3, 3), dim=(0, 0))),
    "matrix_norm_int": case(lambda T: T.linalg.matrix_norm(T.ones(3, 3, dtype=T.int64))),
    "matrix_norm_dtype": case(lambda T: T.linalg.matrix_norm(rand(T, 3, 3, dtype="float32"), dtype=T.float64)),
    "matrix_norm_empty_fro": case(lambda T: T.linalg.matrix_norm(T.zeros(0, 3))),
    "matrix_norm_empty_2": case(lambda T: T.linalg.matrix_norm(T.zeros(0, 3), 2)),
    "matrix_norm_empty_batch": case(lambda T: T.linalg.matrix_norm(T.zeros(0, 3, 3), "nuc")),
    "norm_default_flattens": case(lambda T: T.linalg.norm(rand(T, 2, 3, 4))),
    "norm_ord_3d_no_dim": case(lambda T: T.linalg.norm(rand(T, 2, 3, 4), 2)),
    "norm_vector_ord_dim": case(lambda T: T.linalg.norm(rand(T, 2, 3), 3, dim=1)),
    "norm_fro_1d": case(lambda T: T.linalg.norm(rand(T, 3), "fro")),
    "norm_str_ord_vector_dim": case(lambda T: T.linalg.norm(rand(T, 2, 3), "fro", dim=1)),
    "norm_1d_ord_inf": case(lambda T: T.linalg.norm(rand(T, 5), inf)),
    "norm_three_dims": case(lambda T: T.linalg.norm(rand(T, 2, 3, 4), dim=(0, 1, 2))),
    "cond_nonsquare_2": case(lambda T: T.linalg.cond(rand(T, 3, 5))),
    "cond_nonsquare_fro": case(lambda T: T.linalg.cond(rand(T, 3, 5), "fro")),
    "cond_bad_p": case(lambda T: T.linalg.cond(rand(T, 3, 3), 3)),
    "cond_1d": case(lambda T: T.linalg.cond(T.ones(3))),
    "cond_complex": case(lambda T: T.linalg.cond(well(T, 3, 3, dtype="complex128"))),
    "cond_grad": case(lambda T: grads(T, lambda x: T.linalg.cond(x), well(T, 3, 3))),
    "torch_norm_nuc": case(lambda T: T.norm(rand(T, 3, 4), p="nuc")),
    "torch_norm_fro_dim": case(lambda T: T.norm(rand(T, 2, 3, 4), p="fro", dim=(1, 2))),
    "torch_norm_p3": case(lambda T: T.norm(rand(T, 2, 3), p=3, dim=1, keepdim=True)),
})


# ---- determinants, inverses, solves (test_det*, test_slogdet*, test_inverse*, test_solve*) --------
SOLVES = {}
for _dt in ("float64", "complex64"):
    SOLVES.update({
        f"det_{_dt}": case(lambda T, d=_dt: T.linalg.det(well(T, 2, 3, 3, dtype=d)), _dt),
        f"slogdet_{_dt}": case(lambda T, d=_dt: T.linalg.slogdet(rand(T, 2, 3, 3, dtype=d)), _dt),
        f"inv_{_dt}": case(lambda T, d=_dt: T.linalg.inv(well(T, 2, 3, 3, dtype=d)), _dt),
        f"inv_ex_{_dt}": case(lambda T, d=_dt: T.linalg.inv_ex(well(T, 2, 3, 3, dtype=d)), _dt),
        f"solve_{_dt}": case(lambda T, d=_dt: T.linalg.solve(well(T, 2, 3, 3, dtype=d), rand(T, 2, 3, 2, dtype=d, seed=1)), _dt),
        f"solve_left_false_{_dt}": case(
            lambda T, d=_dt: T.linalg.solve(well(T, 3, 3, dtype=d), rand(T, 2, 3, dtype=d, seed=1), left=False), _dt),
        f"logdet_{_dt}": case(lambda T, d=_dt: T.logdet(spd(T, 3, 2, dtype=d)), _dt),
    })
SOLVES.update({
    "det_singular": case(lambda T: T.linalg.det(T.tensor([[1., 2.], [2., 4.]], dtype=T.float64))),
    "det_empty": case(lambda T: T.linalg.det(T.zeros(2, 0, 0))),
    "det_empty_batch": case(lambda T: T.linalg.det(T.zeros(0, 3, 3))),
    "det_nonsquare": case(lambda T: T.linalg.det(T.ones(2, 3))),
    "det_1d": case(lambda T: T.linalg.det(T.ones(3))),
    "det_int": case(lambda T: T.linalg.det(T.ones(2, 2, dtype=T.int64))),
    "det_grad": case(lambda T: grads(T, T.linalg.det, rand(T, 2, 3, 3))),
    "slogdet_singular": case(lambda T: T.linalg.slogdet(T.tensor([[1., 2.], [2., 4.]], dtype=T.float64))),
    "slogdet_negative": case(lambda T: T.linalg.slogdet(T.tensor([[0., 1.], [1., 0.]], dtype=T.float64))),
    "slogdet_empty": case(lambda T: T.linalg.slogdet(T.zeros(0, 0))),
    "slogdet_grad": case(lambda T: grads(T, T.linalg.slogdet, rand(T, 2, 3, 3))),
    "slogdet_nonsquare": case(lambda T: T.linalg.slogdet(T.ones(2, 3))),
    "logdet_negative_det": case(lambda T: T.logdet(T.tensor([[0., 1.], [1., 0.]], dtype=T.float64))),
    "logdet_singular": case(lambda T: T.logdet(T.zeros(2, 2, dtype=T.float64))),
    "inv_singular": case(lambda T: T.linalg.inv(T.tensor([[1., 2.], [2., 4.]]))),
    "inv_batch_one_singular": case(lambda T: T.linalg.inv(T.stack([T.eye(2), T.zeros(2, 2)]))),
    "inv_ex_singular_info": case(lambda T: T.linalg.inv_ex(T.stack([T.eye(2), T.zeros(2, 2)])).info),
    "inv_ex_check_errors": case(lambda T: T.linalg.inv_ex(T.zeros(2, 2), check_errors=True)),
    "inv_empty": case(lambda T: T.linalg.inv(T.zeros(3, 0, 0))),
    "inv_nonsquare": case(lambda T: T.linalg.inv(T.ones(2, 3))),
    "inv_int": case(lambda T: T.linalg.inv(T.eye(2, dtype=T.int64))),
    "inv_1d": case(lambda T: T.linalg.inv(T.ones(3))),
    "inv_grad": case(lambda T: grads(T, T.linalg.inv, well(T, 2, 3, 3))),
    "inverse_method": case(lambda T: well(T, 3, 3).inverse()),
    "solve_vector_b": case(lambda T: T.linalg.solve(well(T, 3, 3), rand(T, 3, seed=1))),
    "solve_batched_vector_b": case(lambda T: T.linalg.solve(well(T, 2, 3, 3), rand(T, 2, 3, seed=1))),
    "solve_broadcast_a": case(lambda T: T.linalg.solve(well(T, 3, 3), rand(T, 4, 3, 2, seed=1))),
    "solve_broadcast_b": case(lambda T: T.linalg.solve(well(T, 2, 1, 3, 3), rand(T, 4, 3, 1, seed=1))),
    "solve_singular": case(lambda T: T.linalg.solve(T.zeros(2, 2), T.ones(2, 1))),
    "solve_dtype_mismatch": case(lambda T: T.linalg.solve(T.eye(2), T.ones(2, 1, dtype=T.float64))),
    "solve_shape_mismatch": case(lambda T: T.linalg.solve(T.eye(3), T.ones(2, 1))),
    "solve_nonsquare": case(lambda T: T.linalg.solve(T.ones(2, 3), T.ones(2, 1))),
    "solve_b_0d": case(lambda T: T.linalg.solve(T.eye(2), T.tensor(1.))),
    "solve_empty": case(lambda T: T.linalg.solve(T.zeros(0, 0), T.zeros(0, 2))),
    "solve_empty_batch": case(lambda T: T.linalg.solve(T.zeros(0, 2, 2), T.zeros(0, 2, 3))),
    "solve_grad": case(lambda T: grads(T, T.linalg.solve, well(T, 2, 3, 3), rand(T, 2, 3, 2, seed=1))),
    "solve_grad_left_false": case(lambda T: grads(T, lambda a, b: T.linalg.solve(a, b, left=False), well(T, 3, 3),
                                                  rand(T, 2, 3, seed=1))),
    "solve_ex": case(lambda T: T.linalg.solve_ex(well(T, 2, 3, 3), rand(T, 2, 3, 1, seed=1))),
    "solve_ex_singular_info": case(lambda T: T.linalg.solve_ex(T.zeros(2, 2), T.ones(2, 1)).info),
    "solve_ex_check_errors": case(lambda T: T.linalg.solve_ex(T.zeros(2, 2), T.ones(2, 1), check_errors=True)),
})
for _upper in (True, False):
    for _left in (True, False):
        for _unit in (True, False):
            _name = f"solve_triangular_u{int(_upper)}_l{int(_left)}_unit{int(_unit)}"
            SOLVES[_name] = case(lambda T, u=_upper, le=_left, un=_unit: T.linalg.solve_triangular(
                well(T, 2, 3, 3), rand(T, 2, 3, 3, seed=1), upper=u, left=le, unitriangular=un))
            SOLVES[_name + "_grad"] = None if _upper == _left else case(lambda T, u=_upper, le=_left, un=_unit: grads(
                T, lambda a, b: T.linalg.solve_triangular(a, b, upper=u, left=le, unitriangular=un),
                well(T, 3, 3), rand(T, 3, 3, seed=1)))
SOLVES.update({
    "solve_triangular_complex": case(lambda T: T.linalg.solve_triangular(well(T, 3, 3, dtype="complex128"),
                                                                         rand(T, 3, 2, dtype="complex128"), upper=True)),
    "solve_triangular_broadcast": case(lambda T: T.linalg.solve_triangular(well(T, 2, 1, 3, 3), rand(T, 4, 3, 2),
                                                                           upper=False)),
    "solve_triangular_b_1d": case(lambda T: T.linalg.solve_triangular(well(T, 3, 3), rand(T, 3), upper=True)),
    "solve_triangular_dtype_mismatch": case(lambda T: T.linalg.solve_triangular(T.eye(2), T.ones(2, 1, dtype=T.float64),
                                                                                upper=True)),
    "solve_triangular_shape_mismatch": case(lambda T: T.linalg.solve_triangular(T.eye(2), T.ones(3, 1), upper=True)),
    "solve_triangular_nonsquare": case(lambda T: T.linalg.solve_triangular(T.ones(2, 3), T.ones(2, 1), upper=True)),
    "solve_triangular_no_upper": case(lambda T: T.linalg.solve_triangular(T.eye(2), T.ones(2, 1))),
    "solve_triangular_empty": case(lambda T: T.linalg.solve_triangular(T.zeros(0, 0), T.zeros(0, 3), upper=True)),
    "triangular_solve": case(lambda T: T.triangular_solve(rand(T, 2, 3, 2), well(T, 2, 3, 3))),
    "triangular_solve_lower_transpose": case(lambda T: T.triangular_solve(rand(T, 3, 2), well(T, 3, 3), upper=False,
                                                                          transpose=True, unitriangular=True)),
    "triangular_solve_grad": case(lambda T: grads(T, lambda b, a: T.triangular_solve(b, a)[0], rand(T, 3, 2), well(T, 3, 3))),
    "cholesky_solve": case(lambda T: T.cholesky_solve(rand(T, 2, 3, 2), T.linalg.cholesky(spd(T, 3, 2)))),
    "cholesky_solve_upper": case(lambda T: T.cholesky_solve(rand(T, 3, 2), T.linalg.cholesky(spd(T, 3), upper=True),
                                                            upper=True)),
    "cholesky_solve_broadcast": case(lambda T: T.cholesky_solve(rand(T, 2, 3, 2), T.linalg.cholesky(spd(T, 3)))),
    "cholesky_solve_complex": case(lambda T: T.cholesky_solve(rand(T, 3, 2, dtype="complex128"),
                                                              T.linalg.cholesky(spd(T, 3, dtype="complex128")))),
    "cholesky_solve_grad": case(lambda T: grads(T, T.cholesky_solve, rand(T, 3, 2), T.linalg.cholesky(spd(T, 3)))),
    "cholesky_solve_dtype_mismatch": case(lambda T: T.cholesky_solve(T.ones(2, 1), T.eye(2, dtype=T.float64))),
    "cholesky_solve_1d": case(lambda T: T.cholesky_solve(T.ones(2), T.eye(2))),
    "cholesky_inverse": case(lambda T: T.cholesky_inverse(T.linalg.cholesky(spd(T, 3)))),
    "cholesky_inverse_upper": case(lambda T: T.cholesky_inverse(T.linalg.cholesky(spd(T, 3), upper=True), upper=True)),
    "cholesky_inverse_batched": case(lambda T: T.cholesky_inverse(T.linalg.cholesky(spd(T, 3, 2)))),
    "cholesky_inverse_grad": case(lambda T: grads(T, T.cholesky_inverse, T.linalg.cholesky(spd(T, 3)))),
    "cholesky_inverse_nonsquare": case(lambda T: T.cholesky_inverse(T.ones(2, 3))),
})


# ---- least squares (test_linalg_lstsq*) -----------------------------------------------------------
LSTSQ = {}
for _driver in ("gels", "gelsy", "gelsd", "gelss", None):
    for _m, _n in ((5, 3), (3, 5), (4, 4)):
        if _driver == "gels" and _m < _n:
            continue      # torch's gels needs full rank; the wide system is underdetermined (min-norm differs)
        LSTSQ[f"lstsq_{_driver}_{_m}x{_n}"] = case(
            lambda T, d=_driver, m=_m, n=_n: T.linalg.lstsq(rand(T, 2, m, n), rand(T, 2, m, 2, seed=1), driver=d))
    LSTSQ[f"lstsq_{_driver}_complex"] = None if _driver in ("gels", "gelss") else case(
        lambda T, d=_driver: T.linalg.lstsq(rand(T, 5, 3, dtype="complex128"), rand(T, 5, 2, dtype="complex128", seed=1),
                                            driver=d))
LSTSQ.update({
    "lstsq_vector_b": case(lambda T: T.linalg.lstsq(rand(T, 5, 3), rand(T, 5, seed=1))),
    "lstsq_broadcast": case(lambda T: T.linalg.lstsq(rand(T, 5, 3), rand(T, 2, 5, 2, seed=1)).solution),
    "lstsq_rank_deficient_gelsd": case(lambda T: T.linalg.lstsq(
        T.tensor([[1., 2.], [2., 4.], [3., 6.]], dtype=T.float64), T.tensor([[1.], [2.], [3.]], dtype=T.float64),
        driver="gelsd")),
    "lstsq_rcond": case(lambda T: T.linalg.lstsq(T.tensor([[1., 0.], [0., 1e-8], [0., 0.]], dtype=T.float64),
                                                 T.ones(3, 1, dtype=T.float64), rcond=1e-4, driver="gelss")),
    "lstsq_bad_driver": case(lambda T: T.linalg.lstsq(rand(T, 3, 3), rand(T, 3, 1), driver="foo")),
    "lstsq_dtype_mismatch": case(lambda T: T.linalg.lstsq(rand(T, 3, 3), rand(T, 3, 1, dtype="float32"))),
    "lstsq_row_mismatch": case(lambda T: T.linalg.lstsq(rand(T, 3, 3), rand(T, 4, 1))),
    "lstsq_1d": case(lambda T: T.linalg.lstsq(rand(T, 3), rand(T, 3))),
    "lstsq_int": case(lambda T: T.linalg.lstsq(T.ones(3, 3, dtype=T.int64), T.ones(3, 1, dtype=T.int64))),
    "lstsq_grad": case(lambda T: grads(T, lambda a, b: T.linalg.lstsq(a, b).solution, rand(T, 5, 3), rand(T, 5, 2, seed=1))),
    "lstsq_float32": case(lambda T: T.linalg.lstsq(rand(T, 5, 3, dtype="float32"), rand(T, 5, 2, dtype="float32")),
                          "float32"),
})


# ---- factorizations (test_cholesky*, test_qr*, test_lu*, test_householder_product*) --------------
def qr_invariants(T, A, mode):
    Q, R = T.linalg.qr(A, mode)
    k = min(A.shape[-2:]) if mode != "complete" else A.shape[-2]
    eye = T.eye(k, dtype=A.dtype)
    ortho = (Q.mH @ Q - eye).abs().amax() if mode != "r" else T.zeros(())
    return [Q.shape, R.shape, Q @ R if mode != "r" else R.abs(), bool(ortho < 1e-6), R.triu().equal(R)]


FACTOR = {}
for _dt in ("float64", "complex64"):
    FACTOR[f"cholesky_{_dt}"] = case(lambda T, d=_dt: T.linalg.cholesky(spd(T, 3, 2, dtype=d)), _dt)
    FACTOR[f"cholesky_upper_{_dt}"] = case(lambda T, d=_dt: T.linalg.cholesky(spd(T, 3, dtype=d), upper=True), _dt)
    for _mode in ("reduced", "complete", "r") if _dt == "float64" else ("reduced",):
        for _shape in ((4, 3), (3, 4), (2, 3, 3)):
            FACTOR[f"qr_{_mode}_{_shape}_{_dt}"] = case(
                lambda T, d=_dt, m=_mode, s=_shape: qr_invariants(T, rand(T, *s, dtype=d), m), _dt)
FACTOR.update({
    "cholesky_not_pd": case(lambda T: T.linalg.cholesky(T.tensor([[1., 2.], [2., 1.]]))),
    "cholesky_batch_one_not_pd": case(lambda T: T.linalg.cholesky(T.stack([T.eye(2), -T.eye(2)]))),
    "cholesky_nonsquare": case(lambda T: T.linalg.cholesky(T.ones(2, 3))),
    "cholesky_1d": case(lambda T: T.linalg.cholesky(T.ones(3))),
    "cholesky_int": case(lambda T: T.linalg.cholesky(T.eye(2, dtype=T.int64))),
    "cholesky_empty": case(lambda T: T.linalg.cholesky(T.zeros(2, 0, 0))),
    "cholesky_reads_lower": case(lambda T: T.linalg.cholesky(T.tensor([[4., 100.], [2., 3.]], dtype=T.float64))),
    "cholesky_grad": case(lambda T: grads(T, T.linalg.cholesky, spd(T, 3, 2))),
    "cholesky_ex": case(lambda T: T.linalg.cholesky_ex(spd(T, 3, 2))),
    "cholesky_ex_info": case(lambda T: T.linalg.cholesky_ex(T.stack([T.eye(3), T.diag(T.tensor([1., -1., 1.]))])).info),
    "cholesky_ex_check_errors": case(lambda T: T.linalg.cholesky_ex(-T.eye(2), check_errors=True)),
    "cholesky_ex_empty": case(lambda T: T.linalg.cholesky_ex(T.zeros(0, 0))),
    "inv_ex_empty": case(lambda T: T.linalg.inv_ex(T.zeros(0, 0))),
    "lu_factor_ex_empty": case(lambda T: T.linalg.lu_factor_ex(T.zeros(2, 0, 0))),
    "cholesky_ex_upper": case(lambda T: T.linalg.cholesky_ex(spd(T, 3), upper=True).L),
    "torch_cholesky_upper": case(lambda T: T.cholesky(spd(T, 3), upper=True)),
    "qr_bad_mode": case(lambda T: T.linalg.qr(rand(T, 3, 3), "foo")),
    "qr_1d": case(lambda T: T.linalg.qr(T.ones(3))),
    "qr_int": case(lambda T: T.linalg.qr(T.eye(3, dtype=T.int64))),
    "qr_empty": case(lambda T: [t.shape for t in T.linalg.qr(T.zeros(0, 3))]),
    "qr_empty_complete": case(lambda T: [t.shape for t in T.linalg.qr(T.zeros(3, 0), "complete")]),
    "qr_r_mode_q_empty": case(lambda T: T.linalg.qr(rand(T, 3, 2), "r").Q),
    "qr_grad_reconstruction": case(lambda T: grads(T, lambda a: T.linalg.qr(a)[0] @ T.linalg.qr(a)[1], rand(T, 4, 3))),
    "qr_grad_r_abs": case(lambda T: grads(T, lambda a: T.linalg.qr(a).R.abs(), rand(T, 4, 3))),
    "torch_qr_some_false": case(lambda T: [t.shape for t in T.qr(rand(T, 4, 3), some=False)]),
    "lu_factor": case(lambda T: T.linalg.lu_factor(rand(T, 2, 4, 4))),
    "lu_factor_rect": case(lambda T: T.linalg.lu_factor(rand(T, 3, 5))),
    "lu_factor_ex_singular": case(lambda T: T.linalg.lu_factor_ex(T.zeros(3, 3))),
    "lu_factor_singular": case(lambda T: T.linalg.lu_factor(T.zeros(3, 3))),
    "lu_factor_ex_check_errors": case(lambda T: T.linalg.lu_factor_ex(T.zeros(3, 3), check_errors=True)),
    "lu_factor_int": case(lambda T: T.linalg.lu_factor(T.eye(3, dtype=T.int64))),
    "lu_factor_empty": case(lambda T: T.linalg.lu_factor(T.zeros(2, 0, 0))),
    "lu_factor_pivot_false": case(lambda T: T.linalg.lu_factor(rand(T, 3, 3), pivot=False)),
    "lu": case(lambda T: T.linalg.lu(rand(T, 2, 4, 3))),
    "lu_wide_complex": case(lambda T: T.linalg.lu(rand(T, 3, 5, dtype="complex128"))),
    "lu_grad": case(lambda T: grads(T, lambda a: T.linalg.lu(a)[1:], rand(T, 4, 4))),
    "lu_solve": case(lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(well(T, 2, 3, 3)), rand(T, 2, 3, 2, seed=1))),
    "lu_solve_adjoint": case(lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(well(T, 3, 3, dtype="complex128")),
                                                         rand(T, 3, 2, dtype="complex128", seed=1), adjoint=True)),
    "lu_solve_left_false": case(lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(well(T, 3, 3)), rand(T, 2, 3, seed=1),
                                                            left=False)),
    "lu_solve_broadcast": case(lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(well(T, 3, 3)), rand(T, 2, 3, 1, seed=1))),
    "lu_solve_bad_pivots_dtype": case(lambda T: T.linalg.lu_solve(T.eye(3), T.ones(3, dtype=T.int64), T.ones(3, 1))),
    "lu_solve_shape_mismatch": case(lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(well(T, 3, 3)), rand(T, 2, 1))),
    "lu_solve_grad": case(lambda T: grads(T, lambda lu, b: T.linalg.lu_solve(lu, T.linalg.lu_factor(well(T, 3, 3)).pivots, b),
                                          T.linalg.lu_factor(well(T, 3, 3)).LU, rand(T, 3, 2, seed=1))),
    "lu_unpack": case(lambda T: T.lu_unpack(*T.linalg.lu_factor(rand(T, 2, 3, 3)))),
    "torch_lu_solve": case(lambda T: T.lu_solve(rand(T, 3, 1, seed=1), *T.linalg.lu_factor(well(T, 3, 3)))),
    "householder_product": case(lambda T: T.linalg.householder_product(rand(T, 2, 4, 3), rand(T, 2, 2, seed=1))),
    "householder_product_complex": case(lambda T: T.linalg.householder_product(rand(T, 4, 3, dtype="complex128"),
                                                                               rand(T, 3, dtype="complex128", seed=1))),
    "householder_product_grad": case(lambda T: grads(T, T.linalg.householder_product, rand(T, 4, 3), rand(T, 2, seed=1))),
    "householder_product_wide": case(lambda T: T.linalg.householder_product(rand(T, 3, 4), rand(T, 2))),
    "householder_product_tau_too_long": case(lambda T: T.linalg.householder_product(rand(T, 4, 3), rand(T, 4))),
    "householder_product_batch_mismatch": case(lambda T: T.linalg.householder_product(rand(T, 2, 4, 3), rand(T, 3, 2))),
    "geqrf": case(lambda T: T.geqrf(rand(T, 2, 5, 3))),
    "geqrf_wide_complex": case(lambda T: T.geqrf(rand(T, 3, 4, dtype="complex128"))),
    "geqrf_zero_column": case(lambda T: T.geqrf(T.tensor([[0., 1.], [0., 2.], [0., 3.]], dtype=T.float64))),
    "geqrf_1d": case(lambda T: T.geqrf(T.ones(3))),
    "geqrf_int": case(lambda T: T.geqrf(T.ones(3, 3, dtype=T.int64))),
    "geqrf_empty": case(lambda T: T.geqrf(T.zeros(0, 3))),
    "orgqr": case(lambda T: T.orgqr(*T.geqrf(rand(T, 5, 3)))),
    "ormqr": case(lambda T: T.ormqr(*T.geqrf(rand(T, 5, 3)), rand(T, 5, 2, seed=1))),
    "ormqr_right_transpose": case(lambda T: T.ormqr(*T.geqrf(rand(T, 5, 3)), rand(T, 2, 5, seed=1), left=False,
                                                    transpose=True)),
    "ormqr_complex": case(lambda T: T.ormqr(*T.geqrf(rand(T, 4, 4, dtype="complex128")),
                                            rand(T, 4, 2, dtype="complex128", seed=1), transpose=True)),
    "ormqr_wrong_side": case(lambda T: T.ormqr(*T.geqrf(rand(T, 5, 3)), rand(T, 5, 2, seed=1), left=False)),
    "ormqr_dtype_mismatch": case(lambda T: T.ormqr(*T.geqrf(rand(T, 5, 3)), rand(T, 5, 2, dtype="float32"))),
    "ormqr_grad": case(lambda T: grads(T, lambda a, t, c: T.ormqr(a, t, c), *T.geqrf(rand(T, 4, 3)), rand(T, 4, 2, seed=1))),
    "householder_product_dtype_mismatch": case(lambda T: T.linalg.householder_product(rand(T, 4, 3),
                                                                                      rand(T, 2, dtype="float32"))),
})


# ---- eigen and singular value decompositions (test_eig*, test_eigh*, test_svd*) -------------------
def eigh_invariants(T, A, uplo="L"):
    w, V = T.linalg.eigh(A, UPLO=uplo)
    return [w, V.abs(), V @ T.diag_embed(w.to(V.dtype)) @ V.mH, T.linalg.eigvalsh(A, UPLO=uplo)]


def eig_invariants(T, A):
    w, V = T.linalg.eig(A)
    order = T.argsort(w.real * 1000 + w.imag)
    w = w.gather(-1, order)
    V = V.gather(-1, order.unsqueeze(-2).expand(V.shape))
    Ac = A.to(w.dtype)
    return [w, (Ac @ V - V * w.unsqueeze(-2)).abs().amax() < 1e-5, V.norm(dim=-2), V.dtype,
            T.linalg.eigvals(A).abs().sort().values]


def svd_invariants(T, A, full):
    U, S, Vh = T.linalg.svd(A, full_matrices=full)
    k = S.shape[-1]
    recon = U[..., :k] * S.unsqueeze(-2).to(U.dtype) @ Vh[..., :k, :]
    return [U.shape, S, Vh.shape, recon, (U.mH @ U - T.eye(U.shape[-1], dtype=U.dtype)).abs().amax() < 1e-5,
            T.linalg.svdvals(A)]


def gauge_free(T, V):
    """A loss on eigen/singular vectors that ignores each vector's phase: ``|V|^2``."""
    return (V * V.conj()).real


DECOMP = {}
for _dt in ("float32", "float64", "complex64", "complex128"):
    DECOMP[f"eigh_{_dt}"] = case(lambda T, d=_dt: eigh_invariants(T, spd(T, 4, 2, dtype=d)), _dt)
    DECOMP[f"eigh_U_{_dt}"] = case(lambda T, d=_dt: eigh_invariants(T, rand(T, 3, 3, dtype=d), "U"), _dt)
    DECOMP[f"eig_{_dt}"] = case(lambda T, d=_dt: eig_invariants(T, rand(T, 2, 4, 4, dtype=d)), _dt)
    for _full in (True, False):
        for _shape in ((4, 3), (3, 4), (2, 3, 3)) if _dt == "float64" else ((3, 4),):
            DECOMP[f"svd_{_full}_{_shape}_{_dt}"] = case(
                lambda T, d=_dt, f=_full, s=_shape: svd_invariants(T, rand(T, *s, dtype=d), f), _dt)
DECOMP.update({
    "eigh_reads_lower_only": case(lambda T: eigh_invariants(T, T.tensor([[2., 100.], [1., 3.]], dtype=T.float64))),
    "eigh_reads_upper_only": case(lambda T: eigh_invariants(T, T.tensor([[2., 1.], [100., 3.]], dtype=T.float64), "U")),
    "eigh_bad_uplo": case(lambda T: T.linalg.eigh(T.eye(2), UPLO="X")),
    "eigvalsh_bad_uplo": case(lambda T: T.linalg.eigvalsh(T.eye(2), UPLO="l")),
    "eigh_nonsquare": case(lambda T: T.linalg.eigh(T.ones(2, 3))),
    "eigh_int": case(lambda T: T.linalg.eigh(T.eye(2, dtype=T.int64))),
    "eigh_empty": case(lambda T: T.linalg.eigh(T.zeros(2, 0, 0))),
    "eigvalsh_grad": case(lambda T: grads(T, T.linalg.eigvalsh, spd(T, 3))),
    "eigh_grad_gauge_free": case(lambda T: grads(T, lambda a: [T.linalg.eigh(a)[0], gauge_free(T, T.linalg.eigh(a)[1])],
                                                 spd(T, 3))),
    "eigh_grad_complex": case(lambda T: grads(T, lambda a: gauge_free(T, T.linalg.eigh(a)[1]), spd(T, 3, dtype="complex128"))),
    "eig_nonsquare": case(lambda T: T.linalg.eig(T.ones(2, 3))),
    "eig_int": case(lambda T: T.linalg.eig(T.eye(2, dtype=T.int64))),
    "eig_empty": case(lambda T: T.linalg.eig(T.zeros(0, 0))),
    "eigvals_real_spectrum": case(lambda T: T.linalg.eigvals(T.diag(T.tensor([3., 1., 2.], dtype=T.float64)))),
    "eig_grad_eigenvalues": case(lambda T: grads(T, lambda a: T.linalg.eig(a)[0].abs(), spd(T, 3))),
    "svd_driver_on_cpu": case(lambda T: T.linalg.svd(rand(T, 3, 3), driver="gesvd")),
    "svdvals_driver_on_cpu": case(lambda T: T.linalg.svdvals(rand(T, 3, 3), driver="gesvd")),
    "svd_1d": case(lambda T: T.linalg.svd(T.ones(3))),
    "svd_int": case(lambda T: T.linalg.svd(T.eye(3, dtype=T.int64))),
    "svd_empty": case(lambda T: [t.shape for t in T.linalg.svd(T.zeros(0, 3))]),
    "svd_empty_reduced": case(lambda T: [t.shape for t in T.linalg.svd(T.zeros(2, 3, 0), full_matrices=False)]),
    "svdvals_empty": case(lambda T: T.linalg.svdvals(T.zeros(3, 0))),
    "svdvals_grad": case(lambda T: grads(T, T.linalg.svdvals, rand(T, 2, 4, 3))),
    "svd_grad_reconstruction": case(lambda T: grads(
        T, lambda a: [T.linalg.svd(a, full_matrices=False)[1], gauge_free(T, T.linalg.svd(a, full_matrices=False)[0])],
        rand(T, 4, 3))),
    "torch_svd": case(lambda T: svd_via_torch_svd(T, rand(T, 4, 3))),
    "torch_svd_compute_uv_false": case(lambda T: T.svd(rand(T, 4, 3), compute_uv=False)),
})


def svd_via_torch_svd(T, A):
    U, S, V = T.svd(A)
    return [U.shape, S, V.shape, U * S @ V.mT]


# ---- pinv, rank, powers, exp (test_pinv*, test_matrix_rank*, test_matrix_power*, test_matrix_exp*) -
MISC = {}
for _dt in ("float32", "float64", "complex128"):
    MISC[f"pinv_{_dt}"] = case(lambda T, d=_dt: T.linalg.pinv(rand(T, 2, 4, 3, dtype=d)), _dt)
    MISC[f"pinv_hermitian_{_dt}"] = case(lambda T, d=_dt: T.linalg.pinv(spd(T, 3, dtype=d), hermitian=True), _dt)
    MISC[f"matrix_rank_{_dt}"] = case(lambda T, d=_dt: T.linalg.matrix_rank(rand(T, 2, 4, 3, dtype=d)), _dt)
    MISC[f"matrix_exp_{_dt}"] = case(lambda T, d=_dt: T.linalg.matrix_exp(rand(T, 2, 3, 3, dtype=d) * 0.5), _dt)
    MISC[f"matrix_power_{_dt}"] = case(lambda T, d=_dt: [T.linalg.matrix_power(well(T, 3, 3, dtype=d), n)
                                                         for n in (0, 1, 2, 3, -1, -2)], _dt)
RANK_DEF = [[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]]
MISC.update({
    "pinv_rank_deficient": case(lambda T: T.linalg.pinv(T.tensor(RANK_DEF, dtype=T.float64))),
    "pinv_atol": case(lambda T: T.linalg.pinv(T.diag(T.tensor([5., 1., 1e-3], dtype=T.float64)), atol=0.01)),
    "pinv_rtol": case(lambda T: T.linalg.pinv(T.diag(T.tensor([5., 1., 1e-3], dtype=T.float64)), rtol=0.1)),
    "pinv_atol_rtol": case(lambda T: T.linalg.pinv(T.diag(T.tensor([5., 1., 1e-3], dtype=T.float64)), atol=2., rtol=0.1)),
    "pinv_tensor_atol": case(lambda T: T.linalg.pinv(T.diag(T.tensor([5., 1., 1e-3], dtype=T.float64)),
                                                     atol=T.tensor(0.01, dtype=T.float64))),
    "pinv_batched_tensor_atol": case(lambda T: T.linalg.pinv(T.diag_embed(T.tensor([[5., 1., 1e-3], [1., 1., 1.]],
                                                                                   dtype=T.float64)),
                                                             atol=T.tensor([0.5, 2.], dtype=T.float64))),
    "pinv_hermitian_reads_lower": case(lambda T: T.linalg.pinv(T.tensor([[2., 50.], [1., 3.]], dtype=T.float64),
                                                               hermitian=True)),
    "pinv_empty": case(lambda T: T.linalg.pinv(T.zeros(0, 3))),
    "pinv_1d": case(lambda T: T.linalg.pinv(T.ones(3))),
    "pinv_int": case(lambda T: T.linalg.pinv(T.eye(3, dtype=T.int64))),
    "pinv_grad": case(lambda T: grads(T, T.linalg.pinv, rand(T, 4, 3))),
    "pinverse": case(lambda T: T.pinverse(rand(T, 4, 3))),
    "pinverse_rcond": case(lambda T: T.pinverse(T.diag(T.tensor([5., 1., 1e-3], dtype=T.float64)), rcond=0.01)),
    "matrix_rank_deficient": case(lambda T: T.linalg.matrix_rank(T.tensor(RANK_DEF, dtype=T.float64))),
    "matrix_rank_hermitian": case(lambda T: T.linalg.matrix_rank(T.tensor([[1., 1.], [1., 1.]]), hermitian=True)),
    "matrix_rank_atol": case(lambda T: T.linalg.matrix_rank(T.diag(T.tensor([5., 1., 1e-3])), atol=0.01)),
    "matrix_rank_rtol": case(lambda T: T.linalg.matrix_rank(T.diag(T.tensor([5., 1., 1e-3])), rtol=0.5)),
    "matrix_rank_tol": case(lambda T: T.linalg.matrix_rank(T.diag(T.tensor([5., 1., 1e-3])), tol=2.)),
    "matrix_rank_tensor_tols": case(lambda T: T.linalg.matrix_rank(T.diag_embed(T.tensor([[5., 1., 1e-3], [1., 1., 1.]])),
                                                                   atol=T.tensor([0.5, 2.]), rtol=T.tensor(0.))),
    "matrix_rank_empty": case(lambda T: T.linalg.matrix_rank(T.zeros(2, 0, 3))),
    "matrix_rank_int": case(lambda T: T.linalg.matrix_rank(T.eye(3, dtype=T.int64))),
    "matrix_rank_1d": case(lambda T: T.linalg.matrix_rank(T.ones(3))),
    "matrix_power_nonsquare": case(lambda T: T.linalg.matrix_power(T.ones(2, 3), 2)),
    "matrix_power_int": case(lambda T: T.linalg.matrix_power(T.tensor([[1, 2], [3, 4]]), 3)),
    "matrix_power_int_negative": case(lambda T: T.linalg.matrix_power(T.tensor([[1, 2], [3, 4]]), -1)),
    "matrix_power_singular_negative": case(lambda T: T.linalg.matrix_power(T.zeros(2, 2), -1)),
    "matrix_power_empty": case(lambda T: T.linalg.matrix_power(T.zeros(2, 0, 0), 3)),
    "matrix_power_1d": case(lambda T: T.linalg.matrix_power(T.ones(3), 2)),
    "matrix_power_grad": case(lambda T: grads(T, lambda a: [T.linalg.matrix_power(a, n) for n in (0, 3, -2)], well(T, 3, 3))),
    "matrix_power_method": case(lambda T: well(T, 3, 3).matrix_power(2)),
    "matrix_exp_zero": case(lambda T: T.linalg.matrix_exp(T.zeros(3, 3))),
    "matrix_exp_large_norm": case(lambda T: T.linalg.matrix_exp(rand(T, 3, 3) * 5)),
    "matrix_exp_1x1": case(lambda T: T.linalg.matrix_exp(T.tensor([[2.]], dtype=T.float64))),
    "matrix_exp_empty": case(lambda T: T.linalg.matrix_exp(T.zeros(0, 3, 3))),
    "matrix_exp_nonsquare": case(lambda T: T.linalg.matrix_exp(T.ones(2, 3))),
    "matrix_exp_int": case(lambda T: T.linalg.matrix_exp(T.eye(2, dtype=T.int64))),
    "matrix_exp_grad": case(lambda T: grads(T, T.linalg.matrix_exp, rand(T, 3, 3) * 0.5)),
    "torch_matrix_exp": case(lambda T: T.matrix_exp(rand(T, 3, 3))),
    "tensorinv": case(lambda T: T.linalg.tensorinv(well(T, 6, 6).reshape(2, 3, 6), ind=2)),
    "tensorinv_ind1": case(lambda T: T.linalg.tensorinv(well(T, 4, 4).reshape(4, 2, 2), ind=1)),
    "tensorinv_bad_ind": case(lambda T: T.linalg.tensorinv(T.eye(4).reshape(4, 2, 2), ind=0)),
    "tensorinv_not_square": case(lambda T: T.linalg.tensorinv(T.ones(2, 3, 4), ind=1)),
    "tensorinv_singular": case(lambda T: T.linalg.tensorinv(T.zeros(4, 2, 2), ind=1)),
    "tensorsolve": case(lambda T: T.linalg.tensorsolve(well(T, 6, 6).reshape(2, 3, 6), rand(T, 2, 3, seed=1))),
    "tensorsolve_dims": case(lambda T: T.linalg.tensorsolve(well(T, 6, 6).reshape(6, 2, 3), rand(T, 2, 3, seed=1),
                                                            dims=(0,))),
    "tensorsolve_bad_shapes": case(lambda T: T.linalg.tensorsolve(T.ones(2, 3, 4), T.ones(2, 3))),
    "tensorsolve_grad": case(lambda T: grads(T, T.linalg.tensorsolve, well(T, 6, 6).reshape(2, 3, 6), rand(T, 2, 3, seed=1))),
})


# ---- products and small functions (test_cross*, test_vecdot*, test_multi_dot*, test_vander*, ----
# test_matmul*, test_addmm*, test_addr*, test_kron*, test_tensordot*, test_einsum*, test_trace*) ---
PRODUCTS = {
    "cross": case(lambda T: T.linalg.cross(rand(T, 4, 3), rand(T, 4, 3, seed=1))),
    "cross_dim0": case(lambda T: T.linalg.cross(rand(T, 3, 4), rand(T, 3, 4, seed=1), dim=0)),
    "cross_broadcast": case(lambda T: T.linalg.cross(rand(T, 1, 3), rand(T, 4, 3, seed=1))),
    "cross_complex": case(lambda T: T.linalg.cross(rand(T, 2, 3, dtype="complex128"), rand(T, 2, 3, dtype="complex128", seed=1))),
    "cross_int": case(lambda T: T.linalg.cross(T.tensor([1, 0, 0]), T.tensor([0, 1, 0]))),
    "cross_not_3": case(lambda T: T.linalg.cross(T.ones(4, 2), T.ones(4, 2))),
    "cross_ndim_mismatch": case(lambda T: T.linalg.cross(T.ones(3), T.ones(2, 3))),
    "cross_dtype_mismatch": case(lambda T: T.linalg.cross(T.ones(3), T.ones(3, dtype=T.float64))),
    "cross_dim_out_of_range": case(lambda T: T.linalg.cross(T.ones(3), T.ones(3), dim=1)),
    "cross_grad": case(lambda T: grads(T, T.linalg.cross, rand(T, 2, 3), rand(T, 2, 3, seed=1))),
    "torch_cross_default_dim": case(lambda T: T.cross(rand(T, 3, 4), rand(T, 3, 4, seed=1))),
    "torch_cross_no_size3": case(lambda T: T.cross(T.ones(2, 4), T.ones(2, 4))),
    "vecdot": case(lambda T: T.linalg.vecdot(rand(T, 2, 3), rand(T, 2, 3, seed=1))),
    "vecdot_complex_conj": case(lambda T: T.linalg.vecdot(rand(T, 3, dtype="complex128"), rand(T, 3, dtype="complex128", seed=1))),
    "vecdot_dim0_broadcast": case(lambda T: T.linalg.vecdot(rand(T, 3, 1), rand(T, 3, 4, seed=1), dim=0)),
    "vecdot_size_mismatch": case(lambda T: T.linalg.vecdot(T.ones(3), T.ones(4))),
    "vecdot_dtype_mismatch": case(lambda T: T.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64))),
    "vecdot_int": case(lambda T: T.linalg.vecdot(T.tensor([1, 2]), T.tensor([3, 4]))),
    "multi_dot": case(lambda T: T.linalg.multi_dot([rand(T, 2, 3), rand(T, 3, 4, seed=1), rand(T, 4, 2, seed=2)])),
    "multi_dot_vectors": case(lambda T: T.linalg.multi_dot([rand(T, 3), rand(T, 3, 4, seed=1), rand(T, 4, seed=2)])),
    "multi_dot_one": case(lambda T: T.linalg.multi_dot([rand(T, 3, 3)])),
    "multi_dot_empty_list": case(lambda T: T.linalg.multi_dot([])),
    "multi_dot_3d": case(lambda T: T.linalg.multi_dot([rand(T, 2, 2, 2), rand(T, 2, 2)])),
    "multi_dot_shape_mismatch": case(lambda T: T.linalg.multi_dot([rand(T, 2, 3), rand(T, 2, 3)])),
    "multi_dot_dtype_mismatch": case(lambda T: T.linalg.multi_dot([T.ones(2, 2), T.ones(2, 2, dtype=T.float64)])),
    "multi_dot_empty_dims": case(lambda T: T.linalg.multi_dot([T.zeros(2, 0), T.zeros(0, 3), T.zeros(3, 2)])),
    "multi_dot_grad": case(lambda T: grads(T, lambda a, b, c: T.linalg.multi_dot([a, b, c]), rand(T, 2, 3),
                                           rand(T, 3, 4, seed=1), rand(T, 4, 2, seed=2))),
    "chain_matmul": case(lambda T: T.chain_matmul(rand(T, 2, 3), rand(T, 3, 4, seed=1), rand(T, 4, 2, seed=2))),
    "vander": case(lambda T: T.linalg.vander(T.tensor([1., 2., 3.]))),
    "vander_N": case(lambda T: T.linalg.vander(rand(T, 2, 3), N=5)),
    "vander_int": case(lambda T: T.linalg.vander(T.tensor([1, 2, 3]), N=4)),
    "vander_complex": case(lambda T: T.linalg.vander(rand(T, 3, dtype="complex128"))),
    "vander_N1": case(lambda T: T.linalg.vander(T.tensor([1., 2.]), N=1)),
    "vander_0d": case(lambda T: T.linalg.vander(T.tensor(2.))),
    "vander_grad": case(lambda T: grads(T, lambda x: T.linalg.vander(x, N=4), rand(T, 3))),
    "diagonal": case(lambda T: T.linalg.diagonal(rand(T, 2, 3, 4), offset=1)),
    "diagonal_dims": case(lambda T: T.linalg.diagonal(rand(T, 2, 3, 4), dim1=0, dim2=2)),
    "linalg_matmul": case(lambda T: T.linalg.matmul(rand(T, 2, 3), rand(T, 3, 2, seed=1))),
}
for _a, _b in (((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
               ((5, 1, 2, 3), (4, 3, 2)), ((3,), (5, 3, 2)), ((5, 2, 3), (3,)), ((0, 3), (3, 2)), ((2, 0), (0, 3)),
               ((2, 3), (4, 2)), ((3,), (4,))):
    PRODUCTS[f"matmul_{_a}_{_b}"] = case(lambda T, a=_a, b=_b: grads(T, T.matmul, rand(T, *a), rand(T, *b, seed=1))
                                         if len(a) + len(b) in (2, 3, 5) else T.matmul(rand(T, *a), rand(T, *b, seed=1)))
PRODUCTS.update({
    "matmul_0d": case(lambda T: T.matmul(T.tensor(1.), T.ones(2))),
    "matmul_dtype_mismatch": case(lambda T: T.matmul(T.ones(2, 2), T.ones(2, 2, dtype=T.float64))),
    "matmul_int": case(lambda T: T.matmul(T.tensor([[1, 2]]), T.tensor([[3], [4]]))),
    "matmul_complex": case(lambda T: T.matmul(rand(T, 2, 3, dtype="complex128"), rand(T, 3, dtype="complex128", seed=1))),
    "mm_1d": case(lambda T: T.mm(T.ones(3), T.ones(3, 2))),
    "mm_shape_mismatch": case(lambda T: T.mm(T.ones(2, 3), T.ones(2, 3))),
    "mm_dtype_mismatch": case(lambda T: T.mm(T.ones(2, 3), T.ones(3, 2, dtype=T.float64))),
    "bmm": case(lambda T: grads(T, T.bmm, rand(T, 2, 2, 3), rand(T, 2, 3, 4, seed=1))),
    "bmm_batch_mismatch": case(lambda T: T.bmm(T.ones(2, 2, 3), T.ones(3, 3, 4))),
    "bmm_2d": case(lambda T: T.bmm(T.ones(2, 3), T.ones(3, 4))),
    "bmm_empty": case(lambda T: T.bmm(T.ones(0, 2, 3), T.ones(0, 3, 4))),
    "addmm": case(lambda T: grads(T, lambda i, a, b: T.addmm(i, a, b, beta=0.5, alpha=2.), rand(T, 2, 4),
                                  rand(T, 2, 3, seed=1), rand(T, 3, 4, seed=2))),
    "addmm_broadcast_input": case(lambda T: T.addmm(rand(T, 4), rand(T, 2, 3, seed=1), rand(T, 3, 4, seed=2))),
    "addmm_beta0_nan": case(lambda T: T.addmm(T.full((2, 2), math.nan), T.ones(2, 3), T.ones(3, 2), beta=0)),
    "addmm_int": case(lambda T: T.addmm(T.ones(2, 2, dtype=T.int64), T.ones(2, 3, dtype=T.int64),
                                        T.ones(3, 2, dtype=T.int64), beta=2, alpha=3)),
    "addmm_shape_mismatch": case(lambda T: T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(2, 2))),
    "addmv": case(lambda T: grads(T, lambda i, a, v: T.addmv(i, a, v, beta=0.5, alpha=2.), rand(T, 2), rand(T, 2, 3, seed=1),
                                  rand(T, 3, seed=2))),
    "addmv_shape_mismatch": case(lambda T: T.addmv(T.ones(2), T.ones(2, 3), T.ones(2))),
    "addr": case(lambda T: grads(T, lambda i, a, b: T.addr(i, a, b, beta=0.5, alpha=2.), rand(T, 2, 3), rand(T, 2, seed=1),
                                 rand(T, 3, seed=2))),
    "addr_bool": case(lambda T: T.addr(T.zeros(2, 2, dtype=T.bool), T.tensor([True, False]), T.tensor([True, True]))),
    "addr_int_float_beta": case(lambda T: T.addr(T.ones(2, 2, dtype=T.int64), T.ones(2, dtype=T.int64),
                                                 T.ones(2, dtype=T.int64), beta=0.5)),
    "addr_2d_vec": case(lambda T: T.addr(T.ones(2, 2), T.ones(2, 1), T.ones(2))),
    "addbmm": case(lambda T: grads(T, lambda i, a, b: T.addbmm(i, a, b, beta=0.5, alpha=2.), rand(T, 2, 4),
                                   rand(T, 3, 2, 3, seed=1), rand(T, 3, 3, 4, seed=2))),
    "baddbmm": case(lambda T: grads(T, lambda i, a, b: T.baddbmm(i, a, b, beta=0.5, alpha=2.), rand(T, 3, 2, 4),
                                    rand(T, 3, 2, 3, seed=1), rand(T, 3, 3, 4, seed=2))),
    "baddbmm_broadcast": case(lambda T: T.baddbmm(rand(T, 4), rand(T, 3, 2, 3, seed=1), rand(T, 3, 3, 4, seed=2))),
    "baddbmm_beta0": case(lambda T: T.baddbmm(T.full((3, 2, 4), math.inf), T.ones(3, 2, 3), T.ones(3, 3, 4), beta=0)),
    "dot": case(lambda T: grads(T, T.dot, rand(T, 3), rand(T, 3, seed=1))),
    "dot_complex_no_conj": case(lambda T: T.dot(rand(T, 3, dtype="complex128"), rand(T, 3, dtype="complex128", seed=1))),
    "dot_2d": case(lambda T: T.dot(T.ones(2, 2), T.ones(2, 2))),
    "dot_size_mismatch": case(lambda T: T.dot(T.ones(3), T.ones(4))),
    "dot_dtype_mismatch": case(lambda T: T.dot(T.ones(3), T.ones(3, dtype=T.float64))),
    "dot_int": case(lambda T: T.dot(T.tensor([1, 2]), T.tensor([3, 4]))),
    "vdot_complex_conj": case(lambda T: T.vdot(rand(T, 3, dtype="complex128"), rand(T, 3, dtype="complex128", seed=1))),
    "vdot_2d": case(lambda T: T.vdot(T.ones(2, 2), T.ones(2, 2))),
    "vdot_real": case(lambda T: grads(T, T.vdot, rand(T, 3), rand(T, 3, seed=1))),
    "inner": case(lambda T: grads(T, T.inner, rand(T, 2, 3), rand(T, 4, 3, seed=1))),
    "inner_scalar": case(lambda T: T.inner(T.tensor(2.), rand(T, 2, 3))),
    "inner_mismatch": case(lambda T: T.inner(T.ones(2, 3), T.ones(2, 4))),
    "outer": case(lambda T: grads(T, T.outer, rand(T, 2), rand(T, 3, seed=1))),
    "outer_int_float": case(lambda T: T.outer(T.tensor([1, 2]), T.tensor([0.5, 1.5]))),
    "outer_2d": case(lambda T: T.outer(T.ones(2, 2), T.ones(2))),
    "ger": case(lambda T: T.ger(rand(T, 2), rand(T, 3, seed=1))),
    "kron": case(lambda T: grads(T, T.kron, rand(T, 2, 3), rand(T, 2, 2, seed=1))),
    "kron_rank_mismatch": case(lambda T: T.kron(rand(T, 2), rand(T, 2, 2, 2, seed=1))),
    "kron_int": case(lambda T: T.kron(T.tensor([[1, 2]]), T.tensor([[1], [3]]))),
    "kron_empty": case(lambda T: T.kron(T.zeros(0, 2), T.ones(2, 2))),
    "tensordot_int_dims": case(lambda T: grads(T, lambda a, b: T.tensordot(a, b, 2), rand(T, 2, 3, 4), rand(T, 3, 4, 5, seed=1))),
    "tensordot_list_dims": case(lambda T: T.tensordot(rand(T, 2, 3, 4), rand(T, 4, 2, seed=1), dims=([0, 2], [1, 0]))),
    "tensordot_zero_dims": case(lambda T: T.tensordot(rand(T, 2), rand(T, 3, seed=1), 0)),
    "tensordot_negative_dims": case(lambda T: T.tensordot(rand(T, 2, 3), rand(T, 3, 2, seed=1), -1)),
    "tensordot_size_mismatch": case(lambda T: T.tensordot(T.ones(2, 3), T.ones(4, 2), dims=([1], [0]))),
    "tensordot_dims_len_mismatch": case(lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=([1], [0, 1]))),
    "tensordot_dtype_mismatch": case(lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2, dtype=T.float64), 1)),
    "trace": case(lambda T: grads(T, T.trace, rand(T, 3, 4))),
    "trace_int": case(lambda T: T.trace(T.tensor([[1, 2], [3, 4]], dtype=T.int32))),
    "trace_bool": case(lambda T: T.trace(T.tensor([[True, False], [True, True]]))),
    "trace_3d": case(lambda T: T.trace(T.ones(2, 2, 2))),
    "trace_empty": case(lambda T: T.trace(T.zeros(0, 3))),
    "tril": case(lambda T: [T.tril(rand(T, 2, 3, 4), k) for k in (-5, -1, 0, 2, 9)]),
    "triu": case(lambda T: [T.triu(rand(T, 2, 3, 4), k) for k in (-5, -1, 0, 2, 9)]),
    "tril_1d": case(lambda T: T.tril(T.ones(3))),
    "triu_grad": case(lambda T: grads(T, lambda x: T.triu(x, 1), rand(T, 3, 3))),
    "tril_empty": case(lambda T: T.tril(T.zeros(0, 3))),
    "tril_int_bool": case(lambda T: [T.tril(T.ones(3, 3, dtype=T.int64)), T.triu(T.ones(3, 3, dtype=T.bool), -1)]),
})
EINSUMS = [("i,i->", [(3,), (3,)]), ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
           ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]), ("i,j->ij", [(2,), (3,)]),
           ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("ijk->", [(2, 3, 4)]), ("i i", [(3, 3)]),
           ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
           ("i,j", [(2,), (2, 3)]), ("ij,jk", [(2, 3), (4, 4)]), ("ij->i", [(2, 3, 4)]), ("i->ii", [(3,)]),
           ("I,J->IJ", [(2,), (3,)]), ("...,...", [(2, 3), (3,)]), ("ij,ij->ij", [(2, 1), (1, 3)])]


def einsum_of(T, equation, shapes, with_grad):
    xs = [rand(T, *s, seed=i) for i, s in enumerate(shapes)]
    return grads(T, lambda *ts: T.einsum(equation, *ts), *xs) if with_grad else T.einsum(equation, *xs)


for _i, (_eq, _shapes) in enumerate(EINSUMS):
    PRODUCTS[f"einsum_{_eq}_{_shapes}"] = case(lambda T, eq=_eq, sh=_shapes, g=_i % 3 == 0: einsum_of(T, eq, sh, g))
PRODUCTS.update({
    "einsum_list_operands": case(lambda T: T.einsum("ij,jk", [rand(T, 2, 3), rand(T, 3, 2, seed=1)])),
    "einsum_sublist": case(lambda T: T.einsum(rand(T, 2, 3), [0, 1], rand(T, 3, 4, seed=1), [1, 2], [0, 2])),
    "einsum_operand_count": case(lambda T: T.einsum("ij,jk", rand(T, 2, 3))),
    "einsum_dtype_mismatch": case(lambda T: T.einsum("i,i", T.ones(2), T.ones(2, dtype=T.float64))),
    # without a shared subscript summed torch multiplies the operands, which promotes (RWKV-v1's
    # RotaryEmbedding: einsum("i,j->ij", arange(T), inv_freq)); contracting mixed dtypes raises
    "einsum_outer_promotes": case(lambda T: [T.einsum("i,j->ij", T.arange(3), T.ones(2)),
                                             T.einsum("ij,ij->ij", T.arange(4).reshape(2, 2), T.ones(2, 2, dtype=T.bool)),
                                             T.einsum("i,j,k->ijk", T.arange(2), T.ones(2), T.ones(2, dtype=T.float64))]),
    "einsum_outer_promotes_grad": case(lambda T: grads(T, lambda x: T.einsum("i,j->ij", T.arange(3), x), rand(T, 2))),
    "einsum_mixed_contraction": case(lambda T: T.einsum("ij,kj->ik", T.arange(4).reshape(2, 2), T.ones(2, 2))),
    "einsum_int": case(lambda T: T.einsum("i,i->", T.tensor([1, 2]), T.tensor([3, 4]))),
    "einsum_complex": case(lambda T: T.einsum("ij,j->i", rand(T, 2, 3, dtype="complex128"), rand(T, 3, dtype="complex128"))),
    "einsum_empty": case(lambda T: T.einsum("ij,jk->ik", T.zeros(2, 0), T.zeros(0, 3))),
    "einsum_subscript_count": case(lambda T: T.einsum("ij", T.ones(2))),
    "einsum_output_not_in_inputs": case(lambda T: T.einsum("i->j", T.ones(2))),
    "einsum_output_repeated": case(lambda T: T.einsum("ij->ii", T.ones(2, 2))),
    "einsum_invalid_subscript": case(lambda T: T.einsum("i$", T.ones(2, 2))),
    "einsum_size_mismatch": case(lambda T: T.einsum("i,i", T.ones(2), T.ones(3))),
    "einsum_ellipsis_broadcast": case(lambda T: T.einsum("...i,...i->...", rand(T, 2, 3), rand(T, 4, 1, 3))),
    "einsum_two_ellipses": case(lambda T: T.einsum("...i...", T.ones(2, 3))),
    "einsum_no_operands": case(lambda T: T.einsum("i")),
    "einsum_diagonal_size_mismatch": case(lambda T: T.einsum("ii->", T.ones(2, 3))),
})


# ---- out= rules (test_*_out, test_*_errors_and_warnings) ------------------------------------------
def with_out(fn, *out_specs):
    """``fn(T, out)`` with ``out`` built from ``(shape, dtype name)`` specs (a tuple of tensors
    for several): returns what was written and whether the result is ``out`` itself."""
    def program(T):
        outs = [T.empty(s, dtype=getattr(T, d)) for s, d in out_specs]
        out = outs[0] if len(outs) == 1 else tuple(outs)
        res = fn(T, out)
        same = res is out if len(outs) == 1 else all(r is o for r, o in zip(res, outs))
        return [outs, same]
    return program


OUTS = {
    "inv_out": case(with_out(lambda T, o: T.linalg.inv(well(T, 3, 3), out=o), ((3, 3), "float64"))),
    "inv_out_resized": case(with_out(lambda T, o: T.linalg.inv(well(T, 3, 3), out=o), ((1,), "float64"))),
    "inv_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.inv(well(T, 3, 3), out=o), ((3, 3), "float32"))),
    "inv_out_int": case(with_out(lambda T, o: T.linalg.inv(well(T, 3, 3), out=o), ((3, 3), "int64"))),
    "det_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.det(well(T, 3, 3), out=o), ((), "float32"))),
    "cholesky_out": case(with_out(lambda T, o: T.linalg.cholesky(spd(T, 3), out=o), ((0,), "float64"))),
    "cholesky_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.cholesky(spd(T, 3), out=o), ((3, 3), "int32"))),
    "eigh_out": case(with_out(lambda T, o: T.linalg.eigh(spd(T, 3), out=o)[0], ((3,), "float64"), ((3, 3), "float64"))),
    "eigh_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.eigh(spd(T, 3), out=o), ((3,), "float32"),
                                          ((3, 3), "float64"))),
    "eigvalsh_out_complex_input": case(with_out(lambda T, o: T.linalg.eigvalsh(spd(T, 3, dtype="complex128"), out=o),
                                                ((3,), "complex128"))),
    "solve_out": case(with_out(lambda T, o: T.linalg.solve(well(T, 3, 3), rand(T, 3, 2), out=o), ((3, 2), "float64"))),
    "solve_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.solve(well(T, 3, 3), rand(T, 3, 2), out=o),
                                           ((3, 2), "float32"))),
    "svdvals_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.svdvals(rand(T, 3, 3), out=o), ((3,), "complex128"))),
    "norm_out": case(with_out(lambda T, o: T.linalg.norm(rand(T, 3, 3), out=o), ((), "float64"))),
    "norm_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.vector_norm(rand(T, 3), out=o), ((), "float32"))),
    "matrix_rank_out": case(with_out(lambda T, o: T.linalg.matrix_rank(rand(T, 3, 3), out=o), ((), "int64"))),
    "matmul_out": case(with_out(lambda T, o: T.matmul(rand(T, 2, 3), rand(T, 3, 2), out=o), ((2, 2), "float64"))),
    "mm_out_resized": case(with_out(lambda T, o: T.mm(rand(T, 2, 3), rand(T, 3, 2), out=o), ((5,), "float64"))),
    "cross_out_wrong_dtype": case(with_out(lambda T, o: T.linalg.cross(rand(T, 3), rand(T, 3), out=o), ((3,), "float32"))),
    "qr_out": case(with_out(lambda T, o: T.linalg.qr(rand(T, 3, 3), out=o), ((3, 3), "float64"), ((3, 3), "float64"))),
    "lu_factor_out_pivots_dtype": case(with_out(lambda T, o: T.linalg.lu_factor(well(T, 3, 3), out=o), ((3, 3), "float64"),
                                                ((3,), "int64"))),
}

ALL = {n: c for n, c in {**NORMS, **SOLVES, **LSTSQ, **FACTOR, **DECOMP, **MISC, **PRODUCTS, **OUTS}.items() if c}
XFAIL = {}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[n])]
                                               if n in XFAIL else []) for n in ALL])
def test_linalg(name):
    fn, (rtol, atol) = ALL[name]
    agree(fn, rtol, atol)
