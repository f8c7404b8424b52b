"""MultiheadAttention / TransformerEncoderLayer parity with torch (outputs, weights, grads, repr)."""
import warnings

import numpy as np
import pytest

import tracegrad
from parity import close, copy_state, get_torch

R = np.random.RandomState(0)


def x(*shape):
    return R.randn(*shape).astype(np.float32)


def run(build, call, arrays, rtol=1e-4, atol=1e-5):
    torch = get_torch()
    tm, gm = build(torch.nn), build(tracegrad.nn)
    copy_state(tm, gm)
    res = []
    for mod, m in ((torch, tm), (tracegrad, gm)):
        ts = [mod.tensor(a, requires_grad=a.dtype == np.float32) if isinstance(a, np.ndarray) else a for a in arrays]
        out = call(mod, m, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        outs[0].sum().backward()
        res.append((outs, [p.grad for p in m.parameters()], [t.grad for t in ts if hasattr(t, "grad") and t.requires_grad]))
    (to, tp, ti), (go, gp, gi) = res
    for a, b in zip(go, to):
        if b is None:
            assert a is None
        else:
            close(a, b, rtol, atol)
    assert len(gp + gi) == len(tp + ti)
    for a, b in zip(gp + gi, tp + ti):
        if b is None:
            assert a is None
        else:
            close(a, b, rtol, atol)
    return tm, gm


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention(batch_first, need_weights):
    q = x(2, 3, 8) if batch_first else x(3, 2, 8)
    run(lambda nn: nn.MultiheadAttention(8, 2, batch_first=batch_first),
        lambda mod, m, q: m(q, q, q, need_weights=need_weights), [q])


@pytest.mark.parametrize("kind", ["bool_attn", "float_attn", "kpm", "both", "unaveraged", "kv", "bias_kv", "kdim",
                                  "unbatched", "causal"])
def test_mha_variants(kind):
    E, L, S, N = 8, 3, 4, 2
    q, k, v = x(L, N, E), x(S, N, E), x(S, N, E)
    am_bool = R.rand(L, S) > 0.7
    am_bool[:, 0] = False
    kpm = np.zeros((N, S), dtype=bool)
    kpm[0, -1] = True

    def T(mod, a):
        return mod.tensor(a)
    kw = {}
    build = lambda nn: nn.MultiheadAttention(E, 2)  # noqa: E731
    args = [q, k, v]
    if kind == "bool_attn":
        call = lambda mod, m, q, k, v: m(q, k, v, attn_mask=T(mod, am_bool))  # noqa: E731
    elif kind == "float_attn":
        fm = x(L, S)
        call = lambda mod, m, q, k, v: m(q, k, v, attn_mask=T(mod, fm), need_weights=False)  # noqa: E731
    elif kind == "kpm":
        call = lambda mod, m, q, k, v: m(q, k, v, key_padding_mask=T(mod, kpm))  # noqa: E731
    elif kind == "both":
        call = lambda mod, m, q, k, v: m(q, k, v, key_padding_mask=T(mod, kpm), attn_mask=T(mod, am_bool),  # noqa: E731
                                         need_weights=False)
    elif kind == "unaveraged":
        call = lambda mod, m, q, k, v: m(q, k, v, average_attn_weights=False)  # noqa: E731
    elif kind == "kv":
        call = lambda mod, m, q, k, v: m(q, k, k)  # noqa: E731
    elif kind == "bias_kv":
        build = lambda nn: nn.MultiheadAttention(E, 2, add_bias_kv=True, add_zero_attn=True)  # noqa: E731
        call = lambda mod, m, q, k, v: m(q, k, v, key_padding_mask=T(mod, kpm))  # noqa: E731
    elif kind == "kdim":
        build = lambda nn: nn.MultiheadAttention(E, 4, kdim=5, vdim=6, bias=False)  # noqa: E731
        args = [q, x(S, N, 5), x(S, N, 6)]
        call = lambda mod, m, q, k, v: m(q, k, v)  # noqa: E731
    elif kind == "unbatched":
        args = [x(L, E), x(S, E), x(S, E)]
        call = lambda mod, m, q, k, v: m(q, k, v)  # noqa: E731
    else:
        cm = np.triu(np.ones((L, L), dtype=bool), 1)
        args = [q, q.copy(), q.copy()]
        call = lambda mod, m, q, k, v: m(q, k, v, attn_mask=T(mod, cm), is_causal=True, need_weights=False)  # noqa: E731
    run(build, call, args)


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True), dict(activation="gelu", batch_first=True),
                                dict(bias=False)])
def test_transformer_encoder_layer(kw):
    src = x(2, 3, 8) if kw.get("batch_first") else x(3, 2, 8)
    kpm = np.zeros((2, 3), dtype=bool)
    kpm[1, 0] = True

    def build(nn):
        m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
        return m
    run(build, lambda mod, m, s: m(s, src_key_padding_mask=mod.tensor(kpm)), [src])
    run(build, lambda mod, m, s: m(s), [src])


def test_transformer_encoder_and_repr():
    torch = get_torch()

    def build(nn):
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8))
    tm, gm = run(build, lambda mod, m, s: m(s), [x(3, 2, 8)])
    assert repr(gm) == repr(tm)
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    a = repr(tracegrad.nn.MultiheadAttention(8, 2, add_bias_kv=True))
    b = repr(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True))
    assert a == b
    assert ([n for n, _ in tracegrad.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=3).named_parameters()] ==
            [n for n, _ in torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=3).named_parameters()])


# ---- decoder, full Transformer, masks ----------------------------------------------------------
def _causal(mod, n):
    return mod.nn.Transformer.generate_square_subsequent_mask(n)


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True), dict(batch_first=True, activation="gelu"),
                                dict(bias=False)])
def test_transformer_decoder_layer(kw):
    tgt = x(2, 4, 8) if kw.get("batch_first") else x(4, 2, 8)
    mem = x(2, 3, 8) if kw.get("batch_first") else x(3, 2, 8)
    kpm = np.zeros((2, 3), dtype=bool)
    kpm[0, 2] = True
    run(lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw),
        lambda mod, m, t, s: m(t, s, tgt_mask=_causal(mod, 4), memory_key_padding_mask=mod.tensor(kpm)), [tgt, mem])


@pytest.mark.parametrize("kind", ["plain", "causal_detected", "causal_hint", "bool_masks", "padding", "batch_first",
                                  "norm_first", "unbatched"])
def test_transformer_parity(kind):
    S, T, N, E = 3, 4, 2, 8
    kw = dict(d_model=E, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0)
    src, tgt = x(S, N, E), x(T, N, E)
    call = lambda mod, m, s, t: m(s, t)  # noqa: E731
    if kind == "causal_detected":
        call = lambda mod, m, s, t: m(s, t, tgt_mask=_causal(mod, T), src_mask=_causal(mod, S))  # noqa: E731
    elif kind == "causal_hint":
        call = lambda mod, m, s, t: m(s, t, tgt_mask=_causal(mod, T), tgt_is_causal=True)  # noqa: E731
    elif kind == "bool_masks":
        sm = np.zeros((S, S), dtype=bool)
        sm[0, 2] = True
        mm = np.zeros((T, S), dtype=bool)
        mm[1, 0] = True
        call = lambda mod, m, s, t: m(s, t, src_mask=mod.tensor(sm), memory_mask=mod.tensor(mm))  # noqa: E731
    elif kind == "padding":
        sk = np.zeros((N, S), dtype=bool)
        sk[1, 2] = True
        tk = np.zeros((N, T), dtype=bool)
        tk[0, 3] = True
        def call(mod, m, s, t):
            return m(s, t, src_key_padding_mask=mod.tensor(sk), tgt_key_padding_mask=mod.tensor(tk),
                     memory_key_padding_mask=mod.tensor(sk), tgt_mask=_causal(mod, T))
    elif kind == "batch_first":
        kw["batch_first"] = True
        src, tgt = src.transpose(1, 0, 2).copy(), tgt.transpose(1, 0, 2).copy()
    elif kind == "norm_first":
        kw["norm_first"] = True
    elif kind == "unbatched":
        src, tgt = src[:, 0], tgt[:, 0]
    tm, gm = run(lambda nn: nn.Transformer(**kw), call, [src, tgt], rtol=2e-4, atol=2e-5)
    if kind == "plain":
        assert repr(gm) == repr(tm)
        assert list(gm.state_dict()) == list(tm.state_dict())
        assert type(gm.encoder.layers[0].self_attn.out_proj).__name__ == "NonDynamicallyQuantizableLinear"


def test_transformer_encoder_is_causal_and_nested_flag():
    def build(nn):
        with pytest.warns(UserWarning, match="batch_first was not True"):
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
            return nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)
    run(build, lambda mod, m, s: m(s, mask=_causal(mod, 3), is_causal=True), [x(3, 2, 8)])
    run(build, lambda mod, m, s: m(s, mask=mod.tensor(np.triu(np.ones((3, 3), dtype=bool), 1))), [x(3, 2, 8)])
    _same_error(lambda mod: build(mod.nn)(mod.zeros(3, 2, 8), is_causal=True))


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(batch_first=True, norm_first=True),
                                dict(batch_first=True, nhead=1), dict(batch_first=True, activation="gelu"),
                                dict(batch_first=True, bias=False), dict(enable_nested_tensor=False)])
def test_transformer_encoder_nested_tensor_warning(kw):
    # torch's TransformerEncoder warns at construction when enable_nested_tensor is asked for but
    # the layer rules its fast path out, and keeps use_nested_tensor False (a program recording
    # warnings, e.g. a sequence-first classifier, sees it)
    kw = dict(kw)
    enable = kw.pop("enable_nested_tensor", True)
    nhead = kw.pop("nhead", 2)
    got = []
    for nn in (get_torch().nn, tracegrad.nn):
        layer = nn.TransformerEncoderLayer(8, nhead, 16, dropout=0.0, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=enable)
        got.append(([(w.category.__name__, str(w.message)) for w in caught], enc.use_nested_tensor,
                    enc.enable_nested_tensor))
    assert got[1] == got[0]


def _same_error(fn):
    torch = get_torch()
    errs = []
    for mod in (torch, tracegrad):
        with pytest.raises(Exception) as ei:
            fn(mod)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0])
    return errs


@pytest.mark.parametrize("bad", ["batch", "d_model"])
def test_transformer_errors(bad):
    def f(mod):
        m = mod.nn.Transformer(8, 2, 1, 1, 16, 0.0)
        if bad == "batch":
            return m(mod.zeros(3, 2, 8), mod.zeros(4, 3, 8))
        return m(mod.zeros(3, 2, 6), mod.zeros(4, 2, 6))
    torch_err, ours = _same_error(f)
    assert str(ours) == str(torch_err)


def test_generate_square_subsequent_mask_and_import_paths():
    torch = get_torch()
    for dt in (None, "float64"):
        a = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(torch, dt) if dt else None)
        b = tracegrad.nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(tracegrad, dt) if dt else None)
        close(b, a)
        assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
    from tracegrad.nn.modules.activation import MultiheadAttention
    assert MultiheadAttention is tracegrad.nn.MultiheadAttention


# ---- scaled_dot_product_attention ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["plain", "bool_mask", "float_mask_bcast", "causal_rect", "causal_and_mask", "scale",
                                  "gqa", "all_masked_row", "3d"])
def test_sdpa_parity(kind):
    torch = get_torch()
    q, k, v = x(2, 4, 3, 8), x(2, 4, 5, 8), x(2, 4, 5, 6)
    kw = {}
    bm = R.rand(3, 5) > 0.5
    bm[:, 0] = True
    if kind == "bool_mask":
        kw["attn_mask"] = bm
    elif kind == "float_mask_bcast":
        kw["attn_mask"] = x(1, 4, 3, 5)
    elif kind == "causal_rect":
        kw["is_causal"] = True
    elif kind == "causal_and_mask":
        kw["is_causal"], kw["attn_mask"] = True, x(3, 5)
        v = x(2, 4, 5, 8)     # torch's math path (other head sizes) refuses the pair
    elif kind == "scale":
        kw["scale"] = 0.3
    elif kind == "gqa":
        k, v = k[:, :2].copy(), v[:, :2].copy()
        kw["enable_gqa"] = True
    elif kind == "all_masked_row":
        bm[1] = False
        kw["attn_mask"] = bm
    elif kind == "3d":
        q, k, v = q[0], k[0], v[0]
    # torch's fused CPU kernel combines is_causal with attn_mask (as we do); its math path, taken
    # when inputs require grad or head sizes differ, refuses the pair: compare without autograd
    grad = kind != "causal_and_mask"
    res = []
    for mod in (torch, tracegrad):
        ts = [mod.tensor(a, requires_grad=grad) for a in (q, k, v)]
        args = {n: (mod.tensor(a) if isinstance(a, np.ndarray) else a) for n, a in kw.items()}
        out = mod.nn.functional.scaled_dot_product_attention(*ts, **args)
        if grad:
            (out * mod.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape).astype(np.float32))).sum().backward()
        res.append([out] + ([t.grad for t in ts] if grad else []))
    for a, b in zip(res[1], res[0]):
        assert np.isfinite(a.detach().numpy()).all()
        close(a, b, 1e-4, 1e-5)


def test_sdpa_dropout_and_errors():
    q = tracegrad.tensor(x(2, 3, 4))
    a = tracegrad.nn.functional.scaled_dot_product_attention(q, q, q)
    b = tracegrad.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert a.shape == b.shape and not np.allclose(a.numpy(), b.numpy())
    _same_error(lambda mod: mod.nn.functional.scaled_dot_product_attention(
        mod.zeros(1, 3, 2, 4), mod.zeros(1, 2, 2, 4), mod.zeros(1, 2, 2, 4), enable_gqa=True))
    _same_error(lambda mod: mod.nn.functional.scaled_dot_product_attention(
        mod.zeros(1, 4, 2, 4), mod.zeros(1, 2, 2, 4), mod.zeros(1, 2, 2, 4)))


@pytest.mark.parametrize("kind", ["heads_from_transpose", "heads_first", "grad", "gqa", "value_head_size", "dropout", "3d"])
def test_sdpa_result_layout_follows_query(kind):
    """torch's CPU kernel lays its result out in memory as the query is: heads made by
    ``view(B, T, H, D).transpose(1, 2)`` give a (B, T, H, D) result, so the tutorials'
    ``y.transpose(1, 2).view(B, T, H * D)`` works; its math path (dropout, value head size not
    the query's, 3-D inputs) gives a contiguous one."""
    torch = get_torch()
    shape = {"heads_first": (2, 2, 3, 4)}.get(kind, (1, 3, 2, 4))
    perm = (1, 0, 2, 3) if kind == "heads_first" else (0, 2, 1, 3)
    strides = []
    for mod in (torch, tracegrad):
        q = mod.tensor(x(*shape), requires_grad=kind == "grad").permute(*perm)
        k = v = q
        kw = {"dropout_p": 0.5} if kind == "dropout" else {}
        if kind == "gqa":
            k = v = mod.tensor(x(1, 1, 5, 4))
            kw["enable_gqa"] = True
        elif kind == "value_head_size":
            k, v = mod.tensor(x(1, 2, 5, 4)), mod.tensor(x(1, 2, 5, 6))
        elif kind == "3d":
            q = k = v = q[0]
        out = mod.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        strides.append(out.stride())
        if kind == "heads_from_transpose":
            assert tuple(out.transpose(1, 2).view(1, 3, 8).shape) == (1, 3, 8)
    assert strides[1] == strides[0]


_LEFT = [[False, False, True, True], [False, False, False, False]]


@pytest.mark.parametrize("case", ["eval_no_grad", "norm", "frozen_grad_on", "training", "grad_on", "not_left_aligned",
                                  "no_mask_check", "all_padded_row", "float_mask", "with_src_mask", "seq_first",
                                  "fastpath_off"])
def test_transformer_encoder_nested_inference_zeroes_padding(case):
    # torch's TransformerEncoder runs batch-first inference with a padding mask on a nested tensor
    # of the kept tokens and pads back with zeros: padded positions are 0 (a fully padded row too,
    # where the math path gives NaN); training, recorded gradients, a non-left-aligned mask (with
    # mask_check), an attention mask or a sequence-first layer keep the math path's values
    torch = get_torch()
    X = x(2, 4, 8)
    mask = [[False, True, False, True], [False, False, False, False]] if case == "not_left_aligned" else \
        [[True] * 4, [False, False, True, True]] if case == "all_padded_row" else _LEFT
    outs, tm = [], None
    for mod in (torch, tracegrad):
        nn = mod.nn
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=case != "seq_first")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # seq_first's nested-tensor advice
            enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8) if case == "norm" else None,
                                        mask_check=case != "no_mask_check")
        if tm is None:
            tm = enc
        else:
            copy_state(tm, enc)
        enc.train(case == "training")
        if case == "frozen_grad_on":
            enc.requires_grad_(False)
        pad = mod.tensor(mask)
        if case == "float_mask":
            pad = mod.zeros(2, 4).masked_fill(pad, -1e9)
        src_mask = mod.zeros(4, 4) if case == "with_src_mask" else None
        src = mod.tensor(X.transpose(1, 0, 2).copy() if case == "seq_first" else X)
        if case in ("grad_on", "frozen_grad_on", "training"):
            out = enc(src, mask=src_mask, src_key_padding_mask=pad).detach()
        else:
            # backends.mha.set_fastpath_enabled(False): the math path, padded positions kept
            mod.backends.mha.set_fastpath_enabled(case != "fastpath_off")
            try:
                assert mod.backends.mha.get_fastpath_enabled() is (case != "fastpath_off")
                with mod.no_grad():
                    out = enc(src, mask=src_mask, src_key_padding_mask=pad)
            finally:
                mod.backends.mha.set_fastpath_enabled(True)
        outs.append(out.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("mask", [_LEFT, [[False, True, False, True], [False, False, False, False]]],
                         ids=["left_aligned", "not_left_aligned"])
def test_transformer_encoder_nested_inference_compiled_equals_eager(mask):
    # eager decides torch's nested-tensor path by whether the padding mask is left-aligned (data);
    # a compiled call computes the same choice in the program, so it gives eager's values, zeros
    # at the padded positions included (torch.compile skips the path instead), with one trace
    # for both masks
    nn = tracegrad.nn
    tracegrad.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2).eval()
    compiled = tracegrad.compile(enc)
    src, pad = tracegrad.tensor(x(2, 4, 8)), tracegrad.tensor(mask)
    with tracegrad.no_grad():
        want = enc(src, src_key_padding_mask=pad)
        for _ in range(2):
            got = compiled(src, src_key_padding_mask=pad)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    if mask is _LEFT:
        assert not want[0, 2:].numpy().any()


def test_transformer_encoder_inside_func_grad_keeps_math_path():
    # inside torch.func.grad the differentiated parameters require grad at that level, so torch's
    # eval-mode encoder does not take its nested-tensor path: padded positions keep the math
    # path's values (tracegrad's traced values report no requires_grad; the level is checked)
    torch = get_torch()
    X = x(2, 4, 8)
    outs, tm = [], None
    for mod in (torch, tracegrad):
        nn = mod.nn
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 1).eval()
        if tm is None:
            tm = enc
        else:
            copy_state(tm, enc)
        pad, src = mod.tensor(_LEFT), mod.tensor(X)
        params = {k: v.detach() for k, v in enc.named_parameters()}

        def loss(p):
            out = mod.func.functional_call(enc, p, (src,), {"src_key_padding_mask": pad})
            return out.sum(), out
        grads, out = mod.func.grad(loss, has_aux=True)(params)
        outs.append((out.detach().numpy(), grads["layers.0.linear1.weight"].numpy()))
    assert np.abs(outs[1][0][0, 2:]).max() > 0.1
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
