"""NOTE [plans after new objects] (tracegrad/_lowering/guards.py): a compiled step defined once
and called after the model and optimizer it reads as globals were made again (a notebook cell
run again) traces a program for the new objects that lifts only their state -- the grown plan
lifted every earlier model's parameters too -- and gives the same values as eager. Past the
cache limit the warning names the objects made again and says to compile again."""
import warnings

import numpy as np
import pytest

import tracegrad

MODELS = 4


def _run(wrap, seed_base=0):
    T = tracegrad
    g = {}

    def make(k):
        T.manual_seed(seed_base + k)
        g["model"] = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 1))
        g["opt"] = T.optim.SGD(g["model"].parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        model, opt = g["model"], g["opt"]
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    f = wrap(step)
    rng = np.random.RandomState(0)
    x = T.tensor(rng.randn(8, 3).astype("float32"))
    y = T.tensor(rng.randn(8, 1).astype("float32"))
    out = []
    for k in range(MODELS):
        make(k)
        for _ in range(3):
            out.append(f(x, y).item())
        out.append([p.detach().numpy().copy() for p in g["model"].parameters()])
    return f, out


def test_each_program_lifts_only_the_model_it_reads():
    f, compiled = _run(tracegrad.compile)
    _, eager = _run(lambda fn: fn)
    for a, b in zip(compiled, eager):
        if isinstance(a, list):
            for p, q in zip(a, b):
                np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-6)
        else:
            assert a == pytest.approx(b, rel=1e-6, abs=1e-7)
    regions = [r for v in f._cache.values() if isinstance(v, list) for r in v]
    # four parameters per model: a program lifting earlier models had 8, 12, 16
    assert max(len(r.owner_list) for r in regions) == 4, [len(r.owner_list) for r in regions]
    assert f.stats["traces"] <= 2 * MODELS, f.stats


def test_cache_limit_warning_names_the_objects_made_again():
    T = tracegrad
    g = {}

    def step(x):
        g["opt"].zero_grad()
        g["model"](x).sum().backward()
        g["opt"].step()
    f = T.compile(step, dynamic=False)
    x = T.ones(2, 3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(6):
            g["model"] = T.nn.Linear(3, 1)
            g["opt"] = T.optim.SGD(g["model"].parameters(), lr=0.1)
            for _ in range(2):
                f(x)
    text = " ".join(str(w.message) for w in seen if "cache_size_limit" in str(w.message))
    assert "made again" in text and "(a new Linear)" in text and "compile the step again" in text, text
