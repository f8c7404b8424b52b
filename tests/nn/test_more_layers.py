"""Channel-wise/alpha dropout, PReLU, GLU, Hardswish, Hardsigmoid, RMSNorm, gumbel_softmax and
TripletMarginLoss: deterministic ones against torch (values, grads, errors); random ones by
their distribution (fraction dropped, channel structure, scaling) and seed determinism."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _pair(*arrays, grad=True):
    """The same float64 data as (torch tensors, tracegrad tensors)."""
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    gs = [tracegrad.tensor(a, requires_grad=grad) for a in arrays]
    return ts, gs


def _check(fn_name, arrays, *args, grad=True, rtol=1e-10, **kw):
    ts, gs = _pair(*arrays, grad=grad)
    out_t = getattr(torch.nn.functional, fn_name)(*ts, *args, **kw)
    out_g = getattr(tracegrad.nn.functional, fn_name)(*gs, *args, **kw)
    assert tuple(out_g.shape) == tuple(out_t.shape) and str(out_g.dtype).split(".")[1] == str(out_t.dtype).split(".")[1]
    np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    if grad:
        w = np.random.default_rng(1).normal(size=tuple(out_t.shape))
        (out_t * torch.tensor(w)).sum().backward()
        (out_g * tracegrad.tensor(w)).sum().backward()
        for t, g in zip(ts, gs):
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-12)


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4, 5)) * 3


@pytest.mark.parametrize("w", [np.array([0.25]), np.array([0.1, -0.5, 2.0, 0.3])])
def test_prelu(w):
    _check("prelu", [X, w])
    if len(w) == 1:
        _check("prelu", [X[0, :, 0], w])   # 1-D input: one channel, so only a single weight (torch)


def test_glu_hardswish_hardsigmoid():
    for dim in (-1, 1):
        _check("glu", [X[:, :, :4]], dim=dim)
    xs = np.concatenate([X.ravel(), [-3.0, 3.0, -2.999, 0.0]])
    _check("hardswish", [xs], rtol=1e-7)     # torch's backward kernels use float32 constants (1/6, 1/3)
    _check("hardsigmoid", [xs], rtol=1e-7)


@pytest.mark.parametrize("shape,eps,weight", [((5,), None, False), ((4, 5), 1e-3, True), ([5], 1e-6, True)])
def test_rms_norm(shape, eps, weight):
    norm = (shape,) if isinstance(shape, int) else shape
    arrays = [X] + ([RNG.normal(size=norm)] if weight else [])
    if weight:
        ts, gs = _pair(*arrays)
        out_t = torch.nn.functional.rms_norm(ts[0], shape, ts[1], eps)
        out_g = tracegrad.nn.functional.rms_norm(gs[0], shape, gs[1], eps)
        out_t.pow(2).sum().backward()
        out_g.pow(2).sum().backward()
        np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), rtol=1e-10)
        for t, g in zip(ts, gs):
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)
    else:
        _check("rms_norm", arrays, shape, None, eps)


def test_rms_norm_float32_default_eps_and_module():
    x = RNG.normal(size=(2, 3)).astype(np.float32) * 1e-4
    out_t = torch.nn.RMSNorm(3)(torch.tensor(x))
    mod = tracegrad.nn.RMSNorm(3)
    out_g = mod(tracegrad.tensor(x))
    np.testing.assert_allclose(out_g.detach().numpy(), out_t.detach().numpy(), rtol=1e-5)
    assert out_g.dtype is tracegrad.float32 and [n for n, _ in mod.named_parameters()] == ["weight"]
    assert repr(mod) == repr(torch.nn.RMSNorm(3)) == "RMSNorm((3,), eps=None, elementwise_affine=True)"
    assert tracegrad.nn.RMSNorm([2, 3], elementwise_affine=False).weight is None


@pytest.mark.parametrize("p,swap,reduction", [(2, False, "mean"), (1, True, "none"), (3, False, "sum")])
def test_triplet_margin_loss(p, swap, reduction):
    a, pos, neg = (RNG.normal(size=(6, 4)) for _ in range(3))
    _check("triplet_margin_loss", [a, pos, neg], margin=0.7, p=p, swap=swap, reduction=reduction)
    ts, gs = _pair(a, pos, neg)
    lt = torch.nn.TripletMarginLoss(margin=2.0, p=p, swap=swap, reduction=reduction)(*ts)
    lg = tracegrad.nn.TripletMarginLoss(margin=2.0, p=p, swap=swap, reduction=reduction)(*gs)
    np.testing.assert_allclose(lg.detach().numpy(), lt.detach().numpy(), rtol=1e-10)


ERRORS = [
    ("prelu", lambda t: t.nn.functional.prelu(t.ones(2, 3), t.ones(2)), RuntimeError, "Mismatch of parameter numbers"),
    ("glu_odd", lambda t: t.nn.functional.glu(t.ones(2, 3)), RuntimeError, "Halving dimension must be even"),
    ("glu_scalar", lambda t: t.nn.functional.glu(t.tensor(1.0)), RuntimeError, "glu does not support scalars"),
    ("prelu_1d", lambda t: t.nn.functional.prelu(t.ones(3), t.ones(3)), RuntimeError, "channel size = 1"),
    ("rms_int_shape", lambda t: t.nn.functional.rms_norm(t.ones(2, 3), 3), TypeError, "normalized_shape"),
    ("rms_shape", lambda t: t.nn.functional.rms_norm(t.ones(2, 3), (4,)), RuntimeError, "Given normalized_shape"),
    ("rms_weight", lambda t: t.nn.functional.rms_norm(t.ones(2, 3), (3,), t.ones(2)), RuntimeError, "weight"),
    ("triplet_dims", lambda t: t.nn.functional.triplet_margin_loss(t.ones(2, 3), t.ones(3), t.ones(2, 3)),
     RuntimeError, "same number of dimensions"),
    ("triplet_margin", lambda t: t.nn.functional.triplet_margin_loss(t.ones(2, 3), t.ones(2, 3), t.ones(2, 3), margin=0),
     ValueError, "margin must be greater than 0"),
    ("triplet_module", lambda t: t.nn.TripletMarginLoss(margin=-1), ValueError, "margin"),
    ("dropout1d_dim", lambda t: t.nn.functional.dropout1d(t.ones(2, 3, 4, 5)), RuntimeError, "Expected 2D or 3D input"),
    ("dropout2d_p", lambda t: t.nn.functional.dropout2d(t.ones(2, 3, 4, 5), p=1.5), ValueError, "dropout probability"),
    ("alpha_p", lambda t: t.nn.functional.alpha_dropout(t.ones(2, 3), p=-0.1), ValueError, "dropout probability"),
    ("module_p", lambda t: t.nn.Dropout3d(p=2), ValueError, "dropout probability"),
]


@pytest.mark.parametrize("name,call,cls,frag", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_torch(name, call, cls, frag):
    for t in (torch, tracegrad):
        with pytest.raises(cls, match=frag):
            call(t)


def test_modules_parameters_and_repr():
    for t in (torch, tracegrad):
        m = t.nn.PReLU(4, init=0.1)
        assert tuple(m.weight.shape) == (4,) and np.allclose(m.weight.detach().numpy(), 0.1)
    for name, args in [("PReLU", (3,)), ("GLU", (1,)), ("Hardswish", ()), ("Hardsigmoid", ()), ("Dropout1d", (0.2,)),
                       ("Dropout2d", ()), ("Dropout3d", ()), ("AlphaDropout", (0.1,)), ("FeatureAlphaDropout", ()),
                       ("TripletMarginLoss", ()), ("Mish", ())]:
        assert repr(getattr(tracegrad.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args)), name


def _channel_dropped(out):
    """Per (n, c): True when the whole channel is zero; asserts each channel is all-or-nothing."""
    flat = out.reshape(out.shape[0], out.shape[1], -1)
    zero = (flat == 0)
    assert ((zero.sum(-1) == 0) | (zero.sum(-1) == flat.shape[-1])).all()
    return zero[:, :, 0]


@pytest.mark.parametrize("fn,shape", [("dropout1d", (40, 50, 3)), ("dropout2d", (40, 50, 2, 2)),
                                      ("dropout3d", (40, 50, 2, 1, 2)), ("dropout3d", (1000, 2, 1, 1))])
def test_channel_dropout_distribution(fn, shape):
    x = tracegrad.ones(shape)
    out = getattr(tracegrad.nn.functional, fn)(x, p=0.3).numpy()
    if len(shape) == 4 and fn == "dropout3d":      # unbatched (C, D, H, W): one mask entry per channel
        out = out[None]
    dropped = _channel_dropped(out)
    assert 0.25 < dropped.mean() < 0.35
    assert np.allclose(out[out != 0], 1 / 0.7)


def test_dropout2d_3d_input_warns_and_is_channelwise_1d():
    x = tracegrad.ones(30, 40, 5)
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):
        out = tracegrad.nn.functional.dropout2d(x, 0.5).numpy()
    _channel_dropped(out)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        tracegrad.nn.functional.dropout2d(tracegrad.ones(4, 5), 0.5)


def test_dropout_eval_identity_seed_determinism_and_grad():
    x = tracegrad.ones(4, 6, 3, requires_grad=True)
    assert tracegrad.nn.functional.dropout1d(x, 0.5, training=False) is x
    assert tracegrad.nn.functional.alpha_dropout(x, 0.5) is x      # training=False by default, as torch
    m = tracegrad.nn.Dropout1d(0.5)
    m.eval()
    assert m(x) is x
    m.train()
    tracegrad.manual_seed(3)
    a = m(x)
    tracegrad.manual_seed(3)
    b = m(x)
    assert a.tolist() == b.tolist()
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), a.detach().numpy())   # grad = the scaled mask
    y = tracegrad.ones(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tracegrad.nn.functional.dropout1d(y, 0.5, inplace=True)
    assert out.shape == (3, 4) and y.tolist() == out.tolist()


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(feature):
    tracegrad.manual_seed(0)
    x = tracegrad.randn(200, 100, 4)
    fn = tracegrad.nn.functional.feature_alpha_dropout if feature else tracegrad.nn.functional.alpha_dropout
    out = fn(x, 0.2, training=True)
    assert abs(float(out.mean())) < 0.05 and abs(float(out.var()) - 1) < 0.06
    # dropped units all take one value, as torch's formula gives
    alpha = 1.7580993408473766
    a = ((alpha ** 2 * 0.2 + 1) * 0.8) ** -0.5
    dropped = np.isclose(out.numpy(), -alpha * a * 0.8, rtol=0, atol=5e-7)
    assert 0.17 < dropped.mean() < 0.23
    if feature:
        assert (dropped.all(-1) | ~dropped.any(-1)).all()
    t = torch.nn.functional.alpha_dropout(torch.randn(200, 100, 4), 0.2, training=True)
    assert np.isclose(t.numpy(), -alpha * a * 0.8).mean() > 0.17   # the same dropped value in torch


def test_gumbel_softmax():
    tracegrad.manual_seed(0)
    logits = tracegrad.tensor([[1.0, 2.0, 0.5]] * 4000, requires_grad=True)
    soft = tracegrad.nn.functional.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1, rtol=1e-5)
    hard = tracegrad.nn.functional.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    freq = h.mean(0)                                       # Gumbel-max: argmax ~ softmax(logits)
    np.testing.assert_allclose(freq, torch.softmax(torch.tensor([1.0, 2.0, 0.5]), 0).numpy(), atol=0.03)
    (hard * tracegrad.tensor([1.0, 2.0, 3.0])).sum().backward()   # straight-through: the soft sample's gradient
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    tracegrad.manual_seed(5)
    a = tracegrad.nn.functional.gumbel_softmax(logits[:3])
    tracegrad.manual_seed(5)
    assert a.tolist() == tracegrad.nn.functional.gumbel_softmax(logits[:3]).tolist()


def test_glu_bfloat16_rounds_once_as_torch():
    """torch computes a bf16 glu and its gradient in float32 and rounds once; rounding the sigmoid
    and the product apart in bf16 put gradients several bf16 steps off (test_nn's glu_bfloat16).
    Checked against float64 math on the same bf16 inputs (within one bf16 step) and torch."""
    x = np.random.RandomState(3).randn(2, 3, 16, 64).astype(np.float32)
    g = np.random.RandomState(4).randn(2, 3, 16, 32).astype(np.float32)
    res = []
    for lib in (torch, tracegrad):
        xt = lib.tensor(x).to(lib.bfloat16).requires_grad_(True)
        out = lib.nn.functional.glu(xt, dim=-1)
        out.backward(lib.tensor(g).to(lib.bfloat16))
        assert str(out.dtype).endswith("bfloat16") and str(xt.grad.dtype).endswith("bfloat16")
        res.append((out.float().detach().numpy(), xt.grad.float().numpy()))
    x64 = torch.tensor(x).to(torch.bfloat16).double().requires_grad_(True)
    out64 = torch.nn.functional.glu(x64, dim=-1)
    out64.backward(torch.tensor(g).to(torch.bfloat16).double())
    ref = (out64.detach().numpy(), x64.grad.numpy())
    for got, want, tv in zip(res[1], ref, res[0]):
        step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - 7)   # one bf16 step at each value
        assert (np.abs(got - want) <= step).all()
        np.testing.assert_allclose(got, tv, rtol=0, atol=1e-2)   # test_nn's tolerance against torch


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["SiLU", "Mish", "LeakyReLU", "ELU", "Softplus", "Hardsigmoid", "Hardswish"])
def test_half_activations_compute_in_float32_as_torch(name, dtype):
    """torch's CPU activation kernels take float16/bfloat16 through float32 and round once
    (forward and backward); evaluated step by step in 16 bits the outputs were a step or more
    off (test_nn's activations_bfloat16_half_cpu). Outputs now equal torch's bit for bit."""
    x = np.random.RandomState(0).randn(2, 3, 40).astype(np.float32) * 3
    g = np.random.RandomState(1).randn(2, 3, 40).astype(np.float32)
    res = []
    for lib in (torch, tracegrad):
        dt = getattr(lib, dtype)
        xt = lib.tensor(x).to(dt).requires_grad_(True)
        out = getattr(lib.nn, name)()(xt)
        out.backward(lib.tensor(g).to(dt))
        res.append((out.float().detach().numpy(), xt.grad.float().numpy()))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    step = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(res[0][1]), 1e-30))) - (7 if dtype == "bfloat16" else 10))
    assert (np.abs(res[1][1] - res[0][1]) <= step).all()


def test_threshold_bfloat16_compares_in_float32():
    """torch compares a bf16 input with the threshold in float32: 0.10009766 (bf16 of 0.1) is
    above a threshold of 0.1 and is kept; compared in bf16 (threshold rounded up) it was replaced."""
    for lib in (torch, tracegrad):
        x = lib.tensor([0.1, 0.05, 0.2]).to(lib.bfloat16)
        assert lib.nn.functional.threshold(x, 0.1, 20.0).float().tolist() == [x[0].item(), 20.0, x[2].item()]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("dim", [0, -1])
def test_glu_is_one_node_as_torch(dtype, dim):
    """F.glu ends in torch's GluBackward0 (a composite ended in MulBackward0), with torch's
    values, first and second derivatives (16-bit input in float32, rounded once)."""
    torch = pytest.importorskip("torch")
    a = np.random.RandomState(0).randn(4, 3, 2).astype(np.float32)
    got = []
    for T in (torch, tracegrad):
        x = T.tensor(a, dtype=getattr(T, dtype), requires_grad=True)
        y = T.nn.functional.glu(x, dim)
        g, = T.autograd.grad((y * y).sum(), x, create_graph=True)
        gg, = T.autograd.grad(g.sum(), x)
        got.append((type(y.grad_fn).__name__, str(y.dtype).split(".")[-1],
                    [t.detach().double().numpy() for t in (y, g, gg)]))
    assert got[1][:2] == got[0][:2] and got[0][0] == "GluBackward0"
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    for mine, theirs in zip(got[1][2], got[0][2]):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)
