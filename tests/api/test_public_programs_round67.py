"""A sixty-seventh round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round67_src.py, executed with ``torch`` bound to either module. Each
test compares losses, printed logs, gradients and parameters after optimizer steps:

- YiHsiu7893/CPA-Project (no license file), ``Vit.py`` at 516d99b (a vision transformer on
  MNIST, from scratch): ``patchify`` writing each flattened patch into ``torch.zeros`` by
  ``patches[idx, i * n_patches + j] = patch.flatten()`` (a ``CopySlices`` history on the
  patches, the images' gradient through it), ``get_positional_embeddings`` filling
  ``result[i][j]`` with NumPy float64 scalars, a ``register_buffer(..., persistent=False)``
  missing from the ``state_dict``, a per-sequence, per-head attention from ``nn.ModuleList``s
  (``q @ k.T``, ``torch.hstack``, ``torch.cat`` of ``unsqueeze``), the class token
  ``nn.Parameter(torch.rand(1, d)).expand(n, 1, -1)`` concatenated before the patch tokens,
  ``positional_embeddings.repeat(n, 1, 1)``, pre-norm blocks with ``GELU``, ``out[:, 0]``, a
  ``Softmax`` head under ``CrossEntropyLoss``; the script's Adam loop with
  ``loss.detach().item() / len(train_loader)``, its ``%``-formatted logs, the ``no_grad`` test
  loop's ``torch.sum(torch.argmax(y_hat, dim=1) == y).detach().item()``, and its last print's
  incomplete format ``"%.2f%"``: the same ValueError with both libraries.
- nadaselham/Hybrid-CNN-TCN (MIT), ``models/tcn.py`` at 88f20ce (a temporal convolutional
  network): dilated ``Conv1d`` padded by ``(kernel_size - 1) * dilation`` on both sides and
  ``Chomp1d``'s ``x[:, :, :-chomp_size].contiguous()`` making it causal (the gradient of an
  output step is zero on every later input step), a 1x1 ``downsample`` only where the channel
  count changes, ``relu(out + res)``, ``Dropout`` (off in ``eval()``); its ``train.py`` is a
  placeholder, so the tests write the loop: Adam on a ``Linear`` head over the last step.
- albashawalid05-netizen/neural-ode-vs-resnet (no license file), ``src/models.py`` and
  ``src/train.py`` at dc0354e (a neural ODE against a residual step model): torchdiffeq's
  ``odeint`` given as a hand-written fixed-step RK4 (``k1``..``k4`` from the step sizes of a
  time tensor that may require grad), ``traj.permute(1, 0, 2)``; ``ResNetStep``'s Euler-like
  ``x = x + self.f(x)`` stacked by ``torch.stack(xs, dim=1)``; ``masked_mse`` with
  ``torch.clamp(m.sum() * pred.shape[-1], min=1.0)``; ``train_one``'s ``isinstance`` dispatch,
  ``opt.zero_grad(set_to_none=True)`` and Adam; ``@torch.no_grad()`` ``evaluate`` after
  ``model.eval()``.
Changes, the same on both sides: parameters from seeded NumPy streams (layers whose
``reset_parameters`` draw them, ``torch.rand`` from NumPy), synthetic data for ``MNIST``, a
``DataLoader`` without shuffling, ``tqdm`` passing its iterable through, tiny sizes.
"""
import contextlib
import functools
import io

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, same_error, same_logs, \
    state as _state
from public_programs_round67_src import NODE_MODELS, NODE_TRAIN, TCN, VIT, VIT_MAIN, program

torch = pytest.importorskip("torch")

from api.test_public_programs_round66 import draws, seeded_nn  # noqa: E402  (seeded layers)

_compare = functools.partial(compare, torch, tracegrad)


# ---------------------------------------------------------------- ViT (YiHsiu7893)

def vit_program(T, seed=0):
    """Vit.py's functions and classes, its ``nn.Linear`` and ``torch.rand`` drawing from NumPy."""
    return program(draws(T, seed), VIT)


def vit_model(T, ns, side=8, n_patches=2):
    return ns.ViT((1, side, side), n_patches=n_patches, n_blocks=1, hidden_d=4, n_heads=2, out_d=3)


def _images(T, rs, n=3, side=8, classes=3):
    return (T.tensor(rs.rand(n, 1, side, side).astype(np.float32)), T.tensor(rs.randint(0, classes, n)))


def _vit_step(T):
    ns = vit_program(T)
    m = vit_model(T, ns)
    x, y = _images(T, np.random.RandomState(3))
    x.requires_grad_(True)
    patches = ns.patchify(x, 2)
    out = m(x)
    loss = T.nn.CrossEntropyLoss()(out, y)
    loss.backward()
    facts = [type(patches.grad_fn).__name__, type(loss.grad_fn).__name__, "positional_embeddings" in m.state_dict(),
             len(m.state_dict()), m.positional_embeddings.requires_grad]
    return facts, _arr(patches, out, loss, x.grad, m.positional_embeddings) + _grads(m)


def test_vit_forward_backward():
    (ref_facts, ref), (got_facts, got) = _vit_step(torch), _vit_step(tracegrad)
    assert ref_facts == got_facts == ["CopySlices", "NllLossBackward0", False, 25, False], (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _positional(T):
    ns = vit_program(T)
    e = ns.get_positional_embeddings(5, 6)
    return [e.dtype == T.float32, e.requires_grad], _arr(e)


def test_positional_embeddings_from_numpy_scalars():
    # ``result[i][j] = np.sin(...)``: a float64 NumPy scalar written into a float32 row view
    (ref_facts, ref), (got_facts, got) = _positional(torch), _positional(tracegrad)
    assert ref_facts == got_facts == [True, False]
    np.testing.assert_array_equal(got[0], ref[0])


def _patchify_loop(T, n_patches):
    ns = vit_program(T)
    x = T.tensor(np.random.RandomState(5).randn(2, 2, 6, 6).astype(np.float32), requires_grad=True)
    p = ns.patchify(x, n_patches)
    (p * T.arange(p.numel(), dtype=T.float32).reshape(p.shape)).sum().backward()
    return [type(p.grad_fn).__name__, p._version, tuple(p.shape)], _arr(p, x.grad)


@pytest.mark.parametrize("n_patches", [1, 2, 3])
def test_patchify_rows_written_in_place(n_patches):
    (ref_facts, ref), (got_facts, got) = (_patchify_loop(T, n_patches) for T in (torch, tracegrad))
    assert ref_facts == got_facts, (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=0)


class _Loader:
    """The script's ``DataLoader(data, shuffle=..., batch_size=...)``, in order (the libraries'
    shuffles draw from different streams)."""

    def __init__(self, T):
        self.T = T

    def __call__(self, data, shuffle=False, batch_size=1):
        return self.T.utils.data.DataLoader(data, shuffle=False, batch_size=batch_size)


def _mnist(T):
    def MNIST(root, train, download, transform):
        rs = np.random.RandomState(11 if train else 12)
        n = 4 if train else 3
        x = rs.rand(n, 1, 28, 28).astype(np.float32)
        return T.utils.data.TensorDataset(T.tensor(x), T.tensor(rs.randint(0, 10, n)))
    return MNIST


def _vit_script(T):
    out, opts = io.StringIO(), []

    def Adam(params, lr):               # the script's optimizer, kept for its state
        opts.append(T.optim.Adam(params, lr=lr))
        return opts[-1]

    with contextlib.redirect_stdout(out), pytest.raises(ValueError) as e:
        program(draws(T, 0), VIT + VIT_MAIN, tqdm=lambda it, **kw: it, MNIST=_mnist(T), ToTensor=lambda: None,
                DataLoader=_Loader(T), Adam=Adam, CrossEntropyLoss=T.nn.CrossEntropyLoss)
    steps = sorted({int(st["step"]) for st in opts[0].state.values()})
    return str(e.value), out.getvalue(), steps


def test_vit_script_trains_then_fails_alike():
    (ref_msg, ref_log, ref_steps), (got_msg, got_log, got_steps) = _vit_script(torch), _vit_script(tracegrad)
    assert ref_msg == got_msg, (ref_msg, got_msg)
    assert ref_steps == got_steps == [5]        # 5 epochs of one batch each
    assert ref_log.count("Epoch") == 5 and "Test loss" in ref_log, ref_log
    # the logs print two decimals: a last-bit difference on another CPU may flip one rounding
    same_logs(ref_log, got_log, 0.011)


# ---------------------------------------------------------------- TCN (nadaselham)

def tcn_program(T, seed=1):
    """models/tcn.py, its ``nn.Conv1d`` and ``nn.Linear`` drawing from a NumPy stream."""
    d = draws(T, seed)
    d.nn = seeded_nn(T, seed + 1, names=("Conv1d", "Linear"))
    return program(d, TCN)


def _series(T, rs, n=2, c=2, length=7):
    return T.tensor(rs.randn(n, c, length).astype(np.float32))


def _tcn_causal(T, t):
    ns = tcn_program(T)
    m = ns.TemporalConvNet(2, [3, 3, 2], kernel_size=2, dropout=0.0)
    x = _series(T, np.random.RandomState(3)).requires_grad_(True)
    out = m(x)
    out[:, :, t].sum().backward()
    facts = [tuple(out.shape), m.network[1].downsample is None, m.network[2].downsample is None,
             type(out.grad_fn).__name__]
    return facts, _arr(out, x.grad) + _grads(m)


@pytest.mark.parametrize("t", [0, 3, 6])
def test_tcn_forward_backward_is_causal(t):
    (ref_facts, ref), (got_facts, got) = _tcn_causal(torch, t), _tcn_causal(tracegrad, t)
    assert ref_facts == got_facts == [(2, 2, 7), True, False, "ReluBackward0"], (ref_facts, got_facts)
    assert not ref[1][:, :, t + 1:].any() and not got[1][:, :, t + 1:].any()
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


class Forecaster:
    """The loop train.py leaves out: the TCN's last step through a ``Linear`` head, MSE, Adam."""

    def __init__(self, T, ns, dropout=0.0):
        self.tcn = ns.TemporalConvNet(2, [4, 4], kernel_size=3, dropout=dropout)
        self.head = ns.nn.Linear(4, 1)      # seeded, as the TCN's layers
        self.params = list(self.tcn.parameters()) + list(self.head.parameters())
        self.opt = T.optim.Adam(self.params, lr=1e-2)
        self.T = T

    def step(self, x, y):
        self.opt.zero_grad()
        loss = self.T.nn.functional.mse_loss(self.head(self.tcn(x)[:, :, -1]), y)
        loss.backward()
        self.opt.step()
        return loss


def _tcn_training(T, steps=3):
    f = Forecaster(T, tcn_program(T))
    rs, losses = np.random.RandomState(4), []
    for _ in range(steps):
        x = _series(T, rs, n=3)
        losses.append(f.step(x, T.tensor(rs.randn(3, 1).astype(np.float32))).item())
    return [np.array(losses)] + _grads(f.tcn) + _state(f.tcn) + _state(f.head)


def test_tcn_training_steps():
    _compare(_tcn_training, tol=1e-5)


def _tcn_eval(T):
    m = tcn_program(T).TemporalConvNet(2, [3, 3], kernel_size=2)   # dropout 0.25
    x = _series(T, np.random.RandomState(6))
    m.eval()
    with T.no_grad():
        out = m(x)
    return [out.requires_grad, m.network[0].net[3].p, m.training], _arr(out)


def test_tcn_eval_mode_turns_dropout_off():
    (ref_facts, ref), (got_facts, got) = _tcn_eval(torch), _tcn_eval(tracegrad)
    assert ref_facts == got_facts == [False, 0.25, False]
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_chomp_with_zero_padding_is_empty_alike():
    # ``kernel_size=1`` makes padding 0: ``x[:, :, :-0]`` is an empty slice, and the next
    # conv in the block fails on it with both libraries
    def run(T):
        m = tcn_program(T).TemporalConvNet(2, [3], kernel_size=1, dropout=0.0)
        return m(_series(T, np.random.RandomState(0)))
    same_error(torch, tracegrad, run)


# ---------------------------------------------------------------- neural ODE (albashawalid05-netizen)

def rk4_odeint(T):
    """A stand-in for torchdiffeq's ``odeint(func, y0, t, method=, rtol=, atol=)``: one classic
    RK4 step between consecutive times, the states stacked ``[len(t), *y0.shape]``."""
    def odeint(func, y0, t, method="rk4", rtol=None, atol=None):
        assert method == "rk4", method
        ys, y = [y0], y0
        for i in range(t.shape[0] - 1):
            t0, h = t[i], t[i + 1] - t[i]
            k1 = func(t0, y)
            k2 = func(t0 + h / 2, y + h / 2 * k1)
            k3 = func(t0 + h / 2, y + h / 2 * k2)
            k4 = func(t0 + h, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            ys.append(y)
        return T.stack(ys)
    return odeint


def node_program(T, seed=3):
    """models.py and train.py's functions, their ``nn.Linear`` drawing from a NumPy stream."""
    d = draws(T, seed)
    d.nn = seeded_nn(T, seed + 1, names=("Linear",))
    return program(d, NODE_MODELS + NODE_TRAIN, odeint=rk4_odeint(T), tqdm=lambda it, **kw: it)


def _trajectories(T, rs, n=3, steps=4):
    x = rs.randn(n, steps, 2).astype(np.float32) * 0.5
    m = (rs.rand(n, steps, 1) > 0.3).astype(np.float32)
    return T.tensor(x), T.tensor(m)


def _loaders(T, seed):
    rs = np.random.RandomState(seed)
    return [_trajectories(T, rs) for _ in range(2)], [_trajectories(T, rs)]


def _node_train(T, kind):
    ns = node_program(T)
    model = ns.ResNetStep(hidden_dim=5) if kind == "resnet" else ns.NeuralODEModel(hidden_dim=5)
    train, val = _loaders(T, 7)
    t = T.linspace(0.0, 0.6, 4)
    best, hist = ns.train_one(model, train, val, t, T.device("cpu"), epochs=2, lr=1e-2)
    return [np.array([best] + hist["train"] + hist["val"])] + _grads(model) + _state(model)


@pytest.mark.parametrize("kind", ["resnet", "neuralode"])
def test_train_one_with_masked_mse(kind):
    _compare(functools.partial(_node_train, kind=kind), tol=1e-5)


def _node_grad(T):
    ns = node_program(T)
    model = ns.NeuralODEModel(hidden_dim=5)
    x, m = _trajectories(T, np.random.RandomState(8))
    t = T.tensor([0.0, 0.2, 0.5, 0.6], requires_grad=True)
    pred = model(x[:, 0, :], t)
    loss = ns.masked_mse(pred, x, m)
    loss.backward()
    with T.no_grad():
        empty = ns.masked_mse(pred, x, T.zeros_like(m))
    facts = [type(pred.grad_fn).__name__, pred.is_contiguous(), type(loss.grad_fn).__name__, model.training]
    return facts, _arr(pred, loss, t.grad, empty) + _grads(model)


def test_neural_ode_gradient_through_rk4_and_times():
    # the times require grad too: dL/dt through every RK4 step size; an all-missing mask
    # divides by the clamp's 1.0
    (ref_facts, ref), (got_facts, got) = _node_grad(torch), _node_grad(tracegrad)
    assert ref_facts == got_facts == ["PermuteBackward0", False, "DivBackward0", True], (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)
