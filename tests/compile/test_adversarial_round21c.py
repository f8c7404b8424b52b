"""Twenty-first round of adversarial compiled-vs-eager programs, third file (also
test_adversarial_round21.py and test_adversarial_round21b.py): a ``state_dict()`` the caller
holds across calls (its tensors alias the parameters) next to a cloned best snapshot loaded
back, a multi-task model whose head is picked by a string argument, and backward after the call
through results whose graph saved a tensor the call then wrote, or that a backward inside freed
or retained. torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the
same state and must agree after every call (``_dynamo_port.compare_programs``, which also
counts the programs built).

Found here and fixed: a forward-only compiled function whose result's graph saved a parameter
it then wrote in place (a max-norm constraint under ``no_grad``), or a tensor made inside that
it then wrote, gave that result a backward node checking the parameter's version as the call
left it (the inner tensor's not at all), so a backward from it silently used the pre-write
values where eager raises "modified by an inplace operation" (NOTE [saved versions of a
compiled region] in ``_lowering/region.py``); a result of a function that ran ``backward()``
inside always raised torch's "backward through the graph a second time ... Specify
retain_graph=True", also when the function had passed ``retain_graph=True`` or a later write
made eager raise the in-place error (NOTE [results after a backward inside] in
``_lowering/vjp_node.py``: eager's error where eager raises, else a message saying the
compiled call keeps no graph -- left as a clear error, not supported)."""
import pytest

from ._dynamo_port import compare_programs, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear
from ._dynamo_port import train_step

torch = pytest.importorskip("torch")


def test_state_dict_held_by_the_caller_aliases_and_a_cloned_best_snapshot_loaded_back():
    """The caller keeps ``live = net.state_dict()`` from before the first call (its tensors
    share the parameters' storage, so they show every update) and a ``best`` snapshot of
    clones taken when the loss improves; before call 3 it loads ``best`` back (rollback).
    ``live`` must keep aliasing the parameters after compiled calls and the rollback."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.Tanh(), _linear(T, 3, 1, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.3)
        f = wrap(train_step(opt, lambda x: (net(x) - 1).pow(2).mean()))
        live = net.state_dict()
        hist = {"best": None, "best_loss": float("inf")}

        def run(i):
            if i == 3:
                net.load_state_dict(hist["best"])
            loss = f(_rand(T, i % 2, 2, 3))
            if loss.item() < hist["best_loss"]:
                hist["best_loss"] = loss.item()
                hist["best"] = {k: v.clone() for k, v in net.state_dict().items()}
            return loss, live["0.weight"], live["2.bias"], hist["best"]["2.weight"], net[2].bias
        return run
    compare_programs(build, calls=4, traces=1)


def test_multi_task_heads_picked_by_a_string_argument():
    """A shared trunk and a ``ModuleDict`` of heads; the task name is a string argument that
    changes between calls (and comes back). Adam holds every head: the heads a call does not
    use keep ``grad`` None (``zero_grad`` sets it) and their Adam state untouched, the used
    head's state steps."""
    def build(T, wrap):
        trunk = _linear(T, 3, 3)
        heads = T.nn.ModuleDict({"cls": _linear(T, 3, 2, seed=1), "reg": _linear(T, 3, 1, seed=2)})
        opt = T.optim.Adam(list(trunk.parameters()) + list(heads.parameters()), lr=0.05)

        def step(x, task):
            opt.zero_grad()
            out = heads[task](T.relu(trunk(x)))
            loss = out.pow(2).mean() if task == "reg" else out.logsumexp(1).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)
        tasks = ["cls", "reg", "cls", "cls"]

        def run(i):
            loss = f(_rand(T, i, 2, 3), tasks[i])
            reg_state = opt.state.get(heads["reg"].weight, {})
            return (loss, heads["cls"].weight.grad, heads["reg"].weight.grad, heads["reg"].bias,
                    sorted(reg_state), reg_state.get("exp_avg"), trunk.weight)
        return run
    # a program per task and per pattern of None grads (the other head's, after zero_grad)
    compare_programs(build, calls=4, traces=3)


def _backward_or_error(out):
    """``out.sum().backward()``: "ok", or the RuntimeError's class and the words before its first
    colon (torch's messages name the tensor after it, in its own spelling)."""
    try:
        out.sum().backward()
        return "ok"
    except RuntimeError as e:
        return "RuntimeError", str(e).split(":")[0]


def test_weight_saved_by_a_result_then_written_inside_the_call_raises_on_backward():
    """A forward-only function (its results are differentiated outside) computes
    ``y = tanh(x @ w.T)`` -- the matmul saves ``w`` for ``x``'s gradient -- and then applies a
    max-norm constraint to ``w`` in place under ``no_grad``; it also returns ``u = 2 * e`` for
    an ``e = exp(x)`` it then adds 1 to in place (exp saved its result), and ``z = sin(x)``.
    Eagerly a backward from ``y`` or ``u`` raises "modified by an inplace operation" (one from
    ``z`` works). Found here: the compiled call's backward node checked ``w``'s version as the
    call left it and ``e`` not at all, so those backwards silently gave the pre-write gradient
    (NOTE [saved versions of a compiled region] in region.py)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def fwd(x):
            y = (x @ net.weight.t()).tanh()
            with T.no_grad():
                net.weight.mul_(1.0 / net.weight.norm(dim=1, keepdim=True).clamp(min=1.0))
            e = x.exp()
            u = e * 2
            e.add_(1)       # exp saved its result for backward
            return y, x.sin(), u

        f = wrap(fwd)

        def run(i):
            x = _rand(T, i, 2, 3).requires_grad_()
            y, z, u = f(x)
            return (_backward_or_error(y), _backward_or_error(u), _backward_or_error(z), x.grad, net.weight,
                    net.weight._version)
        return run
    compare_programs(build, calls=3, traces=1)


def _step_with_backward_inside(T, retain, then_step):
    """A step running ``loss.backward(retain_graph=retain)`` inside (then an SGD step when
    ``then_step``); returns ``(step, net)``, the step giving the loss and the weight's gradient."""
    net = _linear(T, 3, 2)
    opt = T.optim.SGD(net.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = net(x).tanh().pow(2).mean()
        loss.backward(retain_graph=retain)
        g = net.weight.grad.clone()
        if then_step:
            opt.step()
        return loss, g
    return step, net


@pytest.mark.parametrize("mode", ["freed", "retained_then_step"])
def test_backward_after_the_call_through_a_graph_a_backward_inside_freed_or_outdated(mode):
    """The step runs ``loss.backward()`` inside and returns ``loss``; the caller backpropagates
    from it again. ``freed``: the inside backward freed the graph: "backward through the graph a
    second time" everywhere. ``retained_then_step``: ``retain_graph=True``, then an SGD step
    writes the weight the graph saved (the input requires grad): "modified by an inplace
    operation" everywhere (found here: the compiled call said "backward through the graph a
    second time ... Specify retain_graph=True", which the step had done: NOTE [results after a
    backward inside] in vjp_node.py)."""
    def build(T, wrap):
        step, net = _step_with_backward_inside(T, mode != "freed", True)
        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 3).requires_grad_()
            loss, g = f(x)
            return loss, g, _backward_or_error(loss), x.grad, net.weight
        return run
    compare_programs(build, calls=3, traces=1)


def test_backward_after_the_call_through_a_graph_a_backward_inside_retained_is_a_clear_error():
    """``loss.backward(retain_graph=True)`` inside and no write after it: eagerly a second
    backward from the returned loss works (and adds to the gradients). A compiled call keeps no
    graph for its results once it ran a backward inside, so from the traced call on that second
    backward raises a RuntimeError that says so and what to do (it used to raise torch's "backward
    through the graph a second time ... Specify retain_graph=True", which the step had done).
    Left as a clear error: keeping the graph would make every such step (GAN code passes
    ``retain_graph=True`` routinely) return its VJP residuals from the program."""
    import tracegrad

    (ft, nt), (fe, ne), (sc, nc) = [_step_with_backward_inside(T, True, False) for T in (torch, tracegrad, tracegrad)]
    fc = tracegrad.compile(sc)
    for i in range(3):
        outs = []
        for T, f, net in ((torch, ft, nt), (tracegrad, fe, ne), (tracegrad, fc, nc)):
            loss, g = f(_rand(T, i, 2, 3))
            outs.append((loss, g, _backward_or_error(loss), net.weight.grad))
        same(outs[0], outs[1], f"call{i} eager vs torch")
        if i == 0:       # the first call runs eagerly
            same(outs[0], outs[2], "call0 compiled vs torch")
            continue
        same(outs[0][:2], outs[2][:2], f"call{i} compiled vs torch")
        assert outs[2][2] == ("RuntimeError", "tracegrad.compile"), outs[2][2]
        with pytest.raises(RuntimeError, match="retain_graph=True, or did not reach the result"):
            fc(_rand(tracegrad, i, 2, 3))[0].backward()
    assert fc.stats["traces"] == 1 and fc.stats["graph_breaks"] == [], fc.stats
