"""MultiheadAttention / TransformerEncoderLayer parity with torch (outputs, weights, grads, repr)."""
import numpy as np
import pytest

import tracegrad
from tests.nn._helpers import close, copy_state, get_torch

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
