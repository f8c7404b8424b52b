"""A thirtieth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round29.py``, from repositories no earlier round used:

- bentrevett/pytorch-sentiment-analysis: ``2_lstm.ipynb``'s packed bidirectional two-layer LSTM
  classifier (``pack_padded_sequence(..., batch_first=True, enforce_sorted=False)`` over
  unsorted lengths, ``pad_packed_sequence`` of the packed output, the final hidden states of
  both directions ``cat([hidden[-1], hidden[-2]])``, ``model.apply(initialize_weights)`` with
  ``xavier_normal_``/``orthogonal_``/``zeros_`` by parameter name, pretrained vectors assigned to
  ``embedding.weight.data``, a ``functools.partial`` collate through ``pad_sequence`` and
  ``torch.stack`` of 0-dim tensors, the train/evaluate loops with ``get_accuracy``, the best
  model saved and reloaded, ``predict_sentiment``).

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import functools
import io

import numpy as np
import pytest
from parity import printer, run_both

torch = pytest.importorskip("torch")


# ---- bentrevett/pytorch-sentiment-analysis -------------------------------------------------------
_REVIEWS = [  # every batch of 3 has lengths 4, 3 and 2 in some order: one set of packed shapes
    ("this film is great", 1), ("not good", 0), ("great acting .", 1),
    ("bad film", 0), ("it is not good", 0), ("good good film", 1),
    ("terrible acting", 0), ("great film , great", 1), ("is not bad", 1),
]


def _sentiment_data(torch):
    """The IMDB pipeline in small: ``basic_english`` tokens (lower-cased, split), a vocabulary
    with ``<unk>``/``<pad>`` specials and a default index, and examples as the dataset's torch
    format yields them (dicts of ``ids``, 0-dim ``label`` and ``length`` tensors)."""
    def tokenizer(text):
        return text.lower().split()

    words = sorted({w for text, _ in _REVIEWS[:6] for w in tokenizer(text)})
    itos = ["<unk>", "<pad>"] + words

    class Vocab(dict):
        def __missing__(self, token):
            return self["<unk>"]

        def get_itos(self):
            return itos

    vocab = Vocab({w: i for i, w in enumerate(itos)})

    def example(text, label):
        tokens = tokenizer(text)[:256]
        return {"ids": torch.tensor([vocab[t] for t in tokens]), "label": torch.tensor(label),
                "length": torch.tensor(len(tokens))}

    data = [example(t, y) for t, y in _REVIEWS]
    return tokenizer, vocab, data[:6], data[6:]


# 2_lstm.ipynb at tiny sizes: 9 reviews (6 train, 3 valid; the valid set is also the test set;
# every batch pads to 4 tokens so the packed shapes repeat),
# embedding 10, hidden 5, two bidirectional layers, batch 3, 2 epochs. Deviations: dropout_rate
# is 0 (dropout masks come from each library's own generator), the DataLoader does not shuffle
# (its permutation does too), the orthogonal/xavier-normal weights initialize_weights draws are
# checked for orthogonality and then replaced by numpy values (the biases stay zeros_), the
# FastText vectors are numpy values, and the best model is saved to a BytesIO.
def test_sentiment_packed_bilstm():
    def program(torch, log):
        print = printer(log)
        nn, optim = torch.nn, torch.optim
        tokenizer, vocab, train_data, valid_data = _sentiment_data(torch)
        test_data = valid_data
        pad_index = vocab["<pad>"]

        class LSTM(nn.Module):
            def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional,
                         dropout_rate):
                super().__init__()
                self.embedding = nn.Embedding(vocab_size, embedding_dim)
                self.lstm = nn.LSTM(embedding_dim, hidden_dim, n_layers, bidirectional=bidirectional,
                                    dropout=dropout_rate, batch_first=True)
                self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, output_dim)
                self.dropout = nn.Dropout(dropout_rate)

            def forward(self, ids, length):
                embedded = self.dropout(self.embedding(ids))
                packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, length, batch_first=True,
                                                                    enforce_sorted=False)
                packed_output, (hidden, cell) = self.lstm(packed_embedded)
                output, output_length = nn.utils.rnn.pad_packed_sequence(packed_output)
                log("unpacked", [output, output_length])
                if self.lstm.bidirectional:
                    hidden = self.dropout(torch.cat([hidden[-1], hidden[-2]], dim=-1))
                else:
                    hidden = self.dropout(hidden[-1])
                prediction = self.fc(hidden)
                return prediction

        vocab_size = len(vocab)
        embedding_dim = 10  # = 2 * hidden_dim: both layers see one input width (fewer compiles)
        hidden_dim = 5
        output_dim = 2
        n_layers = 2
        bidirectional = True
        dropout_rate = 0.0

        model = LSTM(vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional, dropout_rate)

        def count_parameters(model):
            return sum(p.numel() for p in model.parameters() if p.requires_grad)

        print(f'The model has {count_parameters(model):,} trainable parameters')

        def initialize_weights(m):
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LSTM):
                for name, param in m.named_parameters():
                    if 'bias' in name:
                        nn.init.zeros_(param)
                    elif 'weight' in name:
                        nn.init.orthogonal_(param)

        print(model.apply(initialize_weights))
        # orthogonal_ of a (4 * hidden, in) weight has orthonormal columns: W^T W = I
        log("orthonormal", [(n, p.t() @ p) for n, p in model.lstm.named_parameters() if "weight" in n])
        log("zero_biases", [float(p.detach().abs().sum()) for n, p in model.named_parameters() if "bias" in n])
        rs = np.random.RandomState(0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "weight" in name and not name.startswith("embedding"):
                    p.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))

        pretrained_embedding = torch.tensor(rs.standard_normal((vocab_size, embedding_dim)).astype(np.float32))
        model.embedding.weight.data = pretrained_embedding

        optimizer = optim.Adam(model.parameters(), lr=0.05)
        criterion = nn.CrossEntropyLoss()
        device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        model = model.to(device)
        criterion = criterion.to(device)

        def collate(batch, pad_index):
            batch_ids = [i['ids'] for i in batch]
            batch_ids = nn.utils.rnn.pad_sequence(batch_ids, padding_value=pad_index, batch_first=True)
            batch_length = [i['length'] for i in batch]
            batch_length = torch.stack(batch_length)
            batch_label = [i['label'] for i in batch]
            batch_label = torch.stack(batch_label)
            batch = {'ids': batch_ids,
                     'length': batch_length,
                     'label': batch_label}
            return batch

        batch_size = 3
        collate = functools.partial(collate, pad_index=pad_index)
        train_dataloader = torch.utils.data.DataLoader(train_data, batch_size=batch_size, collate_fn=collate,
                                                       shuffle=False)
        valid_dataloader = torch.utils.data.DataLoader(valid_data, batch_size=batch_size, collate_fn=collate)
        test_dataloader = torch.utils.data.DataLoader(test_data, batch_size=batch_size, collate_fn=collate)

        def get_accuracy(prediction, label):
            batch_size, _ = prediction.shape
            predicted_classes = prediction.argmax(dim=-1)
            correct_predictions = predicted_classes.eq(label).sum()
            accuracy = correct_predictions / batch_size
            return accuracy

        def train(dataloader, model, criterion, optimizer, device):
            model.train()
            epoch_loss = 0
            epoch_accuracy = 0
            for batch in dataloader:
                ids = batch['ids'].to(device)
                length = batch['length']
                label = batch['label'].to(device)
                prediction = model(ids, length)
                loss = criterion(prediction, label)
                accuracy = get_accuracy(prediction, label)
                optimizer.zero_grad()
                loss.backward()
                log("grads", [model.embedding.weight.grad, model.lstm.weight_hh_l1_reverse.grad,
                              model.lstm.bias_ih_l0.grad])
                optimizer.step()
                epoch_loss += loss.item()
                epoch_accuracy += accuracy.item()
            return epoch_loss / len(dataloader), epoch_accuracy / len(dataloader)

        def evaluate(dataloader, model, criterion, device):
            model.eval()
            epoch_loss = 0
            epoch_accuracy = 0
            with torch.no_grad():
                for batch in dataloader:
                    ids = batch['ids'].to(device)
                    length = batch['length']
                    label = batch['label'].to(device)
                    prediction = model(ids, length)
                    loss = criterion(prediction, label)
                    accuracy = get_accuracy(prediction, label)
                    epoch_loss += loss.item()
                    epoch_accuracy += accuracy.item()
            return epoch_loss / len(dataloader), epoch_accuracy / len(dataloader)

        n_epochs = 2
        best_valid_loss = float('inf')
        buf = io.BytesIO()
        for epoch in range(n_epochs):
            train_loss, train_acc = train(train_dataloader, model, criterion, optimizer, device)
            valid_loss, valid_acc = evaluate(valid_dataloader, model, criterion, device)
            if valid_loss < best_valid_loss:
                best_valid_loss = valid_loss
                buf.seek(0)
                buf.truncate()
                torch.save(model.state_dict(), buf)
            print(f'epoch: {epoch+1}')
            print(f'train_loss: {train_loss:.3f}, train_acc: {train_acc:.3f}')
            print(f'valid_loss: {valid_loss:.3f}, valid_acc: {valid_acc:.3f}')
            log("epoch", [train_loss, train_acc, valid_loss, valid_acc])

        buf.seek(0)
        model.load_state_dict(torch.load(buf))
        test_loss, test_acc = evaluate(test_dataloader, model, criterion, device)
        print(f'test_loss: {test_loss:.3f}, test_acc: {test_acc:.3f}')
        log("test", [test_loss, test_acc])

        def predict_sentiment(text, model, tokenizer, vocab, device):
            tokens = tokenizer(text)
            ids = [vocab[t] for t in tokens]
            length = torch.LongTensor([len(ids)])
            tensor = torch.LongTensor(ids).unsqueeze(dim=0).to(device)
            prediction = model(tensor, length).squeeze(dim=0)
            probability = torch.softmax(prediction, dim=-1)
            predicted_class = prediction.argmax(dim=-1).item()
            predicted_probability = probability[predicted_class].item()
            return predicted_class, predicted_probability

        for text in ("This film is terrible!", "This film is great!"):
            log("predict", predict_sentiment(text, model, tokenizer, vocab, device))

    run_both(program)
