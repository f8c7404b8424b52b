"""``tracegrad.utils.module_tracker.ModuleTracker``: the same program under torch's and ours
records the same ``parents`` and ``is_bw`` in forward, in backward and after each."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")
import torch.utils.module_tracker  # noqa: E402  (torch loads it lazily)


def _program(lib):
    log = []

    class Rec(lib.nn.Module):
        def __init__(self, tracker):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.tracker = tracker

        def forward(self, x):
            log.append(("fw", sorted(self.tracker.parents), self.tracker.is_bw))
            y = self.lin(x)
            y.register_hook(lambda g: log.append(("bw", sorted(self.tracker.parents), self.tracker.is_bw)))
            return y.relu()

    with lib.utils.module_tracker.ModuleTracker() as tracker:
        m = lib.nn.Sequential(Rec(tracker), lib.nn.Sequential(Rec(tracker)))
        out = m(lib.ones(2, 3, requires_grad=True))
        log.append(("after forward", sorted(tracker.parents), tracker.is_bw))
        out.sum().backward()
        log.append(("after backward", sorted(tracker.parents), tracker.is_bw))
        m(lib.ones(2, 3)).sum()   # no grad anywhere: no backward hooks
        log.append(("no grad", sorted(tracker.parents), tracker.is_bw))
    m(lib.ones(2, 3, requires_grad=True)).sum().backward()   # after exit: nothing is tracked
    log.append(("exited", sorted(tracker.parents), len(tracker._hooks)))
    return log


def test_module_tracker_matches_torch():
    ours = _program(tracegrad)
    assert ours == _program(torch)
    assert ("bw", ["Global", "Sequential", "Sequential.0", "Sequential.0.lin"], True) in ours


def test_module_tracker_names_top_module_by_class():
    with tracegrad.utils.module_tracker.ModuleTracker() as tracker:
        seen = []
        lin = tracegrad.nn.Linear(2, 2)
        lin.register_forward_pre_hook(lambda mod, args: seen.append(sorted(tracker.parents)))
        lin(tracegrad.ones(1, 2))
    assert seen == [["Global", "Linear"]] and tracker.parents == {"Global"} and not tracker.is_bw
