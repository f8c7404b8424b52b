"""Hooks inside or outside a compiled function run on every call, with that call's values,
in eager order: tensor hooks (returning a new grad or None), retain_grad, Node pre/post hooks,
post-accumulate-grad hooks, module forward pre-/forward hooks that replace inputs/outputs,
full backward hooks, and hooks with Python side effects (counters, ``.item()`` into a list,
print, stashing ``output.detach()``)."""
import pytest

import tracegrad

from ._harness import check_compiled, check_torch, data, np_init


def program(outside=None, inside=None, opt=True):
    """A 3-4-2 MLP step; ``outside(mod, model, log, stash)`` registers hooks once before the
    first call, ``inside(mod, model, h, loss, log, stash)`` runs inside the step after the
    forward (``h`` is the hidden activation)."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        sgd = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        log, stash = [], {}
        if outside is not None:
            outside(mod, model, log, stash)

        def step(x, y):
            sgd.zero_grad()
            h = model[1](model[0](x))
            out = model[2](h)
            loss = mod.nn.functional.mse_loss(out, y)
            if inside is not None:
                inside(mod, model, h, loss, log, stash)
            loss.backward()
            if opt:
                sgd.step()
            return loss
        return wrap(step), {"model": model, "opt": sgd, "log": log, "stash": stash}, \
            lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    return make


def _tensor_hook_new_grad(mod, model, h, loss, log, stash):
    h.register_hook(lambda g: g * 2.0)
    h.register_hook(lambda g: log.append(("h", round(g.abs().sum().item(), 5))))


def _retain_grad(mod, model, h, loss, log, stash):
    h.retain_grad()
    stash["h"] = h


def _node_hooks(mod, model, h, loss, log, stash):
    loss.grad_fn.register_prehook(lambda go: log.append(("pre", round(go[0].item(), 5))))
    loss.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi))))


def _post_accumulate(mod, model, log, stash):
    for n, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, n=n: log.append((n, round(p.grad.abs().sum().item(), 5))))


def _module_hooks(mod, model, log, stash):
    model[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 0.5,))
    model[2].register_forward_hook(lambda m, inp, out: out + 1.0)

    def bw(m, gin, gout):
        log.append(("bw", round(gout[0].abs().sum().item(), 5)))
    model[2].register_full_backward_hook(bw)


def _side_effects(mod, model, log, stash):
    counter = [0]

    def fwd(m, inp, out):
        counter[0] += 1
        stash["out"] = out.detach()
        stash["count"] = counter[0]
        log.append(("mean", round(out.mean().item(), 5)))
        print("forward", counter[0])
    model[0].register_forward_hook(fwd)


HOOKS = {
    "tensor_hook_new_grad": dict(inside=_tensor_hook_new_grad),
    "retain_grad": dict(inside=_retain_grad),
    "node_pre_post_hooks": dict(inside=_node_hooks),
    "post_accumulate_grad_hook": dict(outside=_post_accumulate),
    "module_forward_pre_forward_full_backward": dict(outside=_module_hooks),
    "python_side_effects": dict(outside=_side_effects),
}


TORCH_PARITY = ("tensor_hook_new_grad", "module_forward_pre_forward_full_backward")


@pytest.mark.parametrize("name", list(HOOKS))
def test_hook_runs_every_call(name):
    run = check_compiled(program(**HOOKS[name]), calls=3, torch_too=name in TORCH_PARITY)
    log = run.state["log"]
    if name not in ("retain_grad",):
        assert len(log) >= 3            # once per call at least
        assert log == run.eager.state["log"]


def test_side_effect_hook_prints_every_call(capsys):
    check_compiled(program(**HOOKS["python_side_effects"]), calls=3)
    out = capsys.readouterr().out
    assert out.count("forward 3") == 2          # eager run and compiled run both reach call 3


def test_stashed_output_is_current_call_value():
    run = check_compiled(program(**HOOKS["python_side_effects"]), calls=3)
    stash = run.state["stash"]
    assert stash["count"] == 3
    assert isinstance(stash["out"], tracegrad.Tensor)


def test_hook_order_tensor_node_accumulate():
    """Eager order across kinds: tensor hook on the loss input, node hooks, post-accumulate."""
    def outside(mod, model, log, stash):
        model[0].weight.register_hook(lambda g: log.append("w.hook"))
        model[0].weight.register_post_accumulate_grad_hook(lambda p: log.append("w.acc"))

    def inside(mod, model, h, loss, log, stash):
        h.register_hook(lambda g: log.append("h.hook"))
        loss.grad_fn.register_prehook(lambda go: log.append("loss.pre"))
    run = check_compiled(program(outside=outside, inside=inside), calls=3)
    assert run.state["log"][:4] == ["loss.pre", "h.hook", "w.hook", "w.acc"]


def test_hook_inside_fullgraph_raises_clear_error():
    def inside(mod, model, h, loss, log, stash):
        h.register_hook(lambda g: log.append(g.sum().item()))
    make = program(inside=inside)
    step, state, batch = make(tracegrad, lambda f: tracegrad.compile(f, fullgraph=True))
    with pytest.raises(RuntimeError, match="hook"):
        for i in range(2):                   # at the latest when the second call traces
            step(*batch(i))


def forward_only_param_hooks(ordered):
    """Hooks on parameters run in the backward outside a compiled forward; ``ordered`` logs
    post-accumulate hooks in one list (order observable), else per parameter."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        log = [] if ordered else {}
        model[0].weight.register_hook(lambda g: g * 3.0)
        for n, p in model.named_parameters():
            if ordered:
                p.register_post_accumulate_grad_hook(lambda p, n=n: log.append(n))
            else:
                p.register_post_accumulate_grad_hook(
                    lambda p, n=n: log.setdefault(n, []).append(round(p.grad.sum().item(), 4)))
        f = wrap(lambda x, y: mod.nn.functional.mse_loss(model(x), y))

        def step(x, y):
            loss = f(x, y)
            loss.backward()
            return loss
        step.compiled = f
        return step, {"model": model, "log": log}, lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300))
    return make


def test_parameter_hooks_with_forward_only_compiled_function():
    run = check_compiled(forward_only_param_hooks(False), calls=3, torch_too=True)
    assert [len(v) for v in run.state["log"].values()] == [3] * 4
    assert not run.step.compiled.stats["graph_breaks"]


def test_post_accumulate_hook_order_with_forward_only_compiled_function():
    check_torch(forward_only_param_hooks(True), calls=3)


def test_saved_tensors_hooks_around_a_compiled_call_run_every_call():
    """saved_tensors_hooks entered around later calls of a step traced without them: the pack
    hook runs on each of those calls, as eagerly (the call runs eagerly: a graph break)."""
    def run(wrap):
        tracegrad.manual_seed(0)
        lin = tracegrad.nn.Linear(3, 3)

        def step(x):
            lin.zero_grad()
            lin(x).tanh().sum().backward()
            return lin.weight.grad.clone()
        f, packed = wrap(step), []
        x = tracegrad.ones(2, 3)
        outs = []
        for i in range(4):
            if i >= 2:
                with tracegrad.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
                    outs.append(f(x).tolist())
            else:
                outs.append(f(x).tolist())
        return outs, len(packed)
    assert run(tracegrad.compile) == run(lambda f: f)
