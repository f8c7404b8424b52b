"""A twenty-third round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round22.py``, from repositories no earlier round used:

- bermanmaxim/LovaszSoftmax: the Lovasz-Softmax loss (``torch.sort`` descending, the
  permutation reused as an index, ``cumsum``, ``lovasz_grad``'s in-place ``jaccard[1:p] = ...``
  slice write, ``torch.dot``, void pixels dropped through a bool mask and
  ``valid.nonzero().squeeze()``, the generator ``mean`` with ``acc += v``), trained with Adam as
  its multiclass demo notebook does, with the ``iou``/``iou_binary`` metrics;
- EmilienDupont/neural-processes: the 1-d Neural Process (``Encoder`` / ``MuSigmaEncoder`` /
  ``Decoder``, ``Normal`` latents, ``kl_divergence``), its ``SineData`` dataset through a
  ``DataLoader``, ``context_target_split``'s numpy index arrays and ``NeuralProcessTrainer``
  (``Normal(loc, scale).loc`` is ``loc`` itself when the shapes agree: its ``grad_fn`` is the
  decoder's ``ViewBackward0``, not an ``ExpandBackward0``);
- swyoon/pytorch-energy-based-model: ``sample_langevin`` (``autograd.grad(..., only_inputs=True)``
  on a non-leaf chain) over the float64 toy potentials of ``potential_fn`` and over an ``FCNet``
  energy, and ``train_energy_based_model.py``'s contrastive-divergence loop on the ``rings``
  data with ``clip_grad_norm_``;
- JosephKJ/PyTorch-MAML-and-Reptile: the Reptile and first-order MAML sine-wave experiment
  (``deepcopy(model.state_dict())``, ``param.data -= lr * param.grad.data``, interpolated
  ``load_state_dict``).

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import random
from copy import deepcopy
from itertools import filterfalse as ifilterfalse
from math import pi

import numpy as np
import pytest

from parity import init_params, printer, run_both

torch = pytest.importorskip("torch")


class _NoPlot:
    """matplotlib.pyplot stand-in: every call does nothing."""

    def __getattr__(self, name):
        return lambda *a, **k: None


def _randn_like(rs, torch):
    """``torch.randn_like`` drawn from a numpy stream (torch's and tracegrad's streams differ)."""
    def randn_like(t):
        return torch.tensor(rs.standard_normal(tuple(t.shape)).astype(np.float32)).to(t.dtype)
    return randn_like


# ---- bermanmaxim/LovaszSoftmax ------------------------------------------------------------------
def _lovasz_module(torch):
    """pytorch/lovasz_losses.py, unchanged but for docstrings and ``classes is 'present'`` ->
    ``classes == 'present'`` (an ``is`` against a str literal is a SyntaxWarning)."""
    Variable = torch.autograd.Variable
    F = torch.nn.functional

    def lovasz_grad(gt_sorted):
        p = len(gt_sorted)
        gts = gt_sorted.sum()
        intersection = gts - gt_sorted.float().cumsum(0)
        union = gts + (1 - gt_sorted).float().cumsum(0)
        jaccard = 1. - intersection / union
        if p > 1: # cover 1-pixel case
            jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]
        return jaccard

    def iou_binary(preds, labels, EMPTY=1., ignore=None, per_image=True):
        if not per_image:
            preds, labels = (preds,), (labels,)
        ious = []
        for pred, label in zip(preds, labels):
            intersection = ((label == 1) & (pred == 1)).sum()
            union = ((label == 1) | ((pred == 1) & (label != ignore))).sum()
            if not union:
                iou = EMPTY
            else:
                iou = float(intersection) / float(union)
            ious.append(iou)
        iou = mean(ious)    # mean accross images if per_image
        return 100 * iou

    def iou(preds, labels, C, EMPTY=1., ignore=None, per_image=False):
        if not per_image:
            preds, labels = (preds,), (labels,)
        ious = []
        for pred, label in zip(preds, labels):
            iou = []
            for i in range(C):
                if i != ignore: # The ignored label is sometimes among predicted classes (ENet - CityScapes)
                    intersection = ((label == i) & (pred == i)).sum()
                    union = ((label == i) | ((pred == i) & (label != ignore))).sum()
                    if not union:
                        iou.append(EMPTY)
                    else:
                        iou.append(float(intersection) / float(union))
            ious.append(iou)
        ious = [mean(iou) for iou in zip(*ious)] # mean accross images if per_image
        return 100 * np.array(ious)

    def lovasz_hinge(logits, labels, per_image=True, ignore=None):
        if per_image:
            loss = mean(lovasz_hinge_flat(*flatten_binary_scores(log.unsqueeze(0), lab.unsqueeze(0), ignore))
                              for log, lab in zip(logits, labels))
        else:
            loss = lovasz_hinge_flat(*flatten_binary_scores(logits, labels, ignore))
        return loss

    def lovasz_hinge_flat(logits, labels):
        if len(labels) == 0:
            # only void pixels, the gradients should be 0
            return logits.sum() * 0.
        signs = 2. * labels.float() - 1.
        errors = (1. - logits * Variable(signs))
        errors_sorted, perm = torch.sort(errors, dim=0, descending=True)
        perm = perm.data
        gt_sorted = labels[perm]
        grad = lovasz_grad(gt_sorted)
        loss = torch.dot(F.relu(errors_sorted), Variable(grad))
        return loss

    def flatten_binary_scores(scores, labels, ignore=None):
        scores = scores.view(-1)
        labels = labels.view(-1)
        if ignore is None:
            return scores, labels
        valid = (labels != ignore)
        vscores = scores[valid]
        vlabels = labels[valid]
        return vscores, vlabels

    class StableBCELoss(torch.nn.modules.Module):
        def __init__(self):
             super(StableBCELoss, self).__init__()
        def forward(self, input, target):
             neg_abs = - input.abs()
             loss = input.clamp(min=0) - input * target + (1 + neg_abs.exp()).log()
             return loss.mean()

    def binary_xloss(logits, labels, ignore=None):
        logits, labels = flatten_binary_scores(logits, labels, ignore)
        loss = StableBCELoss()(logits, Variable(labels.float()))
        return loss

    def lovasz_softmax(probas, labels, classes='present', per_image=False, ignore=None):
        if per_image:
            loss = mean(lovasz_softmax_flat(*flatten_probas(prob.unsqueeze(0), lab.unsqueeze(0), ignore), classes=classes)
                              for prob, lab in zip(probas, labels))
        else:
            loss = lovasz_softmax_flat(*flatten_probas(probas, labels, ignore), classes=classes)
        return loss

    def lovasz_softmax_flat(probas, labels, classes='present'):
        if probas.numel() == 0:
            # only void pixels, the gradients should be 0
            return probas * 0.
        C = probas.size(1)
        losses = []
        class_to_sum = list(range(C)) if classes in ['all', 'present'] else classes
        for c in class_to_sum:
            fg = (labels == c).float() # foreground for class c
            if (classes == 'present' and fg.sum() == 0):
                continue
            if C == 1:
                if len(classes) > 1:
                    raise ValueError('Sigmoid output possible only with 1 class')
                class_pred = probas[:, 0]
            else:
                class_pred = probas[:, c]
            errors = (Variable(fg) - class_pred).abs()
            errors_sorted, perm = torch.sort(errors, 0, descending=True)
            perm = perm.data
            fg_sorted = fg[perm]
            losses.append(torch.dot(errors_sorted, Variable(lovasz_grad(fg_sorted))))
        return mean(losses)

    def flatten_probas(probas, labels, ignore=None):
        if probas.dim() == 3:
            # assumes output of a sigmoid layer
            B, H, W = probas.size()
            probas = probas.view(B, 1, H, W)
        B, C, H, W = probas.size()
        probas = probas.permute(0, 2, 3, 1).contiguous().view(-1, C)  # B * H * W, C = P, C
        labels = labels.view(-1)
        if ignore is None:
            return probas, labels
        valid = (labels != ignore)
        vprobas = probas[valid.nonzero().squeeze()]
        vlabels = labels[valid]
        return vprobas, vlabels

    def xloss(logits, labels, ignore=None):
        return F.cross_entropy(logits, Variable(labels), ignore_index=255)

    def isnan(x):
        return x != x

    def mean(l, ignore_nan=False, empty=0):
        l = iter(l)
        if ignore_nan:
            l = ifilterfalse(isnan, l)
        try:
            n = 1
            acc = next(l)
        except StopIteration:
            if empty == 'raise':
                raise ValueError('Empty mean')
            return empty
        for n, v in enumerate(l, 2):
            acc += v
        if n == 1:
            return acc
        return acc / n

    class L:
        pass
    for name, fn in list(locals().items()):
        if callable(fn) and name not in ("L", "Variable", "F"):
            setattr(L, name, staticmethod(fn) if not isinstance(fn, type) else fn)
    return L


def _triangles(rs, B, H, categories):
    """demo_helpers/demo_utils.py's ``dummy_triangles`` without PIL: a background of
    ``categories[0]`` with one filled random triangle per further category, in order."""
    out = np.full((B, H, H), categories[0], dtype=np.int64)
    yy, xx = np.mgrid[0:H, 0:H]
    for b in range(B):
        for c in categories[1:]:
            p = rs.randint(H, size=(3, 2)).astype(np.float64)
            d = [(xx - p[j - 1, 0]) * (p[j, 1] - p[j - 1, 1]) - (yy - p[j - 1, 1]) * (p[j, 0] - p[j - 1, 0])
                 for j in range(3)]
            inside = ((d[0] >= 0) & (d[1] >= 0) & (d[2] >= 0)) | ((d[0] <= 0) & (d[1] <= 0) & (d[2] <= 0))
            out[b][inside] = c
    return out


# pytorch/demo_multiclass.ipynb driven over lovasz_losses.py, with 2 images of 6x6 pixels (3
# classes plus void 255) and 2 Adam steps instead of 1000. Changed lines: the triangle label maps
# and the gaussian features come from numpy (``dummy_triangles`` draws with PIL; ``.random_(C)``
# and ``.normal_(0, 2)`` are torch random streams), ``cuda(...)``, the cross-entropy comparison
# run and the plots/tqdm are dropped, and the model's initial weights are numpy-seeded
# (``init_params``). (The binary demo's per-image ``lovasz_hinge`` sorts a different length per
# image: each length compiles its own programs, too slow for this file's budget.)
def test_lovasz_softmax_demo():
    def program(torch, log):
        L = _lovasz_module(torch)
        nn, F, Adam = torch.nn, torch.nn.functional, torch.optim.Adam
        Variable = torch.autograd.Variable
        from collections import OrderedDict as OD

        # ---- demo_multiclass
        rs = np.random.RandomState(18)
        C = 3
        B = 2
        H = 6
        labels = torch.from_numpy(_triangles(rs, B, H, [0, 255, 1, 2])).long()
        B, H, W = labels.size()
        labels_ = labels.clone()
        void = labels_ == 255
        labels_[void] = torch.from_numpy(rs.randint(0, C, size=int(void.sum()))).long()  # random feats for void
        labels_1hot = torch.zeros(B, C, H, W)
        labels_1hot.scatter_(1, labels_.unsqueeze(1), 1);
        feats = labels_1hot.clone().float()
        feats += torch.from_numpy(rs.normal(0, 2, size=(B, C, H, W)).astype(np.float32))  # additive gaussian noise
        feats = Variable(feats)

        class Model(nn.Module):
            def __init__(self):
                super(Model, self).__init__()
                self.conv = nn.Conv2d(C, C, 3, padding=1)

            def forward(self, x):
                return x + self.conv(x)

        m = init_params(torch, Model(), 0)
        init_state_dict = OD([(n, p.clone()) for (n, p) in m.state_dict().items()])
        _, preds = m(feats).data.max(1)
        log("initial batch-IoUs", L.iou(preds, labels, C, ignore=255, per_image=False))
        log("initial mIoU", np.mean(L.iou(preds, labels, C, ignore=255, per_image=False)))

        m.load_state_dict(init_state_dict)
        optimizer = Adam(m.parameters(), lr=0.005)
        loss_plot = []
        iou_plot = []
        for iter in range(2):
            optimizer.zero_grad()
            out = m(feats)
            out = F.softmax(out, dim=1)
            loss = L.lovasz_softmax(out, labels, ignore=255)
            loss.backward()
            optimizer.step()
            _, preds = out.data.max(1)
            loss_plot.append(loss.item())
            iou_plot.append(L.iou_binary(preds, labels, ignore=255, per_image=False))
        log("loss", loss_plot)
        log("iou", iou_plot)
        log("grad", m.conv.weight.grad)
        _, preds = m(feats).data.max(1)
        log("final batch-IoUs", L.iou(preds, labels, C, ignore=255, per_image=False))

    run_both(program)


# ---- EmilienDupont/neural-processes ------------------------------------------------------------
# models.py (Encoder, MuSigmaEncoder, Decoder), neural_process.py (NeuralProcess), datasets.py
# (SineData), utils.py (context_target_split) and training.py (NeuralProcessTrainer, without its
# image branch), driven as example-1d.ipynb does: train, then ``neuralprocess.training = False``
# and predict from a context. Sizes: r/z/h dims 2 (most weights share one shape), 4 sine
# functions of 10 points in batches of 2, 3 context points and no extra target points (context
# and target encoders then share shapes: fewer programs to compile), one epoch (2 Adam steps), 6
# prediction points. Changed lines: ``Normal.rsample``'s noise comes from numpy (a ``Normal``
# subclass overriding ``rsample`` as loc + eps * scale; the random streams differ),
# ``shuffle=True`` -> ``shuffle=False`` (the sampler draws from torch's generator), weights are
# numpy-seeded, and ``print`` logs the numbers it prints (full-precision floats compare with
# tolerances).
def test_neural_process_sine_regression():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader
        kl_divergence = torch.distributions.kl.kl_divergence
        from random import randint
        print = printer(log)  # noqa: A001
        noise = np.random.RandomState(3)

        class Normal(torch.distributions.Normal):
            def rsample(self, sample_shape=torch.Size()):
                eps = torch.from_numpy(noise.standard_normal(tuple(self.loc.shape)).astype(np.float32))
                return self.loc + eps * self.scale

        class Encoder(nn.Module):
            def __init__(self, x_dim, y_dim, h_dim, r_dim):
                super(Encoder, self).__init__()
                self.x_dim = x_dim
                self.y_dim = y_dim
                self.h_dim = h_dim
                self.r_dim = r_dim
                layers = [nn.Linear(x_dim + y_dim, h_dim),
                          nn.ReLU(inplace=True),
                          nn.Linear(h_dim, h_dim),
                          nn.ReLU(inplace=True),
                          nn.Linear(h_dim, r_dim)]
                self.input_to_hidden = nn.Sequential(*layers)

            def forward(self, x, y):
                input_pairs = torch.cat((x, y), dim=1)
                return self.input_to_hidden(input_pairs)

        class MuSigmaEncoder(nn.Module):
            def __init__(self, r_dim, z_dim):
                super(MuSigmaEncoder, self).__init__()
                self.r_dim = r_dim
                self.z_dim = z_dim
                self.r_to_hidden = nn.Linear(r_dim, r_dim)
                self.hidden_to_mu = nn.Linear(r_dim, z_dim)
                self.hidden_to_sigma = nn.Linear(r_dim, z_dim)

            def forward(self, r):
                hidden = torch.relu(self.r_to_hidden(r))
                mu = self.hidden_to_mu(hidden)
                sigma = 0.1 + 0.9 * torch.sigmoid(self.hidden_to_sigma(hidden))
                return mu, sigma

        class Decoder(nn.Module):
            def __init__(self, x_dim, z_dim, h_dim, y_dim):
                super(Decoder, self).__init__()
                self.x_dim = x_dim
                self.z_dim = z_dim
                self.h_dim = h_dim
                self.y_dim = y_dim
                layers = [nn.Linear(x_dim + z_dim, h_dim),
                          nn.ReLU(inplace=True),
                          nn.Linear(h_dim, h_dim),
                          nn.ReLU(inplace=True),
                          nn.Linear(h_dim, h_dim),
                          nn.ReLU(inplace=True)]
                self.xz_to_hidden = nn.Sequential(*layers)
                self.hidden_to_mu = nn.Linear(h_dim, y_dim)
                self.hidden_to_sigma = nn.Linear(h_dim, y_dim)

            def forward(self, x, z):
                batch_size, num_points, _ = x.size()
                z = z.unsqueeze(1).repeat(1, num_points, 1)
                x_flat = x.view(batch_size * num_points, self.x_dim)
                z_flat = z.view(batch_size * num_points, self.z_dim)
                input_pairs = torch.cat((x_flat, z_flat), dim=1)
                hidden = self.xz_to_hidden(input_pairs)
                mu = self.hidden_to_mu(hidden)
                pre_sigma = self.hidden_to_sigma(hidden)
                mu = mu.view(batch_size, num_points, self.y_dim)
                pre_sigma = pre_sigma.view(batch_size, num_points, self.y_dim)
                sigma = 0.1 + 0.9 * F.softplus(pre_sigma)
                return mu, sigma

        class NeuralProcess(nn.Module):
            def __init__(self, x_dim, y_dim, r_dim, z_dim, h_dim):
                super(NeuralProcess, self).__init__()
                self.x_dim = x_dim
                self.y_dim = y_dim
                self.r_dim = r_dim
                self.z_dim = z_dim
                self.h_dim = h_dim
                self.xy_to_r = Encoder(x_dim, y_dim, h_dim, r_dim)
                self.r_to_mu_sigma = MuSigmaEncoder(r_dim, z_dim)
                self.xz_to_y = Decoder(x_dim, z_dim, h_dim, y_dim)

            def aggregate(self, r_i):
                return torch.mean(r_i, dim=1)

            def xy_to_mu_sigma(self, x, y):
                batch_size, num_points, _ = x.size()
                x_flat = x.view(batch_size * num_points, self.x_dim)
                y_flat = y.contiguous().view(batch_size * num_points, self.y_dim)
                r_i_flat = self.xy_to_r(x_flat, y_flat)
                r_i = r_i_flat.view(batch_size, num_points, self.r_dim)
                r = self.aggregate(r_i)
                return self.r_to_mu_sigma(r)

            def forward(self, x_context, y_context, x_target, y_target=None):
                batch_size, num_context, x_dim = x_context.size()
                _, num_target, _ = x_target.size()
                _, _, y_dim = y_context.size()

                if self.training:
                    mu_target, sigma_target = self.xy_to_mu_sigma(x_target, y_target)
                    mu_context, sigma_context = self.xy_to_mu_sigma(x_context, y_context)
                    q_target = Normal(mu_target, sigma_target)
                    q_context = Normal(mu_context, sigma_context)
                    z_sample = q_target.rsample()
                    y_pred_mu, y_pred_sigma = self.xz_to_y(x_target, z_sample)
                    p_y_pred = Normal(y_pred_mu, y_pred_sigma)
                    return p_y_pred, q_target, q_context
                else:
                    mu_context, sigma_context = self.xy_to_mu_sigma(x_context, y_context)
                    q_context = Normal(mu_context, sigma_context)
                    z_sample = q_context.rsample()
                    y_pred_mu, y_pred_sigma = self.xz_to_y(x_target, z_sample)
                    p_y_pred = Normal(y_pred_mu, y_pred_sigma)
                    return p_y_pred

        class SineData(Dataset):
            def __init__(self, amplitude_range=(-1., 1.), shift_range=(-.5, .5),
                         num_samples=1000, num_points=100):
                self.amplitude_range = amplitude_range
                self.shift_range = shift_range
                self.num_samples = num_samples
                self.num_points = num_points
                self.x_dim = 1  # x and y dim are fixed for this dataset.
                self.y_dim = 1
                self.data = []
                a_min, a_max = amplitude_range
                b_min, b_max = shift_range
                for i in range(num_samples):
                    a = (a_max - a_min) * np.random.rand() + a_min
                    b = (b_max - b_min) * np.random.rand() + b_min
                    x = torch.linspace(-pi, pi, num_points).unsqueeze(1)
                    y = a * torch.sin(x - b)
                    self.data.append((x, y))

            def __getitem__(self, index):
                return self.data[index]

            def __len__(self):
                return self.num_samples

        def context_target_split(x, y, num_context, num_extra_target):
            num_points = x.shape[1]
            locations = np.random.choice(num_points,
                                         size=num_context + num_extra_target,
                                         replace=False)
            x_context = x[:, locations[:num_context], :]
            y_context = y[:, locations[:num_context], :]
            x_target = x[:, locations, :]
            y_target = y[:, locations, :]
            return x_context, y_context, x_target, y_target

        class NeuralProcessTrainer():
            def __init__(self, device, neural_process, optimizer, num_context_range,
                         num_extra_target_range, print_freq=100):
                self.device = device
                self.neural_process = neural_process
                self.optimizer = optimizer
                self.num_context_range = num_context_range
                self.num_extra_target_range = num_extra_target_range
                self.print_freq = print_freq
                self.is_img = False
                self.steps = 0
                self.epoch_loss_history = []

            def train(self, data_loader, epochs):
                for epoch in range(epochs):
                    epoch_loss = 0.
                    for i, data in enumerate(data_loader):
                        self.optimizer.zero_grad()
                        num_context = randint(*self.num_context_range)
                        num_extra_target = randint(*self.num_extra_target_range)
                        x, y = data
                        x_context, y_context, x_target, y_target = \
                            context_target_split(x, y, num_context, num_extra_target)
                        p_y_pred, q_target, q_context = \
                            self.neural_process(x_context, y_context, x_target, y_target)
                        loss = self._loss(p_y_pred, y_target, q_target, q_context)
                        loss.backward()
                        self.optimizer.step()
                        epoch_loss += loss.item()
                        self.steps += 1
                        if self.steps % self.print_freq == 0:
                            print("iteration {}, loss {:.3f}".format(self.steps, loss.item()))
                    print("Epoch: {}, Avg_loss: {}".format(epoch, epoch_loss / len(data_loader)))
                    self.epoch_loss_history.append(epoch_loss / len(data_loader))

            def _loss(self, p_y_pred, y_target, q_target, q_context):
                log_likelihood = p_y_pred.log_prob(y_target).mean(dim=0).sum()
                kl = kl_divergence(q_target, q_context).mean(dim=0).sum()
                return -log_likelihood + kl

        np.random.seed(0)
        random.seed(0)
        device = torch.device("cpu")
        dataset = SineData(amplitude_range=(-1., 1.), shift_range=(-.5, .5), num_samples=4, num_points=10)
        x_dim = 1
        y_dim = 1
        r_dim = 2
        z_dim = 2
        h_dim = 2
        neuralprocess = init_params(torch, NeuralProcess(x_dim, y_dim, r_dim, z_dim, h_dim), 1, scale=0.5)
        batch_size = 2
        num_context = 3
        num_target = 0
        data_loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
        optimizer = torch.optim.Adam(neuralprocess.parameters(), lr=3e-4)
        np_trainer = NeuralProcessTrainer(device, neuralprocess, optimizer,
                                          num_context_range=(num_context, num_context),
                                          num_extra_target_range=(num_target, num_target),
                                          print_freq=1)
        neuralprocess.training = True
        np_trainer.train(data_loader, 1)
        log("history", np_trainer.epoch_loss_history)
        log("grads", [p.grad for p in neuralprocess.parameters()])

        for batch in data_loader:
            break
        x, y = batch
        x_context, y_context, _, _ = context_target_split(x[0:1], y[0:1], num_context, num_target)
        x_target = torch.Tensor(np.linspace(-pi, pi, 6))
        x_target = x_target.unsqueeze(1).unsqueeze(0)
        neuralprocess.training = False
        p_y_pred = neuralprocess(x_context, y_context, x_target)
        mu = p_y_pred.loc.detach()
        log("mu", mu)
        log("scale", p_y_pred.scale)
        log("pred grad_fn", (p_y_pred.loc.grad_fn, p_y_pred.scale.grad_fn))

    run_both(program)


def _ebm_module(torch, randn_like):
    """langevin.py's ``sample_langevin`` and models.py's ``get_activation`` and ``FCNet``, unchanged
    but for ``torch.randn_like``, which is ``randn_like`` (also used by
    tests/compile/test_public_patterns_round24.py)."""
    nn, autograd = torch.nn, torch.autograd

    def sample_langevin(x, model, stepsize, n_steps, noise_scale=None, intermediate_samples=False):
        if noise_scale is None:
            noise_scale = np.sqrt(stepsize * 2)

        l_samples = []
        l_dynamics = []
        x.requires_grad = True
        for _ in range(n_steps):
            l_samples.append(x.detach().to('cpu'))
            noise = randn_like(x) * noise_scale
            out = model(x)
            grad = autograd.grad(out.sum(), x, only_inputs=True)[0]
            dynamics = stepsize * grad + noise
            x = x + dynamics
            l_samples.append(x.detach().to('cpu'))
            l_dynamics.append(dynamics.detach().to('cpu'))

        if intermediate_samples:
            return l_samples, l_dynamics
        else:
            return l_samples[-1]

    def get_activation(s_act):
        if s_act == 'relu':
            return nn.ReLU(inplace=True)
        elif s_act == 'sigmoid':
            return nn.Sigmoid()
        elif s_act == 'softplus':
            return nn.Softplus()
        elif s_act == 'linear':
            return None
        elif s_act == 'tanh':
            return nn.Tanh()
        elif s_act == 'leakyrelu':
            return nn.LeakyReLU(0.2, inplace=True)
        elif s_act == 'softmax':
            return nn.Softmax(dim=1)
        else:
            raise ValueError(f'Unexpected activation: {s_act}')

    class FCNet(nn.Module):
        """fully-connected network"""
        def __init__(self, in_dim, out_dim, l_hidden=(50,), activation='sigmoid', out_activation='linear'):
            super(FCNet, self).__init__()
            l_neurons = tuple(l_hidden) + (out_dim,)
            if isinstance(activation, str):
                activation = (activation,) * len(l_hidden)
            activation = tuple(activation) + (out_activation,)

            l_layer = []
            prev_dim = in_dim
            for i_layer, (n_hidden, act) in enumerate(zip(l_neurons, activation)):
                l_layer.append(nn.Linear(prev_dim, n_hidden))
                act_fn = get_activation(act)
                if act_fn is not None:
                    l_layer.append(act_fn)
                prev_dim = n_hidden

            self.net = nn.Sequential(*l_layer)
            self.in_dim = in_dim
            self.out_shape = (out_dim,)

        def forward(self, x):
            return self.net(x)

    return sample_langevin, get_activation, FCNet


# ---- swyoon/pytorch-energy-based-model ---------------------------------------------------------
# langevin.py (sample_langevin), models.py (FCNet, get_activation), data.py (potential_fn,
# sample_2d_data's '8gaussians' branch) and train_energy_based_model.py's loop, driven as
# make_langevin_gif.py (Langevin dynamics on the potential 'u2': the energy on a float64 grid,
# intermediate samples and dynamics) and the training script do. Sizes: a 2x2 grid, 4 Langevin
# particles and 2 Langevin steps, 8 training points in batches of 4, FCNet hidden (8, 8), one
# epoch. Changed lines: ``torch.randn``/``torch.randn_like``/``torch.randint`` draw from numpy
# (the random streams differ), ``.cuda()`` is dropped, the DataLoader does not shuffle and has no
# workers, weights are numpy-seeded, and ``print`` logs the numbers it prints.
def test_energy_based_model_langevin():
    def program(torch, log):
        Adam = torch.optim.Adam
        TensorDataset, DataLoader = torch.utils.data.TensorDataset, torch.utils.data.DataLoader
        import math
        print = printer(log)  # noqa: A001
        rs = np.random.RandomState(5)
        randn_like = _randn_like(rs, torch)

        sample_langevin, get_activation, FCNet = _ebm_module(torch, randn_like)

        def potential_fn(dataset):
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
            z = torch.from_numpy(rs.standard_normal((n_samples, 2)).astype(np.float32))
            if dataset == '8gaussians':
                scale = 4
                sq2 = 1/math.sqrt(2)
                centers = [(1,0), (-1,0), (0,1), (0,-1), (sq2,sq2), (-sq2,sq2), (sq2,-sq2), (-sq2,-sq2)]
                centers = torch.tensor([(scale * x, scale * y) for x,y in centers])
                return sq2 * (0.5 * z + centers[torch.from_numpy(rs.randint(len(centers), size=(n_samples,)))])
            else:
                raise RuntimeError('Invalid `dataset` to sample from.')

        # make_langevin_gif.py
        grid_lim = 4
        n_grid = 2
        stepsize = 0.03
        n_steps = 2
        energy_fn = potential_fn('u2')
        xs = np.linspace(- grid_lim, grid_lim, n_grid)
        ys = np.linspace(- grid_lim, grid_lim, n_grid)
        XX, YY = np.meshgrid(xs, ys)
        grids = np.stack([XX.flatten(), YY.flatten()]).T
        e_grid = energy_fn(torch.tensor(grids))
        log("e_grid", np.exp(-e_grid.view(2, 2)))
        grad_log_p = lambda x: - energy_fn(x)
        x0 = torch.from_numpy(rs.standard_normal((4, 2)).astype(np.float32))
        l_sample, l_dynamics = sample_langevin(x0, grad_log_p, stepsize, n_steps, intermediate_samples=True)
        log("x0", (x0.requires_grad, x0.is_leaf))
        log("samples", l_sample)
        log("dynamics", l_dynamics)

        # train_energy_based_model.py 8gaussians FCNet
        X_train = sample_2d_data('8gaussians', 8)
        train_dl = DataLoader(TensorDataset(X_train), batch_size=4, shuffle=False, num_workers=0)
        model = FCNet(in_dim=2, out_dim=1, l_hidden=(8, 8), activation='relu', out_activation='linear')
        init_params(torch, model, 2, scale=0.5)
        opt = Adam(model.parameters(), lr=1e-3)
        alpha = 1.
        for i_epoch in range(1):
            l_loss = []
            for pos_x, in train_dl:
                neg_x = randn_like(pos_x)
                neg_x = sample_langevin(neg_x, model, 0.1, n_steps, intermediate_samples=False)
                log("neg_x", (neg_x, neg_x.requires_grad))

                opt.zero_grad()
                pos_out = model(pos_x)
                neg_out = model(neg_x)

                loss = (pos_out - neg_out) + alpha * (pos_out ** 2 + neg_out ** 2)
                loss = loss.mean()
                loss.backward()

                log("total_norm", torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1))
                opt.step()

                l_loss.append(loss.item())
            print(np.mean(l_loss))
        log("weights", [p for p in model.parameters()])

    run_both(program)


# ---- JosephKJ/PyTorch-MAML-and-Reptile ---------------------------------------------------------
# main.py's ``experiment(run)`` for run='Reptile' and run='MAML' (first-order: the query-batch
# gradient taken at the adapted weights, applied after ``load_state_dict(weights_before)``).
# Sizes: 2 outer iterations (the plot/evaluation block runs at iteration 0, with its 32 inner
# steps), hidden width 16. Changed lines: matplotlib's ``plt`` is a do-nothing stand-in, the
# model's initial weights are numpy-seeded (``torch.manual_seed`` streams differ), and
# ``n_iterations``/the width are arguments.
def test_reptile_and_first_order_maml_sine():
    def program(torch, log):
        nn = torch.nn
        ag = torch.autograd
        plt = _NoPlot()

        def experiment(run, plot=True, n_iterations=2, width=16):
            seed = 0
            inner_step_size = 0.02  # stepsize in inner SGD
            inner_epochs = 1  # number of epochs of each inner SGD
            outer_stepsize_reptile = 0.1  # stepsize of outer optimization, i.e., meta-optimization
            outer_stepsize_maml = 0.01

            rng = np.random.RandomState(seed)
            torch.manual_seed(seed)

            # Define task distribution
            x_all = np.linspace(-5, 5, 50)[:, None]  # All of the x points
            n_train = 10  # Size of training minibatches

            def gen_task():
                "Generate classification problem"
                phase = rng.uniform(low=0, high=2 * np.pi)
                ampl = rng.uniform(0.1, 5)
                f_randomsine = lambda x: np.sin(x + phase) * ampl
                return f_randomsine

            # Define model. Reptile paper uses ReLU, but Tanh gives slightly better results
            model = nn.Sequential(
                nn.Linear(1, width),
                nn.Tanh(),
                nn.Linear(width, width),
                nn.Tanh(),
                nn.Linear(width, 1),
            )
            init_params(torch, model, 4, scale=0.5)

            def to_torch(x):
                return ag.Variable(torch.Tensor(x))

            def train_on_batch(x, y):
                x = to_torch(x)
                y = to_torch(y)
                model.zero_grad()
                ypred = model(x)
                loss = (ypred - y).pow(2).mean()
                loss.backward()
                for param in model.parameters():
                    param.data -= inner_step_size * param.grad.data

            def predict(x):
                x = to_torch(x)
                return model(x).data.numpy()

            # Choose a fixed task and minibatch for visualization
            f_plot = gen_task()
            xtrain_plot = x_all[rng.choice(len(x_all), size=n_train)]

            # Training loop
            for iteration in range(n_iterations):
                weights_before = deepcopy(model.state_dict())

                # Generate task
                f = gen_task()
                y_all = f(x_all)

                # Do SGD on this task
                inds = rng.permutation(len(x_all))
                train_ind = inds[:-1 * n_train]
                val_ind = inds[-1 * n_train:]       # Val contains 1/5th of the sine wave

                for _ in range(inner_epochs):
                    for start in range(0, len(train_ind), n_train):
                        mbinds = train_ind[start:start + n_train]
                        train_on_batch(x_all[mbinds], y_all[mbinds])

                if run == 'MAML':
                    outer_step_size = outer_stepsize_maml * (1 - iteration / n_iterations)  # linear schedule
                    for start in range(0, len(val_ind), n_train):
                        dpinds = val_ind[start:start + n_train]
                        x = to_torch(x_all[dpinds])
                        y = to_torch(y_all[dpinds])

                        # Compute the grads
                        model.zero_grad()
                        y_pred = model(x)
                        loss = (y_pred - y).pow(2).mean()
                        loss.backward()

                        # Reload the model
                        model.load_state_dict(weights_before)

                        # SGD on the params
                        for param in model.parameters():
                            param.data -= outer_step_size * param.grad.data
                else:
                    # Interpolate between current weights and trained weights from this task
                    # I.e. (weights_before - weights_after) is the meta-gradient
                    weights_after = model.state_dict()
                    outerstepsize = outer_stepsize_reptile * (1 - iteration / n_iterations)  # linear schedule
                    model.load_state_dict({name: weights_before[name] + (weights_after[name] - weights_before[name]) * outerstepsize
                                           for name in weights_before})

                # Periodically plot the results on a particular task and minibatch
                if plot and iteration == 0 or (iteration + 1) % 1000 == 0:
                    plt.cla()
                    f = f_plot
                    weights_before = deepcopy(model.state_dict())  # save snapshot before evaluation
                    plt.plot(x_all, predict(x_all), label="pred after 0", color=(0, 0, 1))
                    for inneriter in range(32):
                        train_on_batch(xtrain_plot, f(xtrain_plot))
                        if (inneriter + 1) % 8 == 0:
                            frac = (inneriter + 1) / 32
                            plt.plot(x_all, predict(x_all), label="pred after %i" % (inneriter + 1), color=(frac, 0, 1 - frac))
                    plt.plot(x_all, f(x_all), label="true", color=(0, 1, 0))
                    lossval = np.square(predict(x_all) - f(x_all)).mean()
                    plt.plot(xtrain_plot, f(xtrain_plot), "x", label="train", color="k")
                    plt.ylim(-4, 4)
                    plt.legend(loc="lower right")
                    plt.pause(0.01)
                    model.load_state_dict(weights_before)  # restore from snapshot
                    print(f"-----------------------------")
                    print(f"iteration               {iteration + 1}")
                    print(f"loss on plotted curve   {lossval:.3f}")  # would be better to average loss over a set of examples, but this is optimized for brevity
                    log("lossval", lossval)
            return model

        for run in ("Reptile", "MAML"):
            model = experiment(run)
            log(run + " weights", list(model.state_dict().values()))
            log(run + " grads", [p.grad for p in model.parameters()])

    run_both(program)
