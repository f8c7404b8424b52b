"""A compiled step that appends to a list it only grows (NOTE [Python appends] in
tracegrad/_lowering/pystate.py): ``history.append(loss.item())``, a trainer's
``self.losses.append(...)``, a module's ``self.acts.append(h)``. Each call grows the list as
eagerly (values against eager tracegrad and torch), from one trace; a list the function also
reads, or a list a hook reads, keeps running eagerly."""
import warnings

import pytest

import tracegrad
from ._harness import check_compiled, small_mlp, small_xy, traces


def _sgd_step(mod, model, opt, x, y):
    opt.zero_grad()
    loss = mod.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def test_global_list_of_item_numbers():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        hist = []

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            hist.append(loss.item())
            return loss
        return wrap(step), {"model": model, "opt": opt, "hist": hist}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=5, torch_too=True)
    assert traces(run.step) == 1 and not run.step.stats["graph_breaks"]
    hist = run.state["hist"]
    assert len(hist) == 5 and all(type(v) is float for v in hist)


HISTORY = []


def test_module_global_list_and_extend():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        HISTORY.clear()

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            HISTORY.append(("loss", loss.item()))
            HISTORY.extend([loss.detach() * 2, x.shape[0]])
            return loss
        return wrap(step), {"model": model, "hist": HISTORY}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3)
    assert traces(run.step) == 1
    assert [type(v).__name__ for v in HISTORY[:3]] == ["tuple", "Tensor", "int"] and len(HISTORY) == 9


def test_trainer_and_module_attribute_lists():
    def make(mod, wrap):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = small_mlp(mod)
                self.acts = []

            def forward(self, x):
                h = self.body(x)
                self.acts.append(h.detach())
                return h

        class Trainer:
            def __init__(self):
                self.model = Net()
                self.opt = mod.optim.Adam(self.model.parameters(), lr=0.01)
                self.losses = []

            def step(self, x, y):
                loss = _sgd_step(mod, self.model, self.opt, x, y)
                self.losses.append(loss.item())
                return loss
        t = Trainer()
        return wrap(t.step), {"model": t.model, "losses": t.losses, "acts": t.model.acts}, \
            lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=4, torch_too=True)
    assert traces(run.step) == 1
    acts = run.state["acts"]
    assert len(acts) == 4 and len({id(a) for a in acts}) == 4 and not acts[0].requires_grad


def test_appended_loss_keeps_its_graph():
    # ``losses.append(loss)`` and one backward over their sum after the loop
    def run(mod, wrap):
        mod.manual_seed(0)
        model = small_mlp(mod)
        losses = []

        def step(x, y):
            out = model(x)
            losses.append(mod.nn.functional.cross_entropy(out, y))
            return out.sum()
        f = wrap(step)
        for i in range(3):
            f(*small_xy(mod, i))
        assert all(t.requires_grad and t.grad_fn is not None for t in losses)
        mod.stack(losses).sum().backward()
        return [t.item() for t in losses] + [p.grad.clone() for p in model.parameters()]
    comp = run(tracegrad, tracegrad.compile)
    eager = run(tracegrad, lambda f: f)
    torch = pytest.importorskip("torch")
    ref = run(torch, lambda f: f)
    for a, b, c in zip(comp, eager, ref):
        if isinstance(a, float):
            assert a == pytest.approx(b, rel=1e-5) and a == pytest.approx(c, rel=1e-4)
        else:
            assert a.numpy() == pytest.approx(b.numpy(), rel=1e-5, abs=1e-6)
            assert a.numpy() == pytest.approx(c.numpy(), rel=1e-4, abs=1e-5)


def test_appended_tensor_is_the_returned_tensor():
    model = small_mlp(tracegrad)
    kept = []

    @tracegrad.compile
    def step(x):
        out = model(x).detach()
        kept.append(out)
        return out
    for i in range(3):
        out = step(small_xy(tracegrad, i)[0])
        assert kept[-1] is out         # one object, as eagerly
    assert len(kept) == 3 and traces(step) == 1


def test_list_rebound_between_calls_grows_the_new_list():
    model = small_mlp(tracegrad)
    box = {"epoch": []}

    class Log:
        losses = None
    log = Log()
    log.losses = []

    @tracegrad.compile
    def step(x, y):
        loss = tracegrad.nn.functional.cross_entropy(model(x), y)
        log.losses.append(loss.item())
        return loss
    seen = []
    for epoch in range(3):
        log.losses = []             # a new list each epoch, as training loops reset them
        for i in range(2):
            step(*small_xy(tracegrad, i))
        seen.append(log.losses)
        box["epoch"].append(len(log.losses))
    assert box["epoch"] == [2, 2, 2] and seen[0] == pytest.approx(seen[2])
    assert traces(step) == 1


def test_place_no_longer_a_list_raises_as_eagerly():
    model = small_mlp(tracegrad)
    hist = []

    def step(x):
        out = model(x).sum()
        hist.append(out.item())
        return out
    f = tracegrad.compile(step)
    for i in range(2):
        f(small_xy(tracegrad, i)[0])
    assert len(hist) == 2
    hist = None      # noqa: F841 -- the closure cell now holds None: eager's append raises
    with pytest.raises(AttributeError):
        f(small_xy(tracegrad, 0)[0])
    with pytest.raises(AttributeError):
        step(small_xy(tracegrad, 0)[0])


def test_list_also_read_runs_eagerly():
    # ``len(hist)`` decides what the step does: the list's items are values read, not only grown
    model = small_mlp(tracegrad)
    hist = []

    def step(x):
        out = model(x).sum() * (1 + len(hist))
        hist.append(out.item())
        return out
    f = tracegrad.compile(step)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [f(small_xy(tracegrad, i)[0]).item() for i in range(3)]
    expected = [model(small_xy(tracegrad, i)[0]).sum().item() * (1 + i) for i in range(3)]
    assert outs == pytest.approx(expected) and hist == pytest.approx(expected)
    assert any("'hist'" in str(x.message) for x in w)
    assert traces(f) == 0


def test_hook_reading_the_list_runs_eagerly():
    model = small_mlp(tracegrad)
    hist = []
    sizes = []
    model[0].register_forward_hook(lambda m, i, o: sizes.append(len(hist)) or None)

    def step(x):
        out = model(x).sum()
        hist.append(out.item())
        return out
    f = tracegrad.compile(step)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for i in range(3):
            f(small_xy(tracegrad, i)[0])
    assert sizes == [0, 1, 2] and len(hist) == 3


def test_appends_in_a_loop_and_a_helper():
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.05)
        parts = []

        def log(name, t):
            parts.append((name, t.item()))

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            for k, p in enumerate(model.parameters()):
                if k % 2 == 0:
                    log(f"w{k}", p.grad.norm())
            return loss
        return wrap(step), {"model": model, "parts": parts}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3, torch_too=True)
    assert traces(run.step) == 1 and [n for n, _ in run.state["parts"][:2]] == ["w0", "w2"]


def test_dict_of_lists():
    # Keras-style ``history["loss"].append(...)``, on a closure dict and on an object's dict
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        history = {"loss": [], "grad": []}

        class Meter:
            def __init__(self):
                self.logs = {"out": []}
        meter = Meter()

        def step(x, y):
            loss = _sgd_step(mod, model, opt, x, y)
            history["loss"].append(loss.item())
            history["grad"].append(model[0].weight.grad.detach().clone())
            meter.logs["out"].append(loss.detach() * 3)
            return loss
        return wrap(step), {"model": model, "history": history, "meter": meter.logs}, \
            lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3, torch_too=True)
    assert traces(run.step) == 1 and len(run.state["history"]["grad"]) == 3


def test_forward_and_backward_hooks_append():
    # feature extraction: a forward hook stashing activations, a tensor hook logging gradient norms
    def make(mod, wrap):
        model = small_mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        feats, norms = [], []
        model[1].register_forward_hook(lambda m, i, o: feats.append(o.detach()))
        model[0].weight.register_hook(lambda g: norms.append(g.norm().item()))

        def step(x, y):
            return _sgd_step(mod, model, opt, x, y)
        return wrap(step), {"model": model, "feats": feats, "norms": norms}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3, torch_too=True)
    assert traces(run.step) == 1 and len(run.state["feats"]) == 3 and len(run.state["norms"]) == 3


def test_hook_appending_to_the_functions_list():
    # the function and a hook both append to one list: the items in eager order
    def make(mod, wrap):
        model = small_mlp(mod)
        log = []
        model[0].register_forward_hook(lambda m, i, o: log.append(("hook", o.sum().detach())))

        def step(x, y):
            log.append(("before", x.sum()))
            out = model(x)
            log.append(("after", out.sum().detach()))
            return out
        return wrap(step), {"log": log}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3, torch_too=True)
    assert traces(run.step) == 1 and [k for k, _ in run.state["log"][:3]] == ["before", "hook", "after"]


def test_item_numbers_in_a_list_a_hook_also_grows_run_eagerly():
    # the hook's own record of the list when it first ran holds the function's number: kept
    # outside the result (NOTE [deferred item]), so the call runs eagerly, with eager's values
    def make(mod, wrap):
        model = small_mlp(mod)
        log = []
        model[0].register_forward_hook(lambda m, i, o: log.append(o.sum().item()))

        def step(x, y):
            log.append(x.sum().item())
            return model(x)
        return wrap(step), {"log": log}, lambda i: small_xy(mod, i)
    run = check_compiled(make, calls=3, torch_too=True)
    assert len(run.state["log"]) == 6 and run.step.stats["graph_breaks"]
