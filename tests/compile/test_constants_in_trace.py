"""NOTE [constants in a trace] (tracegrad/_lowering/constants.py): a small tensor made from Python
numbers inside a compiled function, and what ops compute from such tensors alone, is read by
Python (``int()``, ``item()``, ``tolist()``, ``bool()``) without a graph break, as torch.compile
folds it; anything a traced value reaches, or a write, still breaks. Every program here runs
eagerly and compiled and must agree on every call, also after a new shape or a changed Python
number (no frozen constant)."""
import warnings

import numpy as np
import pytest

import tracegrad

from ._harness import assert_same

F = tracegrad.nn.functional


def _both(fn, calls, fullgraph=False):
    """fn's results on ``calls`` (argument tuples, made fresh per run) eagerly and compiled, and
    the compiled function's stats."""
    def run(f):
        out = []
        for make in calls:
            r = f(*make())
            out.append([np.asarray(v.detach().numpy() if isinstance(v, tracegrad.Tensor) else v).tolist()
                        for v in (r if isinstance(r, tuple) else (r,))])
        return out
    eager = run(fn)
    cf = tracegrad.compile(fn, fullgraph=fullgraph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = run(cf)
    assert_same(eager, comp, "compiled")
    return cf.stats


def _same_shape(n=3):
    return [lambda i=i: (tracegrad.full((2, 4), float(i)),) for i in range(n)]


def test_int_of_a_size_tensor_slices_without_a_graph_break_and_follows_new_shapes():
    def f(x):
        n = tracegrad.tensor(x.shape[0]) // 2
        return x[:int(n)] * 2, n + 1
    calls = [lambda n=n: (tracegrad.tensor(np.arange(2.0 * n).reshape(n, 2)),) for n in (4, 6, 4)]
    stats = _both(f, calls, fullgraph=True)
    assert stats["graph_breaks"] == [] and stats["traces"] == 2, stats


def test_pad_amounts_from_a_list_tensor_and_tolist():
    def f(x1, x2):
        d = tracegrad.tensor([x2.size(2) - x1.size(2), x2.size(3) - x1.size(3)])
        dy, dx = (d // 2).tolist()
        rest = (d - d // 2).tolist()
        return F.pad(x1, [dx, rest[1], dy, rest[0]]) + x2
    calls = [lambda: (tracegrad.ones(1, 1, 2, 3), tracegrad.ones(1, 1, 5, 6))] * 2
    stats = _both(f, calls, fullgraph=True)
    assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats


def test_bool_of_a_constant_comparison_picks_the_branch():
    def f(x):
        flags = tracegrad.tensor([x.shape[1] > 3, False])
        if flags.any():
            return x.sum(1)
        return x.mean(1)
    calls = [lambda: (tracegrad.ones(2, 4),), lambda: (tracegrad.ones(2, 2),), lambda: (tracegrad.ones(2, 4) * 3,)]
    stats = _both(f, calls, fullgraph=True)
    assert stats["graph_breaks"] == [] and stats["traces"] == 2, stats


def test_a_changed_python_number_is_not_a_frozen_constant():
    class M(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 1

        def forward(self, x):
            k = tracegrad.tensor([self.k, 2])
            return x[: int(k.max())] * k[0]

    def run(mod):
        out = []
        for k in (1, 3, 3, 1):
            mod.k = k
            out.append(mod(tracegrad.arange(10.0)).numpy().tolist())
        return out
    m = M()
    eager = run(m)
    cm = tracegrad.compile(M())
    assert_same(eager, run(cm), "compiled")


def test_a_written_constant_and_a_traced_value_still_break_with_eager_results():
    def written(x):
        k = tracegrad.tensor([1])
        k.add_(x.shape[0])          # a write: the kept value no longer applies (it would here)...
        k.add_((x > 0).sum())       # ...and this one is data-dependent
        return x[: int(k)] * 2

    def traced(x):
        k = tracegrad.tensor([2]) * x.sum().long()
        return x[: int(k)]
    for fn, msg in ((written, "item()"), (traced, "item()")):
        calls = [lambda: (tracegrad.tensor([-1.0, 0.5, 0.25, -2.0]),), lambda: (tracegrad.tensor([1.0, 0.0, 0.0, 0.0]),)]
        stats = _both(fn, calls)
        assert stats["graph_breaks"] and msg in stats["graph_breaks"][0][0], stats


def test_a_large_tensor_is_left_to_the_program():
    def f(x):
        big = tracegrad.tensor(list(range(100)))
        return x * big[: int(big[3])].sum()
    stats = _both(f, _same_shape())
    assert stats["graph_breaks"] and "item()" in stats["graph_breaks"][0][0], stats


def test_a_constant_returned_or_kept_is_a_new_tensor_per_call():
    """The kept value changes nothing in the program: a returned constant is a new tensor each
    call (a caller's write to it does not reach the next call), and one bound to an attribute
    is rebound per call as eagerly."""
    class M(tracegrad.nn.Module):
        def forward(self, x):
            self.n = tracegrad.tensor([x.shape[0], 1])
            return x[: int(self.n[0] // 2)], self.n

    def run(mod):
        out = []
        for _ in range(3):
            y, n = mod(tracegrad.arange(6.0))
            n.add_(10)
            out.append([y.numpy().tolist(), n.numpy().tolist(), mod.n.numpy().tolist(), n is mod.n])
        return out
    eager = run(M())
    cm = M()
    comp = run(tracegrad.compile(cm))
    assert_same(eager, comp, "compiled")


def test_a_constant_made_under_a_grad_step_keeps_gradients_exact():
    lin = tracegrad.nn.Linear(4, 3)
    ref = tracegrad.nn.Linear(4, 3)
    ref.load_state_dict(lin.state_dict())

    def step(m, x):
        half = tracegrad.tensor(x.shape[0]) // 2
        loss = m(x[: int(half)]).pow(2).mean()
        loss.backward()
        return loss
    cf = tracegrad.compile(step)
    for i in range(3):
        x = tracegrad.arange(24.0).reshape(6, 4) / (i + 1)
        a, b = step(ref, x), cf(lin, x)
        np.testing.assert_allclose(b.item(), a.item(), rtol=1e-6)
        np.testing.assert_allclose(lin.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-5)
    assert cf.stats["graph_breaks"] == [], cf.stats


def test_constants_from_container_lengths_and_items_follow_their_changes():
    """``tensor(len(self.items))`` and ``tensor([self.cfg["k"]])`` read by ``int()``: an append to
    the list or a new dict value between calls gives a new program, never the old number."""
    class M(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.items, self.cfg = [1, 2], {"k": 2}

        def forward(self, x):
            n = tracegrad.tensor(len(self.items))
            k = tracegrad.tensor([self.cfg["k"]])
            return x[: int(n)] * int(k)
    items = [1, 2]

    def g(x):
        return x[: int(tracegrad.tensor(len(items)))]

    def run(m, f):
        out = []
        for i in range(5):
            if i == 2:
                m.items.append(3)
                items.append(3)
            if i == 3:
                m.cfg["k"] = 5
            out.append([m(tracegrad.arange(6.0)).tolist(), f(tracegrad.arange(6.0)).tolist()])
        return out
    eager = run(M(), g)
    del items[2:]
    m = M()
    cm, cg = tracegrad.compile(m), tracegrad.compile(g)
    assert run_compiled(lambda: run(cm, cg)) == eager
    for st in (cm.__dict__["_compiled_call"].stats, cg.stats):
        assert st["graph_breaks"] == [] and st["traces"] >= 2, st


def run_compiled(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()
