"""A seventy-second round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``); the sources are in tests/public_programs_round72_src.py,
executed with ``torch`` bound to either module:

- mlfoundations/open_clip (MIT) at 89fb801: ``src/open_clip/loss.py`` (ClipLoss with its cached
  labels, CoCaLoss, DistillClipLoss, SigLipLoss with its chunked form,
  ``fused_linear_cross_entropy`` -- ``torch.utils.checkpoint(..., use_reentrant=False)`` per chunk
  under ``@torch.compiler.disable`` -- and GenLipLoss), the training tasks
  (``src/open_clip/task/base_task.py``, ``image_text_task.py``, ``clip_task.py``,
  ``siglip_task.py``: ``TrainingTask.forward``'s call conventions, ``_report``,
  ``compute_accum_loss``, ``clamp_logit_scale``) and ``src/open_clip_train/train.py``'s train
  step: ``_train_step_eager`` (``accum_freq`` > 1 caches each batch's features under
  ``no_grad``, then re-runs each batch with the others' cached features as negatives,
  ``torch.cat(accumulated[:j] + [model_out[key]] + accumulated[j + 1:])``), the GradScaler /
  ``clip_grad_norm_`` finish and the ``torch.compile``d step (tests/compile/
  test_public_patterns_round72.py), with ``src/open_clip_train/precision.py``'s ``get_autocast``
  (``amp_bf16``: CPU autocast to bfloat16).

open_clip's CLIP model (``model.py``, ``transformer.py``: 3,000 lines of towers) is stood in for
by ``TinyCLIP`` below, ours: a conv image tower and an embedding text tower with CLIP's output
contract (``F.normalize``d features, ``logit_scale.exp()``, SigLIP's ``logit_bias``), initialised
from a seeded NumPy stream. The CLIP paper's ``logit_scale`` (``log(1 / 0.07)``, a float32 0-d
parameter) times bfloat16 features under autocast made tracegrad's 16-bit backward rounding
visible; fixed in the op table (tracegrad/_ops), each checked here bit for bit against torch:
``MulBackward0``/``DivBackward0`` run torch's kernels step by step (a one-element second
operand read at float32 precision, products rounded before a float32 sum: NOTE [16-bit mul
backward]), ``expand``/``where`` gradients summed in float32 and rounded once (NOTE [16-bit
broadcast gradients]), the 2-norm's backward from the rounded norm (``F.normalize``;
``linalg.vector_norm``/``matrix_norm`` now run that op too, not a jax_function of their own), and
``F.logsigmoid`` as torch's one op (``LogSigmoidBackward0``, was ``NegBackward0`` over
``SoftplusBackward0``) with its rounded buffer (NOTE [log_sigmoid]). A bfloat16 CLIP/SigLIP
training run then follows torch's within float32 rounding.

- Shahip2016/PINNs (MIT): ``src/pinn_model.py`` at d20d2a6 (PINN with its own ``compile()``,
  ``train_model``'s loop with ``clip_grad_norm_``, ``total_loss`` from ``torch.tensor(0.0,
  requires_grad=True)``, AdaptiveWeights, MultiScalePINN) and ``utils/pde_utils.py`` at 57fc2a3
  (PDEOperators: ``torch.func.vmap(torch.func.jacrev(u))`` gradients and
  ``vmap(hessian(u))`` Laplacians of the network as a function of one point; PDELibrary's heat,
  wave -- ``vmap(jacrev(du_dt))`` of a ``jacrev`` -- and Burgers residuals; DataGenerator's
  grids), the heat example's training (examples/heat_equation_1d.py) on a tiny grid. Its
  ``compile()`` (``torch.compile(self.network)`` called under those transforms) lost the
  network's gradients in tracegrad: tests/compile/test_public_patterns_round72.py. The heat and
  wave residuals hold no term of the output bias: its ``.grad`` stays None in torch, where
  tracegrad's transform node gave it zeros (fixed in func/_wrap.py).
"""
import contextlib
import math
from collections import OrderedDict
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr
from public_programs_helpers import same_logs
from public_programs_round72_src import (OPEN_CLIP_LOSS, OPEN_CLIP_PRECISION, OPEN_CLIP_TASKS,
                                         OPEN_CLIP_TRAIN_STEP, PINN_MODEL, PINN_UTILS, program)

torch = pytest.importorskip("torch")

OPEN_CLIP = OPEN_CLIP_LOSS + OPEN_CLIP_TASKS + OPEN_CLIP_TRAIN_STEP + OPEN_CLIP_PRECISION


def open_clip_program(T):
    """open_clip's loss, tasks, train step and autocast helper, with ``torch`` bound to ``T``."""
    return program(T, OPEN_CLIP)


def tiny_clip(T, siglip=False, init_scale=math.log(1 / 0.07)):
    """A stand-in for open_clip's CLIP (ours): ``forward(image, text)`` gives the dict open_clip's
    models give (unit-norm features, ``logit_scale.exp()``, ``logit_bias`` for SigLIP)."""
    nn, F = T.nn, T.nn.functional

    class TinyCLIP(nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.GELU(), nn.AdaptiveAvgPool2d(1),
                                        nn.Flatten(), nn.Linear(4, 6))
            self.token_embedding = nn.Embedding(20, 6)
            self.ln_final = nn.LayerNorm(6)
            self.text_projection = nn.Linear(6, 6, bias=False)
            self.logit_scale = nn.Parameter(T.ones([]) * init_scale)
            self.logit_bias = nn.Parameter(T.ones([]) * -10.0) if siglip else None

        def forward(self, image=None, text=None):
            i = F.normalize(self.visual(image), dim=-1)
            x = self.ln_final(self.token_embedding(text))
            t = F.normalize(self.text_projection(x[T.arange(x.shape[0]), text.argmax(dim=-1)]), dim=-1)
            out = {"image_features": i, "text_features": t, "logit_scale": self.logit_scale.exp()}
            if self.logit_bias is not None:
                out["logit_bias"] = self.logit_bias
            return out

    m = TinyCLIP()
    rs = np.random.RandomState(1)
    with T.no_grad():
        for n, p in m.named_parameters():
            if "logit" not in n:
                p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    return m


def batches(T, n, seed=2):
    """``n`` batch dicts of 4 images (3x8x8) and 4 token rows (5 ids below 20)."""
    rs = np.random.RandomState(seed)
    return [{"image": T.tensor(rs.randn(4, 3, 8, 8).astype(np.float32)),
             "text": T.tensor(rs.randint(0, 20, (4, 5)))} for _ in range(n)]


def _floats(d):
    return {k: float(v.detach()) for k, v in d.items()}


# ---------------------------------------------------------------- loss.py

def _features(seed=0):
    rs = np.random.RandomState(seed)
    img, txt = rs.randn(6, 8), rs.randn(6, 8)
    return img / np.linalg.norm(img, axis=1, keepdims=True), txt / np.linalg.norm(txt, axis=1, keepdims=True)


def _all_losses(T):
    """Every loss of loss.py on one set of features, summed with distinct weights and backward:
    the losses (value, dtype) and the gradients of every input."""
    ns = open_clip_program(T)
    img, txt = _features()
    rs = np.random.RandomState(1)
    dimg, dtxt = rs.randn(6, 8), rs.randn(6, 8)
    logits, labels = rs.randn(6, 5, 11), rs.randint(0, 11, (6, 5))
    labels[0, :2] = 0                             # CoCa's pad_id: ignored
    hidden, W, b = rs.randn(30, 8), rs.randn(11, 8) * 0.3, rs.randn(11) * 0.1
    tgt = rs.randint(0, 11, 30)
    tgt[:4] = -100                                # GenLIP's ignore_index
    f = lambda a: T.tensor(np.asarray(a, np.float32), requires_grad=True)   # noqa: E731
    i, t, lg, h, w, bb = f(img), f(txt), f(logits), f(hidden), f(W), f(b)
    scale = T.tensor(np.log(1 / 0.07), requires_grad=True)                  # float64, as numpy gives it
    bias = T.tensor(-10.0, requires_grad=True)
    clip = ns.ClipLoss(cache_labels=True)
    losses = [clip(i, t, scale.exp()), clip(i, t, scale.exp()),            # the second reads the cache
              ns.ClipLoss()(i, t, scale.exp(), logit_bias=bias, output_dict=True)["contrastive_loss"],
              ns.SigLipLoss()(i, t, scale.exp(), bias), ns.SigLipLoss(chunk_size=4)(i, t, scale.exp(), bias)]
    losses += ns.CoCaLoss(caption_loss_weight=2.0, clip_loss_weight=1.0)(i, t, lg, T.tensor(labels), scale.exp())
    losses += ns.CoCaLoss(caption_loss_weight=2.0, clip_loss_weight=0.0)(i, t, lg, T.tensor(labels), scale.exp())
    losses += ns.DistillClipLoss()(i, t, scale.exp(), T.tensor(dimg, dtype=T.float32),
                                   T.tensor(dtxt, dtype=T.float32), T.tensor(20.0))
    losses += [ns.fused_linear_cross_entropy(h, w, T.tensor(tgt), bias=bb, chunk_size=7),
               ns.fused_linear_cross_entropy(h, w, T.tensor(tgt), chunk_size=8, reduction="sum"),
               ns.GenLipLoss()(T.nn.functional.linear(h, w, bb).reshape(5, 6, 11), T.tensor(tgt).reshape(5, 6))]
    sum(loss * (k + 1) for k, loss in enumerate(losses)).backward()
    cache = [(str(k), v.tolist()) for k, v in clip.labels.items()] + [clip.prev_num_logits]
    return ([str(loss.dtype).split(".")[-1] for loss in losses], cache,
            _arr(*losses) + _arr(*(x.grad for x in (i, t, scale, bias, lg, h, w, bb))))


def test_open_clip_losses_and_gradients():
    (rd, rc, ref), (gd, gc, got) = _all_losses(torch), _all_losses(tracegrad)
    # CoCaLoss with clip_loss_weight 0 gives ``torch.tensor(0, device=...)``: an int64 0
    assert rd == gd and rd[7] == "int64" and rd.count("float32") == len(rd) - 1, (rd, gd)
    assert rc == gc == [("cpu", list(range(6))), 6]
    for k, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=2e-5, err_msg=f"output {k}")


def test_siglip_chunked_equals_unchunked():
    # the chunked loss's identity (softplus of every logit, minus the positive logits) holds
    # in tracegrad as in torch, for a chunk size that does not divide the batch
    def run(T):
        ns = open_clip_program(T)
        img, txt = (T.tensor(a.astype(np.float32)) for a in _features(3))
        s, b = T.tensor(10.0), T.tensor(-5.0)
        return [float(ns.SigLipLoss(chunk_size=c)(img, txt, s, b)) for c in (0, 1, 4, 6, 100)]
    ref, got = run(torch), run(tracegrad)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    np.testing.assert_allclose(got, got[0], rtol=1e-6)


def test_fused_linear_cross_entropy_checkpoint_paths():
    # with grad each of the 4 chunks runs under checkpoint(use_reentrant=False) and is run again
    # in backward (8 calls of ``_chunk_linear_ce``); under no_grad, or for a hidden without
    # grad, the plain path (4 calls each): the same values
    def run(T):
        ns = open_clip_program(T)
        g = ns._chunk_linear_ce.__globals__          # the program's globals
        inner, calls = g["_chunk_linear_ce"], []

        def counted(*a):
            calls.append(T.is_grad_enabled())
            return inner(*a)
        g["_chunk_linear_ce"] = counted
        rs = np.random.RandomState(4)
        h = T.tensor(rs.randn(20, 6).astype(np.float32), requires_grad=True)
        w = T.tensor(rs.randn(9, 6).astype(np.float32) * 0.4, requires_grad=True)
        tgt = T.tensor(rs.randint(0, 9, 20))
        loss = ns.fused_linear_cross_entropy(h, w, tgt, chunk_size=6)
        loss.backward()
        n_grad = len(calls)
        with T.no_grad():
            plain = ns.fused_linear_cross_entropy(h, w, tgt, chunk_size=6)
        detached = ns.fused_linear_cross_entropy(h.detach(), w, tgt, chunk_size=6)
        facts = [n_grad, len(calls), type(loss.grad_fn).__name__, plain.grad_fn is None,
                 type(detached.grad_fn).__name__]
        return facts, _arr(loss, plain, detached, h.grad, w.grad)
    (rf, ra), (gf, ga) = run(torch), run(tracegrad)
    assert rf == gf == [8, 16, "DivBackward0", True, "DivBackward0"], (rf, gf)
    for a, b in zip(ra, ga):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- tasks and the eager train step

def _train_eager(T, accum=1, clip=None, scaler=False, siglip=False, precision="fp32", steps=3,
                 init_scale=math.log(1 / 0.07)):
    """train_one_epoch's eager branch: ``_train_step_eager`` per batch (None while a step's
    batches accumulate), then what it returns; the parameters after the last step."""
    ns = open_clip_program(T)
    model = tiny_clip(T, siglip, init_scale)
    task = (ns.SigLIPTask if siglip else ns.CLIPTask)(
        model, loss=ns.SigLipLoss() if siglip else ns.ClipLoss(cache_labels=True), verbose=False)
    opt = T.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    sc = T.amp.GradScaler("cpu", init_scale=2.0 ** 8) if scaler else None
    args = types.SimpleNamespace(accum_freq=accum, grad_clip_norm=clip)
    autocast = ns.get_autocast(precision, device_type="cpu")
    acc, log = ([], {}) if accum > 1 else None, []
    for batch in batches(T, steps * accum):
        batch = task.prepare_batch(batch, device=T.device("cpu"))
        r = ns._train_step_eager(task, batch, acc, opt, sc, autocast, args)
        if r is None:
            log.append(None)
            continue
        losses, report, bs, acc = r
        log.append((_floats(losses), bs, _floats(report)))
    extra = [sc.get_scale(), sc._get_growth_tracker()] if scaler else []
    return log, [p.detach().numpy().copy() for p in model.parameters()] + _arr(*extra)


def _same_run(ref, got, tol):
    (rl, rp), (gl, gp) = ref, got
    assert [x is None for x in rl] == [x is None for x in gl]
    for a, b in zip(rl, gl):
        if a is not None:
            assert a[1] == b[1] and a[0].keys() == b[0].keys() and a[2].keys() == b[2].keys(), (a, b)
            np.testing.assert_allclose(list(b[0].values()) + list(b[2].values()),
                                       list(a[0].values()) + list(a[2].values()), rtol=tol, atol=tol)
    for a, b in zip(rp, gp):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [{}, {"accum": 2}, {"clip": 0.5, "scaler": True}, {"siglip": True, "accum": 2, "clip": 1.0},
                                {"init_scale": math.log(1 / 0.005)}], ids=["clip", "accum2", "scaler_clip",
                                                                           "siglip_accum2", "clamped_scale"])
def test_train_step_eager(kw):
    ref, got = _train_eager(torch, **kw), _train_eager(tracegrad, **kw)
    _same_run(ref, got, 2e-5)
    if kw.get("accum") == 2:                       # a step per two batches, of 8 samples
        assert [x is None for x in got[0]] == [True, False] * 3 and got[0][1][1] == 8
    if "init_scale" in kw:    # 200 at the first forward, clamped to ln(100) after its step
        scales = [x[2]["logit_scale"] for x in got[0]]
        assert abs(scales[0] - 200.0) < 1e-3 and all(v <= 100.0 + 1e-3 for v in scales[1:]), scales


@pytest.mark.parametrize("siglip", [False, True], ids=["clip", "siglip"])
def test_train_step_amp_bf16(siglip):
    # CPU autocast to bfloat16: conv/linear in bfloat16, features normalised in bfloat16, the
    # float32 logit_scale times bfloat16 features, the losses' softmax/logsigmoid; before the
    # 16-bit backward fixes the parameters were 0.07 (CLIP) and 0.006 (SigLIP) off torch's
    ref = _train_eager(torch, siglip=siglip, precision="amp_bf16", clip=1.0 if siglip else None)
    got = _train_eager(tracegrad, siglip=siglip, precision="amp_bf16", clip=1.0 if siglip else None)
    _same_run(ref, got, 2e-6)


def test_model_outputs_under_bf16_autocast():
    def run(T):
        ns = open_clip_program(T)
        model = tiny_clip(T, siglip=True)
        task = ns.SigLIPTask(model, loss=ns.SigLipLoss(), verbose=False)
        b = batches(T, 1)[0]
        with ns.get_autocast("amp_bf16", device_type="cpu")():
            out = model(**b)
            (losses, report), eval_out = task(b), None
        task.eval()
        eval_out = task(b["image"], text=b["text"])      # positional + keyword call convention
        dtypes = {k: str(v.dtype).split(".")[-1] for k, v in out.items()}
        return dtypes, sorted(losses), sorted(report), task.batch_size(b), sorted(eval_out), \
            [str(v.dtype).split(".")[-1] for v in eval_out.values()]
    assert run(torch) == run(tracegrad) == (
        {"image_features": "bfloat16", "text_features": "bfloat16", "logit_scale": "float32", "logit_bias": "float32"},
        ["contrastive_loss", "loss"], ["logit_bias", "logit_scale"], 4,
        ["image_features", "logit_bias", "logit_scale", "text_features"], ["float32"] * 4)


def test_train_step_warns_alike():
    # the step's calls (GradScaler on CPU, autocast, clip_grad_norm_, the logging floats) raise
    # the same warnings in both libraries
    seen = []
    for T in (torch, tracegrad):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            _train_eager(T, scaler=True, clip=0.5, steps=1)
            _train_eager(T, precision="amp_bf16", steps=1)
        seen.append(sorted({(w.category.__name__, str(w.message)[:50]) for w in rec}))
    assert seen[0] == seen[1], seen


# ---------------------------------------------------------------- the 16-bit backward kernels, op by op

def _low(T, a, dtype, grad=True):
    t = T.tensor(np.asarray(a, np.float32)).to(getattr(T, dtype))
    return t.requires_grad_() if grad else t


def _bitwise(run, dtype):
    ref, got = run(torch, dtype), run(tracegrad, dtype)
    assert len(ref) == len(got)
    for i, (a, b) in enumerate(zip(ref, got)):
        if isinstance(a, str):
            assert a == b, (i, a, b)
        else:
            np.testing.assert_array_equal(b, a, err_msg=f"output {i}")


LOWP = ["bfloat16", "float16"]


@pytest.mark.parametrize("dtype", LOWP)
@pytest.mark.parametrize("case", ["scalar_first", "scalar_second", "bcast_row", "same_shape", "python_number"])
def test_mul_backward_16_bit(case, dtype):
    # torch's MulBackward0: grad * other and grad * self through its mul kernel (a one-element
    # *second* operand read at float32 precision), summed to the input's shape in float32
    rs = np.random.RandomState(len(case))
    x, g = rs.randn(64, 6) * 3, rs.randn(64, 6)
    y = {"bcast_row": rs.randn(1, 6), "same_shape": rs.randn(64, 6)}.get(case)

    def run(T, dtype):
        a = _low(T, x, dtype)
        s = T.tensor(14.285714, requires_grad=True)          # CLIP's exp(log(1 / 0.07)), float32
        b = _low(T, y, dtype) if y is not None else None
        out = {"scalar_first": lambda: s * a, "scalar_second": lambda: a * s, "bcast_row": lambda: a * b,
               "same_shape": lambda: a * b, "python_number": lambda: a * 14.285714}[case]()
        out.backward(_low(T, g, dtype, False))
        grads = [t.grad.float().numpy() for t in (a, s, b) if t is not None and t.grad is not None]
        return [str(out.dtype).split(".")[-1], out.detach().float().numpy()] + grads
    _bitwise(run, dtype)


@pytest.mark.parametrize("dtype", LOWP)
@pytest.mark.parametrize("case", ["bcast_col", "scalar_divisor", "tensor_by_expand"])
def test_div_backward_16_bit(case, dtype):
    # DivBackward0: grad / other for self, -grad * ((self / other) / other) for other, each
    # kernel rounded to 16 bits; F.normalize's ``x / norm.expand_as(x)``
    rs = np.random.RandomState(7)
    x, n, g = rs.randn(32, 6) * 2, np.abs(rs.randn(32, 1)) + 0.5, rs.randn(32, 6)

    def run(T, dtype):
        a, d = _low(T, x, dtype), _low(T, n, dtype)
        s = T.tensor(0.3, requires_grad=True)
        out = {"bcast_col": lambda: a / d, "scalar_divisor": lambda: a / s,
               "tensor_by_expand": lambda: a / d.expand_as(a)}[case]()
        out.backward(_low(T, g, dtype, False))
        return [out.detach().float().numpy()] + [t.grad.float().numpy() for t in (a, d, s) if t.grad is not None]
    _bitwise(run, dtype)


@pytest.mark.parametrize("dtype", LOWP)
def test_expand_where_sum_gradients_16_bit(dtype):
    # a broadcast input's gradient is summed in float32 and rounded once (64 rows: a 16-bit
    # accumulation was several steps off)
    rs = np.random.RandomState(8)
    x, r, g = rs.randn(64, 6), rs.randn(1, 6), rs.randn(64, 6)

    def run(T, dtype):
        a, b, c = _low(T, x, dtype), _low(T, r, dtype), _low(T, r, dtype)
        e = b.expand(64, 6) * 1.0 + T.where(a > 0, a, c) + a.sum(0, keepdim=True).expand_as(a) * 1.0
        e.backward(_low(T, g, dtype, False))
        return [e.detach().float().numpy(), a.grad.float().numpy(), b.grad.float().numpy(), c.grad.float().numpy()]
    _bitwise(run, dtype)


@pytest.mark.parametrize("dtype", LOWP)
def test_normalize_and_norm_backward_16_bit(dtype):
    # the 2-norm's backward: grad * (self / norm) with the rounded norm, 0 where the norm is 0
    rs = np.random.RandomState(9)
    x, g = rs.randn(5, 12, 7), rs.randn(5, 12, 7)
    x[0, 0] = 0

    def run(T, dtype):
        a, b = _low(T, x, dtype), _low(T, x, dtype)
        y = T.nn.functional.normalize(a, dim=-1)
        y.backward(_low(T, g, dtype, False))
        n = b.norm(2, (0, 2), keepdim=False)
        n.backward(_low(T, g[:1, :, 0].reshape(12), dtype, False))
        return [y.detach().float().numpy(), a.grad.float().numpy(), n.detach().float().numpy(), b.grad.float().numpy()]
    _bitwise(run, dtype)


def test_linalg_vector_norm_backward_bf16():
    # linalg.vector_norm (and matrix_norm's 'fro') was a jax_function op of its own, with
    # jax.vjp's rounding; now the op table's norm, as Tensor.norm
    rs = np.random.RandomState(9)
    x, g = rs.randn(5, 12, 7), rs.randn(5, 12, 1)

    def run(T, dtype):
        a = _low(T, x, dtype)
        n = T.linalg.vector_norm(a, dim=-1, keepdim=True)
        n.backward(_low(T, g, dtype, False))
        b = _low(T, x[0], dtype)
        m = T.linalg.matrix_norm(b)
        m.backward()
        return [type(n.grad_fn).__name__, type(m.grad_fn).__name__, a.grad.float().numpy(), b.grad.float().numpy()]
    _bitwise(run, "bfloat16")


@pytest.mark.parametrize("dtype", LOWP + ["float32", "float64"])
def test_logsigmoid_one_op(dtype):
    # torch's log_sigmoid: one LogSigmoidBackward0 node on the input's AccumulateGrad, and its
    # kernel's numbers: bit for bit in 16 bits (the rounded buffer), to an ulp in float32/64
    # (not past |x| ~ 87, where the result is a float32 subnormal XLA:CPU flushes to zero)
    x = np.concatenate([np.random.RandomState(10).randn(300) * 6, [0.0, -0.0, 30.0, -30.0, 1e-8, -80.0, 80.0]])
    g = np.random.RandomState(11).randn(x.size)

    def run(T, dtype):
        a = T.tensor(x).to(getattr(T, dtype)).requires_grad_()
        y = T.nn.functional.logsigmoid(a)
        d, = T.autograd.grad(y, a, T.tensor(g).to(a.dtype), create_graph=True)
        dd, = T.autograd.grad(d.sum(), a)
        names = [type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__, type(d.grad_fn).__name__]
        return names + [str(y.dtype).split(".")[-1]] + [t.detach().double().numpy() for t in (y, d, dd)]
    ref, got = run(torch, dtype), run(tracegrad, dtype)
    assert ref[:4] == got[:4] == ["LogSigmoidBackward0", "AccumulateGrad", "LogSigmoidBackwardBackward0", dtype]
    if dtype in LOWP:
        for a, b in zip(ref[4:6], got[4:6]):
            np.testing.assert_array_equal(b, a)
        # torch's double backward is a composite of 16-bit steps: within a few of them
        np.testing.assert_allclose(got[6], ref[6], rtol=2e-2, atol=5e-3)
    else:
        tol = 1e-6 if dtype == "float32" else 1e-14
        for a, b in zip(ref[4:], got[4:]):
            np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def test_logsigmoid_refusals_and_module():
    def run(T):
        out = []
        for x in (T.tensor([1, 2]), T.tensor([True]), T.randn(2, dtype=T.complex64)):
            with pytest.raises(NotImplementedError) as e:
                T.nn.functional.logsigmoid(x)
            out.append(str(e.value))
        y = T.nn.LogSigmoid()(T.tensor([-1.0, 0.0, 2.0], requires_grad=True))
        return out, [type(y.grad_fn).__name__, [round(v, 6) for v in y.tolist()]]
    (ref, ref_mod), (got, got_mod) = run(torch), run(tracegrad)
    assert ref_mod == got_mod
    for a, b in zip(ref, got):      # torch's words, tracegrad's advice after them
        assert a in b, (a, b)


def test_autocast_helper():
    # precision.py: fp32 gives contextlib.suppress; amp/amp_bf16 a partial of torch.amp.autocast
    for T in (torch, tracegrad):
        ns = open_clip_program(T)
        assert ns.get_autocast("fp32") is contextlib.suppress
        assert ns.get_autocast("amp_bf16", fsdp=True) is contextlib.suppress
        ac = ns.get_autocast("amp_bf16", device_type="cpu")
        assert ac.func is T.amp.autocast and ac.keywords == {"device_type": "cpu", "dtype": T.bfloat16}
        with ac():
            assert T.is_autocast_enabled("cpu") and T.get_autocast_dtype("cpu") is T.bfloat16


# ---------------------------------------------------------------- Shahip2016/PINNs

BOUNDS = {"x": (0.0, 1.0), "t": (0.0, 1.0)}


def pinn_program(T, log=None):
    """pinn_model.py and pde_utils.py with ``torch`` bound to ``T``; ``print`` appends to ``log``."""
    extra = {} if log is None else {"print": lambda *a: log.append(" ".join(map(str, a)))}
    return program(T, PINN_MODEL + PINN_UTILS, OrderedDict=OrderedDict, grad=T.autograd.grad,
                   HAS_TORCH_FUNC=True, **extra)


def pinn(T, ns, hidden=(8, 8), activation="tanh", output_dim=1, seed=0):
    """A PINN of (x, t) -> u, its weights redrawn from a seeded NumPy stream (its own init draws
    from the library's generator)."""
    model = ns.PINN(input_dim=2, output_dim=output_dim, hidden_layers=list(hidden), activation=activation)
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in model.named_parameters():
            p.copy_(T.tensor(rs.uniform(-0.8, 0.8, tuple(p.shape)).astype(np.float32)))
    return model


def grid(T, ns, n=36):
    """heat_equation_1d.py's collocation points: a uniform grid over BOUNDS (6 x 6 here)."""
    return T.tensor(ns.DataGenerator.generate_collocation_points(BOUNDS, n))


def train_heat(T, compiled=False, epochs=3, pde="heat_equation_1d"):
    """examples/heat_equation_1d.py's ``main`` at tiny sizes (its constants are locals): the
    physics loss of ``pde`` trained by ``train_model`` (Adam, clip_grad_norm_, a print per
    epoch); ``compiled`` calls the model's own ``compile()`` first."""
    log = []
    ns = pinn_program(T, log)
    model = pinn(T, ns)
    if compiled:
        assert model.compile() is model
    x_coll_tensor = grid(T, ns).to(model.device)
    kw = {"alpha": 0.01} if pde == "heat_equation_1d" else {}

    def heat_loss_wrapper(model_in, **kwargs):
        return model_in.physics_loss(kwargs["x"], getattr(ns.PDELibrary, pde), **kw)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-2)
    history = model.train_model(optimizer=optimizer, n_epochs=epochs, loss_fn=heat_loss_wrapper,
                                x=x_coll_tensor, print_every=1)
    return log, history, [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("pde", ["heat_equation_1d", "wave_equation_1d", "burgers_equation_1d"])
def test_pinn_train_model(pde):
    (rl, rh, rp), (gl, gh, gp) = train_heat(torch, pde=pde), train_heat(tracegrad, pde=pde)
    assert len(rl) == 3 and rl[0].startswith("Epoch 1/3, Loss: ") and rh == gh
    same_logs("\n".join(rl), "\n".join(gl), 1e-5)
    for a, b in zip(rp, gp):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_pinn_operators_and_residuals():
    # PDEOperators on a two-output network (divergence of (u, v)); the residuals and their
    # gradients for the network's parameters
    def run(T):
        ns = pinn_program(T)
        out = []
        model = pinn(T, ns, hidden=(6,), activation="sin", output_dim=2, seed=3)
        x = grid(T, ns, 16)
        out += [ns.PDEOperators.gradient(lambda p: model(p)[:1], x), ns.PDEOperators.laplacian(lambda p: model(p)[1:], x),
                ns.PDEOperators.divergence(model, x)]
        model = pinn(T, ns, hidden=(6, 6), activation="gelu", seed=4)
        for name in ("heat_equation_1d", "wave_equation_1d", "burgers_equation_1d"):
            model.zero_grad()
            loss = model.physics_loss(x, getattr(ns.PDELibrary, name))
            loss.backward()
            # the heat and wave residuals hold only derivatives in x: the output bias gets no
            # gradient, its .grad None (test_func_unused_closure_grad_is_none)
            out += [loss] + [T.zeros_like(p) if p.grad is None else p.grad for p in model.parameters()]
            out.append(np.array([p.grad is None for p in model.parameters()]))
        return _arr(*out)
    ref, got = run(torch), run(tracegrad)
    for i, (a, b) in enumerate(zip(ref, got)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5, err_msg=f"output {i}")


def test_pinn_losses_history_and_weights():
    def run(T):
        ns = pinn_program(T)
        model = pinn(T, ns, activation="swish", seed=5)
        np.random.seed(1)
        bnd = ns.DataGenerator.generate_boundary_points(BOUNDS, 4, time_dependent=True)
        init = T.tensor(ns.DataGenerator.generate_initial_points(BOUNDS, 5))
        left = T.tensor(bnd["left"])
        losses = {"boundary": (model.boundary_loss(left, T.zeros(4, 1)), 10.0),
                  "initial": (model.initial_loss(init, T.sin(init[:, :1])), 1.0),
                  "data": (model.data_loss(init, T.ones(5, 1)), 0.5), "physics": (None, 1.0)}
        total = model.total_loss(losses)
        total.backward()
        hist = {k: [round(v, 5) for v in h] for k, h in model.loss_history.items()}
        out = [type(total.grad_fn).__name__, total.requires_grad, hist]
        for method in ("uncertainty", "gradnorm", "fixed"):
            w = ns.AdaptiveWeights(3, method=method)
            tot, weights = w([losses[k][0].detach() for k in ("boundary", "initial", "data")])
            out.append((round(float(tot), 5), [round(v, 5) for v in weights.tolist()],
                        [n for n, _ in w.named_parameters()]))
        pred = model.predict(np.array([[0.5, 0.5]], np.float32))
        out.append((type(pred).__name__, pred.dtype.name, pred.shape, model.training))
        return out
    assert run(torch) == run(tracegrad)


def test_multiscale_pinn_assigns_a_parameter_before_init():
    # MultiScalePINN sets ``self.B = nn.Parameter(...)`` before ``super().__init__()``: both
    # libraries refuse the assignment
    msgs = []
    for T in (torch, tracegrad):
        ns = pinn_program(T)
        with pytest.raises(AttributeError) as e:
            ns.MultiScalePINN(2, 1, [4], fourier_features=3)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] == "cannot assign parameters before Module.__init__() call"


def test_func_unused_closure_grad_is_none():
    # a tensor a transform closes over that its results do not depend on (a network's output
    # bias under vmap(jacrev(net))): torch's graph never reaches it, its .grad stays None;
    # tracegrad's transform node gave it the VJP's zeros (fixed: func/_wrap.py NOTE [inputs no
    # result depends on])
    def run(T):
        lin = T.nn.Linear(2, 1)
        g = T.func.vmap(T.func.jacrev(lambda xi: lin(T.tanh(xi))))(T.ones(3, 2))
        g.sum().backward()
        return lin.bias.grad is None, lin.weight.grad is None
    assert run(tracegrad) == run(torch) == (True, False)
