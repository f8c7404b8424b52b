"""torch's smaller top-level functions (``_api/torch_extras.py``, ``nn/_toplevel.py``) against
torch 2.13 on the same inputs: values, gradients, warnings and error classes."""
import warnings

import numpy as np
import pytest

from tracegrad._api.argcheck import unguarded

import tracegrad

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _pair(*shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (tracegrad.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


def test_settings_round_trip():
    for lib in (tracegrad, torch):
        assert lib.is_warn_always_enabled() is False
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled() is True
        lib.set_warn_always(False)
    # denormals are kept (torch's default): asking for that mode succeeds in both
    assert tracegrad.set_flush_denormal(False) is torch.set_flush_denormal(False) is True
    assert tracegrad.set_flush_denormal(True) is False      # XLA cannot flush them
    tracegrad.set_anomaly_enabled(True, check_nan=False)
    assert tracegrad.is_anomaly_enabled() and not tracegrad.is_anomaly_check_nan_enabled()
    tracegrad.set_anomaly_enabled(False)
    assert not tracegrad.is_anomaly_enabled()


@pytest.mark.parametrize("spelling", ["class", "string"])
def test_set_default_tensor_type(spelling):
    for lib in (tracegrad, torch):
        arg = lib.DoubleTensor if spelling == "class" else "torch.DoubleTensor"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                lib.set_default_tensor_type(arg)
            # both warn once per process (an earlier test may have had the warning)
            assert all("deprecated" in str(w.message) for w in caught) and len(caught) <= 1
            assert lib.get_default_dtype() == lib.float64
            assert lib.zeros(2).dtype == lib.float64 and lib.tensor([1.5]).dtype == lib.float64
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type(lib.FloatTensor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for bad, error in ((lambda lib: lib.LongTensor, TypeError), (lambda lib: "torch.LongTensor", TypeError),
                           (lambda lib: 3, TypeError), (lambda lib: "torch.NoSuchTensor", AttributeError)):
            for lib in (tracegrad, torch):
                with pytest.raises(error):
                    lib.set_default_tensor_type(bad(lib))
    assert tracegrad.get_default_dtype() == tracegrad.float32


def test_set_default_tensor_type_warns_once_per_process():
    # torch's deprecation is a TORCH_WARN_ONCE: a program that sets float64 and later restores
    # float32 (Michaelvll/DeepCCA's main.py, run twice in one process) warns at most once, and
    # every time under set_warn_always(True)
    for lib in (tracegrad, torch):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                lib.set_default_tensor_type(lib.DoubleTensor)
                lib.set_default_tensor_type(lib.FloatTensor)
                lib.set_default_tensor_type(lib.DoubleTensor)
            assert len(caught) <= 1, lib
            lib.set_warn_always(True)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                lib.set_default_tensor_type(lib.FloatTensor)
                lib.set_default_tensor_type(lib.DoubleTensor)
            assert [str(w.message)[:40] for w in caught] == ["torch.set_default_tensor_type() is depre"] * 2, lib
        finally:
            lib.set_warn_always(False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type(lib.FloatTensor)


@pytest.mark.parametrize("name,args", [
    ("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_int", (5,)), ("sym_float", (3,)),
    ("sym_max", (2, 3)), ("sym_max", (2, 3.0)), ("sym_min", (2.5, 3)), ("sym_min", (4, 1)),
    ("sym_not", (True,)), ("sym_not", (0,)), ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1, 2)),
    ("sym_sqrt", (4,)), ("sym_sqrt", (2.0,)), ("sym_sum", ([1, 2, 3],)), ("sym_sum", ([1.5, 2],))])
def test_sym_helpers_on_numbers(name, args):
    ours, theirs = getattr(tracegrad, name)(*args), getattr(torch, name)(*args)
    assert ours == theirs and type(ours) is type(theirs)
    assert not isinstance(3, tracegrad.SymInt) and not isinstance(2.0, tracegrad.SymFloat)


def test_detach_and_fill():
    a, b = _pair(3, requires_grad=True)
    assert not tracegrad.detach(a).requires_grad and not torch.detach(b).requires_grad
    np.testing.assert_array_equal(_np(tracegrad.fill(a, 2.5)), _np(torch.fill(b, 2.5)))
    v1, v2 = tracegrad.tensor(2.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    y1, y2 = tracegrad.fill(a, v1), torch.fill(b, v2)
    (y1 * tracegrad.arange(3.0)).sum().backward()
    (y2 * torch.arange(3.0)).sum().backward()
    np.testing.assert_array_equal(_np(y1), _np(y2))
    assert v1.grad.item() == v2.grad.item() == 3.0


@pytest.mark.parametrize("kw", [{}, {"count": 1}, {"offset": 4}, {"offset": 4, "count": 1}])
def test_frombuffer(kw):
    buf = np.array([1.0, 2.0], np.float32).tobytes()
    ours = tracegrad.frombuffer(bytearray(buf), dtype=tracegrad.float32, **kw)
    theirs = torch.frombuffer(bytearray(buf), dtype=torch.float32, **kw)
    np.testing.assert_array_equal(_np(ours), _np(theirs))
    assert ours.dtype == tracegrad.float32


@pytest.mark.parametrize("buf,kw", [(8, {"count": 3}), (8, {"offset": 9}), (8, {"offset": -1}), (8, {"offset": 8}),
                                    (3, {}), (8, {"offset": 5})])
def test_frombuffer_errors(buf, kw):
    for lib in (tracegrad, torch):
        with pytest.raises(ValueError):
            lib.frombuffer(bytearray(buf), dtype=lib.float32, **kw)


def test_narrow_copy_method_and_legacy_resize():
    a, b = _pair(4, 3, requires_grad=True)
    n1, n2 = a.narrow_copy(0, 1, 2), b.narrow_copy(0, 1, 2)
    np.testing.assert_array_equal(_np(n1), _np(n2))
    assert type(n1.grad_fn).__name__ == type(n2.grad_fn).__name__
    assert unguarded(tracegrad.Tensor.narrow_copy).__wrapped__ is unguarded(tracegrad.narrow_copy)
    for lib, x in ((tracegrad, a), (torch, b)):
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            r = x.resize(3, 4)
        assert tuple(r.shape) == (3, 4) and tuple(x.shape) == (4, 3)
        with pytest.warns(UserWarning):
            assert tuple(x.resize_as(lib.ones(12)).shape) == (12,)
    np.testing.assert_array_equal(_np(a.resize(2, 6)), _np(b.detach().clone().resize_(2, 6)))


def test_as_subclass():
    class Ours(tracegrad.Tensor):
        pass

    class Theirs(torch.Tensor):
        pass
    a, b = _pair(3, requires_grad=True)
    y1, y2 = a.as_subclass(Ours), b.as_subclass(Theirs)
    assert type(y1) is Ours and type(y2) is Theirs
    assert type(y1.grad_fn).__name__ == type(y2.grad_fn).__name__ == "AliasBackward0"
    assert y1.is_leaf is y2.is_leaf is False and y1._is_view() and y2._is_view()
    (y1 * 3).sum().backward()
    (y2 * 3).sum().backward()
    np.testing.assert_array_equal(_np(a.grad), _np(b.grad))
    with pytest.raises(TypeError):
        a.as_subclass(int)
    with pytest.raises(TypeError):
        b.as_subclass(int)


def _cell_weights(gates, hidden=3, inp=4, seed=1):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.5
          for s in ((gates * hidden, inp), (gates * hidden, hidden), (gates * hidden,), (gates * hidden,))]
    return ws


@pytest.mark.parametrize("name,gates", [("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1),
                                        ("rnn_relu_cell", 1)])
@pytest.mark.parametrize("bias", [True, False])
def test_functional_cells(name, gates, bias):
    ws = _cell_weights(gates)
    if not bias:
        ws = ws[:2]
    x1, x2 = _pair(2, 4, seed=2, requires_grad=True)
    h1, h2 = _pair(2, 3, seed=3)
    c1, c2 = _pair(2, 3, seed=4)
    w1 = [tracegrad.tensor(w, requires_grad=True) for w in ws]
    w2 = [torch.tensor(w, requires_grad=True) for w in ws]
    hx1, hx2 = ((h1, c1), (h2, c2)) if name == "lstm_cell" else (h1, h2)
    o1, o2 = getattr(tracegrad, name)(x1, hx1, *w1), getattr(torch, name)(x2, hx2, *w2)
    o1 = o1 if isinstance(o1, tuple) else (o1,)
    o2 = o2 if isinstance(o2, tuple) else (o2,)
    for p, q in zip(o1, o2):
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-5, atol=1e-6)
    sum(o.sum() for o in o1).backward()
    sum(o.sum() for o in o2).backward()
    for p, q in zip([x1] + w1, [x2] + w2):
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-5, atol=1e-5)


def test_native_layer_and_group_norm():
    a, b = _pair(2, 4, 3, seed=5, requires_grad=True)
    w = np.linspace(0.5, 1.5, 3).astype(np.float32)
    o1 = tracegrad.native_layer_norm(a, [3], tracegrad.tensor(w), tracegrad.tensor(w * 0.1), 1e-5)
    o2 = torch.native_layer_norm(b, [3], torch.tensor(w), torch.tensor(w * 0.1), 1e-5)
    # torch's mean/rstd do not require grad (tracegrad's did)
    assert [t.requires_grad for t in o1] == [t.requires_grad for t in o2] == [True, False, False]
    for p, q in zip(o1, o2):
        assert tuple(p.shape) == tuple(q.shape)
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-5, atol=1e-5)
    o1[0].sum().backward()
    o2[0].sum().backward()
    np.testing.assert_allclose(_np(a.grad), _np(b.grad), atol=1e-5)
    g1 = tracegrad.native_group_norm(a.detach(), None, None, 2, 4, 3, 2, 1e-5)
    g2 = torch.native_group_norm(b.detach(), None, None, 2, 4, 3, 2, 1e-5)
    for p, q in zip(g1, g2):
        assert tuple(p.shape) == tuple(q.shape)
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-5, atol=1e-5)



def test_native_norms_of_an_empty_batch():
    """native_group_norm/native_layer_norm of no samples: torch's empty results (shapes, zero
    weight/bias gradients) without a warning; the group norm's reshape by -1 raised before."""
    res = []
    for mod in (tracegrad, torch):
        x = mod.zeros(0, 4, 3, requires_grad=True)
        w, b = mod.ones(4, requires_grad=True), mod.zeros(4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g = mod.native_group_norm(x, w, b, 0, 4, 3, 2, 1e-5)
            ln = mod.native_layer_norm(x, [3], None, None, 1e-5)
        grads = mod.autograd.grad(g[0].sum(), (x, w, b))
        res.append(([tuple(o.shape) for o in g + ln], [_np(t) for t in grads]))
    assert res[0][0] == res[1][0]
    for p, q in zip(res[0][1], res[1][1]):
        np.testing.assert_array_equal(p, q)

def test_native_dropout_and_feature_dropout():
    a, b = _pair(3, 4, seed=6)
    for lib, x in ((tracegrad, a), (torch, b)):
        out, mask = lib.native_dropout(x, 0.5, False)
        assert mask.dtype == lib.bool and bool(mask.all()) and out.dtype == x.dtype
        np.testing.assert_array_equal(_np(out), _np(x))
        out, mask = lib.native_dropout(x, 0.0, True)
        assert bool(mask.all())
        np.testing.assert_allclose(_np(out), _np(x))
        out, mask = lib.native_dropout(x, 0.5, True)
        kept = _np(mask)
        np.testing.assert_allclose(_np(out)[kept], 2 * _np(x)[kept], rtol=1e-6)
        assert (_np(out)[~kept] == 0).all()
        np.testing.assert_array_equal(_np(lib.feature_dropout(x.reshape(1, 3, 4), 0.5, False)),
                                      _np(x.reshape(1, 3, 4)))


def test_max_pool1d_with_indices_and_nn_methods():
    a, b = _pair(1, 2, 7, seed=7)
    v1, i1 = tracegrad.max_pool1d_with_indices(a, 2)
    v2, i2 = torch.max_pool1d_with_indices(b, 2)
    np.testing.assert_array_equal(_np(v1), _np(v2))
    np.testing.assert_array_equal(_np(i1), _np(i2))
    np.testing.assert_array_equal(_np(a.hardshrink(0.5)), _np(b.hardshrink(0.5)))
    np.testing.assert_allclose(_np(a.prelu(tracegrad.tensor([0.1, 0.3]))), _np(b.prelu(torch.tensor([0.1, 0.3]))))


def test_cond_and_while_loop():
    for lib in (tracegrad, torch):
        x = lib.ones(2)
        assert lib.cond(lib.tensor(True), lambda t: t + 1, lambda t: t - 1, (x,)).tolist() == [2.0, 2.0]
        assert lib.cond(False, lambda t: t + 1, lambda t: t - 1, (x,)).tolist() == [0.0, 0.0]
        with pytest.raises(Exception) as info:
            lib.cond(lib.tensor([True, False]), lambda t: t, lambda t: t, (x,))
        assert isinstance(info.value, RuntimeError)
        i, y = lib.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t * 2), (lib.tensor(0), x))
        assert int(i) == 3 and y.tolist() == [8.0, 8.0]


@pytest.mark.parametrize("name,nargs", [("eig", 1), ("lstsq", 2), ("solve", 2), ("symeig", 1),
                                        ("matrix_rank", 1)])
def test_removed_functions_raise_runtime_error(name, nargs):
    for lib in (tracegrad, torch):
        x = lib.eye(2)
        with pytest.raises(RuntimeError, match="removed"):
            getattr(lib, name)(*([x] * nargs))
        if name != "matrix_rank":
            with pytest.raises(RuntimeError, match="removed"):
                getattr(x, name)(*([x] * (nargs - 1)))


def test_aliases():
    assert tracegrad.GradScaler is tracegrad.amp.GradScaler
    assert issubclass(tracegrad.OutOfMemoryError, RuntimeError)
    assert tracegrad.cuda.OutOfMemoryError is tracegrad.OutOfMemoryError


def test_subclass_dispatch_hooks_are_not_silently_skipped():
    """__torch_function__ is called (tests/tensor/test_subclass.py); __torch_dispatch__, which
    tracegrad has no dispatcher for, warns where the class is written."""
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Logged(tracegrad.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs)

        class Plain(tracegrad.Tensor):       # no hook: nothing to say
            pass

        class OptedOut(tracegrad.Tensor):    # torch's opt-out marker
            __torch_function__ = tracegrad._C._disabled_torch_function_impl
    assert type(tracegrad.ones(2).as_subclass(Logged).exp()) is Logged and seen == ["exp"]
    assert type(tracegrad.ones(2).as_subclass(OptedOut).exp()) is tracegrad.Tensor
    with pytest.warns(UserWarning, match="does not call"):
        class Dispatching(tracegrad.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))


def test_cpu_module_types_and_inductor_config():
    for lib in (tracegrad, torch):
        assert lib.cpu.is_available() and lib.cpu.device_count() == 1
        lib.cpu.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # torch.cpu.amp.autocast is deprecated
            with lib.cpu.amp.autocast():
                assert lib.is_autocast_enabled("cpu")
                assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype == lib.bfloat16
        assert not lib.is_autocast_enabled("cpu")
    assert tracegrad.types.Number == torch.types.Number
    assert hasattr(torch.types, "_TensorOrTensors") and tracegrad.types._TensorOrTensors is not None
    import tracegrad._inductor.config as cfg
    cfg.coordinate_descent_tuning = True
    cfg.triton.unique_kernel_names = True
    assert tracegrad._inductor.config.coordinate_descent_tuning and cfg.triton.unique_kernel_names
    with cfg.patch(max_autotune=True):
        assert cfg.max_autotune is True
    assert cfg.max_autotune is False
    cfg.coordinate_descent_tuning = False


def test_compile_config_modules_import_as_torch():
    """gpt-fast's generate.py header: ``import torch._dynamo.config``, ``import
    torch._inductor.config``, then ``torch._functorch.config.enable_autograd_cache = True``; the
    regional compilation recipe's ``torch._inductor.utils.fresh_inductor_cache()``."""
    import importlib
    for lib in (torch, tracegrad):
        name = lib.__name__
        cfg = importlib.import_module(name + "._dynamo.config")
        assert cfg is lib._dynamo.config and importlib.import_module(name + "._inductor.config") is lib._inductor.config
        old = cfg.cache_size_limit
        cfg.cache_size_limit = old + 1
        assert lib._dynamo.config.cache_size_limit == old + 1
        cfg.cache_size_limit = old
        with pytest.raises(AttributeError):
            cfg.no_such_flag = 1
        with importlib.import_module(name + "._inductor.utils").fresh_inductor_cache():
            pass
    for flag in ("enable_autograd_cache", "activation_memory_budget", "donated_buffer"):
        assert getattr(tracegrad._functorch.config, flag) == getattr(torch._functorch.config, flag)
    tracegrad._functorch.config.enable_autograd_cache = False
    assert tracegrad._functorch.config.enable_autograd_cache is False
    tracegrad._functorch.config.enable_autograd_cache = True


@pytest.mark.parametrize("kwargs", [dict(graph_code=True), dict(dynamo=10), dict(recompiles=True, all=None),
                                    dict(), dict(foo=True), dict(graph_code=1), dict(dynamo="x")],
                         ids=["graph_code", "dynamo_debug", "two", "reset", "unknown", "not_bool", "bad_level"])
def test_logging_set_logs(kwargs):
    # the torch.compile tutorials call torch._logging.set_logs(graph_code=True)
    import torch._logging   # noqa: F401  (programs import it so)
    outcomes = []
    for lib in (torch, tracegrad):
        try:
            lib._logging.set_logs(**kwargs)
            outcomes.append(None)
        except Exception as e:   # the class torch raises
            outcomes.append(type(e))
    torch._logging.set_logs()
    assert outcomes[0] == outcomes[1]
