"""Attention and transformer layers: mirror ``torch.nn.MultiheadAttention``,
``torch.nn.TransformerEncoderLayer`` and ``torch.nn.TransformerEncoder`` (torch's math path;
torch's fused inference fast path gives the same values up to rounding)."""
from __future__ import annotations

import copy

import tracegrad
from tracegrad import _state

from .. import functional as F
from ..functional import _canonical_mask, multi_head_attention_forward
from .. import init
from ..parameter import Parameter
from .activation import GELU, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module
from .normalization import LayerNorm
from ..._ops.warn import warn as _warn


class MultiheadAttention(Module):
    """Mirrors ``torch.nn.MultiheadAttention``: ``(attn_output, attn_weights)`` for query ``(L, N, E)``
    (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``. Masks: ``attn_mask`` ``(L, S)`` or
    ``(N*heads, L, S)`` and ``key_padding_mask`` ``(N, S)``, bool (True = ignore) or float (added).
    ``need_weights=False`` returns ``None`` weights (scaled_dot_product_attention path).
    Initialisation as torch: xavier_uniform_ in_proj, zero biases. AssertionError when
    embed_dim is not divisible by num_heads."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim, "embed_dim must be divisible by num_heads"
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(tracegrad.empty((embed_dim, embed_dim), dtype=dtype))
            self.k_proj_weight = Parameter(tracegrad.empty((embed_dim, self.kdim), dtype=dtype))
            self.v_proj_weight = Parameter(tracegrad.empty((embed_dim, self.vdim), dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(tracegrad.empty((3 * embed_dim, embed_dim), dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(tracegrad.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(tracegrad.empty((1, 1, embed_dim), dtype=dtype))
            self.bias_v = Parameter(tracegrad.empty((1, 1, embed_dim), dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        # torch's fused self-attention kernel with bool masks softmaxes a query whose every key is
        # masked over all -inf: NaN where the math path (ours; torch's with float masks or outside
        # its fast-path conditions) gives 0. With need_weights the math path is NaN there already.
        nan_rows = (not need_weights and (attn_mask is not None or key_padding_mask is not None)
                    and all(m is None or m.dtype is tracegrad.bool for m in (attn_mask, key_padding_mask))
                    and self._fast_path(query, key, value))
        out, w = self._forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                               is_causal)
        if nan_rows:
            full = _fully_masked_queries(attn_mask, key_padding_mask, query.shape[0], self.num_heads)
            if full is not None:
                out = out.masked_fill(full.unsqueeze(-1), float("nan"))
        return out, w

    def _fast_path(self, query, key, value):
        """Whether torch's ``forward`` calls its fused self-attention kernel (its conditions):
        the fast path enabled, a batched self-attention call (query is key is value) in eval mode,
        in-projection weight and bias of the query's dtype, an even head count, batch_first, no
        bias_k/bias_v/add_zero_attn, one embedding size, no autocast, CPU/CUDA tensors and nothing
        to differentiate."""
        w, b = self.in_proj_weight, self.in_proj_bias
        if (not tracegrad.backends.mha.get_fastpath_enabled() or query.dim() != 3
                or query is not key or key is not value or w is None or b is None
                or query.dtype != w.dtype or query.dtype != b.dtype or self.training or self.num_heads % 2
                or not self.batch_first or self.bias_k is not None or self.bias_v is not None
                or self.add_zero_attn or not self._qkv_same_embed_dim or tracegrad.is_autocast_enabled()):
            return False
        tensors = (query, w, b, self.out_proj.weight, self.out_proj.bias)
        if not all(t is None or t.device.type in ("cpu", "cuda") for t in tensors):
            return False
        return not (tracegrad.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))

    def _forward(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                 is_causal):
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (t.transpose(1, 0) for t in (query, key, value))
        out, w = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=self.in_proj_weight is None, q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), w
        return out, w


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _add_feedforward_and_norms(layer, d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first,
                               bias, dtype):
    """The feed-forward block, ``n`` LayerNorms and ``n`` Dropouts (``n = layer._n_blocks``) of a
    transformer layer, registered in torch's order (state_dict keys and repr follow it)."""
    n = layer._n_blocks
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = norm_first
    for i in range(1, n + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
    for i in range(1, n + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))
    layer.activation = _get_activation_fn(activation) if isinstance(activation, str) else activation


class _LayerBlocks(Module):
    """Blocks shared by the encoder and decoder layers (torch's ``_sa_block``/``_ff_block``);
    ``_n_blocks`` picks the feed-forward's output dropout (``dropout2`` or ``dropout3``)."""
    _n_blocks = 2

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        out = getattr(self, f"dropout{self._n_blocks}")
        return out(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_LayerBlocks):
    """Mirrors ``torch.nn.TransformerEncoderLayer``: self-attention + feed-forward with residuals and
    LayerNorm (post-norm, or pre-norm with ``norm_first``); ``activation`` 'relu'/'gelu' or a callable."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        _add_feedforward_and_norms(self, d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first,
                                   bias, dtype)
        # torch's flag of the activation (1 relu, 2 gelu, 0 other), read by code that inspects layers
        act = self.activation
        self.activation_relu_or_gelu = (1 if act is F.relu or isinstance(act, ReLU) else
                                        2 if act is F.gelu or isinstance(act, GELU) else 0)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", None, "src_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        if (src_mask is not None or src_key_padding_mask is not None) and self._fast_path(src):
            # torch's fused inference kernel softmaxes a query whose every key is masked out over
            # all -inf: that token comes out NaN, where the math path (ours, and torch's outside
            # these conditions) gives the attention 0 and a finite token. Elsewhere both agree.
            full = _fully_masked_queries(src_mask, src_key_padding_mask, src.shape[0], self.self_attn.num_heads)
            if full is not None:
                x = x.masked_fill(full.unsqueeze(-1), float("nan"))
        return x

    def _fast_path(self, src):
        """Whether torch's ``forward`` takes its fused inference path (its conditions, in its
        order): the fast path enabled, a batched input, eval mode, batch-first attention with
        in-projection bias and one embedding size, a relu/gelu activation, equal norm eps, an even
        head count, no autocast, no forward hooks on any submodule, CPU/CUDA tensors and nothing to
        differentiate."""
        attn = self.self_attn
        if (not tracegrad.backends.mha.get_fastpath_enabled() or src.dim() != 3 or self.training
                or not attn.batch_first or attn.in_proj_bias is None or not attn._qkv_same_embed_dim
                or not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps
                or attn.num_heads % 2 == 1 or tracegrad.is_autocast_enabled()):
            return False
        if any(len(getattr(m, "_forward_hooks", {})) + len(getattr(m, "_forward_pre_hooks", {}))
               for m in self.modules()):
            return False
        tensors = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
                   self.norm1.weight, self.norm1.bias, self.norm2.weight, self.norm2.bias,
                   self.linear1.weight, self.linear1.bias, self.linear2.weight, self.linear2.bias)
        if not all(t.device.type in ("cpu", "cuda") for t in tensors):
            return False
        return not (tracegrad.is_grad_enabled() and any(t.requires_grad for t in tensors))



def _fully_masked_queries(attn_mask, key_padding_mask, batch, num_heads):
    """``(N, L)`` bool: the queries whose every key is masked out (True, or -inf in a float
    mask) in some head, from ``attn_mask`` ``(L, S)`` or ``(N*heads, L, S)`` and
    ``key_padding_mask`` ``(N, S)``; None when no mask is given."""
    def _masked(m):
        return m if m.dtype is tracegrad.bool else m == float("-inf")
    masked = None
    if attn_mask is not None:
        am = _masked(attn_mask)
        masked = (am.reshape(batch, num_heads, *am.shape[-2:]) if am.dim() == 3
                  else am.reshape(1, 1, *am.shape[-2:]))
    if key_padding_mask is not None:
        kp = _masked(key_padding_mask).reshape(batch, 1, 1, key_padding_mask.shape[-1])
        masked = kp if masked is None else masked | kp
    if masked is None:
        return None
    full = masked.all(-1).any(1)   # (N or 1, L or 1)
    return full


def _why_not_nested_tensor(layer):
    """The reason torch's ``TransformerEncoder`` gives for not using nested tensors with
    ``layer`` (its checks, in its order), or ``""``."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not attn.batch_first:
        return f"{name}.self_attn.batch_first was not True(use batch_first for better inference performance)"
    if not attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """Mirrors ``torch.nn.TransformerEncoder``: ``num_layers`` deep copies of ``encoder_layer``, then ``norm``.
    ``forward(src, mask, src_key_padding_mask, is_causal)``; ``is_causal=None`` detects a causal
    ``mask`` as torch does. There are no nested tensors, but torch's nested-tensor inference
    (batch-first, eval, a padding mask, nothing to differentiate) is mirrored in its result: the
    kept tokens' values are the math path's and the padded positions are zeros. The
    ``use_nested_tensor`` flag and torch's UserWarning when a layer rules that path out
    (sequence-first attention, ``norm_first``, ...) are torch's; ``mask_check`` as torch.
    ``torch.backends.mha.set_fastpath_enabled(False)`` turns that path off, as torch's."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.use_nested_tensor, self.mask_check = (enable_nested_tensor,
                                                                              enable_nested_tensor, mask_check)
        why_not = _why_not_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            # torch warns at construction (a program's warning log sees it) and keeps the flag off
            _warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}")
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", None, "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype)
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first", False)
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        nested = self._nested_inference(src, mask, src_key_padding_mask)
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if nested is not False:
            # torch runs this inference on a nested tensor of the unpadded tokens and pads it back
            # with zeros: the padded positions come out 0 (not the math path's values), before
            # ``norm``; the kept tokens' values are the math path's
            fill = src_key_padding_mask.ne(0).unsqueeze(-1)
            out = out.masked_fill(fill if nested is True else fill & nested, 0.0)
        if self.norm is not None:
            out = self.norm(out)
        return out

    def _nested_inference(self, src, mask, key_padding_mask):
        """Whether torch's ``forward`` takes its nested-tensor path here (its conditions: the
        ``use_nested_tensor`` flag, first layer in eval mode, batched input, a padding mask and
        no ``mask``, no CUDA autocast, no gradient to record, and a left-aligned padding mask --
        each row's kept tokens first -- unless ``mask_check`` is off; under compilation with
        ``mask_check`` torch skips the path). True, False, or inside a compiled function, where
        the alignment is data, a 0-d bool tensor: compiled equals eager (torch.compile instead
        skips the path, so its padded positions differ from torch eager's)."""
        first = self.layers[0]
        if (not getattr(self, "use_nested_tensor", False) or not tracegrad.backends.mha.get_fastpath_enabled()
                or first.training or src.dim() != 3
                or key_padding_mask is None or mask is not None or tracegrad.is_autocast_enabled()):
            return False
        attn = first.self_attn
        weights = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
                   first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                   first.linear1.weight, first.linear1.bias, first.linear2.weight, first.linear2.bias)
        if tracegrad.is_grad_enabled() and (any(t is not None and t.requires_grad for t in weights)
                                            or "reverse" in _state.FUNC_LEVELS):
            # inside tracegrad.func's grad/vjp/jacrev the traced values report no requires_grad,
            # but torch's level makes the differentiated input (and what it reaches) require it
            return False
        if getattr(self, "mask_check", True):
            keep = key_padding_mask.eq(0)
            # left-aligned: no kept token after a padded one in any row
            misaligned = (keep[:, 1:] & ~keep[:, :-1]).any()
            if tracegrad.compiler.is_compiling():
                return misaligned.logical_not()
            if bool(misaligned):
                return False
        return True


class TransformerDecoderLayer(_LayerBlocks):
    """Mirrors ``torch.nn.TransformerDecoderLayer``: self-attention, cross-attention over ``memory``
    and feed-forward, each with a residual and LayerNorm (post-norm, or pre-norm with
    ``norm_first``). ``forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    memory_key_padding_mask, tgt_is_causal, memory_is_causal)``; shapes as MultiheadAttention."""
    _n_blocks = 3

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                                 dtype=dtype)
        _add_feedforward_and_norms(self, d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first,
                                   bias, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)


class TransformerDecoder(Module):
    """Mirrors ``torch.nn.TransformerDecoder``: ``num_layers`` deep copies of ``decoder_layer``, then
    ``norm``; ``tgt_is_causal=None`` detects a causal ``tgt_mask`` as torch does."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """Mirrors ``torch.nn.Transformer``: encoder (``num_encoder_layers`` layers + LayerNorm) and
    decoder (``num_decoder_layers`` + LayerNorm), or ``custom_encoder``/``custom_decoder``;
    matrices re-initialised with xavier_uniform_ as torch. ``forward(src, tgt, src_mask, tgt_mask,
    memory_mask, src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask,
    src_is_causal, tgt_is_causal, memory_is_causal)``: src ``(S, N, E)``, tgt ``(T, N, E)``
    (batch first with ``batch_first``) -> ``(T, N, E)``.
    Raises RuntimeError when batch sizes differ or the feature size is not ``d_model``."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        bdim = 0 if self.batch_first else 1
        # torch reads the sizes before testing is_batched: a 1-D src is its IndexError
        if src.size(bdim) != tgt.size(bdim) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """Mirrors ``torch.nn.Transformer.generate_square_subsequent_mask``: ``(sz, sz)`` float mask,
        -inf above the diagonal, 0 elsewhere."""
        return generate_square_subsequent_mask(sz, device=device, dtype=dtype)


def generate_square_subsequent_mask(sz, device=None, dtype=None):
    """Mirrors ``torch.nn.Transformer.generate_square_subsequent_mask``: float mask, -inf above the diagonal."""
    return tracegrad.triu(tracegrad.full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """torch's rule: an explicit ``is_causal`` wins; with None, a mask equal to the square
    subsequent mask of the sequence length counts as causal."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None and tracegrad.compiler._tracing():
        # inside a compiled function the mask's values are not known while tracing. The flag is
        # only a hint: attention with the causal mask given as ``attn_mask`` computes the same
        # numbers as with ``is_causal=True`` (adding 0 leaves a score unchanged, -inf masks it),
        # so the trace keeps the mask (torch.compile also reads no mask value here)
        return False
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = generate_square_subsequent_mask(sz, dtype=mask.dtype)
        make_causal = tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())
    return make_causal
