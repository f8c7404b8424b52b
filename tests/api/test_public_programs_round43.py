"""A forty-third round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used:

- locuslab/convmixer-cifar10 at 2d3d9b7 (MIT; "Patches Are All You Need?", Trockman & Kolter
  2022), ``train.py``: argparse options, ``ConvMixer`` (``Residual`` around a depthwise
  ``Conv2d(..., groups=dim, padding="same")``, ``GELU``, ``BatchNorm2d``, ``AdaptiveAvgPool2d``,
  ``Flatten``), ``nn.DataParallel(model).cuda()`` (the ``AssertionError`` of a CPU build logged),
  the piecewise-linear ``np.interp`` learning-rate schedule written with
  ``opt.param_groups[0].update(lr=lr)``, AdamW with weight decay, ``torch.cuda.amp.GradScaler()``
  and ``torch.cuda.amp.autocast()`` on a machine without CUDA (their warnings; the scaler is
  disabled: ``scale`` returns the loss, ``unscale_``/``step``/``update`` pass through), the
  ``--clip-norm`` branch (``clip_grad_norm_``), the accuracy by ``output.max(1)[1] == y``, the eval
  loop under ``no_grad``, the epoch ``print``.
- kevinzakka/recurrent-visual-attention at a38ac89 (MIT; RAM, Mnih et al. 2014): ``modules.py``
  (the ``Retina``'s foveated glimpses: ``F.pad``, per-sample slices at ``.long()`` coordinates,
  ``torch.stack``, ``F.avg_pool2d`` of the larger patches, ``torch.cat``; the glimpse, core,
  action (``log_softmax``), location (``h_t.detach()``, ``Normal(mu, std).rsample()``,
  ``log_prob`` of the detached sample, ``clamp``) and baseline networks), ``model.py``
  (``RecurrentAttention``) and ``trainer.py``'s ``reset``/``train_one_epoch``/``validate``
  (``torch.zeros(..., requires_grad=True)`` for the state, ``torch.FloatTensor(B, 2).uniform_``
  with ``requires_grad = True`` set afterwards, the hybrid loss ``nll_loss + mse_loss`` + REINFORCE
  with a baseline, ``torch.max(log_probas, 1)[1]``, Adam, ``ReduceLROnPlateau.step(-valid_acc)``,
  the ``M``-fold repeated validation batch averaged by ``view``/``mean``, ``AverageMeter``).
- jankrepl/mildlyoverfitted at 22f0ecc (MIT; PonderNet, Banino et al. 2021),
  ``github_adventures/pondernet/utils.py`` (``ParityDataset`` drawing with ``torch.randint``/
  ``randperm`` and writing ``x[:n] = ...`` of an int64 tensor into a float one, ``PonderNet``'s
  ``GRUCell`` loop with ``x.new_zeros``/``new_ones``, halting steps by ``torch.maximum`` of
  ``n * (halting_step == 0) * torch.bernoulli(lambda_n).to(torch.long)``, ``ReconstructionLoss``
  starting from ``p.new_tensor(0.0)`` over ``BCEWithLogitsLoss(reduction="none")``,
  ``RegularizationLoss``'s geometric prior written into a zeros buffer, ``KLDivLoss("batchmean")``
  of ``p.log()``) and ``train.py`` (argparse, ``module.to(device, dtype)``, Adam,
  ``clip_grad_norm_``, ``evaluate`` under ``torch.no_grad()`` as a decorator: ``gather`` at
  ``halting_step[None, :] - 1``, per-step accuracies, ``torch.stack(values).mean(dim=0)
  .cpu().numpy()``; ``torch.save(module, ...)`` of the whole module, whose pickling error for
  these test-local classes is logged before the state dict is saved and loaded instead).
- jankrepl/mildlyoverfitted at 22f0ecc (MIT), ``github_adventures/vision_transformer``:
  ``custom.py`` as written (``PatchEmbed`` by a strided ``Conv2d``, ``flatten(2)``/``transpose``,
  multi-head attention from one ``qkv`` Linear ``reshape``d and ``permute``d to
  ``(3, n, heads, tokens, head_dim)``, ``dp.softmax(dim=-1)``, the class token ``expand``ed and
  ``cat``, learned position embeddings, ``x[:, 0]``), ``verify.py`` (parameters copied by
  ``p_c.data[:] = p_o.data`` from a second model in ``named_parameters`` order, ``numel``
  counts, ``np.testing.assert_allclose`` of ``.detach().numpy()``, ``model.eval()``) and
  ``forward.py`` (a uint8 image scaled by numpy, ``torch.from_numpy(...).permute(2, 0, 1)
  .unsqueeze(0).to(torch.float32)``, ``softmax``, ``probs[0].topk(k)``, ``.item()`` of the
  zipped indices and probabilities, the formatted ``print``).

Changes, the same on both sides: sizes are tiny (ConvMixer: 8 channels, depth 2, 8 x 8 images,
batches of 4, 2 epochs; RAM: 16 x 16 images, 4 x 4 patches, 2 scales, 3 glimpses, hidden 16); the
data sets are seeded numpy arrays in ``TensorDataset``s; parameters are overwritten from numpy after
construction; ``.cuda()`` (whose ``AssertionError`` is logged) is left out afterwards; RAM's
random draws (``FloatTensor(...).uniform_`` and ``Normal.rsample``) come from one seeded numpy
stream (``rsample`` is ``loc + eps * scale``, as torch writes it); tqdm's progress bar, the
tensorboard logging, the pickled glimpses and the checkpoints are left out. PonderNet: 6
elements, 8 hidden units, 4 steps, 3 batches of 4, evaluation every 2 steps on 8 samples in batches
of 4; ``torch.randint``/``randperm``/``bernoulli`` draw from one seeded numpy stream; the
``SummaryWriter`` is a stand-in whose scalars are logged, tqdm is the plain iterator, the figures are
left out. ViT: 8 x 8 images, 4 x 4 patches, width 8, 2 heads, depth 2, 10 classes; timm's
pretrained model is a second ``VisionTransformer`` with seeded numpy parameters; the picture and the
class names are a seeded uint8 array and generated names; ``torch.rand`` is seeded numpy;
``torch.save``/``torch.load`` of the whole (test-local) model is left out.
"""
import argparse
import json
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from parity import SeededTorch, init_params, run_both

torch = pytest.importorskip("torch")


def _loader(mod, n, shape, classes, seed, batch_size, shuffle=False):
    rs = np.random.RandomState(seed)
    ds = mod.utils.data.TensorDataset(mod.tensor(rs.rand(n, *shape).astype(np.float32)),
                                      mod.tensor(rs.randint(0, classes, n)))
    return mod.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=shuffle)


# ---- locuslab/convmixer-cifar10 -----------------------------------------------------------------
def _convmixer_train(torch, log, argv):
    """train.py as written, but for the data sets (seeded arrays), ``.cuda()`` (logged, then left
    out) and the sizes given in ``argv``."""
    nn = torch.nn
    optim = torch.optim

    parser = argparse.ArgumentParser()

    parser.add_argument('--name', type=str, default="ConvMixer")

    parser.add_argument('--batch-size', default=512, type=int)
    parser.add_argument('--scale', default=0.75, type=float)
    parser.add_argument('--reprob', default=0.25, type=float)
    parser.add_argument('--ra-m', default=8, type=int)
    parser.add_argument('--ra-n', default=1, type=int)
    parser.add_argument('--jitter', default=0.1, type=float)

    parser.add_argument('--hdim', default=256, type=int)
    parser.add_argument('--depth', default=8, type=int)
    parser.add_argument('--psize', default=2, type=int)
    parser.add_argument('--conv-ks', default=5, type=int)

    parser.add_argument('--wd', default=0.01, type=float)
    parser.add_argument('--clip-norm', action='store_true')
    parser.add_argument('--epochs', default=25, type=int)
    parser.add_argument('--lr-max', default=0.01, type=float)
    parser.add_argument('--workers', default=2, type=int)

    args = parser.parse_args(argv)

    class Residual(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x):
            return self.fn(x) + x

    def ConvMixer(dim, depth, kernel_size=5, patch_size=2, n_classes=10):
        return nn.Sequential(
            nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size),
            nn.GELU(),
            nn.BatchNorm2d(dim),
            *[nn.Sequential(
                    Residual(nn.Sequential(
                        nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                        nn.GELU(),
                        nn.BatchNorm2d(dim)
                    )),
                    nn.Conv2d(dim, dim, kernel_size=1),
                    nn.GELU(),
                    nn.BatchNorm2d(dim)
            ) for i in range(depth)],
            nn.AdaptiveAvgPool2d((1,1)),
            nn.Flatten(),
            nn.Linear(dim, n_classes)
        )

    # the CIFAR-10 loaders: seeded arrays (the augmentations are torchvision's, left out)
    trainloader = _loader(torch, 12, (3, 8, 8), 10, 0, args.batch_size)
    testloader = _loader(torch, 8, (3, 8, 8), 10, 1, args.batch_size)

    model = ConvMixer(args.hdim, args.depth, patch_size=args.psize, kernel_size=args.conv_ks, n_classes=10)
    init_params(torch, model, 3)
    try:
        model = nn.DataParallel(model).cuda()
    except (AssertionError, RuntimeError) as e:
        log("cuda", type(e))
        model = nn.DataParallel(model)
    log("model", str(model))

    lr_schedule = lambda t: np.interp([t], [0, args.epochs*2//5, args.epochs*4//5, args.epochs],  # noqa: E731
                                      [0, args.lr_max, args.lr_max/20.0, 0])[0]

    opt = optim.AdamW(model.parameters(), lr=args.lr_max, weight_decay=args.wd)
    criterion = nn.CrossEntropyLoss()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        scaler = torch.cuda.amp.GradScaler()
    log("GradScaler warnings", sorted({str(x.category.__name__) for x in w}))
    log("scaler enabled", scaler.is_enabled())

    for epoch in range(args.epochs):
        start = time.time()
        train_loss, train_acc, n = 0, 0, 0
        for i, (X, y) in enumerate(trainloader):
            model.train()

            lr = lr_schedule(epoch + (i + 1)/len(trainloader))
            opt.param_groups[0].update(lr=lr)

            opt.zero_grad()
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with torch.cuda.amp.autocast():
                    output = model(X)
                    loss = criterion(output, y)
            log("autocast warnings", sorted({str(x.category.__name__) for x in w}))

            scaler.scale(loss).backward()
            if args.clip_norm:
                scaler.unscale_(opt)
                log("norm", nn.utils.clip_grad_norm_(model.parameters(), 1.0))
            scaler.step(opt)
            scaler.update()

            train_loss += loss.item() * y.size(0)
            train_acc += (output.max(1)[1] == y).sum().item()
            n += y.size(0)
            log("loss", loss)

        model.eval()
        test_acc, m = 0, 0
        with torch.no_grad():
            for i, (X, y) in enumerate(testloader):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with torch.cuda.amp.autocast():
                        output = model(X)
                log("eval output", output)
                test_acc += (output.max(1)[1] == y).sum().item()
                m += y.size(0)

        print(f'[{args.name}] Epoch: {epoch} | Train Acc: {train_acc/n:.4f}, Test Acc: {test_acc/m:.4f}, lr: {lr:.6f}')
        log("train", (train_loss, train_acc, n, test_acc, m, lr))
    for name, p in model.named_parameters():
        log(name, p)
        log(name + ".grad", p.grad)
    for name, b in model.named_buffers():
        log(name, b)
    return model, opt, criterion, scaler, trainloader


CONVMIXER_ARGS = ['--batch-size', '4', '--hdim', '8', '--depth', '2', '--conv-ks', '3',
                  '--epochs', '2', '--lr-max', '0.01']


def _program_convmixer(torch, log):
    _convmixer_train(torch, log, CONVMIXER_ARGS)


def _program_convmixer_clip(torch, log):
    _convmixer_train(torch, log, CONVMIXER_ARGS + ['--clip-norm', '--epochs', '1'])


def test_convmixer_cifar10_train():
    # whole runs through BatchNorm and AdamW: float32 rounding of the kernels drifts a little
    run_both(_program_convmixer, rtol=1e-4, atol=1e-5)


def test_convmixer_cifar10_train_clip_norm():
    run_both(_program_convmixer_clip, rtol=1e-4, atol=1e-5)


# ---- kevinzakka/recurrent-visual-attention ------------------------------------------------------
class _RAMTorch(SeededTorch):
    """The program's ``torch`` with its two random draws from the seeded numpy stream:
    ``torch.FloatTensor(B, 2).uniform_(a, b)`` and ``torch.distributions.Normal(...).rsample()``
    (``loc + eps * scale``, as torch writes it); everything else is the module's own."""

    def __init__(self, mod, seed):
        super().__init__(mod, seed)
        outer = self

        class _Uniform:
            def __init__(self, *size):
                self.size = size

            def uniform_(self, a, b):
                return outer._make(outer._rs.uniform(a, b, self.size))

        class Normal(mod.distributions.Normal):
            def rsample(self, sample_shape=()):
                eps = outer._make(outer._rs.standard_normal(tuple(self.loc.shape)))
                return self.loc + eps * self.scale

        self.FloatTensor = _Uniform
        self.distributions = SimpleNamespace(Normal=Normal)


def _ram_classes(torch):
    """modules.py and model.py as written (docstrings shortened)."""
    nn = torch.nn
    F = torch.nn.functional
    Normal = torch.distributions.Normal

    class Retina:
        """A visual retina."""

        def __init__(self, g, k, s):
            self.g = g
            self.k = k
            self.s = s

        def foveate(self, x, l):  # noqa: E741
            phi = []
            size = self.g

            # extract k patches of increasing size
            for i in range(self.k):
                phi.append(self.extract_patch(x, l, size))
                size = int(self.s * size)

            # resize the patches to squares of size g
            for i in range(1, len(phi)):
                k = phi[i].shape[-1] // self.g
                phi[i] = F.avg_pool2d(phi[i], k)

            # concatenate into a single tensor and flatten
            phi = torch.cat(phi, 1)
            phi = phi.view(phi.shape[0], -1)

            return phi

        def extract_patch(self, x, l, size):  # noqa: E741
            B, C, H, W = x.shape

            start = self.denormalize(H, l)
            end = start + size

            # pad with zeros
            x = F.pad(x, (size // 2, size // 2, size // 2, size // 2))

            # loop through mini-batch and extract patches
            patch = []
            for i in range(B):
                patch.append(x[i, :, start[i, 1] : end[i, 1], start[i, 0] : end[i, 0]])
            return torch.stack(patch)

        def denormalize(self, T, coords):
            return (0.5 * ((coords + 1.0) * T)).long()

        def exceeds(self, from_x, to_x, from_y, to_y, T):
            if (from_x < 0) or (from_y < 0) or (to_x > T) or (to_y > T):
                return True
            return False

    class GlimpseNetwork(nn.Module):
        def __init__(self, h_g, h_l, g, k, s, c):
            super().__init__()

            self.retina = Retina(g, k, s)

            # glimpse layer
            D_in = k * g * g * c
            self.fc1 = nn.Linear(D_in, h_g)

            # location layer
            D_in = 2
            self.fc2 = nn.Linear(D_in, h_l)

            self.fc3 = nn.Linear(h_g, h_g + h_l)
            self.fc4 = nn.Linear(h_l, h_g + h_l)

        def forward(self, x, l_t_prev):
            # generate glimpse phi from image x
            phi = self.retina.foveate(x, l_t_prev)

            # flatten location vector
            l_t_prev = l_t_prev.view(l_t_prev.size(0), -1)

            # feed phi and l to respective fc layers
            phi_out = F.relu(self.fc1(phi))
            l_out = F.relu(self.fc2(l_t_prev))

            what = self.fc3(phi_out)
            where = self.fc4(l_out)

            # feed to fc layer
            g_t = F.relu(what + where)

            return g_t

    class CoreNetwork(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()

            self.input_size = input_size
            self.hidden_size = hidden_size

            self.i2h = nn.Linear(input_size, hidden_size)
            self.h2h = nn.Linear(hidden_size, hidden_size)

        def forward(self, g_t, h_t_prev):
            h1 = self.i2h(g_t)
            h2 = self.h2h(h_t_prev)
            h_t = F.relu(h1 + h2)
            return h_t

    class ActionNetwork(nn.Module):
        def __init__(self, input_size, output_size):
            super().__init__()

            self.fc = nn.Linear(input_size, output_size)

        def forward(self, h_t):
            a_t = F.log_softmax(self.fc(h_t), dim=1)
            return a_t

    class LocationNetwork(nn.Module):
        def __init__(self, input_size, output_size, std):
            super().__init__()

            self.std = std

            hid_size = input_size // 2
            self.fc = nn.Linear(input_size, hid_size)
            self.fc_lt = nn.Linear(hid_size, output_size)

        def forward(self, h_t):
            # compute mean
            feat = F.relu(self.fc(h_t.detach()))
            mu = torch.tanh(self.fc_lt(feat))

            # reparametrization trick
            l_t = torch.distributions.Normal(mu, self.std).rsample()
            l_t = l_t.detach()
            log_pi = Normal(mu, self.std).log_prob(l_t)

            # we assume both dimensions are independent
            # 1. pdf of the joint is the product of the pdfs
            # 2. log of the product is the sum of the logs
            log_pi = torch.sum(log_pi, dim=1)

            # bound between [-1, 1]
            l_t = torch.clamp(l_t, -1, 1)

            return log_pi, l_t

    class BaselineNetwork(nn.Module):
        def __init__(self, input_size, output_size):
            super().__init__()

            self.fc = nn.Linear(input_size, output_size)

        def forward(self, h_t):
            b_t = self.fc(h_t.detach())
            return b_t

    modules = SimpleNamespace(GlimpseNetwork=GlimpseNetwork, CoreNetwork=CoreNetwork,
                              LocationNetwork=LocationNetwork, ActionNetwork=ActionNetwork,
                              BaselineNetwork=BaselineNetwork)

    class RecurrentAttention(nn.Module):
        def __init__(
            self, g, k, s, c, h_g, h_l, std, hidden_size, num_classes,
        ):
            super().__init__()

            self.std = std

            self.sensor = modules.GlimpseNetwork(h_g, h_l, g, k, s, c)
            self.rnn = modules.CoreNetwork(hidden_size, hidden_size)
            self.locator = modules.LocationNetwork(hidden_size, 2, std)
            self.classifier = modules.ActionNetwork(hidden_size, num_classes)
            self.baseliner = modules.BaselineNetwork(hidden_size, 1)

        def forward(self, x, l_t_prev, h_t_prev, last=False):
            g_t = self.sensor(x, l_t_prev)
            h_t = self.rnn(g_t, h_t_prev)

            log_pi, l_t = self.locator(h_t)
            b_t = self.baseliner(h_t).squeeze()

            if last:
                log_probas = self.classifier(h_t)
                return h_t, l_t, b_t, log_probas, log_pi

            return h_t, l_t, b_t, log_pi

    return RecurrentAttention


def _ram_trainer(torch, RecurrentAttention):
    """trainer.py's Trainer: the model/optimizer part of ``__init__``, ``reset``,
    ``train_one_epoch`` and ``validate`` as written but for the progress bar, tensorboard and the
    pickled glimpses; utils.py's AverageMeter."""
    F = torch.nn.functional
    ReduceLROnPlateau = torch.optim.lr_scheduler.ReduceLROnPlateau

    class AverageMeter:
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

    class Trainer:
        def __init__(self, config, data_loader):
            self.config = config

            if config.use_gpu and torch.cuda.is_available():
                self.device = torch.device("cuda")
            else:
                self.device = torch.device("cpu")

            # glimpse network params
            self.patch_size = config.patch_size
            self.glimpse_scale = config.glimpse_scale
            self.num_patches = config.num_patches
            self.loc_hidden = config.loc_hidden
            self.glimpse_hidden = config.glimpse_hidden

            # core network params
            self.num_glimpses = config.num_glimpses
            self.hidden_size = config.hidden_size

            # reinforce params
            self.std = config.std
            self.M = config.M

            self.train_loader = data_loader[0]
            self.valid_loader = data_loader[1]
            self.num_classes = 10
            self.num_channels = 1

            self.lr_patience = config.lr_patience

            # build RAM model
            self.model = RecurrentAttention(
                self.patch_size,
                self.num_patches,
                self.glimpse_scale,
                self.num_channels,
                self.loc_hidden,
                self.glimpse_hidden,
                self.std,
                self.hidden_size,
                self.num_classes,
            )
            self.model.to(self.device)

            # initialize optimizer and scheduler
            self.optimizer = torch.optim.Adam(
                self.model.parameters(), lr=self.config.init_lr
            )
            self.scheduler = ReduceLROnPlateau(
                self.optimizer, "min", patience=self.lr_patience
            )

        def reset(self):
            h_t = torch.zeros(
                self.batch_size,
                self.hidden_size,
                dtype=torch.float,
                device=self.device,
                requires_grad=True,
            )
            l_t = torch.FloatTensor(self.batch_size, 2).uniform_(-1, 1).to(self.device)
            l_t.requires_grad = True

            return h_t, l_t

        def train_one_epoch(self, epoch, log):
            self.model.train()
            losses = AverageMeter()
            accs = AverageMeter()

            for i, (x, y) in enumerate(self.train_loader):
                self.optimizer.zero_grad()

                x, y = x.to(self.device), y.to(self.device)

                # initialize location vector and hidden state
                self.batch_size = x.shape[0]
                h_t, l_t = self.reset()

                # save images
                imgs = []
                imgs.append(x[0:9])

                # extract the glimpses
                locs = []
                log_pi = []
                baselines = []
                for t in range(self.num_glimpses - 1):
                    # forward pass through model
                    h_t, l_t, b_t, p = self.model(x, l_t, h_t)

                    # store
                    locs.append(l_t[0:9])
                    baselines.append(b_t)
                    log_pi.append(p)

                # last iteration
                h_t, l_t, b_t, log_probas, p = self.model(x, l_t, h_t, last=True)
                log_pi.append(p)
                baselines.append(b_t)
                locs.append(l_t[0:9])

                # convert list to tensors and reshape
                baselines = torch.stack(baselines).transpose(1, 0)
                log_pi = torch.stack(log_pi).transpose(1, 0)

                # calculate reward
                predicted = torch.max(log_probas, 1)[1]
                R = (predicted.detach() == y).float()
                R = R.unsqueeze(1).repeat(1, self.num_glimpses)

                # compute losses for differentiable modules
                loss_action = F.nll_loss(log_probas, y)
                loss_baseline = F.mse_loss(baselines, R)

                # compute reinforce loss
                # summed over timesteps and averaged across batch
                adjusted_reward = R - baselines.detach()
                loss_reinforce = torch.sum(-log_pi * adjusted_reward, dim=1)
                loss_reinforce = torch.mean(loss_reinforce, dim=0)

                # sum up into a hybrid loss
                loss = loss_action + loss_baseline + loss_reinforce * 0.01

                # compute accuracy
                correct = (predicted == y).float()
                acc = 100 * (correct.sum() / len(y))

                # store
                losses.update(loss.item(), x.size()[0])
                accs.update(acc.item(), x.size()[0])

                # compute gradients and update SGD
                loss.backward()
                self.optimizer.step()

                log("locs", locs)
                log("losses", [loss_action, loss_baseline, loss_reinforce, loss])
                log("grad_fns", [loss.grad_fn, log_pi.grad_fn, baselines.grad_fn])
                log("first grads", [p.grad for p in self.model.parameters()][:2])
                log("acc", acc)

            return losses.avg, accs.avg

        @torch.no_grad()
        def validate(self, epoch):
            losses = AverageMeter()
            accs = AverageMeter()

            for i, (x, y) in enumerate(self.valid_loader):
                x, y = x.to(self.device), y.to(self.device)

                # duplicate M times
                x = x.repeat(self.M, 1, 1, 1)

                # initialize location vector and hidden state
                self.batch_size = x.shape[0]
                h_t, l_t = self.reset()

                # extract the glimpses
                log_pi = []
                baselines = []
                for t in range(self.num_glimpses - 1):
                    # forward pass through model
                    h_t, l_t, b_t, p = self.model(x, l_t, h_t)

                    # store
                    baselines.append(b_t)
                    log_pi.append(p)

                # last iteration
                h_t, l_t, b_t, log_probas, p = self.model(x, l_t, h_t, last=True)
                log_pi.append(p)
                baselines.append(b_t)

                # convert list to tensors and reshape
                baselines = torch.stack(baselines).transpose(1, 0)
                log_pi = torch.stack(log_pi).transpose(1, 0)

                # average
                log_probas = log_probas.view(self.M, -1, log_probas.shape[-1])
                log_probas = torch.mean(log_probas, dim=0)

                baselines = baselines.contiguous().view(self.M, -1, baselines.shape[-1])
                baselines = torch.mean(baselines, dim=0)

                log_pi = log_pi.contiguous().view(self.M, -1, log_pi.shape[-1])
                log_pi = torch.mean(log_pi, dim=0)

                # calculate reward
                predicted = torch.max(log_probas, 1)[1]
                R = (predicted.detach() == y).float()
                R = R.unsqueeze(1).repeat(1, self.num_glimpses)

                # compute losses for differentiable modules
                loss_action = F.nll_loss(log_probas, y)
                loss_baseline = F.mse_loss(baselines, R)

                # compute reinforce loss
                adjusted_reward = R - baselines.detach()
                loss_reinforce = torch.sum(-log_pi * adjusted_reward, dim=1)
                loss_reinforce = torch.mean(loss_reinforce, dim=0)

                # sum up into a hybrid loss
                loss = loss_action + loss_baseline + loss_reinforce * 0.01

                # compute accuracy
                correct = (predicted == y).float()
                acc = 100 * (correct.sum() / len(y))

                # store
                losses.update(loss.item(), x.size()[0])
                accs.update(acc.item(), x.size()[0])

            return losses.avg, accs.avg

    return Trainer


RAM_CONFIG = dict(use_gpu=False, patch_size=4, glimpse_scale=2, num_patches=2, loc_hidden=8,
                  glimpse_hidden=8, num_glimpses=3, hidden_size=16, std=0.05, M=2,
                  init_lr=3e-3, lr_patience=0)


def _program_ram(mod, log):
    torch = _RAMTorch(mod, 7)
    RecurrentAttention = _ram_classes(torch)
    Trainer = _ram_trainer(torch, RecurrentAttention)
    loaders = (_loader(mod, 8, (1, 16, 16), 10, 0, 4), _loader(mod, 4, (1, 16, 16), 10, 1, 4))
    trainer = Trainer(SimpleNamespace(**RAM_CONFIG), loaders)
    init_params(mod, trainer.model, 5)
    log("parameters", [(n, tuple(p.shape)) for n, p in trainer.model.named_parameters()])
    for epoch in range(2):
        train_loss, train_acc = trainer.train_one_epoch(epoch, log)
        valid_loss, valid_acc = trainer.validate(epoch)
        trainer.scheduler.step(-valid_acc)
        log("epoch", [train_loss, train_acc, valid_loss, valid_acc,
                      trainer.optimizer.param_groups[0]["lr"]])
    for name, p in trainer.model.named_parameters():
        log(name, p)
        log(name + ".grad", p.grad)


def test_recurrent_visual_attention_train_and_validate():
    # two epochs of Adam through REINFORCE: float32 rounding drifts a little
    run_both(_program_ram, rtol=1e-4, atol=1e-5)


# ---- jankrepl/mildlyoverfitted: PonderNet -------------------------------------------------------
class _PonderTorch(SeededTorch):
    """The program's ``torch`` with ``randint``/``randperm``/``bernoulli`` drawn from the seeded
    numpy stream (int64 results, as torch's; ``bernoulli`` of a float tensor of probabilities gives
    a float tensor)."""

    def randint(self, low, high, size):
        return self._mod.tensor(self._rs.randint(low, high, size).astype(np.int64))

    def randperm(self, n):
        return self._mod.tensor(self._rs.permutation(n).astype(np.int64))

    def bernoulli(self, p):
        u = self._rs.uniform(0, 1, tuple(p.shape)).astype(np.float32)
        return self._mod.tensor((u < p.detach().numpy()).astype(np.float32))


def _ponder_utils(torch):
    """pondernet/utils.py as written (docstrings shortened)."""
    nn = torch.nn
    Dataset = torch.utils.data.Dataset

    class ParityDataset(Dataset):
        """Parity of vectors - binary classification dataset."""

        def __init__(
            self,
            n_samples,
            n_elems,
            n_nonzero_min=None,
            n_nonzero_max=None,
        ):
            self.n_samples = n_samples
            self.n_elems = n_elems

            self.n_nonzero_min = 1 if n_nonzero_min is None else n_nonzero_min
            self.n_nonzero_max = (
                n_elems if n_nonzero_max is None else n_nonzero_max
            )

            assert 0 <= self.n_nonzero_min <= self.n_nonzero_max <= n_elems

        def __len__(self):
            """Get the number of samples."""
            return self.n_samples

        def __getitem__(self, idx):
            """Get a feature vector and it's parity (target)."""
            x = torch.zeros((self.n_elems,))
            n_non_zero = torch.randint(
                self.n_nonzero_min, self.n_nonzero_max + 1, (1,)
            ).item()
            x[:n_non_zero] = torch.randint(0, 2, (n_non_zero,)) * 2 - 1
            x = x[torch.randperm(self.n_elems)]

            y = (x == 1.0).sum() % 2

            return x, y

    class PonderNet(nn.Module):
        """Network that ponders."""

        def __init__(
            self, n_elems, n_hidden=64, max_steps=20, allow_halting=False
        ):
            super().__init__()

            self.max_steps = max_steps
            self.n_hidden = n_hidden
            self.allow_halting = allow_halting

            self.cell = nn.GRUCell(n_elems, n_hidden)
            self.output_layer = nn.Linear(n_hidden, 1)
            self.lambda_layer = nn.Linear(n_hidden, 1)

        def forward(self, x):
            """Run forward pass."""
            batch_size, _ = x.shape
            device = x.device

            h = x.new_zeros(batch_size, self.n_hidden)

            un_halted_prob = x.new_ones(batch_size)

            y_list = []
            p_list = []

            halting_step = torch.zeros(
                batch_size,
                dtype=torch.long,
                device=device,
            )

            for n in range(1, self.max_steps + 1):
                if n == self.max_steps:
                    lambda_n = x.new_ones(batch_size)  # (batch_size,)
                else:
                    lambda_n = torch.sigmoid(self.lambda_layer(h))[
                        :, 0
                    ]  # (batch_size,)

                # Store releavant outputs
                y_list.append(self.output_layer(h)[:, 0])  # (batch_size,)
                p_list.append(un_halted_prob * lambda_n)  # (batch_size,)

                halting_step = torch.maximum(
                    n
                    * (halting_step == 0)
                    * torch.bernoulli(lambda_n).to(torch.long),
                    halting_step,
                )

                # Prepare for next iteration
                un_halted_prob = un_halted_prob * (1 - lambda_n)
                h = self.cell(x, h)

                # Potentially stop if all samples halted
                if self.allow_halting and (halting_step > 0).sum() == batch_size:
                    break

            y = torch.stack(y_list)
            p = torch.stack(p_list)

            return y, p, halting_step

    class ReconstructionLoss(nn.Module):
        """Weighted average of per step losses."""

        def __init__(self, loss_func):
            super().__init__()

            self.loss_func = loss_func

        def forward(self, p, y_pred, y_true):
            """Compute loss."""
            max_steps, _ = p.shape
            total_loss = p.new_tensor(0.0)

            for n in range(max_steps):
                loss_per_sample = p[n] * self.loss_func(
                    y_pred[n], y_true
                )  # (batch_size,)
                total_loss = total_loss + loss_per_sample.mean()  # (1,)

            return total_loss

    class RegularizationLoss(nn.Module):
        """Enforce halting distribution to ressemble the geometric distribution."""

        def __init__(self, lambda_p, max_steps=20):
            super().__init__()

            p_g = torch.zeros((max_steps,))
            not_halted = 1.0

            for k in range(max_steps):
                p_g[k] = not_halted * lambda_p
                not_halted = not_halted * (1 - lambda_p)

            self.register_buffer("p_g", p_g)
            self.kl_div = nn.KLDivLoss(reduction="batchmean")

        def forward(self, p):
            """Compute loss."""
            steps, batch_size = p.shape

            p = p.transpose(0, 1)  # (batch_size, max_steps)

            p_g_batch = self.p_g[None, :steps].expand_as(
                p
            )  # (batch_size, max_steps)

            return self.kl_div(p.log(), p_g_batch)

    return ParityDataset, PonderNet, ReconstructionLoss, RegularizationLoss


def _ponder_main(torch, log, argv):
    """train.py's evaluate and main as written but for the writer (logged), tqdm and the
    figures."""
    import pathlib
    nn = torch.nn
    DataLoader = torch.utils.data.DataLoader
    ParityDataset, PonderNet, ReconstructionLoss, RegularizationLoss = _ponder_utils(torch)

    class SummaryWriter:
        def __init__(self, folder):
            folder.mkdir(parents=True, exist_ok=True)  # as tensorboard's writer does

        def add_text(self, name, text):
            log(name, text)

        def add_scalar(self, name, value, step):
            log(f"{name}@{step}", value)

    @torch.no_grad()
    def evaluate(dataloader, module):
        """Compute relevant metrics."""
        param = next(module.parameters())
        device, dtype = param.device, param.dtype

        metrics_single_ = {
            "accuracy_halted": [],
            "halting_step": [],
        }
        metrics_per_step_ = {
            "accuracy": [],
            "p": [],
        }

        for x_batch, y_true_batch in dataloader:
            x_batch = x_batch.to(device, dtype)  # (batch_size, n_elems)
            y_true_batch = y_true_batch.to(device, dtype)  # (batch_size,)

            y_pred_batch, p, halting_step = module(x_batch)
            y_halted_batch = y_pred_batch.gather(
                dim=0,
                index=halting_step[None, :] - 1,
            )[
                0
            ]  # (batch_size,)

            # Computing single metrics (mean over samples in the batch)
            accuracy_halted = (
                ((y_halted_batch > 0) == y_true_batch).to(torch.float32).mean()
            )

            metrics_single_["accuracy_halted"].append(accuracy_halted)
            metrics_single_["halting_step"].append(
                halting_step.to(torch.float).mean()
            )

            # Computing per step metrics (mean over samples in the batch)
            accuracy = (
                ((y_pred_batch > 0) == y_true_batch[None, :])
                .to(torch.float32)
                .mean(dim=1)
            )

            metrics_per_step_["accuracy"].append(accuracy)
            metrics_per_step_["p"].append(p.mean(dim=1))

        metrics_single = {
            name: torch.stack(values).mean(dim=0).cpu().numpy()
            for name, values in metrics_single_.items()
        }

        metrics_per_step = {
            name: torch.stack(values).mean(dim=0).cpu().numpy()
            for name, values in metrics_per_step_.items()
        }

        return metrics_single, metrics_per_step

    parser = argparse.ArgumentParser()
    parser.add_argument("log_folder", type=str)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("-d", "--device", type=str, choices={"cpu", "cuda"}, default="cpu")
    parser.add_argument("--eval-frequency", type=int, default=10_000)
    parser.add_argument("--lambda-p", type=float, default=0.4)
    parser.add_argument("--n-iter", type=int, default=1_000_000)
    parser.add_argument("--n-elems", type=int, default=64)
    parser.add_argument("--n-hidden", type=int, default=64)
    parser.add_argument("--n-nonzero", type=int, nargs=2, default=(None, None))
    parser.add_argument("--max-steps", type=int, default=20)

    args = parser.parse_args(argv)
    print(args)

    device = torch.device(args.device)
    dtype = torch.float32
    n_eval_samples = 8
    batch_size_eval = 4

    if args.n_nonzero[0] is None and args.n_nonzero[1] is None:
        threshold = int(0.3 * args.n_elems)
        range_nonzero_easy = (1, threshold)
        range_nonzero_hard = (args.n_elems - threshold, args.n_elems)
    else:
        range_nonzero_easy = (1, args.n_nonzero[1])
        range_nonzero_hard = (args.n_nonzero[1] + 1, args.n_elems)

    log_folder = pathlib.Path(args.log_folder)
    writer = SummaryWriter(log_folder)
    writer.add_text("parameters", json.dumps(vars(args)))

    dataloader_train = DataLoader(
        ParityDataset(
            n_samples=args.batch_size * args.n_iter,
            n_elems=args.n_elems,
            n_nonzero_min=args.n_nonzero[0],
            n_nonzero_max=args.n_nonzero[1],
        ),
        batch_size=args.batch_size,
    )  # consider specifying `num_workers` for speedups
    eval_dataloaders = {
        "test": DataLoader(
            ParityDataset(
                n_samples=n_eval_samples,
                n_elems=args.n_elems,
                n_nonzero_min=args.n_nonzero[0],
                n_nonzero_max=args.n_nonzero[1],
            ),
            batch_size=batch_size_eval,
        ),
        f"{range_nonzero_easy[0]}_{range_nonzero_easy[1]}": DataLoader(
            ParityDataset(
                n_samples=n_eval_samples,
                n_elems=args.n_elems,
                n_nonzero_min=range_nonzero_easy[0],
                n_nonzero_max=range_nonzero_easy[1],
            ),
            batch_size=batch_size_eval,
        ),
        f"{range_nonzero_hard[0]}_{range_nonzero_hard[1]}": DataLoader(
            ParityDataset(
                n_samples=n_eval_samples,
                n_elems=args.n_elems,
                n_nonzero_min=range_nonzero_hard[0],
                n_nonzero_max=range_nonzero_hard[1],
            ),
            batch_size=batch_size_eval,
        ),
    }

    # Model preparation
    module = PonderNet(
        n_elems=args.n_elems,
        n_hidden=args.n_hidden,
        max_steps=args.max_steps,
    )
    init_params(torch, module, 11)
    module = module.to(device, dtype)

    # Loss preparation
    loss_rec_inst = ReconstructionLoss(
        nn.BCEWithLogitsLoss(reduction="none")
    ).to(device, dtype)

    loss_reg_inst = RegularizationLoss(
        lambda_p=args.lambda_p,
        max_steps=args.max_steps,
    ).to(device, dtype)
    log("p_g", loss_reg_inst.p_g)

    # Optimizer
    optimizer = torch.optim.Adam(
        module.parameters(),
        lr=0.0003,
    )

    # Training and evaluation loops
    iterator = enumerate(dataloader_train)
    for step, (x_batch, y_true_batch) in iterator:
        x_batch = x_batch.to(device, dtype)
        y_true_batch = y_true_batch.to(device, dtype)

        y_pred_batch, p, halting_step = module(x_batch)
        log("batch", [x_batch, y_true_batch, halting_step])

        loss_rec = loss_rec_inst(
            p,
            y_pred_batch,
            y_true_batch,
        )

        loss_reg = loss_reg_inst(
            p,
        )

        loss_overall = loss_rec + args.beta * loss_reg

        optimizer.zero_grad()
        loss_overall.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1)
        optimizer.step()

        # Logging
        writer.add_scalar("loss_rec", loss_rec, step)
        writer.add_scalar("loss_reg", loss_reg, step)
        writer.add_scalar("loss_overall", loss_overall, step)
        log("grad_fns", [loss_rec.grad_fn, loss_reg.grad_fn, p.grad_fn])

        # Evaluation
        if step % args.eval_frequency == 0:
            module.eval()

            for dataloader_name, dataloader in eval_dataloaders.items():
                metrics_single, metrics_per_step = evaluate(
                    dataloader,
                    module,
                )
                log(dataloader_name, [metrics_single, metrics_per_step])

                for metric_name, metric_value in metrics_single.items():
                    writer.add_scalar(
                        f"{metric_name}/{dataloader_name}",
                        metric_value,
                        step,
                    )

            try:
                torch.save(module, log_folder / "checkpoint.pth")
            except AttributeError as e:
                # the classes are local to this test's functions: pickle cannot name them
                log("save", [type(e), "Can't pickle local object '_ponder_utils.<locals>.PonderNet'"
                              in str(e)])
                torch.save(module.state_dict(), log_folder / "checkpoint.pth")

            module.train()
    for name, p in module.named_parameters():
        log(name, p)
        log(name + ".grad", p.grad)
    return log_folder


def _program_ponder(mod, log, tmp):
    torch = _PonderTorch(mod, 13)
    folder = _ponder_main(torch, log, [str(tmp), "--batch-size", "4", "--n-iter", "3",
                                       "--eval-frequency", "2", "--n-elems", "6",
                                       "--n-hidden", "8", "--max-steps", "4"])
    loaded = mod.load(folder / "checkpoint.pth")
    log("checkpoint", [type(loaded).__name__, list(loaded)])
    log("checkpoint weights", list(loaded.values()))


def test_pondernet_parity_train_and_evaluate(tmp_path):
    # three Adam steps through a GRUCell: float32 rounding drifts a little
    run_both(lambda mod, log: _program_ponder(mod, log, tmp_path / "run"),
             rtol=1e-4, atol=1e-5)


# ---- jankrepl/mildlyoverfitted: vision_transformer ----------------------------------------------
def _vit_classes(torch):
    """vision_transformer/custom.py as written."""
    nn = torch.nn


    class PatchEmbed(nn.Module):
        """Split image into patches and then embed them.

        Parameters
        ----------
        img_size : int
            Size of the image (it is a square).

        patch_size : int
            Size of the patch (it is a square).

        in_chans : int
            Number of input channels.

        embed_dim : int
            The emmbedding dimension.

        Attributes
        ----------
        n_patches : int
            Number of patches inside of our image.

        proj : nn.Conv2d
            Convolutional layer that does both the splitting into patches
            and their embedding.
        """
        def __init__(self, img_size, patch_size, in_chans=3, embed_dim=768):
            super().__init__()
            self.img_size = img_size
            self.patch_size = patch_size
            self.n_patches = (img_size // patch_size) ** 2


            self.proj = nn.Conv2d(
                    in_chans,
                    embed_dim,
                    kernel_size=patch_size,
                    stride=patch_size,
            )

        def forward(self, x):
            """Run forward pass.

            Parameters
            ----------
            x : torch.Tensor
                Shape `(n_samples, in_chans, img_size, img_size)`.

            Returns
            -------
            torch.Tensor
                Shape `(n_samples, n_patches, embed_dim)`.
            """
            x = self.proj(
                    x
                )  # (n_samples, embed_dim, n_patches ** 0.5, n_patches ** 0.5)
            x = x.flatten(2)  # (n_samples, embed_dim, n_patches)
            x = x.transpose(1, 2)  # (n_samples, n_patches, embed_dim)

            return x


    class Attention(nn.Module):
        """Attention mechanism.

        Parameters
        ----------
        dim : int
            The input and out dimension of per token features.

        n_heads : int
            Number of attention heads.

        qkv_bias : bool
            If True then we include bias to the query, key and value projections.

        attn_p : float
            Dropout probability applied to the query, key and value tensors.

        proj_p : float
            Dropout probability applied to the output tensor.


        Attributes
        ----------
        scale : float
            Normalizing consant for the dot product.

        qkv : nn.Linear
            Linear projection for the query, key and value.

        proj : nn.Linear
            Linear mapping that takes in the concatenated output of all attention
            heads and maps it into a new space.

        attn_drop, proj_drop : nn.Dropout
            Dropout layers.
        """
        def __init__(self, dim, n_heads=12, qkv_bias=True, attn_p=0., proj_p=0.):
            super().__init__()
            self.n_heads = n_heads
            self.dim = dim
            self.head_dim = dim // n_heads
            self.scale = self.head_dim ** -0.5

            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_p)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_p)

        def forward(self, x):
            """Run forward pass.

            Parameters
            ----------
            x : torch.Tensor
                Shape `(n_samples, n_patches + 1, dim)`.

            Returns
            -------
            torch.Tensor
                Shape `(n_samples, n_patches + 1, dim)`.
            """
            n_samples, n_tokens, dim = x.shape

            if dim != self.dim:
                raise ValueError

            qkv = self.qkv(x)  # (n_samples, n_patches + 1, 3 * dim)
            qkv = qkv.reshape(
                    n_samples, n_tokens, 3, self.n_heads, self.head_dim
            )  # (n_smaples, n_patches + 1, 3, n_heads, head_dim)
            qkv = qkv.permute(
                    2, 0, 3, 1, 4
            )  # (3, n_samples, n_heads, n_patches + 1, head_dim)

            q, k, v = qkv[0], qkv[1], qkv[2]
            k_t = k.transpose(-2, -1)  # (n_samples, n_heads, head_dim, n_patches + 1)
            dp = (
               q @ k_t
            ) * self.scale # (n_samples, n_heads, n_patches + 1, n_patches + 1)
            attn = dp.softmax(dim=-1)  # (n_samples, n_heads, n_patches + 1, n_patches + 1)
            attn = self.attn_drop(attn)

            weighted_avg = attn @ v  # (n_samples, n_heads, n_patches +1, head_dim)
            weighted_avg = weighted_avg.transpose(
                    1, 2
            )  # (n_samples, n_patches + 1, n_heads, head_dim)
            weighted_avg = weighted_avg.flatten(2)  # (n_samples, n_patches + 1, dim)

            x = self.proj(weighted_avg)  # (n_samples, n_patches + 1, dim)
            x = self.proj_drop(x)  # (n_samples, n_patches + 1, dim)

            return x


    class MLP(nn.Module):
        """Multilayer perceptron.

        Parameters
        ----------
        in_features : int
            Number of input features.

        hidden_features : int
            Number of nodes in the hidden layer.

        out_features : int
            Number of output features.

        p : float
            Dropout probability.

        Attributes
        ----------
        fc : nn.Linear
            The First linear layer.

        act : nn.GELU
            GELU activation function.

        fc2 : nn.Linear
            The second linear layer.

        drop : nn.Dropout
            Dropout layer.
        """
        def __init__(self, in_features, hidden_features, out_features, p=0.):
            super().__init__()
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(p)

        def forward(self, x):
            """Run forward pass.

            Parameters
            ----------
            x : torch.Tensor
                Shape `(n_samples, n_patches + 1, in_features)`.

            Returns
            -------
            torch.Tensor
                Shape `(n_samples, n_patches +1, out_features)`
            """
            x = self.fc1(
                    x
            ) # (n_samples, n_patches + 1, hidden_features)
            x = self.act(x)  # (n_samples, n_patches + 1, hidden_features)
            x = self.drop(x)  # (n_samples, n_patches + 1, hidden_features)
            x = self.fc2(x)  # (n_samples, n_patches + 1, out_features)
            x = self.drop(x)  # (n_samples, n_patches + 1, out_features)

            return x


    class Block(nn.Module):
        """Transformer block.

        Parameters
        ----------
        dim : int
            Embeddinig dimension.

        n_heads : int
            Number of attention heads.

        mlp_ratio : float
            Determines the hidden dimension size of the `MLP` module with respect
            to `dim`.

        qkv_bias : bool
            If True then we include bias to the query, key and value projections.

        p, attn_p : float
            Dropout probability.

        Attributes
        ----------
        norm1, norm2 : LayerNorm
            Layer normalization.

        attn : Attention
            Attention module.

        mlp : MLP
            MLP module.
        """
        def __init__(self, dim, n_heads, mlp_ratio=4.0, qkv_bias=True, p=0., attn_p=0.):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.attn = Attention(
                    dim,
                    n_heads=n_heads,
                    qkv_bias=qkv_bias,
                    attn_p=attn_p,
                    proj_p=p
            )
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            hidden_features = int(dim * mlp_ratio)
            self.mlp = MLP(
                    in_features=dim,
                    hidden_features=hidden_features,
                    out_features=dim,
            )

        def forward(self, x):
            """Run forward pass.

            Parameters
            ----------
            x : torch.Tensor
                Shape `(n_samples, n_patches + 1, dim)`.

            Returns
            -------
            torch.Tensor
                Shape `(n_samples, n_patches + 1, dim)`.
            """
            x = x + self.attn(self.norm1(x))
            x = x + self.mlp(self.norm2(x))

            return x


    class VisionTransformer(nn.Module):
        """Simplified implementation of the Vision transformer.

        Parameters
        ----------
        img_size : int
            Both height and the width of the image (it is a square).

        patch_size : int
            Both height and the width of the patch (it is a square).

        in_chans : int
            Number of input channels.

        n_classes : int
            Number of classes.

        embed_dim : int
            Dimensionality of the token/patch embeddings.

        depth : int
            Number of blocks.

        n_heads : int
            Number of attention heads.

        mlp_ratio : float
            Determines the hidden dimension of the `MLP` module.

        qkv_bias : bool
            If True then we include bias to the query, key and value projections.

        p, attn_p : float
            Dropout probability.

        Attributes
        ----------
        patch_embed : PatchEmbed
            Instance of `PatchEmbed` layer.

        cls_token : nn.Parameter
            Learnable parameter that will represent the first token in the sequence.
            It has `embed_dim` elements.

        pos_emb : nn.Parameter
            Positional embedding of the cls token + all the patches.
            It has `(n_patches + 1) * embed_dim` elements.

        pos_drop : nn.Dropout
            Dropout layer.

        blocks : nn.ModuleList
            List of `Block` modules.

        norm : nn.LayerNorm
            Layer normalization.
        """
        def __init__(
                self,
                img_size=384,
                patch_size=16,
                in_chans=3,
                n_classes=1000,
                embed_dim=768,
                depth=12,
                n_heads=12,
                mlp_ratio=4.,
                qkv_bias=True,
                p=0.,
                attn_p=0.,
        ):
            super().__init__()

            self.patch_embed = PatchEmbed(
                    img_size=img_size,
                    patch_size=patch_size,
                    in_chans=in_chans,
                    embed_dim=embed_dim,
            )
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            self.pos_embed = nn.Parameter(
                    torch.zeros(1, 1 + self.patch_embed.n_patches, embed_dim)
            )
            self.pos_drop = nn.Dropout(p=p)

            self.blocks = nn.ModuleList(
                [
                    Block(
                        dim=embed_dim,
                        n_heads=n_heads,
                        mlp_ratio=mlp_ratio,
                        qkv_bias=qkv_bias,
                        p=p,
                        attn_p=attn_p,
                    )
                    for _ in range(depth)
                ]
            )

            self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
            self.head = nn.Linear(embed_dim, n_classes)


        def forward(self, x):
            """Run the forward pass.

            Parameters
            ----------
            x : torch.Tensor
                Shape `(n_samples, in_chans, img_size, img_size)`.

            Returns
            -------
            logits : torch.Tensor
                Logits over all the classes - `(n_samples, n_classes)`.
            """
            n_samples = x.shape[0]
            x = self.patch_embed(x)

            cls_token = self.cls_token.expand(
                    n_samples, -1, -1
            )  # (n_samples, 1, embed_dim)
            x = torch.cat((cls_token, x), dim=1)  # (n_samples, 1 + n_patches, embed_dim)
            x = x + self.pos_embed  # (n_samples, 1 + n_patches, embed_dim)
            x = self.pos_drop(x)

            for block in self.blocks:
                x = block(x)

            x = self.norm(x)

            cls_token_final = x[:, 0]  # just the CLS token
            x = self.head(cls_token_final)

            return x

    return VisionTransformer


def _program_vit(mod, log):
    torch = SeededTorch(mod, 17)
    VisionTransformer = _vit_classes(torch)

    # ---- verify.py ----
    def get_n_params(module):
        return sum(p.numel() for p in module.parameters() if p.requires_grad)

    def assert_tensors_equal(t1, t2):
        a1, a2 = t1.detach().numpy(), t2.detach().numpy()

        np.testing.assert_allclose(a1, a2)

    custom_config = {
            "img_size": 8,
            "in_chans": 3,
            "patch_size": 4,
            "embed_dim": 8,
            "depth": 2,
            "n_heads": 2,
            "qkv_bias": True,
            "mlp_ratio": 4,
            "n_classes": 10,
    }
    # the stand-in for timm's pretrained model
    model_official = init_params(mod, VisionTransformer(**custom_config), 19, scale=0.5)
    model_official.eval()
    print(type(model_official).__name__)

    model_custom = VisionTransformer(**custom_config)
    model_custom.eval()

    for (n_o, p_o), (n_c, p_c) in zip(
            model_official.named_parameters(), model_custom.named_parameters()
    ):
        assert p_o.numel() == p_c.numel()
        print(f"{n_o} | {n_c}")

        p_c.data[:] = p_o.data

        assert_tensors_equal(p_c.data, p_o.data)

    inp = torch.rand(1, 3, 8, 8)
    res_c = model_custom(inp)
    res_o = model_official(inp)

    # Asserts
    assert get_n_params(model_custom) == get_n_params(model_official)
    assert_tensors_equal(res_c, res_o)
    log("res_c", res_c)
    log("n_params", get_n_params(model_custom))
    log("grad_fn", res_c.grad_fn)

    # ---- forward.py ----
    k = 5

    imagenet_labels = dict(enumerate([f"class {i}\n" for i in range(10)]))

    model = model_custom
    model.eval()

    img = (np.random.RandomState(23).randint(0, 256, (8, 8, 3)).astype(np.uint8) / 128) - 1
    inp = torch.from_numpy(img).permute(2, 0, 1).unsqueeze(0).to(torch.float32)
    logits = model(inp)
    probs = torch.nn.functional.softmax(logits, dim=-1)

    top_probs, top_ixs = probs[0].topk(k)

    for i, (ix_, prob_) in enumerate(zip(top_ixs, top_probs)):
        ix = ix_.item()
        prob = prob_.item()
        cls = imagenet_labels[ix].strip()
        print(f"{i}: {cls:<45} --- {prob:.4f}")
    log("probs", probs)
    log("top", [top_probs, top_ixs])


def test_mildlyoverfitted_vision_transformer_verify_and_forward():
    run_both(_program_vit)
