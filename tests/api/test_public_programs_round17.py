"""A seventeenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round16.py``, from repositories no earlier round used:

- sfujim/TD3: twin delayed DDPG (``copy.deepcopy`` target networks, a numpy replay buffer read
  through ``torch.FloatTensor``, ``torch.min`` of twin critics, delayed actor updates, Polyak
  averaging through ``.data.copy_``, ``save``/``load`` of module and optimizer state dicts);
- ritheshkumar95/pytorch-vqvae: two custom ``autograd.Function``s (a
  ``mark_non_differentiable`` nearest-code search with ``addmm(alpha=, beta=)``, a
  straight-through estimator whose backward reads ``ctx.needs_input_grad`` and builds the
  codebook gradient with ``index_add_``);
- vgsatorras/egnn: ``scatter_add_`` segment sums and means over ``new_full`` buffers, layers
  registered with ``add_module`` and found in ``self._modules``;
- ildoonet/pytorch-gradual-warmup-lr: an ``_LRScheduler`` subclass chained to
  ``CosineAnnealingLR`` and to ``ReduceLROnPlateau``;
- bentrevett/pytorch-seq2seq: additive attention over a bidirectional GRU, ``pad_sequence``
  collation, teacher forcing, ``clip_grad_norm_``, best-model save/load;
- utkuozbulak/pytorch-cnn-visualizations: guided backprop and integrated gradients through
  module ``register_backward_hook``s;
- gpleiss/efficient_densenet_pytorch: a closure under ``torch.utils.checkpoint`` (reentrant and
  not), BatchNorm statistics updated again by the recomputation;
- dragen1860/MAML-Pytorch: a functional Learner over ``ParameterList``s, first-order fast
  weights by ``torch.autograd.grad``, ``deepcopy`` fine-tuning, a printed ``extra_repr``;
- state-spaces/s4: S4D's complex kernel (``view_as_real``/``view_as_complex``, complex
  ``einsum``) and ``rfft``/``irfft`` convolution, AdamW groups from per-parameter dicts;
- higgsfield/RL-Adventure: double DQN with ``Variable(..., volatile=True)`` and 0-d tensor
  actions.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters
(``init_params``/``randn``) in place of downloads and random streams; where a program's own code
had to change, the comment above its test says how and why. A ``from torch... import`` inside a
program would import the real torch on the tracegrad side too, so such imports are written as
attribute lookups on the ``torch`` argument (or ``importlib`` imports of its submodules).
"""
import copy
import importlib
import os
import warnings

import numpy as np
import pytest

from parity import init_params, randn, run_both, seeded

torch = pytest.importorskip("torch")


# sfujim/TD3 TD3.py (Actor, Critic with its ``Q1`` method, the TD3 agent's ``train``/``save``/
# ``load``) and utils.py (ReplayBuffer: numpy arrays sampled with ``np.random.randint`` and turned
# into tensors by ``torch.FloatTensor(...).to(device)``). Widths 256 -> 16, state 3, action 2,
# batch 4, 4 training iterations (two actor updates). The target-policy noise is
# ``torch.randn_like(action)``; it is drawn from numpy's seeded stream instead (``randn_like`` is
# the one changed line). ``save``/``load`` write to a temporary directory and the reloaded agent
# is checked against the trained one.
def test_td3_twin_critics_delayed_policy(tmp_path):
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        class ReplayBuffer(object):
            def __init__(self, state_dim, action_dim, max_size=int(1e6)):
                self.max_size = max_size
                self.ptr = 0
                self.size = 0

                self.state = np.zeros((max_size, state_dim))
                self.action = np.zeros((max_size, action_dim))
                self.next_state = np.zeros((max_size, state_dim))
                self.reward = np.zeros((max_size, 1))
                self.not_done = np.zeros((max_size, 1))

                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

            def add(self, state, action, next_state, reward, done):
                self.state[self.ptr] = state
                self.action[self.ptr] = action
                self.next_state[self.ptr] = next_state
                self.reward[self.ptr] = reward
                self.not_done[self.ptr] = 1. - done

                self.ptr = (self.ptr + 1) % self.max_size
                self.size = min(self.size + 1, self.max_size)

            def sample(self, batch_size):
                ind = np.random.randint(0, self.size, size=batch_size)

                return (
                    torch.FloatTensor(self.state[ind]).to(self.device),
                    torch.FloatTensor(self.action[ind]).to(self.device),
                    torch.FloatTensor(self.next_state[ind]).to(self.device),
                    torch.FloatTensor(self.reward[ind]).to(self.device),
                    torch.FloatTensor(self.not_done[ind]).to(self.device)
                )

        class Actor(nn.Module):
            def __init__(self, state_dim, action_dim, max_action):
                super(Actor, self).__init__()

                self.l1 = nn.Linear(state_dim, 16)
                self.l2 = nn.Linear(16, 16)
                self.l3 = nn.Linear(16, action_dim)

                self.max_action = max_action

            def forward(self, state):
                a = F.relu(self.l1(state))
                a = F.relu(self.l2(a))
                return self.max_action * torch.tanh(self.l3(a))

        class Critic(nn.Module):
            def __init__(self, state_dim, action_dim):
                super(Critic, self).__init__()

                # Q1 architecture
                self.l1 = nn.Linear(state_dim + action_dim, 16)
                self.l2 = nn.Linear(16, 16)
                self.l3 = nn.Linear(16, 1)

                # Q2 architecture
                self.l4 = nn.Linear(state_dim + action_dim, 16)
                self.l5 = nn.Linear(16, 16)
                self.l6 = nn.Linear(16, 1)

            def forward(self, state, action):
                sa = torch.cat([state, action], 1)

                q1 = F.relu(self.l1(sa))
                q1 = F.relu(self.l2(q1))
                q1 = self.l3(q1)

                q2 = F.relu(self.l4(sa))
                q2 = F.relu(self.l5(q2))
                q2 = self.l6(q2)
                return q1, q2

            def Q1(self, state, action):
                sa = torch.cat([state, action], 1)

                q1 = F.relu(self.l1(sa))
                q1 = F.relu(self.l2(q1))
                q1 = self.l3(q1)
                return q1

        class TD3(object):
            def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005,
                         policy_noise=0.2, noise_clip=0.5, policy_freq=2):
                self.actor = init_params(torch, Actor(state_dim, action_dim, max_action), 1).to(device)
                self.actor_target = copy.deepcopy(self.actor)
                self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

                self.critic = init_params(torch, Critic(state_dim, action_dim), 2).to(device)
                self.critic_target = copy.deepcopy(self.critic)
                self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

                self.max_action = max_action
                self.discount = discount
                self.tau = tau
                self.policy_noise = policy_noise
                self.noise_clip = noise_clip
                self.policy_freq = policy_freq

                self.total_it = 0

            def select_action(self, state):
                state = torch.FloatTensor(state.reshape(1, -1)).to(device)
                return self.actor(state).cpu().data.numpy().flatten()

            def train(self, replay_buffer, batch_size=256):
                self.total_it += 1

                # Sample replay buffer
                state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)

                with torch.no_grad():
                    # Select action according to policy and add clipped noise
                    noise = (
                        torch.tensor(np.random.randn(*action.shape).astype(np.float32)) * self.policy_noise
                    ).clamp(-self.noise_clip, self.noise_clip)

                    next_action = (
                        self.actor_target(next_state) + noise
                    ).clamp(-self.max_action, self.max_action)

                    # Compute the target Q value
                    target_Q1, target_Q2 = self.critic_target(next_state, next_action)
                    target_Q = torch.min(target_Q1, target_Q2)
                    target_Q = reward + not_done * self.discount * target_Q

                # Get current Q estimates
                current_Q1, current_Q2 = self.critic(state, action)

                # Compute critic loss
                critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)

                # Optimize the critic
                self.critic_optimizer.zero_grad()
                critic_loss.backward()
                self.critic_optimizer.step()
                log("critic loss", critic_loss)
                log("target_Q", target_Q)

                # Delayed policy updates
                if self.total_it % self.policy_freq == 0:

                    # Compute actor losse
                    actor_loss = -self.critic.Q1(state, self.actor(state)).mean()

                    # Optimize the actor
                    self.actor_optimizer.zero_grad()
                    actor_loss.backward()
                    self.actor_optimizer.step()
                    log("actor loss", actor_loss)

                    # Update the frozen target models
                    for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                        target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

                    for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                        target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

            def save(self, filename):
                torch.save(self.critic.state_dict(), filename + "_critic")
                torch.save(self.critic_optimizer.state_dict(), filename + "_critic_optimizer")

                torch.save(self.actor.state_dict(), filename + "_actor")
                torch.save(self.actor_optimizer.state_dict(), filename + "_actor_optimizer")

            def load(self, filename):
                self.critic.load_state_dict(torch.load(filename + "_critic"))
                self.critic_optimizer.load_state_dict(torch.load(filename + "_critic_optimizer"))
                self.critic_target = copy.deepcopy(self.critic)

                self.actor.load_state_dict(torch.load(filename + "_actor"))
                self.actor_optimizer.load_state_dict(torch.load(filename + "_actor_optimizer"))
                self.actor_target = copy.deepcopy(self.actor)

        state_dim, action_dim, max_action = 3, 2, 1.5
        with seeded(0):
            policy = TD3(state_dim, action_dim, max_action)
            replay_buffer = ReplayBuffer(state_dim, action_dim, max_size=16)
            state = np.random.randn(state_dim)
            for t in range(10):
                action = (policy.select_action(np.array(state))
                          + np.random.normal(0, max_action * 0.1, size=action_dim)
                          ).clip(-max_action, max_action)
                next_state = np.tanh(state + 0.1 * np.r_[action, action[:1]])
                reward = float(-np.square(next_state).sum())
                done = float(t == 9)
                replay_buffer.add(state, action, next_state, reward, done)
                state = next_state
            log("buffer size", replay_buffer.size)
            log("last action", action)
            for it in range(4):
                policy.train(replay_buffer, batch_size=4)
        log("total_it", policy.total_it)
        log("actor target l3", policy.actor_target.l3.weight)
        log("critic target l6", policy.critic_target.l6.bias)
        log("actor l1 grad", policy.actor.l1.weight.grad)
        log("adam step", policy.critic_optimizer.state_dict()["state"][0]["step"])
        filename = os.path.join(str(tmp_path), "TD3_%s" % type(torch.zeros(1)).__module__.split(".")[0])
        policy.save(filename)
        probe = np.array([0.1, -0.2, 0.3])
        before = policy.select_action(probe)
        reloaded = TD3(state_dim, action_dim, max_action)
        reloaded.load(filename)
        log("reloaded action", reloaded.select_action(probe))
        log("same action", bool(np.allclose(before, reloaded.select_action(probe))))
        log("reloaded optimizer steps",
            [s["step"] for s in reloaded.actor_optimizer.state_dict()["state"].values()])
        log("reloaded target", reloaded.critic_target.l1.weight)

    run_both(program)


# ritheshkumar95/pytorch-vqvae functions.py (``VectorQuantization`` and
# ``VectorQuantizationStraightThrough``, applied as ``vq``/``vq_st``), modules.py
# (``weights_init`` applied with ``self.apply``, ``VQEmbedding`` with ``straight_through``,
# ``ResBlock``, ``VectorQuantizedVAE``) and vqvae.py's ``train`` (reconstruction, VQ and
# commitment MSE losses). dim 256 -> 4, K 512 -> 6, one channel, 2 images 8x8, 2 steps of SGD in
# place of the script's Adam: each conv bias before a BatchNorm has an exactly-zero gradient, so
# both libraries hand Adam float rounding noise (~1e-9) that it scales up to a full step.
# ``weights_init``'s ``xavier_uniform_`` and the codebook's ``uniform_`` draw from the random
# stream, so ``init_params`` replaces the parameters after construction; the conv biases it zeroed
# are checked first.
def test_vqvae_straight_through_functions():
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional
        Function = torch.autograd.Function

        class VectorQuantization(Function):
            @staticmethod
            def forward(ctx, inputs, codebook):
                with torch.no_grad():
                    embedding_size = codebook.size(1)
                    inputs_size = inputs.size()
                    inputs_flatten = inputs.view(-1, embedding_size)

                    codebook_sqr = torch.sum(codebook ** 2, dim=1)
                    inputs_sqr = torch.sum(inputs_flatten ** 2, dim=1, keepdim=True)

                    # Compute the distances to the codebook
                    distances = torch.addmm(codebook_sqr + inputs_sqr,
                        inputs_flatten, codebook.t(), alpha=-2.0, beta=1.0)

                    _, indices_flatten = torch.min(distances, dim=1)
                    indices = indices_flatten.view(*inputs_size[:-1])
                    ctx.mark_non_differentiable(indices)

                    return indices

            @staticmethod
            def backward(ctx, grad_output):
                raise RuntimeError('Trying to call `.grad()` on graph containing '
                    '`VectorQuantization`. The function `VectorQuantization` '
                    'is not differentiable. Use `VectorQuantizationStraightThrough` '
                    'if you want a straight-through estimator of the gradient.')

        class VectorQuantizationStraightThrough(Function):
            @staticmethod
            def forward(ctx, inputs, codebook):
                indices = vq(inputs, codebook)
                indices_flatten = indices.view(-1)
                ctx.save_for_backward(indices_flatten, codebook)
                ctx.mark_non_differentiable(indices_flatten)

                codes_flatten = torch.index_select(codebook, dim=0,
                    index=indices_flatten)
                codes = codes_flatten.view_as(inputs)

                return (codes, indices_flatten)

            @staticmethod
            def backward(ctx, grad_output, grad_indices):
                grad_inputs, grad_codebook = None, None

                if ctx.needs_input_grad[0]:
                    # Straight-through estimator
                    grad_inputs = grad_output.clone()
                if ctx.needs_input_grad[1]:
                    # Gradient wrt. the codebook
                    indices, codebook = ctx.saved_tensors
                    embedding_size = codebook.size(1)

                    grad_output_flatten = (grad_output.contiguous()
                                                      .view(-1, embedding_size))
                    grad_codebook = torch.zeros_like(codebook)
                    grad_codebook.index_add_(0, indices, grad_output_flatten)

                return (grad_inputs, grad_codebook)

        vq = VectorQuantization.apply
        vq_st = VectorQuantizationStraightThrough.apply

        def weights_init(m):
            classname = m.__class__.__name__
            if classname.find('Conv') != -1:
                try:
                    nn.init.xavier_uniform_(m.weight.data)
                    m.bias.data.fill_(0)
                except AttributeError:
                    print("Skipping initialization of ", classname)

        class VQEmbedding(nn.Module):
            def __init__(self, K, D):
                super().__init__()
                self.embedding = nn.Embedding(K, D)
                self.embedding.weight.data.uniform_(-1./K, 1./K)

            def forward(self, z_e_x):
                z_e_x_ = z_e_x.permute(0, 2, 3, 1).contiguous()
                latents = vq(z_e_x_, self.embedding.weight)
                return latents

            def straight_through(self, z_e_x):
                z_e_x_ = z_e_x.permute(0, 2, 3, 1).contiguous()
                z_q_x_, indices = vq_st(z_e_x_, self.embedding.weight.detach())
                z_q_x = z_q_x_.permute(0, 3, 1, 2).contiguous()

                z_q_x_bar_flatten = torch.index_select(self.embedding.weight,
                    dim=0, index=indices)
                z_q_x_bar_ = z_q_x_bar_flatten.view_as(z_e_x_)
                z_q_x_bar = z_q_x_bar_.permute(0, 3, 1, 2).contiguous()

                return z_q_x, z_q_x_bar

        class ResBlock(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.block = nn.Sequential(
                    nn.ReLU(True),
                    nn.Conv2d(dim, dim, 3, 1, 1),
                    nn.BatchNorm2d(dim),
                    nn.ReLU(True),
                    nn.Conv2d(dim, dim, 1),
                    nn.BatchNorm2d(dim)
                )

            def forward(self, x):
                return x + self.block(x)

        class VectorQuantizedVAE(nn.Module):
            def __init__(self, input_dim, dim, K=512):
                super().__init__()
                self.encoder = nn.Sequential(
                    nn.Conv2d(input_dim, dim, 4, 2, 1),
                    nn.BatchNorm2d(dim),
                    nn.ReLU(True),
                    nn.Conv2d(dim, dim, 4, 2, 1),
                    ResBlock(dim),
                    ResBlock(dim),
                )

                self.codebook = VQEmbedding(K, dim)

                self.decoder = nn.Sequential(
                    ResBlock(dim),
                    ResBlock(dim),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(dim, dim, 4, 2, 1),
                    nn.BatchNorm2d(dim),
                    nn.ReLU(True),
                    nn.ConvTranspose2d(dim, input_dim, 4, 2, 1),
                    nn.Tanh()
                )

                self.apply(weights_init)

            def encode(self, x):
                z_e_x = self.encoder(x)
                latents = self.codebook(z_e_x)
                return latents

            def decode(self, latents):
                z_q_x = self.codebook.embedding(latents).permute(0, 3, 1, 2)  # (B, D, H, W)
                x_tilde = self.decoder(z_q_x)
                return x_tilde

            def forward(self, x):
                z_e_x = self.encoder(x)
                z_q_x_st, z_q_x = self.codebook.straight_through(z_e_x)
                x_tilde = self.decoder(z_q_x_st)
                return x_tilde, z_e_x, z_q_x

        model = VectorQuantizedVAE(1, 4, K=6)
        log("zeroed conv bias", model.encoder[0].bias)
        log("codebook in range", bool(model.codebook.embedding.weight.abs().max() <= 1. / 6))
        init_params(torch, model, 3, scale=0.5)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        images = randn(torch, (2, 1, 8, 8), 4).tanh()
        beta = 1.0

        def train(steps):
            for _ in range(steps):
                optimizer.zero_grad()
                x_tilde, z_e_x, z_q_x = model(images)

                # Reconstruction loss
                loss_recons = F.mse_loss(x_tilde, images)
                # Vector quantization objective
                loss_vq = F.mse_loss(z_q_x, z_e_x.detach())
                # Commitment objective
                loss_commit = F.mse_loss(z_e_x, z_q_x.detach())

                loss = loss_recons + loss_vq + beta * loss_commit
                loss.backward()
                log("losses", [loss_recons.item(), loss_vq.item(), loss_commit.item()])
                log("codebook grad", model.codebook.embedding.weight.grad)
                log("encoder grad", model.encoder[0].weight.grad)
                optimizer.step()

        train(2)
        model.eval()
        with torch.no_grad():
            latents = model.encode(images)
            log("latents", latents)
            log("latents grad", latents.requires_grad)
            log("decoded", model.decode(latents))
        # vq's output is non-differentiable, and vq_st's indices too
        z = randn(torch, (1, 2, 2, 4), 5, requires_grad=True)
        idx = vq(z, model.codebook.embedding.weight)
        log("vq requires_grad", idx.requires_grad)
        codes, flat = vq_st(z, model.codebook.embedding.weight)
        log("vq_st flags", [codes.requires_grad, flat.requires_grad, codes.grad_fn is None])
        (codes * randn(torch, (1, 2, 2, 4), 6)).sum().backward()
        log("straight-through grad", z.grad)

    run_both(program)


# vgsatorras/egnn models/egnn_clean/egnn_clean.py (E_GCL: edge/node/coordinate MLPs, a
# ``xavier_uniform_(gain=0.001)`` coordinate head, ``coord2radial``, ``unsorted_segment_sum``/
# ``unsorted_segment_mean`` with ``new_full`` + ``scatter_add_``; EGNN: ``add_module`` in a loop
# and ``self._modules["gcl_%d" % i]``; ``get_edges_batch`` with ``torch.LongTensor``) and its
# ``__main__`` demo, extended by a few Adam steps on a regression target. hidden 32 -> 8, 2
# layers, batch 2 of 4 nodes; attention, normalize and tanh on (the options the demo leaves off)
# in a second model. ``xavier_uniform_`` draws from the random stream, so ``init_params``
# replaces the parameters.
def test_egnn_scatter_add_segments():
    def program(torch, log):
        nn = torch.nn

        class E_GCL(nn.Module):
            """
            E(n) Equivariant Convolutional Layer
            re
            """

            def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(), residual=True, attention=False, normalize=False, coords_agg='mean', tanh=False):
                super(E_GCL, self).__init__()
                input_edge = input_nf * 2
                self.residual = residual
                self.attention = attention
                self.normalize = normalize
                self.coords_agg = coords_agg
                self.tanh = tanh
                self.epsilon = 1e-8
                edge_coords_nf = 1

                self.edge_mlp = nn.Sequential(
                    nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf),
                    act_fn,
                    nn.Linear(hidden_nf, hidden_nf),
                    act_fn)

                self.node_mlp = nn.Sequential(
                    nn.Linear(hidden_nf + input_nf, hidden_nf),
                    act_fn,
                    nn.Linear(hidden_nf, output_nf))

                layer = nn.Linear(hidden_nf, 1, bias=False)
                torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)

                coord_mlp = []
                coord_mlp.append(nn.Linear(hidden_nf, hidden_nf))
                coord_mlp.append(act_fn)
                coord_mlp.append(layer)
                if self.tanh:
                    coord_mlp.append(nn.Tanh())
                self.coord_mlp = nn.Sequential(*coord_mlp)

                if self.attention:
                    self.att_mlp = nn.Sequential(
                        nn.Linear(hidden_nf, 1),
                        nn.Sigmoid())

            def edge_model(self, source, target, radial, edge_attr):
                if edge_attr is None:  # Unused.
                    out = torch.cat([source, target, radial], dim=1)
                else:
                    out = torch.cat([source, target, radial, edge_attr], dim=1)
                out = self.edge_mlp(out)
                if self.attention:
                    att_val = self.att_mlp(out)
                    out = out * att_val
                return out

            def node_model(self, x, edge_index, edge_attr, node_attr):
                row, col = edge_index
                agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
                if node_attr is not None:
                    agg = torch.cat([x, agg, node_attr], dim=1)
                else:
                    agg = torch.cat([x, agg], dim=1)
                out = self.node_mlp(agg)
                if self.residual:
                    out = x + out
                return out, agg

            def coord_model(self, coord, edge_index, coord_diff, edge_feat):
                row, col = edge_index
                trans = coord_diff * self.coord_mlp(edge_feat)
                if self.coords_agg == 'sum':
                    agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
                elif self.coords_agg == 'mean':
                    agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
                else:
                    raise Exception('Wrong coords_agg parameter' % self.coords_agg)
                coord = coord + agg
                return coord

            def coord2radial(self, edge_index, coord):
                row, col = edge_index
                coord_diff = coord[row] - coord[col]
                radial = torch.sum(coord_diff**2, 1).unsqueeze(1)

                if self.normalize:
                    norm = torch.sqrt(radial).detach() + self.epsilon
                    coord_diff = coord_diff / norm

                return radial, coord_diff

            def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
                row, col = edge_index
                radial, coord_diff = self.coord2radial(edge_index, coord)

                edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
                coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
                h, agg = self.node_model(h, edge_index, edge_feat, node_attr)

                return h, coord, edge_attr

        class EGNN(nn.Module):
            def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, device='cpu', act_fn=nn.SiLU(), n_layers=4, residual=True, attention=False, normalize=False, tanh=False):
                super(EGNN, self).__init__()
                self.hidden_nf = hidden_nf
                self.device = device
                self.n_layers = n_layers
                self.embedding_in = nn.Linear(in_node_nf, self.hidden_nf)
                self.embedding_out = nn.Linear(self.hidden_nf, out_node_nf)
                for i in range(0, n_layers):
                    self.add_module("gcl_%d" % i, E_GCL(self.hidden_nf, self.hidden_nf, self.hidden_nf, edges_in_d=in_edge_nf,
                                                        act_fn=act_fn, residual=residual, attention=attention,
                                                        normalize=normalize, tanh=tanh))
                self.to(self.device)

            def forward(self, h, x, edges, edge_attr):
                h = self.embedding_in(h)
                for i in range(0, self.n_layers):
                    h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
                h = self.embedding_out(h)
                return h, x

        def unsorted_segment_sum(data, segment_ids, num_segments):
            result_shape = (num_segments, data.size(1))
            result = data.new_full(result_shape, 0)  # Init empty result tensor.
            segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
            result.scatter_add_(0, segment_ids, data)
            return result

        def unsorted_segment_mean(data, segment_ids, num_segments):
            result_shape = (num_segments, data.size(1))
            segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
            result = data.new_full(result_shape, 0)  # Init empty result tensor.
            count = data.new_full(result_shape, 0)
            result.scatter_add_(0, segment_ids, data)
            count.scatter_add_(0, segment_ids, torch.ones_like(data))
            return result / count.clamp(min=1)

        def get_edges(n_nodes):
            rows, cols = [], []
            for i in range(n_nodes):
                for j in range(n_nodes):
                    if i != j:
                        rows.append(i)
                        cols.append(j)

            edges = [rows, cols]
            return edges

        def get_edges_batch(n_nodes, batch_size):
            edges = get_edges(n_nodes)
            edge_attr = torch.ones(len(edges[0]) * batch_size, 1)
            edges = [torch.LongTensor(edges[0]), torch.LongTensor(edges[1])]
            if batch_size == 1:
                return edges, edge_attr
            elif batch_size > 1:
                rows, cols = [], []
                for i in range(batch_size):
                    rows.append(edges[0] + n_nodes * i)
                    cols.append(edges[1] + n_nodes * i)
                edges = [torch.cat(rows), torch.cat(cols)]
            return edges, edge_attr

        # Dummy parameters
        batch_size = 2
        n_nodes = 4
        n_feat = 1
        x_dim = 3

        # Dummy variables h, x and fully connected edges
        h = torch.ones(batch_size * n_nodes, n_feat)
        x = torch.ones(batch_size * n_nodes, x_dim)
        edges, edge_attr = get_edges_batch(n_nodes, batch_size)
        log("edges", edges)

        # Initialize EGNN
        egnn = EGNN(in_node_nf=n_feat, hidden_nf=8, out_node_nf=1, in_edge_nf=1, n_layers=2)
        log("coord head norm small", bool(egnn.gcl_0.coord_mlp[2].weight.abs().max() < 0.01))
        log("module names", list(egnn._modules))
        init_params(torch, egnn, 7)

        # Run EGNN
        h_out, x_out = egnn(h, x, edges, edge_attr)
        log("demo h", h_out)
        log("demo x", x_out)

        # A few regression steps, coordinates apart so the radial terms matter
        coords = randn(torch, (batch_size * n_nodes, x_dim), 8)
        feats = randn(torch, (batch_size * n_nodes, n_feat), 9)
        target = randn(torch, (batch_size * n_nodes, 1), 10)
        for kw, seed in (({}, 11), ({"attention": True, "normalize": True, "tanh": True}, 12)):
            model = init_params(torch, EGNN(n_feat, 8, 1, in_edge_nf=1, n_layers=2, **kw), seed)
            opt = torch.optim.Adam(model.parameters(), lr=1e-2)
            for step in range(3):
                opt.zero_grad()
                h_pred, x_pred = model(feats, coords, edges, edge_attr)
                loss = ((h_pred - target) ** 2).mean() + (x_pred - coords).pow(2).mean()
                loss.backward()
                opt.step()
                log("loss", loss)
            log("coord grad", model.gcl_1.coord_mlp[0].weight.grad)
            log("x_pred", x_pred)
        # the layer is equivariant: rotating the input coordinates rotates the output ones
        rot = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        with torch.no_grad():
            _, xr = model(feats, coords @ rot, edges, edge_attr)
            _, x0 = model(feats, coords, edges, edge_attr)
        log("equivariant", bool(torch.allclose(xr, x0 @ rot, atol=1e-5)))

    run_both(program)


# ildoonet/pytorch-gradual-warmup-lr warmup_scheduler/scheduler.py (GradualWarmupScheduler, an
# ``_LRScheduler`` subclass: ``get_lr`` reading ``_get_lr_called_within_step``, handing over to an
# ``after_scheduler`` by rewriting its ``base_lrs``, ``step_ReduceLROnPlateau``) and
# warmup_scheduler/run.py (the chained CosineAnnealingLR demo, its learning rates printed).
# Epochs 20 -> 12, total_epoch 5 -> 3; a second run chains ReduceLROnPlateau with multiplier 2
# and a plateauing metric, a third uses no after_scheduler. The ``from torch.optim... import``
# lines are attribute lookups on ``torch`` (``torch.optim.sgd`` through ``importlib``: torch's
# ``torch.optim`` does not keep its submodules as attributes until they are imported).
def test_gradual_warmup_scheduler_chains():
    def program(torch, log):
        _LRScheduler = torch.optim.lr_scheduler._LRScheduler
        ReduceLROnPlateau = torch.optim.lr_scheduler.ReduceLROnPlateau
        CosineAnnealingLR = torch.optim.lr_scheduler.CosineAnnealingLR
        SGD = importlib.import_module(torch.__name__ + ".optim.sgd").SGD

        class GradualWarmupScheduler(_LRScheduler):
            """ Gradually warm-up(increasing) learning rate in optimizer."""

            def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
                self.multiplier = multiplier
                if self.multiplier < 1.:
                    raise ValueError('multiplier should be greater thant or equal to 1.')
                self.total_epoch = total_epoch
                self.after_scheduler = after_scheduler
                self.finished = False
                super(GradualWarmupScheduler, self).__init__(optimizer)

            def get_lr(self):
                if not self._get_lr_called_within_step:
                    warnings.warn("To get the last learning rate computed by the scheduler, "
                                  "please use `get_last_lr()`.")
                if self.last_epoch > self.total_epoch:
                    if self.after_scheduler:
                        if not self.finished:
                            self.after_scheduler.base_lrs = [base_lr * self.multiplier for base_lr in self.base_lrs]
                            self.finished = True
                        return self.after_scheduler.get_last_lr()
                    return [base_lr * self.multiplier for base_lr in self.base_lrs]

                if self.multiplier == 1.0:
                    return [base_lr * (float(self.last_epoch) / self.total_epoch) for base_lr in self.base_lrs]
                else:
                    return [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.) for base_lr in self.base_lrs]

            def step_ReduceLROnPlateau(self, metrics, epoch=None):
                if epoch is None:
                    epoch = self.last_epoch + 1
                self.last_epoch = epoch if epoch != 0 else 1  # ReduceLROnPlateau is called at the end of epoch, whereas others are called at beginning
                if self.last_epoch <= self.total_epoch:
                    warmup_lr = [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.) for base_lr in self.base_lrs]
                    for param_group, lr in zip(self.optimizer.param_groups, warmup_lr):
                        param_group['lr'] = lr
                else:
                    if epoch is None:
                        self.after_scheduler.step(metrics, None)
                    else:
                        self.after_scheduler.step(metrics, epoch - self.total_epoch)

            def step(self, epoch=None, metrics=None):
                if type(self.after_scheduler) != ReduceLROnPlateau:
                    if self.finished and self.after_scheduler:
                        if epoch is None:
                            self.after_scheduler.step(None)
                        else:
                            self.after_scheduler.step(epoch - self.total_epoch)
                        self._last_lr = self.after_scheduler.get_last_lr()
                    else:
                        return super(GradualWarmupScheduler, self).step(epoch)
                else:
                    self.step_ReduceLROnPlateau(metrics, epoch)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = [torch.nn.Parameter(randn(torch, (2, 2), 1, requires_grad=True))]
            optim = SGD(model, 0.1)

            epochs = 12
            # scheduler_warmup is chained with lr_schduler
            lr_schduler = CosineAnnealingLR(optim, T_max=epochs - 3, eta_min=0.02)
            scheduler_warmup = GradualWarmupScheduler(optim, multiplier=1, total_epoch=3, after_scheduler=lr_schduler)

            # this zero gradient update is needed to avoid a warning message, issue #8.
            optim.zero_grad()
            optim.step()
            scheduler_warmup.step()

            lr_list = list()
            for epoch in range(epochs):
                current_lr = optim.param_groups[0]['lr']

                optim.step()
                scheduler_warmup.step()

                print(epoch + 1, current_lr)
                lr_list.append(current_lr)
            log("lrs", lr_list)
            log("last lr", scheduler_warmup.get_last_lr())
            log("finished", scheduler_warmup.finished)
            log("after base_lrs", lr_schduler.base_lrs)

            # multiplier 2 into ReduceLROnPlateau, a loss that stops improving
            w = torch.nn.Parameter(randn(torch, (3,), 2))
            opt2 = SGD([w], lr=0.05, momentum=0.9)
            plateau = ReduceLROnPlateau(opt2, mode='min', factor=0.5, patience=1)
            warm2 = GradualWarmupScheduler(opt2, multiplier=2, total_epoch=2, after_scheduler=plateau)
            for epoch in range(1, 9):
                opt2.zero_grad()
                loss = (w ** 2).sum()
                loss.backward()
                opt2.step()
                metric = max(loss.item(), 0.5)
                warm2.step(epoch, metrics=metric)
                print("plateau", epoch, opt2.param_groups[0]['lr'], round(metric, 6))
            log("w", w)
            log("plateau best", plateau.best)

            # warmup alone: after total_epoch it holds base_lr * multiplier
            opt3 = SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
            warm3 = GradualWarmupScheduler(opt3, multiplier=4, total_epoch=2)
            lrs3 = []
            for _ in range(5):
                opt3.step()
                warm3.step()
                lrs3.append(warm3.get_last_lr()[0])
            log("lrs3", lrs3)
            log("state keys", sorted(k for k in warm3.state_dict() if k != "after_scheduler"))
            try:
                GradualWarmupScheduler(opt3, multiplier=0.5, total_epoch=2)
            except ValueError as e:
                log("bad multiplier", str(e))
        log("warnings", sorted(set(type(w.message).__name__ for w in caught)))

    run_both(program)


# bentrevett/pytorch-seq2seq "3 - Neural Machine Translation by Jointly Learning to Align and
# Translate.ipynb" (a bidirectional-GRU Encoder whose last forward/backward hidden states go
# through ``fc``, additive Attention with ``repeat``/``permute``, a GRU Decoder fed ``bmm``-weighted
# encoder outputs, Seq2Seq filling ``outputs[t] = output`` with teacher forcing from
# ``random.random()``, ``init_weights`` by parameter name, the collate function with
# ``pad_sequence`` under a DataLoader, ``CrossEntropyLoss(ignore_index=pad_index)``,
# ``clip_grad_norm_``, ``train_fn``/``evaluate_fn`` and the best-model ``torch.save``). Vocabularies
# of 9 and 8 tokens, widths 256/512 -> 6/8, dropout 0.5 -> 0 (dropout masks come from each
# library's own random stream), 4 sentence pairs in batches of 2 (and 2 to validate), 2 epochs. ``init_weights``'s
# ``normal_`` draws from the random stream, so ``init_params`` replaces the weights after the zeroed
# biases are checked.
def test_seq2seq_additive_attention_gru(tmp_path):
    def program(torch, log):
        nn = torch.nn
        optim = torch.optim
        import random

        class Encoder(nn.Module):
            def __init__(
                self, input_dim, embedding_dim, encoder_hidden_dim, decoder_hidden_dim, dropout
            ):
                super().__init__()
                self.embedding = nn.Embedding(input_dim, embedding_dim)
                self.rnn = nn.GRU(embedding_dim, encoder_hidden_dim, bidirectional=True)
                self.fc = nn.Linear(encoder_hidden_dim * 2, decoder_hidden_dim)
                self.dropout = nn.Dropout(dropout)

            def forward(self, src):
                embedded = self.dropout(self.embedding(src))
                outputs, hidden = self.rnn(embedded)
                hidden = torch.tanh(
                    self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
                )
                return outputs, hidden

        class Attention(nn.Module):
            def __init__(self, encoder_hidden_dim, decoder_hidden_dim):
                super().__init__()
                self.attn_fc = nn.Linear(
                    (encoder_hidden_dim * 2) + decoder_hidden_dim, decoder_hidden_dim
                )
                self.v_fc = nn.Linear(decoder_hidden_dim, 1, bias=False)

            def forward(self, hidden, encoder_outputs):
                batch_size = encoder_outputs.shape[1]
                src_length = encoder_outputs.shape[0]
                hidden = hidden.unsqueeze(1).repeat(1, src_length, 1)
                encoder_outputs = encoder_outputs.permute(1, 0, 2)
                energy = torch.tanh(self.attn_fc(torch.cat((hidden, encoder_outputs), dim=2)))
                attention = self.v_fc(energy).squeeze(2)
                return torch.softmax(attention, dim=1)

        class Decoder(nn.Module):
            def __init__(
                self,
                output_dim,
                embedding_dim,
                encoder_hidden_dim,
                decoder_hidden_dim,
                dropout,
                attention,
            ):
                super().__init__()
                self.output_dim = output_dim
                self.attention = attention
                self.embedding = nn.Embedding(output_dim, embedding_dim)
                self.rnn = nn.GRU((encoder_hidden_dim * 2) + embedding_dim, decoder_hidden_dim)
                self.fc_out = nn.Linear(
                    (encoder_hidden_dim * 2) + decoder_hidden_dim + embedding_dim, output_dim
                )
                self.dropout = nn.Dropout(dropout)

            def forward(self, input, hidden, encoder_outputs):
                input = input.unsqueeze(0)
                embedded = self.dropout(self.embedding(input))
                a = self.attention(hidden, encoder_outputs)
                a = a.unsqueeze(1)
                encoder_outputs = encoder_outputs.permute(1, 0, 2)
                weighted = torch.bmm(a, encoder_outputs)
                weighted = weighted.permute(1, 0, 2)
                rnn_input = torch.cat((embedded, weighted), dim=2)
                output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
                assert (output == hidden).all()
                embedded = embedded.squeeze(0)
                output = output.squeeze(0)
                weighted = weighted.squeeze(0)
                prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
                return prediction, hidden.squeeze(0), a.squeeze(1)

        class Seq2Seq(nn.Module):
            def __init__(self, encoder, decoder, device):
                super().__init__()
                self.encoder = encoder
                self.decoder = decoder
                self.device = device

            def forward(self, src, trg, teacher_forcing_ratio):
                batch_size = src.shape[1]
                trg_length = trg.shape[0]
                trg_vocab_size = self.decoder.output_dim
                outputs = torch.zeros(trg_length, batch_size, trg_vocab_size).to(self.device)
                encoder_outputs, hidden = self.encoder(src)
                input = trg[0, :]
                for t in range(1, trg_length):
                    output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
                    outputs[t] = output
                    teacher_force = random.random() < teacher_forcing_ratio
                    top1 = output.argmax(1)
                    input = trg[t] if teacher_force else top1
                return outputs

        def init_weights(m):
            for name, param in m.named_parameters():
                if "weight" in name:
                    nn.init.normal_(param.data, mean=0, std=0.01)
                else:
                    nn.init.constant_(param.data, 0)

        def get_collate_fn(pad_index):
            def collate_fn(batch):
                batch_en_ids = [example["en_ids"] for example in batch]
                batch_de_ids = [example["de_ids"] for example in batch]
                batch_en_ids = nn.utils.rnn.pad_sequence(batch_en_ids, padding_value=pad_index)
                batch_de_ids = nn.utils.rnn.pad_sequence(batch_de_ids, padding_value=pad_index)
                batch = {
                    "en_ids": batch_en_ids,
                    "de_ids": batch_de_ids,
                }
                return batch

            return collate_fn

        def get_data_loader(dataset, batch_size, pad_index, shuffle=False):
            collate_fn = get_collate_fn(pad_index)
            data_loader = torch.utils.data.DataLoader(
                dataset=dataset,
                batch_size=batch_size,
                collate_fn=collate_fn,
                shuffle=shuffle,
            )
            return data_loader

        def train_fn(
            model, data_loader, optimizer, criterion, clip, teacher_forcing_ratio, device
        ):
            model.train()
            epoch_loss = 0
            for i, batch in enumerate(data_loader):
                src = batch["de_ids"].to(device)
                trg = batch["en_ids"].to(device)
                optimizer.zero_grad()
                output = model(src, trg, teacher_forcing_ratio)
                output_dim = output.shape[-1]
                output = output[1:].view(-1, output_dim)
                trg = trg[1:].view(-1)
                loss = criterion(output, trg)
                loss.backward()
                log("grad norm", torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
                optimizer.step()
                epoch_loss += loss.item()
            return epoch_loss / len(data_loader)

        def evaluate_fn(model, data_loader, criterion, device):
            model.eval()
            epoch_loss = 0
            with torch.no_grad():
                for i, batch in enumerate(data_loader):
                    src = batch["de_ids"].to(device)
                    trg = batch["en_ids"].to(device)
                    output = model(src, trg, 0)  # turn off teacher forcing
                    output_dim = output.shape[-1]
                    output = output[1:].view(-1, output_dim)
                    trg = trg[1:].view(-1)
                    loss = criterion(output, trg)
                    epoch_loss += loss.item()
            return epoch_loss / len(data_loader)

        pad_index, sos, eos = 1, 2, 3
        rs = np.random.RandomState(5)

        def sentence(vocab, n):
            return torch.tensor([sos] + list(rs.randint(4, vocab, size=n)) + [eos])

        # every batch pads to the same lengths (a new length runs the GRUs and the decoder at
        # new shapes: more programs, no new behaviour); the padding sits in other rows
        train_data = [{"de_ids": sentence(9, n), "en_ids": sentence(8, m)}
                      for n, m in ((3, 4), (5, 2), (5, 2), (3, 4))]
        valid_data = [{"de_ids": sentence(9, n), "en_ids": sentence(8, m)} for n, m in ((3, 4), (5, 2))]
        train_data_loader = get_data_loader(train_data, 2, pad_index)
        valid_data_loader = get_data_loader(valid_data, 2, pad_index)
        first = next(iter(train_data_loader))
        log("padded batch", [first["de_ids"], first["en_ids"]])

        device = torch.device("cpu")
        attention = Attention(8, 8)
        encoder = Encoder(9, 6, 8, 8, 0.0)
        decoder = Decoder(8, 6, 8, 8, 0.0, attention)
        model = Seq2Seq(encoder, decoder, device).to(device)
        model.apply(init_weights)
        log("zero biases", [float(p.abs().sum()) for n, p in model.named_parameters() if "bias" in n])
        print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")
        init_params(torch, model, 13, scale=0.4)
        optimizer = optim.Adam(model.parameters())
        criterion = nn.CrossEntropyLoss(ignore_index=pad_index)

        n_epochs = 2
        clip = 1.0
        teacher_forcing_ratio = 0.5
        best_valid_loss = float("inf")
        path = os.path.join(str(tmp_path), "tut3-model-%s.pt" % torch.__name__)
        with seeded(3):
            for epoch in range(n_epochs):
                train_loss = train_fn(model, train_data_loader, optimizer, criterion, clip,
                                      teacher_forcing_ratio, device)
                valid_loss = evaluate_fn(model, valid_data_loader, criterion, device)
                if valid_loss < best_valid_loss:
                    best_valid_loss = valid_loss
                    torch.save(model.state_dict(), path)
                print(f"\tTrain Loss: {train_loss:7.3f} | Train PPL: {np.exp(train_loss):7.3f}")
                print(f"\tValid Loss: {valid_loss:7.3f} | Valid PPL: {np.exp(valid_loss):7.3f}")
                log("losses", [train_loss, valid_loss])
        log("fc_out grad", decoder.fc_out.weight.grad)
        log("encoder rnn reverse grad", encoder.rnn.weight_hh_l0_reverse.grad)
        model.load_state_dict(torch.load(path))
        src = valid_data[0]["de_ids"].unsqueeze(1)
        with torch.no_grad():
            encoder_outputs, hidden = model.encoder(src)
            _, _, attn = model.decoder(torch.tensor([sos]), hidden, encoder_outputs)
        log("attention", attn)
        log("attention sums", attn.sum(1))

    run_both(program)


# utkuozbulak/pytorch-cnn-visualizations src/guided_backprop.py (GuidedBackprop: module
# ``register_backward_hook``s -- on the first layer, reading ``grad_in[0]``, and on every ReLU,
# returning ``(torch.clamp(grad_in[0], min=0.0),)`` in place of the gradient -- found through
# ``features._modules.items()``; ``model_output.backward(gradient=one_hot_output)``),
# src/integrated_gradients.py (the same first-layer hook over scaled copies of one input, each
# backward reaching the shared input image) and src/misc_functions.py (``preprocess_image``:
# ``torch.from_numpy``, ``unsqueeze_``, ``Variable(..., requires_grad=True)``;
# ``convert_to_grayscale``, ``get_positive_negative_saliency``). The pretrained AlexNet becomes an
# AlexNet-shaped net (features/avgpool/classifier with in-place ReLUs) of 3 conv channels on a
# 3x8x8 image, 5 classes; the image is a numpy array in place of a PIL file (``resize_im=False``).
def test_guided_backprop_module_backward_hooks():
    def program(torch, log):
        nn = torch.nn
        ReLU = torch.nn.ReLU
        Variable = torch.autograd.Variable

        class TinyAlexNet(nn.Module):
            def __init__(self, num_classes=5):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(3, 3, kernel_size=3, padding=1),
                    nn.ReLU(inplace=True),
                    nn.MaxPool2d(kernel_size=2, stride=2),
                    nn.Conv2d(3, 4, kernel_size=3, padding=1),
                    nn.ReLU(inplace=True),
                )
                self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
                self.classifier = nn.Sequential(
                    nn.Dropout(p=0.5),
                    nn.Linear(4 * 2 * 2, 8),
                    nn.ReLU(inplace=True),
                    nn.Linear(8, num_classes),
                )

            def forward(self, x):
                x = self.features(x)
                x = self.avgpool(x)
                x = torch.flatten(x, 1)
                return self.classifier(x)

        def preprocess_image(pil_im, resize_im=True):
            mean = [0.485, 0.456, 0.406]
            std = [0.229, 0.224, 0.225]
            im_as_arr = np.float32(pil_im)
            im_as_arr = im_as_arr.transpose(2, 0, 1)  # Convert array to D,W,H
            for channel, _ in enumerate(im_as_arr):
                im_as_arr[channel] /= 255
                im_as_arr[channel] -= mean[channel]
                im_as_arr[channel] /= std[channel]
            im_as_ten = torch.from_numpy(im_as_arr).float()
            im_as_ten.unsqueeze_(0)
            im_as_var = Variable(im_as_ten, requires_grad=True)
            return im_as_var

        def convert_to_grayscale(im_as_arr):
            grayscale_im = np.sum(np.abs(im_as_arr), axis=0)
            im_max = np.percentile(grayscale_im, 99)
            im_min = np.min(grayscale_im)
            grayscale_im = (np.clip((grayscale_im - im_min) / (im_max - im_min), 0, 1))
            grayscale_im = np.expand_dims(grayscale_im, axis=0)
            return grayscale_im

        def get_positive_negative_saliency(gradient):
            pos_saliency = (np.maximum(0, gradient) / gradient.max())
            neg_saliency = (np.maximum(0, -gradient) / -gradient.min())
            return pos_saliency, neg_saliency

        class GuidedBackprop():
            def __init__(self, model):
                self.model = model
                self.gradients = None
                self.model.eval()
                self.update_relus()
                self.hook_layers()

            def hook_layers(self):
                def hook_function(module, grad_in, grad_out):
                    self.gradients = grad_in[0]

                first_layer = list(self.model.features._modules.items())[0][1]
                first_layer.register_backward_hook(hook_function)

            def update_relus(self):
                def relu_hook_function(module, grad_in, grad_out):
                    if isinstance(module, ReLU):
                        return (torch.clamp(grad_in[0], min=0.0),)
                for pos, module in self.model.features._modules.items():
                    if isinstance(module, ReLU):
                        module.register_backward_hook(relu_hook_function)

            def generate_gradients(self, input_image, target_class):
                model_output = self.model(input_image)
                self.model.zero_grad()
                one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
                one_hot_output[0][target_class] = 1
                model_output.backward(gradient=one_hot_output)
                gradients_as_arr = self.gradients.data.numpy()[0]
                return gradients_as_arr

        class IntegratedGradients():
            def __init__(self, model, device_id='cpu'):
                self.device = device_id
                self.model = model.to(self.device)
                self.gradients = None
                self.model.eval()
                self.hook_layers()

            def hook_layers(self):
                def hook_function(module, grad_in, grad_out):
                    self.gradients = grad_in[0]

                first_layer = list(self.model.features._modules.items())[0][1]
                first_layer.register_backward_hook(hook_function)

            def generate_images_on_linear_path(self, input_image, steps):
                step_list = np.arange(steps+1)/steps
                xbar_list = [input_image*step for step in step_list]
                return xbar_list

            def generate_gradients(self, input_image, target_class):
                model_output = self.model(input_image.to(self.device))
                self.model.zero_grad()
                one_hot_output = torch.FloatTensor(1, model_output.size()[-1]).zero_()
                one_hot_output[0][target_class] = 1
                model_output.backward(gradient=one_hot_output.to(self.device))
                gradients_as_arr = self.gradients.data.cpu().numpy()[0]
                return gradients_as_arr

            def generate_integrated_gradients(self, input_image, target_class, steps):
                xbar_list = self.generate_images_on_linear_path(input_image, steps)
                integrated_grads = np.zeros(input_image.size())
                for xbar_image in xbar_list:
                    single_integrated_grad = self.generate_gradients(xbar_image, target_class)
                    integrated_grads = integrated_grads + single_integrated_grad/steps
                return integrated_grads[0]

        original_image = np.random.RandomState(21).randint(0, 256, size=(8, 8, 3)).astype(np.uint8)
        target_class = 3
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prep_img = preprocess_image(original_image, resize_im=False)
            log("prep_img", prep_img)
            log("leaf", [prep_img.is_leaf, prep_img.requires_grad])

            plain = init_params(torch, TinyAlexNet(), 22, scale=0.6)
            plain.eval()
            out = plain(prep_img)
            out[0, target_class].backward()
            log("plain input grad", prep_img.grad)
            prep_img.grad = None

            guided_model = init_params(torch, TinyAlexNet(), 22, scale=0.6)
            GBP = GuidedBackprop(guided_model)
            guided_grads = GBP.generate_gradients(prep_img, target_class)
            log("guided grads", guided_grads)
            log("guided differs from plain", bool(np.abs(guided_grads - plain_grad(prep_img, plain, target_class, torch)).max() > 1e-6))
            log("input grad after guided", prep_img.grad)
            log("first conv weight grad", guided_model.features[0].weight.grad)
            log("grayscale", convert_to_grayscale(guided_grads))
            pos_sal, neg_sal = get_positive_negative_saliency(guided_grads)
            log("saliency", [pos_sal, neg_sal])

            prep_img.grad = None
            ig_model = init_params(torch, TinyAlexNet(), 22, scale=0.6)
            IG = IntegratedGradients(ig_model)
            integrated_grads = IG.generate_integrated_gradients(prep_img, target_class, 4)
            log("integrated grads", integrated_grads)
            log("input grad accumulated", prep_img.grad)
        log("hook warnings", sorted(set(type(w.message).__name__ for w in caught)))

    def plain_grad(img, model, target_class, torch):
        x = img.detach().clone().requires_grad_(True)
        model(x)[0, target_class].backward()
        return x.grad.numpy()[0]

    run_both(program)


# gpleiss/efficient_densenet_pytorch models/densenet.py (the memory-efficient DenseNet-BC:
# ``_bn_function_factory`` closures run under ``torch.utils.checkpoint.checkpoint`` when any
# input requires grad, ``add_module`` with trailing commas, ``_DenseBlock`` over
# ``named_children``, ``nn.Sequential(OrderedDict(...))``, the init loop by parameter name) and
# demo.py (AverageMeter, ``train_epoch`` with ``topk``/``torch.ne`` errors, nesterov SGD with
# weight decay, MultiStepLR with float milestones). Growth rate 12 -> 2, blocks (16, 16, 16) ->
# (2, 2), 4 initial features, bn_size 2, 3 classes, 4 images 3x8x8 in 2 batches, 2 epochs, run
# with ``efficient=True`` and ``efficient=False``: the same losses and gradients, while the
# checkpointed BatchNorms see their forward twice (running statistics updated again when the
# backward recomputes). The "Time" column of the printed log is dropped (wall clock); the
# init loop's ``normal_`` draws from the random stream, so ``init_params`` replaces the weights
# after the BatchNorm fills are checked. ``import torch.utils.checkpoint as cp`` is an
# ``importlib`` import of the ``torch`` argument's module. The checkpoint call runs as written
# (no ``use_reentrant``: the reentrant variant, with torch's warning asking to pass it) and
# with ``use_reentrant=False``.
def test_efficient_densenet_checkpointed_bn_function():
    def program(torch, log):
        import math
        from collections import OrderedDict
        nn = torch.nn
        F = torch.nn.functional
        cp = importlib.import_module(torch.__name__ + ".utils.checkpoint")

        def _bn_function_factory(norm, relu, conv):
            def bn_function(*inputs):
                concated_features = torch.cat(inputs, 1)
                bottleneck_output = conv(relu(norm(concated_features)))
                return bottleneck_output

            return bn_function

        class _DenseLayer(nn.Module):
            def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, efficient=False):
                super(_DenseLayer, self).__init__()
                self.add_module('norm1', nn.BatchNorm2d(num_input_features)),
                self.add_module('relu1', nn.ReLU(inplace=True)),
                self.add_module('conv1', nn.Conv2d(num_input_features, bn_size * growth_rate,
                                kernel_size=1, stride=1, bias=False)),
                self.add_module('norm2', nn.BatchNorm2d(bn_size * growth_rate)),
                self.add_module('relu2', nn.ReLU(inplace=True)),
                self.add_module('conv2', nn.Conv2d(bn_size * growth_rate, growth_rate,
                                kernel_size=3, stride=1, padding=1, bias=False)),
                self.drop_rate = drop_rate
                self.efficient = efficient

            def forward(self, *prev_features):
                bn_function = _bn_function_factory(self.norm1, self.relu1, self.conv1)
                if self.efficient and any(prev_feature.requires_grad for prev_feature in prev_features):
                    bottleneck_output = cp.checkpoint(bn_function, *prev_features, **CHECKPOINT_KW)
                else:
                    bottleneck_output = bn_function(*prev_features)
                new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
                if self.drop_rate > 0:
                    new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
                return new_features

        class _Transition(nn.Sequential):
            def __init__(self, num_input_features, num_output_features):
                super(_Transition, self).__init__()
                self.add_module('norm', nn.BatchNorm2d(num_input_features))
                self.add_module('relu', nn.ReLU(inplace=True))
                self.add_module('conv', nn.Conv2d(num_input_features, num_output_features,
                                                  kernel_size=1, stride=1, bias=False))
                self.add_module('pool', nn.AvgPool2d(kernel_size=2, stride=2))

        class _DenseBlock(nn.Module):
            def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, efficient=False):
                super(_DenseBlock, self).__init__()
                for i in range(num_layers):
                    layer = _DenseLayer(
                        num_input_features + i * growth_rate,
                        growth_rate=growth_rate,
                        bn_size=bn_size,
                        drop_rate=drop_rate,
                        efficient=efficient,
                    )
                    self.add_module('denselayer%d' % (i + 1), layer)

            def forward(self, init_features):
                features = [init_features]
                for name, layer in self.named_children():
                    new_features = layer(*features)
                    features.append(new_features)
                return torch.cat(features, 1)

        class DenseNet(nn.Module):
            def __init__(self, growth_rate=12, block_config=(16, 16, 16), compression=0.5,
                         num_init_features=24, bn_size=4, drop_rate=0,
                         num_classes=10, small_inputs=True, efficient=False):

                super(DenseNet, self).__init__()
                assert 0 < compression <= 1, 'compression of densenet should be between 0 and 1'

                # First convolution
                if small_inputs:
                    self.features = nn.Sequential(OrderedDict([
                        ('conv0', nn.Conv2d(3, num_init_features, kernel_size=3, stride=1, padding=1, bias=False)),
                    ]))
                else:
                    self.features = nn.Sequential(OrderedDict([
                        ('conv0', nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
                    ]))
                    self.features.add_module('norm0', nn.BatchNorm2d(num_init_features))
                    self.features.add_module('relu0', nn.ReLU(inplace=True))
                    self.features.add_module('pool0', nn.MaxPool2d(kernel_size=3, stride=2, padding=1,
                                                                   ceil_mode=False))

                # Each denseblock
                num_features = num_init_features
                for i, num_layers in enumerate(block_config):
                    block = _DenseBlock(
                        num_layers=num_layers,
                        num_input_features=num_features,
                        bn_size=bn_size,
                        growth_rate=growth_rate,
                        drop_rate=drop_rate,
                        efficient=efficient,
                    )
                    self.features.add_module('denseblock%d' % (i + 1), block)
                    num_features = num_features + num_layers * growth_rate
                    if i != len(block_config) - 1:
                        trans = _Transition(num_input_features=num_features,
                                            num_output_features=int(num_features * compression))
                        self.features.add_module('transition%d' % (i + 1), trans)
                        num_features = int(num_features * compression)

                # Final batch norm
                self.features.add_module('norm_final', nn.BatchNorm2d(num_features))

                # Linear layer
                self.classifier = nn.Linear(num_features, num_classes)

                # Initialization
                for name, param in self.named_parameters():
                    if 'conv' in name and 'weight' in name:
                        n = param.size(0) * param.size(2) * param.size(3)
                        param.data.normal_().mul_(math.sqrt(2. / n))
                    elif 'norm' in name and 'weight' in name:
                        param.data.fill_(1)
                    elif 'norm' in name and 'bias' in name:
                        param.data.fill_(0)
                    elif 'classifier' in name and 'bias' in name:
                        param.data.fill_(0)

            def forward(self, x):
                features = self.features(x)
                out = F.relu(features, inplace=True)
                out = F.adaptive_avg_pool2d(out, (1, 1))
                out = torch.flatten(out, 1)
                out = self.classifier(out)
                return out

        class AverageMeter(object):
            def __init__(self):
                self.reset()

            def reset(self):
                self.val = 0
                self.avg = 0
                self.sum = 0
                self.count = 0

            def update(self, val, n=1):
                self.val = val
                self.sum += val * n
                self.count += n
                self.avg = self.sum / self.count

        def train_epoch(model, loader, optimizer, epoch, n_epochs, print_freq=1):
            losses = AverageMeter()
            error = AverageMeter()
            model.train()
            for batch_idx, (input, target) in enumerate(loader):
                output = model(input)
                loss = torch.nn.functional.cross_entropy(output, target)
                batch_size = target.size(0)
                _, pred = output.data.cpu().topk(1, dim=1)
                error.update(torch.ne(pred.squeeze(), target.cpu()).float().sum().item() / batch_size, batch_size)
                losses.update(loss.item(), batch_size)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if batch_idx % print_freq == 0:
                    res = '\t'.join([
                        'Epoch: [%d/%d]' % (epoch + 1, n_epochs),
                        'Iter: [%d/%d]' % (batch_idx + 1, len(loader)),
                        'Loss %.4f (%.4f)' % (losses.val, losses.avg),
                        'Error %.4f (%.4f)' % (error.val, error.avg),
                    ])
                    print(res)
            return losses.avg, error.avg

        images = randn(torch, (4, 3, 8, 8), 31)
        targets = torch.tensor([0, 2, 1, 2])
        loader = [(images[:2], targets[:2]), (images[2:], targets[2:])]
        results = {}
        caught = warnings.catch_warnings(record=True)
        seen = caught.__enter__()
        warnings.simplefilter("always")
        for efficient in (True, False):
            model = DenseNet(growth_rate=2, block_config=(2, 2), num_init_features=4, bn_size=2,
                             num_classes=3, small_inputs=True, efficient=efficient)
            if efficient:
                log("norm fills", [model.features.denseblock1.denselayer1.norm1.weight,
                                   model.features.norm_final.bias, model.classifier.bias])
                log("children", [n for n, _ in model.features.named_children()])
            init_params(torch, model, 32, scale=0.5)
            n_epochs = 2
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
            scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[0.5 * n_epochs, 0.75 * n_epochs],
                                                             gamma=0.1)
            for epoch in range(n_epochs):
                log("epoch", train_epoch(model, loader, optimizer, epoch, n_epochs))
                scheduler.step()
            log("lr", scheduler.get_last_lr())
            layer = model.features.denseblock2.denselayer2
            log("conv1 grad", layer.conv1.weight.grad)
            log("norm1 running_var", layer.norm1.running_var)
            log("norm1 batches", layer.norm1.num_batches_tracked)
            log("norm2 batches", layer.norm2.num_batches_tracked)
            results[efficient] = [p.detach().clone() for p in model.parameters()]
            model.eval()
            with torch.no_grad():
                log("eval logits", model(images))
        caught.__exit__(None, None, None)
        log("same parameters", all(bool(torch.allclose(a, b, atol=1e-5))
                                   for a, b in zip(results[True], results[False])))
        log("checkpoint warnings", sorted(set((type(w.message).__name__, "use_reentrant" in str(w.message))
                                              for w in seen if "checkpoint" in str(w.message))))

    for CHECKPOINT_KW in ({}, {"use_reentrant": False}):
        run_both(program)


# dragen1860/MAML-Pytorch learner.py (Learner: a config list of layers held as flat
# ``nn.ParameterList``s -- BatchNorm running statistics as ``requires_grad=False`` Parameters fed to
# ``F.batch_norm`` -- a functional ``forward(x, vars=None, bn_training=True)``, ``extra_repr``, and
# overridden ``zero_grad``/``parameters``) and meta.py (Meta: first-order inner loops with
# ``torch.autograd.grad`` and ``fast_weights`` lists, query losses under ``torch.no_grad``, Adam on
# the meta loss; ``finetunning`` on a ``deepcopy``). The Omniglot config at 4 channels on 1x8x8
# images, 3-way 1-shot, 2 tasks, 2 inner steps (3 when fine-tuning), 2 meta steps. The config
# tests ``name is 'conv2d'`` (string identity, a SyntaxWarning on every import of this file):
# written ``==`` here. ``kaiming_normal_`` draws from the random stream, so ``init_params``
# replaces the weights after construction.
def test_maml_learner_functional_fast_weights():
    def program(torch, log):
        from types import SimpleNamespace
        nn = torch.nn
        F = torch.nn.functional
        optim = torch.optim

        class Learner(nn.Module):
            def __init__(self, config, imgc, imgsz):
                super(Learner, self).__init__()
                self.config = config
                self.vars = nn.ParameterList()
                self.vars_bn = nn.ParameterList()
                for i, (name, param) in enumerate(self.config):
                    if name == 'conv2d':
                        w = nn.Parameter(torch.ones(*param[:4]))
                        torch.nn.init.kaiming_normal_(w)
                        self.vars.append(w)
                        self.vars.append(nn.Parameter(torch.zeros(param[0])))
                    elif name == 'linear':
                        w = nn.Parameter(torch.ones(*param))
                        torch.nn.init.kaiming_normal_(w)
                        self.vars.append(w)
                        self.vars.append(nn.Parameter(torch.zeros(param[0])))
                    elif name == 'bn':
                        w = nn.Parameter(torch.ones(param[0]))
                        self.vars.append(w)
                        self.vars.append(nn.Parameter(torch.zeros(param[0])))
                        running_mean = nn.Parameter(torch.zeros(param[0]), requires_grad=False)
                        running_var = nn.Parameter(torch.ones(param[0]), requires_grad=False)
                        self.vars_bn.extend([running_mean, running_var])
                    elif name in ['tanh', 'relu', 'upsample', 'avg_pool2d', 'max_pool2d',
                                  'flatten', 'reshape', 'leakyrelu', 'sigmoid']:
                        continue
                    else:
                        raise NotImplementedError

            def extra_repr(self):
                info = ''
                for name, param in self.config:
                    if name == 'conv2d':
                        tmp = 'conv2d:(ch_in:%d, ch_out:%d, k:%dx%d, stride:%d, padding:%d)'\
                              %(param[1], param[0], param[2], param[3], param[4], param[5],)
                        info += tmp + '\n'
                    elif name == 'linear':
                        tmp = 'linear:(in:%d, out:%d)'%(param[1], param[0])
                        info += tmp + '\n'
                    elif name in ['flatten', 'tanh', 'relu', 'upsample', 'reshape', 'sigmoid', 'use_logits', 'bn']:
                        tmp = name + ':' + str(tuple(param))
                        info += tmp + '\n'
                    else:
                        raise NotImplementedError
                return info

            def forward(self, x, vars=None, bn_training=True):
                if vars is None:
                    vars = self.vars
                idx = 0
                bn_idx = 0
                for name, param in self.config:
                    if name == 'conv2d':
                        w, b = vars[idx], vars[idx + 1]
                        x = F.conv2d(x, w, b, stride=param[4], padding=param[5])
                        idx += 2
                    elif name == 'linear':
                        w, b = vars[idx], vars[idx + 1]
                        x = F.linear(x, w, b)
                        idx += 2
                    elif name == 'bn':
                        w, b = vars[idx], vars[idx + 1]
                        running_mean, running_var = self.vars_bn[bn_idx], self.vars_bn[bn_idx+1]
                        x = F.batch_norm(x, running_mean, running_var, weight=w, bias=b, training=bn_training)
                        idx += 2
                        bn_idx += 2
                    elif name == 'flatten':
                        x = x.view(x.size(0), -1)
                    elif name == 'relu':
                        x = F.relu(x, inplace=param[0])
                    elif name == 'max_pool2d':
                        x = F.max_pool2d(x, param[0], param[1], param[2])
                    else:
                        raise NotImplementedError
                assert idx == len(vars)
                assert bn_idx == len(self.vars_bn)
                return x

            def zero_grad(self, vars=None):
                with torch.no_grad():
                    if vars is None:
                        for p in self.vars:
                            if p.grad is not None:
                                p.grad.zero_()
                    else:
                        for p in vars:
                            if p.grad is not None:
                                p.grad.zero_()

            def parameters(self):
                return self.vars

        class Meta(nn.Module):
            def __init__(self, args, config):
                super(Meta, self).__init__()
                self.update_lr = args.update_lr
                self.meta_lr = args.meta_lr
                self.n_way = args.n_way
                self.k_spt = args.k_spt
                self.k_qry = args.k_qry
                self.task_num = args.task_num
                self.update_step = args.update_step
                self.update_step_test = args.update_step_test
                self.net = init_params(torch, Learner(config, args.imgc, args.imgsz), 41, scale=0.6)
                self.meta_optim = optim.Adam(self.net.parameters(), lr=self.meta_lr)

            def forward(self, x_spt, y_spt, x_qry, y_qry):
                task_num, setsz, c_, h, w = x_spt.size()
                querysz = x_qry.size(1)
                losses_q = [0 for _ in range(self.update_step + 1)]
                corrects = [0 for _ in range(self.update_step + 1)]
                for i in range(task_num):
                    logits = self.net(x_spt[i], vars=None, bn_training=True)
                    loss = F.cross_entropy(logits, y_spt[i])
                    grad = torch.autograd.grad(loss, self.net.parameters())
                    fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))
                    with torch.no_grad():
                        logits_q = self.net(x_qry[i], self.net.parameters(), bn_training=True)
                        loss_q = F.cross_entropy(logits_q, y_qry[i])
                        losses_q[0] += loss_q
                        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                        correct = torch.eq(pred_q, y_qry[i]).sum().item()
                        corrects[0] = corrects[0] + correct
                    with torch.no_grad():
                        logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                        loss_q = F.cross_entropy(logits_q, y_qry[i])
                        losses_q[1] += loss_q
                        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                        correct = torch.eq(pred_q, y_qry[i]).sum().item()
                        corrects[1] = corrects[1] + correct
                    for k in range(1, self.update_step):
                        logits = self.net(x_spt[i], fast_weights, bn_training=True)
                        loss = F.cross_entropy(logits, y_spt[i])
                        grad = torch.autograd.grad(loss, fast_weights)
                        fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                        logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                        loss_q = F.cross_entropy(logits_q, y_qry[i])
                        losses_q[k + 1] += loss_q
                        with torch.no_grad():
                            pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                            correct = torch.eq(pred_q, y_qry[i]).sum().item()
                            corrects[k + 1] = corrects[k + 1] + correct
                loss_q = losses_q[-1] / task_num
                self.meta_optim.zero_grad()
                loss_q.backward()
                log("meta loss", loss_q)
                log("meta grad", self.net.vars[0].grad)
                self.meta_optim.step()
                accs = np.array(corrects) / (querysz * task_num)
                return accs

            def finetunning(self, x_spt, y_spt, x_qry, y_qry):
                assert len(x_spt.shape) == 4
                querysz = x_qry.size(0)
                corrects = [0 for _ in range(self.update_step_test + 1)]
                net = copy.deepcopy(self.net)
                logits = net(x_spt)
                loss = F.cross_entropy(logits, y_spt)
                grad = torch.autograd.grad(loss, net.parameters())
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, net.parameters())))
                with torch.no_grad():
                    logits_q = net(x_qry, net.parameters(), bn_training=True)
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry).sum().item()
                    corrects[0] = corrects[0] + correct
                with torch.no_grad():
                    logits_q = net(x_qry, fast_weights, bn_training=True)
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry).sum().item()
                    corrects[1] = corrects[1] + correct
                for k in range(1, self.update_step_test):
                    logits = net(x_spt, fast_weights, bn_training=True)
                    loss = F.cross_entropy(logits, y_spt)
                    grad = torch.autograd.grad(loss, fast_weights)
                    fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                    logits_q = net(x_qry, fast_weights, bn_training=True)
                    loss_q = F.cross_entropy(logits_q, y_qry)
                    with torch.no_grad():
                        pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                        correct = torch.eq(pred_q, y_qry).sum().item()
                        corrects[k + 1] = corrects[k + 1] + correct
                log("finetune loss", loss_q)
                log("finetune bn running_mean", net.vars_bn[0])
                del net
                accs = np.array(corrects) / querysz
                return accs

        config = [
            ('conv2d', [4, 1, 3, 3, 2, 0]),
            ('relu', [True]),
            ('bn', [4]),
            ('conv2d', [4, 4, 3, 3, 2, 0]),
            ('relu', [True]),
            ('bn', [4]),
            ('flatten', []),
            ('linear', [3, 4])
        ]
        args = SimpleNamespace(update_lr=0.4, meta_lr=1e-2, n_way=3, k_spt=1, k_qry=2, task_num=2,
                               update_step=2, update_step_test=3, imgc=1, imgsz=8)
        maml = Meta(args, config)
        print(maml)
        tmp = filter(lambda x: x.requires_grad, maml.parameters())
        num = sum(map(lambda x: np.prod(x.shape), tmp))
        print('Total trainable tensors:', num)
        x_spt = randn(torch, (2, 3, 1, 8, 8), 42)
        y_spt = torch.tensor([[0, 1, 2], [2, 0, 1]])
        x_qry = randn(torch, (2, 6, 1, 8, 8), 43)
        y_qry = torch.tensor([[0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 1, 0]])
        for step in range(2):
            accs = maml(x_spt, y_spt, x_qry, y_qry)
            log("accs", accs)
        log("running stats", list(maml.net.vars_bn))
        log("bn stat flags", [p.requires_grad for p in maml.net.vars_bn])
        accs = maml.finetunning(x_spt[0], y_spt[0], x_qry[0], y_qry[0])
        log("finetune accs", accs)
        log("net running_mean untouched", maml.net.vars_bn[0])
        maml.net.zero_grad()
        log("zeroed grads", [p.grad for p in maml.net.parameters()][:2])

    # train-mode batch norm over 3-image batches of 3x3 and 1x1 maps divides by small variances,
    # so float32 rounding that differs between CPUs' kernels reaches the meta gradient as a few
    # 1e-6 (AVX-512: 3.2e-6 on one element)
    run_both(program, atol=1e-5)


# state-spaces/s4 models/s4/s4d.py (S4DKernel: a complex ``C`` kept as ``nn.Parameter(
# torch.view_as_real(C))`` and read back with ``view_as_complex``, ``register`` giving parameters
# an ``_optim`` attribute, a Vandermonde kernel through a complex ``einsum('hn, hnl -> hl')``;
# S4D: the FFT convolution ``torch.fft.rfft``/``irfft(n=2*L)``, a GLU over a 1x1 Conv1d) and
# example.py (S4Model: encoder, residual S4D blocks with post-LayerNorm and ``nn.Dropout1d``,
# mean pooling; ``split_train_val`` by ``random_split`` with a seeded ``torch.Generator``;
# ``setup_optimizer``: AdamW over the plain parameters plus one ``add_param_group`` per unique
# ``_optim`` dict, CosineAnnealingLR, the printed group table; ``train``/``eval`` with a
# best-accuracy ``torch.save`` checkpoint). d_model 128 -> 4, d_state 64 -> 4, 2 layers, dropout
# 0.1 -> 0 (masks come from each library's own stream), 6 sequences of length 8 with 2 features,
# 2 epochs; the einops ``repeat(torch.arange(N//2), 'n -> h n', h=H)`` is written
# ``torch.arange(N//2).repeat(H, 1)``; tqdm bars are dropped. The generators' streams differ
# between the libraries, so only the split's sizes are compared, and the parameters drawn with
# ``rand``/``randn`` are replaced by ``init_params``.
def test_s4d_fft_convolution_param_groups(tmp_path):
    def program(torch, log):
        import math
        nn = torch.nn
        optim = torch.optim
        dropout_fn = nn.Dropout1d

        class S4DKernel(nn.Module):
            """Generate convolution kernel from diagonal SSM parameters."""

            def __init__(self, d_model, N=64, dt_min=0.001, dt_max=0.1, lr=None):
                super().__init__()
                H = d_model
                log_dt = torch.rand(H) * (
                    math.log(dt_max) - math.log(dt_min)
                ) + math.log(dt_min)

                C = torch.randn(H, N // 2, dtype=torch.cfloat)
                self.C = nn.Parameter(torch.view_as_real(C))
                self.register("log_dt", log_dt, lr)

                log_A_real = torch.log(0.5 * torch.ones(H, N//2))
                A_imag = math.pi * torch.arange(N//2).repeat(H, 1)
                self.register("log_A_real", log_A_real, lr)
                self.register("A_imag", A_imag, lr)

            def forward(self, L):
                dt = torch.exp(self.log_dt)  # (H)
                C = torch.view_as_complex(self.C)  # (H N)
                A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H N)

                dtA = A * dt.unsqueeze(-1)  # (H N)
                K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)  # (H N L)
                C = C * (torch.exp(dtA)-1.) / A
                K = 2 * torch.einsum('hn, hnl -> hl', C, torch.exp(K)).real

                return K

            def register(self, name, tensor, lr=None):
                if lr == 0.0:
                    self.register_buffer(name, tensor)
                else:
                    self.register_parameter(name, nn.Parameter(tensor))

                    optim = {"weight_decay": 0.0}
                    if lr is not None: optim["lr"] = lr
                    setattr(getattr(self, name), "_optim", optim)

        class S4D(nn.Module):
            def __init__(self, d_model, d_state=64, dropout=0.0, transposed=True, **kernel_args):
                super().__init__()

                self.h = d_model
                self.n = d_state
                self.d_output = self.h
                self.transposed = transposed

                self.D = nn.Parameter(torch.randn(self.h))
                self.kernel = S4DKernel(self.h, N=self.n, **kernel_args)
                self.activation = nn.GELU()
                self.dropout = nn.Identity()
                self.output_linear = nn.Sequential(
                    nn.Conv1d(self.h, 2*self.h, kernel_size=1),
                    nn.GLU(dim=-2),
                )

            def forward(self, u, **kwargs):
                if not self.transposed: u = u.transpose(-1, -2)
                L = u.size(-1)
                k = self.kernel(L=L)  # (H L)
                k_f = torch.fft.rfft(k, n=2*L)  # (H L)
                u_f = torch.fft.rfft(u, n=2*L)  # (B H L)
                y = torch.fft.irfft(u_f*k_f, n=2*L)[..., :L]  # (B H L)
                y = y + u * self.D.unsqueeze(-1)
                y = self.dropout(self.activation(y))
                y = self.output_linear(y)
                if not self.transposed: y = y.transpose(-1, -2)
                return y, None

        class S4Model(nn.Module):
            def __init__(self, d_input, d_output=10, d_model=256, n_layers=4, dropout=0.2, prenorm=False):
                super().__init__()
                self.prenorm = prenorm
                self.encoder = nn.Linear(d_input, d_model)
                self.s4_layers = nn.ModuleList()
                self.norms = nn.ModuleList()
                self.dropouts = nn.ModuleList()
                for _ in range(n_layers):
                    self.s4_layers.append(
                        S4D(d_model, d_state=4, dropout=dropout, transposed=True, lr=min(0.001, args_lr))
                    )
                    self.norms.append(nn.LayerNorm(d_model))
                    self.dropouts.append(dropout_fn(dropout))
                self.decoder = nn.Linear(d_model, d_output)

            def forward(self, x):
                x = self.encoder(x)  # (B, L, d_input) -> (B, L, d_model)
                x = x.transpose(-1, -2)  # (B, L, d_model) -> (B, d_model, L)
                for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
                    z = x
                    if self.prenorm:
                        z = norm(z.transpose(-1, -2)).transpose(-1, -2)
                    z, _ = layer(z)
                    z = dropout(z)
                    x = z + x
                    if not self.prenorm:
                        x = norm(x.transpose(-1, -2)).transpose(-1, -2)
                x = x.transpose(-1, -2)
                x = x.mean(dim=1)
                x = self.decoder(x)  # (B, d_model) -> (B, d_output)
                return x

        def split_train_val(train, val_split):
            train_len = int(len(train) * (1.0-val_split))
            train, val = torch.utils.data.random_split(
                train,
                (train_len, len(train) - train_len),
                generator=torch.Generator().manual_seed(42),
            )
            return train, val

        def setup_optimizer(model, lr, weight_decay, epochs):
            all_parameters = list(model.parameters())
            params = [p for p in all_parameters if not hasattr(p, "_optim")]
            optimizer = optim.AdamW(params, lr=lr, weight_decay=weight_decay)
            hps = [getattr(p, "_optim") for p in all_parameters if hasattr(p, "_optim")]
            hps = [
                dict(s) for s in sorted(list(dict.fromkeys(frozenset(hp.items()) for hp in hps)))
            ]  # Unique dicts
            for hp in hps:
                params = [p for p in all_parameters if getattr(p, "_optim", None) == hp]
                optimizer.add_param_group(
                    {"params": params, **hp}
                )
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
            keys = sorted(set([k for hp in hps for k in hp.keys()]))
            for i, g in enumerate(optimizer.param_groups):
                group_hps = {k: g.get(k, None) for k in keys}
                print(' | '.join([
                    f"Optimizer group {i}",
                    f"{len(g['params'])} tensors",
                ] + [f"{k} {v}" for k, v in group_hps.items()]))
            return optimizer, scheduler

        args_lr, weight_decay, epochs = 0.01, 0.01, 2
        rs = np.random.RandomState(51)
        xs = torch.tensor(rs.randn(7, 8, 2).astype(np.float32))
        ys = torch.tensor(rs.randint(0, 3, size=7))
        dataset = torch.utils.data.TensorDataset(xs, ys)
        trainset, valset = split_train_val(dataset, val_split=0.2)
        log("split sizes", [len(trainset), len(valset)])
        trainloader = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, range(6)), batch_size=3, shuffle=False)
        valloader = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, [6]), batch_size=3, shuffle=False)

        model = S4Model(d_input=2, d_output=3, d_model=4, n_layers=2, dropout=0.0)
        log("optim attrs", [getattr(p, "_optim", None) for p in model.parameters()])
        log("C shape", model.s4_layers[0].kernel.C.shape)
        init_params(torch, model, 52, scale=0.5)
        with torch.no_grad():
            for layer in model.s4_layers:   # log_dt inside [log 0.001, log 0.1] as drawn
                layer.kernel.log_dt.mul_(3.0).sub_(4.5)
                layer.kernel.log_A_real.copy_(torch.log(0.5 * torch.ones(4, 2)))
                layer.kernel.A_imag.copy_(math.pi * torch.arange(2).repeat(4, 1))
        criterion = nn.CrossEntropyLoss()
        optimizer, scheduler = setup_optimizer(model, lr=args_lr, weight_decay=weight_decay, epochs=epochs)
        log("kernel", model.s4_layers[0].kernel(L=8))
        best = {"acc": 0}

        def train():
            model.train()
            train_loss = 0
            correct = 0
            total = 0
            for batch_idx, (inputs, targets) in enumerate(trainloader):
                optimizer.zero_grad()
                outputs = model(inputs)
                loss = criterion(outputs, targets)
                loss.backward()
                optimizer.step()
                train_loss += loss.item()
                _, predicted = outputs.max(1)
                total += targets.size(0)
                correct += predicted.eq(targets).sum().item()
                print('Batch Idx: (%d/%d) | Loss: %.3f | Acc: %.3f%% (%d/%d)' %
                      (batch_idx, len(trainloader), train_loss/(batch_idx+1), 100.*correct/total, correct, total))
            log("C grad", model.s4_layers[1].kernel.C.grad)
            log("log_dt grad", model.s4_layers[0].kernel.log_dt.grad)

        def eval(epoch, dataloader, checkpoint=False):
            model.eval()
            eval_loss = 0
            correct = 0
            total = 0
            with torch.no_grad():
                for batch_idx, (inputs, targets) in enumerate(dataloader):
                    outputs = model(inputs)
                    loss = criterion(outputs, targets)
                    eval_loss += loss.item()
                    _, predicted = outputs.max(1)
                    total += targets.size(0)
                    correct += predicted.eq(targets).sum().item()
            log("eval loss", eval_loss)
            if checkpoint:
                acc = 100.*correct/total
                if acc >= best["acc"]:
                    state = {
                        'model': model.state_dict(),
                        'acc': acc,
                        'epoch': epoch,
                    }
                    torch.save(state, os.path.join(str(tmp_path), 'ckpt-%s.pth' % torch.__name__))
                    best["acc"] = acc
                return acc

        for epoch in range(epochs):
            train()
            val_acc = eval(epoch, valloader, checkpoint=True)
            scheduler.step()
            log("lrs", [g["lr"] for g in optimizer.param_groups])
        checkpoint = torch.load(os.path.join(str(tmp_path), 'ckpt-%s.pth' % torch.__name__))
        log("checkpoint", [checkpoint['acc'], checkpoint['epoch'], sorted(checkpoint['model'])[:4]])
        model.load_state_dict(checkpoint['model'])
        log("reloaded out", model(xs[:2]))

    run_both(program)


# higgsfield/RL-Adventure "2.double dqn.ipynb" (the CUDA-aware ``Variable`` lambda over
# ``autograd.Variable``; a ``deque`` ReplayBuffer sampled with ``random.sample``; epsilon-greedy
# ``act`` with ``Variable(..., volatile=True)`` and ``q_value.max(1)[1].data[0]`` -- a 0-d tensor
# action that the buffer stores and ``torch.LongTensor(action)`` later reads from a tuple mixing
# tensors and ints; ``update_target`` by ``load_state_dict``; the double-DQN ``compute_td_loss``
# with ``gather`` and ``Variable(expected_q_value.data)``). gym's CartPole-v0 becomes a small
# deterministic numpy cart-pole with gym's ``reset``/``step`` interface; widths 128 -> 16, 10000
# frames -> 60, batch 32 -> 8, epsilon decay 500 -> 20, the target updated every 25 frames
# (the notebook's 100); plotting is dropped.
def test_rl_adventure_double_dqn_volatile_variables():
    def program(torch, log):
        import math
        import random
        from collections import deque
        nn = torch.nn
        optim = torch.optim
        autograd = torch.autograd

        class CartPole:
            """Deterministic cart-pole dynamics with gym's interface (4 observations, 2 actions)."""
            class observation_space:
                shape = (4,)

            class action_space:
                n = 2

            def __init__(self):
                self.rs = np.random.RandomState(61)

            def reset(self):
                self.s = self.rs.uniform(-0.05, 0.05, size=4)
                self.t = 0
                return self.s.copy()

            def step(self, action):
                x, x_dot, th, th_dot = self.s
                force = 10.0 if int(action) == 1 else -10.0
                th_acc = (9.8 * math.sin(th) - math.cos(th) * force / 1.1) / (0.5 * (4.0 / 3.0 - 0.1 * math.cos(th) ** 2 / 1.1))
                x_acc = (force + 0.05 * th_dot ** 2 * math.sin(th)) / 1.1 - 0.05 * th_acc * math.cos(th) / 1.1
                self.s = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, th + 0.02 * th_dot, th_dot + 0.02 * th_acc])
                self.t += 1
                done = bool(abs(self.s[0]) > 2.4 or abs(self.s[2]) > 0.21 or self.t >= 20)
                return self.s.copy(), 1.0, done, {}

        env = CartPole()
        USE_CUDA = torch.cuda.is_available()
        Variable = lambda *args, **kwargs: autograd.Variable(*args, **kwargs).cuda() if USE_CUDA else autograd.Variable(*args, **kwargs)  # noqa: E731

        class ReplayBuffer(object):
            def __init__(self, capacity):
                self.buffer = deque(maxlen=capacity)

            def push(self, state, action, reward, next_state, done):
                state      = np.expand_dims(state, 0)
                next_state = np.expand_dims(next_state, 0)

                self.buffer.append((state, action, reward, next_state, done))

            def sample(self, batch_size):
                state, action, reward, next_state, done = zip(*random.sample(self.buffer, batch_size))
                return np.concatenate(state), action, reward, np.concatenate(next_state), done

            def __len__(self):
                return len(self.buffer)

        epsilon_start = 1.0
        epsilon_final = 0.01
        epsilon_decay = 20

        epsilon_by_frame = lambda frame_idx: epsilon_final + (epsilon_start - epsilon_final) * math.exp(-1. * frame_idx / epsilon_decay)  # noqa: E731

        class DQN(nn.Module):
            def __init__(self, num_inputs, num_actions):
                super(DQN, self).__init__()

                self.layers = nn.Sequential(
                    nn.Linear(env.observation_space.shape[0], 16),
                    nn.ReLU(),
                    nn.Linear(16, 16),
                    nn.ReLU(),
                    nn.Linear(16, env.action_space.n)
                )

            def forward(self, x):
                return self.layers(x)

            def act(self, state, epsilon):
                if random.random() > epsilon:
                    state   = Variable(torch.FloatTensor(state).unsqueeze(0), volatile=True)
                    q_value = self.forward(state)
                    action  = q_value.max(1)[1].data[0]
                else:
                    action = random.randrange(env.action_space.n)
                return action

        current_model = init_params(torch, DQN(env.observation_space.shape[0], env.action_space.n), 62, scale=0.5)
        target_model  = DQN(env.observation_space.shape[0], env.action_space.n)
        optimizer = optim.Adam(current_model.parameters())
        replay_buffer = ReplayBuffer(1000)

        def update_target(current_model, target_model):
            target_model.load_state_dict(current_model.state_dict())

        update_target(current_model, target_model)

        def compute_td_loss(batch_size):
            state, action, reward, next_state, done = replay_buffer.sample(batch_size)

            state      = Variable(torch.FloatTensor(np.float32(state)))
            next_state = Variable(torch.FloatTensor(np.float32(next_state)))
            action     = Variable(torch.LongTensor(action))
            reward     = Variable(torch.FloatTensor(reward))
            done       = Variable(torch.FloatTensor(done))

            q_values      = current_model(state)
            next_q_values = current_model(next_state)
            next_q_state_values = target_model(next_state)

            q_value       = q_values.gather(1, action.unsqueeze(1)).squeeze(1)
            next_q_value = next_q_state_values.gather(1, torch.max(next_q_values, 1)[1].unsqueeze(1)).squeeze(1)
            expected_q_value = reward + gamma * next_q_value * (1 - done)

            loss = (q_value - Variable(expected_q_value.data)).pow(2).mean()

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            return loss

        num_frames = 60
        batch_size = 8
        gamma      = 0.99

        losses = []
        all_rewards = []
        episode_reward = 0
        actions = []
        with seeded(63), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            state = env.reset()
            for frame_idx in range(1, num_frames + 1):
                epsilon = epsilon_by_frame(frame_idx)
                action = current_model.act(state, epsilon)
                actions.append(int(action))

                next_state, reward, done, _ = env.step(action)
                replay_buffer.push(state, action, reward, next_state, done)

                state = next_state
                episode_reward += reward

                if done:
                    state = env.reset()
                    all_rewards.append(episode_reward)
                    episode_reward = 0

                if len(replay_buffer) > batch_size:
                    loss = compute_td_loss(batch_size)
                    losses.append(loss.item())

                if frame_idx % 25 == 0:
                    update_target(current_model, target_model)
        log("actions", actions)
        log("greedy action types", sorted(set(type(a).__name__ for _, a, _, _, _ in replay_buffer.buffer)))
        log("losses", losses)
        log("rewards", all_rewards)
        log("target", target_model.layers[4].weight)
        log("grad", current_model.layers[0].weight.grad)
        log("volatile warnings", sum("volatile was removed" in str(w.message) for w in caught))

    run_both(program)
