"""``repr(tensor)`` must equal torch's with ``torch.`` replaced by ``tracegrad.`` (one line per
case: a program building a tensor from fixed data on either module)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

_rs = np.random.RandomState(0)
_N = _rs.standard_normal((4, 5)).astype(np.float32)

CASES = [
    ("floats", lambda t: t.tensor([1.5, -2.25, 3.0])),
    ("integral_floats", lambda t: t.tensor([1.0, 2.0, -3.0])),
    ("ints", lambda t: t.tensor([1, -20, 300])),
    ("bools", lambda t: t.tensor([True, False])),
    ("scalar_float", lambda t: t.tensor(3.25)),
    ("scalar_int", lambda t: t.tensor(7)),
    ("scalar_bool", lambda t: t.tensor(True)),
    ("scalar_neg", lambda t: t.tensor(-0.5)),
    ("zero_float", lambda t: t.tensor(0.0)),
    ("matrix", lambda t: t.tensor(_N)),
    ("matrix_int", lambda t: t.arange(12).reshape(3, 4)),
    ("cube", lambda t: t.tensor(_N[:4, :4].reshape(2, 2, 4))),
    ("cube_int", lambda t: t.arange(24).reshape(2, 3, 4)),
    ("rank4", lambda t: t.arange(16.).reshape(2, 2, 2, 2)),
    ("negative", lambda t: t.tensor([-1.5, -0.001, -100.0])),
    ("big", lambda t: t.tensor([1e10, 2.0])),
    ("small", lambda t: t.tensor([1e-5, 2e-6])),
    ("wide_range", lambda t: t.tensor([1e-3, 1e3, 1.0])),
    ("big_integral", lambda t: t.tensor([1e8, 1.0])),
    ("nan_inf", lambda t: t.tensor([float("nan"), float("inf"), -float("inf"), 1.5])),
    ("all_nan", lambda t: t.tensor([float("nan")])),
    ("requires_grad", lambda t: t.tensor([1.0, 2.0], requires_grad=True)),
    ("grad_fn", lambda t: t.tensor([1.0, 2.0], requires_grad=True) * 2),
    ("grad_fn_scalar", lambda t: (t.tensor([1.0, 2.0], requires_grad=True) * 2).sum()),
    ("float64", lambda t: t.tensor([1.5, 2.0], dtype=t.float64)),
    # a suffix that would pass 80 columns goes on its own line (char_rnn_classification's printed output)
    ("grad_fn_wraps", lambda t: t.log_softmax(t.tensor([[-1.66, -1.6, -1.64, -1.58, -1.56]], requires_grad=True), 1)),
    ("dtype_wraps", lambda t: t.arange(12, dtype=t.int32).reshape(2, 6) * 1000),
    ("two_suffixes_wrap", lambda t: t.tensor([[1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]], dtype=t.float64,
                                             requires_grad=True) * 2),
    ("grad_fn_fits", lambda t: t.tensor([[-1.66, -1.6]], requires_grad=True) * 2),
    ("float64_grad", lambda t: t.tensor([1.5], dtype=t.float64, requires_grad=True)),
    ("float16", lambda t: t.tensor([1.5, 2.0], dtype=t.float16)),
    ("bfloat16", lambda t: t.tensor([1.5, 2.0], dtype=t.bfloat16)),
    ("int32", lambda t: t.tensor([1, 2], dtype=t.int32)),
    ("uint8", lambda t: t.tensor([1, 255], dtype=t.uint8)),
    ("int8_scalar", lambda t: t.tensor(-3, dtype=t.int8)),
    ("empty", lambda t: t.tensor([])),
    ("empty_2d", lambda t: t.zeros(0, 3)),
    ("empty_int", lambda t: t.zeros(0, dtype=t.int64)),
    ("empty_f64_2d", lambda t: t.zeros(2, 0, dtype=t.float64)),
    ("long_row", lambda t: t.arange(30.) / 7),
    ("long_int_row", lambda t: t.arange(100) * 1000),
    ("summarized", lambda t: t.arange(2000.)),
    ("summarized_2d", lambda t: t.arange(3000).reshape(100, 30)),
    ("summarized_small", lambda t: t.arange(1500.) / 1000),
    ("summarized_3d", lambda t: t.arange(2400).reshape(8, 10, 30)),
    ("sci_row_wrap", lambda t: t.tensor([1e-5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])),
    ("int_mode_ratio", lambda t: t.tensor([1.0, 5000.0])),
    ("just_1e8", lambda t: t.tensor([1e8, 2e7])),
    ("mixed_width", lambda t: t.tensor([[1.0, -10.5], [100.25, 0.0]])),
    ("precision", lambda t: t.tensor([0.123456789, 1.0 / 3])),
]


@pytest.mark.parametrize("name,build", CASES, ids=[c[0] for c in CASES])
def test_repr(name, build):
    want = repr(build(torch)).replace("torch.", "tracegrad.")
    got = repr(build(tracegrad))
    assert got == want, f"\n--- tracegrad\n{got}\n--- torch\n{want}"


# a dtype suffix counts as long as torch's name for it: the line breaks where torch's does
# (tracegrad.float64 is 4 characters longer than torch.float64; this one ends at column 77)
WRAP_EDGE = [
    ("float64_grad_at_edge", {}, lambda t: t.tensor([[0.2797, 0.2817, 0.9156], [-0.7889, -1.2830, -0.7138]],
                                                     dtype=t.float64, requires_grad=True)),
    ("uint8_narrow", {"linewidth": 40}, lambda t: t.tensor([1, 2, 3], dtype=t.uint8)),
    ("float16_precision10", {"precision": 10}, lambda t: t.tensor(_N[:2, :3], dtype=t.float16)),
]
# a forced notation (sci_mode=True/False) sets the column width as well as the notation
SCI_MODE = [
    ("sci_large", {"sci_mode": True}, lambda t: t.tensor(_N[:2] * 1e5)),
    ("sci_unit", {"sci_mode": True}, lambda t: t.tensor(_N[:2])),
    ("sci_nan", {"sci_mode": True}, lambda t: t.tensor([1.5, float("nan"), float("inf"), -float("inf")])),
    ("sci_summarized", {"sci_mode": True}, lambda t: t.tensor(np.resize(_N, (40, 40)))),
    ("sci_float64", {"sci_mode": True}, lambda t: t.tensor(_N[:3, :3], dtype=t.float64)),
    ("sci_zeros", {"sci_mode": True}, lambda t: t.zeros(3)),
    ("sci_complex", {"sci_mode": True}, lambda t: t.tensor([[1 + 2j, 0.5 - 3j]])),
    ("plain_small", {"sci_mode": False}, lambda t: t.tensor(_N[0] * 1e-5)),
    ("plain_wide", {"sci_mode": False}, lambda t: t.tensor([100.0, 1.0, 0.01])),
    ("plain_huge", {"sci_mode": False}, lambda t: t.tensor([1e-10, 1.0, 1e10])),
    ("plain_scalar", {"sci_mode": False}, lambda t: t.tensor(1e-20)),
]


@pytest.mark.parametrize("name,opts,build", WRAP_EDGE + SCI_MODE, ids=[c[0] for c in WRAP_EDGE + SCI_MODE])
def test_repr_under_printoptions(name, opts, build):
    reprs = []
    for mod in (torch, tracegrad):
        mod.set_printoptions(**opts)
        try:
            reprs.append(repr(build(mod)))
        finally:
            mod.set_printoptions(profile="default")
    want, got = reprs[0].replace("torch.", "tracegrad."), reprs[1]
    assert got == want, f"\n--- tracegrad\n{got}\n--- torch\n{want}"


def test_printed_class_names():
    """``print(type(t))`` names the package's class as torch's does (``<class 'torch.Tensor'>``;
    so do a Size, dtype, device, finfo and iinfo; a grad_fn's is <class 'MulBackward0'>), and ``linalg.slogdet``'s result prints as torch's ``return_types.linalg_slogdet``."""
    def names(mod):
        a = mod.tensor([[2.0, 0.0], [0.0, 3.0]])
        g = (a.requires_grad_() * 2).sum().grad_fn
        types = [type(o) for o in (a, a.shape, a.dtype, a.device, mod.finfo(a.dtype), mod.iinfo(mod.int8), g,
                                   g.next_functions[0][0], g.next_functions[0][0].next_functions[0][0])]
        return [str(t) for t in types] + [repr(mod.linalg.slogdet(a)), repr(mod.slogdet(a))]
    assert [s.replace("tracegrad", "torch") for s in names(tracegrad)] == names(torch)


def test_format_of_zero_dim_tensors():
    """``format``/f-strings: a plain 0-d tensor formats as its number (any spec); a 0-d
    Parameter, a subclass or a meta tensor formats as its str, and a spec is torch's TypeError
    (``f"bias: {p}"`` prints ``Parameter containing:...``)."""
    def formats(mod):
        class Sub(mod.Tensor):
            pass
        p, s = mod.nn.Parameter(mod.tensor(1.5)), mod.tensor(2.5).as_subclass(Sub)
        out = [f"{mod.tensor(3.25, requires_grad=True):.1f}", f"{mod.tensor(7):4d}", f"{p}", f"{s}",
               f"{mod.empty((), device='meta')}"]
        for spec in (".2f", ">8"):
            for x in (p, s, mod.tensor([1.5])):
                try:
                    out.append(format(x, spec))
                except TypeError as e:
                    out.append(("TypeError", str(e)))
        return out
    assert [o if isinstance(o, tuple) else o.replace("tracegrad", "torch") for o in formats(tracegrad)] == formats(torch)
