"""torch names tracegrad gained as aliases or thin compositions (``_api/composite_names.py``,
``nn/_toplevel.py``, the inverse hyperbolic ops): each against torch, values and gradients
(grad_fn names where tracegrad's node is torch's)."""
import numpy as np
import pytest

from tracegrad._api.argcheck import unguarded

import tracegrad
from parity import A, C, D, F, I, check_parity, params

torch = pytest.importorskip("torch")

UNIT = dict(lo=-0.9, hi=0.9)
GT1 = dict(lo=1.1, hi=3.0)


def _ip(name, *args):
    """``x.clone().<name>_(*args)``: the in-place method on a non-leaf."""
    return lambda t, x, *rest: getattr(x.clone(), name)(*args, *rest)


HYPERBOLIC = [
    C("asinh", lambda t, x: t.asinh(x), [F(3, 4)]),
    C("acosh", lambda t, x: t.acosh(x), [F(3, 4, **GT1)]),
    C("atanh", lambda t, x: t.atanh(x), [F(3, 4, **UNIT)]),
    C("arcsinh", lambda t, x: x.arcsinh(), [F(3, 4)]),
    C("arccosh", lambda t, x: t.arccosh(x), [F(3, 4, **GT1)]),
    C("arctanh", lambda t, x: x.arctanh(), [F(3, 4, **UNIT)]),
    C("atanh_int", lambda t, x: t.atanh(x), [I(3, hi=1)]),
    # torch has no derivative for the in-place forms ("not implemented"): values only
    C("asinh_inplace", _ip("asinh_"), [F(3, 4)], grad=False),
    C("acosh_inplace", _ip("acosh_"), [F(3, 4, **GT1)], grad=False),
    C("arctanh_inplace", _ip("arctanh_"), [F(3, 4, **UNIT)], grad=False),
    C("asinh_f64", lambda t, x: t.asinh(x), [D(5)]),
]

COMPOSITES = [
    C("logaddexp2", lambda t, x, y: t.logaddexp2(x, y), [F(3, 4), F(3, 4)], no_grad_fn=True),
    C("logaddexp2_method", lambda t, x: x.logaddexp2(x * 2), [F(5)], no_grad_fn=True),
    C("positive", lambda t, x: t.positive(x) * 2, [F(3)]),
    C("positive_bool", lambda t, x: t.positive(x), [A([True, False])], raises=True),
    C("ravel", lambda t, x: t.ravel(x.t()), [F(3, 4)], no_grad_fn=True),
    C("ravel_method", lambda t, x: x.ravel(), [F(2, 3, 2)]),
    C("msort", lambda t, x: t.msort(x), [F(4, 3)]),
    C("isposinf", lambda t, x: (t.isposinf(x), t.isneginf(x)), [A([1.0, np.inf, -np.inf, np.nan])]),
    C("isposinf_int", lambda t, x: (x.isposinf(), x.isneginf()), [I(3)]),
    C("isreal", lambda t, x: t.isreal(x), [F(3)]),
    C("diagflat", lambda t, x: t.diagflat(x), [F(2, 2)]),
    C("diagflat_offset", lambda t, x: x.diagflat(-1), [F(3)]),
    C("vdot", lambda t, x, y: t.vdot(x, y), [F(4), F(4)], no_grad_fn=True),
    C("arctan2", lambda t, x, y: t.arctan2(x, y), [F(3, 4), F(3, 4)]),
    C("arctan2_method", lambda t, x, y: x.arctan2(y), [F(3, 4), F(4)]),
    C("addmv", lambda t, i, m, v: t.addmv(i, m, v), [F(3), F(3, 4), F(4)], no_grad_fn=True),
    C("addmv_scaled", lambda t, i, m, v: i.addmv(m, v, beta=0.5, alpha=2), [F(1), F(3, 4), F(4)], no_grad_fn=True),
    C("addmv_beta0_nan", lambda t, i, m, v: t.addmv(i, m, v, beta=0), [A([np.nan, 1.0, 2.0]), F(3, 4), F(4)], no_grad_fn=True),
    C("addr", lambda t, i, a, b: t.addr(i, a, b, beta=2), [F(3, 4), F(3), F(4)], no_grad_fn=True),
    C("addbmm", lambda t, i, a, b: t.addbmm(i, a, b, alpha=0.5), [F(3, 5), F(2, 3, 4), F(2, 4, 5)], no_grad_fn=True),
    # d/dinput of xlogy is log(other) also where input is 0 (distributions' log_prob at c = 1)
    C("xlogy_zero_input", lambda t, x, y: t.xlogy(x, y), [A([0.0, 1.0, 0.0, 2.0]), A([0.05, 3.0, 0.4, 0.5])],
      no_grad_fn=True),
    C("xlogy_edges", lambda t, x, y: t.xlogy(x, y), [A([0.0, 0.0, 1.5, 0.0]), A([-2.0, np.nan, 0.0, 7.0])], grad=False),
    C("aminmax", lambda t, x: t.aminmax(x), [F(3, 4)], no_grad_fn=True),
    C("aminmax_dim", lambda t, x: x.aminmax(dim=1, keepdim=True), [F(3, 4)], no_grad_fn=True),
    C("aminmax_ties", lambda t, x: t.aminmax(x, dim=0), [A([[1.0, 2.0], [1.0, 0.5], [0.2, 2.0]])], no_grad_fn=True),
    C("matrix_power", lambda t, x: t.matrix_power(x, 3), [F(2, 3, 3)], no_grad_fn=True, tol=(1e-4, 1e-5)),
    C("matrix_power_neg", lambda t, x: x.matrix_power(-2), [D(3, 3) + 3 * np.eye(3)], no_grad_fn=True),
    C("pinverse", lambda t, x: t.pinverse(x), [D(4, 3)], no_grad_fn=True),
    C("unfold", lambda t, x: x.unfold(1, 4, 3), [F(2, 12)], no_grad_fn=True),
    C("unfold_dim0", lambda t, x: x.unfold(0, 2, 1), [F(5, 3)], no_grad_fn=True),
    C("unfold_3d", lambda t, x: x.unfold(-1, 3, 2) * 2, [F(2, 3, 7)], no_grad_fn=True),
    C("unfold_scalar", lambda t, x: x.unfold(0, 1, 1), [F()], no_grad_fn=True),
    C("unfold_too_big", lambda t, x: x.unfold(1, 13, 1), [F(2, 12)], raises=True),
    C("unfold_step0", lambda t, x: x.unfold(1, 2, 0), [F(2, 12)], raises=True),
    C("sum_to_size", lambda t, x: x.sum_to_size(1, 3), [F(2, 3)], no_grad_fn=True),
    C("sum_to_size_lead", lambda t, x: x.sum_to_size((4, 1)), [F(2, 4, 3)], no_grad_fn=True),
    C("sum_to_size_bad", lambda t, x: x.sum_to_size(2, 2), [F(2, 3)], raises=True),
    C("fill_diagonal_", lambda t, x: x.clone().fill_diagonal_(2.5), [F(3, 4)]),
    C("fill_diagonal_tall", lambda t, x: x.clone().fill_diagonal_(-1.0), [F(7, 3)]),
    C("fill_diagonal_wrap", lambda t, x: x.clone().fill_diagonal_(5.0, wrap=True), [F(7, 3)]),
    C("fill_diagonal_3d", lambda t, x: x.clone().fill_diagonal_(0.0), [F(3, 3, 3)]),
    C("fill_diagonal_int", lambda t, x: x.fill_diagonal_(9), [I(3, 3)]),
    C("fill_diagonal_1d", lambda t, x: x.clone().fill_diagonal_(1.0), [F(3)], raises=True),
    C("fill_diagonal_uneven", lambda t, x: x.clone().fill_diagonal_(1.0), [F(2, 3, 3)], raises=True),
    C("row_stack", lambda t, x, y: t.row_stack((x, y)), [F(3), F(3)]),
    C("hsplit", lambda t, x: t.hsplit(x, 2), [F(3, 4)]),
    C("hsplit_list", lambda t, x: x.hsplit([1, 3]), [F(3, 4)]),
    C("hsplit_1d", lambda t, x: t.hsplit(x, 3), [F(6)]),
    C("hsplit_bad", lambda t, x: t.hsplit(x, 3), [F(3, 4)], raises=True),
    C("vsplit", lambda t, x: t.vsplit(x, [2]), [F(4, 3)]),
    C("vsplit_1d", lambda t, x: t.vsplit(x, 2), [F(4)], raises=True),
    C("dsplit", lambda t, x: t.dsplit(x, 2), [F(2, 3, 4)]),
]

# torch's top-level in-place functions are the Tensor methods
TOPLEVEL_INPLACE = [
    C(f"top_{n}", (lambda n: lambda t, x: getattr(t, n)(x.clone()))(n), [F(3, 4, **kw)])
    for n, kw in (("exp_", {}), ("sigmoid_", {}), ("relu_", {}), ("arcsin_", UNIT), ("atanh_", UNIT),
                  ("sqrt_", dict(lo=0.1, hi=2.0)), ("negative_", {}), ("fix_", {}), ("zero_", {}))
    if n != "atanh_"
] + [C("top_atanh_", lambda t, x: t.atanh_(x.clone()), [F(3, 4, **UNIT)], grad=False),
     C("top_clamp_", lambda t, x: t.clamp_(x.clone(), -0.5, 0.5), [F(3, 4)]),
     C("top_fill_", lambda t, x: t.fill_(x.clone(), 2.0), [F(3)]),
     C("top_xlogy_", lambda t, x, y: t.xlogy_(x.clone(), y), [F(3), F(3, lo=0.5, hi=2.0)], no_grad_fn=True),
     C("top_clamp_min_", lambda t, x: t.clamp_min_(x.clone(), 0.0), [F(3)], no_grad_fn=True),
     C("top_addmv_", lambda t, i, m, v: t.addmv_(i.clone(), m, v), [F(3), F(3, 4), F(4)], no_grad_fn=True),
     C("top_index_put_", lambda t, x, v: t.index_put_(x.clone(), (t.tensor([0, 2]),), v), [F(3, 2), F(2, 2)])]

# in-place methods written as out-of-place + copy_ (grad_fn CopyBackwards, torch: the op's own)
VIA_COPY = [
    C("cumsum_", _ip("cumsum_", 1), [F(3, 4)], no_grad_fn=True),
    C("cumprod_", _ip("cumprod_", 0), [F(3, 4)], no_grad_fn=True),
    C("tril_", _ip("tril_"), [F(3, 4)], no_grad_fn=True),
    C("triu_", _ip("triu_", 1), [F(3, 4)], no_grad_fn=True),
    C("lgamma_", _ip("lgamma_"), [F(3, lo=0.5, hi=3.0)], no_grad_fn=True),
    C("digamma_", _ip("digamma_"), [F(3, lo=0.5, hi=3.0)], no_grad_fn=True),
    C("erfc_", _ip("erfc_"), [F(3)], no_grad_fn=True),
    C("xlogy_", lambda t, x, y: x.clone().xlogy_(y), [F(3), F(3, lo=0.5, hi=2.0)], no_grad_fn=True),
    C("hypot_", lambda t, x, y: x.clone().hypot_(y), [F(3), F(3)], no_grad_fn=True),
    C("atan2_", lambda t, x, y: x.clone().atan2_(y), [F(3), F(3)], no_grad_fn=True),
    C("arctan2_", lambda t, x, y: x.clone().arctan2_(y), [F(3), F(3)], no_grad_fn=True),
    C("clamp_min_", _ip("clamp_min_", 0.0), [F(3, 4)], no_grad_fn=True),
    C("clamp_max_", _ip("clamp_max_", 0.0), [F(3, 4)], no_grad_fn=True),
    C("remainder_", _ip("remainder_", 0.7), [F(3, 4)], no_grad_fn=True),
    C("fmod_", _ip("fmod_", 0.7), [F(3, 4)], no_grad_fn=True),
    C("nan_to_num_", _ip("nan_to_num_", 0.0), [A([np.nan, 1.0, np.inf])], no_grad_fn=True),
    C("gt_", _ip("gt_", 0.0), [F(3, 4)], no_grad_fn=True),
    C("less_equal_", _ip("less_equal_", 0.0), [F(3, 4)], no_grad_fn=True),
    C("logit_", _ip("logit_"), [F(3, lo=0.1, hi=0.9)], no_grad_fn=True),
    C("sinc_", _ip("sinc_"), [F(3)], no_grad_fn=True),
    C("rad2deg_", _ip("rad2deg_"), [F(3)], no_grad_fn=True),
    C("sgn_", _ip("sgn_"), [F(3)], grad=False),   # torch's sgn gradient is a ZeroTensor
    C("addmm_", lambda t, i, a, b: i.clone().addmm_(a, b, beta=0.5), [F(3, 5), F(3, 4), F(4, 5)], no_grad_fn=True),
    C("baddbmm_", lambda t, i, a, b: i.clone().baddbmm_(a, b), [F(2, 3, 5), F(2, 3, 4), F(2, 4, 5)], no_grad_fn=True),
    C("bitwise_and_", lambda t, x, y: x.clone().bitwise_and_(y), [I(5, hi=8), I(5, hi=8)]),
    C("multiply_", lambda t, x, y: x.clone().multiply_(y), [F(3), F(3)]),
    C("subtract_", lambda t, x, y: x.clone().subtract_(y, alpha=2), [F(3), F(3)]),
    C("divide_", lambda t, x, y: x.clone().divide_(y), [F(3), F(3, lo=0.5, hi=2.0)]),
    C("swapaxes_", lambda t, x: x.swapaxes_(0, 1), [F(3, 4)], grad=False),
    C("digamma_int", lambda t, x: x.digamma_(), [I(3, lo=1)], raises=True),
    C("cumsum_leaf", lambda t, x: x.cumsum_(0), [F(3)], raises=True),
    C("tril_int", lambda t, x: x.clone().tril_(), [I(3, 3)]),
]

_L = F(4, 3)
_T = np.array([0, 2, 1, 2])
NN_TOP = [
    C("pdist", lambda t, x: t.pdist(x), [F(4, 3)], no_grad_fn=True),
    C("pdist_p1", lambda t, x: t.pdist(x, 1), [F(4, 3)], no_grad_fn=True),
    C("threshold", lambda t, x: t.threshold(x, 0.1, -2.0), [F(3, 4)], no_grad_fn=True),
    C("threshold_", lambda t, x: t.threshold_(x.clone(), 0.1, -2.0), [F(3, 4)], no_grad_fn=True),
    C("hardshrink", lambda t, x: t.hardshrink(x, 0.3), [F(3, 4)], no_grad_fn=True),
    C("channel_shuffle", lambda t, x: t.channel_shuffle(x, 2), [F(1, 4, 2, 2)], no_grad_fn=True),
    C("pixel_shuffle", lambda t, x: t.pixel_shuffle(x, 2), [F(1, 8, 2, 3)], no_grad_fn=True),
    C("pixel_unshuffle", lambda t, x: t.pixel_unshuffle(x, 2), [F(1, 2, 4, 6)], no_grad_fn=True),
    C("pairwise_distance", lambda t, x, y: t.pairwise_distance(x, y), [F(4, 3), F(4, 3)], no_grad_fn=True),
    C("prelu", lambda t, x, w: t.prelu(x, w), [F(2, 3, 4), F(3)], no_grad_fn=True),
    C("bilinear", lambda t, a, b, w, bias: t.bilinear(a, b, w, bias), [F(4, 3), F(4, 2), F(5, 3, 2), F(5)], no_grad_fn=True),
    C("rms_norm", lambda t, x, w: t.rms_norm(x, [4], w, 1e-6), [F(3, 4), F(4)], no_grad_fn=True),
    C("celu_", lambda t, x: t.celu_(x.clone(), 0.5), [F(3, 4)], no_grad_fn=True),
    C("selu_", lambda t, x: t.selu_(x.clone()), [F(3, 4)], no_grad_fn=True),
    C("rrelu_eval", lambda t, x: t.rrelu(x), [F(3, 4)], no_grad_fn=True),
    C("rrelu__eval", lambda t, x: t.rrelu_(x.clone(), 0.1, 0.3), [F(3, 4)], no_grad_fn=True),
    C("alpha_dropout_eval", lambda t, x: t.alpha_dropout(x, 0.5, False), [F(3, 4)], no_grad_fn=True),
    C("feature_alpha_dropout_eval", lambda t, x: t.feature_alpha_dropout(x, 0.5, False), [F(2, 3, 4)], no_grad_fn=True),
    C("dropout__eval", lambda t, x: t.dropout_(x.clone(), 0.5, False), [F(3, 4)], no_grad_fn=True),
    C("max_pool3d", lambda t, x: t.max_pool3d(x, 2), [F(1, 2, 4, 4, 4)], no_grad_fn=True),
    C("conv_transpose3d", lambda t, x, w: t.conv_transpose3d(x, w, None, 2), [F(1, 2, 3, 3, 3), F(2, 1, 2, 2, 2)],
      no_grad_fn=True, tol=(1e-4, 1e-4)),
    C("instance_norm", lambda t, x, w, b: t.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
      [F(2, 3, 5), F(3), F(3)], no_grad_fn=True, tol=(1e-4, 1e-5)),
    C("kl_div_default", lambda t, x, y: t.kl_div(x, y), [F(4, 3), F(4, 3, lo=0.1, hi=1.0)], no_grad_fn=True),
    C("kl_div_mean", lambda t, x, y: t.kl_div(x, y, 1), [F(4, 3), F(4, 3, lo=0.1, hi=1.0)], no_grad_fn=True),
    C("kl_div_sum_log", lambda t, x, y: t.kl_div(x, y, 2, log_target=True), [F(4, 3), F(4, 3)], no_grad_fn=True),
    C("bce_logits_none", lambda t, x, y: t.binary_cross_entropy_with_logits(x, y, None, None, 0),
      [F(4, 3), A((np.arange(12).reshape(4, 3) % 2).astype(np.float32), grad=False)], no_grad_fn=True),
    C("cosine_embedding_loss", lambda t, a, b, y: t.cosine_embedding_loss(a, b, y, 0.1, 2),
      [F(4, 3), F(4, 3), A(np.array([1.0, -1.0, 1.0, -1.0], np.float32), grad=False)], no_grad_fn=True),
    C("hinge_embedding_loss", lambda t, x, y: t.hinge_embedding_loss(x, y, 1.0, 1),
      [F(4, 3), A(np.where(np.arange(12) % 3, 1.0, -1.0).reshape(4, 3).astype(np.float32), grad=False)], no_grad_fn=True),
    C("margin_ranking_loss", lambda t, a, b, y: t.margin_ranking_loss(a, b, y, 0.2, 0),
      [F(4), F(4), A(np.array([1.0, -1.0, 1.0, -1.0], np.float32), grad=False)], no_grad_fn=True),
    C("poisson_nll_loss", lambda t, x, y: t.poisson_nll_loss(x, y, True, False, 1e-8, 1),
      [F(4, 3), A(np.abs(_L), grad=False)], no_grad_fn=True),
    C("triplet_margin_loss", lambda t, a, p, n: t.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, False, 1),
      [F(4, 3), F(4, 3), F(4, 3)], no_grad_fn=True),
    C("ctc_loss", lambda t, lp: t.ctc_loss(lp.log_softmax(2), t.tensor([[1, 2], [2, 2]]), [5, 4], [2, 2], 0, 1, False),
      [F(5, 2, 3)], no_grad_fn=True, tol=(1e-4, 1e-5)),
    C("kl_div_reduction_3", lambda t, x, y: t.kl_div(x, y, 3), [F(4, 3), F(4, 3)], no_grad_fn=True),
    C("ctc_loss_default", lambda t, lp: t.ctc_loss(lp.log_softmax(2), t.tensor([[1, 2], [2, 2]]), [5, 4], [2, 2]),
      [F(5, 2, 3)], no_grad_fn=True, tol=(1e-4, 1e-5)),
    C("bce_logits_default", lambda t, x, y: t.binary_cross_entropy_with_logits(x, y),
      [F(4, 3), A((np.arange(12).reshape(4, 3) % 2).astype(np.float32), grad=False)], no_grad_fn=True),
]
_ = (_T,)


@params(HYPERBOLIC + COMPOSITES + TOPLEVEL_INPLACE + VIA_COPY + NN_TOP)
def test_parity(case):
    check_parity(case, torch)


def test_toplevel_inplace_functions_are_the_methods():
    from tracegrad._api.composite_names import INPLACE_FUNCTIONS
    for name in INPLACE_FUNCTIONS:
        assert hasattr(torch, name), name
        # the function form may sit behind its non-Tensor-argument guard (argcheck.guard, hot=True)
        assert unguarded(getattr(tracegrad, name)) is unguarded(getattr(tracegrad.Tensor, name)), name


def test_nn_toplevel_names_exist_in_torch_with_docstrings():
    from tracegrad.nn import _toplevel
    for name in _toplevel.__all__:
        assert hasattr(torch, name), name
        assert unguarded(getattr(tracegrad, name)) is getattr(_toplevel, name)
        assert getattr(_toplevel, name).__doc__, name


def test_inplace_via_copy_bumps_version_and_keeps_identity():
    x = tracegrad.arange(6.0).reshape(2, 3)
    v = x._version
    y = x.cumsum_(1)
    assert y is x and x._version > v
    np.testing.assert_array_equal(x.numpy(), torch.arange(6.0).reshape(2, 3).cumsum_(1).numpy())


def test_inverse_hyperbolic_gradcheck():
    x = tracegrad.tensor([0.1, -0.4, 0.7], dtype=tracegrad.float64, requires_grad=True)
    for f in (tracegrad.asinh, tracegrad.atanh, lambda x: tracegrad.acosh(x + 2)):
        assert tracegrad.autograd.gradcheck(f, (x,))
        assert tracegrad.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("name", ["e", "inf", "nan", "pi", "newaxis"])
def test_numeric_constants_match_torch(name):
    # rasbt/LLMs-from-scratch masks attention scores with -torch.inf and builds GELU from torch.pi
    want, got = getattr(torch, name), getattr(tracegrad, name)
    assert type(got) is type(want)
    assert got is None or np.isnan(want) and np.isnan(got) or got == want


def test_constants_in_ops():
    x = tracegrad.zeros(2, 3).masked_fill(tracegrad.tensor([True, False, True]), -tracegrad.inf)
    assert x.numpy().tolist() == [[-np.inf, 0.0, -np.inf]] * 2
    y = tracegrad.arange(3.)[:, tracegrad.newaxis]
    assert tuple(y.shape) == (3, 1)
