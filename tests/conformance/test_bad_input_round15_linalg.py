"""Bad-input parity, round 15 (linalg): singular and non positive-definite inputs raise
``linalg.LinAlgError`` exactly where torch raises ``torch.linalg.LinAlgError`` (its
``torch._C._LinAlgError``, a RuntimeError subclass) and a plain RuntimeError where torch does.
Fixed here: ``linalg.lu_factor`` (and ``lu_factor_ex(check_errors=True)``) raised LinAlgError
where torch raises RuntimeError, and let a rank-deficient rectangular input through; the
deprecated ``torch.lu`` raised for a singular matrix, which torch factorizes; ``linalg.cross``
of shapes that do not broadcast raised a TypeError in the words of the layer below; and the
messages now name the failing batch element and pivot / leading minor, as torch's do."""
import pytest

import tracegrad

from _bad_input_helpers import FOREIGN, assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")

_SINGULAR = [[1., 2.], [2., 4.]]
_INDEFINITE = [[1., 2.], [2., 1.]]     # leading minors 1 and -3: Cholesky fails at order 2


def _batch(T, *mats):
    return T.tensor(list(mats))


def _eye(T):
    return T.eye(2).tolist()


# calls torch answers with torch.linalg.LinAlgError
LINALG_ERRORS = {
    "inv(singular)": lambda T: T.linalg.inv(T.tensor(_SINGULAR)),
    "inv(batch, element 1 singular)": lambda T: T.linalg.inv(_batch(T, _eye(T), _SINGULAR)),
    "Tensor.inverse(singular)": lambda T: T.tensor(_SINGULAR).inverse(),
    "inv_ex(singular, check_errors)": lambda T: T.linalg.inv_ex(T.tensor(_SINGULAR), check_errors=True),
    "matrix_power(singular, -1)": lambda T: T.linalg.matrix_power(T.tensor(_SINGULAR), -1),
    "solve(singular)": lambda T: T.linalg.solve(T.tensor(_SINGULAR), T.ones(2)),
    "solve(batch, element 1 singular)": lambda T: T.linalg.solve(_batch(T, _eye(T), _SINGULAR), T.ones(2, 2)),
    "solve_ex(singular, check_errors)": lambda T: T.linalg.solve_ex(T.tensor(_SINGULAR), T.ones(2),
                                                                     check_errors=True),
    "cholesky(indefinite)": lambda T: T.linalg.cholesky(T.tensor(_INDEFINITE)),
    "cholesky(batch, element 1 indefinite)": lambda T: T.linalg.cholesky(_batch(T, _eye(T), _INDEFINITE)),
    "cholesky_ex(indefinite, check_errors)": lambda T: T.linalg.cholesky_ex(T.tensor(_INDEFINITE),
                                                                             check_errors=True),
}
CASES = {
    # torch's LU checks are plain RuntimeErrors (rectangular inputs too)
    "lu_factor(singular)": lambda T: T.linalg.lu_factor(T.tensor(_SINGULAR)),
    "lu_factor(batch, element 1 singular)": lambda T: T.linalg.lu_factor(_batch(T, _eye(T), _SINGULAR)),
    "lu_factor(rank-1 2x3)": lambda T: T.linalg.lu_factor(T.tensor([[1., 2., 3.], [2., 4., 6.]])),
    "lu_factor_ex(singular, check_errors)": lambda T: T.linalg.lu_factor_ex(T.tensor(_SINGULAR), check_errors=True),
    "lu_factor(invertible)_ok": lambda T: T.linalg.lu_factor(T.tensor(_INDEFINITE)),
    "lu_factor_ex(singular)_ok": lambda T: T.linalg.lu_factor_ex(T.tensor(_SINGULAR)),
    "lu(singular)_ok": lambda T: T.linalg.lu(T.tensor(_SINGULAR)),
    "torch.lu(singular)_ok": lambda T: T.lu(T.tensor(_SINGULAR)),
    "torch.lu(batch, singular)_ok": lambda T: T.lu(_batch(T, _SINGULAR, _SINGULAR)),
    "inv_ex(singular)_ok": lambda T: T.linalg.inv_ex(T.tensor(_SINGULAR)),
    "solve_ex(singular)_ok": lambda T: T.linalg.solve_ex(T.tensor(_SINGULAR), T.ones(2)),
    "cholesky_ex(indefinite)_ok": lambda T: T.linalg.cholesky_ex(T.tensor(_INDEFINITE)),
    # cross: dims that do not broadcast are torch's RuntimeError, a dim out of range IndexError
    "linalg.cross(2x3, 3x3)": lambda T: T.linalg.cross(T.ones(2, 3), T.ones(3, 3)),
    "cross(2x3, 3x3, dim=1)": lambda T: T.cross(T.ones(2, 3), T.ones(3, 3), dim=1),
    "linalg.cross(dim 5)": lambda T: T.linalg.cross(T.ones(2, 3), T.ones(2, 3), dim=5),
    "linalg.cross(dim -3)": lambda T: T.linalg.cross(T.ones(2, 3), T.ones(2, 3), dim=-3),
    "linalg.cross(1x3, 2x3)_ok": lambda T: T.linalg.cross(T.ones(1, 3), T.ones(2, 3)),
}


def _as_tracegrad(cls):
    return tracegrad.linalg.LinAlgError if cls is torch.linalg.LinAlgError else cls


@pytest.mark.parametrize("name", list(LINALG_ERRORS))
def test_linalg_error_where_torch_raises_one(name):
    fn = LINALG_ERRORS[name]
    want, tmsg = outcome(fn, torch)
    got, msg = outcome(fn, tracegrad)
    assert want is torch.linalg.LinAlgError, f"torch's class changed: {want} ({tmsg[:200]})"
    assert got is _as_tracegrad(want), f"{name}: tracegrad {got}: {msg[:300]}"
    assert issubclass(got, RuntimeError) and not FOREIGN.search(msg), msg


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "inv(singular)": "The diagonal element 2 is zero",
    "inv(batch, element 1 singular)": "(Batch element 1): The diagonal element 2 is zero",
    "inv_ex(singular, check_errors)": "The diagonal element 2 is zero",
    "solve(batch, element 1 singular)": "(Batch element 1): The solver failed because the input matrix is singular",
    "cholesky(indefinite)": "the leading minor of order 2 is not positive-definite",
    "cholesky(batch, element 1 indefinite)": "(Batch element 1): The factorization could not be completed",
    "cholesky_ex(indefinite, check_errors)": "the leading minor of order 2 is not positive-definite",
    "lu_factor(singular)": "U[2,2] is zero and using it on lu_solve would result in a division by zero",
    "lu_factor(batch, element 1 singular)": "(Batch element 1): U[2,2] is zero",
    "lu_factor(rank-1 2x3)": "U[2,2] is zero",
    "linalg.cross(2x3, 3x3)": "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    fn = {**LINALG_ERRORS, **CASES}[name]
    assert_gist(name, fn, GIST[name], torch, tracegrad)


def test_accepted_calls_keep_torchs_values():
    got = {}
    for T in (torch, tracegrad):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LU, piv = T.lu(T.tensor(_SINGULAR))
            r = [LU.tolist(), piv.tolist()]
            LU, piv, info = T.linalg.lu_factor_ex(T.tensor([[1., 2., 3.], [2., 4., 6.]]))
            r += [LU.tolist(), info.item()]
            r.append(T.linalg.cholesky_ex(_batch(T, _eye(T), _INDEFINITE)).info.tolist())
            r.append(T.linalg.inv_ex(_batch(T, _SINGULAR, _eye(T))).info.tolist())
            r.append(T.linalg.cross(T.tensor([[1., 0., 0.]]), T.tensor([[0., 1., 0.], [0., 0., 1.]])).tolist())
        got[T] = r
    assert got[tracegrad] == got[torch]
