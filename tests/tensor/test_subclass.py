"""Tensor subclasses and ``__torch_function__``: the same programs run with torch and with
tracegrad must record the same calls (``resolve_name(func)`` and ``types``), give results of
the same types and the same values and gradients (torch 2.13's test_subclass.py and
test_overrides.py, in our own words, on the CPU-relevant parts)."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
LIBS = (torch, tracegrad)


def _name(lib, func):
    return lib.overrides.resolve_name(func) or func.__name__


def logging_tensor(lib, log):
    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append((_name(lib, func), tuple(t.__name__ for t in types)))
            return super().__torch_function__(func, types, args, kwargs)
    return LoggingTensor


def _tname(v):
    if isinstance(v, (tuple, list)):
        return [type(v).__name__] + [_tname(w) for w in v]
    return type(v).__name__


def _both(program):
    """program(lib, log) -> anything comparable; run with torch and tracegrad, return both."""
    out = []
    for lib in LIBS:
        log = []
        res = program(lib, log)
        out.append((log, res))
    return out


# ---- which function an override receives -------------------------------------------------------
EXPRESSIONS = {
    "x + y": lambda lib, x, y: x + y, "y + x": lambda lib, x, y: y + x, "1 + x": lambda lib, x, y: 1 + x,
    "x - 1": lambda lib, x, y: x - 1, "1 - x": lambda lib, x, y: 1 - x, "x * 2": lambda lib, x, y: x * 2,
    "x / 2": lambda lib, x, y: x / 2, "2 / x": lambda lib, x, y: 2 / x, "x // 2": lambda lib, x, y: x // 2,
    "x @ y": lambda lib, x, y: x @ y, "y @ x": lambda lib, x, y: y @ x, "x ** 2": lambda lib, x, y: x ** 2,
    "2 ** x": lambda lib, x, y: 2 ** x, "-x": lambda lib, x, y: -x, "abs(x)": lambda lib, x, y: abs(x),
    "x == y": lambda lib, x, y: x == y, "x < 1": lambda lib, x, y: x < 1, "x % 2": lambda lib, x, y: x % 2,
    "x[0]": lambda lib, x, y: x[0], "len(x)": lambda lib, x, y: len(x), "list(x)": lambda lib, x, y: list(x),
    "x.T": lambda lib, x, y: x.T, "x.shape": lambda lib, x, y: x.shape, "x.dtype": lambda lib, x, y: x.dtype,
    "x.grad": lambda lib, x, y: x.grad, "x.requires_grad": lambda lib, x, y: x.requires_grad,
    "x.detach()": lambda lib, x, y: x.detach(), "x.clone()": lambda lib, x, y: x.clone(),
    "x.to(f64)": lambda lib, x, y: x.to(lib.float64), "x.sum()": lambda lib, x, y: x.sum(),
    "x.max(0)": lambda lib, x, y: x.max(0), "lib.max(x, 0)": lambda lib, x, y: lib.max(x, 0),
    "x.split(1)": lambda lib, x, y: x.split(1), "lib.add(y, x)": lambda lib, x, y: lib.add(y, x),
    "y.add(x)": lambda lib, x, y: y.add(x), "lib.cat": lambda lib, x, y: lib.cat([y, x]),
    "F.relu": lambda lib, x, y: lib.nn.functional.relu(x), "F.linear": lambda lib, x, y: lib.nn.functional.linear(x, y),
    "F.mse_loss": lambda lib, x, y: lib.nn.functional.mse_loss(x, y), "x.item()": lambda lib, x, y: x[0, 0].item(),
    "float": lambda lib, x, y: float(x[0, 0]), "x.size()": lambda lib, x, y: x.size(),
    "x.dim()": lambda lib, x, y: x.dim(), "x.is_leaf": lambda lib, x, y: x.is_leaf,
    "x.view(4)": lambda lib, x, y: x.view(4), "x.float()": lambda lib, x, y: x.float(),
    "x.unbind()": lambda lib, x, y: x.unbind(), "F.softmax": lambda lib, x, y: lib.nn.functional.softmax(x, -1),
    "lib.where": lambda lib, x, y: lib.where(x > 0, x, y), "lib.zeros_like": lambda lib, x, y: lib.zeros_like(x),
    "fill_": lambda lib, x, y: x.detach().fill_(1), "copy_": lambda lib, x, y: x.detach().copy_(y),
    "x.norm()": lambda lib, x, y: x.norm(), "x.contiguous()": lambda lib, x, y: x.contiguous(),
}


@pytest.mark.parametrize("expr", list(EXPRESSIONS))
def test_override_receives_torchs_function_and_types(expr):
    """Operators report the method torch reports (``a + b`` is ``Tensor.add``), properties their
    ``__get__``, functions implemented in Python in torch count plain Tensors among the types;
    results come back as the subclass (``_convert``)."""
    def program(lib, log):
        L = logging_tensor(lib, log)
        x = lib.ones(2, 2).as_subclass(L)
        y = lib.ones(2, 2)
        log.clear()
        return _tname(EXPRESSIONS[expr](lib, x, y))
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog
    assert gres == tres


def test_setitem_inplace_and_iadd_keep_the_subclass():
    def program(lib, log):
        L = logging_tensor(lib, log)
        x = lib.ones(2, 2).as_subclass(L)
        x[0] = 3.0
        x += 1
        x.mul_(2)
        return _tname(x), x.detach().as_subclass(lib.Tensor).tolist()
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


# ---- programs ----------------------------------------------------------------------------------
def _mlp_program(lib, log):
    L = logging_tensor(lib, log)
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1), dtype=lib.float32))
    x = lib.tensor(np.arange(15.0).reshape(5, 3) / 10, dtype=lib.float32).as_subclass(L)
    out = model(x)
    loss = F.cross_entropy(out, lib.tensor([0, 1, 0, 1, 1]))
    loss.backward()
    grads = [p.grad.tolist() for p in model.parameters()]
    types = (_tname(out), _tname(loss), _tname(model[0].weight.grad), type(loss.grad_fn).__name__,
             type(loss.grad_fn.next_functions[0][0]).__name__)
    return types, round(loss.item(), 5), grads


def test_logging_tensor_through_a_model_forward_and_backward():
    (tlog, (ttypes, tloss, tgrads)), (glog, (gtypes, gloss, ggrads)) = _both(_mlp_program)
    assert glog == tlog
    assert gtypes == ttypes        # subclass outputs, plain parameter grads, AliasBackward0 on top
    assert gloss == pytest.approx(tloss, abs=1e-5)
    for a, b in zip(ggrads, tgrads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_logging_tensor_through_a_cnn_autograd_grad_hooks_and_functions():
    def program(lib, log):
        L = logging_tensor(lib, log)
        nn = lib.nn
        model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Dropout(0.0), nn.Linear(2, 3))
        x = lib.ones(2, 1, 4, 4).requires_grad_().as_subclass(L)
        out = model(x)
        log.append(("autograd.grad",))
        g = lib.autograd.grad(out.sum(), x)
        log.append(("hook",))
        y = lib.ones(2, requires_grad=True).as_subclass(L)
        y.register_hook(lambda g: g * 2)
        (y * 3).sum().backward()
        log.append(("functions",))
        z = lib.ones(3).as_subclass(L)
        res = [lib.stack([z, z]), z.tolist(), z.new_ones(2), lib.einsum("i,i->", z, z), z.unsqueeze(0).expand(2, 3),
               list(z.chunk(3)), z.masked_fill(z > 0, 1.0), z.reshape(3, 1).squeeze(), lib.clamp(z, 0, 1)]
        return _tname(g), _tname(res)
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


def test_logging_mode_sees_factories_methods_and_properties():
    def program(lib, log):
        class LoggingMode(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((_name(lib, func), tuple(t.__name__ for t in types)))
                return func(*args, **(kwargs or {}))
        lin = lib.nn.Linear(3, 2)
        with LoggingMode():
            y = lib.ones(2, 3, requires_grad=True)
            z = (lib.nn.functional.relu(lin(y)) * 2).sum()
            z.backward()
            _ = lib.zeros(2), y.shape, y + 1
        return _tname(z), _tname(y.grad)
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


def test_nested_modes_innermost_first_and_popped_while_running():
    def program(lib, log):
        class Tag(lib.overrides.TorchFunctionMode):
            def __init__(self, tag):
                super().__init__()
                self.tag = tag

            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((self.tag, func.__name__, len(lib.overrides._get_current_function_mode_stack())))
                return func(*args, **(kwargs or {}))
        with Tag("outer"), Tag("inner"):
            lib.ones(1).exp()
        return None
    (tlog, _), (glog, _) = _both(program)
    assert glog == tlog


# ---- types of results ---------------------------------------------------------------------------
def test_result_type_rules_match_torch():
    def program(lib, log):
        class A(lib.Tensor):
            pass

        class B(A):
            pass

        class W(lib.Tensor):
            def __init__(self, *args, extra=None, **kwargs):
                self.extra = extra
        a, b = lib.ones(2).as_subclass(A), lib.ones(2).as_subclass(B)
        p = lib.nn.Parameter(lib.ones(2))
        w = lib.ones(2).as_subclass(W)
        w.extra = 5
        return [_tname(a + b), _tname(b + a), _tname(p * 2), _tname(p + a), _tname(a.max(0)),
                _tname(w * 2), hasattr(w * 2, "extra"), _tname(a.tolist()), _tname(lib.ones(2) * 2),
                _tname(A([1.0, 2.0])), repr(a)]
    (_, tres), (_, gres) = _both(program)
    assert gres == tres


def test_autograd_through_subclass_matches_torch():
    def program(lib, log):
        class L(lib.Tensor):
            pass
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.as_subclass(L)         # an alias on the graph: not a leaf, grads reach x
        leaf = L(lib.tensor([1.0, -1.0])).requires_grad_()
        z = (y * y).sum() + (leaf.exp() * 2).sum()
        z.backward()
        chain = []
        node = z.grad_fn
        while node is not None:
            chain.append(type(node).__name__)
            node = node.next_functions[0][0] if node.next_functions else None
        return (_tname(y), y.is_leaf, type(y.grad_fn).__name__, x.grad.tolist(), _tname(leaf.grad),
                leaf.is_leaf, [round(v, 5) for v in leaf.grad.tolist()], chain, _tname(z))
    (_, tres), (_, gres) = _both(program)
    assert gres == tres


def test_make_subclass_in_new_gives_a_leaf_sharing_storage():
    def program(lib, log):
        class Wrapped(lib.Tensor):
            @staticmethod
            def __new__(cls, data, extra):
                return lib.Tensor._make_subclass(cls, data, data.requires_grad)

            def __init__(self, data, extra):
                self.extra = extra
        base = lib.ones(2, requires_grad=True)
        w = Wrapped(base, 5)
        (w * 2).sum().backward()
        plain = lib.zeros(2)
        shared = Wrapped(plain, 1)
        shared.add_(1)
        return (_tname(w), w.is_leaf, w.requires_grad, w.extra, w.grad_fn is None, w._is_view(),
                _tname(w.grad), w.grad.tolist(), base.grad, plain.tolist(), _tname(w * 2))
    (_, tres), (_, gres) = _both(program)
    assert gres == tres


# ---- precedence and NotImplemented -------------------------------------------------------------
def test_precedence_and_not_implemented():
    def program(lib, log):
        class First(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("First", sorted(t.__name__ for t in types)))
                if any(t is Second for t in types):
                    return NotImplemented
                return super().__torch_function__(func, types, args, kwargs)

        class Second(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("Second", sorted(t.__name__ for t in types)))
                return "second"

        class Child(First):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("Child", sorted(t.__name__ for t in types)))
                return NotImplemented
        f, s, c = (lib.ones(1).as_subclass(k) for k in (First, Second, Child))
        res = [lib.add(f, s), lib.mul(s, f)]
        try:
            lib.add(c, c)
        except TypeError as e:
            res.append(("TypeError", "no implementation found" in str(e)))
        res.append(_tname(lib.add(f, c)) if False else None)
        return res
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


def test_subclass_before_base_and_default_rejects_unrelated_types():
    def program(lib, log):
        class Base(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                log.append(("Base", cls.__name__))
                return super().__torch_function__(func, types, args, kwargs)

        class Derived(Base):
            pass

        class Other(lib.Tensor):
            pass
        b, d, o = (lib.ones(1).as_subclass(k) for k in (Base, Derived, Other))
        out = [_tname(b + d), _tname(d + b)]
        try:
            b + o          # Base's default returns NotImplemented for Other, Other's for Base
        except TypeError:
            out.append("TypeError")
        return out
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


def test_disable_torch_function_blocks():
    def program(lib, log):
        L = logging_tensor(lib, log)

        class Mode(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append(("mode", func.__name__))
                return func(*args, **(kwargs or {}))
        x = lib.ones(2).as_subclass(L)
        out = []
        with Mode():
            with lib._C.DisableTorchFunctionSubclass():
                out.append(_tname(x + 1))          # the mode still sees it
                out.append(lib._C._is_torch_function_enabled())
            with lib._C.DisableTorchFunction():
                out.append(_tname(x + 1))          # nothing sees it
                out.append(lib._C._is_torch_function_mode_enabled())
        out.append(_tname(lib.overrides.redispatch_function(lib.Tensor.add, (L,), (x, 1), {})))
        return out
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


def test_parameter_opts_out_and_user_method_override_sees_super():
    def program(lib, log):
        class Doubling(lib.Tensor):
            def exp(self):
                log.append("exp override")
                return super().exp() * 2
        d = lib.zeros(2).as_subclass(Doubling)
        p = lib.nn.Parameter(lib.zeros(2))
        return _tname(d.exp()), d.exp().as_subclass(lib.Tensor).tolist(), _tname(p.exp()), _tname(p.data)
    (tlog, tres), (glog, gres) = _both(program)
    assert glog == tlog and gres == tres


# ---- compiled == eager ----------------------------------------------------------------------------
def test_compiled_subclass_and_mode_run_as_eager():
    """A subclass or a mode inside tracegrad.compile is a graph break: the call runs eagerly,
    so the override's side effects and the result types are eager's on every call."""
    log = []
    L = logging_tensor(tracegrad, log)

    def step(x):
        return (x * 3).sum()

    compiled = tracegrad.compile(step)
    for i in range(3):
        x = tracegrad.ones(3).as_subclass(L)
        log.clear()
        eager = step(x)
        eager_log = list(log)
        log.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # "running step eagerly" (once)
            got = compiled(x)
        assert log == eager_log and type(got) is type(eager) is L and got.item() == eager.item()
    with pytest.raises(tracegrad.compiler.GraphBreak, match="__torch_function__"):
        tracegrad.compile(step, fullgraph=True)(tracegrad.ones(3).as_subclass(L))

    class Counting(tracegrad.overrides.TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Counting.calls += 1
            return func(*args, **(kwargs or {}))

    plain = tracegrad.compile(step)
    y = tracegrad.ones(3)
    plain(y)
    plain(y)                         # compiled: a program from now on
    with Counting():
        step(y)
    assert Counting.calls == 2      # mul and sum
    for i in range(2):
        with Counting(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = plain(y)
        assert got.item() == 9.0
    assert Counting.calls == 6      # as eager, on both calls
