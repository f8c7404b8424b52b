"""NOTE [module arguments] (tracegrad/compiler.py): a compiled function called with another
instance of a module or optimizer class than a cached program was traced for is no recompile in
torch 2.13 (it traces built-in modules' parameters as inputs): a block function run over each
layer of a model stays compiled past ``cache_size_limit`` layers, and gives eager's (and
torch's) values and gradients; a step given a model and optimizer made again (a notebook cell
run again) forgets the programs of the models nothing else holds (they are freed), and keeps
those of the models the user keeps. Instances of different classes at one argument are still
recompiles, counted toward the limit."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import tracegrad

LAYERS = 11      # more than cache_size_limit (8)


def _block(layer, x):
    return layer(x) + x


def _stack(T, weights):
    layers = []
    for w, b in weights:
        layer = T.nn.Sequential(T.nn.Linear(4, 4), T.nn.Tanh())
        with T.no_grad():
            layer[0].weight.copy_(T.tensor(w))
            layer[0].bias.copy_(T.tensor(b))
        layers.append(layer)
    return layers


def _weights(n, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(4, 4).astype("float32") * 0.5, rng.randn(4).astype("float32") * 0.1) for _ in range(n)]


def _over_layers(T, block, layers, x, iterations=3):
    out = []
    for _ in range(iterations):
        for layer in layers:
            layer.zero_grad()
        xi = T.tensor(x, requires_grad=True)
        h = xi
        for layer in layers:
            h = block(layer, h)
        loss = (h ** 2).sum()
        loss.backward()
        out.append((loss.item(), xi.grad.numpy().copy(),
                    [p.grad.numpy().copy() for layer in layers for p in layer.parameters()]))
    return out


def _same(a, b, tol=1e-5):
    for (la, xa, ga), (lb, xb, gb) in zip(a, b):
        assert la == pytest.approx(lb, rel=tol, abs=tol)
        np.testing.assert_allclose(xa, xb, rtol=tol, atol=tol)
        for p, q in zip(ga, gb):
            np.testing.assert_allclose(p, q, rtol=tol, atol=tol)


def test_a_block_function_over_every_layer_stays_compiled():
    weights = _weights(LAYERS)
    x = np.random.RandomState(1).randn(3, 4).astype("float32")
    f = tracegrad.compile(_block)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # no cache-limit warning, no graph break
        compiled_layers = _stack(tracegrad, weights)
        compiled = _over_layers(tracegrad, f, compiled_layers, x)
    eager = _over_layers(tracegrad, _block, _stack(tracegrad, weights), x)
    _same(compiled, eager)
    stats = f.stats
    assert stats["graph_breaks"] == []
    # a layer's first call may run eagerly (as the function's own first call does), then one
    # program per layer; a further pass neither traces nor runs eagerly
    assert stats["eager_calls"] <= LAYERS and stats["traces"] <= LAYERS
    before = dict(stats)
    _over_layers(tracegrad, f, compiled_layers, x, iterations=1)
    assert (stats["traces"], stats["eager_calls"]) == (before["traces"], before["eager_calls"])


def test_a_block_function_over_every_layer_matches_torch():
    torch = pytest.importorskip("torch")
    weights = _weights(LAYERS, seed=2)
    x = np.random.RandomState(3).randn(3, 4).astype("float32")
    compiled = _over_layers(tracegrad, tracegrad.compile(_block), _stack(tracegrad, weights), x, iterations=2)
    expected = _over_layers(torch, _block, _stack(torch, weights), x, iterations=2)
    _same(compiled, expected, tol=1e-4)


def _train(T, step, models, x, y, calls=3):
    out = []
    for make in models:
        model, opt = make(T)
        for _ in range(calls):
            out.append(step(model, opt, x, y).item())
        out.append([p.detach().numpy().copy() for p in model.parameters()])
        yield model, opt, out


def _maker(k):
    w = _weights(2, seed=10 + k)

    def make(T):
        model = T.nn.Sequential(T.nn.Linear(4, 4), T.nn.ReLU(), T.nn.Linear(4, 4))
        with T.no_grad():
            for layer, (a, b) in zip((model[0], model[2]), w):
                layer.weight.copy_(T.tensor(a))
                layer.bias.copy_(T.tensor(b))
        return model, T.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return make


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def _data(T):
    rng = np.random.RandomState(4)
    return T.tensor(rng.randn(6, 4).astype("float32")), T.tensor(rng.randn(6, 4).astype("float32"))


def _close_runs(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if isinstance(u, list):
            for p, q in zip(u, v):
                np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
        else:
            assert u == pytest.approx(v, rel=1e-5, abs=1e-6)


def test_models_made_again_as_arguments_are_freed_and_stay_compiled(whole_heap_gc):
    makers = [_maker(k) for k in range(12)]
    f = tracegrad.compile(_step)
    x, y = _data(tracegrad)
    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for model, opt, out in _train(tracegrad, f, makers, x, y):
            refs.append((weakref.ref(model), weakref.ref(opt)))
            del model, opt
    compiled = out
    eager = None
    for _, _, eager in _train(tracegrad, _step, makers, *_data(tracegrad)):
        pass
    _close_runs(compiled, eager)
    gc.collect()
    alive = [k for k, (m, o) in enumerate(refs) if m() is not None or o() is not None]
    # the last model is still held by the generator's frame until it is gone too
    assert alive in ([], [len(makers) - 1])
    assert f.stats["graph_breaks"] == []
    # one eager call (the state is made) and one program per model
    assert f.stats["traces"] <= len(makers) + 1


def test_models_the_user_keeps_keep_their_programs():
    makers = [_maker(k) for k in range(3)]
    f = tracegrad.compile(_step)
    x, y = _data(tracegrad)
    kept = []
    for model, opt, _ in _train(tracegrad, f, makers, x, y):
        kept.append((model, opt))
    traces = f.stats["traces"]
    # each kept model runs its own program again: no trace, and eager's values
    ex, ey = _data(tracegrad)
    twins = [make(tracegrad) for make in makers]
    for (model, opt), (em, eo), make in zip(kept, twins, makers):
        # bring the twin to the kept model's state: the same three steps first
        for _ in range(3):
            _step(em, eo, ex, ey)
        a = f(model, opt, x, y).item()
        b = _step(em, eo, ex, ey).item()
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6)
        for p, q in zip(model.parameters(), em.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert f.stats["traces"] == traces


def test_instances_of_other_classes_are_recompiles():
    f = tracegrad.compile(_block)
    x = tracegrad.randn(2, 4)
    classes = [type(f"Linear{k}", (tracegrad.nn.Linear,), {}) for k in range(10)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cls in classes:
            layer = cls(4, 4)
            for _ in range(2):
                np.testing.assert_allclose(f(layer, x).detach().numpy(), _block(layer, x).detach().numpy(),
                                           rtol=1e-6, atol=1e-6)
    assert any("cache_size_limit" in str(w.message) for w in caught)


def test_a_module_made_for_each_call_stops_at_the_cache_limit():
    # a loss module made anew for every call, as an argument and as a global the step reads:
    # each program serves one call, so they count toward cache_size_limit as recompiles (the
    # function then runs eagerly, with the limit's warning) -- not a trace per call until
    # accumulated_cache_size_limit
    model = tracegrad.nn.Linear(4, 2)
    g = {}

    def by_argument(crit, x, y):
        return crit(model(x), y)

    def by_global(x, y):
        return g["loss_fn"](model(x), y)
    fa, fg = tracegrad.compile(by_argument), tracegrad.compile(by_global)
    x, y = tracegrad.randn(3, 4), tracegrad.randn(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(16):
            expected = tracegrad.nn.MSELoss()(model(x), y).item()
            assert fa(tracegrad.nn.MSELoss(), x, y).item() == pytest.approx(expected, rel=1e-6)
            g["loss_fn"] = tracegrad.nn.MSELoss()
            assert fg(x, y).item() == pytest.approx(expected, rel=1e-6)
    # the argument's instances run eagerly (their first calls); the global's programs count
    # toward the limit, then the function runs eagerly with the limit's warning
    assert fa.stats["traces"] <= 1 and fg.stats["traces"] <= 9
    assert sum("cache_size_limit" in str(w.message) for w in caught) == 1
