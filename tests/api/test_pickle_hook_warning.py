"""Pickling a tensor with tensor hooks (``pickle.dumps``, a multiprocessing queue) warns for each
hook, as torch's ``Tensor.__reduce_ex__`` (``warn_if_has_hooks``): the hooks are not pickled. A
hook marked ``utils.hooks.unserializable_hook`` is not warned about; the warning names the
caller's line."""
import pickle
import warnings

import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _pickled(T, mark):
    x = T.ones(2, requires_grad=True)
    hook = (lambda g: g * 2)
    x.register_hook(T.utils.hooks.unserializable_hook(hook) if mark else hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = pickle.loads(pickle.dumps(x))
    return y, [w for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("mark", [False, True], ids=["plain", "unserializable"])
def test_pickling_a_hooked_tensor_warns_as_torch(mark):
    y, got = _pickled(tracegrad, mark)
    _, want = _pickled(torch, mark)
    assert len(got) == len(want) == (0 if mark else 1)
    for g, w in zip(got, want):
        assert str(g.message).split(" at 0x")[0] == str(w.message).split(" at 0x")[0]
        assert "will not be serialized" in str(g.message)
        assert g.filename == __file__
    # the hook is not pickled: the loaded tensor's backward runs none
    assert y.requires_grad
    (y * 1).sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]
