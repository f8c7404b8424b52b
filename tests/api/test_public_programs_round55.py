"""A fifty-fifth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round55_src.py, executed with ``torch`` bound to either module. Each test
compares forward values, losses, gradients and the whole ``state_dict`` (parameters and buffers)
after a few optimizer steps:

- junyanz/pytorch-CycleGAN-and-pix2pix (BSD), ``models/networks.py`` at 7891385,
  ``util/image_pool.py`` at 28330fc, ``models/base_model.py``'s ``set_requires_grad`` and
  ``models/cycle_gan_model.py``'s training methods at 032e884: the ResNet generator
  (``ReflectionPad2d``, stride-2 convs, ``ConvTranspose2d(output_padding=1)``, residual blocks,
  ``Tanh``), the U-Net generator built inside-out from nested ``UnetSkipConnectionBlock``s
  (``LeakyReLU(0.2, True)``, ``torch.cat`` skips), the PatchGAN discriminator, the norm layer
  as a ``functools.partial`` of ``InstanceNorm2d(affine=False, track_running_stats=True)`` or
  ``BatchNorm2d`` (``use_bias`` read off ``partial.func``), ``init_weights`` through
  ``net.apply`` with ``m.__class__.__name__`` matching and ``init.normal_(m.weight.data, ...)``,
  the LSGAN loss whose targets are registered 0-d buffers ``expand_as`` the prediction, the
  CycleGAN step (two generators, cycle and identity L1 losses, ``set_requires_grad`` toggling the
  discriminators' ``requires_grad`` between the G and D updates, ``fake.detach()``, two Adams
  over ``itertools.chain`` of parameters), and the ``ImagePool`` history (``image.data``
  unsqueezed, Python ``random`` choosing stored images, ``clone``, ``cat``).
- KaiyangZhou/pytorch-center-loss (MIT), ``center_loss.py`` at 082ffa2, ``models.py`` at
  43f95a0, ``utils.py``'s ``AverageMeter`` and ``main.py``'s ``train``/``test`` at e6489a5:
  LeNet++ (six 5x5 convs with ``PReLU``, a 2-d feature), the center loss (``pow``/``sum``/
  ``expand``/``t()`` distance matrix, the deprecated ``distmat.addmm_(1, -2, x, centers.t())``
  overload and its warning, ``labels.eq`` of an expanded ``arange`` mask, ``clamp`` with both
  bounds), ``loss_cent *= weight`` on a non-leaf, the centers' gradient rescaled in place through
  ``param.grad.data *= 1/weight`` between the two SGD steps, ``.item()`` meters and the printed
  log line, the features collected by ``features.data.numpy()``, the accuracy as
  ``(predictions == labels.data).sum()`` accumulated into a Python int then ``* 100. / total``.
- sooftware/conformer (Apache-2.0) at b4e7d44 with the README's CTC usage: the Conformer encoder
  (``Conv2dSubampling`` with ``input_lengths >> 2`` then an in-place ``-= 1``, Macaron
  half-step feed-forward residuals, Swish, GLU by ``chunk``, depthwise ``Conv1d(groups=C)`` +
  ``BatchNorm1d``, ``Transpose`` modules), the relative positional encoding (``torch.flip``,
  strided slice assignment into ``zeros``, a cached table re-cast by ``.to(dtype=...)``), the
  Transformer-XL relative multi-head attention (``u_bias``/``v_bias`` Parameters from
  uninitialised ``torch.Tensor(h, d)`` + ``xavier_uniform_``, ``_relative_shift`` by
  ``new_zeros`` + ``cat`` + ``view`` + slice + ``view_as``, ``masked_fill_`` of the scores with
  a boolean mask), ``log_softmax`` and ``CTCLoss`` on the time-major output.
- atong01/conditional-flow-matching (MIT), ``torchcfm/conditional_flow_matching.py`` at 1440a98
  and ``torchcfm/models/models.py`` at 2c1bbcd, with the README's training loop: the
  independent, target (Lipman et al.) and variance-preserving (trigonometric) conditional flow
  matchers (``pad_t_like_x``'s ``reshape(-1, *([1] * (x.dim() - 1)))`` or a Python float passed
  through, ``t[:, None]`` concatenated to ``xt``, ``return_noise``, ``compute_lambda``, the
  repo's batch-size ``assert``), the SELU MLP, and ``GradModel``'s action matching
  (``x.requires_grad_(True)`` on the batch, ``autograd.grad(..., create_graph=True)`` sliced,
  the loss backpropagated through that gradient).
Changes, the same on both sides: tiny sizes, parameters overwritten from seeded NumPy streams,
synthetic data, dropouts 0, the flow matchers' ``t`` given and their noise set through their own
``sample_noise_like`` hook (the repo draws both from torch's stream). CycleGAN runs in float64 (``set_default_dtype``): on a 16x16 image the
instance norms of 4x4 maps are ill-conditioned, and torch's and tracegrad's float32 results are
each ~2e-5 from the float64 one; Adam's first, sign-like step turns that into ~1e-3 apart. A
float32 step is compared on its own with a looser tolerance. The Conformer is trained by SGD:
its ``key_proj`` bias has an identically zero gradient (softmax is shift-invariant), which Adam
turns from rounding noise into lr-sized steps.
Found: no differences in values, gradients or parameters.
Compile counterparts: tests/compile/test_public_patterns_round55.py.
"""
import functools
import random
import types
import warnings

import numpy as np
import pytest

import tracegrad
from parity import _same_printed
from public_programs_helpers import (arrays as _arr, compare, grads as _grads, init_uniform as _init, same_error,
                                     state as _state)
from public_programs_round55_src import (CENTER_LOSS, CONFORMER, CYCLEGAN_MODEL, CYCLEGAN_NETWORKS, TORCHCFM,
                                        program)

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)
_error = functools.partial(same_error, torch, tracegrad)

CYCLEGAN = CYCLEGAN_NETWORKS + CYCLEGAN_MODEL


class _float64:
    """The program run with float64 as the default dtype (restored after)."""

    def __init__(self, T):
        self.T = T

    def __enter__(self):
        self.T.set_default_dtype(self.T.float64)

    def __exit__(self, *exc):
        self.T.set_default_dtype(self.T.float32)


# ---------------------------------------------------------------- CycleGAN


def _cyclegan_opt(pool_size=0, lambda_identity=0.5, no_lsgan=False):
    return types.SimpleNamespace(pool_size=pool_size, no_lsgan=no_lsgan, lr=2e-3, beta1=0.5,
                                 direction="AtoB", lambda_identity=lambda_identity,
                                 lambda_A=10.0, lambda_B=10.0)


def _cyclegan_nets(T, P, norm, netG="resnet_6blocks", ngf=4, use_sigmoid=False):
    nets = [P.define_G(3, 3, ngf, netG, norm), P.define_G(3, 3, ngf, netG, norm),
            P.define_D(3, 4, "n_layers", 2, norm, use_sigmoid=use_sigmoid),
            P.define_D(3, 4, "n_layers", 2, norm, use_sigmoid=use_sigmoid)]
    return [_init(T, n, 10 + i, 0.2) for i, n in enumerate(nets)]


def _images(T, seed, size=16):
    rs = np.random.RandomState(seed)
    return {k: T.tensor(rs.rand(2, 3, size, size) * 2 - 1, dtype=T.get_default_dtype()) for k in "AB"}


def _cyclegan_run(T, norm, netG="resnet_6blocks", size=16, steps=3, **opt):
    P = program(T, CYCLEGAN, random=random.Random(0))     # ImagePool's draws: one seeded stream each
    nets = _cyclegan_nets(T, P, norm, netG, use_sigmoid=opt.get("no_lsgan", False))
    m = P.CycleGANModel(_cyclegan_opt(**opt), *nets)
    out = []
    for i in range(steps):
        m.set_input(_images(T, i, size))
        m.optimize_parameters()
        out += _arr(m.fake_B, m.rec_A, m.fake_A, m.rec_B, m.loss_G, m.loss_D_A, m.loss_D_B,
                    m.loss_idt_A, m.loss_cycle_B)
        if i == 0:
            out += [g for n in nets for g in _grads(n)]
    return out + [s for n in nets for s in _state(n)]


@pytest.mark.parametrize("norm", ["instance", "batch"])
def test_cyclegan_resnet_training(norm, capsys):
    def run(T):
        with _float64(T):
            return _cyclegan_run(T, norm)
    _compare(run, tol=1e-8)
    # init_net's print per network, alike on both sides
    assert capsys.readouterr().out == "initialize network with normal\n" * 8


@pytest.mark.parametrize("norm", ["instance", "batch"])
def test_cyclegan_generators_in_eval_mode(norm, capsys):
    # after two training steps the norms' running statistics (instance norm's too: the repo's
    # track_running_stats=True) normalize an eval-mode translation A -> B -> A
    def run(T):
        with _float64(T):
            P = program(T, CYCLEGAN)
            nets = _cyclegan_nets(T, P, norm)
            m = P.CycleGANModel(_cyclegan_opt(), *nets)
            for i in range(2):
                m.set_input(_images(T, i))
                m.optimize_parameters()
            for n in nets[:2]:
                n.eval()
            with T.no_grad():
                fake = m.netG_A(_images(T, 9)["A"])
                return _arr(fake, m.netG_B(fake)) + [s for n in nets[:2] for s in _state(n)]
    _compare(run, tol=1e-8)
    capsys.readouterr()


def test_cyclegan_unet_with_image_pool_and_bce():
    # the U-Net generator (5 downsamplings of a 32x32 image), a 2-image history pool whose Python
    # random draws return stored images from the second step on, the vanilla GAN's BCELoss on a
    # sigmoid discriminator, and no identity loss (its zero terms are Python ints)
    def run(T):
        with _float64(T):
            P = program(T, CYCLEGAN, random=random.Random(3))
            nets = [P.init_net(P.UnetGenerator(3, 3, 5, 2, norm_layer=P.get_norm_layer("batch")))
                    for _ in range(2)]
            nets += [P.define_D(3, 4, "n_layers", 2, "batch", use_sigmoid=True) for _ in range(2)]
            nets = [_init(T, n, 20 + i, 0.2) for i, n in enumerate(nets)]
            m = P.CycleGANModel(_cyclegan_opt(pool_size=2, lambda_identity=0.0, no_lsgan=True), *nets)
            out = []
            for i in range(4):
                m.set_input(_images(T, i, 32))
                m.optimize_parameters()
                out += _arr(m.fake_B, m.rec_B, m.loss_G, m.loss_D_A, m.loss_D_B, m.loss_idt_A)
            pooled = m.fake_B_pool.images + m.fake_A_pool.images
            assert all(not p.requires_grad for p in pooled)
            return out + _arr(*pooled) + [s for n in nets for s in _state(n)]
    _compare(run, tol=1e-8)


def test_cyclegan_float32_step():
    # one step at the default dtype: losses and the generators' and discriminators' gradients
    def run(T):
        P = program(T, CYCLEGAN)
        nets = _cyclegan_nets(T, P, "instance")
        m = P.CycleGANModel(_cyclegan_opt(), *nets)
        m.set_input(_images(T, 0))
        m.optimize_parameters()
        return _arr(m.fake_B, m.loss_G, m.loss_D_A, m.loss_D_B) + [g for n in nets for g in _grads(n)]
    _compare(run, tol=1e-3)     # see the module docstring: float32 instance norms of 4x4 maps


def test_cyclegan_set_requires_grad_and_detach():
    # after backward_G with the discriminators frozen they hold no gradient; the D update reads
    # fake.detach(), so the generators' gradients are untouched by backward_D_A/backward_D_B
    def run(T):
        with _float64(T):
            P = program(T, CYCLEGAN)
            nets = _cyclegan_nets(T, P, "batch")
            m = P.CycleGANModel(_cyclegan_opt(), *nets)
            m.set_input(_images(T, 5))
            m.forward()
            m.set_requires_grad([m.netD_A, m.netD_B], False)
            m.backward_G()
            assert all(p.grad is None for n in nets[2:] for p in n.parameters())
            g_before = [g for n in nets[:2] for g in _grads(n)]
            m.set_requires_grad([m.netD_A, m.netD_B], True)
            m.backward_D_A()
            m.backward_D_B()
            g_after = [g for n in nets[:2] for g in _grads(n)]
            for a, b in zip(g_before, g_after):
                np.testing.assert_array_equal(a, b)
            return g_after + [g for n in nets[2:] for g in _grads(n)] + _arr(m.loss_D_A, m.loss_D_B)
    _compare(run, tol=1e-8)


def test_cyclegan_repo_errors():
    msgs = _error(lambda T: program(T, CYCLEGAN).define_G(3, 3, 4, "resnet_3blocks"))
    assert msgs == ["Generator model name [resnet_3blocks] is not recognized"] * 2
    # norm 'none' gives norm_layer None, which the generator then calls
    msgs = _error(lambda T: program(T, CYCLEGAN).define_G(3, 3, 4, "resnet_6blocks", norm="none"))
    assert msgs == ["'NoneType' object is not callable"] * 2


# ---------------------------------------------------------------- center loss


def _center_run(T, plot):
    args = types.SimpleNamespace(plot=plot, weight_cent=0.5, print_freq=1)
    P = program(T, CENTER_LOSS, args=args)
    model = _init(T, P.ConvNet(10), 2, 0.1)
    criterion_cent = _init(T, P.CenterLoss(10, 2, use_gpu=False), 3, 1.0)
    optimizer_model = T.optim.SGD(model.parameters(), lr=1e-2, weight_decay=5e-4, momentum=0.9)
    optimizer_centloss = T.optim.SGD(criterion_cent.parameters(), lr=0.5)
    rs = np.random.RandomState(0)
    loader = [(T.tensor(rs.rand(4, 1, 28, 28).astype(np.float32)), T.tensor(rs.randint(0, 10, 4)))
              for _ in range(2)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = P.train(model, T.nn.CrossEntropyLoss(), criterion_cent, optimizer_model,
                      optimizer_centloss, loader, False, 10, 0)
    # torch warns about the deprecated overload once per process (as tracegrad): at most once here
    assert {str(x.message).splitlines()[0] for x in w} <= {"This overload of addmm_ is deprecated:"}
    acc, err = P.test(model, loader, False, 10, 0)
    out = list(res) if plot else []
    return out + _arr(acc, err) + _grads(model) + _grads(criterion_cent) + _state(model) + _state(criterion_cent)


@pytest.mark.parametrize("plot", [True, False])
def test_center_loss_training(plot, capsys):
    _compare(lambda T: _center_run(T, plot), tol=2e-5)
    out = capsys.readouterr().out.splitlines()
    # the log lines, alike on both sides up to the last printed digit (CPUs' kernels round apart)
    assert len(out) == 4 and all(_same_printed(a, b) for a, b in zip(out[:2], out[2:])), out
    assert out[0].startswith("Batch 1/2\t Loss ")


def test_center_loss_values_and_gradients():
    # the loss against its definition (squared distance to the own class center, clamped, mean
    # over the batch) and its gradients into features and centers
    def run(T):
        P = program(T, CENTER_LOSS)
        cl = _init(T, P.CenterLoss(4, 3, use_gpu=False), 7, 1.0)
        rs = np.random.RandomState(8)
        x = T.tensor(rs.randn(5, 3).astype(np.float32), requires_grad=True)
        labels = T.tensor([0, 3, 3, 1, 0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = cl(x, labels)
        loss.backward()
        direct = ((x - cl.centers[labels]) ** 2).sum(1).clamp(1e-12, 1e12).sum() / 5
        # the masked-out entries are clamped up to 1e-12 each, as written: (num_classes - 1) per row
        np.testing.assert_allclose(loss.item(), direct.item() + 5 * 3 * 1e-12, rtol=1e-5)
        return _arr(loss, x.grad, cl.centers.grad)
    _compare(run)


# ---------------------------------------------------------------- Conformer


def _conformer(T, P, **kw):
    return _init(T, P.Conformer(num_classes=6, input_dim=16, encoder_dim=8, num_encoder_layers=2,
                                num_attention_heads=2, input_dropout_p=0, feed_forward_dropout_p=0,
                                attention_dropout_p=0, conv_dropout_p=0, conv_kernel_size=3, **kw), 1)


def _ctc_batch(T, seed):
    rs = np.random.RandomState(seed)
    return (T.tensor(rs.rand(3, 24, 16).astype(np.float32)), T.LongTensor([24, 22, 20]),
            T.LongTensor([[1, 3, 3, 4, 5], [1, 3, 4, 2, 0], [1, 3, 2, 0, 0]]), T.LongTensor([4, 3, 3]))


def test_conformer_ctc_training():
    def run(T):
        P = program(T, CONFORMER)
        model = _conformer(T, P)
        criterion = T.nn.CTCLoss()
        optimizer = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        out = []
        for i in range(3):
            inputs, input_lengths, targets, target_lengths = _ctc_batch(T, i)
            outputs, output_lengths = model(inputs, input_lengths)
            loss = criterion(outputs.transpose(0, 1), targets, output_lengths, target_lengths)
            optimizer.zero_grad()
            loss.backward()
            out += _arr(outputs, output_lengths, loss, input_lengths)
            if i == 0:
                out += _grads(model)
            optimizer.step()
        return out + _state(model)
    _compare(run, tol=2e-5)


def test_conformer_subsampling_lengths():
    # ``input_lengths >> 2`` is a new tensor, so the in-place ``-= 1`` leaves the caller's intact
    def run(T):
        P = program(T, CONFORMER)
        sub = _init(T, P.Conv2dSubampling(1, 3), 4)
        lengths = T.LongTensor([24, 9, 13])
        out, out_lengths = sub(T.tensor(np.random.RandomState(1).rand(3, 24, 11).astype(np.float32)), lengths)
        return _arr(out, out_lengths, lengths)
    _compare(run)


def test_relative_attention_with_mask():
    # the attention module on its own with a (batch, 1, time) padding mask filled in place into the
    # scores (-1e9), gradients into the inputs, the positional embedding and u/v biases
    def run(T):
        P = program(T, CONFORMER)
        attn = _init(T, P.RelativeMultiHeadAttention(8, 2, 0.0), 5)
        pe = P.RelPositionalEncoding(8, max_len=16)
        rs = np.random.RandomState(6)
        x = T.tensor(rs.randn(2, 5, 8).astype(np.float32), requires_grad=True)
        pos = pe(x).repeat(2, 1, 1).requires_grad_()
        mask = T.tensor(np.array([[[False] * 5], [[False] * 3 + [True] * 2]]))
        y = attn(x, x, x, pos_embedding=pos, mask=mask)
        (y * T.arange(8.)).sum().backward()
        return _arr(y, x.grad, pos.grad, pos) + _grads(attn)
    _compare(run)


def test_rel_positional_encoding_cache():
    # extend_pe keeps its table while it is long enough and re-casts it for a float64 input;
    # a longer input rebuilds it
    def run(T):
        P = program(T, CONFORMER)
        pe = P.RelPositionalEncoding(6, max_len=4)
        first = pe.pe
        a = pe(T.zeros(1, 3, 6))
        assert pe.pe is first
        b = pe(T.zeros(1, 3, 6, dtype=T.float64))
        assert pe.pe.dtype == T.float64 and tuple(pe.pe.shape) == (1, 7, 6)
        c = pe(T.zeros(1, 6, 6))
        assert tuple(pe.pe.shape) == (1, 11, 6)
        return _arr(a, b, c)
    _compare(run, tol=1e-6)


# ---------------------------------------------------------------- conditional flow matching


def _cfm_batch(T, seed, n=8):
    rs = np.random.RandomState(seed)
    x0 = T.tensor(rs.randn(n, 2).astype(np.float32))
    x1 = T.tensor((rs.randn(n, 2) * 0.3 + [[2, 1]]).astype(np.float32))
    t = T.tensor(rs.rand(n).astype(np.float32))
    eps = T.tensor(rs.randn(n, 2).astype(np.float32))
    return x0, x1, t, eps


@pytest.mark.parametrize("matcher,sigma", [("ConditionalFlowMatcher", 0.0), ("ConditionalFlowMatcher", 0.1),
                                           ("TargetConditionalFlowMatcher", 0.05),
                                           ("VariancePreservingConditionalFlowMatcher", 0.1)])
def test_flow_matching_training(matcher, sigma):
    # the README's loop: vt = model(cat([xt, t[:, None]], -1)), loss = mean((vt - ut) ** 2), Adam;
    # t given (the repo draws it by torch.rand when None) and the noise by the matcher's own
    # ``sample_noise_like`` hook set on the instance (it draws torch.randn_like)
    def run(T):
        P = program(T, TORCHCFM)
        model = _init(T, P.MLP(dim=2, w=16, time_varying=True), 3, 0.4)
        FM = getattr(P, matcher)(sigma=sigma)
        optimizer = T.optim.Adam(model.parameters(), lr=1e-2)
        out = []
        for k in range(3):
            x0, x1, t, eps = _cfm_batch(T, k)
            FM.sample_noise_like = lambda x, eps=eps: eps
            optimizer.zero_grad()
            t, xt, ut, noise = FM.sample_location_and_conditional_flow(x0, x1, t=t, return_noise=True)
            vt = model(T.cat([xt, t[:, None]], dim=-1))
            loss = T.mean((vt - ut) ** 2)
            loss.backward()
            optimizer.step()
            out += _arr(xt, ut, noise, vt, loss) + ([_arr(FM.compute_lambda(t))[0]] if k == 0 else [])
        return out + _grads(model) + _state(model)
    _compare(run, tol=2e-5)


def test_flow_matching_scalar_time_and_batch_check():
    # pad_t_like_x passes a Python float through; a t of the wrong length trips the repo's assert
    def run(T):
        P = program(T, TORCHCFM)
        FM = P.ConditionalFlowMatcher(0.0)
        x0, x1, t, _ = _cfm_batch(T, 4, n=3)
        x0 = x0.reshape(3, 1, 2)
        return _arr(FM.sample_xt(x0, x1.reshape(3, 1, 2), 0.25, T.zeros(3, 1, 2)),
                    FM.compute_mu_t(x0, x1.reshape(3, 1, 2), t), P.pad_t_like_x(t, x0))
    _compare(run)
    msgs = _error(lambda T: program(T, TORCHCFM).ConditionalFlowMatcher().sample_location_and_conditional_flow(
        T.zeros(3, 2), T.ones(3, 2), t=T.zeros(2)))
    assert msgs == ["t has to have batch size dimension"] * 2


def test_grad_model_action_matching():
    # GradModel: requires_grad_ on the input batch, autograd.grad(create_graph=True) of the summed
    # action, a slice of it as the output; its loss differentiates through that gradient (SELU's
    # second derivative) into the action's parameters
    def run(T):
        P = program(T, TORCHCFM)
        action = _init(T, P.MLP(dim=3, out_dim=1, w=8), 6, 0.5)
        model = P.GradModel(action)
        optimizer = T.optim.SGD(model.parameters(), lr=0.05)
        out = []
        for k in range(3):
            x0, x1, t, _ = _cfm_batch(T, 10 + k, n=5)
            xt = T.cat([(1 - t[:, None]) * x0 + t[:, None] * x1, t[:, None]], dim=-1)
            optimizer.zero_grad()
            vt = model(xt)
            loss = T.mean((vt - (x1 - x0)) ** 2)
            loss.backward()
            optimizer.step()
            out += _arr(vt, loss, xt.grad if xt.grad is not None else np.zeros(1))
        return out + _grads(action) + _state(action)
    _compare(run, tol=2e-5)
