"""Hooks that run inside a compiled function (NOTE [hooks in a trace] in
``tracegrad/_lowering/capture.py``): a hook whose work is tensor math (a gradient clamped, an
output scaled, an input replaced, a gradient rescaled in place after accumulation) is part of the
program, runs on every call with that call's values and is guarded on the Python values it
reads; a hook that changes Python state (a counter, an append) makes the call run eagerly so the
change happens every call. Compiled equals eager and torch, over several calls."""
import pytest

from ._harness import check_compiled, data, np_init


def _compiled_step(wrap, model, opt, holder):
    """The hooked model's SGD step through ``wrap``; ``holder.stats``: the compiled one's."""
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss
    compiled = wrap(step)
    if compiled is not step:
        holder.stats = compiled.stats
    return compiled


def _program(kind, scale=None):
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        cfg = {"scale": 0.5}
        log = []
        if kind == "clamp_grad":
            for p in model.parameters():
                p.register_hook(lambda g: g.clamp(-0.1, 0.1))
        elif kind == "scale_output":
            model[0].register_forward_hook(lambda m, inp, out: out * cfg["scale"])
        elif kind == "replace_input":
            model[2].register_forward_pre_hook(lambda m, inp: (inp[0] * 0.5 + 0.1,))
        elif kind == "post_accumulate":
            def rescale(p):
                p.grad.mul_(cfg["scale"])
            model[0].weight.register_post_accumulate_grad_hook(rescale)
        elif kind == "step_pre_hook":
            opt_hook = lambda opt, args, kwargs: None    # noqa: E731 -- a hook with nothing to do
        elif kind == "counting":
            model[0].register_forward_hook(lambda m, inp, out: log.append(len(log)))
        elif kind == "appending":     # only grows the list (NOTE [Python appends] in pystate.py)
            model[0].register_forward_hook(lambda m, inp, out: log.append(out.sum().item()))
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        if kind == "step_pre_hook":
            opt.register_step_pre_hook(opt_hook)

        def change(state, i):
            if scale is not None:
                cfg["scale"] = scale[i]
        state = {"model": model, "opt": opt, "log": log, "change": change}
        return _compiled_step(wrap, model, opt, make), state, lambda i: (data(mod, i, 5, 3),)
    return make


@pytest.mark.parametrize("kind", ["clamp_grad", "scale_output", "replace_input", "post_accumulate", "step_pre_hook"])
def test_a_pure_hook_is_part_of_the_program(kind):
    make = _program(kind)
    check_compiled(make, calls=3, torch_too=True)
    assert make.stats["traces"] == 1 and not make.stats["graph_breaks"], make.stats


@pytest.mark.parametrize("kind", ["scale_output", "post_accumulate"])
def test_a_value_a_hook_reads_changed_between_calls_is_seen(kind):
    make = _program(kind, scale=[0.5, 2.0, 2.0, -1.0])
    check_compiled(make, calls=4, between=lambda state, i: state["change"](state, i), torch_too=True)
    # call 0 runs eagerly (0.5); calls 1-2 share one program (2.0); -1.0 is a new value: traced again
    assert make.stats["traces"] == 2 and not make.stats["graph_breaks"], make.stats


def test_a_hook_with_a_python_side_effect_runs_eagerly_every_call():
    # the hook reads the list it grows (``len(log)``): a side effect the program cannot repeat
    make = _program("counting")
    check_compiled(make, calls=3, torch_too=True)     # compares the log after every call
    assert make.stats["traces"] == 0 and "'log'" in make.stats["graph_breaks"][0][0], make.stats


def test_a_hook_that_only_appends_is_part_of_the_program():
    make = _program("appending")
    run = check_compiled(make, calls=3, torch_too=True)
    assert make.stats["traces"] == 1 and not make.stats["graph_breaks"], make.stats
    assert len(run.state["log"]) == 3


def test_a_callable_object_hook_that_stores_its_output_runs_eagerly_every_call():
    # a feature extractor object: ``self.features = out.detach(); self.n += 1`` in ``__call__``

    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)

        class Extractor:
            def __init__(self):
                self.features, self.n = None, 0

            def __call__(self, m, inp, out):
                self.features = out.detach()
                self.n += 1
        ex = Extractor()
        model[1].register_forward_hook(ex)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        state = {"model": model}
        compiled = _compiled_step(wrap, model, opt, make)

        def observed(x):
            out = compiled(x)
            state["n"], state["features"] = ex.n, ex.features
            return out
        return observed, state, lambda i: (data(mod, i, 5, 3),)
    check_compiled(make, calls=3, torch_too=True)
    assert make.stats["traces"] == 0 and "self.n" in make.stats["graph_breaks"][0][0], make.stats


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm", "prune"])
def test_reparametrizations_by_forward_pre_hook_are_part_of_the_program(kind):
    # nn.utils.weight_norm / spectral_norm (the forward-pre-hook forms: weight recomputed and
    # set on the module, spectral_norm's power iteration updating u/v in place) and
    # nn.utils.prune (weight = weight_orig * weight_mask): callable-object hooks with no Python
    # side effect, one program over every call
    def make(mod, wrap):
        import importlib
        nn = mod.nn
        lin = nn.Linear(3, 4)
        if kind != "prune":
            lin = getattr(nn.utils, kind)(lin)
        model = np_init(nn.Sequential(lin, nn.Tanh(), nn.Linear(4, 2)), mod)
        if kind == "spectral_norm":
            with mod.no_grad():
                lin.weight_u.copy_(mod.linspace(0.1, 1.0, 4))
                lin.weight_v.copy_(mod.linspace(0.2, 0.6, 3))
        if kind == "prune":
            importlib.import_module(mod.__name__ + ".nn.utils.prune").l1_unstructured(lin, "weight", amount=0.5)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        return _compiled_step(wrap, model, opt, make), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5, 3),)
    with pytest.warns(FutureWarning) if kind == "weight_norm" else _nothing():
        check_compiled(make, calls=4, torch_too=True)
    assert make.stats["traces"] == 1 and not make.stats["graph_breaks"], make.stats


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
