"""Round-24 public programs (``tests/api/test_public_programs_round24.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- esceptico/perceiver-io: a ``PerceiverIO`` classifier's training step (trainable latents
  ``repeat``-ed over the batch into a multi-head ``CrossAttention``, one ``SelfAttention`` layer
  applied in two weight-shared blocks, star-unpacked ``view``/``reshape`` sizes, a
  ``ProjectionDecoder`` mean over latents, cross-entropy, Adam): one trace, no break, the trace
  reused on new data.
"""
from typing import Optional

import tracegrad

from ._harness import check_compiled, data, labels, np_init


# ---- esceptico/perceiver-io src/perceiver_io/{attention,encoder,decoders,perceiver}.py (the
# unmasked path; dropout 0 as in the defaults), with a train step in place of the repository's
# pytorch-lightning module ------------------------------------------------------------------------
def _perceiver_program(mod, wrap):
    nn = mod.nn

    class MultiHeadAttention(nn.Module):
        def __init__(self, kv_dim, q_dim, *, qk_out_dim=None, v_out_dim=None, output_dim=None,
                     num_heads=1, dropout=0.0):
            super().__init__()
            if qk_out_dim is None:
                qk_out_dim = q_dim
            if v_out_dim is None:
                v_out_dim = qk_out_dim
            if output_dim is None:
                output_dim = v_out_dim
            self.num_heads = num_heads
            self.qk_head_dim = qk_out_dim // num_heads
            self.v_head_dim = v_out_dim // num_heads
            self.k = nn.Linear(kv_dim, qk_out_dim)
            self.q = nn.Linear(q_dim, qk_out_dim)
            self.v = nn.Linear(kv_dim, v_out_dim)
            self.projection = nn.Linear(v_out_dim, output_dim)
            self.dropout = nn.Dropout(dropout)
            self.scale = self.qk_head_dim ** -0.5

        def transform_for_scores(self, x, head_dim):
            *dims, seq, hid = x.size()
            x = x.view(*dims, seq, self.num_heads, head_dim)
            return x.transpose(-3, -2)

        def forward(self, inputs_kv, inputs_q, attention_mask: Optional[mod.Tensor] = None):
            keys, queries, values = self.k(inputs_kv), self.q(inputs_q), self.v(inputs_kv)
            keys = self.transform_for_scores(keys, self.qk_head_dim)
            queries = self.transform_for_scores(queries, self.qk_head_dim)
            values = self.transform_for_scores(values, self.v_head_dim)
            attention = (queries @ keys.transpose(-2, -1) * self.scale)
            if attention_mask is not None:
                min_value = mod.finfo(attention.dtype).min
                extended_mask = (1 - attention_mask) * min_value
                attention = attention + extended_mask
            attention = attention.softmax(dim=-1)
            attention = self.dropout(attention)
            if attention_mask is not None:
                attention = attention.masked_fill(1 - attention_mask, value=0)
            weighted = attention @ values
            *dims, n_heads, seq, hid = weighted.size()
            weighted = weighted.transpose(-3, -2)
            weighted = weighted.reshape(*dims, seq, n_heads * hid)
            return self.projection(weighted)

    class FeedForward(nn.Module):
        def __init__(self, dim, widening_factor=4, dropout=0.0):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(dim, dim * widening_factor), nn.GELU(),
                                     nn.Linear(dim * widening_factor, dim), nn.Dropout(dropout))

        def forward(self, x):
            return self.mlp(x)

    class SelfAttention(nn.Module):
        def __init__(self, *, hidden_dim, widening_factor=4, num_heads=1):
            super().__init__()
            self.layer_norm = nn.LayerNorm(hidden_dim)
            self.qkv_layer_norm = nn.LayerNorm(hidden_dim)
            self.attention = MultiHeadAttention(kv_dim=hidden_dim, q_dim=hidden_dim, output_dim=hidden_dim,
                                                num_heads=num_heads)
            self.dropout = nn.Dropout(0.0)
            self.mlp = FeedForward(hidden_dim, widening_factor)

        def forward(self, x, attention_mask=None):
            x_norm = self.layer_norm(x)
            attention = self.attention(inputs_kv=x_norm, inputs_q=x_norm, attention_mask=attention_mask)
            attention = self.dropout(attention)
            x = x + attention
            x = x + self.mlp(self.qkv_layer_norm(x))
            return x

    class CrossAttention(nn.Module):
        def __init__(self, *, kv_dim, q_dim, widening_factor=1, num_heads=1, use_query_residual=True):
            super().__init__()
            self.use_query_residual = use_query_residual
            self.kv_layer_norm = nn.LayerNorm(kv_dim)
            self.q_layer_norm = nn.LayerNorm(q_dim)
            self.qkv_layer_norm = nn.LayerNorm(q_dim)
            self.attention = MultiHeadAttention(kv_dim=kv_dim, q_dim=q_dim, output_dim=q_dim, num_heads=num_heads)
            self.dropout = nn.Dropout(0.0)
            self.mlp = FeedForward(q_dim, widening_factor)

        def forward(self, inputs_kv, inputs_q, attention_mask=None):
            attention = self.attention(inputs_kv=self.kv_layer_norm(inputs_kv), inputs_q=self.q_layer_norm(inputs_q),
                                       attention_mask=attention_mask)
            attention = self.dropout(attention)
            if self.use_query_residual:
                x = inputs_q + attention
            else:
                x = attention
            x = x + self.mlp(self.qkv_layer_norm(x))
            return x

    class PerceiverEncoder(nn.Module):
        def __init__(self, num_latents, latent_dim, input_dim, num_self_attn_per_block=2, num_blocks=4,
                     num_cross_attn_heads=1, num_self_attn_heads=8):
            super().__init__()
            self.num_blocks = num_blocks
            self.latents = nn.Parameter(mod.randn(num_latents, latent_dim))
            self.cross_attn = CrossAttention(kv_dim=input_dim, q_dim=latent_dim, widening_factor=1,
                                             num_heads=num_cross_attn_heads)
            self.self_attention_block = nn.ModuleList([
                SelfAttention(hidden_dim=latent_dim, widening_factor=1, num_heads=num_self_attn_heads)
                for _ in range(num_self_attn_per_block)])

        def forward(self, x, kv_mask=None):
            batch_size = x.size(0)
            if kv_mask is not None:
                kv_mask = kv_mask[:, None, None, :]
            latents = self.cross_attn(inputs_kv=x, inputs_q=self.latents.repeat(batch_size, 1, 1),
                                      attention_mask=kv_mask)
            for _ in range(self.num_blocks):
                for self_attn_layer in self.self_attention_block:
                    latents = self_attn_layer(latents)
            return latents

    class ProjectionDecoder(nn.Module):
        def __init__(self, latent_dim, num_classes):
            super().__init__()
            self.projection = nn.Linear(latent_dim, num_classes)

        def forward(self, *, query, latents, q_mask=None):
            latents = latents.mean(dim=1)
            return self.projection(latents)

    class PerceiverIO(nn.Module):
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, inputs, query=None, input_mask=None, query_mask=None):
            latents = self.encoder(inputs, kv_mask=input_mask)
            return self.decoder(query=query, latents=latents, q_mask=query_mask)

    encoder = PerceiverEncoder(num_latents=4, latent_dim=8, input_dim=8, num_self_attn_per_block=1, num_blocks=2,
                               num_cross_attn_heads=2, num_self_attn_heads=2)
    model = np_init(PerceiverIO(encoder, ProjectionDecoder(latent_dim=8, num_classes=3)), mod)
    # SGD with momentum, not Adam: the key projection's bias gets a gradient that is zero but for
    # rounding (softmax over keys ignores a per-query constant), and Adam's ``g / sqrt(v)`` turns
    # that noise into lr-sized steps that differ with the summation order
    opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(inputs, targets):
        opt.zero_grad()
        logits = model(inputs)
        loss = mod.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        opt.step()
        return loss, logits

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 4, 8), labels(mod, i, 2, 3))


def test_perceiver_io_train_step_compiled():
    # call 0 runs eagerly, call 1 traces, call 2 (new data) reuses the program
    run = check_compiled(_perceiver_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1 and run.step.stats["eager_calls"] == 1, run.step.stats
    loss, logits = run.step(data(tracegrad, 7, 2, 4, 8), labels(tracegrad, 7, 2, 3))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert tuple(logits.shape) == (2, 3) and logits.grad_fn is not None and loss.dim() == 0
