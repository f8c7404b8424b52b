"""Compiled-vs-eager harness for ``tracegrad.compile`` (MLX's test_compiled_optimizer idea,
STYLE 11): build the same program twice from identical initial state, run it ``calls`` times
eagerly and ``calls`` times through ``tracegrad.compile``, and compare everything a torch
program can observe after every call: returned values (and requires_grad / is_leaf),
parameters, every ``.grad`` (None-ness and values), optimizer ``state_dict()``, module buffers
and modes, the global generator state and any Python log the program keeps.

A program is ``make(mod, wrap) -> (step, state, batch)``: ``mod`` is ``tracegrad`` or ``torch``
(the ``import tracegrad as torch`` contract), ``wrap`` turns ``step`` into the function that is
called (identity or ``tracegrad.compile``), ``state`` is a dict of everything to observe
(modules, optimizers, tensors, Python lists), ``batch(i)`` gives call ``i``'s arguments.
"""
import collections
import linecache
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import tracegrad
from parity import _same_printed

RTOL, ATOL = 2e-5, 2e-6


def np_init(model, mod, seed=0, scale=0.4):
    """Fill every parameter of ``model`` (in ``named_parameters`` order) from a seeded numpy
    stream, so torch and tracegrad modules start equal without sharing an RNG."""
    rng = np.random.RandomState(seed)
    with mod.no_grad():
        for _, p in model.named_parameters():
            p.copy_(mod.tensor((rng.randn(*p.shape) * scale).astype("float32")))
    return model


def data(mod, i, *shape, seed=100):
    """Call ``i``'s float32 input of ``shape`` (the same numbers for torch and tracegrad)."""
    return mod.tensor(np.random.RandomState(seed + i).randn(*shape).astype("float32"))


def labels(mod, i, n, classes, seed=200):
    return mod.tensor(np.random.RandomState(seed + i).randint(0, classes, size=n))


def small_mlp(mod):
    """The adversarial rounds' model: Linear(4, 6), ReLU, Linear(6, 3), numpy-initialised."""
    nn = mod.nn
    return np_init(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)), mod)


def small_xy(mod, i):
    """Batch ``i`` for ``small_mlp``: inputs (5, 4) and class targets in [0, 3)."""
    return data(mod, i, 5, 4), labels(mod, i, 5, 3)


def traces(f):
    """How many programs compiled function ``f`` traced."""
    return f.stats["traces"]


def call_loop(f, batch, calls, *observed):
    """Call ``f(*batch(i))`` ``calls`` times; snapshot the output and ``observed`` after each."""
    return [[snapshot(f(*batch(i))), [snapshot(o) for o in observed]] for i in range(calls)]


def change_loop(f, batch, calls, change, *observed):
    """``call_loop`` with ``change(i)`` run after call ``i`` (the caller editing the program's
    state between calls)."""
    out = []
    for i in range(calls):
        out.append([snapshot(f(*batch(i))), [snapshot(o) for o in observed]])
        change(i)
    return out


def train_step(mod, model, opt, after=None, zero=True, set_to_none=True, call=None):
    """The usual classification step: ``opt.zero_grad(set_to_none=...)`` (unless ``zero`` is
    False), cross-entropy of ``model(x)`` (or ``call(x)``) against ``y``, backward,
    ``opt.step()``, then ``after(loss)`` when given; returns the loss."""
    def step(x, y):
        if zero:
            opt.zero_grad(set_to_none=set_to_none)
        loss = mod.nn.functional.cross_entropy(model(x) if call is None else call(x), y)
        loss.backward()
        opt.step()
        if after is not None:
            after(loss)
        return loss
    return step


def small_batches(mod):
    """``i -> (x, y)``: call ``i``'s batch of 5 inputs of 4 features and 3-class labels for
    ``small_mlp``."""
    return lambda i: (data(mod, i, 5, 4), labels(mod, i, 5, 3))


def _is_tensor(x):
    return hasattr(x, "detach") and hasattr(x, "requires_grad") and hasattr(x, "is_leaf")


def _arr(t):
    return np.array(t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy())


def snapshot(x):
    """Everything observable in ``x`` as nested Python/numpy values (torch and tracegrad alike)."""
    if _is_tensor(x):
        g = x.grad if (x.is_leaf or x.retains_grad) else None     # no non-leaf .grad warning
        return {"value": _arr(x), "dtype": str(x.dtype).split(".")[-1], "requires_grad": x.requires_grad,
                "is_leaf": x.is_leaf, "grad": None if g is None else _arr(g)}
    if hasattr(x, "named_parameters") and hasattr(x, "named_buffers"):
        return {"params": {n: snapshot(p) for n, p in x.named_parameters()},
                "buffers": {n: _arr(b) for n, b in x.named_buffers()},
                "training": [m.training for m in x.modules()]}
    if hasattr(x, "param_groups") and hasattr(x, "state_dict"):
        return snapshot(x.state_dict())
    if hasattr(x, "state_dict"):          # lr schedulers
        return snapshot(x.state_dict())
    if hasattr(x, "get_state") and hasattr(x, "manual_seed"):     # generators
        return _arr(x.get_state())
    if callable(x):
        return getattr(x, "__qualname__", type(x).__name__)
    if isinstance(x, dict):
        return {k: snapshot(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [snapshot(v) for v in x]
    return x


def assert_same(a, b, path="", rtol=RTOL, atol=ATOL):
    """Recursive equality of two snapshots; floats and arrays to ``rtol``/``atol``."""
    if isinstance(a, dict):
        assert isinstance(b, dict), f"{path}: {type(b).__name__} vs dict"
        assert list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}", rtol, atol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} vs {b!r}"
        for i, (u, v) in enumerate(zip(a, b)):
            assert_same(u, v, f"{path}[{i}]", rtol, atol)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{path}: array vs {b!r}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} vs {b.shape}"
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=rtol, abs=atol), f"{path}: {a!r} vs {b!r}"
    elif isinstance(a, str) and isinstance(b, str):
        # printed floats (a program's log line) may round to the neighbouring last digit when
        # one side sums in another order: the numbers within the log tolerances, the text exact
        assert a == b or _same_printed(a, b), f"{path}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def _rng(mod):
    return _arr(mod.get_rng_state())


def _grads(state):
    out = []
    for v in (state.values() if isinstance(state, dict) else ()):
        if hasattr(v, "named_parameters") and hasattr(v, "named_buffers"):
            out += [p.grad for _, p in v.named_parameters()]
    return out


def run_program(make, mod, wrap, calls, between=None):
    """Build the program from seed 0 and run it ``calls`` times; returns the snapshots after
    each call, the wrapped step, the state and the warnings raised."""
    mod.manual_seed(0)
    step, state, batch = make(mod, wrap)
    snaps, grads, per_call = [], [], []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(calls):
            n = len(w)
            out = step(*batch(i))
            per_call.append([(str(x.message), x.category) for x in w[n:]])
            # whether each parameter's .grad is the same tensor object as after the last call
            # (accumulated in place) or a new one (zero_grad() then backward()), as eagerly
            now = _grads(state)
            same = [g is not None and g is h for g, h in zip(now, grads)]
            grads = now
            snaps.append({"call": i, "out": snapshot(out), "state": snapshot(state), "rng": _rng(mod),
                          "grad_is_previous": same})
            if between is not None:
                between(state, i)
    return SimpleNamespace(snaps=snaps, step=step, state=state, warnings=[str(x.message) for x in w],
                           per_call=per_call)


def assert_same_warnings(eager, comp):
    """The user's warnings of each call (message and category) are eager's: NOTE [warnings in
    a trace]. Left out: what tracegrad.compile says about itself, and a warning given once per
    process (torch's TORCH_WARN_ONCE), which the eager run, going first, took."""
    def user(run):
        return [[w for w in call if not w[0].startswith("tracegrad.compile:")] for call in run.per_call]
    e, c = user(eager), user(comp)
    seen = [w for call in c for w in call]
    counts = collections.Counter(w for call in e for w in call)
    once = {w for w, n in counts.items() if n == 1 and w not in seen}
    e = [[w for w in call if w not in once] for call in e]
    assert e == c, f"warnings per call differ: eager {e}, compiled {c}"


def check_compiled(make, calls=3, between=None, rtol=RTOL, atol=ATOL, torch_too=False, **compile_kw):
    """Run ``make`` eagerly and compiled (``tracegrad.compile(step, **compile_kw)``) ``calls``
    times each and assert every snapshot equal; with ``torch_too`` also compare the compiled
    run with torch eager (``_compare_torch``). Returns the compiled run (``.step.stats``,
    ``.warnings``, ``.state``, ``.eager``)."""
    eager = run_program(make, tracegrad, lambda f: f, calls, between)
    comp = run_program(make, tracegrad, lambda f: tracegrad.compile(f, **compile_kw), calls, between)
    for e, c in zip(eager.snaps, comp.snaps):
        assert_same(e, c, f"call{e['call']}", rtol, atol)
    assert_same_warnings(eager, comp)
    comp.eager = eager
    if torch_too:   # a looser tolerance asked for the compiled run holds against torch too
        _compare_torch(make, comp, calls, between, max(rtol, 1e-4), max(atol, 1e-5))
    return comp


def run_three_ways(run, torch_too=True, torch_rtol=1e-4, **compile_kw):
    """``run(mod, wrap)`` eagerly and compiled with tracegrad (and eagerly with torch when
    ``torch_too``): every value it returns equal. Returns the compiled functions the compiled
    run wrapped, in order."""
    made = []

    def wrap(f):
        made.append(tracegrad.compile(f, **compile_kw))
        return made[-1]
    comp = run(tracegrad, wrap)
    assert_same(run(tracegrad, lambda f: f), comp, "compiled")
    if torch_too:
        torch = pytest.importorskip("torch")
        assert_same(run(torch, lambda f: f), comp, "torch", rtol=torch_rtol, atol=1e-5)
    return made


def _compare_torch(make, comp, calls, between, rtol=1e-4, atol=1e-5):
    """torch eager against a compiled tracegrad run: everything but the generator state (the
    two libraries' generators differ)."""
    torch = pytest.importorskip("torch")
    ref = run_program(make, torch, lambda f: f, calls, between)
    for e, c in zip(ref.snaps, comp.snaps):
        e, c = dict(e), dict(c)
        e.pop("rng"), c.pop("rng")
        assert_same(e, c, f"torch call{e['call']}", rtol, atol)


def check_torch(make, calls=3, between=None, **compile_kw):
    """Run ``make`` with torch eagerly and with tracegrad compiled and compare (for programs
    whose compiled == eager check lives elsewhere)."""
    comp = run_program(make, tracegrad, lambda f: tracegrad.compile(f, **compile_kw), calls, between)
    _compare_torch(make, comp, calls, between)
    return comp



# ---- programs changed between calls (the adversarial tests): ``state["change"](i)`` runs after call i

def change(state, i):
    state["change"](i)


def no_change(i):
    pass


def ones(mod):
    return lambda i: (mod.ones(2),)


def break_lines(stats):
    """The stripped source line of each graph break in a compiled function's ``stats``."""
    out = []
    for _, where in stats["graph_breaks"]:
        path, line = where.rsplit(":", 1)
        out.append(linecache.getline(path, int(line)).strip())
    return out


def silent(reason):
    """A known silent difference between compiled and eager; ``reason`` says what differs."""
    return pytest.mark.xfail(strict=True, reason=reason)
