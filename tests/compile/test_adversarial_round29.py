"""Round 29: training-step features the random-program grammar now draws (seeds >= 2000), each
checked compiled vs eager after every call (and vs torch where no random numbers are drawn):
a zero_grad decided outside the step (gradient accumulation), autocast switched on and off
between calls, a scheduler that also cycles momentum (OneCycleLR), param groups with their own
lr/weight_decay, parameters edited through ``.data`` views inside the step, a counter buffer
the loss reads, a ``no_grad`` evaluation and ``loss.item()`` in the returned dict, noise from
the global RNG and an ``arange`` made inside the step. 150 new seeds (2000..2149) found no
compiled/eager disagreement beyond rounding; these pin the behaviours down."""
import pytest

from ._harness import check_compiled, np_init
from ._harness import small_batches as _batch


def _model(mod, drop=False):
    nn = mod.nn
    layers = [nn.Linear(4, 6), nn.ReLU()] + ([nn.Dropout(0.3)] if drop else []) + [nn.Linear(6, 3)]
    return np_init(nn.Sequential(*layers), mod)


def test_accumulate_decided_outside_the_step():
    """zero_grad()/step() every other call, the choice a Python flag set between calls: the
    compiled step must follow the flag each call (guarded or lifted), never the first trace."""
    def make(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        flags = {"update": False}

        def step(x, y):
            loss = mod.nn.functional.cross_entropy(model(x), y) / 2
            loss.backward()
            if flags["update"]:
                opt.step()
                opt.zero_grad()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt, "flags": flags}, _batch(mod)
    run = check_compiled(make, calls=5, between=lambda st, i: st["flags"].__setitem__("update", i % 2 == 0),
                         torch_too=True)
    assert run.step.stats["traces"] >= 1 and not run.step.stats["graph_breaks"]


def test_onecycle_cycles_lr_and_momentum_with_param_groups():
    """OneCycleLR changes lr and momentum of every group each call; groups keep their own
    weight_decay: all read per call, never frozen into the program."""
    def make(mod, wrap):
        model = _model(mod)
        ps = list(model.parameters())
        opt = mod.optim.SGD([{"params": ps[:2], "weight_decay": 0.05}, {"params": ps[2:], "lr": 0.2}],
                            lr=0.1, momentum=0.9)
        sched = mod.optim.lr_scheduler.OneCycleLR(opt, max_lr=[0.1, 0.3], total_steps=10)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt, "sched": sched}, _batch(mod)
    check_compiled(make, calls=4, between=lambda st, i: st["sched"].step(), torch_too=True)


def test_adam_amsgrad_cosine_with_data_view_edits_and_counter():
    """After the step: every parameter clamped through ``p.data``, a row zeroed through a view
    of ``weight.data``; a long counter buffer incremented in the step scales the loss."""
    def make(mod, wrap):
        model = _model(mod)
        model.register_buffer("steps", mod.zeros((), dtype=mod.long))
        opt = mod.optim.Adam(model.parameters(), lr=0.05, amsgrad=True, eps=1e-3)
        sched = mod.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.001)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y) * (1.0 + 0.1 * model.steps.float())
            loss.backward()
            opt.step()
            model.steps += 1
            for p in model.parameters():
                p.data.clamp_(-0.3, 0.3)
            model[2].weight.data[0].zero_()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt, "sched": sched}, _batch(mod)
    check_compiled(make, calls=4, between=lambda st, i: st["sched"].step(), torch_too=True)


def test_dict_with_item_and_no_grad_eval():
    """A dict result: the loss, a ``no_grad`` evaluation made in the step, ``loss.item()`` and a
    tuple holding ``float(loss)``: each call's own numbers, of eager's types."""
    def make(mod, wrap):
        model = _model(mod)
        opt = mod.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1, eps=1e-3)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with mod.no_grad():
                ev = model(x[:3]).mean()
            return {"loss": loss, "eval": ev, "item": loss.item(), "pair": (loss.detach() * 2, float(loss))}
        return wrap(step), {"model": model, "opt": opt}, _batch(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert isinstance(run.snaps[-1]["out"]["item"], float)


def test_global_rng_in_step_advances_like_eager():
    """Dropout and ``randn`` noise from the global RNG, plus an ``arange`` made in the step:
    each compiled call draws what that eager call draws, and the RNG state after it agrees."""
    def make(mod, wrap):
        model = _model(mod, drop=True)
        opt = mod.optim.RMSprop(model.parameters(), lr=0.01, eps=1e-3)

        def step(x, y):
            opt.zero_grad()
            x = x + 0.05 * mod.randn(x.shape) + mod.arange(x.shape[1], dtype=x.dtype) * 0.1
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt}, _batch(mod)
    check_compiled(make, calls=4, between=lambda st, i: st["model"].train(i % 2 == 1))


def test_autocast_switched_between_calls():
    """``autocast(enabled=flag)`` with the flag changed between calls: the dtype of the result
    and the values follow each call's flag."""
    def make(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        flags = {"amp": False}

        def step(x, y):
            opt.zero_grad()
            with mod.autocast("cpu", dtype=mod.bfloat16, enabled=flags["amp"]):
                out = model(x)
            loss = mod.nn.functional.cross_entropy(out.float(), y)
            loss.backward()
            opt.step()
            return loss.detach(), out.detach()
        return wrap(step), {"model": model, "opt": opt, "flags": flags}, _batch(mod)
    # bfloat16 matmuls: compiled (XLA) and eager may round a product's last bf16 bit apart
    run = check_compiled(make, calls=4, between=lambda st, i: st["flags"].__setitem__("amp", i % 2 == 0),
                         rtol=2e-2, atol=2e-2)
    assert [s["out"][1]["dtype"] for s in run.snaps] == ["float32", "bfloat16", "float32", "bfloat16"]
    assert run.step.stats["traces"] >= 1 and not run.step.stats["graph_breaks"]


def test_requires_grad_false_on_hidden_layer_between_calls():
    """A hidden layer frozen with ``requires_grad_(False)`` after the first call: its .grad and
    parameters stop changing in the compiled step exactly as eagerly."""
    def make(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adagrad(model.parameters(), lr=0.05, eps=1e-3)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            mod.nn.utils.clip_grad_value_(model.parameters(), 0.05)
            opt.step()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt}, _batch(mod)
    check_compiled(make, calls=4, between=lambda st, i: st["model"][0].requires_grad_(i != 0), torch_too=True)


def test_onecycle_cycles_adam_betas_without_retracing():
    """OneCycleLR rewrites Adam's ``betas`` tuple each call: read per call as program inputs
    (one trace), never the first call's betas frozen in."""
    def make(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.01, eps=1e-3)
        sched = mod.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=10)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        return wrap(step), {"model": model, "opt": opt, "sched": sched}, _batch(mod)
    run = check_compiled(make, calls=4, between=lambda st, i: st["sched"].step(), torch_too=True)
    assert run.step.stats["traces"] == 1
