"""Seventeenth round of adversarial compiled-vs-eager programs: Python containers the step closes
over and the caller mutates (a list's length as a slice bound, a dict entry choosing an
activation), a method compiled on the class and used by two instances, a bound method and
the same method unbound, a compiled function calling another compiled function that is also called (and
backpropagated) on its own, grad mode toggled around and inside the call, mutable and tensor
default arguments, ``*args``/``**kwargs`` whose keys and order change, plain tensor attributes
and parameters replaced with ``setattr``, a parameter group added mid-run, ``requires_grad_``
on a parameter the step reads only later, tensor hooks registered inside the step on every call (a leaf's hooks pile
up as they do eagerly), metadata-changing in-place ops on arguments (``t_``, ``unsqueeze_``,
``squeeze_``, ``transpose_``), exceptions raised on some calls and caught by the caller, an
argument compared by identity with outside tensors, and compiled ``functools.partial`` and
callable objects whose state changes. torch eager, tracegrad eager and ``tracegrad.compile``
run each program from the same state and must agree after every call
(``_dynamo_port.compare``).

Found here and fixed: an argument that is a closure, global or attribute tensor the program
never reads as data got a stand-in, so ``x is ref`` was answered False and baked in (now that
call runs eagerly: NOTE [tensors compared by identity] in ``_lowering/guards.py``; a view's
``_base is ref`` stays a strict xfail); a compiled ``functools.partial`` did not guard its
keywords and a compiled callable object did not guard its attributes, so a keyword or attribute
changed between calls was baked in at the traced value (``_lowering/pystate.py``)."""
import functools

import pytest

import tracegrad

from ._dynamo_port import compare
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear
from ._dynamo_port import train_step

torch = pytest.importorskip("torch")


def test_closure_list_and_dict_mutated_between_calls():
    """The step closes over a list whose length bounds a slice and whose items scale the
    output, and a dict whose entry picks the activation; the caller appends, assigns items
    and rebinds entries between calls: every call sees the current contents."""
    def build(T, wrap):
        net = _linear(T, 3, 3)
        scales, cfg = [1.0], {"act": "relu", "k": 2}

        def step(x):
            h = net(x)
            h = T.relu(h) if cfg["act"] == "relu" else T.tanh(h)
            for s in scales:
                h = h * s
            return h[:, :len(scales)], h[:cfg["k"]].sum()

        f = wrap(step)

        def run(i):
            if i == 1:
                scales.append(2.0)
            if i == 2:
                scales[0] = -0.5
                cfg["act"] = "tanh"
            if i == 3:
                cfg["k"] = 1
                scales.pop()
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=5)


def test_method_compiled_by_decorating_the_class_serves_two_instances():
    """``@compile`` on a method in the class body: one compiled function serves two trainers
    (the same shapes, different weights, buffers and scales); a buffer attribute rebound on one
    between calls is read on its next call."""
    def build(T, wrap):
        class Trainer:
            def __init__(self, seed, lr):
                self.net = _linear(T, 3, 2, seed=seed)
                self.opt = T.optim.SGD(self.net.parameters(), lr=lr)
                self.buf = T.full((2,), float(seed + 1))

            @wrap
            def step(self, x):
                self.opt.zero_grad()
                loss = (self.net(x) * self.buf).pow(2).mean()
                loss.backward()
                self.opt.step()
                return loss

        a, b = Trainer(0, 0.1), Trainer(1, 0.05)

        def run(i):
            if i == 3:
                b.buf = T.full((2,), -1.0)
            loss = [a, a, b, b, a][i].step(_rand(T, i, 2, 3))
            return loss, a.net.weight, b.net.weight, b.net.bias
        return run
    compare(build, calls=5)


def test_bound_method_of_one_instance_and_the_same_method_of_another():
    """``m1.forward`` compiled (a bound method) and then ``type(m1).forward`` compiled and
    called with ``m2``: the bound one keeps using ``m1``'s weights after ``m2`` changed, and
    the unbound one reads whichever instance it is given."""
    def build(T, wrap):
        m1, m2 = _linear(T, 3, 2, seed=0), _linear(T, 3, 2, seed=1)
        f1, fu = wrap(m1.forward), wrap(type(m1).forward)

        def run(i):
            x = _rand(T, i, 2, 3)
            with T.no_grad():
                m2.weight.add_(0.1)
            return f1(x), fu(m2, x), fu(m1, x)
        return run
    compare(build)


def test_compiled_function_calling_another_compiled_function():
    """``outer`` (compiled) runs a training step that calls ``inner`` (compiled) for the loss;
    the caller also calls ``inner`` directly after each step and backpropagates it into the
    grads the next step zeroes: parameters, grads and both results agree with eager."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        opt = T.optim.SGD(net.parameters(), lr=0.05)

        def inner(x, k):
            return net(x).pow(2).mean() * k

        cin = wrap(inner)

        def outer(x, k):
            opt.zero_grad()
            loss = cin(x, k)
            loss.backward()
            opt.step()
            return loss

        cout = wrap(outer)

        def run(i):
            x = _rand(T, i, 2, 3)
            loss = cout(x, 2.0)
            probe = cin(x, 0.5)
            probe.backward()       # into the grads the next step zeroes
            return loss, probe, net.weight, net.bias.grad
        return run
    compare(build)


def test_grad_mode_toggled_around_and_inside_the_call():
    """Calls under ``no_grad``, under ``enable_grad`` inside ``no_grad``, and with
    ``set_grad_enabled(flag)`` inside the step driven by an argument: whether the result
    requires grad, its ``grad_fn`` and the grads after ``backward`` follow each call's mode."""
    def build(T, wrap):
        net = _linear(T, 3, 2)

        def step(x, flag):
            with T.set_grad_enabled(flag):
                h = net(x)
            return h.sum() * 2, T.is_grad_enabled()

        f = wrap(step)

        def run(i):
            net.zero_grad()
            x = _rand(T, i, 2, 3)
            flag = i % 2 == 0
            if i == 2:
                with T.no_grad():
                    out, mode = f(x, True)
            elif i == 3:
                with T.no_grad(), T.enable_grad():
                    out, mode = f(x, flag)
            else:
                out, mode = f(x, flag)
            if out.requires_grad:
                out.backward()
            return out, mode, out.grad_fn is None, net.weight.grad, T.is_grad_enabled()
        return run
    compare(build, calls=5)


def test_mutable_and_tensor_default_arguments():
    """A step whose defaults are a tensor the caller edits in place and a list of scales it
    appends to and assigns into, and later both replaced through ``__defaults__``: every call
    reads the current default objects and their contents."""
    def build(T, wrap):
        def step(x, bias=T.zeros(3), scales=[1.0]):
            for s in scales:
                x = x * s
            return x + bias

        f = wrap(step)

        def run(i):
            if i == 2:
                step.__defaults__[0].add_(1.0)
                step.__defaults__[1].append(3.0)
            if i == 3:
                step.__defaults__ = (T.full((3,), -2.0), [7.0])
            if i == 4:
                step.__defaults__[1][0] = 0.5
            return f(_rand(T, i, 2, 3))
        return run
    compare(build, calls=6)


def test_args_and_kwargs_whose_keys_and_order_change():
    """``*args`` of changing length and ``**kwargs`` whose keys, values and order change; the
    step folds them in iteration order through non-commuting ops and returns the key order:
    every call uses its own keys in its own order."""
    def build(T, wrap):
        def step(x, *args, **kw):
            for a in args:
                x = x * a + 1
            for k, v in kw.items():
                x = x - v if k.startswith("s") else x / (v + 3)
            return x, tuple(kw), len(args)

        f = wrap(step)

        def run(i):
            x, t, u = _rand(T, i, 2, 2), _rand(T, i + 5, 2), _rand(T, i + 6, 2)
            kws = [dict(a=1.0, s=t), dict(s=t, a=1.0), dict(s=t), dict(b=2.0, s2=t),
                   dict(a=t, s=2.0), dict(s=2.0, a=t)][i]
            args = [(), (u,), (2.0, u), (u * 2, u, 0.5), (), (0.5,)][i]
            return f(x, *args, **kws)
        return run
    compare(build, calls=6)


def test_tensor_attribute_and_parameter_replaced_with_setattr():
    """A plain tensor attribute (neither parameter nor buffer) is replaced with ``setattr``,
    then the weight is replaced by a new ``Parameter`` the optimizer does not know: eagerly the
    forward uses the new tensors and SGD keeps stepping the old weight; compiled the same."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        net.scale = T.tensor(2.0)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        old_w = net.weight
        f = wrap(train_step(opt, lambda x: (net(x) * net.scale).pow(2).mean()))

        def run(i):
            if i == 2:
                setattr(net, "scale", T.tensor(-0.5))
            if i == 3:
                setattr(net, "weight", T.nn.Parameter(T.ones(2, 3) * 0.3))
            loss = f(_rand(T, i, 2, 3))
            return loss, old_w, net.weight, net.weight.grad, old_w.grad, net.bias
        return run
    compare(build)


def test_param_group_added_mid_run_gets_lazily_created_momentum():
    """SGD with momentum over the first layer, with the second layer frozen; after two calls the
    second layer is thawed and added with ``add_param_group`` (own lr, momentum and weight
    decay), and its lr is changed later: its momentum buffers are created on its first step and
    both groups move as eagerly."""
    def build(T, wrap):
        l1, l2 = _linear(T, 3, 3, seed=0), _linear(T, 3, 2, seed=1)
        l2.requires_grad_(False)
        opt = T.optim.SGD(l1.parameters(), lr=0.05, momentum=0.9)
        f = wrap(train_step(opt, lambda x: l2(T.tanh(l1(x))).pow(2).mean()))

        def run(i):
            if i == 2:
                l2.requires_grad_(True)
                opt.add_param_group({"params": list(l2.parameters()), "lr": 0.1, "momentum": 0.5,
                                     "weight_decay": 0.5})
            if i == 4:
                opt.param_groups[1]["lr"] = 0.01
            loss = f(_rand(T, i, 2, 3))
            st = opt.state.get(l2.weight, {})
            return loss, l1.weight, l2.weight, l2.bias, len(opt.state), st.get("momentum_buffer")
        return run
    compare(build, calls=5)


def test_requires_grad_on_a_parameter_read_only_later():
    """A parameter starts frozen and unread; the caller thaws it at call 2 (still unread: no
    grad, no state) and from call 3 a flag in a closure makes the step read it: its grad and
    momentum start then, as eagerly."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        extra = T.nn.Parameter(T.full((2,), 0.5), requires_grad=False)
        opt = T.optim.SGD(list(net.parameters()) + [extra], lr=0.1, momentum=0.5)
        use = [False]
        f = wrap(train_step(opt, lambda x: (net(x) * extra if use[0] else net(x)).pow(2).mean()))

        def run(i):
            if i == 2:
                extra.requires_grad_(True)
            if i == 3:
                use[0] = True
            loss = f(_rand(T, i, 2, 3))
            buf = opt.state.get(extra, {}).get("momentum_buffer")
            return loss, extra, extra.grad, buf, net.weight
        return run
    compare(build)


def test_hooks_registered_inside_the_step_on_every_call_pile_up_on_a_leaf():
    """Each call registers a hook on an intermediate (dies with it) and one on the weight
    (never removed, so eagerly the weight has one more hook every call and its grad is scaled
    by 2 once more), both logging the gradient's sum: grads and logs match every call."""
    def build(T, wrap):
        net = _linear(T, 3, 2)
        log = []

        def step(x):
            net.zero_grad()
            h = net(x)
            h.register_hook(lambda g: log.append(("h", round(g.sum().item(), 4))))
            net.weight.register_hook(lambda g: (log.append(("w", round(g.sum().item(), 4))),
                                                g * 2)[1])
            loss = h.tanh().sum()
            loss.backward()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3))
            return loss, net.weight.grad, net.bias.grad, list(log)
        return run
    compare(build)


def test_metadata_changing_in_place_ops_on_arguments():
    """The step calls ``t_()``, ``unsqueeze_``, ``squeeze_`` and ``transpose_`` on its
    arguments (changing the caller's tensors' shapes and strides) and then computes with them:
    afterwards the caller's tensors have eager's shape, strides and values."""
    def build(T, wrap):
        def step(a, b, c):
            a.t_()
            b.unsqueeze_(0)
            c.squeeze_(1)
            c.transpose_(0, 1)
            return a @ c, b.sum(0) + 1

        f = wrap(step)

        def run(i):
            a, b, c = _rand(T, i, 4, 2), _rand(T, i + 1, 3), _rand(T, i + 2, 2, 1, 4)
            r = f(a, b, c)
            return (r, a, b, c, tuple(a.shape), a.stride(), tuple(b.shape), c.stride(),
                    a.is_contiguous(), c.is_contiguous(), a._version)
        return run
    compare(build)


def test_exceptions_raised_on_some_calls_and_caught_outside():
    """Three steps raise on some calls and the caller catches the error: a shape error after
    ``zero_grad`` (the grads are None afterwards, as eagerly), a Python check after
    ``opt.step()`` (the update stands, as eagerly) and a target out of range found by a run
    time value check; the next calls continue from there and agree with eager."""
    def build(T, wrap):
        net = _linear(T, 3, 4)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, ok):
            opt.zero_grad()
            loss = T.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            if not ok:
                raise ValueError("rejected after the step")
            return loss

        f = wrap(step)

        def run(i):
            x = _rand(T, i, 2, 3) if i != 3 else _rand(T, i, 2, 5)
            y = T.tensor([1, 2]) if i != 4 else T.tensor([1, 7])
            try:
                res = f(x, y, i != 2)
            except (ValueError, RuntimeError, IndexError) as e:
                res = type(e).__name__ if isinstance(e, ValueError) else "shape or index error"
            return (res, net.weight, net.weight.grad, net.bias.grad,
                    opt.state[net.weight]["momentum_buffer"])
        return run
    compare(build, calls=5)


def test_argument_that_is_a_closure_tensor_compared_by_identity():
    """``x is ref`` against a closure tensor, a tensor in a global dict and a module's plain
    tensor attribute, none of which the step reads as data: the calls that pass that very
    tensor take the ``is`` branch, the others do not, whichever call traced first (found here:
    the stand-in argument answered ``is`` and the branch was baked in)."""
    def build(T, wrap):
        ref, key = T.ones(2), len(_REFS)
        _REFS[key] = T.full((2,), 2.0)

        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = _linear(T, 2, 2)
                self.special = T.full((2,), 3.0)

            def forward(self, x):
                return self.lin(x) * (0.0 if x is self.special else 1.0)

        m = M()
        fm = wrap(m.forward)

        def step(x):
            return x * (10.0 if x is ref else 1.0) - (5.0 if x is _REFS[key] else 0.0)

        f = wrap(step)

        def run(i):
            x = [_rand(T, i, 2), ref, _rand(T, i, 2), _REFS[key], ref, m.special][i]
            return f(x), fm(x)
        return run
    compare(build, calls=6)


_REFS = {}     # one global entry per build: torch, tracegrad eager, compiled


@pytest.mark.xfail(strict=True, reason="a view argument becomes a stand-in whose _base is not the "
                   "caller's base; passing views of an outside tensor the step reads only as Python "
                   "(step(X[i:j]) with len(X)) must keep its program, so only identity is checked "
                   "(NOTE [tensors compared by identity] in _lowering/guards.py)")
def test_view_argument_whose_base_is_a_closure_tensor():
    """``x._base is ref`` for a view of a closure tensor passed in: eagerly True."""
    def build(T, wrap):
        ref = T.ones(4)

        def step(x):
            return x * (3.0 if x._base is ref else 1.0)

        f = wrap(step)

        def run(i):
            return f(ref[:2] if i % 2 else _rand(T, i, 2))
        return run
    compare(build)


def test_compiled_partial_whose_keywords_change():
    """``compile(functools.partial(step, k=2.0, t=tensor))``: the caller assigns a new number
    and then a new tensor into ``p.keywords`` and edits that tensor in place: each call uses the
    current keywords (found here: the traced ``k`` was baked in)."""
    def build(T, wrap):
        def step(x, k=1.0, t=None):
            return x * k + t

        p = functools.partial(step, k=2.0, t=T.ones(2))
        f = wrap(p)

        def run(i):
            if i == 2:
                p.keywords["k"] = 5.0
            if i == 3:
                p.keywords["t"] = T.full((2,), 3.0)
            if i == 4:
                p.keywords["t"].mul_(2)
            return f(_rand(T, i, 2))
        return run
    compare(build, calls=5)


def test_compiled_callable_object_whose_attributes_change():
    """``compile(obj)`` for an object with ``__call__``: the caller changes a number and a
    tensor on the instance, then a class attribute, then swaps ``__call__`` on the class:
    each call follows (found here: the instance's attributes were baked in)."""
    def build(T, wrap):
        class Scaler:
            shift = 0.0

            def __init__(self):
                self.k, self.w = 2.0, T.ones(2)

            def __call__(self, x):
                return x * self.k + self.w + self.shift

        def other(self, x):
            return x - self.k

        s = Scaler()
        f = wrap(s)

        def run(i):
            if i == 1:
                s.k = -1.0
            if i == 2:
                s.w = T.full((2,), 4.0)
            if i == 3:
                Scaler.shift = 0.5
            if i == 4:
                Scaler.__call__ = other
            return f(_rand(T, i, 2))
        return run
    compare(build, calls=6)
