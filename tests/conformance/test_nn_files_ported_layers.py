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


def test_embedding_padding_idx(T):
    # TestEmbeddingNNDeviceType.test_embedding_padding_idx: zero padding rows (also negative
    # padding_idx, sparse), an assigned padding vector, range errors, and the padding row's
    # gradient staying zero through backward and double backward
    for pad, sparse, ids, zero_at in ((0, False, [[0, 2, 4, 5], [4, 3, 0, 9]], [(0, 0), (1, 2)]),
                                      (0, True, [[0, 2, 4, 5], [4, 3, 0, 9]], [(0, 0), (1, 2)]),
                                      (-2, False, [[0, 2, 8, 5], [4, 8, 0, 9]], [(0, 2), (1, 1)]),
                                      (-2, True, [[0, 2, 8, 5], [4, 8, 0, 9]], [(0, 2), (1, 1)])):
        out = T.nn.Embedding(10, 4, padding_idx=pad, sparse=sparse)(T.tensor(ids))
        assert all(out[i][j].sum().item() == 0 for i, j in zero_at)
    emb = T.nn.Embedding(10, 4, padding_idx=2, sparse=True)
    with T.no_grad():
        emb.weight[2] = T.ones(4)
    assert T.equal(emb(T.tensor([0, 2]))[1], T.ones(4))
    for bad in (25, -25):
        with pytest.raises(AssertionError):
            T.nn.Embedding(num_embeddings=10, embedding_dim=4, padding_idx=bad)
    emb = T.nn.Embedding(5, 2, padding_idx=0)
    for n in (1, 2, 50):
        for others in ([], [1, 3], [2]):
            ids = T.tensor(others + [0] * n)
            pre = emb.weight[0].clone()
            emb(ids).sum().backward()
            assert T.equal((emb.weight + emb.weight.grad)[0], pre)
            emb.zero_grad()
            s = emb(ids).sum()
            (g,) = T.autograd.grad(s, list(emb.parameters()), retain_graph=True)
            (g.sum() + s).backward()
            assert T.equal((emb.weight + emb.weight.grad)[0], pre)
            emb.zero_grad()


def test_embedding_bag_1D_padding_idx(T):
    # TestEmbeddingNNDeviceType.test_embedding_bag_1D_padding_idx (float32, a fixed small draw):
    # 1-D ids with offsets (one bag empty, one full) equal the same bags written 2-D and filled
    # with the padding index, values and gradients, for each mode, sparse or dense,
    # include_last_offset, and an all-padding draw
    F = T.nn.functional
    sizes, max_len, n_words = [2, 0, 4, 1], 4, 6
    offsets = [0, 2, 2, 6]
    for ids, pad, mode, sparse, include_last in (([3, 1, 1, 5, 0, 1, 4], 1, "sum", True, True),
                                                ([3, 1, 1, 5, 0, 1, 4], None, "mean", False, False),
                                                ([3, 1, 1, 5, 0, 1, 4], 1, "max", False, True),
                                                ([1] * 7, 1, "mean", True, False)):
        pad2 = n_words if pad is None else pad
        rows = [ids[o:o + s] + [pad2] * (max_len - s) for o, s in zip(offsets, sizes)]
        if True:  # (one combination per row keeps the compile count low)
            w = randn(T, (n_words + 1, 3), 0, requires_grad=True)
            w2 = w.detach().clone().requires_grad_(True)
            bag = F.embedding_bag(T.tensor(ids), w, T.tensor(offsets + [7] * include_last), padding_idx=pad,
                                  mode=mode, sparse=sparse, include_last_offset=include_last)
            ref = F.embedding_bag(T.tensor(rows), w2, padding_idx=pad2, mode=mode, sparse=sparse)
            assert T.allclose(bag, ref), (ids, pad, mode, sparse, include_last)
            bag.sum().backward()
            ref.sum().backward()
            dense = [g.to_dense() if g.is_sparse else g for g in (w.grad, w2.grad)]
            assert T.allclose(*dense)


def test_embedding_bag_2D_padding_idx(T):
    # TestEmbeddingNNDeviceType.test_embedding_bag_2D_padding_idx (float32, fixed ids): against
    # embedding + a masked reduction (all-padding rows give zeros), values and gradients
    F = T.nn.functional

    def reference(ids, w, mode, sparse, pad):
        emb = F.embedding(ids, w, padding_idx=pad, sparse=sparse)
        keep = ids.ne(pad).float().unsqueeze(-1)
        if mode == "max":
            res = emb.masked_fill(ids.unsqueeze(-1) == pad, -float("inf")).amax(dim=-2)
        else:
            res = emb.mul(keep).sum(dim=-2)
            if mode == "mean":
                res = res.div(keep.sum(dim=-2))
        if mode != "sum":
            res = res.masked_fill(ids.eq(pad).all(dim=-1).unsqueeze(-1), 0)
        return res

    for ids, mode, sparse in (([[3, 1, 4, 1], [2, 2, 2, 2], [5, 0, 2, 1]], "sum", True),
                              ([[3, 1, 4, 1], [2, 2, 2, 2], [5, 0, 2, 1]], "max", False),
                              ([[1, 1, 1, 1]] * 3, "mean", False)):
        ids = T.tensor(ids)
        if True:  # (one combination per row keeps the compile count low)
            w = randn(T, (6, 3), 1, requires_grad=True)
            w2 = w.detach().clone().requires_grad_(True)
            bag = F.embedding_bag(ids, w, padding_idx=2 if ids[1, 0] == 2 else 1, mode=mode, sparse=sparse)
            ref = reference(ids, w2, mode, sparse, 2 if ids[1, 0] == 2 else 1)
            assert T.allclose(bag, ref), (ids, mode, sparse)
            bag.sum().backward()
            ref.sum().backward()
            dense = [g.to_dense() if g.is_sparse else g for g in (w.grad, w2.grad)]
            assert T.allclose(*dense)


@pytest.mark.parametrize("ids_dtype, offsets_dtype", [("int32", "int64"), ("int64", "int32"), ("int64", "int64")])
def test_embedding_bag_empty_input(T, ids_dtype, offsets_dtype):
    # TestEmbeddingNNDeviceType.test_embedding_bag_empty_input: empty bags are zeros
    x = T.tensor([], dtype=getattr(T, ids_dtype))
    for sparse in (True, False):
        bag = T.nn.EmbeddingBag(4, 3, sparse=sparse)
        for offsets in ([0], [0, 0]):
            out = bag(input=x, offsets=T.tensor(offsets, dtype=getattr(T, offsets_dtype)))
            assert T.equal(out, T.zeros_like(out)) and out.shape == (len(offsets), 3)


def test_embedding_bag_out_of_bounds_idx(T):
    # TestEmbeddingNNDeviceType.test_embedding_bag_out_of_bounds_idx (CPU check)
    w = T.randn(10, 2)
    for mode in ("sum", "mean", "max"):
        for psw in ((None, T.randn(1, 2)) if mode == "sum" else (None,)):
            for ids in ([[-1, 1]], [[11, 8]]):
                with pytest.raises(RuntimeError, match="Expected idx >= 0 && idx < num_embeddings"):
                    T.nn.functional.embedding_bag(T.tensor(ids), w, per_sample_weights=psw, padding_idx=0, mode=mode)


def test_embedding_bag_dimension_errors(T):
    # TestEmbeddingNNDeviceType.test_embedding_bag_dimension_errors (the functional form)
    F = T.nn.functional
    w = T.zeros(2, 6, dtype=T.float64)
    with pytest.raises((ValueError, RuntimeError), match="input has to be 1D or 2D Tensor"):
        F.embedding_bag(T.full((2, 0, 0, 6, 6), 2), w, T.zeros(2, 0, 0, 6, 6, dtype=T.int64))
    with pytest.raises((ValueError, RuntimeError), match="offsets has to be a 1D Tensor"):
        F.embedding_bag(T.full((2,), 1), T.zeros(2, 2, dtype=T.float64), T.zeros(2, 0, 0, 6, 6, dtype=T.int64))
    with pytest.raises((ValueError, RuntimeError), match="weight has to be a 2D Tensor"):
        F.embedding_bag(T.full((2,), 1), T.zeros(2, 2, 2, dtype=T.float64), T.zeros(2, dtype=T.int64))


def test_EmbeddingBag_per_sample_weights_failures(T):
    # TestEmbeddingNNDeviceType.test_EmbeddingBag_per_sample_weights_failures
    es = T.nn.EmbeddingBag(5, 2, mode="sum")
    ids, offsets = T.tensor([3, 1, 1, 1, 4, 0], dtype=T.int32), T.tensor([0, 0, 3, 3, 6])
    with pytest.raises(RuntimeError, match="have the same type as"):
        es(ids, offsets, T.randn(6, dtype=T.float64))
    with pytest.raises(ValueError, match="same shape as the input"):
        es(ids, offsets, T.randn(5))
    with pytest.raises(ValueError, match="same shape as the input"):
        es(T.randint(5, (7, 3)), None, T.randn(7 * 3))
    for mode in ("max", "mean"):
        with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
            T.nn.EmbeddingBag(5, 2, mode=mode)(T.randint(5, (7, 3)), None, T.randn(7, 3))


@pytest.mark.parametrize("include_last", [False, True])
def test_EmbeddingBag_per_sample_weights_and_offsets(include_last):
    # TestEmbeddingNNDeviceType.test_EmbeddingBag_per_sample_weights_and_offsets /
    # ..._and_new_offsets / test_EmbeddingBag_empty_per_sample_weights_and_offsets: values and
    # gradients of weight and per-sample weights, empty bags, an empty input
    def program(T, log):
        for mode, psw in (("sum", True), ("sum", False), ("mean", False), ("max", False)):
            es = T.nn.EmbeddingBag(5, 2, mode=mode, include_last_offset=include_last)
            es.weight.data.copy_(T.arange(1, 11).view_as(es.weight).float())
            ids = T.tensor([3, 1, 1, 1, 4, 0])
            offsets = T.tensor([0, 0, 3, 3, 6] + [6] * include_last)
            w = randn(T, (6,), 1, requires_grad=True) if psw else None
            out = es(ids, offsets, w)
            out.backward(randn(T, tuple(out.shape), 2))
            log(f"{mode} {psw}", [out, es.weight.grad, None if w is None else w.grad])
        es = T.nn.EmbeddingBag(5, 2, mode="sum")
        w = T.tensor([], requires_grad=True)
        out = es(T.tensor([], dtype=T.long), T.tensor([0, 0, 0, 0, 0]), w)
        out.backward(randn(T, tuple(out.shape), 3))
        log("empty", [out, es.weight.grad, w.grad])
    run_both(program)
