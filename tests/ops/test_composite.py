"""torch functions composed of other tracegrad functions (_api/composite.py) against torch:
values, dtypes, shapes and gradients; the data-dependent ones as graph breaks in a compiled
function."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _run(mod, fn, arrays, grad):
    ts = [mod.tensor(a, requires_grad=grad and np.asarray(a).dtype.kind == "f") if isinstance(a, np.ndarray) else a
          for a in arrays]
    out = fn(mod, *ts)
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    gs = []
    if grad:
        total = sum((o.double() * mod.tensor(np.random.RandomState(i).randn(*tuple(o.shape)))).sum()
                    for i, o in enumerate(flat) if o.is_floating_point() and o.requires_grad)
        total.backward()
        gs = [None if t.grad is None else t.grad.numpy() for t in ts if isinstance(t, mod.Tensor) and t.requires_grad]
    return [(o.detach().numpy(), str(o.dtype).split(".")[-1], tuple(o.shape)) for o in flat], gs


def F(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def I(*shape, hi=5, seed=0):
    return np.random.RandomState(seed).randint(0, hi, size=shape).astype(np.int64)


CASES = [
    ("tile", lambda m, a: m.tile(a, (2, 1, 3)), [F(2, 3)], True),
    ("tile_fewer", lambda m, a: a.tile((2,)), [F(2, 3)], True),
    ("atleast_1d", lambda m, a: m.atleast_1d(a), [np.array(3.0, np.float32)], False),
    ("atleast_2d_seq", lambda m, a, b: m.atleast_2d((a, b)), [F(3), F(2, 2)], True),
    ("atleast_3d", lambda m, a, b, c: m.atleast_3d(a, b, c), [F(3), F(2, 2), F(1, 2, 3)], True),
    ("column_stack", lambda m, a, b: m.column_stack([a, b]), [F(3), F(3, 2)], True),
    ("dstack", lambda m, a, b: m.dstack([a, b]), [F(2, 3), F(2, 3, seed=1)], True),
    ("deg2rad", lambda m, a: m.deg2rad(a), [F(4)], True),
    ("deg2rad_int", lambda m, a: m.deg2rad(a), [I(4, hi=360)], False),
    ("rad2deg", lambda m, a: a.rad2deg(), [F(4)], True),
    ("logaddexp", lambda m, a, b: m.logaddexp(a, b), [F(5) * 30, F(5, seed=1) * 30], True),
    ("logaddexp_inf", lambda m, a, b: m.logaddexp(a, b),
     [np.array([-np.inf, np.inf, 1.0], np.float32), np.array([-np.inf, np.inf, -np.inf], np.float32)], False),
    ("xlogy", lambda m, a, b: m.xlogy(a, b), [np.array([0.0, 1.0, 2.0, 0.0], np.float32),
                                              np.array([0.0, 2.0, 3.0, np.nan], np.float32)], False),
    ("xlogy_grad", lambda m, a, b: a.xlogy(b), [F(4), np.abs(F(4, seed=1)) + 0.5], True),
    ("nan_to_num", lambda m, a: m.nan_to_num(a), [np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)], False),
    ("nan_to_num_args", lambda m, a: a.nan_to_num(1.0, 2.0, -2.0), [np.array([np.nan, np.inf, -np.inf, 1.5])], False),
    ("diff", lambda m, a: m.diff(a), [F(3, 5)], True),
    ("diff_n2_dim0_prepend", lambda m, a, p: m.diff(a, n=2, dim=0, prepend=p), [F(3, 4), F(1, 4, seed=2)], True),
    ("diff_bool", lambda m, a: m.diff(a > 0), [F(6)], False),
    # n=0: a copy of the input, prepend/append ignored (torch)
    ("diff_n0_prepend", lambda m, a, p: m.diff(a, n=0, dim=0, prepend=p, append=p), [F(3, 4), F(1, 4, seed=2)], True),
    ("isin", lambda m, a, b: m.isin(a, b), [I(3, 4, hi=6), I(3, hi=6, seed=1)], False),
    ("isin_invert_scalar", lambda m, a: m.isin(a, 2, invert=True), [I(5, hi=4)], False),
    ("kron", lambda m, a, b: m.kron(a, b), [F(2, 3), F(3, 2, seed=1)], True),
    ("kron_nd", lambda m, a, b: a.kron(b), [F(2), F(2, 3, seed=1)], True),
    ("tensordot", lambda m, a, b: m.tensordot(a, b, dims=2), [F(2, 3, 4), F(3, 4, 5, seed=1)], True),
    ("tensordot_lists", lambda m, a, b: m.tensordot(a, b, dims=([0, 2], [1, 0])), [F(4, 3, 2), F(2, 4, 5, seed=1)], True),
    # no dims contracted and none left: the library permutes by an empty list (not ``permute()``)
    # a contracted dim of size 1 broadcasts against the other's (torch sums that one first)
    ("tensordot_size1_dims", lambda m, a, b: m.tensordot(a, b, dims=((0, 1), (2, 0))), [F(1, 1, 1), F(2, 1, 2, seed=1)], True),
    ("tensordot_0d", lambda m, a, b: m.tensordot(a, b, dims=0), [np.array(1.5, np.float32), np.array(-2.0, np.float32)], True),
    ("inner", lambda m, a, b: m.inner(a, b), [F(2, 3), F(4, 3, seed=1)], True),
    ("rot90", lambda m, a: m.rot90(a), [F(2, 3, 4)], True),
    ("rot90_k3_dims", lambda m, a: a.rot90(3, [1, 2]), [F(2, 3, 4)], True),
    ("rot90_k2", lambda m, a: m.rot90(a, -2), [F(2, 3)], True),
    ("cartesian_prod", lambda m, a, b, c: m.cartesian_prod(a, b, c), [I(2), I(3, seed=1), I(2, seed=2)], False),
    ("tril_indices", lambda m: m.tril_indices(4, 3, -1), [], False),
    ("triu_indices", lambda m: m.triu_indices(3, 5, 1), [], False),
    ("unique", lambda m, a: m.unique(a, return_inverse=True, return_counts=True), [I(3, 4, hi=4)], False),
    ("unique_dim", lambda m, a: a.unique(dim=0), [I(5, 2, hi=2)], False),
    ("bincount", lambda m, a: m.bincount(a, minlength=7), [I(10, hi=5)], False),
    ("bincount_weights", lambda m, a, w: a.bincount(w), [I(10, hi=5), F(10)], False),
    ("searchsorted", lambda m, s, v: m.searchsorted(s, v), [np.sort(F(6)), F(3, 4, seed=1)], False),
    ("searchsorted_right_batched", lambda m, s, v: m.searchsorted(s, v, right=True),
     [np.sort(F(2, 5), axis=1), F(2, 3, seed=1)], False),
    ("searchsorted_int32_side", lambda m, s, v: m.searchsorted(s, v, out_int32=True, side="right"),
     [np.array([1, 2, 2, 3]), np.array([2, 0, 4])], False),
    ("bucketize", lambda m, v, b: m.bucketize(v, b), [F(3, 4), np.array([-1.0, 0.0, 1.0], np.float32)], False),
    ("hypot", lambda m, a, b: m.hypot(a, b), [F(5), F(5, seed=1)], True),
    ("copysign", lambda m, a, b: m.copysign(a, b.detach()), [F(5), np.array([1.0, -1.0, 0.0, -0.0, 2.0], np.float32)], True),
    ("copysign_int_scalar", lambda m, a: a.copysign(-1.0), [I(4)], False),
    ("heaviside", lambda m, a, v: m.heaviside(a, v), [np.array([-1.0, 0.0, 2.0], np.float32), np.array([0.5], np.float32)], False),
    ("sinc", lambda m, a: m.sinc(a), [np.array([0.0, 0.5, -1.3, 2.0], np.float32)], True),
    ("float_power", lambda m, a, b: m.float_power(a, b), [F(4), F(4, seed=1)], True),
    ("float_power_int_scalar", lambda m, a: a.float_power(2), [I(4)], False),
]


@pytest.mark.parametrize("name,fn,arrays,grad", CASES, ids=[c[0] for c in CASES])
def test_composite_matches_torch(name, fn, arrays, grad):
    (ref, gref), (got, ggot) = _run(torch, fn, arrays, grad), _run(tracegrad, fn, arrays, grad)
    assert len(ref) == len(got)
    for (rv, rd, rs), (gv, gd, gs) in zip(ref, got):
        assert (gd, gs) == (rd, rs), name
        np.testing.assert_allclose(gv, rv, rtol=1e-5, atol=1e-6, err_msg=name)
    for r, g in zip(gref, ggot):
        assert (r is None) == (g is None), name + " grad"
        if r is not None:
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=name + " grad")


def test_bad_inputs_raise_as_torch():
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError):
            mod.bincount(mod.tensor([-1, 2]))
        with pytest.raises(RuntimeError):
            mod.bincount(mod.tensor([[1, 2]]))
        with pytest.raises(RuntimeError, match="different dtypes"):
            mod.heaviside(mod.tensor([1.0]), mod.tensor([1]))


def test_data_dependent_ones_run_eagerly_when_compiled():
    f = tracegrad.compile(lambda x: tracegrad.unique(x) * 2)
    x = tracegrad.tensor([3, 1, 3, 2])
    for _ in range(3):
        assert f(x).tolist() == [2, 4, 6]
    assert f.stats["graph_breaks"]
    g = tracegrad.compile(lambda s, v: tracegrad.searchsorted(s, v) + 1)
    s, v = tracegrad.tensor([0.0, 1.0, 2.0]), tracegrad.tensor([0.5, 1.5, 3.0])
    for _ in range(3):
        assert g(s, v).tolist() == [2, 3, 4]
    assert not g.stats["graph_breaks"] and g.stats["traces"] == 1
