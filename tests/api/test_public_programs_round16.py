"""A sixteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round15.py``, from repositories no earlier round used: the official
super-resolution example (``PixelShuffle``, ``init.orthogonal_`` with ``calculate_gain``, a PSNR
from ``math.log10``), efficient-kan's B-spline KAN layers (``torch.linalg.lstsq`` fitting spline
coefficients, ``sort``/``linspace(dtype=int64)`` grid updates under ``torch.no_grad``, an entropy
regulariser), pyGAT's dense graph attention (``repeat``/``view`` pair building, ``torch.where``
masking, ``add_module`` in a loop, an implicit-dim ``log_softmax``), kmeans_pytorch's k-means
(``np.random.choice`` initial centres, ``argmin``, ``nonzero().squeeze()``, ``index_select`` and
per-row assignment of centres, cosine distances) and torchvision's SqueezeNet 1.1 (Fire modules
with in-place ReLUs, ``MaxPool2d(ceil_mode=True)``, ``AdaptiveAvgPool2d``, the init loop over
``self.modules()``). Each keeps its program's code at tiny sizes, with numpy-seeded data and
parameters (``init_params``/``randn``) in place of downloads and random streams; where a
program's own code had to change, the comment above its test says how and why. A ``from
torch... import`` inside a program would import the real torch on the tracegrad side too, so
such imports are written as attribute lookups on the ``torch`` argument.
"""
import math
from functools import partial

import numpy as np
import pytest

from parity import init_params, log_outcome, randn, run_both, seeded

torch = pytest.importorskip("torch")


# pytorch/examples super_resolution/model.py (Net: four convolutions and ``nn.PixelShuffle``,
# ``_initialize_weights`` with ``init.orthogonal_`` and ``init.calculate_gain('relu')``) and
# main.py's train/test loops (MSELoss, Adam, ``10 * log10(1 / mse.item())`` PSNR). Widths as
# written, upscale factor 2, 2 single-channel 6x6 inputs against 12x12 targets, 2 Adam steps;
# the orthogonal initialisation draws from the random stream, so ``init_params`` replaces it
# after construction (the orthogonality of what it drew is logged instead).
def test_super_resolution_pixel_shuffle_net():
    def program(torch, log):
        nn = torch.nn
        init = torch.nn.init

        class Net(nn.Module):
            def __init__(self, upscale_factor):
                super(Net, self).__init__()

                self.relu = nn.ReLU()
                self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
                self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
                self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
                self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
                self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

                self._initialize_weights()

            def forward(self, x):
                x = self.relu(self.conv1(x))
                x = self.relu(self.conv2(x))
                x = self.relu(self.conv3(x))
                x = self.pixel_shuffle(self.conv4(x))
                return x

            def _initialize_weights(self):
                init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
                init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
                init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
                init.orthogonal_(self.conv4.weight)

        model = Net(upscale_factor=2)
        w = model.conv3.weight.detach().view(32, -1)
        gram = w @ w.t()
        log("orthogonal rows", bool(torch.allclose(gram, 2.0 * torch.eye(32), atol=1e-4)))
        log("gain", init.calculate_gain('relu'))
        log("repr", repr(model))
        init_params(torch, model, 1, scale=0.1)
        criterion = nn.MSELoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        inp = randn(torch, (2, 1, 6, 6), 2)
        target = randn(torch, (2, 1, 12, 12), 3).abs()

        def train(epoch):
            epoch_loss = 0
            optimizer.zero_grad()
            loss = criterion(model(inp), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
            print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(epoch, 1, 1, loss.item()))
            return epoch_loss

        def test():
            avg_psnr = 0
            with torch.no_grad():
                prediction = model(inp)
                mse = criterion(prediction, target)
                psnr = 10 * math.log10(1 / mse.item())
                avg_psnr += psnr
            return avg_psnr

        for epoch in range(1, 3):
            log("epoch loss", train(epoch))
            log("psnr", test())
        log("conv4 grad", model.conv4.weight.grad)
        out = model(inp)
        log("out", out)

    run_both(program)


# Blealtan/efficient-kan src/efficient_kan/kan.py (KANLinear: a ``register_buffer`` grid built
# by ``arange(...).expand(in, -1).contiguous()``, cubic B-spline bases by the Cox-de Boor
# recursion on boolean interval masks, ``curve2coeff`` solving for spline coefficients with
# ``torch.linalg.lstsq(A, B).solution``, the ``scaled_spline_weight`` property, ``update_grid``
# under ``@torch.no_grad()`` (``sort``, ``linspace(dtype=torch.int64)`` indices, ``einsum``,
# ``copy_`` into the buffer) and ``regularization_loss``'s entropy; KAN over a ``ModuleList``).
# This version imports einops (``rearrange``/``repeat``/``reduce``), which is not installed
# here; each call is written as the permute/unsqueeze/abs it performs. One layer [3, 2],
# grid_size 5 as written; ``reset_parameters`` draws from the random stream (``torch.rand`` and
# ``kaiming_uniform_``), so ``init_params`` replaces the parameters after construction. 2 Adam
# steps with the regulariser, one forward with ``update_grid=True``.
def test_efficient_kan_bspline_lstsq():
    def program(torch, log):
        F = torch.nn.functional

        class KANLinear(torch.nn.Module):
            def __init__(
                self,
                in_features,
                out_features,
                grid_size=5,
                spline_order=3,
                scale_noise=0.1,
                scale_base=1.0,
                scale_spline=1.0,
                enable_standalone_scale_spline=True,
                base_activation=torch.nn.SiLU,
                grid_eps=0.02,
                grid_range=[-1, 1],
            ):
                super(KANLinear, self).__init__()
                self.in_features = in_features
                self.out_features = out_features
                self.grid_size = grid_size
                self.spline_order = spline_order

                h = (grid_range[1] - grid_range[0]) / grid_size
                grid = (
                    (
                        torch.arange(-spline_order, grid_size + spline_order + 1) * h
                        + grid_range[0]
                    )
                    .expand(in_features, -1)
                    .contiguous()
                )
                self.register_buffer("grid", grid)

                self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
                self.spline_weight = torch.nn.Parameter(
                    torch.Tensor(out_features, in_features, grid_size + spline_order)
                )
                if enable_standalone_scale_spline:
                    self.spline_scaler = torch.nn.Parameter(
                        torch.Tensor(out_features, in_features)
                    )

                self.scale_noise = scale_noise
                self.scale_base = scale_base
                self.scale_spline = scale_spline
                self.enable_standalone_scale_spline = enable_standalone_scale_spline
                self.base_activation = base_activation()
                self.grid_eps = grid_eps

                self.reset_parameters()

            def reset_parameters(self):
                torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
                with torch.no_grad():
                    noise = (
                        (
                            torch.rand(self.grid_size + 1, self.in_features, self.out_features)
                            - 1 / 2
                        )
                        * self.scale_noise
                        / self.grid_size
                    )
                    self.spline_weight.data.copy_(
                        (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                        * self.curve2coeff(
                            self.grid.T[self.spline_order : -self.spline_order],
                            noise,
                        )
                    )
                    if self.enable_standalone_scale_spline:
                        # torch.nn.init.constant_(self.spline_scaler, self.scale_spline)
                        torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

            def b_splines(self, x):
                assert x.dim() == 2 and x.size(1) == self.in_features

                grid = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
                x = x.unsqueeze(-1)  # rearrange(x, 'b f -> b f 1')
                bases = (x >= grid[:, :-1]) & (x < grid[:, 1:])
                bases = bases.to(x.dtype)
                for k in range(1, self.spline_order + 1):
                    left = (x - grid[:, :-(k + 1)]) / (grid[:, k:-1] - grid[:, :-(k + 1)])
                    right = (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)])
                    bases = left * bases[:, :, :-1] + right * bases[:, :, 1:]

                assert bases.size() == (
                    x.size(0),
                    self.in_features,
                    self.grid_size + self.spline_order,
                )
                return bases.contiguous()

            def curve2coeff(self, x, y):
                assert x.dim() == 2 and x.size(1) == self.in_features
                assert y.size() == (x.size(0), self.in_features, self.out_features)

                A = self.b_splines(x)  # (batch_size, in_features, grid_size + spline_order)
                A = A.permute(1, 0, 2)  # rearrange(A, 'b f g -> f b g')
                B = y.permute(1, 0, 2)  # rearrange(y, 'b f o -> f b o')

                solution = torch.linalg.lstsq(A, B).solution  # (in_features, grid_size + spline_order, out_features)

                result = solution.permute(2, 0, 1)  # rearrange(solution, 'f g o -> o f g')

                assert result.size() == (
                    self.out_features,
                    self.in_features,
                    self.grid_size + self.spline_order,
                )
                return result.contiguous()

            @property
            def scaled_spline_weight(self):
                return self.spline_weight * (
                    self.spline_scaler.unsqueeze(-1)
                    if self.enable_standalone_scale_spline
                    else 1.0
                )

            def forward(self, x):
                assert x.size(-1) == self.in_features
                original_shape = x.shape
                x = x.view(-1, self.in_features)

                base_output = F.linear(self.base_activation(x), self.base_weight)
                spline_output = F.linear(
                    self.b_splines(x).view(x.size(0), -1),
                    self.scaled_spline_weight.view(self.out_features, -1),
                )
                output = base_output + spline_output

                output = output.view(*original_shape[:-1], self.out_features)
                return output

            @torch.no_grad()
            def update_grid(self, x, margin=0.01):
                assert x.dim() == 2 and x.size(1) == self.in_features
                batch = x.size(0)

                splines = self.b_splines(x)  # (batch, in, coeff)
                splines = splines.permute(1, 0, 2)  # rearrange 'b in coeff -> in b coeff'
                orig_coeff = self.scaled_spline_weight  # (out, in, coeff)
                orig_coeff = orig_coeff.permute(1, 2, 0)  # rearrange 'out in coeff -> in coeff out'
                unreduced_spline_output = torch.einsum('ibc, ico -> ibo', splines, orig_coeff)
                unreduced_spline_output = unreduced_spline_output.permute(1, 0, 2)  # (batch, in, out)

                x_sorted = torch.sort(x, dim=0)[0]
                indices = torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64, device=x.device)
                grid_adaptive = x_sorted[indices]

                uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
                grid_uniform = torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1)
                grid_uniform = grid_uniform * uniform_step + x_sorted[0] - margin

                grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
                spline_order_range = torch.arange(self.spline_order, 0, -1, device=x.device)
                grid = torch.cat([
                    grid[:1] - uniform_step * spline_order_range.unsqueeze(1),
                    grid,
                    grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1)
                ], dim=0)

                self.grid.copy_(grid.T)
                self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

            def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
                l1_fake = self.spline_weight.abs().mean(-1)
                regularization_loss_activation = l1_fake.sum()
                p = l1_fake / regularization_loss_activation
                regularization_loss_entropy = -torch.sum(p * p.log())
                return (
                    regularize_activation * regularization_loss_activation
                    + regularize_entropy * regularization_loss_entropy
                )

        class KAN(torch.nn.Module):
            def __init__(self, layers_hidden, grid_size=5, spline_order=3):
                super(KAN, self).__init__()
                self.grid_size = grid_size
                self.spline_order = spline_order

                self.layers = torch.nn.ModuleList()
                for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
                    self.layers.append(
                        KANLinear(
                            in_features,
                            out_features,
                            grid_size=grid_size,
                            spline_order=spline_order,
                        )
                    )

            def forward(self, x, update_grid=False):
                for layer in self.layers:
                    if update_grid:
                        layer.update_grid(x)
                    x = layer(x)
                return x

            def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
                return sum(
                    layer.regularization_loss(regularize_activation, regularize_entropy)
                    for layer in self.layers
                )

        model = KAN([3, 2])
        log("grid", model.layers[0].grid)
        log("n params", sum(p.numel() for p in model.parameters()))
        init_params(torch, model, 4, scale=0.5)
        x = randn(torch, (12, 3), 5, scale=0.6)
        y = randn(torch, (12, 2), 6)
        log("bases", model.layers[0].b_splines(x))
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        for step in range(2):
            out = model(x)
            loss = F.mse_loss(out, y) + 1e-3 * model.regularization_loss()
            opt.zero_grad()
            loss.backward()
            log("loss", loss)
            log("grad spline", model.layers[0].spline_weight.grad)
            opt.step()
        out = model(x, update_grid=True)
        log("updated grid", model.layers[0].grid)
        log("refit spline", model.layers[0].spline_weight)
        log("out after update", out)
        sol = torch.linalg.lstsq(model.layers[0].b_splines(x).permute(1, 0, 2), y.unsqueeze(1).expand(12, 3, 2).permute(1, 0, 2))
        log("lstsq type", (type(sol).__name__, len(sol), sol[0].shape))

    run_both(program, rtol=1e-3)


# Diego999/pyGAT layers.py + models.py (GraphAttentionLayer: ``nn.Parameter(nn.init.
# xavier_uniform(torch.Tensor(...).type(torch.FloatTensor), gain=np.sqrt(2.0)))`` weights, all
# node pairs built by ``h.repeat(1, N).view(N * N, -1)`` beside ``h.repeat(N, 1)``, LeakyReLU
# scores, ``torch.where(adj > 0, e, -9e15 * ones_like(e))`` masking, a custom ``__repr__``; GAT
# registering its heads with ``add_module`` in a loop and ending in ``F.log_softmax(x)`` without
# ``dim``) and train.py's NLL loss on the training nodes and accuracy. 6 nodes, 5 features,
# 3 hidden units, 2 heads, 3 classes, dropout 0.0 (it draws from the random stream); the
# xavier initialisation (random) is replaced by ``init_params``; 2 Adam steps with weight decay.
def test_pygat_dense_graph_attention():
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional

        class GraphAttentionLayer(nn.Module):
            """
            Simple GAT layer, similar to https://arxiv.org/abs/1710.10903
            """

            def __init__(self, in_features, out_features, dropout, alpha, concat=True):
                super(GraphAttentionLayer, self).__init__()
                self.dropout = dropout
                self.in_features = in_features
                self.out_features = out_features
                self.alpha = alpha
                self.concat = concat

                self.W = nn.Parameter(nn.init.xavier_uniform(torch.Tensor(in_features, out_features).type(torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor), gain=np.sqrt(2.0)), requires_grad=True)
                self.a = nn.Parameter(nn.init.xavier_uniform(torch.Tensor(2*out_features, 1).type(torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor), gain=np.sqrt(2.0)), requires_grad=True)

                self.leakyrelu = nn.LeakyReLU(self.alpha)

            def forward(self, input, adj):
                h = torch.mm(input, self.W)
                N = h.size()[0]

                a_input = torch.cat([h.repeat(1, N).view(N * N, -1), h.repeat(N, 1)], dim=1).view(N, -1, 2 * self.out_features)
                e = self.leakyrelu(torch.matmul(a_input, self.a).squeeze(2))

                zero_vec = -9e15*torch.ones_like(e)
                attention = torch.where(adj > 0, e, zero_vec)
                attention = F.softmax(attention, dim=1)
                attention = F.dropout(attention, self.dropout, training=self.training)
                h_prime = torch.matmul(attention, h)

                if self.concat:
                    return F.elu(h_prime)
                else:
                    return h_prime

            def __repr__(self):
                return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'

        class GAT(nn.Module):
            def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
                super(GAT, self).__init__()
                self.dropout = dropout

                self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True) for _ in range(nheads)]
                for i, attention in enumerate(self.attentions):
                    self.add_module('attention_{}'.format(i), attention)

                self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

            def forward(self, x, adj):
                x = F.dropout(x, self.dropout, training=self.training)
                x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
                x = F.dropout(x, self.dropout, training=self.training)
                x = F.elu(self.out_att(x, adj))
                return F.log_softmax(x)

        def accuracy(output, labels):
            preds = output.max(1)[1].type_as(labels)
            correct = preds.eq(labels).double()
            correct = correct.sum()
            return correct / len(labels)

        model = GAT(nfeat=5, nhid=3, nclass=3, dropout=0.0, alpha=0.2, nheads=2)
        log("repr", repr(model))
        log("names", [n for n, _ in model.named_parameters()])
        init_params(torch, model, 9, scale=0.5)
        rs = np.random.RandomState(10)
        adj_np = (rs.rand(6, 6) > 0.5).astype(np.float32)
        adj_np = np.maximum(adj_np, adj_np.T) + np.eye(6, dtype=np.float32)
        adj = torch.FloatTensor(adj_np)
        features = randn(torch, (6, 5), 11)
        labels = torch.LongTensor(rs.randint(0, 3, size=6))
        idx_train = torch.LongTensor(range(4))
        idx_val = torch.LongTensor(range(4, 6))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
        for epoch in range(2):
            model.train()
            optimizer.zero_grad()
            output = model(features, adj)
            loss_train = F.nll_loss(output[idx_train], labels[idx_train])
            acc_train = accuracy(output[idx_train], labels[idx_train])
            loss_train.backward()
            optimizer.step()
            model.eval()
            output = model(features, adj)
            loss_val = F.nll_loss(output[idx_val], labels[idx_val])
            acc_val = accuracy(output[idx_val], labels[idx_val])
            print('Epoch: {:04d}'.format(epoch+1),
                  'loss_train: {:.4f}'.format(loss_train.data.item()),
                  'acc_train: {:.4f}'.format(acc_train.data.item()),
                  'loss_val: {:.4f}'.format(loss_val.data.item()),
                  'acc_val: {:.4f}'.format(acc_val.data.item()))
            log("acc dtype", acc_train.dtype)
            log("W grad", model.attention_0.W.grad)
        log("output", output)


    run_both(program)


# subhadarship/kmeans_pytorch kmeans_pytorch/__init__.py (kmeans/kmeans_predict with the
# euclidean and cosine pairwise distances: ``np.random.choice`` initial centres indexing the
# tensor, ``argmin``, ``torch.nonzero(choice_cluster == index).squeeze()``, ``index_select``,
# assigning ``selected.mean(dim=0)`` into a row of the state, a ``center_shift ** 2 < tol``
# loop; ``functools.partial`` distance functions with ``device=torch.device('cpu')``). The
# soft-DTW option imports a CUDA module and tqdm drives only the progress bar, so those are
# left out (``tqdm_flag=False``); 24 points in 2 dimensions, 3 clusters, numpy's global stream
# seeded for ``np.random.choice``, and the README's fit-then-predict usage.
def test_kmeans_pytorch_euclidean_and_cosine():
    def program(torch, log):
        def initialize(X, num_clusters):
            num_samples = len(X)
            indices = np.random.choice(num_samples, num_clusters, replace=False)
            initial_state = X[indices]
            return initial_state

        def kmeans(
                X,
                num_clusters,
                distance='euclidean',
                cluster_centers=[],
                tol=1e-4,
                tqdm_flag=True,
                iter_limit=0,
                device=torch.device('cpu'),
        ):
            if distance == 'euclidean':
                pairwise_distance_function = partial(pairwise_distance, device=device, tqdm_flag=tqdm_flag)
            elif distance == 'cosine':
                pairwise_distance_function = partial(pairwise_cosine, device=device)
            else:
                raise NotImplementedError

            # convert to float
            X = X.float()

            # transfer to device
            X = X.to(device)

            # initialize
            if type(cluster_centers) == list:  # ToDo: make this less annoyingly weird
                initial_state = initialize(X, num_clusters)
            else:
                # find data point closest to the initial cluster center
                initial_state = cluster_centers
                dis = pairwise_distance_function(X, initial_state)
                choice_points = torch.argmin(dis, dim=0)
                initial_state = X[choice_points]
                initial_state = initial_state.to(device)

            iteration = 0
            while True:

                dis = pairwise_distance_function(X, initial_state)

                choice_cluster = torch.argmin(dis, dim=1)

                initial_state_pre = initial_state.clone()

                for index in range(num_clusters):
                    selected = torch.nonzero(choice_cluster == index).squeeze().to(device)

                    selected = torch.index_select(X, 0, selected)

                    # https://github.com/subhadarship/kmeans_pytorch/issues/16
                    if selected.shape[0] == 0:
                        selected = X[torch.randint(len(X), (1,))]

                    initial_state[index] = selected.mean(dim=0)

                center_shift = torch.sum(
                    torch.sqrt(
                        torch.sum((initial_state - initial_state_pre) ** 2, dim=1)
                    ))

                # increment iteration
                iteration = iteration + 1

                if center_shift ** 2 < tol:
                    break
                if iter_limit != 0 and iteration >= iter_limit:
                    break

            return choice_cluster.cpu(), initial_state.cpu()

        def kmeans_predict(
                X,
                cluster_centers,
                distance='euclidean',
                device=torch.device('cpu'),
                tqdm_flag=True
        ):
            if tqdm_flag:
                print(f'predicting on {device}..')

            if distance == 'euclidean':
                pairwise_distance_function = partial(pairwise_distance, device=device, tqdm_flag=tqdm_flag)
            elif distance == 'cosine':
                pairwise_distance_function = partial(pairwise_cosine, device=device)
            else:
                raise NotImplementedError

            # convert to float
            X = X.float()

            # transfer to device
            X = X.to(device)

            dis = pairwise_distance_function(X, cluster_centers)
            choice_cluster = torch.argmin(dis, dim=1)

            return choice_cluster.cpu()

        def pairwise_distance(data1, data2, device=torch.device('cpu'), tqdm_flag=True):
            if tqdm_flag:
                print(f'device is :{device}')

            # transfer to device
            data1, data2 = data1.to(device), data2.to(device)

            # N*1*M
            A = data1.unsqueeze(dim=1)

            # 1*N*M
            B = data2.unsqueeze(dim=0)

            dis = (A - B) ** 2.0
            # return N*N matrix for pairwise distance
            dis = dis.sum(dim=-1).squeeze()
            return dis

        def pairwise_cosine(data1, data2, device=torch.device('cpu')):
            # transfer to device
            data1, data2 = data1.to(device), data2.to(device)

            # N*1*M
            A = data1.unsqueeze(dim=1)

            # 1*N*M
            B = data2.unsqueeze(dim=0)

            # normalize the points  | [0.3, 0.4] -> [0.3/sqrt(0.09 + 0.16), 0.4/sqrt(0.09 + 0.16)] = [0.3/0.5, 0.4/0.5]
            A_normalized = A / A.norm(dim=-1, keepdim=True)
            B_normalized = B / B.norm(dim=-1, keepdim=True)

            cosine = A_normalized * B_normalized

            # return N*N matrix for pairwise distance
            cosine_dis = 1 - cosine.sum(dim=-1).squeeze()
            return cosine_dis

        rs = np.random.RandomState(12)
        centers = np.array([[2.0, 2.0], [-2.0, 1.0], [0.5, -2.5]])
        x = np.concatenate([c + 0.4 * rs.randn(8, 2) for c in centers]).astype(np.float64)
        x = torch.from_numpy(x)
        with seeded(3):
            cluster_ids_x, cluster_centers = kmeans(X=x, num_clusters=3, distance='euclidean',
                                                    device=torch.device('cpu'), tqdm_flag=False)
        log("ids", cluster_ids_x)
        log("centers", cluster_centers)
        log("counts", torch.bincount(cluster_ids_x, minlength=3))
        y = torch.from_numpy(rs.randn(5, 2))
        log("predict", kmeans_predict(y, cluster_centers, 'euclidean', device=torch.device('cpu')))
        with seeded(4):
            ids_cos, centers_cos = kmeans(X=x, num_clusters=3, distance='cosine', tqdm_flag=False,
                                          iter_limit=5)
        log("cos ids", ids_cos)
        log("cos centers", centers_cos)
        # resuming from given centres: argmin over dim 0 picks the nearest data points
        ids_r, centers_r = kmeans(X=x, num_clusters=3, cluster_centers=cluster_centers + 0.1,
                                  tqdm_flag=False)
        log("resumed", (ids_r, centers_r))
        uniq, inv, cnt = torch.unique(ids_r, sorted=True, return_inverse=True, return_counts=True)
        log("unique", (uniq, inv, cnt))
        # a cluster holding a single point: nonzero().squeeze() is 0-d and index_select refuses it
        log_outcome(log, "0-d index_select", lambda: torch.index_select(x, 0, torch.tensor(3)))

    run_both(program)


# pytorch/vision torchvision/models/squeezenet.py (Fire: a 1x1 squeeze and concatenated 1x1/3x3
# expands behind ``nn.ReLU(inplace=True)``; SqueezeNet version "1_1" with
# ``MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)``, a Dropout/final-conv/ReLU/
# ``AdaptiveAvgPool2d((1, 1))`` classifier, ``torch.flatten(x, 1)`` and the init loop over
# ``self.modules()`` that tells the final conv apart by identity). The weights enums, presets and
# ``_log_api_usage_once`` are torchvision internals and left out. Widths as written, 10 classes,
# 2 images at the 17x17 minimum size, dropout 0.0 (it draws from the random stream); the
# kaiming/normal initialisation (random) is replaced by ``init_params`` after the constant_
# biases are checked; an eval forward, then 1 SGD step through the first stage only (every
# Fire's backward would add seconds of cold compiles).
def test_torchvision_squeezenet1_1():
    def program(torch, log):
        nn = torch.nn
        init = torch.nn.init

        class Fire(nn.Module):
            def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
                super().__init__()
                self.inplanes = inplanes
                self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
                self.squeeze_activation = nn.ReLU(inplace=True)
                self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
                self.expand1x1_activation = nn.ReLU(inplace=True)
                self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
                self.expand3x3_activation = nn.ReLU(inplace=True)

            def forward(self, x):
                x = self.squeeze_activation(self.squeeze(x))
                return torch.cat(
                    [self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1
                )

        class SqueezeNet(nn.Module):
            def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
                super().__init__()
                self.num_classes = num_classes
                if version == "1_1":
                    self.features = nn.Sequential(
                        nn.Conv2d(3, 64, kernel_size=3, stride=2),
                        nn.ReLU(inplace=True),
                        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                        Fire(64, 16, 64, 64),
                        Fire(128, 16, 64, 64),
                        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                        Fire(128, 32, 128, 128),
                        Fire(256, 32, 128, 128),
                        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                        Fire(256, 48, 192, 192),
                        Fire(384, 48, 192, 192),
                        Fire(384, 64, 256, 256),
                        Fire(512, 64, 256, 256),
                    )
                else:
                    raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")

                # Final convolution is initialized differently from the rest
                final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
                self.classifier = nn.Sequential(
                    nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1))
                )

                for m in self.modules():
                    if isinstance(m, nn.Conv2d):
                        if m is final_conv:
                            init.normal_(m.weight, mean=0.0, std=0.01)
                        else:
                            init.kaiming_uniform_(m.weight)
                        if m.bias is not None:
                            init.constant_(m.bias, 0)

            def forward(self, x):
                x = self.features(x)
                x = self.classifier(x)
                return torch.flatten(x, 1)

        log_outcome(log, "bad version", lambda: SqueezeNet("2_0"))
        model = SqueezeNet("1_1", num_classes=10, dropout=0.0)
        log("biases zero", all(bool((m.bias == 0).all()) for m in model.modules() if isinstance(m, nn.Conv2d)))
        log("n params", sum(p.numel() for p in model.parameters()))
        init_params(torch, model, 13, scale=0.08)
        x = randn(torch, (2, 3, 17, 17), 14)
        shapes = []
        h = x
        for layer in model.features:
            h = layer(h)
            shapes.append(tuple(h.shape))
        log("feature shapes", shapes)
        model.eval()
        with torch.no_grad():
            log("eval", model(x))
        # training through every layer compiles each of the eight Fire shapes' backward too;
        # the step runs the first stage (conv, pool, two Fires) with the classifier's loss shape
        model.train()
        stage = nn.Sequential(*model.features[:5])
        target = torch.tensor([3, 7])
        opt = torch.optim.SGD(stage.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        out = torch.flatten(nn.AdaptiveAvgPool2d((1, 1))(stage(x)), 1)[:, :10]
        loss = nn.CrossEntropyLoss()(out, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log("loss", loss)
        log("fire grad", model.features[3].expand3x3.bias.grad)
        log("conv grad", model.features[0].weight.grad)
        log("classifier untouched", model.classifier[1].weight.grad)

    run_both(program)


# jadore801120/attention-is-all-you-need-pytorch transformer/Modules.py + SubLayers.py, the
# early version (Linear with ``init.xavier_normal`` -- the deprecated spelling without the
# underscore; ``Bottle`` mixins whose ``forward`` reshapes around ``super(Bottle, self).forward``
# through the MRO of ``BottleSoftmax(Bottle, nn.Softmax)``; a hand-written LayerNormalization with
# ``torch.std`` and ``expand_as``; ScaledDotProductAttention dividing by ``np.power(d_model, 0.5)``
# and masking through ``attn.data.masked_fill_(mask, -inf)``; MultiHeadAttention with per-head
# ``FloatTensor(n_head, d_model, d_k)`` parameters, ``repeat``/``bmm`` head batching and
# ``view_as``; the position-wise feed-forward as ``Conv1d`` kernel 1 around ``transpose``). An
# encoder layer (self-attention then feed-forward) as Layers.py composes them, with a key-padding
# mask built by ``eq(0).unsqueeze(1).expand``. d_model 8, 2 heads of 4, batch 3 of length 3 (the
# LayerNormalization's ``mean(dim=1).expand_as`` broadcasts only when they agree), dropout 0
# (random); xavier draws replaced by ``init_params``; 2 Adam steps.
def test_attention_is_all_you_need_early_sublayers():
    def program(torch, log):
        nn = torch.nn
        init = torch.nn.init

        class Linear(nn.Module):
            ''' Simple Linear layer with xavier init '''
            def __init__(self, d_in, d_out, bias=True):
                super(Linear, self).__init__()
                self.linear = nn.Linear(d_in, d_out, bias=bias)
                init.xavier_normal(self.linear.weight)

            def forward(self, x):
                return self.linear(x)

        class Bottle(nn.Module):
            ''' Perform the reshape routine before and after an operation '''

            def forward(self, input):
                if len(input.size()) <= 2:
                    return super(Bottle, self).forward(input)
                size = input.size()[:2]
                out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
                return out.view(size[0], size[1], -1)

        class BottleLinear(Bottle, Linear):
            ''' Perform the reshape routine before and after a linear projection '''
            pass

        class BottleSoftmax(Bottle, nn.Softmax):
            ''' Perform the reshape routine before and after a softmax operation'''
            pass

        class LayerNormalization(nn.Module):
            ''' Layer normalization module '''

            def __init__(self, d_hid, eps=1e-3):
                super(LayerNormalization, self).__init__()

                self.eps = eps
                self.a_2 = nn.Parameter(torch.ones(d_hid), requires_grad=True)
                self.b_2 = nn.Parameter(torch.zeros(d_hid), requires_grad=True)

            def forward(self, z):
                if z.size(1) == 1:
                    return z

                mu = torch.mean(z, dim=1)
                sigma = torch.std(z, dim=1)
                ln_out = (z - mu.expand_as(z)) / (sigma.expand_as(z) + self.eps)
                ln_out = ln_out * self.a_2.expand_as(ln_out) + self.b_2.expand_as(ln_out)

                return ln_out

        class ScaledDotProductAttention(nn.Module):
            ''' Scaled Dot-Product Attention '''

            def __init__(self, d_model, attn_dropout=0.1):
                super(ScaledDotProductAttention, self).__init__()
                self.temper = np.power(d_model, 0.5)
                self.dropout = nn.Dropout(attn_dropout)
                self.softmax = BottleSoftmax()

            def forward(self, q, k, v, attn_mask=None):

                attn = torch.bmm(q, k.transpose(1, 2)) / self.temper

                if attn_mask is not None:

                    assert attn_mask.size() == attn.size(), \
                            'Attention mask shape {} mismatch ' \
                            'with Attention logit tensor shape ' \
                            '{}.'.format(attn_mask.size(), attn.size())

                    attn.data.masked_fill_(attn_mask, -float('inf'))

                attn = self.softmax(attn)
                attn = self.dropout(attn)
                output = torch.bmm(attn, v)

                return output, attn

        class MultiHeadAttention(nn.Module):
            ''' Multi-Head Attention module '''

            def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
                super(MultiHeadAttention, self).__init__()

                self.n_head = n_head
                self.d_k = d_k
                self.d_v = d_v

                self.w_qs = nn.Parameter(torch.FloatTensor(n_head, d_model, d_k))
                self.w_ks = nn.Parameter(torch.FloatTensor(n_head, d_model, d_k))
                self.w_vs = nn.Parameter(torch.FloatTensor(n_head, d_model, d_v))

                self.attention = ScaledDotProductAttention(d_model)
                self.layer_norm = LayerNormalization(d_model)
                self.proj = Linear(n_head*d_v, d_model)

                self.dropout = nn.Dropout(dropout)

                init.xavier_normal(self.w_qs)
                init.xavier_normal(self.w_ks)
                init.xavier_normal(self.w_vs)

            def forward(self, q, k, v, attn_mask=None):

                d_k, d_v = self.d_k, self.d_v
                n_head = self.n_head

                residual = q

                mb_size, len_q, d_model = q.size()
                mb_size, len_k, d_model = k.size()
                mb_size, len_v, d_model = v.size()

                # treat as a (n_head) size batch
                q_s = q.repeat(n_head, 1, 1).view(n_head, -1, d_model) # n_head x (mb_size*len_q) x d_model
                k_s = k.repeat(n_head, 1, 1).view(n_head, -1, d_model) # n_head x (mb_size*len_k) x d_model
                v_s = v.repeat(n_head, 1, 1).view(n_head, -1, d_model) # n_head x (mb_size*len_v) x d_model

                # treat the result as a (n_head * mb_size) size batch
                q_s = torch.bmm(q_s, self.w_qs).view(-1, len_q, d_k)   # (n_head*mb_size) x len_q x d_k
                k_s = torch.bmm(k_s, self.w_ks).view(-1, len_k, d_k)   # (n_head*mb_size) x len_k x d_k
                v_s = torch.bmm(v_s, self.w_vs).view(-1, len_v, d_v)   # (n_head*mb_size) x len_v x d_v

                # perform attention, result size = (n_head * mb_size) x len_q x d_v
                outputs, attns = self.attention(q_s, k_s, v_s, attn_mask=attn_mask.repeat(n_head, 1, 1))

                # back to original mb_size batch
                outputs = outputs.view(mb_size, len_q, -1)            # mb_size x len_q x (n_head*d_v)

                # project back to residual size
                outputs = self.proj(outputs.view(-1, outputs.size(2))).view_as(residual)
                outputs = self.dropout(outputs)

                return self.layer_norm(outputs + residual), attns

        class PositionwiseFeedForward(nn.Module):
            ''' A two-feed-forward-layer module '''

            def __init__(self, d_hid, d_inner_hid, dropout=0.1):
                super(PositionwiseFeedForward, self).__init__()
                self.w_1 = nn.Conv1d(d_hid, d_inner_hid, 1) # position-wise
                self.w_2 = nn.Conv1d(d_inner_hid, d_hid, 1) # position-wise
                self.layer_norm = LayerNormalization(d_hid)
                self.dropout = nn.Dropout(dropout)
                self.relu = nn.ReLU()

            def forward(self, x):
                residual = x
                output = self.relu(self.w_1(x.transpose(1, 2)))
                output = self.w_2(output).transpose(2, 1)
                output = self.dropout(output)
                return self.layer_norm(output + residual)

        def get_attn_padding_mask(seq_q, seq_k):
            mb_size, len_q = seq_q.size()
            mb_size, len_k = seq_k.size()
            pad_attn_mask = seq_k.data.eq(0).unsqueeze(1)   # bx1xsk
            pad_attn_mask = pad_attn_mask.expand(mb_size, len_q, len_k) # bxsqxsk
            return pad_attn_mask

        slf_attn = MultiHeadAttention(2, 8, 4, 4, dropout=0.0)
        pos_ffn = PositionwiseFeedForward(8, 16, dropout=0.0)
        slf_attn.attention.dropout.p = 0.0
        params = list(slf_attn.parameters()) + list(pos_ffn.parameters())
        log("n params", [tuple(p.shape) for p in params])
        init_params(torch, slf_attn, 15, scale=0.5)
        init_params(torch, pos_ffn, 16, scale=0.5)
        seq = torch.LongTensor([[3, 5, 0], [2, 0, 0], [1, 4, 6]])
        emb = nn.Embedding(7, 8, padding_idx=0)
        init_params(torch, emb, 17)
        mask = get_attn_padding_mask(seq, seq)
        log("mask", mask)
        bs = BottleSoftmax(dim=-1)
        log("bottle softmax", bs(randn(torch, (2, 3, 4), 18)))
        bl = BottleLinear(4, 2)
        init_params(torch, bl, 19)
        log("bottle linear", bl(randn(torch, (2, 3, 4), 20)))
        opt = torch.optim.Adam(params + list(emb.parameters()), lr=0.01)
        for step in range(2):
            x = emb(seq)
            enc_output, enc_slf_attn = slf_attn(x, x, x, attn_mask=mask)
            enc_output = pos_ffn(enc_output)
            loss = enc_output.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
            log("attn", enc_slf_attn)
            log("w_qs grad", slf_attn.w_qs.grad)
            log("ln grad", pos_ffn.layer_norm.a_2.grad)

    run_both(program)


# karpathy/nn-zero-to-hero lectures/makemore/makemore_part5_cnn1.ipynb (the hierarchical
# "WaveNet" MLP from hand-written layer classes: ``Linear`` with ``self.out += self.bias``,
# ``BatchNorm1d`` averaging over ``dim=(0, 1)`` for 3-d inputs and rebinding its running stats
# under ``torch.no_grad()``, ``FlattenConsecutive`` by ``view`` and ``squeeze(1)``, a
# ``Sequential`` whose ``parameters()`` flattens the layers'; ``p.requires_grad = True`` on plain
# tensors, ``p.grad = None``, ``p.data += -lr * p.grad``, ``loss.log10().item()``; eval through
# ``@torch.no_grad()`` ``split_loss``; the closing cells forwarding ``Xtr[[7]]`` and assigning
# ``logits[i] = model(Xtr[[7+i]])``, a (1, 27) value into a (27,) row). A dozen names in place
# of names.txt, shuffled with the notebook's ``random.seed(42)``; n_embd 24 -> 4, n_hidden 128
# -> 8; the ``torch.randn`` weights and ``torch.randint`` minibatches (random stream) replaced
# by numpy-seeded ones; 3 SGD steps; sampling takes the argmax instead of ``torch.multinomial``
# (which draws from the random stream).
def test_makemore_part5_wavenet_by_hand():
    def program(torch, log):
        F = torch.nn.functional
        import random
        words = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia",
                 "harper", "evelyn", "abigail", "emily"]
        log("n words", (len(words), max(len(w) for w in words)))
        chars = sorted(list(set(''.join(words))))
        stoi = {s: i+1 for i, s in enumerate(chars)}
        stoi['.'] = 0
        itos = {i: s for s, i in stoi.items()}
        vocab_size = len(itos)
        with seeded(42):
            random.seed(42)
            random.shuffle(words)
        block_size = 8  # context length: how many characters do we take to predict the next one?

        def build_dataset(words):
            X, Y = [], []

            for w in words:
                context = [0] * block_size
                for ch in w + '.':
                    ix = stoi[ch]
                    X.append(context)
                    Y.append(ix)
                    context = context[1:] + [ix]  # crop and append

            X = torch.tensor(X)
            Y = torch.tensor(Y)
            print(X.shape, Y.shape)
            return X, Y

        n1 = int(0.8*len(words))
        n2 = int(0.9*len(words))
        Xtr, Ytr = build_dataset(words[:n1])     # 80%
        Xdev, Ydev = build_dataset(words[n1:n2])   # 10%
        Xte, Yte = build_dataset(words[n2:])     # 10%
        for x, y in zip(Xtr[:4], Ytr[:4]):
            print(''.join(itos[ix.item()] for ix in x), '-->', itos[y.item()])

        seeds = iter(range(30, 60))

        class Linear:

            def __init__(self, fan_in, fan_out, bias=True):
                self.weight = randn(torch, (fan_in, fan_out), next(seeds)) / fan_in**0.5  # note: kaiming init
                self.bias = torch.zeros(fan_out) if bias else None

            def __call__(self, x):
                self.out = x @ self.weight
                if self.bias is not None:
                    self.out += self.bias
                return self.out

            def parameters(self):
                return [self.weight] + ([] if self.bias is None else [self.bias])

        class BatchNorm1d:

            def __init__(self, dim, eps=1e-5, momentum=0.1):
                self.eps = eps
                self.momentum = momentum
                self.training = True
                # parameters (trained with backprop)
                self.gamma = torch.ones(dim)
                self.beta = torch.zeros(dim)
                # buffers (trained with a running 'momentum update')
                self.running_mean = torch.zeros(dim)
                self.running_var = torch.ones(dim)

            def __call__(self, x):
                # calculate the forward pass
                if self.training:
                    if x.ndim == 2:
                        dim = 0
                    elif x.ndim == 3:
                        dim = (0, 1)
                    xmean = x.mean(dim, keepdim=True)  # batch mean
                    xvar = x.var(dim, keepdim=True)  # batch variance
                else:
                    xmean = self.running_mean
                    xvar = self.running_var
                xhat = (x - xmean) / torch.sqrt(xvar + self.eps)  # normalize to unit variance
                self.out = self.gamma * xhat + self.beta
                # update the buffers
                if self.training:
                    with torch.no_grad():
                        self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                        self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
                return self.out

            def parameters(self):
                return [self.gamma, self.beta]

        class Tanh:
            def __call__(self, x):
                self.out = torch.tanh(x)
                return self.out

            def parameters(self):
                return []

        class Embedding:

            def __init__(self, num_embeddings, embedding_dim):
                self.weight = randn(torch, (num_embeddings, embedding_dim), next(seeds))

            def __call__(self, IX):
                self.out = self.weight[IX]
                return self.out

            def parameters(self):
                return [self.weight]

        class FlattenConsecutive:

            def __init__(self, n):
                self.n = n

            def __call__(self, x):
                B, T, C = x.shape
                x = x.view(B, T//self.n, C*self.n)
                if x.shape[1] == 1:
                    x = x.squeeze(1)
                self.out = x
                return self.out

            def parameters(self):
                return []

        class Sequential:

            def __init__(self, layers):
                self.layers = layers

            def __call__(self, x):
                for layer in self.layers:
                    x = layer(x)
                self.out = x
                return self.out

            def parameters(self):
                # get parameters of all layers and stretch them out into one list
                return [p for layer in self.layers for p in layer.parameters()]

        n_embd = 4
        n_hidden = 8
        model = Sequential([
            Embedding(vocab_size, n_embd),
            FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            FlattenConsecutive(2), Linear(n_hidden*2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            FlattenConsecutive(2), Linear(n_hidden*2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            Linear(n_hidden, vocab_size),
        ])

        # parameter init
        with torch.no_grad():
            model.layers[-1].weight *= 0.1  # last layer make less confident

        parameters = model.parameters()
        print(sum(p.nelement() for p in parameters))  # number of parameters in total
        for p in parameters:
            p.requires_grad = True

        max_steps = 3
        batch_size = 8
        lossi = []
        rs = np.random.RandomState(61)
        for i in range(max_steps):

            # minibatch construct
            ix = torch.tensor(rs.randint(0, Xtr.shape[0], (batch_size,)))
            Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y

            # forward pass
            logits = model(Xb)
            loss = F.cross_entropy(logits, Yb)  # loss function

            # backward pass
            for p in parameters:
                p.grad = None
            loss.backward()

            # update: simple SGD
            lr = 0.1 if i < 150000 else 0.01  # step learning rate decay
            for p in parameters:
                p.data += -lr * p.grad

            # track stats
            if i % 10000 == 0:  # print every once in a while
                print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')
            lossi.append(loss.log10().item())
        log("lossi", lossi)
        log("layer shapes", [tuple(layer.out.shape) for layer in model.layers])
        log("running", (model.layers[3].running_mean, model.layers[3].running_var))
        log("grads", [p.grad for p in parameters])

        # put layers into eval mode (needed for batchnorm especially)
        for layer in model.layers:
            layer.training = False

        # evaluate the loss
        @torch.no_grad()  # this decorator disables gradient tracking inside pytorch
        def split_loss(split):
            x, y = {
                'train': (Xtr, Ytr),
                'val': (Xdev, Ydev),
                'test': (Xte, Yte),
            }[split]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            print(split, f'{loss.item():.4f}')  # the notebook prints all digits (float32 rounding)
            return loss

        log("train", split_loss('train'))
        log("val requires_grad", split_loss('val').requires_grad)

        # sample from the model
        for _ in range(2):

            out = []
            context = [0] * block_size  # initialize with all ...
            while True:
                # forward pass the neural net
                logits = model(torch.tensor([context]))
                probs = F.softmax(logits, dim=1)
                # argmax in place of torch.multinomial(probs, num_samples=1)
                ix = torch.argmax(probs, dim=1, keepdim=True).item()
                # shift the context window and track the samples
                context = context[1:] + [ix]
                out.append(ix)
                # if we sample the special '.' token, break
                if ix == 0 or len(out) >= 6:
                    break

            print(''.join(itos[i] for i in out))  # decode and print the generated word

        # forward a single example:
        logits = model(Xtr[[7]])
        log("single", logits.shape)
        # forward all of them
        logits = torch.zeros(8, vocab_size)
        for i in range(8):
            logits[i] = model(Xtr[[7+i]])
        log("rows", logits)

    run_both(program)


# pytorch/vision torchvision/ops/boxes.py (remove_small_boxes through ``torch.where(keep)[0]``,
# clip_boxes_to_image's ``[..., 0::2]`` strided views, ``clamp`` and ``stack(..., dim=dim)``,
# box_convert, box_area/_box_inter_union with ``_upcast`` of half and integer boxes, box_iou,
# generalized_box_iou, complete_box_iou's ``torch.pi``/``atan`` term with its alpha under
# ``torch.no_grad()``, distance_box_iou and masks_to_boxes' ``y, x = torch.where(mask != 0)``
# and per-element assignment) with ops/_utils.py's ``_upcast`` and ops/_box_convert.py's
# ``unbind``/``stack`` converters. ``_log_api_usage_once`` (torchvision's logging) is left out
# and ``nms`` is a C++ operator, so batched NMS is not run; the ``torch.jit.is_scripting()``/
# ``is_tracing()`` guards stay. Boxes fitted to targets for 2 SGD steps on 1 - GIoU and 1 - CIoU.
def test_torchvision_box_ops():
    def program(torch, log):
        Tensor = torch.Tensor

        def _upcast(t: Tensor) -> Tensor:
            # Protects from numerical overflows in multiplications by upcasting to the equivalent higher type
            if t.is_floating_point():
                return t if t.dtype in (torch.float32, torch.float64) else t.float()
            else:
                return t if t.dtype in (torch.int32, torch.int64) else t.int()

        def _box_cxcywh_to_xyxy(boxes: Tensor) -> Tensor:
            cx, cy, w, h = boxes.unbind(-1)
            x1 = cx - 0.5 * w
            y1 = cy - 0.5 * h
            x2 = cx + 0.5 * w
            y2 = cy + 0.5 * h
            boxes = torch.stack((x1, y1, x2, y2), dim=-1)
            return boxes

        def _box_xyxy_to_cxcywh(boxes: Tensor) -> Tensor:
            x1, y1, x2, y2 = boxes.unbind(-1)
            cx = (x1 + x2) / 2
            cy = (y1 + y2) / 2
            w = x2 - x1
            h = y2 - y1
            boxes = torch.stack((cx, cy, w, h), dim=-1)
            return boxes

        def _box_xywh_to_xyxy(boxes: Tensor) -> Tensor:
            x, y, w, h = boxes.unbind(-1)
            boxes = torch.stack([x, y, x + w, y + h], dim=-1)
            return boxes

        def _box_xyxy_to_xywh(boxes: Tensor) -> Tensor:
            x1, y1, x2, y2 = boxes.unbind(-1)
            w = x2 - x1  # x2 - x1
            h = y2 - y1  # y2 - y1
            boxes = torch.stack((x1, y1, w, h), dim=-1)
            return boxes

        def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
            ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
            keep = (ws >= min_size) & (hs >= min_size)
            keep = torch.where(keep)[0]
            return keep

        def clip_boxes_to_image(boxes: Tensor, size) -> Tensor:
            dim = boxes.dim()
            boxes_x = boxes[..., 0::2]
            boxes_y = boxes[..., 1::2]
            height, width = size

            if torch.jit.is_scripting() or torch.jit.is_tracing():
                boxes_x = torch.max(boxes_x, torch.tensor(0, dtype=boxes.dtype, device=boxes.device))
                boxes_x = torch.min(boxes_x, torch.tensor(width, dtype=boxes.dtype, device=boxes.device))
                boxes_y = torch.max(boxes_y, torch.tensor(0, dtype=boxes.dtype, device=boxes.device))
                boxes_y = torch.min(boxes_y, torch.tensor(height, dtype=boxes.dtype, device=boxes.device))
            else:
                boxes_x = boxes_x.clamp(min=0, max=width)
                boxes_y = boxes_y.clamp(min=0, max=height)

            clipped_boxes = torch.stack((boxes_x, boxes_y), dim=dim)
            return clipped_boxes.reshape(boxes.shape)

        def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
            allowed_fmts = ("xyxy", "xywh", "cxcywh")
            if in_fmt not in allowed_fmts or out_fmt not in allowed_fmts:
                raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")

            if in_fmt == out_fmt:
                return boxes.clone()
            e = (in_fmt, out_fmt)
            if e == ("xywh", "xyxy"):
                boxes = _box_xywh_to_xyxy(boxes)
            elif e == ("cxcywh", "xyxy"):
                boxes = _box_cxcywh_to_xyxy(boxes)
            elif e == ("xyxy", "xywh"):
                boxes = _box_xyxy_to_xywh(boxes)
            elif e == ("xyxy", "cxcywh"):
                boxes = _box_xyxy_to_cxcywh(boxes)
            elif e == ("xywh", "cxcywh"):
                boxes = _box_xywh_to_xyxy(boxes)
                boxes = _box_xyxy_to_cxcywh(boxes)
            elif e == ("cxcywh", "xywh"):
                boxes = _box_cxcywh_to_xyxy(boxes)
                boxes = _box_xyxy_to_xywh(boxes)
            return boxes

        def box_area(boxes: Tensor) -> Tensor:
            boxes = _upcast(boxes)
            return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

        def _box_inter_union(boxes1: Tensor, boxes2: Tensor):
            area1 = box_area(boxes1)
            area2 = box_area(boxes2)

            lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
            rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]

            wh = _upcast(rb - lt).clamp(min=0)  # [N,M,2]
            inter = wh[:, :, 0] * wh[:, :, 1]  # [N,M]

            union = area1[:, None] + area2 - inter

            return inter, union

        def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
            inter, union = _box_inter_union(boxes1, boxes2)
            iou = inter / union
            return iou

        def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
            inter, union = _box_inter_union(boxes1, boxes2)
            iou = inter / union

            lti = torch.min(boxes1[:, None, :2], boxes2[:, :2])
            rbi = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])

            whi = _upcast(rbi - lti).clamp(min=0)  # [N,M,2]
            areai = whi[:, :, 0] * whi[:, :, 1]

            return iou - (areai - union) / areai

        def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
            boxes1 = _upcast(boxes1)
            boxes2 = _upcast(boxes2)

            diou, iou = _box_diou_iou(boxes1, boxes2, eps)

            w_pred = boxes1[:, None, 2] - boxes1[:, None, 0]
            h_pred = boxes1[:, None, 3] - boxes1[:, None, 1]

            w_gt = boxes2[:, 2] - boxes2[:, 0]
            h_gt = boxes2[:, 3] - boxes2[:, 1]

            v = (4 / (torch.pi**2)) * torch.pow(torch.atan(w_pred / h_pred) - torch.atan(w_gt / h_gt), 2)
            with torch.no_grad():
                alpha = v / (1 - iou + v + eps)
            return diou - alpha * v

        def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
            boxes1 = _upcast(boxes1)
            boxes2 = _upcast(boxes2)
            diou, _ = _box_diou_iou(boxes1, boxes2, eps=eps)
            return diou

        def _box_diou_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7):

            iou = box_iou(boxes1, boxes2)
            lti = torch.min(boxes1[:, None, :2], boxes2[:, :2])
            rbi = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
            whi = _upcast(rbi - lti).clamp(min=0)  # [N,M,2]
            diagonal_distance_squared = (whi[:, :, 0] ** 2) + (whi[:, :, 1] ** 2) + eps
            # centers of boxes
            x_p = (boxes1[:, 0] + boxes1[:, 2]) / 2
            y_p = (boxes1[:, 1] + boxes1[:, 3]) / 2
            x_g = (boxes2[:, 0] + boxes2[:, 2]) / 2
            y_g = (boxes2[:, 1] + boxes2[:, 3]) / 2
            # The distance between boxes' centers squared.
            centers_distance_squared = (_upcast(x_p[:, None] - x_g[None, :]) ** 2) + (_upcast(y_p[:, None] - y_g[None, :]) ** 2)
            # The distance IoU is the IoU penalized by a normalized
            # distance between boxes' centers squared.
            return iou - (centers_distance_squared / diagonal_distance_squared), iou

        def masks_to_boxes(masks: torch.Tensor) -> torch.Tensor:
            if masks.numel() == 0:
                return torch.zeros((0, 4), device=masks.device, dtype=torch.float)

            n = masks.shape[0]

            bounding_boxes = torch.zeros((n, 4), device=masks.device, dtype=torch.float)

            for index, mask in enumerate(masks):
                y, x = torch.where(mask != 0)

                bounding_boxes[index, 0] = torch.min(x)
                bounding_boxes[index, 1] = torch.min(y)
                bounding_boxes[index, 2] = torch.max(x)
                bounding_boxes[index, 3] = torch.max(y)

            return bounding_boxes

        rs = np.random.RandomState(21)
        xy = rs.uniform(0, 8, size=(5, 2))
        wh = rs.uniform(0.5, 5, size=(5, 2))
        boxes_np = np.concatenate([xy, xy + wh], 1).astype(np.float32)
        boxes = torch.tensor(boxes_np)
        log("jit guards", (torch.jit.is_scripting(), torch.jit.is_tracing()))
        log("small", remove_small_boxes(boxes, 2.0))
        log("clipped", clip_boxes_to_image(boxes, (6, 7)))
        log("clipped batched", clip_boxes_to_image(boxes.view(1, 5, 4), (6, 7)))
        for a, b in [("xyxy", "cxcywh"), ("xyxy", "xywh"), ("xywh", "cxcywh"), ("cxcywh", "xywh")]:
            log("convert " + a + b, box_convert(boxes, a, b))
        log_outcome(log, "bad fmt", lambda: box_convert(boxes, "xyxy", "yxyx"))
        log("area half", box_area(boxes.half()))
        log("area int16", box_area((boxes * 10).to(torch.int16)))
        log("area uint8", box_area(boxes.to(torch.uint8)))
        log("iou", box_iou(boxes, boxes[:3]))
        log("iou double", box_iou(boxes.double(), boxes[:2].double()))
        masks = torch.zeros(3, 6, 7, dtype=torch.bool)
        masks[0, 1:4, 2:6] = True
        masks[1, 0, 0] = True
        masks[2, 2:, 3] = True
        log("masks_to_boxes", masks_to_boxes(masks))
        log("masks_to_boxes empty", masks_to_boxes(torch.zeros(0, 4, 4)))

        target = torch.tensor(boxes_np[:, [0, 1, 2, 3]] + rs.uniform(-0.5, 0.5, size=(5, 4)).astype(np.float32))
        pred = boxes.clone().requires_grad_(True)
        opt = torch.optim.SGD([pred], lr=0.5)
        for step in range(2):
            giou = torch.diag(generalized_box_iou(pred, target))
            ciou = torch.diag(complete_box_iou(pred, target))
            loss = (1 - giou).mean() + (1 - ciou).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
            log("grad", pred.grad)
        log("diou", distance_box_iou(pred.detach(), target))

    run_both(program)
