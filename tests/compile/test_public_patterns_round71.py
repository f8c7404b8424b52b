"""Compile patterns of the seventy-first round of public programs
(tests/api/test_public_programs_round71.py; sources in tests/public_programs_round71_src.py),
programs that call ``torch.compile`` themselves:

- rasbt/LLMs-from-scratch ``01_opt_single_gpu.py``: ``main`` run unchanged with its own
  ``model = torch.compile(model)`` compiling (the bfloat16 GPT's forward traced for the
  training batches, the evaluation batches in ``eval()``/``no_grad`` and the one-row greedy
  generation) equals the same program under ``set_stance("force_eager")`` bit for bit: logs,
  losses, generated text and parameters. Its training step (``zero_grad``, ``calc_loss_batch``,
  ``backward``, fused AdamW on bfloat16 parameters) under ``tracegrad.compile`` traces once and
  equals eager bit for bit, and torch's eager step within bfloat16's steps.
"""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

import api.test_public_programs_round71 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from compile.test_public_patterns_round66 import _one_trace  # noqa: E402


def test_llm_speed_main_compiled_equals_eager(tmp_path, monkeypatch):
    _api.write_text(tmp_path)
    monkeypatch.chdir(tmp_path)
    tracegrad.compiler.reset()
    eager = _api.run_main(tracegrad, compiled=False)
    before = {k: dict(v) for k, v in tracegrad.compiler.stats().items()}
    comp = _api.run_main(tracegrad, compiled=True)
    after = tracegrad.compiler.stats()
    new = {k: v for k, v in after.items() if v != before.get(k)}
    assert eager[0] == comp[0], (eager[0], comp[0])           # the printed log, samples included
    assert eager[1:4] == comp[1:4]
    sd_e, sd_c = eager[4].state_dict(), comp[4].state_dict()
    assert list(sd_e) == list(sd_c)
    for k in sd_e:
        np.testing.assert_array_equal(sd_c[k].float().numpy(), sd_e[k].float().numpy(), err_msg=k)
    # the model's forward: 48 training calls, 5 evaluations of two splits, 2 x 50 generation
    # calls, traced per signature (training, evaluation, generation) and not more
    forward = [v for k, v in new.items() if "GPTModel" in k]
    assert len(forward) == 1, new
    st = forward[0]
    assert st["calls"] == 48 + 10 + 100 and st["graph_breaks"] == [], st
    assert 3 <= st["traces"] <= 4, st


def _step_run(T, compiled):
    ns = _api.llm_program(T, [])
    model = ns.GPTModel(_api.CONFIG).to(T.bfloat16)
    optimizer = T.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.1, fused=True)
    device = T.device("cpu")

    def step(inp_batch, tgt_batch):     # train_model_simple_with_timing's batch body
        optimizer.zero_grad()
        loss = ns.calc_loss_batch(inp_batch, tgt_batch, model, device)
        loss.backward()
        optimizer.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    rs, losses = np.random.RandomState(7), []
    for _ in range(3):
        x, y = (T.tensor(rs.randint(0, _api.VOCAB, (2, 7))) for _ in range(2))
        losses.append(float(f(x, y).float()))
    return losses, [p.detach().float().numpy() for p in model.parameters()], f


def test_bf16_fused_adamw_step_compiled():
    ref_losses, ref_params, _ = _step_run(torch, False)
    eager_losses, eager_params, _ = _step_run(tracegrad, False)
    comp_losses, comp_params, f = _step_run(tracegrad, True)
    assert comp_losses == eager_losses
    for a, b in zip(eager_params, comp_params):
        np.testing.assert_array_equal(b, a)
    _one_trace(f.stats, 3)
    np.testing.assert_allclose(eager_losses, ref_losses, rtol=2 ** -7)
    for a, b in zip(ref_params, eager_params):
        np.testing.assert_allclose(b, a, atol=1e-2)
