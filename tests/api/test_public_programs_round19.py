"""A nineteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round18.py``, from repositories no earlier round used:

- kmkurn/pytorch-crf: the ``CRF`` layer (``uint8`` masks into ``torch.where``, fancy indexing
  ``emissions[i, torch.arange(b), tags[i]]``, ``logsumexp`` forward algorithm, Viterbi decode
  through ``max(dim=1)`` back-pointers and ``.item()``, its ``ValueError`` checks, a custom
  ``__repr__``) on top of an embedding + linear tagger trained with Adam;
- pranz24/pytorch-soft-actor-critic: SAC's twin-Q critic, ``GaussianPolicy.sample`` through
  ``torch.distributions.Normal`` (``rsample`` / ``log_prob`` with the tanh correction), a
  learned ``log_alpha`` with its own Adam, ``hard_update``/``soft_update`` through ``.data``;
- vwxyzjn/cleanrl ppo.py: ``layer_init`` (``orthogonal_`` + ``constant_``), a ``Categorical``
  actor-critic, GAE over a rollout, minibatch PPO epochs with clipped value loss,
  ``clip_grad_norm_``, approx-KL / clip-fraction statistics and learning-rate annealing through
  ``optimizer.param_groups[0]["lr"]``;
- timbmg/VAE-CVAE-MNIST: a conditional VAE built with ``add_module`` in a loop, ``idx2onehot``
  via ``scatter_``, ``binary_cross_entropy(reduction='sum')`` + KL, trained from a ``DataLoader``,
  then ``inference`` for every label;
- gordicaleksa/pytorch-GAT: ``GATLayerImp3`` (edge-index ``index_select`` lifting, a
  neighbourhood softmax and aggregation with ``scatter_add_`` over ``expand_as`` indices,
  skip projection, heads concatenated / averaged) trained on a tiny graph with Adam + weight decay;
- itayhubara/BinaryNet.pytorch: ``Binarize`` as an ``InplaceFunction`` whose ``forward`` and
  ``backward`` are plain (not static) methods (a straight-through estimator), ``BinarizeLinear``
  setting ``self.bias.org`` in ``forward``, ``nn.LogSoftmax()`` without ``dim`` and the training
  loop's ``p.data.copy_(p.org)`` / ``p.org.copy_(p.data.clamp_(-1, 1))`` dance.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters
(``init_params``/``randn``) in place of downloads, environments and random streams; where a
program's own code had to change, the comment above its test says how and why.
"""
from collections import defaultdict

import numpy as np
import pytest

from parity import init_params, run_both, seeded

torch = pytest.importorskip("torch")


# kmkurn/pytorch-crf torchcrf/__init__.py (the CRF class, unchanged apart from docstrings and the
# asserts of its private helpers), used as in its README on emissions from a tiny tagger. Sizes:
# 5 tags, vocabulary 7, batch 3, sequences of 4 steps; the parameters are re-drawn from numpy
# after ``reset_parameters``'s ``uniform_``.
def test_pytorch_crf_tagger():
    def program(torch, log):
        nn = torch.nn

        class CRF(nn.Module):
            def __init__(self, num_tags, batch_first=False):
                if num_tags <= 0:
                    raise ValueError(f'invalid number of tags: {num_tags}')
                super().__init__()
                self.num_tags = num_tags
                self.batch_first = batch_first
                self.start_transitions = nn.Parameter(torch.empty(num_tags))
                self.end_transitions = nn.Parameter(torch.empty(num_tags))
                self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))

                self.reset_parameters()

            def reset_parameters(self):
                nn.init.uniform_(self.start_transitions, -0.1, 0.1)
                nn.init.uniform_(self.end_transitions, -0.1, 0.1)
                nn.init.uniform_(self.transitions, -0.1, 0.1)

            def __repr__(self):
                return f'{self.__class__.__name__}(num_tags={self.num_tags})'

            def forward(self, emissions, tags, mask=None, reduction='sum'):
                self._validate(emissions, tags=tags, mask=mask)
                if reduction not in ('none', 'sum', 'mean', 'token_mean'):
                    raise ValueError(f'invalid reduction: {reduction}')
                if mask is None:
                    mask = torch.ones_like(tags, dtype=torch.uint8)

                if self.batch_first:
                    emissions = emissions.transpose(0, 1)
                    tags = tags.transpose(0, 1)
                    mask = mask.transpose(0, 1)

                numerator = self._compute_score(emissions, tags, mask)
                denominator = self._compute_normalizer(emissions, mask)
                llh = numerator - denominator

                if reduction == 'none':
                    return llh
                if reduction == 'sum':
                    return llh.sum()
                if reduction == 'mean':
                    return llh.mean()
                assert reduction == 'token_mean'
                return llh.sum() / mask.float().sum()

            def decode(self, emissions, mask=None):
                self._validate(emissions, mask=mask)
                if mask is None:
                    mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)

                if self.batch_first:
                    emissions = emissions.transpose(0, 1)
                    mask = mask.transpose(0, 1)

                return self._viterbi_decode(emissions, mask)

            def _validate(self, emissions, tags=None, mask=None):
                if emissions.dim() != 3:
                    raise ValueError(f'emissions must have dimension of 3, got {emissions.dim()}')
                if emissions.size(2) != self.num_tags:
                    raise ValueError(
                        f'expected last dimension of emissions is {self.num_tags}, '
                        f'got {emissions.size(2)}')

                if tags is not None:
                    if emissions.shape[:2] != tags.shape:
                        raise ValueError(
                            'the first two dimensions of emissions and tags must match, '
                            f'got {tuple(emissions.shape[:2])} and {tuple(tags.shape)}')

                if mask is not None:
                    if emissions.shape[:2] != mask.shape:
                        raise ValueError(
                            'the first two dimensions of emissions and mask must match, '
                            f'got {tuple(emissions.shape[:2])} and {tuple(mask.shape)}')
                    no_empty_seq = not self.batch_first and mask[0].all()
                    no_empty_seq_bf = self.batch_first and mask[:, 0].all()
                    if not no_empty_seq and not no_empty_seq_bf:
                        raise ValueError('mask of the first timestep must all be on')

            def _compute_score(self, emissions, tags, mask):
                seq_length, batch_size = tags.shape
                mask = mask.float()

                score = self.start_transitions[tags[0]]
                score += emissions[0, torch.arange(batch_size), tags[0]]

                for i in range(1, seq_length):
                    score += self.transitions[tags[i - 1], tags[i]] * mask[i]
                    score += emissions[i, torch.arange(batch_size), tags[i]] * mask[i]

                seq_ends = mask.long().sum(dim=0) - 1
                last_tags = tags[seq_ends, torch.arange(batch_size)]
                score += self.end_transitions[last_tags]

                return score

            def _compute_normalizer(self, emissions, mask):
                seq_length = emissions.size(0)
                score = self.start_transitions + emissions[0]

                for i in range(1, seq_length):
                    broadcast_score = score.unsqueeze(2)
                    broadcast_emissions = emissions[i].unsqueeze(1)
                    next_score = broadcast_score + self.transitions + broadcast_emissions
                    next_score = torch.logsumexp(next_score, dim=1)
                    score = torch.where(mask[i].unsqueeze(1), next_score, score)

                score += self.end_transitions
                return torch.logsumexp(score, dim=1)

            def _viterbi_decode(self, emissions, mask):
                seq_length, batch_size = mask.shape
                score = self.start_transitions + emissions[0]
                history = []

                for i in range(1, seq_length):
                    broadcast_score = score.unsqueeze(2)
                    broadcast_emission = emissions[i].unsqueeze(1)
                    next_score = broadcast_score + self.transitions + broadcast_emission
                    next_score, indices = next_score.max(dim=1)
                    score = torch.where(mask[i].unsqueeze(1), next_score, score)
                    history.append(indices)

                score += self.end_transitions

                seq_ends = mask.long().sum(dim=0) - 1
                best_tags_list = []

                for idx in range(batch_size):
                    _, best_last_tag = score[idx].max(dim=0)
                    best_tags = [best_last_tag.item()]

                    for hist in reversed(history[:seq_ends[idx]]):
                        best_last_tag = hist[idx][best_tags[-1]]
                        best_tags.append(best_last_tag.item())

                    best_tags.reverse()
                    best_tags_list.append(best_tags)

                return best_tags_list

        class Tagger(nn.Module):
            def __init__(self, vocab, dim, num_tags):
                super().__init__()
                self.emb = nn.Embedding(vocab, dim)
                self.proj = nn.Linear(dim, num_tags)
                self.crf = CRF(num_tags, batch_first=True)

            def forward(self, words):
                return self.proj(torch.tanh(self.emb(words)))

        rs = np.random.RandomState(3)
        model = init_params(torch, Tagger(7, 4, 5), seed=11, scale=0.5)
        log("repr", repr(model.crf))
        words = torch.tensor(rs.randint(0, 7, size=(3, 4)))
        tags = torch.tensor(rs.randint(0, 5, size=(3, 4)))
        mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.uint8)
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        for step in range(2):
            emissions = model(words)
            loss = -model.crf(emissions, tags, mask=mask, reduction='mean')
            opt.zero_grad()
            loss.backward()
            log(f"loss{step}", loss)
            log(f"grad_trans{step}", model.crf.transitions.grad)
            log(f"grad_emb{step}", model.emb.weight.grad)
            opt.step()
        emissions = model(words)
        with torch.no_grad():
            for red in ('none', 'sum', 'token_mean'):
                log(f"llh_{red}", model.crf(emissions, tags, mask=mask, reduction=red))
            log("llh_nomask", model.crf(emissions, tags))
            log("decode", model.crf.decode(emissions, mask=mask))
            log("decode_nomask", model.crf.decode(emissions))
        for bad in (lambda: model.crf(emissions, tags, reduction='avg'),
                    lambda: model.crf(emissions[0], tags),
                    lambda: model.crf(emissions, tags[:, :3]),
                    lambda: model.crf.decode(emissions, mask=mask.flip(1)),
                    lambda: CRF(0)):
            try:
                bad()
                log("bad", "no error")
            except ValueError as e:
                log("bad", str(e))

    run_both(program)


# pranz24/pytorch-soft-actor-critic model.py (QNetwork, GaussianPolicy, weights_init_), utils.py
# (soft_update, hard_update) and sac.py (SAC.__init__ with automatic entropy tuning,
# update_parameters). Sizes: state 3, action 2, hidden 8, batch 4, two updates. Changed lines:
# ``Normal.rsample``'s noise comes from numpy (a ``Normal`` subclass overriding ``rsample`` as
# loc + scale * eps; torch's and tracegrad's random streams differ) -- the real ``rsample`` is
# still called once and its shape / grad_fn logged; the replay memory is a numpy batch; the
# ``args`` namespace is inlined; the ``action_space`` is a small object with low/high/shape.
def test_sac_twin_q_gaussian_policy():
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional
        Adam = torch.optim.Adam
        rs = np.random.RandomState(7)

        class Normal(torch.distributions.Normal):
            def rsample(self, sample_shape=torch.Size()):
                eps = torch.from_numpy(rs.standard_normal(tuple(self.loc.shape)).astype(np.float32))
                return self.loc + eps * self.scale

        LOG_SIG_MAX = 2
        LOG_SIG_MIN = -20
        epsilon = 1e-6

        def weights_init_(m):
            if isinstance(m, nn.Linear):
                torch.nn.init.xavier_uniform_(m.weight, gain=1)
                torch.nn.init.constant_(m.bias, 0)

        def soft_update(target, source, tau):
            for target_param, param in zip(target.parameters(), source.parameters()):
                target_param.data.copy_(target_param.data * (1.0 - tau) + param.data * tau)

        def hard_update(target, source):
            for target_param, param in zip(target.parameters(), source.parameters()):
                target_param.data.copy_(param.data)

        class QNetwork(nn.Module):
            def __init__(self, num_inputs, num_actions, hidden_dim):
                super(QNetwork, self).__init__()

                # Q1 architecture
                self.linear1 = nn.Linear(num_inputs + num_actions, hidden_dim)
                self.linear2 = nn.Linear(hidden_dim, hidden_dim)
                self.linear3 = nn.Linear(hidden_dim, 1)

                # Q2 architecture
                self.linear4 = nn.Linear(num_inputs + num_actions, hidden_dim)
                self.linear5 = nn.Linear(hidden_dim, hidden_dim)
                self.linear6 = nn.Linear(hidden_dim, 1)

                self.apply(weights_init_)

            def forward(self, state, action):
                xu = torch.cat([state, action], 1)

                x1 = F.relu(self.linear1(xu))
                x1 = F.relu(self.linear2(x1))
                x1 = self.linear3(x1)

                x2 = F.relu(self.linear4(xu))
                x2 = F.relu(self.linear5(x2))
                x2 = self.linear6(x2)

                return x1, x2

        class GaussianPolicy(nn.Module):
            def __init__(self, num_inputs, num_actions, hidden_dim, action_space=None):
                super(GaussianPolicy, self).__init__()

                self.linear1 = nn.Linear(num_inputs, hidden_dim)
                self.linear2 = nn.Linear(hidden_dim, hidden_dim)

                self.mean_linear = nn.Linear(hidden_dim, num_actions)
                self.log_std_linear = nn.Linear(hidden_dim, num_actions)

                self.apply(weights_init_)

                # action rescaling
                if action_space is None:
                    self.action_scale = torch.tensor(1.)
                    self.action_bias = torch.tensor(0.)
                else:
                    self.action_scale = torch.FloatTensor(
                        (action_space.high - action_space.low) / 2.)
                    self.action_bias = torch.FloatTensor(
                        (action_space.high + action_space.low) / 2.)

            def forward(self, state):
                x = F.relu(self.linear1(state))
                x = F.relu(self.linear2(x))
                mean = self.mean_linear(x)
                log_std = self.log_std_linear(x)
                log_std = torch.clamp(log_std, min=LOG_SIG_MIN, max=LOG_SIG_MAX)
                return mean, log_std

            def sample(self, state):
                mean, log_std = self.forward(state)
                std = log_std.exp()
                normal = Normal(mean, std)
                x_t = normal.rsample()  # for reparameterization trick (mean + std * N(0,1))
                y_t = torch.tanh(x_t)
                action = y_t * self.action_scale + self.action_bias
                log_prob = normal.log_prob(x_t)
                # Enforcing Action Bound
                log_prob -= torch.log(self.action_scale * (1 - y_t.pow(2)) + epsilon)
                log_prob = log_prob.sum(1, keepdim=True)
                mean = torch.tanh(mean) * self.action_scale + self.action_bias
                return action, log_prob, mean

        class ActionSpace:
            low = np.array([-2.0, -1.0], dtype=np.float32)
            high = np.array([2.0, 1.0], dtype=np.float32)
            shape = (2,)

        class SAC(object):
            def __init__(self, num_inputs, action_space):
                self.gamma = 0.99
                self.tau = 0.005
                self.alpha = 0.2
                self.target_update_interval = 1
                self.automatic_entropy_tuning = True
                self.device = torch.device("cpu")

                self.critic = QNetwork(num_inputs, action_space.shape[0], 8).to(device=self.device)
                init_params(torch, self.critic, seed=1)
                self.critic_optim = Adam(self.critic.parameters(), lr=3e-3)

                self.critic_target = QNetwork(num_inputs, action_space.shape[0], 8).to(self.device)
                hard_update(self.critic_target, self.critic)

                if self.automatic_entropy_tuning is True:
                    self.target_entropy = -torch.prod(torch.Tensor(action_space.shape).to(self.device)).item()
                    self.log_alpha = torch.zeros(1, requires_grad=True, device=self.device)
                    self.alpha_optim = Adam([self.log_alpha], lr=3e-3)

                self.policy = GaussianPolicy(num_inputs, action_space.shape[0], 8, action_space).to(self.device)
                init_params(torch, self.policy, seed=2)
                self.policy_optim = Adam(self.policy.parameters(), lr=3e-3)

            def update_parameters(self, batch, updates):
                state_batch, action_batch, reward_batch, next_state_batch, mask_batch = batch

                state_batch = torch.FloatTensor(state_batch).to(self.device)
                next_state_batch = torch.FloatTensor(next_state_batch).to(self.device)
                action_batch = torch.FloatTensor(action_batch).to(self.device)
                reward_batch = torch.FloatTensor(reward_batch).to(self.device).unsqueeze(1)
                mask_batch = torch.FloatTensor(mask_batch).to(self.device).unsqueeze(1)

                with torch.no_grad():
                    next_state_action, next_state_log_pi, _ = self.policy.sample(next_state_batch)
                    qf1_next_target, qf2_next_target = self.critic_target(next_state_batch, next_state_action)
                    min_qf_next_target = torch.min(qf1_next_target, qf2_next_target) - self.alpha * next_state_log_pi
                    next_q_value = reward_batch + mask_batch * self.gamma * (min_qf_next_target)
                qf1, qf2 = self.critic(state_batch, action_batch)
                qf1_loss = F.mse_loss(qf1, next_q_value)
                qf2_loss = F.mse_loss(qf2, next_q_value)
                qf_loss = qf1_loss + qf2_loss

                self.critic_optim.zero_grad()
                qf_loss.backward()
                self.critic_optim.step()

                pi, log_pi, _ = self.policy.sample(state_batch)

                qf1_pi, qf2_pi = self.critic(state_batch, pi)
                min_qf_pi = torch.min(qf1_pi, qf2_pi)

                policy_loss = ((self.alpha * log_pi) - min_qf_pi).mean()

                self.policy_optim.zero_grad()
                policy_loss.backward()
                self.policy_optim.step()

                if self.automatic_entropy_tuning:
                    alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy).detach()).mean()

                    self.alpha_optim.zero_grad()
                    alpha_loss.backward()
                    self.alpha_optim.step()

                    self.alpha = self.log_alpha.exp()
                    alpha_tlogs = self.alpha.clone()
                else:
                    alpha_loss = torch.tensor(0.).to(self.device)
                    alpha_tlogs = torch.tensor(self.alpha)

                if updates % self.target_update_interval == 0:
                    soft_update(self.critic_target, self.critic, self.tau)

                return qf1_loss.item(), qf2_loss.item(), policy_loss.item(), alpha_loss.item(), alpha_tlogs.item()

        agent = SAC(3, ActionSpace())
        log("target_entropy", agent.target_entropy)
        log("action_scale", agent.policy.action_scale)
        # the real rsample: random values, but its shape and graph are observable
        mean, log_std = agent.policy(torch.ones(2, 3))
        real = torch.distributions.Normal(mean, log_std.exp()).rsample()
        log("rsample", (tuple(real.shape), real.requires_grad, real.grad_fn is not None))
        for updates in range(2):
            batch = (rs.standard_normal((4, 3)).astype(np.float32),
                     rs.uniform(-1, 1, (4, 2)).astype(np.float32),
                     rs.standard_normal(4).astype(np.float32),
                     rs.standard_normal((4, 3)).astype(np.float32),
                     np.array([1.0, 1.0, 0.0, 1.0], dtype=np.float32))
            log(f"update{updates}", agent.update_parameters(batch, updates))
        log("alpha", agent.alpha)
        log("log_alpha_grad", agent.log_alpha.grad)
        log("target", agent.critic_target.linear6.bias)
        log("policy", agent.policy.mean_linear.weight)
        log("policy_grad", agent.policy.log_std_linear.weight.grad)

    run_both(program)


# vwxyzjn/cleanrl cleanrl/ppo.py (layer_init, Agent, the rollout + GAE + PPO update loop).
# Sizes: 2 envs x 4 steps, obs 3, 2 actions, hidden 8 (64 in the script), 2 iterations of 2 update
# epochs over 2 minibatches. Changed lines: the gym vector env is a small deterministic numpy
# environment; ``probs.sample()`` in the rollout is replaced by actions drawn with numpy and passed
# in as ``action`` (random streams differ); the orthogonal init is overwritten from numpy after
# construction (its orthogonality is logged); ``np.random.shuffle`` runs under a fixed seed;
# tensorboard writes become log entries.
def test_cleanrl_ppo_categorical():
    def program(torch, log):
        nn = torch.nn
        optim = torch.optim
        Categorical = torch.distributions.categorical.Categorical

        def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
            torch.nn.init.orthogonal_(layer.weight, std)
            torch.nn.init.constant_(layer.bias, bias_const)
            return layer

        class Agent(nn.Module):
            def __init__(self, obs_dim, n_actions):
                super().__init__()
                self.critic = nn.Sequential(
                    layer_init(nn.Linear(obs_dim, 8)),
                    nn.Tanh(),
                    layer_init(nn.Linear(8, 8)),
                    nn.Tanh(),
                    layer_init(nn.Linear(8, 1), std=1.0),
                )
                self.actor = nn.Sequential(
                    layer_init(nn.Linear(obs_dim, 8)),
                    nn.Tanh(),
                    layer_init(nn.Linear(8, 8)),
                    nn.Tanh(),
                    layer_init(nn.Linear(8, n_actions), std=0.01),
                )

            def get_value(self, x):
                return self.critic(x)

            def get_action_and_value(self, x, action=None):
                logits = self.actor(x)
                probs = Categorical(logits=logits)
                if action is None:
                    action = probs.sample()
                return action, probs.log_prob(action), probs.entropy(), self.critic(x)

        class Envs:
            num_envs = 2

            def __init__(self):
                self.state = np.array([[0.1, -0.2, 0.3], [0.0, 0.5, -0.4]], dtype=np.float32)
                self.t = 0

            def step(self, action):
                self.t += 1
                push = np.where(action[:, None] == 1, 0.3, -0.3).astype(np.float32)
                self.state = np.tanh(self.state + push * np.array([1.0, -0.5, 0.25], np.float32))
                reward = (1.0 - np.abs(self.state).sum(1)).astype(np.float32)
                done = np.array([self.t % 3 == 0, False])
                return self.state.copy(), reward, done

        num_envs, num_steps, num_iterations = 2, 4, 2
        batch_size = num_envs * num_steps
        minibatch_size = batch_size // 2
        learning_rate, gamma, gae_lambda = 2.5e-3, 0.99, 0.95
        update_epochs, clip_coef, ent_coef, vf_coef, max_grad_norm = 2, 0.2, 0.01, 0.5, 0.5
        device = torch.device("cpu")
        act_rs = np.random.RandomState(4)
        np.random.seed(1)  # the script's seeding (``seeded`` restores the global stream)

        agent = Agent(3, 2).to(device)
        w = agent.actor[0].weight.detach()
        log("orthogonal", torch.allclose(w @ w.T, 2 * torch.eye(8), atol=1e-4)
            if w.shape[0] <= w.shape[1] else torch.allclose(w.T @ w, 2 * torch.eye(3), atol=1e-4))
        log("bias0", agent.critic[4].bias)
        init_params(torch, agent, seed=9, scale=0.5)
        optimizer = optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)

        obs = torch.zeros((num_steps, num_envs) + (3,)).to(device)
        actions = torch.zeros((num_steps, num_envs)).to(device)
        logprobs = torch.zeros((num_steps, num_envs)).to(device)
        rewards = torch.zeros((num_steps, num_envs)).to(device)
        dones = torch.zeros((num_steps, num_envs)).to(device)
        values = torch.zeros((num_steps, num_envs)).to(device)

        envs = Envs()
        next_obs = torch.Tensor(envs.state.copy()).to(device)
        next_done = torch.zeros(num_envs).to(device)

        for iteration in range(1, num_iterations + 1):
            frac = 1.0 - (iteration - 1.0) / num_iterations
            lrnow = frac * learning_rate
            optimizer.param_groups[0]["lr"] = lrnow

            for step in range(0, num_steps):
                obs[step] = next_obs
                dones[step] = next_done

                with torch.no_grad():
                    drawn = torch.tensor(act_rs.randint(0, 2, size=num_envs))
                    action, logprob, _, value = agent.get_action_and_value(next_obs, drawn)
                    values[step] = value.flatten()
                actions[step] = action
                logprobs[step] = logprob

                next_obs, reward, next_done = envs.step(action.cpu().numpy())
                rewards[step] = torch.tensor(reward).to(device).view(-1)
                next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(next_done).to(device)

            with torch.no_grad():
                next_value = agent.get_value(next_obs).reshape(1, -1)
                advantages = torch.zeros_like(rewards).to(device)
                lastgaelam = 0
                for t in reversed(range(num_steps)):
                    if t == num_steps - 1:
                        nextnonterminal = 1.0 - next_done
                        nextvalues = next_value
                    else:
                        nextnonterminal = 1.0 - dones[t + 1]
                        nextvalues = values[t + 1]
                    delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                    advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
                returns = advantages + values

            b_obs = obs.reshape((-1,) + (3,))
            b_logprobs = logprobs.reshape(-1)
            b_actions = actions.reshape((-1,) + ())
            b_advantages = advantages.reshape(-1)
            b_returns = returns.reshape(-1)
            b_values = values.reshape(-1)

            b_inds = np.arange(batch_size)
            clipfracs = []
            for epoch in range(update_epochs):
                np.random.shuffle(b_inds)
                for start in range(0, batch_size, minibatch_size):
                    end = start + minibatch_size
                    mb_inds = b_inds[start:end]

                    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
                    logratio = newlogprob - b_logprobs[mb_inds]
                    ratio = logratio.exp()

                    with torch.no_grad():
                        old_approx_kl = (-logratio).mean()
                        approx_kl = ((ratio - 1) - logratio).mean()
                        clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]

                    mb_advantages = b_advantages[mb_inds]
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                    pg_loss1 = -mb_advantages * ratio
                    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                    newvalue = newvalue.view(-1)
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds],
                        -clip_coef,
                        clip_coef,
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()

                    entropy_loss = entropy.mean()
                    loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef

                    optimizer.zero_grad()
                    loss.backward()
                    gnorm = nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                    optimizer.step()
                    log(f"loss{iteration}.{epoch}.{start}", loss)
                    log(f"gnorm{iteration}.{epoch}.{start}", gnorm)

            y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
            var_y = np.var(y_true)
            explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
            log(f"lr{iteration}", optimizer.param_groups[0]["lr"])
            log(f"value_loss{iteration}", v_loss.item())
            log(f"policy_loss{iteration}", pg_loss.item())
            log(f"entropy{iteration}", entropy_loss.item())
            log(f"old_approx_kl{iteration}", old_approx_kl.item())
            log(f"approx_kl{iteration}", approx_kl.item())
            log(f"clipfrac{iteration}", np.mean(clipfracs))
            log(f"explained_variance{iteration}", explained_var)
            log(f"advantages{iteration}", advantages)
        log("actor_grad", agent.actor[4].weight.grad)

    with seeded(0):
        run_both(program, rtol=1e-4)


# timbmg/VAE-CVAE-MNIST models.py (VAE, Encoder, Decoder), utils.py (idx2onehot) and train.py
# (loss_fn, the epoch loop with its tracker, inference for every label). Sizes: "images" 1x4x4
# (28x28: the ``28*28`` constants become ``4*4``), encoder [16, 8], latent 2, decoder [8, 16],
# 10 labels, 6 samples in batches of 3, one epoch. Changed lines: ``torch.randn_like`` /
# ``torch.randn`` noise comes from numpy; MNIST is a ``TensorDataset`` with ``shuffle=False``;
# plotting is dropped.
def test_cvae_idx2onehot_scatter():
    def program(torch, log):
        nn = torch.nn
        DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
        rs = np.random.RandomState(21)

        def randn_like(t):
            return torch.from_numpy(rs.standard_normal(tuple(t.shape)).astype(np.float32))

        def idx2onehot(idx, n):
            assert torch.max(idx).item() < n
            if idx.dim() == 1:
                idx = idx.unsqueeze(1)
            onehot = torch.zeros(idx.size(0), n).to(idx.device)
            onehot.scatter_(1, idx, 1)
            return onehot

        class VAE(nn.Module):
            def __init__(self, encoder_layer_sizes, latent_size, decoder_layer_sizes,
                         conditional=False, num_labels=0):
                super().__init__()
                if conditional:
                    assert num_labels > 0
                assert type(encoder_layer_sizes) == list
                assert type(latent_size) == int
                assert type(decoder_layer_sizes) == list
                self.latent_size = latent_size
                self.encoder = Encoder(
                    encoder_layer_sizes, latent_size, conditional, num_labels)
                self.decoder = Decoder(
                    decoder_layer_sizes, latent_size, conditional, num_labels)

            def forward(self, x, c=None):
                if x.dim() > 2:
                    x = x.view(-1, 4*4)
                means, log_var = self.encoder(x, c)
                z = self.reparameterize(means, log_var)
                recon_x = self.decoder(z, c)
                return recon_x, means, log_var, z

            def reparameterize(self, mu, log_var):
                std = torch.exp(0.5 * log_var)
                eps = randn_like(std)
                return mu + eps * std

            def inference(self, z, c=None):
                recon_x = self.decoder(z, c)
                return recon_x

        class Encoder(nn.Module):
            def __init__(self, layer_sizes, latent_size, conditional, num_labels):
                super().__init__()
                self.conditional = conditional
                if self.conditional:
                    layer_sizes[0] += num_labels
                self.MLP = nn.Sequential()
                for i, (in_size, out_size) in enumerate(zip(layer_sizes[:-1], layer_sizes[1:])):
                    self.MLP.add_module(
                        name="L{:d}".format(i), module=nn.Linear(in_size, out_size))
                    self.MLP.add_module(name="A{:d}".format(i), module=nn.ReLU())
                self.linear_means = nn.Linear(layer_sizes[-1], latent_size)
                self.linear_log_var = nn.Linear(layer_sizes[-1], latent_size)

            def forward(self, x, c=None):
                if self.conditional:
                    c = idx2onehot(c, n=10)
                    x = torch.cat((x, c), dim=-1)
                x = self.MLP(x)
                means = self.linear_means(x)
                log_vars = self.linear_log_var(x)
                return means, log_vars

        class Decoder(nn.Module):
            def __init__(self, layer_sizes, latent_size, conditional, num_labels):
                super().__init__()
                self.MLP = nn.Sequential()
                self.conditional = conditional
                if self.conditional:
                    input_size = latent_size + num_labels
                else:
                    input_size = latent_size
                for i, (in_size, out_size) in enumerate(zip([input_size]+layer_sizes[:-1], layer_sizes)):
                    self.MLP.add_module(
                        name="L{:d}".format(i), module=nn.Linear(in_size, out_size))
                    if i+1 < len(layer_sizes):
                        self.MLP.add_module(name="A{:d}".format(i), module=nn.ReLU())
                    else:
                        self.MLP.add_module(name="sigmoid", module=nn.Sigmoid())

            def forward(self, z, c):
                if self.conditional:
                    c = idx2onehot(c, n=10)
                    z = torch.cat((z, c), dim=-1)
                x = self.MLP(z)
                return x

        def loss_fn(recon_x, x, mean, log_var):
            BCE = torch.nn.functional.binary_cross_entropy(
                recon_x.view(-1, 4*4), x.view(-1, 4*4), reduction='sum')
            KLD = -0.5 * torch.sum(1 + log_var - mean.pow(2) - log_var.exp())
            return (BCE + KLD) / x.size(0)

        images = torch.from_numpy(rs.uniform(0, 1, (6, 1, 4, 4)).astype(np.float32))
        labels = torch.tensor([3, 0, 9, 3, 1, 7])
        data_loader = DataLoader(dataset=TensorDataset(images, labels), batch_size=3, shuffle=False)

        vae = VAE(encoder_layer_sizes=[16, 8], latent_size=2, decoder_layer_sizes=[8, 16],
                  conditional=True, num_labels=10)
        init_params(torch, vae, seed=5)
        log("modules", [n for n, _ in vae.named_modules()])
        optimizer = torch.optim.Adam(vae.parameters(), lr=0.01)

        logs = defaultdict(list)
        for epoch in range(1):
            tracker_epoch = defaultdict(lambda: defaultdict(dict))
            for iteration, (x, y) in enumerate(data_loader):
                recon_x, mean, log_var, z = vae(x, y)
                for i, yi in enumerate(y):
                    id = len(tracker_epoch)
                    tracker_epoch[id]['x'] = z[i, 0].item()
                    tracker_epoch[id]['y'] = z[i, 1].item()
                    tracker_epoch[id]['label'] = yi.item()
                loss = loss_fn(recon_x, x, mean, log_var)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                logs['loss'].append(loss.item())
                log(f"grad{iteration}", vae.encoder.MLP.L0.weight.grad)
            log("tracker", [(k, dict(v)) for k, v in tracker_epoch.items()])
            c = torch.arange(0, 10).long().unsqueeze(1)
            z = torch.from_numpy(rs.standard_normal((c.size(0), vae.latent_size)).astype(np.float32))
            x = vae.inference(z, c=c)
            log("inference", x)
        log("losses", logs['loss'])
        log("onehot", idx2onehot(torch.tensor([2, 0]), n=4))
        try:
            idx2onehot(torch.tensor([12]), n=10)
        except AssertionError:
            log("assert", True)

    run_both(program)


# gordicaleksa/pytorch-GAT models/definitions/GAT.py (GAT, GATLayer, GATLayerImp3) and
# training_script_cora.py's loop (CrossEntropyLoss on ``index_select``ed train nodes, Adam with
# weight decay, argmax accuracy). Sizes: 6 nodes, 5 features, 2 layers with 2 then 1 heads, 4
# hidden features, 3 classes, 3 steps. Changed lines: the ``LayerType`` enum is reduced to IMP3
# (the only layer kept); dropout 0.6 -> 0.0 (a constructor argument: torch's and tracegrad's
# dropout masks differ); Cora becomes a numpy graph with self loops.
def test_gat_imp3_scatter_add():
    def program(torch, log):
        nn = torch.nn

        class GAT(torch.nn.Module):
            def __init__(self, num_of_layers, num_heads_per_layer, num_features_per_layer,
                         add_skip_connection=True, bias=True, dropout=0.6, log_attention_weights=False):
                super().__init__()
                assert num_of_layers == len(num_heads_per_layer) == len(num_features_per_layer) - 1, f'Enter valid arch params.'

                GATLayer = GATLayerImp3
                num_heads_per_layer = [1] + num_heads_per_layer

                gat_layers = []
                for i in range(num_of_layers):
                    layer = GATLayer(
                        num_in_features=num_features_per_layer[i] * num_heads_per_layer[i],
                        num_out_features=num_features_per_layer[i+1],
                        num_of_heads=num_heads_per_layer[i+1],
                        concat=True if i < num_of_layers - 1 else False,
                        activation=nn.ELU() if i < num_of_layers - 1 else None,
                        dropout_prob=dropout,
                        add_skip_connection=add_skip_connection,
                        bias=bias,
                        log_attention_weights=log_attention_weights
                    )
                    gat_layers.append(layer)

                self.gat_net = nn.Sequential(
                    *gat_layers,
                )

            def forward(self, data):
                return self.gat_net(data)

        class GATLayer(torch.nn.Module):
            head_dim = 1

            def __init__(self, num_in_features, num_out_features, num_of_heads, concat=True, activation=nn.ELU(),
                         dropout_prob=0.6, add_skip_connection=True, bias=True, log_attention_weights=False):
                super().__init__()
                self.num_of_heads = num_of_heads
                self.num_out_features = num_out_features
                self.concat = concat
                self.add_skip_connection = add_skip_connection

                self.linear_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
                self.scoring_fn_target = nn.Parameter(torch.Tensor(1, num_of_heads, num_out_features))
                self.scoring_fn_source = nn.Parameter(torch.Tensor(1, num_of_heads, num_out_features))

                if bias and concat:
                    self.bias = nn.Parameter(torch.Tensor(num_of_heads * num_out_features))
                elif bias and not concat:
                    self.bias = nn.Parameter(torch.Tensor(num_out_features))
                else:
                    self.register_parameter('bias', None)

                if add_skip_connection:
                    self.skip_proj = nn.Linear(num_in_features, num_of_heads * num_out_features, bias=False)
                else:
                    self.register_parameter('skip_proj', None)

                self.leakyReLU = nn.LeakyReLU(0.2)
                self.softmax = nn.Softmax(dim=-1)
                self.activation = activation
                self.dropout = nn.Dropout(p=dropout_prob)

                self.log_attention_weights = log_attention_weights
                self.attention_weights = None

                self.init_params()

            def init_params(self):
                nn.init.xavier_uniform_(self.linear_proj.weight)
                nn.init.xavier_uniform_(self.scoring_fn_target)
                nn.init.xavier_uniform_(self.scoring_fn_source)

                if self.bias is not None:
                    torch.nn.init.zeros_(self.bias)

            def skip_concat_bias(self, attention_coefficients, in_nodes_features, out_nodes_features):
                if self.log_attention_weights:
                    self.attention_weights = attention_coefficients

                if not out_nodes_features.is_contiguous():
                    out_nodes_features = out_nodes_features.contiguous()

                if self.add_skip_connection:
                    if out_nodes_features.shape[-1] == in_nodes_features.shape[-1]:
                        out_nodes_features += in_nodes_features.unsqueeze(1)
                    else:
                        out_nodes_features += self.skip_proj(in_nodes_features).view(-1, self.num_of_heads, self.num_out_features)

                if self.concat:
                    out_nodes_features = out_nodes_features.view(-1, self.num_of_heads * self.num_out_features)
                else:
                    out_nodes_features = out_nodes_features.mean(dim=self.head_dim)

                if self.bias is not None:
                    out_nodes_features += self.bias

                return out_nodes_features if self.activation is None else self.activation(out_nodes_features)

        class GATLayerImp3(GATLayer):
            src_nodes_dim = 0
            trg_nodes_dim = 1
            nodes_dim = 0
            head_dim = 1

            def forward(self, data):
                in_nodes_features, edge_index = data
                num_of_nodes = in_nodes_features.shape[self.nodes_dim]
                assert edge_index.shape[0] == 2, f'Expected edge index with shape=(2,E) got {edge_index.shape}'

                in_nodes_features = self.dropout(in_nodes_features)
                nodes_features_proj = self.linear_proj(in_nodes_features).view(-1, self.num_of_heads, self.num_out_features)
                nodes_features_proj = self.dropout(nodes_features_proj)

                scores_source = (nodes_features_proj * self.scoring_fn_source).sum(dim=-1)
                scores_target = (nodes_features_proj * self.scoring_fn_target).sum(dim=-1)

                scores_source_lifted, scores_target_lifted, nodes_features_proj_lifted = self.lift(scores_source, scores_target, nodes_features_proj, edge_index)
                scores_per_edge = self.leakyReLU(scores_source_lifted + scores_target_lifted)

                attentions_per_edge = self.neighborhood_aware_softmax(scores_per_edge, edge_index[self.trg_nodes_dim], num_of_nodes)
                attentions_per_edge = self.dropout(attentions_per_edge)

                nodes_features_proj_lifted_weighted = nodes_features_proj_lifted * attentions_per_edge
                out_nodes_features = self.aggregate_neighbors(nodes_features_proj_lifted_weighted, edge_index, in_nodes_features, num_of_nodes)

                out_nodes_features = self.skip_concat_bias(attentions_per_edge, in_nodes_features, out_nodes_features)
                return (out_nodes_features, edge_index)

            def neighborhood_aware_softmax(self, scores_per_edge, trg_index, num_of_nodes):
                scores_per_edge = scores_per_edge - scores_per_edge.max()
                exp_scores_per_edge = scores_per_edge.exp()
                neigborhood_aware_denominator = self.sum_edge_scores_neighborhood_aware(exp_scores_per_edge, trg_index, num_of_nodes)
                attentions_per_edge = exp_scores_per_edge / (neigborhood_aware_denominator + 1e-16)
                return attentions_per_edge.unsqueeze(-1)

            def sum_edge_scores_neighborhood_aware(self, exp_scores_per_edge, trg_index, num_of_nodes):
                trg_index_broadcasted = self.explicit_broadcast(trg_index, exp_scores_per_edge)
                size = list(exp_scores_per_edge.shape)
                size[self.nodes_dim] = num_of_nodes
                neighborhood_sums = torch.zeros(size, dtype=exp_scores_per_edge.dtype, device=exp_scores_per_edge.device)
                neighborhood_sums.scatter_add_(self.nodes_dim, trg_index_broadcasted, exp_scores_per_edge)
                return neighborhood_sums.index_select(self.nodes_dim, trg_index)

            def aggregate_neighbors(self, nodes_features_proj_lifted_weighted, edge_index, in_nodes_features, num_of_nodes):
                size = list(nodes_features_proj_lifted_weighted.shape)
                size[self.nodes_dim] = num_of_nodes
                out_nodes_features = torch.zeros(size, dtype=in_nodes_features.dtype, device=in_nodes_features.device)
                trg_index_broadcasted = self.explicit_broadcast(edge_index[self.trg_nodes_dim], nodes_features_proj_lifted_weighted)
                out_nodes_features.scatter_add_(self.nodes_dim, trg_index_broadcasted, nodes_features_proj_lifted_weighted)
                return out_nodes_features

            def lift(self, scores_source, scores_target, nodes_features_matrix_proj, edge_index):
                src_nodes_index = edge_index[self.src_nodes_dim]
                trg_nodes_index = edge_index[self.trg_nodes_dim]
                scores_source = scores_source.index_select(self.nodes_dim, src_nodes_index)
                scores_target = scores_target.index_select(self.nodes_dim, trg_nodes_index)
                nodes_features_matrix_proj_lifted = nodes_features_matrix_proj.index_select(self.nodes_dim, src_nodes_index)
                return scores_source, scores_target, nodes_features_matrix_proj_lifted

            def explicit_broadcast(self, this, other):
                for _ in range(this.dim(), other.dim()):
                    this = this.unsqueeze(-1)
                return this.expand_as(other)

        rs = np.random.RandomState(13)
        edges = [(0, 1), (1, 0), (1, 2), (2, 3), (3, 1), (4, 5), (5, 4), (2, 5)]
        edges += [(i, i) for i in range(6)]
        edge_index = torch.tensor(np.array(edges, dtype=np.int64).T)
        node_features = torch.from_numpy(rs.standard_normal((6, 5)).astype(np.float32))
        node_labels = torch.tensor([0, 1, 2, 1, 0, 2])
        train_indices = torch.arange(0, 4, dtype=torch.long)
        val_indices = torch.arange(4, 6, dtype=torch.long)

        gat = GAT(num_of_layers=2, num_heads_per_layer=[2, 1], num_features_per_layer=[5, 4, 3],
                  add_skip_connection=True, bias=True, dropout=0.0, log_attention_weights=True)
        init_params(torch, gat, seed=8, scale=0.5)
        loss_fn = nn.CrossEntropyLoss(reduction='mean')
        optimizer = torch.optim.Adam(gat.parameters(), lr=5e-3, weight_decay=5e-4)
        graph_data = (node_features, edge_index)
        train_labels = node_labels.index_select(0, train_indices)
        for epoch in range(3):
            gat.train()
            nodes_unnormalized_scores = gat(graph_data)[0].index_select(0, train_indices)
            loss = loss_fn(nodes_unnormalized_scores, train_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            class_predictions = torch.argmax(nodes_unnormalized_scores, dim=-1)
            accuracy = torch.sum(torch.eq(class_predictions, train_labels).long()).item() / len(train_labels)
            log(f"loss{epoch}", loss)
            log(f"acc{epoch}", accuracy)
            log(f"grad{epoch}", gat.gat_net[0].scoring_fn_source.grad)
        gat.eval()
        with torch.no_grad():
            out = gat(graph_data)[0]
            log("val", out.index_select(0, val_indices))
            log("attention", gat.gat_net[1].attention_weights)
        log("skip_grad", gat.gat_net[1].skip_proj.weight.grad)

    run_both(program)


# itayhubara/BinaryNet.pytorch models/binarized_modules.py (Binarize, binarized, BinarizeLinear)
# and main_mnist.py (Net, the train loop with ``p.org``). Sizes: 3x3 inputs (28x28 in the script; a
# 784-wide input hits this version's unbound ``input_b``, so the first layer binarizes its input
# too), 6 hidden units (2048*3), 3 classes, 4 samples, 3 steps; the odd input width keeps the
# binarized sums odd, so no batch-norm output is a rounding-sized tie whose ``sign`` could flip.
# The script's Adam becomes SGD with momentum: the biases feeding batch norm have a true gradient
# of 0, and Adam turns their rounding-level gradients (1e-9, summed in different orders by torch
# and XLA) into full +-lr steps. Changed lines: Net keeps two hidden blocks of the script's three; the dropout
# it defines is unused there too. ``Binarize`` keeps only the deterministic mode (its
# stochastic branch draws ``torch.rand``).
def test_binarynet_legacy_inplace_function():
    def program(torch, log):
        import warnings
        nn = torch.nn
        F = torch.nn.functional
        InplaceFunction = torch.autograd.function.InplaceFunction

        class Binarize(InplaceFunction):

            def forward(ctx, input, quant_mode='det', allow_scale=False, inplace=False):
                ctx.inplace = inplace
                if ctx.inplace:
                    ctx.mark_dirty(input)
                    output = input
                else:
                    output = input.clone()

                scale = output.abs().max() if allow_scale else 1

                return output.div(scale).sign().mul(scale)

            def backward(ctx, grad_output):
                #STE
                grad_input = grad_output
                return grad_input, None, None, None

        def binarized(input, quant_mode='det'):
            return Binarize.apply(input, quant_mode)

        class BinarizeLinear(nn.Linear):

            def __init__(self, *kargs, **kwargs):
                super(BinarizeLinear, self).__init__(*kargs, **kwargs)

            def forward(self, input):

                if input.size(1) != 784:
                    input_b = binarized(input)
                weight_b = binarized(self.weight)
                out = nn.functional.linear(input_b, weight_b)
                if not self.bias is None:
                    self.bias.org = self.bias.data.clone()
                    out += self.bias.view(1, -1).expand_as(out)

                return out

        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.infl_ratio = 3
                self.fc1 = BinarizeLinear(9, 2*self.infl_ratio)
                self.htanh1 = nn.Hardtanh()
                self.bn1 = nn.BatchNorm1d(2*self.infl_ratio)
                self.fc2 = BinarizeLinear(2*self.infl_ratio, 2*self.infl_ratio)
                self.htanh2 = nn.Hardtanh()
                self.bn2 = nn.BatchNorm1d(2*self.infl_ratio)
                self.fc4 = nn.Linear(2*self.infl_ratio, 3)
                self.logsoftmax = nn.LogSoftmax()
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                x = x.view(-1, 9)
                x = self.fc1(x)
                x = self.bn1(x)
                x = self.htanh1(x)
                x = self.fc2(x)
                x = self.bn2(x)
                x = self.htanh2(x)
                x = self.fc4(x)
                return self.logsoftmax(x)

        rs = np.random.RandomState(17)
        model = init_params(torch, Net(), seed=3, scale=0.6)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        data = torch.from_numpy(rs.standard_normal((4, 1, 3, 3)).astype(np.float32))
        target = torch.tensor([0, 2, 1, 2])
        model.train()
        for batch_idx in range(3):
            optimizer.zero_grad()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                output = model(data)
            log(f"warned{batch_idx}", sorted({str(w.message)[:40] for w in caught}))
            loss = criterion(output, target)
            loss.backward()
            log(f"grad_fn{batch_idx}", type(output.grad_fn).__name__)
            log(f"loss{batch_idx}", loss)
            log(f"grad_w1_{batch_idx}", model.fc1.weight.grad)
            log(f"grad_b2_{batch_idx}", model.fc2.bias.grad)
            for p in list(model.parameters()):
                if hasattr(p, 'org'):
                    p.data.copy_(p.org)
            optimizer.step()
            for p in list(model.parameters()):
                if hasattr(p, 'org'):
                    p.org.copy_(p.data.clamp_(-1, 1))
            log(f"has_org{batch_idx}", [n for n, p in model.named_parameters() if hasattr(p, 'org')])
        log("b1", model.fc1.bias)
        log("w2", model.fc2.weight)
        log("running_mean", model.bn2.running_mean)
        x = torch.tensor([[-0.5, 0.0, 2.0]], requires_grad=True)
        y = Binarize.apply(x)
        y.sum().backward()
        log("sign", (y, x.grad, type(y.grad_fn).__name__))
        model.eval()
        with torch.no_grad():
            log("eval", model(data).argmax(1))

    run_both(program)


# pytorch-crf's ``torch.where(mask[i].unsqueeze(1), ...)`` on its ``uint8`` masks, at every time
# step of every call: torch's deprecation warning is a TORCH_WARN_ONCE (given once per process;
# every time under ``set_warn_always(True)``), so a training loop is not flooded with it and a
# compiled step is not broken by a warning "issued on every eager call".
def test_where_uint8_condition_warns_once_per_process():
    import warnings

    import tracegrad

    for mod in (torch, tracegrad):
        mask = mod.tensor([1, 0, 1], dtype=mod.uint8)
        a, b = mod.ones(3), mod.zeros(3)
        mod.where(mask, a, b)    # the process's first (maybe not: another test's) warning
        was = mod.is_warn_always_enabled()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(3):
                    out = mod.where(mask, a, b)
                quiet = len(caught)
                mod.set_warn_always(True)
                for _ in range(2):
                    a.where(mask, b)
        finally:
            mod.set_warn_always(was)
        assert out.tolist() == [1.0, 0.0, 1.0]
        assert quiet == 0, mod.__name__
        assert len(caught) == 2, mod.__name__
        assert "uint8 condition" in str(caught[0].message) and caught[0].filename == __file__
