"""NOTE [scalar arguments] (tracegrad/_ops/registry.py): a Python float an op takes goes to the
jitted program as itself on its first use and as a cached weak 0-d array from its second. Both
forms must give the same program: the same bits, dtypes and torch's values, for every dtype."""
import math

import numpy as np
import pytest

import tracegrad
from tracegrad._ops import registry

torch = pytest.importorskip("torch")

_DTYPES = ("float16", "bfloat16", "float32", "float64", "int64", "int32", "uint8", "complex64")
_OPS = {
    "mul": lambda x, s: x * s,
    "radd": lambda x, s: s + x,
    "div": lambda x, s: x / s,
    "rsub": lambda x, s: s - x,
    "pow": lambda x, s: x.abs() ** s if not x.is_complex() else x ** s,
    "clamp": lambda x, s: x.clamp(max=s) if not x.is_complex() else x * s,
    "add_alpha": lambda x, s: x.add(x, alpha=s) if x.is_floating_point() or x.is_complex() else x + s,
}


def _fresh(i):
    # a float no other test uses, so its first use here is the program's first sight of it
    return 0.3183 + i * 1.2345678e-4 + (hash(__name__) % 997) * 1e-9


def _np(t):
    return (t.float() if t.dtype in (tracegrad.bfloat16, torch.bfloat16) else t).detach().numpy()


@pytest.mark.parametrize("op", list(_OPS))
@pytest.mark.parametrize("dtype", _DTYPES)
def test_first_and_cached_float_give_the_same_program(op, dtype):
    f = _OPS[op]
    s = _fresh(_DTYPES.index(dtype) * 10 + list(_OPS).index(op))
    data = np.array([[1.5, -2.25, 3.0], [0.5, 7.0, -0.75]], dtype=np.float32)
    x = tracegrad.tensor(data).to(getattr(tracegrad, dtype))
    outs = [f(x, s) for _ in range(3)]       # raw float, then the cached array twice
    key = (float, s)
    assert key in registry._SCALARS
    for o in outs[1:]:
        assert o.dtype == outs[0].dtype
        np.testing.assert_array_equal(_np(o), _np(outs[0]))
    ref = f(torch.tensor(data).to(getattr(torch, dtype)), s)
    assert str(outs[0].dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(outs[0]).astype(np.complex128), _np(ref).astype(np.complex128),
                               rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-6, atol=1e-6)


@pytest.mark.parametrize("special", [math.nan, -0.0, math.inf, -math.inf, 1e300])
def test_special_floats_first_and_cached(special):
    x = tracegrad.tensor([1.0, -2.0, 0.0])
    outs = [x * special for _ in range(3)] + [x / special for _ in range(3)]
    ref = [torch.tensor([1.0, -2.0, 0.0]) * special] * 3 + [torch.tensor([1.0, -2.0, 0.0]) / special] * 3
    for o, r in zip(outs, ref):
        np.testing.assert_array_equal(o.numpy(), r.numpy())      # NaN, signed zeros and infs alike


def test_a_float_is_cached_from_its_second_use():
    s = _fresh(12345)
    x = tracegrad.ones(2)
    x * s
    assert (float, s) not in registry._SCALARS
    x * s
    assert (float, s) in registry._SCALARS
