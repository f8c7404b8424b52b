"""A twenty-sixth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round25.py``, from repositories no earlier round used:

- johnma2006/mamba-minimal: ``model.py``, Mamba in one file (``ModelArgs`` dataclass with the
  vocabulary padded to a multiple of 8, an embedding tied to the LM head, ``RMSNorm`` through
  ``rsqrt``, ``MambaBlock``'s ``in_proj`` ``split`` into x and the gate, a depthwise causal
  ``Conv1d`` (``groups=d_inner``, ``padding=d_conv - 1``) sliced back to the sequence length,
  ``silu``, the ``x_proj`` ``split`` into delta/B/C, ``softplus``, ``A_log`` built from an integer
  ``arange`` and the Python-loop selective scan over ``einsum``-discretised ``exp(delta A)``),
  defined here; its language-model step (``cross_entropy``, SGD) runs eagerly and compiled
  against torch in ``tests/compile/test_public_patterns_round27.py``;
- dfdazac/wassdistance: ``layers.py``'s ``SinkhornDistance`` (log-domain Sinkhorn iterations
  through ``logsumexp``, marginals from ``torch.empty(...).fill_(...).squeeze()``, a data-dependent
  ``err.item() < thresh`` early stop, the transport plan and cost), batched and unbatched, and a
  few SGD steps moving one point cloud onto another through the distance's gradient;
- yenchenlin/nerf-pytorch: ``run_nerf.py``/``run_nerf_helpers.py``'s hierarchical volume
  rendering: the positional ``Embedder`` (``2.**linspace`` frequency bands, ``sin``/``cos``
  lambdas), ``NeRF`` with a skip ``cat`` and view directions, ``get_rays`` (``meshgrid`` without
  ``indexing=``, ``.t()``, ``np.newaxis`` indexing, ``expand``), ``batchify``/``run_network``,
  ``raw2outputs`` (``torch.Tensor([1e10]).expand``, ``norm``, the ``cumprod`` transmittance),
  ``sample_pdf`` (``cumsum`` CDF, ``searchsorted(right=True)``, ``gather`` from ``expand``-ed
  rows, ``torch.where``) and ``render_rays`` (stratified ``perturb``, ``sort`` of the merged
  samples, ``std(unbiased=False)``), trained with ``img2mse``/``mse2psnr`` and Adam.

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

    return {"ModelArgs": ModelArgs, "Mamba": Mamba, "RMSNorm": RMSNorm}


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


# johnma2006/mamba-minimal's training step runs against torch (eager and compiled) in
# tests/compile/test_public_patterns_round27.py::test_mamba_minimal_train_step_compiled; a second
# eager copy here would cost the suite ~12 s of cold XLA compiles for the same ops.


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


def _fan_in_init(torch, module, seed):
    """Fill every parameter from a numpy stream, uniform(+-1/sqrt(fan_in)) like torch's default
    Linear init (biases use their layer's fan-in), so torch and tracegrad start equal."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        fan_in = 1
        for _, p in module.named_parameters():
            if p.dim() > 1:
                fan_in = int(np.prod(p.shape[1:]))
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.tensor(rs.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    return module


# ---- yenchenlin/nerf-pytorch ------------------------------------------------------------------------
def _nerf_module(torch):
    """run_nerf_helpers.py's img2mse/mse2psnr, Embedder/get_embedder, NeRF, get_rays and
    sample_pdf, and run_nerf.py's batchify, run_network, raw2outputs and render_rays, unchanged
    but for docstrings, comments and the NaN-debug loop at render_rays' end (``torch`` is the
    program's module)."""
    nn = torch.nn
    F = torch.nn.functional

    img2mse = lambda x, y : torch.mean((x - y) ** 2)
    mse2psnr = lambda x : -10. * torch.log(x) / torch.log(torch.Tensor([10.]))

    class Embedder:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.create_embedding_fn()

        def create_embedding_fn(self):
            embed_fns = []
            d = self.kwargs['input_dims']
            out_dim = 0
            if self.kwargs['include_input']:
                embed_fns.append(lambda x : x)
                out_dim += d

            max_freq = self.kwargs['max_freq_log2']
            N_freqs = self.kwargs['num_freqs']

            if self.kwargs['log_sampling']:
                freq_bands = 2.**torch.linspace(0., max_freq, steps=N_freqs)
            else:
                freq_bands = torch.linspace(2.**0., 2.**max_freq, steps=N_freqs)

            for freq in freq_bands:
                for p_fn in self.kwargs['periodic_fns']:
                    embed_fns.append(lambda x, p_fn=p_fn, freq=freq : p_fn(x * freq))
                    out_dim += d

            self.embed_fns = embed_fns
            self.out_dim = out_dim

        def embed(self, inputs):
            return torch.cat([fn(inputs) for fn in self.embed_fns], -1)

    def get_embedder(multires, i=0):
        if i == -1:
            return nn.Identity(), 3

        embed_kwargs = {
                    'include_input' : True,
                    'input_dims' : 3,
                    'max_freq_log2' : multires-1,
                    'num_freqs' : multires,
                    'log_sampling' : True,
                    'periodic_fns' : [torch.sin, torch.cos],
        }

        embedder_obj = Embedder(**embed_kwargs)
        embed = lambda x, eo=embedder_obj : eo.embed(x)
        return embed, embedder_obj.out_dim

    class NeRF(nn.Module):
        def __init__(self, D=8, W=256, input_ch=3, input_ch_views=3, output_ch=4, skips=[4], use_viewdirs=False):  # noqa: B006
            super(NeRF, self).__init__()
            self.D = D
            self.W = W
            self.input_ch = input_ch
            self.input_ch_views = input_ch_views
            self.skips = skips
            self.use_viewdirs = use_viewdirs

            self.pts_linears = nn.ModuleList(
                [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W) for i in range(D-1)])

            self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W//2)])

            if use_viewdirs:
                self.feature_linear = nn.Linear(W, W)
                self.alpha_linear = nn.Linear(W, 1)
                self.rgb_linear = nn.Linear(W//2, 3)
            else:
                self.output_linear = nn.Linear(W, output_ch)

        def forward(self, x):
            input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
            h = input_pts
            for i, l in enumerate(self.pts_linears):
                h = self.pts_linears[i](h)
                h = F.relu(h)
                if i in self.skips:
                    h = torch.cat([input_pts, h], -1)

            if self.use_viewdirs:
                alpha = self.alpha_linear(h)
                feature = self.feature_linear(h)
                h = torch.cat([feature, input_views], -1)

                for i, l in enumerate(self.views_linears):
                    h = self.views_linears[i](h)
                    h = F.relu(h)

                rgb = self.rgb_linear(h)
                outputs = torch.cat([rgb, alpha], -1)
            else:
                outputs = self.output_linear(h)

            return outputs

    def get_rays(H, W, K, c2w):
        i, j = torch.meshgrid(torch.linspace(0, W-1, W), torch.linspace(0, H-1, H))  # pytorch's meshgrid has indexing='ij'
        i = i.t()
        j = j.t()
        dirs = torch.stack([(i-K[0][2])/K[0][0], -(j-K[1][2])/K[1][1], -torch.ones_like(i)], -1)
        rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3,:3], -1)
        rays_o = c2w[:3,-1].expand(rays_d.shape)
        return rays_o, rays_d

    def sample_pdf(bins, weights, N_samples, det=False, pytest=False):
        weights = weights + 1e-5 # prevent nans
        pdf = weights / torch.sum(weights, -1, keepdim=True)
        cdf = torch.cumsum(pdf, -1)
        cdf = torch.cat([torch.zeros_like(cdf[...,:1]), cdf], -1)  # (batch, len(bins))

        if det:
            u = torch.linspace(0., 1., steps=N_samples)
            u = u.expand(list(cdf.shape[:-1]) + [N_samples])
        else:
            u = torch.rand(list(cdf.shape[:-1]) + [N_samples])

        if pytest:
            np.random.seed(0)
            new_shape = list(cdf.shape[:-1]) + [N_samples]
            if det:
                u = np.linspace(0., 1., N_samples)
                u = np.broadcast_to(u, new_shape)
            else:
                u = np.random.rand(*new_shape)
            u = torch.Tensor(u)

        u = u.contiguous()
        inds = torch.searchsorted(cdf, u, right=True)
        below = torch.max(torch.zeros_like(inds-1), inds-1)
        above = torch.min((cdf.shape[-1]-1) * torch.ones_like(inds), inds)
        inds_g = torch.stack([below, above], -1)  # (batch, N_samples, 2)

        matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
        cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
        bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)

        denom = (cdf_g[...,1]-cdf_g[...,0])
        denom = torch.where(denom<1e-5, torch.ones_like(denom), denom)
        t = (u-cdf_g[...,0])/denom
        samples = bins_g[...,0] + t * (bins_g[...,1]-bins_g[...,0])

        return samples

    def batchify(fn, chunk):
        if chunk is None:
            return fn
        def ret(inputs):
            return torch.cat([fn(inputs[i:i+chunk]) for i in range(0, inputs.shape[0], chunk)], 0)
        return ret

    def run_network(inputs, viewdirs, fn, embed_fn, embeddirs_fn, netchunk=1024*64):
        inputs_flat = torch.reshape(inputs, [-1, inputs.shape[-1]])
        embedded = embed_fn(inputs_flat)

        if viewdirs is not None:
            input_dirs = viewdirs[:,None].expand(inputs.shape)
            input_dirs_flat = torch.reshape(input_dirs, [-1, input_dirs.shape[-1]])
            embedded_dirs = embeddirs_fn(input_dirs_flat)
            embedded = torch.cat([embedded, embedded_dirs], -1)

        outputs_flat = batchify(fn, netchunk)(embedded)
        outputs = torch.reshape(outputs_flat, list(inputs.shape[:-1]) + [outputs_flat.shape[-1]])
        return outputs

    def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0, white_bkgd=False, pytest=False):
        raw2alpha = lambda raw, dists, act_fn=F.relu: 1.-torch.exp(-act_fn(raw)*dists)

        dists = z_vals[...,1:] - z_vals[...,:-1]
        dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[...,:1].shape)], -1)  # [N_rays, N_samples]

        dists = dists * torch.norm(rays_d[...,None,:], dim=-1)

        rgb = torch.sigmoid(raw[...,:3])  # [N_rays, N_samples, 3]
        noise = 0.
        if raw_noise_std > 0.:
            noise = torch.randn(raw[...,3].shape) * raw_noise_std

            # Overwrite randomly sampled data if pytest
            if pytest:
                np.random.seed(0)
                noise = np.random.rand(*list(raw[...,3].shape)) * raw_noise_std
                noise = torch.Tensor(noise)

        alpha = raw2alpha(raw[...,3] + noise, dists)  # [N_rays, N_samples]
        weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1.-alpha + 1e-10], -1), -1)[:, :-1]
        rgb_map = torch.sum(weights[...,None] * rgb, -2)  # [N_rays, 3]

        depth_map = torch.sum(weights * z_vals, -1)
        disp_map = 1./torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
        acc_map = torch.sum(weights, -1)

        if white_bkgd:
            rgb_map = rgb_map + (1.-acc_map[...,None])

        return rgb_map, disp_map, acc_map, weights, depth_map

    def render_rays(ray_batch,
                    network_fn,
                    network_query_fn,
                    N_samples,
                    retraw=False,
                    lindisp=False,
                    perturb=0.,
                    N_importance=0,
                    network_fine=None,
                    white_bkgd=False,
                    raw_noise_std=0.,
                    verbose=False,
                    pytest=False):
        N_rays = ray_batch.shape[0]
        rays_o, rays_d = ray_batch[:,0:3], ray_batch[:,3:6] # [N_rays, 3] each
        viewdirs = ray_batch[:,-3:] if ray_batch.shape[-1] > 8 else None
        bounds = torch.reshape(ray_batch[...,6:8], [-1,1,2])
        near, far = bounds[...,0], bounds[...,1] # [-1,1]

        t_vals = torch.linspace(0., 1., steps=N_samples)
        if not lindisp:
            z_vals = near * (1.-t_vals) + far * (t_vals)
        else:
            z_vals = 1./(1./near * (1.-t_vals) + 1./far * (t_vals))

        z_vals = z_vals.expand([N_rays, N_samples])

        if perturb > 0.:
            # get intervals between samples
            mids = .5 * (z_vals[...,1:] + z_vals[...,:-1])
            upper = torch.cat([mids, z_vals[...,-1:]], -1)
            lower = torch.cat([z_vals[...,:1], mids], -1)
            # stratified samples in those intervals
            t_rand = torch.rand(z_vals.shape)

            # Pytest, overwrite u with numpy's fixed random numbers
            if pytest:
                np.random.seed(0)
                t_rand = np.random.rand(*list(z_vals.shape))
                t_rand = torch.Tensor(t_rand)

            z_vals = lower + (upper - lower) * t_rand

        pts = rays_o[...,None,:] + rays_d[...,None,:] * z_vals[...,:,None] # [N_rays, N_samples, 3]

        raw = network_query_fn(pts, viewdirs, network_fn)
        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d, raw_noise_std, white_bkgd, pytest=pytest)

        if N_importance > 0:
            rgb_map_0, disp_map_0, acc_map_0 = rgb_map, disp_map, acc_map

            z_vals_mid = .5 * (z_vals[...,1:] + z_vals[...,:-1])
            z_samples = sample_pdf(z_vals_mid, weights[...,1:-1], N_importance, det=(perturb==0.), pytest=pytest)
            z_samples = z_samples.detach()

            z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
            pts = rays_o[...,None,:] + rays_d[...,None,:] * z_vals[...,:,None] # [N_rays, N_samples + N_importance, 3]

            run_fn = network_fn if network_fine is None else network_fine
            raw = network_query_fn(pts, viewdirs, run_fn)

            rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d, raw_noise_std, white_bkgd, pytest=pytest)

        ret = {'rgb_map' : rgb_map, 'disp_map' : disp_map, 'acc_map' : acc_map}
        if retraw:
            ret['raw'] = raw
        if N_importance > 0:
            ret['rgb0'] = rgb_map_0
            ret['disp0'] = disp_map_0
            ret['acc0'] = acc_map_0
            ret['z_std'] = torch.std(z_samples, dim=-1, unbiased=False)  # [N_rays]

        return ret

    return {"img2mse": img2mse, "mse2psnr": mse2psnr, "get_embedder": get_embedder, "NeRF": NeRF,
            "get_rays": get_rays, "sample_pdf": sample_pdf, "run_network": run_network,
            "render_rays": render_rays}


# yenchenlin/nerf-pytorch run_nerf.py / run_nerf_helpers.py: create_nerf's NeRF (use_viewdirs,
# D 2, W 8, skips [0], multires 2 / multires_views 1; no separate fine network, so render_rays'
# fine pass reuses it, as it does when network_fine is None) and network_query_fn with netchunk 6
# (batchify really chunks, into equal chunks), rays from get_rays on a 2x3 image (the meshgrid
# without indexing=, as written), the ray batch render() builds (normalised viewdirs, near/far
# columns) and render_rays with perturb, raw_noise_std and N_importance on and pytest=True (the
# repository's own switch that replaces the torch.rand/randn draws with numpy's seed-0 draws), then
# train()'s loss (img2mse on the fine and coarse maps, mse2psnr) and Adam with its lr decay;
# 2 steps (the second reuses every shape of the first).
def test_nerf_pytorch_hierarchical_volume_rendering():
    def program(torch, log):
        m = _nerf_module(torch)
        embed_fn, input_ch = m["get_embedder"](2, 0)
        embeddirs_fn, input_ch_views = m["get_embedder"](1, 0)
        log("channels", [input_ch, input_ch_views])
        model = _fan_in_init(torch, m["NeRF"](D=2, W=8, input_ch=input_ch, output_ch=5, skips=[0],
                                              input_ch_views=input_ch_views, use_viewdirs=True), 1)
        grad_vars = list(model.parameters())
        network_query_fn = lambda inputs, viewdirs, network_fn : m["run_network"](
            inputs, viewdirs, network_fn, embed_fn=embed_fn, embeddirs_fn=embeddirs_fn, netchunk=6)
        lrate, lrate_decay = 5e-3, 1
        optimizer = torch.optim.Adam(params=grad_vars, lr=lrate, betas=(0.9, 0.999))

        H, W, focal = 2, 3, 2.0
        K = np.array([[focal, 0, 0.5*W], [0, focal, 0.5*H], [0, 0, 1]])
        c2w = torch.tensor(np.array([[1, 0, 0, 0.1], [0, 1, 0, -0.2], [0, 0, 1, 2.0]], dtype=np.float32))
        rays_o, rays_d = m["get_rays"](H, W, K, c2w)
        log("rays", [rays_o, rays_d])
        viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        viewdirs = torch.reshape(viewdirs, [-1, 3]).float()
        rays_o = torch.reshape(rays_o, [-1, 3]).float()
        rays_d = torch.reshape(rays_d, [-1, 3]).float()
        near, far = 1. * torch.ones_like(rays_d[..., :1]), 3. * torch.ones_like(rays_d[..., :1])
        rays = torch.cat([rays_o, rays_d, near, far, viewdirs], -1)
        target_s = torch.tensor(np.random.RandomState(4).uniform(0, 1, (H * W, 3)).astype(np.float32))

        for global_step in range(2):
            extras = m["render_rays"](rays, model, network_query_fn, N_samples=4, retraw=True,
                                      perturb=1., N_importance=3, network_fine=None,
                                      raw_noise_std=1., pytest=True)
            rgb = extras['rgb_map']
            optimizer.zero_grad()
            img_loss = m["img2mse"](rgb, target_s)
            loss = img_loss
            psnr = m["mse2psnr"](img_loss)
            if 'rgb0' in extras:
                img_loss0 = m["img2mse"](extras['rgb0'], target_s)
                loss = loss + img_loss0
            loss.backward()
            optimizer.step()
            decay_rate = 0.1
            decay_steps = lrate_decay * 1000
            new_lrate = lrate * (decay_rate ** ((global_step + 1) / decay_steps))
            for param_group in optimizer.param_groups:
                param_group['lr'] = new_lrate
            for k in ("rgb_map", "disp_map", "acc_map", "raw", "rgb0", "z_std"):
                log(f"{k}{global_step}", extras[k])
            log(f"loss{global_step}", [loss, psnr])
            log(f"grads{global_step}", [p.grad for p in grad_vars])
        log("params", grad_vars)

    # some embedding columns get gradients of ~1e-7 (float32 rounding between the libraries is
    # ~1e-3 of that), which Adam's first steps scale up to lr-sized updates: 1e-4 relative on
    # the parameters
    run_both(program, rtol=2e-4)
