"""Round-24 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository: test/inductor/test_compiled_autograd.py (TestCompiledAutograd: a
backward pass compiled together with the step that calls it -- Sequential MLPs trained by
``backward()`` inside the compiled function, grads accumulated without ``zero_grad``, ``.grad``
set by the user before a compiled backward, tensor hooks, Node pre-hooks and post-hooks,
``autograd.grad`` and ``backward(inputs=...)`` reaching only some leaves, a custom Function whose
backward must not run, ``retain_graph`` backwards of a graph built outside, custom Functions
saving tensors, shapes and attributes, two classes with the same body alternated, a class made
per call, ``print`` in forward or backward, ``torch._dynamo.disable`` and ``graph_break`` around
the backward, a checkpointed attention) and test/dynamo/test_backward_higher_order_ops.py
(BackwardHigherOrderOpTests: a hook registered on an input inside the compiled function, a hook
with Python side effects registered outside, a hook that prints).

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` on several calls
with fresh inputs (``_dynamo_port.compare``/``check``): outputs, the leaves' grads after every
call and the Python state the program changes must agree. Each test names the torch test it
ports (``test_compiled_autograd.py::TestCompiledAutograd::<name>``); the programs are written
here in their own code, at tiny shapes, and keep the construct the torch test checks. Adapted:
torch's tests count compiled-autograd captures, compare graphs and logs, or draw inputs from
``torch.randn`` under a seed; here only what a user observes is compared (plus the number of
programs traced where the original's point is "no recompile"), and inputs are seeded numpy
draws so torch and tracegrad see the same numbers. Tests of compiled autograd's own machinery
(bytecode hooks, fake-tensor modes, C++ autograd nodes, CUDA graphs, verbose logs) have no
counterpart here.
"""
import functools

import numpy as np
import pytest

import tracegrad
from ._dynamo_port import compare, compare_programs, rand, same
from ._harness import np_init

torch = pytest.importorskip("torch")


def _mlp(T, *sizes, act="ReLU", seed=0):
    """``Linear(sizes[0], sizes[1]), act, Linear(...), act, ...`` with numpy-seeded weights."""
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [T.nn.Linear(a, b), getattr(T.nn, act)()]
    return np_init(T.nn.Sequential(*layers), T, seed=seed)


def _grads(model):
    return [p.grad for p in model.parameters()]


def _x(T, i, *shape, rg=False, seed=0):
    return rand(T, i, *(shape or (2, 4)), rg=rg, seed=seed)


def _hook1(grad):
    return grad * 2


def _hook2(grads):
    return (grads[0] + 1,)


def _hook3(grad_inputs, grad_outputs):
    return (grad_inputs[0].sin() + grad_outputs[0],)


# ---- a compiled step whose backward trains a small MLP ------------------------------------------

def _mlp_step(make_fn):
    """``compare`` over a step ``make_fn(T, model)`` of a 4-4-4 ReLU MLP; each call's
    observables are the step's result and every parameter's grad."""
    def build(T, wrap):
        model = _mlp(T, 4, 4, 4)
        step = wrap(make_fn(T, model))

        def run(i):
            return step(_x(T, i)), _grads(model)
        return run
    return build


def test_basic():
    # test_compiled_autograd.py::TestCompiledAutograd::test_basic: forward and backward of a
    # two-layer ReLU MLP in one compiled call; grads accumulate over the calls
    def make(T, model):
        def step(x):
            loss = model(x).sum()
            loss.backward()
            return loss
        return step
    compare_programs(_mlp_step(make), traces=1)


def test_cache_hit():
    # test_compiled_autograd.py::TestCompiledAutograd::test_cache_hit: a new model (same
    # structure) on every call, passed to the compiled step: one program serves them all
    def build(T, wrap):
        def step(model, x):
            loss = model(x).sum()
            loss.backward()
            return loss
        f = wrap(step)

        def run(i):
            model = _mlp(T, 4, 4, 4, seed=i)
            return f(model, _x(T, i)), _grads(model)
        return run
    compare_programs(build)


def test_tensor_grad_hook1():
    # test_compiled_autograd.py::TestCompiledAutograd::test_tensor_grad_hook1: a hook doubling the
    # first weight's grad, registered outside the compiled step (on a new model per call)
    def build(T, wrap):
        def step(model, x):
            loss = model(x).sum()
            loss.backward()
            return loss
        f = wrap(step)

        def run(i):
            model = _mlp(T, 4, 4, seed=i)
            model[0].weight.register_hook(_hook1)
            return f(model, _x(T, i)), _grads(model)
        return run
    compare(build)


def test_tensor_grad_hook2():
    # test_compiled_autograd.py::TestCompiledAutograd::test_tensor_grad_hook2: a pre-hook on the
    # loss's grad_fn (added inside the compiled step) adds one to the incoming grad
    def make(T, model):
        def step(x):
            loss = model(x).sum()
            loss.grad_fn.register_prehook(_hook2)
            loss.backward()
            return loss
        return step
    compare(_mlp_step(make))


def test_tensor_grad_hook3():
    # test_compiled_autograd.py::TestCompiledAutograd::test_tensor_grad_hook3: a post-hook on the
    # loss's grad_fn replaces its grad_input with sin(grad_input) + grad_output
    def make(T, model):
        def step(x):
            loss = model(x).sum()
            loss.grad_fn.register_hook(_hook3)
            loss.backward()
            return loss
        return step
    compare(_mlp_step(make))


def test_torch_compile():
    # test_compiled_autograd.py::TestCompiledAutograd::test_torch_compile: a compiled module
    # (fullgraph) whose backward runs outside, then zero_grad between the calls
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")
        fast = wrap(model)

        def run(i):
            loss = fast(_x(T, i, 1, 4)).sum()
            loss.backward()
            grads = [g.clone() for g in _grads(model)]
            model.zero_grad()
            return loss, grads, _grads(model)
        return run
    compare(build, fullgraph=True)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_torch_compile_api(backend):
    # test_compiled_autograd.py::TestCompiledAutograd::test_torch_compile_api_inductor,
    # test_torch_compile_api_aot_eager, test_torch_compile_api_eager: a function training three
    # steps (forward, backward, grads read, zero_grad) compiled as a whole with each backend
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")

        def three_steps(xs):
            res = []
            for x in xs:
                model(x).sum().backward()
                res += [model[0].weight.grad.clone(), model[0].bias.grad.clone()]
                model.zero_grad()
            return res
        f = wrap(three_steps)
        return lambda i: (f([_x(T, i + k, 1, 4) for k in range(3)]), _grads(model))
    compare(build, backend=backend)


def test_multiple_torch_compile():
    # test_compiled_autograd.py::TestCompiledAutograd::test_multiple_torch_compile: two compiled
    # functions over two models, each doing its own backward, called in turn (the original
    # switches compiled autograd on for one of them)
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")
        model2 = np_init(T.nn.Linear(4, 4), T, seed=3)

        def fn(x):
            model(x).sum().backward()

        def fn2(x):
            model2(x).sum().backward()
        f, f2, f3 = wrap(fn), wrap(fn2), wrap(fn)

        def run(i):
            outs = [f(_x(T, i, 1, 4)), f2(_x(T, i, 1, 4, seed=5)), f3(_x(T, i, 1, 4, seed=9))]
            return outs, _grads(model), _grads(model2)
        return run
    compare(build)


def test_torch_compile_graph_break():
    # test_compiled_autograd.py::TestCompiledAutograd::test_torch_compile_graph_break: the whole
    # step is ``torch._dynamo.disable``d, then compiled: it runs eagerly, grads still right
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")

        @T._dynamo.disable()
        def fn(x):
            model(x).sum().backward()
        f = wrap(fn)
        return lambda i: (f(_x(T, i, 1, 4)), _grads(model))
    compare(build)


def test_torch_compile_graph_break2():
    # test_compiled_autograd.py::TestCompiledAutograd::test_torch_compile_graph_break2: only the
    # ``backward`` call sits in a disabled helper the compiled step calls
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")

        @T._dynamo.disable()
        def inner_fn(loss):
            loss.backward()

        def fn(x):
            loss = model(x).sum()
            inner_fn(loss)
            return loss
        f = wrap(fn)
        return lambda i: (f(_x(T, i, 1, 4)), _grads(model))
    compare(build)


def test_torch_compile_only_backward_call():
    # test_compiled_autograd.py::TestCompiledAutograd::test_torch_compile_only_backward_call: a
    # compiled lambda that only calls ``backward`` of a loss built outside it (a new graph per call)
    def build(T, wrap):
        model = _mlp(T, 4, 4, act="Sigmoid")
        holder = {}
        bwd = wrap(lambda: holder["loss"].backward())

        def run(i):
            holder["loss"] = model(_x(T, i, 1, 4)).sum()
            return bwd(), _grads(model)
        return run
    compare(build)


# ---- which leaves a backward reaches ------------------------------------------------------------

def test_implicit_add():
    # test_compiled_autograd.py::TestCompiledAutograd::test_implicit_add: a leaf used three times
    # (its grads add up); its .grad is reset to None between the calls
    def build(T, wrap):
        y = _x(T, 0, 1, 4, rg=True, seed=50)

        def fn(x):
            result = T.sigmoid(x * y + T.sin(y) + T.cos(y)).sum()
            result.backward()
            return result
        f = wrap(fn)

        def run(i):
            out = (f(_x(T, i, 1, 4)), y.grad)
            y.grad = None
            return out
        return run
    compare_programs(build, traces=1)


class _UnreachableBwd:
    """A custom Function (identity) whose backward raises: the backward must never run."""

    @staticmethod
    def make(T):
        class UnreachableBwd(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                raise RuntimeError("this backward must not run")
        return UnreachableBwd


def test_output_nodes_all_leaves():
    # test_compiled_autograd.py::TestCompiledAutograd::test_output_nodes_all_leaves:
    # ``autograd.grad`` for two leaves returns their grads and leaves both ``.grad`` None
    def build(T, wrap):
        y = _x(T, 0, 1, 4, rg=True, seed=50)
        z = _x(T, 0, 1, 4, rg=True, seed=60)

        def fn(x):
            result = T.sigmoid(x * z + T.sin(y) + T.cos(y)).sum()
            return T.autograd.grad(result, inputs=[y, z])
        f = wrap(fn)
        return lambda i: (f(_x(T, i, 1, 4)), y.grad is None, z.grad is None)
    compare(build)


def test_output_nodes_some_leaves():
    # test_compiled_autograd.py::TestCompiledAutograd::test_output_nodes_some_leaves:
    # ``autograd.grad`` for one leaf only: the branch through a Function whose backward raises is
    # never run
    def build(T, wrap):
        fn_cls = _UnreachableBwd.make(T)
        y = _x(T, 0, 1, 4, rg=True, seed=50)
        z = _x(T, 0, 1, 4, rg=True, seed=60)

        def fn(x):
            result = T.sigmoid(fn_cls.apply(y) * z * x).sum()
            return T.autograd.grad(result, inputs=[z])
        f = wrap(fn)
        return lambda i: (f(_x(T, i, 1, 4)), y.grad is None, z.grad is None)
    compare(build)


def test_no_output_nodes_all_leaves():
    # test_compiled_autograd.py::TestCompiledAutograd::test_no_output_nodes_all_leaves:
    # ``backward()`` returns None and fills both leaves' grads; they are reset between calls
    def build(T, wrap):
        y = _x(T, 0, 1, 4, rg=True, seed=50)
        z = _x(T, 0, 1, 4, rg=True, seed=60)

        def fn(x):
            result = T.sigmoid(x * z + T.sin(y) + T.cos(y)).sum()
            return result.backward()
        f = wrap(fn)

        def run(i):
            out = (f(_x(T, i, 1, 4)), y.grad, z.grad)
            y.grad = z.grad = None
            return out
        return run
    compare(build)


def test_no_output_nodes_some_leaves():
    # test_compiled_autograd.py::TestCompiledAutograd::test_no_output_nodes_some_leaves:
    # ``backward(inputs=[y, z])`` skips the third leaf, whose path goes through a Function whose
    # backward raises; its .grad stays None
    def build(T, wrap):
        fn_cls = _UnreachableBwd.make(T)
        y = _x(T, 0, 1, 4, rg=True, seed=50)
        z = _x(T, 0, 1, 4, rg=True, seed=60)
        a = _x(T, 0, 1, 4, rg=True, seed=70)

        def fn(x):
            result = T.sigmoid(x * y * z * fn_cls.apply(a)).sum()
            return result.backward(inputs=[y, z])
        f = wrap(fn)

        def run(i):
            out = (f(_x(T, i, 1, 4)), y.grad, z.grad, a.grad is None)
            y.grad = z.grad = None
            return out
        return run
    compare(build)


def test_no_output_nodes_different_leaves_will_recompile():
    # test_compiled_autograd.py::TestCompiledAutograd::
    # test_no_output_nodes_different_leaves_will_recompile: ``autograd.backward(loss, inputs=[x])``
    # then ``inputs=[y]`` of a loss built outside, each in a compiled lambda
    def build(T, wrap):
        x, y, z = (_x(T, 0, 5, rg=True, seed=s) for s in (1, 2, 3))
        holder = {}
        bx = wrap(lambda: T.autograd.backward(holder["loss"], inputs=[x]))
        by = wrap(lambda: T.autograd.backward(holder["loss"], inputs=[y]))

        def run(i):
            holder["loss"] = (x * y * z * (i + 1)).sum()
            bx()
            gx, x.grad = x.grad, None
            holder["loss"] = (x * y * z * (i + 1)).sum()
            by()
            return gx, y.grad, z.grad is None
        return run
    compare(build)


def test_dynamic_shapes():
    # test_compiled_autograd.py::TestCompiledAutograd::test_dynamic_shapes: a compiled module
    # (dynamic=True) called on batches of changing size, backward outside, zero_grad after
    def build(T, wrap):
        model = _mlp(T, 4, 4, 4)
        fast = wrap(model)

        def run(i):
            loss = fast(_x(T, i, (3, 5, 7, 5, 3)[i], 4)).sum()
            loss.backward()
            grads = [g.clone() for g in _grads(model)]
            model.zero_grad()
            return loss, grads
        return run
    compare(build, calls=5, dynamic=True)


def test_accumulate_without_zero():
    # test_compiled_autograd.py::TestCompiledAutograd::test_accumulate_without_zero: a compiled
    # module, backward outside, grads accumulating over the calls with no zero_grad
    def build(T, wrap):
        model = _mlp(T, 4, 4, 4)
        fast = wrap(model)

        def run(i):
            fast(_x(T, i, 3, 4)).sum().backward()
            return [g.clone() for g in _grads(model)]
        return run
    compare(build, calls=6, dynamic=True)


def test_inplace_grad_update():
    # test_compiled_autograd.py::TestCompiledAutograd::test_inplace_grad_update: ``.grad`` set by
    # the user to a new tensor before each backward of a compiled module's output: backward
    # accumulates into that very tensor (``grad is w_grad`` after it)
    def build(T, wrap):
        model = _mlp(T, 4, 4)
        fast = wrap(model)
        w, b = model[0].weight, model[0].bias

        def run(i):
            w_grad, b_grad = _x(T, i, 4, 4, seed=30), _x(T, i, 4, seed=40)
            w.grad, b.grad = w_grad, b_grad
            fast(_x(T, i, 3, 4)).sum().backward()
            return w.grad is w_grad, b.grad is b_grad, w_grad.clone(), b_grad.clone()
        return run
    compare(build, calls=5, dynamic=True)


def test_inplace_grad_update_step():
    # test_compiled_autograd.py::TestCompiledAutograd::test_inplace_grad_update, with the backward
    # inside the compiled step too: the user's ``.grad`` tensors receive the accumulation
    def build(T, wrap):
        model = _mlp(T, 4, 4)
        w, b = model[0].weight, model[0].bias

        def step(x):
            model(x).sum().backward()
        f = wrap(step)

        def run(i):
            w_grad, b_grad = _x(T, i, 4, 4, seed=30), _x(T, i, 4, seed=40)
            w.grad, b.grad = w_grad, b_grad
            f(_x(T, i, 3, 4))
            return w.grad is w_grad, b.grad is b_grad, w_grad.clone(), b_grad.clone()
        return run
    compare(build, calls=5)


def test_keep_graph_simple():
    # test_compiled_autograd.py::TestCompiledAutograd::test_keep_graph_simple: a graph built once
    # outside, backward with retain_graph inside a compiled function called repeatedly after
    # ``x.grad`` is replaced by a fresh zero tensor
    def build(T, wrap):
        x = T.tensor([2.0], requires_grad=True)
        y = x ** 2
        y.backward(retain_graph=True)
        first = x.grad.clone()

        def fn():
            x.grad = T.tensor([0.0])
            y.backward(retain_graph=True)
            return x.grad
        f = wrap(fn)
        return lambda i: (first, f(), x.grad)
    compare(build)


def test_keep_graph_usage_after_compiled():
    # test_compiled_autograd.py::TestCompiledAutograd::test_keep_graph_usage_after_compiled: the
    # retained graph's backward alternates between a compiled call and a plain call
    def build(T, wrap):
        x = T.tensor([2.0], requires_grad=True)
        y = x ** 2

        def check():
            y.backward(retain_graph=True)
            g = x.grad.clone()
            x.grad = T.tensor([0.0])
            return g
        f = wrap(check)
        return lambda i: (f(), check(), x.grad)
    compare(build)


# ---- custom Functions in a compiled step, sizes changing between calls --------------------------

_SIZES = (3, 7, 3, 4, 5, 6)


def _fn_step(make_cls, n_in=1, loss=lambda outs: outs[0].sum(), traces=None):
    """A step applying the Function ``make_cls(T)`` to ``n_in`` fresh ``arange`` leaves of the
    sizes in ``_SIZES`` (one per call), with ``backward`` inside; observables: the outputs and
    every leaf's grad."""
    def build(T, wrap):
        cls = make_cls(T)

        def step(*xs):
            outs = cls.apply(*xs)
            outs = outs if isinstance(outs, tuple) else (outs,)
            loss(outs).backward()
            return outs

        f = wrap(step)

        def run(i):
            xs = [T.arange(0.0, _SIZES[i], requires_grad=True) * 1 for _ in range(n_in)]
            xs = [x.detach().requires_grad_() for x in xs]
            return f(*xs), [x.grad for x in xs]
        return run
    return compare_programs(build, calls=len(_SIZES), traces=traces)


def _sin_saving_input(T):
    class MySin(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return T.sin(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * T.cos(x)
    return MySin


def test_custom_fn_saved_tensors():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_saved_tensors: a sin whose
    # backward reads the saved input; the input's length changes between calls (one program per
    # length: torch's compiled autograd marks it dynamic after the second)
    _fn_step(_sin_saving_input, traces=range(1, 6))


def test_custom_fn_saved_multiple_tensors():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_saved_multiple_tensors: two
    # inputs saved, two outputs multiplied into the loss
    def make(T):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return T.sin(x), T.sin(y)

            @staticmethod
            def backward(ctx, gx, gy):
                x, y = ctx.saved_tensors
                return gx * T.cos(x), gy * T.cos(y)
        return MyFn
    _fn_step(make, n_in=2, loss=lambda outs: (outs[0] * outs[1]).sum())


def test_custom_fn_saved_multiple_tensors_dedup():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_saved_multiple_tensors_dedup:
    # the same input saved twice, both read in backward
    def make(T):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, x)
                return T.sin(x)

            @staticmethod
            def backward(ctx, grad):
                x1, x2 = ctx.saved_tensors
                return grad * T.cos(x1) * T.cos(x2)
        return MyFn
    _fn_step(make)


def test_custom_fn_saved_shape_tensor():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_saved_shape_tensor: backward
    # scales by the saved input's length, which changes between calls
    def make(T):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x.shape[0]
        return MyFn
    _fn_step(make)


def test_custom_fn_saved_attr():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_saved_attr: the input's
    # shape kept as a ctx attribute (not a saved tensor) scales the grad
    def make(T):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.shape = x.shape
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.shape[0]
        return MyFn
    _fn_step(make)


def test_custom_fn_multiple_grads():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_multiple_grads: two outputs
    # (``x + y`` and ``y`` itself), their grads passed straight through
    def make(T):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y, y

            @staticmethod
            def backward(ctx, g1, g2):
                return g1, g2
        return MyFn
    _fn_step(make, n_in=2, loss=lambda outs: (outs[0] + outs[1]).sum())


def test_custom_fn_non_variable_input():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_non_variable_input: a Python
    # int between two tensor inputs; backward returns a "grad" for it too (ignored)
    def build(T, wrap):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, z):
                return x * 2, y * 3, z * 4

            @staticmethod
            def backward(ctx, g1, g2, g3):
                return g1, g2, g3

        def step(x, y, z):
            o1, o2, o3 = MyFn.apply(x, y, z)
            (o1 + o2 + o3).sum().backward()
            return o1, o2, o3
        f = wrap(step)

        def run(i):
            x = T.arange(0.0, _SIZES[i], requires_grad=True)
            z = T.arange(0.0, _SIZES[i], requires_grad=True)
            return f(x, 1 + i % 2, z), x.grad, z.grad
        return run
    compare(build, calls=len(_SIZES))


def _identity_fn(T, scale=1):
    class MyFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return grad * scale
    return MyFn


def test_custom_fn_with_same_graph():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_with_same_graph: two
    # Function classes with the same body, alternated as an argument of the compiled step: each
    # keeps its own program (their backwards are told apart) and neither retraces
    def build(T, wrap):
        fns = [_identity_fn(T), _identity_fn(T)]

        def step(fn, x):
            out = fn.apply(x)
            out.sum().backward()
            return out, type(out.grad_fn).__name__ == fns[0].__name__ + "Backward"
        f = wrap(step)

        def run(i):
            x = T.arange(0.0, 4, requires_grad=True)
            return f(fns[i % 2], x), x.grad
        return run
    compare_programs(build, traces=2)


def test_custom_fn_dynamically_defined_class():
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_dynamically_defined_class:
    # a Function class made per call inside the compiled step, over a multiplier that changes
    def build(T, wrap):
        def step(x, multiplier):
            out = _identity_fn(T, multiplier).apply(x)
            out.sum().backward()
            return out
        f = wrap(step)

        def run(i):
            x = T.arange(0.0, 4, requires_grad=True)
            return f(x, (10, 20, 30, 20)[i]), x.grad
        return run
    compare(build)


def _printing_sin(T, log, in_forward, in_backward):
    class MySin(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if in_forward:
                log.append(("forward", tuple(x.shape)))
                print("graph break")
            ctx.save_for_backward(x)
            return T.sin(x)

        @staticmethod
        def backward(ctx, grad):
            if in_backward:
                log.append(("backward", tuple(grad.shape)))
                print("graph break")
            (x,) = ctx.saved_tensors
            return grad * T.cos(x)
    return MySin


def _printing_fn_run(in_forward, in_backward, compile_apply):
    """A training step over the Function of ``_printing_sin``: with ``compile_apply`` only its
    ``apply`` is compiled (the original's ``torch.compile(MySin.apply)``), else the whole step;
    observables: the output, the grad and what forward/backward logged so far."""
    def build(T, wrap):
        log = []
        cls = _printing_sin(T, log, in_forward, in_backward)
        if compile_apply:
            apply = wrap(cls.apply)

            def step(x):
                out = apply(x)
                out.sum().backward()
                return out
        else:
            def plain(x):
                out = cls.apply(x)
                out.sum().backward()
                return out
            step = wrap(plain)

        def run(i):
            x = T.arange(0.0, _SIZES[i], requires_grad=True)
            return step(x), x.grad, list(log)
        return run
    compare(build, calls=len(_SIZES))


def test_custom_fn_bw_graph_break(capsys):
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_bw_graph_break: ``print`` in
    # backward: printed on every call, in order, with the right grads
    _printing_fn_run(False, True, compile_apply=False)
    assert capsys.readouterr().out.count("graph break") == 3 * len(_SIZES)


def test_custom_fn_compiled_fw_graph_break(capsys):
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_compiled_fw_graph_break:
    # ``torch.compile(MySin.apply)`` with a ``print`` in forward; backward outside
    _printing_fn_run(True, False, compile_apply=True)
    assert capsys.readouterr().out.count("graph break") == 3 * len(_SIZES)


def test_custom_fn_compiled_fw_bw_graph_break(capsys):
    # test_compiled_autograd.py::TestCompiledAutograd::test_custom_fn_compiled_fw_bw_graph_break:
    # ``print`` in both forward and backward of a compiled ``MySin.apply``
    _printing_fn_run(True, True, compile_apply=True)
    assert capsys.readouterr().out.count("graph break") == 6 * len(_SIZES)


def test_mismatch_fake_tensor_mode():
    # test_compiled_autograd.py::TestCompiledAutograd::test_mismatch_fake_tensor_mode: a compiled
    # function that resets a closed-over leaf's grad, adds, backprops and returns out and the grad
    def build(T, wrap):
        x = _x(T, 0, 4, 3, seed=11)
        y = _x(T, 0, 4, 3, rg=True, seed=12)

        def f():
            y.grad = None
            out = x + y
            out.sum().backward()
            return out, y.grad
        g = wrap(f)
        return lambda i: g()
    compare_programs(build, traces=1)


def test_accumulate_grad_accuracy():
    # test_compiled_autograd.py::TestCompiledAutograd::test_accumulate_grad_accuracy: two
    # bias-free Linear layers (2 -> 1 -> 2), manual_seed called between forward and backward
    def build(T, wrap):
        model = np_init(T.nn.Sequential(T.nn.Linear(2, 1, bias=False), T.nn.Linear(1, 2, bias=False)),
                        T, seed=4)

        def step(x):
            loss = model(x).sum()
            T.manual_seed(0)
            loss.backward()
            return loss
        f = wrap(step)
        return lambda i: (f(_x(T, i, 2, 2)), _grads(model))
    compare(build)


def test_trace_run_with_rng_state():
    # test_compiled_autograd.py::TestCompiledAutograd::test_trace_run_with_rng_state: causal
    # scaled-dot-product attention, once plain and once under a non-reentrant checkpoint, their
    # product squared by matmul, compiled with fullgraph; backward outside
    def build(T, wrap):
        F = T.nn.functional

        def sdpa(q, k):
            return F.scaled_dot_product_attention(q, k, k, is_causal=True)

        def g(q1, k1, q2, k2):
            y1 = sdpa(q1, k1)
            y2 = T.utils.checkpoint.checkpoint(sdpa, q2, k2, use_reentrant=False)
            y = T.mul(y1, y2)
            return T.matmul(y, y)
        f = wrap(g)

        def run(i):
            qs = [_x(T, i, 1, 1, 2, 2, rg=True, seed=s) for s in (1, 2)]
            ks = [_x(T, i, 1, 1, 4, 2, rg=True, seed=s) for s in (3, 4)]
            out = f(qs[0], ks[0], qs[1], ks[1])
            out.sum().backward()
            return out, [t.grad for t in qs + ks]
        return run
    compare(build, fullgraph=True)


def test_verbose_logs_aot_dispatcher_nodes():
    # test_compiled_autograd.py::TestCompiledAutograd::test_verbose_logs_aot_dispatcher_nodes: a
    # compiled function with ``torch._dynamo.graph_break()`` between its sin/cos and the rest;
    # backward outside through both halves
    def build(T, wrap):
        def f(x):
            tmp1 = x.sin()
            tmp2 = x.cos()
            T._dynamo.graph_break()
            return tmp1.sin() + tmp2.cos()
        g = wrap(f)

        def run(i):
            x = _x(T, i, 4, rg=True)
            out = g(x)
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_verbose_logs_aot_dispatcher_nodes_hop():
    # test_compiled_autograd.py::TestCompiledAutograd::test_verbose_logs_aot_dispatcher_nodes_hop:
    # a hook on an intermediate, registered inside, adds a dataclass field's tensor and a local
    # of the compiled function to the grad
    import dataclasses

    def build(T, wrap):
        @dataclasses.dataclass
        class CustomObj:
            val: object

        def fn(x, obj):
            y = x.sin()
            closure_var = y + 1
            y.register_hook(lambda grad: grad + obj.val + closure_var)
            return y.sin()
        f = wrap(fn)

        def run(i):
            x = _x(T, i, 4, rg=True)
            f(x, CustomObj(T.tensor(88.0 + i))).sum().backward()
            return x.grad
        return run
    compare(build)


def test_cudagraphs_cpu_scalar_used_in_python_custom_op():
    # test_compiled_autograd.py::TestCompiledAutograd::
    # test_cudagraphs_cpu_scalar_used_in_python_custom_op: a Function saving a 0-dim integer tensor
    # and keeping a Python int on ctx, both scaling the grad; forward returns ``x.sum()``
    def build(T, wrap):
        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, T.tensor(5))
                ctx.cpu_scalar = 5
                return x.sum()

            @staticmethod
            def backward(ctx, grad):
                x, five = ctx.saved_tensors
                return grad * T.ones_like(x) * five * ctx.cpu_scalar

        def step(x):
            out = MyFn.apply(x)
            out.backward()
            return out
        f = wrap(step)

        def run(i):
            x = _x(T, i, 5, rg=True)
            return f(x), x.grad
        return run
    compare(build)


# ---- test_backward_higher_order_ops.py: hooks around a compiled function -------------------------

def _square(x):
    return x * x


def _square_hook(grad):
    return _square(grad)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_invoke_in_pt2(backend):
    # test_backward_higher_order_ops.py::BackwardHigherOrderOpTests::test_invoke_in_pt2 (and
    # test_invoke_in_eager, the same program uncompiled): a hook squaring the grad, registered on
    # an input inside the compiled ``x * y``; backward outside with a given grad_output
    def build(T, wrap):
        def fn(x, y):
            x.register_hook(_square_hook)
            return x * y
        f = wrap(fn)

        def run(i):
            x = T.tensor([0.5, 0.25 * (i + 1)], requires_grad=True)
            y = T.tensor([0.5, -0.5], requires_grad=True)
            out = f(x, y)
            out.backward(T.tensor([2.0, 3.0]))
            return out, x.grad, y.grad
        return run
    compare(build, backend=backend)


def test_invoke_in_pt2_compiled_autograd():
    # test_backward_higher_order_ops.py::BackwardHigherOrderOpTests::
    # test_invoke_in_pt2_compiled_autograd: the squaring hook on ``x`` of a compiled ``x + y``
    def build(T, wrap):
        def fn(x, y):
            x.register_hook(_square_hook)
            return x + y
        f = wrap(fn)

        def run(i):
            x = T.tensor([0.5, 0.5], requires_grad=True)
            y = T.tensor([0.5, 0.5], requires_grad=True)
            out = f(x, y)
            out.backward(T.tensor([2.0, 1.0 + i]))
            return out, x.grad, y.grad
        return run
    compare(build)


def test_invoke_in_pt2_compiled_autograd_side_effect():
    # test_backward_higher_order_ops.py::BackwardHigherOrderOpTests::
    # test_invoke_in_pt2_compiled_autograd_side_effect: a hook registered once, outside, as a
    # partial of a partial over an object whose counter it bumps: counted once per backward of
    # the compiled (fullgraph) ``x + y``
    def build(T, wrap):
        class MyObj:
            def __init__(self):
                self.counter = 0

        def stateful(grad, obj):
            obj.counter = obj.counter + 1
            return _square(grad)

        def invoke(grad, fn):
            return fn(grad)

        obj = MyObj()
        x = T.tensor([0.5, 0.5], requires_grad=True)
        y = T.tensor([0.5, 0.5], requires_grad=True)
        x.register_hook(functools.partial(invoke, fn=functools.partial(stateful, obj=obj)))
        f = wrap(lambda a, b: a + b)

        def run(i):
            f(x, y).backward(T.tensor([2.0, 2.0 + i]))
            return obj.counter, x.grad, y.grad
        return run
    compare(build, fullgraph=True)


def test_invoke_in_pt2_compiled_autograd_graph_breaks(capsys):
    # test_backward_higher_order_ops.py::BackwardHigherOrderOpTests::
    # test_invoke_in_pt2_compiled_autograd_graph_breaks: a hook that prints, registered inside the
    # compiled ``x + y`` (torch's compiled autograd refuses it under fullgraph; a plain compiled
    # call prints on every backward with the right grads)
    def build(T, wrap):
        def printing(grad):
            print("Boo!")
            return _square(grad)

        def fn(x, y):
            x.register_hook(printing)
            return x + y
        f = wrap(fn)

        def run(i):
            x = T.tensor([0.5, 0.5], requires_grad=True)
            y = T.tensor([0.5, 0.5], requires_grad=True)
            f(x, y).backward(T.tensor([2.0, 2.0 + i]))
            return x.grad, y.grad
        return run
    compare(build)
    assert capsys.readouterr().out.count("Boo!") == 3 * 4
