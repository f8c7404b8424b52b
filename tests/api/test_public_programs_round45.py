"""A forty-fifth round of public PyTorch programs run with torch and with tracegrad
(``parity.run_both``: every logged value and everything printed must agree), from repositories no
earlier round used, then training steps of the first three under ``tracegrad.compile`` against
tracegrad eager and torch:

- gram-ai/capsule-networks, ``capsule_network.py`` at 0aae011 (Dynamic Routing Between Capsules,
  Sabour et al. 2017, by Kenta Iwasaki; the repository has no license file, the program is
  embedded for testing only): ``softmax`` over any dim by ``transpose``/``contiguous``/``view`` and
  an implicit-dim ``F.softmax`` (torch's ``UserWarning``), ``CapsuleLayer`` (primary capsules as a
  ``ModuleList`` of ``Conv2d`` concatenated on the last dim; digit capsules by broadcasting
  ``x[None, :, :, None, :] @ route_weights[:, None, :, :, :]``, routing by agreement with
  ``logits = logits + delta_logits``, ``squash``), ``CapsuleNet`` (``F.relu(..., inplace=True)``,
  ``squeeze().transpose(0, 1)``, capsule lengths by ``** 0.5``, the masked capsule picked per
  sample from ``y.max(dim=1)``, ``index.data[0]`` on a 0-d tensor: an ``IndexError`` since torch
  0.4, logged, then ``index.item()``; the decoder ``Sequential``), ``CapsuleLoss`` (margin loss by
  ``clamp(min=0) ** 2``, ``nn.MSELoss(size_average=True)``: torch's deprecation warning) and the
  ``processor`` of ``__main__`` (its ``(B, 1, H, W)`` images do not broadcast against the
  ``(B, H*W)`` reconstructions in ``MSELoss``: the ``RuntimeError`` is logged, then the images are
  flattened;``unsqueeze(1).float() / 255.0``, one-hot labels by
  ``torch.sparse.torch.eye(...).index_select``, ``Variable``), trained with ``Adam``.
- msurtsukov/neural-ode, ``Neural ODEs.ipynb`` at 661050e (the adjoint method of Chen et al.
  2018, no license file, embedded for testing only): ``ode_solve`` (Euler steps counted by
  ``math.ceil((abs(t1 - t0)/h_max).max().item())``), ``ODEF.forward_with_grad``
  (``torch.autograd.grad`` over ``(z, t) + parameters`` with ``allow_unused=True``,
  ``retain_graph=True``), ``ODEAdjoint`` (a ``torch.autograd.Function`` taking a module argument,
  kept on ``ctx``, the trajectory written into ``torch.zeros(...).to(z0)`` under ``no_grad``,
  ``save_for_backward``; ``backward`` solving the augmented system backwards under ``no_grad`` with
  ``set_grad_enabled(True)`` inside, ``bmm`` of transposed slices, ``adj_z[:] = ...`` and
  ``adj_p[:] += ...``, and a parameter gradient of shape ``(bs, n_params)`` for a ``(n_params,)``
  input, which autograd sums to the input's shape), ``NeuralODE`` (a ``Tensor([0., 1.])`` default
  argument), ``LinearODEF``/``RandomLinearODEF``/``SpiralFunctionExample``, ``TestODEF`` and
  ``NNODEF`` (``nn.ELU(inplace=True)``), ``conduct_experiment``'s training loop
  (``np.int``: an ``AttributeError`` in numpy 2, logged, then ``int``; ``F.mse_loss``,
  ``loss.backward(retain_graph=True)``, Adam), the convolutional classifier of cells 17-25
  (``ConvODEF``: the time channel by ``t.expand(bs, 1, w, h)`` of a 0-d time and ``torch.cat``,
  training-mode ``BatchNorm2d`` inside the solver and the adjoint; ``torch.prod(torch.tensor(
  x.shape[1:])).item()``; ``train``/``test`` with ``CrossEntropyLoss``, ``argmax`` accuracy)
  and the ODE-VAE of cells 27-35 (``RNNEncoder``:
  ``t.clone()`` written by shifted slices, ``nn.GRU`` of ``xt.flip((0,))``; ``NeuralODEDecoder``;
  ``ODEVAE`` with ``torch.randn_like``; ``gen_batch``'s ``npr.multinomial``; the KL + Gaussian
  reconstruction loss, ``loss /= max_len``).
- krrish94/nerf-pytorch at a14357d (TinyNeRF; the stored snapshot has no license file, embedded
  for testing only): ``tiny_nerf.py`` (``compute_query_points_from_rays`` with
  ``torch.rand(list)`` depth jitter, ``render_volume_density``: ``relu``/``sigmoid`` of the
  field, ``torch.tensor([1e10]).expand``, ``exp``, the exclusive cumulative product, weighted
  sums; ``run_one_iter_of_tinynerf`` over chunks, ``VeryTinyNerfModel``, ``main``'s loop: Adam,
  ``mse_loss``, ``-10 * torch.log10(loss)`` PSNR) and ``nerf/nerf_helpers.py``
  (``get_minibatches``, ``meshgrid_xy`` through ``torch.meshgrid`` without ``indexing``: torch's
  warning, ``cumprod_exclusive`` by ``cumprod``/``roll`` and ``cumprod[..., 0] = 1.0``,
  ``get_ray_bundle`` dividing float32 grids by a float64 0-d focal length, ``positional_encoding``
  iterating over a ``2.0 ** linspace`` tensor).
- juho-lee/set_transformer at 73432c6 (MIT; Lee et al. 2019): ``modules.py`` (``MAB``: heads
  by ``torch.cat(Q.split(dim_split, 2), 0)``, ``bmm`` attention, ``getattr(self, 'ln0', None)``;
  ``SAB``, ``ISAB``/``PMA`` with ``nn.Parameter(torch.Tensor(...))`` and ``xavier_uniform_``,
  ``repeat``), ``models.py`` (``SetTransformer`` with and without ``ln``, ``DeepSet``),
  ``mvn_diag.py`` (``torch.gather`` by repeated labels, the diagonal Gaussian log-density,
  ``stats``' ``torch.eye(d)[(None,) * k]``, ``parse`` with ``softplus``), ``mixture_of_mvns.py``
  (``log_prob`` by ``logsumexp``, ``argmax`` labels) and ``run.py`` (``.cuda()`` on a CPU build:
  the ``AssertionError`` logged; ``generate_benchmark`` saved and loaded with
  ``torch.save``/``torch.load``; ``train``'s loop with the learning rate cut in
  ``param_groups``, ``test``, the checkpoint round trip and ``plot``'s quantities).

Changes, the same on both sides: sizes are tiny (capsules: 20 x 20 images, 8 conv1 channels,
4 channels per primary capsule, 4 classes, 3 routing iterations, a 16-12-16-400 decoder; neural
ODE: short time spans, 12 + 6 points, hidden widths 8; TinyNeRF: 4 x 4 images, 6 samples per
ray, 2 encoding functions, width 8, chunks of 20; set transformer: 3 sets of 5 points, 3
components, width 8, 2 heads, 5 inducing points; the Dirichlet/Categorical draws of
``MixtureOfMVNs.sample`` come from numpy), the ``if __name__`` scaffolding
(torchnet's Engine, visdom loggers, plotting, ``.cuda()``) is left out or written as plain
loops, weights are overwritten from numpy after construction, and data and noise
(``torch.randn``/``randn_like``) come from seeded numpy streams.
"""
import math
import warnings

import numpy as np
import pytest

from parity import SeededTorch, close, get_torch, init_params, np_randn, run_both, seeded

import tracegrad

# ---- gram-ai/capsule-networks ------------------------------------------------------------------
BATCH_SIZE = 3
NUM_CLASSES = 4
NUM_ROUTING_ITERATIONS = 3
IMG = 20            # the repository's 28 (MNIST)
CONV1_CH = 8        # 256
PRIMARY_CH = 4      # 32
ROUTE_SIDE = 2      # 6 (IMG - 8 -> conv1, then (.. - 9) // 2 + 1)


def _capsule_classes(torch):
    F, nn = torch.nn.functional, torch.nn

    def softmax(input, dim=1):
        transposed_input = input.transpose(dim, len(input.size()) - 1)
        softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)))
        return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)

    class CapsuleLayer(nn.Module):
        def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels, kernel_size=None, stride=None,
                     num_iterations=NUM_ROUTING_ITERATIONS):
            super(CapsuleLayer, self).__init__()

            self.num_route_nodes = num_route_nodes
            self.num_iterations = num_iterations

            self.num_capsules = num_capsules

            if num_route_nodes != -1:
                self.route_logits = nn.Parameter(torch.zeros(num_capsules, 1, num_route_nodes, 1, 1))
                self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels, out_channels))
            else:
                self.capsules = nn.ModuleList(
                    [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=0) for _ in
                     range(num_capsules)])

        def squash(self, tensor, dim=-1):
            squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
            scale = squared_norm / (1 + squared_norm)
            return scale * tensor / torch.sqrt(squared_norm)

        def forward(self, x):
            if self.num_route_nodes != -1:
                priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]

                logits = self.route_logits
                for i in range(self.num_iterations):
                    probs = softmax(logits, dim=2)
                    outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))

                    if i != self.num_iterations - 1:
                        delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                        logits = logits + delta_logits
            else:
                outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
                outputs = torch.cat(outputs, dim=-1)
                outputs = self.squash(outputs)

            return outputs

    class CapsuleNet(nn.Module):
        def __init__(self, log=None):
            super(CapsuleNet, self).__init__()
            self.log = log

            self.conv1 = nn.Conv2d(in_channels=1, out_channels=CONV1_CH, kernel_size=9, stride=1)
            self.primary_capsules = CapsuleLayer(num_capsules=8, num_route_nodes=-1, in_channels=CONV1_CH,
                                                 out_channels=PRIMARY_CH, kernel_size=9, stride=2)
            self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES,
                                               num_route_nodes=PRIMARY_CH * ROUTE_SIDE * ROUTE_SIDE,
                                               in_channels=8, out_channels=16)

            self.decoder = nn.Sequential(
                nn.Linear(16, 12),
                nn.ReLU(inplace=True),
                nn.Linear(12, 16),
                nn.ReLU(inplace=True),
                nn.Linear(16, IMG * IMG),
                nn.Sigmoid()
            )

        def forward(self, x, y=None):
            x = F.relu(self.conv1(x), inplace=True)
            x = self.primary_capsules(x)
            x = self.digit_capsules(x).squeeze().transpose(0, 1)

            classes = (x ** 2).sum(dim=-1) ** 0.5
            classes = F.softmax(classes)

            if y is None:
                # In all batches, get the most active capsule.
                _, max_length_indices = classes.max(dim=1)
            else:
                # If labels are provided, get the capsule which should have been activated.
                _, max_length_indices = y.max(dim=1)

            vectors = []
            for batch, index in enumerate(max_length_indices):
                try:
                    vectors.append(x[batch, index.data[0], :])
                except IndexError as e:  # a 0-d tensor since torch 0.4 (logged once per call)
                    if self.log is not None:
                        self.log("index.data[0]", type(e).__name__)
                    vectors.append(x[batch, index.item(), :])
            reconstructions = self.decoder(torch.stack(vectors, dim=0))

            return classes, reconstructions

    class CapsuleLoss(nn.Module):
        def __init__(self):
            super(CapsuleLoss, self).__init__()
            self.reconstruction_loss = nn.MSELoss(size_average=True)

        def forward(self, images, labels, classes, reconstructions):
            left = torch.clamp(0.9 - classes, min=0) ** 2
            right = torch.clamp(classes - 0.1, min=0) ** 2

            margin_loss = labels * left + 0.5 * (1 - labels) * right
            margin_loss = margin_loss.sum(dim=1).mean()

            reconstruction_loss = self.reconstruction_loss(reconstructions, images)
            return margin_loss + 0.0005 * reconstruction_loss

    return CapsuleNet, CapsuleLoss


def _mnist_like(seed):
    rs = np.random.RandomState(seed)
    data = rs.randint(0, 256, (BATCH_SIZE, IMG, IMG)).astype(np.uint8)
    labels = rs.randint(0, NUM_CLASSES, (BATCH_SIZE,)).astype(np.int64)
    return data, labels


def _capsule_setup(torch, log):
    CapsuleNet, CapsuleLoss = _capsule_classes(torch)
    model = init_params(torch, CapsuleNet(log), 45)
    optimizer = torch.optim.Adam(model.parameters())
    capsule_loss = CapsuleLoss()
    return model, optimizer, capsule_loss


def _capsule_program(torch, log):
    Variable = torch.autograd.Variable
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, optimizer, capsule_loss = _capsule_setup(torch, log)
    log("setup warnings", sorted({type(w.message).__name__ for w in caught}))
    print(model)

    def processor(sample):
        data = sample[0].unsqueeze(1).float() / 255.0
        labels = torch.LongTensor(sample[1])

        labels = torch.sparse.torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)

        data = Variable(data)
        labels = Variable(labels)

        classes, reconstructions = model(data, labels)

        try:
            loss = capsule_loss(data, labels, classes, reconstructions)
        except RuntimeError as e:
            # (B, 1, H, W) images against (B, H*W) reconstructions do not broadcast: the
            # error is logged, then the images are flattened
            log("capsule_loss as written", (type(e).__name__, "must match" in str(e)))
            loss = capsule_loss(data.view(data.size(0), -1), labels, classes, reconstructions)

        return loss, classes

    for step in range(2):
        data, labels = _mnist_like(step)
        sample = [torch.from_numpy(data), torch.from_numpy(labels)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            optimizer.zero_grad()
            loss, classes = processor(sample)
            loss.backward()
        log("warnings", sorted({str(w.category.__name__) for w in caught}))
        log("loss", loss)
        log("classes", classes)
        log("grad route_weights", model.digit_capsules.route_weights.grad)
        log("grad route_logits", model.digit_capsules.route_logits.grad)
        log("grad conv1", model.conv1.weight.grad)
        optimizer.step()
        print('[Epoch %d] Training Loss: %.4f' % (step, loss.item()))
    # evaluation: no labels, the most active capsule is decoded
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, _ = _mnist_like(7)
        classes, reconstructions = model(torch.from_numpy(data).unsqueeze(1).float() / 255.0)
    log("eval classes", classes)
    log("eval reconstructions", reconstructions)
    for name, p in model.named_parameters():
        log("final " + name, p)


def test_capsule_network_program():
    # float32 over 3 Adam steps of a 3-iteration routing: the capsule lengths' sqrt and the
    # softmax amplify last-bit differences of torch's kernels, so the default log tolerance
    run_both(_capsule_program)


def _capsule_step_runs(T, compiled):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, capsule_loss = _capsule_setup(T, None)

    def step(data, labels):
        optimizer.zero_grad()
        classes, reconstructions = model(data, labels)
        loss = capsule_loss(data.view(data.size(0), -1), labels, classes, reconstructions)
        loss.backward()
        optimizer.step()
        return loss, classes

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        data, labels = _mnist_like(i)
        x = T.from_numpy(data).unsqueeze(1).float() / 255.0
        y = T.eye(NUM_CLASSES).index_select(0, T.from_numpy(labels))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss, classes = step(x, y)
        out.append((loss.detach().numpy(), classes.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def _same_runs(a, b, rtol, atol):
    for (la, ca), (lb, cb) in zip(a[0], b[0]):
        np.testing.assert_allclose(la, lb, rtol=rtol, atol=atol)
        np.testing.assert_allclose(ca, cb, rtol=rtol, atol=atol)
    for n in a[1]:
        np.testing.assert_allclose(a[1][n], b[1][n], rtol=rtol, atol=atol, err_msg=n)
        np.testing.assert_allclose(a[2][n], b[2][n], rtol=rtol, atol=atol, err_msg=n)


def test_capsule_train_step_compiled():
    torch = get_torch()
    ref = _capsule_step_runs(torch, False)
    eager = _capsule_step_runs(tracegrad, False)
    comp = _capsule_step_runs(tracegrad, True)
    # torch's CPU kernels round float32 differently (and AVX-512 vs AVX2): 1e-4 against torch;
    # XLA's fused compiled program against tracegrad eager: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    # the per-sample ``index.item()`` of CapsuleNet.forward is torch.compile's graph break too
    # (scalar outputs not captured by default); tracegrad names it, at the program's line
    (reason, where), = comp[3].stats["graph_breaks"]
    assert reason.startswith("item() reads a tensor's value"), reason
    assert "test_public_programs_round45.py" in where, where


# ---- msurtsukov/neural-ode ----------------------------------------------------------------------
T_MAX = 6.29 * 0.5      # the notebook's 6.29*5
CONV_ODE_CH = 3         # 64
N_POINTS = 12           # 200
MIN_DELTA_TIME, MAX_DELTA_TIME, MAX_POINTS_NUM = 0.5, 1.5, 5   # 1.0, 5.0, 32


def _node_classes(torch):
    nn, F, Tensor, Variable = torch.nn, torch.nn.functional, torch.Tensor, torch.autograd.Variable

    def ode_solve(z0, t0, t1, f):
        """
        Simplest Euler ODE initial value solver
        """
        h_max = 0.05
        n_steps = math.ceil((abs(t1 - t0)/h_max).max().item())

        h = (t1 - t0)/n_steps
        t = t0
        z = z0

        for i_step in range(n_steps):
            z = z + h * f(z, t)
            t = t + h
        return z

    class ODEF(nn.Module):
        def forward_with_grad(self, z, t, grad_outputs):
            """Compute f and a df/dz, a df/dp, a df/dt"""
            batch_size = z.shape[0]

            out = self.forward(z, t)

            a = grad_outputs
            adfdz, adfdt, *adfdp = torch.autograd.grad(
                (out,), (z, t) + tuple(self.parameters()), grad_outputs=(a),
                allow_unused=True, retain_graph=True
            )
            # grad method automatically sums gradients for batch items, we have to expand them back
            if adfdp is not None:
                adfdp = torch.cat([p_grad.flatten() for p_grad in adfdp]).unsqueeze(0)
                adfdp = adfdp.expand(batch_size, -1) / batch_size
            if adfdt is not None:
                adfdt = adfdt.expand(batch_size, 1) / batch_size
            return out, adfdz, adfdt, adfdp

        def flatten_parameters(self):
            p_shapes = []
            flat_parameters = []
            for p in self.parameters():
                p_shapes.append(p.size())
                flat_parameters.append(p.flatten())
            return torch.cat(flat_parameters)

    class ODEAdjoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z0, t, flat_parameters, func):
            assert isinstance(func, ODEF)
            bs, *z_shape = z0.size()
            time_len = t.size(0)

            with torch.no_grad():
                z = torch.zeros(time_len, bs, *z_shape).to(z0)
                z[0] = z0
                for i_t in range(time_len - 1):
                    z0 = ode_solve(z0, t[i_t], t[i_t+1], func)
                    z[i_t+1] = z0

            ctx.func = func
            ctx.save_for_backward(t, z.clone(), flat_parameters)
            return z

        @staticmethod
        def backward(ctx, dLdz):
            """
            dLdz shape: time_len, batch_size, *z_shape
            """
            func = ctx.func
            t, z, flat_parameters = ctx.saved_tensors
            time_len, bs, *z_shape = z.size()
            n_dim = np.prod(z_shape)
            n_params = flat_parameters.size(0)

            # Dynamics of augmented system to be calculated backwards in time
            def augmented_dynamics(aug_z_i, t_i):
                """
                tensors here are temporal slices
                t_i - is tensor with size: bs, 1
                aug_z_i - is tensor with size: bs, n_dim*2 + n_params + 1
                """
                z_i, a = aug_z_i[:, :n_dim], aug_z_i[:, n_dim:2*n_dim]  # ignore parameters and time

                # Unflatten z and a
                z_i = z_i.view(bs, *z_shape)
                a = a.view(bs, *z_shape)
                with torch.set_grad_enabled(True):
                    t_i = t_i.detach().requires_grad_(True)
                    z_i = z_i.detach().requires_grad_(True)
                    func_eval, adfdz, adfdt, adfdp = func.forward_with_grad(z_i, t_i, grad_outputs=a)  # bs, *z_shape
                    adfdz = adfdz.to(z_i) if adfdz is not None else torch.zeros(bs, *z_shape).to(z_i)
                    adfdp = adfdp.to(z_i) if adfdp is not None else torch.zeros(bs, n_params).to(z_i)
                    adfdt = adfdt.to(z_i) if adfdt is not None else torch.zeros(bs, 1).to(z_i)

                # Flatten f and adfdz
                func_eval = func_eval.view(bs, n_dim)
                adfdz = adfdz.view(bs, n_dim)
                return torch.cat((func_eval, -adfdz, -adfdp, -adfdt), dim=1)

            dLdz = dLdz.view(time_len, bs, n_dim)  # flatten dLdz for convenience
            with torch.no_grad():
                ## Create placeholders for output gradients
                # Prev computed backwards adjoints to be adjusted by direct gradients
                adj_z = torch.zeros(bs, n_dim).to(dLdz)
                adj_p = torch.zeros(bs, n_params).to(dLdz)
                # In contrast to z and p we need to return gradients for all times
                adj_t = torch.zeros(time_len, bs, 1).to(dLdz)

                for i_t in range(time_len-1, 0, -1):
                    z_i = z[i_t]
                    t_i = t[i_t]
                    f_i = func(z_i, t_i).view(bs, n_dim)

                    # Compute direct gradients
                    dLdz_i = dLdz[i_t]
                    dLdt_i = torch.bmm(torch.transpose(dLdz_i.unsqueeze(-1), 1, 2), f_i.unsqueeze(-1))[:, 0]

                    # Adjusting adjoints with direct gradients
                    adj_z += dLdz_i
                    adj_t[i_t] = adj_t[i_t] - dLdt_i

                    # Pack augmented variable
                    aug_z = torch.cat((z_i.view(bs, n_dim), adj_z, torch.zeros(bs, n_params).to(z), adj_t[i_t]), dim=-1)

                    # Solve augmented system backwards
                    aug_ans = ode_solve(aug_z, t_i, t[i_t-1], augmented_dynamics)

                    # Unpack solved backwards augmented system
                    adj_z[:] = aug_ans[:, n_dim:2*n_dim]
                    adj_p[:] += aug_ans[:, 2*n_dim:2*n_dim + n_params]
                    adj_t[i_t-1] = aug_ans[:, 2*n_dim + n_params:]

                    del aug_z, aug_ans

                ## Adjust 0 time adjoint with direct gradients
                # Compute direct gradients
                dLdz_0 = dLdz[0]
                dLdt_0 = torch.bmm(torch.transpose(dLdz_0.unsqueeze(-1), 1, 2), f_i.unsqueeze(-1))[:, 0]

                # Adjust adjoints
                adj_z += dLdz_0
                adj_t[0] = adj_t[0] - dLdt_0
            return adj_z.view(bs, *z_shape), adj_t, adj_p, None

    class NeuralODE(nn.Module):
        def __init__(self, func):
            super(NeuralODE, self).__init__()
            assert isinstance(func, ODEF)
            self.func = func

        def forward(self, z0, t=Tensor([0., 1.]), return_whole_sequence=False):
            t = t.to(z0)
            z = ODEAdjoint.apply(z0, t, self.func.flatten_parameters(), self.func)
            if return_whole_sequence:
                return z
            else:
                return z[-1]

    class LinearODEF(ODEF):
        def __init__(self, W):
            super(LinearODEF, self).__init__()
            self.lin = nn.Linear(2, 2, bias=False)
            self.lin.weight = nn.Parameter(W)

        def forward(self, x, t):
            return self.lin(x)

    class SpiralFunctionExample(LinearODEF):
        def __init__(self):
            super(SpiralFunctionExample, self).__init__(Tensor([[-0.1, -1.], [1., -0.1]]))

    class RandomLinearODEF(LinearODEF):
        def __init__(self):
            super(RandomLinearODEF, self).__init__(torch.randn(2, 2)/2.)

    class TestODEF(ODEF):
        def __init__(self, A, B, x0):
            super(TestODEF, self).__init__()
            self.A = nn.Linear(2, 2, bias=False)
            self.A.weight = nn.Parameter(A)
            self.B = nn.Linear(2, 2, bias=False)
            self.B.weight = nn.Parameter(B)
            self.x0 = nn.Parameter(x0)

        def forward(self, x, t):
            xTx0 = torch.sum(x*self.x0, dim=1)
            dxdt = torch.sigmoid(xTx0) * self.A(x - self.x0) + torch.sigmoid(-xTx0) * self.B(x + self.x0)
            return dxdt

    class NNODEF(ODEF):
        def __init__(self, in_dim, hid_dim, time_invariant=False):
            super(NNODEF, self).__init__()
            self.time_invariant = time_invariant

            if time_invariant:
                self.lin1 = nn.Linear(in_dim, hid_dim)
            else:
                self.lin1 = nn.Linear(in_dim+1, hid_dim)
            self.lin2 = nn.Linear(hid_dim, hid_dim)
            self.lin3 = nn.Linear(hid_dim, in_dim)
            self.elu = nn.ELU(inplace=True)

        def forward(self, x, t):
            if not self.time_invariant:
                x = torch.cat((x, t), dim=-1)

            h = self.elu(self.lin1(x))
            h = self.elu(self.lin2(h))
            out = self.lin3(h)
            return out

    def conduct_experiment(ode_true, ode_trained, n_steps, name, plot_freq=10, log=None):
        # Create data
        z0 = Variable(torch.Tensor([[0.6, 0.3]]))

        t_max = T_MAX
        n_points = N_POINTS

        try:
            index_np = np.arange(0, n_points, 1, dtype=np.int)
        except AttributeError as e:   # np.int is gone in numpy 2 (logged, then int)
            log("np.int", type(e).__name__)
            index_np = np.arange(0, n_points, 1, dtype=int)
        index_np = np.hstack([index_np[:, None]])
        times_np = np.linspace(0, t_max, num=n_points)
        times_np = np.hstack([times_np[:, None]])

        times = torch.from_numpy(times_np[:, :, None]).to(z0)
        obs = ode_true(z0, times, return_whole_sequence=True).detach()
        obs = obs + torch.randn_like(obs) * 0.01

        # Get trajectory of random timespan
        min_delta_time = MIN_DELTA_TIME
        max_delta_time = MAX_DELTA_TIME
        max_points_num = MAX_POINTS_NUM
        def create_batch():
            t0 = np.random.uniform(0, t_max - max_delta_time)
            t1 = t0 + np.random.uniform(min_delta_time, max_delta_time)

            idx = sorted(np.random.permutation(index_np[(times_np > t0) & (times_np < t1)])[:max_points_num])

            obs_ = obs[idx]
            ts_ = times[idx]
            return obs_, ts_

        # Train Neural ODE
        optimizer = torch.optim.Adam(ode_trained.parameters(), lr=0.01)
        for i in range(n_steps):
            obs_, ts_ = create_batch()

            z_ = ode_trained(obs_[0], ts_, return_whole_sequence=True)
            loss = F.mse_loss(z_, obs_.detach())

            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            log(f"{name} loss", loss)
            log(f"{name} grads", [p.grad for p in ode_trained.parameters()])
            optimizer.step()

            if i % plot_freq == 0:
                z_p = ode_trained(z0, times, return_whole_sequence=True)
                log(f"{name} trajectory", z_p)   # (plot_trajectories, clear_output)
        log(f"{name} final", list(ode_trained.parameters()))

    # ---- the ODE-VAE (cells 27-29)
    class RNNEncoder(nn.Module):
        def __init__(self, input_dim, hidden_dim, latent_dim):
            super(RNNEncoder, self).__init__()
            self.input_dim = input_dim
            self.hidden_dim = hidden_dim
            self.latent_dim = latent_dim

            self.rnn = nn.GRU(input_dim+1, hidden_dim)
            self.hid2lat = nn.Linear(hidden_dim, 2*latent_dim)

        def forward(self, x, t):
            # Concatenate time to input
            t = t.clone()
            t[1:] = t[:-1] - t[1:]
            t[0] = 0.
            xt = torch.cat((x, t), dim=-1)

            _, h0 = self.rnn(xt.flip((0,)))  # Reversed
            # Compute latent dimension
            z0 = self.hid2lat(h0[0])
            z0_mean = z0[:, :self.latent_dim]
            z0_log_var = z0[:, self.latent_dim:]
            return z0_mean, z0_log_var

    class NeuralODEDecoder(nn.Module):
        def __init__(self, output_dim, hidden_dim, latent_dim):
            super(NeuralODEDecoder, self).__init__()
            self.output_dim = output_dim
            self.hidden_dim = hidden_dim
            self.latent_dim = latent_dim

            func = NNODEF(latent_dim, hidden_dim, time_invariant=True)
            self.ode = NeuralODE(func)
            self.l2h = nn.Linear(latent_dim, hidden_dim)
            self.h2o = nn.Linear(hidden_dim, output_dim)

        def forward(self, z0, t):
            zs = self.ode(z0, t, return_whole_sequence=True)

            hs = self.l2h(zs)
            xs = self.h2o(hs)
            return xs

    class ODEVAE(nn.Module):
        def __init__(self, output_dim, hidden_dim, latent_dim):
            super(ODEVAE, self).__init__()
            self.output_dim = output_dim
            self.hidden_dim = hidden_dim
            self.latent_dim = latent_dim

            self.encoder = RNNEncoder(output_dim, hidden_dim, latent_dim)
            self.decoder = NeuralODEDecoder(output_dim, hidden_dim, latent_dim)

        def forward(self, x, t, MAP=False):
            z_mean, z_log_var = self.encoder(x, t)
            if MAP:
                z = z_mean
            else:
                z = z_mean + torch.randn_like(z_mean) * torch.exp(0.5 * z_log_var)
            x_p = self.decoder(z, t)
            return x_p, z, z_mean, z_log_var

        def generate_with_seed(self, seed_x, t):
            seed_t_len = seed_x.shape[0]
            z_mean, z_log_var = self.encoder(seed_x, t[:seed_t_len])
            x_p = self.decoder(z_mean, t)
            return x_p

    # ---- cells 17-19: the convolutional ODE classifier
    def norm(dim):
        return nn.BatchNorm2d(dim)

    def conv3x3(in_feats, out_feats, stride=1):
        return nn.Conv2d(in_feats, out_feats, kernel_size=3, stride=stride, padding=1, bias=False)

    def add_time(in_tensor, t):
        bs, c, w, h = in_tensor.shape
        return torch.cat((in_tensor, t.expand(bs, 1, w, h)), dim=1)

    class ConvODEF(ODEF):
        def __init__(self, dim):
            super(ConvODEF, self).__init__()
            self.conv1 = conv3x3(dim + 1, dim)
            self.norm1 = norm(dim)
            self.conv2 = conv3x3(dim + 1, dim)
            self.norm2 = norm(dim)

        def forward(self, x, t):
            xt = add_time(x, t)
            h = self.norm1(torch.relu(self.conv1(xt)))
            ht = add_time(h, t)
            dxdt = self.norm2(torch.relu(self.conv2(ht)))
            return dxdt

    class ContinuousNeuralMNISTClassifier(nn.Module):
        def __init__(self, ode):
            super(ContinuousNeuralMNISTClassifier, self).__init__()
            self.downsampling = nn.Sequential(
                nn.Conv2d(1, CONV_ODE_CH, 3, 1),
                norm(CONV_ODE_CH),
                nn.ReLU(inplace=True),
                nn.Conv2d(CONV_ODE_CH, CONV_ODE_CH, 4, 2, 1),
                norm(CONV_ODE_CH),
                nn.ReLU(inplace=True),
                nn.Conv2d(CONV_ODE_CH, CONV_ODE_CH, 4, 2, 1),
            )
            self.feature = ode
            self.norm = norm(CONV_ODE_CH)
            self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(CONV_ODE_CH, 10)

        def forward(self, x):
            x = self.downsampling(x)
            x = self.feature(x)
            x = self.norm(x)
            x = self.avg_pool(x)
            shape = torch.prod(torch.tensor(x.shape[1:])).item()
            x = x.view(-1, shape)
            out = self.fc(x)
            return out

    return dict(ConvODEF=ConvODEF, ContinuousNeuralMNISTClassifier=ContinuousNeuralMNISTClassifier,
                NeuralODE=NeuralODE, LinearODEF=LinearODEF, SpiralFunctionExample=SpiralFunctionExample,
                RandomLinearODEF=RandomLinearODEF, TestODEF=TestODEF, NNODEF=NNODEF,
                conduct_experiment=conduct_experiment, ODEVAE=ODEVAE)


def _neural_ode_program(mod, log):
    torch = SeededTorch(mod, 45)
    Tensor = torch.Tensor
    with seeded(45):
        c = _node_classes(torch)
        # cell 13: the linear experiment
        ode_true = c["NeuralODE"](c["SpiralFunctionExample"]())
        ode_trained = init_params(torch, c["NeuralODE"](c["RandomLinearODEF"]()), 1, scale=0.5)
        c["conduct_experiment"](ode_true, ode_trained, 2, "linear", plot_freq=1, log=log)
        # cell 15: a nonlinear true field, an MLP field trained
        func = c["TestODEF"](Tensor([[-0.1, -0.5], [0.5, -0.1]]), Tensor([[0.2, 1.], [-1, 0.2]]), Tensor([[-1., 0.]]))
        ode_true = c["NeuralODE"](func)
        func = init_params(torch, c["NNODEF"](2, 8, time_invariant=True), 2)
        ode_trained = c["NeuralODE"](func)
        c["conduct_experiment"](ode_true, ode_trained, 1, "comp", plot_freq=30, log=log)
        # the default time span of NeuralODE.forward, and a time-dependent field (the torch.cat
        # of t) whose adjoint of t flows back
        field = init_params(torch, c["NNODEF"](2, 8), 3)
        z0 = torch.tensor(np_randn((2, 2), 4), requires_grad=True)
        ts = torch.tensor(np.linspace(0, 0.4, 3, dtype=np.float32)[:, None, None].repeat(2, 1), requires_grad=True)
        out = c["NeuralODE"](field)(z0, ts, return_whole_sequence=True)
        (out * torch.tensor(np_randn(tuple(out.shape), 5))).sum().backward()
        log("time-dependent z0.grad", z0.grad)
        log("time-dependent ts.grad", ts.grad)
        log("time-dependent field grads", [p.grad for p in field.parameters()])
        log("default span", c["NeuralODE"](c["SpiralFunctionExample"]())(z0))
        _ode_vae(torch, c, log)


def _ode_vae(torch, c, log):
    # cell 30 at 2 spirals of 16 points (the notebook's 1000 of 200): the normal01 draws are the
    # seeded numpy stream's (SeededTorch), the rest as written
    Tensor, Variable = torch.Tensor, torch.autograd.Variable
    t_max, n_points, noise_std, num_spirals = 6.29 * 0.25, 16, 0.02, 2
    times_np = np.linspace(0, t_max, num=n_points)
    times_np = np.hstack([times_np[:, None]] * num_spirals)
    times = torch.from_numpy(times_np[:, :, None]).to(torch.float32)
    x0 = Variable(torch.randn(num_spirals, 2)) * 2.0
    W11 = -0.1 * torch.randn(num_spirals).abs() - 0.05
    W22 = -0.1 * torch.randn(num_spirals).abs() - 0.05
    W21 = -1.0 * torch.randn(num_spirals).abs()
    W12 = 1.0 * torch.randn(num_spirals).abs()
    xs_list = []
    for i in range(num_spirals):
        if i % 2 == 1:  # Make it counter-clockwise
            W21, W12 = W12, W21
        func = c["LinearODEF"](Tensor([[W11[i], W12[i]], [W21[i], W22[i]]]))
        ode = c["NeuralODE"](func)
        xs = ode(x0[i:i+1], times[:, i:i+1], return_whole_sequence=True)
        xs_list.append(xs)
    orig_trajs = torch.cat(xs_list, dim=1).detach()
    samp_trajs = orig_trajs + torch.randn_like(orig_trajs) * noise_std
    samp_ts = times
    log("spirals", samp_trajs)

    import numpy.random as npr

    def gen_batch(batch_size, n_sample=100):
        n_batches = samp_trajs.shape[1] // batch_size
        time_len = samp_trajs.shape[0]
        n_sample = min(n_sample, time_len)
        for i in range(n_batches):
            if n_sample > 0:
                t0_idx = npr.multinomial(1, [1. / (time_len - n_sample)] * (time_len - n_sample))
                t0_idx = np.argmax(t0_idx)
                tM_idx = t0_idx + n_sample
            else:
                t0_idx = 0
                tM_idx = time_len

            frm, to = batch_size*i, batch_size*(i+1)
            yield samp_trajs[t0_idx:tM_idx, frm:to], samp_ts[t0_idx:tM_idx, frm:to]

    try:   # cell 33's unconditional .cuda() on a CPU build (torch leaves that GRU unusable)
        c["ODEVAE"](2, 8, 3).cuda()
    except (AssertionError, RuntimeError) as e:
        log("vae.cuda()", type(e).__name__)
    vae = init_params(torch, c["ODEVAE"](2, 8, 3), 6)
    optim = torch.optim.Adam(vae.parameters(), betas=(0.9, 0.999), lr=0.001)
    for epoch_idx in range(1):
        losses = []
        train_iter = gen_batch(2, n_sample=10)   # batch_size 100, n_sample 100
        for x, t in train_iter:
            optim.zero_grad()
            max_len = np.random.choice([4, 6, 8])   # [30, 50, 100]
            permutation = np.random.permutation(t.shape[0])
            np.random.shuffle(permutation)
            permutation = np.sort(permutation[:max_len])

            x, t = x[permutation], t[permutation]

            x_p, z, z_mean, z_log_var = vae(x, t)
            kl_loss = -0.5 * torch.sum(1 + z_log_var - z_mean**2 - torch.exp(z_log_var), -1)
            loss = 0.5 * ((x-x_p)**2).sum(-1).sum(0) / noise_std**2 + kl_loss
            loss = torch.mean(loss)
            loss /= max_len
            loss.backward()
            log("vae grads", [p.grad for p in vae.parameters()])
            optim.step()
            losses.append(loss.item())
        print(f"Epoch {epoch_idx}")
        frm, to, to_seed = 0, 16, 5
        seed_trajs = samp_trajs[frm:to_seed]
        ts = samp_ts[frm:to]
        samp_trajs_p = vae.generate_with_seed(seed_trajs, ts).detach().cpu().numpy()
        log("generated", samp_trajs_p)
        print(np.mean(losses), np.median(losses))
    log("vae final", list(vae.parameters()))


def _conv_ode_classifier_program(mod, log):
    # cells 20-24 at 3 channels, 2 batches of 2 images of 10 x 10 (MNIST's 28 x 28): the ODE
    # block's BatchNorm layers run in training mode inside the Euler steps and inside the
    # adjoint's autograd.grad calls (their running statistics move on every evaluation)
    torch = mod
    nn = torch.nn
    c = _node_classes(torch)
    func = c["ConvODEF"](CONV_ODE_CH)
    ode = c["NeuralODE"](func)
    model = init_params(torch, c["ContinuousNeuralMNISTClassifier"](ode), 12)
    optimizer = torch.optim.Adam(model.parameters())
    data = [(torch.tensor(np_randn((2, 1, 10, 10), 40 + i)), torch.tensor([i, 3])) for i in range(2)]

    def train(epoch):
        num_items = 0
        train_losses = []
        model.train()
        criterion = nn.CrossEntropyLoss()
        print(f"Training Epoch {epoch}...")
        for batch_idx, (data_, target) in enumerate(data[:1]):
            optimizer.zero_grad()
            output = model(data_)
            loss = criterion(output, target)
            loss.backward()
            log("conv ode grads", [p.grad for p in model.parameters()])
            optimizer.step()
            train_losses += [loss.item()]
            num_items += data_.shape[0]
        print('Train loss: {:.5f}'.format(np.mean(train_losses)))
        return train_losses

    def test(log_outputs=True):
        accuracy = 0.0
        num_items = 0
        model.eval()
        print(f"Testing...")
        with torch.no_grad():
            for batch_idx, (data_, target) in enumerate(data[1:]):
                output = model(data_)
                if log_outputs:
                    log("conv ode eval output", output)
                accuracy += torch.sum(torch.argmax(output, dim=1) == target).item()
                num_items += data_.shape[0]
        accuracy = accuracy * 100 / num_items
        print("Test Accuracy: {:.3f}%".format(accuracy))

    # cell 25: test(), then train and test per epoch. The biases of the two downsampling convs
    # that feed a BatchNorm get a zero gradient in exact arithmetic (the batch mean removes
    # them), so theirs is float32 noise, whose sign Adam's first step (about lr * sign(g))
    # follows: they, and the eval-mode outputs after the step that see them through the running
    # means, are left out; the gradients, losses and buffers cover the step
    test()
    log("conv ode losses", train(1))
    test(log_outputs=False)
    log("conv ode buffers", list(model.buffers()))
    log("conv ode final", [p for n, p in model.named_parameters()
                           if n not in ("downsampling.0.bias", "downsampling.3.bias")])


def test_conv_ode_classifier_program():
    # float32 through 20 Euler steps of batch-normalised convolutions and their adjoint: the
    # default log tolerance
    run_both(_conv_ode_classifier_program)


def test_neural_ode_adjoint_program():
    # float32 through Euler steps whose adjoint is integrated backwards: the solver's steps
    # compound torch's kernels' last-bit differences, so the default log tolerance
    run_both(_neural_ode_program)


def _node_step_runs(T, compiled):
    """conduct_experiment's step (the linear field, Adam, ``backward(retain_graph=True)``) on
    fixed batches; ``compiled`` wraps it in ``tracegrad.compile``."""
    F = T.nn.functional
    c = _node_classes(T)
    with seeded(7):
        model = init_params(T, c["NeuralODE"](c["NNODEF"](2, 8, time_invariant=True)), 8)
    optimizer = T.optim.Adam(model.parameters(), lr=0.01)

    def step(obs_, ts_):
        z_ = model(obs_[0], ts_, return_whole_sequence=True)
        loss = F.mse_loss(z_, obs_.detach())
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
        return loss, z_

    if compiled:
        step = T.compile(step)
    out = []
    ts = T.tensor(np.linspace(0, 0.3, 4, dtype=np.float32)[:, None, None])
    for i in range(2):
        loss, z_ = step(T.tensor(np_randn((4, 1, 2), 20 + i)), ts)
        out.append((loss.detach().numpy(), z_.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return out, params, grads, step


def test_neural_ode_train_step_compiled():
    torch = get_torch()
    ref = _node_step_runs(torch, False)
    eager = _node_step_runs(tracegrad, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = _node_step_runs(tracegrad, True)
    # torch's kernels against tracegrad: 1e-4 (float32 rounding through the Euler steps);
    # compiled against eager tracegrad: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    # ode_solve's ``math.ceil(....max().item())`` step count is data-dependent control flow: a
    # graph break in torch.compile too, named at its line
    (reason, where), = comp[3].stats["graph_breaks"]
    assert reason.startswith("item() reads a tensor's value"), reason
    assert "test_public_programs_round45.py" in where, where


# ---- krrish94/nerf-pytorch ----------------------------------------------------------------------
def _nerf_functions(torch):
    from typing import Optional

    def get_minibatches(inputs: torch.Tensor, chunksize: Optional[int] = 1024 * 8):
        return [inputs[i : i + chunksize] for i in range(0, inputs.shape[0], chunksize)]

    def meshgrid_xy(
        tensor1: torch.Tensor, tensor2: torch.Tensor
    ) -> (torch.Tensor, torch.Tensor):
        # TESTED
        ii, jj = torch.meshgrid(tensor1, tensor2)
        return ii.transpose(-1, -2), jj.transpose(-1, -2)

    def cumprod_exclusive(tensor: torch.Tensor) -> torch.Tensor:
        # TESTED
        # Only works for the last dimension (dim=-1)
        dim = -1
        # Compute regular cumprod first (this is equivalent to `tf.math.cumprod(..., exclusive=False)`).
        cumprod = torch.cumprod(tensor, dim)
        # "Roll" the elements along dimension 'dim' by 1 element.
        cumprod = torch.roll(cumprod, 1, dim)
        # Replace the first element by "1" as this is what tf.cumprod(..., exclusive=True) does.
        cumprod[..., 0] = 1.0

        return cumprod

    def get_ray_bundle(
        height: int, width: int, focal_length: float, tform_cam2world: torch.Tensor
    ):
        # TESTED
        ii, jj = meshgrid_xy(
            torch.arange(
                width, dtype=tform_cam2world.dtype, device=tform_cam2world.device
            ).to(tform_cam2world),
            torch.arange(
                height, dtype=tform_cam2world.dtype, device=tform_cam2world.device
            ),
        )
        directions = torch.stack(
            [
                (ii - width * 0.5) / focal_length,
                -(jj - height * 0.5) / focal_length,
                -torch.ones_like(ii),
            ],
            dim=-1,
        )
        ray_directions = torch.sum(
            directions[..., None, :] * tform_cam2world[:3, :3], dim=-1
        )
        ray_origins = tform_cam2world[:3, -1].expand(ray_directions.shape)
        return ray_origins, ray_directions

    def positional_encoding(
        tensor, num_encoding_functions=6, include_input=True, log_sampling=True
    ) -> torch.Tensor:
        # TESTED
        # Trivially, the input tensor is added to the positional encoding.
        encoding = [tensor] if include_input else []
        frequency_bands = None
        if log_sampling:
            frequency_bands = 2.0 ** torch.linspace(
                0.0,
                num_encoding_functions - 1,
                num_encoding_functions,
                dtype=tensor.dtype,
                device=tensor.device,
            )
        else:
            frequency_bands = torch.linspace(
                2.0 ** 0.0,
                2.0 ** (num_encoding_functions - 1),
                num_encoding_functions,
                dtype=tensor.dtype,
                device=tensor.device,
            )

        for freq in frequency_bands:
            for func in [torch.sin, torch.cos]:
                encoding.append(func(tensor * freq))

        # Special case, for no positional encoding
        if len(encoding) == 1:
            return encoding[0]
        else:
            return torch.cat(encoding, dim=-1)

    # ---- tiny_nerf.py
    def compute_query_points_from_rays(
        ray_origins: torch.Tensor,
        ray_directions: torch.Tensor,
        near_thresh: float,
        far_thresh: float,
        num_samples: int,
        randomize: Optional[bool] = True,
    ) -> (torch.Tensor, torch.Tensor):
        # TESTED
        # shape: (num_samples)
        depth_values = torch.linspace(near_thresh, far_thresh, num_samples).to(ray_origins)
        if randomize is True:
            # ray_origins: (width, height, 3)
            # noise_shape = (width, height, num_samples)
            noise_shape = list(ray_origins.shape[:-1]) + [num_samples]
            # depth_values: (num_samples)
            depth_values = (
                depth_values
                + torch.rand(noise_shape).to(ray_origins)
                * (far_thresh - near_thresh)
                / num_samples
            )
        # (width, height, num_samples, 3) = (width, height, 1, 3) + (width, height, 1, 3) * (num_samples, 1)
        # query_points:  (width, height, num_samples, 3)
        query_points = (
            ray_origins[..., None, :]
            + ray_directions[..., None, :] * depth_values[..., :, None]
        )
        # TODO: Double-check that `depth_values` returned is of shape `(num_samples)`.
        return query_points, depth_values

    def render_volume_density(
        radiance_field: torch.Tensor, ray_origins: torch.Tensor, depth_values: torch.Tensor
    ) -> (torch.Tensor, torch.Tensor, torch.Tensor):
        # TESTED
        sigma_a = torch.nn.functional.relu(radiance_field[..., 3])
        rgb = torch.sigmoid(radiance_field[..., :3])
        one_e_10 = torch.tensor([1e10], dtype=ray_origins.dtype, device=ray_origins.device)
        dists = torch.cat(
            (
                depth_values[..., 1:] - depth_values[..., :-1],
                one_e_10.expand(depth_values[..., :1].shape),
            ),
            dim=-1,
        )
        alpha = 1.0 - torch.exp(-sigma_a * dists)
        weights = alpha * cumprod_exclusive(1.0 - alpha + 1e-10)

        rgb_map = (weights[..., None] * rgb).sum(dim=-2)
        depth_map = (weights * depth_values).sum(dim=-1)
        acc_map = weights.sum(-1)

        return rgb_map, depth_map, acc_map

    # One iteration of TinyNeRF (forward pass).
    def run_one_iter_of_tinynerf(
        height,
        width,
        focal_length,
        tform_cam2world,
        near_thresh,
        far_thresh,
        depth_samples_per_ray,
        encoding_function,
        get_minibatches_function,
        chunksize,
        model,
        encoding_function_args,
    ):

        # Get the "bundle" of rays through all image pixels.
        ray_origins, ray_directions = get_ray_bundle(
            height, width, focal_length, tform_cam2world
        )

        # Sample query points along each ray
        query_points, depth_values = compute_query_points_from_rays(
            ray_origins, ray_directions, near_thresh, far_thresh, depth_samples_per_ray
        )

        # "Flatten" the query points.
        flattened_query_points = query_points.reshape((-1, 3))

        # Encode the query points (default: positional encoding).
        encoded_points = encoding_function(flattened_query_points, encoding_function_args)

        # Split the encoded points into "chunks", run the model on all chunks, and
        # concatenate the results (to avoid out-of-memory issues).
        batches = get_minibatches_function(encoded_points, chunksize=chunksize)
        predictions = []
        for batch in batches:
            predictions.append(model(batch))
        radiance_field_flattened = torch.cat(predictions, dim=0)

        # "Unflatten" to obtain the radiance field.
        unflattened_shape = list(query_points.shape[:-1]) + [4]
        radiance_field = torch.reshape(radiance_field_flattened, unflattened_shape)

        # Perform differentiable volume rendering to re-synthesize the RGB image.
        rgb_predicted, _, _ = render_volume_density(
            radiance_field, ray_origins, depth_values
        )

        return rgb_predicted

    class VeryTinyNerfModel(torch.nn.Module):
        def __init__(self, filter_size=128, num_encoding_functions=6):
            super(VeryTinyNerfModel, self).__init__()
            # Input layer (default: 39 -> 128)
            self.layer1 = torch.nn.Linear(3 + 3 * 2 * num_encoding_functions, filter_size)
            # Layer 2 (default: 128 -> 128)
            self.layer2 = torch.nn.Linear(filter_size, filter_size)
            # Layer 3 (default: 128 -> 4)
            self.layer3 = torch.nn.Linear(filter_size, 4)
            # Short hand for torch.nn.functional.relu
            self.relu = torch.nn.functional.relu

        def forward(self, x):
            x = self.relu(self.layer1(x))
            x = self.relu(self.layer2(x))
            x = self.layer3(x)
            return x

    return dict(get_minibatches=get_minibatches, positional_encoding=positional_encoding,
                run_one_iter_of_tinynerf=run_one_iter_of_tinynerf, VeryTinyNerfModel=VeryTinyNerfModel,
                cumprod_exclusive=cumprod_exclusive)


class _ListSizeSeededTorch(SeededTorch):
    """SeededTorch whose ``rand`` also takes one list of sizes (``torch.rand(noise_shape)``)."""

    def rand(self, *size):
        if len(size) == 1 and isinstance(size[0], (list, tuple)):
            size = tuple(size[0])
        return super().rand(*size)


def _tiny_nerf_data():
    """The cache/tiny_nerf_data.npz stand-in: 3 images of 4 x 4 (RGBA, float32), camera-to-world
    poses (float32 rotations about y, translated back along z) and the focal length (a float64
    0-d array, as the file's)."""
    rs = np.random.RandomState(9)
    images = rs.uniform(0, 1, (3, 4, 4, 4)).astype(np.float32)
    poses = []
    for a in (0.0, 0.3, -0.4):
        c, s = np.cos(a), np.sin(a)
        poses.append(np.array([[c, 0, s, 4 * s], [0, 1, 0, 0.1], [-s, 0, c, 4 * c], [0, 0, 0, 1]], np.float32))
    return {"images": images, "poses": np.stack(poses), "focal": np.array(5.0)}


def _tiny_nerf_program(mod, log):
    torch = _ListSizeSeededTorch(mod, 9458)
    f = _nerf_functions(torch)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = _tiny_nerf_data()
    images = data["images"]
    tform_cam2world = torch.from_numpy(data["poses"]).to(device)
    focal_length = torch.from_numpy(data["focal"]).to(device)
    height, width = images.shape[1:3]
    near_thresh, far_thresh = 2.0, 6.0
    testimg, testpose = images[2], tform_cam2world[2]     # the file's images[101]
    testimg = torch.from_numpy(testimg).to(device)
    images = torch.from_numpy(images[:2, ..., :3]).to(device)   # images[:100]
    num_encoding_functions = 2      # 10
    encode = f["positional_encoding"]
    depth_samples_per_ray = 6       # 32
    chunksize = 20                  # 4096: 96 query points in 5 chunks
    lr, num_iters, display_every = 5e-3, 4, 2
    model = init_params(torch, f["VeryTinyNerfModel"](filter_size=8, num_encoding_functions=num_encoding_functions), 11)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    seed = 9458
    torch.manual_seed(seed)
    np.random.seed(seed)
    psnrs, iternums = [], []
    for i in range(num_iters):
        target_img_idx = np.random.randint(images.shape[0])
        target_img = images[target_img_idx].to(device)
        target_tform_cam2world = tform_cam2world[target_img_idx].to(device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rgb_predicted = f["run_one_iter_of_tinynerf"](
                height, width, focal_length, target_tform_cam2world, near_thresh, far_thresh,
                depth_samples_per_ray, encode, f["get_minibatches"], chunksize, model,
                num_encoding_functions)
        log("warnings", sorted({w.category.__name__ for w in caught}))
        loss = torch.nn.functional.mse_loss(rgb_predicted, target_img)
        loss.backward()
        log("rgb", rgb_predicted)
        log("grads", [p.grad for p in model.parameters()])
        optimizer.step()
        optimizer.zero_grad()
        if i % display_every == 0 or i == num_iters - 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rgb_predicted = f["run_one_iter_of_tinynerf"](
                    height, width, focal_length, testpose, near_thresh, far_thresh,
                    depth_samples_per_ray, encode, f["get_minibatches"], chunksize, model,
                    num_encoding_functions)
            loss = torch.nn.functional.mse_loss(rgb_predicted, target_img)
            print("Loss: " + str(loss.item()))      # tqdm.write
            psnr = -10.0 * torch.log10(loss)
            psnrs.append(psnr.item())
            iternums.append(i)
            log("held-out view", rgb_predicted.detach().cpu().numpy())   # plt.imshow
    log("psnrs", psnrs)
    log("final", list(model.parameters()))
    print("Done!")


def test_tiny_nerf_program():
    # float32 through exp/cumprod of the volume rendering: the default log tolerance
    run_both(_tiny_nerf_program)


class _FedNoiseTorch:
    """A module whose ``rand(...)`` returns the noise the step was called with (so the compiled
    step draws what eager draws: its input, not a constant baked into the trace)."""

    def __init__(self, mod):
        self._mod, self.noise = mod, None

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def rand(self, *size):
        return self.noise


def _nerf_step_runs(T, compiled):
    shim = _FedNoiseTorch(T)
    f = _nerf_functions(shim)
    data = _tiny_nerf_data()
    poses = T.from_numpy(data["poses"])
    focal_length = T.from_numpy(data["focal"])
    images = T.from_numpy(data["images"][..., :3].copy())
    model = init_params(T, f["VeryTinyNerfModel"](filter_size=8, num_encoding_functions=2), 11)
    optimizer = T.optim.Adam(model.parameters(), lr=5e-3)

    def step(noise, target_img, pose):
        # tiny_nerf.py's loop body
        shim.noise = noise
        rgb_predicted = f["run_one_iter_of_tinynerf"](
            4, 4, focal_length, pose, 2.0, 6.0, 6, f["positional_encoding"], f["get_minibatches"],
            20, model, 2)
        loss = T.nn.functional.mse_loss(rgb_predicted, target_img)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss, rgb_predicted

    if compiled:
        step = T.compile(step)
    out = []
    for i in range(3):
        noise = T.tensor(np.random.RandomState(30 + i).uniform(0, 1, (4, 4, 6)).astype(np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss, rgb = step(noise, images[i % 2], poses[i % 3])
        out.append((loss.detach().numpy(), rgb.detach().numpy()))
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    grads = {n: (p.grad.numpy() if p.grad is not None else np.zeros(1)) for n, p in model.named_parameters()}
    return out, params, grads, step


def test_tiny_nerf_train_step_compiled():
    torch = get_torch()
    ref = _nerf_step_runs(torch, False)
    eager = _nerf_step_runs(tracegrad, False)
    comp = _nerf_step_runs(tracegrad, True)
    # torch's kernels against tracegrad: 1e-4 (float32 exp/cumprod rounding); compiled against
    # eager tracegrad: 1e-5
    _same_runs(ref, eager, 1e-4, 1e-5)
    _same_runs(eager, comp, 1e-5, 1e-6)
    st = comp[3].stats
    assert st["graph_breaks"] == [] and st["traces"] >= 1, st


# ---- juho-lee/set_transformer -------------------------------------------------------------------
def _set_transformer_classes(torch):
    nn, F = torch.nn, torch.nn.functional

    # modules.py
    class MAB(nn.Module):
        def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
            super(MAB, self).__init__()
            self.dim_V = dim_V
            self.num_heads = num_heads
            self.fc_q = nn.Linear(dim_Q, dim_V)
            self.fc_k = nn.Linear(dim_K, dim_V)
            self.fc_v = nn.Linear(dim_K, dim_V)
            if ln:
                self.ln0 = nn.LayerNorm(dim_V)
                self.ln1 = nn.LayerNorm(dim_V)
            self.fc_o = nn.Linear(dim_V, dim_V)

        def forward(self, Q, K):
            Q = self.fc_q(Q)
            K, V = self.fc_k(K), self.fc_v(K)

            dim_split = self.dim_V // self.num_heads
            Q_ = torch.cat(Q.split(dim_split, 2), 0)
            K_ = torch.cat(K.split(dim_split, 2), 0)
            V_ = torch.cat(V.split(dim_split, 2), 0)

            A = torch.softmax(Q_.bmm(K_.transpose(1,2))/math.sqrt(self.dim_V), 2)
            O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
            O = O if getattr(self, 'ln0', None) is None else self.ln0(O)
            O = O + F.relu(self.fc_o(O))
            O = O if getattr(self, 'ln1', None) is None else self.ln1(O)
            return O

    class SAB(nn.Module):
        def __init__(self, dim_in, dim_out, num_heads, ln=False):
            super(SAB, self).__init__()
            self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

        def forward(self, X):
            return self.mab(X, X)

    class ISAB(nn.Module):
        def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
            super(ISAB, self).__init__()
            self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
            nn.init.xavier_uniform_(self.I)
            self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
            self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

        def forward(self, X):
            H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
            return self.mab1(X, H)

    class PMA(nn.Module):
        def __init__(self, dim, num_heads, num_seeds, ln=False):
            super(PMA, self).__init__()
            self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
            nn.init.xavier_uniform_(self.S)
            self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

        def forward(self, X):
            return self.mab(self.S.repeat(X.size(0), 1, 1), X)

    # models.py
    class DeepSet(nn.Module):
        def __init__(self, dim_input, num_outputs, dim_output, dim_hidden=128):
            super(DeepSet, self).__init__()
            self.num_outputs = num_outputs
            self.dim_output = dim_output
            self.enc = nn.Sequential(
                    nn.Linear(dim_input, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, dim_hidden))
            self.dec = nn.Sequential(
                    nn.Linear(dim_hidden, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, dim_hidden),
                    nn.ReLU(),
                    nn.Linear(dim_hidden, num_outputs*dim_output))

        def forward(self, X):
            X = self.enc(X).mean(-2)
            X = self.dec(X).reshape(-1, self.num_outputs, self.dim_output)
            return X

    class SetTransformer(nn.Module):
        def __init__(self, dim_input, num_outputs, dim_output,
                num_inds=32, dim_hidden=128, num_heads=4, ln=False):
            super(SetTransformer, self).__init__()
            self.enc = nn.Sequential(
                    ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
                    ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln))
            self.dec = nn.Sequential(
                    PMA(dim_hidden, num_heads, num_outputs, ln=ln),
                    SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                    SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                    nn.Linear(dim_hidden, dim_output))

        def forward(self, X):
            return self.dec(self.enc(X))

    # mixture_of_mvns.py
    class MultivariateNormal(object):
        def __init__(self, dim):
            self.dim = dim

    class MixtureOfMVNs(object):
        def __init__(self, mvn):
            self.mvn = mvn

        def sample(self, B, N, K, return_gt=False):
            device = 'cpu' if not torch.cuda.is_available() \
                    else torch.cuda.current_device()
            # Dirichlet(torch.ones(K)).sample([B]) and Categorical(probs=pi).sample([N]):
            # from the seeded numpy stream (torch's and tracegrad's generators differ)
            pi = torch.tensor(np.random.dirichlet(np.ones(K), B).astype(np.float32)).to(device)
            labels = torch.tensor(np.stack([np.random.choice(K, N, p=p / p.sum()) for p in
                                            pi.numpy().astype(np.float64)], 1)).to(device)
            labels = labels.transpose(0,1).contiguous()

            X, params = self.mvn.sample(B, K, labels)
            if return_gt:
                return X, labels, pi, params
            else:
                return X

        def log_prob(self, X, pi, params, return_labels=False):
            ll = self.mvn.log_prob(X, params)
            ll = ll + (pi + 1e-10).log().unsqueeze(-2)
            if return_labels:
                labels = ll.argmax(-1)
                return ll.logsumexp(-1).mean(), labels
            else:
                return ll.logsumexp(-1).mean()

        def parse(self, raw):
            return self.mvn.parse(raw)

    # mvn_diag.py
    class MultivariateNormalDiag(MultivariateNormal):
        def __init__(self, dim):
            super(MultivariateNormalDiag, self).__init__(dim)

        def sample(self, B, K, labels):
            N = labels.shape[-1]
            device = labels.device
            mu = -4 + 8*torch.rand(B, K, self.dim).to(device)
            sigma = 0.3*torch.ones(B, K, self.dim).to(device)
            eps = torch.randn(B, N, self.dim).to(device)

            rlabels = labels.unsqueeze(-1).repeat(1, 1, self.dim)
            X = torch.gather(mu, 1, rlabels) + \
                    eps * torch.gather(sigma, 1, rlabels)
            return X, (mu, sigma)

        def log_prob(self, X, params):
            mu, sigma = params
            dim = self.dim
            X = X.unsqueeze(2)
            mu = mu.unsqueeze(1)
            sigma = sigma.unsqueeze(1)
            diff = X - mu
            ll = -0.5*math.log(2*math.pi) - sigma.log() - 0.5*(diff.pow(2)/sigma.pow(2))
            return ll.sum(-1)

        def stats(self, params):
            mu, sigma = params
            I = torch.eye(self.dim)[(None,)*(len(sigma.shape)-1)].to(sigma.device)
            cov = sigma.pow(2).unsqueeze(-1) * I
            return mu, cov

        def parse(self, raw):
            pi = torch.softmax(raw[...,0], -1)
            mu = raw[...,1:1+self.dim]
            sigma = F.softplus(raw[...,1+self.dim:])
            return pi, (mu, sigma)

    return SetTransformer, DeepSet, MixtureOfMVNs, MultivariateNormalDiag


def _set_transformer_program(mod, log, net_name="set_transformer", ln=False):
    import os
    import tempfile
    torch = SeededTorch(mod, 73)
    SetTransformer, DeepSet, MixtureOfMVNs, MultivariateNormalDiag = _set_transformer_classes(torch)
    # run.py's arguments: B 10, N 300-600, K 4, 50000 steps, test every 200 -> tiny
    # (N is always 5: one set of shapes, fewer eager XLA programs)
    B, N_min, N_max, K, num_bench, num_steps, test_freq, lr = 3, 5, 6, 3, 2, 3, 3, 1e-3
    D = 2
    mvn = MultivariateNormalDiag(D)
    mog = MixtureOfMVNs(mvn)
    dim_output = 2*D
    if net_name == 'set_transformer':
        net = SetTransformer(D, K, dim_output, num_inds=5, dim_hidden=8, num_heads=2, ln=ln)
    else:
        net = DeepSet(D, K, dim_output, dim_hidden=8)
    try:
        net = net.cuda()
    except (AssertionError, RuntimeError) as e:   # run.py's .cuda() on a CPU build
        log("cuda()", type(e).__name__)
    init_params(torch, net, 74)
    with seeded(75), tempfile.TemporaryDirectory() as d:
        benchfile = os.path.join(d, 'mog_{:d}.pkl'.format(K))
        # generate_benchmark
        N_list = np.random.randint(N_min, N_max, num_bench)
        data, ll = [], 0.
        for N in N_list:
            X, labels, pi, params = mog.sample(B, N, K, return_gt=True)
            ll += mog.log_prob(X, pi, params).item()
            data.append(X)
        torch.save([data, ll/num_bench], benchfile)
        bench = torch.load(benchfile)

        def test(bench):
            net.eval()
            data, oracle_ll = bench
            avg_ll = 0.
            for X in data:
                avg_ll += mog.log_prob(X, *mvn.parse(net(X))).item()
            avg_ll /= len(data)
            return 'test ll {:.4f} (oracle {:.4f})'.format(avg_ll, oracle_ll)

        optimizer = torch.optim.Adam(net.parameters(), lr=lr)
        for t in range(1, num_steps+1):
            if t == int(0.5*num_steps):
                optimizer.param_groups[0]['lr'] *= 0.1
            net.train()
            optimizer.zero_grad()
            N = np.random.randint(N_min, N_max)
            X = mog.sample(B, N, K)
            ll = mog.log_prob(X, *mvn.parse(net(X)))
            loss = -ll
            loss.backward()
            log("loss", loss)
            log("grads", [p.grad for p in net.parameters()])
            optimizer.step()
            if t % test_freq == 0:
                line = 'step {}, lr {:.3e}, '.format(t, optimizer.param_groups[0]['lr'])
                line += test(bench)
                print(line)   # logger.info
        torch.save({'state_dict': net.state_dict()}, os.path.join(d, 'model.tar'))
        ckpt = torch.load(os.path.join(d, 'model.tar'))
        net.load_state_dict(ckpt['state_dict'])
        # plot(): the labels and the covariances it draws
        net.eval()
        X = mog.sample(B, np.random.randint(N_min, N_max), K)
        pi, params = mvn.parse(net(X))
        ll, labels = mog.log_prob(X, pi, params, return_labels=True)
        mu, cov = mvn.stats(params)
        log("plot", (ll, labels, mu, cov))
    # two directions get a zero gradient in exact arithmetic: the key projections' biases (a
    # softmax over keys ignores a per-query constant) and the output layer's bias of the mixture
    # logit raw[..., 0] (the same constant for every component under softmax(-1)). Their float32
    # gradients are rounding noise, which Adam's normalisation turns into steps of about lr, so
    # they are left out of the final comparison (the losses, gradients and outputs cover them)
    last = list(net.named_parameters())[-1][0]
    log("final", [p[1:] if n == last else p for n, p in net.named_parameters()
                  if not n.endswith("fc_k.bias")])


@pytest.mark.parametrize("net_name,ln", [("set_transformer", True), ("deepset", False)])
def test_set_transformer_mixture_of_gaussians_program(net_name, ln):
    # float32 through attention softmaxes and logsumexp: the default log tolerance
    run_both(lambda mod, log: _set_transformer_program(mod, log, net_name, ln))

