"""Bad-input parity, round 15 (nn): a probe over ~400 wrong calls to nn layers and functionals
(Conv*, pooling, Embedding, norms, MultiheadAttention/Transformer masks, interpolate, pad,
fold/unfold, pixel_shuffle, grid_sample, losses, optimizers, schedulers, DataLoader and samplers)
left these differences from torch 2.13, fixed here: bool input to max pooling and integer input
to the 1-D max pool (NotImplementedError, was a generic RuntimeError or a result), integer input
to fold/unfold (NotImplementedError, was a result; bool fold failed, torch ORs the windows), integer logits to gumbel_softmax (was a
sample), a 0-d input to nll_loss (ValueError, was Python's IndexError), a multi_margin_loss
weight of another length than C (RuntimeError; a longer one was silently read in part) or a
2-D target, ctc_loss concatenated targets of another length than sum(target_lengths) (a loss
was computed from the wrong labels), a weight_norm dim the weight does not have (IndexError,
was accepted), and a dtype sweep: bool/integer/half inputs to the functionals whose torch CPU
kernel has no such version (conv, reflect/replicate pad, threshold, avg pools, bilinear,
grid_sample, prelu, glu, rms_norm, max_unpool, nll/bce/margin losses, pdist) raise torch's
NotImplementedError where a result was computed, integer hinge_embedding_loss keeps its dtype
(so 'mean' refuses it, as torch) and integer margin_ranking_loss is a floating loss (was an
error); hardtanh of uint8 with a negative limit is RuntimeError. Each call runs under torch
(the oracle) and tracegrad: the same exception class (or none), no text of the layers below
tracegrad; the ``_ok`` calls are ones torch accepts."""
import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")


def _F(T):
    return T.nn.functional


def _x(T, dt="float32", *shape):
    return T.ones(*(shape or (1, 1, 4, 4)), dtype=getattr(T, dt))


CASES = {
    # max pooling: no bool kernel in torch (the 1-D one has no integer kernel either)
    "max_pool2d(bool)": lambda T: _F(T).max_pool2d(_x(T, "bool"), 2),
    "max_pool2d(bool, return_indices)": lambda T: _F(T).max_pool2d(_x(T, "bool"), 2, return_indices=True),
    "MaxPool2d(2)(bool)": lambda T: T.nn.MaxPool2d(2)(_x(T, "bool")),
    "max_pool1d(bool)": lambda T: _F(T).max_pool1d(_x(T, "bool", 1, 1, 4), 2),
    "max_pool1d(int64)": lambda T: _F(T).max_pool1d(_x(T, "int64", 1, 1, 4), 2),
    "max_pool1d(uint8)": lambda T: _F(T).max_pool1d(_x(T, "uint8", 1, 1, 4), 2),
    "max_pool1d(bool, return_indices)": lambda T: _F(T).max_pool1d(_x(T, "bool", 1, 1, 4), 2, return_indices=True),
    "max_pool3d(bool)": lambda T: _F(T).max_pool3d(_x(T, "bool", 1, 1, 2, 2, 2), 2),
    "max_pool3d(bool, return_indices)": lambda T: _F(T).max_pool3d(_x(T, "bool", 1, 1, 2, 2, 2), 2, return_indices=True),
    "max_pool2d(bool, kernel too big) shape first": lambda T: _F(T).max_pool2d(_x(T, "bool"), 9),
    "max_pool1d(int64, kernel 0) shape first": lambda T: _F(T).max_pool1d(_x(T, "int64", 1, 1, 4), 0),
    "max_pool2d(int64)_ok": lambda T: _F(T).max_pool2d(_x(T, "int64"), 2),
    "max_pool1d(int64, return_indices)_ok": lambda T: _F(T).max_pool1d(_x(T, "int64", 1, 1, 4), 2, return_indices=True),
    "max_pool1d(float64)_ok": lambda T: _F(T).max_pool1d(_x(T, "float64", 1, 1, 4), 2),
    # im2col/col2im: floating, complex and bool kernels, no integer ones
    "unfold(int64)": lambda T: _F(T).unfold(_x(T, "int64"), 2),
    "unfold(uint8)": lambda T: _F(T).unfold(_x(T, "uint8"), 2),
    "nn.Unfold(2)(int32)": lambda T: T.nn.Unfold(2)(_x(T, "int32")),
    "fold(int64)": lambda T: _F(T).fold(_x(T, "int64", 1, 4, 4), 3, 2),
    "nn.Fold(3, 2)(int16)": lambda T: T.nn.Fold(3, 2)(_x(T, "int16", 1, 4, 4)),
    "unfold(int64, kernel too big) shape first": lambda T: _F(T).unfold(_x(T, "int64"), 5),
    "unfold(bool)_ok": lambda T: _F(T).unfold(_x(T, "bool"), 2),
    "fold(bool)_ok": lambda T: _F(T).fold(_x(T, "bool", 1, 4, 4), 3, 2),
    "unfold(float64)_ok": lambda T: _F(T).unfold(_x(T, "float64"), 2),
    # gumbel_softmax draws exponential noise: a floating dtype only
    "gumbel_softmax(int64)": lambda T: _F(T).gumbel_softmax(T.ones(2, 3, dtype=T.long)),
    "gumbel_softmax(bool, hard)": lambda T: _F(T).gumbel_softmax(T.ones(2, 3, dtype=T.bool), hard=True),
    "gumbel_softmax(float64)_ok": lambda T: _F(T).gumbel_softmax(T.ones(2, 3, dtype=T.float64)),
    # nll_loss / cross_entropy of a 0-d input
    "nll_loss(0-d input)": lambda T: _F(T).nll_loss(T.tensor(1.), T.tensor(0)),
    "NLLLoss()(0-d input)": lambda T: T.nn.NLLLoss()(T.tensor(1.), T.tensor(0)),
    "nll_loss(1-d input, 0-d target)_ok": lambda T: _F(T).nll_loss(T.zeros(3), T.tensor(0)),
    # multi_margin_loss weight: one per class
    "multi_margin_loss(weight 2 for 3 classes)": lambda T: _F(T).multi_margin_loss(T.zeros(2, 3), T.tensor([0, 2]),
                                                                                   weight=T.ones(2)),
    "multi_margin_loss(weight 4 for 3 classes)": lambda T: _F(T).multi_margin_loss(T.zeros(2, 3), T.tensor([0, 2]),
                                                                                   weight=T.ones(4)),
    "MultiMarginLoss(weight 4)(3 classes)": lambda T: T.nn.MultiMarginLoss(weight=T.ones(4))(T.zeros(2, 3),
                                                                                            T.tensor([0, 2])),
    "multi_margin_loss(weight 3)_ok": lambda T: _F(T).multi_margin_loss(T.zeros(2, 3), T.tensor([0, 2]),
                                                                        weight=T.ones(3)),
    # weight_norm's dim must index the weight (-1 and None: the whole tensor)
    "weight_norm(dim 2 of 2-D)": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=2),
    "weight_norm(dim -3 of 2-D)": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=-3),
    "parametrizations.weight_norm(dim 5)": lambda T: T.nn.utils.parametrizations.weight_norm(T.nn.Linear(2, 2), dim=5),
    "weight_norm(dim -2)_ok": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=-2),
    "weight_norm(dim None)_ok": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=None),
    "parametrizations.weight_norm(dim 1)_ok": lambda T: T.nn.utils.parametrizations.weight_norm(T.nn.Linear(2, 2), dim=1),
}

# functionals whose torch CPU kernel has no version for the dtype (JAX computed one before)
_KERNEL_DTYPES = {
    "conv1d": (lambda T, d: _F(T).conv1d(_x(T, d, 1, 1, 3), _x(T, d, 1, 1, 2)), ("bool",), ("int64",)),
    "conv2d": (lambda T, d: _F(T).conv2d(_x(T, d, 1, 1, 3, 3), _x(T, d, 1, 1, 2, 2)), ("bool",), ()),
    "conv_transpose2d": (lambda T, d: _F(T).conv_transpose2d(_x(T, d, 1, 1, 3, 3), _x(T, d, 1, 1, 2, 2)),
                         ("bool", "int32", "uint8"), ("int64",)),
    "pad(reflect)": (lambda T, d: _F(T).pad(_x(T, d, 1, 1, 4), (1, 1), mode="reflect"), ("bool",), ("int64",)),
    "pad(replicate, 2-D)": (lambda T, d: _F(T).pad(_x(T, d), (1, 1, 1, 1), mode="replicate"), ("bool",), ()),
    "pad(circular)": (lambda T, d: _F(T).pad(_x(T, d, 1, 1, 4), (1, 1), mode="circular"), (), ("bool",)),
    "threshold": (lambda T, d: _F(T).threshold(_x(T, d, 2), 0, 0), ("bool",), ("int64",)),
    "avg_pool2d": (lambda T, d: _F(T).avg_pool2d(_x(T, d), 2), ("bool", "int32", "uint8"), ("int64",)),
    "AvgPool1d(2)": (lambda T, d: T.nn.AvgPool1d(2)(_x(T, d, 1, 1, 4)), ("int8",), ()),
    "local_response_norm": (lambda T, d: _F(T).local_response_norm(_x(T, d, 1, 2, 2), 2), ("bool", "int16"), ()),
    "bilinear": (lambda T, d: _F(T).bilinear(_x(T, d, 1, 2), _x(T, d, 1, 2), _x(T, d, 1, 2, 2)), ("bool",),
                 ("int64",)),
    "grid_sample": (lambda T, d: _F(T).grid_sample(_x(T, d, 1, 1, 2, 2), T.zeros(1, 1, 1, 2, dtype=getattr(T, d)),
                                                   align_corners=False), ("int64", "bool"), ()),
    "prelu": (lambda T, d: _F(T).prelu(_x(T, d, 2), _x(T, d, 1)), ("int64", "bool"), ()),
    "nn.GLU()": (lambda T, d: T.nn.GLU()(_x(T, d, 2)), ("int64", "bool"), ()),
    "rms_norm": (lambda T, d: _F(T).rms_norm(_x(T, d, 2), (2,)), ("int64",), ()),
    "max_unpool1d": (lambda T, d: _F(T).max_unpool1d(_x(T, d, 1, 1, 2), T.tensor([[[0, 2]]]), 2), ("int64", "bool"),
                     ()),
    "nll_loss": (lambda T, d: _F(T).nll_loss(_x(T, d, 2, 3), T.tensor([0, 1])), ("int64", "bool"), ("float16",)),
    "binary_cross_entropy": (lambda T, d: _F(T).binary_cross_entropy(_x(T, d, 2), _x(T, d, 2)), ("int64", "bool"),
                             ()),
    "BCEWithLogitsLoss()": (lambda T, d: T.nn.BCEWithLogitsLoss()(_x(T, d, 2), _x(T, d, 2)), ("int64", "bool"), ()),
    "multi_margin_loss": (lambda T, d: _F(T).multi_margin_loss(_x(T, d, 2, 2), T.tensor([0, 1])),
                          ("int64", "float16", "bfloat16"), ()),
    "multilabel_margin_loss": (lambda T, d: _F(T).multilabel_margin_loss(_x(T, d, 2, 2), T.zeros(2, 2, dtype=T.long)),
                               ("bool", "float16"), ()),
    "pdist": (lambda T, d: _F(T).pdist(_x(T, d, 2, 2)), ("float16",), ()),
    # integer losses: hinge keeps the input's dtype ('mean' then refuses it), margin_ranking's
    # float margin makes a floating loss
    "hinge_embedding_loss": (lambda T, d: _F(T).hinge_embedding_loss(_x(T, d, 2), _x(T, d, 2)), ("int64",), ()),
    "margin_ranking_loss": (lambda T, d: _F(T).margin_ranking_loss(_x(T, d, 2), _x(T, d, 2), _x(T, d, 2)), (),
                            ("int64", "int32")),
}
for _op, (_fn, _bad, _ok) in _KERNEL_DTYPES.items():
    for _d in _bad + _ok:
        CASES[f"{_op}({_d}){'_ok' if _d in _ok else ''}"] = (lambda fn, d: lambda T: fn(T, d))(_fn, _d)
CASES.update({
    # the checks read an input passed by keyword too
    "bilinear(bool, by keyword)": lambda T: _F(T).bilinear(input1=_x(T, "bool", 1, 2), input2=_x(T, "bool", 1, 2),
                                                           weight=_x(T, "bool", 1, 2, 2)),
    "pad(bool, reflect, by keyword)": lambda T: _F(T).pad(input=_x(T, "bool", 1, 1, 4), pad=(1, 1), mode="reflect"),
    "conv1d(float32, by keyword)_ok": lambda T: _F(T).conv1d(input=_x(T, "float32", 1, 1, 3), weight=_x(T, "float32", 1, 1, 2)),
    "hardtanh(uint8)": lambda T: _F(T).hardtanh(_x(T, "uint8", 2)),
    "hardtanh_(uint8, -1, 2)": lambda T: _F(T).hardtanh_(_x(T, "uint8", 2), -1., 2.),
    "hardtanh(uint8, 0, 1)_ok": lambda T: _F(T).hardtanh(_x(T, "uint8", 2), 0., 1.),
    "leaky_relu(slope 1j)": lambda T: _F(T).leaky_relu(_x(T, "float32", 2), 1j),
    "elu(alpha 2j)": lambda T: _F(T).elu(_x(T, "float32", 2), 2j),
    "multi_margin_loss(target 2x1)": lambda T: _F(T).multi_margin_loss(T.zeros(2, 3), T.zeros(2, 1, dtype=T.long)),
    "multi_margin_loss(1-D input, target of 1)_ok": lambda T: _F(T).multi_margin_loss(T.zeros(3), T.zeros(1, dtype=T.long)),
    "ctc_loss(concatenated targets 5 for lengths 3+3)": lambda T: _F(T).ctc_loss(
        T.zeros(5, 2, 4).log_softmax(2), T.ones(5, dtype=T.long), T.tensor([5, 5]), T.tensor([3, 3])),
    "ctc_loss(concatenated targets 7 for lengths 3+3)": lambda T: _F(T).ctc_loss(
        T.zeros(5, 2, 4).log_softmax(2), T.ones(7, dtype=T.long), T.tensor([5, 5]), T.tensor([3, 3])),
    "ctc_loss(concatenated targets 6)_ok": lambda T: _F(T).ctc_loss(
        T.zeros(5, 2, 4).log_softmax(2), T.ones(6, dtype=T.long), T.tensor([5, 5]), T.tensor([3, 3])),
})


@pytest.mark.parametrize("name", list(CASES))
def test_same_class_as_torch(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


GIST = {
    "max_pool2d(bool)": "\"max_pool2d\" not implemented for 'Bool'",
    "max_pool1d(int64)": "\"max_pool1d_impl\" not implemented for 'Long'",
    "max_pool3d(bool)": "\"max_pool3d\" not implemented for 'Bool'",
    "unfold(uint8)": "\"im2col_out_cpu\" not implemented for 'Byte'",
    "fold(int64)": "\"col2im_out_cpu\" not implemented for 'Long'",
    "gumbel_softmax(int64)": "dtype must be a floating point but you specified Long",
    "nll_loss(0-d input)": "Expected 1 or more dimensions (got 0)",
    "multi_margin_loss(weight 4 for 3 classes)": "inconsistent weight size, expected 3 but got [4]",
    "weight_norm(dim 2 of 2-D)": "expected to be in range of [-2, 1], but got 2",
    "conv1d(bool)": "\"slow_conv2d_cpu\" not implemented for 'Bool'",
    "pad(reflect)(bool)": "\"reflection_pad1d\" not implemented for 'Bool'",
    "pad(replicate, 2-D)(bool)": "\"replication_pad2d\" not implemented for 'Bool'",
    "avg_pool2d(int32)": "\"avg_pool2d\" not implemented for 'Int'",
    "grid_sample(int64)": "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for 'Long'",
    "nll_loss(bool)": "\"nll_loss_out_frame\" not implemented for 'Bool'",
    "multi_margin_loss(bfloat16)": "not implemented for 'BFloat16'",
    "hinge_embedding_loss(int64)": "mean(): could not infer output dtype",
    "hardtanh(uint8)": "cannot do hardtanh on an unsigned type with negative limits",
    "multi_margin_loss(target 2x1)": "target tensor should be 1-D with size equal to the number of input samples",
    "ctc_loss(concatenated targets 5 for lengths 3+3)": "Expected tensor to have size 6 at dimension 0, but got size 5",
}


@pytest.mark.parametrize("name", list(GIST))
def test_message_gist(name):
    assert_gist(name, CASES[name], GIST[name], torch, tracegrad)


def test_accepted_calls_keep_torchs_values():
    # what the new checks let through still computes torch's values
    for T in (torch, tracegrad):
        F = _F(T)
        x = T.arange(16).reshape(1, 1, 4, 4)
        got = [F.max_pool2d(x, 2).tolist(), F.max_pool1d(x[0].double(), 2).tolist(),
               F.unfold(x.bool(), 3).sum().item(), F.unfold(x.double(), 3)[0, :, 0].tolist(),
               F.fold(T.tensor([[[True, False, False, True]]]).repeat(1, 4, 1), 3, 2).int().tolist(),
               F.multi_margin_loss(T.tensor([[0.1, 0.5, 0.2]]), T.tensor([1]),
                                   weight=T.tensor([1., 3., 2.])).item()]
        got.append(tuple(T.nn.utils.weight_norm(T.nn.Linear(2, 2), dim=-2).weight_g.shape))
        i, t = T.tensor([0, 3, 1]), T.tensor([-1, -1, 1])
        for r in (F.hinge_embedding_loss(i, t, margin=1.5, reduction="none"), F.margin_ranking_loss(i, i, t),
                  F.pad(T.tensor([[[True, False, False]]]), (1, 1), mode="circular")):
            got.append((str(r.dtype).split(".")[-1], r.tolist()))
        if T is torch:
            want = got
    assert got[:5] == want[:5]
    assert got[5] == pytest.approx(want[5])
    assert got[6:] == want[6:]
