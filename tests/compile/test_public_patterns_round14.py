"""Round-13 public programs (``tests/api/test_public_programs_round13.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager (== torch where asked) with the harness (tiny sizes, numpy data):

- Spijkervet/SimCLR nt_xent.py: the NT-Xent step (CosineSimilarity over broadcast views,
  ``torch.diag`` offsets, a constant bool-mask select, CrossEntropyLoss(sum), ``loss /= N``);
- MishaLaskin/vqvae quantizer.py: argmin codes, a ``scatter_`` one-hot, the straight-through
  estimator and perplexity, Adam(amsgrad=True);
- sagelywizard/pytorch-mdn mdn.py: the mixture density head and its negative log likelihood;
- greydanus/hamiltonian-nn hnn.py: ``torch.autograd.grad(..., create_graph=True)`` inside the
  step (the Hamiltonian vector field) and an rk4 of it, Adam with weight_decay;
- labmlai FNet: ``torch.fft.fft`` twice and ``torch.real`` in a residual layer;

and three compiled the way their authors' training scripts compile (``model =
torch.compile(model)`` then an ordinary eager loop around the compiled module):

- d-li14/mobilenetv3.pytorch: hard-swish / squeeze-excite inverted residuals with BatchNorm in
  train mode (running stats are buffers the compiled forward writes);
- lukemelas/EfficientNet-PyTorch: an MBConv block whose Swish is a custom ``autograd.Function``
  reading ``ctx.saved_variables``, with dynamic same padding;
- EvelynFan/FaceFormer: a batch_first TransformerDecoder with a per-head 3-D ALiBi float mask
  and a bool memory mask.
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


# ---- Spijkervet/SimCLR simclr/modules/nt_xent.py -------------------------------------------------
def nt_xent_program(mod, wrap):
    nn = mod.nn
    batch_size, temperature = 3, 0.5
    N = 2 * batch_size
    mask = mod.ones((N, N), dtype=bool)
    mask = mask.fill_diagonal_(0)
    for i in range(batch_size):
        mask[i, batch_size + i] = 0
        mask[batch_size + i, i] = 0
    criterion = nn.CrossEntropyLoss(reduction="sum")
    similarity_f = nn.CosineSimilarity(dim=2)
    proj = np_init(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4)), mod)
    opt = mod.optim.SGD(proj.parameters(), lr=0.1, momentum=0.9)

    def step(x_i, x_j):
        z = mod.cat((proj(x_i), proj(x_j)), dim=0)
        sim = similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / temperature
        sim_i_j = mod.diag(sim, batch_size)
        sim_j_i = mod.diag(sim, -batch_size)
        positive_samples = mod.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
        negative_samples = sim[mask].reshape(N, -1)
        labels_ = mod.zeros(N).to(positive_samples.device).long()
        logits = mod.cat((positive_samples, negative_samples), dim=1)
        loss = criterion(logits, labels_)
        loss /= N
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"proj": proj, "opt": opt}, lambda i: (data(mod, i, 3, 5), data(mod, i, 3, 5, seed=50))


def test_simclr_nt_xent_step():
    check_compiled(nt_xent_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- MishaLaskin/vqvae models/quantizer.py ----------------------------------------------------------
def vqvae_program(mod, wrap):
    nn = mod.nn
    n_e, e_dim, beta = 6, 4, 0.25
    encoder = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1)
    embedding = nn.Embedding(n_e, e_dim)
    decoder = nn.ConvTranspose2d(4, 3, kernel_size=3, stride=1, padding=1)
    model = np_init(nn.ModuleList([encoder, embedding, decoder]), mod, scale=0.5)
    opt = mod.optim.Adam(model.parameters(), lr=3e-4, amsgrad=True)

    def quantize(z):
        z = z.permute(0, 2, 3, 1).contiguous()
        z_flattened = z.view(-1, e_dim)
        d = mod.sum(z_flattened ** 2, dim=1, keepdim=True) + \
            mod.sum(embedding.weight**2, dim=1) - 2 * \
            mod.matmul(z_flattened, embedding.weight.t())
        min_encoding_indices = mod.argmin(d, dim=1).unsqueeze(1)
        min_encodings = mod.zeros(min_encoding_indices.shape[0], n_e)
        min_encodings.scatter_(1, min_encoding_indices, 1)
        z_q = mod.matmul(min_encodings, embedding.weight).view(z.shape)
        loss = mod.mean((z_q.detach()-z)**2) + beta * mod.mean((z_q - z.detach()) ** 2)
        z_q = z + (z_q - z).detach()
        e_mean = mod.mean(min_encodings, dim=0)
        perplexity = mod.exp(-mod.sum(e_mean * mod.log(e_mean + 1e-10)))
        return loss, z_q.permute(0, 3, 1, 2).contiguous(), perplexity

    def step(x):
        opt.zero_grad()
        embedding_loss, z_q, perplexity = quantize(encoder(x))
        x_hat = decoder(z_q)
        recon_loss = mod.mean((x_hat - x)**2) / 1.3
        loss = recon_loss + embedding_loss
        loss.backward()
        opt.step()
        return recon_loss, perplexity

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 3, 4, 4),)


def test_vqvae_quantizer_step():
    check_compiled(vqvae_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- sagelywizard/pytorch-mdn mdn/mdn.py ------------------------------------------------------------
def mdn_program(mod, wrap):
    nn = mod.nn
    ONEOVERSQRT2PI = 1.0 / math.sqrt(2 * math.pi)

    class MDN(nn.Module):
        def __init__(self, in_features, out_features, num_gaussians):
            super(MDN, self).__init__()
            self.out_features, self.num_gaussians = out_features, num_gaussians
            self.pi = nn.Sequential(nn.Linear(in_features, num_gaussians), nn.Softmax(dim=1))
            self.sigma = nn.Linear(in_features, out_features * num_gaussians)
            self.mu = nn.Linear(in_features, out_features * num_gaussians)

        def forward(self, minibatch):
            pi = self.pi(minibatch)
            sigma = mod.exp(self.sigma(minibatch)).view(-1, self.num_gaussians, self.out_features)
            mu = self.mu(minibatch).view(-1, self.num_gaussians, self.out_features)
            return pi, sigma, mu

    def mdn_loss(pi, sigma, mu, target):
        target = target.unsqueeze(1).expand_as(sigma)
        ret = ONEOVERSQRT2PI * mod.exp(-0.5 * ((target - mu) / sigma)**2) / sigma
        prob = pi * mod.prod(ret, 2)
        return mod.mean(-mod.log(mod.sum(prob, dim=1)))

    model = np_init(nn.Sequential(nn.Linear(1, 5), nn.Tanh(), MDN(5, 2, 3)), mod)
    opt = mod.optim.Adam(model.parameters())

    def step(x):
        y = mod.cat([mod.sin(x), mod.cos(x)], 1)
        model.zero_grad()
        pi, sigma, mu = model(x)
        loss = mdn_loss(pi, sigma, mu, y)
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 6, 1),)


def test_mdn_step():
    check_compiled(mdn_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- greydanus/hamiltonian-nn hnn.py ---------------------------------------------------------------
def hnn_program(mod, wrap):
    nn = mod.nn

    class MLP(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim):
            super(MLP, self).__init__()
            self.linear1 = nn.Linear(input_dim, hidden_dim)
            self.linear2 = nn.Linear(hidden_dim, hidden_dim)
            self.linear3 = nn.Linear(hidden_dim, output_dim)

        def forward(self, x):
            h = self.linear1(x).tanh()
            h = self.linear2(h).tanh()
            return self.linear3(h)

    model = np_init(MLP(2, 8, 2), mod)
    M = mod.eye(2)
    M = mod.cat([M[1:], -M[:1]])
    opt = mod.optim.Adam(model.parameters(), 1e-2, weight_decay=1e-4)

    def time_derivative(x, t=None):
        F1, F2 = model(x).split(1, 1)
        dF1 = mod.autograd.grad(F1.sum(), x, create_graph=True)[0]
        conservative_field = dF1 @ mod.eye(*M.shape)
        dF2 = mod.autograd.grad(F2.sum(), x, create_graph=True)[0]
        solenoidal_field = dF2 @ M.t()
        return conservative_field + solenoidal_field

    def rk4(fun, y0, t, dt):
        dt2 = dt / 2.0
        k1 = fun(y0, t)
        k2 = fun(y0 + dt2 * k1, t + dt2)
        k3 = fun(y0 + dt2 * k2, t + dt2)
        k4 = fun(y0 + dt * k3, t + dt)
        return dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    def step(x, dxdt):
        dxdt_hat = rk4(time_derivative, x, 0, 0.1)
        loss = (dxdt - dxdt_hat).pow(2).mean()
        loss.backward() ; opt.step() ; opt.zero_grad()
        return loss

    def batch(i):
        return data(mod, i, 4, 2).requires_grad_(), data(mod, i, 4, 2, seed=70)

    return wrap(step), {"model": model, "opt": opt}, batch


def test_hamiltonian_nn_step():
    check_compiled(hnn_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- labmlai annotated_deep_learning_paper_implementations transformers/fnet -------------------------
def fnet_program(mod, wrap):
    nn = mod.nn

    class Layer(nn.Module):
        def __init__(self, d_model):
            super().__init__()
            self.norm1 = nn.LayerNorm([d_model])
            self.ff = nn.Sequential(nn.Linear(d_model, 12), nn.ReLU(), nn.Linear(12, d_model))
            self.norm2 = nn.LayerNorm([d_model])

        def forward(self, x):
            fft_seq = mod.fft.fft(mod.fft.fft(x, dim=2), dim=0)
            x = self.norm1(x + mod.real(fft_seq))
            return self.norm2(x + self.ff(x))

    layer = np_init(Layer(6), mod)
    opt = mod.optim.Adam(layer.parameters(), lr=1e-2)

    def step(x, y):
        loss = ((layer(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"layer": layer, "opt": opt}, lambda i: (data(mod, i, 5, 2, 6), data(mod, i, 5, 2, 6, seed=60))


def test_fnet_step():
    check_compiled(fnet_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- model = torch.compile(model), then the authors' eager loop -------------------------------------
def _compiled_model_program(build, loss_fn, make_batch, lr=0.05):
    """``make(mod, wrap)`` for a training script that compiles its model: ``wrap`` is applied to
    the module (``model = torch.compile(model)``) and the loop around it stays eager."""
    def make(mod, wrap):
        model = np_init(build(mod), mod)
        cmodel = wrap(model)
        opt = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

        def step(*batch):
            out = cmodel(*batch[:-1])
            loss = loss_fn(mod, out, batch[-1])
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, out
        return step, {"model": model, "opt": opt}, lambda i: make_batch(mod, i)
    return make


def _mobilenetv3(mod):
    nn = mod.nn

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
            self.fc = nn.Sequential(nn.Linear(channel, channel // reduction), nn.ReLU(inplace=True),
                                    nn.Linear(channel // reduction, channel), h_sigmoid())

        def forward(self, x):
            b, c, _, _ = x.size()
            y = self.avg_pool(x).view(b, c)
            y = self.fc(y).view(b, c, 1, 1)
            return x * y

    class InvertedResidual(nn.Module):
        def __init__(self, inp, hidden_dim, oup, kernel_size, stride, use_se, use_hs):
            super(InvertedResidual, self).__init__()
            self.identity = stride == 1 and inp == oup
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
            return self.conv(x)

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), h_swish(),
        InvertedResidual(8, 16, 8, 3, 1, 1, 1),
        nn.AdaptiveAvgPool2d((1, 1)), h_swish(), nn.Flatten(), nn.Linear(8, 3))


def test_mobilenetv3_compiled_model():
    make = _compiled_model_program(
        _mobilenetv3, lambda mod, out, y: mod.nn.functional.cross_entropy(out, y),
        lambda mod, i: (data(mod, i, 2, 3, 8, 8), labels(mod, i, 2, 3)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


def _mbconv(mod):
    nn, F = mod.nn, mod.nn.functional

    class SwishImplementation(mod.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i * mod.sigmoid(i)
            ctx.save_for_backward(i)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            i = ctx.saved_variables[0]
            sigmoid_i = mod.sigmoid(i)
            return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

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

    class MBConv(nn.Module):
        def __init__(self, c=4, e=2):
            super().__init__()
            self._expand_conv = Conv2dDynamicSamePadding(c, c * e, 1, bias=False)
            self._bn0 = nn.BatchNorm2d(c * e, momentum=0.01, eps=1e-3)
            self._depthwise_conv = Conv2dDynamicSamePadding(c * e, c * e, 3, stride=2, groups=c * e, bias=False)
            self._bn1 = nn.BatchNorm2d(c * e, momentum=0.01, eps=1e-3)
            self._se_reduce = Conv2dDynamicSamePadding(c * e, 1, 1)
            self._se_expand = Conv2dDynamicSamePadding(1, c * e, 1)
            self._project_conv = Conv2dDynamicSamePadding(c * e, c, 1, bias=False)
            self._bn2 = nn.BatchNorm2d(c, momentum=0.01, eps=1e-3)

        def forward(self, inputs):
            x = SwishImplementation.apply(self._bn0(self._expand_conv(inputs)))
            x = SwishImplementation.apply(self._bn1(self._depthwise_conv(x)))
            x_squeezed = F.adaptive_avg_pool2d(x, 1)
            x_squeezed = self._se_expand(SwishImplementation.apply(self._se_reduce(x_squeezed)))
            x = mod.sigmoid(x_squeezed) * x
            return self._bn2(self._project_conv(x))

    return MBConv()


def test_efficientnet_mbconv_compiled_model():
    make = _compiled_model_program(
        _mbconv, lambda mod, out, y: ((out - y) ** 2).mean(),
        lambda mod, i: (data(mod, i, 2, 4, 5, 5), data(mod, i, 2, 4, 3, 3, seed=80)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


def _faceformer_decoder(mod):
    nn = mod.nn

    def init_biased_mask(n_head, max_seq_len, period):
        def get_slopes(n):
            def get_slopes_power_of_2(n):
                start = (2**(-2**-(math.log2(n)-3)))
                ratio = start
                return [start*ratio**i for i in range(n)]
            if math.log2(n).is_integer():
                return get_slopes_power_of_2(n)
            closest_power_of_2 = 2**math.floor(math.log2(n))
            return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2*closest_power_of_2)[0::2][:n-closest_power_of_2]
        slopes = mod.Tensor(get_slopes(n_head))
        bias = mod.arange(start=0, end=max_seq_len, step=period).unsqueeze(1).repeat(1,period).view(-1)//(period)
        bias = - mod.flip(bias,dims=[0])
        alibi = mod.zeros(max_seq_len, max_seq_len)
        for i in range(max_seq_len):
            alibi[i, :i+1] = bias[-(i+1):]
        alibi = slopes.unsqueeze(1).unsqueeze(1) * alibi.unsqueeze(0)
        mask = (mod.triu(mod.ones(max_seq_len, max_seq_len)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask.unsqueeze(0) + alibi

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.biased_mask = init_biased_mask(n_head=3, max_seq_len=4, period=2)
            layer = nn.TransformerDecoderLayer(d_model=6, nhead=3, dim_feedforward=12, batch_first=True, dropout=0.0)
            self.transformer_decoder = nn.TransformerDecoder(layer, num_layers=1)
            self.vertice_map_r = nn.Linear(6, 6)

        def forward(self, vertice_input, hidden_states):
            T, S = vertice_input.shape[1], hidden_states.shape[1]
            tgt_mask = self.biased_mask[:, :T, :T].clone().detach()
            memory_mask = mod.ones(T, S)
            for i in range(T):
                memory_mask[i, i] = 0
            out = self.transformer_decoder(vertice_input, hidden_states, tgt_mask=tgt_mask, memory_mask=(memory_mask == 1))
            return self.vertice_map_r(out)

    return Decoder()


def test_faceformer_decoder_compiled_model():
    make = _compiled_model_program(
        _faceformer_decoder, lambda mod, out, y: mod.nn.MSELoss()(out, y),
        lambda mod, i: (data(mod, i, 1, 3, 6), data(mod, i, 1, 3, 6, seed=90), data(mod, i, 1, 3, 6, seed=95)))
    check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
