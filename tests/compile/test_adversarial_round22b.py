"""Twenty-second round of adversarial compiled-vs-eager programs, second file (also
test_adversarial_round22.py and test_adversarial_round22c.py): ``clip_grad_value_`` then
``clip_grad_norm_`` (``foreach`` from an argument, ``error_if_nonfinite=False``) meeting a NaN on
one call, grad mode nested three deep (``no_grad`` > ``set_grad_enabled(flag)`` >
``enable_grad``) with ``flag`` an argument, random draws from a ``Generator`` argument that
alternates between two objects the caller reseeds, and a step that reads ``p.grad`` before
``zero_grad(set_to_none=flag)`` with the flag toggled. torch eager, tracegrad eager and
``tracegrad.compile`` run each program from the same state and must agree after every call
(``_dynamo_port.compare_programs``; random draws against tracegrad eager only, as streams
differ). Nothing found in these programs."""
import pytest

import tracegrad

from ._dynamo_port import compare_programs, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_clip_by_value_then_by_norm_with_foreach_from_an_argument_and_a_nan_on_one_call():
    """``clip_grad_value_(0.5)`` then ``clip_grad_norm_(1.0, foreach=fe,
    error_if_nonfinite=False)``; on call 2 the batch holds a NaN, the total norm is NaN and the
    step then replaces non-finite gradient entries by 0 with ``nan_to_num_`` before stepping
    (the parameters stay finite); ``fe`` alternates between calls."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 4), T.nn.Tanh(), _linear(T, 4, 1, seed=1))
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def step(x, fe):
            opt.zero_grad()
            loss = net(x).pow(2).mean()
            loss.backward()
            T.nn.utils.clip_grad_value_(net.parameters(), 0.5)
            norm = T.nn.utils.clip_grad_norm_(net.parameters(), 1.0, foreach=fe, error_if_nonfinite=False)
            for p in net.parameters():
                p.grad.nan_to_num_(0.0, 0.0, 0.0)
            opt.step()
            return loss, norm

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 3, 3)
            if i == 2:
                x[1, 0] = float("nan")
            out = f(x, i % 2 == 0)
            return out, net[0].weight, net[2].bias, net[0].bias.grad
        return run
    compare_programs(build, calls=4, traces=range(2, 3))


def test_grad_mode_nested_three_deep_with_the_middle_flag_from_an_argument():
    """Inside ``no_grad()``, ``set_grad_enabled(flag)`` then ``enable_grad()`` (always on): the
    middle part records a graph only when ``flag`` is True; the loss adds it so the gradient of
    the middle layer exists on some calls only (``.grad`` stays from the last call that had it,
    as ``zero_grad`` sets None). The results' ``requires_grad`` and the grad mode inside are
    returned too."""
    def build(T, wrap):
        a, b, c = _linear(T, 3, 3), _linear(T, 3, 3, seed=1), _linear(T, 3, 1, seed=2)
        opt = T.optim.SGD([*a.parameters(), *b.parameters(), *c.parameters()], lr=0.1)

        def step(x, flag):
            opt.zero_grad()
            with T.no_grad():
                h0 = a(x)
                with T.set_grad_enabled(flag):
                    h1 = b(h0)
                    mid = T.is_grad_enabled()
                    with T.enable_grad():
                        y = c(h1.tanh())
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, h0.requires_grad, h1.requires_grad, mid, T.is_grad_enabled()

        f = wrap(step)
        flags = [True, False, True, False]

        def run(i):
            out = f(_rand(T, i, 2, 3), flags[i])
            return out, a.weight, b.weight, b.bias.grad, c.weight.grad
        return run
    compare_programs(build, calls=4, traces=2)


def test_draws_from_a_generator_argument_alternating_between_two_reseeded_objects():
    """The step draws noise with ``randn(..., generator=g)`` and a dropout-style mask with
    ``rand(..., generator=g)`` from the Generator it is given; the caller alternates two
    Generator objects and reseeds the first before call 3 (its stream restarts), while the
    global RNG, unused, must not move. Against tracegrad eager (torch's streams differ)."""
    def build(wrap):
        net = _linear(tracegrad, 3, 2)
        opt = tracegrad.optim.SGD(net.parameters(), lr=0.1)
        g1, g2 = tracegrad.Generator().manual_seed(1), tracegrad.Generator().manual_seed(2)

        def step(x, g):
            opt.zero_grad()
            noise = tracegrad.randn(x.shape, generator=g) * 0.1
            keep = (tracegrad.rand(2, 2, generator=g) > 0.3).float()
            loss = (net(x + noise) * keep / 0.7).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, keep

        f = wrap(step)

        def run(i):
            if i == 3:
                g1.manual_seed(1)
            tracegrad.manual_seed(7)
            out = f(_rand(tracegrad, i, 2, 3), g1 if i % 2 == 0 else g2)
            return out, net.weight, g1.get_state(), g2.get_state(), tracegrad.rand(2)
        return run
    compiled = tracegrad.compile
    eager_run, comp_run = build(lambda f: f), build(compiled)
    for i in range(5):
        same(eager_run(i), comp_run(i), f"call{i} compiled vs eager")


def test_reading_grads_before_zero_grad_with_set_to_none_toggled_between_calls():
    """The step logs the previous call's gradient norms (0 for a ``None``) before calling
    ``zero_grad(set_to_none=flag)``; the flag alternates, so the step sees ``None`` gradients
    on some calls and zero-filled ones on others, and Adam sees zero-filled gradients too."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.05)

        def step(x, flag):
            before = [T.zeros(()) if p.grad is None else p.grad.norm() for p in net.parameters()]
            opt.zero_grad(set_to_none=flag)
            after = [p.grad is None for p in net.parameters()]
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, before, after

        f = wrap(step)
        flags = [True, False, False, True, False]

        def run(i):
            out = f(_rand(T, i, 2, 3), flags[i])
            return out, net.weight, net.weight.grad
        return run
    compare_programs(build, calls=5, traces=range(1, 4))
