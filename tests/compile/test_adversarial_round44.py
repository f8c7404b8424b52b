"""Round 44: hyper-attributes of loss modules changed between compiled calls, and a loss
function chosen by Python state.

``CrossEntropyLoss.reduction`` / ``label_smoothing`` / ``ignore_index`` set by hand between
calls, its ``weight`` buffer filled in place, ``HuberLoss.delta`` changed, and the loss function
picked from a dict by a Python flag argument. Each program runs eagerly, through
``tracegrad.compile`` and with torch from identical state (``_harness.run_three_ways``),
comparing the loss, the model and the optimizer after every call; the number of programs is
asserted (a Python value the step reads is a constant of its program: one program per value,
reused when the value comes back, as torch.compile guards it).
"""
from . import _harness as _h
from ._harness import change_loop as _loop, small_mlp as _model, small_xy as _xy, traces as _traces

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


def _step(model, opt, crit):
    """The usual step: ``crit(model(x), y)``, backward, ``opt.step()``."""
    def step(x, y):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _crit_program(attr, values, **crit_kw):
    """An Adam step over ``CrossEntropyLoss(**crit_kw)`` whose ``attr`` takes ``values[i]``
    after call ``i``."""
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        crit = mod.nn.CrossEntropyLoss(**crit_kw)
        step = _step(model, opt, crit)
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), len(values) + 1,
                     lambda i: setattr(crit, attr, values[i]) if i < len(values) else None, model, opt)
    return run


def test_cross_entropy_reduction_changed_between_calls():
    made = _both(_crit_program("reduction", ["sum", "mean", "sum", "mean"]))
    assert _traces(made[0]) == 2, made[0].stats


def test_cross_entropy_label_smoothing_changed_between_calls():
    made = _both(_crit_program("label_smoothing", [0.1, 0.0, 0.1]))
    assert _traces(made[0]) == 2, made[0].stats


def test_cross_entropy_ignore_index_changed_between_calls():
    made = _both(_crit_program("ignore_index", [1, 2, -100]))
    assert _traces(made[0]) == 3, made[0].stats


def test_cross_entropy_weight_buffer_filled_in_place_between_calls_one_program():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        crit = mod.nn.CrossEntropyLoss(weight=mod.ones(3))
        step = _step(model, opt, crit)

        def change(i):
            with mod.no_grad():
                crit.weight.copy_(mod.tensor([1.0 + i, 0.5, 2.0 - 0.3 * i]))
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 5, change, model, opt, crit.weight)
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_huber_delta_changed_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        crit = mod.nn.HuberLoss(delta=1.0)

        def step(x, y):
            opt.zero_grad()
            loss = crit(model(x), mod.nn.functional.one_hot(y, 3).float() * 3)
            loss.backward()
            opt.step()
            return loss
        deltas = [0.5, 1.0, 0.5]
        f = wrap(step)
        return _loop(f, lambda i: _xy(mod, i), 4,
                     lambda i: setattr(crit, "delta", deltas[i]) if i < 3 else None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


def test_loss_function_chosen_by_a_python_flag_argument():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        losses = {"ce": F.cross_entropy,
                  "mse": lambda o, y: F.mse_loss(o, F.one_hot(y, 3).float()),
                  "nll": lambda o, y: F.nll_loss(F.log_softmax(o, 1), y)}

        def step(x, y, which):
            opt.zero_grad()
            loss = losses[which](model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        names = ["ce", "mse", "ce", "nll", "mse", "ce"]
        return _loop(f, lambda i: _xy(mod, i) + (names[i],), 6, lambda i: None, model, opt)
    made = _both(run)
    assert _traces(made[0]) == 3, made[0].stats
