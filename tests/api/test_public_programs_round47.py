"""A forty-seventh round of public PyTorch programs run with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used, then their training steps under ``tracegrad.compile`` against tracegrad eager
and torch:

- rosinality/vq-vae-2-pytorch, ``vqvae.py`` at 29e36e7 (MIT; the ``Quantize`` class is a port of
  DeepMind Sonnet's, Apache-2.0, as its header says) and the loop of ``train_vqvae.py``'s
  ``train``: ``Quantize`` (codebook buffers from ``torch.randn``/``register_buffer``/``clone``,
  squared distances by ``pow(2).sum`` and ``@``, ``(-dist).max(1)``, ``F.one_hot(...).type``,
  ``F.embedding`` of a transposed buffer, the exponential-moving-average codebook update through
  ``.data.mul_(...).add_(..., alpha=)`` and ``.data.copy_``, the straight-through
  ``input + (quantize - input).detach()``), ``ResBlock`` (``out += input`` after an in-place
  ``ReLU``), the stride-4/stride-2 ``Encoder``/``Decoder`` with ``ConvTranspose2d``, ``VQVAE``'s
  two-level ``encode``/``decode`` (``permute``, ``torch.cat``, ``unsqueeze``) and
  ``decode_code``; trained with ``Adam`` on ``MSELoss`` + 0.25 * latent loss.
  ``distributed.all_reduce`` is the repository's single-process path (a no-op) here.

- rosinality/glow-pytorch, ``model.py`` at 1e782e6 and ``utils.py``'s ``calc_z_shapes``/
  ``calc_loss`` (MIT; Glow, Kingma & Dhariwal 2018), with ``train.py``'s inner loop: ``ActNorm``
  (data-dependent initialisation on the first batch behind a ``uint8`` buffer read by ``.item()``
  and set by ``fill_``, ``std(1)``, ``.data.copy_`` of parameters), ``InvConv2dLU`` (``scipy``'s
  QR/LU of a ``np.random`` matrix as ``torch.from_numpy`` buffers and parameters, the weight
  rebuilt as ``w_p @ (w_l * l_mask + l_eye) @ (w_u * u_mask + torch.diag(...))``, the log
  determinant by Python's ``sum`` over a parameter, ``inverse`` in ``reverse``), ``ZeroConv2d``
  (``F.pad(..., value=1)``), ``AffineCoupling`` (``chunk``, ``F.sigmoid``), ``Block``'s squeeze
  by ``view``/``permute``/``contiguous`` and split prior, ``Glow``'s forward and ``reverse``
  (``ModuleList[::-1]``), trained with ``Adam`` on the bits-per-dimension loss, then sampled.

- tkipf/pygcn (MIT; Kipf & Welling 2017 GCN), ``pygcn/utils.py`` at c91f69c (``load_data``
  reading a stand-in ``cora.content``/``cora.cites`` by ``np.genfromtxt``, scipy-sparse
  symmetrisation and row normalisation, ``torch.FloatTensor``/``LongTensor`` of arrays and
  ranges, ``torch.sparse.FloatTensor(indices, values, torch.Size)``: torch's deprecation
  warning; ``accuracy`` by ``max(1)[1].type_as``, ``eq``, ``double``), ``pygcn/layers.py`` at
  bf1410e (``GraphConvolution``: ``Parameter(torch.FloatTensor(n, m))`` filled by
  ``.data.uniform_``, ``torch.spmm`` of the sparse adjacency, ``__repr__``) and at 687f2d4 (the
  legacy ``SparseMM()(adj, support)`` autograd function with a non-static ``forward``: torch's
  ``RuntimeError``, logged), ``pygcn/models.py`` and ``pygcn/train.py``'s ``train``/``test``
  (``nll_loss`` of ``log_softmax`` rows picked by index tensors, Adam with weight decay).

- golbin/WaveNet, ``wavenet/networks.py`` at 091360e and ``wavenet/model.py`` at 44f6698 (the
  stored snapshot has no license file; embedded for testing only): ``DilatedCausalConv1d``,
  ``CausalConv1d`` (``padding=1`` then ``output[:, :, :-1]``), ``ResidualBlock`` (the gated
  ``Tanh``/``Sigmoid`` modules, ``output += x[:, :, -output.size(2):]``, skips cut to
  ``-skip_size:``), ``ResidualStack`` (``torch.stack`` of the skips), ``DensNet`` (``Softmax(dim=1)``
  then the model's ``CrossEntropyLoss``), ``WaveNet``'s receptive field by ``np.sum`` and its
  ``InputSizeError`` for a too-short input, the ``WaveNet`` wrapper's ``train`` (``loss.data``),
  ``eval`` under ``no_grad``, ``generate``, and ``save``/``load`` through ``torch.save`` of the
  ``state_dict``.

Changes, the same on both sides: sizes are tiny (VQ-VAE: 8 x 8 images, 8 channels, one residual
block of 4 channels, a codebook of 6 vectors of 4 dims; Glow: 4 x 4 one-channel images, 2 blocks
of 2 flows, the repository's fixed 512-wide coupling nets; GCN: 30 nodes with 7 binary features
in 3 classes, train/val/test ranges 10/10/10 (the repository's 140/300/1000), hidden 8, 6 epochs,
dropout 0 so that no random mask is drawn, the ``time`` read as a fixed clock; WaveNet: 3 layers x 2
stacks, 6 quantisation channels, 4 residual channels, 20 time steps), weights are overwritten from numpy after
construction, and data and the codebook's ``torch.randn`` come from seeded numpy streams.
"""
import types
import warnings

import numpy as np
import pytest

from parity import SeededTorch, get_torch, init_params, run_both, seeded

import tracegrad

# ---- rosinality/vq-vae-2-pytorch ---------------------------------------------------------------
# the repository's distributed.all_reduce when the world size is 1: returns without reducing
_dist_fn = types.SimpleNamespace(all_reduce=lambda tensor, op=None, async_op=False: None)


def _vqvae_classes(torch):
    nn = torch.nn
    F = torch.nn.functional
    dist_fn = _dist_fn

    class Quantize(nn.Module):
        def __init__(self, dim, n_embed, decay=0.99, eps=1e-5):
            super().__init__()

            self.dim = dim
            self.n_embed = n_embed
            self.decay = decay
            self.eps = eps

            embed = torch.randn(dim, n_embed)
            self.register_buffer("embed", embed)
            self.register_buffer("cluster_size", torch.ones(n_embed))
            self.register_buffer("embed_avg", embed.clone())

        def forward(self, input):
            flatten = input.reshape(-1, self.dim)
            dist = (
                flatten.pow(2).sum(1, keepdim=True)
                - 2 * flatten @ self.embed
                + self.embed.pow(2).sum(0, keepdim=True)
            )
            _, embed_ind = (-dist).max(1)
            embed_onehot = F.one_hot(embed_ind, self.n_embed).type(flatten.dtype)
            embed_ind = embed_ind.view(*input.shape[:-1])
            quantize = self.embed_code(embed_ind)

            if self.training:
                embed_onehot_sum = embed_onehot.sum(0)
                embed_sum = flatten.transpose(0, 1) @ embed_onehot

                dist_fn.all_reduce(embed_onehot_sum)
                dist_fn.all_reduce(embed_sum)

                self.cluster_size.data.mul_(self.decay).add_(
                    embed_onehot_sum, alpha=1 - self.decay
                )
                self.embed_avg.data.mul_(self.decay).add_(embed_sum, alpha=1 - self.decay)
                n = self.cluster_size.sum()
                cluster_size = (
                    (self.cluster_size + self.eps) / (n + self.n_embed * self.eps) * n
                )
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

            self.conv = nn.Sequential(
                nn.ReLU(),
                nn.Conv2d(in_channel, channel, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(channel, in_channel, 1),
            )

        def forward(self, input):
            out = self.conv(input)
            out += input

            return out

    class Encoder(nn.Module):
        def __init__(self, in_channel, channel, n_res_block, n_res_channel, stride):
            super().__init__()

            if stride == 4:
                blocks = [
                    nn.Conv2d(in_channel, channel // 2, 4, stride=2, padding=1),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(channel // 2, channel, 4, stride=2, padding=1),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(channel, channel, 3, padding=1),
                ]

            elif stride == 2:
                blocks = [
                    nn.Conv2d(in_channel, channel // 2, 4, stride=2, padding=1),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(channel // 2, channel, 3, padding=1),
                ]

            for i in range(n_res_block):
                blocks.append(ResBlock(channel, n_res_channel))

            blocks.append(nn.ReLU(inplace=True))

            self.blocks = nn.Sequential(*blocks)

        def forward(self, input):
            return self.blocks(input)

    class Decoder(nn.Module):
        def __init__(
            self, in_channel, out_channel, channel, n_res_block, n_res_channel, stride
        ):
            super().__init__()

            blocks = [nn.Conv2d(in_channel, channel, 3, padding=1)]

            for i in range(n_res_block):
                blocks.append(ResBlock(channel, n_res_channel))

            blocks.append(nn.ReLU(inplace=True))

            if stride == 4:
                blocks.extend(
                    [
                        nn.ConvTranspose2d(channel, channel // 2, 4, stride=2, padding=1),
                        nn.ReLU(inplace=True),
                        nn.ConvTranspose2d(
                            channel // 2, out_channel, 4, stride=2, padding=1
                        ),
                    ]
                )

            elif stride == 2:
                blocks.append(
                    nn.ConvTranspose2d(channel, out_channel, 4, stride=2, padding=1)
                )

            self.blocks = nn.Sequential(*blocks)

        def forward(self, input):
            return self.blocks(input)

    class VQVAE(nn.Module):
        def __init__(
            self,
            in_channel=3,
            channel=128,
            n_res_block=2,
            n_res_channel=32,
            embed_dim=64,
            n_embed=512,
            decay=0.99,
        ):
            super().__init__()

            self.enc_b = Encoder(in_channel, channel, n_res_block, n_res_channel, stride=4)
            self.enc_t = Encoder(channel, channel, n_res_block, n_res_channel, stride=2)
            self.quantize_conv_t = nn.Conv2d(channel, embed_dim, 1)
            self.quantize_t = Quantize(embed_dim, n_embed)
            self.dec_t = Decoder(
                embed_dim, embed_dim, channel, n_res_block, n_res_channel, stride=2
            )
            self.quantize_conv_b = nn.Conv2d(embed_dim + channel, embed_dim, 1)
            self.quantize_b = Quantize(embed_dim, n_embed)
            self.upsample_t = nn.ConvTranspose2d(
                embed_dim, embed_dim, 4, stride=2, padding=1
            )
            self.dec = Decoder(
                embed_dim + embed_dim,
                in_channel,
                channel,
                n_res_block,
                n_res_channel,
                stride=4,
            )

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
            dec = self.dec(quant)

            return dec

        def decode_code(self, code_t, code_b):
            quant_t = self.quantize_t.embed_code(code_t)
            quant_t = quant_t.permute(0, 3, 1, 2)
            quant_b = self.quantize_b.embed_code(code_b)
            quant_b = quant_b.permute(0, 3, 1, 2)

            dec = self.decode(quant_t, quant_b)

            return dec

    return VQVAE


VQ_IMG = 8
VQ_KW = dict(in_channel=3, channel=8, n_res_block=1, n_res_channel=4, embed_dim=4, n_embed=6)


def _vq_images(i, batch=2):
    rs = np.random.RandomState(470 + i)
    return rs.uniform(-1, 1, (batch, 3, VQ_IMG, VQ_IMG)).astype(np.float32)


def _vqvae_setup(T):
    # the codebooks' torch.randn from a seeded numpy stream, the same for both modules
    VQVAE = _vqvae_classes(SeededTorch(T, 4701))
    model = init_params(T, VQVAE(**VQ_KW), 4702, scale=0.3)
    optimizer = T.optim.Adam(model.parameters(), lr=3e-3)
    return model, optimizer


def _vqvae_program(torch, log):
    nn = torch.nn
    model, optimizer = _vqvae_setup(torch)
    device = "cpu"

    # train_vqvae.py's train(), one "epoch" of 3 batches, no scheduler
    criterion = nn.MSELoss()

    latent_loss_weight = 0.25
    sample_size = 2

    mse_sum = 0
    mse_n = 0

    for i in range(3):
        img = torch.from_numpy(_vq_images(i))
        model.zero_grad()

        img = img.to(device)

        out, latent_loss = model(img)
        recon_loss = criterion(out, img)
        latent_loss = latent_loss.mean()
        loss = recon_loss + latent_loss_weight * latent_loss
        loss.backward()

        optimizer.step()

        part_mse_sum = recon_loss.item() * img.shape[0]
        part_mse_n = img.shape[0]
        mse_sum += part_mse_sum
        mse_n += part_mse_n

        lr = optimizer.param_groups[0]["lr"]

        print(
            f"epoch: {1}; mse: {recon_loss.item():.5f}; "
            f"latent: {latent_loss.item():.3f}; avg mse: {mse_sum / mse_n:.5f}; "
            f"lr: {lr:.5f}"
        )
        log("loss", loss)
        log("latent", latent_loss)
        for n, b in model.named_buffers():
            log(n, b)

    model.eval()
    sample = torch.from_numpy(_vq_images(9))[:sample_size]
    with torch.no_grad():
        out, _ = model(sample)
        _, _, _, id_t, id_b = model.encode(sample)
        log("eval out", out)
        log("id_t", id_t)
        log("id_b", id_b)
        log("decode_code", model.decode_code(id_t, id_b))
    for n, p in model.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)


def test_vqvae2_program():
    # float32 over 3 Adam steps: torch's conv kernels round differently from XLA's, the argmin
    # code choices are integer-exact (logged), the default log tolerance holds
    run_both(_vqvae_program)


def _vqvae_step_runs(T, compiled):
    model, optimizer = _vqvae_setup(T)
    criterion = T.nn.MSELoss()

    def step(img):
        model.zero_grad()
        out, latent_loss = model(img)
        recon_loss = criterion(out, img)
        latent_loss = latent_loss.mean()
        loss = recon_loss + 0.25 * latent_loss
        loss.backward()
        optimizer.step()
        return loss, out

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        loss, dec = step(T.from_numpy(_vq_images(i)))
        out.append((loss.detach().numpy(), dec.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    params.update({n: b.numpy() for n, b in model.named_buffers()})
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def _same_runs(a, b, rtol, atol):
    for (la, ca), (lb, cb) in zip(a[0], b[0]):
        np.testing.assert_allclose(la, lb, rtol=rtol, atol=atol)
        np.testing.assert_allclose(ca, cb, rtol=rtol, atol=atol)
    for n in a[1]:
        np.testing.assert_allclose(a[1][n], b[1][n], rtol=rtol, atol=atol, err_msg=n)
    for n in a[2]:
        np.testing.assert_allclose(a[2][n], b[2][n], rtol=rtol, atol=atol, err_msg=n)


def test_vqvae2_train_step_compiled():
    torch = get_torch()
    ref = _vqvae_step_runs(torch, False)
    eager = _vqvae_step_runs(tracegrad, False)
    comp = _vqvae_step_runs(tracegrad, True)
    # torch's CPU kernels round float32 differently (AVX-512 vs AVX2 too) over 3 Adam steps:
    # 1e-4 against torch; XLA's fused compiled program against tracegrad eager: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    # the in-place EMA codebook update (``.data`` writes of buffers) stays in the graph
    assert comp[3].stats["graph_breaks"] == [], comp[3].stats["graph_breaks"]


# ---- rosinality/glow-pytorch ---------------------------------------------------------------------
def _glow_classes(torch):
    from math import log, pi, exp
    from scipy import linalg as la
    nn = torch.nn
    F = torch.nn.functional

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

    class InvConv2d(nn.Module):
        def __init__(self, in_channel):
            super().__init__()

            weight = torch.randn(in_channel, in_channel)
            q, _ = torch.qr(weight)
            weight = q.unsqueeze(2).unsqueeze(3)
            self.weight = nn.Parameter(weight)

        def forward(self, input):
            _, _, height, width = input.shape

            out = F.conv2d(input, self.weight)
            logdet = (
                height * width * torch.slogdet(self.weight.squeeze().double())[1].float()
            )

            return out, logdet

        def reverse(self, output):
            return F.conv2d(
                output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3)
            )

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
        def __init__(self, in_channel, filter_size=512, affine=True):
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
                # s = torch.exp(log_s)
                s = F.sigmoid(log_s + 2)
                # out_a = s * in_a + t
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
                # s = torch.exp(log_s)
                s = F.sigmoid(log_s + 2)
                # in_a = (out_a - t) / s
                in_b = out_b / s - t

            else:
                net_out = self.net(out_a)
                in_b = out_b - net_out

            return torch.cat([out_a, in_b], 1)

    class Flow(nn.Module):
        def __init__(self, in_channel, affine=True, conv_lu=True):
            super().__init__()

            self.actnorm = ActNorm(in_channel)

            if conv_lu:
                self.invconv = InvConv2dLU(in_channel)

            else:
                self.invconv = InvConv2d(in_channel)

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
        return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)

    def gaussian_sample(eps, mean, log_sd):
        return mean + torch.exp(log_sd) * eps

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

            else:
                if self.split:
                    mean, log_sd = self.prior(input).chunk(2, 1)
                    z = gaussian_sample(eps, mean, log_sd)
                    input = torch.cat([output, z], 1)

                else:
                    zero = torch.zeros_like(input)
                    # zero = F.pad(zero, [1, 1, 1, 1], value=1)
                    mean, log_sd = self.prior(zero).chunk(2, 1)
                    z = gaussian_sample(eps, mean, log_sd)
                    input = z

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

    # utils.py
    def calc_z_shapes(n_channel, input_size, n_flow, n_block):
        z_shapes = []

        for i in range(n_block - 1):
            input_size //= 2
            n_channel *= 2

            z_shapes.append((n_channel, input_size, input_size))

        input_size //= 2
        z_shapes.append((n_channel * 4, input_size, input_size))

        return z_shapes

    def calc_loss(log_p, logdet, image_size, n_bins, n_dim):
        n_pixel = image_size * image_size * n_dim

        loss = -log(n_bins) * n_pixel
        loss = loss + logdet + log_p

        return (
            (-loss / (log(2) * n_pixel)).mean(),
            (log_p / (log(2) * n_pixel)).mean(),
            (logdet / (log(2) * n_pixel)).mean(),
        )

    return Glow, calc_z_shapes, calc_loss


_ACTNORM_ITEM_LINE = next(i for i, line in enumerate(open(__file__), 1)
                          if "if self.initialized.item() == 0:" in line)
GLOW_ARGS = types.SimpleNamespace(n_channels=1, img_size=4, n_flow=2, n_block=2, affine=True,
                                  no_lu=False, tr_dq=True, n_bits=5, lr=1e-4, temp=0.7,
                                  n_sample=2, delta=0.01, batch=3,
                                  steps=3)   # batches of the epoch


def _glow_images(i, args=GLOW_ARGS):
    # memory_mnist's stand-in: images quantised to n_bits in [-0.5, 0.5)
    rs = np.random.RandomState(4790 + i)
    n_bins = 2 ** args.n_bits
    x = np.floor(rs.uniform(0, 1, (args.batch, args.n_channels, args.img_size, args.img_size)) * n_bins)
    return (x / n_bins - 0.5).astype(np.float32)


def _glow_setup(T, args=GLOW_ARGS):
    # InvConv2d's torch.randn (--no_lu) from a seeded numpy stream
    Glow, calc_z_shapes, calc_loss = _glow_classes(SeededTorch(T, 4799))
    with seeded(4791):   # InvConv2dLU's np.random draws
        model = Glow(args.n_channels, args.n_flow, args.n_block, affine=args.affine,
                     conv_lu=not args.no_lu)
    # the repository's normal_(0, 0.05) and zero inits, from numpy (the zero-initialised
    # ZeroConv2d layers get small weights too so their gradients are not all alike)
    qr_weights = {n: p.detach().clone() for n, p in model.named_parameters()
                  if n.endswith("invconv.weight")}
    init_params(T, model, 4792, scale=0.05)
    with T.no_grad():   # InvConv2d (--no_lu) keeps its orthogonal QR init: reverse inverts it
        for n, p in model.named_parameters():
            if n in qr_weights:
                p.copy_(qr_weights[n])
    optimizer = T.optim.Adam(model.parameters(), lr=args.lr)
    return model, optimizer, calc_z_shapes, calc_loss


def _glow_program(torch, log, args=GLOW_ARGS):
    model, optimizer, calc_z_shapes, calc_loss = _glow_setup(torch, args)
    torch = SeededTorch(torch, 4793)   # the loop's rand_like/randn_like and the z samples
    device = "cpu"
    n_bins = 2.0 ** args.n_bits

    z_sample = []
    z_shapes = calc_z_shapes(args.n_channels, args.img_size, args.n_flow, args.n_block)
    for z in z_shapes:
        z_new = torch.randn(args.n_sample, *z) * args.temp
        z_sample.append(z_new.to(device))
    log("z_shapes", z_shapes)

    train_losses = []
    for k in range(args.steps):
        image = torch.from_numpy(_glow_images(k))
        optimizer.zero_grad()
        image = image.to(device)
        noisy_image = image
        if args.tr_dq:
            noisy_image += torch.rand_like(image) / n_bins
        noisy_image += torch.randn_like(image) * args.delta
        log_p, logdet, _ = model(noisy_image)

        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(
            log_p, logdet, args.img_size, n_bins, args.n_channels
        )
        loss.backward()
        optimizer.step()
        train_losses.append(loss.item())
        log("loss", loss)
        log("log_p", log_p)
        log("log_det", log_det)
    current_train_loss = np.mean(train_losses)
    print(f"{current_train_loss},{args.delta},{1}")
    with torch.no_grad():
        sample = model.reverse(z_sample).cpu().data
        log("sample", sample)
        image = torch.from_numpy(_glow_images(7))
        log_p, logdet, z_outs = model(image)
        log("val log_p", log_p)
        log("val logdet", logdet)
        log("reconstruct", model.reverse(z_outs, reconstruct=True))
    for n, b in model.named_buffers():
        log(n, b)
    for n, p in model.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)


def test_glow_program():
    # float32 through 512-wide coupling nets: Adam's normalised step m / (sqrt(v) + eps) turns
    # the kernels' last-bit differences in near-zero gradient entries into parameter
    # differences of up to ~5e-6 (3 of 262144 weights), hence 1e-4 / 1e-5 over 3 steps
    run_both(_glow_program, rtol=1e-4, atol=1e-5)


def test_glow_program_no_lu():
    # --no_lu: InvConv2d (torch.qr of a randn matrix: torch's deprecation warning; the log
    # determinant by float64 slogdet) in the split block; the last block keeps InvConv2dLU
    args = types.SimpleNamespace(**dict(vars(GLOW_ARGS), no_lu=True, steps=1))

    def program(torch, log):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _glow_program(torch, log, args)
        log("warnings", sorted({type(x.message).__name__ for x in w}))

    # as test_glow_program; here one weight of 262144 whose gradient is ~0 takes an Adam step
    # of opposite sign (|step| <= lr = 1e-4): 1.5e-5 apart, hence atol 5e-5 (one step here: fast)
    run_both(program, rtol=1e-4, atol=5e-5)


def _glow_step_runs(T, compiled, args=GLOW_ARGS):
    model, optimizer, calc_z_shapes, calc_loss = _glow_setup(T)
    n_bins = 2.0 ** args.n_bits

    def step(image, noise):
        optimizer.zero_grad()
        log_p, logdet, _ = model(image + noise)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, args.img_size, n_bins, args.n_channels)
        loss.backward()
        optimizer.step()
        return loss, log_p, log_det

    if compiled:
        step = T.compile(step)
    rs = np.random.RandomState(4794)
    out = []
    for i in range(3):
        image = _glow_images(i)
        noise = (rs.uniform(0, 1, image.shape) / n_bins).astype(np.float32)
        res = step(T.from_numpy(image), T.from_numpy(noise))
        out.append(tuple(r.detach().numpy() for r in res))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    params.update({n: b.numpy() for n, b in model.named_buffers()})
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def test_glow_train_step_compiled():
    torch = get_torch()
    ref = _glow_step_runs(torch, False)
    eager = _glow_step_runs(tracegrad, False)
    comp = _glow_step_runs(tracegrad, True)
    # against torch: as test_glow_program (Adam's normalised step of near-zero gradients);
    # XLA's fused compiled program against tracegrad eager: 1e-5
    for a, b, rtol, atol in ((ref, eager, 1e-4, 1e-5), (eager, comp, 1e-5, 1e-5)):
        for xa, xb in zip(a[0], b[0]):
            for u, v in zip(xa, xb):
                np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)
        for d in (1, 2):
            for n in a[d]:
                np.testing.assert_allclose(a[d][n], b[d][n], rtol=rtol, atol=atol, err_msg=n)
    # ActNorm's ``self.initialized.item() == 0`` on every call is torch.compile's graph break
    # too (scalar outputs are not captured by default); tracegrad names it at the program's line
    (reason, where), = comp[3].stats["graph_breaks"]
    assert reason.startswith("item() reads a tensor's value"), reason
    assert where.endswith("test_public_programs_round47.py:%d" % _ACTNORM_ITEM_LINE), where



# ---- tkipf/pygcn ---------------------------------------------------------------------------------
def _pygcn_modules(torch, time):
    import math
    import scipy.sparse as sp
    nn = torch.nn
    F = torch.nn.functional
    Parameter = torch.nn.parameter.Parameter
    Module = torch.nn.modules.module.Module

    # pygcn/utils.py
    def encode_onehot(labels):
        classes = set(labels)
        classes_dict = {c: np.identity(len(classes))[i, :] for i, c in
                        enumerate(classes)}
        labels_onehot = np.array(list(map(classes_dict.get, labels)),
                                 dtype=np.int32)
        return labels_onehot

    def load_data(path="../data/cora/", dataset="cora"):
        """Load citation network dataset (cora only for now)"""
        print('Loading {} dataset...'.format(dataset))

        idx_features_labels = np.genfromtxt("{}{}.content".format(path, dataset),
                                            dtype=np.dtype(str))
        features = sp.csr_matrix(idx_features_labels[:, 1:-1], dtype=np.float32)
        labels = encode_onehot(idx_features_labels[:, -1])

        # build graph
        idx = np.array(idx_features_labels[:, 0], dtype=np.int32)
        idx_map = {j: i for i, j in enumerate(idx)}
        edges_unordered = np.genfromtxt("{}{}.cites".format(path, dataset),
                                        dtype=np.int32)
        edges = np.array(list(map(idx_map.get, edges_unordered.flatten())),
                         dtype=np.int32).reshape(edges_unordered.shape)
        adj = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                            shape=(labels.shape[0], labels.shape[0]),
                            dtype=np.float32)

        # build symmetric adjacency matrix
        adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)

        features = normalize(features)
        adj = normalize(adj + sp.eye(adj.shape[0]))

        idx_train = range(10)         # range(140) in the repository
        idx_val = range(10, 20)       # range(200, 500)
        idx_test = range(20, 30)      # range(500, 1500)

        features = torch.FloatTensor(np.array(features.todense()))
        labels = torch.LongTensor(np.where(labels)[1])
        adj = sparse_mx_to_torch_sparse_tensor(adj)

        idx_train = torch.LongTensor(idx_train)
        idx_val = torch.LongTensor(idx_val)
        idx_test = torch.LongTensor(idx_test)

        return adj, features, labels, idx_train, idx_val, idx_test

    def normalize(mx):
        """Row-normalize sparse matrix"""
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
        """Convert a scipy sparse matrix to a torch sparse tensor."""
        sparse_mx = sparse_mx.tocoo().astype(np.float32)
        indices = torch.from_numpy(
            np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
        values = torch.from_numpy(sparse_mx.data)
        shape = torch.Size(sparse_mx.shape)
        return torch.sparse.FloatTensor(indices, values, shape)

    # pygcn/layers.py at 687f2d4 (the legacy autograd function)
    class SparseMM(torch.autograd.Function):
        """
        Sparse x dense matrix multiplication with autograd support.

        Implementation by Soumith Chintala:
        https://discuss.pytorch.org/t/
        does-pytorch-support-autograd-on-sparse-matrix/6156/7
        """

        def forward(self, matrix1, matrix2):
            self.save_for_backward(matrix1, matrix2)
            return torch.mm(matrix1, matrix2)

        def backward(self, grad_output):
            matrix1, matrix2 = self.saved_tensors
            grad_matrix1 = grad_matrix2 = None

            if self.needs_input_grad[0]:
                grad_matrix1 = torch.mm(grad_output, matrix2.t())

            if self.needs_input_grad[1]:
                grad_matrix2 = torch.mm(matrix1.t(), grad_output)

            return grad_matrix1, grad_matrix2

    # pygcn/layers.py at bf1410e
    class GraphConvolution(Module):
        """
        Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
        """

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
            return self.__class__.__name__ + ' (' \
                   + str(self.in_features) + ' -> ' \
                   + str(self.out_features) + ')'

    # pygcn/models.py
    class GCN(nn.Module):
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

    return types.SimpleNamespace(load_data=load_data, accuracy=accuracy, SparseMM=SparseMM,
                                 GCN=GCN, F=F, optim=torch.optim)


def _write_cora(path, n=30, n_feat=7):
    rs = np.random.RandomState(4795)
    ids = rs.choice(np.arange(1000, 9999), n, replace=False)
    names = np.array(["Neural_Networks", "Theory", "Rule_Learning"])
    with open(path + "cora.content", "w") as f:
        for k in range(n):
            feats = (rs.uniform(0, 1, n_feat) < 0.4).astype(int)
            feats[k % n_feat] = 1
            f.write("\t".join([str(ids[k])] + [str(v) for v in feats] + [names[k % 3]]) + "\n")
    with open(path + "cora.cites", "w") as f:
        for _ in range(2 * n):
            a, b = rs.choice(ids, 2, replace=False)
            f.write(f"{a}\t{b}\n")


def _pygcn_program(torch, log):
    import os
    import tempfile
    clock = types.SimpleNamespace(time=lambda: 0.0)   # train.py's timings, printed
    m = _pygcn_modules(torch, clock)
    F, optim, time = m.F, m.optim, clock
    args = types.SimpleNamespace(no_cuda=True, fastmode=False, seed=42, epochs=6, lr=0.01,
                                 weight_decay=5e-4, hidden=8, dropout=0.0)
    args.cuda = not args.no_cuda and torch.cuda.is_available()

    with tempfile.TemporaryDirectory() as d:
        _write_cora(d + os.sep)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            adj, features, labels, idx_train, idx_val, idx_test = m.load_data(path=d + os.sep)
        log("load_data warnings", sorted({type(x.message).__name__ for x in w}))
    log("adj", adj.to_dense())
    log("adj is_sparse", adj.is_sparse)
    log("features", features)
    log("labels", labels)

    # Model and optimizer
    model = m.GCN(nfeat=features.shape[1],
                  nhid=args.hidden,
                  nclass=labels.max().item() + 1,
                  dropout=args.dropout)
    init_params(torch, model, 4796)
    print(model)
    optimizer = optim.Adam(model.parameters(),
                           lr=args.lr, weight_decay=args.weight_decay)

    # the repository's first layers.py: a legacy (non-static) autograd Function
    try:
        m.SparseMM()(adj, features)
        log("SparseMM", "no error")
    except RuntimeError as e:
        log("SparseMM", (type(e).__name__, "static forward" in str(e)))

    def train(epoch):
        t = time.time()
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = m.accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()

        if not args.fastmode:
            # Evaluate validation set performance separately,
            # deactivates dropout during validation run.
            model.eval()
            output = model(features, adj)

        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        acc_val = m.accuracy(output[idx_val], labels[idx_val])
        print('Epoch: {:04d}'.format(epoch+1),
              'loss_train: {:.4f}'.format(loss_train.item()),
              'acc_train: {:.4f}'.format(acc_train.item()),
              'loss_val: {:.4f}'.format(loss_val.item()),
              'acc_val: {:.4f}'.format(acc_val.item()),
              'time: {:.4f}s'.format(time.time() - t))
        log("loss_train", loss_train)
        log("acc_val", acc_val)
        log("output", output)

    def test():
        model.eval()
        output = model(features, adj)
        loss_test = F.nll_loss(output[idx_test], labels[idx_test])
        acc_test = m.accuracy(output[idx_test], labels[idx_test])
        print("Test set results:",
              "loss= {:.4f}".format(loss_test.item()),
              "accuracy= {:.4f}".format(acc_test.item()))
        log("loss_test", loss_test)

    # Train model
    t_total = time.time()
    for epoch in range(args.epochs):
        train(epoch)
    print("Optimization Finished!")
    print("Total time elapsed: {:.4f}s".format(time.time() - t_total))

    # Testing
    test()
    for n, p in model.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)


def test_pygcn_program():
    run_both(_pygcn_program)


def _pygcn_step_runs(T, compiled, adj_arg=True):
    import os
    import tempfile
    m = _pygcn_modules(T, None)
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _write_cora(d + os.sep)
        adj, features, labels, idx_train, idx_val, idx_test = m.load_data(path=d + os.sep)
    model = init_params(T, m.GCN(nfeat=features.shape[1], nhid=8, nclass=3, dropout=0.0), 4796)
    optimizer = T.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def step(features, adj=adj):    # train.py's adj is a global: adj_arg=False reads it so
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = m.F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = m.accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        return loss_train, acc_train, output

    if compiled:
        step = T.compile(step)
    out = [tuple(r.detach().numpy() for r in (step(features, adj) if adj_arg else step(features)))
           for _ in range(3)]
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


@pytest.mark.parametrize("adj_arg", [True, False], ids=["adj_argument", "adj_global"])
def test_pygcn_train_step_compiled(adj_arg):
    torch = get_torch()
    ref = _pygcn_step_runs(torch, False)
    eager = _pygcn_step_runs(tracegrad, False)
    comp = _pygcn_step_runs(tracegrad, True, adj_arg)
    # float32 sparse @ dense products summed in another order than torch's kernel: 1e-4
    # over 3 Adam steps against torch; compiled against tracegrad eager: 1e-5
    for a, b, rtol, atol in ((ref, eager, 1e-4, 1e-5), (eager, comp, 1e-5, 1e-6)):
        for xa, xb in zip(a[0], b[0]):
            for u, v in zip(xa, xb):
                np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)
        for d in (1, 2):
            for n in a[d]:
                np.testing.assert_allclose(a[d][n], b[d][n], rtol=rtol, atol=atol, err_msg=n)
    stats = comp[3].stats
    # a sparse tensor the step reads, passed in (tracegrad did raise SparseOperand building its
    # cache key from the argument's dense value) or from outside, is traced into the program
    # (torch.compile skips a frame given a sparse argument and runs it eagerly: same values)
    assert stats["graph_breaks"] == [] and stats["traces"] == 1, stats


def test_compile_sparse_argument():
    # focused: a sparse COO argument of a compiled function, against torch eager, also with
    # fullgraph=True (whose first call is traced)
    torch = get_torch()

    def run(T, compiled, fullgraph=False):
        a = T.sparse_coo_tensor(T.tensor([[0, 1, 2], [1, 2, 0]]), T.tensor([1.0, 2.0, 3.0]), (3, 3))
        x = T.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), requires_grad=True)

        def f(a, x):
            return T.spmm(a, x * 2).sum()

        if compiled:
            f = T.compile(f, fullgraph=fullgraph)
        for _ in range(2):
            y = f(a, x)
            y.backward()
        return y.detach().numpy(), x.grad.numpy(), f

    ry, rg, _ = run(torch, False)
    for fullgraph in (False, True):
        y, g, f = run(tracegrad, True, fullgraph)
        np.testing.assert_allclose(y, ry, rtol=1e-6)
        np.testing.assert_allclose(g, rg, rtol=1e-6)
        # (fullgraph traces its first call too: x, with a .grad from then on, is keyed anew)
        assert f.stats["graph_breaks"] == [] and f.stats["eager_calls"] == int(not fullgraph), f.stats
        assert f.stats["traces"] == 1 + fullgraph, f.stats



# ---- golbin/WaveNet ------------------------------------------------------------------------------
def _wavenet_modules(torch):
    import os

    # wavenet/exceptions.py's InputSizeError, in short
    class InputSizeError(Exception):
        def __init__(self, input_size, receptive_fields, output_size):
            message = 'Input size has to be larger than receptive_fields\n'
            message += 'Input size: {0}, Receptive fields size: {1}, Output size: {2}'.format(
                input_size, receptive_fields, output_size)
            super(InputSizeError, self).__init__(message)

    # wavenet/networks.py
    class DilatedCausalConv1d(torch.nn.Module):
        """Dilated Causal Convolution for WaveNet"""
        def __init__(self, channels, dilation=1):
            super(DilatedCausalConv1d, self).__init__()

            self.conv = torch.nn.Conv1d(channels, channels,
                                        kernel_size=2, stride=1,  # Fixed for WaveNet
                                        dilation=dilation,
                                        padding=0,  # Fixed for WaveNet dilation
                                        bias=False)  # Fixed for WaveNet but not sure

        def init_weights_for_test(self):
            for m in self.modules():
                if isinstance(m, torch.nn.Conv1d):
                    m.weight.data.fill_(1)

        def forward(self, x):
            output = self.conv(x)

            return output

    class CausalConv1d(torch.nn.Module):
        """Causal Convolution for WaveNet"""
        def __init__(self, in_channels, out_channels):
            super(CausalConv1d, self).__init__()

            # padding=1 for same size(length) between input and output for causal convolution
            self.conv = torch.nn.Conv1d(in_channels, out_channels,
                                        kernel_size=2, stride=1, padding=1,
                                        bias=False)  # Fixed for WaveNet but not sure

        def init_weights_for_test(self):
            for m in self.modules():
                if isinstance(m, torch.nn.Conv1d):
                    m.weight.data.fill_(1)

        def forward(self, x):
            output = self.conv(x)

            # remove last value for causal convolution
            return output[:, :, :-1]

    class ResidualBlock(torch.nn.Module):
        def __init__(self, res_channels, skip_channels, dilation):
            super(ResidualBlock, self).__init__()

            self.dilated = DilatedCausalConv1d(res_channels, dilation=dilation)
            self.conv_res = torch.nn.Conv1d(res_channels, res_channels, 1)
            self.conv_skip = torch.nn.Conv1d(res_channels, skip_channels, 1)

            self.gate_tanh = torch.nn.Tanh()
            self.gate_sigmoid = torch.nn.Sigmoid()

        def forward(self, x, skip_size):
            output = self.dilated(x)

            # PixelCNN gate
            gated_tanh = self.gate_tanh(output)
            gated_sigmoid = self.gate_sigmoid(output)
            gated = gated_tanh * gated_sigmoid

            # Residual network
            output = self.conv_res(gated)
            input_cut = x[:, :, -output.size(2):]
            output += input_cut

            # Skip connection
            skip = self.conv_skip(gated)
            skip = skip[:, :, -skip_size:]

            return output, skip

    class ResidualStack(torch.nn.Module):
        def __init__(self, layer_size, stack_size, res_channels, skip_channels):
            super(ResidualStack, self).__init__()

            self.layer_size = layer_size
            self.stack_size = stack_size
            self.dilations = self.build_dilations()
            self.res_blocks = torch.nn.ModuleList([ResidualBlock(res_channels, skip_channels, dilation)
                                                   for dilation in self.dilations])

        def build_dilations(self):
            dilations = []

            # 5 = stack[layer1, layer2, layer3, layer4, layer5]
            for s in range(0, self.stack_size):
                # 10 = layer[dilation=1, dilation=2, 4, 8, 16, 32, 64, 128, 256, 512]
                for l in range(0, self.layer_size):  # noqa: E741
                    dilations.append(2 ** l)

            return dilations

        def forward(self, x, skip_size):
            output = x
            skip_connections = []

            for res_block in self.res_blocks:
                # output is the next input
                output, skip = res_block(output, skip_size)
                skip_connections.append(skip)

            return torch.stack(skip_connections)

    class DensNet(torch.nn.Module):
        def __init__(self, channels):
            super(DensNet, self).__init__()

            self.conv1 = torch.nn.Conv1d(channels, channels, 1)
            self.conv2 = torch.nn.Conv1d(channels, channels, 1)

            self.relu = torch.nn.ReLU()
            self.softmax = torch.nn.Softmax(dim=1)

        def forward(self, x):
            output = self.relu(x)
            output = self.conv1(output)
            output = self.relu(output)
            output = self.conv2(output)

            output = self.softmax(output)

            return output

    class WaveNetModule(torch.nn.Module):
        def __init__(self, layer_size, stack_size, in_channels, res_channels):
            super(WaveNetModule, self).__init__()

            self.receptive_fields = self.calc_receptive_fields(layer_size, stack_size)

            self.causal = CausalConv1d(in_channels, res_channels)

            self.res_stack = ResidualStack(layer_size, stack_size, res_channels, in_channels)

            self.densnet = DensNet(in_channels)

        @staticmethod
        def calc_receptive_fields(layer_size, stack_size):
            layers = [2 ** i for i in range(0, layer_size)] * stack_size
            num_receptive_fields = np.sum(layers)

            return int(num_receptive_fields)

        def calc_output_size(self, x):
            output_size = int(x.size(2)) - self.receptive_fields

            self.check_input_size(x, output_size)

            return output_size

        def check_input_size(self, x, output_size):
            if output_size < 1:
                raise InputSizeError(int(x.size(2)), self.receptive_fields, output_size)

        def forward(self, x):
            output = x.transpose(1, 2)

            output_size = self.calc_output_size(output)

            output = self.causal(output)

            skip_connections = self.res_stack(output, output_size)

            output = torch.sum(skip_connections, dim=0)

            output = self.densnet(output)

            return output.transpose(1, 2).contiguous()

    # wavenet/model.py
    class WaveNet:
        def __init__(self, layer_size, stack_size, in_channels, res_channels, lr=0.002):

            self.net = WaveNetModule(layer_size, stack_size, in_channels, res_channels)
            init_params(torch, self.net, 4797)    # (the test's weights, before the optimizer)

            self.in_channels = in_channels
            self.receptive_fields = self.net.receptive_fields

            self.lr = lr
            self.loss = self._loss()
            self.optimizer = self._optimizer()

            self._prepare_for_gpu()

        @staticmethod
        def _loss():
            loss = torch.nn.CrossEntropyLoss()

            if torch.cuda.is_available():
                loss = loss.cuda()

            return loss

        def _optimizer(self):
            return torch.optim.Adam(self.net.parameters(), lr=self.lr)

        def _prepare_for_gpu(self):
            if torch.cuda.device_count() > 1:
                print("{0} GPUs are detected.".format(torch.cuda.device_count()))
                self.net = torch.nn.DataParallel(self.net)

            if torch.cuda.is_available():
                self.net.cuda()

        def train(self, inputs, targets):
            outputs = self.net(inputs)

            loss = self.loss(outputs.view(-1, self.in_channels),
                             targets.long().view(-1))

            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

            return loss.data

        def eval(self, inputs, targets):
            with torch.no_grad():
                outputs = self.net(inputs)
                loss = self.loss(outputs.view(-1, self.in_channels),
                                 targets.long().view(-1))
            return loss

        def generate(self, inputs):
            outputs = self.net(inputs)

            return outputs

        @staticmethod
        def get_model_path(model_dir, step=0):
            basename = 'wavenet'

            if step:
                return os.path.join(model_dir, '{0}_{1}.pkl'.format(basename, step))
            else:
                return os.path.join(model_dir, '{0}.pkl'.format(basename))

        def load(self, model_dir, step=0):
            print("Loading model from {0}".format("<model_dir>"))

            model_path = self.get_model_path(model_dir, step)

            self.net.load_state_dict(torch.load(model_path))

        def save(self, model_dir, step=0):
            print("Saving model into {0}".format("<model_dir>"))

            model_path = self.get_model_path(model_dir, step)

            torch.save(self.net.state_dict(), model_path)

    return WaveNet, InputSizeError


WN_CH, WN_T = 6, 20


def _wavenet_batch(i, receptive_fields, batch=2):
    # wavenet/utils/data.py's stand-in: one-hot mu-law codes, targets the codes after the
    # receptive field
    rs = np.random.RandomState(4798 + i)
    codes = rs.randint(0, WN_CH, (batch, WN_T + 1))
    inputs = np.eye(WN_CH, dtype=np.float32)[codes[:, :-1]]
    targets = codes[:, receptive_fields + 1:].astype(np.int32)
    return inputs, targets


def _wavenet_program(torch, log):
    import tempfile
    WaveNet, InputSizeError = _wavenet_modules(torch)
    wavenet = WaveNet(3, 2, WN_CH, 4, lr=0.002)
    log("receptive_fields", wavenet.receptive_fields)
    for step in range(3):
        inputs, targets = _wavenet_batch(step, wavenet.receptive_fields)
        loss = wavenet.train(torch.from_numpy(inputs), torch.from_numpy(targets))
        print('[{0}/{1}] loss: {2}'.format(1, step, loss))
        log("loss", loss)
        log("loss requires_grad", loss.requires_grad)
    inputs, targets = _wavenet_batch(7, wavenet.receptive_fields)
    log("eval", wavenet.eval(torch.from_numpy(inputs), torch.from_numpy(targets)))
    log("generate", wavenet.generate(torch.from_numpy(inputs)))
    try:
        wavenet.generate(torch.from_numpy(inputs[:, :10]))
    except InputSizeError as e:
        log("too short", str(e))
    with tempfile.TemporaryDirectory() as d:
        wavenet.save(d, step=3)
        other = WaveNet(3, 2, WN_CH, 4)
        other.load(d, step=3)
        log("reloaded", other.generate(torch.from_numpy(inputs)))
    for n, p in wavenet.net.named_parameters():
        log(n, p)
        log(n + ".grad", p.grad)


def test_wavenet_program():
    run_both(_wavenet_program)


def _wavenet_step_runs(T, compiled):
    WaveNet, _ = _wavenet_modules(T)
    wavenet = WaveNet(3, 2, WN_CH, 4, lr=0.002)
    step = T.compile(wavenet.train) if compiled else wavenet.train
    out = []
    for i in range(3):
        inputs, targets = _wavenet_batch(i, wavenet.receptive_fields)
        out.append(step(T.from_numpy(inputs), T.from_numpy(targets)).numpy())
    params = {n: p.detach().numpy() for n, p in wavenet.net.named_parameters()}
    # the last block's conv_res feeds nothing: its grads stay None (zero_grad sets None)
    grads = {n: None if p.grad is None else p.grad.numpy() for n, p in wavenet.net.named_parameters()}
    return out, params, grads, step


def test_wavenet_train_step_compiled():
    torch = get_torch()
    ref = _wavenet_step_runs(torch, False)
    eager = _wavenet_step_runs(tracegrad, False)
    comp = _wavenet_step_runs(tracegrad, True)
    # float32 over 3 Adam steps against torch's conv kernels: 1e-4; compiled against eager: 1e-5
    for a, b, rtol, atol in ((ref, eager, 1e-4, 1e-5), (eager, comp, 1e-5, 1e-6)):
        for u, v in zip(a[0], b[0]):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)
        for d in (1, 2):
            for n in a[d]:
                assert (a[d][n] is None) == (b[d][n] is None), n
                if a[d][n] is not None:
                    np.testing.assert_allclose(a[d][n], b[d][n], rtol=rtol, atol=atol, err_msg=n)
    assert sum(g is None for g in ref[2].values()) == 2, ref[2].keys()
    stats = comp[3].stats
    assert stats["graph_breaks"] == [] and stats["traces"] >= 1, stats


# ---- a pattern met while choosing programs (not embedded) ----------------------------------------
def _pad_by_tensors(T):
    # the U-Net up-sampling pattern of milesial/Pytorch-UNet's ``Up.forward`` (GPL-3.0, so
    # written anew here): the size differences as 1-element tensors made from Python ints,
    # halved with ``//`` and passed to ``F.pad`` as pad amounts
    F = T.nn.functional

    def up_and_pad(x1, x2):
        dy = T.tensor([x2.size()[2] - x1.size()[2]])
        dx = T.tensor([x2.size()[3] - x1.size()[3]])
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return T.cat([x2, x1], dim=1) * 2

    return up_and_pad


def test_pad_amounts_as_constant_tensors_compiled_values():
    torch = get_torch()
    x1 = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    x2 = np.ones((1, 2, 4, 5), np.float32)
    ref = _pad_by_tensors(torch)(torch.from_numpy(x1), torch.from_numpy(x2)).numpy()
    f = tracegrad.compile(_pad_by_tensors(tracegrad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            got = f(tracegrad.from_numpy(x1), tracegrad.from_numpy(x2)).numpy()
            np.testing.assert_array_equal(got, ref)


def test_pad_amounts_as_constant_tensors_no_graph_break():
    x1 = tracegrad.ones(1, 2, 3, 3)
    x2 = tracegrad.ones(1, 2, 4, 5)
    f = tracegrad.compile(_pad_by_tensors(tracegrad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            f(x1, x2)
    assert f.stats["graph_breaks"] == [], f.stats["graph_breaks"]
