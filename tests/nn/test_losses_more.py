"""More torch.nn losses (margin ranking, hinge/cosine embedding, soft margin, multilabel soft
margin, multi margin, multilabel margin, Poisson/Gaussian NLL, triplet with distance, CTC):
values and gradients for every reduction, module reprs and error classes against torch, and a
compiled training step using them (no graph break)."""
import numpy as np
import pytest

import tracegrad

from tests.compile._harness import check_compiled, data, np_init

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)
A = R.randn(4, 5).astype(np.float32)
B = R.randn(4, 5).astype(np.float32)
C = R.randn(4, 5).astype(np.float32)
SIGN4 = np.array([1.0, -1.0, -1.0, 1.0], np.float32)
SIGN45 = np.where(R.rand(4, 5) > 0.5, 1.0, -1.0).astype(np.float32)
CLS = np.array([0, 3, 4, 1])
MULTI = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 2, 0, 0], [4, 4, -1, 0, 0]])
BIN = (R.rand(4, 5) > 0.5).astype(np.float32)
COUNTS = R.poisson(2.0, (4, 5)).astype(np.float32)
W5 = np.array([0.5, 1.0, 2.0, 0.1, 1.5], np.float32)
POS_VAR = (R.rand(4, 5) + 0.1).astype(np.float32)

CASES = {
    "margin_ranking": lambda F, x, y, r: F.margin_ranking_loss(x[:, 0], y[:, 1], T_(x, SIGN4), 0.3, reduction=r),
    "hinge_embedding": lambda F, x, y, r: F.hinge_embedding_loss(x, T_(x, SIGN45), 0.7, reduction=r),
    "cosine_embedding": lambda F, x, y, r: F.cosine_embedding_loss(x, y, T_(x, SIGN4), 0.1, reduction=r),
    "cosine_embedding_1d": lambda F, x, y, r: F.cosine_embedding_loss(x[0], y[0], T_(x, np.float32(-1.0)),
                                                                      reduction=r),
    "soft_margin": lambda F, x, y, r: F.soft_margin_loss(x, T_(x, SIGN45), reduction=r),
    "multilabel_soft_margin": lambda F, x, y, r: F.multilabel_soft_margin_loss(x, T_(x, BIN), reduction=r),
    "multilabel_soft_margin_w": lambda F, x, y, r: F.multilabel_soft_margin_loss(x, T_(x, BIN), T_(x, W5),
                                                                                 reduction=r),
    "multi_margin": lambda F, x, y, r: F.multi_margin_loss(x, T_(x, CLS), reduction=r),
    "multi_margin_p2_w": lambda F, x, y, r: F.multi_margin_loss(x, T_(x, CLS), p=2, margin=0.5,
                                                                weight=T_(x, W5), reduction=r),
    "multi_margin_1d": lambda F, x, y, r: F.multi_margin_loss(x[1], T_(x, np.int64(2)), reduction=r),
    "multilabel_margin": lambda F, x, y, r: F.multilabel_margin_loss(x, T_(x, MULTI), reduction=r),
    "multilabel_margin_1d": lambda F, x, y, r: F.multilabel_margin_loss(x[0], T_(x, MULTI[0]), reduction=r),
    "poisson_log": lambda F, x, y, r: F.poisson_nll_loss(x, T_(x, COUNTS), reduction=r),
    "poisson_full": lambda F, x, y, r: F.poisson_nll_loss(x.exp(), T_(x, COUNTS), log_input=False, full=True,
                                                          reduction=r),
    "gaussian": lambda F, x, y, r: F.gaussian_nll_loss(x, y, T_(x, POS_VAR), reduction=r),
    "gaussian_var_grad_full": lambda F, x, y, r: F.gaussian_nll_loss(x, y.detach(), x.abs() * 0.5 + 0.001,
                                                                     full=True, reduction=r),
    "gaussian_short_var": lambda F, x, y, r: F.gaussian_nll_loss(x, y, T_(x, POS_VAR[:, 0]), reduction=r),
    "gaussian_one_dim_var": lambda F, x, y, r: F.gaussian_nll_loss(x, y, T_(x, POS_VAR[:1]), reduction=r),
    "gaussian_float_var": lambda F, x, y, r: F.gaussian_nll_loss(x, y, 0.7, reduction=r),
    "triplet_distance": lambda F, x, y, r: F.triplet_margin_with_distance_loss(x, y, T_(x, C), reduction=r),
    # the weight= of mse_loss/l1_loss/huber_loss (torch >= 2.6; once silently ignored here)
    "mse_weight": lambda F, x, y, r: F.mse_loss(x, y, reduction=r, weight=T_(x, POS_VAR)),
    "l1_weight": lambda F, x, y, r: F.l1_loss(x, y, reduction=r, weight=T_(x, POS_VAR)),
    "huber_weight": lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.5, weight=T_(x, POS_VAR)),
    "mse_weight_bcast_target": lambda F, x, y, r: F.mse_loss(x, y[0], reduction=r, weight=T_(x, POS_VAR)),
    "triplet_distance_fn_swap": lambda F, x, y, r: F.triplet_margin_with_distance_loss(
        x, y, T_(x, C), distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.5, swap=True,
        reduction=r),
}


def T_(like, a):
    """``a`` as a tensor of the library ``like`` belongs to."""
    mod = tracegrad if isinstance(like, tracegrad.Tensor) else torch
    return mod.tensor(a)


def _run(T, name, reduction):
    x, y = T.tensor(A, requires_grad=True), T.tensor(B, requires_grad=True)
    out = CASES[name](T.nn.functional, x * 1.0, y * 1.0, reduction)
    (out * T.linspace(0.5, 1.5, out.numel()).reshape(out.shape)).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), None if y.grad is None else y.grad.numpy()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_loss_values_and_grads_match_torch(name, reduction):
    got, want = _run(tracegrad, name, reduction), _run(torch, name, reduction)
    assert got[0].shape == want[0].shape
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-5)
    assert (got[2] is None) == (want[2] is None)
    if want[2] is not None:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-5)


MODULES = [
    ("MarginRankingLoss", {"margin": 0.2}, lambda T: (T.tensor(A[:, 0]), T.tensor(B[:, 0]), T.tensor(SIGN4))),
    ("HingeEmbeddingLoss", {"reduction": "sum"}, lambda T: (T.tensor(A), T.tensor(SIGN45))),
    ("CosineEmbeddingLoss", {"margin": 0.1}, lambda T: (T.tensor(A), T.tensor(B), T.tensor(SIGN4))),
    ("SoftMarginLoss", {"size_average": False}, lambda T: (T.tensor(A), T.tensor(SIGN45))),
    ("MultiLabelSoftMarginLoss", {"weight": W5}, lambda T: (T.tensor(A), T.tensor(BIN))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.4, "weight": W5}, lambda T: (T.tensor(A), T.tensor(CLS))),
    ("MultiLabelMarginLoss", {"reduce": False}, lambda T: (T.tensor(A), T.tensor(MULTI))),
    ("PoissonNLLLoss", {"full": True}, lambda T: (T.tensor(A), T.tensor(COUNTS))),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3}, lambda T: (T.tensor(A), T.tensor(B), T.tensor(POS_VAR))),
    ("TripletMarginWithDistanceLoss", {"swap": True}, lambda T: (T.tensor(A), T.tensor(B), T.tensor(C))),
]


@pytest.mark.parametrize("name,kw,args", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_match_torch(name, kw, args):
    def build(T):
        k = {a: (T.tensor(v) if isinstance(v, np.ndarray) else v) for a, v in kw.items()}
        return getattr(T.nn, name)(**k)
    mv, mt = build(tracegrad), build(torch)
    assert repr(mv) == repr(mt)
    assert [n for n, _ in mv.named_buffers()] == [n for n, _ in mt.named_buffers()]
    np.testing.assert_allclose(mv(*args(tracegrad)).numpy(), mt(*args(torch)).numpy(), rtol=1e-5, atol=1e-6)


ERRORS = [
    lambda T: T.nn.functional.margin_ranking_loss(T.ones(3), T.ones(3, 1), T.ones(3)),
    lambda T: T.nn.functional.margin_ranking_loss(T.ones(3), T.ones(3), T.ones(3), reduction="avg"),
    lambda T: T.nn.functional.soft_margin_loss(T.ones(3), T.ones(3), reduction="avg"),
    lambda T: T.nn.functional.multilabel_soft_margin_loss(T.ones(2, 3), T.ones(2, 3), reduction="avg"),
    lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3), T.zeros(2, dtype=T.long), p=3),
    lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3), T.zeros(2, dtype=T.long), weight=T.ones(3, 1)),
    lambda T: T.nn.MultiMarginLoss(weight=T.ones(3, 1)),
    lambda T: T.nn.functional.poisson_nll_loss(T.ones(3), T.ones(3), reduction="avg"),
    lambda T: T.nn.functional.gaussian_nll_loss(T.ones(3), T.ones(3), -1.0),
    lambda T: T.nn.functional.gaussian_nll_loss(T.ones(3), T.ones(3), T.tensor([1.0, -1.0, 1.0])),
    lambda T: T.nn.functional.gaussian_nll_loss(T.ones(2, 3), T.ones(2, 3), T.ones(3, 3)),
    lambda T: T.nn.functional.gaussian_nll_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), reduction="avg"),
    lambda T: T.nn.functional.triplet_margin_with_distance_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), margin=0),
    lambda T: T.nn.functional.triplet_margin_with_distance_loss(T.ones(2, 3), T.ones(2, 3), T.ones(3)),
    lambda T: T.nn.functional.triplet_margin_with_distance_loss(T.ones(3), T.ones(3), T.ones(3), reduction="x"),
    lambda T: T.nn.TripletMarginWithDistanceLoss(margin=-1.0),
    lambda T: T.nn.functional.cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 1)),
    lambda T: T.nn.functional.cosine_embedding_loss(T.ones(3), T.ones(3), T.ones(2)),
    lambda T: T.nn.functional.mse_loss(T.ones(2, 3), T.ones(2, 3), weight=T.ones(3)),
    lambda T: T.nn.functional.huber_loss(T.ones(2, 3), T.ones(3), weight=T.ones(1, 3)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    with pytest.raises(Exception) as et:
        ERRORS[i](torch)
    with pytest.raises(et.type):
        ERRORS[i](tracegrad)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_mismatched_target_warns_then_raises_broadcast_error(name):
    # torch warns about the target size first, then broadcast_tensors refuses the shapes
    got = []
    for T in (torch, tracegrad):
        with pytest.warns(UserWarning, match="Using a target size"):
            with pytest.raises(RuntimeError) as e:
                getattr(T.nn.functional, name)(T.ones(4, 2), T.ones(4))
        got.append(str(e.value))
    assert got[0] in got[1], got


def _make(mod, wrap):
    nn = mod.nn
    model = np_init(nn.Linear(4, 5), mod)
    emb = np_init(nn.Linear(4, 3), mod, seed=1)
    opt = mod.optim.SGD(list(model.parameters()) + list(emb.parameters()), lr=0.05)
    multi, gauss = nn.MultiMarginLoss(p=2, weight=mod.tensor(W5)), nn.GaussianNLLLoss()
    trip = nn.TripletMarginWithDistanceLoss(swap=True)

    def step(x, y):
        opt.zero_grad()
        out, e = model(x), emb(x)
        loss = (multi(out, y) + nn.functional.multilabel_margin_loss(out, mod.tensor(MULTI))
                + nn.functional.hinge_embedding_loss(out[:, :4], mod.tensor(SIGN45[:, :4]))
                + nn.functional.poisson_nll_loss(out, mod.tensor(COUNTS), full=True)
                + gauss(out, x.sum(1, keepdim=True), out.pow(2) + 0.1)
                + nn.functional.cosine_embedding_loss(e, e.flip(0), mod.tensor(SIGN4))
                + trip(e, e.roll(1, 0), e.roll(2, 0)) + nn.functional.multilabel_soft_margin_loss(out, mod.tensor(BIN)))
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "emb": emb, "opt": opt}, \
        lambda i: (data(mod, i, 4, 4), mod.tensor(CLS))


def test_compiled_training_step_with_new_losses_equals_eager():
    comp = check_compiled(_make, calls=3, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats


CTC_LOGITS = R.randn(6, 3, 5).astype(np.float32)
CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0], [4, 4, 0]])


def _ctc(T, reduction, *, layout="padded", blank=0, zero_infinity=False, il=(6, 5, 3), tl=(3, 2, 2),
         unbatched=False, module=False):
    x = T.tensor(CTC_LOGITS[:, :1] if unbatched else CTC_LOGITS, requires_grad=True)
    lp = x.log_softmax(-1)
    lp.retain_grad()
    tg = T.tensor(np.where(CTC_TARGETS == 0, blank + 1, CTC_TARGETS) if blank else CTC_TARGETS)
    il, tl = list(il), list(tl)
    if unbatched:
        lp_in, tg, il, tl = lp[:, 0], tg[0], il[0], tl[0]
        lens = (T.tensor(il), T.tensor(tl))
    else:
        lp_in = lp
        if layout == "concat":
            tg = T.cat([tg[i, :tl[i]] for i in range(len(tl))])
        lens = (T.tensor(il), T.tensor(tl)) if layout != "lists" else (il, tl)
    if module:
        out = T.nn.CTCLoss(blank=blank, reduction=reduction, zero_infinity=zero_infinity)(lp_in, tg, *lens)
    else:
        out = T.nn.functional.ctc_loss(lp_in, tg, *lens, blank=blank, reduction=reduction,
                                       zero_infinity=zero_infinity)
    (out * T.linspace(0.5, 1.5, out.numel()).reshape(out.shape)).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), lp.grad.numpy()


CTC_CASES = {
    "padded": {}, "concat": {"layout": "concat"}, "lists": {"layout": "lists"}, "blank3": {"blank": 3},
    "zero_len_target": {"tl": (3, 0, 1)}, "unbatched": {"unbatched": True}, "module": {"module": True},
    "impossible_zero_infinity": {"il": (6, 1, 3), "zero_infinity": True},
    # (test/test_nn.py run unchanged) an empty input: loss 0 for an empty target, else inf
    "zero_input_length": {"il": (6, 0, 0), "tl": (3, 0, 2)},
    "zero_input_length_zero_infinity": {"il": (6, 0, 0), "tl": (3, 0, 2), "zero_infinity": True},
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", sorted(CTC_CASES))
def test_ctc_loss_values_and_grads_match_torch(case, reduction):
    got, want = _ctc(tracegrad, reduction, **CTC_CASES[case]), _ctc(torch, reduction, **CTC_CASES[case])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("tl", [(0, 0, 0), (0, 2, 0)])
def test_ctc_all_targets_empty_match_torch(tl):
    """test_nn's CTCLoss_empty_target: a batch whose targets are all empty (S = 0) reached the
    kernel's shifted-state concatenation with a width of 1 and failed; torch gives -sum(lp[:, blank])."""
    rs = np.random.RandomState(5)
    logits = rs.randn(6, 3, 4)
    targets = rs.randint(1, 4, (sum(tl),))
    res = []
    for lib in (torch, tracegrad):
        x = lib.tensor(logits, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(x.log_softmax(2), lib.tensor(targets), [6, 5, 6], list(tl), reduction="none")
        loss.sum().backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
    for g, w in zip(res[1], res[0]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_ctc_empty_log_probs_error_as_torch():
    for lib in (torch, tracegrad):
        e = lib.tensor([], dtype=lib.long)
        with pytest.raises(RuntimeError, match="log_probs tensor must not be empty"):
            lib.nn.functional.ctc_loss(lib.rand(0, 0, 4), e, e, e, reduction="none")


def test_ctc_impossible_alignment_is_inf_without_zero_infinity():
    lp = tracegrad.tensor(CTC_LOGITS, requires_grad=True).log_softmax(-1)
    out = tracegrad.nn.functional.ctc_loss(lp, tracegrad.tensor(CTC_TARGETS), [6, 1, 3], [3, 2, 2], reduction="none")
    want = torch.nn.functional.ctc_loss(torch.tensor(CTC_LOGITS).log_softmax(-1), torch.tensor(CTC_TARGETS),
                                        [6, 1, 3], [3, 2, 2], reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), want.numpy(), rtol=1e-5)
    assert np.isinf(out.detach().numpy()[1]) and out.grad_fn.name() == "CtcLossBackward0"


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3), T.ones(2, 2, dtype=T.long), [4, 4], [2, 2], blank=3),
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3), T.ones(2, 2, dtype=T.long), [4, 4], [2, 2], reduction="x"),
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3), T.ones(2, 2, dtype=T.long), T.tensor([4, 4]), [2, 2]),
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3, 1), T.ones(2, 2, dtype=T.long), [4, 4], [2, 2]),
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3), T.ones(2, 2, dtype=T.long), [5, 4], [2, 2]),
    lambda T: T.nn.functional.ctc_loss(T.zeros(4, 2, 3), T.ones(2, 2, dtype=T.long), [4, 4], [3, 2]),
])
def test_ctc_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(et.type):
        call(tracegrad)


def _make_ctc(mod, wrap):
    nn = mod.nn
    model = np_init(nn.Linear(4, 5), mod)
    opt = mod.optim.Adam(model.parameters(), lr=0.01)
    ctc = nn.CTCLoss(zero_infinity=True)

    def step(x, tg):
        opt.zero_grad()
        lp = model(x).log_softmax(-1)                      # (T=6, N=2, C=5)
        loss = ctc(lp, tg, mod.tensor([6, 4]), mod.tensor([2, 2]))
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, \
        lambda i: (data(mod, i, 6, 2, 4), mod.tensor(CTC_TARGETS[(i % 2):(i % 2) + 2]))


def test_compiled_ctc_training_step_equals_eager_and_torch():
    comp = check_compiled(_make_ctc, calls=3, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats


@pytest.mark.parametrize("name,call", [
    ("multi_margin", lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([1, 3, 0]))),
    ("multi_margin_p2_weight_none", lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor([1, 3, 0]), p=2, margin=0.5, weight=T.tensor([1., 2., 3., .5]), reduction="none")),
    ("multi_margin_unbatched", lambda T, x: T.nn.functional.multi_margin_loss(x[1], T.tensor(2), reduction="none")),
    ("multilabel_margin", lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor([[1, 3, -1, 0], [0, 0, 2, -1], [3, 2, 1, 0]]))),
    ("multilabel_margin_unbatched_none", lambda T, x: T.nn.functional.multilabel_margin_loss(
        x[0], T.tensor([1, 3, -1, 0]), reduction="none")),
])
def test_margin_losses_have_torch_nodes(name, call):
    """multi_margin_loss and multilabel_margin_loss end in torch's own nodes
    (``MultiMarginLossBackward0``, ``MultilabelMarginLossBackward0``; a composite ended in
    MeanBackward0/DivBackward0/ViewBackward0), with torch's values, shapes and first and second
    derivatives."""
    a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    got = []
    for T in (torch, tracegrad):
        x = T.tensor(a, requires_grad=True)
        out = call(T, x)
        g, = T.autograd.grad((out * 1.5).sum(), x, create_graph=True)
        got.append((type(out.grad_fn).__name__, tuple(out.shape), out.detach().numpy(), g.detach().numpy()))
    assert got[1][:2] == got[0][:2]
    np.testing.assert_allclose(got[1][2], got[0][2], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1][3], got[0][3], rtol=1e-6, atol=1e-6)
