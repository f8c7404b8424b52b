"""Parity of Tensor metadata and conversions, ``__setitem__``, in-place ops, version
counters and view/storage sharing with torch (one line per case)."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import A, B, C, D, F, I, check_parity, params

torch = pytest.importorskip("torch")

META = [
    C("shape", lambda t, x: (x.shape, x.size(), x.size(1), x.size(-1), x.shape[1:]), [F(2, 3, 4)]),
    C("size_repr", lambda t, x: repr(x.size()).replace("torch", "tracegrad"), [F(2, 3)]),
    C("size_numel", lambda t, x: (x.size().numel(), len(x.size()), x.size() == (2, 3)), [F(2, 3)]),
    C("size_bad_dim", lambda t, x: x.size(2), [F(2, 3)], raises=True),
    C("dim", lambda t, x: (x.dim(), x.ndim, x.numel(), x.nelement(), x.ndimension()), [F(2, 3, 4)]),
    C("dim_0d", lambda t, x: (x.dim(), x.numel(), x.shape), [F()]),
    C("item_float", lambda t, x: x.item(), [F()]),
    C("item_int", lambda t, x: x.item(), [A(np.int64(7))]),
    C("item_bool", lambda t, x: x.item(), [A(np.bool_(True))]),
    C("item_1elem", lambda t, x: x.item(), [F(1, 1)]),
    C("item_many_raises", lambda t, x: x.item(), [F(3)], raises=True),
    C("tolist", lambda t, x: x.tolist() == x.detach().numpy().tolist(), [F(2, 3)]),
    C("tolist_int", lambda t, x: x.tolist(), [A([[1, 2], [3, 4]])]),
    C("tolist_0d", lambda t, x: x.tolist(), [A(np.int64(3))]),
    C("numpy_requires_grad_raises", lambda t, x: x.numpy(), [F(3)], raises=True),
    C("numpy_detach", lambda t, x: t.tensor(x.detach().numpy()), [F(3)]),
    C("numpy_dtype", lambda t, x: str(x.numpy().dtype), [A([1, 2], grad=False)]),
    C("len", lambda t, x: len(x), [F(4, 3)]),
    C("len_0d_raises", lambda t, x: len(x), [F()], raises=True),
    C("iter", lambda t, x: list(x), [F(3, 2)]),
    C("iter_0d_raises", lambda t, x: list(x), [F()], raises=True),
    C("bool_1", lambda t, x: bool(x), [A([0.0])]),
    C("bool_many_raises", lambda t, x: bool(x), [F(2)], raises=True),
    C("float_conv", lambda t, x: float(x), [F(1)]),
    C("int_conv", lambda t, x: int(x), [A([3.7])]),
    C("float_many_raises", lambda t, x: float(x), [F(2)], raises=True),
    C("int_many_raises", lambda t, x: int(x), [F(2)], raises=True),
    C("index_conv", lambda t, x: [10, 20, 30][x], [A(np.int64(2))]),
    C("index_float_raises", lambda t, x: [10, 20, 30][x], [A(np.float32(1.0), grad=False)], raises=True),
    C("array", lambda t, x: t.tensor(np.asarray(x) * 2), [A([1.0, 2.0], grad=False)]),
    C("array_dtype", lambda t, x: str(np.asarray(x, dtype=np.float64).dtype), [A([1, 2])]),
    C("is_leaf", lambda t, x: (x.is_leaf, (x * 2).is_leaf, x.detach().is_leaf, x.requires_grad), [F(3)]),
    C("requires_grad_int_raises", lambda t, x: x.requires_grad_(), [I(3)], raises=True),
    C("is_floating_point", lambda t, x, y: (x.is_floating_point(), y.is_floating_point(), t.is_tensor(x), t.is_tensor(1)), [F(2), I(2)]),
    C("element_size", lambda t, x, y: (x.element_size(), y.element_size()), [F(2), I(2)]),
]


def _setitem(key, value=None):
    """``y = x.clone(); y[key] = value`` (value: a number, or the second input)."""
    def fn(t, x, *v):
        y = x.clone()
        y[key(t) if callable(key) else key] = v[0] if v else value
        return y
    return fn


_X = F(4, 5)
SETITEM = [
    C("set_int", _setitem(1, 2.0), [_X]),
    C("set_int_tensor_value", _setitem(1), [_X, F(5)]),
    C("set_int_int", _setitem((1, 2), -1.0), [_X]),
    C("set_slice", _setitem(slice(1, 3), 0.5), [_X]),
    C("set_slice_step", _setitem((slice(None, None, 2), slice(1, None)), 7.0), [_X]),
    C("set_slice_neg", _setitem((slice(-2, None), -1), 3.0), [_X]),
    C("set_slice_value_bcast", _setitem((slice(0, 2),)), [_X, F(5)]),
    C("set_none", _setitem((None, 1), 4.0), [_X]),
    C("set_ellipsis", _setitem((Ellipsis, 0), 1.0), [_X]),
    C("set_all", _setitem(Ellipsis), [_X, F(4, 5)]),
    C("set_all_scalar", _setitem(Ellipsis, 2.0), [_X]),
    C("set_full_slice", _setitem(slice(None), 2.0), [_X]),
    C("set_full_slice_tensor", _setitem((slice(None), slice(None))), [_X, F(5)]),
    C("set_none_only", _setitem(None, 1.0), [_X]),
    C("set_full_slice_tensor_idx", _setitem(lambda t: (slice(None), t.tensor([0, 1])), 0.0), [_X]),
    C("set_none_tensor_idx", _setitem(lambda t: (None, t.tensor([0, 1])), 0.0), [_X]),
    C("set_int_tensor_idx", _setitem(lambda t: (1, t.tensor([0, 3]))), [_X, F(2)]),
    C("set_int_list", _setitem(([0, 2],), 9.0), [_X]),
    C("set_int_tensor", _setitem(lambda t: t.tensor([3, 1])), [_X, F(2, 5)]),
    C("set_two_tensors", _setitem(lambda t: (t.tensor([0, 3]), t.tensor([1, 4]))), [_X, F(2)]),
    C("set_tensor_slice", _setitem(lambda t: (t.tensor([0, 2]), slice(1, 3)), 0.0), [_X]),
    C("set_bool_mask", _setitem(lambda t: t.tensor([True, False, True, False]), -2.0), [_X]),
    C("set_bool_mask_2d", _setitem(lambda t: t.arange(20).reshape(4, 5) % 3 == 0, 0.0), [_X]),
    C("set_bool_mask_values", _setitem(lambda t: t.tensor([True, False, False, True])), [_X, F(2, 5)]),
    # one mask and a 0-d value tensor (its gradient: the sum over the written positions)
    C("set_bool_mask_0d_value", _setitem(lambda t: t.tensor([True, False, False, True])), [_X, F()]),
    C("set_bool_mask_2d_0d_value", _setitem(lambda t: t.arange(20).reshape(4, 5) % 3 == 0), [_X, F()]),
    C("set_bool_mask_0d_value_cast", _setitem(lambda t: t.arange(20).reshape(4, 5) > 7), [_X, D()]),
    C("set_bool_mask_int", _setitem(lambda t: t.arange(20).reshape(4, 5) > 10, 3), [I(4, 5, hi=9)]),
    C("set_bool_mask_int_large", _setitem(lambda t: t.arange(20).reshape(4, 5) > 10, 2 ** 40), [I(4, 5, hi=9)]),
    C("set_int_into_float", _setitem(0, 3), [_X]),
    C("set_into_int", lambda t, x: (x.__setitem__(0, 2.7), x)[1], [I(3, 2)]),
    C("set_out_of_range", _setitem(4, 0.0), [_X], raises=True),
    C("set_shape_mismatch", _setitem(0), [_X, F(3)], raises=True),
    # the value's leading size-1 dims are dropped before it is broadcast (numpy's rule)
    C("set_int_leading_ones", _setitem(1), [_X, F(1, 1, 5)]),
    C("set_int_int_leading_ones", _setitem((1, 2)), [_X, F(1, 1)]),
    C("set_slice_leading_ones", _setitem(slice(0, 2)), [_X, F(1, 2, 5)]),
    C("set_all_leading_ones", _setitem(Ellipsis), [_X, F(1, 4, 5)]),
    C("set_int_tensor_leading_ones", _setitem(lambda t: t.tensor([3, 1])), [_X, F(1, 2, 5)]),
    C("set_bool_mask_leading_ones", _setitem(lambda t: t.tensor([True, False, False, True])), [_X, F(1, 1, 2, 5)]),
    C("set_leading_non_one_raises", _setitem(1), [_X, F(2, 5)], raises=True),
    C("set_leaf_raises", lambda t, x: x.__setitem__(0, 1.0), [F(3)], raises=True),
    C("set_version", lambda t, x: (x.__setitem__(0, 1.0), x.__setitem__(slice(1, 2), 2.0), x._version)[2], [A([1., 2., 3.], grad=False)]),
]


def _inplace(method, *args, pre=None):
    """``y = pre(x.clone()); y.<method>_(*args); return y`` -- history rebased onto the op."""
    def fn(t, x, *rest):
        y = x.clone() if pre is None else pre(x.clone())
        a = [r for r in rest] + [a(t) if callable(a) else a for a in args]
        getattr(y, method)(*a)
        return y, y._version
    return fn


POS = dict(lo=0.5, hi=2.0)
def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


INPLACE = [
    C("add_", _inplace("add_", 1.5), [F(3, 4)]),
    C("add_tensor_", _inplace("add_"), [F(3, 4), F(4)]),
    C("sub_", _inplace("sub_"), [F(3, 4), F(3, 4)]),
    C("mul_", _inplace("mul_", 2.0), [F(3, 4)]),
    C("mul_tensor_", _inplace("mul_"), [F(3, 4), F(3, 4)]),
    C("div_", _inplace("div_", 4.0), [F(3, 4)]),
    C("div_tensor_", _inplace("div_"), [F(3, 4), F(3, 4, **POS)]),
    C("pow_", _inplace("pow_", 2.0), [F(3, 4)]),
    C("clamp_", _inplace("clamp_", -0.5, 0.5), [F(3, 4)]),
    C("clamp_min_", lambda t, x: x.clone().clamp_(min=0.0), [F(3, 4)]),
    C("fill_", _inplace("fill_", 3.0), [F(3, 4)]),
    C("fill_tensor_", _inplace("fill_"), [F(3, 4), F()]),
    C("fill_tensor_dims_raises", _inplace("fill_"), [F(3, 4), F(2)], raises=True),
    C("zero_", _inplace("zero_"), [F(3, 4)]),
    C("copy_", _inplace("copy_"), [F(3, 4), F(3, 4)]),
    C("copy_bcast_", _inplace("copy_"), [F(3, 4), F(4)]),
    C("copy_bad_shape", _inplace("copy_"), [F(3, 4), F(3)], raises=True),
    C("masked_fill_", _inplace("masked_fill_", -1.0), [F(3, 4), B(3, 4)]),
    C("exp_", _inplace("exp_"), [F(3, 4)]),
    C("relu_", _inplace("relu_"), [F(3, 4)]),
    C("sigmoid_", _inplace("sigmoid_"), [F(3, 4)]),
    C("tanh_", _inplace("tanh_"), [F(3, 4)]),
    C("neg_", _inplace("neg_"), [F(3, 4)]),
    C("abs_", _inplace("abs_"), [F(3, 4)]),
    C("sqrt_", _inplace("sqrt_"), [F(3, 4, **POS)]),
    C("scatter_", _inplace("scatter_", 1, lambda t: t.tensor([[0, 1], [2, 3], [1, 0]])), [F(3, 4)], no_grad_fn=False),
    C("scatter_src_", lambda t, x, s: x.clone().scatter_(1, t.tensor([[0, 1], [2, 3], [1, 0]]), s), [F(3, 4), F(3, 2)]),
    C("scatter_add_", lambda t, x, s: x.clone().scatter_add_(0, t.tensor([[0, 1, 2, 0]]), s), [F(3, 4), F(1, 4)]),
    C("index_add_", lambda t, x, s: x.clone().index_add_(0, t.tensor([0, 2]), s, alpha=2), [F(3, 4), F(2, 4)]),
    C("index_put_", lambda t, x, v: x.clone().index_put_((t.tensor([1, 0]),), v), [F(3, 4), F(2, 4)]),
    C("index_put_acc_", lambda t, x, v: x.clone().index_put_((t.tensor([1, 1]),), v, accumulate=True), [F(3, 4), F(2, 4)]),
    # torch's deprecated alpha-first overloads (old tutorials' p.data.add_(-lr, p.grad.data)); warnings: below
    C("add_alpha_first_", lambda t, x, y: _quiet(lambda: x.clone().add_(-0.5, y)), [F(3, 4), F(3, 4)]),
    C("sub_alpha_first_", lambda t, x, y: _quiet(lambda: x.clone().sub_(2, y)), [F(3, 4), F(4)]),
    C("add_alpha_first", lambda t, x, y: _quiet(lambda: x.add(-0.5, y)), [F(3, 4), F(3, 4)]),
    C("torch_add_alpha_first", lambda t, x, y: _quiet(lambda: t.add(x, 3, y)), [F(3, 4), F(4)]),
    C("sub_alpha_first", lambda t, x, y: _quiet(lambda: x.sub(0.25, y)), [F(3, 4), F(3, 4)]),
    C("add_extra_positional_raises", lambda t, x, y: x.add(y, 2.0), [F(3), F(3)], raises=True),
    C("add__extra_positional_raises", lambda t, x, y: x.clone().add_(y, 2.0), [F(3), F(3)], raises=True),
    C("mul__extra_positional_raises", lambda t, x, y: x.clone().mul_(2.0, y), [F(3), F(3)], raises=True),
    C("addcmul_", lambda t, x, a, b: x.clone().addcmul_(a, b, value=0.5), [F(3, 4), F(3, 4), F(4)]),
    C("addcdiv_", lambda t, x, a, b: x.clone().addcdiv_(a, b), [F(3, 4), F(3, 4), F(3, 4, **POS)]),
    C("lerp_", lambda t, x, e: x.clone().lerp_(e, 0.25), [F(3, 4), F(3, 4)]),
    C("clamp_tensor_", lambda t, x, lo: x.clone().clamp_(min=lo), [F(3, 4), F(3, 4)]),
    C("pow_tensor_", lambda t, x, e: x.clone().pow_(e), [F(3, 4, **POS), F(3, 4)]),
    C("masked_fill_tensor_", lambda t, x, m, v: x.clone().masked_fill_(m, v), [F(3, 4), B(3, 4), F()]),
    C("floor_", _inplace("floor_"), [F(3, 4)]),
    C("sin_", _inplace("sin_"), [F(3, 4)]),
    C("transpose_", lambda t, x: (lambda y: (y.transpose_(0, 1), y.shape, y))(x.detach().clone())[1:], [F(3, 4)]),
    C("unsqueeze_", lambda t, x: (lambda y: (y.unsqueeze_(0), y.shape, y._version))(x.detach().clone())[1:], [F(3, 4)]),
    C("squeeze_", lambda t, x: (lambda y: (y.squeeze_(), y.shape))(x.detach().clone())[1], [F(1, 4)]),
    C("int_inplace_float_op", lambda t, x: x.clone().mul_(2), [I(3)]),
    C("chain_", lambda t, x: x.clone().add_(1).mul_(2).exp_(), [F(3, 4)]),
    C("iadd", lambda t, x: (lambda y: (y.__iadd__(1.0), y._version))(x * 1)[0], [F(3)]),
    C("imul_tensor", lambda t, x, z: (lambda y: y.__imul__(z))(x * 1), [F(3), F(3)]),
    C("leaf_inplace_raises", lambda t, x: x.add_(1), [F(3)], raises=True),
    C("leaf_view_inplace_raises", lambda t, x: x[0].add_(1), [F(3)], raises=True),
    C("leaf_inplace_no_grad_ok", lambda t, x: (t.no_grad().__enter__(), x.add_(1), t.set_grad_enabled(True))[1], [F(3)], grad=False),
    C("view_write_copyslices", lambda t, x: (lambda y: (y[0].mul_(2), y)[1])(x.clone()), [F(3, 4)]),
    C("view_write_view_gradfn", lambda t, x: (lambda y, v: (v.mul_(2), v, y)[1:])(*(lambda y: (y, y[:, 1]))(x.clone())), [F(3, 4)]),
    C("transpose_view_write", lambda t, x: (lambda y: (y.t()[0].fill_(1.0), y)[1])(x.clone()), [F(3, 4)]),
    C("expand_inplace_raises", lambda t, x: x.detach().expand(3, 4).add_(1), [F(3, 1)], raises=True),
    C("t_", lambda t, x: (lambda y: (y.t_(), y.shape, y._version, y))(x.detach().clone()), [F(3, 4)]),
]

VIEWS = [
    C("version_counts", lambda t, x: (lambda a: (a._version, a.add_(1)._version, a.mul_(2)._version,
                                                  a.zero_()._version))(x.detach().clone()), [F(3)]),
    C("view_write_base", lambda t, x: (lambda a: (a[1].fill_(2.0), a, a._version, a[1]._version))(x.detach().clone())[1:], [F(3, 4)]),
    C("view_shares_version", lambda t, x: (lambda a, v: (a.add_(1), v._version, v))(*(lambda a: (a, a.view(-1)))(x.detach().clone()))[1:], [F(3, 4)]),
    C("detach_shares", lambda t, x: (lambda a: (a.detach().zero_(), a, a._version))(x * 1)[1:], [F(3)], grad=False),
    C("detach_fill_changes_base", lambda t, x: (lambda a: (a.detach().fill_(10.0), a))(x.detach().clone())[1], [F(3)]),
    C("data_own_counter", lambda t, x: (lambda a, d: (d.add_(1), a, a._version, d._version))(*(lambda a: (a, a.data))(x * 1))[1:], [F(3)], grad=False),
    C("slice_view_chain", lambda t, x: (lambda a: (a[1:][0].fill_(5.0), a))(x.detach().clone())[1], [F(3, 4)]),
    C("unsqueeze_view_write", lambda t, x: (lambda a: (a.unsqueeze(0)[0, 1].fill_(5.0), a))(x.detach().clone())[1], [F(3, 4)]),
    C("narrow_view_write", lambda t, x: (lambda a: (a.narrow(1, 1, 2).zero_(), a))(x.detach().clone())[1], [F(3, 4)]),
    C("split_view_write", lambda t, x: (lambda a: (a.split(2)[1].fill_(3.0), a))(x.detach().clone())[1], [F(4, 2)]),
    C("permute_view_write", lambda t, x: (lambda a: (a.permute(1, 0)[2].fill_(3.0), a))(x.detach().clone())[1], [F(3, 4)]),
    C("is_view", lambda t, x: (x._base is None, x[0]._base is x, x.view(-1)._base is x, x.clone()._base is None), [F(3, 4)]),
]


@params(META + SETITEM + INPLACE + VIEWS)
def test_parity(case):
    check_parity(case, torch)


def test_random_inplace():
    import tracegrad
    x = tracegrad.zeros(2000)
    x.normal_(1.0, 2.0)
    assert x._version == 1
    v = x.numpy()
    assert abs(v.mean() - 1.0) < 0.2 and abs(v.std() - 2.0) < 0.2
    x.uniform_(-1.0, 3.0)
    v = x.numpy()
    assert v.min() >= -1.0 and v.max() < 3.0 and abs(v.mean() - 1.0) < 0.15
    assert x._version == 2
    # writes through a view change the base
    y = tracegrad.zeros(4, 5)
    y[1].normal_()
    assert (y[1] != 0).all() and (y[0] == 0).all() and (y[2:] == 0).all()


@pytest.mark.parametrize("call", [lambda t, x, y: x.add(2.0, y), lambda t, x, y: t.sub(x, 2.0, y),
                                  lambda t, x, y: x.add_(2, y), lambda t, x, y: x.sub_(2.0, y)])
def test_alpha_first_overload_warns(call, fresh_warn_once):
    """tracegrad warns as torch does (torch warns once per process, so only tracegrad is checked here)."""
    import tracegrad
    with pytest.warns(UserWarning, match="deprecated"):
        call(tracegrad, tracegrad.ones(2), tracegrad.ones(2))


VALUE_FIRST = [   # torch's deprecated addcmul/addcdiv(Number value, tensor1, tensor2), old optimizers
    C("addcmul_value_first", lambda t, x, a, b: _quiet(lambda: t.addcmul(x, 0.5, a, b)), [F(3), F(3), F(3)]),
    C("addcdiv_value_first", lambda t, x, a, b: _quiet(lambda: x.addcdiv(-2, a, b)), [F(3), F(3), F(3, **POS)]),
    C("addcmul__value_first", lambda t, x, a: _quiet(lambda: x.clone().mul_(0.9).addcmul_(0.1, a, a)), [F(3), F(3)]),
    C("addcdiv__value_first", lambda t, x, a, b: _quiet(lambda: x.clone().addcdiv_(-0.1, a, b)), [F(3), F(3), F(3, **POS)]),
    C("addcmul_three_tensors_raises", lambda t, x, a: x.addcmul(a, a, a), [F(3), F(3)], raises=True),
]


@params(VALUE_FIRST)
def test_value_first_overload(case):
    check_parity(case, torch)


BETA_FIRST = [   # torch's deprecated addmm(Number beta, [Number alpha,] mat1, mat2): old re-id code's
    # dist.addmm_(1, -2, x, x.t()); the function form puts beta before input. grad_fn names are not
    # compared where tracegrad composes the op (AddBackward0) or writes in place through copy_
    C("addmm__beta_alpha_first", lambda t, d, x: _quiet(lambda: d.clone().addmm_(1, -2, x, x.t())), [F(3, 3), F(3, 2)], no_grad_fn=True),
    C("addmm_beta_first", lambda t, d, x, y: _quiet(lambda: d.addmm(0.5, x, y)), [F(3, 3), F(3, 2), F(2, 3)]),
    C("torch_addmm_beta_input_alpha", lambda t, d, x: _quiet(lambda: t.addmm(0.5, d, -2, x, x.t())), [F(3, 3), F(3, 2)]),
    C("addmm_0d_tensor_beta", lambda t, d, x: _quiet(lambda: d.addmm(t.tensor(0.5), x, x.t())), [F(3, 3), F(3, 2)]),
    C("baddbmm__beta_first", lambda t, d, a, b: _quiet(lambda: d.clone().baddbmm_(2, a, b)), [F(2, 3, 3), F(2, 3, 2), F(2, 2, 3)], no_grad_fn=True),
    C("torch_addbmm_beta_first", lambda t, d, a, b: _quiet(lambda: t.addbmm(0.5, d, 2, a, b)), [F(3, 3), F(2, 3, 2), F(2, 2, 3)], no_grad_fn=True),
    C("addmv_beta_alpha_first", lambda t, v, m, w: _quiet(lambda: v.addmv(0.5, -2, m, w)), [F(3), F(3, 2), F(2)], no_grad_fn=True),
    C("addr__beta_first", lambda t, d, v, w: _quiet(lambda: d.clone().addr_(3, v, w)), [F(3, 2), F(3), F(2)], no_grad_fn=True),
    C("addmm_trailing_beta_raises", lambda t, d, x: d.addmm(x, x.t(), 0.5), [F(3, 3), F(3, 2)], raises=True),
    C("addmm_keyword_and_positional_beta_raises", lambda t, d, x: _quiet(lambda: d.addmm(0.5, x, x.t(), beta=2)),
      [F(3, 3), F(3, 2)], raises=True),
    # the function form has beta before input only: the method's order is a TypeError there
    C("torch_addmm_input_then_beta_raises", lambda t, d, x: _quiet(lambda: t.addmm(d, 0.5, x, x.t())), [F(3, 3), F(3, 2)],
      raises=True),
    C("torch_baddbmm_input_then_beta_alpha_raises", lambda t, d, a, b: _quiet(lambda: t.baddbmm(d, 2, 1, a, b)),
      [F(2, 3, 3), F(2, 3, 2), F(2, 2, 3)], raises=True),
    C("torch_addr_input_then_beta_raises", lambda t, d, v, w: _quiet(lambda: t.addr(d, 3, v, w)), [F(3, 2), F(3), F(2)],
      raises=True),
]


@params(BETA_FIRST)
def test_beta_first_overload(case):
    check_parity(case, torch)


@pytest.mark.parametrize("name", ["addmm", "addmm_"])
def test_beta_first_overload_warns(name, fresh_warn_once):
    x = tracegrad.ones(2, 2)
    # torch names the method called: "addmm_" for the in-place one
    with pytest.warns(UserWarning, match=f"overload of {name} is deprecated"):
        getattr(x, name)(1, -2, tracegrad.ones(2, 2), tracegrad.ones(2, 2))


def test_deprecated_overloads_warn_once_per_process(fresh_warn_once):
    """torch warns about its deprecated signatures from one TORCH_WARN_ONCE site: the first use of
    any of them warns (at the caller's line), later ones of any op stay silent unless
    set_warn_always(True)."""
    import warnings
    for mod in (torch, tracegrad):
        x = mod.ones(2, 2)
        x.add_(1, x)      # the process's first (in torch maybe not: another test's) warning
        was = mod.is_warn_always_enabled()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                x.addmm_(1, -2, x, x)
                x.addcmul_(0.5, x, x)
                x.sub_(2, x)
                quiet = len(caught)
                mod.set_warn_always(True)
                x.baddbmm(0.5, x[None], x[None])
        finally:
            mod.set_warn_always(was)
        assert quiet == 0, mod.__name__
        assert len(caught) == 1 and "overload of baddbmm is deprecated" in str(caught[0].message), mod.__name__
        assert caught[0].filename == __file__, (mod.__name__, caught[0].filename)


@pytest.mark.parametrize("name", ["addcmul", "addcmul_", "addcdiv", "addcdiv_"])
def test_value_first_overload_warns(name, fresh_warn_once):
    x = tracegrad.ones(2)
    with pytest.warns(UserWarning, match=f"overload of {name} is deprecated"):
        getattr(x, name)(2, tracegrad.ones(2), tracegrad.ones(2))


NUMPY_LEFT = [
    C("np_float64_mul", lambda t, x: np.float64(2.5) * x, [F(3)]),
    C("np_float32_add", lambda t, x: np.float32(2.0) + x, [F(3)]),
    C("np_int64_sub", lambda t, x: np.int64(3) - x, [F(3)]),
    C("np_float64_div", lambda t, x: np.float64(1.5) / x, [F(3, lo=0.5, hi=2.0)]),
    C("np_float64_pow", lambda t, x: np.float64(2.0) ** x, [F(3)]),
    C("np_float64_gt", lambda t, x: np.float64(0.1) > x, [F(3)], grad=False),
    C("ndarray_mul_raises", lambda t, x: np.ones(3) * x, [F(3)], raises=True),
    C("ndarray_0d_add_raises", lambda t, x: np.array(2.0) + x, [F(3)], raises=True),
    C("ndarray_matmul_raises", lambda t, x: np.ones((2, 2)) @ x, [F(2, 2)], raises=True),
    # torch: == with an ndarray (either side) is elementwise, != falls back to identity
    C("ndarray_eq", lambda t, x: (np.round(x.detach().numpy()) == x, x == np.zeros((2, 3))), [F(3)], grad=False),
    C("ndarray_ne_identity", lambda t, x: (x != np.zeros(3), np.zeros(3) != x), [F(3)], grad=False),
]


@params(NUMPY_LEFT)
def test_numpy_scalar_on_the_left_gives_a_tensor_on_the_graph(case):
    # numpy defers to Tensor (__array_priority__), so the result is a Tensor with grad_fn
    check_parity(case, torch)
    if case.grad and not case.raises:
        x = tracegrad.ones(3, requires_grad=True)
        out = case.fn(tracegrad, x)
        assert isinstance(out, tracegrad.Tensor)


def test_float_of_a_tensor_requiring_grad_warns_only_with_grad_mode_on(fresh_warn_once):
    # torch's warning (once per process) is skipped under no_grad: LBFGS's float(loss) inside
    # its no_grad step (pytorch/examples time_sequence_prediction) prints nothing
    loss = (tracegrad.ones(2, requires_grad=True) * 2).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tracegrad.no_grad():
            assert float(loss) == 4.0
    with pytest.warns(UserWarning, match="requires_grad=True to a scalar"):
        float(loss)
