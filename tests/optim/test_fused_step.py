"""The fused eager optimizer step (``_lowering/fused_optim.py``): a parameter group's update
runs as one cached program. Checks that the fused path is taken (its call and trace counters),
that it equals torch over 3 steps while the hyper-parameters a scheduler moves change between
steps, with no retrace after the first, and that the per-op path runs where it must."""
import contextlib
import copy

import numpy as np
import pytest

import tracegrad
from tracegrad._lowering import fused, fused_optim

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (3,), (), (2,)]     # the last parameter stays frozen (grad None)
_RNG = np.random.RandomState(0)
INIT = [np.asarray(_RNG.randn(*s), np.float32) for s in SHAPES]
GRADS = [[np.asarray(_RNG.randn(*s), np.float32) for s in SHAPES[:-1]] for _ in range(3)]

# (class, options, programs traced in 3 steps: SGD's first step creates the momentum buffer, a
# state layout of its own)
CONFIGS = [
    ("SGD", dict(lr=0.1), 1),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01), 2),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02), 2),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True), 2),
    ("Adam", dict(lr=0.01), 1),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True), 1),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True), 1),
    ("Adam", dict(lr="tensor", betas=(0.8, 0.95)), 1),
    ("AdamW", dict(lr=0.02, amsgrad=True), 1),
    ("AdamW", dict(lr=0.02, maximize=True, weight_decay=0.1, betas=(0.85, 0.99)), 1),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.1), 1),
    ("Adagrad", dict(lr=0.05, maximize=True), 1),
    ("RMSprop", dict(lr=0.01, momentum=0.5, weight_decay=0.1), 1),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True), 1),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01), 1),
    ("Adamax", dict(lr=0.02, weight_decay=0.01, maximize=True), 1),
    ("NAdam", dict(lr=0.02, momentum_decay=0.005, decoupled_weight_decay=True, weight_decay=0.1), 1),
    ("RAdam", dict(lr=0.02, weight_decay=0.05), 1),
    ("Rprop", dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-5, 5.0)), 1),
    ("ASGD", dict(lr=0.05, lambd=1e-3, t0=1.0, weight_decay=0.01), 1),
]


def _params(mod):
    return [mod.tensor(a.copy(), requires_grad=True) for a in INIT]


def _options(mod, kw):
    kw = dict(kw)
    if kw.get("lr") == "tensor":
        kw["lr"] = mod.tensor(0.01)
    return kw


def _schedule(group, k):
    """What a scheduler does between steps: a new lr, and momentum / betas[0] (OneCycleLR)."""
    if isinstance(group["lr"], (torch.Tensor, tracegrad.Tensor)):
        group["lr"].fill_(0.01 * (k + 1))
    else:
        group["lr"] = group["lr"] * 0.5
    if group.get("momentum"):
        group["momentum"] = group["momentum"] - 0.05
    if "betas" in group:
        group["betas"] = (group["betas"][0] - 0.02, group["betas"][1])


def _run(mod, name, kw, steps=3, after_first=None):
    params = _params(mod)
    opt = getattr(mod.optim, name)(params, **_options(mod, kw))
    for k in range(steps):
        for p, g in zip(params, GRADS[k]):
            p.grad = mod.tensor(g)
        opt.step()
        if k == 0 and after_first is not None:
            after_first(opt, params)
        _schedule(opt.param_groups[0], k)
    return params, opt


def _np(t):
    return np.asarray(t.detach().numpy())


def _calls():
    return fused.STATS["calls"], fused.STATS["traces"]


@pytest.mark.parametrize("name,kw,traces", CONFIGS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)])
def test_fused_step_matches_torch(name, kw, traces):
    fused._CACHE.clear()
    ids, after_first = {}, []

    def remember(opt, params):      # after the first step: state tensors keep their identity
        ids.update({(i, k): id(v) for i, p in enumerate(params) for k, v in opt.state[p].items()})
        after_first.append(fused.STATS["traces"])

    calls0, traces0 = _calls()
    p_g, opt_g = _run(tracegrad, name, kw, after_first=remember)
    calls1, traces1 = _calls()
    p_t, opt_t = _run(torch, name, kw)

    assert calls1 - calls0 == 3                       # every step fused
    assert traces1 - traces0 == traces                # and no retrace on a new lr/momentum/beta
    if traces == 1:
        assert after_first == [traces1]
    for a, b in zip(p_g, p_t):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)
        assert a._version == b._version               # one bump per in-place op, as torch
        assert (a.grad is None) == (b.grad is None)
    for i, (a, b) in enumerate(zip(p_g, p_t)):
        st_g, st_t = opt_g.state.get(a, {}), opt_t.state.get(b, {})
        assert list(st_g) == list(st_t)
        for k, vt in st_t.items():
            vg = st_g[k]
            assert isinstance(vg, tracegrad.Tensor) and str(vg.dtype)[-7:] == str(vt.dtype)[-7:]
            assert tuple(vg.shape) == tuple(vt.shape)
            np.testing.assert_allclose(_np(vg), _np(vt), rtol=1e-5, atol=1e-6, err_msg=k)
            if (i, k) in ids:
                assert id(vg) == ids[(i, k)], k
    sd = opt_g.state_dict()["state"]
    if name != "SGD":
        assert sd[0]["step"].dtype == tracegrad.float32 and sd[0]["step"].ndim == 0


def test_long_groups_run_in_chunks():
    """NOTE [chunked groups]: 19 parameters run as chunks of 8, 8 and 3; the two chunks of 8
    have one signature (the model repeats), so 2 programs are traced, once; values as torch."""
    rng = np.random.RandomState(1)
    shapes = [(2, 2), (2,)] * 9 + [(3,)]
    init = [rng.randn(*s).astype(np.float32) for s in shapes]
    grads = [[rng.randn(*s).astype(np.float32) for s in shapes] for _ in range(2)]

    def run(mod):
        ps = [mod.tensor(a.copy(), requires_grad=True) for a in init]
        opt = mod.optim.AdamW(ps, lr=0.05, amsgrad=True)
        for k in range(2):
            for p, g in zip(ps, grads[k]):
                p.grad = mod.tensor(g)
            opt.step()
            opt.param_groups[0]["lr"] = 0.02
        return ps, opt

    fused._CACHE.clear()
    calls0, traces0 = _calls()
    p_g, opt_g = run(tracegrad)
    calls1, traces1 = _calls()
    p_t, opt_t = run(torch)
    assert (calls1 - calls0, traces1 - traces0) == (2 * 3, 2)
    for a, b in zip(p_g, p_t):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)
        assert a._version == b._version
        for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"):
            np.testing.assert_allclose(_np(opt_g.state[a][k]), _np(opt_t.state[b][k]), rtol=1e-5, atol=1e-6)


def _fused_calls(build, steps=2):
    """How many fused group updates ``steps`` steps of ``build()``'s optimizer ran."""
    opt, params = build()
    before = fused.STATS["calls"]
    for k in range(steps):
        for p, g in zip(params, GRADS[k]):
            if p.grad is None or not p.grad.requires_grad:
                p.grad = tracegrad.tensor(g).to(p.dtype)
        opt.step()
    return fused.STATS["calls"] - before


def test_unusual_steps_run_per_op():
    def differentiable():          # (parameters that do not require grad: in-place allowed)
        ps = [tracegrad.tensor(a.copy()) for a in INIT[:2]]
        return tracegrad.optim.Adam(ps, differentiable=True), ps

    def complex_params():
        ps = [tracegrad.tensor(a.astype(np.complex64), requires_grad=True) for a in INIT[:2]]
        return tracegrad.optim.Adam(ps), ps

    def shared_step():
        ps = _params(tracegrad)[:2]
        opt = tracegrad.optim.Adam(ps)
        step = tracegrad.tensor(0.0)
        for p in ps:
            opt.state[p].update(step=step, exp_avg=tracegrad.zeros_like(p), exp_avg_sq=tracegrad.zeros_like(p))
        return opt, ps

    def grad_requires_grad():
        ps = _params(tracegrad)[:2]
        for p, g in zip(ps, GRADS[0]):
            p.grad = tracegrad.tensor(g, requires_grad=True)
        return tracegrad.optim.SGD(ps, lr=0.1), ps

    def plain():
        ps = _params(tracegrad)[:2]
        return tracegrad.optim.Adam(ps), ps

    def rmsprop_centered():        # tracegrad.optim.RMSprop._fuses says why
        ps = _params(tracegrad)[:2]
        return tracegrad.optim.RMSprop(ps, centered=True), ps

    def patched_rule():            # a rule patched on the instance: its Python runs every update
        ps = _params(tracegrad)[:2]
        opt = tracegrad.optim.SGD(ps, lr=0.1)
        opt._update = lambda p, grad, state, group: type(opt)._update(opt, p, grad, state, group)
        return opt, ps

    for build in (differentiable, complex_params, shared_step, grad_requires_grad, rmsprop_centered,
                  patched_rule):
        assert _fused_calls(build) == 0, build.__name__
    with fused_optim.disabled():
        assert _fused_calls(plain) == 0
    assert _fused_calls(plain) == 2


def test_per_op_fallback_values_equal_fused():
    # a step tensor shared by two parameters (per op) against torch's per-parameter loop
    def run(mod):
        ps = _params(mod)[:2]
        opt = mod.optim.Adam(ps, lr=0.1)
        step = mod.tensor(0.0)
        for p in ps:
            opt.state[p].update(step=step, exp_avg=mod.zeros_like(p), exp_avg_sq=mod.zeros_like(p))
        for k in range(2):
            for p, g in zip(ps, GRADS[k]):
                p.grad = mod.tensor(g)
            opt.step()
        return ps
    for a, b in zip(run(tracegrad), run(torch)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


def test_view_parameters_write_through_base():
    """Parameters that are views are written through their storage: a group of two views of
    one flat buffer runs per op (a shared storage), a group whose view parameter has its
    storage to itself is fused; the values equal the per-op path's either way."""
    def run(fuse):
        base = tracegrad.tensor(np.concatenate([a.reshape(-1) for a in INIT[:2]]))
        w = base[:12].view(4, 3).requires_grad_()
        b = base[12:].requires_grad_()
        other = tracegrad.tensor(np.zeros(6, np.float32))
        v = other[1:4].requires_grad_()
        opt = tracegrad.optim.SGD([{"params": [w, b]}, {"params": [v]}], lr=0.1, momentum=0.9)
        before = fused.STATS["calls"]
        with contextlib.ExitStack() as stack:
            if not fuse:
                stack.enter_context(fused_optim.disabled())
            for k in range(2):
                for p, g in zip((w, b, v), GRADS[k][:2] + [GRADS[k][1]]):
                    p.grad = tracegrad.tensor(g)
                opt.step()
        return base, other, v, fused.STATS["calls"] - before

    base_f, other_f, v_f, calls = run(True)
    base_o, other_o, v_o, _ = run(False)
    assert calls == 2
    np.testing.assert_allclose(_np(base_f), _np(base_o), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(other_f), _np(other_o), rtol=1e-6, atol=1e-7)
    assert _np(other_f)[0] == 0 and _np(other_f)[4] == 0 and _np(other_f)[1] != 0
    assert v_f._version == v_o._version and v_f._is_view()


def test_held_values_survive_donation():
    """The program reuses the old buffers only when nothing else holds them: a clone or a
    NumPy copy taken before a step keeps its values; ``numpy()`` shares the parameter's memory
    (as torch's), so it follows the steps and is never donated under the parameter."""
    p = tracegrad.tensor(INIT[0].copy(), requires_grad=True)
    opt = tracegrad.optim.AdamW([p], lr=0.1)
    p.grad = tracegrad.tensor(GRADS[0][0])
    opt.step()
    held, arr, keep = p.detach().clone(), p.detach().numpy(), _np(p).copy()
    exp_avg = opt.state[p]["exp_avg"]
    old_avg = exp_avg.detach().clone()
    opt.step()
    opt.step()
    np.testing.assert_array_equal(_np(held), keep)
    np.testing.assert_array_equal(arr, _np(p))
    assert not np.array_equal(_np(p), keep)
    assert not np.array_equal(_np(exp_avg), _np(old_avg))


def test_state_dict_round_trip_groups_and_hooks():
    """load_state_dict then step, a group added later, frozen parameters and step hooks, as
    torch (the fused path taken throughout)."""
    def run(mod):
        ps = _params(mod)
        opt = mod.optim.Adam([ps[0]], lr=0.05, amsgrad=True)
        seen = []
        opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", float(ps[0].detach().sum()))))
        opt.register_step_post_hook(lambda o, a, k: seen.append(("post", float(ps[0].detach().sum()))))
        ps[0].grad = mod.tensor(GRADS[0][0])
        opt.step()
        opt.add_param_group({"params": [ps[1], ps[2]], "lr": 0.02})   # ps[2] stays frozen
        ps[1].grad = mod.tensor(GRADS[0][1])
        opt.step()
        sd = copy.deepcopy(opt.state_dict())
        opt2 = mod.optim.Adam([{"params": [ps[0]]}, {"params": [ps[1], ps[2]]}], lr=0.05, amsgrad=True)
        opt2.load_state_dict(sd)
        opt2.zero_grad()
        for p, g in zip(ps, GRADS[1]):
            p.grad = mod.tensor(g)
        opt2.step()
        return ps, opt2, seen

    before = fused.STATS["calls"]
    p_g, opt_g, seen_g = run(tracegrad)
    assert fused.STATS["calls"] - before == 1 + 2 + 2
    p_t, opt_t, seen_t = run(torch)
    assert [s[0] for s in seen_g] == [s[0] for s in seen_t]
    np.testing.assert_allclose([s[1] for s in seen_g], [s[1] for s in seen_t], rtol=1e-5)
    for a, b in zip(p_g, p_t):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)
        st_g, st_t = opt_g.state.get(a, {}), opt_t.state.get(b, {})
        assert list(st_g) == list(st_t)
        for k in st_t:
            np.testing.assert_allclose(_np(st_g[k]), _np(st_t[k]), rtol=1e-5, atol=1e-6)


def test_compiled_step_is_traced_not_fused():
    """Inside tracegrad.compile the step is part of the one program (no fused call), and the
    compiled result equals the fused eager one."""
    x = tracegrad.tensor(_RNG.randn(3).astype(np.float32))

    def train(compiled):
        ps = _params(tracegrad)[:2]
        opt = tracegrad.optim.Adam(ps, lr=0.05)

        def step(x):
            opt.zero_grad()
            (((ps[0] @ x) ** 2).sum() + (ps[0][:3, 0] * ps[1]).sum()).backward()
            opt.step()
        f = tracegrad.compile(step, fullgraph=True) if compiled else step
        for k in range(3):
            opt.param_groups[0]["lr"] = 0.05 / (k + 1)
            f(x)
        return ps
    before = fused.STATS["calls"]
    eager = train(False)
    assert fused.STATS["calls"] == before + 3
    comp = train(True)
    assert fused.STATS["calls"] == before + 3
    for a, b in zip(comp, eager):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-7)


def test_numpy_scalar_hyperparameters():
    """Hyper-parameters read from NumPy schedules (DINO's ``param_group["lr"] = lr_schedule[it]``
    with ``lr_schedule`` a np.linspace array) are np.float64 scalars; the fused step keys its
    programs on their signs, and a np.float64 zero weight decay must not break that."""
    steps = []
    for mod in (torch, tracegrad):
        ps = _params(mod)[:-1]
        opt = mod.optim.AdamW(ps, lr=0.01)
        for i, lr in enumerate(np.linspace(0.0, 0.02, 3)):
            opt.param_groups[0]["lr"] = lr
            opt.param_groups[0]["weight_decay"] = np.float64(0.0) if i == 1 else np.float64(0.04)
            for p, g in zip(ps, GRADS[i]):
                p.grad = mod.tensor(g)
            opt.step()
        steps.append([p.detach().numpy() for p in ps])
    for a, b in zip(*steps):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
