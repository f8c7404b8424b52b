"""Bad input to the compile and optimizer APIs, each wrong call run with torch 2.13 (the oracle)
and tracegrad: tracegrad must raise the same exception class, a message with the same gist
(``gist`` is checked on both libraries' messages) and no text from the layers below it (JAX,
XLA, numpy). Calls torch accepts must be accepted too (valid edge cases sit in the tables)."""
import re

import pytest

import tracegrad

from _bad_input_helpers import outcome

torch = pytest.importorskip("torch")

FOREIGN = re.compile(r"jax|xla|jnp\.|lax\.|\bnp\.|tracer|jaxpr", re.I)


def _compare(fn, gist=None, foreign_ok=False):
    tc, tm = outcome(fn, torch)
    gc, gm = outcome(fn, tracegrad)
    if tc is None:
        assert gc is None, f"torch accepts it, tracegrad raised {gc.__name__}: {gm}"
        return
    assert gc is not None, f"torch raised {tc.__name__} ({tm}); tracegrad accepted it"
    # torch raises its own subclasses (torch._dynamo.exc.InvalidBackend < RuntimeError): the
    # builtin class they derive from is what a torch program catches
    base = next(c for c in tc.__mro__ if c.__module__ == "builtins")
    assert issubclass(gc, base), f"torch {tc.__name__}({base.__name__}): {tm!r}; tracegrad {gc.__name__}: {gm!r}"
    if gist is not None:
        assert re.search(gist, tm, re.I), f"torch's message changed: {tm!r}"
        assert re.search(gist, gm, re.I), f"tracegrad's message lacks {gist!r}: {gm!r}"
    assert foreign_ok or not FOREIGN.search(gm), f"foreign text in tracegrad's message: {gm!r}"


def _compile(T, *a, **kw):
    if T is torch and "backend" not in kw:
        kw["backend"] = "eager"          # torch's inductor needs a C compiler; the checks are the same
    return T.compile(*a, **kw)


@pytest.fixture(autouse=True)
def _default_stance():
    yield
    torch.compiler.set_stance("default")
    tracegrad.compiler.set_stance("default")


# ---- tracegrad.compile's arguments ----------------------------------------------------------
COMPILE = {
    "not_callable_int": (lambda T: T.compile(5), "callable"),
    "not_callable_str": (lambda T: T.compile("f"), "callable"),
    "mode_bogus": (lambda T: T.compile(lambda x: x, mode="bogus"), "mode"),
    "mode_int": (lambda T: T.compile(lambda x: x, mode=3), "mode"),
    "mode_and_options": (lambda T: T.compile(lambda x: x, mode="default", options={}), "mode or options"),
    # (tracegrad's message names its own backend names, "jax" and "xla" among them)
    "backend_unknown": (lambda T: T.compile(lambda x: x, backend="nonexistent"), "backend"),
    "dynamic_str": (lambda T: T.compile(lambda x: x, dynamic="x"), None),
    "extra_positional": (lambda T: T.compile(lambda x: x, True), "positional"),
    "unknown_keyword": (lambda T: T.compile(lambda x: x, nonsense=1), "nonsense"),
    "decorator_form_mode_bogus": (lambda T: T.compile(mode="bogus")(lambda x: x), "mode"),
    # accepted by both
    "fullgraph_truthy": (lambda T: T.compile(lambda x: x, fullgraph=1), None),
    "dynamic_bools": (lambda T: [T.compile(lambda x: x, dynamic=d) for d in (None, True, False)], None),
    "every_mode": (lambda T: [T.compile(lambda x: x, mode=m) for m in
                              ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")], None),
    "options_empty": (lambda T: T.compile(lambda x: x, options={}), None),
}


@pytest.mark.parametrize("name", list(COMPILE))
def test_compile_arguments(name):
    # torch.compile's argument checks (torch/__init__.py compile, _TorchCompileWrapper)
    fn, gist = COMPILE[name]
    _compare(fn, gist, foreign_ok=name == "backend_unknown")


def test_compile_unknown_option_key():
    # torch rejects a name that is not one of inductor's settings when compile() is called
    _compare(lambda T: T.compile(lambda x: x, options={"no_such_option": 1}), "option")


def _f(x, y=1):
    return x * y


CALLS = {
    "too_many_positional": (lambda T: (T.ones(2), 2, 3), {}, "positional"),
    "missing_positional": (lambda T: (), {}, "missing"),
    "unknown_keyword": (lambda T: (T.ones(2),), {"z": 1}, "unexpected keyword"),
    "duplicate_argument": (lambda T: (T.ones(2), 2), {"y": 3}, "multiple values"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_compiled_function_wrong_call(name):
    # calling a compiled function with a wrong signature raises Python's TypeError, on a call
    # after a program was cached (the traced path) and, with fullgraph=True, on the first call
    # (torch.compile raises the same TypeError as the plain function: torch's side runs eagerly
    # here, to keep dynamo's tracing cost out of the suite)
    args, kwargs, gist = CALLS[name]

    def run(T):
        f = T.compile(_f) if T is tracegrad else _f
        for _ in range(2):                       # eager, then traced
            f(T.ones(2), 2)
        f(*args(T), **kwargs)
    _compare(run, gist)

    def first(T):
        (T.compile(_f, fullgraph=True) if T is tracegrad else _f)(*args(T), **kwargs)
    _compare(first, gist)


def test_compiled_module_wrong_call():
    # a compiled nn.Module called with a wrong signature raises forward's TypeError
    def run(T):
        m = T.compile(T.nn.Linear(2, 2)) if T is tracegrad else T.nn.Linear(2, 2)
        m(T.ones(1, 2)), m(T.ones(1, 2))
        m(T.ones(1, 2), T.ones(1, 2))
    _compare(run, "positional")
    _compare(lambda T: (T.compile(T.nn.Linear(2, 2)) if T is tracegrad else T.nn.Linear(2, 2))(T.ones(1, 2), z=1),
             "unexpected keyword")


def test_compiled_function_wrong_shape_after_cache():
    # a shape error in a call after the program was cached is the eager error (class and gist)
    def run(T):
        w = T.ones(3, 2)
        f = T.compile(lambda x: x @ w) if T is tracegrad else (lambda x: x @ w)
        f(T.ones(4, 3)), f(T.ones(4, 3))
        f(T.ones(4, 5))
    _compare(run, None)


# ---- compiler helpers ----------------------------------------------------------------------
HELPERS = {
    "set_stance_unknown_then_call": (lambda T: (T.compiler.set_stance("bad"), _compile(T, _f)(T.ones(1)),
                                                _compile(T, _f)(T.ones(1))), "stance"),
    "set_stance_unknown_is_lazy": (lambda T: T.compiler.set_stance("bad"), None),
    "set_stance_int_then_call": (lambda T: (T.compiler.set_stance(3), _compile(T, _f)(T.ones(1))), "stance"),
    "disable_not_callable": (lambda T: T.compiler.disable(5), "callable"),
    "allow_in_graph_not_callable": (lambda T: T.compiler.allow_in_graph(5), "callable"),
    "dynamo_reset_argument": (lambda T: T._dynamo.reset(1), "positional"),
    "dynamo_config_unknown_flag": (lambda T: setattr(T._dynamo.config, "no_such_flag", 1), "does not exist"),
    "dynamo_config_read_unknown": (lambda T: T._dynamo.config.no_such_flag, None),
}


@pytest.mark.parametrize("name", list(HELPERS))
def test_compiler_helpers(name):
    # torch.compiler.set_stance / disable / allow_in_graph, torch._dynamo.reset / config
    fn, gist = HELPERS[name]
    _compare(fn, gist)


# ---- optimizers ----------------------------------------------------------------------------
def _params(T):
    return [T.nn.Parameter(T.ones(2, 2)), T.nn.Parameter(T.ones(2))]


OPT_BAD = [
    ("SGD", dict(lr=-0.1), "learning rate"), ("SGD", dict(lr=0.1, momentum=-0.5), "momentum"),
    ("SGD", dict(lr=0.1, weight_decay=-1), "weight_decay"), ("SGD", dict(lr=0.1, nesterov=True), "Nesterov"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, nesterov=True), "Nesterov"),
    ("SGD", dict(lr="a"), None), ("SGD", dict(lr=0.1, foreach=True, fused=True), "fused"),
    ("SGD", dict(lr=0.1, fused=True, differentiable=True), "fused"),
    ("Adam", dict(lr=-1e-3), "learning rate"), ("Adam", dict(lr=float("nan")), "learning rate"),
    ("Adam", dict(betas=(1.0, 0.9)), "beta parameter at index 0"),
    ("Adam", dict(betas=(0.9, -0.1)), "beta parameter at index 1"),
    ("Adam", dict(betas=(0.9, 1.5)), "beta parameter at index 1"), ("Adam", dict(betas=(0.9,)), None),
    ("Adam", dict(eps=-1), "epsilon"), ("Adam", dict(weight_decay=-0.1), "weight_decay"),
    ("Adam", dict(foreach=True, fused=True), "fused"), ("AdamW", dict(lr=-1), "learning rate"),
    ("AdamW", dict(betas=(0.9, 1.0)), "beta"), ("AdamW", dict(eps=-1e-8), "epsilon"),
    ("AdamW", dict(weight_decay=-1), "weight_decay"), ("AdamW", dict(foreach=True, fused=True), "fused"),
    ("Adagrad", dict(lr=-1), "learning rate"), ("Adagrad", dict(lr_decay=-1), "lr_decay"),
    ("Adagrad", dict(eps=-1), "epsilon"), ("Adagrad", dict(initial_accumulator_value=-1), "initial_accumulator"),
    ("Adagrad", dict(weight_decay=-1), "weight_decay"), ("Adagrad", dict(foreach=True, fused=True), "fused"),
    ("Adagrad", dict(fused=True, differentiable=True), "fused"),
    ("RMSprop", dict(lr=-1), "learning rate"), ("RMSprop", dict(alpha=-0.1), "alpha"),
    ("RMSprop", dict(eps=-1), "epsilon"), ("RMSprop", dict(momentum=-1), "momentum"),
    ("RMSprop", dict(weight_decay=-1), "weight_decay"), ("RMSprop", dict(fused=True), "fused"),
    ("Adadelta", dict(lr=-1), "learning rate"), ("Adadelta", dict(rho=1.5), "rho"),
    ("Adadelta", dict(eps=-1), "epsilon"), ("Adadelta", dict(weight_decay=-1), "weight_decay"),
    ("Adamax", dict(lr=-1), "learning rate"), ("Adamax", dict(betas=(1.0, 0.9)), "beta"),
    ("Adamax", dict(eps=-1), "epsilon"), ("NAdam", dict(lr=-1), "learning rate"),
    ("NAdam", dict(momentum_decay=-1), "momentum_decay"), ("NAdam", dict(betas=(1.0, 0.9)), "beta"),
    ("RAdam", dict(lr=-1), "learning rate"), ("RAdam", dict(betas=(0.9, 1.0)), "beta"),
    ("RAdam", dict(eps=-1), "epsilon"),
    # accepted edge cases
    ("SGD", dict(lr=0.0), None), ("Adam", dict(betas=(0.0, 0.0)), None), ("Adam", dict(eps=0.0), None),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True), None),
]


@pytest.mark.parametrize("name,kw,gist", OPT_BAD, ids=[f"{n}-{'-'.join(kw)}-{i}" for i, (n, kw, _) in enumerate(OPT_BAD)])
def test_optimizer_hyperparameters(name, kw, gist):
    # torch.optim constructors' argument checks (test/test_optim.py TestOptimRenewed.test_errors)
    _compare(lambda T: getattr(T.optim, name)(_params(T), **kw), gist)


def _one(T):
    return T.nn.Parameter(T.ones(1))


PARAMS = {
    "overlapping_groups": (lambda T: (lambda p: T.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(_one(T)),
                           "more than one parameter group"),
    "add_param_group_overlap": (lambda T: (lambda p: T.optim.SGD([p], lr=0.1).add_param_group({"params": [p]}))(_one(T)),
                                "more than one parameter group"),
    "add_param_group_not_dict": (lambda T: T.optim.SGD(_params(T), lr=0.1).add_param_group([_one(T)]), "dict"),
    "empty_list": (lambda T: T.optim.SGD([], lr=0.1), "empty parameter list"),
    "a_tensor_not_iterable": (lambda T: T.optim.SGD(T.ones(2, requires_grad=True), lr=0.1), "iterable"),
    "non_leaf": (lambda T: T.optim.SGD([T.ones(2, requires_grad=True) * 2], lr=0.1), "non-leaf"),
    "not_a_tensor": (lambda T: T.optim.SGD([1.0], lr=0.1), "Tensors"),
    "group_without_params": (lambda T: T.optim.SGD([{"lr": 0.1}], lr=0.1), "params"),
    "duplicate_in_one_group": (lambda T: (lambda p: T.optim.SGD([p, p], lr=0.1))(_one(T)), None),
    "group_lr_override": (lambda T: T.optim.SGD([{"params": [_one(T)], "lr": 0.5}], lr=0.1), None),
}


@pytest.mark.parametrize("name", list(PARAMS))
def test_optimizer_param_groups(name):
    # Optimizer.__init__ / add_param_group checks (test/test_optim.py)
    fn, gist = PARAMS[name]
    _compare(fn, gist)


def _load(T, mutate, step_after=False):
    m = T.nn.Linear(2, 2)
    opt = T.optim.Adam(m.parameters(), lr=0.1)
    m(T.ones(1, 2)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    mutate(T, sd)
    m2 = T.nn.Linear(2, 2)
    opt2 = T.optim.Adam(m2.parameters(), lr=0.1)
    opt2.load_state_dict(sd)
    if step_after:
        m2(T.ones(1, 2)).sum().backward()
        opt2.step()


LOAD = {
    "more_groups": (lambda T, sd: sd["param_groups"].append(dict(sd["param_groups"][0], params=[7])),
                    False, "number of parameter groups"),
    "group_size": (lambda T, sd: sd["param_groups"][0]["params"].pop(), False, "size of optimizer's group"),
    "missing_param_groups": (lambda T, sd: sd.pop("param_groups"), False, "param_groups"),
    "state_shape_then_step": (lambda T, sd: sd["state"][0].__setitem__("exp_avg", T.zeros(5)), True,
                              "must match the size"),
    "state_shape_load_only": (lambda T, sd: sd["state"][0].__setitem__("exp_avg", T.zeros(5)), False, None),
}


@pytest.mark.parametrize("name", list(LOAD))
def test_optimizer_load_state_dict(name):
    # Optimizer.load_state_dict checks (test/test_optim.py test_load_nontensor_step / state_dict)
    mutate, step_after, gist = LOAD[name]
    _compare(lambda T: _load(T, mutate, step_after), gist)


def test_load_state_dict_then_compiled_step_with_wrong_state_shape():
    # the same mismatch surfacing in a compiled step raises the eager error class
    def run(T):
        m = T.nn.Linear(2, 2)
        opt = T.optim.Adam(m.parameters(), lr=0.1)
        m(T.ones(1, 2)).sum().backward()
        opt.step()
        sd = opt.state_dict()
        sd["state"][0]["exp_avg"] = T.zeros(5)
        m2 = T.nn.Linear(2, 2)
        opt2 = T.optim.Adam(m2.parameters(), lr=0.1)
        opt2.load_state_dict(sd)

        def step():
            opt2.zero_grad()
            m2(T.ones(1, 2)).sum().backward()
            opt2.step()
        step = T.compile(step) if T is tracegrad else step
        step()
    _compare(run, "must match the size")


# ---- lr schedulers -------------------------------------------------------------------------
def _sgd(T, **kw):
    return T.optim.SGD([_one(T)], lr=0.1, **kw)


def _S(T):
    return T.optim.lr_scheduler


SCHED = {
    "not_an_optimizer": (lambda T: _S(T).StepLR("opt", step_size=1), "not an Optimizer"),
    "none_optimizer": (lambda T: _S(T).ExponentialLR(None, gamma=0.5), "not an Optimizer"),
    "steplr_missing_step_size": (lambda T: _S(T).StepLR(_sgd(T)), "step_size"),
    "lambdalr_wrong_count": (lambda T: _S(T).LambdaLR(_sgd(T), lr_lambda=[lambda e: 1, lambda e: 2]), "lr_lambdas"),
    "linearlr_start_zero": (lambda T: _S(T).LinearLR(_sgd(T), start_factor=0), "Starting multiplicative factor"),
    "linearlr_end_two": (lambda T: _S(T).LinearLR(_sgd(T), end_factor=2), "Ending multiplicative factor"),
    "constantlr_factor_two": (lambda T: _S(T).ConstantLR(_sgd(T), factor=2), "factor"),
    "warm_restarts_t0_zero": (lambda T: _S(T).CosineAnnealingWarmRestarts(_sgd(T), T_0=0), "T_0"),
    "warm_restarts_t0_float": (lambda T: _S(T).CosineAnnealingWarmRestarts(_sgd(T), T_0=2.5), "T_0"),
    "warm_restarts_tmult_zero": (lambda T: _S(T).CosineAnnealingWarmRestarts(_sgd(T), T_0=2, T_mult=0), "T_mult"),
    "onecycle_no_length": (lambda T: _S(T).OneCycleLR(_sgd(T), max_lr=0.1), "total_steps"),
    "onecycle_negative_total": (lambda T: _S(T).OneCycleLR(_sgd(T), max_lr=0.1, total_steps=-1), "total_steps"),
    "onecycle_anneal": (lambda T: _S(T).OneCycleLR(_sgd(T), max_lr=0.1, total_steps=10, anneal_strategy="x"),
                        "anneal_strategy"),
    "onecycle_pct": (lambda T: _S(T).OneCycleLR(_sgd(T), max_lr=0.1, total_steps=10, pct_start=1.5), "pct_start"),
    "onecycle_overstep": (lambda T: (lambda s: [s.optimizer.step() or s.step() for _ in range(4)])(
        _S(T).OneCycleLR(_sgd(T), max_lr=0.1, total_steps=2)), "Tried to step"),
    "plateau_mode": (lambda T: _S(T).ReduceLROnPlateau(_sgd(T), mode="x"), "mode"),
    "plateau_factor": (lambda T: _S(T).ReduceLROnPlateau(_sgd(T), factor=1.0), "Factor"),
    "plateau_threshold_mode": (lambda T: _S(T).ReduceLROnPlateau(_sgd(T), threshold_mode="x"), "threshold mode"),
    "plateau_min_lr_count": (lambda T: _S(T).ReduceLROnPlateau(_sgd(T), min_lr=[0.1, 0.2]), "min_lrs"),
    "cyclic_mode": (lambda T: _S(T).CyclicLR(_sgd(T, momentum=0.9), base_lr=0.01, max_lr=0.1, mode="x"), "mode"),
    "sequential_milestones": (lambda T: (lambda o: _S(T).SequentialLR(o, [_S(T).ConstantLR(o), _S(T).ConstantLR(o)],
                                                                      milestones=[1, 2]))(_sgd(T)), "milestones"),
    "sequential_other_optimizer": (lambda T: (lambda o: _S(T).SequentialLR(o, [_S(T).ConstantLR(_sgd(T)),
                                                                               _S(T).ConstantLR(o)],
                                                                           milestones=[1]))(_sgd(T)), "same optimizer"),
    "chained_other_optimizer": (lambda T: _S(T).ChainedScheduler([_S(T).ConstantLR(_sgd(T)),
                                                                  _S(T).ConstantLR(_sgd(T))]), "same optimizer"),
    "resume_without_initial_lr": (lambda T: _S(T).StepLR(_sgd(T), step_size=1, last_epoch=3), "initial_lr"),
    # accepted edge cases
    "multisteplr_unsorted": (lambda T: _S(T).MultiStepLR(_sgd(T), milestones=[3, 1]), None),
    "cyclic_without_momentum": (lambda T: _S(T).CyclicLR(_sgd(T), base_lr=0.01, max_lr=0.1), None),
    "polynomial": (lambda T: _S(T).PolynomialLR(_sgd(T), total_iters=2, power=1.0), None),
}


@pytest.mark.parametrize("name", list(SCHED))
def test_lr_scheduler_arguments(name):
    # torch.optim.lr_scheduler constructors' checks (test/optim/test_lrscheduler.py)
    fn, gist = SCHED[name]
    _compare(fn, gist)
