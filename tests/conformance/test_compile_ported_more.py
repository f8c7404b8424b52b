"""More ports from PyTorch's compile tests: optimizers under compile
(test/dynamo/test_optimizers.py, test/inductor/test_compiled_optimizers.py), module mutation
(test/dynamo/test_modules.py), graph breaks, ``torch._dynamo.reset``,
``torch.compiler.disable`` and ``fullgraph`` errors (test/dynamo/test_misc.py,
test_functions.py, test_repros.py). Each test names its original; only observable behaviour
is ported. See test_compile_ported.py for the comparison helper."""
import copy
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

from _compile_check import CALLS, _bw_sum, _np, _rand, _same, check  # noqa: E402


def _weights(T, model, seed=0):
    rng = np.random.RandomState(seed)
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor((rng.randn(*p.shape) * 0.3).astype("float32")))
    return model


def _state(opt):
    """An optimizer's per-parameter state as nested numpy/python values (by param order)."""
    out = []
    for g in opt.param_groups:
        for p in g["params"]:
            st = opt.state.get(p, {})
            out.append({k: (_np(v) if hasattr(v, "detach") else v) for k, v in sorted(st.items())})
    return out


def _same_state(a, b, what, rtol=1e-5, atol=1e-6):
    assert len(a) == len(b), what
    for i, (u, v) in enumerate(zip(a, b)):
        assert sorted(u) == sorted(v), f"{what}[{i}] keys {sorted(u)} vs {sorted(v)}"
        for k in u:
            np.testing.assert_allclose(np.asarray(v[k], dtype=np.float64), np.asarray(u[k], dtype=np.float64),
                                       rtol=rtol, atol=atol, err_msg=f"{what}[{i}].{k}")


# ---- optimizers (test/dynamo/test_optimizers.py, test/inductor/test_compiled_optimizers.py) --
OPTIMS = [("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.1)),
          ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)), ("Adagrad", dict(lr=0.1)),
          ("RAdam", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True))]


def _opt_setup(T, name, kw, bias=True):
    model = _weights(T, T.nn.Sequential(*[T.nn.Linear(4, 4, bias=bias) for _ in range(2)]))
    model(T.ones(3, 4)).sum().backward()
    return model, getattr(T.optim, name)(model.parameters(), **kw)


@pytest.mark.parametrize("name,kw", OPTIMS, ids=[f"{n}{i}" for i, (n, _) in enumerate(OPTIMS)])
def test_compiled_optimizer_step_matches_eager_and_torch(name, kw):
    # test_optimizers.OptimizerTests.test_<optim> / test_compiled_optimizers make_test and
    # CompiledOptimizerParityTests.test_correctness: opt.step compiled (under no_grad, grads
    # fixed) equals eager, parameters and state, after each step
    runs = {}
    for key, T, wrap in (("torch", torch, None), ("tg", tracegrad, None), ("cf", tracegrad, tracegrad.compile)):
        model, opt = _opt_setup(T, name, kw)
        step = opt.step if wrap is None else wrap(lambda opt=opt: opt.step())
        hist = []
        with T.set_grad_enabled(False):
            for _ in range(CALLS + 1):
                step()
                hist.append(([_np(p) for p in model.parameters()], _state(opt)))
        runs[key] = hist
    for key in ("torch", "tg"):
        for i, (ref, got) in enumerate(zip(runs[key], runs["cf"])):
            for j, (a, b) in enumerate(zip(ref[0], got[0])):
                np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6, err_msg=f"{key} step{i} param{j}")
            _same_state(ref[1], got[1], f"{key} step{i} state", rtol=2e-5, atol=2e-6)


def test_compiled_optimizer_step_with_closure():
    # CompiledOptimizerParityTests.test_correctness (use_closure=True): a compiled function
    # calling opt.step(closure) with the forward/backward in the closure
    runs = {}
    for key, T, wrap in (("torch", torch, lambda f: f), ("tg", tracegrad, lambda f: f),
                         ("cf", tracegrad, tracegrad.compile)):
        model, opt = _opt_setup(T, "Adam", dict(lr=0.05), bias=False)
        inp = T.ones(3, 4)

        def fn(model=model, opt=opt, inp=inp):
            def closure():
                opt.zero_grad()
                loss = model(inp).pow(2).sum()
                loss.backward()
                return loss
            return opt.step(closure)
        fn = wrap(fn)
        runs[key] = [(float(fn()), [_np(p) for p in model.parameters()]) for _ in range(CALLS)]
    for key in ("torch", "tg"):
        for i, (ref, got) in enumerate(zip(runs[key], runs["cf"])):
            assert got[0] == pytest.approx(ref[0], rel=1e-5), f"{key} loss {i}"
            for a, b in zip(ref[1], got[1]):
                np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("sched", ["LambdaLR", "CosineAnnealingLR"])
def test_compiled_step_with_lr_scheduler(sched):
    # test_compiled_optimizers make_test(scheduler_cls=...): the scheduler steps between
    # compiled optimizer steps; lr changes are not frozen into the program
    kws = {"ExponentialLR": dict(gamma=0.5), "StepLR": dict(step_size=1, gamma=0.3),
           "LambdaLR": dict(lr_lambda=lambda e: 1.0 / (e + 1)), "CosineAnnealingLR": dict(T_max=3)}
    runs = {}
    for key, T, wrap in (("torch", torch, lambda f: f), ("cf", tracegrad, tracegrad.compile)):
        model, opt = _opt_setup(T, "Adam", dict(lr=0.1))
        s = getattr(T.optim.lr_scheduler, sched)(opt, **kws[sched])
        step = wrap(lambda opt=opt: opt.step())
        hist = []
        with T.set_grad_enabled(False):
            for _ in range(4):
                step()
                s.step()
                hist.append((opt.param_groups[0]["lr"], [_np(p) for p in model.parameters()]))
        runs[key] = (hist, step)
    for i, (a, b) in enumerate(zip(runs["torch"][0], runs["cf"][0])):
        assert b[0] == pytest.approx(a[0], rel=1e-6), f"lr {i}"
        for u, v in zip(a[1], b[1]):
            np.testing.assert_allclose(v, u, rtol=2e-5, atol=2e-6, err_msg=f"step {i}")


def test_lr_scheduler_reaching_zero_does_not_retrace():
    # test_compiled_optimizers make_test(scheduler_cls=CosineAnnealingLR) with its recompile
    # check: the scheduler's lr values (down to eta_min=0) feed one program
    model, opt = _opt_setup(tracegrad, "Adam", dict(lr=0.1))
    s = tracegrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    step = tracegrad.compile(lambda: opt.step())
    with tracegrad.no_grad():
        for _ in range(4):
            step()
            s.step()
    assert step.stats["traces"] == 1


def test_compiled_step_after_optimizer_state_perturbed():
    # test_compiled_optimizers make_recompile_test: a state tensor replaced between compiled steps -- the next step sees it
    for perturb in ("exp_avg",):
        runs = {}
        for key, T, wrap in (("torch", torch, lambda f: f), ("cf", tracegrad, tracegrad.compile)):
            model, opt = _opt_setup(T, "Adam", dict(lr=0.01))
            step = wrap(lambda opt=opt: opt.step())
            with T.set_grad_enabled(False):
                for _ in range(3):
                    step()
                p0 = opt.param_groups[0]["params"][0]
                if perturb == "lr":
                    opt.param_groups[0]["lr"] = 0.2
                elif perturb == "exp_avg":
                    opt.state[p0]["exp_avg"] = T.zeros_like(opt.state[p0]["exp_avg"])
                else:
                    opt.state.clear()
                step()
                step()
            runs[key] = ([_np(p) for p in model.parameters()], _state(opt))
        for a, b in zip(runs["torch"][0], runs["cf"][0]):
            np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6, err_msg=perturb)
        _same_state(runs["torch"][1], runs["cf"][1], perturb, rtol=2e-5, atol=2e-6)


def test_guard_on_none_grads():
    # CompiledOptimizerTests.test_guard_on_none_grads: a whole training loop compiled; at the
    # iteration without backward (grads None after zero_grad) step is a no-op
    def build(T):
        def loop():
            inp = T.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]).reshape(3, 2)
            model = _weights(T, T.nn.Sequential(T.nn.Linear(2, 3), T.nn.Sigmoid(), T.nn.Linear(3, 1),
                                                 T.nn.Sigmoid()))
            params = list(model.parameters())
            opt = T.optim.Adam(params)
            steps = []
            for i in range(6):
                opt.zero_grad()
                if i != 3:
                    model(inp).sum().backward()
                opt.step()
                steps.append(float(opt.state[params[0]]["step"]))
            return steps, [p.detach() for p in params]
        return loop
    check(build, lambda T, i: (), calls=2)


def test_training_iteration_with_dict_batch_and_requires_grad_input():
    # End2EndTests.test_optimizing_over_tensor_with_requires_grad: the optimizer trains an
    # input tensor passed inside a dict batch; model and optimizer are arguments
    def run(T, wrap):
        class Net(T.nn.Module):
            def forward(self, x, y):
                return T.flatten(T.bmm(x, y), 1)

        def it(batch, model, optimizer):
            optimizer.zero_grad()
            out = model(**batch)
            loss = T.nn.CrossEntropyLoss()(out, T.tensor([0, 7]))
            loss.backward()
            optimizer.step()
            return loss
        it = wrap(it)
        x = _rand(T, 0, 2, 1, 4, rg=False)
        y = _rand(T, 1, 2, 4, 8)
        opt = T.optim.Adam([y], lr=0.1)
        losses = [float(it({"x": x, "y": y}, Net(), opt)) for _ in range(CALLS + 1)]
        return losses, _np(y), _state(opt)
    ref, got = run(torch, lambda f: f), run(tracegrad, tracegrad.compile)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-5, atol=1e-6)
    _same_state(ref[2], got[2], "adam state", rtol=1e-5, atol=1e-6)


def test_custom_optimizer_init_group_compiled():
    # End2EndTests.test_init_group: a user Optimizer subclass whose step edits params in place
    # (no grads, requires_grad=False) compiled with fullgraph
    def make(T):
        class MyOptimizer(T.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {})

            def _init_group(self, params, group):
                for p in group["params"]:
                    params.append(p)
                return False

            def step(self):
                for group in self.param_groups:
                    params = []
                    self._init_group(params, group)
                    params[0] += 1
        return MyOptimizer
    t = np.random.RandomState(0).randn(5, 5).astype("float32")
    p_eager = tracegrad.nn.Parameter(tracegrad.tensor(t), requires_grad=False)
    p_comp = tracegrad.nn.Parameter(tracegrad.tensor(t), requires_grad=False)
    p_torch = torch.nn.Parameter(torch.tensor(t), requires_grad=False)
    eager, comp, ref = make(tracegrad)([p_eager]), make(tracegrad)([p_comp]), make(torch)([p_torch])
    step = tracegrad.compile(comp.step, fullgraph=True)
    for _ in range(CALLS):
        eager.step(), step(), ref.step()
        np.testing.assert_allclose(_np(p_comp), _np(p_eager))
        np.testing.assert_allclose(_np(p_comp), _np(p_torch))


def test_optimizer_state_dict_round_trip_after_compiled_steps():
    # End2EndTests.test_state_dict: state built by compiled steps saves and loads into a
    # fresh optimizer that then continues exactly as the original
    def train(T, wrap, n):
        w = T.nn.Parameter(_rand(T, 0, 4, 3, rg=False))
        b = T.nn.Parameter(_rand(T, 1, 4, rg=False))
        opt = T.optim.Adagrad([w, b], lr=0.1)
        inp = _rand(T, 2, 3, rg=False)

        def fn():
            opt.zero_grad()
            loss = (w.mv(inp) + b).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        fn = wrap(fn)
        for _ in range(n):
            fn()
        return w, b, opt, inp
    w, b, opt, inp = train(tracegrad, tracegrad.compile, CALLS)
    tw, tb, topt, _ = train(torch, lambda f: f, CALLS)
    sd = opt.state_dict()
    w2 = tracegrad.nn.Parameter(w.detach().clone())
    b2 = tracegrad.nn.Parameter(b.detach().clone())
    opt2 = tracegrad.optim.Adagrad([w2, b2], lr=0.1)
    opt2.load_state_dict(copy.deepcopy(sd))
    _same_state(_state(topt), _state(opt2), "loaded state")
    for P, O, W, B in ((tracegrad, opt2, w2, b2), (torch, topt, tw, tb)):
        for _ in range(2):
            O.zero_grad()
            (W.mv(P.tensor(_np(inp).astype("float32"))) + B).pow(2).sum().backward()
            O.step()
    np.testing.assert_allclose(_np(w2), _np(tw), rtol=1e-5, atol=1e-6)


# ---- modules (test/dynamo/test_modules.py) --------------------------------------------------
def test_compiled_module_attribute_mutated_between_calls():
    # NNModuleTests (test_module_attribute_mutation / ModuleAttributePrecedence-style): a plain
    # attribute the forward reads is changed between calls; compiled follows it
    class M(tracegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tracegrad.nn.Linear(3, 3)
            self.scale = 1.0

        def forward(self, x):
            return self.lin(x) * self.scale
    m = M()
    cm = tracegrad.compile(m)
    x = tracegrad.ones(2, 3)
    for s in (1.0, 1.0, 2.0):
        m.scale = s
        _same(m(x), cm(x), f"scale {s}")


def test_compiled_module_train_eval_toggle():
    # NNModuleTests.test_module_train_eval / dropout-in-eval repros: train() and eval() between
    # compiled calls change the result exactly as eager (BatchNorm running stats too)
    def run(T, wrap):
        T.manual_seed(0)
        m = _weights(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4), T.nn.ReLU()))
        f = wrap(m)
        outs = []
        for i, train in enumerate([True, True, False, False, True, False]):
            m.train(train)
            outs.append(_np(f(_rand(T, i, 5, 3, rg=False))))
        return outs, _np(m[1].running_mean), _np(m[1].running_var), int(m[1].num_batches_tracked)
    ref, got = run(torch, lambda f: f), run(tracegrad, tracegrad.compile)
    for i, (a, b) in enumerate(zip(ref[0], got[0])):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"call {i}")
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-5, atol=1e-6)
    assert got[3] == ref[3]


def test_compiled_module_parameter_rebound():
    # NNModuleTests.test_param_rebinding: replacing a parameter after compiling is seen by the
    # next compiled call
    m = tracegrad.nn.Sequential(tracegrad.nn.Linear(2, 2))
    cm = tracegrad.compile(m)
    x = tracegrad.ones(3, 2)
    for _ in range(2):
        _same(m(x), cm(x), "before")
    m[0].weight = tracegrad.nn.Parameter(tracegrad.full((2, 2), 0.5))
    for _ in range(2):
        _same(m(x), cm(x), "weight rebound")


def test_compiled_module_buffer_mutated_in_forward():
    # NNModuleTests.test_self_mutating / test_buffer_mutation: a forward that updates a buffer
    # in place (a step counter) advances it on every compiled call
    def build(T):
        class Counter(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("n", T.zeros(()))

            def forward(self, x):
                self.n.add_(1)
                return x * self.n
        return Counter()
    cm = check(build, lambda T, i: (_rand(T, i, 3),), calls=2, backward=_bw_sum)
    assert float(cm.n) == 2


def test_compiled_module_state_dict_prefix_and_forward_equal():
    # test_modules.OptimizedModuleTest.test_state_dict / test_module_name: the compiled module
    # wraps the original (_orig_mod) and shares its parameters
    m = tracegrad.nn.Linear(2, 2)
    cm = tracegrad.compile(m)
    tm = torch.compile(torch.nn.Linear(2, 2), backend="eager")
    assert sorted(cm.state_dict()) == sorted(tm.state_dict())
    assert cm._orig_mod is m
    assert [p is q for p, q in zip(cm.parameters(), m.parameters())] == [True, True]


def test_requires_grad_flip_between_compiled_calls():
    # NNModuleTests.test_requires_grad_change / test_misc test_grad_guard: requires_grad_(False)
    # on a parameter between calls of a compiled training step
    def run(T, wrap):
        m = _weights(T, T.nn.Linear(3, 2))
        opt = T.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        out = []
        for i in range(3):
            if i == 2:
                m.bias.requires_grad_(False)
            out.append((float(step(_rand(T, i, 4, 3, rg=False))), _np(m.weight), _np(m.bias),
                        m.bias.grad is None))
        return out
    ref, got = run(torch, lambda f: f), run(tracegrad, tracegrad.compile)
    for i, (a, b) in enumerate(zip(ref, got)):
        assert b[0] == pytest.approx(a[0], rel=1e-5), i
        np.testing.assert_allclose(b[1], a[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b[2], a[2], rtol=1e-5, atol=1e-6)
        assert b[3] == a[3], i


# ---- graph breaks, reset, disable, fullgraph (test_misc.py, test_functions.py, test_repros.py)
def test_data_dependent_branch_fullgraph_raises():
    # MiscTests.test_data_dependent_branching / test_fullgraph (torch raises Unsupported, a
    # RuntimeError, on `if x.sum() > 0` with fullgraph=True)
    def fn(x):
        if x.sum() > 0:
            return x + 1
        return x - 1
    with pytest.raises(RuntimeError):
        torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))
    with pytest.raises(RuntimeError, match="test_compile_ported_more"):
        tracegrad.compile(fn, fullgraph=True)(tracegrad.ones(2))


def test_item_in_compiled_function():
    # MiscTests.test_item / test_unsupported_item: torch 2.13 compiles `x * x.sum().item()`
    # with fullgraph=True; tracegrad must give eager's values or refuse naming the line
    def build(T):
        return lambda x: x * x.sum().item()
    check(build, lambda T, i: (_rand(T, i, 3),), backward=_bw_sum, fullgraph=True)


def test_data_dependent_branch_without_fullgraph_gives_eager_results():
    # MiscTests.test_graph_break_* / test_repros data-dependent branches: both branches taken
    # across calls, each equal to eager, the break recorded
    def build(T):
        def fn(x):
            y = x * 2
            if y.sum() > 0:
                y = y.sin()
            else:
                y = y.cos() * 3
            return y + 1
        return fn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = check(build, lambda T, i: ((T.ones(3) * (1 if i % 2 else -1) * (i + 1)).requires_grad_(),),
                   calls=4, backward=_bw_sum)
    assert cf.stats["graph_breaks"]


def test_compiler_disable_inner_function_runs_eagerly():
    # MiscTests.test_disable / test_torch_compiler_disable: a disabled helper called from a
    # compiled function runs its Python on every call and the result equals eager
    def build(T):
        calls = []

        @T.compiler.disable
        def helper(x):
            calls.append(1)
            return x * 3

        def fn(x):
            return helper(x.sin()) + 1
        fn.calls = calls
        return fn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = check(build, lambda T, i: (_rand(T, i, 3),), backward=_bw_sum)
    assert len(cf.__wrapped__.calls) == CALLS


def test_compiler_disable_on_compiled_function_and_decorator_form():
    # MiscTests.test_disable_decorator / test_compile(disable=True): disabled code never traces
    f = tracegrad.compiler.disable(lambda x: x * 2)
    g = tracegrad.compile(lambda x: x * 2, disable=True)
    for _ in range(CALLS):
        assert _np(f(tracegrad.ones(2))).tolist() == [2.0, 2.0]
        assert _np(g(tracegrad.ones(2))).tolist() == [2.0, 2.0]
    assert g.stats["traces"] == 0

    @tracegrad.compiler.disable(recursive=False)
    def h(x):
        return x + 1
    assert _np(h(tracegrad.ones(1))).tolist() == [2.0]


def test_dynamo_reset_then_new_values():
    # MiscTests (torch._dynamo.reset between runs): after reset the compiled function still
    # returns right results, and a global it reads changed meanwhile is seen
    state = {"k": 2.0}

    def fn(x):
        return x * state["k"]
    cf = tracegrad.compile(fn)
    for _ in range(2):
        assert _np(cf(tracegrad.ones(2))).tolist() == [2.0, 2.0]
    assert cf.stats["traces"] == 1
    tracegrad._dynamo.reset()
    state["k"] = 5.0
    for _ in range(2):
        assert _np(cf(tracegrad.ones(2))).tolist() == [5.0, 5.0]
    assert cf.stats["traces"] == 1     # counters restart at reset: one new program


_GLOBAL = [1.0]


def test_global_and_closure_changes_seen():
    # MiscTests.test_global_state_guard / test_closure_recompiles: a module global and a
    # closure cell changed between calls are read afresh
    k = [1.0]

    def fn(x):
        return x * _GLOBAL[0] + k[0]
    cf = tracegrad.compile(fn)
    for g, c in [(1.0, 1.0), (1.0, 1.0), (2.0, 4.0)]:
        _GLOBAL[0], k[0] = g, c
        _same(fn(tracegrad.ones(2)), cf(tracegrad.ones(2)), f"{g},{c}")
    _GLOBAL[0] = 1.0


def test_python_builtins_shapes_and_containers():
    # FunctionTests (test_len, test_shape, test_size, test_range, test_tuple_unpack,
    # test_dict_ops, test_isinstance, test_default_args, test_kwargs): Python over shapes and
    # containers is evaluated per call as eager
    def build(T):
        def fn(a, b, *, scale=2, extra=None):
            out = {}
            n = len(a) + a.shape[1] + a.size(0)
            for i in range(a.dim()):
                out[f"s{i}"] = a.sum(i) * (i + 1)
            x, y = a.chunk(2, dim=1)
            if isinstance(b, (list, tuple)):
                b = b[0] + b[1]
            if extra is not None:
                b = b + extra
            return out, (x * scale + y) / n, b
        return fn
    for kw in ({"scale": 3, "extra": 1.5},):
        check(lambda T, kw=kw: (lambda a, b: build(T)(a, b, **kw)),
              lambda T, i: (_rand(T, i, 4, 2), [_rand(T, i, 2, seed=3), _rand(T, i, 2, seed=4)]),
              calls=2, backward=lambda out: (out[1].sum() + out[0]["s0"].sum() + out[2].sum()).backward())


def test_inplace_on_input_and_view_visible_to_caller():
    # ReproTests (test_inplace_view_on_input, test_setitem, test_add_inplace): in-place ops on
    # an argument and on a view of it inside a compiled function mutate the caller's tensor
    def build(T):
        def fn(x, y):
            x.add_(1)
            x[0] = y.sum()
            x[1:].mul_(2)
            return x * y, x
        return fn
    cf = check(build, lambda T, i: (_rand(T, i, 3, rg=False), _rand(T, i, 3, rg=False, seed=5)))
    a = tracegrad.zeros(3)
    for i in range(2):
        a0 = _np(a).copy()
        out = cf(a, tracegrad.ones(3))
        assert out[1] is a
        np.testing.assert_allclose(_np(a), [3.0, (a0[1] + 1) * 2, (a0[2] + 1) * 2], err_msg=str(i))


def test_grad_mode_inside_compiled_function():
    # MiscTests.test_no_grad / test_enable_grad / test_set_grad_enabled inside the function
    def build(T):
        def fn(x):
            with T.no_grad():
                a = x * 2
            with T.enable_grad():
                b = x * 3
            with T.set_grad_enabled(False):
                c = x * 4
            return a + b + c, a.requires_grad, b.requires_grad, c.requires_grad
        return fn
    check(build, lambda T, i: (_rand(T, i, 3),), backward=_bw_sum)
    with tracegrad.no_grad():
        cf = tracegrad.compile(lambda x: (x * 2, tracegrad.is_grad_enabled()))
        for _ in range(CALLS):
            out, enabled = cf(tracegrad.ones(2, requires_grad=True))
            assert enabled is False and out.requires_grad is False


@pytest.mark.parametrize("cut", ["detach", "no_grad"])
def test_detached_values_inside_compiled_forward_get_no_grad(cut):
    # MiscTests.test_detach / test_no_grad_inline: a value cut from the graph inside the
    # compiled function contributes no gradient (x.grad == 3 on every call)
    def build(T):
        def fn(x):
            if cut == "detach":
                a = (x * 2).detach()
            else:
                with T.no_grad():
                    a = x * 2
            return a + x * 3
        return fn
    check(build, lambda T, i: (T.ones(3, requires_grad=True),), backward=_bw_sum)


def test_fresh_requires_grad_argument_reuses_program():
    # MiscTests.test_no_recompile_on_new_tensor-style (torch guards on metadata, not identity):
    # new input tensors with the same shape, dtype and requires_grad reuse one program
    cf = tracegrad.compile(lambda x: (x * 2).sin())
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the cache_size_limit fallback warns
        for _ in range(3):
            x = tracegrad.ones(3, requires_grad=True)
            cf(x).sum().backward()
            assert _np(x.grad) == pytest.approx(_np((tracegrad.ones(3) * 2).cos() * 2))
    assert cf.stats["traces"] == 1


def test_manual_seed_inside_compiled_function_reproducible():
    # MiscTests.test_manual_seed / test_rand_inlined / test_dropout_inline: seeding inside a
    # compiled function makes each call's random numbers equal eager's
    def fn(x):
        tracegrad.manual_seed(123)
        return tracegrad.nn.functional.dropout(x, 0.5, training=True) + tracegrad.rand(3)
    cf = tracegrad.compile(fn)
    ref = fn(tracegrad.ones(3))
    for _ in range(CALLS):
        _same(ref, cf(tracegrad.ones(3)), "seeded")


def test_random_without_seed_advances_like_eager():
    # MiscTests.test_random_values / test_rng_state: unseeded randomness differs call to call,
    # and the global generator ends where eager's does
    def run(wrap):
        tracegrad.manual_seed(7)
        f = wrap(lambda x: x + tracegrad.randn(3))
        outs = [_np(f(tracegrad.zeros(3))) for _ in range(CALLS + 1)]
        return outs, _np(tracegrad.get_rng_state())
    (eo, es), (co, cs) = run(lambda f: f), run(tracegrad.compile)
    for a, b in zip(eo, co):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    assert not np.allclose(co[1], co[2])
    np.testing.assert_array_equal(cs, es)


def test_compiled_function_exception_propagates_and_next_call_works():
    # MiscTests.test_user_exception / test_raise_in_function: a user exception inside the
    # compiled function reaches the caller (same class) and later calls still work
    def fn(x, bad):
        y = x * 2
        if bad:
            raise ValueError("user error in step")
        return y
    cf = tracegrad.compile(fn)
    for i in range(CALLS):
        assert _np(cf(tracegrad.ones(2), False)).tolist() == [2.0, 2.0]
        with pytest.raises(ValueError, match="user error in step"):
            cf(tracegrad.ones(2), True)


def test_compiled_nested_compiled_functions():
    # MiscTests.test_nested_compile / test_inline_compiled: a compiled function calling another
    # compiled function (and a compiled module) equals eager
    def build(T):
        inner = T.compile(lambda x: x.sin() * 2) if T is tracegrad else (lambda x: x.sin() * 2)

        def outer(x):
            return inner(x).sum(0)
        return outer
    check(build, lambda T, i: (_rand(T, i, 2, 3),), calls=2, backward=_bw_sum)


def test_returns_input_unchanged_and_non_tensor_outputs():
    # MiscTests.test_return_input / test_return_nested / test_return_none: identity outputs,
    # None, Python numbers and nested containers come back as eager's
    def build(T):
        def fn(x, n):
            return x, None, n * 2, [x + n, {"k": (x * n, "s")}]
        return fn
    cf = check(build, lambda T, i: (_rand(T, i, 2, rg=False), 3))
    x = tracegrad.ones(2)
    for _ in range(CALLS):
        assert cf(x, 3)[0] is x
