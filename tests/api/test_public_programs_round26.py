"""A twenty-sixth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round25.py``, from repositories no earlier round used:

- johnma2006/mamba-minimal: ``model.py``, Mamba in one file (``ModelArgs`` dataclass with the
  vocabulary padded to a multiple of 8, an embedding tied to the LM head, ``RMSNorm`` through
  ``rsqrt``, ``MambaBlock``'s ``in_proj`` ``split`` into x and the gate, a depthwise causal
  ``Conv1d`` (``groups=d_inner``, ``padding=d_conv - 1``) sliced back to the sequence length,
  ``silu``, the ``x_proj`` ``split`` into delta/B/C, ``softplus``, ``A_log`` built from an integer
  ``arange`` and the Python-loop selective scan over ``einsum``-discretised ``exp(delta A)``),
  trained as a language model with ``cross_entropy`` and AdamW;
- dfdazac/wassdistance: ``layers.py``'s ``SinkhornDistance`` (log-domain Sinkhorn iterations
  through ``logsumexp``, marginals from ``torch.empty(...).fill_(...).squeeze()``, a data-dependent
  ``err.item() < thresh`` early stop, the transport plan and cost), batched and unbatched, and a
  few SGD steps moving one point cloud onto another through the distance's gradient.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import math
import re
from dataclasses import dataclass
from typing import Union

import numpy as np
import pytest

from parity import printer, run_both

torch = pytest.importorskip("torch")


def _einops(torch):
    """Stand-ins for the three einops functions mamba-minimal calls (einops is not installed
    here), for the patterns it uses: ``rearrange`` (axis permutations and unit axes),
    ``repeat`` (new named axes given as keywords) and ``einsum`` (named axes), each through the
    library's own ``permute``/``reshape``/``expand``/``einsum``."""
    def parse(side):
        return side.split()

    def rearrange(t, pattern):
        lhs, rhs = (parse(s) for s in pattern.split("->"))
        named = [a for a in rhs if a != "1"]
        t = t.permute(*[lhs.index(a) for a in named])
        shape = [1 if a == "1" else t.shape[named.index(a)] for a in rhs]
        return t.reshape(*shape)

    def repeat(t, pattern, **sizes):
        lhs, rhs = (parse(s) for s in pattern.split("->"))
        for i, a in enumerate(rhs):
            if a not in lhs:
                t = t.unsqueeze(i)
        shape = [sizes[a] if a not in lhs else -1 for a in rhs]
        return t.expand(*shape)

    def einsum(*args):
        *tensors, pattern = args
        names = {}
        letters = iter("abcdefghijklmnopqrstuvwxyz")

        def spec(side):
            return "".join(names.setdefault(a, next(letters)) for a in side.split())
        lhs, rhs = pattern.split("->")
        eq = ",".join(spec(s) for s in lhs.split(",")) + "->" + spec(rhs)
        return torch.einsum(eq, *tensors)

    return rearrange, repeat, einsum


# ---- johnma2006/mamba-minimal ----------------------------------------------------------------------
def _mamba_module(torch):
    """model.py's ModelArgs, Mamba, ResidualBlock, MambaBlock and RMSNorm, unchanged but for
    docstrings and ``from_pretrained`` (downloads); ``torch`` is the program's module and the
    einops imports are ``_einops``' stand-ins."""
    nn = torch.nn
    F = torch.nn.functional
    rearrange, repeat, einsum = _einops(torch)

    @dataclass
    class ModelArgs:
        d_model: int
        n_layer: int
        vocab_size: int
        d_state: int = 16
        expand: int = 2
        dt_rank: Union[int, str] = 'auto'
        d_conv: int = 4
        pad_vocab_size_multiple: int = 8
        conv_bias: bool = True
        bias: bool = False

        def __post_init__(self):
            self.d_inner = int(self.expand * self.d_model)

            if self.dt_rank == 'auto':
                self.dt_rank = math.ceil(self.d_model / 16)

            if self.vocab_size % self.pad_vocab_size_multiple != 0:
                self.vocab_size += (self.pad_vocab_size_multiple
                                    - self.vocab_size % self.pad_vocab_size_multiple)

    class Mamba(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args

            self.embedding = nn.Embedding(args.vocab_size, args.d_model)
            self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
            self.norm_f = RMSNorm(args.d_model)

            self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
            self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

        def forward(self, input_ids):
            x = self.embedding(input_ids)

            for layer in self.layers:
                x = layer(x)

            x = self.norm_f(x)
            logits = self.lm_head(x)

            return logits

    class ResidualBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.mixer = MambaBlock(args)
            self.norm = RMSNorm(args.d_model)

        def forward(self, x):
            output = self.mixer(self.norm(x)) + x

            return output

    class MambaBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args

            self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)

            self.conv1d = nn.Conv1d(
                in_channels=args.d_inner,
                out_channels=args.d_inner,
                bias=args.conv_bias,
                kernel_size=args.d_conv,
                groups=args.d_inner,
                padding=args.d_conv - 1,
            )

            # x_proj takes in `x` and outputs the input-specific Δ, B, C
            self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)

            # dt_proj projects Δ from dt_rank to d_in
            self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)

            A = repeat(torch.arange(1, args.d_state + 1), 'n -> d n', d=args.d_inner)
            self.A_log = nn.Parameter(torch.log(A))
            self.D = nn.Parameter(torch.ones(args.d_inner))
            self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

        def forward(self, x):
            (b, l, d) = x.shape

            x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
            x_and_res = rearrange(x_and_res, 'b l x -> b x l')
            (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=1)

            x = self.conv1d(x)[:, :, :l]
            x = F.silu(x)

            y = self.ssm(x)

            y = y * F.silu(res)

            output = self.out_proj(rearrange(y, 'b d_model l -> b l d_model'))

            return output

        def ssm(self, x):
            (d_in, n) = self.A_log.shape

            A = -torch.exp(self.A_log.float())  # shape (d_in, n)
            D = self.D.float()

            x_dbl = rearrange(x, 'b d l -> b l d')
            x_dbl = self.x_proj(x_dbl)  # (b, l, dt_rank + 2*n)

            (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
            delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)

            y = self.selective_scan(x, delta, A, B, C, D)

            return y

        def selective_scan(self, u, delta, A, B, C, D):
            (b, d_in, l) = u.shape
            n = A.shape[1]

            deltaA = torch.exp(einsum(delta, A, 'b l d_in, d_in n -> b d_in l n'))
            deltaB_u = einsum(delta, B, u, 'b l d_in, b l n, b d_in l -> b d_in l n')

            x = torch.zeros((b, d_in, n))
            ys = []
            for i in range(l):
                x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
                y = einsum(x, C[:, i, :], 'b d_in n, b n -> b d_in')
                ys.append(y)
            y = torch.stack(ys, dim=2)  # (b d_in l)

            if D is not None:
                y = y + u * rearrange(D, 'd_in -> d_in 1')

            return y

    class RMSNorm(nn.Module):
        def __init__(self,
                     d_model: int,
                     eps: float = 1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(d_model))

        def forward(self, x):
            output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

            return output

    return dict(ModelArgs=ModelArgs, Mamba=Mamba, RMSNorm=RMSNorm)


def _mamba_init(torch, model, seed):
    """Fill the linear/conv/embedding weights from a numpy stream (torch's default init draws
    from its generator), keeping the program's own ``A_log``, ``D`` and RMSNorm initialisation."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if re.search(r"(A_log|\.D|norm(_f)?\.weight)$", name):
                continue
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else 4
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.tensor(rs.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    return model


# johnma2006/mamba-minimal model.py. d_model 8, 2 layers, vocab 11 (padded to 16 by
# __post_init__), d_state 4 (d_inner 16, dt_rank 'auto' -> 1, d_conv 4); a batch of 2 sequences of
# 5 tokens, next-token cross_entropy on the logits, 2 AdamW steps (weight decay on the tied
# embedding counted once). The einops calls go through ``_einops``' stand-ins.
def test_mamba_minimal_selective_scan_lm():
    def program(torch, log):
        m = _mamba_module(torch)
        F = torch.nn.functional
        args = m["ModelArgs"](d_model=8, n_layer=2, vocab_size=11, d_state=4)
        log("args", [args.vocab_size, args.d_inner, args.dt_rank])
        model = _mamba_init(torch, m["Mamba"](args), seed=3)
        names = [n for n, _ in model.named_parameters()]
        log("names", names)
        log("tied", model.lm_head.weight is model.embedding.weight)
        blk = model.layers[0].mixer
        log("A_log", blk.A_log)
        log("conv", [blk.conv1d.weight.shape, blk.conv1d.groups, blk.conv1d.padding])
        tokens = torch.tensor(np.random.RandomState(5).randint(0, 11, (2, 6)))
        inp, tgt = tokens[:, :-1], tokens[:, 1:]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        for step in range(2):
            logits = model(inp)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
            opt.zero_grad()
            loss.backward()
            log(f"loss{step}", loss)
            log(f"logits{step}", logits)
            for n, p in model.named_parameters():
                log(f"grad{step}.{n}", p.grad)
            opt.step()
        for n, p in model.named_parameters():
            log(f"param.{n}", p)
        with torch.no_grad():
            # the scan is causal: changing the last token changes only the last position's logits
            a = model(inp)
            changed = inp.clone()
            changed[:, -1] = (changed[:, -1] + 1) % 11
            b = model(changed)
        log("causal", bool(torch.allclose(a[:, :-1], b[:, :-1])))
        log("last_differs", bool((a[:, -1] - b[:, -1]).abs().max() > 0))

    run_both(program)


# ---- dfdazac/wassdistance -------------------------------------------------------------------------
def _sinkhorn_module(torch):
    """layers.py's SinkhornDistance, unchanged but for its docstring (``torch`` is the program's
    module)."""
    nn = torch.nn

    class SinkhornDistance(nn.Module):
        def __init__(self, eps, max_iter, reduction='none'):
            super(SinkhornDistance, self).__init__()
            self.eps = eps
            self.max_iter = max_iter
            self.reduction = reduction

        def forward(self, x, y):
            # The Sinkhorn algorithm takes as input three variables :
            C = self._cost_matrix(x, y)  # Wasserstein cost function
            x_points = x.shape[-2]
            y_points = y.shape[-2]
            if x.dim() == 2:
                batch_size = 1
            else:
                batch_size = x.shape[0]

            # both marginals are fixed with equal weights
            mu = torch.empty(batch_size, x_points, dtype=x.dtype, device=x.device,
                             requires_grad=False).fill_(1.0 / x_points).squeeze()
            nu = torch.empty(batch_size, y_points, dtype=x.dtype, device=x.device,
                             requires_grad=False).fill_(1.0 / y_points).squeeze()

            u = torch.zeros_like(mu)
            v = torch.zeros_like(nu)
            # To check if algorithm terminates because of threshold
            # or max iterations reached
            actual_nits = 0
            # Stopping criterion
            thresh = 1e-1

            # Sinkhorn iterations
            for i in range(self.max_iter):
                u1 = u  # useful to check the update
                u = self.eps * (torch.log(mu+1e-8) - torch.logsumexp(self.M(C, u, v), dim=-1)) + u
                v = self.eps * (torch.log(nu+1e-8) - torch.logsumexp(self.M(C, u, v).transpose(-2, -1), dim=-1)) + v
                err = (u - u1).abs().sum(-1).mean()

                actual_nits += 1
                if err.item() < thresh:
                    break

            U, V = u, v
            # Transport plan pi = diag(a)*K*diag(b)
            pi = torch.exp(self.M(C, U, V))
            # Sinkhorn distance
            cost = torch.sum(pi * C, dim=(-2, -1))

            if self.reduction == 'mean':
                cost = cost.mean()
            elif self.reduction == 'sum':
                cost = cost.sum()

            return cost, pi, C

        def M(self, C, u, v):
            "Modified cost for logarithmic updates"
            "$M_{ij} = (-c_{ij} + u_i + v_j) / \\epsilon$"
            return (-C + u.unsqueeze(-1) + v.unsqueeze(-2)) / self.eps

        @staticmethod
        def _cost_matrix(x, y, p=2):
            "Returns the matrix of $|x_i-y_j|^p$."
            x_col = x.unsqueeze(-2)
            y_lin = y.unsqueeze(-3)
            C = torch.sum((torch.abs(x_col - y_lin)) ** p, -1)
            return C

        @staticmethod
        def ave(u, u1, tau):
            "Barycenter subroutine, used by kinetic acceleration through extrapolation."
            return tau * u + (1 - tau) * u1

    return SinkhornDistance


# dfdazac/wassdistance layers.py, as its sinkhorn.ipynb uses it: two point clouds (5 and 4
# points in 2-D) unbatched with reduction=None, then a batch of 2 with reduction='mean' whose
# gradient moves the first cloud (3 SGD steps). eps 0.1, max_iter 100 as in the notebook; the
# early stop (``err.item() < 1e-1``) decides the iteration count in Python.
def test_wassdistance_sinkhorn_log_domain():
    def program(torch, log):
        print = printer(log)
        SinkhornDistance = _sinkhorn_module(torch)
        rs = np.random.RandomState(11)
        a = torch.tensor(rs.uniform(0, 1, (5, 2)).astype(np.float32))
        b = torch.tensor((rs.uniform(0, 1, (4, 2)) + [1.0, 0.0]).astype(np.float32))
        sinkhorn = SinkhornDistance(eps=0.1, max_iter=100, reduction=None)
        dist, P, C = sinkhorn(a, b)
        print("Sinkhorn distance: {:.3f}".format(dist.item()))
        log("dist", dist)
        log("P", P)
        log("C", C)
        log("marginals", [P.sum(0), P.sum(1)])

        x = torch.tensor(rs.uniform(0, 1, (2, 5, 2)).astype(np.float32), requires_grad=True)
        y = torch.tensor(rs.uniform(0.5, 1.5, (2, 5, 2)).astype(np.float32))
        batched = SinkhornDistance(eps=0.1, max_iter=100, reduction='mean')
        opt = torch.optim.SGD([x], lr=0.5)
        for step in range(3):
            cost, pi, C = batched(x, y)
            opt.zero_grad()
            cost.backward()
            log(f"cost{step}", cost)
            log(f"pi{step}", pi)
            log(f"grad{step}", x.grad)
            opt.step()
        log("x", x)

    run_both(program)
