"""uint16/32/64, float8 and the dtypes without storage against torch 2.13 (CPU).

NOTE [limited dtypes] (tracegrad/_ops/limited.py): torch runs only a few ops on uint16/32/64 and
float8 and raises NotImplementedError for the rest; promotion with other dtypes is a
RuntimeError. Each case below runs once with torch and once with tracegrad on the same inputs:
values, dtypes and shapes, or the exception class, must agree.
"""
import io
import pickle

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LIMITED = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e8m0fnu"]
TORCH_DTYPE_NAMES = sorted(n for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype))


def _outcome(fn):
    try:
        return _norm(fn())
    except Exception as e:   # the builtin class torch raises is what must agree
        return ("raises", next(c for c in type(e).__mro__ if c.__module__ == "builtins").__name__)


def _norm(v):
    if isinstance(v, (torch.Tensor, tracegrad.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), _norm(v.tolist()))
    if isinstance(v, (torch.dtype, tracegrad.dtype)):
        return ("dtype", str(v).split(".")[-1])
    if isinstance(v, (tuple, list)):
        return [_norm(x) for x in v]
    if isinstance(v, str):
        return v.replace("tracegrad.", "torch.")
    if isinstance(v, float):
        return float(f"{v:.4g}")   # exp/sqrt: XLA's and torch's float32 results differ in the last digits
    return v


# ---- dtype objects --------------------------------------------------------------------------
@pytest.mark.parametrize("name", TORCH_DTYPE_NAMES)
def test_dtype_attributes_match_torch(name):
    def attrs(m):
        d = getattr(m, name)
        return [_outcome(lambda: repr(d)), _outcome(lambda: d.is_floating_point), _outcome(lambda: d.is_complex),
                _outcome(lambda: d.is_signed), _outcome(lambda: d.itemsize), _outcome(d.to_real),
                _outcome(d.to_complex), _outcome(lambda: repr(m.finfo(d))), _outcome(lambda: repr(m.iinfo(d)))]
    assert attrs(tracegrad) == attrs(torch)
    d = getattr(tracegrad, name)
    assert pickle.loads(pickle.dumps(d)) is d and tracegrad._ops.dtypes.to_dtype(getattr(torch, name)) is d


PROMOTION_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                   "complex64", "complex128", "complex32", "quint8"] + LIMITED


def test_promote_types_and_can_cast_match_torch():
    def table(m):
        return [(a, b, _outcome(lambda: m.promote_types(getattr(m, a), getattr(m, b))),
                 _outcome(lambda: m.can_cast(getattr(m, a), getattr(m, b))))
                for a in PROMOTION_NAMES for b in PROMOTION_NAMES]
    assert table(tracegrad) == table(torch)


def test_result_type_with_scalars_and_tensors():
    for m in (tracegrad, torch):
        u = m.tensor([1, 2], dtype=m.uint32)
        assert (m.result_type(u, 1), m.result_type(u, 1.5)) == (m.uint32, m.float32)
        with pytest.raises(RuntimeError):
            m.result_type(u, m.tensor([1]))


# ---- ops: torch's kernels, and its NotImplementedError where it has none ---------------------
def _x(m, d):
    return m.tensor([1, 2, 4]).to(d)


CASES = {
    "zeros": lambda m, d: m.zeros(3, dtype=d), "ones": lambda m, d: m.ones(2, 2, dtype=d),
    "full": lambda m, d: m.full((2,), 4, dtype=d), "tensor": lambda m, d: m.tensor([1, 2], dtype=d),
    "empty": lambda m, d: m.empty(2, 3, dtype=d).shape, "arange": lambda m, d: m.arange(3, dtype=d),
    "rand": lambda m, d: m.rand(2, dtype=d).shape, "randint": lambda m, d: m.randint(0, 5, (2,), dtype=d).dtype,
    "to": _x, "float": lambda m, d: _x(m, d).float(), "long": lambda m, d: _x(m, d).long(),
    "bf16": lambda m, d: _x(m, d).bfloat16(), "from_float": lambda m, d: m.tensor([1.5, 3.0]).to(d),
    "clone": lambda m, d: _x(m, d).clone(), "copy_": lambda m, d: m.zeros(3, dtype=d).copy_(m.tensor([4., 5, 6])),
    "copy_to_float": lambda m, d: m.zeros(3).copy_(_x(m, d)),
    "eq": lambda m, d: _x(m, d) == _x(m, d), "ne_scalar": lambda m, d: _x(m, d) != 2,
    "lt": lambda m, d: _x(m, d) < _x(m, d), "add": lambda m, d: _x(m, d) + _x(m, d),
    "add_scalar": lambda m, d: _x(m, d) + 1, "add_float_tensor": lambda m, d: _x(m, d) + m.tensor([1., 2, 3]),
    "add_long_tensor": lambda m, d: _x(m, d) + m.tensor([1, 2, 3]),
    "add_bf16_tensor": lambda m, d: _x(m, d) + m.ones(3, dtype=m.bfloat16), "sub": lambda m, d: _x(m, d) - _x(m, d),
    "mul": lambda m, d: _x(m, d) * _x(m, d), "mul_float": lambda m, d: _x(m, d) * 1.5,
    "div": lambda m, d: _x(m, d) / _x(m, d), "floordiv": lambda m, d: _x(m, d) // _x(m, d),
    "neg": lambda m, d: -_x(m, d), "abs": lambda m, d: _x(m, d).abs(),
    "bitwise_and": lambda m, d: _x(m, d) & _x(m, d), "bitwise_not": lambda m, d: ~_x(m, d),
    "lshift": lambda m, d: _x(m, d) << _x(m, d), "sum": lambda m, d: _x(m, d).sum(),
    "prod": lambda m, d: _x(m, d).prod(), "cumsum": lambda m, d: _x(m, d).cumsum(0),
    "max": lambda m, d: _x(m, d).max(), "argmax": lambda m, d: _x(m, d).argmax(),
    "mean": lambda m, d: _x(m, d).mean(), "sort": lambda m, d: list(_x(m, d).sort()),
    "unique": lambda m, d: m.unique(_x(m, d)), "cat": lambda m, d: m.cat([_x(m, d), _x(m, d)]),
    "stack": lambda m, d: m.stack([_x(m, d), _x(m, d)]), "slice": lambda m, d: _x(m, d)[1:],
    "index_tensor": lambda m, d: _x(m, d)[m.tensor([2, 0])],
    "bool_mask": lambda m, d: _x(m, d)[m.tensor([True, False, True])],
    "setitem": lambda m, d: _x(m, d).__setitem__(0, 3),
    "index_put": lambda m, d: _x(m, d).index_put_((m.tensor([0]),), m.ones(1, dtype=d)),
    "where": lambda m, d: m.where(m.tensor([True, False, True]), _x(m, d), _x(m, d)),
    "reshape_permute": lambda m, d: _x(m, d).reshape(3, 1).permute(1, 0).contiguous(),
    "expand": lambda m, d: _x(m, d).expand(2, 3).contiguous(), "split": lambda m, d: list(_x(m, d).split(2)),
    "fill_": lambda m, d: _x(m, d).fill_(2), "zero_": lambda m, d: _x(m, d).zero_(),
    "tolist": lambda m, d: _x(m, d).tolist(), "item": lambda m, d: _x(m, d)[1].item(),
    "repr": lambda m, d: repr(_x(m, d)), "type": lambda m, d: _x(m, d).type(),
    "maximum": lambda m, d: m.maximum(_x(m, d), _x(m, d)), "clamp": lambda m, d: _x(m, d).clamp(0, 2),
    "mm": lambda m, d: _x(m, d).reshape(1, 3) @ _x(m, d).reshape(3, 1), "exp": lambda m, d: _x(m, d).exp(),
    "sqrt": lambda m, d: _x(m, d).sqrt(), "pow": lambda m, d: _x(m, d) ** 2,
    "isnan": lambda m, d: _x(m, d).isnan(), "isinf": lambda m, d: _x(m, d).isinf(),
    "isfinite": lambda m, d: _x(m, d).isfinite(), "any": lambda m, d: _x(m, d).any(),
    "equal": lambda m, d: m.equal(_x(m, d), _x(m, d)), "allclose": lambda m, d: m.allclose(_x(m, d), _x(m, d)),
    "masked_fill": lambda m, d: _x(m, d).masked_fill(m.tensor([True, False, False]), 0),
    "masked_select": lambda m, d: _x(m, d).masked_select(m.tensor([True, False, True])),
    "index_select": lambda m, d: _x(m, d).index_select(0, m.tensor([2, 0])),
    "gather": lambda m, d: _x(m, d).gather(0, m.tensor([2, 0])), "flip": lambda m, d: _x(m, d).flip(0),
    "roll": lambda m, d: _x(m, d).roll(1), "repeat": lambda m, d: _x(m, d).repeat(2),
    "nonzero": lambda m, d: _x(m, d).nonzero(), "sign": lambda m, d: _x(m, d).sign(),
    "zeros_like": lambda m, d: m.zeros_like(_x(m, d)), "requires_grad": lambda m, d: _x(m, d).requires_grad_(),
    "numpy": lambda m, d: _x(m, d).numpy().tolist(),
    "sum_dim": lambda m, d: _x(m, d).sum(0), "cumprod": lambda m, d: _x(m, d).cumprod(0),
    "all": lambda m, d: _x(m, d).all(), "roll_dim": lambda m, d: _x(m, d).roll(1, 0),
    "fill_tensor": lambda m, d: _x(m, d).fill_(m.tensor(3)), "mul_int": lambda m, d: _x(m, d) * 2,
    "index_fill": lambda m, d: _x(m, d).index_fill(0, m.tensor([0]), 5),
    "assert_close": lambda m, d: m.testing.assert_close(_x(m, d), _x(m, d)),
}
# float8_e8m0fnu has no zero: torch stores 0 as its smallest value 2**-127, ml_dtypes as NaN
KNOWN = {("float8_e8m0fnu", c) for c in ("zeros", "copy_", "zero_", "zeros_like", "from_float")}


@pytest.mark.parametrize("name", ["uint32", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"])   # one per kernel set
def test_ops_on_limited_dtypes_match_torch(name):
    bad = []
    for case, fn in CASES.items():
        if (name, case) in KNOWN:
            continue
        ours, theirs = _outcome(lambda: fn(tracegrad, getattr(tracegrad, name))), \
            _outcome(lambda: fn(torch, getattr(torch, name)))
        if ours != theirs:
            bad.append((case, ours, theirs))
    assert not bad


def test_limited_error_names_the_op_and_dtype():
    with pytest.raises(NotImplementedError, match=r"add.*'UInt32'.*convert"):
        tracegrad.ones(2, dtype=tracegrad.uint32) + 1
    with pytest.raises(NotImplementedError, match=r"arange\(\).*'Float8_e4m3fn'"):
        tracegrad.arange(3, dtype=tracegrad.float8_e4m3fn)


def test_compiled_matches_eager_on_limited_dtypes():
    u = tracegrad.tensor([1, 2, 3], dtype=tracegrad.uint32)
    square = tracegrad.compile(lambda x: x * x)
    assert square(u).tolist() == [1, 4, 9] and square(u).dtype is tracegrad.uint32
    with pytest.raises(NotImplementedError):
        tracegrad.compile(lambda x: x - x)(u)


def test_uint64_beyond_int64_and_numpy_round_trip():
    big = [2 ** 64 - 1, 2 ** 63 + 5, 0]
    for m in (tracegrad, torch):
        t = m.tensor(big, dtype=m.uint64)
        assert t.tolist() == big and t.numpy().dtype == np.uint64
        back = m.from_numpy(np.array(big, dtype=np.uint64))
        assert back.dtype is m.uint64 and back.tolist() == big
        assert m.from_numpy(np.arange(3, dtype=np.uint16)).dtype is m.uint16


@pytest.mark.parametrize("name", ["complex32", "quint8", "int4", "bits8", "float4_e2m1fn_x2"])
def test_dtypes_without_storage_refuse_tensors(name):
    d = getattr(tracegrad, name)
    for make in (lambda: tracegrad.zeros(2, dtype=d), lambda: tracegrad.ones(2).to(d),
                 lambda: tracegrad.tensor([1], dtype=d)):
        with pytest.raises(NotImplementedError, match=name):
            make()
    assert tracegrad.chalf is tracegrad.complex32 and tracegrad.bit is tracegrad.uint1


# ---- serialization ------------------------------------------------------------------------------
def test_torch_files_load_and_tracegrad_files_round_trip():
    values = [1.0, 2.0, 4.0]
    buf = io.BytesIO()
    torch.save({n: torch.tensor(values).to(getattr(torch, n)) for n in LIMITED}, buf)
    from_torch = tracegrad.load(io.BytesIO(buf.getvalue()))
    buf = io.BytesIO()
    tracegrad.save({n: tracegrad.tensor(values).to(getattr(tracegrad, n)) for n in LIMITED}, buf)
    ours = tracegrad.load(io.BytesIO(buf.getvalue()))
    for n in LIMITED:
        for t in (from_torch[n], ours[n]):
            assert t.dtype is getattr(tracegrad, n) and t.float().tolist() == values
    # the file is safetensors: torch's reader gets the same dtypes (it knows these five)
    from safetensors.torch import load as st_load
    buf = io.BytesIO()
    keep = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"]
    tracegrad.save({n: tracegrad.tensor(values).to(getattr(tracegrad, n)) for n in keep}, buf)
    read = st_load(buf.getvalue())
    assert sorted(str(v.dtype) for v in read.values()) == sorted(f"torch.{n}" for n in keep)
