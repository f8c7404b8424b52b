"""Round-14 ports (second file) of PyTorch's torch.compile tests as compiled-vs-eager checks:
test/dynamo/test_higher_order_ops.py (torch.cond / torch.while_loop with closures, modules,
nested branches and gradients; torch.func.grad and vmap inside a compiled function;
checkpoint with side effects), test/dynamo/test_modules.py (module attributes, parameters
and submodules changed between calls, ModuleDict/ParameterList iteration, lazy modules) and
test/dynamo/test_optimizers.py (optimizer state, param_groups changed between calls).
torch eager, tracegrad eager and ``tracegrad.compile`` must agree after every call."""
import numpy as np
import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand, same

torch = pytest.importorskip("torch")






def _init(T, m, seed=0):
    rng = np.random.RandomState(seed)
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor((rng.randn(*p.shape) * 0.5).astype("float32")))
    return m


# ---- test_higher_order_ops.py: cond / while_loop ------------------------------------------

# HigherOrderOpTests.test_cond_* (branches closing over tensors and a module's parameters,
# pred flipping between calls; gradients through the taken branch)
def test_cond_branch_flips_between_calls_with_gradients():
    def build(T, wrap):
        lin = _init(T, T.nn.Linear(3, 3))
        scale = T.tensor(2.0)

        def fn(x):
            return T.cond(x.sum() > 0, lambda t: lin(t).sin() * scale, lambda t: (t - 1).cos(), (x,))
        f = wrap(fn)

        def run(i):
            lin.zero_grad()
            x = (_rand(T, i, 2, 3).abs() * (1 if i % 2 else -1)).requires_grad_()
            out = f(x)
            out.sum().backward()
            # torch.cond lifts both branches' closed-over parameters into the op, so a call
            # that took the branch without ``lin`` still gives it a zero gradient (not None)
            return out, x.grad, lin.weight.grad, lin.bias.grad
        return run
    compare(build)


# HigherOrderOpTests.test_cond_nested / test_cond_with_python_pred: a Python bool pred and
# a tensor pred, nested
def test_cond_nested_and_python_bool_pred():
    def build(T, wrap):
        def fn(x, flag):
            def outer_true(t):
                return T.cond(t.mean() > 0.5, lambda u: u * 3, lambda u: u + 3, (t,))
            return T.cond(flag, outer_true, lambda t: -t, (x,))
        f = wrap(fn)

        def run(i):
            x = _rand(T, i, 4).requires_grad_()
            out = f(x, i % 3 != 0)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


# HigherOrderOpTests.test_cond_pred_errors: a pred of several elements is torch's RuntimeError,
# on every call (never swallowed once the function is traced)
def test_cond_pred_of_several_elements_raises_every_call():
    def build(T, wrap):
        f = wrap(lambda x: T.cond(x > 0, lambda t: t, lambda t: -t, (x,)))

        def run(i):
            with pytest.raises(RuntimeError, match="pred"):
                f(_rand(T, i, 3))
            return True
        return run
    compare(build)


def test_cond_with_tensor_pred_under_fullgraph():
    f = tracegrad.compile(lambda x: tracegrad.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,)),
                          fullgraph=True)
    for i in range(3):
        x = _rand(tracegrad, i, 3)
        ref = x.sin() if x.sum() > 0 else x.cos()
        np.testing.assert_allclose(f(x).numpy(), ref.numpy(), rtol=1e-6)


# HigherOrderOpTests.test_while_loop_* : a counter and an accumulator carried, a closed-over
# tensor read by the body; the number of iterations depends on the data
def test_while_loop_data_dependent_trip_count():
    def build(T, wrap):
        step = T.tensor(0.5)

        def fn(x):
            i0 = T.tensor(0)
            n, acc = T.while_loop(lambda n, a: a.sum() < 10, lambda n, a: (n + 1, a + step + a.abs() * 0.1),
                                  (i0, x))
            return n, acc
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 3) * (i + 1))
        return run
    compare(build)


# HigherOrderOpTests.test_map_* / test_fallback_on_python_primitives_output: a Python-side
# effect in a branch happens on every call (one graph would do it once while tracing)
def test_cond_branch_with_python_side_effect_every_call():
    # torch.cond refuses a branch with a Python side effect even eagerly (it compiles the
    # branches); tracegrad.cond runs the branch as Python: compiled must repeat it every call
    def build(T, wrap):
        log = []

        def true_fn(t):
            log.append("t")
            return t * 2

        def false_fn(t):
            log.append("f")
            return t / 2
        f = wrap(lambda x: T.cond(x.sum() > 0, true_fn, false_fn, (x,)))

        def run(i):
            out = f(_rand(T, i, 3))
            return out, "".join(log)
        return run
    eager, comp = build(tracegrad, lambda f: f), build(tracegrad, tracegrad.compile)
    for i in range(CALLS):
        same(eager(i), comp(i), f"call{i}")


# HigherOrderOpTests.test_grad / test_grad_closure / test_grad_has_aux / test_vmap_*:
# torch.func transforms inside a compiled function, closures over a module's parameters
def test_func_grad_with_aux_and_closure_inside():
    def build(T, wrap):
        lin = _init(T, T.nn.Linear(3, 1))

        def loss(w, x):
            y = lin(x * w).sum()
            return y.pow(2), y

        def fn(w, x):
            g, aux = T.func.grad(loss, has_aux=True)(w, x)
            gv = T.func.vmap(lambda row: (row * w).sum())(x)
            return g, aux, gv
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 3), _rand(T, i + 5, 3))
        return run
    compare(build)


def test_vmap_over_a_module_then_backward():
    def build(T, wrap):
        lin = _init(T, T.nn.Linear(4, 2))

        def fn(xs):
            return T.func.vmap(lambda x: lin(x).tanh())(xs)
        f = wrap(fn)

        def run(i):
            lin.zero_grad()
            xs = _rand(T, i, 5, 4).requires_grad_()
            out = f(xs)
            out.pow(2).sum().backward()
            return out, xs.grad, lin.weight.grad, lin.bias.grad
        return run
    compare(build)


# ActivationCheckpointingViaTagsTests / HigherOrderOpTests.test_checkpoint_* : a checkpointed
# function appends to a list (once in forward; non-reentrant recomputation runs it again in
# backward, eagerly)
def test_checkpoint_side_effect_counts():
    def build(T, wrap):
        from importlib import import_module
        ckpt = import_module(T.__name__ + ".utils.checkpoint").checkpoint
        lin = _init(T, T.nn.Linear(3, 3))
        calls = []

        def block(x):
            calls.append(1)
            return lin(x).relu()

        def fn(x):
            return ckpt(block, x, use_reentrant=False).sum()
        f = wrap(fn)

        def run(i):
            lin.zero_grad()
            out = f(_rand(T, i, 2, 3))
            before = len(calls)
            out.backward()
            return out, lin.weight.grad, before
        return run
    compare(build)


# ---- test_modules.py ------------------------------------------------------------------------

# NNModuleTests.test_module_attribute_mutation / test_self_mutating: a Python attribute the
# forward reads and increments
def test_module_counter_attribute_incremented_by_forward():
    def build(T, wrap):
        class Counter(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _init(T, T.nn.Linear(2, 2))
                self.n = 0

            def forward(self, x):
                self.n += 1
                return self.lin(x) * self.n
        m = Counter()
        f = wrap(m)

        def run(i):
            return f(_rand(T, i, 3, 2)), m.n
        return run
    compare(build)


# NNModuleTests.test_moduledict / test_parameterlist / test_module_list_iteration with an
# entry added between calls
def test_module_dict_and_parameter_list_grown_between_calls():
    def build(T, wrap):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = T.nn.ModuleDict({"a": _init(T, T.nn.Linear(2, 2))})
                self.scales = T.nn.ParameterList([T.nn.Parameter(T.tensor(1.5))])

            def forward(self, x):
                for name, layer in self.layers.items():
                    x = layer(x)
                for s in self.scales:
                    x = x * s
                return x
        net = Net()
        f = wrap(net)

        def run(i):
            if i == 1:
                net.layers["b"] = _init(T, T.nn.Linear(2, 2), seed=4)
            if i == 2:
                net.scales.append(T.nn.Parameter(T.tensor(-0.5)))
            net.zero_grad()
            out = f(_rand(T, i, 3, 2))
            out.sum().backward()
            return out, [p.grad for p in net.parameters()]
        return run
    compare(build)


# NNModuleTests.test_lazy_module*: a lazy module materialized by the first (eager) call
def test_lazy_linear_materialized_in_the_first_call():
    def build(T, wrap):
        T.manual_seed(0)
        lazy = T.nn.LazyLinear(2)
        f = wrap(lazy)

        def run(i):
            if i == 0:
                f(T.zeros(1, 3))
                _init(T, lazy)
            out = f(_rand(T, i, 4, 3))
            return out, type(lazy).__name__, tuple(lazy.weight.shape)
        return run
    compare(build)


# NNModuleTests.test_module_setattr_param / test_unsupported_method: a parameter replaced and
# a submodule swapped between calls
def test_submodule_swapped_and_parameter_replaced_between_calls():
    def build(T, wrap):
        net = T.nn.Sequential(_init(T, T.nn.Linear(2, 3)), T.nn.ReLU(), _init(T, T.nn.Linear(3, 1), seed=2))
        f = wrap(net)

        def run(i):
            if i == 1:
                net[1] = T.nn.Tanh()
            if i == 2:
                net[0].bias = T.nn.Parameter(T.tensor([1.0, -1.0, 0.5]))
            if i == 3:
                net[2] = T.nn.Identity()
            net.zero_grad()
            x = _rand(T, i, 4, 2)
            out = f(x)
            out.sum().backward()
            return out, net[0].bias.grad
        return run
    compare(build)


# NNModuleTests.test_forward_directly / test_call_fn_with_non_const_inputs: the module's
# forward method compiled directly while its training flag changes
def test_bound_forward_compiled_with_mode_changes():
    def build(T, wrap):
        net = T.nn.Sequential(_init(T, T.nn.Linear(3, 3)), T.nn.BatchNorm1d(3))
        f = wrap(net.forward)

        def run(i):
            net.train(i % 2 == 0)
            out = f(_rand(T, i, 5, 3))
            return out, net[1].running_mean, net[1].running_var, net[1].num_batches_tracked
        return run
    compare(build)


# ---- test_optimizers.py ---------------------------------------------------------------------

# test_optimizers.py: an optimizer step compiled on its own (torch.compile(opt.step)), with
# the grads set outside; its lr changed between calls and state cleared
@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_compiled_optimizer_step_alone(opt_name):
    def build(T, wrap):
        w = T.nn.Parameter(T.tensor([[1.0, -2.0], [0.5, 3.0]]))
        kw = {"SGD": {"momentum": 0.9}, "RMSprop": {"momentum": 0.5}}.get(opt_name, {})
        opt = getattr(T.optim, opt_name)([w], lr=0.1, **kw)
        step = wrap(opt.step)

        def run(i):
            w.grad = _rand(T, i, 2, 2)
            if i == 2:
                opt.param_groups[0]["lr"] = 0.01
            step()
            return w.detach().clone(), opt.state_dict()["state"]
        return run
    compare(build, calls=5)


# test_optimizers.py: zero_grad compiled (set_to_none on and off)
def test_compiled_zero_grad():
    def build(T, wrap):
        lin = _init(T, T.nn.Linear(2, 2))
        opt = T.optim.SGD(lin.parameters(), lr=0.1)
        zg = wrap(opt.zero_grad)

        def run(i):
            lin(_rand(T, i, 3, 2)).sum().backward()
            zg(set_to_none=(i % 2 == 0))
            return [p.grad for p in lin.parameters()]
        return run
    compare(build)
