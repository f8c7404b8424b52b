"""Parity with torch for losses, normalisation layers and embedding (values, grads, grad_fn)."""
import numpy as np
import pytest

import tracegrad
from parity import check_module, close, get_torch

R = np.random.RandomState(0)


def x(*shape):
    return R.randn(*shape).astype(np.float32)


def loss_parity(make, inputs, grad_mask, rtol=1e-5, atol=1e-6):
    torch = get_torch()
    outs = []
    for mod in (torch, tracegrad):
        ts = [mod.tensor(a, requires_grad=g) for a, g in zip(inputs, grad_mask)]
        out = make(mod, *ts)
        w = np.random.RandomState(2).randn(*out.shape).astype(np.float32) if out.ndim else np.float32(1.0)
        out.backward(mod.tensor(w))
        outs.append((out, type(out.grad_fn).__name__, [t.grad for t, g in zip(ts, grad_mask) if g]))
    (to, tn, tg), (go, gn, gg) = outs
    close(go, to, rtol, atol)
    assert gn == tn
    for a, b in zip(gg, tg):
        close(a, b, rtol, atol)


IDX = np.array([0, 2, 1, 2, 4], dtype=np.int64)
IDX_IGN = np.array([0, -100, 1, 3, -100], dtype=np.int64)
W5 = np.abs(x(5)) + 0.1


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [dict(), dict(weight=True), dict(label_smoothing=0.2), dict(ignore=True),
                                dict(weight=True, label_smoothing=0.1, ignore=True)])
def test_cross_entropy_class_indices(reduction, kw):
    tgt = IDX_IGN if kw.get("ignore") else IDX

    def make(mod, inp, t, w):
        return mod.nn.CrossEntropyLoss(weight=w if kw.get("weight") else None, reduction=reduction,
                                       label_smoothing=kw.get("label_smoothing", 0.0))(inp, t)
    loss_parity(make, [x(5, 5), tgt, W5], [True, False, False])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ls", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, ls):
    p = np.exp(x(4, 5))
    p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    loss_parity(lambda mod, i, t: mod.nn.functional.cross_entropy(i, t, reduction=reduction, label_smoothing=ls),
                [x(4, 5), p], [True, False])


def test_cross_entropy_spatial_and_unbatched():
    t = R.randint(0, 3, size=(2, 4, 4)).astype(np.int64)
    loss_parity(lambda mod, i, t: mod.nn.functional.cross_entropy(i, t), [x(2, 3, 4, 4), t], [True, False])
    loss_parity(lambda mod, i, t: mod.nn.functional.cross_entropy(i, t), [x(5), np.array(3)], [True, False])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    loss_parity(lambda mod, i, t, w: mod.nn.NLLLoss(weight=w, reduction=reduction)(i.log_softmax(1), t),
                [x(5, 5), IDX_IGN, W5], [True, False, False])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", [("MSELoss", {}), ("L1Loss", {}), ("SmoothL1Loss", {}),
                                     ("SmoothL1Loss", dict(beta=0.5)), ("HuberLoss", dict(delta=0.7))])
def test_regression_losses(reduction, name, kw):
    loss_parity(lambda mod, a, b: getattr(mod.nn, name)(reduction=reduction, **kw)(a, b), [x(3, 4), x(3, 4)],
                [True, True])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_losses(reduction):
    p = (1 / (1 + np.exp(-x(3, 4)))).astype(np.float32)
    t = (R.rand(3, 4) > 0.5).astype(np.float32)
    w = np.abs(x(3, 4))
    loss_parity(lambda mod, a, b, w: mod.nn.BCELoss(weight=w, reduction=reduction)(a, b), [p, t, w],
                [True, False, False])
    pw = np.abs(x(4)) + 0.5
    loss_parity(lambda mod, a, b, pw: mod.nn.BCEWithLogitsLoss(pos_weight=pw, reduction=reduction)(a, b),
                [x(3, 4), t, pw], [True, False, False])
    loss_parity(lambda mod, a, b: mod.nn.BCEWithLogitsLoss(reduction=reduction)(a, b), [x(3, 4), t], [True, False])


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    p = np.exp(x(3, 4))
    p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    t = np.log(p) if log_target else p
    loss_parity(lambda mod, a, b: mod.nn.KLDivLoss(reduction=reduction, log_target=log_target)(a.log_softmax(1), b),
                [x(3, 4), t], [True, False])


def test_loss_errors():
    torch = get_torch()
    for mod in (torch, tracegrad):
        with pytest.raises(ValueError):
            mod.nn.functional.mse_loss(mod.ones(2), mod.ones(2), reduction="bogus")
        with pytest.raises(ValueError):
            mod.nn.functional.binary_cross_entropy(mod.ones(2) * 0.5, mod.ones(3))


@pytest.mark.parametrize("kw", [dict(), dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
                                dict(momentum=0.3, eps=1e-3)])
def test_batchnorm(kw):
    torch = get_torch()
    for build, shape in [(lambda nn: nn.BatchNorm2d(3, **kw), (4, 3, 2, 2)), (lambda nn: nn.BatchNorm1d(3, **kw), (5, 3)),
                         (lambda nn: nn.BatchNorm1d(3, **kw), (4, 3, 2))]:
        tm, gm = check_module(build, [x(*shape)], rtol=1e-4, atol=1e-5)
        # a second training step and then eval mode use the updated running statistics
        for train in (True, False):
            tm.train(train)
            gm.train(train)
            a = x(*shape)
            close(gm(tracegrad.tensor(a)), tm(torch.tensor(a)), 1e-4, 1e-5)
            for (n, tb), (_, gb) in zip(tm.named_buffers(), gm.named_buffers()):
                close(gb, tb, 1e-5, 1e-6)


def test_batchnorm_eval_grad_and_errors():
    check_module(lambda nn: nn.BatchNorm2d(3), [x(2, 3, 2, 2)], train=False, rtol=1e-4)
    torch = get_torch()
    for mod in (torch, tracegrad):
        with pytest.raises(ValueError):
            mod.nn.BatchNorm2d(3)(mod.ones(2, 3))
        with pytest.raises(ValueError):
            mod.nn.BatchNorm1d(3)(mod.ones(1, 3))


def test_batch_norm_update_stats():
    """(test/test_nn.py run unchanged) torch.batch_norm_update_stats: the batch mean and biased
    variance, the running statistics updated in place; its errors."""
    torch = get_torch()
    a = x(4, 3, 5)
    res = []
    for mod in (torch, tracegrad):
        rm, rv = mod.zeros(3), mod.ones(3)
        mean, var = mod.batch_norm_update_stats(mod.tensor(a), rm, rv, 0.1)
        half = mod.batch_norm_update_stats(mod.tensor(a[:, :, 0]).half(), None, None, 0.1)
        res.append((mean, var, rm, rv, half[0].dtype is mod.float16))
    for g, t in zip(res[1][:4], res[0][:4]):
        close(g, t, 1e-5, 1e-6)
    assert res[1][4] and res[0][4]
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError, match=r"at least one element, but got input_sizes = \[0, 1\]"):
            mod.batch_norm_update_stats(mod.rand(0, 1), mod.rand(1), mod.rand(1), 0.0)
        with pytest.raises(NotImplementedError, match="batch_norm_update_stats_cpu"):
            mod.batch_norm_update_stats(mod.ones(4, 3, dtype=mod.int32), None, None, 0.1)
        with pytest.raises(IndexError):
            mod.batch_norm_update_stats(mod.ones(4), None, None, 0.1)
        # no derivative: the results require grad, and their backward raises
        mean, var = mod.batch_norm_update_stats(mod.ones(4, 3, requires_grad=True), None, None, 0.1)
        assert mean.requires_grad and var.requires_grad and type(mean.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::batch_norm_update_stats is not implemented"):
            (mean.sum() + var.sum()).backward()


@pytest.mark.parametrize("build,shape", [
    (lambda nn: nn.LayerNorm(4), (3, 4)), (lambda nn: nn.LayerNorm((2, 4)), (3, 2, 4)),
    (lambda nn: nn.LayerNorm(4, elementwise_affine=False), (3, 4)), (lambda nn: nn.LayerNorm(4, bias=False), (2, 4)),
    (lambda nn: nn.GroupNorm(2, 4), (3, 4, 5)), (lambda nn: nn.GroupNorm(1, 4, affine=False), (2, 4, 2, 2)),
])
def test_layer_group_norm(build, shape):
    check_module(build, [x(*shape)], rtol=1e-4, atol=1e-5)


def test_embedding():
    idx = np.array([[0, 2, 1], [3, 0, 0]], dtype=np.int64)
    check_module(lambda nn: nn.Embedding(5, 3), [idx])
    tm, gm = check_module(lambda nn: nn.Embedding(5, 3, padding_idx=0), [idx])
    assert float(gm.weight.grad[0].abs().sum()) == 0.0
    g = tracegrad.nn.Embedding(6, 2, padding_idx=-1)
    assert g.padding_idx == 5 and float(g.weight[5].abs().sum()) == 0.0


def test_bilinear_and_functional_misc():
    check_module(lambda nn: nn.Bilinear(3, 2, 4), [x(5, 3), x(5, 2)], rtol=1e-4)
    torch = get_torch()
    a = x(2, 3, 4)
    for fn in [lambda F, t: F.normalize(t, dim=-1), lambda F, t: F.pad(t, (1, 2)), lambda F, t: F.pad(t, (1, 1, 2, 0)),
               lambda F, t: F.pad(t, (2, 1), mode="reflect"), lambda F, t: F.pad(t, (1, 2), mode="replicate"),
               lambda F, t: F.pad(t, (1, 2), mode="circular"), lambda F, t: F.pad(t, (-1, 1)),
               lambda F, t: F.cosine_similarity(t, t * 2 + 1, dim=-1), lambda F, t: F.softmin(t, 1),
               lambda F, t: F.logsigmoid(t), lambda F, t: F.relu6(t * 4), lambda F, t: F.selu(t), lambda F, t: F.celu(t),
               lambda F, t: F.avg_pool1d(t, 2), lambda F, t: F.max_pool1d(t, 2), lambda F, t: F.adaptive_avg_pool1d(t, 3)]:
        tt = torch.tensor(a, requires_grad=True)
        gt = tracegrad.tensor(a, requires_grad=True)
        to, go = fn(torch.nn.functional, tt), fn(tracegrad.nn.functional, gt)
        close(go, to)
        to.sum().backward()
        go.sum().backward()
        close(gt.grad, tt.grad)
    i = np.array([0, 3, 1])
    np.testing.assert_array_equal(tracegrad.nn.functional.one_hot(tracegrad.tensor(i)).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(i)).numpy())
    np.testing.assert_array_equal(tracegrad.nn.functional.one_hot(tracegrad.tensor(i), 6).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(i), 6).numpy())


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(mask="bool"), dict(mask="float"), dict(scale=0.3)])
def test_scaled_dot_product_attention(kw):
    torch = get_torch()
    q, k, v = x(2, 3, 4), x(2, 5, 4), x(2, 5, 6)
    mb = R.rand(3, 5) > 0.3
    mb[:, 0] = True
    mf = x(3, 5)
    res = []
    for mod in (torch, tracegrad):
        Q, K, V = (mod.tensor(a, requires_grad=True) for a in (q, k, v))
        mask = mod.tensor(mb) if kw.get("mask") == "bool" else mod.tensor(mf) if kw.get("mask") == "float" else None
        if kw.get("is_causal"):
            K, V = K[:, :3], V[:, :3]
        out = mod.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask, is_causal=kw.get("is_causal", False),
                                                             scale=kw.get("scale"))
        out.sum().backward()
        res.append((out, Q.grad))
    close(res[1][0], res[0][0], 1e-5, 1e-5)
    close(res[1][1], res[0][1], 1e-5, 1e-5)


@pytest.mark.parametrize("mode,pad,shape", [("reflect", (1, 2), (2, 3, 5)), ("reflect", (1, 1, 2, 0), (1, 2, 4, 4)),
                                            ("replicate", (2, 1), (2, 3, 4)), ("replicate", (1, 2, 1, 0), (1, 1, 3, 3)),
                                            ("constant", (1, 2), (2, 3))])
def test_pad_modes_grad_fn(mode, pad, shape):
    loss_parity(lambda mod, a: mod.nn.functional.pad(a, pad, mode=mode), [x(*shape)], [True])


def test_target_out_of_bounds_raises_index_error():
    torch = get_torch()
    for mod in (torch, tracegrad):
        with pytest.raises(IndexError, match="Target 5 is out of bounds"):
            mod.nn.functional.cross_entropy(mod.zeros(2, 3), mod.tensor([0, 5]))
        with pytest.raises(IndexError):
            mod.nn.functional.nll_loss(mod.zeros(2, 3), mod.tensor([-2, 1]))
        mod.nn.functional.cross_entropy(mod.zeros(2, 3), mod.tensor([-100, 1]))


def test_empty_batch_norms_as_torch():
    """test_nn's GroupNorm_empty / BatchNorm_empty: group_norm accepts an empty batch (its group
    reshape used -1, ambiguous for 0 elements); batch_norm of an empty input is torch's early
    return ``input.clone() * weight[0] + bias[0]`` before its dtype checks (a float64 input beside
    float32 parameters works and stays float64; running stats untouched)."""
    torch = get_torch()
    res = []
    for lib in (torch, tracegrad):
        lib.manual_seed(0)
        gn = lib.nn.GroupNorm(2, 4)
        xg = lib.zeros(0, 4, 2, 2, requires_grad=True)
        og = gn(xg)
        og.sum().backward()
        bn = lib.nn.BatchNorm2d(3)
        xb = lib.zeros(0, 3, 2, 2, dtype=lib.float64, requires_grad=True)
        ob = bn(xb)
        ob.sum().backward()
        res.append((tuple(og.shape), gn.weight.grad.tolist(), tuple(xg.grad.shape), str(ob.dtype).split(".")[1],
                    type(ob.grad_fn).__name__, bn.weight.grad.tolist(), bn.running_mean.tolist(),
                    bn.running_var.tolist(), int(bn.num_batches_tracked)))
    assert res[1] == res[0]


@pytest.mark.parametrize("fn", ["multi_margin_loss", "multilabel_margin_loss"])
@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_margin_losses_empty_class_dim_error(fn, shape):
    """An empty class dim is torch's RuntimeError 'Expected non-empty vector or matrix ...' (the
    input's reshape(-1, 0) leaked its own error); a 0-row batch still works."""
    torch = get_torch()
    tshape = shape if fn == "multilabel_margin_loss" else shape[:1]
    for lib in (torch, tracegrad):
        with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
            getattr(lib.nn.functional, fn)(lib.zeros(shape), lib.zeros(tshape, dtype=lib.long))
        x0 = lib.zeros(0, 5, requires_grad=True)
        t0 = lib.zeros((0, 5) if fn == "multilabel_margin_loss" else (0,), dtype=lib.long)
        getattr(lib.nn.functional, fn)(x0, t0, reduction="sum").backward()
        assert tuple(x0.grad.shape) == (0, 5)


def test_instancenorm_get_no_batch_dim():
    torch = get_torch()
    for name in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
        assert getattr(tracegrad.nn, name)(4)._get_no_batch_dim() == getattr(torch.nn, name)(4)._get_no_batch_dim()


@pytest.mark.parametrize("call", ["module1d", "module2d", "functional", "native", "update_stats", "instance_norm"])
def test_running_stats_version_counters_match_torch(call):
    """torch's batch-norm kernels update running_mean/var in place without bumping their
    version counters (instance_norm copies them back: one bump); num_batches_tracked += 1 bumps."""
    torch = pytest.importorskip("torch")

    def run(T):
        """(versions before, versions after, values after) of the statistics."""
        x = T.tensor(np.random.RandomState(0).randn(4, 3, 5).astype(np.float32))
        if call.startswith("module"):
            bn = T.nn.BatchNorm1d(3) if call == "module1d" else T.nn.BatchNorm2d(3)
            stats = list(bn.buffers())
            before = [b._version for b in stats]
            for _ in range(2):
                bn(x if call == "module1d" else x.reshape(4, 3, 5, 1))
        else:
            stats = [T.zeros(3), T.ones(3)]
            before = [b._version for b in stats]
            if call == "functional":
                T.nn.functional.batch_norm(x, *stats, training=True)
            elif call == "native":
                T.native_batch_norm(x, None, None, *stats, True, 0.1, 1e-5)
            elif call == "update_stats":
                T.batch_norm_update_stats(x, *stats, 0.1)
            else:
                T.nn.functional.instance_norm(x, *stats, use_input_stats=True)
        return before, [b._version for b in stats], [np.asarray(b.tolist(), dtype=np.float64) for b in stats]
    ours, theirs = run(tracegrad), run(torch)
    assert ours[:2] == theirs[:2]
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
