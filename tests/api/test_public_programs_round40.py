"""A fortieth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, SeanNaren/deepspeech.pytorch (DeepSpeech2, Amodei et al. 2016):

- ``deepspeech_pytorch/model.py`` (at d9790d9): ``SequenceWise`` (a ``view`` to ``(T*N, H)``
  around ``BatchNorm1d``/``Linear``), ``MaskConv`` (a ``torch.BoolTensor(x.size()).fill_(0)``
  mask whose ``mask[i].narrow(2, ...)`` views are filled in place, then ``masked_fill``),
  ``InferenceBatchSoftmax``, ``BatchRNN`` (``nn.utils.rnn.pack_padded_sequence`` of int32
  lengths, a bidirectional LSTM or GRU on the ``PackedSequence``, ``pad_packed_sequence``, the
  two directions summed through ``view(T, N, 2, -1).sum(2)``), ``Lookahead`` (``F.pad`` and a
  depthwise ``Conv1d``), ``DeepSpeech`` (two ``Conv2d``/``BatchNorm2d``/``Hardtanh(0, 20,
  inplace=True)`` blocks, ``get_seq_lens``' integer arithmetic on an int32 tensor,
  ``CTCLoss(blank=..., reduction='sum', zero_infinity=True)`` of ``log_softmax`` outputs and
  concatenated targets, ``configure_optimizers``' ``AdamW``/nesterov ``SGD`` and
  ``ExponentialLR``), and ``validation_step`` decoding with ``torch.cuda.amp.autocast(enabled=
  False)``.
- ``deepspeech_pytorch/decoder.py`` (at d9790d9): ``GreedyDecoder`` (``torch.max(probs, 2)``,
  ``.item()`` per step, repetitions and blanks removed, offsets as an int tensor).
- ``deepspeech_pytorch/loader/data_loader.py`` (at 00989e6): ``_collate_fn`` (utterances sorted
  by length, zero-padded with ``narrow(...).copy_``, ``input_percentages``, ``IntTensor`` target
  sizes, targets concatenated).

Changes, the same on both sides: ``pl.LightningModule`` is ``nn.Module`` with the two methods the
code calls (``save_hyperparameters``, ``log``), the Lightning trainer's loop is written out
(zero_grad, ``training_step``, backward, ``clip_grad_norm_`` with the config's ``max_norm``,
step; the scheduler per epoch), ``OmegaConf.get_type`` is ``type`` of small config dataclasses,
``six.moves.xrange`` is ``range``, the WER/CER metric objects (torchmetrics, Levenshtein) are left
out (the decoded strings and offsets are logged instead), sizes are tiny (9 frequency bins, 3
utterances of 7 to 12 frames, hidden width 6) while the convolutions keep their 32 channels and
kernels, parameters are overwritten from numpy after construction, and the spectrograms and
transcripts come from a seeded numpy stream.
"""
import math
from dataclasses import dataclass
from enum import Enum
from types import SimpleNamespace
from typing import List, Union

import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")

LABELS = "_'ABCDE "


def _configs(nn):
    # deepspeech_pytorch/configs/train_config.py, the fields model.py reads
    class RNNType(Enum):
        lstm = nn.LSTM
        rnn = nn.RNN
        gru = nn.GRU

    @dataclass
    class SpectConfig:
        sample_rate: int = 16   # window of 16 samples: 9 frequency bins
        window_size: float = 1.0

    @dataclass
    class BiDirectionalConfig:
        rnn_type: RNNType = RNNType.lstm
        hidden_size: int = 6
        hidden_layers: int = 2

    @dataclass
    class UniDirectionalConfig(BiDirectionalConfig):
        lookahead_context: int = 3

    @dataclass
    class AdamConfig:
        learning_rate: float = 3e-3
        learning_anneal: float = 0.9
        weight_decay: float = 1e-5
        # 1e-8 in the repository: Adam's first steps scale a gradient's rounding by about lr/eps
        # where |g| <~ eps, and this conv stack has weights whose gradient cancels to 1e-8..1e-6
        # (kernel taps that see mostly padding; float32 sums of ~0.05 terms, different on every
        # CPU kernel by ~5e-8): at eps 1e-3 the rounding stays rounding
        eps: float = 1e-3
        betas: tuple = (0.9, 0.999)
        max_norm: float = 400

    @dataclass
    class SGDConfig:
        learning_rate: float = 3e-2
        learning_anneal: float = 0.9
        weight_decay: float = 1e-5
        momentum: float = 0.9
        max_norm: float = 400

    return SimpleNamespace(**{c.__name__: c for c in (
        RNNType, SpectConfig, BiDirectionalConfig, UniDirectionalConfig, AdamConfig, SGDConfig)})


def _deepspeech(torch):
    nn = torch.nn
    F = torch.nn.functional
    autocast = torch.cuda.amp.autocast
    cfg = _configs(nn)
    SpectConfig, BiDirectionalConfig, UniDirectionalConfig = (
        cfg.SpectConfig, cfg.BiDirectionalConfig, cfg.UniDirectionalConfig)
    AdamConfig, SGDConfig = cfg.AdamConfig, cfg.SGDConfig
    OmegaConf = SimpleNamespace(get_type=type)
    xrange = range

    class LightningModule(nn.Module):
        # the two pl.LightningModule methods model.py calls
        def save_hyperparameters(self):
            pass

        def log(self, name, value, **kwargs):
            self.logged[name] = value

        @property
        def device(self):
            return next(self.parameters()).device

    pl = SimpleNamespace(LightningModule=LightningModule)
    CTCLoss = nn.CTCLoss

    # ---- deepspeech_pytorch/decoder.py ----
    class Decoder(object):
        def __init__(self, labels, blank_index=0):
            self.labels = labels
            self.int_to_char = dict([(i, c) for (i, c) in enumerate(labels)])
            self.blank_index = blank_index
            space_index = len(labels)  # To prevent errors in decode, we add an out of bounds index for the space
            if ' ' in labels:
                space_index = labels.index(' ')
            self.space_index = space_index

        def decode(self, probs, sizes=None):
            raise NotImplementedError

    class GreedyDecoder(Decoder):
        def __init__(self, labels, blank_index=0):
            super(GreedyDecoder, self).__init__(labels, blank_index)

        def convert_to_strings(self,
                               sequences,
                               sizes=None,
                               remove_repetitions=False,
                               return_offsets=False):
            """Given a list of numeric sequences, returns the corresponding strings"""
            strings = []
            offsets = [] if return_offsets else None
            for x in xrange(len(sequences)):
                seq_len = sizes[x] if sizes is not None else len(sequences[x])
                string, string_offsets = self.process_string(sequences[x], seq_len, remove_repetitions)
                strings.append([string])  # We only return one path
                if return_offsets:
                    offsets.append([string_offsets])
            if return_offsets:
                return strings, offsets
            else:
                return strings

        def process_string(self,
                           sequence,
                           size,
                           remove_repetitions=False):
            string = ''
            offsets = []
            for i in range(size):
                char = self.int_to_char[sequence[i].item()]
                if char != self.int_to_char[self.blank_index]:
                    # if this char is a repetition and remove_repetitions=true, then skip
                    if remove_repetitions and i != 0 and char == self.int_to_char[sequence[i - 1].item()]:
                        pass
                    elif char == self.labels[self.space_index]:
                        string += ' '
                        offsets.append(i)
                    else:
                        string = string + char
                        offsets.append(i)
            return string, torch.tensor(offsets, dtype=torch.int)

        def decode(self, probs, sizes=None):
            _, max_probs = torch.max(probs, 2)
            strings, offsets = self.convert_to_strings(max_probs.view(max_probs.size(0), max_probs.size(1)),
                                                       sizes,
                                                       remove_repetitions=True,
                                                       return_offsets=True)
            return strings, offsets

    # ---- deepspeech_pytorch/model.py ----
    class SequenceWise(nn.Module):
        def __init__(self, module):
            """
            Collapses input of dim T*N*H to (T*N)*H, and applies to a module.
            Allows handling of variable sequence lengths and minibatch sizes.
            :param module: Module to apply input to.
            """
            super(SequenceWise, self).__init__()
            self.module = module

        def forward(self, x):
            t, n = x.size(0), x.size(1)
            x = x.view(t * n, -1)
            x = self.module(x)
            x = x.view(t, n, -1)
            return x

        def __repr__(self):
            tmpstr = self.__class__.__name__ + ' (\n'
            tmpstr += self.module.__repr__()
            tmpstr += ')'
            return tmpstr

    class MaskConv(nn.Module):
        def __init__(self, seq_module):
            super(MaskConv, self).__init__()
            self.seq_module = seq_module

        def forward(self, x, lengths):
            for module in self.seq_module:
                x = module(x)
                mask = torch.BoolTensor(x.size()).fill_(0)
                if x.is_cuda:
                    mask = mask.cuda()
                for i, length in enumerate(lengths):
                    length = length.item()
                    if (mask[i].size(2) - length) > 0:
                        mask[i].narrow(2, length, mask[i].size(2) - length).fill_(1)
                x = x.masked_fill(mask, 0)
            return x, lengths

    class InferenceBatchSoftmax(nn.Module):
        def forward(self, input_):
            if not self.training:
                return F.softmax(input_, dim=-1)
            else:
                return input_

    class BatchRNN(nn.Module):
        def __init__(self, input_size, hidden_size, rnn_type=nn.LSTM, bidirectional=False, batch_norm=True):
            super(BatchRNN, self).__init__()
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.bidirectional = bidirectional
            self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
            self.rnn = rnn_type(input_size=input_size, hidden_size=hidden_size,
                                bidirectional=bidirectional, bias=True)
            self.num_directions = 2 if bidirectional else 1

        def flatten_parameters(self):
            self.rnn.flatten_parameters()

        def forward(self, x, output_lengths):
            if self.batch_norm is not None:
                x = self.batch_norm(x)
            x = nn.utils.rnn.pack_padded_sequence(x, output_lengths)
            x, h = self.rnn(x)
            x, _ = nn.utils.rnn.pad_packed_sequence(x)
            if self.bidirectional:
                x = x.view(x.size(0), x.size(1), 2, -1).sum(2).view(x.size(0), x.size(1), -1)  # (TxNxH*2) -> (TxNxH) by sum
            return x

    class Lookahead(nn.Module):
        # Wang et al 2016 - Lookahead Convolution Layer for Unidirectional Recurrent Neural Networks
        # input shape - sequence, batch, feature - TxNxH
        # output shape - same as input
        def __init__(self, n_features, context):
            super(Lookahead, self).__init__()
            assert context > 0
            self.context = context
            self.n_features = n_features
            self.pad = (0, self.context - 1)
            self.conv = nn.Conv1d(
                self.n_features,
                self.n_features,
                kernel_size=self.context,
                stride=1,
                groups=self.n_features,
                padding=0,
                bias=False
            )

        def forward(self, x):
            x = x.transpose(0, 1).transpose(1, 2)
            x = F.pad(x, pad=self.pad, value=0)
            x = self.conv(x)
            x = x.transpose(1, 2).transpose(0, 1).contiguous()
            return x

        def __repr__(self):
            return self.__class__.__name__ + '(' \
                   + 'n_features=' + str(self.n_features) \
                   + ', context=' + str(self.context) + ')'

    class DeepSpeech(pl.LightningModule):
        def __init__(self,
                     labels: List,
                     model_cfg: Union[UniDirectionalConfig, BiDirectionalConfig],
                     precision: int,
                     optim_cfg: Union[AdamConfig, SGDConfig],
                     spect_cfg: SpectConfig
                     ):
            super().__init__()
            self.save_hyperparameters()
            self.model_cfg = model_cfg
            self.precision = precision
            self.optim_cfg = optim_cfg
            self.spect_cfg = spect_cfg
            self.bidirectional = True if OmegaConf.get_type(model_cfg) is BiDirectionalConfig else False

            self.labels = labels
            num_classes = len(self.labels)

            self.conv = MaskConv(nn.Sequential(
                nn.Conv2d(1, 32, kernel_size=(41, 11), stride=(2, 2), padding=(20, 5)),
                nn.BatchNorm2d(32),
                nn.Hardtanh(0, 20, inplace=True),
                nn.Conv2d(32, 32, kernel_size=(21, 11), stride=(2, 1), padding=(10, 5)),
                nn.BatchNorm2d(32),
                nn.Hardtanh(0, 20, inplace=True)
            ))
            # Based on above convolutions and spectrogram size using conv formula (W - F + 2P)/ S+1
            rnn_input_size = int(math.floor((self.spect_cfg.sample_rate * self.spect_cfg.window_size) / 2) + 1)
            rnn_input_size = int(math.floor(rnn_input_size + 2 * 20 - 41) / 2 + 1)
            rnn_input_size = int(math.floor(rnn_input_size + 2 * 10 - 21) / 2 + 1)
            rnn_input_size *= 32

            self.rnns = nn.Sequential(
                BatchRNN(
                    input_size=rnn_input_size,
                    hidden_size=self.model_cfg.hidden_size,
                    rnn_type=self.model_cfg.rnn_type.value,
                    bidirectional=self.bidirectional,
                    batch_norm=False
                ),
                *(
                    BatchRNN(
                        input_size=self.model_cfg.hidden_size,
                        hidden_size=self.model_cfg.hidden_size,
                        rnn_type=self.model_cfg.rnn_type.value,
                        bidirectional=self.bidirectional
                    ) for x in range(self.model_cfg.hidden_layers - 1)
                )
            )

            self.lookahead = nn.Sequential(
                # consider adding batch norm?
                Lookahead(self.model_cfg.hidden_size, context=self.model_cfg.lookahead_context),
                nn.Hardtanh(0, 20, inplace=True)
            ) if not self.bidirectional else None

            fully_connected = nn.Sequential(
                nn.BatchNorm1d(self.model_cfg.hidden_size),
                nn.Linear(self.model_cfg.hidden_size, num_classes, bias=False)
            )
            self.fc = nn.Sequential(
                SequenceWise(fully_connected),
            )
            self.inference_softmax = InferenceBatchSoftmax()
            self.criterion = CTCLoss(blank=self.labels.index('_'), reduction='sum', zero_infinity=True)
            self.evaluation_decoder = GreedyDecoder(self.labels)  # Decoder used for validation
            self.logged = {}

        def forward(self, x, lengths):
            lengths = lengths.cpu().int()
            output_lengths = self.get_seq_lens(lengths)
            x, _ = self.conv(x, output_lengths)

            sizes = x.size()
            x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])  # Collapse feature dimension
            x = x.transpose(1, 2).transpose(0, 1).contiguous()  # TxNxH

            for rnn in self.rnns:
                x = rnn(x, output_lengths)

            if not self.bidirectional:  # no need for lookahead layer in bidirectional
                x = self.lookahead(x)

            x = self.fc(x)
            x = x.transpose(0, 1)
            # identity in training mode, softmax in eval mode
            x = self.inference_softmax(x)
            return x, output_lengths

        def training_step(self, batch, batch_idx):
            inputs, targets, input_percentages, target_sizes = batch
            input_sizes = input_percentages.mul_(int(inputs.size(3))).int()
            out, output_sizes = self(inputs, input_sizes)
            out = out.transpose(0, 1)  # TxNxH
            out = out.log_softmax(-1)

            loss = self.criterion(out, targets, output_sizes, target_sizes)
            return loss

        def validation_step(self, batch, batch_idx):
            inputs, targets, input_percentages, target_sizes = batch
            input_sizes = input_percentages.mul_(int(inputs.size(3))).int()
            inputs = inputs.to(self.device)
            with autocast(enabled=self.precision == 16):
                out, output_sizes = self(inputs, input_sizes)
            decoded_output, _ = self.evaluation_decoder.decode(out, output_sizes)
            # (the WER/CER metric objects are left out: the decoder's output is returned)
            return out, output_sizes, decoded_output, _

        def configure_optimizers(self):
            if OmegaConf.get_type(self.optim_cfg) is SGDConfig:
                optimizer = torch.optim.SGD(
                    params=self.parameters(),
                    lr=self.optim_cfg.learning_rate,
                    momentum=self.optim_cfg.momentum,
                    nesterov=True,
                    weight_decay=self.optim_cfg.weight_decay
                )
            elif OmegaConf.get_type(self.optim_cfg) is AdamConfig:
                optimizer = torch.optim.AdamW(
                    params=self.parameters(),
                    lr=self.optim_cfg.learning_rate,
                    betas=self.optim_cfg.betas,
                    eps=self.optim_cfg.eps,
                    weight_decay=self.optim_cfg.weight_decay
                )
            else:
                raise ValueError("Optimizer has not been specified correctly.")

            scheduler = torch.optim.lr_scheduler.ExponentialLR(
                optimizer=optimizer,
                gamma=self.optim_cfg.learning_anneal
            )
            return [optimizer], [scheduler]

        def get_seq_lens(self, input_length):
            seq_len = input_length
            for m in self.conv.modules():
                if type(m) == nn.modules.conv.Conv2d:
                    seq_len = ((seq_len + 2 * m.padding[1] - m.dilation[1] * (m.kernel_size[1] - 1) - 1) // m.stride[1] + 1)
            return seq_len.int()

    # ---- deepspeech_pytorch/loader/data_loader.py ----
    def _collate_fn(batch):
        def func(p):
            return p[0].size(1)

        batch = sorted(batch, key=lambda sample: sample[0].size(1), reverse=True)
        longest_sample = max(batch, key=func)[0]
        freq_size = longest_sample.size(0)
        minibatch_size = len(batch)
        max_seqlength = longest_sample.size(1)
        inputs = torch.zeros(minibatch_size, 1, freq_size, max_seqlength)
        input_percentages = torch.FloatTensor(minibatch_size)
        target_sizes = torch.IntTensor(minibatch_size)
        targets = []
        for x in range(minibatch_size):
            sample = batch[x]
            tensor = sample[0]
            target = sample[1]
            seq_length = tensor.size(1)
            inputs[x][0].narrow(1, 0, seq_length).copy_(tensor)
            input_percentages[x] = seq_length / float(max_seqlength)
            target_sizes[x] = len(target)
            targets.extend(target)
        targets = torch.tensor(targets, dtype=torch.long)
        return inputs, targets, input_percentages, target_sizes

    return SimpleNamespace(DeepSpeech=DeepSpeech, collate=_collate_fn, cfg=cfg)


def _dataset(torch, seed, lengths, transcripts):
    # (spectrogram (9 x T), transcript as label indices) pairs, unsorted like a dataset's order
    rs = np.random.RandomState(seed)
    out = []
    for t, text in zip(lengths, transcripts):
        spect = np.abs(rs.standard_normal((9, t))).astype(np.float32)
        out.append((torch.tensor(spect), [LABELS.index(c) for c in text]))
    return out


def _train(torch, log, model, batches, epochs):
    (optimizer,), (scheduler,) = model.configure_optimizers()
    for epoch in range(epochs):
        model.train()
        for i, batch in enumerate(batches):
            inputs, targets, input_percentages, target_sizes = batch
            # the collate's percentages are scaled in place by training_step: a fresh copy each step
            batch = (inputs, targets, input_percentages.clone(), target_sizes)
            optimizer.zero_grad()
            loss = model.training_step(batch, i)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=model.optim_cfg.max_norm)
            optimizer.step()
            print(f"epoch {epoch} batch {i} loss {loss.item():.4f} norm {norm.item():.4f}")
            log(f"loss{epoch}.{i}", loss)
            log(f"norm{epoch}.{i}", norm)
        scheduler.step()
        log(f"lr{epoch}", scheduler.get_last_lr())
    log("grad_fn", type(loss.grad_fn).__name__)
    for name, p in model.named_parameters():
        log("param " + name, p)
        log("grad " + name, p.grad)
    for name, b in model.named_buffers():
        log("buffer " + name, b)


def _validate(torch, log, model, batch):
    model.eval()
    with torch.no_grad():
        inputs, targets, input_percentages, target_sizes = batch
        out, output_sizes, decoded, offsets = model.validation_step(
            (inputs, targets, input_percentages.clone(), target_sizes), 0)
    log("eval out", out)
    log("eval output_sizes", output_sizes)
    log("eval decoded", decoded)
    for j, (o,) in enumerate(offsets):
        log(f"eval offsets{j}", o)
    print("decoded:", decoded)
    # the few training steps leave blank on top everywhere: the decoder on seeded probabilities
    # too (repetitions, blanks and the space label all occur)
    rs = np.random.RandomState(7)
    probs = torch.tensor(rs.dirichlet(np.ones(len(LABELS)) * 0.3, size=(3, 6)).astype(np.float32))
    strings, offsets = model.evaluation_decoder.decode(probs, output_sizes)
    log("seeded decoded", strings)
    for j, (o,) in enumerate(offsets):
        log(f"seeded offsets{j}", o)
    print("seeded decoded:", strings)


def _program_bidirectional(mod, log):
    torch = mod
    ds = _deepspeech(torch)
    cfg = ds.cfg
    model = ds.DeepSpeech(list(LABELS), cfg.BiDirectionalConfig(), 32, cfg.AdamConfig(),
                          cfg.SpectConfig())
    init_params(torch, model, 3, scale=0.3)
    print(model.rnns)
    print(model.fc)

    data = _dataset(torch, 0, [10, 12, 7], ["ABA", "CAB E", "DE"])
    batch = ds.collate(data)
    inputs, targets, input_percentages, target_sizes = batch
    log("collate inputs", inputs)
    log("collate targets", targets)
    log("collate input_percentages", input_percentages)
    log("collate target_sizes", target_sizes)
    log("seq lens", model.get_seq_lens(input_percentages.mul(inputs.size(3)).int()))

    # the packed sequence BatchRNN builds, observed on the conv features
    with torch.no_grad():
        lengths = model.get_seq_lens(input_percentages.mul(inputs.size(3)).int())
        x, _ = model.conv(inputs, lengths)
        log("masked conv", x)
        x = x.view(x.size(0), x.size(1) * x.size(2), x.size(3)).transpose(1, 2).transpose(0, 1)
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths)
        log("packed.data", packed.data)
        log("packed.batch_sizes", packed.batch_sizes)
        log("packed.sorted_indices", packed.sorted_indices)
    model.train()

    second = ds.collate(_dataset(torch, 1, [8, 11, 9], ["BB", "A CD", "EC"]))
    _train(torch, log, model, [batch, second], epochs=3)
    _validate(torch, log, model, batch)


def _program_unidirectional(mod, log):
    torch = mod
    ds = _deepspeech(torch)
    cfg = ds.cfg
    model = ds.DeepSpeech(list(LABELS), cfg.UniDirectionalConfig(rnn_type=cfg.RNNType.gru), 32,
                          cfg.SGDConfig(), cfg.SpectConfig())
    init_params(torch, model, 4, scale=0.3)
    print(model.lookahead)
    print(model.rnns[1].batch_norm)

    batch = ds.collate(_dataset(torch, 2, [9, 12, 11], ["A'B", "DCE", "EAD"]))
    _train(torch, log, model, [batch], epochs=3)
    _validate(torch, log, model, batch)


def test_deepspeech_bidirectional_lstm_ctc_adamw():
    run_both(_program_bidirectional)


def test_deepspeech_unidirectional_gru_lookahead_sgd():
    run_both(_program_unidirectional)
