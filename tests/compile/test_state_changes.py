"""State changed between compiled calls is seen by the next call (never a stale copy):
load_state_dict on model and optimizer, in-place edits under no_grad, rebinding ``.data``,
lr schedulers (without a new trace), other hyper-parameters, train()/eval() with Dropout and
BatchNorm, requires_grad_ flips, hooks added and removed."""
import functools
import types

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, check_torch, data, np_init


def program(opt_name="SGD", opt_kw=None, norm=False, dropout=False, scale=False, sched=None, norm_kw=None):
    """A 3-4-2 MLP (optionally with BatchNorm1d / Dropout / a captured scale tensor) trained on
    MSE; ``sched(opt)`` builds an lr scheduler kept in the state."""
    def make(mod, wrap):
        layers = [mod.nn.Linear(3, 4)]
        if norm:
            layers.append(mod.nn.BatchNorm1d(4, **(norm_kw or {})))
        layers.append(mod.nn.Tanh())
        if dropout:
            layers.append(mod.nn.Dropout(0.5))
        layers.append(mod.nn.Linear(4, 2))
        model = np_init(mod.nn.Sequential(*layers), mod)
        opt = getattr(mod.optim, opt_name)(model.parameters(), **(opt_kw or {"lr": 0.1, "momentum": 0.9}))
        s = mod.ones(2)
        state = {"model": model, "opt": opt, "scale": s}
        if sched is not None:
            state["sched"] = sched(mod, opt)

        def step(x, y):
            opt.zero_grad()
            out = model(x)
            if scale:
                out = out * s
            loss = mod.nn.functional.mse_loss(out, y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), state, lambda i: (data(mod, i, 6, 3), data(mod, i, 6, 2, seed=300))
    return make


def test_model_load_state_dict_between_calls():
    saved = {}

    def between(state, i):
        m = state["model"]
        if i == 0:
            saved[id(m)] = {k: v.clone() for k, v in m.state_dict().items()}
        if i == 2:
            m.load_state_dict(saved[id(m)])
    check_compiled(program(norm=True), calls=5, between=between)


def test_optimizer_load_state_dict_between_calls():
    import copy
    saved = {}

    def between(state, i):
        o = state["opt"]
        if i == 1:
            saved[id(o)] = copy.deepcopy(o.state_dict())
        if i == 3:
            o.load_state_dict(saved[id(o)])
    check_compiled(program("Adam", dict(lr=0.05)), calls=6, between=between)


def test_inplace_edit_of_parameters_and_captured_tensor_under_no_grad():
    def between(state, i):
        with tracegrad.no_grad():
            state["model"][0].weight.mul_(0.5)
            state["scale"].add_(1.0)
    check_compiled(program(scale=True), calls=4, between=between)


def test_data_rebound_between_calls():
    def between(state, i):
        if i == 1:
            w = state["model"][0].weight
            w.data = tracegrad.full_like(w, 0.1)
    check_compiled(program(), calls=4, between=between)


SCHEDULERS = {
    "StepLR": lambda mod, o: mod.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5),
    "CosineAnnealingLR": lambda mod, o: mod.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7),
    # cycle momentum (SGD) and betas[0] (AdamW): lifted hyper-parameters, no retrace either
    "OneCycleLR": lambda mod, o: mod.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=20),
    "CyclicLR": lambda mod, o: mod.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3),
}


@pytest.mark.parametrize("sched,opt", [("StepLR", "AdamW"), ("CosineAnnealingLR", "AdamW"),
                                       ("OneCycleLR", "SGD"), ("OneCycleLR", "AdamW"),
                                       ("CyclicLR", "SGD"), ("CyclicLR", "AdamW")])
def test_lr_scheduler_no_retrace(sched, opt):
    make = program(opt, dict(lr=0.05) if opt == "AdamW" else dict(lr=0.05, momentum=0.9),
                   sched=SCHEDULERS[sched])
    counts = []

    def between(state, i):
        state["sched"].step()
        counts.append(getattr(run_step[0], "stats", {"traces": None})["traces"])
    run_step = [None]

    def make_and_remember(mod, wrap):
        step, state, batch = make(mod, wrap)
        run_step[0] = step
        return step, state, batch
    run = check_compiled(make_and_remember, calls=6, between=between)
    compiled_counts = counts[6:]
    assert compiled_counts[2:] == [compiled_counts[2]] * 4, compiled_counts   # no trace after warm-up
    assert not run.step.stats["graph_breaks"]


def test_lr_changed_by_hand_no_retrace():
    def between(state, i):
        state["opt"].param_groups[0]["lr"] = 0.1 / (i + 2)
    run = check_compiled(program("Adam", dict(lr=0.05)), calls=8, between=between)
    assert run.step.stats["traces"] <= 2


@pytest.mark.parametrize("key,value", [("momentum", 0.5), ("weight_decay", 0.1), ("dampening", 0.3),
                                       ("betas", (0.5, 0.9)), ("betas", (0.0, 0.9))])
def test_other_hyper_parameter_changed(key, value):
    def between(state, i):
        if i == 1:
            state["opt"].param_groups[0][key] = value
    opt = "Adam" if key == "betas" else "SGD"
    check_compiled(program(opt, dict(lr=0.05) if opt == "Adam" else dict(lr=0.05, momentum=0.9)),
                   calls=4, between=between)


@pytest.mark.parametrize("key", ["weight_decay", "dampening", "nesterov", "lr"])
def test_hyper_parameter_rewritten_with_an_equal_value_no_retrace(key):
    # the guard answers by identity first: an equal value in a new object (a config reloaded
    # every step) must neither retrace nor be missed when it later really changes
    def between(state, i):
        g = state["opt"].param_groups[0]
        g[key] = (not g[key]) if key == "nesterov" and i == 4 else type(g[key])(str(g[key])) \
            if key != "nesterov" else bool(int(g[key]))
        if key == "weight_decay" and i == 4:
            g[key] = 0.25
    run = check_compiled(program("SGD", dict(lr=0.05, momentum=0.9)), calls=6, between=between)
    traces = run.step.stats["traces"]
    assert traces <= (3 if key in ("nesterov", "weight_decay") else 2), traces


@pytest.mark.parametrize("values", [(0.9, 0.0, 0.9), (0.0, 0.5, 0.7)])
def test_momentum_crossing_zero_retraces(values):
    # momentum is a traced input, but whether it is zero decides whether a momentum buffer
    # exists at all (torch's `if momentum != 0`): crossing zero must retrace, never reuse the
    # other branch's program
    def between(state, i):
        state["opt"].param_groups[0]["momentum"] = values[min(i, len(values) - 1)]
    run = check_compiled(program("SGD", dict(lr=0.05, momentum=values[0])), calls=5, between=between)
    assert not run.step.stats["graph_breaks"]


def test_train_eval_switch_dropout_batchnorm():
    def between(state, i):
        state["model"].train(i % 2 == 1)
    run = check_compiled(program(norm=True, dropout=True), calls=5, between=between)
    assert not run.step.stats["graph_breaks"]


def test_batchnorm_cumulative_average_stays_compiled():
    """``momentum=None``: the running stats are a cumulative average over num_batches_tracked;
    its factor is a program value, not a Python float read from the counter (a graph break)."""
    def between(state, i):
        state["model"].train(i != 2)
    run = check_compiled(program(norm=True, norm_kw={"momentum": None}), calls=5, between=between)
    assert not run.step.stats["graph_breaks"]
    check_torch(program(norm=True, norm_kw={"momentum": None}), calls=5, between=between)


def test_torch_parity_batchnorm_train_eval():
    def between(state, i):
        state["model"].train(i != 1)
    check_torch(program(norm=True), calls=4, between=between)


def test_requires_grad_flip_between_calls():
    def between(state, i):
        state["model"][0].weight.requires_grad_(i % 2 == 1)
    check_compiled(program(opt_kw=dict(lr=0.1)), calls=4, between=between)


def test_forward_hook_added_and_removed_between_calls():
    handles = {}

    def between(state, i):
        m = state["model"]
        if i == 1:
            handles[id(m)] = m[0].register_forward_hook(lambda mod, inp, out: out * 0.5)
        if i == 3:
            handles[id(m)].remove()
    check_compiled(program(), calls=5, between=between)


def test_tensor_lr_edited_in_place_between_calls():
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)
        lr = mod.tensor(0.05)
        opt = mod.optim.Adam(model.parameters(), lr=lr)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "opt": opt, "lr": lr}, \
            lambda i: (data(mod, i, 6, 3), data(mod, i, 6, 2, seed=300))

    def between(state, i):
        state["lr"].mul_(0.5)
    check_compiled(make, calls=4, between=between, torch_too=True)


# ---- NOTE [Python values read] (_lowering/guards.py) -----------------------------------------
CONFIG = {"shift": 0.0, "name": "a"}


def _tempered(mod):
    class Tempered(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = mod.nn.Linear(3, 4)
            self.bn = mod.nn.BatchNorm1d(4)
            self.drop = mod.nn.Dropout(0.0)
            self.temperature, self.use_relu, self.cfg = 1.0, False, {"scale": 1.0}

        def forward(self, x):
            y = self.drop(self.bn(self.lin(x))) / self.temperature * self.cfg["scale"]
            return self._act(y) + CONFIG["shift"]

        def _act(self, y):
            return y.relu() if self.use_relu else y
    return np_init(Tempered(), mod)


def test_python_values_read_by_the_trace_are_guarded():
    """Numbers and flags read from modules (also in a helper method and in a dict attribute),
    from a library module (Dropout.p, BatchNorm momentum/eps), from a global dict and from an
    object the function closes over: changed between calls, the next call uses the new value
    (eager's result), never the traced constant."""
    class Holder:
        def __init__(self):
            self.scale = 1.0

        def factor(self):
            return self.scale * 2
    changes = [lambda m, h: setattr(m, "temperature", 2.0), lambda m, h: setattr(m, "use_relu", True),
               lambda m, h: m.cfg.__setitem__("scale", 3.0), lambda m, h: setattr(m.drop, "p", 0.5),
               lambda m, h: setattr(m.bn, "momentum", 0.5), lambda m, h: setattr(m.bn, "eps", 0.1),
               lambda m, h: CONFIG.__setitem__("shift", 1.5), lambda m, h: setattr(h, "scale", 4.0)]

    def make(mod, wrap):
        model, holder = _tempered(mod), Holder()
        CONFIG["shift"] = 0.0

        def fwd(x):
            return model(x) * holder.factor()
        state = {"model": model, "holder": lambda: holder}
        return wrap(fwd), state, lambda i: (data(mod, 0, 6, 3),)

    def between(state, i):
        if i < len(changes):
            changes[i](state["model"], state["holder"]())
    CONFIG["shift"] = 0.0
    try:
        run = check_compiled(make, calls=len(changes) + 2, between=between)
    finally:
        CONFIG["shift"] = 0.0
    assert run.step.stats["traces"] == len(changes) and not run.step.stats["graph_breaks"]


def test_attribute_the_trace_does_not_read_causes_no_new_trace():
    """A trainer's counter bumped outside between calls is not read by the compiled step:
    one program for all calls."""
    class Trainer:
        def __init__(self):
            tracegrad.manual_seed(0)
            self.model = tracegrad.nn.Linear(3, 2)
            self.opt = tracegrad.optim.SGD(self.model.parameters(), lr=0.1)
            self.global_step, self.lr_scale = 0, 1.0

        def step(self, x):
            self.opt.zero_grad()
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.opt.step()
            return loss
    t = Trainer()
    step = tracegrad.compile(t.step)
    for i in range(6):
        step(data(tracegrad, i, 4, 3))
        t.global_step += 1
    assert step.stats["traces"] == 1 and not step.stats["graph_breaks"]


LOSS_WEIGHT = 1.0


def _weighted(out):
    return out.sum() * LOSS_WEIGHT


def _helper(out):
    return _weighted(out) + 1


def test_global_number_read_by_a_helper_function_is_guarded():
    global LOSS_WEIGHT
    lin = tracegrad.nn.Linear(3, 1)
    f = tracegrad.compile(lambda x: _helper(lin(x)))
    x = tracegrad.ones(2, 3)
    try:
        outs = []
        for w in (1.0, 1.0, 2.0, 2.0, 3.0):
            LOSS_WEIGHT = w
            outs.append(float(f(x)))
        base = float(lin(x).sum())
        assert outs == pytest.approx([base + 1, base + 1, 2 * base + 1, 2 * base + 1, 3 * base + 1])
    finally:
        LOSS_WEIGHT = 1.0


TABLE = np.arange(4, dtype=np.float32)


def test_numpy_arrays_read_from_globals_closures_and_modules_are_guarded():
    """A NumPy array the trace converts is baked: changed in place or rebound between calls
    (a global, a closure variable, a module attribute), the next call uses its new contents."""
    global TABLE
    local = np.ones(4, dtype=np.float32)

    class WithTable(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = np.zeros(4, dtype=np.float32)

        def forward(self, x):
            return x + tracegrad.as_tensor(self.table)
    m = WithTable()

    def fwd(x):
        return m(x) * tracegrad.as_tensor(TABLE) + tracegrad.as_tensor(local)
    f = tracegrad.compile(fwd)
    x = tracegrad.ones(4)
    try:
        for i in range(4):
            if i == 1:
                TABLE[:] = 2.0                      # in place
            if i == 2:
                local[:] = 5.0
                m.table = np.full(4, 3.0, dtype=np.float32)   # rebound
            if i == 3:
                TABLE = np.full(4, 10.0, dtype=np.float32)
            assert f(x).tolist() == fwd(x).tolist()
    finally:
        TABLE = np.arange(4, dtype=np.float32)


NESTED = {"model": {"scale": 1.0, "sizes": [1.0, 2.0]}, "shape": (2, 3)}


def test_values_in_nested_containers_are_guarded():
    """A number read from a dict inside a dict, from a list inside a dict, from a list of lists,
    and a tuple of numbers (``cfg["model"]["scale"]``, a global and a closure object's
    attribute): changed between calls, the next call gives eager's result."""
    class Box:
        def __init__(self):
            self.grid = [[1.0, 2.0], [3.0]]
    box = Box()

    def fwd(x):
        y = x * NESTED["model"]["scale"] + NESTED["model"]["sizes"][1] + box.grid[1][0]
        return y.reshape(NESTED["shape"])
    f = tracegrad.compile(fwd)
    x = tracegrad.arange(6.0)
    changes = [lambda: NESTED["model"].__setitem__("scale", 2.0),
               lambda: NESTED["model"]["sizes"].__setitem__(1, 5.0),
               lambda: box.grid[1].__setitem__(0, -1.0),
               lambda: NESTED.__setitem__("shape", (3, 2))]
    try:
        for i in range(len(changes) + 2):
            np.testing.assert_allclose(f(x).numpy(), fwd(x).numpy())
            if i < len(changes):
                changes[i]()
        np.testing.assert_allclose(f(x).numpy(), fwd(x).numpy())
        assert tuple(f(x).shape) == (3, 2)
    finally:
        NESTED.update(model={"scale": 1.0, "sizes": [1.0, 2.0]}, shape=(2, 3))
    assert not f.stats["graph_breaks"] and f.stats["eager_calls"] == 1


_SETTINGS = types.ModuleType("settings")      # a Python module holding settings (config.SCALE)
_SETTINGS.SCALE = 1.0
HELPER_SHIFT = 0.0


def _shifted(t):
    return t + HELPER_SHIFT


class _Scaled(tracegrad.nn.Module):
    FACTOR = 1.0                                     # a class attribute read as self.FACTOR

    def __init__(self):
        super().__init__()
        self.lin = tracegrad.nn.Linear(3, 3)

    def forward(self, x):
        return _shifted(self.lin(x)) * self.FACTOR   # a helper reading a global


class _Multiplier:
    def __init__(self):
        self.k = 1.0

    def __call__(self, t):
        return t * self.k


def test_values_read_by_helpers_classes_and_python_modules_are_guarded():
    """Values the compiled function reaches through other code: a global read by a helper a
    module's forward calls, a class attribute, a Python module's attribute, a closure cell of
    a helper, a global read by a lambda argument, a ``functools.partial`` argument and a
    callable object's attribute. Changed between calls, the next call gives eager's result."""
    global HELPER_SHIFT
    tracegrad.manual_seed(0)
    model, box, mult, lam = _Scaled(), [1.0], _Multiplier(), (lambda t: t - HELPER_SHIFT)

    def helper(t):
        return t * box[0]

    def step(x, f, g):
        return helper(model(x)) * _SETTINGS.SCALE + f(x).sum() + g(x).sum() + lam(x).mean()
    f = tracegrad.compile(step)
    x = data(tracegrad, 0, 2, 3)
    part = [functools.partial(torch_mul, s=1.0)]

    changes = [lambda: globals().__setitem__("HELPER_SHIFT", 0.5), lambda: setattr(_Scaled, "FACTOR", 2.0),
               lambda: setattr(_SETTINGS, "SCALE", 3.0), lambda: box.__setitem__(0, -1.0),
               lambda: setattr(mult, "k", 4.0), lambda: part.__setitem__(0, functools.partial(torch_mul, s=5.0))]
    try:
        for i in range(len(changes) + 2):
            with tracegrad.no_grad():
                expect = step(x, part[0], mult)
                got = f(x, part[0], mult)
            np.testing.assert_allclose(got.numpy(), expect.numpy(), rtol=1e-5, atol=1e-6)
            if i < len(changes):
                changes[i]()
    finally:
        HELPER_SHIFT, _Scaled.FACTOR, _SETTINGS.SCALE = 0.0, 1.0, 1.0
    assert not f.stats["graph_breaks"] and f.stats["traces"] == len(changes)


def torch_mul(t, s):
    return t * s
