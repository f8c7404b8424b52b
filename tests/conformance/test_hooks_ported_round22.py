"""Round 22 of PyTorch's own tests, ported: test/test_autograd.py (TestAutograd) on hooks:
tensor hooks (test_hooks, test_hook_with_no_name, test_hook_edge_case_when_called_with_grad,
test_tensor_hooks_inplace*, test_retain_grad_inplace*, test_retains_grad_*,
test_tensor_hook_in_grad_of_grad, wrong hook returns), post accumulate grad hooks
(test_post_accumulate_grad_hook_*, test_accumulate_grad_posthooks_*), Node pre-hooks and hooks
(test_grad_fn_prehooks*, hooks + retain_graph, wrong returns), backward twice without
retain_graph, and saved tensor hooks (test_saved_tensors_hook_*, test_disabling_saved_tensor_hooks*,
test_pack_hook_with_inplace_modification_should_fail, test_graph_save_on_cpu,
test_saved_tensor_hooks_custom_error_propagation, test_unpack_hooks_exec_count); and
test/nn/test_module_hooks.py: TestModuleHooks (test_bw_hook_warning_for_non_tensor_or_tuple,
test_always_called_forward_hooks), TestStateDictHooks (load_state_dict pre-hooks,
state_dict pre/post hooks), TestModuleGlobalHooks (test_module_global_hooks,
test_module_global_hook_invalid_outputs, test_module_backward_global_hook_writeable,
test_module_global_forward_preforward_hook_writeable, test_module_forward_*_hook_removable,
test_global_and_local_hooks_order, registration hooks) and TestModuleHookNN (test_hooks,
test_hook_cpp, test_backward_hooks_interaction, test_hook_invalid_outputs, test_hook_extra_input,
test_hook_non_full_warning, test_hook_backward_size, test_hook_backward_writeable).
Many of these torch tests have an earlier port (test_ported_round3.py, test_autograd_*_ported*.py);
the programs here check what those left out: the exact checks on what Node hooks return, unpack
counts in a double backward, legacy module hooks of a dead module, full logs of values and order.

Each check is a program run with torch 2.13 (the oracle) and with tracegrad: the log it returns
(values, dtypes, shapes, hook firing order, counters, exception classes of the steps that raise)
and the warning classes must be equal. Tiny shapes: (2,), (2, 2), Linear(2, 2)."""
import numpy as np
import pytest
from _observe_helpers import make_check, norm as _norm

torch = pytest.importorskip("torch")


check = make_check(_norm)


def attempt(f):
    """``f()``, or ``("raises", class name)`` when it raises (a step of a longer log)."""
    try:
        return f()
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return ("raises", type(e).__name__)


def msg_has(f, *words):
    """The class of what ``f()`` raises and whether its message holds every one of ``words``."""
    try:
        f()
    except Exception as e:   # noqa: BLE001
        return type(e).__name__, all(w in str(e) for w in words)
    return None


def text(f):
    """``"Class: message"`` of what ``f()`` raises (None when it does not raise)."""
    try:
        f()
    except Exception as e:   # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def X(T, n=2):
    return T.tensor([1.5, -2.0, 3.0][:n], requires_grad=True)


# ---- tensor hooks ----------------------------------------------------------------------------

def _hooks_counter(T):
    # test_hooks: a leaf hook fires on every backward of a retained graph; removal stops it
    x = T.ones(2, 2, requires_grad=True)
    y = T.ones(2, 2) * 4
    y.requires_grad_()
    counter = [0]

    def bw_hook(inc, grad):
        assert isinstance(grad, T.Tensor)
        counter[0] += inc

    z = x ** 2 + x * 2 + x * y + y
    x.register_hook(lambda *a: bw_hook(0, *a))
    h1 = z.register_hook(lambda *a: bw_hook(1, *a))
    z.backward(T.ones(2, 2), retain_graph=True)
    log = [counter[0]]
    z.backward(T.ones(2, 2), retain_graph=True)
    log.append(counter[0])
    h2 = z.register_hook(lambda *a: bw_hook(2, *a))
    z.backward(T.ones(2, 2), retain_graph=True)
    log.append(counter[0])
    h2.remove()
    z.backward(T.ones(2, 2), retain_graph=True)
    log.append(counter[0])
    h1.remove()
    z.backward(T.ones(2, 2), retain_graph=True)
    log.append(counter[0])

    def bw_hook_modify(grad):
        return grad.mul(2)

    y.grad.zero_()
    z.register_hook(bw_hook_modify)
    z.backward(T.ones(2, 2), retain_graph=True)
    return log, x.grad, y.grad


def _hook_with_no_name(T):
    # test_hook_with_no_name: a callable object or functools.partial (no __name__) as a hook
    import functools

    class MyHookClass:
        def __call__(self, grad):
            return grad.clone() * 2

    x = X(T)
    x.register_hook(MyHookClass())
    x.register_hook(functools.partial(lambda k, g: g + k, 1.0))
    (x * 3).sum().backward()
    return x.grad


def _hook_edge_case_with_grad(T):
    # test_hook_edge_case_when_called_with_grad: autograd.grad runs the tensor hooks and node
    # hooks on the path to the asked inputs only; leaves' hooks run when they are inputs
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    c = b * 2
    a.register_hook(lambda g: log.append(("a", g.tolist())))
    b.register_hook(lambda g: log.append(("b", g.tolist())))
    c.register_hook(lambda g: log.append(("c", g.tolist())))
    b.grad_fn.register_prehook(lambda go: log.append("b.pre"))
    b.grad_fn.register_hook(lambda gi, go: log.append("b.post"))
    out = c.sum()
    r1 = T.autograd.grad(out, inputs=(b,), retain_graph=True)
    log.append("|")
    r2 = T.autograd.grad(out, inputs=(a, b), retain_graph=True)
    log.append("|")
    out.backward(inputs=(a, b), retain_graph=True)
    log.append("|")
    out.backward()
    return log, r1, r2, a.grad, b.grad


def _tensor_hooks_inplace(T):
    # test_tensor_hooks_inplace: a hook registered before an in-place op sees the gradient of
    # the old version; one registered after sees the new version's
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a.clone()
    b.register_hook(lambda g: log.append(("old", g.tolist())) or g * 2)
    b.mul_(3)
    b.register_hook(lambda g: log.append(("new", g.tolist())) or g * 5)
    b.sum().backward()
    return log, a.grad


def _tensor_hooks_inplace_over_view(T):
    # test_tensor_hooks_inplace_over_view: hooks on a base and on its view, then an in-place
    # write through the view
    log = []
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.clone()
    v = b[:2]
    b.register_hook(lambda g: log.append(("b", g.tolist())))
    v.register_hook(lambda g: log.append(("v", g.tolist())))
    v.mul_(2)
    b.register_hook(lambda g: log.append(("b'", g.tolist())))
    (b * T.tensor([1.0, 10.0, 100.0])).sum().backward()
    return log, a.grad


def _retain_grad_inplace(T):
    # test_retain_grad_inplace: .grad of a retained non-leaf is the gradient of its last version
    a = T.tensor([1.0, 2.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    g1 = a.grad
    a = T.tensor([1.0, 2.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(3)
    (a * a).sum().backward()
    return g1, a.grad


def _retain_grad_inplace_on_view(T):
    # test_retain_grad_inplace_on_view: retained base and view, in-place write on the view
    base = T.tensor([1.0, 2.0], requires_grad=True).clone()
    view = base[1:]
    base.retain_grad()
    view.retain_grad()
    view.mul_(3)
    (base * T.tensor([2.0, 5.0])).sum().backward()
    return base.grad, view.grad


def _retains_grad_inplace_multiple_outputs(T):
    # test_retains_grad_inplace_multiple_outputs: retained outputs of unbind/split, one then
    # written in place (torch refuses in-place on multi-output views)
    a = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = a * 1
    outs = b.split(1, 0)
    for o in outs:
        o.retain_grad()
    r = attempt(lambda: outs[0].mul_(2))
    (outs[0] * 3 + outs[1] * 5).sum().backward()
    return r, outs[0].grad, outs[1].grad, a.grad


def _retains_grad_sees_prehooks(T):
    # test_retains_grad_can_always_observe_tensor_prehook: the retained grad is the value after
    # every tensor hook, even ones registered after retain_grad (and on a later in-place version)
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a.clone()
    b.register_hook(lambda g: g * 2)
    b.retain_grad()
    b.register_hook(lambda g: g * 3)
    b.sum().backward()
    g1 = b.grad
    c = a.clone()
    c.retain_grad()
    c.add_(1)
    c.register_hook(lambda g: g * 7)
    c.sum().backward()
    return g1, c.grad, a.grad


def _hook_in_grad_of_grad(T):
    # tensor hooks on an intermediate fire in the first backward and, registered on the graph
    # create_graph builds, in the double backward
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x ** 3
    y.register_hook(lambda g: log.append(("y", g.tolist())))
    (gx,) = T.autograd.grad(y.sum(), x, create_graph=True)
    gx.register_hook(lambda g: log.append(("gx", g.tolist())) or g * 2)
    gx.sum().backward()
    return log, gx, x.grad


def _bad_tensor_hooks(T):
    # register_hook on a tensor that needs no grad; hooks returning a wrong shape, dtype or a
    # non-tensor; a hook raising (the error propagates unchanged)
    out = [msg_has(lambda: T.ones(2).register_hook(lambda g: g), "requires", "grad")]

    def run(hook):
        x = X(T)
        y = x * 2
        y.register_hook(hook)
        return y.sum().backward()

    out.append(msg_has(lambda: run(lambda g: g[:1]), "size"))
    out.append(msg_has(lambda: run(lambda g: g.double()), "type"))
    out.append(attempt(lambda: run(lambda g: 3.0)))
    out.append(attempt(lambda: run(lambda g: [g])))

    def boom(g):
        raise KeyError("boom")

    out.append(attempt(lambda: run(boom)))
    x = X(T)
    x.register_hook(lambda g: g[:1])
    out.append(msg_has(lambda: (x * 2).sum().backward(), "size"))
    return out


def _hook_handle_contexts(T):
    # a hook handle used as a context manager removes its hook on exit; removing twice is fine
    log = []
    x = X(T)
    y = x * 2
    with y.register_hook(lambda g: log.append("ctx")):
        y.sum().backward(retain_graph=True)
    y.sum().backward(retain_graph=True)
    h = y.register_hook(lambda g: log.append("h"))
    h.remove()
    h.remove()
    y.sum().backward()
    return log, x.grad


def test_tensor_hooks():
    """test_hooks, test_hook_with_no_name, test_hook_edge_case_when_called_with_grad,
    test_tensor_hooks_inplace(_over_view), test_retain_grad_inplace(_on_view),
    test_retains_grad_inplace_multiple_outputs, test_retains_grad_can_always_observe_tensor_prehook,
    hooks in a double backward, wrong hook returns and handle removal."""
    check([_hooks_counter, _hook_with_no_name, _hook_edge_case_with_grad, _tensor_hooks_inplace,
           _tensor_hooks_inplace_over_view, _retain_grad_inplace,
           _retain_grad_inplace_on_view, _retains_grad_inplace_multiple_outputs, _retains_grad_sees_prehooks,
           _hook_in_grad_of_grad, _bad_tensor_hooks, _hook_handle_contexts])


# ---- post accumulate grad hooks ----------------------------------------------------------------

def _post_acc_observes_prehook(T):
    # test_accumulate_grad_posthooks_can_observe_tensor_prehook
    log = []
    a = X(T)
    a.register_hook(lambda g: g * 3)
    a.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.tolist()))
    (a * 2).sum().backward()
    (a * 2).sum().backward()
    return log, a.grad


def _post_acc_not_for_grad(T):
    # test_accumulate_grad_posthooks_should_not_execute: autograd.grad, and backward(inputs=)
    # that leaves the leaf out, do not accumulate and do not run the hook
    log = []
    a, b = X(T), X(T) * 1
    b = b.detach().requires_grad_()
    a.register_post_accumulate_grad_hook(lambda t: log.append("a"))
    b.register_post_accumulate_grad_hook(lambda t: log.append("b"))
    out = (a * b).sum()
    T.autograd.grad(out, (a,), retain_graph=True)
    out.backward(inputs=[b], retain_graph=True)
    out.backward()
    return log, a.grad, b.grad


def _post_acc_multiple(T):
    # test_post_accumulate_grad_hook_multiple_hooks / _multiple_tensors / _e2e: hooks run in
    # registration order per tensor; a hook may update the parameter in place (an optimizer step)
    log = []
    p = T.tensor([1.0, 2.0], requires_grad=True)
    q = T.tensor([3.0, 4.0], requires_grad=True)

    def step(t):
        with T.no_grad():
            t.sub_(t.grad * 0.5)
        log.append(("step", t.tolist()))
        t.grad = None

    p.register_post_accumulate_grad_hook(lambda t: log.append(("p1", t.grad.tolist())))
    p.register_post_accumulate_grad_hook(step)
    q.register_post_accumulate_grad_hook(lambda t: log.append(("q", t.grad.tolist())))
    for _ in range(2):
        (p * p * q).sum().backward()
    return log, p, q.grad, p.grad


def _post_acc_errors(T):
    # test_post_accumulate_grad_hook_on_non_leaf / _returns_not_None; a tensor without grad
    x = X(T)
    out = [msg_has(lambda: (x * 2).register_post_accumulate_grad_hook(lambda t: None), "leaf"),
           attempt(lambda: T.ones(2).register_post_accumulate_grad_hook(lambda t: None))]
    x.register_post_accumulate_grad_hook(lambda t: t.grad)
    out.append(msg_has(lambda: (x * 2).sum().backward(), "None"))
    out.append(x.grad)
    return out


def _post_acc_removed_and_retain(T):
    # a removed post accumulate grad hook stays quiet; with retain_graph it runs per backward
    log = []
    x = X(T)
    h = x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.sum().item()))
    y = (x * 3).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    h.remove()
    y.backward()
    return log, x.grad


def test_post_accumulate_grad_hooks():
    """test_accumulate_grad_posthooks_can_observe_tensor_prehook / _should_not_execute,
    test_post_accumulate_grad_hook_multiple_hooks / _multiple_tensors / _e2e / _on_non_leaf /
    _returns_not_None, removal and retained graphs."""
    check([_post_acc_observes_prehook, _post_acc_not_for_grad, _post_acc_multiple, _post_acc_errors,
           _post_acc_removed_and_retain])


# ---- Node hooks ----------------------------------------------------------------------------------

def _node_prehook_multiple_outputs(T):
    # test_grad_fn_prehooks_multiple_outputs: a prehook of a multi-output node sees None for an
    # unused output and may replace the grads of the used ones
    log = []
    a = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    u0, u1 = (a * 1).unbind(0)

    def pre(go):
        log.append([None if g is None else g.tolist() for g in go])
        return tuple(None if g is None else g * 10 for g in go)

    u0.grad_fn.register_prehook(pre)
    (u0 * 2).sum().backward()
    return log, a.grad


def _node_hooks_order_and_retain(T):
    # test_grad_fn_prehooks / test_hooks on nodes: tensor hook, then node prehooks in order, then
    # node hooks; they fire on every backward of a retained graph; removal stops them
    log = []
    x = X(T)
    y = x * 2
    y.register_hook(lambda g: log.append("tensor"))
    h1 = y.grad_fn.register_prehook(lambda go: log.append("pre1"))
    y.grad_fn.register_prehook(lambda go: log.append("pre2"))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi), len(go))))
    out = y.sum()
    out.backward(retain_graph=True)
    h1.remove()
    out.backward()
    return log, x.grad


def _node_hook_replaces_grad_inputs(T):
    # a Node post hook's return replaces grad_inputs; prehooks may chain
    x = X(T)
    w = T.tensor([2.0, 3.0], requires_grad=True)
    y = x * w
    y.grad_fn.register_prehook(lambda go: (go[0] + 1,))
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0, gi[1]))
    y.sum().backward()
    return x.grad, w.grad


def _node_hook_bad_returns(T):
    # torch's check of what a Node hook returns: a tuple (a bare Tensor or a list is a
    # TypeError), of the right length, no value for a None gradient, Tensors (TypeError) of the
    # same size and dtype; a None return keeps the grads
    def run(reg):
        x = X(T)
        y = x * 2          # MulBackward0: grad_inputs (grad of x, None for the number)
        reg(y.grad_fn)
        y.sum().backward()
        return x.grad

    pre = lambda f: lambda n: n.register_prehook(f)
    post = lambda f: lambda n: n.register_hook(f)
    cases = [pre(lambda go: go[0]), pre(lambda go: [go[0]]), pre(lambda go: (go[0], go[0])),
             pre(lambda go: (go[0][:1],)), pre(lambda go: (go[0].double(),)), pre(lambda go: (3.0,)),
             pre(lambda go: None), pre(lambda go: (None,)),
             post(lambda gi, go: gi[0]), post(lambda gi, go: [gi[0], None]), post(lambda gi, go: (gi[0],)),
             post(lambda gi, go: (gi[0], gi[0])), post(lambda gi, go: (gi[0].double(), None)),
             post(lambda gi, go: (gi[0][:1], None)), post(lambda gi, go: ("g", None)),
             post(lambda gi, go: (None, None)), post(lambda gi, go: (gi[0] * 5, None))]
    return [attempt(lambda: run(c)) for c in cases]


def _accumulate_grad_node_hooks(T):
    # hooks on a leaf's AccumulateGrad node: the prehook sees (and may replace) the incoming
    # gradient; the post hook sees no grad_inputs
    log = []
    x = X(T)
    acc = (x * 2).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("pre", go[0].tolist())) or (go[0] + 1,))
    acc.register_hook(lambda gi, go: log.append(("post", len(gi), [g.tolist() for g in go])))
    x.register_hook(lambda g: log.append(("tensor", g.tolist())))
    (x * 2).sum().backward()
    return log, acc.name(), x.grad


def _backward_twice(T):
    # test_backward_twice_with_saved_values / _retained_graph_*: the second backward through a
    # freed graph with saved values raises RuntimeError naming retain_graph; hooks did run once
    log = []
    x = X(T)
    y = x * x
    y.grad_fn.register_prehook(lambda go: log.append("pre"))
    out = y.sum()
    out.backward()
    r = msg_has(lambda: out.backward(), "second time", "retain_graph=True")
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    r2 = msg_has(lambda: z.backward(), "second time")
    r3 = msg_has(lambda: T.autograd.grad(out, x), "second time")
    return log, r, r2, r3, x.grad


def _node_hooks_added_while_running(T):
    # a prehook registering another prehook (runs from the next backward) and a post hook (runs
    # now) on its own node; a post hook removing a hook; backward twice under detect_anomaly
    log = []
    x = X(T)
    y = x * 2
    hs = {}

    def pre(go):
        log.append("pre")
        hs["late"] = y.grad_fn.register_prehook(lambda go: log.append("late-pre"))
        if "post" not in hs:
            hs["post"] = y.grad_fn.register_hook(lambda gi, go: log.append("late-post"))

    def post(gi, go):
        log.append("post")
        hs["late"].remove()

    y.grad_fn.register_prehook(pre)
    y.grad_fn.register_hook(post)
    out = y.sum()
    out.backward(retain_graph=True)
    out.backward()
    with T.autograd.detect_anomaly():
        z = (x * x).sum()
        z.backward()
        log.append(text(lambda: z.backward()))
    return log


def test_node_hooks():
    """test_grad_fn_prehooks(_multiple_outputs, _remove_hooks), hooks on AccumulateGrad,
    Node hooks with retain_graph, bad returns, hooks added and removed during backward, backward
    twice (with and without anomaly mode)."""
    check([_node_prehook_multiple_outputs, _node_hooks_order_and_retain, _node_hook_replaces_grad_inputs,
           _node_hook_bad_returns, _accumulate_grad_node_hooks, _backward_twice,
           _node_hooks_added_while_running])


# ---- saved tensor hooks --------------------------------------------------------------------------

def _pack_unpack_counts(T):
    # test_unpack_hooks_exec_count / test_saved_tensors_hook_*: pack runs once per saved tensor
    # at record time, unpack once per use in backward (every backward of a retained graph)
    n = {"pack": 0, "unpack": 0}

    def pack(t):
        n["pack"] += 1
        return t

    def unpack(t):
        n["unpack"] += 1
        return t

    x = X(T)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * x
        z = y.exp()
        out = (z * 2).sum()
    packs = n["pack"]
    out.backward(retain_graph=True)
    u1 = n["unpack"]
    out.backward()
    return packs, u1, n["unpack"], x.grad


def _disable_saved_hooks(T):
    # test_disabling_saved_tensor_hooks(_nested): entering saved_tensors_hooks under
    # disable_saved_tensors_hooks raises RuntimeError with the given message; leaving restores
    g = T.autograd.graph
    msg = "Saved tensors hooks were disabled here"
    out = []
    with g.disable_saved_tensors_hooks(msg):
        out.append(msg_has(lambda: g.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__(), msg))
        with g.disable_saved_tensors_hooks("inner"):
            out.append(msg_has(lambda: g.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__(), "inner"))
        out.append(msg_has(lambda: g.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__(), msg))
    with g.saved_tensors_hooks(lambda t: t, lambda t: t):
        x = X(T)
        (x * x).sum().backward()
    out.append(x.grad)
    return out


def _pack_inplace_fails(T):
    # test_pack_hook_with_inplace_modification_should_fail
    def inc(t):
        t.add_(1)
        return t

    a = T.ones(2, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(inc, lambda t: t):
        r1 = msg_has(lambda: a * a, "pack hook")
    b = T.ones(2, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(inc, lambda t: t):
        r2 = attempt(lambda: b.clone().exp())
    return r1, r2, a


def _save_on_cpu(T):
    # test_graph_save_on_cpu: values and grads as without the hooks, saved outputs too
    x = T.tensor([0.5, 1.0], requires_grad=True)
    with T.autograd.graph.save_on_cpu():
        y = x * x
        z = y.exp()
        w = z.sin() * y
    w.sum().backward()
    return w, x.grad


def _custom_error_propagation(T):
    # test_saved_tensor_hooks_custom_error_propagation: errors of pack and unpack hooks
    # propagate with their own class
    class CustomError(Exception):
        pass

    def boom(t):
        raise CustomError("boom")

    x = X(T)
    with T.autograd.graph.saved_tensors_hooks(boom, lambda t: t):
        r1 = attempt(lambda: x * x)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, boom):
        y = x * x
    r2 = attempt(lambda: y.sum().backward())
    return r1, r2


def _custom_function_saved(T):
    # test_saved_tensor_hooks_custom_function_intermediates / test_custom_function_saved_tensors:
    # ctx.save_for_backward runs the pack hook for inputs and intermediates
    log = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y)
            return y * 2

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 2 * y

    x = X(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape))) or t,
                                              lambda t: log.append("unpack") or t):
        out = F.apply(x)
    out.sum().backward()
    return log, x.grad


def _double_backward_with_hooks(T):
    # test_default_saved_variable_hooks_double_backward: with create_graph the double backward
    # unpacks too
    n = [0, 0]
    x = T.tensor([1.0, 2.0], requires_grad=True)

    def pack(t):
        n[0] += 1
        return t * 1

    def unpack(t):
        n[1] += 1
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x ** 3
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
    return n, g, x.grad


def _raw_saved_register_hooks(T):
    # test_raw_saved_tensor_register_hooks-style: a second register_hooks raises; a raw saved
    # tensor of a node that backward released (held from before, or fetched after) is freed and
    # its register_hooks raises RuntimeError; non-callables are a TypeError
    x = X(T)
    y = x.exp()
    raw = y.grad_fn._raw_saved_result
    raw.register_hooks(lambda t: t, lambda t: t)
    out = [attempt(lambda: raw.register_hooks(lambda t: t, lambda t: t))]
    y.sum().backward()
    z = x.exp()
    held = z.grad_fn._raw_saved_result
    z.sum().backward()
    out.append(msg_has(lambda: held.register_hooks(lambda t: t, lambda t: t), "freed"))
    after = z.grad_fn._raw_saved_result
    out.append(type(after).__name__)
    out.append(msg_has(lambda: after.register_hooks(lambda t: t, lambda t: t), "freed"))
    out.append(attempt(lambda: (x * 1).exp().grad_fn._raw_saved_result.register_hooks(1, 2)))
    out.append(x.grad)
    return out


def test_saved_tensor_hooks():
    """test_unpack_hooks_exec_count, test_disabling_saved_tensor_hooks(_nested),
    test_pack_hook_with_inplace_modification_should_fail,
    test_graph_save_on_cpu, test_saved_tensor_hooks_custom_error_propagation,
    test_saved_tensor_hooks_custom_function_intermediates,
    test_default_saved_variable_hooks_double_backward, raw saved tensors' register_hooks."""
    check([_pack_unpack_counts, _disable_saved_hooks, _pack_inplace_fails, _save_on_cpu,
           _custom_error_propagation, _custom_function_saved, _double_backward_with_hooks,
           _raw_saved_register_hooks])


# ---- module hooks (test/nn/test_module_hooks.py) -----------------------------------------------

def _bw_hook_non_tensor_output(T):
    # test_bw_hook_warning_for_non_tensor_or_tuple: a module returning a dict gets its forward
    # hooks, no backward hooks, and one UserWarning
    counter = {"forward": 0, "backward": 0}

    class TestModule(T.nn.Module):
        def forward(self, d):
            return {"x": T.nn.functional.softmax(d["x"], dim=0)}

    def fw(*a):
        counter["forward"] += 1

    def bw(*a):
        counter["backward"] += 1

    x = T.ones(2, requires_grad=True)
    model = TestModule()
    model.register_forward_pre_hook(fw)
    model.register_forward_hook(fw)
    model.register_full_backward_pre_hook(bw)
    model.register_full_backward_hook(bw)
    model({"x": x})["x"].sum().backward()
    return counter, x.grad


def _always_call(T):
    # test_always_called_forward_hooks: always_call hooks run when forward (or a hook) raises;
    # the error propagates; ordinary forward hooks do not run
    log = []

    class Boom(T.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    m.register_forward_hook(lambda *a: log.append("plain"))
    m.register_forward_hook(lambda *a: log.append("always"), always_call=True)
    m.register_forward_hook(lambda m_, a, k, o: log.append(("kw", o)), always_call=True, with_kwargs=True)
    r = [attempt(lambda: m(T.ones(2)))]
    lin = T.nn.Linear(2, 2)
    lin.register_forward_hook(lambda *a: 1 / 0)
    lin.register_forward_hook(lambda *a: log.append("after"), always_call=True)
    r.append(attempt(lambda: lin(T.ones(2))))
    return log, r


def test_module_forward_and_backward_hooks():
    """TestModuleHooks: test_bw_hook_warning_for_non_tensor_or_tuple, always_call forward hooks
    (the ordering tests are ported in test_ported_round3.py)."""
    check([_bw_hook_non_tensor_output, _always_call])


# ---- state_dict hooks ----------------------------------------------------------------------------

def _load_pre_hooks(T):
    # test_load_state_dict_pre_hook / test_load_state_dict_module_pre_hook: with and without the
    # module argument, on the root and on a submodule (its prefix), bound methods included
    log = []
    m = T.nn.Linear(2, 2)
    sd = m.state_dict()
    m_load = T.nn.Linear(2, 2)
    m_load._register_load_state_dict_pre_hook(
        lambda sd_, prefix, meta, strict, missing, unexpected, errs: log.append(("plain", prefix, sorted(sd_), strict)))
    m_load.load_state_dict(sd)
    m_load._register_load_state_dict_pre_hook(
        lambda mod, sd_, prefix, *rest: log.append(("with_module", mod is m_load, prefix)), True)
    m_load.load_state_dict(sd, strict=False)

    class Wrap(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.mod = T.nn.Linear(2, 2)

    w = Wrap()
    w.mod._register_load_state_dict_pre_hook(
        lambda mod, sd_, prefix, meta, strict, missing, unexpected, errs:
        log.append(("sub", mod is w.mod, prefix, list(missing), list(unexpected), list(errs))), True)
    w.load_state_dict(w.state_dict())
    return log


def _state_dict_hooks(T):
    # register_state_dict_pre_hook / register_state_dict_post_hook: the pre hook sees
    # (module, prefix, keep_vars), the post hook the filled dict and may add to it; on a submodule
    log = []
    seq = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.Linear(2, 1))
    seq[1].register_state_dict_pre_hook(
        lambda m, prefix, keep_vars: log.append(("pre", m is seq[1], prefix, keep_vars)))

    def post(m, sd, prefix, local_metadata):
        log.append(("post", prefix, sorted(sd)))
        sd[prefix + "extra"] = T.zeros(1)

    seq[1].register_state_dict_post_hook(post)
    keys = sorted(seq.state_dict(keep_vars=True))
    h = seq.register_state_dict_post_hook(lambda m, sd, p, meta: log.append(("root", p)))
    seq.state_dict(prefix="top.")
    h.remove()
    seq.state_dict()
    return log, keys


def test_state_dict_hooks():
    """TestStateDictHooks: load_state_dict pre-hooks with and without the module, on
    submodules; state_dict pre/post hooks (load_state_dict post hooks: test_ported_round3.py)."""
    check([_load_pre_hooks, _state_dict_hooks])


# ---- global module hooks ---------------------------------------------------------------------------

def _globally(T, body):
    """Run ``body(T, register)``: ``register(name, hook)`` registers a global module hook that is
    removed afterwards, whatever happens."""
    handles = []

    def register(name, hook, **kw):
        h = getattr(T.nn.modules.module, name)(hook, **kw)
        handles.append(h)
        return h

    try:
        return body(T, register)
    finally:
        for h in handles:
            h.remove()


def _module_global_hooks(T):
    # test_module_global_hooks: counters of global forward/backward hooks over three modules,
    # retained graphs and removal
    def body(T, register):
        m1, m2, m3 = T.nn.Sigmoid(), T.nn.Sigmoid(), T.nn.Sigmoid()
        inp = T.ones(2, 2, requires_grad=True)
        c = {"f": 0, "b": 0}
        log = []

        def fw(inc):
            def h(mod, i, o):
                assert isinstance(i, tuple) and isinstance(mod, T.nn.Sigmoid)
                c["f"] += inc
            return h

        def bw(inc):
            def h(mod, gi, go):
                assert isinstance(gi, tuple) and isinstance(go, tuple)
                log.append(go[0].sum().item())
                c["b"] += inc
            return h

        t_fwd = register("register_module_forward_hook", fw(1))
        for m in (m1, m2, m3):
            m(inp)
        log.append(dict(c))
        t_bwd = register("register_module_backward_hook", bw(1))
        outs = [m(inp) for m in (m1, m2, m3)]
        outs[0].backward(T.ones(2, 2) * 2, retain_graph=True)
        outs[1].backward(T.ones(2, 2) * 2)
        outs[2].backward(T.ones(2, 2) * 2)
        outs[0].backward(T.ones(2, 2) * 2, retain_graph=True)
        log.append(dict(c))
        _two_more_hooks(T, lambda h: register("register_module_forward_hook", h),
                        lambda h: register("register_module_backward_hook", h), fw, bw, (m1, m2, m3), inp)
        log.append(dict(c))
        t_fwd.remove()
        t_bwd.remove()
        return log, inp.grad
    return _globally(T, body)


def _two_more_hooks(T, reg_fwd, reg_bwd, fw, bw, mods, inp):
    """The second half of test_module_global_hooks / TestModuleHookNN._test_hooks: a second
    forward hook and backward hook (counting 2) over three calls, then each removed in turn."""
    t2_fwd = reg_fwd(fw(2))
    for m in mods:
        m(inp)
    t2_bwd = reg_bwd(bw(2))
    mods[0](inp).backward(T.ones(2, 2) * 2)
    t2_bwd.remove()
    mods[1](inp).backward(T.ones(2, 2) * 2)
    t2_fwd.remove()
    mods[2](inp).backward(T.ones(2, 2) * 2)


def _global_invalid_outputs(T):
    # test_module_global_hook_invalid_outputs
    def body(T, register):
        inp = T.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
        out = []
        for bad in (lambda m, gi, go: gi[:-1], lambda m, gi, go: gi + (T.ones(2, 2),)):
            with register("register_module_backward_hook", bad):
                out.append(msg_has(lambda: T.nn.Sigmoid()(inp).sum().backward(), "got", "but expected"))
        return out
    return _globally(T, body)


def _global_writeable(T):
    # test_module_backward_global_hook_writeable / test_module_global_forward_preforward_hook_writeable;
    # a legacy backward hook holds its module weakly: once the module is gone, backward raises
    def body(T, register):
        inp = T.tensor([[0.5, -1.0], [2.0, -0.25]], requires_grad=True)
        h = register("register_module_backward_hook", lambda m, gi, go: tuple(g * 2 for g in gi))
        m = T.nn.Sigmoid()
        m(inp).backward(T.ones(2, 2))
        g1 = inp.grad.clone()
        dead = msg_has(lambda: T.nn.Sigmoid()(inp).backward(T.ones(2, 2)), "dead Module")
        h.remove()
        inp.grad = None
        register("register_module_forward_pre_hook", lambda m, i: T.nn.functional.relu(i[0]))
        register("register_module_forward_hook", lambda m, i, o: -o)
        out = T.nn.Sigmoid()(inp)
        out.backward(T.ones(2, 2) * 2, retain_graph=True)
        return g1, dead, out, inp.grad
    return _globally(T, body)


def _hooks_removable_while_running(T):
    # test_module_forward_preforward_hook_removable / test_module_forward_forward_hook_removable
    out = []
    for kind in ("register_forward_pre_hook", "register_forward_hook"):
        m = T.nn.Sigmoid()
        handles = {}

        def make(k):
            def hook(mod, *args):
                handles[k].remove()
                return args[-1]
            return hook

        handles[0] = getattr(m, kind)(make(0))
        handles[1] = getattr(m, kind)(make(1))
        n0 = (len(handles[0].hooks_dict_ref()), len(handles[1].hooks_dict_ref()))
        y = m(T.tensor([[0.5, -1.0], [2.0, 0.0]]))
        out.append((n0, y, handles[0].id in handles[0].hooks_dict_ref(), len(handles[1].hooks_dict_ref())))
    return out


def _global_and_local_order(T):
    # test_global_and_local_hooks_order: global hooks fire before the module's own
    def body(T, register):
        log = []
        m = T.nn.Sigmoid()
        register("register_module_forward_pre_hook", lambda mod, i: log.append("g_pre") or i)
        m.register_forward_pre_hook(lambda mod, i: log.append("l_pre") or i)
        register("register_module_forward_hook", lambda mod, i, o: log.append("g_fwd") or o)
        m.register_forward_hook(lambda mod, i, o: log.append("l_fwd") or o)
        register("register_module_backward_hook", lambda mod, gi, go: log.append("g_bwd") or gi)
        m.register_backward_hook(lambda mod, gi, go: log.append("l_bwd") or gi)
        m(T.ones(2, 2, requires_grad=True)).backward(T.ones(2, 2), retain_graph=True)
        return log
    return _globally(T, body)


def _registration_hooks(T):
    # register_module_buffer/parameter/module_registration_hook: global hooks see every
    # registration and may replace the value
    def body(T, register):
        log = []
        register("register_module_buffer_registration_hook",
                 lambda m, name, b: log.append(("buf", name)) or (None if b is None else b * 2))
        register("register_module_parameter_registration_hook", lambda m, name, p: log.append(("param", name)))
        register("register_module_module_registration_hook", lambda m, name, s: log.append(("mod", name)))
        m = T.nn.Module()
        m.register_buffer("b", T.ones(2))
        m.p = T.nn.Parameter(T.ones(1))
        m.sub = T.nn.Identity()
        m.register_buffer("none", None)
        return log, m.b
    return _globally(T, body)


def test_global_module_hooks():
    """TestModuleGlobalHooks: test_module_global_hooks, test_module_global_hook_invalid_outputs,
    test_module_backward_global_hook_writeable, test_module_global_forward_preforward_hook_writeable,
    test_module_forward_preforward_hook_removable, test_module_forward_forward_hook_removable,
    test_global_and_local_hooks_order, the registration hooks."""
    check([_module_global_hooks, _global_invalid_outputs, _global_writeable, _hooks_removable_while_running,
           _global_and_local_order, _registration_hooks])


# ---- TestModuleHookNN ----------------------------------------------------------------------------

def _test_hooks(register_name):
    # TestModuleHookNN._test_hooks: counters across retained backward, two hooks and removal
    def f(T):
        module = T.nn.Sigmoid()
        inp = T.ones(2, 2, requires_grad=True)
        c = {"f": 0, "b": 0}
        log = []

        def fw(inc):
            def h(mod, i, o):
                assert mod is module
                c["f"] += inc
            return h

        def bw(inc):
            def h(mod, *grads):
                assert mod is module
                log.append(grads[-1][0].sum().item())
                c["b"] += inc
            return h

        t_fwd = module.register_forward_hook(fw(1))
        module(inp)
        module(inp)
        t_bwd = getattr(module, register_name)(bw(1))
        out = module(inp)
        out.backward(T.ones(2, 2) * 2, retain_graph=True)
        out.backward(T.ones(2, 2) * 2, retain_graph=True)
        log.append(dict(c))
        _two_more_hooks(T, module.register_forward_hook, getattr(module, register_name), fw, bw,
                        (module,) * 3, inp)
        t_fwd.remove()
        t_bwd.remove()
        log.append(dict(c))
        return log, inp.grad
    return f


def _hook_cpp(T):
    # test_hook_cpp: a full backward hook on BatchNorm1d sees one grad_input and one grad_output
    log = []
    bn = T.nn.BatchNorm1d(2)
    bn.register_full_backward_hook(lambda m, gi, go: log.append((len(gi), len(go), m is bn, gi[0])))
    out = bn(T.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], requires_grad=True))
    (out * T.tensor([[2.0, 2.0], [-1.0, -1.0], [1.0, 4.0]])).sum().backward()
    return log


def _backward_hooks_interaction(T):
    # test_backward_hooks_interaction: the full backward hook sees the grad_output the pre-hook made
    log = []
    m = T.nn.Sigmoid()
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0.5,))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(go[0]) or go)
    t = T.ones(1, 2, requires_grad=True)
    m(t).sum().backward()
    return log, t.grad


def _hook_invalid_outputs(T):
    # test_hook_invalid_outputs: legacy backward hooks, full backward hooks and full backward
    # pre-hooks returning the wrong number of grads (the messages name the hook)
    inp = T.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
    out = []
    m = T.nn.Sigmoid()

    def bw_fail1(mod, gi, go):
        return gi[:-1]

    def bw_fail2(mod, gi, go):
        return gi + (T.ones(2, 2),)

    def pre_fail1(mod, go):
        return ()

    def pre_fail2(mod, go):
        return go + (T.ones(2, 2),)

    for reg, bad in (("register_backward_hook", bw_fail1), ("register_backward_hook", bw_fail2),
                     ("register_full_backward_hook", bw_fail2), ("register_full_backward_pre_hook", pre_fail1),
                     ("register_full_backward_pre_hook", pre_fail2)):
        with getattr(m, reg)(bad):
            out.append(text(lambda: m(inp).sum().backward()))
    return out


def _hook_extra_input(T):
    # test_hook_extra_input: a non-tensor input gets None in grad_input; an output that is not a
    # tensor gets None in grad_output
    log = []

    class MyModule(T.nn.Module):
        def forward(self, non_tensor, tensor):
            return tensor.clone(), non_tensor

    inp = T.tensor([1.0, 2.0], requires_grad=True)
    mod = MyModule()
    mod.register_full_backward_hook(lambda m, gi, go: log.append([None if g is None else g for g in gi + go]))
    out, _ = mod(True, inp)
    out.sum().backward()
    return log


def _hook_non_full_warning(T):
    # test_hook_non_full_warning: the legacy register_backward_hook warns about a list input, a
    # list output, outputs from different nodes and a forward with several nodes
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    out = []

    def run(fwd, *args):
        M = type("M", (T.nn.Module,), {"forward": fwd})
        m = M()
        m.register_backward_hook(lambda *x: None)
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(*args)
        out.append(sorted({str(x.message)[:40] for x in w if x.category is UserWarning}))

    run(lambda self, l: (l[0].clone(), l[1].clone()), [a, b])
    run(lambda self, x, y: [x.clone(), y.clone()], a, b)
    run(lambda self, x, y: (x.clone(), y.clone()), a, b)
    run(lambda self, x: x.clone().clone(), a)
    return out


def _hook_backward_size(T):
    # test_hook_backward_size: grad_input / grad_output shapes of a module with several ops
    log = []

    class MyModule(T.nn.Module):
        def forward(self, a1, a2):
            tmp = a1.sum() * a2
            tmp = tmp + a2.sum() * a1.sum()
            return tmp.sum().view(1).expand(3).contiguous()

    m = MyModule()
    with m.register_full_backward_hook(
            lambda mod, gi, go: log.append(([tuple(g.shape) for g in gi], [tuple(g.shape) for g in go]))):
        m(T.ones(2, 2, requires_grad=True), T.ones(3, requires_grad=True)).sum().backward()
    return log


def _hook_backward_writeable(T):
    # test_hook_backward_writeable / test_hook_forward_preforward_writable
    inp = T.tensor([[0.5, -1.0], [2.0, -0.25]], requires_grad=True)
    m = T.nn.Sigmoid()
    m.register_backward_hook(lambda mod, gi, go: tuple(g * 2 for g in gi))
    m(inp).backward(T.ones(2, 2))
    g1 = inp.grad.clone()
    inp.grad = None
    m2 = T.nn.Sigmoid()
    m2.register_forward_pre_hook(lambda mod, i: T.nn.functional.relu(i[0]))
    m2.register_forward_hook(lambda mod, i, o: -o)
    out = m2(inp)
    out.backward(T.ones(2, 2) * 2)
    return g1, out, inp.grad


def test_module_hook_nn():
    """TestModuleHookNN: test_hooks (legacy, full and pre backward hooks), test_hook_cpp,
    test_backward_hooks_interaction, test_hook_invalid_outputs, test_hook_extra_input,
    test_hook_non_full_warning, test_hook_backward_size, test_hook_backward_writeable,
    test_hook_forward_preforward_writable."""
    check([_test_hooks("register_backward_hook"), _test_hooks("register_full_backward_hook"),
           _test_hooks("register_full_backward_pre_hook"), _hook_cpp, _backward_hooks_interaction,
           _hook_invalid_outputs, _hook_extra_input,
           _hook_non_full_warning, _hook_backward_size, _hook_backward_writeable])


# ---- error messages and edge cases -----------------------------------------------------------------

def _messages(T):
    # the words of the errors of backward twice (test_backward_twice_*), of a freed saved tensor,
    # of hooks on tensors that cannot take them and of disabled saved tensor hooks
    x = X(T)
    y = (x * x).sum()
    y.backward()
    y2 = x * x
    y2.sum().backward()
    out = [text(lambda: y.backward()), text(lambda: y2.grad_fn._saved_self),
           text(lambda: T.ones(2).register_hook(lambda g: g)),
           text(lambda: (x * 2).register_post_accumulate_grad_hook(lambda t: None)),
           text(lambda: T.ones(2).register_post_accumulate_grad_hook(lambda t: None)),
           text(lambda: T.ones(2).retain_grad())]
    with T.autograd.graph.disable_saved_tensors_hooks("no hooks in this region"):
        out.append(text(lambda: T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()))
    return out


def _saved_hooks_grad_modes(T):
    # pack hooks run with grad mode off on the tensor saved (input or output); unpack hooks in
    # backward's mode (on under create_graph)
    x = X(T)
    log = []

    def pack(t):
        log.append(("pack", t.requires_grad, T.is_grad_enabled(), t is x))
        return t

    def unpack(t):
        log.append(("unpack", T.is_grad_enabled()))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).exp().sum()
    y.backward(retain_graph=True)
    T.autograd.grad(y, x, create_graph=True)
    return log


def _full_hooks_edge_cases(T):
    # full backward hooks: a None return for grad_input, a module returning its input, a module
    # called twice before one backward, a module with a keyword tensor (not in grad_input)
    out = []
    m = T.nn.Linear(2, 2, bias=False)
    with T.no_grad():
        m.weight.copy_(T.tensor([[1.0, 2.0], [3.0, 4.0]]))
    m.register_full_backward_hook(lambda mod, gi, go: (None,))
    x = T.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    out += [x.grad, m.weight.grad]

    class Id(T.nn.Module):
        def forward(self, v):
            return v

    log = []
    idm = Id()
    idm.register_full_backward_hook(lambda mod, gi, go: log.append(("id", gi[0], go[0])))
    x = T.ones(2, requires_grad=True)
    (idm(x) * 3).sum().backward()
    out.append(x.grad)
    m2 = T.nn.Linear(2, 2, bias=False)
    with T.no_grad():
        m2.weight.copy_(T.tensor([[1.0, 2.0], [3.0, 4.0]]))
    m2.register_full_backward_hook(lambda mod, gi, go: log.append(("twice", gi[0], go[0])))
    x = T.ones(1, 2, requires_grad=True)
    (m2(x).sum() + m2(x * 2).sum() * 10).backward()

    class Kw(T.nn.Module):
        def forward(self, v, *, w):
            return v * w

    kw = Kw()
    kw.register_full_backward_hook(lambda mod, gi, go: log.append(("kw", len(gi), gi[0], len(go))))
    v, w = T.ones(2, requires_grad=True), T.tensor([2.0, 3.0], requires_grad=True)
    kw(v, w=w).sum().backward()
    out += [v.grad, w.grad]
    return out, log


def _global_full_and_kwargs_hooks(T):
    # register_module_full_backward_(pre_)hook fire for every module; a global forward hook with
    # kwargs sees them; a global always_call hook runs when forward raises
    def body(T, register):
        log = []
        register("register_module_full_backward_pre_hook", lambda m, go: log.append(("gpre", type(m).__name__)))
        register("register_module_full_backward_hook", lambda m, gi, go: log.append(("gfull", type(m).__name__)))
        seq = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.Tanh())
        seq(T.ones(1, 2, requires_grad=True)).sum().backward()

        class K(T.nn.Module):
            def forward(self, v, s=1):
                return v * s

        class B(T.nn.Module):
            def forward(self, v):
                raise KeyError("v")

        register("register_module_forward_hook", lambda m, a, k, o: log.append(("kw", sorted(k))), with_kwargs=True)
        register("register_module_forward_hook", lambda m, a, o: log.append("always"), always_call=True)
        K()(T.ones(1), s=2)
        log.append(attempt(lambda: B()(T.ones(1))))
        return log
    return _globally(T, body)


def _full_hooks_shared_tensors(T):
    # full backward hooks when one tensor is passed twice, returned twice, or when backward's
    # inputs= stops short of the module's input (the pre-hook runs, the hook does not)
    log = []
    glist = lambda gs: [None if g is None else g for g in gs]

    class Twice(T.nn.Module):
        def forward(self, a, b):
            return a * b

    class Dup(T.nn.Module):
        def forward(self, a):
            y = a * 2
            return y, y

    tw, dup = Twice(), Dup()
    tw.register_full_backward_hook(lambda mod, gi, go: log.append(("twice", glist(gi))))
    dup.register_full_backward_hook(lambda mod, gi, go: log.append(("dup", glist(gi + go))))
    x = X(T)
    tw(x, x).sum().backward()
    o1, o2 = dup(x)
    (o1 * 3 + o2).sum().backward()
    m = T.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("lin", [g is None for g in gi])))
    m.register_full_backward_pre_hook(lambda mod, go: log.append("lin-pre"))
    xi = T.ones(1, 2, requires_grad=True)
    m(xi).sum().backward(inputs=[m.weight])
    return log, x.grad, o1 is o2, xi.grad, m.weight.grad


def test_messages_and_edge_cases():
    """The error messages of backward twice / freed saved tensors / bad hook registrations, saved
    tensor hooks' grad modes, full backward hook edge cases, global full backward and kwargs hooks."""
    check([_messages, _saved_hooks_grad_modes, _full_hooks_edge_cases, _full_hooks_shared_tensors,
           _global_full_and_kwargs_hooks])


@pytest.mark.xfail(strict=True, reason="an unpack hook returning a tensor of another shape than the saved one: torch "
                   "applies its hand-written derivative formula to whatever comes back (MulBackward0 broadcasts "
                   "grad * other[:1]); tracegrad's backward is the VJP of the forward at the saved shapes "
                   "(DESIGN 2.1) and raises RuntimeError for mismatched shapes")
def test_unpack_hook_changing_shape_is_used_as_returned():
    def f(T):
        x = X(T)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
            y = x * x
        y.sum().backward()
        return x.grad
    check([f])
