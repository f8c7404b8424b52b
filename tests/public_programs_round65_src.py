"""Sources of the round-65 public programs (tests/api/test_public_programs_round65.py and
tests/compile/test_public_patterns_round65.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses."""
import types

import public_programs_round64_src as _r64


def program(T, src, **extra):
    """Execute a program source with round 64's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``Tensor``, ``Variable``, ``clip_grad_norm_``, ``DataLoader``, ...) plus
    the names these programs import (``Categorical``; ``dist`` for ``torch.distributions``)."""
    names = {"Categorical": T.distributions.Categorical, "dist": T.distributions}
    return _r64.program(T, src, **{**names, **extra})


def module(T, src, **extra):
    """A program source run as a module object (``import model.network as Net``)."""
    return types.SimpleNamespace(**{k: v for k, v in vars(program(T, src, **extra)).items()
                                    if not k.startswith("__")})


# markkwang/MDN (no license file) src/mdn.py at a83a907, but for its imports
MDN = r'''
class MDN(nn.Module):

    def __init__(self, input_dim, output_dim, k):
        super(MDN, self).__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.k = k

        self.pi = nn.Sequential(
            nn.Linear(input_dim, k),
            nn.Softmax(dim=1)
        )

        self.sigma = nn.Linear(input_dim, k * output_dim)
        self.mu = nn.Linear(input_dim, k * output_dim)

    def forward(self, x):
        pi = self.pi(x)
        sigma: Tensor = torch.exp(self.sigma(x)).view(-1, self.k, self.output_dim)
        mu: Tensor = self.mu(x).view(-1, self.k, self.output_dim)

        return pi, sigma, mu
'''

# markkwang/MDN src/loss.py at a83a907, but for its imports
MDN_LOSS = r'''
def mdn_loss(pi, sigma, mu, target) -> Tensor:

    expanded_target: Tensor = target.unsqueeze(1).expand_as(mu) # (batch_size, k, output_dim)

    gaussian_likelihood: Tensor = (1.0 / math.sqrt(2 * math.pi)) * torch.exp(-0.5 * ((expanded_target - mu) / sigma) ** 2) / sigma

    # for each c, calc the likelihood on the entire target
    component_likelihood: Tensor = torch.prod(gaussian_likelihood, dim=2)  # (batch_size x k)

    likelihood = torch.sum(pi * component_likelihood, dim=1) + 1e-8 # to avoid 0
    negative_log_likelihood = -torch.log(likelihood)

    return torch.mean(negative_log_likelihood)
'''

# markkwang/MDN src/utils.py at a83a907, but for its imports
MDN_UTILS = r'''
def sample_from_mdn(pi, sigma, mu) -> Tensor:
    
    batch_size, num_components, output_dim = sigma.shape

    # Sample component index for each batch item
    component_indices = Categorical(pi).sample()  # (batch_size,)

    # Gather the selected component's mu and sigma
    mu_selected = mu[torch.arange(batch_size), component_indices]         # (batch_size, output_dim)
    sigma_selected = sigma[torch.arange(batch_size), component_indices]   # (batch_size, output_dim)

    # Sample from standard normal
    eps = torch.randn_like(sigma_selected)  # (batch_size, output_dim)
    samples = mu_selected + sigma_selected * eps  # (batch_size, output_dim)

    return samples
'''

# markkwang/MDN src/data.py at a83a907: its split helper and the parabola data (the other
# generators need sklearn's make_moons/StandardScaler); ``train_test_split`` is a global
MDN_DATA = r'''
def to_tensor_split(X, y, test_size=0.2):
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size)
    return (
        torch.tensor(X_train, dtype=torch.float32),
        torch.tensor(X_test, dtype=torch.float32),
        torch.tensor(y_train, dtype=torch.float32),
        torch.tensor(y_test, dtype=torch.float32)
    )

def generate_parabola_data(n=2000, low=-2, high=2):
    x = np.random.uniform(low, high, size=(n, 1))
    y = np.array([[xi[0] ** 2 if np.random.rand() < 0.5 else -xi[0] ** 2] for xi in x])
    return to_tensor_split(x, y)
'''

# markkwang/MDN src/train_2d.py at a83a907 up to its evaluation (the plotting after it needs
# matplotlib): the hyper-parameters, the data switch and ``epochs`` are globals the test sets
# (it has ``epochs = 2000`` and ``generate_moons_like_data()``)
MDN_TRAIN = r'''
# Model
model = nn.Sequential(
    nn.Linear(input_dim, hidden_dim),
    nn.ReLU(),
    MDN(hidden_dim, output_dim, k=2)
)
optimizer = optim.Adam(model.parameters(), lr=lr)

# Training loop
print("Training...")
for epoch in range(epochs):
    model.train()
    model.zero_grad()
    pi, sigma, mu = model(x_train)
    loss = mdn_loss(pi, sigma, mu, y_train)
    loss.backward()
    optimizer.step()

    if epoch % 500 == 0:
        print(f"Epoch {epoch} - Loss: {loss.item():.4f}")
print("Training completed.")

# Evaluation
model.eval()
with torch.no_grad():
    pi_test, sigma_test, mu_test = model(x_test)
    y_sample = sample_from_mdn(pi_test, sigma_test, mu_test).numpy()
'''

# betray12138/Basic-RL-Algorithms (no license file) model/network.py at 540c85a, but for its
# imports (``dist`` is ``torch.distributions``)
RL_NETWORK = r'''
class Policy(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int, max_action: float, layer_size: int, hidden_size: int, is_continuous) -> None:
        super(Policy, self).__init__()
        self.obs_dim = obs_dim
        self.action_dim = action_dim
        self.layer_size = layer_size
        self.hidden_size = hidden_size
        self.max_action = max_action
        self.is_continuous = is_continuous  
        self.policy = nn.Sequential(
            nn.Linear(self.obs_dim, self.hidden_size)
        )
        self.net_block = nn.Sequential(
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size)
        )
        for _ in range(self.layer_size - 1):
            self.policy.extend(self.net_block)
        
        self.mean = nn.Linear(hidden_size, self.action_dim)
        if self.is_continuous:
            self.log_var = nn.Parameter(torch.zeros(1, action_dim), requires_grad=True)
        
        
    def forward(self, state: torch.FloatTensor) -> (torch.Tensor, torch.Tensor):
        # state is tensor 
        # the dimension is batch_size * state_dim
        policy_output = self.policy(state)
        mean = self.mean(policy_output)
        if self.is_continuous:
            action_mean = torch.tanh(mean) * self.max_action
            prob_dist = dist.Normal(action_mean, self.log_var.expand_as(mean).exp().sqrt())
            return action_mean, prob_dist
        else:
            action_mean = F.softmax(mean, dim = 1)
            prob_dist = dist.Categorical(action_mean)  
            return action_mean, prob_dist
        
        
        
class QValue(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int, layer_size: int, hidden_size: int):
        super(QValue, self).__init__()
        self.input_dim = obs_dim + action_dim
        self.out_dim = 1
        self.layer_size = layer_size
        self.hidden_size = hidden_size
        self.net_block = nn.Sequential(
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size)
        )
        self.qf = nn.Sequential(
            nn.Linear(self.input_dim, self.hidden_size)
        )
        for _ in range(self.layer_size - 1):
            self.qf.extend(self.net_block)
        self.qf.append(nn.Linear(hidden_size, 1))
        
    def forward(self, state: torch.FloatTensor, action: torch.FloatTensor) -> torch.Tensor:
        input = torch.cat((state, action), dim=-1)
        return self.qf(input)
    
    
class VValue(nn.Module):
    def __init__(self, obs_dim: int, layer_size: int, hidden_size: int):
        super(VValue, self).__init__()
        self.input_dim = obs_dim
        self.out_dim = 1
        self.layer_size = layer_size
        self.hidden_size = hidden_size
        self.net_block = nn.Sequential(
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size)
        )
        self.vf = nn.Sequential(
            nn.Linear(self.input_dim, self.hidden_size)
        )
        for _ in range(self.layer_size - 1):
            self.vf.extend(self.net_block)
        self.vf.append(nn.Linear(hidden_size, 1))
        
    def forward(self, state: torch.FloatTensor) -> torch.Tensor:
        return self.vf(state)
'''

# betray12138/Basic-RL-Algorithms replay/replay.py at 12677dd, its ``ReplayBuffer`` (the
# prioritized ``PER`` after it needs util/segment_tree.py, which these programs do not use)
RL_REPLAY = r'''
class ReplayBuffer(object):
    def __init__(self, state_dim: int, action_dim: int, max_size: int):
        self.max_size = max_size
        self.state_dim = state_dim
        self.action_dim = action_dim
        self.clear()

    def store(self, s: np.ndarray, a: np.ndarray, r: np.ndarray, s_: np.ndarray, dw: np.ndarray):
        self.state[self.count] = s.flatten()
        self.action[self.count] = a.flatten()
        self.reward[self.count] = r.flatten()
        self.next_state[self.count] = s_.flatten()
        self.terminal[self.count] = dw.flatten()
        self.count = (self.count + 1) % self.max_size  
        self.size = min(self.size + 1, self.max_size)  
        
    def sample_with_index_to_tensor(self, index: np.ndarray, device: str):
        batch_s = torch.FloatTensor(self.state[index]).to(device)
        batch_a = torch.FloatTensor(self.action[index]).to(device)
        batch_r = torch.FloatTensor(self.reward[index]).to(device)
        batch_s_ = torch.FloatTensor(self.next_state[index]).to(device)
        batch_dw = torch.FloatTensor(self.terminal[index]).to(device)
        return batch_s, batch_a, batch_r, batch_s_, batch_dw

    def sample_to_tensor(self, batch_size: int, device: str):
        index = np.random.choice(self.size, size=batch_size)  # Randomly sampling
        return self.__sample_with_index_to_tensor(index, device)
    
    def sample_all_to_tensor(self, device: str):
        index = np.array([i for i in range(self.size)])
        batch_s = torch.FloatTensor(self.state[index]).to(device)
        batch_a = torch.FloatTensor(self.action[index]).to(device)
        batch_r = torch.FloatTensor(self.reward[index]).to(device)
        batch_s_ = torch.FloatTensor(self.next_state[index]).to(device)
        batch_dw = torch.FloatTensor(self.terminal[index]).to(device)

        return batch_s, batch_a, batch_r, batch_s_, batch_dw
    
    def clear(self):
        self.count = 0
        self.size = 0
        self.state = np.zeros((self.max_size, self.state_dim))
        self.action = np.zeros((self.max_size, self.action_dim))
        self.reward = np.zeros((self.max_size, 1))
        self.next_state = np.zeros((self.max_size, self.state_dim))
        self.terminal = np.zeros((self.max_size, 1))
'''

# betray12138/Basic-RL-Algorithms algo/a2c_discrete.py at 4844ace, but for its imports (``Net``
# is the network module above; ``SummaryWriter``, ``RewardScaling``, ``Normalization`` and
# ``ReplayBuffer`` are globals); its comments in Chinese are kept
A2C_DISCRETE = r'''
class A2C_Discrete(object):
    def __init__(self, device: str, state_dim: int, action_dim: int,
                 gamma: float, lr_policy: float, lr_critic: float,
                 layer_size: int, hidden_size: int, max_grad_norm: float, 
                 max_replay_size: int, rewardScaling: RewardScaling = None, stateNorm: Normalization = None) -> None:
        super(A2C_Discrete, self).__init__()
        self.state_dim = state_dim
        self.action_dim = action_dim
        self.gamma = gamma
        self.lr_policy = lr_policy
        self.lr_critic = lr_critic
        self.layer_size = layer_size
        self.hidden_size = hidden_size
        self.device = device
        self.max_grad_norm = max_grad_norm
        self.rewardScaling = rewardScaling
        self.stateNorm = stateNorm
        self.replay = ReplayBuffer(state_dim, 1, max_replay_size)   # 离散空间动作被reshape成1
        
        self.actor = Net.Policy(obs_dim=state_dim,
                                action_dim=action_dim,
                                max_action = None,
                                layer_size=layer_size,
                                hidden_size=hidden_size,
                                is_continuous=False).to(device)
        
        self.critic = Net.VValue(obs_dim=state_dim,
                                 layer_size=layer_size,
                                 hidden_size=hidden_size).to(device)
        
        self.actor_optimizer = optim.Adam(self.actor.parameters(), lr=self.lr_policy)
        self.critic_optimizer = optim.Adam(self.critic.parameters(), lr=self.lr_critic)
    
    def __train(self):
        self.actor.train()
        self.critic.train()
    
    def __eval(self):
        self.actor.eval()
        self.critic.eval()
        
    def update(self):
        state, action, reward, next_state, terminal = self.replay.sample_all_to_tensor(self.device)
        self.__train()
        
        # compute necessary value
        v_s = self.critic(state)
        
        with torch.no_grad():
            v_s_ = self.critic(next_state)
            td_target = reward + self.gamma * v_s_ * (1 - terminal)
        
        # 更新actor 计算actor损失 
        # actor_loss = - advantage * \log \pi(a|s)
        # actor_loss = - (r + \gamma V(s') - V(s)) * \log \pi(a|s)
        _, actor_dist = self.actor(state)
        log_prob = actor_dist.log_prob(action)
        actor_loss = - ((td_target - v_s).detach() * log_prob).mean()    # .detach()用于分离梯度
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
        
        self.actor_optimizer.step()
        
        # 更新critic 计算critic损失
        critic_loss = ((td_target - v_s) ** 2).mean()
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)

        self.critic_optimizer.step()
        
    
    def select_action(self, state: np.ndarray, is_evaluation=False) -> (np.ndarray, torch.FloatTensor):
        # 返回action 和 log_prob
        # 此处log_prob需要保持梯度，否则无法回传
        with torch.no_grad():
            state = torch.FloatTensor(state).to(self.device).reshape(-1, self.state_dim)
            mean, action_dist = self.actor(state)
            action = action_dist.sample()
            if is_evaluation:
                return np.array([np.argmax(mean.detach().cpu().numpy())])
            return action.cpu().numpy()
    
    def evaluation(self, env, writter: SummaryWriter, steps=None):
        self.__eval()
        episode_reward = 0
        state = env.reset() # 此时state是numpy
        if self.stateNorm is not None:
            state = self.stateNorm.get_and_upate(state)
        done = False
        truncated = False
        while not done and not truncated:
            action = self.select_action(state, True)
            next_state, reward, done, truncated = env.step(action)
            if self.stateNorm is not None:
                next_state = self.stateNorm.get_and_upate(next_state.flatten())
            episode_reward += reward
            state = next_state.flatten()
        if steps:
            writter.add_scalar("evaluation/return", episode_reward, steps)
        return episode_reward
    
    def save_model(self, path: str, steps: int):
        # 此处path传入目录 以 /结尾
        torch.save(self.actor.state_dict(), path + "actor_" + str(steps) + ".pth")
        torch.save(self.critic.state_dict(), path + "critic_" + str(steps) + ".pth")
        
            
    def train(self, env, env_test, writter: SummaryWriter, max_train_steps: int, 
              save_interval: int, log_interval: int, saving_path: str):
        cur_step = 0
        train_episodes = 0
        while cur_step < max_train_steps:
            train_episodes += 1
            state = env.reset()
            if self.stateNorm is not None:
                state = self.stateNorm.get_and_upate(state)
            done = False
            truncated = False
            episode_reward = 0
            if self.rewardScaling:
                self.rewardScaling.reset()
            while not done and not truncated:
                cur_step += 1
                action = self.select_action(state)
                next_state, reward, done, truncated = env.step(action)
                if self.stateNorm is not None:
                    next_state = self.stateNorm.get_and_upate(next_state.flatten())
                episode_reward += reward
                if self.rewardScaling:
                    reward = self.rewardScaling.get_and_update(reward)
                self.replay.store(s=state,
                                  a=action,
                                  r=np.array([reward]),
                                  s_=next_state,
                                  dw=np.array([done]))
                state = next_state.flatten()
                self.update()
                self.replay.clear()
            print("Episode: " + str(train_episodes) + " training return: " + str(episode_reward))
            writter.add_scalar("training/return", episode_reward, cur_step)
            
            if train_episodes % log_interval == 0:
                self.evaluation(env_test, writter, cur_step)
            
            if train_episodes % save_interval == 0:
                self.save_model(saving_path, cur_step)
'''

# betray12138/Basic-RL-Algorithms algo/a2c_continuous.py at 4844ace, but for its imports (as above)
A2C_CONTINUOUS = r'''
class A2C_Continuous(object):
    def __init__(self, device: str, state_dim: int, action_dim: int, max_action: float,
                 gamma: float, lr_policy: float, lr_critic: float,
                 layer_size: int, hidden_size: int, max_grad_norm: float, 
                 max_replay_size: int) -> None:
        super(A2C_Continuous, self).__init__()
        self.state_dim = state_dim
        self.action_dim = action_dim
        self.max_action = max_action
        self.gamma = gamma
        self.lr_policy = lr_policy
        self.lr_critic = lr_critic
        self.layer_size = layer_size
        self.hidden_size = hidden_size
        self.device = device
        self.max_grad_norm = max_grad_norm
        self.replay = ReplayBuffer(state_dim, action_dim, max_replay_size)
        
        self.actor = Net.Policy(obs_dim=state_dim,
                                action_dim=action_dim,
                                max_action = max_action,
                                layer_size=layer_size,
                                hidden_size=hidden_size,
                                is_continuous=True).to(device)
        
        self.critic = Net.VValue(obs_dim=state_dim,
                                 layer_size=layer_size,
                                 hidden_size=hidden_size).to(device)
        
        self.actor_optimizer = optim.Adam(self.actor.parameters(), lr=self.lr_policy)
        self.critic_optimizer = optim.Adam(self.critic.parameters(), lr=self.lr_critic)
    
    def __train(self):
        self.actor.train()
        self.critic.train()
    
    def __eval(self):
        self.actor.eval()
        self.critic.eval()
        
    def update(self):
        state, action, reward, next_state, terminal = self.replay.sample_all_to_tensor(self.device)
        self.__train()
        
        # compute necessary value
        v_s = self.critic(state)
        
        with torch.no_grad():
            v_s_ = self.critic(next_state)
            td_target = reward + self.gamma * v_s_ * (1 - terminal)
        
        # update the actor
        # actor_loss = - advantage * \log \pi(a|s)
        # actor_loss = - (r + \gamma V(s') - V(s)) * \log \pi(a|s)
        _, actor_dist = self.actor(state)
        log_prob = actor_dist.log_prob(action)
        actor_loss = - ((td_target - v_s).detach() * log_prob).mean()    # .detach() used to cancel the gradient
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
        
        self.actor_optimizer.step()
        
        # update the critic
        critic_loss = ((td_target - v_s) ** 2).mean()
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)

        self.critic_optimizer.step()
        
    
    def select_action(self, state: np.ndarray, is_evaluation=False) -> (np.ndarray, torch.FloatTensor):
        with torch.no_grad():
            state = torch.FloatTensor(state).to(self.device).reshape(-1, self.state_dim)
            _, action_dist = self.actor(state)
            action = action_dist.sample()
            action = torch.clamp(action, -self.max_action, self.max_action)
            if is_evaluation:
                return action_dist.mean.detach().cpu().numpy()
            return action.cpu().numpy()
    
    def evaluation(self, env, writter: SummaryWriter, steps=None):
        self.__eval()
        episode_reward = 0
        state = env.reset()
        done = False
        truncated = False
        while not done and not truncated:
            action = self.select_action(state, True)
            next_state, reward, done, truncated = env.step(action)
            episode_reward += reward
            state = next_state.flatten()
        if steps:
            writter.add_scalar("evaluation/return", episode_reward, steps)
        return episode_reward
    
    def save_model(self, path: str, steps: int):
        # path denotes the directory location end with /
        torch.save(self.actor.state_dict(), path + "actor_" + str(steps) + ".pth")
        torch.save(self.critic.state_dict(), path + "critic_" + str(steps) + ".pth")
        
            
    def train(self, env, env_test, writter: SummaryWriter, max_train_steps: int, 
              save_interval: int, log_interval: int, saving_path: str):
        cur_step = 0
        train_episodes = 0
        while cur_step < max_train_steps:
            train_episodes += 1
            state = env.reset()
            done = False
            truncated = False
            episode_reward = 0
            while not done and not truncated:
                cur_step += 1
                action = self.select_action(state)
                next_state, reward, done, truncated = env.step(action)
                episode_reward += reward
                self.replay.store(s=state,
                                  a=action,
                                  r=np.array([reward]),
                                  s_=next_state,
                                  dw=np.array([done]))
                state = next_state.flatten()
                self.update()
                self.replay.clear()
            print("Episode: " + str(train_episodes) + " training return: " + str(episode_reward))
            writter.add_scalar("training/return", episode_reward, cur_step)
            
            if train_episodes % log_interval == 0:
                self.evaluation(env_test, writter, cur_step)
            
            if train_episodes % save_interval == 0:
                self.save_model(saving_path, cur_step)
'''

# sair-lab/LGL (BSD-3-Clause, the notice in its scripts) models/sage.py at d5fbf74, but for its
# imports and the quotes of ``SAGE``'s docstring (this source is a ''' string): GraphSAGE on
# per-node neighbour lists, and its lifelong variant with a memory
SAGE_LGL = r'''
class SAGE(nn.Module):
    """
    GraphSAGE: Inductive Representation Learning on Large Graphs, NIPS 2017
    https://arxiv.org/pdf/1706.02216.pdf
    """
    def __init__(self, feat_len, num_class, hidden=[128,128], dropout=[0,0], aggr='gcn', k=1):
        super().__init__()
        aggrs = {'pool':PoolAggregator, 'mean':MeanAggregator, 'gcn':GCNAggregator}
        Aggregator = aggrs[aggr]
        self.tran1 = Aggregator(feat_len, hidden[0])
        self.acvt1 = nn.Sequential(nn.BatchNorm1d(1), nn.ReLU())
        self.tran2 = Aggregator(hidden[0], hidden[1])
        self.acvt2 = nn.Sequential(nn.BatchNorm1d(1), nn.ReLU())
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(hidden[1], num_class))

    def forward(self, x, neighbor):
        ## the neighbor should be (N,n,c,f)
        x, neighbor = self.tran1(x, neighbor)
        x, neighbor = self.acvt1(x), [self.acvt1(n) for n in neighbor]
        x, neighbor = self.tran2(x, neighbor)
        return self.classifier(self.acvt2(x))


class GCNAggregator(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.tran = nn.Linear(in_features, out_features, False)
    
    def forward(self, x, neighbor):
        f = torch.cat([n.mean(dim=0, keepdim=True) for n in neighbor])
        x = self.tran(x+f)
        neighbor = [self.tran(n) for n in neighbor]
        return x, neighbor


class MeanAggregator(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.tranx = nn.Linear(in_features, out_features, False)
        self.trann = nn.Linear(in_features, out_features, False)

    def forward(self, x, neighbor):
        f = torch.cat([n.mean(dim=0, keepdim=True) for n in neighbor])
        x = self.tranx(x) + self.trann(f)
        neighbor = [self.tranx(n) for n in neighbor]
        return x, neighbor


class PoolAggregator(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.tran = nn.Linear(in_features, out_features, True)

    def forward(self, x, neighbor):
        f = [self.tran(torch.cat([x[i:i+1], n])) for i, n in enumerate(neighbor)]
        x = torch.cat([x.max(dim=0, keepdim=True)[0] for x in f])
        neighbor = [self.tran(n).max(dim=0, keepdim=True)[0] for n in neighbor]
        return x, neighbor


class LifelongSAGE(SAGE):
    def __init__(self, args, feat_len, num_class, k=1):
        super().__init__(feat_len, num_class)
        self.args = args
        self.register_buffer('adj', torch.zeros(1, feat_len, feat_len))
        self.register_buffer('inputs', torch.Tensor(0, 1, feat_len))
        self.register_buffer('targets', torch.LongTensor(0))
        self.neighbor = []
        self.sample_viewed = 0
        self.memory_order = torch.LongTensor()
        self.memory_size = self.args.memory_size
        self.criterion = nn.CrossEntropyLoss()
        exec('self.optimizer = torch.optim.%s(self.parameters(), lr=%f)'%(args.optm, args.lr))

    def observe(self, inputs, targets, neighbor, reply=True):
        self.train()
        for i in range(self.args.iteration):
            self.optimizer.zero_grad()
            outputs = self.forward(inputs, neighbor)
            loss = self.criterion(outputs, targets)
            loss.backward()
            self.optimizer.step()

        self.sample(inputs, targets, neighbor)
        if reply:
            L = torch.randperm(self.inputs.size(0))
            minibatches = [L[n:n+self.args.batch_size] for n in range(0, len(L), self.args.batch_size)]
            for index in minibatches:
                self.optimizer.zero_grad()
                inputs, targets, neighbor = self.inputs[index], self.targets[index], [self.neighbor[i] for i in index.tolist()]
                outputs = self.forward(inputs, neighbor)
                loss = self.criterion(outputs, targets)
                loss.backward()
                self.optimizer.step()

    @torch.no_grad()
    def uniform_sample(self, inputs, targets, neighbor):
        self.inputs = torch.cat((self.inputs, inputs), dim=0)
        self.targets = torch.cat((self.targets, targets), dim=0)
        self.neighbor += neighbor

        if self.inputs.size(0) > self.args.memory_size:
            idx = torch.randperm(self.inputs.size(0))[:self.args.memory_size]
            self.inputs, self.targets = self.inputs[idx], self.targets[idx]
            self.neighbor = [self.neighbor[i] for i in idx.tolist()]

    @torch.no_grad()
    def sample(self, inputs, targets, neighbor):
        self.sample_viewed += inputs.size(0)
        self.memory_order += inputs.size(0)# increase the order 

        self.targets = torch.cat((self.targets, targets), dim=0)
        self.inputs = torch.cat((self.inputs,inputs), dim = 0)
        self.memory_order = torch.cat((self.memory_order, torch.LongTensor(list(range(inputs.size()[0]-1,-1,-1)))), dim = 0)# for debug
        self.neighbor += neighbor

        node_len = int(self.inputs.size(0))
        ext_memory = node_len - self.memory_size
        if ext_memory > 0:
            mask = torch.zeros(node_len,dtype = bool) # mask inputs order targets and neighbor
            reserve = self.memory_size # reserved memrory to be stored
            seg = np.append(np.arange(0,self.sample_viewed,self.sample_viewed/ext_memory),self.sample_viewed)
            for i in range(len(seg)-2,-1,-1):
                left = self.memory_order.ge(np.ceil(seg[i]))*self.memory_order.lt(np.floor(seg[i+1]))
                leftindex = left.nonzero()
                if leftindex.size()[0] > reserve/(i+1): # the quote is not enough, need to be reduced
                    leftindex = leftindex[torch.randperm(leftindex.size()[0])[:int(reserve/(i+1))]] # reserve the quote
                    mask[leftindex] = True
                else:
                    mask[leftindex] = True # the quote is enough
                reserve -= leftindex.size()[0] # deducte the quote
            self.inputs = self.inputs[mask]
            self.targets = self.targets[mask]
            self.memory_order = self.memory_order[mask]
            self.neighbor = [self.neighbor[i] for i in mask.nonzero()]
'''

# sair-lab/LGL non_lifelong.py at 0c96b61: ``performance`` and ``train`` (its ``__main__`` block
# loads Cora through DGL); ``args``, ``tqdm`` and ``copy`` are globals
LGL_TRAIN = r'''
def performance(loader, net, device):
    net.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for batch_idx, (inputs, targets, neighbor) in enumerate(tqdm.tqdm(loader)):
            if torch.cuda.is_available():
                inputs, targets = inputs.to(device), targets.to(device)
                if not args.k:
                    neighbor = [element.to(device) for element in neighbor]
                else:
                    neighbor = [[element.to(device) for element in item]for item in neighbor]

            outputs = net(inputs, neighbor)
            _, predicted = torch.max(outputs.data, 1)
            total += targets.size(0)
            correct += predicted.eq(targets.data).cpu().sum().item()
        acc = correct/total
    return acc

def train(loader, net, criterion, optimizer, device):
    net.train()
    train_loss, correct, total = 0, 0, 0
    for batch_idx, (inputs, targets, neighbor) in enumerate(tqdm.tqdm(loader)):
        inputs, targets = inputs.to(device), targets.to(device)
        if not args.k:
            neighbor = [element.to(device) for element in neighbor]
        else:
            neighbor = [[element.to(device) for element in item]for item in neighbor]

        optimizer.zero_grad()
        outputs = net(inputs, neighbor)

        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()

        train_loss += loss.item()
        _, predicted = torch.max(outputs.data, 1)
        total += targets.size(0)
        correct += predicted.eq(targets.data).cpu().sum().item()

    return (train_loss/(batch_idx+1), correct/total)
'''

# sair-lab/LGL datasets/continuum.py at 1c35b9c: the ``collate_fn`` of its loaders
LGL_COLLATE = r'''
def graph_collate(batch):
    feature = torch.stack([item[0] for item in batch], dim=0)
    labels = torch.stack([item[1] for item in batch], dim=0)
    neighbor = [item[2] for item in batch]
    return [feature, labels, neighbor]
'''

# todor-markov/deep-rl-algorithms (MIT) deeprl/models.py at ca636c0, but for its imports
# (``partial``, ``np``, ``th`` for torch, ``distr`` for torch.distributions, ``nn`` and ``gym``
# are globals)
PPO_MODELS = r'''
class BasicActorCritic(nn.Module):

    def __init__(self, ac_space, pi_module, pi_emb_size,
                 v_module=None, v_emb_size=None):
        super(BasicActorCritic, self).__init__()
        self.pi_module = pi_module
        self.v_module = v_module if v_module is not None else pi_module

        if isinstance(ac_space, gym.spaces.Box):
            assert len(ac_space.shape) == 1
            n_acs = ac_space.shape[0]
            distr_scale = nn.Parameter(0.5 * th.ones(ac_space.shape[0]))
            self.ac_distr_params = nn.ParameterDict({'scale': distr_scale})
            self.ac_distr = partial(distr.normal.Normal, scale=distr_scale)
        elif isinstance(ac_space, gym.spaces.Discrete):
            n_acs = ac_space.n
            self.ac_distr = partial(distr.categorical.Categorical, None)

        self.pi_head = nn.Linear(pi_emb_size, n_acs)
        v_emb_size = v_emb_size or pi_emb_size
        self.v_head = nn.Linear(v_emb_size, 1)

    def forward(self, obs):
        obs = obs if type(obs) == th.Tensor else th.tensor(obs).float()
        pi_emb = self.pi_module(obs)
        action_distribution = self.ac_distr(self.pi_head(pi_emb))
        v_emb = self.v_module(obs)
        vpred = self.v_head(v_emb)

        return action_distribution, vpred


def mlp_model(env, layer_sizes=[64, 32]):
    obs_dim = np.prod(env.observation_space.shape)

    policy_layers = []
    value_layers = []
    for i, units in enumerate(layer_sizes):
        if i == 0:
            policy_layers.extend([nn.Flatten(), nn.Linear(obs_dim, units), nn.Tanh()])
            value_layers.extend([nn.Flatten(), nn.Linear(obs_dim, units), nn.Tanh()])
        else:
            policy_layers.extend([nn.Linear(layer_sizes[i-1], units), nn.Tanh()])
            value_layers.extend([nn.Linear(layer_sizes[i-1], units), nn.Tanh()])

    policy_module = nn.Sequential(*policy_layers)
    value_module = nn.Sequential(*value_layers)

    return BasicActorCritic(env.action_space, pi_module=policy_module, pi_emb_size=layer_sizes[-1],
                            v_module=value_module, v_emb_size=layer_sizes[-1])
'''

# todor-markov/deep-rl-algorithms deeprl/rollouts.py at ca636c0, but for its import (``th``)
PPO_ROLLOUTS = r'''
class RolloutGenerator(object):

    def __init__(self, model, env, gamma=0.99, lam=0.95):
        self.model = model
        self.env = env
        self.ob = env.reset()
        self.gamma = gamma
        self.lam = lam

        ac_d, vpred = self.model.forward(self.ob)
        ac = ac_d.sample()
        ac_logp = ac_d.log_prob(ac).unsqueeze(-1)
        self.reduce_acd_dims = [i for i in range(1, ac_logp.ndim)]

    def generate_rollout(self, rollout_len, normalize_advantage=True):
        obs = [self.ob]
        rews = []
        dones = []
        acs = []
        ac_logps = []
        vpreds = []
        epinfos = []

        with th.no_grad():
            for i in range(rollout_len):
                ac_d, vpred = self.model.forward(self.ob)
                ac = ac_d.sample()

                # we do the below summation so that we get the total logprob of the action, rather than
                # an array of the logprobs of subcomponents of the action
                # E.g. if the action is to apply force to several motors, this will give us the overall log
                # prob as opposed to an array of the log probs of the forces applied to each motor
                ac_logp = ac_d.log_prob(ac).unsqueeze(-1).sum(dim=self.reduce_acd_dims)

                self.ob, rew, done, infos = self.env.step(ac.numpy())

                obs.append(self.ob)
                rews.append(rew)
                dones.append(done)
                acs.append(ac)
                ac_logps.append(ac_logp)
                vpreds.append(vpred)
                for info in infos:
                    maybeepinfo = info.get('episode')
                    if maybeepinfo:
                        epinfos.append(maybeepinfo)

            _, last_vpred = self.model.forward(self.ob)
            vpreds.append(last_vpred)

        obs = th.as_tensor(obs, dtype=th.float)
        rews = th.as_tensor(rews, dtype=th.float)
        dones = th.as_tensor(dones, dtype=th.float)
        acs = th.stack(acs)
        ac_logps = th.stack(ac_logps)
        vpreds = th.stack(vpreds)
        advs = compute_gae(rews, vpreds[:, :, 0], dones, self.gamma, self.lam)
        vtargs = advs + vpreds[:-1, :, 0]

        obs, rews, dones, acs, ac_logps, vpreds, advs, vtargs = map(
            _sf01, (obs[:-1], rews, dones, acs, ac_logps, vpreds[:-1], advs, vtargs))

        if normalize_advantage:
            advs = (advs - advs.mean()) / advs.std()

        return obs, rews, dones, acs, ac_logps, vpreds, advs, vtargs, epinfos


def compute_gae(rews, vpreds, dones, gamma, lam):
    advs = th.zeros(vpreds.shape)
    for i in reversed(range(rews.shape[0])):
        advs[i] = ((-vpreds[i] + rews[i] + gamma * (1 - dones[i]) * vpreds[i+1]) +
                   gamma * lam * (1 - dones[i]) * advs[i+1])

    return advs[:-1]


def _sf01(tensor):
    s = tensor.shape
    return tensor.transpose(0, 1).reshape(s[0] * s[1], *s[2:])
'''

# todor-markov/deep-rl-algorithms deeprl/ppo.py at ca636c0, but for its import (``th``)
PPO_CLIP = r'''
def train_ppo_clip(model, optimizer, obs, acs, advs, vtargs, old_ac_logps,
                   clip_eps=0.2, vfcoef=0.5, entcoef=0.01):

    pd, vpreds = model.forward(obs)
    ac_logps = pd.log_prob(acs).unsqueeze(-1)
    entropy = pd.entropy().unsqueeze(-1)
    reduce_acd_dims = [i for i in range(1, ac_logps.ndim)]
    ac_logps = ac_logps.sum(dim=reduce_acd_dims)
    entropy = entropy.sum(dim=reduce_acd_dims).mean()
    approx_kl = (old_ac_logps - ac_logps).mean()

    ac_logp_frac = th.exp(ac_logps - old_ac_logps)
    clipped_ac_logp_frac = th.clamp(ac_logp_frac, 1 - clip_eps, 1 + clip_eps)

    policy_loss = th.max(ac_logp_frac * -advs, clipped_ac_logp_frac * -advs).mean()
    value_loss = vfcoef * ((vpreds[:, 0] - vtargs) ** 2).mean()
    entropy_loss = -entropy * entcoef
    loss = policy_loss + value_loss + entropy_loss

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    train_info_dict = dict(loss_policy=policy_loss,
                           loss_value=value_loss,
                           loss_entropy=entropy_loss,
                           entropy=entropy,
                           kl_divergence=approx_kl)

    return train_info_dict
'''

# kperkins411/Pytorch_combine_embeddings_and_continuous_variables (no license file)
# multiple_inputs_embeddings_cats_oneatatime.py at 1bce1c1, but for its imports (``torch`` and
# ``np`` are globals) and two sizes changed as noted in place: an embedding of the day
# concatenated with two continuous inputs, trained one row at a time
EMBED_ONE_AT_A_TIME = r'''
torch.manual_seed(1)
np.random.seed(1)

class TwoLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out, embedding_num, embedding_dim):
        """
        In the constructor we instantiate two nn.Linear modules and assign them as
        member variables.
        """
        super(TwoLayerNet, self).__init__()
        self.embeddings = torch.nn.Embedding(embedding_num, embedding_dim)

        #7 inputs because x,y and 5 embeddings
        self.linear1 = torch.nn.Linear(7, H)
        self.linear2 = torch.nn.Linear(H, D_out)


    def forward(self, x,y,day):
        """
        In the forward function we accept a Tensor of input data and we must return
        a Tensor of output data. We can use Modules defined in the constructor as
        well as arbitrary (differentiable) operations on Tensors.
        """
        #get embeds
        embeds = self.embeddings(day).view((1, -1)).squeeze()

        # combine x, y and embeds
        xc = torch.cat((x,y),0)
        xce = torch.cat((xc,embeds),0)

        h_relu = self.linear1(xce).clamp(min=0)
        y_pred = self.linear2(h_relu)
        return y_pred


# dtype = torch.float32
device = torch.device("cpu")
# torch.cuda.current_device()
# dtype = torch.device("cuda:0") # Uncomment this to run on GPU

# N is batch size; D_in is input dimension;
# H is hidden dimension; D_out is output dimension.
N, D_in1,D_in2, H, D_out = 6, 600,300, 100, 1  # (N = 64 in the repository)

# Create random input and output data
x1 = [np.random.randn() for i in range(N)]
x2 = [np.random.randn() for i in range(N)]
y = [np.random.randn() for i in range(N)]

# create some categorical data, days
days = ["Sun","mon","tues","wed","thurs","fri","sat"]
days = list(set(days) )   #how many in category?
num_days = len(days)

cat_days =  [ days[np.random.randint(0,7)] for j in range(0,N)]

#create lookup table
days_to_idx = {day:i for i, day in enumerate(days)}

#convert cat_days to associated indices in days_to_idx
cat_days_index = [days_to_idx[day] for day in cat_days]

model = TwoLayerNet(D_in1,H, D_out, embedding_num = num_days,embedding_dim = 5 )

# The nn package also contains definitions of popular loss functions; in this
# case we will use Mean Squared Error (MSE) as our loss function.
loss_fn = torch.nn.MSELoss(size_average=False)

# Use the optim package to define an Optimizer that will update the weights of
# the model for us. Here we will use Adam; the optim package contains many other
# optimization algoriths. The first argument to the Adam constructor tells the
# optimizer which Tensors it should update.
learning_rate = 4e-3
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

for epoch in range(2):  # (range(1000) in the repository)
    total_loss = torch.Tensor([0])
    for j in range(N):
        # Prepare the inputs to be passed to the model (i.e, turn the days
        # into integer indices and wrap them in variables)

        day = cat_days[j]
        context_idx = torch.tensor([days_to_idx[day]], dtype=torch.long)
        x_1 = torch.tensor(x1[j]).unsqueeze(0)
        x_2 = torch.tensor(x2[j]).unsqueeze(0)

        # Forward pass: compute predicted y by passing x to the model. Module objects
        # override the __call__ operator so you can call them like functions. When
        # doing so you pass a Tensor of input data to the Module and it produces
        # a Tensor of output data.
        y_pred = model(x_1,x_2,context_idx)

        # Compute and print loss. Loss is a Tensor of shape (), and loss.item()
        # is a Python number giving its value.
        y_1 = torch.tensor(y[j], dtype=torch.float)
        loss = loss_fn(y_pred,y_1)

        # Get the Python number from a 1-element Tensor by calling tensor.item()
        total_loss += loss.item()
        # print(model.embeddings._parameters['weight'][0][:5])

        # Zero gradients, perform a backward pass, and update the weights.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("Epoch %s, loss =%s"%(epoch, str(total_loss)))
'''
