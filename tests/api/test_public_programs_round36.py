"""A thirty-sixth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories
no earlier round used, of kinds earlier rounds did not cover:

- kuc2477/pytorch-wgan-gp (``model.py``, ``train.py``, ``utils.py``): a WGAN-GP whose critic
  loss adds a gradient penalty from ``autograd.grad(c, interpolated, grad_outputs=...,
  create_graph=True, retain_graph=True)`` on a ``Variable(..., requires_grad=True)`` built from
  ``.data``; the penalty's ``gradients.norm(2, dim=1)`` of a 4-d gradient; a strided-conv critic
  and a ``BatchNorm2d``/``ConvTranspose2d`` generator ending in ``F.tanh``; two Adams with
  ``betas``/``weight_decay``; its ``train`` loop (many critic steps per generator step, the
  checkpoint ``save_checkpoint``/``load_checkpoint`` of ``torch.save``/``torch.load``);
- e-hulten/real-nvp-2d at two commits: ``model.py``/``train.py`` of 094c785 (a RealNVP whose
  loss is ``torch.distributions.MultivariateNormal.log_prob``, masks multiplied in, a hand-made
  batch norm keeping its batch statistics as plain tensor attributes, ``x.new_zeros`` summed in
  place with a 0-d log-determinant, ``forward`` then ``reverse``, the ``continue_training``
  checkpoint of model and optimizer state) and ``rnvp.py``/``batchnorm.py``/``utils.py``/
  ``train_mnist.py`` of 106af8f (boolean-mask coupling that writes ``x[:, ~mask] = ...`` into its
  input in place, ``Linear`` sizes that are numpy integers from ``mask.sum().numpy()``, the
  unbiased ``x.var(dim=0)``, eval-mode batch statistics set on first use with a print,
  ``np.mean``/``np.std`` of a list of 0-d tensors, ``train.float()`` returning the same tensor
  so the model writes into the training set);
- keon/seq2seq (``model.py``, ``train.py``): a GRU encoder-decoder with Bahdanau-style
  attention (a bidirectional 2-layer ``nn.GRU`` whose directions are summed, ``repeat``/``bmm``
  energies, an in-place ``nn.Dropout``), teacher forcing drawn from Python's ``random``, greedy
  feedback through ``output.data.max(1)[1]``, ``F.nll_loss(..., ignore_index=pad)`` over
  ``output[1:].view(-1, V)``, ``clip_grad_norm_``, ``print(seq2seq)``;
- marblet/vgae (``models/vgae.py``, ``models/gcn.py``, ``utils/data_utils.py``, ``train.py``):
  a variational graph autoencoder on the karate club graph, its GCN layers multiplying by a
  sparse COO adjacency built with the legacy ``torch.sparse.FloatTensor(indices, values)``
  through ``torch.spmm``, degrees from ``torch.bincount``, ``deg_inv_sqrt[... == inf] = 0``,
  negative edges from one-argument ``torch.where``, ``adj.to_dense()``,
  ``binary_cross_entropy_with_logits(pos_weight=)``, the ``LinkPredTrainer`` loop and its ROC/AP
  scores from scikit-learn.

The WGAN-GP, seq2seq and VGAE programs are in ``test_public_programs_round36_wgan.py``,
``..._seq2seq.py`` and ``..._vgae.py`` (one file each for the time a file may take).

Changes to the programs, the same on both sides: random draws (``torch.rand``/``randn``/
``randn_like``) come from seeded numpy streams and DataLoaders do not shuffle (random streams
differ by design), the RealNVPs' Adam has ``eps=1e-4`` (see their tests), parameters are overwritten from numpy after construction, dropout
probabilities are 0, ``.cuda()`` calls are left out (CPU), sizes are tiny, plots, ``tqdm`` bars
and visdom calls are left out, and the data are a seeded two-moons set and a tiny token task in
place of downloads (the karate club graph ships with networkx; networkx 3 renamed
``to_scipy_sparse_matrix``/``to_numpy_matrix`` to ``..._array``, unweighted here as the old
graph was). The WGAN-GP's ``g_loss.data[0]`` (torch 0.3) raises on a 0-d tensor today: it is
logged as that error and read with ``.item()``.
"""
import math
import os
import tempfile

import numpy as np
import pytest
from parity import init_params, run_both

torch = pytest.importorskip("torch")


# ---- e-hulten/real-nvp-2d at 094c785: model.py and train.py ---------------------------------------
def _rnvp_classes(torch):
    nn = torch.nn

    class RealNVP(nn.Module):
        def __init__(self, data_dim, n_c_layers=8, n_hidden=100, hidden_dims=2):
            super(RealNVP, self).__init__()
            assert (
                n_c_layers > 1
            ), "Need more than one coupling layer to transform all dimensions of x."

            self.base = torch.distributions.MultivariateNormal(
                torch.zeros(data_dim), torch.eye(data_dim)
            )

            self.mask = torch.arange(data_dim) % 2
            self.coupling_layers = []
            for _ in range(n_c_layers):
                self.coupling_layers.append(
                    CouplingLayer(data_dim, self.mask, n_hidden=100, hidden_dims=2)
                )
                self.coupling_layers.append(BatchNorm(data_dim))
                self.mask = 1 - self.mask

            self.model = nn.Sequential(*self.coupling_layers)

        def forward(self, x):
            sum_log_det_J = x.new_zeros(x.size(0))

            for i in range(len(self.coupling_layers)):
                x, log_det_J = self.coupling_layers[i](x)
                sum_log_det_J += log_det_J

            return x, sum_log_det_J

        def reverse(self, x):
            sum_log_det_J = x.new_zeros(x.size(0))
            for i in reversed(range(len(self.coupling_layers))):
                coupling_layer = self.coupling_layers[i]
                x, log_det_J = coupling_layer.reverse(x)
                sum_log_det_J += log_det_J

            return x, sum_log_det_J

    class CouplingLayer(nn.Module):
        def __init__(self, data_dim, mask, n_hidden=100, hidden_dims=2):
            super(CouplingLayer, self).__init__()
            self.mask = mask
            self.scale = ScaleTranslate(data_dim, n_hidden, hidden_dims)
            self.translate = ScaleTranslate(data_dim, n_hidden, hidden_dims)

        def forward(self, x):
            x_m = x * self.mask

            s = self.scale(x_m)
            t = self.translate(x_m)
            s = s * (1 - self.mask)
            t = t * (1 - self.mask)

            z = x_m + (1.0 - self.mask) * x * torch.exp(s) + t
            log_det_J = torch.sum(s, 1)
            return z, log_det_J

        def reverse(self, x):
            x_m = x * self.mask
            s = self.scale(x_m)
            t = self.translate(x_m)
            z = x_m + (1.0 - self.mask) * (x - t) * torch.exp(-s)
            log_det_J = -torch.sum(s, 1)
            return z, log_det_J

    class ScaleTranslate(nn.Module):
        def __init__(self, data_dim, n_hidden=256, hidden_dims=2):
            super(ScaleTranslate, self).__init__()
            self.layers = []

            self.layers.append(nn.Linear(data_dim, n_hidden))
            self.layers.append(nn.ReLU())
            for _ in range(1, hidden_dims):
                self.layers.append(nn.Linear(n_hidden, n_hidden))
                self.layers.append(nn.ReLU())
            self.layers.append(nn.Linear(n_hidden, data_dim))

            self.model = nn.Sequential(*self.layers)

        def forward(self, x):
            return self.model(x)

    class BatchNorm(nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.gamma = nn.Parameter(torch.zeros(1, dim).normal_(0, 0.05))
            self.beta = nn.Parameter(torch.zeros(1, dim).normal_(0, 0.05))
            self.running_mean = torch.zeros(1, dim)
            self.running_var = torch.ones(1, dim)

        def forward(self, x):
            m = x.mean(dim=0)
            v = torch.mean((x - m) ** 2, axis=0) + self.eps  # x.var(dim=0) + self.eps
            self.running_mean = m
            self.running_var = v
            x_hat = (x - m) / torch.sqrt(v)
            x_hat = x_hat * torch.exp(self.gamma) + self.beta
            log_det = torch.sum(self.gamma) - 0.5 * torch.sum(torch.log(v))
            return x_hat, log_det

        def reverse(self, x):
            m = self.running_mean
            v = self.running_var

            x_hat = (x - self.beta) * torch.exp(-self.gamma) * torch.sqrt(v) + m
            log_det = torch.sum(-self.gamma + 0.5 * torch.log(v))
            return x_hat, log_det

    class NegLogLik(nn.Module):
        def __init__(self, model):
            super(NegLogLik, self).__init__()
            self.base = model.base

        def __call__(self, z, sum_log_det_J):
            log_p = self.base.log_prob(z)
            return -(log_p + sum_log_det_J).mean()

    return RealNVP, NegLogLik


def _two_moons(n, seed):
    """A seeded two-moons set (sklearn's ``make_moons`` shape, numpy-drawn) in float32."""
    rs = np.random.RandomState(seed)
    t = rs.uniform(0, np.pi, n)
    upper = rs.uniform(size=n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return (np.stack([x, y], 1) + 0.05 * rs.standard_normal((n, 2))).astype(np.float32)


# train.py at 4 coupling layers (each ScaleTranslate keeps its hard-coded 100 hidden units),
# 8 points in one batch (one shape everywhere: each new shape compiles), 3 epochs, the epoch-10
# print every epoch, the plot's forward and reverse passes logged, then the continue_training
# branch: the checkpoint of model and optimizer loaded into a fresh pair that trains one more
# epoch. Adam's ``eps`` is 1e-4 (not 1e-8): the translate nets' biases shift every point of a
# coupling's output alike and the batch norm after it removes that shift, so their gradients
# are float32 rounding noise (1e-9, of either sign, different in torch's and XLA's kernels) that
# Adam at eps=1e-8 would scale up to lr-sized steps: the two runs would part after one step.
# At eps=1e-4 those biases still wander by ~1e-6 (they change nothing the loss sees), so the
# logged state dict is compared at rtol 1e-4.
def test_real_nvp_multivariate_normal():
    def program(torch, log):
        RealNVP, NegLogLik = _rnvp_classes(torch)
        DataLoader = torch.utils.data.DataLoader
        n_c_layers, epochs, batch_size, lr = 4, 3, 8, 5e-3
        x = _two_moons(8, 0)
        model = RealNVP(data_dim=x.shape[1], n_c_layers=n_c_layers)
        init_params(torch, model, 3, scale=0.1)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-4)
        tot_epochs = 0
        loss_log_det_J = NegLogLik(model)
        train_loader = DataLoader(dataset=x, batch_size=batch_size, shuffle=False)
        z_norm = np.random.RandomState(5).multivariate_normal(
            np.zeros(2), np.eye(2), 8).astype(np.float32)
        for epoch in range(tot_epochs + 1, tot_epochs + epochs + 1):
            for batch in train_loader:
                model.train()
                z, sum_log_det_J = model(batch)
                loss = loss_log_det_J(z, sum_log_det_J)

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

            print("(epoch %s/%s) loss : %.3f" % (epoch, tot_epochs + epochs, loss.item()))
            log("loss", loss)
            model.eval()
            z, _ = model(torch.from_numpy(x))
            z = z.detach().numpy()
            x_n, _ = model.reverse(torch.from_numpy(z_norm))
            x_n = x_n.detach().numpy()
            log("z x_n", [z, x_n])
            log("running", [model.coupling_layers[1].running_mean, model.coupling_layers[-1].running_var])

        tmp = tempfile.mkdtemp()
        torch.save({"epoch": tot_epochs + epochs, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "loss": loss},
                   os.path.join(tmp, "model.pt"))
        model = RealNVP(data_dim=x.shape[1], n_c_layers=n_c_layers)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-4)
        checkpoint = torch.load(os.path.join(tmp, "model.pt"))
        model.load_state_dict(checkpoint["model_state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        tot_epochs = checkpoint["epoch"]
        loss = checkpoint["loss"]
        log("checkpoint loss", [loss, loss.requires_grad])
        loss_log_det_J = NegLogLik(model)
        for batch in train_loader:
            model.train()
            z, sum_log_det_J = model(batch)
            loss = loss_log_det_J(z, sum_log_det_J)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        log("resumed", [tot_epochs, loss, list(model.state_dict().items())])
        log("log_prob", model.base.log_prob(torch.from_numpy(z_norm)))

    run_both(program, rtol=1e-4, atol=1e-5)


# ---- e-hulten/real-nvp-2d at 106af8f: rnvp.py, batchnorm.py, utils.py, train_mnist.py ---------------
def _rnvp_head_classes(torch):
    nn = torch.nn

    class RealNVP(nn.Module):
        def __init__(self, data_dim, n_c_layers=8, n_hidden=100, hidden_dims=2):
            super(RealNVP, self).__init__()
            mask = torch.arange(data_dim) % 2

            self.layers = nn.ModuleList()
            for _ in range(n_c_layers):
                self.layers.append(
                    CouplingLayer(
                        data_dim, mask, n_hidden=n_hidden, hidden_dims=hidden_dims
                    )
                )
                self.layers.append(BatchNorm(data_dim))
                mask = 1 - mask

        def forward(self, x, set_batch_stats=False):
            sum_log_det_J = x.new_zeros(x.size(0))

            for layer in self.layers:
                x, log_det_J = layer(x)
                sum_log_det_J += log_det_J

            return x, sum_log_det_J

        def reverse(self, x):
            sum_log_det_J = x.new_zeros(x.size(0))
            for layer in reversed((self.layers)):
                x, log_det_J = layer.reverse(x)
                sum_log_det_J += log_det_J

            return x, sum_log_det_J

    class CouplingLayer(nn.Module):
        def __init__(self, data_dim, mask, n_hidden=100, hidden_dims=2):
            super(CouplingLayer, self).__init__()
            self.mask = mask % 2 == 0  # make mask boolean

            # number of elements in each partition of the coupling layer
            n_1 = self.mask.sum().numpy()
            n_2 = (~self.mask).sum().numpy()

            self.scale = ScaleTranslate(n_1, n_2, n_hidden, hidden_dims, actfun="tanh")
            self.translate = ScaleTranslate(n_1, n_2, n_hidden, hidden_dims)

        def forward(self, x):
            x_1 = x[:, self.mask]
            x_2 = x[:, ~self.mask]

            # real nvp
            s = self.scale(x_1)
            t = self.translate(x_1)
            x_2 = (x_2 - t) * torch.exp(-s)

            # fill in
            x[:, ~self.mask] = x_2

            log_det_J = -torch.sum(s, 1)
            return x, log_det_J

        def reverse(self, x):
            x_new = torch.zeros_like(x)

            x_1 = x[:, self.mask]
            x_2 = x[:, ~self.mask]

            s = self.scale(x_1)
            t = self.translate(x_1)
            x_2 = x_2 * torch.exp(s) + t

            # fill in
            x_new[:, self.mask] = x_1
            x_new[:, ~self.mask] = x_2
            log_det_J = torch.sum(s, 1)
            return x_new, log_det_J

    class ScaleTranslate(nn.Module):
        def __init__(self, in_dim, out_dim, n_hidden=256, hidden_dims=2, actfun="relu"):
            super(ScaleTranslate, self).__init__()
            if actfun == "relu":
                self.actfun = nn.ReLU()
            elif actfun == "tanh":
                self.actfun = nn.Tanh()

            self.layers = []
            self.layers.append(nn.Linear(in_dim, n_hidden))
            self.layers.append(self.actfun)
            for _ in range(1, hidden_dims):
                self.layers.append(nn.Linear(n_hidden, n_hidden))
                self.layers.append(self.actfun)
            self.layers.append(nn.Linear(n_hidden, out_dim))

            self.model = nn.Sequential(*self.layers)

        def forward(self, x):
            return self.model(x)

    class BatchNorm(nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.gamma = nn.Parameter(torch.zeros(1, dim), requires_grad=True)
            self.beta = nn.Parameter(torch.zeros(1, dim), requires_grad=True)
            self.batch_mean = None
            self.batch_var = None

        def forward(self, x):
            if self.training:
                m = x.mean(dim=0)
                v = x.var(dim=0) + self.eps  # torch.mean((x - m) ** 2, axis=0) + self.eps
                self.batch_mean = None
            else:
                if self.batch_mean is None:
                    self.set_batch_stats_func(x)
                m = self.batch_mean.clone()
                v = self.batch_var.clone()

            x_hat = (x - m) / torch.sqrt(v)
            x_hat = x_hat * torch.exp(self.gamma) + self.beta
            log_det = torch.sum(self.gamma - 0.5 * torch.log(v))
            return x_hat, log_det

        def reverse(self, x):
            if self.training:
                m = x.mean(dim=0)
                v = x.var(dim=0) + self.eps
                self.batch_mean = None
            else:
                if self.batch_mean is None:
                    self.set_batch_stats_func(x)
                m = self.batch_mean
                v = self.batch_var

            x_hat = (x - self.beta) * torch.exp(-self.gamma) * torch.sqrt(v) + m
            log_det = torch.sum(-self.gamma + 0.5 * torch.log(v))
            return x_hat, log_det

        def set_batch_stats_func(self, x):
            print("setting batch stats for validation")
            self.batch_mean = x.mean(dim=0)
            self.batch_var = x.var(dim=0) + self.eps

    def train_one_epoch(model, epoch, optimizer, train_loader):
        model.train()
        train_loss = 0
        for batch in train_loader:
            u, log_det = model.forward(batch.float())

            negloglik_loss = 0.5 * (u ** 2).sum(dim=1)
            negloglik_loss += 0.5 * batch.shape[1] * np.log(2 * math.pi)
            negloglik_loss -= log_det
            negloglik_loss = negloglik_loss.mean()
            train_loss += negloglik_loss.item()

            optimizer.zero_grad()
            negloglik_loss.backward()
            optimizer.step()

        avg_loss = np.sum(train_loss) / len(train_loader)
        print("Epoch: {} Average loss: {:.5f}".format(epoch, avg_loss))
        return avg_loss

    def val(model, train, val_loader):
        model.eval()
        val_loss = []
        with torch.no_grad():
            _, _ = model(train.float())
            for batch in val_loader:
                u, log_det = model(batch.float())

                negloglik_loss = 0.5 * (u ** 2).sum(dim=1)
                negloglik_loss += 0.5 * batch.shape[1] * np.log(2 * math.pi)
                negloglik_loss -= log_det
                val_loss.extend(negloglik_loss.detach().tolist())

        print(
            "Validation loss: {:.4f} +/- {:.4f}".format(
                np.mean(val_loss), 2 * np.std(val_loss) / np.sqrt(len(val_loss))
            )
        )
        return np.mean(val_loss)

    def test(model, train, test_loader):
        model.eval()
        test_loss = []
        with torch.no_grad():
            _, _ = model.forward(train)
            for batch in test_loader:
                u, log_det = model.forward(batch.float())

                negloglik_loss = 0.5 * (u ** 2).sum(dim=1)
                negloglik_loss += 0.5 * batch.shape[1] * np.log(2 * math.pi)
                negloglik_loss -= log_det

                test_loss.extend(negloglik_loss)

        N = len(test_loss)
        print(
            "Test loss: {:.4f} +/- {:.4f}".format(
                np.mean(test_loss), 2 + np.std(test_loss) / np.sqrt(N)
            )
        )
        return test_loss

    return RealNVP, train_one_epoch, val, test


# train_mnist.py on a 4-feature seeded set (16 training rows in batches of 8, 8 validation rows,
# 3 coupling layers of 8 hidden units, Adam with weight_decay, 2 epochs), its parameter-count
# print from ``np.prod`` of ``p.size()``, then utils.test. Adam's ``eps`` is 1e-4 for the reason
# given above: here the scale nets' output biases rescale x_2 before a batch norm that undoes
# the scale (and the log-determinants cancel), so their gradients are rounding noise. val's
# ``model(train.float())`` runs the in-place coupling on the training tensor itself (the set the
# loader reads changes), and that write does see those biases: logs compared at rtol 1e-3.
def test_real_nvp_masked_coupling():
    def program(torch, log):
        RealNVP, train_one_epoch, val, test = _rnvp_head_classes(torch)
        DataLoader = torch.utils.data.DataLoader
        rs = np.random.RandomState(7)
        train = torch.tensor((rs.standard_normal((16, 4)) * [1., 2., .5, 1.]).astype(np.float32))
        val_set = torch.tensor(rs.standard_normal((8, 4)).astype(np.float32))
        train_loader = DataLoader(train, batch_size=8, shuffle=False)
        val_loader = DataLoader(val_set, batch_size=8, shuffle=False)
        n_in = train.shape[1]
        model = RealNVP(data_dim=n_in, n_c_layers=3, n_hidden=8, hidden_dims=1)
        init_params(torch, model, 4, scale=0.3)
        log("in_features", [type(model.layers[0].scale.model[0].in_features).__name__,
                            model.layers[0].scale.model[0].in_features])
        print("# model parameters:", sum([np.prod(p.size()) for p in model.parameters()]))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-6, eps=1e-4)
        before = train.clone()
        for epoch in range(1, 3):
            train_loss = train_one_epoch(model, epoch, optimizer, train_loader)
            val_loss = val(model, train, val_loader)
            log("losses", [train_loss, val_loss])
        log("train set after val", [train, (train != before).any(dim=0)])
        test_loss = test(model, train, val_loader)
        log("test", test_loss)
        model.eval()
        x, ld = model.reverse(val_set)
        log("reverse", [x, ld])

    run_both(program, rtol=1e-3, atol=1e-4)
