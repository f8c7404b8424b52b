"""Round 36's keon/seq2seq program (``model.py``, ``train.py``), in its own file for the time limit;
the round's notes are in ``test_public_programs_round36.py``.
"""
import math
import os
import random
import tempfile

import numpy as np
import pytest
from parity import init_params, run_both, seeded

torch = pytest.importorskip("torch")


# ---- keon/seq2seq -------------------------------------------------------------------------------
def _seq2seq_classes(torch):
    nn, F, Variable = torch.nn, torch.nn.functional, torch.autograd.Variable

    class Encoder(nn.Module):
        def __init__(self, input_size, embed_size, hidden_size,
                     n_layers=1, dropout=0.5):
            super(Encoder, self).__init__()
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.embed_size = embed_size
            self.embed = nn.Embedding(input_size, embed_size)
            self.gru = nn.GRU(embed_size, hidden_size, n_layers,
                              dropout=dropout, bidirectional=True)

        def forward(self, src, hidden=None):
            embedded = self.embed(src)
            outputs, hidden = self.gru(embedded, hidden)
            # sum bidirectional outputs
            outputs = (outputs[:, :, :self.hidden_size] +
                       outputs[:, :, self.hidden_size:])
            return outputs, hidden

    class Attention(nn.Module):
        def __init__(self, hidden_size):
            super(Attention, self).__init__()
            self.hidden_size = hidden_size
            self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.rand(hidden_size))
            stdv = 1. / math.sqrt(self.v.size(0))
            self.v.data.uniform_(-stdv, stdv)

        def forward(self, hidden, encoder_outputs):
            timestep = encoder_outputs.size(0)
            h = hidden.repeat(timestep, 1, 1).transpose(0, 1)
            encoder_outputs = encoder_outputs.transpose(0, 1)  # [B*T*H]
            attn_energies = self.score(h, encoder_outputs)
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

        def score(self, hidden, encoder_outputs):
            # [B*T*2H]->[B*T*H]
            energy = F.relu(self.attn(torch.cat([hidden, encoder_outputs], 2)))
            energy = energy.transpose(1, 2)  # [B*H*T]
            v = self.v.repeat(encoder_outputs.size(0), 1).unsqueeze(1)  # [B*1*H]
            energy = torch.bmm(v, energy)  # [B*1*T]
            return energy.squeeze(1)  # [B*T]

    class Decoder(nn.Module):
        def __init__(self, embed_size, hidden_size, output_size,
                     n_layers=1, dropout=0.2):
            super(Decoder, self).__init__()
            self.embed_size = embed_size
            self.hidden_size = hidden_size
            self.output_size = output_size
            self.n_layers = n_layers

            self.embed = nn.Embedding(output_size, embed_size)
            self.dropout = nn.Dropout(dropout, inplace=True)
            self.attention = Attention(hidden_size)
            self.gru = nn.GRU(hidden_size + embed_size, hidden_size,
                              n_layers, dropout=dropout)
            self.out = nn.Linear(hidden_size * 2, output_size)

        def forward(self, input, last_hidden, encoder_outputs):
            # Get the embedding of the current input word (last output word)
            embedded = self.embed(input).unsqueeze(0)  # (1,B,N)
            embedded = self.dropout(embedded)
            # Calculate attention weights and apply to encoder outputs
            attn_weights = self.attention(last_hidden[-1], encoder_outputs)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))  # (B,1,N)
            context = context.transpose(0, 1)  # (1,B,N)
            # Combine embedded input word and attended context, run through RNN
            rnn_input = torch.cat([embedded, context], 2)
            output, hidden = self.gru(rnn_input, last_hidden)
            output = output.squeeze(0)  # (1,B,N) -> (B,N)
            context = context.squeeze(0)
            output = self.out(torch.cat([output, context], 1))
            output = F.log_softmax(output, dim=1)
            return output, hidden, attn_weights

    class Seq2Seq(nn.Module):
        def __init__(self, encoder, decoder):
            super(Seq2Seq, self).__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, src, trg, teacher_forcing_ratio=0.5):
            batch_size = src.size(1)
            max_len = trg.size(0)
            vocab_size = self.decoder.output_size
            outputs = Variable(torch.zeros(max_len, batch_size, vocab_size))

            encoder_output, hidden = self.encoder(src)
            hidden = hidden[:self.decoder.n_layers]
            output = Variable(trg.data[0, :])  # sos
            for t in range(1, max_len):
                output, hidden, attn_weights = self.decoder(
                        output, hidden, encoder_output)
                outputs[t] = output
                is_teacher = random.random() < teacher_forcing_ratio
                top1 = output.data.max(1)[1]
                output = Variable(trg.data[t] if is_teacher else top1)
            return outputs

    def evaluate(model, val_iter, vocab_size, DE, EN):
        with torch.no_grad():
            model.eval()
            pad = EN.vocab.stoi['<pad>']
            total_loss = 0
            for b, batch in enumerate(val_iter):
                src, len_src = batch.src
                trg, len_trg = batch.trg
                src = src.data
                trg = trg.data
                output = model(src, trg, teacher_forcing_ratio=0.0)
                loss = F.nll_loss(output[1:].view(-1, vocab_size),
                                  trg[1:].contiguous().view(-1),
                                  ignore_index=pad)
                total_loss += loss.data.item()
            return total_loss / len(val_iter)

    def train(e, model, optimizer, train_iter, vocab_size, grad_clip, DE, EN, log):
        model.train()
        total_loss = 0
        pad = EN.vocab.stoi['<pad>']
        for b, batch in enumerate(train_iter):
            src, len_src = batch.src
            trg, len_trg = batch.trg
            optimizer.zero_grad()
            output = model(src, trg)
            loss = F.nll_loss(output[1:].view(-1, vocab_size),
                              trg[1:].contiguous().view(-1),
                              ignore_index=pad)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            log("step", [output, loss, norm])
            optimizer.step()
            total_loss += loss.data.item()

            if b % 1 == 0 and b != 0:   # every 100 batches in train.py
                total_loss = total_loss / 1
                print("[%d][loss:%5.2f][pp:%5.2f]" %
                      (b, total_loss, math.exp(total_loss)))
                total_loss = 0

    return Encoder, Decoder, Seq2Seq, train, evaluate


class _Field:
    """torchtext's field as train.py reads it: ``len(field.vocab)`` and ``vocab.stoi``."""

    class _Vocab:
        def __init__(self, n):
            self.stoi = {'<unk>': 0, '<pad>': 1, '<sos>': 2, '<eos>': 3}
            for i in range(4, n):
                self.stoi['w%d' % i] = i

        def __len__(self):
            return len(self.stoi)

    def __init__(self, n):
        self.vocab = self._Vocab(n)


class _Batch:
    def __init__(self, src, trg):
        self.src, self.trg = src, trg


def _token_batches(torch, n, seed, de_size, en_size, batch=3):
    """``n`` torchtext-style batches: (T, B) int64 ``src``/``trg`` with their lengths; ``<sos>``
    first, ``<eos>`` last, ``<pad>`` after shorter sequences."""
    rs = np.random.RandomState(seed)
    out = []
    for _ in range(n):
        parts = []
        for size, T in ((de_size, 5), (en_size, 4)):
            lens = rs.randint(T - 1, T + 1, batch)
            lens[0] = T
            arr = np.full((T, batch), 1, np.int64)
            for j, L in enumerate(lens):
                arr[0, j] = 2
                arr[1:L - 1, j] = rs.randint(4, size, L - 2)
                arr[L - 1, j] = 3
            parts.append((torch.tensor(arr), torch.tensor(lens)))
        out.append(_Batch(*parts))
    return out


# main() at hidden 8 / embed 6, vocabularies of 9 (DE) and 7 (EN), batches of 3 (source length 5,
# target 4), 2 training batches and 1 validation batch per epoch, 2 epochs; dropout 0; the
# teacher-forcing coin from ``random`` seeded the same on both sides; the state dict saved when
# validation improves.
def test_seq2seq_attention():
    def program(torch, log):
        Encoder, Decoder, Seq2Seq, train, evaluate = _seq2seq_classes(torch)
        DE, EN = _Field(9), _Field(7)
        train_iter = _token_batches(torch, 2, 0, len(DE.vocab), len(EN.vocab))
        val_iter = _token_batches(torch, 1, 1, len(DE.vocab), len(EN.vocab))
        de_size, en_size = len(DE.vocab), len(EN.vocab)
        print("[DE_vocab]:%d [en_vocab]:%d" % (de_size, en_size))
        hidden_size, embed_size = 8, 6
        encoder = Encoder(de_size, embed_size, hidden_size,
                          n_layers=2, dropout=0.0)
        decoder = Decoder(embed_size, hidden_size, en_size,
                          n_layers=1, dropout=0.0)
        seq2seq = Seq2Seq(encoder, decoder)
        init_params(torch, seq2seq, 5, scale=0.4)
        optimizer = torch.optim.Adam(seq2seq.parameters(), lr=1e-2)
        print(seq2seq)
        tmp = tempfile.mkdtemp()
        best_val_loss = None
        with seeded(3):
            for e in range(1, 3):
                train(e, seq2seq, optimizer, train_iter, en_size, 1.0, DE, EN, log)
                val_loss = evaluate(seq2seq, val_iter, en_size, DE, EN)
                print("[Epoch:%d] val_loss:%5.3f | val_pp:%5.2fS"
                      % (e, val_loss, math.exp(val_loss)))
                log("val", val_loss)
                if not best_val_loss or val_loss < best_val_loss:
                    print("[!] saving model...")
                    torch.save(seq2seq.state_dict(), os.path.join(tmp, 'seq2seq_%d.pt' % (e)))
                    best_val_loss = val_loss
        loaded = torch.load(os.path.join(tmp, 'seq2seq_1.pt'))
        log("saved keys", list(loaded))

    run_both(program)
