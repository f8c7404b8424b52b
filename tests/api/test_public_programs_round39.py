"""A thirty-ninth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from a repository no
earlier round used, tonyduan/mixture-density-network (mixture density networks, Bishop 1994):

- ``mdn/models.py`` (at 68b08b2): ``MixtureDensityNetwork`` of a ``CategoricalNetwork`` returning
  ``torch.distributions.OneHotCategorical(logits=...)`` and a ``MixtureDiagNormalNetwork``
  returning ``torch.distributions.Normal`` built with ``torch.split``, ``Tensor.split``,
  ``torch.stack`` and ``transpose``; ``loss`` through ``Normal.log_prob`` of
  ``y.unsqueeze(1).expand_as(normal.loc)``, ``torch.log(pi.probs)`` and ``torch.logsumexp``;
  ``sample`` through ``OneHotCategorical.sample()`` and ``Normal.sample()``. The training loop is
  the one of ``examples/ex_1d.py`` (Adam, lr 0.005, the mean loss, a log every few iterations),
  on that example's ``gen_data`` curve (``7 sin(5y) + 0.5y`` plus noise).
- ``src/blocks.py`` (at 5aa454d): the later ``MixtureDensityNetwork`` with its four ``NoiseType``
  variants (diagonal, isotropic with ``repeat``, isotropic across clusters, fixed with
  ``torch.full_like``), the hand-written loss (``torch.einsum("bij,bik->bi", z, z)``,
  ``torch.log_softmax``, ``logsumexp``) and ``sample`` (``torch.cumsum`` of the mixture weights,
  ``torch.searchsorted``, ``torch.gather`` of ``randn_like(mu) * sigma + mu``).

Changes, the same on both sides: sizes are tiny (32 points, hidden width 8, 3 components, a few
dozen Adam steps), parameters are overwritten from numpy after construction, the data come from a
seeded numpy stream, the argparse/logging/matplotlib parts are left out (the log line is printed),
and the random draws of ``blocks.py``'s ``sample`` (``torch.rand``, ``torch.randn_like``) come from
``parity.SeededTorch``. The distributions' own ``sample()`` draws from each library's generator,
so those samples are compared by shape, dtype and structure (one-hot rows) only.
"""
from enum import Enum, auto

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


def _gen_data(torch, n=32, seed=0):
    # examples/ex_1d.py's gen_data with a seeded numpy stream
    rs = np.random.RandomState(seed)
    y = np.linspace(-1, 1, n)
    x = 7 * np.sin(5 * y) + 0.5 * y + 0.5 * rs.randn(*y.shape)
    x, y = x[:, np.newaxis], y[:, np.newaxis]
    return torch.Tensor(x.astype(np.float32)), torch.Tensor(y.astype(np.float32))


def _models_py(torch):
    nn = torch.nn
    from_dist = torch.distributions
    Normal, OneHotCategorical = from_dist.Normal, from_dist.OneHotCategorical

    class MixtureDensityNetwork(nn.Module):
        def __init__(self, dim_in, dim_out, n_components):
            super().__init__()
            self.pi_network = CategoricalNetwork(dim_in, n_components)
            self.normal_network = MixtureDiagNormalNetwork(dim_in, dim_out,
                                                           n_components)

        def forward(self, x):
            return self.pi_network(x), self.normal_network(x)

        def loss(self, x, y):
            pi, normal = self.forward(x)
            loglik = normal.log_prob(y.unsqueeze(1).expand_as(normal.loc))
            loglik = torch.sum(loglik, dim=2)
            loss = -torch.logsumexp(torch.log(pi.probs) + loglik, dim=1)
            return loss

        def sample(self, x):
            pi, normal = self.forward(x)
            samples = torch.sum(pi.sample().unsqueeze(2) * normal.sample(), dim=1)
            return samples

    class MixtureDiagNormalNetwork(nn.Module):

        def __init__(self, in_dim, out_dim, n_components, hidden_dim=None):
            super().__init__()
            self.n_components = n_components
            if hidden_dim is None:
                hidden_dim = in_dim
            self.network = nn.Sequential(
                nn.Linear(in_dim, hidden_dim),
                nn.ELU(),
                nn.Linear(hidden_dim, 2 * out_dim * n_components),
            )

        def forward(self, x):
            params = self.network(x)
            mean, sd = torch.split(params, params.shape[1] // 2, dim=1)
            mean = torch.stack(mean.split(mean.shape[1] // self.n_components, 1))
            sd = torch.stack(sd.split(sd.shape[1] // self.n_components, 1))
            return Normal(mean.transpose(0, 1), torch.exp(sd).transpose(0, 1))

    class CategoricalNetwork(nn.Module):

        def __init__(self, in_dim, out_dim, hidden_dim=None):
            super().__init__()
            if hidden_dim is None:
                hidden_dim = in_dim
            self.network = nn.Sequential(
                nn.Linear(in_dim, hidden_dim),
                nn.ELU(),
                nn.Linear(hidden_dim, out_dim)
            )

        def forward(self, x):
            params = self.network(x)
            return OneHotCategorical(logits=params)

    return MixtureDensityNetwork


def _program_models(mod, log):
    torch = mod
    optim = torch.optim
    MixtureDensityNetwork = _models_py(torch)

    x, y = _gen_data(torch)
    model = MixtureDensityNetwork(1, 1, 3)
    init_params(torch, model, 1, scale=0.5)
    optimizer = optim.Adam(model.parameters(), lr=0.005)

    for i in range(30):
        optimizer.zero_grad()
        loss = model.loss(x, y).mean()
        loss.backward()
        optimizer.step()
        if i % 5 == 0:
            print(f"Iter: {i}\t" + f"Loss: {loss.data:.2f}")
        log(f"loss{i}", loss)
    log("grad_fn", type(loss.grad_fn).__name__)
    for name, p in model.named_parameters():
        log("param " + name, p)
        log("grad " + name, p.grad)

    # the two distributions the forward returns, observed through their public API
    pi, normal = model(x[:5])
    log("pi.logits", pi.logits)
    log("pi.probs", pi.probs)
    log("pi.batch_shape", tuple(pi.batch_shape))
    log("pi.event_shape", tuple(pi.event_shape))
    log("pi.entropy", pi.entropy())
    log("pi.mean", pi.mean)
    log("pi.log_prob(onehot)", pi.log_prob(torch.eye(3)[torch.tensor([0, 1, 2, 1, 0])]))
    log("normal.loc", normal.loc)
    log("normal.scale", normal.scale)
    log("normal.batch_shape", tuple(normal.batch_shape))
    log("normal.event_shape", tuple(normal.event_shape))
    log("normal.stddev", normal.stddev)
    log("normal.variance", normal.variance)
    log("normal.entropy", normal.entropy())
    log("normal.cdf", normal.cdf(torch.zeros(5, 3, 1)))
    log("normal.icdf", normal.icdf(torch.full((5, 3, 1), 0.25)))
    h = normal.entropy().sum()
    h.backward()
    log("entropy grad", model.normal_network.network[2].bias.grad)

    # sample(): random draws differ between the libraries; compare their structure
    one_hot = pi.sample()
    log("onehot dtype/shape", (str(one_hot.dtype).split(".")[-1], tuple(one_hot.shape)))
    log("onehot rows", one_hot.sum(-1))
    log("onehot binary", bool(((one_hot == 0) | (one_hot == 1)).all()))
    log("onehot requires_grad", one_hot.requires_grad)
    s = model.sample(x[:4])
    log("sample shape", (str(s.dtype).split(".")[-1], tuple(s.shape), s.requires_grad))
    r = normal.rsample()
    log("rsample", (tuple(r.shape), r.requires_grad, type(r.grad_fn).__name__ if r.grad_fn else None))
    log("sample_n shape", tuple(normal.sample((2,)).shape))


def test_mdn_models_distributions_train():
    run_both(_program_models)


class NoiseType(Enum):
    DIAGONAL = auto()
    ISOTROPIC = auto()
    ISOTROPIC_ACROSS_CLUSTERS = auto()
    FIXED = auto()


def _blocks_py(torch):
    nn = torch.nn

    class MixtureDensityNetwork(nn.Module):
        def __init__(self, dim_in, dim_out, n_components, hidden_dim, noise_type=NoiseType.DIAGONAL, fixed_noise_level=None):
            super().__init__()
            assert (fixed_noise_level is not None) == (noise_type is NoiseType.FIXED)
            num_sigma_channels = {
                NoiseType.DIAGONAL: dim_out * n_components,
                NoiseType.ISOTROPIC: n_components,
                NoiseType.ISOTROPIC_ACROSS_CLUSTERS: 1,
                NoiseType.FIXED: 0,
            }[noise_type]
            self.dim_in, self.dim_out, self.n_components = dim_in, dim_out, n_components
            self.noise_type, self.fixed_noise_level = noise_type, fixed_noise_level
            self.pi_network = nn.Sequential(
                nn.Linear(dim_in, hidden_dim),
                nn.ReLU(),
                nn.Linear(hidden_dim, hidden_dim),
                nn.ReLU(),
                nn.Linear(hidden_dim, n_components),
            )
            self.normal_network = nn.Sequential(
                nn.Linear(dim_in, hidden_dim),
                nn.ReLU(),
                nn.Linear(hidden_dim, hidden_dim),
                nn.ReLU(),
                nn.Linear(hidden_dim, dim_out * n_components + num_sigma_channels)
            )

        def forward(self, x, eps=1e-6):
            log_pi = torch.log_softmax(self.pi_network(x), dim=-1)
            normal_params = self.normal_network(x)
            mu = normal_params[..., :self.dim_out * self.n_components]
            sigma = normal_params[..., self.dim_out * self.n_components:]
            if self.noise_type is NoiseType.DIAGONAL:
                sigma = torch.exp(sigma + eps)
            if self.noise_type is NoiseType.ISOTROPIC:
                sigma = torch.exp(sigma + eps).repeat(1, self.dim_out)
            if self.noise_type is NoiseType.ISOTROPIC_ACROSS_CLUSTERS:
                sigma = torch.exp(sigma + eps).repeat(1, self.n_components * self.dim_out)
            if self.noise_type is NoiseType.FIXED:
                sigma = torch.full_like(mu, fill_value=self.fixed_noise_level)
            mu = mu.reshape(-1, self.n_components, self.dim_out)
            sigma = sigma.reshape(-1, self.n_components, self.dim_out)
            return log_pi, mu, sigma

        def loss(self, x, y):
            log_pi, mu, sigma = self.forward(x)
            z_score = (y.unsqueeze(1) - mu) / sigma
            normal_loglik = (
                -0.5 * torch.einsum("bij,bik->bi", z_score, z_score)
                -torch.sum(torch.log(sigma), dim=-1)
            )
            loglik = torch.logsumexp(log_pi + normal_loglik, dim=-1)
            return -loglik

        def sample(self, x):
            log_pi, mu, sigma = self.forward(x)
            cum_pi = torch.cumsum(torch.exp(log_pi), dim=-1)
            rvs = torch.rand(len(x), 1).to(x)
            rand_pi = torch.searchsorted(cum_pi, rvs)
            rand_normal = torch.randn_like(mu) * sigma + mu
            samples = torch.gather(rand_normal, index=rand_pi.unsqueeze(-1), dim=1).squeeze(dim=1)
            return samples

    return MixtureDensityNetwork


@pytest.mark.parametrize("noise", list(NoiseType), ids=lambda n: n.name.lower())
def test_mdn_blocks_noise_types_train_and_sample(noise):
    def program(mod, log):
        torch = SeededTorch(mod, 3)
        MixtureDensityNetwork = _blocks_py(torch)
        rs = np.random.RandomState(2)
        # a 2-d response: the curve and its mirror, so components matter
        x = rs.uniform(-1, 1, (24, 1)).astype(np.float32)
        y = np.concatenate([np.sin(3 * x), np.cos(2 * x)], 1) * np.where(rs.rand(24, 1) < 0.5, 1, -1)
        x, y = torch.tensor(x), torch.tensor(y.astype(np.float32))
        fixed = 0.5 if noise is NoiseType.FIXED else None
        model = MixtureDensityNetwork(1, 2, 3, 8, noise_type=noise, fixed_noise_level=fixed)
        init_params(torch, model, 4, scale=0.5)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for i in range(12):
            optimizer.zero_grad()
            loss = model.loss(x, y).mean()
            loss.backward()
            optimizer.step()
            log(f"loss{i}", loss)
        log("grad_fn", type(loss.grad_fn).__name__)
        for name, p in model.named_parameters():
            log("grad " + name, p.grad)
        log_pi, mu, sigma = model(x[:6])
        log("forward", (log_pi, mu, sigma))
        with torch.no_grad():
            samples = model.sample(x[:10])
        log("samples", samples)
        print("samples", tuple(samples.shape), samples.dtype)

    run_both(program)
