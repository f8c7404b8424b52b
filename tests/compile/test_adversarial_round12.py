"""Twelfth round of adversarial compiled-vs-eager programs: ``load_state_dict(assign=True)``
between calls while an optimizer keeps the old parameters; ``vector_to_parameters`` making the
parameters views of a vector the caller writes later; ``state_dict``/``load_state_dict`` and
their hooks inside a step; ``enable_grad()`` inside a step called under ``no_grad``; layout
changes of tensors from outside inside a step (``t_``, ``unsqueeze_``, ``resize_``,
``as_strided_``, ``.data`` swapped between two tensors or set to a view of itself); hooks registered and removed between calls (global module hooks, forward
pre-hooks with kwargs, full backward pre-hooks, optimizer step hooks); ``torch.func`` and
``torch.autograd.functional`` inside a step. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare``).

Found here and fixed: ``load_state_dict(assign=True)`` put the new parameters into the module's
dict directly, so a compiled step kept training the old ones (now through ``setattr``, as
torch); ``vector_to_parameters`` gave the parameters copies of the vector's slices (torch:
views, a later write to the vector shows in them); a module's state_dict and load_state_dict
hooks ran inside a trace unseen (a counter they kept counted while tracing only); a layout
change of a tensor from outside inside a step (``buf.unsqueeze_(0)``, ``buf.t_()``,
``a.data, b.data = b.data, a.data``, ``buf.data = buf.t()``) happened while tracing only, and a
``resize_`` growing one leaked a JAX tracer into it (every later call failed): now graph
breaks; a step called under ``no_grad`` that builds a graph under ``enable_grad()`` crashed its
trace after writing the parameters (the eager rerun then updated them twice), and a graph it
only stored had nothing to backward through: both now differentiable, as eagerly."""
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def _breaks(f):
    return [reason for reason, _ in getattr(f, "stats", {"graph_breaks": []})["graph_breaks"]]


def test_load_state_dict_assign_true_between_calls_while_the_optimizer_keeps_the_old_parameters():
    """After ``load_state_dict(sd, assign=True)`` the module holds new Parameters (requires_grad
    kept) and the optimizer the old ones: the step trains nothing the module uses, eagerly; a
    compiled step must see the new parameters (not the program's old inputs)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        old = list(net.parameters())

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                net.load_state_dict({k: v * 2 for k, v in net.state_dict().items()}, assign=True)
            loss = f(_rand(T, i, 2, 3))
            return (loss, net.weight, net.weight.grad, old[0], type(net.weight).__name__,
                    [p is q for p, q in zip(opt.param_groups[0]["params"], net.parameters())])
        return run
    compare(build)


def test_vector_to_parameters_makes_views_of_the_vector():
    """``vector_to_parameters(vec, params)`` sets each ``p.data`` to a view of ``vec``: the
    optimizer's step then writes ``vec`` too, and the caller's later ``vec.mul_(2)`` shows in
    the parameters. Compiled: the move onto the argument's memory is a graph break (eager every
    call, same values)."""
    fs = []

    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(vec, x):
            T.nn.utils.vector_to_parameters(vec, net.parameters())
            loss = net(x).sum()
            loss.backward()
            opt.step()
            return loss, T.nn.utils.parameters_to_vector(net.parameters())

        f = wrap(step)
        fs.append(f)

        def run(i):
            vec = _rand(T, i, 8)
            out = f(vec, _rand(T, i, 2, 3))
            seen = (out, vec.clone(), net.weight.grad)
            vec.mul_(2)
            net.zero_grad()
            return seen, net.weight, net.bias
        return run
    compare(build, calls=3)
    assert any("argument's memory" in r for r in _breaks(fs[-1]))


def test_state_dict_and_load_state_dict_hooks_inside_a_step():
    """``net.state_dict()`` inside a step (an EMA through it) with a state_dict post-hook that
    counts: the count grows every call; ``load_state_dict`` inside with a pre-hook halving the
    bias and a post-hook appending to a list: every call."""
    def build(T, wrap):
        net, ema = _linear(T, 3, 2), _linear(T, 3, 2, seed=4)
        snap = {k: v.clone() for k, v in net.state_dict().items()}
        seen = []

        def halve_bias(module, sd, prefix, *rest):
            sd[prefix + "bias"] = sd[prefix + "bias"] * 0.5

        net._register_load_state_dict_pre_hook(halve_bias, with_module=True)
        net.register_load_state_dict_post_hook(lambda module, keys: seen.append(len(keys.missing_keys)))

        def step(x, reload):
            if reload:
                net.load_state_dict(snap)
            loss = net(x).sum()
            loss.backward()
            with T.no_grad():
                for p in net.parameters():
                    p.sub_(0.1 * p.grad)
                sd = net.state_dict()
                for k, v in ema.state_dict().items():
                    v.mul_(0.9).add_(sd[k], alpha=0.1)
            return loss

        f = wrap(step)

        def run(i):
            if i == 1:
                net.register_state_dict_post_hook(lambda module, sd, prefix, meta: seen.append(prefix))
            with T.no_grad():
                snap["weight"].add_(1.0)
            loss = f(_rand(T, i, 2, 3), i >= 3)
            return loss, ema.weight, net.weight, net.bias, list(seen)
        return run
    compare(build, calls=5)


_LAYOUT = {
    "unsqueeze_": lambda T, bufs: bufs[0].unsqueeze_(0),
    "t_": lambda T, bufs: bufs[0].t_(),
    "resize_": lambda T, bufs: bufs[1].resize_(bufs[1].numel() % 3 + 2).fill_(1.0),
    "as_strided_": lambda T, bufs: bufs[1].as_strided_((2, 2), (1, 2)),
    "swap_data": lambda T, bufs: _swap(bufs[0], bufs[1]),
    "data_view": lambda T, bufs: setattr(bufs[0], "data", bufs[0].t()),
}


def _swap(a, b):
    a.data, b.data = b.data, a.data
    return a, b


@pytest.mark.parametrize("how", list(_LAYOUT))
def test_layout_changed_inside_on_tensors_from_outside(how):
    """A step that changes the layout of (or moves) a tensor it did not make -- a module buffer
    or a global -- does so on every eager call; compiled, a graph break (it used to happen while
    tracing only, the shape then frozen; a growing ``resize_`` leaked a tracer). With
    ``fullgraph=True`` the break names the line."""
    def build(T, wrap):
        m = T.nn.Module()
        m.register_buffer("a", T.arange(6.0).reshape(2, 3))
        bufs = [m.a, T.arange(6.0)]

        def step(x):
            _LAYOUT[how](T, bufs)
            bufs[0].mul_(2.0)
            return x * bufs[0].sum() + bufs[1].sum(), tuple(bufs[0].shape), tuple(bufs[1].shape)

        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 2)), bufs[0].flatten(), bufs[1].flatten(), bufs[0].stride()
        return run
    compare(build, calls=4)
    b = tracegrad.arange(6.0)

    def grow(x):
        b.resize_(b.numel() + 1)
        return x + 1

    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"changes the storage, shape or strides.*"
                                                              r"test_adversarial_round12\.py:\d+"):
        tracegrad.compile(grow, fullgraph=True)(tracegrad.ones(2))
    assert tuple(b.shape) == (6,) and b.tolist() == list(range(6))


def test_hooks_registered_and_removed_between_calls():
    """A global forward hook scaling one module's output, a forward pre-hook with kwargs and a
    full backward pre-hook reading a module attribute changed between calls, and optimizer
    step pre/post hooks (one halving lr and counting into a list, one clamping the weight)
    registered after the first calls and removed later."""
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin, self.act, self.head = _linear(T, 3, 3), T.nn.Tanh(), _linear(T, 3, 2, seed=1)
                self.scale = 1.0

            def forward(self, x, shift=0.0):
                return self.head(self.act(self.lin(x)) + shift)

        net = Net()
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        log, handles = [], []

        def double_act(module, args, out):
            if module is net.act:   # global: sees every module of every run in this process
                return out * 2

        def shift_kwargs(module, args, kwargs):
            return args, {"shift": kwargs.get("shift", 0.0) + module.scale}

        def scale_grad_out(module, grad_out):
            return (grad_out[0] * module.scale,)

        def halve_lr(o, args, kwargs):
            log.append(o.param_groups[0]["lr"])
            o.param_groups[0]["lr"] *= 0.5

        def clamp_weight(o, args, kwargs):
            with T.no_grad():
                net.lin.weight.clamp_(-0.3, 0.3)

        def step(x):
            opt.zero_grad()
            out = net(x, shift=0.5)
            out.pow(2).sum().backward()
            opt.step()
            return out

        f = wrap(step)

        def run(i):
            if i == 1:
                handles.append(T.nn.modules.module.register_module_forward_hook(double_act))
                handles.append(net.register_forward_pre_hook(shift_kwargs, with_kwargs=True))
                handles.append(net.register_full_backward_pre_hook(scale_grad_out))
                handles.append(opt.register_step_pre_hook(halve_lr))
                handles.append(opt.register_step_post_hook(clamp_weight))
            if i == 2:
                net.scale = 3.0
            if i == 3:
                handles.pop(3).remove()
                handles.pop(0).remove()
            try:
                out = f(_rand(T, i, 2, 3))
            finally:
                if i == 4:
                    for h in handles:
                        h.remove()
            return out, net.lin.weight, net.head.weight.grad, list(log), opt.param_groups[0]["lr"]
        return run
    compare(build, calls=5)


def test_func_transforms_and_autograd_functional_inside_a_step():
    """Inside one step: ``functional_call`` with a parameter dict the caller makes anew each call
    (gradients to the dict's leaves, none to the module's), ``vmap(grad(...))`` over an
    ensemble's stacked parameters updated in place, ``jvp``, and ``autograd.functional.jacobian``
    of the module changed between calls."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        stacked, _ = T.func.stack_module_state([_linear(T, 3, 2, seed=s) for s in range(3)])

        def loss_fn(p, x):
            return T.func.functional_call(net, p, (x,)).pow(2).sum()

        def step(params, x):
            loss = loss_fn(params, x)
            loss.backward()
            g = T.func.vmap(T.func.grad(loss_fn), in_dims=(0, None))(stacked, x)
            with T.no_grad():
                for k in stacked:
                    stacked[k].sub_(0.1 * g[k])
            _, tangent = T.func.jvp(lambda z: T.tanh(net(z)), (x,), (T.ones_like(x),))
            jac = T.autograd.functional.jacobian(lambda v: T.tanh(net(v)), x[0])
            return loss, tangent, jac

        f = wrap(step)

        def run(i):
            if i == 1:
                with T.no_grad():
                    net.weight.mul_(0.5)
            params = {k: (v.detach() * (1 + 0.1 * i)).requires_grad_() for k, v in net.named_parameters()}
            out = f(params, _rand(T, i, 2, 3))
            return out, params["weight"].grad, net.weight.grad, stacked["weight"].detach()
        return run
    compare(build, calls=3)


@pytest.mark.parametrize("returned", [True, False])
def test_enable_grad_inside_a_call_made_under_no_grad(returned):
    """Called under ``no_grad``, the step updates the parameters, then builds a graph under
    ``enable_grad()``: the loss it returns (or only an activation it stores on a dict) has a
    graph the caller backpropagates through after the call. The compiled result used to crash
    the trace (TypeError) and run the update twice; the stored one had no graph."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        store = {}

        def step(x):
            with T.no_grad():
                for p in net.parameters():
                    p.mul_(0.95)
            with T.enable_grad():
                h = net(x)
                store["h"] = h * 2
                loss = h.pow(2).sum()
            return (loss if returned else loss.detach()), h.requires_grad

        f = wrap(step)

        def run(i):
            net.zero_grad()
            with T.no_grad():
                loss, rg = f(_rand(T, i, 2, 3))
            (loss + store["h"].sum() if returned else store["h"].sum()).backward()
            return loss, rg, store["h"], net.weight, net.weight.grad, net.bias.grad
        return run
    compare(build, calls=3)
