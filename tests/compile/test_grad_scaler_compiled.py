"""``GradScaler`` inside a compiled training step (NOTE [skipped steps in a trace] in
``tracegrad/_lowering/masked_step.py``): the skip decision on inf/NaN gradients stays in the
program, so a mixed-precision step is one program, and every call -- a step taken or skipped,
the scale backed off or grown -- leaves what eager tracegrad and torch leave: parameters,
their .grad, the optimizer's state, the scale and growth tracker, the lr schedule.
"""
import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, no_change, np_init

INF = float("inf")


def _program(opt_name, bad_at=(), bad=INF, init_scale=2.0 ** 8, growth_interval=2, sched=False, clip=True):
    def make(mod, wrap):
        nn = mod.nn
        model = np_init(nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)), mod)
        if opt_name == "sgd":
            opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        elif opt_name == "adam":
            opt = mod.optim.Adam(model.parameters(), lr=0.01)
        else:
            opt = mod.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1, amsgrad=True)
        scaler = mod.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
        state = {"model": model, "opt": opt, "scaler": scaler, "change": no_change}
        if sched:
            state["sched"] = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            if sched:
                state["sched"].step()
            return loss.detach()

        def batch(i):
            x = data(mod, i, 4, 3)
            if i in bad_at:
                x[1, 2] = bad
            return x, data(mod, i, 4, 2, seed=300)
        return wrap(step), state, batch
    return make


@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("bad_at", [(), (2,), (2, 3, 5)])
def test_steps_skipped_on_inf_keep_one_program(opt_name, bad_at):
    """inf in the batch of calls ``bad_at`` (after the optimizer's state exists): those steps
    are skipped and the scale halves, the others step and grow it every second clean call."""
    run = check_compiled(_program(opt_name, bad_at), calls=7, torch_too=True)
    stats = run.step.stats
    assert (stats["traces"], stats["eager_calls"], stats["graph_breaks"]) == (1, 1, []), stats
    scales = [s["state"]["scaler"]["scale"] for s in run.snaps]
    for i in bad_at:          # a skipped step halved the scale
        assert scales[i] == scales[i - 1] / 2
    opt_state = run.state["opt"].state_dict()["state"]
    if opt_name != "sgd":     # Adam's step count: the skipped steps are not counted
        assert float(opt_state[0]["step"]) == 7 - len(bad_at)


def test_nan_gradients_skip_the_step():
    run = check_compiled(_program("adam", (3,), bad=float("nan")), calls=5, torch_too=True)
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"]
    assert float(run.state["opt"].state_dict()["state"][0]["step"]) == 4


def test_overflowing_first_steps_then_one_program():
    """A scale so large that the first calls overflow (the usual start of fp16 training): the
    optimizer has no state yet, which eager's skipped step would not create, so those calls
    run eagerly (no program is kept for them) until a step is taken; then one program."""
    run = check_compiled(_program("adam", bad_at=(0, 1, 2), clip=False), calls=6, torch_too=True)
    stats = run.step.stats
    scales = [s["state"]["scaler"]["scale"] for s in run.snaps]
    assert scales[:3] == [2.0 ** 7, 2.0 ** 6, 2.0 ** 5]      # skipped, backed off
    assert run.snaps[2]["state"]["opt"]["state"] == {}       # none made before the first step taken
    assert run.snaps[3]["state"]["opt"]["state"] != {}
    assert (stats["traces"], stats["eager_calls"]) == (1, 4), stats
    assert all("creates its state" in reason for reason, _ in stats["graph_breaks"]), stats


def test_scheduler_before_the_first_taken_step():
    """An lr scheduler notes the optimizer's first step (its order warning): while no step was
    taken the calls run eagerly, then one program; the lrs and warnings are eager's."""
    make = _program("sgd", bad_at=(0, 1), sched=True)
    run = check_compiled(make, calls=5, torch_too=True)
    assert run.step.stats["traces"] == 1, run.step.stats
    assert [w for w in run.warnings if not w.startswith("tracegrad.compile:")] == run.eager.warnings
    assert any("Detected call of `lr_scheduler.step()` before `optimizer.step()`" in w for w in run.warnings)


def test_step_hooks_keep_the_step_eager():
    """A step hook's Python must not run on a skipped step: such a step is not masked (eager's
    found_inf read is a graph break) and every call gives eager's results, hook calls included."""
    def make(mod, wrap):
        step, state, batch = _program("sgd", bad_at=(2,))(mod, wrap)
        calls = []
        state["opt"].register_step_post_hook(lambda opt, args, kwargs: calls.append(1))
        state["hook_calls"] = calls
        return step, state, batch
    run = check_compiled(make, calls=4)
    assert len(run.state["hook_calls"]) == 3       # the skipped call ran no hook
    assert run.step.stats["graph_breaks"]


def test_scale_growth_stops_short_of_inf():
    """torch's ``_amp_update_scale_`` keeps the scale when growing it would overflow float32
    (the tracker restarts); eager tracegrad and a compiled update alike."""
    torch = pytest.importorskip("torch")
    for mod in (tracegrad, torch):
        s = mod.amp.GradScaler("cpu", init_scale=3e38, growth_interval=1)
        p = mod.nn.Parameter(mod.ones(2))
        opt = mod.optim.SGD([p], lr=0.1)
        s.scale((p * 1e-40).sum()).backward()
        s.step(opt)
        s.update()
        assert s.get_scale() == pytest.approx(3e38, rel=1e-6) and s._get_growth_tracker() == 0


def test_backoff_and_growth_round_as_torch():
    """Growth and backoff factors that are no powers of two: the new scale is the float64
    product rounded to float32, as torch's kernel computes it."""
    torch = pytest.importorskip("torch")
    out = {}
    for mod in (tracegrad, torch):
        s = mod.amp.GradScaler("cpu", init_scale=1000.3, growth_factor=1.1, backoff_factor=0.7, growth_interval=1)
        p = mod.nn.Parameter(mod.ones(2))
        opt = mod.optim.SGD([p], lr=0.1)
        seen = []
        for bad in (False, True, False, False):
            opt.zero_grad()
            s.scale((p * (INF if bad else 1.0)).sum()).backward()
            s.step(opt)
            s.update()
            seen.append(s.get_scale())
        out[mod.__name__] = seen
    assert out["tracegrad"] == out["torch"]
    grown = np.float32(np.float64(np.float32(1000.3)) * 1.1)
    assert out["tracegrad"][:2] == [float(grown), float(np.float32(np.float64(grown) * 0.7))]
