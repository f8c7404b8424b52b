"""The fifty-eighth round's VAE-GAN (tests/api/test_public_programs_round58.py has the round's
other programs; sources in tests/public_programs_round58_src.py), run unchanged with torch and
with tracegrad (``import tracegrad as torch``):

- lucabergamini/VAEGAN-PYTORCH (MIT), ``network.py`` and ``main.py`` at 29102a9: the VAE-GAN on
  64x64 images. Encoder/decoder/discriminator blocks of 5x5 stride-2 convolutions and
  transposed convolutions (``output_padding=1``) with ``BatchNorm2d(momentum=0.9)`` and
  ``F.relu(ten, True)``, the discriminator's intermediate layer taken by ``lay(ten, True)`` and
  ``layer_ten[:-len(ten_from_normal)]``, ``nn.init.xavier_normal``/``nn.init.constant`` (the
  deprecated names), ``Variable(torch.randn(...), requires_grad=True)`` reparameterisation,
  ``F.sigmoid`` scores, ``VaeGan.loss``'s KL/feature-MSE/five ``nn.BCELoss()(x, Variable(
  torch.ones_like(x.data)))`` terms; main.py's three RMSprop optimizers with ExponentialLR (its
  ``get_lr()`` printed outside a step), run as written: ``bce.data[0]`` on a 0-dim loss raises
  the same IndexError. With ``.item()`` in its place main.py's order (an optimizer step, then
  another loss's ``backward(retain_graph=True)`` through the stepped weights) raises the same
  RuntimeError, naming the same saved weight and versions (the repository's best-known issue).
  The losses back-propagated into each sub-network by ``backward(inputs=...)`` before the steps
  give equal gradients and RMSprop state.
Changes, the same on both sides: parameters overwritten from a seeded NumPy stream, the
network's ``torch.randn`` draws from another, synthetic images; the layer sizes are fixed by the
source (64x64 images, ~30M parameters), batch 2.
Found: no differences in values, gradients, optimizer state or error classes.
Compile counterpart: tests/compile/test_public_patterns_round58_vaegan.py.
"""
import contextlib
import io
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, grads as _grads, same_error
from public_programs_round58_src import VAEGAN_MAIN, program, vaegan_losses, vaegan_main_globals, vaegan_setup

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the deprecated init names, get_lr() outside a step
        yield


_IMAGES = np.random.RandomState(0).uniform(-1, 1, (2, 3, 64, 64)).astype(np.float32)


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
    # (``backward(inputs=...)``, the graph retained) before the three RMSprop steps, main.py's
    # train_dis/train_dec balance from ``.item()`` losses; then ``loss_decoder.backward()`` again,
    # as main.py orders its backward passes after a step (with ``.item()`` for ``.data[0]``):
    # the steps wrote weights that the graph saved, and the backward finds their version changed
    P, net, opts = vaegan_setup(T)
    values, losses = vaegan_losses(T, P, net, T.tensor(_IMAGES))
    bce_o, bce_s = values[5].item(), values[7].item()
    train_dis = not (bce_o < 0.33 or bce_s < 0.33)
    train_dec = not (bce_o > 0.33 or bce_s > 0.33)
    train_dis, train_dec = (True, True) if not (train_dis or train_dec) else (train_dis, train_dec)
    net.zero_grad()
    for loss, sub in zip(losses, (net.encoder, net.decoder, net.discriminator)):
        loss.backward(retain_graph=True, inputs=list(sub.parameters()))
    out = _arr(*values, *losses) + [np.array([train_dis, train_dec])] + _grads(net)
    for opt, on in zip(opts, (True, train_dec, train_dis)):
        if on:
            opt.step()
    out += [_arr(s["square_avg"])[0] for opt in opts for s in opt.state.values()]
    net.zero_grad()
    try:
        losses[1].backward(retain_graph=True)
    except RuntimeError as e:
        return out, e
    return out, None


def test_vaegan_three_optimizers_then_main_order_fails_alike():
    (ref, ref_err), (got, got_err) = _vaegan_run(torch), _vaegan_run(tracegrad)
    _close_to_scale(ref[:8 + 3 + 1], got[:8 + 3 + 1], 5e-5)       # the losses and the balance flags
    _close_to_scale(ref[12:], got[12:], 5e-3)                      # grads and RMSprop's square_avg
    assert type(got_err) is type(ref_err) is RuntimeError, (ref_err, got_err)
    # the same saved weight found modified (its shape and versions in both messages)
    shapes = [str(e).split("[torch.FloatTensor ")[1].split("]")[0] for e in (ref_err, got_err)]
    versions = [str(e).split("is at version ")[1].split(";")[0] for e in (ref_err, got_err)]
    assert shapes[0] == shapes[1] and versions[0] == versions[1], (ref_err, got_err)
    assert "modified by an inplace operation" in str(got_err), got_err
