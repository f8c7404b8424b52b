"""Round-34 public programs, continued (``test_public_programs_round34.py`` has the round's notes):
aliutkus/favor's Performer attention run eagerly with torch and with tracegrad (``parity.run_both``):
FAVOR's random features from a user ``randomizer``, orthogonalised by the deprecated ``torch.qr`` in
float64 and transposed in place by ``t_()``, causal ``cumsum`` prefix sums of key-value outer
products, the non-causal path with the positive softmax kernel and the ``norm.abs() <= eps`` guard.
In a file of its own: with Deep SVDD's shapes one file would take longer than a file may.
"""
import numpy as np
import pytest
from parity import run_both, same_outcome

from tests.api.test_public_programs_round34 import _np_init

torch = pytest.importorskip("torch")


# ---- aliutkus/favor ------------------------------------------------------------------------------
def _favor_class(torch):
    """favor/favor.py at the repository's head, unchanged (its ``randomizer=torch.randn`` default
    is bound when the class is defined, so the class is built per library)."""
    nn, F = torch.nn, torch.nn.functional
    import math

    class FAVOR(nn.Module):
        """Fast Attention Via positive Orthogonal Random features"""

        def __init__(
            self,
            key_dim,
            orthonormal=True,
            causal=False,
            m=128,
            redraw=True,
            h=None,
            f=[F.relu],
            randomizer=torch.randn,
            eps=0.0,
            kernel_eps=0.001,
        ):
            super(FAVOR, self).__init__()
            self.key_dim = key_dim

            self.orthonormal = orthonormal
            self.causal = causal
            self.redraw = redraw
            self.m = m
            sqrt_m = math.sqrt(m)
            self.h = h if h is not None else lambda x: sqrt_m
            self.f = f
            self.randomizer = randomizer
            self.eps = eps
            self.kernel_eps = kernel_eps

            if orthonormal and m > key_dim:
                raise ValueError('m <= key_dim is required if orthonormal == True')

            self._features = None
            self.register_buffer('phi_scale', torch.tensor(1. / sqrt_m))

        def features(self):
            if self._features is None or self.redraw:
                self._features = self.randomizer(
                    (self.key_dim, self.m),
                    device=self.phi_scale.device,
                    dtype=self.phi_scale.dtype
                )
                if self.orthonormal:
                    self._features = torch.qr(
                        self._features.double())[0].to(self.phi_scale.dtype)
                self._features.t_()
            return self._features

        def forward(self, keys, values, queries):
            """
            keys: (batch, keys_dimension, *keys_locations)
            values: (batch, values_dimension, *keys_locations)
            queries: (batch, keys_dimension, *queries_locations)
            """
            # flattening everything
            keys_locations = keys.shape[2:]
            queries_locations = queries.shape[2:]
            keys, values, queries = (x.view(*x.shape[:2], -1)
                                     for x in (keys, values, queries))

            if self.causal and keys_locations != queries_locations:
                raise ValueError(
                    'Expected equal key and query locations with causal attention,'
                    ' got: {}, {}'.format(keys_locations, queries_locations))

            # getting to (batch, n, dim)
            keys, values, queries = (x.permute(0, 2, 1)
                                     for x in (keys, values, queries))

            # features are (m, key_dim). randomized here if necessary
            features = self.features()

            # getting the randomized features for keys and queries
            def phi(x):
                # x is (batch, n, key_dim)

                # projections are (batch, n, m)
                projections = torch.matmul(x, features.T)

                # (batch, n, r)
                return torch.cat(
                    [f(projections) for f in self.f],
                    dim=-1
                ) * self.h(x) * self.phi_scale + self.kernel_eps

            # (batch, n_context, r)
            phi_k = phi(keys)
            # (batch, n, r)
            phi_q = phi(queries)

            if self.causal:
                # outer products of keys and values: (batch, n, r, dim)
                k_v_prod = torch.matmul(
                    phi_k[:, :, :, None], values[:, :, None, :])

                out = torch.matmul(         # (batch, n, dim)
                    phi_q[:, :, None, :],   # (batch, n, 1, r)
                    k_v_prod.cumsum(dim=1)  # (batch, n, r, dim)
                ).squeeze(2)

                # normalization factors: (batch, n, 1)
                norm = torch.matmul(
                    phi_q[:, :, None, :],           # (batch, n, 1, r)
                    phi_k.cumsum(dim=1)[..., None]  # (batch, n, r, 1)
                ).squeeze(2)
            else:
                out = torch.matmul(  # (batch, n, dim)
                    phi_q,
                    torch.matmul(  # (batch, r, dim)
                        phi_k.permute(0, 2, 1), values
                    )
                )

                # normalization factors: (batch, n, 1)
                norm = torch.matmul(
                    phi_q,
                    phi_k.sum(dim=1)[..., None]  # (batch, r, 1)
                )

            # normalizing
            out = out / (norm + 2 * self.eps * (norm.abs() <= self.eps))

            # restoring the desired shape
            out = out.permute(0, 2, 1)
            out = out.reshape(*out.shape[:2], *queries_locations)
            return out

    return FAVOR


def test_favor_causal_needs_equal_locations():
    # FAVOR.forward's own ValueError for causal attention over different key/query locations
    def fn(m):
        favor = _favor_class(m)(4, m=4, causal=True)
        return favor(m.zeros(1, 4, 3), m.zeros(1, 2, 3), m.zeros(1, 4, 5))
    assert same_outcome(fn) == ("raised", "ValueError")


# The README's FAVOR in two tiny models trained 3 Adam steps each: a causal self-attention
# sequence model (orthonormal ReLU features, m = key_dim = 4, redrawn every call: numpy
# Gaussians orthogonalised by ``torch.qr`` in float64) over (batch 2, 6 steps), and a
# non-causal cross-attention over a 3x4 grid of queries and a 2x3 grid of keys with the
# positive softmax kernel (``f=[torch.exp]``, ``h(x) = exp(-|x|^2 / 2)``, Gaussian features,
# m = 6 > key_dim, ``eps=1e-3`` for the small-norm guard). The ``randomizer`` argument is the
# repository's hook for the feature draws; here it draws from a seeded numpy stream (the default,
# ``torch.randn``, from torch's generator). Features are fixed (``redraw=False``) for the second
# model, so ``features()`` keeps the first draw.
def test_favor_performer_attention():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        FAVOR = _favor_class(torch)
        rs = np.random.RandomState(7)

        def randomizer(shape, device=None, dtype=None):
            return torch.tensor(rs.standard_normal(shape), dtype=dtype, device=device)

        class CausalFavorModel(nn.Module):
            def __init__(self, dim=4, classes=3):
                super().__init__()
                self.qkv = nn.Linear(dim, 3 * dim)
                self.attn = FAVOR(dim, orthonormal=True, causal=True, m=dim, randomizer=randomizer)
                self.out = nn.Linear(dim, classes)

            def forward(self, x):                        # x: (batch, n, dim)
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q, k, v = (t.transpose(1, 2) for t in (q, k, v))
                y = self.attn(k, v, q).transpose(1, 2)   # (batch, n, dim)
                return self.out(y + x)

        class GridCrossFavor(nn.Module):
            def __init__(self, dim=4):
                super().__init__()
                self.to_q = nn.Conv2d(dim, dim, 1)
                self.to_kv = nn.Conv2d(dim, 2 * dim, 1)
                self.attn = FAVOR(dim, orthonormal=False, causal=False, m=6, redraw=False,
                                  f=[torch.exp], h=lambda x: torch.exp(-(x ** 2).sum(-1, keepdim=True) / 2),
                                  randomizer=randomizer, eps=1e-3)

            def forward(self, queries, context):         # (b, dim, 3, 4), (b, dim, 2, 3)
                k, v = self.to_kv(context).chunk(2, dim=1)
                return self.attn(k, v, self.to_q(queries))

        x = torch.tensor(rs.standard_normal((2, 6, 4)).astype(np.float32))
        y = torch.tensor(rs.randint(0, 3, (2, 6)))
        model = _np_init(torch, CausalFavorModel(), 21, scale=0.5)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        for step in range(3):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, 3), y.reshape(-1))
            loss.backward()
            log("causal step", [loss, logits, model.attn._features, model.qkv.weight.grad])
            opt.step()
        # causality: the first steps' outputs ignore later inputs (features fixed for the check)
        model.attn.redraw = False
        x2 = x.clone()
        x2[:, 4:] += 1.0
        with torch.no_grad():
            log("causal prefix", [model(x)[:, :4], model(x2)[:, :4], model(x2)[:, 4:] - model(x)[:, 4:]])

        queries = torch.tensor(rs.standard_normal((2, 4, 3, 4)).astype(np.float32))
        context = torch.tensor(rs.standard_normal((2, 4, 2, 3)).astype(np.float32))
        target = torch.tensor(rs.standard_normal((2, 4, 3, 4)).astype(np.float32))
        cross = _np_init(torch, GridCrossFavor(), 22, scale=0.5)
        opt = torch.optim.Adam(cross.parameters(), lr=0.05)
        for step in range(3):
            opt.zero_grad()
            out = cross(queries, context)
            loss = F.mse_loss(out, target)
            loss.backward()
            log("cross step", [loss, out, cross.to_kv.weight.grad, cross.to_q.bias.grad])
            opt.step()
        log("cross features", [cross.attn._features, cross.attn.phi_scale, list(cross.state_dict())])

    run_both(program)
