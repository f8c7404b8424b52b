"""Compile patterns of the sixty-first round of public programs
(tests/api/test_public_programs_round61.py; sources in tests/public_programs_round61_src.py): each
program's training step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the
same initial state:

- spro/practical-pytorch (MIT), the batched seq2seq notebook's ``train`` compiled whole: the
  packed bidirectional GRU encoder (Python length lists), the attention energies written element
  by element, teacher forcing into a zeros tensor, the masked loss with ``torch.range``, two
  ``clip_grad_norm`` calls and two SGD steps, ``loss.item()`` returned.
- spro/practical-pytorch char-rnn-generation's ``train`` (the chunk's characters as tensor
  arguments, the GRU stepped per character, ``decoder.zero_grad()``) returns
  ``loss.item() / args.chunk_len``: Python arithmetic on the number, which was a graph break (each
  call ran eagerly), is deferred to after each run (NOTE [deferred item]): one program per chunk
  length, equal to torch.
Found: the step takes ``target_batches`` transposed (a non-contiguous view argument) and asks
``target_batches.transpose(0, 1).contiguous()`` and then ``view(-1, 1)`` of it: the layout of a
view of such an argument was a graph break (``is_contiguous()``/``stride()``/``view()``: the
stand-in is contiguous), so every call ran eagerly; it is now answered by the same view of the
caller's argument (its view steps after the argument's own), the argument's strides guarding
the program (tracegrad/_lowering/capture.py ``see_strides``/``see_layout_choice``).
"""
import contextlib
import io
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import compiled_parity, arrays as _arr, init_uniform, state as _state
from public_programs_round61_src import CHAR_RNN, S2S_DATA, S2S_MODELS, S2S_TRAIN, program

torch = pytest.importorskip("torch")

import api.test_public_programs_round61 as _api  # noqa: E402  (the pair file and the torch-0.3 rewrite)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # graph breaks, implicit softmax dims, torch.range
        yield


def _s2s_runs(T, compiled, attn_model):
    with contextlib.redirect_stdout(io.StringIO()):
        g = program(T, _api.torch03(S2S_DATA + S2S_MODELS + S2S_TRAIN), batch_size=3, clip=0.5,
                    **_api._s2s_globals(T))
    encoder = init_uniform(T, g.EncoderRNN(g.input_lang.n_words, 8, 2, dropout=0.0), 1, 0.4)
    decoder = init_uniform(T, g.LuongAttnDecoderRNN(attn_model, 8, g.output_lang.n_words, 2, dropout=0.0), 2, 0.4)
    # SGD with momentum: Adam would amplify the float-noise gradients (see the api test)
    encoder_optimizer = T.optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)
    decoder_optimizer = T.optim.SGD(decoder.parameters(), lr=0.1 * 5.0, momentum=0.9)
    criterion = T.nn.CrossEntropyLoss()
    train = T.compile(g.train) if compiled else g.train
    batches = [g.random_batch(3) for _ in range(2)]
    out = []
    for b in (0, 1, 0):
        loss, ec, dc = train(*batches[b], encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
        assert isinstance(loss, float)
        out += [np.array(loss)] + _arr(ec, dc)
    return out + _state(encoder) + _state(decoder), train


def test_s2s_train_compiled(tmp_path, monkeypatch):
    monkeypatch.chdir(_api.write_pairs(tmp_path))
    st = compiled_parity(torch, tracegrad, lambda T, c: _s2s_runs(T, c, "dot"), 5e-5, 2e-5)
    # call 1 eager; the two batches have one shape: one program for calls 2 and 3
    assert st["calls"] == 3 and st["eager_calls"] == 1 and st["traces"] == 1, st
    assert not st["graph_breaks"], st


# ---------------------------------------------------------------- views of view arguments

def _layout_step(T, compiled):
    def step(x):
        y = x.transpose(0, 1)           # a view of the (possibly transposed) argument
        flat = y.contiguous().view(-1, 1)
        return flat * 2, y.is_contiguous(), y.stride(), x[1:].is_contiguous(), y.reshape(-1)

    f = T.compile(step) if compiled else step
    base = T.arange(12.0).reshape(3, 4)
    out = []
    # a transposed argument (its transpose is contiguous), twice; then a contiguous argument of
    # the same shape (the transpose of it is not: its strides are guarded); then the transposed
    # one again; then a transposed slice of a wider tensor (other strides)
    wide = T.arange(30.0).reshape(5, 6)
    for x in (base.t(), (base + 1).t(), base.t().contiguous(), base.t(), wide[:, 1:4].t(),
              wide[:, 1:4].t()):
        flat, c, st, c2, r = f(x)
        out += [flat.detach().numpy().copy(), np.array(c), np.array(st), np.array(c2), r.detach().numpy().copy()]
    return out, f


def test_layout_of_a_view_of_a_view_argument():
    st = compiled_parity(torch, tracegrad, _layout_step, 0, 0)
    assert not st["graph_breaks"], st
    # the transposed (4, 3) arguments: one program; the contiguous one: another (the strides
    # differ); the transposed slice: a third (strides (1, 6))
    assert st["calls"] == 6 and st["traces"] == 3, st


def test_view_of_a_view_argument_refuses_as_eager():
    # ``view`` of a view of a transposed argument whose layout cannot take it raises torch's
    # RuntimeError, compiled as eagerly
    def step(x):
        return x[:, :2].view(-1)

    base = tracegrad.arange(12.0).reshape(3, 4).t()
    for f in (step, tracegrad.compile(step)):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            f(base)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.arange(12.0).reshape(3, 4).t()[:, :2].view(-1)


# ---------------------------------------------------------------- char-rnn generation

def _char_rnn_runs(T, compiled):
    src = CHAR_RNN.replace("criterion(output, target[c])", "criterion(output, target[c].view(1))") \
        .replace(".data[0]", ".item()")
    g = program(T, src)
    names = g.train.__globals__
    names.update(args=types.SimpleNamespace(chunk_len=5), criterion=T.nn.CrossEntropyLoss())
    decoder = names["decoder"] = init_uniform(T, g.RNN(g.n_characters, 8, g.n_characters, 2), 3, 0.4)
    names["decoder_optimizer"] = T.optim.SGD(decoder.parameters(), lr=0.1, momentum=0.9)
    train = T.compile(g.train) if compiled else g.train
    chunks = ["What is", "the tall", "ship is!"]
    out = []
    for i in (0, 1, 2, 0):
        loss = train(g.char_tensor(chunks[i][:-1]), g.char_tensor(chunks[i][1:]))
        assert isinstance(loss, float)
        out.append(np.array(loss))
    return out + _state(decoder), train


def test_char_rnn_train_compiled_with_item_arithmetic():
    # chunks of 6, 7, 7 and 6 characters: the first call eager, a program per length
    st = compiled_parity(torch, tracegrad, _char_rnn_runs, 2e-5, 1e-5)
    assert st["calls"] == 4 and st["eager_calls"] == 1 and st["traces"] == 2 and not st["graph_breaks"], st
