"""The deprecated ``size_average``/``reduce`` arguments of every loss torch still takes them
on (functional and module forms) and the deprecated ``reduction='elementwise_mean'``: the same
reduction, the same warning class and text as torch (``torch/nn/_reduction.py``)."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

_R = np.random.RandomState(0)
_X = _R.standard_normal((4, 3)).astype(np.float32)
_Y = _R.standard_normal((4, 3)).astype(np.float32)
_P = (1 / (1 + np.exp(-_X))).astype(np.float32)
_T01 = (_R.rand(4, 3) > 0.5).astype(np.float32)
_PM1 = np.where(_R.rand(4) > 0.5, 1.0, -1.0).astype(np.float32)
_PM1_2D = np.where(_R.rand(4, 3) > 0.5, 1.0, -1.0).astype(np.float32)
_CLS = np.array([0, 2, 1, 2])
_ML = np.array([[0, 2, -1], [1, -1, 0], [2, 1, 0], [1, -1, -1]])
_V = _R.standard_normal(4).astype(np.float32)

# name -> (arrays in torch's argument order, how many leading ones require grad, module name, module kwargs)
LOSSES = {
    "l1_loss": ((_X, _Y), 2, "L1Loss", {}),
    "mse_loss": ((_X, _Y), 2, "MSELoss", {}),
    "smooth_l1_loss": ((_X, _Y), 2, "SmoothL1Loss", {}),
    "soft_margin_loss": ((_X, _PM1_2D), 1, "SoftMarginLoss", {}),
    "binary_cross_entropy": ((_P, _T01), 1, "BCELoss", {}),
    "binary_cross_entropy_with_logits": ((_X, _T01), 1, "BCEWithLogitsLoss", {}),
    "kl_div": ((np.log(_P), _P), 2, "KLDivLoss", {}),
    "poisson_nll_loss": ((_X, np.abs(_Y)), 1, "PoissonNLLLoss", {}),
    "nll_loss": ((_X, _CLS), 1, "NLLLoss", {}),
    "cross_entropy": ((_X, _CLS), 1, "CrossEntropyLoss", {}),
    "multi_margin_loss": ((_X, _CLS), 1, "MultiMarginLoss", {}),
    "multilabel_margin_loss": ((_X, _ML), 1, "MultiLabelMarginLoss", {}),
    "multilabel_soft_margin_loss": ((_X, _T01), 1, "MultiLabelSoftMarginLoss", {}),
    "hinge_embedding_loss": ((_X, _PM1_2D), 1, "HingeEmbeddingLoss", {}),
    "margin_ranking_loss": ((_V, _V[::-1].copy(), _PM1), 2, "MarginRankingLoss", {}),
    "cosine_embedding_loss": ((_X, _Y, _PM1), 2, "CosineEmbeddingLoss", {}),
    "triplet_margin_loss": ((_X, _Y, _X[::-1].copy()), 3, "TripletMarginLoss", {}),
}
LEGACY = [(None, False), (False, None), (True, True), (False, False), (True, False), (None, True), (True, None)]


def _call(mod, fn, arrays, n_grad, **kw):
    """(value, grads, [(warning class, text)]) of one call."""
    ts = [mod.tensor(a, requires_grad=i < n_grad) for i, a in enumerate(arrays)]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*ts, **kw)
    out.sum().backward()
    grads = [t.grad.numpy() for t in ts if t.requires_grad]
    return out.detach().numpy(), grads, [(w.category, str(w.message)) for w in rec]


def _same(got, want, what):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6, err_msg=what)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=what)
    assert got[2] == want[2], f"{what}: warnings {got[2]} != torch {want[2]}"


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_functional_legacy_arguments(name, size_average, reduce):
    arrays, n, _, _ = LOSSES[name]
    want = _call(torch, getattr(torch.nn.functional, name), arrays, n, size_average=size_average, reduce=reduce)
    got = _call(tracegrad, getattr(tracegrad.nn.functional, name), arrays, n, size_average=size_average, reduce=reduce)
    assert want[2], "torch warns on legacy arguments"
    _same(got, want, f"{name}(size_average={size_average}, reduce={reduce})")


@pytest.mark.parametrize("size_average,reduce", LEGACY[:4])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_module_legacy_arguments(name, size_average, reduce):
    """The module maps and warns once, at construction; ``reduction`` holds the mapped name."""
    arrays, n, cls, kw = LOSSES[name]
    out = []
    for mod in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            m = getattr(mod.nn, cls)(size_average=size_average, reduce=reduce, **kw)
        built = [(w.category, str(w.message)) for w in rec]
        value, grads, called = _call(mod, m, arrays, n)
        out.append((m.reduction, built, value, grads, called))
    (r, built, *rest), (wr, wbuilt, *wrest) = out[1], out[0]
    assert (r, built) == (wr, wbuilt)
    _same(rest, wrest, f"{cls}(size_average={size_average}, reduce={reduce})")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_elementwise_mean_is_mean_with_torch_warning(name):
    arrays, n, _, _ = LOSSES[name]
    outcome = []
    for mod in (torch, tracegrad):
        try:
            outcome.append(_call(mod, getattr(mod.nn.functional, name), arrays, n, reduction="elementwise_mean"))
        except ValueError as e:
            outcome.append(("ValueError", str(e).replace("torch.", "")))
    want, got = outcome
    if want[0] == "ValueError":
        assert got[0] == "ValueError", f"{name}: torch raised ValueError, tracegrad returned"
        return
    assert got[0] != "ValueError", f"{name}: tracegrad raised {got[1]}"
    _same(got, want, name)


def test_huber_loss_elementwise_mean():
    x = np.linspace(-2, 2, 6).astype(np.float32)
    got = _call(tracegrad, tracegrad.nn.functional.huber_loss, (x, x[::-1].copy()), 1, reduction="elementwise_mean")
    want = _call(torch, torch.nn.functional.huber_loss, (x, x[::-1].copy()), 1, reduction="elementwise_mean")
    _same(got, want, "huber_loss")


def test_legacy_helpers_mirror_torch_nn_reduction():
    from torch.nn import _reduction as tr

    from tracegrad.nn import _reduction as gr
    for sa in (None, True, False):
        for rd in (None, True, False):
            with warnings.catch_warnings(record=True) as w1:
                warnings.simplefilter("always")
                a = tr.legacy_get_string(sa, rd)
            with warnings.catch_warnings(record=True) as w2:
                warnings.simplefilter("always")
                b = gr.legacy_get_string(sa, rd)
            assert a == b and [str(x.message) for x in w1] == [str(x.message) for x in w2]
            assert tr.legacy_get_enum(sa, rd, emit_warning=False) == gr.legacy_get_enum(sa, rd, emit_warning=False)
    for r in ("none", "mean", "sum"):
        assert tr.get_enum(r) == gr.get_enum(r)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        gr.get_enum("max")
