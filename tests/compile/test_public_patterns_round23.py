"""Round-22 public programs (``tests/api/test_public_programs_round22.py`` runs them whole and
eagerly against torch), condensed to their model, loss, optimizer and training step and run
compiled == eager == torch with the harness (tiny sizes, numpy data):

- swyoon/pytorch-minimal-gaussian-process: the GP's hyperparameter step (``fit``'s
  ``torch.linalg.cholesky`` and two ``torch.linalg.solve`` calls on the factor, the
  log-determinant from ``torch.diag(L)``, float64 0-d parameters against float32 data, Adam) and
  its prediction (``forward`` reads the tensors ``fit`` stored on the module). On one fixed
  training set (the README's use) the step traces once, with no break, and ``fit``'s attribute
  writes hold the compiled run's values afterwards; with the data passed as arguments ``fit``'s
  ``self.X = X`` keeps a reference to an argument, so that step breaks and runs eagerly (an
  xfail records the missing support with a minimal step);
- kumar-shridhar/PyTorch-BayesianCNN: ``train_model``'s step over one ``BBBLinear`` in a
  ``ModuleWrapper`` with the layer's own ``torch.empty(size).normal_(0, 1)`` weight noise drawn
  inside the compiled step (the default generator advances as eagerly), an ensemble of two
  forwards written into ``outputs[:, :, j]``, ``logmeanexp``, ``ELBO`` and Adam: one trace, no
  break (compiled == eager tracegrad; torch's random stream differs, so no torch comparison).
"""
import numpy as np
import pytest

from ._harness import check_compiled


# ---- swyoon/pytorch-minimal-gaussian-process gp.py (GP; train_step without its .item() dict) -----
def _gp_class(mod):
    nn = mod.nn

    class GP(nn.Module):
        def __init__(self, length_scale=1., noise_scale=1., amplitude_scale=1.):
            super().__init__()
            self.length_scale_ = nn.Parameter(mod.tensor(np.log(length_scale)))
            self.noise_scale_ = nn.Parameter(mod.tensor(np.log(noise_scale)))
            self.amplitude_scale_ = nn.Parameter(mod.tensor(np.log(amplitude_scale)))

        @property
        def length_scale(self):
            return mod.exp(self.length_scale_)

        @property
        def noise_scale(self):
            return mod.exp(self.noise_scale_)

        @property
        def amplitude_scale(self):
            return mod.exp(self.amplitude_scale_)

        def forward(self, x):
            y = self.y; L = self.L; alpha = self.alpha
            k = self.kernel_mat(self.X, x)
            v = mod.linalg.solve(L, k)
            mu = k.T.mm(alpha)
            var = self.noise_scale - mod.diag(v.T.mm(v))
            return mu, var

        def fit(self, X, y):
            D = X.shape[1]
            K = self.kernel_mat_self(X)
            L = mod.linalg.cholesky(K)
            alpha = mod.linalg.solve(L.T, mod.linalg.solve(L, y))
            marginal_likelihood = -0.5 * y.T.mm(alpha) - mod.log(mod.diag(L)).sum() - D * 0.5 * np.log(2 * np.pi)
            self.X = X; self.y = y; self.L = L; self.alpha = alpha; self.K = K
            return marginal_likelihood

        def kernel_mat_self(self, X):
            sq = (X ** 2).sum(dim=1, keepdim=True)
            sqdist = sq + sq.T - 2 *X.mm(X.T)
            return self.amplitude_scale * mod.exp(- 0.5 * sqdist / self.length_scale) + self.noise_scale * mod.eye(len(X))

        def kernel_mat(self, X, Z):
            Xsq = (X ** 2).sum(dim=1, keepdim=True)
            Zsq = (Z ** 2).sum(dim=1, keepdim=True)
            sqdist = Xsq + Zsq.T - 2 * X.mm(Z.T)
            return self.amplitude_scale * mod.exp(- 0.5 * sqdist / self.length_scale)

    return GP


def _gp_data(mod, i):
    rs = np.random.RandomState(10 + i)
    X = np.sort(rs.uniform(-2, 2, size=(6, 1)), axis=0).astype(np.float32)
    y = (np.sin(2 * X) + 0.1 * rs.standard_normal((6, 1))).astype(np.float32)
    return mod.tensor(X), mod.tensor(y)


def _gp_program(mod, wrap, data_as_args):
    x_test = np.linspace(-2.5, 2.5, 4, dtype=np.float32)[:, None]
    gp = _gp_class(mod)(length_scale=0.5, noise_scale=0.3, amplitude_scale=1.5)
    opt = mod.optim.Adam(gp.parameters(), lr=0.05)
    fixed = _gp_data(mod, 0)

    def step(X, y):
        # gp.train_step's body, returning the loss tensor instead of its .item() dict
        opt.zero_grad()
        nll = - gp.fit(X, y).sum()
        nll.backward()
        opt.step()
        mu, var = gp(mod.tensor(x_test))
        return nll, mu.detach(), var.detach()

    if data_as_args:
        return wrap(step), {"model": gp, "opt": opt}, lambda i: _gp_data(mod, i)
    # the README's use: one training set, ``gp.train_step(X, y, opt)`` over and over
    return wrap(lambda: step(*fixed)), {"model": gp, "opt": opt}, lambda i: ()


def _check_fit_attributes(gp):
    # fit()'s attribute writes are the last call's concrete tensors, not a trace's placeholders
    L = gp.L.detach().numpy()
    np.testing.assert_allclose(L @ L.T, gp.K.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert gp.L.dtype == gp.K.dtype == gp.X.dtype


def test_minimal_gp_step_on_fixed_data_traces_whole():
    run = check_compiled(lambda mod, wrap: _gp_program(mod, wrap, False), calls=3, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats
    _check_fit_attributes(run.state["model"])


def test_minimal_gp_step_storing_its_arguments_traces():
    # ``fit`` stores its arguments (``self.X = X; self.y = y``): after every compiled call the
    # model holds the caller's tensors, as eagerly (``argument_places`` in _lowering/carry.py)
    run = check_compiled(lambda mod, wrap: _gp_program(mod, wrap, True), calls=3, torch_too=True,
                         rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats
    _check_fit_attributes(run.state["model"])
    assert run.state["model"].X is not None


def test_step_storing_its_argument_on_a_module_traces():
    import tracegrad
    lin = tracegrad.nn.Linear(2, 2)

    def step(x):
        lin.last_input = x
        return lin(x).sum()

    f = tracegrad.compile(step)
    for i in range(3):
        x = tracegrad.ones(3, 2) * i
        f(x)
        assert lin.last_input is x
    assert not f.stats["graph_breaks"], f.stats
    assert f.stats["traces"] == 1, f.stats


# ---- kumar-shridhar/PyTorch-BayesianCNN layers/BBB/BBBLinear.py, layers/misc.py, metrics.py, utils.py,
# main_bayesian.py train_model's body (device lines dropped; one BBBLinear keeps the file cheap) ----------
def _bbb_program(mod, wrap):
    nn, F, Parameter = mod.nn, mod.nn.functional, mod.nn.Parameter

    def calculate_kl(mu_q, sig_q, mu_p, sig_p):
        kl = 0.5 * (2 * mod.log(sig_p / sig_q) - 1 + (sig_q / sig_p).pow(2) + ((mu_p - mu_q) / sig_p).pow(2)).sum()
        return kl

    class ELBO(nn.Module):
        def __init__(self, train_size):
            super(ELBO, self).__init__()
            self.train_size = train_size

        def forward(self, input, target, kl, beta):
            assert not target.requires_grad
            return F.nll_loss(input, target, reduction='mean') * self.train_size + beta * kl

    def logmeanexp(x, dim=None, keepdim=False):
        if dim is None:
            x, dim = x.view(-1), 0
        x_max, _ = mod.max(x, dim, keepdim=True)
        x = x_max + mod.log(mod.mean(mod.exp(x - x_max), dim, keepdim=True))
        return x if keepdim else x.squeeze(dim)

    class ModuleWrapper(nn.Module):
        def forward(self, x):
            for module in self.children():
                x = module(x)
            kl = 0.0
            for module in self.modules():
                if hasattr(module, 'kl_loss'):
                    kl = kl + module.kl_loss()
            return x, kl

    class BBBLinear(ModuleWrapper):
        def __init__(self, in_features, out_features, bias=True):
            super(BBBLinear, self).__init__()
            self.prior_mu, self.prior_sigma = 0, 0.1
            self.use_bias = bias
            self.W_mu = Parameter(mod.empty((out_features, in_features)))
            self.W_rho = Parameter(mod.empty((out_features, in_features)))
            if self.use_bias:
                self.bias_mu = Parameter(mod.empty((out_features)))
                self.bias_rho = Parameter(mod.empty((out_features)))

        def forward(self, input, sample=True):
            if self.training or sample:
                W_eps = mod.empty(self.W_mu.size()).normal_(0, 1)
                self.W_sigma = mod.log1p(mod.exp(self.W_rho))
                weight = self.W_mu + W_eps * self.W_sigma
                if self.use_bias:
                    bias_eps = mod.empty(self.bias_mu.size()).normal_(0, 1)
                    self.bias_sigma = mod.log1p(mod.exp(self.bias_rho))
                    bias = self.bias_mu + bias_eps * self.bias_sigma
                else:
                    bias = None
            else:
                weight = self.W_mu
                bias = self.bias_mu if self.use_bias else None
            return F.linear(input, weight, bias)

        def kl_loss(self):
            kl = calculate_kl(self.prior_mu, self.prior_sigma, self.W_mu, self.W_sigma)
            if self.use_bias:
                kl += calculate_kl(self.prior_mu, self.prior_sigma, self.bias_mu, self.bias_sigma)
            return kl

    class BBBMLP(ModuleWrapper):
        def __init__(self):
            super(BBBMLP, self).__init__()
            self.num_classes = 3
            self.fc1 = BBBLinear(3, 3)

    net = BBBMLP()
    rs = np.random.RandomState(3)
    with mod.no_grad():
        for name, p in net.named_parameters():
            lo, hi = (-3.2, -2.8) if 'rho' in name else (-0.5, 0.5)
            p.copy_(mod.tensor(rs.uniform(lo, hi, size=tuple(p.shape)).astype(np.float32)))
    criterion = ELBO(6)
    optimizer = mod.optim.Adam(net.parameters(), lr=0.01)
    num_ens, beta = 2, 0.1

    def step(inputs, labels):
        optimizer.zero_grad()
        outputs = mod.zeros(inputs.shape[0], net.num_classes, num_ens)
        kl = 0.0
        for j in range(num_ens):
            net_out, _kl = net(inputs)
            kl += _kl
            outputs[:, :, j] = F.log_softmax(net_out, dim=1)
        kl = kl / num_ens
        log_outputs = logmeanexp(outputs, dim=2)
        loss = criterion(log_outputs, labels, kl, beta)
        loss.backward()
        optimizer.step()
        return loss, kl.detach(), log_outputs.detach()

    def batch(i):
        r = np.random.RandomState(20 + i)
        return (mod.tensor(r.standard_normal((3, 3)).astype(np.float32)),
                mod.tensor(r.randint(0, 3, size=3)))

    return wrap(step), {"model": net, "opt": optimizer, "rng": mod.default_generator}, batch


def test_bayesian_cnn_bbb_step_with_torch_noise_traces_whole():
    # the layer's own ``torch.empty(size).normal_(0, 1)`` noise: compiled draws the same numbers
    # as eager tracegrad from the default generator (torch's stream differs, so no torch_too), and
    # leaves the generator where eager does; ``self.W_sigma = ...`` writes a new tensor each call
    run = check_compiled(_bbb_program, calls=2, rtol=1e-4, atol=1e-5)
    assert not run.step.stats["graph_breaks"], run.step.stats
    assert run.step.stats["traces"] == 1, run.step.stats
    # the sigma stored by the last forward (before that call's optimizer step), as eagerly
    got, want = run.state["model"].fc1.W_sigma, run.eager.state["model"].fc1.W_sigma
    assert got.requires_grad and got.grad_fn is not None
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
