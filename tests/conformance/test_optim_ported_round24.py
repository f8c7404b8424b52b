"""Round 24 of PyTorch's test/optim/test_optim.py (TestOptimRenewed) and the optimizer inputs of
torch/testing/_internal/common_optimizers.py, ported: cases and input combinations not ported
before -- ``maximize`` together with weight decay / momentum / centering for every optimizer
(test_maximize's inputs), foreach=True against foreach=False on two groups with maximize and
weight decay (test_foreach_matches_forloop), the ``differentiable`` default, load_state_dict with
the parameters in another order, of another shape, of another dtype and into a fresh optimizer
(test_load_nontensor_step / test_state_dict_with_cuda_params-style casts), add_param_group's
errors and defaults, zero_grad's set_to_none on graph-carrying grads, sparse gradients
(test_rosenbrock_sparse inputs: SGD/Adagrad/SparseAdam work, the others raise), complex parameters
(test_complex), LBFGS with a closure and ``line_search_fn='strong_wolfe'``, and torch 2.13's
``torch.optim.swap_in_optimizer_params_and_state``.

Each program runs under torch 2.13 (the oracle) and tracegrad (``parity.same_outcome``): equal
parameters, state, dtypes and error classes. Parameters are float64 (3,) draws (one shape: few compiles)."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def _w(T, *shape, seed=0, dtype="float64"):
    return T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape), dtype=getattr(T, dtype), requires_grad=True)


def _loss(T, params, i):
    return sum(((q * q).sum() * (i + 1) + q.sum()) for q in params)


def _run(T, name, steps=2, groups=False, **kw):
    """``steps`` steps of ``optim.<name>`` on two float64 (3,) parameters (two groups, the second
    at half the lr, when ``groups``): the parameters after every step and the final state's keys."""
    a, b = _w(T, 3), _w(T, 3, seed=1)
    if groups:
        opt = getattr(T.optim, name)([{"params": [a]}, {"params": [b], "lr": kw.get("lr", 1e-2) / 2}], **kw)
    else:
        opt = getattr(T.optim, name)([a, b], **kw)
    out = []
    for i in range(steps):
        opt.zero_grad()
        _loss(T, [a, b], i).backward()
        opt.step()
        out.append([a.detach().clone(), b.detach().clone()])
    return out, sorted(opt.state[a])


# test_maximize's inputs (common_optimizers optim_inputs_func_*: maximize with the options it is
# listed with); each optimizer once
_MAXIMIZE = {   # the combinations the earlier rounds' maximize checks did not use
    "SGD": dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.1),
    "ASGD": dict(lr=0.05, weight_decay=0.1, t0=1),
    "NAdam": dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01, decoupled_weight_decay=True),
    "RAdam": dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
}

# test_foreach_matches_forloop on two groups with maximize and weight decay
_FOREACH = {"Adagrad": dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
            "RMSprop": dict(lr=0.01, weight_decay=0.1, centered=True, momentum=0.5),
            "NAdam": _MAXIMIZE["NAdam"], "RAdam": _MAXIMIZE["RAdam"]}


def _swapped_order(T, same_shape=True):
    """An Adam state_dict loaded into an optimizer whose parameters come in the other order:
    state goes by position (so it lands on the other parameter), then one step."""
    a, b = _w(T, 3), _w(T, 3 if same_shape else 2, seed=1)
    opt = T.optim.Adam([a, b], lr=0.1)
    (a.sum() * 2 + (b * b).sum()).backward()
    opt.step()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    opt2 = T.optim.Adam([b2, a2], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    (a2.sum() * 2 + (b2 * b2).sum()).backward()
    opt2.step()
    return [a2.detach(), b2.detach(), opt2.state[b2]["exp_avg"]]


def _load_other_dtype(T):
    """A float32 optimizer's state loaded for float64 parameters: floating state is cast to the
    parameter's dtype, ``step`` stays float32 (torch's _process_value_according_to_param_policy)."""
    a = _w(T, 3, dtype="float32")
    opt = T.optim.Adam([a], lr=0.1, amsgrad=True)
    (a * a).sum().backward()
    opt.step()
    b = _w(T, 3)
    opt2 = T.optim.Adam([b], lr=0.5)
    opt2.load_state_dict(opt.state_dict())
    st = opt2.state[b]
    out = [(k, st[k].dtype, st[k]) for k in sorted(st)]
    (b * b).sum().backward()
    opt2.step()
    return out + [b.detach(), opt2.param_groups[0]["lr"]]


def _load_into_fresh(T, name, **kw):
    """test_load_state_dict_*: a state_dict loaded into a freshly built optimizer (other
    hyper-parameters) steps exactly as the original from there on."""
    a = _w(T, 3)
    opt = getattr(T.optim, name)([a], **kw)
    for i in range(2):
        opt.zero_grad()
        _loss(T, [a], i).backward()
        opt.step()
    b = a.detach().clone().requires_grad_()
    opt2 = getattr(T.optim, name)([b], lr=0.9)
    opt2.load_state_dict(opt.state_dict())
    for o, q in ((opt, a), (opt2, b)):
        o.zero_grad()
        _loss(T, [q], 2).backward()
        o.step()
    return a.detach(), b.detach(), opt2.param_groups[0]["lr"]


def _add_group(T, group):
    a, b = _w(T, 2), _w(T, 3, seed=1)
    opt = T.optim.Adam([a], lr=0.1, betas=(0.8, 0.9))
    opt.add_param_group(group(T, a, b))
    g = opt.param_groups[1]
    return sorted(g), g["lr"], list(g["betas"]), g["amsgrad"]


def _zero_grad_graph(T, set_to_none):
    """zero_grad on a grad that carries a graph (backward(create_graph=True)): set_to_none=False
    detaches it in place (no grad_fn, requires_grad off) and zeroes it."""
    a = _w(T, 3)
    opt = T.optim.SGD([a], lr=0.1)
    (a ** 3).sum().backward(create_graph=True)
    had = a.grad.requires_grad
    opt.zero_grad(set_to_none=set_to_none)
    g = a.grad
    return had, None if g is None else (g.requires_grad, g.grad_fn is None, g)


def _sparse(T, name, steps=2, **kw):
    """nn.Embedding(sparse=True): its weight gets a sparse COO grad; ``name`` steps on it."""
    gen = np.random.RandomState(0).uniform(-1, 1, (5, 2))
    emb = T.nn.Embedding(5, 2, sparse=True)
    with T.no_grad():
        emb.weight.copy_(T.tensor(gen, dtype=T.float32))
    opt = getattr(T.optim, name)(emb.parameters(), **kw)
    idx = T.tensor([0, 2, 2, 4])
    for _ in range(steps):
        opt.zero_grad()
        (emb(idx) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach()


def _complex(T, name, steps=2, **kw):
    """test_complex: a complex parameter steps as its real view would."""
    z = np.random.RandomState(0).uniform(-1, 1, (2, 2)) + 1j * np.random.RandomState(1).uniform(-1, 1, (2, 2))
    p = T.tensor(z, dtype=T.complex128, requires_grad=True)
    opt = getattr(T.optim, name)([p], **kw)
    for i in range(steps):
        opt.zero_grad()
        ((p * p.conj()).real.sum() * (i + 1) + p.imag.sum()).backward()
        opt.step()
    return p.detach()


def _lbfgs(T, steps=2, **kw):
    """LBFGS with a closure on a quartic bowl (non-quadratic, so the line search has work; float64,
    test_rosenbrock-style): the loss each step returns, the parameters, and the counters in its
    state."""
    p = T.tensor([-1.5, 1.5, 0.5], dtype=T.float64, requires_grad=True)
    opt = T.optim.LBFGS([p], **kw)

    def closure():
        opt.zero_grad()
        loss = (p ** 4).sum() + ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    losses = [float(opt.step(closure)) for _ in range(steps)]
    st = opt.state[opt._params[0]]
    return losses, p.detach(), st["func_evals"], st["n_iter"], sorted(st)


def _lbfgs_complex(T):
    p = T.tensor([0.5 + 0.2j, -0.3 + 1.0j], dtype=T.complex128, requires_grad=True)
    opt = T.optim.LBFGS([p], lr=0.5, max_iter=4, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((p - (1 + 1j)).abs() ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return p.detach()


def _named(T, mixed=False, load_unnamed=False):
    """torch 2.13 optimizers take ``named_parameters()``: the names go to ``param_names`` in the
    param group and the state_dict; named and unnamed parameters may not be mixed."""
    m = T.nn.Linear(2, 1)
    params = list(m.named_parameters())
    if mixed:
        params = [params[0], params[1][1]]
    opt = T.optim.SGD(params, lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    if load_unnamed:
        T.optim.SGD(m.parameters(), lr=0.1).load_state_dict(sd)
    return opt.param_groups[0]["param_names"], sd["param_groups"][0].get("param_names"), sorted(opt.param_groups[0])


def _differentiable_sgd(T):
    """test_differentiable_*: with differentiable=True the update stays on the graph (a non-leaf
    parameter clone whose grad carries a graph; two momentum steps), so the result differentiates
    back to the original parameter."""
    p0 = _w(T, 3)
    p = p0.clone()
    opt = T.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1, differentiable=True)
    for _ in range(2):
        p.grad = p0 * p0 * 2
        opt.step()
    return p.detach(), T.autograd.grad((p * p).sum(), p0)[0]


def _swap_in(T, edit=None, step_first=True, n_tensors=None):
    """torch.optim.swap_in_optimizer_params_and_state (torch 2.13's test_optim.py
    TestSwapInOptimizerParamsAndState-style): inside the context the optimizer steps the swap-in
    tensors with the swap-in state and hyper-parameters (in-place state updates reach the dict);
    after it, its own parameters, groups (the same dict and params list) and state are back.
    ``edit(osd)`` spoils the swap-in state_dict for the error checks."""
    import copy
    a, b = _w(T, 3), _w(T, 3, seed=1)
    opt = T.optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.2}], lr=0.1)
    if step_first:
        _loss(T, [a, b], 0).backward()
        opt.step()
    osd = copy.deepcopy(opt.state_dict())
    osd["param_groups"][0]["lr"] = 0.5
    if edit is not None:
        edit(T, osd)
    fa, fb = _w(T, 3, seed=2), _w(T, 3, seed=3)
    tensors = {"a": fa, "b": fb}
    if n_tensors is not None:
        tensors = dict(list(tensors.items())[:n_tensors])
    group0, params0, own = opt.param_groups[0], opt.param_groups[0]["params"], {k: v.clone() for k, v in opt.state.get(a, {}).items()}
    with T.optim.swap_in_optimizer_params_and_state(opt, tensors, osd):
        inside = (opt.param_groups[0]["lr"], opt.param_groups[0]["params"][0] is fa, len(opt.state))
        opt.zero_grad()
        _loss(T, [fa, fb], 1).backward()
        opt.step()
    after = (opt.param_groups[0] is group0, opt.param_groups[0]["params"] is params0, opt.param_groups[0]["lr"],
             all(T.equal(opt.state[a][k], v) for k, v in own.items()))
    return inside, after, fa.detach(), fb.detach(), a.detach(), osd["state"][0]["step"], osd["state"][1]["exp_avg"]


def _profile_hook_step(T):
    """Optimizer.profile_hook_step on a custom optimizer's step: the step's result, and the order
    the hooks ran in (torch wraps the decorated step once more, so each hook runs twice)."""
    class Custom(T.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        @T.optim.Optimizer.profile_hook_step
        def step(self, closure=None):
            return 5
    opt = Custom([_w(T, 3)])
    seen = []
    opt.register_step_pre_hook(lambda *a: seen.append("pre"))
    opt.register_step_post_hook(lambda *a: seen.append("post"))
    return opt.step(), seen


def _adagrad_share_memory(T):
    """Adagrad.share_memory: every ``sum`` state reports shared afterwards (tracegrad warns that a
    child process gets a copy; the warning is silenced here)."""
    a, b = _w(T, 3), _w(T, 3, seed=1)
    opt = T.optim.Adagrad([a, b], lr=0.1)
    opt.share_memory()
    return [opt.state[p]["sum"].is_shared() for p in (a, b)], hasattr(T.optim.Optimizer, "OptimizerPreHook")


def _spoil(key, fn):
    return lambda T, osd: fn(T, osd[key]) if key else fn(T, osd)


CASES = {}
for _n, _kw in _MAXIMIZE.items():
    CASES[f"maximize_{_n}"] = lambda T, n=_n, kw=_kw: _run(T, n, maximize=True, **kw)
for _n, _kw in _FOREACH.items():
    CASES[f"foreach_matches_forloop_maximize_wd_{_n}"] = lambda T, n=_n, kw=_kw: [
        _run(T, n, groups=True, foreach=f, maximize=True, **kw) for f in (False, True)]
CASES.update({
    # the ``differentiable`` default (False) and flag as torch keeps it in defaults / param_groups
    "differentiable_defaults": lambda T: [
        (n, getattr(T.optim, n)([_w(T, 2)]).defaults.get("differentiable"),
         getattr(T.optim, n)([_w(T, 2)], differentiable=True).param_groups[0].get("differentiable"))
        for n in ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop")],
    # differentiable=True keeps the update on the graph: d(param after step)/d(param before)
    "differentiable_sgd_momentum_graph": _differentiable_sgd,
    # fused=True / capturable=True on CPU parameters (torch 2.13 has CPU fused kernels for
    # Adam/AdamW/SGD/Adagrad and takes capturable on CPU): the same steps as the default path
    "adam_fused_cpu": lambda T: _run(T, "Adam", lr=0.05, fused=True),
    "sgd_fused_cpu_momentum": lambda T: _run(T, "SGD", lr=0.05, momentum=0.9, fused=True),
    "adam_capturable_cpu": lambda T: _run(T, "Adam", lr=0.05, capturable=True),
    "adam_tensor_betas": lambda T: _run(T, "Adam", lr=0.05, betas=(T.tensor(0.8), T.tensor(0.9))),
    "rmsprop_fused_raises": lambda T: _run(T, "RMSprop", lr=0.05, fused=True),
    "swap_in_params_and_state": lambda T: _swap_in(T),
    "swap_in_uninitialized_state_raises": lambda T: _swap_in(T, step_first=False),
    "swap_in_group_count_raises": lambda T: _swap_in(T, _spoil("param_groups", lambda T, g: g.pop())),
    "swap_in_group_keys_raises": lambda T: _swap_in(T, _spoil("param_groups", lambda T, g: g[1].pop("amsgrad"))),
    "swap_in_params_count_raises": lambda T: _swap_in(T, _spoil("param_groups", lambda T, g: g[1]["params"].append(7))),
    "swap_in_stray_state_id_raises": lambda T: _swap_in(T, _spoil("state", lambda T, st: st.update({9: {}}))),
    "swap_in_state_not_dicts_raises": lambda T: _swap_in(T, _spoil("state", lambda T, st: st.update({0: 1.0}))),
    "swap_in_state_keyed_by_tensor_raises": lambda T: _swap_in(T, _spoil("state", lambda T, st: st.update({T.ones(1): {}}))),
    "swap_in_too_few_tensors_raises": lambda T: _swap_in(T, n_tensors=1),
    "profile_hook_step_decorated_custom_step": _profile_hook_step,
    "adagrad_share_memory": _adagrad_share_memory,
    "named_parameters_param_names": lambda T: _named(T),
    "named_and_unnamed_mixed_raises": lambda T: _named(T, mixed=True),
    "named_state_dict_into_unnamed_optimizer": lambda T: _named(T, load_unnamed=True),
    "nesterov_with_dampening_raises": lambda T: T.optim.SGD([_w(T, 3)], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    "tensor_lr_with_foreach_raises": lambda T: T.optim.Adam([_w(T, 3)], lr=T.tensor(0.01), foreach=True),
    "load_state_dict_swapped_param_order": lambda T: _swapped_order(T),
    "load_state_dict_swapped_shapes_step_raises": lambda T: _swapped_order(T, same_shape=False),
    "load_state_dict_float32_state_into_float64_params": _load_other_dtype,
    "load_state_dict_into_fresh_adam": lambda T: _load_into_fresh(T, "Adam", lr=0.05, amsgrad=True),
    "load_state_dict_into_fresh_sgd_momentum": lambda T: _load_into_fresh(T, "SGD", lr=0.05, momentum=0.9, nesterov=True),
    "load_state_dict_into_fresh_rprop": lambda T: _load_into_fresh(T, "Rprop", lr=0.05),
    "load_state_dict_into_fresh_asgd": lambda T: _load_into_fresh(T, "ASGD", lr=0.05, t0=1),
    # add_param_group: defaults fill the missing keys; the errors of its checks
    "add_param_group_fills_defaults": lambda T: _add_group(T, lambda T, a, b: {"params": b, "lr": 0.5}),
    "add_param_group_not_a_dict_raises": lambda T: _add_group(T, lambda T, a, b: [b]),
    "add_param_group_params_a_set_raises": lambda T: _add_group(T, lambda T, a, b: {"params": {b}}),
    "add_param_group_existing_param_raises": lambda T: _add_group(T, lambda T, a, b: {"params": [b, a]}),
    "add_param_group_non_leaf_raises": lambda T: _add_group(T, lambda T, a, b: {"params": [b * 2]}),
    "add_param_group_not_tensor_raises": lambda T: _add_group(T, lambda T, a, b: {"params": [b, 1.0]}),
    "zero_grad_graph_grad_set_to_none_false": lambda T: _zero_grad_graph(T, False),
    "zero_grad_graph_grad_set_to_none_true": lambda T: _zero_grad_graph(T, True),
    # sparse gradients: SGD / Adagrad / SparseAdam step on them, the dense optimizers raise
    "sparse_sgd_momentum": lambda T: _sparse(T, "SGD", lr=0.1, momentum=0.9),
    "sparse_adagrad": lambda T: _sparse(T, "Adagrad", lr=0.1),
    "sparse_adagrad_weight_decay_raises": lambda T: _sparse(T, "Adagrad", lr=0.1, weight_decay=0.1),
    "sparse_sparse_adam": lambda T: _sparse(T, "SparseAdam", lr=0.1, betas=(0.8, 0.9)),
    "sparse_adam_raises": lambda T: _sparse(T, "Adam", lr=0.1),
    "sparse_rmsprop_raises": lambda T: _sparse(T, "RMSprop", lr=0.1),
    "sparse_adam_dense_grad_raises": lambda T: _run(T, "SparseAdam", lr=0.1),
    # complex parameters
    "complex_rprop": lambda T: _complex(T, "Rprop", lr=0.05),
    "complex_adam_amsgrad_maximize": lambda T: _complex(T, "Adam", lr=0.05, amsgrad=True, maximize=True),
    "complex_asgd": lambda T: _complex(T, "ASGD", lr=0.05, t0=1),
    "complex_sparse_adam_raises": lambda T: _complex(T, "SparseAdam", lr=0.05),
    # LBFGS: closure, strong Wolfe line search, per-group options refused, complex parameters
    "lbfgs_strong_wolfe_quartic": lambda T: _lbfgs(T, steps=2, lr=1, max_iter=10, line_search_fn="strong_wolfe"),
    "lbfgs_strong_wolfe_history2_max_eval": lambda T: _lbfgs(T, steps=2, lr=1, max_iter=6, max_eval=8, history_size=2,
                                                             line_search_fn="strong_wolfe"),
    "lbfgs_no_line_search_small_lr": lambda T: _lbfgs(T, steps=2, lr=0.01, max_iter=5),
    "lbfgs_bad_line_search_raises": lambda T: _lbfgs(T, line_search_fn="armijo"),
    "lbfgs_two_groups_raises": lambda T: T.optim.LBFGS([{"params": [_w(T, 2)]}, {"params": [_w(T, 2, seed=1)]}]),
    "lbfgs_complex_strong_wolfe": _lbfgs_complex,
})


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_optim_round24(fn):
    same_outcome(fn)
