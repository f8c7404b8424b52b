"""A seventh round of public PyTorch programs, this time the ones that use ``torch.compile`` as
users write it (``model = torch.compile(model)``, ``@torch.compile`` on a step or a function,
``model.compile()``, ``mode=``/``fullgraph=``/``dynamic=``, ``torch._dynamo.reset()``,
``torch.compiler.*``), run with torch and with tracegrad (``parity.run_both``: every logged
value and everything printed must agree), in the style of ``test_public_programs_round6.py``:
each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams. The full programs ran unchanged through a ``torch`` -> tracegrad
import alias (a meta-path finder) with tiny flags.

torch's own compile costs seconds per program here (inductor about a minute), so the torch side
runs eagerly: ``torch.compile`` still wraps (``OptimizedModule``, ``_orig_mod.`` state_dict keys)
under ``torch.compiler.set_stance("force_eager")``. Programs whose output depends on TorchDynamo
itself (``is_compiling()``, recompile stances) run it with its eager backend instead.
"""
import contextlib
import math

import numpy as np
import pytest

from parity import compare, get_torch, get_tracegrad, init_params, randn, run_both, run_program

torch = pytest.importorskip("torch")


@contextlib.contextmanager
def _torch_side(dynamo):
    """The torch side's torch.compile: eager (stance "force_eager"), or with ``dynamo`` TorchDynamo
    with its eager backend (``mode``/``options`` only configure inductor, so they are dropped);
    torch's compile caches are reset around."""
    real = get_torch()
    compile_ = real.compile

    def compile_eager(model=None, **kw):
        kw.pop("mode", None)
        kw.pop("options", None)
        kw["backend"] = "eager"
        return compile_(model, **kw)
    real._dynamo.reset()
    if dynamo:
        real.compile = compile_eager
    stance = contextlib.nullcontext() if dynamo else real.compiler.set_stance("force_eager")
    try:
        with stance:
            yield
    finally:
        real.compile = compile_
        real._dynamo.reset()


def run_compiled(program, dynamo=False, bf16=()):
    """``run_both`` with the torch side's torch.compile as ``_torch_side`` says; the logged
    values named in ``bf16`` come from bfloat16 arithmetic (autocast) and are compared with
    bfloat16's tolerance."""
    with _torch_side(dynamo):
        if not bf16:
            return run_both(program)
        ref, got = run_program(get_torch(), program), run_program(get_tracegrad(), program)
    for (ka, va), (kb, vb) in zip(ref, got):
        assert ka == kb
        if ka in bf16:
            np.testing.assert_allclose(vb[3], va[3], rtol=2e-2, atol=1e-3, err_msg=ka)
    compare([e for e in ref if e[0] not in bf16], [e for e in got if e[0] not in bf16])


def _tokens(n, vocab, seed):
    return np.random.RandomState(seed).randint(0, vocab, n).astype(np.int64)


# ---- karpathy/llama2.c ---------------------------------------------------------------------------
def _llama2c(torch):
    """karpathy/llama2.c model.py: ModelArgs, RMSNorm (x.float() and type_as), RoPE with real
    cos/sin tables (reshape(-1, 2).unbind(-1), stack(...).flatten(3)), grouped-query attention
    through repeat_kv's expand/reshape, F.scaled_dot_product_attention(is_causal=True), SwiGLU
    FeedForward, weight tying, buffers registered persistent=False, self.last_loss set in
    forward, configure_optimizers (decay groups, inspect.signature for fused), generate under
    @torch.inference_mode with h[:, [-1], :]."""
    import inspect
    from dataclasses import dataclass
    from typing import Optional, Tuple
    nn, F = torch.nn, torch.nn.functional

    @dataclass
    class ModelArgs:
        dim: int = 4096
        n_layers: int = 32
        n_heads: int = 32
        n_kv_heads: Optional[int] = None
        vocab_size: int = 32000
        hidden_dim: Optional[int] = None
        multiple_of: int = 256  # MLP hidden layer size will be multiple of
        norm_eps: float = 1e-5
        max_seq_len: int = 2048
        dropout: float = 0.0

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim: int, eps: float):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def _norm(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

        def forward(self, x):
            output = self._norm(x.float()).type_as(x)
            return output * self.weight

    def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(end, device=freqs.device)  # type: ignore
        freqs = torch.outer(t, freqs).float()  # type: ignore
        freqs_cos = torch.cos(freqs)  # real part
        freqs_sin = torch.sin(freqs)  # imaginary part
        return freqs_cos, freqs_sin

    def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
        ndim = x.ndim
        assert 0 <= 1 < ndim
        assert freqs_cis.shape == (x.shape[1], x.shape[-1])
        shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
        return freqs_cis.view(shape)

    def apply_rotary_emb(xq, xk, freqs_cos, freqs_sin) -> Tuple[torch.Tensor, torch.Tensor]:
        xq_r, xq_i = xq.float().reshape(xq.shape[:-1] + (-1, 2)).unbind(-1)
        xk_r, xk_i = xk.float().reshape(xk.shape[:-1] + (-1, 2)).unbind(-1)
        freqs_cos = reshape_for_broadcast(freqs_cos, xq_r)
        freqs_sin = reshape_for_broadcast(freqs_sin, xq_r)
        xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
        xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos
        xk_out_r = xk_r * freqs_cos - xk_i * freqs_sin
        xk_out_i = xk_r * freqs_sin + xk_i * freqs_cos
        xq_out = torch.stack([xq_out_r, xq_out_i], dim=-1).flatten(3)
        xk_out = torch.stack([xk_out_r, xk_out_i], dim=-1).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
        bs, slen, n_kv_heads, head_dim = x.shape
        if n_rep == 1:
            return x
        return (
            x[:, :, :, None, :]
            .expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
        )

    class Attention(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
            assert args.n_heads % self.n_kv_heads == 0
            model_parallel_size = 1
            self.n_local_heads = args.n_heads // model_parallel_size
            self.n_local_kv_heads = self.n_kv_heads // model_parallel_size
            self.n_rep = self.n_local_heads // self.n_local_kv_heads
            self.head_dim = args.dim // args.n_heads
            self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
            self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
            self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
            self.attn_dropout = nn.Dropout(args.dropout)
            self.resid_dropout = nn.Dropout(args.dropout)
            self.dropout = args.dropout
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')

        def forward(self, x, freqs_cos, freqs_sin):
            bsz, seqlen, _ = x.shape
            xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
            xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
            xk = xk.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
            xv = xv.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
            xq, xk = apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)
            xk = repeat_kv(xk, self.n_rep)  # (bs, seqlen, n_local_heads, head_dim)
            xv = repeat_kv(xv, self.n_rep)  # (bs, seqlen, n_local_heads, head_dim)
            xq = xq.transpose(1, 2)  # (bs, n_local_heads, seqlen, head_dim)
            xk = xk.transpose(1, 2)
            xv = xv.transpose(1, 2)
            output = torch.nn.functional.scaled_dot_product_attention(
                xq, xk, xv, attn_mask=None, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
            output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
            output = self.wo(output)
            output = self.resid_dropout(output)
            return output

    class FeedForward(nn.Module):
        def __init__(self, dim: int, hidden_dim: int, multiple_of: int, dropout: float):
            super().__init__()
            if hidden_dim is None:
                hidden_dim = 4 * dim
                hidden_dim = int(2 * hidden_dim / 3)
                hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
            self.w1 = nn.Linear(dim, hidden_dim, bias=False)
            self.w2 = nn.Linear(hidden_dim, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden_dim, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))

    class TransformerBlock(nn.Module):
        def __init__(self, layer_id: int, args: ModelArgs):
            super().__init__()
            self.n_heads = args.n_heads
            self.dim = args.dim
            self.head_dim = args.dim // args.n_heads
            self.attention = Attention(args)
            self.feed_forward = FeedForward(dim=args.dim, hidden_dim=args.hidden_dim,
                                            multiple_of=args.multiple_of, dropout=args.dropout)
            self.layer_id = layer_id
            self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
            self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

        def forward(self, x, freqs_cos, freqs_sin):
            h = x + self.attention.forward(self.attention_norm(x), freqs_cos, freqs_sin)
            out = h + self.feed_forward.forward(self.ffn_norm(h))
            return out

    class Transformer(nn.Module):
        last_loss: Optional[torch.Tensor]

        def __init__(self, params: ModelArgs):
            super().__init__()
            self.params = params
            self.vocab_size = params.vocab_size
            self.n_layers = params.n_layers
            self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
            self.dropout = nn.Dropout(params.dropout)
            self.layers = torch.nn.ModuleList()
            for layer_id in range(params.n_layers):
                self.layers.append(TransformerBlock(layer_id, params))
            self.norm = RMSNorm(params.dim, eps=params.norm_eps)
            self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
            self.tok_embeddings.weight = self.output.weight
            freqs_cos, freqs_sin = precompute_freqs_cis(self.params.dim // self.params.n_heads, self.params.max_seq_len)
            self.register_buffer("freqs_cos", freqs_cos, persistent=False)
            self.register_buffer("freqs_sin", freqs_sin, persistent=False)
            self.last_loss = None

        def forward(self, tokens: torch.Tensor, targets: Optional[torch.Tensor] = None) -> torch.Tensor:
            _bsz, seqlen = tokens.shape
            h = self.tok_embeddings(tokens)
            h = self.dropout(h)
            freqs_cos = self.freqs_cos[:seqlen]
            freqs_sin = self.freqs_sin[:seqlen]
            for layer in self.layers:
                h = layer(h, freqs_cos, freqs_sin)
            h = self.norm(h)
            if targets is not None:
                logits = self.output(h)
                self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits = self.output(h[:, [-1], :]) # note: using list [-1] to preserve the time dim
                self.last_loss = None
            return logits

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            num_decay_params = sum(p.numel() for p in decay_params)
            num_nodecay_params = sum(p.numel() for p in nodecay_params)
            print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
            print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
            fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == 'cuda'
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
            print(f"using fused AdamW: {use_fused}")
            return optimizer

        @torch.inference_mode()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.params.max_seq_len else idx[:, -self.params.max_seq_len:]
                logits = self(idx_cond)
                logits = logits[:, -1, :] # crop to just the final time step
                if temperature == 0.0:
                    _, idx_next = torch.topk(logits, k=1, dim=-1)
                else:
                    logits = logits / temperature
                    if top_k is not None:
                        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                        logits[logits < v[:, [-1]]] = -float('Inf')
                    probs = F.softmax(logits, dim=-1)
                    idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx
    return ModelArgs, Transformer


# karpathy/llama2.c model.py (above) trained as train.py does with compile=True: model =
# torch.compile(model) and raw_model = model (the compiled module), self.last_loss written in the
# compiled forward and read back through the wrapper, the warmup/cosine get_lr written into
# param_groups, gradient accumulation, a disabled GradScaler, clip_grad_norm_, estimate_loss
# under @torch.no_grad with model.eval()/train(), the checkpoint dict with '_orig_mod.' keys and
# the resume path stripping them; generate(temperature=0.0) under inference_mode. dim 8, one
# layer, 2 heads over 1 kv head, vocab 16, max_seq_len 6; Task.iter_batches -> numpy batches
def test_llama2c_train_compiled(tmp_path):
    def program(torch, log):
        import warnings
        from contextlib import nullcontext
        ModelArgs, Transformer = _llama2c(torch)
        rs = np.random.RandomState(3)
        data = {"train": _tokens(200, 16, 1), "val": _tokens(100, 16, 2)}
        batch_size, max_seq_len, vocab_size = 2, 6, 16

        def iter_batches(split):
            while True:
                ix = rs.randint(0, len(data[split]) - max_seq_len - 1, batch_size)
                chunk = np.stack([data[split][i:i + max_seq_len + 1] for i in ix])
                x = torch.from_numpy(chunk[:, :-1].copy()).to("cpu", non_blocking=True)
                y = torch.from_numpy(chunk[:, 1:].copy()).to("cpu", non_blocking=True)
                yield x, y

        eval_interval, eval_iters, always_save_checkpoint = 2, 1, True
        gradient_accumulation_steps, learning_rate, max_iters = 2, 5e-3, 4
        weight_decay, beta1, beta2, grad_clip, decay_lr, warmup_iters = 1e-1, 0.9, 0.95, 1.0, True, 2
        device, dtype, compile = "cpu", "bfloat16", True
        lr_decay_iters, min_lr = max_iters, 0.0
        device_type = "cuda" if "cuda" in device else "cpu"
        ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type)
        model_args = dict(dim=8, n_layers=1, n_heads=2, n_kv_heads=1, vocab_size=vocab_size,
                          multiple_of=4, max_seq_len=max_seq_len, dropout=0.0)
        gptconf = ModelArgs(**model_args)
        model = init_params(torch, Transformer(gptconf), 4)
        model.to(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # torch.cuda.amp.GradScaler is deprecated
            scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
        optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
        if compile:
            print("compiling the model... (takes a ~minute)")
            unoptimized_model = model
            model = torch.compile(model)  # requires PyTorch 2.0

        @torch.no_grad()
        def estimate_loss():
            out = {}
            model.eval()
            for split in ["train", "val"]:
                batch_iter = iter_batches(split=split)
                losses = torch.zeros(eval_iters)  # keep on CPU
                for k in range(eval_iters):
                    X, Y = next(batch_iter)
                    with ctx:
                        logits = model(X, Y)
                        loss = raw_model.last_loss
                    losses[k] = loss.item()
                out[split] = losses.mean()
            model.train()
            return out

        def get_lr(it):
            if it < warmup_iters:
                return learning_rate * it / warmup_iters
            if it > lr_decay_iters:
                return min_lr
            decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
            assert 0 <= decay_ratio <= 1
            coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
            return min_lr + coeff * (learning_rate - min_lr)

        train_batch_iter = iter_batches(split="train")
        X, Y = next(train_batch_iter)  # fetch the very first batch
        raw_model = model
        iter_num, best_val_loss = 0, 1e9
        while True:
            lr = get_lr(iter_num) if decay_lr else learning_rate
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr
            if iter_num % eval_interval == 0:
                losses = estimate_loss()
                print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
                if losses["val"] < best_val_loss or always_save_checkpoint:
                    best_val_loss = losses["val"]
                    if iter_num > 0:
                        checkpoint = {
                            "model": raw_model.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "model_args": model_args,
                            "iter_num": iter_num,
                            "best_val_loss": best_val_loss,
                        }
                        print("saving checkpoint to out_dir")
                        torch.save(checkpoint, tmp_path / f"{torch.__name__}.pt")
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits = model(X, Y)
                    loss = raw_model.last_loss
                    loss = loss / gradient_accumulation_steps
                X, Y = next(train_batch_iter)
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            lossf = loss.item() * gradient_accumulation_steps
            print(f"{iter_num} | loss {lossf:.4f} | lr {lr:e}")
            iter_num += 1
            if iter_num > max_iters:
                break
        # resume, as train.py's init_from == "resume"
        checkpoint = torch.load(tmp_path / f"{torch.__name__}.pt", map_location=device)
        log("keys", sorted(checkpoint["model"])[:3])
        model = Transformer(ModelArgs(**checkpoint["model_args"]))
        state_dict = checkpoint["model"]
        unwanted_prefix = "_orig_mod."
        for k, v in list(state_dict.items()):
            if k.startswith(unwanted_prefix):
                state_dict[k[len(unwanted_prefix) :]] = state_dict.pop(k)
        model.load_state_dict(state_dict)
        log("best_val_loss", checkpoint["best_val_loss"])
        log("wq", model.layers[0].attention.wq.weight)
        model.eval()
        y = model.generate(torch.tensor([[1, 2, 3]]), 2, temperature=0.0)   # each new length: new programs
        log("sample", y[0].tolist())
        log("exp_avg", optimizer.state_dict()["state"][1]["exp_avg"])
    run_compiled(program)


# ---- pytorch/tutorials: the torch.compile recipes -------------------------------------------------
def _stance_program(torch, log, first_call):
    """pytorch/tutorials recipes_source/torch_compiler_set_stance_tutorial.py; ``first_call``
    keeps the recipe's opening call of ``foo`` (its first call prints the compiled branch)."""
    @torch.compile
    def foo(x):
        if torch.compiler.is_compiling():
            # torch.compile is active
            return x + 1
        else:
            # torch.compile is not active
            return x - 1

    inp = torch.zeros(3)
    if first_call:
        print(foo(inp))  # compiled, prints 1

    @torch.compiler.set_stance("force_eager")
    def bar(x):
        # force disable the compiler
        return foo(x)

    print(bar(inp))  # not compiled, prints -1
    with torch.compiler.set_stance("force_eager"):
        print(foo(inp))  # not compiled, prints -1
    torch.compiler.set_stance("force_eager")
    print(foo(inp))  # not compiled, prints -1
    torch.compiler.set_stance("default")
    foo(inp)
    print(foo(inp))  # compiled, prints 1

    @torch.compile
    def my_big_model(x):
        return torch.relu(x)

    # first compilation
    my_big_model(randn(torch, (3,), 0))
    my_big_model(randn(torch, (3,), 0))
    with torch.compiler.set_stance("fail_on_recompile"):
        log("same shape", my_big_model(randn(torch, (3,), 1)))  # no recompilation - OK
        try:
            my_big_model(randn(torch, (4,), 2))  # recompilation - error
        except Exception as e:
            print(type(e).__name__, str(e).split(".")[0])

    @torch.compile
    def my_huge_model(x):
        if torch.compiler.is_compiling():
            return x + 1
        else:
            return x - 1

    my_huge_model(torch.zeros(3))
    print(my_huge_model(torch.zeros(3)))  # 1
    with torch.compiler.set_stance("eager_on_recompile"):
        print(my_huge_model(torch.zeros(3)))  # 1
        print(my_huge_model(torch.zeros(4)))  # -1
        print(my_huge_model(torch.zeros(3)))  # 1

    @torch.compile
    def my_gigantic_model(x, y):
        x = x @ y
        x = x @ y
        x = x @ y
        return x

    inps = randn(torch, (5, 5), 3), randn(torch, (5, 5), 4)
    with torch.compiler.set_stance("force_eager"):
        log("eager", my_gigantic_model(*inps))
    for _ in range(3):
        my_gigantic_model(*inps)
    log("compiled", my_gigantic_model(*inps))

    @torch.compile
    def my_humongous_model(x):
        return torch.sin(x, x)

    try:
        with torch.compiler.set_stance("force_eager"):
            print(my_humongous_model(torch.randn(3)))
        # this call to the compiled model won't run
        print(my_humongous_model(torch.randn(3)))
    except Exception as e:
        print(type(e).__name__, e)


# pytorch/tutorials recipes_source/torch_compiler_set_stance_tutorial.py: set_stance as a
# decorator, a context manager and a raw call; is_compiling() choosing the branch;
# "fail_on_recompile" (RuntimeError, its message's first sentence), "eager_on_recompile";
# force_eager catching a TypeError (sin(x, x)) before compiling. Every compiled function is
# called once more before its first printed result (see the xfail below)
def test_tutorials_set_stance():
    run_compiled(lambda torch, log: _stance_program(torch, log, first_call=False), dynamo=True)


# the recipe as written: torch.compile's first call of foo is already compiled
# (is_compiling() is True); tracegrad runs a compiled function's first call eagerly, so that
# lazily created state (.grad, optimizer state) exists before tracing, with is_compiling()
# True there too
def test_tutorials_set_stance_first_call():
    run_compiled(lambda torch, log: _stance_program(torch, log, first_call=True), dynamo=True)


# the recipe's "stance can only be changed outside of any torch.compile region": torch raises
# (AssertionError, "Attempt to trace forbidden callable") on the first call of baz and outer
def test_tutorials_set_stance_inside_compiled():
    def program(torch, log):
        inp = torch.zeros(3)

        @torch.compile
        def baz(x):
            # error!
            with torch.compiler.set_stance("force_eager"):
                return x + 1

        try:
            baz(inp)
        except Exception as e:
            print(type(e).__name__)

        @torch.compiler.set_stance("force_eager")
        def inner(x):
            return x + 1

        @torch.compile
        def outer(x):
            # error!
            return inner(x)

        try:
            outer(inp)
        except Exception as e:
            print(type(e).__name__)
    run_compiled(program, dynamo=True)


# pytorch/tutorials intermediate_source/torch_compile_tutorial.py: torch.compile(foo) and
# @torch.compile on functions, torch.compile(MyModule()), torch._dynamo.reset(), a compiled
# model under no_grad, the train(mod, data) step (opt.zero_grad(True), CrossEntropyLoss(),
# backward, Adam.step) compiled with mode="reduce-overhead", data-dependent control flow
# (f1: if x.sum() < 0), an int argument (f2), a NumPy round trip (f3: x.numpy(), scipy's dct,
# torch.from_numpy) and bar's graph break; densenet121 -> a small conv net, 128x128 -> 6x6
def test_tutorials_torch_compile_tutorial():
    def program(torch, log):
        import scipy.fft

        def foo(x, y):
            a = torch.sin(x)
            b = torch.cos(y)
            return a + b
        opt_foo1 = torch.compile(foo)
        log("foo1", opt_foo1(randn(torch, (3, 3), 0), randn(torch, (3, 3), 1)))

        @torch.compile
        def opt_foo2(x, y):
            a = torch.sin(x)
            b = torch.cos(y)
            return a + b
        log("foo2", opt_foo2(randn(torch, (3, 3), 2), randn(torch, (3, 3), 3)))

        class MyModule(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(10, 4)

            def forward(self, x):
                return torch.nn.functional.relu(self.lin(x))

        mod = init_params(torch, MyModule(), 4)
        opt_mod = torch.compile(mod)
        log("mod", opt_mod(randn(torch, (3, 10), 5)))

        def generate_data(b, seed):
            return (
                randn(torch, (b, 3, 6, 6), seed).to(torch.float32),
                torch.tensor(np.random.RandomState(seed).randint(0, 10, b)),
            )

        def init_model():
            return init_params(torch, torch.nn.Sequential(
                torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 10)), 6).to(torch.float32)

        model = init_model()
        torch._dynamo.reset()
        model_opt = torch.compile(model, mode="reduce-overhead")
        for i in range(2):
            inp = generate_data(4, 10 + i)[0]
            with torch.no_grad():
                log("eval", model_opt(inp))

        model = init_model()
        opt = torch.optim.Adam(model.parameters())

        def train(mod, data):
            opt.zero_grad(True)
            pred = mod(data[0])
            loss = torch.nn.CrossEntropyLoss()(pred, data[1])
            loss.backward()
            opt.step()

        train_opt = torch.compile(train, mode="reduce-overhead")
        for i in range(3):
            inp = generate_data(4, 20 + i)
            train_opt(model, inp)
        log("weight", model[5].weight)
        log("running_mean", model[1].running_mean)

        def f1(x, y):
            if x.sum() < 0:
                return -y
            return y

        def test_fns(fn1, fn2, args):
            out1 = fn1(*args)
            out2 = fn2(*args)
            return torch.allclose(out1, out2)

        inp1, inp2 = randn(torch, (5, 5), 30), randn(torch, (5, 5), 31)
        torch._dynamo.reset()
        compile_f1 = torch.compile(f1)
        print("compile 1, 1:", test_fns(f1, compile_f1, (inp1, inp2)))
        print("compile 1, 2:", test_fns(f1, compile_f1, (-inp1, inp2)))
        print("compile 1, 3:", test_fns(f1, compile_f1, (inp1, inp2)))

        def f2(x, y):
            return x + y

        compile_f2 = torch.compile(f2)
        print("compile 2:", test_fns(f2, compile_f2, (inp1, 3)))
        print("compile 2:", test_fns(f2, compile_f2, (inp1, 4)))

        def f3(x):
            x = x * 2
            x = scipy.fft.dct(x.numpy())
            x = torch.from_numpy(x)
            x = x * 2
            return x

        compile_f3 = torch.compile(f3)
        for s in (32, 33):
            print("compile 3:", test_fns(f3, compile_f3, (randn(torch, (5, 5), s),)))
        log("f3", compile_f3(inp2))

        def bar(a, b):
            x = a / (torch.abs(a) + 1)
            if b.sum() < 0:
                b = b * -1
            return x * b

        opt_bar = torch.compile(bar)
        inp1, inp2 = randn(torch, (10,), 34), randn(torch, (10,), 35)
        for _ in range(2):
            log("bar", [opt_bar(inp1, inp2), opt_bar(inp1, -inp2)])
    run_compiled(program)


# pytorch/tutorials recipes_source/regional_compilation.py: a ModuleList of torch.compile(Layer())
# (regional compilation) next to torch.compile(Model) (full), torch.compiler.reset() and
# torch._inductor.utils.fresh_inductor_cache() around each measured first call; 64 layers of 10
# -> 3 layers of 6 on the CPU (the recipe's .cuda() and cuda.synchronize dropped)
def test_tutorials_regional_compilation():
    def program(torch, log):
        import importlib
        importlib.import_module(torch.__name__ + "._inductor.utils")

        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = torch.nn.Linear(6, 6)
                self.relu1 = torch.nn.ReLU()
                self.linear2 = torch.nn.Linear(6, 6)
                self.relu2 = torch.nn.ReLU()

            def forward(self, x):
                a = self.linear1(x)
                a = self.relu1(a)
                a = torch.sigmoid(a)
                b = self.linear2(a)
                b = self.relu2(b)
                return b

        class Model(torch.nn.Module):
            def __init__(self, apply_regional_compilation):
                super().__init__()
                self.linear = torch.nn.Linear(6, 6)
                # Apply compile only to the repeated layers.
                if apply_regional_compilation:
                    self.layers = torch.nn.ModuleList(
                        [torch.compile(Layer()) for _ in range(3)]
                    )
                else:
                    self.layers = torch.nn.ModuleList([Layer() for _ in range(3)])

            def forward(self, x):
                x = self.linear(x)
                for layer in self.layers:
                    x = layer(x)
                return x

        model = init_params(torch, Model(apply_regional_compilation=False), 0)
        full_compiled_model = torch.compile(model)
        regional_compiled_model = init_params(torch, Model(apply_regional_compilation=True), 0)
        log("keys", list(regional_compiled_model.state_dict())[:4])

        def measure_latency(fn, input):
            # Reset the compiler caches to ensure no reuse between different runs
            torch.compiler.reset()
            with torch._inductor.utils.fresh_inductor_cache():
                return fn(input)

        input = randn(torch, (4, 6), 1)
        log("full", measure_latency(full_compiled_model, input))
        log("regional", measure_latency(regional_compiled_model, input))
        for _ in range(2):
            out = regional_compiled_model(input)
        out.sum().backward()
        log("grad", regional_compiled_model.layers[0].linear1.weight.grad)
        log("type", type(regional_compiled_model.layers[1]).__name__)
    run_compiled(program)


# pytorch/tutorials recipes_source/compiling_optimizer_lr_scheduler.py: Adam with a tensor lr
# (lr=torch.tensor(0.01)) and LinearLR, opt.step() and sched.step() inside one
# @torch.compile(fullgraph=False) function, the lr printed each call; then the float-lr version
# (a recompile per lr value in torch) with torch._logging.set_logs(recompiles=True); and
# recipes_source/compiling_optimizer.py's @torch.compile(fullgraph=False) fn(): opt.step().
# 10 Linear(1024, 1024) on CUDA -> 3 Linear(6, 6) on the CPU
def test_tutorials_compiling_optimizer_lr_scheduler():
    def program(torch, log):
        model = init_params(torch, torch.nn.Sequential(
            *[torch.nn.Linear(6, 6, False) for _ in range(3)]), 0)
        input = torch.rand(6) * 0 + randn(torch, (6,), 1)
        output = model(input)
        output.sum().backward()

        opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
        sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

        @torch.compile(fullgraph=False)
        def fn():
            opt.step()
            sched.step()

        for _ in range(5):
            fn()
            print(opt.param_groups[0]["lr"])
        log("weight", model[0].weight)

        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

        @torch.compile(fullgraph=False)
        def fn():
            opt.step()
            sched.step()

        torch._logging.set_logs(recompiles=True)
        for _ in range(5):
            fn()
        torch._logging.set_logs()
        print(opt.param_groups[0]["lr"])
        log("weight", model[2].weight)

        # compiling_optimizer.py
        opt = torch.optim.Adam(model.parameters(), lr=0.01)

        @torch.compile(fullgraph=False)
        def fn():
            opt.step()

        for _ in range(5):
            fn()
        log("weight", model[1].weight)
        log("exp_avg_sq", opt.state[model[1].weight]["exp_avg_sq"])
    run_compiled(program)


# ---- pytorch-labs/gpt-fast ---------------------------------------------------------------------
def _gpt_fast(torch):
    """pytorch-labs/gpt-fast model.py: ModelArgs with __post_init__ and find_multiple, KVCache
    buffers written by index (k_out[:, :, input_pos] = k_val), setup_caches, a bool causal mask
    indexed by input_pos, wqkv split, RoPE from torch.polar's real/imag cache in bfloat16,
    repeat_interleave for grouped-query heads, SDPA with a bool attn_mask, RMSNorm."""
    from dataclasses import dataclass
    from typing import Optional
    nn, F = torch.nn, torch.nn.functional
    Tensor = torch.Tensor

    def find_multiple(n: int, k: int) -> int:
        if n % k == 0:
            return n
        return n + k - (n % k)

    @dataclass
    class ModelArgs:
        block_size: int = 2048
        vocab_size: int = 32000
        n_layer: int = 32
        n_head: int = 32
        dim: int = 4096
        intermediate_size: int = None
        n_local_heads: int = -1
        head_dim: int = 64
        rope_base: float = 10000
        norm_eps: float = 1e-5
        rope_scaling: Optional[dict] = None

        def __post_init__(self):
            if self.n_local_heads == -1:
                self.n_local_heads = self.n_head
            if self.intermediate_size is None:
                hidden_dim = 4 * self.dim
                n_hidden = int(2 * hidden_dim / 3)
                self.intermediate_size = find_multiple(n_hidden, 256)
            self.head_dim = self.dim // self.n_head

    class KVCache(nn.Module):
        def __init__(self, max_batch_size, max_seq_length, n_heads, head_dim, dtype=torch.bfloat16):
            super().__init__()
            cache_shape = (max_batch_size, n_heads, max_seq_length, head_dim)
            self.register_buffer('k_cache', torch.zeros(cache_shape, dtype=dtype))
            self.register_buffer('v_cache', torch.zeros(cache_shape, dtype=dtype))

        def update(self, input_pos, k_val, v_val):
            # input_pos: [S], k_val: [B, H, S, D]
            assert input_pos.shape[0] == k_val.shape[2]
            k_out = self.k_cache
            v_out = self.v_cache
            k_out[:, :, input_pos] = k_val
            v_out[:, :, input_pos] = v_val
            return k_out, v_out

    class Transformer(nn.Module):
        def __init__(self, config: ModelArgs) -> None:
            super().__init__()
            self.config = config
            self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
            self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layer))
            self.norm = RMSNorm(config.dim, eps=config.norm_eps)
            self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
            self.freqs_cis: Optional[Tensor] = None
            self.mask_cache: Optional[Tensor] = None
            self.max_batch_size = -1
            self.max_seq_length = -1

        def setup_caches(self, max_batch_size, max_seq_length):
            if self.max_seq_length >= max_seq_length and self.max_batch_size >= max_batch_size:
                return
            head_dim = self.config.dim // self.config.n_head
            max_seq_length = find_multiple(max_seq_length, 8)
            self.max_seq_length = max_seq_length
            self.max_batch_size = max_batch_size
            dtype = self.output.weight.dtype
            if hasattr(self.output, "scales"):
                dtype = self.output.scales.dtype
            elif hasattr(self.output, "scales_and_zeros"):
                dtype = self.output.scales_and_zeros.dtype
            for b in self.layers:
                b.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_local_heads, head_dim, dtype)
            self.freqs_cis = precompute_freqs_cis(self.config.block_size, self.config.dim // self.config.n_head, self.config.rope_base, dtype, self.config.rope_scaling)
            self.causal_mask = torch.tril(torch.ones(self.max_seq_length, self.max_seq_length, dtype=torch.bool))

        def forward(self, idx: Tensor, input_pos: Optional[Tensor] = None) -> Tensor:
            assert self.freqs_cis is not None, "Caches must be initialized first"
            mask = self.causal_mask[None, None, input_pos]
            freqs_cis = self.freqs_cis[input_pos]
            x = self.tok_embeddings(idx)
            for i, layer in enumerate(self.layers):
                x = layer(x, input_pos, freqs_cis, mask)
            x = self.norm(x)
            logits = self.output(x)
            return logits

    class TransformerBlock(nn.Module):
        def __init__(self, config: ModelArgs) -> None:
            super().__init__()
            self.attention = Attention(config)
            self.feed_forward = FeedForward(config)
            self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
            self.attention_norm = RMSNorm(config.dim, config.norm_eps)

        def forward(self, x: Tensor, input_pos: Tensor, freqs_cis: Tensor, mask: Tensor) -> Tensor:
            h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
            out = h + self.feed_forward(self.ffn_norm(h))
            return out

    class Attention(nn.Module):
        def __init__(self, config: ModelArgs):
            super().__init__()
            assert config.dim % config.n_head == 0
            total_head_dim = (config.n_head + 2 * config.n_local_heads) * config.head_dim
            self.wqkv = nn.Linear(config.dim, total_head_dim, bias=False)
            self.wo = nn.Linear(config.dim, config.dim, bias=False)
            self.kv_cache = None
            self.n_head = config.n_head
            self.head_dim = config.head_dim
            self.n_local_heads = config.n_local_heads
            self.dim = config.dim
            self._register_load_state_dict_pre_hook(self.load_hook)

        def load_hook(self, state_dict, prefix, *args):
            if prefix + "wq.weight" in state_dict:
                wq = state_dict.pop(prefix + "wq.weight")
                wk = state_dict.pop(prefix + "wk.weight")
                wv = state_dict.pop(prefix + "wv.weight")
                state_dict[prefix + "wqkv.weight"] = torch.cat([wq, wk, wv])

        def forward(self, x: Tensor, freqs_cis: Tensor, mask: Tensor, input_pos: Optional[Tensor] = None) -> Tensor:
            bsz, seqlen, _ = x.shape
            kv_size = self.n_local_heads * self.head_dim
            q, k, v = self.wqkv(x).split([self.dim, kv_size, kv_size], dim=-1)
            q = q.view(bsz, seqlen, self.n_head, self.head_dim)
            k = k.view(bsz, seqlen, self.n_local_heads, self.head_dim)
            v = v.view(bsz, seqlen, self.n_local_heads, self.head_dim)
            q = apply_rotary_emb(q, freqs_cis)
            k = apply_rotary_emb(k, freqs_cis)
            q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))
            if self.kv_cache is not None:
                k, v = self.kv_cache.update(input_pos, k, v)
            k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
            v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
            y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)
            y = self.wo(y)
            return y

    class FeedForward(nn.Module):
        def __init__(self, config: ModelArgs) -> None:
            super().__init__()
            self.w1 = nn.Linear(config.dim, config.intermediate_size, bias=False)
            self.w3 = nn.Linear(config.dim, config.intermediate_size, bias=False)
            self.w2 = nn.Linear(config.intermediate_size, config.dim, bias=False)

        def forward(self, x: Tensor) -> Tensor:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def _norm(self, x):
            return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)

        def forward(self, x: Tensor) -> Tensor:
            output = self._norm(x.float()).type_as(x)
            return output * self.weight

    def precompute_freqs_cis(seq_len: int, n_elem: int, base: int = 10000, dtype: torch.dtype = torch.bfloat16,
                             rope_scaling: Optional[dict] = None) -> Tensor:
        freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
        t = torch.arange(seq_len, device=freqs.device)
        freqs = torch.outer(t, freqs)
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        cache = torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)
        return cache.to(dtype=dtype)

    def apply_rotary_emb(x: Tensor, freqs_cis: Tensor) -> Tensor:
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
        x_out2 = torch.stack(
            [
                xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
                xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
            ],
            -1,
        )
        x_out2 = x_out2.flatten(3)
        return x_out2.type_as(x)
    return ModelArgs, Transformer


# pytorch-labs/gpt-fast model.py (above) with generate.py's header (import torch._dynamo.config,
# the torch._inductor.config and torch._functorch.config settings) and decoding: decode_one_token compiled
# as main() does (mode="reduce-overhead", fullgraph=True; prefill eager, as without
# --compile_prefill), the KV cache written in place by every compiled call,
# input_pos += 1 on a tensor between calls, new_tokens.append(next_token.clone()), the
# multinomial_sample_one_no_sync draw (exponential_) at top_k=1 (the argmax whatever the draw),
# generate() under @torch.no_grad with torch.device(device) around setup_caches, a model in
# bfloat16 (the default precision); stories15M's config -> 1 layer, dim 8, 2 heads over 1 kv head
def test_gpt_fast_generate_compiled():
    def program(torch, log):
        from typing import Optional, Tuple
        ModelArgs, Transformer = _gpt_fast(torch)

        def multinomial_sample_one_no_sync(probs_sort): # Does multinomial sampling without a cuda synchronization
            q = torch.empty_like(probs_sort).exponential_(1)
            return torch.argmax(probs_sort / q, dim=-1, keepdim=True).to(dtype=torch.int)

        def logits_to_probs(logits, temperature: float = 1.0, top_k: Optional[int] = None):
            logits = logits / max(temperature, 1e-5)
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                pivot = v.select(-1, -1).unsqueeze(-1)
                logits = torch.where(logits < pivot, -float("Inf"), logits)
            probs = torch.nn.functional.softmax(logits, dim=-1)
            return probs

        def sample(logits, temperature: float = 1.0, top_k: Optional[int] = None):
            probs = logits_to_probs(logits[:, -1], temperature, top_k)
            idx_next = multinomial_sample_one_no_sync(probs)
            return idx_next, probs

        def prefill(model, x: torch.Tensor, input_pos: torch.Tensor, **sampling_kwargs) -> torch.Tensor:
            logits = model(x, input_pos)
            return sample(logits, **sampling_kwargs)[0]

        def decode_one_token(model, x: torch.Tensor, input_pos: torch.Tensor, **sampling_kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
            assert input_pos.shape[-1] == 1
            logits = model(x, input_pos)
            return sample(logits, **sampling_kwargs)

        def decode_n_tokens(model, cur_token, input_pos, num_new_tokens: int, callback=lambda _: _, **sampling_kwargs):
            new_tokens, new_probs = [], []
            for i in range(num_new_tokens):
                with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):
                    next_token, next_prob = decode_one_token(
                        model, cur_token, input_pos, **sampling_kwargs
                    )
                    input_pos += 1
                    new_tokens.append(next_token.clone())
                    callback(new_tokens[-1])
                    new_probs.append(next_prob.clone())
                    cur_token = next_token.clone()
            return new_tokens, new_probs

        @torch.no_grad()
        def generate(model, prompt, max_new_tokens, batch_size, *, interactive, draft_model,
                     speculate_k=8, callback=lambda x: x, **sampling_kwargs):
            T = prompt.size(-1)
            T_new = T + max_new_tokens
            max_seq_length = min(T_new, model.config.block_size)
            device, dtype = prompt.device, prompt.dtype
            with torch.device(device):
                model.setup_caches(max_batch_size=batch_size, max_seq_length=max_seq_length)
            empty = torch.empty(batch_size, T_new, dtype=dtype, device=device)
            prompt = prompt.view(1, -1).repeat(batch_size, 1)
            empty[:, :T] = prompt
            seq = empty
            input_pos = torch.arange(0, T, device=device)
            next_token = prefill(model, prompt.view(batch_size, -1), input_pos, **sampling_kwargs).clone()
            seq[:, T] = next_token.squeeze()
            input_pos = torch.tensor([T], device=device, dtype=torch.int)
            accept_counts = [0] * (speculate_k + 1)
            generated_tokens, _ = decode_n_tokens(model, next_token.view(batch_size, -1), input_pos, max_new_tokens - 1, callback=callback, **sampling_kwargs)
            seq[:, T + 1:] = torch.cat(generated_tokens, dim=-1)
            generate_stats = {
                'accept_counts': accept_counts
            }
            return seq, generate_stats

        import importlib
        importlib.import_module(torch.__name__ + "._dynamo.config")
        importlib.import_module(torch.__name__ + "._inductor.config")
        saved = (torch._inductor.config.coordinate_descent_tuning, torch._inductor.config.fx_graph_cache,
                 torch._functorch.config.enable_autograd_cache)
        torch._inductor.config.coordinate_descent_tuning = True
        torch._inductor.config.triton.unique_kernel_names = True
        torch._inductor.config.fx_graph_cache = True
        torch._functorch.config.enable_autograd_cache = True
        with torch.device('meta'):
            model = Transformer(ModelArgs(block_size=16, vocab_size=24, n_layer=1, n_head=2, n_local_heads=1,
                                          dim=8, intermediate_size=12))
        model = model.to_empty(device='cpu')
        init_params(torch, model, 7, scale=0.8)
        model = model.to(device='cpu', dtype=torch.bfloat16)
        model = model.eval()
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        prompt = torch.tensor([1, 5, 7, 2], dtype=torch.int, device='cpu')
        y, metrics = generate(model, prompt, 4, batch_size=1, draft_model=None, speculate_k=5,
                              interactive=False, callback=lambda x: x, temperature=0.8, top_k=1)
        log("tokens", y.tolist())
        log("accept_counts", metrics['accept_counts'])
        log("k_cache", model.layers[0].attention.kv_cache.k_cache.float())
        (torch._inductor.config.coordinate_descent_tuning, torch._inductor.config.fx_graph_cache,
         torch._functorch.config.enable_autograd_cache) = saved
    run_compiled(program)


# pytorch/tutorials intermediate_source/scaled_dot_product_attention_tutorial.py: the
# CausalSelfAttention module (c_attn chunked into q/k/v, SDPA with dropout and is_causal only in
# training), printed, compiled with torch.compile and called in eval(); the attention-bias
# part: causal_upper_left/causal_lower_right (CausalBias tensor subclasses) passed as attn_mask,
# and F.scaled_dot_product_attention itself compiled with fullgraph=True on them. 8 heads of 64
# -> 2 of 4, float32 on the CPU (the tutorial's float16 on CUDA), dropout 0; the tutorial's
# ``assert issubclass(type(upper_left_bias), torch.Tensor)`` is the xfail below
def test_tutorials_sdpa_compiled():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class CausalSelfAttention(nn.Module):
            def __init__(self, num_heads: int, embed_dimension: int, bias: bool = False, is_causal: bool = False, dropout: float = 0.0):
                super().__init__()
                assert embed_dimension % num_heads == 0
                # key, query, value projections for all heads, but in a batch
                self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, bias=bias)
                # output projection
                self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
                # regularization
                self.dropout = dropout
                self.resid_dropout = nn.Dropout(dropout)
                self.num_heads = num_heads
                self.embed_dimension = embed_dimension
                # Perform causal masking
                self.is_causal = is_causal

            def forward(self, x):
                query_projected = self.c_attn(x)
                batch_size = query_projected.size(0)
                embed_dim = query_projected.size(2)
                head_dim = embed_dim // (self.num_heads * 3)
                query, key, value = query_projected.chunk(3, -1)
                query = query.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
                key = key.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
                value = value.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
                if self.training:
                    dropout = self.dropout
                    is_causal = self.is_causal
                else:
                    dropout = 0.0
                    is_causal = False
                y = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout, is_causal=is_causal)
                y = y.transpose(1, 2).view(batch_size, -1, self.num_heads * head_dim)
                y = self.resid_dropout(self.c_proj(y))
                return y

        num_heads = 2
        heads_per_dim = 4
        embed_dimension = num_heads * heads_per_dim
        dtype = torch.float32
        model = CausalSelfAttention(num_heads=num_heads, embed_dimension=embed_dimension, bias=False, is_causal=True, dropout=0.0).to("cpu").to(dtype).eval()
        init_params(torch, model, 0)
        print(model)
        batch_size = 3
        max_sequence_len = 5
        x = torch.rand(batch_size, max_sequence_len, embed_dimension, device="cpu", dtype=dtype) * 0 \
            + randn(torch, (batch_size, max_sequence_len, embed_dimension), 1)
        log("eager", model(x))
        compiled_model = torch.compile(model)
        # Let's compile it
        compiled_model(x)
        for _ in range(2):
            log("compiled", compiled_model(x))
        model.train()
        log("train", compiled_model(x))

        import importlib
        bias = importlib.import_module(torch.__name__ + ".nn.attention.bias")
        causal_lower_right, causal_upper_left = bias.causal_lower_right, bias.causal_upper_left
        batch_size = 2
        sequence_length_q = 2
        sequence_length_kv = 5
        num_heads = 2
        embed_dimension = 4
        query = randn(torch, (batch_size, num_heads, sequence_length_q, embed_dimension), 2)
        key = randn(torch, (batch_size, num_heads, sequence_length_kv, embed_dimension), 3)
        value = randn(torch, (batch_size, num_heads, sequence_length_kv, embed_dimension), 4)
        upper_left_bias = causal_upper_left(sequence_length_q, sequence_length_kv)
        lower_right_bias = causal_lower_right(sequence_length_q, sequence_length_kv)
        print(type(upper_left_bias).__name__)
        assert type(upper_left_bias) == type(lower_right_bias)
        print(upper_left_bias)
        print(lower_right_bias)
        out_upper_left = F.scaled_dot_product_attention(query, key, value, upper_left_bias)
        out_lower_right = F.scaled_dot_product_attention(query, key, value, lower_right_bias)
        out_is_causal = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        assert torch.allclose(out_upper_left, out_is_causal)
        assert not torch.allclose(out_upper_left, out_lower_right)
        compiled_sdpa = torch.compile(F.scaled_dot_product_attention, fullgraph=True)
        out_upper_left = compiled_sdpa(query, key, value, upper_left_bias)
        log("upper_left", out_upper_left)
        log("lower_right", compiled_sdpa(query, key, value, lower_right_bias))
    run_compiled(program)


@pytest.mark.xfail(strict=True, reason="tracegrad's CausalBias is a plain object recognised by "
                   "scaled_dot_product_attention (documented in nn/attention/bias.py), not a Tensor subclass")
def test_tutorials_sdpa_causal_bias_is_a_tensor():
    def program(torch, log):
        import importlib
        bias = importlib.import_module(torch.__name__ + ".nn.attention.bias")
        log("subclass", issubclass(type(bias.causal_upper_left(2, 5)), torch.Tensor))
    run_compiled(program)


# pytorch/tutorials intermediate_source/torch_compile_full_example.py: model_opt.compile(mode=
# "reduce-overhead") (nn.Module.compile, in place) evaluated under no_grad next to the eager
# model, then train(mod, data) compiled with torch.compile(train, mode="reduce-overhead") over
# several batches; densenet121 -> one dense layer (BatchNorm-ReLU-Conv, torch.cat of features,
# global pooling) on 3x6x6 random-data batches of 4
def test_tutorials_torch_compile_full_example():
    def program(torch, log):
        nn = torch.nn

        class DenseLayer(nn.Module):
            def __init__(self, c_in, growth):
                super().__init__()
                self.norm = nn.BatchNorm2d(c_in)
                self.conv = nn.Conv2d(c_in, growth, 3, padding=1, bias=False)

            def forward(self, features):
                return torch.cat([features, self.conv(torch.relu(self.norm(features)))], 1)

        def init_model():
            return init_params(torch, nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1, bias=False), DenseLayer(4, 2), nn.BatchNorm2d(6),
                nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1), nn.Linear(6, 10)), 3)

        seeds = iter(range(100))

        def generate_data(b):
            seed = next(seeds)
            return (
                randn(torch, (b, 3, 6, 6), seed).to(),
                torch.tensor(np.random.RandomState(seed).randint(0, 10, b)),
            )

        model = init_model()
        model_opt = init_model()
        model_opt.compile(mode="reduce-overhead")
        model.eval(), model_opt.eval()
        inp = generate_data(4)[0]
        with torch.no_grad():
            log("eager", model(inp))
            log("compile", model_opt(inp))
        inp = generate_data(4)[0]
        with torch.no_grad():
            log("compile eval", model_opt(inp))
        log("keys", list(model_opt.state_dict())[:2])

        model = init_model()
        opt = torch.optim.Adam(model.parameters())

        def train(mod, data):
            opt.zero_grad(True)
            pred = mod(data[0])
            loss = torch.nn.CrossEntropyLoss()(pred, data[1])
            loss.backward()
            opt.step()

        train_opt = torch.compile(train, mode="reduce-overhead")
        for i in range(3):
            inp = generate_data(4)
            train_opt(model, inp)
        log("fc", model[6].weight)
        log("running_var", model[2].running_var)
    run_compiled(program)


# ---- karpathy/build-nanogpt train_gpt2.py ------------------------------------------------------
# train_gpt2.py with its use_compile flag set: GPT (CausalSelfAttention on
# F.scaled_dot_product_attention(is_causal=True), tanh GELU, NANOGPT_SCALE_INIT, weight tying,
# _init_weights through apply), configure_optimizers (fused only on cuda), DataLoaderLite over
# a token tensor (buf[:-1].view(B, T)), torch.set_float32_matmul_precision('high'), model =
# torch.compile(model), validation under no_grad and torch.autocast(device_type="cpu",
# dtype=torch.bfloat16), gradient accumulation with loss_accum += loss.detach(), clip_grad_norm_,
# the warmup/cosine get_lr written into param_groups; the losses and the norm train_gpt2.py
# prints are logged, with bfloat16's tolerance. 12 layers -> 1, n_embd 768 -> 8, T 1024 -> 4
def test_build_nanogpt_train_gpt2_compiled():
    def program(torch, log):
        import inspect
        from dataclasses import dataclass
        nn, F = torch.nn, torch.nn.functional
        master_process = True

        class CausalSelfAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                assert config.n_embd % config.n_head == 0
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                self.c_proj = nn.Linear(config.n_embd, config.n_embd)
                self.c_proj.NANOGPT_SCALE_INIT = 1
                self.n_head = config.n_head
                self.n_embd = config.n_embd

            def forward(self, x):
                B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)
                qkv = self.c_attn(x)
                q, k, v = qkv.split(self.n_embd, dim=2)
                k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
                q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
                v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True) # flash attention
                y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side
                y = self.c_proj(y)
                return y

        class MLP(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.c_fc    = nn.Linear(config.n_embd, 4 * config.n_embd)
                self.gelu    = nn.GELU(approximate='tanh')
                self.c_proj  = nn.Linear(4 * config.n_embd, config.n_embd)
                self.c_proj.NANOGPT_SCALE_INIT = 1

            def forward(self, x):
                x = self.c_fc(x)
                x = self.gelu(x)
                x = self.c_proj(x)
                return x

        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.ln_1 = nn.LayerNorm(config.n_embd)
                self.attn = CausalSelfAttention(config)
                self.ln_2 = nn.LayerNorm(config.n_embd)
                self.mlp = MLP(config)

            def forward(self, x):
                x = x + self.attn(self.ln_1(x))
                x = x + self.mlp(self.ln_2(x))
                return x

        @dataclass
        class GPTConfig:
            block_size: int = 1024 # max sequence length
            vocab_size: int = 50257
            n_layer: int = 12 # number of layers
            n_head: int = 12 # number of heads
            n_embd: int = 768 # embedding dimension

        class GPT(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.transformer = nn.ModuleDict(dict(
                    wte = nn.Embedding(config.vocab_size, config.n_embd),
                    wpe = nn.Embedding(config.block_size, config.n_embd),
                    h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                    ln_f = nn.LayerNorm(config.n_embd),
                ))
                self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
                self.transformer.wte.weight = self.lm_head.weight
                self.apply(self._init_weights)

            def _init_weights(self, module):
                if isinstance(module, nn.Linear):
                    std = 0.02
                    if hasattr(module, 'NANOGPT_SCALE_INIT'):
                        std *= (2 * self.config.n_layer) ** -0.5
                    torch.nn.init.normal_(module.weight, mean=0.0, std=std)
                    if module.bias is not None:
                        torch.nn.init.zeros_(module.bias)
                elif isinstance(module, nn.Embedding):
                    torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

            def forward(self, idx, targets=None):
                B, T = idx.size()
                assert T <= self.config.block_size, f"Cannot forward sequence of length {T}, block size is only {self.config.block_size}"
                pos = torch.arange(0, T, dtype=torch.long, device=idx.device) # shape (T)
                pos_emb = self.transformer.wpe(pos) # position embeddings of shape (T, n_embd)
                tok_emb = self.transformer.wte(idx) # token embeddings of shape (B, T, n_embd)
                x = tok_emb + pos_emb
                for block in self.transformer.h:
                    x = block(x)
                x = self.transformer.ln_f(x)
                logits = self.lm_head(x) # (B, T, vocab_size)
                loss = None
                if targets is not None:
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
                return logits, loss

            def configure_optimizers(self, weight_decay, learning_rate, device_type):
                param_dict = {pn: p for pn, p in self.named_parameters()}
                param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
                decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
                nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
                optim_groups = [
                    {'params': decay_params, 'weight_decay': weight_decay},
                    {'params': nodecay_params, 'weight_decay': 0.0}
                ]
                num_decay_params = sum(p.numel() for p in decay_params)
                num_nodecay_params = sum(p.numel() for p in nodecay_params)
                if master_process:
                    print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
                    print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
                fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
                use_fused = fused_available and device_type == "cuda"
                if master_process:
                    print(f"using fused AdamW: {use_fused}")
                optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8, fused=use_fused)
                return optimizer

        class DataLoaderLite:
            def __init__(self, B, T, process_rank, num_processes, split):
                self.B = B
                self.T = T
                self.process_rank = process_rank
                self.num_processes = num_processes
                self.split = split
                self.reset()

            def reset(self):
                self.tokens = torch.tensor(_tokens(60, 32, {"train": 5, "val": 6}[self.split]), dtype=torch.long)
                self.current_position = self.B * self.T * self.process_rank

            def next_batch(self):
                B, T = self.B, self.T
                buf = self.tokens[self.current_position : self.current_position+B*T+1]
                x = (buf[:-1]).view(B, T) # inputs
                y = (buf[1:]).view(B, T) # targets
                self.current_position += B * T * self.num_processes
                if self.current_position + (B * T * self.num_processes + 1) > len(self.tokens):
                    self.current_position = B * T * self.process_rank
                return x, y

        ddp_rank, ddp_world_size, device = 0, 1, "cpu"
        device_type = "cuda" if device.startswith("cuda") else "cpu"
        total_batch_size = 16
        B = 2 # micro batch size
        T = 4 # sequence length
        assert total_batch_size % (B * T * ddp_world_size) == 0, "make sure total_batch_size is divisible by B * T * ddp_world_size"
        grad_accum_steps = total_batch_size // (B * T * ddp_world_size)
        print(f"=> calculated gradient accumulation steps: {grad_accum_steps}")
        train_loader = DataLoaderLite(B=B, T=T, process_rank=ddp_rank, num_processes=ddp_world_size, split="train")
        val_loader = DataLoaderLite(B=B, T=T, process_rank=ddp_rank, num_processes=ddp_world_size, split="val")
        torch.set_float32_matmul_precision('high')
        model = GPT(GPTConfig(vocab_size=32, block_size=8, n_layer=1, n_head=2, n_embd=8))
        init_params(torch, model, 9)
        model.to(device)
        use_compile = True
        if use_compile:
            model = torch.compile(model)
        raw_model = model
        max_lr, warmup_steps, max_steps = 6e-3, 1, 3
        min_lr = max_lr * 0.1

        def get_lr(it):
            if it < warmup_steps:
                return max_lr * (it+1) / warmup_steps
            if it > max_steps:
                return min_lr
            decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
            assert 0 <= decay_ratio <= 1
            coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) # coeff starts at 1 and goes to 0
            return min_lr + coeff * (max_lr - min_lr)

        optimizer = raw_model.configure_optimizers(weight_decay=0.1, learning_rate=6e-4, device_type=device_type)
        try:
            for step in range(max_steps):
                last_step = (step == max_steps - 1)
                if step % 2 == 0 or last_step:
                    model.eval()
                    val_loader.reset()
                    with torch.no_grad():
                        val_loss_accum = 0.0
                        val_loss_steps = 2
                        for _ in range(val_loss_steps):
                            x, y = val_loader.next_batch()
                            x, y = x.to(device), y.to(device)
                            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                                logits, loss = model(x, y)
                            loss = loss / val_loss_steps
                            val_loss_accum += loss.detach()
                    log("validation loss", val_loss_accum.float())
                model.train()
                optimizer.zero_grad()
                loss_accum = 0.0
                for micro_step in range(grad_accum_steps):
                    x, y = train_loader.next_batch()
                    x, y = x.to(device), y.to(device)
                    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                        logits, loss = model(x, y)
                    loss = loss / grad_accum_steps
                    loss_accum += loss.detach()
                    loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                lr = get_lr(step)
                for param_group in optimizer.param_groups:
                    param_group['lr'] = lr
                optimizer.step()
                log("loss", loss_accum.float())
                log("norm", norm)
                print(f"step {step:5d} | lr {lr:.4e}")
                log("dtypes", [logits.dtype, loss.dtype])
            log("lm_head", raw_model.lm_head.weight)
        finally:
            torch.set_float32_matmul_precision('highest')
    run_compiled(program, bf16=("validation loss", "loss", "norm", "lm_head"))


# pytorch/tutorials intermediate_source/compiled_autograd_tutorial.py, the parts torch 2.13 runs
# (its compiled_autograd.enable context manager is gone from torch 2.13): the toy Model,
# torch._dynamo.config.compiled_autograd = True before @torch.compile def train(model, x) with
# loss.backward() inside, train redefined and compiled again, the "different flags" train whose
# torch.compile(lambda: loss.backward(), fullgraph=True)() on a loss computed outside raises
# (RuntimeError in both), and the recompile loops over torch.add/sub/mul/div and over shapes
# with torch.compile(lambda: loss.backward(), backend="eager")(); Linear(10, 10) -> (4, 4)
def test_tutorials_compiled_autograd():
    def program(torch, log):
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)

            def forward(self, x):
                return self.linear(x)

        model = init_params(torch, Model(), 0)
        x = randn(torch, (4,), 1)
        torch._dynamo.config.compiled_autograd = True
        try:
            @torch.compile
            def train(model, x):
                loss = model(x).sum()
                loss.backward()

            train(model, x)

            @torch.compile
            def train(model, x):
                loss = model(x).sum()
                loss.backward()

            train(model, x)
            train(model, x)
            log("grad", model.linear.weight.grad)

            def train(model, x):
                model = torch.compile(model)
                loss = model(x).sum()
                torch.compile(lambda: loss.backward(), fullgraph=True)()

            try:
                train(model, x)
            except RuntimeError as e:
                print("RuntimeError")

            x = randn(torch, (4,), 2, requires_grad=True)
            for op in [torch.add, torch.sub, torch.mul, torch.div]:
                loss = op(x, x).sum()
                torch.compile(lambda: loss.backward(), backend="eager")()
                log("x.grad", x.grad)
            for i in [2, 3, 2]:
                x = randn(torch, (i, i), i, requires_grad=True)
                loss = x.sum()
                torch.compile(lambda: loss.backward(), backend="eager")()
                log("x.grad", x.grad)
        finally:
            torch._dynamo.config.compiled_autograd = False
    run_compiled(program, dynamo=True)


# pytorch/tutorials recipes_source/torch_compile_torch_function_modes.py: a BaseTorchFunctionMode
# rewriting torch.Tensor.add into torch.mul, entered around a call of a @torch.compile()
# function and inside one (each function called twice: tracegrad runs a first call eagerly)
def test_tutorials_torch_function_modes():
    def program(torch, log):
        BaseTorchFunctionMode = torch.overrides.BaseTorchFunctionMode

        class AddToMultiplyMode(BaseTorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if func == torch.Tensor.add:
                    func = torch.mul
                return super().__torch_function__(func, types, args, kwargs)

        @torch.compile()
        def test_fn(x, y):
            return x + y * x # Note: infix operators map to torch.Tensor.* methods

        x = torch.rand(2, 2) * 0 + randn(torch, (2, 2), 0)
        y = torch.rand_like(x) * 0 + randn(torch, (2, 2), 1)
        for _ in range(2):
            with AddToMultiplyMode():
                z = test_fn(x, y)
            assert torch.allclose(z, x * y * x)
            log("z", z)
        log("plain", test_fn(x, y))

        @torch.compile()
        def test_fn(x, y):
            with AddToMultiplyMode():
                return x + y * x # Note: infix operators map to torch.Tensor.* methods

        for _ in range(2):
            z = test_fn(x, y)
            assert torch.allclose(z, x * y * x)
            log("z", z)
    run_compiled(program)


# cloneofsimo/minRF advanced/mmdit.py: the SD3-style MMDiT whose blocks compile their own forward
# with @torch.compile() on the method (DoubleAttention/SingleAttention inside MMDiTBlock/DiTBlock:
# compiled functions nested in compiled functions, one function shared by every instance),
# Fp32LayerNorm (F.layer_norm on x.float(), type_as), MultiHeadLayerNorm, modulate, patchify
# (view/permute/flatten), unpatchify (einsum "nhwpqc->nchpwq"), register tokens, the zero-init
# of ".mod" parameters by name; trained with rf.py's rectified-flow loss (zt = (1 - t) x + t z1,
# the batchwise MSE of z1 - x - v, ttloss from .tolist()) and Adam as main.py does, and
# sampled with RF.sample's Euler steps under no_grad. dim 2048 -> 8, 1 double + 1 single layer,
# 1x8x8 latents; the noise and sigmoid(randn) times are numpy-seeded arguments
def test_minrf_mmdit_compiled_methods():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class Fp32LayerNorm(nn.LayerNorm):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)

            def forward(self, input):
                output = F.layer_norm(
                    input.float(),
                    self.normalized_shape,
                    self.weight.float() if self.weight is not None else None,
                    self.bias.float() if self.bias is not None else None,
                    self.eps,
                )
                return output.type_as(input)

        def modulate(x, shift, scale):
            return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)

        def find_multiple(n: int, k: int) -> int:
            if n % k == 0:
                return n
            return n + k - (n % k)

        class MLP(nn.Module):
            def __init__(self, dim, hidden_dim=None) -> None:
                super().__init__()
                if hidden_dim is None:
                    hidden_dim = 4 * dim
                n_hidden = int(2 * hidden_dim / 3)
                n_hidden = find_multiple(n_hidden, 8)
                self.c_fc1 = nn.Linear(dim, n_hidden, bias=False)
                self.c_fc2 = nn.Linear(dim, n_hidden, bias=False)
                self.c_proj = nn.Linear(n_hidden, dim, bias=False)

            def forward(self, x):
                x = F.silu(self.c_fc1(x)) * self.c_fc2(x)
                x = self.c_proj(x)
                return x

        class SingleAttention(nn.Module):
            def __init__(self, dim, n_heads, mh_qknorm=False):
                super().__init__()
                self.n_heads = n_heads
                self.head_dim = dim // n_heads
                self.w1q = nn.Linear(dim, dim, bias=False)
                self.w1k = nn.Linear(dim, dim, bias=False)
                self.w1v = nn.Linear(dim, dim, bias=False)
                self.w1o = nn.Linear(dim, dim, bias=False)
                self.q_norm1 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)
                self.k_norm1 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)

            @torch.compile()
            def forward(self, c):
                bsz, seqlen1, _ = c.shape
                q, k, v = self.w1q(c), self.w1k(c), self.w1v(c)
                q = q.view(bsz, seqlen1, self.n_heads, self.head_dim)
                k = k.view(bsz, seqlen1, self.n_heads, self.head_dim)
                v = v.view(bsz, seqlen1, self.n_heads, self.head_dim)
                q, k = self.q_norm1(q), self.k_norm1(k)
                output = F.scaled_dot_product_attention(
                    q.permute(0, 2, 1, 3),
                    k.permute(0, 2, 1, 3),
                    v.permute(0, 2, 1, 3),
                    dropout_p=0.0,
                    is_causal=False,
                    scale=1 / self.head_dim**0.5,
                ).permute(0, 2, 1, 3)
                output = output.flatten(-2)
                c = self.w1o(output)
                return c

        class DoubleAttention(nn.Module):
            def __init__(self, dim, n_heads, mh_qknorm=False):
                super().__init__()
                self.n_heads = n_heads
                self.head_dim = dim // n_heads
                self.w1q = nn.Linear(dim, dim, bias=False)
                self.w1k = nn.Linear(dim, dim, bias=False)
                self.w1v = nn.Linear(dim, dim, bias=False)
                self.w1o = nn.Linear(dim, dim, bias=False)
                self.w2q = nn.Linear(dim, dim, bias=False)
                self.w2k = nn.Linear(dim, dim, bias=False)
                self.w2v = nn.Linear(dim, dim, bias=False)
                self.w2o = nn.Linear(dim, dim, bias=False)
                self.q_norm1 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)
                self.k_norm1 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)
                self.q_norm2 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)
                self.k_norm2 = Fp32LayerNorm(self.head_dim, bias=False, elementwise_affine=False)

            @torch.compile()
            def forward(self, c, x):
                bsz, seqlen1, _ = c.shape
                bsz, seqlen2, _ = x.shape
                seqlen = seqlen1 + seqlen2
                cq, ck, cv = self.w1q(c), self.w1k(c), self.w1v(c)
                cq = cq.view(bsz, seqlen1, self.n_heads, self.head_dim)
                ck = ck.view(bsz, seqlen1, self.n_heads, self.head_dim)
                cv = cv.view(bsz, seqlen1, self.n_heads, self.head_dim)
                cq, ck = self.q_norm1(cq), self.k_norm1(ck)
                xq, xk, xv = self.w2q(x), self.w2k(x), self.w2v(x)
                xq = xq.view(bsz, seqlen2, self.n_heads, self.head_dim)
                xk = xk.view(bsz, seqlen2, self.n_heads, self.head_dim)
                xv = xv.view(bsz, seqlen2, self.n_heads, self.head_dim)
                xq, xk = self.q_norm2(xq), self.k_norm2(xk)
                q, k, v = (
                    torch.cat([cq, xq], dim=1),
                    torch.cat([ck, xk], dim=1),
                    torch.cat([cv, xv], dim=1),
                )
                output = F.scaled_dot_product_attention(
                    q.permute(0, 2, 1, 3),
                    k.permute(0, 2, 1, 3),
                    v.permute(0, 2, 1, 3),
                    dropout_p=0.0,
                    is_causal=False,
                    scale=1 / self.head_dim**0.5,
                ).permute(0, 2, 1, 3)
                output = output.flatten(-2)
                c, x = output.split([seqlen1, seqlen2], dim=1)
                c = self.w1o(c)
                x = self.w2o(x)
                return c, x

        class MMDiTBlock(nn.Module):
            def __init__(self, dim, heads=8, global_conddim=1024, is_last=False):
                super().__init__()
                self.normC1 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.normC2 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.mlpC = MLP(dim, hidden_dim=dim * 4)
                self.modC = nn.Sequential(nn.SiLU(), nn.Linear(global_conddim, 6 * dim, bias=False))
                self.normX1 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.normX2 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.mlpX = MLP(dim, hidden_dim=dim * 4)
                self.modX = nn.Sequential(nn.SiLU(), nn.Linear(global_conddim, 6 * dim, bias=False))
                self.attn = DoubleAttention(dim, heads)
                self.is_last = is_last

            @torch.compile()
            def forward(self, c, x, global_cond, **kwargs):
                cres, xres = c, x
                cshift_msa, cscale_msa, cgate_msa, cshift_mlp, cscale_mlp, cgate_mlp = (
                    self.modC(global_cond).chunk(6, dim=1)
                )
                c = modulate(self.normC1(c), cshift_msa, cscale_msa)
                xshift_msa, xscale_msa, xgate_msa, xshift_mlp, xscale_mlp, xgate_mlp = (
                    self.modX(global_cond).chunk(6, dim=1)
                )
                x = modulate(self.normX1(x), xshift_msa, xscale_msa)
                c, x = self.attn(c, x)
                c = self.normC2(cres + cgate_msa.unsqueeze(1) * c)
                c = cgate_mlp.unsqueeze(1) * self.mlpC(modulate(c, cshift_mlp, cscale_mlp))
                c = cres + c
                x = self.normX2(xres + xgate_msa.unsqueeze(1) * x)
                x = xgate_mlp.unsqueeze(1) * self.mlpX(modulate(x, xshift_mlp, xscale_mlp))
                x = xres + x
                return c, x

        class DiTBlock(nn.Module):
            def __init__(self, dim, heads=8, global_conddim=1024):
                super().__init__()
                self.norm1 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.norm2 = Fp32LayerNorm(dim, elementwise_affine=False, bias=False)
                self.modCX = nn.Sequential(nn.SiLU(), nn.Linear(global_conddim, 6 * dim, bias=False))
                self.attn = SingleAttention(dim, heads)
                self.mlp = MLP(dim, hidden_dim=dim * 4)

            @torch.compile()
            def forward(self, cx, global_cond, **kwargs):
                cxres = cx
                shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.modCX(
                    global_cond
                ).chunk(6, dim=1)
                cx = modulate(self.norm1(cx), shift_msa, scale_msa)
                cx = self.attn(cx)
                cx = self.norm2(cxres + gate_msa.unsqueeze(1) * cx)
                mlpout = self.mlp(modulate(cx, shift_mlp, scale_mlp))
                cx = gate_mlp.unsqueeze(1) * mlpout
                cx = cxres + cx
                return cx

        class TimestepEmbedder(nn.Module):
            def __init__(self, hidden_size, frequency_embedding_size=256):
                super().__init__()
                self.mlp = nn.Sequential(
                    nn.Linear(frequency_embedding_size, hidden_size),
                    nn.SiLU(),
                    nn.Linear(hidden_size, hidden_size),
                )
                self.frequency_embedding_size = frequency_embedding_size

            @staticmethod
            def timestep_embedding(t, dim, max_period=10000):
                half = dim // 2
                freqs = 1000 * torch.exp(
                    -math.log(max_period) * torch.arange(start=0, end=half) / half
                ).to(t.device)
                args = t[:, None] * freqs[None]
                embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
                if dim % 2:
                    embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
                return embedding

            @torch.compile()
            def forward(self, t):
                t_freq = self.timestep_embedding(t, self.frequency_embedding_size).to(
                    dtype=next(self.parameters()).dtype
                )
                t_emb = self.mlp(t_freq)
                return t_emb

        class MMDiT(nn.Module):
            def __init__(self, in_channels=4, out_channels=4, patch_size=2, dim=2048, n_layers=8,
                         n_double_layers=4, n_heads=4, global_conddim=1024, cond_seq_dim=2048, max_seq=16 * 16):
                super().__init__()
                self.t_embedder = TimestepEmbedder(global_conddim, 8)
                self.cond_seq_linear = nn.Linear(cond_seq_dim, dim, bias=False)
                self.init_x_linear = nn.Linear(patch_size * patch_size * in_channels, dim)
                self.positional_encoding = nn.Parameter(torch.zeros(1, max_seq, dim))
                self.register_tokens = nn.Parameter(torch.zeros(1, 2, dim))
                self.double_layers = nn.ModuleList([])
                self.single_layers = nn.ModuleList([])
                for idx in range(n_double_layers):
                    self.double_layers.append(MMDiTBlock(dim, n_heads, global_conddim, is_last=(idx == n_layers - 1)))
                for idx in range(n_double_layers, n_layers):
                    self.single_layers.append(DiTBlock(dim, n_heads, global_conddim))
                self.final_linear = nn.Linear(dim, patch_size * patch_size * out_channels, bias=False)
                self.modF = nn.Sequential(nn.SiLU(), nn.Linear(global_conddim, 2 * dim, bias=False))
                nn.init.constant_(self.final_linear.weight, 0)
                self.out_channels = out_channels
                self.patch_size = patch_size
                self.n_double_layers = n_double_layers
                self.n_layers = n_layers
                for pn, p in self.named_parameters():
                    if ".mod" in pn:
                        nn.init.constant_(p, 0)
                        print("zeroed", pn)
                nn.init.constant_(self.cond_seq_linear.weight, 0)
                self.h_max = int(max_seq**0.5)
                self.w_max = int(max_seq**0.5)

            def unpatchify(self, x, h, w):
                c = self.out_channels
                p = self.patch_size
                x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
                x = torch.einsum("nhwpqc->nchpwq", x)
                imgs = x.reshape(shape=(x.shape[0], c, h * p, w * p))
                return imgs

            def patchify(self, x):
                B, C, H, W = x.size()
                x = x.view(B, C, H // self.patch_size, self.patch_size, W // self.patch_size, self.patch_size)
                x = x.permute(0, 2, 4, 1, 3, 5).flatten(-3).flatten(1, 2)
                return x

            def forward(self, x, t, conds, **kwargs):
                b, c, h, w = x.shape
                x = self.init_x_linear(self.patchify(x))  # B, T_x, D
                x = x + self.positional_encoding[:, : x.size(1)]
                c_seq = conds["c_seq"][0:b]  # B, T_c, D_c
                t = t[0:b]
                c = self.cond_seq_linear(c_seq)  # B, T_c, D
                c = torch.cat([self.register_tokens.repeat(c.size(0), 1, 1), c], dim=1)
                global_cond = self.t_embedder(t)  # B, D
                if len(self.double_layers) > 0:
                    for layer in self.double_layers:
                        c, x = layer(c, x, global_cond, **kwargs)
                if len(self.single_layers) > 0:
                    c_len = c.size(1)
                    cx = torch.cat([c, x], dim=1)
                    for layer in self.single_layers:
                        cx = layer(cx, global_cond, **kwargs)
                    x = cx[:, c_len:]
                fshift, fscale = self.modF(global_cond).chunk(2, dim=1)
                x = modulate(x, fshift, fscale)
                x = self.final_linear(x)
                x = self.unpatchify(x, h // self.patch_size, w // self.patch_size)
                return x

        class RF:
            def __init__(self, model, ln=True):
                self.model = model
                self.ln = ln

            def forward(self, x, cond, nt, z1):
                b = x.size(0)
                t = torch.sigmoid(nt)
                texp = t.view([b, *([1] * len(x.shape[1:]))])
                zt = (1 - texp) * x + texp * z1
                vtheta = self.model(zt, t, cond)
                batchwise_mse = ((z1 - x - vtheta) ** 2).mean(dim=list(range(1, len(x.shape))))
                tlist = batchwise_mse.detach().cpu().reshape(-1).tolist()
                ttloss = [(tv, tloss) for tv, tloss in zip(t, tlist)]
                return batchwise_mse.mean(), ttloss

            @torch.no_grad()
            def sample(self, z, cond, null_cond=None, sample_steps=50, cfg=2.0):
                b = z.size(0)
                dt = 1.0 / sample_steps
                dt = torch.tensor([dt] * b).to(z.device).view([b, *([1] * len(z.shape[1:]))])
                images = [z]
                for i in range(sample_steps, 0, -1):
                    t = i / sample_steps
                    t = torch.tensor([t] * b).to(z.device)
                    vc = self.model(z, t, cond)
                    z = z - dt * vc
                    images.append(z)
                return images

        model = MMDiT(in_channels=1, out_channels=1, patch_size=2, dim=8, n_layers=2, n_double_layers=1,
                      n_heads=2, global_conddim=8, cond_seq_dim=4, max_seq=16)
        init_params(torch, model, 11)
        rf = RF(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        conds = {"c_seq": randn(torch, (2, 3, 4), 12)}
        for i in range(2):
            x = randn(torch, (2, 1, 8, 8), 20 + i)
            optimizer.zero_grad()
            loss, blsct = rf.forward(x, conds, randn(torch, (2,), 30 + i), randn(torch, (2, 1, 8, 8), 40 + i))
            loss.backward()
            optimizer.step()
            log("loss", loss.item())
            log("blsct", [(float(t), l) for t, l in blsct])
        log("final_linear", model.final_linear.weight)
        log("w1o grad", model.double_layers[0].attn.w1o.weight.grad)
        model.eval()
        images = rf.sample(randn(torch, (2, 1, 8, 8), 50), conds, sample_steps=2)
        log("sample", images[-1])
    run_compiled(program)
