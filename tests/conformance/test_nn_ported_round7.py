"""Round 7 port of PyTorch's test/test_nn.py (TestNN, module API parts): register_buffer /
register_parameter argument checks and overwrites, Sequential's list-like methods (pop, insert,
extend, +=, *, *=), state_dict pre-hooks. Each body runs under torch 2.13 (the oracle) and
tracegrad (the ``T`` fixture); cases earlier rounds ported (test_module_api_ported.py,
test_nn_ported*.py) are not repeated. Each test names its original."""
import pytest


def test_register_buffer_raises_error_if_name_is_not_string(T):
    # TestNN.test_register_buffer_raises_error_if_name_is_not_string
    m = T.nn.Module()
    with pytest.raises(TypeError, match="buffer name should be a string. Got "):
        m.register_buffer(1, T.rand(5))
    with pytest.raises(TypeError, match="buffer name should be a string. Got "):
        m.register_buffer(None, T.rand(5))


def test_register_buffer_raises_error_if_not_tensor(T):
    # TestNN.test_register_buffer_raises_error_if_not_tensor
    m = T.nn.Module()
    with pytest.raises(TypeError):
        m.register_buffer("attribute_name", 5)


def test_register_buffer_allows_overwriting_with_same_name(T):
    # TestNN.test_register_buffer_allows_overwriting_with_same_name
    m = T.nn.Module()
    b1, b2 = T.rand(5), T.rand(5) + 1.0
    m.register_buffer("buffer_name", b1)
    assert m.buffer_name is b1
    m.register_buffer("buffer_name", b2)
    assert m.buffer_name is b2
    m.register_buffer("buffer_name", None)
    assert m.buffer_name is None


def test_register_buffer_persistent(T):
    # TestNN.test_register_buffer / test_state_dict (persistent=False): a non-persistent buffer
    # is a buffer but not in the state dict, and re-registering it persistent brings it back
    m = T.nn.Module()
    m.register_buffer("a", T.ones(2), persistent=False)
    assert [n for n, _ in m.named_buffers()] == ["a"] and "a" not in m.state_dict()
    m.register_buffer("a", T.ones(2))
    assert "a" in m.state_dict()


def test_register_parameter_raises_error_if_attr_exists(T):
    # TestNN.test_register_parameter_raises_error_if_attr_exists
    m = T.nn.Module()
    m.attribute_name = 5
    with pytest.raises(KeyError):
        m.register_parameter("attribute_name", T.nn.Parameter())
    del m.attribute_name
    m.register_buffer("attribute_name", T.rand(5))
    with pytest.raises(KeyError):
        m.register_parameter("attribute_name", T.nn.Parameter())
    del m.attribute_name
    m.add_module("attribute_name", T.nn.Module())
    with pytest.raises(KeyError):
        m.register_parameter("attribute_name", T.nn.Parameter())


def test_register_parameter_allows_overwriting_with_same_name(T):
    # TestNN.test_register_parameter_allows_overwriting_with_same_name
    m = T.nn.Module()
    p1, p2 = T.nn.Parameter(T.rand(5)), T.nn.Parameter(T.rand(5) + 1.0)
    m.register_parameter("param_name", p1)
    assert m.param_name is p1
    m.register_parameter("param_name", p2)
    assert m.param_name is p2
    m.register_parameter("param_name", None)
    assert m.param_name is None


def test_register_parameter_errors(T):
    # TestNN.test_register_parameter_raises_error_if_name_is_not_string / _has_dot / _is_empty /
    # a plain tensor
    m = T.nn.Module()
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, T.nn.Parameter(T.rand(2)))
    with pytest.raises(KeyError, match=r'parameter name can.+t contain "\."'):   # (KeyError's str quotes it)
        m.register_parameter("a.b", T.nn.Parameter(T.rand(2)))
    with pytest.raises(KeyError, match=r'parameter name can.+t be empty string ""'):
        m.register_parameter("", T.nn.Parameter(T.rand(2)))
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' object to parameter"
                       if T.__name__ == "torch" else "cannot assign .* object to parameter"):
        m.register_parameter("w", T.rand(2))


def _seq(T, n):
    return [T.nn.Linear(1, 1) for _ in range(n)]


def test_Sequential_pop(T):
    # TestNN.test_Sequential_pop
    l1, l2, l3, l4 = _seq(T, 4)
    n1 = T.nn.Sequential(l1, l2, l3, l4)
    n2 = T.nn.Sequential(l1, l2, l4)
    popped = n1.pop(2)
    assert popped is l3 and len(n1) == 3 and list(n1) == list(n2)
    with pytest.raises(IndexError):
        n1.pop(10)


def test_Sequential_insert(T):
    # TestNN.test_Sequential_insert / test_Sequential_insert_fail_case
    l1, l2, l3, l4 = _seq(T, 4)
    n = T.nn.Sequential(l1, l2, l3)
    n.insert(1, l4)
    assert list(n) == [l1, l4, l2, l3]
    n = T.nn.Sequential(l1, l2, l3)
    n.insert(-1, l4)
    assert list(n) == [l1, l2, l4, l3]
    with pytest.raises(IndexError):
        T.nn.Sequential(l1).insert(5, l2)
    with pytest.raises(AssertionError):
        T.nn.Sequential(l1).insert(0, 5)


def test_Sequential_extend_add(T):
    # TestNN.test_Sequential_extend / test_Sequential_add / test_Sequential_iadd
    l1, l2, l3, l4 = _seq(T, 4)
    n1 = T.nn.Sequential(l1, l2)
    n2 = T.nn.Sequential(l3, l4)
    n3 = T.nn.Sequential(l1, l2)
    for lyr in n2:
        n1.append(lyr)
    n3.extend(n2)
    assert list(n3) == list(n1)
    a = T.nn.Sequential(l1, l2) + T.nn.Sequential(l3, l4)
    assert list(a) == [l1, l2, l3, l4]
    b = T.nn.Sequential(l1, l2)
    b += T.nn.Sequential(l3, l4)
    assert list(b) == [l1, l2, l3, l4]


def test_Sequential_mul(T):
    # TestNN.test_Sequential_mul / test_Sequential_imul: repetition, ValueError for n < 1,
    # TypeError for a non-int
    l1, l2 = _seq(T, 2)
    n = T.nn.Sequential(l1, l2)
    m = n * 2
    assert list(m) == [l1, l2, l1, l2] and list(n) == [l1, l2]
    n *= 2
    assert list(n) == [l1, l2, l1, l2]
    with pytest.raises(ValueError):
        T.nn.Sequential(l1) * 0
    with pytest.raises(TypeError):
        T.nn.Sequential(l1) * 1.5


def test_register_state_dict_pre_hook(T):
    # TestNN.test_register_state_dict_pre_hook: the hook runs once per state_dict() call on
    # each module it is registered on, with (module, prefix, keep_vars)
    calls = []

    class MyModule(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Linear(3, 3))

    def hook(module, prefix, keep_vars):
        calls.append((type(module).__name__, prefix, keep_vars))

    m = MyModule()
    h = m.register_state_dict_pre_hook(hook)
    m.a.register_state_dict_pre_hook(hook)
    m.state_dict()
    assert calls == [("MyModule", "", False), ("Sequential", "a.", False)]
    h.remove()
    calls.clear()
    m.state_dict(keep_vars=True)
    assert calls == [("Sequential", "a.", True)]


def test_module_apply_and_train_eval(T):
    # TestNN.test_apply / test_train_eval: apply visits children before the module and returns
    # it; train(False)/eval() reach every submodule; train("x") is a ValueError
    m = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.Sequential(T.nn.ReLU(), T.nn.Dropout()))
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Dropout", "Sequential", "Sequential"]
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("x")
