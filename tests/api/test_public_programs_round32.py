"""A thirty-second round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round31.py``, from repositories no earlier round used:

- SeanChang-3245/BankWatchList: ``Models/transformer.py``'s ``TransformerClassifier`` (a linear
  input projection, a sinusoidal ``register_buffer`` table sliced to the sequence length, a
  sequence-first ``nn.TransformerEncoder`` whose ``src_key_padding_mask`` is built from the
  lengths with ``arange(...).unsqueeze(0).ge(lengths.unsqueeze(1))``, mean pooling) trained as
  ``main.ipynb`` does: ``pad_collate_fn``'s ``pad_sequence`` batches from a ``DataLoader``,
  ``BCEWithLogitsLoss`` under CPU ``torch.amp.autocast`` (bfloat16), ``torch.amp.GradScaler()``
  (a CUDA scaler, disabled without CUDA), the ``evaluate`` pass with sklearn's metrics and the
  ``state_dict().copy()`` best-model bookkeeping;
- pytorch/tutorials ``beginner_source/knowledge_distillation_tutorial.py``: a teacher in
  ``eval()`` under ``no_grad`` and a student trained on ``-sum(softmax(t/T) * log_softmax(s/T))
  / batch * T**2`` plus cross-entropy, and the hidden-representation variant
  (``avg_pool1d`` of the teacher's flattened features, ``nn.CosineEmbeddingLoss`` with a ones
  target), with the tutorial's ``test``/``test_multiple_outputs`` accuracy loops;
- danielt17/Triplet-network-few-shot-learning: ``TripletNetwork.py``'s embedding net shared by
  three branches with ``F.pairwise_distance`` distances, ``Losses.py``'s ``nn.TripletMarginLoss``
  wrapper and the paper's softmax-ratio ``CustomLoss``, trained as ``TrainTripletNetwork.py``
  does (inputs made leaves with ``requires_grad_()``, ``ExponentialLR``, the best model saved with
  ``torch.save``; with ``loss_type=0`` its ``lossFunction`` reads the loop's raw image batches,
  so no gradient reaches the model and Adam skips every parameter), then
  ``TrainTripletNetworkFewShot.py``'s ``evaluate_test`` (``model.eval()`` with a graph still
  built through the ``requires_grad_()`` inputs).

BankWatchList's run under autocast is in ``test_public_programs_round32_amp.py``, the
knowledge-distillation tutorial in ``test_public_programs_round32_kd.py`` and the triplet
network in ``test_public_programs_round32_triplet.py`` (each file compiles its own shapes; together
they would take longer than a file may).

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why (dropout probabilities are set to 0: the two libraries' dropout masks come
from different generators). A ``from torch... import`` inside a program would import the real
torch on the tracegrad side too, so such imports are written as attribute lookups on the
``torch`` argument.
"""
import math
import warnings

import numpy as np
import pytest
from parity import run_both

torch = pytest.importorskip("torch")


def _np_init(torch, module, seed, scale=0.4):
    """Every parameter of ``module`` from a seeded numpy stream (the programs' default inits draw
    from torch's generator)."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


# ---- SeanChang-3245/BankWatchList --------------------------------------------------------------
def _bank_classes(torch):
    """Models/transformer.py unchanged, and Dataset/bank_dataset.py's ``pad_collate_fn``."""
    nn = torch.nn
    pad_sequence = torch.nn.utils.rnn.pad_sequence

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=5000):
            super().__init__()
            pe = torch.zeros(max_len, d_model)
            pos = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer('pe', pe.unsqueeze(0))

        def forward(self, x):
            # x: (batch, seq_len, d_model)
            return x + self.pe[:, :x.size(1)]

    class TransformerClassifier(nn.Module):
        def __init__(
            self,
            feat_dim,       # ← number of features per time‐step
            d_model=128,    # you can shrink this from 512
            nhead=4,
            num_layers=2,
            num_classes=1,  # if you're doing binary (watchlist yes/no)
            dim_feedforward=512,
            dropout=0.1,
        ):
            super().__init__()
            # instead of nn.Embedding, use a linear projector
            self.input_proj = nn.Linear(feat_dim, d_model)
            self.pos_enc     = PositionalEncoding(d_model)
            encoder_layer    = nn.TransformerEncoderLayer(d_model, nhead,
                                                          dim_feedforward,
                                                          dropout)
            self.encoder     = nn.TransformerEncoder(encoder_layer,
                                                     num_layers)
            self.classifier  = nn.Linear(d_model, num_classes)

        def forward(self, seq, src_mask=None, src_key_padding_mask=None):
            # seq: (batch, seq_len, feat_dim)
            x = self.input_proj(seq)       # → (batch, seq_len, d_model)
            x = self.pos_enc(x)            # add positional
            x = x.transpose(0,1)           # → (seq_len, batch, d_model)
            out = self.encoder(x,
                               mask=src_mask,
                               src_key_padding_mask=src_key_padding_mask)
            out = out.mean(dim=0)          # (batch, d_model)
            return self.classifier(out)    # (batch, num_classes)

    def pad_collate_fn(batch):
        # batch: list of (seq, label)
        seqs, labels = zip(*batch)
        # pad seqs to (batch, max_seq_len, feat_dim)
        padded = pad_sequence(seqs, batch_first=True, padding_value=0.0)
        lengths = torch.tensor([s.size(0) for s in seqs], dtype=torch.long)
        labels  = torch.stack(labels)
        return padded, lengths, labels

    return TransformerClassifier, pad_collate_fn


# main.ipynb's cells from "Loading Model & Optimizer" to "Testing", with a config dict of tiny
# sizes (d_model 8, 2 heads, 2 layers, feedforward 16 -- the notebook leaves it at 512 -- dropout
# 0), the datasets as lists of (features, label) sequences of 1 to 3 steps in place of the bank
# CSVs, ``shuffle=False`` and ``num_workers=0`` (the loader's order comes from torch's generator,
# and worker processes would only slow the test); tqdm's bar is the plain loader. The test split
# is the validation list (no labels are read there).
def bankwatchlist_program(autocast):
    """main.ipynb's run, under CPU autocast (bfloat16) or not; the bfloat16 run is
    ``test_public_programs_round32_amp.py``'s."""
    def program(torch, log):
        from sklearn.metrics import accuracy_score, precision_score, recall_score, f1_score
        nn = torch.nn
        DataLoader = torch.utils.data.DataLoader
        TransformerClassifier, pad_collate_fn = _bank_classes(torch)
        cfg_parameter = {"batchSize": 2, "d_model": 8, "attention_head": 2, "num_layers": 2,
                         "dropout": 0.0, "learningRate": 1e-2, "epochs": 2,
                         "threshold": 0.5}
        device = torch.device("cpu")

        def sequences(seed, lengths):
            rs = np.random.RandomState(seed)
            return [(torch.from_numpy(rs.standard_normal((n, 3)).astype(np.float32)),
                     torch.tensor(float(i % 2), dtype=torch.float32)) for i, n in enumerate(lengths)]

        # every batch pads to 3 steps (one set of shapes to compile)
        train_ds, val_ds = sequences(0, [3, 2, 1, 3]), sequences(1, [2, 3, 3, 3])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train_loader = DataLoader(train_ds, batch_size=cfg_parameter['batchSize'], shuffle=False,
                                      num_workers=0, pin_memory=True, collate_fn=pad_collate_fn)
            val_loader = DataLoader(val_ds, batch_size=cfg_parameter['batchSize'], shuffle=False,
                                    num_workers=0, pin_memory=True, collate_fn=pad_collate_fn)
            sample_batch = next(iter(train_loader))
            x_sample = sample_batch[0]
            print(f"Input tensor shape: {x_sample.shape}")
            actual_feat_dim = x_sample.shape[2]
            print(f"Feature dimension from data: {actual_feat_dim}")

            model = TransformerClassifier(
                feat_dim=actual_feat_dim,
                d_model=cfg_parameter['d_model'],
                nhead=cfg_parameter['attention_head'],
                num_layers=cfg_parameter['num_layers'],
                num_classes=1,
                dim_feedforward=16,
                dropout=cfg_parameter['dropout']
            ).to(device)
            _np_init(torch, model, 3, scale=1.0)

            labels = [label.item() for _, label in train_ds]
            num_pos = sum(labels)
            num_neg = len(labels) - num_pos
            pos_weight = torch.tensor([num_neg / max(num_pos, 1)], device=device)
            log("pos_weight", pos_weight)

            criterion = nn.BCEWithLogitsLoss()
            optimizer = torch.optim.Adam(model.parameters(), lr=cfg_parameter['learningRate'])
            scaler = torch.amp.GradScaler()  # optional mixed‑precision
            log("scaler", scaler.is_enabled())

            def evaluate(model, data_loader, device):
                model.eval()
                val_loss = 0.0
                all_preds = []
                all_labels = []
                with torch.no_grad():
                    for x, lengths, y in data_loader:
                        x, lengths, y = x.to(device), lengths.to(device), y.to(device)
                        with torch.amp.autocast(device_type=device.type, enabled=autocast):
                            logits = model(
                                x,
                                src_key_padding_mask=(torch.arange(x.size(1), device=device)
                                                      .unsqueeze(0)
                                                      .ge(lengths.unsqueeze(1)))
                            )
                            loss = criterion(logits.squeeze(-1), y)
                        val_loss += loss.item()
                        log("eval logits", [logits.dtype, logits.float()])
                        preds = torch.sigmoid(logits.squeeze(-1)) >= cfg_parameter['threshold']
                        if preds.dim() == 0:
                            all_preds.append(preds.cpu().numpy().item())
                        else:
                            all_preds.extend(preds.cpu().numpy())
                        if y.dim() == 0:
                            all_labels.append(y.cpu().numpy().item())
                        else:
                            all_labels.extend(y.cpu().numpy())
                accuracy = accuracy_score(all_labels, all_preds)
                precision = precision_score(all_labels, all_preds, zero_division=0)
                recall = recall_score(all_labels, all_preds, zero_division=0)
                f1 = f1_score(all_labels, all_preds, zero_division=0)
                return val_loss / len(data_loader), accuracy, precision, recall, f1

            epochs = cfg_parameter['epochs']
            print(f"Starting training for {epochs} epochs on {device}")
            train_losses, val_losses, val_metrics = [], [], []
            best_val_loss = float('inf')
            best_model_state = None
            model.train()
            for epoch in range(1, epochs + 1):
                model.train()
                epoch_loss = 0.0
                for x, lengths, y in train_loader:
                    x, lengths, y = x.to(device), lengths.to(device), y.to(device)
                    optimizer.zero_grad()
                    with torch.amp.autocast(device_type=device.type, enabled=autocast):
                        logits = model(
                            x,
                            src_key_padding_mask=(torch.arange(x.size(1), device=device)
                                                  .unsqueeze(0)
                                                  .ge(lengths.unsqueeze(1)))
                        )
                        loss = criterion(logits.squeeze(), y)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    batch_loss = loss.item()
                    epoch_loss += batch_loss
                    log("train", [logits.dtype, logits.float(), loss.dtype, loss, model.input_proj.weight.grad,
                                  model.encoder.layers[0].self_attn.in_proj_weight.grad])
                avg_train_loss = epoch_loss / len(train_loader)
                train_losses.append(avg_train_loss)
                val_loss, accuracy, precision, recall, f1 = evaluate(model, val_loader, device)
                val_losses.append(val_loss)
                val_metrics.append({'accuracy': accuracy, 'precision': precision, 'recall': recall, 'f1': f1})
                if val_loss < best_val_loss:
                    best_val_loss = val_loss
                    best_model_state = model.state_dict().copy()
                    print(f"New best model saved! (val_loss: {val_loss:.4f})")
                print(f"Epoch {epoch} - Train loss: {avg_train_loss:.4f}, Val loss: {val_loss:.4f}")
                print(f"Accuracy: {accuracy:.4f}, Precision: {precision:.4f}, Recall: {recall:.4f}, F1: {f1:.4f}")
            log("losses", [train_losses, val_losses, val_metrics])

            if best_model_state:
                model.load_state_dict(best_model_state)
                print("Loaded best model based on validation performance")

            # — inference on the held-out split —
            model.eval()
            preds = []
            with torch.no_grad():
                for x, lengths, _ in val_loader:
                    x, lengths = x.to(device), lengths.to(device)
                    mask = (torch.arange(x.size(1), device=device)
                            .unsqueeze(0)
                            .ge(lengths.unsqueeze(1)))
                    logits = model(x, src_key_padding_mask=mask).squeeze(1)
                    probs = torch.sigmoid(logits)
                    bin_preds = (probs >= cfg_parameter['threshold']).int()
                    preds.extend(bin_preds.cpu().numpy())
                    log("test", [mask, probs, bin_preds])
            log("preds", [int(p) for p in preds])
        log("warnings", sorted({(w.category.__name__, str(w.message)[:60]) for w in caught}))
        # the key projection's bias cannot change the attention (softmax is shift-invariant per
        # query), so its gradient is rounding noise that Adam scales up to +-lr steps: left out
        if not autocast:   # bfloat16 rounding decides a few ReLUs, and Adam scales the difference to lr
            log("params", [p[:8].tolist() + p[16:].tolist() if n.endswith("in_proj_bias") else p
                           for n, p in model.named_parameters()])

    return program


def test_bankwatchlist_transformer():
    run_both(bankwatchlist_program(autocast=False), rtol=1e-4, atol=1e-5)
