"""Bad-input parity, round 24 (optimizers, lr schedulers, torch.utils.data, layer constructors, forward
with the wrong input, RNN hidden states, EmbeddingBag, adaptive pools, containers, nn.init,
swa_utils, losses): a probe over ~1,000 wrong calls across those areas left these differences from
torch 2.13, fixed here:

- a batched ``LSTM`` took a hidden state that is not a pair: a ``(2, L, B, H)`` tensor was split
  into ``(h, c)`` (torch's kernel parser: TypeError) and three states were unpacking's ValueError
  (torch: RuntimeError "lstm expects two hidden states"); torch drops the extra entries where it
  rebuilds the pair (unbatched input, an unsorted packed batch), and so does tracegrad now;
- ``EmbeddingBag`` in 'sum' or 'mean' mode summed a bag whose offset goes back (``[0, 2, 1]``) as
  empty (torch's kernels: RuntimeError, an internal assert; its 'max' kernel takes them). Without
  ``include_last_offset`` torch raises it only on its multi-threaded path: on one thread, as the
  suite runs it, its 'sum' is uninitialised memory, so the table checks the other form and
  tracegrad's refusal of the first is tested on its own;
- a convolution with an empty kernel dim (``Conv2d(2, 2, 0)``, a ``(C, C, 0, 3)`` weight) and the
  adaptive average pools of an input with an empty pooled dim raised the generic "cannot run on
  inputs of shapes" text (now torch's "kernel size should be greater than zero" and "Expected input
  to have non-zero size for non-batch dimensions"); a 1-D or 2-D conv weight was read as a "conv0d"
  (torch: "weight should have at least three dimensions");
- ``adaptive_max_pool2d`` refused an unbatched input with 0 channels (torch's check skips dim 0:
  an empty result);
- ``F.threshold``/``nn.Threshold`` with a ``threshold`` or ``value`` that is not a number raised
  Python's "'<=' not supported" text or ``full_like``'s (torch's parser: TypeError naming the
  argument), and a complex one NotImplementedError (RuntimeError); ``F.glu`` with a dim out of range
  was Python's "tuple index out of range" and a str or bool dim Python's TypeError text;
- ``ModuleList(3)``/``extend(3)`` and ``ModuleDict(3)``/``update(3)``, or a ModuleDict update element
  that is no pair, raised Python's "'int' object is not iterable"/"has no len()" (torch's words now).

Found and left alone: ``pack_padded_sequence`` with a length above the time dim is refused
(RuntimeError; torch packs it, reading past the input); a conv with an empty kernel dim *and* an
empty input gives torch's empty result (0 channels) or its internal IndexError (batch 0), tracegrad
the kernel-size RuntimeError; ``Adafactor(lr='a')`` names a different comparison than torch (both
TypeError from Python's comparison, as torch's); ``default_collate``'s message names "numpy arrays"
(torch's words: round 22). Each call runs under torch (the oracle) and tracegrad: the same exception
class (or none), no text of the layers below tracegrad; ``_ok`` calls are ones torch accepts.
"""
import importlib

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import table_tests

torch = pytest.importorskip("torch")


def _m(T, name):
    return importlib.import_module(T.__name__ + name)


def _params(T):
    return [T.nn.Parameter(T.zeros(2))]


def _sgd(T):
    return T.optim.SGD(_params(T), lr=0.1)


def _lstm(T, hx, x=None):
    return T.nn.LSTM(2, 3)(T.zeros(4, 1, 2) if x is None else x, hx)


def _bag(T, mode, offsets, last=False):
    bag = T.nn.EmbeddingBag(4, 2, mode=mode, include_last_offset=last)
    return bag(T.tensor([1, 2, 3]), T.tensor(offsets))


def _packed(T, lengths):
    return _m(T, ".nn.utils.rnn").pack_sequence([T.zeros(n, 2) for n in lengths], enforce_sorted=False)


class _DS:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i


CASES = {
    # LSTM hidden states (fixed)
    "LSTM(hx=(h, c, extra))": lambda T: _lstm(T, (T.zeros(1, 1, 3),) * 3),
    "LSTM(hx=a (2, L, B, H) tensor)": lambda T: _lstm(T, T.zeros(2, 1, 1, 3)),
    "LSTM(unbatched, hx=(h, c, extra))_ok": lambda T: _lstm(T, (T.zeros(1, 3),) * 3, T.zeros(4, 2)),
    "LSTM(unsorted packed, hx=(h, c, extra))_ok": lambda T: _lstm(T, (T.zeros(1, 2, 3),) * 3, _packed(T, (2, 3))),
    "LSTM(hx=[h, c])_ok": lambda T: _lstm(T, [T.zeros(1, 1, 3), T.zeros(1, 1, 3)]),
    # EmbeddingBag offsets that go back (fixed)
    "EmbeddingBag(sum, last offset, [0, 2, 0])": lambda T: _bag(T, "sum", [0, 2, 0], last=True),
    "EmbeddingBag(mean, last offset, [0, 2, 1])": lambda T: _bag(T, "mean", [0, 2, 1], last=True),
    "EmbeddingBag(max, offsets [0, 2, 1])_ok": lambda T: _bag(T, "max", [0, 2, 1]),
    "EmbeddingBag(sum, offsets [0, 1, 1])_ok": lambda T: _bag(T, "sum", [0, 1, 1]),
    # empty kernels, conv weights of too few dims, adaptive pools of empty dims (fixed)
    "Conv2d(kernel_size=0)": lambda T: T.nn.Conv2d(2, 2, 0)(T.zeros(1, 2, 4, 4)),
    "Conv1d(kernel_size=0)": lambda T: T.nn.Conv1d(2, 2, 0)(T.zeros(1, 2, 4)),
    "ConvTranspose2d(kernel_size=0)": lambda T: T.nn.ConvTranspose2d(2, 2, 0)(T.zeros(1, 2, 4, 4)),
    "F.conv2d(weight (2, 2, 0, 3))": lambda T: T.nn.functional.conv2d(T.zeros(1, 2, 4, 4), T.zeros(2, 2, 0, 3)),
    "F.conv1d(2-D weight)": lambda T: T.nn.functional.conv1d(T.zeros(1, 2, 4), T.zeros(2, 2)),
    "AdaptiveAvgPool2d(2) of (1, 1, 0, 4)": lambda T: T.nn.AdaptiveAvgPool2d(2)(T.zeros(1, 1, 0, 4)),
    "AdaptiveAvgPool1d(2) of (1, 1, 0)": lambda T: T.nn.AdaptiveAvgPool1d(2)(T.zeros(1, 1, 0)),
    "AdaptiveAvgPool3d(2) of (1, 0, 3, 4, 4)": lambda T: T.nn.AdaptiveAvgPool3d(2)(T.zeros(1, 0, 3, 4, 4)),
    "AdaptiveAvgPool2d(2) of (1, 0, 3, 4)_ok": lambda T: T.nn.AdaptiveAvgPool2d(2)(T.zeros(1, 0, 3, 4)),
    "AdaptiveMaxPool2d(2) of (0, 3, 4)_ok": lambda T: T.nn.AdaptiveMaxPool2d(2)(T.zeros(0, 3, 4)),
    "AdaptiveMaxPool2d(2) of (1, 0, 3, 4)": lambda T: T.nn.AdaptiveMaxPool2d(2)(T.zeros(1, 0, 3, 4)),
    # threshold's numbers, glu's dim (fixed)
    "F.threshold(threshold='a')": lambda T: T.nn.functional.threshold(T.zeros(2), "a", 0.),
    "nn.Threshold(0., value=None)": lambda T: T.nn.Threshold(0., None)(T.zeros(2)),
    "F.threshold_(threshold=[1.])": lambda T: T.nn.functional.threshold_(T.zeros(2), [1.], 0.),
    "F.threshold(threshold=1j)": lambda T: T.nn.functional.threshold(T.zeros(2), 1j, 0.),
    "F.threshold(0-d tensors)_ok": lambda T: T.nn.functional.threshold(T.zeros(2), T.tensor(0.5), T.tensor(1.)),
    "F.glu(dim=5)": lambda T: T.nn.functional.glu(T.zeros(2, 2), 5),
    "F.glu(dim='a')": lambda T: T.nn.functional.glu(T.zeros(2, 2), "a"),
    "F.glu(dim=True)": lambda T: T.nn.functional.glu(T.zeros(2, 2), True),
    # containers (fixed)
    "ModuleList(3)": lambda T: T.nn.ModuleList(3),
    "ModuleList.extend(3)": lambda T: T.nn.ModuleList().extend(3),
    "ModuleDict(3)": lambda T: T.nn.ModuleDict(3),
    "ModuleDict([ReLU()])": lambda T: T.nn.ModuleDict([T.nn.ReLU()]),
    "ModuleDict([('a',)])": lambda T: T.nn.ModuleDict([("a",)]),
    "ModuleDict(zip)_ok": lambda T: T.nn.ModuleDict(zip(["a"], [T.nn.ReLU()])),
    # layer constructors and forwards the earlier rounds left out (already torch's)
    "MultiheadAttention(5, num_heads=2)": lambda T: T.nn.MultiheadAttention(5, 2),
    "LSTM(dropout=1.5)": lambda T: T.nn.LSTM(2, 3, dropout=1.5),
    "LSTM(num_layers=0)": lambda T: T.nn.LSTM(2, 3, num_layers=0),
    "GRU(proj_size=1)": lambda T: T.nn.GRU(2, 3, proj_size=1),
    "Linear(2, -1)": lambda T: T.nn.Linear(2, -1),
    "GroupNorm(3, 4)": lambda T: T.nn.GroupNorm(3, 4),
    "Embedding(4, 2, padding_idx=4)": lambda T: T.nn.Embedding(4, 2, padding_idx=4),
    "GRUCell(2, 3) on 5 features": lambda T: T.nn.GRUCell(2, 3)(T.zeros(1, 5)),
    "RNNCell(2, 3) with hx batch 1 for batch 2": lambda T: T.nn.RNNCell(2, 3)(T.zeros(2, 2), T.zeros(1, 3)),
    "PixelShuffle(2) of 3 channels": lambda T: T.nn.PixelShuffle(2)(T.zeros(1, 3, 2, 2)),
    # nn.init, swa_utils, losses
    "init.xavier_uniform_(1-D)": lambda T: T.nn.init.xavier_uniform_(T.zeros(3)),
    "init.kaiming_normal_(mode='x')": lambda T: T.nn.init.kaiming_normal_(T.zeros(3, 3), mode="x"),
    "init.calculate_gain('x')": lambda T: T.nn.init.calculate_gain("x"),
    "init.dirac_(2-D)": lambda T: T.nn.init.dirac_(T.zeros(3, 3)),
    "SWALR(anneal_strategy='x')": lambda T: _m(T, ".optim.swa_utils").SWALR(_sgd(T), 0.1, anneal_strategy="x"),
    "SWALR(anneal_epochs=-1)": lambda T: _m(T, ".optim.swa_utils").SWALR(_sgd(T), 0.1, anneal_epochs=-1),
    "HuberLoss(delta=0)": lambda T: T.nn.HuberLoss(delta=0.)(T.zeros(2), T.zeros(2)),
    "GaussianNLLLoss(var < 0)": lambda T: T.nn.GaussianNLLLoss()(T.zeros(2), T.zeros(2), -T.ones(2)),
    "CosineEmbeddingLoss(2-D target)": lambda T: T.nn.CosineEmbeddingLoss()(T.zeros(2, 3), T.zeros(2, 3),
                                                                            T.ones(2, 1)),
    # optimizers, schedulers, data the earlier rounds left out (already torch's)
    "Adam(amsgrad=True, fused=True) on CPU_ok": lambda T: T.optim.Adam(_params(T), amsgrad=True, fused=True),
    "SGD(nesterov=True, momentum=0)": lambda T: T.optim.SGD(_params(T), lr=0.1, nesterov=True),
    "OneCycleLR(total_steps=0)": lambda T: T.optim.lr_scheduler.OneCycleLR(
        T.optim.SGD(_params(T), lr=0.1, momentum=0.9), 1., total_steps=0),
    "DataLoader(batch_size=-1)": lambda T: _m(T, ".utils.data").DataLoader(_DS(), batch_size=-1),
    "DataLoader(batch_sampler, shuffle=True)": lambda T: _m(T, ".utils.data").DataLoader(
        _DS(), batch_sampler=[[0, 1]], shuffle=True),
}

# both libraries' messages hold these words (the API or the argument)
GIST = {
    "LSTM(hx=(h, c, extra))": "lstm expects two hidden states",
    "Conv2d(kernel_size=0)": "kernel size should be greater than zero",
    "ConvTranspose2d(kernel_size=0)": "kernel size should be greater than zero",
    "F.conv1d(2-D weight)": "weight should have at least three dimensions",
    "AdaptiveAvgPool2d(2) of (1, 1, 0, 4)": "adaptive_avg_pool2d(): Expected input to have non-zero size for "
                                            "non-batch dimensions",
    "AdaptiveAvgPool3d(2) of (1, 0, 3, 4, 4)": "non-zero size for non-batch dimensions, but input has sizes "
                                               "[1, 0, 3, 4, 4] with dimension 1 being empty",
    "F.threshold(threshold='a')": "threshold(): argument 'threshold' (position 2) must be Number, not str",
    "nn.Threshold(0., value=None)": "argument 'value' (position 3) must be Number, not NoneType",
    "F.threshold(threshold=1j)": "value cannot be converted to type float without overflow",
    "F.glu(dim=5)": "Dimension out of range (expected to be in range of [-2, 1], but got 5)",
    "F.glu(dim='a')": "glu(): argument 'dim' (position 2) must be int, not str",
    "ModuleList(3)": "ModuleList.extend should be called with an iterable, but got int",
    "ModuleDict(3)": "ModuleDict.update should be called with an iterable of key/value pairs, but got int",
    "ModuleDict([ReLU()])": "ModuleDict update sequence element #0 should be Iterable",
    "MultiheadAttention(5, num_heads=2)": "embed_dim must be divisible by num_heads",
    "LSTM(num_layers=0)": "num_layers must be greater than zero",
    "Embedding(4, 2, padding_idx=4)": "Padding_idx must be within num_embeddings",
    "DataLoader(batch_sampler, shuffle=True)": "batch_sampler option is mutually exclusive",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_offsets_that_go_back_name_the_offsets(mode):
    """A bag whose offset goes back is refused, naming the two offsets (torch: an internal
    assert's 'Expected i < index_size' on its multi-threaded path, uninitialised memory on one
    thread)."""
    with pytest.raises(RuntimeError, match=r"offsets must be non-decreasing .*offsets\[2\] = 1 < offsets\[1\] = 2"):
        _bag(tracegrad, mode, [0, 2, 1])


def test_lstm_drops_extra_states_where_torch_rebuilds_the_pair():
    """An unbatched input's ``(h, c, extra)`` runs as ``(h, c)``: the same output as the pair."""
    tracegrad.manual_seed(0)
    lstm = tracegrad.nn.LSTM(2, 3)
    x, h = tracegrad.ones(4, 2), tracegrad.full((1, 3), 0.5)
    out3, (h3, c3) = lstm(x, (h, h, tracegrad.ones(1, 3)))
    out2, (h2, c2) = lstm(x, (h, h))
    np.testing.assert_array_equal(out3.detach().numpy(), out2.detach().numpy())
    np.testing.assert_array_equal(c3.detach().numpy(), c2.detach().numpy())


@pytest.mark.parametrize("dim", [np.int64(1), -1, "tensor"])
def test_glu_dim_forms_match_torch(dim):
    """A NumPy integer, a negative int and a 0-d integer tensor are dims for torch's parser: the
    same values as torch."""
    got = []
    for T in (torch, tracegrad):
        d = T.tensor(1) if isinstance(dim, str) else dim
        got.append(T.nn.functional.glu(T.arange(8.).reshape(2, 4), d).numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)


def test_threshold_takes_0d_tensors_and_numpy_numbers_as_torch():
    """0-d tensors and NumPy scalars as ``threshold``/``value`` give torch's values."""
    got = []
    for T in (torch, tracegrad):
        x = T.tensor([0., 1., 2., 3.])
        got.append((T.nn.functional.threshold(x, T.tensor(1.5), T.tensor(-1.)).numpy(),
                    T.nn.functional.threshold(x, np.float32(0.5), np.int64(7)).numpy()))
    for want, have in zip(*got):
        np.testing.assert_array_equal(have, want)


def test_adaptive_max_pool_of_zero_channels_is_empty_as_torch():
    """An unbatched ``(0, H, W)`` input pools to ``(0, *output_size)`` (torch skips dim 0)."""
    out = tracegrad.nn.functional.adaptive_max_pool2d(tracegrad.zeros(0, 3, 4), 2, return_indices=True)
    assert [tuple(t.shape) for t in out] == [(0, 2, 2), (0, 2, 2)]
    assert out[1].dtype is tracegrad.int64
