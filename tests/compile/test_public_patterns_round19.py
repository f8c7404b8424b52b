"""Round-18 public programs (``tests/api/test_public_programs_round18.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager (and == torch where the step draws no random numbers) with the harness (tiny
sizes, numpy data):

- lucidrains/minGRU-pytorch minGRU.py: the log-space parallel scan (``cumsum``,
  ``logcumsumexp``, ``torch.where``, ``F.pad`` for a carried hidden state) in an Adam step;
- Kaixhin/Rainbow model.py + agent.py: ``Agent.learn`` as the compiled step, with the program's
  own ``torch.randn`` noise in ``NoisyLinear.reset_noise`` (so compiled == eager only, the
  generator state included), the boolean-mask ``l[...] -= 1`` fix-ups and the two
  ``index_add_``s through ``m.view(-1)``;
- facebookresearch/moco moco/builder.py: the MoCo forward + SGD step (single process): the
  momentum update by assigning ``param_k.data``, ``einsum`` logits, ``int(self.queue_ptr)`` and
  the queue's slice write;
- emited/VariationalRecurrentNeuralNetwork model.py: the VRNN step over a Python loop of GRU
  steps with the program's ``FloatTensor(std.size()).normal_()`` noise and the deprecated
  ``clip_grad_norm`` after ``optimizer.step()``;
- salesforce/awd-lstm-lm: the training step with WeightDrop's per-call ``setattr`` of a
  dropped-out ``weight_hh_l0`` on an LSTM (plain and variational), ``bernoulli_`` locked and
  embedding dropout, AR/TAR penalties and ASGD; lr rescaling of ``param_groups`` in the step
  (eager, a break) or in the loop (one trace).
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- lucidrains/minGRU-pytorch minGRU_pytorch/minGRU.py ----------------------------------------
def _mingru(mod):
    F = mod.nn.functional
    Linear, Identity, Module = mod.nn.Linear, mod.nn.Identity, mod.nn.Module

    def exists(v):
        return v is not None

    def heinsen_associative_scan_log(log_coeffs, log_values):
        a_star = log_coeffs.cumsum(dim = 1)
        log_h0_plus_b_star = (log_values - a_star).logcumsumexp(dim = 1)
        log_h = a_star + log_h0_plus_b_star
        return log_h.exp()

    def g(x):
        return mod.where(x >= 0, x + 0.5, x.sigmoid())

    def log_g(x):
        return mod.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))

    class minGRU(Module):
        def __init__(self, dim, expansion_factor = 1.):
            super().__init__()
            dim_inner = int(dim * expansion_factor)
            self.to_hidden_and_gate = Linear(dim, dim_inner * 2, bias = False)
            self.to_out = Linear(dim_inner, dim, bias = False) if expansion_factor != 1. else Identity()

        def forward(self, x, prev_hidden = None):
            seq_len = x.shape[1]
            hidden, gate = self.to_hidden_and_gate(x).chunk(2, dim = -1)
            if seq_len == 1:
                hidden = g(hidden)
                gate = gate.sigmoid()
                out = mod.lerp(prev_hidden, hidden, gate) if exists(prev_hidden) else (hidden * gate)
            else:
                log_coeffs = -F.softplus(gate)
                log_z = -F.softplus(-gate)
                log_tilde_h = log_g(hidden)
                log_values = log_z + log_tilde_h
                if exists(prev_hidden):
                    log_values = mod.cat((log_g(prev_hidden), log_values), dim = 1)
                    log_coeffs = F.pad(log_coeffs, (0, 0, 1, 0))
                out = heinsen_associative_scan_log(log_coeffs, log_values)
                out = out[:, -seq_len:]
            return self.to_out(out)

    class Net(Module):
        def __init__(self):
            super().__init__()
            self.layers = mod.nn.ModuleList([minGRU(4, expansion_factor=1.5), minGRU(4)])
            self.head = Linear(4, 1)

        def forward(self, x, prev_hidden):
            x = x + self.layers[0](x, prev_hidden)
            x = x + self.layers[1](x)
            return self.head(x).squeeze(-1)

    return Net(), g


def test_mingru_parallel_scan_step():
    def make(mod, wrap):
        F = mod.nn.functional
        net, g = _mingru(mod)
        net = np_init(net, mod, seed=5, scale=0.5)
        opt = mod.optim.Adam(net.parameters(), lr=3e-3)

        def step(x, prev, target):
            opt.zero_grad()
            loss = F.mse_loss(net(x, g(prev)), target)
            loss.backward()
            opt.step()
            return loss

        return wrap(step), {"net": net, "opt": opt}, lambda i: (
            data(mod, i, 2, 5, 4), data(mod, i, 2, 1, 6, seed=300), data(mod, i, 2, 5, seed=400))

    run = check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    _no_breaks(run)
    assert run.step.stats["traces"] == 1, run.step.stats


# ---- Kaixhin/Rainbow model.py + agent.py ------------------------------------------------------
def _rainbow(mod):
    nn, F = mod.nn, mod.nn.functional

    class NoisyLinear(nn.Module):
        def __init__(self, in_features, out_features, std_init=0.5):
            super(NoisyLinear, self).__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.std_init = std_init
            self.weight_mu = nn.Parameter(mod.empty(out_features, in_features))
            self.weight_sigma = nn.Parameter(mod.empty(out_features, in_features))
            self.register_buffer('weight_epsilon', mod.empty(out_features, in_features))
            self.bias_mu = nn.Parameter(mod.empty(out_features))
            self.bias_sigma = nn.Parameter(mod.empty(out_features))
            self.register_buffer('bias_epsilon', mod.empty(out_features))
            self.reset_parameters()
            self.reset_noise()

        def reset_parameters(self):
            mu_range = 1 / math.sqrt(self.in_features)
            self.weight_mu.data.uniform_(-mu_range, mu_range)
            self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
            self.bias_mu.data.uniform_(-mu_range, mu_range)
            self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

        def _scale_noise(self, size):
            x = mod.randn(size)
            return x.sign().mul_(x.abs().sqrt_())

        def reset_noise(self):
            epsilon_in = self._scale_noise(self.in_features)
            epsilon_out = self._scale_noise(self.out_features)
            self.weight_epsilon.copy_(epsilon_out.ger(epsilon_in))
            self.bias_epsilon.copy_(epsilon_out)

        def forward(self, input):
            if self.training:
                return F.linear(input, self.weight_mu + self.weight_sigma * self.weight_epsilon, self.bias_mu + self.bias_sigma * self.bias_epsilon)
            else:
                return F.linear(input, self.weight_mu, self.bias_mu)

    class DQN(nn.Module):   # the 'data-efficient' architecture at tiny widths
        def __init__(self, atoms, action_space, hidden_size=6, noisy_std=0.1):
            super(DQN, self).__init__()
            self.atoms = atoms
            self.action_space = action_space
            self.convs = nn.Sequential(nn.Conv2d(2, 4, 5, stride=5, padding=0), nn.ReLU(),
                                       nn.Conv2d(4, 8, 5, stride=5, padding=0), nn.ReLU())
            self.conv_output_size = 8
            self.fc_h_v = NoisyLinear(self.conv_output_size, hidden_size, std_init=noisy_std)
            self.fc_h_a = NoisyLinear(self.conv_output_size, hidden_size, std_init=noisy_std)
            self.fc_z_v = NoisyLinear(hidden_size, self.atoms, std_init=noisy_std)
            self.fc_z_a = NoisyLinear(hidden_size, action_space * self.atoms, std_init=noisy_std)

        def forward(self, x, log=False):
            x = self.convs(x)
            x = x.view(-1, self.conv_output_size)
            v = self.fc_z_v(F.relu(self.fc_h_v(x)))
            a = self.fc_z_a(F.relu(self.fc_h_a(x)))
            v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
            q = v + a - a.mean(1, keepdim=True)
            if log:
                q = F.log_softmax(q, dim=2)
            else:
                q = F.softmax(q, dim=2)
            return q

        def reset_noise(self):
            for name, module in self.named_children():
                if 'fc' in name:
                    module.reset_noise()

    return DQN


def test_rainbow_learn_step_with_noise_resets():
    """``learn`` with the priority update kept out (its ``.numpy()`` hands the loss to Python) and
    the online net's ``reset_noise`` called in the step as the training loop does each
    replay period: the program's ``torch.randn`` noise is drawn inside the step, so compiled ==
    eager includes the generator state (the torch oracle runs in the eager file). The
    projection's ``l[(u > 0) * (l == u)] -= 1`` is a boolean-mask read: the step runs eagerly."""
    def make(mod, wrap):
        DQN = _rainbow(mod)
        atoms, Vmin, Vmax, batch_size, n, discount = 51, -10, 10, 4, 3, 0.99
        support = mod.linspace(Vmin, Vmax, atoms)
        delta_z = (Vmax - Vmin) / (atoms - 1)
        online_net = np_init(DQN(atoms, 3), mod, seed=7, scale=0.3)
        target_net = DQN(atoms, 3)
        target_net.load_state_dict(online_net.state_dict())
        for param in target_net.parameters():
            param.requires_grad = False
        optimiser = mod.optim.Adam(online_net.parameters(), lr=0.01, eps=1.5e-4)

        def learn(states, actions, returns, next_states, nonterminals, weights):
            online_net.reset_noise()
            log_ps = online_net(states, log=True)
            log_ps_a = log_ps[range(batch_size), actions]
            with mod.no_grad():
                pns = online_net(next_states)
                dns = support.expand_as(pns) * pns
                argmax_indices_ns = dns.sum(2).argmax(1)
                target_net.reset_noise()
                pns = target_net(next_states)
                pns_a = pns[range(batch_size), argmax_indices_ns]
                Tz = returns.unsqueeze(1) + nonterminals * (discount ** n) * support.unsqueeze(0)
                Tz = Tz.clamp(min=Vmin, max=Vmax)
                b = (Tz - Vmin) / delta_z
                l, u = b.floor().to(mod.int64), b.ceil().to(mod.int64)
                l[(u > 0) * (l == u)] -= 1
                u[(l < (atoms - 1)) * (l == u)] += 1
                m = states.new_zeros(batch_size, atoms)
                offset = mod.linspace(0, ((batch_size - 1) * atoms), batch_size).unsqueeze(1).expand(batch_size, atoms).to(actions)
                m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
                m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))
            loss = -mod.sum(m * log_ps_a, 1)
            online_net.zero_grad()
            (weights * loss).mean().backward()
            mod.nn.utils.clip_grad_norm_(online_net.parameters(), 10)
            optimiser.step()
            return loss.detach(), m

        def batch(i):
            rs = np.random.RandomState(90 + i)
            return (mod.tensor(rs.rand(batch_size, 2, 25, 25).astype(np.float32)), mod.tensor(rs.randint(0, 3, size=batch_size)),
                    mod.tensor([0.0, 20.0, 1.3 + i, -2.5]), mod.tensor(rs.rand(batch_size, 2, 25, 25).astype(np.float32)),
                    mod.tensor([[0.0], [0.0], [1.0], [1.0]]), mod.tensor(rs.uniform(0.5, 1, size=batch_size).astype(np.float32)))

        return wrap(learn), {"online": online_net, "target": target_net, "opt": optimiser}, batch

    run = check_compiled(make, calls=3, rtol=1e-4, atol=1e-5)
    # ``l[mask] -= 1`` reads ``l[mask]`` first: a boolean-mask read whose size is data, so every
    # call runs eagerly (torch.compile breaks there too unless dynamic output shapes are captured)
    breaks = run.step.stats["graph_breaks"]
    assert breaks and "nonzero()" in breaks[0][0], run.step.stats
    assert run.step.stats["eager_calls"] == 3, run.step.stats


# ---- facebookresearch/moco moco/builder.py (one process) ---------------------------------------
def _moco(mod):
    nn = mod.nn

    class Encoder(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            return self.fc(self.body(x))

    class MoCo(nn.Module):   # the DDP shuffle helpers are dropped (one process: the identity)
        def __init__(self, base_encoder, dim=128, K=65536, m=0.999, T=0.07, mlp=False):
            super(MoCo, self).__init__()
            self.K = K
            self.m = m
            self.T = T
            self.encoder_q = base_encoder(num_classes=dim)
            self.encoder_k = base_encoder(num_classes=dim)
            if mlp:
                dim_mlp = self.encoder_q.fc.weight.shape[1]
                self.encoder_q.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc)
                self.encoder_k.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc)
            np_init(self.encoder_q, mod, seed=11, scale=0.5)
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data.copy_(param_q.data)
                param_k.requires_grad = False
            self.register_buffer("queue", data(mod, 0, dim, K, seed=12))
            self.queue = nn.functional.normalize(self.queue, dim=0)
            self.register_buffer("queue_ptr", mod.zeros(1, dtype=mod.long))

        @mod.no_grad()
        def _momentum_update_key_encoder(self):
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

        @mod.no_grad()
        def _dequeue_and_enqueue(self, keys):
            batch_size = keys.shape[0]
            ptr = int(self.queue_ptr)
            assert self.K % batch_size == 0
            self.queue[:, ptr : ptr + batch_size] = keys.T
            ptr = (ptr + batch_size) % self.K
            self.queue_ptr[0] = ptr

        def forward(self, im_q, im_k):
            q = self.encoder_q(im_q)
            q = nn.functional.normalize(q, dim=1)
            with mod.no_grad():
                self._momentum_update_key_encoder()
                k = self.encoder_k(im_k)
                k = nn.functional.normalize(k, dim=1)
            l_pos = mod.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
            l_neg = mod.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
            logits = mod.cat([l_pos, l_neg], dim=1)
            logits /= self.T
            labels = mod.zeros(logits.shape[0], dtype=mod.long)
            self._dequeue_and_enqueue(k)
            return logits, labels

    return MoCo(Encoder, dim=4, K=8, m=0.9, T=0.2, mlp=True)


def test_moco_step_queue_pointer():
    """The queue pointer is read with ``int(self.queue_ptr)`` and sets the slice written: compiled
    == eager == torch over five calls (the pointer wraps after four), whatever the compiler does
    with the Python int (one trace per pointer value, or eager calls after a break)."""
    def make(mod, wrap):
        model = _moco(mod)
        criterion = mod.nn.CrossEntropyLoss()
        optimizer = mod.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4)

        def step(im_q, im_k):
            output, target = model(im_q=im_q, im_k=im_k)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss, output

        def batch(i):
            x = data(mod, i, 2, 6)
            return x + 0.1 * data(mod, i, 2, 6, seed=500), x - 0.1 * data(mod, i, 2, 6, seed=600)

        return wrap(step), {"model": model, "opt": optimizer}, batch

    run = check_compiled(make, calls=5, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    assert breaks and "item()" in breaks[0][0], run.step.stats
    assert run.step.stats["eager_calls"] == 5, run.step.stats


# ---- emited/VariationalRecurrentNeuralNetwork model.py + train.py -------------------------------
def _vrnn(mod):
    nn = mod.nn
    Variable = mod.autograd.Variable

    class VRNN(nn.Module):   # the unused all_* lists and sample() are dropped
        def __init__(self, x_dim, h_dim, z_dim, n_layers, bias=False):
            super(VRNN, self).__init__()
            self.x_dim, self.h_dim, self.z_dim, self.n_layers = x_dim, h_dim, z_dim, n_layers
            self.phi_x = nn.Sequential(nn.Linear(x_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
            self.phi_z = nn.Sequential(nn.Linear(z_dim, h_dim), nn.ReLU())
            self.enc = nn.Sequential(nn.Linear(h_dim + h_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
            self.enc_mean = nn.Linear(h_dim, z_dim)
            self.enc_std = nn.Sequential(nn.Linear(h_dim, z_dim), nn.Softplus())
            self.prior = nn.Sequential(nn.Linear(h_dim, h_dim), nn.ReLU())
            self.prior_mean = nn.Linear(h_dim, z_dim)
            self.prior_std = nn.Sequential(nn.Linear(h_dim, z_dim), nn.Softplus())
            self.dec = nn.Sequential(nn.Linear(h_dim + h_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
            self.dec_std = nn.Sequential(nn.Linear(h_dim, x_dim), nn.Softplus())
            self.dec_mean = nn.Sequential(nn.Linear(h_dim, x_dim), nn.Sigmoid())
            self.rnn = nn.GRU(h_dim + h_dim, h_dim, n_layers, bias)

        def forward(self, x):
            kld_loss = 0
            nll_loss = 0
            h = Variable(mod.zeros(self.n_layers, x.size(1), self.h_dim))
            for t in range(x.size(0)):
                phi_x_t = self.phi_x(x[t])
                enc_t = self.enc(mod.cat([phi_x_t, h[-1]], 1))
                enc_mean_t = self.enc_mean(enc_t)
                enc_std_t = self.enc_std(enc_t)
                prior_t = self.prior(h[-1])
                prior_mean_t = self.prior_mean(prior_t)
                prior_std_t = self.prior_std(prior_t)
                z_t = self._reparameterized_sample(enc_mean_t, enc_std_t)
                phi_z_t = self.phi_z(z_t)
                dec_t = self.dec(mod.cat([phi_z_t, h[-1]], 1))
                dec_mean_t = self.dec_mean(dec_t)
                _, h = self.rnn(mod.cat([phi_x_t, phi_z_t], 1).unsqueeze(0), h)
                kld_loss += self._kld_gauss(enc_mean_t, enc_std_t, prior_mean_t, prior_std_t)
                nll_loss += self._nll_bernoulli(dec_mean_t, x[t])
            return kld_loss, nll_loss

        def _reparameterized_sample(self, mean, std):
            eps = mod.FloatTensor(std.size()).normal_()
            eps = Variable(eps)
            return eps.mul(std).add_(mean)

        def _kld_gauss(self, mean_1, std_1, mean_2, std_2):
            kld_element = (2 * mod.log(std_2) - 2 * mod.log(std_1) +
                (std_1.pow(2) + (mean_1 - mean_2).pow(2)) / std_2.pow(2) - 1)
            return 0.5 * mod.sum(kld_element)

        def _nll_bernoulli(self, theta, x):
            return - mod.sum(x*mod.log(theta) + (1-x)*mod.log(1-theta))

    return VRNN(5, 6, 3, 1)


@pytest.mark.parametrize("variant", ["as_written", "scaled_by_loop", "scaled_by_loop_clip_"])
def test_vrnn_step_with_normal_noise(variant):
    """train.py's step: min-max scaling through ``.item()``, Adam, then the deprecated
    ``nn.utils.clip_grad_norm`` (a FutureWarning each call) after the step; the noise is the
    program's ``normal_()`` on a ``FloatTensor(size)``, so compiled == eager includes the generator
    state. As written, ``.item()`` takes a value out of the program: every call runs eagerly, the
    break naming ``item()``. With the scaling done by the loop before the call, the deprecation
    warning (one per call eagerly, under the harness's 'always' filter) is given again by every
    run of the one program (NOTE [warnings in a trace]); with ``clip_grad_norm_``: no warning."""
    scale_in_step = variant == "as_written"

    def make(mod, wrap):
        Variable = mod.autograd.Variable
        model = np_init(_vrnn(mod), mod, seed=21, scale=0.4)
        optimizer = mod.optim.Adam(model.parameters(), lr=1e-3)
        clip = mod.nn.utils.clip_grad_norm_ if variant == "scaled_by_loop_clip_" else mod.nn.utils.clip_grad_norm

        def scale(data):
            data = Variable(data.squeeze().transpose(0, 1))
            return (data - data.min().item()) / (data.max().item() - data.min().item())

        def step(data):
            if scale_in_step:
                data = scale(data)
            optimizer.zero_grad()
            kld_loss, nll_loss = model(data)
            loss = kld_loss + nll_loss
            loss.backward()
            optimizer.step()
            clip(model.parameters(), 10)
            return kld_loss, nll_loss

        def batch(i):
            x = data(mod, i, 4, 1, 2, 5).abs()
            return (x,) if scale_in_step else (scale(x),)

        return wrap(step), {"model": model, "opt": optimizer}, batch

    run = check_compiled(make, calls=3, rtol=1e-4, atol=1e-5)
    deprecations = sum("clip_grad_norm" in w for w in run.warnings)
    assert deprecations == sum("clip_grad_norm" in w for w in run.eager.warnings)
    assert deprecations == (0 if variant == "scaled_by_loop_clip_" else 3)
    breaks = run.step.stats["graph_breaks"]
    if variant == "as_written":
        assert breaks and "item()" in breaks[0][0], run.step.stats
    else:
        _no_breaks(run)
        assert run.step.stats["traces"] == 1, run.step.stats
    if variant == "as_written":
        assert run.step.stats["eager_calls"] == 3, run.step.stats


# ---- salesforce/awd-lstm-lm weight_drop.py + locked_dropout.py + embed_regularize.py -----------
def _awd(mod):
    nn, F = mod.nn, mod.nn.functional
    Parameter, Variable = mod.nn.Parameter, mod.autograd.Variable

    class WeightDrop(mod.nn.Module):
        def __init__(self, module, weights, dropout=0, variational=False):
            super(WeightDrop, self).__init__()
            self.module = module
            self.weights = weights
            self.dropout = dropout
            self.variational = variational
            self._setup()

        def _setup(self):
            for name_w in self.weights:
                w = getattr(self.module, name_w)
                del self.module._parameters[name_w]
                self.module.register_parameter(name_w + '_raw', Parameter(w.data))

        def _setweights(self):
            for name_w in self.weights:
                raw_w = getattr(self.module, name_w + '_raw')
                w = None
                if self.variational:
                    mask = Variable(mod.ones(raw_w.size(0), 1))
                    mask = F.dropout(mask, p=self.dropout, training=True)
                    w = mask.expand_as(raw_w) * raw_w
                else:
                    w = F.dropout(raw_w, p=self.dropout, training=self.training)
                setattr(self.module, name_w, w)

        def forward(self, *args):
            self._setweights()
            return self.module.forward(*args)

    class LockedDropout(nn.Module):
        def forward(self, x, dropout=0.5):
            if not self.training or not dropout:
                return x
            m = x.data.new(1, x.size(1), x.size(2)).bernoulli_(1 - dropout)
            mask = Variable(m, requires_grad=False) / (1 - dropout)
            mask = mask.expand_as(x)
            return mask * x

    def embedded_dropout(embed, words, dropout=0.1, scale=None):
        if dropout:
            mask = embed.weight.data.new().resize_((embed.weight.size(0), 1)).bernoulli_(
                1 - dropout).expand_as(embed.weight) / (1 - dropout)
            masked_embed_weight = mask * embed.weight
        else:
            masked_embed_weight = embed.weight
        padding_idx = embed.padding_idx
        if padding_idx is None:
            padding_idx = -1
        return F.embedding(words, masked_embed_weight, padding_idx, embed.max_norm,
                           embed.norm_type, embed.scale_grad_by_freq, embed.sparse)

    class RNNModel(nn.Module):   # the LSTM branch, tied weights, return_h
        def __init__(self, ntoken, ninp, nhid, nlayers, wdrop, variational):
            super(RNNModel, self).__init__()
            self.lockdrop = LockedDropout()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnns = [mod.nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else ninp, 1, dropout=0) for l in range(nlayers)]
            self.rnns = [WeightDrop(rnn, ['weight_hh_l0'], dropout=wdrop, variational=variational) for rnn in self.rnns]
            self.rnns = mod.nn.ModuleList(self.rnns)
            self.decoder = nn.Linear(nhid, ntoken)
            self.decoder.weight = self.encoder.weight
            self.nlayers = nlayers

        def forward(self, input, hidden):
            emb = embedded_dropout(self.encoder, input, dropout=0.1 if self.training else 0)
            emb = self.lockdrop(emb, 0.4)
            raw_output = emb
            new_hidden, raw_outputs, outputs = [], [], []
            for l, rnn in enumerate(self.rnns):
                raw_output, new_h = rnn(raw_output, hidden[l])
                new_hidden.append(new_h)
                raw_outputs.append(raw_output)
                if l != self.nlayers - 1:
                    raw_output = self.lockdrop(raw_output, 0.25)
                    outputs.append(raw_output)
            output = self.lockdrop(raw_output, 0.4)
            outputs.append(output)
            result = output.view(output.size(0)*output.size(1), output.size(2))
            return result, new_hidden, raw_outputs, outputs

    return RNNModel


@pytest.mark.parametrize("lr_in_step, variational", [(True, False), (False, True)])
def test_awd_lstm_weight_drop_step(lr_in_step, variational):
    """main.py's ``train`` body as the step: WeightDrop sets a plain (dropped-out) tensor as the
    LSTM's ``weight_hh_l0`` on every call, LockedDropout and embedded dropout draw
    ``bernoulli_`` masks from the library's generator (so compiled == eager includes its state),
    AR/TAR penalties, ``clip_grad_norm_``, the per-batch lr rescaling of ``param_groups`` and
    ASGD; the hidden state is detached by the loop (``repackage_hidden``) and fed back. As
    written, the lr rescaling writes ``param_groups`` inside the step: every call runs eagerly,
    the break naming it; with the rescaling done by the loop around the call: one trace, the
    WeightDrop setattr (plain or variational mask) repeated by the compiled program."""
    def make(mod, wrap):
        F = mod.nn.functional
        RNNModel = _awd(mod)
        model = np_init(RNNModel(12, 4, 5, 2, wdrop=0.5, variational=variational), mod, seed=31, scale=0.4)
        model.train()
        params = list(model.parameters())
        optimizer = mod.optim.ASGD(params, lr=2.0, t0=0, lambd=0., weight_decay=1.2e-6)
        hidden = [[(mod.zeros(1, 2, 5), mod.zeros(1, 2, 5)), (mod.zeros(1, 2, 4), mod.zeros(1, 2, 4))]]

        def step(data, targets, hidden, seq_len):
            if lr_in_step:
                lr2 = optimizer.param_groups[0]['lr']
                optimizer.param_groups[0]['lr'] = lr2 * seq_len / 4
            optimizer.zero_grad()
            output, hidden, rnn_hs, dropped_rnn_hs = model(data, hidden)
            raw_loss = F.cross_entropy(F.linear(output, model.decoder.weight, model.decoder.bias), targets)
            loss = raw_loss
            loss = loss + sum(2 * dropped_rnn_h.pow(2).mean() for dropped_rnn_h in dropped_rnn_hs[-1:])
            loss = loss + sum(1 * (rnn_h[1:] - rnn_h[:-1]).pow(2).mean() for rnn_h in rnn_hs[-1:])
            loss.backward()
            mod.nn.utils.clip_grad_norm_(params, 0.25)
            optimizer.step()
            if lr_in_step:
                optimizer.param_groups[0]['lr'] = lr2
            return raw_loss, hidden

        compiled = wrap(step)

        def run(data, targets, seq_len):
            if not lr_in_step:
                lr2 = optimizer.param_groups[0]['lr']
                optimizer.param_groups[0]['lr'] = lr2 * seq_len / 4
            raw_loss, new_hidden = compiled(data, targets, hidden[0], seq_len)
            if not lr_in_step:
                optimizer.param_groups[0]['lr'] = lr2
            hidden[0] = [tuple(h.detach() for h in hc) for hc in new_hidden]
            return raw_loss, hidden[0]

        def batch(i):
            rs = np.random.RandomState(40 + i)
            return mod.tensor(rs.randint(0, 12, size=(4, 2))), mod.tensor(rs.randint(0, 12, size=8)), 4

        state = {"model": model, "opt": optimizer}
        make.compiled = compiled
        return run, state, batch

    check_compiled(make, calls=3, rtol=1e-4, atol=1e-5)
    stats = make.compiled.stats
    if lr_in_step:
        assert stats["graph_breaks"] and "param_groups" in stats["graph_breaks"][0][0], stats
        assert stats["eager_calls"] == 3, stats
    else:
        assert not stats["graph_breaks"], stats
        assert stats["traces"] == 1, stats
