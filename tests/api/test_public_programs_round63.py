"""A sixty-third round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round63_src.py, executed with ``torch`` bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- MaximeVandegar/Papers-in-100-Lines-of-Code (MIT),
  ``Masked_Autoregressive_Flow_for_Density_Estimation/maf.py`` at 96abe72 (a masked
  autoregressive flow): MADE's hidden degrees by ``torch.randint``, masks by
  ``(in_deg[None, :] <= out_deg[:, None]).float()``, ``MaskedLinear`` as ``F.linear`` of
  ``weight * mask`` (a buffer), ``chunk(2, dim=1)``; a BatchNorm flow with ``var(0,
  unbiased=False, keepdim=True)``, ``rsqrt``, a log-determinant ``.expand(batch)`` summed in place
  into ``torch.zeros(batch)``; ``x[:, perm]`` by a long buffer; a logit transform with
  ``clamp``; the loop body of its ``__main__`` (dequantization by ``rand_like``, Adam,
  ``zero_grad(set_to_none=True)``); the calibration pass under ``no_grad`` whose buffers grow
  by ``+=`` (``torch.tensor([[n]], dtype=x.dtype, device=x.device)``), ``end_calibration``'s
  ``.item()``, ``clamp_(min=)`` and ``copy_``; sampling by ``invert`` (``y[:, j] = ...`` written
  column by column into ``zeros_like``, in ``reversed`` module order). Inverting with grad
  enabled and then backward reads a tensor that ``y[:, j] = ...`` changed: the same
  RuntimeError in both.
- aniruddh93/flow_models (no license file), ``maf.py`` at d4e5152 (MAF on two moons): masks by
  ``(h + torch.arange(0, hidden)) % (input_size - 1)`` and ``unsqueeze`` comparisons,
  ``torch.flip(input, -1)``/``flip(input, [-1])``, a ``Sequential`` iterated for
  ``.inverse``, ``sum_log_det += torch.squeeze(log_det)`` of a ``(batch, 1)`` zeros tensor, a
  ``Normal(0, 1)`` base distribution's ``log_prob``, a ``Dataset`` reading a CSV with
  ``csv.DictReader``, ``train`` with its f-string logs of a 0-d tensor that requires grad
  (``{loss}``: its ``__format__``), validation summed from the float ``0.0``. As written
  ``main()`` names ``path`` (its variable is ``data_path``): NameError in both; ``sample()``
  calls ``torch.flip(input, -1)`` (an int for the ``dims`` tuple): TypeError in both; with that
  flip given ``(-1,)`` it calls ``.numpy()`` on a tensor that requires grad: the same
  RuntimeError, and under ``no_grad`` equal samples.
- gabinho991/CS598 (no license file), ``model/`` and ``train.py`` at 707a66f (a seq2seq with
  additive attention and teacher forcing): a bidirectional ``LSTM`` encoder whose last two
  hidden states are ``cat``-ed and projected, attention by ``hidden.repeat(src_len, 1, 1)``,
  ``permute``, ``self.v.repeat(batch, 1).unsqueeze(1)`` and ``bmm``; an ``LSTM`` decoder started
  from ``(hidden, torch.zeros_like(hidden))`` per step; teacher forcing by ``torch.rand(1).item()
  < teacher_forcing_ratio``, ``argmax(1)`` fed back to the embedding; ``torch.stack`` of the
  step outputs, ``CrossEntropyLoss(ignore_index=0)`` of ``view(-1, OUTPUT_DIM)`` against
  ``trg[1:].reshape(-1)``; the batches made by ``pad_sequence``. ``Seq2Seq.forward`` unpacks
  ``batch_size, trg_len = trg.shape`` from a ``(len, batch)`` tensor: where the batch size is
  not the target length the loss gets mismatched sizes, the same ValueError in both.
- MaximeVandegar/Papers-in-100-Lines-of-Code (MIT),
  ``Optimizing_Millions_of_Hyperparameters_by_Implicit_Differentiation/gradient_based_HO.py`` at
  44039de (hyperparameters by implicit differentiation): a weight decay per parameter as a
  ``ParameterDict`` made from a plain dict of ``Parameter(torch.rand(m.shape))``,
  ``Softplus`` of it times ``weights ** 2`` summed into the float ``0.``; the inner loop on
  ``torch.randperm(n)[:batch]`` rows; ``compute_pred`` under the ``@torch.no_grad()``
  decorator, ``((pred == label).sum() / n).item()``; the hypergradient by
  ``autograd.grad(..., w(), create_graph=True)`` (``w`` the bound ``model.parameters``),
  Neumann-series inverse-Hessian-vector products by ``autograd.grad(f, w(), grad_outputs=v,
  retain_graph=True)`` of a tuple of gradients, the mixed second derivative by ``grad_outputs=``
  against the hyperparameters, ``p.grad = g`` assigned, ``RMSprop``. The MLP is made as
  ``MLP(input_dim=5, output_dim=3)`` for its ``784``/``10`` (the tiny sizes).
- MaximeVandegar/Papers-in-100-Lines-of-Code (MIT),
  ``Variational_Inference_with_Normalizing_Flows/Flows.py`` at 4740d2d (planar flows fitted by
  reverse KL to four energy functions): ``self.w.T`` of a 1-D parameter (torch's once-only
  deprecation warning), ``torch.norm``, a module attribute that is a lambda over ``self.h``,
  ``log_jacobians = 0`` grown by ``+=`` of tensors, ``torch.tensor([math.pi * 2],
  device=z.device)``, the energies as lambdas of ``z[:, 0]``/``z[:, 1]``; ``train`` with
  ``torch.randn(batch, dim).to(device)`` and ``losses.append(loss.item())``; the plots: a grid
  by ``np.meshgrid`` made a float32 tensor (``dtype=torch.float``) through the flow,
  ``.detach().data.cpu().reshape(...)`` handed to ``pcolormesh``, and a float64 grid (no
  dtype) through the energy, the tensor handed to ``imshow`` (read by ``__array__``).
- MaximeVandegar/Papers-in-100-Lines-of-Code (MIT),
  ``Model_Agnostic_Meta_Learning_for_Fast_Adaptation_of_Deep_Networks/maml.py`` at 0a3f41e
  (MAML on sine regression): a functional MLP of ``F.linear(x, params[i], bias=params[j])``;
  tasks drawn under the ``@torch.no_grad()`` decorator by ``torch.rand(1).item()``; the inner
  loop on clones of the parameters: ``p.grad = None`` on a non-leaf, ``autograd.grad(loss,
  params)``, ``p.data -= alpha * g`` (an update autograd does not see: the meta-gradient passes
  the clones as identity, first-order MAML); the meta step sums ``loss.backward()`` over tasks
  into the leaves, Adam, ``np.mean`` of ``loss.item()``s; then ``mlp(x[..., None], params)`` on
  ``torch.linspace`` and the fine-tuning of its ``__main__``. The parameters have the shapes
  and uniform bounds of its ``__main__`` (drawn from a NumPy stream, biases ``zeros``), 8 hidden
  units for 40.
- MaximeVandegar/Papers-in-100-Lines-of-Code (MIT),
  ``On_First_Order_Meta_Learning_Algorithms/reptile.py`` at 4e5082f (Reptile on sine tasks):
  ``perform_k_training_steps`` on ``copy.deepcopy(model)`` with its own SGD and
  ``torch.randperm(50)[:10]`` batches, returning the parameters; the meta update ``p +=
  epsilon * (g - p)`` in place on the leaves under ``no_grad``; tasks under the
  ``@torch.no_grad()`` decorator with ``torch.linspace``. Its last block tests ``__name__ ==
  'main'``: run as ``__main__`` it does nothing, in both; the tests run it at tiny sizes (8
  hidden units, 3 iterations). Its plot of ``y_pred_after.numpy()`` (made with grad) raises the
  same RuntimeError in both; ``.data.numpy()`` does not.
Changes, the same on both sides: parameters overwritten from seeded NumPy streams, the random
draws (``randint``, ``rand``, ``randn``, ``rand_like``) taken from a NumPy stream, synthetic
data, tiny sizes, DataLoaders without shuffling (the libraries' random streams differ).
"""
import contextlib
import copy
import functools
import io
import types
import typing
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, numpy_draws, \
    same_error, same_logs, state as _state
from public_programs_round63_src import HYPER, MAF_AN, MAF_MV, MAML, PLANAR, REPTILE, S2S_MODEL, S2S_TRAIN, \
    program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class draws(numpy_draws):
    """``numpy_draws`` with ``randint(low, high, size)`` from the same kind of stream (MADE's
    hidden degrees)."""

    def __init__(self, T, seed):
        super().__init__(T, seed)
        self._ints = np.random.RandomState(seed + 1000)

    def randint(self, low, high, size, **kw):
        return self._T.tensor(self._ints.randint(low, high, size), dtype=kw.get("dtype", self._T.int64))

    def randperm(self, n, **kw):
        return self._T.tensor(self._ints.permutation(n), dtype=kw.get("dtype", self._T.int64))


# ---------------------------------------------------------------- MAF (Papers in 100 lines)

def maf_mv(T, seed=1):
    """The flow program with ``torch`` drawing from NumPy; a 3-feature MAF of 2 MADE layers
    (8 hidden units, 2 hidden layers) with seeded parameters."""
    Tn = draws(T, seed)
    ns = program(Tn, MAF_MV)
    return Tn, ns, init_uniform(T, ns.MAF(3, 8, num_layers=2, hidden_layers=2), 3, 0.3)


def maf_mv_loss(ns, model, logit, xb, u):
    """The ``__main__``'s loss of a batch ``xb`` dequantized by the noise ``u``; with the flow's
    output and log-determinant."""
    x_deq = (xb * 255.0 + u) / 256.0
    y, _ = logit(x_deq, reverse=False)
    z, logdet_flow = model.forward_and_logdet(y)
    log_pz = ns.std_normal_logprob(z)
    loss = -(log_pz + logdet_flow).mean()
    return loss, z, logdet_flow


def _maf_mv_run(T):
    Tn, ns, model = maf_mv(T)
    logit = ns.LogitTransform1d()
    opt = T.optim.Adam(model.parameters(), lr=1e-4)
    xs = np.random.RandomState(5).rand(4, 6, 3).astype(np.float32)
    out, first = [], None
    for xb in xs:                      # its __main__'s loop body
        xb = T.tensor(xb)
        u = Tn.rand_like(xb)  # dequantization
        loss, z, logdet_flow = maf_mv_loss(ns, model, logit, xb, u)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        first = first or _grads(model)
        opt.step()
        out += _arr(loss, z, logdet_flow)
    model.eval()                       # its calibration pass, then sampling
    with T.no_grad():
        model.begin_calibration()
        for xb in xs:
            xb = T.tensor(xb)
            u = Tn.rand_like(xb)
            x_deq = (xb * 255.0 + u) / 256.0
            y, _ = logit(x_deq, reverse=False)
            _ = model.forward_and_logdet(y)
        model.end_calibration()
        model.eval()
    temperature = 0.7
    with T.no_grad():
        z = temperature * Tn.randn(5, 3)
        y = model.invert(z)  # logit-space sample
        x, _ = logit(y, reverse=True)  # back to pixel space in [0,1]
    assert not model.transforms[1]._collecting
    return out, first, _arr(y, x), _state(model)


def test_maf_mv_train_calibrate_sample():
    ref, got = _maf_mv_run(torch), _maf_mv_run(tracegrad)
    _compare(lambda T: (ref if T is torch else got)[0], tol=2e-5)
    _compare(lambda T: (ref if T is torch else got)[1], tol=2e-5)
    _compare(lambda T: (ref if T is torch else got)[2], tol=5e-5)
    # the BatchNorm flow takes each batch's mean away, so the gradient of the last MaskedLinear's
    # shift biases is 0 but for 1e-8 noise, which Adam turns into lr-sized steps (lr=1e-4 here,
    # as the program: 4 steps part those entries by 8e-4 at most), and the calibration pass sums
    # the shifted outputs and their squares over 24 samples into the next flow's statistics
    # (7e-3 apart, 0.5%, on some machines' kernels)
    _compare(lambda T: (ref if T is torch else got)[3], tol=1e-2)


def _invert_with_grad(T):
    Tn, ns, model = maf_mv(T)
    z = Tn.randn(4, 3, requires_grad=True)
    model.eval()
    model.invert(z).sum().backward()


def test_maf_mv_invert_with_grad_fails_alike():
    # ``y[:, j] = ...`` changes ``y`` after ``self.net(y)`` saved it for backward
    msgs = same_error(torch, tracegrad, _invert_with_grad)
    assert all("modified by an inplace operation" in m for m in msgs), msgs


def _calibrate_with_grad(T):
    Tn, ns, model = maf_mv(T)
    x = Tn.randn(4, 3, requires_grad=True)
    model.begin_calibration()
    z, ld = model.forward_and_logdet(x)
    (z.sum() + ld.sum()).backward()
    bn = model.transforms[1]
    flags = [bn._sum.requires_grad, bn._sum.grad_fn is None, bn._count.requires_grad]
    model.end_calibration()
    return _arr(z, ld, x.grad, bn._sum, bn.mean, bn.var) + [np.array(flags + [bn.mean.requires_grad])]


def test_maf_mv_calibration_with_grad_enabled():
    # the buffers grow in place by tensors that require grad: they join the graph, as in torch
    _compare(_calibrate_with_grad, tol=2e-5)


# ---------------------------------------------------------------- MAF (flow_models)

def moons_csv(path, rows, seed=0):
    """A ``cluster_moons.csv``-like file (``X1,X2,Class``) of ``rows`` seeded points."""
    rs = np.random.RandomState(seed)
    a = rs.uniform(0, np.pi, rows)
    with open(path, "w") as f:
        f.write("X1,X2,Class\n")
        for i in range(rows):
            x, y = (np.cos(a[i]), np.sin(a[i])) if i % 2 else (1 - np.cos(a[i]), 0.5 - np.sin(a[i]))
            f.write(f"{x + rs.normal(0, 0.05):.5f},{y + rs.normal(0, 0.05):.5f},{i % 2}\n")
    return str(path)


def _loaders(T):
    """``DataLoader`` without shuffling (the streams differ), else ``T``'s."""
    return lambda dataset, batch_size, shuffle=False: T.utils.data.DataLoader(dataset, batch_size, shuffle=False)


def _maf_an(T, path, main=False, src=MAF_AN):
    ns = program(T, src, __name__="__main__" if main else "maf", DataLoader=_loaders(T))
    maf = init_uniform(T, ns.MAF(3, 2, 6, 1), 3, 0.3)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ns.train(maf, path, 4, 2)
    return buf.getvalue(), _state(maf), ns, maf


def test_maf_an_main_as_written_fails_alike(tmp_path):
    msgs = same_error(torch, tracegrad, lambda T: _maf_an(T, "", main=True))
    assert msgs[0] == msgs[1] == "name 'path' is not defined", msgs


def test_maf_an_train(tmp_path):
    path = moons_csv(tmp_path / "moons.csv", 21)
    (ref_log, ref, *_), (got_log, got, *_) = _maf_an(torch, path), _maf_an(tracegrad, path)
    assert ref_log.count("train_loss: ") == 8 and ref_log.count("val_loss: ") == 2, ref_log
    assert "grad_fn" not in got_log, got_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _maf_an_sample(T, path, grad, src=MAF_AN):
    _, _, ns, maf = _maf_an(T, path, src=src)
    Tn = draws(T, 4)
    maf.sample.__globals__["torch"] = Tn   # ``sample``'s ``torch.randn`` from NumPy
    with T.set_grad_enabled(grad):
        return [maf.sample(5)]


def test_maf_an_sample(tmp_path):
    path = moons_csv(tmp_path / "moons.csv", 21)
    for grad in (True, False):
        msgs = same_error(torch, tracegrad, lambda T: _maf_an_sample(T, path, grad))
        assert all(m.startswith("flip(): argument 'dims' (position 2) must be tuple of ints, not int")
                   for m in msgs), msgs
    src = MAF_AN.replace("return torch.flip(input, -1)", "return torch.flip(input, (-1,))")
    msgs = same_error(torch, tracegrad, lambda T: _maf_an_sample(T, path, True, src))
    assert msgs[0] == msgs[1] and "requires grad" in msgs[0], msgs
    _compare(lambda T: _maf_an_sample(T, path, False, src), tol=5e-5)


# ---------------------------------------------------------------- seq2seq with attention

def _pairs(T, n, trg_len, seed=0):
    """``n`` (question, query) pairs of token ids: questions of 2-4 tokens, queries
    ``<sos> ... <eos>`` (ids 1 and 2) of ``trg_len`` tokens."""
    rs = np.random.RandomState(seed)
    return [(T.tensor(rs.randint(3, 9, rs.randint(2, 5)), dtype=T.long),
             T.tensor([1] + list(rs.randint(3, 7, trg_len - 2)) + [2], dtype=T.long)) for _ in range(n)]


def _s2s(T, batch=4, trg_len=4, epochs=2):
    Tn = draws(T, 7)                    # the teacher-forcing coin and ``Attention.v``
    models = program(Tn, S2S_MODEL)
    pairs = _pairs(T, 2 * batch, trg_len)

    def collate_fn(batch):              # train.py's
        src, trg = zip(*batch)
        return T.nn.utils.rnn.pad_sequence(src, padding_value=0), T.nn.utils.rnn.pad_sequence(trg, padding_value=0)
    loader = T.utils.data.DataLoader(pairs, batch_size=batch, shuffle=False, collate_fn=collate_fn)
    made = []

    def seq2seq(*a):
        made.append(init_uniform(T, models.Seq2Seq(*a), 3, 0.3))
        return made[-1]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        program(Tn, S2S_TRAIN, Attention=models.Attention, Encoder=models.Encoder, Decoder=models.Decoder,
                Seq2Seq=seq2seq, loader=loader, INPUT_DIM=9, OUTPUT_DIM=7, EMB_DIM=5, HID_DIM=6,
                EPOCHS=epochs, DEVICE=T.device("cpu"))
    return buf.getvalue(), _state(made[0])


def test_s2s_train():
    (ref_log, ref), (got_log, got) = _s2s(torch), _s2s(tracegrad)
    assert ref_log.count("Epoch ") == 2, ref_log
    same_logs(ref_log, got_log, 2e-5)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_s2s_batch_not_target_length_fails_alike():
    # ``batch_size, trg_len = trg.shape`` of a (len, batch) target: 3 decoder steps of 4 rows
    # against 4 target steps of 4 rows
    msgs = same_error(torch, tracegrad, lambda T: _s2s(T, batch=4, trg_len=5, epochs=1))
    assert msgs[0] == msgs[1] == "Expected input batch_size (12) to match target batch_size (16).", msgs


# ---------------------------------------------------------------- hyperparameters by implicit differentiation

def hyper_data(T, seed=0, n=8, d=5):
    """``trainX``/``trainY``/``valX``/``valY``: ``n`` rows of ``d`` features, 3 classes."""
    rs = np.random.RandomState(seed)
    return dict(trainX=T.tensor(rs.randn(n, d).astype(np.float32)), trainY=T.tensor(rs.randint(0, 3, n)),
                valX=T.tensor(rs.randn(n, d).astype(np.float32)), valY=T.tensor(rs.randint(0, 3, n)))


def _hyper(T):
    Tn = draws(T, 3)                    # ``torch.rand`` of the decays, ``torch.randperm`` of the rows
    made = {"Adam": [], "RMSprop": []}

    def seeded(name):                   # the optimizers' parameters, those of the Adam from a NumPy stream
        def make(params, **kw):
            params = list(params)
            if name == "Adam":
                init_uniform(T, types.SimpleNamespace(named_parameters=lambda: enumerate(params)), 4, 0.5)
            made[name] += params
            return getattr(T.optim, name)(params, **kw)
        return make
    Tn.optim = types.SimpleNamespace(Adam=seeded("Adam"), RMSprop=seeded("RMSprop"),
                                     lr_scheduler=T.optim.lr_scheduler)
    src = HYPER.replace("MLP(input_dim=784, output_dim=10)", "MLP(input_dim=5, output_dim=3)")
    ns = program(Tn, src, tqdm=lambda it: it, Tuple=typing.Tuple, **hyper_data(T))
    acc = ns.gradient_based_ho(nb_epochs=3, N=2, device='cpu', batch_size=4)
    assert [len(v) for v in made.values()] == [4, 4]
    return [np.array(acc["training"]), np.array(acc["validation"])] + _arr(*made["Adam"], *made["RMSprop"])


def test_hyper_gradient_based_ho():
    _compare(_hyper, tol=2e-5)


# ---------------------------------------------------------------- planar flows

class Axes:
    """A stand-in for matplotlib's axes (and ``plt``): keeps what ``imshow`` and ``pcolormesh``
    are given, as NumPy arrays (through ``__array__``, as matplotlib reads them)."""

    def __init__(self):
        self.got = []

    def imshow(self, data, **kw):
        self.got.append(np.asarray(data))

    def pcolormesh(self, *data, **kw):
        self.got += [np.asarray(d) for d in data]

    def __getattr__(self, name):
        return lambda *a, **k: None


def _planar(T):
    Tn = draws(T, 3)                    # the flows' ``torch.rand`` and ``train``'s ``torch.randn``
    ax, out = Axes(), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ns = program(Tn, PLANAR, tqdm=lambda it: it, device='cpu', plt=ax)
        for U in [ns.U1, ns.U2, ns.U3, ns.U4]:     # __main__'s loops at tiny sizes
            exact_log_density = lambda z: - U(z)
            ns.plot_exact_density(ax, exact_log_density, title='t', nb_point_per_dimension=6)
            for flow_length in [2, 3]:
                flow = ns.NormalizingFlow(flow_length, 2)
                optimizer = T.optim.Adam(flow.parameters(), lr=1e-2)
                out.append(np.array(ns.train(flow, optimizer, 3, exact_log_density, 16, 2)))
                ns.plot_flow_density(flow, ax, title='K', nb_point_per_dimension=5)
                out += _arr(*flow.parameters())
    assert len(ax.got) == 4 + 8 * 3 and ax.got[0].dtype == np.float64 and ax.got[1].dtype == np.float32
    messages = [str(w.message) for w in caught if "x.T" in str(w.message)]
    return out + ax.got, messages


def test_planar_flows_train_and_plot(fresh_warn_once):
    (ref, ref_warn), (got, got_warn) = _planar(torch), _planar(tracegrad)
    # once per process in both (torch's may be spent by an earlier test in the worker; its text
    # ends by naming the C++ file that warned)
    assert len(got_warn) == 1 and got_warn[0].startswith("The use of `x.T` on tensors of dimension other than 2"), \
        got_warn
    assert len(ref_warn) <= 1 and all(m.startswith(got_warn[0]) for m in ref_warn), (ref_warn, got_warn)
    _compare(lambda T: ref if T is torch else got, tol=5e-5)


# ---------------------------------------------------------------- MAML

def maml_params(T, rs, hidden=8):
    """The ``__main__``'s parameters at ``hidden`` units, their uniform draws from ``rs``."""
    def uniform(*shape, bound):
        return T.tensor(rs.uniform(-bound, bound, shape).astype(np.float32)).requires_grad_()
    return [uniform(hidden, 1, bound=np.sqrt(6. / (hidden + 1))), T.zeros(hidden).requires_grad_(),
            uniform(hidden, hidden, bound=np.sqrt(6. / (2 * hidden))), T.zeros(hidden).requires_grad_(),
            uniform(1, hidden, bound=np.sqrt(6. / (hidden + 1))), T.zeros(1).requires_grad_()]


def _maml(T):
    Tn = draws(T, 3)                    # the tasks' and the samples' ``torch.rand``
    ns = program(Tn, MAML, tqdm=lambda it: it, grad=T.autograd.grad)
    params = maml_params(T, np.random.RandomState(1))
    meta_optimizer = T.optim.Adam(params, lr=1e-2)
    training_loss = ns.maml(params, meta_optimizer, 2, 3, 5, 1e-2, device='cpu', nb_tasks=3)
    x = T.linspace(-5, 5, 7)
    y = ns.mlp(x[..., None], params)
    task = ns.sample_task()
    ground_truth_y = task.a * T.sin(x + task.b)
    new_params = ns.perform_k_training_steps([p.clone() for p in params], task, 5, 3, 1e-2, device='cpu')
    y_new = ns.mlp(x[..., None], new_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # .grad of a non-leaf
        flags = [p.grad is None and not p.is_leaf for p in new_params]
    return [np.array(training_loss), np.array(flags)] + _arr(*params, y, ground_truth_y, y_new, *new_params)


def test_maml():
    _compare(_maml, tol=2e-5)


# ---------------------------------------------------------------- Reptile

class Lines:
    """A stand-in for ``matplotlib.pyplot``: keeps what ``plot`` is given, as NumPy arrays."""

    def __init__(self):
        self.got = []

    def plot(self, *data, **kw):
        self.got += [np.asarray(d) for d in data]

    def __getattr__(self, name):
        return lambda *a, **k: None


def _reptile(T):
    Tn, plt = draws(T, 3), Lines()      # the tasks' ``torch.rand``, the batches' ``torch.randperm``
    ns = program(Tn, REPTILE, __name__="__main__", copy=copy, Callable=typing.Callable, tqdm=lambda it: it,
                 plt=plt)
    assert plt.got == [] and not hasattr(ns, "y_pred_after")     # ``__name__ == 'main'``: never runs
    model = init_uniform(T, ns.MLP(hidden_dim=8), 2, 0.5)     # its ``__main__`` block at tiny sizes
    ns.reptile(model, 3, ns.sample_task, ns.perform_k_training_steps)
    with T.no_grad():
        x = T.linspace(-5, 5, 50).unsqueeze(-1)
        y_pred_before = model(x)
        new_task = ns.sample_task()
        true_x, true_y, _ = new_task
    ns.perform_k_training_steps(model, new_task, 2)
    y_pred_after = model(x)
    plt.plot(x.numpy(), y_pred_before.numpy(), label='Before')
    plt.plot(x.numpy(), y_pred_after.data.numpy(), label='After')
    plt.plot(true_x.numpy(), true_y.numpy(), label='True')
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        y_pred_after.numpy()
    return plt.got + _state(model)


def test_reptile():
    _compare(_reptile, tol=2e-5)
