"""Round 37: training-loop idioms around a compiled step.

Gradient accumulation (``loss / k`` every call, ``opt.step()`` every k-th call decided by a Python
int the step reads), a ``no_grad`` EMA of the weights with the decay a Python attribute changed
between calls; ``clip_grad_norm_``/``clip_grad_value_`` (``foreach``, ``error_if_nonfinite``, the
norm read back in Python); ``parameters_to_vector``/``vector_to_parameters`` inside a step;
``requires_grad_(False)`` toggled on a sub-module between calls, ``.grad = None`` for some
parameters, a param group's list reordered; in-place ops on parameters (and views of them) under
``no_grad`` (weight normalisation by hand, ``p.data.clamp_()``), ``.data`` assignment, ``detach_()``,
``set_()``; ``autograd.grad(create_graph=True)`` gradient penalties, double backward with
``retain_graph``, ``backward(inputs=[...])``; tensors stored on ``self`` and read by the next call;
dicts/namedtuples/nested tuples of tensors and Python numbers returned; dtype changes
(``model.double()`` between calls, autocast, integer targets changing dtype) and shape changes on
the 2nd/3rd call. Each program is written for this file and runs eagerly, through
``tracegrad.compile`` from identical state and with torch, comparing everything observable after
every call (harness: tests/compile/_harness.py ``run_three_ways``); where nothing the step reads
changes, the number of programs built is asserted too.

Fixes:
- ``_lowering/region.py`` NOTE [places that held no tensor]: a module attribute the call binds a
  tensor to (``self.last = out.detach()``) that held None when the trace ran (``self.last = None``
  reset between calls, read by ``if self.last is not None``) was guarded by the tensor bound
  after the trace: that program then ran for the calls that find a previous tensor there (it
  ignored it: silently wrong values), and a ``requires_grad`` guard on that tensor made it fail
  for the next reset (a retrace per reset). The place's value before the call is its guard now
  (test_tensor_stored_on_self_read_by_next_call,
  test_module_attribute_reset_to_none_reuses_both_programs,
  test_attribute_set_by_the_step_over_none_reset_between_calls,
  test_running_average_attribute_reset_to_a_number_or_deleted).
- ``nn/modules/module.py`` ``Module.__setattr__``: such a None -> tensor rebind inside a trace
  no longer bumps the structure counter (it threw away the program for "a previous tensor" on
  every reset: 2 programs, not one per reset).
- ``_lowering/carry.py`` ``put``/``InSequence``: a module's ``self.hidden = (h, c)`` reset to None
  between sequences crashed the program's write-back (``TypeError: 'NoneType' object is not
  iterable``) on the second reset; the container the trace bound is rebuilt
  (test_hidden_tuple_on_module_reset_to_none_between_sequences).

Found and left alone (not silent: eager fallback with a clear graph-break warning):
``requires_grad_()`` on a sub-module inside the step (round 36's finding; toggled between calls it
compiles: test_requires_grad_toggled_on_submodule_between_calls).
"""
import collections

import numpy as np
import pytest

import tracegrad
from . import _harness as _h
from ._harness import data, labels, np_init, snapshot
from ._harness import small_mlp as _model
from ._harness import traces as _traces, small_xy as _xy

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


# ---- gradient accumulation, EMA

def test_gradient_accumulation_step_every_k_calls_read_from_python_int():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
        cfg = {"k": 2, "i": 0}

        def step(x, y):
            loss = F.cross_entropy(model(x), y) / cfg["k"]
            loss.backward()
            cfg["i"] += 1
            if cfg["i"] % cfg["k"] == 0:
                opt.step()
                opt.zero_grad()
            return loss
        f = wrap(step)
        res = []
        for i in range(7):
            if i == 4:
                cfg["k"] = 3
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


def test_gradient_accumulation_flag_passed_as_argument_no_retrace_per_phase():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y, do_step):
            loss = F.cross_entropy(model(x), y) / 3
            loss.backward()
            if do_step:
                opt.step()
                opt.zero_grad(set_to_none=True)
            return loss.detach()
        f = wrap(step)
        res = []
        for i in range(9):
            res.append(snapshot(f(*_xy(mod, i), (i + 1) % 3 == 0)))
            res.append([snapshot(model), snapshot(opt)])
        return res
    made = _both(run)
    # the first call runs eagerly (no .grad yet); then one program each for: accumulating onto
    # existing grads, accumulating after set_to_none, Adam's first step (state created), a later
    # step. Calls 6-8 repeat the phases and reuse them.
    assert _traces(made[0]) == 4, made[0].stats


def test_no_grad_ema_of_weights_decay_changed_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        ema = _model(mod)
        for p in ema.parameters():
            p.requires_grad_(False)
        opt = mod.optim.SGD(model.parameters(), lr=0.3)

        class Cfg:
            decay = 0.9
        cfg = Cfg()

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with mod.no_grad():
                d = cfg.decay
                for ep, p in zip(ema.parameters(), model.parameters()):
                    ep.mul_(d).add_(p, alpha=1 - d)
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            if i == 3:
                cfg.decay = 0.5
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(ema)])
        return res
    _both(run)


def test_ema_decay_warmup_from_step_count_on_self():
    def run(mod, wrap):
        nn, F = mod.nn, mod.nn.functional

        class Trainer:
            def __init__(self):
                self.model = _model(mod)
                self.ema = [p.detach().clone() for p in self.model.parameters()]
                self.opt = mod.optim.SGD(self.model.parameters(), lr=0.3)
                self.n = 0

            def step(self, x, y):
                self.opt.zero_grad()
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                self.opt.step()
                self.n += 1
                d = min(0.99, (1 + self.n) / (10 + self.n))
                with mod.no_grad():
                    for e, p in zip(self.ema, self.model.parameters()):
                        e.lerp_(p, 1 - d)
                return loss
        t = Trainer()
        f = wrap(t.step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(t.model), snapshot(t.ema), t.n])
        return res
    _both(run)


# ---- gradient clipping

@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_returned_norm_read_in_python(foreach):
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        log = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y) * 5
            loss.backward()
            norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach)
            if norm > 3.0:
                log.append("big")
            opt.step()
            return norm, loss
        f = wrap(step)
        res = []
        for i in range(4):
            x, y = _xy(mod, i)
            res.append(snapshot(f(x * (4.0 if i % 2 else 0.2), y)))
            res.append([snapshot(model), list(log)])
        return res
    _both(run)


def test_clip_grad_norm_max_norm_and_norm_type_changed_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"max": 0.5, "type": 2.0}

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            n = mod.nn.utils.clip_grad_norm_(model.parameters(), cfg["max"], norm_type=cfg["type"])
            opt.step()
            return n
        f = wrap(step)
        res = []
        for i, c in enumerate([{}, {"max": 0.1}, {"type": float("inf")}, {"type": 1.0}, {}]):
            cfg.update(c)
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_clip_grad_norm_error_if_nonfinite_raises_like_eager():
    def run(mod, wrap):
        model = _model(mod)

        def step(x, scale):
            for p in model.parameters():
                p.grad = None
            (model(x).sum() * scale).backward()
            return mod.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        f = wrap(step)
        res = []
        for i, s in enumerate([1.0, 2.0, float("inf"), 1.0]):
            try:
                res.append(snapshot(f(data(mod, i, 2, 4), mod.tensor(s))))
            except RuntimeError as e:
                res.append(["RuntimeError", "non-finite" in str(e)])
            res.append(snapshot(model))
        return res
    _both(run)


def test_clip_grad_value_clip_changed_and_some_grads_none():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"v": 0.05}

        def step(x, y):
            loss = F.cross_entropy(model(x), y) * 3
            loss.backward()
            mod.nn.utils.clip_grad_value_(model.parameters(), cfg["v"])
            opt.step()
            model[0].bias.grad = None          # only this one; the others accumulate
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                cfg["v"] = 0.2
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


# ---- parameters_to_vector / vector_to_parameters

def test_parameters_to_vector_sgd_by_hand_and_vector_to_parameters():
    def run(mod, wrap):
        F = mod.nn.functional
        U = mod.nn.utils
        model = _model(mod)
        lr = {"v": 0.1}

        def step(x, y):
            for p in model.parameters():
                p.grad = None
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            with mod.no_grad():
                v = U.parameters_to_vector(model.parameters())
                g = U.parameters_to_vector([p.grad for p in model.parameters()])
                U.vector_to_parameters(v - lr["v"] * g, model.parameters())
            return v.norm(), loss
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                lr["v"] = 0.5
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_parameters_to_vector_with_grad_flows_back():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            for p in model.parameters():
                p.grad = None
            v = mod.nn.utils.parameters_to_vector(model.parameters())
            loss = model(x).pow(2).mean() + 1e-2 * v.pow(2).sum()
            loss.backward()
            return loss, v
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 3, 4))))
            res.append(snapshot(model))
        return res
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


# ---- freezing, grads set to None, param groups

def test_requires_grad_toggled_on_submodule_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            model[0].requires_grad_(i not in (1, 2))
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


def test_requires_grad_toggled_on_submodule_inside_step_by_phase():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        phase = {"frozen": True}

        def step(x, y):
            model[0].requires_grad_(not phase["frozen"])
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                phase["frozen"] = False
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


def test_param_group_params_reordered_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                opt.param_groups[0]["params"].reverse()
            if i == 3:
                ps = opt.param_groups[0]["params"]
                ps[0], ps[1] = ps[1], ps[0]
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


def test_param_group_split_and_lr_per_group_changed():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD([{"params": model[0].parameters()},
                             {"params": model[2].parameters(), "lr": 0.01}], lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                opt.param_groups[1]["lr"] = 0.5
                opt.param_groups[0]["params"].pop()    # bias of the first layer no longer stepped
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


# ---- in-place on parameters under no_grad, .data, detach_, set_

def test_weight_normalisation_by_hand_on_views_under_no_grad():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with mod.no_grad():
                w = model[0].weight
                for r in range(w.shape[0]):
                    row = w[r]
                    row.div_(row.norm().clamp(min=1.0))
                model[2].weight[:, :2].mul_(0.5)
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_data_clamp_and_data_assignment_inside_step():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)
        cfg = {"c": 0.3}

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            for p in model[0].parameters():
                p.data.clamp_(-cfg["c"], cfg["c"])
            model[2].bias.data = model[2].bias.data * 0.5
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                cfg["c"] = 0.1
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_data_assignment_with_new_shape_between_calls():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(4, 2), mod)

        def step(x):
            lin.weight.grad = None
            lin.bias.grad = None
            out = lin(x).pow(2).sum()
            out.backward()
            return out
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                lin.weight.data = data(mod, 50, 3, 4)
                lin.bias.data = data(mod, 51, 3)
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(lin))
        return res
    _both(run)


def test_detach_in_place_on_a_stored_intermediate():
    def run(mod, wrap):
        model = _model(mod)
        keep = {}

        def step(x):
            for p in model.parameters():
                p.grad = None
            h = model[0](x)
            keep["h"] = h
            h2 = h * 2
            h.detach_()
            out = (model[2](h2.relu()) + h.sum()).sum()
            out.backward()
            return out, keep["h"]
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_set_on_a_buffer_between_and_inside_calls():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)
                self.register_buffer("b", mod.zeros(3))

            def forward(self, x):
                return self.lin(x) + self.b
        m = M()

        def step(x):
            out = m(x).sum()
            with mod.no_grad():
                m.b.set_(m.b + 1)
            return out
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                m.b.set_(mod.ones(3) * 5)
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(snapshot(m))
        return res
    _both(run)


# ---- higher-order gradients, retain_graph, backward(inputs=)

def test_gradient_penalty_with_create_graph_inside_step():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"lam": 0.5}

        def step(x, y):
            opt.zero_grad()
            x = x.clone().requires_grad_(True)
            out = model(x)
            loss = F.cross_entropy(out, y)
            (gx,) = mod.autograd.grad(out.logsumexp(1).sum(), x, create_graph=True)
            pen = (gx.norm(dim=1) - 1).pow(2).mean()
            total = loss + cfg["lam"] * pen
            total.backward()
            opt.step()
            return {"loss": loss.detach(), "pen": pen.item(), "x_grad": x.grad}
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                cfg["lam"] = 2.0
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_param_gradient_penalty_double_backward_through_weights():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            for p in model.parameters():
                p.grad = None
            loss = model(x).tanh().pow(2).sum()
            grads = mod.autograd.grad(loss, list(model.parameters()), create_graph=True)
            gp = sum(g.pow(2).sum() for g in grads)
            (loss + 0.1 * gp).backward()
            return loss, gp
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 3, 4))))
            res.append(snapshot(model))
        return res
    made = _both(run)
    assert _traces(made[0]) <= 2, made[0].stats


def test_retain_graph_two_backwards_and_backward_inputs_subset():
    def run(mod, wrap):
        model = _model(mod)
        which = {"first": True}

        def step(x):
            for p in model.parameters():
                p.grad = None
            out = model(x)
            a = out[:, 0].sum()
            b = out.pow(2).sum()
            a.backward(retain_graph=True)
            layer = model[0] if which["first"] else model[2]
            b.backward(inputs=[layer.weight])
            return a, b
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 3:
                which["first"] = False
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(model))
        return res
    _both(run)


def test_backward_inputs_on_an_input_tensor_and_accumulating_leaf():
    def run(mod, wrap):
        model = _model(mod)
        w = mod.ones(3, requires_grad=True)

        def step(x):
            x = x.requires_grad_(True)
            loss = (model(x) * w).sum()
            loss.backward(inputs=[x, w])
            return x.grad, loss
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append([snapshot(model), snapshot(w)])
        return res
    _both(run)


# ---- state kept on self, structured returns

def test_tensor_stored_on_self_read_by_next_call():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)
                self.last = None

            def forward(self, x):
                out = self.lin(x)
                if self.last is not None:
                    out = out + 0.5 * self.last
                self.last = out.detach()
                return out
        m = M()
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 3:
                m.last = None                # reset from outside
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append([snapshot(m), snapshot(m.last)])
        return res
    _both(run)


def test_running_stat_on_self_rebound_and_mutated_alternately():
    def run(mod, wrap):
        model = _model(mod)

        class Box:
            pass
        box = Box()
        box.avg = mod.zeros(3)

        def step(x, rebind):
            out = model(x).mean(0)
            if rebind:
                box.avg = 0.9 * box.avg + 0.1 * out.detach()
            else:
                box.avg.mul_(0.5).add_(out.detach())
            return out.sum()
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(data(mod, i, 2, 4), i % 2 == 0)))
            res.append(snapshot(box.avg))
        return res
    _both(run)


Out = collections.namedtuple("Out", "loss logits stats")


def test_namedtuple_dict_nested_tuple_with_python_numbers_returned():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"tag": 1}

        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            acc = (logits.argmax(1) == y).float().mean()
            return Out(loss, logits, {"acc": acc, "n": x.shape[0], "tag": cfg["tag"],
                                       "pair": (loss.detach() * 2, 3.5, [acc, None])})
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                cfg["tag"] = 7
            o = f(*_xy(mod, i))
            res.append([type(o).__name__, snapshot(o.loss), snapshot(o.logits), snapshot(o.stats)])
            res.append(snapshot(model))
        return res
    _both(run)


# ---- dtype and shape changes

def test_model_double_between_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            x = data(mod, i, 2, 4)
            if i >= 2:
                if i == 2:
                    model.double()
                x = x.double()
            res.append(snapshot(f(x)))
            res.append(snapshot(model))
        return res
    _both(run)


def test_model_half_then_float_between_calls_forward_only():
    def run(mod, wrap):
        model = _model(mod)
        f = wrap(lambda x: model(x).sum(1))
        res = []
        for i, dt in enumerate(["float32", "float16", "float16", "float32"]):
            getattr(model, "half" if dt == "float16" else "float")()
            res.append(snapshot(f(data(mod, i, 2, 4).to(getattr(mod, dt)))))
        return res
    _both(run, torch_rtol=5e-3)


def test_autocast_region_inside_step_toggled_by_flag():
    def run(mod, wrap):
        model = _model(mod)
        cfg = {"on": False}

        def step(x):
            for p in model.parameters():
                p.grad = None
            with mod.autocast("cpu", dtype=mod.bfloat16, enabled=cfg["on"]):
                out = model(x)
            loss = out.float().pow(2).mean()
            loss.backward()
            return out.dtype == mod.bfloat16, loss
        f = wrap(step)
        res = []
        for i in range(4):
            if i == 2:
                cfg["on"] = True
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(model))
        return res
    _both(run, torch_rtol=2e-2)


def test_integer_targets_change_dtype_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y.long())
            loss.backward()
            opt.step()
            return loss, y.dtype
        f = wrap(step)
        res = []
        for i, dt in enumerate(["int64", "int32", "int32", "uint8", "int64"]):
            x, y = _xy(mod, i)
            o = f(x, y.to(getattr(mod, dt)))
            res.append([snapshot(o[0]), str(o[1]).split(".")[-1]])
            res.append(snapshot(model))
        return res
    _both(run)


def test_shape_change_on_second_and_third_call():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y, reduction="sum") / x.shape[0]
            loss.backward()
            opt.step()
            return loss, x.shape[0]
        f = wrap(step)
        res = []
        for i, n in enumerate([5, 3, 7, 5, 3]):
            res.append(snapshot(f(data(mod, i, n, 4), labels(mod, i, n, 3))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


# ---- a place reset to None between calls (NOTE [places that held no tensor] in region.py)

class _Recurrent:
    """A module keeping ``self.last`` (None: no previous call) read by the next call."""

    @staticmethod
    def make(mod):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)
                self.last = None

            def forward(self, x):
                out = self.lin(x)
                if self.last is not None:
                    out = out + 0.5 * self.last
                self.last = out.detach()
                return out
        return M()


def test_module_attribute_reset_to_none_reuses_both_programs():
    def run(mod, wrap):
        m = _Recurrent.make(mod)
        f = wrap(lambda x: m(x).sum())
        res = []
        for i, reset in enumerate([0, 0, 1, 0, 0, 1, 0, 0]):
            if reset:
                m.last = None
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(snapshot(m.last))
        return res
    made = _both(run)
    # one program for "a previous output", one for "none": the None program binding a tensor
    # leaves the other valid
    assert _traces(made[0]) == 2, made[0].stats


def test_attribute_set_by_the_step_over_none_reset_between_calls():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 3), mod)
        lin.h = None

        def step(x):
            out = lin(x) if lin.h is None else lin(x) + lin.h
            lin.h = out.detach()
            return out.sum()
        f = wrap(step)
        res = []
        for i, reset in enumerate([0, 0, 1, 0, 0, 1, 0]):
            if reset:
                lin.h = None
            res.append(snapshot(f(data(mod, i, 1, 3))))
        return res
    _both(run)


def test_hidden_tuple_on_module_reset_to_none_between_sequences():
    def run(mod, wrap):
        nn = mod.nn

        class Cell(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = np_init(nn.LSTMCell(3, 2), mod)
                self.hidden = None

            def forward(self, x):
                h, c = self.cell(x, self.hidden)
                self.hidden = (h.detach(), c.detach())
                return h
        m = Cell()
        opt = mod.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(7):
            if i % 3 == 0:
                m.hidden = None
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append([snapshot(m), snapshot(m.hidden)])
        return res
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats


# ---- more optimizer-side idioms

def test_adam_with_grads_set_to_none_for_the_first_layer_on_some_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05, weight_decay=0.01)

        def step(x, y, skip_first):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if skip_first:
                for p in model[0].parameters():
                    p.grad = None
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i, s in enumerate([True, True, False, True, False, False]):
            res.append(snapshot(f(*_xy(mod, i), s)))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


def test_get_total_norm_then_clip_grads_with_norm_and_foreach_ema():
    def run(mod, wrap):
        F = mod.nn.functional
        U = mod.nn.utils
        model = _model(mod)
        ema = [p.detach().clone() for p in model.parameters()]
        opt = mod.optim.SGD(model.parameters(), lr=0.2)
        cfg = {"max": 0.5, "w": 0.1}

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y) * 4
            loss.backward()
            grads = [p.grad for p in model.parameters()]
            total = U.get_total_norm(grads)
            U.clip_grads_with_norm_(model.parameters(), cfg["max"], total)
            opt.step()
            with mod.no_grad():
                mod._foreach_lerp_(ema, list(model.parameters()), cfg["w"])
            return total
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 3:
                cfg.update(max=2.0, w=0.5)
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(ema)])
        return res
    _both(run)


def test_parameter_set_to_new_storage_between_calls():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)
        opt = mod.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                with mod.no_grad():
                    lin.weight.set_(data(mod, 60, 2, 3))
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append([snapshot(lin), snapshot(opt)])
        return res
    _both(run)


def test_lr_scheduler_and_python_floats_in_returned_dict():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.4)
        sched = mod.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            return {"loss": loss.item(), "lr": sched.get_last_lr()[0], "t": (loss.detach(), opt.param_groups[0]["lr"])}
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


@pytest.mark.parametrize("reset", ["float", "delattr"])
def test_running_average_attribute_reset_to_a_number_or_deleted(reset):
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 2), mod)
                self.avg = 0.0

            def forward(self, x):
                out = self.lin(x).mean(0)
                prev = getattr(self, "avg", 0.0)
                self.avg = 0.9 * prev + 0.1 * out.detach()
                return out
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(7):
            if i in (2, 5):
                if reset == "float":
                    m.avg = float(i)
                else:
                    del m.avg
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(snapshot(m.avg))
        return res
    _both(run)


def test_grads_averaged_in_place_before_every_kth_step():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.3, nesterov=True, momentum=0.5)
        k = 3
        n = [0]

        def step(x, y):
            F.cross_entropy(model(x), y).backward()
            n[0] += 1
            if n[0] % k == 0:
                with mod.no_grad():
                    for p in model.parameters():
                        p.grad.div_(k)
                opt.step()
                opt.zero_grad()
            return n[0]
        f = wrap(step)
        res = []
        for i in range(7):
            res.append(f(*_xy(mod, i)))
            res.append([snapshot(model), snapshot(opt)])
        return res
    _both(run)


@pytest.mark.parametrize("foreach", [True, False])
def test_clip_grad_norm_with_a_frozen_layer_whose_grads_are_none(foreach):
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        model[0].requires_grad_(False)
        opt = mod.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.2)

        def step(x, y):
            opt.zero_grad()
            F.cross_entropy(model(x), y).mul(6).backward()
            norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 0.3, foreach=foreach)
            opt.step()
            return float(norm)
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 3:
                model[0].requires_grad_(True)      # unfrozen; the optimizer still skips it
            res.append(f(*_xy(mod, i)))
            res.append(snapshot(model))
        return res
    _both(run)


def test_grad_tensors_returned_and_kept_by_the_caller_across_calls():
    def run(mod, wrap):
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(x, none):
            opt.zero_grad(set_to_none=none)
            model(x).pow(2).mean().backward()
            opt.step()
            return {"w": model[0].weight.grad, "b": model[2].bias.grad}
        f = wrap(step)
        kept, res = [], []
        for i in range(5):
            kept.append(f(data(mod, i, 2, 4), i % 2 == 0))
            res.append(snapshot(kept))          # every dict kept so far, as the caller sees it now
        return res
    _both(run)


def test_train_and_eval_steps_interleaved_with_requires_grad_flipped_between():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def train(x, y):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        def evaluate(x, y):
            model.eval()
            out = model(x)
            return F.cross_entropy(out, y), out.requires_grad
        tf, ef = wrap(train), wrap(evaluate)
        res = []
        for i in range(6):
            model.requires_grad_(True)       # (inside the step: an eager fallback, round 36)
            res.append(snapshot(tf(*_xy(mod, i))))
            model.requires_grad_(False)
            res.append(snapshot(ef(*_xy(mod, i + 10))))
            res.append([snapshot(model), snapshot(opt)])
        return res
    made = _both(run)
    assert [_traces(f) for f in made] in ([1, 1], [2, 1], [1, 2], [2, 2]), [f.stats for f in made]


@pytest.mark.parametrize("where", ["dict", "nonlocal", "object"])
def test_carried_state_reset_to_none_in_other_places(where):
    """The same reset through a dict entry, a closure variable and a plain object's attribute
    (a program or an eager fallback, never the wrong program)."""
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 3), mod)
        carry, box = {"h": None}, type("Box", (), {})()
        box.h = None
        h = None

        def step(x):
            nonlocal h
            prev = carry["h"] if where == "dict" else h if where == "nonlocal" else box.h
            out = lin(x) if prev is None else lin(x) + 0.5 * prev
            if where == "dict":
                carry["h"] = out.detach()
            elif where == "nonlocal":
                h = out.detach()
            else:
                box.h = out.detach()
            return out.sum()
        f = wrap(step)
        res = []
        for i, reset in enumerate([0, 0, 1, 0, 0, 1, 0]):
            if reset:
                carry["h"], h, box.h = None, None, None
            res.append(snapshot(f(data(mod, i, 1, 3))))
        return res
    _both(run)


def test_stored_output_of_another_batch_size_skipped_by_shape_check():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)
                self.last = None

            def forward(self, x):
                out = self.lin(x)
                if self.last is not None and self.last.shape == out.shape:
                    out = out + self.last
                self.last = out.detach()
                return out
        m = M()
        f = wrap(lambda x: m(x).sum())
        return [snapshot(f(data(mod, i, n, 3))) for i, n in enumerate([2, 2, 3, 3, 2, 2, 3, 3])]
    made = _both(run)
    # (previous batch, this batch) in {2,3}^2 after the eager first call: four programs, reused
    assert _traces(made[0]) == 4, made[0].stats


def test_hessian_vector_product_and_grad_outputs_with_retain_graph():
    def run(mod, wrap):
        model = _model(mod)
        v = [mod.ones_like(p) * 0.1 for p in model.parameters()]

        def step(x):
            for p in model.parameters():
                p.grad = None
            out = model(x).tanh()
            (g2,) = mod.autograd.grad(out, [model[2].weight], grad_outputs=mod.ones_like(out), retain_graph=True)
            gs = mod.autograd.grad(out.sum(), list(model.parameters()), create_graph=True)
            dot = sum((g * w).sum() for g, w in zip(gs, v))
            hv = mod.autograd.grad(dot, list(model.parameters()), retain_graph=True)
            dot.backward()
            return g2, hv
        f = wrap(step)
        res = []
        for i in range(3):
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(model))
        return res
    made = _both(run)
    assert _traces(made[0]) == 1, made[0].stats


def test_default_dtype_and_parameter_dtype_changed_between_calls():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)

        def step(x):
            lin.weight.grad = lin.bias.grad = None
            b = mod.zeros(2) + 0.5
            out = (lin(x.to(lin.weight.dtype)) + b).sum()
            out.backward()
            return out, str(b.dtype).split(".")[-1]
        f = wrap(step)
        res = []
        try:
            for i in range(5):
                if i == 2:
                    mod.set_default_dtype(mod.float64)
                if i == 3:
                    lin.weight.data = lin.weight.data.double()
                    lin.bias.data = lin.bias.data.double()
                res.append(snapshot(f(data(mod, i, 2, 3))))
                res.append(snapshot(lin))
        finally:
            mod.set_default_dtype(mod.float32)
        return res
    _both(run)


def test_ema_of_batchnorm_parameters_and_buffers_decay_changed():
    def run(mod, wrap):
        nn = mod.nn
        net = np_init(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)), mod)
        ema = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
        ema.load_state_dict(net.state_dict())
        opt = mod.optim.SGD(net.parameters(), lr=0.1)
        d = {"d": 0.8}

        def step(x):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
            opt.step()
            with mod.no_grad():
                for eb, b in zip(ema.buffers(), net.buffers()):
                    eb.copy_(b)
                for ep, p in zip(ema.parameters(), net.parameters()):
                    ep.mul_(d["d"]).add_(p, alpha=1 - d["d"])
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 3:
                d["d"] = 0.1
            f(data(mod, i, 4, 4))
            res.append([snapshot(net), snapshot(ema)])
        return res
    made = _both(run)
    assert _traces(made[0]) == 2, made[0].stats
