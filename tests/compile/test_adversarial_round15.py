"""Fifteenth round of adversarial compiled-vs-eager programs: Python values that library objects
hand to the traced step and that the caller changes between calls -- a param group read as a
copy (``dict(group)``, ``{**group}``, ``items()``, ``values()``, ``opt.state_dict()``),
``opt.defaults``, optimizer state counts, scheduler counters, a module's repr, ``training``
read by a submodule's own code, parameter/buffer lists, hooks added to a submodule, containers
on a module changed in place, ``hasattr``/``getattr`` of a name set later, a compiled report
reading ``opt.state_dict()`` between eager steps, process-wide settings (default dtype, grad mode, deterministic
algorithms, matmul precision, ``backends.cudnn`` flags), the RNG seed and state, a global config and a
rebound closure variable, and the shape/dtype/``requires_grad`` of a captured tensor the step
reads only as Python (``resize_``, ``set_``, ``.data =`` between calls). torch eager, tracegrad
eager and ``tracegrad.compile`` run each program from the same state and must agree after every
call (``_dynamo_port.compare``)."""
import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def test_param_group_read_as_a_copy_defaults_and_state_counts():
    """The step reads the lr and momentum through ``dict(group)``, ``{**group}``,
    ``group.items()``, ``group.values()``, ``group.copy()`` and ``opt.state_dict()``, reads
    ``opt.defaults["lr"]``, ``len(opt.state)`` and ``len(opt.param_groups)``; the caller
    changes the group's lr and momentum and ``opt.defaults`` between calls and adds a param
    group before the last call. Found here: every copy and ``opt.defaults`` returned the
    traced call's numbers (only ``group[key]``/``group.get(key)`` reads were guarded)."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        extra = _linear(T, 3, 2, seed=1)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)

        def step(x):
            opt.zero_grad()
            loss = (net(x) + extra(x)).pow(2).sum()
            loss.backward()
            opt.step()
            g = opt.param_groups[0]
            return (loss * dict(g)["lr"], {**g}["momentum"], [v for k, v in g.items() if k == "lr"],
                    [v for v in g.values() if isinstance(v, float)], g.copy()["lr"],
                    opt.state_dict()["param_groups"][0]["momentum"], opt.defaults["lr"],
                    len(opt.state), len(opt.param_groups))

        f = wrap(step)

        def run(i):
            if i >= 2:
                opt.param_groups[0]["lr"] = 0.1 * i
                opt.param_groups[0]["momentum"] = 0.25 * i
                opt.defaults["lr"] = 0.5 * i
            if i == 3:
                opt.add_param_group({"params": list(extra.parameters()), "lr": 0.2})
            return f(_rand(T, i, 2, 3)), net.weight, extra.weight
        return run
    compare(build, calls=4)


def test_lr_scheduler_counters_read_inside_the_step():
    """``last_epoch``, ``_step_count``, ``base_lrs`` (mutated in place by the caller) and
    ``get_last_lr()`` of a StepLR the caller steps between calls, read by the step."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        sched = T.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def step(x):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss * sched.last_epoch, sched._step_count, list(sched.base_lrs), sched.get_last_lr()

        f = wrap(step)

        def run(i):
            if i >= 2:
                sched.step()
            if i == 3:
                sched.base_lrs[0] = 0.7
            return f(_rand(T, i, 2, 3)), net.weight
        return run
    compare(build, calls=4)


def test_module_state_read_as_python_and_changed_between_calls():
    """``repr`` and ``extra_repr()`` of a Dropout whose ``p`` the caller sets to 0, a
    submodule whose own forward branches on ``self.training`` while the caller flips the
    parent, the names and sum of ``named_parameters()`` after a parameter is replaced, the
    buffer count after one is registered, a forward hook (with a side effect) registered on a
    submodule between calls, a list/dict on the module mutated in place, and ``hasattr``/
    ``getattr`` with a default of an attribute set later on a library module the step does not
    call. Found here: the
    ``hasattr``/``getattr`` answers stayed the traced call's (a name given as a string was not
    among the names guarded)."""
    def build(T, wrap):
        class Scaled(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 3, 2)

            def forward(self, x):
                return self.lin(x) * (2.0 if self.training else 0.5)

        net = T.nn.Sequential(Scaled(), T.nn.Dropout(0.0))
        net.scales, net.cfg = [1.0, 2.0], {"k": 1.0}
        tag = T.nn.Identity()       # a library module the step never calls
        log = []

        def step(x):
            out = net(x).sum() * net.scales[-1] * net.cfg["k"]
            names = [n for n, _ in net.named_parameters()]
            total = sum(p.sum() for p in net.parameters())
            return (out, total, names, len(list(net.buffers())), repr(net[1]), net[1].extra_repr(),
                    len(net.scales), list(log), hasattr(tag, "note"), getattr(tag, "note", 0))

        f = wrap(step)

        def run(i):
            # one change per call (a replaced parameter or a new buffer traces again anyway)
            if i == 1:
                net.eval()
                net[1].p = 0.5
                net.scales.append(3.0)
            if i == 2:
                net.train()
                net[1].p = 0.0          # training again: no random mask to compare
            if i == 3:
                net[0].lin.weight = T.nn.Parameter(T.ones(2, 3))
            if i == 4:
                net.cfg["k"] = -1.0
            if i == 5:
                tag.note = 4
            if i == 6:      # (from here the hook's side effect makes every call run eagerly)
                net[0].lin.register_forward_hook(lambda m, a, o: (log.append(len(log)), o * 3)[1])
            if i == 7:
                net[0].register_buffer("seen", T.zeros(2))
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=8)


def test_compiled_report_reads_optimizer_state_dict_between_eager_steps():
    """A compiled reporting function reads ``len(opt.state_dict()["state"])`` and the group's
    lr through ``state_dict()`` while the caller runs eager training steps (which create the
    momentum buffers) and changes the lr. Found here: the count stayed the traced call's 0."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def report(x):
            sd = opt.state_dict()
            return net(x).sum(), len(sd["state"]), sd["param_groups"][0]["lr"], len(sd["param_groups"])

        f = wrap(report)

        def run(i):
            if i == 2:
                net(_rand(T, 9, 2, 3)).sum().backward()
                opt.step()
            if i == 3:
                opt.param_groups[0]["lr"] = 0.05
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=4)


def test_trainable_parameter_count_after_freezing_a_layer():
    """``sum(p.numel() for p in net.parameters() if p.requires_grad)`` in a compiled step that
    never reads the parameters' values, after the caller freezes the bias (a strict xfail
    until the flags Python reads while tracing were guarded: ``Capture.see_rg_read``)."""
    net = _linear(tracegrad, 3, 2)

    def step(x):
        return x * 2, sum(p.numel() for p in net.parameters() if p.requires_grad)

    f = tracegrad.compile(step)
    seen = []
    for i in range(3):
        if i == 2:
            net.bias.requires_grad_(False)
        seen.append(f(tracegrad.ones(2))[1])
    assert seen == [8, 8, 6], seen


CONFIG = {"scale": 1.0, "shifts": [0.0]}


def test_process_settings_global_config_and_rebound_closure():
    """The step reads the default dtype (through a factory's result), ``is_grad_enabled()``,
    ``are_deterministic_algorithms_enabled()``, ``get_float32_matmul_precision()``,
    ``backends.cudnn.enabled``, a global config dict (and a list inside it) and a closure
    variable; the caller changes each between calls (and restores the process settings).
    Found here: the deterministic flag, the matmul precision and the cudnn flag were baked in
    as the traced call's values."""
    def build(T, wrap):
        k = 1.0
        CONFIG.update(scale=1.0, shifts=[0.0])
        w = T.ones(3, requires_grad=True)

        def step(x):
            y = (x * w).sum(1) * CONFIG["scale"] * k + CONFIG["shifts"][-1]
            return (y, str(T.tensor([1.5]).dtype)[-7:], T.is_grad_enabled(), T.are_deterministic_algorithms_enabled(),
                    T.get_float32_matmul_precision(), T.backends.cudnn.enabled, len(CONFIG["shifts"]))

        f = wrap(step)

        def run(i):
            # one change per call, so no other change's new trace hides a frozen value
            nonlocal k
            if i == 5:
                CONFIG["scale"] = 3.0
            if i == 7:
                k = 2.0
                CONFIG["shifts"][:] = [0.0, 0.5]     # in place: the same list, longer
            try:
                if i == 2:
                    T.use_deterministic_algorithms(True)
                if i == 3:
                    T.set_float32_matmul_precision("high")
                if i == 6:
                    T.set_default_dtype(T.float64)
                # ``flags``, not ``cudnn.enabled = False``: torch refuses the plain assignment
                # in a process where its test utilities froze the flags
                with T.set_grad_enabled(i != 7), T.backends.cudnn.flags(enabled=i != 4):
                    return f(_rand(T, i, 2, 3))
            finally:
                T.set_default_dtype(T.float32)
                T.use_deterministic_algorithms(False)
                T.set_float32_matmul_precision("highest")
        return run
    compare(build, calls=8)


def test_captured_tensor_layout_read_as_python_changes_between_calls():
    """The step reads only the shape, ``numel()``, ``dim()``, dtype and ``requires_grad`` of
    tensors it captures (a closure variable, a module buffer, a list entry), never their
    values, and the strides of a fourth; between calls the caller resizes one (``resize_``),
    retypes another (``.data =``), ``set_``s the third, flips ``requires_grad`` and ``set_``s
    the fourth to a transposed tensor of its shape. Found here: the compiled step kept the
    traced call's shapes, dtypes and strides (only ``requires_grad`` of such a tensor was
    guarded)."""
    def build(T, wrap):
        c = T.zeros(2, 3)
        holder = T.nn.Module()
        holder.register_buffer("b", T.zeros(2))
        lst = [T.zeros(4)]
        sq = T.zeros(3, 3)

        def step(x):
            n = c.numel() + holder.b.shape[0] + lst[0].dim()
            return (x * n, tuple(c.shape), str(holder.b.dtype)[-7:], tuple(lst[0].shape), c.requires_grad,
                    sq.is_contiguous(), sq.stride())

        f = wrap(step)

        def run(i):
            if i == 2:
                c.resize_(3, 3)
                holder.b.data = T.zeros(5, dtype=T.float64)
                lst[0].set_(T.zeros(2, 2))
            if i == 3:
                c.requires_grad_(True)
            if i == 4:      # the same shape, transposed strides
                sq.set_(T.zeros(3, 3).t())
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


def test_manual_seed_between_calls_is_followed():
    """``manual_seed`` between compiled calls: each call's random draws (``rand`` and a
    dropout mask) follow the seed as the eager calls' do (tracegrad's own streams: torch's
    differ), the draws after the call continue from where the call left the generator, and
    ``initial_seed()``, a Generator's ``initial_seed()`` and ``get_rng_state()`` read in the
    step are the current ones. Found here: the three were baked in as the traced call's."""
    gen = tracegrad.Generator()

    def calls(wrap):
        def step(x):
            return (x + tracegrad.rand(2), tracegrad.nn.functional.dropout(x, 0.5),
                    tracegrad.initial_seed(), gen.initial_seed())

        def state(x):       # draws nothing: the state is all it reads of the generator
            return x * 2, tracegrad.get_rng_state().sum()
        f, g = wrap(step), wrap(state)
        seen = []
        for i in range(4):
            if i in (1, 3):
                tracegrad.manual_seed(7)
            if i == 2:          # only the generator the step reads but never draws from
                gen.manual_seed(5)
            s = int(g(tracegrad.ones(2))[1])
            out = f(tracegrad.ones(2))
            seen.append([out[0].tolist(), out[1].tolist(), *out[2:4], s, tracegrad.rand(1).tolist()])
        return seen
    tracegrad.manual_seed(0)
    gen.manual_seed(0)
    eager = calls(lambda f: f)
    tracegrad.manual_seed(0)
    gen.manual_seed(0)
    assert calls(tracegrad.compile) == eager
    assert eager[1][:3] + eager[1][4:] == eager[3][:3] + eager[3][4:]
    assert [s[2:4] for s in eager] == [[0, 0], [7, 0], [7, 5], [7, 5]]
