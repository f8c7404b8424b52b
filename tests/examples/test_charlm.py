"""The character-LM example: a few dozen tiny steps train (the loss falls), and the same steps
compiled with tracegrad.compile give eager's losses to float rounding with no graph break.
Imports the example's train function rather than running a subprocess."""
import numpy as np
import pytest

import tracegrad

from tracegrad.examples.charlm import load_text, sample, train

TINY = dict(steps=30, hidden=32, seq_len=16, batch_size=8, lr=1e-2, seed=0, progress=False)


@pytest.mark.parametrize("model", ["lstm", "transformer"])
def test_charlm_compiled_losses_equal_eager_and_fall(model):
    eager = train(model, compile=False, **TINY)
    compiled = train(model, compile=True, **TINY)
    losses = np.array(eager["losses"])
    assert len(losses) == TINY["steps"] and np.isfinite(losses).all()
    # starts near log(vocab) (uniform guess) and falls clearly
    assert abs(losses[0] - np.log(len(eager["vocab"]))) < 0.5
    assert losses[-5:].mean() < losses[0] - 0.8
    np.testing.assert_allclose(compiled["losses"], losses, rtol=1e-4)
    stats = compiled["step"].stats
    assert stats["graph_breaks"] == []
    assert stats["calls"] == TINY["steps"] and stats["eager_calls"] == 1  # only the warm-up call
    # the compiled step wrote its updates into the model's own parameters: both trained models
    # predict the same. (Parameters are not compared one by one: attention's key bias gets a
    # gradient of pure rounding noise -- softmax ignores a constant shift -- which AdamW turns
    # into steps of size lr in either direction.)
    batch = eager["data"][: TINY["seq_len"]].unsqueeze(0)
    with tracegrad.no_grad():
        got, _ = compiled["model"](batch)
        want, _ = eager["model"](batch)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3, atol=1e-3)


def test_charlm_text_is_packaged_and_sampling_is_seeded():
    text, vocab, data = load_text()
    assert len(text) > 3000 and vocab == sorted(set(text))
    assert "".join(vocab[i] for i in data[:20].tolist()) == text[:20]
    result = train("lstm", compile=False, **dict(TINY, steps=2))
    prompt = result["data"][:16]
    first = sample(result["model"], vocab, prompt, length=40, seq_len=16, seed=1)
    assert len(first) == 40 and set(first) <= set(vocab)
    assert sample(result["model"], vocab, prompt, length=40, seq_len=16, seed=1) == first
    greedy = sample(result["model"], vocab, prompt, length=40, seq_len=16, greedy=True)
    assert sample(result["model"], vocab, prompt, length=40, seq_len=16, greedy=True, seed=5) == greedy
