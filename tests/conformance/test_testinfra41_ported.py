"""testinfra41: PyTorch's test/test_transformers.py (``TestTransformers``, ``TestSDPAFailureModes``,
``TestSDPA``, ``TestAttnBias``; the CPU parts), test/nn/test_multihead_attention.py
(``TestMultiheadAttentionNN``, ``TestMultiheadAttentionNNDeviceType``) and test_nn.py's
``test_transformerencoderlayer_gelu`` (the activation given as a string, a function and a module):
nn.MultiheadAttention (need_weights / average_attn_weights, bias_k/v, zero_attn, static k/v, 2-D/3-D
attn masks, key padding masks, the shape checks and their words), nn.TransformerEncoderLayer /
TransformerDecoderLayer / TransformerEncoder / TransformerDecoder / Transformer (batch_first, masks,
is_causal, the eval/no-grad path against the training path, bias=False), generate_square_subsequent_mask,
F.scaled_dot_product_attention's math semantics (bool and float masks, is_causal, scale, dropout_p with
a frozen generator, gradcheck, the dtype/rank errors, fully masked rows, negative scales) and the
causal attention biases. Ported in our own code and run on tracegrad through its own
``tracegrad.testing._internal`` harness. Every test function is here under its original name with its
original checks.

Adapted: sizes made smaller (test_transformerencoder_fastpath runs d_model 12 on the three short
input/mask pairs, without the 1024+ sequences and without autocast (a CUDA autocast there);
test_train_with_pad_and_catch_error runs 3 iterations instead of 100; test_multihead_attention's
random helper draws 1 model per case instead of 100 from a seeded ``random.Random(41)`` /
``np.random.RandomState(41)``, batch and sequence in 2..3 (2..10), head size in 3..4 (3..10), 2 or 4 heads
(4..10) and kdim in 5..6 (5..20), so the shapes repeat; test_multihead_attn_3d_attn_mask's batch 8 to 3;
test_kpm_mask_trailing_column_with_nested_tensor's d_model 256 / 3 layers / (10, 6) input to 8 / 2 /
(5, 3); test_sdp_math_gradcheck's (4, 2, 4, 16) to (2, 2, 3, 4); the fused-vs-math CPU tests on
seq_len 5 (mask test: 3 queries, 6 keys), n_head (1, 3), head_dim 4, batch 2, dtypes float64, float32,
bfloat16 (no float16: the math reference of a half input is the same program here);
test_scaled_dot_product_fused_attention_with_inf on a 16x16 banded mask (diagonal -5) instead of
600x600 (-10); test_scaled_dot_product_attention_math_with_negative_scale on (1, 3, 8, 8) instead of
(1, 3, 64, 64); test_causal_variants / test_is_causal_equals_upper_left on (1, 2, 4, 4, 4),
(1, 2, 4, 6, 8), (1, 2, 6, 4, 8), (1, 1, 3, 5, 3) in float32 instead of the 16x16x128.. float16
shapes (float16 matmuls on CPU); test_is_causal_and_mask_fails on (2, 2, 4, 4) instead of
(16, 16, 128, 16); test_fast_path_check_with_mask_does_not_break_in_compile on d_model 16, 2 heads,
sequence 7 instead of 512 / 8 / 41, with tracegrad.compile's default backend (fullgraph kept).
``make_tensor`` takes dtype/device as keywords. ``test_incompatible_mask`` is nested (never run) inside
torch's test_scaled_dot_product_attention; here it is a test of its own and its check is torch 2.13's
behaviour (a float key padding mask with a bool attn_mask raises). Left out: the CUDA-only tests,
flash / memory-efficient / cuDNN kernels and their failure modes, nested-tensor inputs
(test_with_nested_tensor_input, test_multihead_attn_nested_tensor_outside_fast_path, the "nested"
variants), TorchScript (test_script_*, test_transformerencoderlayer_subclass(_model)), the mocks of torch's
native fast-path kernels (test_mask_check_fastpath, test_disable_fastpath,
test_multihead_self_attn_two_masks_fast_path_mock, the MagicMock of test_train_with_is_causal stays:
it mocks a layer, not a kernel), torch._fused_sdp_choice (test_fused_sdp_choice_cpu: kernel choice, no
result), test_causal_variants_compile (dynamo's frame counter; ``test_compiled_attention`` checks
tracegrad.compile's form), test_decoder_only_layer (fairseq), TestSDPAPrivateUse1Only.

Adapted for torch 2.13's fully masked rows: its math backend (and the MHA slow path) gives a query
whose keys are all masked zero weights, where the file's reference softmax gave NaN (the file's random
masks pass under its seed only), so test_scaled_dot_product_attention's reference takes NaN weights to
0, and test_multiheadattention_fastpath_attn_mask leaves key 0 unmasked in its bool masks (torch's fast
path gives NaN for such a row, its slow path 0). ``TestTransformerSemanticsTI41`` adds what the brief
asks and the file checks only in passing, each against a formula from the library's primitives:
TransformerEncoderLayer with norm_first, a string / callable activation and a padding mask, eval / no-grad
against training; TransformerDecoderLayer with norm_first, tgt_mask / tgt_is_causal and a memory padding
mask; generate_square_subsequent_mask; nn.Transformer against its encoder and decoder and its two
argument checks; MultiheadAttention's need_weights / average_attn_weights, dropout off in eval, and a
fully masked query (NaN weights and output with need_weights, zeros without); sdpa's enable_gqa, scale=
and dropout_p=1.

Fixes in tracegrad (``TestFixesTI41`` probes each): F.scaled_dot_product_attention honours
``sdpa_kernel``: with FLASH_ATTENTION not allowed (``sdpa_kernel(SDPBackend.MATH)``) it refuses
is_causal with an attn_mask for 4-D inputs, as torch's math path (it took torch's fused-kernel
behaviour regardless); it checks query/key head sizes, key/value sequence lengths and the broadcast of
batch / head dims itself, naming the op ("... The size of tensor a (2) must match the size of tensor b
(3) at non-singleton dimension 0", torch's words; the matmuls failed with a generic message); half /
bfloat16 attention is computed in float32 and rounded once, as torch's CPU kernels, so a float32 mask
with a bfloat16 query works (it raised "expected m1 and m2 to have the same dtype").
F.multi_head_attention_forward words a key_padding_mask of the wrong shape as torch 2.13 ("Expected
key_padded_mask.shape[0] to be 2, but got 3", batch first) and checks static_k / static_v
("expecting static_k.size(0) of 4, but got 3", size(2) against the head size; unchecked before). The
harness has ``common_methods_invocations.wrapper_set_seed``.

Found and left alone: with a key_padding_mask of the wrong shape in eval / no-grad, torch's native fast
path raises RuntimeError ("For mask_type == 1 mask shape should be (B, L)") where tracegrad, without that
kernel, raises the slow path's AssertionError; torch's fused CPU kernel runs key and value of different
sequence lengths (reading past value's end) where tracegrad refuses them (torch's math path fails too).

``TI41_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import contextlib
import importlib
import itertools
import math
import os
import random as _random
import warnings
from collections import namedtuple
from functools import partial
from unittest.mock import ANY, MagicMock

import numpy as np
import pytest

from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI41_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
nn = torch.nn
F = torch.nn.functional
optim = torch.optim
Parameter = torch.nn.Parameter
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
_cnn = importlib.import_module(torch.__name__ + ".testing._internal.common_nn")
_cmi = importlib.import_module(torch.__name__ + ".testing._internal.common_methods_invocations")
_attn = importlib.import_module(torch.__name__ + ".nn.attention")
_bias = importlib.import_module(torch.__name__ + ".nn.attention.bias")
NNTestCase = _cnn.NNTestCase
parametrize = _cu.parametrize
freeze_rng_state = _cu.freeze_rng_state
set_default_dtype = _cu.set_default_dtype
gradcheck = _cu.gradcheck
wrapper_set_seed = _cmi.wrapper_set_seed
dtypes = _cdt.dtypes
make_tensor = torch.testing.make_tensor
sdpa_kernel, SDPBackend = _attn.sdpa_kernel, _attn.SDPBackend
CausalVariant, causal_lower_right, causal_upper_left = (_bias.CausalVariant, _bias.causal_lower_right,
                                                        _bias.causal_upper_left)
scaled_dot_product_attention = F.scaled_dot_product_attention
random = _random.Random(41)

SdpaShape = namedtuple("Sdpa_Shape", ["batch", "num_heads", "seq_len", "head_dim"])
Tolerances = namedtuple("Tolerances", ["atol", "rtol"])


def rand_sdpa_tensor(shape, device, dtype, type="dense", requires_grad=False, packed=False):
    """The file's helper, dense inputs only: (batch, seq_len, heads, head_dim), or the heads packed
    three times into the last dim."""
    assert type == "dense"
    b, h, s, d = shape.batch, shape.num_heads, shape.seq_len, shape.head_dim
    size = (b, s, h, d) if not packed else (b, s, 3 * h * d)
    return torch.randn(size, device=device, dtype=dtype, requires_grad=requires_grad)


def query_key_value_clones(query, key, value, dtype=None):
    """Detached clones of q, k, v (in ``dtype``) that require grad as the originals do."""
    dtype = query.dtype if dtype is None else dtype
    return tuple(t.clone().detach().to(dtype).requires_grad_(t.requires_grad) for t in (query, key, value))


def _cos_fill(module):
    # the file's deterministic weights: each parameter is cos(0, 1, 2, ...) in its shape
    with torch.no_grad():
        for p in module.parameters():
            x = p.data
            p.data.copy_(torch.cos(torch.arange(0, x.view(-1).size(0)).float().view(x.shape)))
    return module


class TestTransformersTI41(NNTestCase):
    def test_train_with_pad_and_catch_error(self, device):
        iters = 3
        pad_mask = torch.tensor([[1, 1, 0, 0]], dtype=torch.bool).to(device)
        layer = nn.TransformerEncoderLayer(d_model=2, dim_feedforward=4, nhead=2, batch_first=True,
                                           activation="gelu", dropout=0)
        criterion = nn.MSELoss()
        encoder = nn.TransformerEncoder(layer, 2).to(device)
        optimizer = optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)
        encoder.train()
        for _ in range(iters):
            encoder.train()
            optimizer.zero_grad()
            inputs = torch.cat([torch.randn(1, 2, 2), torch.zeros(1, 2, 2)], dim=1).to(device)
            outputs = encoder(inputs, src_key_padding_mask=pad_mask)
            loss = criterion(outputs[:, 0:2, :], inputs[:, 0:2, :])
            loss.backward()
            optimizer.step()

            with torch.no_grad():
                test = torch.cat([torch.randn(1, 2, 2), torch.zeros(1, 2, 2)], dim=1).to(device)
                # a uint8 padding mask: the file skips the iteration if it is refused (AssertionError)
                try:
                    encoder(test, src_key_padding_mask=pad_mask.to(torch.uint8))
                except AssertionError:
                    continue
                test_train_bool = encoder(test, src_key_padding_mask=pad_mask)
                encoder.eval()
                try:
                    encoder(test, src_key_padding_mask=pad_mask.to(torch.int64))
                except AssertionError:
                    continue
                test_eval_bool = encoder(test, src_key_padding_mask=pad_mask)
                l1_bool = nn.L1Loss()(test_train_bool[:, 0:2, :], test_eval_bool[:, 0:2, :]).item()
                self.assertTrue(l1_bool < 1e-4, "Eval/Train difference in pad_mask BOOL")

    @parametrize("attn_mask_dim", [2, 3, None])
    @parametrize("key_padding_mask_dim", [2, None])
    @parametrize("mask_dtype", [torch.bool, torch.float32])
    def test_multiheadattention_fastpath_attn_mask(self, device, attn_mask_dim, key_padding_mask_dim, mask_dtype):
        with torch.no_grad():
            B, L, D, H = 2, 4, 8, 4
            attn_mask = {2: lambda: make_tensor((L, L), dtype=mask_dtype, device=device),
                         3: lambda: make_tensor((B * H, L, L), dtype=mask_dtype, device=device),
                         None: lambda: None}[attn_mask_dim]()
            key_padding_mask = (make_tensor((B, L), dtype=mask_dtype, device=device)
                                if key_padding_mask_dim == 2 else None)
            if mask_dtype is torch.bool:
                # no fully masked row: torch 2.13's slow path gives such a row zero weights, its fast
                # path NaN (the file's random masks pass under its seed only)
                for m in (attn_mask, key_padding_mask):
                    if m is not None:
                        m[..., 0] = False
            mha = nn.MultiheadAttention(D, H, batch_first=True, device=device)
            X = torch.randn(B, L, D, device=device)
            mha.train()  # the slow path
            out, _ = mha(X, X, X, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False)
            mha.eval()  # the fast path
            out_fp, _ = mha(X, X, X, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False)
            self.assertEqual(out, out_fp)

    @parametrize("nhead", [1, 4, 8])
    def test_transformerencoderlayer_src_mask(self, device, nhead):
        batch_size, seqlen, d_model, dim_feedforward = 2, 4, 8, 32
        model = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                                           batch_first=True).to(device)
        src = torch.rand(batch_size, seqlen, d_model).to(device)
        src_mask = torch.zeros(seqlen, seqlen).to(torch.bool).to(device)
        model(src, src_mask=src_mask)
        model.eval()
        with torch.no_grad():
            model(src, src_mask=src_mask)

    @parametrize("nhead", [3, 4])
    def test_transformerencoderlayer_no_fastpath_with_hooks(self, device, nhead):
        batch_size, seqlen, d_model = 2, 4, 12
        model = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead, dim_feedforward=d_model,
                                           batch_first=True).to(device).eval()
        src = torch.rand(batch_size, seqlen, d_model).to(device)
        cache = []

        def hook(module, inputs, output):
            cache.append(output[0].detach())

        handle = model.self_attn.register_forward_hook(hook)
        with torch.inference_mode():
            model(src)
        # a hook on self_attn sees the call: the fused fast path must not skip the submodule
        self.assertEqual(len(cache), 1)
        handle.remove()

    @parametrize("enable_nested_tensor", [True, False])
    @parametrize("d_model", [12])
    def test_transformerencoder_fastpath(self, device, enable_nested_tensor, d_model):
        torch.manual_seed(1234)
        model = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=d_model, batch_first=True),
            num_layers=2, enable_nested_tensor=enable_nested_tensor).to(device).eval()
        input_mask_pairs = [
            (torch.rand(3, 2, d_model), [[0, 1], [0, 1], [1, 1]]),
            (torch.rand(2, 10, d_model), [[0] * 8 + [1] * 2, [0] * 9 + [1]]),
            (torch.rand(1, 6, d_model), [[0] * 4 + [1] * 2]),
        ]
        input_mask_pairs = [(torch.tensor(x, device=device, dtype=torch.get_default_dtype()),
                             torch.tensor(m, device=device, dtype=torch.bool)) for x, m in input_mask_pairs]
        for input, src_key_padding_mask in input_mask_pairs:
            with torch.no_grad():
                fastpath_output = model(input, src_key_padding_mask=src_key_padding_mask)
            slowpath_output = model(input, src_key_padding_mask=src_key_padding_mask)
            # the nested fast path may return a shorter sequence: pad it back, zero the masked tokens
            bs, true_seqlen, embed_dim = fastpath_output.shape
            expanded_seqlen = src_key_padding_mask.shape[1]
            fastpath_output_expanded = torch.zeros(bs, expanded_seqlen, embed_dim, device=device)
            fastpath_output_expanded[:, :true_seqlen, :] = fastpath_output
            fastpath_output_expanded = fastpath_output_expanded.masked_fill(src_key_padding_mask.unsqueeze(-1), 0)
            slowpath_output = slowpath_output.masked_fill(src_key_padding_mask.unsqueeze(-1), 0)
            self.assertEqual(fastpath_output_expanded, slowpath_output)

    @parametrize("with_no_grad", [True, False])
    @parametrize("training", [True, False])
    @parametrize("enable_nested_tensor", [False])
    def test_transformerencoder_square_input(self, device, with_no_grad, training, enable_nested_tensor):
        model = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True),
            num_layers=2, enable_nested_tensor=enable_nested_tensor).to(device)
        _cos_fill(model)
        model = model.train() if training else model.eval()
        x = torch.arange(0, 16).reshape(2, 2, 4).to(torch.get_default_dtype()).to(device)
        src_mask = torch.Tensor([[0, 1], [0, 0]]).to(torch.bool).to(device)
        with torch.no_grad() if with_no_grad else contextlib.nullcontext():
            result = model(x, mask=src_mask)
        ref_output = torch.Tensor([[[2.420306205749512, 0.017629241570830, -0.607857942581177, -0.085519507527351],
                                    [2.420306205749512, 0.017629241570830, -0.607857942581177, -0.085519507527351]],
                                   [[2.419836044311523, 0.017548924311996, -0.608187675476074, -0.085347734391689],
                                    [2.419836044311523, 0.017548924311996, -0.608187675476074, -0.085347734391689]]]
                                  ).to(device)
        self.assertEqual(tuple(result.shape), tuple(ref_output.shape))
        self.assertEqual(result, ref_output)

    @parametrize("batch_first", [True, False])
    @parametrize("training", [True, False])
    @parametrize("enable_nested_tensor", [True, False])
    def test_transformerencoder(self, device, batch_first, training, enable_nested_tensor):
        def get_a_test_layer(activation, batch_first=False):
            layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=16, dropout=0.0, activation=activation,
                                               batch_first=batch_first).to(device)
            return _cos_fill(layer)

        def _test(batch_first, training, enable_nested_tensor):
            def perm_fn(x):
                return x.transpose(1, 0) if batch_first else x

            def check(result, ref):
                ref = perm_fn(torch.tensor(ref)).to(device)
                self.assertEqual(tuple(result.shape), tuple(ref.shape))
                torch.testing.assert_close(result, ref, rtol=1e-7, atol=1e-5)

            def build(n, norm=None):
                model = nn.TransformerEncoder(encoder_layer, n, norm=norm,
                                              enable_nested_tensor=enable_nested_tensor).to(device)
                return model if training else model.eval()

            encoder_layer = get_a_test_layer(activation=F.relu, batch_first=batch_first)
            model = build(1)
            encoder_input = perm_fn(torch.tensor([[[0.7462, 0.6653, 0.5679, 0.4891], [0.5387, 0.1655, 0.3565, 0.0471]],
                                                  [[0.8335, 0.2799, 0.5031, 0.2947], [0.1402, 0.0318, 0.7636, 0.1346]],
                                                  [[0.6333, 0.9344, 0.1376, 0.9938], [0.8924, 0.2872, 0.6692, 0.2944]],
                                                  [[0.9897, 0.6915, 0.3154, 0.1733], [0.8645, 0.3513, 0.3064, 0.0767]],
                                                  [[0.8117, 0.2366, 0.4838, 0.7881],
                                                   [0.3718, 0.4945, 0.9511, 0.0864]]])).to(device)
            ref1 = [[[2.428589, 0.020835, -0.602055, -0.085249], [2.427987, 0.021213, -0.602496, -0.084103]],
                    [[2.424689, 0.019155, -0.604793, -0.085672], [2.413863, 0.022211, -0.612486, -0.072490]],
                    [[2.433774, 0.021598, -0.598343, -0.087548], [2.425104, 0.019748, -0.604515, -0.084839]],
                    [[2.436185, 0.022682, -0.596625, -0.087261], [2.433556, 0.021891, -0.598509, -0.086832]],
                    [[2.416246, 0.017512, -0.610712, -0.082961], [2.422901, 0.024187, -0.606178, -0.074929]]]
            check(model(encoder_input), ref1)
            # an all-False src_mask and an all-False padding mask change nothing
            check(model(encoder_input, mask=torch.zeros([5, 5]).to(device) == 1), ref1)
            mask = torch.zeros([2, 5]).to(device) == 1
            check(model(encoder_input, src_key_padding_mask=mask), ref1)

            mask[0, 1] = 1
            mask[1, 3] = 1
            mask[1, 4] = 1
            check(model(encoder_input, src_key_padding_mask=mask),
                  [[[2.429026, 0.020793, -0.601741, -0.085642], [2.428811, 0.021445, -0.601912, -0.084252]],
                   [[2.425009, 0.019155, -0.604566, -0.085899], [2.415408, 0.02249, -0.611415, -0.073]],
                   [[2.434199, 0.021682, -0.598039, -0.087699], [2.42598, 0.019941, -0.603896, -0.085091]],
                   [[2.436457, 0.022736, -0.59643, -0.08736], [2.434021, 0.022093, -0.598179, -0.08679]],
                   [[2.416531, 0.017498, -0.610513, -0.083181], [2.4242, 0.024653, -0.605266, -0.074959]]])

            # multiple layers, no norm
            check(build(2)(encoder_input, src_key_padding_mask=mask),
                  [[[2.419051, 0.017446, -0.608738, -0.085003], [2.419102, 0.017452, -0.608703, -0.085026]],
                   [[2.419043, 0.017445, -0.608744, -0.084999], [2.419052, 0.017446, -0.608738, -0.085004]],
                   [[2.419067, 0.017448, -0.608727, -0.085010], [2.419098, 0.017452, -0.608706, -0.085024]],
                   [[2.419072, 0.017449, -0.608724, -0.085012], [2.419119, 0.017455, -0.608691, -0.085034]],
                   [[2.419019, 0.017442, -0.608761, -0.084989], [2.419075, 0.017449, -0.608722, -0.085014]]])
            row6 = [[2.419101, 0.017453, -0.608703, -0.085025], [2.419101, 0.017453, -0.608704, -0.085025]]
            check(build(6)(encoder_input, src_key_padding_mask=mask), [row6] * 5)

            # multiple layers with a final norm
            norm = nn.LayerNorm(4)
            check(build(2, norm)(encoder_input, src_key_padding_mask=mask),
                  [[[1.695949, -0.357635, -0.893077, -0.445238], [1.695955, -0.357639, -0.893050, -0.445266]],
                   [[1.695948, -0.357634, -0.893082, -0.445233], [1.695950, -0.357635, -0.893077, -0.445238]],
                   [[1.695951, -0.357636, -0.893069, -0.445246], [1.695955, -0.357639, -0.893052, -0.445264]],
                   [[1.695952, -0.357636, -0.893066, -0.445249], [1.695957, -0.357641, -0.893041, -0.445276]],
                   [[1.695946, -0.357632, -0.893095, -0.445220], [1.695952, -0.357637, -0.893065, -0.445251]]])
            row6n = [[1.695955, -0.357639, -0.893051, -0.445265]] * 2
            check(build(6, norm)(encoder_input, src_key_padding_mask=mask), [row6n] * 5)

        # the reference values were recorded with double as the default dtype
        with set_default_dtype(torch.double):
            with contextlib.nullcontext() if training else torch.no_grad():
                _test(batch_first, training, enable_nested_tensor)

    def test_encoder_padding_and_src_mask_bool(self, device):
        encoder_layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                                   activation="relu", batch_first=True)
        encoder = nn.TransformerEncoder(encoder_layer, 2, nn.LayerNorm(16))
        inputs = torch.randn(2, 3, 16)
        src_mask = torch.ones(3, 3, dtype=torch.bool).triu_(diagonal=1)
        input_seq_len = torch.tensor([3, 2])
        padding_mask = torch.arange(3)[None, :].cpu() >= input_seq_len[:, None]
        with self.assertNoLogs(None):
            encoder(inputs, mask=src_mask, src_key_padding_mask=padding_mask)

    def test_decoder_padding_and_src_mask_bool(self, device):
        def transformer_decoder(inputs, input_seq_len, memory):
            decoder_layer = nn.TransformerDecoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                                       activation="relu", batch_first=True)
            decoder = nn.TransformerDecoder(decoder_layer, 2, nn.LayerNorm(16))
            src_mask = torch.ones(inputs.shape[1], inputs.shape[1], dtype=torch.bool).triu_(diagonal=1)
            padding_mask = torch.arange(inputs.shape[1])[None, :].cpu() >= input_seq_len[:, None]
            return decoder(inputs, memory, tgt_mask=src_mask, tgt_key_padding_mask=padding_mask,
                           memory_key_padding_mask=padding_mask)

        with self.assertNoLogs(None):
            transformer_decoder(torch.randn(2, 3, 16), torch.tensor([3, 2]), torch.randn(2, 3, 16))

    def test_encoder_is_causal(self, device):
        d_model = 3
        layer = nn.TransformerEncoderLayer(d_model, 1, 6, batch_first=True)
        layer.eval()
        x = torch.randn(1, 5, d_model)
        layer(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        is_causal_output = layer(x, src_mask=mask, is_causal=True)
        masked_output = layer(x, src_mask=mask)
        self.assertEqual(masked_output, is_causal_output)

    def test_kpm_mask_trailing_column_with_nested_tensor(self, device):
        encoder_layer = nn.TransformerEncoderLayer(d_model=8, nhead=4, dim_feedforward=16, activation="gelu",
                                                   norm_first=False, batch_first=False)
        transformer_encoder = nn.TransformerEncoder(encoder_layer, num_layers=2, enable_nested_tensor=True).to(device)
        x = torch.randn(5, 3, 8).to(device)
        mask = torch.ones(3, 5)
        mask[0, :] = 0
        mask = mask.bool().to(device)
        out = transformer_encoder(src=x, src_key_padding_mask=mask)
        self.assertEqual(out.shape[1], 3)

    @parametrize("input_dim,attn_mask_dim,is_causal",
                 [(3, None, False), (3, 2, False), (3, 2, True), (3, 3, False), (3, 3, True),
                  (4, None, False), (4, 2, False), (4, 2, True), (4, 4, False), (4, 4, True)],
                 name_fn=lambda input_dim, attn_dim, is_causal: (
                     f"{input_dim}D_input_dim_" + (f"{attn_dim}D_{'causal_' if is_causal else ''}attn_mask"
                                                   if attn_dim is not None else "no_attn_mask")))
    @parametrize("dropout_p", [0.0, 0.2, 0.5])
    def test_scaled_dot_product_attention(self, device, input_dim, attn_mask_dim, is_causal, dropout_p):
        def sdp_ref(q, k, v, attn_mask=None, dropout_p=0.0):
            q = q / math.sqrt(q.size(-1))
            attn = (torch.baddbmm(attn_mask, q, k.transpose(-2, -1)) if attn_mask is not None
                    else torch.bmm(q, k.transpose(-2, -1)))
            # torch 2.13's math backend gives a fully masked row zero weights (its safe softmax),
            # where the file's reference gave NaN
            attn = F.softmax(attn, dim=-1).nan_to_num(0.0)
            if dropout_p > 0.0:
                attn = F.dropout(attn, p=dropout_p)
            return torch.bmm(attn, v)

        with sdpa_kernel(backends=[SDPBackend.MATH]):
            for dtype in (torch.double, torch.float):
                def rand_tensor(*shape):
                    return torch.randn(shape, device=device, dtype=dtype)

                N, N_prime, L, S, E = 5, 2, 4, 3, 6
                if input_dim == 3:
                    query, key, value = rand_tensor(N, L, E), rand_tensor(N, S, E), rand_tensor(N, S, E)
                else:
                    query, key, value = (rand_tensor(N, N_prime, L, E), rand_tensor(N, N_prime, S, E),
                                         rand_tensor(N, N_prime, S, E))
                attn_mask = None
                if attn_mask_dim is not None:
                    mask_size = (L, S) if attn_mask_dim == 2 else ((N, L, S) if input_dim == 3 else (N, N_prime, L, S))
                    attn_mask = (torch.ones(mask_size, device=device, dtype=torch.bool).tril() if is_causal
                                 else torch.randint(0, 2, size=mask_size, device=device, dtype=torch.bool))

                with freeze_rng_state():
                    # the reference takes a float mask and 3-D inputs
                    attn_mask_float = attn_mask
                    if attn_mask_float is not None:
                        attn_mask_float = torch.zeros_like(attn_mask, dtype=query.dtype)
                        attn_mask_float.masked_fill_(attn_mask.logical_not(), float("-inf"))
                    q, k, v = query.view(-1, L, E), key.view(-1, S, E), value.view(-1, S, E)
                    a = attn_mask_float
                    if a is not None and attn_mask_dim > 3:
                        a = a.view(-1, L, S)
                    expected = sdp_ref(q, k, v, attn_mask=a, dropout_p=dropout_p)
                    if input_dim > 3:
                        expected = expected.view(-1, N_prime, L, E)

                with freeze_rng_state():
                    if is_causal:
                        actual = F.scaled_dot_product_attention(query, key, value, None, dropout_p, is_causal)
                        with self.assertRaisesRegex(RuntimeError,
                                                    "Explicit attn_mask should not be set when is_causal=True"):
                            F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal)
                    else:
                        actual = F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal)
                self.assertEqual(actual, expected)

            if attn_mask_dim is None:
                q, k, v = (t.double().clone().requires_grad_() for t in (q, k, v))
                assert gradcheck(lambda *args, **kwargs: wrapper_set_seed(sdp_ref, *args, **kwargs),
                                 (q, k, v, attn_mask, dropout_p))
                assert gradcheck(lambda *args, **kwargs: wrapper_set_seed(F.scaled_dot_product_attention,
                                                                          *args, **kwargs),
                                 (q, k, v, attn_mask, dropout_p))

    def test_incompatible_mask(self, device):
        def ones_tensor(*shape):
            return torch.ones(shape, dtype=torch.float32)
        S, L, E, H = 1, 2, 4, 1
        mha = nn.MultiheadAttention(E, H)
        mha.in_proj_weight = Parameter(torch.ones((E * 3, E)))
        mha.out_proj.weight = Parameter(torch.ones((E, E)))
        qkv = ones_tensor(S, L, E).to(float)
        kpm = ones_tensor(S, L) * float("-inf")
        am = ones_tensor(L, L).to(bool)
        self.assertRaises(RuntimeError, lambda: mha(qkv, qkv, qkv, need_weights=False, key_padding_mask=kpm,
                                                    attn_mask=am))

    def test_bias_is_none(self, device):
        x = torch.rand((1, 5, 10))
        model = nn.modules.activation.MultiheadAttention(10, 1, bias=False, batch_first=True)
        model.eval()
        model(x, x, x)

    def test_transformer_bias_is_none(self, device):
        batch_size, seqlen, d_model, nhead = 2, 3, 8, 4
        encoder_layer = nn.TransformerEncoderLayer(d_model, nhead, bias=False, batch_first=True, device=device)
        encoder_layer.eval()
        x = torch.randn(batch_size, seqlen, d_model, device=device)
        encoder_layer(x)
        with self.assertWarnsRegex(UserWarning, "encoder_layer.self_attn was passed bias=False"):
            encoder = nn.TransformerEncoder(encoder_layer, num_layers=1).eval()
            encoder(x)
        with self.assertWarnsRegex(UserWarning, "self_attn was passed bias=False"):
            transformer = nn.Transformer(d_model=d_model, nhead=nhead, bias=False, batch_first=True,
                                         device=device).eval()
            transformer(x, x)

    def test_train_with_is_causal(self, device):
        S, L, E, H = 1, 2, 2, 1
        layer = nn.TransformerEncoderLayer(d_model=2, dim_feedforward=4, nhead=H, batch_first=True,
                                           activation="gelu", dropout=0)
        criterion = nn.MSELoss()
        encoder = nn.TransformerEncoder(layer, 2).to(device)
        optimizer = optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)
        encoder.train()
        optimizer.zero_grad()
        inputs = torch.randn(S, L, E).to(device)
        mask = nn.Transformer.generate_square_subsequent_mask(inputs.size(1), device=device)
        outputs = encoder(inputs, mask=mask, is_causal=True)
        loss = criterion(outputs[:, 0:2, :], inputs[:, 0:2, :])
        loss.backward()
        optimizer.step()

        # inference with is_causal
        t_qvk = torch.randn((S, L, E), device=device, dtype=torch.float32)
        mha = nn.MultiheadAttention(E, H).to(device)
        mask = nn.Transformer.generate_square_subsequent_mask(S, device=device)
        mha(t_qvk, t_qvk, t_qvk, attn_mask=mask, is_causal=True)

        # is_causal alone (no mask) is refused
        with self.assertRaises(RuntimeError):
            mha(t_qvk, t_qvk, t_qvk, is_causal=True)

        # a causal mask makes the encoder tell its layers is_causal=True
        causal_mask = torch.triu(torch.ones(L, L, device=inputs.device) * float("-inf"), diagonal=1).to(torch.bool)
        mock_layer = MagicMock(nn.MultiheadAttention(E, H), return_value=inputs)
        encoder.layers[1] = mock_layer
        encoder(inputs, mask=causal_mask)
        mock_layer.assert_called_with(ANY, src_mask=ANY, is_causal=True, src_key_padding_mask=ANY)

        self.is_causal_kernels([SDPBackend.MATH], device)

    def is_causal_kernels(self, kernels, device):
        def ones_tensor(*shape):
            return torch.ones(shape, device=device, dtype=torch.float32).to(device)
        S, L, E, H = 1, 2, 4, 1
        qkv = ones_tensor(S, L, E)
        mha = nn.MultiheadAttention(E, H).to(device)
        mha.in_proj_weight = Parameter(torch.ones((E * 3, E), device=device))
        mha.out_proj.weight = Parameter(torch.ones((E, E), device=device))
        expected = torch.ones(size=(S, L, E)).to(device) * 16
        mask = nn.Transformer.generate_square_subsequent_mask(qkv.size(1), device=device)
        for kernel in kernels:
            with sdpa_kernel(backends=[kernel]):
                actual, _ = mha(qkv, qkv, qkv, attn_mask=mask, need_weights=False, is_causal=True)
                self.assertTrue(torch.equal(actual, expected))

    # test_nn.py's TestNNDeviceType: the activation as a string, a function and a module
    @dtypes(torch.float)
    def test_transformerencoderlayer_gelu(self, device, dtype):
        d_model, nhead, dim_feedforward, dropout = 4, 2, 16, 0.0
        atol, rtol = 0, 1e-5

        def _test(activation, batch_first, training):
            def perm_fn(x):
                return x.transpose(1, 0) if batch_first else x

            model = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                               batch_first=batch_first, device=device, dtype=dtype)
            if not training:
                model = model.eval()
            _cos_fill(model)
            result = model(torch.tensor([[[20., 30., 40., 50.]]], device=device, dtype=dtype))
            torch.testing.assert_close(result, torch.tensor([[[2.249815, 0.131006, -0.702199, 0.177868]]],
                                                            device=device, dtype=dtype), rtol=rtol, atol=atol)
            result = model(perm_fn(torch.tensor([[[1., 2., 3., 4.]], [[5., 6., 7., 8.]]], device=device, dtype=dtype)))
            ref = perm_fn(torch.tensor([[[2.264103, 0.121417, -0.696012, 0.159724]],
                                        [[2.264103, 0.121417, -0.696012, 0.159724]]], device=device, dtype=dtype))
            torch.testing.assert_close(result, ref, rtol=rtol, atol=atol)
            encoder_input = perm_fn(torch.tensor([[[0.7462, 0.6653, 0.5679, 0.4891], [0.5387, 0.1655, 0.3565, 0.0471]],
                                                  [[0.8335, 0.2799, 0.5031, 0.2947], [0.1402, 0.0318, 0.7636, 0.1346]],
                                                  [[0.6333, 0.9344, 0.1376, 0.9938], [0.8924, 0.2872, 0.6692, 0.2944]],
                                                  [[0.9897, 0.6915, 0.3154, 0.1733], [0.8645, 0.3513, 0.3064, 0.0767]],
                                                  [[0.8117, 0.2366, 0.4838, 0.7881], [0.3718, 0.4945, 0.9511, 0.0864]]],
                                                 device=device, dtype=dtype))
            ref = perm_fn(torch.tensor([[[2.42163188, 0.03227153, -0.60714219, -0.05908082],
                                         [2.42151276, 0.03302179, -0.60722523, -0.05762651]],
                                        [[2.41926761, 0.02974034, -0.60879519, -0.0621269],
                                         [2.41626395, 0.03539356, -0.61087842, -0.04978623]],
                                        [[2.42382808, 0.03218872, -0.6055963, -0.06073591],
                                         [2.41983477, 0.03085259, -0.60840145, -0.06046414]],
                                        [[2.42500749, 0.03328855, -0.60476388, -0.0595334],
                                         [2.4237977, 0.03290575, -0.60561789, -0.05940082]],
                                        [[2.41383916, 0.02686345, -0.61256377, -0.06380707],
                                         [2.42000277, 0.03800944, -0.60824798, -0.04754947]]],
                                       device=device, dtype=dtype))
            torch.testing.assert_close(model(encoder_input), ref, rtol=rtol, atol=atol)

        with set_default_dtype(torch.double):
            for activation, batch_first, training in itertools.product(("gelu", F.gelu, nn.GELU()), (True, False),
                                                                       (True, False)):
                with contextlib.nullcontext() if training else torch.no_grad():
                    _test(activation=activation, batch_first=batch_first, training=training)


class TestSDPAFailureModesTI41(NNTestCase):
    @parametrize("kernel", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
    def test_invalid_inputs_different_datatypes(self, device, kernel):
        with sdpa_kernel(backends=[kernel]):
            shape = (1, 4, 8, 16)
            query = torch.randn(shape, dtype=torch.float32, device=device)
            key = torch.randn(shape, dtype=torch.float16, device=device)
            value = torch.randn(shape, dtype=torch.float16, device=device)
            self.assertRaises(RuntimeError, lambda: F.scaled_dot_product_attention(query, key, value))

    @parametrize("kernel", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
    def test_invalid_inputs_1_dimensional_inputs(self, device, kernel):
        with sdpa_kernel(backends=[kernel]):
            query = torch.randn(4, dtype=torch.float16, device=device)
            key = torch.randn((1, 4), dtype=torch.float16, device=device)
            value = torch.randn((1, 4), dtype=torch.float16, device=device)
            self.assertRaises(RuntimeError, lambda: F.scaled_dot_product_attention(query, key, value))


class TestSDPATI41(NNTestCase):
    @parametrize("contiguous_inputs", [True, False])
    def test_sdp_math_gradcheck(self, device, contiguous_inputs):
        batch_size, seq_len, num_heads, head_dim = 2, 3, 2, 4
        qkv = rand_sdpa_tensor(SdpaShape(batch_size, num_heads, seq_len, head_dim), device=device,
                               dtype=torch.float64, requires_grad=True, packed=True)
        query, key, value = qkv.chunk(3, dim=-1)
        query = query.view(batch_size, -1, num_heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, num_heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, num_heads, head_dim).transpose(1, 2)
        if contiguous_inputs:
            query, key, value = query.contiguous(), key.contiguous(), value.contiguous()
        with sdpa_kernel(backends=[SDPBackend.MATH]):
            assert gradcheck(lambda *args, **kwargs: wrapper_set_seed(F.scaled_dot_product_attention, *args, **kwargs),
                             (query, key, value, None, 0.0, False))

    @parametrize("fused_kernel", [SDPBackend.FLASH_ATTENTION])
    @parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
    @parametrize("n_head", [1, 3])
    @parametrize("causal", [True, False])
    @parametrize("train", [True, False])
    def test_scaled_dot_product_fused_attention_vs_math_cpu(self, device, fused_kernel, dtype, n_head, causal, train):
        batch_size, seq_len, head_dim = 2, 5, 4
        atol, rtol = (5e-2, 5e-2) if dtype is torch.bfloat16 else (1e-5, 5e-6)
        n_embd = n_head * head_dim
        x = rand_sdpa_tensor(SdpaShape(batch_size, n_head, seq_len, head_dim), device=device, dtype=dtype,
                             packed=True)
        x2 = x.clone()
        if train:
            x.requires_grad_(True)
            x2.requires_grad_(True)
        q, k, v = x.split(n_embd, dim=2)
        q2, k2, v2 = x2.split(n_embd, dim=2)
        if dtype is torch.bfloat16:
            q2, k2, v2 = q2.float(), k2.float(), v2.float()

        def heads(t):
            return t.view(batch_size, seq_len, n_head, head_dim).transpose(1, 2)

        q, k, v, q2, k2, v2 = map(heads, (q, k, v, q2, k2, v2))
        with sdpa_kernel(backends=[fused_kernel]):
            actual = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=causal)
        with sdpa_kernel(backends=[SDPBackend.MATH]):
            math_ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=None, dropout_p=0.0, is_causal=causal)
        if dtype is torch.bfloat16:
            math_ref = math_ref.to(dtype)
        self.assertEqual(actual, math_ref, atol=atol, rtol=rtol)
        if train:
            actual.sum().backward()
            math_ref.sum().backward()
            for g, g_ref in zip(x.grad.split(n_embd, dim=2), x2.grad.split(n_embd, dim=2)):
                self.assertEqual(g, g_ref, atol=atol, rtol=rtol)

    @parametrize("fused_kernel", [SDPBackend.FLASH_ATTENTION])
    @parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
    @parametrize("mask_dim", [2, 4])
    @parametrize("bool_mask", [0, 1])
    @parametrize("train", [True, False])
    def test_scaled_dot_product_fused_attention_mask_vs_math_cpu(self, device, fused_kernel, dtype, mask_dim,
                                                                 bool_mask, train):
        batch_size, q_seq_len, kv_seq_len, n_head, head_dim = 2, 3, 6, 3, 4
        tol = Tolerances(5e-2, 5e-2) if dtype is torch.bfloat16 else Tolerances(1e-5, 5e-6)
        shapes = (itertools.product([q_seq_len, 1], [kv_seq_len, 1]) if mask_dim == 2 else
                  itertools.product([batch_size, 1], [n_head, 1], [q_seq_len, 1], [kv_seq_len, 1]))
        for mask_shape in shapes:
            mk = partial(rand_sdpa_tensor, device=device, dtype=dtype)
            q = mk(SdpaShape(batch_size, n_head, q_seq_len, head_dim))
            k = mk(SdpaShape(batch_size, n_head, kv_seq_len, head_dim))
            v = mk(SdpaShape(batch_size, n_head, kv_seq_len, head_dim))
            q2, k2, v2 = q.clone(), k.clone(), v.clone()
            if train:
                for t in (q, k, v, q2, k2, v2):
                    t.requires_grad_(True)
            if dtype is torch.bfloat16:
                q2, k2, v2 = q2.float(), k2.float(), v2.float()
            q = q.view(batch_size, q_seq_len, n_head, head_dim).transpose(1, 2)
            k = k.view(batch_size, kv_seq_len, n_head, head_dim).transpose(1, 2)
            v = v.view(batch_size, kv_seq_len, n_head, head_dim).transpose(1, 2)
            attn_mask = (torch.randint(0, 2, size=mask_shape, dtype=torch.bool, device=device) if bool_mask
                         else torch.randn(mask_shape, dtype=dtype, device=device))
            q2 = q2.view(batch_size, q_seq_len, n_head, head_dim).transpose(1, 2)
            k2 = k2.view(batch_size, kv_seq_len, n_head, head_dim).transpose(1, 2)
            v2 = v2.view(batch_size, kv_seq_len, n_head, head_dim).transpose(1, 2)
            with sdpa_kernel(backends=[fused_kernel]):
                actual = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=0.0, is_causal=False)
            with sdpa_kernel(backends=[SDPBackend.MATH]):
                if not bool_mask and dtype is torch.bfloat16:
                    attn_mask = attn_mask.float()
                math_ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=attn_mask, dropout_p=0.0,
                                                          is_causal=False)
            if dtype is torch.bfloat16:
                math_ref = math_ref.to(dtype)
            self.assertEqual(actual, math_ref, atol=tol.atol, rtol=tol.rtol)
            if train:
                actual.sum().backward()
                math_ref.sum().backward()
                # a fully masked row gives NaN in both (and NaN grads): assertEqual takes NaN == NaN
                for g, g_ref in ((q.grad, q2.grad), (k.grad, k2.grad), (v.grad, v2.grad)):
                    self.assertEqual(g, g_ref, atol=tol.atol, rtol=tol.rtol)

    def test_scaled_dot_product_fused_attention_with_inf(self, device):
        full = torch.full((16, 16), float("-inf"), device=device)
        mask = torch.triu(full, diagonal=1) + torch.tril(full, diagonal=-5)
        mk = partial(rand_sdpa_tensor, device=device, dtype=torch.float32)
        shape = SdpaShape(1, 16, 2, 8)
        q, k, v = mk(shape), mk(shape), mk(shape)
        with sdpa_kernel(backends=[SDPBackend.MATH]):
            math_ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        with sdpa_kernel(backends=[SDPBackend.FLASH_ATTENTION]):
            actual = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        self.assertEqual(math_ref, actual)

    @parametrize("kernel", [SDPBackend.MATH])
    def test_scaled_dot_product_attention_math_with_negative_scale(self, device, kernel):
        def ref(x):
            v1 = torch.matmul(x, x.transpose(-1, -2))
            v3 = (v1 / -0.0001).softmax(dim=-1)
            return torch.matmul(v3, x)

        x = torch.randn(1, 3, 8, 8, device=device)
        ref_result = ref(x)
        with sdpa_kernel(backends=[kernel]):
            sdp_math = F.scaled_dot_product_attention(x, x, x, scale=-1.0 / 0.0001)
        self.assertEqual(ref_result, sdp_math)


_SMALL_SHAPES = [(1, 2, 4, 4, 4), (1, 2, 4, 6, 8), (1, 2, 6, 4, 8), (1, 1, 3, 5, 3)]


class TestAttnBiasTI41(NNTestCase):
    def run_test(self, device, make_q, make_kv, attn_bias=None, forw_tolerances=None, grad_tolerances=None):
        query, key, value = make_q(), make_kv(), make_kv()
        query_prototype, key_prototype, value_prototype = query_key_value_clones(query, key, value)
        realized = attn_bias._materialize(device) if attn_bias is not None else None
        pytorch_output = scaled_dot_product_attention(query, key, value, attn_mask=realized, dropout_p=0.0,
                                                      is_causal=False)
        sdpa_output = scaled_dot_product_attention(query_prototype, key_prototype, value_prototype,
                                                   attn_mask=attn_bias, dropout_p=0.0, is_causal=False, scale=None)
        dOut = torch.randn_like(pytorch_output)
        pytorch_output.backward(dOut)
        sdpa_output.backward(dOut)
        forw_tolerances = forw_tolerances or Tolerances(atol=None, rtol=None)
        grad_tolerances = grad_tolerances or Tolerances(atol=None, rtol=None)
        torch.testing.assert_close(pytorch_output, sdpa_output, rtol=forw_tolerances.rtol, atol=forw_tolerances.atol)
        for a, b in ((query.grad, query_prototype.grad), (key.grad, key_prototype.grad),
                     (value.grad, value_prototype.grad)):
            torch.testing.assert_close(a, b, rtol=grad_tolerances.rtol, atol=grad_tolerances.atol)

    @parametrize("causal_variant", [CausalVariant.UPPER_LEFT, CausalVariant.LOWER_RIGHT])
    @parametrize("shape", _SMALL_SHAPES)
    def test_causal_variants(self, device, causal_variant, shape):
        mk = partial(torch.rand, device=device, dtype=torch.float32, requires_grad=True)
        bsz, num_heads, seq_len_q, seq_len_kv, head_dim = shape
        make_q = partial(mk, SdpaShape(bsz, num_heads, seq_len_q, head_dim))
        make_kv = partial(mk, SdpaShape(bsz, num_heads, seq_len_kv, head_dim))
        if causal_variant == CausalVariant.LOWER_RIGHT and seq_len_q > seq_len_kv:
            self.skipTest("Lower right causal mask will produce NaNs in the output when seq_len_q > seq_len_kv!")
        attn_bias = (causal_upper_left(seq_len_q, seq_len_kv) if causal_variant == CausalVariant.UPPER_LEFT
                     else causal_lower_right(seq_len_q, seq_len_kv))
        with sdpa_kernel(backends=[SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH,
                                   SDPBackend.CUDNN_ATTENTION]):
            self.run_test(device, make_q, make_kv, attn_bias, Tolerances(1e-3, 1e-3), Tolerances(5e-3, 5e-3))

    @parametrize("shape", _SMALL_SHAPES)
    def test_is_causal_equals_upper_left(self, device, shape):
        mk = partial(torch.rand, device=device, dtype=torch.float32, requires_grad=True)
        bsz, num_heads, seq_len_q, seq_len_kv, head_dim = shape
        query = mk(SdpaShape(bsz, num_heads, seq_len_q, head_dim))
        key = mk(SdpaShape(bsz, num_heads, seq_len_kv, head_dim))
        value = mk(SdpaShape(bsz, num_heads, seq_len_kv, head_dim))
        attn_bias = causal_upper_left(seq_len_q, seq_len_kv)
        out_attn_bias = scaled_dot_product_attention(query, key, value, attn_mask=attn_bias, dropout_p=0.0)
        out_is_causal = scaled_dot_product_attention(query, key, value, is_causal=True, dropout_p=0.0)
        torch.testing.assert_close(out_attn_bias, out_is_causal, rtol=1e-3, atol=1e-3)

    def test_is_causal_and_mask_fails(self, device):
        mk = partial(torch.rand, SdpaShape(2, 2, 4, 4), device=device, dtype=torch.float16, requires_grad=True)
        query, key, value = mk(), mk(), mk()
        attn_bias = causal_upper_left(4, 4)
        with self.assertRaisesRegex(ValueError, "CausalBias should not be used with causal=True"):
            scaled_dot_product_attention(query, key, value, attn_mask=attn_bias, is_causal=True, dropout_p=0.0)


# ~~~ test/nn/test_multihead_attention.py ~~~
class TestMultiheadAttentionNNTI41(NNTestCase):
    @parametrize("average_attn_weights", [True, False])
    def test_multihead_attention(self, device, average_attn_weights):
        rng = np.random.RandomState(41)

        def _scaled_dot_attn_ref(Q, K, V, dims, unseen_mask=None, key_padding_mask=None):
            QKT = _batchmatmul(Q, np.transpose(K, axes=[0, 1, 3, 2]) / np.sqrt(dims[3], dtype=np.float32))
            b1, b2, s1, s2 = QKT.shape
            if unseen_mask is not None or key_padding_mask is not None:
                for i, j, m, n in itertools.product(range(b1), range(b2), range(s1), range(s2)):
                    if unseen_mask is not None and unseen_mask[m][n] == 0:
                        QKT[i, j, m, n] = -np.inf
                    if key_padding_mask is not None and key_padding_mask[i][n]:
                        QKT[i, j, m, n] = -np.inf
            reference = _softmax(QKT)
            ref_attn_weight = reference
            if average_attn_weights:
                ref_attn_weight = np.sum(ref_attn_weight, axis=1) / b2
            return _batchmatmul(reference, V), ref_attn_weight

        def _batchmatmul(a, b):
            assert a.shape[:2] == b.shape[:2]
            return np.matmul(a, b).astype(np.float32)

        def _softmax(x):
            with np.errstate(invalid="ignore"):
                e_x = np.exp(x - np.amax(x, axis=-1, keepdims=True))
                return (e_x / np.sum(e_x, axis=-1, keepdims=True)).astype(np.float64)

        def _split_heads_ref(X, dims, nheads, d_head):
            X_split = np.reshape(X, dims[:2] + [nheads, d_head])
            return np.reshape(np.transpose(X_split, [0, 2, 1, 3]), [dims[0], nheads, dims[1], d_head])

        def _combine_heads_ref(X, dims, nheads, d_head):
            return np.reshape(np.transpose(X, [0, 2, 1, 3]), dims[:2] + [nheads * d_head])

        def _fc(X, X_weight, X_bias):
            return np.matmul(X, np.transpose(X_weight.detach().numpy())) + X_bias.detach().numpy()

        def _multihead_attn_test_helper(add_key_padding_mask=False, add_bias_kv=False, add_zero_attn=False,
                                        saved_kv=False, same_embed_dim=False):
            for _ in range(1):
                batch_sz, seq_len = (random.randint(2, 3) for _ in range(2))
                d_head = random.randint(3, 4)
                nheads = random.randint(1, 2) * 2
                d_model = d_head * nheads
                kv_dim = d_model if same_embed_dim else random.randint(5, 6)
                dims = [batch_sz, seq_len, kv_dim]

                saved_k = saved_k_tensor = saved_v = saved_v_tensor = None
                if saved_kv:
                    saved_k = rng.rand(batch_sz * nheads, seq_len, d_head)
                    saved_k_tensor = torch.from_numpy(saved_k).to(torch.get_default_dtype())
                    saved_v = rng.rand(batch_sz * nheads, seq_len, d_head)
                    saved_v_tensor = torch.from_numpy(saved_v).to(torch.get_default_dtype())

                key_padding_mask = key_padding_mask_tensor = None
                if add_key_padding_mask:
                    seq_mask = rng.randint(0, 2, (1, seq_len))
                    key_padding_mask = np.repeat(seq_mask, batch_sz, axis=0) == 1
                    key_padding_mask_tensor = torch.from_numpy(key_padding_mask)
                decoder_state = rng.rand(batch_sz, d_model)
                K = rng.rand(*dims)
                V = K
                Q = np.expand_dims(decoder_state, 1)
                attn_mask = rng.randint(0, 2, size=(1, seq_len))
                attn_mask_tensor = torch.from_numpy(attn_mask).float()
                attn_mask_tensor.masked_fill_(attn_mask_tensor == 0, float("-inf"))
                attn_mask_tensor.masked_fill_(attn_mask_tensor > 0, float("0.0"))

                decoder_state_tensor = torch.from_numpy(decoder_state).to(torch.get_default_dtype())
                source_hid_tensor = torch.from_numpy(K).to(torch.get_default_dtype()).transpose(0, 1)

                mha = nn.MultiheadAttention(d_model, nheads, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                            kdim=kv_dim, vdim=kv_dim)
                bias_k = mha.bias_k.detach().numpy() if add_bias_kv else None
                bias_v = mha.bias_v.detach().numpy() if add_bias_kv else None
                _Q = decoder_state_tensor.unsqueeze(1).transpose(0, 1)
                _K = _V = source_hid_tensor
                common = dict(static_k=saved_k_tensor, static_v=saved_v_tensor,
                              average_attn_weights=average_attn_weights, is_causal=False)
                if mha._qkv_same_embed_dim:
                    result, result_weight = F.multi_head_attention_forward(
                        _Q, _K, _V, d_model, nheads, mha.in_proj_weight, mha.in_proj_bias, mha.bias_k, mha.bias_v,
                        mha.add_zero_attn, mha.dropout, mha.out_proj.weight, mha.out_proj.bias, mha.training,
                        key_padding_mask_tensor, True, attn_mask_tensor, **common)
                else:
                    result, result_weight = F.multi_head_attention_forward(
                        _Q, _K, _V, d_model, nheads, None, mha.in_proj_bias, mha.bias_k, mha.bias_v,
                        mha.add_zero_attn, mha.dropout, mha.out_proj.weight, mha.out_proj.bias, mha.training,
                        key_padding_mask_tensor, True, attn_mask_tensor, True, mha.q_proj_weight,
                        mha.k_proj_weight, mha.v_proj_weight, **common)
                result = result.squeeze(0).detach().numpy()

                if mha._qkv_same_embed_dim:
                    q_w, k_w, v_w = (mha.in_proj_weight[:d_model], mha.in_proj_weight[d_model:2 * d_model],
                                     mha.in_proj_weight[2 * d_model:])
                else:
                    q_w, k_w, v_w = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
                Q_fc = _fc(Q, q_w, mha.in_proj_bias[:d_model])
                K_fc = _fc(K, k_w, mha.in_proj_bias[d_model:2 * d_model])
                V_fc = _fc(V, v_w, mha.in_proj_bias[2 * d_model:])

                if add_bias_kv:
                    K_fc = np.concatenate((K_fc, np.repeat(bias_k, K_fc.shape[0], axis=0)), axis=1)
                    V_fc = np.concatenate((V_fc, np.repeat(bias_v, V_fc.shape[0], axis=0)), axis=1)
                    attn_mask = np.concatenate((attn_mask, np.ones([1, 1])), axis=1)
                    if key_padding_mask is not None:
                        key_padding_mask = np.concatenate((key_padding_mask, np.full((batch_sz, 1), False)), axis=1)
                    dims[1] += 1
                Q_split = _split_heads_ref(Q_fc, [batch_sz, 1, d_model], nheads, d_head)
                K_split = (np.reshape(saved_k, [dims[0], nheads, dims[1], d_head]) if saved_k is not None
                           else _split_heads_ref(K_fc, dims, nheads, d_head))
                V_split = (np.reshape(saved_v, [dims[0], nheads, dims[1], d_head]) if saved_v is not None
                           else _split_heads_ref(V_fc, dims, nheads, d_head))
                if add_zero_attn:
                    dims[1] += 1
                    zeros = np.zeros([K_split.shape[0], K_split.shape[1], 1, K_split.shape[3]])
                    K_split = np.concatenate((K_split, zeros), axis=2)
                    V_split = np.concatenate((V_split, zeros), axis=2)
                    attn_mask = np.concatenate((attn_mask, np.ones([1, 1])), axis=1)
                    if key_padding_mask is not None:
                        key_padding_mask = np.concatenate((key_padding_mask, np.full((batch_sz, 1), False)), axis=1)
                attn_heads, ref_attn_weight = _scaled_dot_attn_ref(Q_split, K_split, V_split, Q_split.shape,
                                                                   unseen_mask=attn_mask,
                                                                   key_padding_mask=key_padding_mask)
                combined = _combine_heads_ref(attn_heads, [batch_sz, 1], nheads, d_head)
                reference = np.squeeze(_fc(combined, mha.out_proj.weight, mha.out_proj.bias), axis=1)
                self.assertEqual(tuple(result.shape), (batch_sz, d_model))
                np.testing.assert_allclose(result, reference, atol=1e-5)
                result_weight = result_weight.detach().numpy()
                self.assertEqual(tuple(result_weight.shape), tuple(ref_attn_weight.shape))
                np.testing.assert_allclose(result_weight, ref_attn_weight, atol=1e-5)

        _multihead_attn_test_helper(add_zero_attn=True)
        _multihead_attn_test_helper(add_bias_kv=True)
        _multihead_attn_test_helper()
        _multihead_attn_test_helper(add_key_padding_mask=True)
        _multihead_attn_test_helper(saved_kv=True)
        _multihead_attn_test_helper(add_key_padding_mask=True, add_bias_kv=True, add_zero_attn=True)
        _multihead_attn_test_helper(add_key_padding_mask=True, add_zero_attn=True, saved_kv=True)
        with self.assertRaisesRegex(AssertionError, "bias cannot be added to static key."):
            _multihead_attn_test_helper(add_key_padding_mask=True, add_bias_kv=True, add_zero_attn=True,
                                        saved_kv=True)
        _multihead_attn_test_helper(add_key_padding_mask=True, add_zero_attn=True, saved_kv=True,
                                    same_embed_dim=True)

    def test_multihead_attn_3d_attn_mask(self, device):
        embed_dim, num_heads, batch_size, src_len, tgt_len = 8, 4, 3, 3, 2
        query = torch.rand(batch_size, tgt_len, embed_dim)
        key = torch.rand(batch_size, src_len, embed_dim)
        value = key
        attn_mask = torch.randint(0, 2, (batch_size, tgt_len, src_len)).float()
        attn_mask = attn_mask.masked_fill(attn_mask == 0, float("-inf")).masked_fill(attn_mask == 1, 0.0)
        mta_model = nn.MultiheadAttention(embed_dim, num_heads)
        attn_mask_3d = torch.repeat_interleave(attn_mask, num_heads, dim=0)
        output_3d = mta_model(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
                              attn_mask=attn_mask_3d)[0].transpose(0, 1)
        for i in range(batch_size):
            output_2d = mta_model(query[i].unsqueeze(0).transpose(0, 1), key[i].unsqueeze(0).transpose(0, 1),
                                  value[i].unsqueeze(0).transpose(0, 1), attn_mask=attn_mask[i])[0]
            self.assertEqual(output_3d[i].unsqueeze(0).transpose(0, 1), output_2d)

    def test_multihead_attn_no_bias(self, device):
        mha = nn.MultiheadAttention(8, 4, bias=False)
        self.assertIsNone(mha.in_proj_bias)
        self.assertIsNone(mha.out_proj.bias)

    def _test_multihead_attn_invalid_shape_impl(self, mha, need_weights=True, kd=4):
        # batched (3-D) query: key/value of kd x kd when 2-D
        query, key, value = torch.randn(4, 4, 4), torch.randn(4, 4, 4), torch.randn(4, 4, 4)
        kw = {} if need_weights else dict(need_weights=False)
        with self.assertRaisesRegex(AssertionError, "expected `key` and `value` to be 3-D but found 2-D and 3-D "
                                                    "tensors respectively"):
            mha(query, torch.randn(kd, kd), value, **kw)
        with self.assertRaisesRegex(AssertionError, "expected `key` and `value` to be 3-D but found 3-D and 2-D "
                                                    "tensors respectively"):
            mha(query, key, torch.randn(kd, kd), **kw)
        with self.assertRaisesRegex(AssertionError, "expected `key_padding_mask` to be `None` or 2-D but found 1-D "
                                                    "tensor instead"):
            mha(query, key, value, key_padding_mask=torch.tensor([False, False, True, True][:kd], dtype=torch.bool),
                **kw)
        with self.assertRaisesRegex(AssertionError, "expected `attn_mask` to be `None`, 2-D or 3-D but found 1-D "
                                                    "tensor instead"):
            mha(query, key, value, attn_mask=torch.tensor([False, False, True, True][:kd], dtype=torch.bool), **kw)

        # unbatched (2-D) query
        query, key, value = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
        with self.assertRaisesRegex(AssertionError, "expected `key` and `value` to be 2-D but found 3-D and 2-D "
                                                    "tensors respectively"):
            mha(query, torch.randn(4, 4, 4), value)
        with self.assertRaisesRegex(AssertionError, "expected `key` and `value` to be 2-D but found 2-D and 3-D "
                                                    "tensors respectively"):
            mha(query, key, torch.randn(4, 4, 4))
        with self.assertRaisesRegex(AssertionError, "expected `key_padding_mask` to be `None` or 1-D but found 2-D "
                                                    "tensor instead"):
            mha(query, key, value, key_padding_mask=torch.tensor([[False, False, True, True] * 2], dtype=torch.bool))
        with self.assertRaisesRegex(AssertionError, "expected `attn_mask` to be `None`, 2-D or 3-D but found 1-D "
                                                    "tensor instead"):
            mha(query, key, value, attn_mask=torch.tensor([False, False, True, True], dtype=torch.bool))
        with self.assertRaisesRegex(AssertionError, r"Expected `attn_mask` shape to be \(4, 4, 4\)"):
            mha(query, key, value, attn_mask=torch.randn(5, 4, 4).bernoulli_().to(torch.bool))

    def test_multihead_attn_invalid_shape(self, device):
        mha = nn.MultiheadAttention(4, 4)
        self._test_multihead_attn_invalid_shape_impl(mha)
        with torch.no_grad():
            self._test_multihead_attn_invalid_shape_impl(mha.eval())

    def test_multihead_attn_fast_path_invalid_shape(self, device):
        mha = nn.MultiheadAttention(4, 4, batch_first=True).eval()
        with torch.no_grad():
            self._test_multihead_attn_invalid_shape_impl(mha, need_weights=False, kd=3)

    def test_multihead_self_attn_two_masks_fast_path(self, device):
        with torch.no_grad():
            embed_dim, num_heads, batch_size, src_len = 14, 7, 8, 5
            query = value = key = torch.rand(batch_size, src_len, embed_dim).to(device)
            attn_mask = torch.randint(0, 2, (src_len, src_len)).bool().to(device)
            key_padding_mask = torch.randint(0, 2, (batch_size, src_len)).bool().to(device)
            attn_mask_expanded = attn_mask.reshape(1, 1, src_len, src_len).expand(batch_size, num_heads, src_len,
                                                                                  src_len)
            key_padding_mask_expanded = key_padding_mask.reshape(batch_size, 1, 1, src_len).expand(
                batch_size, num_heads, src_len, src_len)
            merged_mask = attn_mask_expanded.logical_or(key_padding_mask_expanded)
            mta_model = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True, device=device)
            mta_model.training = False
            result_fast_path, _ = mta_model(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask)
            result_ref, _ = F.multi_head_attention_forward(
                query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), embed_dim, num_heads,
                mta_model.in_proj_weight, mta_model.in_proj_bias, mta_model.bias_k, mta_model.bias_v,
                mta_model.add_zero_attn, mta_model.dropout, mta_model.out_proj.weight, mta_model.out_proj.bias,
                training=mta_model.training, key_padding_mask=key_padding_mask, need_weights=False,
                attn_mask=attn_mask, use_separate_proj_weight=False, q_proj_weight=mta_model.q_proj_weight,
                k_proj_weight=mta_model.k_proj_weight, v_proj_weight=mta_model.v_proj_weight,
                average_attn_weights=False)
            result_ref = result_ref.transpose(0, 1)
            # fully masked rows are NaN: left out of the comparison
            mask_out = merged_mask[:, 0, :, :].all(-1, keepdim=True).expand(batch_size, src_len, embed_dim)
            self.assertEqual(result_fast_path.masked_fill(mask_out, 0), result_ref.masked_fill(mask_out, 0))

    @dtypes(torch.double)
    def test_multihead_attn_fast_path_query_and_bias_have_different_dtypes(self, device, dtype):
        with torch.no_grad():
            mha = nn.MultiheadAttention(4, 4, batch_first=True, dtype=dtype, device=device).eval()
            mha.in_proj_bias = nn.Parameter(mha.in_proj_bias.to(torch.half).to(device))
            query = torch.randn(4, 4, 4, dtype=dtype, device=device)
            mha(query, query, query)

    @dtypes(torch.double)
    def test_multihead_attn_fast_path_small_test(self, device, dtype):
        with torch.no_grad():
            mha = nn.MultiheadAttention(4, 4, batch_first=True, dtype=dtype, device=device).eval()
            query = torch.randn(4, 4, 4, dtype=dtype, device=device)
            mha(query, query, query)

    @dtypes(torch.double)
    def test_fast_path_check_with_mask_does_not_break_in_compile(self, device, dtype):
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, batch_first=True, dropout=0.1, device=device,
                                           dtype=dtype, dim_feedforward=32)
        encoder = nn.TransformerEncoder(layer, num_layers=2).eval()
        encoder = torch.compile(encoder, fullgraph=True)
        x = torch.randn(1, 7, 16, dtype=dtype, device=device)
        pad_mask = torch.rand(1, 7, device=device) > 0.5
        pad_mask[..., 0] = True
        encoder(x, mask=None, src_key_padding_mask=pad_mask)

    @dtypes(torch.double)
    def test_multihead_attn_in_proj_bias_none(self, device, dtype):
        with torch.no_grad():
            mha = nn.MultiheadAttention(2, 2, bias=False, dtype=dtype, device=device)
            query = torch.rand(2, 2, 2, dtype=dtype, device=device)
            mha(query, query, query)

    @dtypes(torch.double)
    def test_multihead_attn_in_proj_weight_none(self, device, dtype):
        with torch.no_grad():
            mha = nn.MultiheadAttention(4, 4, vdim=2, kdim=2, dtype=dtype, device=device)
            query = torch.rand(4, 4, 4, dtype=dtype, device=device)
            key = torch.rand(4, 4, 2, dtype=dtype, device=device)
            mha(query, key, key)


class TestFixesTI41(NNTestCase):
    """Probes of the divergences this port found (fixed in tracegrad; each runs on torch too)."""

    def test_sdpa_kernel_math_refuses_causal_with_mask(self, device):
        # torch's fused CPU kernel takes is_causal with an attn_mask for 4-D inputs; restricted to
        # the math backend it refuses the pair (tracegrad ignored the restriction)
        q = torch.randn(2, 2, 4, 6, device=device)
        k = torch.randn(2, 2, 3, 6, device=device)
        mask = torch.ones(4, 3, dtype=torch.bool, device=device).tril()
        both = F.scaled_dot_product_attention(q, k, k, mask, 0.0, True)
        self.assertEqual(both, F.scaled_dot_product_attention(q, k, k, None, 0.0, True))
        for backends in ([SDPBackend.MATH], SDPBackend.MATH):
            with sdpa_kernel(backends=backends):
                with self.assertRaisesRegex(RuntimeError, "Explicit attn_mask should not be set when is_causal=True"):
                    F.scaled_dot_product_attention(q, k, k, mask, 0.0, True)
                self.assertEqual(F.scaled_dot_product_attention(q, k, k, None, 0.0, True), both)
        with sdpa_kernel(backends=[SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
            self.assertEqual(F.scaled_dot_product_attention(q, k, k, mask, 0.0, True), both)

    def test_sdpa_shape_errors(self, device):
        def sdpa(qs, ks, vs=None):
            return F.scaled_dot_product_attention(torch.randn(qs, device=device), torch.randn(ks, device=device),
                                                  torch.randn(vs or ks, device=device))
        # batch / head dims that do not broadcast: torch's broadcasting words
        with self.assertRaisesRegex(RuntimeError, r"The size of tensor a \(2\) must match the size of tensor b "
                                                  r"\(3\) at non-singleton dimension 0"):
            sdpa((2, 2, 3, 4), (3, 2, 5, 4))
        with self.assertRaisesRegex(RuntimeError, r"The size of tensor a \(4\) must match the size of tensor b "
                                                  r"\(2\) at non-singleton dimension 1"):
            sdpa((2, 4, 3, 4), (2, 2, 5, 4))    # grouped heads without enable_gqa
        self.assertEqual(sdpa((2, 2, 3, 4), (1, 2, 5, 4)).shape, (2, 2, 3, 4))   # broadcast batch
        self.assertEqual(sdpa((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 7)).shape, (2, 2, 3, 7))
        # query and key of different head sizes (torch: its bmm's words)
        self.assertRaises(RuntimeError, lambda: sdpa((2, 2, 3, 4), (2, 2, 5, 3)))

    def test_sdpa_half_precision_with_float_mask(self, device):
        # a float32 mask with a bfloat16 query is taken (torch's kernels accumulate in float32);
        # tracegrad's bfloat16 matmul refused the float32 mask
        q, k, v = (torch.randn(2, 2, 4, 8, device=device).bfloat16() for _ in range(3))
        mask = torch.randn(4, 4, device=device)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        self.assertEqual(out.dtype, torch.bfloat16)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
        self.assertEqual(out.float(), ref, atol=1e-2, rtol=0)

    def test_mha_key_padding_mask_and_static_kv_words(self, device):
        mha = nn.MultiheadAttention(8, 2).to(device)
        q, k = torch.randn(3, 2, 8, device=device), torch.randn(4, 2, 8, device=device)
        with self.assertRaisesRegex(AssertionError, r"^Expected key_padded_mask.shape\[0\] to be 2, but got 3$"):
            mha(q, k, k, key_padding_mask=torch.zeros(3, 4, dtype=torch.bool, device=device))
        with self.assertRaisesRegex(AssertionError, r"^Expected key_padded_mask.shape\[1\] to be 4, but got 5$"):
            mha(q, k, k, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool, device=device))

        def static(sk=None, sv=None):
            return F.multi_head_attention_forward(
                q, k, k, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0, mha.out_proj.weight,
                mha.out_proj.bias, static_k=sk, static_v=sv)
        with self.assertRaisesRegex(AssertionError, r"^expecting static_k.size\(0\) of 4, but got 3$"):
            static(sk=torch.zeros(3, 4, 4, device=device))
        with self.assertRaisesRegex(AssertionError, r"^expecting static_k.size\(2\) of 4, but got 3$"):
            static(sk=torch.zeros(4, 4, 3, device=device))
        with self.assertRaisesRegex(AssertionError, r"^expecting static_v.size\(0\) of 4, but got 2$"):
            static(sv=torch.zeros(2, 4, 4, device=device))
        out, w = static(sk=torch.randn(4, 6, 4, device=device), sv=torch.randn(4, 6, 4, device=device))
        self.assertEqual((out.shape, w.shape), ((3, 2, 8), (2, 3, 6)))


class TestTransformerSemanticsTI41(NNTestCase):
    """The brief's semantics the file checks only in passing, each against a formula built from
    the library's own primitives (so the oracle run checks the formula on torch)."""

    def _cos(self, m):
        return _cos_fill(m)

    @parametrize("norm_first", [False, True])
    @parametrize("activation", ["relu", "gelu", "callable"])
    def test_encoder_layer_formula(self, device, norm_first, activation):
        act = {"relu": "relu", "gelu": "gelu", "callable": torch.tanh}[activation]
        fn = {"relu": F.relu, "gelu": F.gelu, "callable": torch.tanh}[activation]
        layer = _cos_fill(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation=act, norm_first=norm_first,
                                                     batch_first=True).to(device))
        x = torch.randn(2, 3, 4, device=device)
        kpm = torch.tensor([[False, False, True], [False, False, False]], device=device)

        def sa(t):
            return layer.self_attn(t, t, t, key_padding_mask=kpm, need_weights=False)[0]

        def ff(t):
            return layer.linear2(fn(layer.linear1(t)))
        if norm_first:
            h = x + sa(layer.norm1(x))
            ref = h + ff(layer.norm2(h))
        else:
            h = layer.norm1(x + sa(x))
            ref = layer.norm2(h + ff(h))
        out = layer(x, src_key_padding_mask=kpm)
        self.assertEqual(out, ref)
        layer.eval()
        with torch.no_grad():
            # the eval / no-grad path gives the training path's values (no dropout here); the padded
            # token's output is not guaranteed there (the nested fast path drops it)
            self.assertEqual(layer(x, src_key_padding_mask=kpm)[~kpm], ref[~kpm], atol=1e-5, rtol=1e-5)

    @parametrize("norm_first", [False, True])
    def test_decoder_layer_formula(self, device, norm_first):
        layer = _cos_fill(nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, norm_first=norm_first).to(device))
        tgt, mem = torch.randn(3, 2, 4, device=device), torch.randn(5, 2, 4, device=device)
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(3, device=device)
        mkpm = torch.tensor([[False] * 5, [False, False, False, True, True]], device=device)

        def sa(t):
            return layer.self_attn(t, t, t, attn_mask=tgt_mask, need_weights=False)[0]

        def ca(t):
            return layer.multihead_attn(t, mem, mem, key_padding_mask=mkpm, need_weights=False)[0]

        def ff(t):
            return layer.linear2(F.relu(layer.linear1(t)))
        if norm_first:
            h = tgt + sa(layer.norm1(tgt))
            h = h + ca(layer.norm2(h))
            ref = h + ff(layer.norm3(h))
        else:
            h = layer.norm1(tgt + sa(tgt))
            h = layer.norm2(h + ca(h))
            ref = layer.norm3(h + ff(h))
        self.assertEqual(layer(tgt, mem, tgt_mask=tgt_mask, memory_key_padding_mask=mkpm), ref)
        self.assertEqual(layer(tgt, mem, tgt_mask=tgt_mask, memory_key_padding_mask=mkpm, tgt_is_causal=True), ref)

    def test_generate_square_subsequent_mask(self, device):
        m = nn.Transformer.generate_square_subsequent_mask(4, device=device)
        self.assertEqual(m.dtype, torch.get_default_dtype())
        self.assertEqual(m, torch.zeros(4, 4, device=device).masked_fill(
            torch.ones(4, 4, dtype=torch.bool, device=device).triu(1), float("-inf")))
        self.assertEqual(nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64).dtype, torch.float64)
        self.assertEqual(nn.Transformer.generate_square_subsequent_mask(0).shape, (0, 0))

    def test_transformer_model(self, device):
        model = _cos_fill(nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True).to(device))
        src, tgt = torch.randn(2, 5, 4, device=device), torch.randn(2, 3, 4, device=device)
        tgt_mask = model.generate_square_subsequent_mask(3, device=device)
        out = model(src, tgt, tgt_mask=tgt_mask)
        memory = model.encoder(src)
        self.assertEqual(out, model.decoder(tgt, memory, tgt_mask=tgt_mask))
        with self.assertRaisesRegex(RuntimeError, "the batch number of src and tgt must be equal"):
            model(src, tgt[:1])
        with self.assertRaisesRegex(RuntimeError, "the feature number of src and tgt must be equal to d_model"):
            model(src[..., :3], tgt)

    @parametrize("need_weights", [True, False])
    @parametrize("average_attn_weights", [True, False])
    def test_mha_weights(self, device, need_weights, average_attn_weights):
        mha = nn.MultiheadAttention(8, 2, dropout=0.5).to(device).eval()   # no dropout in eval
        q, k = torch.randn(3, 2, 8, device=device), torch.randn(5, 2, 8, device=device)
        am = torch.zeros(3, 5, dtype=torch.bool, device=device)
        am[1, :] = True     # query 1 sees no key
        out, w = mha(q, k, k, attn_mask=am, need_weights=need_weights, average_attn_weights=average_attn_weights)
        self.assertEqual(out.shape, (3, 2, 8))
        # the math of one head by hand: in-projection, scaled scores, softmax, out-projection
        wq, wk, wv = mha.in_proj_weight.chunk(3)
        bq, bk, bv = mha.in_proj_bias.chunk(3)

        def heads(t, L):
            return t.reshape(L, 2 * 2, 4).transpose(0, 1)
        qh, kh, vh = heads(F.linear(q, wq, bq), 3), heads(F.linear(k, wk, bk), 5), heads(F.linear(k, wv, bv), 5)
        scores = (qh @ kh.transpose(1, 2) / 2.0).masked_fill(am, float("-inf"))
        # the fully masked query: torch 2.13 gives it NaN weights (and a NaN output) when it returns
        # the weights, zero weights (the output is the out-projection's bias) when it does not
        p = scores.softmax(-1) if need_weights else scores.softmax(-1).nan_to_num(0.0)
        ref = F.linear((p @ vh).transpose(0, 1).reshape(3, 2, 8), mha.out_proj.weight, mha.out_proj.bias)
        self.assertEqual(out, ref)
        self.assertEqual(out[1].isnan().all().item(), need_weights)
        if not need_weights:
            self.assertEqual(out[1], mha.out_proj.bias.expand(2, 8))
            self.assertIsNone(w)
            return
        p = p.view(2, 2, 3, 5)
        self.assertEqual(w, p.mean(1) if average_attn_weights else p)

    def test_sdpa_gqa_and_scale(self, device):
        q, k, v = (torch.randn(2, 4, 3, 4, device=device), torch.randn(2, 2, 5, 4, device=device),
                   torch.randn(2, 2, 5, 6, device=device))
        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=0.3)
        ref = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), scale=0.3)
        self.assertEqual(out, ref)
        self.assertEqual(ref, (q @ k.repeat_interleave(2, 1).transpose(-2, -1) * 0.3).softmax(-1)
                         @ v.repeat_interleave(2, 1))
        with self.assertRaisesRegex(RuntimeError, "Number of heads in key and value must divide the number of heads"):
            F.scaled_dot_product_attention(torch.randn(2, 3, 3, 4), k, v, enable_gqa=True)
        # dropout_p ignored by nothing: p=1 drops every weight
        self.assertEqual(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0, enable_gqa=True),
                         torch.zeros(2, 4, 3, 6))


@pytest.mark.skipif(_ORACLE, reason="tracegrad.compile's programs (the oracle run is torch itself)")
def test_compiled_attention():
    """Compiled equals eager for sdpa with a causal bias (test_causal_variants_compile's program,
    values and grads), a bfloat16 query with a float32 mask, and a TransformerEncoderLayer with
    norm_first; a compiled sdpa refuses is_causal with a mask under sdpa_kernel(MATH) as eager."""
    q = torch.rand(1, 2, 3, 4, requires_grad=True)
    k = torch.rand(1, 2, 5, 4, requires_grad=True)
    bias = causal_lower_right(3, 5)
    f = torch.compile(lambda a, b: scaled_dot_product_attention(a, b, b, attn_mask=bias))
    out = f(q, k)
    out.sum().backward()
    gq, gk = q.grad.clone(), k.grad.clone()
    q.grad = k.grad = None
    ref = scaled_dot_product_attention(q, k, k, attn_mask=bias._materialize())
    ref.sum().backward()
    assert torch.allclose(out, ref, atol=1e-6) and torch.allclose(gq, q.grad, atol=1e-6)
    assert torch.allclose(gk, k.grad, atol=1e-6)
    qb, mask = torch.randn(1, 2, 3, 4).bfloat16(), torch.randn(3, 3)
    g = torch.compile(lambda a, m: scaled_dot_product_attention(a, a, a, attn_mask=m))
    assert torch.equal(g(qb, mask), scaled_dot_product_attention(qb, qb, qb, attn_mask=mask))
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, norm_first=True, batch_first=True)
    x = torch.randn(2, 3, 4)
    assert torch.allclose(torch.compile(layer)(x), layer(x), atol=1e-6)
    h = torch.compile(lambda a, m: scaled_dot_product_attention(a, a, a, attn_mask=m, is_causal=True))
    a, m = torch.randn(1, 2, 3, 4), torch.ones(3, 3, dtype=torch.bool)
    assert torch.allclose(h(a, m), scaled_dot_product_attention(a, a, a, is_causal=True), atol=1e-6)
    with sdpa_kernel(SDPBackend.MATH):   # the same program, now under the math backend
        with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
            h(a, m)


_cdt.instantiate_device_type_tests(TestTransformersTI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestSDPAFailureModesTI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestSDPATI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestAttnBiasTI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestMultiheadAttentionNNTI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestFixesTI41, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestTransformerSemanticsTI41, globals(), only_for="cpu")


test_oracle_torch_passes = oracle_test("TI41_ORACLE", __file__)
