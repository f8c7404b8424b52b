"""A thirty-first round of public PyTorch programs run eagerly with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), in the style of
``test_public_programs_round30.py``, from repositories no earlier round used, each leaning on a
``torch.distributions`` family the earlier rounds did not reach:

- ARISE-Initiative/robomimic: ``models/policy_nets.py``'s ``GMMActorNetwork`` (``MixtureSameFamily``
  of a ``Categorical`` over ``Independent(Normal(...), 1)`` components, softplus scales with a
  floor, the low-noise eval scales, the ``TanhWrappedDistribution`` of ``models/distributions.py``
  subclassing ``Distribution`` without ``arg_constraints``), trained as ``algo/bc.py``'s
  ``BC_GMM`` does (``-log_prob(actions).mean()``, ``TorchUtils.backprop_for_loss`` with
  ``clip_grad_norm_`` and its summed squared grad norms, ``MultiStepLR``);
- Ofekirsh/Non-Linear-Independent-Components-Estimation: ``nice.py``'s NICE flow (affine
  coupling layers split with ``x[:, k::2]`` and re-interleaved by ``torch.stack(...,
  dim=2).view``, the log-scaling layer, the standard logistic prior built as
  ``TransformedDistribution(Uniform(0, 1), [SigmoidTransform().inv, AffineTransform(0, 1)])``,
  ``log_det_J += ...`` on a Python ``0``, the inverse pass) trained and evaluated as
  ``train.py`` does, with its ``ReduceLROnPlateau(..., verbose=True)``, which torch 2.13 rejects.

xtma/pytorch_car_caring's Beta-policy PPO for CarRacing, whose float64 conv net alone compiles as
much as these two together, is in ``test_public_programs_round31_ppo.py``.

Each keeps its program's code at tiny sizes, with numpy-seeded data and parameters in place of
downloads and random streams; where a program's own code had to change, the comment above its
test says how and why. A ``from torch... import`` inside a program would import the real torch
on the tracegrad side too, so such imports are written as attribute lookups on the ``torch``
argument.
"""
import collections
import io
import warnings

import numpy as np
import pytest
from parity import printer, run_both

torch = pytest.importorskip("torch")


# ---- ARISE-Initiative/robomimic --------------------------------------------------------------------
def _robomimic_gmm_classes(torch):
    """models/distributions.py's ``TanhWrappedDistribution`` and models/policy_nets.py's
    ``GMMActorNetwork``, on a small stand-in for ``MIMO_MLP`` (obs_nets.py: the low-dim
    observation modalities flattened and concatenated in key order, a ReLU MLP, one Linear per
    output key reshaped to its output shape)."""
    nn, F, D = torch.nn, torch.nn.functional, torch.distributions
    OrderedDict = collections.OrderedDict

    class TanhWrappedDistribution(D.Distribution):
        """
        Class that wraps another valid torch distribution, such that sampled values from the base distribution are
        passed through a tanh layer. The corresponding (log) probabilities are also modified accordingly.
        """

        def __init__(self, base_dist, scale=1.0, epsilon=1e-6):
            self.base_dist = base_dist
            self.scale = scale
            self.tanh_epsilon = epsilon
            super(TanhWrappedDistribution, self).__init__()

        def log_prob(self, value, pre_tanh_value=None):
            value = value / self.scale
            if pre_tanh_value is None:
                one_plus_x = (1.0 + value).clamp(min=self.tanh_epsilon)
                one_minus_x = (1.0 - value).clamp(min=self.tanh_epsilon)
                pre_tanh_value = 0.5 * torch.log(one_plus_x / one_minus_x)
            lp = self.base_dist.log_prob(pre_tanh_value)
            tanh_lp = torch.log(1 - value * value + self.tanh_epsilon)
            # In case the base dist already sums up the log probs, make sure we do the same
            return (
                lp - tanh_lp
                if len(lp.shape) == len(tanh_lp.shape)
                else lp - tanh_lp.sum(-1)
            )

        @property
        def mean(self):
            return self.base_dist.mean

        @property
        def stddev(self):
            return self.base_dist.stddev

    class MIMO_MLP(nn.Module):
        def __init__(self, input_obs_group_shapes, output_shapes, layer_dims):
            super(MIMO_MLP, self).__init__()
            self.input_obs_group_shapes = input_obs_group_shapes
            self.output_shapes = output_shapes
            in_dim = sum(int(np.prod(s)) for g in input_obs_group_shapes.values() for s in g.values())
            layers = []
            for dim in layer_dims:
                layers += [nn.Linear(in_dim, dim), nn.ReLU()]
                in_dim = dim
            self.nets = nn.ModuleDict()
            self.nets["mlp"] = nn.Sequential(*layers)
            self.nets["decoder"] = nn.ModuleDict(OrderedDict(
                (k, nn.Linear(in_dim, int(np.prod(s)))) for k, s in output_shapes.items()))

        def forward(self, **inputs):
            feats = []
            for g, shapes in self.input_obs_group_shapes.items():
                if inputs.get(g) is None:
                    continue
                for k in shapes:
                    x = inputs[g][k]
                    feats.append(x.reshape(x.shape[0], -1))
            h = self.nets["mlp"](torch.cat(feats, dim=-1))
            return OrderedDict((k, self.nets["decoder"][k](h).reshape(-1, *s))
                               for k, s in self.output_shapes.items())

    class GMMActorNetwork(MIMO_MLP):
        """
        Variant of actor network that learns a multimodal Gaussian mixture distribution
        over actions.
        """
        def __init__(self, obs_shapes, ac_dim, mlp_layer_dims, num_modes=5, min_std=0.01,
                     std_activation="softplus", low_noise_eval=True, use_tanh=False):
            # parameters specific to GMM actor
            self.num_modes = num_modes
            self.min_std = min_std
            self.low_noise_eval = low_noise_eval
            self.use_tanh = use_tanh
            self.ac_dim = ac_dim

            # Define activations to use
            self.activations = {
                "softplus": F.softplus,
                "exp": torch.exp,
            }
            assert std_activation in self.activations, \
                "std_activation must be one of: {}; instead got: {}".format(self.activations.keys(), std_activation)
            self.std_activation = std_activation

            super(GMMActorNetwork, self).__init__(
                input_obs_group_shapes=OrderedDict(obs=obs_shapes),
                output_shapes=self._get_output_shapes(),
                layer_dims=mlp_layer_dims,
            )

        def _get_output_shapes(self):
            return OrderedDict(
                mean=(self.num_modes, self.ac_dim),
                scale=(self.num_modes, self.ac_dim),
                logits=(self.num_modes,),
            )

        def forward_train(self, obs_dict, goal_dict=None):
            out = MIMO_MLP.forward(self, obs=obs_dict, goal=goal_dict)
            means = out["mean"]
            scales = out["scale"]
            logits = out["logits"]

            # apply tanh squashing to means if not using tanh-GMM to ensure means are in [-1, 1]
            if not self.use_tanh:
                means = torch.tanh(means)

            # Calculate scale
            if self.low_noise_eval and (not self.training):
                # low-noise for all Gaussian dists
                scales = torch.ones_like(means) * 1e-4
            else:
                # post-process the scale accordingly
                scales = self.activations[self.std_activation](scales) + self.min_std

            # mixture components - make sure that `batch_shape` for the distribution is equal
            # to (batch_size, num_modes) since MixtureSameFamily expects this shape
            component_distribution = D.Normal(loc=means, scale=scales)
            component_distribution = D.Independent(component_distribution, 1)

            # unnormalized logits to categorical distribution for mixing the modes
            mixture_distribution = D.Categorical(logits=logits)

            dist = D.MixtureSameFamily(
                mixture_distribution=mixture_distribution,
                component_distribution=component_distribution,
            )

            if self.use_tanh:
                # Wrap distribution with Tanh
                dist = TanhWrappedDistribution(base_dist=dist, scale=1.)

            return dist

    return GMMActorNetwork, TanhWrappedDistribution


# GMMActorNetwork at tiny sizes: two low-dim observation keys (3 and 2 values), one hidden layer
# of 8 (robomimic's default is 1024, 1024), 2-d actions, 3 modes (5), a batch of 4, three
# BC_GMM train steps with Adam and a MultiStepLR, then the network in eval mode (low-noise
# scales), as RolloutPolicy runs it. Deviations: MIMO_MLP/ObservationGroupEncoder are the small
# stand-in above, the parameters are numpy values, and get_action's dist.sample() is replaced
# by the distributions' mean and log_prob of fixed actions (the two libraries' streams differ).
# backprop_for_loss gets max_grad_norm=1.0, as forks passing ``algo_config.max_gradient_norm``
# do (BC's own _train_step passes none), so that clip_grad_norm_ runs.
# The use_tanh=True variant is trained the same way on actions inside (-1, 1), without BC_GMM's
# ``len(dists.batch_shape) == 1`` assert, which TanhWrappedDistribution's () batch shape fails.
@pytest.fixture
def validation_on():
    """torch's default (``__debug__``) in both libraries: the logged arg_constraints warning
    depends on it, and an earlier test in the process may have turned validation off."""
    import tracegrad
    bases = (torch.distributions.Distribution, tracegrad.distributions.Distribution)
    old = [b._validate_args for b in bases]
    for b in bases:
        b.set_default_validate_args(True)
    yield
    for b, v in zip(bases, old):
        b.set_default_validate_args(v)


@pytest.mark.parametrize("use_tanh", [False, True])
def test_robomimic_bc_gmm(use_tanh, validation_on):
    def program(torch, log):
        optim = torch.optim
        GMMActorNetwork, TanhWrappedDistribution = _robomimic_gmm_classes(torch)
        OrderedDict = collections.OrderedDict

        def backprop_for_loss(net, optim, loss, max_grad_norm=None, retain_graph=False):
            # backprop
            optim.zero_grad()
            loss.backward(retain_graph=retain_graph)

            # gradient clipping
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)

            # compute grad norms
            grad_norms = 0.
            for p in net.parameters():
                # only clip gradients for parameters for which requires_grad is True
                if p.grad is not None:
                    grad_norms += p.grad.data.norm(2).pow(2).item()

            # step
            optim.step()

            return grad_norms

        obs_shapes = OrderedDict(robot0_eef_pos=(3,), robot0_gripper_qpos=(2,))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            policy = GMMActorNetwork(obs_shapes, ac_dim=2, mlp_layer_dims=[8], num_modes=3,
                                     use_tanh=use_tanh)
            rs = np.random.RandomState(5)
            with torch.no_grad():
                for _, p in policy.named_parameters():
                    p.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
            optimizer = optim.Adam(policy.parameters(), lr=1e-2, weight_decay=0.0)
            scheduler = optim.lr_scheduler.MultiStepLR(optimizer=optimizer, milestones=[2], gamma=0.1)

            def batch(i):
                r = np.random.RandomState(20 + i)
                obs = OrderedDict(
                    robot0_eef_pos=torch.tensor(r.standard_normal((4, 3)).astype(np.float32)),
                    robot0_gripper_qpos=torch.tensor(r.uniform(0, 0.04, (4, 2)).astype(np.float32)))
                actions = torch.tensor(r.uniform(-0.9, 0.9, (4, 2)).astype(np.float32))
                return {"obs": obs, "goal_obs": None, "actions": actions}

            policy.train()
            for epoch in range(3):
                b = batch(epoch)
                # BC_GMM._forward_training / _compute_losses / _train_step
                dists = policy.forward_train(obs_dict=b["obs"], goal_dict=b["goal_obs"])
                # make sure that this is a batch of multivariate action distributions, so that
                # the log probability computation will be correct (the tanh wrapper's batch shape
                # is () in torch: BC_GMM's assert fails with use_tanh, so it is logged there)
                if not use_tanh:
                    assert len(dists.batch_shape) == 1
                log_probs = dists.log_prob(b["actions"])
                predictions = OrderedDict(log_probs=log_probs)
                action_loss = -predictions["log_probs"].mean()
                losses = OrderedDict(log_probs=-action_loss, action_loss=action_loss)
                policy_grad_norms = backprop_for_loss(net=policy, optim=optimizer, loss=losses["action_loss"],
                                                      max_grad_norm=1.0)
                scheduler.step()
                base = dists.base_dist if use_tanh else dists
                log("train", [dists.batch_shape, dists.event_shape, base.mixture_distribution.probs,
                              base.component_distribution.batch_shape, base.component_distribution.base_dist.scale,
                              log_probs, action_loss, log_probs.grad_fn, policy_grad_norms,
                              optimizer.param_groups[0]["lr"]])
            log("warnings", sorted({(w.category.__name__, "arg_constraints" in str(w.message)) for w in caught}))

        policy.eval()
        with torch.no_grad():
            b = batch(5)
            dist = policy.forward_train(obs_dict=b["obs"])
            base = dist.base_dist if use_tanh else dist
            log("eval", [base.component_distribution.base_dist.scale, dist.mean, dist.log_prob(b["actions"]),
                         base.variance])
            # get_action with low_noise_eval: tanh of the mixture mean when use_tanh
            log("action", torch.tanh(dist.mean) if use_tanh else dist.mean)
        log("params", list(policy.parameters()))

    run_both(program)


# ---- Ofekirsh/Non-Linear-Independent-Components-Estimation -----------------------------------------
def _nice_module(torch):
    """nice.py, unchanged but for its imports (attribute lookups on ``torch``)."""
    nn = torch.nn
    SigmoidTransform = torch.distributions.transforms.SigmoidTransform
    AffineTransform = torch.distributions.transforms.AffineTransform
    Uniform, TransformedDistribution = torch.distributions.Uniform, torch.distributions.TransformedDistribution

    class AdditiveCoupling(nn.Module):
        def __init__(self, in_out_dim, mid_dim, hidden, mask_config):
            super(AdditiveCoupling, self).__init__()
            self.in_out_dim = in_out_dim
            self.mid_dim = mid_dim
            self.hidden = hidden
            self.mask_config = mask_config

            # Define the MLP for m(x1)
            layers = nn.ModuleList()
            input_dim = in_out_dim // 2
            for _ in range(hidden):
                layers.append(nn.Linear(input_dim, mid_dim))
                layers.append(nn.ReLU())
                input_dim = mid_dim
            layers.append(nn.Linear(mid_dim, in_out_dim // 2))  # Output layer
            self.mlp = nn.Sequential(*layers)

        def forward(self, x, log_det_J, reverse=False):
            # Split x into odd (x1) and even (x2) indices
            x1, x2 = x[:, self.mask_config::2], x[:, 1 - self.mask_config::2]

            if reverse:
                # Reverse mode: x2 = y2 - m(x1)
                y1 = x1
                y2 = x2 - self.mlp(x1)
            else:
                # Forward mode: y2 = x2 + m(x1)
                y1 = x1
                y2 = x2 + self.mlp(x1)

            ordered_concat = [y1, y2] if self.mask_config == 0 else [y2, y1]
            y = torch.stack(ordered_concat, dim=2).view(-1, self.in_out_dim)
            log_det_J = log_det_J  # Jacobian determinant is 1, so no change
            return y, log_det_J

    class AffineCoupling(nn.Module):
        def __init__(self, in_out_dim, mid_dim, hidden, mask_config):
            super(AffineCoupling, self).__init__()
            self.in_out_dim = in_out_dim
            self.mid_dim = mid_dim
            self.hidden = hidden
            self.mask_config = mask_config

            # Define the scale layer for m(x1)
            scale_layers = nn.ModuleList()
            input_dim = in_out_dim // 2
            for _ in range(hidden):
                scale_layers.append(nn.Linear(input_dim, mid_dim))
                scale_layers.append(nn.ReLU())
                input_dim = mid_dim
            scale_layers.append(nn.Linear(mid_dim, in_out_dim // 2))  # Output layer
            scale_layers.append(nn.Tanh())
            self.scale_network = nn.Sequential(*scale_layers)

            # Define the shift layer for m(x1)
            shift_layers = nn.ModuleList()
            input_dim = in_out_dim // 2
            for _ in range(hidden):
                shift_layers.append(nn.Linear(input_dim, mid_dim))
                shift_layers.append(nn.ReLU())
                input_dim = mid_dim
            shift_layers.append(nn.Linear(mid_dim, in_out_dim // 2))  # Output layer
            shift_layers.append(nn.Tanh())
            self.shift_network = nn.Sequential(*shift_layers)

        def forward(self, x, log_det_J, reverse=False):
            x1, x2 = x[:, self.mask_config::2], x[:, 1 - self.mask_config::2]

            # Compute b1 and b2 from MLP
            scale = torch.exp(self.scale_network(x1))
            shift = self.shift_network(x1)  # Split into scaling and translation components

            if reverse:
                # Reverse mode: x2 = (y2 - b2) / b1
                y1 = x1
                y2 = (x2 - shift) / scale
            else:
                # Forward mode: y2 = x2 * b1 + b2
                y1 = x1
                y2 = x2 * scale + shift
                log_det_J += scale.log().sum(dim=1)  # Update log-determinant

            # Reassemble y by interleaving y1 and y2
            ordered_concat = [y1, y2] if self.mask_config == 0 else [y2, y1]
            y = torch.stack(ordered_concat, dim=2).view(-1, self.in_out_dim)
            return y, log_det_J

    class Scaling(nn.Module):
        def __init__(self, dim):
            super(Scaling, self).__init__()
            self.scale = nn.Parameter(
                torch.zeros((1, dim)), requires_grad=True)
            self.eps = 1e-5

        def forward(self, x, reverse=False):
            scale = torch.exp(self.scale) + self.eps

            if reverse:
                # Inverse transformation: x = y / S
                y = x / scale
                log_det = torch.sum(torch.log(scale), dim=1)
            else:
                # Forward transformation: y = x * S
                y = x * scale
                log_det = torch.sum(torch.log(scale), dim=1)

            return y, log_det

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    # Move the parameters of Uniform to the device
    uniform = Uniform(torch.tensor(0.).to(device), torch.tensor(1.).to(device))

    # Move the transforms to the device
    sigmoid_transform = SigmoidTransform()
    affine_transform = AffineTransform(loc=0., scale=1.)

    # Now create the logistic distribution with the moved components
    logistic = TransformedDistribution(uniform, [sigmoid_transform.inv, affine_transform])

    class NICE(nn.Module):
        def __init__(self, prior, coupling, coupling_type, in_out_dim, mid_dim, hidden, device):
            super(NICE, self).__init__()
            self.device = device

            if prior == 'gaussian':
                self.prior = torch.distributions.Normal(
                    torch.tensor(0.).to(device), torch.tensor(1.).to(device))
            elif prior == 'logistic':
                self.prior = logistic
            else:
                raise ValueError('Prior not implemented.')

            self.in_out_dim = in_out_dim
            self.mid_dim = mid_dim
            self.hidden = hidden
            self.coupling = coupling
            self.coupling_type = coupling_type
            self.scaling = Scaling(dim=in_out_dim)

            # Define coupling layers
            self.coupling_layers = nn.ModuleList()
            for i in range(self.coupling):
                if self.coupling_type == 'additive':
                    self.coupling_layers.append(
                        AdditiveCoupling(in_out_dim, mid_dim, hidden, mask_config=i % 2)
                    )
                elif self.coupling_type == 'adaptive':
                    self.coupling_layers.append(
                        AffineCoupling(in_out_dim, mid_dim, hidden, mask_config=i % 2)
                    )
                else:
                    raise ValueError("that's not the option for coupling layer")

        def f_inverse(self, z):
            x, _ = self.scaling(z, reverse=True)
            for layer in reversed(list(self.coupling_layers)):
                x, _ = layer(x, 0, reverse=True)
            return x

        def f(self, x):
            z = x
            log_det = 0
            for layer in self.coupling_layers:
                z, log_det = layer(z, log_det, reverse=False)
            z, log_det_scale = self.scaling(z, reverse=False)
            log_det += log_det_scale
            return z, log_det

        def log_prob(self, x):
            z, log_det_J = self.f(x)
            log_det_J -= np.log(256)*self.in_out_dim #log det for rescaling from [0.256] (after dequantization) to [0,1]
            prior_log_prob = self.prior.log_prob(z).to(device)
            log_ll = torch.sum(self.prior.log_prob(z), dim=1)

            return log_ll + log_det_J

        def sample(self, size):
            z = self.prior.sample((size, self.in_out_dim)).to(self.device)
            return self.f_inverse(z)

        def forward(self, x):
            return self.log_prob(x)

    return NICE, logistic


# train.py at tiny sizes: 4x4 "images" (28x28), mid_dim 6 (1000), hidden 2 (5), 4 affine
# ("adaptive") coupling layers, batch 4, two batches per epoch, two epochs, the logistic prior;
# a NICE made with train.py's own --coupling-type choice 'affine' raises nice.py's ValueError
# (the additive coupling is not run: its ops are a subset of the affine one's). Deviations: the
# MNIST loaders are lists of numpy-made (dequantised, Normalize((0.5,), (1.,))-shifted) batches,
# the parameters are numpy values, flow.sample's prior.sample is a numpy logistic draw pushed
# through f_inverse (and checked to invert f), no images or files are written, and the
# ReduceLROnPlateau(..., verbose=True) of --lr-schedule, which torch 2.13 rejects with a
# TypeError, is checked to raise and then made without ``verbose``.
def test_nice_flow_logistic_prior():
    def program(torch, log):
        print = printer(log)
        NICE, logistic = _nice_module(torch)
        device = torch.device("cpu")
        sample_shape = [1, 4, 4]
        input_dim = sample_shape[0] * sample_shape[1] * sample_shape[2]

        def loader(seed, n):
            rs = np.random.RandomState(seed)
            out = []
            for _ in range(n):
                x = rs.randint(0, 256, (4, *sample_shape)) / 255.0 - 0.5       # ToTensor, Normalize
                x = x + rs.uniform(0., 1. / 256., x.shape)                      # add_uniform_noise
                out.append((torch.tensor(x.astype(np.float32)), torch.zeros(4, dtype=torch.long)))
            return out

        trainloader, testloader = loader(0, 2), loader(1, 1)

        def train_epoch(flow, trainloader, optimizer, device):
            loss_epoch = 0.0
            flow.train()  # Set to training mode

            for inputs, _ in trainloader:
                optimizer.zero_grad()
                # Flatten inputs from BxCxHxW to Bx(C*H*W)
                inputs = inputs.view(inputs.shape[0], -1).to(device)

                # Calculate negative log-likelihood
                loss = -flow(inputs).mean()
                loss_epoch += loss.item()

                # Backpropagation and optimization step
                loss.backward()
                optimizer.step()
                log("batch", [loss, flow.scaling.scale.grad])

            # Calculate average loss
            loss_epoch /= len(trainloader)
            return loss_epoch

        def evaluate(flow, testloader, sample_shape, device, generate_samples=False):
            loss_inference = 0.0
            flow.eval()  # Set to inference mode

            with torch.no_grad():
                # Generate samples if requested
                if generate_samples:
                    u = np.random.RandomState(9).uniform(1e-3, 1 - 1e-3, (4, flow.in_out_dim))
                    z = torch.tensor(np.log(u / (1 - u)).astype(np.float32))   # flow.prior.sample
                    samples = flow.f_inverse(z).to(device)
                    back, _ = flow.f(samples)
                    log("inverts", bool(torch.allclose(back, z, atol=1e-4)))
                    # Normalize samples to [0,1] range for visualization
                    a, b = samples.min(), samples.max()
                    samples = (samples - a) / (b - a + 1e-10)
                    # Reshape samples to image format
                    samples = samples.view(-1, *sample_shape)
                    log("samples", samples)

                # Calculate test loss
                for xs, _ in testloader:
                    xs = xs.view(xs.shape[0], -1).to(device)
                    loss = -flow(xs).mean()
                    loss_inference += loss.item()

                loss_inference /= len(testloader)
                return loss_inference

        try:
            NICE(prior="logistic", coupling=4, coupling_type="affine", in_out_dim=input_dim, mid_dim=6,
                 hidden=2, device=device)
        except ValueError as e:   # train.py's --coupling-type choices say 'affine', nice.py 'adaptive'
            log("affine_raises", type(e).__name__)

        flow = NICE(prior="logistic", coupling=4, coupling_type="adaptive", in_out_dim=input_dim,
                    mid_dim=6, hidden=2, device=device).to(device)
        rs = np.random.RandomState(3)
        with torch.no_grad():
            for name, p in flow.named_parameters():
                if name != "scaling.scale":
                    p.copy_(torch.tensor(rs.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
        log("prior", [flow.prior.batch_shape, flow.prior.event_shape, flow.prior.support.__class__.__name__,
                      flow.prior.log_prob(torch.tensor(np.linspace(-20, 20, 4 * input_dim).reshape(4, -1).astype(np.float32)))])

        optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
        try:
            torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=5,
                                                       verbose=True)
        except TypeError:
            log("verbose_raises", "TypeError")
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0)

        train_losses = []
        test_losses = []
        for epoch in range(2):
            train_loss = train_epoch(flow, trainloader, optimizer, device)
            train_losses.append(train_loss)
            test_loss = evaluate(flow, testloader, sample_shape, device, generate_samples=(epoch % 2 == 0))
            test_losses.append(test_loss)
            scheduler.step(test_loss)
            print(f"Epoch {epoch + 1}/2 - Train Loss: {train_loss:.4f}, Test Loss: {test_loss:.4f}")
            log("lr", optimizer.param_groups[0]["lr"])

        buf = io.BytesIO()
        torch.save({'epoch': 2, 'model_state_dict': flow.state_dict(),
                    'optimizer_state_dict': optimizer.state_dict(),
                    'train_loss': train_loss, 'test_loss': test_loss}, buf)
        buf.seek(0)
        ckpt = torch.load(buf)
        log("checkpoint", [sorted(ckpt), sorted(ckpt["model_state_dict"]), ckpt["optimizer_state_dict"]["state"][0]])
        log("params", list(flow.parameters()))

    run_both(program)
