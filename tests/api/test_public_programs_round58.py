"""A fifty-eighth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round58_src.py, executed with ``torch`` bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- lucabergamini/VAEGAN-PYTORCH (MIT), ``network.py`` and ``main.py`` at 29102a9: the VAE-GAN on
  64x64 images. Encoder/decoder/discriminator blocks of 5x5 stride-2 convolutions and
  transposed convolutions (``output_padding=1``) with ``BatchNorm2d(momentum=0.9)`` and
  ``F.relu(ten, True)``, the discriminator's intermediate layer taken by ``lay(ten, True)`` and
  ``layer_ten[:-len(ten_from_normal)]``, ``nn.init.xavier_normal``/``nn.init.constant`` (the
  deprecated names), ``Variable(torch.randn(...), requires_grad=True)`` reparameterisation,
  ``F.sigmoid`` scores, ``VaeGan.loss``'s KL/feature-MSE/five ``nn.BCELoss()(x, Variable(
  torch.ones_like(x.data)))`` terms; main.py's three RMSprop optimizers with ExponentialLR (its
  ``get_lr()`` printed outside a step), run as written: ``bce.data[0]`` on a 0-dim loss raises
  the same IndexError. With ``.item()`` in its place the loop's ``optimizer_encoder.step()``
  before ``loss_decoder.backward(retain_graph=True)`` raises the same RuntimeError (a weight
  saved by the graph was modified in place: the repository's best-known issue). The losses
  back-propagated to each sub-network by ``backward(inputs=...)`` before the steps train equal.
- facebookresearch/dlrm (MIT) at 090956e, ``tricks/qr_embedding_bag.py``,
  ``tricks/md_embedding_bag.py`` and ``dlrm_s_pytorch.py``'s ``DLRM_Net`` (the QR and MD
  branches round 11 left out): ``QREmbeddingBag`` (quotient ``(input / n).long()`` and
  ``torch.remainder`` indices, two ``F.embedding_bag`` calls with positional
  ``max_norm``..``per_sample_weights``, ``sparse=True``, "mult"/"add"/"concat"),
  ``PrEmbeddingBag`` (``nn.EmbeddingBag(sparse=True)`` with ``xavier_uniform_`` and a projection
  or ``nn.Identity``), ``md_solver`` (``torch.sort``, tensor indexing by a list, elementwise
  ``d[i] = d0``, ``torch.round(...).type(torch.long)``, ``2 ** torch.round(torch.log2(...))``),
  ``create_emb`` assigning ``EE.embs.weight.data = torch.tensor(W, requires_grad=True)``; the
  "dot" interaction; BCE and SGD over sparse embedding gradients. ``md_solver(...,
  round_dim=True)`` gives float dimensions, with which ``DLRM_Net`` fails alike (TypeError).
- rtqichen/torchdiffeq (MIT) at 657943a, the whole ``torchdiffeq/_impl`` package imported with
  ``torch`` bound to either module, and ``examples/ode_demo.py`` run as a script: the
  Dormand-Prince adaptive solver (Butcher tableaux cast per step, ``_select_initial_step``, the
  RMS error norm, step acceptance by comparing tensors, Hermite interpolation to the output
  times, ``torch.no_grad`` data generation), ``odeint_adjoint`` (a custom autograd Function whose
  backward integrates the augmented adjoint system with ``torch.autograd.grad`` of the
  dynamics inside ``enable_grad``, the parameters flattened), RMSprop, ``get_batch``'s indexing
  of the trajectory by a ``torch.from_numpy`` index tensor and the printed test losses; the
  fixed-grid solvers (euler, midpoint, rk4, the implicit and Adams ones) through a training step.
Changes, the same on both sides: parameters overwritten from seeded NumPy streams (ode_demo's
``nn.init.normal_`` draws from one), synthetic data, tiny sizes where the sources allow (the
VAE-GAN's layers are fixed by its source: 64x64 images, batch 2, compared in float64 where
float32 rounding over its 30M parameters through RMSprop's normalisation would swamp the
comparison).
Found: no differences in values, gradients, parameters, printed logs or error classes.
Compile counterparts: tests/compile/test_public_patterns_round58.py.
"""
import contextlib
import functools
import io
import re
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, \
    same_error, state as _state
from public_programs_round58_src import (DLRM_TRICKS, ODE_DEMO, VAEGAN_MAIN, dlrm_batches, dlrm_setup, drawn_torch,
                                        program, run_script, torchdiffeq_for, vaegan_losses, vaegan_main_globals,
                                        vaegan_setup)

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the deprecated init names, get_lr() outside a step
        yield


def _numbers(text):
    """The floats in a log, and the log with each replaced by ``#``."""
    pat = r"-?\d+\.\d+(?:e-?\d+)?"
    return [float(x) for x in re.findall(pat, text)], re.sub(pat, "#", text)


def _same_logs(ref, got, tol):
    (a, ta), (b, tb) = _numbers(ref), _numbers(got)
    assert ta == tb, (ref, got)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


_IMAGES = np.random.RandomState(0).uniform(-1, 1, (2, 3, 64, 64)).astype(np.float32)


# ---------------------------------------------------------------- VAEGAN-PYTORCH

def test_vaegan_main_as_written_fails_alike_at_data_index():
    # main.py's ``bce_dis_original_value.data[0]`` indexes a 0-dim loss: IndexError in torch
    # since 0.5, after its ``print("LR:{}".format(lr_encoder.get_lr()))`` line
    logs = {}

    def run(T):
        T.manual_seed(0)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                program(T, VAEGAN_MAIN, **vaegan_main_globals(T, [T.tensor(x) for x in _IMAGES]))
        finally:
            logs[T.__name__] = buf.getvalue()
    msgs = same_error(torch, tracegrad, run)
    assert "invalid index of a 0-dim tensor" in msgs[1], msgs
    assert logs["tracegrad"] == logs["torch"] and logs["torch"].startswith("LR:["), logs


def _close_to_scale(ref, got, rel):
    """Each array equal within ``rel`` times the reference's largest magnitude: float32 sums over
    the 30M-parameter network's 5x5 convolutions cancel (the float64 run of this step agrees to
    1e-14; float64 here would take minutes)."""
    assert len(ref) == len(got)
    for i, (a, b) in enumerate(zip(ref, got)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
        np.testing.assert_allclose(b, a, rtol=0, atol=rel * max(np.abs(a).max(), 1e-30), err_msg=f"output {i}")


def _vaegan_run(T):
    # main.py's batch with each loss back-propagated into its own sub-network
    # (``backward(inputs=...)``) before the three RMSprop steps, main.py's train_dis/train_dec
    # balance from ``.item()`` losses; then the next batch as main.py orders it (with ``.item()``
    # for ``.data[0]``): the encoder's step writes the weights that ``loss_decoder``'s graph
    # saved, and ``loss_decoder.backward(retain_graph=True)`` finds their version changed
    P, net, opts = vaegan_setup(T)
    values, losses = vaegan_losses(T, P, net, T.tensor(_IMAGES))
    bce_o, bce_s = values[5].item(), values[7].item()
    train_dis = not (bce_o < 0.33 or bce_s < 0.33)
    train_dec = not (bce_o > 0.33 or bce_s > 0.33)
    train_dis, train_dec = (True, True) if not (train_dis or train_dec) else (train_dis, train_dec)
    net.zero_grad()
    for loss, sub, last in zip(losses, (net.encoder, net.decoder, net.discriminator), (False, False, True)):
        loss.backward(retain_graph=not last, inputs=list(sub.parameters()))
    out = _arr(*values, *losses) + [np.array([train_dis, train_dec])] + _grads(net)
    for opt, on in zip(opts, (True, train_dec, train_dis)):
        if on:
            opt.step()
    out += [_arr(s["square_avg"])[0] for opt in opts for s in opt.state.values()]
    values, (loss_encoder, loss_decoder, _) = vaegan_losses(T, P, net, T.tensor(_IMAGES))
    out += _arr(*values)
    net.zero_grad()
    loss_encoder.backward(retain_graph=True)
    opts[0].step()
    net.zero_grad()
    try:
        loss_decoder.backward(retain_graph=True)
    except RuntimeError as e:
        return out, e
    return out, None


def test_vaegan_three_optimizers_then_main_order_fails_alike():
    (ref, ref_err), (got, got_err) = _vaegan_run(torch), _vaegan_run(tracegrad)
    _close_to_scale(ref[:8 + 3 + 1], got[:8 + 3 + 1], 5e-5)       # the losses and the balance flags
    _close_to_scale(ref[12:], got[12:], 5e-3)                      # grads, square_avg, next losses
    assert type(got_err) is type(ref_err) is RuntimeError, (ref_err, got_err)
    assert all("modified by an inplace operation" in str(e) and "[1024, 128]" in str(e) for e in (ref_err, got_err))


# ---------------------------------------------------------------- dlrm QR / MD embeddings

def _dlrm_run(T, variant, operation):
    tricks, dlrm, opt, ln_emb = dlrm_setup(T, variant, operation)
    out = []
    for X, lS_o, lS_i, target in dlrm_batches(T, np.random.RandomState(1), ln_emb):
        Z = dlrm(X, lS_o, lS_i)
        E = dlrm.loss_fn(Z, target)
        opt.zero_grad()
        E.backward()
        out += _arr(Z, E) + [np.array([p.grad.is_sparse for p in dlrm.parameters()])]
        out += [p.grad.to_dense().numpy().copy() for p in dlrm.parameters()]
        opt.step()
    return out + _state(dlrm)


@pytest.mark.parametrize("variant,operation", [("qr", "mult"), ("qr", "add"), ("qr", "concat"), ("md", None)])
def test_dlrm_compositional_embeddings_train(variant, operation):
    _compare(lambda T: _dlrm_run(T, variant, operation), tol=1e-6)
    # the QR tables' gradients are sparse, as the program's ``sparse=True`` asks
    assert _dlrm_run(tracegrad, variant, operation)[2].any()


def test_dlrm_md_solver_dims():
    def run(T):
        tricks = program(T, DLRM_TRICKS)
        out = []
        for round_dim in (False, True):
            d = tricks.md_solver(T.tensor([10, 300, 500, 40]), 0.3, d0=8, round_dim=round_dim)
            out += [np.array(d.tolist()), np.array(str(d.dtype).split(".")[-1])]
        return out
    ref, got = run(torch), run(tracegrad)
    assert [a.tolist() for a in ref] == [b.tolist() for b in got], (ref, got)


def test_dlrm_md_float_dims_fail_alike():
    # ``md_solver(..., round_dim=True)`` (dlrm_s_pytorch's ``--md-round-dims``) returns float
    # dimensions: ``nn.EmbeddingBag(n, 4.0)`` inside PrEmbeddingBag raises TypeError
    def run(T):
        tricks = program(T, DLRM_TRICKS)
        dims = tricks.md_solver(T.tensor([300, 500]), 0.3, d0=4, round_dim=True).tolist()
        tricks.PrEmbeddingBag(300, dims[1], 4)
    same_error(torch, tracegrad, run)


# ---------------------------------------------------------------- torchdiffeq

_DEMO_ARGS = ["ode_demo.py", "--data_size", "12", "--batch_time", "4", "--batch_size", "3", "--niters", "2",
              "--test_freq", "2"]


def _ode_demo(T, extra=()):
    np.random.seed(0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = run_script(T, ODE_DEMO, _DEMO_ARGS + list(extra), torch=drawn_torch(T, 1))
    return buf.getvalue(), _arr(g.true_y, g.pred_y, g.loss) + _grads(g.func) + _state(g.func) + \
        [np.array([g.loss_meter.avg, g.loss_meter.val])]


def test_ode_demo_adjoint_runs_as_written():
    # ``--adjoint``: the training loss back-propagates through odeint_adjoint's custom Function
    (ref_log, ref), (got_log, got) = _ode_demo(torch, ["--adjoint"]), _ode_demo(tracegrad, ["--adjoint"])
    assert got_log.startswith("Iter 0002 | Total Loss "), got_log
    _same_logs(ref_log, got_log, 2e-6)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


@pytest.mark.parametrize("method", ["dopri5", "rk4", "midpoint", "implicit_adams", "euler", "bosh3"])
def test_odeint_training_step(method):
    # the dynamics of ode_demo's ODEFunc over a short horizon, one RMSprop step through odeint's
    # own graph (no adjoint)
    def run(T):
        tde = torchdiffeq_for(T)
        net = init_uniform(T, T.nn.Sequential(T.nn.Linear(2, 8), T.nn.Tanh(), T.nn.Linear(8, 2)), 3, 0.5)
        func = lambda t, y: net(y ** 3)
        opt = T.optim.RMSprop(net.parameters(), lr=1e-3)
        y0 = T.tensor([[1., 0.], [0.5, 0.5]])
        t = T.linspace(0., 0.5, 3)
        kw = {} if method in ("dopri5", "bosh3") else {"options": {"step_size": 0.125}}
        pred = tde.odeint(func, y0, t, method=method, **kw)
        loss = T.mean(T.abs(pred - T.ones_like(pred)))
        opt.zero_grad()
        loss.backward()
        out = _arr(pred, loss) + _grads(net)
        opt.step()
        return out + _state(net)
    _compare(run, tol=2e-5)
