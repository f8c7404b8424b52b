"""Train a small CNN on scikit-learn's handwritten digits, written as plain PyTorch code.

    python -m tracegrad.examples.digits [--epochs 15] [--lr 0.01] [--batch-size 64] [--seed 0] [--save PATH]

The data is scikit-learn's bundled ``load_digits``: 1,797 real 8x8 grey-scale images of the
digits 0-9 (no download), split 80/20 with ``train_test_split(test_size=0.2, random_state=0)``.
The program trains, prints the test accuracy, saves the trained ``state_dict`` with
``torch.save`` (by default to ``digits_cnn.safetensors`` in the system temp directory, so
running it leaves nothing in the current directory), loads it into a fresh model and checks
that the accuracy is unchanged.

Everything below reads as torch code because it is: ``import tracegrad as torch`` is the only
change from a PyTorch script.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm.auto import tqdm   # widgets in Jupyter, text bars in a terminal

import tracegrad as torch
from tracegrad import nn, optim
from tracegrad.utils.data import DataLoader, TensorDataset

DEFAULT_SAVE = os.path.join(tempfile.gettempdir(), "digits_cnn.safetensors")


class DigitsCNN(nn.Module):
    """Two conv blocks and a linear classifier: (N, 1, 8, 8) images -> (N, 10) logits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # -> 16 x 4 x 4
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # -> 32 x 2 x 2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def digits_datasets():
    """The train and test splits as TensorDatasets of (image (1, 8, 8) float32 in [0, 1], label int64)."""
    digits = load_digits()
    images = digits.images.astype(np.float32) / 16.0  # pixel values are 0..16
    x_train, x_test, y_train, y_test = train_test_split(images, digits.target, test_size=0.2, random_state=0)

    def as_dataset(x, y):
        return TensorDataset(torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y.astype(np.int64)))
    return as_dataset(x_train, y_train), as_dataset(x_test, y_test)


@torch.no_grad()
def evaluate(model, loader):
    """Fraction of correctly classified samples."""
    model.eval()
    correct = total = 0
    for images, labels in loader:
        correct += (model(images).argmax(dim=1) == labels).sum().item()
        total += labels.numel()
    return correct / total


def train(epochs=15, lr=0.01, batch_size=64, seed=0, save=DEFAULT_SAVE, progress=True, compile=False):
    """Train, evaluate, save, reload and re-evaluate. Returns a dict with the trained ``model``,
    ``test_accuracy``, ``reloaded_accuracy``, ``path`` (None when ``save`` is None) and ``seconds``.
    ``compile=True`` runs each training step (forward, backward, Adam) as one XLA program
    through ``tracegrad.compile``: the same code, the same results."""
    start = time.perf_counter()
    torch.manual_seed(seed)  # fixes the weight init
    train_set, test_set = digits_datasets()
    # A seeded generator makes the shuffling order reproducible too. drop_last keeps every
    # batch the same shape: each new shape costs a one-off compilation of the ops it runs.
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True,
                              generator=torch.Generator().manual_seed(seed))
    test_loader = DataLoader(test_set, batch_size=len(test_set))  # one batch of 360

    model = DigitsCNN()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=lr)

    def train_step(images, labels):
        logits = model(images)
        loss = loss_fn(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, logits
    if compile:
        train_step = torch.compile(train_step)

    for epoch in range(epochs):
        model.train()
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{epochs}", disable=not progress, leave=False)
        seen = correct = 0
        running_loss = 0.0
        for images, labels in bar:
            loss, logits = train_step(images, labels)

            # .item() waits for the result; once per step is cheap at this size
            running_loss += loss.item() * labels.numel()
            correct += (logits.argmax(dim=1) == labels).sum().item()
            seen += labels.numel()
            # refresh=False: the bar redraws at its own pace, with its step count (a forced redraw
            # here, before the loop's iterator advanced the count it shows, printed 0/22 each time)
            bar.set_postfix(loss=f"{running_loss / seen:.4f}", acc=f"{correct / seen:.3f}", refresh=False)
        if progress:
            tqdm.write(f"epoch {epoch + 1}/{epochs}: train loss {running_loss / seen:.4f}, "
                       f"train acc {correct / seen:.3f}, test acc {evaluate(model, test_loader):.4f}")

    result = {"model": model, "test_accuracy": evaluate(model, test_loader), "path": None,
              "reloaded_accuracy": None}
    if save is not None:
        # a state_dict is an OrderedDict of tensors; torch.save writes it atomically, no pickle
        torch.save(model.state_dict(), save)
        fresh = DigitsCNN()
        fresh.load_state_dict(torch.load(save))
        result.update(path=save, reloaded_accuracy=evaluate(fresh, test_loader))
    result["seconds"] = time.perf_counter() - start
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train a small CNN on scikit-learn's 8x8 digits with tracegrad.")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default=DEFAULT_SAVE, help=f"where to save the state_dict (default {DEFAULT_SAVE})")
    parser.add_argument("--compile", action="store_true",
                        help="run each training step as one XLA program (tracegrad.compile)")
    args = parser.parse_args(argv)

    result = train(args.epochs, args.lr, args.batch_size, args.seed, args.save, compile=args.compile)
    print(f"test accuracy: {result['test_accuracy']:.4f} ({result['seconds']:.1f} s)")
    print(f"saved state_dict to {result['path']}; reloaded model's test accuracy: "
          f"{result['reloaded_accuracy']:.4f}")
    if result["reloaded_accuracy"] != result["test_accuracy"]:
        raise SystemExit("error: the reloaded model does not reproduce the trained model's accuracy")


if __name__ == "__main__":
    main()
