"""tracegrad.utils.checkpoint and autograd.graph.save_on_cpu against torch 2.13.

Each ``program(torch, log)`` runs once with real torch and once with tracegrad; the logs
(tensor values, grad_fn names, warning texts, exception classes, hook order) must agree.
Tests ported from torch name the original in a comment (test/test_utils.py TestCheckpoint,
test/test_autograd.py TestAutograd / TestNestedCheckpoint / TestSelectiveActivationCheckpoint).
"""
import warnings

import jax
import numpy as np
import pytest

import tracegrad
from parity import torch_logger_restored


# ------------------------------------------------------------------------------ helpers

def _norm(v):
    if hasattr(v, "detach") and hasattr(v, "shape"):
        return ("tensor", tuple(v.shape), np.asarray(v.detach().numpy(), dtype=np.float64))
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def _same(a, b, where):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        assert isinstance(b, tuple) and b[0] == "tensor", where
        assert a[1] == b[1], where
        # atol: torch's CPU kernels round differently by CPU (a BatchNorm input gradient of 6e-4, a
        # cancellation of four terms, is 1.2e-6 off tracegrad's on one CPU and within 1e-6 on another)
        np.testing.assert_allclose(b[2], a[2], rtol=1e-5, atol=5e-6, err_msg=str(where))
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, (where, i))
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], (where, k))
    else:
        assert a == b, (where, a, b)


def run_both(program):
    """Run ``program(mod, log)`` with torch and tracegrad; their logs must agree."""
    torch = pytest.importorskip("torch")
    logs = []
    for mod in (torch, tracegrad):
        log = []
        program(mod, lambda *v: log.append(_norm(v[0] if len(v) == 1 else v)))
        logs.append(log)
    assert len(logs[0]) == len(logs[1]), (logs[0], logs[1])
    for i, (a, b) in enumerate(zip(*logs)):
        _same(a, b, i)
    return logs[1]


def T(mod, shape, seed, rg=False):
    a = np.random.RandomState(seed).standard_normal(shape).astype(np.float32)
    return mod.tensor(a, requires_grad=rg)


def raises(log, fn, *fragments):
    """Log the exception class ``fn()`` raises (None if it does not) and whether its message
    holds each fragment."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        log(type(e).__name__, [f in str(e) for f in fragments])
        return
    log(None)


def gname(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None


def mlp(nn, mod, seed=0, width=6):
    m = nn.Sequential(nn.Linear(5, width), nn.ReLU(), nn.Linear(width, width), nn.Tanh(),
                      nn.Linear(width, 3), nn.Sigmoid())
    rs = np.random.RandomState(seed)
    with mod.no_grad():
        for p in m.parameters():
            p.copy_(mod.tensor(rs.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return m


def grads(params):
    return [None if p.grad is None else p.grad.clone() for p in params]


# ----------------------------------------------------------- values and grads, both modes

def program_checkpoint_sequential_forms(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint + test_checkpoint_module_list:
    # nn.Sequential, a list of its children and an nn.ModuleList give the plain model's grads
    ck = torch.utils.checkpoint
    for use_reentrant in (True, False):
        model = mlp(torch.nn, torch)
        x = T(torch, (4, 5), 1, rg=True)
        out = model(x)
        out.sum().backward()
        ref = grads(list(model.parameters()) + [x])
        ml = torch.nn.ModuleList(list(model.children()))
        for form in (model, list(model.children()), ml):
            model.zero_grad()
            xd = x.detach()
            xd.requires_grad = True
            o = ck.checkpoint_sequential(form, 2, xd, use_reentrant=use_reentrant)
            log("out", o)
            log("grad_fn", gname(o))
            o.sum().backward()
            got = grads(list(model.parameters()) + [xd])
            log("grads", got)
            log("equal plain", all(bool(torch.equal(a, b)) for a, b in zip(got, ref)))


def test_checkpoint_sequential_forms():
    run_both(program_checkpoint_sequential_forms)


def program_checkpoint_trigger(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint_trigger: the checkpointed half runs twice
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.counter = 0

        def forward(self, x):
            self.counter += 1
            return x * torch.tensor(2.0)

    for use_reentrant in (True, False):
        modules = [Net() for _ in range(10)]
        x = T(torch, (3, 4), 2, rg=True)
        out = torch.utils.checkpoint.checkpoint_sequential(modules, 2, x, use_reentrant=use_reentrant)
        log("after forward", [m.counter for m in modules])
        out.sum().backward()
        log("after backward", [m.counter for m in modules])
        log("x.grad", x.grad)


def test_checkpoint_trigger():
    run_both(program_checkpoint_trigger)


def program_checkpoint_valid(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint_valid: autograd.grad refuses the reentrant
    # variant and works with use_reentrant=False (create_graph=True), with equal grads
    ck = torch.utils.checkpoint
    model = mlp(torch.nn, torch)
    modules = list(model.children())
    x = T(torch, (1, 5), 3, rg=True)
    out = ck.checkpoint_sequential(modules, 2, x, use_reentrant=True)
    raises(log, lambda: torch.autograd.grad([out], [x], [torch.ones(1, 3)], create_graph=True),
           "torch.utils.checkpoint is incompatible")
    out = ck.checkpoint(model, x, use_reentrant=True)
    raises(log, lambda: out.sum().backward(inputs=[x]), "incompatible with .grad()")
    ref = torch.autograd.grad([model(x)], [x], [torch.ones(1, 3)], create_graph=True)
    out = ck.checkpoint_sequential(modules, 2, x, use_reentrant=False)
    got = torch.autograd.grad([out], [x], [torch.ones(1, 3)], create_graph=True)
    log("grads", got)
    log("equal", bool(torch.equal(got[0], ref[0])))
    log("create_graph grad requires grad", got[0].requires_grad)


def test_checkpoint_valid():
    run_both(program_checkpoint_valid)


def program_checkpoint_sequential_bad_args(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint_sequential_deprecated_multiple_args / _no_args
    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a, b

    a, b = T(torch, (1, 4), 4, rg=True), T(torch, (1, 4), 5, rg=True)
    for use_reentrant in (True, False):
        raises(log, lambda: torch.utils.checkpoint.checkpoint_sequential(
            torch.nn.Sequential(Two()), 1, a, b, use_reentrant=use_reentrant))
        raises(log, lambda: torch.utils.checkpoint.checkpoint_sequential(torch.nn.Sequential(Two()), 1))
    raises(log, lambda: torch.utils.checkpoint.checkpoint_sequential(
        [torch.nn.Tanh()], 1, a, use_reentrant=False, foo=1), "Unexpected keyword arguments: foo")


def test_checkpoint_sequential_bad_args():
    run_both(program_checkpoint_sequential_bad_args)


def program_non_tensor_io(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint_non_tensor, _non_tensor_inputs_outputs,
    # _no_tensors and _partial_grad
    ck = torch.utils.checkpoint

    def run_fn(t1, t2):
        return t1 if t2 is None else t1 + t2

    x = T(torch, (1, 4), 6, rg=True)
    ck.checkpoint(run_fn, x, None, use_reentrant=True).sum().backward()
    log("non_tensor x.grad", x.grad)

    def foo(t1, t2, scale, t3):
        t4 = t1 + t2 * t3
        t5 = t1 * t2 + t3
        t4 *= scale
        t5 *= scale
        return scale, t4, None, True, t5, "bar", t1

    t1, t2, t3 = T(torch, (5,), 7, rg=True), T(torch, (5,), 8, rg=True), T(torch, (5,), 9)
    res = ck.checkpoint(foo, t1, t2, 3, t3, use_reentrant=True)
    log("res", [r if not hasattr(r, "shape") else r for r in res])
    log("grad_fns", [gname(r) if hasattr(r, "grad_fn") else None for r in res])
    res[1].sum().backward(retain_graph=True)
    res[4].sum().backward(retain_graph=True)
    res[6].sum().backward()
    raises(log, lambda: res[6].sum().backward(), "Trying to backward through the graph a second time")
    log("t1.grad", t1.grad)
    log("t2.grad", t2.grad)

    res = ck.checkpoint(foo, 0.5, 0.25, 3, 2.0, use_reentrant=True)
    log("no tensors", list(res))

    x, y = T(torch, (1, 4), 10, rg=True), T(torch, (1, 4), 11)
    out = ck.checkpoint(lambda a, b: (a, b), x, y, use_reentrant=True)
    out[0].sum().backward()
    log("partial", x.grad)
    x, y = T(torch, (1, 4), 10), T(torch, (1, 4), 11, rg=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ck.checkpoint(lambda a, b: a, x, y, use_reentrant=True)
    log("identity output requires grad", out.requires_grad)
    raises(log, lambda: out.sum().backward(), "none of output has requires_grad=True")


def test_non_tensor_io():
    run_both(program_non_tensor_io)


def program_reentrant_containers_and_modes(torch, log):
    # the reentrant variant runs forward under no_grad: outputs in containers do not require
    # grad; the recomputation runs with grad enabled on detached inputs
    x = T(torch, (3,), 12, rg=True)
    modes = []

    def fn(t):
        modes.append((torch.is_grad_enabled(), t.requires_grad, t.grad_fn is None))
        return t.sin(), [t * 2], {"k": t * 3}, 7

    out, lst, dct, n = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=True)
    log("requires_grad", [out.requires_grad, lst[0].requires_grad, dct["k"].requires_grad, n])
    log("grad_fn", gname(out))
    out.sum().backward()
    log("modes", modes)
    log("x.grad", x.grad)


def test_reentrant_containers_and_modes():
    run_both(program_reentrant_containers_and_modes)


# --------------------------------------------------------------------- warnings and errors

def program_warnings_and_errors(torch, log):
    ck = torch.utils.checkpoint
    x = T(torch, (3,), 13, rg=True)
    for call in (lambda: ck.checkpoint(torch.sin, x),
                 lambda: ck.checkpoint_sequential([torch.nn.Tanh()], 1, x),
                 lambda: ck.checkpoint(torch.sin, T(torch, (3,), 1), use_reentrant=True),
                 lambda: ck.checkpoint(torch.sin, T(torch, (3,), 1), use_reentrant=False)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            call()
        log("warnings", [(m.category.__name__, str(m.message)) for m in w])
    raises(log, lambda: ck.checkpoint(torch.sin, x, use_reentrant=True, foo=1), "Unexpected keyword arguments: foo")
    raises(log, lambda: ck.checkpoint(torch.sin, x, use_reentrant=True, debug=True),
           "Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    raises(log, lambda: ck.checkpoint(torch.sin, x, use_reentrant=True,
                                      context_fn=lambda: ck.noop_context_fn()), "only supported")
    raises(log, lambda: ck.checkpoint(torch.sin, x, use_reentrant=False, determinism_check="x"),
           "determinism_check should be one of ['default', 'none'], but got x")
    raises(log, lambda: ck.checkpoint(torch.sin, x, use_reentrant=False, debug=True,
                                      context_fn=lambda: ck.noop_context_fn()),
           "debug=True is incompatible with non-default context_fn")
    log("CheckpointError is RuntimeError", issubclass(ck.CheckpointError, RuntimeError))
    raises(log, lambda: ck.detach_variable([x]), "Only tuple of tensors is supported")
    d = ck.detach_variable((x, 3))
    log("detach_variable", [d[0].requires_grad, d[0].grad_fn is None, d[1]])


def test_warnings_and_errors():
    run_both(program_warnings_and_errors)


# ------------------------------------------------------------------- use_reentrant=False

def program_nonreentrant_grad_fn_and_kwargs(torch, log):
    # the recorded graph is the function's own: the output's grad_fn is its last op;
    # keyword arguments reach the function; no-grad mode just runs it
    ck = torch.utils.checkpoint
    w = T(torch, (3,), 14, rg=True)
    x = T(torch, (3,), 15, rg=True)

    def fn(a, *, scale, bias=None):
        h = (a.sin() * w).exp()
        return h * scale + (0 if bias is None else bias)

    out = ck.checkpoint(fn, x, use_reentrant=False, scale=T(torch, (3,), 16), bias=1.5)
    log("grad_fn", gname(out))
    log("out", out)
    out.sum().backward()
    log("grads", [x.grad, w.grad])
    with torch.no_grad():
        out = ck.checkpoint(fn, x, use_reentrant=False, scale=2.0)
    log("no_grad", [out.requires_grad, out])


def test_nonreentrant_grad_fn_and_kwargs():
    run_both(program_nonreentrant_grad_fn_and_kwargs)


def program_inputs_without_grad_params_inside(torch, log):
    # the classic difference: with no input requiring grad, the reentrant checkpoint's output
    # has no history (a warning; parameters inside get no gradient), the non-reentrant one's does
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(T(torch, (2, 3), 41))
        lin.bias.copy_(T(torch, (2,), 42))
    x = T(torch, (4, 3), 43)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = torch.utils.checkpoint.checkpoint(lin, x, use_reentrant=True)
    log("reentrant", [out.requires_grad, [str(m.message) for m in w]])
    raises(log, lambda: out.sum().backward(), "does not require grad")
    out = torch.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
    log("non-reentrant", [out.requires_grad, gname(out)])
    out.sum().backward()
    log("param grads", [lin.weight.grad, lin.bias.grad])


def test_inputs_without_grad_params_inside():
    run_both(program_inputs_without_grad_params_inside)


def program_nonreentrant_correct_grad(torch, log):
    # test_autograd.py test_checkpointing_without_reentrant_correct_grad: backward and
    # autograd.grad through a checkpoint give the plain gradient
    a = T(torch, (2,), 17, rg=True)
    b = torch.exp(a).sum()
    b.backward()
    ref = a.grad
    a.grad = None
    c = torch.utils.checkpoint.checkpoint(torch.exp, a, use_reentrant=False).sum()
    c.backward()
    log("backward", [a.grad, bool(torch.allclose(a.grad, ref))])
    c = torch.utils.checkpoint.checkpoint(torch.exp, a, use_reentrant=False).sum()
    (g,) = torch.autograd.grad(c, a)
    log("grad", [g, bool(torch.allclose(g, ref))])


def test_nonreentrant_correct_grad():
    run_both(program_nonreentrant_correct_grad)


def program_nonreentrant_arbitrary_io(torch, log):
    # test_autograd.py test_checkpointing_without_reentrant_arbitrary_input_output and the
    # seed's container outputs: a dict in, a dict/list/non-tensor out, all differentiable
    lin = torch.nn.Linear(4, 4)
    with torch.no_grad():
        lin.weight.copy_(T(torch, (4, 4), 18))
        lin.bias.copy_(T(torch, (4,), 19))

    def fn(d):
        h = lin(d["x"]).relu()
        return {"h": h, "pair": [h.sigmoid(), "tag"], "n": 3}

    x = T(torch, (2, 4), 20, rg=True)
    out = torch.utils.checkpoint.checkpoint(fn, {"x": x}, use_reentrant=False)
    log("out", [out["h"], out["pair"][0], out["pair"][1], out["n"]])
    log("requires_grad", [out["h"].requires_grad, out["pair"][0].requires_grad])
    (out["h"].sum() + out["pair"][0].sum()).backward()
    log("grads", [x.grad, lin.weight.grad, lin.bias.grad])


def test_nonreentrant_arbitrary_io():
    run_both(program_nonreentrant_arbitrary_io)


def program_nonreentrant_parameter_used_in_an_out(torch, log):
    # test_autograd.py test_checkpointing_without_reentrant_parameter_used_in_an_out: a
    # closed-over parameter that is also returned, and used again outside
    w = T(torch, (10, 10), 21, rg=True)
    x = T(torch, (10, 10), 22, rg=True)

    def f(x):
        return x * w, w

    out, w_out = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    (out.sum() + (w_out * 2).sum()).backward()
    log("grads", [x.grad, w.grad])
    log("w_out is w", w_out is w)


def test_nonreentrant_parameter_used_in_an_out():
    run_both(program_nonreentrant_parameter_used_in_an_out)


def program_nonreentrant_detached_and_custom_function(torch, log):
    # test_autograd.py test_checkpointing_without_reentrant_detached_tensor and
    # test_checkpointing_without_reentrant_custom_function_works: a detached intermediate;
    # a custom Function inside whose saved tensors are recomputed (a second access in the
    # same backward raises CheckpointError)
    ck = torch.utils.checkpoint
    x = T(torch, (3,), 23, rg=True)

    def fn(a):
        d = a.detach().cos()        # no history, still saved by the mul below
        return (a * d).sin()

    ck.checkpoint(fn, x, use_reentrant=False).sum().backward()
    log("detached", x.grad)

    second = []

    class MyFunc(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            w = a * b * c
            out = w + w
            ctx.save_for_backward(a, b, c, w, out)
            return out

        @staticmethod
        def backward(ctx, g):
            a, b, c, w, out = ctx.saved_tensors
            try:
                ctx.saved_tensors
                second.append(None)
            except Exception as e:  # noqa: BLE001
                second.append((type(e).__name__, "already unpacked once" in str(e)))
            return g * b * c, g * a * c, g * a * b + w * 0 + out * 0

    a, b, c = T(torch, (3,), 24, rg=True), T(torch, (3,), 25, rg=True), T(torch, (3,), 26, rg=True)

    def foo(a, b, c):
        return MyFunc.apply(a * b * c, b * b * c, c * c)

    out = ck.checkpoint(foo, a, b, c, use_reentrant=False)
    log("grad_fn", gname(out))
    out.sum().backward()
    log("second access", second)
    log("grads", [a.grad, b.grad, c.grad])


def test_nonreentrant_detached_and_custom_function():
    run_both(program_nonreentrant_detached_and_custom_function)


def program_nested(torch, log):
    # test_autograd.py TestNestedCheckpoint.test_nested_checkpoint: any nesting of
    # non-reentrant checkpoints gives the plain gradients, with backward and autograd.grad
    ck = torch.utils.checkpoint

    def f(x):
        return x.sin().exp().sin()

    def g(x):
        return x.cos().sin().exp()

    def c(fn):
        return lambda *args: ck.checkpoint(fn, *args, use_reentrant=False)

    variants = {
        "plain": lambda x: g(f(x)),
        "outer": c(lambda x: g(f(x))),
        "inner": lambda x: c(g)(c(f)(x)),
        "both": c(lambda x: c(g)(c(f)(x))),
        "deep": c(lambda x: c(lambda y: c(g)(y))(c(f)(x))),
    }
    for name, fn in variants.items():
        x = T(torch, (4,), 27, rg=True)
        out = fn(x)
        (gx,) = torch.autograd.grad(out.sum(), x)
        fn(x).sum().backward()
        log(name, [gx, x.grad])


def test_nested():
    run_both(program_nested)


def program_retain_graph_and_saved_access(torch, log):
    # two backward calls over one checkpoint (retain_graph) recompute once each; reading a
    # grad_fn._saved_* attribute outside backward recomputes too
    calls = []
    x = T(torch, (3,), 28, rg=True)

    def fn(a):
        calls.append(1)
        return a.sin() * a.cos()

    for use_reentrant in (True, False):
        calls.clear()
        x.grad = None
        out = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=use_reentrant)
        out.sum().backward(retain_graph=True)
        out.sum().backward()
        log("calls", len(calls))
        log("x.grad", x.grad)
    calls.clear()
    out = torch.utils.checkpoint.checkpoint(lambda a: (calls.append(1), a.exp())[1], x, use_reentrant=False)
    log("saved result", out.grad_fn._saved_result)
    log("saved result again", out.grad_fn._saved_result)
    log("calls", len(calls))


def test_retain_graph_and_saved_access():
    run_both(program_retain_graph_and_saved_access)


def program_early_stop(torch, log):
    # test_autograd.py test_checkpointing_without_reentrant_early_free / early stop: the
    # recomputation stops after the last saved tensor, unless set_checkpoint_early_stop(False)
    ck = torch.utils.checkpoint
    for early in (True, False):
        marks = []
        x = T(torch, (3,), 29, rg=True)

        def fn(a):
            marks.append("start")
            b = a.sin()
            marks.append("after sin")
            c = b.exp()
            marks.append("after exp")
            return c * 2 + 1

        with ck.set_checkpoint_early_stop(early):
            out = ck.checkpoint(fn, x, use_reentrant=False)
        out.sum().backward()
        log(f"early={early}", marks)
        log("grad", x.grad)


def test_early_stop():
    run_both(program_early_stop)


def program_determinism_check(torch, log):
    # test_autograd.py test_checkpoint_detects_non_determinism: a recomputation that saves
    # tensors of another shape, or more tensors, raises CheckpointError unless
    # determinism_check="none"
    ck = torch.utils.checkpoint

    def make(change):
        state = {"n": 0}

        def fn(a):
            state["n"] += 1
            if change == "shape" and state["n"] > 1:
                a = a.repeat(2)
            b = a.sin()
            if change == "more" and state["n"] > 1:
                b = b.exp()
            return b.sum() if change != "more" else b.sum()
        return fn

    for change in ("shape", "more"):
        for check in ("default", "none"):
            x = T(torch, (3,), 30, rg=True)
            with ck.set_checkpoint_early_stop(False):
                out = ck.checkpoint(make(change), x, use_reentrant=False, determinism_check=check)
            if change == "shape" and check == "none":
                continue   # backward would use a wrong-shaped saved tensor: nothing to compare
            raises(log, lambda: out.backward(), "torch.utils.checkpoint:")


def test_determinism_check():
    run_both(program_determinism_check)


def program_debug_message(torch, log):
    ck = torch.utils.checkpoint
    n = [0]

    def fn(a):
        n[0] += 1
        return (a.repeat(2) if n[0] > 1 else a).sin().sum()

    x = T(torch, (3,), 31, rg=True)
    with torch_logger_restored(torch):
        with ck.set_checkpoint_debug_enabled(True):
            out = ck.checkpoint(fn, x, use_reentrant=False)
        raises(log, lambda: out.backward(), "original forward", "recomputation")


def test_debug_message():
    run_both(program_debug_message)


def program_double_backward(torch, log):
    # torch's unpack gives a hook's (detached) result the saved tensor's place in the graph:
    # double backward works through a non-reentrant checkpoint and through save_on_cpu, and a
    # recomputed saved output keeps its grad_fn
    x = T(torch, (3,), 40, rg=True)
    for name, f in (("sin", lambda a: a.sin()), ("exp", lambda a: a.exp()), ("sq", lambda a: (a * a).sum())):
        for how in ("checkpoint", "save_on_cpu"):
            x.grad = None
            if how == "checkpoint":
                y = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
            else:
                with torch.autograd.graph.save_on_cpu():
                    y = f(x)
            (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
            log(f"{name} {how} grad", [g, g.requires_grad, gname(g)])
            g.sum().backward()
            log(f"{name} {how} second order", x.grad)
    y = torch.utils.checkpoint.checkpoint(torch.exp, x, use_reentrant=False)
    saved = y.grad_fn._saved_result
    log("saved result", [saved, gname(saved), saved.requires_grad])


def test_double_backward():
    run_both(program_double_backward)


# ----------------------------------------------------------------------------------- RNG

def program_rng(torch, log):
    # test_utils.py TestCheckpoint.test_checkpoint_rng_cpu (+ the non-reentrant variant): with
    # preserve_rng_state the recomputed dropout mask equals the forward's; masks differ between
    # torch and tracegrad, so only agreement with the un-checkpointed run is compared
    for use_reentrant in (True, False):
        x = T(torch, (200,), 32, rg=True)
        phase1, phase2 = torch.nn.Dropout(), torch.nn.Dropout()
        torch.manual_seed(5)
        out = torch.utils.checkpoint.checkpoint(phase2, phase1(x), use_reentrant=use_reentrant)
        out.sum().backward()
        g_ck, x.grad = x.grad, None
        after_ck = torch.rand(3)
        torch.manual_seed(5)
        out2 = phase2(phase1(x))
        out2.sum().backward()
        after_plain = torch.rand(3)
        log("out equal", bool(torch.equal(out, out2)))
        log("grad equal", bool(torch.equal(g_ck, x.grad)))
        # the recomputation leaves the generator where the forward left it
        log("generator state after backward", bool(torch.equal(after_ck, after_plain)))
        out = torch.utils.checkpoint.checkpoint(phase2, x, use_reentrant=use_reentrant,
                                                preserve_rng_state=False)
        out.sum().backward()
        log("preserve_rng_state=False runs", tuple(out.shape))


def test_rng():
    run_both(program_rng)


# ------------------------------------------------------------------ saved-tensor hooks

def _counting_hooks(torch, events, tag):
    def pack(t):
        events.append((tag, "pack", tuple(t.shape)))
        return t

    def unpack(t):
        events.append((tag, "unpack", tuple(t.shape)))
        return t
    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def program_hooks_around_and_inside(torch, log):
    # saved_tensors_hooks around a checkpoint see only its tensor inputs (once each); hooks
    # entered inside the checkpointed function are innermost and see its saves
    ck = torch.utils.checkpoint
    w = T(torch, (3,), 33, rg=True)
    for use_reentrant in (True, False):
        events = []
        x, y = T(torch, (3,), 34, rg=True), T(torch, (2, 3), 35, rg=True)

        def fn(a, b):
            h = (a.sin() * w).exp()
            with _counting_hooks(torch, events, "inner"):
                k = h * b
            return k.tanh()

        with _counting_hooks(torch, events, "outer"):
            out = ck.checkpoint(fn, x, y, use_reentrant=use_reentrant)
            events.append("forward done")
        out.sum().backward()
        log(f"reentrant={use_reentrant}", events)
        log("grads", [x.grad, y.grad, w.grad])


def test_hooks_around_and_inside():
    run_both(program_hooks_around_and_inside)


def program_save_on_cpu(torch, log):
    # save_on_cpu around a plain graph and around a checkpoint: its pack/unpack counts and
    # order, values and grads; pin_memory=True packs a copy, pin_memory=False the tensor
    ck = torch.utils.checkpoint
    for use_ck in (None, True, False):
        events = []
        s = torch.autograd.graph.save_on_cpu()
        pack, unpack = s.pack_hook, s.unpack_hook
        s.pack_hook = lambda t: (events.append(("pack", tuple(t.shape))), pack(t))[1]
        s.unpack_hook = lambda p: (events.append(("unpack",)), unpack(p))[1]
        x = T(torch, (2, 3), 36, rg=True)

        def fn(a):
            return (a.sin() * a).exp()
        with s:
            out = fn(x) if use_ck is None else ck.checkpoint(fn, x, use_reentrant=use_ck)
        out.sum().backward()
        log(f"checkpoint={use_ck}", events)
        log("x.grad", x.grad)
    for pin in (False, True):
        a = T(torch, (3,), 37, rg=True)
        b = a * 1
        with torch.autograd.graph.save_on_cpu(pin_memory=pin):
            c = b * b
        with torch.no_grad():
            b.add_(1)
        c.sum().backward()
        log(f"pin_memory={pin} grad", a.grad)


def test_save_on_cpu():
    run_both(program_save_on_cpu)


# --------------------------------------------------------- selective activation checkpoint

def program_selective(torch, log):
    # test_autograd.py TestSelectiveActivationCheckpoint (policy list / policy fn): keeping mm
    # outputs gives the plain gradients; ops are torch.ops objects in torch, names here
    ck = torch.utils.checkpoint
    mm = torch.ops.aten.mm.default if hasattr(torch, "ops") else "mm"
    calls = []
    x, y = T(torch, (4, 4), 38, rg=True), T(torch, (4, 4), 39, rg=True)

    def fn(a, b):
        calls.append(1)
        return torch.sigmoid(torch.matmul(torch.matmul(a, b), b)) * b

    ref = torch.autograd.grad(fn(x, y).sum(), (x, y))

    def policy(ctx, op, *args, **kwargs):
        return ck.CheckpointPolicy.MUST_SAVE if op == mm else ck.CheckpointPolicy.PREFER_RECOMPUTE

    for how in ([mm], policy):
        ctx_fn = lambda: ck.create_selective_checkpoint_contexts(how)  # noqa: E731
        out = ck.checkpoint(fn, x, y, use_reentrant=False, context_fn=ctx_fn)
        got = torch.autograd.grad(out.sum(), (x, y))
        log("grads", list(got))
        log("equal plain", [bool(torch.allclose(a, b)) for a, b in zip(got, ref)])
    raises(log, lambda: ck.create_selective_checkpoint_contexts(3), "policy_fn_or_list must be")
    raises(log, lambda: ck.create_selective_checkpoint_contexts([3]), "Expected op in `op_list`")
    log("policies", [p.name for p in ck.CheckpointPolicy])


def test_selective():
    run_both(program_selective)


def test_selective_keeps_chosen_outputs_and_refuses_mutation():
    """tracegrad only: the tensors a policy keeps are held by the graph (not recomputed into
    it), the rest are recomputed, gradients are unchanged; a kept tensor changed in place
    raises at backward (torch's RuntimeError) unless allow_cache_entry_mutation."""
    ck = tracegrad.utils.checkpoint
    x = tracegrad.tensor(np.random.RandomState(1).standard_normal((3, 3)), requires_grad=True)

    def fn(a):
        return (a @ a).sin().exp()

    fn(x).sum().backward()
    ref, x.grad = x.grad.clone(), None
    for how, kept in ((["aten.mm.default"], (False, True)), (lambda ctx, op: True, (True, True)),
                      (lambda ctx, op: ck.CheckpointPolicy.PREFER_CPU_OFFLOAD, (True, True)),
                      (["add"], (False, False))):
        out = ck.checkpoint(fn, x, use_reentrant=False,
                            context_fn=lambda: ck.create_selective_checkpoint_contexts(how))
        exp_node = out.grad_fn
        sin_node = exp_node.next_functions[0][0]
        assert (exp_node._raw_saved_result.packed.kept is not None,
                sin_node._raw_saved_self.packed.kept is not None) == kept
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ref.numpy(), rtol=1e-12)
        x.grad = None

    def fn2(a):
        h = a @ a
        s = h.sin()
        h.mul_(2)   # changes the kept mm output that sin saved
        return s
    out = ck.checkpoint(fn2, x, use_reentrant=False,
                        context_fn=lambda: ck.create_selective_checkpoint_contexts(["mm"]))
    with pytest.raises(RuntimeError, match="mutated"):
        out.sum().backward()
    out = ck.checkpoint(fn2, x, use_reentrant=False,
                        context_fn=lambda: ck.create_selective_checkpoint_contexts(
                            ["mm"], allow_cache_entry_mutation=True))
    out.sum().backward()
    with pytest.raises(TypeError, match="CheckpointPolicy or a bool"):
        ck.checkpoint(fn, x, use_reentrant=False,
                      context_fn=lambda: ck.create_selective_checkpoint_contexts(lambda ctx, op: "save"))


# ------------------------------------------------------------------------- under a trace

def _mlp_step(x, w1, w2, use_reentrant):
    def block(h, w):
        return tracegrad.nn.functional.gelu(h @ w).tanh()

    ck = tracegrad.utils.checkpoint
    h = ck.checkpoint(block, x, w1, use_reentrant=use_reentrant)
    h = ck.checkpoint(block, h, w2, use_reentrant=use_reentrant)
    loss = (h ** 2).mean()
    loss.backward()
    return loss


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_runs_under_jit(use_reentrant):
    """The checkpoint path is plain Python over Tensors: inside jax.jit (tensors holding
    tracers) it gives eager's loss and gradients."""
    rs = np.random.RandomState(0)
    arrays = [rs.standard_normal(s) * 0.5 for s in ((4, 3), (3, 3), (3, 3))]

    def run(xa, w1a, w2a):
        x = tracegrad.Tensor._make(xa)
        w1, w2 = (tracegrad.Tensor._make(a).requires_grad_() for a in (w1a, w2a))
        loss = _mlp_step(x, w1, w2, use_reentrant)
        return [loss._value, w1.grad._value, w2.grad._value]

    eager = run(*[jax.numpy.asarray(a) for a in arrays])
    jitted = jax.jit(run)(*[jax.numpy.asarray(a) for a in arrays])
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5, atol=1e-7)  # float32, fused


def program_early_stop_batch_norm(torch, log):
    # a segment that ends in a training BatchNorm (timm's checkpoint_seq over conv-bn stages):
    # the recomputation stops at the normalisation's saved tensors, after torch's kernel updated
    # the running statistics, so they are updated twice (as num_batches_tracked), with
    # early stop on and off
    ck = torch.utils.checkpoint
    for early in (True, False):
        lin, bn = torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)
        with torch.no_grad():
            lin.weight.copy_(torch.tensor([[1.0, 0.5], [0.2, -1.0]]))
            lin.bias.zero_()
        x = T(torch, (4, 2), 31, rg=True)
        with ck.set_checkpoint_early_stop(early):
            out = ck.checkpoint(lambda a: bn(lin(a)), x, use_reentrant=False)
        out.pow(2).sum().backward()
        log(f"early={early} stats", (bn.running_mean, bn.running_var, bn.num_batches_tracked))
        log(f"early={early} grad", x.grad)


def test_early_stop_batch_norm_updates_running_stats():
    run_both(program_early_stop_batch_norm)


def program_early_stop_frees_recomputed_function_outputs(torch, log):
    # test_autograd.py TestAutograd.test_custom_autograd_ac_early_stop: a custom Function that
    # saves its own output; the recomputation stops inside its save, and with the garbage
    # collector off that abandoned output must still be freed (no node <-> output cycle)
    import gc
    import weakref
    refs = []

    class Clone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.clone()
            ctx.save_for_backward(y)
            refs.append(weakref.ref(y))
            return y

        @staticmethod
        def backward(ctx, *args):
            _ = ctx.saved_tensors
            return None

    inp = T(torch, (3,), 40, rg=True)

    def scope():
        out = torch.utils.checkpoint.checkpoint(Clone.apply, inp, use_reentrant=False)
        out.sum().backward()

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        scope()
        log("freed", [r() is None for r in refs])
    finally:
        if was_enabled:
            gc.enable()


def test_early_stop_frees_recomputed_function_outputs():
    run_both(program_early_stop_frees_recomputed_function_outputs)
