"""Parity: saved_tensors_hooks (pack once per saved tensor in torch's order, unpack at backward
and at every ``_saved_*`` access), save_on_cpu, and anomaly detection naming the node."""
import warnings

import pytest

from _ag import err, err_msg, programs, rnd, run_both, tensor


def p_pack_unpack(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    w = tensor(torch, rnd((3,), 1), requires_grad=True)

    def pack(t):
        print("pack", tuple(t.shape), t.requires_grad)
        return t * 1 if not t.requires_grad else t

    def unpack(p):
        print("unpack", tuple(p.shape))
        return p

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * w          # saves self and other
        z = y.exp()        # saves result
        s = z.sin()        # saves self
        p = x ** 2         # saves self
        a = x + w          # saves nothing
        out = s.sum() + p.sum() + a.sum()
    print("forward done")
    log("_saved_self access", y.grad_fn._saved_self)
    log("_saved_other access", y.grad_fn._saved_other)
    print("accessed")
    out.backward()
    log("grads", (x.grad, w.grad))


def p_pack_order_and_nesting(torch, log):
    x = tensor(torch, rnd((2, 2), 0), requires_grad=True)
    packed = []

    def outer_pack(t):
        packed.append("outer")
        return t

    def inner_pack(t):
        packed.append("inner")
        return ("wrapped", t)

    def inner_unpack(p):
        return p[1]

    with torch.autograd.graph.saved_tensors_hooks(outer_pack, lambda t: t):
        y = x * x
        with torch.autograd.graph.saved_tensors_hooks(inner_pack, inner_unpack):
            z = y.tanh()
            m = z @ x       # saves both
        k = m.sigmoid()
    log("packed", packed)
    k.sum().backward()
    log("grad", x.grad)


def p_unpack_wrong_type(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = x.sin()
    log("unpack returns int", err(lambda: y.sum().backward()))


def p_pack_no_version_check(torch, log):
    # with pack hooks that copy, an in-place write after saving does not trip the check
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda p: p):
        y = x * 1
        z = y.sin()
    y.add_(1)
    z.sum().backward()
    log("grad uses the packed copy", x.grad)


def p_save_on_cpu(torch, log):
    x = tensor(torch, rnd((4, 3), 0), requires_grad=True)
    w = tensor(torch, rnd((3, 2), 1), requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        h = (x @ w).tanh()
        loss = (h * h).sum()
    loss.backward()
    log("grads", (x.grad, w.grad))
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        y = x.exp()
    log("saved result", y.grad_fn._saved_result)


def p_anomaly(torch, log):
    x = tensor(torch, [0.0, 1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            y = x.sqrt()          # d/dx sqrt at 0 is inf; times 0 gives nan
            z = (y * 0).sum()
            cls, msg = err_msg(lambda: z.backward())
            log("sqrt(0)*0", cls)
            log("message names SqrtBackward0", "SqrtBackward0" in msg)
            # no nan: fine
            (x * 2).sum().backward()
            log("clean backward", x.grad)
    x.grad = None
    (x.sqrt() * 0).sum().backward()
    log("without anomaly: nan grad", x.grad)
    torch.autograd.set_detect_anomaly(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls, msg = err_msg(lambda: (x.sqrt() * 0).sum().backward())
        log("set_detect_anomaly raises", (cls, "SqrtBackward0" in msg))
    finally:
        torch.autograd.set_detect_anomaly(False)
    with torch.autograd.detect_anomaly(check_nan=False):
        x.grad = None
        (x.sqrt() * 0).sum().backward()
        log("check_nan=False", x.grad)
    x.grad = None
    (x.sqrt() * 0).sum().backward()
    log("off again", x.grad)


def p_anomaly_flags(torch, log):
    log("default", (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    with torch.autograd.detect_anomaly():
        log("inside", torch.is_anomaly_enabled())
    with torch.autograd.detect_anomaly(check_nan=False):
        log("check_nan=False", (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()))
    with torch.autograd.set_detect_anomaly(True):
        log("set_detect_anomaly as context", torch.is_anomaly_enabled())
    log("restored", torch.is_anomaly_enabled())


def p_pack_hooks_custom_function(torch, log):
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            print("backward got saved")
            return g * y, g * x

    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    y = tensor(torch, rnd((3,), 1))

    def pack(t):
        print("pack", tuple(t.shape), t.requires_grad)
        return t.detach() * 2

    def unpack(p):
        print("unpack")
        return p / 2

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = Sq.apply(x, y)
    out.sum().backward()
    log("grads", x.grad)


def p_pack_hook_grad_mode(torch, log):
    x = tensor(torch, rnd((3,), 0), requires_grad=True)

    def pack(t):
        log("grad mode in pack", torch.is_grad_enabled())
        return t

    def unpack(p):
        log("grad mode in unpack", torch.is_grad_enabled())
        return p

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    y.sum().backward(retain_graph=True)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    log("g", g)


def p_anomaly_warning(torch, log):
    x = tensor(torch, [0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            z = (x.sqrt() * 0).sum()
            log("raises", err(lambda: z.backward()))
    msgs = [str(m.message) for m in w]
    log("warns 'Error detected in SqrtBackward0'", any("Error detected in SqrtBackward0" in m for m in msgs))
    log("names the forward line", any("x.sqrt()" in m for m in msgs))


def _nan_twice_functions(torch):
    # Outer's backward applies Inner, whose backward returns a NaN (a double backward)
    class Inner(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    class Outer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Inner.apply(g.expand(x.shape) * x)

    return Outer


def p_anomaly_parent_chain(torch, log):
    # a node made by another node's backward (create_graph) under anomaly mode reports that
    # node too ("Previous calculation was induced by"); without forward information it says so
    outer = _nan_twice_functions(torch)
    for anomaly_in_forward in (True, False):
        x = tensor(torch, rnd((3,), 0), requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with torch.autograd.set_detect_anomaly(anomaly_in_forward):
                (g,) = torch.autograd.grad(outer.apply(x), (x,), create_graph=True)
            with torch.autograd.detect_anomaly():
                log("raises", err_msg(lambda: g.sum().backward())[1].splitlines()[0])
        msgs = [str(m.message) for m in w if "Anomaly Detection has been enabled" not in str(m.message)]
        log("warnings", [("no forward info" if "No forward pass information" in m else "induced by " + m.split(
            "induced by ")[1].split(".")[0] if "induced by" in m else m.split(".")[0],
            "Inner.apply" in m, "outer.apply" in m) for m in msgs])


def p_anomaly_warning_as_error(torch, log):
    # a warnings filter set to "error": the report goes to stderr and the engine's own error
    # propagates, as torch's warning handler does while an error is in flight
    import contextlib
    import io
    import sys
    x = tensor(torch, rnd((3,), 0), requires_grad=True)
    stderr = io.StringIO()
    with warnings.catch_warnings(record=True) as w:
        with torch.autograd.detect_anomaly():
            warnings.simplefilter("error")
            with contextlib.redirect_stderr(stderr):
                y = x + 1
                z = y ** 2
                y += 1
                log("raises", err_msg(lambda: torch.autograd.grad(z.sum(), x))[0])
    log("recorded", len(w))
    log("stderr names the node", "Error detected in PowBackward0" in stderr.getvalue())
    log("stderr has the warning class", "UserWarning" in stderr.getvalue())


PROGRAMS = [p_anomaly_parent_chain, p_anomaly_warning_as_error, p_anomaly_warning, p_pack_hooks_custom_function, p_pack_hook_grad_mode, p_anomaly_flags, p_pack_unpack, p_pack_order_and_nesting, p_unpack_wrong_type, p_pack_no_version_check,
            p_save_on_cpu, p_anomaly]


# known core bugs: program name -> root cause (see /tmp/autograd_bugs.md history)
XFAIL = {}


@pytest.mark.parametrize("program", programs(PROGRAMS, XFAIL))
def test_parity(program):
    run_both(program)


def test_raw_saved_tensor_register_hooks():
    # the saved tensors hooks tutorial: hooks registered on one saved tensor pack it at once,
    # unpack at backward (the gradient flows through the unpacked value), at most one pair,
    # none after the graph was freed; saved_tensors_hooks(...).__enter__ returns None
    def program(torch, log):
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x.pow(2)
        calls = []
        y.grad_fn._raw_saved_self.register_hooks(lambda t: calls.append("pack") or t * 2,
                                                 lambda t: calls.append("unpack") or t)
        log("packed at once", list(calls))
        log("saved self", y.grad_fn._saved_self)
        for hooks in ((lambda t: t, lambda t: t), (1, lambda t: t)):
            try:
                y.grad_fn._raw_saved_self.register_hooks(*hooks)
            except Exception as e:  # noqa: BLE001 -- the class is the observation
                log("again", type(e).__name__)
        y.sum().backward()
        log("grad", x.grad)
        log("calls", calls)
        try:
            y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as e:
            log("freed", "freed" in str(e))
        z = x * x
        try:
            z.grad_fn._raw_saved_self.register_hooks(lambda t: t.add_(1), lambda t: t)
        except RuntimeError as e:
            log("in place pack", "in place" in str(e))
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t) as h:
            log("enter returns", h)
    run_both(program)


def test_anomaly_parent_is_the_node_of_this_thread():
    # torch's current evaluating node is thread-local: while another thread's backward is inside
    # a node, a node this thread makes under anomaly mode has no parent, so an error in it reports
    # that node alone (no "Previous calculation was induced by" from the other thread's graph)
    import threading
    import tracegrad as torch
    inside, release = threading.Event(), threading.Event()

    class Slow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            inside.set()
            release.wait(30)
            return g

    a = torch.ones(2, requires_grad=True)
    worker = threading.Thread(target=lambda: Slow.apply(a).sum().backward())
    worker.start()
    try:
        assert inside.wait(30)
        x = torch.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with torch.autograd.detect_anomaly():
                y = x * 2
                y.register_hook(lambda g: g / 0 * 0)   # NaN: the anomaly check fails in MulBackward0
                with pytest.raises(RuntimeError, match="MulBackward0"):
                    y.sum().backward()
    finally:
        release.set()
        worker.join(30)
    msgs = [str(m.message) for m in w if "Anomaly Detection has been enabled" not in str(m.message)]
    assert len(msgs) == 1 and msgs[0].startswith("Error detected in MulBackward0"), msgs
