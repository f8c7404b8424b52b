"""NOTE [warnings in a trace] (tracegrad/_lowering/capture.py): a warning the compiled
function gives comes on every call, through the filters as they stand at that call, as it does
eagerly -- not once while tracing, and not as a graph break. Each case runs the same function
under tracegrad eager and tracegrad.compile (and torch eager where torch has the API) and
compares what the filters let through, call by call: message, category, file and line."""
import warnings

import numpy as np
import pytest

import tracegrad

CALLS = 4


def _given(fn, args, action="always", calls=CALLS):
    """The warnings each call of ``fn(*args)`` gives under ``action``: a list per call."""
    out = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter(action)
        for _ in range(calls):
            n = len(log)
            fn(*args)
            out.append([(str(w.message), w.category, w.filename, w.lineno) for w in log[n:]])
    return out


def _x(T, seed=0):
    return T.tensor(np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32))


def _warns_each_call(T):
    def fn(x):
        warnings.warn("step warning", UserWarning)
        y = x * 2
        warnings.warn("second warning", FutureWarning)
        return y.sum()
    return fn


@pytest.mark.parametrize("fullgraph", [False, True])
def test_always_filter_gives_each_warning_on_every_call(fullgraph):
    fn = _warns_each_call(tracegrad)
    eager = _given(fn, (_x(tracegrad),))
    cf = tracegrad.compile(fn, fullgraph=fullgraph)
    compiled = _given(cf, (_x(tracegrad),))
    assert compiled == eager
    assert [len(c) for c in compiled] == [2] * CALLS
    assert [w[1] for w in compiled[0]] == [UserWarning, FutureWarning]    # in the function's order
    assert cf.stats["traces"] == 1 and not cf.stats["graph_breaks"], cf.stats
    # the program's results are the eager ones
    np.testing.assert_allclose(cf(_x(tracegrad, 1)).numpy(), fn(_x(tracegrad, 1)).numpy())


def test_default_filter_gives_a_place_once():
    # "default": once per place, against the module's registry: eager calls first (the place is
    # registered), then the compiled function adds none; a fresh filter version gives it once
    fn = _warns_each_call(tracegrad)
    cf = tracegrad.compile(fn)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("default")
        for _ in range(3):
            fn(_x(tracegrad))
        eager_n = len(log)
        for _ in range(3):
            cf(_x(tracegrad))
        assert eager_n == 2 and len(log) == 2, [str(w.message) for w in log]
    fn2 = _warns_each_call(tracegrad)
    cf2 = tracegrad.compile(fn2)
    assert [len(c) for c in _given(cf2, (_x(tracegrad),), "default")] == [2] + [0] * (CALLS - 1)
    assert [len(c) for c in _given(fn2, (_x(tracegrad),), "default")] == [2] + [0] * (CALLS - 1)


def test_filters_decide_again_at_each_call():
    fn = _warns_each_call(tracegrad)
    cf = tracegrad.compile(fn)
    x = _x(tracegrad)
    assert [len(c) for c in _given(cf, (x,))] == [2] * CALLS
    traces = cf.stats["traces"]
    assert _given(cf, (x,), "ignore") == [[]] * CALLS
    assert [len(c) for c in _given(cf, (x,))] == [2] * CALLS
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=FutureWarning)
        cf(x)
        assert [w.category for w in log] == [UserWarning]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="step warning"):
            cf(x)
        with pytest.raises(UserWarning, match="step warning"):
            fn(x)
    assert cf.stats["traces"] == traces, cf.stats     # no filter is a guard


def test_deprecated_api_in_fullgraph_autocast_region():
    # the CI failure: torch.is_autocast_cpu_enabled() warns (DeprecationWarning) on every eager
    # call; pytest's own filter for it is "always", and fullgraph=True must still trace
    def build(T):
        def fn(a, b):
            with T.autocast(device_type="cpu", dtype=T.bfloat16):
                c = T.mm(a, b)
                if T.is_autocast_cpu_enabled():
                    c = c + 1
            return c
        return fn
    fn = build(tracegrad)
    cf = tracegrad.compile(fn, fullgraph=True)
    a, b = _x(tracegrad), _x(tracegrad, 1).t()
    eager = _given(fn, (a, b))
    assert _given(cf, (a, b)) == eager
    assert [c[0][1] for c in eager] == [DeprecationWarning] * CALLS
    np.testing.assert_array_equal(cf(a, b).float().numpy(), fn(a, b).float().numpy())
    torch = pytest.importorskip("torch")
    tfn = build(torch)
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    theirs = _given(tfn, (ta, tb))
    # torch's text ends with where in its C++ it was raised
    assert [[(m.split(" (Triggered")[0], c) for m, c, _, _ in call] for call in theirs] == \
        [[(m, c) for m, c, _, _ in call] for call in eager]
    np.testing.assert_allclose(tfn(ta, tb).float().numpy(), fn(a, b).float().numpy(), rtol=1e-2)


def test_warning_of_an_op_in_a_training_step():
    # F.log_softmax without dim warns on every call (torch does too); a whole SGD step with it
    # is one program, and every run gives the warning at the user's line
    def build(T):
        lin = T.nn.Linear(4, 3)
        with T.no_grad():
            lin.weight.copy_(T.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
            lin.bias.zero_()
        opt = T.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = -T.nn.functional.log_softmax(lin(x)).mean()
            loss.backward()
            opt.step()
            return loss
        return step, lin
    fn, lin_e = build(tracegrad)
    step, lin_c = build(tracegrad)
    cf = tracegrad.compile(step)
    x = _x(tracegrad)
    eager = _given(fn, (x,))
    compiled = _given(cf, (x,))
    assert [[m for m, *_ in c] for c in compiled] == [[m for m, *_ in c] for c in eager]
    assert all(len(c) == 1 and c[0][1] is UserWarning for c in compiled), compiled
    assert compiled[0][0][2] == __file__
    assert cf.stats["traces"] == 1 and not cf.stats["graph_breaks"], cf.stats
    np.testing.assert_allclose(lin_c.weight.detach().numpy(), lin_e.weight.detach().numpy(), rtol=1e-6)
    torch = pytest.importorskip("torch")
    tstep, _ = build(torch)
    theirs = _given(tstep, (torch.tensor(x.numpy()),))
    assert [[m.replace("torch", "tracegrad") for m, *_ in c] for c in theirs] == \
        [[m.replace("torch", "tracegrad") for m, *_ in c] for c in eager]


def test_warning_in_a_backward_hook():
    # a leaf's hook that warns runs in the program's backward on every call, as eagerly
    def build():
        w = tracegrad.ones(3, 4, requires_grad=True)

        def hook(g):
            warnings.warn("hook ran", RuntimeWarning)
            return g * 2
        w.register_hook(hook)

        def step(x):
            w.grad = None
            (w * x).sum().backward()
            return w.grad.clone()
        return step, w
    fn, w_e = build()
    step, w_c = build()
    cf = tracegrad.compile(step)
    x = _x(tracegrad)
    eager = _given(fn, (x,))
    compiled = _given(cf, (x,))
    assert compiled == eager
    assert [len(c) for c in compiled] == [1] * CALLS
    assert cf.stats["traces"] == 1 and not cf.stats["graph_breaks"], cf.stats
    np.testing.assert_allclose(w_c.grad.numpy(), w_e.grad.numpy())


def test_once_per_process_warning_stays_once():
    # torch's TORCH_WARN_ONCE (meshgrid without indexing): once per process eagerly, and not
    # given again by the program's runs
    def fn(a, b):
        xs, ys = tracegrad.meshgrid(a, b)
        return xs + ys
    cf = tracegrad.compile(fn)
    a, b = tracegrad.arange(3.0), tracegrad.arange(2.0)
    fn(a, b)
    given = _given(cf, (a, b))
    assert all("meshgrid" not in m for c in given for m, *_ in c), given
    np.testing.assert_array_equal(cf(a, b).numpy(), fn(a, b).numpy())


def test_what_compile_says_about_itself_is_not_kept():
    # a fallback warning of tracegrad.compile (said once per function) that happens inside a
    # trace is shown then and never given again by the program's runs; a user's warning is kept
    from tracegrad._lowering.capture import guard_output
    from tracegrad._lowering.warned import say
    kept = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        with guard_output(kept):
            say("tracegrad.compile: running f eagerly: a reason.", stacklevel=1)
            warnings.warn("the user's", UserWarning)
    assert [str(w.message) for w in log] == ["tracegrad.compile: running f eagerly: a reason."]
    assert log[0].filename == __file__
    assert [str(w.message) for w in kept] == ["the user's"]
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        kept[0].give()
    assert [(str(w.message), w.category, w.filename) for w in log] == [("the user's", UserWarning, __file__)]


def _warning_backward_program(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            warnings.warn("Scale.backward ran", UserWarning)
            (x,) = ctx.saved_tensors
            return g * 3 + x * 0

    def forward(x):
        return Scale.apply(x).tanh()
    return forward


@pytest.mark.parametrize("regions", [1, 2])
def test_backward_of_a_compiled_forward_warns_on_every_backward(regions):
    # NOTE [warnings in a trace] rule 6: the forward is compiled, backward() runs outside it as
    # the region's own backward program, traced once; its warnings come on every backward, as
    # eagerly (two compiled functions of one code: each region's first backward traces its own)
    def run(T, wrap):
        fns = [wrap(_warning_backward_program(T)) for _ in range(regions)]
        per_call, grads = [], []
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            for i in range(CALLS):
                x = T.tensor(np.linspace(-0.5, 0.5, 6, dtype=np.float32) + 0.1 * i, requires_grad=True)
                n = len(log)
                sum(f(x).sum() for f in fns).backward()
                per_call.append([str(w.message) for w in log[n:] if "tracegrad.compile" not in str(w.message)])
                grads.append(x.grad.numpy().copy())
        return per_call, grads, fns
    eager, eager_grads, _ = run(tracegrad, lambda f: f)
    compiled, grads, fns = run(tracegrad, tracegrad.compile)
    assert compiled == eager == [["Scale.backward ran"] * regions] * CALLS
    for a, b in zip(grads, eager_grads):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert all(f.stats["traces"] == 1 and not f.stats["graph_breaks"] for f in fns), [f.stats for f in fns]
    torch = pytest.importorskip("torch")
    theirs, their_grads, _ = run(torch, lambda f: f)
    assert theirs == eager
    for a, b in zip(their_grads, eager_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_backward_inside_a_compiled_step_warns_on_every_call():
    # the whole step compiled: the custom Function's backward is traced into the one program,
    # and its warning comes on every call
    def run(T, wrap):
        forward = _warning_backward_program(T)
        w = T.nn.Parameter(T.tensor(np.linspace(-1, 1, 6, dtype=np.float32)))
        opt = T.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (forward(w * x) ** 2).sum()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        per_call, losses = [], []
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            for i in range(CALLS):
                n = len(log)
                losses.append(float(step(T.full((6,), 0.5 + i))))
                # (float() of a loss that requires grad warns once per process: not counted)
                per_call.append([str(m.message) for m in log[n:] if "Scale" in str(m.message)])
        return per_call, losses, w.detach().numpy().copy(), step
    eager, eager_losses, eager_w, _ = run(tracegrad, lambda f: f)
    compiled, losses, w, step = run(tracegrad, tracegrad.compile)
    assert compiled == eager == [["Scale.backward ran"]] * CALLS
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    np.testing.assert_allclose(w, eager_w, rtol=1e-6)
    assert step.stats["traces"] == 1 and not step.stats["graph_breaks"], step.stats
