"""A thirty-eighth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, Hrrsmjd/fourier_neural_operator (a fork of zongyi-li's Fourier Neural Operator
code at its ``torch.fft`` version):

- ``fourier_1d.py`` (at 2e22e97): ``SpectralConv1d`` with ``torch.cfloat`` parameters
  (``torch.rand(..., dtype=torch.cfloat)``), ``torch.fft.rfft``, a complex ``torch.einsum
  ("bix,iox->box")`` written into a slice of a complex ``torch.zeros`` buffer, ``torch.fft.irfft
  (out_ft, n=...)``; the ``MLP`` of 1x1 ``Conv1d``s with ``F.gelu``, ``get_grid`` from
  ``np.linspace``; the training loop (Adam with weight decay over complex and real parameters,
  ``CosineAnnealingLR`` stepped per batch, ``LpLoss(size_average=False)`` of ``utilities3.py``,
  ``F.mse_loss``) and its per-sample test loop writing ``pred[index] = out``;
  ``utilities3.py``'s ``count_params`` (``p.size()+(2,) if p.is_complex()``) and ``LpLoss.abs``.
- ``fourier_2d.py`` (at 9bc9516): ``SpectralConv2d`` (``rfft2``/``irfft2(s=...)``, the low and the
  negative-frequency mode blocks ``out_ft[:, :, -modes1:, :modes2]``), ``F.pad`` of the domain and
  the crop ``x[..., :-padding, :-padding]``, 2-d grids, ``utilities3``'s
  ``UnitGaussianNormalizer`` encode/decode, ``StepLR``.

The image-captioning program of sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning is in
``test_public_programs_round38_caption.py``.

Changes to the programs, the same on both sides: sizes are tiny (grids of 16 and 7x7 points,
widths 8 and 4, 2 Fourier layers in 2-d), parameters are overwritten from numpy after
construction (complex ones with real and imaginary parts), ``.cuda()`` calls are left out, the
loaders do not shuffle, the data are seeded numpy functions in place of the Burgers and Darcy
``.mat`` files, and ``scipy.io.savemat``/timers are left out. ``utilities3.py`` is not in the fork
at that commit; ``LpLoss``, ``count_params`` and ``UnitGaussianNormalizer`` are the upstream
(zongyi-li/fourier_neural_operator) helpers.
"""
import operator
from functools import reduce

import numpy as np
import pytest
from parity import run_both

torch = pytest.importorskip("torch")


def _init(torch, model, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            shape = tuple(p.shape)
            if p.is_complex():
                arr = (rs.uniform(-scale, scale, shape) + 1j * rs.uniform(-scale, scale, shape)).astype(np.complex64)
            else:
                arr = rs.uniform(-scale, scale, shape).astype(np.float32)
            p.copy_(torch.from_numpy(arr))


def _fno(torch):
    nn, F = torch.nn, torch.nn.functional

    class SpectralConv1d(nn.Module):
        def __init__(self, in_channels: int, out_channels: int, modes: int):
            super(SpectralConv1d, self).__init__()
            self.in_channels = in_channels
            self.out_channels = out_channels
            self.modes = modes
            self.scale = (1 / (in_channels*out_channels))
            self.weights = nn.Parameter(self.scale * torch.rand(in_channels, out_channels, self.modes, dtype=torch.cfloat)) ## Tensor

        def compl_mul1d(self, input, weights):
            return torch.einsum("bix,iox->box", input, weights)

        def forward(self, x):
            batchsize = x.shape[0]
            x_ft = torch.fft.rfft(x)
            out_ft = torch.zeros(batchsize, self.out_channels, x.size(-1)//2 + 1,  device=x.device, dtype=torch.cfloat)
            out_ft[:, :, :self.modes] = self.compl_mul1d(x_ft[:, :, :self.modes], self.weights)
            x = torch.fft.irfft(out_ft, n=x.size(-1))
            return x

    class MLP(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels):
            super(MLP, self).__init__()
            self.mlp1 = nn.Conv1d(in_channels, mid_channels, 1)
            self.mlp2 = nn.Conv1d(mid_channels, out_channels, 1)

        def forward(self, x):
            x = self.mlp1(x)
            x = F.gelu(x)
            x = self.mlp2(x)
            return x

    class FNO1d(nn.Module):
        def __init__(self, modes, width):
            super(FNO1d, self).__init__()
            self.modes1 = modes
            self.width = width
            self.padding = 8 # pad the domain if input is non-periodic
            self.p = nn.Linear(2, self.width) # input channel_dim is 2: (u0(x), x)
            self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
            self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
            self.conv2 = SpectralConv1d(self.width, self.width, self.modes1)
            self.conv3 = SpectralConv1d(self.width, self.width, self.modes1)
            self.mlp0 = MLP(self.width, self.width, self.width)
            self.mlp1 = MLP(self.width, self.width, self.width)
            self.mlp2 = MLP(self.width, self.width, self.width)
            self.mlp3 = MLP(self.width, self.width, self.width)
            self.w0 = nn.Conv1d(self.width, self.width, 1)
            self.w1 = nn.Conv1d(self.width, self.width, 1)
            self.w2 = nn.Conv1d(self.width, self.width, 1)
            self.w3 = nn.Conv1d(self.width, self.width, 1)
            self.q = MLP(self.width, 1, self.width*2)  # output channel_dim is 1: u1(x)

        def forward(self, x):
            grid = self.get_grid(x.shape, x.device)
            x = torch.cat((x, grid), dim=-1)
            x = self.p(x)
            x = x.permute(0, 2, 1)
            x1 = self.conv0(x)
            x1 = self.mlp0(x1)
            x2 = self.w0(x)
            x = x1 + x2
            x = F.gelu(x)
            x1 = self.conv1(x)
            x1 = self.mlp1(x1)
            x2 = self.w1(x)
            x = x1 + x2
            x = F.gelu(x)
            x1 = self.conv2(x)
            x1 = self.mlp2(x1)
            x2 = self.w2(x)
            x = x1 + x2
            x = F.gelu(x)
            x1 = self.conv3(x)
            x1 = self.mlp3(x1)
            x2 = self.w3(x)
            x = x1 + x2
            x = self.q(x)
            x = x.permute(0, 2, 1)
            return x

        def get_grid(self, shape, device):
            batchsize, size_x = shape[0], shape[1]
            gridx = torch.tensor(np.linspace(0, 1, size_x), dtype=torch.float)
            gridx = gridx.reshape(1, size_x, 1).repeat([batchsize, 1, 1])
            return gridx.to(device)

    class LpLoss(object):
        def __init__(self, d=2, p=2, size_average=True, reduction=True):
            super(LpLoss, self).__init__()
            assert d > 0 and p > 0
            self.d = d
            self.p = p
            self.reduction = reduction
            self.size_average = size_average

        def abs(self, x, y):
            num_examples = x.size()[0]
            h = 1.0 / (x.size()[1] - 1.0)
            all_norms = (h**(self.d/self.p))*torch.norm(x.view(num_examples,-1) - y.view(num_examples,-1), self.p, 1)
            if self.reduction:
                if self.size_average:
                    return torch.mean(all_norms)
                else:
                    return torch.sum(all_norms)
            return all_norms

        def rel(self, x, y):
            num_examples = x.size()[0]
            diff_norms = torch.norm(x.reshape(num_examples,-1) - y.reshape(num_examples,-1), self.p, 1)
            y_norms = torch.norm(y.reshape(num_examples,-1), self.p, 1)
            if self.reduction:
                if self.size_average:
                    return torch.mean(diff_norms/y_norms)
                else:
                    return torch.sum(diff_norms/y_norms)
            return diff_norms/y_norms

        def __call__(self, x, y):
            return self.rel(x, y)

    def count_params(model):
        c = 0
        for p in list(model.parameters()):
            c += reduce(operator.mul, list(p.size()+(2,) if p.is_complex() else p.size()))
        return c

    return FNO1d, LpLoss, count_params


def test_fno_1d_burgers():
    def program(torch, log):
        F = torch.nn.functional
        FNO1d, LpLoss, count_params = _fno(torch)
        ntrain, ntest, s = 8, 4, 16
        batch_size = 4
        learning_rate = 0.001
        epochs = 2
        iterations = epochs*(ntrain//batch_size)
        modes, width = 4, 8
        rs = np.random.RandomState(0)
        xs = np.linspace(0, 2 * np.pi, s, dtype=np.float32)
        a = rs.normal(0, 1, (ntrain + ntest, 3)).astype(np.float32)
        x_data = torch.from_numpy(a[:, :1] * np.sin(xs) + a[:, 1:2] * np.cos(2 * xs))
        y_data = torch.from_numpy((a[:, :1] * np.sin(xs + 0.3) * 0.8 + a[:, 2:3] * 0.1 + 0.5).astype(np.float32))
        x_train = x_data[:ntrain,:]
        y_train = y_data[:ntrain,:]
        x_test = x_data[-ntest:,:]
        y_test = y_data[-ntest:,:]
        x_train = x_train.reshape(ntrain,s,1)
        x_test = x_test.reshape(ntest,s,1)
        train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=False)
        test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_test, y_test), batch_size=batch_size, shuffle=False)
        model = FNO1d(modes, width).cpu()
        _init(torch, model, 0)
        print(count_params(model))
        log("w dtype", model.conv0.weights.dtype)
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=iterations)
        myloss = LpLoss(size_average=False)
        for ep in range(epochs):
            model.train()
            train_mse = 0
            train_l2 = 0
            for x, y in train_loader:
                x, y = x.cpu(), y.cpu()
                optimizer.zero_grad()
                out = model(x)
                log("out", out)
                mse = F.mse_loss(out.view(batch_size, -1), y.view(batch_size, -1), reduction='mean')
                l2 = myloss(out.view(batch_size, -1), y.view(batch_size, -1))
                l2.backward() # use the l2 relative loss
                log("grad conv0", model.conv0.weights.grad)
                log("grad p", model.p.weight.grad)
                optimizer.step()
                scheduler.step()
                log("w conv3", model.conv3.weights)
                train_mse += mse.item()
                train_l2 += l2.item()
            model.eval()
            test_l2 = 0.0
            with torch.no_grad():
                for x, y in test_loader:
                    x, y = x.cpu(), y.cpu()
                    out = model(x)
                    test_l2 += myloss(out.view(batch_size, -1), y.view(batch_size, -1)).item()
            train_mse /= len(train_loader)
            train_l2 /= ntrain
            test_l2 /= ntest
            print(ep, train_mse, train_l2, test_l2)
            log("lr", scheduler.get_last_lr())
        pred = torch.zeros(y_test.shape)
        index = 0
        test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_test, y_test), batch_size=1, shuffle=False)
        with torch.no_grad():
            for x, y in test_loader:
                test_l2 = 0
                x, y = x.cpu(), y.cpu()
                out = model(x).view(-1)
                pred[index] = out
                test_l2 += myloss(out.view(1, -1), y.view(1, -1)).item()
                print(index, test_l2)
                index = index + 1
        log("pred", pred)
        log("abs", myloss.abs(pred, y_test))

    run_both(program)


# ---- fourier_2d.py ----
def _fno2d(torch):
    nn, F = torch.nn, torch.nn.functional

    class SpectralConv2d(nn.Module):
        def __init__(self, in_channels, out_channels, modes1, modes2):
            super(SpectralConv2d, self).__init__()
            self.in_channels = in_channels
            self.out_channels = out_channels
            self.modes1 = modes1 #Number of Fourier modes to multiply, at most floor(N/2) + 1
            self.modes2 = modes2
            self.scale = (1 / (in_channels * out_channels))
            self.weights1 = nn.Parameter(self.scale * torch.rand(in_channels, out_channels, self.modes1, self.modes2, dtype=torch.cfloat))
            self.weights2 = nn.Parameter(self.scale * torch.rand(in_channels, out_channels, self.modes1, self.modes2, dtype=torch.cfloat))

        def compl_mul2d(self, input, weights):
            return torch.einsum("bixy,ioxy->boxy", input, weights)

        def forward(self, x):
            batchsize = x.shape[0]
            x_ft = torch.fft.rfft2(x)
            out_ft = torch.zeros(batchsize, self.out_channels,  x.size(-2), x.size(-1)//2 + 1, dtype=torch.cfloat, device=x.device)
            out_ft[:, :, :self.modes1, :self.modes2] = \
                self.compl_mul2d(x_ft[:, :, :self.modes1, :self.modes2], self.weights1)
            out_ft[:, :, -self.modes1:, :self.modes2] = \
                self.compl_mul2d(x_ft[:, :, -self.modes1:, :self.modes2], self.weights2)
            x = torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))
            return x

    class MLP(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels):
            super(MLP, self).__init__()
            self.mlp1 = nn.Conv2d(in_channels, mid_channels, 1)
            self.mlp2 = nn.Conv2d(mid_channels, out_channels, 1)

        def forward(self, x):
            x = self.mlp1(x)
            x = F.gelu(x)
            x = self.mlp2(x)
            return x

    class FNO2d(nn.Module):
        def __init__(self, modes1, modes2,  width):
            super(FNO2d, self).__init__()
            self.modes1 = modes1
            self.modes2 = modes2
            self.width = width
            self.padding = 3 # pad the domain if input is non-periodic  (9 in the repository)
            self.p = nn.Linear(3, self.width) # input channel is 3: (a(x, y), x, y)
            self.conv0 = SpectralConv2d(self.width, self.width, self.modes1, self.modes2)
            self.conv1 = SpectralConv2d(self.width, self.width, self.modes1, self.modes2)
            self.mlp0 = MLP(self.width, self.width, self.width)
            self.mlp1 = MLP(self.width, self.width, self.width)
            self.w0 = nn.Conv2d(self.width, self.width, 1)
            self.w1 = nn.Conv2d(self.width, self.width, 1)
            self.q = MLP(self.width, 1, self.width * 4) # output channel is 1: u(x, y)

        def forward(self, x):
            grid = self.get_grid(x.shape, x.device)
            x = torch.cat((x, grid), dim=-1)
            x = self.p(x)
            x = x.permute(0, 3, 1, 2)
            x = F.pad(x, [0,self.padding, 0,self.padding])
            x1 = self.conv0(x)
            x1 = self.mlp0(x1)
            x2 = self.w0(x)
            x = x1 + x2
            x = F.gelu(x)
            x1 = self.conv1(x)
            x1 = self.mlp1(x1)
            x2 = self.w1(x)
            x = x1 + x2
            x = x[..., :-self.padding, :-self.padding]
            x = self.q(x)
            x = x.permute(0, 2, 3, 1)
            return x

        def get_grid(self, shape, device):
            batchsize, size_x, size_y = shape[0], shape[1], shape[2]
            gridx = torch.tensor(np.linspace(0, 1, size_x), dtype=torch.float)
            gridx = gridx.reshape(1, size_x, 1, 1).repeat([batchsize, 1, size_y, 1])
            gridy = torch.tensor(np.linspace(0, 1, size_y), dtype=torch.float)
            gridy = gridy.reshape(1, 1, size_y, 1).repeat([batchsize, size_x, 1, 1])
            return torch.cat((gridx, gridy), dim=-1).to(device)

    class UnitGaussianNormalizer(object):
        def __init__(self, x, eps=0.00001):
            super(UnitGaussianNormalizer, self).__init__()
            self.mean = torch.mean(x, 0)
            self.std = torch.std(x, 0)
            self.eps = eps

        def encode(self, x):
            x = (x - self.mean) / (self.std + self.eps)
            return x

        def decode(self, x, sample_idx=None):
            if sample_idx is None:
                std = self.std + self.eps # n
                mean = self.mean
            else:
                if len(self.mean.shape) == len(sample_idx[0].shape):
                    std = self.std[sample_idx] + self.eps  # batch*n
                    mean = self.mean[sample_idx]
                if len(self.mean.shape) > len(sample_idx[0].shape):
                    std = self.std[:,sample_idx]+ self.eps # T*batch*n
                    mean = self.mean[:,sample_idx]
            x = (x * std) + mean
            return x

    return FNO2d, UnitGaussianNormalizer


def test_fno_2d_darcy():
    def program(torch, log):
        FNO2d, UnitGaussianNormalizer = _fno2d(torch)
        _, LpLoss, count_params = _fno(torch)
        ntrain, ntest, batch_size, s = 4, 2, 2, 7
        modes, width = 3, 4
        rs = np.random.RandomState(3)
        coeff = torch.from_numpy(np.where(rs.uniform(size=(ntrain + ntest, s, s)) > 0.5, 12.0, 3.0).astype(np.float32))
        sol = torch.from_numpy(rs.uniform(0, 0.01, (ntrain + ntest, s, s)).astype(np.float32))
        x_train, y_train = coeff[:ntrain], sol[:ntrain]
        x_test, y_test = coeff[ntrain:], sol[ntrain:]
        x_normalizer = UnitGaussianNormalizer(x_train)
        x_train = x_normalizer.encode(x_train)
        x_test = x_normalizer.encode(x_test)
        y_normalizer = UnitGaussianNormalizer(y_train)
        y_train = y_normalizer.encode(y_train)
        x_train = x_train.reshape(ntrain,s,s,1)
        x_test = x_test.reshape(ntest,s,s,1)
        train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=batch_size, shuffle=False)
        test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_test, y_test), batch_size=batch_size, shuffle=False)
        model = FNO2d(modes, modes, width)
        _init(torch, model, 1)
        print(count_params(model))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        myloss = LpLoss(size_average=False)
        for ep in range(2):
            model.train()
            train_l2 = 0
            for x, y in train_loader:
                optimizer.zero_grad()
                out = model(x).reshape(batch_size, s, s)
                out = y_normalizer.decode(out)
                y = y_normalizer.decode(y)
                loss = myloss(out.view(batch_size,-1), y.view(batch_size,-1))
                loss.backward()
                log("out", out)
                log("g1", model.conv0.weights1.grad)
                log("g2", model.conv1.weights2.grad)
                optimizer.step()
                train_l2 += loss.item()
            scheduler.step()
            model.eval()
            test_l2 = 0.0
            with torch.no_grad():
                for x, y in test_loader:
                    out = model(x).reshape(batch_size, s, s)
                    out = y_normalizer.decode(out)
                    test_l2 += myloss(out.view(batch_size,-1), y.view(batch_size,-1)).item()
            train_l2/= ntrain
            test_l2 /= ntest
            print(ep, train_l2, test_l2)
        log("w", model.conv1.weights1)

    run_both(program)
