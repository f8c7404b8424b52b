"""Nineteenth round of adversarial compiled-vs-eager programs: a compiled forward inside an
eager training loop whose loss adds eager terms, optimizer state read as Python numbers for
logging, ``clip_grad_norm_(error_if_nonfinite=True)`` meeting a non-finite gradient on one
call, ``torch.where`` on a mask from a buffer the previous call updated, in-place writes to
views of parameters under ``no_grad`` inside the step, ``zero_grad()`` after ``step()`` with an
eager backward between calls, ``.item()`` results driving the lr, a tensor learning rate the
caller fills in place, optimizer steps taken by post-accumulate-grad hooks, hooks registered
and removed inside every call, and a gradient penalty through ``create_graph=True``. torch
eager, tracegrad eager and ``tracegrad.compile`` run each program from the same state and
must agree after every call (``_dynamo_port.compare``).

Found here and fixed: a step returning (or reading) ``opt.state_dict()`` never compiled, as
``compiler._guard_len`` raised ``NameError`` while tracing (NOTE [_guard_len's import] in
``compiler.py``); optimizer-in-backward hooks looking their optimizer up in a dict keyed by the
parameters sent the step to eager, as the dict's signature took ``repr`` of each key (NOTE
[tensor dict keys are labelled by identity] in ``_lowering/pystate.py``). Both gave eager's
results; the tests assert that the step now compiles.

Found and left: with ``zero_grad()`` after ``step()`` and an eager backward only on some calls
between them, the step traces once per grad-None pattern and once more when the caller's new
grad replaces the traced one (the old grad's storage is orphaned, its program dropped)."""
import math

import pytest

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_compiled_forward_inside_an_eager_loop_with_eager_loss_terms():
    """The forward (``tanh`` of a two-layer net) is compiled; the loop is eager: its loss adds
    an L2 penalty over the parameters and a term from an eager layer on the compiled output,
    then ``backward`` and an eager Adam step. A compiled evaluation function calls the compiled
    forward under ``no_grad`` (nested compile): its result has no graph."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.ReLU(), _linear(T, 3, 2, seed=1))
        extra = _linear(T, 2, 2, seed=2)
        params = list(net.parameters()) + list(extra.parameters())
        opt = T.optim.Adam(params, lr=0.05)
        fwd = wrap(lambda x: T.tanh(net(x)))

        @wrap
        def evaluate(x):
            with T.no_grad():
                return fwd(x).sum(dim=1)

        def run(i):
            x = _rand(T, i, 2, 3)
            opt.zero_grad()
            y = fwd(x)
            loss = (y - 0.5).pow(2).mean() + 0.01 * sum(p.pow(2).sum() for p in params)
            loss = loss + extra(y).abs().mean()
            loss.backward()
            opt.step()
            e = evaluate(x)
            return (loss, y.requires_grad, e, e.requires_grad, net[0].weight, net[2].bias.grad,
                    extra.weight.grad)
        return run
    compare(build, calls=3)


def test_optimizer_state_read_as_python_numbers_for_logging():
    """After ``opt.step()`` the step reads ``opt.state[p]['step']`` as a float, the largest
    ``exp_avg`` entry through ``.item()``, ``exp_avg_sq`` as a tensor, and computes Adam's
    bias-corrected step size in Python from them; before the step it reads ``len(opt.state)``
    and ``'step' in opt.state[p]`` (False on the first call only). The caller changes ``lr``
    after call 2: the logged step size follows."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05, betas=(0.8, 0.9))

        def step(x):
            before = (len(opt.state), "step" in opt.state[net.weight])
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            s = opt.state[net.weight]
            n = float(s["step"])
            g = opt.param_groups[0]
            b1, b2 = g["betas"]
            size = g["lr"] * math.sqrt(1 - b2 ** n) / (1 - b1 ** n)
            return loss, before, n, s["exp_avg"].abs().max().item(), s["exp_avg_sq"] * 1.0, size

        f = wrap(step)

        def run(i):
            if i == 2:
                opt.param_groups[0]["lr"] = 0.01
            loss, before, n, top, sq, size = f(_rand(T, i, 2, 3))
            return loss, before, n, T.tensor([top, size]), sq, net.weight   # floats to rounding
        return run
    compare(build, calls=4)


def test_optimizer_state_dict_returned_from_the_step_aliases_the_live_state():
    """The step returns ``opt.state_dict()``; the caller keeps every call's dict. As in torch the
    dicts hold the optimizer's own state tensors (``exp_avg``, the ``step`` counter), so the
    dict kept from call 0 shows the state after the last call, and the step compiles."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05)
        held = []

        def step(x):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
            opt.step()
            return opt.state_dict()

        f = wrap(step)
        made.append(f)

        def run(i):
            held.append(f(_rand(T, i, 2, 3)))
            if i == 1:
                opt.param_groups[0]["lr"] = 0.01
            return ([h["state"][0]["exp_avg"] for h in held], [h["state"][1]["step"] for h in held],
                    [h["param_groups"][0]["lr"] for h in held], held[0]["state"][0]["exp_avg"]
                    is opt.state[net.weight]["exp_avg"])
        return run
    made = []
    compare(build, calls=4)
    # found here: the trace raised NameError in compiler._guard_len and every call ran eagerly
    assert made[-1].stats["eager_calls"] == 1, made[-1].stats


def test_clip_grad_norm_error_if_nonfinite_on_the_call_with_an_infinite_input():
    """``clip_grad_norm_(..., error_if_nonfinite=True)`` inside the step; call 1's input holds
    an ``inf``, so its grads are non-finite and the clip raises ``RuntimeError`` before
    ``opt.step()``: the weights are those of call 0, the grads the non-finite ones backward
    left. The calls after it (finite again) clip and step as eagerly."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            norm = T.nn.utils.clip_grad_norm_(net.parameters(), 0.5, error_if_nonfinite=True)
            opt.step()
            return loss, norm

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 3)
            if i == 1:
                x[0, 1] = float("inf")
            try:
                out = f(x)
            except RuntimeError as e:
                out = ("raised", "non-finite" in str(e))
            return out, net.weight, net.bias, net.weight.grad, net.bias.grad
        return run
    compare(build, calls=4)


def test_where_on_a_mask_from_a_buffer_the_previous_call_updated():
    """A module keeps a per-feature hit count and a running maximum as buffers, updated in
    place at the end of each forward; the forward first selects with ``torch.where`` on
    ``hits > 1`` and divides by ``where(running_max > 1, running_max, 1)``, so every call's
    mask comes from the buffers the previous call left."""
    def build(T, wrap):
        class Gate(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 3)
                self.register_buffer("hits", T.zeros(3))
                self.register_buffer("running_max", T.zeros(3))

            def forward(self, x):
                h = self.lin(x)
                h = T.where(self.hits > 1, h * 2.0, -h)
                h = h / T.where(self.running_max > 1, self.running_max, T.ones_like(self.running_max))
                with T.no_grad():
                    self.hits.add_((x > 0).float().sum(0))
                    T.maximum(self.running_max, x.abs().amax(0), out=self.running_max)
                return h

        net = Gate()
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3) * (1.0 + i))
            return loss, net.hits, net.running_max, net.lin.weight
        return run
    compare(build, calls=3)


def test_in_place_writes_to_views_of_parameters_under_no_grad_inside_the_step():
    """After ``opt.step()`` the step edits its parameters through views under ``no_grad``:
    ``weight[0].zero_()``, ``weight[:, -1].mul_(0.5)``, ``bias[1:].clamp_(max=0.1)``,
    ``weight.diagonal().fill_(k)`` with ``k`` a 0-dim tensor argument, and
    ``weight.data[1, 0] = k``:
    the momentum carries, the next call reads the edited weights."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def step(x, k):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            with T.no_grad():
                net.weight[0].zero_()
                net.weight[:, -1].mul_(0.5)
                net.bias[1:].clamp_(max=0.1)
                net.weight.diagonal().fill_(k)
            net.weight.data[1, 0] = k
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3), T.tensor(0.1 * (i % 2)))
            return (loss, net.weight, net.bias, net.weight.grad, net.weight.is_leaf,
                    opt.state[net.weight]["momentum_buffer"])
        return run
    compare(build, calls=3)


def test_zero_grad_after_step_inside_and_an_eager_backward_between_calls():
    """The step ends with ``opt.zero_grad()`` (grads set to None) and returns whether the grad
    is None; between calls the caller backpropagates an eager loss into fresh grads, which the
    next step's ``backward`` accumulates onto and its ``opt.step()`` uses."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05)

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss, net.weight.grad is None

        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3))
            if i % 2 == 0:
                net(_rand(T, i + 5, 2, 3)).sum().backward()
            return out, net.weight, net.weight.grad, net.bias.grad
        return run
    compare(build, calls=3)


def test_item_results_drive_the_lr_and_the_same_tensor_is_returned_twice():
    """``gn = clip_grad_norm_(...).item()`` sets every group's lr to ``0.1 / (1 + gn)`` before
    ``opt.step()``; the step returns the loss twice, ``loss.item()``, ``gn``, the output and a
    view of it: the caller sees one object twice and a view whose base is the output, and a
    write through the view reaches the output."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            h = net(x)
            loss = h.pow(2).mean()
            loss.backward()
            gn = T.nn.utils.clip_grad_norm_(net.parameters(), 10.0).item()
            for g in opt.param_groups:
                g["lr"] = 0.1 / (1.0 + gn)
            opt.step()
            return loss, loss, loss.item(), gn, h, h.view(-1)

        f = wrap(step)

        def run(i):
            loss, again, lf, gn, h, v = f(_rand(T, i, 2, 3))
            with T.no_grad():
                v[0] = 7.0
            return (loss, again is loss, T.tensor([lf, gn, opt.param_groups[0]["lr"]]), h,
                    v._base is h, net.weight)
        return run
    compare(build, calls=4)


def test_tensor_learning_rate_the_caller_fills_in_place():
    """Adam and AdamW with ``lr=torch.tensor(...)`` (``foreach=False``); between calls the
    caller writes the tensors in place (``fill_``, ``mul_``) and a ``StepLR`` over the AdamW
    steps (it fills the tensor too): each call steps with the value the tensor holds then,
    never a frozen copy, and the group's lr stays that tensor."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        lr, lr2 = T.tensor(0.05), T.tensor(0.02)
        opt = T.optim.Adam([net.weight], lr=lr, foreach=False)
        opt2 = T.optim.AdamW([net.bias], lr=lr2, foreach=False, weight_decay=0.1)
        sched = T.optim.lr_scheduler.StepLR(opt2, 1, gamma=0.5)

        def step(x):
            opt.zero_grad()
            opt2.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt2.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                lr.fill_(0.005)
            if i == 3:
                opt2.param_groups[0]["lr"].mul_(3.0)
            loss = f(_rand(T, i, 2, 3))
            sched.step()
            return (loss, net.weight, net.bias, opt.param_groups[0]["lr"] is lr,
                    opt2.param_groups[0]["lr"] is lr2, lr2)
        return run
    compare(build, calls=4)


def test_optimizer_steps_taken_in_post_accumulate_grad_hooks():
    """The optimizer-in-backward pattern: one SGD (momentum) per parameter, stepped and zeroed
    by a ``register_post_accumulate_grad_hook`` on that parameter; the compiled step only
    calls ``backward``. After each call every grad is None and every parameter moved once, and
    the step compiles (the optimizers are found through a dict keyed by the parameters)."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.Tanh(), _linear(T, 3, 1, seed=1))
        opts = {p: T.optim.SGD([p], lr=0.1, momentum=0.9) for p in net.parameters()}

        def hook(p):
            opts[p].step()
            opts[p].zero_grad()

        for p in net.parameters():
            p.register_post_accumulate_grad_hook(hook)

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            return loss

        f = wrap(step)
        made.append(f)

        def run(i):
            loss = f(_rand(T, i, 2, 3))
            return (loss, list(net.parameters()), [p.grad is None for p in net.parameters()],
                    opts[net[2].weight].state[net[2].weight]["momentum_buffer"])
        return run
    made = []
    compare(build, calls=3)
    assert made[-1].stats["eager_calls"] == 1, made[-1].stats    # the first call only


def test_hooks_registered_and_removed_inside_every_call():
    """Inside the step: a forward hook on the first layer that scales its output by an
    argument and stashes it, a tensor hook on the weight that halves its gradient and one on
    the output that logs its gradient norm, all removed through their handles at the end of
    the call; a hook left behind would show on the next call (scaled twice)."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.ReLU(), _linear(T, 3, 2, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        seen = {}

        def step(x, s):
            def fwd_hook(mod, inp, out):
                seen["h"] = out.detach()
                return out * s

            handles = [net[0].register_forward_hook(fwd_hook),
                       net[0].weight.register_hook(lambda g: g * 0.5)]
            opt.zero_grad()
            y = net(x)
            handles.append(y.register_hook(lambda g: seen.__setitem__("gy", g.norm().item())))
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            for h in handles:
                h.remove()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3), 1.0 + i)
            plain = net(_rand(T, 9, 2, 3))       # no hook left behind
            return (loss, plain, seen["h"], T.tensor(seen["gy"]), net[0].weight.grad,
                    len(net[0]._forward_hooks))
        return run
    compare(build, calls=4)


def test_gradient_penalty_through_create_graph():
    """WGAN-GP: ``autograd.grad(D(x).sum(), x, create_graph=True)`` on an interpolate whose
    mixing weight is an argument, the penalty ``((g.norm(dim=1) - 1) ** 2).mean()`` added to
    the critic loss and backpropagated into the critic (Adam): second derivatives reach the
    weights as eagerly."""
    def build(T, wrap):
        D = T.nn.Sequential(_linear(T, 3, 3, seed=0), T.nn.Tanh(), _linear(T, 3, 1, seed=1))
        opt = T.optim.Adam(D.parameters(), lr=0.02, betas=(0.5, 0.9))

        def step(real, fake, a):
            opt.zero_grad()
            mix = (a * real + (1 - a) * fake).requires_grad_(True)
            g, = T.autograd.grad(D(mix).sum(), mix, create_graph=True)
            gp = ((g.norm(dim=1) - 1) ** 2).mean()
            loss = D(fake).mean() - D(real).mean() + 10.0 * gp
            loss.backward()
            opt.step()
            return loss, gp, g.requires_grad

        f = wrap(step)

        def run(i):
            out = f(_rand(T, i, 2, 3), _rand(T, i + 7, 2, 3), T.tensor(0.25 * (1 + i % 3)))
            return out, D[0].weight, D[0].weight.grad, D[2].bias
        return run
    compare(build, calls=3)
