"""tracegrad.utils.data against torch.utils.data: same batches (structure, values, dtypes)
for unshuffled loaders, the same errors for conflicting options, and shuffling that is a
true permutation, reproducible per seed."""
import collections
import importlib
import warnings

import numpy as np
import pytest

import tracegrad
import tracegrad.utils.data as tdata

torch = pytest.importorskip("torch")
import torch.utils.data as torch_data  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


def to_py(obj):
    """A batch as plain Python: tensors -> (kind, dtype name, shape, values)."""
    if isinstance(obj, (tracegrad.Tensor, torch.Tensor)):
        return ("T", str(obj.dtype).split(".")[-1], tuple(obj.shape), obj.tolist())
    if isinstance(obj, dict):
        return {"type": type(obj).__name__, **{k: to_py(v) for k, v in obj.items()}}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(to_py(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [to_py(v) for v in obj])
    return obj


def both(make):
    """Run ``make(module, data_module)`` for tracegrad and torch; return both results as Python."""
    return to_py(make(tracegrad, tdata)), to_py(make(torch, torch_data))


def tensor_ds(t, d, n=10):
    x = t.arange(n * 3, dtype=t.float32).reshape(n, 3)
    y = t.arange(n) % 4
    return d.TensorDataset(x, y)


class DictDataset:
    """Map-style dataset (not a Dataset subclass, as torch allows) with mixed sample types."""

    def __init__(self, t, n=7):
        self.t, self.n = t, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = self.t
        return {"img": t.full((2, 2), float(i)), "label": i, "w": i * 0.5,
                "np": np.arange(3, dtype=np.int32) + i, "npf": np.float32(i) / 2,
                "name": f"s{i}", "pt": Point(t.tensor([i]), i), "pair": (i, [i, -i]), "flag": i % 2 == 0}


class CountStream:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def count_stream(d, n):
    cls = type("Stream", (CountStream, d.IterableDataset), {})
    return cls(n)


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, True), (10, False), (32, False)])
def test_tensor_dataset_batches_match_torch(batch_size, drop_last):
    a, b = both(lambda t, d: list(d.DataLoader(tensor_ds(t, d), batch_size=batch_size, drop_last=drop_last)))
    assert a == b
    la = len(tdata.DataLoader(tensor_ds(tracegrad, tdata), batch_size=batch_size, drop_last=drop_last))
    lb = len(torch_data.DataLoader(tensor_ds(torch, torch_data), batch_size=batch_size, drop_last=drop_last))
    assert la == lb == len(a[1])


def test_tensor_dataset_fast_path_equals_per_sample_collate():
    ds = tensor_ds(tracegrad, tdata)
    fast = list(tdata.DataLoader(ds, batch_size=4))
    slow = list(tdata.DataLoader(ds, batch_size=4, collate_fn=lambda b: tdata.default_collate(b)))
    assert to_py(fast) == to_py(slow)


def test_tensor_dataset_with_grad_stacks_like_torch():
    def make(t, d):
        x = t.ones(4, 2, requires_grad=True)
        (batch,) = next(iter(d.DataLoader(d.TensorDataset(x), batch_size=2)))
        return type(batch.grad_fn).__name__, batch.requires_grad
    assert make(tracegrad, tdata) == make(torch, torch_data)


def test_mixed_sample_types_collate_like_torch():
    a, b = both(lambda t, d: list(d.DataLoader(DictDataset(t), batch_size=3)))
    assert a == b


def test_default_collate_and_convert_direct():
    samples = lambda t: [(t.tensor([1.0, 2.0]), 3, np.array([1.5]), "a"), (t.tensor([3.0, 4.0]), 4, np.array([2.5]), "b")]
    assert to_py(tdata.default_collate(samples(tracegrad))) == to_py(torch_data.default_collate(samples(torch)))
    conv = lambda t: {"a": np.arange(3), "b": [np.float64(2.0), 3], "c": (np.zeros(2, np.float32),), "s": "x"}
    assert to_py(tdata.default_convert(conv(tracegrad))) == to_py(torch_data.default_convert(conv(torch)))


def test_collate_errors_match_torch():
    for bad in ([object(), object()], [[1, 2], [3]], [np.array(["a"]), np.array(["b"])]):
        with pytest.raises(Exception) as e_torch:
            torch_data.default_collate(bad)
        with pytest.raises(e_torch.type) as e_ours:
            tdata.default_collate(bad)
        assert str(e_ours.value) == str(e_torch.value)


def test_batch_size_none_uses_default_convert():
    a, b = both(lambda t, d: list(d.DataLoader(DictDataset(t, 3), batch_size=None)))
    assert a == b


def test_samplers_and_batch_sampler_match_torch():
    a, b = both(lambda t, d: [list(d.SequentialSampler(range(5))),
                              list(d.BatchSampler(d.SequentialSampler(range(10)), 3, False)),
                              list(d.BatchSampler(range(10), 3, True)),
                              len(d.BatchSampler(range(10), 3, False)), len(d.BatchSampler(range(10), 3, True)),
                              len(d.RandomSampler(range(7))), len(d.RandomSampler(range(7), True, 20)),
                              len(d.WeightedRandomSampler([1.0, 2.0], 5)), len(d.SubsetRandomSampler([4, 5]))])
    assert a == b


def test_custom_sampler_and_batch_sampler_loaders_match_torch():
    order = [3, 1, 4, 1, 5, 9, 2, 6]
    a, b = both(lambda t, d: list(d.DataLoader(tensor_ds(t, d), batch_size=3, sampler=order)))
    assert a == b
    batches = [[0, 1], [9], [2, 3, 4]]
    a, b = both(lambda t, d: (list(d.DataLoader(tensor_ds(t, d), batch_sampler=batches)),
                              len(d.DataLoader(tensor_ds(t, d), batch_sampler=batches))))
    assert a == b


def test_subset_concat_stack_datasets_match_torch():
    def make(t, d):
        ds = tensor_ds(t, d)
        cat = d.ConcatDataset([d.Subset(ds, [1, 3, 5]), ds])
        stk = d.StackDataset(a=ds, b=ds)
        return (len(cat), cat.cumulative_sizes, cat[-1], cat[2], cat[4], list(d.DataLoader(cat, batch_size=5)),
                list(d.DataLoader(stk, batch_size=4)), len(ds + ds))
    a, b = both(make)
    assert a == b


def test_iterable_dataset_loader_matches_torch():
    for bs, drop in [(3, False), (3, True), (None, False), (5, False)]:
        a, b = both(lambda t, d: (list(d.DataLoader(count_stream(d, 7), batch_size=bs, drop_last=drop)),
                                  len(d.DataLoader(count_stream(d, 7), batch_size=bs, drop_last=drop))))
        assert a == b
    a, b = both(lambda t, d: list(count_stream(d, 2) + count_stream(d, 3)))
    assert a == b


def _errors(make):
    """The exception (class, message) raised by make(t, d) for each module."""
    out = []
    for t, d in ((tracegrad, tdata), (torch, torch_data)):
        with pytest.raises(Exception) as e:
            make(t, d)
        out.append((e.type, str(e.value)))
    return out


@pytest.mark.parametrize("kwargs", [
    dict(sampler=[0, 1], shuffle=True),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(persistent_workers=True),
    dict(batch_size=0),
    dict(batch_size=2.5),
])
def test_conflicting_options_raise_like_torch(kwargs):
    a, b = _errors(lambda t, d: d.DataLoader(tensor_ds(t, d), **kwargs))
    assert a == b


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_iterable_dataset_option_errors_like_torch(kwargs):
    a, b = _errors(lambda t, d: d.DataLoader(count_stream(d, 3), **kwargs))
    assert a[0] == b[0] and a[1].split("got")[0] == b[1].split("got")[0]


def test_other_errors_like_torch():
    cases = [
        lambda t, d: d.TensorDataset(t.zeros(3), t.zeros(4)),
        lambda t, d: d.RandomSampler(range(3), replacement=1),
        lambda t, d: d.RandomSampler(range(3), num_samples=0),
        lambda t, d: d.WeightedRandomSampler([[1.0, 2.0]], 2),
        lambda t, d: d.WeightedRandomSampler([1.0, 2.0], 0),
        lambda t, d: d.BatchSampler(range(3), 2, drop_last=None),
        lambda t, d: d.ConcatDataset([]),
        lambda t, d: d.ConcatDataset([count_stream(d, 3)]),
        lambda t, d: d.ConcatDataset([range(3)])[-4],
        lambda t, d: d.random_split(range(10), [3, 3]),
        lambda t, d: d.random_split(range(10), [1.2, -0.2]),
        lambda t, d: setattr(d.DataLoader(range(3)), "batch_size", 2),
        lambda t, d: d.Dataset()[0],
    ]
    for make in cases:
        a, b = _errors(make)
        assert a == b


def test_shuffle_is_reproducible_permutation():
    ds = tensor_ds(tracegrad, tdata, n=50)

    def epoch(seed):
        g = tracegrad.Generator().manual_seed(seed)
        loader = tdata.DataLoader(ds, batch_size=8, shuffle=True, generator=g)
        return [i for _, y in loader for i in y.tolist()], [row[0] // 3 for x, _ in loader for row in x.tolist()]

    first, second = epoch(3)
    assert sorted(second) == list(range(50)) and len(second) == 50
    assert epoch(3) == (first, second)
    assert epoch(4)[1] != second
    assert second != list(range(50))
    # the global seed fixes the order when no generator is given (as torch)
    loader = tdata.DataLoader(ds, batch_size=50, shuffle=True)
    tracegrad.manual_seed(7)
    e1 = next(iter(loader))[0][:, 0].tolist()
    e2 = next(iter(loader))[0][:, 0].tolist()
    tracegrad.manual_seed(7)
    assert next(iter(loader))[0][:, 0].tolist() == e1 and e1 != e2


def test_random_samplers_properties():
    g = lambda s: tracegrad.Generator().manual_seed(s)
    assert sorted(tdata.SubsetRandomSampler([10, 20, 30, 40], g(0))) == [10, 20, 30, 40]
    draws = list(tdata.RandomSampler(range(5), replacement=True, num_samples=70, generator=g(0)))
    assert len(draws) == 70 and set(draws) <= set(range(5)) and len(set(draws)) > 1
    wr = list(tdata.RandomSampler(range(4), num_samples=10, generator=g(1)))
    assert sorted(wr[:4]) == sorted(wr[4:8]) == [0, 1, 2, 3] and len(wr) == 10
    w = list(tdata.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=g(2)))
    assert set(w) == {1, 3} and w.count(3) > w.count(1)
    nr = list(tdata.WeightedRandomSampler([1.0, 1.0, 1.0, 0.5], 4, replacement=False, generator=g(3)))
    assert sorted(nr) == [0, 1, 2, 3]
    assert list(tdata.RandomSampler(range(9), generator=g(5))) == list(tdata.RandomSampler(range(9), generator=g(5)))


def test_random_split_lengths_fractions_and_generator():
    parts = tdata.random_split(range(10), [3, 7], generator=tracegrad.Generator().manual_seed(42))
    again = tdata.random_split(range(10), [3, 7], generator=tracegrad.Generator().manual_seed(42))
    assert [list(p) for p in parts] == [list(p) for p in again]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    fr = tdata.random_split(range(30), [0.3, 0.3, 0.4], generator=tracegrad.Generator().manual_seed(0))
    tr = torch_data.random_split(range(30), [0.3, 0.3, 0.4], generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in fr] == [len(p) for p in tr]
    odd = tdata.random_split(range(11), [0.5, 0.5])
    assert [len(p) for p in odd] == [len(p) for p in torch_data.random_split(range(11), [0.5, 0.5])]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tdata.random_split(range(2), [0.9, 0.1])
    assert any("Length of split at index 1 is 0" in str(x.message) for x in w)


def test_num_workers_accepted_and_loads_in_process():
    loader = tdata.DataLoader(tensor_ds(tracegrad, tdata), batch_size=4, num_workers=2, persistent_workers=True)
    assert to_py(list(loader)) == to_py(list(tdata.DataLoader(tensor_ds(tracegrad, tdata), batch_size=4)))
    assert tdata.get_worker_info() is None


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(n=st.integers(0, 40), batch_size=st.integers(1, 12), drop_last=st.booleans(),
                  sampler=st.sampled_from(["sequential", "list", "range"]))
def test_batching_property_matches_torch(n, batch_size, drop_last, sampler):
    def make(t, d):
        src = {"sequential": d.SequentialSampler(range(n)), "list": list(range(n))[::-1],
               "range": range(n)}[sampler]
        bs = d.BatchSampler(src, batch_size, drop_last)
        loader = d.DataLoader(list(range(n)), batch_size=batch_size, drop_last=drop_last, sampler=src,
                              collate_fn=lambda b: b)
        return list(bs), len(bs), [b for b in loader], len(loader)
    assert make(tracegrad, tdata) == make(torch, torch_data)


def test_pin_memory_without_an_accelerator_warns_on_every_pass_like_torch():
    counts = []
    for m in (torch, tracegrad):
        dl = m.utils.data.DataLoader(range(4), batch_size=2, pin_memory=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            list(dl), list(dl)
        counts.append(sum("pin_memory" in str(x.message) for x in w))
    if torch.accelerator.is_available() or tracegrad.accelerator.is_available():
        pytest.skip("an accelerator is present: no warning on either side")
    assert counts == [2, 2]


# ---- num_workers > 0: torch's worker-visible behaviour (emulated in-process here) --------------
def _worker_program(mod, case):
    data = importlib.import_module(mod.__name__ + ".utils.data")

    class Map(data.Dataset):
        calls = 0

        def __len__(self):
            return 7

        def __getitem__(self, i):
            info = data.get_worker_info()
            return mod.tensor([float(i)]), (info.id, info.num_workers, self.calls)

    class Stream(data.IterableDataset):
        def __init__(self, start, end, shard):
            self.start, self.end, self.shard = start, end, shard

        def __iter__(self):
            info = data.get_worker_info()
            if self.shard and info is not None:   # torch's documented sharding inside __iter__
                return iter(range(self.start + info.id, self.end, info.num_workers))
            return iter(range(self.start, self.end))

    def split(worker_id):   # torch's documented worker_init_fn: each worker's copy gets a range
        ds = data.get_worker_info().dataset
        per = -(-(ds.end - ds.start) // data.get_worker_info().num_workers)
        ds.start, ds.end = ds.start + worker_id * per, min(ds.start + (worker_id + 1) * per, ds.end)

    def count(worker_id):
        data.get_worker_info().dataset.calls += 1

    def show(loader, passes=1):
        return [[b if isinstance(b, int) else (b.tolist() if isinstance(b, mod.Tensor) else
                 [x.tolist() if isinstance(x, mod.Tensor) else [list(map(int, v)) for v in zip(*x)] for x in b])
                 for b in loader] for _ in range(passes)]
    return {
        "map": lambda: show(data.DataLoader(Map(), batch_size=3, num_workers=2)),
        "map persistent init": lambda: show(data.DataLoader(Map(), batch_size=2, num_workers=2, worker_init_fn=count,
                                                            persistent_workers=True), 2),
        "map init per pass": lambda: show(data.DataLoader(Map(), batch_size=2, num_workers=2, worker_init_fn=count), 2),
        "iterable unsharded": lambda: show(data.DataLoader(Stream(0, 5, False), batch_size=2, num_workers=2)),
        "iterable sharded": lambda: show(data.DataLoader(Stream(0, 9, True), batch_size=2, num_workers=2)),
        "init_fn split uneven": lambda: show(data.DataLoader(Stream(0, 7, False), batch_size=2, num_workers=3,
                                                             worker_init_fn=split)),
        "drop_last": lambda: show(data.DataLoader(Stream(0, 7, False), batch_size=2, num_workers=2,
                                                  worker_init_fn=split, drop_last=True)),
        "no batching": lambda: show(data.DataLoader(Stream(0, 5, True), batch_size=None, num_workers=2)),
        "main process": lambda: data.get_worker_info(),
        "more workers than cpus": lambda: _warnings_with_one_cpu(data),
    }[case]()


def _warnings_with_one_cpu(data):
    import os
    import warnings
    saved = os.sched_getaffinity, os.cpu_count
    os.sched_getaffinity, os.cpu_count = (lambda pid: {0}), (lambda: 1)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            list(data.DataLoader(list(range(4)), batch_size=2, num_workers=2))
    finally:
        os.sched_getaffinity, os.cpu_count = saved
    return [(c.category.__name__, str(c.message)) for c in w if c.category is UserWarning]


_WORKER_CASES = ["map", "map persistent init", "map init per pass", "iterable unsharded", "iterable sharded",
                 "init_fn split uneven", "drop_last", "no batching", "main process", "more workers than cpus"]


@pytest.fixture(scope="module")
def torch_worker_results():
    """torch's results with real worker processes, from a fresh interpreter: forking this one,
    which runs JAX's threads, could deadlock (JAX warns so)."""
    import inspect
    import json
    import subprocess
    import sys
    code = ("import importlib, json, torch\n" + inspect.getsource(_worker_program) + inspect.getsource(_warnings_with_one_cpu)
            + f"print(json.dumps({{c: _worker_program(torch, c) for c in {_WORKER_CASES!r}}}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", _WORKER_CASES)
def test_worker_results_order_and_warnings_as_torch(case, torch_worker_results):
    import json
    assert json.loads(json.dumps(_worker_program(tracegrad, case))) == torch_worker_results[case]


