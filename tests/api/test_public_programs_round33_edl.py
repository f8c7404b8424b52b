"""Round 33 (see ``test_public_programs_round33.py``): dougbrion/pytorch-classification-uncertainty,
evidential deep learning run eagerly with torch and with tracegrad (``parity.run_both``: every
logged value and everything printed must agree). A Dirichlet over the classes from ReLU
evidence; ``losses.py``'s KL divergence to the uniform Dirichlet through ``lgamma``/``digamma``,
the expected-MSE, log and digamma losses with a ``torch.min`` of two 0-d tensors as the
annealing coefficient; a LeNet; ``one_hot_embedding``'s ``torch.eye(10)[labels]``;
``train.py``'s ``train_model`` (train/val phases under ``torch.set_grad_enabled``, the evidence
statistics, ``running_corrects.double()``, a ``StepLR``, ``copy.deepcopy`` of the best
``state_dict``) and ``test.py``'s single-image uncertainty. In a file of its own: with DeepCCA's
shapes the round-33 file would take longer than a file may.
"""
import copy
import time

import numpy as np
import pytest
from parity import run_both

from tests.api.test_public_programs_round33 import _np_init

torch = pytest.importorskip("torch")


# ---- dougbrion/pytorch-classification-uncertainty ------------------------------------------------
def _edl_functions(torch):
    """helpers.py's ``one_hot_embedding``, lenet.py's ``LeNet`` (channels 20/50 -> 4/6, fc1 800 ->
    96 inputs and 500 -> 16 units) and losses.py: ``relu_evidence``, ``kl_divergence``,
    ``loglikelihood_loss`` and ``mse_loss`` as stored, ``edl_loss`` and the ``edl_*`` wrappers of
    the repository's later losses.py."""
    nn = torch.nn
    F = torch.nn.functional

    def get_device():
        use_cuda = torch.cuda.is_available()
        device = torch.device("cuda:0" if use_cuda else "cpu")
        return device

    def one_hot_embedding(labels, num_classes=10):
        # Convert to One Hot Encoding
        y = torch.eye(num_classes)
        return y[labels]

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
            self.conv2 = nn.Conv2d(4, 6, kernel_size=5)
            self.fc1 = nn.Linear(96, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2(x), 2))
            x = x.view(x.size()[0], -1)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return x

    def relu_evidence(y):
        return F.relu(y)

    def kl_divergence(alpha, num_classes, device=None):
        if not device:
            device = get_device()
        beta = torch.ones([1, num_classes], dtype=torch.float32, device=device)
        S_alpha = torch.sum(alpha, dim=1, keepdim=True)
        S_beta = torch.sum(beta, dim=1, keepdim=True)
        lnB = torch.lgamma(S_alpha) - \
            torch.sum(torch.lgamma(alpha), dim=1, keepdim=True)
        lnB_uni = torch.sum(torch.lgamma(beta), dim=1,
                            keepdim=True) - torch.lgamma(S_beta)

        dg0 = torch.digamma(S_alpha)
        dg1 = torch.digamma(alpha)

        kl = torch.sum((alpha - beta) * (dg1 - dg0), dim=1,
                       keepdim=True) + lnB + lnB_uni
        return kl

    def loglikelihood_loss(y, alpha, device=None):
        if not device:
            device = get_device()
        S = torch.sum(alpha, dim=1, keepdim=True)
        loglikelihood_err = torch.sum(
            (y - (alpha / S)) ** 2, dim=1, keepdim=True)
        loglikelihood_var = torch.sum(
            alpha * (S - alpha) / (S * S * (S + 1)), dim=1, keepdim=True)
        loglikelihood = loglikelihood_err + loglikelihood_var
        return loglikelihood

    def mse_loss(y, alpha, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        loglikelihood = loglikelihood_loss(y, alpha, device=device)
        annealing_coef = torch.min(torch.tensor(
            1.0, dtype=torch.float32), torch.tensor(epoch_num / annealing_step, dtype=torch.float32))
        kl_alpha = (alpha - 1) * (1 - y) + 1
        kl_div = annealing_coef * \
            kl_divergence(kl_alpha, num_classes, device=device)
        return loglikelihood + kl_div

    def edl_loss(func, y, alpha, epoch_num, num_classes, annealing_step, device=None):
        y = y.to(device)
        alpha = alpha.to(device)
        S = torch.sum(alpha, dim=1, keepdim=True)

        A = torch.sum(y * (func(S) - func(alpha)), dim=1, keepdim=True)

        annealing_coef = torch.min(
            torch.tensor(1.0, dtype=torch.float32),
            torch.tensor(epoch_num / annealing_step, dtype=torch.float32),
        )

        kl_alpha = (alpha - 1) * (1 - y) + 1
        kl_div = annealing_coef * kl_divergence(kl_alpha, num_classes, device=device)
        return A + kl_div

    def edl_mse_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(
            mse_loss(target, alpha, epoch_num, num_classes, annealing_step, device=device)
        )
        return loss

    def edl_log_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(
            edl_loss(
                torch.log, target, alpha, epoch_num, num_classes, annealing_step, device
            )
        )
        return loss

    def edl_digamma_loss(output, target, epoch_num, num_classes, annealing_step, device=None):
        if not device:
            device = get_device()
        evidence = relu_evidence(output)
        alpha = evidence + 1
        loss = torch.mean(
            edl_loss(
                torch.digamma, target, alpha, epoch_num, num_classes, annealing_step, device
            )
        )
        return loss

    return {"get_device": get_device, "one_hot_embedding": one_hot_embedding, "LeNet": LeNet,
            "relu_evidence": relu_evidence, "edl_mse_loss": edl_mse_loss, "edl_log_loss": edl_log_loss,
            "edl_digamma_loss": edl_digamma_loss}


def _edl_images(torch, seed, n):
    """``n`` 28x28 one-channel images in [0, 1] and labels 0-9 from a seeded numpy stream (MNIST's
    shape; the test keeps the repository's ten classes)."""
    rs = np.random.RandomState(seed)
    x = rs.uniform(0, 1, (n, 1, 28, 28)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(rs.randint(0, 10, n).astype(np.int64))


# train.py's ``train_model`` with ``uncertainty=True`` (as main.py calls it for the three EDL
# losses) at tiny sizes: 8 training and 4 validation images in batches of 4 (``shuffle=False``:
# the loader's order comes from torch's generator), 2 epochs, annealing_step 10 as train.py
# passes it, main.py's Adam(lr=1e-3, weight_decay=0.005) and StepLR(step_size=7, gamma=0.1); the
# per-batch statistics the loop only computes are logged. Then test.py's ``test_single_image``
# on one image (its PIL loading and matplotlib plot left out). The loop trains with
# ``edl_digamma_loss`` (main.py's ``--digamma``); the ``--log`` and ``--mse`` losses are checked on
# the trained model's outputs, with their gradients (a second and third training run would only
# repeat the loop).
def test_evidential_classification():
    def program(torch, log):
        fns = _edl_functions(torch)
        get_device, one_hot_embedding = fns["get_device"], fns["one_hot_embedding"]
        relu_evidence = fns["relu_evidence"]
        DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset

        def train_model(model, dataloaders, num_classes, criterion, optimizer, scheduler=None,
                        num_epochs=25, device=None, uncertainty=False):
            since = time.time()
            if not device:
                device = get_device()
            best_model_wts = copy.deepcopy(model.state_dict())
            best_acc = 0.0
            losses = {"loss": [], "phase": [], "epoch": []}
            accuracy = {"accuracy": [], "phase": [], "epoch": []}

            for epoch in range(num_epochs):
                print("Epoch {}/{}".format(epoch, num_epochs - 1))
                print("-" * 10)
                for phase in ["train", "val"]:
                    if phase == "train":
                        print("Training...")
                        model.train()  # Set model to training mode
                    else:
                        print("Validating...")
                        model.eval()   # Set model to evaluate mode

                    running_loss = 0.0
                    running_corrects = 0.0

                    for i, (inputs, labels) in enumerate(dataloaders[phase]):
                        inputs = inputs.to(device)
                        labels = labels.to(device)
                        optimizer.zero_grad()
                        with torch.set_grad_enabled(phase == "train"):
                            if uncertainty:
                                y = one_hot_embedding(labels)
                                y = y.to(device)
                                outputs = model(inputs)
                                _, preds = torch.max(outputs, 1)
                                loss = criterion(
                                    outputs, y.float(), epoch, num_classes, 10, device)

                                match = torch.reshape(torch.eq(
                                    preds, labels).float(), (-1, 1))
                                acc = torch.mean(match)
                                evidence = relu_evidence(outputs)
                                alpha = evidence + 1
                                u = num_classes / torch.sum(alpha, dim=1, keepdim=True)

                                total_evidence = torch.sum(evidence, 1, keepdim=True)
                                mean_evidence = torch.mean(total_evidence)
                                mean_evidence_succ = torch.sum(
                                    torch.sum(evidence, 1, keepdim=True) * match) / torch.sum(match + 1e-20)
                                mean_evidence_fail = torch.sum(
                                    torch.sum(evidence, 1, keepdim=True) * (1 - match)) / (
                                        torch.sum(torch.abs(1 - match)) + 1e-20)
                                log(phase, [outputs, loss, loss.requires_grad, acc, u, mean_evidence,
                                            mean_evidence_succ, mean_evidence_fail])
                            else:
                                outputs = model(inputs)
                                _, preds = torch.max(outputs, 1)
                                loss = criterion(outputs, labels)

                            if phase == "train":
                                loss.backward()
                                log("grads", [model.conv1.weight.grad, model.fc2.bias.grad])
                                optimizer.step()

                        running_loss += loss.item() * inputs.size(0)
                        running_corrects += torch.sum(preds == labels.data)

                    if scheduler is not None:
                        if phase == "train":
                            scheduler.step()

                    epoch_loss = running_loss / len(dataloaders[phase].dataset)
                    epoch_acc = running_corrects.double() / len(dataloaders[phase].dataset)

                    losses["loss"].append(epoch_loss)
                    losses["phase"].append(phase)
                    losses["epoch"].append(epoch)
                    accuracy["accuracy"].append(epoch_acc.item())
                    accuracy["epoch"].append(epoch)
                    accuracy["phase"].append(phase)
                    log("epoch", [epoch_acc, scheduler.get_last_lr()])

                    print("{} loss: {:.4f} acc: {:.4f}".format(
                        phase.capitalize(), epoch_loss, epoch_acc))

                    if phase == "val" and epoch_acc > best_acc:
                        best_acc = epoch_acc
                        best_model_wts = copy.deepcopy(model.state_dict())
                print()

            time_elapsed = time.time() - since
            del time_elapsed
            print("Best val Acc: {:4f}".format(best_acc))
            model.load_state_dict(best_model_wts)
            metrics = (losses, accuracy)
            return model, metrics

        def test_single_image(model, img_variable, uncertainty=False, device=None):
            num_classes = 10
            model.eval()
            if uncertainty:
                output = model(img_variable)
                evidence = relu_evidence(output)
                alpha = evidence + 1
                uncertainty = num_classes / torch.sum(alpha, dim=1, keepdim=True)
                _, preds = torch.max(output, 1)
                prob = alpha / torch.sum(alpha, dim=1, keepdim=True)
                output = output.flatten()
                prob = prob.flatten()
                preds = preds.flatten()
                print("Predict:", preds[0])
                print("Probs:", prob)
                print("Uncertainty:", uncertainty)
            return output, prob, preds, uncertainty

        xtr, ytr = _edl_images(torch, 0, 8)
        xva, yva = _edl_images(torch, 1, 4)
        dataloaders = {"train": DataLoader(TensorDataset(xtr, ytr), batch_size=4, shuffle=False),
                       "val": DataLoader(TensorDataset(xva, yva), batch_size=4, shuffle=False)}
        num_classes = 10
        model = _np_init(torch, fns["LeNet"](), 3, scale=0.3)
        criterion = fns["edl_digamma_loss"]
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.005)
        exp_lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
        device = get_device()
        model, metrics = train_model(model, dataloaders, num_classes, criterion, optimizer,
                                     scheduler=exp_lr_scheduler, num_epochs=2, device=device,
                                     uncertainty=True)
        log("metrics", metrics)
        state = {"epoch": 2, "model_state_dict": model.state_dict(),
                 "optimizer_state_dict": optimizer.state_dict()}
        log("saved", [state["model_state_dict"], state["optimizer_state_dict"]["state"][0]])
        with torch.no_grad():
            log("single", test_single_image(model, xva[:1], uncertainty=True, device=device))
        outputs = model(xtr[:4]).detach().requires_grad_()
        y = one_hot_embedding(ytr[:4]).float()
        for name in ("edl_log_loss", "edl_mse_loss", "edl_digamma_loss"):
            for epoch in (0, 4, 12):   # annealing coefficient 0, 0.4 and min(1, 1.2)
                loss = fns[name](outputs, y, epoch, num_classes, 10, device)
                log(name, [loss, torch.autograd.grad(loss, outputs)[0]])

    run_both(program, rtol=1e-4, atol=1e-6)
