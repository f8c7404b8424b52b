"""The edges (``grad_fn.next_functions``) and names of autograd nodes that public programs
observe, against torch: graph walkers (torchviz-style printers) and legacy module backward
hooks (``register_backward_hook``, whose ``grad_input`` is the last node's input grads, as
kazuto1011/grad-cam-pytorch registers it on every module) see them directly. Batch norm's
running statistics, nll_loss's target and class weights and the BCE weights are saved but not
differentiated, so torch's nodes have no edge for them; linalg/fft nodes are named
``...Backward0``."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _p(mod, *shape, seed=0):
    arr = np.random.RandomState(seed).randn(*shape).astype(np.float32)
    return mod.tensor(arr, requires_grad=True)


def _edges(y):
    g = y.grad_fn
    return type(g).__name__, tuple(None if f is None else type(f).__name__ for f, _ in g.next_functions)


CASES = {
    "batch_norm_train": lambda m: m.nn.functional.batch_norm(_p(m, 4, 3), m.zeros(3), m.ones(3), _p(m, 3, seed=1),
                                                             _p(m, 3, seed=2), training=True),
    "batch_norm_eval": lambda m: m.nn.functional.batch_norm(_p(m, 4, 3), m.zeros(3), m.ones(3), _p(m, 3, seed=1),
                                                            _p(m, 3, seed=2), training=False),
    "cross_entropy_weight": lambda m: m.nn.functional.cross_entropy(_p(m, 2, 3), m.tensor([0, 2]), weight=m.ones(3)),
    "nll_loss": lambda m: m.nn.functional.nll_loss(_p(m, 2, 3), m.tensor([0, 2])),
    "nll_loss2d": lambda m: m.nn.functional.nll_loss(_p(m, 2, 3, 2, 2), m.zeros(2, 2, 2, dtype=m.long)),
    "bce_weight": lambda m: m.nn.functional.binary_cross_entropy(_p(m, 3).sigmoid(), m.ones(3) * 0.5,
                                                                 weight=m.ones(3)),
    "bce_logits_pos_weight": lambda m: m.nn.functional.binary_cross_entropy_with_logits(
        _p(m, 3), m.ones(3) * 0.5, weight=m.ones(3), pos_weight=m.ones(3)),
    "slogdet": lambda m: m.slogdet(_p(m, 3, 3))[1],
    "inverse": lambda m: _p(m, 3, 3).inverse(),
    "solve": lambda m: m.linalg.solve(_p(m, 2, 2) + m.eye(2) * 3, _p(m, 2, 1, seed=1)),
    "rfft": lambda m: m.fft.rfft(_p(m, 4)),
    "irfft": lambda m: m.fft.irfft(m.fft.rfft(_p(m, 4))),
    "qr": lambda m: m.linalg.qr(_p(m, 3, 3))[0],
    "matrix_exp": lambda m: m.matrix_exp(_p(m, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_edges_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _edges(CASES[name](tracegrad)) == _edges(CASES[name](torch))


def test_legacy_backward_hook_grad_input_on_batch_norm_and_loss():
    """A legacy module backward hook's grad_input has one entry per edge of the module's last
    node: (input, weight, bias) for BatchNorm1d, (input,) for CrossEntropyLoss; and the values."""
    def run(m):
        seen = []
        bn, ce = m.nn.BatchNorm1d(3), m.nn.CrossEntropyLoss(weight=m.tensor([1.0, 2.0, 0.5]))
        for mod in (bn, ce):
            mod.register_backward_hook(lambda mod, gi, go: seen.append(
                (type(mod).__name__, [None if g is None else g.detach().numpy().copy() for g in gi])))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ce(bn(_p(m, 4, 3)), m.tensor([0, 2, 1, 1])).backward()
        return seen
    got, ref = run(tracegrad), run(torch)
    assert [(n, len(g)) for n, g in got] == [(n, len(g)) for n, g in ref]
    for (_, g1), (_, g2) in zip(got, ref):
        for a, b in zip(g1, g2):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sequence_nr_orders_nodes_as_torch():
    """``Node._sequence_nr()``: later nodes number higher; AccumulateGrad has the largest
    unsigned 64-bit value (graph printers and torch's own tests read it)."""
    for m in (tracegrad, torch):
        x = m.randn(2, requires_grad=True)
        y = x.exp()
        z = y * 2
        assert z.grad_fn._sequence_nr() > y.grad_fn._sequence_nr()
        assert y.grad_fn.next_functions[0][0]._sequence_nr() == 2 ** 64 - 1
