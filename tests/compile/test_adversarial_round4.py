"""Adversarial programs for ``tracegrad.compile``, fourth round: Python state that a training
step reads and the caller changes between calls, in places the earlier rounds do not reach
(optimizer hyper-parameters edited in ``param_groups``, module hyper-parameters such as
Dropout's ``p`` and BatchNorm's ``momentum``, a custom ``autograd.Function`` whose backward
reads a class attribute, ``torch.func.grad`` over a closure, gradient hooks added and removed,
``.item()`` / ``.tolist()`` deciding and logging, in-place EMA updates under ``no_grad`` with a
decay read from a class attribute, returned views of parameters that later steps update).

Each program runs eagerly and compiled from identical state (``_harness.check_compiled``),
``CALLS`` times, with ``state["change"](i)`` run after call ``i``: compiled must equal eager
(and torch where ``torch_too``), or break to eager."""
import pytest

import tracegrad

from ._harness import change, check_compiled, data, no_change, np_init
from .test_adversarial_round3 import mlp, xy

CALLS = 4


def check(make, calls=CALLS, **kw):
    return check_compiled(make, calls=calls, between=change, **kw)


def train_step(mod, model, opt, body=None):
    body = body or (lambda x, y: mod.nn.functional.mse_loss(model(x), y))

    def step(x, y):
        opt.zero_grad()
        loss = body(x, y)
        loss.backward()
        opt.step()
        return loss
    return step


# ---- optimizer and module hyper-parameters edited between calls ------------------------------

@pytest.mark.parametrize("key,values", [
    ("betas", [(0.9, 0.999), (0.5, 0.9), (0.0, 0.5), (0.9, 0.99)]),
    ("weight_decay", [0.0, 0.1, 0.0, 0.5]),
    ("eps", [1e-8, 1e-1, 1e-3, 1e-8]),
    ("maximize", [False, True, False, True]),
    ("amsgrad", [False, False, False, False]),
])
def test_adam_param_group_entry_edited_between_calls(key, values):
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        opt.param_groups[0][key] = values[0]

        def later(i):
            opt.param_groups[0][key] = values[(i + 1) % len(values)]
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_sgd_momentum_and_nesterov_edited_between_calls():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        settings = [(0.9, True, 0.0), (0.5, False, 0.3), (0.9, False, 0.0), (0.0, False, 0.0)]

        def later(i):
            m, n, d = settings[i]
            opt.param_groups[0].update(momentum=m, nesterov=n, dampening=d)
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_param_removed_from_a_group_between_calls():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def later(i):
            if i == 1:
                opt.param_groups[0]["params"] = opt.param_groups[0]["params"][:2]
        # not the optimizer's state_dict: torch's raises KeyError once a param with state left
        return wrap(train_step(mod, model, opt)), {"model": model, "groups": opt.param_groups,
                                                   "change": later}, xy(mod)
    check(make, torch_too=True)


def test_dropout_p_changed_between_calls():
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 8), mod.nn.Dropout(0.5), mod.nn.Linear(8, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def later(i):
            model[1].p = [0.0, 0.9, 0.25, 0.5][i]
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make)


@pytest.mark.parametrize("momentum", [0.5, None])
def test_batchnorm_momentum_changed_between_calls(momentum):
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.Linear(4, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def later(i):
            model[1].momentum = [momentum, 0.1, None, 0.9][i]
            if i == 2:
                model[1].eps = 1e-1
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_leaky_relu_slope_and_clip_max_norm_from_a_config_dict():
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.LeakyReLU(0.1), mod.nn.Linear(4, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        cfg = {"max_norm": 0.5, "norm_type": 2.0}
        log = []

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            log.append(mod.nn.utils.clip_grad_norm_(model.parameters(), cfg["max_norm"], cfg["norm_type"]))
            opt.step()
            return loss

        def later(i):
            model[1].negative_slope = [0.3, 0.0, 0.01, 0.1][i]
            cfg["max_norm"] = [0.05, 10.0, 0.2, 1.0][i]
            cfg["norm_type"] = [1.0, float("inf"), 2.0, 2.0][i]
        return wrap(step), {"model": model, "opt": opt, "log": log, "change": later}, xy(mod)
    check(make, torch_too=True)


# ---- custom Functions, torch.func, hooks -----------------------------------------------------

def test_custom_function_backward_reading_a_class_attribute_changed_between_calls():
    def make(mod, wrap):
        class ScaleGrad(mod.autograd.Function):
            scale = 1.0

            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g * ScaleGrad.scale

        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def body(x, y):
            h = ScaleGrad.apply(model[1](model[0](x)))
            return mod.nn.functional.mse_loss(model[2](h), y)

        def later(i):
            ScaleGrad.scale = [-1.0, 0.0, 3.0, 1.0][i]
        return wrap(train_step(mod, model, opt, body)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_custom_function_ctx_attribute_from_a_global_list():
    alphas = [0.5]

    def make(mod, wrap):
        class Reverse(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x, alpha):
                ctx.alpha = alpha
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return g.neg() * ctx.alpha, None

        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        alphas[0] = 0.5

        def body(x, y):
            return mod.nn.functional.mse_loss(model[2](Reverse.apply(model[1](model[0](x)), alphas[0])), y)

        def later(i):
            alphas[0] = [2.0, 0.0, -1.0, 0.5][i]
        return wrap(train_step(mod, model, opt, body)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_func_grad_over_a_closure_scalar_changed_between_calls():
    def make(mod, wrap):
        w = mod.tensor([[0.5, -0.2], [0.1, 0.3], [0.0, 0.4]])
        cfg = {"l2": 0.1}
        log = []

        def loss_fn(w, x, y):
            return ((x @ w - y) ** 2).mean() + cfg["l2"] * (w ** 2).sum()

        def step(x, y):
            g = mod.func.grad(loss_fn)(w, x, y)
            with mod.no_grad():
                w.sub_(0.1 * g)
            log.append(g)
            return loss_fn(w, x, y)

        def later(i):
            cfg["l2"] = [1.0, 0.0, 0.5, 0.1][i]
        return wrap(step), {"w": w, "log": log, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_parameter_grad_hook_added_then_removed_between_calls():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        handles, seen = [], []

        def hook(g):
            seen.append(g.norm())
            return g * 10

        def later(i):
            if i == 0:
                handles.append(model[0].weight.register_hook(hook))
            if i == 2:
                handles.pop().remove()
        return (wrap(train_step(mod, model, opt)),
                {"model": model, "opt": opt, "seen": seen, "change": later}, xy(mod))
    check(make, torch_too=True)


def test_full_backward_hook_scale_from_a_module_attribute():
    def make(mod, wrap):
        model = mlp(mod)
        model.gscale = 1.0
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def hook(m, gin, gout):
            return (gin[0] * model.gscale,)
        model[1].register_full_backward_hook(hook)

        def later(i):
            model.gscale = [0.0, 2.0, -1.0, 1.0][i]
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_forward_hook_recording_activations_into_a_dict():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        acts = {}
        handles = []

        def rec(name):
            def hook(m, inp, out):
                acts[name] = out.detach()
            return hook

        def later(i):
            if i == 0:
                handles.append(model[0].register_forward_hook(rec("fc0")))
            if i == 1:
                handles.append(model[2].register_forward_hook(rec("fc2")))
            if i == 2:
                handles.pop(0).remove()
        return (wrap(train_step(mod, model, opt)),
                {"model": model, "opt": opt, "acts": acts, "change": later}, xy(mod))
    check(make, torch_too=True)


# ---- host values, EMA, returned views ---------------------------------------------------------

def test_item_decides_whether_to_step_and_tolist_is_logged():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        log = []
        cfg = {"threshold": 0.5}

        def step(x, y):
            opt.zero_grad()
            out = model(x)
            loss = mod.nn.functional.mse_loss(out, y)
            loss.backward()
            if loss.item() > cfg["threshold"]:
                opt.step()
            log.append(out.argmax(1).tolist())
            return loss

        def later(i):
            cfg["threshold"] = [100.0, 0.0, 0.8, 0.5][i]
        return wrap(step), {"model": model, "opt": opt, "log": log, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_ema_under_no_grad_with_decay_from_a_class_attribute():
    def make(mod, wrap):
        class EMA:
            decay = 0.9

            def __init__(self, model):
                self.shadow = [p.detach().clone() for p in model.parameters()]

            def update(self, model):
                with mod.no_grad():
                    for s, p in zip(self.shadow, model.parameters()):
                        s.mul_(EMA.decay).add_(p, alpha=1 - EMA.decay)

        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        ema = EMA(model)
        inner = train_step(mod, model, opt)

        def step(x, y):
            loss = inner(x, y)
            ema.update(model)
            return loss

        def later(i):
            EMA.decay = [0.5, 0.0, 0.99, 0.9][i]
        return wrap(step), {"model": model, "opt": opt, "ema": ema.shadow, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_returned_views_of_parameters_kept_by_the_caller_see_later_steps():
    def make(mod, wrap):
        model = mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        kept = []
        inner = train_step(mod, model, opt)

        def step(x, y):
            loss = inner(x, y)
            return loss, model[0].weight[0], model[2].bias.view(1, 2), model[0].weight.t()
        compiled = wrap(step)

        def outer(x, y):
            out = compiled(x, y)
            kept.append(out[1:])
            return out
        return outer, {"model": model, "opt": opt, "kept": kept, "change": no_change}, xy(mod)
    check(make, torch_too=True)


def test_randn_noise_scaled_by_a_module_attribute_and_inplace_argument_write():
    def make(mod, wrap):
        model = mlp(mod)
        model.noise = 0.1
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        stash = mod.zeros(5, 3)

        def step(x, y):
            x.add_(mod.randn(x.shape) * model.noise)
            stash.add_(x)
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        def later(i):
            model.noise = [0.0, 1.0, 0.5, 0.1][i]
        return wrap(step), {"model": model, "opt": opt, "stash": stash, "change": later}, xy(mod)
    check(make)


def test_train_eval_flipped_between_calls_with_batchnorm_and_dropout():
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.Dropout(0.3),
                                          mod.nn.Linear(4, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def later(i):
            model.train(i % 2 == 1)
            model[2].train(i == 2)
        return wrap(train_step(mod, model, opt)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make)


# ---- regressions: values read only by the step's code ----------------------------------------

@pytest.mark.parametrize("holder", ["library_module", "user_module", "user_module_class_attribute"])
def test_module_attribute_read_only_by_the_step_is_guarded(holder):
    # the module's own code never names ``temperature``: only the step does (it was baked in)
    def make(mod, wrap):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = mod.nn.Linear(3, 2)

            def forward(self, x):
                return self.fc(x)

        model = np_init(mod.nn.Linear(3, 2) if holder == "library_module" else Net(), mod)
        owner = type(model) if holder == "user_module_class_attribute" else model
        owner.temperature = 1.0
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def body(x, y):
            return mod.nn.functional.mse_loss(model(x) / model.temperature, y)

        def later(i):
            owner.temperature = [2.0, 0.5, 4.0, 1.0][i]
        return wrap(train_step(mod, model, opt, body)), {"model": model, "opt": opt, "change": later}, xy(mod)
    check(make, torch_too=True)


def test_custom_function_backward_reading_its_class_attribute_only():
    # the step names ``Clip.apply``; only backward reads ``Clip.bound``
    def make(mod, wrap):
        class Clip(mod.autograd.Function):
            bound = 1.0

            @staticmethod
            def forward(ctx, x):
                return x * 1.0

            @staticmethod
            def backward(ctx, g):
                return g.clamp(-Clip.bound, Clip.bound)

        w = mod.tensor([1.0, -2.0, 3.0], requires_grad=True)
        log = []

        def step(x):
            w.grad = None
            (Clip.apply(w) * x * 10).sum().backward()
            log.append(w.grad.clone())
            return w.grad

        def later(i):
            Clip.bound = [0.1, 5.0, 0.0, 1.0][i]
        return wrap(step), {"w": w, "log": log, "change": later}, lambda i: (data(mod, i, 3),)
    check(make, torch_too=True)


@pytest.mark.parametrize("bn", [True, False], ids=["batchnorm_breaks", "no_state_write_stays_compiled"])
def test_checkpoint_in_a_compiled_forward_breaks_only_when_the_block_writes_state(bn):
    # NOTE [checkpoint side effects]: eager backward re-runs the block and BatchNorm updates its
    # running stats a second time, which a program's VJP would not: that call runs eagerly. Only
    # a block whose recomputation would write outside state again costs the program; values and
    # running stats equal eager's (and torch's) either way
    layers = lambda mod: [mod.nn.Linear(3, 4)] + ([mod.nn.BatchNorm1d(4)] if bn else [mod.nn.Tanh()])
    seen = {}

    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(*layers(mod)), mod)
        fwd = wrap(lambda t: mod.utils.checkpoint.checkpoint(model, t, use_reentrant=False))
        if fwd is not None and hasattr(fwd, "stats"):
            seen["stats"] = fwd.stats
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.mse_loss(fwd(x)[:, :2], y)
            loss.backward()
            opt.step()
            return loss
        return step, {"model": model, "opt": opt, "change": no_change}, xy(mod)
    check(make, torch_too=True)
    stats = seen["stats"]
    if bn:
        assert stats["traces"] == 0 and any("checkpointed block writes state" in r for r, _ in stats["graph_breaks"])
    else:
        assert stats["traces"] == 1 and not stats["graph_breaks"], stats


@pytest.mark.parametrize("effect", [True, False], ids=["backward_appends_breaks", "pure_backward_stays_compiled"])
def test_custom_function_backward_with_a_python_side_effect(effect):
    # NOTE [custom Function code]: the engine runs the Function's backward inside the trace,
    # so a list it appends to would grow once, while tracing, and never again
    seen = {}

    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)
        log = []

        class Scale(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                if effect:
                    log.append(len(log))
                return g * 2

        def step(x):
            model.zero_grad()
            loss = Scale.apply(model(x)).sum()
            loss.backward()
            return loss
        compiled = wrap(step)
        if compiled is not step:
            seen["stats"] = compiled.stats
        return compiled, {"model": model, "log": log, "change": no_change}, lambda i: (data(mod, i, 4, 3),)
    check(make, torch_too=True)
    stats = seen["stats"]
    if effect:
        assert stats["traces"] == 0 and any("'log'" in r for r, _ in stats["graph_breaks"]), stats
    else:
        assert stats["traces"] == 1 and not stats["graph_breaks"], stats
