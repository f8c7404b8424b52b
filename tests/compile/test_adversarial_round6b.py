"""Sixth round of adversarial compiled-vs-eager programs (second file, split from
test_adversarial_round6.py for its runtime): torch.func transforms closing over parameters
inside a compiled step, errors raised by value checks and hooks after RNG draws and in-place
updates, and partial backwards (``inputs=``, ``allow_unused``) through compiled functions.
Each runs eagerly and compiled from the same state (``_harness.check_compiled``) and must
agree after every call, or break to eager (never a silently different result)."""
import numpy as np
import pytest

import tracegrad
from ._harness import change, check_compiled, data, labels, np_init


# ---- torch.func transforms closing over parameters that require grad (fixed: a compiled
# trace returned their results detached; the call now breaks to eager) ----

def func_closure_program(mod, wrap):
    net = np_init(mod.nn.Linear(3, 1), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)

    def inner_loss(w, x):
        return net(x * w).pow(2).sum()

    def step(w, x):
        opt.zero_grad()
        g = mod.func.grad(inner_loss)(w, x)            # reads net's parameters from its closure
        per_row = mod.func.vmap(lambda r: net(r).sum())(x)
        meta = inner_loss(w - 0.1 * g, x) + per_row.pow(2).mean()
        meta.backward()                                 # reaches net through g and per_row
        opt.step()
        return meta, g, g.requires_grad, per_row.requires_grad
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 3), data(mod, i + 3, 4, 3))


def test_func_transforms_closing_over_parameters():
    run = check_compiled(func_closure_program, calls=3, torch_too=True, atol=1e-5)
    assert run.snaps[-1]["out"][2:] == [True, True]


def test_func_transform_closure_under_fullgraph_names_the_line():
    net = tracegrad.nn.Linear(3, 1)
    f = tracegrad.compile(lambda w: tracegrad.func.grad(lambda v: net(v).sum())(w), fullgraph=True)
    with pytest.raises(tracegrad._dynamo.exc.Unsupported,
                       match=r"tracegrad.func transform reads a tensor that requires grad.*test_adversarial_round6b\.py:\d+"):
        for _ in range(2):
            f(tracegrad.ones(3))
    # detached, it is one program
    g = tracegrad.compile(lambda w: tracegrad.func.grad(lambda v: (v * net.weight.detach()).sum())(w))
    for _ in range(3):
        np.testing.assert_allclose(g(tracegrad.ones(3)).numpy(), net.weight.detach().numpy()[0])
    assert g.stats["traces"] == 1 and not g.stats["graph_breaks"]


# ---- errors raised by value checks and hooks after RNG draws and in-place updates: the
# compiled call leaves storages, optimizer state and the generator as eager's failing call does ----

def bad_target_after_update(mod, wrap):
    net = np_init(mod.nn.Linear(3, 4), mod)
    drop = mod.nn.Dropout(0.3)
    opt = mod.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    errs = []
    def step(x, y):
        opt.zero_grad()
        h = drop(net(x))
        with mod.no_grad():
            net.bias.add_(0.5)
        loss = mod.nn.functional.cross_entropy(h, y)
        loss.backward(); opt.step(); return loss
    f = wrap(step)
    def call(x, y):
        try: return f(x, y)
        except (IndexError, RuntimeError) as e: errs.append(type(e).__name__); return None
    def batch(i):
        y = labels(mod, i, 5, 4)
        if i == 2: y = mod.tensor([0, 1, 9, 2, 3])
        return data(mod, i, 5, 3), y
    return call, {"net": net, "opt": opt, "errs": errs}, batch

def hook_raises_after_draw(mod, wrap):
    net = np_init(mod.nn.Linear(3, 3), mod)
    drop = mod.nn.Dropout(0.5)
    opt = mod.optim.Adam(net.parameters(), lr=0.1)
    errs = []
    def fh(m, inp, out):
        if out.shape[0] == 2:
            raise ValueError("two rows")
    net.register_forward_hook(fh)
    def step(x):
        opt.zero_grad()
        z = drop(x)
        loss = net(z).pow(2).mean(); loss.backward(); opt.step(); return loss
    f = wrap(step)
    def call(x):
        try: return f(x)
        except ValueError as e: errs.append(str(e)); return None
    return call, {"net": net, "opt": opt, "errs": errs}, lambda i: (data(mod, i, 2 if i == 2 else 4, 3),)

def nan_check_error(mod, wrap):
    net = np_init(mod.nn.Linear(3, 1), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    errs = []
    def step(x, t):
        opt.zero_grad()
        p = mod.sigmoid(net(x)).squeeze(1)
        with mod.no_grad():
            net.weight.mul_(0.9)
        loss = mod.nn.functional.binary_cross_entropy(p * t, mod.ones(4))
        loss.backward(); opt.step(); return loss
    f = wrap(step)
    def call(x, t):
        try: return f(x, t)
        except RuntimeError as e: errs.append(type(e).__name__); return None
    return call, {"net": net, "opt": opt, "errs": errs}, lambda i: (data(mod, i, 4, 3), 3.0 if i == 2 else 1.0)

def embedding_index_error(mod, wrap):
    emb = np_init(mod.nn.Embedding(5, 2), mod)
    opt = mod.optim.SGD(emb.parameters(), lr=0.1)
    errs = []
    def step(idx):
        opt.zero_grad()
        loss = emb(idx).pow(2).sum(); loss.backward(); opt.step()
        return emb(idx + 1).sum()
    f = wrap(step)
    def call(idx):
        try: return f(idx)
        except IndexError as e: errs.append(type(e).__name__); return None
    return call, {"emb": emb, "opt": opt, "errs": errs}, lambda i: (mod.tensor([0, 4 if i == 2 else 3]),)


def test_bad_class_target_after_a_dropout_draw_and_an_update():
    run = check_compiled(bad_target_after_update, calls=4)
    assert run.state["errs"] == ["IndexError"]


def test_forward_hook_raising_after_a_dropout_draw():
    run = check_compiled(hook_raises_after_draw, calls=4)
    assert run.state["errs"] == ["two rows"]


def test_bce_value_check_after_an_in_place_update():
    run = check_compiled(nan_check_error, calls=4, torch_too=True)
    assert run.state["errs"] == ["RuntimeError"]


def test_embedding_index_error_after_the_update():
    run = check_compiled(embedding_index_error, calls=4, torch_too=True)
    assert run.state["errs"] == ["IndexError"]


# ---- partial backwards (inputs=, allow_unused) through and inside compiled functions ----

def outside_grads(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 3), mod.nn.Tanh(), mod.nn.Linear(3, 2)), mod)
    fwd = wrap(lambda x: net(x))
    def step(x):
        y = fwd(x)
        g1 = mod.autograd.grad(y[:, 0].sum(), [net[0].weight, net[2].bias], retain_graph=True, allow_unused=True)
        y.backward(mod.ones_like(y) * 0.5, retain_graph=True, inputs=[net[2].weight])
        y[:, 1].sum().backward(inputs=[net[0].bias])
        return y, g1
    return step, {"net": net}, lambda i: (data(mod, i, 4, 3),)

def backward_inputs_inside(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(3, 3), mod.nn.Tanh(), mod.nn.Linear(3, 2)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    def step(x):
        opt.zero_grad()
        y = net(x)
        y.pow(2).mean().backward(inputs=list(net[2].parameters()))   # only the head
        opt.step()
        return y
    return wrap(step), {"net": net, "opt": opt}, lambda i: (data(mod, i, 4, 3),)

def grad_outside_then_step(mod, wrap):
    net = np_init(mod.nn.Linear(3, 2), mod)
    opt = mod.optim.Adam(net.parameters(), lr=0.1)
    fwd = wrap(lambda x: net(x).pow(2).mean())
    upd = wrap(lambda: (opt.step(), opt.zero_grad())[0])
    def step(x):
        loss = fwd(x)
        loss.backward()
        gn = mod.nn.utils.clip_grad_norm_(net.parameters(), 0.3)
        upd()
        return loss, gn
    return step, {"net": net, "opt": opt}, lambda i: (data(mod, i, 4, 3),)


def test_compiled_forward_partial_backwards_outside():
    check_compiled(outside_grads, calls=3, torch_too=True, atol=1e-5)


def test_backward_with_inputs_inside_the_step():
    check_compiled(backward_inputs_inside, calls=3, torch_too=True)


def test_compiled_forward_and_compiled_update_with_clipping_between():
    check_compiled(grad_outside_then_step, calls=3, torch_too=True, atol=1e-5)



# ---- dropout in a compiled forward differentiated outside, called twice per step ----

def dropout_fwd_outside(mod, wrap):
    net = np_init(mod.nn.Sequential(mod.nn.Linear(4, 4), mod.nn.Dropout(0.5), mod.nn.Linear(4, 1)), mod)
    opt = mod.optim.SGD(net.parameters(), lr=0.1)
    fwd = wrap(lambda x: net(x))
    def step(x):
        opt.zero_grad()
        y = fwd(x)
        y2 = fwd(x)                      # a second draw
        loss = (y - y2).pow(2).mean() + y.mean()
        loss.backward(); opt.step()
        return loss, mod.rand(1)
    def between(i):
        if i == 1: net.eval()
        if i == 2: net.train(); mod.manual_seed(11)
    return step, {"net": net, "opt": opt, "change": between}, lambda i: (data(mod, i, 3, 4),)


def test_dropout_in_a_compiled_forward_differentiated_outside():
    check_compiled(dropout_fwd_outside, calls=4, between=change)
