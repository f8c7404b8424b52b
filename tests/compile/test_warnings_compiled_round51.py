"""Warnings of torch's deprecated and cautionary APIs, eager vs tracegrad.compile (round 51).

NOTE [warnings in a trace] (tracegrad/_lowering/warned.py): a compiled function gives on every
run the warnings its body gives eagerly, through the filters of that call. Each case is a
function (a forward, or a whole training step) run eagerly and compiled, call by call, under
"always", "default" and "error": the same warnings (message, category, file, line) per call, or
the same exception; and the same results. Once-per-process warnings stay once (rule 4).
"""
import warnings

import numpy as np
import pytest

import tracegrad as T
import tracegrad.nn.functional as F

CALLS = 3


def _x(*shape, seed=0):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _given(fn, make_args, action, calls=CALLS):
    """Per call: the warnings ``fn(*make_args())`` gives under ``action`` (or the exception it
    raises), and its result as numpy."""
    out, results = [], []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter(action)
        for _ in range(calls):
            n = len(log)
            try:
                r = fn(*make_args())
                err = None
            except Warning as e:
                r, err = None, (type(e), str(e))
            out.append(([(str(w.message), w.category, w.filename, w.lineno) for w in log[n:]], err))
            results.append(None if r is None else r.detach().numpy())
    return out, results


def _softmax_nodim(x):
    return F.softmax(x).sum()


def _log_softmax_nodim(x):
    return F.log_softmax(x * 2).sum()


def _mse_broadcast(x):
    return F.mse_loss(x[:, :1], x[0])


def _l1_size_average(x):
    return F.l1_loss(x, x * 0.5, size_average=False)


def _nll_reduce(x):
    return F.nll_loss(F.log_softmax(x, 1), T.tensor([0, 1, 2]), reduce=False).sum()


def _kl_div_mean(x):
    return F.kl_div(F.log_softmax(x, 1), F.softmax(x * 2, 1))


def _T_of_3d(x):
    return x.reshape(3, 2, 2).T.sum()


def _upsample(x):
    return F.upsample(x.reshape(1, 1, 3, 4), scale_factor=2).mean()


def _upsample_nearest(x):
    return F.upsample_nearest(x.reshape(1, 1, 3, 4), scale_factor=2).mean()


def _std_one_element(x):
    return x[0, :1].std() + x.sum()


def _nonleaf_grad(x):
    w = _module("w", lambda: T.nn.Parameter(T.ones(4)))
    y = x * w
    g = y.grad                      # warns: .grad of a non-leaf
    return y.sum() if g is None else g.sum()


def _init_zero_element(x):
    T.nn.init.kaiming_uniform_(T.empty(0, 3))
    return x.sum()


def _two_warnings(x):
    a = F.softmin(x)
    return F.smooth_l1_loss(a[:, :1], a[0]) + a.sum()


def _grid_sample_default(x):
    grid = x[:2, :].reshape(1, 2, 2, 2).tanh()
    return F.grid_sample(x[:, :3].reshape(1, 1, 3, 3), grid).sum()


def _affine_grid_default(x):
    return F.affine_grid(x[:2, :3].reshape(1, 2, 3), [1, 1, 2, 2]).sum()


def _autocast_cpu_float64(x):
    with T.autocast("cpu", dtype=T.float64):
        y = x @ x.t()
    return y.sum()


def _trunc_normal_far(x):
    return x.sum() + T.nn.init.trunc_normal_(T.empty(3), mean=10.0).numel()


_MODULE = {}   # modules and parameters a case builds once, as a user's program would


def _module(name, build):
    if name not in _MODULE:
        _MODULE[name] = build()
    return _MODULE[name]


def _dropout2d_eval(x):
    m = _module("dropout2d", lambda: T.nn.Dropout2d().eval())
    return m(x).sum()


def _mse_module_broadcast(x):
    m = _module("mse", T.nn.MSELoss)
    return m(x[:, :1], x[0])


def _softmax_module_nodim(x):
    m = _module("softmax", T.nn.Softmax)
    return m(x).max()


FORWARDS = [_softmax_nodim, _log_softmax_nodim, _mse_broadcast, _l1_size_average, _nll_reduce, _kl_div_mean,
            _upsample, _upsample_nearest, _std_one_element, _nonleaf_grad, _init_zero_element,
            _two_warnings, _dropout2d_eval, _mse_module_broadcast, _softmax_module_nodim, _grid_sample_default,
            _affine_grid_default, _autocast_cpu_float64, _trunc_normal_far]
ACTIONS = ["always", "default", "error"]


@pytest.mark.parametrize("fullgraph", [False, True], ids=["default", "fullgraph"])
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("fn", FORWARDS, ids=lambda f: f.__name__.lstrip("_"))
def test_forward_warns_per_call_as_eager(fn, action, fullgraph):
    make = lambda: (_x(3, 4),)
    eager, eager_r = _given(fn, make, action)
    cf = T.compile(fn, fullgraph=fullgraph)
    compiled, compiled_r = _given(cf, make, action)
    assert compiled == eager
    if action == "always":
        assert all(w for w, _ in eager), eager          # the case warns on each call
    if action != "error":       # "error": each call runs eagerly (rule 3); else only the first, unless fullgraph
        assert cf.stats["traces"] == 1 and not cf.stats["graph_breaks"], cf.stats
        assert cf.stats["eager_calls"] == (0 if fullgraph else 1), cf.stats
    for a, b in zip(compiled_r, eager_r):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


# whole training steps: a deprecated loss argument, a broadcasting target and the deprecated
# clip_grad_norm in the step; parameters must end where eager leaves them


def _model():
    T.manual_seed(0)
    m = T.nn.Linear(4, 1)
    return m, T.optim.SGD(m.parameters(), lr=0.1)


def _step_broadcast_target(m, opt, x, y):
    loss = F.mse_loss(m(x), y)               # (3, 1) against (3,): warns, broadcasts
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def _step_clip_grad_norm(m, opt, x, y):
    loss = F.mse_loss(m(x).squeeze(1), y, size_average=True)
    loss.backward()
    T.nn.utils.clip_grad_norm(m.parameters(), 0.5)
    opt.step()
    opt.zero_grad()
    return loss


def _step_with_checkpoint(m, opt, x, y):
    h = T.utils.checkpoint.checkpoint(m, x.detach().requires_grad_())   # no use_reentrant: warns
    loss = ((h.squeeze(1) - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


STEPS = [_step_broadcast_target, _step_clip_grad_norm, _step_with_checkpoint]


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__.lstrip("_"))
def test_training_step_warns_per_call_as_eager(step, action):
    runs = []
    for compiled in (False, True):
        m, opt = _model()
        fn = T.compile(step) if compiled else step
        got = _given(fn, lambda: (m, opt, _x(3, 4), _x(3, seed=1)), action)
        if compiled and action != "error":
            assert fn.stats["traces"] == 1 and not fn.stats["graph_breaks"] and fn.stats["eager_calls"] == 1, fn.stats
        runs.append((got, [p.detach().numpy().copy() for p in m.parameters()]))
    ((eager, eager_r), eager_p), ((comp, comp_r), comp_p) = runs
    assert comp == eager
    if action == "always":
        assert all(w for w, _ in eager), eager
    for a, b in zip(comp_r, eager_r):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(comp_p, eager_p):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _cross_nodim(x):
    return T.cross(x[:, :3], x[:, 1:]).sum()


def _meshgrid_no_indexing(x):
    a, b = T.meshgrid(x[0], x[1])
    return (a * b).sum()


def _stft_no_window(x):
    return T.stft(x.reshape(-1), 4, return_complex=True).abs().sum()


def _chain_matmul(x):
    return T.chain_matmul(x[:, :3], x[:, 1:]).sum()


@pytest.mark.parametrize("fn", [_cross_nodim, _meshgrid_no_indexing, _T_of_3d, _chain_matmul, _stft_no_window],
                         ids=lambda f: f.__name__.lstrip("_"))
def test_once_per_process_warning_stays_once(fn, fresh_warn_once):
    from tracegrad._ops import warn as _warn
    make = lambda: (_x(3, 4),)
    eager, _ = _given(fn, make, "always")
    _warn._WARNED_ONCE.clear()               # as in a fresh process again
    compiled, _ = _given(T.compile(fn), make, "always")
    assert [len(w) for w, _ in eager] == [1, 0, 0]
    assert compiled == eager
    prev = T.is_warn_always_enabled()
    T.set_warn_always(True)                  # then every call, eager and compiled alike
    try:
        eager, _ = _given(fn, make, "always")
        compiled, _ = _given(T.compile(fn), make, "always")
    finally:
        T.set_warn_always(prev)
    assert [len(w) for w, _ in eager] == [1, 1, 1]
    assert compiled == eager
