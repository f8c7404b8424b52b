"""A fifteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round14.py``. This round favours domains the earlier rounds did not
touch: audio (ParallelWaveGAN's multi-resolution ``torch.stft`` loss, Conv-TasNet's gLN/cLN
temporal conv net, ``index_add_`` overlap-and-add and permutation-invariant SI-SNR loss with
``einsum`` over one-hot permutations), point clouds (PointNet's learned 3x3/kxk transforms
through ``bmm`` and a max-pool over points), tabular models (TabNet's sparsemax/entmax15 custom
``autograd.Function``s that sort, ``cumsum`` and ``gather`` and edit their input in place), time
series (N-BEATS' trend/seasonality bases built from numpy, a ``ParameterList`` that shadows
``Module.parameters``), recommendation (NCF's NeuMF embeddings) and implicit neural
representations (SIREN's sine layers with ``autograd.grad(create_graph=True)`` gradients and
Laplacians in the loss). Each keeps its program's code at tiny sizes, with numpy-seeded data and
parameters (``init_params``/``randn``) in place of downloads and random streams; where a
program's own code had to change, the comment above its test says how and why. A ``from
torch... import`` inside a program would import the real torch on the tracegrad side too, so
such imports are written as attribute lookups on the ``torch`` argument.
"""
import contextlib
import io
import math
from itertools import permutations

import numpy as np
import pytest

from parity import init_params, log_outcome, randn, run_both

torch = pytest.importorskip("torch")


# kan-bayashi/ParallelWaveGAN parallel_wavegan/losses/stft_loss.py (MultiResolutionSTFTLoss:
# spectral convergence (Frobenius norm over frequency) plus log-magnitude L1, over three
# (fft, hop, window) resolutions with ``getattr(torch, "hann_window")`` windows). The stored
# version calls ``torch.stft`` without ``return_complex`` and takes ``[..., 0]``/``[..., 1]``,
# an error since torch 2.0 (logged here as such); the program runs the repository's later form,
# ``return_complex=True`` then ``.real``/``.imag``. Resolutions (1024, 2048, 512) -> (16, 32, 8),
# a 64-sample signal, a learnable waveform fitted for 2 Adam steps.
def test_parallel_wavegan_multi_resolution_stft_loss():
    def program(torch, log):
        def stft(x, fft_size, hop_size, window_length, window):
            x_stft = torch.stft(x, fft_size, hop_size, window_length, window, return_complex=True)
            real = x_stft.real
            imag = x_stft.imag
            mag = torch.sqrt(real ** 2 + imag ** 2).transpose(2, 1)
            return torch.clamp(mag, min=1e-9)

        class SpectralConvergengeLoss(torch.nn.Module):
            def __init__(self):
                super(SpectralConvergengeLoss, self).__init__()

            def forward(self, x_mag, y_mag):
                numerator = torch.norm(y_mag - x_mag, p='fro', dim=2).view(-1)
                denominator = torch.norm(y_mag, p='fro', dim=2).view(-1)

                return torch.mean(numerator / denominator)

        class LogSTFTMagnitudeLoss(torch.nn.Module):
            def __init__(self):
                super(LogSTFTMagnitudeLoss, self).__init__()

            def forward(self, x_mag, y_mag):
                n_bins = x_mag.size(2)
                x_lmag = torch.log(x_mag)
                y_lmag = torch.log(y_mag)

                return torch.mean(torch.norm(y_lmag - x_lmag, p=1, dim=2) / n_bins)

        class STFTLoss(torch.nn.Module):
            def __init__(self, fft_size=1024, shift_size=120, window_length=600, window_type='hann_window'):
                super(STFTLoss, self).__init__()
                self.fft_size = fft_size
                self.shift_size = shift_size
                self.window_length = window_length
                self.window = getattr(torch, window_type)(window_length)
                self.spectral_convergenge_loss = SpectralConvergengeLoss()
                self.log_stft_magnitude_loss = LogSTFTMagnitudeLoss()

            def forward(self, x, y):
                x_mag = stft(x, self.fft_size, self.shift_size, self.window_length, self.window)
                y_mag = stft(y, self.fft_size, self.shift_size, self.window_length, self.window)
                sc_loss = self.spectral_convergenge_loss(x_mag, y_mag)
                mag_loss = self.log_stft_magnitude_loss(x_mag, y_mag)

                return sc_loss + mag_loss

        class MultiResolutionSTFTLoss(torch.nn.Module):
            def __init__(self,
                         fft_sizes=[1024, 2048, 512],
                         shift_sizes=[120, 240, 50],
                         window_lengths=[600, 1200, 240],
                         window_type='hann_window'):
                super(MultiResolutionSTFTLoss, self).__init__()
                assert len(fft_sizes) == len(shift_sizes) == len(window_lengths)
                self.stft_losses = torch.nn.ModuleList()
                for fs, ss, wl in zip(fft_sizes, shift_sizes, window_lengths):
                    self.stft_losses += [STFTLoss(fs, ss, wl, window_type)]

            def forward(self, x, y):
                loss = 0.0
                for f in self.stft_losses:
                    loss += f(x, y)

                return loss / len(self.stft_losses)

        y = randn(torch, (2, 64), 1)
        x = randn(torch, (2, 64), 2, requires_grad=True)
        crit = MultiResolutionSTFTLoss([16, 32, 8], [4, 8, 2], [12, 24, 6])
        log("n losses", len(crit.stft_losses))
        log("window", crit.stft_losses[0].window)
        opt = torch.optim.Adam([x], lr=0.01)
        for step in range(2):
            loss = crit(x, y)
            opt.zero_grad()
            loss.backward()
            log("loss", loss)
            log("grad", x.grad)
            opt.step()
        log("x", x)
        # the stored version's call: a real input needs return_complex given explicitly
        log_outcome(log, "stft without return_complex", lambda: torch.stft(y, 16, 4, 12, torch.hann_window(12)))
        log("stft shape", tuple(torch.stft(y, 16, 4, 12, torch.hann_window(12), return_complex=True).shape))

    run_both(program)


# fxia22/pointnet.pytorch pointnet/model.py (PointNetCls with feature_transform=True: STN3d and
# STNkd learn 3x3 and 64x64 transforms applied with ``bmm`` to transposed point features, an
# identity from ``torch.from_numpy(np.eye(k))`` through ``Variable``, a max over points, then
# ``feature_transform_regularizer``'s ``norm(dim=(1, 2))``); the widths as written, 4 clouds of
# 6 points, the classifier's Dropout(p=0.3) set to p=0 after construction (it draws from the
# random stream), NLL loss plus 0.001 times the regularizer as in train_classification.py,
# 1 SGD step in place of Adam (Adam's first step turns float32 rounding of a near-zero gradient
# into a full lr-sized sign flip) and an eval-mode forward
def test_pointnet_cls_feature_transform():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Variable = torch.autograd.Variable

        class STN3d(nn.Module):
            def __init__(self):
                super(STN3d, self).__init__()
                self.conv1 = torch.nn.Conv1d(3, 64, 1)
                self.conv2 = torch.nn.Conv1d(64, 128, 1)
                self.conv3 = torch.nn.Conv1d(128, 1024, 1)
                self.fc1 = nn.Linear(1024, 512)
                self.fc2 = nn.Linear(512, 256)
                self.fc3 = nn.Linear(256, 9)
                self.relu = nn.ReLU()

                self.bn1 = nn.BatchNorm1d(64)
                self.bn2 = nn.BatchNorm1d(128)
                self.bn3 = nn.BatchNorm1d(1024)
                self.bn4 = nn.BatchNorm1d(512)
                self.bn5 = nn.BatchNorm1d(256)

            def forward(self, x):
                batchsize = x.size()[0]
                x = F.relu(self.bn1(self.conv1(x)))
                x = F.relu(self.bn2(self.conv2(x)))
                x = F.relu(self.bn3(self.conv3(x)))
                x = torch.max(x, 2, keepdim=True)[0]
                x = x.view(-1, 1024)

                x = F.relu(self.bn4(self.fc1(x)))
                x = F.relu(self.bn5(self.fc2(x)))
                x = self.fc3(x)

                iden = Variable(torch.from_numpy(np.array([1,0,0,0,1,0,0,0,1]).astype(np.float32))).view(1,9).repeat(batchsize,1)
                if x.is_cuda:
                    iden = iden.cuda()
                x = x + iden
                x = x.view(-1, 3, 3)
                return x

        class STNkd(nn.Module):
            def __init__(self, k=64):
                super(STNkd, self).__init__()
                self.conv1 = torch.nn.Conv1d(k, 64, 1)
                self.conv2 = torch.nn.Conv1d(64, 128, 1)
                self.conv3 = torch.nn.Conv1d(128, 1024, 1)
                self.fc1 = nn.Linear(1024, 512)
                self.fc2 = nn.Linear(512, 256)
                self.fc3 = nn.Linear(256, k*k)
                self.relu = nn.ReLU()

                self.bn1 = nn.BatchNorm1d(64)
                self.bn2 = nn.BatchNorm1d(128)
                self.bn3 = nn.BatchNorm1d(1024)
                self.bn4 = nn.BatchNorm1d(512)
                self.bn5 = nn.BatchNorm1d(256)

                self.k = k

            def forward(self, x):
                batchsize = x.size()[0]
                x = F.relu(self.bn1(self.conv1(x)))
                x = F.relu(self.bn2(self.conv2(x)))
                x = F.relu(self.bn3(self.conv3(x)))
                x = torch.max(x, 2, keepdim=True)[0]
                x = x.view(-1, 1024)

                x = F.relu(self.bn4(self.fc1(x)))
                x = F.relu(self.bn5(self.fc2(x)))
                x = self.fc3(x)

                iden = Variable(torch.from_numpy(np.eye(self.k).flatten().astype(np.float32))).view(1,self.k*self.k).repeat(batchsize,1)
                if x.is_cuda:
                    iden = iden.cuda()
                x = x + iden
                x = x.view(-1, self.k, self.k)
                return x

        class PointNetfeat(nn.Module):
            def __init__(self, global_feat = True, feature_transform = False):
                super(PointNetfeat, self).__init__()
                self.stn = STN3d()
                self.conv1 = torch.nn.Conv1d(3, 64, 1)
                self.conv2 = torch.nn.Conv1d(64, 128, 1)
                self.conv3 = torch.nn.Conv1d(128, 1024, 1)
                self.bn1 = nn.BatchNorm1d(64)
                self.bn2 = nn.BatchNorm1d(128)
                self.bn3 = nn.BatchNorm1d(1024)
                self.global_feat = global_feat
                self.feature_transform = feature_transform
                if self.feature_transform:
                    self.fstn = STNkd(k=64)

            def forward(self, x):
                n_pts = x.size()[2]
                trans = self.stn(x)
                x = x.transpose(2, 1)
                x = torch.bmm(x, trans)
                x = x.transpose(2, 1)
                x = F.relu(self.bn1(self.conv1(x)))

                if self.feature_transform:
                    trans_feat = self.fstn(x)
                    x = x.transpose(2,1)
                    x = torch.bmm(x, trans_feat)
                    x = x.transpose(2,1)
                else:
                    trans_feat = None

                pointfeat = x
                x = F.relu(self.bn2(self.conv2(x)))
                x = self.bn3(self.conv3(x))
                x = torch.max(x, 2, keepdim=True)[0]
                x = x.view(-1, 1024)
                if self.global_feat:
                    return x, trans, trans_feat
                else:
                    x = x.view(-1, 1024, 1).repeat(1, 1, n_pts)
                    return torch.cat([x, pointfeat], 1), trans, trans_feat

        class PointNetCls(nn.Module):
            def __init__(self, k=2, feature_transform=False):
                super(PointNetCls, self).__init__()
                self.feature_transform = feature_transform
                self.feat = PointNetfeat(global_feat=True, feature_transform=feature_transform)
                self.fc1 = nn.Linear(1024, 512)
                self.fc2 = nn.Linear(512, 256)
                self.fc3 = nn.Linear(256, k)
                self.dropout = nn.Dropout(p=0.3)
                self.bn1 = nn.BatchNorm1d(512)
                self.bn2 = nn.BatchNorm1d(256)
                self.relu = nn.ReLU()

            def forward(self, x):
                x, trans, trans_feat = self.feat(x)
                x = F.relu(self.bn1(self.fc1(x)))
                x = F.relu(self.bn2(self.dropout(self.fc2(x))))
                x = self.fc3(x)
                return F.log_softmax(x, dim=1), trans, trans_feat

        def feature_transform_regularizer(trans):
            d = trans.size()[1]
            batchsize = trans.size()[0]
            I = torch.eye(d)[None, :, :]
            if trans.is_cuda:
                I = I.cuda()
            loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2,1)) - I, dim=(1,2)))
            return loss

        classifier = init_params(torch, PointNetCls(k=3, feature_transform=True), 0, scale=0.05)
        classifier.dropout.p = 0.0
        optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01, momentum=0.9)
        points = randn(torch, (4, 3, 6), 1)
        target = torch.tensor([0, 2, 1, 2])
        classifier = classifier.train()
        optimizer.zero_grad()
        pred, trans, trans_feat = classifier(points)
        loss = F.nll_loss(pred, target)
        reg = feature_transform_regularizer(trans_feat)
        loss += reg * 0.001
        loss.backward()
        optimizer.step()
        log("pred", pred)
        log("trans", trans)
        log("reg", reg)
        log("loss", loss)
        for name in ("feat.stn.fc3.weight", "feat.fstn.fc3.bias", "feat.conv1.weight", "fc3.weight"):
            p = dict(classifier.named_parameters())[name]
            log("grad " + name, p.grad)
            log(name, p)
        log("running_mean", classifier.feat.bn3.running_mean)
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.data).cpu().sum()
        log("correct", correct.item())
        classifier = classifier.eval()
        with torch.no_grad():
            log("eval pred", classifier(points)[0])

    run_both(program)


# dreamquark-ai/tabnet pytorch_tabnet/sparsemax.py (SparsemaxFunction, Entmax15Function and
# Entmoid15: custom ``autograd.Function``s whose forward subtracts the max from its input in
# place, sorts descending, ``cumsum``s, builds ``_make_ix_like`` ranks by ``view``/``transpose``
# and ``gather``s the threshold; hand-written backwards with boolean-mask assignment,
# ``torch.where`` and ``masked_fill_``/``relu(inplace=True)``), as TabNet's attentive
# transformer uses them: a Linear layer's logits times prior scales through each, trained for 2
# SGD steps; also dim=0/dim=1 and ``nn.Module`` wrappers
def test_tabnet_sparsemax_entmax():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Function = torch.autograd.Function

        def _make_ix_like(input, dim=0):
            d = input.size(dim)
            rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
            view = [1] * input.dim()
            view[0] = -1
            return rho.view(view).transpose(0, dim)

        class SparsemaxFunction(Function):
            @staticmethod
            def forward(ctx, input, dim=-1):
                ctx.dim = dim
                max_val, _ = input.max(dim=dim, keepdim=True)
                input -= max_val  # same numerical stability trick as for softmax
                tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
                output = torch.clamp(input - tau, min=0)
                ctx.save_for_backward(supp_size, output)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                supp_size, output = ctx.saved_tensors
                dim = ctx.dim
                grad_input = grad_output.clone()
                grad_input[output == 0] = 0

                v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze()
                v_hat = v_hat.unsqueeze(dim)
                grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
                return grad_input, None

            @staticmethod
            def _threshold_and_support(input, dim=-1):
                input_srt, _ = torch.sort(input, descending=True, dim=dim)
                input_cumsum = input_srt.cumsum(dim) - 1
                rhos = _make_ix_like(input, dim)
                support = rhos * input_srt > input_cumsum

                support_size = support.sum(dim=dim).unsqueeze(dim)
                tau = input_cumsum.gather(dim, support_size - 1)
                tau /= support_size.to(input.dtype)
                return tau, support_size

        sparsemax = SparsemaxFunction.apply

        class Sparsemax(nn.Module):
            def __init__(self, dim=-1):
                self.dim = dim
                super(Sparsemax, self).__init__()

            def forward(self, input):
                return sparsemax(input, self.dim)

        class Entmax15Function(Function):
            @staticmethod
            def forward(ctx, input, dim=-1):
                ctx.dim = dim

                max_val, _ = input.max(dim=dim, keepdim=True)
                input = input - max_val  # same numerical stability trick as for softmax
                input = input / 2  # divide by 2 to solve actual Entmax

                tau_star, _ = Entmax15Function._threshold_and_support(input, dim)
                output = torch.clamp(input - tau_star, min=0) ** 2
                ctx.save_for_backward(output)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                Y, = ctx.saved_tensors
                gppr = Y.sqrt()  # = 1 / g'' (Y)
                dX = grad_output * gppr
                q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
                q = q.unsqueeze(ctx.dim)
                dX -= q * gppr
                return dX, None

            @staticmethod
            def _threshold_and_support(input, dim=-1):
                Xsrt, _ = torch.sort(input, descending=True, dim=dim)

                rho = _make_ix_like(input, dim)
                mean = Xsrt.cumsum(dim) / rho
                mean_sq = (Xsrt ** 2).cumsum(dim) / rho
                ss = rho * (mean_sq - mean ** 2)
                delta = (1 - ss) / rho

                delta_nz = torch.clamp(delta, 0)
                tau = mean - torch.sqrt(delta_nz)

                support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
                tau_star = tau.gather(dim, support_size - 1)
                return tau_star, support_size

        class Entmoid15(Function):
            """ A highly optimized equivalent of labda x: Entmax15([x, 0]) """

            @staticmethod
            def forward(ctx, input):
                output = Entmoid15._forward(input)
                ctx.save_for_backward(output)
                return output

            @staticmethod
            def _forward(input):
                input, is_pos = abs(input), input >= 0
                tau = (input + torch.sqrt(F.relu(8 - input ** 2))) / 2
                tau.masked_fill_(tau <= input, 2.0)
                y_neg = 0.25 * F.relu(tau - input, inplace=True) ** 2
                return torch.where(is_pos, 1 - y_neg, y_neg)

            @staticmethod
            def backward(ctx, grad_output):
                return Entmoid15._backward(ctx.saved_tensors[0], grad_output)

            @staticmethod
            def _backward(output, grad_output):
                gppr0, gppr1 = output.sqrt(), (1 - output).sqrt()
                grad_input = grad_output * gppr0
                q = grad_input / (gppr0 + gppr1)
                grad_input -= q * gppr0
                return grad_input

        entmax15 = Entmax15Function.apply
        entmoid15 = Entmoid15.apply

        class Entmax15(nn.Module):
            def __init__(self, dim=-1):
                self.dim = dim
                super(Entmax15, self).__init__()

            def forward(self, input):
                return entmax15(input, self.dim)

        fc = init_params(torch, nn.Linear(5, 6), 0, scale=0.8)
        opt = torch.optim.SGD(fc.parameters(), lr=0.1)
        x = randn(torch, (4, 5), 1)
        priors = torch.ones(4, 6)
        target = randn(torch, (4, 6), 2).abs() / 3
        for step in range(2):
            a = fc(x)
            mask = Sparsemax(dim=-1)(a * priors)
            ent = Entmax15(dim=-1)(a)
            sig = entmoid15(a)
            loss = ((mask - target) ** 2).sum() + ((ent - target) ** 2).sum() + (sig * target).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("mask", mask)
            log("entmax", ent)
            log("entmoid", sig)
            log("loss", loss)
            log("grad w", fc.weight.grad)
        log("rows sum to one", mask.sum(-1))
        z = randn(torch, (3, 4), 3, requires_grad=True)
        zin = z * 2
        s0 = sparsemax(zin, 0)
        log("sparsemax dim0", s0)
        log("zin edited in place", zin)
        log("zin version bumped", zin._version > 0)
        (s0 * torch.arange(12.).view(3, 4)).sum().backward()
        log("z.grad dim0", z.grad)
        log("entmax dim0", entmax15(z.detach(), 0))

    run_both(program)


# philipperemy/n-beats nbeats_pytorch/model.py (NBeatsNet: stacks kept in plain Python lists
# whose blocks' parameters are gathered into ``self.parameters = nn.ParameterList(...)``, an
# attribute that shadows ``Module.parameters``; trend and seasonality bases built with
# ``torch.tensor`` from lists of numpy arrays; ``torch.zeros(size=...)`` forecasts; the blocks'
# ``__str__`` printed at construction). hidden_layer_units 256 -> 8, nb_blocks_per_stack 3 -> 2,
# backcast 10 / forecast 5 as written, the trend+seasonality and generic stacks, 2 Adam steps of
# ``mse_loss`` as ``fit`` takes them (the optimizer built on ``self.parameters()`` as
# ``compile`` builds it). The block
# reprs end in ``id(self)``, so construction's printout is captured and logged without the ids.
def test_nbeats_trend_seasonality_generic():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        mse_loss = F.mse_loss

        class NBeatsNet(nn.Module):
            SEASONALITY_BLOCK = 'seasonality'
            TREND_BLOCK = 'trend'
            GENERIC_BLOCK = 'generic'

            def __init__(self,
                         device=torch.device('cpu'),
                         stack_types=(TREND_BLOCK, SEASONALITY_BLOCK),
                         nb_blocks_per_stack=3,
                         forecast_length=5,
                         backcast_length=10,
                         thetas_dim=(4, 8),
                         share_weights_in_stack=False,
                         hidden_layer_units=256,
                         nb_harmonics=None):
                super(NBeatsNet, self).__init__()
                self.forecast_length = forecast_length
                self.backcast_length = backcast_length
                self.hidden_layer_units = hidden_layer_units
                self.nb_blocks_per_stack = nb_blocks_per_stack
                self.share_weights_in_stack = share_weights_in_stack
                self.nb_harmonics = nb_harmonics
                self.stack_types = stack_types
                self.stacks = []
                self.thetas_dim = thetas_dim
                self.parameters = []
                self.device = device
                print('| N-Beats')
                for stack_id in range(len(self.stack_types)):
                    self.stacks.append(self.create_stack(stack_id))
                self.parameters = nn.ParameterList(self.parameters)
                self.to(self.device)
                self._loss = None
                self._opt = None

            def create_stack(self, stack_id):
                stack_type = self.stack_types[stack_id]
                print(f'| --  Stack {stack_type.title()} (#{stack_id}) (share_weights_in_stack={self.share_weights_in_stack})')
                blocks = []
                for block_id in range(self.nb_blocks_per_stack):
                    block_init = NBeatsNet.select_block(stack_type)
                    if self.share_weights_in_stack and block_id != 0:
                        block = blocks[-1]  # pick up the last one when we share weights.
                    else:
                        block = block_init(self.hidden_layer_units, self.thetas_dim[stack_id],
                                           self.device, self.backcast_length, self.forecast_length, self.nb_harmonics)
                        self.parameters.extend(block.parameters())
                    print(f'     | -- {block}')
                    blocks.append(block)
                return blocks

            @staticmethod
            def select_block(block_type):
                if block_type == NBeatsNet.SEASONALITY_BLOCK:
                    return SeasonalityBlock
                elif block_type == NBeatsNet.TREND_BLOCK:
                    return TrendBlock
                else:
                    return GenericBlock

            def forward(self, backcast):
                backcast = squeeze_last_dim(backcast)
                forecast = torch.zeros(size=(backcast.size()[0], self.forecast_length,))  # maybe batch size here.
                for stack_id in range(len(self.stacks)):
                    for block_id in range(len(self.stacks[stack_id])):
                        b, f = self.stacks[stack_id][block_id](backcast)
                        backcast = backcast.to(self.device) - b
                        forecast = forecast.to(self.device) + f
                return backcast, forecast

        def squeeze_last_dim(tensor):
            if len(tensor.shape) == 3 and tensor.shape[-1] == 1:  # (128, 10, 1) => (128, 10).
                return tensor[..., 0]
            return tensor

        def seasonality_model(thetas, t, device):
            p = thetas.size()[-1]
            assert p <= thetas.shape[1], 'thetas_dim is too big.'
            p1, p2 = (p // 2, p // 2) if p % 2 == 0 else (p // 2, p // 2 + 1)
            s1 = torch.tensor([np.cos(2 * np.pi * i * t) for i in range(p1)]).float()  # H/2-1
            s2 = torch.tensor([np.sin(2 * np.pi * i * t) for i in range(p2)]).float()
            S = torch.cat([s1, s2])
            return thetas.mm(S.to(device))

        def trend_model(thetas, t, device):
            p = thetas.size()[-1]
            assert p <= 4, 'thetas_dim is too big.'
            T = torch.tensor([t ** i for i in range(p)]).float()
            return thetas.mm(T.to(device))

        def linear_space(backcast_length, forecast_length):
            ls = np.arange(-backcast_length, forecast_length, 1) / forecast_length
            b_ls = ls[:backcast_length]
            f_ls = ls[backcast_length:]
            return b_ls, f_ls

        class Block(nn.Module):
            def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, share_thetas=False,
                         nb_harmonics=None):
                super(Block, self).__init__()
                self.units = units
                self.thetas_dim = thetas_dim
                self.backcast_length = backcast_length
                self.forecast_length = forecast_length
                self.share_thetas = share_thetas
                self.fc1 = nn.Linear(backcast_length, units)
                self.fc2 = nn.Linear(units, units)
                self.fc3 = nn.Linear(units, units)
                self.fc4 = nn.Linear(units, units)
                self.device = device
                self.backcast_linspace, self.forecast_linspace = linear_space(backcast_length, forecast_length)
                if share_thetas:
                    self.theta_f_fc = self.theta_b_fc = nn.Linear(units, thetas_dim, bias=False)
                else:
                    self.theta_b_fc = nn.Linear(units, thetas_dim, bias=False)
                    self.theta_f_fc = nn.Linear(units, thetas_dim, bias=False)

            def forward(self, x):
                x = squeeze_last_dim(x)
                x = F.relu(self.fc1(x.to(self.device)))
                x = F.relu(self.fc2(x))
                x = F.relu(self.fc3(x))
                x = F.relu(self.fc4(x))
                return x

            def __str__(self):
                block_type = type(self).__name__
                return f'{block_type}(units={self.units}, thetas_dim={self.thetas_dim}, ' \
                       f'backcast_length={self.backcast_length}, forecast_length={self.forecast_length}, ' \
                       f'share_thetas={self.share_thetas}) at @{id(self)}'

        class SeasonalityBlock(Block):
            def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
                if nb_harmonics:
                    super(SeasonalityBlock, self).__init__(units, nb_harmonics, device, backcast_length,
                                                           forecast_length, share_thetas=True)
                else:
                    super(SeasonalityBlock, self).__init__(units, forecast_length, device, backcast_length,
                                                           forecast_length, share_thetas=True)

            def forward(self, x):
                x = super(SeasonalityBlock, self).forward(x)
                backcast = seasonality_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
                forecast = seasonality_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
                return backcast, forecast

        class TrendBlock(Block):
            def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
                super(TrendBlock, self).__init__(units, thetas_dim, device, backcast_length,
                                                 forecast_length, share_thetas=True)

            def forward(self, x):
                x = super(TrendBlock, self).forward(x)
                backcast = trend_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
                forecast = trend_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
                return backcast, forecast

        class GenericBlock(Block):
            def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, nb_harmonics=None):
                super(GenericBlock, self).__init__(units, thetas_dim, device, backcast_length, forecast_length)

                self.backcast_fc = nn.Linear(thetas_dim, backcast_length)
                self.forecast_fc = nn.Linear(thetas_dim, forecast_length)

            def forward(self, x):
                x = super(GenericBlock, self).forward(x)

                theta_b = self.theta_b_fc(x)
                theta_f = self.theta_f_fc(x)

                backcast = self.backcast_fc(theta_b)  # generic. 3.3.
                forecast = self.forecast_fc(theta_f)  # generic. 3.3.

                return backcast, forecast

        import re
        for seed, kw in ((0, {}), (1, {"stack_types": (NBeatsNet.GENERIC_BLOCK,), "thetas_dim": (3,)})):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                net = NBeatsNet(nb_blocks_per_stack=2, hidden_layer_units=8, **kw)
            log("printed", re.sub(r"@\d+", "@ID", buf.getvalue()))
            # the ParameterList is registered as the submodule "parameters"; the class's method
            # still wins the attribute lookup, which is why ``compile`` calls self.parameters()
            log("parameters is", type(net.parameters).__name__)
            log("submodules", [n for n, _ in net.named_children()])
            log("named", [n for n, _ in net.named_parameters()][:3])
            log("n params", len(list(net.parameters())))
            log("list len", len(net._modules["parameters"]))
            init_params(torch, net, seed)
            opt = optim.Adam(lr=1e-2, params=net.parameters())
            x = randn(torch, (3, 10, 1), 2 + seed)
            y = randn(torch, (3, 5, 1), 4 + seed)
            for step in range(2):
                opt.zero_grad()
                backcast, forecast = net(x)
                loss = mse_loss(forecast, squeeze_last_dim(y))
                loss.backward()
                opt.step()
                log("loss", loss)
                log("forecast", forecast)
                log("backcast", backcast)
            log("grads", [p.grad for p in net.parameters()])
            net.eval()
            with torch.no_grad():
                log("eval forecast", net(x)[1])

    run_both(program)
