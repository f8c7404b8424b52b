"""A number converted to a floating tensor's dtype by a fill or a bound (c10's checked
conversion): torch raises RuntimeError for a finite value beyond the dtype's largest one
(``full((2,), 1e40)``), lets nan and inf through, and gives inf where the conversion is
unchecked (``tensor([1e40])``, ``where``, the one-element float16 fill). tracegrad must raise
and pass exactly where torch does."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

# (value, dtype name): around each dtype's largest value, infinities, nan, complex parts
VALUES = [(65504.0, "float16"), (65504.5, "float16"), (-65505.0, "float16"), (1e5, "float16"),
          (3.3895313892515355e38, "bfloat16"), (3.39e38, "bfloat16"), (3.4028234663852886e38, "float32"),
          (3.40283e38, "float32"), (-1e40, "float32"), (float("inf"), "float16"), (float("nan"), "float32"),
          (1e300, "float64"), (complex(1, 1e40), "complex64"), (complex(1e39, 0), "complex64"), (70000, "float16")]
SHAPES = [(2,), (1,), (0,), ()]


def _outcome(fn):
    try:
        out = fn()
    except RuntimeError as e:
        assert "without overflow" in str(e), str(e)
        return "raise"
    return [str(v) for v in out.reshape(-1).tolist()]


def _fills(M, value, dt, shape):
    d = getattr(M, dt)
    return {
        "full": lambda: M.full(shape, value, dtype=d),
        "fill_": lambda: M.zeros(shape, dtype=d).fill_(value),
        "full_like": lambda: M.full_like(M.zeros(shape, dtype=d), value),
        "new_full": lambda: M.zeros(3, dtype=d).new_full(shape, value),
    }


def _scalar_uses(M, value, dt):
    d = getattr(M, dt)
    x, mask = M.zeros(2, dtype=d), M.tensor([True, False])
    uses = {
        "masked_fill": lambda: x.masked_fill(mask, value),
        "masked_fill_": lambda: x.clone().masked_fill_(mask, value),
        "index_fill": lambda: x.index_fill(0, M.tensor([0]), value),
        "scatter": lambda: x.scatter(0, M.tensor([0]), value),
        "scatter_": lambda: x.clone().scatter_(0, M.tensor([1]), value),
        "where": lambda: M.where(mask, x, value),
        "tensor": lambda: M.tensor([value], dtype=d),
    }
    if not isinstance(value, complex):
        uses["clamp_max"] = lambda: x.clamp(max=value)
        uses["clamp_min"] = lambda: x.clamp(min=-value if value == value else value)
    return uses


def test_fills_raise_where_torch_does():
    for value, dt in VALUES:
        for shape in SHAPES:
            theirs, ours = _fills(torch, value, dt, shape), _fills(tracegrad, value, dt, shape)
            for name in theirs:
                if isinstance(value, complex) and name != "full" and not dt.startswith("complex"):
                    continue
                want, got = _outcome(theirs[name]), _outcome(ours[name])
                assert got == want, f"{name}{shape} value={value} dtype={dt}: {got} != torch {want}"


def test_scalar_arguments_raise_where_torch_does():
    for value, dt in VALUES:
        theirs, ours = _scalar_uses(torch, value, dt), _scalar_uses(tracegrad, value, dt)
        for name in theirs:
            want, got = _outcome(theirs[name]), _outcome(ours[name])
            assert got == want, f"{name} value={value} dtype={dt}: {got} != torch {want}"


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_lerp_16bit_computes_in_float32(dt):
    """lerp on 16-bit floats computes in float32 and rounds once (torch's opmath): a number
    weight beyond float16's range is a finite weight there (no nan), and ordinary weights give
    torch's digits; a 16-bit tensor weight holds inf, as torch's."""
    a = [1.0, 2.0, -3.5, 0.125, 7.0]
    b = [1.0, 2.5, 4.0, -0.375, 7.0]
    for w in (1e5, 70000.0, 0.3, 0.77, -2.0):
        for weight in (lambda M: w, lambda M: M.tensor(w).to(getattr(M, dt))):
            want, got = (M.lerp(M.tensor(a, dtype=getattr(M, dt)), M.tensor(b, dtype=getattr(M, dt)), weight(M))
                         for M in (torch, tracegrad))
            assert [str(v) for v in got.float().tolist()] == [str(v) for v in want.float().tolist()], (w, dt)
