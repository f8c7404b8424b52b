"""Small torch names real programs hit: finfo/iinfo, Tensor.is_xpu & co., autograd.Variable,
deterministic-algorithms flag, tracegrad.random (fork_rng), each against torch."""
import warnings

import pytest

import tracegrad

torch = pytest.importorskip("torch")

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    ours, theirs = tracegrad.finfo(getattr(tracegrad, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
    assert repr(ours) == repr(theirs)
    assert ours == tracegrad.finfo(getattr(tracegrad, name))


def test_finfo_default_dtype_follows_set_default_dtype():
    assert tracegrad.finfo().dtype == "float32"
    tracegrad.set_default_dtype(tracegrad.float64)
    try:
        assert tracegrad.finfo().eps == torch.finfo(torch.float64).eps
    finally:
        tracegrad.set_default_dtype(tracegrad.float32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    ours, theirs = tracegrad.iinfo(getattr(tracegrad, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr) and type(getattr(ours, attr)) is type(getattr(theirs, attr))
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("call", [lambda t: t.finfo(t.int32), lambda t: t.finfo(t.bool), lambda t: t.iinfo(t.float32),
                                  lambda t: t.iinfo(t.bool), lambda t: t.iinfo(t.complex64), lambda t: t.finfo("float32")])
def test_info_errors_as_torch(call):
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError, match="info") as ours:
        call(tracegrad)
    assert type(ours.value) is type(theirs.value)


@pytest.mark.parametrize("name", ["is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_sparse_csr",
                                  "is_mkldnn", "is_nested", "is_vulkan", "is_ipu"])
def test_backend_queries(name):
    assert getattr(tracegrad.ones(2), name) is getattr(torch.ones(2), name) is False


def test_variable_is_a_tensor_sharing_data():
    for t in (torch, tracegrad):
        x = t.ones(2)
        v = t.autograd.Variable(x, requires_grad=True)
        assert type(v) is t.Tensor and v is not x and v.requires_grad and v.is_leaf and not x.requires_grad
        with t.no_grad():
            v[0] = 5.0
        assert x.tolist() == [5.0, 1.0]
        y = t.ones(2, requires_grad=True) * 2
        w = t.autograd.Variable(y)
        assert not w.requires_grad and w.grad_fn is None and isinstance(y, t.autograd.Variable)
        assert t.autograd.Variable().shape == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor"):
            t.autograd.Variable(3)


def test_variable_volatile_warns_and_refuses_requires_grad():
    """Old programs (RL-Adventure's DQN, MAML-era code) still pass ``volatile=True``: torch warns
    that it has no effect (from the caller's line), and refuses it beside ``requires_grad``."""
    for t in (torch, tracegrad):
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect") as rec:
            v = t.autograd.Variable(t.ones(2), volatile=True)
        assert rec[0].filename == __file__
        assert not v.requires_grad and v.tolist() == [1.0, 1.0]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t.autograd.Variable(t.ones(2), volatile=False)
            t.autograd.Variable(t.ones(2), requires_grad=True)
        with pytest.warns(UserWarning, match="volatile was removed"):
            with pytest.raises(ValueError, match="can't be volatile and require_grad at the same time"):
                t.autograd.Variable(t.ones(2), requires_grad=True, volatile=True)
        with pytest.warns(UserWarning, match="volatile was removed"):
            with pytest.raises(TypeError, match="Variable data has to be a tensor"):
                t.autograd.Variable([1.0], volatile=True)


def test_deterministic_flag_round_trips():
    for t in (torch, tracegrad):
        try:
            t.use_deterministic_algorithms(True)
            assert t.are_deterministic_algorithms_enabled() and not t.is_deterministic_algorithms_warn_only_enabled()
            t.use_deterministic_algorithms(False, warn_only=True)
            assert not t.are_deterministic_algorithms_enabled() and t.is_deterministic_algorithms_warn_only_enabled()
            with pytest.raises(TypeError, match="mode"):
                t.use_deterministic_algorithms(1)
        finally:
            t.use_deterministic_algorithms(False)
        assert not t.are_deterministic_algorithms_enabled()


def test_random_module_names():
    assert tracegrad.random.manual_seed is tracegrad.manual_seed
    assert tracegrad.random.get_rng_state is tracegrad.get_rng_state
    assert {n for n in tracegrad.random.__all__} <= set(dir(torch.random))


@pytest.mark.parametrize("raise_inside", [False, True])
def test_fork_rng_restores_stream_and_seed(raise_inside):
    for t in (torch, tracegrad):
        t.manual_seed(1)
        expected = t.rand(3).tolist()
        t.manual_seed(1)
        try:
            with t.random.fork_rng():
                t.manual_seed(5)
                assert t.initial_seed() == 5
                t.rand(7)
                if raise_inside:
                    raise ValueError
        except ValueError:
            pass
        assert t.initial_seed() == 1
        assert t.rand(3).tolist() == expected


def test_fork_rng_disabled_changes_nothing():
    tracegrad.manual_seed(1)
    with tracegrad.random.fork_rng(enabled=False):
        tracegrad.manual_seed(5)
    assert tracegrad.initial_seed() == 5
