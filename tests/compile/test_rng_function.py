"""Custom autograd.Functions inside a compiled step, and RNG as captured state: dropout masks
differ call to call, manual_seed reproduces a compiled call, compiled draws equal eager draws
for the same seed, the global generator advances as eagerly, eval mode is deterministic."""
import numpy as np
import pytest

import tracegrad

from ._harness import _arr, check_compiled, data, labels, np_init


def _scaled_tanh(mod):
    class ScaledTanh(mod.autograd.Function):
        """tanh(x) * k with a deliberately non-mathematical backward (grad * k * 2 * (1-y^2))."""

        @staticmethod
        def forward(ctx, x, k):
            y = x.tanh() * k
            ctx.save_for_backward(y)
            ctx.k = k
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * ctx.k * 2.0 * (1 - (y / ctx.k) ** 2), None
    return ScaledTanh


def custom_fn_program(mod, wrap):
    model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Linear(4, 2)), mod)
    opt = mod.optim.Adam(model.parameters(), lr=0.05)
    fn = _scaled_tanh(mod)

    def step(x, y):
        opt.zero_grad()
        h = fn.apply(model[0](x), 1.5)
        loss = mod.nn.functional.mse_loss(model[1](h), y)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))


def test_custom_function_in_step():
    run = check_compiled(custom_fn_program, calls=4, torch_too=True)
    assert not run.step.stats["graph_breaks"]


def dropout_program(train=True, extra_draw=False):
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 6), mod.nn.Dropout(0.5)), mod)
        model.train(train)

        def fwd(x):
            out = model(x)
            if extra_draw:
                out = out + mod.randn(out.shape) * 0.1 + mod.rand(1, 6)
            return out
        return wrap(fwd), {"model": model}, lambda i: (data(mod, i, 4, 3),)
    return make


@pytest.mark.parametrize("extra_draw", [False, True])
def test_dropout_matches_eager_and_advances_generator(extra_draw):
    run = check_compiled(dropout_program(extra_draw=extra_draw), calls=4)
    outs = [s["out"]["value"] for s in run.snaps]
    assert not np.array_equal(outs[2], outs[3])          # masks differ between compiled calls
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] >= 1


def test_manual_seed_reproduces_compiled_call():
    step, state, batch = dropout_program(extra_draw=True)(tracegrad, tracegrad.compile)
    x = batch(0)[0]
    step(x), step(x)                                      # eager call, then trace
    got = []
    for _ in range(3):
        tracegrad.manual_seed(7)
        got.append(_arr(step(x)))
    tracegrad.manual_seed(7)
    eager = _arr(step.__wrapped__(x))
    for g in got:
        np.testing.assert_array_equal(g, eager)
    assert step.stats["traces"] >= 1 and not step.stats["graph_breaks"]


def test_eval_mode_is_deterministic():
    run = check_compiled(dropout_program(train=False), calls=3)
    outs = [s["out"]["value"] for s in run.snaps]
    np.testing.assert_array_equal(outs[1], _arr(run.state["model"][0](data(tracegrad, 1, 4, 3))))
    # no generator state is consumed in eval mode
    assert all(np.array_equal(s["rng"], run.snaps[0]["rng"]) for s in run.snaps)


def test_dropout_train_step_with_optimizer():
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 6), mod.nn.Dropout(0.3), mod.nn.Linear(6, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    check_compiled(make, calls=4)


def generator_program(reseed=False):
    """Draws from the global generator (randint, randperm, bernoulli) and from a captured
    ``tracegrad.Generator``; with ``reseed`` the step calls ``manual_seed`` itself."""
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)
        g = mod.Generator().manual_seed(3)

        def fwd(x):
            if reseed:
                mod.manual_seed(11)
            idx = mod.randperm(4)
            noise = mod.randn(4, 2, generator=g)
            k = mod.randint(0, 3, (4, 1)).float()
            mask = mod.bernoulli(mod.full((4, 2), 0.5))
            return model(x[idx]) * mask + noise + k
        return wrap(fwd), {"model": model, "g": g}, lambda i: (data(mod, i, 4, 3),)
    return make


@pytest.mark.parametrize("reseed", [False, True])
def test_generators_inside_compiled_function(reseed):
    gens = []

    def make(mod, wrap):
        step, state, batch = generator_program(reseed)(mod, wrap)
        gens.append(state)
        return step, state, batch
    run = check_compiled(make, calls=4)        # compiled == eager, generator states included
    outs = [s["out"]["value"] for s in run.snaps]
    assert not np.array_equal(outs[2], outs[3])   # the captured generator advances either way
    if reseed:
        # the global draws restart from manual_seed(11) on every call: same key after each call
        assert tracegrad.initial_seed() == 11
        keys = []
        for i in range(2):
            run.step(data(tracegrad, i, 4, 3))
            keys.append(np.asarray(tracegrad.default_generator._current_key()))
        assert np.array_equal(keys[0], keys[1])
    assert not run.step.stats["graph_breaks"]


def test_dropout_in_a_step_big_enough_to_run_on_xla_threads():
    """Dropout draws its float64 uniforms through a host callback; XLA runs the callback of a
    program this size on its own threads, where x64 is off (NOTE [64-bit callback results]):
    the compiled step must still equal eager, call after call."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(16, 64), mod.nn.ReLU(), mod.nn.Dropout(0.2),
                                          mod.nn.Linear(64, 3)), mod)
        opt = mod.optim.AdamW(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 64, 16), labels(mod, i, 64, 3))
    run = check_compiled(make, calls=4)
    assert not run.step.stats["graph_breaks"] and run.step.stats["traces"] == 1


def test_float64_and_int64_draws_inside_a_compiled_function():
    """rand/randint/randperm in float64/int64 inside a compiled function: eager's values."""
    def make(mod, wrap):
        def fwd(x):
            a = mod.rand(64, 32, dtype=mod.float64)
            b = mod.randint(0, 1000, (64, 32))
            c = mod.randperm(50)
            return x.double() * a + b, c
        return wrap(fwd), {}, lambda i: (data(mod, i, 64, 32),)
    run = check_compiled(make, calls=3)
    assert not run.step.stats["graph_breaks"]
