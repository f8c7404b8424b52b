"""A twenty-second round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round21.py``, from repositories no earlier round used:

- swyoon/pytorch-minimal-gaussian-process: exact GP regression (``torch.linalg.cholesky``,
  ``torch.linalg.solve`` with the triangular factor and its transpose, ``torch.diag``, the
  log marginal likelihood's log-determinant), float64 hyperparameters from
  ``torch.tensor(np.log(...))`` mixed with float32 data, trained with Adam through its
  ``train_step`` and then predicting mean and variance;
- kumar-shridhar/PyTorch-BayesianCNN: Bayes-by-Backprop ``BBBLinear`` layers (reparameterized
  weights through ``log1p(exp(rho))``, the closed-form Gaussian KL of ``calculate_kl``), the
  ``ModuleWrapper`` forward that sums ``kl_loss()`` over ``self.modules()``, ``FlattenLayer``,
  ``ELBO`` (``nll_loss * train_size + beta * kl``), ``logmeanexp`` over an ensemble written into
  ``outputs[:, :, j]`` slices, ``get_beta``, ``adjust_learning_rate`` and ``train_model`` /
  ``validate_model``.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why.
"""
import numpy as np
import pytest

from parity import run_both

torch = pytest.importorskip("torch")


# swyoon/pytorch-minimal-gaussian-process gp.py (the GP class, unchanged but for docstrings),
# driven the way its README does: ``gp.train_step(X, y, opt)`` with Adam a few times, then
# ``mu, var = gp.forward(x_test)``. Sizes: 6 training points in 1-d, 3 Adam steps, 4 test points.
# ``torch.tensor(np.log(1.))`` makes the hyperparameters 0-d float64 tensors; with float32 data
# the kernel stays float32 (0-d tensors do not promote dimensioned ones) but ``D * 0.5 *
# np.log(2 * np.pi)`` is a numpy float64 scalar; the logged dtypes check both.
def test_minimal_gaussian_process():
    def program(torch, log):
        nn = torch.nn

        class GP(nn.Module):
            def __init__(self, length_scale=1., noise_scale=1., amplitude_scale=1.):
                super().__init__()
                self.length_scale_ = nn.Parameter(torch.tensor(np.log(length_scale)))
                self.noise_scale_ = nn.Parameter(torch.tensor(np.log(noise_scale)))
                self.amplitude_scale_ = nn.Parameter(torch.tensor(np.log(amplitude_scale)))

            @property
            def length_scale(self):
                return torch.exp(self.length_scale_)

            @property
            def noise_scale(self):
                return torch.exp(self.noise_scale_)

            @property
            def amplitude_scale(self):
                return torch.exp(self.amplitude_scale_)

            def forward(self, x):
                y = self.y; L = self.L; alpha = self.alpha
                k = self.kernel_mat(self.X, x)
                v = torch.linalg.solve(L, k)
                mu = k.T.mm(alpha)
                var = self.noise_scale - torch.diag(v.T.mm(v))
                return mu, var

            def fit(self, X, y):
                D = X.shape[1]
                K = self.kernel_mat_self(X)
                L = torch.linalg.cholesky(K)
                alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
                marginal_likelihood = -0.5 * y.T.mm(alpha) - torch.log(torch.diag(L)).sum() - D * 0.5 * np.log(2 * np.pi)
                self.X = X; self.y = y; self.L = L; self.alpha = alpha; self.K = K
                return marginal_likelihood

            def kernel_mat_self(self, X):
                sq = (X ** 2).sum(dim=1, keepdim=True)
                sqdist = sq + sq.T - 2 *X.mm(X.T)
                return self.amplitude_scale * torch.exp(- 0.5 * sqdist / self.length_scale) + self.noise_scale * torch.eye(len(X))

            def kernel_mat(self, X, Z):
                Xsq = (X ** 2).sum(dim=1, keepdim=True)
                Zsq = (Z ** 2).sum(dim=1, keepdim=True)
                sqdist = Xsq + Zsq.T - 2 * X.mm(Z.T)
                return self.amplitude_scale * torch.exp(- 0.5 * sqdist / self.length_scale)

            def train_step(self, X, y, opt):
                opt.zero_grad()
                nll = - self.fit(X, y).sum()
                nll.backward()
                opt.step()
                return {'loss': nll.item(), 'length': self.length_scale.detach().cpu(),
                        'noise': self.noise_scale.detach().cpu(),
                        'amplitude': self.amplitude_scale.detach().cpu()}

        rs = np.random.RandomState(0)
        Xn = np.sort(rs.uniform(-2, 2, size=(6, 1)), axis=0).astype(np.float32)
        X = torch.tensor(Xn)
        y = torch.sin(X * 2) + 0.1 * torch.tensor(rs.standard_normal((6, 1)).astype(np.float32))
        gp = GP(length_scale=0.5, noise_scale=0.3, amplitude_scale=1.5)
        log("param_dtypes", [p.dtype for p in gp.parameters()])
        opt = torch.optim.Adam(gp.parameters(), lr=0.05)
        for _ in range(3):
            out = gp.train_step(X, y, opt)
            log("loss", out['loss'])
            log("length", out['length'])
            log("noise", out['noise'])
            log("amplitude", out['amplitude'])
        log("K", gp.K)
        log("L", gp.L)
        log("alpha", gp.alpha)
        ml = gp.fit(X, y)
        log("ml", ml)
        log("ml_dtype_shape", (ml.dtype, tuple(ml.shape)))
        log("grads", [p.grad for p in gp.parameters()])
        x_test = torch.tensor(np.linspace(-2.5, 2.5, 4, dtype=np.float32)[:, None])
        with torch.no_grad():
            mu, var = gp(x_test)
        log("mu", mu)
        log("var", var)
        log("pred_dtypes", (mu.dtype, var.dtype))
        # a non-positive-definite kernel: cholesky raises torch.linalg.LinAlgError
        try:
            torch.linalg.cholesky(-gp.K.detach())
            log("cholesky_error", None)
        except torch.linalg.LinAlgError as e:
            log("cholesky_error", (isinstance(e, RuntimeError), str(e)))

    run_both(program)


# kumar-shridhar/PyTorch-BayesianCNN layers/BBB/BBBLinear.py (BBBLinear), layers/misc.py
# (ModuleWrapper, FlattenLayer), metrics.py (ELBO, calculate_kl, get_beta, acc) and utils.py
# (logmeanexp, adjust_learning_rate), main_bayesian.py's train_model / validate_model, unchanged but
# for the device lines (CPU) and the weight noise: ``torch.empty(size).normal_(0, 1)`` becomes
# ``eps(size)``, draws from one seeded numpy stream (the two libraries' random streams differ),
# and ``reset_parameters``' ``normal_`` draws are replaced by numpy values afterwards. The model is
# a BBBLeNet-style ModuleWrapper with FlattenLayer + two BBBLinear layers around a Softplus; sizes:
# 6 samples of 3x1, hidden and classes 3 (one weight shape throughout), batches of 3, num_ens=2,
# 2 epochs of Adam.
def test_bayesian_cnn_bbb_linear_elbo():
    def program(torch, log):
        nn, F = torch.nn, torch.nn.functional
        Parameter = torch.nn.Parameter
        noise = np.random.RandomState(7)

        def eps(size):
            return torch.tensor(noise.standard_normal(tuple(size)).astype(np.float32))

        def calculate_kl(mu_q, sig_q, mu_p, sig_p):
            kl = 0.5 * (2 * torch.log(sig_p / sig_q) - 1 + (sig_q / sig_p).pow(2) + ((mu_p - mu_q) / sig_p).pow(2)).sum()
            return kl

        KL_DIV = calculate_kl

        class ELBO(nn.Module):
            def __init__(self, train_size):
                super(ELBO, self).__init__()
                self.train_size = train_size

            def forward(self, input, target, kl, beta):
                assert not target.requires_grad
                return F.nll_loss(input, target, reduction='mean') * self.train_size + beta * kl

        def acc(outputs, targets):
            return np.mean(outputs.cpu().numpy().argmax(axis=1) == targets.data.cpu().numpy())

        def get_beta(batch_idx, m, beta_type, epoch, num_epochs):
            if type(beta_type) is float:
                return beta_type

            if beta_type == "Blundell":
                beta = 2 ** (m - (batch_idx + 1)) / (2 ** m - 1)
            elif beta_type == "Soenderby":
                if epoch is None or num_epochs is None:
                    raise ValueError('Soenderby method requires both epoch and num_epochs to be passed.')
                beta = min(epoch / (num_epochs // 4), 1)
            elif beta_type == "Standard":
                beta = 1 / m
            else:
                beta = 0
            return beta

        def logmeanexp(x, dim=None, keepdim=False):
            """Stable computation of log(mean(exp(x))"""
            if dim is None:
                x, dim = x.view(-1), 0
            x_max, _ = torch.max(x, dim, keepdim=True)
            x = x_max + torch.log(torch.mean(torch.exp(x - x_max), dim, keepdim=True))
            return x if keepdim else x.squeeze(dim)

        def adjust_learning_rate(optimizer, lr):
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr

        class ModuleWrapper(nn.Module):
            """Wrapper for nn.Module with support for arbitrary flags and a universal forward pass"""

            def __init__(self):
                super(ModuleWrapper, self).__init__()

            def set_flag(self, flag_name, value):
                setattr(self, flag_name, value)
                for m in self.children():
                    if hasattr(m, 'set_flag'):
                        m.set_flag(flag_name, value)

            def forward(self, x):
                for module in self.children():
                    x = module(x)

                kl = 0.0
                for module in self.modules():
                    if hasattr(module, 'kl_loss'):
                        kl = kl + module.kl_loss()

                return x, kl

        class FlattenLayer(ModuleWrapper):

            def __init__(self, num_features):
                super(FlattenLayer, self).__init__()
                self.num_features = num_features

            def forward(self, x):
                return x.view(-1, self.num_features)

        class BBBLinear(ModuleWrapper):
            def __init__(self, in_features, out_features, bias=True, priors=None):
                super(BBBLinear, self).__init__()
                self.in_features = in_features
                self.out_features = out_features
                self.use_bias = bias
                self.device = torch.device("cpu")

                if priors is None:
                    priors = {
                        'prior_mu': 0,
                        'prior_sigma': 0.1,
                        'posterior_mu_initial': (0, 0.1),
                        'posterior_rho_initial': (-3, 0.1),
                    }
                self.prior_mu = priors['prior_mu']
                self.prior_sigma = priors['prior_sigma']
                self.posterior_mu_initial = priors['posterior_mu_initial']
                self.posterior_rho_initial = priors['posterior_rho_initial']

                self.W_mu = Parameter(torch.empty((out_features, in_features), device=self.device))
                self.W_rho = Parameter(torch.empty((out_features, in_features), device=self.device))

                if self.use_bias:
                    self.bias_mu = Parameter(torch.empty((out_features), device=self.device))
                    self.bias_rho = Parameter(torch.empty((out_features), device=self.device))
                else:
                    self.register_parameter('bias_mu', None)
                    self.register_parameter('bias_rho', None)

                self.reset_parameters()

            def reset_parameters(self):
                self.W_mu.data.normal_(*self.posterior_mu_initial)
                self.W_rho.data.normal_(*self.posterior_rho_initial)

                if self.use_bias:
                    self.bias_mu.data.normal_(*self.posterior_mu_initial)
                    self.bias_rho.data.normal_(*self.posterior_rho_initial)

            def forward(self, input, sample=True):
                if self.training or sample:
                    W_eps = eps(self.W_mu.size()).to(self.device)
                    self.W_sigma = torch.log1p(torch.exp(self.W_rho))
                    weight = self.W_mu + W_eps * self.W_sigma

                    if self.use_bias:
                        bias_eps = eps(self.bias_mu.size()).to(self.device)
                        self.bias_sigma = torch.log1p(torch.exp(self.bias_rho))
                        bias = self.bias_mu + bias_eps * self.bias_sigma
                    else:
                        bias = None
                else:
                    weight = self.W_mu
                    bias = self.bias_mu if self.use_bias else None

                return F.linear(input, weight, bias)

            def kl_loss(self):
                kl = KL_DIV(self.prior_mu, self.prior_sigma, self.W_mu, self.W_sigma)
                if self.use_bias:
                    kl += KL_DIV(self.prior_mu, self.prior_sigma, self.bias_mu, self.bias_sigma)
                return kl

        class BBBMLP(ModuleWrapper):
            # the shape of BBBLeNet's classifier head: flatten, fc, activation, fc
            def __init__(self, outputs, inputs, priors=None):
                super(BBBMLP, self).__init__()
                self.num_classes = outputs
                self.flatten = FlattenLayer(inputs)
                self.fc1 = BBBLinear(inputs, 3, bias=True, priors=priors)
                self.act1 = nn.Softplus()
                self.fc2 = BBBLinear(3, outputs, bias=False, priors=priors)

        def train_model(net, optimizer, criterion, trainloader, num_ens=1, beta_type=0.1, epoch=None, num_epochs=None):
            net.train()
            training_loss = 0.0
            accs = []
            kl_list = []
            for i, (inputs, labels) in enumerate(trainloader, 1):

                optimizer.zero_grad()

                outputs = torch.zeros(inputs.shape[0], net.num_classes, num_ens)

                kl = 0.0
                for j in range(num_ens):
                    net_out, _kl = net(inputs)
                    kl += _kl
                    outputs[:, :, j] = F.log_softmax(net_out, dim=1)

                kl = kl / num_ens
                kl_list.append(kl.item())
                log_outputs = logmeanexp(outputs, dim=2)

                beta = get_beta(i-1, len(trainloader), beta_type, epoch, num_epochs)
                loss = criterion(log_outputs, labels, kl, beta)
                loss.backward()
                optimizer.step()

                accs.append(acc(log_outputs.data, labels))
                training_loss += loss.cpu().data.numpy()
            return training_loss/len(trainloader), np.mean(accs), np.mean(kl_list)

        def validate_model(net, criterion, validloader, num_ens=1, beta_type=0.1, epoch=None, num_epochs=None):
            """Calculate ensemble accuracy and NLL Loss"""
            net.eval()
            valid_loss = 0.0
            accs = []

            for i, (inputs, labels) in enumerate(validloader):
                outputs = torch.zeros(inputs.shape[0], net.num_classes, num_ens)
                kl = 0.0
                for j in range(num_ens):
                    net_out, _kl = net(inputs)
                    kl += _kl
                    outputs[:, :, j] = F.log_softmax(net_out, dim=1).data

                log_outputs = logmeanexp(outputs, dim=2)

                beta = get_beta(i-1, len(validloader), beta_type, epoch, num_epochs)
                valid_loss += criterion(log_outputs, labels, kl, beta).item()
                accs.append(acc(log_outputs, labels))

            return valid_loss/len(validloader), np.mean(accs)

        rs = np.random.RandomState(3)
        net = BBBMLP(3, 3)
        with torch.no_grad():
            for name, p in net.named_parameters():
                lo, hi = (-3.2, -2.8) if 'rho' in name else (-0.5, 0.5)
                p.copy_(torch.tensor(rs.uniform(lo, hi, size=tuple(p.shape)).astype(np.float32)))
        log("params", [n for n, _ in net.named_parameters()])
        xs = torch.tensor(rs.standard_normal((6, 3, 1)).astype(np.float32))
        ys = torch.tensor(np.array([0, 1, 2, 2, 1, 0]))
        trainloader = [(xs[:3], ys[:3]), (xs[3:], ys[3:])]
        criterion = ELBO(6)
        optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
        n_epochs = 2
        for epoch in range(n_epochs):
            adjust_learning_rate(optimizer, 0.01 * (n_epochs - epoch) / n_epochs)
            train_loss, train_acc, train_kl = train_model(net, optimizer, criterion, trainloader, num_ens=2,
                                                          beta_type="Blundell", epoch=epoch, num_epochs=n_epochs)
            log("train", (train_loss, train_acc, train_kl))
            log("train_loss_type", type(train_loss).__name__)
            valid_loss, valid_acc = validate_model(net, criterion, trainloader[:1], num_ens=2,
                                                   beta_type="Standard")
            log("valid", (valid_loss, valid_acc))
        for name, p in net.named_parameters():
            log(name, p)
            log(name + "_grad", p.grad)
        log("W_sigma", net.fc1.W_sigma)
        log("kl_module", net.fc1.kl_loss())
        # eval with sample=False uses the posterior means only
        net.eval()
        net.set_flag('checked', True)
        log("flag", (net.checked, net.fc1.checked, hasattr(net.act1, 'checked')))
        log("mean_out", net.fc1(xs.view(-1, 3), sample=False))
        try:
            get_beta(0, 2, "Soenderby", None, None)
        except ValueError as e:
            log("beta_error", str(e))

    run_both(program)
