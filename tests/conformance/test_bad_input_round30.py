"""Bad-input parity, round 30 (linalg, fft, in-place dtype rules, index ops, losses, fill values,
load): a probe over ~4,000 wrong calls (torch.linalg.* with non-square/int/bool/empty/batch-mismatched
inputs, every torch.fft transform with bad n/dim/norm/s, creation functions, Tensor.to/device,
view/reshape/expand/permute/unflatten/movedim/narrow/split/roll, gather/scatter/index_* with every
index dtype, nn.functional conv/pool/interpolate/pad/embedding/one_hot/losses, module
constructors, optimizers and lr_schedulers, DataLoader/samplers, save/load on bad paths, and
autograd misuse) left these differences from torch 2.13, fixed here:

- ``gather``/``scatter``/``scatter_``/``scatter_add(_)``/``scatter_reduce(_)`` with a dim out of
  range raised the index's dtype or rank RuntimeError: torch wraps the dim first (IndexError);
- the 1-d ``fft.*`` transforms looked at the input (0-d: IndexError; half/complex: RuntimeError)
  before their parser's TypeError for a float ``dim``, a str ``n`` or a non-str ``norm``; the n-d
  ones with a 0-d input and repeated dims raised "dims must be unique" (torch: IndexError);
- ``atan2_``/``hypot_``/``ldexp_``/``nextafter_``/``igamma_`` with a Python number raised the
  in-place cast's RuntimeError (or, igamma_, ran): torch has no Scalar overload (TypeError);
- ``linalg.lu_solve`` with LU and B of different dtypes leaked JAX's TypeError and text (torch:
  RuntimeError); ``linalg.solve_triangular``/``cholesky_solve`` with batch dims that do not
  broadcast leaked JAX's ValueError (torch: RuntimeError); ``linalg.eigh`` checked an int input
  before a bad ``UPLO`` (torch: the UPLO RuntimeError first); ``linalg.tensorinv(x, ind)`` with
  ``ind`` past x's dims returned a result (torch: RuntimeError);
- ``roll(shifts, dims=())`` was refused (torch: the flattened roll); ``index_add(_)`` with a 0-d
  index failed in the kernel (torch: one index); ``index_reduce_`` raised RuntimeError for a 2-d
  index (torch: IndexError) and ran with a source of another width (torch: RuntimeError);
  ``index_fill_`` with a value tensor of dims checked the index first (torch: the value first);
- ``multi_margin_loss`` took an int32/uint8 target (torch: RuntimeError "expected scalar type
  Long"); ``cross_entropy`` with class probabilities took a ``[1, C]`` weight (torch:
  RuntimeError); ``F.layer_norm(x, 3)`` ran (torch's F.layer_norm: TypeError, a tuple of ints);
- ``bool_tensor.fill_(1j)``/``masked_fill_(mask, 1j)`` were refused (torch converts any number to
  bool), and a complex number with a zero imaginary part into a real tensor reached JAX's cast;
- ``load(path, mmap=True)`` of a plain pickle raised UnpicklingError (torch: RuntimeError).

Each call runs under torch (the oracle) and tracegrad: the same exception class (or none), no text
of the layers below tracegrad; ``_ok`` calls are ones torch accepts, and their values are compared.
"""
import pickle

import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _m(T):
    return T.arange(6.0).view(2, 3)


def _sq(T):
    return T.arange(4.0).view(2, 2) + T.eye(2) * 3


def _idx(T, dtype="float32"):
    return T.zeros(2, 3, dtype=getattr(T, dtype))


CASES = {}
for _dt in ("float32", "bool", "int16"):
    for _d in (2, -3):
        CASES[f"gather {_dt} index dim {_d}"] = lambda T, a=_dt, d=_d: T.gather(_m(T), d, _idx(T, a))
        CASES[f"scatter {_dt} index dim {_d}"] = lambda T, a=_dt, d=_d: _m(T).scatter(d, _idx(T, a), _m(T))
        CASES[f"scatter value {_dt} index dim {_d}"] = lambda T, a=_dt, d=_d: _m(T).scatter(d, _idx(T, a), 1.0)
        CASES[f"scatter_add_ {_dt} index dim {_d}"] = lambda T, a=_dt, d=_d: _m(T).scatter_add_(d, _idx(T, a), _m(T))
CASES.update({
    "gather rank-1 index dim 2": lambda T: T.gather(_m(T), 2, T.zeros(3, dtype=T.int64)),
    "scatter_ bad reduce dim 5": lambda T: _m(T).scatter_(5, T.zeros(1), 1.0, reduce="bad"),
    "scatter_reduce float index dim 5": lambda T: _m(T).scatter_reduce(5, _idx(T), _m(T), "sum"),
    "scatter_add float index dim 5": lambda T: T.scatter_add(_m(T), 5, _idx(T), _m(T)),
})
for _f in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    for _xn, _x in (("0d", lambda T: T.tensor(1.0)), ("half", lambda T: T.ones(4).half()),
                    ("complex", lambda T: T.ones(4, dtype=T.complex64))):
        CASES[f"fft.{_f} {_xn} dim float"] = lambda T, f=_f, x=_x: getattr(T.fft, f)(x(T), dim=1.5)
        CASES[f"fft.{_f} {_xn} n str"] = lambda T, f=_f, x=_x: getattr(T.fft, f)(x(T), n="a")
        CASES[f"fft.{_f} {_xn} norm int"] = lambda T, f=_f, x=_x: getattr(T.fft, f)(x(T), norm=1)
    CASES[f"fft.{_f} 0d bad norm name"] = lambda T, f=_f: getattr(T.fft, f)(T.tensor(1.0), norm="bad")
    CASES[f"fft.{_f} dim None"] = lambda T, f=_f: getattr(T.fft, f)(T.ones(4), dim=None)
for _f in ("fft2", "ifftn", "rfftn", "irfft2", "hfft2", "ihfft2"):
    CASES[f"fft.{_f} 0d repeated dims"] = lambda T, f=_f: getattr(T.fft, f)(T.tensor(1.0), dim=(0, 0))
for _op in ("atan2_", "hypot_", "ldexp_", "nextafter_", "igamma_"):
    for _v in (1.5, 2, 1j):
        CASES[f"float {_op}({_v!r})"] = lambda T, op=_op, v=_v: getattr(T.ones(2), op)(v)
    CASES[f"int64 {_op}(1.5)"] = lambda T, op=_op: getattr(T.ones(2, dtype=T.int64), op)(1.5)
CASES["float atan2_(tensor)_ok"] = lambda T: T.ones(2).atan2_(T.ones(2))
CASES.update({
    "linalg.lu_solve B int": lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_sq(T)), T.ones(2, 1, dtype=T.int64)),
    "linalg.lu_solve B float64": lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_sq(T)), T.ones(2, 1).double()),
    "linalg.lu_solve B complex": lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_sq(T)), T.ones(2, 1, dtype=T.complex64)),
    "linalg.solve_triangular batch mismatch": lambda T: T.linalg.solve_triangular(T.ones(3, 2, 2), T.ones(2, 2, 1),
                                                                                  upper=True),
    "cholesky_solve batch mismatch": lambda T: T.cholesky_solve(T.ones(2, 2, 1), T.ones(3, 2, 2)),
    "linalg.eigh int bad UPLO": lambda T: T.linalg.eigh(T.ones(2, 2, dtype=T.int64), UPLO="X"),
    "linalg.eigvalsh non-square bad UPLO": lambda T: T.linalg.eigvalsh(T.ones(2, 3), UPLO="X"),
    "linalg.tensorinv 0d": lambda T: T.linalg.tensorinv(T.tensor(1.0), ind=1),
    "linalg.tensorinv ind past dims": lambda T: T.linalg.tensorinv(T.ones(1), ind=3),
    "roll dims empty_ok": lambda T: _m(T).roll((1,), ()),
    "roll int dims empty_ok": lambda T: _m(T).roll(1, []),
    "roll two shifts dims empty": lambda T: _m(T).roll((1, 2), ()),
    "index_add_ 0d index_ok": lambda T: _m(T).index_add_(0, T.tensor(1), T.ones(1, 3)),
    "index_add 0d index 1d_ok": lambda T: T.zeros(3).index_add(0, T.tensor(1), T.ones(1)),
    "index_add 0d index 0d source": lambda T: T.zeros(3).index_add(0, T.tensor(1), T.tensor(2.0)),
    "index_reduce_ 2d index": lambda T: _m(T).index_reduce_(0, T.tensor([[0]]), T.ones(1, 3), "prod"),
    "index_reduce_ source width": lambda T: _m(T).index_reduce_(0, T.tensor([0]), T.ones(1, 2), "prod"),
    "index_fill_ 1d value float index": lambda T: _m(T).index_fill_(0, T.tensor([0.0]), T.ones(2)),
    "index_fill_ 1d value bad dim": lambda T: _m(T).index_fill_(5, T.tensor([0]), T.ones(2)),
    "index_fill 1d value 2d index": lambda T: _m(T).index_fill(0, T.tensor([[0]]), T.ones(2)),
    "multi_margin_loss int32 target": lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3),
                                                                                  T.tensor([0, 1], dtype=T.int32)),
    "multi_margin_loss uint8 target": lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3),
                                                                                  T.tensor([0, 1], dtype=T.uint8)),
    "cross_entropy probs weight [1, C]": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 3) / 3,
                                                                                weight=T.ones(1, 3)),
    "cross_entropy probs weight [C, 1]": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 3) / 3,
                                                                                weight=T.ones(3, 1)),
    "layer_norm int shape": lambda T: T.nn.functional.layer_norm(T.ones(2, 3), 3),
    "layer_norm float shape": lambda T: T.nn.functional.layer_norm(T.ones(2, 3), 3.0),
    "layer_norm list shape_ok": lambda T: T.nn.functional.layer_norm(T.ones(2, 3), [3]),
    "LayerNorm int_ok": lambda T: T.nn.LayerNorm(3)(T.ones(2, 3)),
})
for _dt in ("bool", "int64", "float32"):
    for _v in (1j, 0j, 1 + 0j, 2 + 1j):
        _ok = "_ok" if _dt == "bool" or _v.imag == 0 else ""
        CASES[f"{_dt} fill_({_v!r}){_ok}"] = lambda T, d=_dt, v=_v: T.zeros(2, dtype=getattr(T, d)).fill_(v)
        CASES[f"{_dt} masked_fill_({_v!r}){_ok}"] = lambda T, d=_dt, v=_v: T.zeros(2, dtype=getattr(T, d)).masked_fill_(
            T.tensor([True, False]), v)


def _load_plain_pickle(T, tmp):
    path = tmp / "plain.pt"
    path.write_bytes(pickle.dumps({"a": 1}))
    return T.load(str(path), mmap=True)


GIST = {
    "gather float32 index dim 2": "Dimension out of range",
    "scatter_ bad reduce dim 5": "Dimension out of range",
    "fft.rfft complex dim float": "argument 'dim' must be int",
    "fft.fft half n str": "argument 'n' must be int",
    "fft.fft2 0d repeated dims": "no dimensions",
    "float atan2_(1.5)": "must be Tensor",
    "int64 hypot_(1.5)": "must be Tensor",
    "linalg.lu_solve B float64": "same dtype",
    "linalg.solve_triangular batch mismatch": "must match the size",
    "cholesky_solve batch mismatch": "must match the size",
    "linalg.eigh int bad UPLO": "UPLO",
    "index_reduce_ 2d index": "supposed to be a vector",
    "index_reduce_ source width": "source tensor shape must match self tensor shape",
    "index_fill_ 1d value float index": "0-dimensional value tensor",
    "multi_margin_loss int32 target": "expected scalar type Long",
    "cross_entropy probs weight [1, C]": "weight tensor should be defined either for all 3 classes",
    "layer_norm int shape": "normalized_shape",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_ok")])
def test_values_as_torch(name):
    want, got = CASES[name](torch), CASES[name](tracegrad)
    assert got.dtype.is_floating_point == want.dtype.is_floating_point and list(got.shape) == list(want.shape)
    g, w = got.detach().reshape(-1).tolist(), want.detach().reshape(-1).tolist()
    assert g == (pytest.approx(w, rel=1e-5, abs=1e-6) if want.dtype.is_floating_point else w)


def test_load_mmap_of_a_plain_pickle(tmp_path):
    """torch refuses mmap for a file not in its zip format with RuntimeError, before unpickling."""
    for T in (torch, tracegrad):
        with pytest.raises(RuntimeError, match="mmap"):
            _load_plain_pickle(T, tmp_path)
