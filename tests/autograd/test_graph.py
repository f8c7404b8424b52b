"""Parity: requires_grad propagation, is_leaf, grad_fn names and graph shape (as strings),
AccumulateGrad ``.variable``, ``Node.name()``, ``_saved_*`` values, grad modes, detach/.data."""
import pytest

from _ag import edges, err, graph, programs, rnd, run_both, run_table, table_cases, tensor


def p_propagation(torch, log):
    a = tensor(torch, rnd((2, 3), 0), requires_grad=True)
    b = tensor(torch, rnd((2, 3), 1))
    for name, t in [("a", a), ("b", b), ("a+b", a + b), ("b*b", b * b), ("a*b", a * b),
                    ("a.sum()", a.sum()), ("b.exp()", b.exp()), ("a[0]", a[0]),
                    ("a.t()", a.t()), ("a.detach()", a.detach())]:
        log(name, (t.requires_grad, t.is_leaf, graph(t)))
    c = torch.ones(2, 3)
    log("c.requires_grad_()", c.requires_grad_() is c)
    log("c after", (c.requires_grad, c.is_leaf, c.grad_fn))
    d = (a * 2)
    log("non-leaf requires_grad_(False)", err(lambda: d.requires_grad_(False)))
    log("int requires_grad", err(lambda: torch.tensor([1, 2]).requires_grad_()))
    log("int tensor(requires_grad)", err(lambda: torch.tensor([1, 2], requires_grad=True)))


def _x(t):
    return tensor(t, rnd((3, 4), 0), requires_grad=True)


def _w(t):
    return tensor(t, rnd((4, 2), 1), requires_grad=True)


GRAPH_CASES = {
    "add": lambda t: _x(t) + _x(t), "add scalar": lambda t: _x(t) + 1,
    "sub scalar": lambda t: _x(t) - 1.5, "rsub": lambda t: 1.5 - _x(t),
    "mul": lambda t: _x(t) * _x(t), "mul scalar": lambda t: _x(t) * 2,
    "div scalar": lambda t: _x(t) / 3, "rdiv": lambda t: 3 / _x(t), "neg": lambda t: -_x(t),
    "pow": lambda t: _x(t) ** 2, "rpow": lambda t: 2 ** _x(t), "exp": lambda t: _x(t).exp(),
    "log": lambda t: _x(t).abs().log(), "sin": lambda t: _x(t).sin(),
    "tanh": lambda t: _x(t).tanh(), "sigmoid": lambda t: _x(t).sigmoid(),
    "relu": lambda t: _x(t).relu(), "abs": lambda t: _x(t).abs(),
    "sqrt": lambda t: _x(t).abs().sqrt(), "sum": lambda t: _x(t).sum(),
    "sum dim": lambda t: _x(t).sum(1), "mean": lambda t: _x(t).mean(),
    "mean dim": lambda t: _x(t).mean(0), "amax": lambda t: _x(t).amax(1),
    "mm": lambda t: _x(t).mm(_w(t)), "matmul": lambda t: _x(t) @ _w(t),
    "matmul 1d": lambda t: _x(t)[0] @ _x(t)[1], "t": lambda t: _x(t).t(),
    "transpose": lambda t: _x(t).transpose(0, 1), "view": lambda t: _x(t).view(12),
    "reshape": lambda t: _x(t).reshape(4, 3), "unsqueeze": lambda t: _x(t).unsqueeze(0),
    "squeeze": lambda t: _x(t).unsqueeze(0).squeeze(0),
    "expand": lambda t: _x(t)[:, :1].expand(3, 4), "select": lambda t: _x(t)[0],
    "slice": lambda t: _x(t)[1:], "clone": lambda t: _x(t).clone(),
    "permute": lambda t: _x(t).permute(1, 0), "cat": lambda t: t.cat([_x(t), _x(t)]),
    "stack": lambda t: t.stack([_x(t), _x(t)]), "max": lambda t: _x(t).max(),
    "where": lambda t: t.where(_x(t) > 0, _x(t), _x(t) * 2),
    "mul mixed leaf/const": lambda t: _x(t) * tensor(t, rnd((3, 4), 3)),
    "to float32": lambda t: _x(t).float(), "flatten": lambda t: _x(t).flatten(),
    "index tensor": lambda t: _x(t)[t.tensor([0, 2])], "masked": lambda t: _x(t)[_x(t) > 0],
}


def test_grad_fn_names_and_edges():
    run_table({k: (lambda t, f=f: graph(f(t))) for k, f in GRAPH_CASES.items()})


def p_next_functions(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    c = tensor(torch, rnd((3,), 1))
    y = x * c
    log("graph", graph(y))
    log("edges", edges(y))
    acc = y.grad_fn.next_functions[0][0]
    log("AccumulateGrad.variable is x", acc.variable is x)
    log("y.grad_fn.name()", y.grad_fn.name())
    z = (y + x).sum()
    log("z graph", graph(z))
    # the same AccumulateGrad object is shared by every use of x
    a1 = z.grad_fn.next_functions[0][0].next_functions[1][0]
    log("shared accumulate", a1 is acc)
    m = x.unsqueeze(1) @ x.unsqueeze(0)
    log("outer", graph(m))
    u, v = x.unbind(0)[:2]
    log("unbind output_nr", (edges(u * v)))
    mx = x.max(0)
    log("max(dim) values graph", graph(mx.values))
    log("indices requires_grad", mx.indices.requires_grad)


def p_saved(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = tensor(torch, rnd((3,), 1), requires_grad=True)
    m = x * y
    log("mul _saved_self", m.grad_fn._saved_self)
    log("mul _saved_other", m.grad_fn._saved_other)
    log("_saved_self is x", m.grad_fn._saved_self is x)  # torch: a fresh Tensor object
    e = x.exp()
    log("exp _saved_result", e.grad_fn._saved_result)
    log("_saved_result equal e", bool((e.grad_fn._saved_result == e).all()))
    p = x ** 3
    log("pow _saved_self", p.grad_fn._saved_self)
    s = x.sin()
    log("sin _saved_self", s.grad_fn._saved_self)
    t = x.tanh()
    log("tanh _saved_result", t.grad_fn._saved_result)
    log("no attribute", err(lambda: m.grad_fn._saved_nothing))
    (m.sum() + e.sum()).backward()
    log("after backward _saved_self", err(lambda: m.grad_fn._saved_self))


def p_grad_modes(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    log("enabled", torch.is_grad_enabled())
    with torch.no_grad():
        log("no_grad", ((x * 2).requires_grad, torch.is_grad_enabled()))
        with torch.enable_grad():
            log("enable inside no", ((x * 2).requires_grad, graph(x * x)))
            with torch.no_grad():
                log("no inside enable inside no", (x * 2).requires_grad)
            log("back to enable", torch.is_grad_enabled())
        log("back to no", torch.is_grad_enabled())
        with torch.set_grad_enabled(True):
            log("set True in no_grad", (x * 2).requires_grad)
    log("restored", torch.is_grad_enabled())
    torch.set_grad_enabled(False)
    log("set_grad_enabled as function", ((x * 2).requires_grad, torch.is_grad_enabled()))
    torch.set_grad_enabled(True)
    log("set back", torch.is_grad_enabled())

    @torch.no_grad()
    def f(t):
        return t * 2, torch.is_grad_enabled()

    @torch.enable_grad()
    def g(t):
        return t * 2

    log("no_grad decorator", (f(x)[0].requires_grad, f(x)[1]))
    with torch.no_grad():
        log("enable_grad decorator under no_grad", g(x).requires_grad)
    log("decorator restores", torch.is_grad_enabled())

    with torch.inference_mode():
        y = x * 2
        log("inference inside", (torch.is_inference_mode_enabled(), torch.is_grad_enabled(),
                                 y.requires_grad))
    log("inference after", (torch.is_inference_mode_enabled(), y.requires_grad))

    @torch.inference_mode()
    def h(t):
        return t + 1
    log("inference decorator", h(x).requires_grad)

    # inference_mode(func) and inference_mode(mode=func) both decorate func (TestAutogradInferenceMode
    # .test_inference_mode_decorator); a bool given by name is the mode
    def k(t):
        return (torch.is_inference_mode_enabled(), (t * t).requires_grad)
    log("inference_mode(func)", torch.inference_mode(k)(x))
    log("inference_mode(mode=func)", torch.inference_mode(mode=k)(x))
    log("inference_mode(mode=False)", torch.inference_mode(mode=False)(k)(x))
    # resize_ is refused for a tensor that requires grad, except inside inference_mode, where
    # torch's check (in its autograd kernel) does not run
    with torch.inference_mode():
        c = torch.ones(1, 2, 3, requires_grad=True)
        c.resize_(1, 2)
        r = torch.ones(2, 3, requires_grad=True)
        r.resize_(3)
    log("resize_ in inference_mode", (tuple(c.shape), c.requires_grad, tuple(r.shape), r.requires_grad))
    log("resize_ outside", err(lambda: torch.ones(2, requires_grad=True).resize_(1)))

    # exception inside the context restores the mode
    try:
        with torch.no_grad():
            raise ValueError("x")
    except ValueError:
        pass
    log("restored after exception", torch.is_grad_enabled())
    # no_grad does not change requires_grad of leaves, results have no grad_fn
    with torch.no_grad():
        z = x + 1
    log("z", (z.requires_grad, z.grad_fn, z.is_leaf))


def p_detach_data(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    d = y.detach()
    log("detach", (d.requires_grad, d.is_leaf, d.grad_fn))
    d[0] = 100.0
    log("detach shares storage", y)
    log("versions after detach write", (y._version, d._version))
    dd = x.data
    log(".data", (dd.requires_grad, dd.is_leaf))
    # set_data refuses a tensor of another layout (TestAutograd.test_set_data_tensorimpl_type)
    sp = torch.sparse_coo_tensor(torch.zeros([1, 1]), torch.ones([1]))

    def set_data(t, v):
        t.data = v
    log(".data = sparse", err(lambda: set_data(torch.randn(1, 2), sp)))
    log("sparse.data = dense", err(lambda: set_data(sp, torch.randn(1, 2))))
    v0 = x._version
    dd.mul_(2)
    log(".data write seen by x", x)
    log(".data doesn't bump x version", x._version == v0)
    x2 = tensor(torch, rnd((3,), 1), requires_grad=True)
    z = x2 * 3
    z.detach_()
    log("detach_", (z.requires_grad, z.grad_fn, z.is_leaf))
    w = tensor(torch, rnd((3,), 2))
    w.requires_grad_()
    log("requires_grad_()", (w.requires_grad, w.is_leaf))
    w.requires_grad_(False)
    log("requires_grad_(False)", w.requires_grad)
    w.requires_grad = True
    log("setter", (w.requires_grad, graph(w * w)))
    # assigning .data replaces the value, keeps the leaf
    x3 = tensor(torch, rnd((3,), 3), requires_grad=True)
    x3.data = tensor(torch, rnd((3,), 4))
    log("data assign", (x3, x3.requires_grad, x3.is_leaf))
    (x3 * x3).sum().backward()
    log("grad after data assign", x3.grad)


def p_addmm(torch, log):
    x = tensor(torch, rnd((3, 4), 0), requires_grad=True)
    w = tensor(torch, rnd((4, 2), 1), requires_grad=True)
    b = tensor(torch, rnd((2,), 2), requires_grad=True)
    y = torch.addmm(b, x, w)
    log("addmm", (y, graph(y)))
    y.sum().backward()
    log("grads", (x.grad, w.grad, b.grad))


def p_node_name(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * 2
    log("MulBackward0.name()", y.grad_fn.name())
    log("AccumulateGrad.name()", y.grad_fn.next_functions[0][0].name())
    b = x.clone()
    b[0] = 1.0
    log("CopySlices.name()", b.grad_fn.name())


def p_saved_exponent(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    p = x ** 3
    log("pow _saved_exponent", p.grad_fn._saved_exponent)
    q = x.pow(x)
    log("pow tensor _saved_exponent", q.grad_fn._saved_exponent)


def p_bare_no_grad_decorator(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)

    @torch.no_grad
    def f2(t):
        return t * 3

    @torch.enable_grad
    def g2(t):
        return t * 3
    log("bare no_grad", f2(x).requires_grad)
    with torch.no_grad():
        log("bare enable_grad", g2(x).requires_grad)


def p_saved_scalar(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    c = x * 2.0
    log("mul by constant _saved_other", c.grad_fn._saved_other)


def p_is_inference(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    log("is_inference", (y.is_inference(), x.is_inference()))
    with torch.inference_mode():
        with torch.inference_mode(False):
            log("inference_mode(False) inside", (torch.is_inference_mode_enabled(),
                                                 (x * 2).requires_grad))
    log("inference tensor in autograd", err(lambda: (y * x).sum().backward()))


def p_grad_mode_generators_hooks(torch, log):
    @torch.no_grad()
    def gen():
        for _ in range(2):
            yield torch.is_grad_enabled()

    log("no_grad generator", (list(gen()), torch.is_grad_enabled()))
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = x * x
    y.register_hook(lambda g: log("grad mode inside hook", torch.is_grad_enabled()))
    y.sum().backward(retain_graph=True)
    y.sum().backward(create_graph=True)
    log("after backward", torch.is_grad_enabled())


def p_grad_mode_thread_local(torch, log):
    import threading
    seen = []
    with torch.no_grad():
        th = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        th.start()
        th.join()
    log("grad mode is thread-local", seen)


def p_numpy_of_requires_grad(torch, log):
    import numpy as np
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    log("numpy()", err(lambda: x.numpy()))
    log("non-leaf numpy()", err(lambda: (x * x).numpy()))
    log("detach().numpy()", x.detach().numpy())
    log("tolist", x.tolist())
    log("np.asarray", err(lambda: np.asarray(x)))
    with torch.no_grad():
        log("numpy() under no_grad", err(lambda: x.numpy()))


PROGRAMS = [p_numpy_of_requires_grad, p_grad_mode_thread_local, p_grad_mode_generators_hooks, p_saved_scalar, p_is_inference, p_addmm, p_node_name, p_saved_exponent, p_bare_no_grad_decorator, p_propagation, p_next_functions, p_saved, p_grad_modes,
            p_detach_data]


# known core bugs: program name -> root cause
XFAIL = {
}


@pytest.mark.parametrize("program", programs(PROGRAMS, XFAIL))
def test_parity(program):
    run_both(program)


def _xs(t, s=(3, 4), seed=0):
    return tensor(t, rnd(s, seed), requires_grad=True)


SAVED_CASES = {
    "mm _saved_self": lambda t: _xs(t).mm(_xs(t, (4, 2), 1)).grad_fn._saved_self,
    "mm _saved_mat2": lambda t: _xs(t).mm(_xs(t, (4, 2), 1)).grad_fn._saved_mat2,
    "softmax _saved_result": lambda t: _xs(t).softmax(1).grad_fn._saved_result,
    "softmax _saved_dim": lambda t: _xs(t).softmax(1).grad_fn._saved_dim,
    "max dim _saved_indices": lambda t: _xs(t).max(1).values.grad_fn._saved_indices,
    "max dim _saved_dim": lambda t: _xs(t).max(1).values.grad_fn._saved_dim,
    "sum dim _saved_dim": lambda t: list(_xs(t).sum(1).grad_fn._saved_dim),
    "sum keepdim": lambda t: _xs(t).sum(1, keepdim=True).grad_fn._saved_keepdim,
    "div _saved_other": lambda t: (_xs(t) / _xs(t, seed=2)).grad_fn._saved_other,
    "sigmoid _saved_result": lambda t: _xs(t).sigmoid().grad_fn._saved_result,
    "relu _saved_result": lambda t: _xs(t).relu().grad_fn._saved_result,
    "pow _saved_exponent": lambda t: (_xs(t) ** 2.5).grad_fn._saved_exponent,
    "transpose _saved_dim0": lambda t: _xs(t).transpose(0, 1).grad_fn._saved_dim0,
    "select _saved_index": lambda t: _xs(t)[2].grad_fn._saved_index,
    "mean _saved_self_sym_numel": lambda t: _xs(t).mean().grad_fn._saved_self_sym_numel,
    "index _saved_indices": lambda t: _xs(t)[t.tensor([0, 2])].grad_fn._saved_indices,
    "cat _saved_dim": lambda t: t.cat([_xs(t), _xs(t)], 1).grad_fn._saved_dim,
    "addmm _saved_mat1": lambda t: t.addmm(_xs(t, (2,)), _xs(t), _xs(t, (4, 2), 3)).grad_fn._saved_mat1,
    "addmm _saved_alpha": lambda t: t.addmm(_xs(t, (2,)), _xs(t), _xs(t, (4, 2), 3)).grad_fn._saved_alpha,
    "mul _saved_self requires_grad": lambda t: (_xs(t) * _xs(t, seed=4)).grad_fn._saved_self.requires_grad,
    "exp _saved_result grad_fn": lambda t: type(_xs(t).exp().grad_fn._saved_result.grad_fn).__name__,
    "unknown attribute": lambda t: _xs(t).exp().grad_fn._saved_nonexistent,
}


SAVED_XFAIL = {}


@pytest.mark.parametrize("case", table_cases(SAVED_CASES, SAVED_XFAIL))
def test_saved_attributes(case):
    """``grad_fn._saved_<name>`` for a spread of ops: same values (and errors) as torch."""
    run_table(dict([case]))
