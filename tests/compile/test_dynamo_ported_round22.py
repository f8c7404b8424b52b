"""Round-22 ports of PyTorch's torch.compile tests as compiled-vs-eager checks, from the
pytorch/pytorch repository's test/dynamo/test_autograd_function.py (AutogradFunctionTests): the
custom ``torch.autograd.Function`` a torch user writes for training -- a backward editing its
grad through ``.data``, contiguity asserted in backward, sizes, tensors and lists kept on ctx,
``save_for_backward`` called twice, an integer output, several outputs marked
non-differentiable, ``out=`` inside forward, a Function applied twice to its own output, a list
appended to in forward, outputs rewired in backward, the same tensor passed twice, a user object
and a dataclass returned from forward, an input returned as-is, a module and dataclasses among
``apply``'s arguments, an in-place op after a list append, Python state changed and put back in
backward (a context manager, a dict attribute, a counter), ``apply`` with keyword arguments
(old style, ``setup_context``, all keywords, no grad, a wrapped forward), ``setup_context``
with defaults and ``*args``, and ``TypeError`` of a wrong ``apply`` caught by the program; and
from test/dynamo/test_hooks.py (HooksTests): tensor hooks defined as local functions (registered,
removed through their handle, replaced) and a hook on an intermediate that ``torch.cond`` reads;
and from test/dynamo/test_modules.py (NNModuleTests): each kind of module hook added after the
first compiled calls and removed through its handle, forward bumping an int attribute, forward
hooks on every module appending to a list, a compiled module compiled again; and from
test/dynamo/test_repros.py (ReproTests): a forward looping over ``self.modules()``, a user
iterator class, ``torch.tensor(data=...)``, the same tensor as two arguments, a plain tensor
attribute, list subclasses of processors (merged, extended, appended to through their own
methods, returned), requires_grad guards across ``no_grad`` calls, an exception object returned,
a RuntimeError caught by a context manager.

Each program runs under torch eager, tracegrad eager and ``tracegrad.compile`` on several calls
with fresh inputs (``_dynamo_port.compare``/``check``): outputs, the grads of the inputs after
``backward``, and the Python state the program changes must agree on every call. Each test
names the torch test it ports (``test_autograd_function.py::AutogradFunctionTests::<name>``);
the programs are written here in their own code, at tiny shapes, and keep the construct the
torch test checks. Adapted: torch's tests count frames and print graphs; here only what a user
observes is compared; a ``torch.randn`` saved in forward (test_tuple_arg) is ``torch.ones``, so
that torch and tracegrad save the same values.

Calls that run eagerly (correct, not compiled; torch's dynamo compiles them): a Function's
forward appending to a closed-over list (test_inplace_op_with_side_effect_wrong_grad), a tensor
hook registered inside the compiled function (the test_hooks.py ports), a module backward hook
(test_hooks_recompile's last three), forward bumping ``self.a`` (test_unspecialized_nn_module),
module hooks appending to a list (test_hooks_allowed_modules_compiles), a list argument extended
(test_merge_criteria_processor_list's merging call, test_restricted_list_subclass3), a context
manager appending to a closed-over list (test_exception_in_dynamo_handling).
Fixed here (autograd/function.py ``_keywords_to_positions``): ``Function.apply``'s keyword
arguments are bound as torch's C++ apply binds them. A new-style Function's keyword-only argument
was silently dropped (``apply(x, scale=4)`` computed with the default; torch raises TypeError), and
a tensor given by keyword to an old-style Function was no input of its node (no grad reached it;
a backward returning one raised "incorrect number of gradients"). Under vmap a Function's own vmap
staticmethod now gets forward's keyword-only arguments by keyword, as torch's (they were dropped
too); func/_custom_function.py ``vmap_apply``.

Found and left: a tensor read from a closure cell or a global (not an argument) that requires
grad, or any closure tensor read by a custom Function's ``apply``, is rebound each call in
test_tuple_arg's pattern: every call traces a new program (torch's dynamo reads it as a graph
input) until the recompile limit, after which the calls run eagerly; values stay right."""
import contextlib
import dataclasses
import functools

import pytest

import tracegrad
from ._dynamo_port import check, compare, fn_and_grads, rand, same, seeded_linear

torch = pytest.importorskip("torch")


def _x(T, i, *shape, rg=True, seed=0):
    return rand(T, i, *(shape or (2, 3)), rg=rg, seed=seed)


def _one(T, i):
    return (_x(T, i),)


def _two(T, i):
    return _x(T, i), _x(T, i, seed=50)


def _grads_of(make_fn, make_args=_one):
    """``compare`` over ``make_fn(T)`` (a Function's ``apply`` or a program using one): outputs
    and the grads of the tensor arguments after ``out.sum().backward()``."""
    compare(lambda T, wrap: fn_and_grads(T, wrap, make_fn, make_args))


# ---- backward reading and editing what it is given ----------------------------------------------

def test_data_in_bwd():
    # test_autograd_function.py::AutogradFunctionTests::test_data_in_bwd: backward zeroes part of
    # a clone of its grad through ``.data`` and a mask of the saved input's ``.data``
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                g2 = g.clone()
                g2.data[x.data < 0] = 0
                return g2 * 3
        return Foo.apply

    _grads_of(make_fn)


class _MatmulFunction:
    """The LinearFunction of test_assert_is_contiguous_*: ``x @ weight.T`` with a hand-written
    backward asserting contiguity (of the grad it computes, or of grad_output itself)."""

    @staticmethod
    def make(T, check_grad_output):
        class LinearFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight):
                ctx.save_for_backward(x, weight)
                return x.matmul(weight.t())

            @staticmethod
            def backward(ctx, g):
                if check_grad_output:
                    assert g.is_contiguous()
                x, weight = ctx.saved_tensors
                gx = g.matmul(weight)
                assert gx.is_contiguous()
                return gx, g.transpose(0, 1).matmul(x)
        return LinearFunction.apply


def _x_and_weight(T, i):
    return _x(T, i, 3, 3), _x(T, i, 2, 3, seed=20)


def test_assert_is_contiguous_after_matmul():
    # test_autograd_function.py::AutogradFunctionTests::test_assert_is_contiguous_after_matmul
    _grads_of(lambda T: _MatmulFunction.make(T, False), _x_and_weight)


def test_assert_is_contiguous_on_grad_output_directly():
    # test_autograd_function.py::AutogradFunctionTests::
    # test_assert_is_contiguous_on_grad_output_directly: backward given a grad that requires
    # grad (a detached clone of the output)
    def build(T, wrap):
        f = wrap(_MatmulFunction.make(T, True))

        def run(i):
            x, w = _x_and_weight(T, i)
            y = f(x, w)
            y.backward(y.clone().detach().requires_grad_(True))
            return y, x.grad, w.grad
        return run
    compare(build)


def test_smuggle_symint_issue_111031():
    # test_autograd_function.py::AutogradFunctionTests::test_smuggle_symint_issue_111031: an int
    # size kept on ctx scales the grad; the length changes between calls (torch: dynamic=True)
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x0 = x.size(0)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * ctx.x0
        return Foo.apply

    _grads_of(make_fn, lambda T, i: (_x(T, i, 2 + i % 2),))


def test_repeated_save_for_backward_calls():
    # test_autograd_function.py::AutogradFunctionTests::test_repeated_save_for_backward_calls:
    # the second save_for_backward replaces the first
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x)
                ctx.save_for_backward(x, y)
                return x * y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * x, g * y
        return Foo.apply

    _grads_of(make_fn, _two)


def test_smuggle_tensor_and_complex_structures():
    # test_autograd_function.py::AutogradFunctionTests::test_smuggle_tensor_and_complex_structures:
    # a tensor and a list of ints kept on ctx as attributes
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x0 = x
                ctx.x1 = [1, 2, 3]
                return x * 2

            @staticmethod
            def backward(ctx, g):
                r = g * ctx.x0
                for k in ctx.x1:
                    r = r * k + r
                return r
        return Foo.apply

    _grads_of(make_fn)


# ---- outputs: ints, non-differentiable, user objects, an input as-is --------------------------

def test_int_output():
    # test_autograd_function.py::AutogradFunctionTests::test_int_output: the int32 output does
    # not require grad, the float one does
    def make_fn(T):
        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                out1 = x.sin()
                return out1, (out1 * 4).to(dtype=T.int)

            @staticmethod
            def backward(ctx, g1, g2):
                return g1.cos(), g1 * 0.0
        return MyFunction.apply

    _grads_of(make_fn, _two)


def test_mark_multi_output_non_differentiable():
    # test_autograd_function.py::AutogradFunctionTests::test_mark_multi_output_non_differentiable
    def make_fn(T):
        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, z):
                out2, out3 = y * 2, z + 3
                ctx.mark_non_differentiable(out2, out3)
                return x.sin(), out2, out3

            @staticmethod
            def backward(ctx, g1, g2, g3):
                return g1.cos(), g2, g3
        return MyFunction.apply

    _grads_of(make_fn, lambda T, i: (_x(T, i), _x(T, i, seed=5), _x(T, i, seed=9)))


def test_fwd_no_grad():
    # test_autograd_function.py::AutogradFunctionTests::test_fwd_no_grad: forward runs without
    # grad, so ``exp(..., out=input)`` on an input that requires grad is allowed
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, inputs):
                T.exp(inputs, out=inputs)
                return inputs

            @staticmethod
            def backward(ctx, g):
                return None

        def fn(x):
            return Foo.apply(x)
        return fn

    check(make_fn, lambda T, i: (_x(T, i).clone(),))


def test_fwd_propogation_correctness():
    # test_autograd_function.py::AutogradFunctionTests::test_fwd_propogation_correctness: a
    # Function applied to its own output; its backward (deliberately half the true grad) runs
    # for both applications
    def make_fn(T):
        class MyCube(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                dx = 3 * x ** 2
                ctx.save_for_backward(x, dx)
                return x ** 3, dx

            @staticmethod
            def backward(ctx, g, g_dx):
                x, dx = ctx.saved_tensors
                return (g * dx + g_dx * 6 * x) * 0.5

        def fn(x):
            x, _ = MyCube.apply(x)
            x, _ = MyCube.apply(x)
            return x
        return fn

    _grads_of(make_fn, lambda T, i: (_x(T, i, 3),))


def test_tuple_arg():
    # test_autograd_function.py::AutogradFunctionTests::test_tuple_arg: a shape tuple among
    # apply's arguments, forward saving a tensor of that shape (ones here: torch's randn draws
    # differ between the libraries), the compiled function reading its closure
    def build(T, wrap):
        class TupleArgFunc(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, shape):
                ctx.save_for_backward(T.ones(shape) * 2)
                return x + 1

            @staticmethod
            def backward(ctx, g):
                (saved,) = ctx.saved_tensors
                return saved * g, None

        cell = {}

        @wrap
        def fn():
            return TupleArgFunc.apply(cell["x"], cell["shape"])

        def run(i):
            cell["shape"] = (2, 3)
            cell["x"] = x = _x(T, i)
            out = fn()
            out.sum().backward()
            return out, x.grad
        return run
    compare(build)


def test_nonlocal_list_mutation_in_autograd_function():
    # test_autograd_function.py::AutogradFunctionTests::
    # test_nonlocal_list_mutation_in_autograd_function: forward appends to a list argument,
    # returns a tuple read by [0] and [-1]
    def make_fn(T):
        class SimpleAutogradFunc(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, z):
                o = T.matmul(x, x) @ x
                z.append(x.sin())
                return T.cos(T.sin(o)), T.sin(x)

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 + g2, None

        def fn(x):
            z = []
            outs = SimpleAutogradFunc.apply(x, z)
            return outs[0] + outs[-1], z[0]
        return fn

    _grads_of(make_fn, lambda T, i: (_x(T, i, 3, 3) * 0.5,))


def test_rewired_bwd_output():
    # test_autograd_function.py::AutogradFunctionTests::test_rewired_bwd_output: backward reads
    # a saved input, intermediate and output, and sends each grad to the other input
    def make_fn(T):
        class Add(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                a, b = T.sin(x), T.cos(y)
                result = a * b
                ctx.save_for_backward(a, x, result)
                return result, a + b

            @staticmethod
            def backward(ctx, ga, gb):
                a, x, result = ctx.saved_tensors
                return a * gb * 2 + x, result + ga * 3

        def fn(x, y):
            z = Add.apply(T.cos(x), T.cos(y))
            return z[0] + z[1]
        return fn

    _grads_of(make_fn, _two)


def test_duplicate_input_accumulates_grad():
    # test_autograd_function.py::AutogradFunctionTests::test_duplicate_input_accumulates_grad:
    # the same tensor as both inputs: its grad is the sum of the two
    def make_fn(T):
        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b + a + b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * (b + 1), g * (a + 1)

        def fn(x):
            return Foo.apply(x, x).sum()
        return fn

    _grads_of(make_fn, lambda T, i: (_x(T, i, 5),))


class _Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def test_udf_output():
    # test_autograd_function.py::AutogradFunctionTests::test_udf_output: forward returns a user
    # object holding two tensors (made without grad) and a tensor
    def make_fn(T):
        class Add(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                a = T.sin(x)
                ctx.save_for_backward(a)
                return _Pair(a, T.cos(y)), x * y

            @staticmethod
            def backward(ctx, g_pair, g):
                (a,) = ctx.saved_tensors
                return g * 2, a * g * 3

        def fn(x, y):
            z = Add.apply(x, y)
            return z[0].a + z[0].b + z[1]
        return fn

    _grads_of(make_fn, _two)


def test_aliasing_output():
    # test_autograd_function.py::AutogradFunctionTests::test_aliasing_output: forward returns its
    # input; the program branches on ``is``
    def make_fn(T):
        class Add(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        def fn(x):
            y = Add.apply(x)
            if y is x:
                return T.cos(y)
            return T.sin(y)
        return fn

    _grads_of(make_fn)


@dataclasses.dataclass
class _InputData:
    count: int
    values: object


@dataclasses.dataclass
class _OutputData:
    result1: object
    result2: object


def _module_and_data_fn(T, with_output_data):
    """The program of test_nn_module_dataclasses_as_inputs/as_io: a module (an int and a tensor
    attribute) and a dataclass among apply's arguments; forward returns a tensor and a tensor
    or (``with_output_data``) a dataclass of two."""
    class Mod(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = 4
            self.b = _x(T, 0, 2, 3, rg=False, seed=30)

    module = Mod()

    class Foo(T.autograd.Function):
        @staticmethod
        def forward(ctx, module, data, x):
            out = module.a + module.b * data.count * data.values
            if with_output_data:
                return out + x, _OutputData(out + data.count, out * (data.count + 1))
            return out + x, data.values + x

        @staticmethod
        def backward(ctx, g, g_data):
            return None, None, g * 2

    def fn(data, x):
        y, y_data = Foo.apply(module, data, x)
        if with_output_data:
            return x + y + y_data.result1 + y_data.result2
        return x + y + y_data + y_data
    return fn


def _data_and_x(T, i):
    return _InputData(5 + i, _x(T, i, rg=False, seed=40)), _x(T, i)


def test_nn_module_dataclasses_as_inputs():
    # test_autograd_function.py::AutogradFunctionTests::test_nn_module_dataclasses_as_inputs
    # (backward returns None for the module and the dataclass: torch raises for a grad given
    # to a non-tensor input); the count changes between calls
    _grads_of(lambda T: _module_and_data_fn(T, False), _data_and_x)


def test_nn_module_dataclasses_as_io():
    # test_autograd_function.py::AutogradFunctionTests::test_nn_module_dataclasses_as_io
    _grads_of(lambda T: _module_and_data_fn(T, True), _data_and_x)


def test_inplace_op_with_side_effect_wrong_grad():
    # test_autograd_function.py::AutogradFunctionTests::test_inplace_op_with_side_effect_wrong_grad:
    # forward appends an intermediate to a closed-over list and adds to a fresh tensor in place
    def build(T, wrap):
        captured = []

        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                captured.append(T.sin(x))
                loss = T.tensor(0.0)
                loss += x.sum()
                return loss

            @staticmethod
            def backward(ctx, g):
                return g.expand(4) * 2

        f = wrap(lambda x: Foo.apply(x))

        def run(i):
            captured.clear()
            x = _x(T, i, 4)
            out = f(x)
            out.backward()
            return out, x.grad, list(captured)
        return run
    compare(build)


# ---- Python state changed (and put back) in backward --------------------------------------------

class _State:
    def __init__(self):
        self.enabled = False
        self.mode = "default"
        self.options = {"mode": "fast", "level": 3}
        self.depth = 0


def _state_in_backward(make_backward):
    """``compare`` of ``Foo.apply(x).sum()`` whose backward is ``make_backward(state)`` (given the
    grad): the loss, x's grad and the state's fields after backward."""
    def build(T, wrap):
        state = _State()
        bwd = make_backward(state)

        class Foo(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return bwd(g)

        f = wrap(lambda x: Foo.apply(x).sum())

        def run(i):
            x = _x(T, i, 4)
            out = f(x)
            out.backward()
            return out, x.grad, dict(vars(state))
        return run
    compare(build)


def test_nullified_ctx_manager_side_effect_in_backward():
    # test_autograd_function.py::AutogradFunctionTests::
    # test_nullified_ctx_manager_side_effect_in_backward: a context manager flips a flag and puts
    # it back around backward's body
    def make_backward(state):
        @contextlib.contextmanager
        def toggle():
            old = state.enabled
            state.enabled = True
            try:
                yield
            finally:
                state.enabled = old

        def bwd(g):
            with toggle():
                return g.clone() * (3 if state.enabled else 1)
        return bwd

    _state_in_backward(make_backward)


def test_nullified_dict_attr_side_effect_in_backward():
    # test_autograd_function.py::AutogradFunctionTests::
    # test_nullified_dict_attr_side_effect_in_backward: a dict attribute swapped and restored
    def make_backward(state):
        def bwd(g):
            old = state.options
            state.options = {"mode": "slow", "level": 1}
            scale = state.options["level"] + 1
            state.options = old
            return g.clone() * scale
        return bwd

    _state_in_backward(make_backward)


def test_nullified_integer_counter_in_backward():
    # test_autograd_function.py::AutogradFunctionTests::test_nullified_integer_counter_in_backward
    def make_backward(state):
        def bwd(g):
            state.depth += 1
            r = g.clone() * state.depth
            state.depth -= 1
            return r
        return bwd

    _state_in_backward(make_backward)


def test_read_after_mutate_in_backward():
    # test_autograd_function.py::AutogradFunctionTests::test_read_after_mutate_in_backward: the
    # mode set by a context manager is read inside it
    def make_backward(state):
        @contextlib.contextmanager
        def set_mode(mode):
            old = state.mode
            state.mode = mode
            try:
                yield
            finally:
                state.mode = old

        def bwd(g):
            with set_mode("special"):
                if state.mode == "special":
                    return g * 2.0
                return g
        return bwd

    _state_in_backward(make_backward)


# ---- apply with keyword arguments, setup_context -----------------------------------------------

def _my_sin(T, save=True):
    """test_apply_kwargs_old_style's MySin: ``factor * sin(input)``, factor a keyword with a
    default, kept on ctx."""
    class MySin(T.autograd.Function):
        @staticmethod
        def forward(ctx, input, factor=1):
            if save:
                ctx.save_for_backward(input)
                ctx.factor = factor
            return factor * T.sin(input)

        @staticmethod
        def backward(ctx, g):
            (input,) = ctx.saved_tensors
            return g * ctx.factor * T.cos(input), None
    return MySin


def test_apply_kwargs_old_style():
    # test_autograd_function.py::AutogradFunctionTests::test_apply_kwargs_old_style
    _grads_of(lambda T: lambda x: _my_sin(T).apply(x, factor=6))


def test_apply_kwargs_inference():
    # test_autograd_function.py::AutogradFunctionTests::test_apply_kwargs_inference: no input
    # requires grad
    check(lambda T: lambda x: _my_sin(T, save=False).apply(x, factor=6),
          lambda T, i: (_x(T, i, rg=False),))


def test_apply_kwargs_setup_context():
    # test_autograd_function.py::AutogradFunctionTests::test_apply_kwargs_setup_context
    def make_fn(T):
        class MyScale(T.autograd.Function):
            @staticmethod
            def forward(x, factor=1):
                return factor * x

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, factor = inputs
                ctx.save_for_backward(x)
                ctx.factor = factor

            @staticmethod
            def backward(ctx, g):
                return g * ctx.factor, None
        return lambda x: MyScale.apply(x, factor=3)

    _grads_of(make_fn)


def test_apply_kwargs_all_kwargs():
    # test_autograd_function.py::AutogradFunctionTests::test_apply_kwargs_all_kwargs: every
    # argument by keyword, in another order (y's grad doubled so that a swap shows)
    def make_fn(T):
        class Add(T.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x + 2 * y

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g, 2 * g
        return lambda x, y: Add.apply(y=y, x=x)

    _grads_of(make_fn, _two)


def test_apply_kwargs_with_wrapped():
    # test_autograd_function.py::AutogradFunctionTests::test_apply_kwargs_with_wrapped: forward
    # is a functools.wraps wrapper whose own parameter names bind apply's keywords
    def make_fn(T):
        def renamed(f):
            @functools.wraps(f)
            def wrapper(ctx, input, factor=1):
                return f(ctx, input, factor)
            return wrapper

        class MySin(T.autograd.Function):
            @staticmethod
            @renamed
            def forward(ctx, input, multiplier=1):
                ctx.save_for_backward(input)
                ctx.factor = multiplier
                return multiplier * T.sin(input)

            @staticmethod
            def backward(ctx, g):
                (input,) = ctx.saved_tensors
                return g * ctx.factor * T.cos(input), None
        return lambda x: MySin.apply(x, factor=6)

    _grads_of(make_fn)


def test_setup_context_binds_default_args_without_functorch():
    # test_autograd_function.py::AutogradFunctionTests::
    # test_setup_context_binds_default_args_without_functorch: setup_context sees forward's
    # defaults among its inputs
    def make_fn(T):
        class ScaleDefault(T.autograd.Function):
            @staticmethod
            def forward(x, scale=2, bias=1):
                return x * scale + bias

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.n_inputs = len(inputs)
                ctx.scale = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.scale * ctx.n_inputs, None, None
        return lambda x: ScaleDefault.apply(x, bias=4)

    _grads_of(make_fn, lambda T, i: (_x(T, i, 4, 3),))


def test_setup_context_preserves_varargs():
    # test_autograd_function.py::AutogradFunctionTests::test_setup_context_preserves_varargs
    def make_fn(T):
        class VarArgs(T.autograd.Function):
            @staticmethod
            def forward(x, *ys):
                return x + sum(ys)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.n = len(inputs)

            @staticmethod
            def backward(ctx, g):
                return tuple(g * (k + 1) for k in range(ctx.n))
        return VarArgs.apply

    _grads_of(make_fn, lambda T, i: (_x(T, i), _x(T, i, seed=3), _x(T, i, seed=6)))


def test_setup_context_bind_errors_are_catchable():
    # test_autograd_function.py::AutogradFunctionTests::test_setup_context_bind_errors_are_catchable
    # (without torch.func): apply with a missing argument or one given twice raises TypeError,
    # which the program catches
    def make_fn(T):
        class NeedsTwo(T.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x + y

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g, g

        def fn(x):
            try:
                a = NeedsTwo.apply(x)
            except TypeError:
                a = x + 10
            try:
                b = NeedsTwo.apply(x, x, y=x)
            except TypeError:
                b = x + 20
            return a * b
        return fn

    check(make_fn, _one, backward=True)


# ---- test_hooks.py: hooks defined as local functions -------------------------------------------

def _hooks_run(T, wrap, fn):
    f = wrap(fn)

    def run(i):
        v = _x(T, i, 3)
        y, z = _x(T, i, 2, 2, rg=False, seed=5), _x(T, i, 2, 2, rg=False, seed=6)
        out = f(v, y, z)
        out[0].backward(T.tensor([1.0, 2.0, 3.0]))
        return out, v.grad
    return run


def test_tensor_register_hook_in_graph_local():
    # test_hooks.py::HooksTests::test_tensor_register_hook_in_graph_local (and
    # test_tensor_only_register_hook_in_graph_local: the input returned as it is)
    def local_hook(grad):
        return grad * 2

    def fn(x, y, z):
        x.register_hook(local_hook)
        return x, y * y, z * z

    compare(lambda T, wrap: _hooks_run(T, wrap, fn))


def test_tensor_register_hook_in_graph_break_handle_local():
    # test_hooks.py::HooksTests::test_tensor_register_hook_in_graph_break_handle_local: the first
    # local hook removed through its handle, a second registered
    def local_hook(grad):
        return grad * 2

    def local_hook2(grad):
        return grad * 3

    def fn(x, y, z):
        handle = x.register_hook(local_hook)
        z = z * z
        handle.remove()
        x.register_hook(local_hook2)
        return x, y * y, z

    compare(lambda T, wrap: _hooks_run(T, wrap, fn))


def test_hook_on_intermediate_with_higher_order_op():
    # test_hooks.py::HooksTests::test_hook_on_intermediate_with_higher_order_op: a hooked
    # intermediate is torch.cond's operand
    def make_fn(T):
        def fn(x):
            y = x * 2
            y.register_hook(lambda g: g * 2)
            z = T.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (y,))
            return (z * z).sum()
        return fn

    _grads_of(make_fn, lambda T, i: (_x(T, i, 3),))


# ---- found here: apply's keywords as torch's C++ apply binds them -------------------------------

def _kw_functions(T):
    """Functions taking their arguments by keyword: old style (a tensor ``y`` by keyword is an
    input with its own grad), old style with a keyword-only ``scale``, new style with one."""
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, a=1.0, y=None):
            ctx.save_for_backward(x, y)
            return x * y * a

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, None, g * x

    class OldKwOnly(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, *, scale=2):
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g

    class NewKwOnly(T.autograd.Function):
        @staticmethod
        def forward(x, *, scale=2):
            return x * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g
    return Mul, OldKwOnly, NewKwOnly


def test_apply_keywords_bound_as_torch():
    # Fixed here (autograd/function.py _keywords_to_positions): a new-style Function's
    # keyword-only argument was dropped (NewKwOnly.apply(x, scale=4) gave x * 2; torch raises
    # TypeError), an old-style one's was passed on (torch raises TypeError), and a tensor given
    # by keyword to an old-style Function was no input (no grad for it; its backward's grad
    # count refused); a keyword after a left-out positional parameter raises TypeError as torch
    def build(T, wrap):
        Mul, OldKwOnly, NewKwOnly = _kw_functions(T)
        calls = [wrap(lambda x, y: Mul.apply(x, 3.0, y=y)),
                 wrap(lambda x, y: Mul.apply(x, y=y)),
                 wrap(lambda x, y: OldKwOnly.apply(x, scale=4)),
                 wrap(lambda x, y: NewKwOnly.apply(x, scale=4)),
                 wrap(lambda x, y: NewKwOnly.apply(x))]

        def run(i):
            seen = []
            for f in calls:
                x, y = _two(T, i)
                try:
                    out = f(x, y)
                except TypeError as e:
                    seen.append(("TypeError", "unexpected keyword argument 'scale'" in str(e),
                                 "missing required argument: 'a'" in str(e)))
                    continue
                out.sum().backward()
                seen.append((out, x.grad, y.grad))
            return seen
        return run
    compare(build)


# ---- test_modules.py: module hooks and attributes around a compiled call ------------------------

def _hook_funcs():
    """test_hooks_recompile's hooks, by registration method."""
    def backward_hook(module, grad_input, grad_output):
        return (grad_input[0] * 3,) + (None,) * (len(grad_input) - 1)

    return {
        "register_forward_pre_hook": lambda module, inputs: (2 * inputs[0] + 1,),
        "register_forward_hook": lambda module, inputs, output: 2 * output + 1,
        "register_backward_hook": backward_hook,
        "register_full_backward_hook": backward_hook,
        "register_full_backward_pre_hook": lambda module, grad_outputs: (grad_outputs[0] * 5,),
    }


@pytest.mark.parametrize("hook_type", list(_hook_funcs()))
def test_hooks_recompile(hook_type):
    # test_modules.py::NNModuleTests::test_hooks_recompile: a hook added to the module after the
    # first compiled calls, then removed through its handle; the compiled function runs the
    # module and its backward, returning the input's grad
    def build(T, wrap):
        class TestModule(T.nn.Module):
            def forward(self, x):
                return 2 * x + 1

        m = TestModule()

        @wrap
        def output_and_grad(m, x):
            out = m(x)
            out.sum().backward()
            return out, x.grad

        handle = []

        def run(i):
            if i == 2:
                handle.append(getattr(m, hook_type)(_hook_funcs()[hook_type]))
            if i == 5:
                handle.pop().remove()
            return output_and_grad(m, _x(T, i, 4))
        return run
    compare(build, calls=7)


def test_unspecialized_nn_module():
    # test_modules.py::NNModuleTests::test_unspecialized_nn_module (without its graph break):
    # forward bumps an int attribute read by the output
    def build(T, wrap):
        class Mock(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = 5
                self.relu = T.nn.ReLU()

            def forward(self, x):
                z = self.relu(x)
                self.a += 1
                return z * self.a

        mod = Mock()
        f = wrap(mod)

        def run(i):
            x = _x(T, i, 4)
            out = f(x)
            out.sum().backward()
            return out, x.grad, mod.a
        return run
    compare(build, calls=5)


def _toy_model(T):
    net = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 2), T.nn.ReLU())
    with T.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(_x(T, k, *p.shape, rg=False, seed=60) * 0.5)
    return net


def test_hooks_allowed_modules_compiles():
    # test_modules.py::NNModuleTests::test_hooks_allowed_modules_compiles: a forward hook on every
    # module (the container and its layers) appends its inputs to a list; a training step's
    # backward after it
    def build(T, wrap):
        class ToyModel(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = _toy_model(T)

            def forward(self, x):
                return self.net(x)

        model = ToyModel()
        activations = []
        for _, module in model.named_modules():
            module.register_forward_hook(lambda mod, inp, out: activations.append(inp))
        f = wrap(model)

        def run(i):
            activations.clear()
            f(_x(T, i, 2, 3, rg=False)).sum().backward()
            return list(activations), [p.grad for p in model.parameters()]
        return run
    compare(build)


def test_recursion():
    # test_modules.py::NNModuleTests::test_recursion: a module compiled, and the compiled module
    # compiled again five times
    def build(T, wrap):
        mod = _toy_model(T)
        f = wrap(mod)
        for _ in range(5):
            f = wrap(f)

        def run(i):
            out = f(_x(T, i, 2, 3, rg=False))
            out.sum().backward()
            return out, [p.grad for p in mod.parameters()]
        return run
    compare(build)


# ---- test_repros.py ----------------------------------------------------------------------------

def test_repro_modules():
    # test_repros.py::ReproTests::test_modules: forward loops over self.modules() (two: itself
    # and fc), adding fc's output into a zeros tensor in place each time
    def build(T, wrap):
        class Foo(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = T.nn.Linear(4, 3)

            def forward(self, inp):
                res = T.zeros(3, 3)
                for _ in self.modules():
                    res += self.fc(inp)
                return res

        mod = Foo()
        with T.no_grad():
            for k, p in enumerate(mod.parameters()):
                p.copy_(_x(T, k, *p.shape, rg=False, seed=70))
        f = wrap(mod)

        def run(i):
            x = _x(T, i, 3, 4)
            out = f(x)
            out.sum().backward()
            return out, x.grad, [p.grad for p in mod.parameters()]
        return run
    compare(build)


class _MyIter:
    """test_user_defined_iter's iterator: yields 1, 2, 3 from ``__next__``."""

    def __init__(self):
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i < 3:
            self.i += 1
            return self.i
        raise StopIteration


def test_user_defined_iter():
    # test_repros.py::ReproTests::test_user_defined_iter: a user iterator object built inside,
    # its values added to the argument in place
    def fn(x):
        for k in _MyIter():
            x += k
        return x

    def build(T, wrap):
        f = wrap(fn)

        def run(i):
            x = _x(T, i, rg=False)
            out = f(x)
            return out, x, out is x
        return run
    compare(build)


def test_tensor_data_kwarg():
    # test_repros.py::ReproTests::test_tensor_data_kwarg: torch.tensor given its data by keyword
    # (scaled by an argument here, so the program has an input)
    check(lambda T: lambda x: T.tensor(data=[[1.0, -1.0]]) * x.sum(), _one, backward=True)


def test_avoid_dupe_specialization():
    # test_repros.py::ReproTests::test_avoid_dupe_specialization: the same tensor as both
    # arguments, then two tensors, with and without requires_grad
    def build(T, wrap):
        f = wrap(lambda x, y: (x + y) * 1)

        def run(i):
            rg = i % 2 == 0
            x, y = _x(T, i, 4, rg=rg), _x(T, i, 4, rg=rg, seed=3)
            a, b = f(x, x), f(x, y)
            if rg:
                (a.sum() + b.sum() * 3).backward()
            return a, b, x.grad, y.grad
        return run
    compare(build)


def test_swin_base_tensor_attr():
    # test_repros.py::ReproTests::test_swin_base_tensor_attr: a plain tensor attribute (no
    # parameter, no buffer) concatenated with itself in forward
    def build(T, wrap):
        class Foo(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.t = _x(T, 0, 3, rg=False, seed=80)

            def forward(self, x):
                return x + T.cat((self.t, self.t))

        mod = Foo()
        f = wrap(mod)

        def run(i):
            x = _x(T, i, 6)
            out = f(x)
            (out * out).sum().backward()
            return out, x.grad
        return run
    compare(build)


class _CustomList1(list):
    """test_repros.py's CustomList1: a list of processors called in turn; ``clear`` does
    nothing."""

    def __call__(self, x):
        for processor in self:
            x = processor(x)
        return x

    def clear(self):
        pass


class _CustomList2(list):
    """test_repros.py's CustomList2: a list of processors called in turn, with two methods of its
    own."""

    def __call__(self, x):
        for processor in self:
            x = processor(x)
        return x

    def length_times_10(self):
        return len(self) * 10

    def append_twice(self, x):
        self.extend([x, x])


def _merge_processors(default_list, custom_list):
    # the merge of test_repros.py's _merge_criteria_processor_list, in this file's words
    if not custom_list:
        return default_list
    if any(type(c) is type(d) for d in default_list for c in custom_list):
        raise ValueError("a processor of that type is already in the list")
    default_list.extend(custom_list)
    return default_list


@pytest.mark.parametrize("list_cls", [_CustomList1, _CustomList2])
def test_merge_criteria_processor_list(list_cls):
    # test_repros.py::ReproTests::test_merge_criteria_processor_list1 and ..._list2: a list
    # subclass of activation modules, extended by the compiled function, called on the input
    def build(T, wrap):
        f = wrap(lambda x, left, right: _merge_processors(left, right)(x))
        l1 = list_cls([T.nn.ReLU(), T.nn.Sigmoid()])

        def run(i):
            x = _x(T, i, 5)
            right = list_cls([T.nn.SiLU()] if i == 2 else [])
            out = f(x, l1, right)
            out.sum().backward()
            return out, x.grad, [type(m).__name__ for m in l1]
        return run
    compare(build, calls=3)


def test_restricted_list_subclass1():
    # test_repros.py::ReproTests::test_restricted_list_subclass1: a list subclass built, extended,
    # appended to, popped, and its own method's result summed in
    def fn(a, b):
        lst = _CustomList2()
        lst.extend([True])
        lst.append(a)
        lst.extend([b])
        lst.pop(0)
        lst.append(lst.length_times_10())
        return sum(lst)

    check(lambda T: fn, _two, backward=True)


def test_restricted_list_subclass2():
    # test_repros.py::ReproTests::test_restricted_list_subclass2: a list subclass returned
    def build(T, wrap):
        def fn(a, b):
            l1 = _CustomList2([a + 1])
            l1.extend(_CustomList2([b + 2]))
            return l1

        f = wrap(fn)

        def run(i):
            z = f(*_two(T, i))
            return type(z).__name__, z.length_times_10(), list(z)
        return run
    compare(build)


def test_restricted_list_subclass3():
    # test_repros.py::ReproTests::test_restricted_list_subclass3: the same list subclass passed
    # twice, extended by itself and appended to through its own method
    def build(T, wrap):
        def fn(a, b):
            a.extend(b)
            a.append_twice(b[2] + 1)
            a.append(b[3] + 2)
            return b

        f = wrap(fn)

        def run(i):
            x, y = _two(T, i)
            lst = _CustomList2([x, y])
            out = f(lst, lst)
            return (out is lst, len(lst), lst[0] is x, lst[2] is x, lst[3] is y,
                    lst[5] is lst[4], list(lst))
        return run
    compare(build)


def test_requires_grad_guards_with_grad_mode1():
    # test_repros.py::ReproTests::test_requires_grad_guards_with_grad_mode1: a program branching
    # on requires_grad, first called under no_grad, then on a detached input
    def build(T, wrap):
        f = wrap(lambda x: x + 1 if x.requires_grad else x + 2)

        def run(i):
            x = _x(T, i, 2)
            with T.no_grad():
                first = f(x)
            return first, f(x.detach()), f(x)
        return run
    compare(build)


def test_requires_grad_guards_with_grad_mode2():
    # test_repros.py::ReproTests::test_requires_grad_guards_with_grad_mode2: a Linear compiled
    # under no_grad (an inference program), then called to train
    def build(T, wrap):
        m = seeded_linear(T, 2, 2)
        f = wrap(m)

        def run(i):
            x = _x(T, i, 2)
            with T.no_grad():
                inference = f(x)
            out = f(x)
            out.sum().backward()
            return inference, out, x.grad, [p.grad for p in m.parameters()]
        return run
    compare(build)


def test_stop_iteration_reconstruct():
    # test_repros.py::ReproTests::test_stop_iteration_reconstruct: an exception object returned
    def build(T, wrap):
        f = wrap(lambda x: (x.sin(), StopIteration(1, 2, 3)))

        def run(i):
            out, exc = f(_x(T, i))
            return out, type(exc).__name__, exc.args
        return run
    compare(build)


def test_exception_in_dynamo_handling():
    # test_repros.py::ReproTests::test_exception_in_dynamo_handling: a RuntimeError raised in a
    # helper is caught by a context manager around the call
    def build(T, wrap):
        hits = []

        @contextlib.contextmanager
        def ctx():
            try:
                yield
            except RuntimeError:
                hits.append(1)

        def h(x):
            if x.dim() == 2:
                raise RuntimeError("boof")

        def fn(x):
            y = x * 2
            with ctx():
                h(y)
            return y + 1

        f = wrap(fn)

        def run(i):
            return f(_x(T, i)), len(hits)
        return run
    compare(build)


def _kw_vmap_functions(T):
    """New-style Functions with a keyword-only ``scale``: one with its own vmap staticmethod
    (test_autograd_function.py's test_vmap_custom_rule_with_keyword_only_arg), one with
    generate_vmap_rule."""
    class KeywordOnly(T.autograd.Function):
        @staticmethod
        def forward(x, *, scale=2):
            return x * (scale + 1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vmap(info, in_dims, x, *, scale=2):
            return x * scale, in_dims[0]

    class Generated(KeywordOnly):
        generate_vmap_rule = True
        vmap = T.autograd.Function.vmap
    return KeywordOnly, Generated


def test_apply_keywords_under_transforms_as_torch():
    # Fixed here with test_apply_keywords_bound_as_torch (eager: tracegrad.func transforms run
    # eagerly): under vmap a Function's own vmap staticmethod gets forward's keyword-only
    # argument by keyword (it was dropped: scale=4 gave x * 2), a generated vmap rule calls
    # forward with its default; under grad TypeError, as torch; a keyword-only argument given
    # to a generated rule is a TypeError (torch drops it silently)
    def seen(T):
        KeywordOnly, Generated = _kw_vmap_functions(T)
        calls = [lambda x: T.vmap(lambda y: KeywordOnly.apply(y))(x),
                 lambda x: T.vmap(lambda y: KeywordOnly.apply(y, scale=4))(x),
                 lambda x: T.vmap(lambda y: Generated.apply(y))(x),
                 lambda x: T.func.grad(lambda y: KeywordOnly.apply(y, scale=4).sum())(x),
                 lambda x: T.vmap(lambda y: Generated.apply(y, scale=4))(x)]
        out = []
        for f in calls[:4] if T is torch else calls:
            try:
                out.append(f(_x(T, 0, rg=False)))
            except TypeError as e:
                out.append(("TypeError", "unexpected keyword argument 'scale'" in str(e)))
        return out

    want, got = seen(torch), seen(tracegrad)
    same(want, got[:4], "transforms")
    assert got[4] == ("TypeError", True), got[4]
