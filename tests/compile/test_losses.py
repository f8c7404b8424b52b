"""Loss functions and gradient clipping inside a compiled training step: compiled equals eager
(losses, parameters after each step) and no loss reads a tensor's value in Python (cross-entropy
with ignore_index, label smoothing and class weights included: one program, no graph break)."""
import numpy as np
import pytest

import tracegrad

F = tracegrad.nn.functional


def _r(*s):
    return tracegrad.tensor(np.random.RandomState(sum(s)).randn(*s).astype("float32"))


_TARGET = [1, 0, 3, 2, 1, -100]
LOSSES = {
    "cross_entropy ignore_index+label_smoothing+weight": lambda o: F.cross_entropy(
        o, tracegrad.tensor(_TARGET), weight=tracegrad.tensor([1., 2., .5, 1.]), label_smoothing=0.1),
    "cross_entropy ignore_index+label_smoothing": lambda o: F.cross_entropy(
        o, tracegrad.tensor(_TARGET), label_smoothing=0.2),
    "cross_entropy probabilities": lambda o: F.cross_entropy(o, tracegrad.softmax(_r(6, 4), 1), label_smoothing=0.1),
    "nll_loss sum": lambda o: F.nll_loss(F.log_softmax(o, 1), tracegrad.tensor(_TARGET), reduction="sum"),
    "bce_with_logits pos_weight": lambda o: F.binary_cross_entropy_with_logits(
        o, (_r(6, 4) > 0).float(), pos_weight=tracegrad.tensor([1., 2., 3., 4.])),
    "binary_cross_entropy": lambda o: F.binary_cross_entropy(tracegrad.sigmoid(o), (_r(6, 4) > 0).float()),
    "smooth_l1 + huber": lambda o: F.smooth_l1_loss(o, _r(6, 4), beta=0.5) + F.huber_loss(o, _r(6, 4), delta=0.7),
    "kl_div log_target": lambda o: F.kl_div(F.log_softmax(o, 1), F.log_softmax(_r(6, 4), 1), reduction="batchmean",
                                            log_target=True),
}


def _run(loss_fn, compiled, clip=None):
    tracegrad.manual_seed(0)
    m = tracegrad.nn.Linear(3, 4)
    opt = tracegrad.optim.Adam(m.parameters(), lr=0.05)

    def step(x):
        opt.zero_grad()
        loss = loss_fn(m(x))
        loss.backward()
        norm = loss
        if clip == "norm":
            norm = tracegrad.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        elif clip == "value":
            tracegrad.nn.utils.clip_grad_value_(m.parameters(), 0.1)
        opt.step()
        return loss, norm
    f = tracegrad.compile(step) if compiled else step
    out = [tuple(float(v) for v in f(_r(6, 3) * (i + 1))) for i in range(4)]
    return out, [p.detach().numpy().copy() for p in m.parameters()], f


def _check(loss_fn, clip=None):
    e_out, e_p, _ = _run(loss_fn, False, clip)
    c_out, c_p, f = _run(loss_fn, True, clip)
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 1, f.stats
    np.testing.assert_allclose(c_out, e_out, rtol=1e-5, atol=1e-6)
    for a, b in zip(c_p, e_p):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_in_a_compiled_step_equals_eager(name):
    _check(LOSSES[name])


@pytest.mark.parametrize("clip", ["norm", "value"])
def test_gradient_clipping_in_a_compiled_step_equals_eager(clip):
    _check(lambda o: o.pow(2).sum(), clip)
