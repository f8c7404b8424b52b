"""User compiler backends (``tracegrad.compile(fn, backend=my_compiler)``), against torch 2.13's
dynamo: the backend gets FX graphs of the function's tensor ops (placeholders for the tensors
read, parameters included), once per new graph, and what it returns is what runs; a graph break
splits the function into several graphs (``explain``). Tests marked ``torch dynamo`` call
``torch.compile``/``torch._dynamo.explain`` (slow to start: a handful in this file)."""
import builtins

import numpy as np
import pytest

import tracegrad

from ._harness import data, np_init

torch = pytest.importorskip("torch")


class Recorder:
    """A backend keeping each graph and example inputs; ``wrap`` decides what runs."""

    def __init__(self, wrap=None):
        self.graphs, self.examples, self.runs, self.wrap = [], [], 0, wrap

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.examples.append(example_inputs)

        def run(*args):
            self.runs += 1
            out = gm.forward(*args)
            return self.wrap(out) if self.wrap else out
        return run

    def targets(self, i=0):
        """Sorted names of the graph's calls (torch writes ``a * 2`` as operator.mul, tracegrad
        as the method ``mul``: the name is what is compared)."""
        return sorted(n.target if isinstance(n.target, str) else n.target.__name__
                      for n in self.graphs[i].graph.nodes if n.op in ("call_function", "call_method"))

    def placeholders(self, i=0):
        return sum(n.op == "placeholder" for n in self.graphs[i].graph.nodes)

    def outputs(self, i=0):
        return len(next(n for n in self.graphs[i].graph.nodes if n.op == "output").args[0])


def _mlp(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.ReLU(), mod.nn.Linear(4, 2)), mod)


def _fn(mod):
    def f(x, y):
        a = mod.sin(x) + y * 2
        return a.sum(dim=0).relu()
    return f


def _run(mod, backend_wrap=None, shapes=(5, 5, 6), dynamic=False):
    """Compile the MLP and ``f`` with a Recorder; call them on the given batch sizes."""
    m, rec_m = _mlp(mod), Recorder(backend_wrap)
    cm = mod.compile(m, backend=rec_m, dynamic=dynamic)
    outs_m = [cm(data(mod, i, n, 3)) for i, n in enumerate(shapes)]
    rec_f = Recorder(backend_wrap)
    cf = mod.compile(_fn(mod), backend=rec_f, dynamic=dynamic)
    outs_f = [cf(data(mod, i, 2, 3), data(mod, i + 10, 2, 3)) for i in range(2)]
    return m, rec_m, outs_m, rec_f, outs_f


@pytest.fixture(scope="module")
def torch_run():
    """torch dynamo: two torch.compile calls, the graphs and results of ``_run``."""
    torch._dynamo.reset()
    return _run(torch)


def test_graphs_and_backend_calls_match_torch(torch_run):
    _, t_rec_m, t_outs_m, t_rec_f, t_outs_f = torch_run
    m, rec_m, outs_m, rec_f, outs_f = _run(tracegrad)
    # one graph per input shape (dynamic=False), the backend's callable runs on every call
    assert len(rec_m.graphs) == len(t_rec_m.graphs) == 2 and rec_m.runs == t_rec_m.runs == 3
    assert len(rec_f.graphs) == len(t_rec_f.graphs) == 1 and rec_f.runs == t_rec_f.runs == 2
    for rec, t_rec in ((rec_m, t_rec_m), (rec_f, t_rec_f)):
        assert rec.targets() == t_rec.targets()
        assert rec.placeholders() == t_rec.placeholders()
        assert rec.outputs() == t_rec.outputs() == 1       # what the function returns, not its locals
        assert (sorted(tuple(e.shape) for e in rec.examples[0])
                == sorted(tuple(e.shape) for e in t_rec.examples[0]))
    assert {type(e).__name__ for e in rec_m.examples[0]} == {"Parameter", "Tensor"}
    assert "l_x_" in [n.name for n in rec_f.graphs[0].graph.nodes]
    for a, b in zip(outs_m + outs_f, t_outs_m + t_outs_f):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    # the callable's results are autograd results: backward reaches the parameters as torch's
    outs_m[0].sum().backward()
    t_outs_m[0].sum().backward()
    t_model = torch_run[0]
    for p, q in zip(m.parameters(), t_model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_returned_callable_decides_the_result():
    """torch dynamo: a backend returning a callable that doubles the outputs doubles what the
    compiled function returns, from the first call on."""
    twice = lambda out: tuple(o * 2 for o in out)      # noqa: E731
    ours = tracegrad.compile(_fn(tracegrad), backend=Recorder(twice))
    theirs = torch.compile(_fn(torch), backend=Recorder(twice))
    for i in range(2):
        a = ours(data(tracegrad, i, 2, 3), data(tracegrad, i + 10, 2, 3))
        b = theirs(data(torch, i, 2, 3), data(torch, i + 10, 2, 3))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
        np.testing.assert_allclose(a.numpy(), 2 * _fn(tracegrad)(data(tracegrad, i, 2, 3),
                                                                 data(tracegrad, i + 10, 2, 3)).numpy(), rtol=1e-6)


def _branchy(mod, seen):
    def g(x, w):
        h = (x * w).sum(dim=1)
        if h.sum() > 0:           # a graph break: the value decides the branch
            h = h.relu()
        else:
            h = -h
        seen.append(1)
        print("graph break")      # a second one
        return (h * w.sum()).mean()
    return g


def test_graph_breaks_split_into_graphs_as_explain_says(capsys):
    """torch dynamo: explain's graph and break counts; each graph goes to the backend, Python
    between them runs on every call, gradients cross the graphs."""
    x = data(torch, 0, 2, 3)
    t_out = torch._dynamo.explain(_branchy(torch, []))(x, torch.ones(3))
    out = tracegrad._dynamo.explain(_branchy(tracegrad, []))(tracegrad.tensor(x.numpy()), tracegrad.ones(3))
    assert (out.graph_count, out.graph_break_count) == (t_out.graph_count, t_out.graph_break_count) == (3, 2)
    assert "needs a tensor's value" in out.break_reasons[0].reason and "print" in out.break_reasons[1].reason
    assert "Graph Break Count: 2" in str(out)
    capsys.readouterr()

    seen, rec = [], Recorder()
    g = tracegrad.compile(_branchy(tracegrad, seen), backend=rec)
    w = tracegrad.ones(3, requires_grad=True)
    for i in range(2):
        xi = data(tracegrad, i, 2, 3)
        loss = g(xi, w)
        w_eager = tracegrad.ones(3, requires_grad=True)
        expected = _branchy(tracegrad, [])(xi, w_eager)
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)
        grad, = tracegrad.autograd.grad(loss, w)
        expected.backward()
        np.testing.assert_allclose(grad.numpy(), w_eager.grad.numpy(), rtol=1e-6)
    assert len(seen) == 2 and capsys.readouterr().out.count("graph break") == 4
    assert len(rec.graphs) == 3 and rec.runs == 6       # compiled once, run on every call
    assert g.stats["graphs"] == 3 and len(g.stats["graph_breaks"]) == 2


def test_register_backend_optimize_lookup_and_aot_autograd():
    calls = []

    def counting(gm, example_inputs):
        calls.append(len(example_inputs))
        return gm.forward
    name = f"counting_{id(calls)}"
    tracegrad._dynamo.register_backend(counting, name=name)
    assert name in tracegrad._dynamo.list_backends() and name in tracegrad.compiler.list_backends()
    hidden = f"debugging_{id(calls)}"
    for mod in (tracegrad, torch):       # a tag in exclude_tags hides a registered name, as torch
        mod._dynamo.register_backend(counting, name=hidden, tags=("debug",))
        assert hidden not in mod.compiler.list_backends()
        assert hidden in mod.compiler.list_backends(exclude_tags=None)
    assert tracegrad._dynamo.lookup_backend(name) is counting
    for mod, taken in ((tracegrad, name), (torch, "eager")):     # torch asserts
        with pytest.raises(AssertionError, match="duplicate name"):
            mod._dynamo.register_backend(counting, name=taken)
    for mod in (tracegrad, torch):
        with pytest.raises(RuntimeError, match="Invalid backend"):
            mod._dynamo.lookup_backend("no-such-backend")
    x = tracegrad.arange(4.0)
    assert tracegrad.compile(lambda t: t.cos() + 1, backend=name)(x).tolist() == (x.cos() + 1).tolist()
    f = tracegrad._dynamo.optimize(name)(lambda t, u: t * u)
    assert f(x, x + 1).tolist() == (x * (x + 1)).tolist() and calls == [1, 2]
    assert f(x, x).tolist() == (x * x).tolist() and calls == [1, 2, 1]     # one tensor: one placeholder
    aot = tracegrad._dynamo.backends.common.aot_autograd(fw_compiler=counting)
    assert tracegrad.compile(lambda t: t.exp(), backend=aot)(x).tolist() == x.exp().tolist() and calls[-1] == 1


def test_backend_errors_are_runtime_errors():
    def broken(gm, example_inputs):
        raise ValueError("nope")
    with pytest.raises(RuntimeError, match="(?s)broken.*nope"):
        tracegrad.compile(lambda t: t + 1, backend=broken)(tracegrad.ones(2))
    with pytest.raises(RuntimeError, match="not a callable"):
        tracegrad.compile(lambda t: t + 1, backend=lambda gm, ex: 3)(tracegrad.ones(2))
    with pytest.raises(RuntimeError, match="tuple"):
        tracegrad.compile(lambda t: t + 1, backend=lambda gm, ex: lambda *a: 3)(tracegrad.ones(2))


def test_module_state_and_inplace_buffers_run_through_the_graph():
    """BatchNorm's running stats are updated in place by the graph (the same buffer objects),
    and no_grad inside the function starts a new graph run without grad."""
    bn_ref, bn = tracegrad.nn.BatchNorm1d(3), tracegrad.nn.BatchNorm1d(3)
    rec = Recorder()
    cbn = tracegrad.compile(bn, backend=rec)
    for i in range(2):
        x = data(tracegrad, i, 4, 3)
        np.testing.assert_allclose(cbn(x).detach().numpy(), bn_ref(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_mean.numpy(), bn_ref.running_mean.numpy(), rtol=1e-6)
    assert bn.num_batches_tracked.item() == 2 and len(rec.graphs) == 1

    def f(x):
        y = x * 2
        with tracegrad.no_grad():
            z = y + 1
        return y, z
    y, z = tracegrad.compile(f, backend=Recorder())(tracegrad.ones(2, requires_grad=True))
    assert y.requires_grad and not z.requires_grad and z.tolist() == [3.0, 3.0]

    lin = np_init(tracegrad.nn.Linear(4, 4), tracegrad)

    def g(x):        # the graph under autocast runs under it, though the call ends outside
        with tracegrad.autocast("cpu", dtype=tracegrad.bfloat16):
            h = lin(x)
        return h.float() * 2, h
    x = data(tracegrad, 0, 2, 4)
    (a, h), (ea, eh) = tracegrad.compile(g, backend=Recorder())(x), g(x)
    assert h.dtype == eh.dtype == tracegrad.bfloat16 and tracegrad.equal(a, ea)


def test_fullgraph_cache_limit_and_boxed_callables(monkeypatch):
    def breaks(x):
        y = x * 2
        return y if y.sum() > 0 else -y
    with pytest.raises(RuntimeError, match="needs a tensor's value"):
        tracegrad.compile(breaks, backend=Recorder(), fullgraph=True)(tracegrad.ones(2))

    monkeypatch.setattr(tracegrad.compiler, "cache_size_limit", 2)
    rec = Recorder()
    f = tracegrad.compile(lambda x: x + 1, backend=rec)
    with pytest.warns(UserWarning, match="cache_size_limit"):
        for n in (1, 2, 3):
            assert f(tracegrad.zeros(n)).tolist() == [1.0] * n
    assert len(rec.graphs) == 2 and f.stats["eager_graphs"] == 1

    def boxed_backend(gm, example_inputs):
        def run(args):            # one list, the calling convention _boxed_call announces
            assert isinstance(args, list)
            return gm.forward(*args)
        run._boxed_call = True
        return run
    assert tracegrad.compile(lambda x: x * 3, backend=boxed_backend)(tracegrad.ones(2)).tolist() == [3.0, 3.0]


def _inplace_and_grad(mod, w):
    def f(x):
        x.add_(1)                          # an argument written in place (by the graph)
        y = x * w
        y[0] = 5                           # setitem on a graph value
        y[1:] += 1
        g, = mod.autograd.grad((y.sin() * w).sum(), w, create_graph=True)     # autograd: a break
        return y, g * 2
    return f


def test_inplace_writes_and_autograd_inside_match_torch_eager():
    tw, w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True), tracegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tx, x = torch.arange(3.0), tracegrad.arange(3.0)
    rec = Recorder()
    f = tracegrad.compile(_inplace_and_grad(tracegrad, w), backend=rec)
    for _ in range(2):
        ty, tg = _inplace_and_grad(torch, tw)(tx)
        y, g = f(x)
        np.testing.assert_allclose(x.numpy(), tx.numpy())
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-6)
        g.sum().backward()
        tg.sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
    assert len(rec.graphs) == 2 and "autograd" in f.stats["graph_breaks"][0][0]


def test_ops_before_an_exception_run_as_eagerly():
    rec = Recorder()

    def f(x):
        x.mul_(3)
        raise ValueError("after the write")
    g, x, before = tracegrad.compile(f, backend=rec), tracegrad.ones(2), builtins.print
    with pytest.raises(ValueError, match="after the write"):
        g(x)
    assert x.tolist() == [3.0, 3.0] and rec.runs == 1
    assert builtins.print is before          # print is itself again after the capture


def _clipped_step(mod):
    m = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).sum() * 100
        loss.backward()
        mod.nn.utils.clip_grad_norm_(m.parameters(), 0.1)     # in-place writes to .grad
        with mod.no_grad():
            m.weight.mul_(0.9)
        opt.step()                  # reads .grad: the writes before it run first
        return loss
    return m, step


def test_training_step_with_clipping_matches_torch_eager():
    (tm, t_step), (m, step) = _clipped_step(torch), _clipped_step(tracegrad)
    step = tracegrad.compile(step, backend=Recorder())
    for i in range(3):
        np.testing.assert_allclose(step(data(tracegrad, i, 4, 3)).item(), t_step(data(torch, i, 4, 3)).item(),
                                   rtol=1e-5)
    for p, q in zip(m.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_autograd_facts_read_inside_are_the_real_ones():
    def f(mod, w):
        def g(x):
            y = x * w
            return y * 2 if (y.grad_fn is not None and not y.is_leaf) else y
        return g
    tw, w = torch.ones(2, requires_grad=True), tracegrad.ones(2, requires_grad=True)
    out = tracegrad.compile(f(tracegrad, w), backend=Recorder())(tracegrad.ones(2))
    assert out.tolist() == f(torch, tw)(torch.ones(2)).tolist() == [2.0, 2.0]
    assert out.grad_fn.name() == "MulBackward0"


def test_code_computing_without_tensor_ops_runs_eagerly_with_a_warning():
    """nn.LSTM's layers compute without tensor ops the capture sees: the first call finds it,
    runs eagerly, says so once, and so do later calls (the backend is never silently skipped)."""
    lstm = np_init(tracegrad.nn.LSTM(3, 4, batch_first=True), tracegrad)
    rec = Recorder()
    c = tracegrad.compile(lstm, backend=rec)
    x = data(tracegrad, 0, 2, 5, 3)
    with pytest.warns(UserWarning, match="runs eagerly, without the backend"):
        out, _ = c(x)
    assert tracegrad.equal(out, lstm(x)[0]) and not rec.graphs
    assert tracegrad.equal(c(x)[0], lstm(x)[0])
    st = c.__dict__["_compiled_call"].stats          # what tracegrad.compiler.stats() lists
    assert st["eager_calls"] == 2 and "without tensor ops" in st["graph_breaks"][0][0]
