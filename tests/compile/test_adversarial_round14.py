"""Fourteenth round of adversarial compiled-vs-eager programs: custom ``autograd.Function``s
whose ctx state, ``needs_input_grad`` and saved tensors change from call to call (one raising
in its backward), layers frozen or replaced while ``zero_grad(set_to_none=False)`` keeps stale
zero gradients (momentum still moves them), one step function compiled twice with different
options next to a compiled eval step and eager calls, a short last batch with
``mark_dynamic``/``dynamic=True`` and a cumulative BatchNorm whose counter the caller resets,
``autograd.grad``/``backward(inputs=...)`` with ``allow_unused``/``materialize_grads``, nested
checkpoints, ``.grad`` tensors the caller holds, shares or assigns as views, and Python numbers
the step reads from optimizers, schedulers and a GradScaler the caller changes between calls.
torch eager, tracegrad eager and ``tracegrad.compile`` run each program from the same state and
must agree after every call (``_dynamo_port.compare``)."""
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_layer_frozen_then_replaced_while_zero_grad_keeps_zeros():
    """SGD with momentum and ``zero_grad(set_to_none=False)``: after ``requires_grad_(False)``
    on the first layer its gradient stays a zero tensor, so momentum keeps moving it eagerly;
    then the second layer is replaced by a new Linear (the optimizer still holds the old one,
    whose zero grads keep it drifting) and the new layer's parameters join the optimizer."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.Tanh(), _linear(T, 3, 2, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        old = net[2]

        def step(x):
            opt.zero_grad(set_to_none=False)
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                net[0].requires_grad_(False)
            if i == 3:
                net[2] = _linear(T, 3, 2, seed=5)
                opt.add_param_group({"params": list(net[2].parameters()), "lr": 0.05})
            loss = f(_rand(T, i, 2, 3))
            return (loss, net[0].weight, net[0].weight.grad, old.weight, old.bias.grad,
                    net[2].weight, net[2].weight.grad)
        return run
    compare(build, calls=4)


def _gate(T):
    class Gate(T.autograd.Function):
        """``x * w * k`` with a made-up backward that reads ``k`` (a ctx attribute from a Python
        float argument that changes between calls), skips the gradients nobody asked for and
        doubles x's gradient when both inputs need one (``needs_input_grad`` shows in values)."""

        @staticmethod
        def forward(ctx, x, w, k):
            ctx.k = k
            ctx.save_for_backward(x, w)
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            both = ctx.needs_input_grad[0] and ctx.needs_input_grad[1]
            gx = g * w * ctx.k * (2.0 if both else 1.0) if ctx.needs_input_grad[0] else None
            gw = (g * x * 0.5).sum(0) if ctx.needs_input_grad[1] else None
            return gx, gw, None
    return Gate


def test_custom_function_needs_input_grad_and_ctx_values_changing_per_call():
    """The Function's weight is frozen and thawed between calls (``needs_input_grad`` flips and
    the backward returns None for it), ``k`` changes between calls, and on the last call the
    step writes the saved input in place before backward: every call matches eager, and the
    last raises torch's RuntimeError and leaves parameters and grads as eagerly."""
    def build(T, wrap):
        lin = _linear(T, 3, 3)
        w = T.nn.Parameter(T.ones(3) * 0.5)
        opt = T.optim.SGD([w, *lin.parameters()], lr=0.1)
        gate = _gate(T)

        def step(x, k, spoil):
            opt.zero_grad()
            h = lin(x)
            loss = gate.apply(h, w, k).pow(2).sum()
            if spoil:
                h.mul_(2)
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            w.requires_grad_(i != 2)
            x = _rand(T, i, 2, 3)
            if i == 3:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    f(x, 0.5, True)
                return lin.weight, lin.weight.grad, w, w.grad
            return f(x, 1.0 + i % 2, False), lin.weight, lin.weight.grad, w, w.grad
        return run
    compare(build, calls=4)


def test_step_compiled_twice_with_different_options_and_an_eval_step_share_one_optimizer():
    """One step function compiled plainly and with ``fullgraph=True, dynamic=False``, a compiled
    eval step under ``no_grad`` that flips the model to eval and back, and the plain step
    called eagerly: they share Adam's state and parameters, so each sees the others'
    updates."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 2))
        opt = T.optim.Adam(net.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        def evaluate(x):
            net.eval()
            with T.no_grad():
                out = net(x).sum()
            net.train()
            return out, net.training
        plain, ev = wrap(step), wrap(evaluate)
        strict = step if plain is step else tracegrad.compile(step, fullgraph=True, dynamic=False)

        def run(i):
            x = _rand(T, i, 2, 3)
            outs = [plain(x), ev(x), strict(x)]
            if i == 1:
                outs.append(step(x))
            outs.append(ev(x))
            st = opt.state[net[0].weight]
            return outs, net[0].weight, net[0].bias, st["step"], st["exp_avg_sq"]
        return run
    compare(build, calls=3)


def test_short_last_batch_with_mark_dynamic_and_a_cumulative_batchnorm():
    """Batches of 3, 2 (the short last batch), 3, 2 through a model compiled with
    ``dynamic=True``, the batch dimension marked dynamic on each input, and the batch size read
    as a Python int inside (``len(x)`` scales the loss): every call, including the repeated
    shapes, uses its own batch's size and statistics. The BatchNorm has ``momentum=None``: it
    divides by ``num_batches_tracked`` (a tensor counter read as a number each call), which the
    caller resets (``reset_running_stats``) and then sets to 10 between calls."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 2), T.nn.BatchNorm1d(2, momentum=None))
        bn = net[1]
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        dyn = T._dynamo if T is torch else tracegrad._dynamo

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).sum() / len(x) + x.shape[0] * 0.01
            loss.backward()
            opt.step()
            return loss, x.shape[0]

        f = step if wrap(step) is step else tracegrad.compile(step, dynamic=True)

        def run(i):
            if i == 2:
                bn.reset_running_stats()
            if i == 3:
                bn.num_batches_tracked.fill_(10)
            x = _rand(T, i, [3, 2, 3, 2][i], 3)
            dyn.mark_dynamic(x, 0)
            out = f(x)
            return out, net[0].weight, bn.running_mean, bn.running_var, bn.num_batches_tracked
        return run
    compare(build, calls=4)


def test_autograd_grad_and_backward_inputs_with_unused_and_accumulated_grads():
    """Inside the step: ``autograd.grad`` over a used and an unused parameter with
    ``allow_unused``/``materialize_grads`` and ``retain_graph``, then ``backward(inputs=[...])``
    into only the weight; no ``zero_grad``: grads accumulate across calls, the caller assigns
    ``bias.grad`` and sets ``weight.grad`` to None between calls, and the optimizer steps every
    second call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        spare = T.nn.Parameter(T.ones(2))
        opt = T.optim.SGD([*net.parameters(), spare], lr=0.1, momentum=0.5)

        def step(x, update):
            loss = net(x).pow(2).sum()
            gw, gs = T.autograd.grad(loss, [net.weight, spare], retain_graph=True,
                                     allow_unused=True, materialize_grads=True)
            (loss + gw.pow(2).sum().detach()).backward(inputs=[net.weight])
            if update:
                opt.step()
            return loss, gw, gs

        f = wrap(step)

        def run(i):
            if i == 2:
                net.bias.grad = T.full((2,), 0.25)
            if i == 3:
                net.weight.grad = None
            out = f(_rand(T, i, 2, 3), i % 2 == 1)
            return out, net.weight, net.weight.grad, net.bias, net.bias.grad, spare.grad
        return run
    compare(build, calls=4)


def _scale_rows(T):
    class ScaleRows(T.autograd.Function):
        """``x * r`` for a row scale ``r = x.abs().sum(1, keepdim=True)`` it saves (an
        intermediate) and returns as a non-differentiable second output; backward treats ``r`` as a
        constant (not the true derivative) and is once_differentiable."""

        @staticmethod
        def forward(ctx, x):
            r = x.abs().sum(1, keepdim=True)
            ctx.save_for_backward(r)
            ctx.mark_non_differentiable(r)
            ctx.set_materialize_grads(False)
            return x * r, r

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g, g_r):
            (r,) = ctx.saved_tensors
            return None if g is None else g * r
    return ScaleRows


def test_nested_checkpoints_around_a_custom_function_with_accumulation():
    """A reentrant checkpoint inside a non-reentrant one around a custom Function (saved
    intermediate, non-differentiable output, unmaterialized grads, once_differentiable), then
    ``checkpoint_sequential``; grads accumulate over two calls before each optimizer step. The
    torch run has no checkpoints: tracegrad's checkpointed step, eager and compiled, must equal
    the plain model's values and grads."""
    def build(T, wrap):
        from importlib import import_module
        cp = import_module(T.__name__ + ".utils.checkpoint")
        ckpt = T is tracegrad
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.Tanh(), _linear(T, 3, 3, seed=1), T.nn.Tanh())
        fn = _scale_rows(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def inner(h):
            y, r = fn.apply(h)
            return y * 0.5, r

        def outer(x):
            h = net[0](x)
            return cp.checkpoint(inner, h, use_reentrant=True) if ckpt else inner(h)

        def step(x, update):
            y, r = cp.checkpoint(outer, x, use_reentrant=False) if ckpt else outer(x)
            z = cp.checkpoint_sequential(net[1:], 2, y, use_reentrant=False) if ckpt else net[1:](y)
            loss = z.pow(2).sum()
            loss.backward()
            if update:
                opt.step()
                opt.zero_grad()
            return loss, r.detach()
        f = wrap(step)
        return lambda i: (f(_rand(T, i, 2, 3), i % 2 == 1), net[0].weight, net[2].weight,
                          net[0].bias.grad)
    compare(build, calls=4)


def test_grad_tensors_held_or_shared_by_the_caller_accumulate_in_place():
    """The caller keeps a reference to ``weight.grad`` across calls and gives two parameters
    one shared ``.grad`` tensor: with no ``zero_grad`` backward accumulates into those tensors
    in place (the held reference and both parameters see every call's sum), also into a
    transposed view the caller assigns as ``weight.grad`` (its base sees the sums), and
    zeroing them in place inside the step clears what the caller holds."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        a = T.nn.Parameter(T.ones(2))
        b = T.nn.Parameter(T.ones(2) * 2)

        def step(x, clear):
            if clear:
                for p in (net.weight, a, b):
                    if p.grad is not None:
                        p.grad.zero_()
            loss = (net(x) * a * b).pow(2).sum()
            loss.backward()
            return loss

        f = wrap(step)
        held = {}

        def run(i):
            if i == 0:
                net.weight.grad = T.zeros(2, 3)
                held["w"] = net.weight.grad
            if i == 1:
                shared = T.zeros(2)
                a.grad, b.grad = shared, shared
                held["s"] = shared
            if i == 2:
                held["t"] = T.zeros(3, 2)
                net.bias.grad = T.zeros(2)
                net.weight.grad = held["t"].t()       # a transposed view: stays that view
            out = f(_rand(T, i, 2, 3), i == 3)
            return (out, held["w"], net.weight.grad, held.get("t"), net.weight.grad.is_contiguous(),
                    held.get("s"), a.grad, b.grad, a.grad is b.grad)
        return run
    compare(build, calls=4)


def test_learning_rate_read_inside_the_step_while_chained_schedulers_change_it():
    """``LambdaLR`` whose lambda reads a factor from a list the caller changes, chained with a
    ``MultiplicativeLR`` on one optimizer and stepped by the caller after each compiled step;
    the step reads ``param_groups[0]["lr"]`` (and ``["momentum"]``)
    as numbers, returns them and scales a result by the lr. Found here: the compiled step
    returned the traced call's lr on every later call (the lr is a program input for the
    update, but the Python number the step read was baked in and not guarded): now a read of
    a lifted option is guarded."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        factor = [1.0]
        lam = T.optim.lr_scheduler.LambdaLR(opt, lambda e: factor[0] / (1 + e))
        mul = T.optim.lr_scheduler.MultiplicativeLR(opt, lambda e: 0.9)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            group = opt.param_groups[0]
            return loss * group["lr"], group["lr"], group.get("momentum")

        f = wrap(step)

        def run(i):
            if i == 2:
                factor[0] = 3.0
            out = f(_rand(T, i, 2, 3))
            lam.step()
            mul.step()
            return out, net.weight, lam.last_epoch, lam.get_last_lr()
        return run
    compare(build, calls=4)


def test_scheduler_and_grad_scaler_getters_read_inside_the_step():
    """The step returns ``get_last_lr()`` and ``state_dict()["last_epoch"]`` of a scheduler the
    caller steps between calls 1 and 2, and a GradScaler's getters whose setters the caller
    calls between calls 2 and 3. Found here: the compiled step returned the traced call's
    numbers (library code read them, and only the user's own reads were guarded): now the
    getters guard what they return."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        sched = T.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        scaler = T.amp.GradScaler("cpu")

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            return (loss, sched.get_last_lr(), sched.state_dict()["last_epoch"],
                    scaler.get_growth_factor(), scaler.get_backoff_factor(),
                    scaler.get_growth_interval(), scaler.is_enabled())

        f = wrap(step)

        def run(i):
            if i == 2:
                sched.step()
            if i == 3:
                scaler.set_growth_factor(3.0)
                scaler.set_backoff_factor(0.25)
                scaler.set_growth_interval(7)
            return f(_rand(T, i, 2, 3)), net.weight
        return run
    compare(build, calls=4)


def test_attributes_of_submodules_the_step_reads_but_does_not_call():
    """The step reads Python attributes of submodules it never calls -- ``net.drop.p`` (a named
    child), ``net.blocks[0].p`` (a ModuleList entry) and ``seq[1].p`` (a Sequential entry) --
    and the caller changes them between calls. Found here: each was baked in as the traced
    call's number (only the module's own attributes were guarded, not its children's)."""
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)
                self.drop = T.nn.Dropout(0.1)
                self.blocks = T.nn.ModuleList([T.nn.Dropout(0.2)])
        net = Net()
        seq = T.nn.Sequential(_linear(T, 3, 2, seed=1), T.nn.Dropout(0.3))

        def step(x):
            return (net.lin(x) * net.drop.p + seq[0](x) * seq[1].p, net.blocks[0].p,
                    net.drop.inplace)

        f = wrap(step)

        def run(i):
            if i >= 2:
                net.drop.p, seq[1].p = 0.1 * i, 0.05 * i
                net.blocks[0].p = 0.5
                net.drop.inplace = i == 3
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_scheduler_changing_lr_between_calls_needs_no_new_trace_when_the_step_does_not_read_it():
    """The guard added for a read lr stays off a step that only uses it in ``opt.step()``:
    one trace for four calls with four learning rates."""
    net = _linear(tracegrad, 3, 2)
    opt = tracegrad.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    sched = tracegrad.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e))

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    f = tracegrad.compile(step)
    for i in range(4):
        f(_rand(tracegrad, i, 2, 3))
        sched.step()
    assert f.stats["traces"] == 1 and f.stats["graph_breaks"] == [], f.stats


def _clip_by_max(T):
    class ClipByMax(T.autograd.Function):
        """``x / m`` for ``m = x.abs().max()`` and a detached copy of ``x``, both kept as plain
        ctx attributes (not saved); backward clips the gradient to ``[-1/m, 1/m]`` and adds the
        kept tensor (made-up, value-dependent); it raises ValueError when the step asks for it
        through a ctx flag."""

        @staticmethod
        def forward(ctx, x, fail):
            ctx.m = x.detach().abs().max()
            ctx.kept = x.detach() * 0.1
            ctx.fail = fail
            return x / ctx.m

        @staticmethod
        def backward(ctx, g):
            if ctx.fail:
                raise ValueError("ClipByMax: asked to fail")
            lim = 1 / ctx.m
            return T.minimum(T.maximum(g, -lim), lim) + ctx.kept, None
    return ClipByMax


def test_custom_function_with_tensors_on_ctx_and_a_backward_that_raises_after_a_first_backward():
    """A custom Function keeps tensors computed from its input as ctx attributes (new every
    call, never frozen), and its backward raises on the third call after a first ``backward``
    has already accumulated grads: every call's values follow its own input, the failing call
    leaves the first backward's grads and the unstepped parameters as eagerly, and the next
    call runs normally again."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        head = _linear(T, 3, 1, seed=3)
        opt = T.optim.SGD([*net.parameters(), *head.parameters()], lr=0.1, momentum=0.9)
        fn = _clip_by_max(T)

        def step(x, fail):
            opt.zero_grad()
            h = net(x)
            head(h.detach()).pow(2).sum().backward()
            loss = fn.apply(h, fail).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 3) * (i + 1)
            if i == 2:
                with pytest.raises(ValueError, match="asked to fail"):
                    f(x, True)
                out = None
            else:
                out = f(x, False)
            return (out, net.weight, net.weight.grad, head.weight.grad,
                    opt.state[net.weight]["momentum_buffer"])
        return run
    compare(build, calls=4)


def test_learning_rate_read_through_a_copy_of_the_param_group():
    """``dict(group)["lr"]`` inside the step after the caller changed the lr: the new number,
    as eagerly (was baked in as the traced call's until round 15 guarded a copy's reads)."""
    net = _linear(tracegrad, 3, 2)
    opt = tracegrad.optim.SGD(net.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
        return dict(opt.param_groups[0])["lr"]

    f = tracegrad.compile(step)
    seen = []
    for i in range(3):
        opt.param_groups[0]["lr"] = 0.1 * (i + 1)
        seen.append(f(_rand(tracegrad, i, 2, 3)))
    assert seen == [0.1, 0.2, 0.1 * 3], seen
