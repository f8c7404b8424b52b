"""More torch.nn layers: the Lazy* modules (UninitializedParameter/Buffer, in-place
materialization, cls_to_become, an optimizer built before the first forward), LPPool,
MaxUnpool, AdaptiveMaxPool3d, LocalResponseNorm, ChannelShuffle, pdist and SyncBatchNorm:
values, gradients, reprs and errors against torch, and a compiled training step."""
import numpy as np
import pytest

import tracegrad

from tests.compile._harness import check_compiled, data, np_init

torch = pytest.importorskip("torch")

LAZY = [
    ("LazyLinear", (3,), (2, 6)), ("LazyLinear", (2, False), (2, 4, 6)),
    ("LazyConv1d", (4, 3), (2, 6, 7)), ("LazyConv2d", (4, 3, 1, 1, 1, 2), (2, 6, 5, 5)),
    ("LazyConv3d", (2, 2), (1, 3, 3, 3, 3)), ("LazyConv2d", (4, 3), (6, 5, 5)),
    ("LazyConvTranspose1d", (4, 2, 2), (2, 6, 5)), ("LazyConvTranspose2d", (4, 3), (2, 6, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), (4, 6)), ("LazyBatchNorm2d", (1e-3, 0.2), (3, 6, 2, 2)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), (2, 6, 5)),
    ("LazyInstanceNorm2d", (1e-5, 0.1, False, False), (2, 6, 3, 3)), ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


def _arr(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name,args,shape", LAZY, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(LAZY)])
def test_lazy_module_materializes_like_torch_and_trains_with_an_early_optimizer(name, args, shape):
    x0 = np.random.RandomState(0).randn(*shape).astype(np.float32)
    mods = {}
    for T in (torch, tracegrad):
        m = getattr(T.nn, name)(*args)
        params = list(m.parameters())
        opt = T.optim.SGD(params, lr=0.1, momentum=0.9) if params else None   # built before the first forward
        kinds = [(n, type(p).__name__) for n, p in m.named_parameters()]
        bufs = [(n, type(b).__name__) for n, b in m.named_buffers()]
        mods[T] = (m, opt, params, kinds, bufs, repr(m))
    (mv, ov, pv, kv, bv, rv), (mt, ot, pt, kt, bt, rt) = mods[tracegrad], mods[torch]
    assert (kv, bv, rv) == (kt, bt, rt)
    assert all(tracegrad.nn.parameter.is_lazy(p) and "Uninitialized" in repr(p) for p in pv)
    # materialize both from the same input (torch's public initialize_parameters), copy torch's
    # weights across; the first forward below then runs the hook's class switch
    mt.initialize_parameters(torch.tensor(x0))
    mv.initialize_parameters(tracegrad.tensor(x0))
    with tracegrad.no_grad():
        for p, q in zip(mv.parameters(), mt.parameters()):
            assert tuple(p.shape) == tuple(q.shape)
            p.copy_(tracegrad.tensor(q.detach().numpy()))
    outs = {}
    assert type(mt).__name__ == name and type(mv).__name__ == name
    for T, m, opt, params in ((torch, mt, ot, pt), (tracegrad, mv, ov, pv)):
        x = T.tensor(x0, requires_grad=True)
        out = m(x)
        (out * T.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        if opt is not None:
            opt.step()
        outs[T] = (_arr(out), _arr(x.grad), [_arr(p) for p in params], [p.grad is not None for p in params],
                   {n: _arr(b) for n, b in m.named_buffers()}, type(m).__name__, repr(m))
    (o1, g1, p1, h1, b1, c1, r1), (o2, g2, p2, h2, b2, c2, r2) = outs[tracegrad], outs[torch]
    assert (c1, r1, h1) == (c2, r2, h2) and all(h1)
    assert all(type(p) is tracegrad.nn.Parameter for p in pv)
    assert not hasattr(mv, "_initialize_hook")
    np.testing.assert_allclose(o1, o2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-5)
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert b1.keys() == b2.keys()
    for k in b1:
        np.testing.assert_allclose(b1[k], b2[k], rtol=1e-4, atol=1e-5)


def test_lazy_linear_first_forward_initializes_as_linear_and_state_dict_loads_into_a_lazy_module():
    tracegrad.manual_seed(0)
    m = tracegrad.nn.LazyLinear(3)
    m(tracegrad.ones(2, 5))
    w = m.weight.detach().numpy()
    bound = 1 / np.sqrt(5)
    assert w.shape == (3, 5) and np.abs(w).max() <= bound and w.std() > 0
    fresh = tracegrad.nn.LazyLinear(3)
    fresh.load_state_dict(m.state_dict())
    assert tuple(fresh.weight.shape) == (3, 5) and type(fresh.weight) is tracegrad.nn.Parameter
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), w)
    assert type(fresh).__name__ == "LazyLinear"          # becomes Linear at its first forward, as torch
    fresh(tracegrad.ones(1, 5))
    assert type(fresh) is tracegrad.nn.Linear


def test_uninitialized_parameter_shape_and_lazy_errors_match_torch():
    for T in (torch, tracegrad):
        p = T.nn.UninitializedParameter()
        with pytest.raises(RuntimeError):
            p.shape
        assert repr(p) == "<UninitializedParameter>"
        b = T.nn.UninitializedBuffer()
        b.materialize((2, 3))
        assert type(b) is T.Tensor and tuple(b.shape) == (2, 3)
        with pytest.raises(RuntimeError):
            T.nn.LazyConv2d(4, 3)(T.ones(1, 1, 2, 3, 3))
        with pytest.raises(ValueError):
            T.nn.LazyConv2d(4, 3, groups=2)(T.ones(1, 3, 5, 5))


def _make_lazy(mod, wrap):
    nn = mod.nn
    model = nn.Sequential(nn.LazyConv1d(3, 2), nn.LazyBatchNorm1d(), nn.Flatten(), nn.LazyLinear(2))
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)       # before the first forward
    model(data(mod, 99, 2, 4, 5))                                       # materialize (eagerly)
    np_init(model, mod)
    model[1].reset_running_stats()

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 3, 4, 5),)


def test_compiled_step_with_lazy_modules_built_before_the_optimizer_equals_eager_and_torch():
    comp = check_compiled(_make_lazy, calls=3, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats
    assert [type(m).__name__ for m in comp.state["model"]] == ["Conv1d", "BatchNorm1d", "Flatten", "Linear"]


RS = np.random.RandomState(1)
X3 = RS.randn(2, 4, 9).astype(np.float32)
X4 = RS.randn(2, 4, 6, 5).astype(np.float32)
X5 = RS.randn(1, 4, 5, 4, 6).astype(np.float32)

FUNCS = {
    "lp_pool1d": lambda F, x3, x4, x5: F.lp_pool1d(x3, 2.0, 3),
    "lp_pool1d_p1.5_stride": lambda F, x3, x4, x5: F.lp_pool1d(x3.abs() + 0.1, 1.5, 3, 2, ceil_mode=True),
    "lp_pool2d": lambda F, x3, x4, x5: F.lp_pool2d(x4, 2, (2, 3)),
    "lp_pool2d_p3_stride": lambda F, x3, x4, x5: F.lp_pool2d(x4, 3.0, 2, 1),
    "lp_pool3d": lambda F, x3, x4, x5: F.lp_pool3d(x5, 2, 2),
    "unpool1d": lambda F, x3, x4, x5: F.max_unpool1d(*F.max_pool1d(x3, 2, return_indices=True), 2),
    "unpool1d_size": lambda F, x3, x4, x5: F.max_unpool1d(*F.max_pool1d(x3, 3, 2, 1, return_indices=True), 3, 2,
                                                          1, output_size=[9]),
    "unpool2d": lambda F, x3, x4, x5: F.max_unpool2d(*F.max_pool2d(x4[..., :4], 2, return_indices=True), 2),
    "unpool2d_full_size": lambda F, x3, x4, x5: F.max_unpool2d(*F.max_pool2d(x4, 2, return_indices=True), 2,
                                                               output_size=(2, 4, 6, 5)),
    "unpool2d_unbatched": lambda F, x3, x4, x5: F.max_unpool2d(*F.max_pool2d(x4[0], 3, 2, 1, return_indices=True),
                                                               3, 2, 1, output_size=(6, 5)),
    "unpool3d": lambda F, x3, x4, x5: F.max_unpool3d(*F.max_pool3d(x5, 2, return_indices=True), 2),
    "adaptive_max3d": lambda F, x3, x4, x5: F.adaptive_max_pool3d(x5, (2, 3, 4)),
    "adaptive_max3d_none": lambda F, x3, x4, x5: F.adaptive_max_pool3d(x5[0], (3, None, 1)),
    "lrn3d": lambda F, x3, x4, x5: F.local_response_norm(x3, 3),
    "lrn4d": lambda F, x3, x4, x5: F.local_response_norm(x4, 2, 0.1, 0.5, 2.0),
    "lrn5d": lambda F, x3, x4, x5: F.local_response_norm(x5, 4, 0.3),
    "channel_shuffle": lambda F, x3, x4, x5: F.channel_shuffle(x4, 2),
    "pdist": lambda F, x3, x4, x5: F.pdist(x3[0]),
    "pdist_p1": lambda F, x3, x4, x5: F.pdist(x3[1], 1),
    "pdist_p3": lambda F, x3, x4, x5: F.pdist(x3[1], 3.0),
    "pdist_inf": lambda F, x3, x4, x5: F.pdist(x3[1], float("inf")),
}


def _run_f(T, name):
    xs = [T.tensor(a, requires_grad=True) for a in (X3, X4, X5)]
    out = FUNCS[name](T.nn.functional, *(x * 1.0 for x in xs))
    (out * T.linspace(-1, 2, out.numel()).reshape(out.shape)).sum().backward()
    return [_arr(out)] + [_arr(x.grad) if x.grad is not None else None for x in xs]


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_functional_layers_values_and_grads_match_torch(name):
    for g, w in zip(_run_f(tracegrad, name), _run_f(torch, name)):
        assert (g is None) == (w is None)
        if w is not None:
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


LAYERS = [("LPPool1d", (2, 3)), ("LPPool2d", (1.5, 2, 1, True)), ("LPPool3d", (2, 2)),
          ("AdaptiveMaxPool3d", ((2, 1, 3),)), ("LocalResponseNorm", (3, 0.01, 0.5, 1.5)),
          ("ChannelShuffle", (2,)), ("SyncBatchNorm", (4,)), ("SyncBatchNorm", (4, 1e-3, None, False, True))]


@pytest.mark.parametrize("name,args", LAYERS, ids=[f"{n}{i}" for i, (n, _) in enumerate(LAYERS)])
def test_layer_modules_match_torch(name, args):
    x = {"LPPool1d": X3, "LPPool3d": X5, "AdaptiveMaxPool3d": X5}.get(name, X4)
    if name.startswith("LPPool"):
        x = np.abs(x) + 0.1
    res = []
    for T in (tracegrad, torch):
        m = getattr(T.nn, name)(*args)
        xt = T.tensor(x, requires_grad=True)
        out = m(xt)
        (out * T.linspace(-1, 2, out.numel()).reshape(out.shape)).sum().backward()
        res.append((repr(m), _arr(out), _arr(xt.grad), {n: _arr(b) for n, b in m.named_buffers()}))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-4, atol=1e-5)
    assert res[0][3].keys() == res[1][3].keys()
    for k in res[0][3]:
        np.testing.assert_allclose(res[0][3][k], res[1][3][k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_modules_invert_max_pool_like_torch(n):
    x = {1: X3, 2: X4, 3: X5}[n]
    res = []
    for T in (tracegrad, torch):
        pool = getattr(T.nn, f"MaxPool{n}d")(2, return_indices=True)
        unpool = getattr(T.nn, f"MaxUnpool{n}d")(2)
        xt = T.tensor(x, requires_grad=True)
        y, idx = pool(xt)
        out = unpool(y, idx, output_size=xt.size())
        (out * out).sum().backward()
        res.append((repr(unpool), _arr(out), _arr(xt.grad)))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-5, atol=1e-6)


def test_convert_sync_batchnorm_like_torch():
    res = []
    for T in (tracegrad, torch):
        T.manual_seed(0)
        net = T.nn.Sequential(T.nn.Conv2d(4, 4, 1), T.nn.BatchNorm2d(4), T.nn.Sequential(T.nn.BatchNorm1d(3)))
        np_init(net, T)
        net[1].eval()
        bn_w = net[1].weight
        conv = T.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert conv[1].weight is bn_w and type(conv[2][0]).__name__ == "SyncBatchNorm"
        assert conv[1].training is False and conv[2][0].training is True
        res.append((repr(conv), _arr(conv[1](conv[0](T.tensor(X4))))))
    assert res[0][0] == res[1][0]
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.lp_pool2d(T.ones(1, 1, 1, 1), 2, 3),
    lambda T: T.nn.functional.max_unpool2d(T.ones(1, 1, 2, 2), T.zeros(1, 1, 2, 2, dtype=T.long), 2,
                                           output_size=(9, 9)),
    lambda T: T.nn.functional.max_unpool2d(T.ones(1, 1, 2, 2), T.zeros(1, 1, 2, 2, dtype=T.long), 2,
                                           output_size=(4, 4, 4)),
    lambda T: T.nn.functional.adaptive_max_pool3d(T.ones(2, 3), 2),
    lambda T: T.nn.functional.local_response_norm(T.ones(2, 3), 2),
    lambda T: T.nn.functional.channel_shuffle(T.ones(1, 3, 2), 2),
    lambda T: T.nn.functional.channel_shuffle(T.ones(3, 2), 1),
    lambda T: T.nn.functional.pdist(T.ones(2, 3, 4)),
    lambda T: T.nn.functional.pdist(T.ones(2, 3), -1),
    lambda T: T.nn.SyncBatchNorm(3)(T.ones(3)),
])
def test_layer_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(et.type):
        call(tracegrad)


def _make_layers(mod, wrap):
    nn = mod.nn
    model = np_init(nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.LocalResponseNorm(3), nn.ChannelShuffle(2),
                                  nn.SyncBatchNorm(4), nn.LPPool2d(2, 2)), mod)
    head = np_init(nn.Linear(4 * 3 * 3 + 3, 2), mod, seed=1)
    opt = mod.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)

    def step(x):
        opt.zero_grad()
        h = model(x)                                            # (N, 4, 3, 3)
        y, idx = pool(h)
        h = h + unpool(y, idx, output_size=h.shape)
        v = nn.functional.adaptive_max_pool3d(h.unsqueeze(1), (1, 2, 2)).flatten(1)
        loss = head(mod.cat([h.flatten(1), nn.functional.pdist(v)[None].expand(h.shape[0], 3)], 1)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "head": head, "opt": opt}, lambda i: (data(mod, i, 3, 2, 6, 6),)


def test_compiled_step_with_new_layers_equals_eager_and_torch():
    comp = check_compiled(_make_layers, calls=3, torch_too=True)
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats


FRAC = [(2, (2, 3, 9, 8), 2, {"output_size": (4, 5)}), (2, (3, 7, 7), 3, {"output_size": 3}),
        (2, (1, 2, 8, 9), (2, 3), {"output_ratio": 0.5}), (3, (1, 2, 6, 7, 5), 2, {"output_size": (3, 4, 2)}),
        (3, (2, 5, 6, 4), 2, {"output_ratio": (0.5, 0.6, 0.5)})]


@pytest.mark.parametrize("n,shape,k,kw", FRAC)
def test_fractional_max_pool_with_given_samples_matches_torch(n, shape, k, kw):
    rs = np.random.RandomState(3)
    x0 = rs.randn(*shape).astype(np.float32)
    nb, c = (shape[0] if len(shape) == n + 2 else 1), shape[-n - 1]
    s0 = rs.rand(nb, c, n).astype(np.float32)
    res = []
    for T in (tracegrad, torch):
        x = T.tensor(x0, requires_grad=True)
        m = getattr(T.nn, f"FractionalMaxPool{n}d")(k, return_indices=True, _random_samples=T.tensor(s0), **kw)
        v, i = m(x)
        (v * T.linspace(-1, 2, v.numel()).reshape(v.shape)).sum().backward()
        back = x.detach().flatten(-n).gather(-1, i.flatten(-n)).reshape(v.shape)   # the indices point at the maxima
        res.append((repr(m), _arr(v), i.numpy(), _arr(x.grad), _arr(back)))
    assert res[0][0] == res[1][0]
    for a, b in zip(res[0][1:], res[1][1:]):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fractional_max_pool_random_samples_from_tracegrads_generator():
    x = tracegrad.randn(2, 3, 10, 10)
    tracegrad.manual_seed(5)
    a = tracegrad.nn.functional.fractional_max_pool2d(x, 2, output_size=5)
    tracegrad.manual_seed(5)
    b = tracegrad.nn.functional.fractional_max_pool2d(x, 2, output_size=5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(a.shape) == (2, 3, 5, 5)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.FractionalMaxPool2d(2),
    lambda T: T.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda T: T.nn.FractionalMaxPool3d(2, output_ratio=1.5),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(1, 1, 9, 9), 3, output_size=8),
    lambda T: T.nn.functional.fractional_max_pool2d(T.ones(1, 1, 9, 9), 3),
])
def test_fractional_max_pool_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(et.type):
        call(tracegrad)


def _make_frac(mod, wrap):
    nn = mod.nn
    model = np_init(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.FractionalMaxPool2d(2, output_size=3),
                                  nn.Flatten(), nn.Linear(27, 2)), mod)
    opt = mod.optim.SGD(model.parameters(), lr=0.05)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 2, 7, 7),)


def test_compiled_step_with_fractional_max_pool_equals_eager():
    comp = check_compiled(_make_frac, calls=3)          # random starts: same generator draws compiled and eager
    assert comp.step.stats["graph_breaks"] == [], comp.step.stats


@pytest.mark.parametrize("size", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("channels", [1, 3, 6])
@pytest.mark.parametrize("kind", ["CrossMapLRN2d", "LocalResponseNorm"])
def test_cross_map_lrn2d_and_local_response_norm_at_the_channel_edges(kind, size, channels):
    # CrossMapLRN2d keeps Lua torch's kernel (channel 0 stuck in the running sum, a backward
    # window leaning to lower channels): values, gradients and node name as torch's
    x0 = np.random.default_rng(size * 10 + channels).standard_normal((2, channels, 3, 2))

    def run(m):
        x = m.tensor(x0, requires_grad=True)
        y = getattr(m.nn, kind)(size, 1e-2, 0.75, 2)(x)
        (y * m.tensor(x0[::-1].copy())).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__
    (yt, gt, nt), (yg, gg, ng) = run(torch), run(tracegrad)
    np.testing.assert_allclose(yg, yt, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gg, gt, rtol=1e-9, atol=1e-11)
    assert ng == nt if kind == "CrossMapLRN2d" else True


def test_cross_map_lrn2d_needs_4d_and_reprs_as_torch():
    for m in (torch, tracegrad):
        for shape in ((2, 3, 4), (1, 2, 2, 2, 2)):
            with pytest.raises(ValueError, match="Expected input to be 4D"):
                m.nn.CrossMapLRN2d(3)(m.ones(shape))
    assert repr(tracegrad.nn.CrossMapLRN2d(3, 1e-2)) == repr(torch.nn.CrossMapLRN2d(3, 1e-2))
