"""Behaviour tests from PyTorch's test/nn/test_embedding.py, test_pooling.py,
test_convolution.py and test_multihead_attention.py restated for the ``T`` fixture or as
``run_both`` programs (torch 2.13 is the oracle for every body); each test names its original.
CUDA/cudnn/mkldnn/quantized/JIT tests are skipped, and so are the cases the older ports cover
(tests/conformance/test_nn_ported.py, test_nn_checks_ported.py, tests/nn/test_conv_pool_properties.py).
The other test/nn files live in test_nn_files_ported.py."""
import math

import numpy as np
import pytest
from _nn_files_helpers import xfail_tracegrad
from parity import init_params, randn, run_both


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


# ==== test/nn/test_multihead_attention.py =======================================================
_MHA_VARIANTS = {  # test_multihead_attention's helper variants: (key_padding_mask, bias_kv, zero_attn, saved_kv, same_dim)
    # (the three that together switch every option; the single-option ones add compile time only)
    "bias_kv_zero_attn": (True, True, True, False, False),
    "all_arguments1": (True, False, True, True, False),
    "all_arguments3": (True, False, True, True, True),
}


@pytest.mark.parametrize("variant", list(_MHA_VARIANTS))
def test_multihead_attention_forward_variants(variant):
    # TestMultiheadAttentionNN.test_multihead_attention (its helper's variants, both
    # average_attn_weights): F.multi_head_attention_forward with one query step, a 0/-inf
    # attn_mask, key padding, bias_kv, zero_attn, static k/v, separate or packed projections
    kpm, bias_kv, zero_attn, saved, same = _MHA_VARIANTS[variant]

    def program(T, log):
        batch, seq, d_head, heads = 2, 3, 2, 2
        d_model = d_head * heads
        kv_dim = d_model if same else 3
        mha = init_params(T, T.nn.MultiheadAttention(d_model, heads, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                                     kdim=kv_dim, vdim=kv_dim), 0)
        q = randn(T, (1, batch, d_model), 1, requires_grad=True)
        k = randn(T, (seq, batch, kv_dim), 2)
        attn_mask = T.tensor([[0.0, float("-inf"), 0.0]])
        pad = T.tensor([[False, True, False]] * batch) if kpm else None
        static = ({"static_k": randn(T, (batch * heads, seq, d_head), 3),
                   "static_v": randn(T, (batch * heads, seq, d_head), 4)} if saved else {})
        proj = ({} if mha._qkv_same_embed_dim else
                {"use_separate_proj_weight": True, "q_proj_weight": mha.q_proj_weight,
                 "k_proj_weight": mha.k_proj_weight, "v_proj_weight": mha.v_proj_weight})
        for average in (True, False):
            out, w = T.nn.functional.multi_head_attention_forward(
                q, k, k, d_model, heads, mha.in_proj_weight, mha.in_proj_bias, mha.bias_k, mha.bias_v,
                mha.add_zero_attn, mha.dropout, mha.out_proj.weight, mha.out_proj.bias, mha.training, pad, True,
                attn_mask, average_attn_weights=average, is_causal=False, **proj, **static)
            out.sum().backward()
            log(f"average={average}", [out, w, q.grad])
    run_both(program)


def test_multihead_attention_bias_to_static_key_errors(T):
    # TestMultiheadAttentionNN.test_multihead_attention: all_arguments2 (bias_kv with static k)
    mha = T.nn.MultiheadAttention(4, 2, add_bias_kv=True, kdim=3, vdim=3)
    q, k = T.randn(1, 2, 4), T.randn(3, 2, 3)
    with pytest.raises(AssertionError, match="bias cannot be added to static key."):
        T.nn.functional.multi_head_attention_forward(
            q, k, k, 4, 2, None, mha.in_proj_bias, mha.bias_k, mha.bias_v, False, 0.0, mha.out_proj.weight,
            mha.out_proj.bias, True, None, True, None, True, mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight,
            static_k=T.randn(4, 3, 2), static_v=T.randn(4, 3, 2))


def test_multihead_attn_3d_attn_mask():
    # TestMultiheadAttentionNN.test_multihead_attn_3d_attn_mask: a per-batch (N*H, T, S) mask
    # equals running each batch entry with its own 2-D mask
    def program(T, log):
        mha = init_params(T, T.nn.MultiheadAttention(4, 2), 0)
        q, k = randn(T, (3, 2, 4), 1), randn(T, (3, 3, 4), 2)
        mask = T.tensor(np.random.RandomState(0).randint(0, 2, (3, 2, 3)), dtype=T.float32)
        mask = mask.masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
        mask[:, :, 0] = 0.0
        out3 = mha(q.transpose(0, 1), k.transpose(0, 1), k.transpose(0, 1),
                   attn_mask=T.repeat_interleave(mask, 2, dim=0))[0].transpose(0, 1)
        outs = [mha(q[i].unsqueeze(0).transpose(0, 1), k[i].unsqueeze(0).transpose(0, 1),
                    k[i].unsqueeze(0).transpose(0, 1), attn_mask=mask[i])[0] for i in range(3)]
        log("3d", out3)
        log("per batch equal", [T.allclose(out3[i].unsqueeze(0).transpose(0, 1), o, atol=1e-6) for i, o in enumerate(outs)])
    run_both(program)


def test_multihead_attn_no_bias_and_none_projections(T):
    # TestMultiheadAttentionNN.test_multihead_attn_no_bias / TestMultiheadAttentionNNDeviceType.
    # test_multihead_attn_in_proj_bias_none / test_multihead_attn_in_proj_weight_none (float64)
    mha = T.nn.MultiheadAttention(4, 2, bias=False)
    assert mha.in_proj_bias is None and mha.out_proj.bias is None
    with T.no_grad():
        q = T.rand(2, 2, 2, dtype=T.float64)
        T.nn.MultiheadAttention(2, 2, bias=False, dtype=T.float64)(q, q, q)
        mha = T.nn.MultiheadAttention(4, 4, vdim=2, kdim=2, dtype=T.float64)
        assert mha.in_proj_weight is None
        out = mha(T.rand(4, 4, 4, dtype=T.float64), T.rand(4, 4, 2, dtype=T.float64), T.rand(4, 4, 2, dtype=T.float64))
        assert out[0].shape == (4, 4, 4) and out[0].dtype == T.float64


@pytest.mark.parametrize("path", ["train", "eval no_grad"])
def test_multihead_attn_invalid_shape(T, path):
    # TestMultiheadAttentionNN.test_multihead_attn_invalid_shape (test_multihead_attn_fast_path_invalid_shape
    # is left out: torch 2.13's fused batch_first path raises RuntimeError for some of its cases)
    import contextlib
    mha = T.nn.MultiheadAttention(4, 4)
    if path != "train":
        mha.eval()
    ctx = T.no_grad() if path != "train" else contextlib.nullcontext()
    b = T.tensor([False, False, True, True])
    q3, q2 = T.randn(4, 4, 4), T.randn(4, 4)
    cases = [((q3, T.randn(4, 4), q3), {}, "expected `key` and `value` to be 3-D but found 2-D and 3-D tensors"),
             ((q3, q3, T.randn(4, 4)), {}, "expected `key` and `value` to be 3-D but found 3-D and 2-D tensors"),
             ((q3, q3, q3), {"key_padding_mask": b[1:]}, "expected `key_padding_mask` to be `None` or 2-D but found 1-D"),
             ((q3, q3, q3), {"attn_mask": b[1:]}, "expected `attn_mask` to be `None`, 2-D or 3-D but found 1-D"),
             ((q2, q3, q2), {}, "expected `key` and `value` to be 2-D but found 3-D and 2-D tensors"),
             ((q2, q2, q3), {}, "expected `key` and `value` to be 2-D but found 2-D and 3-D tensors"),
             ((q2, q2, q2), {"key_padding_mask": T.tensor([[False, True] * 4])},
              "expected `key_padding_mask` to be `None` or 1-D but found 2-D"),
             ((q2, q2, q2), {"attn_mask": b}, "expected `attn_mask` to be `None`, 2-D or 3-D but found 1-D"),
             ((q2, q2, q2), {"attn_mask": T.ones(5, 4, 4, dtype=T.bool)}, r"Expected `attn_mask` shape to be \(4, 4, 4\)")]
    with ctx:
        for args, kw, msg in cases:
            with pytest.raises(AssertionError, match=msg):
                mha(*args, **kw)


def test_multihead_self_attn_two_masks():
    # TestMultiheadAttentionNNDeviceType.test_multihead_self_attn_two_masks_fast_path: a bool
    # attn_mask with a key padding mask, through the module (eval, batch_first) and the
    # functional slow path, agree on the rows that are not fully masked
    def program(T, log):
        with T.no_grad():
            mha = init_params(T, T.nn.MultiheadAttention(6, 3, batch_first=True), 0).eval()
            x = randn(T, (2, 4, 6), 1)
            rs = np.random.RandomState(2)
            attn_mask = T.tensor(rs.randint(0, 2, (4, 4)).astype(bool))
            kpm = T.tensor(rs.randint(0, 2, (2, 4)).astype(bool))
            out, _ = mha(x, x, x, attn_mask=attn_mask, key_padding_mask=kpm)
            ref, _ = T.nn.functional.multi_head_attention_forward(
                x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), 6, 3, mha.in_proj_weight, mha.in_proj_bias,
                None, None, False, 0.0, mha.out_proj.weight, mha.out_proj.bias, training=False, key_padding_mask=kpm,
                need_weights=False, attn_mask=attn_mask)
            merged = attn_mask.reshape(1, 4, 4) | kpm.reshape(2, 1, 4)
            dead = merged.all(-1, keepdim=True).expand(2, 4, 6)
            log("module", out.masked_fill(dead, 0))
            log("functional", ref.transpose(0, 1).masked_fill(dead, 0))
    run_both(program)


# ==== test/nn/test_pooling.py ===================================================================
def _sum_pool2d(T, x, k):
    return T.nn.functional.unfold(x, kernel_size=k, stride=k).sum(dim=1)


def test_doubletensor_avg_pool2d(T):
    # TestAvgPool.test_doubletensor_avg_pool2d / test_doubletensor_avg_pool2d_with_divisor:
    # against window sums from unfold (float64, unbatched input)
    x = T.rand(1, 1, 3, 4, dtype=T.float64)
    for i in range(1, 4):
        for j in range(1, 5):
            got = T.nn.functional.avg_pool2d(x[0], (i, j)).reshape(1, -1)
            assert T.allclose(got, _sum_pool2d(T, x, (i, j)) / (i * j), rtol=0, atol=1e-5)
            for d in (1, 7):
                got = T.nn.functional.avg_pool2d(x[0], (i, j), divisor_override=d).reshape(1, -1)
                assert T.allclose(got, _sum_pool2d(T, x, (i, j)) / d, rtol=0, atol=1e-5)


def test_doubletensor_avg_pool3d(T):
    # TestAvgPool.test_doubletensor_avg_pool3d / ..._with_divisor: against sums of 2-D window sums
    x = T.rand(3, 3, 4, dtype=T.float64)
    for k in ((1, 1, 1), (2, 3, 2), (3, 2, 4)):
        planes = [t.sum(0) for t in x.split(k[0]) if t.size(0) == k[0]]
        sums = T.cat([_sum_pool2d(T, p.unsqueeze(0).unsqueeze(0), k[1:]) for p in planes]).reshape(1, -1)
        for d in (None, 7):
            got = T.nn.functional.avg_pool3d(x.unsqueeze(0), k, divisor_override=d).reshape(1, -1)
            assert T.allclose(got, sums / (d or math.prod(k)), rtol=0, atol=1e-5)


def test_avg_pool_ceil_mode_no_nan(T):
    # TestAvgPool.test_avg_pool1d_ceil_mode / test_avg_pool2d_ceil_mode / test_avg_pool3d_ceil_mode (gh-36977)
    F = T.nn.functional
    assert not T.isnan(F.avg_pool1d(10 * T.randn(1, 4, 4), ceil_mode=True, count_include_pad=True, kernel_size=1,
                                    stride=2)).any()
    assert not T.isnan(F.avg_pool2d(10 * T.randn(1, 4, 4, 4), ceil_mode=True, count_include_pad=True,
                                    kernel_size=(1, 2), padding=(0, 1), stride=2)).any()
    assert not T.isnan(F.avg_pool3d(10 * T.randn(1, 4, 4, 4, 4), ceil_mode=True, count_include_pad=True,
                                    kernel_size=(1, 2, 3), stride=2)).any()


def test_adaptive_pooling_size_none(T):
    # TestPoolingNN.test_adaptive_pooling_size_none
    for numel in (2, 3):
        for kind in ("Max", "Avg"):
            out = getattr(T.nn, f"Adaptive{kind}Pool{numel}d")((2,) * (numel - 1) + (None,))(T.randn((4,) * (numel + 1)))
            assert out.size() == (4,) + (2,) * (numel - 1) + (4,)


def test_adaptive_pooling_size_overflow(T):
    # TestPoolingNN.test_adaptive_pooling_size_overflow: an output size whose element count
    # overflows int64 raises
    with pytest.raises(RuntimeError):
        T.nn.AdaptiveMaxPool1d(0x3FFFFFFFFFFFFFFF)(T.empty([2, 2, 2]))


def test_adaptive_pooling_lower_precision_and_strided(T):
    # TestPoolingNN.test_adaptive_pooling_lower_precision / test_adaptive_pooling_avg_nhwc(_non_contiguous):
    # float16/bfloat16 follow float32 within 0.1, a strided input matches its contiguous copy
    x = T.randint(1, 10, (2, 3, 8, 8), dtype=T.float32)
    for cls in (T.nn.AdaptiveAvgPool2d, T.nn.AdaptiveMaxPool2d):
        pool = cls((7, 7))
        xi = x.clone().requires_grad_()
        out = pool(xi)
        out.sum().backward()
        for dt in (T.float16, T.bfloat16):
            x2 = x.clone().to(dt).requires_grad_()
            out2 = pool(x2)
            out2.sum().backward()
            assert out2.dtype == dt and x2.grad.dtype == dt
            assert T.allclose(out, out2.float(), atol=0.1, rtol=0) and T.allclose(xi.grad, x2.grad.float(), atol=0.1, rtol=0)
    strided = T.randint(1, 10, (2, 6, 8, 8), dtype=T.float32)[:, ::2].requires_grad_()
    ref = strided.detach().clone().contiguous().requires_grad_()
    g = T.randint(1, 10, (2, 3, 7, 7), dtype=T.float32)
    pool = T.nn.AdaptiveAvgPool2d((7, 7))
    out, ref_out = pool(strided), pool(ref)
    out.backward(g)
    ref_out.backward(g)
    assert T.equal(out, ref_out) and T.equal(strided.grad, ref.grad)


def test_MaxUnpool2d_output_size(T):
    # TestPoolingNN.test_MaxUnpool2d_output_size: output_size must fit the pooling's possible sizes
    m, mu = T.nn.MaxPool2d(3, stride=2, return_indices=True), T.nn.MaxUnpool2d(3, stride=2)
    big = T.rand(1, 1, 6, 6)
    big[0][0][4][4] = 100
    with pytest.raises(RuntimeError):
        mu(*m(big))
    small = T.rand(1, 1, 5, 5)
    for i in range(0, 4, 2):
        for j in range(0, 4, 2):
            small[:, :, i, j] = 100
    out, idx = m(small)
    for h in range(3, 8):
        for w in range(3, 8):
            if 4 <= h <= 6 and 4 <= w <= 6:
                mu(out, idx, output_size=(1, 1, h, w) if h == 6 else (h, w))
            else:
                with pytest.raises(ValueError):
                    mu(out, idx, (h, w))


def test_max_unpool(T):
    # TestPoolingNN.test_max_unpool (float64): stride defaults to the kernel, output_size as a
    # Size or a tuple, gradcheck of max_unpool1d/2d
    F = T.nn.functional
    out, idx = F.max_pool1d(randn(T, (1, 1, 4), 0, dtype=T.float64), 2, stride=2, return_indices=True)
    assert T.equal(F.max_unpool1d(out, idx, 2), F.max_unpool1d(out, idx, 2, stride=2))
    x = randn(T, (1, 1, 5), 1, dtype=T.float64, requires_grad=True)
    out, idx = F.max_pool1d(x, 2, stride=2, return_indices=True)
    assert T.equal(F.max_unpool1d(out, idx, 2, stride=2, output_size=x.shape),
                   F.max_unpool1d(out, idx, 2, stride=2, output_size=x.size()))
    assert T.autograd.gradcheck(lambda o: F.max_unpool1d(o, idx, 2), (out,))
    out, idx = F.max_pool2d(randn(T, (1, 1, 4, 4), 2, dtype=T.float64, requires_grad=True), 2, stride=2,
                            return_indices=True)
    assert T.equal(F.max_unpool2d(out, idx, 2), F.max_unpool2d(out, idx, 2, stride=2))
    assert T.autograd.gradcheck(lambda o: F.max_unpool2d(o, idx, 2), (out,))
    out, idx = F.max_pool3d(randn(T, (1, 2, 2, 2, 2), 3, dtype=T.float64), 2, stride=2, return_indices=True)
    assert T.equal(F.max_unpool3d(out, idx, 2), F.max_unpool3d(out, idx, 2, stride=2))
    with pytest.raises(RuntimeError):   # test_max_unpool3d_input_check
        F.max_unpool3d(T.ones(1, 3, 1, 1, 1), T.zeros(1, 3, 1, 1, 1, dtype=T.int64), [1, 1])


def test_pooling_zero_batch(T):
    # TestPoolingNNDeviceType.test_adaptive_pooling_zero_batch / test_MaxPool_zero_batch_dim /
    # test_AdaptiveMaxPool_zero_batch_dim / test_MaxUnpool_zero_batch_dim (_test_module_empty_input:
    # an empty batch gives an empty output and zero gradients; no channels raises)
    for mod, shape in ((T.nn.AdaptiveAvgPool1d(2), (0, 4)), (T.nn.AdaptiveAvgPool2d((2, 2)), (0, 4, 4)),
                       (T.nn.MaxPool1d(3, stride=2), (0, 2, 6)), (T.nn.MaxPool2d(3, stride=2), (0, 2, 6, 5)),
                       (T.nn.AdaptiveMaxPool2d(3), (0, 2, 6, 5))):
        x = T.ones(*shape, requires_grad=True)
        out = mod(x)
        out.sum().backward()
        assert out.numel() == 0 and T.equal(x.grad, T.zeros_like(x))
    for mod, shape in ((T.nn.MaxPool2d(3, stride=2), (1, 0, 6, 5)), (T.nn.AdaptiveMaxPool1d(3), (1, 0, 6))):
        with pytest.raises(RuntimeError, match="Expected"):
            mod(T.randn(*shape))
    x = T.randn(0, 3, 4, 4, requires_grad=True)
    out, idx = T.nn.MaxPool2d(2, stride=2, return_indices=True)(x)
    up = T.nn.MaxUnpool2d(2, stride=2)(out, idx)
    up.sum().backward()
    assert T.equal(x.grad, T.zeros_like(x)) and up.shape == (0, 3, 4, 4)


def test_adaptive_pooling_empty_output_size(T):
    # TestPoolingNNDeviceType.test_adaptive_pooling_empty_output_size: backward through an
    # output_size of 0 raises
    F = T.nn.functional
    for fn, shape in ((F.adaptive_avg_pool2d, (1, 4, 5, 4)), (F.adaptive_max_pool2d, (1, 4, 5, 4)),
                      (F.adaptive_avg_pool1d, (1, 4)), (F.adaptive_max_pool1d, (1, 4))):
        with pytest.raises(RuntimeError, match="Expected grad_output to have non-zero size for non-batch dimensions"):
            fn(T.randn(*shape, requires_grad=True), 0).sum().backward()


@pytest.mark.parametrize("name, kernel, shape, index, bad", [
    ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), -1, True), ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), 80, True),
    ("MaxUnpool2d", (2, 2), (1, 3, 4, 5), 79, False), ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), 480, True),
    ("MaxUnpool3d", (2, 2, 2), (1, 3, 4, 5), 479, False)])
def test_MaxUnpool_index_errors(T, name, kernel, shape, index, bad):
    # TestPoolingNNDeviceType.test_MaxUnpool_index_errors (CPU branch)
    out = T.rand(*shape)
    idx = T.zeros(*shape, dtype=T.int64)
    idx.view(-1)[0] = index
    if bad:
        with pytest.raises(RuntimeError, match="Found an invalid max index:"):
            getattr(T.nn, name)(kernel)(out, idx)
    else:
        getattr(T.nn, name)(kernel)(out, idx)


def test_FractionalMaxPool_zero_sizes(T):
    # TestPoolingNNDeviceType.test_FractionalMaxPool2d_zero_batch / _zero_out_size / _zero_samples (2-D)
    mod = T.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
    x = T.ones(0, 2, 8, 6, requires_grad=True)
    out = mod(x)
    out.sum().backward()
    assert out.shape == (0, 2, 4, 3) and T.equal(x.grad, T.zeros_like(x))
    with pytest.raises(RuntimeError, match="Expected input"):
        mod(T.randn(1, 0, 8, 6))
    assert T.nn.FractionalMaxPool2d([2, 2], output_size=[0, 1])(T.rand(2, 3, 6, 6)).shape == (2, 3, 0, 1)
    mod = T.nn.FractionalMaxPool2d([2, 2], output_size=[1, 1], _random_samples=T.rand(0, 3, 2))
    assert mod(T.randn(0, 3, 6, 6)).shape == (0, 3, 1, 1)
    with pytest.raises(RuntimeError, match="Expect _random_samples"):
        mod(T.randn(1, 3, 6, 6))


# ==== test/nn/test_convolution.py (first part) ==================================================
def test_invalid_conv(T):
    # TestConvolutionNN.test_invalid_conv1d / test_invalid_conv2d / test_invalid_conv3d /
    # test_mismatch_shape_conv2d / test_conv_invalid_groups (float32; the dtype loop adds nothing here)
    nn = T.nn
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(4\). Kernel size: \(10\). "
                                           r"Kernel size can't be greater than actual input size"):
        nn.Conv1d(3, 33, kernel_size=10)(T.randn(1, 3, 4))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(1 x 1\). Kernel size: "
                                           r"\(10 x 10\). Kernel size can't be greater than actual input size"):
        nn.Conv2d(3, 33, kernel_size=10)(T.randn(1, 3, 1, 1))
    for mod, x in ((nn.Conv1d(3, 6, kernel_size=3, stride=-1), T.randn(1, 3, 4)),
                   (nn.Conv2d(3, 6, kernel_size=4, stride=-1), T.randn(1, 3, 4, 4)),
                   (nn.Conv2d(3, 6, kernel_size=4, stride=0), T.randn(1, 3, 4, 4)),
                   (nn.Conv3d(1, 1, kernel_size=3, stride=-2), T.empty(1, 1, 4, 4, 4))):
        with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
            mod(x)
    for mod, x in ((nn.Conv2d(1, 1, kernel_size=3, dilation=2, stride=2), T.empty(1, 1, 4, 4)),
                   (nn.Conv3d(1, 1, kernel_size=3, dilation=2, stride=2), T.empty(1, 1, 4, 4, 4))):
        with pytest.raises(RuntimeError):
            mod(x)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[1, 10, 1, 28, 28\]"):
        T.nn.functional.conv2d(T.randn(1, 10, 1, 28, 28), T.randn(6, 1, 5, 5))
    for cls, groups in ((nn.Conv1d, 0), (nn.Conv2d, -1), (nn.Conv3d, -2)):
        with pytest.raises(ValueError, match="groups must be a positive integer"):
            cls(1, 1, kernel_size=3, dilation=2, stride=2, groups=groups)


def test_conv2d_discontiguous_weight(T):
    # TestConvolutionNN.test_conv2d_discontiguous_weight (pytorch issue 55781), smaller batch
    x = T.ones(4, 16, 16, 16)
    w = T.arange(0, 1.0, 1 / 2.0 ** 10).reshape(32, 16, 1, 2)[:, :, :, ::2]
    assert not w.is_contiguous()
    assert T.nn.functional.conv2d(x, w, None).sum().item() == 4186112.0 / 16


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_module_same_padding(T, nd):
    # TestConvolutionNN.test_Conv1d_module_same_padding / test_Conv2d_... / test_Conv3d_...:
    # the module's 'same' matches the functional one (with dilation too); a non-zero padding_mode
    # pads explicitly (asymmetric: the extra element on the right); bad strings / strides raise
    F, cls = T.nn.functional, getattr(T.nn, f"Conv{nd}d")
    conv = getattr(F, f"conv{nd}d")
    x = T.rand(1, 1, *((9, 20)[:nd] if nd < 3 else (4, 4, 4)))
    kernel = {1: (10,), 2: (5, 10), 3: (2, 3, 4)}[nd]
    dil = {1: (2,), 2: (1, 2), 3: (3, 2, 1)}[nd]
    for kw in ({}, {"dilation": dil}):
        m = cls(1, 1, kernel_size=kernel, padding="same", **kw)
        assert T.allclose(conv(x, m.weight, m.bias, padding="same", **kw), m(x), atol=1e-6)
    mode, small = {1: ("replicate", (10,)), 2: ("reflect", (3, 4)), 3: ("circular", (2, 3, 4))}[nd]
    m = cls(1, 1, kernel_size=small, padding="same", padding_mode=mode)
    pads = []
    for k in reversed(small):
        pads += [(k - 1) // 2, k - 1 - (k - 1) // 2]
    expect = conv(F.pad(x, pads, mode=mode), m.weight, m.bias, padding="valid")
    assert T.allclose(expect, m(x), atol=1e-6) and expect.shape == x.shape
    with pytest.raises(ValueError, match="Invalid padding string"):
        cls(3, 33, kernel_size=10, padding="foo")
    for stride in (2, (1,) * (nd - 1) + (3,)):
        with pytest.raises(ValueError, match="padding='same'"):
            cls(3, 33, kernel_size=10, padding="same", stride=stride)
