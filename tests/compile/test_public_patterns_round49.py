"""Compile patterns met in the forty-ninth round of public programs
(tests/api/test_public_programs_round49.py).

chrischute/real-nvp (MIT) weight-normalises every convolution with ``nn.utils.weight_norm``: the
forward pre-hook recomputes ``module.weight`` by torch's ``_weight_norm``, which is now the fused
node (WeightNormInterfaceBackward0) for dim 0. A compiled training step must trace that node
(its hook is pure tensor math), give eager's values and leave the module's weight with eager's
node name after the call. complexPyTorch (MIT) builds complex activations by
``real(...).type(torch.complex64) + 1j * imag(...)``: a compiled step over complex64 tensors
(``.real``/``.imag`` views, ``abs``, a complex buffer assigned under ``no_grad``) is one program.
"""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _wn_runs(T, compiled, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conv = make(T.nn.Conv2d(2, 3, 3, padding=1))
    rs = np.random.RandomState(0)
    with T.no_grad():
        for p in conv.parameters():
            p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    opt = T.optim.Adam(conv.parameters(), lr=1e-2)

    def step(x):
        out = conv(x)
        loss = (out ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, out

    if compiled:
        step = T.compile(step)
    outs = []
    for i in range(4):
        x = T.tensor(np.random.RandomState(10 + i).randn(2, 2, 4, 4).astype(np.float32))
        outs.append([t.detach().numpy() for t in step(x)])
    params = {n: p.detach().numpy() for n, p in conv.named_parameters()}
    return outs, params, type(conv.weight.grad_fn).__name__, step


@pytest.mark.parametrize("kind", ["hook", "parametrization"])
def test_weight_norm_step_compiled(kind):
    def make(T):
        return T.nn.utils.weight_norm if kind == "hook" else T.nn.utils.parametrizations.weight_norm
    ref = _wn_runs(torch, False, make(torch))
    eager = _wn_runs(tracegrad, False, make(tracegrad))
    comp = _wn_runs(tracegrad, True, make(tracegrad))
    for a, b, tol in ((ref, eager, 1e-5), (eager, comp, 1e-6)):
        for (la, oa), (lb, ob) in zip(a[0], b[0]):
            np.testing.assert_allclose(la, lb, rtol=tol, atol=tol)
            np.testing.assert_allclose(oa, ob, rtol=tol, atol=tol)
        for n in a[1]:
            np.testing.assert_allclose(a[1][n], b[1][n], rtol=tol, atol=tol, err_msg=n)
    assert ref[2] == eager[2] == "WeightNormInterfaceBackward0", (ref[2], eager[2])
    # the hook's weight set inside the program is a result of the compiled graph (torch.compile's
    # node name, as aot_autograd's); the parametrization recomputes it eagerly on access
    assert comp[2] == ("CompiledFunctionBackward" if kind == "hook" else "WeightNormInterfaceBackward0"), comp[2]
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st


def _complex_runs(T, compiled):
    lin_r, lin_i = T.nn.Linear(3, 2), T.nn.Linear(3, 2)
    rs = np.random.RandomState(1)
    with T.no_grad():
        for p in list(lin_r.parameters()) + list(lin_i.parameters()):
            p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    running = {"mean": T.zeros(2, dtype=T.complex64)}
    opt = T.optim.SGD(list(lin_r.parameters()) + list(lin_i.parameters()), lr=0.1, momentum=0.9)

    def step(x):
        # complexPyTorch's ``apply_complex`` and ``complex_relu``, a running mean as its batch norm's
        y = (lin_r(x.real) - lin_i(x.imag)).type(T.complex64) + 1j * (lin_r(x.imag) + lin_i(x.real)).type(T.complex64)
        y = T.relu(y.real).type(T.complex64) + 1j * T.relu(y.imag).type(T.complex64)
        mean = y.real.mean(0).type(T.complex64) + 1j * y.imag.mean(0).type(T.complex64)
        with T.no_grad():
            running["mean"] = 0.1 * mean + 0.9 * running["mean"]
        loss = (y - mean).abs().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, y

    if compiled:
        step = T.compile(step)
    outs = []
    for i in range(4):
        r = np.random.RandomState(20 + i)
        x = T.complex(T.tensor(r.randn(4, 3).astype(np.float32)), T.tensor(r.randn(4, 3).astype(np.float32)))
        outs.append([t.detach().numpy() for t in step(x)])
    return outs, running["mean"].numpy(), lin_r.weight.detach().numpy(), step


def test_complex_step_compiled():
    ref, eager, comp = _complex_runs(torch, False), _complex_runs(tracegrad, False), _complex_runs(tracegrad, True)
    for a, b, tol in ((ref, eager, 1e-5), (eager, comp, 1e-6)):
        for (la, ya), (lb, yb) in zip(a[0], b[0]):
            np.testing.assert_allclose(la, lb, rtol=tol, atol=tol)
            np.testing.assert_allclose(ya, yb, rtol=tol, atol=tol)
        np.testing.assert_allclose(a[1], b[1], rtol=tol, atol=tol)
        np.testing.assert_allclose(a[2], b[2], rtol=tol, atol=tol)
    assert comp[1].dtype == np.complex64
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] == 1, st
