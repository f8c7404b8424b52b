"""A thirteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round12.py``: SimCLR's NT-Xent loss over a boolean mask built with
``fill_diagonal_`` and ``torch.diag`` offsets, a VQ-VAE quantizer's straight-through estimator
with ``scatter_`` one-hots, a mixture density network, EfficientNet's memory-efficient Swish
(``ctx.saved_variables``) and TensorFlow-style same padding, MobileNetV3's hard-swish /
squeeze-excite inverted residuals, Glow (data-dependent ActNorm, LU-parametrised invertible 1x1
convs from scipy, ``inverse()`` in reverse), Grad-CAM and guided backpropagation through
``register_backward_hook`` on every module, FNet's ``torch.fft`` token mixing, FaceFormer's
ALiBi-biased TransformerDecoder with its autoregressive predict loop, Hamiltonian neural
networks (``autograd.grad(create_graph=True)`` in the loss, rk4), TRPO's conjugate gradients and
Fisher-vector products (with the 0-dim indexing error torch 2 raises in the original), a
Gumbel-softmax VAE with a numpy-annealed temperature, and OpenNMT's label smoothing loss. Each
keeps its program's code at tiny sizes (fewer channels, steps and samples), with numpy-seeded
data and parameters (``init_params``/``randn``) in place of downloads and random streams; where
a program's own code had to change, the comment above its test says how and why. Python's
``random`` and numpy's global stream are seeded at the start of a run where the program draws
from them (``_seeded``). A ``from torch... import`` inside a program would import the real
torch on the tracegrad side too, so such imports are written as attribute lookups on the
``torch`` argument.
"""
import random

import numpy as np
import pytest

from parity import init_params, randn, run_both, seeded as _seeded

torch = pytest.importorskip("torch")


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
        Variable = torch.autograd.Variable  # noqa: F841  (the file's import)

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


# rosinality/glow-pytorch model.py (ActNorm's data-dependent init behind a uint8
# ``initialized`` buffer and ``.item()``, InvConv2dLU built from scipy's qr/lu of
# ``np.random.randn`` through ``torch.from_numpy`` buffers, ``sum(self.w_s)`` over a tensor,
# ZeroConv2d's ``F.pad(value=1)``, AffineCoupling's ``F.sigmoid``, Block's squeeze by
# view/permute and its split prior, reverse through ``.inverse()``) trained as train.py does
# (the n_bits quantisation, ``calc_loss``, a no_grad first pass that initialises ActNorm, lr set
# through ``param_groups[0]["lr"]``), then reconstructed from its z's; filter_size 512 -> 8,
# n_flow 32 -> 1, n_block 4 -> 2, 1x4x4 images (calc_loss's ``* 3`` kept), 2 steps; the
# dequantisation ``torch.rand_like(image) / n_bins`` is a seeded numpy draw
def test_glow_pytorch():
    def program(torch, log):
        from math import log as mlog, pi
        from scipy import linalg as la
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim

        logabs = lambda x: torch.log(torch.abs(x))

        class ActNorm(nn.Module):
            def __init__(self, in_channel, logdet=True):
                super().__init__()

                self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
                self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))

                self.register_buffer('initialized', torch.tensor(0, dtype=torch.uint8))
                self.logdet = logdet

            def initialize(self, input):
                with torch.no_grad():
                    flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
                    mean = (
                        flatten.mean(1)
                        .unsqueeze(1)
                        .unsqueeze(2)
                        .unsqueeze(3)
                        .permute(1, 0, 2, 3)
                    )
                    std = (
                        flatten.std(1)
                        .unsqueeze(1)
                        .unsqueeze(2)
                        .unsqueeze(3)
                        .permute(1, 0, 2, 3)
                    )

                    self.loc.data.copy_(-mean)
                    self.scale.data.copy_(1 / (std + 1e-6))

            def forward(self, input):
                _, _, height, width = input.shape

                if self.initialized.item() == 0:
                    self.initialize(input)
                    self.initialized.fill_(1)

                log_abs = logabs(self.scale)

                logdet = height * width * torch.sum(log_abs)

                if self.logdet:
                    return self.scale * (input + self.loc), logdet

                else:
                    return self.scale * (input + self.loc)

            def reverse(self, output):
                return output / self.scale - self.loc

        class InvConv2dLU(nn.Module):
            def __init__(self, in_channel):
                super().__init__()

                weight = np.random.randn(in_channel, in_channel)
                q, _ = la.qr(weight)
                w_p, w_l, w_u = la.lu(q.astype(np.float32))
                w_s = np.diag(w_u)
                w_u = np.triu(w_u, 1)
                u_mask = np.triu(np.ones_like(w_u), 1)
                l_mask = u_mask.T

                w_p = torch.from_numpy(w_p)
                w_l = torch.from_numpy(w_l)
                w_s = torch.from_numpy(w_s)
                w_u = torch.from_numpy(w_u)

                self.register_buffer('w_p', w_p)
                self.register_buffer('u_mask', torch.from_numpy(u_mask))
                self.register_buffer('l_mask', torch.from_numpy(l_mask))
                self.register_buffer('s_sign', torch.sign(w_s))
                self.register_buffer('l_eye', torch.eye(l_mask.shape[0]))
                self.w_l = nn.Parameter(w_l)
                self.w_s = nn.Parameter(logabs(w_s))
                self.w_u = nn.Parameter(w_u)

            def forward(self, input):
                _, _, height, width = input.shape

                weight = self.calc_weight()

                out = F.conv2d(input, weight)
                logdet = height * width * sum(self.w_s)

                return out, logdet

            def calc_weight(self):
                weight = (
                    self.w_p
                    @ (self.w_l * self.l_mask + self.l_eye)
                    @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
                )

                return weight.unsqueeze(2).unsqueeze(3)

            def reverse(self, output):
                weight = self.calc_weight()

                return F.conv2d(output, weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))

        class ZeroConv2d(nn.Module):
            def __init__(self, in_channel, out_channel, padding=1):
                super().__init__()

                self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
                self.conv.weight.data.zero_()
                self.conv.bias.data.zero_()
                self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

            def forward(self, input):
                out = F.pad(input, [1, 1, 1, 1], value=1)
                out = self.conv(out)
                out = out * torch.exp(self.scale * 3)

                return out

        class AffineCoupling(nn.Module):
            def __init__(self, in_channel, filter_size=8, affine=True):
                super().__init__()

                self.affine = affine

                self.net = nn.Sequential(
                    nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(filter_size, filter_size, 1),
                    nn.ReLU(inplace=True),
                    ZeroConv2d(filter_size, in_channel if self.affine else in_channel // 2),
                )

                self.net[0].weight.data.normal_(0, 0.05)
                self.net[0].bias.data.zero_()

                self.net[2].weight.data.normal_(0, 0.05)
                self.net[2].bias.data.zero_()

            def forward(self, input):
                in_a, in_b = input.chunk(2, 1)

                if self.affine:
                    log_s, t = self.net(in_a).chunk(2, 1)
                    s = F.sigmoid(log_s + 2)
                    out_b = (in_b + t) * s

                    logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)

                else:
                    net_out = self.net(in_a)
                    out_b = in_b + net_out
                    logdet = None

                return torch.cat([in_a, out_b], 1), logdet

            def reverse(self, output):
                out_a, out_b = output.chunk(2, 1)

                if self.affine:
                    log_s, t = self.net(out_a).chunk(2, 1)
                    s = F.sigmoid(log_s + 2)
                    in_b = out_b / s - t

                else:
                    net_out = self.net(out_a)
                    in_b = out_b - net_out

                return torch.cat([out_a, in_b], 1)

        class Flow(nn.Module):
            def __init__(self, in_channel, affine=True, conv_lu=True):
                super().__init__()

                self.actnorm = ActNorm(in_channel)
                self.invconv = InvConv2dLU(in_channel)
                self.coupling = AffineCoupling(in_channel, affine=affine)

            def forward(self, input):
                out, logdet = self.actnorm(input)
                out, det1 = self.invconv(out)
                out, det2 = self.coupling(out)

                logdet = logdet + det1
                if det2 is not None:
                    logdet = logdet + det2

                return out, logdet

            def reverse(self, output):
                input = self.coupling.reverse(output)
                input = self.invconv.reverse(input)
                input = self.actnorm.reverse(input)

                return input

        def gaussian_log_p(x, mean, log_sd):
            return -0.5 * mlog(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)

        class Block(nn.Module):
            def __init__(self, in_channel, n_flow, split=True, affine=True, conv_lu=True):
                super().__init__()

                squeeze_dim = in_channel * 4

                self.flows = nn.ModuleList()
                for i in range(n_flow):
                    self.flows.append(Flow(squeeze_dim, affine=affine, conv_lu=conv_lu))

                self.split = split

                if split:
                    self.prior = ZeroConv2d(in_channel * 2, in_channel * 4)

                else:
                    self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

            def forward(self, input):
                b_size, n_channel, height, width = input.shape
                squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
                squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
                out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)

                logdet = 0

                for flow in self.flows:
                    out, det = flow(out)
                    logdet = logdet + det

                if self.split:
                    out, z_new = out.chunk(2, 1)
                    mean, log_sd = self.prior(out).chunk(2, 1)
                    log_p = gaussian_log_p(z_new, mean, log_sd)
                    log_p = log_p.view(b_size, -1).sum(1)

                else:
                    zero = torch.zeros_like(out)
                    mean, log_sd = self.prior(zero).chunk(2, 1)
                    log_p = gaussian_log_p(out, mean, log_sd)
                    log_p = log_p.view(b_size, -1).sum(1)
                    z_new = out

                return out, logdet, log_p, z_new

            def reverse(self, output, eps=None, reconstruct=False):
                input = output

                if reconstruct:
                    if self.split:
                        input = torch.cat([output, eps], 1)

                    else:
                        input = eps

                for flow in self.flows[::-1]:
                    input = flow.reverse(input)

                b_size, n_channel, height, width = input.shape

                unsqueezed = input.view(b_size, n_channel // 4, 2, 2, height, width)
                unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
                unsqueezed = unsqueezed.contiguous().view(
                    b_size, n_channel // 4, height * 2, width * 2
                )

                return unsqueezed

        class Glow(nn.Module):
            def __init__(self, in_channel, n_flow, n_block, affine=True, conv_lu=True):
                super().__init__()

                self.blocks = nn.ModuleList()
                n_channel = in_channel
                for i in range(n_block - 1):
                    self.blocks.append(Block(n_channel, n_flow, affine=affine, conv_lu=conv_lu))
                    n_channel *= 2
                self.blocks.append(Block(n_channel, n_flow, split=False, affine=affine))

            def forward(self, input):
                log_p_sum = 0
                logdet = 0
                out = input
                z_outs = []

                for block in self.blocks:
                    out, det, log_p, z_new = block(out)
                    z_outs.append(z_new)
                    logdet = logdet + det

                    if log_p is not None:
                        log_p_sum = log_p_sum + log_p

                return log_p_sum, logdet, z_outs

            def reverse(self, z_list, reconstruct=False):
                for i, block in enumerate(self.blocks[::-1]):
                    if i == 0:
                        input = block.reverse(z_list[-1], z_list[-1], reconstruct=reconstruct)

                    else:
                        input = block.reverse(input, z_list[-(i + 1)], reconstruct=reconstruct)

                return input

        def calc_loss(log_p, logdet, image_size, n_bins):
            n_pixel = image_size * image_size * 3

            loss = -mlog(n_bins) * n_pixel
            loss = loss + logdet + log_p

            return (
                (-loss / (mlog(2) * n_pixel)).mean(),
                (log_p / (mlog(2) * n_pixel)).mean(),
                (logdet / (mlog(2) * n_pixel)).mean(),
            )

        with _seeded(0):
            model = Glow(1, 1, 2, affine=True, conv_lu=True)
            with torch.no_grad():   # the normal_(0, 0.05) inits, seeded
                for i, blk in enumerate(model.blocks):
                    for j, c in enumerate((blk.flows[0].coupling.net[0], blk.flows[0].coupling.net[2])):
                        c.weight.copy_(randn(torch, tuple(c.weight.shape), 40 + 2 * i + j, scale=0.05))
        optimizer = optim.Adam(model.parameters(), lr=1e-3)
        n_bits, image_size = 5, 4
        n_bins = 2.0 ** n_bits
        rs = np.random.RandomState(7)
        for i in range(3):
            image = torch.tensor(rs.rand(2, 1, image_size, image_size).astype(np.float32))
            image = image * 255
            if n_bits < 8:
                image = torch.floor(image / 2 ** (8 - n_bits))
            image = image / n_bins - 0.5
            noise = torch.tensor(rs.rand(2, 1, image_size, image_size).astype(np.float32))
            if i == 0:
                with torch.no_grad():
                    log_p, logdet, _ = model(image + noise / n_bins)
                    continue
            else:
                log_p, logdet, _ = model(image + noise / n_bins)
            logdet = logdet.mean()
            loss, log_p, log_det = calc_loss(log_p, logdet, image_size, n_bins)
            model.zero_grad()
            loss.backward()
            warmup_lr = 1e-3
            optimizer.param_groups[0]["lr"] = warmup_lr
            optimizer.step()
            print(f"Loss: {loss.item():.5f}; logP: {log_p.item():.5f}; logdet: {log_det.item():.5f}; lr: {warmup_lr:.7f}")
            log("loss", loss)
        log("initialized", model.blocks[0].flows[0].actnorm.initialized)
        log("scale", model.blocks[1].flows[0].actnorm.scale)
        log("w_s_grad", model.blocks[0].flows[0].invconv.w_s.grad)
        with torch.no_grad():
            _, _, z = model(image)
            log("recon", model.reverse(z, reconstruct=True))
            log("image", image)

    run_both(program)


# d-li14/mobilenetv3.pytorch mobilenetv3.py (_make_divisible, h_sigmoid's ReLU6(inplace=True)
# ``(x + 3) / 6``, h_swish, SELayer's AdaptiveAvgPool2d(1) and view-broadcast product,
# InvertedResidual's two layouts with an empty ``nn.Sequential()`` in place of SE, depthwise
# convs, _initialize_weights' ``normal_``/``fill_``/``zero_`` by isinstance) with a 2-block
# cfgs list in place of the 11/15-block ones (the constructor takes cfgs), width_mult 0.25,
# num_classes 3, a 2x3x8x8 batch, 2 SGD steps in train mode then eval; the normal_ inits
# are overwritten by ``init_params``
def test_mobilenetv3():
    def program(torch, log):
        import math
        nn = torch.nn

        def _make_divisible(v, divisor, min_value=None):
            if min_value is None:
                min_value = divisor
            new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
            if new_v < 0.9 * v:
                new_v += divisor
            return new_v

        class h_sigmoid(nn.Module):
            def __init__(self):
                super(h_sigmoid, self).__init__()
                self.relu = nn.ReLU6(inplace=True)

            def forward(self, x):
                return self.relu(x + 3) / 6

        class h_swish(nn.Module):
            def __init__(self):
                super(h_swish, self).__init__()
                self.sigmoid = h_sigmoid()

            def forward(self, x):
                return x * self.sigmoid(x)

        class SELayer(nn.Module):
            def __init__(self, channel, reduction=4):
                super(SELayer, self).__init__()
                self.avg_pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Sequential(
                        nn.Linear(channel, channel // reduction),
                        nn.ReLU(inplace=True),
                        nn.Linear(channel // reduction, channel),
                        h_sigmoid()
                )

            def forward(self, x):
                b, c, _, _ = x.size()
                y = self.avg_pool(x).view(b, c)
                y = self.fc(y).view(b, c, 1, 1)
                return x * y

        def conv_3x3_bn(inp, oup, stride):
            return nn.Sequential(
                nn.Conv2d(inp, oup, 3, stride, 1, bias=False),
                nn.BatchNorm2d(oup),
                h_swish()
            )

        def conv_1x1_bn(inp, oup):
            return nn.Sequential(
                nn.Conv2d(inp, oup, 1, 1, 0, bias=False),
                nn.BatchNorm2d(oup),
                h_swish()
            )

        class InvertedResidual(nn.Module):
            def __init__(self, inp, hidden_dim, oup, kernel_size, stride, use_se, use_hs):
                super(InvertedResidual, self).__init__()
                assert stride in [1, 2]

                self.identity = stride == 1 and inp == oup

                if inp == hidden_dim:
                    self.conv = nn.Sequential(
                        nn.Conv2d(hidden_dim, hidden_dim, kernel_size, stride, (kernel_size - 1) // 2, groups=hidden_dim, bias=False),
                        nn.BatchNorm2d(hidden_dim),
                        h_swish() if use_hs else nn.ReLU(inplace=True),
                        SELayer(hidden_dim) if use_se else nn.Sequential(),
                        nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                        nn.BatchNorm2d(oup),
                    )
                else:
                    self.conv = nn.Sequential(
                        nn.Conv2d(inp, hidden_dim, 1, 1, 0, bias=False),
                        nn.BatchNorm2d(hidden_dim),
                        h_swish() if use_hs else nn.ReLU(inplace=True),
                        nn.Conv2d(hidden_dim, hidden_dim, kernel_size, stride, (kernel_size - 1) // 2, groups=hidden_dim, bias=False),
                        nn.BatchNorm2d(hidden_dim),
                        h_swish() if use_hs else nn.ReLU(inplace=True),
                        SELayer(hidden_dim) if use_se else nn.Sequential(),
                        nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                        nn.BatchNorm2d(oup),
                    )

            def forward(self, x):
                if self.identity:
                    return x + self.conv(x)
                else:
                    return self.conv(x)

        class MobileNetV3(nn.Module):
            def __init__(self, cfgs, num_classes=1000, width_mult=1.):
                super(MobileNetV3, self).__init__()
                self.cfgs = cfgs

                input_channel = _make_divisible(16 * width_mult, 8)
                layers = [conv_3x3_bn(3, input_channel, 2)]
                block = InvertedResidual
                for k, exp_size, c, use_se, use_hs, s in self.cfgs:
                    output_channel = _make_divisible(c * width_mult, 8)
                    layers.append(block(input_channel, exp_size, output_channel, k, s, use_se, use_hs))
                    input_channel = output_channel
                self.features = nn.Sequential(*layers)
                self.conv = conv_1x1_bn(input_channel, _make_divisible(exp_size * width_mult, 8))
                self.avgpool = nn.Sequential(
                    nn.AdaptiveAvgPool2d((1, 1)),
                    h_swish()
                )
                output_channel = _make_divisible(1280 * width_mult, 8) if width_mult > 1.0 else 1280
                self.classifier = nn.Sequential(
                    nn.Linear(_make_divisible(exp_size * width_mult, 8), output_channel),
                    h_swish(),
                    nn.Linear(output_channel, num_classes)
                )

                self._initialize_weights()

            def forward(self, x):
                x = self.features(x)
                x = self.conv(x)
                x = self.avgpool(x)
                x = x.view(x.size(0), -1)
                x = self.classifier(x)
                return x

            def _initialize_weights(self):
                for m in self.modules():
                    if isinstance(m, nn.Conv2d):
                        n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                        m.weight.data.normal_(0, math.sqrt(2. / n))
                        if m.bias is not None:
                            m.bias.data.zero_()
                    elif isinstance(m, nn.BatchNorm2d):
                        m.weight.data.fill_(1)
                        m.bias.data.zero_()
                    elif isinstance(m, nn.Linear):
                        n = m.weight.size(1)
                        m.weight.data.normal_(0, 0.01)
                        m.bias.data.zero_()

        cfgs = [
            # k, t, c, SE, NL, s
            [3,  8,  8, 1, 0, 2],
            [3, 16,  8, 0, 1, 1],
        ]
        model = MobileNetV3(cfgs, num_classes=3, width_mult=0.25)
        log("bn_w", model.features[1].conv[1].weight)
        init_params(torch, model, 0, scale=0.4)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=4e-5)
        x = randn(torch, (2, 3, 8, 8), 1)
        target = torch.tensor([0, 2])
        for i in range(2):
            out = model(x)
            loss = nn.CrossEntropyLoss()(out, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
        model.eval()
        log("eval", model(x))
        log("rv", model.features[2].conv[4].running_var)
        log("se_grad", model.features[1].conv[3].fc[0].weight.grad)

    run_both(program)


# kazuto1011/grad-cam-pytorch grad_cam.py (_BaseWrapper's one-hot ``logits.backward(gradient=,
# retain_graph=True)`` and ``list(zip(*probs.sort(0, True)))``, BackPropagation's
# ``image.requires_grad_()`` and ``image.grad.zero_()``, GuidedBackPropagation's
# ``register_backward_hook`` returning clamped grad_in on ReLUs (registered on every module,
# containers too), GradCAM's forward/backward hooks keyed by ``id(module)``, _find over
# named_modules, the normalised weights by adaptive_avg_pool2d, ``gcam -= gcam.min()``) on a
# two-conv net with separate ReLU modules in place of a torchvision model, as main.py's demo1
# drives them (topk classes, guided grad-cam = guided * gcam); a 1x3x6x6 image
def test_grad_cam_pytorch():
    def program(torch, log):
        from collections import OrderedDict
        nn, F = torch.nn, torch.nn.functional

        class _BaseWrapper(object):
            def __init__(self, model):
                super(_BaseWrapper, self).__init__()
                self.device = next(model.parameters()).device
                self.model = model
                self.handlers = []

            def _encode_one_hot(self, idx):
                one_hot = torch.zeros((1, self.logits.size()[-1])).float()
                one_hot[0][idx] = 1.0
                return one_hot.to(self.device)

            def forward(self, image):
                self.model.zero_grad()
                self.logits = self.model(image)
                self.probs = F.softmax(self.logits, dim=1)[0]
                return list(zip(*self.probs.sort(0, True)))

            def backward(self, idx):
                one_hot = self._encode_one_hot(idx)
                self.logits.backward(gradient=one_hot, retain_graph=True)

            def generate(self):
                raise NotImplementedError

            def remove_hook(self):
                for handle in self.handlers:
                    handle.remove()

        class BackPropagation(_BaseWrapper):
            def forward(self, image):
                self.image = image.requires_grad_()
                return super().forward(self.image)

            def generate(self):
                gradient = self.image.grad.cpu().clone().numpy()
                self.image.grad.zero_()
                return gradient.transpose(0, 2, 3, 1)[0]

        class GuidedBackPropagation(BackPropagation):
            def __init__(self, model):
                super(GuidedBackPropagation, self).__init__(model)

                def backward_hook(module, grad_in, grad_out):
                    if isinstance(module, nn.ReLU):
                        return (torch.clamp(grad_in[0], min=0.0),)

                for module in self.model.named_modules():
                    self.handlers.append(module[1].register_backward_hook(backward_hook))

        class GradCAM(_BaseWrapper):
            def __init__(self, model, candidate_layers=[]):
                super(GradCAM, self).__init__(model)
                self.fmap_pool = OrderedDict()
                self.grad_pool = OrderedDict()
                self.candidate_layers = candidate_layers

                def forward_hook(module, input, output):
                    self.fmap_pool[id(module)] = output.detach()

                def backward_hook(module, grad_in, grad_out):
                    self.grad_pool[id(module)] = grad_out[0].detach()

                for module in self.model.named_modules():
                    if len(self.candidate_layers) == 0 or module[0] in self.candidate_layers:
                        self.handlers.append(module[1].register_forward_hook(forward_hook))
                        self.handlers.append(module[1].register_backward_hook(backward_hook))

            def _find(self, pool, target_layer):
                for key, value in pool.items():
                    for module in self.model.named_modules():
                        if id(module[1]) == key:
                            if module[0] == target_layer:
                                return value
                raise ValueError("Invalid layer name: {}".format(target_layer))

            def _normalize(self, grads):
                l2_norm = torch.sqrt(torch.mean(torch.pow(grads, 2))) + 1e-5
                return grads / l2_norm

            def _compute_grad_weights(self, grads):
                grads = self._normalize(grads)
                return F.adaptive_avg_pool2d(grads, 1)

            def generate(self, target_layer):
                fmaps = self._find(self.fmap_pool, target_layer)
                grads = self._find(self.grad_pool, target_layer)
                weights = self._compute_grad_weights(grads)

                gcam = (fmaps[0] * weights[0]).sum(dim=0)
                gcam = torch.clamp(gcam, min=0.0)

                gcam -= gcam.min()
                gcam /= gcam.max()

                return gcam.cpu().numpy()

        model = init_params(torch, nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(3, 4, 3, padding=1)), ("relu1", nn.ReLU()),
            ("conv2", nn.Conv2d(4, 4, 3, padding=1)), ("relu2", nn.ReLU()),
            ("pool", nn.AdaptiveAvgPool2d(1)), ("flat", nn.Flatten()), ("fc", nn.Linear(4, 3)),
        ])), 0, scale=0.6)
        model.eval()
        image = randn(torch, (1, 3, 6, 6), 1)
        topk = 2

        bp = BackPropagation(model=model)
        probs_ids = bp.forward(image)
        log("probs", [float(p) for p, _ in probs_ids])
        log("ids", [int(i) for _, i in probs_ids])

        gbp = GuidedBackPropagation(model=model)
        _ = gbp.forward(image)
        gcam = GradCAM(model=model, candidate_layers=["relu2"])
        _ = gcam.forward(image)
        for i in range(topk):
            idx = int(probs_ids[i][1])
            gbp.backward(idx=idx)
            gradients = gbp.generate()
            gcam.backward(idx=idx)
            regions = gcam.generate(target_layer="relu2")
            log(f"guided{i}", gradients)
            log(f"gcam{i}", regions)
            log(f"guided_gradcam{i}", regions[..., None] * gradients)
        gbp.remove_hook()
        gcam.remove_hook()
        bp.backward(idx=0)
        log("vanilla", bp.generate())

    run_both(program)


# labmlai/annotated_deep_learning_paper_implementations labml_nn/transformers/fnet/__init__.py
# (FNetMix: ``torch.fft.fft`` along the hidden then the sequence dim of a [seq, batch, d_model]
# input and ``torch.real``, behind the ``query is key is value`` / ``mask is None`` asserts)
# inside a post-norm residual layer with a feed-forward, as the experiment's transformer layer
# uses it; seq 5, batch 2, d_model 6, 2 Adam steps of a regression loss
def test_labml_fnet_mix():
    def program(torch, log):
        from typing import Optional
        nn = torch.nn

        class FNetMix(nn.Module):
            def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: Optional[torch.Tensor] = None):
                assert query is key and key is value
                assert mask is None

                x = query

                fft_hidden = torch.fft.fft(x, dim=2)
                fft_seq = torch.fft.fft(fft_hidden, dim=0)

                return torch.real(fft_seq)

        class Layer(nn.Module):
            def __init__(self, d_model):
                super().__init__()
                self.mix = FNetMix()
                self.norm1 = nn.LayerNorm([d_model])
                self.ff = nn.Sequential(nn.Linear(d_model, 12), nn.ReLU(), nn.Linear(12, d_model))
                self.norm2 = nn.LayerNorm([d_model])

            def forward(self, x):
                x = self.norm1(x + self.mix(query=x, key=x, value=x, mask=None))
                return self.norm2(x + self.ff(x))

        layer = init_params(torch, Layer(6), 0, scale=0.5)
        opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
        x = randn(torch, (5, 2, 6), 1, requires_grad=True)
        y = randn(torch, (5, 2, 6), 2)
        for i in range(2):
            out = layer(x)
            loss = ((out - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
        log("x_grad", x.grad)
        log("mix", FNetMix()(x, x, x))
        log("w", layer.ff[0].weight)

    run_both(program)


# EvelynFan/FaceFormer faceformer.py (init_biased_mask: ALiBi slopes from get_slopes' recursion
# for a non-power-of-2 head count, ``torch.Tensor(list)``, arange with a step, repeat/view,
# ``torch.flip``, a row-by-row ``alibi[i, :i+1] = bias[-(i+1):]``, a causal float mask by two
# masked_fills of -inf/0; enc_dec_mask's bool mask; PeriodicPositionalEncoding's repeated table;
# Faceformer's teacher-forced forward through a batch_first nn.TransformerDecoder with a
# per-head 3-D float tgt_mask and a bool memory_mask, and predict's autoregressive loop) with
# the pretrained wav2vec2 encoder replaced by given hidden states (768 -> 8 features),
# feature_dim 64 -> 6, nhead 4 -> 3 (non-power-of-2 slopes) via the mask's n_head, vertice_dim
# 6, period 2, max_seq_len 600 -> 4, 2 frames, dataset "vocaset", 2 Adam steps in eval mode (the decoder's
# dropout draws random streams), predict's timing print left out
def test_faceformer_alibi_decoder():
    def program(torch, log):
        import math
        from types import SimpleNamespace
        nn = torch.nn

        def init_biased_mask(n_head, max_seq_len, period):
            def get_slopes(n):
                def get_slopes_power_of_2(n):
                    start = (2**(-2**-(math.log2(n)-3)))
                    ratio = start
                    return [start*ratio**i for i in range(n)]
                if math.log2(n).is_integer():
                    return get_slopes_power_of_2(n)
                else:
                    closest_power_of_2 = 2**math.floor(math.log2(n))
                    return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2*closest_power_of_2)[0::2][:n-closest_power_of_2]
            slopes = torch.Tensor(get_slopes(n_head))
            bias = torch.arange(start=0, end=max_seq_len, step=period).unsqueeze(1).repeat(1,period).view(-1)//(period)
            bias = - torch.flip(bias,dims=[0])
            alibi = torch.zeros(max_seq_len, max_seq_len)
            for i in range(max_seq_len):
                alibi[i, :i+1] = bias[-(i+1):]
            alibi = slopes.unsqueeze(1).unsqueeze(1) * alibi.unsqueeze(0)
            mask = (torch.triu(torch.ones(max_seq_len, max_seq_len)) == 1).transpose(0, 1)
            mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
            mask = mask.unsqueeze(0) + alibi
            return mask

        def enc_dec_mask(device, dataset, T, S):
            mask = torch.ones(T, S)
            if dataset == "BIWI":
                for i in range(T):
                    mask[i, i*2:i*2+2] = 0
            elif dataset == "vocaset":
                for i in range(T):
                    mask[i, i] = 0
            return (mask==1).to(device=device)

        class PeriodicPositionalEncoding(nn.Module):
            def __init__(self, d_model, dropout=0.1, period=25, max_seq_len=600):
                super(PeriodicPositionalEncoding, self).__init__()
                self.dropout = nn.Dropout(p=dropout)
                pe = torch.zeros(period, d_model)
                position = torch.arange(0, period, dtype=torch.float).unsqueeze(1)
                div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
                pe[:, 0::2] = torch.sin(position * div_term)
                pe[:, 1::2] = torch.cos(position * div_term)
                pe = pe.unsqueeze(0)
                repeat_num = (max_seq_len//period) + 1
                pe = pe.repeat(1, repeat_num, 1)
                self.register_buffer('pe', pe)

            def forward(self, x):
                x = x + self.pe[:, :x.size(1), :]
                return self.dropout(x)

        class Faceformer(nn.Module):
            def __init__(self, args):
                super(Faceformer, self).__init__()
                self.dataset = args.dataset
                self.audio_feature_map = nn.Linear(8, args.feature_dim)
                self.vertice_map = nn.Linear(args.vertice_dim, args.feature_dim)
                self.PPE = PeriodicPositionalEncoding(args.feature_dim, period = args.period)
                self.biased_mask = init_biased_mask(n_head = 3, max_seq_len = 4, period=args.period)
                decoder_layer = nn.TransformerDecoderLayer(d_model=args.feature_dim, nhead=3, dim_feedforward=2*args.feature_dim, batch_first=True)
                self.transformer_decoder = nn.TransformerDecoder(decoder_layer, num_layers=1)
                self.vertice_map_r = nn.Linear(args.feature_dim, args.vertice_dim)
                self.obj_vector = nn.Linear(len(args.train_subjects.split()), args.feature_dim, bias=False)
                self.device = args.device
                nn.init.constant_(self.vertice_map_r.weight, 0)
                nn.init.constant_(self.vertice_map_r.bias, 0)

            def forward(self, hidden_states, template, vertice, one_hot, criterion, teacher_forcing=True):
                template = template.unsqueeze(1)
                obj_embedding = self.obj_vector(one_hot)
                hidden_states = self.audio_feature_map(hidden_states)
                vertice_emb = obj_embedding.unsqueeze(1)
                style_emb = vertice_emb
                vertice_input = torch.cat((template,vertice[:,:-1]), 1)
                vertice_input = vertice_input - template
                vertice_input = self.vertice_map(vertice_input)
                vertice_input = vertice_input + style_emb
                vertice_input = self.PPE(vertice_input)
                tgt_mask = self.biased_mask[:, :vertice_input.shape[1], :vertice_input.shape[1]].clone().detach().to(device=self.device)
                memory_mask = enc_dec_mask(self.device, self.dataset, vertice_input.shape[1], hidden_states.shape[1])
                vertice_out = self.transformer_decoder(vertice_input, hidden_states, tgt_mask=tgt_mask, memory_mask=memory_mask)
                vertice_out = self.vertice_map_r(vertice_out)
                vertice_out = vertice_out + template
                loss = criterion(vertice_out, vertice)
                loss = torch.mean(loss)
                return loss

            def predict(self, hidden_states, template, one_hot):
                template = template.unsqueeze(1)
                obj_embedding = self.obj_vector(one_hot)
                frame_num = hidden_states.shape[1]
                hidden_states = self.audio_feature_map(hidden_states)
                for i in range(frame_num):
                    if i==0:
                        vertice_emb = obj_embedding.unsqueeze(1)
                        style_emb = vertice_emb
                        vertice_input = self.PPE(style_emb)
                    else:
                        vertice_input = self.PPE(vertice_emb)
                    tgt_mask = self.biased_mask[:, :vertice_input.shape[1], :vertice_input.shape[1]].clone().detach().to(device=self.device)
                    memory_mask = enc_dec_mask(self.device, self.dataset, vertice_input.shape[1], hidden_states.shape[1])
                    vertice_out = self.transformer_decoder(vertice_input, hidden_states, tgt_mask=tgt_mask, memory_mask=memory_mask)
                    vertice_out = self.vertice_map_r(vertice_out)
                    new_output = self.vertice_map(vertice_out[:,-1,:]).unsqueeze(1)
                    new_output = new_output + style_emb
                    vertice_emb = torch.cat((vertice_emb, new_output), 1)
                vertice_out = vertice_out + template
                return vertice_out

        args = SimpleNamespace(dataset="vocaset", feature_dim=6, vertice_dim=6, period=2,
                               train_subjects="A B", device="cpu")
        model = Faceformer(args)
        log("biased_mask", model.biased_mask)
        init_params(torch, model, 0, scale=0.4)
        model.eval()
        criterion = nn.MSELoss(reduction="none")
        optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)
        hidden = randn(torch, (1, 2, 8), 1)
        template = randn(torch, (1, 6), 2)
        vertice = randn(torch, (1, 2, 6), 3)
        one_hot = torch.tensor([[1.0, 0.0]])
        for i in range(2):
            loss = model(hidden, template, vertice, one_hot, criterion, teacher_forcing=True)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            log("loss", loss)
        with torch.no_grad():
            log("predict", model.predict(hidden, template, one_hot))

    run_both(program)


# greydanus/hamiltonian-nn hnn.py, nn_models.py and utils.py (HNN: ``y.split(1, 1)``,
# time_derivative's ``torch.autograd.grad(F.sum(), x, create_graph=True)`` for the conservative
# and solenoidal fields against ``torch.eye(*M.shape)`` and ``M.t()``, permutation_tensor both
# ways: ``torch.cat([M[n//2:], -M[:n//2]])`` and the Levi-Civita one by ``M *= 1 - eye``,
# strided in-place ``M[::2] *= -1`` / ``M[:, ::2] *= -1`` and element ``*=``; MLP with
# ``torch.nn.init.orthogonal_`` overwritten by ``init_params``; utils.rk4 and L2_loss) trained
# as experiment-spring/train.py does (Adam with weight_decay, a requires_grad input, backward /
# step / zero_grad); hidden 200 -> 8, 4 points of a 2-D (field_type 'both') and a 4-D system, 2
# steps each, the rk4 derivative in the second
def test_hamiltonian_nn():
    def program(torch, log):
        class MLP(torch.nn.Module):
            def __init__(self, input_dim, hidden_dim, output_dim):
                super(MLP, self).__init__()
                self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
                self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
                self.linear3 = torch.nn.Linear(hidden_dim, output_dim)

                for l in [self.linear1, self.linear2, self.linear3]:
                    torch.nn.init.orthogonal_(l.weight)

            def forward(self, x, separate_fields=False):
                h = self.linear1(x).tanh()
                h = self.linear2(h).tanh()
                return self.linear3(h)

        def rk4(fun, y0, t, dt, *args, **kwargs):
            dt2 = dt / 2.0
            k1 = fun(y0, t, *args, **kwargs)
            k2 = fun(y0 + dt2 * k1, t + dt2, *args, **kwargs)
            k3 = fun(y0 + dt2 * k2, t + dt2, *args, **kwargs)
            k4 = fun(y0 + dt * k3, t + dt, *args, **kwargs)
            dy = dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            return dy

        def L2_loss(u, v):
            return (u-v).pow(2).mean()

        class HNN(torch.nn.Module):
            def __init__(self, input_dim, differentiable_model, field_type='solenoidal',
                         baseline=False, assume_canonical_coords=True):
                super(HNN, self).__init__()
                self.baseline = baseline
                self.differentiable_model = differentiable_model
                self.assume_canonical_coords = assume_canonical_coords
                self.M = self.permutation_tensor(input_dim)
                self.field_type = field_type

            def forward(self, x):
                if self.baseline:
                    return self.differentiable_model(x)

                y = self.differentiable_model(x)
                assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
                return y.split(1,1)

            def rk4_time_derivative(self, x, dt):
                return rk4(fun=self.time_derivative, y0=x, t=0, dt=dt)

            def time_derivative(self, x, t=None, separate_fields=False):
                if self.baseline:
                    return self.differentiable_model(x)

                F1, F2 = self.forward(x)

                conservative_field = torch.zeros_like(x)
                solenoidal_field = torch.zeros_like(x)

                if self.field_type != 'solenoidal':
                    dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[0]
                    conservative_field = dF1 @ torch.eye(*self.M.shape)

                if self.field_type != 'conservative':
                    dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[0]
                    solenoidal_field = dF2 @ self.M.t()

                if separate_fields:
                    return [conservative_field, solenoidal_field]

                return conservative_field + solenoidal_field

            def permutation_tensor(self,n):
                M = None
                if self.assume_canonical_coords:
                    M = torch.eye(n)
                    M = torch.cat([M[n//2:], -M[:n//2]])
                else:
                    M = torch.ones(n,n)
                    M *= 1 - torch.eye(n)
                    M[::2] *= -1
                    M[:,::2] *= -1

                    for i in range(n):
                        for j in range(i+1, n):
                            M[i,j] *= -1
                return M

        for run, (dim, field_type, canonical) in enumerate([(2, 'both', True), (4, 'solenoidal', False)]):
            model = HNN(dim, differentiable_model=init_params(torch, MLP(dim, 8, 2), run),
                        field_type=field_type, assume_canonical_coords=canonical)
            log("M", model.M)
            optim = torch.optim.Adam(model.parameters(), 1e-2, weight_decay=1e-4)
            x = torch.tensor(np.random.RandomState(run).randn(4, dim), requires_grad=True, dtype=torch.float32)
            dxdt = torch.Tensor(np.random.RandomState(10 + run).randn(4, dim))
            for step in range(2):
                dxdt_hat = model.rk4_time_derivative(x, 0.1) if run else model.time_derivative(x)
                loss = L2_loss(dxdt, dxdt_hat)
                loss.backward() ; optim.step() ; optim.zero_grad()
                log("loss", loss)
            log("fields", model.time_derivative(x, separate_fields=True))
            log("w", model.differentiable_model.linear1.weight)

    run_both(program)


# ikostrikov/pytorch-trpo trpo.py, utils.py and main.py's Policy/update_params (conjugate
# gradients with in-place ``x += alpha * p`` and a 0-d ``rdotr < residual_tol`` test; the
# Fisher-vector product by ``torch.autograd.grad(kl, params, create_graph=True)`` twice;
# get/set_flat_params through ``param.data.view(-1)`` and ``param.data.copy_``; the line search
# over ``.5**np.arange(...)``; ``Variable`` wrappers and a ``with torch.no_grad()`` loss). Run
# as written, trpo_step fails in torch 2 at ``lm[0]`` (indexing a 0-dim tensor): the exception
# class and message are logged. The step is then finished as users patch it (``lm``, the
# expected improvement and the line-search values viewed as 1-element tensors); widths 64 -> 6, 5 states of dim 3, 2 actions
def test_pytorch_trpo():
    def program(torch, log):
        import math
        nn = torch.nn
        Variable = torch.autograd.Variable   # the file's ``from torch.autograd import Variable``

        def normal_log_density(x, mean, log_std, std):
            var = std.pow(2)
            log_density = -(x - mean).pow(2) / (
                2 * var) - 0.5 * math.log(2 * math.pi) - log_std
            return log_density.sum(1)

        def get_flat_params_from(model):
            params = []
            for param in model.parameters():
                params.append(param.data.view(-1))

            flat_params = torch.cat(params)
            return flat_params

        def set_flat_params_to(model, flat_params):
            prev_ind = 0
            for param in model.parameters():
                flat_size = int(np.prod(list(param.size())))
                param.data.copy_(
                    flat_params[prev_ind:prev_ind + flat_size].view(param.size()))
                prev_ind += flat_size

        def conjugate_gradients(Avp, b, nsteps, residual_tol=1e-10):
            x = torch.zeros(b.size())
            r = b.clone()
            p = b.clone()
            rdotr = torch.dot(r, r)
            for i in range(nsteps):
                _Avp = Avp(p)
                alpha = rdotr / torch.dot(p, _Avp)
                x += alpha * p
                r -= alpha * _Avp
                new_rdotr = torch.dot(r, r)
                betta = new_rdotr / rdotr
                p = r + betta * p
                rdotr = new_rdotr
                if rdotr < residual_tol:
                    break
            return x

        def linesearch(model,
                       f,
                       x,
                       fullstep,
                       expected_improve_rate,
                       max_backtracks=10,
                       accept_ratio=.1):
            fval = f(True).data
            print("fval before", fval[0])
            for (_n_backtracks, stepfrac) in enumerate(.5**np.arange(max_backtracks)):
                xnew = x + stepfrac * fullstep
                set_flat_params_to(model, xnew)
                newfval = f(True).data
                actual_improve = fval - newfval
                expected_improve = expected_improve_rate * stepfrac
                ratio = actual_improve / expected_improve
                print("a/e/r", actual_improve[0], expected_improve[0], ratio[0])

                if ratio[0] > accept_ratio and actual_improve[0] > 0:
                    print("fval after", newfval[0])
                    return True, xnew
            return False, x

        def trpo_step(model, get_loss, get_kl, max_kl, damping, patched=False):
            loss = get_loss()
            grads = torch.autograd.grad(loss, model.parameters(), create_graph=True)
            loss_grad = torch.cat([grad.view(-1) for grad in grads]).data

            def Fvp(v):
                kl = get_kl()
                kl = kl.mean()

                grads = torch.autograd.grad(kl, model.parameters(), create_graph=True)
                flat_grad_kl = torch.cat([grad.view(-1) for grad in grads])

                kl_v = (flat_grad_kl * Variable(v)).sum()
                grads = torch.autograd.grad(kl_v, model.parameters())
                flat_grad_grad_kl = torch.cat([grad.view(-1) for grad in grads]).data

                return flat_grad_grad_kl + v * damping

            stepdir = conjugate_gradients(Fvp, -loss_grad, 10)

            shs = 0.5 * (stepdir * Fvp(stepdir)).sum(0)

            lm = torch.sqrt(shs / max_kl)
            if patched:
                lm = lm.view(1)
            fullstep = stepdir / lm[0]

            neggdotstepdir = (-loss_grad * stepdir).sum(0)
            if patched:
                neggdotstepdir = neggdotstepdir.view(1)
            print(("lagrange multiplier:", lm[0], "grad_norm:", loss_grad.norm()))

            prev_params = get_flat_params_from(model)
            success, new_params = linesearch(model, get_loss, prev_params, fullstep,
                                             neggdotstepdir / lm[0])
            set_flat_params_to(model, new_params)

            return loss

        class Policy(nn.Module):
            def __init__(self, num_inputs, num_outputs):
                super(Policy, self).__init__()
                self.affine1 = nn.Linear(num_inputs, 6)
                self.affine2 = nn.Linear(6, 6)

                self.action_mean = nn.Linear(6, num_outputs)
                self.action_mean.weight.data.mul_(0.1)
                self.action_mean.bias.data.mul_(0.0)

                self.action_log_std = nn.Parameter(torch.zeros(1, num_outputs))

            def forward(self, x):
                x = torch.tanh(self.affine1(x))
                x = torch.tanh(self.affine2(x))

                action_mean = self.action_mean(x)
                action_log_std = self.action_log_std.expand_as(action_mean)
                action_std = torch.exp(action_log_std)

                return action_mean, action_log_std, action_std

        policy_net = init_params(torch, Policy(3, 2), 0, scale=0.5)
        states = randn(torch, (5, 3), 1)
        actions = randn(torch, (5, 2), 2)
        advantages = randn(torch, (5,), 3)

        action_means, action_log_stds, action_stds = policy_net(Variable(states))
        fixed_log_prob = normal_log_density(Variable(actions), action_means, action_log_stds, action_stds).data.clone()

        for patched in (False, True):
            def get_loss(volatile=False):
                if volatile:
                    with torch.no_grad():
                        action_means, action_log_stds, action_stds = policy_net(Variable(states))
                else:
                    action_means, action_log_stds, action_stds = policy_net(Variable(states))

                log_prob = normal_log_density(Variable(actions), action_means, action_log_stds, action_stds)
                action_loss = -Variable(advantages) * torch.exp(log_prob - Variable(fixed_log_prob))
                return action_loss.mean().view(1) if patched else action_loss.mean()

            def get_kl():
                mean1, log_std1, std1 = policy_net(Variable(states))

                mean0 = Variable(mean1.data)
                log_std0 = Variable(log_std1.data)
                std0 = Variable(std1.data)
                kl = log_std1 - log_std0 + (std0.pow(2) + (mean0 - mean1).pow(2)) / (2.0 * std1.pow(2)) - 0.5
                return kl.sum(1, keepdim=True)

            try:
                loss = trpo_step(policy_net, get_loss if patched else (lambda *a: get_loss(*a)), get_kl,
                                 1e-2, 1e-1, patched=patched)
                log("loss", loss)
            except IndexError as e:
                log("error", (type(e).__name__, str(e)))
            log("params", get_flat_params_from(policy_net))

    # the conjugate-gradient solve on five samples amplifies float32 rounding: torch's own
    # Lagrange multiplier differs by CPU in its fourth printed digit
    run_both(program, rtol=1e-4)


# YongfeiYan/Gumbel_Softmax_VAE gumbel_softmax_vae.py (the straight-through gumbel_softmax:
# ``y.max(dim=-1)``, a ``zeros_like(y).view(-1, K)`` one-hot by ``scatter_``, ``(y_hard -
# y).detach() + y``; VAE_gumbel's encode/decode; loss_function's ``F.binary_cross_entropy(...,
# size_average=False)`` and the categorical KL; train()'s loop over a DataLoader with the
# temperature annealed by ``np.maximum(temp * np.exp(...), temp_min)`` (a numpy float64
# divisor) and its prints; run()'s decode of ``torch.from_numpy`` one-hots drawn by
# ``np.random.choice``); 784/512/256 -> 12/8/6, latent_dim 30 -> 3, categorical_dim 10 -> 4,
# a 6-image TensorDataset of seeded [0, 1) pixels in batches of 2 in place of MNIST, one epoch,
# ``batch_idx % 100 == 1`` -> ``% 2 == 1`` so the annealing runs; sample_gumbel's
# ``torch.rand`` is a seeded numpy draw; test() (save_image) left out
def test_gumbel_softmax_vae():
    def program(torch, log):
        nn, optim, F = torch.nn, torch.optim, torch.nn.functional
        rs = np.random.RandomState(5)

        def sample_gumbel(shape, eps=1e-20):
            U = torch.tensor(rs.rand(*shape).astype(np.float32))
            return -torch.log(-torch.log(U + eps) + eps)

        def gumbel_softmax_sample(logits, temperature):
            y = logits + sample_gumbel(logits.size())
            return F.softmax(y / temperature, dim=-1)

        def gumbel_softmax(logits, temperature):
            y = gumbel_softmax_sample(logits, temperature)
            shape = y.size()
            _, ind = y.max(dim=-1)
            y_hard = torch.zeros_like(y).view(-1, shape[-1])
            y_hard.scatter_(1, ind.view(-1, 1), 1)
            y_hard = y_hard.view(*shape)
            y_hard = (y_hard - y).detach() + y
            return y_hard.view(-1, latent_dim * categorical_dim)

        class VAE_gumbel(nn.Module):
            def __init__(self, temp):
                super(VAE_gumbel, self).__init__()

                self.fc1 = nn.Linear(12, 8)
                self.fc2 = nn.Linear(8, 6)
                self.fc3 = nn.Linear(6, latent_dim * categorical_dim)

                self.fc4 = nn.Linear(latent_dim * categorical_dim, 6)
                self.fc5 = nn.Linear(6, 8)
                self.fc6 = nn.Linear(8, 12)

                self.relu = nn.ReLU()
                self.sigmoid = nn.Sigmoid()

            def encode(self, x):
                h1 = self.relu(self.fc1(x))
                h2 = self.relu(self.fc2(h1))
                return self.relu(self.fc3(h2))

            def decode(self, z):
                h4 = self.relu(self.fc4(z))
                h5 = self.relu(self.fc5(h4))
                return self.sigmoid(self.fc6(h5))

            def forward(self, x, temp):
                q = self.encode(x.view(-1, 12))
                q_y = q.view(q.size(0), latent_dim, categorical_dim)
                z = gumbel_softmax(q_y, temp)
                return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())

        latent_dim = 3
        categorical_dim = 4

        temp_min = 0.5
        ANNEAL_RATE = 0.03

        model = init_params(torch, VAE_gumbel(1.0), 0, scale=0.5)
        optimizer = optim.Adam(model.parameters(), lr=1e-3)

        def loss_function(recon_x, x, qy):
            BCE = F.binary_cross_entropy(recon_x, x.view(-1, 12), size_average=False) / x.shape[0]

            log_ratio = torch.log(qy * categorical_dim + 1e-20)
            KLD = torch.sum(qy * log_ratio, dim=-1).mean()

            return BCE + KLD

        images = torch.tensor(np.random.RandomState(1).rand(6, 1, 3, 4).astype(np.float32))
        train_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(images, torch.zeros(6)), batch_size=2, shuffle=False)

        def train(epoch):
            model.train()
            train_loss = 0
            temp = 1.0
            for batch_idx, (data, _) in enumerate(train_loader):
                optimizer.zero_grad()
                recon_batch, qy = model(data, temp)
                loss = loss_function(recon_batch, data, qy)
                loss.backward()
                train_loss += loss.item() * len(data)
                optimizer.step()
                if batch_idx % 2 == 1:
                    temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), temp_min)
                log("temp", float(temp))
                log("loss", loss)

                print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.4f}'.format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                           100. * batch_idx / len(train_loader),
                           loss.item()))

            print('====> Epoch: {} Average loss: {:.3f}'.format(
                epoch, train_loss / len(train_loader.dataset)))

        with _seeded(0):
            train(1)
            M = 2 * latent_dim
            np_y = np.zeros((M, categorical_dim), dtype=np.float32)
            np_y[range(M), np.random.choice(categorical_dim, M)] = 1
            np_y = np.reshape(np_y, [M // latent_dim, latent_dim, categorical_dim])
            sample = torch.from_numpy(np_y).view(M // latent_dim, latent_dim * categorical_dim)
            sample = model.decode(sample).cpu()
            log("sample", sample.data.view(M // latent_dim, 1, 3, 4))

    run_both(program)


# OpenNMT/OpenNMT-py onmt/utils/loss.py (LabelSmoothingLoss: a ``torch.full`` smoothing row
# with ``one_hot[self.ignore_index] = 0`` registered as a (1, V) buffer, forward's
# ``repeat(target.size(0), 1)``, ``scatter_`` of the confidence, ``masked_fill_`` of padded
# rows by an unsqueezed bool mask and ``F.kl_div(reduction='sum')``; NMTLossCompute's
# ``_bottle``/``target.view(-1)`` through a generator of Linear + LogSoftmax(dim=-1), and
# LossComputeBase._stats' ``max(1)[1]``, ``ne``/``eq``/``masked_select(...).sum().item()``);
# vocab 6 with padding index 1, (3, 2, 4) decoder outputs, 2 Adam steps; the default
# ignore_index=-100 with a vocab smaller than 100 raises (the IndexError is compared)
def test_opennmt_label_smoothing_loss():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class LabelSmoothingLoss(nn.Module):
            def __init__(self, label_smoothing, tgt_vocab_size, ignore_index=-100):
                assert 0.0 < label_smoothing <= 1.0
                self.ignore_index = ignore_index
                super(LabelSmoothingLoss, self).__init__()

                smoothing_value = label_smoothing / (tgt_vocab_size - 2)
                one_hot = torch.full((tgt_vocab_size,), smoothing_value)
                one_hot[self.ignore_index] = 0
                self.register_buffer('one_hot', one_hot.unsqueeze(0))

                self.confidence = 1.0 - label_smoothing

            def forward(self, output, target):
                model_prob = self.one_hot.repeat(target.size(0), 1)
                model_prob.scatter_(1, target.unsqueeze(1), self.confidence)
                model_prob.masked_fill_((target == self.ignore_index).unsqueeze(1), 0)

                return F.kl_div(output, model_prob, reduction='sum')

        def _bottle(_v):
            return _v.view(-1, _v.size(2))

        def _stats(loss, scores, target, padding_idx):
            pred = scores.max(1)[1]
            non_padding = target.ne(padding_idx)
            num_correct = pred.eq(target).masked_select(non_padding).sum().item()
            num_non_padding = non_padding.sum().item()
            return loss.item(), num_non_padding, num_correct

        try:
            LabelSmoothingLoss(0.1, 6)
        except IndexError as e:
            log("default_ignore", (type(e).__name__, str(e)))

        padding_idx = 1
        criterion = LabelSmoothingLoss(0.1, 6, ignore_index=padding_idx)
        log("one_hot", criterion.one_hot)
        generator = init_params(torch, nn.Sequential(nn.Linear(4, 6), nn.LogSoftmax(dim=-1)), 0, scale=0.6)
        decoder = init_params(torch, nn.Linear(4, 4), 1, scale=0.6)
        opt = torch.optim.Adam(list(generator.parameters()) + list(decoder.parameters()), lr=1e-2)
        dec_in = randn(torch, (3, 2, 4), 2)
        target = torch.tensor([[2, 3], [1, 5], [4, 1]])
        for i in range(2):
            output = decoder(dec_in)
            scores = generator(_bottle(output))
            gtruth = target.view(-1)
            loss = criterion(scores, gtruth)
            stats = _stats(loss.clone(), scores, gtruth, padding_idx)
            opt.zero_grad()
            loss.div(float(gtruth.ne(padding_idx).sum())).backward()
            opt.step()
            log("loss", loss)
            log("stats", stats[1:])
            print("loss %.4f n_words %d n_correct %d" % stats)
        log("w", generator[0].weight)

    run_both(program)

