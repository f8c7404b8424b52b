"""A fifty-third round of public PyTorch programs, run unchanged with torch and with tracegrad
(``import tracegrad as torch``) from repositories no earlier round used; the program sources are
in tests/public_programs_round53_src.py, executed with ``torch`` bound to either module. Each test
compares forward values, losses, every gradient after ``backward`` and the whole ``state_dict``
after a few optimizer steps:

- g1910/HyperNetworks (no license file; read, run in tests only), ``hypernetwork_modules.py``,
  ``resnet_blocks.py``, ``primary_net.py`` and ``train.py`` at 0087b80: a static hypernetwork
  (two matmuls, ``view`` into a conv kernel) called for every embedding of an
  ``nn.ParameterList`` per layer, kernels tiled by ``torch.cat`` along both dims, ``F.conv2d`` with
  generated weights inside ResNet blocks (batch norm, ``F.relu(inplace=True)``, ``out +=
  residual``), ``AvgPool2d(8)``; the step with ``Variable``, Adam with weight decay,
  ``MultiStepLR``, and the evaluation (``torch.max(out.cpu().data, 1)``, a float plus a 0-d
  tensor sum, ``accuracy > best_accuracy`` on a tensor, ``torch.save`` of a state-dict
  checkpoint loaded back); the repo's ``loss.data[0]`` raises the same IndexError on both sides.
- LearnedVector/A-Hackers-AI-Voice-Assistant (Apache-2.0),
  ``VoiceAssistant/speechrecognition/neuralnet/model.py`` at c696ec7, ``dataset.py``'s
  ``collate_fn_padd`` and ``decoder.py``'s ``DecodeGreedy`` at 6a8dc8b, ``train.py``'s
  ``SpeechModule`` at 9864ac8: strided ``Conv1d`` over log-mel features, LayerNorm + GELU, an LSTM
  fed explicit ``(h0, c0)``, ``log_softmax`` over the time-major output and ``CTCLoss(blank=28,
  zero_infinity=True)`` whose targets are ``pad_sequence`` of float ``torch.Tensor(list)`` labels
  and whose lengths are Python lists, AdamW, gradient-norm clipping (Lightning's
  ``gradient_clip_val``), ``ReduceLROnPlateau`` on the mean of stacked validation losses, greedy
  CTC decoding by iterating an argmax tensor.

- Deceptrax123/Differential-Equations-Using-Neural-Networks (MIT), ``2ndorder_ode/model.py`` at
  a3b120a, ``2ndorder_ode/train.py`` at 8c7b49d, ``PDEs/model.py`` and ``PDEs/train.py`` at
  105b9a0: neural solvers of a second-order ODE (trial solution ``A0 + A1*t + t**2 * model(t)``)
  and of a Dirichlet Poisson problem, whose residuals use the network's derivatives in its input:
  ``t.requires_grad = True`` set again on a leaf every call, ``autograd.grad`` without and with
  ``create_graph`` (second derivatives by two grads of ``.sum()``), ``torch.tensor(-x)`` of a
  grad-requiring tensor (a detached copy with torch's UserWarning, asserted on both sides),
  ``torch.exp(torch.tensor(-1))`` of an int64 0-d tensor, Adam, ``torch.save`` of the state dict
  when ``loss.item()`` improves. The programs' ``print`` is a collector given as a global (the
  losses are read from it) and their ``__main__`` blocks are done by ``de_program``.

Changes, the same on both sides: ``.cuda()`` dropped, Lightning's base class replaced by
``nn.Module``; tiny sizes (hypernetwork batch 2 of 3x32x32 at the repo's own widths; speech 2
utterances of 12 mel features x 14/10 frames, hidden size 16, dropout 0 so the two random streams
do not matter), parameters overwritten from seeded NumPy streams, synthetic data, lists for the
``DataLoader``s.

Found: no value differences between torch and eager tracegrad in these programs. Under
``tracegrad.compile`` the ODE step found a spurious graph break for a leaf-view argument, fixed
(see tests/compile/test_public_patterns_round53.py).
"""
import io
import types

import numpy as np
import pytest

import tracegrad
from public_programs_round53_src import HYPERNET, HYPERNET_TRAIN, ODE2, PDE, SPEECH, de_program, program

torch = pytest.importorskip("torch")


def _init(T, module, seed, scale=0.3):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in module.named_parameters():
            p.copy_(T.tensor(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


def _arr(*ts):
    return [np.array(t.detach().numpy(), copy=True) for t in ts]


def _state(net):
    return _arr(*[t for _, t in sorted(net.state_dict().items())])


def _grads(net):
    return [np.array(p.grad is None) if p.grad is None else _arr(p.grad)[0]
            for _, p in sorted(net.named_parameters())]


def _compare(run, tol=1e-5, later_tol=None):
    """``run(T)`` returns ``(tight, later)``: values up to the first optimizer step within
    ``tol``, values after steps within ``later_tol`` (Adam's first steps move a weight by about
    ``lr`` whatever its gradient's size, so rounding noise in a near-zero gradient shows)."""
    ref, got = run(torch), run(tracegrad)
    for part, t in ((0, tol), (1, later_tol or tol)):
        assert len(ref[part]) == len(got[part])
        for i, (a, b) in enumerate(zip(ref[part], got[part])):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape, (part, i, a.shape, b.shape)
            assert a.dtype == b.dtype, (part, i, a.dtype, b.dtype)
            if a.dtype.kind == "U":                 # a decoded transcript
                assert str(a) == str(b), (part, i, a, b)
                continue
            np.testing.assert_allclose(b, a, rtol=t, atol=t, err_msg=f"part {part} item {i}")


# ---------------------------------------------------------------- g1910/HyperNetworks

def _cifar(T, seed, n=2):
    rs = np.random.RandomState(seed)
    return (T.tensor(rs.uniform(-1, 1, (n, 3, 32, 32)).astype(np.float32)),
            T.tensor(rs.randint(0, 10, (n,))))


def _hyper_net(T):
    p = program(T, HYPERNET)
    return p, _init(T, p.PrimaryNetwork(), 3, scale=0.2)


def test_hypernetwork_forward_backward():
    def run(T):
        p, net = _hyper_net(T)
        x, y = _cifar(T, 10)
        kernel = net.hope(net.zs[30].z_list[5])
        w = net.zs[26](net.hope)                     # a 4x4 tiling: (64, 64, 3, 3)
        out = net(x)
        loss = T.nn.CrossEntropyLoss()(out, y)
        loss.backward()
        return (_arr(kernel, w, out, loss) + _grads(net), [])
    _compare(run, tol=2e-4)


def test_hypernetwork_train_epoch_and_checkpoint(tmp_path):
    def run(T):
        p, net = _hyper_net(T)
        t = program(T, HYPERNET_TRAIN)
        optimizer = T.optim.Adam(net.parameters(), lr=0.002, weight_decay=0.0005)
        lr_scheduler = T.optim.lr_scheduler.MultiStepLR(optimizer=optimizer, milestones=[1, 2], gamma=0.5)
        criterion = T.nn.CrossEntropyLoss()
        trainloader = [_cifar(T, 20 + i) for i in range(3)]
        testloader = [_cifar(T, 30 + i, n=3) for i in range(2)]
        path = str(tmp_path / f"ckpt_{T.__name__}.pth")
        losses, running, acc, best, total_iter = t.train_epoch(
            net, optimizer, lr_scheduler, criterion, trainloader, testloader, -1.0, path)
        assert total_iter == 3 and isinstance(running, float)
        assert type(acc) is type(T.tensor(1.0)) and acc.dtype == T.float32
        assert best is acc                              # "accuracy > best_accuracy" held
        ckpt = T.load(path)
        assert sorted(ckpt) == ["acc", "net"]
        fresh = p.PrimaryNetwork()
        fresh.load_state_dict(ckpt["net"])
        lrs = [g["lr"] for g in optimizer.param_groups]
        return (_arr(losses[0]), _arr(*losses[1:], acc, ckpt["acc"]) + _state(net) + _state(fresh)
                + [np.array(lrs)])
    _compare(run, tol=1e-4, later_tol=3e-3)


def test_hypernetwork_loss_data_index_error():
    # train.py's "running_loss += loss.data[0]" predates 0-d tensors: both raise the IndexError
    msgs = []
    for T in (torch, tracegrad):
        _, net = _hyper_net(T)
        x, y = _cifar(T, 10)
        loss = T.nn.CrossEntropyLoss()(net(x), y)
        with pytest.raises(IndexError) as info:
            loss.data[0]
        msgs.append(str(info.value))
    assert "0-dim" in msgs[1] and "item()" in msgs[1]


# ---------------------------------------------------------------- A-Hackers-AI-Voice-Assistant

class _TextProcess:
    chars = "' abcdefghijklmnopqrstuvwxyz_"

    def int_to_text_sequence(self, labels):
        return "".join(self.chars[i] for i in labels)


def _utterances(T, seed):
    """Two (spectrogram (1, feat, time), label, spec_len, label_len) items as Data.__getitem__
    makes them (spec_len = time // 2)."""
    rs = np.random.RandomState(seed)
    items = []
    for frames, n_label in ((14, 4), (10, 2)):
        spec = T.tensor(np.log(rs.uniform(1e-3, 2, (1, 12, frames))).astype(np.float32))
        label = [int(v) for v in rs.randint(0, 28, n_label)]
        items.append((spec, label, spec.shape[-1] // 2, len(label)))
    return items


def _speech(T):
    p = program(T, SPEECH, textprocess=_TextProcess())
    h_params = dict(p.SpeechRecognition.hyper_parameters)
    h_params.update({"n_feats": 12, "hidden_size": 16, "dropout": 0.0})
    model = _init(T, p.SpeechRecognition(**h_params), 5)
    module = p.SpeechModule(model, types.SimpleNamespace(learning_rate=1e-3))
    (optimizer,), (scheduler,) = module.configure_optimizers()
    return p, model, module, optimizer, scheduler


def test_speech_ctc_training_steps():
    def run(T):
        p, model, module, optimizer, scheduler = _speech(T)
        first, later = [], []
        for step in range(3):
            batch = p.collate_fn_padd(_utterances(T, 40 + step))
            if step == 0:
                spec, labels, in_lens, lab_lens = batch
                assert labels.dtype == T.float32 and in_lens == [7, 5]
                bs = spec.shape[0]
                out, (hn, cn) = model(spec, model._init_hidden(bs))
                first += _arr(spec, labels, out, hn, cn)
            res = module.training_step(batch, step)
            optimizer.zero_grad()
            res["loss"].backward()
            if step == 0:
                first += _arr(res["loss"]) + _grads(model)
            else:
                later += _arr(res["loss"])
            norm = T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            later += _arr(norm)
            optimizer.step()
        later += _state(model)
        return first, later
    _compare(run, tol=2e-5, later_tol=2e-4)


def test_speech_validation_plateau_and_greedy_decode():
    def run(T):
        p, model, module, optimizer, scheduler = _speech(T)
        vals = []
        for epoch in range(9):                      # a constant loss: patience 6 then halving
            with T.no_grad():
                outputs = [module.validation_step(p.collate_fn_padd(_utterances(T, 50 + b)), b)
                           for b in range(2)]
            res = module.validation_epoch_end(outputs)
            vals += _arr(res["val_loss"])
        lrs = [g["lr"] for g in optimizer.param_groups]
        spec, *_ = p.collate_fn_padd(_utterances(T, 60)[:1])
        with T.no_grad():
            out, _ = model(spec, model._init_hidden(1))
        # a sharpened copy so that the argmax is not a near tie
        text = p.DecodeGreedy(F_log_softmax(T, out * 50))
        # emissions with repeats and blanks (28) between them: collapse and blank skipping
        ids = [3, 3, 28, 3, 5, 5, 28, 28, 0, 1, 1, 28, 26]
        em = np.random.RandomState(61).uniform(0, 1, (len(ids), 1, 29)).astype(np.float32)
        em[np.arange(len(ids)), 0, ids] += 2.0
        text2 = p.DecodeGreedy(T.tensor(em))
        assert text2 == "bbd' y"
        return vals + [np.array(lrs)] + _arr(out), [np.array(text), np.array(text2)]
    _compare(run, tol=2e-5)


def F_log_softmax(T, x):
    return T.nn.functional.log_softmax(x, dim=2)


# ---------------------------------------------------------------- Deceptrax123 (neural ODE/PDE solvers)

def _de_run(T, src, cls, sub, tmp_path, monkeypatch, epochs=3):
    (tmp_path / sub).mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    p, g, printed = de_program(T, src, lambda p: _init(T, getattr(p, cls)(), 7, scale=0.5), epochs)
    g["train"]()
    losses = [a[1] for a in printed if a[0] == "Loss: "]
    assert [a[1] for a in printed if a[0] == "Epoch: "] == list(range(epochs))
    saved = T.load(f"{sub}/weights.pth")
    return g, losses, saved


def test_second_order_ode_trial_solution_training(tmp_path, monkeypatch):
    # the ODE's residual uses the network's first derivative taken without create_graph (a
    # constant in the loss) and its second derivative through two create_graph grads
    def run(T):
        g, losses, saved = _de_run(T, ODE2, "Order2ODE", "2ndorder_ode", tmp_path, monkeypatch)
        t = T.tensor(np.linspace(0, 2, 7)[:, None], dtype=T.float32)
        d1 = g["network_derivative"](t.clone())
        d2 = g["network_derivative_order_2"](t.clone())
        return (_arr(losses[0], d1, d2), _arr(*losses[1:]) + _state(g["model"])
                + _arr(*[v for _, v in sorted(saved.items())]))
    _compare(run, tol=1e-5, later_tol=1e-4)


def test_dirichlet_pde_training(tmp_path, monkeypatch):
    # torch.tensor(-x) of a grad-requiring tensor (a detached copy, with torch's warning),
    # torch.exp of an int64 0-d tensor, second derivatives of a closed-form boundary function
    def run(T):
        with pytest.warns(UserWarning, match="copy construct"):
            g, losses, saved = _de_run(T, PDE, "PDEModel", "PDEs", tmp_path, monkeypatch)
        x = T.tensor(np.linspace(0, 1, 5)[:, None], dtype=T.float32)
        y = T.tensor(np.linspace(0.2, 0.7, 5)[:, None], dtype=T.float32)
        parts = [g["dirchilet_boundary_func_derivative_x"](x.clone(), y.clone()),
                 g["dirchilet_boundary_func_derivative_y"](x.clone(), y.clone()),
                 g["network_derivative_x_order_2"](x.clone(), y.clone()),
                 g["network_derivative_y"](x.clone(), y.clone())]
        return (_arr(*parts) + [np.array(losses[0])],
                [np.array(losses[1:])] + _state(g["model"]) + _arr(*[v for _, v in sorted(saved.items())]))
    _compare(run, tol=1e-5, later_tol=1e-4)
