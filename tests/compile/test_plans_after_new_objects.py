"""NOTE [plans after new objects] (tracegrad/_lowering/guards.py) and NOTE [objects only programs
hold] (tracegrad/_lowering/orphans.py): a compiled step defined once and called after the model
and optimizer it reads were made again (a notebook cell run again) traces a program for the new
objects that lifts only their state -- the grown plan lifted every earlier model's parameters
too -- and gives the same values as eager; the programs of a model nothing else holds are
dropped (the old model and optimizer are freed, and the step keeps compiling past the cache
limit, as torch's weak guards do), while a model the user keeps keeps its programs. Past the
cache limit (models kept) the warning names the objects made again and says to compile again."""
import gc
import warnings
import weakref

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
    g, kept = {}, []

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
            kept.append((g["model"], g["opt"]))   # each pair stays alive: its programs stay
            for _ in range(2):
                f(x)
    text = " ".join(str(w.message) for w in seen if "cache_size_limit" in str(w.message))
    assert "made again" in text and "(a new Linear)" in text and "compile the step again" in text, text


def _swapping(models_kept):
    T = tracegrad
    g = {}

    def step(x):
        g["opt"].zero_grad()
        loss = g["model"](x).pow(2).mean()
        loss.backward()
        g["opt"].step()
        return loss
    f = T.compile(step)
    x = T.ones(4, 3)
    refs = []
    for k in range(12):
        g["model"] = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 1))
        g["opt"] = T.optim.Adam(g["model"].parameters(), lr=0.01)
        refs.append(weakref.ref(g["model"]))
        if k in models_kept:
            models_kept[k] = (g["model"], g["opt"])
        for _ in range(3):
            f(x)
    gc.collect()
    return f, refs, g, step


def test_programs_of_a_model_nothing_holds_are_dropped():
    f, refs, g, _ = _swapping({})
    alive = [k for k, r in enumerate(refs) if r() is not None]
    assert alive == [11], alive               # only the current model: the others were freed
    assert not f.stats["graph_breaks"], f.stats   # still compiling past cache_size_limit (8)
    assert f.stats["traces"] >= 12, f.stats


def test_a_model_the_user_keeps_in_a_list_keeps_its_programs():
    kept = {3: None}
    f, refs, g, step = _swapping(kept)
    alive = [k for k, r in enumerate(refs) if r() is not None]
    assert alive == [3, 11], alive
    # back to the kept model and its optimizer: its program runs again, no new trace, and the
    # result equals an eager step on a copy of the same state
    import copy
    g["model"], g["opt"] = kept[3]
    twin_model = copy.deepcopy(kept[3][0])
    twin_opt = tracegrad.optim.Adam(twin_model.parameters(), lr=0.01)
    twin_opt.load_state_dict(copy.deepcopy(kept[3][1].state_dict()))
    traces = f.stats["traces"]
    got = f(tracegrad.ones(4, 3))
    assert f.stats["traces"] == traces, f.stats
    g["model"], g["opt"] = twin_model, twin_opt
    want = step(tracegrad.ones(4, 3))
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    for p, q in zip(kept[3][0].parameters(), twin_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7)
