"""Compile pattern of the fifty-eighth round's VAE-GAN (tests/api/test_public_programs_round58_vaegan.py;
sources in tests/public_programs_round58_src.py; the round's other programs are in
tests/compile/test_public_patterns_round58.py): the training step run by torch eagerly and by
``tracegrad.compile`` over three calls on the same initial state:

- lucabergamini/VAEGAN-PYTORCH (MIT): the VAE-GAN batch (forward in train mode, ``VaeGan.loss``,
  the three losses each back-propagated into its sub-network by ``backward(inputs=...)``, three
  RMSprop steps) is one program, equal to torch (the eager tests show tracegrad's eager run equal
  to torch; it is not run again here for time: the network has ~30M parameters). Its internal
  ``torch.randn`` draws come from a fixed pattern here: the NumPy stream the eager tests use is
  Python state that a program would not repeat (with it, tracegrad.compile reports a graph
  break and runs every call eagerly).
"""
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close as _close
from public_programs_round58_src import fixed_draws, vaegan_losses, vaegan_setup

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the deprecated init names
        yield


_IMAGES = np.random.RandomState(0).uniform(-1, 1, (2, 3, 64, 64)).astype(np.float32)


def _vaegan_runs(T, compiled):
    P, net, opts = vaegan_setup(T, draws=fixed_draws)

    def step(x):
        values, losses = vaegan_losses(T, P, net, x)
        net.zero_grad()
        for loss, sub, last in zip(losses, (net.encoder, net.decoder, net.discriminator), (False, False, True)):
            loss.backward(retain_graph=not last, inputs=list(sub.parameters()))
        for opt in opts:
            opt.step()
        return values + losses

    if compiled:
        step = T.compile(step)
    out = []
    for _ in range(3):
        out += _arr(*step(T.tensor(_IMAGES)))
    # float32 sums over 5x5 convolutions of the 30M-parameter network cancel in the KL and
    # feature terms; the losses are compared (parameters after RMSprop's normalised steps of
    # near-zero gradients would compare the rounding)
    return out, step


def test_vaegan_batch_compiled():
    ref, (got, step) = _vaegan_runs(torch, False)[0], _vaegan_runs(tracegrad, True)
    _close(ref, got, 1e-4)
    st = step.stats
    # the first call runs eagerly (RMSprop's lazy state), the second traces, the third reuses it
    assert st["traces"] == 1 and st["eager_calls"] == 1 and not st["graph_breaks"], st
