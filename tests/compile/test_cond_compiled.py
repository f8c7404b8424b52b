"""``torch.cond`` with a pred traced by ``tracegrad.compile`` (NOTE [torch.cond inside
tracegrad.compile] in tracegrad/_api/torch_extras.py): one program running both branches and
selecting, ``fullgraph=True`` accepted as torch accepts it; every call equal to eager tracegrad
and to torch 2.13 eager; what one program cannot reproduce stays a graph break with eager's
values."""
import numpy as np
import pytest

import tracegrad
from tracegrad._lowering.capture import GraphBreak

from . import _harness as _h
from ._harness import data as _data, labels as _labels, np_init, snapshot

torch = pytest.importorskip("torch")


def _batch(mod, i, sign=None):
    """Inputs (5, 4) whose mean is positive on even calls, negative on odd ones; 3 classes."""
    x = _data(mod, i, 5, 4)
    s = (1.0 if i % 2 == 0 else -1.0) if sign is None else sign
    return x.abs() * s + 0.01 * s, _labels(mod, i, 5, 3)


def _two_heads(mod):
    nn = mod.nn

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.pos, self.neg = nn.Linear(4, 6), nn.Linear(6, 3), nn.Linear(6, 3)

        def forward(self, x):
            h = self.body(x).tanh()
            return mod.cond(x.mean() > 0, lambda t: self.pos(t).relu() + 0.5, lambda t: self.neg(t) * 2.0, (h,))
    return np_init(TwoHeads(), mod)


@pytest.mark.parametrize("opt_name", ["SGD", "AdamW"])
def test_training_step_with_cond_is_one_program_under_fullgraph(opt_name):
    def run(mod, wrap):
        model = _two_heads(mod)
        opt = (mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "SGD"
               else mod.optim.AdamW(model.parameters(), lr=0.01))
        f = wrap(_h.train_step(mod, model, opt))
        out = []
        for i in range(5):
            loss = f(*_batch(mod, i))
            out.append([snapshot(loss), snapshot(model), snapshot(opt)])
        return out
    (f,) = _h.run_three_ways(run, fullgraph=True)
    # (a second trace once the optimizer's state exists, as for any step)
    assert f.stats["traces"] <= 2 and f.stats["eager_calls"] == 0 and not f.stats["graph_breaks"], f.stats


def test_untaken_branch_nan_gradient_does_not_reach_the_parameters():
    """The true branch takes ``sqrt``: where it is not taken its values are NaN and so is its
    derivative. Eager differentiates the taken branch only; the program must not pass the
    untaken branch's NaN on (``where``'s own derivative would: 0 * NaN)."""
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(4, 4), mod, seed=3)
        opt = mod.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            h = lin(x)
            out = mod.cond(h.min() > 0, lambda t: t.sqrt(), lambda t: t * t, (h,))
            loss = out.sum()
            loss.backward()
            opt.step()
            return loss, lin.weight.grad.clone()
        f = wrap(step)
        out = []
        for i in range(3):
            x = _data(mod, i, 5, 4) * (1.0 if i == 1 else -1.0)
            out.append(snapshot(f(x)))
        return out
    (f,) = _h.run_three_ways(run, fullgraph=True)
    assert f.stats["eager_calls"] == 0
    for loss, grad in run(tracegrad, tracegrad.compile):
        assert np.isfinite(grad["value"]).all()


def test_float_and_int_preds_select_as_bool():
    def run(mod, wrap):
        w = mod.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def fn(x, k):
            a = mod.cond(x.sum(), lambda t: t * w, lambda t: t - w, (x,))
            b = mod.cond(k, lambda t: t + 1.0, lambda t: t - 1.0, (x,))
            (a + b).sum().backward()
            g = w.grad.clone()
            w.grad = None
            return a, b, g
        f = wrap(fn)
        xs = [mod.tensor([1.0, 2.0, -3.0]), mod.tensor([1.0, 2.0, 3.0])]
        ks = [mod.tensor(0), mod.tensor(7)]
        return [snapshot(f(x, k)) for x in xs for k in ks]
    (f,) = _h.run_three_ways(run, fullgraph=True)
    assert f.stats["traces"] == 1


def test_forward_only_program_differentiated_outside_runs_eagerly_with_eager_values():
    """A compiled forward whose backward JAX derives (``loss.backward()`` outside) would
    differentiate the select: a graph break, the values eager's; under no_grad one program."""
    def run(mod, wrap):
        model = _two_heads(mod)
        fwd = wrap(model)
        out = []
        for i in range(3):
            x, y = _batch(mod, i)
            loss = mod.nn.functional.cross_entropy(fwd(x), y)
            loss.backward()
            out.append([snapshot(loss), snapshot(model)])
            model.zero_grad()
        return out
    _h.run_three_ways(run)
    with pytest.raises(GraphBreak, match="differentiated outside"):
        model = _two_heads(tracegrad)
        tracegrad.compile(model, fullgraph=True)(_batch(tracegrad, 0)[0]).sum().backward()

    def infer(mod, wrap):
        model = _two_heads(mod)
        fwd = wrap(lambda x: model(x))
        with mod.no_grad():
            return [snapshot(fwd(_batch(mod, i)[0])) for i in range(3)]
    (f,) = _h.run_three_ways(infer, fullgraph=True)
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 0


def test_branch_drawing_random_numbers_is_a_graph_break_with_eager_values():
    def make(mod):
        lin = np_init(mod.nn.Linear(4, 4), mod)
        drop = mod.nn.Dropout(0.5)

        def fn(x):
            return mod.cond(x.mean() > 0, lambda t: drop(lin(t)), lambda t: lin(t) * 2.0, (x,))
        return fn

    def run(mod, wrap):
        f = wrap(make(mod))
        out = []
        for i in range(4):
            mod.manual_seed(i)
            out.append(snapshot(f(_batch(mod, i)[0])))
            out.append(snapshot(mod.rand(2)))     # where the generator stands after the call
        return out
    comp = run(tracegrad, tracegrad.compile)
    _h.assert_same(run(tracegrad, lambda f: f), comp, "compiled")
    with pytest.raises(GraphBreak, match="random numbers"):
        tracegrad.compile(make(tracegrad), fullgraph=True)(_batch(tracegrad, 0)[0])


def test_branches_of_other_shapes_or_python_values_run_eagerly():
    """Eager allows branches returning other shapes (same dims) and returns the taken one's
    Python values; one program cannot: eager's results, and fullgraph names why."""
    def shapes(mod):
        return lambda x: mod.cond(x.sum() > 0, lambda t: t[:2] * 2.0, lambda t: t[:1] + 1.0, (x,))

    def values(mod):
        return lambda x: mod.cond(x.sum() > 0, lambda t: (t * 2.0, 1), lambda t: (t + 1.0, 2), (x,))

    def same_values(mod):
        return lambda x: mod.cond(x.sum() > 0, lambda t: (t * 2.0, 3), lambda t: (t + 1.0, 3), (x,))

    for make, gist in ((shapes, "shapes"), (values, "Python values"), (same_values, None)):
        def run(mod, wrap):
            f = wrap(make(mod))
            return [snapshot(f(mod.tensor([1.0, -2.0, 3.0]) * s)) for s in (1.0, -1.0, 1.0)]
        _h.run_three_ways(run)
        full = tracegrad.compile(make(tracegrad), fullgraph=True)
        if gist is None:
            full(tracegrad.ones(3))
            assert full.stats["eager_calls"] == 0
        else:
            with pytest.raises(GraphBreak, match=gist):
                full(tracegrad.ones(3))


@pytest.mark.parametrize("value", ["tag", 1.5, None, True])
def test_branch_outputs_other_than_tensors_and_ints_raise_as_torch(value):
    """torch 2.13 takes tensors and ints from the branches only (a RuntimeError subclass)."""
    def fn(mod):
        return lambda x: mod.cond(x.sum() > 0, lambda t: (t * 2.0, value), lambda t: (t + 1.0, value), (x,))
    for mod, run in ((torch, fn(torch)), (tracegrad, fn(tracegrad)), (tracegrad, tracegrad.compile(fn(tracegrad)))):
        with pytest.raises(RuntimeError):
            run(mod.ones(3))


def test_branch_writing_into_an_operand_raises_as_eager_and_restores_it():
    def bad(mod):
        def fn(x, y):
            return mod.cond(x.sum() > 0, lambda t, u: u.add_(1.0) * t, lambda t, u: t - u, (x, y))
        return fn

    for mod in (tracegrad, torch):
        x, y = mod.ones(3), mod.zeros(3)
        with pytest.raises(RuntimeError, match="mutat"):
            bad(mod)(x, y)
        assert y.tolist() == [0.0, 0.0, 0.0]
    f = tracegrad.compile(bad(tracegrad))
    x, y = tracegrad.ones(3), tracegrad.zeros(3)
    with pytest.raises(RuntimeError, match="mutat"):
        f(x, y)
    assert y.tolist() == [0.0, 0.0, 0.0]


def test_nested_traced_conds_in_a_compiled_step():
    def run(mod, wrap):
        heads = [np_init(mod.nn.Linear(3, 2), mod, seed=s) for s in (1, 2, 3)]
        params = [p for h in heads for p in h.parameters()]
        opt = mod.optim.SGD(params, lr=0.1)

        def inner(t):
            return mod.cond(t[:, 0].mean() > 0, lambda u: heads[0](u), lambda u: heads[1](u), (t,))

        def step(x):
            opt.zero_grad()
            out = mod.cond(x.mean() > 0, inner, lambda t: heads[2](t).tanh(), (x,))
            loss = out.pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        out = []
        for i, s in enumerate((1.0, -1.0, 1.0, 1.0)):
            x = _data(mod, i, 4, 3).abs() * s
            if i == 3:
                x[:, 0] = -x[:, 0] - 0.1
                x[:, 1:] += 1.0
            out.append([snapshot(f(x))] + [snapshot(h) for h in heads])
        return out
    (f,) = _h.run_three_ways(run, fullgraph=True)
    # (a second trace once the parameters hold .grad tensors, as for any step)
    assert f.stats["traces"] <= 2 and f.stats["eager_calls"] == 0


def test_no_grad_branch_writing_or_returning_an_operand_runs_eagerly():
    """Under no_grad torch lets the taken branch write into an operand and return it; which
    write stays depends on pred: eager's results (the operand object itself returned)."""
    def run(mod, wrap):
        f = wrap(lambda x, y: mod.cond(x.sum() > 0, lambda t, u: u.add_(1.0), lambda t, u: t * 2.0, (x, y)))
        out = []
        with mod.no_grad():
            for s in (1.0, -1.0, 1.0):
                x, y = mod.tensor([1.0, 2.0]) * s, mod.zeros(2)
                r = f(x, y)
                out.append([snapshot(r), snapshot(y), r is y])
        return out
    _h.run_three_ways(run)
    with pytest.raises(GraphBreak, match="no_grad"):
        with tracegrad.no_grad():
            tracegrad.compile(lambda x, y: tracegrad.cond(x.sum() > 0, lambda t, u: u.add_(1.0),
                                                          lambda t, u: t * 2.0, (x, y)), fullgraph=True)(
                tracegrad.ones(2), tracegrad.zeros(2))
