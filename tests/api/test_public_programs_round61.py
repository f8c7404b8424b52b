"""A sixty-first round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round61_src.py, executed with ``torch`` bound to either module. Each test
compares losses, printed logs, gradients and parameters after optimizer steps:

- spro/practical-pytorch (MIT), ``seq2seq-translation/seq2seq-translation-batched.ipynb`` at
  7a86070 and ``seq2seq-translation/masked_cross_entropy.py`` at 31fdb61 (batched seq2seq with
  Luong attention and teacher forcing, written for torch 0.3): the data cells read and trim a
  tab-separated pair file (``unicodedata``/``re`` normalisation, word counts), ``random_batch``
  sorts by length and pads; a bidirectional 2-layer GRU encoder over ``pack_padded_sequence``
  (Python length lists) with ``pad_packed_sequence`` and the directions summed by slicing; the
  attention energies written one by one into ``Variable(torch.zeros(B, S))`` through
  ``attn_energies[b, i] = ...`` (CopySlices), ``F.softmax`` without ``dim`` (the implicit-dim
  rule), ``bmm`` of the weights with the transposed encoder outputs; the decoder's
  ``embedding.view(1, B, N)``, ``F.tanh``; teacher forcing by ``all_decoder_outputs[t] = ...``
  into a zeros tensor; ``masked_cross_entropy`` with ``torch.range(...).long()`` (deprecated,
  inclusive end), ``log_softmax`` without ``dim``, ``gather``, the mask by ``<`` of expanded
  tensors and ``.float()``; ``torch.nn.utils.clip_grad_norm`` (the deprecated alias) over two
  models; Adam with two learning rates.
  As written the notebook fails on torch 2.13 exactly where it fails on tracegrad: ``Attn.score``
  calls ``dot`` on 2-D rows (torch 0.3 flattened them; now RuntimeError "1D tensors expected")
  and ``loss.data[0]`` indexes a 0-d tensor (IndexError); the test cells are run unchanged for
  those errors, then with the two torch-0.3 idioms rewritten (``x.dot(y)`` as
  ``x.view(-1).dot(y.view(-1))``, ``.data[0]`` as ``.item()``) for the values.
- spro/practical-pytorch (MIT) ``char-rnn-generation`` (helpers.py at 16cc269, model.py and
  generate.py at fc6fe17, train.py at f5916ff): ``char_tensor`` writing ``tensor[c] = int`` into
  ``torch.zeros(n).long()``, an ``nn.Embedding`` + 2-layer ``nn.GRU`` stepped one character at a
  time (``input.view(1, -1)`` of a 0-d index), ``loss += criterion(output, target[c])`` over the
  chunk, ``decoder.zero_grad()``, Adam; ``generate`` priming the hidden state, sampling by
  ``torch.multinomial`` of ``output.data.view(-1).div(temperature).exp()`` and indexing a str
  by the 0-d result. As written ``train`` fails alike (a 0-d target for a (1, C) input:
  ValueError "Expected input batch_size (1) to match target batch_size (0)"; torch 0.3 indexed
  a 1-element vector), so it is also run with ``target[c]`` as ``target[c].view(1)`` and
  ``.data[0]`` as ``.item()``; ``multinomial`` draws from one seeded NumPy stream.
Changes, the same on both sides: ``USE_CUDA = False``, parameters overwritten from seeded NumPy
streams, a synthetic pair file, tiny sizes, dropout 0 (random streams differ).
"""
import contextlib
import functools
import io
import random
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, numpy_draws, \
    same_error, same_logs, state as _state
from public_programs_round61_src import CHAR_RNN, S2S_DATA, S2S_MASKED_CE, S2S_MODELS, S2S_TEST, S2S_TRAIN, program

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # implicit softmax dims, torch.range, F.tanh, volatile
        yield


# ---------------------------------------------------------------- seq2seq with attention

_FRA = ["je", "suis", "il", "est", "tu", "es", "grand", "petit", "ici", "."]
_ENG = ["i", "am", "he", "is", "you", "are", "tall", "small", "here", "."]


def write_pairs(root, n=40, seed=0):
    """``root/eng-fra.txt`` (tab-separated English and French sentences of the same words, short
    enough for the notebook's 3..25 character filter, each word frequent enough for its trim)
    and ``root/run`` as the working directory the notebook's ``'../%s-%s.txt'`` reads from."""
    rs = np.random.RandomState(seed)
    lines = []
    for _ in range(n):
        idx = rs.randint(0, len(_FRA) - 1, rs.randint(2, 5))
        lines.append(" ".join(_ENG[i] for i in idx) + " .\t" + " ".join(_FRA[i] for i in idx) + " .")
    (root / "eng-fra.txt").write_text("\n".join(lines) + "\n")
    (root / "run").mkdir()
    return root / "run"


_TORCH03 = [("hidden.dot(encoder_output)", "hidden.view(-1).dot(encoder_output.view(-1))"),
            ("hidden.dot(energy)", "hidden.view(-1).dot(energy.view(-1))"),
            ("self.v.dot(energy)", "self.v.view(-1).dot(energy.view(-1))"),
            (".data[0]", ".item()")]


def torch03(src):
    """``src`` with the two torch-0.3 idioms rewritten (2-D ``dot`` flattened, ``.data[0]`` of
    a 0-d loss as ``.item()``)."""
    for a, b in _TORCH03:
        src = src.replace(a, b)
    return src


def no_dropout(T, model):
    """The GRUs' inter-layer dropout and the ``nn.Dropout`` modules of ``model`` set to 0 (the
    notebook's default 0.1 draws from streams that differ between the libraries)."""
    for m in model.modules():
        if isinstance(m, T.nn.Dropout):
            m.p = 0.0
        elif isinstance(m, T.nn.GRU):
            m.dropout = 0.0
    return model


def _s2s_globals(T, seed=0):
    random.seed(seed)
    return dict(USE_CUDA=False, masked_cross_entropy=program(T, S2S_MASKED_CE).masked_cross_entropy)


def test_s2s_notebook_test_cells_fail_alike(tmp_path, monkeypatch):
    # the "Testing the models" cells as written: 2-D ``dot`` raises RuntimeError in both
    monkeypatch.chdir(write_pairs(tmp_path))
    msgs = same_error(torch, tracegrad, lambda T: program(
        T, S2S_DATA + S2S_MODELS + S2S_TEST, **_s2s_globals(T)))
    assert all("1D tensors expected" in m for m in msgs), msgs
    # with the ``dot`` rows flattened, the next failure is ``loss.data[0]`` (IndexError)
    src = S2S_DATA + S2S_MODELS + S2S_TEST
    for a, b in _TORCH03[:3]:
        src = src.replace(a, b)
    msgs = same_error(torch, tracegrad, lambda T: program(T, src, **_s2s_globals(T)))
    assert all("invalid index of a 0-dim tensor" in m for m in msgs), msgs


def _s2s_test_cells(T, tmp):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, torch03(S2S_DATA + S2S_MODELS), **_s2s_globals(T))
    # the cells build their models themselves: seed each right after its own __init__
    for cls, seed in ((g.EncoderRNN, 1), (g.LuongAttnDecoderRNN, 2)):
        orig = cls.__init__

        def init(self, *a, _orig=orig, _seed=seed, **k):
            _orig(self, *a, **k)
            no_dropout(T, self)
            init_uniform(T, self, _seed, 0.4)
        cls.__init__ = init
    with contextlib.redirect_stdout(buf):
        exec(compile(torch03(S2S_TEST), "<cells>", "exec"), vars(g))
    return buf.getvalue(), g


def test_s2s_notebook_test_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(write_pairs(tmp_path))
    (ref_log, r), (got_log, t) = _s2s_test_cells(torch, tmp_path), _s2s_test_cells(tracegrad, tmp_path)
    assert "loss" in got_log and "Trimmed from" in got_log, got_log
    same_logs(ref_log, got_log, 2e-6)
    _compare(lambda T: _arr(*[(r if T is torch else t).__dict__[k] for k in (
        "encoder_outputs", "encoder_hidden", "all_decoder_outputs", "decoder_attn", "loss")]) +
        [np.array((r if T is torch else t).target_lengths)], tol=2e-5)


def _s2s_train(T, attn_model, clip, steps=3):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = program(T, torch03(S2S_DATA + S2S_MODELS + S2S_TRAIN), batch_size=3, clip=clip,
                    **_s2s_globals(T))
    # the notebook's "Configure models" cell at tiny sizes, dropout 0; Adam's eps 1e-6 (1e-8 in the
    # cell): a few gradient entries are float noise (4e-9, differing in the last bits between the
    # libraries) that eps=1e-8 would turn into steps differing by 2e-4
    encoder = init_uniform(T, g.EncoderRNN(g.input_lang.n_words, 8, 2, dropout=0.0), 1, 0.4)
    decoder = init_uniform(T, g.LuongAttnDecoderRNN(attn_model, 8, g.output_lang.n_words, 2, dropout=0.0), 2, 0.4)
    encoder_optimizer = T.optim.Adam(encoder.parameters(), lr=0.01, eps=1e-6)
    decoder_optimizer = T.optim.Adam(decoder.parameters(), lr=0.01 * 5.0, eps=1e-6)
    criterion = T.nn.CrossEntropyLoss()
    out = []
    for _ in range(steps):      # the training loop's body
        input_batches, input_lengths, target_batches, target_lengths = g.random_batch(3)
        loss, ec, dc = g.train(input_batches, input_lengths, target_batches, target_lengths, encoder, decoder,
                               encoder_optimizer, decoder_optimizer, criterion)
        out += [np.array(loss), np.array(float(ec)), np.array(float(dc))]
    assert isinstance(loss, float)
    return out + _grads(encoder) + _grads(decoder), _state(encoder) + _state(decoder)


@pytest.mark.parametrize("attn_model,clip", [("dot", 50.0), ("general", 0.5), ("concat", 0.5)])
def test_s2s_train_steps(attn_model, clip, tmp_path, monkeypatch):
    monkeypatch.chdir(write_pairs(tmp_path))
    ref, got = _s2s_train(torch, attn_model, clip), _s2s_train(tracegrad, attn_model, clip)
    _compare(lambda T: (ref if T is torch else got)[0], tol=3e-5)
    # the parameters after three Adam steps: a few decoder-embedding entries have float-noise
    # gradients (1e-9) whose Adam steps differ by up to 7e-5 (eps=1e-6 keeps it at that)
    _compare(lambda T: (ref if T is torch else got)[1], tol=2e-4)


def test_s2s_evaluate_fails_alike(tmp_path, monkeypatch):
    # ``evaluate`` as written: ``input_lengths = [len(input_seq)]`` counts characters, so a
    # sentence of several words packs a length beyond the padded time dimension (RuntimeError);
    # a one-word sentence runs until ``output_lang.index2word[ni]`` looks a dict up by a 0-d
    # tensor (hashed by identity: KeyError) -- ``Variable(..., volatile=True)`` accepted alike
    monkeypatch.chdir(write_pairs(tmp_path))

    def run(T, sentence):
        with contextlib.redirect_stdout(io.StringIO()):
            g = program(T, torch03(S2S_DATA + S2S_MODELS + S2S_TRAIN), batch_size=3, clip=1.0,
                        **_s2s_globals(T))
        names = g.evaluate.__globals__      # the notebook's "Configure models" globals
        names["encoder"] = init_uniform(T, g.EncoderRNN(g.input_lang.n_words, 8, 2, dropout=0.0), 1, 0.4)
        names["decoder"] = init_uniform(T, g.LuongAttnDecoderRNN("general", 8, g.output_lang.n_words, 2,
                                                                 dropout=0.0), 2, 0.4)
        g.evaluate(sentence)

    same_error(torch, tracegrad, lambda T: run(T, "je suis grand ."))
    msgs = same_error(torch, tracegrad, lambda T: run(T, "je"))
    assert all(m.startswith("tensor(") for m in msgs), msgs


# ---------------------------------------------------------------- char-rnn generation

_TEXT = "What is the matter? Where is the tall ship! " * 3


class _NumpyMultinomial(numpy_draws):
    """``torch`` for ``generate``: ``multinomial(weights, 1)`` draws from a seeded NumPy stream."""

    def multinomial(self, weights, n):
        p = np.asarray(weights.numpy(), np.float64)
        return self._T.tensor([self._rs.choice(p.size, n, p=p / p.sum())[0]])


def _char_rnn(T, src, chunk_len=12, steps=3):
    g = program(T, src)
    names = g.train.__globals__      # train.py's top level
    names.update(file=_TEXT, file_len=len(_TEXT), args=types.SimpleNamespace(chunk_len=chunk_len),
                 criterion=T.nn.CrossEntropyLoss())
    decoder = names["decoder"] = init_uniform(T, g.RNN(g.n_characters, 8, g.n_characters, 2), 3, 0.4)
    names["decoder_optimizer"] = T.optim.Adam(decoder.parameters(), lr=0.01)
    random.seed(1)
    losses = [g.train(*g.random_training_set(chunk_len)) for _ in range(steps)]
    assert all(isinstance(x, float) for x in losses)
    names["torch"] = _NumpyMultinomial(T, 5)
    text = g.generate(decoder, "Wh", 20)
    return text, [np.array(losses)] + _grads(decoder) + _state(decoder)


def test_char_rnn_train_as_written_fails_alike():
    msgs = same_error(torch, tracegrad, lambda T: _char_rnn(T, CHAR_RNN))
    assert all("Expected input batch_size (1) to match target batch_size (0)" in m for m in msgs), msgs


def test_char_rnn_trains_and_generates():
    src = CHAR_RNN.replace("criterion(output, target[c])", "criterion(output, target[c].view(1))") \
        .replace(".data[0]", ".item()")
    (ref_text, ref), (got_text, got) = _char_rnn(torch, src), _char_rnn(tracegrad, src)
    assert got_text == ref_text and got_text.startswith("Wh") and len(got_text) == 22, (ref_text, got_text)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)
