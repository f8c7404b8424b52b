"""More torch.nn activations (SELU, CELU, Threshold, Hardshrink, Softshrink, Tanhshrink, RReLU,
Softmax2d) and the in-place ``F.*_`` variants: values, gradients, reprs and errors against torch,
and one compiled training step using them (no graph break)."""
import numpy as np
import pytest

import tracegrad

from tests.compile._harness import check_compiled, data, np_init

torch = pytest.importorskip("torch")

X0 = np.array([[-2.0, -0.6, -0.5, -0.2, 0.0], [0.2, 0.5, 0.6, 1.0, 3.0]], dtype=np.float32)

FUNCS = {
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 0.7),
    "threshold": lambda F, x: F.threshold(x, 0.3, -4.0),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.4),
    "softshrink": lambda F, x: F.softshrink(x, 0.4),
    "tanhshrink": lambda F, x: F.tanhshrink(x),
    "rrelu_eval": lambda F, x: F.rrelu(x, 0.1, 0.3),
}


def _run(T, fn, x0=X0):
    x = T.tensor(x0, requires_grad=True)
    out = fn(T.nn.functional, x * 1.0)
    (out * T.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_functional_values_and_grads_match_torch(name):
    (ov, gv), (ot, gt) = _run(tracegrad, FUNCS[name]), _run(torch, FUNCS[name])
    np.testing.assert_allclose(ov, ot, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, gt, rtol=1e-5, atol=1e-6)


INPLACE = {
    "selu_": lambda F, h: F.selu_(h), "celu_": lambda F, h: F.celu_(h, 1.3), "elu_": lambda F, h: F.elu_(h, 0.5),
    "leaky_relu_": lambda F, h: F.leaky_relu_(h, 0.2), "hardtanh_": lambda F, h: F.hardtanh_(h, -0.4, 0.6),
    "threshold_": lambda F, h: F.threshold_(h, 0.1, 2.0), "rrelu_": lambda F, h: F.rrelu_(h, 0.2, 0.4),
    "selu_inplace": lambda F, h: F.selu(h, inplace=True), "celu_inplace": lambda F, h: F.celu(h, inplace=True),
    "threshold_inplace": lambda F, h: F.threshold(h, 0.0, 1.0, inplace=True),
    "rrelu_inplace": lambda F, h: F.rrelu(h, inplace=True),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_variants_write_the_input_and_match_torch(name):
    def run(T):
        w = T.tensor(X0, requires_grad=True)
        h = w * 1.5 + 0.1
        out = INPLACE[name](T.nn.functional, h)
        assert out is h
        (out * T.arange(10.0).reshape(2, 5)).sum().backward()
        return h.detach().numpy(), w.grad.numpy()
    (hv, gv), (ht, gt) = run(tracegrad), run(torch)
    np.testing.assert_allclose(hv, ht, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, gt, rtol=1e-5, atol=1e-6)


MODULES = [("SELU", ()), ("SELU", (True,)), ("CELU", (0.5,)), ("CELU", (1.0, True)), ("Threshold", (0.1, 2.0)),
           ("Threshold", (0.1, 2.0, True)), ("Hardshrink", ()), ("Softshrink", (0.3,)), ("Tanhshrink", ()),
           ("RReLU", ()), ("RReLU", (0.1, 0.2, True)), ("Softmax2d", ())]


@pytest.mark.parametrize("name,args", MODULES)
def test_module_repr_and_eval_forward_match_torch(name, args):
    mv, mt = getattr(tracegrad.nn, name)(*args).eval(), getattr(torch.nn, name)(*args).eval()
    assert repr(mv) == repr(mt)
    x = X0.reshape(1, 2, 5, 1) if name == "Softmax2d" else X0
    (ov, gv), (ot, gt) = _run(tracegrad, lambda F, h: mv(h), x), _run(torch, lambda F, h: mt(h), x)
    np.testing.assert_allclose(ov, ot, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, gt, rtol=1e-5, atol=1e-6)


def test_rrelu_training_slopes_lie_in_range_and_grad_is_the_slope():
    tracegrad.manual_seed(0)
    x = tracegrad.full((2000,), -1.0, requires_grad=True)
    out = tracegrad.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    out.sum().backward()
    slope = -out.detach().numpy()
    assert 0.1 <= slope.min() and slope.max() <= 0.3 and slope.std() > 0.03
    np.testing.assert_allclose(x.grad.numpy(), slope, rtol=1e-6)
    pos = tracegrad.nn.RReLU()(tracegrad.arange(5.0))          # training mode: positives unchanged
    np.testing.assert_array_equal(pos.numpy(), np.arange(5.0))
    tracegrad.manual_seed(3)
    a = tracegrad.nn.functional.rrelu(-tracegrad.ones(8), training=True)
    tracegrad.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), tracegrad.nn.functional.rrelu(-tracegrad.ones(8), training=True).numpy())


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.softshrink(T.ones(3), -1.0),
    lambda T: T.nn.functional.rrelu(T.ones(3), 0.5, 0.1, True),
    lambda T: T.nn.Softmax2d()(T.ones(2, 3)),
    lambda T: T.nn.Softmax2d()(T.ones(1, 2, 3, 4, 5)),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(et.type):
        call(tracegrad)


def _make(mod, wrap):
    nn = mod.nn
    model = np_init(nn.Sequential(nn.Linear(4, 6), nn.SELU(), nn.Linear(6, 6), nn.CELU(0.8), nn.Linear(6, 6),
                                  nn.Softshrink(0.1), nn.Tanhshrink(), nn.Hardshrink(0.05), nn.Threshold(0.0, 0.1),
                                  nn.RReLU(), nn.Linear(6, 2)), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 4),)


def test_compiled_training_step_with_new_activations_equals_eager():
    comp = check_compiled(_make, calls=3)
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats


_SHRINKS = {
    "threshold": lambda T, x: T.nn.functional.threshold(x, 0.1, 20.0),
    "torch.threshold": lambda T, x: T.threshold(x, -0.5, -3.0),
    "hardshrink": lambda T, x: T.nn.functional.hardshrink(x, 0.3),
    "softshrink": lambda T, x: T.nn.functional.softshrink(x, 0.3),
    "Softshrink": lambda T, x: T.nn.Softshrink(1.0)(x),
}


def _shrink_record(T, name, dtype):
    x = T.tensor([-1.0, -0.3, 0.1, 0.2, 0.7, 1.5, float("nan"), -2.0, 0.3, -0.3]).to(getattr(T, dtype))
    x.requires_grad_()
    y = _SHRINKS[name](T, x)
    # create_graph: torch's backward formulas read the input, so the first derivative has an
    # edge to it (ThresholdBackwardBackward0, ...) and a zero second derivative
    g, = T.autograd.grad(y.sum(), x, create_graph=True)
    gg, = T.autograd.grad(g.sum(), x)
    return (type(y.grad_fn).__name__, type(g.grad_fn).__name__, str(y.dtype).split(".")[-1],
            np.asarray(y.detach().float()).tolist(), np.asarray(g.detach().float()).tolist(), gg.abs().sum().item())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_SHRINKS))
def test_threshold_and_shrinks_are_torchs_nodes(name, dtype):
    got, want = _shrink_record(tracegrad, name, dtype), _shrink_record(torch, name, dtype)
    assert got[:3] == want[:3] and got[5] == want[5] == 0.0
    np.testing.assert_array_equal(got[3], want[3])   # values bit-equal (NaN kept, -0.0 in the band)
    np.testing.assert_array_equal(got[4], want[4])


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rrelu_node_and_gradient_as_torch(training, dtype):
    """rrelu ends in torch's RreluWithNoiseBackward0 in both modes (was LeakyReluBackward0 in
    eval, WhereBackward0 in training). Eval: torch's values and gradients (x = 0 and NaN take
    the slope). Training (random slopes differ): positives pass with gradient 1, x <= 0 is
    scaled by a slope in [lower, upper] that is also its gradient, 0 included."""
    torch = pytest.importorskip("torch")
    a = np.array([-1.5, 0.0, 0.7, -0.2, np.nan], np.float32)
    got = []
    for T in (torch, tracegrad):
        x = T.tensor(a, dtype=getattr(T, dtype), requires_grad=True)
        y = T.nn.functional.rrelu(x, 0.1, 0.3, training=training)
        g, = T.autograd.grad(y.sum(), x)
        got.append((type(y.grad_fn).__name__, y.detach().float().numpy(), g.float().numpy()))
    assert got[1][0] == got[0][0] == "RreluWithNoiseBackward0"
    y, g = got[1][1], got[1][2]
    if not training:
        np.testing.assert_allclose(y, got[0][1], rtol=1e-6)
        np.testing.assert_allclose(g, got[0][2], rtol=1e-6)
        return
    assert y[2] == got[0][1][2] and g[2] == 1.0 and np.isnan(y[4]) and g[4] == 1.0 and y[1] == 0.0
    assert np.all((g[[0, 1, 3]] >= 0.1 - 1e-3) & (g[[0, 1, 3]] <= 0.3 + 1e-3))
    np.testing.assert_allclose(y[[0, 3]], a[[0, 3]] * g[[0, 3]], rtol=1e-2)
