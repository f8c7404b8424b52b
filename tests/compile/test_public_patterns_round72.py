"""Compile patterns of the seventy-second round of public programs
(tests/api/test_public_programs_round72.py; sources in tests/public_programs_round72_src.py):

- mlfoundations/open_clip ``open_clip_train/train.py``: its own ``torch.compile`` of the train
  step (``_get_compiled_train_step``: the task's forward and loss under ``get_autocast``,
  ``backward``, ``clip_grad_norm_`` over the snapshotted parameters and ``optimizer.step`` in one
  compiled function; ``zero_grad`` and ``clamp_logit_scale`` outside it, as ``train_one_epoch``
  calls them) traces once and equals the same program under ``set_stance("force_eager")``, and
  torch's eager run: float32 CLIP and a bfloat16-autocast SigLIP.
- ``TrainingTask.compile(target="task")``: the task's ``training_forward`` compiled, driven by
  the eager step with a CPU GradScaler and gradient clipping.
- ``loss.py``'s ``fused_linear_cross_entropy`` is ``@torch.compiler.disable``: a step calling it
  runs eagerly under ``tracegrad.compile`` (the reason in ``stats``), with eager's numbers.
- Shahip2016/PINNs: ``PINN.compile()`` (``self.network = torch.compile(self.network)``) and then
  the physics loss, whose derivatives call the compiled network inside
  ``vmap(jacrev(...))``/``vmap(hessian(...))``. tracegrad keyed the network's programs by shapes
  only and ran them under any transform: after a plain call ``vmap(jacrev(net))`` lost the
  parameters' gradients (zero) and ``jacrev(jacrev)`` raised UnexpectedTracerError; fixed in
  compiler.py (NOTE [compiled functions inside func transforms]): such calls run inline in the
  transform. A whole PINN step under ``tracegrad.compile`` runs eagerly (a func transform closing
  over parameters is a graph break, its reason in ``stats``), with eager's numbers.
"""
import contextlib
import types
import warnings

import numpy as np
import pytest

import tracegrad
from public_programs_helpers import close

torch = pytest.importorskip("torch")

import api.test_public_programs_round72 as _api  # noqa: E402  (the programs, the stand-in model)
from compile.test_public_patterns_round66 import _one_trace  # noqa: E402


def _stance(T, compiled):
    return contextlib.nullcontext() if compiled else T.compiler.set_stance("force_eager")


def _compiled_step_run(T, compiled, precision="fp32", siglip=False, clip=None):
    ns = _api.open_clip_program(T)
    model = _api.tiny_clip(T, siglip)
    task = (ns.SigLIPTask if siglip else ns.CLIPTask)(
        model, loss=ns.SigLipLoss() if siglip else ns.ClipLoss(cache_labels=True), verbose=False)
    opt = T.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    args = types.SimpleNamespace(accum_freq=1, grad_clip_norm=clip)
    state = ns.TrainState(task=task, optimizer=opt)
    train_step = ns._get_compiled_train_step(state, ns.get_autocast(precision, device_type="cpu"), args)
    assert ns._get_compiled_train_step(state, None, args) is train_step      # kept on the state
    log = []
    with _stance(T, compiled):
        for batch in _api.batches(T, 4):
            opt.zero_grad()                       # train_one_epoch's compiled branch
            losses, report = train_step(batch)
            task.clamp_logit_scale()
            log.append([v for d in (losses, report) for v in _api._floats(d).values()])
    return [np.array(log)] + [p.detach().numpy().copy() for p in model.parameters()], train_step


@pytest.mark.parametrize("kw", [{"clip": 0.5}, {"precision": "amp_bf16", "siglip": True, "clip": 1.0}],
                         ids=["clip_fp32", "siglip_bf16"])
def test_open_clip_compiled_train_step(kw):
    ref, _ = _compiled_step_run(torch, False, **kw)
    eager, _ = _compiled_step_run(tracegrad, False, **kw)
    comp, f = _compiled_step_run(tracegrad, True, **kw)
    close(ref, eager, 2e-6)
    close(eager, comp, 2e-6)
    _one_trace(f.stats, 4)


def _task_compile_run(T, compiled):
    ns = _api.open_clip_program(T)
    model = _api.tiny_clip(T)
    task = ns.CLIPTask(model, loss=ns.ClipLoss(cache_labels=True), verbose=False)
    assert task.compile(target="task", compile_eval=False) is task
    opt = T.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    sc = T.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    args = types.SimpleNamespace(accum_freq=1, grad_clip_norm=0.5)
    log = []
    with _stance(T, compiled):
        for batch in _api.batches(T, 3):
            losses, report, bs, _ = ns._train_step_eager(task, batch, None, opt, sc, contextlib.suppress, args)
            log.append(list(_api._floats(losses).values()) + list(_api._floats(report).values()) + [bs])
    return [np.array(log), np.array([sc.get_scale()])] + [p.detach().numpy().copy() for p in model.parameters()], \
        task._compiled_training_forward


def test_open_clip_task_compile_target_task():
    ref, _ = _task_compile_run(torch, False)
    eager, _ = _task_compile_run(tracegrad, False)
    comp, f = _task_compile_run(tracegrad, True)
    close(ref, eager, 2e-6)
    close(eager, comp, 2e-6)
    _one_trace(f.stats, 3)


def _fused_run(T, compiled):
    ns = _api.open_clip_program(T)
    lin, head = T.nn.Linear(6, 6), T.nn.Linear(6, 9)
    rs = np.random.RandomState(0)
    with T.no_grad():
        for p in list(lin.parameters()) + list(head.parameters()):
            p.copy_(T.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    opt = T.optim.SGD(list(lin.parameters()) + list(head.parameters()), lr=0.1)

    def step(x, tgt):                             # a GenLIP-style head: hidden states, untied LM head
        opt.zero_grad()
        h = T.tanh(lin(x))
        loss = ns.fused_linear_cross_entropy(h, head.weight, tgt, bias=head.bias, chunk_size=7)
        loss.backward()
        opt.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    losses = []
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(3):
            x, t = T.tensor(rs.randn(20, 6).astype(np.float32)), T.tensor(rs.randint(0, 9, 20))
            losses.append(float(f(x, t)))
    msgs = [str(w.message) for w in rec]
    return [np.array(losses)] + [p.detach().numpy().copy() for p in lin.parameters()], f, msgs


def test_fused_linear_cross_entropy_compiler_disable():
    ref, _, ref_msgs = _fused_run(torch, False)
    eager, _, _ = _fused_run(tracegrad, False)
    comp, f, msgs = _fused_run(tracegrad, True)
    close(ref, eager, 1e-6)
    close(eager, comp, 0)
    # tracegrad runs a step holding a disabled function eagerly, and says why (torch would
    # graph-break around it, silently)
    assert ref_msgs == [] and f.stats["traces"] == 0 and f.stats["eager_calls"] == 3, f.stats
    assert [r for r, _ in f.stats["graph_breaks"]] == ["fused_linear_cross_entropy is marked tracegrad.compiler.disable"]
    assert len(msgs) == 1 and "running" in msgs[0] and "eagerly" in msgs[0], msgs


# ---------------------------------------------------------------- Shahip2016/PINNs


@pytest.mark.parametrize("pde", ["heat_equation_1d", "wave_equation_1d"])
def test_pinn_own_compile_equals_eager(pde):
    with torch.compiler.set_stance("force_eager"):
        ref = _api.train_heat(torch, compiled=True, pde=pde)
    eager = _api.train_heat(tracegrad, compiled=False, pde=pde)
    comp = _api.train_heat(tracegrad, compiled=True, pde=pde)
    assert ref[1] == eager[1] == comp[1]
    for a, b, c in zip(ref[2], eager[2], comp[2]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c, b, rtol=1e-6, atol=1e-7)
    assert eager[0] == comp[0] and len(comp[0]) == 3


def _net(T):
    net = T.nn.Sequential(T.nn.Linear(2, 3), T.nn.Tanh(), T.nn.Linear(3, 1))
    with T.no_grad():
        for p in net.parameters():
            p.copy_(T.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape).astype(np.float32)))
    return net


@pytest.mark.parametrize("closure", [False, True], ids=["module", "closure"])
@pytest.mark.parametrize("order", [("plain", "plain", "jacrev", "jacfwd", "jacrev2"), ("jacrev", "jacfwd", "hessian")],
                         ids=["plain_first", "transforms_only"])
def test_compiled_network_under_func_transforms(order, closure):
    # the compiled network (or a compiled function closing over it) called plainly and under
    # vmap of jacrev / jacfwd / hessian / jacrev(jacrev): each call's parameter gradients as
    # torch's (tracegrad ran a program traced for another context: zeros, or JAX's
    # UnexpectedTracerError)
    def run(T):
        net = _net(T)
        f = T.compile((lambda x: net(x)) if closure else net)
        x = T.tensor(np.linspace(0, 1, 10).reshape(5, 2).astype(np.float32))
        fx = {"jacrev": T.func.jacrev, "jacfwd": T.func.jacfwd, "hessian": T.func.hessian,
              "jacrev2": lambda g: T.func.jacrev(T.func.jacrev(g))}
        out = []
        for name in order:
            net.zero_grad()
            y = f(x) if name == "plain" else T.func.vmap(fx[name](lambda xi: f(xi)))(x)
            y.sum().backward()
            # (the output bias has no path to a derivative in x: its .grad stays None)
            out += [y.detach().numpy(), np.array([p.grad is None for p in net.parameters()])]
            out += [np.zeros(tuple(p.shape), np.float32) if p.grad is None else p.grad.numpy().copy()
                    for p in net.parameters()]
        return out
    with torch.compiler.set_stance("force_eager"):
        ref = run(torch)
    close(ref, run(tracegrad), 1e-5)


def _pinn_step_run(T, compiled):
    ns = _api.pinn_program(T)
    model = _api.pinn(T, ns)
    x = _api.grid(T, ns)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-2)

    def step(x):                              # train_model's epoch
        optimizer.zero_grad()
        loss = model.physics_loss(x, ns.PDELibrary.heat_equation_1d, alpha=0.01)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        return loss.detach()

    f = T.compile(step) if compiled else step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # tracegrad says once that it runs the step eagerly
        losses = [float(f(x)) for _ in range(3)]
    return [np.array(losses)] + [p.detach().numpy().copy() for p in model.parameters()], f


def test_pinn_step_compiled_runs_eagerly():
    ref, _ = _pinn_step_run(torch, False)
    eager, _ = _pinn_step_run(tracegrad, False)
    comp, f = _pinn_step_run(tracegrad, True)
    close(ref, eager, 1e-5)
    close(eager, comp, 0)
    assert f.stats["traces"] == 0 and f.stats["eager_calls"] == 3, f.stats
    assert "tracegrad.func transform reads a tensor that requires grad" in f.stats["graph_breaks"][0][0]
