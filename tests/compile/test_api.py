"""``tracegrad.compile``'s API around the program: an exception inside a compiled call leaves
every storage as eager leaves it (nothing half-written, no tracer), ``disable=True`` runs eagerly, ``tracegrad.compiler.reset()``, bad
arguments raise what torch raises, Python values the function reads are not frozen."""
import warnings
import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init, snapshot, assert_same
from _fresh_process import fresh_process


def program(fail_rows=None, scale=None):
    """An SGD-momentum step; with ``fail_rows`` it raises ValueError after ``opt.step()`` when
    the batch has that many rows; ``scale`` is a one-element list read as a Python float."""
    def make(mod, wrap):
        model = np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Tanh(), mod.nn.Linear(4, 2)), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            if scale is not None:
                loss = loss * scale[0]
            loss.backward()
            opt.step()
            if x.shape[0] == fail_rows:
                raise ValueError("boom after the optimizer step")
            return loss
        return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 5 if i < 3 else 7, 3),)
    return make


def test_exception_inside_compiled_call_leaves_state_as_eager_does():
    """The function raises after ``opt.step()`` on a call that traces: the trace's changes are
    undone and the call runs eagerly, so the error comes with eager's side effects (the step
    happened), as torch.compile does; no storage holds a traced value."""
    step, state, batch = program(fail_rows=7)(tracegrad, tracegrad.compile)
    ref, ref_state, _ = program(fail_rows=7)(tracegrad, lambda f: f)
    for i in range(3):
        step(*batch(i))
        ref(*batch(i))
    before = snapshot(state)
    for f in (step, ref):
        with pytest.raises(ValueError, match="boom"):
            f(*batch(3))               # a new shape: traced, raises after opt.step()
    assert_same(snapshot(ref_state), snapshot(state))
    with pytest.raises(AssertionError):
        assert_same(before, snapshot(state))     # the step before the raise happened
    # and the function still works afterwards, compiled
    for i in (2, 1):
        step(*batch(i))
        ref(*batch(i))
    assert_same(snapshot(ref_state), snapshot(state))
    assert step.stats["traces"] >= 1


def test_error_raised_only_while_tracing_runs_the_call_eagerly():
    """A function that fails only when traced (a library that refuses JAX tracers) gives
    eager's result, with the reason in stats, instead of the tracing error."""
    import jax
    calls = []

    def fn(x):
        calls.append(1)
        if isinstance(x._value, jax.core.Tracer):
            raise KeyError("only while tracing")
        return x * 2
    f = tracegrad.compile(fn)
    with pytest.warns(UserWarning, match="tracing raised KeyError"):
        outs = [f(tracegrad.ones(2)) for _ in range(3)]
    assert all(o.tolist() == [2.0, 2.0] for o in outs)
    assert any("tracing raised KeyError" in r for r, _ in f.stats["graph_breaks"])
    assert f.stats["eager_calls"] == 3 and f.stats["traces"] == 0


def test_error_while_writing_back_a_first_run_is_raised_not_rerun(monkeypatch):
    """The traced program's first run fails part-way through writing its results back (after
    the parameters took the update): the error reaches the caller. Running the call again
    eagerly, as for an error raised while tracing, would apply the step twice."""
    from tracegrad._lowering import region as region_mod
    step, state, batch = program()(tracegrad, tracegrad.compile)
    ref, ref_state, _ = program()(tracegrad, lambda f: f)
    step(*batch(0))
    ref(*batch(0))
    write_back = region_mod.Region.write_back

    def failing(self, *args):
        write_back(self, *args)
        raise RuntimeError("write-back failed")
    monkeypatch.setattr(region_mod.Region, "write_back", failing)
    with pytest.raises(RuntimeError, match="write-back failed"):
        step(*batch(1))                 # traced: its first run writes, then fails
    monkeypatch.undo()
    ref(*batch(1))
    assert_same(snapshot(ref_state), snapshot(state))     # one update, not two
    assert step.stats["eager_calls"] == 1


def test_disable_runs_eagerly():
    run = check_compiled(program(), calls=3, disable=True)
    assert run.step.stats["traces"] == 0 and run.step.stats["calls"] == 3


def test_reset_forgets_programs():
    step, state, batch = program()(tracegrad, tracegrad.compile)
    for i in range(3):
        step(*batch(i))
    assert step.stats["traces"] >= 1
    tracegrad.compiler.reset()
    assert step.stats["traces"] == 0 and step.stats["calls"] == 0
    # after reset the next calls give eager's values again (eager first, then a new trace)
    def between(state, i):
        if i == 1:
            tracegrad.compiler.reset()
    check_compiled(program(), calls=4, between=between)


@fresh_process
def test_programs_are_in_the_cache_registry():
    """Compiled programs are reachable from ``_state``'s cache registry (issue 7): sized there,
    and ``clear_caches()`` forgets them as ``compiler.reset()`` does; the next calls still give
    eager's values (a fresh trace)."""
    from tracegrad import _state
    step, state, batch = program()(tracegrad, tracegrad.compile)
    for i in range(3):
        step(*batch(i))
    assert _state.cache_sizes()["compiler.programs"] >= 1
    _state.clear_caches()
    assert _state.cache_sizes()["compiler.programs"] == 0 and step.stats["traces"] == 0

    def between(state, i):
        if i == 1:
            _state.clear_caches()
    check_compiled(program(), calls=4, between=between)


def test_python_value_read_by_function_is_not_frozen():
    """torch.compile guards Python values a function reads (a closure cell here): changing
    one between calls gives the new value's result."""
    cells = []

    def make(mod, wrap):
        s = [1.0]
        cells.append(s)
        return program(scale=s)(mod, wrap)

    def between(state, i):
        cells[-1][0] = 1.0 + i
    check_compiled(make, calls=4, between=between)


@pytest.mark.parametrize("kw", [dict(mode="default", options={}), dict(mode="no-such-mode"),
                                dict(mode="max-autotune", options={"x": 1})])
def test_bad_arguments_raise_torch_class(kw):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as ref:
        torch.compile(lambda x: x, **kw)
    with pytest.raises(type(ref.value), match="mode"):
        tracegrad.compile(lambda x: x, **kw)


@pytest.mark.parametrize("mode", ["default", "lite", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
def test_every_torch_mode_accepted(mode):
    f = tracegrad.compile(lambda x: x * 2, mode=mode)
    assert tracegrad.equal(f(tracegrad.ones(2)), tracegrad.full((2,), 2.0))


def test_unknown_backend_raises_runtime_error():
    with pytest.raises(RuntimeError, match="backend"):
        tracegrad.compile(lambda x: x, backend="no-such-backend")


def test_second_backward_through_trained_step_loss_raises_as_eager():
    step, state, batch = program()(tracegrad, tracegrad.compile)
    for i in range(3):
        loss = step(*batch(i))
        with pytest.raises(RuntimeError, match="second time"):
            loss.backward()


def test_returned_aliases_are_preserved():
    """Results that are the same tensor, or views of one another, stay so (eager aliasing)."""
    def fn(x):
        y = x * 2
        return y, y, y.view(-1), x
    f = tracegrad.compile(fn)
    for i in range(3):
        x = data(tracegrad, i, 2, 3)
        a, b, v, x_out = f(x)
        assert x_out is x
        assert a is b
        a.add_(1.0)
        assert tracegrad.equal(v, a.view(-1)), "a view result must see writes to its base"


def test_returned_views_of_arguments_and_state_share_storage():
    # eager: x[1] and w.t() are views; a write through them is seen by x / w (and versions)
    w = tracegrad.nn.Parameter(tracegrad.arange(6.0).reshape(2, 3))

    @tracegrad.compile
    def fn(x):
        with tracegrad.no_grad():
            return x[1], w.t(), (x * w).sum()
    for i in range(3):
        x = data(tracegrad, i, 2, 3)
        row, wt, s = fn(x)
        assert tracegrad.equal(row, x[1]) and tracegrad.equal(wt, w.t())
        assert row._base is x and wt._base is w
        v0 = x._version
        row.mul_(0.0)
        assert float(x[1].abs().sum()) == 0.0 and x._version == v0 + 1
        with tracegrad.no_grad():
            wt[0, 0] = 7.0 + i
        assert float(w[0, 0]) == 7.0 + i
    assert fn.stats["traces"] == 1


def test_training_step_called_under_no_grad_raises_as_eager():
    step, state, batch = program()(tracegrad, tracegrad.compile)
    for i in range(3):
        step(*batch(i))
    before = snapshot(state)
    with tracegrad.no_grad():
        with pytest.raises(RuntimeError, match="does not require grad"):
            step.__wrapped__(*batch(3))
        with pytest.raises(RuntimeError, match="does not require grad"):
            step(*batch(3))
    step(*batch(0))


def test_container_arguments_and_results():
    def make(mod, wrap):
        model = np_init(mod.nn.Linear(3, 2), mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1)

        def step(batch, cfg):
            opt.zero_grad()
            loss = sum(model(x).pow(2).mean() * w for x, w in zip(batch["xs"], cfg["weights"]))
            loss.backward()
            opt.step()
            return {"loss": loss, "parts": [loss.detach() / 2, cfg["tag"]]}
        return wrap(step), {"model": model, "opt": opt}, lambda i: (
            {"xs": [data(mod, i, 4, 3), data(mod, i, 2, 3, seed=7)]}, {"weights": (1.0, 0.5), "tag": "t"})
    check_compiled(make, calls=3)


@pytest.mark.parametrize("bad", ["leaf_inplace", "shape"])
def test_errors_inside_compiled_function_match_eager(bad):
    model = np_init(tracegrad.nn.Linear(3, 2), tracegrad)

    def fn(x):
        if bad == "leaf_inplace":
            model.weight.add_(1.0)               # in-place on a leaf that requires grad
        else:
            x = x @ tracegrad.ones(4, 2)         # (2, 3) @ (4, 2)
        return model(x).sum()
    f = tracegrad.compile(fn)
    with pytest.raises(RuntimeError) as eager:
        fn(data(tracegrad, 0, 2, 3))
    for i in range(3):
        before = model.weight.detach().clone()
        with pytest.raises(RuntimeError) as comp:
            f(data(tracegrad, i, 2, 3))
        assert str(comp.value) == str(eager.value)
        assert tracegrad.equal(model.weight, before)


def _double():
    def f(x):
        return x * 2
    assert tracegrad.compiler.is_dynamo_compiling is tracegrad.compiler.is_compiling
    return tracegrad.compile(f), None


def test_set_stance_force_eager_as_function_context_and_decorator():
    f, seen = _double()
    x = tracegrad.ones(3)
    tracegrad.compiler.set_stance("force_eager")
    try:
        for _ in range(3):
            assert f(x).tolist() == [2.0, 2.0, 2.0]
        assert f.stats["traces"] == 0
    finally:
        tracegrad.compiler.set_stance("default")
    with tracegrad.compiler.set_stance("force_eager"):
        f(x)
    assert f.stats["traces"] == 0

    @tracegrad.compiler.set_stance("force_eager")
    def run():
        return f(x)
    run()
    assert f.stats["traces"] == 0
    f(x), f(x)                       # default again: the second call traces
    assert f.stats["traces"] == 1


def test_set_stance_recompile_stances_and_errors():
    f, _ = _double()
    f(tracegrad.ones(3)), f(tracegrad.ones(3))            # eager, then one program
    with tracegrad.compiler.set_stance("fail_on_recompile"):
        f(tracegrad.ones(3))                               # cached program: fine
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            f(tracegrad.ones(4))                           # a new shape would trace again
    with tracegrad.compiler.set_stance("eager_on_recompile"):
        assert f(tracegrad.ones(5)).tolist() == [2.0] * 5
    assert f.stats["traces"] == 1
    with tracegrad.compiler.set_stance("bogus"):
        with pytest.raises(RuntimeError, match="invalid stance"):
            f(tracegrad.ones(3))
    assert f(tracegrad.ones(6)).tolist() == [2.0] * 6       # default again

    @tracegrad.compile(fullgraph=True)
    def inside(x):
        tracegrad.compiler.set_stance("force_eager")
        return x
    with pytest.raises(AssertionError, match="inside a compiled function"):    # as torch
        inside(tracegrad.ones(2))


def test_dynamo_config_and_marks():
    dyn = tracegrad._dynamo
    old = dyn.config.cache_size_limit
    try:
        dyn.config.cache_size_limit = 2
        assert tracegrad.compiler.cache_size_limit == 2 and dyn.config.recompile_limit == 2
        f, _ = _double()
        for n in (2, 2, 3, 4, 5):
            x = tracegrad.ones(n)
            dyn.mark_dynamic(x, 0)
            assert f(x).tolist() == [2.0] * n
        # sizes marked dynamic are no recompiles (NOTE [dynamic sizes]): each is traced, none eager
        assert f.stats["traces"] == 4 and not f.stats["graph_breaks"], f.stats
    finally:
        dyn.config.cache_size_limit = old
    dyn.config.suppress_errors = True
    assert dyn.config.suppress_errors is True
    dyn.config.suppress_errors = False
    with pytest.raises(AttributeError, match="does not exist"):
        dyn.config.no_such_flag = 1
    with pytest.raises(AttributeError):
        dyn.config.no_such_flag
    dyn.reset()
    tracegrad.compiler.cudagraph_mark_step_begin()
    assert "inductor" in tracegrad.compiler.list_backends()


def test_numpy_array_arguments_are_keyed_by_value():
    """A NumPy array argument gives each call its own values, whether it is a program input (only
    converted, as here) or a constant keyed by its bytes: a new array (also one allocated at a
    freed array's address) or the same array changed in place gives that call's values."""
    import numpy as np
    f = tracegrad.compile(lambda a: tracegrad.as_tensor(a) * 2)
    for i in range(5):
        assert f(np.full((3,), float(i), dtype=np.float32)).tolist() == [2.0 * i] * 3
    buf = np.zeros(2, dtype=np.float32)
    for i in range(3):
        buf[:] = i
        assert f(buf).tolist() == [2.0 * i] * 2


def test_unhashable_object_arguments_keep_identity_and_guard_values():
    """An unhashable object argument (an eq dataclass) is the key by identity, held so its id
    is never reused by another object, and the numbers the trace reads from it are guarded."""
    import dataclasses

    @dataclasses.dataclass
    class Cfg:
        scale: float
        shift: float = 0.0
    f = tracegrad.compile(lambda x, cfg: x * cfg.scale + cfg.shift)
    x = tracegrad.ones(2)
    for i in range(4):
        assert f(x, Cfg(float(i))).tolist() == [float(i)] * 2      # a new object each call
    cfg = Cfg(1.0)
    f(x, cfg), f(x, cfg)
    cfg.shift = 5.0
    assert f(x, cfg).tolist() == [6.0, 6.0]


def test_arguments_new_on_every_call_past_the_limit_do_not_fill_the_cache():
    import numpy as np
    # (``tolist()`` reads the array by value: a constant keyed by its bytes, a new key per call;
    # an array only converted would be an input, one program: NOTE [numpy arguments])
    f = tracegrad.compile(lambda a: tracegrad.tensor(a.tolist()) + 1)
    for i in range(tracegrad.compiler.cache_size_limit + 20):
        assert f(np.full((2,), float(i))).tolist() == [i + 1.0] * 2
    assert len(f._cache) <= tracegrad.compiler.cache_size_limit + 1
    assert len(f.stats["graph_breaks"]) == 1


def test_default_dtype_change_between_calls_traces_again():
    f = tracegrad.compile(lambda: tracegrad.zeros(2) + tracegrad.tensor(1.5))
    try:
        got = []
        for i in range(4):
            if i == 2:
                tracegrad.set_default_dtype(tracegrad.float64)
            got.append(f().dtype)
    finally:
        tracegrad.set_default_dtype(tracegrad.float32)
    assert got == [tracegrad.float32] * 2 + [tracegrad.float64] * 2


def test_cache_limit_warning_names_the_changing_number_argument():
    f = tracegrad.compile(lambda x, beta: x * beta)
    with pytest.warns(UserWarning, match=r"number argument\(s\) args\[1\] change"):
        for i in range(tracegrad.compiler.cache_size_limit + 3):
            assert f(tracegrad.ones(2), 0.5 * i).tolist() == [0.5 * i] * 2
    g = tracegrad.compile(lambda x, beta: x * beta)
    for i in range(tracegrad.compiler.cache_size_limit + 3):     # the advice: a tensor traces once
        assert g(tracegrad.ones(2), tracegrad.tensor(0.5 * i)).tolist() == [0.5 * i] * 2
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


def test_dynamo_explain_reports_programs_and_breaks():
    m = np_init(tracegrad.nn.Linear(2, 2), tracegrad)
    opt = tracegrad.optim.SGD(m.parameters(), lr=0.1)
    w0 = m.weight.detach().clone()

    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        return loss
    out = tracegrad._dynamo.explain(step)(tracegrad.ones(3, 2))
    # torch 2.13: a graph with linear, backward() a graph break (its second graph, the SGD
    # update, runs here as the fused optimizer step: no tensor ops to graph)
    assert out.graph_count == 1 and out.graph_break_count == 1
    assert "backward() runs autograd" in out.break_reasons[0].reason
    assert [getattr(op, "__name__", op) for op in out.ops_per_graph[0]] == ["linear", "sum"]
    assert not tracegrad.equal(w0, m.weight)          # it ran the function once, as torch

    def breaks(x):
        y = x * 2
        if y.sum() > 0:
            return y
        return -y
    out = tracegrad._dynamo.explain(breaks)(tracegrad.ones(3))
    assert out.graph_count == 1 and len(out.break_reasons) == 1      # as torch 2.13
    assert "needs a tensor's value" in out.break_reasons[0].reason
    assert out.break_reasons[0].user_stack[0].endswith(f":{breaks.__code__.co_firstlineno + 2}")
    assert "Break Reason 1:" in str(out)
    with pytest.warns(FutureWarning, match="deprecated"):
        assert tracegrad._dynamo.explain(breaks, tracegrad.ones(3)).graph_break_count == 1


def test_stats_keeps_functions_that_share_a_name_apart():
    """Two live compiled functions named ``step`` (a notebook cell run twice) each keep their
    own entry in ``tracegrad.compiler.stats()``: ``step``, then ``step [2]``."""
    tracegrad.compiler.reset()

    def make(k):
        def step(x):
            return x * k
        return tracegrad.compile(step)
    first, second = make(2.0), make(3.0)
    x = tracegrad.ones(2)
    for _ in range(3):
        first(x)
    second(x)
    st = {k: v for k, v in tracegrad.compiler.stats().items() if k.startswith(first.__qualname__)}
    base = first.__qualname__
    assert st[base]["calls"] == 3 and st[f"{base} [2]"]["calls"] == 1


@pytest.mark.parametrize("flag", ["compiled_autograd", "suppress_errors", "capture_scalar_outputs"])
def test_dynamo_config_flags_as_torch(flag):
    """The flags programs set on ``torch._dynamo.config`` (the compiled autograd tutorial sets
    ``compiled_autograd = True`` before compiling a step with ``backward()`` inside) exist with
    torch's defaults and can be set."""
    torch = pytest.importorskip("torch")
    want = getattr(torch._dynamo.config, flag)
    assert getattr(tracegrad._dynamo.config, flag) == want
    setattr(tracegrad._dynamo.config, flag, not want)
    try:
        assert getattr(tracegrad._dynamo.config, flag) == (not want)
    finally:
        setattr(tracegrad._dynamo.config, flag, want)


def test_dynamo_exc_classes_as_torch():
    # torch._dynamo.exc's classes: a fullgraph graph break is an Unsupported, an unknown backend
    # an InvalidBackend, both RuntimeErrors, importable as a module
    import importlib
    torch = pytest.importorskip("torch")
    mine = importlib.import_module("tracegrad._dynamo.exc")
    from tracegrad._dynamo.exc import InvalidBackend, TorchDynamoException, Unsupported
    theirs = importlib.import_module("torch._dynamo.exc")
    for name in mine.__all__:
        for base in ("TorchDynamoException", "RuntimeError"):
            b_mine = RuntimeError if base == "RuntimeError" else mine.TorchDynamoException
            b_theirs = RuntimeError if base == "RuntimeError" else theirs.TorchDynamoException
            assert issubclass(getattr(mine, name), b_mine) == issubclass(getattr(theirs, name), b_theirs), name

    @tracegrad.compile(fullgraph=True)
    def f(x):
        if x.sum().item() > 0:
            return x * 2
        return x
    with pytest.raises(Unsupported, match="item|value"):
        f(tracegrad.ones(3))
    with pytest.raises(InvalidBackend, match="Invalid backend: 'bogus'"):
        tracegrad.compile(lambda x: x, backend="bogus")
    assert issubclass(Unsupported, TorchDynamoException)


def test_dynamo_utils_counters_count_graphs_and_breaks():
    # torch._dynamo.utils.counters: a defaultdict of Counters; programs clear it and read how many
    # graphs were compiled and which graph breaks happened (reset() does not clear it, as torch)
    from tracegrad._dynamo.utils import counters
    counters.clear()

    @tracegrad.compile
    def f(x):
        return x * 2

    @tracegrad.compile
    def g(x):
        if x.sum().item() > 0:       # a graph break, once per signature
            return x + 1
        return x
    for _ in range(3):
        f(tracegrad.ones(3))
        g(tracegrad.ones(3))
    f(tracegrad.ones(4))             # a new shape: another graph
    assert counters["stats"]["unique_graphs"] == 2
    assert counters["frames"]["ok"] == 2 and counters["frames"]["total"] == 3
    assert sum(counters["graph_break"].values()) == 1
    tracegrad.compiler.reset()
    assert counters["stats"]["unique_graphs"] == 2
    assert tracegrad._dynamo.utils.counters is counters


def test_mark_static_address_accepts_tensors_only():
    # gpt-fast's KV cache: accepted (state is passed in place already); a non-tensor is torch's TypeError
    cache = tracegrad.zeros(2, 3)
    tracegrad._dynamo.mark_static_address(cache)
    with pytest.raises(TypeError, match="mark_static_address expects a tensor"):
        tracegrad._dynamo.mark_static_address([1.0])


def test_optimized_module_class_is_torch_dynamo_eval_frames():
    """``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)`` (how training scripts find
    ``model._orig_mod`` before saving a compiled model's state_dict) holds as in torch."""
    torch = pytest.importorskip("torch")
    for mod in (tracegrad, torch):
        import importlib
        eval_frame = importlib.import_module(mod.__name__ + "._dynamo.eval_frame")
        inner = mod.nn.Linear(2, 2)
        compiled = mod.compile(inner)
        assert isinstance(compiled, eval_frame.OptimizedModule) and isinstance(compiled, mod.nn.Module)
        assert not isinstance(inner, eval_frame.OptimizedModule)
        assert compiled._orig_mod is inner
        assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert tracegrad._dynamo.OptimizedModule is tracegrad._dynamo.eval_frame.OptimizedModule


def test_nested_compile_region_and_assume_constant_result_keep_results():
    """Both decorators (nested_compile_region with and without arguments) leave what the function
    computes unchanged, eagerly and inside a compiled function; a non-callable is a TypeError."""
    torch = pytest.importorskip("torch")
    outs = {}
    for mod in (tracegrad, torch):
        @mod.compiler.nested_compile_region
        def block(x):
            return x.sin() * 2

        @mod.compiler.nested_compile_region(max_reuse_entries=2)
        def block2(x):
            return x.cos() + 1

        @mod.compiler.assume_constant_result
        def scale():
            return 3.0
        f = mod.compile(lambda x: block(block2(x)) * scale())
        x = mod.arange(4.0)
        outs[mod] = [block(x).tolist(), [f(x).tolist() for _ in range(3)]]
    for ours, theirs in zip(outs[tracegrad], outs[torch]):
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
    with pytest.raises(TypeError, match="nested_compile_region"):
        tracegrad.compiler.nested_compile_region(3)


def test_recompile_limit_and_torch_2_13_compile_arguments():
    """``recompile_limit=`` bounds this function's programs (then its calls run eagerly, with the
    reason in stats), overriding the global limit; ``name``, ``isolate_recompiles`` and
    ``shapes_spec`` are accepted as torch's; a decorator with arguments keeps them."""
    f = tracegrad.compile(lambda x: x * 2, recompile_limit=2, name="double", isolate_recompiles=True)
    with pytest.warns(UserWarning, match="guards failed 2 times"):
        outs = [f(tracegrad.ones(n)).tolist() for n in range(1, 6)]
    assert outs == [[2.0] * n for n in range(1, 6)]
    assert f.stats["traces"] == 2 and f.stats["eager_calls"] == 3    # first call eager, then 2 programs

    @tracegrad.compile(recompile_limit=0, shapes_spec=None)
    def g(x):
        return x + 1
    assert [g(tracegrad.ones(1)).tolist() for _ in range(3)] == [[2.0]] * 3
    assert g.stats["traces"] == 0 and g.recompile_limit == 0
    with pytest.raises(TypeError, match="recompile_limit"):
        tracegrad.compile(lambda x: x, recompile_limit="8")


def test_optimized_module_attribute_writes_reach_the_original_as_torch():
    """torch's OptimizedModule is a view of the original module: ``cm.k = 3``, ``del cm.k`` and
    ``cm.training = False`` act on the original, which the compiled calls run (here they
    landed on the wrapper: the compiled forward kept reading the old number); ``len()``
    forwards too."""
    torch = pytest.importorskip("torch")

    def run(T, compile_):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.k = 1
                self.drop = T.nn.Dropout(0.0)

            def forward(self, x):
                return self.drop(x) * self.k + float(self.training)
        m = M()
        cm = compile_(T, m)
        out = []
        cm.training = False
        cm.k = 3
        out.append([cm(T.ones(3)).tolist(), m.k, m.training, m.drop.training, cm.training])
        cm.train()
        cm.eval()
        cm.k = 5
        out.append([cm(T.ones(3)).tolist(), m.k, m.training, m.drop.training, cm.training, "k" in vars(cm)])
        del cm.k
        out.append([hasattr(m, "k"), hasattr(cm, "k"), list(cm.state_dict())])
        seq = compile_(T, T.nn.Sequential(T.nn.ReLU(), T.nn.Tanh()))
        out.append(len(seq))
        with pytest.raises(TypeError, match="does not support len"):
            len(cm)
        return out
    ref = run(torch, lambda T, m: T.compile(m, backend="eager"))
    assert run(tracegrad, lambda T, m: T.compile(m)) == ref


def test_changing_shapes_named_at_the_limit_and_cached_shapes_stay_compiled():
    # a batch whose length changes on every call: one program per shape (XLA's are static),
    # so the cache-limit warning names the argument and says what to do; the shapes already
    # traced keep running their programs, a new one runs eagerly with eager's values
    w = tracegrad.ones(3, requires_grad=True)
    f = tracegrad.compile(lambda x, *, y: ((x * w).sum() + y.sum()), recompile_limit=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [f(tracegrad.full((n, 3), float(n)), y=tracegrad.ones(2)).item() for n in (1, 2, 3, 4, 2, 3)]
    assert got == [3.0 * n * n + 2.0 for n in (1, 2, 3, 4, 2, 3)]
    (reason, _), = f.stats["graph_breaks"]
    assert "the tensor argument(s) args[0] change shape between calls" in reason, reason
    assert "kwargs" not in reason and "Python number" not in reason, reason
    assert any("pad or bucket" in str(x.message) and "mark_dynamic" in str(x.message) for x in caught)
    # calls 1 (eager: the first call), 4 (past the limit); 2, 3 traced; 5 and 6 reuse them
    assert f.stats["traces"] == 2 and f.stats["eager_calls"] == 2, f.stats


def _varying_lengths(f, lengths, mark=None):
    got = []
    for n in lengths:
        x = tracegrad.full((n, 3), float(n))
        if mark is not None:
            mark(x)
        got.append(f(x).item())
    return got


@pytest.mark.parametrize("how", ["dynamic=True", "mark_dynamic", "maybe_mark_dynamic", "mark_dynamic list"])
def test_sizes_marked_dynamic_do_not_count_toward_the_limit(how):
    # NOTE [dynamic sizes]: every new length is still its own program, but none of them is a
    # recompile: no call past the second runs eagerly, and values stay eager's
    import tracegrad._dynamo as dyn
    w = tracegrad.ones(3, requires_grad=True)
    f = tracegrad.compile(lambda x: (x * w).sum(), recompile_limit=2, dynamic=how == "dynamic=True")
    mark = {"dynamic=True": None, "mark_dynamic": lambda x: dyn.mark_dynamic(x, 0),
            "maybe_mark_dynamic": lambda x: dyn.maybe_mark_dynamic(x, -2),
            "mark_dynamic list": lambda x: dyn.mark_dynamic(x, [0, 1])}[how]
    lengths = [1, 2, 3, 4, 5, 6, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _varying_lengths(f, lengths, mark)
    assert got == [3.0 * n * n for n in lengths]
    assert f.stats["traces"] == 5 and f.stats["eager_calls"] == 1 and not f.stats["graph_breaks"], f.stats


def test_dynamic_sizes_stop_at_the_accumulated_limit_and_other_changes_still_count():
    import tracegrad._dynamo as dyn
    old = dyn.config.accumulated_cache_size_limit
    assert old == tracegrad.compiler.accumulated_cache_size_limit == dyn.config.accumulated_recompile_limit == 256
    try:
        dyn.config.accumulated_recompile_limit = 3
        assert tracegrad.compiler.accumulated_cache_size_limit == 3
        f = tracegrad.compile(lambda x: x.sum() * 2, dynamic=True, recompile_limit=8)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            got = _varying_lengths(f, [1, 2, 3, 4, 5])
        assert got == [6.0 * n * n for n in (1, 2, 3, 4, 5)]
        assert f.stats["traces"] == 3 and f.stats["eager_calls"] == 2, f.stats
        assert "accumulated_cache_size_limit" in f.stats["graph_breaks"][0][0]
    finally:
        dyn.config.accumulated_cache_size_limit = old
    # a dtype change is no dynamic size: it counts toward cache_size_limit even with dynamic=True
    g = tracegrad.compile(lambda x: x.sum(), dynamic=True, recompile_limit=1)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for dt in (tracegrad.float32, tracegrad.float32, tracegrad.float64, tracegrad.int32):
            assert g(tracegrad.ones(2, dtype=dt)).item() == 2
    assert g.stats["traces"] == 1 and g.stats["eager_calls"] == 3, g.stats


def test_mark_static_dims_count_under_dynamic_true():
    import tracegrad._dynamo as dyn
    f = tracegrad.compile(lambda x: x.sum(), dynamic=True, recompile_limit=1)

    def static(x):
        dyn.mark_static(x, 0)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = _varying_lengths(f, [1, 2, 3, 4], static)
    assert got == [3.0 * n * n for n in (1, 2, 3, 4)]
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 3, f.stats


def test_dim_markers_check_their_arguments_as_torch():
    torch = pytest.importorskip("torch")
    import tracegrad._dynamo as dyn
    for lib, d in ((torch, torch._dynamo), (tracegrad, dyn)):
        t = lib.ones(2, 3)
        d.mark_dynamic(t, 0)
        d.mark_dynamic(t, (1,))
        d.maybe_mark_dynamic(t, [0])
        assert t._dynamo_dynamic_indices == {0, 1} and t._dynamo_weak_dynamic_indices == {0}
        assert d.mark_static(t) is None and t._dynamo_static_indices == {0, 1}
        with pytest.raises(AssertionError):
            d.mark_dynamic(t, "0")
        with pytest.raises(TypeError, match=None if lib is torch else "mark_static expects a tensor/nn.Module"):
            d.mark_static(3)      # torch's TypeError is issubclass()'s

        class M(lib.nn.Module):
            pass
        assert d.mark_static(M) is M and M._dynamo_marked_static is True


def test_partial_arguments_are_flattened_not_keyed_by_identity():
    # a new functools.partial per call over new tensors: one program, eager's values and
    # gradients; a number bound in it is keyed by value and named at the limit
    import functools

    def loss(x, target, scale=1.0):
        return ((x - target) ** 2).sum() * scale
    f = tracegrad.compile(lambda fn, x: fn(x), recompile_limit=2)
    for i in range(4):
        x = tracegrad.zeros(2, requires_grad=True)
        out = f(functools.partial(loss, target=tracegrad.ones(2) * i), x)
        out.backward()
        assert out.item() == 2.0 * i * i and x.grad.tolist() == [-2.0 * i] * 2
    assert f.stats["traces"] == 1 and f.stats["eager_calls"] == 1, f.stats
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = [f(functools.partial(loss, tracegrad.ones(2), scale=float(i)), tracegrad.zeros(2)).item()
               for i in range(4)]
    assert got == [2.0 * i for i in range(4)]
    reason = f.stats["graph_breaks"][-1][0]
    assert "argument(s) args[0].keywords['scale'] change" in reason, reason
