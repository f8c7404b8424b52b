"""Sixteenth round of adversarial compiled-vs-eager programs: Python side effects inside the
step (losses appended to a list, a dict of counters, ``print`` of ``loss.item()``, a counter kept
as an attribute of the step function itself), Python control flow on tensor values, modules
whose structure changes between calls (submodules inserted, deleted or popped from
``Sequential``/``ModuleList``/``ModuleDict``, a ``ParameterDict`` entry removed, a submodule
deleted with ``del``, ``_parameters``/``_buffers``/``_modules`` written directly, hooks added
and removed, ``train()``/``eval()``, a buffer rebound), tensors made from Python numbers that
change every call, random draws with ``manual_seed`` between calls (and ``initial_seed()`` read
inside), iterators and generators passed in, and in-place writes to arguments and their views
with returned aliases. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare``; random draws against tracegrad eager only, as streams differ).

Found here and fixed: removing a submodule, parameter or buffer (``del m.sub``,
``del seq[i]``, ``ModuleList.pop``, ``ModuleDict.pop``/``clear``, ``ParameterDict.pop``),
``Sequential.insert`` and writes straight into a module's ``_parameters``/``_buffers``/
``_modules`` did not tell compiled programs the module layout changed, so the next call ran the
old layers or read a replaced weight (now ``Module.__delattr__``, the containers and those dicts
report it, and a removal inside the step is a graph break); ``initial_seed()`` read inside a
step was baked into the program (a reseed between calls returned the old seed; now guarded);
an attribute of the step function itself (``step.calls += 1``, ``step.log.append(...)``, ``helper.scale`` set by the
caller) was done once while tracing and then frozen (now Python state like a global: NOTE
[function attributes] in ``_lowering/pystate.py``); ``torch.backends`` flags and
``set_warn_always`` set inside a step were set only while tracing, and a branch on a global
setting read inside (``are_deterministic_algorithms_enabled()``, ``cudnn.deterministic``,
``get_num_threads()``...) was frozen, as was ``empty_like``'s NaN fill under deterministic
algorithms (now a graph break, and a guard on the settings read: NOTE [settings flags] in
``_state.py``)."""
import contextlib
import io
import itertools
import math

import pytest

import tracegrad

from ._dynamo_port import compare, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def _eager_vs_compiled(build, calls=4):
    """``build(T, wrap)`` -> ``run(i)`` over tracegrad only (random streams differ from torch's):
    the eager run and the compiled run each start from ``manual_seed(1234)`` and must agree
    after every call."""
    outs = []
    for wrap in (lambda f: f, tracegrad.compile):
        tracegrad.manual_seed(1234)
        run = build(tracegrad, wrap)
        outs.append([run(i) for i in range(calls)])
    for i in range(calls):
        same(outs[0][i], outs[1][i], f"call{i} compiled vs eager")
    return outs[1]


def test_python_side_effects_happen_on_every_call():
    """A step appends its loss to a list, bumps counters in a dict, prints ``loss.item()`` and
    keeps a count in a ``nonlocal``: each happens on every compiled call, in eager order, with
    that call's values (never once while tracing, never a frozen number)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        losses, stats, n = [], {"calls": 0}, 0

        def step(x):
            nonlocal n
            n += 1
            loss = net(x).pow(2).sum()
            losses.append(loss.detach())
            stats["calls"] += 1
            stats["last"] = loss.detach() * n
            print(f"step {n} loss {loss.item():.4f}")
            return loss

        f = wrap(step)

        def run(i):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                out = f(_rand(T, i, 2, 3))
            return out, list(losses), stats["calls"], stats["last"], n, buf.getvalue()
        return run
    compare(build)


def test_attributes_of_the_step_function_itself():
    """``step.calls += 1`` and ``step.log.append(...)`` on the compiled function's own object,
    and a helper's ``helper.scale`` and the step's ``step.bias`` that the caller changes between
    calls: the counter and the log grow every call and the numbers read are each call's."""
    def build(T, wrap):
        def helper(x):
            return x * helper.scale

        def step(x):
            step.calls = getattr(step, "calls", 0) + 1
            step.log.append(x.shape[0])
            return helper(x) * step.calls + step.bias

        helper.scale, step.bias, step.log = 1.0, 0.5, []
        f = wrap(step)

        def run(i):
            if i == 2:
                helper.scale = 3.0
            if i == 3:
                step.bias = -1.0
            return f(_rand(T, i, 3)), step.calls, list(step.log)
        return run
    compare(build, calls=5)


def test_python_control_flow_on_tensor_values():
    """The step reads tensor values in Python: ``argmax().item()`` indexes a list of names, a
    0-dim integer tensor bounds a ``range`` and a slice, ``bool(loss > t)`` skips the update,
    ``max()`` of two tensors and ``float(t)`` in a format: the branch and the numbers change
    between calls and every call takes eager's (graph breaks, never a frozen branch)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        names = ["a", "b", "c"]

        def step(x, n, t):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            if not bool(loss > t):
                opt.step()
            y = x[0]
            for _ in range(n):
                y = y * 2
            big = max(x[0, 0], x[1, 0])
            return loss, names[x[0].argmax().item()], y[:n], big, "%.3f" % float(big)

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 3) * (1 + i)
            return f(x, T.tensor(i % 3 + 1), 4.0), net.weight
        return run
    compare(build)


def test_submodules_inserted_deleted_and_popped_between_calls():
    """Between calls the caller inserts a layer at the front of a ``Sequential``, deletes one
    from a ``ModuleList``, pops from a ``ModuleDict``, removes a ``ParameterDict`` entry and
    ``del``s a submodule the forward looks for with ``hasattr``: each next call runs the layers
    there now, as eagerly (a removal used to leave the old program running the old layers)."""
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = T.nn.Sequential(_linear(T, 3, 3), T.nn.Tanh())
                self.ml = T.nn.ModuleList([_linear(T, 3, 3, seed=1), T.nn.Sigmoid(), _linear(T, 3, 3, seed=2)])
                self.md = T.nn.ModuleDict({"a": T.nn.ReLU(), "b": _linear(T, 3, 3, seed=3)})
                self.pd = T.nn.ParameterDict({"s": T.nn.Parameter(T.full((3,), 2.0)),
                                              "t": T.nn.Parameter(T.full((3,), 0.5))})
                self.extra = _linear(T, 3, 3, seed=4)

            def forward(self, x):
                x = self.seq(x)
                for m in self.ml:
                    x = m(x)
                for m in self.md.values():
                    x = m(x)
                for p in self.pd.values():
                    x = x * p
                if hasattr(self, "extra"):
                    x = self.extra(x)
                return x

        net = Net()
        f = wrap(net)

        def run(i):
            if i == 2:
                net.seq.insert(0, T.nn.Softsign())
                del net.ml[1]
                net.md.pop("a")
            if i == 3:
                net.pd.pop("s")
                del net.extra
                net.md.clear()
                net.ml.pop(0)
            return f(_rand(T, i, 2, 3)), len(list(net.parameters()))
        return run
    compare(build)


def test_parameters_buffers_and_submodules_written_into_their_dicts():
    """Code that reparametrizes a module by writing its registries directly, without
    ``setattr``: ``m._parameters["weight"] = Parameter(...)``, ``m._buffers["shift"] = t``,
    ``m._modules["act"] = Tanh()`` and ``del m._parameters["bias"]`` between calls, while the
    caller still holds the previous call's output (whose graph keeps the old weight alive): each
    call reads the entries there now (the program kept reading the old weight)."""
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.act = T.nn.ReLU()
                self.register_buffer("shift", T.ones(2))

            def forward(self, x):
                return self.act(self.lin(x)) + self.shift

        net = Net()
        f = wrap(net)
        held = []

        def run(i):
            if i == 1:
                net.lin._parameters["weight"] = T.nn.Parameter(T.full((2, 3), 0.25))
            if i == 2:
                net._buffers["shift"] = T.tensor([3.0, -3.0])
                net._modules["act"] = T.nn.Tanh()
            if i == 3:
                del net.lin._parameters["bias"]
                net.lin.bias = None
            out = f(_rand(T, i, 2, 3))
            held.append(out)
            return out
        return run
    compare(build)


def test_a_layer_removed_inside_the_step():
    """The forward pops its last layer from a ``ModuleList`` on every call (eagerly one layer
    fewer each call): a side effect no program repeats, so every call runs eagerly, and with
    ``fullgraph=True`` it is a GraphBreak naming the removal, before anything changed."""
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = T.nn.ModuleList([_linear(T, 3, 3, seed=k) for k in range(6)])

            def forward(self, x):
                self.layers.pop(-1)
                for m in self.layers:
                    x = m(x)
                return x

        net = Net()
        f = wrap(net)
        return lambda i: (f(_rand(T, i, 2, 3)), len(net.layers))
    compare(build)

    class Shrinking(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = _linear(tracegrad, 3, 3)
            self.b = _linear(tracegrad, 3, 3, seed=1)

        def forward(self, x):
            del self.b
            return self.a(x)

    m = Shrinking()
    with pytest.raises(tracegrad.compiler.GraphBreak, match="deleting 'b'"):
        tracegrad.compile(m, fullgraph=True)(_rand(tracegrad, 0, 2, 3))
    assert hasattr(m, "b")


def test_hooks_modes_and_buffers_changed_between_calls():
    """A forward hook that logs and doubles the output is added, then a forward pre-hook, then
    the first is removed; a layer is replaced, ``eval()`` and ``train()`` switch a BatchNorm,
    and the ``scale`` buffer its hook reads is rebound to a new tensor: every call sees the
    module as it is."""
    def build(T, wrap):
        net = T.nn.Sequential(T.nn.BatchNorm1d(3), _linear(T, 3, 3), T.nn.ReLU(), _linear(T, 3, 2, seed=1))
        net[0].register_buffer("scale", T.ones(3))
        net[0].register_forward_hook(lambda m, a, o: o * m.scale)
        seen, handles = [], {}

        def hook(m, a, out):
            seen.append(tuple(out.shape))
            return out * 2

        def step(x):
            out = net(x)
            out.pow(2).sum().backward()
            return out

        f = wrap(step)

        def run(i):
            if i == 1:
                handles["h"] = net[1].register_forward_hook(hook)
            if i == 2:
                handles["p"] = net[3].register_forward_pre_hook(lambda m, a: (a[0] + 1,))
                net.eval()
            if i == 3:
                handles["h"].remove()
                net[2] = T.nn.Tanh()
                net.train()
            if i == 4:
                net[0].scale = T.full((3,), -2.0)
                handles["p"].remove()
            net.zero_grad()
            out = f(_rand(T, i, 4, 3))
            return out, net[1].weight.grad, list(seen), net[0].running_mean, net[0].num_batches_tracked
        return run
    compare(build, calls=5)


def test_global_settings_set_and_read_inside_the_step():
    """The step sets ``backends.cudnn.benchmark`` and ``set_warn_always`` from an argument, and
    branches on ``are_deterministic_algorithms_enabled()``, ``backends.cudnn.deterministic`` and
    ``backends.cuda.matmul.allow_fp16_reduced_precision_reduction``, which the caller flips
    between calls: the settings are left as eager leaves them and every branch is the one eager
    takes (a cached program neither set them again nor read them: frozen); ``empty_like`` fills
    NaN exactly on the calls made under deterministic algorithms."""
    def build(T, wrap):
        cudnn, matmul = T.backends.cudnn, T.backends.cuda.matmul

        def step(x, k):
            cudnn.benchmark = bool(k)
            T.set_warn_always(bool(k))
            y = x * 2 if T.are_deterministic_algorithms_enabled() else x - 1
            y = y + 10 if cudnn.deterministic else y
            return y * 3 if matmul.allow_fp16_reduced_precision_reduction else y

        f = wrap(step)

        def run(i):
            T.use_deterministic_algorithms(i in (1, 3))
            cudnn.deterministic = i >= 2
            matmul.allow_fp16_reduced_precision_reduction = i != 4
            out = f(_rand(T, i, 3), i % 2)
            return out, cudnn.benchmark, T.is_warn_always_enabled()
        return run
    # torch refuses plain assignments to its cudnn flags once its test utilities froze them (an
    # earlier test in the worker imported them); this test is about the assignments, so thaw
    thaw = getattr(torch.backends, "__allow_nonbracketed_mutation", contextlib.nullcontext)
    with thaw():
        try:
            compare(build, calls=6)
            # ``empty_like`` (dropout's mask too) fills NaN only under deterministic algorithms
            f = tracegrad.compile(lambda x: tracegrad.empty_like(x) + x)
            for i in range(5):
                tracegrad.use_deterministic_algorithms(i in (2, 3))
                assert all(math.isnan(v) for v in f(tracegrad.ones(2)).tolist()) == (i in (2, 3)), i
        finally:
            for T in (torch, tracegrad):
                T.backends.cudnn.benchmark = T.backends.cudnn.deterministic = False
                T.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
                T.set_warn_always(False)
                T.use_deterministic_algorithms(False)


def test_tensors_from_python_numbers_that_change_every_call():
    """``torch.tensor(step)``, ``torch.full`` with a changing fill, ``new_full`` and
    ``torch.tensor`` of a counter the step bumps on a plain object, ``linspace``/``arange`` to a
    bound that changes, a buffer ``fill_``-ed with the counter, and a Python int past 32 bits:
    each call's numbers, not the first trace's."""
    def build(T, wrap):
        class Trainer:
            def __init__(self):
                self.n = 0
        tr = Trainer()
        buf = T.zeros(3)

        def step(x, k, big):
            tr.n += 1
            buf.fill_(tr.n)
            a = x * T.tensor(k) + T.full((3,), k * 0.5) + x.new_full((3,), float(tr.n))
            return (a + buf + T.linspace(0, k, 3), T.tensor(tr.n), T.arange(k + 1),
                    T.tensor([k, big]), T.scalar_tensor(k).dtype == T.float32)

        f = wrap(step)
        return lambda i: (f(_rand(T, i, 3), i, 2 ** 40 + i), buf, tr.n)
    compare(build, calls=5)


def test_random_draws_with_manual_seed_between_calls():
    """Dropout in a module, ``F.dropout``, ``randn``/``rand_like``/``randint``/``normal_``/
    ``bernoulli``/``randperm`` inside the step, with ``manual_seed`` between some calls and a
    ``fork_rng`` block reseeding inside: every compiled call draws eager's numbers (the key
    advances every call; a reseed replays), compared with tracegrad eager."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 4), T.nn.Dropout(0.3), _linear(T, 4, 2, seed=1))

        def step(x):
            with T.random.fork_rng():
                T.manual_seed(7)
                fixed = T.rand(2)
            a = T.randn(2, 3)
            out = net(x + a)
            out.sum().backward()
            return (out, fixed, a, T.rand_like(x), T.randint(0, 10, (4,)), T.empty(3).normal_(2.0, 0.5),
                    T.bernoulli(T.full((4,), 0.5)), T.randperm(5), T.nn.functional.dropout(x, 0.5))

        f = wrap(step)

        def run(i):
            if i in (0, 2, 3):
                T.manual_seed(100)
            net.zero_grad()
            return f(_rand(T, i, 2, 3)), net[0].weight.grad
        return run
    outs = _eager_vs_compiled(build, calls=5)
    same(outs[2][0][1:8], outs[3][0][1:8], "manual_seed(100) before calls 2 and 3 replays")


def test_initial_seed_read_inside_the_step():
    """``torch.initial_seed()`` and a Generator argument's ``initial_seed()`` read inside the
    step while the caller reseeds between calls: each call returns the seed set then (it was
    baked into the program: a reseed returned the old seed)."""
    def build(T, wrap):
        g = T.Generator().manual_seed(3)

        def step(x, gen):
            return x + T.rand(3), T.initial_seed(), gen.initial_seed(), T.rand(2, generator=gen)

        f = wrap(step)

        def run(i):
            T.manual_seed(5 + i % 2)
            if i == 3:
                g.manual_seed(11)
            return f(_rand(T, i, 3), g)
        return run
    _eager_vs_compiled(build)


def test_iterators_and_generators_passed_in():
    """An iterator over batches consumed two per call, a generator function's generator of a
    length that changes, a DataLoader iterator, an ``itertools.cycle`` in the closure and a
    coroutine-style generator fed with ``send``: each call takes the next items, as eagerly
    (never the first trace's batches again)."""
    def build(T, wrap):
        net = _linear(T, 2, 1)
        batches = iter([_rand(T, k, 2, 2) for k in range(12)])
        ds = T.utils.data.TensorDataset(T.arange(24.).view(12, 2), T.arange(12))
        loader = iter(T.utils.data.DataLoader(ds, batch_size=2))
        cyc = itertools.cycle([_rand(T, k, 2) for k in range(3)])

        def acc():
            tot = 0.0
            while True:
                tot += yield tot

        running = acc()
        next(running)

        def gen(n):
            for k in range(n):
                yield _rand(T, 20 + k, 2, 2)

        def step(it, g, dl):
            x = next(it) + next(it)
            for extra in g:
                x = x + extra
            xb, yb = next(dl)
            loss = (net(x).sum() + (net(xb).squeeze(-1) * yb).sum()) * running.send(0.5)
            loss.backward()
            return loss, next(cyc)

        f = wrap(step)

        def run(i):
            net.zero_grad()
            return f(batches, gen(i % 3), loader), net.weight.grad
        return run
    compare(build)


def test_in_place_writes_to_arguments_and_their_views():
    """The step writes an argument through ``x[0]``, ``view(-1)[k]``, ``t()[1]`` and
    ``diagonal()``, writes an argument that is itself a strided view of the caller's base,
    two arguments that are overlapping views of one tensor (from the third call on), and
    ``out=`` arguments: the caller's tensors, bases and version counters end as eagerly."""
    def build(T, wrap):
        def step(x, v, a, b, out):
            x[0].mul_(2)
            x.view(-1)[3] = 5.0
            x.t()[1].add_(1)
            x.diagonal().zero_()
            v.mul_(3)
            a.mul_(2)
            T.add(a, b, out=out)
            T.mul(a[:1], 2, out=out[1:2])
            return x.sum(), v + 1, a + b, out

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 3, 3)
            base = _rand(T, i + 1, 4, 3)
            ab = _rand(T, i + 2, 6)
            a, b = (ab[0:4], ab[2:6]) if i >= 2 else (ab[0:4], ab[1:5].clone())
            o = T.zeros(4)
            s, v1, c, r = f(x, base[1:3, ::2], a, b, o)
            return s, v1, c, r is o, x, base, ab, o, x._version, base._version, ab._version
        return run
    compare(build)


def test_returned_aliases_of_arguments_and_results():
    """The step returns its argument itself, a view of it, a new result, views of that result
    and a ``detach()``; the caller then writes the result and the argument in place: identity,
    ``_base`` links and the values the views see afterwards match eager (results are not
    copies of each other, views are not frozen)."""
    def build(T, wrap):
        def step(x):
            x.add_(1)
            y = x * 2
            return x, x.view(-1), y, y[0], y.t(), x.detach()

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 2)
            a, b, y, y0, yt, xd = f(x)
            y.add_(100)
            x.add_(10)
            return (a is x, b, y0, yt, xd, y0._base is y, b._base is x, yt._base is y, xd._version,
                    x._version)
        return run
    compare(build)
