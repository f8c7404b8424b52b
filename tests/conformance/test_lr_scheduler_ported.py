"""NOTE: the tests that followed PyTorch's test/optim/test_lrscheduler.py statement for statement (the
same code and literals, lightly edited, asserts renamed) were removed (a public repository's code
stays out of this project's commits); what remains is the tests written here. The text below
describes the file as it was.

Ported from PyTorch's test/optim/test_lrscheduler.py (TestLRScheduler; each test names its
original), part 1: lr sequences, closed vs chainable forms, call-order warnings,
ReduceLROnPlateau, SequentialLR / ChainedScheduler, CyclicLR and OneCycleLR. Bodies run under
torch and tracegrad (the ``T`` fixture): torch 2.13 checks every expected lr sequence, warning
and error class, tracegrad must meet them. Part 2: test_lr_scheduler_ported_more.py."""
import warnings

import pytest


from _lr_helpers import _opt, _S

# the original's _test steps schedulers without optimizer.step() in places; warnings are
# checked only inside explicit catch_warnings blocks
pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "ConstantLR", "LinearLR", "PolynomialLR"])
def test_lr_is_constant_for_constant_epoch(T, name):
    # test_{step,exponential,constantlr,linear_linearlr,polynomial}_lr_is_constant_for_constant_epoch
    kw = {"StepLR": dict(step_size=2), "ExponentialLR": dict(gamma=0.9), "PolynomialLR": dict(power=0.9)}
    opt = _opt(T)
    s = getattr(_S(T), name)(opt, **kw.get(name, {}))
    seen = []
    for _ in range(10):
        opt.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step(2)
        assert [x.message.args[0] for x in w] == [_S(T).EPOCH_DEPRECATION_WARNING]
        seen.append(opt.param_groups[0]["lr"])
    assert min(seen) == max(seen)


def test_onecycle_lr_stepping_past_total_steps(T):
    # OneCycleLR.step past total_steps (the check the per-batch tests stay under)
    opt = _opt(T)
    s = _S(T).OneCycleLR(opt, max_lr=0.1, total_steps=4)
    for _ in range(4):      # last_epoch 1..4: the construction step counts as step 0
        opt.step()
        s.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 5 times. The specified number of total steps is 4"):
        s.step()
