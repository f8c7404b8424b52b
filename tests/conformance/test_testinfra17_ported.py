"""Ports from PyTorch's test/test_nn.py, class TestNNDeviceType, its last section (from the
triplet-margin-loss tests to the end of the file), run unchanged under tracegrad: the parity
cases below are what it found. TransformerEncoderLayer's fused inference path (a query whose
every key is masked comes out NaN), clip_grad_norm_'s warning for an exhausted generator,
Module.to's message for a module on the meta device, and the importable
nn.parallel._functions.Broadcast. Value cases run the same program with torch 2.13 and
tracegrad (``same_outcome``); each case names its original."""
import warnings

import numpy as np
import pytest
from parity import outcome_params, same_outcome


def _encoder_layer(T, **kw):
    """A small TransformerEncoderLayer with fixed weights (cos of a range, as the original)."""
    layer = T.nn.TransformerEncoderLayer(4, 2, 8, 0.0, **kw)
    with T.no_grad():
        for p in layer.parameters():
            n = p.numel()
            p.copy_(T.tensor(np.cos(np.arange(n)).reshape(tuple(p.shape)).astype("float32")))
    return layer


def _x(T, *shape):
    return T.tensor(np.random.RandomState(0).standard_normal(shape).astype("float32"))


KPM = [[True, True, True], [False, True, False]]
AM = [[True, True, True], [False, False, False], [False, True, False]]


def _run(T, mask_kind, batch_first=True, train=False, grad=False, norm_first=False, unbatched=False, hook=False):
    layer = _encoder_layer(T, batch_first=batch_first, norm_first=norm_first)
    layer.train(train)
    if hook:
        layer.linear1.register_forward_hook(lambda *a: None)
    x = _x(T, 2, 3, 4)
    kw = {}
    if mask_kind in ("kpm", "both"):
        kw["src_key_padding_mask"] = T.tensor(KPM)
    if mask_kind in ("am", "both"):
        kw["src_mask"] = T.tensor(AM)
    if mask_kind == "float_kpm":
        m = T.zeros(2, 3)
        m[0] = float("-inf")
        kw["src_key_padding_mask"] = m
    if unbatched:
        x, kw = x[0], {"src_key_padding_mask": T.tensor(KPM[0])}
    if grad:
        return layer(x, **kw).detach()
    with T.no_grad():
        return layer(x, **kw)


# test_transformerencoderlayer (fully masked rows: NaN on torch's fast path, finite elsewhere)
ENCODER_CASES = {
    "fast_path_kpm_full_row": lambda T: _run(T, "kpm"),
    "fast_path_attn_mask_full_row": lambda T: _run(T, "am"),
    "fast_path_both_masks": lambda T: _run(T, "both"),
    "fast_path_float_kpm": lambda T: _run(T, "float_kpm"),
    "fast_path_norm_first": lambda T: _run(T, "kpm", norm_first=True),
    "no_fast_path_training": lambda T: _run(T, "kpm", train=True),
    "no_fast_path_seq_first": lambda T: _run(T, "kpm", batch_first=False),
    "no_fast_path_grad_enabled": lambda T: _run(T, "kpm", grad=True),
    "no_fast_path_unbatched": lambda T: _run(T, "kpm", unbatched=True),
    "no_fast_path_forward_hook": lambda T: _run(T, "kpm", hook=True),
    "encoder_stack_attn_mask": lambda T: _stack(T),
}


def _stack(T):
    # a NaN token of the first layer is an unmasked key of every query in the second
    enc = T.nn.TransformerEncoder(_encoder_layer(T, batch_first=True).eval(), 2, enable_nested_tensor=False)
    with T.no_grad():
        return enc(_x(T, 2, 3, 4), mask=T.tensor(AM))


@pytest.mark.parametrize("fn", outcome_params(ENCODER_CASES))
def test_encoder_layer_fully_masked_rows(fn):
    same_outcome(fn)


def _clip_warnings(T, make_params):
    lin = T.nn.Linear(2, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.nn.utils.clip_grad_norm_(make_params(lin), 1.0)
    return [str(x.message) for x in w]


# test_clip_grad_norm ("Should warning when parameters generator exhausted")
CLIP_CASES = {
    "exhausted_generator": lambda T: _clip_warnings(T, lambda lin: _exhausted(lin.parameters())),
    "empty_generator_expression": lambda T: _clip_warnings(T, lambda lin: (p for p in [])),
    "empty_list": lambda T: _clip_warnings(T, lambda lin: []),
    "empty_list_iterator": lambda T: _clip_warnings(T, lambda lin: iter([])),
    "live_generator": lambda T: _clip_warnings(T, lambda lin: lin.parameters()),
}


def _exhausted(gen):
    for _ in gen:
        pass
    return gen


@pytest.mark.parametrize("fn", outcome_params(CLIP_CASES))
def test_clip_grad_norm_empty_generator_warning(fn):
    same_outcome(fn)


def _meta_module_to(T):
    m = T.nn.Linear(3, 2, device="meta")
    try:
        m.to("cpu")
    except NotImplementedError as e:
        return str(e)
    return "no error"


# test_module_to_empty (the error of Module.to for a module on the meta device)
def test_module_to_from_meta_names_to_empty():
    same_outcome(_meta_module_to)


# test_nn.py imports Broadcast at module level; applied to CPU tensors it is torch's AssertionError
def test_parallel_functions_broadcast_cpu():
    def fn(T):
        from importlib import import_module
        Broadcast = import_module(T.__name__ + ".nn.parallel._functions").Broadcast
        return Broadcast.apply([0], T.ones(2, requires_grad=True))
    same_outcome(fn)


def _mha(T, mask_kind, need_weights=False, self_attn=True, train=False, batch_first=True):
    """MultiheadAttention(4, 2) with fixed weights; its own fused path is taken for batched
    self-attention in eval mode with nothing to differentiate."""
    m = T.nn.MultiheadAttention(4, 2, batch_first=batch_first)
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor(np.cos(np.arange(p.numel())).reshape(tuple(p.shape)).astype("float32")))
    m.train(train)
    x = _x(T, 2, 3, 4)
    kpm, am = T.tensor(KPM), T.tensor(AM)
    masks = {"bool_kpm": {"key_padding_mask": kpm}, "bool_am": {"attn_mask": am},
             "bool_both": {"key_padding_mask": kpm, "attn_mask": am},
             "float_kpm": {"key_padding_mask": T.zeros(2, 3).masked_fill(kpm, float("-inf"))},
             "float_am": {"attn_mask": T.zeros(3, 3).masked_fill(am, float("-inf"))}}[mask_kind]
    with T.no_grad():
        if not batch_first:
            x = x.transpose(0, 1)
        v = x if self_attn else x.clone()
        return m(x, x, v, need_weights=need_weights, **masks)


# test_transformerencoderlayer's mask semantics, through the attention module it is built on
MHA_CASES = {
    "fast_path_bool_kpm": lambda T: _mha(T, "bool_kpm"),
    "fast_path_bool_attn_mask": lambda T: _mha(T, "bool_am"),
    "fast_path_bool_both": lambda T: _mha(T, "bool_both"),
    "fast_path_float_kpm_finite": lambda T: _mha(T, "float_kpm"),
    "fast_path_float_attn_mask_finite": lambda T: _mha(T, "float_am"),
    "need_weights": lambda T: _mha(T, "bool_kpm", need_weights=True),
    "not_self_attention": lambda T: _mha(T, "bool_kpm", self_attn=False),
    "training": lambda T: _mha(T, "bool_kpm", train=True),
    "seq_first": lambda T: _mha(T, "bool_kpm", batch_first=False),
}


@pytest.mark.parametrize("fn", outcome_params(MHA_CASES))
def test_multihead_attention_fully_masked_rows(fn):
    same_outcome(fn)
