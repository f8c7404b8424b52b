"""tracegrad.quasirandom.SobolEngine against torch's: unscrambled points, state and bookkeeping
exactly; scrambled points by their properties (torch draws its scrambling from its own
generator, so the values differ)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dimension", [1, 3, 40, 21201])
def test_unscrambled_points_match_torch(dimension):
    ours, ref = tracegrad.quasirandom.SobolEngine(dimension), torch.quasirandom.SobolEngine(dimension)
    np.testing.assert_array_equal(ours.sobolstate.numpy(), ref.sobolstate.numpy())
    n = 33 if dimension < 1000 else 3
    np.testing.assert_array_equal(ours.draw(n).numpy(), ref.draw(n).numpy())
    np.testing.assert_array_equal(ours.draw(5, dtype=tracegrad.float64).numpy(), ref.draw(5, dtype=torch.float64).numpy())
    np.testing.assert_array_equal(ours.quasi.numpy(), ref.quasi.numpy())
    assert ours.num_generated == ref.num_generated


def test_bookkeeping_matches_torch():
    ours, ref = tracegrad.quasirandom.SobolEngine(5), torch.quasirandom.SobolEngine(5)
    steps = [("draw", 1), ("fast_forward", 6), ("draw", 3), ("reset", None), ("fast_forward", 2), ("draw", 2),
             ("draw", 0), ("reset", None), ("draw_base2", 3), ("draw_base2", 3)]
    for name, arg in steps:
        a = getattr(ours, name)(*(() if arg is None else (arg,)))
        b = getattr(ref, name)(*(() if arg is None else (arg,)))
        if name.startswith("draw"):
            assert a.dtype == tracegrad.float32
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        else:
            assert a is ours
        assert ours.num_generated == ref.num_generated
        np.testing.assert_array_equal(ours.quasi.numpy(), ref.quasi.numpy())
    out = tracegrad.empty(0)
    assert ours.reset().draw(4, out=out) is out
    np.testing.assert_array_equal(out.numpy(), ref.reset().draw(4).numpy())
    with pytest.raises(ValueError, match="power of 2"):
        ours.draw_base2(1)                          # 4 + 2 points: not a power of 2
    with pytest.raises(ValueError, match="dimensionality"):
        tracegrad.quasirandom.SobolEngine(0)
    with pytest.raises(ValueError, match="dimensionality"):
        tracegrad.quasirandom.SobolEngine(21202)
    assert repr(tracegrad.quasirandom.SobolEngine(3, scramble=True, seed=4)) == repr(
        torch.quasirandom.SobolEngine(3, scramble=True, seed=4))


def test_scrambled_is_a_seeded_digital_net():
    a = tracegrad.quasirandom.SobolEngine(4, scramble=True, seed=1).draw_base2(8).numpy()
    b = tracegrad.quasirandom.SobolEngine(4, scramble=True, seed=1).draw_base2(8).numpy()
    c = tracegrad.quasirandom.SobolEngine(4, scramble=True, seed=2).draw_base2(8).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert ((a >= 0) & (a < 1)).all()
    plain = tracegrad.quasirandom.SobolEngine(4).draw_base2(8).numpy()
    assert not np.array_equal(a, plain)
    # a scrambled (t, m, s)-net keeps Sobol's stratification: each coordinate puts one point in
    # every interval [i / 256, (i + 1) / 256), and each pair of the first coordinates one point in
    # every 16 x 16 cell
    for d in range(4):
        assert sorted(np.floor(a[:, d] * 256).astype(int).tolist()) == list(range(256))
    cells = np.floor(a[:, 0] * 16).astype(int) * 16 + np.floor(a[:, 1] * 16).astype(int)
    assert sorted(cells.tolist()) == list(range(256))
