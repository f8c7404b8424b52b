"""Where several elements tie for a max/min, torch's gradient goes to a definite element (the
one its indices name, or ``self`` for fmax/fmin), or is split as JAX does (amax, maximum).
Each case runs in torch and tracegrad on integer-valued data (many ties) and compares values,
indices and the gradient of a random weighting."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

CASES = {
    "max_pool2d": lambda M, t: M.nn.functional.max_pool2d(t, 2),
    "max_pool2d_overlapping": lambda M, t: M.nn.functional.max_pool2d(t, 3, 1),
    "adaptive_max_pool1d": lambda M, t: M.nn.functional.adaptive_max_pool1d(t.flatten(2), 5, return_indices=True),
    "adaptive_max_pool2d": lambda M, t: M.nn.functional.adaptive_max_pool2d(t, (3, 5), return_indices=True),
    "adaptive_max_pool2d_unbatched": lambda M, t: M.nn.functional.adaptive_max_pool2d(t[0], (5, 3), return_indices=True),
    "adaptive_max_pool3d": lambda M, t: M.nn.functional.adaptive_max_pool3d(t, (2, 3, None), return_indices=True),
    "AdaptiveMaxPool2d": lambda M, t: M.nn.AdaptiveMaxPool2d((4, 4), return_indices=True)(t),
    "amax": lambda M, t: t.amax(-1), "max_dim": lambda M, t: t.max(-1), "max": lambda M, t: t.max(),
    "median_dim": lambda M, t: t.median(-1), "maximum": lambda M, t: M.maximum(t, t.flip(-1)),
    "fmax": lambda M, t: M.fmax(t, t.flip(-1)), "fmin": lambda M, t: M.fmin(t, t.flip(-2)),
    "cummax": lambda M, t: t.cummax(-1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tied_values_indices_and_gradient_match_torch(name):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (2, 3, 7, 8)).astype(np.float32)
    if name in ("fmax", "fmin"):
        x[0, 0, 0, :3] = np.nan          # NaN on one side only, on both sides
        x[0, 0, 0, -1] = np.nan
    w = rng.standard_normal(4000).astype(np.float32)
    got = []
    for M in (torch, tracegrad):
        t = M.tensor(x, requires_grad=True)
        out = CASES[name](M, t)
        values, indices = (out[0], out[1]) if isinstance(out, tuple) else (out, None)
        values.backward(M.tensor(w[:values.numel()].reshape(tuple(values.shape))))
        got.append((values.detach().numpy(), None if indices is None else indices.numpy(), t.grad.numpy(),
                    type(values.grad_fn).__name__))
    (va, ia, ga, na), (vb, ib, gb, nb) = got
    np.testing.assert_array_equal(vb, va)
    if ia is not None:
        np.testing.assert_array_equal(ib, ia)
        assert ib.dtype == np.int64
    np.testing.assert_allclose(gb, ga, rtol=1e-6, atol=1e-6)
    assert nb == na
