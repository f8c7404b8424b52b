"""An eighth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round5.py``: classic model-zoo blocks, losses, RL and few-shot code that
earlier rounds did not reach. Each keeps its program's code at tiny sizes (fewer channels, steps
and samples), with numpy-seeded data and parameters (``init_params``/``randn``) in place of
downloads and random streams (sampling, ``randperm``, dropout masks), and fake environments in
place of gym; where a program's own code had to change, the comment above its test says how and
why. Programs written for old torch keep their old idioms (``Variable``, ``.data``, legacy typed
constructors, ``torch.sparse.FloatTensor``) and, where torch now raises (``loss.data[0]``), the
test checks that tracegrad raises the same class.
"""
import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


# kuangliu/pytorch-cifar models/resnet.py (BasicBlock with an empty nn.Sequential() shortcut and
# ``out += self.shortcut(x)``, PreActBlock's ``hasattr(self, 'shortcut')``, Bottleneck's
# expansion, _make_layer's strides list, F.avg_pool2d(out, 4) and out.view(out.size(0), -1));
# num_blocks [1, 1, 1, 1] in place of [2, 2, 2, 2], the widths kept, one 32x32 image
def test_kuangliu_cifar_resnet():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        def conv3x3(in_planes, out_planes, stride=1):
            return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

        class BasicBlock(nn.Module):
            expansion = 1

            def __init__(self, in_planes, planes, stride=1):
                super(BasicBlock, self).__init__()
                self.conv1 = conv3x3(in_planes, planes, stride)
                self.bn1 = nn.BatchNorm2d(planes)
                self.conv2 = conv3x3(planes, planes)
                self.bn2 = nn.BatchNorm2d(planes)
                self.shortcut = nn.Sequential()
                if stride != 1 or in_planes != self.expansion * planes:
                    self.shortcut = nn.Sequential(
                        nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                        nn.BatchNorm2d(self.expansion * planes))

            def forward(self, x):
                out = F.relu(self.bn1(self.conv1(x)))
                out = self.bn2(self.conv2(out))
                out += self.shortcut(x)
                out = F.relu(out)
                return out

        class PreActBlock(nn.Module):
            expansion = 1

            def __init__(self, in_planes, planes, stride=1):
                super(PreActBlock, self).__init__()
                self.bn1 = nn.BatchNorm2d(in_planes)
                self.conv1 = conv3x3(in_planes, planes, stride)
                self.bn2 = nn.BatchNorm2d(planes)
                self.conv2 = conv3x3(planes, planes)
                if stride != 1 or in_planes != self.expansion * planes:
                    self.shortcut = nn.Sequential(
                        nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False))

            def forward(self, x):
                out = F.relu(self.bn1(x))
                shortcut = self.shortcut(out) if hasattr(self, 'shortcut') else x
                out = self.conv1(out)
                out = self.conv2(F.relu(self.bn2(out)))
                out += shortcut
                return out

        class ResNet(nn.Module):
            def __init__(self, block, num_blocks, num_classes=10):
                super(ResNet, self).__init__()
                self.in_planes = 64
                self.conv1 = conv3x3(3, 64)
                self.bn1 = nn.BatchNorm2d(64)
                self.layer1 = self._make_layer(block, 64, num_blocks[0], stride=1)
                self.layer2 = self._make_layer(block, 128, num_blocks[1], stride=2)
                self.layer3 = self._make_layer(block, 256, num_blocks[2], stride=2)
                self.layer4 = self._make_layer(block, 512, num_blocks[3], stride=2)
                self.linear = nn.Linear(512 * block.expansion, num_classes)

            def _make_layer(self, block, planes, num_blocks, stride):
                strides = [stride] + [1] * (num_blocks - 1)
                layers = []
                for stride in strides:
                    layers.append(block(self.in_planes, planes, stride))
                    self.in_planes = planes * block.expansion
                return nn.Sequential(*layers)

            def forward(self, x):
                out = F.relu(self.bn1(self.conv1(x)))
                out = self.layer1(out)
                out = self.layer2(out)
                out = self.layer3(out)
                out = self.layer4(out)
                out = F.avg_pool2d(out, 4)
                out = out.view(out.size(0), -1)
                out = self.linear(out)
                return out

        x = randn(torch, (2, 3, 32, 32), 1)
        targets = torch.tensor([3, 7])
        for seed, block in enumerate((BasicBlock, PreActBlock)):
            net = init_params(torch, ResNet(block, [1, 1, 1, 1]), 10 + seed, scale=0.05)
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
            net.train()
            for _ in range(1 if seed else 2):
                optimizer.zero_grad()
                outputs = net(x)
                loss = nn.CrossEntropyLoss()(outputs, targets)
                loss.backward()
                optimizer.step()
                _, predicted = outputs.max(1)
                log("loss", loss.item())
                log("correct", predicted.eq(targets).sum().item())
            log("bn running_mean", net.layer2[0].bn1.running_mean)
            log("conv grad", net.layer4[0].conv2.weight.grad[:2, :2])
            if not seed:
                net.eval()
                with torch.no_grad():
                    log("eval out", net(x))
        print(outputs.size())
    run_both(program)


# clcarwin/focal_loss_pytorch focalloss.py (``isinstance(alpha, (float, int, long))`` with the
# Python 2 name bound to int as its Python 3 users do, F.log_softmax without dim, gather,
# ``Variable(logpt.data.exp())``, ``self.alpha.type() != input.data.type()`` and type_as,
# N,C,H,W inputs flattened through view/transpose/contiguous) and its test's training loop
def test_clcarwin_focal_loss():
    def program(torch, log):
        import warnings
        nn, F, Variable = torch.nn, torch.nn.functional, torch.autograd.Variable
        long = int

        class FocalLoss(nn.Module):
            def __init__(self, gamma=0, alpha=None, size_average=True):
                super(FocalLoss, self).__init__()
                self.gamma = gamma
                self.alpha = alpha
                if isinstance(alpha, (float, int, long)): self.alpha = torch.Tensor([alpha, 1 - alpha])
                if isinstance(alpha, list): self.alpha = torch.Tensor(alpha)
                self.size_average = size_average

            def forward(self, input, target):
                if input.dim() > 2:
                    input = input.view(input.size(0), input.size(1), -1)  # N,C,H,W => N,C,H*W
                    input = input.transpose(1, 2)    # N,C,H*W => N,H*W,C
                    input = input.contiguous().view(-1, input.size(2))   # N,H*W,C => N*H*W,C
                target = target.view(-1, 1)
                logpt = F.log_softmax(input)
                logpt = logpt.gather(1, target)
                logpt = logpt.view(-1)
                pt = Variable(logpt.data.exp())
                if self.alpha is not None:
                    if self.alpha.type() != input.data.type():
                        self.alpha = self.alpha.type_as(input.data)
                    at = self.alpha.gather(0, target.data.view(-1))
                    logpt = logpt * Variable(at)
                loss = -1 * (1 - pt) ** self.gamma * logpt
                if self.size_average: return loss.mean()
                else: return loss.sum()

        rs = np.random.RandomState(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = randn(torch, (4, 2, 3, 3), 4, requires_grad=True)
            l = torch.tensor(rs.randint(0, 2, (4, 3, 3)))
            output0 = FocalLoss(gamma=0)(x, l)
            output1 = nn.NLLLoss2d()(F.log_softmax(x), l) if hasattr(nn, "NLLLoss2d") else \
                nn.NLLLoss()(F.log_softmax(x, 1), l)
            log("gamma 0 == nll", [output0, output1])
            x2 = randn(torch, (6, 5), 5, requires_grad=True)
            l2 = torch.tensor(rs.randint(0, 5, 6))
            for gamma, alpha in ((2, None), (2, [0.1, 0.2, 0.3, 0.2, 0.2]), (1.5, 0.25)):
                fl = FocalLoss(gamma=gamma, alpha=alpha, size_average=alpha is None)
                xin = x if isinstance(alpha, float) else x2
                lin = l if isinstance(alpha, float) else l2
                loss = fl(xin, lin)
                loss.backward()
                log("loss", loss)
                log("grad", xin.grad)
                log("alpha", fl.alpha)
                xin.grad = None
    run_both(program)


# tkipf/pygcn pygcn/utils.py, layers.py, models.py, train.py (scipy.sparse row normalisation,
# sparse_mx_to_torch_sparse_tensor through the legacy ``torch.sparse.FloatTensor(indices,
# values, shape)``, torch.spmm of the sparse adjacency, Parameter(torch.FloatTensor(n, m)) with
# ``.data.uniform_`` replaced by numpy-seeded values, accuracy's ``max(1)[1].type_as`` and
# ``.double()``); a random 12-node graph in place of cora, --dropout 0, 4 epochs
@pytest.mark.filterwarnings("ignore:torch.sparse.SparseTensor")
def test_pygcn_train():
    sp = pytest.importorskip("scipy.sparse")

    def program(torch, log):
        import math
        F, optim = torch.nn.functional, torch.optim
        Parameter, Module = torch.nn.parameter.Parameter, torch.nn.modules.module.Module

        def normalize(mx):
            rowsum = np.array(mx.sum(1))
            r_inv = np.power(rowsum, -1).flatten()
            r_inv[np.isinf(r_inv)] = 0.
            r_mat_inv = sp.diags(r_inv)
            mx = r_mat_inv.dot(mx)
            return mx

        def accuracy(output, labels):
            preds = output.max(1)[1].type_as(labels)
            correct = preds.eq(labels).double()
            correct = correct.sum()
            return correct / len(labels)

        def sparse_mx_to_torch_sparse_tensor(sparse_mx):
            sparse_mx = sparse_mx.tocoo().astype(np.float32)
            indices = torch.from_numpy(np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
            values = torch.from_numpy(sparse_mx.data)
            shape = torch.Size(sparse_mx.shape)
            return torch.sparse.FloatTensor(indices, values, shape)

        class GraphConvolution(Module):
            def __init__(self, in_features, out_features, bias=True):
                super(GraphConvolution, self).__init__()
                self.in_features = in_features
                self.out_features = out_features
                self.weight = Parameter(torch.FloatTensor(in_features, out_features))
                if bias:
                    self.bias = Parameter(torch.FloatTensor(out_features))
                else:
                    self.register_parameter('bias', None)
                self.reset_parameters()

            def reset_parameters(self):
                stdv = 1. / math.sqrt(self.weight.size(1))
                self.weight.data.uniform_(-stdv, stdv)
                if self.bias is not None:
                    self.bias.data.uniform_(-stdv, stdv)

            def forward(self, input, adj):
                support = torch.mm(input, self.weight)
                output = torch.spmm(adj, support)
                if self.bias is not None:
                    return output + self.bias
                else:
                    return output

            def __repr__(self):
                return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' \
                    + str(self.out_features) + ')'

        class GCN(torch.nn.Module):
            def __init__(self, nfeat, nhid, nclass, dropout):
                super(GCN, self).__init__()
                self.gc1 = GraphConvolution(nfeat, nhid)
                self.gc2 = GraphConvolution(nhid, nclass)
                self.dropout = dropout

            def forward(self, x, adj):
                x = F.relu(self.gc1(x, adj))
                x = F.dropout(x, self.dropout, training=self.training)
                x = self.gc2(x, adj)
                return F.log_softmax(x, dim=1)

        rs = np.random.RandomState(0)
        n = 12
        edges = rs.randint(0, n, (20, 2))
        adj = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])), shape=(n, n),
                            dtype=np.float32)
        adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)
        features = normalize(sp.csr_matrix(rs.randint(0, 2, (n, 7)), dtype=np.float32))
        adj = normalize(adj + sp.eye(adj.shape[0]))
        features = torch.FloatTensor(np.array(features.todense()))
        labels = torch.LongTensor(rs.randint(0, 3, n))
        adj = sparse_mx_to_torch_sparse_tensor(adj)
        idx_train, idx_val = torch.LongTensor(range(6)), torch.LongTensor(range(6, 12))
        model = GCN(nfeat=features.shape[1], nhid=5, nclass=labels.max().item() + 1, dropout=0.0)
        init_params(torch, model, 1)
        print(model.gc1)
        optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        for epoch in range(4):
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
            print('Epoch: {:04d}'.format(epoch + 1), 'loss_train: {:.4f}'.format(loss_train.item()),
                  'acc_train: {:.4f}'.format(acc_train.item()), 'loss_val: {:.4f}'.format(loss_val.item()),
                  'acc_val: {:.4f}'.format(acc_val.item()))
            log("losses", [loss_train, acc_train, loss_val, acc_val])
        log("adj", adj.to_dense())
        log("gc1 grad", model.gc1.weight.grad)
    run_both(program)


# orobix/Prototypical-Networks-for-Few-shot-Learning-PyTorch src/prototypical_loss.py
# (euclidean_dist through unsqueeze/expand, np.unique over a tensor, torch.nonzero(t.eq(int(c)))
# slices and squeeze, torch.stack of per-class means, log_softmax(-dists).view(n_classes,
# n_query, -1), gather of expanded arange indices, ``log_p_y.max(2)``) with its train loop's
# Adam step over a small conv embedding (protonet's conv_block: Conv2d, BatchNorm2d, ReLU,
# MaxPool2d); torch.stack(list(map(...))) as its current version has it
def test_orobix_prototypical_loss():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        def euclidean_dist(x, y):
            n = x.size(0)
            m = y.size(0)
            d = x.size(1)
            if d != y.size(1):
                raise Exception
            x = x.unsqueeze(1).expand(n, m, d)
            y = y.unsqueeze(0).expand(n, m, d)
            return torch.pow(x - y, 2).sum(2)

        def prototypical_loss(input, target, n_support):
            target_cpu = target.to('cpu')
            input_cpu = input.to('cpu')

            def supp_idxs(c):
                return target_cpu.eq(c).nonzero()[:n_support].squeeze(1)

            classes = torch.unique(target_cpu)
            n_classes = len(classes)
            n_query = target_cpu.eq(classes[0].item()).sum().item() - n_support
            support_idxs = list(map(supp_idxs, classes))
            prototypes = torch.stack([input_cpu[idx_list].mean(0) for idx_list in support_idxs])
            query_idxs = torch.stack(list(map(lambda c: target_cpu.eq(c).nonzero()[n_support:], classes))).view(-1)
            query_samples = input.to('cpu')[query_idxs]
            dists = euclidean_dist(query_samples, prototypes)
            log_p_y = F.log_softmax(-dists, dim=1).view(n_classes, n_query, -1)
            target_inds = torch.arange(0, n_classes)
            target_inds = target_inds.view(n_classes, 1, 1)
            target_inds = target_inds.expand(n_classes, n_query, 1).long()
            loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
            _, y_hat = log_p_y.max(2)
            acc_val = y_hat.eq(target_inds.squeeze(2)).float().mean()
            return loss_val, acc_val

        def conv_block(in_channels, out_channels):
            return nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 3, padding=1),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
                nn.MaxPool2d(2))

        class ProtoNet(nn.Module):
            def __init__(self, x_dim=1, hid_dim=4, z_dim=4):
                super(ProtoNet, self).__init__()
                self.encoder = nn.Sequential(conv_block(x_dim, hid_dim), conv_block(hid_dim, z_dim))

            def forward(self, x):
                x = self.encoder(x)
                return x.view(x.size(0), -1)

        model = init_params(torch, ProtoNet(), 2)
        optim = torch.optim.Adam(params=model.parameters(), lr=0.001)
        lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer=optim, gamma=0.5, step_size=1)
        rs = np.random.RandomState(1)
        for epoch in range(2):
            y = torch.tensor(rs.permutation(np.repeat([4, 1, 7], 3)))
            x = randn(torch, (9, 1, 8, 8), 5 + epoch)
            optim.zero_grad()
            model_output = model(x)
            loss, acc = prototypical_loss(model_output, target=y, n_support=1)
            loss.backward()
            optim.step()
            lr_scheduler.step()
            log("loss acc", [loss, acc])
            log("dists", euclidean_dist(model_output[:2], model_output[2:5]))
        log("grad", model.encoder[0][0].weight.grad)
        log("lr", lr_scheduler.get_last_lr())
        log("np.unique", np.unique(y))
    run_both(program)


# rosinality/vq-vae-2-pytorch vqvae.py (Quantize with EMA codebook buffers updated through
# ``.data.mul_(decay).add_(x, alpha=1 - decay)`` and ``.data.copy_``, ``(-dist).max(1)``,
# F.one_hot(...).type(dtype), F.embedding of the transposed codebook, the straight-through
# ``input + (quantize - input).detach()``, ResBlock's ``out += input`` after an inplace ReLU,
# ConvTranspose2d decoders, torch.cat of the upsampled top code) and train_vqvae.py's loss
# (MSE + 0.25 * latent loss); channel 128 -> 8, embed_dim 64 -> 4, n_embed 512 -> 6,
# ``dist_fn.all_reduce`` a no-op as on one process
def test_rosinality_vqvae2():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class dist_fn:
            @staticmethod
            def all_reduce(tensor):
                return tensor

        class Quantize(nn.Module):
            def __init__(self, dim, n_embed, decay=0.99, eps=1e-5):
                super().__init__()
                self.dim = dim
                self.n_embed = n_embed
                self.decay = decay
                self.eps = eps
                embed = randn(torch, (dim, n_embed), n_embed + dim)
                self.register_buffer("embed", embed)
                self.register_buffer("cluster_size", torch.ones(n_embed))
                self.register_buffer("embed_avg", embed.clone())

            def forward(self, input):
                flatten = input.reshape(-1, self.dim)
                dist = (flatten.pow(2).sum(1, keepdim=True) - 2 * flatten @ self.embed
                        + self.embed.pow(2).sum(0, keepdim=True))
                _, embed_ind = (-dist).max(1)
                embed_onehot = F.one_hot(embed_ind, self.n_embed).type(flatten.dtype)
                embed_ind = embed_ind.view(*input.shape[:-1])
                quantize = self.embed_code(embed_ind)
                if self.training:
                    embed_onehot_sum = embed_onehot.sum(0)
                    embed_sum = flatten.transpose(0, 1) @ embed_onehot
                    dist_fn.all_reduce(embed_onehot_sum)
                    dist_fn.all_reduce(embed_sum)
                    self.cluster_size.data.mul_(self.decay).add_(embed_onehot_sum, alpha=1 - self.decay)
                    self.embed_avg.data.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
                    n = self.cluster_size.sum()
                    cluster_size = (self.cluster_size + self.eps) / (n + self.n_embed * self.eps) * n
                    embed_normalized = self.embed_avg / cluster_size.unsqueeze(0)
                    self.embed.data.copy_(embed_normalized)
                diff = (quantize.detach() - input).pow(2).mean()
                quantize = input + (quantize - input).detach()
                return quantize, diff, embed_ind

            def embed_code(self, embed_id):
                return F.embedding(embed_id, self.embed.transpose(0, 1))

        class ResBlock(nn.Module):
            def __init__(self, in_channel, channel):
                super().__init__()
                self.conv = nn.Sequential(nn.ReLU(), nn.Conv2d(in_channel, channel, 3, padding=1),
                                          nn.ReLU(inplace=True), nn.Conv2d(channel, in_channel, 1))

            def forward(self, input):
                out = self.conv(input)
                out += input
                return out

        class Encoder(nn.Module):
            def __init__(self, in_channel, channel, n_res_block, n_res_channel, stride):
                super().__init__()
                if stride == 4:
                    blocks = [nn.Conv2d(in_channel, channel // 2, 4, stride=2, padding=1), nn.ReLU(inplace=True),
                              nn.Conv2d(channel // 2, channel, 4, stride=2, padding=1), nn.ReLU(inplace=True),
                              nn.Conv2d(channel, channel, 3, padding=1)]
                elif stride == 2:
                    blocks = [nn.Conv2d(in_channel, channel // 2, 4, stride=2, padding=1), nn.ReLU(inplace=True),
                              nn.Conv2d(channel // 2, channel, 3, padding=1)]
                for i in range(n_res_block):
                    blocks.append(ResBlock(channel, n_res_channel))
                blocks.append(nn.ReLU(inplace=True))
                self.blocks = nn.Sequential(*blocks)

            def forward(self, input):
                return self.blocks(input)

        class Decoder(nn.Module):
            def __init__(self, in_channel, out_channel, channel, n_res_block, n_res_channel, stride):
                super().__init__()
                blocks = [nn.Conv2d(in_channel, channel, 3, padding=1)]
                for i in range(n_res_block):
                    blocks.append(ResBlock(channel, n_res_channel))
                blocks.append(nn.ReLU(inplace=True))
                if stride == 4:
                    blocks.extend([nn.ConvTranspose2d(channel, channel // 2, 4, stride=2, padding=1),
                                   nn.ReLU(inplace=True),
                                   nn.ConvTranspose2d(channel // 2, out_channel, 4, stride=2, padding=1)])
                elif stride == 2:
                    blocks.append(nn.ConvTranspose2d(channel, out_channel, 4, stride=2, padding=1))
                self.blocks = nn.Sequential(*blocks)

            def forward(self, input):
                return self.blocks(input)

        class VQVAE(nn.Module):
            def __init__(self, in_channel=3, channel=128, n_res_block=2, n_res_channel=32, embed_dim=64,
                         n_embed=512, decay=0.99):
                super().__init__()
                self.enc_b = Encoder(in_channel, channel, n_res_block, n_res_channel, stride=4)
                self.enc_t = Encoder(channel, channel, n_res_block, n_res_channel, stride=2)
                self.quantize_conv_t = nn.Conv2d(channel, embed_dim, 1)
                self.quantize_t = Quantize(embed_dim, n_embed)
                self.dec_t = Decoder(embed_dim, embed_dim, channel, n_res_block, n_res_channel, stride=2)
                self.quantize_conv_b = nn.Conv2d(embed_dim + channel, embed_dim, 1)
                self.quantize_b = Quantize(embed_dim, n_embed)
                self.upsample_t = nn.ConvTranspose2d(embed_dim, embed_dim, 4, stride=2, padding=1)
                self.dec = Decoder(embed_dim + embed_dim, in_channel, channel, n_res_block, n_res_channel, stride=4)

            def forward(self, input):
                quant_t, quant_b, diff, _, _ = self.encode(input)
                dec = self.decode(quant_t, quant_b)
                return dec, diff

            def encode(self, input):
                enc_b = self.enc_b(input)
                enc_t = self.enc_t(enc_b)
                quant_t = self.quantize_conv_t(enc_t).permute(0, 2, 3, 1)
                quant_t, diff_t, id_t = self.quantize_t(quant_t)
                quant_t = quant_t.permute(0, 3, 1, 2)
                diff_t = diff_t.unsqueeze(0)
                dec_t = self.dec_t(quant_t)
                enc_b = torch.cat([dec_t, enc_b], 1)
                quant_b = self.quantize_conv_b(enc_b).permute(0, 2, 3, 1)
                quant_b, diff_b, id_b = self.quantize_b(quant_b)
                quant_b = quant_b.permute(0, 3, 1, 2)
                diff_b = diff_b.unsqueeze(0)
                return quant_t, quant_b, diff_t + diff_b, id_t, id_b

            def decode(self, quant_t, quant_b):
                upsample_t = self.upsample_t(quant_t)
                quant = torch.cat([upsample_t, quant_b], 1)
                return self.dec(quant)

            def decode_code(self, code_t, code_b):
                quant_t = self.quantize_t.embed_code(code_t)
                quant_t = quant_t.permute(0, 3, 1, 2)
                quant_b = self.quantize_b.embed_code(code_b)
                quant_b = quant_b.permute(0, 3, 1, 2)
                return self.decode(quant_t, quant_b)

        model = init_params(torch, VQVAE(channel=8, n_res_block=1, n_res_channel=4, embed_dim=4, n_embed=6), 3)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
        criterion = nn.MSELoss()
        latent_loss_weight = 0.25
        img = randn(torch, (2, 3, 8, 8), 4)
        for i in range(2):
            model.zero_grad()
            out, latent_loss = model(img)
            recon_loss = criterion(out, img)
            latent_loss = latent_loss.mean()
            loss = recon_loss + latent_loss_weight * latent_loss
            loss.backward()
            optimizer.step()
            log("losses", [recon_loss.item(), latent_loss.item()])
        log("codebook", model.quantize_b.embed)
        log("cluster_size", model.quantize_t.cluster_size)
        log("grad", model.quantize_conv_b.weight.grad)
        model.eval()
        with torch.no_grad():
            _, _, _, id_t, id_b = model.encode(img)
            log("codes", [id_t, id_b])
            log("decode_code", model.decode_code(id_t, id_b))
    run_both(program)


# nikhilbarhate99/PPO-PyTorch PPO.py (the discrete ActorCritic: an unused ``self.affine``,
# Sequential actor ending in Softmax(dim=-1), Categorical(probs) log_prob/entropy,
# torch.from_numpy(state).float().to(device), Monte-Carlo returns normalised with std(),
# torch.stack of the memory lists, the clipped surrogate with clamp and torch.min, MSELoss,
# policy_old.load_state_dict(policy.state_dict())); a fake 4-dim environment in place of gym's
# LunarLander, actions drawn by a numpy RandomState in place of ``dist.sample()``, update every
# 6 steps, n_latent_var 64 -> 8
def test_ppo_pytorch_discrete():
    def program(torch, log):
        nn, Categorical = torch.nn, torch.distributions.Categorical
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        rs = np.random.RandomState(0)

        class Memory:
            def __init__(self):
                self.actions = []
                self.states = []
                self.logprobs = []
                self.rewards = []

            def clear_memory(self):
                del self.actions[:]
                del self.states[:]
                del self.logprobs[:]
                del self.rewards[:]

        class ActorCritic(nn.Module):
            def __init__(self, state_dim, action_dim, n_latent_var):
                super(ActorCritic, self).__init__()
                self.affine = nn.Linear(state_dim, n_latent_var)
                self.action_layer = nn.Sequential(
                    nn.Linear(state_dim, n_latent_var), nn.Tanh(), nn.Linear(n_latent_var, n_latent_var), nn.Tanh(),
                    nn.Linear(n_latent_var, action_dim), nn.Softmax(dim=-1))
                self.value_layer = nn.Sequential(
                    nn.Linear(state_dim, n_latent_var), nn.Tanh(), nn.Linear(n_latent_var, n_latent_var), nn.Tanh(),
                    nn.Linear(n_latent_var, 1))

            def forward(self):
                raise NotImplementedError

            def act(self, state, memory):
                state = torch.from_numpy(state).float().to(device)
                action_probs = self.action_layer(state)
                dist = Categorical(action_probs)
                action = torch.tensor(rs.randint(action_probs.shape[-1]))    # dist.sample()
                memory.states.append(state)
                memory.actions.append(action)
                memory.logprobs.append(dist.log_prob(action))
                return action.item()

            def evaluate(self, state, action):
                action_probs = self.action_layer(state)
                dist = Categorical(action_probs)
                action_logprobs = dist.log_prob(action)
                dist_entropy = dist.entropy()
                state_value = self.value_layer(state)
                return action_logprobs, torch.squeeze(state_value), dist_entropy

        class PPO:
            def __init__(self, state_dim, action_dim, n_latent_var, lr, betas, gamma, K_epochs, eps_clip):
                self.lr = lr
                self.betas = betas
                self.gamma = gamma
                self.eps_clip = eps_clip
                self.K_epochs = K_epochs
                self.policy = init_params(torch, ActorCritic(state_dim, action_dim, n_latent_var), 1).to(device)
                self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=lr, betas=betas)
                self.policy_old = init_params(torch, ActorCritic(state_dim, action_dim, n_latent_var), 1).to(device)
                self.MseLoss = nn.MSELoss()

            def update(self, memory):
                rewards = []
                discounted_reward = 0
                for reward in reversed(memory.rewards):
                    discounted_reward = reward + (self.gamma * discounted_reward)
                    rewards.insert(0, discounted_reward)
                rewards = torch.tensor(rewards).to(device)
                rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-5)
                old_states = torch.stack(memory.states).to(device).detach()
                old_actions = torch.stack(memory.actions).to(device).detach()
                old_logprobs = torch.stack(memory.logprobs).to(device).detach()
                for _ in range(self.K_epochs):
                    logprobs, state_values, dist_entropy = self.policy.evaluate(old_states, old_actions)
                    ratios = torch.exp(logprobs - old_logprobs.detach())
                    advantages = rewards - state_values.detach()
                    surr1 = ratios * advantages
                    surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages
                    loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards) - 0.01 * dist_entropy
                    self.optimizer.zero_grad()
                    loss.mean().backward()
                    self.optimizer.step()
                    log("loss", loss)
                self.policy_old.load_state_dict(self.policy.state_dict())

        class FakeEnv:
            def reset(self):
                self.t = 0
                return rs.standard_normal(4)

            def step(self, action):
                self.t += 1
                return rs.standard_normal(4), float(action) - 1.5 + rs.standard_normal(), self.t >= 5, {}

        env = FakeEnv()
        memory = Memory()
        ppo = PPO(4, 4, 8, 0.002, (0.9, 0.999), 0.99, 2, 0.2)
        print(0.002, (0.9, 0.999))
        timestep, running_reward = 0, 0
        for i_episode in range(1, 4):
            state = env.reset()
            for t in range(300):
                timestep += 1
                action = ppo.policy_old.act(state, memory)
                state, reward, done, _ = env.step(action)
                memory.rewards.append(reward)
                if timestep % 6 == 0:
                    ppo.update(memory)
                    memory.clear_memory()
                    timestep = 0
                running_reward += reward
                if done:
                    break
        log("value grad", ppo.policy.value_layer[0].weight.grad)
        log("policy_old", ppo.policy_old.action_layer[4].bias)
    run_both(program)


# fungtion/DANN models/functions.py and models/model.py, train/main.py's loop (ReverseLayerF: a
# static autograd.Function storing ``ctx.alpha`` and returning ``x.view_as(x)``, backward
# ``grad_output.neg() * ctx.alpha, None``; CNNModel built with Sequential.add_module, MNIST's one
# channel ``expand``ed to three, Dropout2d, LogSoftmax heads; the legacy ``torch.FloatTensor(b, 3,
# s, s)`` / ``torch.LongTensor(b)`` buffers filled by ``resize_as_(x).copy_(x)``, the alpha
# schedule 2 / (1 + exp(-10 p)) - 1); batch 6, 3 iterations, dropout's p set to 0 (its masks are a random stream),
# lr 1e-3 -> 1e-5: Adam's first step moves every weight by about lr whatever its gradient's size, so
# rounding-level gradients (the biases before BatchNorm) would make lr-sized differences
def test_dann_gradient_reversal():
    def program(torch, log):
        nn, optim = torch.nn, torch.optim
        Function = torch.autograd.Function

        class ReverseLayerF(Function):
            @staticmethod
            def forward(ctx, x, alpha):
                ctx.alpha = alpha
                return x.view_as(x)

            @staticmethod
            def backward(ctx, grad_output):
                output = grad_output.neg() * ctx.alpha
                return output, None

        class CNNModel(nn.Module):
            def __init__(self):
                super(CNNModel, self).__init__()
                self.feature = nn.Sequential()
                self.feature.add_module('f_conv1', nn.Conv2d(3, 64, kernel_size=5))
                self.feature.add_module('f_bn1', nn.BatchNorm2d(64))
                self.feature.add_module('f_pool1', nn.MaxPool2d(2))
                self.feature.add_module('f_relu1', nn.ReLU(True))
                self.feature.add_module('f_conv2', nn.Conv2d(64, 50, kernel_size=5))
                self.feature.add_module('f_bn2', nn.BatchNorm2d(50))
                self.feature.add_module('f_drop1', nn.Dropout2d())
                self.feature.add_module('f_pool2', nn.MaxPool2d(2))
                self.feature.add_module('f_relu2', nn.ReLU(True))
                self.class_classifier = nn.Sequential()
                self.class_classifier.add_module('c_fc1', nn.Linear(50 * 4 * 4, 100))
                self.class_classifier.add_module('c_bn1', nn.BatchNorm1d(100))
                self.class_classifier.add_module('c_relu1', nn.ReLU(True))
                self.class_classifier.add_module('c_drop1', nn.Dropout())
                self.class_classifier.add_module('c_fc2', nn.Linear(100, 100))
                self.class_classifier.add_module('c_bn2', nn.BatchNorm1d(100))
                self.class_classifier.add_module('c_relu2', nn.ReLU(True))
                self.class_classifier.add_module('c_fc3', nn.Linear(100, 10))
                self.class_classifier.add_module('c_softmax', nn.LogSoftmax(dim=1))
                self.domain_classifier = nn.Sequential()
                self.domain_classifier.add_module('d_fc1', nn.Linear(50 * 4 * 4, 100))
                self.domain_classifier.add_module('d_bn1', nn.BatchNorm1d(100))
                self.domain_classifier.add_module('d_relu1', nn.ReLU(True))
                self.domain_classifier.add_module('d_fc2', nn.Linear(100, 2))
                self.domain_classifier.add_module('d_softmax', nn.LogSoftmax(dim=1))

            def forward(self, input_data, alpha):
                input_data = input_data.expand(input_data.data.shape[0], 3, 28, 28)
                feature = self.feature(input_data)
                feature = feature.view(-1, 50 * 4 * 4)
                reverse_feature = ReverseLayerF.apply(feature, alpha)
                class_output = self.class_classifier(feature)
                domain_output = self.domain_classifier(reverse_feature)
                return class_output, domain_output

        image_size, n_epoch, batch_size = 28, 1, 6
        my_net = init_params(torch, CNNModel(), 5, scale=0.1)
        my_net.feature.f_drop1.p = my_net.class_classifier.c_drop1.p = 0.0
        optimizer = optim.Adam(my_net.parameters(), lr=1e-5)
        loss_class = torch.nn.NLLLoss()
        loss_domain = torch.nn.NLLLoss()
        for p in my_net.parameters():
            p.requires_grad = True
        rs = np.random.RandomState(6)
        len_dataloader = 3
        for epoch in range(n_epoch):
            for i in range(len_dataloader):
                p = float(i + epoch * len_dataloader) / n_epoch / len_dataloader
                alpha = 2. / (1. + np.exp(-10 * p)) - 1
                s_img = torch.tensor(rs.rand(batch_size, 1, 28, 28).astype(np.float32))
                s_label = torch.tensor(rs.randint(0, 10, batch_size))
                my_net.zero_grad()
                batch_size = len(s_label)
                input_img = torch.FloatTensor(batch_size, 3, image_size, image_size)
                class_label = torch.LongTensor(batch_size)
                domain_label = torch.zeros(batch_size)
                domain_label = domain_label.long()
                input_img.resize_as_(s_img).copy_(s_img)
                class_label.resize_as_(s_label).copy_(s_label)
                class_output, domain_output = my_net(input_data=input_img, alpha=alpha)
                err_s_label = loss_class(class_output, class_label)
                err_s_domain = loss_domain(domain_output, domain_label)
                t_img = torch.tensor(rs.rand(batch_size, 3, 28, 28).astype(np.float32))
                batch_size = len(t_img)
                input_img = torch.FloatTensor(batch_size, 3, image_size, image_size)
                domain_label = torch.ones(batch_size)
                domain_label = domain_label.long()
                input_img.resize_as_(t_img).copy_(t_img)
                _, domain_output = my_net(input_data=input_img, alpha=alpha)
                err_t_domain = loss_domain(domain_output, domain_label)
                err = err_t_domain + err_s_domain + err_s_label
                err.backward()
                optimizer.step()
                print('epoch: %d, [iter: %d / all %d], err_s_label: %f, err_s_domain: %f, err_t_domain: %f'
                      % (epoch, i + 1, len_dataloader, err_s_label.data.cpu().numpy(),
                         err_s_domain.data.cpu().numpy(), err_t_domain.data.cpu().item()))
        log("feature grad", my_net.feature.f_conv2.weight.grad[:2, :2])
        log("domain grad", my_net.domain_classifier.d_fc1.weight.grad[:3, :5])
        x = randn(torch, (3, 4), 7, requires_grad=True)
        ReverseLayerF.apply(x * 2, 0.5).sum().backward()
        log("reversed", x.grad)
    run_both(program)


# peterliht/knowledge-distillation-pytorch model/net.py and train.py's train_kd (the student
# Net: three Conv2d+BatchNorm2d+max_pool2d stages, fcbn1, F.dropout(training=self.training);
# loss_fn_kd: nn.KLDivLoss() (default 'mean' reduction, with torch's warning) of
# log_softmax(outputs/T) against softmax(teacher_outputs/T) times alpha*T*T plus cross_entropy;
# teacher outputs through ``.data.cpu().numpy()`` and back with torch.from_numpy, Variable(...,
# requires_grad=False); accuracy with np.argmax); num_channels 32 -> 2, dropout_rate 0
def test_knowledge_distillation_kd_loss():
    def program(torch, log):
        import warnings
        nn, F, Variable = torch.nn, torch.nn.functional, torch.autograd.Variable

        class Params:
            num_channels, dropout_rate, alpha, temperature = 2, 0.0, 0.95, 6

        class Net(nn.Module):
            def __init__(self, params):
                super(Net, self).__init__()
                self.num_channels = params.num_channels
                self.conv1 = nn.Conv2d(3, self.num_channels, 3, stride=1, padding=1)
                self.bn1 = nn.BatchNorm2d(self.num_channels)
                self.conv2 = nn.Conv2d(self.num_channels, self.num_channels * 2, 3, stride=1, padding=1)
                self.bn2 = nn.BatchNorm2d(self.num_channels * 2)
                self.conv3 = nn.Conv2d(self.num_channels * 2, self.num_channels * 4, 3, stride=1, padding=1)
                self.bn3 = nn.BatchNorm2d(self.num_channels * 4)
                self.fc1 = nn.Linear(4 * 4 * self.num_channels * 4, self.num_channels * 4)
                self.fcbn1 = nn.BatchNorm1d(self.num_channels * 4)
                self.fc2 = nn.Linear(self.num_channels * 4, 10)
                self.dropout_rate = params.dropout_rate

            def forward(self, s):
                s = self.bn1(self.conv1(s))
                s = F.relu(F.max_pool2d(s, 2))
                s = self.bn2(self.conv2(s))
                s = F.relu(F.max_pool2d(s, 2))
                s = self.bn3(self.conv3(s))
                s = F.relu(F.max_pool2d(s, 2))
                s = s.view(-1, 4 * 4 * self.num_channels * 4)
                s = F.dropout(F.relu(self.fcbn1(self.fc1(s))), p=self.dropout_rate, training=self.training)
                s = self.fc2(s)
                return s

        def loss_fn_kd(outputs, labels, teacher_outputs, params):
            alpha = params.alpha
            T = params.temperature
            KD_loss = nn.KLDivLoss()(F.log_softmax(outputs / T, dim=1),
                                     F.softmax(teacher_outputs / T, dim=1)) * (alpha * T * T) + \
                F.cross_entropy(outputs, labels) * (1. - alpha)
            return KD_loss

        def accuracy(outputs, labels):
            outputs = np.argmax(outputs, axis=1)
            return np.sum(outputs == labels) / float(labels.size)

        params = Params()
        model = init_params(torch, Net(params), 8)
        teacher_model = init_params(torch, Net(params), 9, scale=0.5)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        model.train()
        teacher_model.eval()
        rs = np.random.RandomState(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(2):
                train_batch = torch.tensor(rs.rand(4, 3, 32, 32).astype(np.float32))
                labels_batch = torch.tensor(rs.randint(0, 10, 4))
                train_batch, labels_batch = Variable(train_batch), Variable(labels_batch)
                output_batch = model(train_batch)
                output_teacher_batch = teacher_model(train_batch).data.cpu().numpy()
                output_teacher_batch = Variable(torch.from_numpy(output_teacher_batch), requires_grad=False)
                loss = loss_fn_kd(output_batch, labels_batch, output_teacher_batch, params)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                output_batch = output_batch.data.cpu().numpy()
                labels_batch = labels_batch.data.cpu().numpy()
                log("loss acc", [loss.item(), accuracy(output_batch, labels_batch)])
        log("warnings", sorted({str(w.message)[:60] for w in caught}))
        log("grad", model.fc1.weight.grad[:3, :6])
        log("running_var", model.fcbn1.running_var)
    run_both(program)


# facebookresearch/mixup-cifar10 train.py (mixup_data: lam from np.random.beta, a randperm
# index, ``lam * x + (1 - lam) * x[index, :]``; mixup_criterion; the accuracy sum
# ``lam * predicted.eq(a).cpu().sum() + (1 - lam) * ...`` formatted with '%.3f%% (%d/%d)';
# SGD with momentum and weight decay; adjust_learning_rate through param_groups), with a small
# CNN in place of models.ResNet18; numpy's permutation in place of ``torch.randperm``. Its
# ``loss.data[0]`` is an IndexError on a 0-d tensor since torch 0.5, logged, and then read
# with ``.item()`` as the program's users do
def test_mixup_cifar10_train():
    def program(torch, log):
        nn, optim, Variable = torch.nn, torch.optim, torch.autograd.Variable
        rs = np.random.RandomState(3)

        def mixup_data(x, y, alpha=1.0, use_cuda=True):
            if alpha > 0:
                lam = rs.beta(alpha, alpha)
            else:
                lam = 1
            batch_size = x.size()[0]
            index = torch.tensor(rs.permutation(batch_size))    # torch.randperm(batch_size)
            mixed_x = lam * x + (1 - lam) * x[index, :]
            y_a, y_b = y, y[index]
            return mixed_x, y_a, y_b, lam

        def mixup_criterion(criterion, pred, y_a, y_b, lam):
            return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)

        net = init_params(torch, nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                                               nn.Linear(16, 10)), 4)
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        trainloader = [(torch.tensor(rs.rand(4, 3, 8, 8).astype(np.float32)), torch.tensor(rs.randint(0, 10, 4)))
                       for _ in range(3)]

        def train(epoch):
            print('\nEpoch: %d' % epoch)
            net.train()
            train_loss = 0
            reg_loss = 0
            correct = 0
            total = 0
            for batch_idx, (inputs, targets) in enumerate(trainloader):
                inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, 1., False)
                inputs, targets_a, targets_b = map(Variable, (inputs, targets_a, targets_b))
                outputs = net(inputs)
                loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
                try:
                    train_loss += loss.data[0]
                except IndexError as e:
                    log("loss.data[0]", type(e))
                    train_loss += loss.item()
                _, predicted = torch.max(outputs.data, 1)
                total += targets.size(0)
                correct += (lam * predicted.eq(targets_a.data).cpu().sum()
                            + (1 - lam) * predicted.eq(targets_b.data).cpu().sum())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print('Loss: %.3f | Reg: %.5f | Acc: %.3f%% (%d/%d)'
                      % (train_loss / (batch_idx + 1), reg_loss / (batch_idx + 1), 100. * correct / total, correct,
                         total))
                log("correct", correct)
            return (train_loss / batch_idx, reg_loss / batch_idx, 100. * correct / total)

        def adjust_learning_rate(optimizer, epoch):
            lr = 0.1
            if epoch >= 1:
                lr /= 10
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

        for epoch in range(2):
            log("train", train(epoch))
            adjust_learning_rate(optimizer, epoch)
        log("weight", net[4].weight)
    run_both(program)


# huggingface/pytorch-image-models timm/utils/model_ema.py (ModelEmaV2: a deepcopy'd eval-mode
# module updated under torch.no_grad through ``ema_v.copy_(decay * e + (1 - decay) * m)`` over
# zipped state_dict().values(), buffers included; ModelEmaV3: get_decay's warmup,
# ``@torch.no_grad()`` methods, is_floating_point, torch._foreach_lerp_ of the float entries and
# copy_ of num_batches_tracked, the foreach=False lerp_ path, exclude_buffers), driven as timm's
# train.py drives them after each optimizer step
def test_timm_model_ema():
    def program(torch, log):
        from copy import deepcopy
        from typing import Optional
        nn = torch.nn

        class ModelEmaV2(nn.Module):
            def __init__(self, model, decay=0.9999, device=None):
                super().__init__()
                self.module = deepcopy(model)
                self.module.eval()
                self.decay = decay
                self.device = device
                if self.device is not None:
                    self.module.to(device=device)

            def _update(self, model, update_fn):
                with torch.no_grad():
                    for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                        if self.device is not None:
                            model_v = model_v.to(device=self.device)
                        ema_v.copy_(update_fn(ema_v, model_v))

            def update(self, model):
                self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)

            def set(self, model):
                self._update(model, update_fn=lambda e, m: m)

            def forward(self, *args, **kwargs):
                return self.module(*args, **kwargs)

        class ModelEmaV3(nn.Module):
            def __init__(self, model, decay: float = 0.9999, min_decay: float = 0.0, update_after_step: int = 0,
                         use_warmup: bool = False, warmup_gamma: float = 1.0, warmup_power: float = 2 / 3,
                         device: Optional[torch.device] = None, foreach: bool = True, exclude_buffers: bool = False):
                super().__init__()
                self.module = deepcopy(model)
                self.module.eval()
                self.decay = decay
                self.min_decay = min_decay
                self.update_after_step = update_after_step
                self.use_warmup = use_warmup
                self.warmup_gamma = warmup_gamma
                self.warmup_power = warmup_power
                self.foreach = foreach
                self.device = device
                self.exclude_buffers = exclude_buffers
                if self.device is not None and device != next(model.parameters()).device:
                    self.foreach = False
                    self.module.to(device=device)

            def get_decay(self, step: Optional[int] = None) -> float:
                if step is None:
                    return self.decay
                step = max(0, step - self.update_after_step - 1)
                if step <= 0:
                    return 0.0
                if self.use_warmup:
                    decay = 1 - (1 + step / self.warmup_gamma) ** -self.warmup_power
                    decay = max(min(decay, self.decay), self.min_decay)
                else:
                    decay = self.decay
                return decay

            @torch.no_grad()
            def update(self, model, step: Optional[int] = None):
                decay = self.get_decay(step)
                if self.exclude_buffers:
                    self.apply_update_no_buffers_(model, decay)
                else:
                    self.apply_update_(model, decay)

            def apply_update_(self, model, decay: float):
                if self.foreach:
                    ema_lerp_values = []
                    model_lerp_values = []
                    for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                        if ema_v.is_floating_point():
                            ema_lerp_values.append(ema_v)
                            model_lerp_values.append(model_v)
                        else:
                            ema_v.copy_(model_v)
                    if hasattr(torch, '_foreach_lerp_'):
                        torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - decay)
                    else:
                        torch._foreach_mul_(ema_lerp_values, scalar=decay)
                        torch._foreach_add_(ema_lerp_values, model_lerp_values, alpha=1. - decay)
                else:
                    for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                        if ema_v.is_floating_point():
                            ema_v.lerp_(model_v.to(device=self.device), weight=1. - decay)
                        else:
                            ema_v.copy_(model_v.to(device=self.device))

            def apply_update_no_buffers_(self, model, decay: float):
                ema_params = tuple(self.module.parameters())
                model_params = tuple(model.parameters())
                if self.foreach:
                    if hasattr(torch, '_foreach_lerp_'):
                        torch._foreach_lerp_(ema_params, model_params, weight=1. - decay)
                    else:
                        torch._foreach_mul_(ema_params, scalar=decay)
                        torch._foreach_add_(ema_params, model_params, alpha=1 - decay)
                else:
                    for ema_p, model_p in zip(ema_params, model_params):
                        ema_p.lerp_(model_p.to(device=self.device), weight=1. - decay)
                for ema_b, model_b in zip(self.module.buffers(), model.buffers()):
                    ema_b.copy_(model_b.to(device=self.device))

            @torch.no_grad()
            def set(self, model):
                for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                    ema_v.copy_(model_v.to(device=self.device))

            def forward(self, *args, **kwargs):
                return self.module(*args, **kwargs)

        model = init_params(torch, nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)), 1)
        emas = [ModelEmaV2(model, decay=0.9),
                ModelEmaV3(model, decay=0.9, use_warmup=True),
                ModelEmaV3(model, decay=0.8, foreach=False, device=torch.device("cpu")),
                ModelEmaV3(model, decay=0.7, exclude_buffers=True, update_after_step=1)]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        for step in range(3):
            x = randn(torch, (5, 3), 20 + step)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            emas[0].update(model)
            for ema in emas[1:]:
                ema.update(model, step=step + 1)
            log("decay", [ema.get_decay(step + 1) for ema in emas[1:]])
        for ema in emas:
            log("ema state", list(ema.module.state_dict().values()))
            log("ema out", ema(randn(torch, (2, 3), 30)))
            log("requires_grad", [p.requires_grad for p in ema.parameters()])
        emas[0].set(model)
        log("set", emas[0].module[0].weight)
    run_both(program)


# kimy-de/pinns model.py, utils.py, main.py (Burgers' PINN: nn.utils.weight_norm(nn.Linear,
# dim=0) layers with x * sigmoid(x), xavier_normal_ through Module.apply (replaced by
# numpy-seeded values after it), fwd_gradients = autograd.grad(obj, x, ones_like, create_graph=True)
# for u_t, u_x and the second derivative u_xx, Adam(betas=(0.999, 0.999)), the best state_dict
# saved with torch.save and loaded back); num_hidden 9 -> 2, num_nodes 20 -> 6, 12 collocation
# points, 3 epochs
def test_kimy_pinns_burgers(tmp_path):
    def program(torch, log):
        import warnings
        nn = torch.nn

        def fwd_gradients(obj, x):
            dummy = torch.ones_like(obj)
            derivative = torch.autograd.grad(obj, x, dummy, create_graph=True)[0]
            return derivative

        def burgers_equation(u, tx):
            u_tx = fwd_gradients(u, tx)
            u_t = u_tx[:, 0:1]
            u_x = u_tx[:, 1:2]
            u_xx = fwd_gradients(u_x, tx)[:, 1:2]
            e = u_t + u * u_x - (0.01 / np.pi) * u_xx
            return e

        class LinearBlock(nn.Module):
            def __init__(self, in_nodes, out_nodes):
                super(LinearBlock, self).__init__()
                self.layer = nn.utils.weight_norm(nn.Linear(in_nodes, out_nodes), dim=0)

            def forward(self, x):
                x = self.layer(x)
                x = x * torch.sigmoid(x)
                return x

        class PINN(nn.Module):
            def __init__(self, layer_list):
                super(PINN, self).__init__()
                self.input_layer = nn.utils.weight_norm(nn.Linear(layer_list[0], layer_list[1]), dim=0)
                self.hidden_layers = self._make_layer(layer_list[1:-1])
                self.output_layer = nn.Linear(layer_list[-2], layer_list[-1])

            def _make_layer(self, layer_list):
                layers = []
                for i in range(len(layer_list) - 1):
                    block = LinearBlock(layer_list[i], layer_list[i + 1])
                    layers.append(block)
                return nn.Sequential(*layers)

            def forward(self, x):
                x = self.input_layer(x)
                x = x * torch.sigmoid(x)
                x = self.hidden_layers(x)
                x = self.output_layer(x)
                return x

        def weights_init(m):
            if isinstance(m, nn.Linear):
                torch.nn.init.xavier_normal_(m.weight)

        def pinn(layer_list):
            model = PINN(layer_list)
            model.apply(weights_init)
            return model

        rs = np.random.RandomState(0)
        t_data, x_data = rs.rand(6, 1), rs.uniform(-1, 1, (6, 1))
        u_data = -np.sin(np.pi * x_data) * (t_data == 0)
        t_data_f, x_data_f = rs.rand(12, 1), rs.uniform(-1, 1, (12, 1))
        variables = torch.FloatTensor(np.concatenate((t_data, x_data), 1))
        variables_f = torch.FloatTensor(np.concatenate((t_data_f, x_data_f), 1))
        variables_f.requires_grad = True
        u_data = torch.FloatTensor(u_data)
        layer_list = [2] + 2 * [6] + [1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # weight_norm's deprecation
            net = init_params(torch, pinn(layer_list), 3, scale=0.8)
        log("param names", [n for n, _ in net.named_parameters()])
        optimizer = torch.optim.Adam(net.parameters(), betas=(0.999, 0.999), lr=1e-3)
        ls, bep = 1e3, 0
        for ep in range(3):
            optimizer.zero_grad()
            u_hat = net(variables)
            u_hat_f = net(variables_f)
            loss_f = torch.mean(burgers_equation(u_hat_f, variables_f) ** 2)
            loss_u = torch.mean((u_hat - u_data) ** 2)
            loss = loss_f + loss_u
            loss.backward()
            optimizer.step()
            l = loss.item()
            if l < ls:
                ls = l
                bep = ep
                torch.save(net.state_dict(), str(tmp_path / 'bg1d.pth'))
            print(f"Train loss: {l}"[:18])
            log("losses", [loss_f, loss_u])
        print(f"[Best][Epoch: {bep}]")
        log("grad g", net.input_layer.weight_g.grad)
        log("grad v", net.hidden_layers[0].layer.weight_v.grad)
        net.load_state_dict(torch.load(str(tmp_path / 'bg1d.pth')))
        with torch.no_grad():
            log("u_pred", net(variables))
    run_both(program)


# pytorch/tutorials advanced_source/neural_style_tutorial.py (ContentLoss/StyleLoss modules that
# store ``self.loss`` and return their input, gram_matrix through view/mm/div, Normalization with
# ``torch.tensor(mean).view(-1, 1, 1)`` of a tensor (torch's copy-construct warning), the model
# rebuilt layer by layer with add_module and ReLU(inplace=False), the trim ``model[:(i + 1)]``,
# requires_grad_ on the input image, model.requires_grad_(False), LBFGS over the image with a
# closure that clamps the image under torch.no_grad); a tiny conv stack in place of vgg19's
# features (torchvision is not installed), 1x3x16x16 images, num_steps 3 (one LBFGS step of 20
# evaluations)
def test_tutorials_neural_style_lbfgs():
    def program(torch, log):
        import warnings
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim

        class ContentLoss(nn.Module):
            def __init__(self, target,):
                super(ContentLoss, self).__init__()
                self.target = target.detach()

            def forward(self, input):
                self.loss = F.mse_loss(input, self.target)
                return input

        def gram_matrix(input):
            a, b, c, d = input.size()
            features = input.view(a * b, c * d)
            G = torch.mm(features, features.t())
            return G.div(a * b * c * d)

        class StyleLoss(nn.Module):
            def __init__(self, target_feature):
                super(StyleLoss, self).__init__()
                self.target = gram_matrix(target_feature).detach()

            def forward(self, input):
                G = gram_matrix(input)
                self.loss = F.mse_loss(G, self.target)
                return input

        cnn = init_params(torch, nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True),
                                               nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(inplace=True),
                                               nn.MaxPool2d(2, 2), nn.Conv2d(4, 6, 3, padding=1),
                                               nn.ReLU(inplace=True), nn.Conv2d(6, 6, 3, padding=1),
                                               nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
                                               nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(inplace=True),
                                               nn.Conv2d(8, 8, 3, padding=1)), 5).eval()
        cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406])
        cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225])

        class Normalization(nn.Module):
            def __init__(self, mean, std):
                super(Normalization, self).__init__()
                self.mean = torch.tensor(mean).view(-1, 1, 1)
                self.std = torch.tensor(std).view(-1, 1, 1)

            def forward(self, img):
                return (img - self.mean) / self.std

        content_layers_default = ['conv_4']
        style_layers_default = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5']

        def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                                       content_layers=content_layers_default, style_layers=style_layers_default):
            normalization = Normalization(normalization_mean, normalization_std)
            content_losses = []
            style_losses = []
            model = nn.Sequential(normalization)
            i = 0
            for layer in cnn.children():
                if isinstance(layer, nn.Conv2d):
                    i += 1
                    name = 'conv_{}'.format(i)
                elif isinstance(layer, nn.ReLU):
                    name = 'relu_{}'.format(i)
                    layer = nn.ReLU(inplace=False)
                elif isinstance(layer, nn.MaxPool2d):
                    name = 'pool_{}'.format(i)
                elif isinstance(layer, nn.BatchNorm2d):
                    name = 'bn_{}'.format(i)
                else:
                    raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))
                model.add_module(name, layer)
                if name in content_layers:
                    target = model(content_img).detach()
                    content_loss = ContentLoss(target)
                    model.add_module("content_loss_{}".format(i), content_loss)
                    content_losses.append(content_loss)
                if name in style_layers:
                    target_feature = model(style_img).detach()
                    style_loss = StyleLoss(target_feature)
                    model.add_module("style_loss_{}".format(i), style_loss)
                    style_losses.append(style_loss)
            for i in range(len(model) - 1, -1, -1):
                if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
                    break
            model = model[:(i + 1)]
            return model, style_losses, content_losses

        def get_input_optimizer(input_img):
            optimizer = optim.LBFGS([input_img])
            return optimizer

        def run_style_transfer(cnn, normalization_mean, normalization_std, content_img, style_img, input_img,
                               num_steps=300, style_weight=1000000, content_weight=1):
            print('Building the style transfer model..')
            model, style_losses, content_losses = get_style_model_and_losses(
                cnn, normalization_mean, normalization_std, style_img, content_img)
            input_img.requires_grad_(True)
            model.eval()
            model.requires_grad_(False)
            optimizer = get_input_optimizer(input_img)
            print('Optimizing..')
            run = [0]
            while run[0] <= num_steps:
                def closure():
                    with torch.no_grad():
                        input_img.clamp_(0, 1)
                    optimizer.zero_grad()
                    model(input_img)
                    style_score = 0
                    content_score = 0
                    for sl in style_losses:
                        style_score += sl.loss
                    for cl in content_losses:
                        content_score += cl.loss
                    style_score *= style_weight
                    content_score *= content_weight
                    loss = style_score + content_score
                    loss.backward()
                    run[0] += 1
                    if run[0] % 5 == 0:
                        log("run", run)
                        log("scores", [style_score.item(), content_score.item()])
                    return style_score + content_score
                optimizer.step(closure)
            with torch.no_grad():
                input_img.clamp_(0, 1)
            return input_img, model

        rs = np.random.RandomState(7)
        style_img = torch.tensor(rs.rand(1, 3, 16, 16).astype(np.float32))
        content_img = torch.tensor(rs.rand(1, 3, 16, 16).astype(np.float32))
        assert style_img.size() == content_img.size()
        input_img = content_img.clone()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            output, model = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std, content_img,
                                               style_img, input_img, num_steps=3, style_weight=1000)
        log("warnings", sorted({str(w.message)[:50] for w in caught}))
        log("model", [name for name, _ in model.named_children()])
        log("output", output[0, :, :3, :3])
    # one LBFGS step of 20 evaluations amplifies float32 rounding (3.7e-5 relative on an AVX-512 CPU)
    run_both(program, rtol=1e-4)


# huggingface/pytorch-image-models timm/data/mixup.py and timm/loss/cross_entropy.py (one_hot via
# torch.full(..., device=).scatter_(1, x, on_value), mixup_target with target.flip(0);
# Mixup in 'batch' (``x.flip(0).mul_(1 - lam)`` and ``x.mul_(lam).add_``, cutmix through
# ``x[:, :, yl:yh, xl:xh] = x.flip(0)[...]``), 'pair' and 'elem' modes, where
# ``x[i][:, yl:yh, xl:xh] = x_orig[j][...]`` writes through a view of a view and ``x[i] = ...``
# assigns a row; FastCollateMixup over numpy uint8 and tensor batches with ``torch.round(blend,
# out=blend)`` and ``output[i].copy_``; LabelSmoothingCrossEntropy and SoftTargetCrossEntropy
# with their gradients); np.random seeded inside the program (its only random stream), ``bool``
# for the removed ``np.bool`` as timm's current code has it
def test_timm_mixup_cutmix_and_smoothing_losses():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        np.random.seed(11)

        class LabelSmoothingCrossEntropy(nn.Module):
            def __init__(self, smoothing=0.1):
                super(LabelSmoothingCrossEntropy, self).__init__()
                assert smoothing < 1.0
                self.smoothing = smoothing
                self.confidence = 1. - smoothing

            def forward(self, x, target):
                logprobs = F.log_softmax(x, dim=-1)
                nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
                nll_loss = nll_loss.squeeze(1)
                smooth_loss = -logprobs.mean(dim=-1)
                loss = self.confidence * nll_loss + self.smoothing * smooth_loss
                return loss.mean()

        class SoftTargetCrossEntropy(nn.Module):
            def __init__(self):
                super(SoftTargetCrossEntropy, self).__init__()

            def forward(self, x, target):
                loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
                return loss.mean()

        def one_hot(x, num_classes, on_value=1., off_value=0., device='cuda'):
            x = x.long().view(-1, 1)
            return torch.full((x.size()[0], num_classes), off_value, device=device).scatter_(1, x, on_value)

        def mixup_target(target, num_classes, lam=1., smoothing=0.0, device='cuda'):
            off_value = smoothing / num_classes
            on_value = 1. - smoothing + off_value
            y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value, device=device)
            y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value, device=device)
            return y1 * lam + y2 * (1. - lam)

        def rand_bbox(img_shape, lam, margin=0., count=None):
            ratio = np.sqrt(1 - lam)
            img_h, img_w = img_shape[-2:]
            cut_h, cut_w = int(img_h * ratio), int(img_w * ratio)
            margin_y, margin_x = int(margin * cut_h), int(margin * cut_w)
            cy = np.random.randint(0 + margin_y, img_h - margin_y, size=count)
            cx = np.random.randint(0 + margin_x, img_w - margin_x, size=count)
            yl = np.clip(cy - cut_h // 2, 0, img_h)
            yh = np.clip(cy + cut_h // 2, 0, img_h)
            xl = np.clip(cx - cut_w // 2, 0, img_w)
            xh = np.clip(cx + cut_w // 2, 0, img_w)
            return yl, yh, xl, xh

        def cutmix_bbox_and_lam(img_shape, lam, ratio_minmax=None, correct_lam=True, count=None):
            yl, yu, xl, xu = rand_bbox(img_shape, lam, count=count)
            if correct_lam or ratio_minmax is not None:
                bbox_area = (yu - yl) * (xu - xl)
                lam = 1. - bbox_area / float(img_shape[-2] * img_shape[-1])
            return (yl, yu, xl, xu), lam

        class Mixup:
            def __init__(self, mixup_alpha=1., cutmix_alpha=0., cutmix_minmax=None, prob=1.0, switch_prob=0.5,
                         mode='batch', correct_lam=True, label_smoothing=0., num_classes=0):
                self.mixup_alpha = mixup_alpha
                self.cutmix_alpha = cutmix_alpha
                self.cutmix_minmax = cutmix_minmax
                self.mix_prob = prob
                self.switch_prob = switch_prob
                self.label_smoothing = label_smoothing
                self.num_classes = num_classes
                self.mode = mode
                self.correct_lam = correct_lam
                self.mixup_enabled = True

            def _params_per_elem(self, batch_size):
                lam = np.ones(batch_size, dtype=np.float32)
                use_cutmix = np.zeros(batch_size, dtype=bool)
                if self.mixup_enabled:
                    if self.mixup_alpha > 0. and self.cutmix_alpha > 0.:
                        use_cutmix = np.random.rand(batch_size) < self.switch_prob
                        lam_mix = np.where(use_cutmix,
                                           np.random.beta(self.cutmix_alpha, self.cutmix_alpha, size=batch_size),
                                           np.random.beta(self.mixup_alpha, self.mixup_alpha, size=batch_size))
                    elif self.mixup_alpha > 0.:
                        lam_mix = np.random.beta(self.mixup_alpha, self.mixup_alpha, size=batch_size)
                    elif self.cutmix_alpha > 0.:
                        use_cutmix = np.ones(batch_size, dtype=bool)
                        lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha, size=batch_size)
                    lam = np.where(np.random.rand(batch_size) < self.mix_prob, lam_mix.astype(np.float32), lam)
                return lam, use_cutmix

            def _params_per_batch(self):
                lam = 1.
                use_cutmix = False
                if self.mixup_enabled and np.random.rand() < self.mix_prob:
                    if self.mixup_alpha > 0. and self.cutmix_alpha > 0.:
                        use_cutmix = np.random.rand() < self.switch_prob
                        lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha) if use_cutmix else \
                            np.random.beta(self.mixup_alpha, self.mixup_alpha)
                    elif self.mixup_alpha > 0.:
                        lam_mix = np.random.beta(self.mixup_alpha, self.mixup_alpha)
                    elif self.cutmix_alpha > 0.:
                        use_cutmix = True
                        lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha)
                    lam = float(lam_mix)
                return lam, use_cutmix

            def _mix_elem(self, x):
                batch_size = len(x)
                lam_batch, use_cutmix = self._params_per_elem(batch_size)
                x_orig = x.clone()
                for i in range(batch_size):
                    j = batch_size - i - 1
                    lam = lam_batch[i]
                    if lam != 1.:
                        if use_cutmix[i]:
                            (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(
                                x[i].shape, lam, ratio_minmax=self.cutmix_minmax, correct_lam=self.correct_lam)
                            x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
                            lam_batch[i] = lam
                        else:
                            x[i] = x[i] * lam + x_orig[j] * (1 - lam)
                return torch.tensor(lam_batch, device=x.device, dtype=x.dtype).unsqueeze(1)

            def _mix_pair(self, x):
                batch_size = len(x)
                lam_batch, use_cutmix = self._params_per_elem(batch_size // 2)
                x_orig = x.clone()
                for i in range(batch_size // 2):
                    j = batch_size - i - 1
                    lam = lam_batch[i]
                    if lam != 1.:
                        if use_cutmix[i]:
                            (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(
                                x[i].shape, lam, ratio_minmax=self.cutmix_minmax, correct_lam=self.correct_lam)
                            x[i][:, yl:yh, xl:xh] = x_orig[j][:, yl:yh, xl:xh]
                            x[j][:, yl:yh, xl:xh] = x_orig[i][:, yl:yh, xl:xh]
                            lam_batch[i] = lam
                        else:
                            x[i] = x[i] * lam + x_orig[j] * (1 - lam)
                            x[j] = x[j] * lam + x_orig[i] * (1 - lam)
                lam_batch = np.concatenate((lam_batch, lam_batch[::-1]))
                return torch.tensor(lam_batch, device=x.device, dtype=x.dtype).unsqueeze(1)

            def _mix_batch(self, x):
                lam, use_cutmix = self._params_per_batch()
                if lam == 1.:
                    return 1.
                if use_cutmix:
                    (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(
                        x.shape, lam, ratio_minmax=self.cutmix_minmax, correct_lam=self.correct_lam)
                    x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
                else:
                    x_flipped = x.flip(0).mul_(1. - lam)
                    x.mul_(lam).add_(x_flipped)
                return lam

            def __call__(self, x, target):
                assert len(x) % 2 == 0, 'Batch size should be even when using this'
                if self.mode == 'elem':
                    lam = self._mix_elem(x)
                elif self.mode == 'pair':
                    lam = self._mix_pair(x)
                else:
                    lam = self._mix_batch(x)
                target = mixup_target(target, self.num_classes, lam, self.label_smoothing, x.device)
                return x, target

        def blend(a, b, lam, is_tensor=False, round_output=True):
            if is_tensor:
                blend = a.to(dtype=torch.float32) * lam + b.to(dtype=torch.float32) * (1 - lam)
                if round_output:
                    torch.round(blend, out=blend)
            else:
                blend = a.astype(np.float32) * lam + b.astype(np.float32) * (1 - lam)
                if round_output:
                    np.rint(blend, out=blend)
            return blend

        class FastCollateMixup(Mixup):
            def _mix_batch_collate(self, output, batch, is_tensor=False):
                batch_size = len(batch)
                lam, use_cutmix = self._params_per_batch()
                round_output = output.dtype == torch.uint8
                if use_cutmix:
                    (yl, yh, xl, xh), lam = cutmix_bbox_and_lam(
                        output.shape, lam, ratio_minmax=self.cutmix_minmax, correct_lam=self.correct_lam)
                for i in range(batch_size):
                    j = batch_size - i - 1
                    mixed = batch[i][0]
                    if lam != 1.:
                        if use_cutmix:
                            mixed = mixed.clone() if is_tensor else mixed.copy()
                            mixed[:, yl:yh, xl:xh] = batch[j][0][:, yl:yh, xl:xh]
                        else:
                            mixed = blend(mixed, batch[j][0], lam, is_tensor, round_output)
                    mixed = mixed.to(dtype=output.dtype) if is_tensor else torch.from_numpy(mixed.astype(np.uint8))
                    output[i].copy_(mixed)
                return lam

            def __call__(self, batch, _=None):
                batch_size = len(batch)
                is_tensor = isinstance(batch[0][0], torch.Tensor)
                output_dtype = batch[0][0].dtype if is_tensor else torch.uint8
                output = torch.zeros((batch_size, *batch[0][0].shape), dtype=output_dtype)
                lam = self._mix_batch_collate(output, batch, is_tensor=is_tensor)
                target = torch.tensor([b[1] for b in batch], dtype=torch.int64)
                target = mixup_target(target, self.num_classes, lam, self.label_smoothing, device='cpu')
                target = target[:batch_size]
                return output, target

        rs = np.random.RandomState(12)
        model = init_params(torch, nn.Sequential(nn.Flatten(), nn.Linear(2 * 6 * 6, 5)), 13)
        soft, smooth = SoftTargetCrossEntropy(), LabelSmoothingCrossEntropy(0.1)
        for kw in (dict(mode='batch'), dict(mode='batch', mixup_alpha=0., cutmix_alpha=1.),
                   dict(mode='pair', cutmix_alpha=1.), dict(mode='elem', cutmix_alpha=1., switch_prob=0.7)):
            mixup_fn = Mixup(label_smoothing=0.1, num_classes=5, **kw)
            x = torch.tensor(rs.rand(4, 2, 6, 6).astype(np.float32))
            target = torch.tensor(rs.randint(0, 5, 4))
            x, target = mixup_fn(x, target)
            log("mixed", [x, target])
            model.zero_grad()
            loss = soft(model(x), target)
            loss.backward()
            log("soft loss", [loss, model[1].weight.grad])
        model.zero_grad()
        loss = smooth(model(x), torch.tensor([1, 0, 4, 2]))
        loss.backward()
        log("smooth loss", [loss, model[1].bias.grad])
        for cutmix_alpha in (0., 1.):
            collate = FastCollateMixup(cutmix_alpha=cutmix_alpha, switch_prob=1.0, num_classes=5)
            batch = [(rs.randint(0, 256, (2, 6, 6)).astype(np.uint8), k) for k in range(4)]
            log("collate numpy", list(collate(batch)))
            batch = [(torch.tensor(rs.randint(0, 256, (2, 6, 6)).astype(np.uint8)), k) for k in range(4)]
            log("collate tensor", list(collate(batch)))
    run_both(program)


# ikostrikov/pytorch-flows flows.py and main.py (MADE with get_mask's degree masks as buffers and
# F.linear(inputs, weight * mask, bias), its sequential inverse writing ``x[:, i_col] = ...``
# into zeros_like; BatchNormFlow with in-place running statistics and the momentum 0/1 trick
# after each epoch; ActNorm's data-dependent ``.data.copy_`` init; InvertibleMM with slogdet and
# inverse; Reverse; RealNVP's CouplingLayer with an alternating ``arange % 2`` mask;
# FlowSequential accumulating ``logdets += logdet`` over ``self._modules.values()`` both ways,
# log_probs and sample from given noise); the MAF, RealNVP and Glow stacks of main.py at
# num_inputs 4, num_hidden 6, 2 blocks, 2 Adam steps at lr 1e-6 (1e-4: biases whose shift the next
# BatchNormFlow removes have rounding-level gradients, which Adam turns into lr-sized steps);
# Glow's LUInvertibleMM (its scipy LU of a random orthogonal matrix sets non-parameter buffers)
# replaced by InvertibleMM
def test_pytorch_flows_maf_realnvp_glow():
    def program(torch, log):
        import math
        nn, F = torch.nn, torch.nn.functional

        def get_mask(in_features, out_features, in_flow_features, mask_type=None):
            if mask_type == 'input':
                in_degrees = torch.arange(in_features) % in_flow_features
            else:
                in_degrees = torch.arange(in_features) % (in_flow_features - 1)
            if mask_type == 'output':
                out_degrees = torch.arange(out_features) % in_flow_features - 1
            else:
                out_degrees = torch.arange(out_features) % (in_flow_features - 1)
            return (out_degrees.unsqueeze(-1) >= in_degrees.unsqueeze(0)).float()

        class MaskedLinear(nn.Module):
            def __init__(self, in_features, out_features, mask, cond_in_features=None, bias=True):
                super(MaskedLinear, self).__init__()
                self.linear = nn.Linear(in_features, out_features)
                if cond_in_features is not None:
                    self.cond_linear = nn.Linear(cond_in_features, out_features, bias=False)
                self.register_buffer('mask', mask)

            def forward(self, inputs, cond_inputs=None):
                output = F.linear(inputs, self.linear.weight * self.mask, self.linear.bias)
                if cond_inputs is not None:
                    output += self.cond_linear(cond_inputs)
                return output

        class MADE(nn.Module):
            def __init__(self, num_inputs, num_hidden, num_cond_inputs=None, act='relu'):
                super(MADE, self).__init__()
                activations = {'relu': nn.ReLU, 'sigmoid': nn.Sigmoid, 'tanh': nn.Tanh}
                act_func = activations[act]
                input_mask = get_mask(num_inputs, num_hidden, num_inputs, mask_type='input')
                hidden_mask = get_mask(num_hidden, num_hidden, num_inputs)
                output_mask = get_mask(num_hidden, num_inputs * 2, num_inputs, mask_type='output')
                self.joiner = MaskedLinear(num_inputs, num_hidden, input_mask, num_cond_inputs)
                self.trunk = nn.Sequential(act_func(), MaskedLinear(num_hidden, num_hidden, hidden_mask), act_func(),
                                           MaskedLinear(num_hidden, num_inputs * 2, output_mask))

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                if mode == 'direct':
                    h = self.joiner(inputs, cond_inputs)
                    m, a = self.trunk(h).chunk(2, 1)
                    u = (inputs - m) * torch.exp(-a)
                    return u, -a.sum(-1, keepdim=True)
                else:
                    x = torch.zeros_like(inputs)
                    for i_col in range(inputs.shape[1]):
                        h = self.joiner(x, cond_inputs)
                        m, a = self.trunk(h).chunk(2, 1)
                        x[:, i_col] = inputs[:, i_col] * torch.exp(a[:, i_col]) + m[:, i_col]
                    return x, -a.sum(-1, keepdim=True)

        class BatchNormFlow(nn.Module):
            def __init__(self, num_inputs, momentum=0.0, eps=1e-5):
                super(BatchNormFlow, self).__init__()
                self.log_gamma = nn.Parameter(torch.zeros(num_inputs))
                self.beta = nn.Parameter(torch.zeros(num_inputs))
                self.momentum = momentum
                self.eps = eps
                self.register_buffer('running_mean', torch.zeros(num_inputs))
                self.register_buffer('running_var', torch.ones(num_inputs))

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                if mode == 'direct':
                    if self.training:
                        self.batch_mean = inputs.mean(0)
                        self.batch_var = (inputs - self.batch_mean).pow(2).mean(0) + self.eps
                        self.running_mean.mul_(self.momentum)
                        self.running_var.mul_(self.momentum)
                        self.running_mean.add_(self.batch_mean.data * (1 - self.momentum))
                        self.running_var.add_(self.batch_var.data * (1 - self.momentum))
                        mean = self.batch_mean
                        var = self.batch_var
                    else:
                        mean = self.running_mean
                        var = self.running_var
                    x_hat = (inputs - mean) / var.sqrt()
                    y = torch.exp(self.log_gamma) * x_hat + self.beta
                    return y, (self.log_gamma - 0.5 * torch.log(var)).sum(-1, keepdim=True)
                else:
                    if self.training:
                        mean = self.batch_mean
                        var = self.batch_var
                    else:
                        mean = self.running_mean
                        var = self.running_var
                    x_hat = (inputs - self.beta) / torch.exp(self.log_gamma)
                    y = x_hat * var.sqrt() + mean
                    return y, (-self.log_gamma + 0.5 * torch.log(var)).sum(-1, keepdim=True)

        class ActNorm(nn.Module):
            def __init__(self, num_inputs):
                super(ActNorm, self).__init__()
                self.weight = nn.Parameter(torch.ones(num_inputs))
                self.bias = nn.Parameter(torch.zeros(num_inputs))
                self.initialized = False

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                if self.initialized == False:  # noqa: E712  (the program's spelling)
                    self.weight.data.copy_(torch.log(1.0 / (inputs.std(0) + 1e-12)))
                    self.bias.data.copy_(inputs.mean(0))
                    self.initialized = True
                if mode == 'direct':
                    return (inputs - self.bias) * torch.exp(self.weight), self.weight.sum(
                        -1, keepdim=True).unsqueeze(0).repeat(inputs.size(0), 1)
                else:
                    return inputs * torch.exp(-self.weight) + self.bias, -self.weight.sum(
                        -1, keepdim=True).unsqueeze(0).repeat(inputs.size(0), 1)

        class InvertibleMM(nn.Module):
            def __init__(self, num_inputs):
                super(InvertibleMM, self).__init__()
                self.W = nn.Parameter(torch.Tensor(num_inputs, num_inputs))
                nn.init.orthogonal_(self.W)

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                if mode == 'direct':
                    return inputs @ self.W, torch.slogdet(self.W)[-1].unsqueeze(0).unsqueeze(0).repeat(
                        inputs.size(0), 1)
                else:
                    return inputs @ torch.inverse(self.W), -torch.slogdet(self.W)[-1].unsqueeze(0).unsqueeze(0).repeat(
                        inputs.size(0), 1)

        class Reverse(nn.Module):
            def __init__(self, num_inputs):
                super(Reverse, self).__init__()
                self.perm = np.array(np.arange(0, num_inputs)[::-1])
                self.inv_perm = np.argsort(self.perm)

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                if mode == 'direct':
                    return inputs[:, self.perm], torch.zeros(inputs.size(0), 1, device=inputs.device)
                else:
                    return inputs[:, self.inv_perm], torch.zeros(inputs.size(0), 1, device=inputs.device)

        class CouplingLayer(nn.Module):
            def __init__(self, num_inputs, num_hidden, mask, s_act='tanh', t_act='relu'):
                super(CouplingLayer, self).__init__()
                self.num_inputs = num_inputs
                self.mask = mask
                activations = {'relu': nn.ReLU, 'sigmoid': nn.Sigmoid, 'tanh': nn.Tanh}
                s_act_func = activations[s_act]
                t_act_func = activations[t_act]
                self.scale_net = nn.Sequential(nn.Linear(num_inputs, num_hidden), s_act_func(),
                                               nn.Linear(num_hidden, num_hidden), s_act_func(),
                                               nn.Linear(num_hidden, num_inputs))
                self.translate_net = nn.Sequential(nn.Linear(num_inputs, num_hidden), t_act_func(),
                                                   nn.Linear(num_hidden, num_hidden), t_act_func(),
                                                   nn.Linear(num_hidden, num_inputs))

            def forward(self, inputs, cond_inputs=None, mode='direct'):
                mask = self.mask
                if mode == 'direct':
                    log_s = self.scale_net(inputs * mask) * (1 - mask)
                    t = self.translate_net(inputs * mask) * (1 - mask)
                    s = torch.exp(log_s)
                    return inputs * s + t, log_s.sum(-1, keepdim=True)
                else:
                    log_s = self.scale_net(inputs * mask) * (1 - mask)
                    t = self.translate_net(inputs * mask) * (1 - mask)
                    s = torch.exp(-log_s)
                    return (inputs - t) * s, -log_s.sum(-1, keepdim=True)

        class FlowSequential(nn.Sequential):
            def forward(self, inputs, cond_inputs=None, mode='direct', logdets=None):
                self.num_inputs = inputs.size(-1)
                if logdets is None:
                    logdets = torch.zeros(inputs.size(0), 1, device=inputs.device)
                assert mode in ['direct', 'inverse']
                if mode == 'direct':
                    for module in self._modules.values():
                        inputs, logdet = module(inputs, cond_inputs, mode)
                        logdets += logdet
                else:
                    for module in reversed(self._modules.values()):
                        inputs, logdet = module(inputs, cond_inputs, mode)
                        logdets += logdet
                return inputs, logdets

            def log_probs(self, inputs):
                u, log_jacob = self(inputs)
                log_probs = (-0.5 * u.pow(2) - 0.5 * math.log(2 * math.pi)).sum(-1, keepdim=True)
                return (log_probs + log_jacob).sum(-1, keepdim=True)

            def sample(self, num_samples=None, noise=None):
                if noise is None:
                    noise = torch.Tensor(num_samples, self.num_inputs).normal_()
                device = next(self.parameters()).device
                noise = noise.to(device)
                samples = self.forward(noise, mode='inverse')[0]
                return samples

        num_inputs, num_hidden, num_blocks = 4, 6, 2
        data = randn(torch, (8, num_inputs), 40)
        for seed, flow in enumerate(('maf', 'realnvp', 'glow')):
            modules = []
            if flow == 'maf':
                for _ in range(num_blocks):
                    modules += [MADE(num_inputs, num_hidden, None, act='relu'), BatchNormFlow(num_inputs),
                                Reverse(num_inputs)]
            elif flow == 'realnvp':
                mask = torch.arange(0, num_inputs) % 2
                mask = mask.float()
                for _ in range(num_blocks):
                    modules += [CouplingLayer(num_inputs, num_hidden, mask, s_act='tanh', t_act='relu'),
                                BatchNormFlow(num_inputs)]
                    mask = 1 - mask
            else:
                mask = torch.arange(0, num_inputs) % 2
                mask = mask.float()
                for _ in range(num_blocks):
                    modules += [BatchNormFlow(num_inputs), InvertibleMM(num_inputs),
                                CouplingLayer(num_inputs, num_hidden, mask, s_act='tanh', t_act='relu')]
                    mask = 1 - mask
            model = FlowSequential(*modules)
            init_params(torch, model, 41 + seed, scale=0.4)
            if flow == 'glow':
                model.add_module("actnorm", ActNorm(num_inputs))
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-6, weight_decay=1e-6)
            model.train()
            for _ in range(2):
                optimizer.zero_grad()
                loss = -model.log_probs(data).mean()
                loss.backward()
                optimizer.step()
                log(flow + " loss", loss)
            for module in model.modules():
                if isinstance(module, BatchNormFlow):
                    module.momentum = 0
            with torch.no_grad():
                model(data)
            for module in model.modules():
                if isinstance(module, BatchNormFlow):
                    module.momentum = 1
            log(flow + " grads", [p.grad for p in model.parameters()][:4])
            log(flow + " params", dict(model.named_parameters()))
            model.eval()
            with torch.no_grad():
                u, logdets = model(data)
                log(flow + " u", [u, logdets])
                log(flow + " inverse", model.sample(noise=u))
                log(flow + " eval log_probs", model.log_probs(data))
    # rtol 1e-4: Glow's stacked invertible layers amplify rounding: torch's CPU kernels round by CPU
    # (5.6e-5 apart on a CPU without AVX-512, 1.1e-5 absolute)
    run_both(program, rtol=1e-4, atol=2e-5)


# adambielski/siamese-triplet losses.py and utils.py (ContrastiveLoss with ``(1 + -1 * target)
# .float()``, TripletLoss, OnlineContrastiveLoss and OnlineTripletLoss over selector indices;
# pdist through mm and broadcast sums; the selectors' numpy/torch mix: a LongTensor of
# itertools.combinations indexed by ``(numpy bool array).nonzero()``, numpy labels indexed by
# tensor columns, ``distance_matrix[numpy, numpy]`` and ``[LongTensor([a]), LongTensor(negs)]``,
# np.argpartition of ``.data.cpu().numpy()`` values, hardest/random/semihard negatives) and
# trainer.py's ``loss_fn(*loss_inputs)`` tuple handling; a two-layer PReLU embedding net in place
# of the MNIST EmbeddingNet, AllPositivePairSelector(balance=False) (its balance draws torch.randperm),
# np.random seeded inside the program
def test_siamese_triplet_online_losses():
    def program(torch, log):
        from itertools import combinations
        nn, F = torch.nn, torch.nn.functional
        np.random.seed(21)

        def pdist(vectors):
            distance_matrix = -2 * vectors.mm(torch.t(vectors)) + vectors.pow(2).sum(dim=1).view(1, -1) + \
                vectors.pow(2).sum(dim=1).view(-1, 1)
            return distance_matrix

        class AllPositivePairSelector:
            def __init__(self, balance=True):
                self.balance = balance

            def get_pairs(self, embeddings, labels):
                labels = labels.cpu().data.numpy()
                all_pairs = np.array(list(combinations(range(len(labels)), 2)))
                all_pairs = torch.LongTensor(all_pairs)
                positive_pairs = all_pairs[(labels[all_pairs[:, 0]] == labels[all_pairs[:, 1]]).nonzero()]
                negative_pairs = all_pairs[(labels[all_pairs[:, 0]] != labels[all_pairs[:, 1]]).nonzero()]
                if self.balance:
                    negative_pairs = negative_pairs[torch.randperm(len(negative_pairs))[:len(positive_pairs)]]
                return positive_pairs, negative_pairs

        class HardNegativePairSelector:
            def __init__(self, cpu=False):
                self.cpu = cpu

            def get_pairs(self, embeddings, labels):
                if self.cpu:
                    embeddings = embeddings.cpu()
                distance_matrix = pdist(embeddings)
                labels = labels.cpu().data.numpy()
                all_pairs = np.array(list(combinations(range(len(labels)), 2)))
                all_pairs = torch.LongTensor(all_pairs)
                positive_pairs = all_pairs[(labels[all_pairs[:, 0]] == labels[all_pairs[:, 1]]).nonzero()]
                negative_pairs = all_pairs[(labels[all_pairs[:, 0]] != labels[all_pairs[:, 1]]).nonzero()]
                negative_distances = distance_matrix[negative_pairs[:, 0], negative_pairs[:, 1]]
                negative_distances = negative_distances.cpu().data.numpy()
                top_negatives = np.argpartition(negative_distances, -len(positive_pairs))[-len(positive_pairs):]
                top_negative_pairs = negative_pairs[torch.LongTensor(top_negatives)]
                return positive_pairs, top_negative_pairs

        class AllTripletSelector:
            def get_triplets(self, embeddings, labels):
                labels = labels.cpu().data.numpy()
                triplets = []
                for label in set(labels):
                    label_mask = (labels == label)
                    label_indices = np.where(label_mask)[0]
                    if len(label_indices) < 2:
                        continue
                    negative_indices = np.where(np.logical_not(label_mask))[0]
                    anchor_positives = list(combinations(label_indices, 2))
                    temp_triplets = [[anchor_positive[0], anchor_positive[1], neg_ind]
                                     for anchor_positive in anchor_positives for neg_ind in negative_indices]
                    triplets += temp_triplets
                return torch.LongTensor(np.array(triplets))

        def hardest_negative(loss_values):
            hard_negative = np.argmax(loss_values)
            return hard_negative if loss_values[hard_negative] > 0 else None

        def random_hard_negative(loss_values):
            hard_negatives = np.where(loss_values > 0)[0]
            return np.random.choice(hard_negatives) if len(hard_negatives) > 0 else None

        def semihard_negative(loss_values, margin):
            semihard_negatives = np.where(np.logical_and(loss_values < margin, loss_values > 0))[0]
            return np.random.choice(semihard_negatives) if len(semihard_negatives) > 0 else None

        class FunctionNegativeTripletSelector:
            def __init__(self, margin, negative_selection_fn, cpu=True):
                self.cpu = cpu
                self.margin = margin
                self.negative_selection_fn = negative_selection_fn

            def get_triplets(self, embeddings, labels):
                if self.cpu:
                    embeddings = embeddings.cpu()
                distance_matrix = pdist(embeddings)
                distance_matrix = distance_matrix.cpu()
                labels = labels.cpu().data.numpy()
                triplets = []
                for label in set(labels):
                    label_mask = (labels == label)
                    label_indices = np.where(label_mask)[0]
                    if len(label_indices) < 2:
                        continue
                    negative_indices = np.where(np.logical_not(label_mask))[0]
                    anchor_positives = list(combinations(label_indices, 2))
                    anchor_positives = np.array(anchor_positives)
                    ap_distances = distance_matrix[anchor_positives[:, 0], anchor_positives[:, 1]]
                    for anchor_positive, ap_distance in zip(anchor_positives, ap_distances):
                        loss_values = ap_distance - distance_matrix[torch.LongTensor(np.array([anchor_positive[0]])),
                                                                    torch.LongTensor(negative_indices)] + self.margin
                        loss_values = loss_values.data.cpu().numpy()
                        hard_negative = self.negative_selection_fn(loss_values)
                        if hard_negative is not None:
                            hard_negative = negative_indices[hard_negative]
                            triplets.append([anchor_positive[0], anchor_positive[1], hard_negative])
                if len(triplets) == 0:
                    triplets.append([anchor_positive[0], anchor_positive[1], negative_indices[0]])
                triplets = np.array(triplets)
                return torch.LongTensor(triplets)

        class ContrastiveLoss(nn.Module):
            def __init__(self, margin):
                super(ContrastiveLoss, self).__init__()
                self.margin = margin

            def forward(self, output1, output2, target, size_average=True):
                distances = (output2 - output1).pow(2).sum(1)
                losses = 0.5 * (target.float() * distances +
                                (1 + -1 * target).float() * F.relu(self.margin - distances.sqrt()).pow(2))
                return losses.mean() if size_average else losses.sum()

        class TripletLoss(nn.Module):
            def __init__(self, margin):
                super(TripletLoss, self).__init__()
                self.margin = margin

            def forward(self, anchor, positive, negative, size_average=True):
                distance_positive = (anchor - positive).pow(2).sum(1)
                distance_negative = (anchor - negative).pow(2).sum(1)
                losses = F.relu(distance_positive - distance_negative + self.margin)
                return losses.mean() if size_average else losses.sum()

        class OnlineContrastiveLoss(nn.Module):
            def __init__(self, margin, pair_selector):
                super(OnlineContrastiveLoss, self).__init__()
                self.margin = margin
                self.pair_selector = pair_selector

            def forward(self, embeddings, target):
                positive_pairs, negative_pairs = self.pair_selector.get_pairs(embeddings, target)
                if embeddings.is_cuda:
                    positive_pairs = positive_pairs.cuda()
                    negative_pairs = negative_pairs.cuda()
                positive_loss = (embeddings[positive_pairs[:, 0]] - embeddings[positive_pairs[:, 1]]).pow(2).sum(1)
                negative_loss = F.relu(self.margin - (embeddings[negative_pairs[:, 0]]
                                                      - embeddings[negative_pairs[:, 1]]).pow(2).sum(1).sqrt()).pow(2)
                loss = torch.cat([positive_loss, negative_loss], dim=0)
                return loss.mean()

        class OnlineTripletLoss(nn.Module):
            def __init__(self, margin, triplet_selector):
                super(OnlineTripletLoss, self).__init__()
                self.margin = margin
                self.triplet_selector = triplet_selector

            def forward(self, embeddings, target):
                triplets = self.triplet_selector.get_triplets(embeddings, target)
                if embeddings.is_cuda:
                    triplets = triplets.cuda()
                ap_distances = (embeddings[triplets[:, 0]] - embeddings[triplets[:, 1]]).pow(2).sum(1)
                an_distances = (embeddings[triplets[:, 0]] - embeddings[triplets[:, 2]]).pow(2).sum(1)
                losses = F.relu(ap_distances - an_distances + self.margin)
                return losses.mean(), len(triplets)

        margin = 1.
        model = init_params(torch, nn.Sequential(nn.Linear(6, 8), nn.PReLU(), nn.Linear(8, 2)), 22, scale=0.6)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        rs = np.random.RandomState(23)
        loss_fns = [OnlineContrastiveLoss(margin, AllPositivePairSelector(balance=False)),
                    OnlineContrastiveLoss(margin, HardNegativePairSelector()),
                    OnlineTripletLoss(margin, AllTripletSelector()),
                    OnlineTripletLoss(margin, FunctionNegativeTripletSelector(margin, hardest_negative, cpu=False)),
                    OnlineTripletLoss(margin, FunctionNegativeTripletSelector(margin, random_hard_negative)),
                    OnlineTripletLoss(margin, FunctionNegativeTripletSelector(
                        margin, lambda x: semihard_negative(x, margin)))]
        for loss_fn in loss_fns:
            data = (torch.tensor(rs.standard_normal((8, 6)).astype(np.float32)),)
            target = torch.tensor(rs.randint(0, 3, 8))
            target = target if type(target) in (tuple, list) else (target,)
            optimizer.zero_grad()
            outputs = model(*data)
            if type(outputs) not in (tuple, list):
                outputs = (outputs,)
            loss_inputs = outputs + target
            loss_outputs = loss_fn(*loss_inputs)
            loss = loss_outputs[0] if type(loss_outputs) in (tuple, list) else loss_outputs
            loss.backward()
            optimizer.step()
            log("loss", list(loss_outputs) if isinstance(loss_outputs, tuple) else loss_outputs)
        a, p, n = (randn(torch, (4, 2), s, requires_grad=True) for s in (24, 25, 26))
        for loss in (ContrastiveLoss(margin)(a, p, torch.tensor([1, 0, 0, 1])), TripletLoss(margin)(a, p, n, False)):
            loss.backward()
            log("pair losses", [loss, a.grad])
        log("prelu", model[1].weight)
    run_both(program)
