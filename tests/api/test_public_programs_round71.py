"""A seventy-first round of public PyTorch programs, ones that call ``torch.compile`` themselves,
run unchanged with torch and with tracegrad (``import tracegrad as torch``); the program sources
are in tests/public_programs_round71_src.py, executed with ``torch`` bound to either module:

- rasbt/LLMs-from-scratch (Apache-2.0), ``ch05/10_llm-training-speed/01_opt_single_gpu.py`` at
  c9271ac (the book's GPT trained with its speed-ups): ``model = torch.compile(model)`` then
  ``model.to(device).to(torch.bfloat16)`` (the whole model in bfloat16), ``AdamW(...,
  fused=True)``, ``scaled_dot_product_attention(..., is_causal=True)`` on ``qkv.view(...).permute(2,
  0, 3, 1, 4)`` heads unpacked as ``queries, keys, values = qkv``, ``GELU(approximate="tanh")``,
  tied-free output head, ``cross_entropy(logits.flatten(0, 1), ...)``, ``evaluate_model`` in
  ``eval()``/``no_grad`` every ten steps with tokens/second from ``time.time()``, and greedy
  ``generate_text_simple`` (``argmax`` over the last position, ``torch.cat``) printed after
  each epoch. Here torch runs the program under ``torch.compiler.set_stance("force_eager")``
  (its ``torch.compile`` still wraps: ``OptimizedModule``, ``_orig_mod.`` keys; inductor costs
  a minute), tracegrad the same way and compiled (tests/compile/test_public_patterns_round71.py).

bfloat16 end to end made tracegrad's rounding visible: torch's CPU kernels round where the
math does not say, and a bfloat16 GPT's losses, generated tokens and gradients followed them.
Fixed in the owning modules, each checked here op by op against torch, bit for bit:
``scaled_dot_product_attention``'s fused CPU kernel (softmax weights rounded before ``@ v``;
its backward), ``log_softmax`` over the last dim (sum and log kept in 16 bits), the softmax
backward kernels (float32, rounded once), ``layer_norm``'s backward (the statistics it saved in
16 bits) and ``fused=True`` Adam/AdamW (float32 math, each tensor rounded once). What remains:
torch accumulates ``layer_norm``'s weight and bias gradients in 16-bit per-thread buffers, so
its last bits depend on its thread count (a strict xfail), and the whole program's bfloat16
training is then compared within bfloat16's tolerance.

Changes, the same on both sides: parameters from a seeded NumPy stream (``nn.Linear`` and
``nn.Embedding``), a character tokenizer for tiktoken's GPT-2 encoding, a text of random words
for ``middlemarch.txt``, loaders without shuffling or workers, a clock advancing half a second
per ``time.time()``, ``print`` collected, and tiny sizes (the configuration and settings
``main`` takes).
"""
import contextlib
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, same_logs
from public_programs_round71_src import LLM_SPEED, program

torch = pytest.importorskip("torch")

from api.test_public_programs_round66 import seeded_nn  # noqa: E402  (seeded layers)

# ---------------------------------------------------------------- rasbt/LLMs-from-scratch

VOCAB = 48
CONFIG = {"vocab_size": VOCAB, "context_length": 8, "emb_dim": 16, "n_heads": 2, "n_layers": 2,
          "drop_rate": 0.0, "qkv_bias": False}
SETTINGS = {"learning_rate": 5e-4, "num_epochs": 2, "batch_size": 2, "weight_decay": 0.1}


class Tokenizer:
    """Stands in for tiktoken's GPT-2 encoding: characters to ids below ``VOCAB`` and back."""

    def encode(self, txt, allowed_special=None):
        return [ord(c) % VOCAB for c in txt]

    def decode(self, ids):
        return "".join(chr(65 + i % 26) for i in ids)


class Clock:
    """A ``time`` module whose ``time()`` advances half a second per call."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        self.now += 0.5
        return self.now


def llm_program(T, log):
    """01_opt_single_gpu.py's definitions with the stand-ins, ``print`` appending to ``log``."""
    def DataLoader(ds, batch_size=1, shuffle=False, drop_last=False, num_workers=0, pin_memory=False):
        return T.utils.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    return program(T, LLM_SPEED, nn=seeded_nn(T, 3, names=("Linear", "Embedding")), Dataset=T.utils.data.Dataset,
                   DataLoader=DataLoader, tiktoken=types.SimpleNamespace(get_encoding=lambda name: Tokenizer()),
                   time=Clock(), urllib=None, plt=None, print=lambda *a: log.append(" ".join(map(str, a))))


def write_text(directory):
    """``middlemarch.txt`` in ``directory``: 90 random words (about 480 characters)."""
    words = ["every", "effort", "moves", "you", "the", "middle", "march", "of", "a", "book"]
    (directory / "middlemarch.txt").write_text(" ".join(np.random.RandomState(0).choice(words, 90)))


def run_main(T, compiled=False):
    """``main(CONFIG, SETTINGS)`` in the current directory: its printed log, losses, tokens
    seen and the returned model; the program's ``torch.compile`` runs eagerly unless
    ``compiled`` (torch always: ``set_stance("force_eager")``)."""
    log = []
    ns = llm_program(T, log)
    stance = contextlib.nullcontext() if compiled else T.compiler.set_stance("force_eager")
    with stance:
        train_losses, val_losses, tokens_seen, model = ns.main(CONFIG, SETTINGS)
    return log, train_losses, val_losses, tokens_seen, model


def test_llm_speed_main_bf16(tmp_path, monkeypatch):
    write_text(tmp_path)
    monkeypatch.chdir(tmp_path)
    ref_log, ref_train, ref_val, ref_tokens, ref_model = run_main(torch)
    got_log, got_train, got_val, got_tokens, got_model = run_main(tracegrad)
    # (torch's version string is "2.13.0+cpu", tracegrad's "2.13.0")
    assert ref_log[1:4] == got_log[1:4] == ["Using cpu", "Uses tensor cores: False", ""], (ref_log, got_log)
    assert got_log[0] == "PyTorch version: " + tracegrad.__version__ and got_log[0] in ref_log[0]
    # two epochs of 24 batches, evaluated every ten steps, a sample after each epoch
    evals = [line for line in ref_log if line.startswith("Ep ")]
    assert [line[:17] for line in evals] == ["Ep 1, Step 000000", "Ep 1, Step 000010", "Ep 1, Step 000020",
                                             "Ep 2, Step 000030", "Ep 2, Step 000040"][:len(evals)] and \
        len(evals) == 5, evals
    assert evals[1].endswith("Step tok/sec: 320, Avg tok/sec: 320"), evals
    # bfloat16 training: the losses within a few of bfloat16's steps (0.0156 at 3.x), as
    # layer_norm's weight gradients differ in torch's thread-dependent last bits
    same_logs("\n".join(line for line in ref_log if line.startswith("Ep ")),
              "\n".join(line for line in got_log if line.startswith("Ep ")), 0.05)
    np.testing.assert_allclose(got_train, ref_train, atol=0.05)
    np.testing.assert_allclose(got_val, ref_val, atol=0.05)
    assert ref_tokens == got_tokens == [16, 176, 336, 496, 656]
    samples = [line for line in got_log[4:] if not line.startswith("Ep ")]
    prompt = Tokenizer().decode(Tokenizer().encode("Every effort moves you"))
    assert len(samples) == 2 and all(s.startswith(prompt) and len(s) == 22 + 50 for s in samples), samples
    for m, T in ((ref_model, torch), (got_model, tracegrad)):
        assert type(m).__name__ == "OptimizedModule" and hasattr(m, "_orig_mod")
        sd = m.state_dict()
        assert all(k.startswith("_orig_mod.") for k in sd) and {v.dtype for v in sd.values()} == {T.bfloat16}
    ref_sd, got_sd = ref_model.state_dict(), got_model.state_dict()
    assert list(ref_sd) == list(got_sd)
    for k in ref_sd:
        np.testing.assert_allclose(got_sd[k].float().numpy(), ref_sd[k].float().numpy(), atol=0.02, err_msg=k)


def _gpt_step(T, fused=True):
    """One batch of ``train_model_simple_with_timing``'s loop on the bfloat16 model the program
    builds: the loss, each gradient and each parameter after the AdamW step (by name)."""
    ns = llm_program(T, [])
    model = ns.GPTModel(CONFIG).to(T.bfloat16)
    optimizer = T.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.1, fused=fused)
    rs = np.random.RandomState(0)
    # 7 positions: fewer keys than one vector of the attention kernel (NOTE [sdpa: torch's fused
    # CPU kernel on half/bfloat16]: its vectorised exp is an approximation)
    x, y = (T.tensor(rs.randint(0, VOCAB, (2, 7))) for _ in range(2))
    optimizer.zero_grad()
    loss = ns.calc_loss_batch(x, y, model, T.device("cpu"))
    loss.backward()
    grads = {n: p.grad.float().numpy() for n, p in model.named_parameters()}
    optimizer.step()
    return float(loss.detach()), grads, {n: p.detach().float().numpy() for n, p in model.named_parameters()}


def test_gpt_bf16_step_bitwise_but_layer_norm_params():
    # every gradient but layer_norm's weights and biases (torch's per-thread accumulation)
    # equals torch's bit for bit; after the fused AdamW step so does every parameter those
    # gradients reach; the mean loss within one bfloat16 step (torch's nll_loss sums in 16 bits)
    (ref_loss, ref_g, ref_p), (got_loss, got_g, got_p) = _gpt_step(torch), _gpt_step(tracegrad)
    assert abs(ref_loss - got_loss) <= 2 ** -8 * abs(ref_loss), (ref_loss, got_loss)
    norms = {n for n in ref_g if "norm" in n}
    assert len(norms) == 10
    for n in ref_g:
        if n in norms:
            np.testing.assert_allclose(got_g[n], ref_g[n], atol=1e-3, err_msg=n)
            np.testing.assert_allclose(got_p[n], ref_p[n], atol=1e-2, err_msg=n)
        else:
            np.testing.assert_array_equal(got_g[n], ref_g[n], err_msg=n)
            np.testing.assert_array_equal(got_p[n], ref_p[n], err_msg=n)


# ---------------------------------------------------------------- the 16-bit kernels, op by op

def _low(T, a, dtype="bfloat16", grad=True):
    t = T.tensor(np.asarray(a, np.float32)).to(getattr(T, dtype))
    return t.requires_grad_() if grad else t


def _bitwise(run, dtype="bfloat16"):
    ref, got = run(torch, dtype), run(tracegrad, dtype)
    assert len(ref) == len(got)
    for i, (a, b) in enumerate(zip(ref, got)):
        if isinstance(a, str):
            assert a == b, (i, a, b)
        else:
            np.testing.assert_array_equal(b, a, err_msg=f"output {i}")


@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "causal_mask", "q_blocks"])
def test_sdpa_bf16_fused_cpu_kernel(case):
    # torch's flash-attention CPU kernel rounds exp(s - max) to bfloat16 before ``@ v`` and its
    # backward rounds the weights and their gradients; tracegrad rounded only the result
    # at most 7 keys: fewer than one vector of torch's kernel, whose vectorised exp (exp_u20)
    # is an approximation; 40 queries: two blocks of its backward
    L, S = (40, 7) if case == "q_blocks" else (6, 7)
    rs = np.random.RandomState(len(case))
    q, k, v = rs.randn(2, 2, L, 8), rs.randn(2, 2, S, 8), rs.randn(2, 2, S, 8)
    go = rs.randn(2, 2, L, 8)
    mask = {"bool_mask": rs.rand(L, S) > 0.3, "float_mask": rs.randn(2, 1, L, S).astype(np.float32),
            "causal_mask": rs.rand(L, S) > 0.3}.get(case)
    causal = case in ("causal", "causal_mask")

    def run(T, dtype):
        t = [_low(T, a, dtype) for a in (q, k, v)]
        out = T.nn.functional.scaled_dot_product_attention(*t, attn_mask=None if mask is None else T.tensor(mask),
                                                           is_causal=causal)
        out.backward(_low(T, go, dtype, False))
        return [type(out.grad_fn).__name__] + [x.detach().float().numpy() for x in [out] + [a.grad for a in t]]
    _bitwise(run)


def test_sdpa_bf16_broadcast_heads_take_math_path():
    # batch or head dims that broadcast: torch's math path (float32, rounded once), as before
    rs = np.random.RandomState(0)
    q, k = rs.randn(2, 2, 5, 4), rs.randn(2, 1, 6, 4)

    def run(T, dtype):
        out = T.nn.functional.scaled_dot_product_attention(_low(T, q), _low(T, k), _low(T, k))
        out.sum().backward()
        return [type(out.grad_fn).__name__, out.detach().float().numpy()]
    _bitwise(run)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_log_softmax_and_softmax_16_bit(dtype):
    # log_softmax over the last dim: torch keeps the row sum and its log in 16 bits; over
    # another dim: float32 to the end; the backward kernels compute in float32 and round once
    rs = np.random.RandomState(1)
    x, g = rs.randn(16, 48) * 2, rs.randn(16, 48)

    def run(T, dtype):
        out = []
        for fn, dim in ((T.log_softmax, -1), (T.log_softmax, 0), (T.softmax, -1)):
            t = _low(T, x, dtype)
            y = fn(t, dim)
            y.backward(_low(T, g, dtype, False))
            out += _arr(y.float(), t.grad.float())
        return out
    _bitwise(run, dtype)


@pytest.mark.xfail(strict=True, reason="torch's CPU softmax over a dim other than the last rounds a "
                   "bfloat16 input's intermediates in a way not reproduced yet (tracegrad: float32, rounded once)")
def test_softmax_bf16_not_last_dim():
    x = np.random.RandomState(1).randn(16, 48) * 2
    _bitwise(lambda T, dtype: [T.softmax(_low(T, x, grad=False), 0).float().numpy()])


def _cross_entropy(T, dtype):
    rs = np.random.RandomState(2)
    t = _low(T, rs.randn(16, 48) * 2)
    loss = T.nn.functional.cross_entropy(t, T.tensor(rs.randint(0, 48, 16)))
    loss.backward()
    return _arr(loss.float(), t.grad.float())


def test_cross_entropy_bf16_grad():
    _bitwise(lambda T, dtype: _cross_entropy(T, dtype)[1:])


@pytest.mark.xfail(strict=True, reason="torch's nll_loss sums a bfloat16 batch in bfloat16 partial sums (a "
                   "cascade, rounded at every row) before dividing; tracegrad sums in float32 and rounds once")
def test_cross_entropy_bf16_mean_loss():
    _bitwise(lambda T, dtype: _cross_entropy(T, dtype)[:1])


def _layer_norm(T, dtype):
    rs = np.random.RandomState(3)
    x, w, b = _low(T, rs.randn(16, 16)), _low(T, rs.rand(16) + 0.5), _low(T, rs.randn(16) * 0.1)
    y = T.nn.functional.layer_norm(x, (16,), w, b)
    y.backward(_low(T, rs.randn(16, 16), dtype, False))
    return [y.detach().float().numpy(), x.grad.float().numpy(), w.grad.float().numpy(), b.grad.float().numpy()]


def test_layer_norm_bf16_input_grad():
    # torch's backward reads the mean and rstd it saved in bfloat16
    _bitwise(lambda T, dtype: _layer_norm(T, dtype)[:2])


@pytest.mark.xfail(strict=True, reason="torch sums layer_norm's weight and bias gradients of bfloat16 in "
                   "per-thread bfloat16 buffers (rounded at every row), so their last bits depend on torch's "
                   "thread count; tracegrad sums in float32 and rounds once")
def test_layer_norm_bf16_weight_grads():
    _bitwise(lambda T, dtype: _layer_norm(T, dtype)[2:])


@pytest.mark.parametrize("cls,kw", [("AdamW", {"weight_decay": 0.1}),
                                    ("Adam", {"weight_decay": 0.1, "amsgrad": True, "maximize": True})])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_fused_adam_16_bit(cls, kw, dtype):
    # torch's fused kernel: float32 math, the moments and the parameter rounded once each
    rs = np.random.RandomState(4)
    p0, gs = rs.randn(32, 24) * 0.3, [rs.randn(32, 24) * 0.01 for _ in range(4)]

    def run(T, dtype):
        p = _low(T, p0, dtype)
        opt = getattr(T.optim, cls)([p], lr=5e-4, fused=True, **kw)
        for g in gs:
            p.grad = _low(T, g, dtype, False)
            opt.step()
        st = opt.state[p]
        extra = [st["max_exp_avg_sq"]] if kw.get("amsgrad") else []
        return [t.detach().float().numpy() for t in [p, st["exp_avg"], st["exp_avg_sq"]] + extra]
    _bitwise(run, dtype)


def test_fused_adam_mixed_dtypes_group():
    # a float32 and a bfloat16 parameter in one fused group: each as torch's kernel for its dtype
    rs = np.random.RandomState(5)
    a0, b0, ga, gb = (rs.randn(8, 8) * 0.3 for _ in range(4))

    def run(T, dtype):
        a = T.tensor(a0.astype(np.float32), requires_grad=True)
        b = _low(T, b0)
        opt = T.optim.AdamW([a, b], lr=1e-3, fused=True)
        for _ in range(3):
            a.grad, b.grad = T.tensor(ga.astype(np.float32)), _low(T, gb, grad=False)
            opt.step()
        return [a.detach().numpy(), b.detach().float().numpy(), opt.state[b]["step"].numpy()]
    ref, got = run(torch, None), run(tracegrad, None)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[2], ref[2])


def test_program_warns_alike(tmp_path, monkeypatch):
    # the program's calls raise no warning in either library (torch's fused AdamW on CPU, the
    # compile wrapper, pin_memory without an accelerator are all silent here)
    write_text(tmp_path)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        # torch.compile's first call in a process imports torch.utils.mkldnn, whose ScriptModules
        # give jit.script_method's DeprecationWarning: an import-order artefact, not the program's
        warnings.simplefilter("ignore")
        import torch.utils.mkldnn  # noqa: F401
    seen = []
    for T in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            ns = llm_program(T, [])
            with T.compiler.set_stance("force_eager"):
                model = T.compile(ns.GPTModel(CONFIG))
                model.to(T.device("cpu")).to(T.bfloat16)
                T.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.1, fused=True)
        seen.append(sorted({(w.category.__name__, str(w.message)[:60]) for w in rec}))
    assert seen[0] == seen[1], seen
