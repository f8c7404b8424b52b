"""NOTE: the programs that followed PyTorch's test/test_utils.py and test/test_autograd.py checkpoint
tests statement for statement (the same code and literals, lightly edited, asserts turned into logs)
were removed with their tests (a public repository's code stays out of this project's commits); what
remains is the tests written here. The text below describes the file as it was.

tracegrad.utils.checkpoint and autograd.graph.save_on_cpu against torch 2.13.

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


# ----------------------------------------------------------- values and grads, both modes


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


