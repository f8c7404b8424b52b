"""Round 31's third public PyTorch program, run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in a file of its
own so that each of the round's files stays within the suite's per-file time (its float64 conv
net compiles as much as ``test_public_programs_round31.py``'s two programs together):

- xtma/pytorch_car_caring: ``train.py``'s PPO agent for CarRacing with a ``Beta`` policy (a
  float64 conv actor-critic made by ``Net().double()`` with ``Softplus`` heads ``+ 1``,
  ``xavier_uniform_(gain=calculate_gain('relu'))``/``constant_`` through ``self.apply``, a numpy
  structured-array replay buffer read field by field through ``torch.tensor(..., dtype=
  torch.double)``, ``Beta.log_prob(...).sum(dim=1, keepdim=True)``, the clipped surrogate with
  ``torch.min``/``torch.clamp``, ``F.smooth_l1_loss`` value loss, minibatches drawn by a
  ``BatchSampler`` and indexed with Python lists, the state dict saved and reloaded), driven by
  the program's own ``Env`` wrapper (grey-scale frame stack, ``reward_memory`` closure) around a
  numpy stand-in for the game.

The program's code is kept at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; the comment above the test says what had to change and why.
"""
import io
import math

import numpy as np
import pytest
from parity import printer, run_both

torch = pytest.importorskip("torch")


# ---- xtma/pytorch_car_caring ---------------------------------------------------------------------
class _FakeCarRacing:
    """A numpy stand-in for gym's CarRacing-v0: 96x96 RGB frames and a reward that prefers
    gentle steering, an episode ending after ``length`` steps (``die``)."""

    def __init__(self, seed, length):
        self.rs = np.random.RandomState(seed)
        self.length = length
        self.reward_threshold = 900.0

    def seed(self, seed):
        self.rs = np.random.RandomState(seed)

    def _frame(self):
        return self.rs.randint(0, 256, (96, 96, 3)).astype(np.float64)

    def reset(self):
        self.t = 0
        return self._frame()

    def step(self, action):
        self.t += 1
        reward = 0.5 - float(np.sum(np.square(action))) * 0.1 + self.rs.uniform(-0.05, 0.05)
        return self._frame(), reward, self.t >= self.length, {}


def _xavier_np(rs, shape, gain):
    """numpy stand-in for ``nn.init.xavier_uniform_(w, gain)`` (the same bound)."""
    fan_in = shape[1] * int(np.prod(shape[2:]))
    fan_out = shape[0] * int(np.prod(shape[2:]))
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return rs.uniform(-bound, bound, shape)


# train.py at tiny sizes: buffer_capacity, batch_size = 2, 1 (2000, 128: one minibatch shape
# besides select_action's batch of 1 keeps the compiles down), ppo_epoch 2 (10), action_repeat 2
# (8), two episodes of two steps (the stand-in game ends after 4 frames), so two updates; the
# network unchanged (it needs 96x96 frames). Deviations: gym's CarRacing is a seeded numpy
# stand-in; ``Beta(...).sample()`` in select_action is numpy's beta draw of the same alpha/beta
# (the two libraries' streams differ); the xavier_uniform_ weights (checked to lie within
# xavier's bound) and the Linear layers' default init are replaced by numpy values;
# SubsetRandomSampler's permutation (checked to be one) becomes a numpy permutation given to the
# same BatchSampler; save_param writes to a BytesIO, which is loaded back into a new Net.
def test_car_racing_beta_ppo():
    def program(torch, log):
        print = printer(log)
        nn, F, optim = torch.nn, torch.nn.functional, torch.optim
        Beta = torch.distributions.Beta
        BatchSampler = torch.utils.data.sampler.BatchSampler
        SubsetRandomSampler = torch.utils.data.sampler.SubsetRandomSampler

        class args:
            gamma = 0.99
            action_repeat = 2
            img_stack = 4
            seed = 0
            render = False
            vis = False
            log_interval = 1

        device = torch.device("cpu")
        torch.manual_seed(args.seed)
        np_rs = np.random.RandomState(7)

        transition = np.dtype([('s', np.float64, (args.img_stack, 96, 96)), ('a', np.float64, (3,)),
                               ('a_logp', np.float64), ('r', np.float64),
                               ('s_', np.float64, (args.img_stack, 96, 96))])

        class Env():
            """
            Environment wrapper for CarRacing
            """

            def __init__(self):
                self.env = _FakeCarRacing(3, length=4)
                self.env.seed(args.seed)
                self.reward_threshold = self.env.reward_threshold

            def reset(self):
                self.counter = 0
                self.av_r = self.reward_memory()

                self.die = False
                img_rgb = self.env.reset()
                img_gray = self.rgb2gray(img_rgb)
                self.stack = [img_gray] * args.img_stack  # four frames for decision
                return np.array(self.stack)

            def step(self, action):
                total_reward = 0
                for i in range(args.action_repeat):
                    img_rgb, reward, die, _ = self.env.step(action)
                    # don't penalize "die state"
                    if die:
                        reward += 100
                    # green penalty
                    if np.mean(img_rgb[:, :, 1]) > 185.0:
                        reward -= 0.05
                    total_reward += reward
                    # if no reward recently, end the episode
                    done = True if self.av_r(reward) <= -0.1 else False
                    if done or die:
                        break
                img_gray = self.rgb2gray(img_rgb)
                self.stack.pop(0)
                self.stack.append(img_gray)
                assert len(self.stack) == args.img_stack
                return np.array(self.stack), total_reward, done, die

            @staticmethod
            def rgb2gray(rgb, norm=True):
                # rgb image -> gray [0, 1]
                gray = np.dot(rgb[..., :], [0.299, 0.587, 0.114])
                if norm:
                    # normalize
                    gray = gray / 128. - 1.
                return gray

            @staticmethod
            def reward_memory():
                # record reward for last 100 steps
                count = 0
                length = 100
                history = np.zeros(length)

                def memory(reward):
                    nonlocal count
                    history[count] = reward
                    count = (count + 1) % length
                    return np.mean(history)

                return memory

        class Net(nn.Module):
            """
            Actor-Critic Network for PPO
            """

            def __init__(self):
                super(Net, self).__init__()
                self.cnn_base = nn.Sequential(  # input shape (4, 96, 96)
                    nn.Conv2d(args.img_stack, 8, kernel_size=4, stride=2),
                    nn.ReLU(),  # activation
                    nn.Conv2d(8, 16, kernel_size=3, stride=2),  # (8, 47, 47)
                    nn.ReLU(),  # activation
                    nn.Conv2d(16, 32, kernel_size=3, stride=2),  # (16, 23, 23)
                    nn.ReLU(),  # activation
                    nn.Conv2d(32, 64, kernel_size=3, stride=2),  # (32, 11, 11)
                    nn.ReLU(),  # activation
                    nn.Conv2d(64, 128, kernel_size=3, stride=1),  # (64, 5, 5)
                    nn.ReLU(),  # activation
                    nn.Conv2d(128, 256, kernel_size=3, stride=1),  # (128, 3, 3)
                    nn.ReLU(),  # activation
                )  # output shape (256, 1, 1)
                self.v = nn.Sequential(nn.Linear(256, 100), nn.ReLU(), nn.Linear(100, 1))
                self.fc = nn.Sequential(nn.Linear(256, 100), nn.ReLU())
                self.alpha_head = nn.Sequential(nn.Linear(100, 3), nn.Softplus())
                self.beta_head = nn.Sequential(nn.Linear(100, 3), nn.Softplus())
                self.apply(self._weights_init)

            @staticmethod
            def _weights_init(m):
                if isinstance(m, nn.Conv2d):
                    nn.init.xavier_uniform_(m.weight, gain=nn.init.calculate_gain('relu'))
                    nn.init.constant_(m.bias, 0.1)

            def forward(self, x):
                x = self.cnn_base(x)
                x = x.view(-1, 256)
                v = self.v(x)
                x = self.fc(x)
                alpha = self.alpha_head(x) + 1
                beta = self.beta_head(x) + 1

                return (alpha, beta), v

        class Agent():
            """
            Agent for training
            """
            max_grad_norm = 0.5
            clip_param = 0.1  # epsilon in clipped loss
            ppo_epoch = 2
            buffer_capacity, batch_size = 2, 1

            def __init__(self):
                self.training_step = 0
                self.net = Net().double().to(device)
                self.buffer = np.empty(self.buffer_capacity, dtype=transition)
                self.counter = 0

                self.optimizer = optim.Adam(self.net.parameters(), lr=1e-3)

            def select_action(self, state):
                state = torch.from_numpy(state).double().to(device).unsqueeze(0)
                with torch.no_grad():
                    alpha, beta = self.net(state)[0]
                dist = Beta(alpha, beta)
                log("alpha_beta", [alpha, beta])
                action = torch.from_numpy(np_rs.beta(alpha.numpy(), beta.numpy()))  # dist.sample()
                a_logp = dist.log_prob(action).sum(dim=1)

                action = action.squeeze().cpu().numpy()
                a_logp = a_logp.item()
                return action, a_logp

            def save_param(self):
                buf = io.BytesIO()
                torch.save(self.net.state_dict(), buf)
                return buf

            def store(self, transition):
                self.buffer[self.counter] = transition
                self.counter += 1
                if self.counter == self.buffer_capacity:
                    self.counter = 0
                    return True
                else:
                    return False

            def update(self):
                self.training_step += 1

                s = torch.tensor(self.buffer['s'], dtype=torch.double).to(device)
                a = torch.tensor(self.buffer['a'], dtype=torch.double).to(device)
                r = torch.tensor(self.buffer['r'], dtype=torch.double).to(device).view(-1, 1)
                s_ = torch.tensor(self.buffer['s_'], dtype=torch.double).to(device)

                old_a_logp = torch.tensor(self.buffer['a_logp'], dtype=torch.double).to(device).view(-1, 1)

                with torch.no_grad():
                    target_v = r + args.gamma * self.net(s_)[1]
                    adv = target_v - self.net(s)[1]
                    # adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                log("targets", [s.dtype, r, target_v, adv])

                perm = list(SubsetRandomSampler(range(self.buffer_capacity)))
                log("subset_is_permutation", sorted(perm) == list(range(self.buffer_capacity)))
                for _ in range(self.ppo_epoch):
                    order = [int(i) for i in np_rs.permutation(self.buffer_capacity)]
                    for index in BatchSampler(order, self.batch_size, False):

                        alpha, beta = self.net(s[index])[0]
                        dist = Beta(alpha, beta)
                        a_logp = dist.log_prob(a[index]).sum(dim=1, keepdim=True)
                        ratio = torch.exp(a_logp - old_a_logp[index])

                        surr1 = ratio * adv[index]
                        surr2 = torch.clamp(ratio, 1.0 - self.clip_param, 1.0 + self.clip_param) * adv[index]
                        action_loss = -torch.min(surr1, surr2).mean()
                        value_loss = F.smooth_l1_loss(self.net(s[index])[1], target_v[index])
                        loss = action_loss + 2. * value_loss

                        self.optimizer.zero_grad()
                        loss.backward()
                        # nn.utils.clip_grad_norm_(self.net.parameters(), self.max_grad_norm)
                        self.optimizer.step()
                        log("minibatch", [index, ratio, action_loss, value_loss, loss.grad_fn,
                                          self.net.alpha_head[0].weight.grad])

        agent = Agent()
        # the program's init: xavier bounds on the conv weights, 0.1 conv biases, float64
        gain = nn.init.calculate_gain('relu')
        convs = [m for m in agent.net.modules() if isinstance(m, nn.Conv2d)]
        for m in convs:
            fan_in, fan_out = m.weight[0].numel(), m.weight.shape[0] * m.weight[0, 0].numel()
            bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
            log("conv_init", [m.weight.dtype, bool(np.abs(m.weight.detach().numpy()).max() <= bound), m.bias])
        init_rs = np.random.RandomState(11)
        with torch.no_grad():
            for name, p in agent.net.named_parameters():
                if p.dim() == 4:
                    p.copy_(torch.from_numpy(_xavier_np(init_rs, tuple(p.shape), gain)))
                elif not (name.startswith("cnn_base") and name.endswith("bias")):
                    bound = 1.0 / math.sqrt(p.shape[-1] if p.dim() == 2 else 100)
                    p.copy_(torch.from_numpy(init_rs.uniform(-bound, bound, tuple(p.shape))))

        env = Env()

        training_records = []
        running_score = 0
        state = env.reset()
        for i_ep in range(2):
            score = 0
            state = env.reset()

            for t in range(1000):
                action, a_logp = agent.select_action(state)
                state_, reward, done, die = env.step(action * np.array([2., 1., 1.]) + np.array([-1., 0., 0.]))
                log("step", [action, a_logp, reward, done, die])
                if agent.store((state, action, a_logp, reward, state_)):
                    print('updating')
                    agent.update()
                score += reward
                state = state_
                if done or die:
                    break
            running_score = running_score * 0.99 + score * 0.01

            if i_ep % args.log_interval == 0:
                print('Ep {}\tLast score: {:.2f}\tMoving average score: {:.2f}'.format(i_ep, score, running_score))
                buf = agent.save_param()
            if running_score > env.reward_threshold:
                print("Solved! Running reward is now {} and the last episode runs to {}!".format(running_score, score))
                break

        buf.seek(0)
        restored = Net().double()
        restored.load_state_dict(torch.load(buf))
        log("restored", [p.dtype for p in restored.parameters()] + list(restored.parameters()))
        log("trained", list(agent.net.parameters()))

    run_both(program)
