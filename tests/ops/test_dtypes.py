"""Parity of dtypes, torch's type promotion and casts with torch (one line per case)."""
import numpy as np
import pytest

import tracegrad
from parity import A, B, C, D, F, H, I, check_parity, params

torch = pytest.importorskip("torch")

i32 = lambda *s: I(*s, dtype=np.int32)  # noqa: E731
u8 = lambda *s: I(*s, dtype=np.uint8)  # noqa: E731
i8 = lambda *s: I(*s, lo=-3, dtype=np.int8)  # noqa: E731
i16 = lambda *s: I(*s, dtype=np.int16)  # noqa: E731

PROMOTION = [
    C("int_mul_float_scalar", lambda t, x: x * 2.5, [I(3)]),
    C("int_add_int_scalar", lambda t, x: x + 2, [i32(3)]),
    C("int32_add_int64", lambda t, x, y: x + y, [i32(3), I(3)]),
    C("uint8_add_int8", lambda t, x, y: x + y, [u8(3), i8(3)]),
    C("uint8_add_int16", lambda t, x, y: x + y, [u8(3), i16(3)]),
    C("uint8_add_int_scalar", lambda t, x: x + 300, [u8(3)]),
    C("int8_mul_uint8", lambda t, x, y: x * y, [i8(3), u8(3)]),
    C("float_dim_vs_double_0d", lambda t, x, y: x + y, [F(3), D()]),
    C("int_dim_vs_float_0d", lambda t, x, y: x + y, [I(3), D()]),
    C("half_dim_vs_float_0d", lambda t, x, y: x * y, [H(3), F()]),
    C("zero_d_vs_zero_d", lambda t, x, y: x + y, [F(), D()]),
    C("int_0d_vs_float_0d", lambda t, x, y: x + y, [I(), F()]),
    C("bool_add_int", lambda t, x, y: x + y, [B(3), I(3)]),
    C("bool_add_bool", lambda t, x, y: x + y, [B(3), B(3)]),
    C("bool_mul_float_scalar", lambda t, x: x * 1.5, [B(3)]),
    C("bool_add_int_scalar", lambda t, x: x + 1, [B(3)]),
    C("bool_add_bool_scalar", lambda t, x: x + True, [B(3)]),
    C("float16_add_float32", lambda t, x, y: x + y, [H(3), F(3)]),
    C("float32_add_float64", lambda t, x, y: x + y, [F(3), D(3)]),
    C("float16_add_double_scalar", lambda t, x: x + 1e-3, [H(3)]),
    C("int_div_int", lambda t, x, y: x / y, [I(4), I(4, lo=1)]),
    C("int_div_scalar", lambda t, x: x / 2, [I(4)]),
    C("int_floordiv_scalar", lambda t, x: x // 2, [I(4)]),
    C("int_pow_float", lambda t, x: x ** 2.0, [I(4)]),
    C("int_lt_float", lambda t, x: x < 2.5, [I(4)]),
    C("float_eq_int", lambda t, x, y: x == y, [F(4), I(4)]),
    C("uint8_cmp_neg", lambda t, x: x > -1, [u8(4)]),
    C("where_int_float", lambda t, c, x, y: t.where(c, x, y), [B(4), I(4), F(4)]),
    C("cat_int_half", lambda t, x, y: t.cat([x, y]), [i32(2), H(2)]),
    C("sum_int32", lambda t, x: x.sum(), [i32(4)]),
    C("sum_uint8", lambda t, x: x.sum(), [u8(4)]),
    C("cumsum_int32", lambda t, x: x.cumsum(0), [i32(4)]),
    C("max_int32", lambda t, x: x.max(), [i32(4)]),
    C("abs_int8", lambda t, x: x.abs(), [i8(4)]),
    C("clamp_int_float_scalar", lambda t, x: x.clamp(0.5), [I(4)]),
    C("addcmul_int", lambda t, x, y, z: t.addcmul(x, y, z), [I(3), I(3), I(3)]),
    C("result_type", lambda t, x: t.result_type(x, 1.0), [I(3)]),
    C("result_type_tt", lambda t, x, y: t.result_type(x, y), [u8(3), i8(3)]),
    C("promote_types", lambda t: t.promote_types(t.int32, t.float16), []),
    C("promote_types_u8_i8", lambda t: t.promote_types(t.uint8, t.int8), []),
    C("promote_types_bool_f", lambda t: t.promote_types(t.bool, t.bfloat16), []),
    C("can_cast", lambda t: (t.can_cast(t.float32, t.int32), t.can_cast(t.int32, t.float16), t.can_cast(t.int64, t.bool)), []),
    C("inplace_int_float_raises", lambda t, x: x.add_(1.5), [I(3)], raises=True),
    C("inplace_float_int_ok", lambda t, x: x.detach().add_(t.tensor([1, 2, 3])), [F(3)]),
    C("inplace_int_div_raises", lambda t, x: x.div_(2), [I(3)], raises=True),
    C("default_dtype", lambda t: t.get_default_dtype(), []),
    C("dtype_props", lambda t: (t.float16.is_floating_point, t.int8.is_signed, t.uint8.is_signed, t.complex64.is_complex, t.bfloat16.itemsize), []),
]

CASTS = [
    C("to_float64", lambda t, x: x.to(t.float64), [F(3)]),
    C("to_same_is_self", lambda t, x: x.to(t.float32) is x, [F(3)]),
    C("to_copy_true", lambda t, x: x.to(t.float32, copy=True), [F(3)]),
    C("to_int_truncates", lambda t, x: x.to(t.int64), [A([1.7, -1.7, 2.5])]),
    C("to_str_dtype", lambda t, x: x.to(dtype=t.float16), [F(3)]),
    C("to_other", lambda t, x, y: x.to(y), [F(3), D(3)]),
    C("to_device_dtype", lambda t, x: x.to("cpu", t.float64), [F(3)]),
    C("to_cpu_is_self", lambda t, x: x.to("cpu") is x, [F(3)]),
    C("cpu_is_self", lambda t, x: x.cpu() is x, [F(3)]),
    C("float", lambda t, x: x.float(), [I(3)]),
    C("double", lambda t, x: x.double(), [F(3)]),
    C("half", lambda t, x: x.half(), [F(3)]),
    C("bfloat16", lambda t, x: x.bfloat16(), [F(3)]),
    C("long", lambda t, x: x.long(), [F(3)]),
    C("int", lambda t, x: x.int(), [F(3)]),
    C("short", lambda t, x: x.short(), [F(3)]),
    C("byte", lambda t, x: x.byte(), [A([1, 2, 255])]),
    C("char", lambda t, x: x.char(), [A([1, 2, -3])]),
    C("bool", lambda t, x: x.bool(), [A([0.0, 0.5, -1.0])]),
    C("bool_to_float", lambda t, x: x.float(), [B(4)]),
    C("type_as", lambda t, x, y: x.type_as(y), [F(3), I(3)]),
    C("device_attr", lambda t, x: (str(x.device), x.device.type, x.is_cuda, x.device == t.device("cpu")), [F(3)]),
    C("device_repr", lambda t: repr(t.device("cpu")) + repr(t.device("cuda", 1)) + str(t.device("cuda:0")), []),
    C("bad_device", lambda t: t.device("tpuu"), [], raises=True),
]


@params(PROMOTION + CASTS)
def test_parity(case):
    check_parity(case, torch)


def test_dtype_repr_and_aliases():
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
                 "bool", "complex64", "complex128"):
        assert repr(getattr(tracegrad, name)) == repr(getattr(torch, name)).replace("torch.", "tracegrad.")
    for alias in ("half", "float", "double", "short", "int", "long", "cfloat", "cdouble"):
        assert repr(getattr(tracegrad, alias)) == repr(getattr(torch, alias)).replace("torch.", "tracegrad.")


def test_cuda_unavailable_raises():
    if tracegrad.cuda.is_available():
        pytest.skip("a GPU is visible to JAX here")
    # torch's CPU build raises AssertionError("Torch not compiled with CUDA enabled") for each
    x = tracegrad.ones(2)
    for use in (x.cuda, lambda: x.to("cuda"), lambda: tracegrad.zeros(2, device="cuda"),
                lambda: tracegrad.nn.Linear(2, 2).cuda(), lambda: x.to("cuda:1"),
                tracegrad.cuda.synchronize, tracegrad.cuda.current_device):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            use()


def test_set_default_dtype():
    try:
        tracegrad.set_default_dtype(tracegrad.float64)
        assert tracegrad.tensor([1.5]).dtype is tracegrad.float64
        assert (tracegrad.tensor([1, 2]) * 0.5).dtype is tracegrad.float64
        assert tracegrad.ones(2).dtype is tracegrad.float64
    finally:
        tracegrad.set_default_dtype(tracegrad.float32)
    with pytest.raises(TypeError):
        tracegrad.set_default_dtype(tracegrad.int64)


_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64")
_SCALARS = (True, 2, 2.5, 1j)


def _rt(mod, a, b):
    try:
        return str(mod.result_type(a, b)).split(".")[-1]
    except Exception as e:  # noqa: BLE001 -- compared against torch
        return type(e).__name__


@pytest.mark.parametrize("da", _DTYPES)
def test_result_type_all_pairs(da):
    """torch.result_type over every dtype pair, for dimensioned / zero-dim tensors and Python
    scalars (no kernels run: this is the promotion table itself)."""
    for mod_a_dim in (True, False):
        for db in _DTYPES:
            for b_dim in (True, False):
                got = _rt(tracegrad, tracegrad.zeros(2 if mod_a_dim else (), dtype=getattr(tracegrad, da)),
                          tracegrad.zeros(2 if b_dim else (), dtype=getattr(tracegrad, db)))
                want = _rt(torch, torch.zeros(2 if mod_a_dim else (), dtype=getattr(torch, da)),
                           torch.zeros(2 if b_dim else (), dtype=getattr(torch, db)))
                if want == "complex32":   # torch's ComplexHalf: JAX has none (README: differences)
                    continue
                assert got == want, (da, mod_a_dim, db, b_dim)
        for s in _SCALARS:
            got = _rt(tracegrad, tracegrad.zeros(2 if mod_a_dim else (), dtype=getattr(tracegrad, da)), s)
            want = _rt(torch, torch.zeros(2 if mod_a_dim else (), dtype=getattr(torch, da)), s)
            if want == "complex32":
                continue
            assert got == want, (da, mod_a_dim, s)
