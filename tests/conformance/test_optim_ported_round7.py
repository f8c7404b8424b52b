"""Round 7 port of PyTorch's test/optim/test_optim.py (TestOptimRenewed) and test/test_optim.py:
param-group construction errors and warnings, the printed form, state_dict round trips (an
optimizer loaded from another's state continues identically), closures, per-group lr and
weight_decay, tensor lr, step hooks and that every optimizer goes downhill on a small problem.
Each body runs under torch 2.13 (the oracle) and tracegrad (the ``T`` fixture) on float32/64 CPU
tensors from a fixed numpy stream. Cases earlier rounds ported are not repeated."""
import copy
import importlib
import warnings

import numpy as np
import pytest

OPTIMS = {
    "SGD": dict(lr=0.1, momentum=0.9), "Adam": dict(lr=0.05), "AdamW": dict(lr=0.05),
    "Adagrad": dict(lr=0.1), "RMSprop": dict(lr=0.01), "Adadelta": dict(lr=1.0),
    "Adamax": dict(lr=0.05), "NAdam": dict(lr=0.05), "RAdam": dict(lr=0.05), "ASGD": dict(lr=0.05),
    "Rprop": dict(lr=0.01),
}


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def params(T, seed=0, dtype="float32"):
    rs = np.random.RandomState(seed)
    w = T.nn.Parameter(T.tensor(rs.standard_normal((3, 2)).astype(dtype)))
    b = T.nn.Parameter(T.tensor(rs.standard_normal(3).astype(dtype)))
    return w, b


def loss_fn(T, w, b):
    x = T.tensor(np.linspace(-1, 1, 8).reshape(4, 2).astype(str(w.dtype).split(".")[-1]))
    return ((x @ w.t() + b) ** 2).sum()


def test_duplicate_params_and_bad_params(T):
    # TestOptimRenewed / test_optim.py: duplicate parameters in one group warn; a parameter in two
    # groups, an empty parameter list, a bare tensor are errors
    p = T.nn.Parameter(T.ones(2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.optim.SGD([p, p], lr=0.1)
    assert any("duplicate parameters" in str(x.message) for x in w)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        T.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        T.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        T.optim.SGD(p, lr=0.1)


def test_optimizer_can_be_printed(T):
    # TestOptimRenewed.test_optimizer_can_be_printed: one block per group, sorted option names
    w, b = params(T)
    opt = T.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (") and "Parameter Group 0" in text and "Parameter Group 1" in text
    assert "    lr: 0.1\n" in text and "    lr: 0.5\n" in text
    lines = [ln.strip().split(":")[0] for ln in text.splitlines() if ln.startswith("    ")]
    first = lines[:len(lines) // 2]
    assert first == sorted(first)


@pytest.mark.parametrize("name", list(OPTIMS))
def test_state_dict_deterministic(T, name):
    # TestOptimRenewed.test_state_dict_deterministic / test_can_load_from_state_dict: an optimizer
    # loaded from another's (deep-copied) state dict takes the same steps, with closures
    w, b = params(T)
    opt = getattr(T.optim, name)([w, b], **OPTIMS[name])

    def closure(w=w, b=b, opt=opt):
        opt.zero_grad()
        loss = loss_fn(T, w, b)
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    w2 = T.nn.Parameter(w.detach().clone())
    b2 = T.nn.Parameter(b.detach().clone())
    opt2 = getattr(T.optim, name)([w2, b2], **OPTIMS[name])
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))

    def closure2():
        opt2.zero_grad()
        loss = loss_fn(T, w2, b2)
        loss.backward()
        return loss

    for _ in range(2):
        l1 = opt.step(closure)
        l2 = opt2.step(closure2)
        assert np.allclose(float(l1), float(l2), rtol=1e-5, atol=1e-6)
        assert np.allclose(_np(w), _np(w2), rtol=1e-5, atol=1e-6)
        assert np.allclose(_np(b), _np(b2), rtol=1e-5, atol=1e-6)
    sd1, sd2 = opt.state_dict(), opt2.state_dict()
    assert sd1["param_groups"] == sd2["param_groups"]
    assert set(sd1["state"]) == set(sd2["state"]) == {0, 1}


@pytest.mark.parametrize("name", list(OPTIMS))
def test_forloop_goes_right_direction(T, name):
    # TestOptimRenewed.test_forloop_goes_right_direction (and test_non_empty_state): a few steps
    # lower the loss, and every parameter gets optimizer state
    w, b = params(T, seed=1)
    opt = getattr(T.optim, name)([w, b], **OPTIMS[name])
    first = None
    for _ in range(4):
        opt.zero_grad()
        loss = loss_fn(T, w, b)
        first = float(loss) if first is None else first
        loss.backward()
        opt.step()
    assert float(loss_fn(T, w, b)) < first
    assert all(len(opt.state[p]) > 0 for p in (w, b))


def test_param_groups_weight_decay_and_lr(T):
    # TestOptimRenewed.test_param_groups_weight_decay / test_param_groups_lr (SGD): per-group
    # options override the defaults
    w, b = params(T)
    opt = T.optim.SGD([{"params": [w], "weight_decay": 0.5}, {"params": [b], "lr": 0.01}], lr=0.1)
    w0, b0 = _np(w), _np(b)
    opt.zero_grad()
    loss_fn(T, w, b).backward()
    gw, gb = _np(w.grad), _np(b.grad)
    opt.step()
    assert np.allclose(_np(w), w0 - 0.1 * (gw + 0.5 * w0), atol=1e-6)
    assert np.allclose(_np(b), b0 - 0.01 * gb, atol=1e-6)


def test_tensor_lr(T):
    # TestOptimRenewed.test_tensor_lr: a 0-d tensor lr steps like the float lr
    w, b = params(T, dtype="float64")
    w2, b2 = (T.nn.Parameter(p.detach().clone()) for p in (w, b))
    opt = T.optim.Adam([w, b], lr=0.05)
    opt2 = T.optim.Adam([w2, b2], lr=T.tensor(0.05))
    for _ in range(3):
        for o, (p, q) in ((opt, (w, b)), (opt2, (w2, b2))):
            o.zero_grad()
            loss_fn(T, p, q).backward()
            o.step()
    assert np.allclose(_np(w), _np(w2)) and np.allclose(_np(b), _np(b2))


def test_step_hooks(T):
    # TestOptimRenewed.test_step_pre_hook / test_step_post_hook / test_step_all_hooks: per-optimizer
    # and global hooks run around step in order: global pre, local pre, step, local post,
    # global post; removed handles stop them
    w, b = params(T)
    opt = T.optim.SGD([w, b], lr=0.1)
    log = []
    optimizer_mod = importlib.import_module(T.__name__ + ".optim.optimizer")
    h = [opt.register_step_pre_hook(lambda o, a, k: log.append("pre")),
         opt.register_step_post_hook(lambda o, a, k: log.append("post")),
         optimizer_mod.register_optimizer_step_pre_hook(lambda o, a, k: log.append("gpre")),
         optimizer_mod.register_optimizer_step_post_hook(lambda o, a, k: log.append("gpost"))]
    try:
        loss_fn(T, w, b).backward()
        opt.step()
        assert log == ["gpre", "pre", "post", "gpost"]
    finally:
        for handle in h:
            handle.remove()
    log.clear()
    opt.step()
    assert log == []


def test_closure_return_and_lbfgs(T):
    # test/optim/test_optim.py closures: step(closure) returns the closure's loss; LBFGS needs one
    w, b = params(T, dtype="float64")
    opt = T.optim.LBFGS([w, b], lr=0.5, max_iter=5)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = loss_fn(T, w, b)
        loss.backward()
        return loss

    first = float(loss_fn(T, w, b))
    ret = opt.step(closure)
    assert np.isclose(float(ret), first) and calls[0] >= 2
    assert float(loss_fn(T, w, b)) < first
    with pytest.raises(TypeError):    # LBFGS.step's closure is a required argument
        opt.step()


def test_zero_grad_set_to_none(T):
    # test/test_optim.py test_zero_grad: set_to_none=True (default) drops grads, False zeroes them
    w, b = params(T)
    opt = T.optim.SGD([w, b], lr=0.1)
    loss_fn(T, w, b).backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and float(w.grad.abs().sum()) == 0
    loss_fn(T, w, b).backward()
    opt.zero_grad()
    assert w.grad is None and b.grad is None


def test_state_dict_packs_params_as_indices(T):
    # TestOptimRenewed state_dict format: params are numbered across groups, state keyed by them,
    # and loading a state dict with a different group size is a ValueError
    w, b = params(T)
    opt = T.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01)
    loss_fn(T, w, b).backward()
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sorted(sd["state"]) == [0, 1] and int(sd["state"][0]["step"]) == 1
    other = T.optim.Adam([w, b], lr=0.01)
    with pytest.raises(ValueError, match="loaded state dict"):
        other.load_state_dict(sd)
