"""An eighteenth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round17.py``, from repositories no earlier round used:

- emited/VariationalRecurrentNeuralNetwork: a VRNN (``nn.GRU`` with ``bias`` passed
  positionally as ``False``, a Gaussian KL and Bernoulli NLL summed over a Python loop of time
  steps, ``autograd.Variable``, ``FloatTensor(size)``, the deprecated ``nn.utils.clip_grad_norm``,
  a ``DataLoader`` over a ``TensorDataset``, sampling into ``sample[t] = ... .data``, a
  ``state_dict`` saved and loaded);
- facebookresearch/moco: MoCo v2's builder (a momentum key encoder updated by assigning
  ``param_k.data``, a ``register_buffer`` queue re-assigned through ``normalize``, ``einsum``
  positive/negative logits, ``int(self.queue_ptr)`` and slice writes of the queue, batch
  shuffling undone with ``argsort``);
- Kaixhin/Rainbow: factorised ``NoisyLinear`` layers (``ger``, in-place ``sign().mul_``
  ``sqrt_``, buffers copied into), a dueling distributional DQN and the agent's ``learn``: the
  categorical projection built with boolean-mask in-place index updates and two ``index_add_``s
  through ``m.view(-1)``, importance-weighted loss, ``clip_grad_norm_``, target sync by
  ``load_state_dict``;
- lucidrains/minGRU-pytorch: minGRU's log-space parallel scan (``cumsum``, ``logcumsumexp``,
  ``torch.where`` of two branches, ``F.pad``) checked against its own sequential ``lerp`` mode and
  trained with Adam;
- salesforce/awd-lstm-lm: WeightDrop (a Parameter deleted from an LSTM's ``_parameters`` and a
  plain tensor set in its place before each forward; torch's TypeError after an eval-mode pass
  re-registered it), LockedDropout, embedded dropout, tied weights, AR/TAR penalties and the
  SGD -> ASGD switch with ``optimizer.state[prm]['ax']`` swapped in for evaluation;
- ufoym/imbalanced-dataset-sampler: a ``Sampler`` subclass over ``torch.multinomial`` of
  ``DoubleTensor`` weights, its 0-d tensor draws used as list indices, in a ``DataLoader``;
- kimiyoung/transformer-xl: relative-position attention (``einsum`` scores, ``_rel_shift``'s
  pad-and-view trick, -inf ``masked_fill``) with segment-level memories updated under
  ``no_grad``.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters
(``init_params``/``randn``) in place of downloads and random streams; where a program's own code
had to change, the comment above its test says how and why.
"""
import math
import os

import numpy as np
import pytest

from parity import init_params, randn, run_both

torch = pytest.importorskip("torch")


# emited/VariationalRecurrentNeuralNetwork model.py (VRNN) and train.py (train/test loops). Sizes
# x_dim 28 -> 5, h_dim 100 -> 6, z_dim 16 -> 3, batch 128 -> 4, sequences of 4 steps, two
# batches, 2 epochs. Changed lines: ``_reparameterized_sample`` draws its noise from numpy's seeded
# stream (``torch.FloatTensor(std.size())`` is still built, then filled by ``copy_`` instead of
# ``normal_()``); the per-batch print shows 4 decimals, not 6 (float32 sums of 20 terms differ in the
# last printed digit); MNIST becomes a ``TensorDataset`` with ``shuffle=False``; the program's
# ``x.data[0]`` on 0-d tensors (an IndexError since PyTorch 0.4) is ``.item()`` -- the IndexError
# itself is logged; matplotlib is dropped. The save goes to a temporary directory.
def test_vrnn_gru_kld_bernoulli(tmp_path):
    def program(torch, log):
        nn = torch.nn
        Variable = torch.autograd.Variable
        rs = np.random.RandomState(5)

        class VRNN(nn.Module):
            def __init__(self, x_dim, h_dim, z_dim, n_layers, bias=False):
                super(VRNN, self).__init__()

                self.x_dim = x_dim
                self.h_dim = h_dim
                self.z_dim = z_dim
                self.n_layers = n_layers

                #feature-extracting transformations
                self.phi_x = nn.Sequential(
                    nn.Linear(x_dim, h_dim),
                    nn.ReLU(),
                    nn.Linear(h_dim, h_dim),
                    nn.ReLU())
                self.phi_z = nn.Sequential(
                    nn.Linear(z_dim, h_dim),
                    nn.ReLU())

                #encoder
                self.enc = nn.Sequential(
                    nn.Linear(h_dim + h_dim, h_dim),
                    nn.ReLU(),
                    nn.Linear(h_dim, h_dim),
                    nn.ReLU())
                self.enc_mean = nn.Linear(h_dim, z_dim)
                self.enc_std = nn.Sequential(
                    nn.Linear(h_dim, z_dim),
                    nn.Softplus())

                #prior
                self.prior = nn.Sequential(
                    nn.Linear(h_dim, h_dim),
                    nn.ReLU())
                self.prior_mean = nn.Linear(h_dim, z_dim)
                self.prior_std = nn.Sequential(
                    nn.Linear(h_dim, z_dim),
                    nn.Softplus())

                #decoder
                self.dec = nn.Sequential(
                    nn.Linear(h_dim + h_dim, h_dim),
                    nn.ReLU(),
                    nn.Linear(h_dim, h_dim),
                    nn.ReLU())
                self.dec_std = nn.Sequential(
                    nn.Linear(h_dim, x_dim),
                    nn.Softplus())
                self.dec_mean = nn.Sequential(
                    nn.Linear(h_dim, x_dim),
                    nn.Sigmoid())

                #recurrence
                self.rnn = nn.GRU(h_dim + h_dim, h_dim, n_layers, bias)

            def forward(self, x):
                all_enc_mean, all_enc_std = [], []
                all_dec_mean, all_dec_std = [], []
                kld_loss = 0
                nll_loss = 0

                h = Variable(torch.zeros(self.n_layers, x.size(1), self.h_dim))
                for t in range(x.size(0)):
                    phi_x_t = self.phi_x(x[t])

                    #encoder
                    enc_t = self.enc(torch.cat([phi_x_t, h[-1]], 1))
                    enc_mean_t = self.enc_mean(enc_t)
                    enc_std_t = self.enc_std(enc_t)

                    #prior
                    prior_t = self.prior(h[-1])
                    prior_mean_t = self.prior_mean(prior_t)
                    prior_std_t = self.prior_std(prior_t)

                    #sampling and reparameterization
                    z_t = self._reparameterized_sample(enc_mean_t, enc_std_t)
                    phi_z_t = self.phi_z(z_t)

                    #decoder
                    dec_t = self.dec(torch.cat([phi_z_t, h[-1]], 1))
                    dec_mean_t = self.dec_mean(dec_t)
                    dec_std_t = self.dec_std(dec_t)

                    #recurrence
                    _, h = self.rnn(torch.cat([phi_x_t, phi_z_t], 1).unsqueeze(0), h)

                    #computing losses
                    kld_loss += self._kld_gauss(enc_mean_t, enc_std_t, prior_mean_t, prior_std_t)
                    nll_loss += self._nll_bernoulli(dec_mean_t, x[t])

                    all_enc_std.append(enc_std_t)
                    all_enc_mean.append(enc_mean_t)
                    all_dec_mean.append(dec_mean_t)
                    all_dec_std.append(dec_std_t)

                return kld_loss, nll_loss, \
                    (all_enc_mean, all_enc_std), \
                    (all_dec_mean, all_dec_std)

            def sample(self, seq_len):
                sample = torch.zeros(seq_len, self.x_dim)

                h = Variable(torch.zeros(self.n_layers, 1, self.h_dim))
                for t in range(seq_len):
                    #prior
                    prior_t = self.prior(h[-1])
                    prior_mean_t = self.prior_mean(prior_t)
                    prior_std_t = self.prior_std(prior_t)

                    #sampling and reparameterization
                    z_t = self._reparameterized_sample(prior_mean_t, prior_std_t)
                    phi_z_t = self.phi_z(z_t)

                    #decoder
                    dec_t = self.dec(torch.cat([phi_z_t, h[-1]], 1))
                    dec_mean_t = self.dec_mean(dec_t)

                    phi_x_t = self.phi_x(dec_mean_t)

                    #recurrence
                    _, h = self.rnn(torch.cat([phi_x_t, phi_z_t], 1).unsqueeze(0), h)

                    sample[t] = dec_mean_t.data

                return sample

            def _reparameterized_sample(self, mean, std):
                """using std to sample"""
                eps = torch.FloatTensor(std.size()).copy_(
                    torch.from_numpy(rs.randn(*std.size()).astype(np.float32)))
                eps = Variable(eps)
                return eps.mul(std).add_(mean)

            def _kld_gauss(self, mean_1, std_1, mean_2, std_2):
                """Using std to compute KLD"""
                kld_element = (2 * torch.log(std_2) - 2 * torch.log(std_1) +
                    (std_1.pow(2) + (mean_1 - mean_2).pow(2)) /
                    std_2.pow(2) - 1)
                return 0.5 * torch.sum(kld_element)

            def _nll_bernoulli(self, theta, x):
                return - torch.sum(x*torch.log(theta) + (1-x)*torch.log(1-theta))

        x_dim, h_dim, z_dim, n_layers = 5, 6, 3, 1
        clip, learning_rate, batch_size, print_every = 10, 1e-3, 4, 1
        images = np.random.RandomState(0).uniform(0, 3, size=(8, 1, 4, x_dim)).astype(np.float32)
        dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.zeros(8))
        train_loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)
        test_loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)

        model = init_params(torch, VRNN(x_dim, h_dim, z_dim, n_layers), seed=1, scale=0.4)
        log("gru has no bias", [n for n, _ in model.rnn.named_parameters()])
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

        def train(epoch):
            train_loss = 0
            for batch_idx, (data, _) in enumerate(train_loader):
                data = Variable(data.squeeze().transpose(0, 1))
                try:
                    data.min().data[0]
                except IndexError as e:
                    log("0-d index", (type(e).__name__, str(e)))
                data = (data - data.min().item()) / (data.max().item() - data.min().item())

                optimizer.zero_grad()
                kld_loss, nll_loss, _, _ = model(data)
                loss = kld_loss + nll_loss
                loss.backward()
                optimizer.step()

                nn.utils.clip_grad_norm(model.parameters(), clip)

                if batch_idx % print_every == 0:
                    print('Train Epoch: {} [{}/{} ({:.0f}%)]\t KLD Loss: {:.4f} \t NLL Loss: {:.4f}'.format(
                        epoch, batch_idx * len(data), len(train_loader.dataset),
                        100. * batch_idx / len(train_loader),
                        kld_loss.item() / batch_size,
                        nll_loss.item() / batch_size))
                    sample = model.sample(3)
                    log("sample", sample)

                train_loss += loss.item()
                log("rnn grad", model.rnn.weight_hh_l0.grad)
            print('====> Epoch: {} Average loss: {:.4f}'.format(
                epoch, train_loss / len(train_loader.dataset)))

        def test(epoch):
            mean_kld_loss, mean_nll_loss = 0, 0
            for i, (data, _) in enumerate(test_loader):
                data = Variable(data.squeeze().transpose(0, 1))
                data = (data - data.min().item()) / (data.max().item() - data.min().item())
                kld_loss, nll_loss, (enc_mean, enc_std), _ = model(data)
                mean_kld_loss += kld_loss.item()
                mean_nll_loss += nll_loss.item()
                log("enc std", enc_std[-1])
            mean_kld_loss /= len(test_loader.dataset)
            mean_nll_loss /= len(test_loader.dataset)
            print('====> Test set loss: KLD Loss = {:.4f}, NLL Loss = {:.4f} '.format(
                mean_kld_loss, mean_nll_loss))

        saves = tmp_path / torch.__name__
        (saves / 'saves').mkdir(parents=True)
        for epoch in range(1, 3):
            train(epoch)
            test(epoch)
            if epoch % 2 == 1:
                fn = 'saves/vrnn_state_dict_'+str(epoch)+'.pth'
                torch.save(model.state_dict(), os.path.join(saves, fn))
                print('Saved model to '+fn)
        reloaded = VRNN(x_dim, h_dim, z_dim, n_layers)
        reloaded.load_state_dict(torch.load(os.path.join(saves, fn)))
        log("reloaded gru weight", reloaded.rnn.weight_ih_l0)
        log("trained gru weight", model.rnn.weight_ih_l0)
        log("adam state", optimizer.state_dict()["state"][0]["exp_avg_sq"])

    run_both(program)


# facebookresearch/moco moco/builder.py (MoCo with ``mlp=True``, the v2 head) and main_moco.py's
# ``train`` step (CrossEntropyLoss over the logits, SGD with momentum and weight decay). Sizes:
# dim 128 -> 4, K 65536 -> 8, batch 2 (so the queue wraps after four steps), T 0.2, m 0.9; the
# base encoder (a torchvision ResNet called with ``num_classes=``) is a small MLP with a
# BatchNorm1d and an ``fc`` head. Changed lines: ``torch.randn(dim, K)`` for the queue is a
# numpy-seeded draw; ``concat_all_gather`` and the DDP shuffle helpers run for one process
# (``get_world_size()`` is 1, so gathering is the identity; ``torch.randperm`` is a fixed numpy
# permutation, the broadcast is dropped, ``get_rank()`` is 0); ``.cuda()`` calls are dropped.
def test_moco_queue_momentum_encoder():
    def program(torch, log):
        nn = torch.nn

        class Encoder(nn.Module):
            def __init__(self, num_classes=1000):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
                self.fc = nn.Linear(8, num_classes)

            def forward(self, x):
                return self.fc(self.body(x))

        perms = np.random.RandomState(7)

        @torch.no_grad()
        def concat_all_gather(tensor):
            world_size = 1
            tensors_gather = [torch.ones_like(tensor) for _ in range(world_size)]
            tensors_gather[0].copy_(tensor)
            output = torch.cat(tensors_gather, dim=0)
            return output

        class MoCo(nn.Module):
            def __init__(self, base_encoder, dim=128, K=65536, m=0.999, T=0.07, mlp=False):
                super(MoCo, self).__init__()

                self.K = K
                self.m = m
                self.T = T

                self.encoder_q = base_encoder(num_classes=dim)
                self.encoder_k = base_encoder(num_classes=dim)

                if mlp:  # hack: brute-force replacement
                    dim_mlp = self.encoder_q.fc.weight.shape[1]
                    self.encoder_q.fc = nn.Sequential(
                        nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc
                    )
                    self.encoder_k.fc = nn.Sequential(
                        nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc
                    )

                init_params(torch, self.encoder_q, seed=2, scale=0.5)
                for param_q, param_k in zip(
                    self.encoder_q.parameters(), self.encoder_k.parameters()
                ):
                    param_k.data.copy_(param_q.data)  # initialize
                    param_k.requires_grad = False  # not update by gradient

                self.register_buffer("queue", randn(torch, (dim, K), seed=3))
                self.queue = nn.functional.normalize(self.queue, dim=0)

                self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

            @torch.no_grad()
            def _momentum_update_key_encoder(self):
                for param_q, param_k in zip(
                    self.encoder_q.parameters(), self.encoder_k.parameters()
                ):
                    param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

            @torch.no_grad()
            def _dequeue_and_enqueue(self, keys):
                keys = concat_all_gather(keys)

                batch_size = keys.shape[0]

                ptr = int(self.queue_ptr)
                assert self.K % batch_size == 0  # for simplicity

                self.queue[:, ptr : ptr + batch_size] = keys.T
                ptr = (ptr + batch_size) % self.K  # move pointer

                self.queue_ptr[0] = ptr

            @torch.no_grad()
            def _batch_shuffle_ddp(self, x):
                batch_size_this = x.shape[0]
                x_gather = concat_all_gather(x)
                batch_size_all = x_gather.shape[0]

                num_gpus = batch_size_all // batch_size_this

                idx_shuffle = torch.from_numpy(perms.permutation(batch_size_all))

                idx_unshuffle = torch.argsort(idx_shuffle)

                gpu_idx = 0
                idx_this = idx_shuffle.view(num_gpus, -1)[gpu_idx]

                return x_gather[idx_this], idx_unshuffle

            @torch.no_grad()
            def _batch_unshuffle_ddp(self, x, idx_unshuffle):
                batch_size_this = x.shape[0]
                x_gather = concat_all_gather(x)
                batch_size_all = x_gather.shape[0]

                num_gpus = batch_size_all // batch_size_this

                gpu_idx = 0
                idx_this = idx_unshuffle.view(num_gpus, -1)[gpu_idx]

                return x_gather[idx_this]

            def forward(self, im_q, im_k):
                q = self.encoder_q(im_q)  # queries: NxC
                q = nn.functional.normalize(q, dim=1)

                with torch.no_grad():  # no gradient to keys
                    self._momentum_update_key_encoder()  # update the key encoder

                    im_k, idx_unshuffle = self._batch_shuffle_ddp(im_k)

                    k = self.encoder_k(im_k)  # keys: NxC
                    k = nn.functional.normalize(k, dim=1)

                    k = self._batch_unshuffle_ddp(k, idx_unshuffle)

                l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
                l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])

                logits = torch.cat([l_pos, l_neg], dim=1)

                logits /= self.T

                labels = torch.zeros(logits.shape[0], dtype=torch.long)

                self._dequeue_and_enqueue(k)

                return logits, labels

        model = MoCo(Encoder, dim=4, K=8, m=0.9, T=0.2, mlp=True)
        log("buffers", sorted(n for n, _ in model.named_buffers()))
        log("queue column norms", model.queue.norm(dim=0))
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4)
        log("trainable", sum(p.requires_grad for p in model.parameters()))

        model.train()
        for i in range(5):
            x = randn(torch, (2, 6), seed=10 + i)
            images = [x + 0.1 * randn(torch, (2, 6), seed=20 + i), x - 0.1 * randn(torch, (2, 6), seed=30 + i)]
            output, target = model(im_q=images[0], im_k=images[1])
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log("logits", output)
            log("loss", loss)
            log("queue_ptr", model.queue_ptr)
        log("queue", model.queue)
        log("key encoder fc", model.encoder_k.fc[2].weight)
        log("key running mean", model.encoder_k.body[1].running_mean)
        log("query grad", model.encoder_q.fc[0].weight.grad)
        log("key grad", model.encoder_k.fc[0].weight.grad)

    run_both(program)


# Kaixhin/Rainbow model.py (NoisyLinear, DQN with the 'data-efficient' architecture) and agent.py
# (Agent.__init__, reset_noise, act, learn, update_target_net, save). Sizes: history 4 -> 2,
# 25x25 frames (84x84 in the program), conv widths 32/64 -> 4/8 so conv_output_size 576 -> 8,
# hidden 256 -> 6, 3 actions, 51 atoms on [-10, 10], batch 4, n-step 3. Changed lines:
# ``_scale_noise`` draws its ``x`` from numpy's seeded stream instead of ``torch.randn(size)``;
# the prioritised replay memory is a stand-in returning fixed transitions (returns of 0 and 20
# with terminal next states land exactly on atoms, so the ``l == u`` fix-ups run).
def test_rainbow_noisy_distributional_learn(tmp_path):
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional
        clip_grad_norm_ = torch.nn.utils.clip_grad_norm_
        noise = np.random.RandomState(11)

        class NoisyLinear(nn.Module):
            def __init__(self, in_features, out_features, std_init=0.5):
                super(NoisyLinear, self).__init__()
                self.in_features = in_features
                self.out_features = out_features
                self.std_init = std_init
                self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
                self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
                self.register_buffer('weight_epsilon', torch.empty(out_features, in_features))
                self.bias_mu = nn.Parameter(torch.empty(out_features))
                self.bias_sigma = nn.Parameter(torch.empty(out_features))
                self.register_buffer('bias_epsilon', torch.empty(out_features))
                self.reset_parameters()
                self.reset_noise()

            def reset_parameters(self):
                mu_range = 1 / math.sqrt(self.in_features)
                self.weight_mu.data.uniform_(-mu_range, mu_range)
                self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
                self.bias_mu.data.uniform_(-mu_range, mu_range)
                self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

            def _scale_noise(self, size):
                x = torch.tensor(noise.randn(size).astype(np.float32))
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

        class DQN(nn.Module):
            def __init__(self, args, action_space):
                super(DQN, self).__init__()
                self.atoms = args.atoms
                self.action_space = action_space

                self.convs = nn.Sequential(nn.Conv2d(args.history_length, 4, 5, stride=5, padding=0), nn.ReLU(),
                                           nn.Conv2d(4, 8, 5, stride=5, padding=0), nn.ReLU())
                self.conv_output_size = 8
                self.fc_h_v = NoisyLinear(self.conv_output_size, args.hidden_size, std_init=args.noisy_std)
                self.fc_h_a = NoisyLinear(self.conv_output_size, args.hidden_size, std_init=args.noisy_std)
                self.fc_z_v = NoisyLinear(args.hidden_size, self.atoms, std_init=args.noisy_std)
                self.fc_z_a = NoisyLinear(args.hidden_size, action_space * self.atoms, std_init=args.noisy_std)

            def forward(self, x, log=False):
                x = self.convs(x)
                x = x.view(-1, self.conv_output_size)
                v = self.fc_z_v(F.relu(self.fc_h_v(x)))  # Value stream
                a = self.fc_z_a(F.relu(self.fc_h_a(x)))  # Advantage stream
                v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
                q = v + a - a.mean(1, keepdim=True)  # Combine streams
                if log:
                    q = F.log_softmax(q, dim=2)
                else:
                    q = F.softmax(q, dim=2)
                return q

            def reset_noise(self):
                for name, module in self.named_children():
                    if 'fc' in name:
                        module.reset_noise()

        class Args:
            atoms, V_min, V_max = 51, -10, 10
            batch_size, multi_step, discount, norm_clip = 4, 3, 0.99, 10
            history_length, hidden_size, noisy_std = 2, 6, 0.1
            learning_rate, adam_eps = 0.01, 1.5e-4
            device = torch.device('cpu')

        class Env:
            def action_space(self):
                return 3

        class Agent():
            def __init__(self, args, env):
                self.action_space = env.action_space()
                self.atoms = args.atoms
                self.Vmin = args.V_min
                self.Vmax = args.V_max
                self.support = torch.linspace(args.V_min, args.V_max, self.atoms).to(device=args.device)
                self.delta_z = (args.V_max - args.V_min) / (self.atoms - 1)
                self.batch_size = args.batch_size
                self.n = args.multi_step
                self.discount = args.discount
                self.norm_clip = args.norm_clip

                self.online_net = DQN(args, self.action_space).to(device=args.device)
                init_params(torch, self.online_net.convs, seed=4, scale=0.3)
                self.online_net.train()

                self.target_net = DQN(args, self.action_space).to(device=args.device)
                self.update_target_net()
                self.target_net.train()
                for param in self.target_net.parameters():
                    param.requires_grad = False

                self.optimiser = torch.optim.Adam(self.online_net.parameters(), lr=args.learning_rate, eps=args.adam_eps)

            def reset_noise(self):
                self.online_net.reset_noise()

            def act(self, state):
                with torch.no_grad():
                    return (self.online_net(state.unsqueeze(0)) * self.support).sum(2).argmax(1).item()

            def learn(self, mem):
                idxs, states, actions, returns, next_states, nonterminals, weights = mem.sample(self.batch_size)

                log_ps = self.online_net(states, log=True)
                log_ps_a = log_ps[range(self.batch_size), actions]

                with torch.no_grad():
                    pns = self.online_net(next_states)
                    dns = self.support.expand_as(pns) * pns
                    argmax_indices_ns = dns.sum(2).argmax(1)
                    self.target_net.reset_noise()
                    pns = self.target_net(next_states)
                    pns_a = pns[range(self.batch_size), argmax_indices_ns]

                    Tz = returns.unsqueeze(1) + nonterminals * (self.discount ** self.n) * self.support.unsqueeze(0)
                    Tz = Tz.clamp(min=self.Vmin, max=self.Vmax)
                    b = (Tz - self.Vmin) / self.delta_z
                    l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
                    l[(u > 0) * (l == u)] -= 1
                    u[(l < (self.atoms - 1)) * (l == u)] += 1

                    m = states.new_zeros(self.batch_size, self.atoms)
                    offset = torch.linspace(0, ((self.batch_size - 1) * self.atoms), self.batch_size).unsqueeze(1).expand(self.batch_size, self.atoms).to(actions)
                    m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
                    m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))

                loss = -torch.sum(m * log_ps_a, 1)
                self.online_net.zero_grad()
                (weights * loss).mean().backward()
                clip_grad_norm_(self.online_net.parameters(), self.norm_clip)
                self.optimiser.step()

                mem.update_priorities(idxs, loss.detach().cpu().numpy())
                return m, l, u

            def update_target_net(self):
                self.target_net.load_state_dict(self.online_net.state_dict())

            def save(self, path, name='model.pth'):
                torch.save(self.online_net.state_dict(), os.path.join(path, name))

        class Memory:
            def __init__(self):
                self.priorities = []

            def sample(self, batch_size):
                states = torch.tensor(np.random.RandomState(12).rand(batch_size, 2, 25, 25).astype(np.float32))
                next_states = torch.tensor(np.random.RandomState(13).rand(batch_size, 2, 25, 25).astype(np.float32))
                actions = torch.tensor([0, 2, 1, 2])
                returns = torch.tensor([0.0, 20.0, 1.3, -2.5])
                nonterminals = torch.tensor([[0.0], [0.0], [1.0], [1.0]])
                weights = torch.tensor([1.0, 0.5, 0.8, 1.0])
                return [0, 1, 2, 3], states, actions, returns, next_states, nonterminals, weights

            def update_priorities(self, idxs, priorities):
                self.priorities.append(priorities)

        torch.manual_seed(0)
        agent = Agent(Args(), Env())
        # the uniform_ draws of reset_parameters come from each library's own stream: overwrite
        init_params(torch, agent.online_net, seed=5, scale=0.3)
        agent.update_target_net()
        mem = Memory()
        for step in range(3):
            agent.reset_noise()
            m, l, u = agent.learn(mem)
            log("projected m", m)
            log("l", l)
            log("u", u)
            log("m rows sum", m.sum(1))
            log("priorities", mem.priorities[-1])
            log("noisy grad", agent.online_net.fc_z_a.weight_sigma.grad)
            log("conv grad", agent.online_net.convs[0].weight.grad)
            if step == 1:
                agent.update_target_net()
        log("epsilon buffer", agent.online_net.fc_h_v.weight_epsilon)
        state = torch.tensor(np.random.RandomState(14).rand(2, 25, 25).astype(np.float32))
        log("act", agent.act(state))
        agent.online_net.eval()
        log("eval q", agent.online_net(state.unsqueeze(0)))
        agent.save(str(tmp_path), torch.__name__ + '_model.pth')
        sd = torch.load(os.path.join(str(tmp_path), torch.__name__ + '_model.pth'), map_location='cpu')
        log("saved keys", list(sd.keys()))
        log("saved sigma", sd['fc_z_v.weight_sigma'])

    run_both(program)


# lucidrains/minGRU-pytorch minGRU_pytorch/minGRU.py (heinsen_associative_scan_log, g, log_g,
# minGRU), unchanged, with ``expansion_factor`` 1.5 (so ``to_out`` is a Linear) and 1 (Identity).
# dim 4, batch 2, 5 steps. The parallel mode is checked against the module's own sequential mode
# (``seq_len == 1``, ``lerp``) step by step, with and without ``prev_hidden``, then a small stack
# is trained with Adam on a regression target.
def test_mingru_log_space_parallel_scan():
    def program(torch, log):
        F = torch.nn.functional
        Linear, Identity, Module = torch.nn.Linear, torch.nn.Identity, torch.nn.Module

        def exists(v):
            return v is not None

        def heinsen_associative_scan_log(log_coeffs, log_values):
            a_star = log_coeffs.cumsum(dim = 1)
            log_h0_plus_b_star = (log_values - a_star).logcumsumexp(dim = 1)
            log_h = a_star + log_h0_plus_b_star
            return log_h.exp()

        def g(x):
            return torch.where(x >= 0, x + 0.5, x.sigmoid())

        def log_g(x):
            return torch.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))

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
                    out = torch.lerp(prev_hidden, hidden, gate) if exists(prev_hidden) else (hidden * gate)
                else:
                    log_coeffs = -F.softplus(gate)

                    log_z = -F.softplus(-gate)
                    log_tilde_h = log_g(hidden)
                    log_values = log_z + log_tilde_h

                    if exists(prev_hidden):
                        log_values = torch.cat((log_g(prev_hidden), log_values), dim = 1)
                        log_coeffs = F.pad(log_coeffs, (0, 0, 1, 0))

                    out = heinsen_associative_scan_log(log_coeffs, log_values)
                    out = out[:, -seq_len:]

                return self.to_out(out)

        x = randn(torch, (2, 5, 4), seed=40, scale=1.5)
        cell = init_params(torch, minGRU(4), seed=41, scale=0.8)
        prev = g(randn(torch, (2, 1, 4), seed=42))
        for start in (None, prev):
            par = cell(x, prev_hidden=start)
            h, seq = start, []
            for t in range(x.shape[1]):
                h = cell(x[:, t:t + 1], prev_hidden=h)
                seq.append(h)
            seq = torch.cat(seq, dim=1)
            log("parallel", par)
            log("parallel == sequential", bool(torch.allclose(par, seq, atol=1e-5)))

        class Net(Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList([minGRU(4, expansion_factor=1.5), minGRU(4)])
                self.head = Linear(4, 1)

            def forward(self, x):
                for layer in self.layers:
                    x = x + layer(x)
                return self.head(x).squeeze(-1)

        net = init_params(torch, Net(), seed=43, scale=0.6)
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        target = randn(torch, (2, 5), seed=44)
        for step in range(4):
            opt.zero_grad()
            loss = F.mse_loss(net(x), target)
            loss.backward()
            opt.step()
            log("loss", loss)
            log("gate grad", net.layers[0].to_hidden_and_gate.weight.grad)
        log("out weight", net.layers[0].to_out.weight)
        log("identity out", type(net.layers[1].to_out).__name__)

    run_both(program)


# salesforce/awd-lstm-lm weight_drop.py (WeightDrop: ``del module._parameters[...]``,
# ``register_parameter(name + '_raw', Parameter(w.data))`` and a plain tensor ``setattr`` onto the
# LSTM before each forward), locked_dropout.py, embed_regularize.py (``weight.data.new().resize_``,
# ``F.embedding`` with every keyword of the module passed positionally), model.py (RNNModel: LSTM
# layers in a ``ModuleList``, tied encoder/decoder weights, ``init_hidden`` through
# ``weight.new(...).zero_()``, ``print(self.rnns)`` of the wrapped LSTMs) and main.py's training
# loop (``repackage_hidden``, AR/TAR penalties, per-batch lr rescaling of ``param_groups``,
# ``clip_grad_norm_``, the switch to ASGD and evaluation with the ``optimizer.state[prm]['ax']``
# averages swapped in through ``prm.data``). Sizes: 12 tokens, emsize 4, nhid 5, 2 layers, bptt 4,
# batch 2. Changed lines: every ``bernoulli_``/``dropout`` mask draw (embedded dropout, locked
# dropout, WeightDrop's ``F.dropout`` of the raw weight) reads numpy's seeded stream instead of the
# library's; ``init_weights``' ``uniform_`` draws are overwritten by ``init_params``;
# SplitCrossEntropyLoss (one split at this vocabulary size) is ``F.cross_entropy`` over
# ``F.linear`` with the decoder's weight and bias; the batch's sequence length is fixed at bptt.
def test_awd_lstm_weight_drop_asgd():
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional
        Parameter = torch.nn.Parameter
        Variable = torch.autograd.Variable
        masks = np.random.RandomState(21)

        def bernoulli(t, p):
            return t.copy_(torch.from_numpy((masks.rand(*t.shape) < p).astype(np.float32)))

        class WeightDrop(torch.nn.Module):
            def __init__(self, module, weights, dropout=0, variational=False):
                super(WeightDrop, self).__init__()
                self.module = module
                self.weights = weights
                self.dropout = dropout
                self.variational = variational
                self._setup()

            def _setup(self):
                for name_w in self.weights:
                    print('Applying weight drop of {} to {}'.format(self.dropout, name_w))
                    w = getattr(self.module, name_w)
                    del self.module._parameters[name_w]
                    self.module.register_parameter(name_w + '_raw', Parameter(w.data))

            def _setweights(self):
                for name_w in self.weights:
                    raw_w = getattr(self.module, name_w + '_raw')
                    w = None
                    if self.variational:
                        mask = torch.autograd.Variable(torch.ones(raw_w.size(0), 1))
                        mask = torch.nn.functional.dropout(mask, p=self.dropout, training=True)
                        w = mask.expand_as(raw_w) * raw_w
                    else:
                        if self.training:
                            w = raw_w * bernoulli(torch.empty(raw_w.shape), 1 - self.dropout) / (1 - self.dropout)
                        else:
                            w = torch.nn.functional.dropout(raw_w, p=self.dropout, training=self.training)
                    setattr(self.module, name_w, w)

            def forward(self, *args):
                self._setweights()
                return self.module.forward(*args)

        class LockedDropout(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x, dropout=0.5):
                if not self.training or not dropout:
                    return x
                m = bernoulli(x.data.new(1, x.size(1), x.size(2)), 1 - dropout)
                mask = Variable(m, requires_grad=False) / (1 - dropout)
                mask = mask.expand_as(x)
                return mask * x

        def embedded_dropout(embed, words, dropout=0.1, scale=None):
            if dropout:
                mask = bernoulli(embed.weight.data.new().resize_(
                    (embed.weight.size(0), 1)),
                    1 - dropout).expand_as(embed.weight) / (1 - dropout)
                masked_embed_weight = mask * embed.weight
            else:
                masked_embed_weight = embed.weight
            if scale:
                masked_embed_weight = scale.expand_as(
                    masked_embed_weight) * masked_embed_weight

            padding_idx = embed.padding_idx
            if padding_idx is None:
                padding_idx = -1

            X = F.embedding(
                words, masked_embed_weight,
                padding_idx, embed.max_norm,
                embed.norm_type,
                embed.scale_grad_by_freq, embed.sparse
            )
            return X

        class RNNModel(nn.Module):
            """Container module with an encoder, a recurrent module, and a decoder."""

            def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, dropouth=0.5, dropouti=0.5, dropoute=0.1, wdrop=0, tie_weights=False):
                super(RNNModel, self).__init__()
                self.lockdrop = LockedDropout()
                self.idrop = nn.Dropout(dropouti)
                self.hdrop = nn.Dropout(dropouth)
                self.drop = nn.Dropout(dropout)
                self.encoder = nn.Embedding(ntoken, ninp)
                assert rnn_type in ['LSTM', 'QRNN', 'GRU'], 'RNN type is not supported'
                if rnn_type == 'LSTM':
                    self.rnns = [torch.nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else (ninp if tie_weights else nhid), 1, dropout=0) for l in range(nlayers)]
                    if wdrop:
                        self.rnns = [WeightDrop(rnn, ['weight_hh_l0'], dropout=wdrop) for rnn in self.rnns]
                print(self.rnns)
                self.rnns = torch.nn.ModuleList(self.rnns)
                self.decoder = nn.Linear(nhid, ntoken)

                if tie_weights:
                    self.decoder.weight = self.encoder.weight

                self.init_weights()

                self.rnn_type = rnn_type
                self.ninp = ninp
                self.nhid = nhid
                self.nlayers = nlayers
                self.dropout = dropout
                self.dropouti = dropouti
                self.dropouth = dropouth
                self.dropoute = dropoute
                self.tie_weights = tie_weights

            def init_weights(self):
                initrange = 0.1
                self.encoder.weight.data.uniform_(-initrange, initrange)
                self.decoder.bias.data.fill_(0)
                self.decoder.weight.data.uniform_(-initrange, initrange)

            def forward(self, input, hidden, return_h=False):
                emb = embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)

                emb = self.lockdrop(emb, self.dropouti)

                raw_output = emb
                new_hidden = []
                raw_outputs = []
                outputs = []
                for l, rnn in enumerate(self.rnns):
                    current_input = raw_output
                    raw_output, new_h = rnn(raw_output, hidden[l])
                    new_hidden.append(new_h)
                    raw_outputs.append(raw_output)
                    if l != self.nlayers - 1:
                        raw_output = self.lockdrop(raw_output, self.dropouth)
                        outputs.append(raw_output)
                hidden = new_hidden

                output = self.lockdrop(raw_output, self.dropout)
                outputs.append(output)

                result = output.view(output.size(0)*output.size(1), output.size(2))
                if return_h:
                    return result, hidden, raw_outputs, outputs
                return result, hidden

            def init_hidden(self, bsz):
                weight = next(self.parameters()).data
                if self.rnn_type == 'LSTM':
                    return [(Variable(weight.new(1, bsz, self.nhid if l != self.nlayers - 1 else (self.ninp if self.tie_weights else self.nhid)).zero_()),
                            Variable(weight.new(1, bsz, self.nhid if l != self.nlayers - 1 else (self.ninp if self.tie_weights else self.nhid)).zero_()))
                            for l in range(self.nlayers)]

        def repackage_hidden(h):
            if isinstance(h, torch.Tensor):
                return h.detach()
            else:
                return tuple(repackage_hidden(v) for v in h)

        def batchify(data, bsz):
            nbatch = data.size(0) // bsz
            data = data.narrow(0, 0, nbatch * bsz)
            data = data.view(bsz, -1).t().contiguous()
            return data

        def get_batch(source, i, seq_len):
            seq_len = min(seq_len, len(source) - 1 - i)
            data = source[i:i+seq_len]
            target = source[i+1:i+1+seq_len].view(-1)
            return data, target

        class Args:
            bptt, clip, alpha, beta, wdecay, lr, batch_size = 4, 0.25, 2, 1, 1.2e-6, 2.0, 2

        args = Args()
        ntokens = 12
        corpus = torch.tensor(np.random.RandomState(22).randint(0, ntokens, size=42))
        train_data = batchify(corpus[:34], args.batch_size)
        val_data = batchify(corpus[34:], args.batch_size)
        model = RNNModel('LSTM', ntokens, 4, 5, 2, dropout=0.4, dropouth=0.25, dropouti=0.4, dropoute=0.1, wdrop=0.5, tie_weights=True)
        init_params(torch, model, seed=23, scale=0.4)
        log("parameters", [(n, tuple(p.shape)) for n, p in model.named_parameters()])
        log("tied", model.decoder.weight is model.encoder.weight)
        params = list(model.parameters())

        def criterion(weight, bias, output, targets):
            return F.cross_entropy(F.linear(output, weight, bias), targets)

        def evaluate(data_source, batch_size=2):
            model.eval()
            total_loss = 0
            hidden = model.init_hidden(batch_size)
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i, args.bptt)
                output, hidden = model(data, hidden)
                total_loss += len(data) * criterion(model.decoder.weight, model.decoder.bias, output, targets).data
                hidden = repackage_hidden(hidden)
            return total_loss.item() / len(data_source)

        def train(optimizer):
            model.train()
            total_loss = 0
            hidden = model.init_hidden(args.batch_size)
            batch, i = 0, 0
            while i < train_data.size(0) - 1 - 1:
                seq_len = args.bptt
                lr2 = optimizer.param_groups[0]['lr']
                optimizer.param_groups[0]['lr'] = lr2 * seq_len / args.bptt
                model.train()
                data, targets = get_batch(train_data, i, seq_len=seq_len)

                hidden = repackage_hidden(hidden)
                optimizer.zero_grad()

                output, hidden, rnn_hs, dropped_rnn_hs = model(data, hidden, return_h=True)
                raw_loss = criterion(model.decoder.weight, model.decoder.bias, output, targets)

                loss = raw_loss
                if args.alpha: loss = loss + sum(args.alpha * dropped_rnn_h.pow(2).mean() for dropped_rnn_h in dropped_rnn_hs[-1:])
                if args.beta: loss = loss + sum(args.beta * (rnn_h[1:] - rnn_h[:-1]).pow(2).mean() for rnn_h in rnn_hs[-1:])
                loss.backward()

                if args.clip: torch.nn.utils.clip_grad_norm_(params, args.clip)
                optimizer.step()

                total_loss += raw_loss.data
                optimizer.param_groups[0]['lr'] = lr2
                print('| batch {:3d} | lr {:05.5f} | loss {:5.4f}'.format(batch, optimizer.param_groups[0]['lr'], raw_loss.item()))
                log("raw weight grad", model.rnns[0].module.weight_hh_l0_raw.grad)
                batch += 1
                i += seq_len

        optimizer = torch.optim.SGD(params, lr=args.lr, weight_decay=args.wdecay)
        train(optimizer)
        log("val loss (SGD)", evaluate(val_data))
        optimizer = torch.optim.ASGD(model.parameters(), lr=args.lr, t0=0, lambd=0., weight_decay=args.wdecay)
        for epoch in range(2):
            try:
                train(optimizer)
            except TypeError as e:
                # evaluate()'s eval-mode ``F.dropout(raw_w, training=False)`` returned the raw
                # Parameter itself, and setattr registered it as 'weight_hh_l0': the next
                # training-mode setattr of a plain tensor is refused (the program's known failure
                # on PyTorch >= 1.0). Log it, drop the registration again and go on.
                log("train after evaluate", (type(e).__name__, str(e).replace(torch.__name__ + ".", "torch.")))
                for rnn in model.rnns:
                    log("registered", rnn.module._parameters['weight_hh_l0'] is rnn.module.weight_hh_l0_raw)
                    del rnn.module._parameters['weight_hh_l0']
                train(optimizer)
            if 't0' in optimizer.param_groups[0]:
                tmp = {}
                for prm in model.parameters():
                    tmp[prm] = prm.data.clone()
                    prm.data = optimizer.state[prm]['ax'].clone()
                val_loss2 = evaluate(val_data)
                print('| end of epoch {:3d} | valid loss {:5.4f}'.format(epoch, val_loss2))
                for prm in model.parameters():
                    prm.data = tmp[prm].clone()
        log("asgd state keys", sorted(optimizer.state[params[0]].keys()))
        log("ax", optimizer.state[params[1]]['ax'])
        log("eta", optimizer.state[params[1]]['eta'])
        log("lstm weight_hh_l0 (set by WeightDrop)", model.rnns[1].module.weight_hh_l0)
        log("raw", model.rnns[1].module.weight_hh_l0_raw)

    run_both(program)


# ufoym/imbalanced-dataset-sampler torchsampler/imbalanced.py (ImbalancedDatasetSampler: a
# ``torch.utils.data.sampler.Sampler`` subclass with per-sample ``DoubleTensor`` weights, iterated
# as ``self.indices[i] for i in torch.multinomial(...)`` -- 0-d tensors used as list indices) used
# by a ``DataLoader`` with a ``callback_get_label``. Changed lines: the torchvision dataset
# branches of ``_get_label`` are dropped (the program passes a callback). The draws come from each
# library's own generator, so what is compared is everything that does not depend on them and the
# statistics of 600 draws (each class near a third, the rare class far above its 1/12 share).
def test_imbalanced_dataset_sampler():
    def program(torch, log):
        class ImbalancedDatasetSampler(torch.utils.data.sampler.Sampler):
            def __init__(self, dataset, indices=None, num_samples=None, callback_get_label=None):
                self.indices = list(range(len(dataset))) \
                    if indices is None else indices
                self.callback_get_label = callback_get_label
                self.num_samples = len(self.indices) \
                    if num_samples is None else num_samples

                label_to_count = {}
                for idx in self.indices:
                    label = self._get_label(dataset, idx)
                    if label in label_to_count:
                        label_to_count[label] += 1
                    else:
                        label_to_count[label] = 1

                weights = [1.0 / label_to_count[self._get_label(dataset, idx)]
                           for idx in self.indices]
                self.weights = torch.DoubleTensor(weights)

            def _get_label(self, dataset, idx):
                if self.callback_get_label:
                    return self.callback_get_label(dataset, idx)
                else:
                    raise NotImplementedError

            def __iter__(self):
                return (self.indices[i] for i in torch.multinomial(
                    self.weights, self.num_samples, replacement=True))

            def __len__(self):
                return self.num_samples

        labels = torch.tensor([0] * 6 + [1] * 5 + [2] * 1)
        features = torch.arange(24, dtype=torch.float32).view(12, 2)
        dataset = torch.utils.data.TensorDataset(features, labels)
        torch.manual_seed(0)
        sampler = ImbalancedDatasetSampler(dataset, callback_get_label=lambda ds, i: ds[i][1].item())
        log("weights", sampler.weights)
        log("len", len(sampler))
        drawn = list(ImbalancedDatasetSampler(dataset, num_samples=600,
                                              callback_get_label=lambda ds, i: int(ds.tensors[1][i])))
        log("drawn types", sorted({type(i).__name__ for i in drawn}))
        log("in range", all(0 <= i < 12 for i in drawn))
        counts = np.bincount([int(labels[i]) for i in drawn], minlength=3) / 600.0
        log("balanced", bool(np.all(np.abs(counts - 1 / 3) < 0.08)))
        subset = ImbalancedDatasetSampler(dataset, indices=[0, 1, 2, 11], callback_get_label=lambda ds, i: ds[i][1].item())
        log("subset weights", subset.weights)
        log("subset draws", sorted(set(subset)) <= [0, 1, 2, 11])

        loader = torch.utils.data.DataLoader(dataset, batch_size=4, sampler=sampler)
        log("batches", len(loader))
        for x, y in loader:
            log("batch shapes", (tuple(x.shape), tuple(y.shape), y.dtype == torch.int64))
            log("rows match labels", bool(torch.equal(labels[(x[:, 0] / 2).long()], y)))

    run_both(program)


# kimiyoung/transformer-xl pytorch/mem_transformer.py: PositionalEmbedding (an ``inv_freq``
# buffer, ``torch.ger``, sin/cos ``cat`` and ``expand``), PositionwiseFF, RelMultiHeadAttn's
# ``_rel_shift`` (zero-pad ``cat``, ``view`` to the transposed shape, drop a row, ``view_as``),
# RelPartialLearnableMultiHeadAttn (``einsum('ibnd,jbnd->ijbn')`` content and position scores,
# ``attn_mask.any().item()``, ``masked_fill`` with -inf through ``.float()``/``type_as``), the
# decoder layer, ``_update_mems`` under ``no_grad`` and the causal mask built by
# ``torch.triu(word_emb.new_ones(qlen, klen), diagonal=1+mlen)``. d_model 8, 2 heads, 2 layers,
# tgt_len 3, mem_len 3, batch 2, three segments of one sequence, Adam. Changed lines: dropout is 0
# (the program's default for eval); the program's ``.byte()`` mask is kept and its outcome under
# ``masked_fill`` (torch's RuntimeError for uint8 masks) is logged, then ``.bool()`` is used.
def test_transformer_xl_relative_attention_with_mems():
    def program(torch, log):
        nn = torch.nn
        F = torch.nn.functional

        class PositionalEmbedding(nn.Module):
            def __init__(self, demb):
                super(PositionalEmbedding, self).__init__()
                self.demb = demb
                inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
                self.register_buffer('inv_freq', inv_freq)

            def forward(self, pos_seq, bsz=None):
                sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
                pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
                if bsz is not None:
                    return pos_emb[:, None, :].expand(-1, bsz, -1)
                else:
                    return pos_emb[:, None, :]

        class PositionwiseFF(nn.Module):
            def __init__(self, d_model, d_inner, dropout, pre_lnorm=False):
                super(PositionwiseFF, self).__init__()
                self.CoreNet = nn.Sequential(
                    nn.Linear(d_model, d_inner), nn.ReLU(inplace=True),
                    nn.Dropout(dropout),
                    nn.Linear(d_inner, d_model),
                    nn.Dropout(dropout),
                )
                self.layer_norm = nn.LayerNorm(d_model)
                self.pre_lnorm = pre_lnorm

            def forward(self, inp):
                if self.pre_lnorm:
                    core_out = self.CoreNet(self.layer_norm(inp))
                    output = core_out + inp
                else:
                    core_out = self.CoreNet(inp)
                    output = self.layer_norm(inp + core_out)
                return output

        class RelMultiHeadAttn(nn.Module):
            def __init__(self, n_head, d_model, d_head, dropout, dropatt=0,
                         tgt_len=None, ext_len=None, mem_len=None, pre_lnorm=False):
                super(RelMultiHeadAttn, self).__init__()
                self.n_head = n_head
                self.d_model = d_model
                self.d_head = d_head
                self.dropout = dropout
                self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
                self.drop = nn.Dropout(dropout)
                self.dropatt = nn.Dropout(dropatt)
                self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
                self.layer_norm = nn.LayerNorm(d_model)
                self.scale = 1 / (d_head ** 0.5)
                self.pre_lnorm = pre_lnorm

            def _rel_shift(self, x, zero_triu=False):
                zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]),
                                       device=x.device, dtype=x.dtype)
                x_padded = torch.cat([zero_pad, x], dim=1)
                x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
                x = x_padded[1:].view_as(x)
                if zero_triu:
                    ones = torch.ones((x.size(0), x.size(1)))
                    x = x * torch.tril(ones, x.size(1) - x.size(0))[:, :, None, None]
                return x

        class RelPartialLearnableMultiHeadAttn(RelMultiHeadAttn):
            def __init__(self, *args, **kwargs):
                super(RelPartialLearnableMultiHeadAttn, self).__init__(*args, **kwargs)
                self.r_net = nn.Linear(self.d_model, self.n_head * self.d_head, bias=False)

            def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
                qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
                if mems is not None:
                    cat = torch.cat([mems, w], 0)
                    if self.pre_lnorm:
                        w_heads = self.qkv_net(self.layer_norm(cat))
                    else:
                        w_heads = self.qkv_net(cat)
                    r_head_k = self.r_net(r)
                    w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
                    w_head_q = w_head_q[-qlen:]
                else:
                    if self.pre_lnorm:
                        w_heads = self.qkv_net(self.layer_norm(w))
                    else:
                        w_heads = self.qkv_net(w)
                    r_head_k = self.r_net(r)
                    w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)

                klen = w_head_k.size(0)

                w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
                w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
                w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
                r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)

                rw_head_q = w_head_q + r_w_bias
                AC = torch.einsum('ibnd,jbnd->ijbn', (rw_head_q, w_head_k))

                rr_head_q = w_head_q + r_r_bias
                BD = torch.einsum('ibnd,jnd->ijbn', (rr_head_q, r_head_k))
                BD = self._rel_shift(BD)

                attn_score = AC + BD
                attn_score.mul_(self.scale)

                if attn_mask is not None and attn_mask.any().item():
                    if attn_mask.dim() == 2:
                        attn_score = attn_score.float().masked_fill(
                            attn_mask[None, :, :, None], -float('inf')).type_as(attn_score)
                    elif attn_mask.dim() == 3:
                        attn_score = attn_score.float().masked_fill(
                            attn_mask[:, :, :, None], -float('inf')).type_as(attn_score)

                attn_prob = F.softmax(attn_score, dim=1)
                attn_prob = self.dropatt(attn_prob)

                attn_vec = torch.einsum('ijbn,jbnd->ibnd', (attn_prob, w_head_v))
                attn_vec = attn_vec.contiguous().view(
                    attn_vec.size(0), attn_vec.size(1), self.n_head * self.d_head)

                attn_out = self.o_net(attn_vec)
                attn_out = self.drop(attn_out)

                if self.pre_lnorm:
                    output = w + attn_out
                else:
                    output = self.layer_norm(w + attn_out)
                return output

        class RelPartialLearnableDecoderLayer(nn.Module):
            def __init__(self, n_head, d_model, d_head, d_inner, dropout, **kwargs):
                super(RelPartialLearnableDecoderLayer, self).__init__()
                self.dec_attn = RelPartialLearnableMultiHeadAttn(n_head, d_model, d_head, dropout, **kwargs)
                self.pos_ff = PositionwiseFF(d_model, d_inner, dropout, pre_lnorm=kwargs.get('pre_lnorm'))

            def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
                output = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias, attn_mask=dec_attn_mask, mems=mems)
                output = self.pos_ff(output)
                return output

        class MemTransformerLM(nn.Module):   # attn_type 0, plain embedding and softmax
            def __init__(self, n_token, n_layer, n_head, d_model, d_head, d_inner, dropout,
                         tgt_len=None, mem_len=None, pre_lnorm=False):
                super(MemTransformerLM, self).__init__()
                self.n_token = n_token
                self.d_model = d_model
                self.n_head = n_head
                self.d_head = d_head
                self.word_emb = nn.Embedding(n_token, d_model)
                self.drop = nn.Dropout(dropout)
                self.n_layer = n_layer
                self.tgt_len = tgt_len
                self.mem_len = mem_len
                self.ext_len = 0
                self.layers = nn.ModuleList()
                for i in range(n_layer):
                    self.layers.append(RelPartialLearnableDecoderLayer(
                        n_head, d_model, d_head, d_inner, dropout, tgt_len=tgt_len,
                        ext_len=0, mem_len=mem_len, pre_lnorm=pre_lnorm))
                self.out_layer = nn.Linear(d_model, n_token)
                self.pos_emb = PositionalEmbedding(self.d_model)
                self.r_w_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))
                self.r_r_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))

            def init_mems(self):
                if self.mem_len > 0:
                    mems = []
                    param = next(self.parameters())
                    for i in range(self.n_layer + 1):
                        empty = torch.empty(0, dtype=param.dtype, device=param.device)
                        mems.append(empty)
                    return mems
                else:
                    return None

            def _update_mems(self, hids, mems, qlen, mlen):
                if mems is None: return None
                assert len(hids) == len(mems), 'len(hids) != len(mems)'
                with torch.no_grad():
                    new_mems = []
                    end_idx = mlen + max(0, qlen - 0 - self.ext_len)
                    beg_idx = max(0, end_idx - self.mem_len)
                    for i in range(len(hids)):
                        cat = torch.cat([mems[i], hids[i]], dim=0)
                        new_mems.append(cat[beg_idx:end_idx].detach())
                return new_mems

            def _forward(self, dec_inp, mems=None):
                qlen, bsz = dec_inp.size()
                word_emb = self.word_emb(dec_inp)
                mlen = mems[0].size(0) if mems is not None else 0
                klen = mlen + qlen
                mask = torch.triu(word_emb.new_ones(qlen, klen), diagonal=1+mlen).byte()[:, :, None]
                try:
                    torch.zeros(qlen, klen, 1).masked_fill(mask, 1.0)
                    log("byte mask", "accepted")
                except RuntimeError as e:
                    log("byte mask", (type(e).__name__, str(e)[:60]))
                dec_attn_mask = mask.bool()
                hids = []
                pos_seq = torch.arange(klen-1, -1, -1.0, device=word_emb.device, dtype=word_emb.dtype)
                pos_emb = self.pos_emb(pos_seq)
                core_out = self.drop(word_emb)
                pos_emb = self.drop(pos_emb)
                hids.append(core_out)
                for i, layer in enumerate(self.layers):
                    mems_i = None if mems is None else mems[i]
                    core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias,
                                     dec_attn_mask=dec_attn_mask, mems=mems_i)
                    hids.append(core_out)
                core_out = self.drop(core_out)
                new_mems = self._update_mems(hids, mems, mlen, qlen)
                return core_out, new_mems

            def forward(self, data, target, *mems):
                if not mems: mems = self.init_mems()
                tgt_len = target.size(0)
                hidden, new_mems = self._forward(data, mems=mems)
                pred_hid = hidden[-tgt_len:]
                logit = self.out_layer(pred_hid.view(-1, pred_hid.size(-1)))
                loss = -F.log_softmax(logit, dim=-1).gather(1, target.reshape(-1).unsqueeze(1)).squeeze(1)
                loss = loss.view(tgt_len, -1)
                if new_mems is None:
                    return [loss]
                else:
                    return [loss] + new_mems

        model = MemTransformerLM(10, 2, 2, 8, 4, 12, 0.0, tgt_len=3, mem_len=3)
        init_params(torch, model, seed=50, scale=0.4)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        seq = torch.tensor(np.random.RandomState(51).randint(0, 10, size=(10, 2)))
        mems = tuple()
        for i in range(0, 9, 3):
            data, target = seq[i:i + 3], seq[i + 1:i + 4]
            ret = model(data, target, *mems)
            loss, mems = ret[0], ret[1:]
            loss = loss.float().mean().type_as(loss)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            log("loss", loss)
            log("mem shapes", [tuple(m.shape) for m in mems])
            log("mem requires grad", any(m.requires_grad for m in mems))
            log("r_r_bias grad", model.r_r_bias.grad)
        log("inv_freq", model.pos_emb.inv_freq)
        log("last mem", mems[-1])
        shift = model.layers[0].dec_attn._rel_shift(torch.arange(24.0).view(2, 3, 2, 2), zero_triu=True)
        log("rel shift", shift)

    run_both(program)
