"""Round-9/10/11 public programs (``tests/api/test_public_programs_round9.py`` .. ``_round11.py``
run them whole and eagerly against torch) not compiled elsewhere, each condensed to its model,
loss, optimizer and training step, compiled the way its users would, and run compiled == eager
(== torch where the random draws allow) with the harness (tiny sizes, numpy data):

- pytorch/tutorials chatbot_tutorial.py: a bidirectional GRU encoder over a packed sequence, the
  Luong 'dot' attention decoder unrolled in Python, maskNLLLoss with ``nTotal.item()``, two Adam
  optimizers, clip_grad_norm_ on each, teacher forcing on and off between calls;
- christiancosgrove/pytorch-spectral-normalization-gan: SpectralNorm's power iteration through
  ``v.data = ...`` / ``u.data = ...`` and ``setattr(module, name, w / sigma)`` every forward, the
  hinge D step then the G step with two Adams, ExponentialLR stepped between calls;
- cloneofsimo/minDiffusion superminddpm.py: DDPM's schedule buffers indexed by the timesteps,
  BatchNorm, Adam, the timesteps and noise rebound in a dict between calls, ``torch.compile(ddpm)``
  with backward and the optimizer outside, and DDPM.sample under no_grad in eval mode;
- davidmrau/mixture-of-experts moe.py: top-k gating, SparseDispatcher (nonzero, ``.tolist()``
  part sizes, split, index_add, a masked write): data-dependent, a graph break;
- pytorch/tutorials nn_tutorial.py: the hand-written ``p -= p.grad * lr`` update under no_grad
  and ``model.zero_grad()``, then loss_batch with an optimizer returning ``loss.item()``;
- OneCycleLR (cycle_momentum rewriting ``momentum`` in param_groups) and the transformers-style
  LambdaLR warmup, ``scheduler.step()`` inside the compiled step;
- huggingface/pytorch-image-models checkpoint_seq: a Sequential's children checkpointed through
  ``model.compile()``, BatchNorm running stats, SGD outside.
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


def _compiled_module(mod, model):
    """``torch.compile(model)`` for tracegrad's compiled run; the module itself otherwise."""
    return tracegrad.compile(model) if mod is tracegrad else model


# ---- pytorch/tutorials beginner_source/chatbot_tutorial.py -----------------------------------
def chatbot_program(mod, wrap):
    torch = mod
    nn, F = mod.nn, mod.nn.functional
    device = torch.device("cpu")
    SOS_token = 1

    class EncoderRNN(nn.Module):
        def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
            super(EncoderRNN, self).__init__()
            self.n_layers = n_layers
            self.hidden_size = hidden_size
            self.embedding = embedding
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                              dropout=(0 if n_layers == 1 else dropout), bidirectional=True)

        def forward(self, input_seq, input_lengths, hidden=None):
            embedded = self.embedding(input_seq)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
            outputs, hidden = self.gru(packed, hidden)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
            outputs = outputs[:, :, :self.hidden_size] + outputs[:, : ,self.hidden_size:]
            return outputs, hidden

    class Attn(nn.Module):
        def __init__(self, method, hidden_size):
            super(Attn, self).__init__()
            self.method = method
            self.hidden_size = hidden_size

        def dot_score(self, hidden, encoder_output):
            return torch.sum(hidden * encoder_output, dim=2)

        def forward(self, hidden, encoder_outputs):
            if self.method == 'dot':
                attn_energies = self.dot_score(hidden, encoder_outputs)
            attn_energies = attn_energies.t()
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

    class LuongAttnDecoderRNN(nn.Module):
        def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
            super(LuongAttnDecoderRNN, self).__init__()
            self.attn_model = attn_model
            self.hidden_size = hidden_size
            self.output_size = output_size
            self.n_layers = n_layers
            self.dropout = dropout
            self.embedding = embedding
            self.embedding_dropout = nn.Dropout(dropout)
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
            self.concat = nn.Linear(hidden_size * 2, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)
            self.attn = Attn(attn_model, hidden_size)

        def forward(self, input_step, last_hidden, encoder_outputs):
            embedded = self.embedding(input_step)
            embedded = self.embedding_dropout(embedded)
            rnn_output, hidden = self.gru(embedded, last_hidden)
            attn_weights = self.attn(rnn_output, encoder_outputs)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
            rnn_output = rnn_output.squeeze(0)
            context = context.squeeze(1)
            concat_input = torch.cat((rnn_output, context), 1)
            concat_output = torch.tanh(self.concat(concat_input))
            output = self.out(concat_output)
            output = F.softmax(output, dim=1)
            return output, hidden

    def maskNLLLoss(inp, target, mask):
        nTotal = mask.sum()
        crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
        loss = crossEntropy.masked_select(mask).mean()
        loss = loss.to(device)
        return loss, nTotal.item()

    hidden_size, num_words, batch_size, clip = 4, 7, 3, 0.5
    embedding = nn.Embedding(num_words, hidden_size)
    encoder = np_init(EncoderRNN(hidden_size, embedding, 1, 0), mod, 1)
    decoder = np_init(LuongAttnDecoderRNN('dot', embedding, hidden_size, num_words, 1, 0), mod, 2)
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01 * 5.0)
    log = []

    def train(input_variable, lengths, target_variable, mask, max_target_len, use_teacher_forcing):
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        loss = 0
        print_losses = []
        n_totals = 0
        encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
        decoder_input = torch.LongTensor([[SOS_token for _ in range(batch_size)]])
        decoder_hidden = encoder_hidden[:decoder.n_layers]
        for t in range(max_target_len):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
            if use_teacher_forcing:
                decoder_input = target_variable[t].view(1, -1)
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = torch.LongTensor([[topi[i][0] for i in range(batch_size)]])
            mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
            loss += mask_loss
            print_losses.append(mask_loss.item() * nTotal)
            n_totals += nTotal
        loss.backward()
        _ = nn.utils.clip_grad_norm_(encoder.parameters(), clip)
        _ = nn.utils.clip_grad_norm_(decoder.parameters(), clip)
        encoder_optimizer.step()
        decoder_optimizer.step()
        log.append(sum(print_losses) / n_totals)
        return loss

    # the batch of three pairs the tutorial's batch2TrainData makes (lengths sorted, padded)
    inp = torch.tensor([[3, 5, 6], [4, 2, 2], [6, 0, 0], [2, 0, 0]])
    lengths = torch.tensor([4, 2, 2])
    target = torch.tensor([[4, 6, 3], [2, 5, 2], [0, 2, 0]])
    mask = target != 0
    return (wrap(train), {"encoder": encoder, "decoder": decoder, "eo": encoder_optimizer,
                          "do": decoder_optimizer, "log": log},
            lambda i: (inp, lengths, target, mask, 3, i % 2 == 0))


def test_chatbot_tutorial_train_with_and_without_teacher_forcing():
    check_compiled(chatbot_program, calls=4, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- christiancosgrove/pytorch-spectral-normalization-gan ------------------------------------
def spectral_gan_program(mod, wrap):
    torch = mod
    nn, optim = mod.nn, mod.optim
    Parameter = torch.nn.Parameter

    def l2normalize(v, eps=1e-12):
        return v / (v.norm() + eps)

    class SpectralNorm(nn.Module):
        def __init__(self, module, name='weight', power_iterations=1):
            super(SpectralNorm, self).__init__()
            self.module = module
            self.name = name
            self.power_iterations = power_iterations
            if not self._made_params():
                self._make_params()

        def _update_u_v(self):
            u = getattr(self.module, self.name + "_u")
            v = getattr(self.module, self.name + "_v")
            w = getattr(self.module, self.name + "_bar")
            height = w.data.shape[0]
            for _ in range(self.power_iterations):
                v.data = l2normalize(torch.mv(torch.t(w.view(height, -1).data), u.data))
                u.data = l2normalize(torch.mv(w.view(height, -1).data, v.data))
            sigma = u.dot(w.view(height, -1).mv(v))
            setattr(self.module, self.name, w / sigma.expand_as(w))

        def _made_params(self):
            try:
                u = getattr(self.module, self.name + "_u")
                v = getattr(self.module, self.name + "_v")
                w = getattr(self.module, self.name + "_bar")
                return True
            except AttributeError:
                return False

        def _make_params(self):
            w = getattr(self.module, self.name)
            height = w.data.shape[0]
            width = w.view(height, -1).data.shape[1]
            u = Parameter(w.data.new(height).normal_(0, 1), requires_grad=False)
            v = Parameter(w.data.new(width).normal_(0, 1), requires_grad=False)
            u.data = l2normalize(u.data)
            v.data = l2normalize(v.data)
            w_bar = Parameter(w.data)
            del self.module._parameters[self.name]
            self.module.register_parameter(self.name + "_u", u)
            self.module.register_parameter(self.name + "_v", v)
            self.module.register_parameter(self.name + "_bar", w_bar)

        def forward(self, *args):
            self._update_u_v()
            return self.module.forward(*args)

    leak = 0.1

    class Discriminator(nn.Module):
        def __init__(self):
            super(Discriminator, self).__init__()
            self.conv1 = SpectralNorm(nn.Conv2d(2, 3, 3, stride=1, padding=(1, 1)))
            self.conv2 = SpectralNorm(nn.Conv2d(3, 3, 4, stride=2, padding=(1, 1)))
            self.fc = SpectralNorm(nn.Linear(2 * 2 * 3, 1))

        def forward(self, x):
            m = x
            m = nn.LeakyReLU(leak)(self.conv1(m))
            m = nn.LeakyReLU(leak)(self.conv2(m))
            return self.fc(m.view(-1, 2 * 2 * 3))

    class Generator(nn.Module):
        def __init__(self, z_dim):
            super(Generator, self).__init__()
            self.z_dim = z_dim
            self.model = nn.Sequential(
                # bias=False: a bias right before BatchNorm has a rounding-level gradient
                # that Adam turns into lr-sized steps of any sign (the eager test observes
                # the generator through its outputs for that reason)
                nn.ConvTranspose2d(z_dim, 3, 2, stride=1, bias=False),
                nn.BatchNorm2d(3),
                nn.ReLU(),
                nn.ConvTranspose2d(3, 2, 4, stride=2, padding=(1, 1)),
                nn.Tanh())

        def forward(self, z):
            return self.model(z.view(-1, self.z_dim, 1, 1))

    Z_dim = 3
    discriminator = np_init(Discriminator(), mod, 0, scale=0.3)
    generator = np_init(Generator(Z_dim), mod, 1, scale=0.3)
    optim_disc = optim.Adam(filter(lambda p: p.requires_grad, discriminator.parameters()), lr=2e-2, betas=(0.0, 0.9))
    optim_gen = optim.Adam(generator.parameters(), lr=2e-2, betas=(0.0, 0.9))
    scheduler_d = optim.lr_scheduler.ExponentialLR(optim_disc, gamma=0.9)
    scheduler_g = optim.lr_scheduler.ExponentialLR(optim_gen, gamma=0.9)

    def train(data, z, z2):
        optim_disc.zero_grad()
        optim_gen.zero_grad()
        disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + nn.ReLU()(1.0 + discriminator(generator(z))).mean()
        disc_loss.backward()
        optim_disc.step()
        optim_disc.zero_grad()
        optim_gen.zero_grad()
        gen_loss = -discriminator(generator(z2)).mean()
        gen_loss.backward()
        optim_gen.step()
        return disc_loss, gen_loss, generator(z2)

    def batch(i):
        return data(mod, i, 2, 2, 4, 4).tanh(), data(mod, i, 2, Z_dim, seed=300), data(mod, i, 2, Z_dim, seed=400)

    return wrap(train), {"D": discriminator, "G": generator, "od": optim_disc, "og": optim_gen,
                         "sd": scheduler_d, "sg": scheduler_g}, batch


def test_spectral_norm_gan_two_optimizers_and_exponential_lr():
    def between(state, i):
        state["sd"].step()
        state["sg"].step()
    check_compiled(spectral_gan_program, calls=3, between=between, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- cloneofsimo/minDiffusion superminddpm.py ------------------------------------------------
def ddpm_program(mod, wrap):
    torch = mod
    from typing import Dict, Tuple
    nn = mod.nn

    def ddpm_schedules(beta1: float, beta2: float, T: int) -> Dict[str, torch.Tensor]:
        assert beta1 < beta2 < 1.0, "beta1 and beta2 must be in (0, 1)"
        beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
        sqrt_beta_t = torch.sqrt(beta_t)
        alpha_t = 1 - beta_t
        log_alpha_t = torch.log(alpha_t)
        alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()
        sqrtab = torch.sqrt(alphabar_t)
        oneover_sqrta = 1 / torch.sqrt(alpha_t)
        sqrtmab = torch.sqrt(1 - alphabar_t)
        mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab
        return {
            "alpha_t": alpha_t,
            "oneover_sqrta": oneover_sqrta,
            "sqrt_beta_t": sqrt_beta_t,
            "alphabar_t": alphabar_t,
            "sqrtab": sqrtab,
            "sqrtmab": sqrtmab,
            "mab_over_sqrtmab": mab_over_sqrtmab_inv,
        }

    class DummyEpsModel(nn.Module):
        def __init__(self, n_channel: int) -> None:
            super(DummyEpsModel, self).__init__()
            self.conv = nn.Sequential(
                nn.Conv2d(n_channel, 4, 3, padding=1, bias=False),   # (bias before BatchNorm:
                nn.BatchNorm2d(4),                                   # see the GAN's generator)
                nn.ReLU(),
                nn.Conv2d(4, n_channel, 3, padding=1),
            )

        def forward(self, x, t) -> torch.Tensor:
            return self.conv(x)

    draws = {}

    class DDPM(nn.Module):
        def __init__(self, eps_model: nn.Module, betas: Tuple[float, float], n_T: int,
                     criterion: nn.Module = nn.MSELoss()) -> None:
            super(DDPM, self).__init__()
            self.eps_model = eps_model
            self.vars = ddpm_schedules(betas[0], betas[1], n_T)
            for k, v in self.vars.items():
                self.register_buffer(k, v)
            self.n_T = n_T
            self.criterion = criterion

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            _ts = draws["ts"].to(x.device)       # torch.randint(0, self.n_T - 1, (x.shape[0],))
            eps = draws["eps"]                    # torch.randn_like(x)
            x_t = (
                self.sqrtab[_ts, None, None, None] * x
                + self.sqrtmab[_ts, None, None, None] * eps
            )
            return self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))

        def sample(self, n_sample: int, size, device) -> torch.Tensor:
            x_t = draws["z"][0]
            for i in range(self.n_T - 1, 0, -1):
                z = draws["z"][i]
                eps = self.eps_model(x_t, i / self.n_T)
                x_t = (
                    self.oneover_sqrta[i] * (x_t - eps * self.mab_over_sqrtmab[i])
                    + self.sqrt_beta_t[i] * z
                )
            return x_t

    ddpm = np_init(DDPM(eps_model=DummyEpsModel(1), betas=(1e-4, 0.02), n_T=4), mod, 0, scale=0.3)
    compiled = wrap(ddpm)
    optim = torch.optim.Adam(ddpm.parameters(), lr=1e-2)
    samples = []

    def step(x, ts, eps, z):
        draws["ts"], draws["eps"], draws["z"] = ts, eps, z
        ddpm.train()
        optim.zero_grad()
        loss = compiled(x)
        loss.backward()
        optim.step()
        ddpm.eval()
        with torch.no_grad():
            samples.append(ddpm.sample(2, (1, 4, 4), "cpu"))
        return loss

    def batch(i):
        rs = np.random.RandomState(10 + i)
        return (data(mod, i, 3, 1, 4, 4), torch.tensor(rs.randint(0, 3, (3,))), data(mod, i, 3, 1, 4, 4, seed=300),
                [data(mod, i * 10 + k, 2, 1, 4, 4, seed=400) for k in range(4)])
    step.stats = getattr(compiled, "stats", None)
    return step, {"ddpm": ddpm, "opt": optim, "samples": samples}, batch


def test_superminddpm_compiled_module_with_draws_rebound_between_calls():
    check_compiled(ddpm_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- davidmrau/mixture-of-experts moe.py -----------------------------------------------------
def moe_program(mod, wrap):
    torch = mod
    nn = mod.nn

    class SparseDispatcher(object):
        def __init__(self, num_experts, gates):
            self._gates = gates
            self._num_experts = num_experts
            sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
            _, self._expert_index = sorted_experts.split(1, dim=1)
            self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
            self._part_sizes = (gates > 0).sum(0).tolist()
            gates_exp = gates[self._batch_index.flatten()]
            self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

        def dispatch(self, inp):
            inp_exp = inp[self._batch_index].squeeze(1)
            return torch.split(inp_exp, self._part_sizes, dim=0)

        def combine(self, expert_out, multiply_by_gates=True):
            stitched = torch.cat(expert_out, 0).exp()
            if multiply_by_gates:
                stitched = stitched.mul(self._nonzero_gates)
            zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True,
                                device=stitched.device)
            combined = zeros.index_add(0, self._batch_index, stitched.float())
            combined[combined == 0] = np.finfo(float).eps
            return combined.log()

        def expert_to_gates(self):
            return torch.split(self._nonzero_gates, self._part_sizes, dim=0)

    class MLP(nn.Module):
        def __init__(self, input_size, output_size, hidden_size):
            super(MLP, self).__init__()
            self.fc1 = nn.Linear(input_size, hidden_size)
            self.fc2 = nn.Linear(hidden_size, output_size)
            self.relu = nn.ReLU()
            self.soft = nn.Softmax(1)

        def forward(self, x):
            out = self.fc1(x)
            out = self.relu(out)
            out = self.fc2(out)
            out = self.soft(out)
            return out

    class MoE(nn.Module):
        def __init__(self, input_size, output_size, num_experts, hidden_size, noisy_gating=True, k=4):
            super(MoE, self).__init__()
            self.noisy_gating = noisy_gating
            self.num_experts = num_experts
            self.output_size = output_size
            self.input_size = input_size
            self.hidden_size = hidden_size
            self.k = k
            self.experts = nn.ModuleList([MLP(self.input_size, self.output_size, self.hidden_size)
                                          for i in range(self.num_experts)])
            self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
            self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)
            self.softplus = nn.Softplus()
            self.softmax = nn.Softmax(1)
            self.register_buffer("mean", torch.tensor([0.0]))
            self.register_buffer("std", torch.tensor([1.0]))
            assert(self.k <= self.num_experts)

        def cv_squared(self, x):
            eps = 1e-10
            if x.shape[0] == 1:
                return torch.tensor([0], device=x.device, dtype=x.dtype)
            return x.float().var() / (x.float().mean()**2 + eps)

        def _gates_to_load(self, gates):
            return (gates > 0).sum(0)

        def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
            clean_logits = x @ self.w_gate
            logits = clean_logits
            top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
            top_k_logits = top_logits[:, :self.k]
            top_k_indices = top_indices[:, :self.k]
            top_k_gates = self.softmax(top_k_logits)
            zeros = torch.zeros_like(logits, requires_grad=True)
            gates = zeros.scatter(1, top_k_indices, top_k_gates)
            load = self._gates_to_load(gates)
            return gates, load

        def forward(self, x, loss_coef=1e-2):
            gates, load = self.noisy_top_k_gating(x, self.training)
            importance = gates.sum(0)
            loss = self.cv_squared(importance) + self.cv_squared(load)
            loss *= loss_coef
            dispatcher = SparseDispatcher(self.num_experts, gates)
            expert_inputs = dispatcher.dispatch(x)
            gates = dispatcher.expert_to_gates()
            expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
            y = dispatcher.combine(expert_outputs)
            return y, loss

    net = np_init(MoE(5, 3, 4, 6, noisy_gating=False, k=2), mod, 0, scale=0.6)
    optim = torch.optim.Adam(net.parameters(), lr=0.05)
    loss_fn = nn.NLLLoss()

    def train(x, y):
        net.train()
        optim.zero_grad()
        y_hat, aux_loss = net(x)
        loss = loss_fn(y_hat, y)
        total_loss = loss + aux_loss
        total_loss.backward()
        optim.step()
        return y_hat, aux_loss, loss

    return wrap(train), {"net": net, "opt": optim}, lambda i: (data(mod, i, 6, 5), labels(mod, i, 6, 3))


def test_mixture_of_experts_sparse_dispatcher():
    # the dispatcher's part sizes are host values (``.tolist()``): a graph break, still equal
    check_compiled(moe_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- pytorch/tutorials beginner_source/nn_tutorial.py ----------------------------------------
def nn_tutorial_program(mod, wrap):
    torch = mod
    nn, F, optim = mod.nn, mod.nn.functional, mod.optim
    loss_func = F.cross_entropy
    lr = 0.5

    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.Parameter(torch.zeros(16, 4))
            self.bias = nn.Parameter(torch.zeros(4))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    model = np_init(Mnist_Logistic(), mod, 0, scale=0.25)
    model2 = np_init(nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)), mod, 1)
    opt = optim.SGD(model2.parameters(), lr=lr, momentum=0.9)
    log = []

    def loss_batch(model, loss_func, xb, yb, opt=None):
        loss = loss_func(model(xb), yb)
        if opt is not None:
            loss.backward()
            opt.step()
            opt.zero_grad()
        return loss.item(), len(xb)

    def fit(xb, yb):
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()
        log.append(loss_batch(model2, loss_func, xb, yb, opt))
        return loss

    return (wrap(fit), {"model": model, "model2": model2, "opt": opt, "log": log},
            lambda i: (data(mod, i, 4, 16), labels(mod, i, 4, 4)))


def test_nn_tutorial_manual_update_and_loss_batch():
    check_compiled(nn_tutorial_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)


# ---- OneCycleLR and transformers' get_linear_schedule_with_warmup ------------------------------
def onecycle_program(mod, wrap, which):
    torch = mod
    from functools import partial
    LambdaLR = torch.optim.lr_scheduler.LambdaLR

    def _get_linear_schedule_with_warmup_lr_lambda(current_step: int, *, num_warmup_steps: int, num_training_steps: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
        lr_lambda = partial(
            _get_linear_schedule_with_warmup_lr_lambda,
            num_warmup_steps=num_warmup_steps,
            num_training_steps=num_training_steps,
        )
        return LambdaLR(optimizer, lr_lambda, last_epoch)

    model = np_init(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)), mod)
    if which.startswith("onecycle"):
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, steps_per_epoch=2, epochs=3,
                                                        cycle_momentum=which == "onecycle")
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2)
        scheduler = get_linear_schedule_with_warmup(optimizer, 2, 6)

    def step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        return loss

    return (wrap(step), {"model": model, "opt": optimizer, "sched": scheduler},
            lambda i: (data(mod, i, 5, 3), data(mod, i, 5, 2, seed=300)))


@pytest.mark.parametrize("which", ["onecycle", "onecycle_lr_only", "linear_warmup"])
def test_schedulers_stepped_inside_the_compiled_step(which):
    run = check_compiled(lambda mod, wrap: onecycle_program(mod, wrap, which), calls=5, torch_too=True)
    # a scheduler stepped inside writes param_groups (the lr; OneCycleLR's cycle_momentum the
    # momentum too): it runs after the program on every call (NOTE [deferred scheduler step]),
    # one trace, and the calls agree with eager and torch; zero_grad() after it reads only params
    assert run.step.stats["traces"] == 1 and not run.step.stats["graph_breaks"], run.step.stats


# ---- huggingface/pytorch-image-models timm/models/_manipulate.py checkpoint_seq -----------------
def checkpoint_seq_program(mod, wrap, kw, how):
    torch = mod
    from itertools import chain
    nn = mod.nn
    checkpoint = torch.utils.checkpoint.checkpoint

    def checkpoint_seq(
            functions,
            x,
            every=1,
            flatten=False,
            skip_last=False,
            preserve_rng_state=True,
            use_reentrant=False,
    ):
        def run_function(start, end, functions):
            def forward(_x):
                for j in range(start, end + 1):
                    _x = functions[j](_x)
                return _x
            return forward

        if isinstance(functions, torch.nn.Sequential):
            functions = functions.children()
        if flatten:
            functions = chain.from_iterable(functions)
        if not isinstance(functions, (tuple, list)):
            functions = tuple(functions)

        num_checkpointed = len(functions)
        if skip_last:
            num_checkpointed -= 1
        end = -1
        for start in range(0, num_checkpointed, every):
            end = min(start + every - 1, num_checkpointed - 1)
            x = checkpoint(run_function(start, end, functions), x,
                           use_reentrant=use_reentrant,
                           preserve_rng_state=preserve_rng_state)
        if skip_last:
            return run_function(end + 1, len(functions) - 1, functions)(x)
        return x

    def stage(c):
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.GELU())

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 2, 1)
            self.stages = nn.Sequential(stage(2), stage(2), stage(2))
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * 16, 3))
            self.grad_checkpointing = True
            self.kw = kw

        def forward(self, x):
            x = self.stem(x)
            if self.grad_checkpointing:
                x = checkpoint_seq(self.stages, x, **self.kw)
            else:
                x = self.stages(x)
            return self.head(x)

    model = np_init(Net(), mod, 0, scale=0.4)
    if how == "model.compile" and wrap(_probe) is not _probe:
        model.compile()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return out

    if how == "step":
        step = wrap(step)
    return step, {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 3, 4, 4), labels(mod, i, 2, 3))


def _probe():
    """Passed through ``wrap`` to tell the compiled run from the eager ones."""


@pytest.mark.parametrize("how", [
    "step",
    # NOTE [checkpoint side effects]: the recomputation updates BatchNorm's running stats again
    # in backward, eagerly: the compiled forward breaks to eager there
    "model.compile"])
@pytest.mark.parametrize("kw", [dict(every=2, skip_last=True), dict(use_reentrant=False, flatten=True)],
                         ids=["every2_skip_last", "flatten"])
def test_timm_checkpoint_seq(kw, how):
    check_compiled(lambda mod, wrap: checkpoint_seq_program(mod, wrap, kw, how), calls=3, torch_too=True,
                   rtol=1e-4, atol=1e-5)
