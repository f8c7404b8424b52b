"""tracegrad.profiler / tracegrad.autograd.profiler against torch.profiler: the same program
records the same op and backward-node names and counts, record_function ranges nest their ops,
schedules step through the same actions and hand over the same traces, tables sort and
limit as asked, chrome traces are valid JSON; forward AD and the profiler nest either way."""
import gzip
import json
import warnings

import numpy as np
import pytest

import tracegrad
from tracegrad import profiler as tp


def _program(t, backward=True):
    x = t.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    w = t.tensor([[0.5, 1.0], [-1.0, 2.0]], requires_grad=True)
    with t.profiler.record_function("forward"):
        y = t.mm(x, w).relu()
        loss = (y * y).sum()
    if backward:
        loss.backward()
    with t.no_grad():
        w.add_(1.0)
    return x, w


def _counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


# names both record: torch's aten ops that tracegrad runs one for one, torch's engine ranges
FORWARD = ["forward", "aten::mm", "aten::relu", "aten::mul", "aten::sum", "aten::add_"]
SHARED = FORWARD + ["autograd::engine::evaluate_function: SumBackward0",
          "autograd::engine::evaluate_function: MulBackward0",
          "autograd::engine::evaluate_function: ReluBackward0",
          "autograd::engine::evaluate_function: MmBackward0",
          "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]


@pytest.mark.parametrize("backward", [False, True])
def test_op_and_node_names_and_counts_match_torch(backward):
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as theirs:
        _program(torch, backward)
    with tp.profile(activities=[tp.ProfilerActivity.CPU]) as ours:
        _program(tracegrad, backward)
    c_ours, c_theirs = _counts(ours), _counts(theirs)
    # a backward node is one jitted VJP here (torch runs aten ops inside it): without backward
    # every op count matches; with it, the engine's ranges and the ops' names do
    names = FORWARD if not backward else [k for k in SHARED if not k.startswith("aten::")]
    assert {k: c_ours.get(k) for k in names} == {k: c_theirs.get(k) for k in names}
    assert set(c_ours) >= set(SHARED if backward else FORWARD)
    assert all(k.startswith(("aten::", "autograd::engine::", "forward")) for k in c_ours)


def test_ranges_nest_and_time_adds_up():
    with tp.profile(record_shapes=True, profile_memory=True) as prof:
        _program(tracegrad)
    events = prof.events()
    (fwd,) = [e for e in events if e.name == "forward"]
    inside = [e for e in events if e.parent_id == fwd.id]
    assert [e.name for e in inside] == ["aten::mm", "aten::relu", "aten::mul", "aten::sum"]
    assert all(fwd.start_ns <= e.start_ns <= e.end_ns <= fwd.end_ns for e in inside)
    assert fwd.self_cpu_time_total == pytest.approx(fwd.cpu_time_total - sum(e.cpu_time_total for e in inside),
                                                    abs=1e-3)
    mm = next(e for e in inside if e.name == "aten::mm")
    assert mm.input_shapes == [[2, 2], [2, 2]]
    assert mm.self_cpu_memory_usage == 2 * 2 * 4            # its float32 output
    assert fwd.cpu_memory_usage == sum(e.cpu_memory_usage for e in inside) and fwd.self_cpu_memory_usage == 0
    assert prof.key_averages().self_cpu_time_total == pytest.approx(events.self_cpu_time_total)


def test_table_sorts_limits_and_rejects_unknown_keys():
    with tp.profile(profile_memory=True) as prof:
        _program(tracegrad)
    avg = prof.key_averages()
    table = avg.table(sort_by="self_cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "CPU Mem" in lines[1] and "# of Calls" in lines[1]
    rows = lines[3:6]
    assert lines[6].startswith("---") and lines[7].startswith("Self CPU time total:")
    expected = sorted(avg, key=lambda e: e.self_cpu_time_total, reverse=True)[:3]
    assert [r.split()[0] for r in rows] == [e.key.split()[0] for e in expected]
    by_count = avg.table(sort_by="count", row_limit=-1).splitlines()[3:-2]
    calls = [int(r.split()[-1]) for r in by_count]
    assert len(by_count) == len(avg) and calls == sorted(calls, reverse=True) and calls[0] > 1
    with pytest.raises(AttributeError, match="sort by"):
        avg.table(sort_by="no_such_column")
    shapes = tp.profile(record_shapes=True)
    with shapes:
        _program(tracegrad)
    assert "Input Shapes" in shapes.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" not in shapes.key_averages().table()


def test_chrome_trace_is_valid_json(tmp_path):
    with tp.profile(record_shapes=True) as prof:
        _program(tracegrad)
    for name, opener in (("t.json", open), ("t.json.gz", gzip.open)):
        prof.export_chrome_trace(str(tmp_path / name))
        with opener(tmp_path / name, "rt") as f:
            doc = json.load(f)
        spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert {e["name"] for e in spans} >= set(SHARED)
        for e in spans:
            assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["tid"], int)
        fwd = next(e for e in spans if e["name"] == "forward")
        mm = next(e for e in spans if e["name"] == "aten::mm")
        assert fwd["cat"] == "user_annotation" and mm["cat"] == "cpu_op" and mm["args"]["Input Dims"] == [[2, 2], [2, 2]]
        assert fwd["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
                                dict(wait=2, warmup=1, active=2, repeat=1, skip_first=3),
                                dict(wait=3, warmup=1, active=1, skip_first=1, skip_first_wait=1)])
def test_schedule_actions_match_torch(kw):
    torch = pytest.importorskip("torch")
    ours, theirs = tp.schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(s).name for s in range(16)] == [theirs(s).name for s in range(16)]


def test_schedule_errors_and_warning():
    with pytest.raises(AssertionError, match="active=0"):
        tp.schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="warmup"):
        s = tp.schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="non-negative"):
        s(-1)


def _stepped(t, steps, **sched):
    seen = []

    def ready(prof):
        seen.append(sorted((e.key, e.count) for e in prof.key_averages() if e.key in ("ProfilerStep*", "aten::mul")))
    x = t.ones(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with t.profiler.profile(activities=[t.profiler.ProfilerActivity.CPU],
                                schedule=t.profiler.schedule(**sched), on_trace_ready=ready) as p:
            for _ in range(steps):
                x = x * 2
                p.step()
    return seen


@pytest.mark.parametrize("steps,sched", [(8, dict(wait=1, warmup=1, active=2)),
                                         (5, dict(wait=0, warmup=0, active=3)),
                                         (7, dict(wait=1, warmup=1, active=2, repeat=1))])
def test_scheduled_traces_match_torch(steps, sched):
    torch = pytest.importorskip("torch")
    assert _stepped(tracegrad, steps, **sched) == _stepped(torch, steps, **sched)


def test_tensorboard_trace_handler(tmp_path):
    handler = tp.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with tp.profile(schedule=tp.schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler) as p:
        for _ in range(5):
            tracegrad.ones(2) + 1
            p.step()
    files = sorted(p.name for p in (tmp_path / "tb").iterdir())
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    doc = json.loads((tmp_path / "tb" / files[0]).read_text())
    assert any(e.get("name") == "aten::add" for e in doc["traceEvents"])
    assert sorted(e["name"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep")) == ["ProfilerStep#1"]


def test_record_function_decorator_and_jax_annotation(monkeypatch):
    import jax
    names = []

    class Annotation:
        def __init__(self, name):
            names.append(name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    monkeypatch.setattr(jax.profiler, "TraceAnnotation", Annotation)

    @tp.record_function("step_fn")
    def step(a):
        return a * 3

    with tp.profile() as prof:
        out = step(tracegrad.ones(2))
    with tracegrad.autograd.profiler.record_function("outside"):   # no profiler: only JAX sees it
        pass
    assert names == ["step_fn", "outside"] and out.tolist() == [3.0, 3.0]
    (ev,) = [e for e in prof.events() if e.name == "step_fn"]
    assert [e.name for e in prof.events() if e.parent_id == ev.id] == ["aten::mul"]
    with pytest.raises(RuntimeError, match="type 'str' for argument 'name'"):   # on entry, as torch's
        tp.record_function(3).__enter__()


def test_with_stack_points_at_the_caller():
    with tp.profile(with_stack=True) as prof:
        tracegrad.ones(2).exp()
    ev = next(e for e in prof.events() if e.name == "aten::exp")
    assert "test_profiler.py" in ev.stack[0] and "test_with_stack_points_at_the_caller" in ev.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


@pytest.mark.parametrize("profiler_first", [True, False])
def test_nests_with_forward_ad_both_ways(profiler_first):
    import contextlib

    import tracegrad.autograd.forward_ad as fwAD
    x, v = tracegrad.tensor([1.0, 2.0]), tracegrad.tensor([1.0, 0.5])
    prof = tp.profile()
    outer, inner = (prof, fwAD.dual_level()) if profiler_first else (fwAD.dual_level(), prof)
    with contextlib.ExitStack() as stack:
        stack.enter_context(outer)
        stack.enter_context(inner)
        y = fwAD.make_dual(x, v).exp()
        primal, tangent = fwAD.unpack_dual(y)
        assert np.allclose(tangent.numpy(), np.exp([1.0, 2.0]) * [1.0, 0.5])
    from tracegrad import _state
    assert _state.INTERPOSE[0] is None and _state.PROFILER[0] is None and _state.FORWARD_AD[0] is None
    assert _counts(prof).get("aten::exp") == 1
    assert sum(n for k, n in _counts(prof).items() if k.startswith("aten::")) >= 2   # the tangent's ops too
    assert (x * 2).tolist() == [2.0, 4.0]


def test_compiled_call_is_one_event():
    @tracegrad.compile
    def f(a):
        return (a * 2 + 1).sum()
    a = tracegrad.ones(3)
    f(a)                              # first call runs eagerly (creates state), outside the profile
    with tp.profile() as prof:
        r1, r2 = f(a), f(a)           # traced, then the cached program
    assert r1.item() == r2.item() == 9.0
    regions = [e for e in prof.events() if e.name == "Torch-Compiled Region: test_compiled_call_is_one_event.<locals>.f"]
    assert len(regions) == 2
    assert not [e for e in prof.events() if e.name.startswith("aten::")]


def test_optimizer_ranges_match_torch():
    torch = pytest.importorskip("torch")

    def program(t):
        p = t.nn.Parameter(t.ones(2))
        opt = t.optim.SGD([p], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as theirs:
        program(torch)
    with tp.profile() as ours:
        program(tracegrad)
    keys = ["Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"]
    assert [_counts(ours).get(k) for k in keys] == [_counts(theirs).get(k) for k in keys] == [2, 2]


def test_event_names_are_torchs():
    torch = pytest.importorskip("torch")
    from tracegrad._ops.registry import OPS
    from tracegrad.profiler._names import _TORCH_NAMES, event_name
    assert all(hasattr(torch.ops.aten, v) for v in _TORCH_NAMES.values())
    assert set(_TORCH_NAMES) <= set(OPS)

    def program(t):
        x = t.ones(3, 2)
        x[0], x[:, 1], x[None], x.sum(0), x.pow(x), x.squeeze(1), x.unsqueeze(0)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as theirs:
        program(torch)
    with tp.profile() as ours:
        program(tracegrad)
    assert set(_counts(ours)) <= set(_counts(theirs))
    assert event_name(OPS["add"], inplace=True) == "aten::add_"


def test_autograd_profiler_legacy_api():
    from tracegrad.autograd import profiler as ap
    p = ap.profile(record_shapes=True)
    with pytest.raises(RuntimeError, match="finished"):
        p.key_averages()
    with p:
        _program(tracegrad)
    with pytest.raises(RuntimeError, match="reentrant"):
        p.__enter__()
    assert {e.name for e in p.function_events} >= set(SHARED)
    assert p.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in p.function_events))
    assert p.total_average().count == len(p.function_events)
    assert "aten::mm" in p.table(sort_by="cpu_time_total") and "aten::mm" in str(p)
    with ap.profile(enabled=False) as off:
        tracegrad.ones(2) + 1
    assert off._events is None and tracegrad.autograd.profiler is ap


def test_nested_profiles_each_record_their_block():
    with tp.profile() as outer:
        tracegrad.ones(2).exp()
        with tp.profile() as inner:
            tracegrad.ones(2).sin()
        tracegrad.ones(2).cos()
    assert sorted(_counts(inner)) == ["aten::sin"]
    assert sorted(_counts(outer)) == ["aten::cos", "aten::exp"]
    from tracegrad import _state
    assert _state.INTERPOSE[0] is None


def test_autograd_profiler_enabled_flag_as_torch():
    # torch.autograd._profiler_enabled(): True only while a profiler records (torch's test_profiler)
    torch = pytest.importorskip("torch")

    def flags(t):
        out = [t.autograd._profiler_enabled()]
        with t.autograd.profiler.profile():
            out.append(t.autograd._profiler_enabled())
        out.append(t.autograd._profiler_enabled())
        with t.profiler.profile():
            out.append(t.autograd._profiler_enabled())
        return out
    assert flags(tracegrad) == flags(torch) == [False, True, False, True]


def test_profiler_warnings_as_torch(fresh_warn_once, monkeypatch):
    # torch's warnings on a machine without a GPU (nanoGPT's bench.py profiles with
    # activities=[CPU, CUDA]): the CUDA activity dropped with a warning at each trace, the
    # events-cleared-per-cycle warning once per process from the second cycle, the autograd
    # profiler's use_cuda deprecation and its dropped device
    torch = pytest.importorskip("torch")
    if tracegrad.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("the warnings are those of a machine without a GPU")
    # torch's once-per-process set, fresh for this test as tracegrad's (fresh_warn_once)
    monkeypatch.setattr(torch.profiler.profiler, "_WARNINGS_SHOWN", set())

    def run(t):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            acts = [t.profiler.ProfilerActivity.CPU, t.profiler.ProfilerActivity.CUDA]
            for _ in range(2):        # a second profiler: the once-per-process warning is not repeated
                with t.profiler.profile(activities=acts, schedule=t.profiler.schedule(wait=1, warmup=1, active=1,
                                                                                      repeat=2)) as prof:
                    for _ in range(7):
                        t.ones(2).sum()
                        prof.step()
            with t.profiler.profile(activities=[t.profiler.ProfilerActivity.CPU]):
                t.ones(2).sum()
            with t.profiler.profile(activities=acts, acc_events=True, schedule=t.profiler.schedule(
                    wait=0, warmup=1, active=1, repeat=2)) as prof:
                for _ in range(5):
                    prof.step()
            for kw in ({"use_cuda": True}, {"use_device": "cuda"}, {"use_cuda": True, "enabled": False}):
                with t.autograd.profiler.profile(**kw):
                    t.ones(2).sum()
        return [(w.category.__name__, str(w.message)) for w in rec]
    ref = run(torch)
    assert run(tracegrad) == ref
    cuda = ("UserWarning", "CUDA is not available, disabling CUDA profiling")
    # two profilers of two cycles, one accumulating profiler, two autograd profilers (not the disabled one)
    assert ref.count(cuda) == 2 * 2 + 1 + 2 and ref[1][1].startswith("Warning: Profiler clears events"), ref
    assert ref[-3][0] == "FutureWarning" and ref[-3:] == [ref[-3], cuda, cuda], ref
