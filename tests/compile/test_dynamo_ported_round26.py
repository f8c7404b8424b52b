"""Round-26 ports of PyTorch's torch.compile optimizer tests as compiled-vs-eager checks, from the
pytorch/pytorch repository: test/inductor/test_compiled_optimizers.py (CompiledOptimizerTests:
the generated ``make_test`` cases -- each optimizer with the constructor arguments torch's
optimizer database lists for CPU, a tensor learning rate stepped by each lr scheduler with
atypical values; ``make_recompile_test`` -- four compiled steps, then lr changed, a state tensor
replaced or the whole state cleared; test_closure_graph_break, test_basic_shampoo,
test_static_address_finalizer, test_compile_time_smoketest, test_get_value_on_static_address;
CompiledOptimizerParityTests.test_correctness -- the step and the scheduler's step inside one
compiled function, with and without a closure) and test/dynamo/test_optimizers.py (End2EndTests
test_state_dict: an optimizer made inside a compiled function and stepped outside).

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` from the same
numpy-seeded weights and gradients; after every step the parameters, the optimizer state (every
tensor and number in ``opt.state``) and the learning rate must agree. Each test names the torch
test it ports (``CompiledOptimizerTests::test_<optimizer>_<kwargs>_cpu`` as torch names its
generated tests); the programs are written here in their own code, at tiny shapes. Adapted:
torch's tests count inductor kernels and recompiles; here only what a user observes is compared
(plus the number of programs traced where the original's point is "no recompile"). GPU-only
originals (capturable, cudagraphs, foreach_map) are run on CPU where their program has a CPU
meaning, otherwise not ported.
"""
import functools
import gc
import time
import weakref

import numpy as np
import pytest

import tracegrad
from ._dynamo_port import same
from ._harness import np_init

torch = pytest.importorskip("torch")


def _model(T, bias=True, n=4, seed=0):
    """``Sequential(Linear(n, n), Linear(n, n))`` with numpy-seeded weights and one backward of
    ``model(ones).sum()`` done, so every parameter has a gradient (as make_test)."""
    model = np_init(T.nn.Sequential(*[T.nn.Linear(n, n, bias=bias) for _ in range(2)]), T, seed=seed)
    model(T.ones(3, n)).sum().backward()
    return model


def _state(opt):
    """The optimizer's state, parameter by parameter in param_groups order, keys sorted."""
    return [{k: v for k, v in sorted(opt.state[p].items())} if p in opt.state else {}
            for g in opt.param_groups for p in g["params"]]


def _observe(model, opt):
    return ([p.detach().clone() for p in model.parameters()], _state(opt),
            [float(g["lr"]) for g in opt.param_groups])


def _agree(runs, what, rtol=1e-5, atol=1e-6):
    """``runs``: torch, tracegrad eager, tracegrad compiled histories (lists of observations)."""
    ref, eager, comp = runs
    assert len(ref) == len(eager) == len(comp), what
    for i, (a, b, c) in enumerate(zip(ref, eager, comp)):
        same(a, c, f"{what} step{i} compiled vs torch", rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))
        same(b, c, f"{what} step{i} compiled vs eager", rtol=rtol, atol=atol)


def _three(build, traces=1, breaks=(), **compile_kw):
    """``build(T, wrap)`` -> history; run for torch, tracegrad eager and tracegrad compiled.
    The compiled functions (``wrap`` kept) must have run with the graph breaks ``breaks`` (their
    reasons; none by default) and, given ``traces`` (a number or a range), built that many
    programs together."""
    made = []

    def wrap(f):
        made.append(tracegrad.compile(f, **compile_kw))
        return made[-1]
    runs = [build(torch, lambda f: f), build(tracegrad, lambda f: f), build(tracegrad, wrap)]
    assert made and [r for cf in made for r, _ in cf.stats["graph_breaks"]] == list(breaks), \
        [cf.stats for cf in made]
    if traces is not None:
        n = sum(cf.stats["traces"] for cf in made)
        assert n in (traces if isinstance(traces, range) else (traces,)), [cf.stats for cf in made]
    return runs


# ---- make_test: the compiled step per optimizer and constructor arguments ------------------------

# (torch's generated name, optimizer, kwargs): the CPU rows of torch's optimizer database that
# earlier rounds did not run compiled (test_compile_ported_more.py took five others)
MAKE_TEST = [
    ("test_adadelta_cpu", "Adadelta", {}),
    ("test_adadelta_weight_decay_maximize_cpu", "Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("test_adadelta_rho_weight_decay_cpu", "Adadelta", dict(rho=0.95, weight_decay=0.9)),
    ("test_adagrad_initial_accumulator_value_weight_decay_cpu", "Adagrad",
     dict(initial_accumulator_value=0.1, weight_decay=0.1)),
    ("test_adagrad_lr_decay_weight_decay_cpu", "Adagrad", dict(lr=0.1, lr_decay=0.5, weight_decay=0.1)),
    ("test_adagrad_weight_decay_maximize_cpu", "Adagrad", dict(weight_decay=0.1, maximize=True)),
    ("test_adam_weight_decay_maximize_cpu", "Adam", dict(weight_decay=0.1, maximize=True)),
    ("test_adamax_weight_decay_maximize_cpu", "Adamax", dict(weight_decay=0.1, maximize=True)),
    ("test_adamw_weight_decay_amsgrad_cpu", "AdamW", dict(weight_decay=0.1, amsgrad=True)),
    ("test_adamw_weight_decay_maximize_cpu", "AdamW", dict(weight_decay=0.1, maximize=True)),
    ("test_asgd_lambd_cpu", "ASGD", dict(lambd=0.1)),
    ("test_asgd_t0_cpu", "ASGD", dict(t0=1)),
    ("test_asgd_weight_decay_maximize_cpu", "ASGD", dict(weight_decay=0.1, maximize=True)),
    ("test_nadam_weight_decay_momentum_decay_decoupled_weight_decay_cpu", "NAdam",
     dict(weight_decay=0.1, momentum_decay=0.006, decoupled_weight_decay=True)),
    ("test_nadam_weight_decay_maximize_cpu", "NAdam", dict(weight_decay=0.1, maximize=True)),
    ("test_radam_weight_decay_decoupled_weight_decay_cpu", "RAdam",
     dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("test_radam_weight_decay_maximize_cpu", "RAdam", dict(weight_decay=0.1, maximize=True)),
    ("test_rmsprop_weight_decay_centered_momentum_maximize_cpu", "RMSprop",
     dict(weight_decay=0.1, centered=True, momentum=0.1, maximize=True)),
    ("test_rprop_etas_cpu", "Rprop", dict(etas=(0.5, 1.5))),
    ("test_rprop_step_sizes_maximize_cpu", "Rprop", dict(step_sizes=(2e-6, 100), maximize=True)),
    ("test_sgd_momentum_dampening_cpu", "SGD", dict(momentum=0.9, dampening=0.5)),
    ("test_sgd_weight_decay_maximize_foreach_cpu", "SGD", dict(weight_decay=0.1, maximize=True, foreach=True)),
    ("test_adam_amsgrad_foreach_cpu", "Adam", dict(amsgrad=True, foreach=True)),
    ("test_rmsprop_foreach_weight_decay_cpu", "RMSprop", dict(foreach=True, weight_decay=0.1)),
]


def _make_test(name, kw, sched=None, steps=3, bias=True):
    def build(T, wrap):
        model = _model(T, bias=bias)
        kwargs = {k: (v(T) if callable(v) else v) for k, v in kw.items()}
        opt = getattr(T.optim, name)(model.parameters(), **kwargs)
        step = wrap(lambda: opt.step())
        s = None if sched is None else _scheduler(T, sched, opt)
        hist = []
        with T.set_grad_enabled(False):
            for _ in range(steps):
                step()
                if s is not None:
                    _call_scheduler(T, s)
                hist.append(_observe(model, opt))
        return hist
    return build


@pytest.mark.parametrize("name, kw", [r[1:] for r in MAKE_TEST], ids=[r[0] for r in MAKE_TEST])
def test_make_test(name, kw):
    # test_compiled_optimizers.py::CompiledOptimizerTests::<id>: opt.step compiled under no_grad
    # (the grads fixed by one backward), three steps, equals the eager optimizer after each;
    # fullgraph=True as compile_opt: the first call is traced too, the state created in that
    # program; the next call traces once more with the state as input (then no more programs)
    _agree(_three(_make_test(name, kw), traces=range(1, 3), fullgraph=True), name)


# ---- a tensor lr stepped by every lr scheduler (atypical values amplify errors) -----------------

SCHEDULERS = {
    "LambdaLR": lambda T: dict(lr_lambda=lambda e: 10),
    "MultiplicativeLR": lambda T: dict(lr_lambda=lambda e: 10),
    "StepLR": lambda T: dict(step_size=1, gamma=100),
    "MultiStepLR": lambda T: dict(milestones=[1, 2], gamma=100),
    "ExponentialLR": lambda T: dict(gamma=100),
    "CosineAnnealingLR": lambda T: dict(T_max=7),
    "CyclicLR": lambda T: dict(base_lr=0.001, max_lr=0.02, cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda T: dict(T_0=1),
    "OneCycleLR": lambda T: dict(max_lr=0.02, cycle_momentum=False, steps_per_epoch=1, epochs=10),
    "ConstantLR": lambda T: dict(factor=0.001),
    "LinearLR": lambda T: {},
    "ReduceLROnPlateau": lambda T: dict(factor=0.99, patience=1),
    "PolynomialLR": lambda T: {},
}


def _scheduler(T, name, opt):
    s = getattr(T.optim.lr_scheduler, name)(opt, **SCHEDULERS[name](T))
    s.last_epoch = 1        # as make_test: some schedulers change only after an epoch
    return s


def _call_scheduler(T, s):
    if isinstance(s, T.optim.lr_scheduler.ReduceLROnPlateau):
        s.step(1.0)
    else:
        s.step()


@pytest.mark.parametrize("optim", ["SGD", "Adagrad"])
@pytest.mark.parametrize("sched", sorted(SCHEDULERS))
def test_tensor_lr_with_scheduler(optim, sched):
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_sgd_tensor_lr_cpu_<scheduler> and
    # test_adagrad_tensor_lr_cpu_<scheduler>: lr given as a 0-dim tensor, the scheduler stepped
    # after each compiled step (outside it); the lr it writes into the tensor is never frozen
    kw = {"lr": lambda T: T.tensor(0.001)}
    _agree(_three(_make_test(optim, kw, sched=sched)), f"{optim} {sched}")


# ---- make_recompile_test: state perturbed after four compiled steps ------------------------------

RECOMPILE = [
    ("test_adam_recompile", "Adam", {}), ("test_adamw_recompile", "AdamW", {}),
    ("test_adamax_recompile", "Adamax", {}), ("test_nadam_recompile", "NAdam", {}),
    ("test_rprop_recompile", "Rprop", {}), ("test_rmsprop_recompile", "RMSprop", {}),
    ("test_adadelta_recompile", "Adadelta", {}), ("test_adagrad_recompile", "Adagrad", {}),
    ("test_asgd_recompile_default", "ASGD", {}), ("test_asgd_recompile_single", "ASGD", dict(foreach=False)),
    ("test_asgd_recompile_foreach", "ASGD", dict(foreach=True)),
    ("test_sgd_recompile_single", "SGD", dict(foreach=False)),
    ("test_sgd_recompile_foreach", "SGD", dict(foreach=True)),
]


def _perturb(T, opt):
    """As make_recompile_test: a new lr for Adagrad and SGD, Adam's first ``exp_avg`` replaced
    by zeros, every other optimizer's state cleared (it starts again from step 0)."""
    name = type(opt).__name__
    if name in ("Adagrad", "SGD"):
        opt.param_groups[0]["lr"] = 0.02
    elif name == "Adam":
        st = opt.state[opt.param_groups[0]["params"][0]]
        st["exp_avg"] = T.zeros_like(st["exp_avg"])
    else:
        opt.state.clear()


@pytest.mark.parametrize("name, kw", [r[1:] for r in RECOMPILE], ids=[r[0] for r in RECOMPILE])
def test_recompile(name, kw):
    # test_compiled_optimizers.py::CompiledOptimizerTests::<id>: four compiled steps (no
    # recompile), then the state perturbed between calls; the next steps see the change
    def build(T, wrap):
        model = _model(T)
        opt = getattr(T.optim, name)(model.parameters(), lr=0.01, **kw)
        step = wrap(lambda: opt.step())
        hist = []
        with T.set_grad_enabled(False):
            for i in range(6):
                if i == 4:
                    _perturb(T, opt)
                step()
                hist.append(_observe(model, opt))
        return hist
    # the lr change is a new input value (no new program); a replaced or cleared state may retrace
    _agree(_three(build, traces=1 if name in ("Adagrad", "SGD") else None), name)


# ---- CompiledOptimizerParityTests.test_correctness: step and scheduler in one compiled call -----

PARITY = [
    ("Adam", {}, None), ("AdamW", dict(amsgrad=True), None), ("RMSprop", dict(centered=True), None),
    ("SGD", dict(momentum=0.9, nesterov=True), None), ("Adagrad", dict(lr=0.1), None),
    ("SGD", {"lr": lambda T: T.tensor(0.01)}, "StepLR"),
    ("SGD", {"lr": lambda T: T.tensor(0.01)}, "CosineAnnealingLR"),
    ("Adagrad", {"lr": lambda T: T.tensor(0.01)}, "ExponentialLR"),
    ("Adagrad", {"lr": lambda T: T.tensor(0.01)}, "LinearLR"),
]


@pytest.mark.parametrize("use_closure", [True, False], ids=["closure", "no_closure"])
@pytest.mark.parametrize("name, kw, sched", PARITY,
                         ids=[f"{n}{'_tensor_lr_' + s if s else ''}" for n, _, s in PARITY])
def test_correctness(name, kw, sched, use_closure):
    # test_compiled_optimizers.py::CompiledOptimizerParityTests::test_correctness: a compiled
    # function doing opt.step (given a closure running forward and backward, or not) and then
    # the scheduler's step; eager does the same uncompiled. Grads accumulate (no zero_grad).
    def build(T, wrap):
        model = _model(T, bias=False)
        inp = T.ones(3, 4)
        opt = getattr(T.optim, name)(model.parameters(), **{k: (v(T) if callable(v) else v)
                                                            for k, v in kw.items()})
        s = None if sched is None else _scheduler(T, sched, opt)

        def closure():
            loss = model(inp).sum()
            loss.backward()
            return loss

        def fn():
            out = opt.step(closure) if use_closure else opt.step()
            if s is not None:
                _call_scheduler(T, s)
            return out
        fn = wrap(fn)
        return [(fn(),) + _observe(model, opt) for _ in range(3)]
    _agree(_three(build, traces=None), f"{name} {sched} closure={use_closure}")


# ---- the named CompiledOptimizerTests ------------------------------------------------------------

def test_closure_graph_break():
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_closure_graph_break: a compiled
    # loop body calling AdamW's step with a closure that sets the parameter's grad itself
    def build(T, wrap):
        param = T.tensor(np.random.RandomState(0).rand(2, 3).astype("float32"), requires_grad=True)

        def closure():
            param.grad = T.ones_like(param) * 2
            return param.grad

        opt = T.optim.AdamW([param])
        loop = wrap(lambda opt, c: opt.step(c))
        return [(loop(opt, closure), param.detach().clone(), _state(opt)) for _ in range(4)]
    _agree(_three(build), "closure")


def _shampoo_basic(T):
    """torch's test_basic_shampoo body (its first two regions, written here): foreach ops on the
    parameters' grads and new preconditioners, then the parameters updated in place."""
    @T.no_grad()
    def shampoo(params):
        weight_decay, beta1, beta2, epsilon, lr, step = 0.1, 0.9, 1.0, 1e-10, 0.01, 1
        grads = [p.grad for p in params]
        pre = [T.zeros_like(p) for p in params]
        T._foreach_add_(grads, params, alpha=weight_decay)
        T._foreach_addcmul_(pre, grads, grads, value=1.0)
        T._foreach_mul_(grads, beta1)
        T._foreach_add_(grads, grads, alpha=1 - beta1)
        grad_list = T._foreach_div(grads, 1.0 - beta1 ** step)
        corrected = T._foreach_div(pre, 1.0 - beta2 ** step)
        T._foreach_sqrt_(corrected)
        T._foreach_add_(corrected, epsilon)
        directions = T._foreach_div(grad_list, corrected)
        T._foreach_add_(directions, params, alpha=weight_decay)
        T._foreach_mul_(directions, -lr)
        T._foreach_add_(params, directions)
        return params, pre, grads
    return shampoo


def test_basic_shampoo():
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_basic_shampoo: the parameters
    # are transposed slices of one buffer, their grads set by hand; every write (grads,
    # parameters through the views) must reach the buffer as eagerly, on every call
    def build(T, wrap):
        rs = np.random.RandomState(0)
        buf = T.tensor(rs.rand(8, 4).astype("float32"))
        params = [buf[0:4, :].t(), buf[4:, :].t()]
        for p in params:
            p.grad = T.tensor(rs.rand(*p.shape).astype("float32"))
        fn = wrap(_shampoo_basic(T))
        return [(fn(params), buf.clone(), [p.grad for p in params]) for _ in range(3)]
    _agree(_three(build), "shampoo")


def test_static_address_finalizer():
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_static_address_finalizer: a
    # compiled Adam step over a module made inside a function keeps nothing alive after it
    # returns: the parameter is freed by reference counting alone (the cycle collector is off)
    ref = []

    def run():
        mod = np_init(tracegrad.nn.Linear(4, 4, bias=False), tracegrad)
        for p in mod.parameters():
            p.grad = tracegrad.ones_like(p)
        opt = tracegrad.optim.Adam(mod.parameters(), lr=0.1)
        step = tracegrad.compile(lambda: opt.step())
        with tracegrad.no_grad():
            for _ in range(3):
                step()
        assert step.stats["traces"] == 1, step.stats
        ref.append(weakref.ref(p))
        assert ref[0]() is not None

    gc.collect()
    gc.disable()
    try:
        run()
        alive = ref[0]() is not None
    finally:
        gc.enable()
    assert not alive


def test_compile_time_smoketest():
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_compile_time_smoketest: a
    # _foreach_add over 100 pairs of tensors compiles in bounded time and equals eager
    def build(T, wrap):
        fn = wrap(lambda xs, ys: T._foreach_add(xs, ys))
        out = []
        for i in range(3):
            xs = [T.full((2, 2), float(i + k)) for k in range(100)]
            ys = [T.ones(2, 2) * k for k in range(100)]
            start = time.perf_counter()
            out.append(fn(xs, ys))
            assert time.perf_counter() - start < 90
        return out
    _agree(_three(build), "foreach_add")


def test_get_value_on_static_address():
    # test_compiled_optimizers.py::CompiledOptimizerTests::test_get_value_on_static_address: the
    # optimizers' _get_value helper compiled, on a tensor marked as a static address
    from tracegrad.optim.optimizer import _get_value
    compiled = tracegrad.compile(_get_value)
    x = tracegrad.ones(2, 2)
    tracegrad._dynamo.mark_static_address(x, guard=True)
    for i in range(3):
        with tracegrad.no_grad():
            x.mul_(2)
        same(torch.ones(2, 2) * 2 ** (i + 1), compiled(x), f"call{i}")


# ---- test/dynamo/test_optimizers.py ---------------------------------------------------------------

def test_state_dict():
    # test_optimizers.py::End2EndTests::test_state_dict: a compiled function makes an Adagrad over
    # its Parameter arguments and returns it with a partial of the loss closure; stepping that
    # optimizer with the closure outside trains the parameters as eagerly. The optimizer is a new
    # one per call: the calls run eagerly (a graph break; replaying the traced call handed back
    # the traced optimizer every time, so the ones kept from earlier calls shared its state)
    def build(T, wrap):
        rs = np.random.RandomState(0)
        weight = T.nn.Parameter(T.tensor(rs.randn(5, 3).astype("float32")))
        bias = T.nn.Parameter(T.tensor(rs.randn(5).astype("float32")))
        inp = T.tensor(rs.randn(3).astype("float32"), requires_grad=True)

        def make(weight, bias, inp):
            def fn_base(optimizer, weight, bias):
                optimizer.zero_grad()
                loss = (weight.mv(inp) + bias).pow(2).sum()
                loss.backward()
                return loss

            optimizer = T.optim.Adagrad([weight, bias])
            return optimizer, functools.partial(fn_base, optimizer, weight, bias)
        make = wrap(make)
        hist = []
        for _ in range(3):       # a new optimizer from the compiled function on every call
            optimizer, fn = make(weight, bias, inp)
            hist.append((optimizer.step(fn), weight.detach().clone(), bias.detach().clone(),
                         _state(optimizer), inp.grad))
        return hist
    _agree(_three(build, traces=None, breaks=[_returns_made("Adagrad")]), "state_dict")


def _returns_made(name):
    return (f"the function returns the {name} it made: a compiled call would hand back the traced "
            "one instead of a new one per call (make it outside the compiled function)")


def test_state_dict_module_made_and_returned():
    # found porting test_optimizers.py::End2EndTests::test_state_dict (the same defect with a
    # module): a BatchNorm1d (no affine parameters) made per call, run once and returned; each
    # call's module keeps its own running statistics, as eagerly (the traced one came back from
    # every later call, its statistics those of the latest call)
    def build(T, wrap):
        def make(x):
            bn = T.nn.BatchNorm1d(3, affine=False)
            return bn, bn(x)
        make = wrap(make)
        mods, ys = [], []
        for i in range(4):
            bn, y = make(T.tensor(np.random.RandomState(i).randn(4, 3).astype("float32")))
            mods.append(bn)
            ys.append(y)
        return [len({id(m) for m in mods}), ys] + [(m.running_mean, m.running_var) for m in mods]
    _agree(_three(build, traces=None, breaks=[_returns_made("BatchNorm1d")]), "bn")
