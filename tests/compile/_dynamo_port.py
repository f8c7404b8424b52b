"""Shared by the round-12 and round-14 ports of PyTorch's torch.compile tests
(test_dynamo_ported_round12.py, test_dynamo_ported_round12b.py): run one function under torch
eager, tracegrad eager and ``tracegrad.compile`` and compare what a user can observe."""
import dataclasses

import numpy as np

import tracegrad

try:
    import torch
except ImportError:      # the callers skip without torch
    torch = None

CALLS = 4       # the first call runs eagerly, the second traces: at least three


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=np.float64)


def _is_t(x):
    return hasattr(x, "detach") and hasattr(x, "requires_grad") and hasattr(x, "grad_fn")


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [type(x).__name__] + [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [("keys", tuple(x))] + [v for k in x for v in _flat(x[k])]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [type(x).__name__] + _flat([getattr(x, f.name) for f in dataclasses.fields(x)])
    if _is_t(x):
        return [("t", _np(x), x.requires_grad, str(x.dtype).split(".")[-1], tuple(x.shape))]
    if isinstance(x, np.ndarray):   # a numpy view or copy: compared like a tensor
        return [("t", x.astype(np.float64), "ndarray", str(x.dtype), x.shape)]
    return [x]


# One unit in the last place of a 16-bit float, relative. A compiled program may round a 16-bit
# result once where eager rounds after every op: XLA contracts ``a * b + c`` into one fused
# multiply-add on CPUs with native float16 arithmetic (AVX512-FP16, seen 2026-12-04), which the
# other CPUs this suite ran on did not. Eager's per-op rounding is torch's.
HALF_ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def same(a, b, what="out", rtol=1e-5, atol=1e-6):
    """``b`` (compiled tracegrad) equals ``a`` (torch or eager tracegrad): values, dtypes, shapes,
    requires_grad and plain Python values, through lists/tuples/dicts/dataclasses; a 16-bit
    float tensor to one unit in its last place (``HALF_ULP``)."""
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb), f"{what}: {fa} vs {fb}"
    for i, (u, v) in enumerate(zip(fa, fb)):
        if isinstance(u, tuple) and u and u[0] == "t":
            assert isinstance(v, tuple) and v and v[0] == "t", f"{what}[{i}]: tensor vs {v!r}"
            assert u[3:] == v[3:], f"{what}[{i}] dtype/shape {u[3:]} vs {v[3:]}"
            r = max(rtol, HALF_ULP.get(u[3], 0.0))
            np.testing.assert_allclose(v[1], u[1], rtol=r, atol=atol, err_msg=f"{what}[{i}]")
            assert u[2] == v[2], f"{what}[{i}] requires_grad {u[2]} vs {v[2]}"
        else:
            assert u == v, f"{what}[{i}]: {u!r} vs {v!r}"


def compare(build, calls=CALLS, **compile_kw):
    """``build(T, wrap)`` -> ``run(i)`` returning call ``i``'s observables; ``wrap`` is identity
    for torch and tracegrad eager and ``tracegrad.compile`` for the compiled run. The three
    runs must agree after every call. Returns the compiled run's ``run`` (the round-14 ports)."""
    runs = [build(torch, lambda f: f), build(tracegrad, lambda f: f),
            build(tracegrad, lambda f: tracegrad.compile(f, **compile_kw))]
    for i in range(calls):
        seen = [r(i) for r in runs]
        # torch's CPU kernels are another implementation, whose float32 rounding also changes
        # with the CPU (AVX-512 or AVX2): 1e-4 as _harness's torch comparison; tracegrad's eager
        # run is compared with the compiled one tightly
        same(seen[0], seen[2], f"call{i} compiled vs torch", rtol=1e-4, atol=1e-5)
        same(seen[1], seen[2], f"call{i} compiled vs eager")
    return runs[2]


def compare_compiled(build, calls=CALLS, **compile_kw):
    """``compare``; returns the compiled function itself (``build`` calls ``wrap`` once), for
    its stats."""
    made = []

    def counted(T, wrap):
        def wrap_and_keep(f):
            g = wrap(f)
            made.append(g)
            return g
        return build(T, wrap_and_keep)
    compare(counted, calls=calls, **compile_kw)
    return made[2]


def compare_programs(build, calls=CALLS, traces=None):
    """``compare``, then the compiled run's stats (``build`` calls ``wrap`` once): no graph break
    and, given ``traces``, that many programs built (at most that many for a range)."""
    compiled = compare_compiled(build, calls=calls)
    st = compiled.stats
    assert st["graph_breaks"] == [], st
    if traces is not None:
        assert st["traces"] in (traces if isinstance(traces, range) else (traces,)), st
    return compiled


def randn32(T, i, *shape):
    """A float32 tensor of module ``T`` from numpy's normal draws seeded ``i``."""
    return T.tensor(np.random.RandomState(i).randn(*shape).astype("float32"))


def seeded_linear(T, n_in=3, n_out=2, seed=0):
    """``T.nn.Linear(n_in, n_out)`` with weights drawn from ``seed`` (the same in torch and
    tracegrad)."""
    net = T.nn.Linear(n_in, n_out)
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in net.parameters():
            p.copy_(T.tensor(rs.randn(*p.shape).astype("float32") * 0.4))
    return net


def train_step(opt, loss_of):
    """The usual step over ``opt``: ``zero_grad``, ``loss_of(x)``, ``backward``, ``step``;
    returns the loss (the body the round-17 programs share)."""
    def step(x):
        opt.zero_grad()
        loss = loss_of(x)
        loss.backward()
        opt.step()
        return loss
    return step


def fn_and_grads(T, wrap, make_fn, make_args):
    """A ``compare`` run over ``wrap(make_fn(T))`` on ``make_args(T, i)``: the outputs, then
    every tensor argument's grad after ``out.sum().backward()`` of the first output (the
    round-21/22 autograd.Function ports)."""
    f = wrap(make_fn(T))

    def run(i):
        args = make_args(T, i)
        out = f(*args)
        first = out[0] if isinstance(out, (tuple, list)) else out
        first.sum().backward()
        return out, [a.grad for a in args if _is_t(a)]
    return run


def rand(T, i, *shape, rg=False, seed=0):
    t = T.tensor(np.random.RandomState(seed + i).randn(*shape).astype("float32"))
    return t.requires_grad_() if rg else t


def check(build, make_args, calls=CALLS, backward=False, **compile_kw):
    """``build(T)`` -> a function over ``T``; ``make_args(T, i)`` -> call ``i``'s arguments.
    torch eager, tracegrad eager and ``tracegrad.compile`` run ``calls`` times on fresh equal
    arguments; outputs (and, with ``backward``, the leaf arguments' grads after
    ``out.sum().backward()``) must agree. Returns the compiled function."""
    fns = [(torch, build(torch)), (tracegrad, build(tracegrad)),
           (tracegrad, tracegrad.compile(build(tracegrad), **compile_kw))]
    for i in range(calls):
        seen = []
        for T, fn in fns:
            args = make_args(T, i)
            out = fn(*args)
            grads = None
            if backward:
                o = out[0] if isinstance(out, (tuple, list)) else out
                o.sum().backward()
                grads = [a.grad for a in args if _is_t(a) and a.is_leaf and a.requires_grad]
            seen.append((out, grads))
        for j, name in ((0, "torch"), (1, "eager")):
            same(seen[j][0], seen[2][0], f"call{i} compiled vs {name}")
            if backward:
                same(seen[j][1], seen[2][1], f"call{i} grads compiled vs {name}")
    return fns[2][1]


def _ab(T, i):
    return rand(T, i, 3, 4), rand(T, i, 3, 4, seed=7)


def _ab_rg(T, i):
    return rand(T, i, 3, 4, rg=True), rand(T, i, 3, 4, seed=7, rg=True)




def _grad_mode_after(build, make_args, calls=CALLS):
    """Runs torch eager and ``tracegrad.compile`` ``calls`` times: outputs and the grad mode
    after each call agree (grad mode put back to True between calls)."""
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(calls):
        seen = []
        for T, fn in fns:
            try:
                out = fn(*make_args(T, i))
                seen.append((out, T.is_grad_enabled()))
            finally:
                T.set_grad_enabled(True)
        same(seen[0], seen[1], f"call{i}")
    return fns[1][1]


def _compare_bodies(body, calls=CALLS):
    """``body(T, fn)`` -> observable values, for torch eager and a compiled tracegrad ``fn``
    (the same compiled function on every call)."""
    cache = {}

    def wrap(f):
        return cache.setdefault(f.__code__, tracegrad.compile(f))
    for i in range(calls):
        same(body(torch, lambda f: f, i), body(tracegrad, wrap, i), f"call{i}")
