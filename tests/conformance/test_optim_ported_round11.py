"""Ported from PyTorch's test/optim/test_optim.py (TestOptimRenewed), round 11: cases not ported
before -- state_dict round trips through torch.save(weights_only=True), foreach vs for-loop,
complex parameters, empty and missing gradients, optimizer state_dict/load_state_dict hooks,
param group errors, closures, the decoupled variants of RAdam/NAdam. Value programs run with
torch (the oracle) and tracegrad (``parity.same_outcome``); stateful ones under the ``T``
fixture. Each test names its original. Inputs are fixed numpy draws; a few steps each."""
import io

import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def w(T, *shape, seed=0, dtype="float64"):
    return T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape), dtype=getattr(T, dtype), requires_grad=True)


def run(T, name, steps=3, dtype="float64", complex_=False, **kw):
    """``steps`` steps of ``optim.<name>`` on a tiny quadratic: the parameters after each."""
    if complex_:
        p = T.tensor(np.random.RandomState(0).uniform(-1, 1, (2, 2)) + 1j * np.random.RandomState(1).uniform(-1, 1, (2, 2)),
                     dtype=T.complex128, requires_grad=True)
        params = [p]
    else:
        params = [w(T, 2, 3, dtype=dtype), w(T, 3, seed=1, dtype=dtype)]
    opt = getattr(T.optim, name)(params, **kw)
    out = []
    for i in range(steps):
        opt.zero_grad()
        loss = sum((q * q.conj()).real.sum() * (i + 1) + q.real.sum() for q in params)
        loss.backward()
        opt.step()
        out.append([q.detach().clone() for q in params])
    return out


_OPTS = {"SGD": dict(lr=0.1, momentum=0.9, nesterov=True), "Adam": dict(lr=0.05, amsgrad=True),
         "AdamW": dict(lr=0.05, weight_decay=0.1), "Adagrad": dict(lr=0.1), "RMSprop": dict(lr=0.01, centered=True, momentum=0.5),
         "Adadelta": dict(lr=0.5), "Adamax": dict(lr=0.05), "NAdam": dict(lr=0.05), "RAdam": dict(lr=0.05),
         "ASGD": dict(lr=0.05), "Rprop": dict(lr=0.05)}

CASES = {}
for _n, _kw in _OPTS.items():
    # TestOptimRenewed.test_foreach_matches_forloop: both implementations give the same steps
    CASES[f"foreach_matches_forloop_{_n}"] = lambda T, n=_n, kw=_kw: [run(T, n, foreach=f, **kw) for f in (False, True)]
    # TestOptimRenewed.test_complex_2d: complex parameters step as their real views
    if _n not in ("Rprop",):
        CASES[f"complex_2d_{_n}"] = lambda T, n=_n, kw=_kw: run(T, n, complex_=True, **kw)
CASES.update({
    # TestOptimRenewed.test_adamax_float64-like and float32 params with float64 defaults
    "adamax_float32": lambda T: run(T, "Adamax", dtype="float32", lr=0.05),
    # test_radam_decoupled / test_nadam_decoupled (decoupled_weight_decay)
    "radam_decoupled": lambda T: run(T, "RAdam", lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "nadam_decoupled": lambda T: run(T, "NAdam", lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "nadam_momentum_decay": lambda T: run(T, "NAdam", lr=0.05, momentum_decay=0.01),
    "adam_maximize_capturable_off": lambda T: run(T, "Adam", lr=0.05, maximize=True),
    # TestOptimRenewed.test_empty_grad: a zero-size parameter steps without error
    "empty_grad": lambda T: (lambda p: (lambda o: ((p.sum() * 2).backward(), o.step(), p.shape)[2])(T.optim.Adam([p], lr=0.1)))(
        T.zeros(0, 3, requires_grad=True)),
    # test_param_groups_same_param / test_add_param_group_duplicate (a warning/ValueError)
    "same_param_in_two_groups_raises": lambda T: (lambda p: T.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(w(T, 2)),
    "add_param_group_duplicate_raises": lambda T: (lambda p: T.optim.SGD([p], lr=0.1).add_param_group({"params": [p]}))(w(T, 2)),
    "param_group_not_tensor_raises": lambda T: T.optim.SGD([{"params": [1.0]}], lr=0.1),
    "params_a_single_tensor_raises": lambda T: T.optim.SGD(w(T, 2), lr=0.1),
    "empty_param_list_raises": lambda T: T.optim.Adam([], lr=0.1),
    # test_load_state_dict_mismatch_groups: ValueError for a different number of groups/params
    "load_state_dict_mismatch_groups": lambda T: T.optim.SGD([w(T, 2)], lr=0.1).load_state_dict(
        T.optim.SGD([{"params": [w(T, 2)]}, {"params": [w(T, 2, seed=1)]}], lr=0.1).state_dict()),
    "load_state_dict_mismatch_sizes": lambda T: T.optim.SGD([w(T, 2)], lr=0.1).load_state_dict(
        T.optim.SGD([w(T, 2), w(T, 2, seed=1)], lr=0.1).state_dict()),
    # test_step_closure_return: step(closure) returns the closure's loss
    "step_closure_return": lambda T: (lambda p: (lambda o: o.step(lambda: (o.zero_grad(), (p * p).sum().backward(), (p * p).sum())[2]))(
        T.optim.Adam([p], lr=0.1)))(w(T, 3)),
    "step_without_closure_returns_none": lambda T: (lambda p: (lambda o: ((p * p).sum().backward(), o.step())[1])(T.optim.SGD([p], lr=0.1)))(w(T, 3)),
    # test_lbfgs_closure: LBFGS needs a closure
    "lbfgs_without_closure_raises": lambda T: T.optim.LBFGS([w(T, 3)]).step(),
    "lbfgs_steps": lambda T: (lambda p: (lambda o: [float(o.step(lambda: (o.zero_grad(), ((p - 0.5) ** 2).sum().backward(),
                                                                            ((p - 0.5) ** 2).sum())[2])) for _ in range(2)] + [p.detach()])(
        T.optim.LBFGS([p], lr=0.5, max_iter=3)))(w(T, 3)),
    # test_no_grad_for_all_params: parameters without .grad are skipped (state stays empty)
    "no_grad_for_all_params": lambda T: (lambda a, b: (lambda o: ((a * 2).sum().backward(), o.step(), len(o.state), b.detach())[2:])(
        T.optim.Adam([a, b], lr=0.1)))(w(T, 2), w(T, 2, seed=1)),
    # TestOptimRenewed.test_optimizer_zero_grad (set_to_none both ways)
    "zero_grad_set_to_none": lambda T: (lambda p: (lambda o: ((p * 2).sum().backward(), o.zero_grad(set_to_none=False), p.grad.clone(),
                                                            o.zero_grad(), p.grad)[2::2])(T.optim.SGD([p], lr=0.1)))(w(T, 2)),
    # test_state_dict_param_mapping: state_dict ids are positions, param_groups keep options
    "state_dict_param_mapping": lambda T: (lambda o: (lambda sd: (sd["param_groups"][0]["params"], sd["param_groups"][1]["params"],
                                                                 sd["param_groups"][1]["lr"], sorted(sd["state"])))(o.state_dict()))(
        _stepped(T)),
})


def _stepped(T):
    a, b, c = w(T, 2), w(T, 2, seed=1), w(T, 2, seed=2)
    o = T.optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    (a.sum() + c.sum()).backward()
    o.step()
    return o


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_optim_round11(fn):
    same_outcome(fn)


def test_save_load_equality_with_weights_only(T):
    # TestOptimRenewed.test_save_load_equality_with_weights_only: an optimizer state_dict saved
    # with save() loads with weights_only=True, and the loaded optimizer steps exactly as the
    # original
    p = w(T, 3)
    opt = T.optim.Adam([p], lr=0.1, amsgrad=True)
    for _ in range(2):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    buf = io.BytesIO()
    T.save(opt.state_dict(), buf)
    buf.seek(0)
    sd = T.load(buf, weights_only=True)
    p2 = p.detach().clone().requires_grad_()
    opt2 = T.optim.Adam([p2], lr=0.1, amsgrad=True)
    opt2.load_state_dict(sd)
    for o, q in ((opt, p), (opt2, p2)):
        o.zero_grad()
        (q * q).sum().backward()
        o.step()
    assert T.equal(p, p2)
    assert T.equal(opt.state[p]["step"], opt2.state[p2]["step"])


def test_optimizer_state_dict_hooks(T):
    # TestOptimRenewed.test_optimizer_state_dict_pre_hook / _post_hook
    p = w(T, 2)
    opt = T.optim.SGD([p], lr=0.1)
    seen = []

    def pre(o):
        seen.append("pre")
        o.state[p]["extra"] = 1

    def post(o, sd):
        seen.append("post")
        sd["param_groups"][0]["lr"] = 0.25
        return sd
    opt.register_state_dict_pre_hook(pre)
    opt.register_state_dict_post_hook(post)
    sd = opt.state_dict()
    assert seen == ["pre", "post"]
    assert sd["state"][0]["extra"] == 1 and sd["param_groups"][0]["lr"] == 0.25
    assert opt.param_groups[0]["lr"] == 0.1


def test_optimizer_load_state_dict_pre_hook_and_post_hook(T):
    # TestOptimRenewed.test_optimizer_load_state_dict_pre_hook_and_post_hook: the pre hook may
    # return a replacement state dict; the post hook sees the loaded optimizer
    p = w(T, 2)
    opt = T.optim.SGD([p], lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    seen = []

    def pre(o, state_dict):
        seen.append("pre")
        state_dict = dict(state_dict)
        state_dict["param_groups"] = [dict(g, lr=0.7) for g in state_dict["param_groups"]]
        return state_dict

    def post(o):
        seen.append(("post", o.param_groups[0]["lr"]))
    h1 = opt.register_load_state_dict_pre_hook(pre)
    opt.register_load_state_dict_post_hook(post)
    opt.load_state_dict(sd)
    assert seen == ["pre", ("post", 0.7)]
    h1.remove()
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.1


def test_set_default_dtype_works_with_foreach(T):
    # TestOptimRenewed.test_set_default_dtype_works_with_foreach: float64 default dtype, float64
    # params, foreach on
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        p = T.nn.Parameter(T.ones(3))
        opt = T.optim.Adam([p], lr=0.1, foreach=True)
        (p * 2).sum().backward()
        opt.step()
        assert p.dtype == T.float64 and opt.state[p]["exp_avg"].dtype == T.float64
    finally:
        T.set_default_dtype(old)
