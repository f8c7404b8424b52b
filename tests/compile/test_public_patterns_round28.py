"""Round-28 public programs, run unchanged (``import tracegrad as torch``; tiny sizes, numpy
weights and data) eagerly against torch and with their training step under
``tracegrad.compile`` (compiled == eager == torch over the harness's calls):

- lucidrains/g-mlp-pytorch: train.py's causal ``gMLP`` language model (the causal spatial gating
  unit: its ``Conv1d`` weight sliced, ``masked_fill``-ed under a ``triu_`` mask and passed to
  ``F.conv1d``) inside ``AutoregressiveWrapper`` (``cross_entropy`` over ``transpose(1, 2)``
  logits), and train.py's step: gradient accumulation over micro-batches, ``clip_grad_norm_``,
  Adam, then ``model.eval()`` + ``no_grad`` validation: one trace, no break, reused; layer
  dropout (``prob_survival < 1``) is a graph break at its ``all(to_drop)`` with eager's random
  draws; greedy ``generate`` (``no_grad`` + ``eval_decorator``, ``top_k``'s ``scatter_`` into
  ``full_like(-inf)``, ``multinomial``) against torch;
- BlinkDL/RWKV-LM RWKV-v1: the ``GPT`` with ``RWKV_TimeMix`` (the circulant time-decay matrix
  built by ``F.pad`` + ``torch.tile`` + ``reshape``, ``nn.ZeroPad2d((0, 0, 1, -1))`` time shift,
  ``clamp``/``exp``/``cumsum``, ``einsum``), ``RWKV_ChannelMix`` (``F.mish``), the copy head
  (``one_hot(...).float()``), ``RWKV_Init`` (orthogonal/zeros init), ``configure_optimizers``'
  AdamW weight-decay groups and the trainer's step (``set_grad_enabled``, ``model.zero_grad``,
  ``clip_grad_norm_``) with its warmup/cosine learning-rate decay written into ``param_groups``
  between compiled calls: one trace, no break, reused with each new lr; the same file's
  ``MHA_rotary`` (``RotaryEmbedding``'s ``einsum`` of int64 positions with a float buffer, which
  torch promotes and tracegrad used to reject; ``@torch.jit.script``) against torch.

Each whole-step program costs ~5-7 s of XLA CPU compile on its own (3000-odd HLO ops): the
models are one layer deep and share one batch shape per program.
"""
import contextlib
import io
import linecache
import math
import random
import warnings

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, np_init


# ---- lucidrains/g-mlp-pytorch g_mlp_pytorch/g_mlp_pytorch.py + autoregressive_wrapper.py (the
# causal LM path as written; the einops import only serves gMLPVision and is left out) ----------
def _gmlp_module(torch):
    from random import randrange
    nn, einsum = torch.nn, torch.einsum     # the file's ``from torch import nn, einsum``
    F = torch.nn.functional

    def exists(val):
        return val is not None

    def dropout_layers(layers, prob_survival):
        if prob_survival == 1:
            return layers

        num_layers = len(layers)
        to_drop = torch.zeros(num_layers).uniform_(0., 1.) > prob_survival

        # make sure at least one layer makes it
        if all(to_drop):
            rand_index = randrange(num_layers)
            to_drop[rand_index] = False

        layers = [layer for (layer, drop) in zip(layers, to_drop) if not drop]
        return layers

    class Residual(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x) + x

    class PreNorm(nn.Module):
        def __init__(self, dim, fn):
            super().__init__()
            self.fn = fn
            self.norm = nn.LayerNorm(dim)

        def forward(self, x, **kwargs):
            x = self.norm(x)
            return self.fn(x, **kwargs)

    class Attention(nn.Module):
        def __init__(self, dim_in, dim_out, dim_inner, causal=False):
            super().__init__()
            self.scale = dim_inner ** -0.5
            self.causal = causal

            self.to_qkv = nn.Linear(dim_in, dim_inner * 3, bias=False)
            self.to_out = nn.Linear(dim_inner, dim_out)

        def forward(self, x):
            device = x.device
            q, k, v = self.to_qkv(x).chunk(3, dim=-1)
            sim = einsum('b i d, b j d -> b i j', q, k) * self.scale

            if self.causal:
                mask = torch.ones(sim.shape[-2:], device=device).triu(1).bool()
                sim.masked_fill_(mask[None, ...], -torch.finfo(q.dtype).max)

            attn = sim.softmax(dim=-1)
            out = einsum('b i j, b j d -> b i d', attn, v)
            return self.to_out(out)

    class SpatialGatingUnit(nn.Module):
        def __init__(self, dim, dim_seq, causal=False, act=nn.Identity(), init_eps=1e-3):
            super().__init__()
            dim_out = dim // 2
            self.causal = causal

            self.norm = nn.LayerNorm(dim_out)
            self.proj = nn.Conv1d(dim_seq, dim_seq, 1)

            self.act = act

            init_eps /= dim_seq
            nn.init.uniform_(self.proj.weight, -init_eps, init_eps)
            nn.init.constant_(self.proj.bias, 1.)

        def forward(self, x, gate_res=None):
            device, n = x.device, x.shape[1]

            res, gate = x.chunk(2, dim=-1)
            gate = self.norm(gate)

            weight, bias = self.proj.weight, self.proj.bias
            if self.causal:
                weight, bias = weight[:n, :n], bias[:n]
                mask = torch.ones(weight.shape[:2], device=device).triu_(1).bool()
                weight = weight.masked_fill(mask[..., None], 0.)

            gate = F.conv1d(gate, weight, bias)

            if exists(gate_res):
                gate = gate + gate_res

            return self.act(gate) * res

    class gMLPBlock(nn.Module):
        def __init__(self, *, dim, dim_ff, seq_len, attn_dim=None, causal=False, act=nn.Identity()):
            super().__init__()
            self.proj_in = nn.Sequential(
                nn.Linear(dim, dim_ff),
                nn.GELU()
            )

            self.attn = Attention(dim, dim_ff // 2, attn_dim, causal) if exists(attn_dim) else None

            self.sgu = SpatialGatingUnit(dim_ff, seq_len, causal, act)
            self.proj_out = nn.Linear(dim_ff // 2, dim)

        def forward(self, x):
            gate_res = self.attn(x) if exists(self.attn) else None

            x = self.proj_in(x)
            x = self.sgu(x, gate_res=gate_res)
            x = self.proj_out(x)
            return x

    class gMLP(nn.Module):
        def __init__(self, *, num_tokens=None, dim, depth, seq_len, ff_mult=4, attn_dim=None,
                     prob_survival=1., causal=False, act=nn.Identity()):
            super().__init__()
            dim_ff = dim * ff_mult
            self.seq_len = seq_len
            self.prob_survival = prob_survival

            self.to_embed = nn.Embedding(num_tokens, dim) if exists(num_tokens) else nn.Identity()

            self.layers = nn.ModuleList([Residual(PreNorm(dim, gMLPBlock(
                dim=dim, dim_ff=dim_ff, seq_len=seq_len, attn_dim=attn_dim, causal=causal, act=act)))
                for i in range(depth)])

            self.to_logits = nn.Sequential(
                nn.LayerNorm(dim),
                nn.Linear(dim, num_tokens)
            ) if exists(num_tokens) else nn.Identity()

        def forward(self, x):
            x = self.to_embed(x)
            layers = self.layers if not self.training else dropout_layers(self.layers, self.prob_survival)
            out = nn.Sequential(*layers)(x)
            return self.to_logits(out)

    def eval_decorator(fn):
        def inner(model, *args, **kwargs):
            was_training = model.training
            model.eval()
            out = fn(model, *args, **kwargs)
            model.train(was_training)
            return out
        return inner

    def top_k(logits, thres=0.9):
        k = int((1 - thres) * logits.shape[-1])
        val, ind = torch.topk(logits, k)
        probs = torch.full_like(logits, float('-inf'))
        probs.scatter_(1, ind, val)
        return probs

    class AutoregressiveWrapper(nn.Module):
        def __init__(self, net, ignore_index=-100, pad_value=0):
            super().__init__()
            self.pad_value = pad_value
            self.ignore_index = ignore_index

            self.net = net
            self.max_seq_len = net.seq_len

        @torch.no_grad()
        @eval_decorator
        def generate(self, start_tokens, seq_len, eos_token=None, temperature=1., filter_logits_fn=top_k,
                     filter_thres=0.9, **kwargs):
            num_dims = len(start_tokens.shape)

            if num_dims == 1:
                start_tokens = start_tokens[None, :]

            b, t = start_tokens.shape

            out = start_tokens

            for _ in range(seq_len):
                x = out[:, -self.max_seq_len:]

                logits = self.net(x, **kwargs)[:, -1, :]

                filtered_logits = top_k(logits, thres=filter_thres)
                probs = F.softmax(filtered_logits / temperature, dim=-1)

                sample = torch.multinomial(probs, 1)

                out = torch.cat((out, sample), dim=-1)

                if eos_token is not None and (sample == eos_token).all():
                    break

            out = out[:, t:]

            if num_dims == 1:
                out = out.squeeze(0)

            return out

        def forward(self, x, **kwargs):
            xi, xo = x[:, :-1], x[:, 1:]
            out = self.net(xi, **kwargs)
            loss = F.cross_entropy(out.transpose(1, 2), xo, ignore_index=self.ignore_index)
            return loss

    return gMLP, AutoregressiveWrapper, top_k


def _file_line(where):
    path, line = where.rsplit(":", 1)
    return path, int(line)


def _text(mod, i, seed=60):
    """A batch of 2 sequences of SEQ_LEN + 1 byte-like tokens (vocab 16)."""
    return mod.tensor(np.random.RandomState(seed + i).randint(0, 16, (2, 5)))


def _gmlp_model(mod):
    gMLP, AutoregressiveWrapper, top_k = _gmlp_module(mod)
    # train.py's model with num_tokens 256 -> 16, dim 512 -> 8, SEQ_LEN 768 -> 4, depth 8 -> 1
    model = AutoregressiveWrapper(gMLP(num_tokens=16, dim=8, seq_len=4, depth=1, causal=True))
    np_init(model, mod, seed=5, scale=0.4)
    sgu = model.net.layers[0].fn.fn.sgu
    with mod.no_grad():      # the unit's own init: the gate starts near 1 (the bias)
        sgu.proj.weight.mul_(0.1)
        mod.nn.init.constant_(sgu.proj.bias, 1.)
    return model, top_k


# train.py's loop body (GRADIENT_ACCUMULATE_EVERY 4 -> 2, the loss print returned instead, the
# validation every step)
def _gmlp_program(mod, wrap):
    model, _ = _gmlp_model(mod)
    optim = mod.optim.Adam(model.parameters(), lr=2e-2)

    def step(mb0, mb1, val):
        train_loader = iter((mb0, mb1))
        model.train()

        for __ in range(2):
            loss = model(next(train_loader))
            loss.backward()

        total_norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optim.step()
        optim.zero_grad()

        model.eval()
        with mod.no_grad():
            val_loss = model(val)
        return loss, total_norm, val_loss

    return wrap(step), {"model": model, "optim": optim}, lambda i: (_text(mod, i), _text(mod, i, 70), _text(mod, i, 80))


def test_gmlp_train_step_compiled_and_generate():
    # call 0 runs eagerly, call 1 traces, call 2 (new text) reuses the program; every call's
    # losses, clipped norm, parameters and Adam state equal eager tracegrad's and torch's
    run = check_compiled(_gmlp_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert not stats["graph_breaks"], stats
    assert stats["traces"] == 1 and stats["eager_calls"] == 1, stats
    # the step leaves the model in eval mode (its validation), as eagerly
    assert not run.state["model"].training
    loss, norm, val_loss = run.step(_text(tracegrad, 7), _text(tracegrad, 8), _text(tracegrad, 9))
    assert run.step.stats["traces"] == 1, run.step.stats
    assert loss.requires_grad and not val_loss.requires_grad and norm.dim() == 0
    # the causal mask: the gating conv weight above the diagonal never gets a gradient, so Adam
    # leaves it at its initial value while the rest moved
    init = _gmlp_model(tracegrad)[0].net.layers[0].fn.fn.sgu.proj.weight.detach().numpy()[:, :, 0]
    w = run.state["model"].net.layers[0].fn.fn.sgu.proj.weight.detach().numpy()[:, :, 0]
    upper, lower = np.triu_indices(4, 1), np.tril_indices(4)
    assert np.array_equal(w[upper], init[upper]) and not np.allclose(w[lower], init[lower])

    # layer dropout (prob_survival < 1; depth 2 of the same shapes): dropout_layers reads its
    # random mask with all(), a graph break at that line, so every call runs eagerly and draws a
    # new mask -- the same draws, call for call, as eager under the same seeds
    gMLP = _gmlp_module(tracegrad)[0]
    net = gMLP(num_tokens=16, dim=8, seq_len=4, depth=2, causal=True, prob_survival=0.5)
    fwd = tracegrad.compile(lambda x: net(x))
    x = _text(tracegrad, 0)[:, :4]
    state = random.getstate()
    try:
        sums = []
        for f in (fwd, net):
            tracegrad.manual_seed(0)
            random.seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sums.append([float(f(x).detach().abs().sum()) for _ in range(6)])
    finally:
        random.setstate(state)
    assert sums[0] == sums[1] and len(set(sums[0])) > 1, sums
    assert fwd.stats["traces"] == 0 and fwd.stats["eager_calls"] == 6, fwd.stats
    assert [(r.split(" ")[0], linecache.getline(*_file_line(where)).strip())
            for r, where in fwd.stats["graph_breaks"]] == [("bool()", "if all(to_drop):")], fwd.stats

    # generate (untrained weights; vocab 16 keeps int(0.1 * 16) = 1 logit, so multinomial is
    # the argmax) and top_k, against torch
    torch = pytest.importorskip("torch")
    outs = []
    for mod in (torch, tracegrad):
        model, top_k = _gmlp_model(mod)
        x = _text(mod, 0)[:, :4]
        out = model.generate(x, 2)
        with mod.no_grad():
            filtered = top_k(model.net(x)[:, -1, :], thres=0.5)
        outs.append((out.numpy(), model.training, filtered.numpy()))
    (to, tt, tk), (go, gt, gk) = outs
    assert go.dtype == to.dtype == np.int64 and go.shape == (2, 2)
    np.testing.assert_array_equal(go, to)
    assert gt is tt is True       # eval_decorator restored training mode
    np.testing.assert_array_equal(np.isinf(gk), np.isinf(tk))
    assert np.isinf(gk).sum(-1).tolist() == [8, 8]
    np.testing.assert_allclose(gk[~np.isinf(gk)], tk[~np.isinf(tk)], rtol=1e-4, atol=1e-6)


# ---- BlinkDL/RWKV-LM RWKV-v1/src/model.py (RWKV_Init, RWKV_TimeMix, RWKV_ChannelMix, GPTConfig,
# Block, GPT with model_type "RWKV") and src/trainer.py's training step -------------------------
def _rwkv_module(torch):
    import logging
    nn = torch.nn
    F = torch.nn.functional
    logger = logging.getLogger(__name__)

    def RWKV_Init(module, config):  # fancy initialization of all lin & emb layer in the module
        for m in module.modules():
            if not isinstance(m, (nn.Linear, nn.Embedding)):
                continue
            with torch.no_grad():
                name = "[unknown weight]"
                for (name, parameter) in module.named_parameters():  # find the name of the weight
                    if id(m.weight) == id(parameter):
                        break

                shape = m.weight.data.shape
                gain = 1.0  # positive: gain for orthogonal, negative: std for normal
                scale = 1.0  # extra scale for gain

                if isinstance(m, nn.Linear):
                    if m.bias is not None:
                        m.bias.data.zero_()
                    if shape[0] > shape[1]:
                        gain = math.sqrt(shape[0] / shape[1])
                    if shape[0] == config.vocab_size and shape[1] == config.n_embd:  # final projection?
                        scale = config.rwkv_emb_scale

                if isinstance(m, nn.Embedding):
                    gain = math.sqrt(max(shape[0], shape[1]))
                    if shape[0] == config.vocab_size and shape[1] == config.n_embd:  # token emb?
                        scale = config.rwkv_emb_scale

                if hasattr(m, "scale_init"):
                    scale = m.scale_init

                print(str(shape[0]).ljust(5), str(shape[1]).ljust(5), f"{round(scale,2):g}".ljust(4), name)

                gain *= scale
                if gain == 0:
                    nn.init.zeros_(m.weight)  # zero init is great for some RWKV matrices
                elif gain > 0:
                    nn.init.orthogonal_(m.weight, gain=gain)
                else:
                    nn.init.normal_(m.weight, mean=0, std=-gain)

    class RWKV_TimeMix(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            assert config.n_attn % config.n_head == 0
            self.layer_id = layer_id
            self.ctx_len = config.ctx_len
            self.n_head = config.n_head
            self.head_size = config.n_attn // config.n_head

            with torch.no_grad():  # initial time_w curves for better convergence
                ww = torch.ones(config.n_head, config.ctx_len)
                curve = torch.tensor([-(config.ctx_len - 1 - i) for i in range(config.ctx_len)])  # the distance
                for h in range(config.n_head):
                    if h < config.n_head - 1:
                        decay_speed = math.pow(config.ctx_len, -(h + 1) / (config.n_head - 1))
                    else:
                        decay_speed = 0.0
                    ww[h] = torch.exp(curve * decay_speed)
            self.time_w = nn.Parameter(ww)

            self.time_alpha = nn.Parameter(torch.ones(self.n_head, 1, config.ctx_len))
            self.time_beta = nn.Parameter(torch.ones(self.n_head, config.ctx_len, 1))
            self.time_gamma = nn.Parameter(torch.ones(config.ctx_len, 1))

            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))

            self.key = nn.Linear(config.n_embd, config.n_attn)
            self.value = nn.Linear(config.n_embd, config.n_attn)
            self.receptance = nn.Linear(config.n_embd, config.n_attn)

            self.output = nn.Linear(config.n_attn, config.n_embd)

            self.key.scale_init = 0
            self.receptance.scale_init = 0
            self.output.scale_init = 0

        def forward(self, x):
            B, T, C = x.size()
            TT = self.ctx_len
            w = F.pad(self.time_w, (0, TT))
            w = torch.tile(w, [TT])
            w = w[:, :-TT].reshape(-1, TT, 2 * TT - 1)
            w = w[:, :, TT - 1:]  # w is now a circulant matrix
            w = w[:, :T, :T] * self.time_alpha[:, :, :T] * self.time_beta[:, :T, :]

            x = torch.cat([self.time_shift(x[:, :, : C // 2]), x[:, :, C // 2:]], dim=-1)

            k = self.key(x)
            v = self.value(x)
            r = self.receptance(x)

            k = torch.clamp(k, max=30, min=-60)  # clamp extreme values. e^30 = 10^13
            k = torch.exp(k)
            sum_k = torch.cumsum(k, dim=1)

            kv = (k * v).view(B, T, self.n_head, self.head_size)

            wkv = (torch.einsum("htu,buhc->bthc", w, kv)).contiguous().view(B, T, -1)

            rwkv = torch.sigmoid(r) * wkv / sum_k

            rwkv = self.output(rwkv)

            return rwkv * self.time_gamma[:T, :]

    class RWKV_ChannelMix(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            self.layer_id = layer_id
            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))

            hidden_sz = 5 * config.n_ffn // 2  # can use smaller hidden_sz because of receptance gating
            self.key = nn.Linear(config.n_embd, hidden_sz)
            self.value = nn.Linear(config.n_embd, hidden_sz)
            self.weight = nn.Linear(hidden_sz, config.n_embd)
            self.receptance = nn.Linear(config.n_embd, config.n_embd)

            self.receptance.scale_init = 0
            self.weight.scale_init = 0

        def forward(self, x):
            B, T, C = x.size()

            x = torch.cat([self.time_shift(x[:, :, : C // 2]), x[:, :, C // 2:]], dim=-1)
            k = self.key(x)
            v = self.value(x)
            r = self.receptance(x)

            wkv = self.weight(F.mish(k) * v)  # i find mish is a bit better than gelu

            rwkv = torch.sigmoid(r) * wkv

            return rwkv

    class RotaryEmbedding(torch.nn.Module):
        def __init__(self, dim, base=10000):
            super().__init__()
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
            self.register_buffer("inv_freq", inv_freq)
            self.seq_len_cached = None
            self.cos_cached = None
            self.sin_cached = None

        def forward(self, x, seq_len=None):
            if seq_len != self.seq_len_cached:
                self.seq_len_cached = seq_len
                t = torch.arange(seq_len, device=x.device)
                freqs = torch.einsum("i,j->ij", t, self.inv_freq)
                emb = torch.cat((freqs, freqs), dim=-1).to(x.device)
                self.cos_cached = emb.cos()
                self.sin_cached = emb.sin()
            return self.cos_cached, self.sin_cached

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), -1)

    @torch.jit.script
    def apply_rotary_pos_emb(q, k, cos, sin):
        cos, sin = cos[..., : q.shape[-2], :], sin[..., : q.shape[-2], :]
        return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

    class MHA_rotary(nn.Module):
        def __init__(self, config, layer_id, time_shift=False):
            super().__init__()
            self.layer_id = layer_id
            assert config.n_attn % config.n_head == 0
            self.n_head = config.n_head
            self.ctx_len = config.ctx_len
            self.head_size = config.n_attn // config.n_head

            if time_shift:
                self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))

            self.query = nn.Linear(config.n_embd, config.n_attn)
            self.key = nn.Linear(config.n_embd, config.n_attn)
            self.value = nn.Linear(config.n_embd, config.n_attn)

            self.register_buffer("mask", torch.tril(torch.ones(config.ctx_len, config.ctx_len)))

            self.rotary_ndims = int(self.head_size * 0.5)
            self.rotary_emb = RotaryEmbedding(self.rotary_ndims)

            self.output = nn.Linear(config.n_attn, config.n_embd)

        def forward(self, x):
            B, T, C = x.size()

            if hasattr(self, "time_shift"):
                x = torch.cat([self.time_shift(x[:, :, : C // 2]), x[:, :, C // 2:]], dim=-1)

            q = self.query(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
            k = self.key(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
            v = self.value(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)

            q, query_pass = q[..., : self.rotary_ndims], q[..., self.rotary_ndims:]
            k, key_pass = k[..., : self.rotary_ndims], k[..., self.rotary_ndims:]
            cos, sin = self.rotary_emb(q, seq_len=T)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)  # rotary encoding
            q = torch.cat((q, query_pass), dim=-1)
            k = torch.cat((k, key_pass), dim=-1)

            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # self-attention
            att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))  # causal mask
            att = F.softmax(att, dim=-1)  # softmax

            x = att @ v  # (B, nh, T, T) * (B, nh, T, hs) -> (B, nh, T, hs)
            x = x.transpose(1, 2).contiguous().view(B, T, -1)  # (B, nh, T, hs) -> (B, T, nh, hs) -> (B, T, C)

            x = self.output(x)
            return x

    class GPTConfig:
        def __init__(self, vocab_size, ctx_len, **kwargs):
            self.vocab_size = vocab_size
            self.ctx_len = ctx_len
            for k, v in kwargs.items():
                setattr(self, k, v)

    class Block(nn.Module):
        def __init__(self, config, layer_id):
            super().__init__()
            self.config = config

            self.ln1 = nn.LayerNorm(config.n_embd)
            self.ln2 = nn.LayerNorm(config.n_embd)

            if config.model_type == "RWKV":
                self.attn = RWKV_TimeMix(config, layer_id)
                self.mlp = RWKV_ChannelMix(config, layer_id)

        def forward(self, x):

            x = x + self.attn(self.ln1(x))
            x = x + self.mlp(self.ln2(x))

            return x

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config

            self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)

            self.blocks = nn.Sequential(*[Block(config, i) for i in range(config.n_layer)])

            self.ln_f = nn.LayerNorm(config.n_embd)
            self.time_out = nn.Parameter(torch.ones(1, config.ctx_len, 1))  # reduce confidence of early tokens
            self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

            self.head_q = nn.Linear(config.n_embd, 256)
            self.head_q.scale_init = 0.01
            self.head_k = nn.Linear(config.n_embd, 256)
            self.head_k.scale_init = 0.01
            self.register_buffer("copy_mask", torch.tril(torch.ones(config.ctx_len, config.ctx_len)))

            self.ctx_len = config.ctx_len

            if self.config.model_type == "RWKV":
                RWKV_Init(self, config)
            else:
                self.apply(self._init_weights)

            logger.info("number of parameters: %e", sum(p.numel() for p in self.parameters()))

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.data.normal_(mean=0.0, std=0.01)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()

        def configure_optimizers(self, train_config):
            # separate out all parameters to those that will and won't experience regularizing weight decay
            decay = set()
            no_decay = set()

            whitelist_weight_modules = (nn.Linear,)
            blacklist_weight_modules = (nn.LayerNorm, nn.Embedding)
            for mn, m in self.named_modules():
                for pn, p in m.named_parameters():
                    fpn = "%s.%s" % (mn, pn) if mn else pn  # full param name

                    if pn.endswith("bias") or ("time" in fpn) or ("head" in fpn):
                        no_decay.add(fpn)
                    elif pn.endswith("weight") and isinstance(m, whitelist_weight_modules):
                        decay.add(fpn)
                    elif pn.endswith("weight") and isinstance(m, blacklist_weight_modules):
                        no_decay.add(fpn)

            # validate that we considered every parameter
            param_dict = {pn: p for pn, p in self.named_parameters()}
            inter_params = decay & no_decay
            union_params = decay | no_decay
            assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (
                str(inter_params),)
            assert len(param_dict.keys() - union_params) == 0, \
                "parameters %s were not separated into either decay/no_decay set!" % (
                    str(param_dict.keys() - union_params),)

            optim_groups = [
                {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
                {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
            ]
            optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas,
                                          eps=train_config.eps)
            return optimizer

        def forward(self, idx, targets=None):
            B, T = idx.size()
            assert T <= self.ctx_len, "Cannot forward, because len(input) > model ctx_len."

            x = self.tok_emb(idx)

            x = self.blocks(x)

            x = self.ln_f(x)

            q = self.head_q(x)[:, :T, :]
            k = self.head_k(x)[:, :T, :]
            c = (q @ k.transpose(-2, -1)) * (1.0 / 256)
            c = c.masked_fill(self.copy_mask[:T, :T] == 0, 0)
            c = c @ F.one_hot(idx, num_classes=self.config.vocab_size).float()

            x = x * self.time_out[:, :T, :]  # reduce confidence of early tokens
            x = self.head(x) + c

            loss = None
            if targets is not None:
                loss = F.cross_entropy(x.view(-1, x.size(-1)), targets.view(-1))

            return x, loss

    class TrainerConfig:
        max_epochs = 10
        batch_size = 64
        learning_rate = 4e-4
        betas = (0.9, 0.99)
        eps = 1e-8
        grad_norm_clip = 1.0
        weight_decay = 0.01
        lr_decay = False  # linear warmup followed by cosine decay
        warmup_tokens = 375e6  # these two numbers come from the GPT-3 paper
        final_tokens = 260e9  # at which point do we reach lr_final

        def __init__(self, **kwargs):
            for k, v in kwargs.items():
                setattr(self, k, v)

    return GPT, GPTConfig, TrainerConfig, MHA_rotary


def _rwkv_model(mod):
    GPT, GPTConfig, TrainerConfig, _ = _rwkv_module(mod)
    model = GPT(_rwkv_config(mod))
    # RWKV_Init's orthogonal draws differ between the libraries: the Linear/Embedding weights from
    # numpy instead (not zero, so every path has a gradient); the time_* curves keep their init
    rng = np.random.RandomState(9)
    with mod.no_grad():
        for n, p in model.named_parameters():
            if "time" not in n:
                p.copy_(mod.tensor((rng.randn(*p.shape) * 0.3).astype("float32")))
    return model, TrainerConfig


def _rwkv_config(mod):
    # train.py's config shrunk: vocab 16, ctx_len 6 (the batches use T = 5 of it), 2 heads
    return _rwkv_module(mod)[1](16, 6, model_type="RWKV", n_layer=1, n_embd=8, n_attn=8, n_head=2, n_ffn=8,
                                rwkv_emb_scale=0.4)


def _rwkv_batch(mod, i):
    seq = np.random.RandomState(90 + i).randint(0, 16, (2, 6))
    return mod.tensor(seq[:, :-1]), mod.tensor(seq[:, 1:])


def _rwkv_program(mod, wrap):
    model, TrainerConfig = _rwkv_model(mod)
    # eps 1e-8 -> 1e-4: the time-mix key bias cancels between ``wkv`` and ``sum_k``, so its
    # gradient is rounding noise that AdamW's g / sqrt(v) would turn into lr-sized steps
    config = TrainerConfig(learning_rate=1e-2, lr_final=1e-3, lr_decay=True, warmup_tokens=15,
                           final_tokens=40, weight_decay=0.1, grad_norm_clip=1.0, eps=1e-4)
    optimizer = model.configure_optimizers(config)
    log = []
    tokens = [0]

    def train_step(x, y):
        with mod.set_grad_enabled(True):
            _, loss = model(x, y)  # forward the model
            loss = loss.mean()  # collapse all losses if they are scattered on multiple gpus
        model.zero_grad()
        loss.backward()
        mod.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
        optimizer.step()
        return loss

    compiled = wrap(train_step)

    def step(x, y):
        loss = compiled(x, y)
        # the trainer's lr decay after optimizer.step(), outside the compiled step (it reads the
        # token count back as a Python float)
        tokens[0] += (y >= 0).sum()
        lr_final_factor = config.lr_final / config.learning_rate
        if tokens[0] < config.warmup_tokens:
            lr_mult = lr_final_factor + (1 - lr_final_factor) * float(tokens[0]) / float(config.warmup_tokens)
            progress = 0
        else:
            progress = float(tokens[0] - config.warmup_tokens) / float(
                max(1, config.final_tokens - config.warmup_tokens))
            lr_mult = (0.5 + lr_final_factor / 2) + (0.5 - lr_final_factor / 2) * math.cos(math.pi * progress)
        lr = config.learning_rate * lr_mult
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        log.append((round(lr, 9), progress, round(loss.item(), 5)))
        return loss

    step.stats = getattr(compiled, "stats", None)
    return step, {"model": model, "opt": optimizer, "log": log}, lambda i: _rwkv_batch(mod, i)


def test_rwkv_v1_train_step_compiled():
    # call 0 eager, call 1 traces; the lr written into both param groups between calls is not
    # baked in: call 2 reuses the program with the new lr
    run = check_compiled(_rwkv_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    stats = run.step.stats
    assert not stats["graph_breaks"], stats
    assert stats["traces"] == 1 and stats["eager_calls"] == 1, stats
    log = run.state["log"]
    # 10 tokens a step, warmup 15: warmup, then cosine decay
    assert [p for _, p, _ in log] == [0, pytest.approx(5 / 25), pytest.approx(15 / 25)]
    assert log[0][0] < log[1][0] and log[1][0] > log[2][0]
    groups = run.state["opt"].param_groups
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0] and groups[0]["lr"] == groups[1]["lr"]
    # ctx_len 6, T 5: the last position of time_gamma never gets a gradient (no weight decay in
    # its group): still the program's init of 1 after the steps, unlike the used positions
    model = run.state["model"]
    gamma = model.blocks[0].attn.time_gamma.detach().numpy()
    assert np.all(gamma[5:] == 1) and np.all(gamma[:5] != 1)

    # the program's own init (its decay curves from math.pow/exp, RWKV_Init's print) and the
    # ZeroPad2d((0, 0, 1, -1)) time shift, against torch
    torch = pytest.importorskip("torch")
    outs = []
    for mod in (torch, tracegrad):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            m = _rwkv_module(mod)[0](_rwkv_config(mod))
        x = mod.tensor(np.arange(40, dtype=np.float32).reshape(2, 5, 4))
        outs.append((m.blocks[0].attn.time_w.detach().numpy(), buf.getvalue(),
                     m.blocks[0].attn.time_shift(x).numpy(), m.blocks[0].attn.key.weight.detach().numpy()))
        # the file's MHA_rotary (model_type "MHA_shift": with the time shift): RotaryEmbedding's
        # einsum of the int64 positions with the float inv_freq buffer (torch promotes), its
        # cos/sin cached on the module, apply_rotary_pos_emb under @torch.jit.script
        mha = np_init(_rwkv_module(mod)[3](_rwkv_config(mod), 0, time_shift=True), mod, seed=4)
        with mod.no_grad():
            y = mha(mod.tensor(np.random.RandomState(3).randn(2, 5, 8).astype(np.float32)))
        outs.append((y.numpy(), mha.rotary_emb.seq_len_cached, mha.rotary_emb.cos_cached.dtype,
                     tuple(mha.rotary_emb.sin_cached.shape)))
    (tw, tp, ts, tk), (ty, tn, td, tsh), (gw, gp, gs, gk), (gy, gn, gd, gsh) = outs
    np.testing.assert_allclose(gw, tw, rtol=1e-6)
    assert gp == tp and "head_q.weight" in gp
    np.testing.assert_array_equal(gs, ts)
    assert np.all(gs[:, 0] == 0) and np.array_equal(gs[:, 1:], np.arange(40).reshape(2, 5, 4)[:, :-1])
    assert np.all(gk == 0) and np.all(tk == 0)     # scale_init 0: zeros_
    np.testing.assert_allclose(gy, ty, rtol=1e-4, atol=1e-6)
    assert (gn, gd, gsh) == (tn, tracegrad.float32, tsh) == (5, tracegrad.float32, (5, 2))
    assert str(td) == "torch.float32"
