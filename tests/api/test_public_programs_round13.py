"""A thirteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round12.py``: SimCLR's NT-Xent loss over a boolean mask built with
``fill_diagonal_`` and ``torch.diag`` offsets, a VQ-VAE quantizer's straight-through estimator
with ``scatter_`` one-hots, a mixture density network, EfficientNet's memory-efficient Swish
(``ctx.saved_variables``) and TensorFlow-style same padding, MobileNetV3's hard-swish /
squeeze-excite inverted residuals, ... Each keeps its program's code at tiny sizes (fewer
channels, steps and samples), with numpy-seeded data and parameters (``init_params``/``randn``)
in place of downloads and random streams; where a program's own code had to change, the
comment above its test says how and why. Python's ``random`` and numpy's global stream are
seeded at the start of each run (``_seeded``).
"""
import contextlib
import random

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


@contextlib.contextmanager
def _seeded(seed=0):
    """Seed Python's and numpy's global streams for one run, restoring them afterwards."""
    py, npst = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npst)


# Spijkervet/SimCLR simclr/modules/nt_xent.py (NT_Xent: a bool mask from ``torch.ones(...,
# dtype=bool).fill_diagonal_(0)`` and per-pair writes, CosineSimilarity(dim=2) between
# ``z.unsqueeze(1)`` and ``z.unsqueeze(0)``, ``torch.diag(sim, +-k)``, ``sim[mask]``,
# CrossEntropyLoss(reduction="sum") and ``loss /= N``); world_size 1 (no GatherLayer), a
# linear projector of width 8 trained for 2 SGD steps on batches of 3 in place of the ResNet,
# the printed loss rounded to 4 places (float32 sums differ in the last digit)
def test_simclr_nt_xent():
    def program(torch, log):
        nn = torch.nn

        class NT_Xent(nn.Module):
            def __init__(self, batch_size, temperature, world_size):
                super(NT_Xent, self).__init__()
                self.batch_size = batch_size
                self.temperature = temperature
                self.world_size = world_size

                self.mask = self.mask_correlated_samples(batch_size, world_size)
                self.criterion = nn.CrossEntropyLoss(reduction="sum")
                self.similarity_f = nn.CosineSimilarity(dim=2)

            def mask_correlated_samples(self, batch_size, world_size):
                N = 2 * batch_size * world_size
                mask = torch.ones((N, N), dtype=bool)
                mask = mask.fill_diagonal_(0)
                for i in range(batch_size * world_size):
                    mask[i, batch_size * world_size + i] = 0
                    mask[batch_size * world_size + i, i] = 0
                return mask

            def forward(self, z_i, z_j):
                N = 2 * self.batch_size * self.world_size

                z = torch.cat((z_i, z_j), dim=0)

                sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature

                sim_i_j = torch.diag(sim, self.batch_size * self.world_size)
                sim_j_i = torch.diag(sim, -self.batch_size * self.world_size)

                positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
                negative_samples = sim[self.mask].reshape(N, -1)

                labels = torch.zeros(N).to(positive_samples.device).long()
                logits = torch.cat((positive_samples, negative_samples), dim=1)
                loss = self.criterion(logits, labels)
                loss /= N
                return loss

        criterion = NT_Xent(3, 0.5, 1)
        log("mask", criterion.mask)
        proj = init_params(torch, nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4)), 0)
        opt = torch.optim.SGD(proj.parameters(), lr=0.1, momentum=0.9)
        for step in range(2):
            x_i, x_j = randn(torch, (3, 5), 10 + step), randn(torch, (3, 5), 20 + step)
            loss = criterion(proj(x_i), proj(x_j))
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
            print(f"Step [{step}/2]\t Loss: {loss.item():.4f}")
        log("w", proj[2].weight)

    run_both(program)


# MishaLaskin/vqvae models/quantizer.py (VectorQuantizer: distances by ``z^2 + e^2 - 2 z e``,
# ``argmin(d, dim=1).unsqueeze(1)``, a zeros one-hot filled by ``scatter_(1, idx, 1)``, the
# codebook and commitment losses on detached halves, the straight-through ``z + (z_q -
# z).detach()`` and the perplexity) behind a one-conv encoder and decoder as models/vqvae.py
# wires them and main.py's ``recon_loss + embedding_loss`` with Adam(amsgrad=True); n_e 512 ->
# 6, e_dim 64 -> 4, 2 steps on a 2x3x4x4 batch; the printed numbers rounded to 4 places
def test_vqvae_quantizer():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        class VectorQuantizer(nn.Module):
            def __init__(self, n_e, e_dim, beta):
                super(VectorQuantizer, self).__init__()
                self.n_e = n_e
                self.e_dim = e_dim
                self.beta = beta

                self.embedding = nn.Embedding(self.n_e, self.e_dim)
                self.embedding.weight.data.uniform_(-1.0 / self.n_e, 1.0 / self.n_e)

            def forward(self, z):
                z = z.permute(0, 2, 3, 1).contiguous()
                z_flattened = z.view(-1, self.e_dim)

                d = torch.sum(z_flattened ** 2, dim=1, keepdim=True) + \
                    torch.sum(self.embedding.weight**2, dim=1) - 2 * \
                    torch.matmul(z_flattened, self.embedding.weight.t())

                min_encoding_indices = torch.argmin(d, dim=1).unsqueeze(1)
                min_encodings = torch.zeros(
                    min_encoding_indices.shape[0], self.n_e).to(device)
                min_encodings.scatter_(1, min_encoding_indices, 1)

                z_q = torch.matmul(min_encodings, self.embedding.weight).view(z.shape)
                loss = torch.mean((z_q.detach()-z)**2) + self.beta * \
                    torch.mean((z_q - z.detach()) ** 2)

                z_q = z + (z_q - z).detach()

                e_mean = torch.mean(min_encodings, dim=0)
                perplexity = torch.exp(-torch.sum(e_mean * torch.log(e_mean + 1e-10)))

                z_q = z_q.permute(0, 3, 1, 2).contiguous()

                return loss, z_q, perplexity, min_encodings

        class VQVAE(nn.Module):
            def __init__(self):
                super(VQVAE, self).__init__()
                self.encoder = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1)
                self.vector_quantization = VectorQuantizer(6, 4, 0.25)
                self.decoder = nn.ConvTranspose2d(4, 3, kernel_size=3, stride=1, padding=1)

            def forward(self, x, verbose=False):
                z_e = self.encoder(x)
                embedding_loss, z_q, perplexity, _ = self.vector_quantization(z_e)
                x_hat = self.decoder(z_q)
                return embedding_loss, x_hat, perplexity

        model = init_params(torch, VQVAE(), 0, scale=0.5)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, amsgrad=True)
        model.train()
        x = randn(torch, (2, 3, 4, 4), 1)
        x_train_var = 1.3
        for i in range(2):
            optimizer.zero_grad()
            embedding_loss, x_hat, perplexity = model(x)
            recon_loss = torch.mean((x_hat - x)**2) / x_train_var
            loss = recon_loss + embedding_loss
            loss.backward()
            optimizer.step()
            log("recon", recon_loss)
            log("perplexity", perplexity)
            print('Update #', i, 'Recon Error:', np.mean([recon_loss.cpu().detach().numpy()]).round(4),
                  'Loss', np.mean([loss.cpu().detach().numpy()]).round(4),
                  'Perplexity:', np.mean([perplexity.cpu().detach().numpy()]).round(4))
        log("codebook", model.vector_quantization.embedding.weight)
        log("enc_grad", model.encoder.weight.grad)

    run_both(program)


# sagelywizard/pytorch-mdn mdn/mdn.py (MDN: a Softmax(dim=1) mixing head, exp'd sigmas viewed
# to BxGxO, gaussian_probability's ``unsqueeze(1).expand_as`` and ``torch.prod(ret, 2)``,
# mdn_loss's negative log of the mixture) with ``torch.autograd.Variable`` imported as the
# file does, trained as example.py does (Linear/Tanh into the MDN, Adam); 5 Gaussians -> 3,
# 2 output dims, 3 steps on 6 points; ``sample`` draws from Categorical/randn and is left out
def test_pytorch_mdn():
    def program(torch, log):
        import math
        nn, optim = torch.nn, torch.optim
        from torch.autograd import Variable  # noqa: F401  (the file's import)

        ONEOVERSQRT2PI = 1.0 / math.sqrt(2 * math.pi)

        class MDN(nn.Module):
            def __init__(self, in_features, out_features, num_gaussians):
                super(MDN, self).__init__()
                self.in_features = in_features
                self.out_features = out_features
                self.num_gaussians = num_gaussians
                self.pi = nn.Sequential(
                    nn.Linear(in_features, num_gaussians),
                    nn.Softmax(dim=1)
                )
                self.sigma = nn.Linear(in_features, out_features * num_gaussians)
                self.mu = nn.Linear(in_features, out_features * num_gaussians)

            def forward(self, minibatch):
                pi = self.pi(minibatch)
                sigma = torch.exp(self.sigma(minibatch))
                sigma = sigma.view(-1, self.num_gaussians, self.out_features)
                mu = self.mu(minibatch)
                mu = mu.view(-1, self.num_gaussians, self.out_features)
                return pi, sigma, mu

        def gaussian_probability(sigma, mu, target):
            target = target.unsqueeze(1).expand_as(sigma)
            ret = ONEOVERSQRT2PI * torch.exp(-0.5 * ((target - mu) / sigma)**2) / sigma
            return torch.prod(ret, 2)

        def mdn_loss(pi, sigma, mu, target):
            prob = pi * gaussian_probability(sigma, mu, target)
            nll = -torch.log(torch.sum(prob, dim=1))
            return torch.mean(nll)

        model = init_params(torch, nn.Sequential(
            nn.Linear(1, 5),
            nn.Tanh(),
            MDN(5, 2, 3)
        ), 0, scale=0.5)
        optimizer = optim.Adam(model.parameters())
        x_variable = randn(torch, (6, 1), 3)
        y_variable = torch.cat([torch.sin(x_variable), torch.cos(x_variable)], 1)
        for epoch in range(3):
            model.zero_grad()
            pi, sigma, mu = model(x_variable)
            loss = mdn_loss(pi, sigma, mu, y_variable)
            loss.backward()
            optimizer.step()
            log("loss", loss)
        log("pi", pi)
        log("sigma", sigma)
        log("mu_grad", model[2].mu.weight.grad)

    run_both(program)


# lukemelas/EfficientNet-PyTorch efficientnet_pytorch/utils.py (SwishImplementation: a custom
# autograd.Function reading ``ctx.saved_variables``; MemoryEfficientSwish, Swish,
# round_filters/round_repeats over the GlobalParams namedtuple, drop_connect (identity in
# eval), Conv2dDynamicSamePadding's F.pad by ``math.ceil`` and Conv2dStaticSamePadding's
# nn.ZeroPad2d) with the MBConv block of model.py (expand, depthwise, squeeze-excite by
# ``adaptive_avg_pool2d`` and ``torch.sigmoid(x_squeezed) * x``, project, id skip); channels
# 16 -> 4, one block on a 2x4x5x5 batch (odd size: asymmetric same padding), 2 SGD steps; the
# squeeze-excite convs use the block's (dynamic) padding class, as model.py's older version did
# (the (1, 1) tuple image_size of the newer one is not a list and fails in this utils.py)
def test_efficientnet_utils_mbconv():
    def program(torch, log):
        import collections
        import math
        from functools import partial
        nn, F = torch.nn, torch.nn.functional

        GlobalParams = collections.namedtuple('GlobalParams', [
            'batch_norm_momentum', 'batch_norm_epsilon', 'dropout_rate',
            'num_classes', 'width_coefficient', 'depth_coefficient',
            'depth_divisor', 'min_depth', 'drop_connect_rate', 'image_size'])
        BlockArgs = collections.namedtuple('BlockArgs', [
            'kernel_size', 'num_repeat', 'input_filters', 'output_filters',
            'expand_ratio', 'id_skip', 'stride', 'se_ratio'])
        GlobalParams.__new__.__defaults__ = (None,) * len(GlobalParams._fields)
        BlockArgs.__new__.__defaults__ = (None,) * len(BlockArgs._fields)

        class SwishImplementation(torch.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i * torch.sigmoid(i)
                ctx.save_for_backward(i)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                i = ctx.saved_variables[0]
                sigmoid_i = torch.sigmoid(i)
                return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

        class MemoryEfficientSwish(nn.Module):
            def forward(self, x):
                return SwishImplementation.apply(x)

        class Swish(nn.Module):
            def forward(self, x):
                return x * torch.sigmoid(x)

        def round_filters(filters, global_params):
            multiplier = global_params.width_coefficient
            if not multiplier:
                return filters
            divisor = global_params.depth_divisor
            min_depth = global_params.min_depth
            filters *= multiplier
            min_depth = min_depth or divisor
            new_filters = max(min_depth, int(filters + divisor / 2) // divisor * divisor)
            if new_filters < 0.9 * filters:
                new_filters += divisor
            return int(new_filters)

        def round_repeats(repeats, global_params):
            multiplier = global_params.depth_coefficient
            if not multiplier:
                return repeats
            return int(math.ceil(multiplier * repeats))

        def drop_connect(inputs, p, training):
            if not training: return inputs
            batch_size = inputs.shape[0]
            keep_prob = 1 - p
            random_tensor = keep_prob
            random_tensor += torch.rand([batch_size, 1, 1, 1], dtype=inputs.dtype, device=inputs.device)
            binary_tensor = torch.floor(random_tensor)
            output = inputs / keep_prob * binary_tensor
            return output

        def get_same_padding_conv2d(image_size=None):
            if image_size is None:
                return Conv2dDynamicSamePadding
            else:
                return partial(Conv2dStaticSamePadding, image_size=image_size)

        class Conv2dDynamicSamePadding(nn.Conv2d):
            def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True):
                super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)
                self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2

            def forward(self, x):
                ih, iw = x.size()[-2:]
                kh, kw = self.weight.size()[-2:]
                sh, sw = self.stride
                oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
                pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
                pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
                if pad_h > 0 or pad_w > 0:
                    x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
                return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

        class Identity(nn.Module):
            def __init__(self, ):
                super(Identity, self).__init__()

            def forward(self, input):
                return input

        class Conv2dStaticSamePadding(nn.Conv2d):
            def __init__(self, in_channels, out_channels, kernel_size, image_size=None, **kwargs):
                super().__init__(in_channels, out_channels, kernel_size, **kwargs)
                self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2
                assert image_size is not None
                ih, iw = image_size if type(image_size) == list else [image_size, image_size]
                kh, kw = self.weight.size()[-2:]
                sh, sw = self.stride
                oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
                pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
                pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
                if pad_h > 0 or pad_w > 0:
                    self.static_padding = nn.ZeroPad2d((pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
                else:
                    self.static_padding = Identity()

            def forward(self, x):
                x = self.static_padding(x)
                x = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
                return x

        # efficientnet_pytorch/model.py's MBConvBlock (the image_size-less version)
        class MBConvBlock(nn.Module):
            def __init__(self, block_args, global_params, image_size=None):
                super().__init__()
                self._block_args = block_args
                self._bn_mom = 1 - global_params.batch_norm_momentum
                self._bn_eps = global_params.batch_norm_epsilon
                self.has_se = (self._block_args.se_ratio is not None) and (0 < self._block_args.se_ratio <= 1)
                self.id_skip = block_args.id_skip

                inp = self._block_args.input_filters
                oup = self._block_args.input_filters * self._block_args.expand_ratio
                if self._block_args.expand_ratio != 1:
                    Conv2d = get_same_padding_conv2d(image_size=image_size)
                    self._expand_conv = Conv2d(in_channels=inp, out_channels=oup, kernel_size=1, bias=False)
                    self._bn0 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)

                k = self._block_args.kernel_size
                s = self._block_args.stride
                Conv2d = get_same_padding_conv2d(image_size=image_size)
                self._depthwise_conv = Conv2d(
                    in_channels=oup, out_channels=oup, groups=oup,
                    kernel_size=k, stride=s, bias=False)
                self._bn1 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)

                if self.has_se:
                    Conv2d = get_same_padding_conv2d(image_size=image_size)
                    num_squeezed_channels = max(1, int(self._block_args.input_filters * self._block_args.se_ratio))
                    self._se_reduce = Conv2d(in_channels=oup, out_channels=num_squeezed_channels, kernel_size=1)
                    self._se_expand = Conv2d(in_channels=num_squeezed_channels, out_channels=oup, kernel_size=1)

                final_oup = self._block_args.output_filters
                Conv2d = get_same_padding_conv2d(image_size=image_size)
                self._project_conv = Conv2d(in_channels=oup, out_channels=final_oup, kernel_size=1, bias=False)
                self._bn2 = nn.BatchNorm2d(num_features=final_oup, momentum=self._bn_mom, eps=self._bn_eps)
                self._swish = MemoryEfficientSwish()

            def forward(self, inputs, drop_connect_rate=None):
                x = inputs
                if self._block_args.expand_ratio != 1:
                    x = self._expand_conv(inputs)
                    x = self._bn0(x)
                    x = self._swish(x)

                x = self._depthwise_conv(x)
                x = self._bn1(x)
                x = self._swish(x)

                if self.has_se:
                    x_squeezed = F.adaptive_avg_pool2d(x, 1)
                    x_squeezed = self._se_reduce(x_squeezed)
                    x_squeezed = self._swish(x_squeezed)
                    x_squeezed = self._se_expand(x_squeezed)
                    x = torch.sigmoid(x_squeezed) * x

                x = self._project_conv(x)
                x = self._bn2(x)

                input_filters, output_filters = self._block_args.input_filters, self._block_args.output_filters
                if self.id_skip and self._block_args.stride == 1 and input_filters == output_filters:
                    if drop_connect_rate:
                        x = drop_connect(x, p=drop_connect_rate, training=self.training)
                    x = x + inputs
                return x

            def set_swish(self, memory_efficient=True):
                self._swish = MemoryEfficientSwish() if memory_efficient else Swish()

        gp = GlobalParams(batch_norm_momentum=0.99, batch_norm_epsilon=1e-3, width_coefficient=0.25,
                          depth_coefficient=1.1, depth_divisor=2, drop_connect_rate=0.2)
        log("filters", round_filters(16, gp))
        log("repeats", round_repeats(2, gp))
        ba = BlockArgs(kernel_size=3, num_repeat=1, input_filters=round_filters(16, gp),
                       output_filters=round_filters(16, gp), expand_ratio=2, id_skip=True,
                       stride=1, se_ratio=0.25)
        block = init_params(torch, MBConvBlock(ba, gp), 0, scale=0.5)
        static = init_params(torch, Conv2dStaticSamePadding(4, 3, 2, image_size=5, stride=2), 1, scale=0.5)
        opt = torch.optim.SGD(list(block.parameters()) + list(static.parameters()), lr=0.1)
        x = randn(torch, (2, 4, 5, 5), 2)
        for i in range(2):
            out = block(x, drop_connect_rate=gp.drop_connect_rate if i else None)
            out = static(out)
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
            log("shape", tuple(out.shape))
        block.eval()
        log("eval", block(x, drop_connect_rate=0.2))
        block.set_swish(memory_efficient=False)
        log("eval_swish", block(x))
        log("rm", block._bn1.running_var)

    run_both(program)
