"""A sixty-eighth round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round68_src.py, executed with ``torch`` bound to either module. Each
test compares losses, printed logs, gradients and parameters after optimizer steps:

- LoniQin/pytorch-style-transfer (no license file), ``StyleTransfer.py`` at d5ab795 with its
  ``utils.py``, ``Normalization.py``, ``ContentLoss.py`` and ``StyleLoss.py`` at cb48fc3 (Gatys
  style transfer optimizing the input image): ``torch.autograd.set_detect_anomaly(True)`` left
  on, a ``copy.deepcopy`` of the feature network, an ``nn.Sequential`` grown by ``add_module``
  with loss modules that keep ``self.loss`` and pass their input through, the targets computed
  by the partial model as it grows, the model cut after its last loss by ``model[:(i+1)]``,
  ``optim.LBFGS([self.input_image.requires_grad_()])`` stepping a closure that clamps
  ``input_image.data`` in place, sums the losses from an int ``0``, backpropagates
  ``style + content`` and returns ``content_score + content_score`` (the repository's slip: the
  line search sees another function than the gradient); an unknown layer fails on
  ``layer.__class__.name`` with the same AttributeError.
- singh-hrituraj/PixelCNN-Pytorch (no license file), ``MaskedCNN.py`` and ``Model.py`` at
  69daf9f, ``train.py`` at 70f82d4 (a PixelCNN on MNIST): ``MaskedCNN(nn.Conv2d)`` with a
  ``mask`` buffer cloned from ``weight.data`` and filled by slice assignment, the mask applied
  by ``self.weight.data *= self.mask`` in ``forward`` (the masked weights still get gradients,
  and Adam moves them until the next forward zeroes them again), eight masked blocks with
  ``BatchNorm2d`` and ``ReLU(True)``, a 256-way ``CrossEntropyLoss`` over ``(N, 256, H, W)``
  logits against ``Variable(images[:,0,:,:]*255).long()``, ``loss_ += loss`` keeping every
  step's graph, and ``torch.save`` of the ``state_dict`` after each epoch.
- hiram36/makeMoE-1 (no license file), ``makeMoE.py`` at 78eba80 (a character-level sparse
  mixture-of-experts transformer): module-level hyperparameters, ``input.txt`` read and encoded
  at import, ``torch.randint`` batches, causal heads that move their softmax through
  ``.cpu().clone()``, a noisy top-k router (``randn_like * softplus``, ``topk``, ``scatter``
  into ``full_like(-inf)``, softmax), experts chosen per token by ``(indices == i).any(-1)``,
  ``torch.nonzero``, a capacity cut ``selected_indices[:expert_capacity]`` and
  ``updates.index_add_``; ``model.apply`` of a ``kaiming_normal_`` init, ``demo()``'s printed
  shapes and tensors (their ``grad_fn`` reprs), ``main()``'s ``@torch.no_grad()``
  ``estimate_loss`` into ``torch.zeros(eval_iters)``, AdamW under ``with
  torch.autograd.set_detect_anomaly(True):``, and ``torch.save(model, path)`` of the whole model,
  which fails alike (its classes live in the program's namespace, not in a module).
Changes, the same on both sides: parameters from seeded NumPy streams (layers whose
``reset_parameters`` draw them), synthetic images for the files and MNIST, a ``DataLoader``
without shuffling or workers, ``print`` collected, tiny sizes (the PixelCNN's constructor
defaults: ``main()`` builds ``PixelCNN()`` and never passes the sizes it reads from the config;
makeMoE's module-level hyperparameters, set again in the program's globals after its import).
"""
import functools
import os
import types

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, compare, default_dtype, grads as _grads, init_uniform, \
    numpy_draws, same_error, same_logs, state as _state
from public_programs_round68_src import MAKEMOE, PIXELCNN, PIXELCNN_TRAIN, STYLE_PARTS, STYLE_TRANSFER, program

torch = pytest.importorskip("torch")

from api.test_public_programs_round66 import seeded_nn  # noqa: E402  (seeded layers)

_compare = functools.partial(compare, torch, tracegrad)


# ---------------------------------------------------------------- style transfer (LoniQin)

def recording_optim(T, record):
    """``torch.optim`` for the program, its ``LBFGS`` recording, at each closure evaluation,
    the value the closure returns, the image's gradient norm and the image's sum."""
    class LBFGS(T.optim.LBFGS):
        def step(self, closure):
            def recorded():
                value = closure()
                p = self.param_groups[0]["params"][0]
                record.append([value.item(), p.grad.norm().item(), p.detach().sum().item()])
                return value
            return super().step(recorded)
    return types.SimpleNamespace(LBFGS=LBFGS)


def feature_net(T, extra=()):
    """A tiny stand-in for ``vgg19().features``: five convolutions with ReLUs, max-pools and a
    BatchNorm in eval mode, seeded parameters."""
    nn = T.nn
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(4, 4, 3, padding=1),
                        nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4),
                        nn.ReLU(inplace=True), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                        nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(inplace=True), *extra).eval()
    return init_uniform(T, net, 1)


def style_program(T, record, log):
    """The style-transfer sources with stand-ins for torchvision's ``transforms`` and the
    repository's ``ImageLoader`` (seeded images of the default dtype for the two paths)."""
    rs = np.random.RandomState(0)
    images = {p: T.tensor(rs.rand(1, 3, 8, 8)).to(T.get_default_dtype()) for p in ("style.jpg", "content.jpg")}

    class ImageLoader:
        def __init__(self, file_path, loader, device=None):
            self.image = images[file_path].clone()

    transforms = types.SimpleNamespace(Compose=list, Resize=lambda size: None, ToTensor=lambda: None)
    return program(T, STYLE_PARTS + STYLE_TRANSFER, transforms=transforms, models=None, plt=None,
                   ImageLoader=ImageLoader, optim=recording_optim(T, record),
                   print=lambda *a: log.append(" ".join(map(str, a))))


def _transfer(T, **kw):
    record, log = [], []
    ns = style_program(T, record, log)
    net = feature_net(T)
    st = ns.StyleTransfer(size=8, style_path="style.jpg", content_path="content.jpg", step_count=0,
                          transform_model=net, **kw)
    st.load_image()
    try:
        st.run()
        anomaly = T.is_anomaly_enabled()
    finally:
        T.autograd.set_detect_anomaly(False)
    # the deep copy leaves the given network as it was: its ReLUs in place, no gradients
    facts = [st.step, len(record), anomaly, log, st.input_image.requires_grad, st.input_image.grad is None,
             [getattr(m, "inplace", None) for m in net], all(p.grad is None for p in net.parameters())]
    return facts, [np.array(record)] + _arr(st.input_image, st.input_image.grad)


def test_style_transfer_lbfgs_run():
    # float64: one LBFGS step of twenty evaluations with a style weight of 1e6 turns float32's
    # last-bit differences into 1e-4 after a dozen evaluations, with either library
    with default_dtype(torch, torch.float64), default_dtype(tracegrad, tracegrad.float64):
        (ref_facts, ref), (got_facts, got) = _transfer(torch), _transfer(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[:4] == [20, 20, True, ["Optimizing.."]], ref_facts
    assert ref_facts[6][1] is True and ref_facts[7] is True
    assert 0.0 <= ref[1].min() and ref[1].max() <= 1.0       # clamped after the last step
    _compare(lambda T: ref if T is torch else got, tol=1e-6)


def test_style_transfer_content_only_sums_from_int():
    # no style layer: ``style_score`` stays the int 0, ``0 * 1000000`` an int in the sum
    with default_dtype(torch, torch.float64), default_dtype(tracegrad, tracegrad.float64):
        run = functools.partial(_transfer, content_layers=["conv_2"], style_layers=[])
        (ref_facts, ref), (got_facts, got) = run(torch), run(tracegrad)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=1e-6)


def test_style_transfer_unknown_layer_fails_alike():
    # ``layer.__class__.name`` is no class attribute: the error meant for an unknown layer is an
    # AttributeError, raised before any optimisation
    def run(T):
        ns = style_program(T, [], [])
        st = ns.StyleTransfer(size=8, style_path="style.jpg", content_path="content.jpg",
                              transform_model=feature_net(T, extra=(T.nn.Tanh(),)))
        st.load_image()
        try:
            st.run()
        finally:
            T.autograd.set_detect_anomaly(False)
    msgs = same_error(torch, tracegrad, run)
    assert msgs[0] == msgs[1] == "type object 'Tanh' has no attribute 'name'", msgs


# ---------------------------------------------------------------- PixelCNN (singh-hrituraj)

def pixelcnn_program(T, seed=1, **extra):
    """MaskedCNN.py, Model.py and train.py, their ``nn.Conv2d`` drawing from a NumPy stream and
    ``PixelCNN()``'s defaults made tiny (kernel 3, 4 channels; still eight masked blocks)."""
    ns = program(T, PIXELCNN + PIXELCNN_TRAIN, nn=seeded_nn(T, seed, names=("Conv2d",)), **extra)
    ns.PixelCNN.__init__.__defaults__ = (8, 3, 4, None)
    return ns


def _digits(T, rs, n, side=4):
    """Images of whole 1/255 steps (``images * 255`` truncates to the intended level)."""
    return T.tensor((rs.randint(0, 256, (n, 1, side, side)) / 255.0).astype(np.float32))


def _masked_layer(T, kind):
    ns = pixelcnn_program(T)
    conv = ns.MaskedCNN(kind, 2, 3, 3, 1, 1, bias=False)
    x = T.tensor(np.random.RandomState(2).randn(2, 2, 5, 5).astype(np.float32), requires_grad=True)
    out = conv(x)
    out[:, :, 2, 2].sum().backward()
    w_grad = conv.weight.grad.numpy()
    masked = conv.mask.numpy() == 0
    facts = [conv.weight._version, sorted(conv.state_dict()), int(conv.mask.sum().item()),
             bool(np.all(conv.weight.detach().numpy()[masked] == 0)), bool(np.any(w_grad[masked] != 0))]
    return facts, _arr(out, x.grad, conv.weight, conv.weight.grad, conv.mask)


@pytest.mark.parametrize("kind", ["A", "B"])
def test_masked_conv_forward_backward(kind):
    (ref_facts, ref), (got_facts, got) = _masked_layer(torch, kind), _masked_layer(tracegrad, kind)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    # the ``.data`` product bumps the weight's version; the masked weights get gradients
    assert ref_facts == [1, ["mask", "weight"], 2 * 3 * (4 if kind == "A" else 5), True, True], ref_facts
    # the centre output sees no later pixel (nor, with mask 'A', its own)
    later = ref[1][:, :, 2, 3:].any() or ref[1][:, :, 3:].any()
    assert not later and (ref[1][:, :, 2, 2].any() == (kind == "B"))
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _train_main(T, tmp_path, epochs=2):
    rs = np.random.RandomState(0)
    images = _digits(T, rs, 6)
    dataset = T.utils.data.TensorDataset(images, T.tensor(rs.randint(0, 10, 6)))
    save = str(tmp_path / T.__name__ / "models")
    config = {"data": {"batch_size": 2}, "network": {"epochs": epochs, "save_path": save}}
    log = []

    def loader(ds, batch_size, shuffle, num_workers, pin_memory):   # in order, no workers
        return T.utils.data.DataLoader(ds, batch_size=batch_size)

    ns = pixelcnn_program(T, parse_config=lambda f: config, get_MNIST=lambda path: (dataset, dataset),
                          data=types.SimpleNamespace(DataLoader=loader), os=os,
                          print=lambda *a: log.append(a[0]))
    ns.main("config_train.txt")
    saved = sorted(os.listdir(save))
    states = [T.load(os.path.join(save, f)) for f in saved]
    facts = [log, saved, [list(s) for s in states]]
    return facts, [t.numpy() for s in states for t in s.values()]


def test_pixelcnn_train_main(tmp_path):
    (ref_facts, ref), (got_facts, got) = _train_main(torch, tmp_path), _train_main(tracegrad, tmp_path)
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[1] == ["Model_Checkpoint_0.pt", "Model_Checkpoint_Last.pt"]
    assert ref_facts[0][:2] == ["Training Started", "Epoch: 0 Over!"] and len(ref_facts[2][0]) == 58
    _compare(lambda T: ref if T is torch else got, tol=1e-5)


def _pixelcnn_step(T):
    ns = pixelcnn_program(T)
    net = ns.PixelCNN()
    rs = np.random.RandomState(3)
    images = _digits(T, rs, 3)
    target = ns.Variable(images[:, 0, :, :] * 255).long()
    output = net(images)
    loss = T.nn.CrossEntropyLoss()(output, target)
    loss.backward()
    facts = [tuple(output.shape), target.dtype == T.int64, type(loss.grad_fn).__name__,
             int(net.BatchNorm2d_1.num_batches_tracked)]
    return facts, _arr(output, loss) + _grads(net)


def test_pixelcnn_256_way_loss_backward():
    (ref_facts, ref), (got_facts, got) = _pixelcnn_step(torch), _pixelcnn_step(tracegrad)
    assert ref_facts == got_facts == [(3, 256, 4, 4), True, "NllLoss2DBackward0", 1], (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


# ---------------------------------------------------------------- makeMoE (hiram36)

TEXT = "first citizen: before we proceed any further, hear me speak.\nall: speak, speak.\n" * 2
TINY = dict(batch_size=3, block_size=6, max_iters=2, eval_interval=1, eval_iters=1, n_embed=8, n_head=2, n_layer=2,
            dropout=0.0, num_experts=4, top_k=2)


class moe_draws(numpy_draws):
    """``numpy_draws`` with ``randint(high, size)`` and ``multinomial(probs, 1)`` (inverse CDF
    of a uniform draw) from the same NumPy stream."""

    def randint(self, high, size, **kw):
        return self._T.tensor(self._rs.randint(0, high, size))

    def multinomial(self, probs, num_samples):
        assert num_samples == 1
        u = self._T.tensor(self._rs.rand(probs.shape[0], 1).astype(np.float32))
        return (probs.cumsum(-1) < u).sum(-1, keepdim=True).clamp(max=probs.shape[-1] - 1)


def moe_program(T, tmp_path, monkeypatch, log, seed=5):
    """makeMoE.py imported from a working directory holding its ``input.txt``, its draws from
    NumPy (``randint``, ``randn_like``, the Linear/Embedding parameters and ``kaiming_normal_``),
    then the tiny hyperparameters set in its globals."""
    d = tmp_path / T.__name__
    (d / "model").mkdir(parents=True)
    (d / "input.txt").write_text(TEXT, encoding="utf-8")
    monkeypatch.chdir(d)
    draws = moe_draws(T, seed)
    rs = draws._rs

    def kaiming_normal_(w):
        with T.no_grad():
            return w.copy_(T.tensor(rs.normal(0.0, np.sqrt(2.0 / w.shape[1]), tuple(w.shape)).astype(np.float32)))

    ns = program(draws, MAKEMOE, nn=seeded_nn(T, seed + 1, names=("Linear", "Embedding")),
                 init=types.SimpleNamespace(kaiming_normal_=kaiming_normal_), get_device=lambda: "cpu",
                 print=lambda *a: log.append(" ".join(map(str, a))))
    ns.main.__globals__.update(TINY)
    return ns


def _moe_demo(T, tmp_path, monkeypatch):
    log = []
    ns = moe_program(T, tmp_path, monkeypatch, log)
    ns.demo()
    return [ns.vocab_size, len(ns.train_data), len(ns.val_data)], "\n".join(log)


def test_makemoe_demo_prints_alike(tmp_path, monkeypatch):
    (ref_facts, ref_log), (got_facts, got_log) = (_moe_demo(T, tmp_path, monkeypatch) for T in (torch, tracegrad))
    assert ref_facts == got_facts == [26, 144, 16], (ref_facts, got_facts)
    # an f-string formats a 0-d tensor as its Python number (no ``tensor(...)``, no grad_fn)
    assert "grad_fn=<ViewBackward0>" in ref_log and ref_log.splitlines()[-1].startswith("loss===> 4."), ref_log
    # four printed decimals: a last-bit difference may flip one rounding
    same_logs(ref_log, got_log, 2e-4)


def _moe_generate(T, tmp_path, monkeypatch):
    ns = moe_program(T, tmp_path, monkeypatch, [])
    model = ns.SparseMoELanguageModel()
    model.apply(ns.kaiming_init_weights)
    model.eval()
    with T.no_grad():
        idx = model.generate(T.zeros((2, 4), dtype=T.long), max_new_tokens=4)
    return [tuple(idx.shape), idx.dtype == T.int64, ns.decode(idx[0].tolist())], _arr(idx)


def test_makemoe_generate_crops_context(tmp_path, monkeypatch):
    # eight tokens from a block of six: ``idx[:, -block_size:]`` crops the context
    (ref_facts, ref), (got_facts, got) = (_moe_generate(T, tmp_path, monkeypatch) for T in (torch, tracegrad))
    assert ref_facts == got_facts and ref_facts[:2] == [(2, 8), True], (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=0)


def _moe_main(T, tmp_path, monkeypatch):
    log = []
    ns = moe_program(T, tmp_path, monkeypatch, log)
    models = []
    real_save = ns.save_model

    def save_model(model, model_file_path):     # keep the trained model for the comparison
        models.append(model)
        real_save(model, model_file_path)
    ns.main.__globals__["save_model"] = save_model
    with pytest.raises(Exception) as e:
        ns.main()
    anomaly = T.is_anomaly_enabled()
    m = models[0]
    return [type(e.value).__name__, anomaly, m.training], "\n".join(log), _grads(m) + _state(m)


def test_makemoe_main_trains_then_save_fails_alike(tmp_path, monkeypatch):
    (ref_facts, ref_log, ref), (got_facts, got_log, got) = (_moe_main(T, tmp_path, monkeypatch)
                                                            for T in (torch, tracegrad))
    assert ref_facts == got_facts, (ref_facts, got_facts)
    assert ref_facts[1:] == [False, True], ref_facts
    assert ref_log.count("step ") == 2 and "M parameters" in ref_log, ref_log
    same_logs(ref_log, got_log, 1e-4)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def _sparse_moe(T, tmp_path, monkeypatch, capacity_factor):
    ns = moe_program(T, tmp_path, monkeypatch, [])
    moe = ns.SparseMoE(8, 4, 2, capacity_factor=capacity_factor)
    x = T.tensor(np.random.RandomState(7).randn(2, 5, 8).astype(np.float32), requires_grad=True)
    out = moe(x)
    (out * T.arange(out.numel(), dtype=T.float32).reshape(out.shape).cos()).sum().backward()
    _, indices = moe.router(x.detach())     # the next noise draw: the routing of another call
    per_expert = [int((indices == i).any(dim=-1).sum()) for i in range(4)]
    capacity = int((2 * 5 * 2 / 4) * capacity_factor)
    return [capacity, sum(per_expert), type(out.grad_fn).__name__], _arr(out, x.grad) + _grads(moe)


@pytest.mark.parametrize("capacity_factor", [1.0, 0.5])
def test_sparse_moe_capacity_cut(tmp_path, monkeypatch, capacity_factor):
    # tokens past an expert's capacity are dropped from it: their updates and gradients lost
    run = functools.partial(_sparse_moe, monkeypatch=monkeypatch, capacity_factor=capacity_factor)
    (ref_facts, ref), (got_facts, got) = run(torch, tmp_path / "t"), run(tracegrad, tmp_path / "g")
    assert ref_facts == got_facts and ref_facts[1] == 20, (ref_facts, got_facts)
    _compare(lambda T: ref if T is torch else got, tol=2e-5)


def test_sparse_moe_zero_capacity_has_no_graph_alike(tmp_path, monkeypatch):
    # ``capacity_factor=0``: every expert is cut to nothing, the output is zeros with no
    # history, and backward fails the same way
    def run(T):
        return _sparse_moe(T, tmp_path / T.__name__, monkeypatch, 0.0)
    msgs = same_error(torch, tracegrad, run)
    assert "does not require grad" in msgs[0] and "does not require grad" in msgs[1], msgs
