"""Ported from PyTorch's test/test_nn.py (TestNN module API tests that need no CUDA): naming and
iteration, registration errors, ``__setattr__`` rules, submodule lookup errors, state_dict /
load_state_dict semantics and the exact ``repr`` of common layers. Each body runs under torch
and tracegrad (``T``)."""
import pytest


def _shared(T):
    l = T.nn.Linear(2, 2)
    s = T.nn.Sequential(l, l, T.nn.ReLU())
    return s, l


def test_named_modules_remove_duplicate_and_prefix(T):
    # TestNN.test_named_modules / test_modules
    s, l = _shared(T)
    assert [n for n, _ in s.named_modules()] == ["", "0", "2"]
    assert [n for n, _ in s.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in s.named_modules(prefix="net")] == ["net", "net.0", "net.2"]
    assert len(list(s.modules())) == 3


def test_named_parameters_shared_and_prefix(T):
    # TestNN.test_named_parameters_remove_duplicate / test_parameters_and_named_parameters
    s, l = _shared(T)
    assert [n for n, _ in s.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in s.named_parameters(remove_duplicate=False)] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert [n for n, _ in s.named_parameters(prefix="x", recurse=False)] == []
    assert [n for n, _ in l.named_parameters(prefix="x")] == ["x.weight", "x.bias"]
    m = T.nn.Module()
    m.a = T.nn.Parameter(T.zeros(1))
    m.b = m.a
    assert [n for n, _ in m.named_parameters()] == ["a"]
    assert len(list(m.parameters())) == 1


def test_named_buffers_and_children(T):
    bn = T.nn.BatchNorm1d(2)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    s = T.nn.Sequential(T.nn.Linear(1, 1), bn)
    assert [n for n, _ in s.named_buffers(prefix="p")] == ["p.1.running_mean", "p.1.running_var",
                                                             "p.1.num_batches_tracked"]
    assert [n for n, _ in s.named_children()] == ["0", "1"]


def test_apply_visits_children_first(T):
    # TestNN.test_apply
    s = T.nn.Sequential(T.nn.Linear(1, 1), T.nn.Sequential(T.nn.ReLU()))
    seen = []
    out = s.apply(lambda m: seen.append(type(m).__name__))
    assert out is s
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]


def test_to_dtype_semantics(T):
    # TestNN.test_to / test_type: float params convert, integer buffers do not; params stay Parameters
    bn = T.nn.BatchNorm1d(2)
    w = bn.weight
    out = bn.to(T.float64)
    assert out is bn
    assert bn.weight.dtype == T.float64 and isinstance(bn.weight, T.nn.Parameter)
    assert bn.running_mean.dtype == T.float64
    assert bn.num_batches_tracked.dtype == T.int64
    bn.half()
    assert bn.weight.dtype == T.float16
    bn.float()
    assert bn.weight.dtype == T.float32
    bn.double()
    assert bn.weight.dtype == T.float64
    assert bn.weight.requires_grad


def test_zero_grad_sets_none_or_zero(T):
    # TestNN.test_zero_grad
    l = T.nn.Linear(2, 1)
    l(T.ones(1, 2)).sum().backward()
    assert l.weight.grad is not None
    l.zero_grad(set_to_none=False)
    assert T.equal(l.weight.grad, T.zeros(1, 2))
    l.zero_grad()
    assert l.weight.grad is None and l.bias.grad is None


def test_requires_grad_(T):
    # TestNN.test_requires_grad_
    l = T.nn.Linear(2, 1)
    assert l.requires_grad_(False) is l
    assert not any(p.requires_grad for p in l.parameters())
    l.requires_grad_()
    assert all(p.requires_grad for p in l.parameters())


def test_train_eval(T):
    s = T.nn.Sequential(T.nn.Dropout(), T.nn.Sequential(T.nn.BatchNorm1d(1)))
    assert s.eval() is s
    assert not any(m.training for m in s.modules())
    s.train()
    assert all(m.training for m in s.modules())
    s.train(False)
    assert not s[1][0].training
    with pytest.raises(ValueError):
        s.train("yes")


def _reprs(T):
    # TestNN.test_repr / extra_repr of layers: exact torch strings
    mods = [
        T.nn.Linear(3, 4),
        T.nn.Linear(3, 4, bias=False),
        T.nn.Conv2d(1, 2, 3),
        T.nn.Conv2d(1, 2, (3, 2), stride=2, padding=1, bias=False, groups=1, dilation=2),
        T.nn.BatchNorm2d(3),
        T.nn.BatchNorm2d(3, momentum=None, affine=False),
        T.nn.LSTM(3, 4),
        T.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True),
        T.nn.Sequential(T.nn.Linear(1, 2), T.nn.Sequential(T.nn.ReLU(), T.nn.Dropout(0.1))),
        T.nn.ModuleList([T.nn.ReLU(), T.nn.ReLU(), T.nn.Tanh()]),
        T.nn.ModuleDict({"a": T.nn.ReLU(), "b": T.nn.Identity()}),
        T.nn.Embedding(5, 2, padding_idx=0),
        T.nn.LayerNorm(4),
        T.nn.Dropout(p=0.3),
        T.nn.MaxPool2d(2),
        T.nn.ReLU(inplace=True),
    ]
    return [repr(m) for m in mods]


def test_repr_matches_torch():
    # TestNN.test_repr: exact strings of common layers and nested containers
    import tracegrad
    torch = pytest.importorskip("torch")
    assert _reprs(tracegrad) == _reprs(torch)


def test_extra_repr_custom(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = T.nn.Linear(1, 1)

        def extra_repr(self):
            return "k=1\nj=2"

    assert repr(M()) == "M(\n  k=1\n  j=2\n  (l): Linear(in_features=1, out_features=1, bias=True)\n)"


@pytest.mark.parametrize("fn", ["add_module", "register_module"])
def test_add_module_errors(T, fn):
    # TestNN.test_add_module / test_add_module_raises_error_if_attr_exists
    m = T.nn.Module()
    add = getattr(m, fn)
    with pytest.raises(KeyError):
        add("a.b", T.nn.ReLU())
    with pytest.raises(KeyError):
        add("", T.nn.ReLU())
    with pytest.raises(TypeError):
        add(1, T.nn.ReLU())
    with pytest.raises(TypeError):
        add("x", 3)
    m.attr = 1
    with pytest.raises(KeyError):
        add("attr", T.nn.ReLU())
    add("ok", None)
    assert m.ok is None
    add("ok", T.nn.ReLU())
    assert isinstance(m.ok, T.nn.ReLU)


def test_register_buffer_and_parameter_errors(T):
    # TestNN.test_register_buffer_raises_error_if_* / test_register_parameter_raises_error_if_*
    m = T.nn.Module()
    with pytest.raises(KeyError):
        m.register_buffer("a.b", T.zeros(1))
    with pytest.raises(KeyError):
        m.register_buffer("", T.zeros(1))
    with pytest.raises(TypeError):
        m.register_buffer("b", 5)
    with pytest.raises(KeyError):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError):
        m.register_parameter("p", T.zeros(1))
    m.attr = 1
    with pytest.raises(KeyError):
        m.register_buffer("attr", T.zeros(1))
    with pytest.raises(KeyError):
        m.register_parameter("attr", None)
    m.register_buffer("buf", None)
    assert m.buf is None and "buf" in m._buffers


def test_setattr_rules(T):
    # TestNN.test_assignment
    m = T.nn.Module()
    m.p = T.nn.Parameter(T.zeros(1))
    with pytest.raises(TypeError):
        m.p = T.zeros(1)
    m.p = None
    assert m.p is None and "p" in m._parameters
    m.sub = T.nn.ReLU()
    with pytest.raises(TypeError):
        m.sub = T.zeros(1)
    m.sub = None
    assert m.sub is None
    m.register_buffer("b", T.zeros(1))
    with pytest.raises(TypeError):
        m.b = 3
    m.b = T.ones(1)
    assert T.equal(m.b, T.ones(1))
    # a Parameter assigned over a submodule name moves it between the stores
    m.sub = T.nn.Parameter(T.zeros(1))
    assert "sub" in m._parameters and "sub" not in m._modules
    del m.sub
    assert "sub" not in m._parameters
    with pytest.raises(AttributeError):
        m.sub


def _lookup_errors(T):
    # TestNN.test_get_submodule / test_get_parameter / test_get_buffer
    s = T.nn.Sequential(T.nn.BatchNorm1d(2))
    s.x = 1
    assert s.get_submodule("0") is s[0]
    assert s.get_parameter("0.weight") is s[0].weight
    assert s.get_buffer("0.running_mean") is s[0].running_mean
    msgs = []
    for fn, arg in [(s.get_submodule, "1"), (s.get_submodule, "x"), (s.get_parameter, "0.foo"),
                    (s.get_parameter, "0.running_mean"), (s.get_buffer, "0.weight"), (s.get_buffer, "0.nope")]:
        with pytest.raises(AttributeError) as e:
            fn(arg)
        msgs.append(str(e.value))
    return msgs


def test_get_submodule_messages_match_torch():
    import tracegrad
    torch = pytest.importorskip("torch")
    assert _lookup_errors(tracegrad) == _lookup_errors(torch)


def test_load_state_dict_return_and_strict(T):
    # TestNN.test_load_state_dict
    l = T.nn.Linear(2, 2)
    sd = l.state_dict()
    res = l.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    bad = {"weight": sd["weight"], "extra": T.zeros(1)}
    with pytest.raises(RuntimeError, match="Missing key"):
        l.load_state_dict(bad)
    res = l.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    assert tuple(res) == (["bias"], ["extra"])
    with pytest.raises(RuntimeError, match="size mismatch"):
        l.load_state_dict({"weight": T.zeros(3, 2), "bias": sd["bias"]}, strict=False)
    with pytest.raises(TypeError):
        l.load_state_dict([("weight", sd["weight"])])


def test_load_state_dict_copies_not_assigns(T):
    l = T.nn.Linear(2, 2)
    w = l.weight
    new = T.ones(2, 2, dtype=T.float64)
    l.load_state_dict({"weight": new, "bias": T.zeros(2)})
    assert l.weight is w and l.weight.dtype == T.float32
    assert T.equal(l.weight.detach(), T.ones(2, 2))


def test_load_state_dict_assign(T):
    # TestNN.test_load_state_dict_assign: assign=True keeps the loaded tensor's properties
    l = T.nn.Linear(2, 2)
    new_w = T.ones(2, 2, dtype=T.float64)
    l.load_state_dict({"weight": new_w, "bias": T.zeros(2)}, assign=True)
    assert isinstance(l.weight, T.nn.Parameter) and l.weight.requires_grad
    assert l.weight.dtype == T.float64
    bn = T.nn.BatchNorm1d(2)
    rm = T.full((2,), 3.0)
    bn.load_state_dict({**bn.state_dict(), "running_mean": rm}, assign=True)
    assert bn.running_mean is rm


def test_state_dict_keep_vars(T):
    l = T.nn.Linear(2, 2)
    sd = l.state_dict()
    assert not sd["weight"].requires_grad and not isinstance(sd["weight"], T.nn.Parameter)
    assert l.state_dict(keep_vars=True)["weight"] is l.weight
    sd["weight"].add_(1)   # shares storage with the parameter
    assert T.equal(sd["weight"], l.weight.detach())


def test_state_dict_non_persistent_and_order(T):
    m = T.nn.Module()
    m.register_buffer("a", T.zeros(1), persistent=False)
    m.register_buffer("b", T.zeros(1))
    m.p = T.nn.Parameter(T.zeros(1))
    m.sub = T.nn.Linear(1, 1)
    assert list(m.state_dict()) == ["p", "b", "sub.weight", "sub.bias"]


def test_dir_lists_members(T):
    # TestNN.test_dir
    l = T.nn.Linear(2, 2)
    l.register_buffer("buf", T.zeros(1))
    l.sub = T.nn.ReLU()
    d = dir(l)
    for name in ("weight", "bias", "buf", "sub", "forward", "in_features"):
        assert name in d
    assert "_parameters" in d
    assert d == sorted(d)
