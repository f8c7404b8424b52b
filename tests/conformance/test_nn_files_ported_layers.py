"""Behaviour tests from PyTorch's test/nn/test_embedding.py, test_pooling.py,
test_convolution.py and test_multihead_attention.py restated for the ``T`` fixture or as
``run_both`` programs (torch 2.13 is the oracle for every body); each test names its original.
CUDA/cudnn/mkldnn/quantized/JIT tests are skipped, and so are the cases the older ports cover
(tests/conformance/test_nn_ported.py, test_nn_checks_ported.py, tests/nn/test_conv_pool_properties.py).
The other test/nn files live in test_nn_files_ported.py."""
import itertools
import math
import warnings

import numpy as np
import pytest
from parity import init_params, randn, run_both


def raises_class(fn):
    """The builtin exception class ``fn()`` raises (torch's own classes subclass them), or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is the observation
        return next(k for k in type(e).__mro__ if k.__module__ == "builtins")
    return None


def xfail_tracegrad(request, T, reason):
    """Mark the running ``T`` test a strict xfail on its tracegrad run (torch must still pass)."""
    if T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def gradcheck(T, fn, inputs, **kw):
    """``T.autograd.gradcheck`` (float64 inputs) and gradgradcheck, both must hold."""
    assert T.autograd.gradcheck(fn, inputs, **kw)
    assert T.autograd.gradgradcheck(fn, inputs, **kw)


# ==== test/nn/test_embedding.py =================================================================
def test_embedding_sparse_basic(T):
    # TestEmbeddingNN.test_embedding_sparse_basic / test_embedding_sparse_empty_tensor
    for n, d, ids in ((10, 20, [[0, 2, 4, 5], [4, 3, 0, 9]]), (0, 0, []), (10, 0, [[0, 2, 4, 5], [4, 3, 0, 9]])):
        emb = T.nn.Embedding(n, d, sparse=True)
        emb(T.tensor(ids, dtype=T.int64)).sum().backward()
        assert emb.weight.grad.is_sparse and emb.weight.grad.shape == emb.weight.shape


def test_move_sparse_half_embedding(T):
    # TestEmbeddingNN.test_move_sparse_half_embedding (CPU part)
    emb = T.nn.Embedding(10, 3, sparse=True)
    assert emb.weight.device.type == "cpu" and emb.weight.dtype == T.get_default_dtype()
    emb.to(T.float16)
    assert emb.weight.dtype == T.float16 and emb.embedding_dim == 3 and emb.num_embeddings == 10


def test_embedding_max_norm_repeats(T):
    # TestEmbeddingNN.test_embedding_max_norm: repeated ids read the same renormed row
    emb = T.nn.Embedding(22, 5, max_norm=1.0)
    out = emb(T.tensor([2, 8, 8, 6]))
    assert T.equal(out[1], out[2]) and out.data.norm(p=2, dim=1).le(1 + 1e-6).all()


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float32", "float64"])
def test_embedding_from_pretrained_dtypes(T, dtype):
    # TestEmbeddingNN.test_embedding_from_pretrained (every dtype of the original's list)
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=getattr(T, dtype))
    emb = T.nn.Embedding.from_pretrained(a)
    assert T.equal(a, emb.weight.data)
    out = emb(T.tensor([0, 1]))
    assert T.equal(a, out) and out.dtype == a.dtype


def test_embedding_bag_from_pretrained_and_padding(T):
    # TestEmbeddingNN.test_embedding_bag_from_pretrained / test_embedding_from_pretrained_padding_idx /
    # test_embedding_bag_from_pretrained_padding_idx / test_embeddingbag_from_pretrained
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    bag = T.nn.EmbeddingBag.from_pretrained(a)
    assert T.equal(a, bag.weight)
    assert T.equal(a, bag(T.tensor([0, 1]), T.arange(2)))
    assert T.allclose(a.mean(0, keepdim=True), bag(T.tensor([[0, 1]])))
    emb = T.rand(4, 3, requires_grad=True)
    with T.no_grad():
        emb[2] = T.ones(3) * 7
    assert T.equal(T.nn.Embedding.from_pretrained(emb, padding_idx=2).weight[2], T.ones(3) * 7)
    assert T.equal(T.nn.EmbeddingBag.from_pretrained(emb, padding_idx=2).weight, emb)


def test_embedding_from_pretrained_options():
    # TestEmbeddingNN.test_embedding_from_pretrained_options / test_embeddingbag_from_pretrained_options
    # (float64 default dtype): max_norm with norm_type 0.5 renormalizes the pretrained rows in place
    def program(T, log):
        prev = T.get_default_dtype()
        T.set_default_dtype(T.float64)
        try:
            a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
            emb = T.nn.Embedding.from_pretrained(a, max_norm=2.0, norm_type=0.5, scale_grad_by_freq=False,
                                                 sparse=True)
            out = emb(T.tensor([0, 1]))
            log("embedding", [out, a, out.data.norm(p=0.5, dim=1)])
            b = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
            bag = T.nn.EmbeddingBag.from_pretrained(b, max_norm=2.0, norm_type=0.5, mode="max")
            log("bag", [bag(T.tensor([[0, 1]])), b, b.max(0, keepdim=True)[0]])
        finally:
            T.set_default_dtype(prev)
    run_both(program)


def test_embedding_functional_matches_module(T):
    # TestEmbeddingNN.test_embedding_functional / test_embedding_bag_functional
    a = T.tensor([[1, 3, 2], [0, 2, 1]])
    w = T.rand(4, 3, requires_grad=True)
    old = T.nn.Embedding(4, 3)
    old.weight.data = w.data
    assert T.equal(old.weight.data, w.data) and T.equal(old(a), T.nn.functional.embedding(a, w))
    assert T.equal(T.nn.Embedding.from_pretrained(w, padding_idx=2)(a), T.nn.functional.embedding(a, w, padding_idx=2))
    bag = T.nn.EmbeddingBag(4, 3)
    bag.weight = T.nn.Parameter(w)
    assert T.allclose(bag(a), T.nn.functional.embedding_bag(a, w))
    assert T.allclose(T.nn.EmbeddingBag.from_pretrained(w, padding_idx=2)(a),
                      T.nn.functional.embedding_bag(a, w, padding_idx=2))


def test_embedding_bag_padding_idx_error(T):
    # TestEmbeddingNN.test_embedding_bag_padding_idx_error: functional RuntimeError, module AssertionError
    a = T.tensor([[1, 3, 2], [0, 2, 1]])
    w = T.rand(4, 3, requires_grad=True)
    for pad in range(-6, 6):
        if pad < -4 or pad >= 4:
            with pytest.raises(RuntimeError, match="padding_idx must be within the number of embeddings"):
                T.nn.functional.embedding_bag(a, w, padding_idx=pad)
            with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
                T.nn.EmbeddingBag(4, 3, padding_idx=pad)
        else:
            T.nn.functional.embedding_bag(a, w, padding_idx=pad)
            T.nn.EmbeddingBag(4, 3, padding_idx=pad)


def test_embeddingbag_include_last_offset(T):
    # TestEmbeddingNN.test_embeddingbag_include_last_offset (pytorch issue 89677)
    bag = T.nn.EmbeddingBag(100, 3, include_last_offset=True, padding_idx=61)
    x = T.tensor([0, 1, 2, 3])
    ref = T.stack([bag.weight[0:3].mean(0), bag.weight[3]])
    for offsets in ([0, 3, 3], [0, 3, 4]):
        assert T.allclose(ref, bag(x, T.tensor(offsets)))


def test_embedding_dense_grad(T):
    # TestEmbeddingNNDeviceType.test_embedding_dense_grad: gradcheck and gradgradcheck in float64
    w = randn(T, (6, 3), 0, dtype=T.float64, requires_grad=True)
    ids = T.tensor([[0, 1, 1, 2], [3, 5, 4, 1]])
    gradcheck(T, lambda weight: T.nn.functional.embedding(ids, weight), (w,))


def test_embedding_scalar_weight_error(T):
    # TestEmbeddingNNDeviceType.test_embedding_scalar_weight_error
    ids = T.rand(2, 2).long()
    for w in (T.tensor(1.0), T.tensor(1.0).reshape(1, 1, 1)):
        with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
            T.nn.functional.embedding(ids, w)


def test_embedding_sparse_backward(T):
    # TestEmbeddingNNDeviceType.test_embedding_backward (float64), first step: one uncoalesced
    # entry per looked-up id
    emb = T.nn.Embedding(10, 3, sparse=True).to(dtype=T.float64)
    ids = T.tensor([[7, 1, 3]])
    emb(ids[0]).sum().backward()
    assert T.equal(emb.weight.grad._indices(), ids)
    assert T.equal(emb.weight.grad._values(), T.tensor(1.0, dtype=T.float64).expand(3, 3))


def test_embedding_sparse_grad_accumulation(T, request):
    # TestEmbeddingNNDeviceType.test_embedding_backward (float64), accumulation steps: a second
    # backward appends its entries to the sparse .grad (indices and values concatenated)
    xfail_tracegrad(request, T, "the autograd engine's AccumulateGrad sums a second sparse gradient into a "
                                "coalesced one instead of concatenating the entries as torch")
    emb = T.nn.Embedding(10, 3, sparse=True).to(dtype=T.float64)
    ids = T.tensor([[7, 1, 3]])
    ones = T.tensor(1.0, dtype=T.float64).expand(3, 3)
    emb(ids[0]).sum().backward()
    emb(ids[0]).sum().backward()
    assert T.equal(emb.weight.grad._indices(), ids.repeat(1, 2))
    assert T.equal(emb.weight.grad._values(), T.cat((ones, ones)))
    emb.zero_grad()
    emb(ids[0]).sum().backward()
    emb(T.tensor([8, 1, 3])).sum().backward()
    assert emb.weight.grad._indices().tolist() == [[7, 1, 3, 8, 1, 3]]


def test_embedding_max_norm_backward_and_fwd_ad():
    # TestEmbeddingNNDeviceType.test_embedding_max_norm_backward / test_embedding_max_norm_fwd_AD:
    # the renorm is not differentiated (gradient counts the ids, tangent passes through)
    def program(T, log):
        w = randn(T, (4, 4), 0, scale=2.0, requires_grad=True)
        T.nn.functional.embedding(T.tensor([0, 1, 2, 2]), w, max_norm=1.0).sum().backward()
        log("grad", w.grad)
        fwad = T.autograd.forward_ad
        with fwad.dual_level():
            dual = fwad.make_dual(randn(T, (4, 4), 1, scale=2.0), T.ones(4, 4))
            out = T.nn.functional.embedding(T.tensor([[0, 1], [2, 2]]), dual, max_norm=1.0)
            log("jvp", fwad.unpack_dual(out).tangent)
    run_both(program)
