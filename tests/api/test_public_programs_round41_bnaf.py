"""Round 41's second program, run eagerly with torch and with tracegrad (``parity.run_both``:
every logged value and everything printed must agree), from a repository no earlier round used,
kamenbliznashki/normalizing_flows, ``bnaf.py`` at 97a73a0 (last changed in 71e630c; Block Neural
Autoregressive Flow, De Cao et al. 2019):

- ``MaskedLinear``: a block-lower-triangular weight initialised block by block with
  ``nn.init.kaiming_uniform_`` on slices (views) of a zeros tensor, block-diagonal and
  off-diagonal masks written through slices and registered as buffers, ``v = weight.exp() *
  mask_d + weight * mask_o``, weight normalisation with ``v.norm(p=2, dim=1, keepdim=True)`` and a
  ``logg`` parameter, ``F.linear``, and the log-determinant blocks picked with a **uint8** mask
  (``logdet[self.mask_d.byte()]``: torch's deprecation ``UserWarning``, kept), ``view`` and
  ``expand`` to ``(B, data_dim, out, in)``, chained through ``torch.logsumexp(sum_logdets
  .transpose(2, 3) + logdet, dim=-1, keepdim=True)``; ``extra_repr`` in the model's printout.
- ``Tanh`` (``-2 * (x - log 2 + F.softplus(-2 * x))`` added ``view_as`` the running sum),
  ``FlowSequential`` (an ``nn.Sequential`` subclass threading two values), ``BNAF`` (buffers for
  the base distribution's parameters and a ``D.Normal`` property).
- ``potential_fn`` (the u1-u4 energies: ``torch.norm(z, p=2, dim=1)``, exp/log mixtures, sin,
  sigmoid), ``sample_2d_data`` (8gaussians, 2spirals, checkerboard with ``floor() % 2``, rings with
  ``linspace(...)[:-1]`` and ``torch.normal(mean=, std=)``), ``compute_kl_qp_loss`` (energy
  matching from base samples, ``base_dist.log_prob``) and ``compute_kl_pq_loss`` (density
  estimation).
- ``train_flow`` (Adam, ``ReduceLROnPlateau.step(loss)`` on a tensor, checkpoints of the model,
  optimizer and scheduler ``state_dict``s through ``torch.save``), the ``__main__`` block
  (restoring both checkpoints with ``torch.load``/``load_state_dict``, the printed model in the
  config file, ``sum(p.numel() ...)``), and ``plot`` with its helpers (``@torch.no_grad()``,
  ``setup_grid``'s ``torch.meshgrid((x, x))`` without ``indexing``, batched ``split``/``cat`` of
  the flow over the grid, ``exp`` of summed log densities).

Changes, the same on both sides: ``ReduceLROnPlateau(..., verbose=True)`` raises ``TypeError`` in
torch 2.13 (the argument is gone), which is logged, then the scheduler is made without
``verbose``; the random draws (``torch.randn``/``rand``/``randint``/``normal`` in
``sample_2d_data`` and ``D.Normal.sample`` of the base distribution) come from one seeded numpy
stream (``parity.SeededTorch`` plus ``randint``/``normal``); ``matplotlib`` is a recording stand-in
whose axes log what ``pcolormesh``/``hist2d`` receive, ``tqdm`` a stand-in that prints its
postfix; ``plot``'s grid has 6 points a side instead of 1000; sizes are tiny (hidden width 4,
one hidden layer, batches of 8, a few steps, ``log_interval`` 2, ``lr_patience`` 1); parameters
are overwritten from numpy after construction; the output folder is a temporary directory.
"""
import argparse
import math
import os
import pprint
import re
import tempfile
import time
import warnings
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


class _SeededTorch(SeededTorch):
    """``parity.SeededTorch`` with the two other draws ``sample_2d_data`` makes."""

    def randint(self, *args, size=None, dtype=None):
        # randint(high, size=...), randint(low, high, size) and randint(low, high, size=...)
        if size is None:
            args, size = args[:-1], args[-1]
        low, high = (0, args[0]) if len(args) == 1 else args
        out = self._mod.tensor(self._rs.randint(low, high, size))
        return out if dtype is None else out.to(dtype)

    def normal(self, mean, std):
        return mean + std * self.randn(*mean.shape)


class _Recorder:
    """A stand-in for ``matplotlib.pyplot`` whose axes log what they are asked to draw."""

    def __init__(self, log):
        self.log = log
        self.cm = SimpleNamespace(jet=lambda v: (0.0, 0.0, v, 1.0))
        self._fig = None

    def subplots(self, nrows, ncols, figsize=None, subplot_kw=None):
        self._fig = SimpleNamespace(axes=[_Ax(self.log, i) for i in range(ncols)])
        return self._fig, self._fig.axes

    def gcf(self):
        return self._fig

    def tight_layout(self):
        pass

    def savefig(self, path):
        self.log("savefig", os.path.basename(path))

    def close(self):
        self._fig = None


class _Ax:
    def __init__(self, log, i):
        self.log, self.i = log, i

    def pcolormesh(self, *arrays, cmap=None):
        for j, a in enumerate(arrays):
            self.log(f"ax{self.i} pcolormesh {j}", a)

    def hist2d(self, x, y, range=None, bins=None, cmap=None):
        self.log(f"ax{self.i} hist2d", [x, y, range, bins])

    def set_title(self, title):
        self.log(f"ax{self.i} title", title)

    def set_facecolor(self, c):
        pass

    def set_xlim(self, *a):
        pass

    def set_ylim(self, *a):
        pass

    def get_xaxis(self):
        return SimpleNamespace(set_visible=lambda v: None)

    def get_yaxis(self):
        return SimpleNamespace(set_visible=lambda v: None)

    def invert_yaxis(self):
        pass


class _tqdm:
    """A stand-in for ``tqdm``: prints its description and each postfix."""

    def __init__(self, total=None, desc=None):
        print(desc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def set_postfix(self, **kw):
        print(kw)

    def update(self):
        pass


def _program_classes(torch, plt, tqdm=_tqdm):
    nn = torch.nn
    F = torch.nn.functional

    class Normal(torch.distributions.Normal):
        # stand-in: the base distribution's samples from the program's seeded stream
        def sample(self, sample_shape=()):
            with torch.no_grad():
                shape = self._extended_shape(sample_shape)
                return self.loc.expand(shape) + self.scale.expand(shape) * torch.randn(*shape)

    D = SimpleNamespace(Normal=Normal)

    parser = argparse.ArgumentParser()
    # action
    parser.add_argument('--train', action='store_true', help='Train a flow.')
    parser.add_argument('--plot', action='store_true', help='Plot a flow and target density.')
    parser.add_argument('--restore_file', type=str, help='Path to model to restore.')
    parser.add_argument('--output_dir', default='./results/{}'.format(os.path.splitext('bnaf.py')[0]))
    parser.add_argument('--cuda', type=int, help='Which GPU to run on.')
    parser.add_argument('--seed', type=int, default=0, help='Random seed.')
    # target density
    parser.add_argument('--dataset', type=str, help='Which potential function to approximate.')
    # model parameters
    parser.add_argument('--data_dim', type=int, default=2, help='Dimension of the data.')
    parser.add_argument('--hidden_dim', type=int, default=100, help='Dimensions of hidden layers.')
    parser.add_argument('--n_hidden', type=int, default=3, help='Number of hidden layers.')
    # training parameters
    parser.add_argument('--step', type=int, default=0, help='Current step of training (number of minibatches processed).')
    parser.add_argument('--n_steps', type=int, default=1, help='Number of steps to train.')
    parser.add_argument('--batch_size', type=int, default=200, help='Training batch size.')
    parser.add_argument('--lr', type=float, default=1e-1, help='Initial learning rate.')
    parser.add_argument('--lr_decay', type=float, default=0.5, help='Learning rate decay.')
    parser.add_argument('--lr_patience', type=float, default=2000, help='Number of steps before decaying learning rate.')
    parser.add_argument('--log_interval', type=int, default=50, help='How often to save model and samples.')

    # --------------------
    # Data
    # --------------------

    def potential_fn(dataset):
        # NF paper table 1 energy functions
        w1 = lambda z: torch.sin(2 * math.pi * z[:,0] / 4)
        w2 = lambda z: 3 * torch.exp(-0.5 * ((z[:,0] - 1)/0.6)**2)
        w3 = lambda z: 3 * torch.sigmoid((z[:,0] - 1) / 0.3)

        if dataset == 'u1':
            return lambda z: 0.5 * ((torch.norm(z, p=2, dim=1) - 2) / 0.4)**2 - \
                                    torch.log(torch.exp(-0.5*((z[:,0] - 2) / 0.6)**2) + \
                                              torch.exp(-0.5*((z[:,0] + 2) / 0.6)**2) + 1e-10)

        elif dataset == 'u2':
            return lambda z: 0.5 * ((z[:,1] - w1(z)) / 0.4)**2

        elif dataset == 'u3':
            return lambda z: - torch.log(torch.exp(-0.5*((z[:,1] - w1(z))/0.35)**2) + \
                                         torch.exp(-0.5*((z[:,1] - w1(z) + w2(z))/0.35)**2) + 1e-10)

        elif dataset == 'u4':
            return lambda z: - torch.log(torch.exp(-0.5*((z[:,1] - w1(z))/0.4)**2) + \
                                         torch.exp(-0.5*((z[:,1] - w1(z) + w3(z))/0.35)**2) + 1e-10)

        else:
            raise RuntimeError('Invalid potential name to sample from.')

    def sample_2d_data(dataset, n_samples):

        z = torch.randn(n_samples, 2)

        if dataset == '8gaussians':
            scale = 4
            sq2 = 1/math.sqrt(2)
            centers = [(1,0), (-1,0), (0,1), (0,-1), (sq2,sq2), (-sq2,sq2), (sq2,-sq2), (-sq2,-sq2)]
            centers = torch.tensor([(scale * x, scale * y) for x,y in centers])
            return sq2 * (0.5 * z + centers[torch.randint(len(centers), size=(n_samples,))])

        elif dataset == '2spirals':
            n = torch.sqrt(torch.rand(n_samples // 2)) * 540 * (2 * math.pi) / 360
            d1x = - torch.cos(n) * n + torch.rand(n_samples // 2) * 0.5
            d1y =   torch.sin(n) * n + torch.rand(n_samples // 2) * 0.5
            x = torch.cat([torch.stack([ d1x,  d1y], dim=1),
                           torch.stack([-d1x, -d1y], dim=1)], dim=0) / 3
            return x + 0.1*z

        elif dataset == 'checkerboard':
            x1 = torch.rand(n_samples) * 4 - 2
            x2_ = torch.rand(n_samples) - torch.randint(0, 2, (n_samples,), dtype=torch.float) * 2
            x2 = x2_ + x1.floor() % 2
            return torch.stack([x1, x2], dim=1) * 2

        elif dataset == 'rings':
            n_samples4 = n_samples3 = n_samples2 = n_samples // 4
            n_samples1 = n_samples - n_samples4 - n_samples3 - n_samples2

            # so as not to have the first point = last point, set endpoint=False in np; here shifted by one
            linspace4 = torch.linspace(0, 2 * math.pi, n_samples4 + 1)[:-1]
            linspace3 = torch.linspace(0, 2 * math.pi, n_samples3 + 1)[:-1]
            linspace2 = torch.linspace(0, 2 * math.pi, n_samples2 + 1)[:-1]
            linspace1 = torch.linspace(0, 2 * math.pi, n_samples1 + 1)[:-1]

            circ4_x = torch.cos(linspace4)
            circ4_y = torch.sin(linspace4)
            circ3_x = torch.cos(linspace4) * 0.75
            circ3_y = torch.sin(linspace3) * 0.75
            circ2_x = torch.cos(linspace2) * 0.5
            circ2_y = torch.sin(linspace2) * 0.5
            circ1_x = torch.cos(linspace1) * 0.25
            circ1_y = torch.sin(linspace1) * 0.25

            x = torch.stack([torch.cat([circ4_x, circ3_x, circ2_x, circ1_x]),
                             torch.cat([circ4_y, circ3_y, circ2_y, circ1_y])], dim=1) * 3.0

            # random sample
            x = x[torch.randint(0, n_samples, size=(n_samples,))]

            # Add noise
            return x + torch.normal(mean=torch.zeros_like(x), std=0.08*torch.ones_like(x))

        else:
            raise RuntimeError('Invalid `dataset` to sample from.')

    # --------------------
    # Model components
    # --------------------

    class MaskedLinear(nn.Module):
        def __init__(self, in_features, out_features, data_dim):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.data_dim = data_dim

            # (the repository's notes on eq 8 and weight normalisation are left out here)

            weight = torch.zeros(out_features, in_features)
            mask_d = torch.zeros_like(weight)
            mask_o = torch.zeros_like(weight)
            for i in range(data_dim):
                # select block slices
                h     = slice(i * out_features // data_dim, (i+1) * out_features // data_dim)
                w     = slice(i * in_features // data_dim,  (i+1) * in_features // data_dim)
                w_row = slice(0,                            (i+1) * in_features // data_dim)
                # initialize block-lower-triangular weight and construct block diagonal mask_d and lower triangular mask_o
                nn.init.kaiming_uniform_(weight[h,w_row], a=math.sqrt(5))  # default nn.Linear weight init only block-wise
                mask_d[h,w] = 1
                mask_o[h,w_row] = 1

            mask_o = mask_o - mask_d  # remove diagonal so mask_o is lower triangular 1-off the diagonal

            self.weight = nn.Parameter(weight)                          # pre-mask, pre-weight-norm
            self.logg = nn.Parameter(torch.rand(out_features, 1).log()) # weight-norm parameter
            self.bias = nn.Parameter(nn.init.uniform_(torch.rand(out_features), -1/math.sqrt(in_features), 1/math.sqrt(in_features)))  # default nn.Linear bias init
            self.register_buffer('mask_d', mask_d)
            self.register_buffer('mask_o', mask_o)

        def forward(self, x, sum_logdets):
            # 1. compute BNAF masked weight eq 8
            v = self.weight.exp() * self.mask_d + self.weight * self.mask_o
            # 2. weight normalization
            v_norm = v.norm(p=2, dim=1, keepdim=True)
            w = self.logg.exp() * v / v_norm
            # 3. compute output and logdet of the layer
            out = F.linear(x, w, self.bias)
            logdet = self.logg + self.weight - 0.5 * v_norm.pow(2).log()
            logdet = logdet[self.mask_d.byte()]
            logdet = logdet.view(1, self.data_dim, out.shape[1]//self.data_dim, x.shape[1]//self.data_dim) \
                           .expand(x.shape[0],-1,-1,-1)  # output (B, data_dim, out_dim // data_dim, in_dim // data_dim)

            # 4. sum with sum_logdets from layers before (BNAF section 3.3)
            # (the repository's derivation of the log-matrix product is left out here)

            sum_logdets = torch.logsumexp(sum_logdets.transpose(2,3) + logdet, dim=-1, keepdim=True)

            return out, sum_logdets


        def extra_repr(self):
            return 'in_features={}, out_features={}, bias={}'.format(
                self.in_features, self.out_features, self.bias is not None
            )

    class Tanh(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x, sum_logdets):
            # derivation of logdet:
            # d/dx tanh = 1 / cosh^2; cosh = (1 + exp(-2x)) / (2*exp(-x))
            # log d/dx tanh = - 2 * log cosh = -2 * (x - log 2 + log(1 + exp(-2x)))
            logdet = -2 * (x - math.log(2) + F.softplus(-2*x))
            sum_logdets = sum_logdets + logdet.view_as(sum_logdets)
            return x.tanh(), sum_logdets

    class FlowSequential(nn.Sequential):
        """ Container for layers of a normalizing flow """
        def forward(self, x):
            sum_logdets = torch.zeros(1, x.shape[1], 1, 1, device=x.device)
            for module in self:
                x, sum_logdets = module(x, sum_logdets)
            return x, sum_logdets.squeeze()

    # --------------------
    # Model
    # --------------------

    class BNAF(nn.Module):
        def __init__(self, data_dim, n_hidden, hidden_dim):
            super().__init__()

            # base distribution for calculation of log prob under the model
            self.register_buffer('base_dist_mean', torch.zeros(data_dim))
            self.register_buffer('base_dist_var', torch.ones(data_dim))

            # construct model
            modules = []
            modules += [MaskedLinear(data_dim, hidden_dim, data_dim), Tanh()]
            for _ in range(n_hidden):
                modules += [MaskedLinear(hidden_dim, hidden_dim, data_dim), Tanh()]
            modules += [MaskedLinear(hidden_dim, data_dim, data_dim)]
            self.net = FlowSequential(*modules)

            # TODO --   add permutation
            #           add residual gate
            #           add stack of flows

        @property
        def base_dist(self):
            return D.Normal(self.base_dist_mean, self.base_dist_var)

        def forward(self, x):
            return self.net(x)

    def compute_kl_qp_loss(model, target_potential_fn, batch_size):
        """ Compute BNAF eq 3 & 20:
        KL(q_inv||p) where q_inv is the inverse flow transform (log_q_inv = log_q_base - logdet), p is the target distribution (energy potential)
        Returns the minimization objective for density matching. """
        z = model.base_dist.sample((batch_size,))
        q_log_prob = model.base_dist.log_prob(z)
        zk, logdet = model(z)
        p_log_prob = - target_potential_fn(zk)  # p = exp(-potential) => log_p = - potential
        return q_log_prob.sum(1) - logdet.sum(1) - p_log_prob  # BNAF eq 20

    def compute_kl_pq_loss(model, sample_2d_data_fn, batch_size):
        """ Compute BNAF eq 2 & 16:
        KL(p||q_fwd) where q_fwd is the forward flow transform (log_q_fwd = log_q_base + logdet), p is the target distribution.
        Returns the minimization objective for density estimation (NLL under the flow since the entropy of the target dist is fixed wrt the optimization) """
        sample = sample_2d_data_fn(batch_size).to(model.base_dist.loc.device)
        z, logdet = model(sample)
        return - torch.sum(model.base_dist.log_prob(z) + logdet, dim=1)

    # --------------------
    # Training
    # --------------------

    def train_flow(model, potential_or_sampling_fn, loss_fn, optimizer, scheduler, args):
        model.train()

        with tqdm(total=args.n_steps, desc='Start step {}; Training for {} steps'.format(args.step, args.n_steps)) as pbar:
            for _ in range(args.n_steps):
                args.step += 1

                loss = loss_fn(model, potential_or_sampling_fn, args.batch_size).mean(0)

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step(loss)

                pbar.set_postfix(loss = '{:.3f}'.format(loss.item()))
                pbar.update()

                if args.step % args.log_interval == 0:
                    # save model
                    torch.save({'step': args.step,
                                'state_dict': model.state_dict()},
                               os.path.join(args.output_dir, 'checkpoint.pt'))
                    torch.save({'optimizer': optimizer.state_dict(),
                                'scheduler': scheduler.state_dict()},
                               os.path.join(args.output_dir, 'optim_checkpoint.pt'))

                    # plot and save results
                    plot(model, potential_or_sampling_fn, args)

    # --------------------
    # Plotting
    # --------------------

    @torch.no_grad()
    def plot(model, potential_or_sampling_fn, args):
        n_pts = 6  # 1000 in the repository
        range_lim = 4

        # construct test points
        test_grid = setup_grid(range_lim, n_pts, args)

        # plot
        if args.samples:
            fig, axs = plt.subplots(1, 2, figsize=(8,4), subplot_kw={'aspect': 'equal'})
            plot_samples(potential_or_sampling_fn, axs[0], range_lim, n_pts)
            plot_fwd_flow_density(model, axs[1], test_grid, n_pts, args.batch_size)
        else:
            fig, axs = plt.subplots(1, 3, figsize=(12,4.3), subplot_kw={'aspect': 'equal'})
            plot_potential(potential_or_sampling_fn, axs[0], test_grid, n_pts)
            plot_inv_flow_density(model, axs[1], test_grid, n_pts, args.batch_size)
            plot_flow_samples(model, axs[2], n_pts, args.batch_size)

        # format
        for ax in plt.gcf().axes: format_ax(ax, range_lim)
        plt.tight_layout()

        # save
        plt.savefig(os.path.join(args.output_dir, 'vis_step_{}.png'.format(args.step)))
        plt.close()

    def setup_grid(range_lim, n_pts, args):
        x = torch.linspace(-range_lim, range_lim, n_pts)
        xx, yy = torch.meshgrid((x, x))
        zz = torch.stack((xx.flatten(), yy.flatten()), dim=1)
        return xx, yy, zz.to(args.device)

    def format_ax(ax, range_lim):
        ax.set_xlim(-range_lim, range_lim)
        ax.set_ylim(-range_lim, range_lim)
        ax.get_xaxis().set_visible(False)
        ax.get_yaxis().set_visible(False)
        ax.invert_yaxis()

    def plot_potential(potential_fn, ax, test_grid, n_pts):
        xx, yy, zz = test_grid
        ax.pcolormesh(xx, yy, torch.exp(-potential_fn(zz)).view(n_pts,n_pts).cpu().data, cmap=plt.cm.jet)
        ax.set_title('Target density')

    def plot_samples(samples_fn, ax, range_lim, n_pts):
        samples = samples_fn(n_pts**2).numpy()
        ax.hist2d(samples[:,0], samples[:,1], range=[[-range_lim, range_lim], [-range_lim, range_lim]], bins=n_pts, cmap=plt.cm.jet)
        ax.set_title('Target samples')

    def plot_flow_samples(model, ax, n_pts, batch_size):
        z = model.base_dist.sample((n_pts**2,))
        zk = torch.cat([model(z_)[0] for z_ in z.split(batch_size, dim=0)], 0)
        zk = zk.cpu().numpy()
        # plot
        ax.hist2d(zk[:,0], zk[:,1], bins=n_pts, cmap=plt.cm.jet)
        ax.set_facecolor(plt.cm.jet(0.))
        ax.set_title('Flow samples')

    def plot_fwd_flow_density(model, ax, test_grid, n_pts, batch_size):
        """ plots square grid and flow density; where density under the flow is exp(log_flow_base_dist + logdet) """
        xx, yy, zz = test_grid
        # compute posterior approx density
        zzk, logdets = [], []
        for zz_i in zz.split(batch_size, dim=0):
            zzk_i, logdets_i = model(zz_i)
            zzk += [zzk_i]
            logdets += [logdets_i]
        zzk, logdets = torch.cat(zzk, 0), torch.cat(logdets, 0)
        log_prob = model.base_dist.log_prob(zzk) + logdets
        prob = log_prob.sum(1).exp().cpu()
        # plot
        ax.pcolormesh(xx, yy, prob.view(n_pts,n_pts), cmap=plt.cm.jet)
        ax.set_facecolor(plt.cm.jet(0.))
        ax.set_title('Flow density')

    def plot_inv_flow_density(model, ax, test_grid, n_pts, batch_size):
        """ plots transformed grid and density; where density is exp(loq_flow_base_dist - logdet) """
        xx, yy, zz = test_grid
        # compute posterior approx density
        zzk, logdets = [], []
        for zz_i in zz.split(batch_size, dim=0):
            zzk_i, logdets_i = model(zz_i)
            zzk += [zzk_i]
            logdets += [logdets_i]
        zzk, logdets = torch.cat(zzk, 0), torch.cat(logdets, 0)
        log_q0 = model.base_dist.log_prob(zz)
        log_qk = log_q0 - logdets
        qk = log_qk.sum(1).exp().cpu()
        zzk = zzk.cpu()
        # plot
        ax.pcolormesh(zzk[:,0].view(n_pts,n_pts), zzk[:,1].view(n_pts,n_pts), qk.view(n_pts,n_pts), cmap=plt.cm.jet)
        ax.set_facecolor(plt.cm.jet(0.))
        ax.set_title('Flow density')

    return SimpleNamespace(
        parser=parser, potential_fn=potential_fn, sample_2d_data=sample_2d_data,
        MaskedLinear=MaskedLinear, Tanh=Tanh, FlowSequential=FlowSequential, BNAF=BNAF,
        compute_kl_qp_loss=compute_kl_qp_loss, compute_kl_pq_loss=compute_kl_pq_loss,
        train_flow=train_flow, plot=plot)


def main(torch, p, argv, log, seed=5):
    """bnaf.py's ``__main__`` block (parameters overwritten from numpy after construction)."""
    args = p.parser.parse_args(argv)
    args.output_dir = os.path.dirname(args.restore_file) if args.restore_file else os.path.join(args.output_dir, time.strftime('%Y-%m-%d_%H-%M-%S', time.gmtime()))
    if not os.path.isdir(args.output_dir): os.makedirs(args.output_dir)

    args.device = torch.device('cuda:{}'.format(args.cuda) if args.cuda is not None and torch.cuda.is_available() else 'cpu')

    torch.manual_seed(args.seed)
    if args.device.type == 'cuda': torch.cuda.manual_seed(args.seed)

    model = p.BNAF(args.data_dim, args.n_hidden, args.hidden_dim).to(args.device)
    init_params(torch, model, seed, scale=0.5)

    if args.restore_file:
        model_checkpoint = torch.load(args.restore_file, map_location=args.device)
        model.load_state_dict(model_checkpoint['state_dict'])
        args.step = model_checkpoint['step']

    # save settings
    config = 'Parsed args:\n{}\n\n'.format(pprint.pformat(args.__dict__)) + \
             'Num trainable params: {:,.0f}\n\n'.format(sum(p.numel() for p in model.parameters())) + \
             'Model:\n{}'.format(model)
    config_path = os.path.join(args.output_dir, 'config.txt')
    if not os.path.exists(config_path):
        with open(config_path, 'a') as f:
            print(config, file=f)
    log("config", config.split("\n\n", 1)[1])   # the args hold the temporary folder's name

    # setup data -- density to estimate/match
    args.samples = not (args.dataset.startswith('u') and len(args.dataset) == 2)
    if args.samples:
        # target is density to estimate
        potential_or_sampling_fn = partial(p.sample_2d_data, args.dataset)
        loss_fn = p.compute_kl_pq_loss
    else:
        # target is energy potential to match
        potential_or_sampling_fn = p.potential_fn(args.dataset)
        loss_fn = p.compute_kl_qp_loss

    if args.train:
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        try:
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=args.lr_decay, patience=args.lr_patience, verbose=True)
        except TypeError as e:   # torch 2.13 has no ``verbose``
            log("ReduceLROnPlateau(verbose=True)", [type(e), "verbose" in str(e)])
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=args.lr_decay, patience=args.lr_patience)
        if args.restore_file:
            optim_checkpoint = torch.load(os.path.dirname(args.restore_file) + '/optim_checkpoint.pt', map_location=args.device)
            optimizer.load_state_dict(optim_checkpoint['optimizer'])
            scheduler.load_state_dict(optim_checkpoint['scheduler'])
            log("restored step", [args.step, optimizer.state_dict()['state'][0]['step'],
                                  scheduler.num_bad_epochs, scheduler.best])

        p.train_flow(model, potential_or_sampling_fn, loss_fn, optimizer, scheduler, args)
        log("lr", [g['lr'] for g in optimizer.param_groups])
        log("scheduler", [scheduler.best, scheduler.num_bad_epochs, scheduler.last_epoch])

    if args.plot:
        p.plot(model, potential_or_sampling_fn, args)
    for name, t in model.named_parameters():
        if name == "net.0.weight":
            # the first layer's block-0 rows hold one weight each (its input block is one
            # wide), so weight normalisation makes them 1 whatever the weight, and the logdet
            # term ``weight - 0.5 * log(exp(weight) ** 2)`` 0: their gradient is rounding noise,
            # which Adam turns into steps of about lr of either sign (nothing depends on them)
            log("param " + name, t[args.hidden_dim // args.data_dim:])
            log("grad " + name, t.grad[args.hidden_dim // args.data_dim:])
            continue
        log("param " + name, t)
        log("grad " + name, t.grad)
    return model, args


SIZES = ['--hidden_dim', '4', '--n_hidden', '1', '--batch_size', '8', '--log_interval', '2',
         '--lr', '0.01', '--lr_patience', '1']


def _program(mod, log):
    torch = _SeededTorch(mod, 0)
    p = _program_classes(torch, _Recorder(log))

    # the data and the energies on their own
    for name in ('8gaussians', '2spirals', 'checkerboard', 'rings'):
        log("sample " + name, p.sample_2d_data(name, 8))
    z = torch.tensor(np.linspace(-2.5, 2.5, 16, dtype=np.float32).reshape(8, 2))
    for name in ('u1', 'u2', 'u3', 'u4'):
        log("potential " + name, p.potential_fn(name)(z))

    # one MaskedLinear on its own: the uint8 mask's warning, the logdet chain's gradients
    lin = init_params(mod, p.MaskedLinear(2, 4, 2), 1, scale=0.5)
    x = torch.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, sld = lin(x, torch.zeros(1, 2, 1, 1))
    log("uint8 warning", [re.sub(r"\s*\(Triggered internally.*", "", str(w.message))
                          for w in caught])
    (out.pow(2).sum() + sld.sum()).backward()
    log("masked out", [out, sld, out.grad_fn, sld.grad_fn])
    log("masked grads", [x.grad, lin.weight.grad, lin.logg.grad, lin.bias.grad])
    log("masks", [lin.mask_d, lin.mask_o])

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the uint8 mask and meshgrid's indexing
        # density estimation (KL(p||q)) on 8gaussians, 4 steps, two checkpoints and plots
        out_dir = os.path.join(tmp, 'pq')
        main(torch, p, SIZES + ['--train', '--dataset', '8gaussians', '--n_steps', '4',
                                '--output_dir', out_dir], log)
        # restored from the checkpoint, 2 more steps, then plotted
        run = os.listdir(out_dir)[0]
        main(torch, p, SIZES + ['--train', '--plot', '--dataset', '8gaussians', '--n_steps',
                                '2', '--restore_file',
                                os.path.join(out_dir, run, 'checkpoint.pt')], log)
        # energy matching (KL(q||p)) on u2, 4 steps
        main(torch, p, SIZES + ['--train', '--dataset', 'u2', '--n_steps', '4',
                                '--output_dir', os.path.join(tmp, 'qp')], log)


def test_bnaf_block_neural_autoregressive_flow():
    run_both(_program)


def _other_targets(mod, log):
    # one loss and its gradients for each other target: energy matching on u1, u3, u4 and
    # density estimation on rings, checkerboard and 2spirals (two hidden layers of 6)
    torch = _SeededTorch(mod, 1)
    p = _program_classes(torch, _Recorder(log))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the uint8 mask
        for name in ('u1', 'u3', 'u4'):
            model = init_params(mod, p.BNAF(2, 1, 4), 3, scale=0.5)
            loss = p.compute_kl_qp_loss(model, p.potential_fn(name), 8).mean(0)
            loss.backward()
            log(name, [loss, model.net[2].weight.grad, model.net[4].logg.grad])
        for name in ('rings', 'checkerboard', '2spirals'):
            model = init_params(mod, p.BNAF(2, 2, 6), 4, scale=0.5)
            loss = p.compute_kl_pq_loss(model, partial(p.sample_2d_data, name), 12).mean(0)
            loss.backward()
            log(name, [loss, model.net[2].weight.grad, model.net[6].bias.grad])


def test_bnaf_other_targets():
    run_both(_other_targets)
