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
