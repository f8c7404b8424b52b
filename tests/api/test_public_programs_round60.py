"""A sixtieth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round60_src.py, executed with ``torch`` bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- pmixer/SASRec.pytorch (Apache-2.0), ``model.py`` at 0f250b6 and ``main.py``'s initialisation
  and training loop at 0535d12 (a sequential recommender): ``nn.Embedding(padding_idx=0)``
  scaled in place, ``torch.LongTensor``/``torch.BoolTensor`` of NumPy arrays, ``seqs *=
  ~mask.unsqueeze(-1)`` (float times bool, in place), ``torch.tril`` of a bool ``ones`` inverted
  as ``nn.MultiheadAttention``'s sequence-first ``attn_mask``, kernel-1 ``Conv1d`` feed-forward
  with ``+=`` residual, ``LayerNorm(eps=1e-8)``, logits indexed by ``np.where``'s tuple,
  ``BCEWithLogitsLoss`` ``+=`` an L2 ``torch.norm`` of the item table, Adam(betas=(0.9, 0.98)),
  the printed ``loss.item()``; ``xavier_normal_`` over ``named_parameters`` in ``try/except``
  (1-D parameters refuse it alike); ``predict``'s ``matmul``/``squeeze`` ranked by
  ``argsort().argsort()`` as ``evaluate`` does.
- HarryVolek/PyTorch_Speaker_Verification (BSD-3-Clause) at 07f996a (speaker verification,
  GE2E loss): ``train`` and ``test`` of ``train_speech_embedder.py`` as written (DataLoader over
  the preprocessed-TIMIT dataset, a stacked ``nn.LSTM`` with ``xavier_normal_``/``constant_``
  init, ``x / torch.norm(x)``, indexing by Python permutation lists, the cosine-similarity
  matrix written element by element through ``cossim[i][j][k] = ...`` into a ``torch.zeros``
  (CopySlices through three views), ``.log_()`` on a non-leaf, two ``clip_grad_norm_`` calls,
  SGD over two parameter groups, ``"{:.4f}".format(tensor)`` logs, checkpoints by
  ``torch.save``/``torch.load``, the EER sweep with ``torch.split``, ``sum()`` of tensors and
  ``%0.2f`` of tensors); utils.py's ``__main__`` check.
- weihua916/powerful-gnns (MIT), GIN for graph classification: ``util.load_data`` reading the
  text format with networkx (``node_features[range(n), [list]] = 1``), ``separate_data``
  (StratifiedKFold), ``GraphCNN`` with block-diagonal ``torch.sparse.FloatTensor`` adjacency and
  pooling matrices and ``torch.spmm``, or max-pooling over padded neighbour lists (index -1
  picks the ``torch.min`` dummy row), learnable eps, BatchNorm MLPs, and ``main()`` run with
  ``sys.argv`` (Adam, ``StepLR`` stepped first, ``loss.detach().cpu().numpy()`` accumulated, the
  accuracy via ``pred.eq(labels.view_as(pred))``, ``print(model.eps)``).
- facebookresearch/madgrad (MIT) ``madgrad/madgrad.py`` at 06d075e: the MADGRAD optimizer
  (``self.state['k']`` a string key beside the parameters' state, read by ``.item()``;
  ``addcmul_``/``addcdiv``/``pow(1/3)``; ``rms[rms == 0] = float('inf')`` when eps is 0; decoupled
  decay) and its sparse branch (``coalesce``, ``_values()``, ``sparse_mask``, dense plus sparse)
  for ``nn.Embedding(sparse=True)``; ``state_dict``/``load_state_dict`` keep ``'k'``.
Changes, the same on both sides: parameters overwritten from seeded NumPy streams, synthetic data,
tiny sizes, dropout 0 (random streams differ).
Found: with ``tracegrad.compile(fullgraph=True)``, a step whose tracing raised (GIN's sparse
adjacency) ran eagerly with a warning instead of raising (tracegrad/compiler.py; see the compile
counterparts in tests/compile/test_public_patterns_round60.py). No differences in values,
gradients, parameters, printed logs or error classes (Adam over float-noise gradients: below).
"""
import contextlib
import functools
import io
import pathlib
import random
import sys
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import same_logs, arrays as _arr, compare, grads as _grads, init_uniform, same_error, \
    state as _state
from public_programs_round60_src import (GE2E, GIN_MAIN, GIN_MODELS, GIN_UTIL, MADGRAD, SASREC_MAIN, SASREC_MODEL,
                                        ge2e_globals, program, sasrec_batches, write_gin_dataset)

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # legacy constructors, the scheduler order
        yield


_same_logs = same_logs


def _after_init(T, cls, seed=None, scale=0.3):
    """The instances of ``cls`` the program builds itself, listed; with a ``seed``, each gets
    seeded NumPy parameters right after its own ``__init__``."""
    made, orig = [], cls.__init__

    def init(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        if seed is not None:
            init_uniform(T, self, seed, scale)
        made.append(self)
    cls.__init__ = init
    return made


# ---------------------------------------------------------------- SASRec

_SAS_ARGS = dict(device="cpu", hidden_units=8, maxlen=6, dropout_rate=0.0, num_blocks=2, num_heads=2, lr=0.01,
                 num_epochs=2, inference_only=False, l2_emb=0.01)


def _sas_state(T, model):
    # the key third of each ``in_proj_bias``: softmax ignores it, so its gradient is float noise
    # (1e-9) that Adam scales up to a step of lr; compared without it
    out = []
    for name, t in sorted(model.state_dict().items()):
        a = t.detach().numpy().copy()
        if name.endswith("in_proj_bias"):
            h = a.shape[0] // 3
            a = np.concatenate([a[:h], a[2 * h:]])
        out.append(a)
    return out


def _sasrec(T):
    import types
    g = program(T, SASREC_MODEL + SASREC_MAIN)
    args = types.SimpleNamespace(**_SAS_ARGS)
    model = g.SASRec(5, 12, args)
    before = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    g.init_params(model)
    # which parameters xavier_normal_ took (2-D) and which raised and were skipped (1-D)
    took = np.array([not np.array_equal(before[n], p.detach().numpy()) for n, p in model.named_parameters()])
    init_uniform(T, model, 0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        opt = g.train(model, args, sasrec_batches(4, 3, 6, 12, 1), 2)
    model.eval()
    seq = np.array([[0, 0, 3, 4, 5, 6]])
    predictions = -model.predict(*[np.array(l) for l in [[1], seq, list(range(1, 13))]])
    ranks = predictions[0].argsort().argsort()[0:3].tolist()
    return buf.getvalue(), [took, np.array(ranks)] + _arr(predictions) + _grads(model) + _sas_state(T, model) + \
        [np.array(sorted(len(s) for s in opt.state.values()))]


def test_sasrec_trains_as_main_py():
    (ref_log, ref), (got_log, got) = _sasrec(torch), _sasrec(tracegrad)
    assert got_log.count("loss in epoch") == 4, got_log
    _same_logs(ref_log, got_log, 2e-6)
    assert ref[0].tolist() == got[0].tolist()       # the same parameters took xavier_normal_
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_sasrec_eval_ignores_its_dropouts():
    # main.py's default dropout_rate=0.5 (embedding, attention and feed-forward dropouts): in
    # eval mode, as ``evaluate`` runs it, predict is deterministic and equal
    def run(T):
        import types
        g = program(T, SASREC_MODEL)
        model = init_uniform(T, g.SASRec(5, 12, types.SimpleNamespace(**{**_SAS_ARGS, "dropout_rate": 0.5,
                                                                          "num_heads": 1})), 4)
        model.eval()
        seq = np.array([[0, 0, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]])
        with T.no_grad():
            logits = model.predict(None, seq, np.array([[1, 2, 3, 7], [8, 9, 10, 11]]))
        return _arr(logits, model.log2feats(seq))
    _compare(run, tol=2e-5)


def test_sasrec_padding_row_gets_no_gradient():
    # ``padding_idx=0``: item 0 (the left padding) is looked up but its row's gradient is zero
    def run(T):
        import types
        g = program(T, SASREC_MODEL)
        model = init_uniform(T, g.SASRec(5, 12, types.SimpleNamespace(**_SAS_ARGS)), 0)
        u, seq, pos, neg = sasrec_batches(1, 3, 6, 12, 2).next_batch()
        pos_logits, neg_logits = model(np.array(u), np.array(seq), np.array(pos), np.array(neg))
        (pos_logits.sum() - neg_logits.sum()).backward()
        gw = model.item_emb.weight.grad
        return _arr(pos_logits, neg_logits, gw) + [np.array(gw[0].abs().sum().item() == 0)]
    _compare(run, tol=2e-5)


# ---------------------------------------------------------------- GE2E speaker verification

def _ge2e(T, tmp, restore=False):
    g = program(T, GE2E, **ge2e_globals(T, tmp, 0))
    nets = _after_init(T, g.SpeechEmbedder, 1, 0.5)
    losses = _after_init(T, g.GE2ELoss)      # its own w=10, b=-5
    random.seed(0)
    buf = io.StringIO()
    path = str(tmp / "ckpt" / "final_epoch_2_batch_id_1.model")
    with contextlib.redirect_stdout(buf):
        if restore:     # hp.train.restore: a second run starts from the first one's model
            g.train(None)
            (tmp / "train.log").unlink()
            g.hp.train.restore = True
        g.train(path)
        g.test(path)
    log = buf.getvalue().replace(str(tmp), "<tmp>") + (tmp / "train.log").read_text()
    (tmp / "train.log").unlink()
    sd = T.load(path)
    ck = T.load(str(tmp / "ckpt" / "ckpt_epoch_1_batch_id_1.pth"))
    return log, _arr(*[sd[k] for k in sorted(sd)]) + _arr(*[ck[k] for k in sorted(ck)]) + \
        _arr(*[p for l in losses for p in l.parameters()]) + [np.array(len(nets))]


@pytest.mark.parametrize("restore", [False, True])
def test_ge2e_train_and_test_as_written(tmp_path, restore):
    (ref_log, ref), (got_log, got) = _ge2e(torch, tmp_path / "t", restore), _ge2e(tracegrad, tmp_path / "g", restore)
    assert "Done, trained model saved at <tmp>/ckpt/final_epoch_2_batch_id_1.model" in got_log, got_log
    assert got_log.count("EER : ") == 2 and "EER across 2 epochs" in got_log, got_log
    _same_logs(ref_log, got_log, 1e-4)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_ge2e_similarity_matrix_and_loss():
    # utils.py's ``__main__`` check, then the similarity matrix of random embeddings: its
    # graph (CopySlices of the element writes), the per-embedding loss and the gradients
    def run(T):
        g = program(T, GE2E, **ge2e_globals(T, pathlib.Path("unused"), 0))
        w = T.autograd.Variable(T.tensor(1.0))
        b = T.autograd.Variable(T.tensor(0.0))
        embeddings = T.tensor([[0, 1, 0], [0, 0, 1], [0, 1, 0], [0, 1, 0], [1, 0, 0], [1, 0, 0]]).to(T.float).reshape(3, 2, 3)
        centroids = g.get_centroids(embeddings)
        cossim = g.get_cossim(embeddings, centroids)
        sim_matrix = w * cossim + b
        loss, per_embedding_loss = g.calc_loss(sim_matrix)
        out = _arr(centroids, cossim, loss, per_embedding_loss)
        e = T.tensor(np.random.RandomState(3).randn(3, 3, 4).astype(np.float32), requires_grad=True)
        crit = g.GE2ELoss("cpu")
        cs = g.get_cossim(e, g.get_centroids(e))
        loss = crit(e)
        loss.backward()
        names = [type(cs.grad_fn).__name__, type(loss.grad_fn).__name__]
        return names, out + _arr(cs, loss, e.grad, crit.w.grad, crit.b.grad)
    ref, got = run(torch), run(tracegrad)
    assert ref[0] == got[0] == ["CopySlices", "SumBackward0"], (ref[0], got[0])
    _compare(lambda T: ref[1] if T is torch else got[1], tol=2e-5)


# ---------------------------------------------------------------- GIN (powerful-gnns)

class _Bar:
    """tqdm stand-in: iterates, accepts ``set_description`` (the progress bar's stderr output
    is not compared)."""

    def __init__(self, it, **kwargs):
        self.it = it

    def __iter__(self):
        return iter(self.it)

    def set_description(self, text):
        pass


def _gin_main(T, argv):
    # ``--decay``: the biases ahead of each BatchNorm have a zero gradient in exact arithmetic,
    # float noise (1e-9) here, which Adam alone would scale up to steps of lr; the L2 term
    # gives them a real gradient
    from sklearn.model_selection import StratifiedKFold
    g = program(T, GIN_UTIL + GIN_MODELS + GIN_MAIN, tqdm=_Bar, StratifiedKFold=StratifiedKFold)
    made = _after_init(T, g.GraphCNN, 2, 0.4)
    buf = io.StringIO()
    saved, sys.argv = sys.argv, ["main.py", "--dataset", "TOY", "--batch_size", "8", "--iters_per_epoch", "2",
                                 "--epochs", "2", "--hidden_dim", "6", "--num_layers", "3", "--final_dropout", "0",
                                 "--decay", "0.01", *argv]
    try:
        with contextlib.redirect_stdout(buf):
            g.main()
    finally:
        sys.argv = saved
    return buf.getvalue(), _grads(made[0]) + _state(made[0])


@pytest.mark.parametrize("argv", [[], ["--neighbor_pooling_type", "max"],
                                  ["--learn_eps", "--neighbor_pooling_type", "average", "--graph_pooling_type",
                                   "average", "--degree_as_tag", "--filename", "out.txt"]])
def test_gin_main_runs_as_written(argv, tmp_path, monkeypatch):
    write_gin_dataset(tmp_path, "TOY", 30, 0)
    monkeypatch.chdir(tmp_path)
    (ref_log, ref), (got_log, got) = _gin_main(torch, argv), _gin_main(tracegrad, argv)
    assert got_log.startswith("loading data\n# classes: 2\n"), got_log
    assert got_log.count("Parameter containing:") == 2, got_log
    _same_logs(ref_log, got_log, 1e-5)
    # the biases ahead of BatchNorm (and the running means that follow them) move by Adam's
    # scaled float noise where their L2 gradient is small: compared to 1e-3
    _compare(lambda T: ref if T is torch else got, tol=1e-3)


@pytest.mark.parametrize("pool", ["max", "sum"])
def test_gin_learn_eps_steps(pool, tmp_path, monkeypatch):
    # the learnable eps (``(1 + self.eps[layer]) * h``) with max pooling over padded neighbour
    # lists or the sparse sum, through plain SGD steps (Adam in main() scales the float-noise
    # gradients of the biases ahead of BatchNorm, which are zero in exact arithmetic)
    write_gin_dataset(tmp_path, "TOY", 24, 4)
    monkeypatch.chdir(tmp_path)

    def run(T):
        g = program(T, GIN_UTIL + GIN_MODELS + GIN_MAIN)
        with contextlib.redirect_stdout(io.StringIO()):
            graphs, nc = g.load_data("TOY", False)
        m = init_uniform(T, g.GraphCNN(3, 2, 3, 6, nc, 0.0, True, "sum", pool, "cpu"), 2, 0.4)
        opt = T.optim.SGD(m.parameters(), lr=0.1)
        out = [np.array([graph.max_neighbor for graph in graphs])] + _arr(*[graph.node_features for graph in graphs])
        for s in range(2):
            batch = graphs[s * 8:(s + 1) * 8]
            o = m(batch)
            loss = g.criterion(o, T.LongTensor([x.label for x in batch]))
            opt.zero_grad()
            loss.backward()
            out += _arr(o, loss) + _grads(m)
            opt.step()
        return out + _state(m)
    _compare(run, tol=5e-5)


# ---------------------------------------------------------------- MADGRAD

def _madgrad(T, kw, sparse=False, reload=False):
    g = program(T, MADGRAD)
    emb, lin = T.nn.Embedding(10, 3, sparse=sparse), T.nn.Linear(3, 2)
    net = init_uniform(T, T.nn.ModuleDict({"emb": emb, "lin": lin}), 0)
    opt = g.MADGRAD(net.parameters(), **kw)
    out = []
    for step in range(4):
        if reload and step == 2:        # a new optimizer from the state_dict continues the same
            sd = opt.state_dict()
            opt = g.MADGRAD(net.parameters(), **kw)
            opt.load_state_dict(sd)
        idx = T.tensor([[1, 2, 4], [4, 3, 1]]) if step % 2 == 0 else T.tensor([[0, 5, 5], [7, 1, 1]])
        loss = (lin(emb(idx)).tanh() ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        out += _arr(loss) + _state(net)
    sd = opt.state_dict()
    keys = [sorted(map(str, sd["state"])), sorted(sd["state"][0]), sd["param_groups"][0]["params"]]
    return keys, out + [sd["state"]["k"].numpy().copy()]


@pytest.mark.parametrize("kw", [{"lr": 0.05}, {"lr": 0.05, "weight_decay": 0.1},
                                {"lr": 0.05, "weight_decay": 0.1, "decouple_decay": True},
                                {"lr": 0.05, "momentum": 0.0}, {"lr": 0.05, "eps": 0.0}])
@pytest.mark.parametrize("reload", [False, True])
def test_madgrad_dense(kw, reload):
    ref, got = _madgrad(torch, kw, reload=reload), _madgrad(tracegrad, kw, reload=reload)
    assert ref[0] == got[0] == [["0", "1", "2", "k"], sorted(["grad_sum_sq", "s"] + ["x0"] * (kw.get("momentum") != 0.0)),
                               [0, 1, 2]], (ref[0], got[0])
    _compare(lambda T: ref[1] if T is torch else got[1], tol=2e-6)


@pytest.mark.parametrize("kw", [{"lr": 0.05, "momentum": 0.0}, {"lr": 0.05, "momentum": 0.0, "eps": 1e-3}])
def test_madgrad_sparse_embedding(kw):
    # the sparse branch: coalesce, sparse_mask, _values() updated in place, dense + sparse
    ref, got = _madgrad(torch, kw, sparse=True), _madgrad(tracegrad, kw, sparse=True)
    assert ref[0] == got[0], (ref[0], got[0])
    _compare(lambda T: ref[1] if T is torch else got[1], tol=2e-6)


@pytest.mark.parametrize("kw", [{"momentum": 0.9}, {"momentum": 0.0, "weight_decay": 0.1}])
def test_madgrad_sparse_refusals_alike(kw):
    def run(T):
        _madgrad(T, {"lr": 0.05, **kw}, sparse=True)
    msgs = same_error(torch, tracegrad, run)
    assert msgs[0] == msgs[1], msgs


@pytest.mark.parametrize("kw", [{"momentum": 1.0}, {"lr": 0.0}, {"weight_decay": -1}, {"eps": -1e-6}])
def test_madgrad_argument_checks_alike(kw):
    msgs = same_error(torch, tracegrad, lambda T: program(T, MADGRAD).MADGRAD(T.nn.Linear(2, 2).parameters(), **kw))
    assert msgs[0] == msgs[1], msgs
