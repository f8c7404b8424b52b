"""Fourteenth round of adversarial compiled-vs-eager programs: custom ``autograd.Function``s
whose ctx state, ``needs_input_grad`` and saved tensors change from call to call, layers frozen
or replaced while ``zero_grad(set_to_none=False)`` keeps stale zero gradients (momentum still
moves them), one step function compiled twice with different options next to a compiled eval
step and eager calls, a short last batch with ``mark_dynamic``/``dynamic=True``, and
``autograd.grad``/``backward(inputs=...)`` with ``allow_unused``/``materialize_grads`` inside.
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
    compare(build, calls=5)


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
            if i == 4:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    f(x, 0.5, True)
                return lin.weight, lin.weight.grad, w, w.grad
            return f(x, 1.0 + i % 2, False), lin.weight, lin.weight.grad, w, w.grad
        return run
    compare(build, calls=5)


def test_step_compiled_twice_with_different_options_and_an_eval_step_share_one_optimizer():
    """One step function compiled plainly and with ``fullgraph=True, dynamic=False``, a compiled
    eval step under ``no_grad`` that flips the model to eval and back, and the plain step
    called eagerly: they share Adam's state and parameters, so each sees the others'
    updates."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3), T.nn.Dropout(0.0), _linear(T, 3, 1, seed=1))
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
            return outs, net[0].weight, net[2].bias, st["step"], st["exp_avg_sq"]
        return run
    compare(build, calls=4)
