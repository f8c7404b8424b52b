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
Laplacians in the loss), hyperbolic embeddings (poincare-embeddings' sparse gradients rescaled
through ``_indices()``/``_values()`` by a Riemannian SGD ``Optimizer`` subclass), matrix
factorisation (torchmf's legacy ``size_average`` loss and in-place broadcast errors), CTR
prediction (DeepFM's per-field embeddings and its ``fit``/``check_accuracy`` loop), sets
(DeepSets' permutation-equivariant layers and printed module reprs), a three-optimizer GAN
(InfoGAN over ``itertools.chain`` of two models). Each keeps its program's code at tiny sizes, with numpy-seeded data and
parameters (``init_params``/``randn``) in place of downloads and random streams; where a
program's own code had to change, the comment above its test says how and why. A ``from
torch... import`` inside a program would import the real torch on the tracegrad side too, so
such imports are written as attribute lookups on the ``torch`` argument.
"""
import contextlib
import importlib
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
# ``__str__`` printed at construction). hidden_layer_units 256 -> 8, nb_blocks_per_stack 3 -> 1
# (the trend stack's backcast still feeds the seasonality stack; each block adds a dozen
# parameters to Adam's fused programs, the costliest compilations here),
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
                net = NBeatsNet(nb_blocks_per_stack=1, hidden_layer_units=8, **kw)
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


# guoyang9/NCF model.py (NCF as 'NeuMF-end': GMF and MLP user/item embeddings, an MLP tower of
# Dropout/Linear/ReLU halving ``factor_num * 2 ** num_layers``, ``_init_weight_``'s normal_/
# xavier_uniform_/kaiming_uniform_(a=1, nonlinearity='sigmoid') and ``bias.data.zero_()``) and
# its 'NeuMF-pre' branch copying pretrained GMF/MLP weights through ``weight.data.copy_`` and a
# ``torch.cat`` of the two predict layers; main.py's BCEWithLogitsLoss on implicit feedback.
# 7 users, 9 items, factor_num 4, 2 layers, dropout 0.0 (it draws from the random stream); the
# random initialisation is replaced by ``init_params`` after construction (its draws come from
# the random stream), 2 Adam steps on 8 (user, item, label) triples
def test_ncf_neumf_end_and_pretrained():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class NCF(nn.Module):
        	def __init__(self, user_num, item_num, factor_num, num_layers,
        					dropout, model, GMF_model=None, MLP_model=None):
        		super(NCF, self).__init__()
        		self.dropout = dropout
        		self.model = model
        		self.GMF_model = GMF_model
        		self.MLP_model = MLP_model

        		self.embed_user_GMF = nn.Embedding(user_num, factor_num)
        		self.embed_item_GMF = nn.Embedding(item_num, factor_num)
        		self.embed_user_MLP = nn.Embedding(
        				user_num, factor_num * (2 ** (num_layers - 1)))
        		self.embed_item_MLP = nn.Embedding(
        				item_num, factor_num * (2 ** (num_layers - 1)))

        		MLP_modules = []
        		for i in range(num_layers):
        			input_size = factor_num * (2 ** (num_layers - i))
        			MLP_modules.append(nn.Dropout(p=self.dropout))
        			MLP_modules.append(nn.Linear(input_size, input_size//2))
        			MLP_modules.append(nn.ReLU())
        		self.MLP_layers = nn.Sequential(*MLP_modules)

        		if self.model in ['MLP', 'GMF']:
        			predict_size = factor_num 
        		else:
        			predict_size = factor_num * 2
        		self.predict_layer = nn.Linear(predict_size, 1)
        		
        		self._init_weight_()

        	def _init_weight_(self):
        		""" We leave the weights initialization here. """
        		if not self.model == 'NeuMF-pre':
        			nn.init.normal_(self.embed_user_GMF.weight, std=0.01)
        			nn.init.normal_(self.embed_user_MLP.weight, std=0.01)
        			nn.init.normal_(self.embed_item_GMF.weight, std=0.01)
        			nn.init.normal_(self.embed_item_MLP.weight, std=0.01)

        			for m in self.MLP_layers:
        				if isinstance(m, nn.Linear):
        					nn.init.xavier_uniform_(m.weight)
        			nn.init.kaiming_uniform_(self.predict_layer.weight, 
        									a=1, nonlinearity='sigmoid')

        			for m in self.modules():
        				if isinstance(m, nn.Linear) and m.bias is not None:
        					m.bias.data.zero_()
        		else:
        			# embedding layers
        			self.embed_user_GMF.weight.data.copy_(
        							self.GMF_model.embed_user_GMF.weight)
        			self.embed_item_GMF.weight.data.copy_(
        							self.GMF_model.embed_item_GMF.weight)
        			self.embed_user_MLP.weight.data.copy_(
        							self.MLP_model.embed_user_MLP.weight)
        			self.embed_item_MLP.weight.data.copy_(
        							self.MLP_model.embed_item_MLP.weight)

        			# mlp layers
        			for (m1, m2) in zip(
        				self.MLP_layers, self.MLP_model.MLP_layers):
        				if isinstance(m1, nn.Linear) and isinstance(m2, nn.Linear):
        					m1.weight.data.copy_(m2.weight)
        					m1.bias.data.copy_(m2.bias)

        			# predict layers
        			predict_weight = torch.cat([
        				self.GMF_model.predict_layer.weight, 
        				self.MLP_model.predict_layer.weight], dim=1)
        			precit_bias = self.GMF_model.predict_layer.bias + \
        						self.MLP_model.predict_layer.bias

        			self.predict_layer.weight.data.copy_(0.5 * predict_weight)
        			self.predict_layer.bias.data.copy_(0.5 * precit_bias)

        	def forward(self, user, item):
        		if not self.model == 'MLP':
        			embed_user_GMF = self.embed_user_GMF(user)
        			embed_item_GMF = self.embed_item_GMF(item)
        			output_GMF = embed_user_GMF * embed_item_GMF
        		if not self.model == 'GMF':
        			embed_user_MLP = self.embed_user_MLP(user)
        			embed_item_MLP = self.embed_item_MLP(item)
        			interaction = torch.cat((embed_user_MLP, embed_item_MLP), -1)
        			output_MLP = self.MLP_layers(interaction)

        		if self.model == 'GMF':
        			concat = output_GMF
        		elif self.model == 'MLP':
        			concat = output_MLP
        		else:
        			concat = torch.cat((output_GMF, output_MLP), -1)

        		prediction = self.predict_layer(concat)
        		return prediction.view(-1)

        user = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0])
        item = torch.tensor([1, 3, 5, 7, 0, 2, 4, 8])
        label = torch.tensor([1., 0., 1., 1., 0., 0., 1., 0.])
        loss_function = nn.BCEWithLogitsLoss()
        models = {}
        for seed, name in enumerate(("GMF", "MLP", "NeuMF-end")):
            model = NCF(7, 9, 4, 2, 0.0, name)
            log(name + " bias zeroed", model.predict_layer.bias)
            init_params(torch, model, seed, scale=0.5)
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
            model.train()
            for step in range(2):
                model.zero_grad()
                prediction = model(user, item)
                loss = loss_function(prediction, label)
                loss.backward()
                optimizer.step()
                log(name + " prediction", prediction)
                log(name + " loss", loss)
            log(name + " user grad", model.embed_user_MLP.weight.grad if name != "GMF" else model.embed_user_GMF.weight.grad)
            models[name] = model
        pre = NCF(7, 9, 4, 2, 0.0, "NeuMF-pre", models["GMF"], models["MLP"])
        log("pre predict weight", pre.predict_layer.weight)
        log("pre predict bias", pre.predict_layer.bias)
        log("pre requires_grad", pre.predict_layer.weight.requires_grad)
        optimizer = torch.optim.SGD(pre.parameters(), lr=0.1)
        prediction = pre(user, item)
        loss = loss_function(prediction, label)
        loss.backward()
        optimizer.step()
        log("pre prediction", prediction)
        log("pre grad", pre.predict_layer.weight.grad)
        log("pre item", pre.embed_item_GMF.weight)
        log("gmf untouched", models["GMF"].embed_item_GMF.weight)
        pre.eval()
        with torch.no_grad():
            _, indices = torch.topk(pre(torch.zeros(9, dtype=torch.long), torch.arange(9)), 3)
        log("top-3 items", indices)

    run_both(program)


# vsitzmann/siren explore_siren.ipynb (SineLayer with its first/hidden uniform_ initialisation
# under ``torch.no_grad()``, Siren whose forward returns ``coords.clone().detach()
# .requires_grad_(True)`` with the output) and diff_operators.py (gradient, divergence, laplace
# and jacobian through ``autograd.grad(create_graph=True)``), fitted as in the notebook's
# Poisson example: the loss is the squared error of the network's gradient to a target
# gradient, so each step differentiates a gradient. 16 coordinates of a 4x4 grid, 2 hidden
# layers of 8 with outermost_linear, parameters from ``init_params`` at the notebook's scales,
# 2 Adam steps; the laplacian and jacobian logged after
def test_siren_poisson_gradient_fitting():
    def program(torch, log):
        nn = torch.nn
        grad = torch.autograd.grad

        class SineLayer(nn.Module):
            def __init__(self, in_features, out_features, bias=True,
                         is_first=False, omega_0=30):
                super().__init__()
                self.omega_0 = omega_0
                self.is_first = is_first

                self.in_features = in_features
                self.linear = nn.Linear(in_features, out_features, bias=bias)

                self.init_weights()

            def init_weights(self):
                with torch.no_grad():
                    if self.is_first:
                        self.linear.weight.uniform_(-1 / self.in_features,
                                                    1 / self.in_features)
                    else:
                        self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                                    np.sqrt(6 / self.in_features) / self.omega_0)

            def forward(self, input):
                return torch.sin(self.omega_0 * self.linear(input))

        class Siren(nn.Module):
            def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=False,
                         first_omega_0=30, hidden_omega_0=30.):
                super().__init__()

                self.net = []
                self.net.append(SineLayer(in_features, hidden_features,
                                          is_first=True, omega_0=first_omega_0))

                for i in range(hidden_layers):
                    self.net.append(SineLayer(hidden_features, hidden_features,
                                              is_first=False, omega_0=hidden_omega_0))

                if outermost_linear:
                    final_linear = nn.Linear(hidden_features, out_features)

                    with torch.no_grad():
                        final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                                     np.sqrt(6 / hidden_features) / hidden_omega_0)

                    self.net.append(final_linear)
                else:
                    self.net.append(SineLayer(hidden_features, out_features,
                                              is_first=False, omega_0=hidden_omega_0))

                self.net = nn.Sequential(*self.net)

            def forward(self, coords):
                coords = coords.clone().detach().requires_grad_(True) # allows to take derivative w.r.t. input
                output = self.net(coords)
                return output, coords

        def laplace(y, x):
            grad = gradient(y, x)
            return divergence(grad, x)

        def divergence(y, x):
            div = 0.
            for i in range(y.shape[-1]):
                div += grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i:i+1]
            return div

        def gradient(y, x, grad_outputs=None):
            if grad_outputs is None:
                grad_outputs = torch.ones_like(y)
            grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
            return grad

        def jacobian(y, x):
            ''' jacobian of y wrt x '''
            meta_batch_size, num_observations = y.shape[:2]
            jac = torch.zeros(meta_batch_size, num_observations, y.shape[-1], x.shape[-1]).to(y.device) # (meta_batch_size*num_points, 2, 2)
            for i in range(y.shape[-1]):
                # calculate dydx over batches for each feature value of y
                y_flat = y[...,i].view(-1, 1)
                jac[:, :, i, :] = grad(y_flat, x, torch.ones_like(y_flat), create_graph=True)[0]

            status = 0
            if torch.any(torch.isnan(jac)):
                status = -1

            return jac, status

        def get_mgrid(sidelen, dim=2):
            tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
            mgrid = torch.stack(torch.meshgrid(*tensors, indexing='ij'), dim=-1)
            mgrid = mgrid.reshape(-1, dim)
            return mgrid

        model = Siren(in_features=2, out_features=1, hidden_features=8, hidden_layers=2, outermost_linear=True)
        rs = np.random.RandomState(0)
        with torch.no_grad():   # the notebook's bounds, numpy draws
            for layer in model.net:
                lin = layer.linear if isinstance(layer, SineLayer) else layer
                fan = lin.weight.shape[1]
                bound = 1 / fan if lin is model.net[0].linear else np.sqrt(6 / fan) / 30
                lin.weight.copy_(torch.tensor(rs.uniform(-bound, bound, tuple(lin.weight.shape)).astype(np.float32)))
                lin.bias.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(lin.bias.shape)).astype(np.float32)))
        coords = get_mgrid(4, 2).unsqueeze(0)
        gt_grad = randn(torch, (1, 16, 2), 1)
        optim = torch.optim.Adam(lr=1e-4, params=model.parameters())
        for step in range(2):
            model_output, coords_out = model(coords)
            img_grad = gradient(model_output, coords_out)
            loss = ((img_grad - gt_grad) ** 2).mean()
            optim.zero_grad()
            loss.backward()
            optim.step()
            log("output", model_output)
            log("img_grad", img_grad)
            log("loss", loss)
            log("coords grad", coords_out.grad)
            log("leaf coords", (coords_out.is_leaf, coords_out.requires_grad))
        for name, p in model.named_parameters():
            log("grad " + name, p.grad)
        model_output, coords_out = model(coords)
        log("laplace", laplace(model_output, coords_out))
        jac, status = jacobian(model_output, coords_out)
        log("jacobian", jac)
        log("status", status)
        log("jac grad_fn", type(jac.grad_fn).__name__)

    run_both(program)


# kaituoxu/Conv-TasNet src/conv_tasnet.py + src/utils.py + src/pit_criterion.py (ConvTasNet:
# a 1x1 Conv1d encoder, the TemporalConvNet of dilated depthwise-separable Conv1d blocks with
# PReLU, Chomp1d and gLN/cLN norms built from ``torch.Tensor(1, N, 1)`` parameters filled in
# ``reset_parameters``, a softmax mask over speakers and a Linear decoder; ``overlap_and_add``
# with ``arange(...).unfold``, ``new_tensor`` and ``index_add_(-2, ...)``; the PIT SI-SNR loss
# with an in-place mask multiply of the estimate, ``new_tensor(list(permutations))``, a one-hot
# ``scatter_(2, index, 1)``, ``einsum('bij,pij->bp', [..])`` over permutations, ``argmax`` and
# the reorder loop). N=4, L=4, B=3, H=4, P=3, X=2, R=1, C=2 as tiny sizes, 2 mixtures of 7 frames
# (frame step L//2 as the later train path uses), the second with 2 padded samples; 2 Adam steps
# of ``cal_loss`` with gLN, one forward each with cLN and BN
def test_conv_tasnet_pit_si_snr():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        EPS = 1e-8

        class ConvTasNet(nn.Module):
            def __init__(self, N, L, B, H, P, X, R, C, norm_type="gLN"):
                super(ConvTasNet, self).__init__()
                # Hyper-parameter
                self.N, self.L, self.B, self.H, self.P, self.X, self.R, self.C = N, L, B, H, P, X, R, C
                # Components
                self.encoder = Encoder(L, N)
                self.separator = TemporalConvNet(N, B, H, P, X, R, C, norm_type)
                self.decoder = Decoder(N, L)

            def forward(self, mixture):
                mixture_w = self.encoder(mixture)
                est_mask = self.separator(mixture_w)
                est_source = self.decoder(mixture_w, est_mask)
                return est_source

        class Encoder(nn.Module):
            def __init__(self, L, N):
                super(Encoder, self).__init__()
                # Hyper-parameter
                self.L, self.N = L, N
                # Components
                # Maybe we can impl 1-D conv by nn.Linear()?
                self.conv1d_U = nn.Conv1d(L, N, kernel_size=1, bias=False)

            def forward(self, mixture):
                mixture = mixture.permute((0, 2, 1)).contiguous()  # [M, L, K]
                mixture_w = F.relu(self.conv1d_U(mixture))  # [M, N, K]
                mixture_w = mixture_w.permute((0, 2, 1)).contiguous()
                return mixture_w

        class Decoder(nn.Module):
            def __init__(self, N, L):
                super(Decoder, self).__init__()
                # Hyper-parameter
                self.N, self.L = N, L
                # Components
                self.basis_signals = nn.Linear(N, L, bias=False)

            def forward(self, mixture_w, est_mask):
                # D = W * M
                source_w = torch.unsqueeze(mixture_w, 2) * est_mask  # M x K x C x N
                # S = DV
                est_source = self.basis_signals(source_w)  # M x K x C x L
                est_source = est_source.permute((0, 2, 1, 3)).contiguous()  # M x C x K x L
                return est_source

        class TemporalConvNet(nn.Module):
            def __init__(self, N, B, H, P, X, R, C, norm_type="gLN"):
                super(TemporalConvNet, self).__init__()
                # Hyper-parameter
                self.N, self.B, self.H, self.P, self.X, self.R, self.C = N, B, H, P, X, R, C
                # Components
                # [M, N, K] -> [M, N, K]
                self.layer_norm = ChannelwiseLayerNorm(N)
                # [M, N, K] -> [M, B, K]
                self.bottleneck_conv1x1 = nn.Conv1d(N, B, 1, bias=False)
                # [M, B, K] -> [M, B, K]
                repeats = []
                for r in range(R):
                    blocks = []
                    for x in range(X):
                        dilation = 2**x
                        blocks += [TemporalBlock(B, H, P, stride=1,
                                                 padding=(P-1)*dilation,
                                                 dilation=dilation, norm_type=norm_type)]
                    repeats += [nn.Sequential(*blocks)]
                self.temporal_conv_net = nn.Sequential(*repeats)
                # [M, B, K] -> [M, C*N, K]
                self.mask_conv1x1 = nn.Conv1d(B, C*N, 1, bias=False)
                # Put together
                self.network = nn.Sequential(self.layer_norm,
                                             self.bottleneck_conv1x1,
                                             self.temporal_conv_net,
                                             self.mask_conv1x1)

            def forward(self, mixture_w):
                M, K, N = mixture_w.size()
                x = mixture_w.permute((0, 2, 1)).contiguous()  # [M, K, N] -> [M, N, K]
                score = self.network(x)  # [M, N, K] -> [M, C*N, K]
                score = score.permute((0, 2, 1)).view(M, K, self.C, N).contiguous() # [M, C*N, K] -> [M, K, C, N]
                est_mask = F.softmax(score, dim=2)
                return est_mask

        class TemporalBlock(nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size,
                         stride, padding, dilation, norm_type="gLN"):
                super(TemporalBlock, self).__init__()
                # [M, B, K] -> [M, H, K]
                self.conv1x1 = nn.Conv1d(in_channels, out_channels, 1, bias=False)
                self.prelu = nn.PReLU()
                self.norm = chose_norm(norm_type, out_channels)
                # [M, H, K] -> [M, B, K]
                self.dsconv = DepthwiseSeparableConv(out_channels, in_channels, kernel_size,
                                                     stride, padding, dilation, norm_type)
                # Put together
                self.net = nn.Sequential(self.conv1x1, self.prelu, self.norm,
                                         self.dsconv)

            def forward(self, x):
                residual = x
                out = self.net(x)
                return F.relu(out + residual)

        class DepthwiseSeparableConv(nn.Module):
            def __init__(self, in_channels, out_channels, kernel_size,
                         stride, padding, dilation, norm_type="gLN"):
                super(DepthwiseSeparableConv, self).__init__()
                # Use `groups` option to implement depthwise convolution
                # [M, H, K] -> [M, H, K]
                self.depthwise_conv = nn.Conv1d(in_channels, in_channels, kernel_size,
                                                stride=stride, padding=padding,
                                                dilation=dilation, groups=in_channels,
                                                bias=False)
                self.chomp = Chomp1d(padding)
                self.prelu = nn.PReLU()
                self.norm = chose_norm(norm_type, in_channels)
                # [M, H, K] -> [M, B, K]
                self.pointwise_conv = nn.Conv1d(in_channels, out_channels, 1, bias=False)
                # Put together
                self.net = nn.Sequential(self.depthwise_conv, self.chomp, self.prelu, self.norm,
                                         self.pointwise_conv)

            def forward(self, x):
                return self.net(x)

        class Chomp1d(nn.Module):
            def __init__(self, chomp_size):
                super(Chomp1d, self).__init__()
                self.chomp_size = chomp_size

            def forward(self, x):
                return x[:, :, :-self.chomp_size].contiguous()

        def chose_norm(norm_type, channel_size):
            if norm_type == "gLN":
                return GlobalLayerNorm(channel_size)
            elif norm_type == "cLN":
                return ChannelwiseLayerNorm(channel_size)
            else: # norm_type == "BN":
                return nn.BatchNorm1d(channel_size)

        class ChannelwiseLayerNorm(nn.Module):
            """Channel-wise Layer Normalization (cLN)"""
            def __init__(self, channel_size):
                super(ChannelwiseLayerNorm, self).__init__()
                self.gamma = nn.Parameter(torch.Tensor(1, channel_size, 1))  # [1, N, 1]
                self.beta = nn.Parameter(torch.Tensor(1, channel_size,1 ))  # [1, N, 1]
                self.reset_parameters()

            def reset_parameters(self):
                self.gamma.data.fill_(1)
                self.beta.data.zero_()

            def forward(self, y):
                mean = torch.mean(y, dim=1, keepdim=True)  # [M, 1, K]
                var = torch.var(y, dim=1, keepdim=True, unbiased=False)  # [M, 1, K]
                cLN_y = self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta
                return cLN_y

        class GlobalLayerNorm(nn.Module):
            """Global Layer Normalization (gLN)"""
            def __init__(self, channel_size):
                super(GlobalLayerNorm, self).__init__()
                self.gamma = nn.Parameter(torch.Tensor(1, channel_size, 1))  # [1, N, 1]
                self.beta = nn.Parameter(torch.Tensor(1, channel_size,1 ))  # [1, N, 1]
                self.reset_parameters()

            def reset_parameters(self):
                self.gamma.data.fill_(1)
                self.beta.data.zero_()

            def forward(self, y):
                mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True) #[M, 1, 1]
                var = torch.pow(y-mean, 2).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
                gLN_y = self.gamma * (y - mean) / torch.pow(var + EPS, 0.5) + self.beta
                return gLN_y

        def overlap_and_add(signal, frame_step):
            outer_dimensions = signal.size()[:-2]
            frames, frame_length = signal.size()[-2:]

            subframe_length = math.gcd(frame_length, frame_step)  # gcd=Greatest Common Divisor
            subframe_step = frame_step // subframe_length
            subframes_per_frame = frame_length // subframe_length
            output_size = frame_step * (frames - 1) + frame_length
            output_subframes = output_size // subframe_length

            subframe_signal = signal.view(*outer_dimensions, -1, subframe_length)

            frame = torch.arange(0, output_subframes).unfold(0, subframes_per_frame, subframe_step)
            frame = signal.new_tensor(frame).long()  # signal may in GPU or CPU
            frame = frame.contiguous().view(-1)

            result = signal.new_zeros(*outer_dimensions, output_subframes, subframe_length)
            result.index_add_(-2, frame, subframe_signal)
            result = result.view(*outer_dimensions, -1)
            return result

        def cal_loss(source, estimate_source, source_lengths):
            max_snr, perms, max_snr_idx = cal_si_snr_with_pit(source,
                                                              estimate_source,
                                                              source_lengths)
            loss = 0 - torch.mean(max_snr)
            reorder_estimate_source = reorder_source(estimate_source, perms, max_snr_idx)
            return loss, max_snr, estimate_source, reorder_estimate_source

        def cal_si_snr_with_pit(source, estimate_source, source_lengths):
            assert source.size() == estimate_source.size()
            B, C, T = source.size()
            # mask padding position along T
            mask = get_mask(source, source_lengths)
            estimate_source *= mask

            # Step 1. Zero-mean norm
            num_samples = source_lengths.view(-1, 1, 1).float()  # [B, 1, 1]
            mean_target = torch.sum(source, dim=2, keepdim=True) / num_samples
            mean_estimate = torch.sum(estimate_source, dim=2, keepdim=True) / num_samples
            zero_mean_target = source - mean_target
            zero_mean_estimate = estimate_source - mean_estimate
            # mask padding position along T
            zero_mean_target *= mask
            zero_mean_estimate *= mask

            # Step 2. SI-SNR with PIT
            # reshape to use broadcast
            s_target = torch.unsqueeze(zero_mean_target, dim=1)  # [B, 1, C, T]
            s_estimate = torch.unsqueeze(zero_mean_estimate, dim=2)  # [B, C, 1, T]
            # s_target = <s', s>s / ||s||^2
            pair_wise_dot = torch.sum(s_estimate * s_target, dim=3, keepdim=True)  # [B, C, C, 1]
            s_target_energy = torch.sum(s_target ** 2, dim=3, keepdim=True) + EPS  # [B, 1, C, 1]
            pair_wise_proj = pair_wise_dot * s_target / s_target_energy  # [B, C, C, T]
            # e_noise = s' - s_target
            e_noise = s_estimate - pair_wise_proj  # [B, C, C, T]
            # SI-SNR = 10 * log_10(||s_target||^2 / ||e_noise||^2)
            pair_wise_si_snr = torch.sum(pair_wise_proj ** 2, dim=3) / (torch.sum(e_noise ** 2, dim=3) + EPS)
            pair_wise_si_snr = 10 * torch.log10(pair_wise_si_snr + EPS)  # [B, C, C]

            # Get max_snr of each utterance
            # permutations, [C!, C]
            perms = source.new_tensor(list(permutations(range(C))), dtype=torch.long)
            # one-hot, [C!, C, C]
            index = torch.unsqueeze(perms, 2)
            perms_one_hot = source.new_zeros((*perms.size(), C)).scatter_(2, index, 1)
            # [B, C!] <- [B, C, C] einsum [C!, C, C], SI-SNR sum of each permutation
            snr_set = torch.einsum('bij,pij->bp', [pair_wise_si_snr, perms_one_hot.float()])
            max_snr_idx = torch.argmax(snr_set, dim=1)  # [B]
            # max_snr = torch.gather(snr_set, 1, max_snr_idx.view(-1, 1))  # [B, 1]
            max_snr, _ = torch.max(snr_set, dim=1, keepdim=True)
            max_snr /= C
            return max_snr, perms, max_snr_idx

        def reorder_source(source, perms, max_snr_idx):
            B, C, *_ = source.size()
            # [B, C], permutation whose SI-SNR is max of each utterance
            # for each utterance, reorder estimate source according this permutation
            max_snr_perm = torch.index_select(perms, dim=0, index=max_snr_idx)
            # print('max_snr_perm', max_snr_perm)
            # maybe use torch.gather()/index_select()/scatter() to impl this?
            reorder_source = torch.zeros_like(source)
            for b in range(B):
                for c in range(C):
                    reorder_source[b, c] = source[b, max_snr_perm[b][c]]
            return reorder_source

        def get_mask(source, source_lengths):
            B, _, T = source.size()
            mask = source.new_ones((B, 1, T))
            for i in range(B):
                mask[i, :, source_lengths[i]:] = 0
            return mask

        M, K, L, C = 2, 7, 4, 2
        T = (K - 1) * (L // 2) + L
        mixture = randn(torch, (M, K, L), 1)
        source = randn(torch, (M, C, T), 2)
        source[1, :, -2:] = 0
        source_lengths = torch.LongTensor([T, T - 2])
        model = init_params(torch, ConvTasNet(4, L, 3, 4, 3, 2, 1, C, norm_type="gLN"), 0, scale=0.5)
        log("gLN gamma before init_params", ConvTasNet(4, L, 3, 4, 3, 2, 1, C).separator.layer_norm.gamma)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step in range(2):
            est_source = overlap_and_add(model(mixture), L // 2)
            loss, max_snr, estimate_source, reorder_estimate_source = cal_loss(source, est_source, source_lengths)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5)
            optimizer.step()
            log("est_source", est_source)
            log("loss", loss)
            log("max_snr", max_snr)
            log("reorder", reorder_estimate_source)
        for name, p in model.named_parameters():
            log("grad " + name, p.grad)
        for seed, norm in ((3, "cLN"), (4, "BN")):
            m = init_params(torch, ConvTasNet(4, L, 3, 4, 3, 2, 1, C, norm_type=norm), seed, scale=0.5)
            log(norm + " out", m(mixture))
        sig = torch.arange(24.).view(1, 2, 3, 4)
        log("overlap_and_add", overlap_and_add(sig, 2))
        log("overlap_and_add step 3", overlap_and_add(sig, 3))

    run_both(program)


# WangYueFt/dgcnn pytorch/model.py (DGCNN: ``knn`` by ``topk`` of negative pairwise distances,
# ``get_graph_feature``'s flat gather ``x.view(B*N, -1)[idx, :]`` with an ``arange`` batch
# offset, EdgeConv Conv2d/BatchNorm2d/LeakyReLU blocks reduced by ``max(dim=-1)``, then
# adaptive max and avg pools over points) with its classification loss from util.py
# (``cal_loss`` with label smoothing: ``zeros_like(pred).scatter(1, gold.view(-1, 1), 1)``,
# ``log_softmax``). ``get_graph_feature`` builds its batch offset on ``torch.device('cuda')``;
# here on 'cpu' (the one change). k=20 -> 3, emb_dims 1024 -> 16, channel widths as written,
# 4 clouds of 5 points, dropout p=0 (it draws from the random stream), 1 SGD step and an
# eval-mode forward
def test_dgcnn_edgeconv_label_smoothing():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        def knn(x, k):
            inner = -2*torch.matmul(x.transpose(2, 1), x)
            xx = torch.sum(x**2, dim=1, keepdim=True)
            pairwise_distance = -xx - inner - xx.transpose(2, 1)

            idx = pairwise_distance.topk(k=k, dim=-1)[1]   # (batch_size, num_points, k)
            return idx

        def get_graph_feature(x, k=20, idx=None):
            batch_size = x.size(0)
            num_points = x.size(2)
            x = x.view(batch_size, -1, num_points)
            if idx is None:
                idx = knn(x, k=k)   # (batch_size, num_points, k)
            device = torch.device('cpu')

            idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1)*num_points

            idx = idx + idx_base

            idx = idx.view(-1)

            _, num_dims, _ = x.size()

            x = x.transpose(2, 1).contiguous()   # (batch_size, num_points, num_dims)  -> (batch_size*num_points, num_dims) #   batch_size * num_points * k + range(0, batch_size*num_points)
            feature = x.view(batch_size*num_points, -1)[idx, :]
            feature = feature.view(batch_size, num_points, k, num_dims)
            x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)

            feature = torch.cat((feature-x, x), dim=3).permute(0, 3, 1, 2).contiguous()

            return feature

        class DGCNN(nn.Module):
            def __init__(self, args, output_channels=40):
                super(DGCNN, self).__init__()
                self.args = args
                self.k = args.k

                self.bn1 = nn.BatchNorm2d(64)
                self.bn2 = nn.BatchNorm2d(64)
                self.bn3 = nn.BatchNorm2d(128)
                self.bn4 = nn.BatchNorm2d(256)
                self.bn5 = nn.BatchNorm1d(args.emb_dims)

                self.conv1 = nn.Sequential(nn.Conv2d(6, 64, kernel_size=1, bias=False),
                                           self.bn1,
                                           nn.LeakyReLU(negative_slope=0.2))
                self.conv2 = nn.Sequential(nn.Conv2d(64*2, 64, kernel_size=1, bias=False),
                                           self.bn2,
                                           nn.LeakyReLU(negative_slope=0.2))
                self.conv3 = nn.Sequential(nn.Conv2d(64*2, 128, kernel_size=1, bias=False),
                                           self.bn3,
                                           nn.LeakyReLU(negative_slope=0.2))
                self.conv4 = nn.Sequential(nn.Conv2d(128*2, 256, kernel_size=1, bias=False),
                                           self.bn4,
                                           nn.LeakyReLU(negative_slope=0.2))
                self.conv5 = nn.Sequential(nn.Conv1d(512, args.emb_dims, kernel_size=1, bias=False),
                                           self.bn5,
                                           nn.LeakyReLU(negative_slope=0.2))
                self.linear1 = nn.Linear(args.emb_dims*2, 512, bias=False)
                self.bn6 = nn.BatchNorm1d(512)
                self.dp1 = nn.Dropout(p=args.dropout)
                self.linear2 = nn.Linear(512, 256)
                self.bn7 = nn.BatchNorm1d(256)
                self.dp2 = nn.Dropout(p=args.dropout)
                self.linear3 = nn.Linear(256, output_channels)

            def forward(self, x):
                batch_size = x.size(0)
                x = get_graph_feature(x, k=self.k)
                x = self.conv1(x)
                x1 = x.max(dim=-1, keepdim=False)[0]

                x = get_graph_feature(x1, k=self.k)
                x = self.conv2(x)
                x2 = x.max(dim=-1, keepdim=False)[0]

                x = get_graph_feature(x2, k=self.k)
                x = self.conv3(x)
                x3 = x.max(dim=-1, keepdim=False)[0]

                x = get_graph_feature(x3, k=self.k)
                x = self.conv4(x)
                x4 = x.max(dim=-1, keepdim=False)[0]

                x = torch.cat((x1, x2, x3, x4), dim=1)

                x = self.conv5(x)
                x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
                x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
                x = torch.cat((x1, x2), 1)

                x = F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2)
                x = self.dp1(x)
                x = F.leaky_relu(self.bn7(self.linear2(x)), negative_slope=0.2)
                x = self.dp2(x)
                x = self.linear3(x)
                return x

        def cal_loss(pred, gold, smoothing=True):
            ''' Calculate cross entropy loss, apply label smoothing if needed. '''

            gold = gold.contiguous().view(-1)

            if smoothing:
                eps = 0.2
                n_class = pred.size(1)

                one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
                one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
                log_prb = F.log_softmax(pred, dim=1)

                loss = -(one_hot * log_prb).sum(dim=1).mean()
            else:
                loss = F.cross_entropy(pred, gold, reduction='mean')

            return loss

        class Args:
            k = 3
            emb_dims = 16
            dropout = 0.0

        model = init_params(torch, DGCNN(Args(), output_channels=4), 0, scale=0.1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        data = randn(torch, (4, 3, 5), 1)
        label = torch.tensor([[0], [3], [1], [3]])
        log("knn", knn(data, 3))
        log("graph feature", get_graph_feature(data, k=3))
        model.train()
        opt.zero_grad()
        logits = model(data)
        loss = cal_loss(logits, label)
        loss.backward()
        opt.step()
        preds = logits.max(dim=1)[1]
        log("logits", logits)
        log("loss", loss)
        log("preds", preds)
        log("plain ce", cal_loss(logits, label, smoothing=False))
        for name in ("conv1.0.weight", "conv4.0.weight", "linear1.weight", "linear3.bias", "bn5.weight"):
            p = dict(model.named_parameters())[name]
            log("grad " + name, p.grad)
            log(name, p)
        log("running_var", model.bn4.running_var)
        model.eval()
        with torch.no_grad():
            log("eval logits", model(data))

    run_both(program)


# pclucas14/pixel-cnn-pp utils.py (concat_elu, ``nin`` 1x1 layers, gated_resnet with its
# ``x += self.nin_skip(...)`` auxiliary input and ``chunk``/sigmoid gate, down_shift/
# right_shift with ``nn.ZeroPad2d``, down_shifted_conv2d / down_right_shifted_conv2d built with
# ``torch.nn.utils.weight_norm``, and discretized_mix_logistic_loss with its ``log_sum_exp``/
# ``log_prob_from_logits``), wired as model.py's first layers: u and ul streams from the input
# padded with a ones channel, one gated_resnet each (ul taking u as ``a``), ``nin_out`` to
# ``10 * nr_mix`` channels. The loss builds a zeros tensor with ``.cuda()``: dropped here (the
# one change). nr_filters 160 -> 4, nr_mix 10 -> 2, 2 images of 3x4x4 in [-1, 1], Dropout2d p=0
# (it draws from the random stream), 2 Adam steps in float64 (``model.double()``: the loss is a
# sum over 96 sub-pixels near 560, so float32 summation order shows in small gradient entries;
# the float32 zeros and ones the program makes promote in ``+`` and ``torch.cat``)
def test_pixel_cnn_pp_mix_logistic_loss():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Variable = torch.autograd.Variable
        wn = torch.nn.utils.weight_norm

        def concat_elu(x):
            """ like concatenated ReLU (http://arxiv.org/abs/1603.05201), but then with ELU """
            # Pytorch ordering
            axis = len(x.size()) - 3
            return F.elu(torch.cat([x, -x], dim=axis))

        def log_sum_exp(x):
            """ numerically stable log_sum_exp implementation that prevents overflow """
            # TF ordering
            axis  = len(x.size()) - 1
            m, _  = torch.max(x, dim=axis)
            m2, _ = torch.max(x, dim=axis, keepdim=True)
            return m + torch.log(torch.sum(torch.exp(x - m2), dim=axis))

        def log_prob_from_logits(x):
            """ numerically stable log_softmax implementation that prevents overflow """
            # TF ordering
            axis = len(x.size()) - 1
            m, _ = torch.max(x, dim=axis, keepdim=True)
            return x - m - torch.log(torch.sum(torch.exp(x - m), dim=axis, keepdim=True))

        def discretized_mix_logistic_loss(x, l):
            """ log-likelihood for mixture of discretized logistics, assumes the data has been rescaled to [-1,1] interval """
            # Pytorch ordering
            x = x.permute(0, 2, 3, 1)
            l = l.permute(0, 2, 3, 1)
            xs = [int(y) for y in x.size()]
            ls = [int(y) for y in l.size()]

            # here and below: unpacking the params of the mixture of logistics
            nr_mix = int(ls[-1] / 10)
            logit_probs = l[:, :, :, :nr_mix]
            l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 3]) # 3 for mean, scale, coef
            means = l[:, :, :, :, :nr_mix]
            # log_scales = torch.max(l[:, :, :, :, nr_mix:2 * nr_mix], -7.)
            log_scales = torch.clamp(l[:, :, :, :, nr_mix:2 * nr_mix], min=-7.)

            coeffs = F.tanh(l[:, :, :, :, 2 * nr_mix:3 * nr_mix])
            # here and below: getting the means and adjusting them based on preceding
            # sub-pixels
            x = x.contiguous()
            x = x.unsqueeze(-1) + Variable(torch.zeros(xs + [nr_mix]), requires_grad=False)
            m2 = (means[:, :, :, 1, :] + coeffs[:, :, :, 0, :]
                        * x[:, :, :, 0, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)

            m3 = (means[:, :, :, 2, :] + coeffs[:, :, :, 1, :] * x[:, :, :, 0, :] +
                        coeffs[:, :, :, 2, :] * x[:, :, :, 1, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)

            means = torch.cat((means[:, :, :, 0, :].unsqueeze(3), m2, m3), dim=3)
            centered_x = x - means
            inv_stdv = torch.exp(-log_scales)
            plus_in = inv_stdv * (centered_x + 1. / 255.)
            cdf_plus = F.sigmoid(plus_in)
            min_in = inv_stdv * (centered_x - 1. / 255.)
            cdf_min = F.sigmoid(min_in)
            # log probability for edge case of 0 (before scaling)
            log_cdf_plus = plus_in - F.softplus(plus_in)
            # log probability for edge case of 255 (before scaling)
            log_one_minus_cdf_min = -F.softplus(min_in)
            cdf_delta = cdf_plus - cdf_min  # probability for all other cases
            mid_in = inv_stdv * centered_x
            # log probability in the center of the bin, to be used in extreme cases
            # (not actually used in our code)
            log_pdf_mid = mid_in - log_scales - 2. * F.softplus(mid_in)

            inner_inner_cond = (cdf_delta > 1e-5).float()
            inner_inner_out  = inner_inner_cond * torch.log(torch.clamp(cdf_delta, min=1e-12)) + (1. - inner_inner_cond) * (log_pdf_mid - np.log(127.5))
            inner_cond       = (x > 0.999).float()
            inner_out        = inner_cond * log_one_minus_cdf_min + (1. - inner_cond) * inner_inner_out
            cond             = (x < -0.999).float()
            log_probs        = cond * log_cdf_plus + (1. - cond) * inner_out
            log_probs        = torch.sum(log_probs, dim=3) + log_prob_from_logits(logit_probs)

            return -torch.sum(log_sum_exp(log_probs))

        class nin(nn.Module):
            def __init__(self, dim_in, dim_out):
                super(nin, self).__init__()
                self.lin_a = nn.Linear(dim_in, dim_out)
                self.dim_out = dim_out

            def forward(self, x):
                og_x = x
                # assumes pytorch ordering
                """ a network in network layer (1x1 CONV) """
                # TODO : try with original ordering
                x = x.permute(0, 2, 3, 1)
                shp = [int(y) for y in x.size()]
                out = self.lin_a(x.contiguous().view(shp[0]*shp[1]*shp[2], shp[3]))
                shp[-1] = self.dim_out
                out = out.view(shp)
                return out.permute(0, 3, 1, 2)

        class gated_resnet(nn.Module):
            def __init__(self, num_filters, conv_op, nonlinearity=concat_elu, skip_connection=0):
                super(gated_resnet, self).__init__()
                self.skip_connection = skip_connection
                self.nonlinearity = nonlinearity
                self.conv_input = conv_op(2 * num_filters, num_filters) # cuz of concat elu

                if skip_connection != 0 :
                    self.nin_skip = nin(2 * skip_connection * num_filters, num_filters)

                self.dropout = nn.Dropout2d(0.5)
                self.conv_out = conv_op(2 * num_filters, 2 * num_filters)

            def forward(self, og_x, a=None):
                x = self.conv_input(self.nonlinearity(og_x))
                if a is not None :
                    x += self.nin_skip(self.nonlinearity(a))
                x = self.nonlinearity(x)
                x = self.dropout(x)
                x = self.conv_out(x)
                a, b = torch.chunk(x, 2, dim=1)
                c3 = a * F.sigmoid(b)
                return og_x + c3

        def down_shift(x, pad=None):
            # Pytorch ordering
            xs = [int(y) for y in x.size()]
            # when downshifting, the last row is removed
            x = x[:, :, :xs[2] - 1, :]
            # padding left, padding right, padding top, padding bottom
            pad = nn.ZeroPad2d((0, 0, 1, 0)) if pad is None else pad
            return pad(x)

        def right_shift(x, pad=None):
            # Pytorch ordering
            xs = [int(y) for y in x.size()]
            # when righshifting, the last column is removed
            x = x[:, :, :, :xs[3] - 1]
            # padding left, padding right, padding top, padding bottom
            pad = nn.ZeroPad2d((1, 0, 0, 0)) if pad is None else pad
            return pad(x)

        class down_shifted_conv2d(nn.Module):
            def __init__(self, num_filters_in, num_filters_out, filter_size=(2,3), stride=(1,1),
                            shift_output_down=False):
                super(down_shifted_conv2d, self).__init__()
                self.conv = wn(nn.Conv2d(num_filters_in, num_filters_out, filter_size, stride))
                self.pad  = nn.ZeroPad2d((int((filter_size[1] - 1) / 2), # pad left
                                         int((filter_size[1] - 1) / 2),  # pad right
                                         filter_size[0] - 1,             # pad top
                                          0) )                           # pad down
                self.shift_output_down = shift_output_down
                if shift_output_down :
                    self.down_shift = lambda x : down_shift(x, pad=nn.ZeroPad2d((0, 0, 1, 0)))

            def forward(self, x):
                x = self.pad(x)
                x = self.conv(x)
                return self.down_shift(x) if self.shift_output_down else x

        class down_right_shifted_conv2d(nn.Module):
            def __init__(self, num_filters_in, num_filters_out, filter_size=(2,2), stride=(1,1),
                            shift_output_right=False):
                super(down_right_shifted_conv2d, self).__init__()
                self.pad = nn.ZeroPad2d((filter_size[1] - 1, 0, filter_size[0] - 1, 0))
                self.conv = wn(nn.Conv2d(num_filters_in, num_filters_out, filter_size, stride=stride))
                self.shift_output_right = shift_output_right
                if shift_output_right :
                    self.right_shift = lambda x : right_shift(x, pad=nn.ZeroPad2d((1, 0, 0, 0)))

            def forward(self, x):
                x = self.pad(x)
                x = self.conv(x)
                return self.right_shift(x) if self.shift_output_right else x

        class TinyPixelCNN(nn.Module):   # model.py's PixelCNN.__init__/forward, first layers only
            def __init__(self, nr_filters=4, nr_logistic_mix=2, input_channels=3):
                super().__init__()
                self.u_init = down_shifted_conv2d(input_channels + 1, nr_filters, filter_size=(2,3),
                                                  shift_output_down=True)
                self.ul_init = nn.ModuleList([down_shifted_conv2d(input_channels + 1, nr_filters,
                                                                  filter_size=(1,3), shift_output_down=True),
                                              down_right_shifted_conv2d(input_channels + 1, nr_filters,
                                                                        filter_size=(2,1), shift_output_right=True)])
                self.u_stream = gated_resnet(nr_filters, down_shifted_conv2d, concat_elu, skip_connection=0)
                self.ul_stream = gated_resnet(nr_filters, down_right_shifted_conv2d, concat_elu, skip_connection=1)
                num_mix = 3 if input_channels == 1 else 10
                self.nin_out = nin(nr_filters, num_mix * nr_logistic_mix)
                self.init_padding = None

            def forward(self, x, sample=False):
                if self.init_padding is None and not sample:
                    xs = [int(y) for y in x.size()]
                    padding = Variable(torch.ones(xs[0], 1, xs[2], xs[3]), requires_grad=False)
                    self.init_padding = padding
                x = torch.cat((x, self.init_padding), 1)
                u = self.u_init(x)
                ul = self.ul_init[0](x) + self.ul_init[1](x)
                u = self.u_stream(u)
                ul = self.ul_stream(ul, a=u)
                return self.nin_out(F.elu(ul))

        model = TinyPixelCNN()
        for m in model.modules():
            if isinstance(m, nn.Dropout2d):
                m.p = 0.0
        log("weight_norm params", [n for n, _ in model.u_init.named_parameters()])
        init_params(torch, model, 0, scale=0.4)
        model.double()
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
        x = (randn(torch, (2, 3, 4, 4), 1) * 0.6).clamp(-1., 1.).double()
        x[0, 0, 0, 0] = 1.0    # the edge cases the loss selects with its float masks
        x[1, 2, 3, 1] = -1.0
        for step in range(2):
            out = model(x)
            loss = discretized_mix_logistic_loss(x, out)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("out", out)
            log("loss", loss)
            log("bpd", loss.item() / (np.log(2.) * np.prod(x.size())))
        for name, p in model.named_parameters():
            log("grad " + name, p.grad)
        log("weight recomputed", model.u_init.conv.weight)

    run_both(program)


# facebookresearch/poincare-embeddings hype/manifold.py + euclidean.py + poincare.py +
# energy_function.py + rsgd.py (Poincaré embeddings: an Embedding, sparse or dense, whose rows
# are renormed in place with ``renorm_`` under ``no_grad`` in the forward, ``narrow``/
# ``expand_as`` subject and object rows, the arcosh ``Distance`` custom Function with its
# hand-written gradient, cross entropy of negated distances, and RiemannianSGD, an
# ``Optimizer`` subclass with ``required`` defaults and callables in its param group: the sparse
# gradient ``coalesce``d, rescaled through ``_indices()``/``_values()``, ``renorm_``ed and
# rebuilt with ``th.sparse.DoubleTensor``, then ``mul_(-lr)`` and ``add_`` into the weight).
# ``allocate_lt`` comes from the repository's later manifold.py (the stored energy_function.py
# calls it). 6 objects in 2 dimensions, batches of 3 (subject, positive, 2 negatives), float64
# as train.py's default tensor type, 2 steps each with sparse=True and sparse=False
def test_poincare_embeddings_riemannian_sgd():
    def program(torch, log):
        th = torch
        F = torch.nn.functional
        Function = torch.autograd.Function
        _optimizer = importlib.import_module(torch.__name__ + ".optim.optimizer")
        Optimizer, required = _optimizer.Optimizer, _optimizer.required   # rsgd.py's from-import

        class Manifold(object):
            def __init__(self, *args, **kwargs):
                pass

            def allocate_lt(self, N, dim, sparse):
                return torch.nn.Embedding(N, dim, sparse=sparse)

            def init_weights(self, w, scale=1e-4):
                w.weight.data.uniform_(-scale, scale)

            def normalize(self, u):
                return u

        class EuclideanManifold(Manifold):
            __slots__ = ["max_norm"]

            def __init__(self, max_norm=1, **kwargs):
                self.max_norm = max_norm

            def normalize(self, u):
                d = u.size(-1)
                u.view(-1, d).renorm_(2, 0, self.max_norm)
                return u

            def distance(self, u, v):
                return (u - v).pow(2).sum(dim=-1)

            def rgrad(self, p, d_p):
                return d_p

            def expm(self, p, d_p, normalize=False, lr=None, out=None):
                if lr is not None:
                    d_p.mul_(-lr)
                if out is None:
                    out = p
                out.add_(d_p)
                if normalize:
                    self.normalize(out)
                return out

            def logm(self, p, d_p, out=None):
                return p - d_p

            def ptransp(self, p, x, y, v):
                ix, v_ = v._indices().squeeze(), v._values()
                return p.index_copy_(0, ix, v_)

        class PoincareManifold(EuclideanManifold):
            def __init__(self, eps=1e-5, **kwargs):
                super(PoincareManifold, self).__init__(**kwargs)
                self.eps = eps
                self.boundary = 1 - eps
                self.max_norm = self.boundary

            def distance(self, u, v):
                return Distance.apply(u, v, self.eps)

            def rgrad(self, p, d_p):
                if d_p.is_sparse:
                    p_sqnorm = th.sum(
                        p[d_p._indices()[0].squeeze()] ** 2, dim=1,
                        keepdim=True
                    ).expand_as(d_p._values())
                    n_vals = d_p._values() * ((1 - p_sqnorm) ** 2) / 4
                    n_vals.renorm_(2, 0, 5)
                    d_p = th.sparse.DoubleTensor(d_p._indices(), n_vals, d_p.size())
                else:
                    p_sqnorm = th.sum(p ** 2, dim=-1, keepdim=True)
                    d_p = d_p * ((1 - p_sqnorm) ** 2 / 4).expand_as(d_p)
                return d_p

        class Distance(Function):
            @staticmethod
            def grad(x, v, sqnormx, sqnormv, sqdist, eps):
                alpha = (1 - sqnormx)
                beta = (1 - sqnormv)
                z = 1 + 2 * sqdist / (alpha * beta)
                a = ((sqnormv - 2 * th.sum(x * v, dim=-1) + 1) / th.pow(alpha, 2))\
                    .unsqueeze(-1).expand_as(x)
                a = a * x - v / alpha.unsqueeze(-1).expand_as(v)
                z = th.sqrt(th.pow(z, 2) - 1)
                z = th.clamp(z * beta, min=eps).unsqueeze(-1)
                return 4 * a / z.expand_as(x)

            @staticmethod
            def forward(ctx, u, v, eps):
                squnorm = th.clamp(th.sum(u * u, dim=-1), 0, 1 - eps)
                sqvnorm = th.clamp(th.sum(v * v, dim=-1), 0, 1 - eps)
                sqdist = th.sum(th.pow(u - v, 2), dim=-1)
                ctx.eps = eps
                ctx.save_for_backward(u, v, squnorm, sqvnorm, sqdist)
                x = sqdist / ((1 - squnorm) * (1 - sqvnorm)) * 2 + 1
                # arcosh
                z = th.sqrt(th.pow(x, 2) - 1)
                return th.log(x + z)

            @staticmethod
            def backward(ctx, g):
                u, v, squnorm, sqvnorm, sqdist = ctx.saved_tensors
                g = g.unsqueeze(-1)
                gu = Distance.grad(u, v, squnorm, sqvnorm, sqdist, ctx.eps)
                gv = Distance.grad(v, u, sqvnorm, squnorm, sqdist, ctx.eps)
                return g.expand_as(gu) * gu, g.expand_as(gv) * gv, None

        class EnergyFunction(torch.nn.Module):
            def __init__(self, manifold, dim, size, sparse=False, **kwargs):
                super().__init__()
                self.manifold = manifold
                self.lt = manifold.allocate_lt(size, dim, sparse)
                self.nobjects = size
                self.manifold.init_weights(self.lt)

            def forward(self, inputs):
                e = self.lt(inputs)
                with torch.no_grad():
                    e = self.manifold.normalize(e)
                o = e.narrow(1, 1, e.size(1) - 1)
                s = e.narrow(1, 0, 1).expand_as(o)
                return self.energy(s, o).squeeze(-1)

            def optim_params(self):
                return [
                    {
                        "params": self.lt.parameters(),
                        "rgrad": self.manifold.rgrad,
                        "expm": self.manifold.expm,
                        "logm": self.manifold.logm,
                        "ptransp": self.manifold.ptransp,
                    }
                ]

        class DistanceEnergyFunction(EnergyFunction):
            def energy(self, s, o):
                return self.manifold.distance(s, o)

            def loss(self, inp, target, **kwargs):
                return F.cross_entropy(inp.neg(), target)

        class RiemannianSGD(Optimizer):
            def __init__(
                    self,
                    params,
                    lr=required,
                    rgrad=required,
                    expm=required,
            ):
                defaults = {
                    'lr': lr,
                    'rgrad': rgrad,
                    'expm': expm,
                }
                super(RiemannianSGD, self).__init__(params, defaults)

            def step(self, lr=None, **kwargs):
                loss = None

                for group in self.param_groups:
                    for p in group['params']:
                        lr = lr or group['lr']
                        rgrad = group['rgrad']
                        expm = group['expm']

                        if p.grad is None:
                            continue
                        d_p = p.grad.data
                        # make sure we have no duplicates in sparse tensor
                        if d_p.is_sparse:
                            d_p = d_p.coalesce()
                        d_p = rgrad(p.data, d_p)
                        d_p.mul_(-lr)
                        expm(p.data, d_p)

                return loss

        inputs = torch.tensor([[0, 1, 3, 4], [1, 2, 5, 0], [0, 2, 5, 5]])
        targets = torch.zeros(3, dtype=torch.long)
        rs = np.random.RandomState(0)
        init = rs.uniform(-0.5, 0.5, (6, 2))
        for sparse in (True, False):
            model = DistanceEnergyFunction(PoincareManifold(), 2, 6, sparse=sparse).double()
            log("init scale", bool(model.lt.weight.abs().max() <= 1e-4))
            with torch.no_grad():
                model.lt.weight.copy_(torch.tensor(init))
            optimizer = RiemannianSGD(model.optim_params(), lr=0.3)
            log("group keys", sorted(optimizer.param_groups[0]))
            for step in range(2):
                optimizer.zero_grad()
                preds = model(inputs)
                loss = model.loss(preds, targets)
                loss.backward()
                grad = model.lt.weight.grad
                log("is_sparse", grad.is_sparse)
                log("grad", grad.to_dense() if grad.is_sparse else grad)
                optimizer.step(lr=0.3 if step == 0 else None)
                log("preds", preds)
                log("loss", loss)
                log("weight", model.lt.weight)
            log("norms", model.lt.weight.norm(dim=-1))
        eu = EuclideanManifold(max_norm=1)
        log("euclidean distance", eu.distance(torch.tensor(init[:3]), torch.tensor(init[3:])))
        p = torch.zeros(4, 2, dtype=torch.float64)
        v = torch.sparse_coo_tensor(torch.tensor([[2, 0]]), torch.ones(2, 2, dtype=torch.float64), (4, 2))
        log("ptransp", eu.ptransp(p, None, None, v))

    run_both(program)


# EthanRosenthal/torchmf torchmf.py (explicit matrix factorisation: an ``Interactions``
# ``Dataset`` over a scipy COO ratings matrix through ``torch.from_numpy`` and a ``DataLoader``,
# ``BaseModule`` with float64 bias and factor ``Embedding``s built by ``.double()``, its
# ``__call__`` override that skips ``nn.Module.__call__``, ``preds += ...`` in place, the loss
# ``nn.MSELoss(size_average=False)`` (the legacy argument, a deprecation warning in torch),
# ``BPRModule``'s pairwise variant and ``_fit_epoch``'s ``total_loss += loss.data[0]`` (an
# IndexError on a 0-d loss since torch 0.4, logged as such; the loop uses ``loss.item()``).
# ``np.long`` -> ``np.int64`` (removed from numpy), 5 users x 6 items with 9 ratings, 3 factors,
# Adam for one epoch of batches of one without shuffling (both modules' in-place bias sums fail
# to broadcast on larger batches, in torch too: logged); BPR's loss on its terms summed by hand
def test_torchmf_explicit_and_bpr():
    def program(torch, log):
        import scipy.sparse as sp
        nn = torch.nn
        data = torch.utils.data
        Variable = torch.autograd.Variable

        class Interactions(data.Dataset):
            def __init__(self, train_data, test_data=None, train=True):
                self.train = train
                self.train_data = train_data.tocoo()
                self.test_data = test_data.tocoo()
                self.n_users = self.train_data.shape[0]
                self.n_items = self.train_data.shape[1]

                self.train_row = torch.from_numpy(self.train_data.row.astype(np.int64))
                self.train_col = torch.from_numpy(self.train_data.col.astype(np.int64))
                self.train_val = torch.from_numpy(self.train_data.data.astype(np.float32))

                self.test_row = torch.from_numpy(self.test_data.row.astype(np.int64))
                self.test_col = torch.from_numpy(self.test_data.col.astype(np.int64))
                self.test_val = torch.from_numpy(self.test_data.data.astype(np.float32))

            def __getitem__(self, index):
                if self.train:
                    row = self.train_row[index]
                    col = self.train_col[index]
                    val = self.train_val[index]
                else:
                    row = self.test_row[index]
                    col = self.test_col[index]
                    val = self.test_val[index]

                return (row, col), val

            def __len__(self):
                if self.train:
                    return self.train_data.nnz
                else:
                    return self.test_data.nnz

        class BaseModule(nn.Module):
            def __init__(self,
                         n_users,
                         n_items,
                         n_factors=40,
                         dropout_p=0,
                         loss_function=nn.MSELoss(size_average=False)):
                super(BaseModule, self).__init__()
                self.n_users = n_users
                self.n_items = n_items
                self.user_biases = nn.Embedding(n_users, 1).double()
                self.item_biases = nn.Embedding(n_items, 1).double()
                self.user_embeddings = nn.Embedding(n_users, n_factors).double()
                self.item_embeddings = nn.Embedding(n_items, n_factors).double()

                self.dropout_p = dropout_p
                self.dropout = nn.Dropout(p=self.dropout_p)

                self.loss_function = loss_function

            def forward(self, users, items):
                ues = self.user_embeddings(users)
                uis = self.item_embeddings(items)

                preds = self.user_biases(users) + self.item_biases(items)
                preds += (self.dropout(ues) * self.dropout(uis)).sum(1)

                return preds

            def __call__(self, *args):
                return self.forward(*args)

        class BPRModule(BaseModule):
            def __init__(self,
                         n_users,
                         n_items,
                         n_factors=40,
                         dropout_p=0):
                super(BPRModule, self).__init__(
                    n_users,
                    n_items,
                    n_factors=n_factors,
                    dropout_p=dropout_p
                )

            def forward(self, users, pos_items, neg_items):
                ues = self.user_embeddings(users)
                uis = self.item_embeddings(pos_items) - self.item_embeddings(neg_items)
                preds = (self.dropout(ues) * self.dropout(uis)).sum(1)

                preds += self.user_biases(users)
                preds += self.item_biases(pos_items) - self.item_biases(neg_items)
                return preds

        def bpr_loss(preds, vals):
            sig = nn.Sigmoid()
            return (1.0 - sig(preds)).pow(2).sum()

        rows = np.array([0, 0, 1, 2, 2, 3, 4, 4, 1])
        cols = np.array([1, 4, 2, 0, 5, 3, 1, 2, 5])
        vals = np.array([5., 3., 4., 1., 2., 5., 4., 2., 3.])
        train = sp.coo_matrix((vals, (rows, cols)), shape=(5, 6))
        test = sp.coo_matrix((vals[:3], (rows[:3], cols[:3])), shape=(5, 6))
        interactions = Interactions(train, test_data=test, train=True)
        log("len", len(interactions))
        log("item", interactions[2])
        model = init_params(torch, BaseModule(5, 6, n_factors=3), 0, scale=0.5)
        log("dtype", str(model.user_embeddings.weight.dtype).split(".")[-1])
        # (B, 1) biases += (B,) dot products: the in-place broadcast fails for B > 1 since
        # torch's broadcasting (0.2), so only batches of one train
        log_outcome(log, "batch of 4", lambda: model(torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 4])))
        loader = data.DataLoader(interactions, batch_size=1, shuffle=False)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.)
        model.train()
        total_loss = torch.Tensor([0])
        for batch_idx, ((row, col), val) in enumerate(loader):
            row = Variable(row)
            col = Variable(col)
            val = Variable(val)
            optimizer.zero_grad()
            preds = model(row, col)
            loss = model.loss_function(preds, val)
            loss.backward()
            optimizer.step()
            log("preds", preds)
            log("loss", loss)
            total_loss += loss.item()
        log_outcome(log, "loss.data[0]", lambda: loss.data[0])
        total_loss /= len(interactions)
        log("total", total_loss[0])
        log("grad item emb", model.item_embeddings.weight.grad)
        bpr = init_params(torch, BPRModule(5, 6, n_factors=3), 1, scale=0.5)
        users, pos, neg = torch.tensor([0, 1, 2, 4]), torch.tensor([1, 2, 0, 1]), torch.tensor([3, 3, 4, 0])
        # (B,) dot products += (B, 1) biases: an error at any batch size
        log_outcome(log, "bpr forward", lambda: bpr(users, pos, neg))
        log_outcome(log, "bpr one", lambda: bpr(users[:1], pos[:1], neg[:1]))
        ues = bpr.user_embeddings(users)
        uis = bpr.item_embeddings(pos) - bpr.item_embeddings(neg)
        loss = bpr_loss((ues * uis).sum(1) + (bpr.user_biases(users) + bpr.item_biases(pos)
                                               - bpr.item_biases(neg)).squeeze(1), None)
        loss.backward()
        log("bpr loss", loss)
        log("bpr grad", bpr.item_biases.weight.grad)

    run_both(program)


# chenxijun1029/DeepFM_with_PyTorch model/DeepFM.py (DeepFM: per-field first- and second-order
# ``Embedding``s in ModuleLists indexed by ``Xi[:, i, :]`` and scaled by ``Xv[:, i]`` through
# ``.t()``, the FM pairwise term as ``0.5 * (sum ** 2 - sum of squares)`` of normalised field
# vectors, deep layers made with ``setattr``/``getattr`` by name, intermediate tensors stored as
# module attributes, a module attribute named ``dtype`` (``torch.long``, used in ``fit``), the
# ``l1_reg``/``l2_reg`` sums over ``named_parameters`` from a ``requires_grad`` zeros tensor,
# and ``fit``'s loop: ``self.train().to(device=...)``, BCEWithLogitsLoss plus 1e-6 * l1, an
# ``if not torch.isnan(loss)`` guard; ``check_accuracy`` with ``next`` on the validation
# iterator). 3 fields of sizes (4, 5, 3), embedding 4, hidden [8, 8], dropout [0, 0] (it draws
# from the random stream), batches of 4 from a TensorDataset in place of the Criteo loader,
# 1 epoch of 2 batches, verbose with print_every=1; SGD in place of main.py's Adam: the Linear
# biases before BatchNorm get a gradient that is float32 noise around zero, which Adam's first
# step turns into a full lr-sized step of either sign (seen by the running stats and eval mode)
def test_deepfm_fit_and_check_accuracy():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class DeepFM(nn.Module):
            def __init__(self, feature_sizes, embedding_size=4,
                         hidden_dims=[200,200,200],
                         dropout=[0.5, 0.5, 0.5],

                         use_cuda=True, verbose=False):
                super().__init__()
                self.field_size = len(feature_sizes)
                self.feature_sizes = feature_sizes
                self.embedding_size = embedding_size
                self.hidden_dims = hidden_dims
                self.dtype = torch.long
                self.bias = torch.nn.Parameter(torch.zeros(1, dtype=torch.float32))
                if use_cuda and torch.cuda.is_available():
                    self.device = torch.device('cuda')
                else:
                    self.device = torch.device('cpu')
                self.fm_first_order_embeddings = nn.ModuleList(
                    [nn.Embedding(feature_size, 1) for feature_size in self.feature_sizes])
                self.fm_second_order_embeddings = nn.ModuleList(
                    [nn.Embedding(feature_size, self.embedding_size) for feature_size in self.feature_sizes])
                all_dims = [self.field_size * self.embedding_size] + self.hidden_dims
                for i in range(1, len(hidden_dims) + 1):
                    setattr(self, 'linear_'+str(i), nn.Linear(all_dims[i-1], all_dims[i]))
                    setattr(self, 'batchNorm_' + str(i), nn.BatchNorm1d(all_dims[i]))
                    setattr(self, 'dropout_'+str(i), nn.Dropout(dropout[i-1]))
                self.avg_acc = None
                self.init_weight()

            def init_weight(self):
                for m in self.modules():
                    if isinstance(m, nn.Linear):
                        nn.init.kaiming_normal_(m.weight, mode='fan_in')
                        nn.init.constant_(m.bias, 0)
                    if isinstance(m, nn.BatchNorm1d):
                        nn.init.constant_(m.weight, 1)
                        nn.init.constant_(m.bias, 0)

            def forward(self, Xi, Xv):
                fm_first_order_emb_arr = [(torch.sum(emb(Xi[:, i, :]), 1).t() * Xv[:, i]).t() for i, emb in enumerate(self.fm_first_order_embeddings)]
                f1 = torch.cat(fm_first_order_emb_arr, 1)

                # use 2xy = (x+y)^2 - (x^2 + y^2) reduce calculation
                xv = torch.stack([(torch.sum(emb(Xi[:, i, :]), 1).t() * Xv[:, i]).t() for i, emb in enumerate(self.fm_second_order_embeddings)], dim=1)
                xv = F.normalize(xv,dim=1)
                s1 = torch.sum(xv,dim=1).pow(2.0)
                s2 = torch.sum(xv.pow(2.0), dim=1)
                f2 = 0.5 * (s1 - s2)
                self.xv = xv
                self.s1 = s1
                self.s2 = s2

                deep_emb = torch.flatten(xv, start_dim=1)
                deep_out = deep_emb
                for i in range(1,len(self.hidden_dims) + 1):
                    deep_out = getattr(self, 'linear_' + str(i))(deep_out)
                    deep_out = F.relu(getattr(self, 'batchNorm_' + str(i))(deep_out))
                    deep_out = getattr(self, 'dropout_' + str(i))(deep_out)

                self.f1 = f1
                self.f2 = f2
                self.deep_out = deep_out
                total_sum = torch.sum(f1, 1) + torch.sum(f2, 1) + torch.sum(deep_out, 1) + self.bias
                return total_sum

            def l2_reg(self):
                reg_loss = torch.zeros(1, dtype=torch.float32, requires_grad=True)
                for varname, param in self.named_parameters():
                    if 'bias' not in varname:
                        reg_loss = reg_loss + torch.norm(param)
                return reg_loss

            def l1_reg(self):
                reg_loss = torch.zeros(1, dtype=torch.float32, requires_grad=True)
                reg_loss = reg_loss.to(device=self.device, dtype=torch.float32)
                for varname, param in self.named_parameters():
                    if 'bias' not in varname:
                        reg_loss = reg_loss + torch.sum(torch.abs(param))
                return reg_loss

            def fit(self, loader_train, loader_val, optimizer, epochs=1, verbose=False, print_every=100):
                model = self.train().to(device=self.device)
                criterion = torch.nn.BCEWithLogitsLoss()
                self.iter_val = iter(loader_val)

                for epoch in range(epochs):
                    for t, (xi, xv, y) in enumerate(loader_train):
                        xi = xi.to(device=self.device, dtype=self.dtype)
                        xv = xv.to(device=self.device, dtype=torch.float32)
                        y = y.to(device=self.device, dtype=torch.float32)

                        total = model(xi, xv)
                        reg = self.l1_reg().to(device=self.device, dtype=torch.float32)
                        err = criterion(total, y)
                        loss = err + 1e-6*reg
                        if not torch.isnan(loss):
                            optimizer.zero_grad()
                            loss.backward()
                            optimizer.step()

                        if verbose and t % print_every == 0:
                            print('Epoch: %d, Iteration %d, loss = %.4f,%.4f,%.4f' % (epoch, t, loss.item(), reg.item(), err.item()))
                            try:
                                self.check_accuracy(self.iter_val, model)
                            except StopIteration:
                                self.iter_val = iter(loader_val)
                            model.train()
                            print()

            def check_accuracy(self, loader, model):
                print('Checking accuracy on validation set')
                num_correct = 0
                num_samples = 0
                model.eval()  # set model to evaluation mode
                with torch.no_grad():
                    xi, xv, y = next(loader)
                    xi = xi.to(device=self.device, dtype=self.dtype)  # move to device, e.g. GPU
                    xv = xv.to(device=self.device, dtype=torch.float32)
                    y = y.to(device=self.device, dtype=torch.float32)
                    total = model(xi, xv)
                    preds = (torch.sigmoid(total) > 0.5).type(torch.float32)
                    num_correct += (preds == y).sum()
                    num_samples += preds.size(0)

                    try:
                        acc = float(num_correct) / num_samples
                        if self.avg_acc is None:
                            self.avg_acc = acc
                        else:
                            self.avg_acc = 0.9 * self.avg_acc + 0.1 * acc
                        print('Got %d / %d correct (%.2f%%), avg_acc=%.2f%%' % (num_correct, num_samples, 100 * acc, 100 * self.avg_acc))
                    except ZeroDivisionError as e:
                        print(e)
                        return

        rs = np.random.RandomState(0)
        xi = torch.tensor(np.stack([rs.randint(0, n, (8, 1)) for n in (4, 5, 3)], 1))
        xv = torch.tensor(rs.uniform(0.5, 1.5, (8, 3)).astype(np.float32))
        y = torch.tensor([1., 0., 1., 1., 0., 0., 1., 0.])
        ds = torch.utils.data.TensorDataset(xi, xv, y)
        loader_train = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=False)
        loader_val = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=False)
        model = DeepFM([4, 5, 3], embedding_size=4, hidden_dims=[8, 8], dropout=[0, 0], use_cuda=False)
        log("dtype attribute", str(model.dtype).split(".")[-1])
        log("layer names", [n for n, _ in model.named_children()])
        init_params(torch, model, 0, scale=0.5)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        model.fit(loader_train, loader_val, optimizer, epochs=1, verbose=True, print_every=1)
        log("f2", model.f2)
        log("xv", model.xv)
        log("deep_out", model.deep_out)
        log("l2", model.l2_reg())
        log("bias grad", model.bias.grad)
        log("emb grad", model.fm_second_order_embeddings[1].weight.grad)
        log("running_mean", model.batchNorm_1.running_mean)
        log("avg_acc", model.avg_acc)

    run_both(program)


# manzilzaheer/DeepSets PointClouds/classifier.py (D and DTanh: permutation-equivariant layers
# PermEqui1/2 with max or mean pooling over the set subtracted, ``nn.ELU(inplace=True)`` after
# each, a mean or max over set elements, the ``ro`` head; ``print(self)`` of the whole module at
# construction; the hand-written ``clip_grad`` over ``p.grad.data``) with run.py's loop
# (cross entropy, Adam, clip_grad(model, 5)). d_dim 256 -> 8, 40 classes as written, 3 sets of
# 5 points; the head's Dropout(0.5) set to p=0 after construction (it draws from the random
# stream); every pool for one step each
def test_deepsets_permequi_point_sets():
    def program(torch, log):
        nn = torch.nn

        class PermEqui1_max(nn.Module):
          def __init__(self, in_dim, out_dim):
            super(PermEqui1_max, self).__init__()
            self.Gamma = nn.Linear(in_dim, out_dim)

          def forward(self, x):
            xm, _ = x.max(1, keepdim=True)
            x = self.Gamma(x-xm)
            return x

        class PermEqui1_mean(nn.Module):
          def __init__(self, in_dim, out_dim):
            super(PermEqui1_mean, self).__init__()
            self.Gamma = nn.Linear(in_dim, out_dim)

          def forward(self, x):
            xm = x.mean(1, keepdim=True)
            x = self.Gamma(x-xm)
            return x

        class PermEqui2_max(nn.Module):
          def __init__(self, in_dim, out_dim):
            super(PermEqui2_max, self).__init__()
            self.Gamma = nn.Linear(in_dim, out_dim)
            self.Lambda = nn.Linear(in_dim, out_dim, bias=False)

          def forward(self, x):
            xm, _ = x.max(1, keepdim=True)
            xm = self.Lambda(xm)
            x = self.Gamma(x)
            x = x - xm
            return x

        class PermEqui2_mean(nn.Module):
          def __init__(self, in_dim, out_dim):
            super(PermEqui2_mean, self).__init__()
            self.Gamma = nn.Linear(in_dim, out_dim)
            self.Lambda = nn.Linear(in_dim, out_dim, bias=False)

          def forward(self, x):
            xm = x.mean(1, keepdim=True)
            xm = self.Lambda(xm)
            x = self.Gamma(x)
            x = x - xm
            return x

        class D(nn.Module):

          def __init__(self, d_dim, x_dim=3, pool = 'mean'):
            super(D, self).__init__()
            self.d_dim = d_dim
            self.x_dim = x_dim

            if pool == 'max':
                self.phi = nn.Sequential(
                  PermEqui2_max(self.x_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui2_max(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui2_max(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                )
            elif pool == 'max1':
                self.phi = nn.Sequential(
                  PermEqui1_max(self.x_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui1_max(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui1_max(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                )
            elif pool == 'mean':
                self.phi = nn.Sequential(
                  PermEqui2_mean(self.x_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui2_mean(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui2_mean(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                )
            elif pool == 'mean1':
                self.phi = nn.Sequential(
                  PermEqui1_mean(self.x_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui1_mean(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                  PermEqui1_mean(self.d_dim, self.d_dim),
                  nn.ELU(inplace=True),
                )

            self.ro = nn.Sequential(
               nn.Dropout(p=0.5),
               nn.Linear(self.d_dim, self.d_dim),
               nn.ELU(inplace=True),
               nn.Dropout(p=0.5),
               nn.Linear(self.d_dim, 40),
            )
            print(self)

          def forward(self, x):
            phi_output = self.phi(x)
            sum_output = phi_output.mean(1)
            ro_output = self.ro(sum_output)
            return ro_output

        class DTanh(nn.Module):

          def __init__(self, d_dim, x_dim=3, pool = 'mean'):
            super(DTanh, self).__init__()
            self.d_dim = d_dim
            self.x_dim = x_dim

            if pool == 'max':
                self.phi = nn.Sequential(
                  PermEqui2_max(self.x_dim, self.d_dim),
                  nn.Tanh(),
                  PermEqui2_max(self.d_dim, self.d_dim),
                  nn.Tanh(),
                  PermEqui2_max(self.d_dim, self.d_dim),
                  nn.Tanh(),
                )
            elif pool == 'mean1':
                self.phi = nn.Sequential(
                  PermEqui1_mean(self.x_dim, self.d_dim),
                  nn.Tanh(),
                  PermEqui1_mean(self.d_dim, self.d_dim),
                  nn.Tanh(),
                  PermEqui1_mean(self.d_dim, self.d_dim),
                  nn.Tanh(),
                )

            self.ro = nn.Sequential(
               nn.Dropout(p=0.5),
               nn.Linear(self.d_dim, self.d_dim),
               nn.Tanh(),
               nn.Dropout(p=0.5),
               nn.Linear(self.d_dim, 40),
            )
            print(self)

          def forward(self, x):
            phi_output = self.phi(x)
            sum_output, _ = phi_output.max(1)
            ro_output = self.ro(sum_output)
            return ro_output

        def clip_grad(model, max_norm):
            total_norm = 0
            for p in model.parameters():
                param_norm = p.grad.data.norm(2)
                total_norm += param_norm ** 2
            total_norm = total_norm ** (0.5)
            clip_coef = max_norm / (total_norm + 1e-6)
            if clip_coef < 1:
                for p in model.parameters():
                    p.grad.data.mul_(clip_coef)
            return total_norm

        x = randn(torch, (3, 5, 3), 1)
        y = torch.tensor([3, 17, 39])
        for seed, (cls, pool) in enumerate(((D, 'max'), (D, 'max1'), (D, 'mean'), (D, 'mean1'),
                                            (DTanh, 'max'), (DTanh, 'mean1'))):
            model = init_params(torch, cls(8, x_dim=3, pool=pool), seed, scale=0.6)
            for m in model.ro:
                if isinstance(m, nn.Dropout):
                    m.p = 0.0
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-7, eps=1e-3)
            f_X = model(x)
            loss = torch.nn.functional.cross_entropy(f_X, y)
            optimizer.zero_grad()
            loss.backward()
            total = clip_grad(model, 5)
            optimizer.step()
            log(pool + " out", f_X)
            log(pool + " loss", loss)
            log(pool + " total norm", total)
            log(pool + " grad", model.phi[0].Gamma.weight.grad)
            log(pool + " pred", f_X.max(dim=1)[1])

    run_both(program)


# eriklindernoren/PyTorch-GAN implementations/infogan/infogan.py (InfoGAN: three Adam optimizers,
# the third over ``itertools.chain`` of both models' parameters; ``nn.BatchNorm2d(128, 0.8)``
# (0.8 is eps, positionally), ``nn.Upsample(scale_factor=2)``, ``nn.Softmax()`` without a dim
# (torch's implicit-dim warning) whose probabilities CrossEntropyLoss then takes as logits,
# ``to_categorical`` through ``np.zeros`` fancy assignment and ``FloatTensor``, ``Variable(...,
# requires_grad=False)`` targets from ``FloatTensor(batch, 1).fill_``, ``weights_init_normal``
# by class name through ``apply``; the generator, discriminator and information steps). The
# numpy draws of the script run as written after ``np.random.seed(0)`` (the same numbers on
# both sides); ``opt`` is a namespace with img_size 32 -> 16, latent_dim 62 -> 6, batches of 3
# random images in place of MNIST; the discriminator's Dropout2d(0.25) set to p=0 and
# ``weights_init_normal``'s normal draws replaced by ``init_params`` (both draw from torch's
# random stream); one iteration
def test_infogan_three_optimizers():
    def program(torch, log):
        import itertools
        import types
        nn = torch.nn
        Variable = torch.autograd.Variable
        opt = types.SimpleNamespace(n_epochs=1, batch_size=3, lr=0.0002, b1=0.5, b2=0.999, latent_dim=6,
                                    code_dim=2, n_classes=10, img_size=16, channels=1, sample_interval=400)
        cuda = False
        FloatTensor = torch.FloatTensor
        LongTensor = torch.LongTensor
        np.random.seed(0)

        def weights_init_normal(m):
            classname = m.__class__.__name__
            if classname.find('Conv') != -1:
                torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
            elif classname.find('BatchNorm') != -1:
                torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
                torch.nn.init.constant_(m.bias.data, 0.0)

        def to_categorical(y, num_columns):
            """Returns one-hot encoded Variable"""
            y_cat = np.zeros((y.shape[0], num_columns))
            y_cat[range(y.shape[0]), y] = 1.

            return Variable(FloatTensor(y_cat))

        class Generator(nn.Module):
            def __init__(self):
                super(Generator, self).__init__()
                input_dim = opt.latent_dim + opt.n_classes + opt.code_dim

                self.init_size = opt.img_size // 4 # Initial size before upsampling
                self.l1 = nn.Sequential(nn.Linear(input_dim, 128*self.init_size**2))

                self.conv_blocks = nn.Sequential(
                    nn.BatchNorm2d(128),
                    nn.Upsample(scale_factor=2),
                    nn.Conv2d(128, 128, 3, stride=1, padding=1),
                    nn.BatchNorm2d(128, 0.8),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Upsample(scale_factor=2),
                    nn.Conv2d(128, 64, 3, stride=1, padding=1),
                    nn.BatchNorm2d(64, 0.8),
                    nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(64, opt.channels, 3, stride=1, padding=1),
                    nn.Tanh()
                )

            def forward(self, noise, labels, code):
                gen_input = torch.cat((noise, labels, code), -1)
                out = self.l1(gen_input)
                out = out.view(out.shape[0], 128, self.init_size, self.init_size)
                img = self.conv_blocks(out)
                return img

        class Discriminator(nn.Module):
            def __init__(self):
                super(Discriminator, self).__init__()

                def discriminator_block(in_filters, out_filters, bn=True):
                    """Returns layers of each discriminator block"""
                    block = [   nn.Conv2d(in_filters, out_filters, 3, 2, 1),
                                nn.LeakyReLU(0.2, inplace=True),
                                nn.Dropout2d(0.25)]
                    if bn:
                        block.append(nn.BatchNorm2d(out_filters, 0.8))
                    return block

                self.conv_blocks = nn.Sequential(
                    *discriminator_block(opt.channels, 16, bn=False),
                    *discriminator_block(16, 32),
                    *discriminator_block(32, 64),
                    *discriminator_block(64, 128),
                )

                # The height and width of downsampled image
                ds_size = opt.img_size // 2**4

                # Output layers
                self.adv_layer = nn.Sequential(nn.Linear(128*ds_size**2, 1))
                self.aux_layer = nn.Sequential(
                    nn.Linear(128*ds_size**2, opt.n_classes),
                    nn.Softmax()
                )
                self.latent_layer = nn.Sequential(nn.Linear(128*ds_size**2, opt.code_dim))

            def forward(self, img):
                out = self.conv_blocks(img)
                out = out.view(out.shape[0], -1)
                validity = self.adv_layer(out)
                label = self.aux_layer(out)
                latent_code = self.latent_layer(out)

                return validity, label, latent_code

        # Loss functions
        adversarial_loss = torch.nn.MSELoss()
        categorical_loss = torch.nn.CrossEntropyLoss()
        continuous_loss = torch.nn.MSELoss()

        # Loss weights
        lambda_cat = 1
        lambda_con = 0.1

        # Initialize generator and discriminator
        generator = Generator()
        discriminator = Discriminator()
        generator.apply(weights_init_normal)
        discriminator.apply(weights_init_normal)
        init_params(torch, generator, 0, scale=0.1)
        init_params(torch, discriminator, 1, scale=0.1)
        for m in discriminator.modules():
            if isinstance(m, nn.Dropout2d):
                m.p = 0.0
        log("eps", [m.eps for m in generator.modules() if isinstance(m, nn.BatchNorm2d)])

        # Optimizers
        optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
        optimizer_info = torch.optim.Adam(itertools.chain(generator.parameters(), discriminator.parameters()),
                                            lr=opt.lr, betas=(opt.b1, opt.b2))

        imgs = randn(torch, (3, 1, 16, 16), 1).clamp(-1, 1)
        labels = torch.tensor([3, 7, 1])
        for epoch in range(opt.n_epochs):
            for i, (imgs, labels) in enumerate([(imgs, labels)]):

                batch_size = imgs.shape[0]

                # Adversarial ground truths
                valid = Variable(FloatTensor(batch_size, 1).fill_(1.0), requires_grad=False)
                fake = Variable(FloatTensor(batch_size, 1).fill_(0.0), requires_grad=False)

                # Configure input
                real_imgs = Variable(imgs.type(FloatTensor))
                labels = to_categorical(labels.numpy(), num_columns=opt.n_classes)

                optimizer_G.zero_grad()

                # Sample noise and labels as generator input
                z = Variable(FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
                label_input = to_categorical(np.random.randint(0, opt.n_classes, batch_size), num_columns=opt.n_classes)
                code_input = Variable(FloatTensor(np.random.uniform(-1, 1, (batch_size, opt.code_dim))))

                # Generate a batch of images
                gen_imgs = generator(z, label_input, code_input)

                # Loss measures generator's ability to fool the discriminator
                validity, _, _ = discriminator(gen_imgs)
                g_loss = adversarial_loss(validity, valid)

                g_loss.backward()
                optimizer_G.step()

                optimizer_D.zero_grad()

                # Loss for real images
                real_pred, _, _ = discriminator(real_imgs)
                d_real_loss = adversarial_loss(real_pred, valid)

                # Loss for fake images
                fake_pred, _, _ = discriminator(gen_imgs.detach())
                d_fake_loss = adversarial_loss(fake_pred, fake)

                # Total discriminator loss
                d_loss = (d_real_loss + d_fake_loss) / 2

                d_loss.backward()
                optimizer_D.step()

                optimizer_info.zero_grad()

                # Sample labels
                sampled_labels = np.random.randint(0, opt.n_classes, batch_size)

                # Ground truth labels
                gt_labels = Variable(LongTensor(sampled_labels), requires_grad=False)

                # Sample noise, labels and code as generator input
                z = Variable(FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
                label_input = to_categorical(sampled_labels, num_columns=opt.n_classes)
                code_input = Variable(FloatTensor(np.random.normal(-1, 1, (batch_size, opt.code_dim))))

                gen_imgs = generator(z, label_input, code_input)
                _, pred_label, pred_code = discriminator(gen_imgs)

                info_loss = lambda_cat * categorical_loss(pred_label, gt_labels) + \
                            lambda_con * continuous_loss(pred_code, code_input)

                info_loss.backward()
                optimizer_info.step()

                print ("[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f] [info loss: %f]" % (epoch, opt.n_epochs, i, 1,
                                                                    d_loss.item(), g_loss.item(), info_loss.item()))
                log("labels", labels)
                log("gen_imgs", gen_imgs)
                log("pred_label", pred_label)
                log("pred_code", pred_code)
                log("d_loss", d_loss)
                log("g_loss", g_loss)
                log("info_loss", info_loss)
        log("G l1 grad", generator.l1[0].weight.grad)
        log("D adv weight", discriminator.adv_layer[0].weight)
        log("D running_var", discriminator.conv_blocks[6].running_var)
        log("info state", len(optimizer_info.state))

    run_both(program)
