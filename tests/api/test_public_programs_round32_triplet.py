"""Round-32 public programs, continued (``test_public_programs_round32.py`` has the round's notes):
danielt17/Triplet-network-few-shot-learning run eagerly with torch and with tracegrad
(``parity.run_both``): ``TripletNetwork.py``'s embedding net shared by three branches with
``F.pairwise_distance`` distances, ``Losses.py``'s ``nn.TripletMarginLoss`` wrapper and the
paper's softmax-ratio ``CustomLoss``, trained as ``TrainTripletNetwork.py`` does, then
``TrainTripletNetworkFewShot.py``'s ``evaluate_test``. Dropout probabilities are 0 (the two
libraries' masks come from different generators).
"""
import io

import numpy as np
import pytest
from parity import run_both

from tests.api.test_public_programs_round32 import _np_init

torch = pytest.importorskip("torch")


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
