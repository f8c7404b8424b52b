"""A thirty-fourth round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round33.py``, from repositories no earlier round used:
- lukasruff/Deep-SVDD-PyTorch: one-class Deep SVDD (bias-free LeNets with ``BatchNorm2d(affine=
  False)``, a ``ConvTranspose2d``/``F.interpolate`` autoencoder pretrained and its encoder keys
  copied by a filtered ``state_dict`` update; the hypersphere centre summed under ``no_grad`` and
  pushed away from 0 by boolean-mask assignment with ``abs(c)``; the soft-boundary radius
  ``R.data =`` a ``torch.tensor`` of the ``np.quantile`` of the batch distances (a numpy float32
  scalar, so the 0-d radius stays float32); ``MultiStepLR`` stepped before the optimizer and read through
  ``get_lr()``; Adam with ``amsgrad``; ``roc_auc_score`` of the test scores; the model saved as a
  dict of a float, a list and state dicts and loaded back);
- jefflai108/Contrastive-Predictive-Coding-PyTorch: CPC's ``CDCK2`` (a strided ``Conv1d``
  encoder, a ``batch_first`` GRU autoregressor whose weights are found through ``_all_weights``
  and ``__getattr__``, ``torch.empty`` buffers filled row by row through numpy-integer indices,
  a one-element index tensor used as an index and as a slice bound, ``Linear`` predictors picked
  from a ``ModuleList`` by ``np.int64``, the InfoNCE loss from ``nn.LogSoftmax()``/``nn.Softmax()``
  with their implicit dimension) trained through the repository's ``ScheduledOptim`` (Noam
  learning rates as numpy floats set into an amsgrad Adam's groups) with its ``train``/
  ``validation``/``snapshot`` loop, in ``test_public_programs_round34_cpc.py``;
- aliutkus/favor: the Performer's FAVOR attention (positive random features through a
  user-supplied ``randomizer``, orthogonalised by the deprecated ``torch.qr`` in float64 and
  transposed in place with ``t_()``, causal prefix sums by ``cumsum`` of key-value outer
  products, the ``norm.abs() <= eps`` guard), inside a tiny causal sequence model and a grid
  cross-attention trained a few steps, in ``test_public_programs_round34_favor.py`` (with Deep
  SVDD's shapes one file would take longer than a file may).

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import logging
import os
import re
import tempfile
import time
import warnings

import numpy as np
import pytest
from parity import run_both

from tests.api.test_public_programs_round33 import _np_init

torch = pytest.importorskip("torch")


class _LogToParity(logging.Handler):
    """The programs' ``logging`` records printed (``run_both`` compares the numbers in printed
    lines within its tolerances), with wall-clock timings and temporary directories blanked."""

    def __init__(self, log):
        super().__init__(logging.INFO)
        self._log = log

    def emit(self, record):
        msg = re.sub(r"([Tt]ime:?) [0-9.e+-]+", r"\1 -", record.getMessage())
        msg = re.sub(re.escape(tempfile.gettempdir()) + r"/\w+", "<tmpdir>", msg)
        print(msg)


def _captured_logging(log, name=None):
    logger = logging.getLogger(name)
    handler = _LogToParity(log)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def restore():
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    return restore


# ---- lukasruff/Deep-SVDD-PyTorch ------------------------------------------------------------------
def _svdd_classes(torch, warm_up_n_epochs):
    """src/networks/mnist_LeNet.py, src/base (BaseNet, BaseTrainer, TorchvisionDataset.loaders),
    src/optim/ae_trainer.py, src/optim/deepSVDD_trainer.py and src/deepSVDD.py as at the
    repository's head, unchanged but for: ``warm_up_n_epochs`` (10 in the trainer) passed in, so a
    three-epoch run reaches the radius update; the networks built directly in place of
    ``networks.main.build_network``/``build_autoencoder`` (a name -> class lookup)."""
    import json
    from abc import ABC, abstractmethod
    from sklearn.metrics import roc_auc_score
    nn, F, optim = torch.nn, torch.nn.functional, torch.optim
    DataLoader = torch.utils.data.DataLoader

    class BaseNet(nn.Module):
        """Base class for all neural networks."""

        def __init__(self):
            super().__init__()
            self.logger = logging.getLogger(self.__class__.__name__)
            self.rep_dim = None  # representation dimensionality, i.e. dim of the last layer

        def forward(self, *input):
            raise NotImplementedError

        def summary(self):
            """Network summary."""
            net_parameters = filter(lambda p: p.requires_grad, self.parameters())
            params = sum([np.prod(p.size()) for p in net_parameters])
            self.logger.info('Trainable parameters: {}'.format(params))
            self.logger.info(self)

    class MNIST_LeNet(BaseNet):

        def __init__(self):
            super().__init__()

            self.rep_dim = 32
            self.pool = nn.MaxPool2d(2, 2)

            self.conv1 = nn.Conv2d(1, 8, 5, bias=False, padding=2)
            self.bn1 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
            self.conv2 = nn.Conv2d(8, 4, 5, bias=False, padding=2)
            self.bn2 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
            self.fc1 = nn.Linear(4 * 7 * 7, self.rep_dim, bias=False)

        def forward(self, x):
            x = self.conv1(x)
            x = self.pool(F.leaky_relu(self.bn1(x)))
            x = self.conv2(x)
            x = self.pool(F.leaky_relu(self.bn2(x)))
            x = x.view(x.size(0), -1)
            x = self.fc1(x)
            return x

    class MNIST_LeNet_Autoencoder(BaseNet):

        def __init__(self):
            super().__init__()

            self.rep_dim = 32
            self.pool = nn.MaxPool2d(2, 2)

            # Encoder (must match the Deep SVDD network above)
            self.conv1 = nn.Conv2d(1, 8, 5, bias=False, padding=2)
            self.bn1 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
            self.conv2 = nn.Conv2d(8, 4, 5, bias=False, padding=2)
            self.bn2 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
            self.fc1 = nn.Linear(4 * 7 * 7, self.rep_dim, bias=False)

            # Decoder
            self.deconv1 = nn.ConvTranspose2d(2, 4, 5, bias=False, padding=2)
            self.bn3 = nn.BatchNorm2d(4, eps=1e-04, affine=False)
            self.deconv2 = nn.ConvTranspose2d(4, 8, 5, bias=False, padding=3)
            self.bn4 = nn.BatchNorm2d(8, eps=1e-04, affine=False)
            self.deconv3 = nn.ConvTranspose2d(8, 1, 5, bias=False, padding=2)

        def forward(self, x):
            x = self.conv1(x)
            x = self.pool(F.leaky_relu(self.bn1(x)))
            x = self.conv2(x)
            x = self.pool(F.leaky_relu(self.bn2(x)))
            x = x.view(x.size(0), -1)
            x = self.fc1(x)
            x = x.view(x.size(0), int(self.rep_dim / 16), 4, 4)
            x = F.interpolate(F.leaky_relu(x), scale_factor=2)
            x = self.deconv1(x)
            x = F.interpolate(F.leaky_relu(self.bn3(x)), scale_factor=2)
            x = self.deconv2(x)
            x = F.interpolate(F.leaky_relu(self.bn4(x)), scale_factor=2)
            x = self.deconv3(x)
            x = torch.sigmoid(x)

            return x

    class BaseADDataset(ABC):
        """Anomaly detection dataset base class."""

        def __init__(self, root: str):
            super().__init__()
            self.root = root  # root path to data

            self.n_classes = 2  # 0: normal, 1: outlier
            self.normal_classes = None  # tuple with original class labels that define the normal class
            self.outlier_classes = None  # tuple with original class labels that define the outlier class

            self.train_set = None  # must be of type torch.utils.data.Dataset
            self.test_set = None  # must be of type torch.utils.data.Dataset

        @abstractmethod
        def loaders(self, batch_size: int, shuffle_train=True, shuffle_test=False, num_workers: int = 0) -> (
                DataLoader, DataLoader):
            """Implement data loaders of type torch.utils.data.DataLoader for train_set and test_set."""
            pass

        def __repr__(self):
            return self.__class__.__name__

    class TorchvisionDataset(BaseADDataset):
        """TorchvisionDataset class for datasets already implemented in torchvision.datasets."""

        def __init__(self, root: str):
            super().__init__(root)

        def loaders(self, batch_size: int, shuffle_train=True, shuffle_test=False, num_workers: int = 0) -> (
                DataLoader, DataLoader):
            train_loader = DataLoader(dataset=self.train_set, batch_size=batch_size, shuffle=shuffle_train,
                                      num_workers=num_workers)
            test_loader = DataLoader(dataset=self.test_set, batch_size=batch_size, shuffle=shuffle_test,
                                     num_workers=num_workers)
            return train_loader, test_loader

    class BaseTrainer(ABC):
        """Trainer base class."""

        def __init__(self, optimizer_name: str, lr: float, n_epochs: int, lr_milestones: tuple, batch_size: int,
                     weight_decay: float, device: str, n_jobs_dataloader: int):
            super().__init__()
            self.optimizer_name = optimizer_name
            self.lr = lr
            self.n_epochs = n_epochs
            self.lr_milestones = lr_milestones
            self.batch_size = batch_size
            self.weight_decay = weight_decay
            self.device = device
            self.n_jobs_dataloader = n_jobs_dataloader

        @abstractmethod
        def train(self, dataset, net):
            pass

        @abstractmethod
        def test(self, dataset, net):
            pass

    class AETrainer(BaseTrainer):

        def __init__(self, optimizer_name: str = 'adam', lr: float = 0.001, n_epochs: int = 150,
                     lr_milestones: tuple = (), batch_size: int = 128, weight_decay: float = 1e-6,
                     device: str = 'cuda', n_jobs_dataloader: int = 0):
            super().__init__(optimizer_name, lr, n_epochs, lr_milestones, batch_size, weight_decay, device,
                             n_jobs_dataloader)

        def train(self, dataset, ae_net):
            logger = logging.getLogger()

            # Set device for network
            ae_net = ae_net.to(self.device)

            # Get train data loader
            train_loader, _ = dataset.loaders(batch_size=self.batch_size, num_workers=self.n_jobs_dataloader)

            # Set optimizer (Adam optimizer for now)
            optimizer = optim.Adam(ae_net.parameters(), lr=self.lr, weight_decay=self.weight_decay,
                                   amsgrad=self.optimizer_name == 'amsgrad')

            # Set learning rate scheduler
            scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=self.lr_milestones, gamma=0.1)

            # Training
            logger.info('Starting pretraining...')
            start_time = time.time()
            ae_net.train()
            for epoch in range(self.n_epochs):

                scheduler.step()
                if epoch in self.lr_milestones:
                    logger.info('  LR scheduler: new learning rate is %g' % float(scheduler.get_lr()[0]))

                loss_epoch = 0.0
                n_batches = 0
                epoch_start_time = time.time()
                for data in train_loader:
                    inputs, _, _ = data
                    inputs = inputs.to(self.device)

                    # Zero the network parameter gradients
                    optimizer.zero_grad()

                    # Update network parameters via backpropagation: forward + backward + optimize
                    outputs = ae_net(inputs)
                    scores = torch.sum((outputs - inputs) ** 2, dim=tuple(range(1, outputs.dim())))
                    loss = torch.mean(scores)
                    loss.backward()
                    optimizer.step()

                    loss_epoch += loss.item()
                    n_batches += 1

                # log epoch statistics
                epoch_train_time = time.time() - epoch_start_time
                logger.info('  Epoch {}/{}\t Time: {:.3f}\t Loss: {:.8f}'
                            .format(epoch + 1, self.n_epochs, epoch_train_time, loss_epoch / n_batches))

            pretrain_time = time.time() - start_time
            logger.info('Pretraining time: %.3f' % pretrain_time)
            logger.info('Finished pretraining.')

            return ae_net

        def test(self, dataset, ae_net):
            logger = logging.getLogger()

            # Set device for network
            ae_net = ae_net.to(self.device)

            # Get test data loader
            _, test_loader = dataset.loaders(batch_size=self.batch_size, num_workers=self.n_jobs_dataloader)

            # Testing
            logger.info('Testing autoencoder...')
            loss_epoch = 0.0
            n_batches = 0
            start_time = time.time()
            idx_label_score = []
            ae_net.eval()
            with torch.no_grad():
                for data in test_loader:
                    inputs, labels, idx = data
                    inputs = inputs.to(self.device)
                    outputs = ae_net(inputs)
                    scores = torch.sum((outputs - inputs) ** 2, dim=tuple(range(1, outputs.dim())))
                    loss = torch.mean(scores)

                    # Save triple of (idx, label, score) in a list
                    idx_label_score += list(zip(idx.cpu().data.numpy().tolist(),
                                                labels.cpu().data.numpy().tolist(),
                                                scores.cpu().data.numpy().tolist()))

                    loss_epoch += loss.item()
                    n_batches += 1

            logger.info('Test set Loss: {:.8f}'.format(loss_epoch / n_batches))

            _, labels, scores = zip(*idx_label_score)
            labels = np.array(labels)
            scores = np.array(scores)

            auc = roc_auc_score(labels, scores)
            logger.info('Test set AUC: {:.2f}%'.format(100. * auc))

            test_time = time.time() - start_time
            logger.info('Autoencoder testing time: %.3f' % test_time)
            logger.info('Finished testing autoencoder.')

    class DeepSVDDTrainer(BaseTrainer):

        def __init__(self, objective, R, c, nu: float, optimizer_name: str = 'adam', lr: float = 0.001,
                     n_epochs: int = 150, lr_milestones: tuple = (), batch_size: int = 128,
                     weight_decay: float = 1e-6, device: str = 'cuda', n_jobs_dataloader: int = 0):
            super().__init__(optimizer_name, lr, n_epochs, lr_milestones, batch_size, weight_decay, device,
                             n_jobs_dataloader)

            assert objective in ('one-class', 'soft-boundary'), "Objective must be either 'one-class' or 'soft-boundary'."
            self.objective = objective

            # Deep SVDD parameters
            self.R = torch.tensor(R, device=self.device)  # radius R initialized with 0 by default.
            self.c = torch.tensor(c, device=self.device) if c is not None else None
            self.nu = nu

            # Optimization parameters
            self.warm_up_n_epochs = warm_up_n_epochs  # number of training epochs for soft-boundary Deep SVDD before radius R gets updated

            # Results
            self.train_time = None
            self.test_auc = None
            self.test_time = None
            self.test_scores = None

        def train(self, dataset, net):
            logger = logging.getLogger()

            # Set device for network
            net = net.to(self.device)

            # Get train data loader
            train_loader, _ = dataset.loaders(batch_size=self.batch_size, num_workers=self.n_jobs_dataloader)

            # Set optimizer (Adam optimizer for now)
            optimizer = optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay,
                                   amsgrad=self.optimizer_name == 'amsgrad')

            # Set learning rate scheduler
            scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=self.lr_milestones, gamma=0.1)

            # Initialize hypersphere center c (if c not loaded)
            if self.c is None:
                logger.info('Initializing center c...')
                self.c = self.init_center_c(train_loader, net)
                logger.info('Center c initialized.')

            # Training
            logger.info('Starting training...')
            start_time = time.time()
            net.train()
            for epoch in range(self.n_epochs):

                scheduler.step()
                if epoch in self.lr_milestones:
                    logger.info('  LR scheduler: new learning rate is %g' % float(scheduler.get_lr()[0]))

                loss_epoch = 0.0
                n_batches = 0
                epoch_start_time = time.time()
                for data in train_loader:
                    inputs, _, _ = data
                    inputs = inputs.to(self.device)

                    # Zero the network parameter gradients
                    optimizer.zero_grad()

                    # Update network parameters via backpropagation: forward + backward + optimize
                    outputs = net(inputs)
                    dist = torch.sum((outputs - self.c) ** 2, dim=1)
                    if self.objective == 'soft-boundary':
                        scores = dist - self.R ** 2
                        loss = self.R ** 2 + (1 / self.nu) * torch.mean(torch.max(torch.zeros_like(scores), scores))
                    else:
                        loss = torch.mean(dist)
                    loss.backward()
                    optimizer.step()

                    # Update hypersphere radius R on mini-batch distances
                    if (self.objective == 'soft-boundary') and (epoch >= self.warm_up_n_epochs):
                        self.R.data = torch.tensor(get_radius(dist, self.nu), device=self.device)

                    loss_epoch += loss.item()
                    n_batches += 1

                # log epoch statistics
                epoch_train_time = time.time() - epoch_start_time
                logger.info('  Epoch {}/{}\t Time: {:.3f}\t Loss: {:.8f}'
                            .format(epoch + 1, self.n_epochs, epoch_train_time, loss_epoch / n_batches))

            self.train_time = time.time() - start_time
            logger.info('Training time: %.3f' % self.train_time)

            logger.info('Finished training.')

            return net

        def test(self, dataset, net):
            logger = logging.getLogger()

            # Set device for network
            net = net.to(self.device)

            # Get test data loader
            _, test_loader = dataset.loaders(batch_size=self.batch_size, num_workers=self.n_jobs_dataloader)

            # Testing
            logger.info('Starting testing...')
            start_time = time.time()
            idx_label_score = []
            net.eval()
            with torch.no_grad():
                for data in test_loader:
                    inputs, labels, idx = data
                    inputs = inputs.to(self.device)
                    outputs = net(inputs)
                    dist = torch.sum((outputs - self.c) ** 2, dim=1)
                    if self.objective == 'soft-boundary':
                        scores = dist - self.R ** 2
                    else:
                        scores = dist

                    # Save triples of (idx, label, score) in a list
                    idx_label_score += list(zip(idx.cpu().data.numpy().tolist(),
                                                labels.cpu().data.numpy().tolist(),
                                                scores.cpu().data.numpy().tolist()))

            self.test_time = time.time() - start_time
            logger.info('Testing time: %.3f' % self.test_time)

            self.test_scores = idx_label_score

            # Compute AUC
            _, labels, scores = zip(*idx_label_score)
            labels = np.array(labels)
            scores = np.array(scores)

            self.test_auc = roc_auc_score(labels, scores)
            logger.info('Test set AUC: {:.2f}%'.format(100. * self.test_auc))

            logger.info('Finished testing.')

        def init_center_c(self, train_loader, net, eps=0.1):
            """Initialize hypersphere center c as the mean from an initial forward pass on the data."""
            n_samples = 0
            c = torch.zeros(net.rep_dim, device=self.device)

            net.eval()
            with torch.no_grad():
                for data in train_loader:
                    # get the inputs of the batch
                    inputs, _, _ = data
                    inputs = inputs.to(self.device)
                    outputs = net(inputs)
                    n_samples += outputs.shape[0]
                    c += torch.sum(outputs, dim=0)

            c /= n_samples

            # If c_i is too close to 0, set to +-eps. Reason: a zero unit can be trivially matched with zero weights.
            c[(abs(c) < eps) & (c < 0)] = -eps
            c[(abs(c) < eps) & (c > 0)] = eps

            return c

    def get_radius(dist, nu: float):
        """Optimally solve for radius R via the (1-nu)-quantile of distances."""
        return np.quantile(np.sqrt(dist.clone().data.cpu().numpy()), 1 - nu)

    class DeepSVDD(object):
        """A class for the Deep SVDD method."""

        def __init__(self, objective: str = 'one-class', nu: float = 0.1):
            """Inits DeepSVDD with one of the two objectives and hyperparameter nu."""

            assert objective in ('one-class', 'soft-boundary'), "Objective must be either 'one-class' or 'soft-boundary'."
            self.objective = objective
            assert (0 < nu) & (nu <= 1), "For hyperparameter nu, it must hold: 0 < nu <= 1."
            self.nu = nu
            self.R = 0.0  # hypersphere radius R
            self.c = None  # hypersphere center c

            self.net_name = None
            self.net = None  # neural network \phi

            self.trainer = None
            self.optimizer_name = None

            self.ae_net = None  # autoencoder network for pretraining
            self.ae_trainer = None
            self.ae_optimizer_name = None

            self.results = {
                'train_time': None,
                'test_auc': None,
                'test_time': None,
                'test_scores': None,
            }

        def set_network(self, net_name):
            """Builds the neural network \\phi."""
            self.net_name = net_name
            self.net = MNIST_LeNet()

        def train(self, dataset, optimizer_name: str = 'adam', lr: float = 0.001, n_epochs: int = 50,
                  lr_milestones: tuple = (), batch_size: int = 128, weight_decay: float = 1e-6, device: str = 'cuda',
                  n_jobs_dataloader: int = 0):
            """Trains the Deep SVDD model on the training data."""

            self.optimizer_name = optimizer_name
            self.trainer = DeepSVDDTrainer(self.objective, self.R, self.c, self.nu, optimizer_name, lr=lr,
                                           n_epochs=n_epochs, lr_milestones=lr_milestones, batch_size=batch_size,
                                           weight_decay=weight_decay, device=device, n_jobs_dataloader=n_jobs_dataloader)
            # Get the model
            self.net = self.trainer.train(dataset, self.net)
            self.R = float(self.trainer.R.cpu().data.numpy())  # get float
            self.c = self.trainer.c.cpu().data.numpy().tolist()  # get list
            self.results['train_time'] = self.trainer.train_time

        def test(self, dataset, device: str = 'cuda', n_jobs_dataloader: int = 0):
            """Tests the Deep SVDD model on the test data."""

            if self.trainer is None:
                self.trainer = DeepSVDDTrainer(self.objective, self.R, self.c, self.nu,
                                               device=device, n_jobs_dataloader=n_jobs_dataloader)

            self.trainer.test(dataset, self.net)
            # Get results
            self.results['test_auc'] = self.trainer.test_auc
            self.results['test_time'] = self.trainer.test_time
            self.results['test_scores'] = self.trainer.test_scores

        def pretrain(self, dataset, optimizer_name: str = 'adam', lr: float = 0.001, n_epochs: int = 100,
                     lr_milestones: tuple = (), batch_size: int = 128, weight_decay: float = 1e-6, device: str = 'cuda',
                     n_jobs_dataloader: int = 0):
            """Pretrains the weights for the Deep SVDD network \\phi via autoencoder."""

            self.ae_net = MNIST_LeNet_Autoencoder()
            self.ae_optimizer_name = optimizer_name
            self.ae_trainer = AETrainer(optimizer_name, lr=lr, n_epochs=n_epochs, lr_milestones=lr_milestones,
                                        batch_size=batch_size, weight_decay=weight_decay, device=device,
                                        n_jobs_dataloader=n_jobs_dataloader)
            self.ae_net = self.ae_trainer.train(dataset, self.ae_net)
            self.ae_trainer.test(dataset, self.ae_net)
            self.init_network_weights_from_pretraining()

        def init_network_weights_from_pretraining(self):
            """Initialize the Deep SVDD network weights from the encoder weights of the pretraining autoencoder."""

            net_dict = self.net.state_dict()
            ae_net_dict = self.ae_net.state_dict()

            # Filter out decoder network keys
            ae_net_dict = {k: v for k, v in ae_net_dict.items() if k in net_dict}
            # Overwrite values in the existing state_dict
            net_dict.update(ae_net_dict)
            # Load the new state_dict
            self.net.load_state_dict(net_dict)

        def save_results(self, export_json):
            """Save results dict to a JSON-file."""
            with open(export_json, 'w') as fp:
                json.dump(self.results, fp)

        def save_model(self, export_model, save_ae=True):
            """Save Deep SVDD model to export_model."""

            net_dict = self.net.state_dict()
            ae_net_dict = self.ae_net.state_dict() if save_ae else None

            torch.save({'R': self.R,
                        'c': self.c,
                        'net_dict': net_dict,
                        'ae_net_dict': ae_net_dict}, export_model)

        def load_model(self, model_path, load_ae=False):
            """Load Deep SVDD model from model_path."""

            model_dict = torch.load(model_path)

            self.R = model_dict['R']
            self.c = model_dict['c']
            self.net.load_state_dict(model_dict['net_dict'])
            if load_ae:
                if self.ae_net is None:
                    self.ae_net = MNIST_LeNet_Autoencoder()
                self.ae_net.load_state_dict(model_dict['ae_net_dict'])

    def global_contrast_normalization(x, scale='l2'):
        """src/datasets/preprocessing.py, unchanged."""
        assert scale in ('l1', 'l2')

        n_features = int(np.prod(x.shape))

        mean = torch.mean(x)  # mean over all features (pixels) per sample
        x -= mean

        if scale == 'l1':
            x_scale = torch.mean(torch.abs(x))

        if scale == 'l2':
            x_scale = torch.sqrt(torch.sum(x ** 2)) / n_features

        x /= x_scale

        return x

    return dict(DeepSVDD=DeepSVDD, DeepSVDDTrainer=DeepSVDDTrainer, TorchvisionDataset=TorchvisionDataset, MNIST_LeNet=MNIST_LeNet,
                MNIST_LeNet_Autoencoder=MNIST_LeNet_Autoencoder, get_radius=get_radius,
                global_contrast_normalization=global_contrast_normalization)


def _svdd_dataset(torch, classes, n_train=8, n_test=8, seed=0):
    """A stand-in for src/datasets/mnist.py's MNIST_Dataset: uint8 28x28 digits from numpy (the
    normal class brighter in the centre), through the repository's transform (``ToTensor``'s /255,
    ``global_contrast_normalization(x, scale='l1')``, ``Normalize`` by the class's min-max pair)
    and ``target_transform`` (1 for an outlier class); items are MyMNIST's ``(img, target,
    index)``. The loaders keep the repository's signature with ``shuffle_train=False`` (a shuffled
    order comes from torch's generator)."""
    gcn = classes["global_contrast_normalization"]
    rs = np.random.RandomState(seed)
    normal_class = 0
    min_max = (-0.8826567065619495, 9.001545489292527)

    def images(n, labels):
        out = rs.randint(0, 60, (n, 28, 28)).astype(np.uint8)
        for img, label in zip(out, labels):
            if label == normal_class:
                img[8:20, 8:20] += np.uint8(150)
            else:
                img[2:10, 14:26] += np.uint8(120 + 10 * label)
        return out

    class StandIn(torch.utils.data.Dataset):
        def __init__(self, digits, labels):
            self.data, self.targets = digits, labels
            self.outlier_classes = list(range(1, 10))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            img = torch.tensor(self.data[index], dtype=torch.float32).unsqueeze(0) / 255.
            img = gcn(img, scale='l1')
            img = (img - min_max[0]) / (min_max[1] - min_max[0])
            target = int(self.targets[index] in self.outlier_classes)
            return img, target, index  # only line changed

    class MNIST_Dataset(classes["TorchvisionDataset"]):
        def __init__(self, root, normal_class=0):
            super().__init__(root)
            self.n_classes = 2
            self.normal_classes = tuple([normal_class])
            self.outlier_classes = list(range(0, 10))
            self.outlier_classes.remove(normal_class)
            train_labels = np.zeros(n_train, dtype=np.int64)
            test_labels = np.array([0, 3, 0, 7, 0, 1, 9, 0][:n_test])
            self.train_set = StandIn(images(n_train, train_labels), train_labels)
            self.test_set = StandIn(images(n_test, test_labels), test_labels)

        def loaders(self, batch_size, shuffle_train=False, shuffle_test=False, num_workers=0):
            return super().loaders(batch_size, shuffle_train, shuffle_test, num_workers)

    return MNIST_Dataset("data", normal_class)


# src/main.py's pipeline at tiny sizes (8 normal training digits, 8 test digits, batch 4; the
# autoencoder pretrained 2 epochs with amsgrad and milestone (1,) so ``get_lr()`` is read after
# the decay; Deep SVDD trained 3 epochs with milestone (2,)), then save_model/load_model into a
# fresh DeepSVDD and a test from the loaded R and c (a trainer built from the loaded float and
# list). The networks' parameters come from numpy after construction (their default inits draw
# from torch's generator); the logging records are compared with their timings blanked.
@pytest.mark.parametrize("objective", ["one-class", "soft-boundary"])
def test_deep_svdd(objective):
    def program(torch, log):
        classes = _svdd_classes(torch, warm_up_n_epochs=1)
        restore = _captured_logging(log)
        tmp = tempfile.mkdtemp()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                dataset = _svdd_dataset(torch, classes)
                deep_SVDD = classes["DeepSVDD"](objective, 0.25)
                deep_SVDD.set_network('mnist_LeNet')
                _np_init(torch, deep_SVDD.net, 1, scale=0.2)
                deep_SVDD.net.summary()

                deep_SVDD.ae_net = None
                # pretrain builds its own autoencoder: initialise it the same way as it is built
                ae_cls = classes["MNIST_LeNet_Autoencoder"]
                orig_init = ae_cls.__init__

                def seeded_init(self):
                    orig_init(self)
                    _np_init(torch, self, 2, scale=0.2)
                ae_cls.__init__ = seeded_init
                deep_SVDD.pretrain(dataset, optimizer_name='amsgrad', lr=1e-3, n_epochs=2,
                                   lr_milestones=(1,), batch_size=4, weight_decay=1e-6, device='cpu')
                log("encoder after pretraining", list(deep_SVDD.net.state_dict().items()))

                deep_SVDD.train(dataset, optimizer_name='adam', lr=1e-3, n_epochs=3, lr_milestones=(2,),
                                batch_size=4, weight_decay=1e-6, device='cpu')
                # the soft-boundary radius: the tensor of numpy's float32 quantile ``R.data`` was given
                log("R c", [deep_SVDD.trainer.R, deep_SVDD.R, deep_SVDD.c])
                deep_SVDD.test(dataset, device='cpu')
                log("auc", deep_SVDD.results['test_auc'])
                log("scores", deep_SVDD.results['test_scores'])

                deep_SVDD.save_results(export_json=os.path.join(tmp, 'results.json'))
                deep_SVDD.save_model(export_model=os.path.join(tmp, 'model.tar'))

                loaded = classes["DeepSVDD"](objective, 0.25)
                loaded.set_network('mnist_LeNet')
                loaded.load_model(model_path=os.path.join(tmp, 'model.tar'), load_ae=True)
                log("loaded R c", [loaded.R, loaded.c])
                loaded.test(dataset, device='cpu')
                log("loaded scores", loaded.results['test_scores'])
                log("trainer R", [loaded.trainer.R, loaded.trainer.c])
            log("warnings", sorted({(w.category.__name__, str(w.message)[:60]) for w in caught}))
        finally:
            restore()

    run_both(program)
