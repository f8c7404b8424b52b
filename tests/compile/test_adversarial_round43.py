"""Round 43: lists a compiled training step only appends to (NOTE [Python appends] in
tracegrad/_lowering/pystate.py), attacked; then closures to ``optimizer.step``, two optimizers,
GradScaler, checkpoint, parametrize, ``functional_call`` and nested compiled functions.
"""
import collections
import warnings

import pytest

import tracegrad
from ._harness import check_compiled, small_mlp, small_xy, traces, run_three_ways


def _sgd_step(mod, model, opt, x, y):
    opt.zero_grad()
    loss = mod.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _batches(mod):
    return lambda i: small_xy(mod, i)


# ---- NOTE [Python appends] attacked ------------------------------------------------------

def test_list_aliased_under_a_second_name_read_for_its_length():
    # ``hist`` is only appended to, but ``seen`` is the same list and its length is read
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = [0.0] * 20
        seen = hist

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(loss.item())
            return loss * len(seen)
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_attribute_alias_of_the_grown_list_read_for_its_length():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        class Trainer:
            pass
        t = Trainer()
        t.losses = [1.0] * 20
        t.log = t.losses

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            t.losses.append(loss.item())
            return loss + len(t.log)
        return wrap(step), {"model": model, "losses": t.losses}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_list_read_through_a_property():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        class Trainer:
            def __init__(self):
                self.losses = [1.0] * 20

            @property
            def n(self):
                return len(self.losses)
        t = Trainer()

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            t.losses.append(loss.item())
            return loss * t.n
        return wrap(step), {"model": model, "losses": t.losses}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_list_read_in_a_helper_after_the_append():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = [2.0] * 20

        def last():
            return hist[-1]

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(loss.item())
            return loss * last()
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_appended_then_popped():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(loss.item())
            hist.append(loss.item() * 2)
            hist.pop()
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["hist"]) == 3


def test_appended_in_a_branch_on_a_python_flag_changed_between_calls():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist, cfg = [], {"log": True}

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            if cfg["log"]:
                hist.append(loss.item())
            return loss
        state = {"model": model, "hist": hist, "change": lambda i: cfg.update(log=i % 2 == 1)}
        return wrap(step), state, _batches(mod)
    run = check_compiled(make, calls=5, between=lambda s, i: s["change"](i), torch_too=True)
    assert len(run.state["hist"]) == 3 and traces(run.step) == 2


def test_appended_in_a_branch_on_a_tensor_value():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            if loss > 1.0:
                hist.append(loss.detach())
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    check_compiled(make, calls=5, torch_too=True)


def test_deque_with_maxlen_and_list_subclass():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        window = collections.deque(maxlen=2)

        class Log(list):
            def append(self, v):
                super().append(round(v, 3))
        log = Log()

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            window.append(loss.item())
            log.append(loss.item())
            return loss
        return wrap(step), {"model": model, "window": window, "log": log}, _batches(mod)

    def between(state, i):
        state["window_now"] = list(state["window"])
    run = check_compiled(make, calls=4, between=between)
    assert len(run.state["window"]) == 2 and len(run.state["log"]) == 4
    assert list(run.state["window"]) == pytest.approx(list(run.eager.state["window"]))


def test_same_tensor_appended_twice_is_one_object():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            d = loss.detach()
            hist.append(d)
            hist.append(d)
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    h = run.state["hist"]
    assert h[0] is h[1] and h[4] is h[5] and h[1] is not h[2]


def test_appended_parameter_and_outside_objects_are_the_objects_themselves():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"lr": 0.1}
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(model[0].weight)
            hist.append(cfg)
            hist.append(opt)
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3)
    h, model = run.state["hist"], run.state["model"]
    assert all(h[k] is model[0].weight for k in (0, 3, 6))
    assert h[1] is h[4] and type(h[1]) is dict and h[2] is h[5]


def test_appended_detach_of_a_parameter_sees_later_updates():
    # ``w.detach()`` shares the parameter's storage: later opt.step()s show through the list
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        snaps = []

        def step(x, y):
            snaps.append(model[2].bias.detach())
            return _sgd_step(mod, model, opt, x, y)
        return wrap(step), {"model": model, "snaps": snaps}, _batches(mod)
    check_compiled(make, calls=3, torch_too=True)


def test_appended_grad_object_zeroed_in_place_later():
    # zero_grad(set_to_none=False) zeroes the very .grad objects the list holds
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        grads = []

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            loss = mod.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            grads.append(model[0].bias.grad)
            opt.step()
            return loss
        return wrap(step), {"model": model, "grads": grads}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    g = run.state["grads"]
    assert g[0] is g[1] is run.state["model"][0].bias.grad


def test_appended_optimizer_state_tensor_updated_later():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.01)
        moments = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            moments.append(opt.state[model[2].bias]["exp_avg"])
            return loss
        return wrap(step), {"model": model, "opt": opt, "moments": moments}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_appended_view_then_written_in_place_in_the_step():
    def make(mod, wrap):
        model = small_mlp(mod)
        acts = []

        def step(x, y):
            h = model(x).detach()
            acts.append(h[0])
            h.mul_(2)
            return h.sum()
        return wrap(step), {"acts": acts}, _batches(mod)
    check_compiled(make, calls=3, torch_too=True)


def test_appended_activation_backward_outside_after_the_weights_changed():
    # eager: the activation of call 0 saved a weight that call 1's opt.step() changed in place,
    # so a backward through it outside raises the version-counter RuntimeError
    def run(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        acts = []

        def step(x, y):
            out = model(x)
            acts.append(out)
            loss = mod.nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward(retain_graph=True)
            opt.step()
            return loss
        f = wrap(step)
        for i in range(2):
            f(*small_xy(mod, i))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            acts[0].sum().backward()
        return len(acts)
    assert run(tracegrad, tracegrad.compile) == run(tracegrad, lambda f: f) == 2


def test_extend_with_a_generator_and_with_a_tensor():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        norms, rows = [], []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            norms.extend(p.grad.norm().item() for p in model.parameters())
            rows.extend(model(x).detach())
            return loss
        return wrap(step), {"model": model, "norms": norms, "rows": rows}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["norms"]) == 12 and len(run.state["rows"]) == 15


def test_exception_after_the_append_leaves_the_item():
    def run(mod, wrap):
        model = small_mlp(mod)
        hist = []

        def step(x, fail):
            out = model(x).sum()
            hist.append(out.detach())
            if fail:
                raise ValueError("bad batch")
            return out
        f = wrap(step)
        for i in range(4):
            try:
                f(small_xy(mod, i)[0], i % 2 == 1)
            except ValueError:
                hist.append("failed")
        return [h if isinstance(h, str) else h.item() for h in hist]
    comp, eager = run(tracegrad, tracegrad.compile), run(tracegrad, lambda f: f)
    torch = pytest.importorskip("torch")
    ref = run(torch, lambda f: f)
    assert [type(v) for v in comp] == [type(v) for v in eager] == [type(v) for v in ref]
    assert comp[2::3] == eager[2::3] == ["failed", "failed"] and len(comp) == 6
    nums = [v for v in comp if type(v) is float]
    assert nums == pytest.approx([v for v in eager if type(v) is float])
    assert nums == pytest.approx([v for v in ref if type(v) is float], rel=1e-4)


def test_append_in_custom_function_forward_and_backward():
    def make(mod, wrap):
        log = []

        class Scale(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                log.append(("fwd", x.shape[0]))
                return x * 2

            @staticmethod
            def backward(ctx, g):
                log.append(("bwd", g.detach().sum()))
                return g * 2
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = mod.nn.functional.cross_entropy(Scale.apply(model(x)), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "log": log}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert [k for k, _ in run.state["log"][:2]] == ["fwd", "bwd"]


def test_append_in_a_checkpointed_block_runs_twice():
    def make(mod, wrap):
        from importlib import import_module
        ckpt = import_module(mod.__name__ + ".utils.checkpoint").checkpoint
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        seen = []

        def block(h):
            seen.append(h.shape[0])
            return model[1](model[0](h))

        def step(x, y):
            opt.zero_grad()
            h = ckpt(block, x, use_reentrant=False)
            loss = mod.nn.functional.cross_entropy(model[2](h), y)
            loss.backward()
            opt.step()
            return loss
        return wrap(step), {"model": model, "seen": seen}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["seen"]) == 6


def test_list_rebound_to_a_deque_between_calls():
    # the place first holds a list (grown by the program), then a deque (not a list any more)
    def run(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        class T:
            losses = None
        t = T()
        t.losses = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            t.losses.append(loss.item())
            return loss
        f, seen = wrap(step), []
        for i in range(5):
            f(*small_xy(mod, i))
            if i == 1:
                t.losses = collections.deque(t.losses, maxlen=2)
            seen.append(list(t.losses))
        return f, seen
    f, comp = run(tracegrad, tracegrad.compile)
    _, eager = run(tracegrad, lambda f: f)
    _, ref = run(pytest.importorskip("torch"), lambda f: f)
    assert [len(s) for s in comp] == [len(s) for s in eager] == [1, 2, 2, 2, 2]
    for a, b, c in zip(comp, eager, ref):
        assert a == pytest.approx(b) and a == pytest.approx(c, rel=1e-4)


def test_hook_reading_an_alias_of_the_grown_list():
    # the forward hook reads ``log`` (the function's ``hist`` under another name)
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = [1.0] * 20
        log = hist
        model[0].register_forward_hook(lambda m, i, o: o * len(log))

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(loss.item())
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_module_attribute_alias_read_in_forward():
    # the module's forward reads ``self.seen`` (the trainer's list under another name)
    def make(mod, wrap):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = small_mlp(mod)
                self.seen = None

            def forward(self, x):
                return self.body(x) / (1 + len(self.seen))
        model = Net()
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        losses = [0.0] * 20
        model.seen = losses

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            losses.append(loss.item())
            return loss
        return wrap(step), {"model": model, "losses": losses}, _batches(mod)
    check_compiled(make, calls=4, torch_too=True)


def test_bound_append_method_kept_outside_the_step():
    # ``record = hist.append`` made outside: the step never names the list
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []
        record = hist.append

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            record(loss.item())
            record(loss.detach())
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["hist"]) == 6
    assert any("'record.__self__'" in w for w in run.warnings)     # eager, with the reason


def test_extend_with_a_list_the_caller_fills_between_calls():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist, pending = [], [0.5] * 12

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.extend(pending)
            return loss

        def change(i):
            pending[3] = float(i)
            pending.append(-1.0)
        return wrap(step), {"model": model, "hist": hist, "change": change}, _batches(mod)
    run = check_compiled(make, calls=4, between=lambda s, i: s["change"](i))
    assert len(run.state["hist"]) == 12 + 13 + 14 + 15


def test_appended_record_holds_outside_objects_the_caller_changes():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"tag": "a", "scale": 1.0}
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append({"loss": loss.item(), "tag": cfg["tag"], "cfg": cfg, "x": x})
            return loss

        def change(i):
            cfg["tag"] = "b" if i % 2 else "c"
        return wrap(step), {"model": model, "hist": hist, "change": change}, _batches(mod)
    run = check_compiled(make, calls=4, between=lambda s, i: s["change"](i))
    h = run.state["hist"]
    assert h[0]["cfg"] is h[3]["cfg"] and [r["tag"] for r in h] == ["a", "c", "b", "c"]


def test_appended_argument_is_the_callers_object():
    model = small_mlp(tracegrad)
    seen = []

    @tracegrad.compile
    def step(x, meta):
        seen.append(x)
        seen.append(meta)
        return model(x).sum()
    metas = [{"tag": "a"} for i in range(3)]     # equal, three objects
    xs = [small_xy(tracegrad, i)[0] for i in range(3)]
    for x, m in zip(xs, metas):
        step(x, m)
    assert all(seen[2 * i] is xs[i] and seen[2 * i + 1] is metas[i] for i in range(3))
    assert traces(step) == 1


def test_appends_from_two_programs_for_two_shapes():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append((x.shape[0], loss.item()))
            return loss

        def batch(i):
            x, y = small_xy(mod, i)
            return (x, y) if i % 2 == 0 else (x[:3], y[:3])
        return wrap(step), {"model": model, "hist": hist}, batch
    run = check_compiled(make, calls=4, torch_too=True)
    assert [n for n, _ in run.state["hist"]] == [5, 3, 5, 3] and traces(run.step) == 2


def test_append_inside_a_nested_compiled_helper():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []

        @wrap
        def forward(x, y):
            loss = mod.nn.functional.cross_entropy(model(x), y)
            hist.append(loss.detach())
            return loss

        def step(x, y):
            opt.zero_grad()
            loss = forward(x, y)
            loss.backward()
            opt.step()
            hist.append(loss.item())
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["hist"]) == 6


def test_append_in_try_except_that_catches():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            try:
                hist.append(loss.item())
                hist.append({}["missing"])
            except KeyError:
                hist.append("no key")
            return loss
        return wrap(step), {"model": model, "hist": hist}, _batches(mod)
    run = check_compiled(make, calls=3, torch_too=True)
    assert run.state["hist"][1::2] == ["no key"] * 3
