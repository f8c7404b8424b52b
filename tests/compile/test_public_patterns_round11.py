"""Round-11 public programs (``tests/api/test_public_programs_round11.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- pytorch/examples reinforcement_learning/reinforce.py: Categorical over softmax probs,
  log_prob of given actions, returns normalised by std + eps, torch.cat of the per-step losses;
- ikostrikov/pytorch-a2c-ppo-acktr-gail algo/ppo.py: DiagGaussian's AddBias log-std, Normal
  log_prob/entropy summed, the clipped surrogate and clipped value losses, clip_grad_norm_, Adam;
- facebookresearch/dlrm dlrm_s_pytorch.py: EmbeddingBag(mode="sum") with offsets, the "dot"
  interaction (bmm, the li/lj lower-triangle gather), BCELoss, SGD;
- descriptinc/descript-audio-codec dac/nn/layers.py: weight_norm'd causal Conv1d, the snake
  activation (a scripted function in the program), the power-aware RMSNorm, Adam;
- pytorch/tutorials char_rnn_generation_tutorial.py: the category RNN unrolled over a word,
  ``loss = torch.Tensor([0])`` accumulated in place, the manual ``p.data.add_`` update.

Two of them break the graph as documented (and still agree): Categorical's default argument
validation (PPO runs with validation off and compiles whole) and the char-RNN step's
``unsqueeze_`` of its argument.
"""
import math

import numpy as np
import pytest

import tracegrad

from ._harness import check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- pytorch/examples reinforcement_learning/reinforce.py --------------------------------------
def reinforce_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional
    Categorical = mod.distributions.Categorical

    class Policy(nn.Module):
        def __init__(self):
            super(Policy, self).__init__()
            self.affine1 = nn.Linear(4, 8)
            self.dropout = nn.Dropout(p=0.6)
            self.affine2 = nn.Linear(8, 2)

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    policy = np_init(Policy(), mod)
    policy.eval()
    optimizer = mod.optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()

    def step(states, actions, returns):
        probs = policy(states)
        m = Categorical(probs)
        log_probs = m.log_prob(actions)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = []
        for i in range(states.shape[0]):
            policy_loss.append((-log_probs[i] * returns[i]).unsqueeze(0))
        optimizer.zero_grad()
        policy_loss = mod.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        return policy_loss

    def batch(i):
        rs = np.random.RandomState(i)
        return (data(mod, i, 4, 4), mod.tensor(rs.randint(0, 2, size=4)),
                mod.tensor(rs.randn(4).astype(np.float32)))
    return wrap(step), {"policy": policy, "opt": optimizer}, batch


def _break_reasons(run):
    return [reason for reason, _ in run.step.stats["graph_breaks"]]


def test_reinforce_policy_gradient():
    # Categorical(probs) validates its argument's values in Python by default (as torch does,
    # where dynamo breaks on the data-dependent check too): the step runs eagerly, and equal
    run = check_compiled(reinforce_program, calls=3, torch_too=True)
    assert any("validate_args" in r for r in _break_reasons(run)), run.step.stats


@pytest.fixture
def no_validation():
    """Distributions' default argument validation off in both libraries (restored after)."""
    import torch
    saved = (torch.distributions.Distribution._validate_args,
             tracegrad.distributions.Distribution._validate_args)
    torch.distributions.Distribution.set_default_validate_args(False)
    tracegrad.distributions.Distribution.set_default_validate_args(False)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved[0])
    tracegrad.distributions.Distribution.set_default_validate_args(saved[1])


# ---- ikostrikov/pytorch-a2c-ppo-acktr-gail algo/ppo.py -----------------------------------------
def ppo_program(mod, wrap):
    nn = mod.nn

    class AddBias(nn.Module):
        def __init__(self, bias):
            super(AddBias, self).__init__()
            self._bias = nn.Parameter(bias.unsqueeze(1))

        def forward(self, x):
            if x.dim() == 2:
                bias = self._bias.t().view(1, -1)
            else:
                bias = self._bias.t().view(1, -1, 1, 1)
            return x + bias

    class DiagGaussian(nn.Module):
        def __init__(self, num_inputs, num_outputs):
            super(DiagGaussian, self).__init__()
            self.fc_mean = nn.Linear(num_inputs, num_outputs)
            self.logstd = AddBias(mod.zeros(num_outputs))

        def forward(self, x):
            action_mean = self.fc_mean(x)
            zeros = mod.zeros(action_mean.size())
            action_logstd = self.logstd(zeros)
            return mod.distributions.Normal(action_mean, action_logstd.exp())

    base = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    critic = nn.Linear(4, 1)
    dist_head = DiagGaussian(4, 2)
    model = np_init(nn.ModuleDict({"base": base, "critic": critic, "dist": dist_head}), mod)
    optimizer = mod.optim.Adam(model.parameters(), lr=7e-3, eps=1e-5)
    clip_param, value_loss_coef, entropy_coef = 0.2, 0.5, 0.01

    def step(obs_batch, actions_batch, value_preds_batch, return_batch, old_action_log_probs_batch):
        adv_targ = return_batch - value_preds_batch
        adv_targ = (adv_targ - adv_targ.mean()) / (adv_targ.std() + 1e-5)
        actor_features = base(obs_batch)
        values = critic(actor_features)
        dist = dist_head(actor_features)
        action_log_probs = dist.log_prob(actions_batch).sum(-1, keepdim=True)
        dist_entropy = dist.entropy().sum(-1).mean()
        ratio = mod.exp(action_log_probs - old_action_log_probs_batch)
        surr1 = ratio * adv_targ
        surr2 = mod.clamp(ratio, 1.0 - clip_param, 1.0 + clip_param) * adv_targ
        action_loss = -mod.min(surr1, surr2).mean()
        value_pred_clipped = value_preds_batch + \
            (values - value_preds_batch).clamp(-clip_param, clip_param)
        value_losses = (values - return_batch).pow(2)
        value_losses_clipped = (value_pred_clipped - return_batch).pow(2)
        value_loss = mod.max(value_losses, value_losses_clipped).mean()
        optimizer.zero_grad()
        (value_loss * value_loss_coef + action_loss - dist_entropy * entropy_coef).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        return value_loss, action_loss, dist_entropy

    def batch(i):
        return (data(mod, i, 6, 3), data(mod, i, 6, 2, seed=300), data(mod, i, 6, 1, seed=400),
                data(mod, i, 6, 1, seed=500), data(mod, i, 6, 1, seed=600) * 0.1 - 1.0)
    return wrap(step), {"model": model, "opt": optimizer}, batch


def test_ppo_clipped_update(no_validation):
    _no_breaks(check_compiled(ppo_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- facebookresearch/dlrm dlrm_s_pytorch.py -------------------------------------------------
def dlrm_program(mod, wrap):
    nn = mod.nn
    bot_l = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.ReLU())
    top_l = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 1), nn.Sigmoid())
    emb_l = nn.ModuleList([nn.EmbeddingBag(n, 2, mode="sum") for n in (4, 3, 5)])
    model = np_init(nn.ModuleDict({"bot": bot_l, "top": top_l, "emb": emb_l}), mod)
    loss_fn = nn.BCELoss(reduction="mean")
    optimizer = mod.optim.SGD(model.parameters(), lr=0.1)

    def interact_features(x, ly):
        (batch_size, d) = x.shape
        T = mod.cat([x] + ly, dim=1).view((batch_size, -1, d))
        Z = mod.bmm(T, mod.transpose(T, 1, 2))
        _, ni, nj = Z.shape
        offset = 0
        li = mod.tensor([i for i in range(ni) for j in range(i + offset)])
        lj = mod.tensor([j for i in range(nj) for j in range(i + offset)])
        Zflat = Z[:, li, lj]
        return mod.cat([x] + [Zflat], dim=1)

    def step(dense_x, lS_i, T):
        lS_o = [mod.tensor([0, 1, 3])] * 3
        x = bot_l(dense_x)
        ly = [E(idx, off) for E, idx, off in zip(emb_l, lS_i, lS_o)]
        z = interact_features(x, ly)
        p = top_l(z)
        E = loss_fn(p, T)
        optimizer.zero_grad()
        E.backward()
        optimizer.step()
        return E, p

    def batch(i):
        rs = np.random.RandomState(i)
        lS_i = [mod.tensor(rs.randint(0, n, size=4)) for n in (4, 3, 5)]
        return data(mod, i, 3, 3), lS_i, mod.tensor(rs.randint(0, 2, size=(3, 1)).astype(np.float32))
    return wrap(step), {"model": model, "opt": optimizer}, batch


def test_dlrm_dot_interaction():
    _no_breaks(check_compiled(dlrm_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- descriptinc/descript-audio-codec dac/nn/layers.py --------------------------------------------
def dac_program(mod, wrap):
    nn, F = mod.nn, mod.nn.functional
    import warnings

    def snake(x, alpha):
        shape = x.shape
        x = x.reshape(shape[0], shape[1], -1)
        x = x + (alpha + 1e-9).reciprocal() * mod.sin(alpha * x).pow(2)
        x = x.reshape(shape)
        return x

    class Snake1d(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.alpha = nn.Parameter(mod.ones(1, channels, 1))

        def forward(self, x):
            return snake(x, self.alpha)

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6):
            super().__init__()
            self.scale = nn.Parameter(math.sqrt(eps) * mod.ones(1, dim, 1))
            self.eps = eps

        def forward(self, x):
            power = x[:, :1, :] * self.scale[:, :1, :]
            content = x[:, 1:, :]
            content = content * mod.rsqrt(content.pow(2).mean(dim=1, keepdim=True) + self.eps)
            content = content * self.scale[:, 1:, :]
            return mod.cat([power, content], dim=1)

    class PaddedConv1d(nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            causal = kwargs.pop('causal', False)
            padding = (kwargs.get('kernel_size', 1) - 1) * kwargs.get('dilation', 1) - kwargs.get('stride', 1) + 1
            self.padding = (padding if causal else padding // 2, 0 if causal else padding // 2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.conv = nn.utils.weight_norm(nn.Conv1d(*args, **kwargs))

        def forward(self, x):
            return self.conv(F.pad(x, self.padding))

    model = np_init(nn.Sequential(PaddedConv1d(2, 4, kernel_size=3, causal=True), Snake1d(4),
                                  RMSNorm(4), PaddedConv1d(4, 2, kernel_size=3, dilation=2)), mod)
    opt = mod.optim.Adam(model.parameters(), lr=1e-2)

    def step(x):
        y = model(x)
        loss = F.l1_loss(y, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return wrap(step), {"model": model, "opt": opt}, lambda i: (data(mod, i, 2, 2, 8),)


def test_dac_weight_norm_snake():
    _no_breaks(check_compiled(dac_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- pytorch/tutorials intermediate_source/char_rnn_generation_tutorial.py --------------------------
def char_rnn_program(mod, wrap):
    nn = mod.nn
    n_categories, n_letters, hidden_size = 2, 5, 4

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super(RNN, self).__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
            self.o2o = nn.Linear(hidden_size + output_size, output_size)
            self.dropout = nn.Dropout(0.1)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, category, input, hidden):
            input_combined = mod.cat((category, input, hidden), 1)
            hidden = self.i2h(input_combined)
            output = self.i2o(input_combined)
            output_combined = mod.cat((hidden, output), 1)
            output = self.o2o(output_combined)
            output = self.dropout(output)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return mod.zeros(1, self.hidden_size)

    rnn = np_init(RNN(n_letters, hidden_size, n_letters), mod)
    rnn.eval()
    criterion = nn.NLLLoss()
    learning_rate = 0.05

    def step(category_tensor, input_line_tensor, target_line_tensor):
        target_line_tensor.unsqueeze_(-1)
        hidden = rnn.initHidden()
        rnn.zero_grad()
        loss = mod.Tensor([0])
        for i in range(input_line_tensor.size(0)):
            output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
            l = criterion(output, target_line_tensor[i])
            loss += l
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)
        return output, loss

    def batch(i):
        rs = np.random.RandomState(i)
        line = rs.randint(0, n_letters - 1, size=3)
        inp = mod.zeros(3, 1, n_letters)
        for li, letter in enumerate(line):
            inp[li][0][int(letter)] = 1
        cat = mod.zeros(1, n_categories)
        cat[0][i % 2] = 1
        target = mod.LongTensor(list(line[1:]) + [n_letters - 1])
        return cat, inp, target
    return wrap(step), {"rnn": rnn}, batch


def test_char_rnn_generation_step():
    # the step's ``target_line_tensor.unsqueeze_(-1)`` changes an argument's shape, which a
    # compiled program cannot hand back to its caller: the step runs eagerly, and equal
    run = check_compiled(char_rnn_program, calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    assert [r for r in _break_reasons(run) if "in-place op changes the shape" not in r] == [], \
        run.step.stats
