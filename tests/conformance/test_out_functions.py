"""``tracegrad.<name>(..., out=...)`` against torch, on PyTorch's own OpInfo samples.

For every OpInfo with ``supports_out`` whose torch function (``torch.<name>``, ``torch.linalg.<name>``,
...) has a tracegrad counterpart, the first samples are run in both libraries with ``out=``:

* an ``out`` of the result's shape and dtype is written in place and returned (the same object);
* an empty ``out`` is resized to the result's shape;
* an ``out`` of another dtype (float64 for a float32 result, int64 for a floating one, float32 for an
  integer one) is accepted, cast or computed in as torch does, or refused with torch's exception class.
"""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")   # op_db's module imports it

import tracegrad  # noqa: E402
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from _opinfo_helpers import Carrier, Unsupported, _walk, assert_same, call, flat, is_random  # noqa: E402

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-7, atol=1e-7),
       torch.complex64: dict(rtol=1e-4, atol=1e-5), torch.complex128: dict(rtol=1e-7, atol=1e-7)}
# samples per dtype: two for an out of the result's dtype, one for each other case
N_SAMPLES = {"same": 2, "empty": 1, "other_dtype": 1, "long": 1}
# ops whose result values are unspecified (uninitialised memory): shapes and dtypes only
UNINITIALISED = ("empty",)
# (OpInfo id, case) -> what differs from torch; strict xfails (a fix shows up as XPASS)
_TIES = "int64 ties: the index picked among equal values differs from torch's (values equal)"
XFAIL = {
    **{("histogramdd", c): ("harness: histogramdd's out= is (hist, [bin edges]); these cases build one out "
                            "tensor from the result") for c in ("same", "empty", "other_dtype", "long")},
    **{("kthvalue", c): _TIES for c in ("same", "empty", "long")},
    **{("topk", c): _TIES for c in ("same", "empty", "long")},
    **{("nonzero", c): "as_tuple=True with out=: torch raises TypeError (out must be a Tensor); tracegrad writes"
       for c in ("same",)},
    ("nansum", "long"): "int64 with an int64 out: torch raises NotImplementedError (no nansum kernel for Long)",
    ("nanmean", "long"): "int64 with an int64 out: torch raises NotImplementedError (no nansum kernel for Long)",
    ("fft.ifft", "other_dtype"): "a complex128 out: torch's ifft/ihfft insist on complex64, its fft casts",
    ("fft.ihfft", "other_dtype"): "a complex128 out: torch's ifft/ihfft insist on complex64, its fft casts",
    ("linalg.matrix_power", "other_dtype"): "n == 0: torch copies an identity (casting to out); tracegrad asks for "
                                             "out's exact dtype",
    ("nn.functional.linear", "same"): "a 1-d input: torch resizes the out through a 2-d shape and warns",
    ("nn.functional.linear", "long"): "a 1-d input: torch resizes the out through a 2-d shape and warns",
}


def _ops():
    seen, out = set(), []
    for op in op_db:
        if not op.supports_out or any(p.startswith("_") for p in op.name.split(".")):
            continue
        if _walk(torch, op.name) is not op.op or _walk(tracegrad, op.name) is None:
            continue
        key = (op.name, op.variant_test_name)
        if key not in seen:
            seen.add(key)
            out.append((op, f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name))
    return out


def _samples(op, n):
    dtypes = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64):
        if dtype not in dtypes:
            continue
        got = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for s in op.sample_inputs_func(op, "cpu", dtype, False):
                if "out" in s.kwargs or is_random(op.op, s):
                    continue
                try:
                    Carrier()((s.input, s.args, s.kwargs))
                    ref = call(op.op, s)
                except Exception:   # noqa: BLE001 -- samples torch or tracegrad cannot take check nothing
                    continue
                refs = flat(ref)
                if not refs or not all(isinstance(r, torch.Tensor) for r in refs):
                    continue
                yield s, ref
                got += 1
                if got == n:
                    break


def _outs(ref, dtype_of, shape_of):
    """torch out tensors shaped like ``ref`` (a Tensor or a tuple of them)."""
    if isinstance(ref, torch.Tensor):
        return torch.zeros(shape_of(ref), dtype=dtype_of(ref))
    return tuple(torch.zeros(shape_of(r), dtype=dtype_of(r)) for r in ref)


def _to_tg(outs):
    if isinstance(outs, torch.Tensor):
        return tracegrad.tensor(outs.clone().numpy())
    return tuple(_to_tg(o) for o in outs)


def _run(fn, sample, carry, out):
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(carry(sample.input), *carry(tuple(sample.args)), out=out, **carry(dict(sample.kwargs)))
        return r, None, [x for x in w if "resized" in str(x.message)]
    except Unsupported:
        raise
    except Exception as e:   # noqa: BLE001 -- compared with torch's exception class below
        return None, e, []


def _other_dtype(r):
    if r.dtype.is_floating_point:
        return torch.float64 if r.dtype == torch.float32 else torch.float32
    if r.dtype.is_complex:
        return torch.complex128
    return torch.float32


CASES = {
    "same": (lambda r: r.dtype, lambda r: r.shape),
    "empty": (lambda r: r.dtype, lambda r: (0,)),
    "other_dtype": (_other_dtype, lambda r: r.shape),
    "long": (lambda r: torch.int64, lambda r: r.shape),
}


def _params():
    return [pytest.param(op, case, id=f"{name}-{case}",
                         marks=[pytest.mark.xfail(strict=True, reason=XFAIL[name, case])] if (name, case) in XFAIL else [])
            for op, name in _ops() for case in CASES]


@pytest.mark.parametrize("op,case", _params())
def test_out(op, case):
    tg_fn = _walk(tracegrad, op.name)
    checked = 0
    for s, ref in _samples(op, N_SAMPLES[case]):
        t_out = _outs(ref, *CASES[case])
        g_out = _to_tg(t_out)
        t_res, t_err, t_warn = _run(op.op, s, lambda v: v, t_out)
        g_res, g_err, g_warn = _run(tg_fn, s, Carrier(), g_out)
        where = f"{op.name} {case} {s.summary()[:200]}"
        if t_err is not None:
            assert g_err is not None, f"{where}: torch raised {type(t_err).__name__}: {t_err}; tracegrad did not"
            assert isinstance(g_err, type(t_err)), f"{where}: {type(g_err).__name__}: {g_err} (torch: {type(t_err).__name__}: {t_err})"
            checked += 1
            continue
        assert g_err is None, f"{where}: tracegrad raised {type(g_err).__name__}: {g_err}"
        # the out tensors themselves are returned, holding torch's values
        for g, o in zip(flat(g_res), flat(g_out)):
            assert g is o, f"{where}: the result is not the out tensor"
        # an out wider than the result: torch may compute in either dtype, so compare to the result's rounding
        tol = {**TOL, torch.float64: TOL[torch.float32], torch.complex128: TOL[torch.complex64]} \
            if case == "other_dtype" else TOL
        proc = s.output_process_fn_grad
        assert_same(proc(g_out), proc(t_out), tol, values=op.name not in UNINITIALISED, where=where)
        assert len(g_warn) == len(t_warn), f"{where}: resize warnings {len(g_warn)} != torch {len(t_warn)}"
        checked += 1
    if not checked:
        pytest.skip("no sample that carries over")


def _method_ops():
    """OpInfos whose ``torch.<name>`` takes ``out=`` and which are also Tensor methods."""
    return [pytest.param(op, id=name) for op, name in _ops()
            if op.method_variant is not None and hasattr(tracegrad.Tensor, op.name)]


@pytest.mark.parametrize("op", _method_ops())
def test_method_refuses_out(op):
    # torch's Tensor methods take no out= (only the torch.<name> functions do): a TypeError in both
    for s, ref in _samples(op, 1):
        t_err = _run(lambda x, *a, **k: getattr(x, op.name)(*a, **k), s, lambda v: v, _outs(ref, *CASES["same"]))[1]
        assert isinstance(t_err, TypeError), f"torch's Tensor.{op.name} took out= ({t_err!r})"
        g_err = _run(lambda x, *a, **k: getattr(x, op.name)(*a, **k), s, Carrier(), _to_tg(_outs(ref, *CASES["same"])))[1]
        assert isinstance(g_err, TypeError), f"Tensor.{op.name}(..., out=) gave {g_err!r}, torch raises TypeError"
        return
    pytest.skip("no sample that carries over")


@pytest.mark.parametrize("name,args", [
    ("bernoulli", ()), ("multinomial", (2,)), ("inverse", ()), ("cholesky", ()), ("qr", ()), ("svd", ()),
    ("lu", ()), ("cholesky_inverse", ()), ("exp", ()), ("add", ("x",)), ("eq", ("x",)), ("abs", ()),
])
def test_method_refuses_out_draws_and_linalg(name, args):
    for mod in (torch, tracegrad):
        x = mod.eye(3) + 1.0 if name != "multinomial" else mod.ones(3)
        with pytest.raises(TypeError):
            getattr(x, name)(*(x if a == "x" else a for a in args), out=mod.empty(0))


@pytest.mark.parametrize("name,dtype", [("bernoulli", "float64"), ("bernoulli", "int64"), ("multinomial", "int64"),
                                        ("multinomial", "float64"), ("nan_to_num", "float32"), ("nan_to_num", "float64"),
                                        ("baddbmm", "float32"), ("baddbmm", "float64"), ("arcsin", "float64")])
def test_function_out_dtype_rule(name, dtype):
    # the function forms take out=, with torch's dtype rule (any dtype / int64 only / the result's own)
    def run(mod):
        x = mod.full((2, 2, 2), 0.5)
        args = {"multinomial": (mod.ones(3), 2), "baddbmm": (x, x, x)}.get(name, (x,))
        out = mod.zeros(0, dtype=getattr(mod, dtype))
        try:
            r = getattr(mod, name)(*args, out=out)
        except RuntimeError:
            return "RuntimeError", None
        assert r is out
        return None, (tuple(out.shape), str(out.dtype).split(".")[-1])
    assert run(tracegrad) == run(torch)


@pytest.mark.parametrize("make_out", [
    lambda lib, base: base[:2],          # a view too small: resized over its base's storage
    lambda lib, base: base[6:7],         # from its storage offset, up to the storage's end
    lambda lib, base: base,              # a plain tensor shrunk: its other views see the write
    lambda lib, base: base[::2][:4],     # the right shape: written in place as before
], ids=["small-view", "offset-view", "shrunk", "strided"])
def test_out_resized_in_place_over_its_storage(make_out):
    """torch resizes a wrongly shaped ``out`` with ``resize_`` (keeping its storage where it holds
    enough elements), so its base and the other views of that storage see the result, with one
    version bump (the write's)."""
    seen = []
    for lib in (torch, tracegrad):
        base = lib.zeros(10)
        alias = base[:]
        out = make_out(lib, base)
        before = out._version
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = lib.mul(lib.full((4,), 3.0), lib.full((4,), 2.0), out=out)
        assert r is out
        seen.append((base.tolist(), alias.tolist(), tuple(out.shape), out.storage_offset(),
                     out._version - before, len(caught)))
    assert seen[0] == seen[1]
