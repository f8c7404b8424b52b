"""Parity with torch for the vision layers and functions: padding, resampling, pixel shuffle,
unfold/fold, 3-D pooling, instance norm, distances, affine_grid/grid_sample, EmbeddingBag.
Each case runs the same program with torch and tracegrad: values, grad_fn names, input and
parameter gradients, buffers, and the exception class for bad arguments."""
import numpy as np
import pytest

import tracegrad
from tracegrad._ops import OPS
from parity import check_module, close, get_torch, record_ops

R = np.random.RandomState(0)
_SEEN = set()


@pytest.fixture(autouse=True)
def _record_vision_ops():
    """Collect the ops each test dispatches (for the coverage test at the end)."""
    with record_ops() as rec:
        yield
    _SEEN.update(rec.names)


def x(*shape):
    return R.randn(*shape).astype(np.float32)


def parity(program, *arrays, rtol=1e-5, atol=1e-5, names=True):
    """``program(mod, F, *tensors) -> tensor``; float arrays require grad. Compares value, shape,
    grad_fn name and the gradient of every float input under a fixed random output weighting."""
    torch = get_torch()
    res = []
    for mod in (torch, tracegrad):
        ins = [mod.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        out = program(mod, mod.nn.functional, *ins)
        w = np.random.RandomState(1).randn(*out.shape).astype(np.float32)
        if out.requires_grad:
            (out * mod.tensor(w)).sum().backward()
        res.append((out, ins))
    (to, tin), (go, gin) = res
    assert tuple(go.shape) == tuple(to.shape)
    close(go, to, rtol, atol)
    if names:
        assert type(go.grad_fn).__name__ == type(to.grad_fn).__name__
    for a, b in zip(gin, tin):
        if b.requires_grad:
            close(a.grad, b.grad, rtol, atol)


def raises_like(program):
    """torch and tracegrad raise the same exception class."""
    torch = get_torch()
    classes = []
    for mod in (torch, tracegrad):
        with pytest.raises(Exception) as e:
            program(mod, mod.nn.functional)
        classes.append(e.type)
    assert classes[0] is classes[1], classes


# ---- padding ----------------------------------------------------------------------------------
PADS = [("Reflection", {}), ("Replication", {}), ("Circular", {}), ("Zero", {}), ("Constant", {"value": 1.5})]


@pytest.mark.parametrize("prefix,kw", PADS, ids=[p for p, _ in PADS])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_modules(prefix, kw, nd):
    shape = (2, 2) + (3, 4, 4)[:nd]
    pad = (2, 1, 1, 0, 1, 2)[:2 * nd]
    # circular padding's node differs (README: torch CopySlices, ours IndexSelectBackward0): compare
    # values and gradients through a trailing multiply
    call = (lambda m, a: m(a) * 1.0) if prefix == "Circular" else None
    check_module(lambda nn: getattr(nn, f"{prefix}Pad{nd}d")(pad, **kw), [x(*shape)], call=call)
    check_module(lambda nn: getattr(nn, f"{prefix}Pad{nd}d")(1, **kw), [x(*shape[1:])], call=call)


def test_pad_errors():
    raises_like(lambda t, F: F.pad(t.zeros(2, 3, 4, 5), (6, 1, 0, 0), mode="reflect"))
    raises_like(lambda t, F: F.pad(t.zeros(2, 3, 4, 5), (1, 1), mode="reflect"))
    raises_like(lambda t, F: F.pad(t.zeros(2, 3, 4, 5), (7, 1, 0, 0), mode="circular"))
    raises_like(lambda t, F: F.pad(t.zeros(2, 3, 4, 5), (1, 1, 1, 1), mode="reflect", value=2.0))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((0,), (1, 1, 1, 1)), ((3,), (1, 1, 1, 1)), ((2, 3), (1,)),
                                       ((2, 3, 4), (1, 1, 1)), ((1, 2, 3), (1,) * 8), ((2, 3), (1, 1, 1, 1))])
def test_pad_length_checked_before_mode(mode, shape, pad):
    # torch's at::pad checks the pad length against the input's dims (RuntimeError) before the
    # mode's supported sizes (NotImplementedError): sunshineatnoon/PytorchWCT hands
    # ReflectionPad2d an empty 1-D tensor in torch 2, which must raise RuntimeError
    raises_like(lambda t, F: F.pad(t.zeros(*shape), pad, mode=mode))


def test_reprs():
    torch = get_torch()
    builds = [lambda nn: nn.ReflectionPad2d(2), lambda nn: nn.ZeroPad2d((1, 2, 3, 4)), lambda nn: nn.ConstantPad1d(2, 3.5),
              lambda nn: nn.ReplicationPad3d(1), lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
              lambda nn: nn.Upsample(size=(3, 4)), lambda nn: nn.PixelShuffle(2), lambda nn: nn.PixelUnshuffle(3),
              lambda nn: nn.Unfold(2), lambda nn: nn.Fold((4, 4), 2), lambda nn: nn.InstanceNorm2d(3),
              lambda nn: nn.InstanceNorm1d(4, affine=True, track_running_stats=True), lambda nn: nn.MaxPool3d(2),
              lambda nn: nn.AvgPool3d(2), lambda nn: nn.AdaptiveAvgPool3d(2), lambda nn: nn.ConvTranspose3d(2, 3, 2),
              lambda nn: nn.EmbeddingBag(5, 3, mode="sum", padding_idx=1), lambda nn: nn.PairwiseDistance()]
    for build in builds:
        assert repr(build(tracegrad.nn)) == repr(build(torch.nn))


# ---- interpolate / Upsample -------------------------------------------------------------------
INTERP = [
    ((2, 3, 5), dict(scale_factor=2)), ((2, 3, 5), dict(size=7, mode="linear")),
    ((2, 3, 5), dict(scale_factor=2.3, mode="linear", align_corners=True)),
    ((2, 3, 5), dict(scale_factor=1.6, mode="nearest-exact")),
    ((1, 2, 5, 6), dict(scale_factor=2)), ((1, 2, 5, 6), dict(size=(3, 7))),
    ((1, 2, 5, 6), dict(size=(4, 9), mode="bilinear")),
    ((1, 2, 5, 6), dict(size=(4, 9), mode="bilinear", align_corners=True)),
    ((1, 2, 5, 6), dict(scale_factor=0.7, mode="bilinear")),
    ((1, 2, 5, 6), dict(scale_factor=1.5, mode="bicubic")),
    ((1, 2, 5, 6), dict(scale_factor=(0.6, 2.5), mode="bicubic", align_corners=True)),
    ((1, 2, 5, 6), dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 5, 6), dict(size=(3, 4), mode="area")),
    ((1, 2, 3, 4, 5), dict(size=(4, 3, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2)), ((1, 2, 5, 6), dict(size=(7, 4), mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(scale_factor=(1.5, 0.5, 2), mode="nearest-exact")),
    ((1, 2, 9, 11), dict(size=(4, 17), mode="bilinear", antialias=True)),
    ((1, 2, 9, 11), dict(scale_factor=0.4, mode="bicubic", antialias=True)),
    ((1, 2, 9, 11), dict(size=(5, 4), mode="bicubic", antialias=True, align_corners=True)),
]


@pytest.mark.parametrize("shape,kw", INTERP, ids=[f"{len(s)}d-{k}" for s, k in INTERP])
def test_interpolate(shape, kw):
    parity(lambda t, F, a: F.interpolate(a, **kw), x(*shape))


def test_upsample_modules():
    check_module(lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), [x(1, 2, 3, 4)])
    check_module(lambda nn: nn.Upsample(size=(5, 3), mode="nearest"), [x(1, 2, 3, 4)])
    check_module(lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), [x(1, 2, 3, 4)])
    check_module(lambda nn: nn.UpsamplingNearest2d(size=6), [x(1, 2, 3, 4)])


@pytest.mark.parametrize("bad", [
    dict(size=3, scale_factor=2), dict(), dict(size=3, align_corners=True), dict(size=3, mode="linear"),
    dict(size=(3, 4, 5)), dict(size=3, mode="foo"), dict(size=3, antialias=True),
])
def test_interpolate_errors(bad):
    raises_like(lambda t, F: F.interpolate(t.zeros(1, 2, 4, 4), **bad))


# ---- pixel shuffle / unfold / fold -------------------------------------------------------------
def test_pixel_shuffle():
    check_module(lambda nn: nn.PixelShuffle(2), [x(2, 8, 3, 2)])
    check_module(lambda nn: nn.PixelShuffle(2), [x(8, 3, 2)])
    check_module(lambda nn: nn.PixelUnshuffle(2), [x(2, 2, 4, 6)])
    raises_like(lambda t, F: F.pixel_shuffle(t.zeros(1, 4, 2, 2), 3))
    raises_like(lambda t, F: F.pixel_shuffle(t.zeros(4, 2), 2))
    raises_like(lambda t, F: F.pixel_unshuffle(t.zeros(1, 4, 5, 2), 2))


def test_unfold_fold():
    check_module(lambda nn: nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [x(2, 3, 5, 6)])
    check_module(lambda nn: nn.Unfold(2), [x(3, 4, 4)])
    check_module(lambda nn: nn.Fold((5, 6), (2, 3), padding=1, stride=(2, 1)), [x(2, 12, 18)])
    check_module(lambda nn: nn.Fold((3, 3), 2), [x(8, 4)])
    # fold(unfold(x)) counts each pixel once per window that covers it
    parity(lambda t, F, a: F.fold(F.unfold(a, 2), (3, 4), 2), x(1, 2, 3, 4))
    raises_like(lambda t, F: F.fold(t.zeros(1, 7, 4), (3, 3), 2))
    raises_like(lambda t, F: F.fold(t.zeros(1, 8, 5), (3, 3), 2))


# ---- convolution / pooling in 3-D ---------------------------------------------------------------
def test_conv_transpose3d_and_conv3d():
    check_module(lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1),
                 [x(1, 2, 2, 3, 2)], rtol=1e-4, atol=1e-5)
    check_module(lambda nn: nn.ConvTranspose1d(2, 3, 3, stride=2), [x(2, 2, 4)], rtol=1e-4, atol=1e-5)
    check_module(lambda nn: nn.Conv3d(2, 3, 2, padding=1), [x(1, 2, 3, 3, 2)], rtol=1e-4, atol=1e-5)


def test_pool3d():
    check_module(lambda nn: nn.MaxPool3d(2, 1), [x(1, 2, 3, 4, 5)])
    check_module(lambda nn: nn.MaxPool3d(2, ceil_mode=True), [x(2, 3, 4, 5)])
    check_module(lambda nn: nn.AvgPool3d(2, 1, padding=1), [x(1, 2, 3, 4, 5)])
    check_module(lambda nn: nn.AvgPool3d(2, count_include_pad=False, padding=1), [x(1, 2, 3, 4, 5)])
    check_module(lambda nn: nn.AdaptiveAvgPool3d((2, 3, 2)), [x(1, 2, 3, 4, 5)])
    check_module(lambda nn: nn.AdaptiveAvgPool3d(1), [x(1, 2, 3, 4, 5)])
    check_module(lambda nn: nn.MaxPool1d(2), [x(2, 3, 5)])
    check_module(lambda nn: nn.AvgPool1d(3, 2, padding=1), [x(2, 3, 6)])
    raises_like(lambda t, F: F.max_pool3d(t.zeros(2, 3, 3), 2))


@pytest.mark.parametrize("nd,kw", [(1, dict(kernel_size=2)), (1, dict(kernel_size=3, stride=2, padding=1)),
                                   (3, dict(kernel_size=2)), (3, dict(kernel_size=2, stride=1, padding=1))])
def test_max_pool_return_indices(nd, kw):
    shape = (2, 3, 7) if nd == 1 else (1, 2, 3, 4, 5)
    fn = f"max_pool{nd}d"
    parity(lambda t, F, a: getattr(F, fn)(a, return_indices=True, **kw)[0], x(*shape))
    a = x(*shape)
    idx = [getattr(m.nn.functional, fn)(m.tensor(a), return_indices=True, **kw)[1] for m in (get_torch(), tracegrad)]
    assert str(idx[1].dtype).endswith("int64") and (idx[0].numpy() == idx[1].numpy()).all()


# ---- instance norm -----------------------------------------------------------------------------
@pytest.mark.parametrize("nd,kw", [(1, {}), (2, dict(affine=True)), (3, dict(track_running_stats=True)),
                                   (2, dict(affine=True, track_running_stats=True))])
def test_instance_norm(nd, kw):
    shape = (2, 3) + (4, 3, 2)[:nd]
    name = f"InstanceNorm{nd}d"
    tm, gm = check_module(lambda nn: getattr(nn, name)(3, **kw), [x(*shape)])
    check_module(lambda nn: getattr(nn, name)(3, **kw), [x(*shape[1:])])
    if kw.get("track_running_stats"):
        check_module(lambda nn: getattr(nn, name)(3, **kw), [x(*shape)], train=False)
        assert [n for n, _ in gm.named_buffers()] == [n for n, _ in tm.named_buffers()]


def test_instance_norm_errors():
    torch = get_torch()
    raises_like(lambda t, F: F.instance_norm(t.zeros(1, 3, 1)))
    raises_like(lambda t, F: t.nn.InstanceNorm2d(3, affine=True)(t.zeros(2, 4, 4, 4)))
    raises_like(lambda t, F: t.nn.InstanceNorm2d(3)(t.zeros(2, 3)))
    assert list(tracegrad.nn.InstanceNorm2d(3, affine=True).state_dict()) == list(
        torch.nn.InstanceNorm2d(3, affine=True).state_dict())


# ---- distances / normalize -----------------------------------------------------------------------
def test_distances():
    a, b = x(4, 5), x(4, 5)
    parity(lambda t, F, a, b: F.pairwise_distance(a, b), a, b)
    parity(lambda t, F, a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True), a, b)
    parity(lambda t, F, a, b: F.pairwise_distance(a, b), x(5), x(3, 5))
    check_module(lambda nn: nn.PairwiseDistance(p=3.0), [a, b])
    check_module(lambda nn: nn.CosineSimilarity(dim=1), [a, b])
    parity(lambda t, F, a, b: F.cosine_similarity(a, b, dim=0), a, b)
    parity(lambda t, F, a: F.normalize(a, p=1.0, dim=0), a)


# ---- affine_grid / grid_sample -------------------------------------------------------------------
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample(mode, padding_mode, align_corners):
    # a grid scaled past [-1, 1] exercises the padding modes
    parity(lambda t, F, a, th: F.grid_sample(a, F.affine_grid(th, (2, 3, 4, 5), align_corners=align_corners) * 1.3,
                                             mode=mode, padding_mode=padding_mode, align_corners=align_corners),
           x(2, 3, 5, 6), x(2, 2, 3), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    parity(lambda t, F, a, th: F.grid_sample(a, F.affine_grid(th, (2, 3, 3, 4, 5), align_corners=align_corners) * 1.2,
                                             mode=mode, padding_mode=padding_mode, align_corners=align_corners),
           x(2, 3, 4, 5, 6), x(2, 3, 4), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("align_corners", [False, True])
def test_identity_affine_grid_is_torchs_grid_and_the_theta_gradient_agrees(align_corners):
    # an identity theta puts every sample on a pixel centre, where bilinear's gradient takes the
    # neighbour on the floor's side: one last-place difference in the grid changes it (the
    # spatial transformer tutorial starts at the identity)
    torch = get_torch()
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    grids = [m.nn.functional.affine_grid(m.tensor(theta), (2, 1, 13, 28), align_corners=align_corners)
             for m in (torch, tracegrad)]
    np.testing.assert_array_equal(grids[1].numpy(), grids[0].numpy())
    parity(lambda t, F, a, th: F.grid_sample(a, F.affine_grid(th, (2, 1, 13, 28), align_corners=align_corners),
                                             align_corners=align_corners),
           x(2, 1, 13, 28), theta, rtol=1e-4, atol=1e-4)


def test_affine_grid():
    parity(lambda t, F, th: F.affine_grid(th, (1, 2, 3, 4, 5), align_corners=False), x(1, 3, 4))
    parity(lambda t, F, th: F.affine_grid(th, (2, 2, 3, 1), align_corners=True), x(2, 2, 3))
    raises_like(lambda t, F: F.affine_grid(t.zeros(2, 2, 3), (2, 3, 4)))
    raises_like(lambda t, F: F.affine_grid(t.zeros(2, 3, 3), (2, 3, 4, 4)))
    raises_like(lambda t, F: F.grid_sample(t.zeros(2, 3, 4, 4), t.zeros(2, 3, 3, 2), mode="foo"))
    raises_like(lambda t, F: F.grid_sample(t.zeros(2, 3, 4, 4), t.zeros(2, 3, 3, 3)))
    raises_like(lambda t, F: F.grid_sample(t.zeros(2, 3, 4, 4, 4), t.zeros(2, 3, 3, 3, 3), mode="bicubic"))
    raises_like(lambda t, F: F.grid_sample(t.zeros(2, 3, 4, 4), t.zeros(2, 3, 3, 3, 3)))


@pytest.mark.parametrize("inp,grd,mode", [
    ((1, 2, 2), (1, 1, 1, 2), "bilinear"), ((1, 1, 2, 2), (1, 1, 1, 1, 3), "bilinear"),
    ((1, 1, 2, 2), (2, 1, 1, 2), "bilinear"), ((1, 1, 0, 2), (1, 1, 1, 2), "bilinear"),
    ((1, 1, 2, 2, 2, 2), (1, 1, 1, 1, 1, 4), "bicubic"), ((1, 1, 2, 2), (1, 1, 2), "bilinear"),
    ((1, 1, 2, 2, 2), (1, 1, 1, 1, 3), "bicubic"), ((2,), (1,), "bilinear")])
def test_grid_sample_checks_in_torchs_order(inp, grd, mode):
    """(test/test_nn.py run unchanged) grid_sample's shape checks come in torch's order: batch
    size, grid's last dim, empty spatial dims, the rank, bicubic's 4-D rule."""
    torch = get_torch()
    msgs = []
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError) as e:
            mod.nn.functional.grid_sample(mod.zeros(inp), mod.zeros(grd), mode=mode, align_corners=False)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_affine_grid_unit_size_warning_names_the_docs():
    """Programs (test/test_nn.py) match torch's closing sentence of the unit-size warning."""
    with pytest.warns(UserWarning, match="See the documentation of affine_grid for details."):
        tracegrad.nn.functional.affine_grid(tracegrad.zeros(1, 2, 3), (1, 1, 2, 1), align_corners=True)


# ---- embeddings ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    idx, off = np.array([1, 2, 4, 5, 2, 0]), np.array([0, 2, 2, 5])
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode=mode), [idx, off])
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode=mode, padding_idx=2), [idx, off])
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode=mode), [np.array([[1, 2], [4, 4]])])
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode=mode, include_last_offset=True), [idx, np.array([0, 2, 3, 6])])


def test_embedding_bag_from_pretrained():
    w = x(4, 3)
    outs = []
    for mod in (get_torch(), tracegrad):
        bag = mod.nn.EmbeddingBag.from_pretrained(mod.tensor(w), mode="sum")
        outs.append((bag(mod.tensor([[0, 3], [1, 1]])).detach().numpy(), bag.weight.requires_grad, repr(bag)))
    close(outs[1][0], outs[0][0])
    assert outs[1][1:] == outs[0][1:]


def test_embedding_bag_weights_and_errors():
    idx, off, w = np.array([1, 2, 4, 5]), np.array([0, 1]), x(4)
    check_module(lambda nn: nn.EmbeddingBag(6, 3, mode="sum"), [idx, off, w],
                 call=lambda m, i, o, p: m(i, o, per_sample_weights=p))
    raises_like(lambda t, F: t.nn.EmbeddingBag(6, 3, mode="mean")(t.tensor(idx), t.tensor(off), t.tensor(w)))
    raises_like(lambda t, F: t.nn.EmbeddingBag(6, 3)(t.tensor([[1, 2]]), t.tensor([0])))
    raises_like(lambda t, F: t.nn.EmbeddingBag(6, 3)(t.tensor([1, 2])))


def test_embedding_padding_idx_max_norm():
    torch = get_torch()
    w = x(5, 3) * 3
    grads, weights = [], []
    for mod in (torch, tracegrad):
        emb = mod.nn.Embedding(5, 3, padding_idx=1, max_norm=1.0)
        with mod.no_grad():
            emb.weight.copy_(mod.tensor(w))
        out = emb(mod.tensor([[0, 1, 2], [1, 4, 4]]))
        (out * mod.tensor(x(2, 3, 3) * 0 + 1)).sum().backward()
        grads.append(emb.weight.grad.numpy())
        weights.append(emb.weight.detach().numpy())
    close(grads[1], grads[0])
    close(weights[1], weights[0])
    assert not grads[1][1].any()


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_dist(p):
    # torch.dist: one DistBackward0 node over both (broadcast) inputs
    parity(lambda m, F, a, b: m.dist(a, b, p).reshape(1), x(3, 4), x(4), names=False)


@pytest.mark.parametrize("call", [
    lambda F, t: F.max_pool1d(t[:, :, 0, 0], 2, return_indices=True),
    lambda F, t: F.max_pool2d(t[:, :, 0], 2, return_indices=True),
    lambda F, t: F.max_pool3d(t, 2, return_indices=True),
    lambda F, t: F.adaptive_max_pool2d(t[:, :, 0], 2, return_indices=True),
    lambda F, t: F.adaptive_max_pool3d(t, 2, return_indices=True),
], ids=["max1d", "max2d", "max3d", "adaptive2d", "adaptive3d"])
def test_max_pool_indices_edited_before_backward_raise(call):
    # torch's max-pool nodes save their indices output: an in-place edit of it before backward
    # is the version RuntimeError (tracegrad's gradient does not read them; it passed silently)
    a = R.randn(1, 2, 4, 4, 4).astype(np.float32)
    for m in (get_torch(), tracegrad):
        t = m.tensor(a, requires_grad=True)
        out, idx = call(m.nn.functional, t)
        out.sum().backward(retain_graph=True)   # untouched indices: backward runs
        idx.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_avg_pool2d_half_sums_in_float32(dtype):
    # torch's kernel sums half/bfloat16 windows in float32 and rounds once (a 7x7 window summed
    # in the narrow dtype was several ulps off); the gradient too
    a = R.randn(2, 3, 8, 8).astype(np.float32)
    res = []
    for m in (get_torch(), tracegrad):
        t = m.tensor(a).to(getattr(m, dtype)).requires_grad_()
        out = m.nn.functional.avg_pool2d(t, 7, 1)
        out.backward(m.ones_like(out))
        res.append((out.float().detach().numpy(), t.grad.float().numpy()))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    np.testing.assert_array_equal(res[1][1], res[0][1])


def test_adaptive_avg_pool2d_one_keeps_channels_last():
    # torch restrides the (1, 1) pool's mean to channels-last strides (c, 1, c, c) for a
    # channels_last input (grad_fn AsStridedBackward1); tracegrad gave contiguous strides
    a = R.randn(2, 3, 4, 4).astype(np.float32)
    got = []
    for m in (get_torch(), tracegrad):
        t = m.tensor(a, requires_grad=True)
        out = m.nn.functional.adaptive_avg_pool2d(t.to(memory_format=m.channels_last), 1)
        out.backward(m.ones_like(out))
        got.append((out.stride(), type(out.grad_fn).__name__, out.detach().numpy(), t.grad.numpy(),
                    m.nn.functional.adaptive_avg_pool2d(t.detach(), 1).stride()))
    assert got[1][:2] == got[0][:2] and got[1][4] == got[0][4]
    close(got[1][2], got[0][2])
    close(got[1][3], got[0][3])


def test_every_vision_op_has_a_parity_case(request, whole_module):
    """STYLE 11: every op of ``_ops/vision.py`` ran in a parity case above."""
    mine = [i for i in request.session.items if i.module is request.module]
    if len(mine) < 50:
        pytest.skip("runs only with the whole module")
    ours = {n for n, op in OPS.items() if getattr(op.fn, "__module__", "").endswith("_ops.vision")}
    missing = sorted(ours - _SEEN)
    assert not missing, f"vision ops without a parity case: {missing}"


_EMPTY_ADAPTIVE = {
    "avg1d": (lambda F, x: F.adaptive_avg_pool1d(x, 0), (1, 2, 4)),
    "avg2d": (lambda F, x: F.adaptive_avg_pool2d(x, (0, 2)), (1, 2, 4, 4)),
    "avg2d unbatched": (lambda F, x: F.adaptive_avg_pool2d(x, (2, 0)), (2, 4, 4)),
    "avg3d": (lambda F, x: F.adaptive_avg_pool3d(x, (1, 0, 2)), (1, 2, 4, 4, 4)),
    "max1d": (lambda F, x: F.adaptive_max_pool1d(x, 0), (1, 2, 4)),
    "max2d indices": (lambda F, x: F.adaptive_max_pool2d(x, (0, 2), True)[0], (1, 2, 4, 4)),
    "max3d": (lambda F, x: F.adaptive_max_pool3d(x, (1, 0, 2)), (1, 2, 4, 4, 4)),
    "max3d negative": (lambda F, x: F.adaptive_max_pool3d(x, (1, -1, 2)), (1, 2, 4, 4, 4)),
}


def _empty_adaptive_outcome(lib, name):
    pool, shape = _EMPTY_ADAPTIVE[name]
    x = lib.ones(*shape, requires_grad=True)
    try:
        y = pool(lib.nn.functional, x)
    except RuntimeError as e:
        return ("forward raises", type(e).__name__)
    try:
        y.sum().backward()
        backward = ("ok", tuple(x.grad.shape))
    except RuntimeError as e:   # torch's backward kernels refuse an empty grad_output
        backward = (type(e).__name__, str(e))
    return type(y.grad_fn).__name__, tuple(y.shape), backward


@pytest.mark.parametrize("name", sorted(_EMPTY_ADAPTIVE))
def test_adaptive_pool_with_an_empty_output_as_torch(name):
    torch = get_torch()
    assert _empty_adaptive_outcome(tracegrad, name) == _empty_adaptive_outcome(torch, name)
