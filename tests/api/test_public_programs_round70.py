"""A seventieth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round70_src.py, executed with ``torch`` bound to either module. Each
test compares logs, warnings, gradients and parameters after optimizer steps:

- shirgur/PointerNet (no license file), ``PointerNet.py`` at c7ed050, ``Data_Generator.py`` at
  15493e1 and ``Train.py`` at ed14cd7 (a pointer network for the travelling salesman problem):
  an encoder LSTM started from ``Parameter(torch.zeros(1), requires_grad=False)`` repeated to
  the hidden shape, a decoder LSTM cell written out with ``gates.chunk(4, 1)``, attention
  through ``nn.Conv1d`` and ``torch.bmm`` with a ``V`` vector from ``nn.init.uniform`` (the
  deprecated name: a FutureWarning), an ``nn.Softmax()`` without ``dim`` (the implicit-dim
  UserWarning), the chosen points masked by ``att[mask] = self.inf[mask]`` (a bool mask from
  ``torch.eq``, an expanded ``-inf`` parameter) and the next input picked by a ``.byte()``
  mask (``embedded_inputs[embedding_mask.data]``: uint8 indexing's deprecation warning in the
  forward and again in each backward through it); ``runner.data[i] = i`` into a repeated
  parameter; ``filter(lambda p: p.requires_grad, model.parameters())`` for Adam; the data set
  solved by a NumPy dynamic programme. ``Train.py`` as written fails on torch 2 twice over:
  its default ``--bidir`` hands ``torch.cat`` one tensor (TypeError), and ``loss.data[0]``
  indexes a 0-d tensor (IndexError); both are checked, then the loop is run with the model
  built unidirectional and ``loss.item()`` in place of ``loss.data[0]``.
- davda54/sam (MIT), ``sam.py`` at 87a9604 and ``example/`` (``train.py`` at 2959775; its
  WideResNet, label-smoothed ``F.kl_div`` loss, step schedule, log and BatchNorm bypass): a
  ``torch.optim.Optimizer`` subclass that builds its base SGD from its own ``param_groups``,
  shares them (``self.param_groups = self.base_optimizer.param_groups``), keeps ``old_p`` in
  ``self.state[p]`` and ``p.data = ...`` back, under ``@torch.no_grad()`` methods; its
  ``_grad_norm`` of ``torch.stack`` of per-parameter norms; the closure form of ``step`` wrapped
  by ``torch.enable_grad()(closure)``; BatchNorm momentum set to 0 between the two forward
  passes by ``model.apply`` (``_BatchNorm`` subclasses); ``nn.Dropout(0.0, inplace=True)``
  right after ``nn.ReLU(inplace=True)`` (torch writes nothing there: the ReLU's saved output
  stays valid for its backward); ``state_dict``/``load_state_dict`` through the subclass.
- haowei01/pytorch-examples (no license file), ``ranking/LambdaRank.py`` at 3de6f42,
  ``ranking/utils.py`` at e60f7f5 and ``ranking/metrics.py`` at e007443 (LambdaRank on
  MSLR-WEB10K): layers made by ``setattr(self, 'fc' + str(i), ...)`` and read back by
  ``getattr``, ``net.apply(init_weights)`` with ``m.bias.data.fill_(0.01)``, a ReLU6 output,
  each query's rank from ``argsort(descending=True).argsort() + 1``, the lambda gradients
  computed under ``torch.no_grad()`` from pairwise score and NDCG differences and pushed in by
  ``y_pred.backward(grad / batch_size)`` for 200 queries before one Adam step, a ``StepLR``
  stepped each epoch (before any ``optimizer.step()`` when an epoch has fewer than 200
  queries: torch's order warning), the pairwise cross-entropy of ``F.logsigmoid`` under
  ``torch.set_grad_enabled(False)``, ``torch.save`` of a checkpoint dict with the optimizer's
  and scheduler's ``state_dict``; ``--double_precision`` with ``--debug`` fails alike (the
  evaluation feeds ``torch.Tensor(X)``, float32, to float64 layers).
Changes, the same on both sides: parameters from seeded NumPy streams, synthetic data for
CIFAR-10 and MSLR-WEB10K, loaders without shuffling or workers, ``print`` collected, a fixed
clock for the logs' elapsed times, tiny sizes through the programs' own arguments.
"""
import functools
import os
import sys
import types
import warnings
from argparse import ArgumentParser, ArgumentTypeError
from collections import defaultdict

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import compare, default_dtype, same_error, same_logs
from public_programs_round70_src import LAMBDARANK, POINTER_DATA, POINTER_NET, POINTER_TRAIN, RANK_METRICS, \
    RANK_UTILS, SAM, SAM_EXAMPLE, SAM_TRAIN, program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


def _argv(monkeypatch, name, args):
    monkeypatch.setattr(sys, "argv", [name] + args.split())


def init_nn(T, seed):
    """``T.nn`` whose ``init.kaiming_normal_``/``init.xavier_uniform_`` draw from a seeded
    NumPy stream with the scales torch's use (the programs' own initialisers, same on both
    sides)."""
    rs = np.random.RandomState(seed)

    def fans(t):
        rf = int(np.prod(t.shape[2:]))
        return t.shape[1] * rf, t.shape[0] * rf

    def fill(t, values):
        with T.no_grad():
            return t.copy_(T.tensor(values).to(t.dtype))

    def kaiming_normal_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
        fan = fans(t)[0 if mode == "fan_in" else 1]
        return fill(t, rs.normal(0, np.sqrt(2.0 / fan), tuple(t.shape)))

    def xavier_uniform_(t, gain=1.0):
        bound = gain * np.sqrt(6.0 / sum(fans(t)))
        return fill(t, rs.uniform(-bound, bound, tuple(t.shape)))

    ns = types.SimpleNamespace(**{k: getattr(T.nn, k) for k in dir(T.nn) if not k.startswith("_")})
    ns.init = types.SimpleNamespace(kaiming_normal_=kaiming_normal_, xavier_uniform_=xavier_uniform_)
    return ns


def _warned(rec):
    """(category, first sentence of the message) of each warning: the gist (torch's own carry a
    "(Triggered internally at ...)" suffix or a version history tracegrad's do not)."""
    return [(w.category.__name__, str(w.message).split(" (Triggered")[0].split(". ")[0].rstrip("."))
            for w in rec]


# ---------------------------------------------------------------- PointerNet (shirgur)

class _Tqdm:
    """A stand-in ``tqdm``: iterates, records descriptions and postfixes."""

    def __init__(self, log):
        self.log = log

    def __call__(self, it, unit=None):
        log = self.log

        class Bar:
            def __iter__(self):
                return iter(it)

            def set_description(self, d):
                log.append(d)

            def set_postfix(self, **kw):
                log.append({k: float(v) for k, v in kw.items()})
        return Bar()


def init_pointer(T, model, seed=1, scale=0.3):
    """The trained parameters (and ``decoder_input0``, drawn by ``nn.init.uniform`` like ``V``)
    from a seeded NumPy stream; the constant parameters (``mask``, ``runner``, ``_inf``, ``h0``,
    ``c0``) kept."""
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for n, p in model.named_parameters():
            if p.requires_grad or n == "decoder_input0":
                p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return model


def pointer_program(T, log):
    return program(T, POINTER_NET + POINTER_DATA, tqdm=_Tqdm(log))


def _points(T, n=3, points=5, seed=0):
    return T.tensor(np.random.RandomState(seed).rand(n, points, 2).astype(np.float32))


def test_pointer_net_forward_backward_warnings():
    def run(T):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            ns = pointer_program(T, [])
            model = init_pointer(T, ns.PointerNet(4, 8, 2, 0.0, False))
            n_init = len(rec)
            o, p = model(_points(T))
            n_forward = len(rec)
            target = T.tensor(np.array([[0, 1, 2, 3, 4], [0, 2, 1, 4, 3], [0, 3, 4, 1, 2]]))
            loss = T.nn.CrossEntropyLoss()(o.contiguous().view(-1, o.size()[-1]), target.view(-1))
            loss.backward()
        names = [n for n, q in model.named_parameters() if q.requires_grad]
        grads = [q.grad.numpy() for n, q in sorted(model.named_parameters()) if q.grad is not None]
        return [_warned(rec), n_init, n_forward, names, p.dtype == T.int64], \
            [o.detach().numpy(), p.numpy(), loss.detach().numpy()] + grads
    (ref_facts, ref), (got_facts, got) = run(torch), run(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    # two deprecated inits; five decoder steps: the implicit softmax dim and the uint8 mask
    # each; the last step's pick is not used by the loss, so four more uint8 warnings come from
    # the backward's IndexBackward0 nodes
    assert ref_facts[1:3] == [2, 12] and len(ref_facts[0]) == 16, ref_facts
    assert [c for c, m in ref_facts[0][12:]] == ["UserWarning"] * 4 and "uint8" in ref_facts[0][12][1]
    _compare(lambda T: ref if T is torch else got, tol=1e-6)


def test_pointer_net_bidirectional_cat_fails_alike():
    # ``torch.cat(encoder_hidden[0][-2:], dim=-1)`` hands cat one tensor
    def run(T):
        ns = pointer_program(T, [])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            init_pointer(T, ns.PointerNet(4, 8, 2, 0.0, True))(_points(T))
    msgs = same_error(torch, tracegrad, run)
    assert all(m.startswith("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
               for m in msgs), msgs


def test_tsp_dataset_and_solver():
    def run(T):
        log = []
        ns = pointer_program(T, log)
        np.random.seed(4)
        ds = ns.TSPDataset(3, 5)
        item = ds[1]
        return [log, len(ds), item["Points"].dtype == T.float32, item["Solution"].dtype == T.int64], \
            [item["Points"].numpy(), item["Solution"].numpy(), ds._to1hotvec(item["Solution"].numpy())]
    (ref_facts, ref), (got_facts, got) = run(torch), run(tracegrad)
    assert ref_facts == got_facts and ref_facts[0][-1] == "Solved 3/3", (ref_facts, got_facts)
    assert sorted(ref[1]) == [0, 1, 2, 3, 4] and ref[1][0] == 0
    _compare(lambda T: ref if T is torch else got)


_POINTER_ARGS = "--train_size 6 --batch_size 3 --nof_epoch 2 --nof_points 5 --embedding_size 4 --hiddens 8 --lr 0.01"


def _pointer_train(T, monkeypatch, src=POINTER_TRAIN, bidir=None):
    """Train.py with the stand-ins: the model's parameters from ``init_pointer`` (and built
    with ``bidir`` where given), a loader without shuffling or workers."""
    log = []
    ns = pointer_program(T, log)

    def PointerNet(embedding_dim, hidden_dim, lstm_layers, dropout, bidir_=False):
        return init_pointer(T, ns.PointerNet(embedding_dim, hidden_dim, lstm_layers, dropout,
                                             bidir_ if bidir is None else bidir))

    def DataLoader(dataset, batch_size, shuffle=False, num_workers=0):
        return T.utils.data.DataLoader(dataset, batch_size=batch_size)

    _argv(monkeypatch, "Train.py", _POINTER_ARGS)
    np.random.seed(0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = program(T, src, PointerNet=PointerNet, TSPDataset=ns.TSPDataset, DataLoader=DataLoader,
                      tqdm=_Tqdm(log), print=lambda *a: log.append(" ".join(map(str, a))))
    return out, log, _warned(rec)


def test_pointer_train_script_fails_alike(monkeypatch):
    # as written: the default --bidir fails at the first forward (TypeError); unidirectional,
    # ``loss.data[0]`` fails after it (IndexError)
    msgs = same_error(torch, tracegrad, lambda T: _pointer_train(T, monkeypatch))
    assert all("must be tuple of Tensors" in m for m in msgs), msgs
    msgs = same_error(torch, tracegrad, lambda T: _pointer_train(T, monkeypatch, bidir=False))
    assert all(m.startswith("invalid index of a 0-dim tensor") for m in msgs), msgs


def test_pointer_train_loop(monkeypatch):
    src = POINTER_TRAIN.replace("loss.data[0]", "loss.item()")

    def run(T):
        ns, log, warned = _pointer_train(T, monkeypatch, src, bidir=False)
        params = [p.detach().numpy() for n, p in sorted(ns.model.named_parameters()) if n != "decoder.att._inf"]
        return [[x for x in log if isinstance(x, str)], len(warned), sorted(set(warned))], \
            [np.array(ns.losses), np.array([x["loss"] for x in log if isinstance(x, dict)])] + params
    (ref_facts, ref), (got_facts, got) = run(torch), run(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[0][-1] == "Batch 2/2" and len(ref[0]) == 4, ref_facts
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


# ---------------------------------------------------------------- SAM (davda54)

class _Clock:
    """A stand-in ``time`` module whose ``time()`` moves 7 s a call (the logs' elapsed times)."""

    def __init__(self):
        self.t = -7

    def time(self):
        self.t += 7
        return self.t


def _cifar(T, n=8, seed=0):
    class Cifar:
        def __init__(self, batch_size, threads):
            rs = np.random.RandomState(seed)
            ds = T.utils.data.TensorDataset(T.tensor(rs.randn(n, 3, 32, 32)).to(T.get_default_dtype()),
                                            T.tensor(rs.randint(0, 10, n)))
            self.train = T.utils.data.DataLoader(ds, batch_size=batch_size)
            self.test = T.utils.data.DataLoader(ds, batch_size=batch_size)
    return Cifar


def sam_program(T, log, src=SAM + SAM_EXAMPLE, **extra):
    """sam.py and the example's modules, ``print`` appending to ``log`` (``end``/``flush`` as
    print's), the convolutions' ``kaiming_normal_`` from a NumPy stream, a fixed clock."""
    def pr(*a, end="\n", flush=False):
        log.append(" ".join(map(str, a)) + end)
    return program(T, src, nn=init_nn(T, 3), time=_Clock(), print=pr, **extra)


def test_sam_train_script(monkeypatch):
    # float64: SGD at lr 0.1 through seven BatchNorms (and SAM's normalised ascent step) turns
    # float32's last bits into visible differences within four steps
    def run(T):
        log = []
        _argv(monkeypatch, "train.py", "--depth 10 --width_factor 1 --epochs 2 --batch_size 4")
        with default_dtype(T, T.float64), warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            ns = sam_program(T, log, SAM + SAM_EXAMPLE + SAM_TRAIN, __name__="__main__", Cifar=_cifar(T))
        opt = ns.optimizer
        facts = [_warned(rec), type(opt.base_optimizer).__name__, opt.param_groups is opt.base_optimizer.param_groups,
                 sorted(opt.defaults), [bn.momentum for bn in ns.model.modules() if isinstance(bn, T.nn.BatchNorm2d)][:2],
                 sorted(opt.state[next(ns.model.parameters())]), sorted(opt.base_optimizer.state[next(ns.model.parameters())]),
                 opt.param_groups[0]["lr"]]
        return facts, "".join(log), [p.detach().numpy() for p in ns.model.parameters()] + \
            [b.numpy() for b in ns.model.buffers()]
    (ref_facts, ref_log, ref), (got_facts, got_log, got) = run(torch), run(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    # the bypass left momentum 0 after the last batch; SAM's state holds old_p, its base SGD's
    # (a state of its own) the momentum buffer
    assert ref_facts[0] == [] and ref_facts[4] == [0, 0] and ref_facts[5:7] == [["old_p"], ["momentum_buffer"]]
    assert ref_facts[7] == pytest.approx(0.02)
    assert "\u2503           1  \u2503" in ref_log and ref_log.count("00:07 min") == 2, ref_log
    same_logs(ref_log, got_log, 1e-6)
    _compare(lambda T: ref if T is torch else got, tol=1e-8)


def _sam_closure_steps(T, adaptive, steps=2):
    log = []
    ns = sam_program(T, log)
    model = ns.WideResNet(10, 1, 0.0, in_channels=3, labels=10)
    optimizer = ns.SAM(model.parameters(), T.optim.SGD, rho=0.5, adaptive=adaptive, lr=0.1, momentum=0.9)
    x, y = (t for t in next(iter(_cifar(T, n=4, seed=1)(4, 0).train)))
    losses = []

    def closure():
        loss = ns.smooth_crossentropy(model(x), y).mean()
        loss.backward()
        losses.append(loss.detach())
        return loss
    for _ in range(steps):
        closure()
        optimizer.step(closure)
        optimizer.zero_grad()
    return ns, model, optimizer, [np.array([float(v) for v in losses])] + \
        [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("adaptive", [False, True])
def test_sam_closure_step(adaptive):
    def run(T):
        with default_dtype(T, T.float64):
            return _sam_closure_steps(T, adaptive)[3]
    _compare(run, tol=1e-9)


def test_sam_state_dict_round_trip():
    def run(T):
        with default_dtype(T, T.float64):
            ns, model, optimizer, _ = _sam_closure_steps(T, False, steps=1)
            sd = optimizer.state_dict()
            fresh = ns.SAM(model.parameters(), T.optim.SGD, rho=0.5, lr=0.3, momentum=0.9)
            fresh.load_state_dict(sd)
            base_sd = optimizer.base_optimizer.state_dict()
            facts = [sorted(sd), sorted(sd["param_groups"][0]), fresh.base_optimizer.param_groups is fresh.param_groups,
                     fresh.param_groups[0]["lr"], sorted(fresh.state[next(model.parameters())]), sorted(base_sd["state"][0])]
            return facts, [sd["state"][0]["old_p"].numpy(), base_sd["state"][0]["momentum_buffer"].numpy()]
    (ref_facts, ref), (got_facts, got) = run(torch), run(tracegrad)
    # SAM's state_dict holds old_p only: the momentum buffers are its base SGD's (not saved)
    assert ref_facts == got_facts and ref_facts[3] == 0.1 and ref_facts[4:] == [["old_p"], ["momentum_buffer"]], \
        (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=1e-12)


def test_sam_step_without_closure_and_negative_rho_fail_alike():
    def run(T, rho=0.05, closure=None):
        ns = sam_program(T, [])
        optimizer = ns.SAM([T.nn.Parameter(T.ones(2))], T.optim.SGD, rho=rho, lr=0.1)
        optimizer.step(closure)
    msgs = same_error(torch, tracegrad, run)
    assert msgs[0] == msgs[1] == "Sharpness Aware Minimization requires closure, but it was not provided", msgs
    msgs = same_error(torch, tracegrad, lambda T: run(T, rho=-1.0))
    assert msgs[0] == msgs[1] == "Invalid rho, should be non-negative: -1.0", msgs


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_inplace_dropout_after_inplace_relu(p):
    # BasicUnit's ReLU(inplace=True) -> Dropout(p, inplace=True) -> Conv2d: at p == 0 torch
    # writes nothing (the ReLU's output keeps its version: its backward reads it); otherwise a
    # mul_ by the noise, after which the ReLU's backward refuses the modified output
    def run(T):
        x = T.tensor(np.random.RandomState(0).randn(2, 3), requires_grad=True)
        h = T.nn.functional.relu(x * 2, inplace=True)
        v = h._version
        y = T.nn.functional.dropout(h, p, True, inplace=True)
        facts = [y is h, h._version - v, type(y.grad_fn).__name__]
        try:
            (y * 3).sum().backward()
            facts.append(None)
        except RuntimeError as e:
            facts.append(str(e).split(":")[0])
        return facts, x.grad
    (ref_facts, ref_grad), (got_facts, got_grad) = run(torch), run(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    if p == 0.0:
        assert ref_facts == [True, 0, "ReluBackward0", None]
        _compare(lambda T: [(ref_grad if T is torch else got_grad).numpy()])
    else:
        assert ref_facts[1:] == [1, "MulBackward0", "one of the variables needed for gradient computation has "
                                 "been modified by an inplace operation"], ref_facts


# ---------------------------------------------------------------- LambdaRank (haowei01)

def mslr(T, n_queries=204, docs=4, seed=0):
    """A synthetic MSLR-WEB10K fold as load_mslr's data frame would give it: ``qid``, ``rel``
    (0..2) and 136 float32 features a row; queries 0 and 100 (and two others, by chance) have no
    relevant document."""
    rs = np.random.RandomState(seed)
    rel = rs.randint(0, 3, n_queries * docs)
    rel[:docs] = 0
    rel[100 * docs:101 * docs] = 0
    return {"qid": np.repeat(np.arange(n_queries), docs), "rel": rel,
            "X": rs.rand(n_queries * docs, 136).astype(np.float32)}


def rank_program(T, log, scalars, tmp, n_queries=204):
    """metrics.py, utils.py and LambdaRank.py with the stand-ins: load_mslr's ``DataLoader``
    over ``mslr`` (its per-query batches in ``np.random.shuffle`` order, as its own),
    ``SummaryWriter`` recording ``add_scalars``, ``eval_ndcg_at_k`` (NDCG@k of the model's
    scores per query, with metrics.py's NDCG, where the repo's ranks with pandas), a fixed
    ``get_time``, ``__file__`` in ``tmp`` (the checkpoints go to ``tmp/ckptdir``)."""
    class MSLR:
        def __init__(self, path):
            self.path, self.df, self.num_pairs = path, None, None

        def load(self):
            self.df = mslr(T, n_queries, seed=0 if self.path.endswith("train.txt") else 1)
            self.num_features = 136
            return self.df

        def generate_batch_per_query(self, df=None):
            df = self.df if df is None else df
            qids = np.unique(df["qid"])
            np.random.shuffle(qids)
            for qid in qids:
                yield df["X"][df["qid"] == qid], df["rel"][df["qid"] == qid]

        def get_num_pairs(self):
            if self.num_pairs is None:
                self.num_pairs = 0
                for _, Y in self.generate_batch_per_query(self.df):
                    d = Y.reshape(-1, 1) - Y.reshape(1, -1)
                    self.num_pairs += np.sum(d > 0) + np.sum(d < 0)
            return self.num_pairs

    class SummaryWriter:
        def __init__(self, log_dir):
            pass

        def add_scalars(self, tag, values, step):
            scalars.append((tag, {k: float(v) for k, v in values.items()}, step))

    def eval_ndcg_at_k(model, device, df, loader, batch_size, k_list, epoch, writer=None, phase="Eval"):
        model.eval()
        with T.no_grad():
            scores = model.forward(T.Tensor(df["X"])).numpy().reshape(-1)
        result = {}
        for k in k_list:
            ndcg, vals = metrics.NDCG(k), []
            for qid in np.unique(df["qid"]):
                rel = df["rel"][df["qid"] == qid][np.argsort(-scores[df["qid"] == qid], kind="stable")]
                if ndcg.maxDCG(rel) != 0:
                    vals.append(ndcg.evaluate(rel))
            result[k] = np.mean(vals)
        return result

    metrics = program(T, RANK_METRICS)
    return program(T, RANK_METRICS + RANK_UTILS + LAMBDARANK, nn=init_nn(T, 5), DataLoader=MSLR,
                   get_time=lambda: "12:00", SummaryWriter=SummaryWriter, eval_ndcg_at_k=eval_ndcg_at_k,
                   ArgumentParser=ArgumentParser, ArgumentTypeError=ArgumentTypeError, defaultdict=defaultdict,
                   __file__=os.path.join(str(tmp), "LambdaRank.py"), print=lambda *a: log.append(" ".join(map(str, a))),
                   **({"__name__": "__main__"} if tmp else {}))


def _lambdarank_main(T, monkeypatch, tmp, args, n_queries=204):
    log, scalars = [], []
    _argv(monkeypatch, "LambdaRank.py", args)
    np.random.seed(0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        rank_program(T, log, scalars, tmp, n_queries)
    ckpt = os.path.join(str(tmp), "ckptdir", "lambdarank-136-64-16-scale-1.0")
    saved = T.load(ckpt + "_2")
    final = T.load(ckpt)
    facts = [_warned(rec), sorted(saved), saved["epoch"], saved["lr_scheduler"]["last_epoch"],
             saved["lr_scheduler"]["_last_lr"], sorted(saved["optimizer_state_dict"]["state"]), sorted(final),
             [s[0] for s in scalars]]
    return facts, "\n".join(log), [np.array([s[1]["Train"] for s in scalars])] + \
        [final[k].numpy() for k in sorted(final)]


def test_lambdarank_main(monkeypatch, tmp_path):
    paths = iter([tmp_path / "torch", tmp_path / "tracegrad"])
    (ref_facts, ref_log, ref), (got_facts, got_log, got) = \
        [_lambdarank_main(T, monkeypatch, next(paths), "--additional_epoch 2 --debug") for T in (torch, tracegrad)]
    assert ref_facts == got_facts, (ref_facts, got_facts)
    # 200 queries with a relevant document: one Adam step an epoch, after the last of them
    assert ref_facts[0] == [] and ref_facts[2:5] == [2, 2, [0.0001]] and len(ref_facts[5]) == 6, ref_facts
    assert "training dataset at epoch 1, total queries: 200" in ref_log and "finish training NDCG@10: " in ref_log
    same_logs(ref_log.split("checkpoint dir:")[0], got_log.split("checkpoint dir:")[0], 0)
    same_logs(ref_log.split("Adam (")[1].split("save to ckpt")[0], got_log.split("Adam (")[1].split("save to ckpt")[0],
              1e-6)
    _compare(lambda T: ref if T is torch else got, tol=1e-6)


def test_lambdarank_short_epochs_warn_scheduler_order(monkeypatch, tmp_path):
    # 150 queries an epoch never reach the 200 that step Adam: StepLR warns at its first step
    paths = iter([tmp_path / "torch", tmp_path / "tracegrad"])
    (ref_facts, _, ref), (got_facts, _, got) = \
        [_lambdarank_main(T, monkeypatch, next(paths), "--additional_epoch 2", 150) for T in (torch, tracegrad)]
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert len(ref_facts[0]) == 1 and "lr_scheduler.step()" in ref_facts[0][0][1] and ref_facts[5] == []
    _compare(lambda T: ref if T is torch else got, tol=1e-7)


def test_lambdarank_double_precision_debug_fails_alike(monkeypatch, tmp_path):
    # the layers made float64 by ``.double()``, the debug evaluation's ``torch.Tensor(X)`` float32
    paths = iter([tmp_path / "torch", tmp_path / "tracegrad"])
    msgs = same_error(torch, tracegrad, lambda T: _lambdarank_main(T, monkeypatch, next(paths),
                                                                   "--additional_epoch 1 --debug --double_precision"))
    assert all("mat1 and mat2 must have the same dtype" in m for m in msgs), msgs


def test_lambdarank_dump_param_and_ndcg():
    def run(T):
        log = []
        ns = rank_program(T, log, [], "")
        net = ns.LambdaRank([136, 64, 16], leaky_relu=True, sigma=2.0)
        net.apply(ns.init_weights)
        x = T.tensor(mslr(T, 3)["X"])
        net(x).sum().backward()
        net.dump_param()
        ndcg = ns.NDCG(6, "identity")
        return log, [net(x).detach().numpy(), np.array([ndcg.evaluate([3, 2, 3, 0, 1, 2, 3, 2]), ndcg.maxDCG([1, 0, 2])])]
    (ref_log, ref), (got_log, got) = run(torch), run(tracegrad)
    assert ref_log[0] == "fc1 layers" and len(ref_log) == 9, ref_log
    same_logs("\n".join(ref_log), "\n".join(got_log), 1e-4)
    _compare(lambda T: ref if T is torch else got)


@pytest.mark.parametrize("x_grad,v_grad", [(True, True), (True, False), (False, True)])
def test_uint8_mask_warnings_in_backward(x_grad, v_grad):
    # PointerNet's ``embedded_inputs[embedding_mask.data]``: torch's backward indexes with the
    # saved uint8 mask again and repeats the deprecation (IndexBackward0 once; IndexPutBackward0
    # once for self's gradient and once for the values', through a view's CopySlices too)
    def run(T):
        counts = []
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            x = T.ones(3, 2, requires_grad=x_grad)
            v = T.tensor([1.5, 2.5], requires_grad=v_grad)
            m = T.tensor([1, 0, 1], dtype=T.uint8)
            g = (x * 2)[m] if x_grad else v[m[:2]]
            counts.append(len(rec))
            g.sum().backward()
            counts.append(len(rec))
            for key in ((m,), (m, 1)):
                y = x * 1
                y[key] = v.reshape(2, 1).expand(2, 2) if len(key) == 1 else v * 3
                counts.append(len(rec))
                y.sum().backward()
                counts.append(len(rec))
        assert all("uint8" in str(w.message) for w in rec)
        grads = [t.grad.numpy() for t in (x, v) if t.grad is not None]
        return counts, grads
    (ref_counts, ref), (got_counts, got) = run(torch), run(tracegrad)
    assert ref_counts == got_counts, (ref_counts, got_counts)
    _compare(lambda T: ref if T is torch else got)
