"""``tracegrad.multiprocessing`` against ``torch.multiprocessing``: the same names, sharing
strategies and ``spawn``'s error reporting; ``share_memory_`` warns that tensors are copied (not
shared) between processes, where torch moves them to shared memory."""
import warnings

import pytest

import tracegrad
import tracegrad.multiprocessing as tmp

torch = pytest.importorskip("torch")
import torch.multiprocessing as mp  # noqa: E402


def test_torch_multiprocessing_names_exist():
    missing = [n for n in mp.__all__ + ["spawn", "start_processes", "ProcessRaisedException",
                                        "ProcessExitedException", "ProcessContext"] if not hasattr(tmp, n)]
    assert missing == []
    assert tmp.Process is mp.Process and tmp.Queue is mp.Queue


def test_sharing_strategies():
    assert tmp.get_all_sharing_strategies() == mp.get_all_sharing_strategies()
    assert tmp.get_sharing_strategy() == mp.get_sharing_strategy()
    tmp.set_sharing_strategy("file_system")
    assert tmp.get_sharing_strategy() == "file_system"
    tmp.set_sharing_strategy("file_descriptor")
    for m in (mp, tmp):
        with pytest.raises(AssertionError):
            m.set_sharing_strategy("shm")


def _spawn(m, fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # JAX's warning that os.fork() meets its threads
        return m.spawn(fn, args=args, nprocs=2, start_method="fork")


def test_spawn_joins_and_reports_a_child_exception_as_torch():
    # builtins as the process functions: fn(i, *args) runs in each child
    assert _spawn(tmp, max, (1,)) is None
    # torch's own spawn takes ~13 s here, so only the exception hierarchy is compared with it
    with pytest.raises(tmp.ProcessRaisedException, match="TypeError") as info:
        _spawn(tmp, int, ("not a base",))
    assert info.value.error_index in (0, 1)
    for name in ("ProcessRaisedException", "ProcessExitedException"):
        assert [c.__name__ for c in getattr(tmp, name).__mro__[:3]] == [c.__name__ for c in getattr(mp, name).__mro__[:3]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = tmp.spawn(max, args=(1,), nprocs=1, join=False, start_method="fork")
    assert len(ctx.pids()) == 1 and ctx.join() is True


def test_share_memory_warns_that_processes_get_copies():
    t = tracegrad.ones(2)
    with pytest.warns(UserWarning, match="cannot share a tensor's memory"):
        assert t.share_memory_() is t
    assert t.is_shared() is True and tracegrad.ones(2).is_shared() is False   # marked, as torch
    model = tracegrad.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="cannot share"):
        assert model.share_memory() is model
