"""Compile patterns of the sixtieth round of public programs
(tests/api/test_public_programs_round60.py; sources in tests/public_programs_round60_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- pmixer/SASRec.pytorch (Apache-2.0): the step takes NumPy batches (``torch.LongTensor(log_seqs)``,
  ``np.where(pos != 0)`` indexing the logits) whose values are constants of the program: one
  trace per distinct batch, none for a batch seen before.
- HarryVolek/PyTorch_Speaker_Verification (BSD-3-Clause): the GE2E step (LSTM, the element-wise
  similarity matrix through CopySlices, two ``clip_grad_norm_``, SGD over two groups) is one
  program for every permutation (given as tensors).
- weihua916/powerful-gnns (MIT): GraphCNN builds sparse COO adjacency and pooling matrices inside
  the step; sparse COO tensors are eager-only in tracegrad, so each call runs eagerly after the
  failed trace (a graph break with a warning), equal to torch. Under ``fullgraph=True`` that
  trace failure used to run the call eagerly too, with only a warning; it now raises, the
  parameters and optimizer state as before the call (torch's fullgraph raises at a graph break).
- facebookresearch/madgrad (MIT): ``step`` reads ``self.state['k'].item()``: the whole training
  step breaks there (runs eagerly); the forward and backward compiled with MADGRAD's step
  outside is one program.
"""
import contextlib
import io
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import compiled_parity, arrays as _arr, close as _close, init_uniform, state as _state
from public_programs_round60_src import (GE2E, GIN_MAIN, GIN_MODELS, GIN_UTIL, MADGRAD, SASREC_MODEL, ge2e_globals,
                                        program, sasrec_batches, write_gin_dataset)

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the graph breaks' warnings, legacy constructors
        yield


def _check(runner, ref_tol=2e-5, comp_tol=1e-5):
    return compiled_parity(torch, tracegrad, runner, ref_tol, comp_tol)


# ---------------------------------------------------------------- SASRec

def _sasrec_runs(T, compiled):
    args = types.SimpleNamespace(device="cpu", hidden_units=8, maxlen=6, dropout_rate=0.0, num_blocks=2,
                                 num_heads=2, lr=0.01, l2_emb=0.01)
    model = init_uniform(T, program(T, SASREC_MODEL).SASRec(5, 12, args), 0)
    bce_criterion = T.nn.BCEWithLogitsLoss()
    adam_optimizer = T.optim.SGD(model.parameters(), lr=0.1)

    def step(u, seq, pos, neg):         # main.py's loop body
        pos_logits, neg_logits = model(u, seq, pos, neg)
        pos_labels, neg_labels = T.ones(pos_logits.shape, device=args.device), T.zeros(neg_logits.shape,
                                                                                      device=args.device)
        adam_optimizer.zero_grad()
        indices = np.where(pos != 0)
        loss = bce_criterion(pos_logits[indices], pos_labels[indices])
        loss += bce_criterion(neg_logits[indices], neg_labels[indices])
        for param in model.item_emb.parameters():
            loss += args.l2_emb * T.norm(param)
        loss.backward()
        adam_optimizer.step()
        return pos_logits, loss

    if compiled:
        step = T.compile(step)
    sampler = sasrec_batches(2, 3, 6, 12, 1)
    batches = [tuple(np.array(x) for x in sampler.next_batch()) for _ in range(2)]
    out = []
    for b in (0, 1, 0, 1, 0):
        out += _arr(*step(*batches[b]))
    return out + _state(model), step


def test_sasrec_numpy_batches_are_guarded_constants():
    st = _check(_sasrec_runs)
    # call 1 eager; calls 2 and 3 trace batch 1 and batch 0; calls 4 and 5 reuse them
    assert st["calls"] == 5 and st["eager_calls"] == 1 and st["traces"] == 2, st
    assert not st["graph_breaks"], st


# ---------------------------------------------------------------- GE2E

def _ge2e_runs(T, compiled, tmp_path):
    g = program(T, GE2E, **ge2e_globals(T, tmp_path, 0, n_speakers=2, m_utter=3))
    hp = g.hp
    embedder_net = init_uniform(T, g.SpeechEmbedder(), 1, 0.5)
    ge2e_loss = g.GE2ELoss("cpu")
    optimizer = T.optim.SGD([{'params': embedder_net.parameters()}, {'params': ge2e_loss.parameters()}],
                            lr=hp.train.lr)

    def step(mel_db_batch, perm, unperm):       # train()'s loop body
        mel_db_batch = mel_db_batch[perm]
        optimizer.zero_grad()
        embeddings = embedder_net(mel_db_batch)
        embeddings = embeddings[unperm]
        embeddings = T.reshape(embeddings, (hp.train.N, hp.train.M, embeddings.size(1)))
        loss = ge2e_loss(embeddings)
        loss.backward()
        T.nn.utils.clip_grad_norm_(embedder_net.parameters(), 3.0)
        T.nn.utils.clip_grad_norm_(ge2e_loss.parameters(), 1.0)
        optimizer.step()
        return loss

    if compiled:
        step = T.compile(step)
    rs = np.random.RandomState(0)
    out = []
    for _ in range(3):
        x = T.tensor(rs.randn(6, 4, 6).astype(np.float32))
        perm = rs.permutation(6)
        out += _arr(step(x, T.tensor(perm), T.tensor(np.argsort(perm))))
    return out + _state(embedder_net) + _state(ge2e_loss), step


def test_ge2e_step_is_one_program(tmp_path):
    st = _check(lambda T, c: _ge2e_runs(T, c, tmp_path))
    assert st["calls"] == 3 and st["eager_calls"] == 1 and st["traces"] == 1, st


# ---------------------------------------------------------------- GIN

def _gin_runs(T, compiled, fullgraph=False):
    g = program(T, GIN_UTIL + GIN_MODELS + GIN_MAIN)
    with contextlib.redirect_stdout(io.StringIO()):
        graphs, num_classes = g.load_data("TOY", False)
    model = init_uniform(T, g.GraphCNN(3, 2, 3, 6, num_classes, 0.0, True, "sum", "sum", "cpu"), 2, 0.4)
    optimizer = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # (Adam: see the api test)

    def step(batch_graph, labels):        # main.py's train() body
        output = model(batch_graph)
        loss = g.criterion(output, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return output, loss

    if compiled:
        step = T.compile(step, fullgraph=fullgraph)
    out = []
    for s in range(3):
        batch = graphs[s * 8:(s + 1) * 8]
        out += _arr(*step(batch, T.LongTensor([graph.label for graph in batch])))
    return out + _state(model), step, model, optimizer, graphs


@pytest.fixture
def _toy_graphs(tmp_path, monkeypatch):
    write_gin_dataset(tmp_path, "TOY", 24, 0)
    monkeypatch.chdir(tmp_path)


def test_gin_sparse_step_falls_back(_toy_graphs):
    st = _check(lambda T, c: _gin_runs(T, c)[:2], ref_tol=1e-4)
    assert st["traces"] == 0 and st["eager_calls"] == 3, st
    assert [b[0].split(":")[0] for b in st["graph_breaks"]] == ["tracing raised RuntimeError"], st
    assert "sparse COO tensors work in eager mode only" in st["graph_breaks"][0][0], st


def test_gin_sparse_step_fullgraph_raises_state_untouched(_toy_graphs):
    # was: ran eagerly with a warning (fullgraph=True ignored for a failed trace)
    _, _, model, optimizer, graphs = _gin_runs(tracegrad, False)
    before = _state(model)
    step = tracegrad.compile(lambda b, y: optimizer.step() or model(b).sum(), fullgraph=True)
    model.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # no "running ... eagerly" warning
        warnings.filterwarnings("ignore", message=".*SparseTensor.*deprecated")
        with pytest.raises(RuntimeError, match="sparse COO tensors work in eager mode only") as info:
            step(graphs[:4], None)
    assert any("fullgraph=True" in n for n in getattr(info.value, "__notes__", [])), info.value
    _close(before, _state(model), 0)
    assert step.stats["eager_calls"] == 0 and step.stats["traces"] == 0, step.stats
    assert all(p.grad is None for p in model.parameters())


# ---------------------------------------------------------------- MADGRAD

def _madgrad_runs(T, compiled, whole_step):
    net = init_uniform(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)), 0)
    opt = program(T, MADGRAD).MADGRAD(net.parameters(), lr=0.05, weight_decay=0.01)

    def fwd_bwd(x, y):
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        return loss

    def train_step(x, y):
        loss = fwd_bwd(x, y)
        opt.step()
        return loss

    fn = train_step if whole_step else fwd_bwd
    if compiled:
        fn = T.compile(fn)
    rs = np.random.RandomState(0)
    out = []
    for _ in range(4):
        x, y = T.tensor(rs.randn(5, 3).astype(np.float32)), T.tensor(rs.randn(5, 2).astype(np.float32))
        out += _arr(fn(x, y))
        if not whole_step:
            opt.step()
    return out + _state(net) + _arr(opt.state["k"]), fn


def test_madgrad_step_item_breaks_the_graph():
    st = _check(lambda T, c: _madgrad_runs(T, c, True), ref_tol=2e-6, comp_tol=0)
    assert st["traces"] == 0 and st["eager_calls"] == 4, st
    assert st["graph_breaks"][0][0].startswith("item() reads a tensor's value in Python"), st
    assert st["graph_breaks"][0][1] == "<public program>:84", st     # ``k = self.state['k'].item()``


def test_madgrad_forward_backward_compiled_step_eager():
    st = _check(lambda T, c: _madgrad_runs(T, c, False), ref_tol=2e-6)
    assert st["calls"] == 4 and st["eager_calls"] == 1 and st["traces"] == 1 and not st["graph_breaks"], st


def _notes(error):
    return getattr(error, "__notes__", [])


def test_fullgraph_trace_only_error_raises_without_running_eagerly():
    # the pattern without GIN: a function raising only while traced is not run eagerly under
    # fullgraph=True (without it: tests/compile/test_api.py's eager fallback); no note of the
    # tracing library's own
    def fn(x):
        if tracegrad.compiler.is_compiling():
            raise KeyError("only while tracing")
        return x * 2
    f = tracegrad.compile(fn, fullgraph=True)
    for _ in range(2):
        with pytest.raises(KeyError, match="only while tracing") as info:
            f(tracegrad.ones(2))
        assert [n for n in _notes(info.value) if "fullgraph=True" in n], _notes(info.value)
        assert not [n for n in _notes(info.value) if "JAX" in n], _notes(info.value)
    assert f.stats["eager_calls"] == 0 and f.stats["traces"] == 0, f.stats


def test_fullgraph_graph_break_has_no_foreign_note():
    def fn(x):
        print("side effect")
        return x * 2
    with pytest.raises(tracegrad.compiler.GraphBreak, match="print") as info:
        tracegrad.compile(fn, fullgraph=True)(tracegrad.ones(2))
    assert not [n for n in _notes(info.value) if "JAX" in n], _notes(info.value)
