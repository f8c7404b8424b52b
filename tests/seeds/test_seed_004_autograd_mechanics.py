"""Seed 004 (004_636d28ede0026937.txt): requires_grad propagation, no_grad, the
computation graph (grad_fn, is_leaf, retain_grad), in-place operations and version
counters, leaf in-place rules and the .data / detach() / no_grad ways around them,
.data vs detach, tensor -> numpy.

Each ``program(torch, log)`` keeps the note's code; randn is replaced by
deterministic inputs and shapes are shrunk; CUDA is replaced by CPU.  Where the
note shows an older torch (``a[:] = 0`` on a leaf), today's torch is the oracle.
"""

import warnings

from parity import grad_fn_name, init_params, randn, run_both


# ---------------------------------------------------------------- 1. requires_grad

def program_requires_grad_propagation(torch, log):
    nn = torch.nn
    input = randn(torch, (2, 3, 10, 12), seed=0)
    print(input.requires_grad)

    net = nn.Sequential(nn.Conv2d(3, 16, 3, 1),
                        nn.Conv2d(16, 32, 3, 1))
    init_params(torch, net, seed=1, scale=0.1)
    for param in net.named_parameters():
        print(param[0], param[1].requires_grad)

    output = net(input)
    print(output.requires_grad)
    log("output", output)
    log("output.grad_fn", grad_fn_name(output))

    # freeze: set the parameters' requires_grad to False
    for param in net.named_parameters():
        param[1].requires_grad = False
        print(param[0], param[1].requires_grad)

    output = net(input)
    print(output.requires_grad)
    log("frozen output.grad_fn", output.grad_fn)
    log("frozen output.is_leaf", output.is_leaf)

    # any input requiring grad -> the output requires grad
    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([2.0])
    log("a + b", (a + b).requires_grad)
    log("b + b", (b + b).requires_grad)
    log("requires_grad_(False) on net", [p.requires_grad for p in net.requires_grad_(True).parameters()])


def test_requires_grad_propagation():
    run_both(program_requires_grad_propagation)


# ---------------------------------------------------------------- 2. no_grad

def program_no_grad(torch, log):
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    print(x.requires_grad)
    print((x ** 2).requires_grad)

    with torch.no_grad():
        print((x ** 2).requires_grad)
        log("is_grad_enabled inside", torch.is_grad_enabled())
        with torch.enable_grad():
            log("enable_grad inside no_grad", (x ** 2).requires_grad)

    print((x ** 2).requires_grad)

    @torch.no_grad()
    def f(t):
        return t * 2
    log("decorator", f(x).requires_grad)
    with torch.set_grad_enabled(False):
        log("set_grad_enabled(False)", (x * 2).requires_grad)
    log("restored", torch.is_grad_enabled())
    with torch.inference_mode():
        y = x * 2
    log("inference_mode requires_grad", y.requires_grad)
    # results of no_grad are leaves; in-place on them is allowed
    with torch.no_grad():
        z = x * 3
    log("no_grad result is_leaf", z.is_leaf)
    z.add_(1)
    log("z", z)


def test_no_grad():
    run_both(program_no_grad)


# ---------------------------------------------------------------- 3. computation graph

def program_computation_graph(torch, log):
    input = torch.ones([2, 2], requires_grad=False)
    w1 = torch.tensor(2.0, requires_grad=True)
    w2 = torch.tensor(3.0, requires_grad=True)
    w3 = torch.tensor(4.0, requires_grad=True)

    l1 = input * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    loss = l4.mean()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(w1.data, w1.grad, w1.grad_fn)
        # tensor(2.) None None
        print(l1.data, l1.grad, type(l1.grad_fn).__name__)
        print(loss.data, loss.grad, type(loss.grad_fn).__name__)
    log("grad_fns", [grad_fn_name(t) for t in (w1, l1, l2, l3, l4, loss)])
    log("is_leaf", [t.is_leaf for t in (input, w1, w2, w3, l1, l2, l3, l4, loss)])
    log("requires_grad", [t.requires_grad for t in (input, w1, l1, loss)])
    log("next_functions of l4", [(grad_fn_name_node(n), i) for n, i in l4.grad_fn.next_functions])
    log("next_functions of l1", [(grad_fn_name_node(n), i) for n, i in l1.grad_fn.next_functions])
    log("AccumulateGrad.variable is w1",
        l1.grad_fn.next_functions[1][0].variable is w1)

    l1.retain_grad()
    l4.retain_grad()
    loss.retain_grad()

    loss.backward()

    print(loss.grad)
    print(l4.grad)
    print(l1.grad)
    log("w grads", [w1.grad, w2.grad, w3.grad])
    log("input.grad", input.grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log("l2.grad (not retained)", l2.grad)
    log("warning", [c.category.__name__ for c in caught])


def grad_fn_name_node(n):
    return None if n is None else type(n).__name__


def test_computation_graph():
    run_both(program_computation_graph)


# ---------------------------------------------------------------- 4. in-place and _version

def program_inplace_version_error(torch, log):
    a = torch.tensor([1.0, 3.0], requires_grad=True)
    b = a + 2
    print(b._version)  # 0

    loss = (b * b).mean()
    b[0] = 1000.0
    print(b._version)  # 1
    log("b.grad_fn after setitem", grad_fn_name(b))

    try:
        loss.backward()
        log("backward", "ok")
    except Exception as e:
        log("backward", type(e).__name__)
    log("a.grad", a.grad)


def test_inplace_version_error():
    run_both(program_inplace_version_error)


def program_inplace_version_no_error(torch, log):
    # "反向传播求导的时候如果没用到 b 的值 ... 不会报错"
    a = torch.tensor([1.0, 3.0], requires_grad=True)
    b = a + 2
    loss = (b + 1).mean()    # AddBackward0 saves nothing
    b[0] = 1000.0
    loss.backward()
    log("a.grad", a.grad)
    log("loss", loss)

    # each in-place op bumps the counter; views share it
    c = torch.zeros(4)
    versions = [c._version]
    c.add_(1)
    versions.append(c._version)
    c.mul_(2)
    versions.append(c._version)
    v = c[1:3]
    v.fill_(5)
    versions.append(c._version)
    versions.append(v._version)
    c += 1
    versions.append(c._version)
    c = c + 1   # out-of-place: a new tensor
    versions.append(c._version)
    log("versions", versions)
    d = torch.zeros(2)
    dd = d.detach()
    dd.add_(1)
    log("detach shares the counter", [d._version, dd._version])
    e = torch.zeros(2)
    ed = e.data
    ed.add_(1)
    log(".data does not share the counter", [e._version, ed._version])
    log("e sees the data change", e)


def test_inplace_version_no_error():
    run_both(program_inplace_version_no_error)


def program_inplace_saved_output(torch, log):
    # exp saves its output: modifying the output breaks backward; sigmoid too
    for name in ("exp", "sigmoid", "tanh"):
        a = torch.tensor([0.5, 1.0], requires_grad=True)
        out = getattr(a, name)()
        out.mul_(2)
        try:
            out.sum().backward()
            log(name, "ok")
        except Exception as e:
            log(name, type(e).__name__)
    # relu saves its output as well; modifying the input of sin breaks it
    a = torch.tensor([0.5, 1.0], requires_grad=True)
    b = a * 1
    s = b.sin()
    b.add_(1)
    try:
        s.sum().backward()
        log("sin input modified", "ok")
    except Exception as e:
        log("sin input modified", type(e).__name__)
    # in-place op whose backward does not need the old value: fine
    a = torch.tensor([0.5, 1.0], requires_grad=True)
    b = a * 3
    b.add_(1)
    b.mul_(2)
    log("b.grad_fn after in-place chain", grad_fn_name(b))
    b.sum().backward()
    log("a.grad", a.grad)


def test_inplace_saved_output():
    run_both(program_inplace_saved_output)


def program_leaf_inplace_rules(torch, log):
    a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    print(a, a.is_leaf)
    # (the note shows `a[:] = 0` succeeding with grad_fn=<CopySlices>; today's
    # torch rejects in-place writes to a leaf that requires grad)
    try:
        a[:] = 0
        log("a[:] = 0", "ok")
        print(a, a.is_leaf)
    except Exception as e:
        log("a[:] = 0", type(e).__name__)

    a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    try:
        a.add_(10.)
        log("a.add_(10.)", "ok")
    except Exception as e:
        log("a.add_(10.)", type(e).__name__)
    try:
        a += 10.
        log("a += 10.", "ok")
    except Exception as e:
        log("a += 10.", type(e).__name__)
    log("a unchanged", a)
    log("a._version", a._version)

    # a view of a leaf: also rejected
    try:
        a[1:].mul_(2)
        log("view of leaf in-place", "ok")
    except Exception as e:
        log("view of leaf in-place", type(e).__name__)

    # CopySlices: writing into a non-leaf through indexing
    # (`b[:] = 0` on a whole tensor gives torch's internal FillBackward3; a partial
    # slice shows the documented CopySlices)
    b = torch.tensor([10., 5., 2., 3.], requires_grad=True) * 1
    b[1:] = 0
    print(b, b.is_leaf)
    log("b.grad_fn", grad_fn_name(b))
    c = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    d = c * 1
    d[1:3] = c[0:2] * 2
    log("d", d)
    log("d.grad_fn", grad_fn_name(d))
    d.sum().backward()
    log("c.grad through CopySlices", c.grad)
    # a non-leaf that had an in-place op is still a non-leaf
    log("d.is_leaf", d.is_leaf)


def test_leaf_inplace_rules():
    run_both(program_leaf_inplace_rules)


def program_leaf_reassign_data(torch, log):
    # 方法一: a.data.fill_ / a.detach().fill_
    for how in ("data", "detach"):
        a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
        print(a, a.is_leaf)
        ident = id(a)
        if how == "data":
            a.data.fill_(10.)
        else:
            a.detach().fill_(10.)
        print(a, a.is_leaf)
        log(how + ": same object", id(a) == ident)
        log(how + ": version", a._version)

        loss = (a * a).mean()
        loss.backward()
        print(a.grad)
        log(how + ": a.grad", a.grad)

    # 方法二: no_grad
    a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    print(a, a.is_leaf)
    with torch.no_grad():
        a[:] = 10.
    print(a, a.is_leaf)
    log("no_grad: grad_fn", a.grad_fn)
    log("no_grad: version", a._version)
    loss = (a * a).mean()
    loss.backward()
    print(a.grad)

    # modifying after use: detach() is tracked (error), .data is not (wrong grad)
    a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    loss = (a * a).mean()
    a.detach().fill_(1.)
    try:
        loss.backward()
        log("detach().fill_ after use", "ok")
    except Exception as e:
        log("detach().fill_ after use", type(e).__name__)
    a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
    loss = (a * a).mean()
    a.data.fill_(1.)
    loss.backward()
    log(".data.fill_ after use: silently uses new values", a.grad)


def test_leaf_reassign_data():
    run_both(program_leaf_reassign_data)


# ---------------------------------------------------------------- .data vs detach

def program_data_vs_detach(torch, log):
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    c = out.detach()
    c.zero_()
    log("out after detach().zero_()", out)
    try:
        out.sum().backward()
        log("backward after detach().zero_()", "ok")
    except Exception as e:
        log("backward after detach().zero_()", type(e).__name__)

    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    c = out.data
    c.zero_()
    log("out after .data.zero_()", out)
    out.sum().backward()
    log("a.grad (wrong, silently)", a.grad)

    # both are leaves that do not require grad, and share memory
    t = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    for name, u in (("detach", t.detach()), ("data", t.data)):
        log(name + " requires_grad/is_leaf/grad_fn", [u.requires_grad, u.is_leaf, u.grad_fn])
    # setting .data swaps the tensor's content
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    p.data = torch.tensor([5.0, 6.0, 7.0])
    log("after p.data = ...", p)
    log("still requires_grad leaf", [p.requires_grad, p.is_leaf])


def test_data_vs_detach():
    run_both(program_data_vs_detach)


# ---------------------------------------------------------------- 5. CPU / numpy

def program_to_numpy(torch, log):
    x = randn(torch, (3, 3), seed=2)
    x_ = x.cpu().numpy()
    log("x_", x_)
    y = randn(torch, (3, 3), seed=3, requires_grad=True)
    try:
        y.numpy()
        log("numpy() on requires_grad", "ok")
    except Exception as e:
        log("numpy() on requires_grad", type(e).__name__)
    y_ = y.cpu().detach().numpy()
    log("y_", y_)
    y_2 = y.detach().cpu().numpy()
    log("same", bool((y_ == y_2).all()))
    log("cpu() is self on cpu", x.cpu() is x)
    log("device", str(y.device))
    log("to('cpu') is self", x.to("cpu") is x)
    log("tolist", y.detach().tolist())
    log("item", torch.tensor([2.5]).item())
    try:
        torch.tensor([1.0, 2.0]).item()
        log("item on 2 elements", "ok")
    except Exception as e:
        log("item on 2 elements", type(e).__name__)


def test_to_numpy():
    run_both(program_to_numpy)
