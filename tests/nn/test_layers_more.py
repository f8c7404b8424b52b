"""More torch.nn layers: the Lazy* modules (UninitializedParameter/Buffer, in-place
materialization, cls_to_become, an optimizer built before the first forward), LPPool,
MaxUnpool, AdaptiveMaxPool3d, LocalResponseNorm, ChannelShuffle, pdist and SyncBatchNorm:
values, gradients, reprs and errors against torch, and a compiled training step."""
import warnings

import numpy as np
import pytest

import tracegrad

from tests.compile._harness import check_compiled, data, np_init

torch = pytest.importorskip("torch")

warnings.filterwarnings("ignore", message="Lazy modules are a new feature")

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
