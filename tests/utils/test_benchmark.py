"""tracegrad.utils.benchmark against torch.utils.benchmark: Measurement statistics and report,
and Compare's tables, equal torch's on the same times; Timer runs the statement the number of
times asked, waits for its results, and reports what torch's Timer reports."""
import re

import numpy as np
import pytest

import tracegrad
from tracegrad.utils import benchmark

SPECS = [dict(stmt="x + x", setup="pass", label="add", sub_label="8", description="fp32"),
         dict(stmt="x * x", setup="pass", label="add", sub_label="8", description="mul"),
         dict(stmt="x + x", setup="pass", label="add", sub_label="64", description="fp32"),
         dict(stmt="x + x", setup="pass", label="add", sub_label="64", description="fp32", num_threads=2),
         dict(stmt="y = f(a)\ny.sum()", setup="a = 1", label=None, sub_label="big", description="d", env="env2"),
         dict(stmt="y", setup="a = 1\nb = 2", label=None, description="d", env="env1")]


def _pairs(n_times):
    torch = pytest.importorskip("torch")
    from torch.utils.benchmark.utils.common import TaskSpec
    rng = np.random.default_rng(0)
    ours, theirs = [], []
    for s in SPECS:
        raw = list(rng.uniform(1e-3, 1.3e-3, size=n_times) * (1 + 30 * rng.uniform()))
        ours.append(benchmark.Measurement(1000, raw, benchmark.TaskSpec(**s)))
        theirs.append(torch.utils.benchmark.Measurement(1000, raw, TaskSpec(**s)))
    return ours, theirs


@pytest.mark.parametrize("n_times", [1, 3, 9])
def test_measurement_statistics_and_repr_match_torch(n_times):
    ours, theirs = _pairs(n_times)
    for o, t in zip(ours, theirs):
        assert np.allclose([o.median, o.mean, o.iqr], [t.median, t.mean, t.iqr], rtol=1e-12)
        assert (o.significant_figures, o.has_warnings, o.title, o.env, o.as_row_name, o.times) == \
               (t.significant_figures, t.has_warnings, t.title, t.env, t.as_row_name, t.times)
        assert repr(o).splitlines()[1:] == repr(t).splitlines()[1:]      # all but the object's address
        assert repr(o).startswith("<tracegrad.utils.benchmark.common.Measurement object at")


@pytest.mark.parametrize("modes", [(), ("trim_significant_figures",), ("colorize",), ("highlight_warnings",),
                                   ("trim_significant_figures", "colorize", "highlight_warnings")])
def test_compare_tables_match_torch(modes):
    torch = pytest.importorskip("torch")
    ours, theirs = _pairs(6)
    keep = slice(0, 4)      # torch's Compare cannot draw a label-less group (its None label crashes)
    a, b = benchmark.Compare(ours[keep]), torch.utils.benchmark.Compare(theirs[keep])
    for m in modes:
        getattr(a, m)()
        getattr(b, m)()
    assert str(a) == str(b)
    rowwise_a, rowwise_b = benchmark.Compare(ours[keep]), torch.utils.benchmark.Compare(theirs[keep])
    rowwise_a.colorize(rowwise=True)
    rowwise_b.colorize(rowwise=True)
    assert str(rowwise_a) == str(rowwise_b)
    with pytest.raises(ValueError, match="Measurement"):
        benchmark.Compare([1.0])


def test_timer_runs_the_statement_and_reports_like_torch():
    torch = pytest.importorskip("torch")
    calls = []
    t = benchmark.Timer("f()", globals={"f": lambda: calls.append(1)}, label="lbl", sub_label="s", description="d")
    m = t.timeit(300)
    assert len(calls) == 3 + 300 and m.number_per_run == 300 and len(m.raw_times) == 1 and m.raw_times[0] > 0
    theirs = torch.utils.benchmark.Timer("f()", globals={"f": lambda: None}, label="lbl", sub_label="s",
                                         description="d").timeit(300)
    number = re.compile(r"\d+\.\d+ (ns|us|ms|s)")
    assert [number.sub("T", s) for s in repr(m).splitlines()[1:]] == \
           [number.sub("T", s) for s in repr(theirs).splitlines()[1:]]


def test_autoranges_meet_their_time_and_call_back():
    seen = []
    t = benchmark.Timer("torch.ones(2) + 1")          # `torch` defaults to tracegrad
    m = t.blocked_autorange(callback=lambda n, s: seen.append((n, s)), min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and [n for n, _ in seen] == [m.number_per_run] * len(m.raw_times)
    a = benchmark.Timer("x * 2", globals={"x": tracegrad.ones(3)}).adaptive_autorange(max_run_time=0.05)
    assert len(a.raw_times) > 3 or sum(a.raw_times) > 0.05
    assert a.median > 0 and a.number_per_run >= 1


def test_timer_waits_for_results(monkeypatch):
    import sys
    timer_mod = sys.modules["tracegrad.utils.benchmark.timer"]    # (benchmark.timer is the clock, as torch's)
    waited = []
    monkeypatch.setattr(timer_mod, "block", lambda values: waited.append(values))
    x = tracegrad.ones(3)
    benchmark.Timer("y = x * 2\ny + 1", globals={"x": x}).timeit(4)
    local_values = waited[-2]          # the statement's namespace, then the globals
    tensors = [v for v in local_values if isinstance(v, tracegrad.Tensor)]
    assert sorted(v.tolist()[0] for v in tensors) == [2.0, 3.0]      # y and the final expression
    assert any(v is x for v in waited[-1])


def test_timer_errors():
    with pytest.raises(ValueError, match="str"):
        benchmark.Timer(lambda: None)
    with pytest.raises(NotImplementedError, match="Python"):
        benchmark.Timer("x", language=benchmark.Language.CPP)
    with pytest.raises(SyntaxError):
        benchmark.Timer("x +")
    with pytest.raises(ValueError, match="num_threads"):
        benchmark.Timer("pass", num_threads=0)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        benchmark.Timer("pass").repeat()
