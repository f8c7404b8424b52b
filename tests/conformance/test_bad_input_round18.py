"""Bad-input parity, round 18 (in-place kernels and dtypes): a probe over ~2,200 wrong calls
(every unary and binary elementwise op out of place and in place on bool, integer, uint8,
float16 and complex tensors; reductions, shape ops, dims and indices out of range; nn layers fed
the wrong rank, channels, dtype or mask; in-place casts and broadcasting; no-grad misuse) left
these differences from torch 2.13, fixed here: the in-place rounding ops, ``frac_``, ``sign_``
and ``relu_`` of a complex tensor (torch has no complex kernel: NotImplementedError; tracegrad
gave a generic RuntimeError, and ``sign_``/``relu_`` wrote a result); a complex ``other`` into a
real self for ``atan2_``/``copysign_``/``hypot_``/``nextafter_``/``xlogy_``/``igamma_``/
``clamp_min_``/``clamp_max_`` (torch checks the cast first: RuntimeError, where tracegrad gave
the kernel's NotImplementedError) and ``ldexp_`` (silently dropped the imaginary part);
``igamma_``/``igammac_`` of integer or bool tensors (torch computes in the integer dtype, which
has no kernel: NotImplementedError, was the cast's RuntimeError); ``pow_`` of a bool tensor by a
bool tensor and ``addcmul``/``addcmul_`` of three bool tensors (NotImplementedError, the last
computed a result); ``mvlgamma`` of a bool tensor (RuntimeError, was a result);
``F.hardtanh_`` of a bool (RuntimeError) or complex (NotImplementedError) tensor (a result, or a
generic error); a bool clamp: torch runs one tensor bound (a max/min; tracegrad refused it) and
refuses two tensor bounds (``clamp_cpu``; ``clamp_`` wrote a result) and number bounds
(``clamp_min_scalar_cpu``/``clamp_max_scalar_cpu``; ``clamp_``/``clamp_max`` wrote a result);
``cumsum_``/``cumprod_`` of a bool tensor (NotImplementedError, was the cast's RuntimeError);
``index_reduce`` of a complex tensor (NotImplementedError, was a result for 'mean'); and
``scatter_add``/``put(accumulate=True)`` of bool tensors, which torch computes (a sum that
saturates at True) and tracegrad failed in the words of its op layer. Each call
runs under torch (the oracle) and tracegrad: the same exception class (or none), no text of the
layers below tracegrad; ``_ok`` calls are ones torch accepts."""
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class, outcome

torch = pytest.importorskip("torch")


def _b(T):
    return T.tensor([True, False])


def _i(T):
    return T.tensor([1, 2])


def _f(T):
    return T.tensor([0.5, 0.25])


def _c(T):
    return T.tensor([1 + 1j, 2.])


CASES = {}
# in-place unaries of a complex tensor: no complex kernel in torch, as out of place
for _op in ("floor_", "ceil_", "trunc_", "fix_", "frac_", "sign_", "relu_"):
    CASES[f"{_op}(complex)"] = (lambda op: lambda T: getattr(_c(T), op)())(_op)
CASES["relu_(bool)"] = lambda T: _b(T).relu_()
CASES["sign_(bool)_ok"] = lambda T: _b(T).sign_()
CASES["sgn_(complex)_ok"] = lambda T: _c(T).sgn_()
CASES["floor_(int)_ok"] = lambda T: _i(T).floor_()
# a complex other into a real self: the cast's RuntimeError comes before the kernel's dtype check
for _op in ("atan2_", "arctan2_", "copysign_", "hypot_", "nextafter_", "xlogy_", "igamma_", "igammac_",
            "clamp_min_", "clamp_max_", "ldexp_"):
    CASES[f"{_op}(float, complex)"] = (lambda op: lambda T: getattr(_f(T), op)(_c(T)))(_op)
CASES["atan2_(int, float)"] = lambda T: _i(T).atan2_(_f(T))
CASES["hypot_(bool, float)"] = lambda T: _b(T).hypot_(_f(T))
CASES["copysign_(float, int)_ok"] = lambda T: _f(T).copysign_(_i(T))
CASES["ldexp_(float, int)_ok"] = lambda T: _f(T).ldexp_(_i(T))
# igamma_/igammac_ compute in self's integer dtype: no kernel
for _op in ("igamma_", "igammac_"):
    CASES[f"{_op}(int, int)"] = (lambda op: lambda T: getattr(_i(T), op)(_i(T)))(_op)
    CASES[f"{_op}(bool, bool)"] = (lambda op: lambda T: getattr(_b(T), op)(_b(T)))(_op)
    CASES[f"{_op}(uint8, int)"] = (lambda op: lambda T: getattr(_i(T).to(T.uint8), op)(_i(T)))(_op)
    CASES[f"{_op}(int, float)"] = (lambda op: lambda T: getattr(_i(T), op)(_f(T)))(_op)
    CASES[f"{_op}(float, int)_ok"] = (lambda op: lambda T: getattr(_f(T), op)(_i(T)))(_op)
# bool kernels torch does not have
CASES.update({
    "pow_(bool, bool tensor)": lambda T: _b(T).pow_(_b(T)),
    "pow(bool, bool tensor)": lambda T: T.pow(_b(T), _b(T)),
    "pow_(bool, True)_ok": lambda T: _b(T).pow_(True),
    "pow_(bool, 2)": lambda T: _b(T).pow_(2),
    "addcmul(bool x3)": lambda T: T.addcmul(_b(T), _b(T), _b(T)),
    "addcmul(bool x3, value=True)": lambda T: T.addcmul(_b(T), _b(T), _b(T), value=True),
    "addcmul_(bool x3)": lambda T: _b(T).addcmul_(_b(T), _b(T), value=2),
    "addcmul_(bool, int, int)": lambda T: _b(T).addcmul_(_i(T), _i(T)),
    "addcmul(float, bool, bool)_ok": lambda T: T.addcmul(_f(T), _b(T), _b(T)),
    "addcmul(bool, bool, float)_ok": lambda T: T.addcmul(_b(T), _b(T), _f(T)),
    "mvlgamma(bool)": lambda T: T.mvlgamma(_b(T), 1),
    "mvlgamma_(bool)": lambda T: _b(T).mvlgamma_(1),
    "mvlgamma(int)_ok": lambda T: T.mvlgamma(_i(T), 2),
    "F.hardtanh_(bool)": lambda T: T.nn.functional.hardtanh_(_b(T)),
    "F.hardtanh_(complex)": lambda T: T.nn.functional.hardtanh_(_c(T)),
    "F.hardtanh_(int)_ok": lambda T: T.nn.functional.hardtanh_(_i(T)),
    # bool clamps: one tensor bound is a max/min (a bool kernel), the other forms have none
    "clamp(bool, bool, bool)": lambda T: T.clamp(_b(T), _b(T), _b(T)),
    "clamp_(bool, bool, bool)": lambda T: _b(T).clamp_(_b(T), _b(T)),
    "clip_(bool, bool, bool)": lambda T: _b(T).clip_(_b(T), _b(T)),
    "clamp_(bool, True)": lambda T: _b(T).clamp_(True),
    "clamp(bool, max=True)": lambda T: T.clamp(_b(T), max=True),
    "clamp_max(bool, True)": lambda T: T.clamp_max(_b(T), True),
    "clamp_min(bool, False)": lambda T: T.clamp_min(_b(T), False),
    "clamp(bool, min=bool)_ok": lambda T: T.clamp(_b(T), min=_b(T)),
    "clamp(bool, None, bool)_ok": lambda T: T.clamp(_b(T), None, _b(T)),
    "clamp_(bool, max=bool)_ok": lambda T: _b(T).clamp_(max=_b(T)),
    "clamp(bool, 0, 1)_ok": lambda T: T.clamp(_b(T), 0, 1),
    # scans into a bool self, and index_reduce's real-only kernel
    "cumsum_(bool)": lambda T: _b(T).cumsum_(0),
    "cumprod_(bool)": lambda T: _b(T).cumprod_(0),
    "cumsum_(int)_ok": lambda T: _i(T).cumsum_(0),
    "index_reduce_(complex, mean)": lambda T: _c(T).index_reduce_(0, T.tensor([0]), _c(T)[:1], "mean"),
    "index_reduce(complex, amax)": lambda T: _c(T).index_reduce(0, T.tensor([0]), _c(T)[:1], "amax"),
    "index_reduce(bool, prod)": lambda T: _b(T).index_reduce(0, T.tensor([0]), _b(T)[:1], "prod"),
    # bool sums that torch computes
    "scatter_add(bool)_ok": lambda T: _b(T).scatter_add(0, T.tensor([1, 1]), T.tensor([True, True])),
    "scatter_add_(bool)_ok": lambda T: _b(T).scatter_add_(0, T.tensor([1, 1]), T.tensor([True, True])),
    "put_(bool, accumulate)_ok": lambda T: _b(T).put_(T.tensor([1, 1]), T.tensor([True, True]), accumulate=True),
    "put(bool, accumulate)_ok": lambda T: T.put(_b(T), T.tensor([1]), T.tensor([False]), accumulate=True),
})


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)
    if name.endswith("_ok"):
        assert outcome(CASES[name], tracegrad)[0] is None


GIST = {
    "floor_(complex)": "floor is not supported for complex inputs",
    "fix_(complex)": "trunc is not supported for complex inputs",
    "frac_(complex)": "\"frac_cpu\" not implemented for 'ComplexFloat'",
    "sign_(complex)": "sign is not intended to support complex numbers",
    "relu_(complex)": "clamp is not supported for complex types",
    "hypot_(float, complex)": "result type ComplexFloat can't be cast to the desired output type Float",
    "ldexp_(float, complex)": "result type ComplexFloat can't be cast to the desired output type Float",
    "igamma_(float, complex)": "result type ComplexFloat can't be cast to the desired output type Float",
    "igamma_(int, int)": "\"igamma_cpu\" not implemented for 'Long'",
    "igammac_(bool, bool)": "\"igammac_cpu\" not implemented for 'Bool'",
    "igamma_(uint8, int)": "\"igamma_cpu\" not implemented for 'Long'",
    "pow_(bool, bool tensor)": "\"pow\" not implemented for 'Bool'",
    "addcmul(bool x3)": "\"addcmul_cpu_out\" not implemented for 'Bool'",
    "addcmul_(bool x3)": "\"addcmul_cpu_out\" not implemented for 'Bool'",
    "mvlgamma(bool)": "may not be a boolean tensor",
    "F.hardtanh_(bool)": "Bool inputs not supported for hardtanh",
    "F.hardtanh_(complex)": "clamp is not supported for complex types",
    "clamp_(bool, bool, bool)": "\"clamp_cpu\" not implemented for 'Bool'",
    "clamp_(bool, True)": "\"clamp_min_scalar_cpu\" not implemented for 'Bool'",
    "clamp_max(bool, True)": "\"clamp_max_scalar_cpu\" not implemented for 'Bool'",
    "cumsum_(bool)": "\"cumsum_out_cpu\" not implemented for 'Bool'",
    "index_reduce_(complex, mean)": "\"index_func_\" not implemented for 'ComplexFloat'",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_refused_writes_leave_self_unchanged_and_accepted_ones_match_torch():
    for T in (torch, tracegrad):
        # a refused in-place call writes nothing and does not bump the version
        for op, args in (("sign_", ()), ("relu_", ()), ("ldexp_", (_c(T),))):
            z = _c(T) if not args else _f(T)
            before, v = z.tolist(), z._version
            with pytest.raises((NotImplementedError, RuntimeError)):
                getattr(z, op)(*args)
            assert z.tolist() == before and z._version == v, (T.__name__, op)
        # the calls torch accepts give its values and dtypes
        s = _c(T).sgn_()
        assert [(round(v.real, 4), round(v.imag, 4)) for v in s.tolist()] == [(0.7071, 0.7071), (1.0, 0.0)]
        assert _f(T).ldexp_(_i(T)).tolist() == [1.0, 1.0]
        assert _f(T).copysign_(T.tensor([-1, 2])).tolist() == [-0.5, 0.25]
        a = T.addcmul(_b(T), _b(T), _f(T))
        assert a.dtype == T.float32 and a.tolist() == [1.5, 0.0]
        assert T.addcmul(_f(T), _b(T), _b(T), value=2).tolist() == [2.5, 0.25]
        assert _b(T).pow_(True).tolist() == [True, False] and _b(T).pow_(False).tolist() == [True, True]
        g = _f(T).igamma_(_i(T))
        want = torch.igamma(_f(torch), _i(torch).float())
        assert [round(v, 5) for v in g.tolist()] == [round(v, 5) for v in want.tolist()]
        # bool clamps by one tensor bound, and bool sums, saturate as torch's
        assert T.clamp(_b(T), min=T.tensor([False, True])).tolist() == [True, True]
        assert T.clamp(_b(T), max=T.tensor([False, True])).tolist() == [False, False]
        assert _b(T).scatter_add(0, T.tensor([1, 1]), T.tensor([True, True])).tolist() == [True, True]
        p = T.tensor([False, False, True]).put_(T.tensor([0, 0, 2]), T.tensor([True, True, True]), accumulate=True)
        assert p.dtype == T.bool and p.tolist() == [True, False, True]
        m = T.mvlgamma(_i(T) + 1, 2)
        assert m.dtype == T.float32
        assert [round(v, 4) for v in m.tolist()] == [round(v, 4) for v in torch.mvlgamma(_i(torch) + 1, 2).tolist()]
