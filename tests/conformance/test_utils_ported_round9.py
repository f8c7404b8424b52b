"""Ported from PyTorch's test/test_utils.py, round 9: the TestCheckpoint cases not ported before
(checkpoint_sequential's argument errors, the device-type helpers), TestAssert, TestRenderUtils
and TestDeviceUtils. Each body runs under torch 2.13 (the oracle) and tracegrad through the
``T`` fixture; each test names its original.

Not ported: the accelerator-only cases (RNG of a GPU, early free measured by device memory,
multi-GPU device states), TestHipify*, TestStandaloneCPPJIT and the TorchScript half of
TestAssert (test_assert_scriptable)."""
import importlib
import warnings

import pytest


def _mod(T, name):
    return importlib.import_module(f"{T.__name__}.{name}")


# ---- TestCheckpoint -----------------------------------------------------------------------------
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_deprecated_no_args(T, use_reentrant):
    # TestCheckpoint.test_checkpoint_sequential_deprecated_no_args: no input is a TypeError
    class Noop(T.nn.Module):
        def forward(self):
            pass

    model = T.nn.Sequential(Noop())
    with pytest.raises(TypeError):
        _mod(T, "utils.checkpoint").checkpoint_sequential(model, 1, use_reentrant=use_reentrant)


def test_infer_device_state_recursive_meta(T):
    # TestCheckpoint.test_infer_device_state_recursive_meta: tensors nested in a dict count
    ck = _mod(T, "utils.checkpoint")
    assert ck._infer_device_type({"foo": T.rand(10, device="meta")}) == "meta"


def test_infer_device_type_cpu_only_is_default(T):
    # TestCheckpoint (_infer_device_type): CPU tensors are left out; none left gives the default
    ck = _mod(T, "utils.checkpoint")
    assert ck._infer_device_type(T.ones(2), [T.zeros(1)], 3) == ck.DefaultDeviceType.get_device_type() == "cpu"


def test_infer_device_state_one_device_type_does_not_warn(T):
    # TestCheckpoint.test_infer_device_state_recursive_multi_gpu (its same-type case, on meta):
    # several tensors of one non-CPU device type give that type without a warning
    ck = _mod(T, "utils.checkpoint")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ck._infer_device_type({"a": T.rand(2, device="meta"), "b": [T.rand(2, device="meta")]}) == "meta"


def test_get_device_states_cpu(T):
    # TestCheckpoint.test_get_device_states_recursive (CPU): CPU tensors have no device state
    ck = _mod(T, "utils.checkpoint")
    ids, states = ck.get_device_states({"foo": T.rand(10), "bar": [T.rand(10)]})
    assert (list(ids), list(states)) == ([], [])
    ck.set_device_states([], [])


# ---- TestAssert ----------------------------------------------------------------------------------
def test_assert_true(T):
    # TestAssert.test_assert_true: bool and one-element bool tensor conditions
    T._assert(True, "foo")
    with pytest.raises(AssertionError, match="bar"):
        T._assert(False, "bar")
    T._assert(T.tensor([True], dtype=T.bool), "foo")
    with pytest.raises(AssertionError, match="bar"):
        T._assert(T.tensor([False], dtype=T.bool), "bar")


# ---- TestRenderUtils -----------------------------------------------------------------------------
def test_render_utils_basic(T):
    # TestRenderUtils.test_basic: the call rendered with torch's names and elided tensors
    assert T._utils.render_call(T.sum, [T.zeros(100)], {"dim": 0}) == "torch.sum(tensor([...], size=(100,)), dim=0)"
    assert (T._utils.render_call(T.sum, [T.zeros(100, 100)], {"dim": 0})
            == "torch.sum(tensor([...], size=(100, 100)), dim=0)")


def test_printoptions_context_manager(T):
    # TestRenderUtils.test_basic (what render_call relies on): printoptions(threshold=0,
    # edgeitems=0) elides every element and names the size (before the dtype), then restores
    before = repr(T.arange(3))
    with T._tensor_str.printoptions(threshold=0, edgeitems=0):
        elided = [repr(T.zeros(3, dtype=T.int32)), repr(T.zeros(2, 2, 2)), repr(T.tensor(2.0)),
                  repr(T.zeros(2, requires_grad=True)), repr(T.zeros(0))]
    with T._tensor_str.printoptions(edgeitems=0):
        small = repr(T.ones(2))
    assert [s.replace(T.__name__ + ".", "torch.") for s in elided] == [
        "tensor([...], size=(3,), dtype=torch.int32)", "tensor([...], size=(2, 2, 2))", "tensor(2., size=())",
        "tensor([...], size=(2,), requires_grad=True)", "tensor([])"]
    assert small == "tensor([1., 1.], size=(2,))"
    assert repr(T.arange(3)) == before == "tensor([0, 1, 2])"
    assert T._tensor_str.get_printoptions()["edgeitems"] == 3


def test_printoptions_restored_after_error(T):
    # TestRenderUtils (printoptions): the options come back when the block raises
    with pytest.raises(ValueError):
        with T._tensor_str.printoptions(threshold=0, edgeitems=0):
            raise ValueError
    assert repr(T.ones(2)) == "tensor([1., 1.])"


# ---- TestDeviceUtils -----------------------------------------------------------------------------
def test_device_utils_basic(T):
    # TestDeviceUtils.test_basic
    with T.device("meta") as dev:
        x = T.empty(3, 3)
    assert x.device.type == "meta"
    assert dev == T.device("meta")


def test_device_utils_decorator(T):
    # TestDeviceUtils.test_decorator
    @_mod(T, "utils._device").set_device("meta")
    def f():
        return T.empty(3, 3)

    assert f().device.type == "meta"
    assert T.empty(1).device.type == "cpu"


def test_device_utils_decorator_generator(T):
    # TestDeviceUtils.test_decorator_generator: each step of the generator runs on the device
    @_mod(T, "utils._device").set_device("meta")
    def f():
        yield T.empty(3, 3)
        yield T.empty(3, 3)

    r1, r2 = list(f())
    assert r1.device.type == "meta"
    assert r2.device.type == "meta"


def test_device_utils_nn_module(T):
    # TestDeviceUtils.test_nn_module
    with T.device("meta"):
        m = T.nn.Linear(40, 50)
    assert m.weight.device.type == "meta"


def test_device_utils_set_default_device(T):
    # TestDeviceUtils.test_set_default_device, test_get_default_device
    try:
        T.set_default_device("meta")
        r = T.empty(2, 2)
        default = T.get_default_device().type
    finally:
        T.set_default_device(None)
    assert r.device.type == "meta"
    assert default == "meta"
    assert T.get_default_device().type == "cpu"


# ---- test/test_serialization.py ------------------------------------------------------------------
def test_serialization_same_tensor_twice_is_one_object(T):
    # TestSerialization (SerializationMixin: a tensor saved under several names in one object):
    # one tensor saved under two keys loads as one object, so tied weights stay tied
    import io
    m = T.nn.Linear(2, 2)
    buf = io.BytesIO()
    T.save({"a": m.weight, "b": m.weight, "c": [m.weight, m.bias]}, buf)
    buf.seek(0)
    r = T.load(buf)
    assert r["a"] is r["b"] and r["c"][0] is r["a"]
    assert r["c"][1] is not r["a"]
    assert T.equal(r["a"], m.weight)
    with T.no_grad():
        r["a"].add_(1)
    assert T.equal(r["b"], r["a"])


def test_serialization_parameter_and_module_share(T):
    # TestSerialization: a state dict and a module holding the same Parameter, saved together,
    # load sharing it (one object)
    import io
    m = T.nn.Linear(2, 2)
    buf = io.BytesIO()
    T.save({"sd": {"w": m.weight}, "model": m}, buf)
    buf.seek(0)
    r = T.load(buf, weights_only=False)
    assert r["sd"]["w"] is r["model"].weight
    assert type(r["model"].weight).__name__ == "Parameter"
