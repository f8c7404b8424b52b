"""Compile patterns of the sixty-third round of public programs
(tests/api/test_public_programs_round63.py; sources in tests/public_programs_round63_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- MaximeVandegar/Papers-in-100-Lines-of-Code, MAF: the ``__main__`` loop body (the logit
  transform, MADE/BatchNorm/permutation flows with ``ld_sum += ld`` of an expanded tensor, Adam
  with ``zero_grad(set_to_none=True)``) with its dequantization noise passed in: one trace after
  the eager first call (Adam's state); with the noise drawn inside by a NumPy stream, every call
  eager (a Python state change), never one frozen draw. The calibration pass (``_collecting``
  set, buffers grown by ``+=``, ``.item()``) compiled: each call eager, equal to eager. The
  sampler ``invert`` (columns written by ``y[:, j] = ...``) compiled under ``no_grad``: one
  trace; with grad and a backward, each compiled call raises torch's in-place RuntimeError.
- aniruddh93/flow_models, MAF: ``train``'s step (``maf.loss`` over a ``Sequential`` of MADE and
  flip layers, a ``Normal(0, 1)`` base, the f-string log of the loss, Adam). With the default
  ``validate_args`` the base distribution checks values in Python: eager, the reason named;
  with it off the f-string log formats the loss (a value read in Python): eager each call, the
  log printed each call with that call's loss.
- gabinho991/CS598, seq2seq: the training step (teacher forcing by ``torch.rand(1).item()``):
  a graph break at the coin's ``.item()``, every call eager and equal; the decoder step alone
  (attention, ``bmm``, LSTM from ``zeros_like(hidden)``) compiled for greedy decoding: one
  trace after the eager first call.
- MaximeVandegar/Papers-in-100-Lines-of-Code, hyperparameters by implicit differentiation: the
  inner step (``compute_loss`` with the ``Softplus`` weight decay, Adam) and the outer step
  (``hypergradient``: ``autograd.grad`` with ``create_graph=True``, three Neumann-series
  ``grad_outputs=`` products, the mixed derivative against the hyperparameters, ``p.grad = g``,
  RMSprop) compiled: one trace each after the eager first call, equal to eager.
- MaximeVandegar/Papers-in-100-Lines-of-Code, planar flows: ``train``'s loop body with its
  draws passed in (``self.w.T`` of a 1-D parameter, a lambda attribute, ``log_jacobians = 0``
  grown by tensors, an energy lambda, Adam): one trace after the eager first call; ``train``
  itself compiled (``losses.append(loss.item())`` and a NumPy-stream ``torch.randn``): eager,
  equal to eager.
- MaximeVandegar/Papers-in-100-Lines-of-Code, MAML: a meta step of its
  ``perform_k_training_steps`` on clones (``p.grad = None``, ``autograd.grad``, ``p.data -=``)
  for a task whose ``sample`` gives fixed tensors, the query loss backward into the leaves,
  Adam: one trace after the eager first call.
"""
import contextlib
import io
import typing
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, init_uniform, state as _state
from public_programs_round63_src import HYPER, MAF_AN, MAML, PLANAR, S2S_MODEL, program

torch = pytest.importorskip("torch")

import api.test_public_programs_round63 as _api  # noqa: E402  (the stand-ins and the tiny sizes)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # graph breaks
        yield


def _parity(runner, ref_tol=2e-5, comp_tol=1e-5, loose=0):
    """torch eager, tracegrad eager and tracegrad compiled give the same arrays (the last
    ``loose`` of them within 1e-3); returns the compiled run's functions."""
    eager, (comp, fns) = runner(tracegrad, False)[0], runner(tracegrad, True)
    ref, n = runner(torch, False)[0], len(eager) - loose
    close(ref[:n], eager[:n], ref_tol)
    close(eager[:n], comp[:n], comp_tol)
    # 5e-3: on an AVX-512 machine the noise steps left one MAF state entry 2.7e-3 apart
    close(ref[n:], eager[n:], 5e-3)
    close(eager[n:], comp[n:], 5e-3)
    return fns


# ---------------------------------------------------------------- MAF (Papers in 100 lines)

def _maf_mv_runs(T, compiled, noise_inside=False):
    Tn, ns, model = _api.maf_mv(T)
    logit = ns.LogitTransform1d()
    opt = T.optim.Adam(model.parameters(), lr=1e-4)

    def step(xb, u=None):              # __main__'s loop body
        if u is None:
            u = Tn.rand_like(xb)
        loss, z, _ = _api.maf_mv_loss(ns, model, logit, xb, u)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, z

    def calibrate(xs):
        with T.no_grad():
            model.begin_calibration()
            for xb in xs:
                y, _ = logit(xb, reverse=False)
                _ = model.forward_and_logdet(y)
            model.end_calibration()
            model.eval()
            return model.invert(T.ones(2, 3) * 0.3)

    f = T.compile(step) if compiled else step
    cal = T.compile(calibrate) if compiled else calibrate
    rs = np.random.RandomState(5)
    out = []
    for _ in range(4):
        xb = T.tensor(rs.rand(6, 3).astype(np.float32))
        out += _arr(*(f(xb) if noise_inside else f(xb, T.tensor(rs.rand(6, 3).astype(np.float32)))))
    model.eval()
    xs = [T.tensor(rs.rand(6, 3).astype(np.float32) * 0.9 + 0.05) for _ in range(3)]
    for k in range(2):
        out += _arr(cal([x + 0.01 * k for x in xs]))
    return out + _state(model), (f, cal)


# the BatchNorm flow takes each batch's mean away: the last MaskedLinear's shift biases get
# gradients of 1e-8 noise (which XLA's fusion changes too), which Adam turns into lr-sized steps
# (lr=1e-4, the program's): the parameters agree within 5e-3, the losses and flows tightly
_MAF_LOOSE = len(_api.maf_mv(tracegrad)[2].state_dict())


def test_maf_mv_step_compiled():
    f, cal = _parity(lambda T, c: _maf_mv_runs(T, c), loose=_MAF_LOOSE)
    assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats
    assert not f.stats["graph_breaks"], f.stats
    # the calibration flips a Python flag and reads ``_count`` by ``.item()``: eager each call
    assert cal.stats["calls"] == 2 and cal.stats["eager_calls"] == 2 and cal.stats["traces"] == 0, cal.stats
    assert ["'_collecting'" in r for r, _ in cal.stats["graph_breaks"]] == [True], cal.stats


def test_maf_mv_step_drawing_noise_inside_compiled():
    # ``torch.rand_like`` from a NumPy stream: each compiled call draws anew, as eager
    f, _ = _parity(lambda T, c: _maf_mv_runs(T, c, noise_inside=True), loose=_MAF_LOOSE)
    assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 4 and f.stats["traces"] == 0, f.stats
    assert ["'Tn._rs'" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats


def _maf_mv_invert(T, compiled, grad):
    Tn, ns, model = _api.maf_mv(T)
    model.eval()

    def sample(z):
        y = model.invert(z)
        if grad:
            y.sum().backward()
        return y

    f = T.compile(sample) if compiled else sample
    rs = np.random.RandomState(0)
    out = []
    for _ in range(3):
        z = T.tensor(rs.randn(4, 3).astype(np.float32), requires_grad=grad)
        with T.set_grad_enabled(grad):
            if grad:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    f(z)
            else:
                out += _arr(f(z))
    return out, (f,)


def test_maf_mv_invert_compiled():
    (f,) = _parity(lambda T, c: _maf_mv_invert(T, c, False))
    assert f.stats["calls"] == 3 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats
    (f,) = _parity(lambda T, c: _maf_mv_invert(T, c, True))
    assert f.stats["calls"] == 3 and f.stats["traces"] == 0, f.stats


# ---------------------------------------------------------------- MAF (flow_models)

@contextlib.contextmanager
def _validate(T, on):
    T.distributions.Distribution.set_default_validate_args(on)
    try:
        yield
    finally:
        T.distributions.Distribution.set_default_validate_args(True)


def _maf_an_runs(T, compiled, validate):
    ns = program(T, MAF_AN)
    maf = init_uniform(T, ns.MAF(3, 2, 6, 1), 3, 0.3)
    optimizer = T.optim.Adam(maf.parameters(), lr=1e-3)

    def step(x, epoch, batch):         # train's loop body
        optimizer.zero_grad()
        loss = maf.loss(x)
        print(f'epoch: {epoch} batch: {batch}, train_loss: {loss}')
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    rs = np.random.RandomState(5)
    out, buf = [], io.StringIO()
    with _validate(T, validate), contextlib.redirect_stdout(buf):
        for batch in range(4):
            out += _arr(f(T.tensor(rs.rand(6, 2).astype(np.float32)), 0, batch))
    return out + _state(maf), (f, buf.getvalue())


@pytest.mark.parametrize("validate", [True, False])
def test_maf_an_step_compiled(validate):
    logs = [_maf_an_runs(T, c, validate)[1][1] for T, c in ((torch, False), (tracegrad, True))]
    _api.same_logs(*logs, 2e-5)
    assert logs[1].count("train_loss: ") == 4 and "batch: 3," in logs[1], logs[1]
    f, _ = _parity(lambda T, c: _maf_an_runs(T, c, validate))
    if validate:
        assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 4 and f.stats["traces"] == 0, f.stats
        assert ["validate_args" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats
    else:
        # the f-string log formats the loss (its value in Python, as torch.compile's break at
        # a print): eager each call, so each call prints its own loss
        assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 4 and f.stats["traces"] == 0, f.stats
        assert ["format()" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats


# ---------------------------------------------------------------- seq2seq with attention

def _s2s_runs(T, compiled):
    Tn = _api.draws(T, 7)
    models = program(Tn, S2S_MODEL)
    model = init_uniform(T, models.Seq2Seq(models.Encoder(9, 5, 6), models.Decoder(7, 5, 6, models.Attention(6))),
                         3, 0.3)
    optimizer = T.optim.Adam(model.parameters(), lr=0.001)
    criterion = T.nn.CrossEntropyLoss(ignore_index=0)

    def step(src, trg):                # train.py's loop body
        optimizer.zero_grad()
        output = model(src, trg)
        output = output.view(-1, 7)
        trg_flat = trg[1:].reshape(-1)
        loss = criterion(output, trg_flat)
        loss.backward()
        optimizer.step()
        return loss

    f = T.compile(step) if compiled else step
    def decode(token, hidden, enc):    # one decoder step
        return model.decoder(token, hidden, enc)
    dec = T.compile(decode) if compiled else decode
    rs = np.random.RandomState(0)
    out = []
    for _ in range(3):
        out += _arr(f(T.tensor(rs.randint(0, 9, (5, 4))), T.tensor(rs.randint(0, 7, (4, 4)))))
    with T.no_grad():                  # greedy decoding, one compiled decoder step per token
        enc, hidden = model.encoder(T.tensor(rs.randint(0, 9, (5, 4))))
        token = T.ones(4, dtype=T.long)
        for _ in range(3):
            output, hidden = dec(token, hidden, enc)
            token = output.argmax(1)
            out += _arr(output, token)
    return out + _state(model), (f, dec)


def test_s2s_step_and_decoder_compiled():
    f, dec = _parity(_s2s_runs)
    # the teacher-forcing coin (``torch.rand`` here drawing from a NumPy stream) advances Python
    # state: eager each call, the stream named
    assert f.stats["calls"] == 3 and f.stats["eager_calls"] == 3 and f.stats["traces"] == 0, f.stats
    assert ["'torch._rs'" in r for r, _ in f.stats["graph_breaks"]] == [True], f.stats
    # the decoder step: the first call eager (tracegrad's rule), then one program for the rest
    assert dec.stats["calls"] == 3 and dec.stats["traces"] == 1 and dec.stats["eager_calls"] == 1, dec.stats
    assert not dec.stats["graph_breaks"], dec.stats


# ---------------------------------------------------------------- hyperparameters by implicit differentiation

def _hyper_runs(T, compiled):
    ns = program(T, HYPER, tqdm=lambda it: it, Tuple=typing.Tuple)
    model = init_uniform(T, ns.MLP(5, 3), 4, 0.5)
    meta_model = init_uniform(T, ns.WeightDecay(model, 'cpu'), 5, 0.5)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-2)
    meta_optimizer = T.optim.RMSprop(meta_model.parameters(), lr=.1)

    def inner(x, y):                   # gradient_based_ho's inner loop body
        training_loss = ns.compute_loss(x, y, model, meta_model)
        optimizer.zero_grad()
        training_loss.backward()
        optimizer.step()
        return training_loss

    def outer(x, y, vx, vy):           # its outer step
        training_loss = ns.compute_loss(x, y, model, meta_model)
        validation_loss = ns.compute_loss(vx, vy, model, meta_model)
        hyper_grads = ns.hypergradient(validation_loss, training_loss, meta_model.parameters, model.parameters)
        meta_optimizer.zero_grad()
        for p, g in zip(meta_model.parameters(), hyper_grads):
            p.grad = g
        meta_optimizer.step()
        return validation_loss, hyper_grads[0]

    fi, fo = (T.compile(inner), T.compile(outer)) if compiled else (inner, outer)
    rs = np.random.RandomState(0)
    batch = lambda: (T.tensor(rs.randn(4, 5).astype(np.float32)), T.tensor(rs.randint(0, 3, 4)))
    out = []
    for _ in range(3):
        for _ in range(2):
            out += _arr(fi(*batch()))
        out += _arr(*fo(*batch(), *batch()))
    return out + _state(model) + _state(meta_model), (fi, fo)


def test_hyper_inner_and_outer_steps_compiled():
    fi, fo = _parity(_hyper_runs, ref_tol=5e-5)
    assert fi.stats["calls"] == 6 and fi.stats["eager_calls"] == 1 and fi.stats["traces"] == 1, fi.stats
    assert fo.stats["calls"] == 3 and fo.stats["eager_calls"] == 1 and fo.stats["traces"] == 1, fo.stats
    assert not fi.stats["graph_breaks"] and not fo.stats["graph_breaks"], (fi.stats, fo.stats)


# ---------------------------------------------------------------- planar flows

def _planar_runs(T, compiled):
    Tn = _api.draws(T, 3)
    ns = program(Tn, PLANAR, tqdm=lambda it: it, device='cpu', plt=None)
    flow = ns.NormalizingFlow(3, 2)
    optimizer = T.optim.Adam(flow.parameters(), lr=1e-2)
    log_density = lambda z: - ns.U3(z)

    def step(z0):                      # train's loop body, its draw passed in
        zk, log_jacobian = flow(z0)
        flow_log_density = ns.gaussian_log_pdf(z0) - log_jacobian
        exact_log_density = log_density(zk).to('cpu')
        reverse_kl_divergence = (flow_log_density - exact_log_density).mean()
        optimizer.zero_grad()
        loss = reverse_kl_divergence
        loss.backward()
        optimizer.step()
        return loss, zk

    f = T.compile(step) if compiled else step
    train = T.compile(ns.train) if compiled else ns.train
    rs = np.random.RandomState(2)
    out = []
    for _ in range(4):
        out += _arr(*f(T.tensor(rs.randn(16, 2).astype(np.float32))))
    for _ in range(2):
        out.append(np.array(train(flow, optimizer, 3, log_density, 16, 2)))
    return out + _state(flow), (f, train)


def test_planar_step_and_train_compiled():
    f, train = _parity(_planar_runs, ref_tol=5e-5)
    assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats
    assert not f.stats["graph_breaks"], f.stats
    assert train.stats["calls"] == 2 and train.stats["eager_calls"] == 2 and train.stats["traces"] == 0, train.stats
    # its ``torch.randn`` (a NumPy stream here) advances Python state: eager, the stream named
    assert ["'torch._rs'" in r for r, _ in train.stats["graph_breaks"]] == [True], train.stats


# ---------------------------------------------------------------- MAML

class _FixedTask:
    """A ``Task`` whose ``sample`` gives the tensors it was made with (the step's inputs)."""

    def __init__(self, T, x, y):
        self.T, self.x, self.y = T, x, y

    def sample(self, K):
        return self.x, self.y, self.T.nn.MSELoss()


def _maml_runs(T, compiled):
    ns = program(T, MAML, tqdm=lambda it: it, grad=T.autograd.grad)
    rs = np.random.RandomState(1)
    params = _api.maml_params(T, rs)
    meta_optimizer = T.optim.Adam(params, lr=1e-2)

    def meta_step(x, y, xq, yq):      # maml's body for one task
        theta_prime = ns.perform_k_training_steps([p.clone() for p in params], _FixedTask(T, x, y), 5, 2, 1e-2)
        meta_optimizer.zero_grad()
        loss = T.nn.MSELoss()(ns.mlp(xq, theta_prime), yq)
        loss.backward()
        meta_optimizer.step()
        return loss

    f = T.compile(meta_step) if compiled else meta_step
    out = []
    for i in range(4):
        x, xq = (T.tensor(rs.uniform(-5, 5, (n, 1)).astype(np.float32)) for n in (5, 6))
        out += _arr(f(x, (i + 1) * T.sin(x), xq, (i + 1) * T.sin(xq)))
    return out + _arr(*params), (f,)


def test_maml_meta_step_compiled():
    (f,) = _parity(_maml_runs)
    assert f.stats["calls"] == 4 and f.stats["eager_calls"] == 1 and f.stats["traces"] == 1, f.stats
    assert not f.stats["graph_breaks"], f.stats
