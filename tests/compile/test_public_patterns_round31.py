"""Round-31 public programs (``tests/api/test_public_programs_round31.py`` runs them whole and
eagerly against torch), with a training step under ``tracegrad.compile`` (compiled == eager ==
torch over the harness's calls; tiny sizes, numpy weights and data):

- Ofekirsh/Non-Linear-Independent-Components-Estimation train.py: ``train_epoch``'s batch on
  nice.py's NICE flow (affine coupling layers over ``x[:, k::2]`` halves re-interleaved by
  ``torch.stack(..., dim=2).view``, ``log_det_J +=`` on a Python ``0``, the log-scaling layer,
  the logistic prior ``TransformedDistribution(Uniform, [SigmoidTransform().inv,
  AffineTransform])``'s ``log_prob``), ``-flow(inputs).mean()``, ``backward``, Adam. Distribution
  validation is off for the run (``Distribution.set_default_validate_args(False)``): with it on,
  ``log_prob``'s support check reads values back, a graph break naming ``validate_args`` (as
  ``test_public_patterns.py`` checks for ``Categorical``). Two coupling layers of one hidden
  layer each instead of the round's four of two keep the traced program small.
"""
import numpy as np
import pytest

import tracegrad

from tests.api.test_public_programs_round31 import _nice_module

from ._harness import check_compiled


def _nice_batch(mod, i):
    rs = np.random.RandomState(40 + i)
    x = rs.randint(0, 256, (4, 1, 4, 4)) / 255.0 - 0.5 + rs.uniform(0., 1. / 256., (4, 1, 4, 4))
    return (mod.tensor(x.astype(np.float32)),)


def _nice_program(mod, wrap):
    NICE, _ = _nice_module(mod)
    flow = NICE(prior="logistic", coupling=2, coupling_type="adaptive", in_out_dim=16, mid_dim=6,
                hidden=1, device=mod.device("cpu"))
    rs = np.random.RandomState(3)
    with mod.no_grad():
        for name, p in flow.named_parameters():
            if name != "scaling.scale":
                p.copy_(mod.tensor(rs.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    optimizer = mod.optim.Adam(flow.parameters(), lr=1e-3)

    # train_epoch's loop body; the loss returned instead of summed with .item()
    def step(inputs):
        optimizer.zero_grad()
        # Flatten inputs from BxCxHxW to Bx(C*H*W)
        inputs = inputs.view(inputs.shape[0], -1).to("cpu")
        # Calculate negative log-likelihood
        loss = -flow(inputs).mean()
        # Backpropagation and optimization step
        loss.backward()
        optimizer.step()
        return loss.detach()

    return wrap(step), {"flow": flow, "optim": optimizer}, lambda i: _nice_batch(mod, i)


@pytest.fixture
def no_validation():
    torch = pytest.importorskip("torch")
    old = torch.distributions.Distribution._validate_args, tracegrad.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    tracegrad.distributions.Distribution.set_default_validate_args(False)
    yield
    torch.distributions.Distribution.set_default_validate_args(old[0])
    tracegrad.distributions.Distribution.set_default_validate_args(old[1])


def test_nice_train_step_compiled(no_validation):
    # call 0 runs eagerly, call 1 traces the whole step (flow, prior log_prob, backward, Adam),
    # call 2 reuses it; losses, weights, grads and Adam state equal eager tracegrad's and torch's
    run = check_compiled(_nice_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
    assert all(p.grad is not None for p in run.state["flow"].parameters())

