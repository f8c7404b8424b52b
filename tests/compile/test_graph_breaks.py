"""Data-dependent Python control flow in a compiled function: with ``fullgraph=True`` a
RuntimeError naming the file and line; otherwise eager's results, a one-time warning and the
reason recorded in ``tracegrad.compiler.stats()``."""
import os

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init

HERE = os.path.basename(__file__)


def _line(tag):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# BREAK:{tag}"):
                return n
    raise AssertionError(tag)


def _item_branch(mod, h):
    if h.pow(2).mean().item() > 0.05:  # BREAK:item
        h = h * 0.5
    return h


def _while_loop(mod, h):
    while h.abs().max() > 0.3:  # BREAK:while
        h = h / 2
    return h


def _int_slice(mod, h):
    n = int(h.abs().sum() * 3) % 4 + 1  # BREAK:int
    return h[:n]


def _bool_mask(mod, h):
    return h[h > 0]  # BREAK:mask


BREAKS = {"item": _item_branch, "while": _while_loop, "int": _int_slice, "mask": _bool_mask}


def program(body):
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Linear(4, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            h = body(mod, model[0](x))
            loss = h.pow(2).sum() + model[1](model[0](x)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 3, 3),)
    return make


@pytest.mark.parametrize("kind", list(BREAKS))
def test_graph_break_runs_eagerly_with_warning_and_stats(kind):
    run = check_compiled(program(BREAKS[kind]), calls=4)
    breaks = [w for w in run.warnings if "tracegrad.compile" in w]
    assert len(breaks) == 1, run.warnings                     # one-time warning
    st = run.step.stats
    assert st["graph_breaks"] and st["eager_calls"] >= 3
    reason, where = st["graph_breaks"][0]
    assert reason and where.endswith(f"{HERE}:{_line(kind)}"), where
    glob = tracegrad.compiler.stats()
    assert any(s["graph_breaks"] and s["graph_breaks"][0][1] == where for s in glob.values())


@pytest.mark.parametrize("kind", list(BREAKS))
def test_fullgraph_raises_naming_file_and_line(kind):
    step, state, batch = program(BREAKS[kind])(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    before = {k: v.clone() for k, v in state["model"].state_dict().items()}
    with pytest.raises(RuntimeError, match=f"{HERE}:{_line(kind)}"):
        for i in range(2):
            before = {k: v.clone() for k, v in state["model"].state_dict().items()}
            step(*batch(i))
    assert isinstance(tracegrad.compiler.GraphBreak("x"), RuntimeError)
    # the failing call left the parameters as they were
    for k, v in state["model"].state_dict().items():
        assert tracegrad.equal(v, before[k]), k


def test_fullgraph_raises_on_first_call():
    step, state, batch = program(_item_branch)(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    with pytest.raises(RuntimeError, match=HERE):
        step(*batch(0))


def test_compiler_disable_inside_is_a_graph_break():
    calls = []

    @tracegrad.compiler.disable
    def log_norm(t):
        calls.append(float(t.norm()))
        return t

    def body(mod, h):
        return log_norm(h)
    run = check_compiled(program(body), calls=3)
    assert len(calls) == 6          # eager run and compiled run, every call
    assert run.step.stats["graph_breaks"]


def test_graph_break_in_forward_only_function_backward_outside():
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)

        def forward(x):
            out = model(x)
            if out.sum() > 0:                     # data-dependent branch
                out = out * 2
            return out.pow(2).mean()
        f = wrap(forward)

        def step(x):
            loss = f(x)
            loss.backward()
            return loss
        step.compiled = f
        return step, {"model": model}, lambda i: (data(mod, i, 4, 3),)
    run = check_compiled(make, calls=4)
    assert run.step.compiled.stats["graph_breaks"]


def test_cache_size_limit_falls_back_to_eager(monkeypatch):
    monkeypatch.setattr(tracegrad.compiler, "cache_size_limit", 2)
    f = tracegrad.compile(lambda x: (x * 2).sum())
    limit = tracegrad.compiler.cache_size_limit
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, limit + 4):
            x = tracegrad.ones(n)
            assert f(x).item() == 2.0 * n
    assert f.stats["traces"] <= limit + 1
    assert any("cache_size_limit" in str(m.message) for m in w)


COUNTER = {"n": 0}
STEP_NO = 0


class _Knobs:
    scale = 1.0


@pytest.mark.parametrize("where", ["dict entry", "global", "attribute", "closure"])
def test_cache_size_limit_warning_names_the_python_value_that_changed(monkeypatch, where):
    """A Python number the function reads, changed between calls, is a constant of each program:
    past ``cache_size_limit`` the call runs eagerly, and the warning says which value did it."""
    global STEP_NO
    monkeypatch.setattr(tracegrad.compiler, "cache_size_limit", 2)
    knobs = _Knobs()
    k = 0

    def read():
        if where == "dict entry":
            return COUNTER["n"] % 5
        if where == "global":
            return STEP_NO
        if where == "attribute":
            return knobs.scale
        return k

    def bump():
        global STEP_NO
        nonlocal k
        if where == "dict entry":
            COUNTER["n"] += 1
        elif where == "global":
            STEP_NO += 1
        elif where == "attribute":
            knobs.scale += 1.0
        else:
            k += 1

    f = tracegrad.compile(lambda x: x * read())
    x = tracegrad.ones(2)
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(5):
            assert f(x).tolist() == [float(read())] * 2      # equal to eager on every call
            bump()
    text = " ".join(str(m.message) for m in w)
    want = {"dict entry": "the entry 'n' of a dict", "global": "the global 'STEP_NO'",
            "attribute": "the attribute 'scale' of a _Knobs", "closure": "the closure variable 'k'"}[where]
    assert "cache_size_limit" in text, text
    assert text.split("changed between calls (")[1].split("),")[0] == want, text


@pytest.mark.parametrize("what", ["tensor", "text"])
def test_print_inside_step_prints_every_call(capsys, what):
    # a print in a traced call would happen once, while tracing: a graph break, and no partial line
    def body(mod, h):
        print("h:", h.sum() if what == "tensor" else "step")
        return h
    run = check_compiled(program(body), calls=3)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[:3] == out[3:]          # eager run, then compiled run: same lines
    assert run.step.stats["graph_breaks"]


READS = {
    "float": lambda t: float(t.sum()),
    "tolist": lambda t: t.tolist()[0][0],
    "numpy": lambda t: t.detach().numpy().sum(),
    "format": lambda t: float(f"{t.sum():.3f}"),
    "isfinite": lambda t: 1.0 if __import__("math").isfinite(t.sum()) else 0.0,
    "index": lambda t: [0.5, 1.0, 2.0][(t.abs().sum() > 0).long()],
}


@pytest.mark.parametrize("kind", list(READS))
def test_python_reads_of_tensor_values_are_graph_breaks(kind):
    model = np_init(tracegrad.nn.Linear(3, 2), tracegrad)

    def fn(x):
        h = model(x)
        return h * READS[kind](h)
    f = tracegrad.compile(fn, fullgraph=True)
    with pytest.raises(RuntimeError, match=HERE):
        for i in range(2):
            f(data(tracegrad, i, 2, 3))


def test_logging_and_stderr_inside_step_happen_every_call(caplog):
    """A user's logging call or a print to stderr inside the compiled function would come out
    once while tracing: the call runs eagerly (a graph break), each call logs, as eagerly. A
    warning passes through (eager shows it once per place too)."""
    import logging
    import sys
    import warnings
    log = logging.getLogger("user.train")

    def logged(x):
        log.warning("step")
        return x + 1

    def to_stderr(x):
        print("err", file=sys.stderr)
        return x + 1

    def warns(x):
        warnings.warn("careful", UserWarning)
        return x + 1
    f = tracegrad.compile(logged)
    with caplog.at_level(logging.WARNING, logger="user.train"):
        for _ in range(3):
            f(tracegrad.ones(2))
    assert [r.getMessage() for r in caplog.records if r.name == "user.train"] == ["step"] * 3
    assert "logging call 'step'" in f.stats["graph_breaks"][0][0]
    g = tracegrad.compile(to_stderr)
    for _ in range(3):
        g(tracegrad.ones(2))
    assert "sys.stderr" in g.stats["graph_breaks"][0][0]
    h = tracegrad.compile(warns)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("default")
        for _ in range(3):
            h(tracegrad.ones(2))
    assert not h.stats["graph_breaks"] and h.stats["traces"] == 1
    with pytest.raises(tracegrad.compiler.GraphBreak, match="logging call"):
        tracegrad.compile(logged, fullgraph=True)(tracegrad.ones(2))


def test_anomaly_mode_around_a_compiled_step_checks_like_eager():
    """detect_anomaly entered around later calls: the NaN check reads gradient values, so
    those calls run eagerly (a graph break) and raise eager's RuntimeError; anomaly mode is
    part of the program's key, so calls traced without it never skip the check."""
    lin = tracegrad.nn.Linear(2, 1)
    with tracegrad.no_grad():
        lin.weight.fill_(1.0)
        lin.bias.fill_(0.0)

    def step(x):
        lin.zero_grad()
        lin(x).sqrt().sum().backward()
        return lin.weight.grad
    f = tracegrad.compile(step)
    bad, good = tracegrad.tensor([[-1.0, -2.0]]), tracegrad.tensor([[1.0, 2.0]])
    f(bad), f(bad)                                   # traced without anomaly mode: no check
    with tracegrad.autograd.set_detect_anomaly(True):
        with pytest.raises(RuntimeError, match="SqrtBackward0' returned nan"):
            step(bad)
        with pytest.raises(RuntimeError, match="SqrtBackward0' returned nan"):
            f(bad)
        assert f(good).tolist() == step(good).tolist()


def test_a_break_at_the_same_line_for_two_signatures_stops_tracing_new_ones():
    """A graph break at one line of the code for two argument signatures (here: a Python lr
    that differs per call, set into a dict) means the code breaks whatever the arguments:
    later signatures run eagerly without a trace attempt each (an attempt runs the body one
    more time, counted here by an iterator the trace does not restore: reached through a
    partial, which NOTE [iterators and files]'s check does not look into)."""
    import functools
    import itertools
    runs, seen = itertools.count(), {}
    tick = functools.partial(next, runs)

    def step(x, lr):
        tick()
        seen["lr"] = lr                       # a side effect: graph break
        return x * lr
    f = tracegrad.compile(step)
    for lr in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0):
        assert f(tracegrad.ones(2), lr).tolist() == [lr, lr]
    # six eager runs, plus the abandoned traces of the 2nd and 3rd calls only
    assert next(runs) == 8 and f.stats["eager_calls"] == 6 and seen["lr"] == 6.0
    f.reset()
    f(tracegrad.ones(2), 7.0), f(tracegrad.ones(2), 8.0)
    assert next(runs) == 9 + 3              # after reset() a new signature is traced again


def test_backward_over_a_graph_built_before_the_call_breaks_before_running_it():
    """REINFORCE (pytorch/examples reinforce.py): log-probabilities computed eagerly with a
    graph, kept in a global list, and a compiled ``finish_episode`` that backpropagates through
    them and clears the list. The trace must not run (and free) that eager graph: the call runs
    eagerly, with eager's and torch's results on every episode."""
    torch = pytest.importorskip("torch")

    def run(m, compiled):
        lin = m.nn.Linear(2, 2)
        with m.no_grad():
            lin.weight.copy_(m.tensor([[0.3, -0.2], [0.1, 0.4]]))
            lin.bias.fill_(0.05)
        opt = m.optim.Adam(lin.parameters(), lr=1e-2)
        log_probs, rewards = [], []

        def finish():
            returns = m.tensor([float(len(rewards) - i) for i in range(len(rewards))])
            returns = (returns - returns.mean()) / (returns.std() + 1e-6)
            opt.zero_grad()
            loss = m.cat([-lp * r for lp, r in zip(log_probs, returns)]).sum()
            loss.backward()
            opt.step()
            del rewards[:]
            del log_probs[:]
            return loss
        f = tracegrad.compile(finish) if compiled else finish
        out = []
        for ep in range(3):
            for t in range(3 + ep):
                log_probs.append(m.log_softmax(lin(m.full((1, 2), float(t))), 1)[:, 0])
                rewards.append(1.0)
            out.append(float(f()))
        return out + lin.weight.detach().reshape(-1).tolist(), f
    t_out, _ = run(torch, False)
    e_out, _ = run(tracegrad, False)
    with pytest.warns(UserWarning, match="graph of a tensor computed before the call"):
        c_out, f = run(tracegrad, True)
    np.testing.assert_allclose(e_out, t_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_out, e_out, rtol=1e-6, atol=1e-7)
    assert any("computed before the call" in r for r, _ in f.stats["graph_breaks"])


def test_break_caught_by_the_users_own_except_still_stands():
    """``try: v = y.item() except Exception: v = 0.0``: the GraphBreak raised in ``item()`` is
    caught by the user's code, which goes on with a value eager would not have; the trace is
    void all the same and the call runs eagerly (no program that multiplies by 0)."""
    lin = tracegrad.nn.Linear(2, 1)

    def f(x):
        y = lin(x).sum()
        try:
            v = y.item()
        except Exception:          # noqa: BLE001 -- the user's broad except
            v = 0.0
        return y * v
    g = tracegrad.compile(f)
    x = tracegrad.ones(3, 2)
    with pytest.warns(UserWarning, match="item"):
        got = [float(g(x)) for _ in range(3)]
    assert got == [float(f(x))] * 3 and got[0] != 0.0
    assert g.stats["traces"] == 0
    with pytest.raises(tracegrad.compiler.GraphBreak):
        tracegrad.compile(f, fullgraph=True)(x)


def test_a_name_error_inside_tracegrad_propagates_instead_of_running_eagerly(monkeypatch):
    """A NameError raised by tracegrad's own code while tracing is a library bug: it reaches the
    caller (a fallback to eager would hide it); the user's own NameError still runs eagerly
    first and is raised from there, as without compile."""
    import tracegrad.compiler as compiler_mod
    tracegrad.compiler.reset()
    f = tracegrad.compile(lambda x: x * 2)
    monkeypatch.delattr(compiler_mod, "trace_region")
    with pytest.raises(NameError, match="trace_region"):
        for _ in range(2):     # (the first call runs eagerly)
            f(tracegrad.ones(2))
    monkeypatch.undo()

    def user(x):
        return x * undefined_name  # noqa: F821

    g = tracegrad.compile(user)
    with pytest.raises(NameError, match="undefined_name"):
        g(tracegrad.ones(2))
