"""Compile patterns of the sixty-eighth round of public programs
(tests/api/test_public_programs_round68.py; sources in tests/public_programs_round68_src.py): each
program's step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the same
initial state:

- LoniQin/pytorch-style-transfer: ``run()``'s LBFGS closure, compiled and handed to
  ``optimizer.step`` (twenty evaluations: ``input_image.data.clamp_(0, 1)`` in place on the
  optimised leaf, ``zero_grad``, the cut ``nn.Sequential`` whose loss modules store
  ``self.loss``, the int-started sums, ``backward``, the returned ``content + content``): one
  trace, the line search's moves of the image between calls seen by every call.
- singh-hrituraj/PixelCNN-Pytorch: train.py's batch body (``Variable(images[:,0,:,:]*255)
  .long()``, the masked convolutions' ``self.weight.data *= self.mask`` in every forward, the
  256-way ``CrossEntropyLoss``, Adam): one trace; Adam moves the masked weights after each call
  and the next compiled call zeroes them again, as eager does.
- hiram36/makeMoE-1: the language model's training step (the experts chosen by
  ``torch.nonzero`` of the router's top-k, AdamW under ``with set_detect_anomaly(True):``):
  ``nonzero()`` gives a shape only the data decide, so the compiled step says so once and runs
  eagerly on every call with eager's values; ``fullgraph=True`` raises the graph break. Its
  attention (``masked_fill`` with ``-inf`` from the ``tril`` buffer, the softmax moved through
  ``.cpu().clone()`` and ``.to(device)``) compiles to one trace with AdamW; with main()'s
  anomaly-mode block around its backward it runs eagerly (the NaN checks read values).
"""
import functools

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, compiled_parity, default_dtype, grads as _grads, \
    state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round68 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from compile.test_public_patterns_round66 import _one_trace  # noqa: E402

_parity = functools.partial(compiled_parity, torch, tracegrad)


# ---------------------------------------------------------------- style transfer

def _style_model(T, ns, st):
    """The model ``StyleTransfer.run`` builds (the same loop over the copied network's children,
    the same cut after the last loss), with its loss lists."""
    nn = T.nn
    model = nn.Sequential(ns.Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]))
    content_losses, style_losses, i = [], [], 0
    for layer in ns.copy.deepcopy(st.transform_model).children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = "conv_{}".format(i)
        elif isinstance(layer, nn.ReLU):
            name, layer = "relu_{}".format(i), nn.ReLU(inplace=False)
        else:
            name = ("pool_{}" if isinstance(layer, nn.MaxPool2d) else "bn_{}").format(i)
        model.add_module(name, layer)
        if name in st.content_layers:
            content_losses.append(ns.ContentLoss(model(st.content_image.image).detach()))
            model.add_module("content_loss_{}".format(i), content_losses[-1])
        if name in st.style_layers:
            style_losses.append(ns.StyleLoss(model(st.style_image.image).detach()))
            model.add_module("style_loss_{}".format(i), style_losses[-1])
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ns.ContentLoss, ns.StyleLoss)):
            break
    return model[:(i + 1)], content_losses, style_losses


def _style(T, compiled):
    record = []
    ns = _api.style_program(T, record, [])
    st = ns.StyleTransfer(size=8, style_path="style.jpg", content_path="content.jpg", step_count=0,
                          transform_model=_api.feature_net(T))
    st.load_image()
    model, content_losses, style_losses = _style_model(T, ns, st)
    optimizer = ns.optim.LBFGS([st.input_image.requires_grad_()])

    def closure():                      # run()'s closure, its step count and log left out
        st.input_image.data.clamp_(0, 1)
        optimizer.zero_grad()
        model(st.input_image)
        style_score = 0
        content_score = 0
        for item in style_losses:
            style_score += item.loss
        for item in content_losses:
            content_score += item.loss
        style_score *= st.style_weight
        content_score *= st.content_weight
        loss = style_score + content_score
        loss.backward()
        return content_score + content_score

    f = T.compile(closure) if compiled else closure
    optimizer.step(f)
    st.input_image.data.clamp_(0, 1)
    return [np.array(record)] + _arr(st.input_image, st.input_image.grad), f


def test_style_lbfgs_closure_compiled():
    with default_dtype(torch, torch.float64), default_dtype(tracegrad, tracegrad.float64):
        stats = _parity(_style, ref_tol=1e-6, comp_tol=1e-6)
    _one_trace(stats, 20)


# ---------------------------------------------------------------- PixelCNN

def _pixelcnn(T, compiled):
    ns = _api.pixelcnn_program(T)
    net = ns.PixelCNN()
    optimizer, criterion = T.optim.Adam(net.parameters()), T.nn.CrossEntropyLoss()

    def step(images):                   # train.py's batch body
        target = ns.Variable(images[:, 0, :, :] * 255).long()
        optimizer.zero_grad()
        output = net(images)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(4), []
    for _ in range(3):
        out += _arr(f(_api._digits(T, rs, 3)))
    masks = [m.mask.numpy() == 0 for m in (net.Conv2d_1, net.Conv2d_5)]
    # Adam has moved the masked weights since the last forward zeroed them
    assert all(np.any(w.detach().numpy()[k] != 0) for w, k in zip((net.Conv2d_1.weight, net.Conv2d_5.weight), masks))
    return out + _grads(net) + _state(net), f


def test_pixelcnn_step_compiled():
    _one_trace(_parity(_pixelcnn), 3)


# ---------------------------------------------------------------- makeMoE

def _moe_setup(T, tmp_path, monkeypatch):
    ns = _api.moe_program(T, tmp_path, monkeypatch, [])
    model = ns.SparseMoELanguageModel()
    model.apply(ns.kaiming_init_weights)
    optimizer = T.optim.AdamW(model.parameters(), lr=ns.learning_rate)

    def step(xb, yb):                   # main()'s loop body
        logits, loss = model(xb, yb)
        with T.autograd.set_detect_anomaly(True):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return loss.detach()
    return ns, model, step


def _moe(T, compiled, tmp_path, monkeypatch):
    ns, model, step = _moe_setup(T, tmp_path, monkeypatch)
    f = T.compile(step) if compiled else step
    out = []
    for _ in range(2):
        out += _arr(f(*ns.get_batch("train")))
    return out + _grads(model) + _state(model), f


def test_makemoe_step_compiled_runs_eagerly_at_nonzero(tmp_path, monkeypatch):
    eager = _moe(tracegrad, False, tmp_path / "eager", monkeypatch)[0]
    close(_moe(torch, False, tmp_path / "torch", monkeypatch)[0], eager, 2e-5)
    with pytest.warns(UserWarning, match=r"running _moe_setup.<locals>.step eagerly: nonzero\(\)") as rec:
        comp, f = _moe(tracegrad, True, tmp_path / "compiled", monkeypatch)
    close(eager, comp, 0)
    assert len([w for w in rec if "nonzero" in str(w.message)]) == 1
    assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 2, f.stats
    assert not tracegrad.is_anomaly_enabled()
    ns, _, step = _moe_setup(tracegrad, tmp_path / "full", monkeypatch)
    with pytest.raises(RuntimeError, match=r"cannot capture this function as one program: nonzero\(\)"):
        tracegrad.compile(step, fullgraph=True)(*ns.get_batch("train"))


def _attention(T, compiled, tmp_path, monkeypatch, anomaly=False):
    ns = _api.moe_program(T, tmp_path, monkeypatch, [])
    sa, ln = ns.MultiHeadAttention(2, 4), T.nn.LayerNorm(8)
    params = list(sa.parameters()) + list(ln.parameters())
    optimizer = T.optim.AdamW(params, lr=1e-2)

    def step(x, y):                     # a Block's attention half, regressed on y
        out = x + sa(ln(x))
        loss = T.nn.functional.mse_loss(out, y)
        with T.autograd.set_detect_anomaly(anomaly):    # main()'s block when ``anomaly``
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return loss.detach(), out.detach()

    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(6), []
    for _ in range(3):
        x, y = (T.tensor(rs.randn(2, 5, 8).astype(np.float32)) for _ in range(2))
        out += _arr(*f(x, y))
    return out + _grads(sa) + _state(sa) + _state(ln), f


def test_makemoe_attention_step_compiled(tmp_path, monkeypatch):
    runner = functools.partial(_attention, monkeypatch=monkeypatch)
    paths = iter(tmp_path / str(i) for i in range(3))
    _one_trace(_parity(lambda T, compiled: runner(T, compiled, next(paths))), 3)


def test_makemoe_attention_step_under_anomaly_mode_runs_eagerly(tmp_path, monkeypatch):
    # main()'s ``with torch.autograd.set_detect_anomaly(True):`` around backward: anomaly mode
    # checks each gradient for NaN in Python, so the compiled step says so once and runs
    # eagerly, with eager's values (the mode is off again after each call)
    T = tracegrad
    eager = _attention(T, False, tmp_path / "eager", monkeypatch, anomaly=True)[0]
    with pytest.warns(UserWarning, match=r"running _attention.<locals>.step eagerly: anomaly mode's NaN check") as rec:
        comp, f = _attention(T, True, tmp_path / "compiled", monkeypatch, anomaly=True)
    close(eager, comp, 0)
    assert len(rec) == 1 and f.stats["traces"] == 0 and f.stats["eager_calls"] == 3, f.stats
    assert not T.is_anomaly_enabled()
