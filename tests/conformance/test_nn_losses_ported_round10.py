"""Round 10: loss tests of PyTorch's test/test_nn.py (TestNN and TestNNDeviceType, CPU, float32)
not ported before: nll_loss on empty batches and ignore_index, cross_entropy label smoothing,
BCE / BCEWithLogits weights, pos_weight, stability and input checks, smooth_l1 vs huber,
cosine_embedding / multi_margin argument errors, triplet margin swap, and the ``*_no_reduce``
entries of its module tests. Each body runs under the ``T`` fixture, once with torch 2.13 (the
oracle: every expectation must hold there too) and once with tracegrad; inputs come from seeded
NumPy generators. Each test names its original."""
import itertools

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().numpy())


def _eq(got, want, rtol=1e-5, atol=1e-6):
    g = _np(got)
    w = _np(want) if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _rand(T, *shape, seed=0, grad=False):
    return T.tensor(np.random.default_rng(seed).random(shape).astype(np.float32), requires_grad=grad)


def _randn(T, *shape, seed=0, grad=False):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                    requires_grad=grad)


# ==== nll_loss ===================================================================================
def _nll_loss_helper(T, input_size, reduction, expected):
    # TestNNDeviceType._nll_loss_helper
    inp = _rand(T, *input_size, grad=True)
    target_size = (input_size[0],) + tuple(input_size[2:])
    target = T.tensor(np.random.default_rng(1).integers(0, input_size[1], target_size))
    out = T.nn.functional.nll_loss(inp, target, reduction=reduction)
    _eq(out, expected)
    out.sum().backward()
    assert tuple(inp.grad.shape) == tuple(inp.shape)


@pytest.mark.parametrize("reduction,fill", [("none", None), ("mean", float("nan")), ("sum", 0.0)])
def test_nll_loss_empty_tensor_reduction(T, reduction, fill):
    # TestNNDeviceType.test_nll_loss_empty_tensor_reduction_none / _mean / _sum
    for size, none_shape in (([0, 3], (0,)), ([0, 3, 5, 7], (0, 5, 7)), ([2, 3, 0, 7], (2, 0, 7)),
                             ([2, 3, 5, 0], (2, 5, 0)), ([2, 3, 5, 7, 0], (2, 5, 7, 0))):
        want = np.empty(none_shape, np.float32) if fill is None else np.float32(fill)
        _nll_loss_helper(T, size, reduction, want)


@pytest.mark.parametrize("reduction", ["mean", "none", "sum"])
def test_nll_loss_out_of_bounds_ignore_index(T, reduction):
    # TestNNDeviceType.test_nll_loss_out_of_bounds_ignore_index: an ignored target may be any
    # value, even past the class count; it contributes neither loss nor gradient
    x = _randn(T, 6, 3, grad=True)
    t = T.tensor([0, 1, 255, 0, 1, 2])
    out = T.nn.functional.nll_loss(x, t, ignore_index=255, reduction=reduction)
    xn = _np(x)
    per = -xn[np.arange(6), [0, 1, 0, 0, 1, 2]] * np.array([1, 1, 0, 1, 1, 1])
    want = {"none": per, "sum": per.sum(), "mean": per.sum() / 5}[reduction]
    _eq(out, want.astype(np.float32))
    out.sum().backward()
    g = _np(x.grad)
    assert np.all(g[2] == 0) and g[0, 0] != 0


def test_nll_loss_mismatched_batch(T):
    # TestNN.test_nll_loss_mismatched_batch
    x = _randn(T, 10, 3, grad=True)
    t = T.zeros(3, dtype=T.int64)
    with pytest.raises(ValueError, match="Expected.*batch_size"):
        T.nn.functional.nll_loss(x, t)


# ==== cross_entropy ==============================================================================
def test_cross_entropy_loss_precision(T):
    # TestNNDeviceType.test_cross_entropy_loss_precision (a (128, 2, 768, 768) input there): the
    # float32 loss matches the float64 one
    x = _randn(T, 2, 2, 3, 3)
    t = T.tensor(np.random.default_rng(2).integers(0, 2, (2, 3, 3)))
    for reduction in ("mean", "sum", "none"):
        f = T.nn.functional.cross_entropy(x, t, reduction=reduction)
        d = T.nn.functional.cross_entropy(x.double(), t, reduction=reduction)
        _eq(f.double(), d, rtol=1e-5, atol=1e-6)


def test_cross_entropy_loss_zero_div(T):
    # TestNN.test_cross_entropy_loss_zero_div (issue 73165): probability targets with no classes
    # do not divide by zero in Python; the mean over the batch of an empty sum is NaN as torch
    out = T.nn.CrossEntropyLoss()(_rand(T, 5, 0), _rand(T, 5, 0, seed=1))
    assert tuple(out.shape) == () and np.isnan(out.item())


@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_label_smoothing_errors(T, probs):
    # TestNNDeviceType.test_cross_entropy_label_smoothing_errors
    N, C = 3, 4
    target = _randn(T, N, C, seed=1) if probs else T.arange(0, N)
    loss = T.nn.CrossEntropyLoss(label_smoothing=1.2)
    with pytest.raises(RuntimeError, match=r"label_smoothing must be between 0\.0"):
        loss(_randn(T, N, C), target)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_label_smoothing_with_probs(T, reduction):
    # TestNNDeviceType.test_cross_entropy_label_smoothing_with_probs: smoothing probability
    # targets is the same as cross entropy with the smoothed targets
    N, C, ls = 4, 5, 0.2
    x = _randn(T, N, C, grad=True)
    target = T.nn.functional.log_softmax(_randn(T, N, C, seed=1), dim=1).exp()
    target_smooth = (1 - ls) * target + ls / C
    out = T.nn.functional.cross_entropy(x, target, reduction=reduction, label_smoothing=ls)
    ref = T.nn.functional.cross_entropy(x, target_smooth, reduction=reduction)
    _eq(out, ref, rtol=1e-5, atol=1e-6)
    (g1,) = T.autograd.grad(out.sum(), x)
    (g2,) = T.autograd.grad(ref.sum(), x)
    _eq(g1, g2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction,label_smoothing,weighted",
                         list(itertools.product(["none", "sum", "mean"], [0.05, 0.15], [False, True])))
def test_cross_entropy_label_smoothing_weight_ignore_indices(T, reduction, label_smoothing, weighted):
    # TestNNDeviceType.test_cross_entropy_label_smoothing_weight_ignore_indices: an ignored row's
    # logits do not matter, and 'mean' does not count it
    wgt = T.tensor([0.3, 0.6]) if weighted else None
    inp1 = T.tensor([[0.3, 0.4], [1.0, 2.0]])
    inp2 = T.tensor([[0.3, 0.6], [1.0, 2.0]])
    for ignore_index, targ in ((-100, T.tensor([-100, 1])), (-2, T.tensor([-2, 1])),
                               (2, T.tensor([2, 1]))):
        loss = T.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=label_smoothing,
                                     ignore_index=ignore_index, weight=wgt)
        _eq(loss(inp1, targ), loss(inp2, targ))
        if reduction != "none":
            _eq(loss(inp1, targ), loss(inp2[1:], targ[1:]))


def test_cross_entropy_loss_2d_out_of_bounds_class_index(T):
    # TestNNDeviceType.test_cross_entropy_loss_2d_out_of_bounds_class_index (CUDA's device assert
    # there; torch's CPU kernel raises IndexError naming the target)
    x = _randn(T, 2, 3, 2, 2)
    t = T.tensor([[[0, 5], [1, 1]], [[0, 1], [1, 1]]])
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        T.nn.functional.cross_entropy(x, t)


def test_kl_div_log_softmax_target(T):
    # TestNNDeviceType.test_kl_div_log_softmax_target
    a = T.tensor([[1.0, 2, 3], [5.0, 5, 5]])
    b = T.tensor([[1.0, 2, 3], [5.0, 5, 5]])
    F = T.nn.functional
    out = F.kl_div(F.log_softmax(a, 1), F.log_softmax(b, 1), reduction="none", log_target=True)
    _eq(out, np.zeros((2, 3), np.float32))


# ==== smooth_l1 / huber ==========================================================================
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_smoothl1loss_intergral_target(T, dtype, reduction):
    # TestNN.test_smoothl1loss_intergral_target: an integer target gives the float target's grad
    def input_grad(inp, target):
        T.nn.functional.smooth_l1_loss(inp, target, reduction=reduction, beta=0.5).sum().backward()
        return inp.grad
    inp = _randn(T, 2, 2, grad=True)
    target = T.tensor(np.random.default_rng(3).integers(0, 9, (2, 2))).to(getattr(T, dtype))
    g_float = input_grad(inp, target.float())
    g_int = input_grad(inp.detach().clone().requires_grad_(True), target)
    _eq(g_int, g_float)


def test_smooth_l1_loss_vs_huber_loss(T):
    # TestNNDeviceType.test_smooth_l1_loss_vs_huber_loss: huber(delta) == delta * smooth_l1(beta=delta)
    x = _randn(T, 3, 4) * 2
    y = _randn(T, 3, 4, seed=1)
    F = T.nn.functional
    for reduction in ("none", "mean", "sum"):
        _eq(F.smooth_l1_loss(x, y, reduction=reduction, beta=1.0),
            F.huber_loss(x, y, reduction=reduction, delta=1.0))
        for d in (0.5, 2.0):
            _eq(F.huber_loss(x, y, reduction=reduction, delta=d),
                d * F.smooth_l1_loss(x, y, reduction=reduction, beta=d), rtol=1e-5, atol=1e-6)
    # beta = 0 is the L1 loss
    _eq(F.smooth_l1_loss(x, y, beta=0.0), F.l1_loss(x, y))


# ==== BCE / BCEWithLogits ========================================================================
def test_bce_loss_always_nonnegative(T):
    # TestNN.test_bce_loss_always_nonnegative
    assert (T.nn.BCELoss()(T.ones(5), T.ones(5)) >= 0).all()
    assert (T.nn.BCELoss()(T.zeros(5), T.zeros(5)) >= 0).all()


def test_bce_loss_input_range(T):
    # TestNN.test_bce_loss_input_range
    bceloss = T.nn.BCELoss()
    target = _rand(T, 5, 5)
    valid = _rand(T, 5, 5, seed=1)
    assert np.isfinite(bceloss(valid, target).item())
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        bceloss(valid - 1.0, target)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        bceloss(valid + 1.0, target)


def test_bce_loss_size_mismatch(T):
    # TestNN.test_bce_loss_size_mismatch
    with pytest.raises(ValueError, match=r"Using a target size \("):
        T.nn.BCELoss()(_rand(T, 25), _rand(T, 25, 1))


def test_bce_with_logits_gives_same_result_as_sigmoid_and_bce_loss(T):
    # TestNN.test_bce_with_logits_gives_same_result_as_sigmoid_and_bce_loss
    sigmoid = T.nn.Sigmoid()
    target = _rand(T, 8, 4)
    output = _rand(T, 8, 4, seed=1) - 0.5
    _eq(T.nn.BCEWithLogitsLoss()(output, target), T.nn.BCELoss()(sigmoid(output), target))
    weight = _rand(T, 4, seed=2)
    _eq(T.nn.BCEWithLogitsLoss(weight)(output, target), T.nn.BCELoss(weight)(sigmoid(output), target))
    target = T.zeros(4, 1)
    output = T.empty(4, 1).fill_(-100)
    _eq(T.nn.BCEWithLogitsLoss()(output, target), T.nn.BCELoss()(sigmoid(output), target))
    _eq(T.nn.BCEWithLogitsLoss(reduction="none")(output, target),
        T.nn.BCELoss(reduction="none")(sigmoid(output), target))
    weight = _rand(T, 1, seed=3)
    _eq(T.nn.BCEWithLogitsLoss(weight)(output, target), T.nn.BCELoss(weight)(sigmoid(output), target))


@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_has_correct_grad_at_zero(T, pos_weight):
    # TestNN.test_bce_with_logits_has_correct_grad_at_zero /
    # test_bce_with_logits_with_pos_weight_has_correct_grad_at_zero
    output = T.zeros(3, 1, requires_grad=True)
    target = T.zeros(3, 1)
    kw = {"pos_weight": T.ones(3, 1)} if pos_weight else {}
    T.nn.BCEWithLogitsLoss(reduction="sum", **kw)(output, target).backward()
    _eq(output.grad, np.full((3, 1), 0.5, np.float32))


def test_bce_with_logits_broadcasts_weights(T):
    # TestNN.test_bce_with_logits_broadcasts_weights
    target = _rand(T, 16, 4)
    output = _rand(T, 16, 4, seed=1) - 0.5
    for wshape in ((4,), (16, 1)):
        weight = _rand(T, *wshape, seed=2)
        out1 = T.nn.BCEWithLogitsLoss(weight)(output, target)
        out2 = T.nn.BCEWithLogitsLoss(weight.expand(16, 4).contiguous())(output, target)
        _eq(out1, out2)


def test_bce_with_logits_ones_in_pos_weights_are_the_same_as_none(T):
    # TestNN.test_bce_with_logits_ones_in_pos_weights_are_the_same_as_none
    target = _rand(T, 8, 4)
    output = _rand(T, 8, 4, seed=1) - 0.5
    pos_weight = T.ones(8, 4)
    _eq(T.nn.BCEWithLogitsLoss()(output, target),
        T.nn.BCEWithLogitsLoss(pos_weight=pos_weight)(output, target))


def test_bce_with_logits_broadcasts_pos_weights(T):
    # TestNN.test_bce_with_logits_broadcasts_pos_weights
    target = _rand(T, 8, 4)
    output = _rand(T, 8, 4, seed=1) - 0.5
    pos_weight = _rand(T, 4, seed=2)
    out1 = T.nn.BCEWithLogitsLoss(pos_weight=pos_weight)(output, target)
    out2 = T.nn.BCEWithLogitsLoss(pos_weight=pos_weight.expand(1, 4))(output, target)
    out3 = T.nn.BCEWithLogitsLoss(pos_weight=pos_weight.expand(8, 4))(output, target)
    _eq(out1, out2)
    _eq(out1, out3)
    # and the value: pos_weight scales the positive term
    o, t, p = _np(output).astype(np.float64), _np(target).astype(np.float64), _np(pos_weight)
    ls = -np.log(1 / (1 + np.exp(-o)))
    want = (p * t * ls + (1 - t) * (o + ls)).mean()
    _eq(out1, np.float32(want), rtol=1e-5)


def test_bce_with_logits_stability(T):
    # TestNN.test_bce_with_logits_stability
    output = T.tensor([0.0, -120.0])
    target = T.tensor([0.0, 1.0])
    pos_weight = T.tensor([1.0, 1.0])
    out1 = T.nn.BCEWithLogitsLoss()(output, target)
    assert T.isfinite(out1).all().item()
    out2 = T.nn.BCEWithLogitsLoss(pos_weight=pos_weight)(output, target)
    assert T.isfinite(out2).all().item()
    _eq(out1, np.float32((np.log(2) + 120) / 2), rtol=1e-5)


def test_bce_with_logits_raises_if_target_and_input_are_different_size(T):
    # TestNN.test_bce_with_logits_raises_if_target_and_input_are_different_size
    with pytest.raises(ValueError):
        T.nn.BCEWithLogitsLoss()(_rand(T, 5), _rand(T, 5, 1))
    with pytest.raises(ValueError):
        T.nn.BCEWithLogitsLoss()(_rand(T, 5, 1), _rand(T, 5))


# ==== argument checks ============================================================================
def test_cosine_embedding_loss_error_on_diff_shapes(T):
    # TestNN.test_cosine_embedding_loss_error_on_diff_shapes
    F = T.nn.functional
    with pytest.raises(RuntimeError, match="expects 2D"):
        F.cosine_embedding_loss(T.empty((0, 0)), T.empty((0,)), T.empty((0,)))
    with pytest.raises(RuntimeError):
        F.cosine_embedding_loss(_randn(T, 2, 5), _randn(T, 2, 4), T.ones(2))


def test_cosine_embedding_loss_invalid_shape(T):
    # TestNN.test_cosine_embedding_loss_invalid_shape
    F = T.nn.functional
    with pytest.raises(RuntimeError, match="1D target tensor expected"):
        F.cosine_embedding_loss(_randn(T, 15, 10), _randn(T, 15, 10), _randn(T, 15, 1).sign())
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        F.cosine_embedding_loss(_randn(T, 10), _randn(T, 10), _randn(T, 10))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(_randn(T, 2, 5), _randn(T, 2, 5), _randn(T))


def test_multimargin_loss_errors(T):
    # TestNN.test_multimargin_loss_errors
    with pytest.raises(RuntimeError):
        T.nn.functional.multi_margin_loss(_randn(T, 5), T.zeros(3))


# ==== values against formulas ====================================================================
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_loss_swap(T, swap):
    # TestNN.test_triplet_margin_loss / test_triplet_margin_loss_swap (reference formula)
    a, p, n = (_randn(T, 5, 4, seed=s, grad=True) for s in (0, 1, 2))
    out = T.nn.functional.triplet_margin_loss(a, p, n, swap=swap)

    def d(x, y):
        return np.linalg.norm(_np(x).astype(np.float64) - _np(y) + 1e-6, axis=1)
    d_an = np.minimum(d(a, n), d(p, n)) if swap else d(a, n)
    want = np.maximum(1.0 + d(a, p) - d_an, 0).mean()
    _eq(out, np.float32(want), rtol=1e-5)
    out.backward()
    assert a.grad is not None and tuple(n.grad.shape) == (5, 4)


def test_margin_hinge_soft_margin_no_reduce(T):
    # TestNN.test_MarginRankingLoss_no_reduce / test_hinge_embedding_loss_no_reduce /
    # test_soft_margin_loss_no_reduce (module tests with reduction='none' against formulas)
    F = T.nn.functional
    x1, x2 = _randn(T, 6), _randn(T, 6, seed=1)
    y = T.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    a, b, yn = _np(x1), _np(x2), _np(y)
    _eq(F.margin_ranking_loss(x1, x2, y, margin=0.5, reduction="none"),
        np.maximum(0, -yn * (a - b) + 0.5))
    _eq(F.hinge_embedding_loss(x1, y, margin=0.5, reduction="none"),
        np.where(yn == 1, a, np.maximum(0, 0.5 - a)))
    _eq(F.soft_margin_loss(x1, y, reduction="none"), np.log1p(np.exp(-yn * a)), rtol=1e-5)
    _eq(F.soft_margin_loss(x1, y), np.log1p(np.exp(-yn * a)).mean(), rtol=1e-5)
