"""Smaller torch names tracegrad gained: gcd/lcm and the bit shifts (``<<``/``>>`` too),
igamma/igammac and special.gammainc/gammaincc/erfcx/zeta, the queries (is_nonzero,
is_same_size, is_signed), splitting spellings, select/slice/diagonal_scatter, put, unravel_index,
nonzero_static, renorm, chain_matmul, scalar_tensor, float_power_, Tensor.mH/adjoint and
torch.vmap: values, gradients and error classes against torch."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import A, B, C, D, F, I, check_parity, params

torch = pytest.importorskip("torch")

INTS = A(np.array([[4, -6, 0, 7], [12, 9, -15, 1]]))
INTS2 = A(np.array([6, 4, 0, 21]))
SHIFTS = A(np.array([0, 1, 3, 70]))
POS = A(np.array([0.5, 1.0, 2.5, 4.0]), grad=False)

CASES = [
    C("gcd", lambda m, a, b: m.gcd(a, b), [INTS, INTS2]),
    C("lcm", lambda m, a, b: a.lcm(b), [INTS, INTS2]),
    C("gcd_int32_promotes", lambda m, a, b: m.gcd(a.int(), b), [INTS, INTS2]),
    C("gcd_inplace", lambda m, a, b: m.gcd_(a.clone(), b), [INTS, INTS2]),
    C("lcm_method_inplace", lambda m, a, b: a.clone().lcm_(b), [INTS, INTS2]),
    C("gcd_float_raises", lambda m, a, b: m.gcd(a, b), [F(3), F(3)], raises=True),
    C("gcd_scalar_raises", lambda m, a: m.gcd(a, 2), [INTS], raises=True),
    C("left_shift", lambda m, a, s: m.bitwise_left_shift(a, s), [INTS, SHIFTS]),
    C("right_shift", lambda m, a, s: a.bitwise_right_shift(s), [INTS, SHIFTS]),
    C("shift_operators", lambda m, a: (a << 2, a >> 1, 3 << a.abs(), 100 >> a.abs(), a.to(m.uint8) << 1), [INTS]),
    C("shift_bool_promotes", lambda m, b: b << 1, [B(4)]),
    C("shift_inplace_operators", lambda m, a: _ishift(a.clone()), [INTS]),
    C("shift_float_raises", lambda m, a: a << 1, [F(3)], raises=True),
    C("shift_method_float_raises", lambda m, a: m.bitwise_right_shift(a, 1), [F(3)], raises=True),
    C("igamma", lambda m, a, x: m.igamma(a, x), [POS, D(4, lo=0.1, hi=5)], no_grad_fn=False),
    C("igammac_broadcast", lambda m, a, x: m.igammac(a, x), [POS, F(3, 1, lo=0.1, hi=5)]),
    C("special_gammainc", lambda m, a, x: m.special.gammainc(a, x) * m.special.gammaincc(a, x),
      [POS, D(4, lo=0.1, hi=3)]),
    C("igamma_inplace", lambda m, a, x: a.clone().igamma_(x), [POS, D(4, lo=0.1, hi=5)], grad=False),
    C("igamma_int_raises", lambda m, a, b: m.igamma(a, b), [I(3), I(3)], raises=True),
    C("erfcx", lambda m, x: m.special.erfcx(x), [D(5, lo=-2, hi=30)]),
    C("zeta", lambda m, x, q: m.special.zeta(x, q), [A(np.array([2.0, 3.5, 4.0]), grad=False),
                                                      A(np.array([1.0, 2.0, 0.5]), grad=False)]),
    C("zeta_scalar_q", lambda m, x: m.special.zeta(x, 1.0), [A(np.array([2.0, 6.0]), grad=False)]),
    C("is_nonzero", lambda m, x: (m.is_nonzero(x), x.is_nonzero()), [A(np.array([0.0]))], grad=False),
    C("is_nonzero_many_raises", lambda m, x: m.is_nonzero(x), [F(2)], raises=True),
    C("is_nonzero_empty_raises", lambda m, x: x.is_nonzero(), [F(0)], raises=True),
    C("get_device", lambda m, x: (x.get_device(), m.get_device(x)), [F(2)], grad=False),
    C("is_same_size", lambda m, a, b: (m.is_same_size(a, b), a.is_same_size(a)), [F(2, 3), F(3, 2)], grad=False),
    C("is_signed", lambda m, a, b: (a.is_signed(), m.is_signed(b), a.to(m.uint8).is_signed(), (b > 0).is_signed()),
      [I(2), F(2)], grad=False),
    C("scalar_tensor", lambda m: (m.scalar_tensor(3), m.scalar_tensor(2, dtype=m.int64), m.scalar_tensor(True))),
    C("split_with_sizes", lambda m, x: m.split_with_sizes(x, [1, 3, 1], dim=1), [F(2, 5)]),
    C("split_with_sizes_method", lambda m, x: x.split_with_sizes([2, 0, 1]), [F(3, 2)]),
    C("split_with_sizes_bad_raises", lambda m, x: x.split_with_sizes([2, 2]), [F(5)], raises=True),
    C("unsafe_split_chunk", lambda m, x: (*m.unsafe_split(x, 2), *x.unsafe_chunk(2, 1),
                                          *m.unsafe_split_with_sizes(x, [3, 2])), [F(5, 4)], no_grad_fn=True),
    C("select_scatter", lambda m, x, s: m.select_scatter(x, s, 0, 1), [F(3, 4), F(4)], no_grad_fn=True),
    C("select_scatter_neg_dim", lambda m, x, s: x.select_scatter(s, -1, -1), [F(3, 4), F(3)], no_grad_fn=True),
    C("select_scatter_shape_raises", lambda m, x, s: m.select_scatter(x, s, 0, 1), [F(3, 4), F(3)], raises=True),
    C("slice_scatter", lambda m, x, s: m.slice_scatter(x, s, 0, 0, 4, 2), [F(4, 3), F(2, 3)], no_grad_fn=True),
    C("slice_scatter_dim1_defaults", lambda m, x, s: x.slice_scatter(s, dim=1, start=1), [F(2, 4), F(2, 3)],
      no_grad_fn=True),
    C("diagonal_scatter", lambda m, x, s: m.diagonal_scatter(x, s, 1), [F(3, 4), F(3)], no_grad_fn=True),
    C("diagonal_scatter_dims", lambda m, x, s: x.diagonal_scatter(s, -1, 1, 2), [F(2, 3, 3), F(2, 2)], no_grad_fn=True),
    C("put", lambda m, x, s: m.put(x, m.tensor([0, 5, -1]), s), [F(2, 3), F(3)], no_grad_fn=True),
    C("put_accumulate", lambda m, x, s: x.put(m.tensor([[1, 1], [0, 4]]), s, accumulate=True), [F(2, 3), F(2, 2)],
      no_grad_fn=True),
    C("put_inplace", lambda m, x, s: x.clone().put_(m.tensor([2, 0]), s), [F(3), F(2)], no_grad_fn=True),
    C("put_out_of_range_raises", lambda m, x, s: m.put(x, m.tensor([6]), s), [F(2, 3), F(1)], raises=True),
    C("unravel_index", lambda m, i: m.unravel_index(i, (3, 4, 2)), [A(np.array([[0, 5], [23, 17]]))]),
    C("unravel_index_scalar_shape", lambda m, i: m.unravel_index(i, 7), [A(np.array(5))]),
    C("unravel_index_negative", lambda m, i: m.unravel_index(i, (2, 4)), [A(np.array([-1, -8]))]),
    C("unravel_index_float_raises", lambda m, i: m.unravel_index(i, (2, 4)), [F(2)], raises=True),
    C("unravel_index_out_of_range_wraps", lambda m, i: m.unravel_index(i, (2, 4)), [A(np.array([8, 9, -9, -20]))]),
    C("unravel_index_negative_shape_raises", lambda m, i: m.unravel_index(i, (2, -4)), [A(np.array([1]))],
      raises=True),
    C("nonzero_static_pad", lambda m, x: m.nonzero_static(x, size=6), [A(np.array([[0, 1, 0], [2, 0, 3]]))]),
    C("nonzero_static_cut_fill", lambda m, x: x.nonzero_static(size=1, fill_value=-5), [A(np.array([0, 1, 2]))]),
    C("renorm", lambda m, x: m.renorm(x, 2, 0, 1.5), [F(3, 4)], no_grad_fn=True),
    C("renorm_p1_dim1", lambda m, x: x.renorm(1, 1, 2.0), [D(2, 3, 2)], no_grad_fn=True),
    C("renorm_inplace", lambda m, x: x.clone().renorm_(3, 0, 0.5), [F(2, 3)], no_grad_fn=True),
    C("renorm_bad_p_raises", lambda m, x: x.renorm(0, 0, 1.0), [F(2, 2)], raises=True),
    C("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), [F(2, 3), F(3, 4), F(4, 2)], no_grad_fn=True),
    C("chain_matmul_1d_raises", lambda m, a: m.chain_matmul(a, a), [F(3)], raises=True),
    C("float_power_", lambda m, x: x.clone().float_power_(2), [D(3)], no_grad_fn=True),
    C("float_power_float32_raises", lambda m, x: x.float_power_(2), [F(3)], raises=True),
    C("mH_adjoint", lambda m, x: (x.mH, x.adjoint(), m.adjoint(x)), [F(2, 3, 4)], no_grad_fn=True),
    C("mH_complex", lambda m, x: m.view_as_real((x * (1 + 2j)).mH), [D(2, 3)], no_grad_fn=True),
    C("mH_1d_raises", lambda m, x: x.mH, [F(3)], raises=True),
    C("cfloat_cdouble", lambda m, x: (m.view_as_real(x.cfloat()), m.view_as_real(x.cdouble())), [F(2, 3)],
      no_grad_fn=True),
    C("gradient", lambda m, x: m.gradient(x), [F(3, 5)], no_grad_fn=True),
    C("gradient_spacing_edge2", lambda m, x: m.gradient(x, spacing=[0.5, 2.0], edge_order=2), [D(4, 3)],
      no_grad_fn=True),
    C("gradient_coords_dims", lambda m, x, c0, c1: m.gradient(x, spacing=[c1, c0], dim=[1, 0], edge_order=2),
      [D(3, 4), A(np.array([0.0, 1.0, 3.0]), grad=False), A(np.array([0.0, 0.5, 2.0, 2.2]), grad=False)],
      no_grad_fn=True),
    C("gradient_int", lambda m, x: m.gradient(x, dim=0), [I(4, 2, hi=9)]),
    C("gradient_short_raises", lambda m, x: m.gradient(x, edge_order=2), [F(2)], raises=True),
    C("gradient_edge_order_raises", lambda m, x: m.gradient(x, edge_order=3), [F(5)], raises=True),
    C("gradient_spacing_len_raises", lambda m, x: m.gradient(x, spacing=[1.0, 2.0, 3.0]), [F(3, 4)], raises=True),
    *[C(f"index_reduce_{r}", lambda m, x, s, r=r: x.index_reduce(0, m.tensor([0, 2, 0, 1]), s, r), [D(3, 4), D(4, 4)],
        no_grad_fn=True) for r in ("prod", "amin")],
    C("index_reduce_exclude_self_dim1", lambda m, x, s: m.index_reduce(x, 1, m.tensor([0, 3, 3]), s, "mean",
                                                                       include_self=False), [D(3, 4), D(3, 3)],
      no_grad_fn=True),
    C("index_reduce_inplace", lambda m, x, s: x.clone().index_reduce_(0, m.tensor([1, 1]), s, "amax"),
      [D(3, 2), D(2, 2)], no_grad_fn=True),
    C("index_reduce_bad_reduce_raises", lambda m, x, s: x.index_reduce(0, m.tensor([0]), s, "sum"), [F(2, 2), F(1, 2)],
      raises=True),
]


def _ishift(a):
    a <<= 2
    a >>= 1
    return a


@params(CASES)
def test_more_names_parity(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # chain_matmul's deprecation, index_reduce's beta warning (torch)
        check_parity(case, torch)


def test_vmap_is_func_vmap():
    assert tracegrad.vmap is tracegrad.func.vmap
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    got = tracegrad.vmap(lambda r: (r * r).sum())(tracegrad.tensor(x))
    want = torch.vmap(lambda r: (r * r).sum())(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_legacy_tensor_new():
    for mod in (torch, tracegrad):
        x = mod.ones(2, dtype=mod.float64)
        assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype == mod.float64
        assert tuple(x.new(mod.Size([1, 2])).shape) == (1, 2) and tuple(x.new().shape) == (0,)
        np.testing.assert_array_equal(x.new([1, 2]).numpy(), [1.0, 2.0])
        np.testing.assert_array_equal(mod.ones(1, dtype=mod.int64).new([1.7, -2.5]).numpy(), [1, -2])
        with pytest.raises(TypeError):
            x.new(mod.ones(2))


def test_legacy_constructors_take_a_size_as_sizes():
    """``FloatTensor(x.size())`` (VRNN's noise buffer) is a tensor of that shape; a plain tuple
    stays data."""
    for mod in (torch, tracegrad):
        size = mod.ones(4, 3).size()
        for ctor, dtype in ((mod.FloatTensor, mod.float32), (mod.LongTensor, mod.int64), (mod.Tensor, mod.float32)):
            t = ctor(size)
            assert tuple(t.shape) == (4, 3) and t.dtype == dtype
        assert tuple(mod.Tensor(mod.Size([])).shape) == () == tuple(mod.ones(2).new(mod.Size([])).shape)
        np.testing.assert_array_equal(mod.FloatTensor((4, 3)).numpy(), [4.0, 3.0])


def test_chain_matmul_warns(fresh_warn_once):
    # once per process, as torch's TORCH_WARN_ONCE
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        tracegrad.chain_matmul(tracegrad.ones(2, 2), tracegrad.ones(2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracegrad.chain_matmul(tracegrad.ones(2, 2), tracegrad.ones(2, 2))
