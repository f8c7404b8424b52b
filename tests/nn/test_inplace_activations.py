"""``inplace=True`` activations after an op that saved its input (DCGAN's BatchNorm ->
LeakyReLU(0.2, inplace=True)): values and gradients as torch, the input written in place."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

ACTS = {
    "leaky_relu": lambda F, h: F.leaky_relu(h, 0.2, inplace=True),
    "elu": lambda F, h: F.elu(h, 0.7, inplace=True),
    "hardtanh": lambda F, h: F.hardtanh(h, -0.5, 0.5, inplace=True),
    "relu6": lambda F, h: F.relu6(h, inplace=True),
    "silu": lambda F, h: F.silu(h, inplace=True),
    "mish": lambda F, h: F.mish(h, inplace=True),
    "relu": lambda F, h: F.relu(h, inplace=True),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_inplace_activation_after_a_saving_op_matches_torch(name):
    w0 = np.linspace(-2.0, 2.0, 12).reshape(3, 4).astype(np.float32)
    scale = np.arange(4.0, dtype=np.float32)

    def run(T):
        w = T.tensor(w0, requires_grad=True)
        h = w * 1.5 + 0.1                       # MulBackward saved w; h is written below
        out = ACTS[name](T.nn.functional, h)
        assert out is h                          # the input itself, written
        (out * T.tensor(scale)).sum().backward()
        return h.detach().numpy(), w.grad.numpy()
    (hv, gv), (ht, gt) = run(tracegrad), run(torch)
    np.testing.assert_allclose(hv, ht, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gv, gt, rtol=1e-5, atol=1e-6)


def test_inplace_leaky_relu_module_in_a_conv_batchnorm_stack_trains():
    tracegrad.manual_seed(0)
    nn = tracegrad.nn
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.LeakyReLU(0.2, inplace=True))
    x = tracegrad.randn(2, 3, 6, 6)
    m(x).pow(2).sum().backward()
    ref = nn.Sequential(m[0], m[1], nn.LeakyReLU(0.2))
    grads = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    ref(x).pow(2).sum().backward()
    for g, p in zip(grads, ref.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_inplace_activation_on_a_leaf_requiring_grad_raises_as_torch():
    for T in (tracegrad, torch):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            T.nn.functional.leaky_relu(T.ones(3, requires_grad=True), 0.1, inplace=True)


_SLOPED = {
    "elu_ negative alpha": lambda T, x: T.nn.functional.elu_(x, alpha=-1.0),
    "elu(inplace) negative alpha": lambda T, x: T.nn.functional.elu(x, alpha=-0.5, inplace=True),
    "leaky_relu_ negative slope": lambda T, x: T.nn.functional.leaky_relu_(x, -0.1),
    "LeakyReLU(inplace) negative slope": lambda T, x: T.nn.LeakyReLU(-0.1, inplace=True)(x),
    "celu_ negative alpha": lambda T, x: T.celu_(x, -1.0),
    "elu_ zero alpha": lambda T, x: T.nn.functional.elu_(x, alpha=0.0),
    "leaky_relu_ positive slope": lambda T, x: T.nn.functional.leaky_relu_(x, 0.1),
}


def _sloped_outcome(T, name):
    a = T.tensor([-1.0, 2.0], requires_grad=True)
    y = _SLOPED[name](T, a * 1)
    values = np.round(y.detach().numpy(), 5).tolist()
    try:
        y.sum().backward()
    except RuntimeError as e:   # torch's in-place backward cannot invert a negative slope
        return values, "RuntimeError", "negative slope" in str(e)
    return values, np.round(a.grad.numpy(), 5).tolist()


@pytest.mark.parametrize("name", sorted(_SLOPED))
def test_inplace_elu_and_leaky_relu_with_a_negative_slope_refuse_backward_as_torch(name):
    assert _sloped_outcome(tracegrad, name) == _sloped_outcome(torch, name)


@pytest.mark.parametrize("write", [lambda T, x: T.nn.functional.threshold_(x, 0.5, 0.0),
                                   lambda T, x: T.nn.Threshold(0.5, 2.0, inplace=True)(x),
                                   lambda T, x: x.relu_()], ids=["threshold_", "Threshold(inplace)", "relu_"])
def test_threshold_writes_an_expanded_tensor_as_torch(write):
    # torch's threshold_ skips the internal-overlap check (every alias gets the same value);
    # relu_ and the other in-place ops refuse
    def outcome(T):
        x = T.tensor([0.2, 0.8]).expand(3, 2)
        try:
            write(T, x)
        except RuntimeError as e:
            return "RuntimeError", "more than one element" in str(e)
        return x.tolist()
    assert outcome(tracegrad) == outcome(torch)
