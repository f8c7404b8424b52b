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

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why (dropout probabilities are set to 0: the two libraries' dropout masks come
from different generators). A ``from torch... import`` inside a program would import the real
torch on the tracegrad side too, so such imports are written as attribute lookups on the
``torch`` argument.
"""
import io
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
# 0), the datasets as lists of (features, label) sequences of 2 to 5 steps in place of the bank
# CSVs, ``shuffle=False`` and ``num_workers=0`` (the loader's order comes from torch's generator,
# and worker processes would only slow the test); tqdm's bar is the plain loader. The test split
# is the validation list (no labels are read there).
@pytest.mark.parametrize("autocast", [False, True])
def test_bankwatchlist_transformer(autocast):
    def program(torch, log):
        from sklearn.metrics import accuracy_score, precision_score, recall_score, f1_score
        nn = torch.nn
        DataLoader = torch.utils.data.DataLoader
        TransformerClassifier, pad_collate_fn = _bank_classes(torch)
        cfg_parameter = {"batchSize": 2, "d_model": 8, "attention_head": 2, "num_layers": 2,
                         "dropout": 0.0, "learningRate": 1e-2, "epochs": 2, "threshold": 0.5}
        device = torch.device("cpu")

        def sequences(seed, n):
            rs = np.random.RandomState(seed)
            return [(torch.from_numpy(rs.standard_normal((int(rs.randint(2, 6)), 3)).astype(np.float32)),
                     torch.tensor(float(i % 2), dtype=torch.float32)) for i in range(n)]

        train_ds, val_ds = sequences(0, 4), sequences(1, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train_loader = DataLoader(train_ds, batch_size=cfg_parameter['batchSize'], shuffle=False,
                                      num_workers=0, pin_memory=False, collate_fn=pad_collate_fn)
            val_loader = DataLoader(val_ds, batch_size=cfg_parameter['batchSize'], shuffle=False,
                                    num_workers=0, pin_memory=False, collate_fn=pad_collate_fn)
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
            _np_init(torch, model, 3)

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

    if autocast:
        # bfloat16 matmuls: one ulp (2**-8) apart where the two libraries' dot products round
        # differently
        run_both(program, rtol=3e-2, atol=3e-2)
    else:
        run_both(program, rtol=1e-4, atol=1e-5)


# ---- pytorch/tutorials knowledge_distillation_tutorial.py --------------------------------------
def _kd_classes(torch):
    """The tutorial's DeepNN/LightNN and their Cosine variants at tiny widths (teacher convs 3 ->
    4 -> 4 -> 4 -> 4, student 3 -> 2 -> 2 on 8x8 images, so the teacher's flattened features
    are 16 and the student's 8, as the tutorial's 2048 and 1024; classifier widths 6 and 4;
    ``Dropout(0.1)`` -> ``Dropout(0.0)``)."""
    nn = torch.nn

    class DeepNN(nn.Module):
        def __init__(self, num_classes=10):
            super(DeepNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.Conv2d(4, 4, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(
                nn.Linear(16, 6),
                nn.ReLU(),
                nn.Dropout(0.0),
                nn.Linear(6, num_classes)
            )

        def forward(self, x):
            x = self.features(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    class LightNN(nn.Module):
        def __init__(self, num_classes=10):
            super(LightNN, self).__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 2, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
                nn.Conv2d(2, 2, kernel_size=3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=2, stride=2),
            )
            self.classifier = nn.Sequential(
                nn.Linear(8, 4),
                nn.ReLU(),
                nn.Dropout(0.0),
                nn.Linear(4, num_classes)
            )

        def forward(self, x):
            x = self.features(x)
            x = torch.flatten(x, 1)
            x = self.classifier(x)
            return x

    class ModifiedDeepNNCosine(DeepNN):
        # the tutorial repeats DeepNN's __init__ verbatim; only forward differs
        def forward(self, x):
            x = self.features(x)
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            flattened_conv_output_after_pooling = torch.nn.functional.avg_pool1d(flattened_conv_output, 2)
            return x, flattened_conv_output_after_pooling

    class ModifiedLightNNCosine(LightNN):
        def forward(self, x):
            x = self.features(x)
            flattened_conv_output = torch.flatten(x, 1)
            x = self.classifier(flattened_conv_output)
            return x, flattened_conv_output

    return DeepNN, LightNN, ModifiedDeepNNCosine, ModifiedLightNNCosine


def _kd_loader(torch, seed, n=6, batch_size=3):
    """CIFAR-10 stand-in: ``n`` normalised 3x8x8 images and labels of 4 classes in a
    ``DataLoader`` (unshuffled: the order would come from torch's generator)."""
    rs = np.random.RandomState(seed)
    x = torch.tensor(rs.standard_normal((n, 3, 8, 8)).astype(np.float32))
    y = torch.tensor(rs.randint(0, 4, n))
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size, shuffle=False)


def _kd_functions(torch, log):
    """The tutorial's train, test, train_knowledge_distillation, train_cosine_loss and
    test_multiple_outputs, unchanged but for a ``log`` of each batch's loss."""
    nn, optim = torch.nn, torch.optim

    def train(model, train_loader, epochs, learning_rate, device):
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.Adam(model.parameters(), lr=learning_rate)
        model.to(device)
        model.train()
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                outputs = model(inputs)
                loss = criterion(outputs, labels)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def test(model, test_loader, device):
        model.to(device)
        model.eval()
        correct = 0
        total = 0
        with torch.no_grad():
            for inputs, labels in test_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                outputs = model(inputs)
                _, predicted = torch.max(outputs.data, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
        accuracy = 100 * correct / total
        print(f"Test Accuracy: {accuracy:.2f}%")
        return accuracy

    def train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T,
                                     soft_target_loss_weight, ce_loss_weight, device):
        ce_loss = nn.CrossEntropyLoss()
        optimizer = optim.Adam(student.parameters(), lr=learning_rate)
        teacher.to(device)
        student.to(device)
        teacher.eval()  # Teacher set to evaluation mode
        student.train()  # Student to train mode
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.no_grad():
                    teacher_logits = teacher(inputs)
                student_logits = student(inputs)
                soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
                soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
                soft_targets_loss = -torch.sum(soft_targets * soft_prob) / soft_prob.size()[0] * (T**2)
                label_loss = ce_loss(student_logits, labels)
                loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                log("kd", [teacher_logits.requires_grad, soft_targets_loss, label_loss, loss.grad_fn])
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def train_cosine_loss(teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight,
                          ce_loss_weight, device):
        ce_loss = nn.CrossEntropyLoss()
        cosine_loss = nn.CosineEmbeddingLoss()
        optimizer = optim.Adam(student.parameters(), lr=learning_rate)
        teacher.to(device)
        student.to(device)
        teacher.eval()  # Teacher set to evaluation mode
        student.train()  # Student to train mode
        for epoch in range(epochs):
            running_loss = 0.0
            for inputs, labels in train_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.no_grad():
                    _, teacher_hidden_representation = teacher(inputs)
                student_logits, student_hidden_representation = student(inputs)
                hidden_rep_loss = cosine_loss(student_hidden_representation, teacher_hidden_representation,
                                              target=torch.ones(inputs.size(0)).to(device))
                label_loss = ce_loss(student_logits, labels)
                loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                log("cosine", [teacher_hidden_representation, hidden_rep_loss, label_loss])
            print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

    def test_multiple_outputs(model, test_loader, device):
        model.to(device)
        model.eval()
        correct = 0
        total = 0
        with torch.no_grad():
            for inputs, labels in test_loader:
                inputs, labels = inputs.to(device), labels.to(device)
                outputs, _ = model(inputs)  # In this line we disregard the second tensor of the tuple
                _, predicted = torch.max(outputs.data, 1)
                total += labels.size(0)
                correct += (predicted == labels).sum().item()
        accuracy = 100 * correct / total
        print(f"Test Accuracy: {accuracy:.2f}%")
        return accuracy

    return train, test, train_knowledge_distillation, train_cosine_loss, test_multiple_outputs


# The tutorial's script: ``torch.manual_seed(42)`` inits become numpy-seeded ones (the same seed
# for the two student copies, as the tutorial's point is that they start equal), 2 epochs of 2
# batches of 3 in place of 10 epochs of CIFAR-10, 4 classes, the teacher's weights loaded into
# the Cosine variant with ``load_state_dict`` as the tutorial does.
def test_pytorch_tutorial_knowledge_distillation():
    def program(torch, log):
        device = torch.device("cpu")
        DeepNN, LightNN, ModifiedDeepNNCosine, ModifiedLightNNCosine = _kd_classes(torch)
        train, test, train_knowledge_distillation, train_cosine_loss, test_multiple_outputs = \
            _kd_functions(torch, log)
        train_loader, test_loader = _kd_loader(torch, 0), _kd_loader(torch, 1)

        nn_deep = _np_init(torch, DeepNN(num_classes=4), 42, scale=0.6)
        train(nn_deep, train_loader, epochs=2, learning_rate=0.01, device=device)
        test_accuracy_deep = test(nn_deep, test_loader, device)
        nn_light = _np_init(torch, LightNN(num_classes=4), 7)
        new_nn_light = _np_init(torch, LightNN(num_classes=4), 7)
        print("Norm of 1st layer of nn_light:", torch.norm(nn_light.features[0].weight).item())
        print("Norm of 1st layer of new_nn_light:", torch.norm(new_nn_light.features[0].weight).item())
        total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))
        print(f"DeepNN parameters: {total_params_deep}")
        total_params_light = "{:,}".format(sum(p.numel() for p in nn_light.parameters()))
        print(f"LightNN parameters: {total_params_light}")

        train(nn_light, train_loader, epochs=2, learning_rate=0.01, device=device)
        test_accuracy_light_ce = test(nn_light, test_loader, device)
        print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
        print(f"Student accuracy: {test_accuracy_light_ce:.2f}%")

        train_knowledge_distillation(teacher=nn_deep, student=new_nn_light, train_loader=train_loader, epochs=2,
                                     learning_rate=0.01, T=2, soft_target_loss_weight=0.25, ce_loss_weight=0.75,
                                     device=device)
        test_accuracy_light_ce_and_kd = test(new_nn_light, test_loader, device)
        print(f"Student accuracy without teacher: {test_accuracy_light_ce:.2f}%")
        print(f"Student accuracy with CE + KD: {test_accuracy_light_ce_and_kd:.2f}%")
        log("kd student", list(new_nn_light.parameters()))
        log("teacher unchanged", [p.grad is None for p in nn_deep.parameters()])

        modified_nn_deep = ModifiedDeepNNCosine(num_classes=4)
        modified_nn_deep.load_state_dict(nn_deep.state_dict())
        print("Norm of 1st layer for deep_nn:", torch.norm(nn_deep.features[0].weight).item())
        print("Norm of 1st layer for modified_deep_nn:", torch.norm(modified_nn_deep.features[0].weight).item())
        modified_light_nn = _np_init(torch, ModifiedLightNNCosine(num_classes=4), 7)
        print("Norm of 1st layer:", torch.norm(modified_light_nn.features[0].weight).item())
        train_cosine_loss(teacher=modified_nn_deep, student=modified_light_nn, train_loader=train_loader, epochs=2,
                          learning_rate=0.01, hidden_rep_loss_weight=0.25, ce_loss_weight=0.75, device=device)
        test_accuracy_light_ce_and_cosine_loss = test_multiple_outputs(modified_light_nn, test_loader, device)
        log("accuracies", [test_accuracy_deep, test_accuracy_light_ce, test_accuracy_light_ce_and_kd,
                           test_accuracy_light_ce_and_cosine_loss])
        log("cosine student", list(modified_light_nn.parameters()))

    run_both(program, rtol=1e-4, atol=1e-5)


# ---- danielt17/Triplet-network-few-shot-learning ------------------------------------------------
def _triplet_module(torch):
    """TripletNetwork.py (``Dropout2d()`` and ``F.dropout``'s default 0.5 set to 0) and
    Losses.py, unchanged otherwise."""
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d(0.0)
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 320)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, p=0.0, training=self.training)
            return self.fc2(x)

    class TripletNetClass(nn.Module):
        def __init__(self, embeddingnet):
            super(TripletNetClass, self).__init__()
            self.embeddingnet = embeddingnet

        def forward(self, x, y, z):
            embedded_x = self.embeddingnet(x)
            embedded_y = self.embeddingnet(y)
            embedded_z = self.embeddingnet(z)
            dist_a = F.pairwise_distance(embedded_x, embedded_y, 2)
            dist_b = F.pairwise_distance(embedded_x, embedded_z, 2)
            return dist_a, dist_b, embedded_x, embedded_y, embedded_z

    def TripletNetModel(device):
        model = Net()
        Tnet = TripletNetClass(model).to(device)
        return Tnet

    def tripletLoss(anchor, positive, negative, margin=1, p=2):
        triplet_loss = nn.TripletMarginLoss(margin=margin, p=p)
        loss = triplet_loss(anchor, positive, negative)
        return loss

    def CustomLoss(dist_plus, dist_minus, margin=1):
        norm = torch.add(torch.exp(dist_plus), torch.exp(dist_minus))
        dplus = torch.div(torch.exp(dist_plus), norm)
        dminus = torch.div(torch.exp(dist_minus), norm)
        loss = torch.mean(torch.add(torch.square(dplus), torch.square(torch.sub(dminus, margin))))
        return loss

    return TripletNetModel, tripletLoss, CustomLoss


# TrainTripletNetwork.py's main block: 2 epochs over 2 batches of 2 FashionMNIST-sized (1x28x28)
# triplets from a ``TensorDataset`` in place of ``FashionMNIST_t`` (barbar's ``Bar`` is the plain
# loader, unshuffled), lr 1e-3, numpy-seeded weights, the best model saved to a buffer instead of
# ``../models`` and loaded back (``LoadBestModel``), no plots. ``loss_type=0`` is the script's own
# ``lossFunction``, which hands the loop's image batches (not the embeddings) to ``tripletLoss``.
# Then TrainTripletNetworkFewShot.py's ``evaluate_test`` on a held-out set of 2 batches.
@pytest.mark.parametrize("loss_type", [0, 1])
def test_triplet_network_training(loss_type):
    def program(torch, log):
        Adam, ExponentialLR = torch.optim.Adam, torch.optim.lr_scheduler.ExponentialLR
        TripletNetModel, tripletLoss, CustomLoss = _triplet_module(torch)

        def triplets(seed, n):
            rs = np.random.RandomState(seed)
            return [torch.tensor(((rs.uniform(0, 1, (n, 1, 28, 28)) - 0.4914) / 0.2023).astype(np.float32))
                    for _ in range(3)]

        def lossFunction(dist_plus, dist_minus, embedded_anchor, embedded_positive, embedded_negative, loss_type):
            if loss_type == 0:
                loss = tripletLoss(anchor, positive, negative)
            elif loss_type == 1:
                loss = CustomLoss(dist_plus, dist_minus)
            return loss

        lr = 1e-3
        batch_size = 2
        epochs = 2
        gamma = 0.99
        save_model = True
        device = torch.device("cpu")
        train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*triplets(0, 4)),
                                                   batch_size=batch_size, shuffle=False)
        model = TripletNetModel(device)
        _np_init(torch, model, 11, scale=0.2)
        # Adam with CustomLoss (loss_type 1) is swapped for SGD: the distances are invariant under
        # a shift of the embeddings, so fc2's bias (and every always-active unit's bias before it)
        # has an exactly-zero gradient computed as rounding noise (torch's -7e-9 where tracegrad's
        # is 0), which Adam's g / sqrt(v) turns into full +-lr steps in a direction rounding picks
        optimizer = Adam(model.parameters(), lr=lr) if loss_type == 0 else torch.optim.SGD(model.parameters(), lr=0.05)
        scheduler = ExponentialLR(optimizer, gamma=gamma)
        losses = []; dists_plus = []; dists_minus = []
        cur_loss = np.inf
        saved = None
        for epoch in range(epochs):
            print('Epoch number: ' + str(epoch))
            dists_plus_temp = 0; dists_minus_temp = 0
            for batch_idx, (anchor, negative, positive) in enumerate(train_loader):
                anchor = anchor.to(device).requires_grad_()
                negative = negative.to(device).requires_grad_()
                positive = positive.to(device).requires_grad_()
                optimizer.zero_grad()
                # The order is flipped on purpse
                dist_plus, dist_minus, embedded_anchor, embedded_positive, embedded_negative = model(anchor, positive, negative)
                loss = lossFunction(dist_plus, dist_minus, embedded_anchor, embedded_positive, embedded_negative,
                                    loss_type=loss_type)
                loss.backward()
                optimizer.step()
                dists_plus_temp =+ np.mean(dist_plus.detach().cpu().numpy())
                dists_minus_temp =+ np.mean(dist_minus.detach().cpu().numpy())
                log("batch", [dist_plus, dist_minus, loss, loss.grad_fn, anchor.grad,
                              model.embeddingnet.fc1.weight.grad, model.embeddingnet.conv1.weight.grad])
            scheduler.step()
            losses.append(loss.item())
            dists_plus.append(dists_plus_temp); dists_minus.append(dists_minus_temp)
            cur_loss = min(losses[-1], cur_loss)
            if save_model and cur_loss == losses[-1]:
                saved = io.BytesIO()
                torch.save(model.state_dict(), saved)
            log("epoch", [losses, dists_plus, dists_minus, optimizer.param_groups[0]["lr"]])
        # LoadBestModel
        best = TripletNetModel(device)
        saved.seek(0)
        best.load_state_dict(torch.load(saved))
        best.eval()
        log("best", list(best.parameters()))
        # the embedding-level use of Losses.py's tripletLoss (its __main__ example's shapes)
        with torch.no_grad():
            _, _, ea, ep, en = best(*triplets(2, 2))
        log("triplet on embeddings", tripletLoss(ea, ep, en))

        # TrainTripletNetworkFewShot.py's evaluate_test (it reads the module-level ``model``)
        model = best
        Test_X_triplets = triplets(3, 4)

        def evaluate_test(Test_X_triplets, TripletTestSize, batch_size):
            model.eval()
            losses = []
            for batch_idx in range(TripletTestSize // batch_size):
                anchor = Test_X_triplets[0][batch_idx*batch_size:(batch_idx+1)*batch_size].to(device).requires_grad_()
                positive = Test_X_triplets[1][batch_idx*batch_size:(batch_idx+1)*batch_size].to(device).requires_grad_()
                negative = Test_X_triplets[2][batch_idx*batch_size:(batch_idx+1)*batch_size].to(device).requires_grad_()
                dist_plus, dist_minus, embedded_anchor, embedded_positive, embedded_negative = model(anchor, positive, negative)
                loss = CustomLoss(dist_plus, dist_minus)
                losses.append(loss.item())
                log("eval batch", [anchor.is_leaf, loss.requires_grad, loss.grad_fn])
            losses = np.mean(losses)
            return losses

        test_loss = evaluate_test(Test_X_triplets, np.int64(4), batch_size)
        print('Test Loss: ' + str(test_loss))
        log("test loss", test_loss)

    run_both(program, rtol=1e-4, atol=1e-5)
