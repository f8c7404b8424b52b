"""Round 49: what rounds 47-48 merged under attack, compiled against eager (and torch where it
has the API): values, gradients, optimizer state, Python effects per call, each call's warnings
(message, category, file, line) and the programs traced.

- NOTE [warnings in a trace] (tracegrad/_lowering/warned.py): ``stacklevel`` 1/2/3 from nested
  helpers, a module's ``forward`` and a forward hook; an "error" filter set by the caller on the
  second call only; "once"/"module"/"default" across two compiled functions sharing a helper's
  place and across two places of one text; a text changing per call under "default"; a
  checkpointed block and a custom Function under the registry filters; a step that records
  warnings and gives them again; a text built from a tensor's value; ``logging`` calls.
- NOTE [argument attributes] / NOTE [attributes set on arguments] (compiler.py,
  _lowering/region.py): attributes holding tensors (new, changed in place, needing grad), lists
  of tensors (appended to, an entry replaced), dataclasses (changed, frozen, in a list), on a
  view passed as the argument; attributes the function sets on a view of its argument.
- NOTE [cache entries written whole] (tracegrad/_api/compilation_cache.py): another writer's
  half-written file in the folder, a failed rename, writers racing on one entry.

Fixes:
- A logging call the logger's level (or ``logging.disable``) silenced while tracing passed the
  trace (only an emitted record is a graph break): after ``setLevel(WARNING)`` between calls,
  eager logged on every call and the program never did. The trace now guards the answer of
  each ``isEnabledFor`` it asked (NOTE [logger levels read in a trace], _lowering/capture.py).
- A program whose traced call ran eagerly (a kept warning an error under that call's filters,
  a value check failing) was cached and run on later calls but not counted in ``stats["traces"]``
  (0 programs, yet no eager calls after it) (compiler.py).
- A step that changes the warning filters itself (``catch_warnings()`` inside it) makes every
  registry stale on each eager call: under "default" a warning it records and gives again shows
  on every call; the program showed it once. Its runs now make the registries stale too
  (``FiltersChanged``, NOTE [warnings in a trace] rule 7, _lowering/warned.py).
- A step that leaves a filter in place (``filterwarnings`` outside ``catch_warnings``) sets it
  again on every eager call (after the caller's ``resetwarnings``); the program did not, so the
  caller's own warning of that text showed. A graph break now (rule 8, _lowering/region.py).
- A failed rename of a cache entry's temporary file left the file in the shared folder
  (compilation_cache.py).
"""
import dataclasses
import logging
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

import tracegrad

from ._harness import assert_same, run_three_ways as _three_ways, snapshot, traces
from .test_adversarial_round47 import _lin, _sgd_step, _three, _x

CALLS = 4


def run_three_ways(run, **kw):
    """The harness's three-way run on the snapshots of what ``run`` returns."""
    return _three_ways(lambda mod, wrap: snapshot(run(mod, wrap)), **kw)


def _counts(comp):
    return [len(c["warned"]) for c in comp]


# ---- stacklevel from helpers, forwards and hooks ---------------------------------------------

def _nested_helpers(level):
    def build(mod, wrap):
        def inner():
            warnings.warn(f"nested level {level}", UserWarning, stacklevel=level)

        def outer():                 # the line stacklevel=2 names
            inner()

        def loss(mod, m, x):
            outer()                  # the line stacklevel=3 names
            return m(x).pow(2).mean()
        return _sgd_step(mod, wrap, loss)
    return build


@pytest.mark.parametrize("level", [1, 2, 3])
def test_stacklevel_from_nested_helpers(level):
    made, comp = _three(_nested_helpers(level), ["always"] * CALLS)
    assert {(f, n) for c in comp for *_, f, n in c["warned"]} == {comp[0]["warned"][0][2:]}
    assert comp[0]["warned"][0][2] == __file__ and traces(made[0]) == 1


def _module_warns(level, where):
    def build(mod, wrap):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _lin(mod)

            def forward(self, x):
                if where == "forward":
                    warnings.warn(f"forward level {level}", UserWarning, stacklevel=level)
                return self.lin(x)
        net = Net()
        if where == "hook":
            def hook(m, args, out):
                warnings.warn(f"hook level {level}", UserWarning, stacklevel=level)
            net.register_forward_hook(hook)
        return _sgd_step(mod, wrap, lambda mod, m, x: m(x).pow(2).mean(), model=net)
    return build


@pytest.mark.parametrize("where", ["forward", "hook"])
@pytest.mark.parametrize("level", [1, 2, 3])
def test_stacklevel_in_a_module_forward_and_hook(level, where):
    # levels 2 and 3 name the module call's own frames (the library's, as torch's do): the
    # compiled runs name the frame eager names, never compiler.py or _lowering
    made, comp = _three(_module_warns(level, where), ["always"] * CALLS)
    places = {(f, n) for c in comp for *_, f, n in c["warned"]}
    assert len(places) == 1 and _counts(comp) == [1] * CALLS
    assert not any("_lowering" in f or f.endswith("compiler.py") for f, _ in places)
    assert traces(made[0]) == 1


# ---- "error" set by the caller on one call -----------------------------------------------------

def _warn_before_adam_step(mod, wrap):
    model = _lin(mod)
    opt = mod.optim.Adam(model.parameters(), lr=0.1)
    buf = mod.zeros(3)
    log = []

    def step(x, b):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        b.add_(1.0)                    # an argument written in place before the warning
        log.append("before")
        warnings.warn("before the step", UserWarning)
        log.append("after")
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt, "buf": buf, "log": log}, lambda i: (*_x(mod, i), buf)


def test_error_on_the_second_call_only_before_the_optimizer_step():
    # the traced call raises as eager does: after the in-place add and the first append,
    # before the Adam step (its state as after call 1); nothing donated, later calls run the
    # program; the program built by the raising call is counted (it was cached as 0 traces)
    made, comp = _three(_warn_before_adam_step, ["always", "error", "always", "always"])
    assert [c["out"][0] if isinstance(c["out"], tuple) else "ran" for c in comp] == ["ran", "raised", "ran", "ran"]
    assert_same(comp[0]["state"]["opt"], comp[1]["state"]["opt"], "Adam state")
    assert comp[1]["state"]["buf"]["value"].tolist() == [2.0] * 3
    assert traces(made[0]) == 1 and made[0].stats["eager_calls"] == 2


def test_error_on_the_third_call_only_by_message():
    def two(mod, wrap):
        step, observed, batch = _warn_before_adam_step(mod, lambda f: f)

        def outer(x, b):
            warnings.warn("first text", RuntimeWarning)
            return step(x, b)
        return wrap(outer), observed, batch

    def error_on_step_text():
        warnings.simplefilter("always")
        warnings.filterwarnings("error", message="before the")
    made, comp = _three(two, ["always", "always", error_on_step_text, "always", "always"])
    assert _counts(comp) == [2, 2, 1, 2, 2] and comp[2]["out"][0] == "raised"
    assert comp[2]["state"]["log"][-1] == "before" and traces(made[0]) == 1


# ---- registry filters across functions and places ---------------------------------------------

def _shared_place():
    warnings.warn("from the shared helper", UserWarning)


def _two_functions(mod, wrap):
    a, b = _lin(mod), _lin(mod)

    def f(x):
        _shared_place()
        return a(x).sum()

    def g(x):
        _shared_place()
        return b(x).sum()
    f, g = wrap(f), wrap(g)
    return (lambda x: [f(x), g(x)]), {"a": a, "b": b}, lambda i: _x(mod, i)


@pytest.mark.parametrize("action", ["once", "module", "default"])
def test_two_compiled_functions_share_a_helpers_place(action):
    # one place, one registry: shown once, by the first function's eager call
    made, comp = _three(_two_functions, [action] + [None] * (CALLS - 1) + [action])
    assert _counts(comp) == [1] + [0] * (CALLS - 1) + [1]
    assert [traces(f) for f in made] == [1, 1]


def _two_places_one_text(mod, wrap):
    m = _lin(mod)

    def f(x):
        warnings.warn("same text", UserWarning)
        y = m(x)
        warnings.warn("same text", UserWarning)
        return y.sum()
    return wrap(f), {"m": m}, lambda i: _x(mod, i)


@pytest.mark.parametrize("action,first", [("module", 1), ("once", 1), ("default", 2)])
def test_two_places_of_one_text(action, first):
    made, comp = _three(_two_places_one_text, [action] + [None] * (CALLS - 1))
    assert _counts(comp) == [first] + [0] * (CALLS - 1) and traces(made[0]) == 1


def test_default_filter_with_a_text_changing_per_call():
    # the text is part of the registry's key: two texts, each shown once
    def build(mod, wrap):
        m = _lin(mod)

        def f(x, i):
            warnings.warn(f"parity {i % 2}", UserWarning)
            return m(x).sum()
        return wrap(f), {"m": m}, lambda i: (*_x(mod, i), i)
    made, comp = _three(build, ["default"] + [None] * 4)
    assert _counts(comp) == [1, 1, 0, 0, 0]


def _checkpointed(reentrant):
    def block(h):
        warnings.warn("in the block", UserWarning)
        return h.tanh()
    return lambda mod, wrap: _sgd_step(mod, wrap, lambda mod, m, x: mod.utils.checkpoint.checkpoint(
        block, m(x), use_reentrant=reentrant).pow(2).mean())


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("action", ["once", "default"])
def test_checkpointed_block_under_registry_filters(action, reentrant):
    # the recomputation warns at the same place: once for the whole run, forward's showing
    made, comp = _three(_checkpointed(reentrant), [action] + [None] * (CALLS - 1))
    assert _counts(comp) == [1] + [0] * (CALLS - 1)


def _custom_function(mod, wrap):
    def warned(text, v):         # forward's and backward's warning, one line, two texts
        warnings.warn(text, UserWarning)
        return v * 2
    twice = type("Twice", (mod.autograd.Function,), {
        "forward": staticmethod(lambda ctx, x: warned("custom forward", x)),
        "backward": staticmethod(lambda ctx, g: warned("custom backward", g))})
    return _sgd_step(mod, wrap, lambda mod, m, x: twice.apply(m(x)).pow(2).mean())


@pytest.mark.parametrize("action", ["default", "once", "module"])
def test_custom_function_under_registry_filters_reset_between_calls(action):
    made, comp = _three(_custom_function, [action, None, None, action, None])
    assert [[m for m, *_ in c["warned"]] for c in comp] == \
        [["custom forward", "custom backward"], [], [], ["custom forward", "custom backward"], []]


def test_step_gives_again_the_warnings_it_recorded():
    def build(mod, wrap):
        m = _lin(mod)

        def f(x):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                y = mod.nn.functional.log_softmax(m(x))      # no dim: a warning each call
            for w in seen:
                warnings.warn(f"recorded {len(seen)}: {str(w.message)[:18]}", w.category)
            return y.sum()
        return wrap(f), {"m": m}, lambda i: _x(mod, i)
    # the step's own catch_warnings changes the filters: every registry is stale on the next
    # call, so under "default" the place shows on every call (the program showed it once)
    made, comp = _three(build, ["always", "ignore", "always", "default", None, None])
    assert _counts(comp) == [1, 0, 1, 1, 1, 1] and traces(made[0]) == 1


def _sets_a_filter(mod, wrap):
    m = _lin(mod)

    def f(x):
        warnings.warn("before the filter", UserWarning)
        warnings.filterwarnings("ignore", message="after the filter")     # left in place
        warnings.warn("after the filter", UserWarning)
        return m(x).sum()
    return wrap(f), {"m": m}, lambda i: _x(mod, i)


def test_step_leaves_a_filter_the_caller_resets_between_calls():
    # eagerly each call puts its "ignore" back after the caller's resetwarnings, so the
    # caller's own warning of that text stays ignored; a program would not put it back
    def reset():
        warnings.resetwarnings()
        warnings.simplefilter("always")

    def build(mod, wrap):
        step, observed, batch = _sets_a_filter(mod, wrap)

        def call(x):
            out = step(x)
            warnings.warn("after the filter", UserWarning)     # the caller's, after the call
            return out
        return call, observed, batch
    made, comp = _three(build, ["always", reset, reset, reset])
    assert _counts(comp) == [1] * CALLS
    assert traces(made[0]) == 0 and "warning filters" in made[0].stats["graph_breaks"][0][0]


def test_warnings_captured_by_logging():
    # logging.captureWarnings(True): the shown warnings go to the 'py.warnings' logger
    def build(mod, wrap):
        records = []
        _logger("py.warnings", records, logging.NOTSET)
        step, observed, batch = _sets_a_filter(mod, wrap)
        return step, {**observed, "records": records}, batch

    def on():
        warnings.simplefilter("always")
        logging.captureWarnings(False)      # the run before left it on, with the handler then
        logging.captureWarnings(True)
    try:
        made, comp = _three(build, [on, None, "default", None, "always"], torch_too=False)
    finally:
        logging.captureWarnings(False)
    # the step's filterwarnings is a filters change each call: under "default" the place is
    # shown again on every call (the program's runs make the registries stale too)
    assert [len(c["state"]["records"]) for c in comp] == [1, 2, 3, 4, 5] and traces(made[0]) == 1


# ---- a text from a tensor's value; logging -----------------------------------------------------

def _value_text(mod, wrap):
    model = _lin(mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        warnings.warn(f"loss {loss.detach():.4f} sum {x.sum()}", UserWarning)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: _x(mod, i)


def test_warning_text_from_a_tensor_value_is_not_frozen():
    # format() of a tensor is a graph break (torch.compile's too): every call's own numbers
    made, comp = _three(_value_text, ["always"] * CALLS)
    texts = [c["warned"][0][0] for c in comp]
    assert len(set(texts)) == CALLS and traces(made[0]) == 0
    assert any("format()" in r for r, _ in made[0].stats["graph_breaks"])


def test_warning_text_from_a_tensor_value_fullgraph_raises():
    f = tracegrad.compile(lambda x: (warnings.warn(f"{x.sum()}"), x * 2)[1], fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(tracegrad.compiler.GraphBreak, match="format"):
            f(tracegrad.ones(2))


class _Records(logging.Handler):
    def __init__(self, out):
        super().__init__()
        self.out = out

    def emit(self, record):
        self.out.append(record.getMessage())


def _logger(name, records, level=logging.WARNING):
    lg = logging.getLogger(name)
    lg.handlers[:] = [_Records(records)]
    lg.propagate = False
    lg.setLevel(level)
    return lg


def test_logging_in_a_step_logs_every_call():
    # a record the logger emits is a graph break: eager, logged on every call (lazy %-args
    # formatted from the tensor at each call, and the learning rate a scheduler changes)
    def build(mod, wrap):
        records = []
        lg = _logger("round49.step", records)
        model = _lin(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)
        sched = mod.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            lg.warning("lr %s loss %.4f", opt.param_groups[0]["lr"], loss.detach())
            loss.backward()
            opt.step()
            sched.step()
            return loss
        return wrap(step), {"model": model, "opt": opt, "records": records}, lambda i: _x(mod, i)
    made, comp = _three(build, ["always"] * CALLS)
    assert len(comp[-1]["state"]["records"]) == CALLS and len(set(comp[-1]["state"]["records"])) == CALLS


@pytest.mark.parametrize("how", ["level", "disable"])
def test_logging_turned_on_between_calls(how):
    # traced while the logger was off: the program ran silently after setLevel(WARNING) /
    # logging.disable(NOTSET), where eager logs on every call
    records = []
    lg = _logger("round49.quiet", records, logging.ERROR if how == "level" else logging.WARNING)

    def f(x):
        lg.warning("step %s", 1)
        return x * 2
    runs = []
    try:
        for wrap in (lambda g: g, tracegrad.compile):
            records.clear()
            if how == "level":
                lg.setLevel(logging.ERROR)
            else:
                logging.disable(logging.WARNING)
            g = wrap(f)
            for i in range(5):
                if i == 3:
                    lg.setLevel(logging.WARNING) if how == "level" else logging.disable(logging.NOTSET)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")      # the fall-back note
                    assert g(tracegrad.ones(2)).tolist() == [2.0, 2.0]
                runs.append(len(records))
    finally:
        logging.disable(logging.NOTSET)
    assert runs[5:] == runs[:5] == [0, 0, 0, 1, 2]
    assert traces(g) == 1


def test_logging_level_read_by_the_step():
    # isEnabledFor read by the user's own branch: guarded as well
    def run(mod, wrap):
        lg = _logger("round49.branch", [], logging.ERROR)
        f = wrap(lambda x: x * (3 if lg.isEnabledFor(logging.INFO) else 1))
        out = []
        for i in range(4):
            if i == 2:
                lg.setLevel(logging.INFO)
            out.append(f(mod.ones(2)))
        return out
    made = run_three_ways(run)
    assert traces(made[0]) == 2


# ---- attributes on tensor arguments ------------------------------------------------------------

def _calls_of(step, n=CALLS):
    return [step(i) for i in range(n)]


def _changed_between(f, x, change, n=CALLS):
    """``f(x)`` ``n`` times, ``change(i)`` after call ``i``: the results."""
    out = []
    for i in range(n):
        out.append(f(x))
        change(i)
    return out


def test_attribute_holding_a_new_tensor_each_call():
    def run(mod, wrap):
        x = mod.ones(3)
        f = wrap(lambda t: t * t.aux)

        def step(i):
            x.aux = mod.full((3,), float(i + 1))
            return f(x)
        return _calls_of(step)
    run_three_ways(run)


def test_attribute_tensor_changed_in_place_between_calls():
    def run(mod, wrap):
        x = mod.ones(3)
        x.aux = mod.zeros(3)
        f = wrap(lambda t: t * t.aux + 1)

        def step(i):
            x.aux.add_(1.0)
            return f(x)
        return _calls_of(step)
    made = run_three_ways(run)
    assert traces(made[0]) == 1


def test_attribute_tensor_needing_grad_gets_its_grad():
    def run(mod, wrap):
        w = mod.ones(3, requires_grad=True)
        x = mod.arange(3.0)
        x.w = w

        def step(t):
            (t * t.w).pow(2).sum().backward()
            return t.w.grad.clone()
        f = wrap(step)
        return _calls_of(lambda i: [f(x), w])
    run_three_ways(run)


def test_attribute_list_of_tensors_appended_between_calls():
    def run(mod, wrap):
        x = mod.ones(2)
        x.items = [mod.ones(2)]
        f = wrap(lambda t: sum(t.items) * t)
        return _changed_between(f, x, lambda i: x.items.append(mod.full((2,), float(i))))
    run_three_ways(run)


def test_attribute_list_entry_replaced_and_changed_in_place():
    def run(mod, wrap):
        x = mod.ones(2)
        x.items = [mod.ones(2), mod.ones(2)]
        f = wrap(lambda t: t.items[0] * t + t.items[1])

        def change(i):
            x.items[1] = mod.full((2,), float(i))
            x.items[0].mul_(2)
        return _changed_between(f, x, change)
    run_three_ways(run)


@dataclasses.dataclass
class Cfg:
    scale: float
    bias: object = None


@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    scale: float


def test_attribute_dataclass_fields_changed_between_calls():
    def run(mod, wrap):
        x = mod.ones(2)
        x.cfg = Cfg(1.0, mod.zeros(2))
        f = wrap(lambda t: t * t.cfg.scale + t.cfg.bias)

        def change(i):
            x.cfg.scale += 1.0
            x.cfg.bias = x.cfg.bias + 1
        return _changed_between(f, x, change)
    run_three_ways(run)


def test_attribute_new_frozen_dataclass_each_call():
    def run(mod, wrap):
        x = mod.ones(2)
        f = wrap(lambda t: t * t.cfg.scale)

        def step(i):
            x.cfg = FrozenCfg(float(i % 2 + 2))       # new objects, two values
            return f(x)
        return _calls_of(step, 6)
    run_three_ways(run)


def test_attribute_list_of_dataclasses():
    def run(mod, wrap):
        x = mod.ones(2)
        x.cfgs = [Cfg(1.0)]
        f = wrap(lambda t: t * sum(c.scale for c in t.cfgs))

        def change(i):
            x.cfgs[0].scale = 3.0 + i
            x.cfgs.append(Cfg(0.5))
        return _changed_between(f, x, change)
    run_three_ways(run)


def test_attribute_on_a_view_passed_as_the_argument():
    def run(mod, wrap):
        base = mod.arange(6.0)
        f = wrap(lambda t: t * t.k)
        v = base.view(2, 3)
        v.k = 1.0

        def step(i):
            out = f(v)
            v.k = v.k + 1
            fresh = base[i % 2:]          # a new view each call, its own attribute
            fresh.k = float(i)
            return [out, f(fresh)]
        return _calls_of(step)
    run_three_ways(run)


def test_attributes_set_on_a_view_of_the_argument_and_on_it():
    # the view is made inside (its attribute dies with it); the argument's counter is set
    # again after each run, as eagerly
    def run(mod, wrap):
        base = mod.arange(6.0)

        def f(t):
            v = t.view(2, 3)
            v.tag = 5
            t.count = getattr(t, "count", 0) + 1
            return v * t.count + v.tag
        g = wrap(f)
        return _calls_of(lambda i: [g(base), base.count])
    run_three_ways(run)


# ---- NOTE [cache entries written whole] ----------------------------------------------------------

lru_cache = pytest.importorskip("jax._src.lru_cache")


def _cache(tmp_path):
    from tracegrad._api.compilation_cache import write_entries_atomically
    write_entries_atomically()
    return lru_cache.LRUCache(str(tmp_path), max_size=-1)


def test_another_writers_half_written_file_is_no_entry(tmp_path):
    # another process died (or is still) writing key "k": its temporary file is not the entry;
    # this process reads nothing, then writes the whole entry, and leaves the other's file alone
    cache = _cache(tmp_path)
    other = tmp_path / ".k.99999.1.tmp"
    other.write_bytes(b"torn" * 10)
    assert cache.get("k") is None
    cache.put("k", b"whole" * 100)
    assert cache.get("k") == b"whole" * 100 and other.exists()


@pytest.mark.parametrize("fails", ["rename", "interrupted write"])
def test_failed_rename_or_interrupted_write_leaves_nothing(tmp_path, monkeypatch, fails):
    # a temporary file left by a failed rename stayed in the shared folder
    cache = _cache(tmp_path)
    real = os.write

    def interrupted(fd, data):
        real(fd, data[:10])
        raise KeyboardInterrupt

    def refused(src, dst):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, *(("replace", refused) if fails == "rename" else ("write", interrupted)))
    with pytest.raises(PermissionError if fails == "rename" else KeyboardInterrupt):
        cache.put("k", b"y" * 1000)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == [] and cache.get("k") is None


def test_writers_racing_on_one_entry(tmp_path):
    cache = _cache(tmp_path)
    value = bytes(range(256)) * 2048
    seen, go = [], threading.Barrier(4)

    def writer():
        go.wait()
        cache.put("k", value)
        got = cache.get("k")
        seen.append(got is None or got == value)
    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 4 and cache.get("k") == value
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


_READER = textwrap.dedent("""
    import sys
    import tracegrad
    from jax._src import lru_cache
    c = lru_cache.LRUCache(sys.argv[1], max_size=-1)
    print("READ", repr(c.get("k")))
""")


def test_second_process_reads_no_torn_entry(tmp_path):
    # a second process, while this one's write of "k" is half done: no entry, not its half
    cache = _cache(tmp_path)
    real, out, started = os.write, [], []

    def write(fd, data):
        n = real(fd, data[:64])
        if not started:
            started.append(fd)
            out.append(subprocess.run([sys.executable, "-c", _READER, str(tmp_path)], capture_output=True,
                                      text=True, timeout=300))
        return n
    mp = pytest.MonkeyPatch()
    mp.setattr(os, "write", write)
    try:
        cache.put("k", b"z" * 256)
    finally:
        mp.undo()
    assert out[0].returncode == 0, out[0].stderr[-2000:]
    assert "READ None" in out[0].stdout
    assert cache.get("k") == b"z" * 256
