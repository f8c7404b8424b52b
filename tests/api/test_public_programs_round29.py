"""A twenty-ninth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round28.py``, from repositories no earlier round used:

- tanelp/tiny-diffusion: ``ddpm.py``'s 2-d DDPM (``positional_embeddings.py``'s sinusoidal /
  linear / learnable / zero / identity embeddings with ``nn.Parameter(..., requires_grad=False)``
  and ``len()`` of modules, the zero time embedding's int64 zeros ``cat``-ed with float
  embeddings, the ``NoiseScheduler`` built from ``linspace``, ``cumprod(axis=0)``,
  ``F.pad(..., value=1.)`` and powers, timesteps gathered and ``reshape``-d, ``get_variance``'s
  ``t == 0`` test on a 0-dim tensor and ``clip``), trained as its main loop does
  (``loss.backward(loss)``, ``clip_grad_norm_``, AdamW) and sampled in reverse with
  ``torch.from_numpy(np.repeat(...)).long()`` timesteps under ``no_grad``;
- williamleif/graphsage-simple: GraphSAGE in plain torch (``MeanAggregator``'s ``random.sample``
  of neighbour sets, the dense row-normalised mask written with two index lists, ``mask.mm``,
  an ``nn.Embedding`` whose weight is replaced by a frozen ``nn.Parameter``, lambdas as feature
  functions, ``Encoder``'s ``weight.mm(combined.t())``, ``init.xavier_uniform``), the Cora loop
  (``SGD`` over ``filter(lambda p: p.requires_grad, ...)``, ``Variable(torch.LongTensor(...))``
  labels, ``squeeze``) and ``loss.data[0]``, which torch 2 rejects;
- AntixK/PyTorch-VAE: ``models/betatc_vae.py``'s beta-TC-VAE (strided ``Conv2d`` /
  ``ConvTranspose2d(output_padding=1)`` stacks with ``BatchNorm2d`` and ``LeakyReLU``, the
  hard-coded ``view(-1, 512, 2, 2)``, the minibatch-weighted total-correlation decomposition
  through broadcast ``log_density_gaussian`` and ``logsumexp``, the class-level ``num_iter``
  counter and its KL anneal), trained with Adam.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import io
import random

import numpy as np
import pytest
from parity import init_params, printer, run_both, seeded

torch = pytest.importorskip("torch")


class _Seeded:
    """The program's ``torch`` with its random draws (``randn``, ``randn_like``, ``randint``)
    taken from one numpy stream, so that torch and tracegrad see the same numbers; everything
    else is the module itself."""

    def __init__(self, mod, seed):
        self._mod = mod
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def randn(self, *size):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return self._mod.tensor(self._rs.standard_normal(size).astype(np.float32))

    def randn_like(self, t):
        return self.randn(tuple(t.shape)).to(t.dtype)

    def randint(self, low, high, size):
        return self._mod.tensor(self._rs.randint(low, high, size))


class _Bar:
    """tqdm stand-in (progress bars write to stderr at random times)."""

    def __init__(self, it=None, total=None):
        self._it = it

    def __iter__(self):
        return iter(self._it)

    def set_description(self, *a):
        pass

    def set_postfix(self, **k):
        pass

    def update(self, *a):
        pass

    def close(self):
        pass


# ---- tanelp/tiny-diffusion ---------------------------------------------------------------------
def _tiny_diffusion_module(torch):
    """positional_embeddings.py and ddpm.py's MLP / NoiseScheduler, unchanged (``torch`` is the
    program's module, ``nn``/``F`` looked up on it)."""
    nn = torch.nn
    F = torch.nn.functional

    class SinusoidalEmbedding(nn.Module):
        def __init__(self, size: int, scale: torch.float = 1.0):
            super().__init__()
            self.size = size
            self.scale = scale
            half_size = self.size // 2
            emb = torch.log(torch.Tensor([10000.0])) / (half_size - 1)
            emb = torch.exp(-emb * torch.arange(half_size))
            self.emb = nn.Parameter(emb, requires_grad=False)

        def forward(self, x: torch.Tensor):
            x = x * self.scale
            emb = x.unsqueeze(-1) * self.emb.unsqueeze(0)
            emb = torch.cat((torch.sin(emb), torch.cos(emb)), dim=-1)
            return emb

        def __len__(self):
            return self.size

    class LinearEmbedding(nn.Module):
        def __init__(self, size: int, scale: float = 1.0):
            super().__init__()
            self.size = size
            self.scale = scale

        def forward(self, x: torch.Tensor):
            x = x / self.size * self.scale
            return x.unsqueeze(-1)

        def __len__(self):
            return 1

    class LearnableEmbedding(nn.Module):
        def __init__(self, size: int):
            super().__init__()
            self.size = size
            self.linear = nn.Linear(1, size)

        def forward(self, x: torch.Tensor):
            return self.linear(x.unsqueeze(-1).float() / self.size)

        def __len__(self):
            return self.size

    class IdentityEmbedding(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x: torch.Tensor):
            return x.unsqueeze(-1)

        def __len__(self):
            return 1

    class ZeroEmbedding(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x: torch.Tensor):
            return x.unsqueeze(-1) * 0

        def __len__(self):
            return 1

    class PositionalEmbedding(nn.Module):
        def __init__(self, size: int, type: str, **kwargs):
            super().__init__()

            if type == "sinusoidal":
                self.layer = SinusoidalEmbedding(size, **kwargs)
            elif type == "linear":
                self.layer = LinearEmbedding(size, **kwargs)
            elif type == "learnable":
                self.layer = LearnableEmbedding(size)
            elif type == "zero":
                self.layer = ZeroEmbedding()
            elif type == "identity":
                self.layer = IdentityEmbedding()
            else:
                raise ValueError(f"Unknown positional embedding type: {type}")

        def forward(self, x: torch.Tensor):
            return self.layer(x)

    class Block(nn.Module):
        def __init__(self, size: int):
            super().__init__()

            self.ff = nn.Linear(size, size)
            self.act = nn.GELU()

        def forward(self, x: torch.Tensor):
            return x + self.act(self.ff(x))

    class MLP(nn.Module):
        def __init__(self, hidden_size: int = 128, hidden_layers: int = 3, emb_size: int = 128,
                     time_emb: str = "sinusoidal", input_emb: str = "sinusoidal"):
            super().__init__()

            self.time_mlp = PositionalEmbedding(emb_size, time_emb)
            self.input_mlp1 = PositionalEmbedding(emb_size, input_emb, scale=25.0)
            self.input_mlp2 = PositionalEmbedding(emb_size, input_emb, scale=25.0)

            concat_size = len(self.time_mlp.layer) + \
                len(self.input_mlp1.layer) + len(self.input_mlp2.layer)
            layers = [nn.Linear(concat_size, hidden_size), nn.GELU()]
            for _ in range(hidden_layers):
                layers.append(Block(hidden_size))
            layers.append(nn.Linear(hidden_size, 2))
            self.joint_mlp = nn.Sequential(*layers)

        def forward(self, x, t):
            x1_emb = self.input_mlp1(x[:, 0])
            x2_emb = self.input_mlp2(x[:, 1])
            t_emb = self.time_mlp(t)
            x = torch.cat((x1_emb, x2_emb, t_emb), dim=-1)
            x = self.joint_mlp(x)
            return x

    class NoiseScheduler():
        def __init__(self,
                     num_timesteps=1000,
                     beta_start=0.0001,
                     beta_end=0.02,
                     beta_schedule="linear"):

            self.num_timesteps = num_timesteps
            if beta_schedule == "linear":
                self.betas = torch.linspace(
                    beta_start, beta_end, num_timesteps, dtype=torch.float32)
            elif beta_schedule == "quadratic":
                self.betas = torch.linspace(
                    beta_start ** 0.5, beta_end ** 0.5, num_timesteps, dtype=torch.float32) ** 2

            self.alphas = 1.0 - self.betas
            self.alphas_cumprod = torch.cumprod(self.alphas, axis=0)
            self.alphas_cumprod_prev = F.pad(
                self.alphas_cumprod[:-1], (1, 0), value=1.)

            # required for self.add_noise
            self.sqrt_alphas_cumprod = self.alphas_cumprod ** 0.5
            self.sqrt_one_minus_alphas_cumprod = (1 - self.alphas_cumprod) ** 0.5

            # required for reconstruct_x0
            self.sqrt_inv_alphas_cumprod = torch.sqrt(1 / self.alphas_cumprod)
            self.sqrt_inv_alphas_cumprod_minus_one = torch.sqrt(
                1 / self.alphas_cumprod - 1)

            # required for q_posterior
            self.posterior_mean_coef1 = self.betas * torch.sqrt(self.alphas_cumprod_prev) / (1. - self.alphas_cumprod)
            self.posterior_mean_coef2 = (1. - self.alphas_cumprod_prev) * torch.sqrt(self.alphas) / (1. - self.alphas_cumprod)

        def reconstruct_x0(self, x_t, t, noise):
            s1 = self.sqrt_inv_alphas_cumprod[t]
            s2 = self.sqrt_inv_alphas_cumprod_minus_one[t]
            s1 = s1.reshape(-1, 1)
            s2 = s2.reshape(-1, 1)
            return s1 * x_t - s2 * noise

        def q_posterior(self, x_0, x_t, t):
            s1 = self.posterior_mean_coef1[t]
            s2 = self.posterior_mean_coef2[t]
            s1 = s1.reshape(-1, 1)
            s2 = s2.reshape(-1, 1)
            mu = s1 * x_0 + s2 * x_t
            return mu

        def get_variance(self, t):
            if t == 0:
                return 0

            variance = self.betas[t] * (1. - self.alphas_cumprod_prev[t]) / (1. - self.alphas_cumprod[t])
            variance = variance.clip(1e-20)
            return variance

        def step(self, model_output, timestep, sample):
            t = timestep
            pred_original_sample = self.reconstruct_x0(sample, t, model_output)
            pred_prev_sample = self.q_posterior(pred_original_sample, sample, t)

            variance = 0
            if t > 0:
                noise = torch.randn_like(model_output)
                variance = (self.get_variance(t) ** 0.5) * noise

            pred_prev_sample = pred_prev_sample + variance

            return pred_prev_sample

        def add_noise(self, x_start, x_noise, timesteps):
            s1 = self.sqrt_alphas_cumprod[timesteps]
            s2 = self.sqrt_one_minus_alphas_cumprod[timesteps]

            s1 = s1.reshape(-1, 1)
            s2 = s2.reshape(-1, 1)

            return s1 * x_start + s2 * x_noise

        def __len__(self):
            return self.num_timesteps

    return MLP, NoiseScheduler, PositionalEmbedding


# tanelp/tiny-diffusion ddpm.py's ``__main__`` at tiny sizes: datasets.py's moons (sklearn's
# make_moons, 8 points), batch 4, 2 epochs, 5 timesteps, embedding 4, hidden 8, one Block,
# eval batch 4 (the training batch's shapes again: each new shape costs compiles), learning rate 1e-3 -> 2e-2 (so two epochs move the weights). Deviations: the
# DataLoader does not shuffle (its permutation comes from torch's generator, which differs
# between the libraries); ``torch.randn``/``randint``/``randn_like`` draw from one numpy stream
# (``_Seeded``); tqdm is a silent stand-in; the model is saved to a BytesIO and the losses and
# frames are logged instead of written to exps/; the plots are left out.
def test_tiny_diffusion_ddpm():
    from sklearn.datasets import make_moons

    def program(tmod, log):
        print = printer(log)
        torch = _Seeded(tmod, 11)
        nn, F = torch.nn, torch.nn.functional
        DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
        tqdm = _Bar
        MLP, NoiseScheduler, PositionalEmbedding = _tiny_diffusion_module(torch)

        def moons_dataset(n=8000):
            X, _ = make_moons(n_samples=n, random_state=42, noise=0.03)
            X[:, 0] = (X[:, 0] + 0.3) * 2 - 1
            X[:, 1] = (X[:, 1] + 0.3) * 3 - 1
            return TensorDataset(torch.from_numpy(X.astype(np.float32)))

        class config:
            train_batch_size, eval_batch_size, num_epochs = 4, 4, 2
            learning_rate, num_timesteps, beta_schedule = 2e-2, 5, "linear"
            embedding_size, hidden_size, hidden_layers = 4, 8, 1
            time_embedding, input_embedding, save_images_step = "sinusoidal", "sinusoidal", 1
            device = "cpu"

        if torch.cuda.is_available() and config.device[:4] == "cuda":
            print(f"INFO: '{config.device}' is available")
            device = config.device
        else:
            print("INFO: using cpu")
            device = config.device = "cpu"

        dataset = moons_dataset(8)
        dataloader = DataLoader(
            dataset, batch_size=config.train_batch_size, shuffle=False, drop_last=True)

        model = MLP(
            hidden_size=config.hidden_size,
            hidden_layers=config.hidden_layers,
            emb_size=config.embedding_size,
            time_emb=config.time_embedding,
            input_emb=config.input_embedding).to(device)
        # the frozen sinusoidal frequencies are parameters: init_params would overwrite them too
        trainable = [p for p in model.parameters() if p.requires_grad]
        rs = np.random.RandomState(4)
        with torch.no_grad():
            for p in trainable:
                p.copy_(torch.tensor(rs.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
        log("emb", model.time_mlp.layer.emb)
        log("n_params", [len(list(model.parameters())), len(trainable)])

        noise_scheduler = NoiseScheduler(
            num_timesteps=config.num_timesteps,
            beta_schedule=config.beta_schedule)
        quadratic = NoiseScheduler(num_timesteps=config.num_timesteps, beta_schedule="quadratic")
        for name in ("betas", "alphas_cumprod_prev", "sqrt_inv_alphas_cumprod_minus_one",
                     "posterior_mean_coef1", "posterior_mean_coef2"):
            log(name, getattr(noise_scheduler, name))
            log("quadratic_" + name, getattr(quadratic, name))

        optimizer = torch.optim.AdamW(
            model.parameters(),
            lr=config.learning_rate,
        )

        global_step = 0
        frames = []
        losses = []
        print("Training model...")

        for epoch in range(config.num_epochs):
            model.train()
            progress_bar = tqdm(total=len(dataloader))
            progress_bar.set_description(f"Epoch {epoch}")
            for step, batch in enumerate(dataloader):
                batch = batch[0]
                noise = torch.randn(batch.shape)
                timesteps = torch.randint(
                    0, noise_scheduler.num_timesteps, (batch.shape[0],)
                ).long()

                noisy = noise_scheduler.add_noise(batch, noise, timesteps)
                noise_pred = model(noisy.to(device), timesteps.to(device))
                loss = F.mse_loss(noise_pred, noise.to(device))
                loss.backward(loss)
                log(f"grad{global_step}", model.joint_mlp[0].weight.grad)

                norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                log(f"norm{global_step}", norm)
                optimizer.step()
                optimizer.zero_grad()

                progress_bar.update(1)
                logs = {"loss": loss.detach().item(), "step": global_step}
                losses.append(loss.detach().item())
                progress_bar.set_postfix(**logs)
                global_step += 1
            progress_bar.close()

            if epoch % config.save_images_step == 0 or epoch == config.num_epochs - 1:
                # generate data with the model to later visualize the learning process
                model.eval()
                sample = torch.randn(config.eval_batch_size, 2)
                timesteps = list(range(len(noise_scheduler)))[::-1]
                for i, t in enumerate(tqdm(timesteps)):
                    t = torch.from_numpy(np.repeat(t, config.eval_batch_size)).long()
                    with torch.no_grad():
                        residual = model(sample.to(device), t.to(device)).to("cpu")
                    sample = noise_scheduler.step(residual, t[0], sample)
                frames.append(sample.numpy())

        print("Saving model...")
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)
        buf.seek(0)
        state = torch.load(buf)
        log("saved", [(k, v) for k, v in state.items()])
        frames = np.stack(frames)
        log("frames", frames)
        log("losses", np.array(losses))
        log("variance0", noise_scheduler.get_variance(torch.tensor(0)))
        log("variance3", noise_scheduler.get_variance(torch.tensor(3)))

        # the ablation study's other embeddings (ddpm.py --time_embedding/--input_embedding),
        # each on its own (a whole MLP per choice would only add compiles of new Linear shapes)
        t = torch.tensor([4, 1])
        for kind in ("learnable", "linear", "identity", "zero"):
            emb = PositionalEmbedding(4, kind)
            init_params(torch, emb, seed=6)
            log(kind, [len(emb.layer), emb(t)])
        # --time_embedding zero: int64 zeros concatenated with the float input embeddings
        m = init_params(torch, MLP(hidden_size=8, hidden_layers=1, emb_size=4, time_emb="zero"), seed=7)
        with torch.no_grad():
            log("zero_time", m(torch.tensor([[0.5, -1.0], [2.0, 0.25]]), t))
        try:
            PositionalEmbedding(4, "rotary")
        except ValueError as e:
            log("unknown", str(e))

    run_both(program)


# ---- williamleif/graphsage-simple ----------------------------------------------------------------
def _graphsage_module(torch):
    """graphsage/aggregators.py, encoders.py and model.py's SupervisedGraphSage as written but for
    two Python-3 fixes: ``random.sample`` no longer takes a set (3.11), so it samples from
    ``sorted(to_neigh)``; ``set + set`` never worked, so the GCN self-loop is added with ``|`` (as
    the repository's forks do)."""
    nn = torch.nn
    init = torch.nn.init
    F = torch.nn.functional
    Variable = torch.autograd.Variable

    class MeanAggregator(nn.Module):
        """
        Aggregates a node's embeddings using mean of neighbors' embeddings
        """
        def __init__(self, features, cuda=False, gcn=False):
            super(MeanAggregator, self).__init__()

            self.features = features
            self.cuda = cuda
            self.gcn = gcn

        def forward(self, nodes, to_neighs, num_sample=10):
            # Local pointers to functions (speed hack)
            _set = set
            if not num_sample is None:
                _sample = random.sample
                samp_neighs = [_set(_sample(sorted(to_neigh),
                                num_sample,
                                )) if len(to_neigh) >= num_sample else to_neigh for to_neigh in to_neighs]
            else:
                samp_neighs = to_neighs

            if self.gcn:
                samp_neighs = [samp_neigh | set([nodes[i]]) for i, samp_neigh in enumerate(samp_neighs)]
            unique_nodes_list = list(set.union(*samp_neighs))
            unique_nodes = {n: i for i, n in enumerate(unique_nodes_list)}
            mask = Variable(torch.zeros(len(samp_neighs), len(unique_nodes)))
            column_indices = [unique_nodes[n] for samp_neigh in samp_neighs for n in samp_neigh]
            row_indices = [i for i in range(len(samp_neighs)) for j in range(len(samp_neighs[i]))]
            mask[row_indices, column_indices] = 1
            if self.cuda:
                mask = mask.cuda()
            num_neigh = mask.sum(1, keepdim=True)
            mask = mask.div(num_neigh)
            if self.cuda:
                embed_matrix = self.features(torch.LongTensor(unique_nodes_list).cuda())
            else:
                embed_matrix = self.features(torch.LongTensor(unique_nodes_list))
            to_feats = mask.mm(embed_matrix)
            return to_feats

    class Encoder(nn.Module):
        """
        Encodes a node's using 'convolutional' GraphSage approach
        """
        def __init__(self, features, feature_dim,
                     embed_dim, adj_lists, aggregator,
                     num_sample=10,
                     base_model=None, gcn=False, cuda=False,
                     feature_transform=False):
            super(Encoder, self).__init__()

            self.features = features
            self.feat_dim = feature_dim
            self.adj_lists = adj_lists
            self.aggregator = aggregator
            self.num_sample = num_sample
            if base_model != None:
                self.base_model = base_model

            self.gcn = gcn
            self.embed_dim = embed_dim
            self.cuda = cuda
            self.aggregator.cuda = cuda
            self.weight = nn.Parameter(
                torch.FloatTensor(embed_dim, self.feat_dim if self.gcn else 2 * self.feat_dim))
            init.xavier_uniform(self.weight)

        def forward(self, nodes):
            neigh_feats = self.aggregator.forward(nodes, [self.adj_lists[node] for node in nodes],
                                                  self.num_sample)
            if not self.gcn:
                if self.cuda:
                    self_feats = self.features(torch.LongTensor(nodes).cuda())
                else:
                    self_feats = self.features(torch.LongTensor(nodes))
                combined = torch.cat([self_feats, neigh_feats], dim=1)
            else:
                combined = neigh_feats
            combined = F.relu(self.weight.mm(combined.t()))
            return combined

    class SupervisedGraphSage(nn.Module):

        def __init__(self, num_classes, enc):
            super(SupervisedGraphSage, self).__init__()
            self.enc = enc
            self.xent = nn.CrossEntropyLoss()

            self.weight = nn.Parameter(torch.FloatTensor(num_classes, enc.embed_dim))
            init.xavier_uniform(self.weight)

        def forward(self, nodes):
            embeds = self.enc(nodes)
            scores = self.weight.mm(embeds)
            return scores.t()

        def loss(self, nodes, labels):
            scores = self.forward(nodes)
            return self.xent(scores, labels.squeeze())

    return MeanAggregator, Encoder, SupervisedGraphSage


def _toy_cora(num_nodes, num_feats, num_classes, seed):
    """load_cora's outputs (feat_data float64, labels (n, 1) int64, adj_lists a defaultdict of
    sets) for a random graph: a ring plus random chords, binary bag-of-words features."""
    from collections import defaultdict
    rs = np.random.RandomState(seed)
    feat_data = (rs.rand(num_nodes, num_feats) < 0.4).astype(np.float64)
    labels = rs.randint(0, num_classes, (num_nodes, 1)).astype(np.int64)
    adj_lists = defaultdict(set)
    edges = [(i, (i + 1) % num_nodes) for i in range(num_nodes)]
    edges += [tuple(e) for e in rs.randint(0, num_nodes, (num_nodes, 2)) if e[0] != e[1]]
    for paper1, paper2 in edges:
        adj_lists[int(paper1)].add(int(paper2))
        adj_lists[int(paper2)].add(int(paper1))
    return feat_data, labels, adj_lists


# williamleif/graphsage-simple model.py's run_cora at tiny sizes: 12 nodes with 6 features in 3
# classes (``_toy_cora`` in place of load_cora's files), embeddings 128 -> 5, 3 batches of 4
# training nodes, validation on 3 nodes; the Encoders sample ``num_sample=3`` neighbours (the
# default 10 exceeds every degree here, and run_cora's ``enc1.num_samples = 5`` sets an attribute
# nothing reads). Deviations: the xavier-initialised weights are overwritten from numpy
# (``init_params``; the frozen feature table stays), Python 2's ``print`` statements are calls,
# and ``loss.data[0]`` -- an IndexError on a 0-dim tensor since torch 0.5 -- is tried, its error
# logged, and ``loss.item()`` printed instead. The aggregator's ``random.sample`` and the shuffle
# of ``train`` run under the program's own ``random.seed(1)`` (restored afterwards).
def test_graphsage_supervised_cora():
    from sklearn.metrics import f1_score

    def program(torch, log):
        print = printer(log)
        nn = torch.nn
        Variable = torch.autograd.Variable
        MeanAggregator, Encoder, SupervisedGraphSage = _graphsage_module(torch)
        num_nodes, num_feats = 12, 6
        with seeded(0):
            np.random.seed(1)
            random.seed(1)
            feat_data, labels, adj_lists = _toy_cora(num_nodes, num_feats, 3, seed=2)
            features = nn.Embedding(num_nodes, num_feats)
            features.weight = nn.Parameter(torch.FloatTensor(feat_data), requires_grad=False)

            agg1 = MeanAggregator(features, cuda=True)
            enc1 = Encoder(features, num_feats, 5, adj_lists, agg1, num_sample=3, gcn=True, cuda=False)
            agg2 = MeanAggregator(lambda nodes: enc1(nodes).t(), cuda=False)
            enc2 = Encoder(lambda nodes: enc1(nodes).t(), enc1.embed_dim, 5, adj_lists, agg2,
                           num_sample=3, base_model=enc1, gcn=True, cuda=False)
            enc1.num_samples = 5
            enc2.num_samples = 5

            graphsage = SupervisedGraphSage(3, enc2)
            init_params(torch, graphsage, seed=3, scale=0.6)
            log("named", [(n, p.requires_grad, tuple(p.shape)) for n, p in graphsage.named_parameters()])
            log("features", graphsage.enc.base_model.features.weight)
            rand_indices = np.random.permutation(num_nodes)
            test = rand_indices[:3]
            val = rand_indices[3:6]
            train = list(rand_indices[6:])

            optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, graphsage.parameters()), lr=0.7)
            log("n_opt", len(optimizer.param_groups[0]["params"]))
            for batch in range(3):
                batch_nodes = train[:4]
                random.shuffle(train)
                optimizer.zero_grad()
                loss = graphsage.loss(batch_nodes,
                                      Variable(torch.LongTensor(labels[np.array(batch_nodes)])))
                loss.backward()
                log(f"grad1_{batch}", enc1.weight.grad)
                log(f"grad2_{batch}", enc2.weight.grad)
                optimizer.step()
                try:
                    loss.data[0]
                except Exception as e:
                    log("data0", type(e).__name__)
                print(batch, loss.item())

            val_output = graphsage.forward(val)
            log("val_output", val_output)
            print("Validation F1:", f1_score(labels[val], val_output.data.numpy().argmax(axis=1), average="micro"))
            log("test_embeds", enc2(list(test)))
            log("weights", [graphsage.weight, enc1.weight, enc2.weight])

    run_both(program)


# ---- AntixK/PyTorch-VAE --------------------------------------------------------------------------
def _betatc_vae_module(torch):
    """models/types_.py, base.py and betatc_vae.py, unchanged but for docstrings (``torch`` is the
    program's module: ``reparameterize`` and ``sample`` draw with its ``randn_like``/``randn``)."""
    import math
    from abc import abstractmethod
    from typing import Any, List
    nn = torch.nn
    F = torch.nn.functional
    Tensor = torch.Tensor

    class BaseVAE(nn.Module):

        def __init__(self) -> None:
            super(BaseVAE, self).__init__()

        def encode(self, input: Tensor) -> List[Tensor]:
            raise NotImplementedError

        def decode(self, input: Tensor) -> Any:
            raise NotImplementedError

        def sample(self, batch_size: int, current_device: int) -> Tensor:
            raise NotImplementedError

        def generate(self, x: Tensor) -> Tensor:
            raise NotImplementedError

        @abstractmethod
        def forward(self, *inputs: Tensor) -> Tensor:
            pass

        @abstractmethod
        def loss_function(self, *inputs: Any) -> Tensor:
            pass

    class BetaTCVAE(BaseVAE):
        num_iter = 0  # Global static variable to keep track of iterations

        def __init__(self,
                     in_channels: int,
                     latent_dim: int,
                     hidden_dims: List = None,
                     anneal_steps: int = 200,
                     alpha: float = 1.,
                     beta: float = 6.,
                     gamma: float = 1.,
                     **kwargs) -> None:
            super(BetaTCVAE, self).__init__()

            self.latent_dim = latent_dim
            self.anneal_steps = anneal_steps

            self.alpha = alpha
            self.beta = beta
            self.gamma = gamma

            modules = []
            if hidden_dims is None:
                hidden_dims = [32, 64, 128, 256, 512]

            # Build Encoder
            for h_dim in hidden_dims:
                modules.append(
                    nn.Sequential(
                        nn.Conv2d(in_channels, out_channels=h_dim,
                                  kernel_size=3, stride=2, padding=1),
                        nn.BatchNorm2d(h_dim),
                        nn.LeakyReLU())
                )
                in_channels = h_dim

            self.encoder = nn.Sequential(*modules)
            self.fc_mu = nn.Linear(hidden_dims[-1]*4, latent_dim)
            self.fc_var = nn.Linear(hidden_dims[-1]*4, latent_dim)

            # Build Decoder
            modules = []

            self.decoder_input = nn.Linear(latent_dim, hidden_dims[-1] * 4)

            hidden_dims.reverse()

            for i in range(len(hidden_dims) - 1):
                modules.append(
                    nn.Sequential(
                        nn.ConvTranspose2d(hidden_dims[i],
                                           hidden_dims[i + 1],
                                           kernel_size=3,
                                           stride=2,
                                           padding=1,
                                           output_padding=1),
                        nn.BatchNorm2d(hidden_dims[i + 1]),
                        nn.LeakyReLU())
                )

            self.decoder = nn.Sequential(*modules)

            self.final_layer = nn.Sequential(
                                nn.ConvTranspose2d(hidden_dims[-1],
                                                   hidden_dims[-1],
                                                   kernel_size=3,
                                                   stride=2,
                                                   padding=1,
                                                   output_padding=1),
                                nn.BatchNorm2d(hidden_dims[-1]),
                                nn.LeakyReLU(),
                                nn.Conv2d(hidden_dims[-1], out_channels=3,
                                          kernel_size=3, padding=1),
                                nn.Tanh())

        def encode(self, input: Tensor) -> List[Tensor]:
            result = self.encoder(input)
            result = torch.flatten(result, start_dim=1)

            # Split the result into mu and var components
            # of the latent Gaussian distribution
            mu = self.fc_mu(result)
            log_var = self.fc_var(result)

            return [mu, log_var]

        def decode(self, z: Tensor) -> Tensor:
            result = self.decoder_input(z)
            result = result.view(-1, 512, 2, 2)
            result = self.decoder(result)
            result = self.final_layer(result)
            return result

        def reparameterize(self, mu: Tensor, logvar: Tensor) -> Tensor:
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std)
            return eps * std + mu

        def forward(self, input: Tensor, **kwargs) -> List[Tensor]:
            mu, log_var = self.encode(input)
            z = self.reparameterize(mu, log_var)
            return [self.decode(z), input, mu, log_var, z]

        def log_density_gaussian(self, x: Tensor, mu: Tensor, logvar: Tensor):
            norm = - 0.5 * (math.log(2 * math.pi) + logvar)
            log_density = norm - 0.5 * ((x - mu) ** 2 * torch.exp(-logvar))
            return log_density

        def loss_function(self,
                          *args,
                          **kwargs) -> dict:
            if self.training:
                self.num_iter += 1

            recons = args[0]
            input = args[1]
            mu = args[2]
            log_var = args[3]
            z = args[4]

            recons_loss = F.mse_loss(recons, input)

            log_q_zx = self.log_density_gaussian(z, mu, log_var).sum(dim=1)

            zeros = torch.zeros_like(z)
            log_p_z = self.log_density_gaussian(z, zeros, zeros).sum(dim=1)

            batch_size, latent_dim = z.shape
            mat_log_q_z = self.log_density_gaussian(z.view(batch_size, 1, latent_dim),
                                                    mu.view(1, batch_size, latent_dim),
                                                    log_var.view(1, batch_size, latent_dim))

            log_q_z = torch.logsumexp(mat_log_q_z.sum(2), dim=1, keepdim=False)
            log_prod_q_z = torch.logsumexp(mat_log_q_z, dim=1, keepdim=False).sum(1)

            kld_loss = (log_prod_q_z - log_p_z).mean()
            tc_loss = (log_q_z - log_prod_q_z).mean()
            mi_loss = (log_q_zx - log_q_z).mean()

            anneal_rate = min(0 + 1 * self.num_iter / self.anneal_steps, 1)
            loss = recons_loss + \
                self.alpha * mi_loss + \
                self.beta * tc_loss + \
                anneal_rate * self.gamma * kld_loss

            return {'loss': loss,
                    'Reconstruction_Loss': recons_loss,
                    'KLD': kld_loss,
                    'TC_Loss': tc_loss,
                    'MI_Loss': mi_loss}

        def sample(self,
                   num_samples: int,
                   current_device: int, **kwargs) -> Tensor:
            z = torch.randn(num_samples,
                            self.latent_dim)

            z = z.to(current_device)

            samples = self.decode(z)
            return samples

        def generate(self, x: Tensor, **kwargs) -> Tensor:
            return self.forward(x)[0]

    return BetaTCVAE


# AntixK/PyTorch-VAE configs/betatc_vae.yaml trained the way experiment.py's VAEXperiment does
# (training_step: forward, loss_function with M_N, backward, Adam step; validation_step under
# no_grad in eval mode; sample_images' generate and sample; ExponentialLR stepped per epoch),
# without pytorch_lightning. Sizes: 8x8 images (instead of 64x64), hidden_dims [4, 512] (the last
# must be 512: decode's ``view(-1, 512, 2, 2)`` is hard-coded), latent 3, batch 4, 2 epochs of 1
# step, anneal_steps 10000 -> 3 (so the anneal rate moves). ``torch.randn``/``randn_like`` draw
# from one numpy stream (``_Seeded``); parameters from ``init_params`` at scale 0.05 (at 0.3 the
# 2048-wide fc_var gives log-variances near +-7, whose ``exp(-logvar)`` amplifies float32
# rounding to 1e-5 of the gradients in both libraries, measured against a float64 run); Adam's
# eps 1e-8 -> 1e-4: a convolution's bias in front of BatchNorm has an analytically zero gradient,
# so Adam's g / sqrt(v) turns its float rounding noise into lr-sized steps of either sign, which
# the running means (and so the eval-mode validation) would show.
def test_betatc_vae():
    def program(tmod, log):
        torch = _Seeded(tmod, 21)
        BetaTCVAE = _betatc_vae_module(torch)
        model = BetaTCVAE(in_channels=3, latent_dim=3, hidden_dims=[4, 512], anneal_steps=3,
                          alpha=1., beta=6., gamma=1.)
        init_params(torch, model, seed=8, scale=0.05)
        log("structure", [type(m).__name__ for m in model.modules()])
        params = {"LR": 0.005, "weight_decay": 0.0, "scheduler_gamma": 0.95, "kld_weight": 0.00025}
        optimizer = torch.optim.Adam(model.parameters(), lr=params["LR"],
                                     weight_decay=params["weight_decay"], eps=1e-4)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=params["scheduler_gamma"])
        rs = np.random.RandomState(3)
        real_img = torch.tensor(np.tanh(rs.standard_normal((4, 3, 8, 8))).astype(np.float32))
        val_img = torch.tensor(np.tanh(rs.standard_normal((4, 3, 8, 8))).astype(np.float32))
        for epoch in range(2):
            model.train()
            results = model.forward(real_img, labels=None)
            train_loss = model.loss_function(*results, M_N=params["kld_weight"],
                                             optimizer_idx=0, batch_idx=0)
            optimizer.zero_grad()
            train_loss["loss"].backward()
            optimizer.step()
            log(f"train{epoch}", {k: v for k, v in train_loss.items()})
            log(f"num_iter{epoch}", [model.num_iter, BetaTCVAE.num_iter, "num_iter" in vars(model)])
            log(f"grad_mu{epoch}", model.fc_mu.weight.grad)
            log(f"grad_final{epoch}", model.final_layer[0].weight.grad)
            log(f"bn{epoch}", [model.encoder[0][1].running_mean, model.decoder[0][1].running_var,
                               model.final_layer[1].num_batches_tracked])

            model.eval()
            with torch.no_grad():
                results = model.forward(val_img, labels=None)
                val_loss = model.loss_function(*results, M_N=1.0, optimizer_idx=0, batch_idx=0)
            log(f"val{epoch}", {k: v.item() for k, v in val_loss.items()})
            scheduler.step()
            log(f"lr{epoch}", optimizer.param_groups[0]["lr"])

        with torch.no_grad():
            recons = model.generate(val_img, labels=None)
            samples = model.sample(4, "cpu", labels=None)
        log("recons", recons)
        log("samples", samples)

    run_both(program)
