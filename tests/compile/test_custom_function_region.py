"""A custom ``autograd.Function`` inside a compiled forward whose results are differentiated
outside (``tracegrad.compile(model)``, ``loss.backward()`` after the call): the region compiles
and its backward calls the Function's own backward -- straight-through estimators, gradient
reversal, clamped gradients, ``save_for_backward``, ctx attributes, ``needs_input_grad``,
``mark_non_differentiable``, ``once_differentiable``, non-tensor arguments, several outputs,
``None`` gradients, ``setup_context`` -- compared with eager tracegrad and torch 2.13 over three
calls with different inputs (values, input grads, parameter grads, ``autograd.grad``, a second
backward with ``retain_graph``, a call under ``no_grad``). What cannot be kept exactly (a
backward with Python side effects or ``.item()``, ``ctx.mark_dirty``) runs eagerly with the
reason in ``tracegrad.compiler.stats()``."""
import numpy as np
import pytest

import tracegrad

from ._harness import _arr, data, np_init

torch = pytest.importorskip("torch")

# whole small programs (two Linear layers, a loss weighted by data, gradients accumulated over
# two backwards with retain_graph): float32 sums that round differently in each library's
# kernels, so the absolute tolerance is looser than a single op's 1e-6
RTOL, ATOL = 1e-5, 1e-5


def functions(mod):
    """The same custom Functions written against ``mod`` (torch or tracegrad)."""
    F = mod.autograd.Function

    class STE(F):                  # straight-through rounding, gradient scaled and gated
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            ctx.save_for_backward(x)
            return x.round()

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.scale * (x.abs() <= 1.0).to(g.dtype), None

    class GradReverse(F):          # identity forward, reversed scaled gradient
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g.neg() * ctx.alpha, None

    class ClampGrad(F):            # tanh forward, gradient clamped, once_differentiable
        @staticmethod
        def forward(ctx, x, lo, hi):
            y = x.tanh()
            ctx.save_for_backward(y)
            ctx.lo, ctx.hi = lo, hi
            return y

        @staticmethod
        @mod.autograd.function.once_differentiable
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return (g * (1 - y * y)).clamp(ctx.lo, ctx.hi), None, None

    class TwoOut(F):               # several outputs, an integer one non-differentiable
        @staticmethod
        def forward(ctx, x, w):
            idx = x.argmax(1)
            a, b = x * w, x.exp()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, w, b)
            ctx.flags = ctx.needs_input_grad
            return a, idx, b

        @staticmethod
        def backward(ctx, ga, gidx, gb):
            x, w, b = ctx.saved_tensors
            gx = ga * w + gb * b * 0.5 if ctx.needs_input_grad[0] else None
            gw = (ga * x).sum(0) if ctx.needs_input_grad[1] else None
            return gx, gw

    class Setup(F):                # forward/setup_context style, a tensor kept as a ctx attribute
        @staticmethod
        def forward(x, k):
            return x * k, x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.cosx = x.cos()
            ctx.set_materialize_grads(False)

        @staticmethod
        def backward(ctx, g1, g2):
            gx = None
            if g1 is not None:
                gx = g1 * ctx.k
            if g2 is not None:
                gx = g2 * ctx.cosx * 2 if gx is None else gx + g2 * ctx.cosx * 2
            return gx, None

    return dict(STE=STE, GradReverse=GradReverse, ClampGrad=ClampGrad, TwoOut=TwoOut, Setup=Setup)


def _model(mod):
    return np_init(mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.Linear(4, 4)), mod)


def forward_for(case, mod):
    fns = functions(mod)
    model = _model(mod)
    lin1, lin2 = model[0], model[1]
    w = mod.tensor(np.linspace(-1, 1, 4).astype("float32"))
    if case == "TwoOutParam":         # w requires grad too: needs_input_grad (True, True)
        w = mod.nn.Parameter(w)
        model.register_parameter("w", w)

    def f(x):
        h = lin1(x)
        if case == "STE":
            return lin2(fns["STE"].apply(h, 2.0)).tanh()
        if case == "GradReverse":
            return lin2(fns["GradReverse"].apply(h, 0.5)) * h
        if case == "ClampGrad":
            return lin2(fns["ClampGrad"].apply(h * 3, -0.2, 0.3))
        if case in ("TwoOut", "TwoOutParam"):
            a, idx, b = fns["TwoOut"].apply(h, w)
            return lin2(a) + b * 0.1, idx
        if case == "TwoOutOneUsed":    # the exp output gets no gradient: zeros reach backward
            a, idx, b = fns["TwoOut"].apply(h, w)
            return lin2(a), idx
        if case == "Setup":
            y1, y2 = fns["Setup"].apply(h, 1.5)
            return lin2(y1) + y2
        if case == "SetupOneUsed":     # materialize_grads False: backward sees None
            y1, y2 = fns["Setup"].apply(h, 1.5)
            return lin2(y2)
        raise AssertionError(case)
    return f, model


CASES = ["STE", "GradReverse", "ClampGrad", "TwoOut", "TwoOutParam", "TwoOutOneUsed", "Setup", "SetupOneUsed"]


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def run(case, mod, compiled, kind):
    f, model = forward_for(case, mod)
    g = tracegrad.compile(f) if compiled else f
    seen = []
    for i in range(3):
        model.zero_grad(set_to_none=True)
        x = (data(mod, i, 5, 3) * 1.3).requires_grad_(True)
        rec = {}
        if kind == "no_grad":
            with mod.no_grad():
                out = g(x)
            rec["requires_grad"] = _first(out).requires_grad
        else:
            out = g(x)
            loss = (_first(out) * data(mod, 10 + i, 5, 4)).sum()
            if kind == "backward":
                loss.backward()
            elif kind == "retain_graph":
                loss.backward(retain_graph=True)
                loss.backward()
            elif kind == "grad":
                rec["gx"], = mod.autograd.grad(loss, [x])
        rec["out"] = [_arr(o) for o in (out if isinstance(out, tuple) else (out,))]
        if kind in ("backward", "retain_graph"):
            rec["gx"] = x.grad
            rec["grads"] = [p.grad for p in model.parameters()]
        seen.append(rec)
    return seen, g


def _compare(a, b, what):
    assert a.keys() == b.keys(), what
    for k in a:
        va, vb = a[k], b[k]
        if isinstance(va, list):
            assert len(va) == len(vb), (what, k)
            for j, (p, q) in enumerate(zip(va, vb)):
                _close(p, q, (what, k, j))
        else:
            _close(va, vb, (what, k))


def _close(p, q, where):
    if isinstance(p, bool) or p is None:
        assert p == q, where
        return
    p = _arr(p) if hasattr(p, "detach") else np.asarray(p)
    q = _arr(q) if hasattr(q, "detach") else np.asarray(q)
    np.testing.assert_allclose(p, q, rtol=RTOL, atol=ATOL, err_msg=str(where))


@pytest.mark.parametrize("kind", ["backward", "grad", "retain_graph", "no_grad"])
@pytest.mark.parametrize("case", CASES)
def test_function_in_forward_only_region_matches_eager_and_torch(case, kind):
    ref, _ = run(case, torch, False, kind)
    eager, _ = run(case, tracegrad, False, kind)
    comp, g = run(case, tracegrad, True, kind)
    for i in range(3):
        _compare(ref[i], eager[i], ("eager vs torch", i))
        _compare(ref[i], comp[i], ("compiled vs torch", i))
    # the region really compiled: traced once, no graph break, later calls not eager
    assert not g.stats["graph_breaks"], g.stats
    assert g.stats["traces"] >= 1 and g.stats["eager_calls"] <= 1, g.stats


def test_result_node_is_the_compiled_region():
    f, _ = forward_for("STE", tracegrad)
    g = tracegrad.compile(f)
    for i in range(2):
        out = g(data(tracegrad, i, 5, 3).requires_grad_(True))
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"


def test_backward_not_the_mathematical_derivative():
    """The compiled gradient is the Function's backward, not JAX's derivative of forward
    (round's derivative is zero; the straight-through estimator's is not)."""
    f, model = forward_for("STE", tracegrad)
    g = tracegrad.compile(f)
    for i in range(3):
        model.zero_grad()
        g(data(tracegrad, i, 5, 3)).sum().backward()
    assert np.abs(_arr(model[0].weight.grad)).sum() > 0


def test_saved_input_written_in_place_after_call_raises_like_eager():
    for mod in (torch, tracegrad):
        fns = functions(mod)
        lin = np_init(mod.nn.Linear(3, 4), mod)
        f = lambda x: fns["STE"].apply(x, 2.0) * lin.weight[0]    # noqa: E731
        g = tracegrad.compile(f) if mod is tracegrad else f
        for i in range(3):
            x = data(mod, i, 3).requires_grad_(True)
            y = x * 1
            out = g(y)
            with mod.no_grad():
                y.add_(1)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                out.sum().backward()
        if mod is tracegrad:
            assert not g.stats["graph_breaks"] and g.stats["traces"] >= 1, g.stats


def test_module_compile_gradient_reversal_returning_input_as_is():
    """``model.compile()`` (torch.compile's module form) of a model whose forward uses a
    Function returning its input as-is: compiled, and the parameters' grads are torch's."""
    def make(mod):
        class GR(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x, a):
                ctx.a = a
                return x

            @staticmethod
            def backward(ctx, g):
                return -g * ctx.a, None

        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.l, self.m = mod.nn.Linear(3, 4), mod.nn.Linear(4, 4)

            def forward(self, x):
                return self.m(GR.apply(self.l(x).relu(), 0.3)) + self.l(x)
        return np_init(Net(), mod)
    net, ref = make(tracegrad), make(torch)
    net.compile()
    for i in range(3):
        got = []
        for mod, m in ((tracegrad, net), (torch, ref)):
            m.zero_grad()
            (m(data(mod, i, 5, 3)) * data(mod, 10 + i, 5, 4)).sum().backward()
            got.append([_arr(p.grad) for p in m.parameters()])
        for p, q in zip(*got):
            np.testing.assert_allclose(p, q, rtol=RTOL, atol=ATOL)
    st = tracegrad.compiler.stats()
    mine = [v for k, v in st.items() if k.startswith("Net.")]
    assert mine and not mine[-1]["graph_breaks"] and mine[-1]["traces"] >= 1, st


# ---- what stays a graph break -------------------------------------------------------------------
def unsupported(kind):
    F = tracegrad.autograd.Function
    log = []

    class Printing(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            print("backward ran")
            return g * 2

    class Item(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (2 if x.sum().item() > 0 else 3)

    class Logs(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append(1)
            return g * 2

    class Dirty(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Closure(F):     # forward reads a parameter that is not an argument
        @staticmethod
        def forward(ctx, x):
            return x * lin.weight[0]

        @staticmethod
        def backward(ctx, g):
            return g * 3

    cls = dict(print=Printing, item=Item, append=Logs, mark_dirty=Dirty, closure=Closure)[kind]
    lin = np_init(tracegrad.nn.Linear(3, 3), tracegrad)
    return (lambda x: cls.apply(lin(x) * 1)), lin, log


@pytest.mark.parametrize("kind,reason", [("print", "print"), ("item", "item"), ("append", "append"),
                                         ("mark_dirty", "mark_dirty"), ("closure", "not one of its arguments")])
def test_unsupported_function_breaks_with_reason(kind, reason, capsys):
    f, lin, log = unsupported(kind)
    g = tracegrad.compile(f)
    f2, lin2, log2 = unsupported(kind)
    with tracegrad.no_grad():
        lin2.weight.copy_(lin.weight)
        lin2.bias.copy_(lin.bias)
    for i in range(3):
        x = data(tracegrad, i, 2, 3)
        lin.zero_grad()
        lin2.zero_grad()
        g(x).sum().backward()
        f2(x).sum().backward()
        np.testing.assert_allclose(_arr(lin.weight.grad), _arr(lin2.weight.grad), rtol=RTOL, atol=ATOL)
    assert len(log) == len(log2)
    if kind == "print":
        assert capsys.readouterr().out.count("backward ran") == 6     # 3 compiled + 3 eager calls
    breaks = g.stats["graph_breaks"]
    assert breaks and reason in breaks[0][0], breaks
    assert g.stats["eager_calls"] == 3
    assert any(b and reason in b[0][0] for b in
               (s["graph_breaks"] for s in tracegrad.compiler.stats().values()))



def test_function_differentiated_twice_stays_eager_with_reason():
    """A Function whose backward is differentiated again (a gradient penalty through it,
    ``create_graph=True``) on the first, eager call stays a graph break on later calls, so the
    penalty's gradients stay torch's; the reason names create_graph."""
    def make(mod):
        class Cube(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 3 * x * x
        lin = np_init(mod.nn.Linear(3, 2), mod)
        return (lambda x: Cube.apply(lin(x)).sum(1)), lin
    (f, lin), (fr, ref) = make(tracegrad), make(torch)
    g = tracegrad.compile(f)
    for i in range(3):
        got = []
        for mod, fn, m in ((tracegrad, g, lin), (torch, fr, ref)):
            m.zero_grad()
            x = data(mod, i, 4, 3).requires_grad_(True)
            out = fn(x)
            gx, = mod.autograd.grad(out.sum(), x, create_graph=True)
            (out.mean() + gx.pow(2).sum()).backward()
            got.append(_arr(m.weight.grad))
        np.testing.assert_allclose(got[0], got[1], rtol=1e-4, atol=1e-5)    # a whole small program
    assert g.stats["graph_breaks"] and "create_graph" in g.stats["graph_breaks"][0][0], g.stats


# ---- a backward returning None for an input that requires grad -----------------------------------
def _gated(mod, how):
    """A Function whose backward gives ``w`` (a Parameter) no gradient: eager leaves ``w.grad``
    None unless another path reaches ``w``; the region's VJP would give zeros (NOTE [None from a
    lowered backward])."""
    class Gate(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            w, = ctx.saved_tensors
            return g * w, None

    lin = np_init(mod.nn.Linear(3, 4), mod)
    w = mod.nn.Parameter(mod.tensor(np.linspace(0.5, 1.5, 4).astype("float32")))

    def f(x):
        h = lin(x)
        if how == "direct":
            return Gate.apply(h, w).tanh()
        if how == "through_op":          # w * 2 gets no gradient either: w.grad stays None
            return Gate.apply(h, w * 2).tanh()
        if how == "other_path":          # w reached along another path: its gradient is that path's
            return Gate.apply(h, w).tanh() + w * h
        if how == "two_results":         # the first result does not reach w, the second does
            return Gate.apply(h, w), h * w
        raise AssertionError(how)
    return f, lin, w


@pytest.mark.parametrize("how,which", [("direct", 0), ("through_op", 0), ("other_path", 0),
                                       ("two_results", 0), ("two_results", 1), ("two_results", 2)])
def test_backward_returning_none_leaves_grad_none_and_optimizer_skips(how, which):
    runs = []
    for mod, compiled in ((torch, False), (tracegrad, False), (tracegrad, True)):
        f, lin, w = _gated(mod, how)
        g = tracegrad.compile(f) if compiled else f
        opt = mod.optim.AdamW(list(lin.parameters()) + [w], lr=0.1, weight_decay=0.5)
        rec = []
        for i in range(3):
            opt.zero_grad(set_to_none=True)
            out = g(data(mod, i, 5, 3))
            outs = out if isinstance(out, tuple) else (out,)
            losses = [(o * data(mod, 10 + i, 5, 4)).sum() for o in outs]
            mod.autograd.backward(losses if which == 2 else [losses[which]])
            rec.append((None if w.grad is None else _arr(w.grad), _arr(lin.weight.grad)))
            opt.step()
        rec.append((_arr(w), _arr(lin.weight)))
        runs.append(rec)
        if compiled:
            assert not g.stats["graph_breaks"] and g.stats["traces"] >= 1, g.stats
    ref = runs[0]
    for got in runs[1:]:
        for (gw, gl), (rw, rl) in zip(got, ref):
            assert (gw is None) == (rw is None), (how, which, gw, rw)
            if rw is not None:
                np.testing.assert_allclose(gw, rw, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(gl, rl, rtol=RTOL, atol=ATOL)
