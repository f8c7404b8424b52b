"""Round 36's compiled program: e-hulten/real-nvp-2d's training step (``model.py``/``train.py`` at
094c785, ported in ``tests/api/test_public_programs_round36.py`` and loaded from there) under
``tracegrad.compile``, against torch and tracegrad eager after every call: the coupling and
batch-norm layers of a RealNVP, the ``MultivariateNormal.log_prob`` loss, ``backward`` and an
Adam step in one compiled call; the batch norm's statistics, which the layer keeps by plain
attribute assignment inside the step, read after each call."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import api_programs, compare, compare_programs

torch = pytest.importorskip("torch")


def _programs():
    return api_programs('test_public_programs_round36.py')


# 2 coupling layers (the minimum), one batch of 8 two-moons points; Adam at eps 1e-4 for the
# reason the eager test gives (the translate biases' gradients are rounding noise). As written,
# the base distribution validates its values in Python (``validate_args`` is on by default):
# the step runs eagerly with that graph break named, and gives the same values; with
# ``Distribution.set_default_validate_args(False)`` (torch's switch) it compiles whole, once.
@pytest.mark.parametrize("validate", [True, False])
def test_real_nvp_train_step_compiled(validate):
    progs = _programs()

    def build(T, wrap):
        from parity import init_params
        RealNVP, NegLogLik = progs._rnvp_classes(T)
        model = RealNVP(data_dim=2, n_c_layers=2)
        init_params(T, model, 3, scale=0.1)
        optimizer = T.optim.Adam(model.parameters(), lr=5e-3, eps=1e-4)
        loss_log_det_J = NegLogLik(model)
        batch = T.from_numpy(progs._two_moons(8, 0))

        @wrap
        def step(batch):
            model.train()
            z, sum_log_det_J = model(batch)
            loss = loss_log_det_J(z, sum_log_det_J)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss, z

        def run(i):
            loss, z = step(batch)
            bn = model.coupling_layers[1]
            return [loss, z, bn.running_mean.detach(), bn.running_var.detach(),
                    bn.running_mean.requires_grad]
        return run

    if not validate:
        # the default is read when log_prob runs (an instance built with validate_args=None
        # keeps none of its own, as in torch), so it stays off for the whole run
        for T in (torch, tracegrad):
            T.distributions.Distribution.set_default_validate_args(False)
        try:
            compare_programs(build, calls=4, traces=1)
        finally:
            for T in (torch, tracegrad):
                T.distributions.Distribution.set_default_validate_args(True)
        return
    made = []
    compare(lambda T, wrap: build(T, lambda f: made.append(wrap(f)) or made[-1]), calls=3)
    breaks = made[2].stats["graph_breaks"]
    assert len(breaks) == 1 and "validate_args" in breaks[0][0], breaks
