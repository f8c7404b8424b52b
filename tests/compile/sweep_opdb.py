"""A systematic compiled-vs-eager sweep over PyTorch's OpInfo and ModuleInfo databases (not a
pytest file: run it as a script; ``test_opdb_compiled.py`` reuses its checks on the ops that
had problems).

For each op tracegrad has (``tests/conformance/_opinfo_helpers.resolve``) and its first
float32 samples, ``fn(*tensors) -> op(...)`` (every tensor of the sample an argument, the rest
baked in) runs eagerly and through ``tracegrad.compile(fullgraph=False)`` for ``CALLS`` calls
with different values (the first compiled call runs eagerly, the second traces, the third runs
the program: a frozen constant shows up there), in these modes:

* ``forward``: values, shapes, dtypes and ``requires_grad`` of every output, then gradients of
  the sum of the floating outputs w.r.t. the floating inputs, backward outside the compiled call;
* ``backward_inside``: ``y = op(...); y.sum().backward(); return y`` compiled as a whole;
* ``inplace``: the in-place variant (``Tensor.op_``) on a clone of the input (with gradients),
  and ``inplace_arg``: on the argument itself (no grad), the argument compared after the call;
* ``out``: ``op(..., out=out)`` with ``out`` an argument, compared after the call, and whether
  the op returns ``out`` itself.

Modules (``module_db``): forward + backward + an SGD step compiled as one step, in train and
eval mode, the parameters, buffers and outputs compared after each call.

Each case ends ``equal``, ``break`` (the compiled function ran eagerly, the reason is recorded),
``eager_error`` (eager itself rejects the sample: nothing to compare), ``error`` (compiled raised
where eager did not) or ``SILENT`` (a value, dtype, shape, flag or gradient differs).

    python tests/compile/sweep_opdb.py [--ops a,b] [--samples 1] [--modules] [--jsonl FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
import warnings
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance"))

import torch  # noqa: E402

import tracegrad  # noqa: E402
from _opinfo_helpers import Carrier, Unsupported, flat, is_random, resolve  # noqa: E402

CALLS = 3
# compiled and eager run the same XLA kernels, but jit fuses differently (float32 reassociation)
RTOL, ATOL = 1e-4, 1e-5
GRAD_RTOL, GRAD_ATOL = 1e-3, 1e-4
# ops whose results are uninitialised memory: shapes and dtypes only
UNINITIALISED = ("empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted")
MODES = ("forward", "backward_inside", "inplace", "inplace_arg", "out")


class Differs(AssertionError):
    """Compiled and eager disagree (a silent difference)."""


class Skip(Exception):
    """Nothing to compare (eager rejects the case, no floating output...)."""


def op_id(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


# ---- building the case: the sample's tensors become arguments --------------------------------

def _tensors(x, out):
    if isinstance(x, torch.Tensor):
        if not any(x is t for t in out):
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _tensors(v, out)
    return out


def _substitute(x, torch_ts, tg_ts, carry):
    if isinstance(x, torch.Tensor):
        return tg_ts[next(i for i, t in enumerate(torch_ts) if t is x)]
    if isinstance(x, (list, tuple)):
        vals = [_substitute(v, torch_ts, tg_ts, carry) for v in x]
        return type(x)(vals) if type(x) in (list, tuple) else tuple(vals)
    if isinstance(x, dict):
        return {k: _substitute(v, torch_ts, tg_ts, carry) for k, v in x.items()}
    return carry(x)


class Case:
    """One sample as ``fn(*tensors)``: ``args(k, grad)`` gives call ``k``'s arguments (float
    arrays scaled by ``1 + 0.05 k``: a scale keeps signs, symmetry and definiteness, so a
    sample valid on call 0 stays valid; integer and bool arrays rolled by ``k``)."""

    def __init__(self, sample):
        self.sample = sample   # .input, .args, .kwargs (an OpInfo SampleInput or the like)
        self.torch_ts = _tensors((sample.input, sample.args, sample.kwargs), [])
        Carrier()((sample.input, sample.args, sample.kwargs))   # raises Unsupported
        self.base = []
        for t in self.torch_ts:
            v = t.detach()
            self.base.append((v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy()).copy())
        self.dtypes = [str(t.dtype).split(".")[-1] for t in self.torch_ts]
        self.grad = [t.requires_grad for t in self.torch_ts]

    def args(self, k, grad):
        out = []
        for a, dt, g in zip(self.base, self.dtypes, self.grad):
            if a.dtype.kind in "fc":
                a = (a * (1 + 0.05 * k)).astype(a.dtype)
            elif a.size > 1:   # indices, masks: the same values (still in range) elsewhere
                a = np.roll(a.ravel(), k).reshape(a.shape)
            t = tracegrad.tensor(a.copy(), dtype=getattr(tracegrad, dt))
            if grad and g and t.dtype.is_floating_point:
                t.requires_grad_(True)
            out.append(t)
        return out

    def bind(self, fn, **extra):
        """``f(*tensors, **extra) -> fn(input, *args, **kwargs, **extra)``."""
        s, ts = self.sample, self.torch_ts
        carry = Carrier()

        def f(*tg, **kw):
            inp = _substitute(s.input, ts, tg, carry)
            args = _substitute(tuple(s.args), ts, tg, carry)
            kwargs = _substitute(dict(s.kwargs), ts, tg, carry)
            return fn(inp, *args, **kwargs, **kw)
        return f


# ---- comparing ------------------------------------------------------------------------------

def _np(t):
    return np.asarray(t.detach().numpy())


def same(a, b, where, values=True, rtol=RTOL, atol=ATOL):
    """Raise ``Differs`` unless compiled ``b`` equals eager ``a`` (structure, shape, dtype,
    requires_grad and values)."""
    if isinstance(a, Held):
        if not isinstance(b, Held):
            raise Differs(f"{where}: compiled gave {type(b).__name__}, eager a Tensor")
        if a.requires_grad != b.requires_grad:
            raise Differs(f"{where}: compiled requires_grad={b.requires_grad}, eager {a.requires_grad}")
        a, b = a.value, b.value
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            raise Differs(f"{where}: compiled {tuple(b.shape)} {b.dtype}, eager {tuple(a.shape)} {a.dtype}")
        if values:
            x, y = _np(a), _np(b)
            if x.dtype.kind in "fc":
                ok = np.allclose(y, x, rtol=rtol, atol=atol, equal_nan=True)
            else:
                ok = np.array_equal(x, y)
            if not ok:
                err = np.nanmax(np.abs(x.astype(np.complex128) - y.astype(np.complex128))) if x.size else 0
                raise Differs(f"{where}: values differ (max abs err {err:.3g})")
    elif isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            raise Differs(f"{where}: compiled gave {b!r:.80}, eager a sequence of {len(a)}")
        for i, (u, v) in enumerate(zip(a, b)):
            same(u, v, f"{where}[{i}]", values, rtol, atol)
    elif isinstance(a, float) and isinstance(b, float):
        if values and not (np.isclose(a, b, rtol=rtol, atol=atol) or (np.isnan(a) and np.isnan(b))):
            raise Differs(f"{where}: {b} vs eager {a}")
    elif values and a != b and not (a != a and b != b):
        raise Differs(f"{where}: {b!r:.80} vs eager {a!r:.80}")


def _float_outs(y):
    return [o for o in flat(y) if isinstance(o, tracegrad.Tensor) and o.requires_grad
            and o.dtype.is_floating_point and not o.dtype.is_complex]


def _loss(y):
    outs = _float_outs(y)
    if not outs:
        return None
    return sum(o.sum() for o in outs)


def _grads(ts):
    return [None if not t.requires_grad or t.grad is None else t.grad for t in ts]


def _snap(x):
    """A detached copy of what ``x`` holds now (a later in-place write must not change it)."""
    if isinstance(x, tracegrad.Tensor):
        if x.is_sparse:     # compared by its dense values
            return Held(x.detach().to_dense(), x.requires_grad)
        return Held(x.detach().clone(), x.requires_grad)
    if isinstance(x, (list, tuple)):
        return [_snap(v) for v in x]
    return x


class Held:
    """A tensor's value and ``requires_grad`` at one moment."""

    def __init__(self, value, requires_grad):
        self.value, self.requires_grad = value, requires_grad


# ---- running one mode -------------------------------------------------------------------------

def _program(case, fn, mode, name):
    """(make_args(k) -> (args, kwargs, watched), step, grad) for ``mode``; ``watched`` are the
    tensors compared after the call besides the result."""
    if mode == "forward":
        f = case.bind(fn)
        return (lambda k: (case.args(k, True), {})), f, True
    if mode == "backward_inside":
        f = case.bind(fn)

        def step(*ts):
            y = f(*ts)
            loss = _loss(y)
            if loss is None:
                raise Skip("no floating output")
            loss.backward()
            return y
        return (lambda k: (case.args(k, True), {})), step, False
    if mode in ("inplace", "inplace_arg"):
        method = getattr(tracegrad.Tensor, name, None)
        if method is None:
            raise Skip(f"tracegrad.Tensor has no {name}")
        if case.sample.input is not case.torch_ts[0] if case.torch_ts else True:
            raise Skip("the input is not a tensor")
        f = case.bind(method)
        if mode == "inplace":
            def step(x, *rest):
                y = x.clone()
                f(y, *rest)
                return y
            return (lambda k: (case.args(k, True), {})), step, True
        return (lambda k: (case.args(k, False), {})), f, False
    if mode == "out":
        f = case.bind(fn)
        try:
            results = flat(f(*case.args(0, False)))
        except Exception as e:   # noqa: BLE001 -- eager rejects the case
            raise Skip(f"eager raised {type(e).__name__}: {str(e)[:120]}") from None
        if not results or not all(isinstance(o, tracegrad.Tensor) for o in results):
            raise Skip("not all outputs are tensors")
        shapes = [(tuple(o.shape), o.dtype) for o in results]

        def make(k):
            outs = [tracegrad.zeros(s, dtype=d) for s, d in shapes]
            return case.args(k, False), {"out": outs[0] if len(outs) == 1 else tuple(outs)}

        def step(*ts, out):
            r = f(*ts, out=out)
            same_obj = all(a is b for a, b in zip(flat(r), flat(out)))
            return r, same_obj
        return make, step, False
    raise ValueError(mode)


def _run(make, step, grad, k, values):
    args, kwargs = make(k)
    y = step(*args, **kwargs)
    held = {"y": _snap(y), "args": [_snap(a) for a in args], "kwargs": _snap(kwargs.get("out"))}
    if grad:
        loss = _loss(y)
        if loss is not None:
            loss.backward()
    held["grads"] = [None if g is None else _snap(g) for g in _grads(args)]
    return held


def _compare(e, c, k, values):
    same(e["y"], c["y"], f"call{k} result", values)
    same(e["args"], c["args"], f"call{k} arguments after the call", values)
    same(e["kwargs"], c["kwargs"], f"call{k} out", values)
    for i, (a, b) in enumerate(zip(e["grads"], c["grads"])):
        if (a is None) != (b is None):
            raise Differs(f"call{k} grad of argument {i}: compiled {'None' if b is None else 'a tensor'}, "
                          f"eager {'None' if a is None else 'a tensor'}")
        if a is not None:
            same(a, b, f"call{k} grad of argument {i}", values, GRAD_RTOL, GRAD_ATOL)


def check_mode(case, fn, mode, name, random=False):
    """Run ``mode`` eagerly and compiled ``CALLS`` times; returns ``("equal"|"break", reason)``,
    raises ``Differs`` (a silent difference), ``Skip`` or the compiled run's own exception
    (wrapped in ``CompiledError``)."""
    make, step, grad = _program(case, fn, mode, name)
    eager = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracegrad.manual_seed(0)
        try:
            for k in range(CALLS):
                eager.append(_run(make, step, grad, k, not random))
        except Skip:
            raise
        except Exception as e:   # noqa: BLE001 -- eager rejects the case: nothing to compare
            raise Skip(f"eager raised {type(e).__name__}: {str(e)[:120]}") from None
        cf = tracegrad.compile(step, fullgraph=False)
        tracegrad.manual_seed(0)
        comp = []
        try:
            for k in range(CALLS):
                comp.append(_run(make, cf, grad, k, not random))
        except Exception as e:   # noqa: BLE001 -- eager did not raise here
            raise CompiledError(f"call{len(comp)}: {type(e).__name__}: {str(e)[:300]}") from e
    for k, (e, c) in enumerate(zip(eager, comp)):
        _compare(e, c, k, not random)
    if random and name.rstrip("_") not in UNINITIALISED:   # a frozen draw: calls 1 and 2 must differ
        a, b = (flat(c["y"]) for c in comp[1:3])
        # (a few elements can draw the same numbers twice by chance: a bernoulli of 3 high p)
        ts = [(u.value, v.value) for u, v in zip(a, b) if isinstance(u, Held) and u.value.numel() >= 16
              and u.value.dtype.is_floating_point]
        if ts and all(np.array_equal(_np(u), _np(v)) for u, v in ts):
            raise Differs("random op: the compiled calls 1 and 2 drew the same numbers (a frozen draw)")
    breaks = cf.stats["graph_breaks"]
    if breaks:
        return "break", "; ".join(r for r, _ in breaks)[:200]
    if cf.stats["traces"] == 0:
        return "break", "never traced"
    return "equal", ""


class CompiledError(Exception):
    """The compiled run raised where eager did not."""


# ---- the sweep --------------------------------------------------------------------------------

def op_table(names=None):
    from torch.testing._internal.common_methods_invocations import op_db
    out = []
    for op in op_db:
        if names and op_id(op) not in names and op.name not in names:
            continue
        fn, _ = resolve(op)
        if fn is not None:
            out.append((op, fn))
    return out


def samples(op, n, dtype=None):
    """The first ``n`` samples of ``op`` that carry over, of ``dtype`` (None: float32, else the
    first of float64, int64, bool the op supports)."""
    dtypes = op.supported_dtypes("cpu")
    if dtype is not None and dtype not in dtypes:
        return
    if dtype is None:
        dtype = next((d for d in (torch.float32, torch.float64, torch.int64, torch.bool) if d in dtypes), None)
        if dtype is None:
            return
    got = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grad = op.supports_autograd and dtype.is_floating_point
        for s in op.sample_inputs_func(op, "cpu", dtype, grad):
            if "out" in s.kwargs:
                continue
            try:
                case = Case(s)
            except Unsupported:
                continue
            yield case
            got += 1
            if got == n:
                return


def modes_of(op):
    yield "forward"
    if op.supports_autograd:
        yield "backward_inside"
    if op.inplace_variant is not None:
        yield "inplace"
        yield "inplace_arg"
    if op.supports_out:
        yield "out"


def check_op(op, fn, mode, case):
    """One (op, mode, sample): ``(outcome, detail)``."""
    name = getattr(op.inplace_variant, "__name__", None) or op.name + "_"

    def check():
        try:
            # uninitialised memory reads as random to is_random; its values are not compared either
            rand = is_random(op.op, case.sample) or op.name in UNINITIALISED
        except Exception:   # noqa: BLE001 -- torch rejects the sample
            raise Skip("torch rejects the sample") from None
        return check_mode(case, fn, mode, name, rand)
    return outcome_of(check)[:2]


def outcome_of(check, per_case_s=0):
    """``(outcome, detail, seconds)`` of ``check()`` (which returns ``(outcome, detail)`` or
    raises), stopped after ``per_case_s`` seconds when given."""
    t0 = time.time()
    if per_case_s:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(per_case_s)
    try:
        outcome, detail = check()
    except Skip as e:
        outcome, detail = "eager_error", str(e)
    except Differs as e:
        outcome, detail = "SILENT", str(e)
    except CompiledError as e:
        outcome, detail = "error", str(e)
    except _Timeout:
        outcome, detail = "error", f"timeout after {per_case_s}s"
    except Exception as e:   # noqa: BLE001 -- a bug in the sweep itself, recorded
        outcome, detail = "sweep_bug", f"{type(e).__name__}: {e}"[:200] + traceback.format_exc()[-300:]
    finally:
        if per_case_s:
            signal.alarm(0)
    return outcome, detail, round(time.time() - t0, 2)


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def sweep_ops(names, n_samples, log, per_case_s=120, dtype=None):
    counts = Counter()
    for op, fn in op_table(names):
        try:
            cases = list(samples(op, n_samples, dtype))
        except Exception as e:   # noqa: BLE001 -- the sample generator itself fails
            log({"op": op_id(op), "mode": "*", "outcome": "eager_error", "detail": f"samples: {e}"[:200]})
            continue
        for mode in modes_of(op):
            for i, case in enumerate(cases):
                outcome, detail, secs = outcome_of(
                    lambda: check_op(op, fn, mode, case), per_case_s)
                counts[outcome] += 1
                log({"op": op_id(op), "mode": mode, "sample": i, "outcome": outcome, "detail": detail, "s": secs})
        tracegrad.compiler.reset()
    return counts


# ---- modules -----------------------------------------------------------------------------------

def module_table(names=None):
    from test_module_db import INFOS
    return [(info, cls) for info, cls in INFOS if not names or info.name in names]


def module_cases(info, cls, training):
    """(build() -> tracegrad module, Case of the forward's arguments, random) per module input."""
    from types import SimpleNamespace

    from test_module_db import _build, _inputs, _load, _random
    for mi in _inputs(info, training):
        fi = mi.forward_input
        try:
            random = _random(info, mi, training)
        except Exception:   # noqa: BLE001 -- torch rejects the input
            continue
        case = Case(SimpleNamespace(input=tuple(fi.args), args=(), kwargs=dict(fi.kwargs)))

        def build(mi=mi):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m_t, m_g, _ = _build(info, cls, mi, training)
                _load(m_t, m_g)
            return m_g
        yield build, case, random, mi.desc


def check_module(build, case, training, random):
    """A compiled training step (forward, backward of the float outputs' sum, SGD) against
    eager, ``CALLS`` calls: outputs, parameters, gradients, buffers and input gradients."""
    runs = []
    for compiled in (False, True):
        m = build()
        m.train(training)
        params = list(m.parameters())
        opt = tracegrad.optim.SGD(params, lr=0.1) if params else None
        fwd = case.bind(lambda inp, **kw: m(*inp, **kw))

        def step(*ts):
            if opt is not None:
                opt.zero_grad()
            y = fwd(*ts)
            loss = _loss(y)
            if loss is not None:
                loss.backward()
            if opt is not None:
                opt.step()
            return y
        f = tracegrad.compile(step, fullgraph=False) if compiled else step
        snaps = []
        tracegrad.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in range(CALLS):
                args = case.args(k, True)
                try:
                    y = f(*args)
                except Exception as e:   # noqa: BLE001
                    if not compiled:
                        raise Skip(f"eager raised {type(e).__name__}: {str(e)[:120]}") from None
                    raise CompiledError(f"call{k}: {type(e).__name__}: {str(e)[:300]}") from e
                snaps.append({"y": _snap(y), "grads": [_snap(a.grad) if a.requires_grad else None for a in args],
                              "params": [_snap(p) for p in m.parameters()],
                              "pgrads": [_snap(p.grad) for p in m.parameters()],
                              "buffers": [_snap(b) for b in m.buffers()], "training": m.training})
        runs.append((snaps, f))
    (eager, _), (comp, cf) = runs
    for k, (e, c) in enumerate(zip(eager, comp)):
        for part in ("y", "grads", "params", "pgrads", "buffers", "training"):
            same(e[part], c[part], f"call{k} {part}", not random,
                 *((GRAD_RTOL, GRAD_ATOL) if part != "y" else (RTOL, ATOL)))
    if cf.stats["graph_breaks"]:
        return "break", "; ".join(r for r, _ in cf.stats["graph_breaks"])[:200]
    return ("equal", "") if cf.stats["traces"] else ("break", "never traced")


def sweep_modules(names, log, per_case_s=120):
    counts = Counter()
    for info, cls in module_table(names):
        for training in (True, False):
            try:
                cases = list(module_cases(info, cls, training))
            except Exception as e:   # noqa: BLE001
                log({"module": info.name, "outcome": "eager_error", "detail": f"inputs: {e}"[:200]})
                continue
            for build, case, random, desc in cases:
                outcome, detail, secs = outcome_of(lambda: check_module(build, case, training, random), per_case_s)
                counts[outcome] += 1
                log({"module": info.name, "training": training, "input": desc, "outcome": outcome,
                     "detail": detail, "s": secs})
        tracegrad.compiler.reset()
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", default="", help="comma-separated OpInfo ids (default: all)")
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--dtype", default="", help="the samples' dtype (default: float32, else the first of "
                   "float64, int64, bool the op supports)")
    p.add_argument("--modules", action="store_true", help="sweep module_db instead of op_db")
    p.add_argument("--jsonl", default="", help="append one JSON line per case here")
    a = p.parse_args(argv)
    sink = open(a.jsonl, "a") if a.jsonl else None

    def log(rec):
        line = json.dumps(rec)
        print(line, flush=True)
        if sink:
            sink.write(line + "\n")
            sink.flush()
    if a.modules:
        counts = sweep_modules(set(filter(None, a.ops.split(","))), log)
    else:
        counts = sweep_ops(set(filter(None, a.ops.split(","))), a.samples, log,
                           dtype=getattr(torch, a.dtype) if a.dtype else None)
    print("summary:", dict(counts))


if __name__ == "__main__":
    main()
