"""Round 22 of PyTorch's own tests, ported: test/test_autograd.py (TestAutograd) on hooks:
tensor hooks (test_hooks, test_hook_with_no_name, test_hook_edge_case_when_called_with_grad,
test_tensor_hooks_inplace*, test_retain_grad_inplace*, test_retains_grad_*,
test_tensor_hook_in_grad_of_grad, wrong hook returns), post accumulate grad hooks
(test_post_accumulate_grad_hook_*, test_accumulate_grad_posthooks_*), Node pre-hooks and hooks
(test_grad_fn_prehooks*, hooks + retain_graph, hooks added while backward runs, what a Node hook
may return), backward twice without retain_graph (the messages, with and without anomaly mode),
and saved tensor hooks (test_saved_tensors_hook_*, test_disabling_saved_tensor_hooks*,
test_pack_hook_with_inplace_modification_should_fail, test_graph_save_on_cpu,
test_saved_tensor_hooks_custom_error_propagation, test_unpack_hooks_exec_count, raw saved
tensors' register_hooks). The nn.Module half is test_module_hooks_ported_round22.py.
Many of these torch tests have an earlier port (test_ported_round3.py, test_autograd_*_ported*.py);
the programs here check what those left out: the checks on what Node hooks return, unpack counts
in a double backward, freed raw saved tensors, full logs of values and hook order.

Each check is a program run with torch 2.13 (the oracle) and with tracegrad: the log it returns
(values, dtypes, shapes, hook firing order, counters, exception classes of the steps that raise)
and the warning classes must be equal. Tiny shapes: (2,), (2, 2)."""
import pytest
from _observe_helpers import attempt, make_check, msg_has, norm, text

torch = pytest.importorskip("torch")

check = make_check(norm)


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


# ---- messages ----------------------------------------------------------------------------------

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


def test_messages_and_saved_hook_modes():
    """The error messages of backward twice / freed saved tensors / bad hook registrations, and
    saved tensor hooks' grad modes."""
    check([_messages, _saved_hooks_grad_modes])


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
