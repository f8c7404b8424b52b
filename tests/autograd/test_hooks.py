"""Parity: tensor hooks, retain_grad, post-accumulate-grad hooks, Node pre/post hooks, and the
full firing order of a graph mixing all of them (logged and compared with torch)."""
import pytest

from _ag import err, err_msg, programs, rnd, run_both, tensor


def p_tensor_hooks(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    h1 = y.register_hook(lambda g: log("h1", g))
    y.register_hook(lambda g: g * 10)        # replaces the gradient
    y.register_hook(lambda g: log("h3 sees replaced", g))
    (y * y).sum().backward(retain_graph=True)
    log("x.grad", x.grad)
    h1.remove()
    x.grad = None
    (y * y).sum().backward()
    log("x.grad after remove", x.grad)
    # leaf hook
    w = tensor(torch, rnd((3,), 1), requires_grad=True)
    hw = w.register_hook(lambda g: g + 1)
    (w * w).sum().backward()
    log("leaf hook replaces grad", w.grad)
    hw.remove()
    w.grad = None
    (w * w).sum().backward()
    log("leaf hook removed", w.grad)
    log("hook on no-grad tensor", err(lambda: torch.ones(2).register_hook(lambda g: g)))
    # handle as context manager
    z = tensor(torch, rnd((3,), 2), requires_grad=True)
    with z.register_hook(lambda g: g * 0):
        (z * 3).sum().backward()
    log("inside with", z.grad)
    (z * 3).sum().backward()
    log("after with", z.grad)


def p_hook_wrong_shape(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    log("wrong shape", err(lambda: y.sum().backward()))
    w = tensor(torch, rnd((3,), 1), requires_grad=True)
    w.register_hook(lambda g: torch.ones(4, dtype=torch.float64))
    log("leaf wrong shape", err(lambda: (w * 2).sum().backward()))
    u = tensor(torch, rnd((3,), 2), requires_grad=True)
    e = u.exp()
    e.grad_fn.register_hook(lambda gi, go: (gi[0].sum(),))
    log("node post-hook wrong shape", err(lambda: e.sum().backward()))
    e4 = u.tanh()
    e4.register_hook(lambda g: 3.0)
    log("tensor hook returns a float", err(lambda: e4.sum().backward()))


def p_hook_for_grad_inputs(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: print("y hook", tuple(g.shape)) or g * 3)
    x.register_hook(lambda g: print("x hook") or g + 1)
    out = (y * y).sum()
    gy, gx = torch.autograd.grad(out, [y, x])
    log("autograd.grad with hooks", (gy, gx, x.grad))


def p_hook_for_grad_input_only(torch, log):
    # y's node is not needed (nothing below y is asked for): its tensor hooks run before the
    # gradient is captured, so autograd.grad returns the hooked value
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: print("y hook") or g * 3)
    out = (y * y).sum()
    (gy,) = torch.autograd.grad(out, y)
    log("hooked capture", gy)
    (gx,) = torch.autograd.grad((x * x).sum(), x)
    log("leaf", gx)


def p_retain_grad(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x.exp()
    z = y * 3
    log("retains_grad before", (x.retains_grad, y.retains_grad))
    y.retain_grad()
    y.retain_grad()   # idempotent
    x.retain_grad()   # no-op on a leaf
    log("retains_grad after", (x.retains_grad, y.retains_grad, z.retains_grad))
    z.sum().backward(retain_graph=True)
    log("y.grad", y.grad)
    log("z.grad is None", z.grad is None)
    z.sum().backward()
    log("y.grad accumulates", y.grad)
    # retain_grad sees what the tensor hooks returned
    a = tensor(torch, rnd((3,), 1), requires_grad=True)
    b = a * 2
    b.retain_grad()
    b.register_hook(lambda g: g * 100)
    (b * b).sum().backward()
    log("retain_grad after hook replacement", (b.grad, a.grad))
    log("retain_grad on no-grad", err(lambda: torch.ones(2).retain_grad()))


def p_post_accumulate(torch, log):
    w = tensor(torch, rnd((3,), 0), requires_grad=True)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()) or print("post acc", p is w))
    (w * w).sum().backward()
    (w * 3).sum().backward()
    log("seen", seen)
    h.remove()
    (w * 3).sum().backward()
    log("removed", len(seen))
    y = w * 2
    log("non-leaf", err(lambda: y.register_post_accumulate_grad_hook(lambda p: None)))
    log("no-grad", err(lambda: torch.ones(2).register_post_accumulate_grad_hook(lambda p: None)))
    # optimizer-in-backward pattern
    p = tensor(torch, rnd((3,), 1), requires_grad=True)

    def step(t):
        with torch.no_grad():
            t -= 0.1 * t.grad
        t.grad = None
    p.register_post_accumulate_grad_hook(step)
    (p * p).sum().backward()
    log("param updated in hook", (p, p.grad))


def p_node_hooks(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x.exp()
    z = y * 2
    node = y.grad_fn
    node.register_prehook(lambda gos: print("pre", len(gos), tuple(gos[0].shape)))
    hpost = node.register_hook(lambda gis, gos: print("post", len(gis), len(gos)))
    node.register_prehook(lambda gos: (gos[0] * 2,))   # replaces grad_outputs
    z.sum().backward(retain_graph=True)
    log("x.grad pre-hook replaced", x.grad)
    hpost.remove()
    node.register_hook(lambda gis, gos: (gis[0] * 0 + 1,))   # replaces grad_inputs
    x.grad = None
    z.sum().backward()
    log("x.grad post-hook replaced", x.grad)
    # hooks on AccumulateGrad
    w = tensor(torch, rnd((3,), 1), requires_grad=True)
    acc = (w * 1.5).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda gos: print("acc pre") or None)
    acc.register_hook(lambda gis, gos: print("acc post", gis, gos[0] is not None))
    (w * 1.5).sum().backward()
    log("w.grad", w.grad)
    # metadata dict
    m = (w * w).grad_fn
    m.metadata["k"] = 1
    log("metadata", m.metadata)


def p_firing_order(torch, log):
    def say(s):
        def h(*a):
            print(s)
        return h
    a = tensor(torch, rnd((3,), 0), requires_grad=True)
    b = tensor(torch, rnd((3,), 1), requires_grad=True)
    c = a * b
    d = c.exp()
    e = d.sum()
    # on the non-leaf c
    c.register_hook(say("c tensor hook 1"))
    c.retain_grad()
    c.register_hook(say("c tensor hook 2"))
    c.grad_fn.register_prehook(say("c node pre-hook"))
    c.grad_fn.register_hook(say("c node post-hook"))
    d.register_hook(say("d tensor hook"))
    d.grad_fn.register_prehook(say("d node pre-hook"))
    d.grad_fn.register_hook(say("d node post-hook"))
    e.register_hook(say("e tensor hook"))
    # on leaves
    for name, t in (("a", a), ("b", b)):
        t.register_hook(say(f"{name} tensor hook"))
        t.register_post_accumulate_grad_hook(say(f"{name} post-accumulate"))
        acc = c.grad_fn.next_functions[0 if name == "a" else 1][0]
        acc.register_prehook(say(f"{name} AccumulateGrad pre-hook"))
        acc.register_hook(say(f"{name} AccumulateGrad post-hook"))
    e.backward()
    log("grads", (a.grad, b.grad, c.grad))


def p_order_two_branches(torch, log):
    # which branch runs first: torch runs the most recently created node first
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    p = x.sin()
    q = x.cos()
    p.register_hook(lambda g: print("p"))
    q.register_hook(lambda g: print("q"))
    x.register_hook(lambda g: print("x"))
    (q * p).sum().backward()
    r = x.tanh()
    s = x.exp()
    r.register_hook(lambda g: print("r"))
    s.register_hook(lambda g: print("s"))
    (r + s).sum().backward()
    log("x.grad", x.grad)


def p_hook_sees_summed_grad(torch, log):
    # a tensor used by several consumers: its hook fires once, with the summed gradient
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: log("y hook", g))
    x.register_hook(lambda g: log("x hook", g))
    (y * y + y.sin() + y).sum().backward()
    log("x.grad", x.grad)


def p_hooks_in_double_backward(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x ** 3
    y.register_hook(lambda g: print("y hook, requires_grad:", g.requires_grad) or g * 2)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log("g", (g, g.requires_grad))
    x.register_hook(lambda gg: print("x hook in second pass") or gg)
    g.sum().backward()
    log("x.grad", x.grad)


def p_custom_function_node_hooks(torch, log):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            print("Double.backward")
            return g * 2

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = Double.apply(x)
    y.grad_fn.register_prehook(lambda go: print("pre") or None)
    y.grad_fn.register_hook(lambda gi, go: print("post") or (gi[0] * 10,))
    y.register_hook(lambda g: print("tensor hook") or g)
    y.sum().backward()
    log("x.grad", x.grad)


def p_node_hook_wrong_count(torch, log):
    u = tensor(torch, rnd((3,), 2), requires_grad=True)
    e2 = u.sin()
    e2.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    log("node pre-hook wrong count", err(lambda: e2.sum().backward()))
    e3 = u.cos()
    e3.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    log("node post-hook wrong count", err(lambda: e3.sum().backward()))


def p_hooks_with_backward_inputs(torch, log):
    a = tensor(torch, rnd((3,), 0), requires_grad=True)
    b = tensor(torch, rnd((3,), 1), requires_grad=True)
    h = a * b
    h.register_hook(lambda g: print("h hook"))
    a.register_hook(lambda g: print("a hook"))
    b.register_hook(lambda g: print("b hook"))
    a.register_post_accumulate_grad_hook(lambda t: print("a post-acc"))
    b.register_post_accumulate_grad_hook(lambda t: print("b post-acc"))
    out = (h.exp() * b).sum()
    print("-- inputs=[a]")
    out.backward(inputs=[a], retain_graph=True)
    print("-- inputs=[b]")
    out.backward(inputs=[b], retain_graph=True)
    print("-- autograd.grad wrt h")
    torch.autograd.grad(out, h, retain_graph=True)
    print("-- autograd.grad wrt a")
    torch.autograd.grad(out, a)
    log("grads", (a.grad, b.grad))


def p_hooks_see_none_for_missing_grads(torch, log):
    # torch calls a tensor hook with None when its output got no gradient this pass: a piece of
    # unbind/chunk when another piece is backpropagated, a leaf whose Function returned None
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    pieces = x.unbind()
    pieces[0].register_hook(lambda g: log("unbind piece 0 hook", g))
    pieces[1].backward()
    log("x.grad", x.grad)

    class NoGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v * 2

        @staticmethod
        def backward(ctx, g):
            return None

    w = tensor(torch, rnd((2,), 1), requires_grad=True)
    w.register_hook(lambda g: log("leaf hook", g))
    NoGrad.apply(w).sum().backward()
    log("w.grad", w.grad)
    v = w.clone()
    v.register_hook(lambda g: torch.ones(2))
    log("replace None", err(lambda: NoGrad.apply(v).sum().backward()))


def p_private_hook_attributes(torch, log):
    # Tensor._grad_fn / _backward_hooks: readable, never deletable (torch's RuntimeError); an
    # assigned dict replaces a leaf's hooks, while on a non-leaf it is only recorded
    from collections import OrderedDict
    x = tensor(torch, rnd((2,), 0), requires_grad=True)
    y = x * 2
    log("_grad_fn is grad_fn", (x._grad_fn is None, y._grad_fn is y.grad_fn))
    log("leaf _backward_hooks", x._backward_hooks)
    for name in ("_grad_fn", "_backward_hooks"):
        log("del " + name, err_msg(lambda: delattr(y, name)))
    y._backward_hooks = OrderedDict(a=lambda g: g * 3)
    y.sum().backward()
    log("non-leaf assigned dict", (list(y._backward_hooks), x.grad))
    x._backward_hooks = OrderedDict(a=lambda g: g * 0)
    x.grad = None
    (x * 2).sum().backward()
    log("leaf assigned dict", x.grad)


PROGRAMS = [p_private_hook_attributes, p_hooks_see_none_for_missing_grads, p_hooks_with_backward_inputs, p_node_hook_wrong_count, p_hook_sees_summed_grad, p_hooks_in_double_backward, p_custom_function_node_hooks, p_tensor_hooks, p_hook_wrong_shape, p_hook_for_grad_inputs, p_hook_for_grad_input_only, p_retain_grad,
            p_post_accumulate, p_node_hooks, p_firing_order, p_order_two_branches]


# known core bugs: program name -> root cause (see /tmp/autograd_bugs.md history)
XFAIL = {}


@pytest.mark.parametrize("program", programs(PROGRAMS, XFAIL))
def test_parity(program):
    run_both(program)
