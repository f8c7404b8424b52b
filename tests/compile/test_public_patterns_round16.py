"""Round-15 public programs (``tests/api/test_public_programs_round15.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- dreamquark-ai/tabnet pytorch_tabnet/sparsemax.py: the sparsemax and entmax15 custom
  ``autograd.Function``s (sort, cumsum, gather, the forward's in-place edit of its input, a
  hand-written backward with boolean-mask assignment) inside a compiled SGD step;
- vsitzmann/siren explore_siren.ipynb + diff_operators.py: sine layers fitted on the gradient
  of their output with respect to ``coords.clone().detach().requires_grad_(True)``
  (``autograd.grad(create_graph=True)`` inside the step, then ``backward``), Adam;
- guoyang9/NCF model.py: NeuMF's GMF and MLP embeddings with BCEWithLogitsLoss, Adam;
- WangYueFt/dgcnn pytorch/model.py + util.py: ``topk`` k-nearest neighbours, the flat
  ``view(B*N, -1)[idx, :]`` gather, EdgeConv blocks with BatchNorm2d in train mode, the
  label-smoothing loss through ``scatter``, SGD with momentum and weight decay;
- kan-bayashi/ParallelWaveGAN parallel_wavegan/losses/stft_loss.py: a learnable waveform fitted
  with the multi-resolution ``torch.stft`` loss (``return_complex=True``, ``.real``/``.imag``,
  Frobenius and L1 norms), Adam;

and three compiled the way training scripts compile (``model = torch.compile(model)``, one with
``mode="reduce-overhead"``) with an ordinary eager loop around the compiled module:

- philipperemy/n-beats nbeats_pytorch/model.py: trend and seasonality bases made from numpy in
  every forward, blocks kept in Python lists, the ``ParameterList`` named ``parameters``;
- kaituoxu/Conv-TasNet src/conv_tasnet.py: gLN and dilated depthwise-separable Conv1d blocks
  with PReLU and Chomp1d, the eager loss with an in-place mask multiply of the compiled output;
- pclucas14/pixel-cnn-pp utils.py: weight-normalised shifted convolutions (``weight_norm``'s
  pre-forward hook recomputes the weight every call), gated resnets, ``nin`` and the
  discretized mixture-of-logistics loss.
"""
import math

import numpy as np

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


def _model_traced(run):
    """The compiled module ran as one traced program: no graph-break warning on any call."""
    assert not [w for w in run.warnings if "tracegrad.compile" in w], run.warnings


def _step_program(build, loss_fn, make_batch, opt="sgd", lr=0.05, scale=0.4):
    """``make(mod, wrap)`` for a compiled training step: ``wrap`` is applied to the whole step
    (forward, loss, ``zero_grad``, ``backward``, ``step``)."""
    def make(mod, wrap):
        model = np_init(build(mod), mod, scale=scale)
        if opt == "adam":
            optim = mod.optim.Adam(model.parameters(), lr=lr)
        else:
            optim = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

        def step(*batch):
            loss = loss_fn(mod, model, *batch)
            optim.zero_grad()
            loss.backward()
            optim.step()
            return loss
        return wrap(step), {"model": model, "opt": optim}, lambda i: make_batch(mod, i)
    return make


def _compiled_model_program(build, loss_fn, make_batch, lr=0.05, scale=0.4, opt="sgd"):
    """``make(mod, wrap)`` for a training script that compiles its model: ``wrap`` is applied to
    the module (``model = torch.compile(model)``) and the loop around it stays eager."""
    def make(mod, wrap):
        model = np_init(build(mod), mod, scale=scale)
        cmodel = wrap(model)
        if opt == "adam":
            optim = mod.optim.Adam(model.parameters(), lr=lr)
        else:
            optim = mod.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

        def step(*batch):
            out = cmodel(*batch[:-1])
            loss = loss_fn(mod, out, batch[-1])
            optim.zero_grad()
            loss.backward()
            optim.step()
            return loss, out
        return step, {"model": model, "opt": optim}, lambda i: make_batch(mod, i)
    return make


# ---- dreamquark-ai/tabnet pytorch_tabnet/sparsemax.py -----------------------------------------
def _tabnet(mod):
    nn, Function = mod.nn, mod.autograd.Function

    def _make_ix_like(input, dim=0):
        d = input.size(dim)
        rho = mod.arange(1, d + 1, device=input.device, dtype=input.dtype)
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
            output = mod.clamp(input - tau, min=0)
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
            grad_input = mod.where(output != 0, grad_input - v_hat, grad_input)
            return grad_input, None

        @staticmethod
        def _threshold_and_support(input, dim=-1):
            input_srt, _ = mod.sort(input, descending=True, dim=dim)
            input_cumsum = input_srt.cumsum(dim) - 1
            rhos = _make_ix_like(input, dim)
            support = rhos * input_srt > input_cumsum

            support_size = support.sum(dim=dim).unsqueeze(dim)
            tau = input_cumsum.gather(dim, support_size - 1)
            tau /= support_size.to(input.dtype)
            return tau, support_size

    class Entmax15Function(Function):
        @staticmethod
        def forward(ctx, input, dim=-1):
            ctx.dim = dim

            max_val, _ = input.max(dim=dim, keepdim=True)
            input = input - max_val  # same numerical stability trick as for softmax
            input = input / 2  # divide by 2 to solve actual Entmax

            tau_star, _ = Entmax15Function._threshold_and_support(input, dim)
            output = mod.clamp(input - tau_star, min=0) ** 2
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
            Xsrt, _ = mod.sort(input, descending=True, dim=dim)

            rho = _make_ix_like(input, dim)
            mean = Xsrt.cumsum(dim) / rho
            mean_sq = (Xsrt ** 2).cumsum(dim) / rho
            ss = rho * (mean_sq - mean ** 2)
            delta = (1 - ss) / rho

            delta_nz = mod.clamp(delta, 0)
            tau = mean - mod.sqrt(delta_nz)

            support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
            tau_star = tau.gather(dim, support_size - 1)
            return tau_star, support_size

    class AttentiveHead(nn.Module):   # TabNet's attentive transformer: fc, prior scales, sparsemax
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(5, 6)
            self.out = nn.Linear(6, 1)

        def forward(self, x, priors):
            a = self.fc(x)
            mask = SparsemaxFunction.apply(a * priors, -1)
            ent = Entmax15Function.apply(a, -1)
            return self.out(mask * x.sum(1, keepdim=True) + ent).squeeze(-1)

    return AttentiveHead()


def test_tabnet_sparsemax_step():
    make = _step_program(
        _tabnet, lambda mod, model, x, p, y: ((model(x, p) - y) ** 2).mean(),
        lambda mod, i: (data(mod, i, 4, 5), mod.ones(4, 6), data(mod, i, 4, seed=40)), scale=0.8)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- vsitzmann/siren explore_siren.ipynb + diff_operators.py -----------------------------------
def _siren(mod):
    nn = mod.nn

    class SineLayer(nn.Module):
        def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
            super().__init__()
            self.omega_0 = omega_0
            self.is_first = is_first
            self.in_features = in_features
            self.linear = nn.Linear(in_features, out_features, bias=bias)

        def forward(self, input):
            return mod.sin(self.omega_0 * self.linear(input))

    class Siren(nn.Module):
        def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=False,
                     first_omega_0=30, hidden_omega_0=30.):
            super().__init__()
            self.net = []
            self.net.append(SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0))
            for i in range(hidden_layers):
                self.net.append(SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0))
            if outermost_linear:
                self.net.append(nn.Linear(hidden_features, out_features))
            else:
                self.net.append(SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0))
            self.net = nn.Sequential(*self.net)

        def forward(self, coords):
            coords = coords.clone().detach().requires_grad_(True) # allows to take derivative w.r.t. input
            output = self.net(coords)
            return output, coords

    # omega_0 1 in place of 30 (np_init's normal weights stand in for SIREN's omega-scaled ones)
    return Siren(2, 6, 1, 1, outermost_linear=True, first_omega_0=1., hidden_omega_0=1.)


def _siren_loss(mod, model, coords, gt_grad):
    def gradient(y, x, grad_outputs=None):
        if grad_outputs is None:
            grad_outputs = mod.ones_like(y)
        grad = mod.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
        return grad

    model_output, coords = model(coords)
    img_grad = gradient(model_output, coords)
    return ((img_grad - gt_grad) ** 2).mean() + ((model_output - 0.1) ** 2).mean()


def test_siren_gradient_fitting_step():
    make = _step_program(
        _siren, _siren_loss,
        lambda mod, i: (data(mod, 0, 1, 9, 2), data(mod, i, 1, 9, 2, seed=40)), opt="adam", lr=0.01)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- guoyang9/NCF model.py -----------------------------------------------------------------------
def _ncf(mod):
    nn = mod.nn

    class NCF(nn.Module):
        def __init__(self, user_num, item_num, factor_num, num_layers, dropout, model):
            super(NCF, self).__init__()
            self.dropout = dropout
            self.model = model
            self.embed_user_GMF = nn.Embedding(user_num, factor_num)
            self.embed_item_GMF = nn.Embedding(item_num, factor_num)
            self.embed_user_MLP = nn.Embedding(user_num, factor_num * (2 ** (num_layers - 1)))
            self.embed_item_MLP = nn.Embedding(item_num, factor_num * (2 ** (num_layers - 1)))
            MLP_modules = []
            for i in range(num_layers):
                input_size = factor_num * (2 ** (num_layers - i))
                MLP_modules.append(nn.Dropout(p=self.dropout))
                MLP_modules.append(nn.Linear(input_size, input_size//2))
                MLP_modules.append(nn.ReLU())
            self.MLP_layers = nn.Sequential(*MLP_modules)
            predict_size = factor_num if self.model in ['MLP', 'GMF'] else factor_num * 2
            self.predict_layer = nn.Linear(predict_size, 1)

        def forward(self, user, item):
            if not self.model == 'MLP':
                embed_user_GMF = self.embed_user_GMF(user)
                embed_item_GMF = self.embed_item_GMF(item)
                output_GMF = embed_user_GMF * embed_item_GMF
            if not self.model == 'GMF':
                embed_user_MLP = self.embed_user_MLP(user)
                embed_item_MLP = self.embed_item_MLP(item)
                interaction = mod.cat((embed_user_MLP, embed_item_MLP), -1)
                output_MLP = self.MLP_layers(interaction)
            if self.model == 'GMF':
                concat = output_GMF
            elif self.model == 'MLP':
                concat = output_MLP
            else:
                concat = mod.cat((output_GMF, output_MLP), -1)
            prediction = self.predict_layer(concat)
            return prediction.view(-1)

    return NCF(7, 9, 4, 2, 0.0, 'NeuMF-end')


def test_ncf_neumf_step():
    make = _step_program(
        _ncf, lambda mod, model, u, it, y: mod.nn.BCEWithLogitsLoss()(model(u, it), y),
        lambda mod, i: (labels(mod, i, 8, 7), labels(mod, i, 8, 9, seed=300),
                        labels(mod, i, 8, 2, seed=400).float()), opt="adam", lr=0.01)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- WangYueFt/dgcnn pytorch/model.py + util.py ------------------------------------------------
def _dgcnn(mod):
    nn, F = mod.nn, mod.nn.functional

    def knn(x, k):
        inner = -2*mod.matmul(x.transpose(2, 1), x)
        xx = mod.sum(x**2, dim=1, keepdim=True)
        pairwise_distance = -xx - inner - xx.transpose(2, 1)
        idx = pairwise_distance.topk(k=k, dim=-1)[1]   # (batch_size, num_points, k)
        return idx

    def get_graph_feature(x, k=20, idx=None):
        batch_size = x.size(0)
        num_points = x.size(2)
        x = x.view(batch_size, -1, num_points)
        if idx is None:
            idx = knn(x, k=k)   # (batch_size, num_points, k)
        device = mod.device('cpu')
        idx_base = mod.arange(0, batch_size, device=device).view(-1, 1, 1)*num_points
        idx = idx + idx_base
        idx = idx.view(-1)
        _, num_dims, _ = x.size()
        x = x.transpose(2, 1).contiguous()
        feature = x.view(batch_size*num_points, -1)[idx, :]
        feature = feature.view(batch_size, num_points, k, num_dims)
        x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
        feature = mod.cat((feature-x, x), dim=3).permute(0, 3, 1, 2).contiguous()
        return feature

    class DGCNN(nn.Module):   # two EdgeConv blocks of the four (widths 64 -> 8), emb_dims 8
        def __init__(self, k=3, emb_dims=8, output_channels=4):
            super(DGCNN, self).__init__()
            self.k = k
            self.bn1 = nn.BatchNorm2d(8)
            self.bn2 = nn.BatchNorm2d(8)
            self.bn5 = nn.BatchNorm1d(emb_dims)
            self.conv1 = nn.Sequential(nn.Conv2d(6, 8, kernel_size=1, bias=False), self.bn1,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.conv2 = nn.Sequential(nn.Conv2d(8*2, 8, kernel_size=1, bias=False), self.bn2,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.conv5 = nn.Sequential(nn.Conv1d(16, emb_dims, kernel_size=1, bias=False), self.bn5,
                                       nn.LeakyReLU(negative_slope=0.2))
            self.linear3 = nn.Linear(emb_dims*2, output_channels)

        def forward(self, x):
            batch_size = x.size(0)
            x = get_graph_feature(x, k=self.k)
            x = self.conv1(x)
            x1 = x.max(dim=-1, keepdim=False)[0]
            x = get_graph_feature(x1, k=self.k)
            x = self.conv2(x)
            x2 = x.max(dim=-1, keepdim=False)[0]
            x = mod.cat((x1, x2), dim=1)
            x = self.conv5(x)
            x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
            x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
            x = mod.cat((x1, x2), 1)
            return self.linear3(x)

    return DGCNN()


def _dgcnn_loss(mod, model, x, gold):
    F = mod.nn.functional
    pred = model(x)
    gold = gold.contiguous().view(-1)
    eps = 0.2
    n_class = pred.size(1)
    one_hot = mod.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
    one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
    log_prb = F.log_softmax(pred, dim=1)
    return -(one_hot * log_prb).sum(dim=1).mean()


def test_dgcnn_step():
    make = _step_program(
        _dgcnn, _dgcnn_loss, lambda mod, i: (data(mod, i, 4, 3, 5), labels(mod, i, 4, 4)), scale=0.3)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- kan-bayashi/ParallelWaveGAN parallel_wavegan/losses/stft_loss.py --------------------------
def _stft_loss(mod):
    def stft(x, fft_size, hop_size, window_length, window):
        x_stft = mod.stft(x, fft_size, hop_size, window_length, window, return_complex=True)
        real = x_stft.real
        imag = x_stft.imag
        mag = mod.sqrt(real ** 2 + imag ** 2).transpose(2, 1)
        return mod.clamp(mag, min=1e-9)

    class STFTLoss(mod.nn.Module):
        def __init__(self, fft_size=1024, shift_size=120, window_length=600, window_type='hann_window'):
            super(STFTLoss, self).__init__()
            self.fft_size = fft_size
            self.shift_size = shift_size
            self.window_length = window_length
            self.window = getattr(mod, window_type)(window_length)

        def forward(self, x, y):
            x_mag = stft(x, self.fft_size, self.shift_size, self.window_length, self.window)
            y_mag = stft(y, self.fft_size, self.shift_size, self.window_length, self.window)
            sc_loss = mod.mean(mod.norm(y_mag - x_mag, p='fro', dim=2).view(-1) / mod.norm(y_mag, p='fro', dim=2).view(-1))
            mag_loss = mod.mean(mod.norm(mod.log(y_mag) - mod.log(x_mag), p=1, dim=2) / x_mag.size(2))
            return sc_loss + mag_loss

    class Generator(mod.nn.Module):   # a 1-D conv "vocoder" trained with the loss
        def __init__(self):
            super().__init__()
            self.conv = mod.nn.Conv1d(1, 1, 5, padding=2)
            self.losses = mod.nn.ModuleList([STFTLoss(16, 4, 12), STFTLoss(8, 2, 6)])

        def forward(self, noise, y):
            x = self.conv(noise.unsqueeze(1)).squeeze(1)
            loss = 0.0
            for f in self.losses:
                loss += f(x, y)
            return loss / len(self.losses)

    return Generator()


def test_stft_loss_step():
    make = _step_program(
        _stft_loss, lambda mod, model, n, y: model(n, y),
        lambda mod, i: (data(mod, i, 2, 48), data(mod, 0, 2, 48, seed=40)), opt="adam", lr=0.01)
    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- philipperemy/n-beats nbeats_pytorch/model.py (model = torch.compile(model)) ---------------
def _nbeats(mod):
    nn, F = mod.nn, mod.nn.functional

    def squeeze_last_dim(tensor):
        if len(tensor.shape) == 3 and tensor.shape[-1] == 1:  # (128, 10, 1) => (128, 10).
            return tensor[..., 0]
        return tensor

    def seasonality_model(thetas, t, device):
        p = thetas.size()[-1]
        assert p <= thetas.shape[1], 'thetas_dim is too big.'
        p1, p2 = (p // 2, p // 2) if p % 2 == 0 else (p // 2, p // 2 + 1)
        s1 = mod.tensor([np.cos(2 * np.pi * i * t) for i in range(p1)]).float()  # H/2-1
        s2 = mod.tensor([np.sin(2 * np.pi * i * t) for i in range(p2)]).float()
        S = mod.cat([s1, s2])
        return thetas.mm(S.to(device))

    def trend_model(thetas, t, device):
        p = thetas.size()[-1]
        assert p <= 4, 'thetas_dim is too big.'
        T = mod.tensor([t ** i for i in range(p)]).float()
        return thetas.mm(T.to(device))

    def linear_space(backcast_length, forecast_length):
        ls = np.arange(-backcast_length, forecast_length, 1) / forecast_length
        return ls[:backcast_length], ls[backcast_length:]

    class Block(nn.Module):
        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5, share_thetas=False):
            super(Block, self).__init__()
            self.fc1 = nn.Linear(backcast_length, units)
            self.fc2 = nn.Linear(units, units)
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
            return F.relu(self.fc2(x))

    class SeasonalityBlock(Block):
        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5):
            super(SeasonalityBlock, self).__init__(units, forecast_length, device, backcast_length,
                                                   forecast_length, share_thetas=True)

        def forward(self, x):
            x = super(SeasonalityBlock, self).forward(x)
            backcast = seasonality_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
            forecast = seasonality_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
            return backcast, forecast

    class TrendBlock(Block):
        def __init__(self, units, thetas_dim, device, backcast_length=10, forecast_length=5):
            super(TrendBlock, self).__init__(units, thetas_dim, device, backcast_length,
                                             forecast_length, share_thetas=True)

        def forward(self, x):
            x = super(TrendBlock, self).forward(x)
            backcast = trend_model(self.theta_b_fc(x), self.backcast_linspace, self.device)
            forecast = trend_model(self.theta_f_fc(x), self.forecast_linspace, self.device)
            return backcast, forecast

    class NBeatsNet(nn.Module):   # two fc layers per block of the four, 1 block per stack
        def __init__(self, device=mod.device('cpu'), forecast_length=5, backcast_length=10, units=6):
            super(NBeatsNet, self).__init__()
            self.forecast_length = forecast_length
            self.device = device
            self.parameters = []
            self.stacks = []
            for block in (TrendBlock(units, 3, device), SeasonalityBlock(units, 5, device)):
                self.stacks.append([block])
                self.parameters.extend(block.parameters())
            self.parameters = nn.ParameterList(self.parameters)

        def forward(self, backcast):
            backcast = squeeze_last_dim(backcast)
            forecast = mod.zeros(size=(backcast.size()[0], self.forecast_length,))
            for stack_id in range(len(self.stacks)):
                for block_id in range(len(self.stacks[stack_id])):
                    b, f = self.stacks[stack_id][block_id](backcast)
                    backcast = backcast.to(self.device) - b
                    forecast = forecast.to(self.device) + f
            return backcast, forecast

    return NBeatsNet()


def test_nbeats_compiled_model():
    make = _compiled_model_program(
        _nbeats, lambda mod, out, y: mod.nn.functional.mse_loss(out[1], y[..., 0]),
        lambda mod, i: (data(mod, i, 3, 10, 1), data(mod, i, 3, 5, 1, seed=40)), scale=0.3, opt="adam", lr=0.01)
    _model_traced(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- kaituoxu/Conv-TasNet src/conv_tasnet.py (model = torch.compile(model, mode="reduce-overhead"))
def _conv_tasnet(mod):
    nn, F = mod.nn, mod.nn.functional
    EPS = 1e-8

    class GlobalLayerNorm(nn.Module):
        def __init__(self, channel_size):
            super(GlobalLayerNorm, self).__init__()
            self.gamma = nn.Parameter(mod.Tensor(1, channel_size, 1))  # [1, N, 1]
            self.beta = nn.Parameter(mod.Tensor(1, channel_size,1 ))  # [1, N, 1]

        def forward(self, y):
            mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True) #[M, 1, 1]
            var = mod.pow(y-mean, 2).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
            return self.gamma * (y - mean) / mod.pow(var + EPS, 0.5) + self.beta

    class Chomp1d(nn.Module):
        def __init__(self, chomp_size):
            super(Chomp1d, self).__init__()
            self.chomp_size = chomp_size

        def forward(self, x):
            return x[:, :, :-self.chomp_size].contiguous()

    class TemporalBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, padding, dilation):
            super(TemporalBlock, self).__init__()
            self.conv1x1 = nn.Conv1d(in_channels, out_channels, 1, bias=False)
            self.prelu = nn.PReLU()
            self.norm = GlobalLayerNorm(out_channels)
            self.dsconv = nn.Sequential(
                nn.Conv1d(out_channels, out_channels, kernel_size, padding=padding, dilation=dilation,
                          groups=out_channels, bias=False),
                Chomp1d(padding), nn.PReLU(), GlobalLayerNorm(out_channels),
                nn.Conv1d(out_channels, in_channels, 1, bias=False))
            self.net = nn.Sequential(self.conv1x1, self.prelu, self.norm, self.dsconv)

        def forward(self, x):
            residual = x
            out = self.net(x)
            return F.relu(out + residual)

    class ConvTasNet(nn.Module):   # N=4, L=4, B=3, H=4, P=3, X=2, R=1, C=2
        def __init__(self, N=4, L=4, B=3, H=4, P=3, C=2):
            super().__init__()
            self.N, self.C = N, C
            self.conv1d_U = nn.Conv1d(L, N, kernel_size=1, bias=False)
            self.network = nn.Sequential(
                GlobalLayerNorm(N), nn.Conv1d(N, B, 1, bias=False),
                *[TemporalBlock(B, H, P, (P - 1) * 2 ** x, 2 ** x) for x in range(2)],
                nn.Conv1d(B, C * N, 1, bias=False))
            self.basis_signals = nn.Linear(N, L, bias=False)

        def forward(self, mixture):
            mixture = mixture.permute((0, 2, 1)).contiguous()  # [M, L, K]
            mixture_w = F.relu(self.conv1d_U(mixture))  # [M, N, K]
            M, N, K = mixture_w.size()
            score = self.network(mixture_w)
            score = score.permute((0, 2, 1)).view(M, K, self.C, N).contiguous()
            est_mask = F.softmax(score, dim=2)
            source_w = mod.unsqueeze(mixture_w.permute((0, 2, 1)), 2) * est_mask  # M x K x C x N
            est_source = self.basis_signals(source_w)  # M x K x C x L
            return est_source.permute((0, 2, 1, 3)).contiguous()  # M x C x K x L

    return ConvTasNet()


def _tasnet_loss(mod, est, source):
    # pit_criterion.py's masking and SI-SNR for C=2, eager around the compiled model: the
    # in-place ``*=`` of the compiled model's output and a per-utterance mask written in a loop
    est = est.reshape(est.size(0), est.size(1), -1)
    lengths = [est.size(2), est.size(2) - 2]
    mask = est.new_ones((est.size(0), 1, est.size(2)))
    for i in range(est.size(0)):
        mask[i, :, lengths[i]:] = 0
    est *= mask
    zt = source - source.mean(2, keepdim=True)
    ze = est - est.mean(2, keepdim=True)
    s_target = mod.unsqueeze(zt, dim=1)
    s_estimate = mod.unsqueeze(ze, dim=2)
    pair_wise_dot = mod.sum(s_estimate * s_target, dim=3, keepdim=True)
    pair_wise_proj = pair_wise_dot * s_target / (mod.sum(s_target ** 2, dim=3, keepdim=True) + 1e-8)
    e_noise = s_estimate - pair_wise_proj
    snr = 10 * mod.log10(mod.sum(pair_wise_proj ** 2, dim=3) / (mod.sum(e_noise ** 2, dim=3) + 1e-8) + 1e-8)
    perms_one_hot = mod.tensor([[[1., 0.], [0., 1.]], [[0., 1.], [1., 0.]]])
    snr_set = mod.einsum('bij,pij->bp', [snr, perms_one_hot])
    return 0 - mod.mean(mod.max(snr_set, dim=1, keepdim=True)[0] / 2)


def test_conv_tasnet_compiled_model_reduce_overhead():
    make = _compiled_model_program(
        _conv_tasnet, _tasnet_loss,
        lambda mod, i: (data(mod, i, 2, 5, 4), data(mod, i, 2, 2, 20, seed=40)), scale=0.4, opt="adam", lr=1e-3)
    _model_traced(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5, mode="reduce-overhead"))


# ---- pclucas14/pixel-cnn-pp utils.py (model = torch.compile(model)) ----------------------------
def _pixelcnn(mod):
    nn, F = mod.nn, mod.nn.functional
    wn = mod.nn.utils.weight_norm

    def concat_elu(x):
        axis = len(x.size()) - 3
        return F.elu(mod.cat([x, -x], dim=axis))

    class nin(nn.Module):
        def __init__(self, dim_in, dim_out):
            super(nin, self).__init__()
            self.lin_a = nn.Linear(dim_in, dim_out)
            self.dim_out = dim_out

        def forward(self, x):
            x = x.permute(0, 2, 3, 1)
            shp = [int(y) for y in x.size()]
            out = self.lin_a(x.contiguous().view(shp[0]*shp[1]*shp[2], shp[3]))
            shp[-1] = self.dim_out
            out = out.view(shp)
            return out.permute(0, 3, 1, 2)

    def down_shift(x, pad=None):
        xs = [int(y) for y in x.size()]
        x = x[:, :, :xs[2] - 1, :]
        pad = nn.ZeroPad2d((0, 0, 1, 0)) if pad is None else pad
        return pad(x)

    class down_shifted_conv2d(nn.Module):
        def __init__(self, num_filters_in, num_filters_out, filter_size=(2,3), stride=(1,1),
                     shift_output_down=False):
            super(down_shifted_conv2d, self).__init__()
            self.conv = wn(nn.Conv2d(num_filters_in, num_filters_out, filter_size, stride))
            self.pad  = nn.ZeroPad2d((int((filter_size[1] - 1) / 2), int((filter_size[1] - 1) / 2),
                                      filter_size[0] - 1, 0))
            self.shift_output_down = shift_output_down
            if shift_output_down :
                self.down_shift = lambda x : down_shift(x, pad=nn.ZeroPad2d((0, 0, 1, 0)))

        def forward(self, x):
            x = self.pad(x)
            x = self.conv(x)
            return self.down_shift(x) if self.shift_output_down else x

    class gated_resnet(nn.Module):
        def __init__(self, num_filters, conv_op, nonlinearity=concat_elu, skip_connection=0):
            super(gated_resnet, self).__init__()
            self.nonlinearity = nonlinearity
            self.conv_input = conv_op(2 * num_filters, num_filters)
            self.dropout = nn.Dropout2d(0.0)
            self.conv_out = conv_op(2 * num_filters, 2 * num_filters)

        def forward(self, og_x, a=None):
            x = self.conv_input(self.nonlinearity(og_x))
            x = self.nonlinearity(x)
            x = self.dropout(x)
            x = self.conv_out(x)
            a, b = mod.chunk(x, 2, dim=1)
            c3 = a * F.sigmoid(b)
            return og_x + c3

    class TinyPixelCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.u_init = down_shifted_conv2d(3, 4, filter_size=(2, 3), shift_output_down=True)
            self.u_stream = gated_resnet(4, down_shifted_conv2d)
            self.nin_out = nin(4, 20)

        def forward(self, x):
            return self.nin_out(F.elu(self.u_stream(self.u_init(x))))

    return TinyPixelCNN()


def _mix_logistic_loss(mod, l, x):
    F = mod.nn.functional
    x = x.permute(0, 2, 3, 1)
    l = l.permute(0, 2, 3, 1)
    xs = [int(y) for y in x.size()]
    nr_mix = int(l.size(-1) / 10)
    logit_probs = l[:, :, :, :nr_mix]
    l = l[:, :, :, nr_mix:].contiguous().view(xs + [nr_mix * 3])
    means = l[:, :, :, :, :nr_mix]
    log_scales = mod.clamp(l[:, :, :, :, nr_mix:2 * nr_mix], min=-7.)
    coeffs = F.tanh(l[:, :, :, :, 2 * nr_mix:3 * nr_mix])
    x = x.contiguous().unsqueeze(-1) + mod.zeros(xs + [nr_mix])
    m2 = (means[:, :, :, 1, :] + coeffs[:, :, :, 0, :] * x[:, :, :, 0, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)
    m3 = (means[:, :, :, 2, :] + coeffs[:, :, :, 1, :] * x[:, :, :, 0, :] +
          coeffs[:, :, :, 2, :] * x[:, :, :, 1, :]).view(xs[0], xs[1], xs[2], 1, nr_mix)
    means = mod.cat((means[:, :, :, 0, :].unsqueeze(3), m2, m3), dim=3)
    centered_x = x - means
    inv_stdv = mod.exp(-log_scales)
    plus_in = inv_stdv * (centered_x + 1. / 255.)
    min_in = inv_stdv * (centered_x - 1. / 255.)
    cdf_delta = F.sigmoid(plus_in) - F.sigmoid(min_in)
    mid_in = inv_stdv * centered_x
    log_pdf_mid = mid_in - log_scales - 2. * F.softplus(mid_in)
    inner_inner_cond = (cdf_delta > 1e-5).float()
    inner_inner_out = inner_inner_cond * mod.log(mod.clamp(cdf_delta, min=1e-12)) + (1. - inner_inner_cond) * (log_pdf_mid - np.log(127.5))
    inner_cond = (x > 0.999).float()
    inner_out = inner_cond * -F.softplus(min_in) + (1. - inner_cond) * inner_inner_out
    cond = (x < -0.999).float()
    log_probs = cond * (plus_in - F.softplus(plus_in)) + (1. - cond) * inner_out
    lp = logit_probs
    m = mod.max(lp, dim=3, keepdim=True)[0]
    log_probs = mod.sum(log_probs, dim=3) + (lp - m - mod.log(mod.sum(mod.exp(lp - m), dim=3, keepdim=True)))
    m, _ = mod.max(log_probs, dim=3)
    m2, _ = mod.max(log_probs, dim=3, keepdim=True)
    # a mean in place of the original sum keeps float32 rounding at the harness's tolerance
    return -mod.mean(m + mod.log(mod.sum(mod.exp(log_probs - m2), dim=3)))


def test_pixelcnn_pp_compiled_model():
    def batch(mod, i):
        x = data(mod, i, 2, 3, 4, 4).mul(0.6).clamp(-1., 1.)
        return x, x
    make = _compiled_model_program(_pixelcnn, _mix_logistic_loss, batch, scale=0.3, opt="adam", lr=2e-3)
    _model_traced(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))
