"""Compile patterns of the sixty-ninth round of public programs
(tests/api/test_public_programs_round69.py; sources in tests/public_programs_round69_src.py): each
program's step run by torch eagerly, tracegrad eagerly and ``tracegrad.compile`` on the same
initial state:

- adambielski/siamese-triplet: ``train_epoch``'s batch body (``optimizer.zero_grad()``, the
  model called on a tuple of inputs, ``loss_inputs += (target,)``, ``loss.item()``,
  ``backward``, Adam) with ``TripletNet`` and ``TripletLoss``: one trace. With
  ``OnlineTripletLoss`` the triplets are mined in NumPy from ``embeddings.cpu()`` inside the
  step (``distance_matrix.data.cpu().numpy()``): the compiled step says so once and runs
  eagerly with eager's values; ``fullgraph=True`` raises the graph break.
- mateuszbuda/brain-segmentation-pytorch: ``main``'s batch body in the train phase
  (``with torch.set_grad_enabled(phase == "train")``, the U-Net with ten BatchNorms in training
  mode, the Dice loss, ``loss.item()`` appended to a list, Adam) traced; the valid phase, which
  takes the prediction to NumPy in eval mode, runs eagerly.
- Iversy/Deep: Grad-CAM's ``__call__`` up to its ``.cpu().numpy()`` (the forward hook keeping
  the activations, ``one_hot[0][class_idx] = 1`` with the ``argmax``, ``output.backward(
  gradient=one_hot)``): the non-full module backward hook registers a hook on the output's
  ``grad_fn`` at every call, so the compiled function says so once and runs eagerly, as
  ``torch.compile`` falls back on modules with such hooks; ``fullgraph=True`` raises.
"""
import functools

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import arrays as _arr, close, compiled_parity, default_dtype, grads as _grads, \
    init_uniform, state as _state

torch = pytest.importorskip("torch")

import api.test_public_programs_round69 as _api  # noqa: E402  (the stand-ins and the tiny sizes)
from compile.test_public_patterns_round66 import _one_trace  # noqa: E402

_parity = functools.partial(compiled_parity, torch, tracegrad)


def _f64(T):
    return default_dtype(T, T.float64)


# ---------------------------------------------------------------- siamese-triplet

def _siamese_setup(T, online):
    ns = _api.siamese_program(T, [])
    emb = init_uniform(T, ns.EmbeddingNet(), 1, 0.1)
    if online:
        model, loss_fn = emb, ns.OnlineTripletLoss(1.0, ns.HardestNegativeTripletSelector(1.0))
    else:
        model, loss_fn = ns.TripletNet(emb), ns.TripletLoss(1.0)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-3)

    def step(data, target):             # train_epoch's batch body (its cuda branch left out)
        optimizer.zero_grad()
        outputs = model(*data)
        if type(outputs) not in (tuple, list):
            outputs = (outputs,)
        loss_inputs = outputs
        if target is not None:
            target = (target,)
            loss_inputs += target
        loss_outputs = loss_fn(*loss_inputs)
        loss = loss_outputs[0] if type(loss_outputs) in (tuple, list) else loss_outputs
        value = loss.item()
        loss.backward()
        optimizer.step()
        return value, loss_outputs
    return model, step


def _siamese(T, compiled, online=False):
    model, step = _siamese_setup(T, online)
    f = T.compile(step) if compiled else step
    rs, out = np.random.RandomState(0), []
    for _ in range(3):
        if online:
            data, target = (_api.mnist(T, 6, rs.randint(100))[0],), T.tensor(np.array([0, 1, 2, 0, 1, 2]))
        else:
            data, target = tuple(_api.mnist(T, 3, rs.randint(100))[0] for _ in range(3)), None
        value, loss_outputs = f(data, target)
        out += [np.array(value)] + _arr(*(loss_outputs if online else (loss_outputs,)))
    return out + _grads(model) + _state(model), f


def test_triplet_net_step_compiled():
    with _f64(torch), _f64(tracegrad):
        _one_trace(_parity(_siamese, ref_tol=1e-9, comp_tol=1e-10), 3)


def test_online_triplet_step_runs_eagerly_at_numpy():
    with _f64(torch), _f64(tracegrad):
        eager = _siamese(tracegrad, False, online=True)[0]
        close(_siamese(torch, False, online=True)[0], eager, 1e-9)
        with pytest.warns(UserWarning, match=r"running _siamese_setup.<locals>.step eagerly: numpy\(\)") as rec:
            comp, f = _siamese(tracegrad, True, online=True)
        close(eager, comp, 0)
        assert len([w for w in rec if "eagerly" in str(w.message)]) == 1
        assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 3, f.stats
        _, step = _siamese_setup(tracegrad, True)
        x, y = _api.mnist(tracegrad, 6)
        with pytest.raises(RuntimeError, match=r"cannot capture this function as one program: numpy\(\)"):
            tracegrad.compile(step, fullgraph=True)((x,), y)


# ---------------------------------------------------------------- brain-segmentation U-Net

def _brain(T, compiled, phases=("train",) * 3):
    ns = _api.brain_program(T, _api._Records(), [])
    unet = ns.UNet(in_channels=3, out_channels=1)
    optimizer, dsc_loss = T.optim.Adam(unet.parameters(), lr=1e-2), ns.DiceLoss()
    loss_train, loss_valid = [], []

    def step(x, y_true, phase):         # main()'s batch body, the image logging left out
        optimizer.zero_grad()
        with T.set_grad_enabled(phase == "train"):
            y_pred = unet(x)
            loss = dsc_loss(y_pred, y_true)
            if phase == "valid":
                loss_valid.append(loss.item())
                y_pred_np = y_pred.detach().cpu().numpy()
                return y_pred_np
            if phase == "train":
                loss_train.append(loss.item())
                loss.backward()
                optimizer.step()
        return y_pred.detach()

    f = T.compile(step) if compiled else step
    data, out = ns.Dataset("kaggle_3m", "train", 16), []
    for i, phase in enumerate(phases):
        (unet.train if phase == "train" else unet.eval)()
        x, y = (T.stack([t, t.flip(-1)]) for t in data[i])
        pred = f(x, y, phase)
        out += [np.array(pred)] if phase == "valid" else _arr(pred)
    return [np.array(loss_train), np.array(loss_valid)] + out + _grads(unet) + _state(unet), f


def test_unet_steps_compiled_valid_phase_runs_eagerly():
    # the second train call traces (the first runs eagerly); the valid call, whose prediction
    # leaves for NumPy, says so and runs eagerly; the train call after it traces once more: the
    # valid call's ``zero_grad()`` left every ``.grad`` None, where the first trace was taken
    # with the previous step's gradients in place
    phases = ("train", "train", "valid", "train")
    with _f64(torch), _f64(tracegrad), \
            pytest.warns(UserWarning, match=r"running _brain.<locals>.step eagerly: numpy\(\)"):
        stats = _parity(lambda T, compiled: _brain(T, compiled, phases), ref_tol=1e-6, comp_tol=1e-9)
    assert stats["calls"] == 4 and stats["traces"] == 2 and stats["eager_calls"] == 2, stats


# ---------------------------------------------------------------- Grad-CAM

def _gradcam_setup(T):
    ns = _api.gradcam_program(T)
    model = ns.AdvancedCNN().eval()
    cam = ns.GradCAM(model, model.conv3)

    def call(self, x, class_idx=None):  # GradCAM.__call__ up to its ``.cpu().numpy()``
        output = self.model(x)
        if class_idx is None:
            class_idx = T.argmax(output)
        self.model.zero_grad()
        one_hot = T.zeros_like(output)
        one_hot[0][class_idx] = 1
        output.backward(gradient=one_hot)
        weights = T.mean(self.gradients, dim=(2, 3), keepdim=True)
        heat = T.sum(weights * self.activations, dim=1, keepdim=True)
        heat = T.relu(heat)
        return (heat - heat.min()) / (heat.max() - heat.min() + 1e-8)
    return model, cam, call


@pytest.mark.filterwarnings("ignore:Using a non-full backward hook:FutureWarning")
def test_gradcam_call_runs_eagerly_at_module_backward_hook():
    def run(T, compiled):
        model, cam, call = _gradcam_setup(T)
        f = T.compile(call) if compiled else call
        out = []
        for seed in range(2):
            out += _arr(f(cam, _api._image(T, seed)), cam.gradients, cam.activations)
        return out + [p.grad.numpy() for p in model.parameters()], f

    eager = run(tracegrad, False)[0]
    close(run(torch, False)[0], eager, 1e-3)
    with pytest.warns(UserWarning, match=r"running _gradcam_setup.<locals>.call eagerly: a hook is registered") as rec:
        comp, f = run(tracegrad, True)
    close(eager, comp, 0)
    assert len([w for w in rec if "eagerly" in str(w.message)]) == 1
    assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 2, f.stats
    _, cam, call = _gradcam_setup(tracegrad)
    with pytest.raises(RuntimeError, match=r"cannot capture this function as one program: a hook is registered"):
        tracegrad.compile(call, fullgraph=True)(cam, _api._image(tracegrad))
