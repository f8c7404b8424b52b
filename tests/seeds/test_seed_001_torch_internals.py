"""Seed 001 (001_67ee90301626c053.txt): torch basics, Module call order and hooks,
autograd.Function (Exp, LinearFunction), the ctx API, gradcheck, is_leaf rules,
disabling gradient tracking, Jacobian products, retain_graph, optimizers and a
custom Optimizer.

Each ``program(torch, log)`` keeps the seed's code; randn is replaced by
deterministic inputs.  See tests/parity.py for what is compared.
"""

import copy
import warnings

import numpy as np
import pytest

from parity import grad_fn_name, init_params, np_randn, randn, run_both


# ---------------------------------------------------------------- basics

def program_basics_reference_and_inplace(torch, log):
    # objects are passed by reference; `a =` rebinds, `_` ops modify in place
    a = torch.tensor([1.0, 2.0, 3.0])
    b = a
    a = a + 1
    log("b after a = a + 1", b)
    log("b is a", b is a)
    c = b
    r = b.add_(10)
    log("c after b.add_", c)
    log("add_ returns self", r is b)
    log("b._version", b._version)

    def f(t):
        t.mul_(2)
    f(c)
    log("b after f(c)", b)


def test_basics_reference_and_inplace():
    run_both(program_basics_reference_and_inplace)


def program_basics_matmul(torch, log):
    A = torch.tensor(np_randn((2, 3), 0))
    B = torch.tensor(np_randn((3, 4), 1))
    log("A @ B", A @ B)
    log("matmul", torch.matmul(A, B))
    log("mm", torch.mm(A, B))
    log("A.mm(B)", A.mm(B))
    C = torch.tensor(np_randn((2, 3), 2))
    log("A * C", A * C)
    log("mul", torch.mul(A, C))
    # matmul works on higher dims (batched), mm only on 2-D tensors
    X = torch.tensor(np_randn((5, 2, 3), 3))
    Y = torch.tensor(np_randn((5, 3, 4), 4))
    log("batched matmul", torch.matmul(X, Y))
    log("batched @ broadcast", X @ B)
    try:
        torch.mm(X, Y)
        log("mm 3-D", "ok")
    except Exception as e:
        log("mm 3-D", type(e).__name__)
    v = torch.tensor([1.0, 2.0, 3.0])
    log("matmul matrix-vector", torch.matmul(A, v))
    log("matmul vector-vector", torch.matmul(v, v))


def test_basics_matmul():
    run_both(program_basics_matmul)


def program_basics_numpy_shares_memory(torch, log):
    # "Tensor 与 Numpy 之间可以共享底层存储空间，所以修改一个也会导致另一个变量发生变化"
    t = torch.ones(3)
    n = t.numpy()
    t.add_(1)
    log("numpy view after t.add_", np.array(n))
    n[0] = 7.0
    log("tensor after n[0] = 7", t)

    arr = np.ones(3, dtype=np.float32)
    t2 = torch.from_numpy(arr)
    arr[1] = 5.0
    log("from_numpy after arr[1] = 5", t2)
    t2.mul_(2)
    log("arr after t2.mul_", arr)
    log("from_numpy dtype", t2.dtype)
    # torch.tensor copies
    arr3 = np.zeros(2)
    t3 = torch.tensor(arr3)
    arr3[0] = 1.0
    log("torch.tensor copies", t3)
    log("torch.tensor(float64 array) dtype", t3.dtype)


def test_basics_numpy_shares_memory():
    run_both(program_basics_numpy_shares_memory)


def program_basics_module_collects_parameters(torch, log):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.block = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1, bias=False))
            self.scale = nn.Parameter(torch.ones(1))
            self.register_buffer("steps", torch.zeros(1))
            self.not_a_param = torch.ones(2)  # plain tensor attribute: not collected

    net = Net()
    log("named_parameters", [n for n, _ in net.named_parameters()])
    log("n parameters()", len(list(net.parameters())))
    log("shapes", [tuple(p.shape) for p in net.parameters()])
    log("requires_grad", [p.requires_grad for p in net.parameters()])
    log("named_buffers", [n for n, _ in net.named_buffers()])
    log("state_dict keys", list(net.state_dict().keys()))
    log("is Parameter", isinstance(net.scale, nn.Parameter))
    log("Parameter is Tensor", isinstance(net.scale, torch.Tensor))


def test_basics_module_collects_parameters():
    run_both(program_basics_module_collects_parameters)


# ---------------------------------------------------------------- Module call order

def program_module_call_order(torch, log):
    nn = torch.nn
    events = []
    m = nn.Linear(2, 2)
    init_params(torch, m, seed=0)

    def g_pre(mod, inp):
        events.append("global forward_pre_hook")

    def g_fwd(mod, inp, out):
        events.append("global forward_hook")

    def g_bwd_pre(mod, grad_out):
        events.append("global full_backward_pre_hook")

    def g_bwd(mod, grad_in, grad_out):
        events.append("global full_backward_hook")

    mm = torch.nn.modules.module
    handles = [mm.register_module_forward_pre_hook(g_pre),
               mm.register_module_forward_hook(g_fwd),
               mm.register_module_full_backward_pre_hook(g_bwd_pre),
               mm.register_module_full_backward_hook(g_bwd)]
    try:
        def pre(mod, inputs):
            events.append("forward_pre_hook")
            return (inputs[0] * 2,)          # modified input goes into forward()

        def fwd(mod, inputs, output):
            events.append("forward_hook")
            return output + 100              # modified output is the call's result

        def bwd_pre(mod, grad_output):
            events.append("full_backward_pre_hook")

        def bwd(mod, grad_input, grad_output):
            events.append("full_backward_hook")

        orig_forward = m.forward

        def forward(x):
            events.append("forward")
            return orig_forward(x)
        m.forward = forward

        m.register_forward_pre_hook(pre)
        m.register_forward_hook(fwd)
        m.register_full_backward_pre_hook(bwd_pre)
        m.register_full_backward_hook(bwd)
        x = torch.tensor([[1.0, -1.0]], requires_grad=True)
        y = m(x)
        events.append("after call")
        log("y", y)
        y.sum().backward()
        events.append("after backward")
        log("x.grad", x.grad)
    finally:
        for h in handles:
            h.remove()
    log("events", events)
    # global hooks are gone
    events.clear()
    nn.Linear(2, 2)(torch.ones(1, 2))
    log("events after removing global hooks", events)


def test_module_call_order():
    run_both(program_module_call_order)


# ---------------------------------------------------------------- autograd.Function: Exp

def _make_exp(torch):
    Function = torch.autograd.Function

    class Exp(Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result
    return Exp


def program_function_exp(torch, log):
    Exp = _make_exp(torch)
    input = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    output = Exp.apply(input)
    log("output", output)
    log("output.requires_grad", output.requires_grad)
    log("output.is_leaf", output.is_leaf)
    log("grad_fn type", grad_fn_name(output))
    log("grad_fn.name()", output.grad_fn.name())
    log("grad_fn is a Function subclass instance",
        isinstance(output.grad_fn, torch.autograd.function.BackwardCFunction))
    log("next_functions", [(type(n).__name__ if n is not None else None, i)
                           for n, i in output.grad_fn.next_functions])
    output.backward(torch.tensor([1.0, 2.0, 3.0]))
    log("input.grad", input.grad)
    # without any input requiring grad, no graph is recorded
    plain = Exp.apply(torch.tensor([1.0]))
    log("no-grad input: requires_grad", plain.requires_grad)
    log("no-grad input: grad_fn", plain.grad_fn)
    with torch.no_grad():
        ng = Exp.apply(input)
    log("under no_grad: requires_grad", ng.requires_grad)
    # Function is used through apply, never instantiated for calling
    try:
        Exp()(input)
        log("calling an instance", "ok")
    except Exception as e:
        log("calling an instance", type(e).__name__)


def test_function_exp():
    run_both(program_function_exp)


# ---------------------------------------------------------------- is_leaf rules

def program_is_leaf_rules(torch, log):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    log("a (user created, requires_grad) is_leaf", a.is_leaf)
    log("a.grad_fn", a.grad_fn)
    b = torch.tensor([1.0, 2.0])
    log("b (requires_grad=False) is_leaf", b.is_leaf)
    c = a + 2
    log("c = a + 2 is_leaf", c.is_leaf)
    log("c.grad_fn", grad_fn_name(c))
    d = b * 3  # result of an op, but nothing requires grad -> still a leaf
    log("d = b * 3 is_leaf", d.is_leaf)
    log("d.grad_fn", d.grad_fn)
    # docs example, with the device copy replaced by a dtype copy (also an op)
    e = torch.tensor([1.0, 2.0], requires_grad=True).double()
    log("e = leaf.double() is_leaf", e.is_leaf)
    log("e.grad_fn", grad_fn_name(e))
    f = torch.tensor([1.0, 2.0]).double().requires_grad_()
    log("f = t.double().requires_grad_() is_leaf", f.is_leaf)
    g = torch.tensor([1.0, 2.0], requires_grad=True, dtype=torch.float64)
    log("g is_leaf", g.is_leaf)
    h = torch.tensor([1.0, 2.0], requires_grad=True).to(torch.float64)
    log("h = .to(float64) is_leaf", h.is_leaf)
    log("h.grad_fn", grad_fn_name(h))
    same = a.to(torch.float32)  # no-op conversion returns self
    log("to(same dtype) is self", same is a)
    # only leaves get .grad; non-leaf .grad is None (with a UserWarning)
    loss = (c * e.float() * h.float()).sum()
    loss.backward()
    log("a.grad", a.grad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cg = c.grad
    log("c.grad", cg)
    log("warning on non-leaf .grad", [x.category.__name__ for x in w])
    log("d.grad (leaf without requires_grad)", d.grad)
    # detach makes a leaf
    dt = c.detach()
    log("detach is_leaf", dt.is_leaf)
    log("detach requires_grad", dt.requires_grad)
    # requires_grad can only be changed on leaves
    try:
        c.requires_grad = False
        log("set requires_grad on non-leaf", "ok")
    except Exception as e:
        log("set requires_grad on non-leaf", type(e).__name__)
    try:
        torch.tensor([1, 2]).requires_grad_()
        log("requires_grad on int tensor", "ok")
    except Exception as e:
        log("requires_grad on int tensor", type(e).__name__)


def test_is_leaf_rules():
    run_both(program_is_leaf_rules)


# ---------------------------------------------------------------- disabling gradient tracking

def program_disable_tracking(torch, log):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    log("no_grad: requires_grad", y.requires_grad)
    log("no_grad: grad_fn", y.grad_fn)
    log("grad enabled after block", torch.is_grad_enabled())
    z = x.detach()
    log("detach requires_grad", z.requires_grad)
    # detach returns a new tensor sharing data
    z2 = z * 5
    log("computing on detached", z2.requires_grad)
    # the old tensor's value is not changed by computing with the detached one
    log("x unchanged", x)

    # per parameter: requires_grad=False, or grad=None -> the optimizer skips it
    p1 = torch.nn.Parameter(torch.tensor([1.0, 1.0]))
    p2 = torch.nn.Parameter(torch.tensor([2.0, 2.0]))
    p3 = torch.nn.Parameter(torch.tensor([3.0, 3.0]))
    p2.requires_grad = False
    opt = torch.optim.SGD([p1, p2, p3], lr=0.1, momentum=0.9, weight_decay=0.01)
    loss = (p1 * p2 * p3).sum()
    loss.backward()
    log("p2.grad (requires_grad=False)", p2.grad)
    log("p3.grad", p3.grad)
    p3.grad = None
    opt.step()
    log("p1 after step", p1)
    log("p2 after step", p2)
    log("p3 after step", p3)
    log("state for p3", p3 in opt.state and len(opt.state[p3]) > 0)
    log("state for p1 momentum_buffer", opt.state[p1]["momentum_buffer"])


def test_disable_tracking():
    run_both(program_disable_tracking)


# ---------------------------------------------------------------- Jacobian products

def program_jacobian_product(torch, log):
    # tutorial example: out = (inp + 1).pow(2).t(); out.backward(v)
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    log("First call", inp.grad)
    out.backward(torch.ones_like(out), retain_graph=True)
    log("Second call (accumulates)", inp.grad)
    inp.grad.zero_()
    out.backward(torch.ones_like(out))
    log("Call after zeroing gradients", inp.grad)
    # non-scalar output without v -> error
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    try:
        y.backward()
        log("backward without gradient", "ok")
    except Exception as e:
        log("backward without gradient", type(e).__name__)
    v = torch.tensor([0.1, 1.0])
    y.backward(v)
    log("v^T J", x.grad)
    # gradient shape must match
    z = x * 3
    try:
        z.backward(torch.ones(3))
        log("wrong-shaped gradient", "ok")
    except Exception as e:
        log("wrong-shaped gradient", type(e).__name__)


def test_jacobian_product():
    run_both(program_jacobian_product)


# ---------------------------------------------------------------- retain_graph / accumulation

def program_retain_graph(torch, log):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    log("x.grad 1", x.grad)
    try:
        y.backward()
        log("second backward without retain_graph", "ok")
    except Exception as e:
        log("second backward without retain_graph", type(e).__name__)

    x.grad = None
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    log("two backwards accumulate", x.grad)
    # graph without saved tensors can be re-run (nothing was freed that is needed)
    x.grad = None
    s = (x + 1).sum()
    s.backward()
    s.backward()
    log("add graph twice", x.grad)
    # dynamic graph: each iteration builds a new graph of a different shape
    for n in (1, 2, 3):
        w = torch.ones(n, requires_grad=True)
        out = (w * n).sum() if n % 2 else (w ** 2).sum()
        out.backward()
        log(f"dynamic n={n}", w.grad)


def test_retain_graph():
    run_both(program_retain_graph)


# ---------------------------------------------------------------- optimize steps

def program_optimize_steps(torch, log):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    init_params(torch, model, seed=5)
    X = randn(torch, (8, 3), seed=6)
    Y = randn(torch, (8, 1), seed=7)
    for opt_name, make in (("SGD", lambda ps: torch.optim.SGD(ps, lr=0.1)),
                           ("SGD momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                                       nesterov=True)),
                           ("Adam", lambda ps: torch.optim.Adam(ps, lr=0.01)),
                           ("AdamW", lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1))):
        init_params(torch, model, seed=5)
        optimizer = make(model.parameters())
        losses = []
        for step in range(4):
            optimizer.zero_grad()           # 1. call optimizer.zero_grad()
            loss = ((model(X) - Y) ** 2).mean()
            loss.backward()                 # 2. call loss.backward()
            optimizer.step()                # 3. call optimizer.step()
            losses.append(loss.item())
        log(opt_name + " losses", losses)
        log(opt_name + " final weight", model[0].weight)
        optimizer.zero_grad()
        log(opt_name + " grad after zero_grad (set_to_none)", model[0].weight.grad)


def test_optimize_steps():
    run_both(program_optimize_steps)


# ---------------------------------------------------------------- LinearFunction

def _make_linear_function(torch):
    Function = torch.autograd.Function

    # Inherit from Function
    class LinearFunction(Function):

        # Note that both forward and backward are @staticmethods
        @staticmethod
        # bias is an optional argument
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        # This function has only a single output, so it gets only one gradient
        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None

            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)

            return grad_input, grad_weight, grad_bias
    return LinearFunction


def program_linear_function(torch, log):
    LinearFunction = _make_linear_function(torch)
    linear = LinearFunction.apply
    seen = []

    class Probe(LinearFunction):
        @staticmethod
        def backward(ctx, grad_output):
            seen.append(tuple(ctx.needs_input_grad))
            return LinearFunction.backward(ctx, grad_output)

    x = randn(torch, (4, 3), seed=0, requires_grad=True)
    w = randn(torch, (2, 3), seed=1, requires_grad=True)
    b = randn(torch, (2,), seed=2, requires_grad=True)
    out = linear(x, w, b)
    log("out", out)
    log("grad_fn", grad_fn_name(out))
    out.sum().backward()
    log("x.grad", x.grad)
    log("w.grad", w.grad)
    log("b.grad", b.grad)

    # without bias (optional arg -> None grad)
    x.grad = w.grad = None
    out = linear(x, w)
    (out * out).sum().backward()
    log("no bias: x.grad", x.grad)
    log("no bias: w.grad", w.grad)

    # needs_input_grad reflects which inputs require grad
    xc = x.detach()
    out = Probe.apply(xc, w, b)
    out.sum().backward()
    out = Probe.apply(x, w.detach(), None)
    out.sum().backward()
    log("needs_input_grad", seen)

    # equals nn.functional.linear
    ref = torch.nn.functional.linear(x, w, b)
    log("matches F.linear", bool(torch.allclose(linear(x, w, b), ref)))


def test_linear_function():
    run_both(program_linear_function)


def program_gradcheck(torch, log):
    LinearFunction = _make_linear_function(torch)
    Exp = _make_exp(torch)
    gradcheck = torch.autograd.gradcheck
    input = (torch.tensor(np_randn((20, 20), 3).astype(np.float64), requires_grad=True),
             torch.tensor(np_randn((30, 20), 4).astype(np.float64), requires_grad=True))
    test = gradcheck(LinearFunction.apply, input, eps=1e-6, atol=1e-4)
    log("gradcheck LinearFunction", test)
    bias = torch.tensor(np_randn((30,), 5).astype(np.float64), requires_grad=True)
    log("gradcheck with bias", gradcheck(LinearFunction.apply, input + (bias,), eps=1e-6, atol=1e-4))
    xe = torch.tensor([0.1, -0.4, 1.3], dtype=torch.float64, requires_grad=True)
    log("gradcheck Exp", gradcheck(Exp.apply, (xe,)))
    log("gradgradcheck Exp", torch.autograd.gradgradcheck(Exp.apply, (xe,)))

    # a wrong backward is caught
    class BadExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            r = i.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            r, = ctx.saved_tensors
            return g * r * 2

    try:
        gradcheck(BadExp.apply, (xe,))
        log("bad backward", "passed")
    except Exception as e:
        log("bad backward", type(e).__name__)
    log("bad backward raise_exception=False", gradcheck(BadExp.apply, (xe,), raise_exception=False))


def test_gradcheck():
    run_both(program_gradcheck)


# ---------------------------------------------------------------- ctx API

def program_ctx_mark_dirty(torch, log):
    class AddOneInplace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    v0 = b._version
    c = AddOneInplace.apply(b)
    log("returns the same tensor", c is b)
    log("value", b)
    log("version bumped", b._version > v0)
    log("b.grad_fn after mark_dirty", grad_fn_name(b))
    (c * c).sum().backward()
    log("a.grad", a.grad)
    # in-place on a leaf that requires grad is still an error
    leaf = torch.tensor([1.0], requires_grad=True)
    try:
        AddOneInplace.apply(leaf)
        log("mark_dirty on leaf", "ok")
    except Exception as e:
        log("mark_dirty on leaf", type(e).__name__)


def test_ctx_mark_dirty():
    run_both(program_ctx_mark_dirty)


def program_ctx_mark_non_differentiable(torch, log):
    class SortWithIdx(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return values, idx

        @staticmethod
        def backward(ctx, g_values, g_idx):
            x, idx = ctx.saved_tensors
            log("g_idx in backward", g_idx)
            grad_input = torch.zeros_like(x)
            grad_input.index_add_(0, idx, g_values)
            return grad_input

    x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, idx = SortWithIdx.apply(x)
    log("values", values)
    log("idx", idx)
    log("values.requires_grad", values.requires_grad)
    log("idx.requires_grad", idx.requires_grad)
    (values * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
    log("x.grad", x.grad)

    class Half(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            z = x * 3
            ctx.mark_non_differentiable(z)
            return y, z

        @staticmethod
        def backward(ctx, gy, gz):
            log("gz (materialized zeros)", gz)
            return gy * 2

    y, z = Half.apply(x)
    log("z.requires_grad", z.requires_grad)
    log("z.grad_fn", z.grad_fn)
    y.sum().backward()
    log("x.grad after Half", x.grad)


def test_ctx_mark_non_differentiable():
    run_both(program_ctx_mark_non_differentiable)


def program_ctx_set_materialize_grads(torch, log):
    def make(materialize):
        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, g1, g2):
                log(f"materialize={materialize} g1", g1)
                log(f"materialize={materialize} g2", g2)
                grad = None
                if g1 is not None:
                    grad = g1.clone()
                if g2 is not None:
                    grad = g2 * 10 if grad is None else grad + g2 * 10
                return grad
        return Two

    for materialize in (True, False):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        a, b = make(materialize).apply(x)
        a.sum().backward()  # b unused -> its grad is None unless materialized
        log(f"materialize={materialize} x.grad", x.grad)


def test_ctx_set_materialize_grads():
    run_both(program_ctx_set_materialize_grads)


def program_ctx_misc(torch, log):
    # saved non-tensors on ctx, optional inputs get None grads, trailing Nones ignored
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor, name="scale"):
            ctx.factor = factor
            ctx.save_for_backward(x)
            return x * factor

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.factor, None, None

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x, 3.0)
    y.sum().backward()
    log("x.grad", x.grad)

    # returning too many gradients is an error
    class TooMany(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    try:
        TooMany.apply(x).sum().backward()
        log("too many grads", "ok")
    except Exception as e:
        log("too many grads", type(e).__name__)

    # saved tensors freed after backward; second backward fails
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x.grad = None
    y = Sq.apply(x).sum()
    y.backward()
    try:
        y.backward()
        log("second backward", "ok")
    except Exception as e:
        log("second backward", type(e).__name__)
    log("x.grad", x.grad)

    # once_differentiable: double backward through it raises
    once_differentiable = torch.autograd.function.once_differentiable

    class SqOnce(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    g, = torch.autograd.grad(SqOnce.apply(x).sum(), x, create_graph=True)
    log("once_differentiable first grad", g)
    log("first grad requires_grad", g.requires_grad)
    try:
        g.sum().backward()
        log("double backward through once_differentiable", "ok")
    except Exception as e:
        log("double backward through once_differentiable", type(e).__name__)

    # without once_differentiable, a backward written with differentiable ops
    # supports higher order
    g2, = torch.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    gg, = torch.autograd.grad(g2.sum(), x)
    log("second derivative", gg)


def test_ctx_misc():
    run_both(program_ctx_misc)


# ---------------------------------------------------------------- Extending nn

def program_extending_nn(torch, log):
    nn = torch.nn
    LinearFunction = _make_linear_function(torch)

    class Linear(nn.Module):
        def __init__(self, input_features, output_features, bias=True):
            super().__init__()
            self.input_features = input_features
            self.output_features = output_features
            self.weight = nn.Parameter(torch.empty(output_features, input_features))
            if bias:
                self.bias = nn.Parameter(torch.empty(output_features))
            else:
                self.register_parameter('bias', None)
            nn.init.uniform_(self.weight, -0.1, 0.1)
            if self.bias is not None:
                nn.init.uniform_(self.bias, -0.1, 0.1)

        def forward(self, input):
            return LinearFunction.apply(input, self.weight, self.bias)

        def extra_repr(self):
            return 'input_features={}, output_features={}, bias={}'.format(
                self.input_features, self.output_features, self.bias is not None)

    m = Linear(3, 2)
    init_params(torch, m, seed=11)
    print(m)
    log("params", [n for n, _ in m.named_parameters()])
    x = randn(torch, (4, 3), seed=12)
    out = m(x)
    log("out", out)
    log("grad_fn", grad_fn_name(out))
    out.pow(2).sum().backward()
    log("weight.grad", m.weight.grad)
    log("bias.grad", m.bias.grad)
    m2 = Linear(3, 2, bias=False)
    log("bias None", m2.bias)
    log("params no bias", [n for n, _ in m2.named_parameters()])
    print(m2)


def test_extending_nn():
    run_both(program_extending_nn)


# ---------------------------------------------------------------- custom Optimizer

def program_custom_optimizer(torch, log):
    Optimizer = torch.optim.Optimizer
    setstate_calls = []

    class MomentumSGD(Optimizer):
        def __init__(self, params, lr=0.1, momentum=0.9, eps=1e-8):
            defaults = dict(lr=lr, momentum=momentum, eps=eps)
            super().__init__(params, defaults)

        def __setstate__(self, state):
            setstate_calls.append(sorted(k for k in state if k in ("state", "param_groups")))
            super().__setstate__(state)
            for group in self.param_groups:
                group.setdefault('momentum', 0.9)

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = 0
                        state['buf'] = torch.zeros_like(p)
                    state['step'] += 1
                    buf = state['buf']
                    buf.mul_(group['momentum']).add_(p.grad)
                    p.add_(buf, alpha=-group['lr'])
            return loss

    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    b = torch.nn.Parameter(torch.tensor([0.5]))
    opt = MomentumSGD([w], lr=0.1)
    log("defaults", opt.defaults)
    log("n param_groups", len(opt.param_groups))
    log("group lr/momentum/eps", [opt.param_groups[0][k] for k in ("lr", "momentum", "eps")])
    opt.add_param_group({"params": [b], "lr": 0.01})
    log("added group lr/momentum", [opt.param_groups[1][k] for k in ("lr", "momentum")])
    for _ in range(3):
        opt.zero_grad()
        loss = (w * w).sum() + (b * 3).sum()
        loss.backward()
        opt.step()
    log("w", w)
    log("b", b)
    log("state[w]['step']", opt.state[w]["step"])
    log("state[w]['buf']", opt.state[w]["buf"])
    sd = copy.deepcopy(opt.state_dict())
    log("state_dict keys", sorted(sd.keys()))
    log("state_dict state keys", sorted(sd["state"].keys()))
    log("state_dict param_groups params", [g["params"] for g in sd["param_groups"]])
    log("state_dict group lrs", [g["lr"] for g in sd["param_groups"]])

    # load into a fresh optimizer and continue identically
    w2 = torch.nn.Parameter(w.detach().clone())
    b2 = torch.nn.Parameter(b.detach().clone())
    opt2 = MomentumSGD([w2], lr=0.1)
    opt2.add_param_group({"params": [b2], "lr": 0.01})
    opt2.load_state_dict(sd)
    log("loaded buf", opt2.state[w2]["buf"])
    log("__setstate__ calls after load_state_dict", list(setstate_calls))
    # __setstate__ serves pickling/copying too
    opt3 = copy.deepcopy(opt2)
    log("__setstate__ calls after deepcopy", list(setstate_calls))
    log("deepcopy groups", [[g["lr"], g["momentum"]] for g in opt3.param_groups])
    log("deepcopy buf", opt3.state[opt3.param_groups[0]["params"][0]]["buf"])
    for o, ww, bb in ((opt, w, b), (opt2, w2, b2)):
        o.zero_grad()
        ((ww * ww).sum() + (bb * 3).sum()).backward()
        o.step()
    log("continued w == loaded w2", bool(torch.equal(w, w2)))
    log("continued b == loaded b2", bool(torch.equal(b, b2)))

    # closure support
    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    log("closure loss", opt.step(closure))


def test_custom_optimizer():
    run_both(program_custom_optimizer)
