"""Round-14 ports of PyTorch's torch.compile hook tests (test/dynamo/test_hooks.py), written
as compiled-vs-eager checks: torch eager, tracegrad eager and ``tracegrad.compile`` run the
same program several times (the first compiled call runs eagerly, the second traces, later
ones replay) and every value a user can observe must agree after every call: outputs,
``.grad``, what the hooks did to Python state, handles."""
import functools

import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand, same

torch = pytest.importorskip("torch")




def _v(T):
    return T.tensor([0.0, 0.0, 0.0], requires_grad=True)


def _ct(T):
    return T.tensor([1.0, 2.0, 3.0])




# HooksTests.test_tensor_only_register_hook_in_graph_lambda / _local / _in_graph_lambda
@pytest.mark.parametrize("hook_kind", ["lambda", "local", "global"])
def test_register_hook_on_input_returned(hook_kind):
    def build(T, wrap):
        def local_hook(g):
            return g * 2
        hook = {"lambda": lambda g: g * 2, "local": local_hook, "global": _global_times4}[hook_kind]

        def fn(x, y, z):
            x.register_hook(hook)
            return x, y * y, z * z
        f = wrap(fn)

        def run(i):
            v, y, z = f(_v(T), _rand(T, i, 2, 2), _rand(T, i + 9, 2, 2))
            v.backward(_ct(T))
            return v.grad, y, z
        return run
    compare(build)


def _global_times4(g):
    return g * 4


def _global_half(g):
    return g / 2


def _global_times3(g):
    return g * 3


# HooksTests.test_tensor_register_hook_in_graph_break_handle_lambda / _local
def test_hook_removed_then_another_registered():
    def build(T, wrap):
        def fn(x, y, z):
            handle = x.register_hook(lambda g: g * 2)
            z = z * z
            handle.remove()
            x.register_hook(lambda g: g * 3)
            return x, y * y, z
        f = wrap(fn)

        def run(i):
            v, y, z = f(_v(T), _rand(T, i, 2, 2), _rand(T, i + 3, 2, 2))
            v.backward(_ct(T))
            return v.grad, y, z
        return run
    compare(build)


# HooksTests.test_tensor_register_hook_multi_handle_return / _repeated_handle_return /
# test_removed_handle_return
@pytest.mark.parametrize("remove", [False, True])
def test_handles_returned_and_removed_twice(remove):
    def build(T, wrap):
        def fn(x, y):
            handle = x.register_hook(lambda g: g * 2)
            if remove:
                handle.remove()
                handle.remove()
            return x, y * y, handle, handle
        f = wrap(fn)

        def run(i):
            v, y, h, h2 = f(_v(T), _rand(T, i, 2, 2))
            v.backward(_ct(T))
            return v.grad, y, h is h2, type(h).__name__
        return run
    compare(build)


# HooksTests.test_tensor_register_hook_repeated_handle_not_local: the handle stored on a module
def test_handle_stored_on_an_argument_module():
    def build(T, wrap):
        holder = T.nn.Module()
        holder.handle = None
        f = wrap(lambda x, y, m: (setattr(m, "handle", x.register_hook(lambda g: g * 2)), x, y * y)[1:])

        def run(i):
            old = holder.handle
            v, y = f(_v(T), _rand(T, i, 2), holder)
            v.backward(_ct(T))
            return v.grad, y, holder.handle is not None, holder.handle is not old
        return run
    compare(build)


# HooksTests.test_tensor_register_multiple_hooks / _handles_in_list / _global_hooks_handles_in_list
def test_three_hooks_then_handles_removed_outside():
    def build(T, wrap):
        def fn(x):
            h0 = x.register_hook(_global_times4)
            h1 = x.register_hook(_global_half)
            h2 = x.register_hook(_global_times3)
            return x, x * x, h0, h1, h2
        f = wrap(fn)

        def run(i):
            v, r, *hs = f(_v(T))
            v.backward(_ct(T))
            first = v.grad.clone()
            for h in hs[: 1 + i % 3]:
                h.remove()
            v.backward(_ct(T))
            return first, v.grad, r
        return run
    compare(build)


H0 = {}


def test_handle_in_a_global_removed_outside():
    def build(T, wrap):
        def fn(x):
            H0[T.__name__] = x.register_hook(_global_times4)
            return x, x * x
        f = wrap(fn)

        def run(i):
            v, r = f(_v(T))
            v.backward(_ct(T))
            first = v.grad.clone()
            H0.pop(T.__name__).remove()
            v.backward(_ct(T))
            return first, v.grad, r
        return run
    compare(build)


# HooksTests.test_hook_on_intermediate / _returns_none / _used_before_and_after /
# test_hook_has_side_effect / test_intermediary_hooks
@pytest.mark.parametrize("hook", ["plus1", "none", "times2"])
def test_hook_on_an_intermediate(hook):
    def build(T, wrap):
        h = {"plus1": lambda g: g + 1, "none": lambda g: None, "times2": lambda g: g * 2}[hook]

        def fn(x):
            y = x * 2
            z = y + 1              # y used before the hook is registered
            y.register_hook(h)
            w = y * 3              # and after
            return (z + w).sum()
        f = wrap(fn)

        def run(i):
            x = _rand(T, i, 4).requires_grad_()
            out = f(x)
            out.backward()
            return out, x.grad
        return run
    compare(build)


# HooksTests.test_hook_on_intermediate_with_container: the tensor also stored in a list/dict
def test_hook_on_an_intermediate_kept_in_containers():
    def build(T, wrap):
        glb_list, glb_dict = [], {}

        def fn(x):
            y = x * 2
            glb_list.append(y)
            glb_dict["tensor"] = y
            a = glb_list[0] * 3
            b = glb_dict["tensor"]
            y.register_hook(lambda g: g + 1)
            return (a + b).sum()
        f = wrap(fn)

        def run(i):
            glb_list.clear()
            glb_dict.clear()
            x = T.ones(4, requires_grad=True) * (i + 1)
            x.retain_grad()
            out = f(x)
            out.backward()
            return out, x.grad, len(glb_list), glb_dict["tensor"]
        return run
    compare(build)


# HooksTests.test_hook_bwd_inside_side_effects (dynamo refuses; eager semantics: the hook
# appends the gradient to a list on every backward)
def test_hook_appending_to_an_outer_list():
    def build(T, wrap):
        global_list = []

        def fn(x):
            y = x * 2

            def _hook(g):
                global_list.append(g)
                return g * 2
            y.register_hook(_hook)
            return (y + x).sum()
        f = wrap(fn)

        def run(i):
            x = T.ones(3, requires_grad=True)
            f(x * (i + 1)).backward()
            return len(global_list), global_list[-1]
        return run
    compare(build)


# HooksTests.test_intermediary_hooks_same_on_aot_eager / _inductor / test_input_hooks_same:
# functools.partial hooks with keyword arguments
@pytest.mark.parametrize("where", ["input", "intermediate"])
def test_partial_hooks_with_keywords(where):
    def build(T, wrap):
        def my_hook(g, *, k=0):
            return g + k

        class MyMod(T.nn.Module):
            def forward(self, x):
                if where == "input":
                    x.register_hook(functools.partial(my_hook, k=3))
                y = x.mul(2)
                if where == "intermediate":
                    y.register_hook(functools.partial(my_hook, k=3))
                    y.register_hook(functools.partial(my_hook, k=4))
                return (y.mul(3),)
        m = wrap(MyMod())

        def run(i):
            x = T.ones(4, requires_grad=True)
            out = m(x)
            out[0].backward(T.ones(4) * (i + 1))
            return out, x.grad
        return run
    compare(build)


# HooksTests.test_complex_state_mutation_in_intermediary_hooks_same_on_inductor: hooks that
# read and change a Python object's counter choose their math by it
def test_hooks_mutating_a_python_object():
    def build(T, wrap):
        class SomePyClass:
            count = 0

            def do_stuff(self, g):
                r = g * g if self.count % 2 == 0 else g + g
                self.count += 1
                return r

        def touching(g, *, obj):
            return obj.do_stuff(g)

        class MyMod(T.nn.Module):
            def forward(self, x, obj):
                y = x.mul(2)
                y.register_hook(functools.partial(touching, obj=obj))
                y.register_hook(functools.partial(touching, obj=obj))
                if obj.count % 4 == 2:
                    y = y + 1
                return (y.mul(3),)
        m, obj = wrap(MyMod()), SomePyClass()

        def run(i):
            x = T.ones(4, requires_grad=True)
            out = m(x, obj)
            out[0].backward(T.ones(4))
            return out, x.grad, obj.count
        return run
    compare(build)


# HooksTests.test_hook_with_closure / test_intermediate_hook_with_closure_eager / _aot /
# test_register_hook_partial_guarding: the hook reads an argument object's attribute
@pytest.mark.parametrize("on", ["input", "intermediate"])
def test_hook_closing_over_an_argument_attribute(on):
    def build(T, wrap):
        class ClassWithVal:
            def __init__(self, val):
                self.val = val

        def fn(x, obj):
            y = x.sin()
            (x if on == "input" else y).register_hook(lambda g: g + obj.val)
            return y.sin()
        f = wrap(fn)
        vals = [T.tensor(88.0), T.tensor(99.0), 11, 2.5]

        def run(i):
            x = T.ones(4, requires_grad=True)
            f(x, ClassWithVal(vals[i % len(vals)])).sum().backward()
            return x.grad
        return run
    compare(build)


# HooksTests.test_hook_with_nested_closure
def test_hook_from_a_nested_closure_reading_a_local_tensor():
    def build(T, wrap):
        def fn(x):
            def run():
                y = x.sin()
                x.register_hook(lambda g: g + y)
                return y.sin()
            return run()
        f = wrap(fn)

        def run(i):
            x = (T.ones(4) * (i + 1)).requires_grad_()
            f(x).sum().backward()
            return x.grad
        return run
    compare(build)


# HooksTests.test_no_recompile_on_hook_identity_change / test_functools_arg_vary: the global
# the forward registers is rebound between calls; each call uses the current one
MY_HOOK = {}


def test_hook_rebound_between_calls_is_used():
    def build(T, wrap):
        def fn(x):
            y = x.mul(2)
            y.register_hook(MY_HOOK[T.__name__])
            return y.mul(3)
        f = wrap(fn)
        hooks = [lambda g: g + 1, lambda g: g * 2, functools.partial(lambda g, *, k: g * k, k=5),
                 functools.partial(lambda g, *, k: g * k, k=-1)]

        def run(i):
            MY_HOOK[T.__name__] = hooks[i % len(hooks)]
            x = T.ones(2, requires_grad=True)
            f(x).sum().backward()
            return x.grad
        return run
    compare(build)


# HooksTests.test_post_acc_grad_hook: registered inside the compiled function on every call,
# the hook changes the leaf and its .grad in place
def test_post_accumulate_grad_hook_registered_inside():
    def build(T, wrap):
        def hook(t):
            t.mul_(t.grad)
            t.grad.mul_(5)

        def reg_and_mul(x, y):
            x.register_post_accumulate_grad_hook(hook)
            return x * y
        f = wrap(reg_and_mul)

        def run(i):
            x = T.tensor([0.5, 0.5, 0.5], requires_grad=True)
            y = T.tensor([1.0, 2.0, 3.0]) * (i + 1)
            out = f(x, y)
            x.backward(T.tensor([2.0, 2.0, 2.0]))
            return out, x.detach(), x.grad
        return run
    compare(build)


# HooksTests module hooks: forward hooks on a compiled module whose hooks change between calls
def test_module_forward_hooks_changed_between_calls():
    def build(T, wrap):
        T.manual_seed(0)
        lin = T.nn.Linear(2, 2)
        with T.no_grad():
            lin.weight.copy_(T.tensor([[1.0, -2.0], [0.5, 3.0]]))
            lin.bias.copy_(T.tensor([0.1, -0.2]))
        m = wrap(lin)
        calls = []
        handles = []

        def run(i):
            if i == 1:
                handles.append(lin.register_forward_hook(lambda mod, a, o: o * 10))
            if i == 2:
                handles.append(lin.register_forward_pre_hook(lambda mod, a: (a[0] + 1,)))
                handles.append(lin.register_forward_hook(lambda mod, a, o: calls.append(round(o.sum().item(), 3))))
            if i == 3:
                handles.pop(0).remove()
            x = _rand(T, i, 3, 2).requires_grad_()
            out = m(x)
            out.sum().backward()
            return out, x.grad, lin.weight.grad, list(calls)
        return run
    compare(build)
