"""A thirtieth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round29.py``, from repositories no earlier round used:

- bentrevett/pytorch-sentiment-analysis: ``2_lstm.ipynb``'s packed bidirectional LSTM
  classifier (``pack_padded_sequence(..., batch_first=True, enforce_sorted=False)`` over
  unsorted lengths, ``pad_packed_sequence`` of the packed output, the final hidden states of
  both directions ``cat([hidden[-1], hidden[-2]])``, ``model.apply(initialize_weights)`` with
  ``xavier_normal_``/``orthogonal_``/``zeros_`` by parameter name, pretrained vectors assigned to
  ``embedding.weight.data``, a ``functools.partial`` collate through ``pad_sequence`` and
  ``torch.stack`` of 0-dim tensors, the train/evaluate loops with ``get_accuracy``, the best
  model saved and reloaded, ``predict_sentiment``);
- gokulrameshd/ERA4_assignment_9: ``train_standard.py``'s resumable training run with
  ``train_test_modules.py``'s ``train_one_epoch_imagenet`` (``channels_last`` inputs and model,
  ``torch.amp.GradScaler(device="cpu")``: ``scale``/``unscale_``/``clip_grad_norm_``/``step``/
  ``update``, CPU ``autocast`` in float16 as ``is_bf16_supported()`` is False, the per-batch
  ``OneCycleLR`` step guarded by ``scheduler._step_count < scheduler.total_steps``, ``ModelEMA``'s
  in-place ``mul_``/``add_(alpha=)`` average), ``validate_imagenet`` under ``@torch.no_grad()``,
  ``save_checkpoint``'s dict of model/optimizer/scheduler/scaler state dicts and history, and the
  auto-resume through ``load_checkpoint(map_location=)`` after an interrupted run.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import functools
import io
import os
import tempfile

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


def _sentiment_lstm_class(torch, log=None):
    """2_lstm.ipynb's ``LSTM`` classifier, unchanged but for ``log`` of the unpacked output (when
    given; ``nn`` is looked up on the program's ``torch``)."""
    nn = torch.nn

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
            if log is not None:
                log("unpacked", [output, output_length])
            if self.lstm.bidirectional:
                hidden = self.dropout(torch.cat([hidden[-1], hidden[-2]], dim=-1))
            else:
                hidden = self.dropout(hidden[-1])
            prediction = self.fc(hidden)
            return prediction

    return LSTM


# 2_lstm.ipynb at tiny sizes: 9 reviews (6 train, 3 valid; the valid set is also the test set;
# every batch pads to 4 tokens so the packed shapes repeat), embedding 10, hidden 5, one
# bidirectional layer (the notebook's two double the backward's compiles), batch 3, 2 epochs.
# Deviations: dropout_rate is 0 (dropout masks come from each library's own generator), the
# DataLoader does not shuffle (its permutation does too), the orthogonal/xavier-normal weights
# initialize_weights draws are checked for orthogonality and then replaced by numpy values (the
# biases stay zeros_), the FastText vectors are numpy values, and the best model is saved to a
# BytesIO.
def test_sentiment_packed_bilstm():
    def program(torch, log):
        print = printer(log)
        nn, optim = torch.nn, torch.optim
        tokenizer, vocab, train_data, valid_data = _sentiment_data(torch)
        test_data = valid_data
        pad_index = vocab["<pad>"]

        LSTM = _sentiment_lstm_class(torch, log)

        vocab_size = len(vocab)
        embedding_dim = 10
        hidden_dim = 5
        output_dim = 2
        n_layers = 1
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
                log("grads", [model.embedding.weight.grad, model.lstm.weight_hh_l0_reverse.grad,
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


# ---- gokulrameshd/ERA4_assignment_9 --------------------------------------------------------------
class _Tqdm:
    """tqdm stand-in: iterates, ignores the bar's settings."""

    def __init__(self, it, **kw):
        self._it = it

    def __iter__(self):
        return iter(self._it)

    def set_postfix(self, *a, **k):
        pass


class _Clock:
    """``time`` stand-in: a clock that never moves (the printed epoch times are then equal)."""

    @staticmethod
    def time():
        return 0.0


def _era4_modules(torch):
    """train_test_modules.py's ``mixup_criterion``, ``train_one_epoch_imagenet``,
    ``validate_imagenet``, ``save_checkpoint``, ``load_checkpoint`` and ``ModelEMA``, and
    hyper_parameter_modules.py's ``create_onecycle_scheduler``, unchanged but for ``tqdm`` and
    ``time`` (stand-ins) and ``autocast``/``GradScaler``/``OneCycleLR``/``copy`` looked up here."""
    import copy
    autocast, GradScaler = torch.autocast, torch.amp.GradScaler
    OneCycleLR = torch.optim.lr_scheduler.OneCycleLR
    tqdm, time = _Tqdm, _Clock

    def mixup_criterion(criterion, pred, y_a, y_b, lam):
        return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

    def train_one_epoch_imagenet(model, dataloader, optimizer, criterion, device, scheduler=None, scaler=None,
                                 mixup_fn=None, enable_last_channel=False, ema=None, num_classes=1000):
        model.train()
        total_loss, correct, total = 0.0, 0, 0
        start_time = time.time()
        device_type = "cuda" if "cuda" in str(device) else "cpu"
        if scaler is None:
            scaler = GradScaler(device=device_type)
        pbar = tqdm(enumerate(dataloader), total=len(dataloader), desc="\033[92m🟢 Training\033[0m", leave=False,
                    ncols=120)
        for batch_idx, (inputs, labels) in pbar:
            if enable_last_channel:
                inputs = inputs.to(device, non_blocking=True).to(memory_format=torch.channels_last)
            else:
                inputs = inputs.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with autocast(device_type=device_type,
                          dtype=(torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)):
                if mixup_fn is not None:
                    mixed = mixup_fn(inputs, labels)
                    if isinstance(mixed, tuple) and len(mixed) == 4:
                        inputs, y_a, y_b, lam = mixed
                        outputs = model(inputs)
                        loss = mixup_criterion(criterion, outputs, y_a, y_b, lam)
                    else:
                        inputs, targets = mixed
                        outputs = model(inputs)
                        loss = criterion(outputs, targets)
                else:
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            if scheduler and isinstance(scheduler, torch.optim.lr_scheduler.OneCycleLR):
                if scheduler._step_count < scheduler.total_steps:
                    scheduler.step()
            if ema is not None:
                with torch.no_grad():
                    for ema_p, model_p in zip(ema.ema.parameters(), model.parameters()):
                        if model_p.dtype.is_floating_point:
                            ema_p.mul_(ema.decay).add_(model_p, alpha=1 - ema.decay)
            total_loss += loss.item() * inputs.size(0)
            _, preds = outputs.max(1)
            correct += int(preds.eq(labels).sum().item())
            total += labels.size(0)
            if (batch_idx + 1) % 20 == 0 or (batch_idx + 1) == len(dataloader):
                avg_loss = total_loss / total
                acc = 100.0 * correct / total
                mem_alloc = (f"{torch.cuda.memory_allocated(device) / 1e9:.2f} GB"
                             if torch.cuda.is_available() else "N/A")
                elapsed = time.time() - start_time
                iters_done = batch_idx + 1
                eta = (len(dataloader) - iters_done) * (elapsed / max(1, iters_done))
                pbar.set_postfix({"Loss": f"{avg_loss:.4f}", "Acc": f"{acc:.2f}%", "Mem": {mem_alloc},
                                  "ETA": f"{eta/60:.1f}m"})
        if scheduler and not isinstance(scheduler, torch.optim.lr_scheduler.OneCycleLR):
            scheduler.step()
        return {"loss": total_loss / total, "acc": correct / total, "scaler": scaler,
                "time": (time.time() - start_time) / 60}

    @torch.no_grad()
    def validate_imagenet(model, dataloader, criterion, device, num_classes=1000):
        model.eval()
        total_loss, correct, total = 0.0, 0, 0
        start_time = time.time()
        device_type = "cuda" if "cuda" in str(device) else "cpu"
        pbar = tqdm(enumerate(dataloader), total=len(dataloader), desc="\033[94m🔵 Validating\033[0m", leave=False,
                    ncols=120)
        for batch_idx, (inputs, labels) in pbar:
            inputs = inputs.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with autocast(device_type=device_type,
                          dtype=(torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16),):
                outputs = model(inputs)
                loss = criterion(outputs, labels)
            total_loss += loss.item() * inputs.size(0)
            _, preds = outputs.max(1)
            correct += int(preds.eq(labels).sum().item())
            total += labels.size(0)
        return {"loss": total_loss / total, "acc": correct / total, "time": (time.time() - start_time) / 60}

    def save_checkpoint(epoch, model, optimizer, scheduler, scaler, best_acc, history, path="checkpoint.pth"):
        state = {
            "epoch": epoch,
            "model_state": model.state_dict(),
            "optimizer_state": optimizer.state_dict(),
            "scheduler_state": scheduler.state_dict() if scheduler else None,
            "scaler_state": scaler.state_dict() if scaler else None,
            "best_acc": best_acc,
            "history": history,
        }
        torch.save(state, path)
        print(f"✅ Checkpoint saved at {os.path.basename(path)} (epoch {epoch})")

    def load_checkpoint(path, model, optimizer=None, scheduler=None, scaler=None, device="cuda"):
        if not os.path.exists(path):
            print(f"⚠️ No checkpoint found at {path}")
            return 0, 0.0
        checkpoint = torch.load(path, map_location=device)
        model.load_state_dict(checkpoint["model_state"])
        print(f"✅ Model weights loaded from {os.path.basename(path)}")
        if optimizer and "optimizer_state" in checkpoint and checkpoint["optimizer_state"]:
            optimizer.load_state_dict(checkpoint["optimizer_state"])
            print("✅ Optimizer state restored")
        if scheduler and "scheduler_state" in checkpoint and checkpoint["scheduler_state"]:
            scheduler.load_state_dict(checkpoint["scheduler_state"])
            print("✅ Scheduler state restored")
        if scaler and "scaler_state" in checkpoint and checkpoint["scaler_state"]:
            scaler.load_state_dict(checkpoint["scaler_state"])
            print("✅ GradScaler state restored")
        start_epoch = checkpoint.get("epoch", 0) + 1
        best_acc = checkpoint.get("best_acc", 0.0)
        history = checkpoint.get("history", {"train_loss": [], "val_loss": [], "train_acc": [], "val_acc": [],
                                             "lr": [], "mom": [], "train_time": [], "val_time": [],
                                             "time_lapsed": [], "total_time_epoch": []})
        print(f"🔁 Resuming from epoch {start_epoch} (best acc: {best_acc:.2f}%)")
        return start_epoch, best_acc, history

    class ModelEMA:
        """Maintains an exponential moving average (EMA) of model weights."""
        def __init__(self, model, decay=0.999, model_fn=None):
            self.decay = decay
            device = next(model.parameters()).device
            if model_fn is not None:
                self.ema = model_fn().to(device)
            else:
                self.ema = copy.deepcopy(model).to(device)
            self.ema.eval()
            for p in self.ema.parameters():
                p.requires_grad_(False)

    def create_onecycle_scheduler(optimizer, max_lr, train_loader_len, epochs,
                                  pct_start=0.15, div_factor=25.0, final_div_factor=1e4):
        """Return a configured OneCycleLR scheduler."""
        scheduler = OneCycleLR(optimizer, max_lr=max_lr, steps_per_epoch=train_loader_len, epochs=epochs,
                               pct_start=pct_start, anneal_strategy="cos")
        return scheduler

    return (train_one_epoch_imagenet, validate_imagenet, save_checkpoint, load_checkpoint, ModelEMA,
            create_onecycle_scheduler)


def _era4_create_model(torch, num_classes):
    """model.py's ``create_model`` (a torchvision ResNet) in small: conv, batch norm, ReLU, global
    pool and a linear head, with numpy weights (the EMA's ``model_fn`` builds the same start)."""
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, num_classes))
    rs = np.random.RandomState(3)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    return model


# train_standard.py's main() at tiny sizes: 12 one-channel 4x4 images of 3 classes (train 8 in
# batches of 4, val 4), NUM_EPOCHS 3, SGD/OneCycleLR max_lr 0.1 (its hard-coded use_lr),
# ENABLE_EMA and ENABLE_CHANNEL_LAST on, USE_MIXUP and the LR finder off (timm's Mixup and the
# finder are other modules), rank 0 without DDP. The run is interrupted after epoch 1 and
# main() called again: the auto-resume finds last_weights.pth and continues to epoch 3 (the
# first run's model, optimizer, scheduler and scaler are thrown away). Deviations: a tiny
# conv net stands in for ResNet-34 (``_era4_create_model``); the ``torch.compile`` try block,
# S3 uploads, CSV/TXT logs and plots are left out; the checkpoint paths are in a temporary
# directory (printed by base name); ``time`` is a frozen clock.
def test_era4_resumable_onecycle_training():
    def program(torch, log):
        print = printer(log)
        nn, optim = torch.nn, torch.optim
        (train_one_epoch_imagenet, validate_imagenet, save_checkpoint, load_checkpoint, ModelEMA,
         create_onecycle_scheduler) = _era4_modules(torch)
        ROOT_DIR = tempfile.mkdtemp()
        SAVE_BEST = os.path.join(ROOT_DIR, "best_weights.pth")
        SAVE_LAST = os.path.join(ROOT_DIR, "last_weights.pth")
        NUM_EPOCHS, DEVICE, SAVE_FREQ_LAST = 3, "cpu", 1
        ENABLE_EMA, ENABLE_CHANNEL_LAST = True, True
        rs = np.random.RandomState(8)
        images = torch.tensor(rs.standard_normal((12, 1, 4, 4)).astype(np.float32))
        labels = torch.tensor(rs.randint(0, 3, 12))
        ds = torch.utils.data.TensorDataset
        train_loader = torch.utils.data.DataLoader(ds(images[:8], labels[:8]), batch_size=4)
        val_loader = torch.utils.data.DataLoader(ds(images[8:], labels[8:]), batch_size=4)
        num_classes = 3

        def main(stop_after=None):
            model = _era4_create_model(torch, num_classes).to(DEVICE)
            if ENABLE_CHANNEL_LAST:
                model = model.to(memory_format=torch.channels_last)
            if ENABLE_EMA:
                ema = ModelEMA(model, decay=0.9, model_fn=lambda: _era4_create_model(torch, num_classes))
            else:
                ema = None
            criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
            optimizer = optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=1e-4)
            use_lr = 0.1
            mixup_fn = None
            print(f"Final Selected LR → {use_lr:.6f}")
            scheduler = create_onecycle_scheduler(optimizer=optimizer, max_lr=use_lr,
                                                  train_loader_len=len(train_loader), epochs=NUM_EPOCHS)
            device_type = "cuda" if "cuda" in str(DEVICE) else "cpu"
            scaler = torch.amp.GradScaler(device=device_type)
            if os.path.exists(SAVE_LAST):
                start_epoch, best_acc, history = load_checkpoint(SAVE_LAST, model, optimizer, scheduler, scaler,
                                                                 device=DEVICE)
            else:
                start_epoch, best_acc, history = 0, 0.0, {
                    "train_loss": [], "val_loss": [], "train_acc": [], "val_acc": [], "lr": [], "mom": [],
                    "train_time": [], "val_time": [], "time_lapsed": [], "total_time_epoch": [],
                    "total_time_train": []}
            print(f"🚀 Starting new training run from epoch {start_epoch}.")
            log("resumed", [scheduler.last_epoch, scheduler._step_count, scaler.get_scale(),
                            optimizer.param_groups[0]["lr"], optimizer.param_groups[0]["momentum"]])
            for epoch in range(start_epoch, NUM_EPOCHS):
                if stop_after is not None and epoch == stop_after:
                    return model
                train_results = train_one_epoch_imagenet(model, train_loader, optimizer, criterion, DEVICE,
                                                         scheduler, scaler, mixup_fn=mixup_fn,
                                                         enable_last_channel=ENABLE_CHANNEL_LAST, ema=ema,
                                                         num_classes=num_classes)
                train_loss, train_acc = train_results["loss"], train_results["acc"]
                scaler, train_time = train_results["scaler"], train_results["time"]
                val_model = ema.ema if ema is not None else model
                val_results = validate_imagenet(val_model, val_loader, criterion, DEVICE, num_classes=num_classes)
                val_loss, val_acc = val_results["loss"], val_results["acc"]
                if val_acc > best_acc:
                    best_acc = val_acc
                    print(f"New Best Accuracy: {best_acc*100:.2f}% (saved as best_weights.pth)\033[0m")
                    torch.save(model.state_dict(), SAVE_BEST)
                if (epoch + 1) % SAVE_FREQ_LAST == 0 or (epoch + 1) == NUM_EPOCHS:
                    print(f"Saving 'last' checkpoint at epoch {epoch+1}...")
                    save_checkpoint(epoch, model, optimizer, scheduler, scaler, best_acc, history, path=SAVE_LAST)
                current_lr = scheduler.get_last_lr()[0] if scheduler else use_lr
                current_mom = optimizer.param_groups[0].get("momentum", None)
                history["train_loss"].append(train_loss)
                history["val_loss"].append(val_loss)
                history["train_acc"].append(train_acc)
                history["val_acc"].append(val_acc)
                history["lr"].append(current_lr)
                history["mom"].append(current_mom)
                print(f"[Epoch {epoch+1:03}/{NUM_EPOCHS}] | ⏱️ {train_time:.2f}m | "
                      f"LR: {current_lr:.6f} | Train Acc: {train_acc*100:.2f}% | Val Acc: {val_acc*100:.2f}%")
                log("epoch", [train_loss, val_loss, current_lr, current_mom, scaler.get_scale()])
            log("ema", list(ema.ema.parameters()))
            return model

        first = main(stop_after=1)
        log("interrupted", first.state_dict())
        model = main()
        log("final", model.state_dict())
        log("history", torch.load(SAVE_LAST)["history"])
        best = _era4_create_model(torch, num_classes)
        best.load_state_dict(torch.load(SAVE_BEST))
        log("best_is_channels_last", model[0].weight.is_contiguous(memory_format=torch.channels_last))

    run_both(program)
