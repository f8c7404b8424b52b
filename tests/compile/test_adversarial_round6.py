"""Sixth round of adversarial compiled-vs-eager programs: combinations earlier rounds did not
try (GradScaler whose scale falls and grows while a plateau scheduler reads ``loss.item()``,
a weight tie made and broken between calls, a parameter frozen and thawed between calls under
Adam, a module attribute the forward reads changed between calls, Python control flow on
``float(loss)``, a compiled function called from another compiled function and eagerly,
a compiled forward differentiated outside, in-place updates before an exception, and the
generator reseeded inside the step). Each runs eagerly and compiled from the same state
(``_harness.check_compiled``) and must agree after every call, or break to eager (never a
silently different result)."""
import numpy as np
import pytest

import tracegrad
from ._harness import change, check_compiled, data, np_init


# ---- GradScaler + clip_grad after unscale_ + ReduceLROnPlateau(loss.item()) ----

def scaler_plateau_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    sched = mod.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    scaler = mod.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1, growth_factor=2.0)
    log = []

    def step(x, poison):
        opt.zero_grad()
        loss = net(x).pow(2).mean() * poison
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = mod.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        sched.step(loss.item())
        log.append((scaler.get_scale(), opt.param_groups[0]["lr"]))
        return loss, norm

    # call 1's loss is inf: the scaler skips the step and halves the scale
    return wrap(step), {"net": net, "opt": opt, "log": log, "sched": sched}, \
        lambda i: (data(mod, i, 4, 3), float("inf") if i == 1 else 1.0)


def test_grad_scaler_skip_clip_and_plateau_scheduler():
    run = check_compiled(scaler_plateau_program, calls=4, torch_too=True)
    scales = [s for s, _ in run.state["log"]]
    assert scales == [8.0, 4.0, 8.0, 16.0]


# ---- weight tying made and broken between calls ----

def tying_program(mod, wrap):
    emb = np_init(mod.nn.Embedding(5, 3), mod)
    head = np_init(mod.nn.Linear(3, 5, bias=False), mod, seed=3)
    model = mod.nn.ModuleDict({"emb": emb, "head": head})
    opt = mod.optim.SGD(model.parameters(), lr=0.2)

    def step(idx):
        opt.zero_grad()
        logits = head(emb(idx))
        loss = mod.nn.functional.cross_entropy(logits, idx)
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 0:        # tie: the head now shares the embedding's parameter
            head.weight = emb.weight
        if i == 2:        # untie with a copy
            head.weight = mod.nn.Parameter(emb.weight.detach().clone())
            opt.add_param_group({"params": [head.weight]})
    return wrap(step), {"model": model, "opt": opt, "change": between}, \
        lambda i: (mod.tensor([i % 5, (i + 2) % 5, 4]),)


def test_weight_tie_made_and_broken_between_calls():
    check_compiled(tying_program, calls=4, between=change, torch_too=True)


# ---- a parameter frozen and thawed between calls (Adam, weight decay changed too) ----

def freeze_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 3), mod.nn.Tanh(), mod.nn.Linear(3, 1)), mod)
    opt = mod.optim.AdamW(net.parameters(), lr=0.05, weight_decay=0.1)

    def step(x):
        opt.zero_grad(set_to_none=True)
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 0:
            net[0].weight.requires_grad_(False)
        if i == 1:
            net[0].weight.requires_grad_(True)
            opt.param_groups[0]["weight_decay"] = 0.0
        if i == 2:
            net[2].bias.requires_grad_(False)
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_parameter_frozen_and_thawed_between_calls():
    check_compiled(freeze_program, calls=5, between=change, torch_too=True)


# ---- a buffer updated in forward, the module attribute it reads changed between calls ----

def _ema_module(mod):
    class EMANorm(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", mod.zeros(3))
            self.register_buffer("steps", mod.tensor(0))
            self.momentum = 0.1
            self.lin = mod.nn.Linear(3, 3)

        def forward(self, x):
            if self.training:
                with mod.no_grad():
                    self.mean.mul_(1 - self.momentum).add_(x.mean(0) * self.momentum)
                    self.steps += 1
            return self.lin(x - self.mean)
    return EMANorm()


def ema_program(mod, wrap):
    net = np_init(_ema_module(mod), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 0:
            net.momentum = 0.5
        if i == 1:
            net.eval()
        if i == 2:
            net.train()
            net.momentum = 1.0
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_buffer_updated_in_forward_with_attribute_changed_between_calls():
    run = check_compiled(ema_program, calls=5, between=change, torch_too=True)
    assert run.state["net"].steps.item() == 4


# ---- Python control flow on float(loss) and tolist() in the step ----

def float_control_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 1), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.3)
    seen = []

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        value = float(loss)
        if value > 0.3:            # a second update only for large losses
            loss.backward()
            opt.step()
            opt.zero_grad()
            loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        seen.append((round(value, 5), [round(v, 5) for v in net.bias.tolist()]))
        return loss
    return wrap(step), {"net": net, "opt": opt, "seen": seen}, lambda i: (data(mod, i, 3, 2) * (2 - i),)


def test_python_branch_on_float_of_the_loss():
    run = check_compiled(float_control_program, calls=4, torch_too=True)
    assert len(run.state["seen"]) == 4


# ---- a compiled function called from another compiled function and eagerly ----

def nested_compiled_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 3), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    inner = wrap(lambda x: mod.tanh(net(x)))

    def step(x):
        opt.zero_grad()
        loss = inner(inner(x)).pow(2).mean()
        loss.backward()
        opt.step()
        with mod.no_grad():
            probe = inner(x).sum()      # the inner function under no_grad
        return loss, probe
    outer = wrap(step)

    def call(x):
        a = outer(x)
        b = inner(x)                    # and eagerly-called between compiled calls
        return a, b
    return call, {"net": net, "opt": opt}, lambda i: (data(mod, i, 2, 3),)


def test_compiled_function_inside_a_compiled_step_and_outside():
    check_compiled(nested_compiled_program, calls=4, torch_too=True)


# ---- a compiled forward differentiated outside ----

def outside_grad_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(2, 3), mod.nn.Tanh(), mod.nn.Linear(3, 1)), mod)
    fwd = wrap(lambda x: net(x).sum())
    errors = []

    def step(x):
        x = x.clone().requires_grad_(True)
        y = fwd(x)
        gx, = mod.autograd.grad(y, x, retain_graph=True)      # first order only
        gw, = mod.autograd.grad(y, net[0].weight, retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()                           # again: accumulates into .grad
        try:
            y.backward()                       # the graph has been freed now
        except RuntimeError as e:
            errors.append("second time" in str(e) or "freed" in str(e))
        return y, gx, gw, x.grad
    return step, {"net": net, "errors": errors}, lambda i: (data(mod, i, 4, 2),)


def test_compiled_forward_differentiated_outside():
    run = check_compiled(outside_grad_program, calls=3, torch_too=True, atol=1e-5)
    assert run.state["errors"] == [True] * 3


def test_double_backward_through_a_compiled_forward_is_a_clear_error():
    # torch.compile refuses double backward through a compiled graph too; tracegrad must
    # refuse it the same way (RuntimeError naming the API and the way out), not return
    # a silently wrong second-order gradient
    net = np_init(tracegrad.nn.Linear(2, 1), tracegrad)
    fwd = tracegrad.compile(lambda x: tracegrad.tanh(net(x)).sum())
    for i in range(3):
        x = data(tracegrad, i, 4, 2).requires_grad_(True)
        gx, = tracegrad.autograd.grad(fwd(x), x, create_graph=True)
        eager_x = x.detach().clone().requires_grad_(True)
        ref, = tracegrad.autograd.grad(tracegrad.tanh(net(eager_x)).sum(), eager_x)
        np.testing.assert_allclose(gx.detach().numpy(), ref.numpy(), atol=1e-6)
        if fwd.stats["eager_calls"] > i:     # the first call runs eagerly: its graph is eager's
            gx.pow(2).sum().backward()
            net.weight.grad = None
            continue
        with pytest.raises(RuntimeError, match="tracegrad.compile.*double backward.*disable=True"):
            gx.pow(2).sum().backward()
        assert net.weight.grad is None       # nothing half-accumulated
    assert fwd.stats["traces"] == 1


# ---- in-place updates before an exception stay (as eagerly) ----

def inplace_then_raise_program(mod, wrap):
    w = mod.ones(3)
    buf = mod.zeros(3)
    errors = []

    def step(x):
        w.mul_(2)
        buf.add_(x)
        if x.sum() > 0:                       # data-dependent raise after the in-place updates
            raise ValueError("positive batch")
        return w * buf

    f = wrap(step)

    def call(x):
        try:
            return f(x)
        except ValueError as e:
            errors.append(str(e))
            return None
    return call, {"w": w, "buf": buf, "errors": errors}, \
        lambda i: (mod.tensor([1.0, 2.0, 3.0]) * (1 if i % 2 else -1),)


def test_in_place_updates_before_an_exception_are_kept():
    run = check_compiled(inplace_then_raise_program, calls=4)
    assert run.state["errors"] == ["positive batch"] * 2


def shape_error_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    errors = []

    def step(x):
        with mod.no_grad():
            net.bias.add_(1.0)
        return net(x) @ mod.ones(3)           # (n, 2) @ (3,): a shape error after the update

    f = wrap(step)

    def call(x):
        try:
            return f(x)
        except RuntimeError as e:
            errors.append(type(e).__name__)
            return None
    return call, {"net": net, "errors": errors}, lambda i: (data(mod, i, 4, 3),)


def test_shape_error_after_an_in_place_update():
    run = check_compiled(shape_error_program, calls=3, torch_too=True)
    assert run.state["errors"] == ["RuntimeError"] * 3


# ---- RNG: reseeded inside the step, dropout p changed between calls ----

def reseed_dropout_program(mod, wrap):
    drop = mod.nn.Dropout(0.5)
    net = np_init(mod.nn.Linear(4, 4), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)

    def step(x, seed):
        if seed is not None:
            mod.manual_seed(seed)
        opt.zero_grad()
        a = drop(net(x))
        b = drop(net(x))            # a second draw from the same generator
        loss = (a * b).sum()
        loss.backward()
        opt.step()
        return loss, a, b, mod.rand(2)

    def between(i):
        if i == 1:
            drop.p = 0.2
        if i == 2:
            drop.eval()
    return wrap(step), {"net": net, "opt": opt, "change": between}, \
        lambda i: (data(mod, i, 3, 4), 7 if i % 2 == 0 else None)


def test_reseeded_generator_and_dropout_changed_between_calls():
    check_compiled(reseed_dropout_program, calls=4, between=change)


# ---- a warmup scheduler chained to a cosine one, stepped inside the step ----

def sequential_lr_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 1), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.5, momentum=0.9, nesterov=True)
    warm = mod.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
    cos = mod.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
    sched = mod.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[2])

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        mod.nn.utils.clip_grad_value_(net.parameters(), 0.1)
        opt.step()
        sched.step()
        return loss, sched.get_last_lr()[0]
    return wrap(step), {"net": net, "opt": opt, "sched": sched}, lambda i: (data(mod, i, 4, 3),)


def test_sequential_lr_with_clip_value_in_the_step():
    check_compiled(sequential_lr_program, calls=5, torch_too=True)


# ---- forward hooks added and removed between calls, their side effects every call ----

def hook_toggle_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(2, 2), mod.nn.ReLU(), mod.nn.Linear(2, 1)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    acts = []
    handles = {}

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def record(m, inp, out):
        acts.append(out.detach().sum())

    def scale(m, inp, out):
        return out * 2

    def between(i):
        if i == 0:
            handles["a"] = net[1].register_forward_hook(record)
        if i == 1:
            handles["b"] = net[0].register_forward_hook(scale)
        if i == 2:
            handles.pop("a").remove()
        if i == 3:
            handles.pop("b").remove()
    return wrap(step), {"net": net, "opt": opt, "acts": acts, "change": between}, \
        lambda i: (data(mod, i, 3, 2),)


def test_forward_hooks_added_and_removed_between_calls():
    run = check_compiled(hook_toggle_program, calls=5, between=change, torch_too=True)
    assert len(run.state["acts"]) == 2


# ---- gradient accumulation: the update only on every second call ----

def accumulate_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.Adam(net.parameters(), lr=0.05)
    calls = [0]

    def step(x):
        calls[0] += 1
        loss = net(x).pow(2).mean() / 2
        loss.backward()
        if calls[0] % 2 == 0:
            opt.step()
            opt.zero_grad(set_to_none=False)
        return loss
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 4, 3),)


def test_gradient_accumulation_every_second_call():
    check_compiled(accumulate_program, calls=5, torch_too=True)


# ---- optimizer state, .grad and .data touched between calls ----

def touched_state_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 0:
            opt.state[net.weight]["momentum_buffer"].zero_()     # in place
        if i == 1:
            net.bias.grad = mod.ones(2)                          # a new .grad tensor
        if i == 2:
            net.weight.data = net.weight.data * 0.5              # .data rebound
            del opt.state[net.bias]                              # momentum for the bias restarts
        if i == 3:
            opt.zero_grad(set_to_none=True)
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_optimizer_state_grad_and_data_touched_between_calls():
    check_compiled(touched_state_program, calls=5, between=change, torch_too=True)


def load_state_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.Adam(net.parameters(), lr=0.05)
    saved = {}

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 0:
            saved["net"] = {k: v.clone() for k, v in net.state_dict().items()}
            saved["opt"] = __import__("copy").deepcopy(opt.state_dict())
        if i == 2:                       # roll back to after call 0
            net.load_state_dict(saved["net"])
            opt.load_state_dict(saved["opt"])
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_checkpoint_restored_between_calls():
    run = check_compiled(load_state_program, calls=5, between=change, torch_too=True)
    s = run.snaps
    assert s[3]["state"]["opt"]["state"][0]["step"] == s[1]["state"]["opt"]["state"][0]["step"]


# ---- a closure variable and a module-level flag the step reads, rebound between calls ----

FLAGS = {"double": False}


def closure_program(mod, wrap):
    net = np_init(mod.nn.Linear(2, 2), mod)
    scale = 1.0

    def step(x):
        y = net(x) * scale
        if FLAGS["double"]:
            y = y * 2
        return y.sum()

    def between(i):
        nonlocal scale
        if i == 0:
            scale = 3.0
        if i == 1:
            FLAGS["double"] = True
        if i == 3:
            FLAGS["double"] = False
    return wrap(step), {"net": net, "change": between}, lambda i: (data(mod, i, 3, 2),)


def test_closure_variable_and_module_flag_rebound_between_calls():
    try:
        check_compiled(closure_program, calls=5, between=change)
    finally:
        FLAGS["double"] = False


# ---- optimizer in backward: each parameter updated by its post-accumulate-grad hook ----

def opt_in_backward_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 3), mod.nn.Tanh(), mod.nn.Linear(3, 1)), mod)
    opts = {p: mod.optim.SGD([p], lr=0.1, momentum=0.5) for p in net.parameters()}
    order = []

    def hook(p):
        opts[p].step()
        opts[p].zero_grad()
        order.append(tuple(p.shape))

    for p in net.parameters():
        p.register_post_accumulate_grad_hook(hook)

    def step(x):
        loss = net(x).pow(2).mean()
        loss.backward()
        return loss
    return wrap(step), {"net": net, "opts": list(opts.values()), "order": order}, \
        lambda i: (data(mod, i, 4, 3),)


def test_optimizer_in_backward_hooks():
    run = check_compiled(opt_in_backward_program, calls=3, torch_too=True)
    assert run.state["order"] == run.eager.state["order"] and len(run.state["order"]) == 12


# ---- a full backward hook rewriting grad_input, a forward pre-hook with kwargs ----

def backward_hook_program(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 3), mod.nn.ReLU(), mod.nn.Linear(3, 1)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    seen = []

    def bhook(m, gin, gout):
        seen.append(gout[0].detach().abs().sum())
        return (gin[0].clamp(-0.1, 0.1),)

    def prehook(m, args, kwargs):
        return (args[0] * 0.5,), kwargs

    net[2].register_full_backward_hook(bhook)
    net[0].register_forward_pre_hook(prehook, with_kwargs=True)

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"net": net, "opt": opt, "seen": seen}, lambda i: (data(mod, i, 4, 3),)


def test_full_backward_hook_and_kwargs_pre_hook():
    run = check_compiled(backward_hook_program, calls=3, torch_too=True)
    assert len(run.state["seen"]) == 3


# ---- the model's dtype changed between calls ----

def dtype_change_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = net(x.to(net.weight.dtype)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    def between(i):
        if i == 1:
            net.double()
    return wrap(step), {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_module_converted_to_double_between_calls():
    run = check_compiled(dtype_change_program, calls=4, between=change, torch_too=True)
    assert run.snaps[-1]["out"]["dtype"] == "float64"


# ---- Adam's flags changed in param_groups between calls ----

def adam_flags_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.Adam(net.parameters(), lr=0.05)
    errors = []

    def step(x):
        opt.zero_grad()
        loss = net(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    f = wrap(step)

    def call(x):
        try:
            return f(x)
        except KeyError as e:
            errors.append(str(e))
            return None

    def between(i):
        g = opt.param_groups[0]
        if i == 0:
            g["maximize"] = True
        if i == 1:
            g["betas"] = (0.5, 0.9)
        if i == 2:
            g["amsgrad"] = True      # no max_exp_avg_sq in the state: torch's KeyError, state kept
        if i == 3:
            g["amsgrad"] = False
    return call, {"net": net, "opt": opt, "errors": errors, "change": between}, lambda i: (data(mod, i, 4, 3),)


def test_adam_flags_changed_between_calls():
    run = check_compiled(adam_flags_program, calls=5, between=change, torch_too=True)
    assert run.state["errors"] == ["'max_exp_avg_sq'"]
    s = run.snaps
    assert s[3]["state"]["opt"]["state"][0]["step"] == s[2]["state"]["opt"]["state"][0]["step"]
