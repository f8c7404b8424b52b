"""Parity: custom ``autograd.Function`` -- forward/backward and setup_context styles, apply,
save_for_backward/saved_tensors (version-checked), needs_input_grad, mark_dirty,
mark_non_differentiable, set_materialize_grads, non-tensor args/outputs, tuple outputs,
None grads, wrong number of grads, once_differentiable, gradcheck/gradgradcheck."""
import warnings

import pytest

from _ag import err, graph, programs, rnd, run_both, tensor


def p_basic(torch, log):
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            print("forward grad enabled:", torch.is_grad_enabled())
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            print("backward", tuple(g.shape))
            return g * r

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = Exp.apply(x)
    log("y", y)
    log("grad_fn name", type(y.grad_fn).__name__)
    log("graph", graph(y))
    log("flags", (y.requires_grad, y.is_leaf))
    (y * y).sum().backward()
    log("x.grad", x.grad)
    with torch.no_grad():
        z = Exp.apply(x)
    log("under no_grad", (z.requires_grad, z.grad_fn))
    c = tensor(torch, rnd((3,), 1))
    log("no grad input", Exp.apply(c).requires_grad)


def p_setup_context(torch, log):
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(x, y, scale):
            return x * y * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y, scale = inputs
            ctx.save_for_backward(x, y)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            log("needs_input_grad", ctx.needs_input_grad)
            return g * y * ctx.scale, g * x * ctx.scale, None

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = tensor(torch, rnd((3,), 1), requires_grad=False)
    out = Mul.apply(x, y, 2.5)
    out.sum().backward()
    log("x.grad", x.grad)
    log("graph", graph(out))


def p_needs_input_grad_and_none(torch, log):
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k, flag):
            ctx.k = k
            return a * k + b, flag

        @staticmethod
        def backward(ctx, ga, gflag):
            log("needs", ctx.needs_input_grad)
            log("gflag", gflag)
            return (ga * ctx.k if ctx.needs_input_grad[0] else None,
                    ga if ctx.needs_input_grad[1] else None, None, None)

    a = tensor(torch, rnd((2,), 0), requires_grad=True)
    b = tensor(torch, rnd((2,), 1))
    out, flag = F.apply(a, b, 3.0, "tag")
    log("non-tensor output", flag)
    out.sum().backward()
    log("a.grad", (a.grad, b.grad))


def p_tuple_outputs(torch, log):
    class Split(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log("g1, g2", (g1, g2))
            return g1 * 2 + g2 * 3

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    a, b = Split.apply(x)
    log("same node", a.grad_fn is b.grad_fn)
    a.sum().backward()        # b unused: its grad is materialized as zeros
    log("x.grad", x.grad)


def p_materialize(torch, log):
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            log("g2 is None", g2 is None)
            return g1

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    a, b = F.apply(x)
    a.sum().backward()
    log("x.grad", x.grad)


def p_wrong_grads(torch, log):
    class TooMany(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    class TooFew(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    log("too many", err(lambda: TooMany.apply(x).sum().backward()))
    log("wrong shape", err(lambda: WrongShape.apply(x).sum().backward()))
    log("too few", err(lambda: TooFew.apply(x, x).sum().backward()))


def p_mark_dirty(torch, log):
    class AddOne(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = tensor(torch, rnd((3,), 0), requires_grad=True)
    b = a * 1
    v0 = b._version
    c = AddOne.apply(b)
    log("same object", c is b)
    log("version bumped", b._version > v0)
    log("graph", graph(c))
    (c * c).sum().backward()
    log("a.grad", a.grad)
    log("leaf dirty", err(lambda: AddOne.apply(a)))


def p_non_differentiable(torch, log):
    class SortIdx(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g * 2

    x = tensor(torch, rnd((4,), 0), requires_grad=True)
    y, idx = SortIdx.apply(x)
    log("flags", (y.requires_grad, idx.requires_grad, idx.grad_fn))
    (y.sum() + idx.sum()).backward()
    log("x.grad", x.grad)


def p_saved_version_check(torch, log):
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = tensor(torch, rnd((3,), 0), requires_grad=True)
    b = a * 1
    c = Sq.apply(b)
    b.add_(1)
    log("modified saved", err(lambda: c.sum().backward()))


def p_double_backward(torch, log):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    log("g, gg", (g, gg))


def p_once_differentiable(torch, log):
    from importlib import import_module
    once_differentiable = import_module(torch.__name__ + ".autograd.function").once_differentiable

    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log("grad mode in once_differentiable backward", torch.is_grad_enabled())
            return 2 * x * g

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    (g,) = torch.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    log("g", (g, g.requires_grad))
    log("double backward through once_differentiable", err(lambda: g.sum().backward()))
    v = tensor(torch, rnd((3,), 1), requires_grad=True)
    (g2,) = torch.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
    log("g2", (g2, g2.requires_grad, type(g2.grad_fn).__name__))
    log("differentiating twice", err(lambda: g2.sum().backward()))


def p_gradcheck(torch, log):
    class Good(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.1

    class DetachedBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.detach().cos()     # right first derivative, wrong second

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    log("good", torch.autograd.gradcheck(Good.apply, (x,)))
    log("detached backward: gradcheck", torch.autograd.gradcheck(DetachedBackward.apply, (x,)))
    log("detached backward: gradgradcheck",
        torch.autograd.gradgradcheck(DetachedBackward.apply, (x,), raise_exception=False))
    log("detached backward: gradgradcheck raises",
        err(lambda: torch.autograd.gradgradcheck(DetachedBackward.apply, (x,))))
    try:
        torch.autograd.gradcheck(Bad.apply, (x,))
    except RuntimeError as e:
        log("GradcheckError is a RuntimeError", type(e).__name__)
    log("bad raises", err(lambda: torch.autograd.gradcheck(Bad.apply, (x,))))
    log("bad raise_exception=False", torch.autograd.gradcheck(Bad.apply, (x,), raise_exception=False))
    log("gradgradcheck good", torch.autograd.gradgradcheck(lambda t: (t ** 3).sum(), (x,)))
    log("gradgradcheck bad", torch.autograd.gradgradcheck(Bad.apply, (x,), raise_exception=False))
    log("gradcheck builtin", torch.autograd.gradcheck(lambda a, b: (a * b).tanh(),
                                                      (x, tensor(torch, rnd((3,), 1), requires_grad=True))))


def p_function_hooks_and_anomaly(torch, log):
    class NanBack(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = NanBack.apply(x)
    y.register_hook(lambda g: print("hook on custom output"))
    y.grad_fn.register_hook(lambda gi, go: print("node post hook", len(gi)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            z = NanBack.apply(x)
            try:
                z.sum().backward()
                log("anomaly", "ok")
            except RuntimeError as e:
                log("anomaly", ("RuntimeError", "NanBackBackward" in str(e)))
    y.sum().backward()
    log("nan grad without anomaly", x.grad)


def p_function_edge_cases(torch, log):
    class ReturnInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class SaveNone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            log("saved None", b is None)
            log("saved twice same", all(p is q or bool((p == q).all()) for p, q in
                                        zip(ctx.saved_tensors[:1], ctx.saved_tensors[:1])))
            return g * 2, None

    class SaveNonTensor(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    class SaveOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    r = ReturnInput.apply(x)
    log("returned input", (r is x, r.is_leaf, r.requires_grad, type(r.grad_fn).__name__))
    r.sum().backward()
    log("x.grad", x.grad)
    SaveNone.apply(x, 2.0).sum().backward()
    log("non-tensor saved", err(lambda: SaveNonTensor.apply(x)))
    o = SaveOutput.apply(x)
    o.sum().backward(retain_graph=True)
    log("saved output ok", x.grad)
    with torch.no_grad():
        o.mul_(2)
    log("saved output modified", err(lambda: o.sum().backward()))
    log("apply with kwargs", err(lambda: SaveOutput.apply(x=x)))
    log("calling forward on the class", err(lambda: SaveOutput()(x)))


def p_vjp_alias_and_freed_saved(torch, log):
    class SqVjp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def vjp(ctx, g):          # torch: vjp is an alias of backward
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = SqVjp.apply(x)
    log("saved_tensors via grad_fn", y.grad_fn.saved_tensors)
    y.sum().backward()
    log("x.grad", x.grad)
    log("saved_tensors after backward", err(lambda: y.grad_fn.saved_tensors))


def p_materialize_non_diff_grads_off(torch, log):
    # ctx._materialize_non_diff_grads = False: a non-differentiable output's missing gradient
    # reaches backward as None while a differentiable one is still materialized as zeros
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b, c = x.clone(), x.clone(), x.clone()
            ctx.mark_non_differentiable(b)
            ctx._materialize_non_diff_grads = False
            return a, b, c

        @staticmethod
        def backward(ctx, ga, gb, gc):
            log("grads", (ga, gb, gc))
            return ga

    x = tensor(torch, rnd((2,), 0), requires_grad=True)
    F.apply(x)[0].sum().backward()
    log("x.grad", x.grad)


PROGRAMS = [p_materialize_non_diff_grads_off, p_vjp_alias_and_freed_saved, p_function_edge_cases, p_basic, p_setup_context, p_needs_input_grad_and_none, p_tuple_outputs,
            p_materialize, p_wrong_grads, p_mark_dirty, p_non_differentiable,
            p_saved_version_check, p_double_backward, p_once_differentiable, p_gradcheck,
            p_function_hooks_and_anomaly]


# known core bugs: program name -> root cause
XFAIL = {
}


@pytest.mark.parametrize("program", programs(PROGRAMS, XFAIL))
def test_parity(program):
    run_both(program)
