"""A twenty-fifth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round24.py``, from repositories no earlier round used:

- ctallec/world-models: the "World Models" VAE + MDRNN + controller. The MDRNN (``nn.LSTM`` over
  ``cat([actions, latents])``, one ``gmm_linear`` head sliced into mixture means, ``exp``-ed sigmas,
  ``log_softmax`` mixture weights, reward and terminal logits) trained by ``trainmdrnn.py``'s
  ``get_loss`` (``transpose(1, 0)`` of every input, ``gmm_loss`` through ``Normal(mus,
  sigmas).log_prob`` with the max-subtraction log-sum-exp, ``binary_cross_entropy_with_logits``,
  ``mse_loss``, both ``include_reward`` branches) with ``RMSprop(alpha=.9)``; ``to_latent``'s
  ``f.upsample(..., mode='bilinear', align_corners=True)`` into the 64x64 ``VAE`` (four stride-2
  convs, four ``ConvTranspose2d``, ``eps.mul(sigma).add_(mu)``) under ``no_grad``; ``trainvae.py``'s
  ``loss_function`` (``mse_loss(size_average=False)`` + KLD) as its ``test()`` runs it; the repository's own
  ``EarlyStopping`` and pre-0.5 ``ReduceLROnPlateau`` copies (``isinstance(optimizer,
  Optimizer)``, ``param_group['lr']`` writes, ``state_dict``/``load_state_dict``); and the rollout
  side: ``MDRNNCell`` loading the MDRNN's ``state_dict`` under ``k.strip('_l0')`` keys (an
  ``nn.LSTM``'s ``weight_ih_l0`` into an ``nn.LSTMCell``'s ``weight_ih``), the ``Controller``,
  ``get_action_and_transition`` and ``flatten_parameters``/``load_parameters`` (the CMA-ES
  parameter round trip through numpy and ``torch.Tensor(ndarray)``).

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
from functools import partial

import numpy as np
import pytest

from parity import init_params, printer, run_both

torch = pytest.importorskip("torch")


class _Seeded:
    """The program's ``torch`` with ``randn_like`` drawn from one numpy stream, so that torch and
    tracegrad see the same numbers; everything else is the module itself."""

    def __init__(self, mod, seed):
        self._mod = mod
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def randn_like(self, t):
        arr = self._rs.standard_normal(tuple(t.shape)).astype(np.float32)
        return self._mod.tensor(arr).to(t.dtype)


def _fan_in_init(torch, module, seed):
    """Fill every parameter from a numpy stream, uniform(+-1/sqrt(fan_in)) like torch's default
    Linear/Conv init (a flat range would blow a deep conv stack's activations up)."""
    rs = np.random.RandomState(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.tensor(rs.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    return module


# ---- ctallec/world-models -------------------------------------------------------------------------
def _world_models_module(torch):
    """models/{mdrnn,vae,controller}.py, utils/learning.py, utils/misc.py's parameter helpers and
    RolloutGenerator.get_action_and_transition, unchanged but for docstrings (``torch`` is the
    program's module; ``RolloutGenerator.__init__`` loads files and builds a gym env, so the test
    sets the three models on an instance itself)."""
    nn = torch.nn
    f = torch.nn.functional
    F = torch.nn.functional
    from importlib import import_module
    Normal = import_module(torch.__name__ + ".distributions.normal").Normal
    Optimizer = import_module(torch.__name__ + ".optim").Optimizer

    def gmm_loss(batch, mus, sigmas, logpi, reduce=True): # pylint: disable=too-many-arguments
        batch = batch.unsqueeze(-2)
        normal_dist = Normal(mus, sigmas)
        g_log_probs = normal_dist.log_prob(batch)
        g_log_probs = logpi + torch.sum(g_log_probs, dim=-1)
        max_log_probs = torch.max(g_log_probs, dim=-1, keepdim=True)[0]
        g_log_probs = g_log_probs - max_log_probs

        g_probs = torch.exp(g_log_probs)
        probs = torch.sum(g_probs, dim=-1)

        log_prob = max_log_probs.squeeze() + torch.log(probs)
        if reduce:
            return - torch.mean(log_prob)
        return - log_prob

    class _MDRNNBase(nn.Module):
        def __init__(self, latents, actions, hiddens, gaussians):
            super().__init__()
            self.latents = latents
            self.actions = actions
            self.hiddens = hiddens
            self.gaussians = gaussians

            self.gmm_linear = nn.Linear(
                hiddens, (2 * latents + 1) * gaussians + 2)

        def forward(self, *inputs):
            pass

    class MDRNN(_MDRNNBase):
        def __init__(self, latents, actions, hiddens, gaussians):
            super().__init__(latents, actions, hiddens, gaussians)
            self.rnn = nn.LSTM(latents + actions, hiddens)

        def forward(self, actions, latents): # pylint: disable=arguments-differ
            seq_len, bs = actions.size(0), actions.size(1)

            ins = torch.cat([actions, latents], dim=-1)
            outs, _ = self.rnn(ins)
            gmm_outs = self.gmm_linear(outs)

            stride = self.gaussians * self.latents

            mus = gmm_outs[:, :, :stride]
            mus = mus.view(seq_len, bs, self.gaussians, self.latents)

            sigmas = gmm_outs[:, :, stride:2 * stride]
            sigmas = sigmas.view(seq_len, bs, self.gaussians, self.latents)
            sigmas = torch.exp(sigmas)

            pi = gmm_outs[:, :, 2 * stride: 2 * stride + self.gaussians]
            pi = pi.view(seq_len, bs, self.gaussians)
            logpi = f.log_softmax(pi, dim=-1)

            rs = gmm_outs[:, :, -2]

            ds = gmm_outs[:, :, -1]

            return mus, sigmas, logpi, rs, ds

    class MDRNNCell(_MDRNNBase):
        def __init__(self, latents, actions, hiddens, gaussians):
            super().__init__(latents, actions, hiddens, gaussians)
            self.rnn = nn.LSTMCell(latents + actions, hiddens)

        def forward(self, action, latent, hidden): # pylint: disable=arguments-differ
            in_al = torch.cat([action, latent], dim=1)

            next_hidden = self.rnn(in_al, hidden)
            out_rnn = next_hidden[0]

            out_full = self.gmm_linear(out_rnn)

            stride = self.gaussians * self.latents

            mus = out_full[:, :stride]
            mus = mus.view(-1, self.gaussians, self.latents)

            sigmas = out_full[:, stride:2 * stride]
            sigmas = sigmas.view(-1, self.gaussians, self.latents)
            sigmas = torch.exp(sigmas)

            pi = out_full[:, 2 * stride:2 * stride + self.gaussians]
            pi = pi.view(-1, self.gaussians)
            logpi = f.log_softmax(pi, dim=-2)

            r = out_full[:, -2]

            d = out_full[:, -1]

            return mus, sigmas, logpi, r, d, next_hidden

    class Decoder(nn.Module):
        def __init__(self, img_channels, latent_size):
            super(Decoder, self).__init__()
            self.latent_size = latent_size
            self.img_channels = img_channels

            self.fc1 = nn.Linear(latent_size, 1024)
            self.deconv1 = nn.ConvTranspose2d(1024, 128, 5, stride=2)
            self.deconv2 = nn.ConvTranspose2d(128, 64, 5, stride=2)
            self.deconv3 = nn.ConvTranspose2d(64, 32, 6, stride=2)
            self.deconv4 = nn.ConvTranspose2d(32, img_channels, 6, stride=2)

        def forward(self, x): # pylint: disable=arguments-differ
            x = F.relu(self.fc1(x))
            x = x.unsqueeze(-1).unsqueeze(-1)
            x = F.relu(self.deconv1(x))
            x = F.relu(self.deconv2(x))
            x = F.relu(self.deconv3(x))
            reconstruction = F.sigmoid(self.deconv4(x))
            return reconstruction

    class Encoder(nn.Module): # pylint: disable=too-many-instance-attributes
        def __init__(self, img_channels, latent_size):
            super(Encoder, self).__init__()
            self.latent_size = latent_size
            #self.img_size = img_size
            self.img_channels = img_channels

            self.conv1 = nn.Conv2d(img_channels, 32, 4, stride=2)
            self.conv2 = nn.Conv2d(32, 64, 4, stride=2)
            self.conv3 = nn.Conv2d(64, 128, 4, stride=2)
            self.conv4 = nn.Conv2d(128, 256, 4, stride=2)

            self.fc_mu = nn.Linear(2*2*256, latent_size)
            self.fc_logsigma = nn.Linear(2*2*256, latent_size)

        def forward(self, x): # pylint: disable=arguments-differ
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.relu(self.conv3(x))
            x = F.relu(self.conv4(x))
            x = x.view(x.size(0), -1)

            mu = self.fc_mu(x)
            logsigma = self.fc_logsigma(x)

            return mu, logsigma

    class VAE(nn.Module):
        def __init__(self, img_channels, latent_size):
            super(VAE, self).__init__()
            self.encoder = Encoder(img_channels, latent_size)
            self.decoder = Decoder(img_channels, latent_size)

        def forward(self, x): # pylint: disable=arguments-differ
            mu, logsigma = self.encoder(x)
            sigma = logsigma.exp()
            eps = torch.randn_like(sigma)
            z = eps.mul(sigma).add_(mu)

            recon_x = self.decoder(z)
            return recon_x, mu, logsigma

    class Controller(nn.Module):
        def __init__(self, latents, recurrents, actions):
            super().__init__()
            self.fc = nn.Linear(latents + recurrents, actions)

        def forward(self, *inputs):
            cat_in = torch.cat(inputs, dim=1)
            return self.fc(cat_in)

    class EarlyStopping(object): # pylint: disable=R0902
        def __init__(self, mode='min', patience=10, threshold=1e-4, threshold_mode='rel'):
            self.patience = patience
            self.mode = mode
            self.threshold = threshold
            self.threshold_mode = threshold_mode
            self.best = None
            self.num_bad_epochs = None
            self.mode_worse = None  # the worse value for the chosen mode
            self.is_better = None
            self.last_epoch = -1
            self._init_is_better(mode=mode, threshold=threshold,
                                 threshold_mode=threshold_mode)
            self._reset()

        def _reset(self):
            self.best = self.mode_worse
            self.num_bad_epochs = 0

        def step(self, metrics, epoch=None):
            current = metrics
            if epoch is None:
                epoch = self.last_epoch = self.last_epoch + 1
            self.last_epoch = epoch

            if self.is_better(current, self.best):
                self.best = current
                self.num_bad_epochs = 0
            else:
                self.num_bad_epochs += 1

        @property
        def stop(self):
            return self.num_bad_epochs > self.patience

        def _cmp(self, mode, threshold_mode, threshold, a, best): # pylint: disable=R0913, R0201
            if mode == 'min' and threshold_mode == 'rel':
                rel_epsilon = 1. - threshold
                return a < best * rel_epsilon

            elif mode == 'min' and threshold_mode == 'abs':
                return a < best - threshold

            elif mode == 'max' and threshold_mode == 'rel':
                rel_epsilon = threshold + 1.
                return a > best * rel_epsilon

            return a > best + threshold

        def _init_is_better(self, mode, threshold, threshold_mode):
            if mode not in {'min', 'max'}:
                raise ValueError('mode ' + mode + ' is unknown!')
            if threshold_mode not in {'rel', 'abs'}:
                raise ValueError('threshold mode ' + threshold_mode + ' is unknown!')

            if mode == 'min':
                self.mode_worse = float('inf')
            else:  # mode == 'max':
                self.mode_worse = (-float('inf'))

            self.is_better = partial(self._cmp, mode, threshold_mode, threshold)

        def state_dict(self):
            return {key: value for key, value in self.__dict__.items() if key != 'is_better'}

        def load_state_dict(self, state_dict):
            self.__dict__.update(state_dict)
            self._init_is_better(mode=self.mode, threshold=self.threshold,
                                 threshold_mode=self.threshold_mode)

    class ReduceLROnPlateau(object): # pylint: disable=R0902
        def __init__(self, optimizer, mode='min', factor=0.1, patience=10, # pylint: disable=R0913
                     verbose=False, threshold=1e-4, threshold_mode='rel',
                     cooldown=0, min_lr=0, eps=1e-8):

            if factor >= 1.0:
                raise ValueError('Factor should be < 1.0.')
            self.factor = factor

            if not isinstance(optimizer, Optimizer):
                raise TypeError('{} is not an Optimizer'.format(
                    type(optimizer).__name__))
            self.optimizer = optimizer

            if isinstance(min_lr, (list, tuple)):
                if len(min_lr) != len(optimizer.param_groups):
                    raise ValueError("expected {} min_lrs, got {}".format(
                        len(optimizer.param_groups), len(min_lr)))
                self.min_lrs = list(min_lr)
            else:
                self.min_lrs = [min_lr] * len(optimizer.param_groups)

            self.patience = patience
            self.verbose = verbose
            self.cooldown = cooldown
            self.cooldown_counter = 0
            self.mode = mode
            self.threshold = threshold
            self.threshold_mode = threshold_mode
            self.best = None
            self.num_bad_epochs = None
            self.mode_worse = None  # the worse value for the chosen mode
            self.is_better = None
            self.eps = eps
            self.last_epoch = -1
            self._init_is_better(mode=mode, threshold=threshold,
                                 threshold_mode=threshold_mode)
            self._reset()

        def _reset(self):
            self.best = self.mode_worse
            self.cooldown_counter = 0
            self.num_bad_epochs = 0

        def step(self, metrics, epoch=None):
            current = metrics
            if epoch is None:
                epoch = self.last_epoch = self.last_epoch + 1
            self.last_epoch = epoch

            if self.is_better(current, self.best):
                self.best = current
                self.num_bad_epochs = 0
            else:
                self.num_bad_epochs += 1

            if self.in_cooldown:
                self.cooldown_counter -= 1
                self.num_bad_epochs = 0  # ignore any bad epochs in cooldown

            if self.num_bad_epochs > self.patience:
                self._reduce_lr(epoch)
                self.cooldown_counter = self.cooldown
                self.num_bad_epochs = 0

        def _reduce_lr(self, epoch):
            for i, param_group in enumerate(self.optimizer.param_groups):
                old_lr = float(param_group['lr'])
                new_lr = max(old_lr * self.factor, self.min_lrs[i])
                if old_lr - new_lr > self.eps:
                    param_group['lr'] = new_lr
                    if self.verbose:
                        print('Epoch {:5d}: reducing learning rate'
                              ' of group {} to {:.4e}.'.format(epoch, i, new_lr))

        @property
        def in_cooldown(self):
            return self.cooldown_counter > 0

        def _cmp(self, mode, threshold_mode, threshold, a, best): # pylint: disable=R0913,R0201
            if mode == 'min' and threshold_mode == 'rel':
                rel_epsilon = 1. - threshold
                return a < best * rel_epsilon

            elif mode == 'min' and threshold_mode == 'abs':
                return a < best - threshold

            elif mode == 'max' and threshold_mode == 'rel':
                rel_epsilon = threshold + 1.
                return a > best * rel_epsilon

            return a > best + threshold

        def _init_is_better(self, mode, threshold, threshold_mode):
            if mode not in {'min', 'max'}:
                raise ValueError('mode ' + mode + ' is unknown!')
            if threshold_mode not in {'rel', 'abs'}:
                raise ValueError('threshold mode ' + threshold_mode + ' is unknown!')

            if mode == 'min':
                self.mode_worse = float('inf')
            else:  # mode == 'max':
                self.mode_worse = (-float('inf'))

            self.is_better = partial(self._cmp, mode, threshold_mode, threshold)

        def state_dict(self):
            return {key: value for key, value in self.__dict__.items()
                    if key not in {'optimizer', 'is_better'}}

        def load_state_dict(self, state_dict):
            self.__dict__.update(state_dict)
            self._init_is_better(mode=self.mode, threshold=self.threshold,
                                 threshold_mode=self.threshold_mode)

    def flatten_parameters(params):
        return torch.cat([p.detach().view(-1) for p in params], dim=0).cpu().numpy()

    def unflatten_parameters(params, example, device):
        params = torch.Tensor(params).to(device)
        idx = 0
        unflattened = []
        for e_p in example:
            unflattened += [params[idx:idx + e_p.numel()].view(e_p.size())]
            idx += e_p.numel()
        return unflattened

    def load_parameters(params, controller):
        proto = next(controller.parameters())
        params = unflatten_parameters(
            params, controller.parameters(), proto.device)

        for p, p_0 in zip(controller.parameters(), params):
            p.data.copy_(p_0)

    class RolloutGenerator(object):
        def get_action_and_transition(self, obs, hidden):
            _, latent_mu, _ = self.vae(obs)
            action = self.controller(latent_mu, hidden[0])
            _, _, _, _, _, next_hidden = self.mdrnn(action, latent_mu, hidden)
            return action.squeeze().cpu().numpy(), next_hidden

    return dict(gmm_loss=gmm_loss, MDRNN=MDRNN, MDRNNCell=MDRNNCell, VAE=VAE, Controller=Controller,
                EarlyStopping=EarlyStopping, ReduceLROnPlateau=ReduceLROnPlateau,
                flatten_parameters=flatten_parameters, load_parameters=load_parameters,
                RolloutGenerator=RolloutGenerator)


# trainmdrnn.py's to_latent/get_loss/data_pass and trainvae.py's loss_function/train step, with
# the script globals as arguments: ASIZE, LSIZE, RSIZE = 3, 4, 8 (the repository's 3, 32, 256),
# 3 mixture components (5), BSIZE, SEQ_LEN = 1, 2 (16, 32) and SIZE = 8 (96) raw frames upsampled
# to RED_SIZE = 64 as in the repository (the VAE's layer sizes need 64x64); a numpy batch in place
# of RolloutSequenceDataset; numpy draws for ``randn_like``; ``print`` logs the printed numbers;
# schedulers with patience 0 so that two epochs exercise the lr reduction and early stop. The
# rollout steps two observations at once (the repository's one) so that every VAE call has the
# one batch size 2 (each new shape of its large convolutions costs seconds to compile).
def test_ctallec_world_models_mdrnn_vae_controller():
    def program(mod, log):
        torch = _Seeded(mod, 25)
        print = printer(log)
        m = _world_models_module(torch)
        f = torch.nn.functional
        F = torch.nn.functional
        ASIZE, LSIZE, RSIZE, RED_SIZE, SIZE = 3, 4, 8, 64, 8
        BSIZE, SEQ_LEN = 1, 2
        rs = np.random.RandomState(7)

        vae = _fan_in_init(torch, m["VAE"](3, LSIZE), 1)
        mdrnn = init_params(torch, m["MDRNN"](LSIZE, ASIZE, RSIZE, 3), 2)
        optimizer = torch.optim.RMSprop(mdrnn.parameters(), lr=1e-3, alpha=.9)
        scheduler = m["ReduceLROnPlateau"](optimizer, 'min', factor=0.5, patience=0, verbose=True)
        earlystopping = m["EarlyStopping"]('min', patience=0)
        gmm_loss = m["gmm_loss"]

        def to_latent(obs, next_obs):
            with torch.no_grad():
                obs, next_obs = [
                    f.upsample(x.view(-1, 3, SIZE, SIZE), size=RED_SIZE,
                               mode='bilinear', align_corners=True)
                    for x in (obs, next_obs)]

                (obs_mu, obs_logsigma), (next_obs_mu, next_obs_logsigma) = [
                    vae(x)[1:] for x in (obs, next_obs)]

                latent_obs, latent_next_obs = [
                    (x_mu + x_logsigma.exp() * torch.randn_like(x_mu)).view(BSIZE, SEQ_LEN, LSIZE)
                    for x_mu, x_logsigma in
                    [(obs_mu, obs_logsigma), (next_obs_mu, next_obs_logsigma)]]
            return latent_obs, latent_next_obs

        def get_loss(latent_obs, action, reward, terminal,
                     latent_next_obs, include_reward: bool):
            latent_obs, action,\
                reward, terminal,\
                latent_next_obs = [arr.transpose(1, 0)
                                   for arr in [latent_obs, action,
                                               reward, terminal,
                                               latent_next_obs]]
            mus, sigmas, logpi, rs, ds = mdrnn(action, latent_obs)
            gmm = gmm_loss(latent_next_obs, mus, sigmas, logpi)
            bce = f.binary_cross_entropy_with_logits(ds, terminal)
            if include_reward:
                mse = f.mse_loss(rs, reward)
                scale = LSIZE + 2
            else:
                mse = 0
                scale = LSIZE + 1
            loss = (gmm + bce + mse) / scale
            return dict(gmm=gmm, bce=bce, mse=mse, loss=loss)

        def batch(i):
            r = np.random.RandomState(100 + i)
            obs = r.uniform(0, 1, (BSIZE, SEQ_LEN + 1, 3, SIZE, SIZE)).astype(np.float32)
            return [torch.tensor(a) for a in (
                obs[:, :-1], r.uniform(-1, 1, (BSIZE, SEQ_LEN, ASIZE)).astype(np.float32),
                r.standard_normal((BSIZE, SEQ_LEN)).astype(np.float32),
                (r.uniform(0, 1, (BSIZE, SEQ_LEN)) < 0.3).astype(np.float32), obs[:, 1:])]

        def data_pass(epoch, train, include_reward):
            if train:
                mdrnn.train()
            else:
                mdrnn.eval()
            cum_loss = cum_gmm = cum_bce = cum_mse = 0
            for i in range(1):
                obs, action, reward, terminal, next_obs = [arr.to('cpu') for arr in batch(epoch * 2 + train)]
                latent_obs, latent_next_obs = to_latent(obs, next_obs)
                if train:
                    losses = get_loss(latent_obs, action, reward,
                                      terminal, latent_next_obs, include_reward)
                    optimizer.zero_grad()
                    losses['loss'].backward()
                    optimizer.step()
                else:
                    with torch.no_grad():
                        losses = get_loss(latent_obs, action, reward,
                                          terminal, latent_next_obs, include_reward)
                cum_loss += losses['loss'].item()
                cum_gmm += losses['gmm'].item()
                cum_bce += losses['bce'].item()
                cum_mse += losses['mse'].item() if hasattr(losses['mse'], 'item') else \
                    losses['mse']
                print("loss={loss:10.6f} bce={bce:10.6f} gmm={gmm:10.6f} mse={mse:10.6f}".format(
                    loss=cum_loss / (i + 1), bce=cum_bce / (i + 1),
                    gmm=cum_gmm / LSIZE / (i + 1), mse=cum_mse / (i + 1)))
            return cum_loss * BSIZE / BSIZE

        for e, include_reward in enumerate([True, False]):
            data_pass(e, train=True, include_reward=include_reward)
            test_loss = data_pass(e, train=False, include_reward=include_reward)
            # the second epoch's test loss is made worse so that both schedulers react
            scheduler.step(test_loss + 10 * e)
            earlystopping.step(test_loss + 10 * e)
            log("lr", optimizer.param_groups[0]['lr'])
            log("stop", earlystopping.stop)
            if earlystopping.stop:
                print("End of Training because of early stopping at epoch {}".format(e))
                break
        log("scheduler_state", {k: v for k, v in scheduler.state_dict().items() if k != "best"})
        log("rms_state", [(k, v['square_avg']) for k, v in optimizer.state_dict()['state'].items()])
        sched2 = m["ReduceLROnPlateau"](optimizer, 'max')
        sched2.load_state_dict(scheduler.state_dict())
        log("reloaded_mode", [sched2.mode, sched2.is_better(1.0, 2.0)])
        try:
            m["ReduceLROnPlateau"]([p for p in mdrnn.parameters()])
        except TypeError as err:
            log("not_an_optimizer", str(err))
        log("mdrnn_grads", [p.grad for p in mdrnn.parameters()])

        # trainvae.py's test(): loss_function under no_grad on the 64x64 frames (a training step
        # of this VAE would compile its convolutions' gradients: too slow for this suite)
        def loss_function(recon_x, x, mu, logsigma):
            BCE = F.mse_loss(recon_x, x, size_average=False)
            KLD = -0.5 * torch.sum(1 + 2 * logsigma - mu.pow(2) - (2 * logsigma).exp())
            return BCE + KLD

        vae.eval()
        test_loss = 0
        with torch.no_grad():
            data = f.upsample(batch(9)[0].view(-1, 3, SIZE, SIZE), size=RED_SIZE,
                              mode='bilinear', align_corners=True)
            recon_batch, mu, logvar = vae(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
        print('====> Test set loss: {:.4f}'.format(test_loss / len(data)))
        log("vae_recon", recon_batch[:, :, ::16, ::16])

        # the rollout side: the MDRNN's LSTM weights into an MDRNNCell, a controller whose
        # parameters go through numpy and back, two get_action_and_transition steps
        cell = m["MDRNNCell"](LSIZE, ASIZE, RSIZE, 3)
        missing = cell.load_state_dict({k.strip('_l0'): v for k, v in mdrnn.state_dict().items()})
        log("load_result", [list(missing.missing_keys), list(missing.unexpected_keys)])
        controller = init_params(torch, m["Controller"](LSIZE, RSIZE, ASIZE), 3)
        flat = m["flatten_parameters"](controller.parameters())
        log("flat", flat)
        m["load_parameters"](flat[::-1].copy(), controller)
        log("ctrl_weight", controller.fc.weight)
        gen = m["RolloutGenerator"]()
        gen.vae, gen.mdrnn, gen.controller = vae.eval(), cell, controller
        hidden = [torch.zeros(2, RSIZE).to('cpu') for _ in range(2)]
        with torch.no_grad():
            obs = data
            for _ in range(2):
                action, hidden = gen.get_action_and_transition(obs, hidden)
                log("action", action)
                log("hidden", list(hidden))
    run_both(program)
