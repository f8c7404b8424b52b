"""More public PyTorch programs, each condensed to its model, loss, optimizer and training step
and run compiled == eager == torch with the harness (tiny sizes, synthetic data in place of the
downloads). The full programs were run unchanged with ``import torch`` resolving to tracegrad:

- pytorch/examples siamese_network/main.py (a shared tower, BCELoss, Adadelta, StepLR);
- pytorch/examples super_resolution/model.py + main.py (PixelShuffle, orthogonal_ init, Adam);
- pytorch/examples fast_neural_style/neural_style (TransformerNet: ReflectionPad2d, InstanceNorm2d,
  nearest interpolate; a frozen feature net; gram matrices; normalize_batch's in-place div_);
- pytorch/examples gcn/main.py (GraphConv with torch.Tensor + xavier_normal_, torch.spmm on a
  dense normalized adjacency: tracegrad has no sparse layouts) and gat/main.py (multi-head graph
  attention with a connectivity mask);
- pytorch/examples mnist_hogwild/train.py (one process: Dropout2d, dropout, SGD momentum);
- karpathy/makemore makemore.py (Bigram, MLP with roll + in-place write, RNN/GRU cells unrolled
  in Python, causal BoW, AdamW, cross_entropy with ignore_index=-1).
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- siamese_network/main.py ------------------------------------------------------------------
def siamese_program(mod, wrap):
    nn = mod.nn

    class SiameseNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            # the resnet18 tower minus its fc, shrunk: conv, batchnorm, relu, global average pool
            tower = nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                                  nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(4, 3))
            self.resnet = nn.Sequential(*(list(tower.children())[:-1]))
            self.fc = nn.Sequential(nn.Linear(4 * 2, 6), nn.ReLU(inplace=True), nn.Linear(6, 1))
            self.sigmoid = nn.Sigmoid()
            self.resnet.apply(self.init_weights)
            self.fc.apply(self.init_weights)

        def init_weights(self, m):
            if isinstance(m, nn.Linear):
                mod.nn.init.xavier_uniform_(m.weight)
                m.bias.data.fill_(0.01)

        def forward_once(self, x):
            output = self.resnet(x)
            return output.view(output.size()[0], -1)

        def forward(self, input1, input2):
            output = mod.cat((self.forward_once(input1), self.forward_once(input2)), 1)
            return self.sigmoid(self.fc(output))

    model = np_init(SiameseNetwork(), mod)
    opt = mod.optim.Adadelta(model.parameters(), lr=1.0)
    sched = mod.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()

    def step(images_1, images_2, targets):
        model.train()
        opt.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        opt.step()
        return loss, mod.where(outputs > 0.5, 1, 0)
    return wrap(step), {"model": model, "opt": opt, "sched": sched}, \
        lambda i: (data(mod, i, 4, 1, 6, 6), data(mod, i, 4, 1, 6, 6, seed=300), (labels(mod, i, 4, 2) * 1.0))


def test_siamese_network_adadelta_steplr():
    _no_breaks(check_compiled(siamese_program, calls=2, between=lambda s, i: s["sched"].step(),
                              torch_too=True, rtol=1e-4, atol=1e-5))


# ---- super_resolution/model.py ------------------------------------------------------------------
def super_resolution_program(mod, wrap):
    nn, init = mod.nn, mod.nn.init

    class Net(nn.Module):
        def __init__(self, upscale_factor):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 6, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(6, 6, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(6, 4, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(4, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
            init.orthogonal_(self.conv4.weight)

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))

    model = np_init(Net(upscale_factor=2), mod, scale=0.2)
    criterion = nn.MSELoss()
    opt = mod.optim.Adam(model.parameters(), lr=0.01)

    def step(input, target):
        opt.zero_grad()
        loss = criterion(model(input), target)
        loss.backward()
        opt.step()
        return loss
    return wrap(step), {"model": model, "opt": opt}, \
        lambda i: (data(mod, i, 2, 1, 4, 4), data(mod, i, 2, 1, 8, 8, seed=300))


def test_super_resolution_pixel_shuffle_adam():
    _no_breaks(check_compiled(super_resolution_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-5))


def test_orthogonal_init_is_orthogonal_like_torch():
    torch = pytest.importorskip("torch")
    for shape in [(6, 1, 5, 5), (4, 12), (12, 4)]:
        w = tracegrad.empty(*shape)
        tracegrad.nn.init.orthogonal_(w, gain=2.0)
        flat = w.reshape(shape[0], -1).numpy().astype(np.float64)
        rows, cols = flat.shape
        g = flat @ flat.T if rows <= cols else flat.T @ flat
        np.testing.assert_allclose(g, 4.0 * np.eye(min(rows, cols)), atol=1e-4)
        ref = torch.empty(*shape)
        torch.nn.init.orthogonal_(ref, gain=2.0)
        assert tuple(ref.shape) == tuple(w.shape)


# ---- fast_neural_style/neural_style -----------------------------------------------------------
def neural_style_program(mod, wrap):
    nn = mod.nn

    class ConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride):
            super().__init__()
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            return self.conv2d(self.reflection_pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in1 = nn.InstanceNorm2d(channels, affine=True)
            self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in2 = nn.InstanceNorm2d(channels, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x):
            out = self.relu(self.in1(self.conv1(x)))
            return self.in2(self.conv2(out)) + x

    class UpsampleConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
            super().__init__()
            self.upsample = upsample
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            if self.upsample:
                x = nn.functional.interpolate(x, mode='nearest', scale_factor=self.upsample)
            return self.conv2d(self.reflection_pad(x))

    class TransformerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = ConvLayer(3, 4, kernel_size=3, stride=1)
            self.in1 = nn.InstanceNorm2d(4, affine=True)
            self.conv2 = ConvLayer(4, 4, kernel_size=3, stride=2)
            self.in2 = nn.InstanceNorm2d(4, affine=True)
            self.res1 = ResidualBlock(4)
            self.deconv1 = UpsampleConvLayer(4, 4, kernel_size=3, stride=1, upsample=2)
            self.in4 = nn.InstanceNorm2d(4, affine=True)
            self.deconv3 = ConvLayer(4, 3, kernel_size=3, stride=1)
            self.relu = nn.ReLU()

        def forward(self, X):
            y = self.relu(self.in1(self.conv1(X)))
            y = self.relu(self.in2(self.conv2(y)))
            y = self.res1(y)
            y = self.relu(self.in4(self.deconv1(y)))
            return self.deconv3(y)

    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        return features.bmm(features.transpose(1, 2)) / (ch * h * w)

    def normalize_batch(batch):
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        batch = batch.div_(255.0)
        return (batch - mean) / std

    transformer = np_init(TransformerNet(), mod, scale=0.3)
    # Vgg16(requires_grad=False): slices of a frozen feature stack
    vgg = np_init(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True),
                                nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2)), mod, seed=5)
    for param in vgg.parameters():
        param.requires_grad = False

    def features(x):
        h1 = vgg[1](vgg[0](x))
        return h1, vgg[4](vgg[3](vgg[2](h1)))

    # eps: the conv biases in front of InstanceNorm get zero gradient up to rounding, which Adam's
    # g / sqrt(v) would blow up to +-lr
    opt = mod.optim.Adam(transformer.parameters(), 1e-2, eps=1e-3)
    mse_loss = nn.MSELoss()
    style = (data(mod, 50, 1, 3, 8, 8).abs() * 100).repeat(2, 1, 1, 1)
    gram_style = [gram_matrix(y) for y in features(normalize_batch(style))]

    def step(x):
        n_batch = len(x)
        opt.zero_grad()
        y = normalize_batch(transformer(x))
        x = normalize_batch(x)
        features_y, features_x = features(y), features(x)
        content_loss = 1e2 * mse_loss(features_y[1], features_x[1])
        style_loss = 0.
        for ft_y, gm_s in zip(features_y, gram_style):
            style_loss += mse_loss(gram_matrix(ft_y), gm_s[:n_batch, :, :])
        style_loss *= 1e3
        total_loss = content_loss + style_loss
        total_loss.backward()
        opt.step()
        return content_loss, style_loss
    return wrap(step), {"transformer": transformer, "vgg": vgg, "opt": opt}, \
        lambda i: ((data(mod, i, 2, 3, 8, 8).abs() * 100),)


def test_fast_neural_style_transformer_net_and_gram_loss():
    _no_breaks(check_compiled(neural_style_program, calls=2, torch_too=True, rtol=1e-4, atol=1e-4))


# ---- gcn/main.py and gat/main.py ----------------------------------------------------------------
def _graph(mod, n=6):
    rng = np.random.RandomState(7)
    adj = (rng.rand(n, n) < 0.4).astype(np.float32)
    adj = np.maximum(adj, adj.T) + np.eye(n, dtype=np.float32)
    d = adj.sum(1) ** -0.5
    return mod.tensor(adj), mod.tensor(d[:, None] * adj * d[None, :])


def gcn_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(mod.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(mod.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = mod.mm(input_tensor, self.kernel)
            output = mod.spmm(adj_mat, support)
            if self.bias is not None:
                output = output + self.bias
            return output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
            super().__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = F.relu(self.gc1(input_tensor, adj_mat))
            x = self.dropout(x)
            return F.log_softmax(self.gc2(x, adj_mat), dim=1)

    _, adj = _graph(mod)
    features = data(mod, 0, 6, 5)
    target = labels(mod, 0, 6, 3)
    mask_train, mask_val = mod.tensor([0, 1, 2, 3]), mod.tensor([4, 5])
    gcn = np_init(GCN(5, 4, 3, True, 0.0), mod)
    optimizer = mod.optim.Adam(gcn.parameters(), lr=0.05, weight_decay=5e-4)
    criterion = nn.NLLLoss()

    def train_iter():
        gcn.train()
        optimizer.zero_grad()
        output = gcn(features, adj)
        loss = criterion(output[mask_train], target[mask_train])
        loss.backward()
        optimizer.step()
        gcn.eval()
        with mod.no_grad():
            out = gcn(features, adj)
            acc = (out[mask_val].argmax(dim=1) == target[mask_val]).float().mean()
        return loss, acc
    return wrap(train_iter), {"gcn": gcn, "opt": optimizer}, lambda i: ()


def test_gcn_graph_conv_with_spmm_adam_weight_decay():
    _no_breaks(check_compiled(gcn_program, calls=2, torch_too=True))


def gat_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class GraphAttentionLayer(nn.Module):
        def __init__(self, in_features, out_features, n_heads, concat=False, dropout=0.4, leaky_relu_slope=0.2):
            super().__init__()
            self.n_heads, self.concat, self.dropout = n_heads, concat, dropout
            self.n_hidden = out_features // n_heads if concat else out_features
            self.W = nn.Parameter(mod.empty(size=(in_features, self.n_hidden * n_heads)))
            self.a = nn.Parameter(mod.empty(size=(n_heads, 2 * self.n_hidden, 1)))
            self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
            self.softmax = nn.Softmax(dim=1)
            nn.init.xavier_normal_(self.W)
            nn.init.xavier_normal_(self.a)

        def _get_attention_scores(self, h_transformed):
            source_scores = mod.matmul(h_transformed, self.a[:, :self.n_hidden, :])
            target_scores = mod.matmul(h_transformed, self.a[:, self.n_hidden:, :])
            return self.leakyrelu(source_scores + target_scores.mT)

        def forward(self, h, adj_mat):
            n_nodes = h.shape[0]
            h_transformed = mod.mm(h, self.W)
            h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
            h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
            e = self._get_attention_scores(h_transformed)
            connectivity_mask = -9e16 * mod.ones_like(e)
            e = mod.where(adj_mat > 0, e, connectivity_mask)
            attention = F.softmax(e, dim=-1)
            attention = F.dropout(attention, self.dropout, training=self.training)
            h_prime = mod.matmul(attention, h_transformed)
            if self.concat:
                return h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.n_heads * self.n_hidden)
            return h_prime.mean(dim=0)

    class GAT(nn.Module):
        def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4):
            super().__init__()
            self.gat1 = GraphAttentionLayer(in_features, n_hidden, n_heads, concat=concat, dropout=dropout)
            self.gat2 = GraphAttentionLayer(n_hidden, num_classes, 1, concat=False, dropout=dropout)

        def forward(self, input_tensor, adj_mat):
            x = F.elu(self.gat1(input_tensor, adj_mat))
            return F.log_softmax(self.gat2(x, adj_mat), dim=1)

    adj, _ = _graph(mod)
    features, target = data(mod, 0, 6, 5), labels(mod, 0, 6, 3)
    idx_train = mod.tensor([0, 1, 2, 3])
    gat = np_init(GAT(5, 4, 2, 3, concat=True, dropout=0.0), mod)
    optimizer = mod.optim.Adam(gat.parameters(), lr=0.05, weight_decay=5e-4)
    criterion = nn.NLLLoss()

    def step():
        gat.train()
        optimizer.zero_grad()
        output = gat(features, adj)
        loss = criterion(output[idx_train], target[idx_train])
        loss.backward()
        optimizer.step()
        return loss
    return wrap(step), {"gat": gat, "opt": optimizer}, lambda i: ()


def test_gat_multi_head_attention_with_connectivity_mask():
    _no_breaks(check_compiled(gat_program, calls=2, torch_too=True))


# ---- mnist_hogwild/train.py (one process) -------------------------------------------------------
def hogwild_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 3, kernel_size=3)
            self.conv2 = nn.Conv2d(3, 4, kernel_size=3)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(16, 6)
            self.fc2 = nn.Linear(6, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 16)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, training=self.training)
            return F.log_softmax(self.fc2(x), dim=1)

    model = np_init(Net(), mod)
    optimizer = mod.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)

    def train_epoch(data, target):
        model.train()
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        return loss
    return wrap(train_epoch), {"model": model, "opt": optimizer}, \
        lambda i: (data(mod, i, 3, 1, 14, 14), labels(mod, i, 3, 10))


def test_mnist_hogwild_train_epoch_with_dropout():
    # dropout draws from the generator: compiled equals eager (torch's masks differ)
    _no_breaks(check_compiled(hogwild_program, calls=2))


# ---- karpathy/makemore makemore.py --------------------------------------------------------------
def makemore_program(kind):
    def make(mod, wrap):
        nn, F = mod.nn, mod.nn.functional
        V, T, E, H = 5, 4, 4, 6

        class RNNCell(nn.Module):
            def __init__(self):
                super().__init__()
                self.xh_to_h = nn.Linear(E + H, H)

            def forward(self, xt, hprev):
                return F.tanh(self.xh_to_h(mod.cat([xt, hprev], dim=1)))

        class GRUCell(nn.Module):
            def __init__(self):
                super().__init__()
                self.xh_to_z, self.xh_to_r, self.xh_to_hbar = nn.Linear(E + H, H), nn.Linear(E + H, H), nn.Linear(E + H, H)

            def forward(self, xt, hprev):
                xh = mod.cat([xt, hprev], dim=1)
                r = F.sigmoid(self.xh_to_r(xh))
                hbar = F.tanh(self.xh_to_hbar(mod.cat([xt, r * hprev], dim=1)))
                z = F.sigmoid(self.xh_to_z(xh))
                return (1 - z) * hprev + z * hbar

        class RNN(nn.Module):
            def __init__(self, cell):
                super().__init__()
                self.start = nn.Parameter(mod.zeros(1, H))
                self.wte = nn.Embedding(V, E)
                self.cell = cell
                self.lm_head = nn.Linear(H, V)

            def forward(self, idx):
                b, t = idx.size()
                emb = self.wte(idx)
                hprev = self.start.expand((b, -1))
                hiddens = []
                for i in range(t):
                    hprev = self.cell(emb[:, i, :], hprev)
                    hiddens.append(hprev)
                return self.lm_head(mod.stack(hiddens, 1))

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = nn.Embedding(V + 1, E)
                self.mlp = nn.Sequential(nn.Linear(T * E, H), nn.Tanh(), nn.Linear(H, V))

            def forward(self, idx):
                embs = []
                for k in range(T):
                    embs.append(self.wte(idx))
                    idx = mod.roll(idx, 1, 1)
                    idx[:, 0] = V
                return self.mlp(mod.cat(embs, -1))

        class BoW(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = nn.Embedding(V, E), nn.Embedding(T, E)
                self.register_buffer("bias", mod.tril(mod.ones(T, T)).view(1, T, T))
                self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(E, H), c_proj=nn.Linear(H, E)))
                m = self.mlp
                self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))
                self.lm_head = nn.Linear(E, V)

            def forward(self, idx):
                b, t = idx.size()
                pos = mod.arange(0, t, dtype=mod.long).unsqueeze(0)
                x = self.wte(idx) + self.wpe(pos)
                att = mod.zeros((b, t, t))
                att = att.masked_fill(self.bias[:, :t, :t] == 0, float('-inf'))
                x = x + F.softmax(att, dim=-1) @ x
                x = x + self.mlpf(x)
                return self.lm_head(x)

        class Bigram(nn.Module):
            def __init__(self):
                super().__init__()
                self.logits = nn.Parameter(mod.zeros((V, V)))

            def forward(self, idx):
                return self.logits[idx]

        model = {"rnn": lambda: RNN(RNNCell()), "gru": lambda: RNN(GRUCell()), "mlp": MLP, "bow": BoW,
                 "bigram": Bigram}[kind]()
        model = np_init(model, mod)
        optimizer = mod.optim.AdamW(model.parameters(), lr=5e-2, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)

        def step(X, Y):
            logits = model(X)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1), ignore_index=-1)
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            return loss

        def batch(i):
            x = labels(mod, i, 3 * T, V).view(3, T)
            y = mod.roll(x, -1, 1)
            y[:, -1] = -1          # the dataset masks the positions past the word's end
            return x, y
        return wrap(step), {"model": model, "opt": optimizer}, batch
    return make


@pytest.mark.parametrize("kind", ["mlp", "gru", "bow"])   # bigram and the plain RNN cell ran too
def test_makemore_models_adamw_ignore_index(kind):
    _no_breaks(check_compiled(makemore_program(kind), calls=2, torch_too=True))
