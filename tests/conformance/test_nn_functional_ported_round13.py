"""Ported from PyTorch's test/test_nn.py (TestNN / TestNNDeviceType): interpolate's modes and
scale rules, grid_sample / affine_grid, fold / unfold, pixel (un)shuffle, CTC loss, padding
modes, normalisation layers' options, recurrent layers' options (proj_size, bidirectional,
batch_first), clip_grad utilities and parameter/vector conversion, round 13. Each case is a
``same_outcome`` program: torch 2.13 is the oracle and tracegrad must return equal values or
raise the same builtin exception class. Each case names its original."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")


def X(T, *shape, seed=0, grad=True, dtype=np.float32):
    return T.tensor(np.random.RandomState(seed).standard_normal(shape).astype(dtype), requires_grad=grad)


def t(T, a, **kw):
    a = np.asarray(a)
    return T.tensor(a.astype(np.float32) if a.dtype == np.float64 else a, **kw)


def _fill(T, m, scale=0.4):
    with T.no_grad():
        for i, (_, p) in enumerate(sorted(m.named_parameters())):
            p.copy_(T.tensor((np.sin(np.arange(p.numel()) * 0.9 + i) * scale).reshape(tuple(p.shape)).astype(np.float32)))
    return m


def _back(T, x, outs):
    s = 0
    for i, o in enumerate(outs):
        s = s + (o * (i + 1)).sum()
    s.backward()
    return list(outs) + [x.grad]


F = lambda T: T.nn.functional  # noqa: E731


# ---- interpolate -------------------------------------------------------------------------------
def _interpolate_2d_modes(T):
    # test_upsamplingBilinear2d / Bicubic / nearest-exact / area, align_corners both ways
    x = X(T, 1, 2, 4, 5)
    outs = [F(T).interpolate(x, size=(7, 3), mode="nearest"), F(T).interpolate(x, scale_factor=1.7, mode="nearest-exact"),
            F(T).interpolate(x, size=(6, 8), mode="bilinear", align_corners=False),
            F(T).interpolate(x, size=(6, 8), mode="bilinear", align_corners=True),
            F(T).interpolate(x, scale_factor=(1.5, 0.6), mode="bicubic", align_corners=False),
            F(T).interpolate(x, size=(3, 3), mode="bicubic", align_corners=True),
            F(T).interpolate(x, size=(2, 3), mode="area"), F(T).adaptive_avg_pool2d(x, (2, 3))]
    return _back(T, x, outs)


def _interpolate_antialias(T):
    # test_upsamplingBiLinear2d_aa / bicubic antialias on downsampling
    x = X(T, 1, 2, 9, 8)
    outs = [F(T).interpolate(x, size=(4, 3), mode="bilinear", antialias=True),
            F(T).interpolate(x, size=(5, 5), mode="bicubic", antialias=True, align_corners=False),
            F(T).interpolate(x, scale_factor=0.4, mode="bilinear", antialias=True, align_corners=True)]
    return _back(T, x, outs)


def _interpolate_1d_3d(T):
    x = X(T, 2, 3, 5)
    y = X(T, 1, 1, 3, 4, 2, seed=1)
    outs = [F(T).interpolate(x, scale_factor=2.5, mode="linear"), F(T).interpolate(x, size=8, mode="linear", align_corners=True),
            F(T).interpolate(x, size=3, mode="nearest"), F(T).interpolate(y, scale_factor=(2, 0.5, 1.5), mode="trilinear"),
            F(T).interpolate(y, size=(2, 2, 3), mode="nearest-exact")]
    return _back(T, x, outs[:3]) + outs[3:]


def _interpolate_recompute_scale(T):
    # test_interpolate_recompute_scale_factor: with recompute the output uses size/scale exactly
    x = X(T, 1, 1, 5, 7, grad=False)
    return [F(T).interpolate(x, scale_factor=1.3, mode=m, recompute_scale_factor=r)
            for m in ("nearest", "bilinear") for r in (True, False, None)]


def _interpolate_both_size_and_scale(T):
    return F(T).interpolate(T.ones(1, 1, 4, 4), size=(2, 2), scale_factor=2.0)


def _interpolate_align_corners_nearest(T):
    return F(T).interpolate(T.ones(1, 1, 4, 4), size=(2, 2), mode="nearest", align_corners=True)


def _interpolate_bad_dim(T):
    return F(T).interpolate(T.ones(4, 4), size=2, mode="linear")


def _interpolate_int_input(T):
    return F(T).interpolate(t(T, [[[1, 2, 3]]]).to(T.uint8), size=5, mode="nearest")


def _upsample_modules(T):
    x = X(T, 1, 1, 3, 3, grad=False)
    return (T.nn.Upsample(scale_factor=2, mode="bilinear")(x), T.nn.UpsamplingNearest2d(size=(4, 5))(x),
            T.nn.UpsamplingBilinear2d(scale_factor=2)(x))


# ---- grid_sample / affine_grid -----------------------------------------------------------------
def _grid_sample_modes(T):
    # test_grid_sample: every mode x padding_mode x align_corners, gradients to input and grid
    x = X(T, 2, 2, 4, 5)
    g = T.tensor(np.random.RandomState(3).uniform(-1.3, 1.3, (2, 3, 4, 2)).astype(np.float32), requires_grad=True)
    outs = [F(T).grid_sample(x, g, mode=m, padding_mode=p, align_corners=a)
            for m, a in (("bilinear", False), ("nearest", True), ("bicubic", True)) for p in ("zeros", "border", "reflection")]
    outs.append(F(T).grid_sample(x, g, mode="bilinear", align_corners=True))
    s = 0
    for i, o in enumerate(outs):
        s = s + (o * (i + 1)).sum()
    s.backward()
    return outs + [x.grad, g.grad]


def _grid_sample_3d(T):
    x = X(T, 1, 2, 3, 4, 5)
    g = T.tensor(np.random.RandomState(4).uniform(-1.2, 1.2, (1, 2, 3, 2, 3)).astype(np.float32), requires_grad=True)
    outs = [F(T).grid_sample(x, g, mode=m, padding_mode=p, align_corners=True)
            for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")]
    sum((o * (i + 1)).sum() for i, o in enumerate(outs)).backward()
    return outs + [x.grad, g.grad]


def _grid_sample_bad_mode(T):
    return F(T).grid_sample(T.ones(1, 1, 2, 2), T.zeros(1, 1, 1, 2), mode="area", align_corners=False)


def _grid_sample_bicubic_3d(T):
    return F(T).grid_sample(T.ones(1, 1, 2, 2, 2), T.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)


def _affine_grid(T):
    # test_affine_grid / test_affine_grid_3d
    th = X(T, 2, 2, 3)
    th3 = X(T, 1, 3, 4, seed=2)
    outs = [F(T).affine_grid(th, (2, 1, 3, 4), align_corners=False), F(T).affine_grid(th, (2, 1, 3, 4), align_corners=True),
            F(T).affine_grid(th, (2, 1, 1, 4), align_corners=False)]
    o3 = F(T).affine_grid(th3, (1, 1, 2, 3, 2), align_corners=False)
    return _back(T, th, outs) + [o3]


def _affine_grid_bad_shape(T):
    return F(T).affine_grid(T.ones(2, 3, 3), (2, 1, 3, 4), align_corners=False)


# ---- fold / unfold / shuffles -------------------------------------------------------------------
def _fold_unfold(T):
    # test_fold_unfold / test_Fold / test_Unfold
    x = X(T, 2, 3, 5, 6)
    u = F(T).unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(2, 2))
    f = F(T).fold(u, (5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(2, 2))
    u2 = T.nn.Unfold(2)(x[0])
    return _back(T, x, [u, f, u2])


def _fold_bad_blocks(T):
    return F(T).fold(T.ones(1, 12, 5), (4, 5), 2)


def _unfold_bad_dims(T):
    return F(T).unfold(T.ones(2, 3), 2)


def _pixel_shuffles(T):
    x = X(T, 2, 8, 3, 2)
    ps = F(T).pixel_shuffle(x, 2)
    pu = F(T).pixel_unshuffle(ps, 2)
    cs = F(T).channel_shuffle(x, 4) if hasattr(F(T), "channel_shuffle") else T.nn.ChannelShuffle(4)(x)
    return _back(T, x, [ps, pu, cs])


def _pixel_shuffle_bad(T):
    return F(T).pixel_shuffle(T.ones(1, 6, 2, 2), 2)


# ---- padding -----------------------------------------------------------------------------------
def _pad_modes(T):
    # test_pad / test_ReflectionPad / ReplicationPad / CircularPad, negative pads
    x = X(T, 1, 2, 4, 5)
    outs = [F(T).pad(x, (1, 2, 2, 1), mode=m) for m in ("constant", "reflect", "replicate", "circular")]
    outs += [F(T).pad(x, (-1, 2, 0, -2)), F(T).pad(x, (1, 1), value=3.5), T.nn.ZeroPad2d((1, 0, 0, 1))(x),
             T.nn.ReflectionPad1d(2)(x[0]), T.nn.CircularPad1d((3, 1))(x[0]), F(T).pad(x, (-1, -1, 1, 1), mode="circular")]
    return _back(T, x, outs)


def _pad_reflect_too_big(T):
    return F(T).pad(T.ones(1, 1, 3), (3, 0), mode="reflect")


def _pad_odd_length(T):
    return F(T).pad(T.ones(2, 2), (1, 1, 1))


def _pad_circular_too_big(T):
    return F(T).pad(T.ones(1, 1, 3), (4, 0), mode="circular")


# ---- CTC ---------------------------------------------------------------------------------------
def _ctc_loss(T):
    # test_CTCLoss_* : reductions, zero_infinity, padded and concatenated targets, lengths as lists
    lp = X(T, 6, 2, 4).log_softmax(2).detach().requires_grad_()
    tg = t(T, [[1, 2, 2], [3, 1, 0]])
    il, tl = t(T, [6, 5]), t(T, [3, 2])
    outs = [F(T).ctc_loss(lp, tg, il, tl, reduction=r) for r in ("mean", "sum", "none")]
    outs.append(F(T).ctc_loss(lp, t(T, [1, 2, 2, 3, 1]), [6, 5], [3, 2], blank=0))
    outs.append(F(T).ctc_loss(lp, tg, il, t(T, [2, 1]), blank=0, reduction="none"))
    return _back(T, lp, outs)


def _ctc_loss_infeasible(T):
    # an infeasible alignment is inf, zero_infinity turns it (and its gradient) to 0
    lp = X(T, 3, 1, 3).log_softmax(2).detach().requires_grad_()
    tg = t(T, [[1, 1, 1]])
    a = F(T).ctc_loss(lp, tg, [3], [3], reduction="sum")
    b = F(T).ctc_loss(lp, tg, [3], [3], reduction="sum", zero_infinity=True)
    b.backward()
    return a, b, lp.grad


def _ctc_loss_blank_in_range(T):
    lp = X(T, 3, 1, 3, grad=False).log_softmax(2)
    return F(T).ctc_loss(lp, t(T, [[1]]), [3], [1], blank=5)


# ---- normalisation -----------------------------------------------------------------------------
def _norm_layers_options(T):
    # test_GroupNorm_* / test_InstanceNorm*_track_running_stats / LayerNorm bias=False / RMSNorm
    x = X(T, 4, 6, 5)
    gn = _fill(T, T.nn.GroupNorm(3, 6, eps=1e-3))
    inn = T.nn.InstanceNorm1d(6, affine=True, track_running_stats=True, momentum=0.3)
    _fill(T, inn)
    ln = _fill(T, T.nn.LayerNorm((6, 5), bias=False))
    rms = _fill(T, T.nn.RMSNorm(5, eps=None))
    rms2 = T.nn.RMSNorm([6, 5], elementwise_affine=False, eps=1e-2)
    bn = _fill(T, T.nn.BatchNorm1d(6, momentum=None))
    outs = [gn(x), inn(x), ln(x), rms(x), rms2(x), bn(x), bn(x * 2)]
    r = _back(T, x, outs)
    inn.eval()
    bn.eval()
    return r + [inn.running_mean, inn.running_var, bn.running_mean, bn.running_var, bn.num_batches_tracked,
                inn(x.detach()), bn(x.detach())]


def _groupnorm_bad_groups(T):
    return T.nn.GroupNorm(4, 6)


def _batchnorm_single_value(T):
    return T.nn.BatchNorm1d(3)(T.ones(1, 3))


def _instancenorm_bad_input(T):
    return T.nn.InstanceNorm2d(3)(T.ones(3, 4))


def _local_response_norm(T):
    x = X(T, 2, 5, 3, 3)
    return _back(T, x, [F(T).local_response_norm(x, 3), F(T).local_response_norm(x[:, :, 0], 2, alpha=0.1, beta=0.5, k=2.0)])


def _normalize(T):
    x = X(T, 3, 4)
    x0 = T.zeros(2, 3, requires_grad=True)
    r = _back(T, x, [F(T).normalize(x), F(T).normalize(x, p=1, dim=0), F(T).normalize(x, p=float("inf"), eps=0.5)])
    F(T).normalize(x0).sum().backward()
    return r + [x0.grad]


# ---- recurrent ---------------------------------------------------------------------------------
def _lstm_proj_bidirectional(T):
    # test_LSTM_proj / test_rnn_args / bidirectional multi-layer batch_first
    m = _fill(T, T.nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True, proj_size=2), scale=0.3)
    x = X(T, 2, 4, 3)
    h0 = X(T, 4, 2, 2, seed=5)
    c0 = X(T, 4, 2, 5, seed=6)
    out, (h, c) = m(x, (h0, c0))
    return _back(T, x, [out, h, c]) + [h0.grad, c0.grad, m.weight_hr_l1_reverse.grad]


def _gru_rnn_options(T):
    g = _fill(T, T.nn.GRU(3, 4, num_layers=2, bias=False), scale=0.3)
    r = _fill(T, T.nn.RNN(3, 4, nonlinearity="relu", bidirectional=True), scale=0.3)
    x = X(T, 5, 2, 3)
    o1, h1 = g(x)
    o2, h2 = r(x)
    o3, h3 = g(x[:, 0])
    return _back(T, x, [o1, h1, o2, h2, o3, h3])


def _rnn_cells(T):
    x = X(T, 3, 4)
    out = []
    for cls in (T.nn.RNNCell, T.nn.GRUCell):
        c = _fill(T, cls(4, 2), scale=0.3)
        out += [c(x, c(x)), c(x[0])]
    lc = _fill(T, T.nn.LSTMCell(4, 2), scale=0.3)
    out += list(lc(x)) + list(lc(x[0]))
    return _back(T, x, out)


def _lstm_bad_hidden(T):
    m = T.nn.LSTM(3, 4)
    return m(T.ones(5, 2, 3), (T.zeros(1, 2, 4), T.zeros(1, 3, 4)))


def _rnn_bad_input_size(T):
    return T.nn.GRU(3, 4)(T.ones(5, 2, 6))


def _lstm_proj_too_big(T):
    return T.nn.LSTM(3, 4, proj_size=4)


def _rnn_bad_nonlinearity(T):
    return T.nn.RNN(3, 4, nonlinearity="gelu")


# ---- utilities ---------------------------------------------------------------------------------
def _clip_grad(T):
    # test_clip_grad_norm / test_clip_grad_value / error_if_nonfinite / get_total_norm
    U = T.nn.utils
    ps = [T.nn.Parameter(T.zeros(3)), T.nn.Parameter(T.zeros(2, 2)), T.nn.Parameter(T.zeros(1))]
    grads = [t(T, [3.0, -4.0, 1.0]), t(T, [[0.5, 2.0], [-1.0, 0.0]]), None]
    out = []
    for nt in (2.0, 1.0, float("inf"), 0.5):
        for p, g in zip(ps, grads):
            p.grad = None if g is None else g.clone()
        tot = U.clip_grad_norm_(ps, 1.5, norm_type=nt)
        out += [tot] + [p.grad for p in ps[:2]]
    for p, g in zip(ps, grads):
        p.grad = None if g is None else g.clone()
    U.clip_grad_value_(ps, 0.75)
    out += [p.grad for p in ps[:2]]
    out.append(U.clip_grad_norm_(ps[2], 1.0))
    out.append(U.get_total_norm([g for g in grads if g is not None], 3.0))
    return out


def _clip_grad_nonfinite(T):
    p = T.nn.Parameter(T.zeros(2))
    p.grad = t(T, [float("nan"), 1.0])
    return T.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def _clip_grad_nonfinite_allowed(T):
    p = T.nn.Parameter(T.zeros(2))
    p.grad = t(T, [float("inf"), 1.0])
    tot = T.nn.utils.clip_grad_norm_([p], 1.0)
    return tot, p.grad


def _params_vector(T):
    # test_parameters_to_vector / test_vector_to_parameters
    m = _fill(T, T.nn.Sequential(T.nn.Linear(3, 2), T.nn.Conv1d(2, 1, 2)))
    v = T.nn.utils.parameters_to_vector(m.parameters())
    T.nn.utils.vector_to_parameters(v * 2 + 1, m.parameters())
    return v, [p.detach() for p in m.parameters()]


def _vector_to_parameters_bad(T):
    return T.nn.utils.vector_to_parameters(T.ones(2, 2), [T.nn.Parameter(T.zeros(4))])


def _misc_layers(T):
    # test_Bilinear / CosineSimilarity / PairwiseDistance / Flatten / Unflatten
    x1, x2 = X(T, 3, 4), X(T, 3, 4, seed=1)
    bl = _fill(T, T.nn.Bilinear(4, 4, 2))
    outs = [bl(x1, x2), T.nn.CosineSimilarity(dim=1, eps=1e-3)(x1, x2), T.nn.PairwiseDistance(p=1.5, keepdim=True)(x1, x2),
            T.nn.Flatten(0)(x1), T.nn.Unflatten(1, (2, 2))(x1), F(T).cosine_similarity(x1, x2[0:1], dim=-1),
            F(T).pairwise_distance(x1, x2, p=0), T.cdist(x1, x2, p=1), T.cdist(x1.unsqueeze(0), x2.unsqueeze(0), p=0.5)]
    return _back(T, x1, outs)


CASES = {k[1:]: v for k, v in dict(globals()).items() if k.startswith("_") and callable(v) and not k.startswith("__")
         and k not in ("_fill", "_back")}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_nn_functional_round13(fn):
    same_outcome(fn)
