"""Round 48: today's merges under attack, compiled against eager (and torch where it has the API).

- NOTE [argument attributes] (compiler.py, region.py): attributes on tensor arguments holding a
  new object every call, NaN, tensors, set on parameters and on data, deleted between calls,
  written by the function (NOTE [attributes set on arguments]), ``.grad`` on results.
- NOTE [module attributes' methods] (pystate.py): plain objects a module holds whose methods
  draw from a NumPy / random generator, read a counter or change themselves; objects in lists
  and dicts on the module; classes made by ``exec``.
- DataLoader loops inside a compiled function (the base seed drawn, read only with workers).
- Warnings from compiled backward programs (NOTE [warnings in a trace] rule 6, KeptBackward).

Fixes:
- An object set on a tensor argument (``x.box = Box()``) keyed the program by a strong
  reference: every object ever set stayed alive in the cache keys (a new one each call: eight
  kept). Keyed by a weak identity now; a dead object's key matches nothing (``compiler.py``).
- A NaN attribute was keyed by identity (``nan != nan``): ``x.s = float('nan')`` each call traced
  a new program up to the recompile limit. Keyed as NaN (``compiler.py``).
- What the trace read from such an object (``x.box.v``, also through a helper) or from a list
  or dict there (``x.cfg["k"]``) was unguarded: changed between calls it was frozen at the
  traced value; an append to ``x.log`` was not repeated. Guarded (and its changes seen) as an
  argument object's where the code names the attribute (``trace._attribute_objects``).
- An object reached two ways (a closure cell of the module's ``__init__`` and ``self.helper``
  whose ``factor()`` its ``forward`` calls) was guarded only for the first way's names:
  ``helper.n`` changed between calls was frozen (``guards._guard_object``).
- Plain objects in a module's list or dict (``self.hs = [Counter(), NumpyScale()]``) were no
  state: their counters and NumPy draws were frozen into the program (``pystate.py``, NOTE
  [module attributes' methods]); now the call runs eagerly as for one held directly.

Left (strict xfail): an attribute the function never reads still keys the program (torch
guards only what the frame reads), so a new object each call retraces until the recompile limit
and then runs eagerly.
"""
import gc
import random
import warnings
import weakref

import numpy as np
import pytest

import tracegrad

from ._harness import data, np_init, run_three_ways as _three_ways, small_mlp, snapshot, traces

CALLS = 4


def run_three_ways(run, **kw):
    """The harness's three-way run on the snapshots of what ``run`` returns."""
    return _three_ways(lambda mod, wrap: snapshot(run(mod, wrap)), **kw)


def _torch():
    return pytest.importorskip("torch")


class Box:
    def __init__(self, v=1.0):
        self.v = v


# ---- NOTE [argument attributes] ------------------------------------------------------------

def test_new_object_attribute_each_call_kept_alive_by_nothing():
    f = tracegrad.compile(lambda x: x * 2)
    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(12):
            x = tracegrad.ones(3)
            b = Box()
            refs.append(weakref.ref(b))
            x.obj = b
            np.testing.assert_allclose(f(x).numpy(), 2 * np.ones(3))
            del x, b
    gc.collect()
    assert [r() for r in refs if r() is not None] == []
    assert traces(f) <= 8          # bounded by the recompile limit


@pytest.mark.xfail(strict=True, reason="an attribute the function never reads still keys the program (torch "
                   "guards only what the frame reads): a new object each call retraces until recompile_limit")
def test_unread_object_attribute_no_retrace():
    torch = _torch()
    from torch._dynamo.testing import CompileCounter
    cnt = CompileCounter()
    tf = torch.compile(lambda x: x * 2, backend=cnt)
    f = tracegrad.compile(lambda x: x * 2)
    for _ in range(4):
        tx, x = torch.ones(3), tracegrad.ones(3)
        tx.obj, x.obj = Box(), Box()
        tf(tx), f(x)
    assert traces(f) == cnt.frame_count == 1


def test_object_attribute_read_follows_its_value():
    # the same object, changed between calls: what the trace read from it is not frozen
    def run(mod, wrap):
        f = wrap(lambda x: x * x.box.v)
        b = Box(1.0)
        out = []
        for i in range(CALLS):
            x = mod.ones(2)
            x.box = b
            b.v = float(i + 1)
            out.append(f(x))
        return out
    run_three_ways(run)


def _read_box(t):
    return t.box.v


def test_object_attribute_read_by_helper():
    def run(mod, wrap):
        f = wrap(lambda x: x * _read_box(x))
        b = Box(1.0)
        x = mod.ones(2)
        x.box = b
        out = []
        for i in range(CALLS):
            b.v = float(i) - 1.5
            out.append(f(x))
        return out
    run_three_ways(run)


def test_object_attribute_replaced_between_calls():
    def run(mod, wrap):
        f = wrap(lambda x: x * x.box.v)
        x = mod.ones(2)
        out = []
        for i in range(CALLS):
            x.box = Box(float(i % 2) + 2.0)
            out.append(f(x))
        return out
    run_three_ways(run)


@pytest.mark.parametrize("holder", ["list", "dict"])
def test_container_attribute_changed_in_place(holder):
    def run(mod, wrap):
        f = wrap(lambda x: x * x.cfg[0] if holder == "list" else x * x.cfg["k"])
        cfg = [1.0] if holder == "list" else {"k": 1.0}
        x = mod.ones(2)
        x.cfg = cfg
        out = []
        for i in range(CALLS):
            cfg[0 if holder == "list" else "k"] = float(i) + 0.5
            out.append(f(x))
        return out
    run_three_ways(run)


def test_function_appends_to_attribute_list():
    def run(mod, wrap):
        def step(x):
            x.log.append(len(x.log))
            x.box.v += 1.0
            return x * len(x.log)
        f = wrap(step)
        x = mod.ones(2)
        x.log, x.box = [], Box(0.0)
        out = [f(x) for _ in range(CALLS)]
        return out + [list(x.log), x.box.v]
    run_three_ways(run)


def test_nan_attribute_one_program():
    f = tracegrad.compile(lambda x: x * x.s)
    for _ in range(CALLS):
        x = tracegrad.ones(2)
        x.s = float("nan")
        assert np.isnan(f(x).numpy()).all()
    assert traces(f) == 1


def _scalar_attribute_run(fn, values):
    def run(mod, wrap):
        f = wrap(fn)
        out = []
        for s in values:
            x = mod.zeros(2)
            x.s = s
            out.append(f(x))
        return out
    return run


def test_nan_then_number_attribute():
    run_three_ways(_scalar_attribute_run(lambda x: x + x.s, (float("nan"), 1.0, float("nan"), 2.0)))


def test_string_nan_is_not_float_nan():
    run_three_ways(_scalar_attribute_run(lambda x: x + (1.0 if isinstance(x.s, str) else 2.0),
                                         ("nan", float("nan"), "nan", float("nan"))))


def test_tensor_attribute_values_followed():
    def run(mod, wrap):
        f = wrap(lambda x: x * x.t)
        out = []
        for i in range(CALLS):
            x = mod.ones(2)
            x.t = mod.full((2,), float(i))
            out.append(f(x))
        return out
    run_three_ways(run)


def test_same_tensor_attribute_changed_in_place():
    def run(mod, wrap):
        f = wrap(lambda x: x * x.t)
        t = mod.ones(2)
        x = mod.ones(2)
        x.t = t
        out = []
        for i in range(CALLS):
            t.add_(1.0)
            out.append(f(x))
        return out
    run_three_ways(run)


def test_attribute_deleted_between_calls():
    def run(mod, wrap):
        f = wrap(lambda x: x + (x.a if hasattr(x, "a") else -1.0))
        x = mod.ones(2)
        out = []
        for i in range(CALLS):
            if i % 2 == 0:
                x.a = float(i)
            else:
                del x.a
            out.append(f(x))
        return out
    run_three_ways(run)


def test_attribute_on_parameter_vs_data():
    def run(mod, wrap):
        mod.manual_seed(0)
        lin = small_mlp(mod)
        opt = mod.optim.SGD(lin.parameters(), lr=0.1)
        w = lin[0].weight

        def step(x):
            opt.zero_grad()
            scale = getattr(w, "scale", 1.0) * getattr(x, "scale", 1.0)
            loss = (lin(x) * scale).sum()
            loss.backward()
            opt.step()
            return loss
        f = wrap(step)
        out = []
        for i in range(CALLS):
            x = data(mod, i, 5, 4)
            if i == 1:
                w.scale = 2.0
            if i == 2:
                x.scale = 0.5
            out.append([f(x).detach(), w.detach().clone()])
        return out
    run_three_ways(run)


def test_function_writes_attribute_on_argument():
    def run(mod, wrap):
        def step(x, n):
            x.seen = n
            x.count = getattr(x, "count", 0) + 1
            return x * n
        f = wrap(step)
        x = mod.ones(2)
        out = []
        for i in range(CALLS):
            out.append([f(x, i), x.seen, x.count])
        return out
    run_three_ways(run)


def test_function_deletes_attribute_on_argument():
    def run(mod, wrap):
        def step(x):
            if hasattr(x, "flag"):
                del x.flag
                return x + 1
            return x - 1
        f = wrap(step)
        x = mod.ones(2)
        out = []
        for i in range(CALLS):
            if i % 2 == 0:
                x.flag = True
            out.append([f(x), hasattr(x, "flag")])
        return out
    run_three_ways(run)


def test_grad_set_on_returned_tensor():
    def run(mod, wrap):
        def step(x):
            y = (x * 2).detach()
            y.grad = mod.ones_like(y)
            return y
        f = wrap(step)
        out = []
        for i in range(CALLS):
            y = f(data(mod, i, 3))
            out.append([y, y.grad])
        return out
    run_three_ways(run)


def test_attribute_on_result_copied_from_argument():
    def run(mod, wrap):
        def step(x):
            y = x + 1
            y.tag = x.tag
            return y
        f = wrap(step)
        out = []
        for i in range(CALLS):
            x = mod.ones(2)
            x.tag = f"t{i % 2}"
            out.append([f(x), f(x).tag])
        return out
    run_three_ways(run)


# ---- NOTE [module attributes' methods] ------------------------------------------------------

def _module_with(mod, helper):
    class Net(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = mod.nn.Linear(3, 2)
            self.helper = helper

        def forward(self, x):
            return self.lin(x) * self.helper.factor()
    return np_init(Net(), mod)


class NumpyScale:
    def __init__(self):
        self.rng = np.random.RandomState(0)

    def factor(self):
        return float(self.rng.uniform(0.5, 1.5))


class RandomScale:
    def __init__(self):
        self.rng = random.Random(3)

    def factor(self):
        return self.rng.random()


class Counter:
    def __init__(self):
        self.n = 0

    def factor(self):
        self.n += 1
        return float(self.n)


class ReadCounter:
    def __init__(self):
        self.n = 1

    def factor(self):
        return float(self.n)


@pytest.mark.parametrize("helper", [NumpyScale, RandomScale, Counter])
def test_module_helper_method_state(helper):
    def run(mod, wrap):
        net = _module_with(mod, helper())
        f = wrap(net)
        x = mod.ones(1, 3)
        return [f(x) for _ in range(CALLS)] + [net.helper.factor()]
    run_three_ways(run, torch_rtol=1e-4)


def test_module_helper_counter_changed_outside():
    def run(mod, wrap):
        net = _module_with(mod, ReadCounter())
        f = wrap(net)
        x = mod.ones(1, 3)
        out = []
        for i in range(CALLS):
            net.helper.n = i + 2
            out.append(f(x))
        return out
    run_three_ways(run)


def test_helpers_in_list_and_dict_on_module():
    def run(mod, wrap):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = mod.nn.Linear(3, 2)
                self.hs = [Counter(), NumpyScale()]
                self.by = {"c": Counter()}

            def forward(self, x):
                return self.lin(x) * self.hs[0].factor() + self.hs[1].factor() - self.by["c"].factor()
        net = np_init(Net(), mod)
        f = wrap(net)
        x = mod.ones(1, 3)
        return [f(x) for _ in range(CALLS)] + [net.hs[0].n, net.by["c"].n]
    run_three_ways(run)


_EXEC_SRC = """
class Jitter:
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.calls = 0
    def factor(self):
        self.calls += 1
        return float(self.rng.randn()) + self.calls
"""


def test_exec_defined_helper_class():
    def run(mod, wrap):
        ns = {"np": np}
        exec(compile(_EXEC_SRC, "<round48>", "exec"), ns)
        net = _module_with(mod, ns["Jitter"](1))
        f = wrap(net)
        x = mod.ones(1, 3)
        return [f(x) for _ in range(CALLS)] + [net.helper.calls]
    run_three_ways(run)


# ---- DataLoader loops in a compiled function -------------------------------------------------

def _loader_epoch(mod, wrap, **loader_kw):
    ds = mod.utils.data.TensorDataset(mod.arange(10.0).reshape(10, 1), mod.arange(10))
    mod.manual_seed(0)
    lin = mod.nn.Linear(1, 1)
    with mod.no_grad():
        lin.weight.fill_(0.5)
        lin.bias.fill_(0.1)
    opt = mod.optim.SGD(lin.parameters(), lr=0.01)
    loader = mod.utils.data.DataLoader(ds, **loader_kw)

    def epoch():
        total = 0.0
        order = []
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((lin(xb).squeeze(1) - yb.float()) ** 2).mean()
            loss.backward()
            opt.step()
            total = total + loss.detach()
            order.append(yb)
        return total, order
    f = wrap(epoch)
    out = [f() for _ in range(2)]
    return out + [lin.weight.detach().clone(), mod.get_rng_state()[:8].clone(), mod.rand(2)]


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, shuffle=True),
                                dict(batch_size=4, shuffle=True, drop_last=True)],
                         ids=["plain", "shuffle", "drop_last"])
def test_dataloader_epochs(kw):
    run_three_ways(lambda mod, wrap: _loader_epoch(mod, wrap, **kw), torch_too=False)


def test_dataloader_shuffle_with_generator():
    def run(mod, wrap):
        g = mod.Generator().manual_seed(7)
        out = _loader_epoch(mod, wrap, batch_size=3, shuffle=True, generator=g)
        return out + [g.get_state()[:8].clone()]
    run_three_ways(run, torch_too=False)


def test_dataloader_with_sampler():
    def run(mod, wrap):
        s = mod.utils.data.RandomSampler(range(10), num_samples=6)
        return _loader_epoch(mod, wrap, batch_size=2, sampler=s)
    run_three_ways(run, torch_too=False)


@pytest.mark.parametrize("kw", [dict(batch_size=3, num_workers=2), dict(batch_size=3, shuffle=True, num_workers=2)],
                         ids=["workers", "workers_shuffle"])
def test_dataloader_with_workers(kw):
    # with workers the base seed is read (each worker's seed): drawn the same, compiled or not
    run_three_ways(lambda mod, wrap: _loader_epoch(mod, wrap, **kw), torch_too=False)


def test_dataloader_worker_init_fn_sees_seeds():
    def run(mod, wrap):
        seeds = []

        def init(wid):
            info = mod.utils.data.get_worker_info()
            seeds.append((wid, info.id, info.num_workers, info.seed))
        return _loader_epoch(mod, wrap, batch_size=5, num_workers=2, worker_init_fn=init) + [seeds]
    run_three_ways(run, torch_too=False)


# ---- warnings from compiled backward programs (NOTE [warnings in a trace] rule 6) ------------

def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(str(x.message), x.category) for x in w if not str(x.message).startswith("tracegrad.compile:")]


def _custom(mod):
    class Warn(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            warnings.warn("round48 backward", UserWarning)
            return g * 2
    return Warn


@pytest.mark.parametrize("hook", [False, True], ids=["function", "function_and_result_hook"])
def test_backward_warnings_each_backward_outside(hook):
    # compiled forward, backward after the call (the program's kept backward, KeptBackward);
    # with ``hook`` a tensor hook registered on the compiled call's result warns as well
    def run(mod, wrap):
        W = _custom(mod)
        f = wrap(lambda x: W.apply(x * 3))
        out = []
        for i in range(CALLS):
            x = data(mod, i, 3).requires_grad_()
            y = f(x)
            if hook:
                y.register_hook(lambda g: warnings.warn("round48 hook") or g * 2)
            _, w = _warned(y.sum().backward)
            out.append([x.grad, w])
        return out
    made = run_three_ways(run)
    assert made[0].stats["graph_breaks"] == [] and traces(made[0]) == 1   # (the first call runs eagerly)


def test_retain_graph_backward_twice_warns_twice():
    def run(mod, wrap):
        W = _custom(mod)
        f = wrap(lambda x: W.apply(x).sum())
        x = data(mod, 0, 3).requires_grad_()
        loss = f(x)
        _, w1 = _warned(lambda: loss.backward(retain_graph=True))
        _, w2 = _warned(loss.backward)
        return [x.grad, w1, w2]
    run_three_ways(run)


def test_filters_changed_between_backwards():
    def run(mod, wrap):
        W = _custom(mod)
        f = wrap(lambda x: W.apply(x).sum())
        out = []
        for i, action in enumerate(["ignore", "always", "error", "always"]):
            x = data(mod, i, 3).requires_grad_()
            loss = f(x)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter(action)
                try:
                    loss.backward()
                    err = None
                except UserWarning as e:
                    err = str(e)
            out.append([[str(m.message) for m in w], err, x.grad])
        return out
    run_three_ways(run)


def test_backward_warning_inside_compiled_step():
    def run(mod, wrap):
        W = _custom(mod)
        lin = small_mlp(mod)

        def step(x):
            y = W.apply(lin(x)).sum()
            y.backward()
            return y.detach()
        f = wrap(step)
        out = []
        for i in range(3):
            loss, w_in = _warned(lambda: f(data(mod, i, 5, 4)))
            out.append([loss, w_in, lin[0].weight.grad])
        return out
    run_three_ways(run)
