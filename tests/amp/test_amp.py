"""Parity with torch for mixed precision: ``autocast`` (CPU bfloat16/float16: which ops run in
low precision, which in float32, values and gradients of a small model) and ``GradScaler``
(scaling, unscaling, inf checks, skipped steps, scale growth and backoff, state dicts)."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)
X, W, B = R.randn(4, 5).astype(np.float32), R.randn(3, 5).astype(np.float32), R.randn(3).astype(np.float32)
Y = np.array([0, 2, 1, 1])


def _dt(t):
    return str(t.dtype).split(".")[-1]


def _program(m, dtype="bfloat16"):
    """A linear layer, a conv, and losses under autocast; returns dtypes, values and grads."""
    F = m.nn.functional
    x, w, b = (m.tensor(a, requires_grad=True) for a in (X, W, B))
    y = m.tensor(Y)
    with m.autocast("cpu", dtype=getattr(m, dtype)):
        h = F.linear(x, w, b)
        ce = F.cross_entropy(h, y)
        mse = F.mse_loss(h, x[:, :3])
        conv = F.conv1d(x[None].transpose(1, 2), w[:, :, None])
        mm = x.mm(w.t()) if hasattr(x, "mm") else None
        d64 = F.linear(x.double(), w.double())
        with m.autocast("cpu", enabled=False):
            inner = F.linear(x, w)
        enabled = m.is_autocast_enabled("cpu")
    loss = ce + mse + conv.float().sum() * 0.01
    loss.backward()
    return dict(dtypes=[_dt(t) for t in (h, ce, mse, conv, mm, d64, inner)],
                grad_fn=type(h.grad_fn).__name__,
                next=[type(f[0]).__name__ for f in h.grad_fn.next_functions],
                enabled=(enabled, m.is_autocast_enabled("cpu")),
                values=[float(ce), float(mse), h.float().detach().numpy()],
                grads=[t.grad.numpy() for t in (x, w, b)], grad_dtypes=[_dt(t.grad) for t in (x, w, b)])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_cpu_matches_torch(dtype):
    want, got = _program(torch, dtype), _program(tracegrad, dtype)
    for k in ("dtypes", "grad_fn", "next", "enabled", "grad_dtypes"):
        assert got[k] == want[k], k
    for a, b in zip(got["values"], want["values"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    for a, b in zip(got["grads"], want["grads"]):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)


def test_autocast_state_queries_and_decorator():
    for m in (torch, tracegrad):
        assert m.get_autocast_dtype("cpu") is m.bfloat16 and not m.is_autocast_enabled("cpu")

        @m.autocast("cpu")
        def f(x, w):
            return m.is_autocast_enabled("cpu"), m.nn.functional.linear(x, w).dtype

        assert f(m.tensor(X), m.tensor(W)) == (True, m.bfloat16)
        assert not m.is_autocast_enabled("cpu")
        with m.amp.autocast("cpu", dtype=m.float16):
            assert m.get_autocast_dtype("cpu") is m.float16 and m.is_autocast_cpu_enabled()


def test_autocast_bad_arguments():
    for m in (torch, tracegrad):
        with pytest.raises(RuntimeError):
            m.autocast("foo")
        with pytest.raises(ValueError):
            m.autocast(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with m.autocast("cpu", dtype=m.int32):       # unsupported: warns, stays off
                assert m.nn.functional.linear(m.tensor(X), m.tensor(W)).dtype is m.float32
        if not tracegrad.cuda.is_available():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with m.autocast("cuda"):                   # no GPU: warns, stays off
                    assert not m.is_autocast_enabled("cuda")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_conv_with_bias_rounds_once_as_torch(dtype):
    # torch's half conv adds the bias in float32 and rounds once (ERA4's autocast conv net
    # drifted by one float16 ulp when the product was rounded before the bias)
    rs = np.random.RandomState(8)
    x = rs.standard_normal((4, 2, 5, 5)).astype(np.float32)
    w, b = rs.uniform(-.5, .5, (4, 2, 3, 3)).astype(np.float32), rs.uniform(-.5, .5, 4).astype(np.float32)
    out = []
    for m in (torch, tracegrad):
        with m.autocast("cpu", dtype=getattr(m, dtype)):
            y2 = m.nn.functional.conv2d(m.tensor(x), m.tensor(w), m.tensor(b), padding=1)
            y1 = m.nn.functional.conv1d(m.tensor(x[:, :, 0]), m.tensor(w[:, :, 0]), m.tensor(b), stride=2)
        out.append([(_dt(y), y.float().numpy()) for y in (y2, y1)])
    for (da, a), (db, b_) in zip(*out):
        assert da == db == dtype
        np.testing.assert_array_equal(b_, a)


# ---- GradScaler -----------------------------------------------------------------------------------
def _scaler_run(m, scaler_kw, inject_inf_at=(), steps=5, unscale_first=False):
    w = m.tensor(W, requires_grad=True)
    opt = m.optim.SGD([w], lr=0.1)
    scaler = m.amp.GradScaler("cpu", **scaler_kw)
    log = []
    for i in range(steps):
        opt.zero_grad()
        loss = (m.tensor(X) @ w.t()).pow(2).mean()
        if i in inject_inf_at:
            loss = loss * float("inf")
        scaled = scaler.scale(loss)
        scaled.backward()
        if unscale_first:
            scaler.unscale_(opt)
        grad_after_unscale = None
        ret = scaler.step(opt)
        if w.grad is not None:
            grad_after_unscale = w.grad.numpy().copy()
        scaler.update()
        log.append((float(scaled), scaler.get_scale(), scaler._get_growth_tracker(), ret,
                    w.detach().numpy().copy(), grad_after_unscale))
    return log, scaler.state_dict()


@pytest.mark.parametrize("kw,inf_at,unscale_first", [
    (dict(), (), False), (dict(init_scale=8.0, growth_interval=2), (), False),
    (dict(init_scale=4.0, growth_interval=2, backoff_factor=0.25), (1, 2), False),
    (dict(init_scale=16.0, growth_interval=3), (3,), True), (dict(enabled=False), (), False),
])
def test_grad_scaler_matches_torch(kw, inf_at, unscale_first):
    want, sd_want = _scaler_run(torch, kw, inf_at, unscale_first=unscale_first)
    got, sd_got = _scaler_run(tracegrad, kw, inf_at, unscale_first=unscale_first)
    assert sd_got == sd_want
    for (s1, sc1, gt1, r1, w1, g1), (s2, sc2, gt2, r2, w2, g2) in zip(got, want):
        assert (sc1, gt1, r1) == (sc2, gt2, r2)
        np.testing.assert_allclose(s1, s2, rtol=1e-6)
        np.testing.assert_allclose(w1, w2, rtol=1e-6, atol=1e-7)
        if g2 is not None and np.isfinite(g2).all():
            np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-7)


def test_grad_scaler_order_errors_and_state():
    for m in (torch, tracegrad):
        w = m.tensor(W, requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)
        scaler = m.amp.GradScaler("cpu", init_scale=2.0)
        with pytest.raises(AssertionError):
            scaler.update()                               # no scale() yet
        scaler.scale((m.tensor(X) @ w.t()).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError):
            scaler.step(opt)
        with pytest.raises(RuntimeError):
            scaler.step(opt, closure=lambda: None)
        scaler.update(4.0)
        assert scaler.get_scale() == 4.0
        other = m.amp.GradScaler("cpu")
        other.load_state_dict(scaler.state_dict())
        assert other.get_scale() == 4.0 and other.state_dict() == scaler.state_dict()
        with pytest.raises(RuntimeError):
            other.load_state_dict({})
        off = m.amp.GradScaler("cpu", enabled=False)
        t = m.ones(2)
        assert off.scale(t) is t and off.get_scale() == 1.0 and off.state_dict() == {}


def test_scaler_with_autocast_training_loop():
    """A bfloat16 autocast step with loss scaling: losses and weights match torch over 3 steps."""
    def run(m):
        m.manual_seed(0)
        w1, w2 = m.tensor(R2[0], requires_grad=True), m.tensor(R2[1], requires_grad=True)
        opt = m.optim.Adam([w1, w2], lr=1e-2)
        scaler = m.amp.GradScaler("cpu", init_scale=1024.0)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            with m.autocast("cpu", dtype=m.bfloat16):
                h = m.nn.functional.linear(m.tensor(X), w1).relu()
                out = m.nn.functional.linear(h, w2)
                loss = m.nn.functional.cross_entropy(out, m.tensor(Y))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(float(loss))
        return losses, w1.detach().numpy()
    R2 = [np.random.RandomState(1).randn(6, 5).astype(np.float32), np.random.RandomState(2).randn(3, 6).astype(np.float32)]
    (lt, wt), (lg, wg) = run(torch), run(tracegrad)
    np.testing.assert_allclose(lg, lt, rtol=1e-2)
    np.testing.assert_allclose(wg, wt, rtol=1e-2, atol=1e-2)


def test_compiled_function_guards_on_autocast():
    """A program traced outside autocast is not reused inside it (and back), as eager."""
    lin = tracegrad.nn.Linear(3, 2)
    cf = tracegrad.compile(lambda x: lin(x))
    x = tracegrad.ones(4, 3)
    for _ in range(2):
        assert cf(x).dtype is tracegrad.float32
        with tracegrad.autocast("cpu"):
            assert cf(x).dtype is tracegrad.bfloat16
    with tracegrad.autocast("cpu", dtype=tracegrad.float16):
        assert cf(x).dtype is tracegrad.float16


def _warnings_of(make):
    """The warnings ``make(torch)`` and ``make(tracegrad)`` issue, each under an 'always' filter."""
    seen = []
    for mod in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            make(mod)
        seen.append(w)
    return seen


@pytest.mark.parametrize("make", [
    lambda m: m.cuda.amp.GradScaler(), lambda m: m.cpu.amp.GradScaler(),
    lambda m: m.cuda.amp.autocast(), lambda m: m.cpu.amp.autocast(),
    lambda m: m.amp.GradScaler("cpu"), lambda m: m.amp.autocast("cpu"),
], ids=["cuda_scaler", "cpu_scaler", "cuda_autocast", "cpu_autocast", "amp_scaler", "amp_autocast"])
def test_per_device_amp_spellings_warn_deprecated_as_torch(make):
    # aladdinpersson's mixed-precision example builds torch.cuda.amp.GradScaler() and autocast()
    seen = [[(x.category, "deprecated" in str(x.message)) for x in w
             if issubclass(x.category, FutureWarning) or "deprecated" in str(x.message)] for w in _warnings_of(make)]
    assert seen[0] == seen[1]


@pytest.mark.skipif(tracegrad.cuda.is_available(), reason="the CPU-only fallback warnings")
@pytest.mark.parametrize("make", [lambda m: m.amp.autocast("cuda"), lambda m: m.cuda.amp.autocast(),
                                  lambda m: m.cuda.amp.GradScaler()], ids=["autocast", "cuda_autocast", "scaler"])
def test_cuda_amp_without_cuda_warns_as_torch(make):
    # ERA4's train_one_epoch enters torch.cuda.amp.autocast() on a CPU machine: torch 2's
    # UserWarning text (programs that log their warnings see the same lines)
    seen = [[str(x.message) for x in w if x.category is UserWarning] for w in _warnings_of(make)]
    assert seen[0] == seen[1] and len(seen[0]) == 1, seen


def _global_switches(m):
    """torch's process-wide autocast switches, used outside any ``autocast`` context."""
    out = [str(m.get_autocast_dtype("cpu")).split(".")[-1]]
    x = m.ones(2, 2)
    try:
        m.set_autocast_dtype("cpu", m.float16)
        out += [str(m.get_autocast_dtype("cpu")).split(".")[-1], m.is_autocast_enabled("cpu")]
        m.set_autocast_enabled("cpu", True)
        out += [m.is_autocast_enabled("cpu"), m.is_autocast_enabled(), _dt(x @ x)]
        with m.autocast("cpu", dtype=m.bfloat16):
            out.append(_dt(x @ x))
        out += [_dt(x @ x), str(m.get_autocast_dtype("cpu")).split(".")[-1]]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out.append(m.is_autocast_cpu_enabled())
            m.set_autocast_cpu_dtype(m.bfloat16)
            out += [_dt(x @ x), [type(i.message).__name__ for i in w]]
    finally:
        m.set_autocast_enabled("cpu", False)
        m.set_autocast_dtype("cpu", m.bfloat16)
    out += [m.is_autocast_enabled("cpu"), _dt(x @ x)]
    m.set_autocast_enabled(True)
    out.append(m.is_autocast_enabled())   # the legacy one-argument form is 'cuda'
    m.set_autocast_enabled(False)
    m.set_autocast_cache_enabled(False)
    out.append(m.is_autocast_cache_enabled())
    m.set_autocast_cache_enabled(True)
    m.clear_autocast_cache()
    out += [m.autocast_increment_nesting(), m.autocast_decrement_nesting()]
    for bad in ("foo", 3):
        try:
            m.set_autocast_enabled(bad, True)
        except Exception as e:  # noqa: BLE001 -- the class is compared with torch's
            out.append(type(e).__name__)
    return out


def test_global_autocast_switches_match_torch():
    assert _global_switches(tracegrad) == _global_switches(torch)
