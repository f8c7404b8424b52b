"""Round 36: Python-side state around a compiled step. Counters and lists mutated inside
(``self.calls += 1``, ``history.append(loss.item())``, ``global``/``nonlocal`` counters, class
attribute counters, ``heapq``/``set``/``deque``/``bytearray``/``array`` writes, ``os.environ``,
warnings, logging, ``print``); branches on ``.item()``/``bool(tensor)``; ``self.training`` read by
``forward`` and toggled every call; dropout with ``manual_seed`` between calls; ``Generator``
objects passed in and restored; random fills and ``nn.init`` inside; buffers rebound
(``self.avg = self.avg * 0.9 + ...``) and ``persistent=False`` buffers registered between calls;
``forward_pre_hook(with_kwargs=True)`` added/removed, tensor hooks and ``retain_grad`` inside, global
module hooks; optimizers (``maximize``/``foreach``/``nesterov``/``amsgrad``/``centered``, scheduler lr,
mixed ``zero_grad(set_to_none)``, ``load_state_dict`` rewind, ``add_param_group``, tensor lr,
``betas``/``weight_decay``/``eps`` edits, ``state.clear()``, step hooks, custom optimizers);
nested ``no_grad``/``enable_grad``/``inference_mode``; tensors from lists and NumPy inside;
closures, ``functools.partial``, lambdas, bound methods of two instances; configuration read
through ``operator.attrgetter``, ChainMap, enums, dataclasses, context variables, weak refs;
attributes read by decorated methods and by dunder methods Python calls implicitly; classes
and methods swapped between calls. Each program is written for this file (no outside source)
and runs eagerly, through ``tracegrad.compile`` from identical state and (where the generator
is not involved) with torch, comparing everything observable after every call (harness:
tests/compile/_harness.py ``run_three_ways``).

Fixes (each was a silently frozen value, now a retrace):
- ``_lowering/pystate.py`` ``_user_methods``/``_object_names``: a method behind a library
  wrapper (``@torch.no_grad() def step(self)`` of a custom optimizer, ``functools.wraps``) hid
  the attributes the user's code reads (``self.boost``): the ``__wrapped__`` chain is followed,
  methods keyed by the name the class binds
  (test_custom_optimizer_reading_its_own_attribute_and_a_new_group_key,
  test_decorated_methods_reading_attributes_changed_between_calls).
- ``_lowering/pystate.py`` ``_getter_names``/``_code_names``: ``operator.attrgetter("k")`` and
  ``operator.methodcaller("scale")`` (held or made inside) read ``cfg.k`` unguarded
  (test_attrgetter_itemgetter_and_chainmap_reads, test_methodcaller_held_and_made_inside).
- ``_lowering/pystate.py`` NOTE [implicit methods]: attributes read by ``__rmul__``,
  ``__float__``, ``__bool__``, ``__len__``, ``__getitem__``, ``__call__``, ``__iter__``,
  ``__format__``, ``__contains__``... of a plain object
  (test_dunder_methods_of_a_held_object_reading_changed_attributes).
- ``_lowering/guards.py`` ``_guard_object``: a plain object's class by identity
  (``obj.__class__ = B`` between calls; test_classes_and_methods_swapped_between_calls).

Found and left alone (not silent: same values, an eager fallback with a clear graph-break
warning): Python counters the step also reads, appends inside, ``.item()``/``bool()``/``tolist()`` branches, hooks
registered or removed inside, ``get_rng_state``/``fork_rng`` inside, host RNGs (``random``,
``np.random``) drawn inside, an iterator advanced inside, ``requires_grad_`` on outside tensors
inside, ``warnings.warn`` under an ``always`` filter; a ``weakref.proxy`` read is treated as an
iterator (a conservative graph break).
"""
import functools

import numpy as np
import pytest

import tracegrad
from . import _harness as _h
from ._harness import data, np_init, snapshot
from ._harness import small_mlp as _model
from ._harness import small_xy as _xy

_both = lambda run, **kw: _h.run_three_ways(run, **kw)


def _eager_compiled(run, **kw):
    """compiled == eager only (programs whose random numbers come from the generator, which
    differs between torch and tracegrad)."""
    return _h.run_three_ways(run, torch_too=False, **kw)


# ---- Python-side state mutated in the step

def test_module_call_counter_history_list_and_global_step():
    def run(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        global _STEP
        _STEP = 0

        class Counted(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = _model(mod)
                self.calls = 0

            def forward(self, x):
                self.calls += 1
                return self.body(x) * (1.0 + 0.1 * self.calls)
        model = Counted()
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        history = []

        def step(x, y):
            global _STEP
            _STEP += 1
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            history.append(loss.item())
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append([model.calls, _STEP, list(history)])
            res.append(snapshot(model))
        return res
    _both(run)


def test_python_branch_on_global_step_modulo():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        ctr = {"n": 0}

        def step(x, y):
            ctr["n"] += 1
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if ctr["n"] % 3 == 0:
                loss = loss * 10
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


@pytest.mark.parametrize("how", ["item", "bool", "if_tensor"])
def test_branch_on_loss_value(how):
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if how == "item":
                big = loss.item() > 1.0
            elif how == "bool":
                big = bool(loss > 1.0)
            else:
                big = loss > 1.0
            if big:
                (loss * 2).backward()
            else:
                loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            x, y = _xy(mod, i)
            res.append(snapshot(f(x * (3.0 if i % 2 else 0.1), y)))
            res.append(snapshot(model))
        return res
    _both(run)


# ---- modes, RNG, generators

def test_forward_reads_training_flag_toggled_every_call():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 3), mod)
                self.register_buffer("seen", mod.zeros(()))

            def forward(self, x):
                if self.training:
                    self.seen.add_(1)
                    return self.lin(x).relu()
                return self.lin(x).tanh() + self.seen
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(6):
            m.train(i % 2 == 0)
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(m))
        return res
    _both(run)


def test_dropout_with_manual_seed_set_between_calls():
    def run(mod, wrap):
        mod.manual_seed(0)
        drop = mod.nn.Dropout(0.5)
        f = wrap(lambda x: drop(x) * 2)
        res = []
        for i in range(5):
            mod.manual_seed(7 if i % 2 else 11)
            res.append(snapshot(f(mod.ones(4, 6))))
        return res
    # manual_seed(7) before calls 1 and 3 must give the same mask each time, and eager's
    made = _eager_compiled(run)
    assert made


def test_dropout_same_seed_every_call_gives_same_mask():
    def run(mod, wrap):
        drop = mod.nn.Dropout(0.5)
        f = wrap(lambda x: drop(x))
        outs = []
        for i in range(4):
            mod.manual_seed(3)
            outs.append(snapshot(f(mod.ones(3, 8))))
        return outs
    _eager_compiled(run)
    out = run(tracegrad, tracegrad.compile)
    for o in out[1:]:
        np.testing.assert_array_equal(o["value"], out[0]["value"])


def test_generator_objects_passed_in_random_ops():
    def run(mod, wrap):
        mod.manual_seed(0)

        def step(x, g):
            a = mod.randn_like(x)
            b = mod.empty_like(x).bernoulli_(0.3, generator=g)
            c = mod.multinomial(x.abs() + 0.1, 2, generator=g)
            d = mod.randperm(5, generator=g)
            e = mod.rand(3, generator=g)
            return a, b, c, d, e
        f = wrap(step)
        g1 = mod.Generator().manual_seed(1)
        g2 = mod.Generator().manual_seed(2)
        res = []
        for i in range(5):
            g = g1 if i % 2 else g2
            res.append(snapshot(f(data(mod, i, 2, 5), g)))
            res.append([snapshot(g1), snapshot(g2)])
            if i == 2:
                g1.manual_seed(1)
        return res
    _eager_compiled(run)


def test_generator_state_restored_between_calls():
    def run(mod, wrap):
        g = mod.Generator().manual_seed(5)
        saved = g.get_state()
        f = wrap(lambda x: x + mod.randn(x.shape, generator=g))
        res = []
        for i in range(4):
            res.append(snapshot(f(mod.zeros(3))))
            if i % 2:
                g.set_state(saved)
        return res
    _eager_compiled(run)
    out = run(tracegrad, tracegrad.compile)
    np.testing.assert_array_equal(out[0]["value"], out[2]["value"])


# ---- buffers

def test_buffer_replaced_by_assignment_every_call():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 2), mod)
                self.register_buffer("avg", mod.zeros(2))

            def forward(self, x):
                out = self.lin(x)
                self.avg = self.avg * 0.9 + out.detach().mean(0) * 0.1
                return out - self.avg
        m = M()
        f = wrap(lambda x: m(x).pow(2).sum())
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3, 4))))
            res.append(snapshot(m))
            res.append(sorted(n for n, _ in m.named_buffers()))
        return res
    _both(run)


def test_non_persistent_buffer_registered_between_calls_and_read():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 2), mod)

            def forward(self, x):
                out = self.lin(x)
                if hasattr(self, "shift"):
                    out = out + self.shift
                return out
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3, 4))))
            if i == 1:
                m.register_buffer("shift", mod.tensor([1.0, -2.0]), persistent=False)
            if i == 2:
                m.shift.mul_(3)
            if i == 3:
                m.shift = mod.tensor([0.5, 0.5])
            res.append(sorted(m.state_dict()))
        return res
    _both(run)


# ---- hooks

def test_forward_pre_hook_with_kwargs_added_and_removed():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 2), mod)

            def forward(self, x, scale=1.0):
                return self.lin(x) * scale
        m = M()
        seen = []

        def pre(module, args, kwargs):
            seen.append(sorted(kwargs))
            kwargs = dict(kwargs)
            kwargs["scale"] = kwargs.get("scale", 1.0) * 3
            return args, kwargs
        f = wrap(lambda x: m(x, scale=2.0).sum())
        res = []
        h = None
        for i in range(6):
            res.append(snapshot(f(data(mod, i, 3, 4))))
            res.append(list(seen))
            if i == 1:
                h = m.register_forward_pre_hook(pre, with_kwargs=True)
            if i == 3:
                h.remove()
        return res
    _both(run)


def test_tensor_hook_and_retain_grad_inside_the_step():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        grads = []

        def step(x, y):
            model.zero_grad()
            h = model[0](x)
            h.retain_grad()
            h.register_hook(lambda g: grads.append(g.abs().sum().item()))
            z = model[2](model[1](h))
            z.register_hook(lambda g: g * 2)
            loss = F.cross_entropy(z, y)
            loss.backward()
            return loss, h.grad
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            res.append(list(grads))
        return res
    _both(run)


# ---- optimizers

@pytest.mark.parametrize("opt_name,kw", [
    ("Adam", dict(maximize=True, foreach=False)),
    ("Adam", dict(maximize=True, foreach=True)),
    ("SGD", dict(momentum=0.9, maximize=True, nesterov=True)),
    ("AdamW", dict(amsgrad=True, maximize=True)),
    ("RMSprop", dict(momentum=0.5, centered=True, maximize=True, foreach=True)),
    ("Adam", dict(fused=True, maximize=True)),
    ("AdamW", dict(fused=True, weight_decay=0.1)),
    ("SGD", dict(momentum=0.9, fused=True)),
    ("Adagrad", dict(maximize=True, foreach=True, lr_decay=0.1)),
])
def test_optimizer_flags_maximize_foreach(opt_name, kw):
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = getattr(mod.optim, opt_name)(model.parameters(), lr=0.01, **kw)

        def step(x, y):
            opt.zero_grad()
            loss = -F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            res.append(snapshot(opt))
        return res
    _both(run)


def test_scheduler_lr_changes_and_zero_grad_modes_mixed():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
        sched = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def step(x, y, none):
            opt.zero_grad(set_to_none=none)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            x, y = _xy(mod, i)
            res.append(snapshot(f(x, y, i % 3 == 0)))
            sched.step()
            res.append(snapshot(model))
            res.append(snapshot(opt))
        return res
    _both(run)


def test_optimizer_load_state_dict_rewinds_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)
        import copy

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        saved = None
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            if i == 1:
                saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()))
            if i == 3:
                model.load_state_dict(saved[0])
                opt.load_state_dict(saved[1])
            res.append(snapshot(model))
            res.append(snapshot(opt))
        return res
    _both(run)


def test_add_param_group_of_a_new_head_then_lr_of_it_changed():
    def run(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        body = _model(mod)
        head = np_init(nn.Linear(3, 3), mod, seed=4)
        opt = mod.optim.Adam(body.parameters(), lr=0.02)
        use_head = [False]

        def step(x, y):
            opt.zero_grad()
            out = body(x)
            if use_head[0]:
                out = head(out)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(body))
            res.append(snapshot(head))
            res.append(snapshot(opt))
            if i == 1:
                use_head[0] = True
                opt.add_param_group({"params": head.parameters(), "lr": 0.1})
            if i == 3:
                opt.param_groups[1]["lr"] = 0.001
        return res
    _both(run)


# ---- grad modes nested

def test_no_grad_enable_grad_inference_mode_nested():
    def run(mod, wrap):
        model = _model(mod)

        def step(x):
            model.zero_grad()
            with mod.no_grad():
                a = model(x)
                with mod.enable_grad():
                    b = model(x).sum()
                    with mod.inference_mode():
                        c = model(x) * 2
                    d = (b * 3).sum()
            d.backward()
            with mod.inference_mode():
                e = c + a
            return a, b, c.clone() if False else c, d, e, c.is_inference(), mod.is_grad_enabled()
        f = wrap(step)
        res = []
        for i in range(4):
            out = f(data(mod, i, 2, 4))
            res.append(snapshot(list(out)))
            res.append(snapshot(model))
        return res
    _both(run)


# ---- tensors made from host data inside the step

def test_tensors_from_python_lists_and_numpy_mutated_between_calls():
    def run(mod, wrap):
        weights = [1.0, 2.0, 3.0]
        arr = np.array([0.5, -0.5, 1.0], dtype=np.float32)

        def step(x):
            w = mod.tensor(weights)
            b = mod.from_numpy(arr)
            c = mod.as_tensor(arr * 2)
            return x * w + b + c, mod.tensor([len(weights)])
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            weights[i % 3] += 1.5
            arr[(i + 1) % 3] *= -2
        return res
    _both(run)


def test_numpy_array_mutated_in_place_read_by_tensor_constructor():
    def run(mod, wrap):
        arr = np.zeros(3, dtype=np.float32)

        def step(x):
            return x + mod.tensor(arr)
        f = wrap(step)
        res = []
        for i in range(4):
            arr[:] = i
            res.append(snapshot(f(mod.ones(3))))
        return res
    _both(run)


def test_from_numpy_shares_memory_written_inside():
    def run(mod, wrap):
        arr = np.zeros(3, dtype=np.float32)
        t = mod.from_numpy(arr)

        def step(x):
            t.add_(x)
            return t * 2
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(mod.ones(3))))
            res.append(arr.copy())
            arr[0] = -i
        return res
    _both(run)


# ---- closures, partials, lambdas, bound methods

def test_closure_tensor_reassigned_between_calls():
    def run(mod, wrap):
        scale = mod.tensor(2.0)
        bias = [mod.tensor([1.0, 2.0])]

        def step(x):
            return x * scale + bias[0]
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2))))
            if i == 1:
                scale = mod.tensor(-1.0)          # noqa: F841 (rebinds the cell the step reads)
            if i == 2:
                bias[0] = mod.tensor([5.0, 5.0])
            if i == 3:
                bias[0].mul_(2)
        return res
    _both(run)


def test_partial_and_lambda_steps_with_bound_tensors():
    def run(mod, wrap):
        def step(x, w, *, k):
            return (x * w).sum() * k
        w = mod.tensor([1.0, 2.0, 3.0])
        p = wrap(functools.partial(step, w=w, k=2.0))
        lam = wrap(lambda x: step(x, w, k=3.0))
        res = []
        for i in range(4):
            res.append(snapshot(p(data(mod, i, 3))))
            res.append(snapshot(lam(data(mod, i, 3))))
            w.add_(1.0)
            if i == 2:
                w = mod.tensor([0.0, 0.0, 1.0])    # the partial keeps the old one; lambda reads new
        return res
    _both(run)


def test_methods_bound_to_two_instances_of_one_class():
    def run(mod, wrap):
        F = mod.nn.functional

        class Trainer:
            def __init__(self, seed, lr):
                self.model = np_init(_model(mod), mod, seed=seed)
                self.opt = mod.optim.SGD(self.model.parameters(), lr=lr)
                self.steps = 0

            def step(self, x, y):
                self.steps += 1
                self.opt.zero_grad()
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                self.opt.step()
                return loss
        a, b = Trainer(1, 0.1), Trainer(2, 0.3)
        fa, fb = wrap(a.step), wrap(b.step)
        fc = wrap(Trainer.step)
        res = []
        for i in range(4):
            res.append(snapshot(fa(*_xy(mod, i))))
            res.append(snapshot(fb(*_xy(mod, i + 10))))
            res.append(snapshot(fc(a if i % 2 else b, *_xy(mod, i + 20))))
            res.append([a.steps, b.steps, snapshot(a.model), snapshot(b.model)])
        return res
    _both(run)


# ---- batch 2

def test_host_rngs_numpy_and_random_drawn_inside_every_call():
    import random

    def run(mod, wrap):
        np.random.seed(0)
        random.seed(0)

        def step(x):
            noise = mod.tensor(np.random.rand(3).astype("float32"))
            return x + noise * random.random()
        f = wrap(step)
        return [snapshot(f(mod.ones(3))) for _ in range(4)]
    _both(run)


def test_counter_from_itertools_and_list_length_read_inside():
    import itertools

    def run(mod, wrap):
        it = itertools.count(1)
        hist = []

        def step(x):
            k = next(it)
            hist.append(k)
            return x * k + len(hist)
        f = wrap(step)
        return [snapshot(f(mod.ones(2))) for _ in range(4)] + [hist]
    _both(run)


def test_tensor_hook_registered_on_a_parameter_every_call_accumulates():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)
        fired = []

        def step(x):
            lin.zero_grad()
            lin.weight.register_hook(lambda g: (fired.append(1), g * 2)[1])
            lin(x).sum().backward()
            return lin.weight.grad.clone()
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(len(fired))
        return res
    _both(run)


def test_forward_hook_that_removes_itself_after_two_firings():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)
        box = {"n": 0}

        def hook(m, inp, out):
            box["n"] += 1
            if box["n"] == 2:
                box["h"].remove()
            return out * 10
        box["h"] = lin.register_forward_hook(hook)
        f = wrap(lambda x: lin(x).sum())
        return [snapshot(f(data(mod, i, 2, 3))) for i in range(5)] + [box["n"]]
    _both(run)


def test_lr_as_a_tensor_changed_in_place_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        lr = mod.tensor(0.05)
        opt = mod.optim.Adam(model.parameters(), lr=lr)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            lr.mul_(0.5)
        return res
    _both(run)


def test_betas_weight_decay_and_momentum_changed_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.AdamW(model.parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            g = opt.param_groups[0]
            if i == 1:
                g["betas"] = (0.5, 0.9)
            if i == 2:
                g["weight_decay"] = 0.3
            if i == 3:
                g["eps"] = 0.1
        return res
    _both(run)


def test_optimizer_state_cleared_and_grads_deleted_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            res.append(snapshot(opt))
            if i == 1:
                opt.state.clear()
            if i == 2:
                for p in model.parameters():
                    p.grad = None
            if i == 3:
                del model[0].weight.grad
        return res
    _both(run)


def test_param_removed_from_a_group_between_calls():
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
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            if i == 1:
                opt.param_groups[0]["params"].pop(0)
        return res
    _both(run)


def test_loss_stored_on_self_and_read_by_item_next_call():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.3)
        box = {"last": None}

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if box["last"] is not None and loss.item() > box["last"].item():
                for g in opt.param_groups:
                    g["lr"] *= 0.5
            box["last"] = loss.detach()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            res.append(opt.param_groups[0]["lr"])
        return res
    _both(run)


def test_tolist_and_numpy_round_trip_inside():
    def run(mod, wrap):
        def step(x):
            vals = x.tolist()
            arr = (x * 2).detach().numpy()
            return mod.tensor([v * 2 for v in vals]) + mod.from_numpy(arr.copy()), max(vals)
        f = wrap(step)
        return [snapshot(f(data(mod, i, 3))) for i in range(4)]
    _both(run)


def test_rng_state_functions_and_manual_seed_inside_the_step():
    def run(mod, wrap):
        mod.manual_seed(0)

        def step(x):
            st = mod.get_rng_state()
            a = mod.rand(3)
            mod.set_rng_state(st)
            b = mod.rand(3)
            mod.manual_seed(int(x.sum().item()))
            c = mod.rand(2)
            return a, b, c
        f = wrap(step)
        return [snapshot(f(mod.full((2,), float(i % 2)))) + [snapshot(mod.rand(1))] for i in range(4)]
    _eager_compiled(run)


def test_fork_rng_inside_the_step():
    def run(mod, wrap):
        mod.manual_seed(0)

        def step(x):
            with mod.random.fork_rng():
                mod.manual_seed(3)
                a = mod.randn(3)
            return x + a + mod.randn(3)
        f = wrap(step)
        return [snapshot(f(mod.zeros(3))) for i in range(4)]
    _eager_compiled(run)


def test_bernoulli_in_place_on_a_buffer_inside_and_functional_dropout_training_flag():
    def run(mod, wrap):
        mod.manual_seed(0)
        nn, F = mod.nn, mod.nn.functional

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 4), mod)
                self.register_buffer("mask", mod.ones(4))

            def forward(self, x):
                if self.training:
                    self.mask.bernoulli_(0.7)
                return F.dropout(self.lin(x), 0.3, training=self.training) * self.mask
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(6):
            m.train(i not in (2, 3))
            res.append(snapshot(f(data(mod, i, 2, 4))))
            res.append(snapshot(m))
        return res
    _eager_compiled(run)


def test_module_float_attribute_changed_between_calls():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(4, 3), mod)
                self.temperature = 1.0

            def forward(self, x):
                return (self.lin(x) / self.temperature).softmax(-1)
        m = M()
        f = wrap(lambda x: m(x))
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2, 4))))
            m.temperature = 0.5 + i
        return res
    _both(run)


def test_requires_grad_false_on_the_model_inside_the_step_then_restored_outside():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)

        def step(x, y, freeze_first):
            model.zero_grad()
            if freeze_first:
                model[0].requires_grad_(False)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i), i % 2 == 1)))
            res.append(snapshot(model))
            model.requires_grad_(True)
        return res
    _both(run)


# ---- batch 3: Python configuration read by the step, changed between calls

_ACT = None
_ALPHA = 0.5


def test_config_dict_object_attr_global_float_and_global_function_changed():
    import types

    def run(mod, wrap):
        global _ACT, _ALPHA
        _ACT, _ALPHA = mod.tanh, 0.5
        cfg = {"scale": 2.0, "mode": "sum"}
        args = types.SimpleNamespace(shift=1.0, n=3)

        def step(x):
            y = _ACT(x * cfg["scale"] + args.shift) * _ALPHA
            y = y + mod.zeros(args.n)
            return y.sum() if cfg["mode"] == "sum" else y.mean()
        f = wrap(step)
        res = []
        for i in range(7):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                cfg["scale"] = -1.0
            if i == 2:
                args.shift = 4.0
            if i == 3:
                _ALPHA = np.float32(1.5)
            if i == 4:
                _ACT = mod.relu
            if i == 5:
                cfg["mode"] = "mean"
        return res
    _both(run)


def test_class_attribute_and_instance_forward_monkeypatched_between_calls():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            k = 1.0

            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 2), mod)

            def forward(self, x):
                return self.lin(x) * self.k
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            if i == 1:
                M.k = 3.0
            if i == 2:
                m.forward = lambda x: m.lin(x).relu() * 7
            if i == 3:
                del m.forward
        return res
    _both(run)


def test_global_module_hooks_registered_between_calls():
    def run(mod, wrap):
        nn = mod.nn
        hooks = nn.modules.module
        model = _model(mod)
        f = wrap(lambda x: model(x).sum())
        res = []
        hs = []
        try:
            for i in range(6):
                res.append(snapshot(f(data(mod, i, 2, 4))))
                if i == 1:
                    hs.append(hooks.register_module_forward_hook(
                        lambda m, a, o: o * 2 if isinstance(m, nn.Linear) else None))
                if i == 2:
                    hs.append(hooks.register_module_forward_pre_hook(
                        lambda m, a: (a[0] + 1,) if isinstance(m, nn.ReLU) else None))
                if i == 4:
                    for h in hs:
                        h.remove()
        finally:
            for h in hs:
                h.remove()
        return res
    _both(run)


def test_global_full_backward_hook_registered_between_calls():
    def run(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        hooks = nn.modules.module
        model = _model(mod)

        def step(x, y):
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
            return model[0].weight.grad.clone()
        f = wrap(step)
        res = []
        h = None
        try:
            for i in range(5):
                res.append(snapshot(f(*_xy(mod, i))))
                if i == 1:
                    h = hooks.register_module_full_backward_hook(
                        lambda m, gi, go: tuple(None if g is None else g * 3 for g in gi))
                if i == 3:
                    h.remove()
                    h = None
        finally:
            if h is not None:
                h.remove()
        return res
    _both(run)


def test_saved_tensors_hooks_around_and_inside_the_step():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 3), mod)
        packed = []

        def pack(t):
            return t * 2

        def unpack(t):
            return t / 2

        def step(x, inside):
            lin.zero_grad()
            if inside:
                with mod.autograd.graph.saved_tensors_hooks(pack, unpack):
                    out = (lin(x) ** 2).sum()
            else:
                out = (lin(x) ** 2).sum()
            out.backward()
            return out, lin.weight.grad.clone()
        f = wrap(step)
        res = []
        for i in range(5):
            if i == 2:
                with mod.autograd.graph.saved_tensors_hooks(lambda t: (packed.append(1), t)[1], lambda t: t):
                    res.append(snapshot(f(data(mod, i, 2, 3), False)))
            else:
                res.append(snapshot(f(data(mod, i, 2, 3), i % 2 == 1)))
        return res + [len(packed) > 0]
    _both(run)


def test_set_grad_enabled_called_as_a_function_inside():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)

        def step(x):
            prev = mod.is_grad_enabled()
            mod.set_grad_enabled(False)
            a = lin(x)
            mod.set_grad_enabled(prev)
            b = lin(x)
            return a, b, a.requires_grad, b.requires_grad
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(list(f(data(mod, i, 2, 3)))))
            res.append(mod.is_grad_enabled())
        return res
    _both(run)


def test_param_data_replaced_inside_the_step():
    def run(mod, wrap):
        lin = np_init(mod.nn.Linear(3, 2), mod)

        def step(x):
            out = lin(x).sum()
            lin.weight.data = lin.weight.data * 0.5 + 0.1
            return out
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(snapshot(lin))
        return res
    _both(run)


def test_backward_twice_with_retain_graph_and_inputs():
    def run(mod, wrap):
        model = _model(mod)
        F = mod.nn.functional

        def step(x, y):
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward(retain_graph=True)
            loss.backward(inputs=[model[2].weight], retain_graph=True)
            g, = mod.autograd.grad(loss, [model[0].bias], allow_unused=True)
            return loss, g
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
        return res
    _both(run)


def _user_decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("decorated", ["no_grad", "user_wraps", "plain"])
def test_custom_optimizer_reading_its_own_attribute_and_a_new_group_key(decorated):
    def run(mod, wrap):
        F = mod.nn.functional

        def update(self):
            for g in self.param_groups:
                extra = g.get("extra", 0.0)
                for p in g["params"]:
                    if p.grad is not None:
                        p.add_(p.grad + extra * p, alpha=-g["lr"] * self.boost)

        class Scaled(mod.optim.Optimizer):
            def __init__(self, params, lr):
                super().__init__(params, dict(lr=lr))
                self.boost = 1.0

            if decorated == "no_grad":
                step = mod.no_grad()(update)
            elif decorated == "user_wraps":
                @_user_decorator
                def step(self):
                    with mod.no_grad():
                        update(self)
            else:
                def step(self):
                    with mod.no_grad():
                        update(self)
        model = _model(mod)
        opt = Scaled(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            if i == 1:
                opt.boost = 3.0
            if i == 2:
                opt.param_groups[0]["extra"] = 0.5
        return res
    _both(run)


def test_optimizer_step_hooks_added_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        fired = []

        def pre(o, args, kwargs):
            for g in o.param_groups:
                for p in g["params"]:
                    p.grad.mul_(0.5)

        def post(o, args, kwargs):
            fired.append(1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        hs = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            res.append(len(fired))
            if i == 1:
                hs.append(opt.register_step_pre_hook(pre))
            if i == 2:
                hs.append(opt.register_step_post_hook(post))
            if i == 4:
                for h in hs:
                    h.remove()
        return res
    _both(run)


def test_list_and_dict_arguments_mutated_by_the_step():
    def run(mod, wrap):
        def step(x, acc, stats):
            y = x * 2
            acc.append(y)
            stats["sum"] = y.sum()
            stats["n"] = stats.get("n", 0) + 1
            return y
        f = wrap(step)
        acc, stats = [], {}
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3), acc, stats)))
            res.append([len(acc), snapshot(dict(stats))])
        return res + [snapshot(acc)]
    _both(run)


def test_closure_int_used_as_a_shape_changed_between_calls():
    def run(mod, wrap):
        n = [2]

        def step(x):
            return x.sum() + mod.ones(n[0], 3).sum(), mod.arange(n[0])
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            n[0] = 2 + i
        return res
    _both(run)


def test_default_generator_passed_explicitly_and_multinomial_with_replacement():
    def run(mod, wrap):
        mod.manual_seed(0)
        lin = np_init(mod.nn.Linear(3, 4), mod)

        def step(x, g):
            probs = lin(x).softmax(-1)
            idx = mod.multinomial(probs, 6, replacement=True, generator=g)
            return probs.gather(1, idx).log().sum(), idx
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2, 3), mod.default_generator)))
            res.append(snapshot(mod.rand(2)))
        return res
    _eager_compiled(run)


def test_decorated_methods_reading_attributes_changed_between_calls():
    """``@torch.no_grad()`` on a module's EMA method and on a helper object's method: the
    attributes those read (``decay``, ``k``) changed between calls."""
    def run(mod, wrap):
        nn = mod.nn

        class EMA(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 2), mod)
                self.register_buffer("avg", mod.zeros(2, 3))
                self.decay = 0.9

            @mod.no_grad()
            def update(self):
                self.avg.mul_(self.decay).add_(self.lin.weight, alpha=1 - self.decay)

        class Helper:
            def __init__(self):
                self.k = 1.0

            @mod.no_grad()
            def scale(self, x):
                return x * self.k
        m, h = EMA(), Helper()

        def step(x):
            m.update()
            return h.scale(m.lin(x)).sum() + m.avg.sum()
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append(snapshot(m))
            if i == 1:
                m.decay = 0.5
            if i == 3:
                h.k = -2.0
        return res
    _both(run)


# ---- batch 4: attributes read through decorated, static, class and partial methods

_GLOBAL_SCALE = 1.0


def test_attributes_read_through_classmethod_staticmethod_partialmethod_and_property():
    def run(mod, wrap):
        global _GLOBAL_SCALE
        _GLOBAL_SCALE = 1.0

        class Cfg:
            SHIFT = 0.5

            def __init__(self):
                self._t = 2.0

            @classmethod
            def shift(cls):
                return cls.SHIFT

            @staticmethod
            @mod.no_grad()
            def glob(x):
                return x * _GLOBAL_SCALE

            def _mul(self, x, k):
                return x * k * self._t

            triple = functools.partialmethod(_mul, k=3.0)

            @property
            def temp(self):
                return self._t + 1

        cfg = Cfg()

        def step(x):
            return cfg.triple(x) + cfg.shift() + cfg.glob(x) / cfg.temp
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                Cfg.SHIFT = -4.0
            if i == 2:
                cfg._t = 5.0
            if i == 3:
                _GLOBAL_SCALE = 7.0
        return res
    _both(run)


def test_decorated_free_helper_reading_a_closure_and_a_global():
    def run(mod, wrap):
        global _GLOBAL_SCALE
        _GLOBAL_SCALE = 1.0
        box = {"k": 2.0}

        @_user_decorator
        @mod.no_grad()
        def helper(x):
            return x * box["k"] * _GLOBAL_SCALE

        def step(x):
            return helper(x) + x
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                box["k"] = -1.0
            if i == 2:
                _GLOBAL_SCALE = 3.0
        return res
    _both(run)


def test_module_forward_decorated_by_user_wrapper_reading_attribute_via_helper_method():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 2), mod)
                self.gain = 1.0

            def _g(self):
                return self.gain

            @_user_decorator
            def forward(self, x):
                return self.lin(x) * self._g()
        m = M()
        f = wrap(lambda x: m(x).sum())
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            if i == 1:
                m.gain = 4.0
        return res
    _both(run)


def test_lambda_lr_reading_a_mutable_config_stepped_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        cfg = {"warm": 2}
        sched = mod.optim.lr_scheduler.LambdaLR(opt, lambda e: min(1.0, (e + 1) / cfg["warm"]))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            sched.step()
            if i == 1:
                cfg["warm"] = 10
            res.append(snapshot(model))
            res.append(opt.param_groups[0]["lr"])
        return res
    _both(run)


# ---- batch 5: Python values reached in ways the code's names do not show

def test_tensor_python_attribute_read_by_the_step_changed_between_calls():
    def run(mod, wrap):
        F = mod.nn.functional
        model = _model(mod)
        for p in model.parameters():
            p.lr_scale = 1.0

        def step(x, y):
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
            with mod.no_grad():
                for p in model.parameters():
                    p.sub_(0.1 * p.lr_scale * p.grad)
            return model[0].weight.clone()
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            if i == 1:
                model[0].weight.lr_scale = 0.0
            if i == 2:
                model[2].bias.lr_scale = 10.0
        return res
    _both(run)


def test_attrgetter_itemgetter_and_chainmap_reads():
    import collections
    import operator

    def run(mod, wrap):
        class Cfg:
            pass
        cfg = Cfg()
        cfg.k = 2.0
        get_k = operator.attrgetter("k")
        table = {"b": 1.0}
        get_b = operator.itemgetter("b")
        chain = collections.ChainMap({"c": 3.0}, {"d": 4.0})

        cfg.inner = Cfg()
        cfg.inner.m = 1.0

        def step(x):
            m = operator.attrgetter("inner.m")(cfg)
            return x * get_k(cfg) * m + get_b(table) + chain["c"] * chain["d"]
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                cfg.k = -1.0
            if i == 2:
                table["b"] = 9.0
            if i == 3:
                chain.maps[1]["d"] = 0.5
            if i == 4:
                chain["c"] = 0.25
                cfg.inner.m = -3.0
        return res
    _both(run)


def test_enum_and_dataclass_config_switched_between_calls():
    import dataclasses
    import enum

    def run(mod, wrap):
        class Act(enum.Enum):
            TANH = "tanh"
            RELU = "relu"

        @dataclasses.dataclass
        class Cfg:
            act: Act = Act.TANH
            scale: float = 1.0
        cfg = Cfg()

        def step(x):
            d = dataclasses.asdict(cfg)
            y = x.tanh() if cfg.act is Act.TANH else x.relu()
            return y * d["scale"]
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                cfg.act = Act.RELU
            if i == 2:
                cfg.scale = 3.0
        return res
    _both(run)


def test_dataclass_replace_on_a_frozen_config_global():
    import dataclasses

    def run(mod, wrap):
        @dataclasses.dataclass(frozen=True)
        class Cfg:
            scale: float = 1.0
        holder = [Cfg()]

        def step(x):
            c = holder[0]
            return x * dataclasses.astuple(c)[0]
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                holder[0] = dataclasses.replace(holder[0], scale=5.0)
        return res
    _both(run)


# ---- batch 6: attributes read by dunder methods Python calls implicitly

@pytest.mark.parametrize("how", ["rmul", "float", "len", "getitem", "bool", "call", "contains", "iter", "format"])
def test_dunder_methods_of_a_held_object_reading_changed_attributes(how):
    def run(mod, wrap):
        class Knob:
            def __init__(self):
                self.k = 2.0
                self.on = True

            def __rmul__(self, other):
                return other * self.k

            def __float__(self):
                return self.k

            def __len__(self):
                return int(self.k)

            def __getitem__(self, i):
                return self.k + i

            def __bool__(self):
                return self.on

            def __call__(self, x):
                return x - self.k

            def __contains__(self, v):
                return self.on

            def __iter__(self):
                return iter([self.k, self.k])

            def __format__(self, spec):
                return f"{self.k:{spec}}"
        knob = Knob()

        def step(x):
            if how == "rmul":
                return x * knob
            if how == "float":
                return x * float(knob)
            if how == "len":
                return x + len(knob)
            if how == "getitem":
                return x + knob[1]
            if how == "bool":
                return x + 1 if knob else x - 1
            if how == "call":
                return knob(x)
            if how == "contains":
                return x + (5 in knob)
            if how == "iter":
                a, b = knob
                return x * a + b
            return x * float(f"{knob:.1f}")
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                knob.k = 5.0
            if i == 2:
                knob.on = False
        return res
    _both(run)


class _Knob:
    def __init__(self, k=2.0):
        self.k = k

    def __rmul__(self, other):
        return other * self.k

    def __float__(self):
        return float(self.k)


_KNOBS = {"a": _Knob()}


@pytest.mark.parametrize("where", ["dict_closure", "list_global", "module_attr", "argument", "nested_object",
                                   "default_argument", "partial_argument"])
def test_object_with_implicit_methods_reached_through_holders(where):
    def run(mod, wrap):
        nn = mod.nn
        knob = _Knob()
        _KNOBS["a"] = knob
        box = {"knob": knob}
        lst = [knob]

        class Holder:
            def __init__(self):
                self.inner = knob
        holder = Holder()

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.knob = knob

            def forward(self, x):
                return x * self.knob
        m = M()

        def step(x, kn=None, dflt=knob):
            if where == "dict_closure":
                return x * box["knob"]
            if where == "list_global":
                return x * float(_KNOBS["a"]) + x * lst[0]
            if where == "module_attr":
                return m(x)
            if where == "argument":
                return x * kn
            if where == "nested_object":
                return x * holder.inner
            if where == "default_argument":
                return x * dflt
            return x * kn
        if where == "partial_argument":
            f = wrap(functools.partial(step, kn=knob))
        else:
            f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3), knob) if where == "argument" else f(data(mod, i, 3))))
            if i == 1:
                knob.k = 5.0
        return res
    _both(run)


# ---- batch 8: side effects that must happen on every call

def test_warnings_and_logging_inside_the_step_every_call():
    import logging
    import warnings

    def run(mod, wrap):
        log = logging.getLogger(f"round36.{id(wrap)}")
        log.propagate = False
        records = []

        class H(logging.Handler):
            def emit(self, r):
                records.append(r.getMessage())
        h = H()
        log.addHandler(h)
        log.setLevel(logging.INFO)

        def step(x):
            warnings.warn("round36 step warning")
            log.info("step called")
            return x * 2
        f = wrap(step)
        res = []
        try:
            for i in range(4):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    res.append(snapshot(f(data(mod, i, 3))))
                res.append([str(m.message) for m in w if str(m.message) == "round36 step warning"])
                res.append(len(records))
        finally:
            log.removeHandler(h)
        return res
    _both(run)


def test_print_inside_the_step_every_call(capsys):
    def run(mod, wrap):
        def step(x):
            print("calling step")
            return x + 1
        f = wrap(step)
        out = [snapshot(f(data(mod, i, 3))) for i in range(4)]
        return out + [capsys.readouterr().out.count("calling step")]
    _both(run)


def test_heapq_set_deque_bytearray_and_array_mutated_inside():
    import array
    import collections
    import heapq

    def run(mod, wrap):
        heap, seen, dq = [], set(), collections.deque(maxlen=2)
        buf, arr = bytearray(), array.array("d")
        n = [0]

        def step(x):
            n[0] += 0      # no counter: only the containers below change
            heapq.heappush(heap, len(heap))
            seen.add(len(seen))
            dq.append(len(heap))
            buf.extend(b"a")
            arr.append(1.5)
            return x * 2
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3))))
            res.append([list(heap), sorted(seen), list(dq), bytes(buf), list(arr)])
        return res
    _both(run)


def test_numpy_generator_and_random_instance_drawn_inside():
    import random

    def run(mod, wrap):
        rng = np.random.default_rng(0)
        r = random.Random(1)

        def step(x):
            return x + float(rng.normal()) + r.random()
        f = wrap(step)
        return [snapshot(f(mod.zeros(2))) for _ in range(4)]
    _both(run)


def test_environ_and_module_setattr_inside():
    import os
    import types

    def run(mod, wrap):
        ns = types.ModuleType("round36_ns")
        ns.count = 0
        key = f"ROUND36_{id(wrap)}"
        os.environ.pop(key, None)

        def step(x):
            os.environ[key] = os.environ.get(key, "") + "a"
            setattr(ns, "count", ns.count + 1)
            return x * 2
        f = wrap(step)
        res = []
        try:
            for i in range(4):
                res.append(snapshot(f(data(mod, i, 3))))
                res.append([os.environ[key], ns.count])
        finally:
            os.environ.pop(key, None)
        return res
    _both(run)


# ---- batch 9: classes and methods swapped between calls

@pytest.mark.parametrize("change", ["instance_class", "class_method", "instance_method", "module_class_method",
                                    "module_instance_class", "base_class_attr"])
def test_classes_and_methods_swapped_between_calls(change):
    def run(mod, wrap):
        nn = mod.nn

        class Base:
            K = 1.0

        class A(Base):
            def scale(self, x):
                return x * 2 * self.K

        class B(Base):
            def scale(self, x):
                return x * 3 * self.K

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)

            def act(self, x):
                return x.tanh()

            def forward(self, x):
                return self.act(self.lin(x))

        class Net2(Net):
            def act(self, x):
                return x.relu()
        obj, net = A(), Net()

        def step(x):
            return obj.scale(x) + net(x)
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            if i == 1:
                if change == "instance_class":
                    obj.__class__ = B
                elif change == "class_method":
                    A.scale = lambda self, x: x * -1
                elif change == "instance_method":
                    obj.scale = lambda x: x * 7
                elif change == "module_class_method":
                    Net.act = lambda self, x: x.sigmoid()
                elif change == "module_instance_class":
                    net.__class__ = Net2
                else:
                    Base.K = 4.0
        return res
    _both(run)


# ---- batch 10: counters kept on classes, cells and sort keys

def test_class_attribute_counter_and_nonlocal_counter_inside():
    def run(mod, wrap):
        nn = mod.nn

        class M(nn.Module):
            calls = 0

            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 2), mod)

            def forward(self, x):
                type(self).calls += 1
                return self.lin(x) * type(self).calls
        m = M()
        count = 0

        def step(x):
            nonlocal count
            count += 1
            return m(x).sum() + count
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            res.append([M.calls, count])
        return res
    _both(run)


def test_sorted_max_and_sum_over_objects_with_comparison_methods():
    import operator

    def run(mod, wrap):
        class Item:
            def __init__(self, k):
                self.k = k

            def __lt__(self, other):
                return self.k < other.k

            def __radd__(self, other):
                return other + self.k
        items = [Item(1.0), Item(2.0), Item(3.0)]

        def step(x):
            lo = sorted(items)[0]
            hi = max(items, key=operator.attrgetter("k"))
            return x * lo.k + hi.k + sum(items)
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                items[0].k = 10.0
            if i == 2:
                items[2].k = -5.0
        return res
    _both(run)


# ---- batch 11: the in-place random fills and init functions inside the step

@pytest.mark.parametrize("op", ["uniform_", "normal_", "random_", "exponential_", "geometric_", "cauchy_",
                                "log_normal_", "poisson", "rand_like", "randint_like", "normal_tensors",
                                "randint", "init_normal", "init_kaiming", "init_orthogonal"])
def test_random_fills_inside_the_step_with_and_without_generator(op):
    def run(mod, wrap):
        mod.manual_seed(0)
        lin = np_init(mod.nn.Linear(3, 3), mod)
        g = mod.Generator().manual_seed(4)

        def step(x, gen):
            kw = {} if gen is None else {"generator": gen}
            t = mod.empty(3, 3)
            if op == "uniform_":
                t.uniform_(-1, 1, **kw)
            elif op == "normal_":
                t.normal_(2, 3, **kw)
            elif op == "random_":
                t.random_(0, 7, **kw)
            elif op == "exponential_":
                t.exponential_(2.0, **kw)
            elif op == "geometric_":
                t.geometric_(0.3, **kw)
            elif op == "cauchy_":
                t.cauchy_(**kw)
            elif op == "log_normal_":
                t.log_normal_(**kw)
            elif op == "poisson":
                t = mod.poisson(x.abs() * 3, **kw)
            elif op == "rand_like":
                t = mod.rand_like(x)
            elif op == "randint_like":
                t = mod.randint_like(x, 5)
            elif op == "normal_tensors":
                t = mod.normal(x, x.abs() + 0.5, **kw)
            elif op == "randint":
                t = mod.randint(0, 10, (3, 3), **kw).float()
            else:
                init = {"init_normal": mod.nn.init.normal_, "init_kaiming": mod.nn.init.kaiming_uniform_,
                        "init_orthogonal": mod.nn.init.orthogonal_}[op]
                with mod.no_grad():
                    init(lin.weight, **kw)
                t = lin.weight.clone()
            return lin(x) + t
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3, 3), g if i % 2 else None)))
            res.append([snapshot(g), snapshot(lin)])
        return res
    _eager_compiled(run)


# ---- batch 12: values reached through context variables, thread-locals and weak references

_SCALE_VAR = __import__("contextvars").ContextVar("round36_scale", default=1.0)


@pytest.mark.parametrize("via", ["contextvar", "threading_local", "weakref", "weakproxy", "memoryview", "mappingproxy"])
def test_values_read_through_indirect_holders(via):
    import threading
    import types
    import weakref

    def run(mod, wrap):
        class Cfg:
            pass
        cfg = Cfg()
        cfg.k = 2.0
        loc = threading.local()
        loc.k = 2.0
        ref, proxy = weakref.ref(cfg), weakref.proxy(cfg)
        raw = np.array([2.0], dtype=np.float64)
        mv = memoryview(raw)
        table = {"k": 2.0}
        mp = types.MappingProxyType(table)
        token = _SCALE_VAR.set(2.0)

        def step(x):
            if via == "contextvar":
                return x * _SCALE_VAR.get()
            if via == "threading_local":
                return x * loc.k
            if via == "weakref":
                return x * ref().k
            if via == "weakproxy":
                return x * proxy.k
            if via == "memoryview":
                return x * mv[0]
            return x * mp["k"]
        f = wrap(step)
        res = []
        try:
            for i in range(4):
                res.append(snapshot(f(data(mod, i, 3))))
                if i == 1:
                    _SCALE_VAR.set(5.0)
                    loc.k = 5.0
                    cfg.k = 5.0
                    raw[0] = 5.0
                    table["k"] = 5.0
        finally:
            _SCALE_VAR.reset(token)
        return res
    _both(run)


# ---- batch 13: attributes computed by descriptors

@pytest.mark.parametrize("kind", ["descriptor", "cached_property", "property_of_property"])
def test_attributes_computed_by_descriptors_changed_between_calls(kind):
    def run(mod, wrap):
        class Doubled:
            def __get__(self, obj, typ=None):
                return obj._k * 2

        class Cfg:
            k = Doubled()

            def __init__(self):
                self._k = 1.0
                self._inner = 3.0

            @functools.cached_property
            def cached(self):
                return self._k + 10

            @property
            def base(self):
                return self._inner

            @property
            def derived(self):
                return self.base * 2
        cfg = Cfg()

        def step(x):
            if kind == "descriptor":
                return x * cfg.k
            if kind == "cached_property":
                return x * cfg.cached
            return x * cfg.derived
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                cfg._k = 4.0
                cfg._inner = -1.0
            if i == 2:
                cfg.__dict__.pop("cached", None)
        return res
    _both(run)


def test_methodcaller_held_and_made_inside():
    import operator

    def run(mod, wrap):
        class Obj:
            def __init__(self):
                self.k = 2.0

            def scale(self, x, extra=0.0):
                return x * self.k + extra

            def shift(self, x):
                return x + self.k
        obj = Obj()
        call_scale = operator.methodcaller("scale", mod.ones(1), extra=1.0)

        def step(x):
            return call_scale(obj) * x + operator.methodcaller("shift", x)(obj)
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                obj.k = -3.0
        return res
    _both(run)


@pytest.mark.parametrize("deco", ["no_grad", "user_wraps"])
def test_submodule_forward_behind_a_decorator_reading_attributes(deco):
    def run(mod, wrap):
        nn = mod.nn
        d = mod.no_grad() if deco == "no_grad" else _user_decorator

        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.k = 1.0
                self.cfg = {"shift": 0.0}

            @d
            def forward(self, x):
                return x * self.k + self.cfg["shift"]

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = np_init(nn.Linear(3, 3), mod)
                self.inner = Inner()

            def forward(self, x):
                return self.inner(self.lin(x))
        net = Outer()
        f = wrap(lambda x: net(x).sum())
        res = []
        for i in range(5):
            res.append(snapshot(f(data(mod, i, 2, 3))))
            if i == 1:
                net.inner.k = 3.0
            if i == 2:
                net.inner.cfg["shift"] = 2.0
        return res
    _both(run)


# ---- batch 16: functions held in containers and defaults, reading changed values

class _Cfg16:
    k = 1.0


_ACTS16 = {"f": lambda x: x * _Cfg16.k}
_PIPE16 = [lambda x: x + _Cfg16.k, lambda x: x * 2]


@pytest.mark.parametrize("where", ["global_dict", "global_list", "closure_dict", "default_arg", "tuple_in_dict",
                                   "object_list_attr"])
def test_functions_held_in_containers_reading_changed_values(where):
    def run(mod, wrap):
        _Cfg16.k = 1.0
        box = {"k": 1.0}
        local_acts = {"g": lambda x: x - box["k"]}
        nested = {"ops": (lambda x: x * box["k"],)}

        class Holder:
            def __init__(self):
                self.fns = [lambda x: x * box["k"] + 1]
        holder = Holder()

        def step(x, act=lambda v: v * box["k"]):
            if where == "global_dict":
                return _ACTS16["f"](x)
            if where == "global_list":
                for fn in _PIPE16:
                    x = fn(x)
                return x
            if where == "closure_dict":
                return local_acts["g"](x)
            if where == "default_arg":
                return act(x)
            if where == "tuple_in_dict":
                return nested["ops"][0](x)
            return holder.fns[0](x)
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                _Cfg16.k = 5.0
                box["k"] = 5.0
        return res
    _both(run)


@pytest.mark.parametrize("deco", ["no_grad", "inference_mode", "enable_grad", "user_wraps", "autocast"])
def test_compiled_step_itself_decorated_reading_changed_values(deco):
    def run(mod, wrap):
        class Knob:
            def __init__(self):
                self.k = 1.0

            def __rmul__(self, o):
                return o * self.k
        knob, box = Knob(), {"s": 1.0}
        lin = np_init(mod.nn.Linear(3, 3), mod)
        d = {"no_grad": mod.no_grad(), "inference_mode": mod.inference_mode(), "enable_grad": mod.enable_grad(),
             "user_wraps": _user_decorator, "autocast": mod.autocast("cpu", enabled=False)}[deco]

        @d
        def step(x):
            return lin(x) * knob + box["s"]
        f = wrap(step)
        res = []
        for i in range(4):
            out = f(data(mod, i, 2, 3))
            res.append(snapshot(out.clone() if deco == "inference_mode" else out))
            if i == 1:
                knob.k = 3.0
                box["s"] = -1.0
        return res
    _both(run)


# ---- batch 18: hooks whose Python inputs change between calls

_HOOK_SCALE = 1.0


@pytest.mark.parametrize("hook", ["forward", "forward_pre", "tensor", "backward", "post_accumulate", "knob_rmul"])
def test_hooks_reading_values_changed_between_calls(hook):
    def run(mod, wrap):
        global _HOOK_SCALE
        _HOOK_SCALE = 1.0
        F = mod.nn.functional
        model = _model(mod)
        cfg = [1.0]

        class Knob:
            def __init__(self):
                self.k = 1.0

            def __rmul__(self, o):
                return o * self.k
        knob = Knob()
        if hook == "forward":
            model[0].register_forward_hook(lambda m, a, o: o * cfg[0])
        elif hook == "forward_pre":
            model[2].register_forward_pre_hook(lambda m, a: (a[0] * _HOOK_SCALE,))
        elif hook == "tensor":
            model[0].weight.register_hook(lambda g: g * cfg[0])
        elif hook == "backward":
            model[2].register_full_backward_hook(lambda m, gi, go: (gi[0] * _HOOK_SCALE,))
        elif hook == "post_accumulate":
            model[0].bias.register_post_accumulate_grad_hook(lambda p: (p.grad.mul_(cfg[0]), None)[1])
        else:
            model[0].register_forward_hook(lambda m, a, o: o * knob)

        def step(x, y):
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            if i == 1:
                cfg[0] = 3.0
                _HOOK_SCALE = -2.0
                knob.k = 4.0
        return res
    _both(run)


# ---- batch 19: common config containers

class _AttrDict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class _EasyDict(dict):
    def __init__(self, **kw):
        super().__init__(**kw)
        for k, v in kw.items():
            setattr(self, k, v)

    def __setattr__(self, k, v):
        super().__setattr__(k, v)
        super().__setitem__(k, v)


@pytest.mark.parametrize("kind", ["attrdict", "easydict", "argparse", "namedtuple_replaced", "ordered_dict",
                                  "defaultdict", "counter", "nested_attrdict"])
def test_config_containers_changed_between_calls(kind):
    import argparse
    import collections

    def run(mod, wrap):
        NT = collections.namedtuple("NT", "k")
        cfg = {"attrdict": lambda: _AttrDict(k=1.0), "easydict": lambda: _EasyDict(k=1.0),
               "argparse": lambda: argparse.Namespace(k=1.0), "namedtuple_replaced": lambda: [NT(1.0)],
               "ordered_dict": lambda: collections.OrderedDict(k=1.0),
               "defaultdict": lambda: collections.defaultdict(float, k=1.0),
               "counter": lambda: collections.Counter(k=1),
               "nested_attrdict": lambda: _AttrDict(opt=_AttrDict(k=1.0))}[kind]()

        def read():
            if kind in ("attrdict", "easydict", "argparse"):
                return cfg.k
            if kind == "namedtuple_replaced":
                return cfg[0].k
            if kind == "nested_attrdict":
                return cfg.opt.k
            return cfg["k"]

        def step(x):
            return x * read()
        f = wrap(step)
        res = []
        for i in range(4):
            res.append(snapshot(f(data(mod, i, 3))))
            if i == 1:
                if kind == "namedtuple_replaced":
                    cfg[0] = cfg[0]._replace(k=4.0)
                elif kind == "nested_attrdict":
                    cfg.opt.k = 4.0
                elif kind == "argparse":
                    cfg.k = 4.0
                elif kind == "easydict":
                    cfg.k = 4.0
                elif kind == "counter":
                    cfg["k"] += 3
                else:
                    cfg["k"] = 4.0
        return res
    _both(run)


def test_no_retrace_when_nothing_read_changes():
    """The new guards (decorated methods, implicit methods, getters, a plain object's class)
    keep one program while the values they read stay the same, even with an unread counter
    bumped between calls."""
    import operator

    def run(mod, wrap):
        F = mod.nn.functional

        class Knob:
            def __init__(self):
                self.k = 0.5
                self.calls = 0          # bumped outside, read by no code the step runs

            def __rmul__(self, o):
                return o * self.k

        class Opt(mod.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=0.1))
                self.boost = 1.0

            @mod.no_grad()
            def step(self):
                for g in self.param_groups:
                    for p in g["params"]:
                        p.sub_(p.grad * g["lr"] * self.boost)
        model, knob = _model(mod), Knob()
        opt = Opt(model.parameters())
        get_k = operator.attrgetter("k")

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x) * knob, y) * get_k(knob)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(6):
            res.append(snapshot(f(*_xy(mod, i))))
            knob.calls += 1
        return res + [snapshot(model)]
    made = _both(run)
    assert made[0].stats["traces"] == 1, made[0].stats


@pytest.mark.parametrize("change", ["rebind", "in_place", "shape"])
def test_tensor_attribute_read_only_through_implicit_and_decorated_methods(change):
    def run(mod, wrap):
        F = mod.nn.functional

        class Knob:
            def __init__(self):
                self.t = mod.tensor([1.0, 2.0, 3.0])

            def __rmul__(self, o):
                return o * self.t

        class Opt(mod.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=0.1))
                self.scale = mod.tensor(1.0)

            @mod.no_grad()
            def step(self):
                for g in self.param_groups:
                    for p in g["params"]:
                        p.sub_(p.grad * g["lr"] * self.scale)
        model, knob = _model(mod), Knob()
        opt = Opt(model.parameters())

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x) * knob, y)
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        res = []
        for i in range(5):
            res.append(snapshot(f(*_xy(mod, i))))
            res.append(snapshot(model))
            if i == 1:
                if change == "rebind":
                    knob.t = mod.tensor([3.0, -1.0, 0.5])
                    opt.scale = mod.tensor(4.0)
                elif change == "in_place":
                    knob.t.mul_(2)
                    opt.scale.fill_(0.25)
                else:
                    knob.t = mod.tensor([2.0])
                    opt.scale = mod.tensor([2.0])
        return res
    _both(run)
