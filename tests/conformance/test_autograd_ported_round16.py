"""Round 16 of PyTorch's own tests, ported: test/test_autograd.py's saved-tensor-hook section
(TestAutograd.test_disable_saved_tensors_hooks, test_saved_tensor_hooks_extra_enter_during_bw,
test_default_saved_tensors_hooks_*, test_pack_hook_with_inplace_modification_should_fail's
neighbours): ``disable_saved_tensors_hooks`` nests, works as a decorator and refuses to start
while ``saved_tensors_hooks`` are active (then leaves everything as it was), and the hooks run
once per saved tensor, without grad mode, once per unpack (twice with ``retain_graph``), also
for a custom Function's ``save_for_backward``. One program per case, run with torch (the
oracle) and tracegrad (``run_cases``): equal results or the same exception class."""
import pytest

from parity import run_cases

torch = pytest.importorskip("torch")


def x3(T):
    return T.tensor([0.5, -1.0, 2.0], requires_grad=True)


def hooks(T, pack=lambda t: t, unpack=lambda p: p):
    return T.autograd.graph.saved_tensors_hooks(pack, unpack)


def message_of(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return "no error"


def enter_and_leave(cm):
    with cm:
        pass


def disable_nests(T):
    G = T.autograd.graph
    out = []
    with G.disable_saved_tensors_hooks("outer"):
        with G.disable_saved_tensors_hooks("inner"):
            out.append(message_of(lambda: enter_and_leave(hooks(T))))
        out.append(message_of(lambda: enter_and_leave(G.save_on_cpu())))
    with hooks(T):
        out.append("hooks usable again")
    return out


def disable_while_hooks_active(T):
    # the disable refuses to start; the hooks in force keep working and stay removable
    out = []
    x = x3(T)
    with hooks(T, unpack=lambda p: p * 2):
        def enter():
            with T.autograd.graph.disable_saved_tensors_hooks("cannot disable now"):
                out.append("entered")
        out.append(message_of(enter))
        y = x.pow(2)
    y.sum().backward()
    out.append(x.grad)
    with hooks(T):
        out.append("hooks usable again")
    return out


def disable_as_decorator(T):
    @T.autograd.graph.disable_saved_tensors_hooks("no saved-tensor hooks in here")
    def f():
        with hooks(T):
            return "entered"
    return message_of(f)


def hook_calls(T):
    log = []

    def pack(t):
        log.append(("pack", T.is_grad_enabled(), t.requires_grad))
        return t

    def unpack(p):
        log.append(("unpack", T.is_grad_enabled()))
        return p
    x = x3(T)
    with hooks(T, pack, unpack):
        y = (x * x).sum() + x.exp().sum() + (x @ x)
    y.backward(retain_graph=True)
    y.backward()
    return log, x.grad


def hooks_change_saved_values(T):
    x = x3(T)
    with hooks(T, lambda t: t * 10, lambda p: p + 1):
        y = x.pow(2)
    saved = y.grad_fn._saved_self
    y.sum().backward()
    return saved, x.grad


def hooks_on_function_ctx(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * a
    log = []
    x = x3(T)
    with hooks(T, lambda t: (log.append("pack"), t)[1], lambda p: (log.append("unpack"), p)[1]):
        y = Scale.apply(x)
    y.sum().backward()
    return log, x.grad


def test_saved_tensor_hooks_round16():
    run_cases({"disable_nests": disable_nests, "disable_while_hooks_active": disable_while_hooks_active,
               "disable_as_decorator": disable_as_decorator, "hook_calls": hook_calls,
               "hooks_change_saved_values": hooks_change_saved_values,
               "hooks_on_function_ctx": hooks_on_function_ctx})
