"""A twelfth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round11.py``: minimal reinforcement learning (DQN with a replay buffer
and a target network, PPO, DDPG with Ornstein-Uhlenbeck noise, SAC sharing its critic through
``copy.copy``, ACER's truncated importance weights), spinningup's squashed Gaussian actor-critic
with polyak averaging, a ``TransformedDistribution`` with a user-written ``Transform``, slot
attention, a custom ``Optimizer`` built on ``lerp_``/``atan2_``, BYOL's forward hooks and moving
averages, SimSiam with ``CosineSimilarity`` and per-group fixed learning rates, ShuffleNetV2's
channel shuffle, knowledge distillation losses (``kl_div`` with ``size_average``, attention
transfer, similarity preserving, relational distances with ``range`` indexing) and online
triplet mining over byte masks. Each keeps its program's code at tiny sizes (fewer channels,
steps and samples), with numpy-seeded data and parameters (``init_params``/``randn``) in place
of downloads and random streams (``gym`` environments become a seeded numpy stand-in, and a
distribution's ``sample()`` a seeded numpy draw); where a program's own code had to change, the
comment above its test says how and why. Python's ``random`` and numpy's global stream are
seeded at the start of each run (``_seeded``), so ``random.sample``/``np.random.normal`` draw
the same numbers for both libraries.
"""
import random

import numpy as np
import pytest

from parity import init_params, randn, run_both, seeded as _seeded

torch = pytest.importorskip("torch")


class _Env:
    """A stand-in for a gym environment: seeded float32 observations of ``obs_dim``, reward
    1.0 (or ``-|a|`` for continuous actions), ``done`` after ``n`` steps; ``new_api`` returns
    gym>=0.26's ``(s, info)``/5-tuples."""

    def __init__(self, obs_dim=4, n=5, seed=0, new_api=False):
        self.rs, self.obs_dim, self.n, self.new_api = np.random.RandomState(seed), obs_dim, n, new_api

    def reset(self):
        self.t = 0
        s = self.rs.randn(self.obs_dim).astype(np.float32)
        return (s, {}) if self.new_api else s

    def step(self, a):
        self.t += 1
        s = self.rs.randn(self.obs_dim).astype(np.float32)
        r = 1.0 if isinstance(a, int) else -abs(float(a[0]))
        done = self.t >= self.n
        return (s, r, done, False, {}) if self.new_api else (s, r, done, {})

    def close(self):
        pass


def _draw(torch, dist, rs):
    """A seeded stand-in for ``Normal.sample()``: ``mean + stddev * eps`` with numpy's eps."""
    eps = torch.tensor(rs.randn(*dist.mean.shape).astype(np.float32))
    return (dist.mean + dist.stddev * eps).detach()


def _draw_cat(prob, rs):
    """A seeded stand-in for ``Categorical(prob).sample().item()``."""
    c = np.cumsum(prob.detach().numpy().astype(np.float64))
    return int(min(np.searchsorted(c, rs.rand() * c[-1]), len(c) - 1))


# seungeunrho/minimalRL dqn.py (ReplayBuffer over collections.deque with random.sample, Qnet,
# sample_action's epsilon-greedy argmax().item(), train's gather/max(1)[0]/smooth_l1_loss, the
# target network refreshed through load_state_dict); widths 128 -> 8, batch 32 -> 4, 10 inner
# steps -> 2, training after 2000 -> 8 transitions, 10000 episodes of CartPole -> 4 of a
# seeded stand-in (gym>=0.26 API as the file uses it)
def test_minimalrl_dqn():
    def program(torch, log):
        import collections
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        learning_rate = 0.0005
        gamma = 0.98
        buffer_limit = 50000
        batch_size = 4

        class ReplayBuffer():
            def __init__(self):
                self.buffer = collections.deque(maxlen=buffer_limit)

            def put(self, transition):
                self.buffer.append(transition)

            def sample(self, n):
                mini_batch = random.sample(self.buffer, n)
                s_lst, a_lst, r_lst, s_prime_lst, done_mask_lst = [], [], [], [], []

                for transition in mini_batch:
                    s, a, r, s_prime, done_mask = transition
                    s_lst.append(s)
                    a_lst.append([a])
                    r_lst.append([r])
                    s_prime_lst.append(s_prime)
                    done_mask_lst.append([done_mask])

                return torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst), \
                       torch.tensor(r_lst), torch.tensor(s_prime_lst, dtype=torch.float), \
                       torch.tensor(done_mask_lst)

            def size(self):
                return len(self.buffer)

        class Qnet(nn.Module):
            def __init__(self):
                super(Qnet, self).__init__()
                self.fc1 = nn.Linear(4, 8)
                self.fc2 = nn.Linear(8, 8)
                self.fc3 = nn.Linear(8, 2)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                x = self.fc3(x)
                return x

            def sample_action(self, obs, epsilon):
                out = self.forward(obs)
                coin = random.random()
                if coin < epsilon:
                    return random.randint(0, 1)
                else:
                    return out.argmax().item()

        def train(q, q_target, memory, optimizer):
            for i in range(2):
                s, a, r, s_prime, done_mask = memory.sample(batch_size)

                q_out = q(s)
                q_a = q_out.gather(1, a)
                max_q_prime = q_target(s_prime).max(1)[0].unsqueeze(1)
                target = r + gamma * max_q_prime * done_mask
                loss = F.smooth_l1_loss(q_a, target)

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log("loss", loss)

        with _seeded(0):
            env = _Env(new_api=True)
            q = init_params(torch, Qnet(), 1)
            q_target = Qnet()
            q_target.load_state_dict(q.state_dict())
            memory = ReplayBuffer()

            print_interval = 2
            score = 0.0
            optimizer = optim.Adam(q.parameters(), lr=learning_rate)

            for n_epi in range(4):
                epsilon = max(0.01, 0.5 - 0.01 * (n_epi / 200))
                s, _ = env.reset()
                done = False

                while not done:
                    a = q.sample_action(torch.from_numpy(s).float(), epsilon)
                    s_prime, r, done, truncated, info = env.step(a)
                    done_mask = 0.0 if done else 1.0
                    memory.put((s, a, r / 100.0, s_prime, done_mask))
                    s = s_prime
                    score += r

                if memory.size() > 8:
                    train(q, q_target, memory, optimizer)

                if n_epi % print_interval == 0 and n_epi != 0:
                    q_target.load_state_dict(q.state_dict())
                    print("n_episode :{}, score : {:.1f}, n_buffer : {}, eps : {:.1f}%".format(
                        n_epi, score / print_interval, memory.size(), epsilon * 100))
                    score = 0.0
            env.close()
        log("fc3", q.fc3.weight)
        log("target", q_target.fc1.bias)

    run_both(program)


# seungeunrho/minimalRL ppo.py (PPO's make_batch of Python lists, GAE over
# ``delta.detach().numpy()[::-1]``, the clipped surrogate with gather/log/exp/clamp/min and
# F.smooth_l1_loss with a detached *input* and a target that needs grad); fc width 256 -> 8,
# T 20 -> 3, 2 episodes of a 5-step stand-in environment, ``Categorical(prob).sample()`` ->
# a seeded numpy draw from ``prob`` (``_draw_cat``), the Categorical's log_prob logged
def test_minimalrl_ppo():
    def program(torch, log):
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        Categorical = torch.distributions.Categorical

        class PPO(nn.Module):
            def __init__(self):
                super(PPO, self).__init__()
                self.data = []
                self.gamma = 0.98
                self.lmbda = 0.95
                self.eps = 0.1
                self.K = 2

                self.fc1 = nn.Linear(4, 8)
                self.fc_pi = nn.Linear(8, 2)
                self.fc_v = nn.Linear(8, 1)
                init_params(torch, self, 2)
                self.optimizer = optim.Adam(self.parameters(), lr=0.0005)

            def pi(self, x, softmax_dim=0):
                x = F.relu(self.fc1(x))
                x = self.fc_pi(x)
                prob = F.softmax(x, dim=softmax_dim)
                return prob

            def v(self, x):
                x = F.relu(self.fc1(x))
                v = self.fc_v(x)
                return v

            def put_data(self, transition):
                self.data.append(transition)

            def make_batch(self):
                s_lst, a_lst, r_lst, s_prime_lst, prob_a_lst, done_lst = [], [], [], [], [], []
                for item in self.data:
                    s, a, r, s_prime, prob_a, done = item

                    s_lst.append(s)
                    a_lst.append([a])
                    r_lst.append([r])
                    s_prime_lst.append(s_prime)
                    prob_a_lst.append([prob_a])
                    done_mask = 0 if done else 1
                    done_lst.append([done_mask])

                s, a, r, s_prime, done_mask, prob_a = torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst), \
                    torch.tensor(r_lst), torch.tensor(s_prime_lst, dtype=torch.float), \
                    torch.tensor(done_lst, dtype=torch.float), torch.tensor(prob_a_lst)
                self.data = []
                return s, a, r, s_prime, done_mask, prob_a

            def train(self):
                s, a, r, s_prime, done_mask, prob_a = self.make_batch()

                for i in range(self.K):
                    td_target = r + self.gamma * self.v(s_prime) * done_mask
                    delta = td_target - self.v(s)
                    delta = delta.detach().numpy()

                    advantage_lst = []
                    advantage = 0
                    for delta_t in delta[::-1]:
                        advantage = self.gamma * self.lmbda * advantage + delta_t[0]
                        advantage_lst.append([advantage])
                    advantage_lst.reverse()
                    advantage = torch.tensor(advantage_lst, dtype=torch.float)

                    pi = self.pi(s, softmax_dim=1)
                    pi_a = pi.gather(1, a)
                    ratio = torch.exp(torch.log(pi_a) - torch.log(prob_a))

                    surr1 = ratio * advantage
                    surr2 = torch.clamp(ratio, 1 - self.eps, 1 + self.eps) * advantage
                    loss = -torch.min(surr1, surr2) + F.smooth_l1_loss(td_target.detach(), self.v(s))

                    self.optimizer.zero_grad()
                    loss.mean().backward()
                    self.optimizer.step()
                    log("loss", loss)

        rs = np.random.RandomState(3)
        env = _Env(n=5, seed=4)
        model = PPO()
        T = 3
        score = 0.0
        print_interval = 1

        for n_epi in range(2):
            s = env.reset()
            done = False
            while not done:
                for t in range(T):
                    prob = model.pi(torch.from_numpy(s).float())
                    m = Categorical(prob)
                    a = _draw_cat(prob, rs)
                    log("logp", m.log_prob(torch.tensor(a)))
                    s_prime, r, done, info = env.step(a)
                    model.put_data((s, a, r / 100.0, s_prime, prob[a].item(), done))
                    s = s_prime

                    score += r
                    if done:
                        break

                model.train()

            if n_epi % print_interval == 0:
                print("# of episode :{}, avg score : {:.1f}".format(n_epi, score / print_interval))
                score = 0.0
        log("fc_pi", model.fc_pi.weight)
        log("state", model.optimizer.state_dict()["state"][0]["exp_avg_sq"])

    run_both(program)


# seungeunrho/minimalRL ddpg.py (MuNet/QNet, OrnsteinUhlenbeckNoise over np.random.normal,
# the replay buffer of numpy-float actions, the critic and actor updates, soft_update through
# ``param_target.data.copy_``); widths 128/64/32 -> 8, batch 32 -> 4, training after 2000 -> 6
# transitions, Pendulum-v0 -> a 4-step seeded stand-in with a 3-float observation
def test_minimalrl_ddpg():
    def program(torch, log):
        import collections
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        lr_mu = 0.0005
        lr_q = 0.001
        gamma = 0.99
        batch_size = 4
        buffer_limit = 50000
        tau = 0.005

        class ReplayBuffer():
            def __init__(self):
                self.buffer = collections.deque(maxlen=buffer_limit)

            def put(self, transition):
                self.buffer.append(transition)

            def sample(self, n):
                mini_batch = random.sample(self.buffer, n)
                s_lst, a_lst, r_lst, s_prime_lst, done_mask_lst = [], [], [], [], []

                for transition in mini_batch:
                    s, a, r, s_prime, done = transition
                    s_lst.append(s)
                    a_lst.append([a])
                    r_lst.append([r])
                    s_prime_lst.append(s_prime)
                    done_mask = 0.0 if done else 1.0
                    done_mask_lst.append([done_mask])

                return torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst, dtype=torch.float), \
                    torch.tensor(r_lst, dtype=torch.float), torch.tensor(s_prime_lst, dtype=torch.float), \
                    torch.tensor(done_mask_lst, dtype=torch.float)

            def size(self):
                return len(self.buffer)

        class MuNet(nn.Module):
            def __init__(self):
                super(MuNet, self).__init__()
                self.fc1 = nn.Linear(3, 8)
                self.fc2 = nn.Linear(8, 8)
                self.fc_mu = nn.Linear(8, 1)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                mu = torch.tanh(self.fc_mu(x)) * 2
                return mu

        class QNet(nn.Module):
            def __init__(self):
                super(QNet, self).__init__()
                self.fc_s = nn.Linear(3, 8)
                self.fc_a = nn.Linear(1, 8)
                self.fc_q = nn.Linear(16, 8)
                self.fc_out = nn.Linear(8, 1)

            def forward(self, x, a):
                h1 = F.relu(self.fc_s(x))
                h2 = F.relu(self.fc_a(a))
                cat = torch.cat([h1, h2], dim=1)
                q = F.relu(self.fc_q(cat))
                q = self.fc_out(q)
                return q

        class OrnsteinUhlenbeckNoise:
            def __init__(self, mu):
                self.theta, self.dt, self.sigma = 0.1, 0.01, 0.1
                self.mu = mu
                self.x_prev = np.zeros_like(self.mu)

            def __call__(self):
                x = self.x_prev + self.theta * (self.mu - self.x_prev) * self.dt + \
                    self.sigma * np.sqrt(self.dt) * np.random.normal(size=self.mu.shape)
                self.x_prev = x
                return x

        def train(mu, mu_target, q, q_target, memory, q_optimizer, mu_optimizer):
            s, a, r, s_prime, done_mask = memory.sample(batch_size)

            target = r + gamma * q_target(s_prime, mu_target(s_prime)) * done_mask
            q_loss = F.smooth_l1_loss(q(s, a), target.detach())
            q_optimizer.zero_grad()
            q_loss.backward()
            q_optimizer.step()

            mu_loss = -q(s, mu(s)).mean()
            mu_optimizer.zero_grad()
            mu_loss.backward()
            mu_optimizer.step()
            log("losses", [q_loss, mu_loss])

        def soft_update(net, net_target):
            for param_target, param in zip(net_target.parameters(), net.parameters()):
                param_target.data.copy_(param_target.data * (1.0 - tau) + param.data * tau)

        with _seeded(0):
            env = _Env(obs_dim=3, n=4, seed=5)
            memory = ReplayBuffer()

            q, q_target = init_params(torch, QNet(), 6), QNet()
            q_target.load_state_dict(q.state_dict())
            mu, mu_target = init_params(torch, MuNet(), 7), MuNet()
            mu_target.load_state_dict(mu.state_dict())

            score = 0.0
            print_interval = 2

            mu_optimizer = optim.Adam(mu.parameters(), lr=lr_mu)
            q_optimizer = optim.Adam(q.parameters(), lr=lr_q)
            ou_noise = OrnsteinUhlenbeckNoise(mu=np.zeros(1))

            for n_epi in range(3):
                s = env.reset()
                done = False

                while not done:
                    a = mu(torch.from_numpy(s).float())
                    a = a.item() + ou_noise()[0]
                    s_prime, r, done, info = env.step([a])
                    memory.put((s, a, r / 100.0, s_prime, done))
                    score += r
                    s = s_prime

                if memory.size() > 6:
                    for i in range(2):
                        train(mu, mu_target, q, q_target, memory, q_optimizer, mu_optimizer)
                        soft_update(mu, mu_target)
                        soft_update(q, q_target)

                if n_epi % print_interval == 0 and n_epi != 0:
                    print("# of episode :{}, avg score : {:.1f}".format(n_epi, score / print_interval))
                    score = 0.0
        log("mu_target", list(mu_target.parameters()))
        log("q_target", q_target.fc_out.weight)

    run_both(program)


# seungeunrho/minimalRL sac.py (an Actor returning a Normal, V/Q critics, the target critic
# made with ``copy.copy`` (a shallow copy: it shares the critic's parameters, so the soft update
# writes the critic onto itself), three Adams built in the module's __init__, the tanh-squashed
# log-prob with ``torch.log(1 - action.pow(2) + epsilon)``); widths 64 -> 8, batch 128 -> 4,
# ``dist.sample()`` -> ``_draw`` (a seeded ``mean + stddev * eps``), Pendulum -> a 4-step
# seeded stand-in, training after 2000 -> 4 transitions, the per-step print dropped. As
# written, train_net fails in torch >= 1.5: ``loss_pi.backward()`` needs the Q weights that
# ``q_optimizer.step()`` has just updated in place; the driver logs that RuntimeError (the
# critic's update before it stands) and carries on
def test_minimalrl_sac():
    def program(torch, log):
        import collections
        import copy
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        rs = np.random.RandomState(8)

        class ReplayBuffer():
            def __init__(self):
                self.buffer = collections.deque(maxlen=buffer_limit)

            def put(self, transition):
                self.buffer.append(transition)

            def sample(self, n):
                mini_batch = random.sample(self.buffer, n)
                s_lst, a_lst, r_lst, s_prime_lst, done_mask_lst = [], [], [], [], []

                for transition in mini_batch:
                    s, a, r, s_prime, done_mask = transition
                    s_lst.append(s)
                    a_lst.append([a])
                    r_lst.append([r])
                    s_prime_lst.append(s_prime)
                    done_mask_lst.append([done_mask])

                return torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst, dtype=torch.float), \
                    torch.tensor(r_lst, dtype=torch.float), torch.tensor(s_prime_lst, dtype=torch.float), \
                    torch.tensor(done_mask_lst, dtype=torch.float)

            def size(self):
                return len(self.buffer)

        class Actor(nn.Module):
            def __init__(self, min_log_std=-20, max_log_std=2):
                super(Actor, self).__init__()
                self.min_log_std = min_log_std
                self.max_log_std = max_log_std
                self.layer_1 = nn.Linear(3, 8)
                self.layer_2 = nn.Linear(8, 8)
                self.mu = nn.Linear(8, 1)
                self.sigma = nn.Linear(8, 1)

            def forward(self, x):
                x = F.relu(self.layer_1(x))
                x = F.relu(self.layer_2(x))
                mu = self.mu(x)
                sigma = torch.exp(torch.clamp(self.sigma(x), self.min_log_std, self.max_log_std))
                dist = torch.distributions.normal.Normal(mu, sigma)
                return dist, mu, sigma

        class Critic(nn.Module):
            def __init__(self):
                super(Critic, self).__init__()
                self.critic_1 = nn.Linear(3, 8)
                self.critic_2 = nn.Linear(8, 8)
                self.critic_3 = nn.Linear(8, 1)

            def forward(self, x):
                x = F.relu(self.critic_1(x))
                x = F.relu(self.critic_2(x))
                x = (self.critic_3(x))
                return x

        class Q(nn.Module):
            def __init__(self):
                super(Q, self).__init__()
                self.fc1 = nn.Linear(4, 8)
                self.fc2 = nn.Linear(8, 8)
                self.fc3 = nn.Linear(8, 1)

            def forward(self, s, a):
                x = torch.cat((s, a), -1)
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                x = self.fc3(x)
                return x

        class SAC(nn.Module):
            def __init__(self):
                super(SAC, self).__init__()

                self.actor = Actor()
                self.critic = Critic()
                self.target_critic = copy.copy(self.critic)
                self.q_1 = Q()
                self.q_2 = Q()
                init_params(torch, self, 9)

                self.actor_optimizer = optim.Adam(self.actor.parameters(), lr=actor_lr)
                self.critic_optimizer = optim.Adam(self.critic.parameters(), lr=critic_lr)
                self.q_optimizer = optim.Adam(list(self.q_1.parameters()) + list(self.q_2.parameters()), lr=q_lr)

            def pi(self, x):
                action = _draw(torch, self.actor(x)[0], rs)
                action = torch.tanh(action)
                return action

            def train_net(self):
                s, a, r, s_prime, done_mask = memory.sample(batch_size)

                dist, mu, sigma = self.actor(s)
                sample = _draw(torch, dist, rs)
                action = torch.tanh(sample)
                log_prob = dist.log_prob(sample) - torch.log(1 - action.pow(2) + epsilon)

                q_theta = torch.min(self.q_1(s, action), self.q_2(s, action))

                loss_v = ((self.critic(s) - (q_theta - log_prob).detach()) ** 2).mean()
                self.critic_optimizer.zero_grad()
                loss_v.backward()
                self.critic_optimizer.step()

                loss_q_1 = (self.q_1(s, a) - (r + done_mask * lambd * self.target_critic(s_prime).detach())) ** 2
                loss_q_2 = (self.q_2(s, a) - (r + done_mask * lambd * self.target_critic(s_prime).detach())) ** 2

                loss_q = (loss_q_1 + loss_q_2).mean()

                self.q_optimizer.zero_grad()
                loss_q.backward()
                self.q_optimizer.step()

                loss_pi = (log_prob - q_theta).mean()

                self.actor_optimizer.zero_grad()
                loss_pi.backward()
                self.actor_optimizer.step()
                for param, target_param in zip(self.critic.parameters(), self.target_critic.parameters()):
                    target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
                log("losses", [loss_v, loss_q, loss_pi])

        actor_lr = 3e-4
        critic_lr = 3e-4
        q_lr = 3e-4
        epsilon = torch.tensor(1e-7).float()
        lambd = 0.99
        batch_size = 4
        tau = 0.005
        buffer_limit = int(1e+6)

        with _seeded(0):
            env = _Env(obs_dim=3, n=4, seed=10)
            model = SAC()
            memory = ReplayBuffer()
            log("shared", model.target_critic.critic_1.weight is model.critic.critic_1.weight)
            print_interval = 2
            score = 0.0
            for n_epi in range(3):
                s = env.reset()
                done = False
                while not done:
                    a = model.pi(torch.from_numpy(s).float()).item()
                    s_prime, r, done, info = env.step([a * 2])
                    memory.put((s, a, r / 100.0, s_prime, False))
                    s = s_prime
                    score += r
                    if done:
                        break
                if memory.size() > 4:
                    try:
                        model.train_net()
                    except RuntimeError as e:
                        log("train_net", [type(e), "modified by an inplace operation" in str(e)])
                if n_epi % print_interval == 0 and n_epi != 0:
                    print("# of episode :{}, avg score : {:.1f}".format(n_epi, score / print_interval))
                    score = 0.0
        log("critic", model.critic.critic_3.weight)
        log("actor", model.actor.sigma.weight)

    run_both(program)


# seungeunrho/minimalRL acer.py (sequences in a replay buffer, the on- and off-policy train
# calls, importance weights ``pi.detach()/prob`` with ``clamp(max=c)``/``clamp(min=0)``, the
# Retrace target built backwards with ``.item()`` and ``is_first`` resets, the bias correction
# term); fc width 256 -> 8, rollout_len 10 -> 3, batch 4 -> 2, training after 500 -> 1
# sequences, ``Categorical(prob).sample()`` -> ``_draw_cat``, a 5-step seeded stand-in
def test_minimalrl_acer():
    def program(torch, log):
        import collections
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        learning_rate = 0.0002
        gamma = 0.98
        buffer_limit = 6000
        rollout_len = 3
        batch_size = 2
        c = 1.0

        class ReplayBuffer():
            def __init__(self):
                self.buffer = collections.deque(maxlen=buffer_limit)

            def put(self, seq_data):
                self.buffer.append(seq_data)

            def sample(self, on_policy=False):
                if on_policy:
                    mini_batch = [self.buffer[-1]]
                else:
                    mini_batch = random.sample(self.buffer, batch_size)

                s_lst, a_lst, r_lst, prob_lst, done_lst, is_first_lst = [], [], [], [], [], []
                for seq in mini_batch:
                    is_first = True
                    for transition in seq:
                        s, a, r, prob, done = transition

                        s_lst.append(s)
                        a_lst.append([a])
                        r_lst.append(r)
                        prob_lst.append(prob)
                        done_mask = 0.0 if done else 1.0
                        done_lst.append(done_mask)
                        is_first_lst.append(is_first)
                        is_first = False

                s, a, r, prob, done_mask, is_first = torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst), \
                    r_lst, torch.tensor(prob_lst, dtype=torch.float), done_lst, \
                    is_first_lst
                return s, a, r, prob, done_mask, is_first

            def size(self):
                return len(self.buffer)

        class ActorCritic(nn.Module):
            def __init__(self):
                super(ActorCritic, self).__init__()
                self.fc1 = nn.Linear(4, 8)
                self.fc_pi = nn.Linear(8, 2)
                self.fc_q = nn.Linear(8, 2)

            def pi(self, x, softmax_dim=0):
                x = F.relu(self.fc1(x))
                x = self.fc_pi(x)
                pi = F.softmax(x, dim=softmax_dim)
                return pi

            def q(self, x):
                x = F.relu(self.fc1(x))
                q = self.fc_q(x)
                return q

        def train(model, optimizer, memory, on_policy=False):
            s, a, r, prob, done_mask, is_first = memory.sample(on_policy)

            q = model.q(s)
            q_a = q.gather(1, a)
            pi = model.pi(s, softmax_dim=1)
            pi_a = pi.gather(1, a)
            v = (q * pi).sum(1).unsqueeze(1).detach()

            rho = pi.detach() / prob
            rho_a = rho.gather(1, a)
            rho_bar = rho_a.clamp(max=c)
            correction_coeff = (1 - c / rho).clamp(min=0)

            q_ret = v[-1] * done_mask[-1]
            q_ret_lst = []
            for i in reversed(range(len(r))):
                q_ret = r[i] + gamma * q_ret
                q_ret_lst.append(q_ret.item())
                q_ret = rho_bar[i] * (q_ret - q_a[i]) + v[i]

                if is_first[i] and i != 0:
                    q_ret = v[i - 1] * done_mask[i - 1]

            q_ret_lst.reverse()
            q_ret = torch.tensor(q_ret_lst, dtype=torch.float).unsqueeze(1)

            loss1 = -rho_bar * torch.log(pi_a) * (q_ret - v)
            loss2 = -correction_coeff * pi.detach() * torch.log(pi) * (q.detach() - v)
            loss = loss1 + loss2.sum(1) + F.smooth_l1_loss(q_a, q_ret)

            optimizer.zero_grad()
            loss.mean().backward()
            optimizer.step()
            log("loss", loss)

        with _seeded(0):
            rs = np.random.RandomState(11)
            env = _Env(n=5, seed=12)
            memory = ReplayBuffer()
            model = init_params(torch, ActorCritic(), 13)
            optimizer = optim.Adam(model.parameters(), lr=learning_rate)

            score = 0.0
            print_interval = 1

            for n_epi in range(2):
                s = env.reset()
                done = False

                while not done:
                    seq_data = []
                    for t in range(rollout_len):
                        prob = model.pi(torch.from_numpy(s).float())
                        a = _draw_cat(prob, rs)
                        s_prime, r, done, info = env.step(a)
                        seq_data.append((s, a, r / 100.0, prob.detach().numpy(), done))

                        score += r
                        s = s_prime
                        if done:
                            break

                    memory.put(seq_data)
                    if memory.size() > 1:
                        train(model, optimizer, memory, on_policy=True)
                        train(model, optimizer, memory)

                if n_epi % print_interval == 0 and n_epi != 0:
                    print("# of episode :{}, avg score : {:.1f}, buffer size : {}".format(
                        n_epi, score / print_interval, memory.size()))
                    score = 0.0
        log("fc_q", model.fc_q.weight)

    run_both(program)


# openai/spinningup spinup/algos/pytorch/sac/core.py (mlp with nn.Identity, combined_shape,
# count_vars, SquashedGaussianMLPActor's Normal log_prob with the softplus tanh correction,
# MLPQFunction's squeeze, MLPActorCritic) and sac/sac.py (ReplayBuffer over numpy arrays with
# np.random.randint and torch.as_tensor, compute_loss_q/compute_loss_pi, update's polyak
# averaging with mul_/add_ under no_grad, the target as a deepcopy with requires_grad False,
# q_params as an itertools.chain); hidden (256, 256) -> (8, 8), batch 100 -> 4, gym's Box ->
# a stand-in with shape/high, ``pi_distribution.rsample()`` -> the ``deterministic=True`` path
# (the program's own switch), buffer filled from a seeded numpy stream
def test_spinningup_sac():
    def program(torch, log):
        import itertools
        from copy import deepcopy
        nn, F = torch.nn, torch.nn.functional
        from types import SimpleNamespace
        Normal = torch.distributions.normal.Normal

        def combined_shape(length, shape=None):
            if shape is None:
                return (length,)
            return (length, shape) if np.isscalar(shape) else (length, *shape)

        def mlp(sizes, activation, output_activation=nn.Identity):
            layers = []
            for j in range(len(sizes) - 1):
                act = activation if j < len(sizes) - 2 else output_activation
                layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
            return nn.Sequential(*layers)

        def count_vars(module):
            return sum([np.prod(p.shape) for p in module.parameters()])

        LOG_STD_MAX = 2
        LOG_STD_MIN = -20

        class SquashedGaussianMLPActor(nn.Module):
            def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
                super().__init__()
                self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
                self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
                self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
                self.act_limit = act_limit

            def forward(self, obs, deterministic=False, with_logprob=True):
                net_out = self.net(obs)
                mu = self.mu_layer(net_out)
                log_std = self.log_std_layer(net_out)
                log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
                std = torch.exp(log_std)

                pi_distribution = Normal(mu, std)
                if deterministic:
                    pi_action = mu
                else:
                    pi_action = pi_distribution.rsample()

                if with_logprob:
                    logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
                    logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
                else:
                    logp_pi = None

                pi_action = torch.tanh(pi_action)
                pi_action = self.act_limit * pi_action

                return pi_action, logp_pi

        class MLPQFunction(nn.Module):
            def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
                super().__init__()
                self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

            def forward(self, obs, act):
                q = self.q(torch.cat([obs, act], dim=-1))
                return torch.squeeze(q, -1)

        class MLPActorCritic(nn.Module):
            def __init__(self, observation_space, action_space, hidden_sizes=(8, 8),
                         activation=nn.ReLU):
                super().__init__()

                obs_dim = observation_space.shape[0]
                act_dim = action_space.shape[0]
                act_limit = action_space.high[0]

                self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation, act_limit)
                self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
                self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

            def act(self, obs, deterministic=False):
                with torch.no_grad():
                    a, _ = self.pi(obs, deterministic, False)
                    return a.numpy()

        class ReplayBuffer:
            def __init__(self, obs_dim, act_dim, size):
                self.obs_buf = np.zeros(combined_shape(size, obs_dim), dtype=np.float32)
                self.obs2_buf = np.zeros(combined_shape(size, obs_dim), dtype=np.float32)
                self.act_buf = np.zeros(combined_shape(size, act_dim), dtype=np.float32)
                self.rew_buf = np.zeros(size, dtype=np.float32)
                self.done_buf = np.zeros(size, dtype=np.float32)
                self.ptr, self.size, self.max_size = 0, 0, size

            def store(self, obs, act, rew, next_obs, done):
                self.obs_buf[self.ptr] = obs
                self.obs2_buf[self.ptr] = next_obs
                self.act_buf[self.ptr] = act
                self.rew_buf[self.ptr] = rew
                self.done_buf[self.ptr] = done
                self.ptr = (self.ptr + 1) % self.max_size
                self.size = min(self.size + 1, self.max_size)

            def sample_batch(self, batch_size=32):
                idxs = np.random.randint(0, self.size, size=batch_size)
                batch = dict(obs=self.obs_buf[idxs],
                             obs2=self.obs2_buf[idxs],
                             act=self.act_buf[idxs],
                             rew=self.rew_buf[idxs],
                             done=self.done_buf[idxs])
                return {k: torch.as_tensor(v, dtype=torch.float32) for k, v in batch.items()}

        gamma, polyak, lr, alpha = 0.99, 0.995, 1e-3, 0.2
        obs_space = SimpleNamespace(shape=(3,))
        act_space = SimpleNamespace(shape=(2,), high=np.array([2.0, 2.0], dtype=np.float32))
        ac = init_params(torch, MLPActorCritic(obs_space, act_space), 14)
        ac_targ = deepcopy(ac)
        for p in ac_targ.parameters():
            p.requires_grad = False
        q_params = itertools.chain(ac.q1.parameters(), ac.q2.parameters())
        var_counts = tuple(count_vars(module) for module in [ac.pi, ac.q1, ac.q2])
        print('\nNumber of parameters: \t pi: %d, \t q1: %d, \t q2: %d\n' % var_counts)

        def compute_loss_q(data):
            o, a, r, o2, d = data['obs'], data['act'], data['rew'], data['obs2'], data['done']
            q1 = ac.q1(o, a)
            q2 = ac.q2(o, a)
            with torch.no_grad():
                a2, logp_a2 = ac.pi(o2, deterministic=True)
                q1_pi_targ = ac_targ.q1(o2, a2)
                q2_pi_targ = ac_targ.q2(o2, a2)
                q_pi_targ = torch.min(q1_pi_targ, q2_pi_targ)
                backup = r + gamma * (1 - d) * (q_pi_targ - alpha * logp_a2)
            loss_q1 = ((q1 - backup) ** 2).mean()
            loss_q2 = ((q2 - backup) ** 2).mean()
            loss_q = loss_q1 + loss_q2
            q_info = dict(Q1Vals=q1.detach().numpy(), Q2Vals=q2.detach().numpy())
            return loss_q, q_info

        def compute_loss_pi(data):
            o = data['obs']
            pi, logp_pi = ac.pi(o, deterministic=True)
            q1_pi = ac.q1(o, pi)
            q2_pi = ac.q2(o, pi)
            q_pi = torch.min(q1_pi, q2_pi)
            loss_pi = (alpha * logp_pi - q_pi).mean()
            pi_info = dict(LogPi=logp_pi.detach().numpy())
            return loss_pi, pi_info

        pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=lr)
        q_optimizer = torch.optim.Adam(q_params, lr=lr)

        def update(data):
            q_optimizer.zero_grad()
            loss_q, q_info = compute_loss_q(data)
            loss_q.backward()
            q_optimizer.step()
            for p in q_params:
                p.requires_grad = False
            pi_optimizer.zero_grad()
            loss_pi, pi_info = compute_loss_pi(data)
            loss_pi.backward()
            pi_optimizer.step()
            for p in q_params:
                p.requires_grad = True
            with torch.no_grad():
                for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                    p_targ.data.mul_(polyak)
                    p_targ.data.add_((1 - polyak) * p.data)
            log("losses", [loss_q, loss_pi, q_info["Q1Vals"], pi_info["LogPi"]])

        with _seeded(0):
            replay_buffer = ReplayBuffer(obs_dim=3, act_dim=2, size=16)
            o = np.random.randn(3).astype(np.float32)
            for t in range(6):
                a = ac.act(torch.as_tensor(o, dtype=torch.float32), deterministic=True)
                o2 = np.random.randn(3).astype(np.float32)
                replay_buffer.store(o, a, -float(np.sum(a ** 2)), o2, float(t == 5))
                o = o2
            for j in range(2):
                batch = replay_buffer.sample_batch(4)
                update(data=batch)
        log("targ", ac_targ.q1.q[0].weight)
        log("grad", ac.q1.q[2].weight.grad)

    run_both(program)


# denisyarats/pytorch_sac agent/actor.py (a user-written ``pyd.transforms.Transform`` subclass
# with domain/codomain constraints, ``cache_size=1`` and log_abs_det_jacobian through softplus,
# SquashedNormal as a ``TransformedDistribution`` with its own ``mean``, DiagGaussianActor's
# chunk/tanh log-std bounds, ``self.apply(utils.weight_init)``) with utils.py's mlp and
# weight_init (orthogonal_ then numpy parameters); hidden 1024 -> 8; the agent's
# ``dist.rsample()`` -> fixed actions inside (-1, 1), the actor loss from log_prob
def test_pytorch_sac_squashed_normal():
    def program(torch, log):
        import math
        nn, F = torch.nn, torch.nn.functional
        pyd = torch.distributions

        def weight_init(m):
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight.data)
                if hasattr(m.bias, 'data'):
                    m.bias.data.fill_(0.0)

        def mlp(input_dim, hidden_dim, output_dim, hidden_depth, output_mod=None):
            if hidden_depth == 0:
                mods = [nn.Linear(input_dim, output_dim)]
            else:
                mods = [nn.Linear(input_dim, hidden_dim), nn.ReLU(inplace=True)]
                for i in range(hidden_depth - 1):
                    mods += [nn.Linear(hidden_dim, hidden_dim), nn.ReLU(inplace=True)]
                mods.append(nn.Linear(hidden_dim, output_dim))
            if output_mod is not None:
                mods.append(output_mod)
            trunk = nn.Sequential(*mods)
            return trunk

        class TanhTransform(pyd.transforms.Transform):
            domain = pyd.constraints.real
            codomain = pyd.constraints.interval(-1.0, 1.0)
            bijective = True
            sign = +1

            def __init__(self, cache_size=1):
                super().__init__(cache_size=cache_size)

            @staticmethod
            def atanh(x):
                return 0.5 * (x.log1p() - (-x).log1p())

            def __eq__(self, other):
                return isinstance(other, TanhTransform)

            def _call(self, x):
                return x.tanh()

            def _inverse(self, y):
                return self.atanh(y)

            def log_abs_det_jacobian(self, x, y):
                return 2. * (math.log(2.) - x - F.softplus(-2. * x))

        class SquashedNormal(pyd.transformed_distribution.TransformedDistribution):
            def __init__(self, loc, scale):
                self.loc = loc
                self.scale = scale

                self.base_dist = pyd.Normal(loc, scale)
                transforms = [TanhTransform()]
                super().__init__(self.base_dist, transforms)

            @property
            def mean(self):
                mu = self.loc
                for tr in self.transforms:
                    mu = tr(mu)
                return mu

        class DiagGaussianActor(nn.Module):
            def __init__(self, obs_dim, action_dim, hidden_dim, hidden_depth,
                         log_std_bounds):
                super().__init__()

                self.log_std_bounds = log_std_bounds
                self.trunk = mlp(obs_dim, hidden_dim, 2 * action_dim,
                                 hidden_depth)

                self.outputs = dict()
                self.apply(weight_init)

            def forward(self, obs):
                mu, log_std = self.trunk(obs).chunk(2, dim=-1)

                log_std = torch.tanh(log_std)
                log_std_min, log_std_max = self.log_std_bounds
                log_std = log_std_min + 0.5 * (log_std_max - log_std_min) * (log_std +
                                                                             1)

                std = log_std.exp()

                self.outputs['mu'] = mu
                self.outputs['std'] = std

                dist = SquashedNormal(mu, std)
                return dist

        actor = DiagGaussianActor(3, 2, 8, 2, [-5, 2])
        log("bias_zero", [float(m.bias.abs().sum()) for m in actor.trunk if type(m) == nn.Linear])
        init_params(torch, actor, 15)
        opt = torch.optim.Adam(actor.parameters(), lr=1e-2)
        obs = randn(torch, (4, 3), 16)
        action = torch.tensor(np.random.RandomState(17).uniform(-0.9, 0.9, (4, 2)).astype(np.float32))
        for step in range(2):
            dist = actor(obs)
            log("mean", dist.mean)
            log("base", [dist.base_dist.loc, dist.base_dist.stddev])
            log_prob = dist.log_prob(action).sum(-1, keepdim=True)
            log("log_prob", log_prob)
            y = dist.transforms[0](dist.loc)
            log("inverse", dist.transforms[0].inv(y))
            actor_loss = (0.1 * log_prob - action.sum(-1, keepdim=True)).mean()
            opt.zero_grad()
            actor_loss.backward()
            log("grad", actor.trunk[0].weight.grad)
            opt.step()
        log("std", actor.outputs['std'])
        log("support", [dist.support.check(torch.tensor([0.5, 1.5])), dist.transforms[0].sign])

    run_both(program)


# lucidrains/slot-attention slot_attention/slot_attention.py (Residual/PreNorm wrappers,
# SlotAttention's einsum attention with softmax over the slots, the GRU update over
# ``reshape(1, -1, d)`` and the residual MLP with ReLU(inplace=True)); dim 8, 3 slots, 3
# iterations, hidden_dim 128 -> 8; ``torch.normal(mu, sigma)`` -> ``mu + sigma * noise`` (the
# same numbers; torch.normal also rejects the negative sigmas numpy parameters give), trained
# two Adam steps on a reconstruction-style loss
def test_lucidrains_slot_attention():
    def program(torch, log):
        nn = torch.nn

        class Residual(nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fn = fn

            def forward(self, x):
                return x + self.fn(x)

        class PreNorm(nn.Module):
            def __init__(self, dim, fn):
                super().__init__()
                self.fn = fn
                self.norm = nn.LayerNorm(dim)

            def forward(self, x):
                x = self.norm(x)
                return self.fn(x)

        class SlotAttention(nn.Module):
            def __init__(self, num_slots, dim, iters=3, eps=1e-8, hidden_dim=128):
                super().__init__()
                self.num_slots = num_slots
                self.iters = iters
                self.eps = eps
                self.scale = dim ** -0.5

                self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
                self.slots_sigma = nn.Parameter(torch.randn(1, 1, dim))

                self.to_q = nn.Linear(dim, dim, bias=False)
                self.to_k = nn.Linear(dim, dim, bias=False)
                self.to_v = nn.Linear(dim, dim, bias=False)

                self.gru = nn.GRU(dim, dim)

                hidden_dim = max(dim, hidden_dim)

                self.mlp = Residual(PreNorm(dim, nn.Sequential(
                    nn.Linear(dim, hidden_dim),
                    nn.ReLU(inplace=True),
                    nn.Linear(hidden_dim, dim)
                )))

                self.norm_input = nn.LayerNorm(dim)
                self.norm_slots = nn.LayerNorm(dim)

            def forward(self, inputs):
                b, n, d, n_s = *inputs.shape, self.num_slots

                mu = self.slots_mu.expand(b, n_s, -1)
                sigma = self.slots_sigma.expand(b, n_s, -1)
                slots = mu + sigma * noise

                slots_shape = slots.shape

                inputs = self.norm_input(inputs)
                k, v = self.to_k(inputs), self.to_v(inputs)

                for _ in range(self.iters):
                    slots_prev = slots

                    slots = self.norm_slots(slots)
                    q = self.to_q(slots)

                    dots = torch.einsum('bid,bjd->bij', q, k) * self.scale
                    attn = dots.softmax(dim=1) + self.eps
                    attn = attn / attn.sum(dim=-1, keepdim=True)

                    updates = torch.einsum('bjd,bij->bid', v, attn)

                    slots, _ = self.gru(
                        updates.reshape(1, -1, d),
                        slots_prev.reshape(1, -1, d)
                    )

                    slots = slots.reshape(b, -1, d)
                    slots = self.mlp(slots)

                return slots

        noise = randn(torch, (2, 3, 8), 18)
        slot_attn = init_params(torch, SlotAttention(num_slots=3, dim=8, iters=3, hidden_dim=8), 19)
        inputs = randn(torch, (2, 5, 8), 20)
        opt = torch.optim.Adam(slot_attn.parameters(), lr=1e-2)
        for step in range(2):
            slots = slot_attn(inputs)
            loss = (slots.mean(1) - inputs.mean(1)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("loss", loss)
            log("slots", slots)
        log("sigma_grad", slot_attn.slots_sigma.grad)
        log("gru", slot_attn.gru.weight_hh_l0)

    run_both(program)


# lucidrains/adam-atan2-pytorch adam_atan2_pytorch/adam_atan2.py (an ``Optimizer`` subclass:
# ``@torch.no_grad()`` step with an ``enable_grad`` closure, decoupled weight decay through
# ``p.mul_``, state built with zeros_like, ``lerp_`` running averages and the
# ``mul_().sqrt_()`` / ``clone().mul_().atan2_()`` update, ``p.add_(update, alpha=...)``) as
# written, driving a small MLP regression with a closure for 3 steps, then a state_dict round trip
def test_lucidrains_adam_atan2():
    def program(torch, log):
        from typing import Tuple, Callable
        import importlib
        Optimizer = importlib.import_module(torch.__name__ + ".optim.optimizer").Optimizer
        nn = torch.nn

        def exists(val):
            return val is not None

        class AdamAtan2(Optimizer):
            def __init__(
                self,
                params,
                lr=1e-4,
                betas: Tuple[float, float] = (0.9, 0.99),
                weight_decay=0.,
                a=1.27,
                b=1.
            ):
                assert lr > 0.
                assert all([0. <= beta <= 1. for beta in betas])
                assert weight_decay >= 0.

                self._init_lr = lr

                defaults = dict(
                    lr=lr,
                    betas=betas,
                    a=a,
                    b=b,
                    weight_decay=weight_decay
                )

                super().__init__(params, defaults)

            @torch.no_grad()
            def step(
                self,
                closure: Callable | None = None
            ):

                loss = None
                if exists(closure):
                    with torch.enable_grad():
                        loss = closure()

                for group in self.param_groups:
                    for p in filter(lambda p: exists(p.grad), group['params']):

                        grad, lr, wd, beta1, beta2, a, b, state, init_lr = p.grad, group['lr'], group['weight_decay'], *group['betas'], group['a'], group['b'], self.state[p], self._init_lr

                        if wd > 0.:
                            p.mul_(1. - lr / init_lr * wd)

                        if len(state) == 0:
                            state['steps'] = 0
                            state['exp_avg'] = torch.zeros_like(grad)
                            state['exp_avg_sq'] = torch.zeros_like(grad)

                        exp_avg, exp_avg_sq, steps = state['exp_avg'], state['exp_avg_sq'], state['steps']

                        steps += 1

                        bias_correct1 = 1. - beta1 ** steps
                        bias_correct2 = 1. - beta2 ** steps

                        exp_avg.lerp_(grad, 1. - beta1)
                        exp_avg_sq.lerp_(grad * grad, 1. - beta2)

                        den = exp_avg_sq.mul_(b * b / bias_correct2).sqrt_()
                        update = exp_avg.clone().mul_(1. / bias_correct1).atan2_(den)

                        p.add_(update, alpha=-lr * a)

                        state['steps'] = steps

                return loss

        model = init_params(torch, nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1)), 21)
        x, y = randn(torch, (8, 4), 22), randn(torch, (8, 1), 23)
        opt = AdamAtan2(model.parameters(), lr=1e-2, weight_decay=0.1)

        def closure():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        for step in range(3):
            loss = opt.step(closure)
            log("loss", [loss, loss.requires_grad, torch.is_grad_enabled()])
        log("params", list(model.parameters()))
        sd = opt.state_dict()
        log("state", [sd["state"][0]["steps"], sd["state"][0]["exp_avg"], sd["state"][3]["exp_avg_sq"]])
        log("groups", [{k: v for k, v in g.items()} for g in sd["param_groups"]])
        opt2 = AdamAtan2(model.parameters(), lr=1e-2)
        opt2.load_state_dict(sd)
        opt2.step(closure)
        log("after_load", model[2].weight)

    run_both(program)


# lucidrains/byol-pytorch byol_pytorch/byol_pytorch.py (the singleton decorator, NetWrapper's
# register_forward_hook on ``children()[-2]`` keyed by ``input[0].device``, the lazily built
# projector moved with ``.to(hidden)``, the deepcopied target encoder with requires_grad False,
# EMA through ``ma_params.data = ...``, loss_fn over F.normalize, BatchNorm1d MLPs); a tiny
# conv net, 4x4 images, projection 256 -> 4 and hidden 4096 -> 6; torchvision's DEFAULT_AUG is
# not built (the test passes augment_fn/augment_fn2: identity and a horizontal flip), and the
# constructor's mock ``torch.randn(2, 3, image_size, image_size)`` is a fixed tensor (it moves
# BatchNorm's running stats); parameters from numpy after construction, 2 SGD steps (the
# README's Adam would turn the biases feeding BatchNorm, whose gradients are zero but for
# rounding, into +-lr steps along the rounding noise's sign)
def test_lucidrains_byol():
    def program(torch, log):
        import copy
        from functools import wraps
        nn, F = torch.nn, torch.nn.functional
        mock = randn(torch, (2, 3, 4, 4), 24)

        def default(val, def_val):
            return def_val if val is None else val

        def flatten(t):
            return t.reshape(t.shape[0], -1)

        def singleton(cache_key):
            def inner_fn(fn):
                @wraps(fn)
                def wrapper(self, *args, **kwargs):
                    instance = getattr(self, cache_key)
                    if instance is not None:
                        return instance

                    instance = fn(self, *args, **kwargs)
                    setattr(self, cache_key, instance)
                    return instance
                return wrapper
            return inner_fn

        def get_module_device(module):
            return next(module.parameters()).device

        def set_requires_grad(model, val):
            for p in model.parameters():
                p.requires_grad = val

        def loss_fn(x, y):
            x = F.normalize(x, dim=-1, p=2)
            y = F.normalize(y, dim=-1, p=2)
            return 2 - 2 * (x * y).sum(dim=-1)

        class EMA():
            def __init__(self, beta):
                super().__init__()
                self.beta = beta

            def update_average(self, old, new):
                if old is None:
                    return new
                return old * self.beta + (1 - self.beta) * new

        def update_moving_average(ema_updater, ma_model, current_model):
            for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
                old_weight, up_weight = ma_params.data, current_params.data
                ma_params.data = ema_updater.update_average(old_weight, up_weight)

        def MLP(dim, projection_size, hidden_size=4096):
            return nn.Sequential(
                nn.Linear(dim, hidden_size),
                nn.BatchNorm1d(hidden_size),
                nn.ReLU(inplace=True),
                nn.Linear(hidden_size, projection_size)
            )

        def SimSiamMLP(dim, projection_size, hidden_size=4096):
            return nn.Sequential(
                nn.Linear(dim, hidden_size, bias=False),
                nn.BatchNorm1d(hidden_size),
                nn.ReLU(inplace=True),
                nn.Linear(hidden_size, hidden_size, bias=False),
                nn.BatchNorm1d(hidden_size),
                nn.ReLU(inplace=True),
                nn.Linear(hidden_size, projection_size, bias=False),
                nn.BatchNorm1d(projection_size, affine=False)
            )

        class NetWrapper(nn.Module):
            def __init__(self, net, projection_size, projection_hidden_size, layer=-2, use_simsiam_mlp=False):
                super().__init__()
                self.net = net
                self.layer = layer

                self.projector = None
                self.projection_size = projection_size
                self.projection_hidden_size = projection_hidden_size

                self.use_simsiam_mlp = use_simsiam_mlp

                self.hidden = {}
                self.hook_registered = False

            def _find_layer(self):
                if type(self.layer) == str:
                    modules = dict([*self.net.named_modules()])
                    return modules.get(self.layer, None)
                elif type(self.layer) == int:
                    children = [*self.net.children()]
                    return children[self.layer]
                return None

            def _hook(self, _, input, output):
                device = input[0].device
                self.hidden[device] = flatten(output)

            def _register_hook(self):
                layer = self._find_layer()
                assert layer is not None, f'hidden layer ({self.layer}) not found'
                handle = layer.register_forward_hook(self._hook)
                self.hook_registered = True

            @singleton('projector')
            def _get_projector(self, hidden):
                _, dim = hidden.shape
                create_mlp_fn = MLP if not self.use_simsiam_mlp else SimSiamMLP
                projector = create_mlp_fn(dim, self.projection_size, self.projection_hidden_size)
                return projector.to(hidden)

            def get_representation(self, x):
                if self.layer == -1:
                    return self.net(x)

                if not self.hook_registered:
                    self._register_hook()

                self.hidden.clear()
                _ = self.net(x)
                hidden = self.hidden[x.device]
                self.hidden.clear()

                assert hidden is not None, f'hidden layer {self.layer} never emitted an output'
                return hidden

            def forward(self, x, return_projection=True):
                representation = self.get_representation(x)

                if not return_projection:
                    return representation

                projector = self._get_projector(representation)
                projection = projector(representation)
                return projection, representation

        class BYOL(nn.Module):
            def __init__(
                self,
                net,
                image_size,
                hidden_layer=-2,
                projection_size=256,
                projection_hidden_size=4096,
                augment_fn=None,
                augment_fn2=None,
                moving_average_decay=0.99,
                use_momentum=True
            ):
                super().__init__()
                self.net = net

                DEFAULT_AUG = None

                self.augment1 = default(augment_fn, DEFAULT_AUG)
                self.augment2 = default(augment_fn2, self.augment1)

                self.online_encoder = NetWrapper(net, projection_size, projection_hidden_size, layer=hidden_layer, use_simsiam_mlp=not use_momentum)

                self.use_momentum = use_momentum
                self.target_encoder = None
                self.target_ema_updater = EMA(moving_average_decay)

                self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)

                device = get_module_device(net)
                self.to(device)

                self.forward(mock.to(device))

            @singleton('target_encoder')
            def _get_target_encoder(self):
                target_encoder = copy.deepcopy(self.online_encoder)
                set_requires_grad(target_encoder, False)
                return target_encoder

            def reset_moving_average(self):
                del self.target_encoder
                self.target_encoder = None

            def update_moving_average(self):
                assert self.use_momentum, 'you do not need to update the moving average, since you have turned off momentum for the target encoder'
                assert self.target_encoder is not None, 'target encoder has not been created yet'
                update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

            def forward(
                self,
                x,
                return_embedding=False,
                return_projection=True,
                training=True
            ):
                assert not (training and x.shape[0] == 1), 'you must have greater than 1 sample when training, due to the batchnorm in the projection layer'

                if return_embedding:
                    return self.online_encoder(x, return_projection=return_projection)

                image_one, image_two = self.augment1(x), self.augment2(x)

                online_proj_one, _ = self.online_encoder(image_one)
                online_proj_two, _ = self.online_encoder(image_two)

                online_pred_one = self.online_predictor(online_proj_one)
                online_pred_two = self.online_predictor(online_proj_two)

                with torch.no_grad():
                    target_encoder = self._get_target_encoder() if self.use_momentum else self.online_encoder
                    target_proj_one, _ = target_encoder(image_one)
                    target_proj_two, _ = target_encoder(image_two)
                    target_proj_one.detach_()
                    target_proj_two.detach_()

                loss_one = loss_fn(online_pred_one, target_proj_two.detach())
                loss_two = loss_fn(online_pred_two, target_proj_one.detach())

                loss = loss_one + loss_two
                return loss.mean()

        net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                            nn.Flatten(), nn.Linear(4, 3))
        learner = BYOL(net, image_size=4, hidden_layer=-2, projection_size=4, projection_hidden_size=6,
                       augment_fn=lambda x: x, augment_fn2=lambda x: x.flip(-1))
        log("modules", [n for n, _ in learner.named_modules()])
        init_params(torch, learner, 25)
        for m in learner.modules():    # the mock forward ran with the default (random) init
            if isinstance(m, nn.BatchNorm1d):
                m.reset_running_stats()
        opt = torch.optim.SGD(learner.parameters(), lr=0.1)
        images = randn(torch, (4, 3, 4, 4), 26)
        for step in range(2):
            loss = learner(images)
            opt.zero_grad()
            loss.backward()
            opt.step()
            learner.update_moving_average()
            log("loss", loss)
        log("buffers", [b for _, b in learner.named_buffers()])
        log("target", list(learner.target_encoder.parameters()))
        log("requires_grad", [p.requires_grad for p in learner.target_encoder.parameters()])
        emb, rep = learner(images, return_embedding=True)
        log("embedding", [emb, rep])

    run_both(program)


# facebookresearch/simsiam simsiam/builder.py (SimSiam: the encoder's fc rebuilt as a 3-layer
# projector around the original fc whose bias has requires_grad False, BatchNorm1d(affine=
# False), the predictor, detached targets) with main_simsiam.py's criterion
# ``nn.CosineSimilarity(dim=1)``, fix_pred_lr param groups (``'fix_lr'`` keys), SGD with
# momentum/weight decay and adjust_learning_rate's cosine schedule; the torchvision ResNet-50
# base encoder -> a tiny conv encoder with the same ``(num_classes, zero_init_residual)``
# signature and ``fc``; dim 2048 -> 6, pred_dim 512 -> 3, 2 epochs of one batch of 4
def test_facebookresearch_simsiam():
    def program(torch, log):
        import math
        nn = torch.nn

        class SimSiam(nn.Module):
            def __init__(self, base_encoder, dim=2048, pred_dim=512):
                super(SimSiam, self).__init__()

                self.encoder = base_encoder(num_classes=dim, zero_init_residual=True)

                prev_dim = self.encoder.fc.weight.shape[1]
                self.encoder.fc.bias.requires_grad = False
                self.encoder.fc = nn.Sequential(nn.Linear(prev_dim, prev_dim, bias=False),
                                                nn.BatchNorm1d(prev_dim),
                                                nn.ReLU(inplace=True),
                                                nn.Linear(prev_dim, prev_dim, bias=False),
                                                nn.BatchNorm1d(prev_dim),
                                                nn.ReLU(inplace=True),
                                                self.encoder.fc,
                                                nn.BatchNorm1d(dim, affine=False))

                self.predictor = nn.Sequential(nn.Linear(dim, pred_dim, bias=False),
                                               nn.BatchNorm1d(pred_dim),
                                               nn.ReLU(inplace=True),
                                               nn.Linear(pred_dim, dim))

            def forward(self, x1, x2):
                z1 = self.encoder(x1)
                z2 = self.encoder(x2)

                p1 = self.predictor(z1)
                p2 = self.predictor(z2)

                return p1, p2, z1.detach(), z2.detach()

        class TinyEncoder(nn.Module):   # stands in for torchvision.models.resnet50
            def __init__(self, num_classes=1000, zero_init_residual=False):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(4)
                self.relu = nn.ReLU(inplace=True)
                self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
                self.fc = nn.Linear(4, num_classes)

            def forward(self, x):
                x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
                return self.fc(torch.flatten(x, 1))

        def adjust_learning_rate(optimizer, init_lr, epoch, epochs):
            cur_lr = init_lr * 0.5 * (1. + math.cos(math.pi * epoch / epochs))
            for param_group in optimizer.param_groups:
                if 'fix_lr' in param_group and param_group['fix_lr']:
                    param_group['lr'] = init_lr
                else:
                    param_group['lr'] = cur_lr

        model = init_params(torch, SimSiam(TinyEncoder, dim=6, pred_dim=3), 27)
        log("frozen", [n for n, p in model.named_parameters() if not p.requires_grad])
        init_lr = 0.05 * 4 / 256 * 100
        criterion = nn.CosineSimilarity(dim=1)
        optim_params = [{'params': model.encoder.parameters(), 'fix_lr': False},
                        {'params': model.predictor.parameters(), 'fix_lr': True}]
        optimizer = torch.optim.SGD(optim_params, init_lr, momentum=0.9, weight_decay=1e-4)
        images = [randn(torch, (4, 3, 4, 4), 28), randn(torch, (4, 3, 4, 4), 29)]
        epochs = 2
        for epoch in range(epochs):
            adjust_learning_rate(optimizer, init_lr, epoch, epochs)
            model.train()
            p1, p2, z1, z2 = model(x1=images[0], x2=images[1])
            loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("loss", loss)
            log("lrs", [g['lr'] for g in optimizer.param_groups])
        log("fc", [model.encoder.fc[6].weight, model.encoder.fc[6].bias, model.encoder.fc[6].bias.grad])
        log("bn", [model.encoder.fc[7].running_mean, model.encoder.fc[7].running_var])
        log("z_std", torch.std(torch.nn.functional.normalize(z1, dim=1), dim=0).mean())

    run_both(program)


# kuangliu/pytorch-cifar models/shufflenetv2.py (ShuffleBlock's view/permute/reshape channel
# shuffle, SplitBlock's int(size*ratio) slices, depthwise grouped 3x3 convs with stride 2,
# DownBlock/BasicBlock concatenation, avg_pool2d(out, 4)); one stage as ShuffleNetV2._make_layer
# builds it (a DownBlock 4 -> 8 channels and one BasicBlock) under the network's pooled linear
# head, on a batch of 2 8x8 maps, one cross-entropy backward: the whole network at CIFAR size is
# ~26 distinct conv shapes, each a cold compile forward and backward (over 30 s of suite time)
def test_kuangliu_shufflenetv2():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class ShuffleBlock(nn.Module):
            def __init__(self, groups=2):
                super(ShuffleBlock, self).__init__()
                self.groups = groups

            def forward(self, x):
                N, C, H, W = x.size()
                g = self.groups
                return x.view(N, g, int(C / g), H, W).permute(0, 2, 1, 3, 4).reshape(N, C, H, W)

        class SplitBlock(nn.Module):
            def __init__(self, ratio):
                super(SplitBlock, self).__init__()
                self.ratio = ratio

            def forward(self, x):
                c = int(x.size(1) * self.ratio)
                return x[:, :c, :, :], x[:, c:, :, :]

        class BasicBlock(nn.Module):
            def __init__(self, in_channels, split_ratio=0.5):
                super(BasicBlock, self).__init__()
                self.split = SplitBlock(split_ratio)
                in_channels = int(in_channels * split_ratio)
                self.conv1 = nn.Conv2d(in_channels, in_channels,
                                       kernel_size=1, bias=False)
                self.bn1 = nn.BatchNorm2d(in_channels)
                self.conv2 = nn.Conv2d(in_channels, in_channels,
                                       kernel_size=3, stride=1, padding=1, groups=in_channels, bias=False)
                self.bn2 = nn.BatchNorm2d(in_channels)
                self.conv3 = nn.Conv2d(in_channels, in_channels,
                                       kernel_size=1, bias=False)
                self.bn3 = nn.BatchNorm2d(in_channels)
                self.shuffle = ShuffleBlock()

            def forward(self, x):
                x1, x2 = self.split(x)
                out = F.relu(self.bn1(self.conv1(x2)))
                out = self.bn2(self.conv2(out))
                out = F.relu(self.bn3(self.conv3(out)))
                out = torch.cat([x1, out], 1)
                out = self.shuffle(out)
                return out

        class DownBlock(nn.Module):
            def __init__(self, in_channels, out_channels):
                super(DownBlock, self).__init__()
                mid_channels = out_channels // 2
                self.conv1 = nn.Conv2d(in_channels, in_channels,
                                       kernel_size=3, stride=2, padding=1, groups=in_channels, bias=False)
                self.bn1 = nn.BatchNorm2d(in_channels)
                self.conv2 = nn.Conv2d(in_channels, mid_channels,
                                       kernel_size=1, bias=False)
                self.bn2 = nn.BatchNorm2d(mid_channels)
                self.conv3 = nn.Conv2d(in_channels, mid_channels,
                                       kernel_size=1, bias=False)
                self.bn3 = nn.BatchNorm2d(mid_channels)
                self.conv4 = nn.Conv2d(mid_channels, mid_channels,
                                       kernel_size=3, stride=2, padding=1, groups=mid_channels, bias=False)
                self.bn4 = nn.BatchNorm2d(mid_channels)
                self.conv5 = nn.Conv2d(mid_channels, mid_channels,
                                       kernel_size=1, bias=False)
                self.bn5 = nn.BatchNorm2d(mid_channels)

                self.shuffle = ShuffleBlock()

            def forward(self, x):
                out1 = self.bn1(self.conv1(x))
                out1 = F.relu(self.bn2(self.conv2(out1)))
                out2 = F.relu(self.bn3(self.conv3(x)))
                out2 = self.bn4(self.conv4(out2))
                out2 = F.relu(self.bn5(self.conv5(out2)))
                out = torch.cat([out1, out2], 1)
                out = self.shuffle(out)
                return out

        class Stage(nn.Module):   # ShuffleNetV2._make_layer's stage and its forward's head
            def __init__(self, in_channels, out_channels, num_blocks):
                super().__init__()
                layers = [DownBlock(in_channels, out_channels)]
                for i in range(num_blocks):
                    layers.append(BasicBlock(out_channels))
                self.layer1 = nn.Sequential(*layers)
                self.linear = nn.Linear(out_channels, 10)

            def forward(self, x):
                out = self.layer1(x)
                out = F.avg_pool2d(out, 4)
                out = out.view(out.size(0), -1)
                out = self.linear(out)
                return out

        net = init_params(torch, Stage(4, 8, 1), 30)
        x = randn(torch, (2, 4, 8, 8), 31, requires_grad=True)
        y = torch.tensor([3, 7])
        out = net(x)
        loss = nn.CrossEntropyLoss()(out, y)
        loss.backward()
        _, predicted = out.max(1)
        log("out", [out, loss, predicted, predicted.eq(y).sum().item()])
        log("grad", [net.layer1[0].conv1.weight.grad, net.layer1[1].conv2.weight.grad, x.grad])
        log("bn", [net.layer1[1].bn2.running_mean, net.layer1[1].bn2.num_batches_tracked])
        log("shuffle", ShuffleBlock()(torch.arange(16.).view(1, 4, 2, 2)))

    run_both(program)


# HobbitLong/RepDistiller distiller_zoo/KD.py (DistillKL: ``F.kl_div(p_s, p_t,
# size_average=False)``, the legacy reduction argument), AT.py (attention transfer with
# adaptive_avg_pool2d to the smaller map, F.normalize of ``f.pow(p).mean(1)``), SP.py
# (similarity preserving Gram matrices), RKD.py (pdist with ``res[range(n), range(n)] = 0``,
# the angle loss through bmm of normalised differences, teacher terms under no_grad) and PKT.py
# (``output_net[output_net != output_net] = 0`` NaN scrubbing, the KL of similarity
# distributions), on student/teacher logits and feature maps of a batch of 4
def test_repdistiller_losses():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional

        class DistillKL(nn.Module):
            def __init__(self, T):
                super(DistillKL, self).__init__()
                self.T = T

            def forward(self, y_s, y_t):
                p_s = F.log_softmax(y_s / self.T, dim=1)
                p_t = F.softmax(y_t / self.T, dim=1)
                loss = F.kl_div(p_s, p_t, size_average=False) * (self.T ** 2) / y_s.shape[0]
                return loss

        class Attention(nn.Module):
            def __init__(self, p=2):
                super(Attention, self).__init__()
                self.p = p

            def forward(self, g_s, g_t):
                return [self.at_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

            def at_loss(self, f_s, f_t):
                s_H, t_H = f_s.shape[2], f_t.shape[2]
                if s_H > t_H:
                    f_s = F.adaptive_avg_pool2d(f_s, (t_H, t_H))
                elif s_H < t_H:
                    f_t = F.adaptive_avg_pool2d(f_t, (s_H, s_H))
                else:
                    pass
                return (self.at(f_s) - self.at(f_t)).pow(2).mean()

            def at(self, f):
                return F.normalize(f.pow(self.p).mean(1).view(f.size(0), -1))

        class Similarity(nn.Module):
            def __init__(self):
                super(Similarity, self).__init__()

            def forward(self, g_s, g_t):
                return [self.similarity_loss(f_s, f_t) for f_s, f_t in zip(g_s, g_t)]

            def similarity_loss(self, f_s, f_t):
                bsz = f_s.shape[0]
                f_s = f_s.view(bsz, -1)
                f_t = f_t.view(bsz, -1)

                G_s = torch.mm(f_s, torch.t(f_s))
                G_s = torch.nn.functional.normalize(G_s)
                G_t = torch.mm(f_t, torch.t(f_t))
                G_t = torch.nn.functional.normalize(G_t)

                G_diff = G_t - G_s
                loss = (G_diff * G_diff).view(-1, 1).sum(0) / (bsz * bsz)
                return loss

        class RKDLoss(nn.Module):
            def __init__(self, w_d=25, w_a=50):
                super(RKDLoss, self).__init__()
                self.w_d = w_d
                self.w_a = w_a

            def forward(self, f_s, f_t):
                student = f_s.view(f_s.shape[0], -1)
                teacher = f_t.view(f_t.shape[0], -1)

                with torch.no_grad():
                    t_d = self.pdist(teacher, squared=False)
                    mean_td = t_d[t_d > 0].mean()
                    t_d = t_d / mean_td

                d = self.pdist(student, squared=False)
                mean_d = d[d > 0].mean()
                d = d / mean_d

                loss_d = F.smooth_l1_loss(d, t_d)

                with torch.no_grad():
                    td = (teacher.unsqueeze(0) - teacher.unsqueeze(1))
                    norm_td = F.normalize(td, p=2, dim=2)
                    t_angle = torch.bmm(norm_td, norm_td.transpose(1, 2)).view(-1)

                sd = (student.unsqueeze(0) - student.unsqueeze(1))
                norm_sd = F.normalize(sd, p=2, dim=2)
                s_angle = torch.bmm(norm_sd, norm_sd.transpose(1, 2)).view(-1)

                loss_a = F.smooth_l1_loss(s_angle, t_angle)

                loss = self.w_d * loss_d + self.w_a * loss_a

                return loss

            @staticmethod
            def pdist(e, squared=False, eps=1e-12):
                e_square = e.pow(2).sum(dim=1)
                prod = e @ e.t()
                res = (e_square.unsqueeze(1) + e_square.unsqueeze(0) - 2 * prod).clamp(min=eps)

                if not squared:
                    res = res.sqrt()

                res = res.clone()
                res[range(len(e)), range(len(e))] = 0
                return res

        class PKT(nn.Module):
            def __init__(self):
                super(PKT, self).__init__()

            def forward(self, f_s, f_t):
                return self.cosine_similarity_loss(f_s, f_t)

            @staticmethod
            def cosine_similarity_loss(output_net, target_net, eps=0.0000001):
                output_net_norm = torch.sqrt(torch.sum(output_net ** 2, dim=1, keepdim=True))
                output_net = output_net / (output_net_norm + eps)
                output_net[output_net != output_net] = 0

                target_net_norm = torch.sqrt(torch.sum(target_net ** 2, dim=1, keepdim=True))
                target_net = target_net / (target_net_norm + eps)
                target_net[target_net != target_net] = 0

                model_similarity = torch.mm(output_net, output_net.transpose(0, 1))
                target_similarity = torch.mm(target_net, target_net.transpose(0, 1))

                model_similarity = (model_similarity + 1.0) / 2.0
                target_similarity = (target_similarity + 1.0) / 2.0

                model_similarity = model_similarity / torch.sum(model_similarity, dim=1, keepdim=True)
                target_similarity = target_similarity / torch.sum(target_similarity, dim=1, keepdim=True)

                loss = torch.mean(target_similarity * torch.log((target_similarity + eps) / (model_similarity + eps)))

                return loss

        y_s = randn(torch, (4, 5), 34, requires_grad=True)
        y_t = randn(torch, (4, 5), 35)
        g_s = [randn(torch, (4, 3, 4, 4), 36, requires_grad=True), randn(torch, (4, 3, 2, 2), 37, requires_grad=True)]
        g_t = [randn(torch, (4, 2, 2, 2), 38), randn(torch, (4, 6, 4, 4), 39)]
        feat_s = randn(torch, (4, 6), 40, requires_grad=True)
        feat_t = randn(torch, (4, 6), 41)

        criterion_div = DistillKL(4)
        loss_div = criterion_div(y_s, y_t)
        loss_at = sum(Attention()(g_s, g_t))
        loss_sp = sum(Similarity()([g_s[1]], [g_t[0]]))
        loss_rkd = RKDLoss()(feat_s, feat_t)
        loss_pkt = PKT()(feat_s, feat_t)
        log("losses", [loss_div, loss_at, loss_sp, loss_rkd, loss_pkt])
        loss = loss_div + loss_at + loss_sp + loss_rkd + loss_pkt
        loss.backward()
        log("grads", [y_s.grad, g_s[0].grad, g_s[1].grad, feat_s.grad])
        log("pdist", RKDLoss.pdist(feat_t, squared=True))

    run_both(program)


# NegatioN/OnlineMiningTripletLoss online_triplet_loss/losses.py (_pairwise_distances with
# ``distances[distances < 0] = 0`` and the eq(0) mask before sqrt, the masks built from
# ``torch.eye(n).byte()`` and ``~`` on uint8 (bitwise: 254/255, which the author's float masks
# then carry), batch_hard_triplet_loss's max/min(1, keepdim=True), batch_all_triplet_loss's
# 3-D mask, boolean-mask selection and ``int / tensor`` fraction); a batch of 6 embeddings of
# 3 classes, both losses squared and not, backward into the embeddings and a linear embedder
def test_online_triplet_mining():
    def program(torch, log):
        def _pairwise_distances(embeddings, squared=False):
            dot_product = torch.matmul(embeddings, embeddings.t())
            square_norm = torch.diag(dot_product)
            distances = square_norm.unsqueeze(0) - 2.0 * dot_product + square_norm.unsqueeze(1)
            distances[distances < 0] = 0

            if not squared:
                mask = distances.eq(0).float()
                distances = distances + mask * 1e-16

                distances = (1.0 - mask) * torch.sqrt(distances)

            return distances

        def _get_triplet_mask(labels):
            indices_equal = torch.eye(labels.size(0)).byte()
            indices_not_equal = ~indices_equal
            i_not_equal_j = indices_not_equal.unsqueeze(2)
            i_not_equal_k = indices_not_equal.unsqueeze(1)
            j_not_equal_k = indices_not_equal.unsqueeze(0)

            distinct_indices = (i_not_equal_j & i_not_equal_k) & j_not_equal_k

            label_equal = labels.unsqueeze(0) == labels.unsqueeze(1)
            i_equal_j = label_equal.unsqueeze(2)
            i_equal_k = label_equal.unsqueeze(1)

            valid_labels = ~i_equal_k & i_equal_j

            return valid_labels & distinct_indices

        def _get_anchor_positive_triplet_mask(labels, device):
            indices_equal = torch.eye(labels.size(0)).byte().to(device)
            indices_not_equal = ~indices_equal

            labels_equal = labels.unsqueeze(0) == labels.unsqueeze(1)

            return labels_equal & indices_not_equal

        def _get_anchor_negative_triplet_mask(labels):
            return ~(labels.unsqueeze(0) == labels.unsqueeze(1))

        def batch_hard_triplet_loss(labels, embeddings, margin, squared=False, device='cpu'):
            pairwise_dist = _pairwise_distances(embeddings, squared=squared)

            mask_anchor_positive = _get_anchor_positive_triplet_mask(labels, device).float()

            anchor_positive_dist = mask_anchor_positive * pairwise_dist

            hardest_positive_dist, _ = anchor_positive_dist.max(1, keepdim=True)

            mask_anchor_negative = _get_anchor_negative_triplet_mask(labels).float()

            max_anchor_negative_dist, _ = pairwise_dist.max(1, keepdim=True)
            anchor_negative_dist = pairwise_dist + max_anchor_negative_dist * (1.0 - mask_anchor_negative)

            hardest_negative_dist, _ = anchor_negative_dist.min(1, keepdim=True)

            tl = hardest_positive_dist - hardest_negative_dist + margin
            tl[tl < 0] = 0
            triplet_loss = tl.mean()

            return triplet_loss

        def batch_all_triplet_loss(labels, embeddings, margin, squared=False):
            pairwise_dist = _pairwise_distances(embeddings, squared=squared)

            anchor_positive_dist = pairwise_dist.unsqueeze(2)
            anchor_negative_dist = pairwise_dist.unsqueeze(1)

            triplet_loss = anchor_positive_dist - anchor_negative_dist + margin

            mask = _get_triplet_mask(labels)
            triplet_loss = mask.float() * triplet_loss

            triplet_loss[triplet_loss < 0] = 0

            valid_triplets = triplet_loss[triplet_loss > 1e-16]
            num_positive_triplets = valid_triplets.size(0)
            num_valid_triplets = mask.sum()

            fraction_positive_triplets = num_positive_triplets / (num_valid_triplets.float() + 1e-16)

            triplet_loss = triplet_loss.sum() / (num_positive_triplets + 1e-16)

            return triplet_loss, fraction_positive_triplets

        labels = torch.tensor([0, 1, 0, 2, 1, 2])
        log("masks", [_get_triplet_mask(labels), _get_anchor_positive_triplet_mask(labels, 'cpu'),
                      _get_anchor_negative_triplet_mask(labels)])
        emb = randn(torch, (6, 3), 42, requires_grad=True)
        for squared in (False, True):
            hard = batch_hard_triplet_loss(labels, emb, margin=0.5, squared=squared)
            all_, frac = batch_all_triplet_loss(labels, emb, margin=0.5, squared=squared)
            log("losses", [hard, all_, frac])
            emb.grad = None
            (hard + all_).backward()
            log("grad", emb.grad)
        embedder = init_params(torch, torch.nn.Linear(4, 3), 43)
        x = randn(torch, (6, 4), 44)
        opt = torch.optim.SGD(embedder.parameters(), lr=0.1)
        for step in range(2):
            loss = batch_hard_triplet_loss(labels, embedder(x), margin=1.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log("train", loss)
        log("weight", embedder.weight)

    run_both(program)


# seungeunrho/minimalRL td3.py (twin critics and deepcopied targets, target policy smoothing
# with ``torch.tensor(np.clip(np.random.normal(...)))`` (a float64 0-d tensor added to float32
# actions), clamp(-2, 2), F.mse_loss with the detached target first, the delayed actor update
# every ``d`` calls and soft updates through ``.data.copy_``, a replay buffer of bool ``done``
# flags made float); widths 128/64/32 -> 8, batch 100 -> 4, training after 2000 -> 4
# transitions, Pendulum-v0 -> a 4-step seeded stand-in, every episode printed
def test_minimalrl_td3():
    def program(torch, log):
        import collections
        import copy
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim

        class ReplayBuffer():
            def __init__(self):
                self.buffer = collections.deque(maxlen=buffer_limit)

            def put(self, transition):
                self.buffer.append(transition)

            def sample(self, n):
                mini_batch = random.sample(self.buffer, n)
                s_lst, a_lst, r_lst, s_prime_lst, done_mask_lst = [], [], [], [], []

                for transition in mini_batch:
                    s, a, r, s_prime, done_mask = transition
                    s_lst.append(s)
                    a_lst.append([a])
                    r_lst.append([r])
                    s_prime_lst.append(s_prime)
                    done_mask_lst.append([done_mask])

                return torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst, dtype=torch.float), \
                    torch.tensor(r_lst, dtype=torch.float), torch.tensor(s_prime_lst, dtype=torch.float), \
                    torch.tensor(done_mask_lst, dtype=torch.float)

            def size(self):
                return len(self.buffer)

        class NoiseGenerator:
            def __init__(self, mu, sigma):
                self.mu = mu
                self.sigma = sigma

            def generate(self):
                return np.random.normal(self.mu, self.sigma, 1)[0]

        class MuNet(nn.Module):
            def __init__(self):
                super(MuNet, self).__init__()
                self.fc1 = nn.Linear(3, 8)
                self.fc2 = nn.Linear(8, 8)
                self.fc_mu = nn.Linear(8, 1)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                mu = torch.tanh(self.fc_mu(x)) * 2
                return mu

        class QNet(nn.Module):
            def __init__(self):
                super(QNet, self).__init__()

                self.fc_s = nn.Linear(3, 8)
                self.fc_a = nn.Linear(1, 8)
                self.fc_q = nn.Linear(16, 8)
                self.fc_3 = nn.Linear(8, 1)

            def forward(self, x, a):
                h1 = F.relu(self.fc_s(x))
                h2 = F.relu(self.fc_a(a))
                cat = torch.cat([h1, h2], dim=1)
                q = F.relu(self.fc_q(cat))
                q = self.fc_3(q)
                return q

        class TD3(nn.Module):
            def __init__(self):
                super(TD3, self).__init__()
                self.q_net_1 = init_params(torch, QNet(), 45)
                self.q_net_2 = init_params(torch, QNet(), 46)
                self.q_net_optimizer = optim.Adam(list(self.q_net_1.parameters())
                                                  + list(self.q_net_2.parameters()), lr=critic_learning_rate)
                self.mu_net = init_params(torch, MuNet(), 47)
                self.mu_net_optimizer = optim.Adam(self.mu_net.parameters(), lr=actor_learning_rate)
                self.target_q_net_1 = copy.deepcopy(self.q_net_1)
                self.target_q_net_2 = copy.deepcopy(self.q_net_2)
                self.target_mu_net = copy.deepcopy(self.mu_net)

                self.noise_generator = NoiseGenerator(0, 0.2)

                self.train_num = 1
                self.d = 2

            def pi(self, x):
                x = self.mu_net(x)
                return x

            def train_net(self):
                s, a, r, s_prime, done_mask = memory.sample(batch_size)
                tilde_a = self.target_mu_net(s_prime) + torch.tensor(np.clip(self.noise_generator.generate(), -0.5, 0.5))
                tilde_a = torch.clamp(tilde_a, -2, 2).detach()
                y = r + discount_factor * torch.min(self.target_q_net_1(s_prime, tilde_a), self.target_q_net_2(s_prime, tilde_a))
                q_loss = F.mse_loss(y.detach(), self.q_net_1(s, a)) + F.mse_loss(y.detach(), self.q_net_2(s, a))
                self.q_net_optimizer.zero_grad()
                q_loss.backward()
                self.q_net_optimizer.step()
                log("q", [tilde_a, q_loss])

                if self.train_num % self.d == 0:
                    mu_loss = - self.q_net_1(s, self.mu_net(s)).mean()
                    self.mu_net_optimizer.zero_grad()
                    mu_loss.backward()
                    self.mu_net_optimizer.step()
                    log("mu", mu_loss)

                    for param, target_param in zip(self.q_net_1.parameters(), self.target_q_net_1.parameters()):
                        target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
                    for param, target_param in zip(self.q_net_2.parameters(), self.target_q_net_2.parameters()):
                        target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
                    for param, target_param in zip(self.mu_net.parameters(), self.target_mu_net.parameters()):
                        target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
                self.train_num += 1

        buffer_limit = 50000
        actor_learning_rate = 0.001
        critic_learning_rate = 0.001
        batch_size = 4
        discount_factor = 0.99
        tau = 0.005

        with _seeded(0):
            env = _Env(obs_dim=3, n=4, seed=48)
            model = TD3()
            memory = ReplayBuffer()
            print_interval = 1
            score = 0.0
            pi_noise_generator = NoiseGenerator(0, 0.1)

            for n_epi in range(4):
                s = env.reset()
                done = False
                r = 0
                while not done:
                    a = model.pi(torch.from_numpy(s).float()).item()

                    a = a + pi_noise_generator.generate()
                    a = max(min(a, 2), -2)
                    s_prime, r, done, info = env.step([a])
                    memory.put((s, a, r / 100.0, s_prime, done))
                    s = s_prime
                    score += r
                    if done:
                        break
                if memory.size() > 4:
                    model.train_net()
                if n_epi % print_interval == 0 and n_epi != 0:
                    print("# of episode :{}, avg score : {:.1f}".format(n_epi, score / print_interval))
                    score = 0.0
        log("targets", [model.target_mu_net.fc_mu.weight, model.target_q_net_2.fc_3.bias])

    run_both(program)


# katsura-jp/pytorch-cosine-annealing-with-warmup cosine_annealing_warmup/scheduler.py
# (CosineAnnealingWarmupRestarts: an ``_LRScheduler`` subclass whose ``step(epoch=None)``
# replaces the base class's, called by the base __init__ before the subclass's init_lr rewrites
# ``base_lrs``; linear warmup, cosine cycles growing by cycle_mult, max_lr decayed by gamma,
# explicit epochs through math.log); as written, driving SGD on a small regression for 10 steps,
# then stepped to explicit epochs, with get_last_lr and state_dict
def test_cosine_annealing_warmup_restarts():
    def program(torch, log):
        import math
        _LRScheduler = torch.optim.lr_scheduler._LRScheduler

        class CosineAnnealingWarmupRestarts(_LRScheduler):
            def __init__(self,
                         optimizer: torch.optim.Optimizer,
                         first_cycle_steps: int,
                         cycle_mult: float = 1.,
                         max_lr: float = 0.1,
                         min_lr: float = 0.001,
                         warmup_steps: int = 0,
                         gamma: float = 1.,
                         last_epoch: int = -1
                         ):
                assert warmup_steps < first_cycle_steps

                self.first_cycle_steps = first_cycle_steps
                self.cycle_mult = cycle_mult
                self.base_max_lr = max_lr
                self.max_lr = max_lr
                self.min_lr = min_lr
                self.warmup_steps = warmup_steps
                self.gamma = gamma

                self.cur_cycle_steps = first_cycle_steps
                self.cycle = 0
                self.step_in_cycle = last_epoch

                super(CosineAnnealingWarmupRestarts, self).__init__(optimizer, last_epoch)

                self.init_lr()

            def init_lr(self):
                self.base_lrs = []
                for param_group in self.optimizer.param_groups:
                    param_group['lr'] = self.min_lr
                    self.base_lrs.append(self.min_lr)

            def get_lr(self):
                if self.step_in_cycle == -1:
                    return self.base_lrs
                elif self.step_in_cycle < self.warmup_steps:
                    return [(self.max_lr - base_lr) * self.step_in_cycle / self.warmup_steps + base_lr for base_lr in self.base_lrs]
                else:
                    return [base_lr + (self.max_lr - base_lr)
                            * (1 + math.cos(math.pi * (self.step_in_cycle - self.warmup_steps)
                                            / (self.cur_cycle_steps - self.warmup_steps))) / 2
                            for base_lr in self.base_lrs]

            def step(self, epoch=None):
                if epoch is None:
                    epoch = self.last_epoch + 1
                    self.step_in_cycle = self.step_in_cycle + 1
                    if self.step_in_cycle >= self.cur_cycle_steps:
                        self.cycle += 1
                        self.step_in_cycle = self.step_in_cycle - self.cur_cycle_steps
                        self.cur_cycle_steps = int((self.cur_cycle_steps - self.warmup_steps) * self.cycle_mult) + self.warmup_steps
                else:
                    if epoch >= self.first_cycle_steps:
                        if self.cycle_mult == 1.:
                            self.step_in_cycle = epoch % self.first_cycle_steps
                            self.cycle = epoch // self.first_cycle_steps
                        else:
                            n = int(math.log((epoch / self.first_cycle_steps * (self.cycle_mult - 1) + 1), self.cycle_mult))
                            self.cycle = n
                            self.step_in_cycle = epoch - int(self.first_cycle_steps * (self.cycle_mult ** n - 1) / (self.cycle_mult - 1))
                            self.cur_cycle_steps = self.first_cycle_steps * self.cycle_mult ** (n)
                    else:
                        self.cur_cycle_steps = self.first_cycle_steps
                        self.step_in_cycle = epoch

                self.max_lr = self.base_max_lr * (self.gamma ** self.cycle)
                self.last_epoch = math.floor(epoch)
                for param_group, lr in zip(self.optimizer.param_groups, self.get_lr()):
                    param_group['lr'] = lr

                self._last_lr = [group['lr'] for group in self.optimizer.param_groups]

        model = init_params(torch, torch.nn.Linear(3, 1), 49)
        x, y = randn(torch, (6, 3), 50), randn(torch, (6, 1), 51)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scheduler = CosineAnnealingWarmupRestarts(optimizer, first_cycle_steps=4, cycle_mult=1.5,
                                                  max_lr=0.1, min_lr=0.001, warmup_steps=2, gamma=0.5)
        log("init", [scheduler.base_lrs, optimizer.param_groups[0]['lr'], optimizer.param_groups[0]['initial_lr'],
                     scheduler.last_epoch, scheduler.get_last_lr()])
        for step in range(10):
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            log("lr", [loss, scheduler.get_last_lr(), scheduler.cycle, scheduler.step_in_cycle, scheduler.cur_cycle_steps])
        for epoch in (3, 9, 17.5):
            scheduler.step(epoch)
            log("epoch", [optimizer.param_groups[0]['lr'], scheduler.last_epoch, scheduler.cycle])
        sd = scheduler.state_dict()
        log("state", sorted(k for k in sd if k != "optimizer"))
        log("state_vals", [sd["cycle"], sd["max_lr"], sd["last_epoch"], sd["_last_lr"], sd["base_lrs"]])
        log("weight", model.weight)

    run_both(program)
