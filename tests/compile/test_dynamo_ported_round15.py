"""Round-15 ports of PyTorch's torch.compile tests as compiled-vs-eager checks: the
pure-Python reverse-mode autograd of test/dynamo/test_python_autograd.py (a global tape and a
global name counter the compiled functions change; written here, not copied), context
managers from test_ctx_manager.py that earlier rounds did not take (ExitStack, nullcontext,
a manager that swallows the exception, fork_rng, saved_tensors_hooks with packing), and
repros from test_repros.py (a list argument appended to and returned, the same function
called with requires_grad, dtype and shape changing between calls, ``.grad is None`` tests,
shared submodules). torch eager, tracegrad eager and ``tracegrad.compile`` must agree after
every call."""
import contextlib

import numpy as np
import pytest

import tracegrad
from ._dynamo_port import CALLS, compare, randn32 as _rand, same

torch = pytest.importorskip("torch")


# ---- test_python_autograd.py: a reverse-mode autograd written in Python ------------------

class _Tape:
    """A global-style tape: every op appends (inputs, outputs, backward rule); names come from
    a counter the ops advance (the test's ``fresh_name``)."""

    def __init__(self):
        self.entries, self.count = [], 0

    def reset(self):
        self.entries.clear()
        self.count = 0

    def name(self):
        self.count += 1
        return f"v{self.count - 1}"


class _Var:
    def __init__(self, tape, value, name=None):
        self.tape, self.value, self.name = tape, value, name or tape.name()

    def __mul__(self, other):
        out = _Var(self.tape, self.value * other.value)
        self.tape.entries.append(([self.name, other.name], [out.name],
                                  lambda g: [g * other.value, g * self.value]))
        return out

    def __add__(self, other):
        out = _Var(self.tape, self.value + other.value)
        self.tape.entries.append(([self.name, other.name], [out.name], lambda g: [g, g]))
        return out

    def sum(self):
        out = _Var(self.tape, self.value.sum())
        shape = self.value.shape
        self.tape.entries.append(([self.name], [out.name], lambda g: [g.expand(shape)]))
        return out


def _grad(T, tape, loss, wanted):
    d = {loss.name: T.ones(())}
    for ins, outs, rule in reversed(tape.entries):
        if outs[0] not in d:
            continue
        for name, g in zip(ins, rule(d[outs[0]])):
            d[name] = d[name] + g if name in d else g
    return [d.get(v.name) for v in wanted]


def _simple(a, b):
    return (a + b) * b


@pytest.mark.parametrize("variant", ["forward", "forward_reset_inside", "backward", "backward_reset_inside"])
def test_python_autograd_on_a_global_tape(variant):
    def build(T, wrap):
        tape = _Tape()

        def fn(a, b):
            if variant.endswith("reset_inside"):
                tape.reset()
            a, b = _Var(tape, a, "a"), _Var(tape, b, "b")
            loss = _simple(a, b).sum()
            out = _grad(T, tape, loss, [a, b]) if variant.startswith("backward") else loss.value
            if variant.endswith("reset_inside"):
                tape.reset()
            return out
        f = wrap(fn)

        def run(i):
            if not variant.endswith("reset_inside"):
                tape.reset()
            out = f(_rand(T, i, 10), _rand(T, i + 5, 10))
            return out, len(tape.entries), tape.count
        return run
    compare(build)


# TestPythonAutograd.test_split: the forward and the Python backward compiled separately,
# the tape carried between them
def test_python_autograd_forward_and_backward_compiled_separately():
    def build(T, wrap):
        tape = _Tape()
        a = _Var(tape, _rand(T, 0, 6), "a")
        b = _Var(tape, _rand(T, 1, 6), "b")
        fwd = wrap(lambda u, v: _simple(u, v).sum())
        bwd = wrap(lambda loss, vs: _grad(T, tape, loss, vs))

        def run(i):
            tape.reset()
            a.value = a.value * 0.5 + i        # the variables' tensors change between calls
            loss = fwd(a, b)
            return loss.value, bwd(loss, [a, b]), len(tape.entries)
        return run
    compare(build)


# ---- test_ctx_manager.py ---------------------------------------------------------------

# contextlib.ExitStack entering no_grad and a set_grad_enabled inside the function
def test_exit_stack_of_grad_modes():
    def build(T, wrap):
        w = T.ones(3, requires_grad=True)

        def fn(x, n):
            with contextlib.ExitStack() as stack:
                if n % 2:
                    stack.enter_context(T.no_grad())
                y = x * w
            z = x * w
            return y.requires_grad, z.requires_grad, y + z
        f = wrap(fn)

        def run(i):
            rg, rz, out = f(_rand(T, i, 3), i)
            return rg, rz, out.detach(), T.is_grad_enabled()
        return run
    compare(build)


# contextlib.nullcontext and a user class manager that swallows the exception (``__exit__``
# returns True): the code after the with runs, the writes before the raise stay
def test_nullcontext_and_a_manager_that_swallows_the_exception():
    class Swallow:
        def __init__(self):
            self.seen = []

        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            self.seen.append(None if et is None else et.__name__)
            return True

    def build(T, wrap):
        sw = Swallow()
        acc = T.zeros(3)

        def fn(x, fail):
            with contextlib.nullcontext(x) as same_x:
                y = same_x * 2
            with sw:
                acc.add_(y)
                if fail:
                    raise KeyError("x")
                acc.mul_(0.5)
            return acc + 1
        f = wrap(fn)

        def run(i):
            return f(_rand(T, i, 3), i % 2 == 1), acc, list(sw.seen)
        return run
    compare(build)


# torch.random.fork_rng around a dropout: the draws inside leave the global generator as it
# was, and the seed set inside gives the same mask on every call (the two libraries' generators
# differ: torch is compared on those properties, tracegrad eager and compiled on the masks too)
def test_fork_rng_around_dropout():
    def build(T, wrap):
        T.manual_seed(0)
        prev = []

        def fn(x):
            with T.random.fork_rng():
                T.manual_seed(123)
                a = T.nn.functional.dropout(x, 0.5)
            return a
        f = wrap(fn)

        def run(i):
            before = T.get_rng_state()
            out = f(T.ones(4, 5))
            kept = bool(T.equal(before, T.get_rng_state()))
            repeat = bool(T.equal(out, prev[-1])) if prev else None
            prev.append(out)
            return kept, repeat, sorted(set(out.flatten().tolist())) == [0.0, 2.0], T.initial_seed()
        return run
    try:
        compare(build)
    finally:
        torch.manual_seed(0)
        tracegrad.manual_seed(0)


def test_fork_rng_masks_equal_eager():
    def fn(x):
        with tracegrad.random.fork_rng():
            tracegrad.manual_seed(123)
            return tracegrad.nn.functional.dropout(x, 0.5)
    try:
        f = tracegrad.compile(fn)
        want = fn(tracegrad.ones(4, 5))
        for _ in range(CALLS):
            same(want, f(tracegrad.ones(4, 5)), "mask")
    finally:
        tracegrad.manual_seed(0)


# saved_tensors_hooks that pack to a scaled copy and unpack it: backward uses the unpacked
def test_saved_tensors_hooks_pack_and_unpack():
    def build(T, wrap):
        log = []

        def pack(t):
            log.append(("pack", tuple(t.shape)))
            return t * 2

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t / 2

        def fn(x, w):
            with T.autograd.graph.saved_tensors_hooks(pack, unpack):
                y = (x * w).sin()
            y.sum().backward()
            return y
        f = wrap(fn)

        def run(i):
            del log[:]
            x = _rand(T, i, 3)
            w = _rand(T, i + 1, 3).requires_grad_()
            out = f(x, w)
            return out, w.grad, sorted(log)
        return run
    compare(build)


# ---- test_repros.py ---------------------------------------------------------------------

# ReproTests.test_list_aliasing: the list passed in is appended to and returned; it is the
# caller's list, holding the caller's tensor
def test_list_argument_appended_and_returned():
    def build(T, wrap):
        f = wrap(lambda l: (l.append(T.sin(l[0])), l)[1])

        def run(i):
            x = _rand(T, i, 4)
            lst = [x]
            out = f(lst)
            return out is lst, len(lst), lst[0] is x, lst[1]
        return run
    compare(build)


# ReproTests: guards on requires_grad, dtype and shape of an argument changing between calls
def test_arguments_changing_requires_grad_dtype_and_shape():
    def build(T, wrap):
        f = wrap(lambda x: (x * x).sum(0))
        kinds = [(False, "float32", 3), (True, "float32", 3), (True, "float64", 3),
                 (False, "float32", 5), (True, "float32", 3)]

        def run(i):
            rg, dt, n = kinds[i]
            x = _rand(T, i, n, 2).to(getattr(T, dt)).requires_grad_(rg)
            out = f(x)
            g = None
            if rg:
                out.sum().backward()
                g = x.grad
            return out, g
        return run
    compare(build, calls=5)


# ReproTests-style ``.grad is None`` tests inside the step (the first call has no grads, later
# ones have them: set_to_none=False keeps them)
def test_grad_is_none_tests_inside_the_step():
    def build(T, wrap):
        net = T.nn.Linear(3, 2)
        with T.no_grad():
            net.weight.copy_(_rand(T, 0, 2, 3))
            net.bias.zero_()
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            fresh = [p.grad is None for p in net.parameters()]
            opt.zero_grad(set_to_none=False)
            net(x).pow(2).sum().backward()
            opt.step()
            return fresh
        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 4, 3)), net.weight, net.bias.grad
        return run
    compare(build)


# ReproTests.test_named_parameters-style: one submodule reached by two names; parameters()
# lists it once and the update touches it once per step
def test_shared_submodule_updated_once():
    def build(T, wrap):
        inner = T.nn.Linear(2, 2)
        with T.no_grad():
            inner.weight.copy_(_rand(T, 3, 2, 2))
            inner.bias.fill_(0.1)
        model = T.nn.ModuleDict({"a": inner, "b": inner})
        opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)

        def step(x):
            opt.zero_grad()
            loss = model["b"](model["a"](x)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, len(list(model.parameters())), [n for n, _ in model.named_parameters()]
        f = wrap(step)

        def run(i):
            return f(_rand(T, i, 3, 2)), inner.weight, opt.state[inner.weight]["momentum_buffer"]
        return run
    compare(build)


# ReproTests.test_inplace_view_on_graph_input-style: in-place ops through a chain of views of
# an argument; the argument holds them after the call
def test_in_place_through_a_chain_of_views_of_an_argument():
    def build(T, wrap):
        def fn(x):
            v = x.view(2, 6)[:, 1:5].transpose(0, 1)
            v.mul_(2).add_(1)
            x.narrow(0, 0, 3).zero_()
            return v.sum(), x.view(3, 4)
        f = wrap(fn)

        def run(i):
            x = _rand(T, i, 12)
            out = f(x)
            return out, x
        return run
    compare(build)
