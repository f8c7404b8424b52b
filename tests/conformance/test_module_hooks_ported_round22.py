"""Round 22 of PyTorch's own tests, ported: test/nn/test_module_hooks.py. TestModuleHooks
(test_bw_hook_warning_for_non_tensor_or_tuple, test_always_called_forward_hooks),
TestStateDictHooks (load_state_dict pre-hooks, state_dict pre/post hooks), TestModuleGlobalHooks
(test_module_global_hooks, test_module_global_hook_invalid_outputs,
test_module_backward_global_hook_writeable, test_module_global_forward_preforward_hook_writeable,
test_module_forward_*_hook_removable, test_global_and_local_hooks_order, registration hooks,
global full backward and kwargs hooks) and TestModuleHookNN (test_hooks, test_hook_cpp,
test_backward_hooks_interaction, test_hook_invalid_outputs, test_hook_extra_input,
test_hook_non_full_warning, test_hook_backward_size, test_hook_backward_writeable), plus full
backward hook edge cases. The ordering/kwargs/requires_grad tests are ported in
test_ported_round3.py; here: legacy hooks of a dead module, the exact messages, full logs.

Each check is a program run with torch 2.13 (the oracle) and with tracegrad: the log it returns
(values, dtypes, shapes, hook firing order, counters, exception classes of the steps that raise)
and the warning classes must be equal. Tiny shapes: (2,), (2, 2), Linear(2, 2)."""
import pytest
from _observe_helpers import attempt, make_check, msg_has, norm, text

torch = pytest.importorskip("torch")

check = make_check(norm)


def X(T, n=2):
    return T.tensor([1.5, -2.0, 3.0][:n], requires_grad=True)


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


# ---- edge cases ----------------------------------------------------------------------------------

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


def test_full_and_global_hook_edge_cases():
    """Full backward hook edge cases, shared tensors, global full backward and kwargs hooks."""
    check([_full_hooks_edge_cases, _full_hooks_shared_tensors, _global_full_and_kwargs_hooks])
