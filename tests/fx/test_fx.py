"""tracegrad.fx against torch.fx: the same model traced by both gives the same ``gm.code`` and
``str(gm.graph)`` text, the same values and gradients; the graph editing API, Interpreter,
Transformer, replace_pattern, ShapeProp and fuse behave as torch's. Cases marked "port" follow
pytorch's test/test_fx.py."""
import copy
import math
import operator
import pickle

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.fx as tfx
from tracegrad.fx import GraphModule, Interpreter, Proxy, Tracer, Transformer, symbolic_trace, wrap
from tracegrad.fx.proxy import TraceError

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402


def a_lifted_leaf(a, b):
    return a[0] + a[1] + b


wrap("a_lifted_leaf")


@wrap
def wrapped_via_decorator(a):
    return a + 1


def fx_int(x: float) -> int:
    return int(x)


def a_non_torch_leaf(a, b):
    return a + b


# ---- models built the same way from either library ------------------------------------------
def mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)
            self.p = nn.Parameter(lib.ones(4))
            self.register_buffer("b", lib.zeros(4))

        def forward(self, x, y=2):
            a = lib.relu(self.lin(x)) + self.p
            b = a * y - 1.5
            c = lib.ones(4) + b
            d = b.sum(dim=-1, keepdim=True).view(-1, 1)
            e = lib.cat([c, d], 1)[:, 0:2]
            f = x.shape[0]
            return {"o": e + f, "t": (a.tanh(), self.b, -a @ a.t())}
    return MLP()


def convnet(lib):
    nn = lib.nn

    class Sub(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3)
            self.bn = nn.BatchNorm2d(2)

        def forward(self, x):
            return self.bn(self.conv(x)).flatten(1)

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(8, 3))

        def forward(self, x):
            a, b = self.sub(x).chunk(2, dim=1)
            z = self.seq(a * math.sqrt(2.0)) + b.max(dim=1, keepdim=True)[0]
            return lib.sigmoid(z), z.shape
    return ConvNet()


def block(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 4, 3, padding=1)
            self.b1 = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 2)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = y + F.conv2d(x, self.c1.weight, self.c1.bias, padding=1)
            z = lib.flatten(F.adaptive_avg_pool2d(y, 1).view(y.size(0), -1), 1).to(lib.float32)
            p = y.permute(0, 2, 3, 1).mean([1, 2])
            return self.drop(self.fc(z)) + lib.zeros(2) + p[:, :2], lib.split(p, 2, dim=1)
    return Block()


def linear_bn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())


def _to_tg(module_torch, module_tg):
    """Copy torch's initial weights into the tracegrad twin."""
    module_tg.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in module_torch.state_dict().items()})
    return module_tg


def _pair(build, train=True):
    ref = build(torch)
    ours = _to_tg(ref, build(tg))
    ref.train(train)
    ours.train(train)
    return ref, ours


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _flat(out):
    if isinstance(out, dict):
        return [v for k in sorted(out) for v in _flat(out[k])]
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


def _assert_same(a, b, atol=1e-5):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Size) or isinstance(x, int):
            assert tuple(x) == tuple(y) if isinstance(x, torch.Size) else x == y
        else:
            np.testing.assert_allclose(_np(x), _np(y), atol=atol, rtol=1e-5)


_INPUTS = {mlp: (2, 3), convnet: (2, 1, 4, 6), linear_bn: (5, 4), block: (2, 3, 4, 4)}


# ---- parity with torch.fx ---------------------------------------------------------------------
@pytest.mark.parametrize("build, train", [(mlp, True), (convnet, True), (linear_bn, True), (block, False)])
def test_code_graph_values_and_grads_match_torch(build, train):
    ref, ours = _pair(build, train)
    gm_ref, gm = torch.fx.symbolic_trace(ref), symbolic_trace(ours)
    assert gm.code == gm_ref.code
    assert str(gm.graph) == str(gm_ref.graph)
    assert type(gm).__name__ == type(gm_ref).__name__
    x_np = np.random.RandomState(1).randn(*_INPUTS[build]).astype(np.float32)
    xr, x = torch.tensor(x_np, requires_grad=True), tg.tensor(x_np, requires_grad=True)
    out_ref, out = gm_ref(xr), gm(x)
    _assert_same(out, out_ref)
    _assert_same(out, ours(tg.tensor(x_np)))         # the GraphModule runs as the traced module
    sum(o.sum() for o in _flat(out_ref) if isinstance(o, torch.Tensor)).backward()
    sum(o.sum() for o in _flat(out) if isinstance(o, tg.Tensor)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), atol=1e-5)
    grads_ref = {n: p.grad for n, p in gm_ref.named_parameters()}
    for n, p in gm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads_ref[n].numpy(), atol=1e-5, err_msg=n)


@pytest.mark.parametrize("build", [mlp, convnet])
def test_print_readable_str_and_state_dict_match_torch(build):
    ref, ours = _pair(build)
    gm_ref, gm = torch.fx.symbolic_trace(ref), symbolic_trace(ours)
    assert gm.print_readable(print_output=False) == gm_ref.print_readable(print_output=False)
    assert str(gm) == str(gm_ref)
    assert repr(gm) == repr(gm_ref)
    assert list(gm.state_dict()) == list(gm_ref.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in gm_ref.named_parameters()]
    assert [n for n, _ in gm.named_modules()] == [n for n, _ in gm_ref.named_modules()]
    assert gm.sub.conv is ours.sub.conv if build is convnet else gm.lin is ours.lin   # shared, not copied


def _fn_cases(lib):
    F = lib.nn.functional

    def kwargs_and_methods(x, y):
        return lib.squeeze(x + 3.0, dim=0).clamp(min=0.0, max=1.0), y.transpose(0, 1).reshape(-1), x // 2

    def rsub_rdiv(x):
        return 1 - x, 2 / (x + 3), 2 ** x, x ** 2, x % 2.5, ~(x > 0), abs(x)

    def getattr_chain(x):
        return x.T.shape, x.dtype, x.ndim

    def functional(x, y):
        return F.linear(x, y), lib.matmul(x, y.t()), lib.stack([x, x], dim=0).mean(0)
    def python_functionals(x):   # torch's Python F functions forward their defaults as kwargs
        a = F.relu(x) + F.dropout(x, 0.2, training=False) + F.softmax(x, -1) + F.layer_norm(x, (2,)) + F.gelu(x)
        b = F.interpolate(x[None], scale_factor=2.0)
        return a, b, F.cross_entropy(x, x.softmax(-1)), F.leaky_relu(x, 0.1), F.normalize(x), F.max_pool1d(x[None], 2)
    return [kwargs_and_methods, rsub_rdiv, getattr_chain, functional, python_functionals]


@pytest.mark.parametrize("i", range(5))
def test_function_traces_match_torch(i):
    f_ref, f = _fn_cases(torch)[i], _fn_cases(tg)[i]
    gm_ref, gm = torch.fx.symbolic_trace(f_ref), symbolic_trace(f)
    assert gm.code == gm_ref.code
    assert str(gm.graph) == str(gm_ref.graph)
    n = f.__code__.co_argcount
    arrays = [np.random.RandomState(k).randn(2, 2).astype(np.float32) for k in range(n)]
    out_ref, out = gm_ref(*map(torch.tensor, arrays)), gm(*map(tg.tensor, arrays))
    for a, b in zip(_flat(out), _flat(out_ref)):
        if isinstance(b, torch.Tensor):
            np.testing.assert_allclose(_np(a), _np(b), atol=1e-6)
        elif isinstance(b, torch.dtype):
            assert str(a).rpartition(".")[2] == str(b).rpartition(".")[2]
        else:
            assert tuple(a) == tuple(b) if isinstance(b, torch.Size) else a == b


def test_tensor_method_on_constant_is_call_method_like_torch():
    # ``tensor + proxy`` reaches Proxy.__torch_function__ as Tensor.add: torch records call_method
    def f(lib):
        c = lib.ones(3)
        return lambda x: c + x
    gm_ref, gm = torch.fx.symbolic_trace(f(torch)), symbolic_trace(f(tg))
    assert gm.code == gm_ref.code
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "get_attr", "call_method", "output"]


def test_transformer_replace_pattern_and_fuse_code_match_torch():
    ref, ours = _pair(convnet, train=False)

    class AddToMul(lib_transformer := Transformer):   # noqa: F841
        pass

    def make(T):
        class Swap(T):
            def call_function(self, target, args, kwargs):
                if target is operator.add:
                    target = operator.mul
                return super().call_function(target, args, kwargs)
        return Swap
    t_ref = make(torch.fx.Transformer)(torch.fx.symbolic_trace(ref)).transform()
    t = make(Transformer)(symbolic_trace(ours)).transform()
    assert t.code == t_ref.code
    x_np = np.random.RandomState(2).randn(2, 1, 4, 6).astype(np.float32)
    _assert_same(t(tg.tensor(x_np)), t_ref(torch.tensor(x_np)))

    from torch.fx.experimental.optimization import fuse as fuse_ref
    from tracegrad.fx.experimental.optimization import fuse
    f_ref, f = fuse_ref(ref), fuse(ours)
    assert f.code == f_ref.code
    assert "bn" not in f.code
    _assert_same(f(tg.tensor(x_np)), ours(tg.tensor(x_np)), atol=1e-4)


def _rewrite_cases(lib):
    def pattern(x, y):
        return lib.add(x, y)

    def replacement(x, y):
        return lib.mul(x, y)

    def fn(a, b):
        return lib.add(a, b).relu() + lib.add(b, 1.0)
    return pattern, replacement, fn


def test_replace_pattern_matches_torch():
    p_ref, r_ref, f_ref = _rewrite_cases(torch)
    p, r, f = _rewrite_cases(tg)
    gm_ref, gm = torch.fx.symbolic_trace(f_ref), symbolic_trace(f)
    m_ref, m = torch.fx.replace_pattern(gm_ref, p_ref, r_ref), tfx.replace_pattern(gm, p, r)
    assert len(m) == len(m_ref) == 2
    assert [x.anchor.name for x in m] == [x.anchor.name for x in m_ref]
    assert gm.code == gm_ref.code
    a, b = np.float32([1.0, -2.0]), np.float32([3.0, 4.0])
    np.testing.assert_allclose(_np(gm(tg.tensor(a), tg.tensor(b))), _np(gm_ref(torch.tensor(a), torch.tensor(b))))


def test_shape_prop_matches_torch():
    from torch.fx.passes.shape_prop import ShapeProp as ShapePropRef
    from tracegrad.fx.passes.shape_prop import ShapeProp, TensorMetadata
    ref, ours = _pair(convnet)
    gm_ref, gm = torch.fx.symbolic_trace(ref), symbolic_trace(ours)
    x_np = np.zeros((2, 1, 4, 6), np.float32)
    ShapePropRef(gm_ref).propagate(torch.tensor(x_np))
    ShapeProp(gm).propagate(tg.tensor(x_np))
    for n, n_ref in zip(gm.graph.nodes, gm_ref.graph.nodes):
        meta, meta_ref = n.meta.get("tensor_meta"), n_ref.meta.get("tensor_meta")
        assert (meta is None) == (meta_ref is None), n.name
        if isinstance(meta_ref, torch.fx.passes.shape_prop.TensorMetadata):
            assert isinstance(meta, TensorMetadata)
            assert tuple(meta.shape) == tuple(meta_ref.shape) and tuple(meta.stride) == tuple(meta_ref.stride)
            assert meta.requires_grad == meta_ref.requires_grad and str(meta.dtype)[-7:] == str(meta_ref.dtype)[-7:]
        assert n.meta["type"].__name__ == n_ref.meta["type"].__name__


def test_concrete_args_specialise_and_guard_like_torch():
    def f(x, flag=True, z=None):
        return x + 1 if flag else x - 1
    gm = symbolic_trace(f, concrete_args={"flag": False, "z": None})
    gm_ref = torch.fx.symbolic_trace(f, concrete_args={"flag": False, "z": None})
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == \
        [n.name for n in gm_ref.graph.nodes if n.op == "placeholder"]
    np.testing.assert_allclose(gm(tg.ones(2), False).numpy(), gm_ref(torch.ones(2), False).numpy())
    np.testing.assert_allclose(gm(tg.ones(2), False, None).numpy(), 0.0)
    with pytest.raises(AssertionError, match="flag"):
        gm(tg.ones(2))   # the default (True) is not the value traced with, in torch too
    with pytest.raises(AssertionError, match="flag"):
        gm(tg.ones(2), True)
    with pytest.raises(AssertionError, match="z"):
        gm(tg.ones(2), False, 3)


def test_args_kwargs_forward():   # port: test_args_kwargs
    class T(tg.nn.Module):
        def forward(self, *args, **kwargs):
            return args[0] + kwargs["foo"]
    gm = symbolic_trace(T())
    assert gm(tg.ones(1), foo=tg.full((1,), 2.0)).item() == 3.0
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["*args", "**kwargs"]


def test_annotations_printed_like_torch():
    def build(lib):
        class U(lib.nn.Module):
            def forward(self, x: lib.Tensor, y: int = 2) -> lib.Tensor:
                return x + y
        return U()
    gm_ref, gm = torch.fx.symbolic_trace(build(torch)), symbolic_trace(build(tg))
    assert gm.code == gm_ref.code
    assert str(gm.graph) == str(gm_ref.graph)


# ---- proxies and tracing errors ---------------------------------------------------------------
def _errors(lib):
    def iterate(x):
        return [i for i in x]

    def branch(x):
        return x if x.sum() > 0 else -x

    def length(x):
        return x + len(x)
    return iterate, branch, length


@pytest.mark.parametrize("i, exc, msg", [(0, TraceError, "Proxy object cannot be iterated"),
                                        (1, TraceError, "symbolically traced variables cannot be used as inputs"),
                                        (2, RuntimeError, "'len' is not supported in symbolic tracing")])
def test_trace_errors_match_torch(i, exc, msg):
    with pytest.raises(Exception) as ref:
        torch.fx.symbolic_trace(_errors(torch)[i])
    with pytest.raises(exc, match=msg) as ours:
        symbolic_trace(_errors(tg)[i])
    assert type(ours.value).__name__ == type(ref.value).__name__
    assert isinstance(ours.value, ValueError) == isinstance(ref.value, ValueError)


def test_unpack_list_and_dict_better_error():   # port
    class SomeArgs(tg.nn.Module):
        def forward(self, a, b=None):
            return a

    class UnpacksList(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.sa = SomeArgs()

        def forward(self, x):
            return self.sa(*x)
    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        symbolic_trace(UnpacksList())

    class UnpacksDict(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.sa = SomeArgs()

        def forward(self, x):
            return self.sa(**x)
    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        symbolic_trace(UnpacksDict())


def test_param_shapes_constant():   # port: test_fx_param_shape_control_flow
    class M(tg.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = tg.nn.Parameter(tg.ones(n, 2))

        def forward(self, x):
            return x.relu() if self.w.shape[0] > 2 else x.neg()
    with pytest.raises(TraceError):
        symbolic_trace(M(3))
    for n, method in ((3, "relu"), (1, "neg")):
        m = M(n)
        gm = GraphModule(m, Tracer(param_shapes_constant=True).trace(m))
        assert [x.target for x in gm.graph.nodes if x.op == "call_method"] == [method]


def test_unpack_tuple_input():   # port: test_unpack
    class M(tg.nn.Module):
        def forward(self, a, b):
            c, d = a
            return c + d + b
    gm = symbolic_trace(M())
    a = (tg.ones(1), tg.full((1,), 2.0))
    assert gm(a, tg.ones(1)).item() == 4.0


def test_proxy_on_existing_graph():   # port: test_graph_edit_with_proxy
    class M(tg.nn.Module):
        def forward(self, a, b):
            return a + b
    g = symbolic_trace(M()).graph
    new_g = tfx.Graph()
    out = new_g.graph_copy(g, {})
    t = Proxy(out)
    new_g.output((t + t).node)
    gm = GraphModule(M(), new_g)
    gm.graph.lint()
    assert gm(3, 4) == 14
    assert len({n.name for n in gm.graph.nodes}) == len(gm.graph.nodes)


# ---- Tracer customisation ---------------------------------------------------------------------
def test_leaf_module_override():   # port: test_leaf_module
    class NoLeaf(Tracer):
        def is_leaf_module(self, m, qualname):
            return False

    class M(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = tg.nn.ReLU()

        def forward(self, x):
            return self.relu(x)
    g = NoLeaf().trace(M())
    assert all(n.op != "call_module" for n in g.nodes)
    g.lint()
    assert [n.op for n in Tracer().trace(M()).nodes] == ["placeholder", "call_module", "output"]


def test_create_node_override_and_tagging():   # port: test_disallow_override, test_node_tagging
    class NoInplace(Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            name_ = target if isinstance(target, str) else target.__name__
            if name_[-1] == "_":
                raise RuntimeError("In-place operations are not supported")
            n = super().create_node(kind, target, args, kwargs, name)
            n.tag = "foo"
            return n

    class Inplace(tg.nn.Module):
        def forward(self, x):
            x.add_(3.0)
            return x

    class Fine(tg.nn.Module):
        def forward(self, a, b):
            return a + b
    with pytest.raises(RuntimeError, match="In-place operations"):
        NoInplace().trace(Inplace())
    assert all(n.tag == "foo" for n in NoInplace().trace(Fine()).nodes)


def test_wrap_and_autowrap():   # port: test_wrap, test_wrapped_via_decorator, test_autowrap_functions
    def to_trace(y):
        return a_lifted_leaf((4, y), 3) + a_lifted_leaf((3, 4), 5) + a_lifted_leaf((y, y), y)
    m = symbolic_trace(to_trace)
    assert "a_lifted_leaf" in m.code and m(2) == 27
    assert a_lifted_leaf.__name__ == "a_lifted_leaf" and globals()["a_lifted_leaf"] is a_lifted_leaf
    d = symbolic_trace(lambda y: wrapped_via_decorator(y))
    assert "wrapped_via_decorator" in d.code and d(0) == 1
    retraced = symbolic_trace(d)
    assert "wrapped_via_decorator" in retraced.code and retraced(0) == 1
    t = Transformer(d).transform()
    assert "wrapped_via_decorator" in t.code and t(0) == 1

    class AutowrapFn(tg.nn.Module):
        def forward(self, x):
            return fx_int(x.shape[0] / 2)
    with pytest.raises(TypeError):
        Tracer().trace(AutowrapFn())
    tracer = Tracer(autowrap_functions=(fx_int,))
    graph = tracer.trace(AutowrapFn())
    gm = GraphModule(tracer.root, graph, "test")
    assert gm(tg.ones(4)) == 2
    sq = symbolic_trace(lambda x: math.sqrt(x.size(0)) + x)   # math is autowrapped
    assert any(n.target is math.sqrt for n in sq.graph.nodes)
    np.testing.assert_allclose(sq(tg.zeros(4)).numpy(), 2.0)


def test_wrap_outside_module_scope_raises():
    with pytest.raises(NotImplementedError, match="top level of a module"):
        wrap("len")


def test_tensor_constants_coalesced():   # port: test_tensor_attribute_coalseced, test_tensor_attribute
    val = tg.tensor(5)

    def f(x):
        return x + val + val
    traced = symbolic_trace(f)
    assert len({n.target for n in traced.graph.nodes if n.op == "get_attr"}) == 1

    class TensorAttribute(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.tensor = tg.rand(3, 4)

        def forward(self, x):
            return tg.nn.functional.linear(x, self.tensor)

    class Wrapper(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.ta = TensorAttribute()

        def forward(self, x):
            return tg.nn.functional.linear(x, self.ta.tensor)
    w = Wrapper()
    gm = symbolic_trace(w)
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["ta.tensor"]
    x = tg.rand(2, 4)
    np.testing.assert_allclose(gm(x).numpy(), w(x).numpy())


def test_record_stack_traces():   # port: test_stack_traces
    class M(tg.nn.Module):
        def forward(self, a, b):
            return a + b
    tracer = Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(M())
    for node in graph.nodes:
        if node.op != "output":
            assert "test_fx.py" in node.stack_trace
    assert "# File: " in GraphModule(tracer.root, graph).print_readable(print_output=False)


def test_fx_create_arg_protocol():   # port: test_fx_create_arg
    class CustomArg:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __fx_create_arg__(self, tracer):
            return tracer.create_node("call_function", CustomArg,
                                      (tracer.create_arg(self.x), tracer.create_arg(self.y)), {})

    class Leaf(tg.nn.Module):
        def forward(self, o):
            return o.x + o.y

    class Root(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Leaf()

        def forward(self, x, y):
            return self.inner(CustomArg(x, y))

    class T(Tracer):
        def is_leaf_module(self, m, qualname):
            return type(m) is Leaf
    m = Root()
    gm = GraphModule(m, T().trace(m))
    assert "CustomArg(" in gm.code
    assert gm(tg.ones(1), tg.ones(1)).item() == 2.0


# ---- Graph and Node API -----------------------------------------------------------------------
def test_graph_fns_and_root_dict():   # port: test_graph_fns, test_construct_root_dict
    g = tfx.Graph()
    a = g.placeholder("a")
    b = g.call_module("linear", (a,))
    c = g.get_attr("bias")
    d = g.call_method("add", (b, c))
    e = g.call_function(tg.sin, (d,))
    g.output(e)
    mod = tg.nn.Module()
    mod.linear = tg.nn.Linear(3, 4)
    mod.bias = tg.rand(4)
    gm = GraphModule(mod, g)
    gm.graph.lint()
    x = tg.rand(3)
    np.testing.assert_allclose(_np(gm(x)), _np(tg.sin(mod.linear(x) + mod.bias)), atol=1e-6)
    assert "torch.sin(add)" in gm.code

    graph = tfx.Graph()
    x_ = graph.create_node("placeholder", "x")
    b_ = graph.create_node("call_module", "foo.bar.baz", args=(x_,))
    c_ = graph.create_node("get_attr", "zip.zap.zam")
    graph.output(graph.create_node("call_function", operator.add, args=(b_, c_)))
    lin, p = tg.nn.Linear(3, 4), tg.rand(3, 4)
    gm2 = GraphModule({"foo.bar.baz": lin, "zip.zap.zam": p}, graph)
    assert "self.foo.bar.baz" in gm2.code
    x = tg.rand(3, 3)
    np.testing.assert_allclose(_np(gm2(x)), _np(lin(x) + p), atol=1e-6)
    with pytest.raises(RuntimeError, match="zip.zap.zam"):
        GraphModule({"foo.bar.baz": lin}, graph)


def test_node_users_and_replacement():   # port: test_all_input_nodes, test_remove_uses
    g = tfx.Graph()
    x = g.placeholder("x")
    relu = g.call_function(tg.relu, (x,))
    neg = g.call_function(tg.neg, (relu,))
    both = g.call_function(operator.add, (relu, neg))
    g.output(both)
    assert both.all_input_nodes == [relu, neg] and list(relu.users) == [neg, both]
    assert neg.replace_all_uses_with(relu) == [both]
    assert both.args == (relu, relu) and not neg.users
    g.erase_node(neg)
    assert neg not in relu.users and len(g.nodes) == 4
    both.replace_input_with(relu, x)
    assert both.args == (x, x) and list(relu.users) == []
    with pytest.raises(RuntimeError, match="still had 2 users"):
        g.erase_node(x)
    assert g.eliminate_dead_code() and [n.name for n in g.nodes] == ["x", "add", "output"]


def test_inserting_before_after_and_recompile():
    class M(tg.nn.Module):
        def forward(self, x):
            return tg.relu(x) + 1
    gm = symbolic_trace(M())
    relu = next(n for n in gm.graph.nodes if n.target is tg.relu)
    with gm.graph.inserting_after(relu):
        neg = gm.graph.call_function(tg.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda u: u is not neg)
    with gm.graph.inserting_before(relu):
        gm.graph.call_method("abs", (relu.args[0],))   # dead: removed below
    gm.graph.lint()
    assert [n.name for n in gm.graph.nodes] == ["x", "abs_1", "relu", "neg", "add", "output"]
    gm.graph.eliminate_dead_code()
    gm.recompile()
    assert "neg = torch.neg(relu)" in gm.code
    np.testing.assert_allclose(gm(tg.tensor([-1.0, 2.0])).numpy(), [1.0, -1.0])


def test_lint_errors():   # port: test_copy_no_remap, test_wrong_topo
    traced = symbolic_trace(lambda x: tg.relu(x + 3.0))
    copied = tfx.Graph()
    for node in traced.graph.nodes:
        copied.node_copy(node)
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        copied.lint()
    graph = tfx.Graph()
    a = graph.create_node("placeholder", "x")
    b = graph.create_node("call_module", "foo.bar.baz", args=(a,))
    c = graph.create_node("get_attr", "zip.zap.zam")
    d = graph.create_node("call_function", operator.add, args=(b, c))
    graph.output(d)
    d.append(c)
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        graph.lint()


def test_print_tabular_without_tabulate(capsys):
    pytest.importorskip("tabulate", reason="tabulate installed: nothing to compare") if False else None
    try:
        import tabulate  # noqa: F401
        pytest.skip("tabulate is installed here")
    except ImportError:
        pass
    gm_ref, gm = torch.fx.symbolic_trace(lambda x: x + 1), symbolic_trace(lambda x: x + 1)
    with pytest.raises(ImportError):
        gm_ref.graph.print_tabular()
    printed_ref = capsys.readouterr().out
    with pytest.raises(ImportError):
        gm.graph.print_tabular()
    assert capsys.readouterr().out == printed_ref


def test_graph_deepcopy_keeps_tracer_cls():   # port: test_deepcopy_graph_with_tracer_cls
    class TestTracer(Tracer):
        pass
    g = tfx.Graph(tracer_cls=TestTracer)
    g.output(g.placeholder("x"))
    h = copy.deepcopy(g)
    assert h._tracer_cls is TestTracer and str(h) == str(g)


# ---- GraphModule copies and the Interpreter -----------------------------------------------------
def test_deepcopy_and_pickle_graphmodule():   # port: test_deepcopy_*, test_pickle_*
    ref, ours = _pair(convnet, train=False)
    gm = symbolic_trace(ours)
    x = tg.rand(2, 1, 4, 6)
    copied = copy.deepcopy(gm)
    assert type(copied) is not type(gm) and type(copied).__name__ == "GraphModule"
    assert copied.sub.conv.weight is not gm.sub.conv.weight
    np.testing.assert_allclose(_np(copied(x)[0]), _np(gm(x)[0]))
    loaded = pickle.loads(pickle.dumps(gm))
    loaded.graph.lint()
    assert loaded.code == gm.code
    np.testing.assert_allclose(_np(loaded(x)[0]), _np(gm(x)[0]))

    graph = tfx.Graph()
    a, b = graph.placeholder("x"), graph.placeholder("y")
    graph.output(graph.call_function(tg.sin, (graph.call_function(a_non_torch_leaf, (a, b)),)))
    gm2 = GraphModule(tg.nn.Module(), graph)
    loaded2 = pickle.loads(pickle.dumps(gm2))
    x, y = tg.rand(1), tg.rand(1)
    np.testing.assert_allclose(loaded2(x, y).numpy(), gm2(x, y).numpy())


def test_interpreter_overrides_and_errors():
    ref, ours = _pair(mlp)
    gm = symbolic_trace(ours)
    x = tg.rand(2, 3)
    _assert_same(Interpreter(gm).run(x), gm(x))

    class NegSigmoid(Interpreter):   # the torch.fx.Interpreter docstring example
        def call_function(self, target, args, kwargs):
            if target is tg.sigmoid:
                return tg.neg(super().call_function(target, args, kwargs))
            return super().call_function(target, args, kwargs)
    conv_gm = symbolic_trace(_pair(convnet, train=False)[1])
    xi = tg.rand(2, 1, 4, 6)
    np.testing.assert_allclose(_np(NegSigmoid(conv_gm).run(xi)[0]), -_np(conv_gm(xi)[0]), atol=1e-6)
    interp = Interpreter(gm)
    interp.run(x)
    assert list(interp.env) == [n for n in gm.graph.nodes if n.op == "output"]   # freed after last use
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        Interpreter(gm).run()
    placeholder = next(iter(gm.graph.nodes))
    out = Interpreter(gm, garbage_collect_values=False).run(initial_env={placeholder: x})
    _assert_same(out, gm(x))


def test_graphmodule_recompile_after_target_swap():
    gm = symbolic_trace(lambda x: tg.relu(x))
    for n in gm.graph.nodes:
        if n.target is tg.relu:
            n.target = tg.sigmoid
    gm.recompile()
    assert "torch.sigmoid(x)" in gm.code
    np.testing.assert_allclose(gm(tg.zeros(2)).numpy(), 0.5)
    gm.graph = copy.deepcopy(gm.graph)   # assigning a graph recompiles too
    np.testing.assert_allclose(gm(tg.zeros(2)).numpy(), 0.5)


def test_submodule_surgery_matches_torch():
    def surgery(lib, fx):
        ref = linear_bn(lib)
        gm = fx.symbolic_trace(ref)
        assert gm.add_submodule("extra.act", lib.nn.Tanh())
        last = [n for n in gm.graph.nodes if n.op == "call_module"][-1]
        with gm.graph.inserting_after(last):
            act = gm.graph.call_module("extra.act", (last,))
        last.replace_all_uses_with(act, delete_user_cb=lambda u: u is not act)
        bn = next(n for n in gm.graph.nodes if n.target == "1")
        bn.replace_all_uses_with(bn.args[0])
        gm.graph.erase_node(bn)
        gm.delete_all_unused_submodules()
        gm.recompile()
        return gm, [n for n, _ in gm.named_modules()], gm.delete_submodule("nope")
    gm_ref, names_ref, missing_ref = surgery(torch, torch.fx)
    gm, names, missing = surgery(tg, tfx)
    assert gm.code == gm_ref.code and names == names_ref and missing == missing_ref is False
    x = tg.rand(3, 4)
    np.testing.assert_allclose(_np(gm(x)), _np(tg.tanh(tg.relu(gm.get_submodule("0")(x)))), atol=1e-6)


def test_print_readable_nested_graphmodule_matches_torch():
    def build(lib, fx):
        inner = fx.symbolic_trace(lambda x: x.relu() + 1)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x) * 2

        class AllLeaves(fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return True
        m = M()
        return fx.GraphModule(m, AllLeaves().trace(m))
    gm_ref, gm = build(torch, torch.fx), build(tg, tfx)
    assert gm.print_readable(print_output=False) == gm_ref.print_readable(print_output=False)
    assert gm(tg.tensor([-1.0, 1.0])).tolist() == [2.0, 4.0]


def test_assert_is_recorded_and_checked_like_torch():
    # torch._assert inside forward: traced as a call (a Proxy condition), checked when run
    def build(mod):
        class M(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = mod.nn.Linear(3, 2)

            def forward(self, x):
                mod._assert(x.dim() == 2, "need a 2-d input")
                return self.l(x).relu()
        mod.manual_seed(0)
        return M()
    gms = {m: (tfx if m is tg else torch.fx).symbolic_trace(build(m)) for m in (tg, torch)}
    assert gms[tg].code == gms[torch].code
    x = np.ones((4, 3), np.float32)
    assert tuple(gms[tg](tg.tensor(x)).shape) == tuple(gms[torch](torch.tensor(x)).shape)
    for m in (tg, torch):
        with pytest.raises(AssertionError, match="need a 2-d input"):
            gms[m](m.ones(3))
        with pytest.raises(AssertionError, match="boom"):
            m._assert(False, "boom")
        m._assert(m.tensor(True), "not raised")
