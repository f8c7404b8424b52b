"""More adversarial programs for ``tracegrad.compile`` (kinds not in ``test_adversarial.py``):
iterators and generators reached through containers and modules, ``global``/``nonlocal``
rebinding, ``functools.partial`` helpers, dataclass and namedtuple arguments, ``*args`` /
``**kwargs`` / defaults given and omitted, returned structures and aliases, in-place ops on
arguments, grad-mode and RNG calls inside, exceptions raised on some calls, nested compiled
functions, compiled methods, lambdas and modules, host values (``.tolist()``, ``time``,
``random``) inside.

Each program runs eagerly and compiled from identical state (``_harness.check_compiled``),
``CALLS`` times, with ``state["change"](i)`` run after call ``i``: compiled must equal eager, or
break to eager. ``xfail(strict=True)`` marks a known silent difference; its reason says what
differs."""
import collections
import contextlib
import dataclasses
import functools
import logging
import random
import time
import types

import numpy as np
import pytest

import tracegrad

from ._harness import change, check_compiled, no_change, np_init, ones

CALLS = 4
COUNT = 0
LOG = []
STATE = None


def check(make, calls=CALLS, **kw):
    return check_compiled(make, calls=calls, between=change, **kw)


def linear(mod):
    """A 2x2 Linear with fixed weights (0.5) and bias (0.1)."""
    net = mod.nn.Linear(2, 2)
    with mod.no_grad():
        net.weight.fill_(0.5)
        net.bias.fill_(0.1)
    return net


def per_call(mod):
    return lambda i: (mod.full((2,), float(i + 1)),)


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Cfg:
    scale: float = 1.0
    shift: float = 0.0

    def apply(self, x):
        return x * self.scale + self.shift


@dataclasses.dataclass
class Out:
    y: object
    n: int


# ---- iterators reached in other ways --------------------------------------------------------

@pytest.mark.parametrize("holder", ["list", "dict", "module_attribute", "partial", "map", "zip"])
def test_iterator_reached_through_a_holder_advances_every_call(holder):
    def make(mod, wrap):
        values = iter([float(k) for k in range(1, 20)])

        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.it = values

            def forward(self, x):
                return x * next(self.it)
        box, cfg, net = [values], {"it": values}, Net()
        nxt = functools.partial(next, values)
        mapped = map(lambda v: v * 2, values)
        zipped = zip(values, values)

        def step(x):
            if holder == "list":
                return x * next(box[0])
            if holder == "dict":
                return x * next(cfg["it"])
            if holder == "module_attribute":
                return net(x)
            if holder == "partial":
                return x * nxt()
            if holder == "map":
                return x * next(mapped)
            return x * sum(next(zipped))
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)


def test_generator_made_inside_is_consumed_every_call():
    def make(mod, wrap):
        def gen(x, n):
            for k in range(n):
                yield x * (k + 1)

        def step(x):
            return sum(gen(x, 3)), list(gen(x, 2))[-1]
        return wrap(step), {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


def test_generator_yielding_tensors_sent_values():
    def make(mod, wrap):
        def acc():
            total = None
            while True:
                v = yield total
                total = v if total is None else total + v

        def step(x):
            g = acc()
            next(g)
            g.send(x)
            return g.send(x * 3)
        return wrap(step), {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


# ---- nonlocal / global rebinding inside ---------------------------------------------------

def test_global_counter_incremented_inside_counts_every_call():
    def make(mod, wrap):
        global COUNT
        COUNT = 0

        def step(x):
            global COUNT
            COUNT += 1
            return x * COUNT
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)
    assert COUNT == CALLS


def test_tensors_appended_to_a_global_list_every_call():
    def make(mod, wrap):
        LOG.clear()

        def step(x):
            y = x * 2
            LOG.append(y)
            LOG.append(len(LOG))
            return y
        return wrap(step), {"change": no_change, "log": LOG}, per_call(mod)
    check(make, torch_too=True)


def test_global_tensor_rebound_inside_advances_every_call():
    def make(mod, wrap):
        global STATE
        STATE = mod.zeros(2)

        def step(x):
            global STATE
            STATE = STATE * 0.5 + x
            return STATE.sum()
        return wrap(step), {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


def test_nonlocal_tensor_and_count_rebound_inside():
    def make(mod, wrap):
        h, n = mod.zeros(2), 0

        def step(x):
            nonlocal h, n
            n += 1
            h = h + x * n
            return h
        return wrap(step), {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


@pytest.mark.parametrize("place", ["closure", "list", "dict", "attribute"])
def test_tensor_rebound_between_calls_while_the_old_one_lives_on(place):
    """The caller binds a new tensor (another value, dtype or shape) where the trace read one,
    and keeps the old one (a history list): the program must read the new one."""
    def make(mod, wrap):
        w = mod.ones(2)
        box, cfg, obj = [w], {"w": w}, types.SimpleNamespace(w=w)
        history = []

        def step(x):
            if place == "closure":
                return x * w
            if place == "list":
                return x * box[0]
            if place == "dict":
                return x * cfg["w"]
            return x * obj.w

        def rebind(i):
            nonlocal w
            history.append(w)
            new = [mod.full((2,), 2.0), mod.full((2,), 3.0, dtype=mod.float64), mod.full((1,), 4.0),
                   mod.full((2,), 5.0)][i % 4]
            w = box[0] = cfg["w"] = obj.w = new
        return wrap(step), {"change": rebind, "history": history}, ones(mod)
    check(make, calls=5, torch_too=True)


@pytest.mark.parametrize("where", ["argument", "closure", "list", "dict"])
def test_negative_zero_is_not_positive_zero(where):
    """-0.0 == 0.0 in Python, but ``1 / k`` is -inf for one and inf for the other."""
    def make(mod, wrap):
        k, box, cfg = 0.0, [0.0], {"k": 0.0}
        signs = [0.0, 0.0, -0.0, -0.0, 0.0]

        def step(x, a):
            if where == "argument":
                return x / a
            if where == "closure":
                return x / k
            return x / (box[0] if where == "list" else cfg["k"])

        def set_value(i):
            nonlocal k
            k = box[0] = cfg["k"] = signs[(i + 1) % 5]
        return wrap(step), {"change": set_value}, lambda i: (mod.ones(1), signs[i % 5])
    check(make, calls=5, torch_too=True)


def test_closure_list_of_numbers_mutated_by_the_caller():
    def make(mod, wrap):
        scales = [float(k) for k in range(12)]       # longer than the short-list signature

        def step(x):
            for s in scales:
                x = x + s
            return x

        def set_value(i):
            scales[5] = float(i * 10)
            if i == 2:
                scales.append(100.0)
        return wrap(step), {"change": set_value}, ones(mod)
    check(make, torch_too=True)


def test_closure_rebound_to_a_new_list_by_the_caller():
    def make(mod, wrap):
        scales = [1.0, 2.0]

        def step(x):
            return x * sum(scales)

        def rebind(i):
            nonlocal scales
            scales = [float(i), 5.0, 1.0][: 2 + i % 2]
        return wrap(step), {"change": rebind}, ones(mod)
    check(make, torch_too=True)


def test_global_deleted_and_restored_between_calls():
    def make(mod, wrap):
        ns = {"SCALE": 2.0}
        exec("def step(x):\n    return x * (SCALE if 'SCALE' in globals() else 1.0)\n", ns)

        def toggle(i):
            if "SCALE" in ns:
                del ns["SCALE"]
            else:
                ns["SCALE"] = 3.0 + i
        return wrap(ns["step"]), {"change": toggle}, ones(mod)
    check(make)


# ---- partials, cached helpers, callables as arguments -----------------------------------

@pytest.mark.parametrize("how", ["rebound", "keywords_edited_in_place"])
def test_partial_changed_between_calls(how):
    def make(mod, wrap):
        def scaled(x, k):
            return x * k
        helper = functools.partial(scaled, k=1.0)

        def step(x):
            return helper(x)

        def set_value(i):
            nonlocal helper
            if how == "rebound":
                helper = functools.partial(scaled, k=float(i + 2))
            else:
                helper.keywords["k"] = float(i + 2)
        return wrap(step), {"change": set_value}, ones(mod)
    check(make, torch_too=True)


def test_partial_passed_as_an_argument_with_changing_bound_value():
    def make(mod, wrap):
        def scaled(x, k):
            return x * k

        def step(x, f):
            return f(x)
        return wrap(step), {"change": no_change}, lambda i: (mod.ones(2), functools.partial(scaled, k=float(i + 1)))
    check(make, torch_too=True)


def test_lru_cached_helper_reading_a_global_cleared_between_calls():
    def make(mod, wrap):
        cfg = {"k": 1.0}

        @functools.lru_cache(maxsize=None)
        def factor():
            return cfg["k"] * 2

        def step(x):
            return x * factor()

        def set_value(i):
            cfg["k"] = float(i + 2)
            if i == 2:
                factor.cache_clear()
        return wrap(step), {"change": set_value}, ones(mod)
    check(make, torch_too=True)


# ---- dataclasses and namedtuples as arguments ----------------------------------------------

@pytest.mark.parametrize("how", ["same_object_mutated", "new_object", "bound_method", "frozen"])
def test_dataclass_argument_whose_values_change(how):
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        scale: float

    def make(mod, wrap):
        cfg = Cfg()

        def step(x, c):
            if how == "bound_method":
                return c(x)
            return x * c.scale + c.shift if how != "frozen" else x * c.scale

        def batch(i):
            if how == "same_object_mutated":
                cfg.scale, cfg.shift = float(i + 1), float(i % 2)
                return mod.ones(2), cfg
            if how == "new_object":
                return mod.ones(2), Cfg(float(i + 1), float(i % 2))
            if how == "frozen":
                return mod.ones(2), Frozen(float(i + 1))
            cfg.scale = float(i + 1)
            return mod.ones(2), cfg.apply
        return wrap(step), {"change": no_change}, batch
    check(make, torch_too=True)


def test_namedtuple_argument_with_number_and_tensor_fields():
    def make(mod, wrap):
        def step(p):
            return p.a * p.b, type(p).__name__
        return wrap(step), {"change": no_change}, lambda i: (Pair(mod.full((2,), float(i)), float(i + 1)),)
    check(make, torch_too=True)


# ---- signatures: *args, **kwargs, defaults ----------------------------------------------------

def test_varargs_of_changing_length():
    def make(mod, wrap):
        def step(*xs, scale=1.0):
            return sum(xs) * scale, len(xs)
        return wrap(step), {"change": no_change}, lambda i: tuple(mod.ones(2) * k for k in range(1 + i % 3))
    check(make, torch_too=True)


def test_kwargs_given_and_omitted():
    def make(mod, wrap):
        def step(x, *, scale=2.0, **extra):
            y = x * scale
            for k in sorted(extra):
                y = y + extra[k]
            return y, sorted(extra)
        f = wrap(step)

        def call(x, i):
            if i % 3 == 0:
                return f(x)
            if i % 3 == 1:
                return f(x, scale=float(i))
            return f(x, bias=mod.ones(2), other=3.0)
        return call, {"change": no_change}, lambda i: (mod.ones(2), i)
    check(make, calls=6, torch_too=True)


def test_default_tensor_argument_written_in_place():
    def make(mod, wrap):
        def step(x, acc=mod.zeros(2)):
            acc.add_(x)
            return acc * 1
        return wrap(step), {"change": no_change, "acc": step.__defaults__[0]}, per_call(mod)
    check(make, torch_too=True)


def test_default_tensor_argument_rebound_between_calls():
    def make(mod, wrap):
        def step(x, w=mod.ones(2)):
            return x * w

        def rebind(i):
            step.__defaults__ = (mod.full((2,), float(i + 2)),)
        return wrap(step), {"change": rebind}, ones(mod)
    check(make, torch_too=True)


# ---- returned structures and aliases -----------------------------------------------------

def test_returned_namedtuple_dataclass_and_nested_containers_keep_their_types():
    def make(mod, wrap):
        def step(x):
            return {"p": Pair(x * 2, 3), "out": Out(x + 1, 7), "l": [x.sum(), (1.5, {"d": x * 0})]}
        f = wrap(step)

        def call(x):
            r = f(x)
            return (type(r["p"]).__name__, r["p"].a, r["p"].b, type(r["out"]).__name__, r["out"].y,
                    r["out"].n, r["l"])
        return call, {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


def test_returned_input_unchanged_view_and_same_tensor_twice():
    def make(mod, wrap):
        def step(x):
            y = x * 2
            return x, x[1:], y, y, x.view(2, 1)
        f = wrap(step)

        def call(x):
            a, v, y1, y2, w = f(x)
            return (a is x, v._base is x, y1 is y2, w._base is x, v.detach(), w.detach(), y1.detach())
        return call, {"change": no_change}, lambda i: (mod.arange(2.0) + i,)
    check(make, torch_too=True)


def test_returned_view_of_an_input_sees_later_writes():
    def make(mod, wrap):
        f = wrap(lambda x: x[:1])
        xs = []

        def call(x):
            v = f(x)
            x.add_(10)
            xs.append(v)
            return v
        return call, {"change": no_change, "xs": xs}, lambda i: (mod.arange(2.0) + i,)
    check(make, torch_too=True)


def test_returned_detached_input_shares_its_storage():
    def make(mod, wrap):
        f = wrap(lambda x: (x.detach(), x.detach().mul_(2), x.data))

        def call(x):
            d, m, data = f(x)
            x.add_(1)
            return d, m, x, data, d._version, data._version
        return call, {"change": no_change}, lambda i: (mod.arange(2.0) + i,)
    check(make, torch_too=True)


@pytest.mark.parametrize("holder", ["closure", "attribute", "nested", "rebound_between_calls"])
def test_returned_outside_container_is_that_object(holder):
    def make(mod, wrap):
        class Trainer:
            def __init__(self):
                self.metrics = {"seen": 0}
        stats, tr, cfg = {"seen": 0}, Trainer(), {"inner": [0]}

        def step(x):
            if holder == "attribute":
                return x * 2, tr.metrics
            if holder == "nested":
                return x * 2, cfg["inner"]
            return x * 2, stats
        f = wrap(step)

        def call(x):
            y, box = f(x)
            # the caller changes what it got back: eagerly that is the function's own container
            if isinstance(box, dict):
                box["seen"] += 1
            else:
                box[0] += 1
            return y, box is (tr.metrics if holder == "attribute" else cfg["inner"] if holder == "nested"
                              else stats), dict(stats), dict(tr.metrics), list(cfg["inner"])

        def rebind(i):
            nonlocal stats
            if holder == "rebound_between_calls":
                stats = {"seen": 10 * i}
        return call, {"change": rebind}, per_call(mod)
    check(make, torch_too=True)


def test_returned_list_argument_is_the_callers_list():
    def make(mod, wrap):
        f = wrap(lambda x, xs: (x * 2, xs))
        xs = [1, 2]
        return (lambda x: f(x, xs)[1] is xs), {"change": no_change}, per_call(mod)
    check(make)


def test_returned_containers_inside_arguments_are_the_callers():
    # the program is given the flattened arguments; what the function returns of the caller's
    # lists and dicts (at any depth, tensors inside) is the caller's object after every call
    def make(mod, wrap):
        f = wrap(lambda x, d, kw=None: (x * 2, d["inner"], [d, kw], {"again": d["inner"]}))
        boxes = {}

        def call(x):
            d = boxes.setdefault(len(boxes) % 2, {"inner": [x.sum(), 3], "w": mod.ones(2)})
            kw = {"k": [1]}
            y, inner, pair, again = f(x, d, kw=kw)
            return y, inner is d["inner"], pair[0] is d, pair[1] is kw, again["again"] is d["inner"], inner[0]
        return call, {"change": no_change}, per_call(mod)
    check(make)


# ---- in-place ops on arguments -----------------------------------------------------------

@pytest.mark.parametrize("op", ["add_", "setitem", "copy_", "fill_slice", "t_", "resize_", "data_assign",
                                "transpose_inplace_then_write", "unsqueeze_", "as_strided_"])
def test_inplace_op_on_an_argument(op):
    def make(mod, wrap):
        xs = {}

        def step(x, y):
            if op == "add_":
                x.add_(1)
            elif op == "setitem":
                x[0] = 2
            elif op == "copy_":
                x.copy_(y)
            elif op == "fill_slice":
                x[:, 1].fill_(-1)
            elif op == "t_":
                x.t_()
            elif op == "resize_":
                x.resize_(4)
            elif op == "data_assign":
                x.data = y * 3
            elif op == "transpose_inplace_then_write":
                x.t_()[0].mul_(5)
            elif op == "unsqueeze_":
                x.unsqueeze_(0)
            else:
                x.as_strided_((2,), (2,))
            return x.sum() * 1, tuple(x.shape)

        def batch(i):
            xs[i] = mod.arange(4.0).reshape(2, 2) + i
            return xs[i], mod.full((2, 2), float(-i))
        return wrap(step), {"change": no_change, "inputs": xs}, batch
    check(make, torch_too=True)


@pytest.mark.parametrize("op", ["reshape_then_write", "flatten_then_write", "view_or_error"])
def test_layout_decided_ops_on_view_arguments_whose_contiguity_changes(op):
    def make(mod, wrap):
        bases = {}

        def step(x):
            if op == "view_or_error":
                try:
                    return x.view(-1) * 2
                except RuntimeError:
                    return "view refused"
            y = x.reshape(-1) if op == "reshape_then_write" else x.flatten()
            y.add_(1)
            return y.sum()

        def batch(i):
            bases[i] = b = mod.arange(8.0) + i
            # 2x2 views: a contiguous one (the first 4 elements), then a non-contiguous one
            # (two columns of a 2x4 view), then a contiguous one again
            return (b[:4].view(2, 2) if i in (0, 1, 3) else b.view(2, 4)[:, :2],)
        return wrap(step), {"change": no_change, "bases": bases}, batch
    check(make, calls=5, torch_too=True)


@pytest.mark.parametrize("alias", ["same_twice", "view_and_base", "two_views_same_elems"])
def test_aliased_arguments_both_written(alias):
    def make(mod, wrap):
        bases = {}

        def step(a, b):
            a.mul_(2)
            b.add_(a.sum())
            return a * 1, b * 1

        def batch(i):
            bases[i] = t = mod.arange(4.0) + i
            if alias == "same_twice":
                return t, t
            if alias == "view_and_base":
                return t[1:3], t
            return t[:2], t.view(2, 2)[0]
        return wrap(step), {"change": no_change, "bases": bases}, batch
    check(make, torch_too=True)


def test_dict_keyed_by_the_argument_tensor():
    def make(mod, wrap):
        weights = {}

        def step(x):
            return x * weights.get(x, 0.0)

        def batch(i):
            x = mod.ones(2)
            weights[x] = float(i + 1)         # the caller registers each input before the call
            return (x,)
        return wrap(step), {"change": no_change}, batch
    check(make, torch_too=True)


def test_id_of_the_argument_returned():
    # id(x) of an argument inside the trace is its stand-in's: a returned one is a graph break
    def make(mod, wrap):
        f = wrap(lambda x: (x * 2, id(x)))

        def call(x):
            y, k = f(x)
            return y, k == id(x)
        return call, {"change": no_change}, ones(mod)
    check(make)


# ---- numbers that become tensors; shapes; flags ------------------------------------------

def test_tensor_from_a_step_counter_on_an_object():
    def make(mod, wrap):
        class Trainer:
            def __init__(self):
                self.step = 0

            def run(self, x):
                self.step += 1
                return x * mod.tensor(float(self.step))
        t = Trainer()
        return wrap(t.run), {"change": no_change}, ones(mod)
    check(make, torch_too=True)


def test_tensor_from_a_counter_bumped_outside():
    def make(mod, wrap):
        class Trainer:
            step = 0

        t = Trainer()

        def run(x):
            return x * mod.tensor(t.step) + mod.tensor([t.step, 1]).sum()

        def bump(i):
            t.step += 1
        return wrap(run), {"change": bump}, ones(mod)
    check(make, torch_too=True)


def test_len_and_shape_branches_with_new_shapes():
    def make(mod, wrap):
        def step(x):
            if len(x) > 2:
                return x[:2] * x.shape[-1]
            return x.sum(0, keepdim=True) * x.numel()
        return wrap(step), {"change": no_change}, lambda i: (mod.ones(1 + i, 1 + i % 2),)
    check(make, calls=5, torch_too=True)


def test_requires_grad_flipped_on_the_input_between_calls():
    def make(mod, wrap):
        w = mod.nn.Parameter(mod.ones(2))
        f = wrap(lambda x: (x * w).sum())
        xs = {}

        def call(x, i):
            xs[i] = x.requires_grad_(i % 2 == 1)
            y = f(x)
            y.backward()
            return y.detach(), y.requires_grad, x.grad
        return call, {"change": no_change, "w": w}, lambda i: (mod.full((2,), float(i)), i)
    check(make, torch_too=True)


@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad", "set_grad_enabled_flag", "set_grad_enabled_closure"])
def test_grad_mode_contexts_inside(ctx):
    def make(mod, wrap):
        w = mod.nn.Parameter(mod.ones(2))
        flag = [True]

        def step(x, on):
            if ctx == "no_grad":
                with mod.no_grad():
                    y = x * w
            elif ctx == "enable_grad":
                with mod.enable_grad():
                    y = x * w
            elif ctx == "set_grad_enabled_flag":
                with mod.set_grad_enabled(on):
                    y = x * w
            else:
                with mod.set_grad_enabled(flag[0]):
                    y = x * w
            return y.requires_grad, (y.detach() * 1)

        def call(x, on, i):
            if ctx == "enable_grad" and i % 2:
                with mod.no_grad():
                    return f(x, on)
            return f(x, on)
        f = wrap(step)

        def set_flag(i):
            flag[0] = i % 2 == 1
        return call, {"change": set_flag}, lambda i: (mod.ones(2), i % 2 == 0, i)
    check(make, calls=5, torch_too=True)


SETTINGS = {   # set inside, read and reset by the caller after every call
    "printoptions": (lambda m: m.set_printoptions(precision=2), lambda m: repr(m.tensor([1.23456])),
                     lambda m: m.set_printoptions(profile="default")),
    "matmul_precision": (lambda m: m.set_float32_matmul_precision("high"), lambda m: m.get_float32_matmul_precision(),
                         lambda m: m.set_float32_matmul_precision("highest")),
    "deterministic": (lambda m: m.use_deterministic_algorithms(True), lambda m: m.are_deterministic_algorithms_enabled(),
                      lambda m: m.use_deterministic_algorithms(False)),
    "num_threads": (lambda m: m.set_num_threads(3), lambda m: m.get_num_threads(), lambda m: m.set_num_threads(1)),
    "anomaly": (lambda m: m.autograd.set_detect_anomaly(True), lambda m: m.is_anomaly_enabled(),
                lambda m: m.autograd.set_detect_anomaly(False)),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_process_setting_changed_inside_every_call(setting):
    set_inside, read, reset = SETTINGS[setting]

    def make(mod, wrap):
        seen = []

        def step(x):
            set_inside(mod)
            return x * 2

        def observe_and_reset(i):
            seen.append(read(mod))
            reset(mod)
        return wrap(step), {"change": observe_and_reset, "seen": seen}, ones(mod)
    threads = tracegrad.get_num_threads()
    try:
        check(make, torch_too=setting != "printoptions")     # torch's repr differs in spacing
    finally:
        reset(tracegrad)
        tracegrad.set_num_threads(threads)      # torch's is 1 again (the conftest's)


# ---- random numbers, seeds, RNG state ----------------------------------------------------

def test_randn_and_the_rng_state_returned():
    def make(mod, wrap):
        def step(x):
            y = x + mod.randn(2)
            return y, mod.get_rng_state()
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)


def test_seed_from_an_argument_inside():
    def make(mod, wrap):
        def step(x, seed):
            mod.manual_seed(seed)
            return x + mod.rand(2), mod.initial_seed()
        return wrap(step), {"change": no_change}, lambda i: (mod.ones(2), i % 2)
    check(make)


def test_fresh_seed_inside_is_new_every_call():
    def run(wrap):
        f = wrap(lambda x: (tracegrad.seed(), x + tracegrad.rand(1)))
        outs = [f(tracegrad.zeros(1)) for _ in range(CALLS)]
        return [s for s, _ in outs], [float(y) for _, y in outs], tracegrad.initial_seed(), f
    seeds, values, last, f = run(tracegrad.compile)
    assert len(set(seeds)) == CALLS and len(set(values)) == CALLS and last == seeds[-1], (seeds, values)
    assert f.stats["graph_breaks"], f.stats


def test_user_generator_argument_reseeded_between_calls():
    def make(mod, wrap):
        g, other = mod.Generator().manual_seed(3), mod.Generator().manual_seed(3)
        f = wrap(lambda x, gen: x + mod.randn(2, generator=gen))

        def call(x, i):
            y = f(x, other if i == 4 else g)
            return y, g.initial_seed(), g.get_state()     # the draws differ from torch's: no torch run

        def reseed(i):
            if i == 2:
                g.manual_seed(3)
        return call, {"change": reseed}, lambda i: (mod.zeros(2), i)
    check(make, calls=5)


def test_set_rng_state_inside_replays_a_draw():
    def make(mod, wrap):
        def step(x):
            s = mod.get_rng_state()
            a = mod.rand(2)
            mod.set_rng_state(s)
            b = mod.rand(2)
            return x + a - b, a
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)


def test_fork_rng_inside_leaves_the_global_generator():
    def make(mod, wrap):
        def step(x):
            with mod.random.fork_rng():
                mod.manual_seed(5)
                a = mod.rand(2)
            return x + a + mod.rand(2)
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)


@pytest.mark.parametrize("holder", ["closure", "attribute", "numpy_attribute"])
def test_python_random_generator_objects_draw_every_call(holder):
    class Augment:
        def __init__(self):
            self.rng = np.random.default_rng(0) if holder == "numpy_attribute" else random.Random(0)

        def __call__(self, x):
            return x + self.rng.random()

    def run(wrap):
        r, aug = random.Random(0), Augment()
        f = wrap((lambda x: x + r.random()) if holder == "closure" else (lambda x: aug(x)))
        return [f(tracegrad.zeros(1)).item() for _ in range(CALLS)], f
    eager, _ = run(lambda f: f)
    comp, f = run(tracegrad.compile)
    assert comp == pytest.approx(eager)
    assert f.stats["graph_breaks"], f.stats


@pytest.mark.parametrize("clock", ["time_module", "bare_function", "datetime_now"])
def test_clock_read_inside_is_read_every_call(clock):
    import datetime
    perf_counter = time.perf_counter

    def read():
        if clock == "time_module":
            return time.perf_counter()
        if clock == "bare_function":
            return perf_counter()
        return datetime.datetime.now().timestamp()
    f = tracegrad.compile(lambda x: x * 0 + read())
    stamps = []
    for _ in range(CALLS):
        stamps.append(f(tracegrad.zeros(1, dtype=tracegrad.float64)).item())
        time.sleep(0.002)
    assert all(b > a for a, b in zip(stamps, stamps[1:])), stamps
    reason = f.stats["graph_breaks"][0][0]
    assert "clock" in reason or "time.perf_counter" in reason, reason


# ---- exceptions on some calls ------------------------------------------------------------

def test_exception_raised_on_some_calls_leaves_state_as_eager():
    def make(mod, wrap):
        w = mod.nn.Parameter(mod.ones(2))
        opt = mod.optim.SGD([w], lr=0.1)
        log = []
        f = wrap(lambda x, bad: _maybe_raise(mod, w, opt, log, x, bad))

        def call(x, bad):
            try:
                return f(x, bad)
            except ValueError as e:
                return str(e)
        return call, {"change": no_change, "w": w, "log": log}, lambda i: (mod.ones(2) * i, i == 2)
    check(make, calls=5, torch_too=True)


def _maybe_raise(mod, w, opt, log, x, bad):
    opt.zero_grad()
    loss = (x * w).sum()
    loss.backward()
    opt.step()
    log.append(len(log))
    if bad:
        raise ValueError("bad batch")
    return loss.detach()


def test_exception_from_a_shape_check_on_a_new_shape():
    def make(mod, wrap):
        f = wrap(lambda x: x.view(2, 2))

        def call(x):
            try:
                return f(x)
            except RuntimeError:
                return "raised"
        return call, {"change": no_change}, lambda i: (mod.ones(4 if i != 2 else 3),)
    check(make, calls=5, torch_too=True)


def test_backward_twice_through_a_compiled_output_with_retain_graph():
    def make(mod, wrap):
        w = mod.nn.Parameter(mod.ones(2))
        f = wrap(lambda x: (x * w * w).sum())

        def call(x):
            w.grad = None
            y = f(x)
            y.backward(retain_graph=True)
            y.backward()
            try:
                y.backward()                  # the graph is freed now, as eagerly
                third = "ran"
            except RuntimeError:
                third = "raised"
            return w.grad * 1, third, mod.autograd.grad(f(x), w)[0]
        return call, {"change": no_change, "w": w}, per_call(mod)
    check(make, torch_too=True)


# ---- recursion and nesting ---------------------------------------------------------------

def test_recursion_over_a_nested_structure_of_tensors():
    def make(mod, wrap):
        def total(t):
            if isinstance(t, (list, tuple)):
                return sum(total(e) for e in t)
            if isinstance(t, dict):
                return sum(total(v) for v in t.values())
            return t.sum()

        def step(tree):
            return total(tree)
        return wrap(step), {"change": no_change}, lambda i: (
            [mod.ones(2) * i, {"a": (mod.ones(1), mod.ones(3) * 2)}, [mod.ones(1)] * (1 + i % 2)],)
    check(make, torch_too=True)


def test_compiled_function_calling_another_with_its_own_side_effect():
    def make(mod, wrap):
        log = []
        inner = wrap(lambda x: (log.append(len(log)), x * 2)[1])

        def step(x):
            return inner(x) + inner(x * 3)
        return wrap(step), {"change": no_change, "log": log}, per_call(mod)
    check(make, torch_too=True)


# ---- compiled modules, methods, lambdas; hooks after compile ------------------------------

@pytest.mark.parametrize("how", ["compile_of_module", "module_compile_method"])
def test_hooks_registered_after_the_module_is_compiled(how):
    def make(mod, wrap):
        net = linear(mod)
        seen = []
        compiled = net
        if wrap(len) is not len:          # the compiled run
            if how == "compile_of_module":
                compiled = wrap(net)
            else:
                net.compile()             # Module.compile(): in place

        def add_hook(i):
            if i == 1:
                net.register_forward_hook(lambda m, a, out: seen.append(out.detach().sum().item()))
            if i == 2:
                net.register_forward_pre_hook(lambda m, a: (a[0] * 2,))
        return (lambda x: compiled(x).detach()), {"change": add_hook, "seen": seen, "net": net}, per_call(mod)
    check(make, torch_too=True)


def test_compiled_bound_method_of_an_object_changed_between_calls():
    def make(mod, wrap):
        class Scaler:
            def __init__(self):
                self.k = 1.0
                self.w = mod.ones(2)

            def run(self, x):
                return x * self.k + self.w

        s = Scaler()

        def set_value(i):
            s.k = float(i + 2)
            s.w = mod.full((2,), float(i))
        return wrap(s.run), {"change": set_value}, ones(mod)
    check(make, torch_too=True)


def test_compiled_lambda_over_a_rebound_closure():
    def make(mod, wrap):
        k = 1.0
        f = wrap(lambda x: x * k)

        def rebind(i):
            nonlocal k
            k = float(i + 2)
        return f, {"change": rebind}, ones(mod)
    check(make, torch_too=True)


def test_compiled_module_with_call_overridden():
    def make(mod, wrap):
        class Doubler(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.calls = 0
                self.lin = linear(mod)

            def forward(self, x):
                return self.lin(x)

            def __call__(self, x):
                self.calls += 1
                return super().__call__(x) * 2 + self.calls
        net = Doubler()
        compiled = wrap(net)
        return (lambda x: (compiled(x).detach(), net.calls)), {"change": no_change, "net": net}, ones(mod)
    check(make, torch_too=True)


# ---- host values: tolist, numpy, item; printing, logging; type checks --------------------

def test_tolist_numpy_item_in_return_values():
    def make(mod, wrap):
        def step(x):
            y = x * 2
            return y.tolist(), y.numpy().copy(), y.sum().item(), y.detach().numpy()
        return wrap(step), {"change": no_change}, per_call(mod)
    check(make, torch_too=True)


def test_print_inside_prints_every_call(capsys):
    def make(mod, wrap):
        def step(x):
            print("step", x.shape[0])
            return x * 2
        return wrap(step), {"change": no_change}, ones(mod)
    check(make)
    assert capsys.readouterr().out.count("step 2") == 2 * CALLS


def test_logging_through_a_handler_every_call():
    class Keep(logging.Handler):
        def __init__(self):
            super().__init__()
            self.records = []

        def emit(self, record):
            self.records.append(record.getMessage())
    logger = logging.getLogger("adversarial_more")
    logger.propagate = False
    logger.setLevel(logging.INFO)

    def run(wrap):
        h = Keep()
        logger.addHandler(h)
        try:
            f = wrap(lambda x: (logger.info("shape %s", tuple(x.shape)), x * 2)[1])
            for i in range(CALLS):
                f(tracegrad.ones(2))
        finally:
            logger.removeHandler(h)
        return h.records
    assert run(tracegrad.compile) == run(lambda f: f) == ["shape (2,)"] * CALLS


@pytest.mark.parametrize("how", ["open_append", "pathlib_read_write"])
def test_file_opened_inside_every_call(how, tmp_path):
    path = tmp_path / "counter.txt"

    def make(mod, wrap):
        path.write_text("0")

        def step(x):
            if how == "open_append":
                with open(path, "a") as f:
                    f.write("1")
                return x * 2
            n = len(path.read_text())            # what an earlier call wrote decides this one
            path.write_text("1" * (n + 1))
            return x * n

        def observe(i):
            lengths.append(len(path.read_text()))
        lengths = []
        return wrap(step), {"change": observe, "lengths": lengths}, ones(mod)
    comp = check(make)
    assert comp.state["lengths"] == [i + 2 for i in range(CALLS)], comp.state["lengths"]
    assert "file is opened" in comp.step.stats["graph_breaks"][0][0]


def test_environment_variable_written_inside(monkeypatch):
    monkeypatch.setenv("TRACEGRAD_ADVERSARIAL_N", "0")

    def make(mod, wrap):
        import os
        os.environ["TRACEGRAD_ADVERSARIAL_N"] = "0"
        seen = []

        def step(x):
            n = int(os.environ["TRACEGRAD_ADVERSARIAL_N"]) + 1
            os.environ["TRACEGRAD_ADVERSARIAL_N"] = str(n)
            return x * n

        def observe(i):
            seen.append(os.environ["TRACEGRAD_ADVERSARIAL_N"])
        return wrap(step), {"change": observe, "seen": seen}, ones(mod)
    check(make)


@pytest.mark.parametrize("check_kind", ["isinstance", "type_is"])
def test_type_checks_on_an_argument_whose_type_changes(check_kind):
    def make(mod, wrap):
        def step(x, k):
            if check_kind == "isinstance":
                return x * (10 if isinstance(k, float) else 20) + (k if not isinstance(k, mod.Tensor) else k * 3)
            return x * (10 if type(k) is int else 20) + k

        def batch(i):
            return mod.ones(2), [1, 2.0, mod.ones(2), True][i % 4]
        return wrap(step), {"change": no_change}, batch
    check(make, calls=5, torch_too=True)


def test_contextmanager_with_side_effects_inside():
    def make(mod, wrap):
        log = []

        @contextlib.contextmanager
        def tracked(name):
            log.append("enter " + name)
            try:
                yield
            finally:
                log.append("exit " + name)

        def step(x):
            with tracked("fwd"):
                return x * 2
        return wrap(step), {"change": no_change, "log": log}, ones(mod)
    check(make, torch_too=True)


def test_numpy_array_argument_written_inside():
    def make(mod, wrap):
        arr = np.zeros(2, dtype="float32")

        def step(x, a):
            a += 1
            return x * mod.from_numpy(a.copy())
        return wrap(step), {"change": no_change, "arr": arr}, lambda i: (mod.ones(2), arr)
    check(make, torch_too=True)


def test_what_the_new_checks_leave_compiled():
    """What the checks above must not turn into graph breaks: an object whose ``__getattr__``
    raises for names it lacks (``__wrapped__``, ``cache_info``), a contiguous view argument
    reshaped, a tensor read from a closure, the ``time`` module named for something else than a
    clock, a dict from the closure returned."""
    def make(mod, wrap):
        class Cfg:
            def __init__(self):
                self._values = {"scale": 2.0}

            def __getattr__(self, name):
                return self._values[name]
        cfg, w, stats = Cfg(), mod.ones(4), {"calls": 0}

        def step(x):
            y = x.reshape(-1) * cfg.scale * w
            return y, stats, time.struct_time is not None
        base = mod.arange(8.0)
        return wrap(step), {"change": no_change}, lambda i: (base[:4].view(2, 2) if i % 2 else base[4:].view(2, 2),)
    comp = check(make, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [] and comp.step.stats["traces"] == 1, comp.step.stats


def test_overlapping_views_read_only_run_one_program():
    # build-nanogpt's DataLoaderLite: x = buf[:-1].view(B, T), y = buf[1:].view(B, T), views of
    # one buffer; a step that only reads them is one program (before: every call ran eagerly)
    def make(mod, wrap):
        emb = mod.nn.Embedding(10, 3)
        np_init(emb, mod, 5)
        bufs = {}

        def step(x, y):
            return mod.nn.functional.cross_entropy(emb(x).view(-1, 3), (y % 3).view(-1))

        def batch(i):
            bufs[i] = buf = (mod.arange(9) * (i + 1)) % 10
            return buf[:-1].view(2, 4), buf[1:].view(2, 4)
        return wrap(step), {"change": no_change, "bufs": bufs}, batch
    comp = check(make, calls=4, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [] and comp.step.stats["traces"] == 1, comp.step.stats


def test_program_writing_an_argument_then_called_with_overlapping_views():
    # traced with separate arguments (it writes into one), then called with views of one tensor:
    # that call runs eagerly, as the write must reach the other view
    def make(mod, wrap):
        bases = {}

        def step(a, b):
            a.add_(1)
            return b * 2

        def batch(i):
            bases[i] = t = mod.arange(4.0) + i
            return (t[:2], t[1:3]) if i >= 2 else (t[:2], (t + 10)[1:3])
        return wrap(step), {"change": no_change, "bases": bases}, batch
    comp = check(make, calls=4, torch_too=True)
    assert comp.step.stats["traces"] == 1 and comp.step.stats["graph_breaks"], comp.step.stats
