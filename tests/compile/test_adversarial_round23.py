"""Twenty-third round of adversarial compiled-vs-eager programs (the rest in
test_adversarial_round23b.py): a compiled forward called twice with two batch shapes inside one
graph that the caller backpropagates twice (``retain_graph=True``, then ``autograd.grad`` with
respect to the inputs), a submodule compiled in place with ``Module.compile()`` inside a parent
whose forward pre-hook and forward hook run eagerly, a checkpoint-restore step that snapshots
and reloads the optimizer's and the model's ``state_dict`` inside the step, and
``CosineAnnealingWarmRestarts`` stepped inside the step with a fractional epoch argument.
torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the same state and
must agree after every call (``_dynamo_port.compare``/``compare_programs``)."""
import copy

import pytest

import tracegrad

from ._dynamo_port import compare, compare_programs, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_compiled_forward_twice_in_one_graph_with_two_shapes_and_two_backwards_outside():
    """A forward-only compiled function (``tanh`` of a linear layer, squared) is called on a
    batch of 2 and a batch of 4 inside one graph; the caller runs ``backward(retain_graph=True)``
    into the layer, then ``autograd.grad`` of a function of the same output with respect to both
    inputs (the retained graph is reused: the compiled calls' residuals must survive the first
    backward)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        f = wrap(lambda x: net(x).tanh().pow(2))

        def run(i):
            x1 = _rand(T, i, 2, 3).requires_grad_()
            x2 = _rand(T, i + 5, 4, 3).requires_grad_()
            y = f(x1).sum() + f(x2).mean() * 2
            net.zero_grad()
            y.backward(retain_graph=True)
            gw = net.weight.grad.clone()
            g1, g2 = T.autograd.grad(y * y, (x1, x2))
            return y, gw, g1, g2, x1.grad, x2.grad, net.bias.grad
        return run
    compare_programs(build, calls=3, traces=range(1, 3))


def test_submodule_compiled_in_place_inside_a_parent_with_forward_hooks():
    """``body.compile()`` on the middle layer of a ``Sequential`` whose other layers run eagerly;
    the parent has a forward pre-hook that scales its input by a value in a dict the caller
    changes between calls and a forward hook that adds a residual of its input and records the
    output's sum with ``.item()``; the compiled submodule has its own forward hook clamping its
    output. An eager training step (SGD with momentum) runs over the parent."""
    def build(T, compiled):
        body = _linear(T, 4, 4, seed=1)
        model = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), body, _linear(T, 4, 3, seed=2))
        cfg, log = {"scale": 1.0}, []
        model.register_forward_pre_hook(lambda m, args: (args[0] * cfg["scale"],))
        model.register_forward_hook(lambda m, args, out: log.append(out.sum().item()) or out + args[0])
        body.register_forward_hook(lambda m, args, out: out.clamp(-0.5, 0.5))
        if compiled:
            body.compile()
        opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def run(i):
            cfg["scale"] = [1.0, 1.0, 0.5, 2.0][i]
            opt.zero_grad()
            loss = model(_rand(T, i, 2, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, body.weight, body.weight.grad, model[0].weight, [round(v, 4) for v in log]
        run.body = body
        return run
    runs = [build(torch, False), build(tracegrad, False), build(tracegrad, True)]
    for i in range(4):
        seen = [r(i) for r in runs]
        same(seen[0], seen[2], f"call{i} compiled vs torch")
        same(seen[1], seen[2], f"call{i} compiled vs eager")
    st = runs[2].body._compiled_call.stats
    assert st["traces"] == 1 and st["graph_breaks"] == [], st


def test_checkpoint_restore_of_model_and_optimizer_state_dicts_inside_the_step():
    """The caller snapshots the model (cloned tensors) and Adam's ``state_dict()`` (deep copy)
    between some calls; when ``restore`` is passed, the step reloads both with
    ``load_state_dict`` after its own update (a rollback after a bad step), so the optimizer's
    state tensors are replaced inside the step by the snapshot's; the step counts, moments and
    weights after every call must be eager's, including a restore of a snapshot taken two calls
    before and a call after the restore that steps from the restored moments."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.1)
        ckpt = {}

        def step(x, restore):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            if restore:
                net.load_state_dict(ckpt["model"])
                opt.load_state_dict(ckpt["opt"])
            return loss

        f = wrap(step)
        plan = [(True, False), (True, False), (False, True), (True, False), (False, False), (False, True)]

        def run(i):
            save, restore = plan[i]
            if save:
                ckpt["model"] = {k: v.clone() for k, v in net.state_dict().items()}
                ckpt["opt"] = copy.deepcopy(opt.state_dict())
            loss = f(_rand(T, i, 2, 3), restore)
            st = opt.state[net.weight]
            return loss, net.weight, net.bias, st["step"], st["exp_avg"], st["exp_avg_sq"]
        return run
    compare_programs(build, calls=6, traces=range(2, 5))


def test_cosine_annealing_warm_restarts_stepped_inside_with_and_without_a_fractional_epoch():
    """``CosineAnnealingWarmRestarts(T_0=2, T_mult=2)`` stepped inside the step after the
    optimizer, the step reading the lr it trains with first (guarded exactly: a new lr traces
    again, ``hyper.note_read``): ``sched.step()`` alone runs after the program on every call
    (NOTE [deferred scheduler step]: no graph break); with ``epoch + k / n``
    from an argument (the documented per-batch form) the call runs eagerly, as that NOTE says
    (``step(epoch)`` is not deferred). Either way the lr, ``T_cur``, ``T_i``, ``last_epoch`` and
    the weights after every call must be eager's."""
    def build(T, wrap, epochs):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.5, momentum=0.5)
        sched = T.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)

        def step(x, epoch):
            opt.zero_grad()
            loss = net(x).pow(2).mean() * opt.param_groups[0]["lr"]
            loss.backward()
            opt.step()
            if epoch is None:
                sched.step()
            else:
                sched.step(epoch)
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3), epochs[i])
            return (loss, net.weight, opt.param_groups[0]["lr"], sched.get_last_lr(), sched.T_cur,
                    sched.T_i, sched.last_epoch)
        return run
    compare_programs(lambda T, wrap: build(T, wrap, [None] * 6), calls=6, traces=range(1, 6))
    made = []
    compare(lambda T, wrap: build(T, lambda g: made.append(wrap(g)) or made[-1], [0.5, 1.25, 1.75, 3.5, 2.0]),
            calls=5)
    st = made[-1].stats
    assert st["graph_breaks"] and "param_groups option 'lr'" in st["graph_breaks"][0][0], st
