"""NOTE: test_transformerencoder, which carried PyTorch's test_transformerencoder input and expected-value
tables as torch wrote them, was removed (a public repository's code stays out of this project's
commits). The text below describes the file as it was.

Conformance tests ported from PyTorch's test/test_transformers.py (TestTransformers, TestSDPA,
TestAttnBias; CPU parts): nn.MultiheadAttention and nn.Transformer* fast path (eval, no grad)
against slow path (training) values, masks (bool/float, attn/key padding, src/tgt/memory),
is_causal, batch_first, the argument errors; F.scaled_dot_product_attention's math backend
(masks, is_causal, scale, GQA, the errors). The CUDA, flash and memory-efficient kernels, nested
tensor internals and TorchScript are not ported. Parameters are set deterministically (the
originals' ``cos(arange)`` fill) so that torch and tracegrad run the same model."""
import contextlib
import math

import numpy as np
import pytest

from parity import run_both, run_cases

pytest.importorskip("torch")


def _cos_fill(T, module):
    # the originals' deterministic weights: each parameter filled with cos(0, 1, 2, ...)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.cos(T.arange(p.numel()).float().view(p.shape)))
    return module


def _arr(T, shape, seed=0, scale=1.0):
    return T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32) * scale)


def _mask(T, shape, seed, dtype):
    m = np.random.RandomState(seed).rand(*shape) > 0.6
    if dtype == "bool":
        return T.tensor(m)
    return T.tensor(np.where(m, -2.5, 0.5).astype(np.float32))


# ---- MultiheadAttention ------------------------------------------------------------------------
@pytest.mark.parametrize("attn_mask_dim", [2, 3, None])
@pytest.mark.parametrize("key_padding_mask_dim", [2, None])
@pytest.mark.parametrize("mask_dtype", ["bool", "float32"])
def test_multiheadattention_fastpath_attn_mask(attn_mask_dim, key_padding_mask_dim, mask_dtype):
    # test_multiheadattention_fastpath_attn_mask: training (slow path) and eval (fast path)
    # outputs agree for every mask form
    def program(T, log):
        B, L, D, H = 2, 4, 8, 4
        attn_mask = {2: lambda: _mask(T, (L, L), 1, mask_dtype), 3: lambda: _mask(T, (B * H, L, L), 2, mask_dtype),
                     None: lambda: None}[attn_mask_dim]()
        kpm = _mask(T, (B, L), 3, mask_dtype) if key_padding_mask_dim else None
        if kpm is not None and mask_dtype == "bool":
            kpm[:, 0] = False   # no row fully masked (its NaNs are not compared by the original)
        if attn_mask is not None and mask_dtype == "bool":
            attn_mask[..., 0] = False
        mha = _cos_fill(T, T.nn.MultiheadAttention(D, H, batch_first=True))
        X = _arr(T, (B, L, D))
        with T.no_grad():
            mha.train()
            out, _ = mha(X, X, X, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=False)
            mha.eval()
            out_fp, _ = mha(X, X, X, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=False)
        log("slow", out)
        log("fast equals slow", T.allclose(out, out_fp, atol=1e-5))
    run_both(program)


def test_mha_need_weights_average_and_bias_kv():
    # test_multihead_attn_* (averaged and per-head weights, add_bias_kv, add_zero_attn, kdim/vdim)
    def program(T, log):
        X = _arr(T, (3, 2, 6))
        m = _cos_fill(T, T.nn.MultiheadAttention(6, 2, add_bias_kv=True, add_zero_attn=True))
        out, w = m(X, X, X)
        log("bias_kv zero_attn", [out, w])
        out, w = m(X, X, X, average_attn_weights=False)
        log("per-head weights", w)
        m = _cos_fill(T, T.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=True))
        K, V = _arr(T, (2, 5, 4), 1), _arr(T, (2, 5, 5), 2)
        out, w = m(X.transpose(0, 1), K, V)
        log("kdim vdim", [out, w])
        log("is_causal without mask", _outcome(lambda: m(X.transpose(0, 1), K, V, is_causal=True)))
    run_both(program)


def test_mha_errors():
    # test_mha_native_args / argument checks of MultiheadAttention.forward
    def mha(T, **kw):
        return _cos_fill(T, T.nn.MultiheadAttention(8, 2, **kw))
    x = lambda T, *s: T.ones(*s)  # noqa: E731
    run_cases({
        "embed_dim not divisible": lambda T: T.nn.MultiheadAttention(7, 2),
        "zero heads": lambda T: T.nn.MultiheadAttention(8, 0),
        "query 1-D": lambda T: mha(T)(x(T, 8), x(T, 8), x(T, 8)),
        "key/value batch mismatch": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 3, 8), x(T, 4, 3, 8)),
        "key/value length mismatch": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 2, 8), x(T, 5, 2, 8)),
        "wrong embed dim": lambda T: mha(T)(x(T, 3, 2, 6), x(T, 3, 2, 6), x(T, 3, 2, 6)),
        "attn_mask bad 2-D shape": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 2, 8), x(T, 4, 2, 8), attn_mask=T.zeros(3, 3)),
        "attn_mask bad 3-D shape": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 2, 8), x(T, 4, 2, 8), attn_mask=T.zeros(2, 3, 4)),
        "attn_mask int": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 2, 8), x(T, 4, 2, 8), attn_mask=T.zeros(3, 4, dtype=T.int64)),
        "key_padding_mask bad shape": lambda T: mha(T)(x(T, 3, 2, 8), x(T, 4, 2, 8), x(T, 4, 2, 8), key_padding_mask=T.zeros(2, 3, dtype=T.bool)),
        "unbatched": lambda T: mha(T)(x(T, 3, 8), x(T, 4, 8), x(T, 4, 8))[0].shape,
        "unbatched weights": lambda T: mha(T)(x(T, 3, 8), x(T, 4, 8), x(T, 4, 8))[1].shape,
    })


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the builtin class is what is compared
        return next(k for k in type(e).__mro__ if k.__module__ == "builtins").__name__


# ---- TransformerEncoder(Layer) -------------------------------------------------------------------
@pytest.mark.parametrize("nhead", [1, 4, 8])
def test_transformerencoderlayer_src_mask(nhead):
    # test_transformerencoderlayer_src_mask: a bool src_mask in training and in eval/no_grad
    def program(T, log):
        model = _cos_fill(T, T.nn.TransformerEncoderLayer(d_model=8, nhead=nhead, dim_feedforward=32,
                                                          batch_first=True, dropout=0.0))
        src = _arr(T, (2, 4, 8))
        src_mask = T.zeros(4, 4).to(T.bool)
        log("train", model(src, src_mask=src_mask))
        model.eval()
        with T.no_grad():
            log("eval", model(src, src_mask=src_mask))
    run_both(program)


def test_transformerencoderlayer_no_fastpath_with_hooks():
    # test_transformerencoderlayer_no_fastpath_with_hooks: the self_attn forward hook runs once
    def program(T, log):
        model = _cos_fill(T, T.nn.TransformerEncoderLayer(d_model=12, nhead=3, dim_feedforward=12,
                                                          batch_first=True)).eval()
        cache = []
        handle = model.self_attn.register_forward_hook(lambda m, i, o: cache.append(o[0].detach()))
        with T.inference_mode():
            out = model(_arr(T, (2, 4, 12)))
        handle.remove()
        log("hook calls", len(cache))
        log("out", out)
        log("attention output", cache[0])
    run_both(program)


def test_transformerencoder_fastpath(enable_nested_tensor=True):
    # test_transformerencoder_fastpath (small shapes): the eval/no_grad output equals the
    # autograd (slow path) output outside the padded positions
    def program(T, log):
        d_model = 12
        model = _cos_fill(T, T.nn.TransformerEncoder(
            T.nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=d_model, batch_first=True),
            num_layers=2, enable_nested_tensor=enable_nested_tensor)).eval()
        pairs = [(_arr(T, (3, 2, d_model), 1), [[0, 1], [0, 1], [1, 1]][:2] + [[0, 0]]),
                 (_arr(T, (2, 10, d_model), 2), [[0] * 8 + [1] * 2, [0] * 6 + [1] * 4])]
        for k, (x, m) in enumerate(pairs):
            mask = T.tensor(m, dtype=T.bool)
            with T.no_grad():
                fast = model(x, src_key_padding_mask=mask)
            slow = model(x, src_key_padding_mask=mask)
            bs, true_len, dim = fast.shape
            expanded = T.zeros(bs, mask.shape[1], dim)
            expanded[:, :true_len, :] = fast
            expanded = expanded.masked_fill(mask.unsqueeze(-1), 0)
            slow = slow.masked_fill(mask.unsqueeze(-1), 0)
            log(f"pair {k} slow", slow.detach())
            log(f"pair {k} fast equals slow", T.allclose(expanded, slow, atol=1e-5))
    run_both(program)


@pytest.mark.parametrize("with_no_grad", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_transformerencoder_square_input(with_no_grad, training):
    # test_transformerencoder_square_input: batch size == sequence length with a src mask
    def program(T, log):
        model = _cos_fill(T, T.nn.TransformerEncoder(
            T.nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True),
            num_layers=2, enable_nested_tensor=False))
        model.train(training)
        x = T.arange(0, 16).reshape(2, 2, 4).to(T.get_default_dtype())
        src_mask = T.tensor([[0, 1], [0, 0]]).to(T.bool)
        with T.no_grad() if with_no_grad else contextlib.nullcontext():
            log("result", model(x, mask=src_mask))
    run_both(program)


def test_encoder_decoder_padding_and_masks_bool():
    # test_encoder_padding_and_src_mask_bool, test_decoder_padding_and_src_mask_bool,
    # test_transformerencoder_is_causal / mask type agreement
    def program(T, log):
        enc = _cos_fill(T, T.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True,
                                                        norm_first=True))
        encoder = T.nn.TransformerEncoder(enc, 1, enable_nested_tensor=False)
        x = _arr(T, (2, 3, 4))
        src_mask = T.tensor([[False, True, True], [False, False, True], [False, False, False]])
        kpm = T.tensor([[False, False, True], [False, False, False]])
        with T.no_grad():
            log("encoder bool masks", encoder(x, mask=src_mask, src_key_padding_mask=kpm))
            log("encoder is_causal", encoder(x, mask=T.nn.Transformer.generate_square_subsequent_mask(3), is_causal=True))
        dec = _cos_fill(T, T.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True))
        decoder = T.nn.TransformerDecoder(dec, 1)
        mem = _arr(T, (2, 5, 4), 1)
        mkpm = T.tensor([[False] * 4 + [True], [False] * 5])
        with T.no_grad():
            log("decoder bool masks", decoder(x, mem, tgt_mask=src_mask, tgt_key_padding_mask=kpm,
                                              memory_key_padding_mask=mkpm))
            log("decoder tgt_is_causal", decoder(x, mem, tgt_mask=T.nn.Transformer.generate_square_subsequent_mask(3),
                                                 tgt_is_causal=True))
        log("mixed mask types", _outcome(lambda: encoder(x, mask=src_mask.float(), src_key_padding_mask=kpm)))
    run_both(program)


def test_transformer_full_model_and_args_check():
    # test_transformer_args_check, test_transformer (nn.Transformer end to end), custom
    # encoder/decoder
    def program(T, log):
        model = _cos_fill(T, T.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                              dim_feedforward=8, dropout=0.0))
        src, tgt = _arr(T, (5, 2, 4)), _arr(T, (3, 2, 4), 1)
        out = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(3))
        log("out", out.detach())
        out.sum().backward()
        log("grad of a weight", model.encoder.layers[0].linear1.weight.grad)
        bad = {
            "batch mismatch": lambda: model(src, _arr(T, (3, 3, 4))),
            "feature mismatch": lambda: model(_arr(T, (5, 2, 3)), _arr(T, (3, 2, 3))),
            "bad tgt_mask": lambda: model(src, tgt, tgt_mask=T.zeros(4, 4)),
            "bad src_mask": lambda: model(src, tgt, src_mask=T.zeros(3, 3)),
            "bad memory_key_padding_mask": lambda: model(src, tgt, memory_key_padding_mask=T.zeros(2, 4, dtype=T.bool)),
            "unbatched": lambda: model(src[:, 0], tgt[:, 0]).shape,
            "src 1-D": lambda: model(src[0, 0], tgt[:, 0]),
            "d_model not divisible": lambda: T.nn.Transformer(d_model=5, nhead=2),
            "bad activation": lambda: T.nn.TransformerEncoderLayer(4, 2, activation="nope"),
        }
        for name, fn in bad.items():
            log(name, _outcome(fn))
        log("square mask", T.nn.Transformer.generate_square_subsequent_mask(3))
        log("square mask dtype", T.nn.Transformer.generate_square_subsequent_mask(2, dtype=T.float64))
    run_both(program)


# ---- scaled_dot_product_attention: the math backend ----------------------------------------------
def _sdpa_ref(T, q, k, v, mask=None, is_causal=False, scale=None):
    # the original's reference: softmax(q k^T * scale + bias) v, computed in float64
    q, k, v = q.double(), k.double(), v.double()
    s = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    attn = q @ k.transpose(-2, -1) * s
    if is_causal:
        L, S = q.size(-2), k.size(-2)
        attn = attn.masked_fill(T.ones(L, S, dtype=T.bool).tril().logical_not(), float("-inf"))
    if mask is not None:
        attn = attn.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype == T.bool else attn + mask.double()
    return (attn.softmax(-1) @ v).float()


@pytest.mark.parametrize("case", ["plain", "bool mask", "float mask", "causal square", "causal rect",
                                  "scale", "negative scale", "3-d", "gqa", "broadcast mask", "L=1"])
def test_scaled_dot_product_attention_math(case):
    # test_scaled_dot_product_attention (math reference), test_is_causal_equals_upper_left,
    # test_scaled_dot_product_attention_math_with_negative_scale, test_sdpa_with_gqa, broadcasting
    def program(T, log):
        F = T.nn.functional
        q, k, v = _arr(T, (2, 4, 3, 8), 1), _arr(T, (2, 4, 5, 8), 2), _arr(T, (2, 4, 5, 6), 3)
        kw, ref_kw = {}, {}
        if case == "bool mask":
            m = _mask(T, (3, 5), 4, "bool")
            m[:, 0] = True
            kw["attn_mask"] = ref_kw["mask"] = m
        elif case == "float mask":
            kw["attn_mask"] = ref_kw["mask"] = _mask(T, (2, 4, 3, 5), 5, "float")
        elif case == "broadcast mask":
            kw["attn_mask"] = ref_kw["mask"] = _mask(T, (1, 4, 1, 5), 6, "float")
        elif case == "causal square":
            k, v = k[:, :, :3], v[:, :, :3]
            kw["is_causal"] = ref_kw["is_causal"] = True
        elif case == "causal rect":
            kw["is_causal"] = ref_kw["is_causal"] = True
        elif case == "scale":
            kw["scale"] = ref_kw["scale"] = 0.25
        elif case == "negative scale":
            kw["scale"] = ref_kw["scale"] = -0.5
        elif case == "3-d":
            q, k, v = q[0], k[0], v[0]
        elif case == "gqa":
            k, v = k[:, :2], v[:, :2]
            kw["enable_gqa"] = True
        elif case == "L=1":
            q = q[:, :, :1]
        qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
        out = F.scaled_dot_product_attention(qr, kr, vr, **kw)
        if case == "gqa":
            ref = _sdpa_ref(T, q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1))
        else:
            ref = _sdpa_ref(T, q, k, v, **ref_kw)
        log("out", out.detach())
        log("matches the float64 reference", T.allclose(out, ref, atol=1e-5, rtol=1e-4))
        (out * T.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
        log("grads", [qr.grad, kr.grad, vr.grad])
    run_both(program)


def test_scaled_dot_product_attention_invalid_inputs():
    # test_invalid_inputs_different_datatypes, test_invalid_inputs_different_devices (CPU part),
    # test_invalid_inputs_1_dimensional_inputs, test_invalid_inputs_broadcast,
    # test_invalid_sequence_lengths / head dims, dropout/is_causal argument checks
    F = lambda T: T.nn.functional  # noqa: E731
    q = lambda T, *s: T.ones(*s)  # noqa: E731
    run_cases({
        "different dtypes": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 2, 3, 4).double(), q(T, 2, 3, 4)),
        "1-d inputs": lambda T: F(T).scaled_dot_product_attention(q(T, 4), q(T, 4), q(T, 4)),
        "batch not broadcastable": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 3, 3, 4), q(T, 3, 3, 4)),
        "key/value lengths differ": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 2, 5, 4), q(T, 2, 6, 4)),
        "q/k head dims differ": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 2, 5, 3), q(T, 2, 5, 4)),
        "mask not broadcastable": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 2, 5, 4), q(T, 2, 5, 4), attn_mask=T.zeros(4, 5)),
        "int mask": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 3, 4), q(T, 2, 5, 4), q(T, 2, 5, 4), attn_mask=T.zeros(3, 5, dtype=T.int64)),
        "integer inputs": lambda T: F(T).scaled_dot_product_attention(*(T.ones(2, 3, 4, dtype=T.int64),) * 3),
        "gqa heads not divisible": lambda T: F(T).scaled_dot_product_attention(q(T, 1, 3, 2, 4), q(T, 1, 2, 2, 4), q(T, 1, 2, 2, 4), enable_gqa=True),
        "heads differ without gqa": lambda T: F(T).scaled_dot_product_attention(q(T, 1, 4, 2, 4), q(T, 1, 2, 2, 4), q(T, 1, 2, 2, 4)),
        "empty sequence": lambda T: F(T).scaled_dot_product_attention(q(T, 2, 0, 4), q(T, 2, 5, 4), q(T, 2, 5, 4)),
        "float16": lambda T: F(T).scaled_dot_product_attention(*(T.full((1, 2, 4), 0.5, dtype=T.float16),) * 3),
        "float64": lambda T: F(T).scaled_dot_product_attention(*(T.full((1, 2, 4), 0.5, dtype=T.float64),) * 3),
    })


# ---- nn.attention.bias (TestAttnBias) ------------------------------------------------------------
@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
def test_causal_variants(variant, shape):
    # TestAttnBias.test_causal_variants: sdpa with a CausalBias equals sdpa with its materialized
    # mask (values and gradients); the mask itself
    def program(T, log):
        from importlib import import_module
        bias_mod = import_module(f"{T.__name__}.nn.attention.bias")
        L, S = shape
        bias = getattr(bias_mod, f"causal_{variant}")(L, S)
        mask = bias._materialize()
        log("mask", mask)
        q, k, v = (_arr(T, (2, 2, n, 4), seed).requires_grad_() for seed, n in ((1, L), (2, S), (3, S)))
        out = T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        ref = T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        finite = ~ref.isnan()
        log("out", out.detach().nan_to_num(0.0))
        log("equals the materialized mask's", T.equal(out.isnan(), ref.isnan()) and T.allclose(out[finite], ref[finite], atol=1e-6))
        if not ref.isnan().any():
            g = T.autograd.grad(out.sum(), (q, k, v))
            r = T.autograd.grad(ref.sum(), (q, k, v))
            log("grads agree", all(T.allclose(a, b, atol=1e-6) for a, b in zip(g, r)))
    run_both(program)


def test_attn_bias_errors():
    # TestAttnBias.test_is_causal_and_mask_fails, test_causal_variants_errors (sizes)
    def bias(T):
        from importlib import import_module
        return import_module(f"{T.__name__}.nn.attention.bias")
    q = lambda T: T.ones(1, 2, 3, 4)  # noqa: E731
    run_cases({
        "is_causal with a CausalBias": lambda T: T.nn.functional.scaled_dot_product_attention(
            q(T), q(T), q(T), attn_mask=bias(T).causal_upper_left(3, 3), is_causal=True),
        "one size": lambda T: bias(T).causal_upper_left(3),
        "three sizes": lambda T: bias(T).causal_lower_right(3, 3, 3),
        "variants": lambda T: [int(bias(T).CausalVariant.UPPER_LEFT), int(bias(T).CausalVariant.LOWER_RIGHT)],
        "lower right materialized": lambda T: bias(T).causal_lower_right(2, 4)._materialize(),
        "upper left materialized": lambda T: bias(T).causal_upper_left(2, 4)._materialize(),
    })
