"""Round-17 public programs (``tests/api/test_public_programs_round17.py`` runs them whole and
eagerly against torch), each condensed to its model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- sfujim/TD3 TD3.py: the agent's ``train`` method as the compiled step -- target actions from
  ``copy.deepcopy`` target networks under ``torch.no_grad``, ``torch.min`` of twin critics, the
  critic's Adam step, and every second call the actor's Adam step through ``critic.Q1`` and
  Polyak averaging with ``target_param.data.copy_``; as written (``self.total_it += 1`` in the
  step: eager every call) and with the counter moved to the loop (two traced programs);
- ritheshkumar95/pytorch-vqvae functions.py + modules.py: the straight-through
  ``autograd.Function`` (a ``mark_non_differentiable`` index output, ``needs_input_grad``,
  ``index_add_`` codebook gradient) inside a compiled VQ-VAE step;
- vgsatorras/egnn models/egnn_clean/egnn_clean.py: ``scatter_add_`` segment sums and means into
  ``new_full`` buffers over a fixed edge list, layers found through ``self._modules``;
- bentrevett/pytorch-seq2seq tutorial 3: the attention seq2seq step with greedy decoding
  (``argmax`` tokens fed back through the embedding) and ``outputs[t] = output`` slice writes,
  ``clip_grad_norm_`` and Adam;
- gpleiss/efficient_densenet_pytorch models/densenet.py: the BatchNorm-ReLU-conv closure under
  ``torch.utils.checkpoint.checkpoint`` (as written: a warning every call, eager; with
  ``use_reentrant`` passed either way: traced), nesterov SGD with weight decay;
- state-spaces/s4 models/s4/s4d.py + example.py: the complex Vandermonde kernel and the
  ``rfft``/``irfft`` convolution under AdamW with a second, ``_optim`` parameter group;
- higgsfield/RL-Adventure "2.double dqn.ipynb": the double-DQN TD step (``autograd.Variable``
  wrappers, ``gather`` over a target network synced by ``load_state_dict`` between calls).
"""
import copy

import numpy as np
import pytest

import tracegrad

from ._harness import change, check_compiled, data, labels, np_init


def _no_breaks(run):
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] >= 1, run.step.stats


# ---- sfujim/TD3 TD3.py ---------------------------------------------------------------------
def _td3(mod):
    nn, F = mod.nn, mod.nn.functional

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
            return self.max_action * mod.tanh(self.l3(a))

    class Critic(nn.Module):
        def __init__(self, state_dim, action_dim):
            super(Critic, self).__init__()
            self.l1 = nn.Linear(state_dim + action_dim, 16)
            self.l2 = nn.Linear(16, 16)
            self.l3 = nn.Linear(16, 1)
            self.l4 = nn.Linear(state_dim + action_dim, 16)
            self.l5 = nn.Linear(16, 16)
            self.l6 = nn.Linear(16, 1)

        def forward(self, state, action):
            sa = mod.cat([state, action], 1)
            q1 = F.relu(self.l1(sa))
            q1 = F.relu(self.l2(q1))
            q1 = self.l3(q1)
            q2 = F.relu(self.l4(sa))
            q2 = F.relu(self.l5(q2))
            q2 = self.l6(q2)
            return q1, q2

        def Q1(self, state, action):
            sa = mod.cat([state, action], 1)
            q1 = F.relu(self.l1(sa))
            q1 = F.relu(self.l2(q1))
            q1 = self.l3(q1)
            return q1

    return Actor, Critic


def _td3_program(counter_in_step):
    """``make`` for TD3's ``train``: with ``counter_in_step`` the step is the agent's bound method
    bumping ``self.total_it`` as written; otherwise the loop keeps the counter and passes whether
    this call updates the policy."""
    def make(mod, wrap):
        Actor, Critic = _td3(mod)
        F = mod.nn.functional

        class TD3(object):
            def __init__(self, max_action=1.5, discount=0.99, tau=0.05, policy_noise=0.2,
                         noise_clip=0.5, policy_freq=2):
                self.actor = np_init(Actor(3, 2, max_action), mod, seed=1, scale=0.4)
                self.actor_target = copy.deepcopy(self.actor)
                self.actor_optimizer = mod.optim.Adam(self.actor.parameters(), lr=3e-3)
                self.critic = np_init(Critic(3, 2), mod, seed=2, scale=0.4)
                self.critic_target = copy.deepcopy(self.critic)
                self.critic_optimizer = mod.optim.Adam(self.critic.parameters(), lr=3e-3)
                self.max_action = max_action
                self.discount = discount
                self.tau = tau
                self.policy_noise = policy_noise
                self.noise_clip = noise_clip
                self.policy_freq = policy_freq
                self.total_it = 0

            def train(self, state, action, next_state, reward, not_done, randn, update_policy=None):
                if update_policy is None:
                    self.total_it += 1
                    update_policy = self.total_it % self.policy_freq == 0
                with mod.no_grad():
                    noise = (randn * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
                    next_action = (self.actor_target(next_state) + noise).clamp(-self.max_action, self.max_action)
                    target_Q1, target_Q2 = self.critic_target(next_state, next_action)
                    target_Q = mod.min(target_Q1, target_Q2)
                    target_Q = reward + not_done * self.discount * target_Q
                current_Q1, current_Q2 = self.critic(state, action)
                critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)
                self.critic_optimizer.zero_grad()
                critic_loss.backward()
                self.critic_optimizer.step()
                actor_loss = None
                if update_policy:
                    actor_loss = -self.critic.Q1(state, self.actor(state)).mean()
                    self.actor_optimizer.zero_grad()
                    actor_loss.backward()
                    self.actor_optimizer.step()
                    for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                        target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
                    for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                        target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
                return critic_loss, actor_loss, target_Q

        agent = TD3()
        train = wrap(agent.train)

        def batch(i):
            rs = np.random.RandomState(30 + i)
            f = lambda *s: mod.tensor(rs.randn(*s).astype(np.float32))   # noqa: E731
            args = (f(4, 3), f(4, 2).clamp(-1.5, 1.5), f(4, 3), f(4, 1),
                    mod.tensor((rs.rand(4, 1) > 0.2).astype(np.float32)), f(4, 2))
            return args if counter_in_step else args + ((i + 1) % 2 == 0,)

        state = {"actor": agent.actor, "critic": agent.critic, "actor_target": agent.actor_target,
                 "critic_target": agent.critic_target, "aopt": agent.actor_optimizer,
                 "copt": agent.critic_optimizer, "total_it": lambda: agent.total_it}
        return train, state, batch
    return make


def test_td3_train_counter_attribute_runs_eagerly():
    """``self.total_it += 1`` inside the step is a side effect a traced program would not repeat:
    every call runs eagerly (a graph break naming the attribute), and compiled == eager == torch."""
    run = check_compiled(_td3_program(True), calls=4, torch_too=True, rtol=1e-4, atol=1e-5)
    breaks = run.step.stats["graph_breaks"]
    assert breaks and "total_it" in breaks[0][0], run.step.stats
    assert run.step.stats["traces"] == 0 and run.step.stats["eager_calls"] == 4, run.step.stats


def test_td3_train_delayed_policy_flag():
    """The counter kept by the loop, the step gets ``update_policy`` (False, True, False, True):
    the first call runs eagerly (lazily created state), the first policy update is traced while
    the actor's Adam state does not exist yet and creates it, the critic-only call is a second
    program and the next policy update a third (the actor's Adam state now an input): no graph
    break, and the eager agent's numbers."""
    run = check_compiled(_td3_program(False), calls=4, torch_too=True, rtol=1e-4, atol=1e-5)
    _no_breaks(run)
    assert run.step.stats["traces"] == 3 and run.step.stats["eager_calls"] == 1, run.step.stats


# ---- ritheshkumar95/pytorch-vqvae functions.py + modules.py -----------------------------------
def _vqvae(mod):
    nn = mod.nn
    Function = mod.autograd.Function

    class VectorQuantization(Function):
        @staticmethod
        def forward(ctx, inputs, codebook):
            with mod.no_grad():
                embedding_size = codebook.size(1)
                inputs_size = inputs.size()
                inputs_flatten = inputs.view(-1, embedding_size)
                codebook_sqr = mod.sum(codebook ** 2, dim=1)
                inputs_sqr = mod.sum(inputs_flatten ** 2, dim=1, keepdim=True)
                distances = mod.addmm(codebook_sqr + inputs_sqr,
                    inputs_flatten, codebook.t(), alpha=-2.0, beta=1.0)
                _, indices_flatten = mod.min(distances, dim=1)
                indices = indices_flatten.view(*inputs_size[:-1])
                ctx.mark_non_differentiable(indices)
                return indices

        @staticmethod
        def backward(ctx, grad_output):
            raise RuntimeError('VectorQuantization is not differentiable')

    class VectorQuantizationStraightThrough(Function):
        @staticmethod
        def forward(ctx, inputs, codebook):
            indices = vq(inputs, codebook)
            indices_flatten = indices.view(-1)
            ctx.save_for_backward(indices_flatten, codebook)
            ctx.mark_non_differentiable(indices_flatten)
            codes_flatten = mod.index_select(codebook, dim=0, index=indices_flatten)
            codes = codes_flatten.view_as(inputs)
            return (codes, indices_flatten)

        @staticmethod
        def backward(ctx, grad_output, grad_indices):
            grad_inputs, grad_codebook = None, None
            if ctx.needs_input_grad[0]:
                grad_inputs = grad_output.clone()
            if ctx.needs_input_grad[1]:
                indices, codebook = ctx.saved_tensors
                embedding_size = codebook.size(1)
                grad_output_flatten = (grad_output.contiguous().view(-1, embedding_size))
                grad_codebook = mod.zeros_like(codebook)
                grad_codebook.index_add_(0, indices, grad_output_flatten)
            return (grad_inputs, grad_codebook)

    vq = VectorQuantization.apply
    vq_st = VectorQuantizationStraightThrough.apply

    class VQEmbedding(nn.Module):
        def __init__(self, K, D):
            super().__init__()
            self.embedding = nn.Embedding(K, D)

        def straight_through(self, z_e_x):
            z_e_x_ = z_e_x.permute(0, 2, 3, 1).contiguous()
            z_q_x_, indices = vq_st(z_e_x_, self.embedding.weight.detach())
            z_q_x = z_q_x_.permute(0, 3, 1, 2).contiguous()
            z_q_x_bar_flatten = mod.index_select(self.embedding.weight, dim=0, index=indices)
            z_q_x_bar_ = z_q_x_bar_flatten.view_as(z_e_x_)
            z_q_x_bar = z_q_x_bar_.permute(0, 3, 1, 2).contiguous()
            return z_q_x, z_q_x_bar

    class VectorQuantizedVAE(nn.Module):   # ResBlocks dropped; BatchNorm in train mode kept
        def __init__(self, input_dim, dim, K=512):
            super().__init__()
            self.encoder = nn.Sequential(
                nn.Conv2d(input_dim, dim, 4, 2, 1), nn.BatchNorm2d(dim), nn.ReLU(True),
                nn.Conv2d(dim, dim, 4, 2, 1))
            self.codebook = VQEmbedding(K, dim)
            self.decoder = nn.Sequential(
                nn.ReLU(True), nn.ConvTranspose2d(dim, dim, 4, 2, 1), nn.BatchNorm2d(dim),
                nn.ReLU(True), nn.ConvTranspose2d(dim, input_dim, 4, 2, 1), nn.Tanh())

        def forward(self, x):
            z_e_x = self.encoder(x)
            z_q_x_st, z_q_x = self.codebook.straight_through(z_e_x)
            x_tilde = self.decoder(z_q_x_st)
            return x_tilde, z_e_x, z_q_x

    return VectorQuantizedVAE(1, 4, K=6)


def test_vqvae_straight_through_step():
    def make(mod, wrap):
        F = mod.nn.functional
        model = np_init(_vqvae(mod), mod, seed=3, scale=0.5)
        optimizer = mod.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(images):
            optimizer.zero_grad()
            x_tilde, z_e_x, z_q_x = model(images)
            loss_recons = F.mse_loss(x_tilde, images)
            loss_vq = F.mse_loss(z_q_x, z_e_x.detach())
            loss_commit = F.mse_loss(z_e_x, z_q_x.detach())
            loss = loss_recons + loss_vq + 1.0 * loss_commit
            loss.backward()
            optimizer.step()
            return loss, loss_recons
        return wrap(step), {"model": model, "opt": optimizer}, lambda i: (data(mod, i, 2, 1, 8, 8).tanh(),)

    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- vgsatorras/egnn models/egnn_clean/egnn_clean.py ------------------------------------------
def _egnn(mod):
    nn = mod.nn

    def unsorted_segment_sum(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        result = data.new_full(result_shape, 0)
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result.scatter_add_(0, segment_ids, data)
        return result

    def unsorted_segment_mean(data, segment_ids, num_segments):
        result_shape = (num_segments, data.size(1))
        segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
        result = data.new_full(result_shape, 0)
        count = data.new_full(result_shape, 0)
        result.scatter_add_(0, segment_ids, data)
        count.scatter_add_(0, segment_ids, mod.ones_like(data))
        return result / count.clamp(min=1)

    class E_GCL(nn.Module):
        def __init__(self, nf, edges_in_d=1, act_fn=nn.SiLU()):
            super(E_GCL, self).__init__()
            self.edge_mlp = nn.Sequential(nn.Linear(nf * 2 + 1 + edges_in_d, nf), act_fn,
                                          nn.Linear(nf, nf), act_fn)
            self.node_mlp = nn.Sequential(nn.Linear(nf + nf, nf), act_fn, nn.Linear(nf, nf))
            self.coord_mlp = nn.Sequential(nn.Linear(nf, nf), act_fn, nn.Linear(nf, 1, bias=False))

        def forward(self, h, edge_index, coord, edge_attr):
            row, col = edge_index
            coord_diff = coord[row] - coord[col]
            radial = mod.sum(coord_diff**2, 1).unsqueeze(1)
            edge_feat = self.edge_mlp(mod.cat([h[row], h[col], radial, edge_attr], dim=1))
            trans = coord_diff * self.coord_mlp(edge_feat)
            coord = coord + unsorted_segment_mean(trans, row, num_segments=coord.size(0))
            agg = unsorted_segment_sum(edge_feat, row, num_segments=h.size(0))
            h = h + self.node_mlp(mod.cat([h, agg], dim=1))
            return h, coord, edge_attr

    class EGNN(nn.Module):
        def __init__(self, in_node_nf, hidden_nf, out_node_nf, n_layers=2):
            super(EGNN, self).__init__()
            self.n_layers = n_layers
            self.embedding_in = nn.Linear(in_node_nf, hidden_nf)
            self.embedding_out = nn.Linear(hidden_nf, out_node_nf)
            for i in range(0, n_layers):
                self.add_module("gcl_%d" % i, E_GCL(hidden_nf))

        def forward(self, h, x, edges, edge_attr):
            h = self.embedding_in(h)
            for i in range(0, self.n_layers):
                h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
            h = self.embedding_out(h)
            return h, x

    return EGNN(1, 8, 1)


def test_egnn_segment_sum_step():
    n = 4
    rows = [i for i in range(n) for j in range(n) if i != j]
    cols = [j for i in range(n) for j in range(n) if i != j]

    def make(mod, wrap):
        model = np_init(_egnn(mod), mod, seed=7, scale=0.3)
        opt = mod.optim.Adam(model.parameters(), lr=1e-2)
        edges = [mod.LongTensor(rows), mod.LongTensor(cols)]
        edge_attr = mod.ones(len(rows), 1)

        def step(h, x, y):
            opt.zero_grad()
            h_pred, x_pred = model(h, x, edges, edge_attr)
            loss = ((h_pred - y) ** 2).mean() + (x_pred - x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss, x_pred
        return wrap(step), {"model": model, "opt": opt}, \
            lambda i: (data(mod, i, n, 1), data(mod, i, n, 3, seed=120), data(mod, i, n, 1, seed=140))

    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- bentrevett/pytorch-seq2seq "3 - Neural Machine Translation by Jointly Learning to Align
# and Translate" ---------------------------------------------------------------------------------
def _seq2seq(mod):
    nn = mod.nn

    class Encoder(nn.Module):
        def __init__(self, input_dim, embedding_dim, encoder_hidden_dim, decoder_hidden_dim):
            super().__init__()
            self.embedding = nn.Embedding(input_dim, embedding_dim)
            self.rnn = nn.GRU(embedding_dim, encoder_hidden_dim, bidirectional=True)
            self.fc = nn.Linear(encoder_hidden_dim * 2, decoder_hidden_dim)

        def forward(self, src):
            outputs, hidden = self.rnn(self.embedding(src))
            hidden = mod.tanh(self.fc(mod.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
            return outputs, hidden

    class Attention(nn.Module):
        def __init__(self, encoder_hidden_dim, decoder_hidden_dim):
            super().__init__()
            self.attn_fc = nn.Linear((encoder_hidden_dim * 2) + decoder_hidden_dim, decoder_hidden_dim)
            self.v_fc = nn.Linear(decoder_hidden_dim, 1, bias=False)

        def forward(self, hidden, encoder_outputs):
            src_length = encoder_outputs.shape[0]
            hidden = hidden.unsqueeze(1).repeat(1, src_length, 1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            energy = mod.tanh(self.attn_fc(mod.cat((hidden, encoder_outputs), dim=2)))
            attention = self.v_fc(energy).squeeze(2)
            return mod.softmax(attention, dim=1)

    class Decoder(nn.Module):
        def __init__(self, output_dim, embedding_dim, encoder_hidden_dim, decoder_hidden_dim, attention):
            super().__init__()
            self.output_dim = output_dim
            self.attention = attention
            self.embedding = nn.Embedding(output_dim, embedding_dim)
            self.rnn = nn.GRU((encoder_hidden_dim * 2) + embedding_dim, decoder_hidden_dim)
            self.fc_out = nn.Linear((encoder_hidden_dim * 2) + decoder_hidden_dim + embedding_dim, output_dim)

        def forward(self, input, hidden, encoder_outputs):
            embedded = self.embedding(input.unsqueeze(0))
            a = self.attention(hidden, encoder_outputs).unsqueeze(1)
            weighted = mod.bmm(a, encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
            output, hidden = self.rnn(mod.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
            prediction = self.fc_out(mod.cat((output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1))
            return prediction, hidden.squeeze(0), a.squeeze(1)

    class Seq2Seq(nn.Module):
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder

        def forward(self, src, trg, teacher_forcing):
            batch_size = src.shape[1]
            trg_length = trg.shape[0]
            outputs = mod.zeros(trg_length, batch_size, self.decoder.output_dim)
            encoder_outputs, hidden = self.encoder(src)
            input = trg[0, :]
            for t in range(1, trg_length):
                output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
                outputs[t] = output
                top1 = output.argmax(1)
                input = trg[t] if teacher_forcing[t] else top1
            return outputs

    attention = Attention(6, 6)
    return Seq2Seq(Encoder(9, 5, 6, 6), Decoder(8, 5, 6, 6, attention))


def test_seq2seq_attention_step():
    # the teacher-forcing coin flips (``random.random() < ratio`` in the tutorial) are drawn
    # outside the step and passed in as a fixed pattern: a Python choice the trace specialises on
    forcing = [None, True, False, True, False]

    def make(mod, wrap):
        model = np_init(_seq2seq(mod), mod, seed=13, scale=0.4)
        optimizer = mod.optim.Adam(model.parameters(), lr=1e-2)
        criterion = mod.nn.CrossEntropyLoss(ignore_index=1)

        def step(src, trg):
            optimizer.zero_grad()
            output = model(src, trg, forcing)
            output_dim = output.shape[-1]
            output = output[1:].view(-1, output_dim)
            trg = trg[1:].view(-1)
            loss = criterion(output, trg)
            loss.backward()
            norm = mod.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return loss, norm

        def batch(i):
            rs = np.random.RandomState(40 + i)
            src = rs.randint(2, 9, size=(4, 2))
            trg = rs.randint(2, 8, size=(5, 2))
            trg[-1, 1] = 1     # a padded position the loss ignores
            return mod.tensor(src), mod.tensor(trg)
        return wrap(step), {"model": model, "opt": optimizer}, batch

    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- gpleiss/efficient_densenet_pytorch models/densenet.py -----------------------------------
def _densenet(mod, checkpoint_kw):
    import importlib
    from collections import OrderedDict
    nn, F = mod.nn, mod.nn.functional
    cp = importlib.import_module(mod.__name__ + ".utils.checkpoint")

    def _bn_function_factory(norm, relu, conv):
        def bn_function(*inputs):
            concated_features = mod.cat(inputs, 1)
            bottleneck_output = conv(relu(norm(concated_features)))
            return bottleneck_output
        return bn_function

    class _DenseLayer(nn.Module):
        def __init__(self, num_input_features, growth_rate, bn_size):
            super(_DenseLayer, self).__init__()
            self.add_module('norm1', nn.BatchNorm2d(num_input_features)),
            self.add_module('relu1', nn.ReLU(inplace=True)),
            self.add_module('conv1', nn.Conv2d(num_input_features, bn_size * growth_rate,
                            kernel_size=1, stride=1, bias=False)),
            self.add_module('norm2', nn.BatchNorm2d(bn_size * growth_rate)),
            self.add_module('relu2', nn.ReLU(inplace=True)),
            self.add_module('conv2', nn.Conv2d(bn_size * growth_rate, growth_rate,
                            kernel_size=3, stride=1, padding=1, bias=False)),

        def forward(self, *prev_features):
            bn_function = _bn_function_factory(self.norm1, self.relu1, self.conv1)
            if any(prev_feature.requires_grad for prev_feature in prev_features):
                bottleneck_output = cp.checkpoint(bn_function, *prev_features, **checkpoint_kw)
            else:
                bottleneck_output = bn_function(*prev_features)
            return self.conv2(self.relu2(self.norm2(bottleneck_output)))

    class _DenseBlock(nn.Module):
        def __init__(self, num_layers, num_input_features, bn_size, growth_rate):
            super(_DenseBlock, self).__init__()
            for i in range(num_layers):
                self.add_module('denselayer%d' % (i + 1),
                                _DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size))

        def forward(self, init_features):
            features = [init_features]
            for name, layer in self.named_children():
                features.append(layer(*features))
            return mod.cat(features, 1)

    class DenseNet(nn.Module):
        def __init__(self):
            super(DenseNet, self).__init__()
            self.features = nn.Sequential(OrderedDict([
                ('conv0', nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)),
            ]))
            self.features.add_module('denseblock1', _DenseBlock(2, 4, 2, 2))
            self.features.add_module('norm_final', nn.BatchNorm2d(8))
            self.classifier = nn.Linear(8, 3)

        def forward(self, x):
            out = F.relu(self.features(x), inplace=True)
            out = F.adaptive_avg_pool2d(out, (1, 1))
            return self.classifier(mod.flatten(out, 1))

    return DenseNet()


def _densenet_program(checkpoint_kw):
    def make(mod, wrap):
        model = np_init(_densenet(mod, checkpoint_kw), mod, seed=32, scale=0.5)
        optimizer = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)

        def step(x, y):
            output = model(x)
            loss = mod.nn.functional.cross_entropy(output, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss
        return wrap(step), {"model": model, "opt": optimizer}, \
            lambda i: (data(mod, i, 2, 3, 6, 6), labels(mod, i, 2, 3))
    return make


def test_efficient_densenet_checkpoint_as_written_step():
    """The program's own call (no ``use_reentrant``: the reentrant variant) warns on every call,
    which the harness's 'always' filter shows each time: one program, whose every run gives the
    warnings again (NOTE [warnings in a trace]), with the BatchNorm statistics updated by the
    recomputation too (two updates per step)."""
    run = check_compiled(_densenet_program({}), calls=3, torch_too=True, rtol=1e-4, atol=1e-5)
    _no_breaks(run)
    assert run.step.stats["traces"] == 1, run.step.stats
    assert sum("use_reentrant" in w for w in run.warnings) == 2 * 3, run.warnings   # 2 layers
    assert run.state["model"].features.denseblock1.denselayer1.norm1.num_batches_tracked.item() == 6


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_efficient_densenet_checkpoint_step(use_reentrant):
    """``use_reentrant`` passed: the checkpointed closure, its recomputation in the backward and
    the nesterov SGD step trace as one program."""
    run = check_compiled(_densenet_program({"use_reentrant": use_reentrant}), calls=3, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    _no_breaks(run)
    assert run.state["model"].features.denseblock1.denselayer1.norm1.num_batches_tracked.item() == 6


# ---- state-spaces/s4 models/s4/s4d.py + example.py -------------------------------------------
def _s4d(mod):
    import math
    nn = mod.nn

    class S4DKernel(nn.Module):   # rand/randn draws left to np_init
        def __init__(self, H, N):
            super().__init__()
            self.C = nn.Parameter(mod.view_as_real(mod.zeros(H, N // 2, dtype=mod.cfloat)))
            self.log_dt = nn.Parameter(mod.full((H,), -3.0))
            self.log_A_real = nn.Parameter(mod.log(0.5 * mod.ones(H, N // 2)))
            self.A_imag = nn.Parameter(math.pi * mod.arange(N // 2).repeat(H, 1))
            for p in (self.log_dt, self.log_A_real, self.A_imag):
                p._optim = {"weight_decay": 0.0, "lr": 0.001}

        def forward(self, L):
            dt = mod.exp(self.log_dt)
            C = mod.view_as_complex(self.C)
            A = -mod.exp(self.log_A_real) + 1j * self.A_imag
            dtA = A * dt.unsqueeze(-1)
            K = dtA.unsqueeze(-1) * mod.arange(L, device=A.device)
            C = C * (mod.exp(dtA) - 1.) / A
            return 2 * mod.einsum('hn, hnl -> hl', C, mod.exp(K)).real

    class S4D(nn.Module):
        def __init__(self, h, n):
            super().__init__()
            self.D = nn.Parameter(mod.zeros(h))
            self.kernel = S4DKernel(h, n)
            self.activation = nn.GELU()
            self.output_linear = nn.Sequential(nn.Conv1d(h, 2 * h, kernel_size=1), nn.GLU(dim=-2))

        def forward(self, u):
            L = u.size(-1)
            k = self.kernel(L=L)
            k_f = mod.fft.rfft(k, n=2 * L)
            u_f = mod.fft.rfft(u, n=2 * L)
            y = mod.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
            y = y + u * self.D.unsqueeze(-1)
            return self.output_linear(self.activation(y)), None

    class S4Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(2, 4)
            self.s4_layers = nn.ModuleList([S4D(4, 4) for _ in range(2)])
            self.norms = nn.ModuleList([nn.LayerNorm(4) for _ in range(2)])
            self.decoder = nn.Linear(4, 3)

        def forward(self, x):
            x = self.encoder(x).transpose(-1, -2)
            for layer, norm in zip(self.s4_layers, self.norms):
                z, _ = layer(x)
                x = norm((z + x).transpose(-1, -2)).transpose(-1, -2)
            return self.decoder(x.transpose(-1, -2).mean(dim=1))

    return S4Model()


def test_s4d_fft_convolution_step():
    """The complex Vandermonde kernel (``view_as_complex`` of a real parameter, a complex
    ``einsum``, ``.real``) and the ``rfft``/``irfft`` convolution in one traced AdamW step over
    two parameter groups (the ``_optim`` group without weight decay and a smaller lr)."""
    def make(mod, wrap):
        model = np_init(_s4d(mod), mod, seed=52, scale=0.5)
        with mod.no_grad():
            for layer in model.s4_layers:
                layer.kernel.log_dt.sub_(3.0)
        special = [p for p in model.parameters() if hasattr(p, "_optim")]
        optimizer = mod.optim.AdamW([p for p in model.parameters() if not hasattr(p, "_optim")],
                                    lr=0.01, weight_decay=0.01)
        optimizer.add_param_group({"params": special, "weight_decay": 0.0, "lr": 0.001})
        criterion = mod.nn.CrossEntropyLoss()

        def step(x, y):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
        return wrap(step), {"model": model, "opt": optimizer}, \
            lambda i: (data(mod, i, 3, 8, 2), labels(mod, i, 3, 3))

    _no_breaks(check_compiled(make, calls=3, torch_too=True, rtol=1e-4, atol=1e-5))


# ---- higgsfield/RL-Adventure "2.double dqn.ipynb" --------------------------------------------
def test_double_dqn_td_step_with_target_sync():
    """``compute_td_loss`` (the batch sampled outside: ``random.sample`` is the loop's) with
    ``autograd.Variable`` wrappers, ``gather`` by the online network's argmax over a target
    network and ``Variable(expected_q_value.data)``; the loop's ``load_state_dict`` target sync
    between calls changes the target's values, not the program."""
    def build(mod):
        return mod.nn.Sequential(mod.nn.Linear(4, 16), mod.nn.ReLU(), mod.nn.Linear(16, 16),
                                 mod.nn.ReLU(), mod.nn.Linear(16, 2))

    def make(mod, wrap):
        Variable = mod.autograd.Variable
        current_model = np_init(build(mod), mod, seed=62, scale=0.5)
        target_model = build(mod)
        target_model.load_state_dict(current_model.state_dict())
        optimizer = mod.optim.Adam(current_model.parameters())
        gamma = 0.99

        def compute_td_loss(state, action, reward, next_state, done):
            state = Variable(mod.FloatTensor(state))
            next_state = Variable(mod.FloatTensor(next_state))
            action = Variable(action)
            q_values = current_model(state)
            next_q_values = current_model(next_state)
            next_q_state_values = target_model(next_state)
            q_value = q_values.gather(1, action.unsqueeze(1)).squeeze(1)
            next_q_value = next_q_state_values.gather(1, mod.max(next_q_values, 1)[1].unsqueeze(1)).squeeze(1)
            expected_q_value = reward + gamma * next_q_value * (1 - done)
            loss = (q_value - Variable(expected_q_value.data)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        def batch(i):
            rs = np.random.RandomState(70 + i)
            return (mod.tensor(rs.randn(8, 4).astype(np.float32)), mod.LongTensor(rs.randint(0, 2, size=8)),
                    mod.FloatTensor(np.ones(8, np.float32)), mod.tensor(rs.randn(8, 4).astype(np.float32)),
                    mod.FloatTensor((rs.rand(8) > 0.8).astype(np.float32)))
        state = {"model": current_model, "target": target_model, "opt": optimizer,
                 "change": lambda i: target_model.load_state_dict(current_model.state_dict())}
        return wrap(compute_td_loss), state, batch

    run = check_compiled(make, calls=4, between=change, torch_too=True, rtol=1e-4, atol=1e-5)
    _no_breaks(run)
    assert run.step.stats["traces"] == 1, run.step.stats
