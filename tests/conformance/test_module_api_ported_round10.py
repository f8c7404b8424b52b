"""Round 10: register_buffer corners of PyTorch's test/test_nn.py (TestNN) not ported before:
tensor-like objects (a ``__torch_function__`` class), non-tensor values, overwriting and None
buffers. Each body runs under the ``T`` fixture, once with torch 2.13 (the oracle) and once with
tracegrad. Each test names its original."""
import pytest


class _TensorLike:
    """An object that takes part in torch's function overrides without being a tensor."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError


def test_register_buffer_allows_tensor_like_object(T):
    # TestNN.test_register_buffer_allows_tensor_like_object
    m = T.nn.Module()
    buffer = _TensorLike()
    m.register_buffer("buffer_name", buffer)
    assert m.buffer_name is buffer
    assert m.get_buffer("buffer_name") is buffer


def test_register_buffer_raises_error_if_not_tensor(T):
    # TestNN.test_register_buffer_raises_error_if_not_tensor
    m = T.nn.Module()
    with pytest.raises(TypeError):
        m.register_buffer("attribute_name", 5)
    with pytest.raises(TypeError):
        m.register_buffer("attribute_name", [1.0])


def test_register_buffer_fails_on_overwriting_with_different_kind(T):
    # TestNN.test_register_buffer_raises_error_if_attr_exists (a parameter, a plain attribute or
    # a submodule of that name is refused with KeyError)
    m = T.nn.Module()
    m.attribute_name = 5
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))
    m = T.nn.Module()
    m.register_parameter("attribute_name", T.nn.Parameter())
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))
    m = T.nn.Module()
    m.add_module("attribute_name", T.nn.Module())
    with pytest.raises(KeyError):
        m.register_buffer("attribute_name", T.rand(5))


def test_register_buffer_allows_overwriting_with_same_name_and_none(T):
    # TestNN.test_register_buffer_allows_overwriting_with_same_name / ..._allows_returning_none
    m = T.nn.Module()
    b1, b2 = T.rand(5), T.rand(10)
    m.register_buffer("buffer_name", b1)
    m.register_buffer("buffer_name", b2)
    assert m.buffer_name is b2
    m.register_buffer("buffer_name", None)
    assert m.buffer_name is None
    assert "buffer_name" not in m.state_dict()
    assert [n for n, _ in m.named_buffers()] == []
    m.buffer_name = T.ones(2)                  # assigning a tensor to a None buffer keeps it a buffer
    assert [n for n, _ in m.named_buffers()] == ["buffer_name"]


def test_register_buffer_persistent_and_name_checks(T):
    # TestNN.test_buffer_not_persistent / test_register_buffer_raises_error_if_name_is_not_string
    m = T.nn.Module()
    m.register_buffer("p", T.ones(1))
    m.register_buffer("np", T.zeros(1), persistent=False)
    assert list(m.state_dict()) == ["p"]
    assert sorted(n for n, _ in m.named_buffers()) == ["np", "p"]
    with pytest.raises(TypeError):
        m.register_buffer(1, T.ones(1))
    with pytest.raises(KeyError):
        m.register_buffer("a.b", T.ones(1))
    with pytest.raises(KeyError):
        m.register_buffer("", T.ones(1))
