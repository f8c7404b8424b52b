"""Ninth round of adversarial compiled-vs-eager programs: version counters after cached calls
(the saved-tensor check a later backward makes), an lr given as a tensor and changed in place,
a scheduler stepping inside the step, a param group added between calls, grad accumulation over
several compiled calls then one eager step, the same function with and without grad mode, a
``.grad`` deleted or replaced between calls, Python numbers on modules changed between calls
(dropout p, LayerNorm eps, a temperature, a class attribute, a nested config), a submodule
swapped and ``forward`` monkeypatched, ``self.last_attn = attn`` read (and differentiated)
after the call, logging through ``.item()``/``.tolist()`` and hooks, warnings under an
"always" filter, ``torch.Generator`` arguments, ``manual_seed`` and a module made inside the
function, checkpoint inside the step and dict/list arguments whose length changes. torch eager,
tracegrad eager and ``tracegrad.compile`` run each program from the same state and must agree
after every call (``_dynamo_port.compare``). Found here and fixed: a cached program wrote the
parameters, ``.grad``s, optimizer state and in-place-updated arguments without bumping their
version counters, so backward through a graph built before the call (which saved a parameter)
used the updated values silently where eager raises "modified by an inplace operation" (and
results came back at version 0); a hook removing itself, ``requires_grad_`` flipping a
parameter's flag and a counter kept as a Python attribute on a parameter were done once while
tracing and then frozen; a number kept on a parameter was baked in; attributes set on a result
were missing from cached calls' results; torch's once-per-process warnings under an "always"
filter broke the trace (fullgraph=True raised); a graph break from a logging call named the
logging package's line instead of the user's."""
import logging
import warnings

import pytest

import tracegrad

from ._dynamo_port import compare, same, seeded_linear as _linear
from ._dynamo_port import randn32 as _rand

torch = pytest.importorskip("torch")


def _tracegrad_only(build, calls=4):
    """For programs that draw random numbers (torch's stream differs): tracegrad eager and
    ``tracegrad.compile`` from the same seed must agree after every call."""
    runs = [build(tracegrad, lambda f: f), build(tracegrad, tracegrad.compile)]
    for i in range(calls):
        same(runs[0](i), runs[1](i), f"call{i} compiled vs eager")


# Version counters: eager's optimizer step and in-place ops bump the version of every tensor they
# write (params, .grad, optimizer state, arguments; and ``increment_version``); a cached program
# wrote them back without a bump, so a graph built before the call that saved a parameter (here:
# the weight saved for x's gradient) backpropagated through the new value.
def test_version_counters_after_cached_calls_and_the_saved_tensor_check():
    def build(T, wrap):
        net = _linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            x.add_(1.0)
            x.mul_(0.5)
            y[0].zero_()
            T.autograd.graph.increment_version(net.bias)
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            x, y = _rand(T, i, 4, 3), _rand(T, i + 1, 4, 3)
            early = _rand(T, i + 2, 4, 3).requires_grad_()
            pending = net(early).sum()          # saves net.weight for early's gradient
            loss = f(x, y)
            try:
                pending.backward()
                err = None
            except RuntimeError as e:
                err = "modified by an inplace operation" in str(e)
            st = opt.state[net.weight]
            versions = [t._version for t in (x, y, net.weight, net.bias, net.weight.grad, st["momentum_buffer"])]
            return loss, x, y, net.weight, err, early.grad, versions
        return run
    compare(build)


# lr as a tensor (changed in place, then replaced by a float), a scheduler stepping inside the
# step, a second param group added between calls
def test_tensor_lr_scheduler_inside_and_param_group_added_between_calls():
    def build(T, wrap):
        net, head = _linear(T, 3, 3), _linear(T, 3, 2, seed=1)
        lr = T.tensor(0.1)
        opt = T.optim.Adam(net.parameters(), lr=lr)
        sched = T.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        def step(x):
            opt.zero_grad()
            loss = head(net(x).tanh()).pow(2).mean()
            loss.backward()
            opt.step()
            sched.step()
            return loss
        f = wrap(step)

        def run(i):
            if i == 2:
                lr.fill_(0.05)                   # the group holds this tensor: eager reads it
                opt.add_param_group({"params": head.parameters(), "lr": 0.2})
            if i == 4:
                opt.param_groups[0]["lr"] = 0.01
            loss = f(_rand(T, i, 4, 3))
            return (loss, net.weight, head.weight, head.bias.grad,
                    [float(g["lr"]) for g in opt.param_groups], sched.last_epoch)
        return run
    compare(build, calls=5)


# .grad accumulated over three compiled calls, then one eager optimizer step; grads zeroed in
# place or set to None alternately; a .grad deleted and another replaced between calls; the
# same function under no_grad on odd calls
def test_grad_accumulation_grad_mode_and_grads_changed_between_calls():
    def build(T, wrap):
        net = _linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def micro(x):
            y = net(x)
            if y.requires_grad:
                (y.pow(2).mean() / 3).backward()
            return y.detach().sum(), y.requires_grad
        f = wrap(micro)

        def run(i):
            if i == 3:
                del net.weight.grad
                net.bias.grad = T.full((2,), 0.5)
            if i % 2:
                with T.no_grad():
                    outs = [f(_rand(T, 3 * i + k, 4, 3)) for k in range(2)]
            else:
                outs = [f(_rand(T, 3 * i + k, 4, 3)) for k in range(3)]
            grads = [None if p.grad is None else p.grad.clone() for p in net.parameters()]
            opt.step()
            opt.zero_grad(set_to_none=(i % 4 == 0))
            return outs, grads, net.weight, net.bias, net.bias.grad
        return run
    compare(build)


# Python numbers on modules and objects changed between calls: dropout p (0 and 1 draw
# nothing random), LayerNorm eps, a temperature, a class attribute, a nested config's float,
# dict entry and mode string; then a submodule swapped and forward monkeypatched
def test_python_numbers_submodules_and_forward_changed_between_calls():
    def build(T, wrap):
        class Net(T.nn.Module):
            sign = 1.0

            def __init__(self, cfg):
                super().__init__()
                self.lin, self.act = _linear(T, 3, 3), T.nn.ReLU()
                self.drop, self.norm = T.nn.Dropout(0.0), T.nn.LayerNorm(3)
                self.temperature, self.cfg = 1.0, cfg

            def forward(self, x):
                y = self.norm(self.act(self.lin(x))) / self.temperature * type(self).sign
                y = self.drop(y) + self.cfg.extra["bias"]
                return y.mean() if self.cfg.inner.mode == "mean" else y.sum() * self.cfg.inner.k

        class Cfg:
            pass
        cfg, cfg.inner = Cfg(), Cfg()
        cfg.extra, cfg.inner.mode, cfg.inner.k = {"bias": 0.5}, "mean", 2.0
        m = Net(cfg)
        f = wrap(m)
        forward = m.forward

        def run(i):
            if i == 1:
                m.drop.p, m.norm.eps = 1.0, 0.5
            if i == 2:
                m.drop.p, m.temperature, Net.sign = 0.0, 3.0, -1.0
                cfg.extra["bias"], cfg.inner.mode = -1.0, "sum"
            if i == 3:
                cfg.inner.k = 0.25
                m.act = T.nn.Tanh()
                m.forward = lambda x: forward(x) * 10
            return f(_rand(T, i, 4, 3))
        return run
    compare(build)


# a forward storing its attention weights and its input on self: read after the call, the
# same tensors (the input by identity), differentiable (backward from the stored tensor reaches
# the parameters), with grad_fn names and a retained grad as eager
def test_tensors_stored_on_self_in_forward_read_and_differentiated_after():
    def build(T, wrap):
        class Attn(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.q = _linear(T, 3, 3)

            def forward(self, x):
                h = self.q(x)
                h.retain_grad()
                attn = h.softmax(-1)
                self.last_attn, self.last_in, self.h = attn, x, h
                return (attn * x).sum()
        m = Attn()
        f = wrap(m)

        def run(i):
            x = _rand(T, i, 4, 3)
            out = f(x)
            same_input = m.last_in is x
            name = type(m.last_attn.grad_fn).__name__
            (out + m.last_attn.pow(2).sum()).backward()
            g = m.q.weight.grad.clone()
            m.zero_grad()
            x.add_(1.0)                          # the stored input is the caller's tensor
            return out, m.last_attn, same_input, name, m.last_in, m.h.grad, g
        return run
    compare(build)


# logging inside the step: .item() and .tolist() into a list, a forward hook counting calls, a
# tensor hook recording gradient norms, post-accumulate-grad hooks stepping per-parameter
# optimizers; and a warning under an "always" filter, which eager issues on every call
def test_logging_hooks_and_warnings_on_every_call():
    def build(T, wrap):
        net = _linear(T)
        opts = {p: T.optim.SGD([p], lr=0.1, momentum=0.9) for p in net.parameters()}
        log, shapes, norms = [], [], []
        net.register_forward_hook(lambda mod, inp, out: shapes.append(tuple(out.shape)))
        net.weight.register_hook(lambda g: norms.append(round(float(g.norm()), 4)))

        def apply(p):
            opts[p].step()
            opts[p].zero_grad()
        for p in net.parameters():
            p.register_post_accumulate_grad_hook(apply)

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            log.append((round(loss.item(), 4), [round(v, 4) for v in net.bias.detach().tolist()]))
            warnings.warn("step done", UserWarning)
            return loss
        f = wrap(step)

        def run(i):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                loss = f(_rand(T, i, 4, 3))
            mine = sum(str(w.message) == "step done" for w in seen)
            return loss, net.weight, net.weight.grad, list(log), list(shapes), list(norms), mine
        return run
    compare(build)


# a torch.Generator passed in (reseeded between calls), manual_seed and a module built inside
# the function: the draws, the generator's and the global stream's next values as eagerly
def test_generators_passed_in_and_seeded_module_made_inside():
    def build(T, wrap):
        gen = T.Generator().manual_seed(3)

        def fn(x, g):
            noise = T.rand(x.shape, generator=g)
            T.manual_seed(7)
            layer = T.nn.Linear(3, 2)
            y = layer(x + noise)
            y.sum().backward()
            return y, layer.weight.grad, T.randn(2)
        f = wrap(fn)

        def run(i):
            if i == 2:
                gen.manual_seed(5)
            T.manual_seed(100 + i)
            out = f(_rand(T, i, 4, 3), gen)
            return out, T.rand(2, generator=gen), T.randn(2)
        return run
    _tracegrad_only(build, calls=3)


# checkpoint inside the step, over a dict and a list argument whose lengths change by call
def test_checkpoint_inside_over_dict_and_list_arguments_of_changing_length():
    def build(T, wrap):
        net, head = _linear(T, 3, 3), _linear(T, 3, 2, seed=4)
        opt = T.optim.SGD(list(net.parameters()) + list(head.parameters()), lr=0.1)
        checkpoint = __import__(T.__name__ + ".utils.checkpoint", fromlist=["checkpoint"]).checkpoint

        def step(batch, extras):
            opt.zero_grad()
            x = sum(batch.values()) + sum(extras)
            h = checkpoint(lambda t: net(t).tanh(), x, use_reentrant=False)
            loss = head(h).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, sorted(batch), len(extras)
        f = wrap(step)

        def run(i):
            batch = {f"k{j}": _rand(T, i + j, 4, 3) for j in range(1 + i // 2)}
            extras = [_rand(T, 9 + j, 4, 3) for j in range(2 - i // 2)]
            return f(batch, extras), net.weight, head.weight
        return run
    compare(build)


# results and tensors stored on the module come back with the versions the in-place ops inside
# gave them (eager: 2 and 2; a cached call gave 0)
def test_versions_of_results_and_stored_tensors_written_inside():
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin, self.stats = _linear(T), None

            def forward(self, x):
                y = self.lin(x)
                s = T.zeros(2)
                s.add_(y.detach().mean(0))
                s.mul_(2)
                self.stats = s
                z = y.detach().clone()
                z.add_(1)
                z[0].mul_(2)
                return y.sum(), z, z[1]
        m = Net()
        f = wrap(m)

        def run(i):
            loss, z, row = f(_rand(T, i, 4, 3))
            return loss, z, m.stats, [z._version, row._version, m.stats._version]
        return run
    compare(build, calls=3)


# torch's once-per-process warnings (``x.T`` on 3 dims, ``meshgrid`` without ``indexing``) under
# an "always" filter: shown once, on the first call, and the function still compiles whole
# (fullgraph=True raised before); under set_warn_always(True) they come on every call, as torch's
def test_once_per_process_warnings_inside_a_compiled_step(fresh_warn_once):
    def fn(x):
        a, _ = tracegrad.meshgrid(x[0, 0], x[0, 1])
        return x.T.sum(0) * 2 + a.sum()
    f = tracegrad.compile(fn, fullgraph=True)
    shown = []
    for i in range(3):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = f(_rand(tracegrad, i, 2, 3, 4))
        shown.append(sorted(str(w.message)[:20] for w in seen))
        x = _rand(torch, i, 2, 3, 4)
        same(x.permute(2, 1, 0).sum(0) * 2 + x[0, 0].sum() * 4, out)
    assert shown == [["The use of `x.T` on ", "torch.meshgrid: in a"], [], []]
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 0
    g = tracegrad.compile(lambda x: x.T.sum())
    tracegrad.set_warn_always(True)
    try:
        for i in range(3):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                out = g(_rand(tracegrad, i, 2, 3, 4))
            assert [str(w.message)[:20] for w in seen if "x.T" in str(w.message)] == ["The use of `x.T` on "]
            same(_rand(torch, i, 2, 3, 4).sum(), out)
    finally:
        tracegrad.set_warn_always(False)


# a logging call inside the step: a record on every call (the step runs eagerly), and under
# fullgraph=True the error names the user's line, not the logging package's
def test_logging_inside_the_step_every_call_and_fullgraph_names_the_line(caplog):
    def build(T, wrap):
        net = _linear(T)
        logger = logging.getLogger("tests.round9")

        def step(x):
            y = net(x).sum()
            logger.warning("step %d", x.shape[0])
            return y
        f = wrap(step)

        def run(i):
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="tests.round9"):
                out = f(_rand(T, i, 4, 3))
            return out, [r.getMessage() for r in caplog.records if r.name == "tests.round9"]
        return run
    compare(build, calls=3)
    logger = logging.getLogger("tests.round9")

    def step(x):
        y = x * 2
        logging.LoggerAdapter(logger, {}).warning("here")
        return y
    with pytest.raises(tracegrad.compiler.GraphBreak,
                       match=rf"{__file__}:{step.__code__.co_firstlineno + 2}\)"):
        tracegrad.compile(step, fullgraph=True)(tracegrad.ones(2))


# a one-shot hook removing itself when it first fires (registered again before call 2): a
# cached program kept applying it, and a fullgraph trace dropped it on its first call; now the
# removal is a graph break (the hook then fires once per registration, as eagerly) and
# fullgraph=True names the line that removes it, leaving the hook registered
def test_hook_removing_itself_when_it_fires():
    def build(T, wrap):
        net = _linear(T)
        handles = []

        def once(g):
            handles[-1].remove()
            return g * 2
        handles.append(net.weight.register_hook(once))

        def step(x):
            loss = net(x).pow(2).mean()
            loss.backward()
            return loss
        f = wrap(step)

        def run(i):
            if i == 2:
                handles.append(net.weight.register_hook(once))
            loss = f(_rand(T, i, 4, 3))
            g = net.weight.grad
            net.weight.grad = None
            return loss, g
        return run
    compare(build)
    net = _linear(tracegrad)
    box = []

    def once(g):
        box[0].remove()
        return g * 2
    box.append(net.weight.register_hook(once))
    x = _rand(tracegrad, 0, 4, 3)
    step = tracegrad.compile(lambda x: net(x).sum().backward(), fullgraph=True)
    with pytest.raises(tracegrad.compiler.GraphBreak,
                       match=rf"hook is removed .*{__file__}:{once.__code__.co_firstlineno + 1}\)"):
        step(x)
    assert net.weight.grad is None
    net(x).sum().backward()          # still registered: doubles this gradient, then goes
    same(x.sum(0).expand(2, 3) * 2, net.weight.grad)


# requires_grad_ flipped inside the step on a parameter (every other call trains the bias): the
# trace flipped it, a retrace flipped it back, and every later call ran a program that never
# flipped or trained it; now a graph break, and under fullgraph=True an error naming the line.
# Setting the flag it already has (freezing inside every step), or flipping it and back within
# the step (a GAN freezing its discriminator for the generator's update), stays compiled.
def test_requires_grad_flipped_inside_the_step():
    def build(T, wrap):
        net = _linear(T)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, freeze_weight):
            opt.zero_grad()
            net.bias.requires_grad_(not net.bias.requires_grad)
            net.weight.requires_grad_(not freeze_weight)
            loss = net(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 4, 3), i == 3)
            return loss, net.weight, net.bias, net.bias.requires_grad, net.weight.requires_grad, net.bias.grad
        return run
    compare(build)
    net = _linear(tracegrad)

    def freeze(x):
        net.weight.requires_grad_(False)
        return net(x).sum()
    f = tracegrad.compile(freeze)
    for i in range(3):
        same(_linear(torch)(_rand(torch, i, 4, 3)).sum(), f(_rand(tracegrad, i, 4, 3)))
    assert f.stats["traces"] == 1 and not f.stats["graph_breaks"]
    made = []

    def build_gan(T, wrap):
        gen, disc = _linear(T, 3, 3, seed=1), _linear(T, 3, 1, seed=2)
        opt_g, opt_d = T.optim.SGD(gen.parameters(), lr=0.1), T.optim.SGD(disc.parameters(), lr=0.1)

        def step(z, real):
            disc.requires_grad_(False)
            opt_g.zero_grad()
            loss_g = -disc(gen(z).tanh()).mean()
            loss_g.backward()
            opt_g.step()
            disc.requires_grad_(True)
            opt_d.zero_grad()
            loss_d = disc(gen(z).tanh().detach()).mean() - disc(real).mean()
            loss_d.backward()
            opt_d.step()
            return loss_g, loss_d
        f = wrap(step)
        made.append(f)

        def run(i):
            return f(_rand(T, i, 4, 3), _rand(T, i + 7, 4, 3)), gen.weight, disc.weight, disc.weight.requires_grad
        return run
    compare(build_gan, calls=3)
    assert made[-1].stats["traces"] == 1 and not made[-1].stats["graph_breaks"]    # the compiled run's
    net.weight.requires_grad_(True)
    g = tracegrad.compile(freeze, fullgraph=True)
    with pytest.raises(tracegrad.compiler.GraphBreak,
                       match=rf"requires_grad_\(\) leaves .*{__file__}:{freeze.__code__.co_firstlineno + 1}\)"):
        g(_rand(tracegrad, 0, 4, 3))
    assert net.weight.requires_grad


# Python attributes on tensors: a counter kept on a parameter (``p.steps += 1``) and a stat
# stashed on one were frozen at the value the trace (and its retrace) left; a scale kept on a
# parameter and changed between calls was baked in; a tag set on a result was missing from every
# cached call's result. Now the first is a graph break (the step runs eagerly, the counter moves
# on every call), the scale is guarded (a new value traces again), the tag comes back on every
# result, and a mutable value on a result is a graph break
def test_python_attributes_on_parameters_and_results():
    def build(T, wrap):
        net = _linear(T)

        def step(x):
            net.weight.steps = getattr(net.weight, "steps", 0) + 1
            y = net(x)
            net.bias.last_mean = y.detach().mean()
            return y.sum() * net.weight.steps
        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 4, 3)), net.weight.steps, net.bias.last_mean

        return run
    compare(build)

    def build_tags(T, wrap):
        net = _linear(T)

        def fwd(x):
            y = net(x)
            y.tag, y.shape_seen = "logits", (4, 2)
            h = y.detach()
            h.info = {"calls": 1} if x.shape[0] == 2 else None
            return y, h
        f = wrap(fwd)

        def run(i):
            y, h = f(_rand(T, i, 2 if i == 3 else 4, 3))
            return y, y.tag, y.shape_seen, h.info
        return run
    compare(build_tags)

    def build_scale(T, wrap):
        net = _linear(T)
        net.weight.lr_scale, net.weight.flag = 1.0, True

        def step(x):
            net.weight.flag = True        # the object it already holds: the same on every call
            return net(x).sum() * net.weight.lr_scale
        f = wrap(step)

        def run(i):
            if i == 3:
                net.weight.lr_scale = 3.0
            return f(_rand(T, i, 4, 3))
        return run
    compare(build_scale, calls=5)
