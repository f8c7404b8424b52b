"""``requires_grad`` flipped between compiled calls (NOTE [requires_grad flips between calls] in
``tracegrad/_state.py``): a GAN loop freezing the discriminator for the generator's step and
unfreezing it for its own keeps one program per step (before, every flip sent every compiled
step back to tracing, and to eager at the cache limit); a flip the program was not traced for
traces again. Each program runs under torch eager, tracegrad eager and ``tracegrad.compile``
and must agree after every call."""
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear
from ._dynamo_port import train_step

torch = pytest.importorskip("torch")


def _set_rg(module, flag):
    for p in module.parameters():
        p.requires_grad_(flag)


def test_gan_loop_freezing_the_discriminator_keeps_one_program_per_step():
    steps = {}

    def build(T, wrap):
        G, D = _linear(T, 2, 2, seed=1), _linear(T, 2, 1, seed=2)
        og, od = T.optim.SGD(G.parameters(), lr=0.1), T.optim.SGD(D.parameters(), lr=0.1, momentum=0.9)

        def d_step(x, z):
            od.zero_grad()
            loss = (D(x) - D(G(z).detach())).mean()
            loss.backward()
            od.step()
            return loss

        def g_step(z):
            og.zero_grad()
            loss = -D(G(z)).mean()
            loss.backward()
            og.step()
            return loss
        d_step, g_step = wrap(d_step), wrap(g_step)
        steps[T] = (d_step, g_step)

        def run(i):
            x, z = _rand(T, i, 4, 2), _rand(T, 100 + i, 4, 2)
            _set_rg(D, True)
            ld = d_step(x, z)
            _set_rg(D, False)
            lg = g_step(z)
            return (ld, lg, [p.detach().clone() for p in (*G.parameters(), *D.parameters())],
                    [p.grad is None for p in D.parameters()], [p.requires_grad for p in D.parameters()])
        return run
    compare(build, calls=6)
    d_step, g_step = steps[tracegrad]
    # the compiled run is the last one built: one trace each, no eager call after the first
    assert (d_step.stats["traces"], g_step.stats["traces"]) == (1, 1), (d_step.stats, g_step.stats)
    assert (d_step.stats["eager_calls"], g_step.stats["eager_calls"]) == (1, 1)


def test_a_layer_frozen_for_good_traces_again_and_stops_updating():
    """After the caller freezes the first layer, the step traces again: that layer gets no
    ``.grad`` and no update, as eagerly."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 3, seed=3), T.nn.Tanh(), _linear(T, 3, 1, seed=4))
        step = wrap(train_step(T.optim.Adam(net.parameters(), lr=0.05), lambda x: net(x).pow(2).mean()))

        def run(i):
            if i == 3:
                _set_rg(net[0], False)
            loss = step(_rand(T, i, 4, 3))
            return loss, [p.detach().clone() for p in net.parameters()], [p.grad is None for p in net.parameters()]
        return run
    compare(build, calls=6)


def test_a_flip_of_another_tensor_on_a_read_storage_traces_again():
    """The program reads ``w``; the caller flips ``v``, a detached alias of ``w`` the step also
    reads (one storage): that flag is not the one the program was traced with for ``v``."""
    def build(T, wrap):
        w = T.ones(3)
        v = w.detach()

        def step(x):
            y = x * w + x * v
            if v.requires_grad:
                y = y.sum()
            return y
        step = wrap(step)

        def run(i):
            if i == 3:
                v.requires_grad_(True)
            out = step(_rand(T, i, 3))
            return out, v.requires_grad
        return run
    compare(build, calls=5)
