"""Thirteenth round of adversarial compiled-vs-eager programs: optimizer hyperparameters that
are not the learning rate changed between calls (``maximize``, per-group ``weight_decay``,
Adam's ``betas``, ``foreach``), optimizer state reset or edited by the caller between calls,
schedulers stepped inside the step (``OneCycleLR``, ``ReduceLROnPlateau`` fed the step's own
loss tensor), ``torch.Generator`` objects reseeded or restored between calls, dropout toggled
between train and eval, tensors built inside from Python lists or numpy arrays the caller
mutates between calls, and data-dependent control flow (Python ``if``/``while`` on tensor
values, ``nonzero``/``masked_select``). torch eager, tracegrad eager and ``tracegrad.compile``
run each program from the same state and must agree after every call
(``_dynamo_port.compare``)."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import same
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_optimizer_hyperparameters_other_than_lr_changed_between_calls():
    """Two param groups (SGD with momentum, per-group ``weight_decay``) and an Adam: between
    calls the caller flips ``maximize``, changes one group's ``weight_decay`` and ``dampening``,
    Adam's ``betas`` and ``eps``, and ``foreach``: each call uses the values set before it,
    as eagerly (none may be frozen into the program)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        scale = T.nn.Parameter(T.ones(2) * 0.3)
        sgd = T.optim.SGD([{"params": [net.weight], "weight_decay": 0.1},
                           {"params": [net.bias], "weight_decay": 0.0}], lr=0.1, momentum=0.9)
        adam = T.optim.Adam([scale], lr=0.05)

        def step(x):
            sgd.zero_grad()
            adam.zero_grad()
            loss = (net(x) * scale).pow(2).sum()
            loss.backward()
            sgd.step()
            adam.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                sgd.param_groups[0]["maximize"] = True
                sgd.param_groups[1]["weight_decay"] = 0.5
                sgd.param_groups[1]["dampening"] = 0.5
                adam.param_groups[0]["betas"] = (0.5, 0.9)
                adam.param_groups[0]["eps"] = 1e-2
            if i == 3:
                sgd.param_groups[0]["maximize"] = False
                sgd.param_groups[0]["foreach"] = False
                adam.param_groups[0]["maximize"] = True
            loss = f(_rand(T, i, 2, 3))
            return (loss, net.weight, net.bias, scale,
                    sgd.state[net.weight]["momentum_buffer"], adam.state[scale]["exp_avg_sq"])
        return run
    compare(build, calls=4)


def test_optimizer_state_reset_or_edited_by_the_caller_between_calls():
    """The caller zeroes a momentum buffer in place, deletes another parameter's state (the
    next step starts it again from the gradient), and replaces Adam's ``step`` counter and
    ``exp_avg`` between calls while still holding the old ones (a log of snapshots). Found
    here: the compiled step kept updating the old ``step`` tensor (the orphan guard sees
    nothing while the caller holds it): now a new tensor there traces again."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        sgd = T.optim.SGD([net.weight], lr=0.1, momentum=0.9)
        adam = T.optim.Adam([net.bias], lr=0.1)
        kept = []

        def step(x):
            sgd.zero_grad()
            adam.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            sgd.step()
            adam.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                sgd.state[net.weight]["momentum_buffer"].zero_()
                adam.state[net.bias]["step"] = T.tensor(10.0)
            if i == 3:
                del sgd.state[net.weight]
                adam.state[net.bias]["exp_avg"] = T.full((2,), 0.5)
            loss = f(_rand(T, i, 2, 3))
            st = adam.state[net.bias]
            kept.append(st["step"])
            kept.append(st["exp_avg"])
            return (loss, net.weight, net.bias, sgd.state[net.weight]["momentum_buffer"],
                    st["step"], st["exp_avg"], st["exp_avg_sq"], kept[0])
        return run
    compare(build, calls=4)


def test_parameter_swapped_inside_a_param_group_between_calls():
    """``opt.param_groups[0]["params"][1] = other`` between calls (the group keeps its length):
    eagerly the optimizer updates ``other`` from then on and leaves the old bias alone. Found
    here: the compiled step kept updating the old bias (its guard counted the parameters
    only); now which parameters a group holds is guarded."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        other = T.nn.Parameter(T.ones(2) * 0.3)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def step(x):
            opt.zero_grad()
            loss = (net(x) * other).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            if i == 2:
                opt.param_groups[0]["params"][1] = other
            return f(_rand(T, i, 2, 3)), net.weight, net.bias, other, other.grad
        return run
    compare(build, calls=4)


def test_schedulers_stepped_inside_the_step():
    """``OneCycleLR`` (momentum cycled too) stepped inside every call, and ``ReduceLROnPlateau``
    given the step's own loss tensor: the learning rate each call uses and the scheduler's
    counters follow the losses, as eagerly (a plateau decision needs the loss's value)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        one = T.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=10)
        head = _linear(T, 2, 1, seed=2)
        opt2 = T.optim.SGD(head.parameters(), lr=0.2)
        plat = T.optim.lr_scheduler.ReduceLROnPlateau(opt2, factor=0.5, patience=0, threshold=0.5)

        def step(x):
            opt.zero_grad()
            opt2.zero_grad()
            loss = head(net(x)).pow(2).sum()
            loss.backward()
            opt.step()
            opt2.step()
            one.step()
            plat.step(loss)
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, 0, 2, 3) * (1 + 0.1 * i))
            return (loss, net.weight, head.weight, opt.param_groups[0]["lr"],
                    opt.param_groups[0]["momentum"], opt2.param_groups[0]["lr"],
                    plat.num_bad_epochs, float(plat.best), one.last_epoch)
        return run
    compare(build, calls=5)


def test_generators_reseeded_and_restored_between_calls():
    """A ``torch.Generator`` passed in draws noise (``randn``, ``bernoulli_``, ``randperm``)
    inside a step; between calls the caller reseeds it, or restores a state saved earlier with
    ``get_state``/``set_state``: each compiled call draws what the eager call draws (the
    generator advanced on every call, not frozen), a restored or reseeded state replays the
    earlier draws. (Draws equal torch's only for the same algorithm: compared with tracegrad
    eager.)"""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        g = T.Generator().manual_seed(3)
        saved = []

        def step(x, gen):
            noise = T.randn(2, 3, generator=gen)
            mask = T.empty(2, 2).bernoulli_(0.5, generator=gen)
            perm = T.randperm(4, generator=gen)
            loss = (net(x + noise) * mask).sum()
            loss.backward()
            return loss, mask, perm

        f = wrap(step)

        def run(i):
            if i == 1:
                saved.append(g.get_state())
            if i == 3:
                g.set_state(saved[0])
            if i == 4:
                g.manual_seed(3)
            T.manual_seed(11)
            net.zero_grad()
            loss, mask, perm = f(_rand(T, i, 2, 3), g)
            return loss, mask, perm, net.weight.grad, g.initial_seed()
        return run
    runs = [build(tracegrad, lambda f: f), build(tracegrad, tracegrad.compile)]
    outs = [[r(i) for i in range(6)] for r in runs]
    for i in range(6):
        same(outs[0][i], outs[1][i], f"call{i}")
    # call 3 replays call 1's state, call 4 call 0's
    same(outs[1][3][1:3], outs[1][1][1:3], "replay")
    same(outs[1][4][1:3], outs[1][0][1:3], "reseed")


def test_dropout_train_eval_toggled_between_calls_and_global_rng_state_restored():
    """Dropout in a module toggled with ``train()``/``eval()`` between calls and the global RNG
    state saved with ``get_rng_state`` and restored between calls: eval calls are
    deterministic, a restored state replays the earlier call's mask."""
    def build(T, wrap):
        net = T.nn.Sequential(_linear(T, 3, 4), T.nn.Dropout(0.5), _linear(T, 4, 2, seed=1))
        saved = []

        def step(x):
            out = net(x)
            out.sum().backward()
            return out

        f = wrap(step)

        def run(i):
            if i == 0:
                T.manual_seed(5)
            if i == 1:
                saved.append(T.get_rng_state())
            if i in (2, 3):
                net.eval()
            if i == 4:
                net.train()
                T.set_rng_state(saved[0])
            net.zero_grad()
            out = f(_rand(T, 0, 2, 3))
            return out, net[0].weight.grad, net.training
        return run
    runs = [build(tracegrad, lambda f: f), build(tracegrad, tracegrad.compile)]
    outs = [[r(i) for i in range(6)] for r in runs]
    for i in range(6):
        same(outs[0][i], outs[1][i], f"call{i}")
    same(outs[1][4], outs[1][1], "restored state replays call 1")
    same(outs[1][2], outs[1][3], "eval is deterministic")


def test_tensors_from_python_data_the_caller_changes_between_calls():
    """Inside a step: ``torch.tensor(lst)`` of a list the caller appends to and edits,
    ``torch.tensor(cfg["w"])`` of a float in a dict, ``as_tensor``/``from_numpy`` of a numpy
    array the caller writes in place, ``torch.stack`` of a list of tensors that grows: each
    call reads the data as it is then (never a constant frozen at the trace). An in-place write
    to the ``from_numpy`` tensor (eagerly it writes the array) is a graph break naming the
    line with ``fullgraph=True``, and the array is left as it was."""
    def build(T, wrap):
        lst = [1.0, 2.0]
        cfg = {"w": 0.5}
        arr = np.arange(3, dtype=np.float32)
        hist = [T.ones(2)]

        def step(x):
            a = T.tensor(lst)
            w = T.tensor(cfg["w"])
            b = T.as_tensor(arr) * 2
            c = T.from_numpy(arr)
            h = T.stack(hist).sum(0)
            return (x[: len(lst)] * a).sum() * w + b.sum() + c[1], h, len(lst)

        f = wrap(step)

        def run(i):
            if i == 2:
                lst.append(3.0)
                lst[0] = 5.0
                cfg["w"] = 1.5
            if i == 3:
                hist.append(T.full((2,), 2.0))
                arr[1] = 10.0
            return f(_rand(T, i, 4)), arr.copy()
        return run
    compare(build, calls=4)
    arr = np.arange(3, dtype=np.float32)

    def bump(x):
        c = tracegrad.from_numpy(arr)
        c.add_(1.0)
        return x + c

    g = tracegrad.compile(bump)
    for _ in range(3):
        g(tracegrad.ones(3))
    assert arr.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"from_numpy.*test_adversarial_round13\.py:\d+"):
        tracegrad.compile(bump, fullgraph=True)(tracegrad.ones(3))
    assert arr.tolist() == [3.0, 4.0, 5.0]


def test_data_dependent_control_flow_on_tensor_values():
    """A step whose Python control flow reads tensor values: skip the update when the loss is
    above a threshold (``if loss > t``), halve until the norm is below 1 (``while``), count
    positive entries with ``nonzero`` and take a masked mean with ``masked_select``; the
    branch taken changes between calls (graph breaks: eager every call, same values). The same
    skip written with ``torch.where`` compiles into one program that takes each call's branch;
    with ``fullgraph=True`` the ``if`` is an error naming its line, before any state changed."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, t):
            opt.zero_grad()
            out = net(x)
            loss = out.pow(2).sum()
            loss.backward()
            skipped = bool(loss > t)
            if not skipped:
                opt.step()
            z, n = x, 0
            while z.norm() > 1:
                z = z / 2
                n += 1
            pos = out.detach().gt(0).nonzero()
            sel = T.masked_select(out, out > 0)
            return loss, skipped, n, z, pos, sel.sum(), sel.numel()

        def where_step(x, t):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            with T.no_grad():
                for p in net.parameters():
                    p.sub_(T.where(loss > t, 0.0, 0.1) * p.grad)
            return loss

        f, g = wrap(step), wrap(where_step)

        def run(i):
            x = _rand(T, i, 2, 3) * (1 + i)
            return f(x, 3.0), net.weight.clone(), g(x, 3.0), net.weight
        return run
    compare(build, calls=5)
    net = _linear(tracegrad, 3, 2)

    def skip(x):
        loss = net(x).sum()
        if loss > 0:
            with tracegrad.no_grad():
                net.weight.mul_(0.5)
        return loss

    w0 = net.weight.tolist()
    with pytest.raises(tracegrad.compiler.GraphBreak, match=r"test_adversarial_round13\.py:\d+"):
        tracegrad.compile(skip, fullgraph=True)(_rand(tracegrad, 0, 2, 3).abs())
    assert net.weight.tolist() == w0


def test_generator_objects_new_each_call_and_seeds_from_arguments():
    """A fresh ``torch.Generator`` seeded alike passed in each call draws the same values each
    call; ``torch.manual_seed(seed)`` inside a step with ``seed`` an argument that changes
    between calls (a seed read, not frozen: equal seeds give equal draws, as eagerly)."""
    def step(x, gen, seed):
        a = x * tracegrad.rand(3, generator=gen)
        tracegrad.manual_seed(seed)
        return a, x + tracegrad.rand(3)

    f = tracegrad.compile(step)
    outs = [[], []]
    for k, fn in enumerate((step, f)):
        for i in range(3):
            outs[k].append(fn(tracegrad.ones(3), tracegrad.Generator().manual_seed(7), i % 2))
    same(outs[0], outs[1], "compiled vs eager")
    same(outs[1][0][0], outs[1][2][0], "a fresh generator, same seed")
    same(outs[1][0][1], outs[1][2][1], "manual_seed(0) twice")
    assert outs[1][0][1].tolist() != outs[1][1][1].tolist()


def test_exception_raised_after_the_optimizer_step_inside():
    """A step that raises (a Python ``raise`` on an argument) after ``opt.step()``: eagerly the
    parameters, Adam's state and the grads are updated once and the exception propagates; the
    compiled call whose trace meets the ``raise`` must leave the same state (not roll back, not
    update twice) and raise the same exception, and later calls go on from there."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.Adam(net.parameters(), lr=0.1)

        def step(x, i):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            if i == 2:
                raise ValueError(f"bad batch {i}")
            return loss

        f = wrap(step)

        def run(i):
            try:
                out = f(_rand(T, i, 2, 3), i)
            except ValueError as e:
                out = str(e)
            st = opt.state[net.weight]
            return out, net.weight, st["step"], st["exp_avg"], net.weight.grad
        return run
    compare(build, calls=4)
