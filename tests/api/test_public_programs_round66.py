"""A sixty-sixth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round66_src.py, executed with ``torch`` bound to either module. Each
test compares losses, printed logs, gradients and parameters after optimizer steps:

- William-f-12/SimCLR (no license file), ``src/loss.py`` and ``src/model.py`` at 0b618f1,
  ``src/SimCLR.py`` at d797ec6, ``src/timer.py`` at 7e8912e and ``src/train_loop.py`` at 3fd0f3c
  (SimCLR): the NT-Xent loss ``(z @ z.T) / temperature`` with ``sim.fill_diagonal_(float('-inf'))``
  in place on a non-leaf (until round 66 tracegrad's grad_fn was ``IndexPutBackward0``, torch's
  ``CopySlices``: it now writes through ``as_strided`` views as torch does), targets
  ``torch.cat([targets + batch_size, targets])``,
  ``F.cross_entropy(sim.to(dtype=torch.float32), targets)`` over rows holding ``-inf`` (with an
  ``ignore_index`` row whose class 0 is ``-inf`` tracegrad's loss was nan, torch's finite: an
  ignored target added ``-(-inf) * 0``; fixed in ``_ops/nn_ops.py``); the
  projection head (``Linear(bias=False)``, ``BatchNorm1d``, ``ReLU(inplace=True)``,
  ``F.normalize(z, dim=1)``), ``@torch.no_grad()`` on ``encode``; ``train``'s loop with
  ``optimizer.zero_grad(set_to_none=True)``, ``loss.item()`` into tqdm's ``set_postfix``, the EMA
  timer, ``torch.save`` of a dict holding both ``state_dict``s and the last loss tensor, and its
  prints.
- 0nEwEi/Test (no license file), ``WGANGP/model.py`` at ebd0777, ``WGANGP/utils.py`` and
  ``WGANGP/train.py`` at 8a79b0d (WGAN-GP): a DCGAN critic with ``InstanceNorm2d(affine=True)``
  and ``LeakyReLU``, a ``ConvTranspose2d``/``BatchNorm2d`` generator, ``gradient_penalty``
  (``torch.rand(...).repeat(1, C, H, W)``, ``requires_grad_(True)`` on the interpolation,
  ``torch.autograd.grad(..., grad_outputs=torch.ones_like(...), create_graph=True)``,
  ``gradient.norm(2, dim=1)``), the training script's critic iterations (``gen(noise).detach()``,
  ``critic.zero_grad()``, the loss backed through the penalty's double backward), Adam with
  ``betas=(0.0, 0.9)``, its ``f"{loss_critic:.4f}"`` log of tensors and the image grids under
  ``no_grad``. The script calls ``weights_init(gen)`` on the whole model, whose class name holds
  neither "Conv" nor "BatchNorm": it changes nothing, with torch as with tracegrad.
- Yuting-Gao/DisCo-pytorch (license: see its repository), ``DisCo/kd_ce_loss.py`` at 35da4b3
  (knowledge distillation): ``nn.KLDivLoss()`` with its default ``reduction='mean'`` (torch's
  warning that it divides by the support size too) of ``F.log_softmax(outputs/T)`` against the
  teacher's ``F.softmax(teacher_outputs/T)``, times ``alpha * T * T``, plus the weighted
  ``F.cross_entropy``.
- Fr0do/flows4ad (no license file), ``flows4ad/models/flows/real_nvp.py``, ``masks.py``,
  ``flows4ad/models/mlp/mlp.py`` and ``flows4ad/losses/flow_loss.py`` at 288cf88 (RealNVP for
  anomaly detection): masks rebuilt on every call by ``torch.zeros_like(x, dtype=torch.bool)``
  with ``mask[..., :d // 2] = True`` or ``mask[..., range(0, d, 2)] = True`` (a ``range`` index)
  and ``~mask``; ``shift_scale(x * mask).chunk(2, dim=-1)`` times ``~mask`` (float times bool),
  ``reversed(nn.Sequential)`` for the inverse, ``log_det = 0.0`` then ``+=`` of each scale;
  ``getattr(nn, activation)(**kwargs)`` (its default ``'relu'`` is no ``nn`` name: the same
  AttributeError); ``RealNVPLoss`` with ``Normal(loc=0.0, scale=1.0)``; train.py's AdamW and
  ``CosineAnnealingLR``, ``TensorDataset(torch.from_numpy(X).to(torch.float32))``, its
  ``no_grad`` histogram scores ``(prior.log_prob(z) + log_det).sum(dim=-1)``.
- edchengg/VAE_GAN (no license file), ``vae_gan.py`` and ``main.py`` at 917352c (VAE/GAN with a
  learned similarity): three Adams, ``logvar.mul(0.5).exp_()`` in place,
  ``Variable(std.data.new(std.size()).normal_())``, ``eps.mul(std).add_(mu)``; the script fails
  in today's torch, and must fail alike: as written, ``F.binary_cross_entropy`` of ``(N, 1)``
  scores against ``(N,)`` labels is a ValueError; with the labels shaped ``(N, 1)`` (the tests'
  change), ``dis_loss.backward(retain_graph=True)``, ``optimizer_Dis.step()`` and then
  ``dec_loss.backward`` meet the discriminator's weights saved by the graph and since written in
  place: torch's version RuntimeError names the saved ``weight.t()`` by its regenerated
  ``AsStridedBackward0`` ("output 0 of AsStrided"). Until round 66 tracegrad kept a view of a
  leaf on its first node (``TBackward0``) after the leaf was written; it now regenerates it as
  torch does (``autograd/_dispatch.py``).
Changes, the same on both sides: parameters from seeded NumPy streams (the scripts that build
their models get an ``nn`` whose layers draw them, and the WGAN's ``torch.nn.init.normal_``
draws from NumPy too), the random draws (``torch.rand``, ``torch.randn``) taken from NumPy
streams, synthetic data, tiny sizes.
"""
import contextlib
import enum
import functools
import io
import os
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, grads as _grads, init_uniform, numpy_draws, \
    same_error, same_logs, state as _state
from public_programs_round66_src import (FLOWS_LOSS, FLOWS_MASKS, FLOWS_MLP, FLOWS_REAL_NVP, KD_CE, NTXENT,
                                         PROJECTION_HEAD, SIMCLR, SIMCLR_TIMER, SIMCLR_TRAIN, VAE_GAN,
                                         VAE_GAN_MAIN, WGANGP_GP, WGANGP_MODEL, WGANGP_TRAIN, program)

torch = pytest.importorskip("torch")

_compare = functools.partial(compare, torch, tracegrad)


def seeded_nn(T, seed, names=("Conv2d", "ConvTranspose2d", "Linear")):
    """``T.nn`` but for the layers in ``names``, whose ``reset_parameters`` draw uniform values
    in [-0.3, 0.3] from a seeded NumPy stream (the class keeps its name)."""
    rs = np.random.RandomState(seed)

    def fill(m):
        with T.no_grad():
            for p in m.parameters(recurse=False):
                p.copy_(T.tensor(rs.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))

    ns = types.SimpleNamespace(**{k: getattr(T.nn, k) for k in dir(T.nn) if not k.startswith("_")})
    for n in names:
        setattr(ns, n, type(n, (getattr(T.nn, n),), {"reset_parameters": fill}))
    return ns


class draws(numpy_draws):
    """``numpy_draws`` whose ``nn`` is a ``seeded_nn`` with ``nn.init.normal_`` drawing from the
    same NumPy stream (``nn.init.zeros_`` is ``T``'s)."""

    def __init__(self, T, seed):
        super().__init__(T, seed)
        rs = self._rs

        def normal_(t, mean=0.0, std=1.0):
            with T.no_grad():
                return t.copy_(T.tensor(rs.normal(mean, std, tuple(t.shape)).astype(np.float32)))

        self.nn = seeded_nn(T, seed + 1)
        self.nn.init = types.SimpleNamespace(normal_=normal_, zeros_=T.nn.init.zeros_)


# ---------------------------------------------------------------- SimCLR (William-f-12)

def simclr_program(T):
    """loss.py, the projection head, SimCLR.py and timer.py, with a stand-in for
    ``build_resnet`` (torchvision's resnet18): ``Flatten``, ``Linear(12, 6, bias=False)``,
    ``Tanh`` and its feature size 6."""
    def build_resnet(arch="resnet18", pretrained=False, cifar_head=False):
        return T.nn.Sequential(T.nn.Flatten(), T.nn.Linear(12, 6, bias=False), T.nn.Tanh()), 6
    return program(T, NTXENT + PROJECTION_HEAD + SIMCLR + SIMCLR_TIMER, build_resnet=build_resnet)


def simclr_model(T, ns):
    return init_uniform(T, ns.SimCLR(proj_hidden=8, proj_out=4), 0, 0.5)


def _views(T, rs, n=4):
    return (T.tensor(rs.randn(n, 3, 2, 2).astype(np.float32)), T.tensor(rs.randn(n, 3, 2, 2).astype(np.float32)))


def _ntxent(T):
    ns = simclr_program(T)
    m = simclr_model(T, ns)
    x1, x2 = _views(T, np.random.RandomState(1), 5)
    z1, z2 = m(x1, x2)
    loss = ns.NTXentLoss()(z1, z2)
    loss.backward()
    with T.no_grad():
        h = m.encode(x1)
    facts = [type(loss.grad_fn).__name__, h.requires_grad, type(z1.grad_fn).__name__]
    return facts, _arr(loss, z1, z2, h) + _grads(m)


def test_ntxent_loss_and_projection_head():
    (ref_facts, ref), (got_facts, got) = _ntxent(torch), _ntxent(tracegrad)
    assert ref_facts == got_facts == ["NllLossBackward0", False, "DivBackward0"], got_facts
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _fill_diagonal(T, shape, wrap, transpose):
    # the loss's in-place -inf diagonal on a non-leaf: torch writes through an as_strided view of
    # the storage (grad_fn CopySlices; a wrapped fill is a second write, a second version)
    rs = np.random.RandomState(2)
    a = T.tensor(rs.randn(*shape).astype(np.float32), requires_grad=True)
    sim = (a * 2).t() if transpose else a * 2
    out = sim.fill_diagonal_(float("-inf"), wrap=wrap)
    loss = T.nn.functional.cross_entropy(sim, T.tensor(rs.randint(0, sim.shape[1], sim.shape[0])))
    loss.backward()
    return [out is sim, type(sim.grad_fn).__name__, sim._version], _arr(sim, loss, a.grad)


@pytest.mark.parametrize("shape,wrap,transpose,facts", [
    ((6, 6), False, False, [True, "CopySlices", 1]),
    ((7, 3), True, False, [True, "CopySlices", 2]),
    ((4, 3), True, False, [True, "CopySlices", 1]),
    ((3, 7), True, True, [True, "AsStridedBackward0", 2]),
], ids=["square", "wrapped", "tall-no-wrap-room", "transposed-wrapped"])
def test_fill_diagonal_minus_inf_then_cross_entropy(shape, wrap, transpose, facts):
    (ref_facts, ref), (got_facts, got) = (_fill_diagonal(T, shape, wrap, transpose) for T in (torch, tracegrad))
    assert ref_facts == got_facts == facts, (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_fill_diagonal_of_a_leaf_fails_alike():
    msgs = same_error(torch, tracegrad, lambda T: T.zeros(2, 2, requires_grad=True).fill_diagonal_(1.0))
    assert all(m.startswith("a view of a leaf Variable that requires grad is being used in an in-place")
               for m in msgs), msgs


def _ignored_rows(T, reduction, smoothing, weighted):
    # the NT-Xent logits with -inf on the diagonal, and targets ignored on rows whose class 0
    # (the stand-in an ignored target gathers) holds that -inf: those rows add 0, not nan
    a = T.tensor(np.random.RandomState(4).randn(4, 4).astype(np.float32), requires_grad=True)
    sim = a * 2
    sim.fill_diagonal_(float("-inf"))
    weight = T.tensor([1.0, 2.0, 0.5, 3.0]) if weighted else None
    loss = T.nn.functional.cross_entropy(sim, T.tensor([-100, 2, 3, -100]), weight=weight, reduction=reduction,
                                         label_smoothing=smoothing)
    loss.sum().backward()
    return _arr(loss, a.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing,weighted", [(0.0, False), (0.0, True), (0.2, True)])
def test_cross_entropy_ignored_rows_holding_minus_inf(reduction, smoothing, weighted):
    ref, got = (_ignored_rows(T, reduction, smoothing, weighted) for T in (torch, tracegrad))
    # smoothing sums every log-probability of a kept row: -inf there is an infinite loss (torch's);
    # the ignored rows are 0 either way
    assert np.isfinite(ref[0]).all() != (smoothing > 0)
    if reduction == "none":
        assert ref[0][0] == ref[0][3] == 0
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_nll_loss_ignored_minus_inf_and_all_ignored():
    def run(T):
        lp = T.tensor([[-float("inf"), -1.0], [-0.5, -float("inf")]], requires_grad=True)
        loss = T.nn.functional.nll_loss(lp, T.tensor([-100, 0]))
        loss.backward()
        spatial = T.nn.functional.nll_loss(lp.detach()[..., None, None], T.tensor([[[-100]], [[0]]]))
        none = T.nn.functional.nll_loss(lp.detach(), T.tensor([-100, -100]))
        return _arr(loss, lp.grad, spatial, none)
    ref = run(torch)
    assert ref[0] == 0.5 and np.isnan(ref[3])
    _compare(lambda T: ref if T is torch else run(T))


class Bar:
    """A stand-in for ``tqdm.auto.tqdm``: iterates, records its arguments and postfixes."""

    def __init__(self, it, **kw):
        self.it, self.kw, self.post = it, kw, []

    def __iter__(self):
        return iter(self.it)

    def set_postfix(self, **kw):
        self.post.append(kw)


class Clock:
    """A stand-in for ``time``: ``time()`` advances a quarter second on every call."""

    def __init__(self):
        self.t = 0.0

    def time(self):
        self.t += 0.25
        return self.t


class saving_torch:
    """``T`` but for ``save``, which writes to ``folder`` under the file name of the path given
    (the script saves to a Colab drive)."""

    def __init__(self, T, folder):
        self._T, self.folder, self.saved = T, folder, []

    def __getattr__(self, name):
        return getattr(self._T, name)

    def save(self, obj, path):
        self.saved.append(os.path.basename(path))
        self._T.save(obj, os.path.join(self.folder, os.path.basename(path)))


def _simclr_train(T, tmp):
    bars = []

    def tqdm(it, **kw):
        bars.append(Bar(it, **kw))
        return bars[-1]

    ns = simclr_program(T)
    m = simclr_model(T, ns)
    rs = np.random.RandomState(1)
    data = [tuple(v[0] for v in _views(T, rs, 1)) for _ in range(8)]
    loader = T.utils.data.DataLoader(data, batch_size=4, shuffle=False)
    opt = T.optim.Adam(m.parameters(), lr=1e-2)
    folder = str(tmp / T.__name__)
    os.makedirs(folder)
    st = saving_torch(T, folder)
    tr = program(st, SIMCLR_TRAIN, EMAMeter=ns.EMAMeter, format_time=ns.format_time, tqdm=tqdm, time=Clock())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tr.train(m, loader, opt, ns.NTXentLoss(), "cpu", 1, 2)
    ck = T.load(os.path.join(folder, st.saved[-1]))
    facts = [st.saved, sorted(ck), ck["epoch"], [b.kw for b in bars], [[sorted(p) for p in b.post] for b in bars],
             [p["eta"] for b in bars for p in b.post], [p["bt"] for b in bars for p in b.post],
             ck["loss"].requires_grad, sorted(ck["optimizer_state_dict"]["state"])]
    losses = [float(p["loss"]) for b in bars for p in b.post]
    return buf.getvalue(), facts, losses, _state(m) + _arr(ck["loss"], *ck["model_state_dict"].values())


def test_simclr_train_loop(tmp_path):
    (ref_log, ref_facts, ref_l, ref), (got_log, got_facts, got_l, got) = (_simclr_train(T, tmp_path)
                                                                          for T in (torch, tracegrad))
    assert ref_log.count("Epoch [") == 2 and ref_log.endswith("s\n"), ref_log
    same_logs(ref_log, got_log, 1e-4)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[:3] == [["checkpoint1.pth", "checkpoint2.pth"],
                             ["epoch", "loss", "model_state_dict", "optimizer_state_dict"], 1]
    np.testing.assert_allclose(got_l, ref_l, rtol=1e-4, atol=1e-4)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


# ---------------------------------------------------------------- WGAN-GP (0nEwEi)

def _gp(T):
    ns = program(numpy_draws(T, 0), WGANGP_MODEL + WGANGP_GP)
    gen, critic = init_uniform(T, ns.Generator(4, 3, 1), 1), init_uniform(T, ns.Discriminator(3, 1), 2)
    rs = np.random.RandomState(3)
    real = T.tensor(rs.randn(2, 3, 64, 64).astype(np.float32))
    fake = gen(T.tensor(rs.randn(2, 4, 1, 1).astype(np.float32))).detach()
    gp = ns.gradient_penalty(critic, real, fake)
    gp.backward()
    return [type(gp.grad_fn).__name__], _arr(gp, fake) + _grads(critic) + _grads(gen)


def test_wgan_gradient_penalty_double_backward():
    (ref_facts, ref), (got_facts, got) = _gp(torch), _gp(tracegrad)
    assert ref_facts == got_facts == ["MeanBackward0"]
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_gradient_penalty_without_requires_grad_fails_alike():
    # the comment in utils.py: without ``requires_grad_(True)`` autograd.grad refuses the input
    src = WGANGP_GP.replace("    interpolated_images.requires_grad_(True)", "    pass")
    assert src != WGANGP_GP

    def run(T):
        ns = program(numpy_draws(T, 0), WGANGP_MODEL + src)
        real, fake = T.zeros(2, 3, 64, 64), T.ones(2, 3, 64, 64)
        ns.gradient_penalty(init_uniform(T, ns.Discriminator(3, 1), 2), real, fake)
    msgs = same_error(torch, tracegrad, run)
    assert all(m.startswith("One of the differentiated Tensors does not require grad") for m in msgs), msgs


@pytest.mark.parametrize("how", ["method", "attribute", "factory"])
def test_integer_interpolation_cannot_require_grad(how):
    # the same line on an integer tensor: torch's method, attribute setter and factories word
    # the refusal differently
    def run(T):
        if how == "method":
            T.zeros(2, dtype=T.int64).requires_grad_(True)
        elif how == "attribute":
            T.zeros(2, dtype=T.int64).requires_grad = True
        else:
            T.zeros(2, dtype=T.int64, requires_grad=True)
    msgs = same_error(torch, tracegrad, run)
    assert msgs[0] == msgs[1], msgs


class ImageWriter:
    """A stand-in for tensorboard's ``SummaryWriter``: ``add_image`` records the tag, shape,
    step and the image's sum."""

    def __init__(self):
        self.log = []

    def add_image(self, tag, img, global_step=None):
        self.log.append((tag, tuple(img.shape), global_step, float(img.sum())))

    def close(self):
        self.log.append("closed")


def make_grid(t, normalize=False):
    """A stand-in for ``torchvision.utils.make_grid``: the images flattened."""
    return t.reshape(-1)


def _wgan_train(T, batches=2):
    ns = program(draws(T, 0), WGANGP_MODEL + WGANGP_GP)
    rs = np.random.RandomState(3)
    data = [(T.tensor(rs.uniform(-1, 1, (3, 64, 64)).astype(np.float32)), 0) for _ in range(2 * batches)]
    loader = T.utils.data.DataLoader(data, batch_size=2, shuffle=False, drop_last=True)
    wr, wf = ImageWriter(), ImageWriter()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = program(draws(T, 5), WGANGP_TRAIN, Generator=ns.Generator, Discriminator=ns.Discriminator,
                      weights_init=ns.weights_init, gradient_penalty=ns.gradient_penalty, dataloader=loader,
                      device="cpu", LEARNING_RATE=1e-3, BATCH_SIZE=2, IMG_CHANNELS=3, Z_DIM=4, NUM_EPOCHS=1,
                      FEATURES_D=1, FEATURES_G=1, CRITIC_ITERATIONS=2, LAMBDA_GP=10, writer_real=wr,
                      writer_fake=wf, torchvision=types.SimpleNamespace(utils=types.SimpleNamespace(
                          make_grid=make_grid)))
    sums = [r[3] for r in wr.log[:-1] + wf.log[:-1]]
    facts = [[r if isinstance(r, str) else r[:3] for r in wr.log + wf.log], out.step]
    return buf.getvalue(), facts, sums, _state(out.gen) + _state(out.critic) + _arr(out.loss_critic, out.loss_gen,
                                                                                  out.gp)


def test_wgan_gp_training_script():
    (ref_log, ref_facts, ref_s, ref), (got_log, got_facts, got_s, got) = _wgan_train(torch), _wgan_train(tracegrad)
    assert ref_log.startswith("Epoch [0/1] Batch 0/2") and "Loss D: " in ref_log, ref_log
    same_logs(ref_log, got_log, 1e-4)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[0][0] == ("Real_celeb_wgangp", (2 * 3 * 64 * 64,), 0)
    np.testing.assert_allclose(got_s, ref_s, rtol=1e-4)
    _compare(lambda T: ref if T is torch else got, tol=2e-4)


def test_wgan_weights_init_on_the_model_changes_nothing():
    def run(T):
        ns = program(draws(T, 0), WGANGP_MODEL)
        gen = init_uniform(T, ns.Generator(4, 3, 1), 1)
        before = _state(gen)
        ns.weights_init(gen)                    # the script's call: classname "Generator"
        same = all(np.array_equal(a, b) for a, b in zip(before, _state(gen)))
        gen.apply(ns.weights_init)              # what it meant: every Conv and BatchNorm
        return same, _state(gen)
    (ref_same, ref), (got_same, got) = run(torch), run(tracegrad)
    assert ref_same and got_same
    _compare(lambda T: ref if T is torch else got, tol=1e-6)


# ---------------------------------------------------------------- knowledge distillation (DisCo)

def _kd(T, alpha, temp):
    ns = program(T, KD_CE)
    rs = np.random.RandomState(3)
    out = T.tensor(rs.randn(4, 5).astype(np.float32), requires_grad=True)
    tea = T.tensor(rs.randn(4, 5).astype(np.float32))
    lab = T.tensor(rs.randint(0, 5, 4))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        loss = ns.loss_fn_kd(out, lab, tea, types.SimpleNamespace(alpha=alpha, T=temp))
    loss.backward()
    msgs = [(m.category.__name__, str(m.message)[:60]) for m in w]
    return [type(loss.grad_fn).__name__, msgs], _arr(loss, out.grad)


@pytest.mark.parametrize("alpha,temp", [(0.7, 3.0), (1.0, 1.0), (0.0, 20.0)])
def test_kd_loss_with_temperature(alpha, temp):
    (ref_facts, ref), (got_facts, got) = _kd(torch, alpha, temp), _kd(tracegrad, alpha, temp)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[1] == [("UserWarning", "reduction: 'mean' divides the total loss by both the batch s")]
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def kd_setup(T, temperature=4.0):
    """``loss_fn_kd`` training a seeded student ``Linear(4, 6), ReLU, Linear(6, 3)`` (SGD with
    momentum) from a seeded teacher (``Tanh``, hidden 8, eval mode): ``(step, student, teacher,
    args)``, ``step(x, y)`` one update returning the loss, ``args.T`` the temperature it reads."""
    ns = program(T, KD_CE)
    student = init_uniform(T, T.nn.Sequential(T.nn.Linear(4, 6), T.nn.ReLU(), T.nn.Linear(6, 3)), 1)
    teacher = init_uniform(T, T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 3)), 2).eval()
    opt = T.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
    args = types.SimpleNamespace(alpha=0.9, T=temperature)

    def step(x, y):
        with T.no_grad():
            t = teacher(x)
        loss = ns.loss_fn_kd(student(x), y, t, args)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step, student, teacher, args


def kd_batch(T, rs):
    return T.tensor(rs.randn(5, 4).astype(np.float32)), T.tensor(rs.randint(0, 3, 5))


def _kd_train(T):
    step, student, teacher, _ = kd_setup(T)
    rs, out = np.random.RandomState(0), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            out += _arr(step(*kd_batch(T, rs)))
    return out + _grads(student) + _grads(teacher) + _state(student)


def test_kd_student_steps():
    _compare(_kd_train, tol=2e-5)


# ---------------------------------------------------------------- RealNVP (Fr0do/flows4ad)

def flows_program(T):
    return program(T, FLOWS_MASKS + FLOWS_MLP + FLOWS_REAL_NVP + FLOWS_LOSS, IntEnum=enum.IntEnum)


def _masks(T):
    ns = flows_program(T)
    x = T.zeros(2, 5)
    ms = [ns.make_checkerboard_mask(x, inv) for inv in (False, True)] + \
         [ns.make_channel_wise_mask(x, inv) for inv in (False, True)]
    return [[m.dtype == T.bool, m.tolist()] for m in ms]


def test_flow_masks():
    ref, got = _masks(torch), _masks(tracegrad)
    assert ref == got, (ref, got)
    assert ref[0][1][0] == [True, False, True, False, True] and ref[2][1][0] == [True, True, False, False, False]


def _flows(T, act, cw, cb):
    ns = flows_program(T)
    m = init_uniform(T, ns.RealNVP(5, 6, 4, use_channel_wise_splits=cw, use_checkerboard_splits=cb,
                                   mlp_activation=act), 0, 0.3)
    prior = T.distributions.Normal(loc=0.0, scale=1.0)
    loss_fn = ns.RealNVPLoss(prior)
    opt = T.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.0)
    sch = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, eta_min=1e-5)
    X = np.random.RandomState(0).randn(12, 5).astype(np.float32)
    loader = T.utils.data.DataLoader(T.utils.data.TensorDataset(T.from_numpy(X).to(T.float32)), batch_size=4,
                                     shuffle=False, drop_last=True)
    out = []
    for _ in range(2):                      # train's epochs
        for (x,) in loader:
            z, log_det = m(x)
            loss = loss_fn(z, log_det)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out += _arr(loss)
        sch.step()
    with T.no_grad():                       # train.py's histogram scores
        z, log_det = m(T.from_numpy(X), reverse=True)
        score = (prior.log_prob(z) + log_det).sum(dim=-1)
    facts = [[type(l).__name__ for l in m.flow_layers], [l.mask_type for l in m.flow_layers],
             type(m.flow_layers[0].shift_scale.net[-1]).__name__, tuple(log_det.shape)]
    return facts, out + _arr(z, score) + _grads(m) + _state(m)


@pytest.mark.parametrize("act,cw,cb", [("ReLU", True, True), ("Tanh", True, False), ("ELU", False, True)])
def test_real_nvp_training(act, cw, cb):
    (ref_facts, ref), (got_facts, got) = _flows(torch, act, cw, cb), _flows(tracegrad, act, cw, cb)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[3] == (12, 5)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_real_nvp_default_activation_fails_alike():
    # the default mlp_activation='relu' is no nn class
    msgs = same_error(torch, tracegrad, lambda T: flows_program(T).RealNVP(4, 4, 2))
    assert [m.split("'")[-2] for m in msgs] == ["relu", "relu"], msgs


# ---------------------------------------------------------------- VAE/GAN (edchengg)

def _vae_gan(T, fixed_labels):
    ns = program(T, VAE_GAN)
    rs = np.random.RandomState(0)
    data = [(T.tensor(rs.uniform(-1, 1, 784).astype(np.float32)), 0) for _ in range(2)]
    loader = T.utils.data.DataLoader(data, batch_size=2, shuffle=False)
    src = VAE_GAN_MAIN
    if fixed_labels:   # the tests' change: labels shaped as the discriminator's (N, 1) scores
        src = src.replace("torch.ones(X_real.size(0))", "torch.ones(X_real.size(0), 1)")
        src = src.replace("torch.zeros(X.size(0))", "torch.zeros(X.size(0), 1)")
        assert src.count("size(0), 1)") == 2
    with contextlib.redirect_stdout(io.StringIO()):
        program(T, src, Encoder=ns.Encoder, Decoder=ns.Decoder, Discriminator=ns.Discriminator, train_loader=loader,
                BATCH_SIZE=2, GAMMA=25, BETA=5, EPOCHS=1)


def test_vae_gan_script_fails_alike_on_its_label_shape():
    msgs = same_error(torch, tracegrad, lambda T: _vae_gan(T, False))
    assert msgs[0] == msgs[1] == ("Using a target size (torch.Size([2])) that is different to the input size "
                                  "(torch.Size([2, 1])) is deprecated. Please ensure they have the same size."), msgs


def test_vae_gan_second_backward_meets_the_stepped_discriminator():
    msgs = same_error(torch, tracegrad, lambda T: _vae_gan(T, True))
    head = [m.split(" instead")[0] for m in msgs]
    assert head[0] == head[1] == ("one of the variables needed for gradient computation has been modified by an "
                                  "inplace operation: [torch.FloatTensor [256, 1]], which is output 0 of AsStrided, "
                                  "is at version 2; expected version 1"), msgs


def _param_views(T):
    def node(t):
        g = t.grad_fn
        return None if g is None else (g.name(), [n.name() if n else None for n, _ in g.next_functions])
    out = []
    w = T.nn.Parameter(T.ones(3, 2))
    v, row = w.t(), w[1:].t()[0]
    seen = []
    v.register_hook(lambda g: seen.append(g.sum().item()))
    out += [node(v), node(row)]
    opt = T.optim.SGD([w], lr=0.5)
    w.grad = T.ones(3, 2)
    opt.step()                           # the optimizer's in-place write, under no_grad
    out += [node(v), node(row), v.grad_fn is v.grad_fn, w._version]
    out += [(g._saved_size, g._saved_stride, g._saved_storage_offset) for g in (v.grad_fn, row.grad_fn)]
    (v * 2 + row.sum()).sum().backward()
    out += [seen, w.grad.tolist()]      # the hook stayed on the old node: torch's too
    return out


def test_views_of_a_parameter_after_an_optimizer_step():
    ref, got = _param_views(torch), _param_views(tracegrad)
    assert ref == got, (ref, got)
    assert ref[2] == ("AsStridedBackward0", ["torch::autograd::AccumulateGrad"]) and ref[8] == []
    assert ref[6:8] == [((2, 3), (1, 2), 0), ((2,), (2,), 2)], ref[6:8]
