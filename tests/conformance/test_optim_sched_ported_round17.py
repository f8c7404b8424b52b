"""Round 17 of PyTorch's own tests, ported: test/optim/test_optim.py and
torch/testing/_internal/common_optimizers.py (the optimizers' error inputs: bad params
containers named by ``torch.typename``, bad hyper-parameters, duplicate and non-leaf params,
add_param_group and load_state_dict mismatches, tensor lr), test/test_torch.py
(TestTorch.test_typename-style checks of ``torch.typename``) and test/optim/test_lrscheduler.py
(ChainedScheduler/SequentialLR construction errors and traces, ReduceLROnPlateau's max mode with
cooldown, absolute threshold and per-group min_lr, state_dict round trips). Each program runs
under torch (the oracle) and tracegrad (``run_both``): equal logs of values and messages' gists.
Parameters of shape (2,) / (3,) float32 only."""
import warnings

import pytest

from parity import error_gist, run_both

torch = pytest.importorskip("torch")


err = error_gist


def test_typename():
    # torch.typename: a tensor's legacy type string, else module.qualname (no module for builtins)
    def program(T, log):
        class Local:
            pass

        def fn():
            pass

        objs = [T.ones(2), T.ones(2, dtype=T.float64), T.ones(2, dtype=T.int64), T.ones(2, dtype=T.bool),
                T.nn.Parameter(T.ones(2)), 3, 2.5, int, None, [1], Local, Local(), fn]
        log("typename", [T.typename(o).replace("tracegrad", "torch") for o in objs])

    run_both(program)


def test_optimizer_error_inputs():
    # common_optimizers.py optim_error_inputs_func_* and test_optim.py's constructor checks
    def program(T, log):
        a, b = T.nn.Parameter(T.ones(2)), T.nn.Parameter(T.ones(3))
        O = T.optim
        cases = {
            "tensor as params": lambda: O.SGD(a, lr=0.1),
            "empty": lambda: O.SGD([], lr=0.1),
            "non-leaf": lambda: O.SGD([a * 2], lr=0.1),
            "plain tensor": lambda: O.Adam([T.ones(2)], lr=0.1),
            "set of params": lambda: O.SGD({a, b}, lr=0.1),
            "same param in two groups": lambda: O.SGD([{"params": [a]}, {"params": [a]}], lr=0.1),
            "negative lr": lambda: O.SGD([a], lr=-1),
            "nesterov without momentum": lambda: O.SGD([a], lr=0.1, nesterov=True),
            "beta 1.0": lambda: O.Adam([a], betas=(1.0, 0.9)),
            "negative eps": lambda: O.AdamW([a], eps=-1),
            "fused and foreach": lambda: O.Adam([a], foreach=True, fused=True),
            "2-element lr tensor": lambda: O.Adam([a], lr=T.tensor([0.1, 0.2])),
            "rho 1.5": lambda: O.Adadelta([a], rho=1.5),
            "etas": lambda: O.Rprop([a], etas=(1.5, 1.2)),
            "alpha": lambda: O.RMSprop([a], alpha=-1),
            "lr_decay": lambda: O.Adagrad([a], lr_decay=-1),
            "momentum_decay": lambda: O.NAdam([a], momentum_decay=-1),
        }
        log("errors", {k: err(f) for k, f in cases.items()})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            O.SGD([a, a], lr=0.1)
        log("duplicate warning", ["duplicate parameters" in str(x.message) for x in w])

        opt = O.SGD([a], lr=0.1, momentum=0.9)
        group_cases = {
            "param already in a group": lambda: opt.add_param_group({"params": [a]}),
            "group not a dict": lambda: opt.add_param_group([b]),
            "group of a plain tensor": lambda: opt.add_param_group({"params": [T.ones(1)]}),
            "group of a set": lambda: opt.add_param_group({"params": {T.nn.Parameter(T.ones(1))}}),
            "group without params": lambda: opt.add_param_group({"lr": 1.0}),
        }
        log("add_param_group errors", {k: err(f) for k, f in group_cases.items()})
        opt.add_param_group({"params": b, "lr": 0.5, "extra": 1})
        log("groups", [[g["lr"] for g in opt.param_groups], sorted(opt.param_groups[1]),
                       opt.param_groups[1]["momentum"]])

        (a.sum() + b.sum()).backward()
        adam = O.Adam([a, b], lr=0.1)
        adam.step()
        sd = adam.state_dict()
        load_cases = {
            "fewer params": lambda: O.Adam([T.nn.Parameter(T.ones(2))]).load_state_dict(sd),
            "more groups": lambda: O.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(sd),
            "group sizes differ": lambda: O.Adam([{"params": [a, b]}, {"params": [T.nn.Parameter(T.ones(1))]}]).load_state_dict(sd),
        }
        log("load_state_dict errors", {k: err(f) for k, f in load_cases.items()})
        other = O.Adam([a, b], lr=0.5)
        other.load_state_dict(sd)
        log("loaded", [other.param_groups[0]["lr"], other.state[a]["step"], other.state[b]["exp_avg"],
                       sd["param_groups"][0]["params"]])
        d64 = T.nn.Parameter(T.ones(2, dtype=T.float64))
        cast = O.Adam([d64, T.nn.Parameter(T.ones(3, dtype=T.float64))])
        cast.load_state_dict(sd)
        log("state follows the param's dtype, step stays float32",
            [cast.state[d64]["exp_avg"].dtype, cast.state[d64]["step"].dtype])

    run_both(program)


def test_composite_scheduler_errors_and_traces():
    # test_lrscheduler.py: test_sequentiallr*, test_chained_scheduler*, test_*_errors
    def program(T, log):
        def opt(lr=1.0):
            return T.optim.SGD([{"params": [T.nn.Parameter(T.ones(2))]},
                                {"params": [T.nn.Parameter(T.ones(3))], "lr": lr * 2}], lr=lr, momentum=0.9)

        S = T.optim.lr_scheduler
        o = opt()
        cases = {
            "chained, two optimizers": lambda: S.ChainedScheduler([S.StepLR(o, 1), S.StepLR(opt(), 1)]),
            "sequential, two optimizers": lambda: S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(opt(), 1)], milestones=[1]),
            "sequential, milestones": lambda: S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(o, 1)], milestones=[1, 2]),
            "sequential, empty": lambda: S.SequentialLR(o, [], milestones=[]),
            "sequential, plateau": lambda: S.SequentialLR(o, [S.StepLR(o, 1), S.ReduceLROnPlateau(o)], milestones=[1]),
            "linear start 0": lambda: S.LinearLR(o, start_factor=0),
            "constant factor 2": lambda: S.ConstantLR(o, factor=2),
            "lambdas per group": lambda: S.LambdaLR(o, [lambda e: 1.0]),
            "warm restarts T_0": lambda: S.CosineAnnealingWarmRestarts(o, T_0=0),
            "one cycle steps": lambda: S.OneCycleLR(o, max_lr=1.0),
            "plateau mode": lambda: S.ReduceLROnPlateau(o, mode="x"),
            "plateau factor": lambda: S.ReduceLROnPlateau(o, factor=1.0),
            "plateau min_lr": lambda: S.ReduceLROnPlateau(o, min_lr=[0.1]),
            "missing initial_lr": lambda: S.StepLR(T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=0.1), 1, last_epoch=0),
        }
        log("errors", {k: (err(f) or "").replace("tracegrad", "torch") for k, f in cases.items()})

        def trace(o, step, n):
            out = []
            for i in range(n):
                o.step()
                step(i)
                out.append([round(g["lr"], 6) for g in o.param_groups])
            return out

        o = opt()
        ch = S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)])
        log("chained", [trace(o, lambda i: ch.step(), 4), ch.get_last_lr(), sorted(ch.state_dict())])
        o = opt()
        sq = S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=2), S.CosineAnnealingLR(o, T_max=3)],
                            milestones=[2])
        log("sequential", [trace(o, lambda i: sq.step(), 5), sq.get_last_lr(), sorted(sq.state_dict())])
        sd = sq.state_dict()
        o2 = opt()
        sq2 = S.SequentialLR(o2, [S.LinearLR(o2, start_factor=0.1, total_iters=2), S.CosineAnnealingLR(o2, T_max=3)],
                             milestones=[2])
        sq2.load_state_dict(sd)
        log("sequential resumed", [sq2.last_epoch, sq2.get_last_lr(), trace(o2, lambda i: sq2.step(), 2)])

        o = opt()
        p = S.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1, cooldown=2, threshold=0.1,
                                threshold_mode="abs", min_lr=[0.1, 0.3])
        metric = [1, 1, 1, 1, 1, 1, 1, 1, 2, 2.05, 2.2, 2.2]
        log("plateau max/cooldown/abs/min_lr", [trace(o, lambda i: p.step(metric[i]), len(metric)),
                                                p.get_last_lr(), p.num_bad_epochs, p.cooldown_counter])
        o = opt()
        p = S.ReduceLROnPlateau(o, mode="min", factor=0.1, patience=0, eps=0.5, threshold=0.5)
        metric = [1, 0.9, 0.8, 0.1, 0.1]
        log("plateau eps keeps small updates out", trace(o, lambda i: p.step(metric[i]), len(metric)))
        st = p.state_dict()
        p2 = S.ReduceLROnPlateau(opt(), mode="max")
        p2.load_state_dict(st)
        log("plateau state_dict", [sorted(st), p2.mode, p2.best, p2.last_epoch])

    run_both(program)
