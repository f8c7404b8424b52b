"""Optimizer parity with torch: parameters and state after 50 steps on a small problem,
state_dict layout and round trip, param-group validation, closures, hooks, errors."""
import ast
import copy
import pathlib

import numpy as np
import pytest

import tracegrad
from parity import inputs, loss_fn, make_params, to_np, train

torch = pytest.importorskip("torch")

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.02)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, alpha=0.9)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.1, maximize=False)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.05, maximize=True, eps=1e-6)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.05, maximize=True)),
    ("Adamax", dict(lr=0.02)),
    ("Adamax", dict(lr=0.02, betas=(0.7, 0.99), weight_decay=0.1)),
    ("NAdam", dict(lr=0.02)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.06), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1, maximize=True)),
]


def _ids(c):
    return c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[1].items())


def _compare_state(opt_t, opt_g, p_t, p_g, atol=1e-6):
    for i, (a, b) in enumerate(zip(p_t, p_g)):
        st_t, st_g = opt_t.state.get(a, {}), opt_g.state.get(b, {})
        assert sorted(st_t) == sorted(st_g), f"param {i}: state keys differ"
        for k in st_t:
            vt, vg = st_t[k], st_g[k]
            if vt is None:
                assert vg is None
                continue
            assert isinstance(vg, tracegrad.Tensor)
            assert str(vt.dtype).split(".")[-1] == str(vg.dtype).split(".")[-1], k
            assert tuple(vt.shape) == tuple(vg.shape), k
            ref = vt.detach().numpy()
            # float32 rounding (XLA vs ATen kernels) accumulates over 50 steps: scale atol by
            # the state's magnitude (momentum buffers of normalised steps reach ~5); how much it
            # accumulates depends on the CPU (XLA's AVX-512 kernels round differently from its
            # AVX2 ones: centered RMSprop's buffers differ by 5e-6 after 50 steps on one)
            scale = max(1.0, float(np.abs(ref).max())) if ref.size else 1.0
            np.testing.assert_allclose(to_np(vg), ref, rtol=1e-5, atol=atol * 5 * scale, err_msg=k)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_parity_50_steps(cfg):
    name, kw = cfg
    p_t, opt_t = train(torch, name, kw)
    p_g, opt_g = train(tracegrad, name, kw)
    for a, b in zip(p_t, p_g):
        np.testing.assert_allclose(to_np(b), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    # the unused parameter never had a gradient: untouched and without state
    np.testing.assert_array_equal(to_np(p_g[2]), to_np(make_params(tracegrad)[2]))
    assert (p_t[2] in opt_t.state) == (p_g[2] in opt_g.state)
    _compare_state(opt_t, opt_g, p_t, p_g)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.3)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Rprop", dict(lr=0.02)),
                                     ("ASGD", dict(lr=0.05, t0=3, lambd=0.01))])
def test_parity_float64_and_groups(name, kw):
    p_t, opt_t = train(torch, name, kw, steps=30, groups=True, dtype="float64")
    p_g, opt_g = train(tracegrad, name, kw, steps=30, groups=True, dtype="float64")
    for a, b in zip(p_t, p_g):
        assert b.dtype is tracegrad.float64
        np.testing.assert_allclose(to_np(b), a.detach().numpy(), rtol=1e-10, atol=1e-12)
    _compare_state(opt_t, opt_g, p_t, p_g, atol=1e-12)
    assert [g["lr"] for g in opt_t.param_groups] == [g["lr"] for g in opt_g.param_groups]


@pytest.mark.parametrize("seed", [3, 11, 42])
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.05)),
                                     ("Adam", dict(lr=0.03, amsgrad=True, weight_decay=0.02)),
                                     ("AdamW", dict(lr=0.03, betas=(0.5, 0.9))),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.2)),
                                     ("Adagrad", dict(lr=0.2, lr_decay=0.02, initial_accumulator_value=0.5))])
def test_parity_random_problems(name, kw, seed):
    p_t, opt_t = train(torch, name, kw, seed=seed)
    p_g, opt_g = train(tracegrad, name, kw, seed=seed)
    for a, b in zip(p_t, p_g):
        np.testing.assert_allclose(to_np(b), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    _compare_state(opt_t, opt_g, p_t, p_g)


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad"])
def test_complex_params_step_as_two_reals_like_torch(name):
    # torch runs these rules on view_as_real views; state stays complex in the state dict
    out = {}
    for T in (torch, tracegrad):
        p = T.tensor([1.0 + 1.0j, -0.5 + 2.0j], dtype=T.complex64, requires_grad=True)
        opt = getattr(T.optim, name)([p], lr=0.1)
        for g in ([0.5 + 0.0j, -1.0 + 0.25j], [0.1 - 0.3j, 0.2 + 0.2j]):
            p.grad = T.tensor(g, dtype=T.complex64)
            opt.step()
        out[T] = p.detach().numpy(), [v.detach().numpy() for v in opt.state[p].values()]
    np.testing.assert_allclose(out[tracegrad][0], out[torch][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(out[tracegrad][1], out[torch][1]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_state_step_is_float32_tensor():
    _, opt = train(tracegrad, "Adam", dict(lr=0.01), steps=3)
    st = next(iter(opt.state.values()))
    assert isinstance(st["step"], tracegrad.Tensor) and st["step"].dtype is tracegrad.float32
    assert st["step"].shape == () and st["step"].item() == 3.0


def _normalise(v):
    if isinstance(v, (torch.Tensor, tracegrad.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape))
    if isinstance(v, dict):
        return {k: _normalise(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_normalise(x) for x in v)
    return v


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
                                     ("RMSprop", dict(lr=0.01, centered=True, momentum=0.1)),
                                     ("Adagrad", dict(lr=0.1))])
def test_state_dict_layout_matches_torch(name, kw):
    _, opt_t = train(torch, name, kw, steps=2, groups=True)
    _, opt_g = train(tracegrad, name, kw, steps=2, groups=True)
    sd_t, sd_g = opt_t.state_dict(), opt_g.state_dict()
    assert list(sd_t) == list(sd_g) == ["state", "param_groups"]
    assert _normalise(sd_t["param_groups"]) == _normalise(sd_g["param_groups"])
    assert [list(g) for g in sd_t["param_groups"]] == [list(g) for g in sd_g["param_groups"]]
    assert _normalise(sd_t["state"]) == _normalise(sd_g["state"])
    for k in sd_t["state"]:
        assert list(sd_t["state"][k]) == list(sd_g["state"][k])


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True)), ("Adagrad", dict(lr=0.1))])
def test_state_dict_round_trip_continues_identically(name, kw):
    def program(mod):
        params = make_params(mod)
        x, y = inputs(mod)
        opt = getattr(mod.optim, name)(params, **kw)

        def one(o, ps):
            o.zero_grad()
            loss_fn(mod, ps, x, y).backward()
            o.step()
        for _ in range(5):
            one(opt, params)
        # state_dict() returns the optimizer's own state tensors (as torch): copy them, or
        # both optimizers would update the same buffers
        sd = copy.deepcopy(opt.state_dict())
        # a fresh optimizer over copies of the parameters, loaded from the state dict
        params2 = [p.detach().clone().requires_grad_(True) for p in params]
        opt2 = getattr(mod.optim, name)(params2, lr=123.0)
        opt2.load_state_dict(sd)
        assert opt2.param_groups[0]["lr"] == kw["lr"]
        assert opt2.param_groups[0]["params"][0] is params2[0]
        for _ in range(5):
            one(opt, params)
            one(opt2, params2)
        return params, params2
    (t1, t2), (g1, g2) = program(torch), program(tracegrad)
    for a, b, c in zip(t1, g1, g2):
        np.testing.assert_allclose(to_np(b), a.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(to_np(c), to_np(b))


def test_load_state_dict_casts_floating_state_to_param_dtype_but_not_step():
    for mod in (torch, tracegrad):
        p = mod.tensor([1.0, 2.0], requires_grad=True)
        opt = mod.optim.Adam([p], lr=0.1)
        p.grad = mod.tensor([0.5, -0.5])
        opt.step()
        sd = opt.state_dict()
        p64 = mod.tensor([1.0, 2.0], dtype=mod.float64, requires_grad=True)
        opt64 = mod.optim.Adam([p64], lr=0.1)
        opt64.load_state_dict(sd)
        st = opt64.state[p64]
        assert st["exp_avg"].dtype is mod.float64
        assert st["step"].dtype is mod.float32


@pytest.mark.parametrize("case", ["groups", "size"])
def test_load_state_dict_validation(case):
    def program(mod):
        a, b = mod.ones(2, requires_grad=True), mod.ones(3, requires_grad=True)
        opt = mod.optim.SGD([a, b], lr=0.1)
        other = mod.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1) if case == "groups" \
            else mod.optim.SGD([a], lr=0.1)
        with pytest.raises(ValueError) as e:
            other.load_state_dict(opt.state_dict())
        return str(e.value)
    assert program(torch) == program(tracegrad)


def test_param_group_errors_match_torch():
    def program(mod):
        out = []
        a = mod.ones(2, requires_grad=True)
        for bad in [lambda: mod.optim.SGD(a, lr=0.1),                          # a Tensor
                    lambda: mod.optim.SGD([], lr=0.1),                         # empty
                    lambda: mod.optim.SGD([a, 3], lr=0.1),                     # non-tensor
                    lambda: mod.optim.SGD([a * 2], lr=0.1),                    # non-leaf
                    lambda: mod.optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1),
                    lambda: mod.optim.SGD([{"params": {a}}], lr=0.1),          # set
                    lambda: mod.optim.SGD([a], lr=-1.0),
                    lambda: mod.optim.SGD([a], lr=0.1, momentum=-0.5),
                    lambda: mod.optim.SGD([a], lr=0.1, weight_decay=-1),
                    lambda: mod.optim.SGD([a], lr=0.1, nesterov=True),
                    lambda: mod.optim.Adam([a], lr=-0.1),
                    lambda: mod.optim.Adam([a], betas=(1.0, 0.9)),
                    lambda: mod.optim.Adam([a], betas=(0.9, -0.1)),
                    lambda: mod.optim.Adam([a], eps=-1.0),
                    lambda: mod.optim.AdamW([a], weight_decay=-1.0),
                    lambda: mod.optim.RMSprop([a], alpha=-1.0),
                    lambda: mod.optim.RMSprop([a], momentum=-1.0),
                    lambda: mod.optim.Adagrad([a], lr_decay=-1.0),
                    lambda: mod.optim.Adagrad([a], initial_accumulator_value=-1.0),
                    lambda: mod.optim.Adadelta([a], rho=1.5),
                    lambda: mod.optim.Adamax([a], betas=(0.9, 1.0)),
                    lambda: mod.optim.NAdam([a], momentum_decay=-1.0),
                    lambda: mod.optim.RAdam([a], eps=-1.0),
                    lambda: mod.optim.Rprop([a], lr=-1.0),
                    lambda: mod.optim.Rprop([a], etas=(1.5, 1.2)),
                    lambda: mod.optim.Rprop([a], etas=(0.5, 0.9)),
                    lambda: mod.optim.ASGD([a], lr=-1.0),
                    lambda: mod.optim.ASGD([a], weight_decay=-1.0)]:
            try:
                bad()
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e).split(",")[0][:40]))
        return out
    got_t, got_g = program(torch), program(tracegrad)
    assert [x and x[0] for x in got_t] == [x and x[0] for x in got_g]
    assert all(x is not None for x in got_g)
    # messages for the value checks are torch's own
    assert got_t[6:] == got_g[6:]


def test_duplicate_param_in_group_warns():
    a = tracegrad.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        tracegrad.optim.SGD([a, a], lr=0.1)


def test_add_param_group_defaults_and_keys_match_torch():
    def program(mod):
        a, b = mod.ones(2, requires_grad=True), mod.ones(3, requires_grad=True)
        opt = mod.optim.Adam([a], lr=0.1)
        opt.add_param_group({"params": b, "lr": 0.01})
        with pytest.raises(ValueError):
            opt.add_param_group({"params": [a]})
        with pytest.raises(TypeError):
            opt.add_param_group([b])
        return [sorted(k for k in g if k != "params") for g in opt.param_groups], \
            [g["lr"] for g in opt.param_groups], [len(g["params"]) for g in opt.param_groups]
    assert program(torch) == program(tracegrad)


def test_zero_grad_modes():
    def program(mod):
        a = mod.ones(2, requires_grad=True)
        opt = mod.optim.SGD([a], lr=0.1)
        (a * 3).sum().backward()
        opt.zero_grad(set_to_none=False)
        r = [a.grad.tolist(), a.grad.requires_grad]
        opt.zero_grad()
        r.append(a.grad is None)
        return r
    assert program(torch) == program(tracegrad)


def test_closure_runs_under_enable_grad_and_returns_loss():
    def program(mod):
        params = make_params(mod)
        x, y = inputs(mod)
        opt = mod.optim.SGD(params, lr=0.1, momentum=0.5)
        seen = []

        def closure():
            opt.zero_grad()
            seen.append(mod.is_grad_enabled())
            loss = loss_fn(mod, params, x, y)
            loss.backward()
            return loss
        losses = []
        with mod.no_grad():
            for _ in range(3):
                losses.append(opt.step(closure).item())
        return seen, losses, to_np(params[0])
    (s1, l1, w1), (s2, l2, w2) = program(torch), program(tracegrad)
    assert s1 == s2 == [True] * 3
    np.testing.assert_allclose(l2, l1, rtol=1e-6)
    np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)


def test_step_records_no_graph():
    p = tracegrad.ones(3, requires_grad=True)
    opt = tracegrad.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert opt.state[p]["exp_avg"].grad_fn is None


def test_step_hooks_order_and_removal():
    def program(mod):
        from importlib import import_module
        optmod = import_module(mod.__name__ + ".optim.optimizer")
        log = []
        a = mod.ones(2, requires_grad=True)
        a.grad = mod.ones(2)
        opt = mod.optim.SGD([a], lr=0.1)
        h1 = opt.register_step_pre_hook(lambda o, args, kw: log.append(("pre", type(o).__name__, len(args))))
        h2 = opt.register_step_post_hook(lambda o, args, kw: log.append(("post",)))
        g1 = optmod.register_optimizer_step_pre_hook(lambda o, args, kw: log.append(("gpre",)))
        g2 = optmod.register_optimizer_step_post_hook(lambda o, args, kw: log.append(("gpost",)))
        try:
            opt.step()
            h1.remove()
            g2.remove()
            opt.step()
        finally:
            for h in (h1, h2, g1, g2):
                h.remove()
        return log, a.tolist()
    assert program(torch) == program(tracegrad)


def test_state_dict_hooks_and_repr():
    def program(mod):
        a = mod.ones(2, requires_grad=True)
        opt = mod.optim.SGD([a], lr=0.1, momentum=0.9)
        log = []
        opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
        opt.register_state_dict_post_hook(lambda o, sd: log.append(("post", sorted(sd))))
        opt.register_load_state_dict_pre_hook(lambda o, sd: log.append("lpre"))
        opt.register_load_state_dict_post_hook(lambda o: log.append("lpost"))
        opt.load_state_dict(opt.state_dict())
        return log, repr(opt)
    assert program(torch) == program(tracegrad)


def test_optim_uses_public_api_only():
    """No jax, and from tracegrad only the public names (``from .. import``), utils.hooks and
    the warning helper that names the user's line whatever layer the call came through
    (``_ops/warn.py``; nn's modules use it too)."""
    root = pathlib.Path(tracegrad.__file__).parent / "optim"
    for f in root.glob("*.py"):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
                assert not any(n == "jax" or n.startswith("jax.") for n in names), f"{f.name} imports jax"
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                assert not (mod == "jax" or mod.startswith("jax.")), f"{f.name} imports jax"
                if node.level == 2:
                    assert mod in ("", "utils.hooks", "_ops.warn"), f"{f.name}: from ..{mod} is not public API"
                    if mod == "":
                        for a in node.names:
                            assert not a.name.startswith("_"), f"{f.name}: private name {a.name}"
                assert node.level in (0, 1, 2)


@pytest.mark.parametrize("name,kw", [("SGD", dict(momentum=0.9)), ("Adam", dict(weight_decay=0.1)),
                                     ("AdamW", dict()), ("RMSprop", dict(momentum=0.5)),
                                     ("Adagrad", dict(lr_decay=0.1))])
def test_tensor_lr_matches_torch(name, kw):
    def program(mod):
        params = make_params(mod)
        x, y = inputs(mod)
        opt = getattr(mod.optim, name)(params, lr=mod.tensor(0.02), **kw)
        for _ in range(10):
            opt.zero_grad()
            loss_fn(mod, params, x, y).backward()
            opt.step()
        return [to_np(p) for p in params]
    for a, b in zip(program(torch), program(tracegrad)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for mod in (torch, tracegrad):
        with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
            getattr(mod.optim, name)(make_params(mod), lr=mod.tensor([0.1, 0.2]))


def test_named_parameters_and_state_dict_aliasing_like_torch():
    def program(mod):
        a, b = mod.ones(2, requires_grad=True), mod.ones(3, requires_grad=True)
        opt = mod.optim.SGD([("a", a), ("b", b)], lr=0.1, momentum=0.9)
        a.grad, b.grad = mod.ones(2), mod.ones(3)
        opt.step()
        sd = opt.state_dict()
        shared = sd["state"][0]["momentum_buffer"] is opt.state[a]["momentum_buffer"]
        with pytest.raises(ValueError):
            opt.add_param_group({"params": [mod.ones(1, requires_grad=True)]})
        return sd["param_groups"][0]["param_names"], shared, sorted(sd["param_groups"][0])
    assert program(torch) == program(tracegrad)


def test_state_dict_survives_save_load(tmp_path):
    params, opt = train(tracegrad, "Adam", dict(lr=0.01, amsgrad=True), steps=3)
    f = str(tmp_path / "opt.pt")
    tracegrad.save(opt.state_dict(), f)
    sd = tracegrad.load(f)
    opt2 = tracegrad.optim.Adam([p.detach().clone().requires_grad_(True) for p in params], lr=1.0)
    opt2.load_state_dict(sd)
    a, b = opt.state_dict(), opt2.state_dict()
    assert a["param_groups"] == b["param_groups"]
    for k in a["state"]:
        for name, v in a["state"][k].items():
            np.testing.assert_array_equal(to_np(b["state"][k][name]), to_np(v))


@pytest.mark.parametrize("define", ["nothing", "update"])
def test_base_step_needs_a_subclass_rule(define):
    """The base class's step is the built-in optimizers' shared loop; a subclass with neither
    its own step nor an _update raises NotImplementedError, as torch's base class does."""
    outs = []
    for mod in (torch, tracegrad):
        p = mod.ones(2, requires_grad=True)
        p.grad = mod.ones(2)
        body = {}
        if define == "update" and mod is tracegrad:
            body["_update"] = lambda self, p, grad, state, group: p.sub_(grad * group["lr"])
        if define == "update" and mod is torch:   # torch: the subclass writes step itself
            def step(self, closure=None):
                for g in self.param_groups:
                    for q in g["params"]:
                        q.data.sub_(q.grad * g["lr"])
            body["step"] = step
        cls = type("Mine", (mod.optim.Optimizer,), body)
        opt = cls([p], {"lr": 0.5})
        if define == "nothing":
            with pytest.raises(NotImplementedError):
                opt.step()
        else:
            opt.step()
            assert p.grad_fn is None and p.is_leaf
        outs.append(to_np(p))
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_group_scalars_mixed_dtypes_and_shared_step(name):
    """Adam's bias corrections are computed per group as one vector (NOTE [group scalars]):
    a group mixing float32 and float64 parameters, and a step tensor shared by two parameters
    through load_state_dict (each must see the count after its own increment, as torch's
    per-parameter loop), give torch's values and state."""
    def program(mod, share):
        rng = np.random.RandomState(0)
        ps = [mod.tensor(rng.randn(*s), dtype=dt, requires_grad=True)
              for s, dt in (((3, 2), mod.float32), ((4,), mod.float64), ((2,), mod.float32))]
        opt = getattr(mod.optim, name)(ps, lr=0.05, betas=(0.8, 0.9), amsgrad=share)

        def one():
            opt.zero_grad()
            sum(((p.double() if p.dtype is mod.float32 else p) ** 2).sum() * (i + 1)
                for i, p in enumerate(ps)).backward()
            opt.step()
        for _ in range(3):
            one()
        if share:
            sd = opt.state_dict()
            sd["state"][2]["step"] = sd["state"][0]["step"]
            opt.load_state_dict(sd)
            assert opt.state[ps[2]]["step"] is opt.state[ps[0]]["step"]
        for _ in range(4):
            one()
        return ps, opt
    for share in (False, True):
        p_t, opt_t = program(torch, share)
        p_g, opt_g = program(tracegrad, share)
        for a, b in zip(p_t, p_g):
            assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
            np.testing.assert_allclose(to_np(b), a.detach().numpy(), rtol=1e-6, atol=1e-7)
        _compare_state(opt_t, opt_g, p_t, p_g)
        assert [float(opt_g.state[p]["step"]) for p in p_g] == [float(opt_t.state[p]["step"]) for p in p_t]


def test_optimizer_module_annotation_aliases():
    """User optimizers annotate with torch.optim.optimizer's aliases (``params: ParamsT``,
    ``-> StateDict``) and import ``required``; the names exist, and a subclass annotated with them
    builds and resolves its hints under both libraries."""
    import importlib
    import typing
    for mod in (torch, tracegrad):
        o = importlib.import_module(mod.__name__ + ".optim.optimizer")   # from torch.optim.optimizer import ...
        for name in ("ParamsT", "StateDict", "Args", "Kwargs", "GlobalOptimizerPreHook",
                     "GlobalOptimizerPostHook", "required", "Optimizer"):
            assert hasattr(o, name), (mod.__name__, name)

        class Opt(o.Optimizer):
            def __init__(self, params: o.ParamsT, lr: float = o.required) -> None:
                super().__init__(params, {"lr": lr})

            def state_dict(self) -> o.StateDict:
                return super().state_dict()

        opt = Opt([mod.nn.Parameter(mod.ones(2))], lr=0.5)
        assert sorted(typing.get_type_hints(Opt.__init__)) == ["lr", "params", "return"]
        assert opt.state_dict()["param_groups"][0]["lr"] == 0.5
        assert repr(o.required) == "<required parameter>"
