"""tracegrad/_state.py: the one place for process-wide state (issue 7). Grad mode lives there
(the names autograd.grad_mode exports are the same objects), and caches can be registered,
measured and cleared."""
import functools
import threading

import pytest

import tracegrad
from _fresh_process import fresh_process
from tracegrad import _state
from tracegrad.autograd import grad_mode


@pytest.fixture
def registry():
    """``_state`` with only the test's own caches registered: clearing the real ones here would
    free every program the test worker has compiled (14 s late in a CI worker)."""
    before = dict(_state._CACHES)
    _state._CACHES.clear()
    yield _state
    _state._CACHES.clear()
    _state._CACHES.update(before)


def test_grad_mode_state_is_the_one_in_state():
    assert grad_mode.STATE is _state.GRAD_MODE and grad_mode.INFERENCE_DEPTH is _state.INFERENCE_DEPTH
    assert _state.GRAD_MODE[0] is True
    with tracegrad.no_grad():
        assert _state.GRAD_MODE[0] is False and not tracegrad.is_grad_enabled()
        x = tracegrad.ones(2, requires_grad=True) * 2
        assert x.grad_fn is None
    with tracegrad.inference_mode():
        assert list(_state.GRAD_MODE) == [False, True, False] and _state.INFERENCE_DEPTH[0] == 1
    assert list(_state.GRAD_MODE) == [True, False, False] and _state.INFERENCE_DEPTH[0] == 0
    _state.GRAD_MODE[0] = False     # what a compiled call restoring a snapshot would do
    try:
        assert not tracegrad.is_grad_enabled()
        assert (tracegrad.ones(2, requires_grad=True) * 2).grad_fn is None
    finally:
        _state.GRAD_MODE[0] = True


def test_grad_mode_is_per_thread():
    seen = []
    with tracegrad.no_grad():
        t = threading.Thread(target=lambda: seen.append(tracegrad.is_grad_enabled()))
        t.start()
        t.join()
        assert not tracegrad.is_grad_enabled()
    assert seen == [True]


def test_registered_caches_are_cleared_and_measured(registry):
    d = registry.register_cache("test.dict", {})
    calls = []

    @functools.lru_cache(maxsize=None)
    def f(x):
        calls.append(x)
        return x * 2

    registry.register_cache("test.lru", f)
    d["a"], d["b"] = 1, 2
    f(1), f(2), f(1)
    sizes = registry.cache_sizes()
    assert sizes["test.dict"] == 2 and sizes["test.lru"] == 2
    registry.clear_caches()
    assert d == {} and registry.cache_sizes()["test.lru"] == 0
    f(1)
    assert calls == [1, 2, 1]       # recomputed after the clear


def test_register_cache_errors(registry):
    d = registry.register_cache("test.same", {})
    assert registry.register_cache("test.same", d) is d          # the same object again: fine
    with pytest.raises(ValueError, match="already registered"):
        registry.register_cache("test.same", {})
    with pytest.raises(TypeError, match="register_cache"):
        registry.register_cache("test.bad", (1, 2))


def test_in_inference_mode_reads_state():
    assert grad_mode.in_inference_mode is _state.in_inference_mode
    assert not _state.in_inference_mode()
    with tracegrad.inference_mode():
        assert _state.in_inference_mode()
        assert tracegrad.ones(2).is_inference()
        with tracegrad.inference_mode(False):
            assert not _state.in_inference_mode()
    assert not _state.in_inference_mode() and not tracegrad.ones(2).is_inference()


def test_process_wide_modes_are_the_ones_in_state():
    from tracegrad._ops import dtypes
    from tracegrad.autograd import _graph_impl
    assert _graph_impl.SAVED_HOOKS is _state.SAVED_HOOKS and _graph_impl.ANOMALY is _state.ANOMALY
    assert dtypes._default_float is _state.DEFAULT_DTYPE
    assert _state.DEFAULT_DTYPE[0] is tracegrad.float32 is tracegrad.get_default_dtype()
    tracegrad.set_default_dtype(tracegrad.float64)
    try:
        assert _state.DEFAULT_DTYPE[0] is tracegrad.float64 and tracegrad.ones(1).dtype == tracegrad.float64
    finally:
        tracegrad.set_default_dtype(tracegrad.float32)
    with tracegrad.autograd.set_detect_anomaly(True, check_nan=False):
        assert list(_state.ANOMALY) == [True, False]
    assert list(_state.ANOMALY) == [False, True]
    with tracegrad.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert len(_state.SAVED_HOOKS) == 1
    assert _state.SAVED_HOOKS == []


MEMO_CACHES = ["_ops.registry._SCALARS", "_ops.derived._copy_slices_ops", "_ops.derived._view_of_base_ops",
               "_ops.dtypes._promote_cache", "autograd._dispatch._BWD",
               "autograd.function._SIGNATURES", "autograd.engine._SIZES", "_tensor._chain_fwd", "_ops.shape._POS"]


def _train_step(model, opt, x, y):
    opt.zero_grad()
    h = model(x)
    h2 = h.clone()
    h2[:, :1] *= 2                     # CopySlices and view regeneration
    loss = tracegrad.nn.functional.mse_loss(h2[::1] * 0.5 + 1, y)
    loss.backward()
    opt.step()
    return loss.item()


class _Double(tracegrad.autograd.Function):
    @staticmethod
    def forward(x, k=2.0):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2.0, None


def _memo_caches_emptied_and_training_goes_on():
    tracegrad.manual_seed(0)
    model = tracegrad.nn.Sequential(tracegrad.nn.Linear(4, 8), tracegrad.nn.ReLU(), tracegrad.nn.Linear(8, 3))
    opt = tracegrad.optim.SGD(model.parameters(), lr=0.1)
    x, y = tracegrad.randn(5, 4), tracegrad.randn(5, 3)
    _train_step(model, opt, x, y)
    _Double.apply(tracegrad.ones(2, requires_grad=True)).sum().backward()
    tracegrad.ones(2) + tracegrad.ones(2, dtype=tracegrad.float64)     # a promotion
    sizes = _state.cache_sizes()
    assert set(MEMO_CACHES) <= set(sizes)
    assert all(sizes[n] > 0 for n in ("_ops.registry._SCALARS", "_ops.dtypes._promote_cache",
                                      "autograd._dispatch._BWD", "autograd.function._SIGNATURES",
                                      "autograd.engine._SIZES")), sizes
    grad_fn_cls = type(model(x).grad_fn)
    _state.clear_caches()
    assert all(n == 0 for n in _state.cache_sizes().values()), _state.cache_sizes()
    losses = [_train_step(model, opt, x, y) for _ in range(3)]
    assert losses[2] < losses[0]
    assert type(model(x).grad_fn) is grad_fn_cls          # node classes are not caches: same class
    g = tracegrad.ones(2, requires_grad=True)
    _Double.apply(g).sum().backward()
    assert g.grad.tolist() == [2.0, 2.0]
    assert _state.cache_sizes()["autograd._dispatch._BWD"] > 0


def _op_jit_caches_registered_cleared_and_rebuilt():
    """Every Op's jitted forwards and backward ops (``Op._fwd``/``Op._bwd``, and a DynViewOp's
    own dicts) are one registry entry: counted, emptied by clear_caches(), rebuilt on use."""
    from tracegrad._ops.registry import OPS

    def run():
        x = tracegrad.arange(12.0).reshape(3, 4).requires_grad_()
        y = (x * 2).tanh().narrow(0, 1, 2).select(1, 0)     # mul, tanh, slice/select (DynViewOps)
        y.sum().backward()
        return y.detach().tolist(), x.grad.tolist()

    before = run()
    mul, tanh, sl = OPS["mul"], OPS["tanh"], OPS["select"]
    assert mul._fwd and mul._bwd and tanh._fwd and tanh._bwd and sl._fwd
    n = _state.cache_sizes()["_ops.registry._OP_JIT_CACHES"]
    assert n >= len(mul._fwd) + len(mul._bwd) + len(tanh._fwd) + len(tanh._bwd) + len(sl._fwd)
    _state.clear_caches()
    assert _state.cache_sizes()["_ops.registry._OP_JIT_CACHES"] == 0
    assert not (mul._fwd or mul._bwd or tanh._fwd or tanh._bwd)
    assert not any(sl._jit_caches())
    assert run() == before
    assert mul._fwd and tanh._bwd and _state.cache_sizes()["_ops.registry._OP_JIT_CACHES"] > 0


@fresh_process
def test_clear_caches_empties_the_real_caches_and_everything_rebuilds():
    """Both checks empty the real caches, so they run in one fresh process: there that frees a
    few programs, in a long test worker the thousands it has compiled."""
    _memo_caches_emptied_and_training_goes_on()
    _op_jit_caches_registered_cleared_and_rebuilt()


def test_structure_token_comes_back_with_the_hook_set_and_never_after_a_bump():
    # NOTE [hook sets come back]: removing the hooks added since restores the token; a layout
    # change (bump) or a copied handle's removal gives a token never seen before
    import copy
    import gc
    # a new epoch: layouts earlier tests in this process changed, and their objects' deaths
    # (NOTE [layouts come back]), play no part
    gc.collect()
    _state.bump_structure()
    lin = tracegrad.nn.Linear(2, 2)
    t0 = _state.STRUCTURE[0]
    lin.register_forward_hook(lambda m, a, o: o).remove()   # no trace has seen it: no new token
    lin.extra = tracegrad.nn.Linear(1, 1)
    del lin.extra
    assert _state.STRUCTURE[0] == t0
    _state.trace_boundary()         # as a trace does: from now on a program may have baked it in
    h1 = lin.register_forward_hook(lambda m, a, o: o)
    t1 = _state.STRUCTURE[0]
    h2 = lin.register_forward_pre_hook(lambda m, a: None, prepend=True)
    assert len({t0, t1, _state.STRUCTURE[0]}) == 3
    h2.remove()
    assert _state.STRUCTURE[0] == t1
    h1.remove()
    assert _state.STRUCTURE[0] == t0
    h1.remove()                                   # twice: harmless, nothing changes
    assert _state.STRUCTURE[0] == t0
    h = lin.register_forward_hook(lambda m, a, o: o)
    seen = {t0, t1, _state.STRUCTURE[0]}
    lin.extra = tracegrad.nn.Linear(1, 1)         # a layout change while the hook is on
    h.remove()
    assert _state.STRUCTURE[0] not in seen
    seen.add(_state.STRUCTURE[0])
    lin._forward_hooks[10 ** 9] = lambda m, a, o: o   # a hook dict written by hand bumps
    assert _state.STRUCTURE[0] not in seen
    seen.add(_state.STRUCTURE[0])
    del lin._forward_hooks[10 ** 9]
    assert _state.STRUCTURE[0] not in seen
    seen.add(_state.STRUCTURE[0])
    h = lin.register_forward_hook(lambda m, a, o: o)
    seen.add(_state.STRUCTURE[0])
    twin = copy.deepcopy(h)                        # same id, its own dict
    twin.remove()
    assert _state.STRUCTURE[0] not in seen and h.id in lin._forward_hooks
