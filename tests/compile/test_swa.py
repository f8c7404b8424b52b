"""``optim.swa_utils`` inside a compiled training step: ``AveragedModel.update_parameters`` (equal
weights and EMA, buffers averaged) and ``SWALR`` stepping between calls. The first-update branch
is part of the program, so a step that also updates the average stays compiled, and resetting
``n_averaged`` in place between calls starts the average again as eagerly."""
import numpy as np
import pytest

import tracegrad
from tracegrad.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn

from ._harness import np_init


def _run(compiled, rule):
    tracegrad.manual_seed(0)
    m = tracegrad.nn.Sequential(tracegrad.nn.Linear(4, 5), tracegrad.nn.BatchNorm1d(5), tracegrad.nn.Linear(5, 2))
    np_init(m, tracegrad)
    opt = tracegrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    kw = {"swa": {}, "ema": {"multi_avg_fn": get_ema_multi_avg_fn(0.8)},
          "avg_fn": {"avg_fn": lambda a, c, n: a + (c - a) * 0.3}}[rule]
    avg = AveragedModel(m, use_buffers=True, **kw)
    sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3)

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        avg.update_parameters(m)
        return loss
    f = tracegrad.compile(step) if compiled else step
    out, snaps = [], []
    for i in range(7):
        if i == 4:
            avg.n_averaged.zero_()          # start the average again
        out.append(float(f(tracegrad.tensor(np.random.RandomState(i).randn(8, 4).astype("float32")))))
        sched.step()
        snaps.append({k: v.detach().numpy().copy() for k, v in avg.state_dict().items()})
    return out, snaps, f


@pytest.mark.parametrize("rule", ["swa", "ema", "avg_fn"])
def test_averaged_model_updated_in_a_compiled_step_equals_eager(rule):
    e_out, e_snaps, _ = _run(False, rule)
    c_out, c_snaps, f = _run(True, rule)
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 1, f.stats
    np.testing.assert_allclose(c_out, e_out, rtol=1e-5, atol=1e-6)
    for c, e in zip(c_snaps, e_snaps):
        assert c.keys() == e.keys()
        for k in e:
            np.testing.assert_allclose(c[k], e[k], rtol=1e-5, atol=1e-6, err_msg=k)
