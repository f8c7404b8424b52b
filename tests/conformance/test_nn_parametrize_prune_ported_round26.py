"""Round 26 of PyTorch's own tests, ported: cases of test/nn/test_pruning.py (TestPruningNN) and
test/nn/test_parametrization.py (TestNNParametrization) the earlier ports leave out.

Each case is a program ``fn(T)`` run once with torch 2.13 (the oracle) and once with tracegrad
(``parity.same_outcome``): the observations it returns (values, gradients, parameter/buffer
names, state_dict keys, mask dtypes, exception classes) must agree, and a case that is expected to
return must not raise in torch. Modules are filled from a fixed numpy stream, since the two
libraries' random initialisations differ. Each case names its original. The orthogonal
gradient pattern of test_orthogonal_parametrization is left to the earlier ports
(tests/nn/test_parametrize.py, test_nn_files_ported_more.py): it costs compiles, not coverage."""
import copy
import pickle
from unittest import mock

import numpy as np
import pytest

from parity import outcome, outcome_params, same_outcome
from test_nn_files_ported import _affine_params
from test_nn_files_ported_more import _rank_one

torch = pytest.importorskip("torch")


def _prune(T):
    import importlib
    return importlib.import_module(T.__name__ + ".nn.utils.prune")


def fill(T, module, seed=1):
    """Overwrite every parameter with a fixed uniform draw (both libraries see the same)."""
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rs.uniform(-1, 1, tuple(p.shape)).round(4), dtype=p.dtype))
    return module


def x_(T, *shape, seed=0):
    return T.tensor(np.random.RandomState(seed).uniform(-1, 1, shape).round(4), dtype=T.float32)


def raised(T, fn):
    """The builtin exception class ``fn()`` raises (None when it returns)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return [c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"][0]
    return None


def names(m):
    return (sorted(n for n, _ in m.named_parameters()), sorted(n for n, _ in m.named_buffers()),
            sorted(m.state_dict()))


# ==== test/nn/test_pruning.py =====================================================================
def _container_compute_mask(T):
    # TestPruningNN.test_pruning_container_compute_mask: the container combines L1 unstructured,
    # then L2 structured on dim 0, then on dim 1, each within the previous mask
    prune = _prune(T)
    c = prune.PruningContainer()
    c._tensor_name = "test"
    t = T.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=T.float32)
    default = T.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    out = []
    for meth in (prune.L1Unstructured(amount=2), prune.LnStructured(amount=1, n=2, dim=0),
                 prune.LnStructured(amount=1, n=2, dim=1)):
        meth._tensor_name = "test"
        c.add_pruning_method(meth)
        out.append(c.compute_mask(t, default))
    return out, len(c)


def _container_add_errors(T):
    # TestPruningNN.test_pruning_container: another tensor's method is a ValueError, a non-method
    # a TypeError; the container keeps its one method
    prune = _prune(T)
    c = prune.PruningContainer()
    c._tensor_name = "test"
    p = prune.L1Unstructured(amount=2)
    p._tensor_name = "test"
    c.add_pruning_method(p)
    q = prune.L1Unstructured(amount=2)
    q._tensor_name = "another_test"
    return (raised(T, lambda: c.add_pruning_method(q)), raised(T, lambda: c.add_pruning_method(10)),
            raised(T, lambda: c.add_pruning_method("ugh")), len(c), type(c[0]).__name__)


def _container_construction(T):
    # TestPruningNN.test_pruning_container (construction): one argument gives the container its
    # tensor name; a non-method argument, or adding to a container without a name, is torch's
    # AttributeError; several methods are added one by one
    prune = _prune(T)
    p, q = prune.L1Unstructured(amount=1), prune.RandomUnstructured(amount=1)
    p._tensor_name = q._tensor_name = "w"
    one = prune.PruningContainer(p)
    return (len(prune.PruningContainer()), len(one), one._tensor_name,
            raised(T, lambda: prune.PruningContainer(3)), raised(T, lambda: prune.PruningContainer((p, q))),
            raised(T, lambda: prune.PruningContainer(None)), raised(T, lambda: prune.PruningContainer(p, q)),
            raised(T, lambda: prune.PruningContainer().add_pruning_method(p)),
            raised(T, lambda: prune.PruningContainer().add_pruning_method(3)))


def _l1_importance_twice(T):
    # TestPruningNN.test_l1_unstructured_pruning_with_importance_scores: the scores choose the
    # pruned entries, and a second call respects the first mask
    prune = _prune(T)
    m = T.nn.Linear(4, 2)
    m.weight = T.nn.Parameter(T.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]], dtype=T.float32))
    scores = T.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=T.float32)
    prune.l1_unstructured(m, "weight", amount=2, importance_scores=scores)
    w1 = m.weight.detach().clone()
    prune.l1_unstructured(m, "weight", amount=2, importance_scores=scores)
    return w1, m.weight.detach(), m.weight_mask, names(m)


def _unstructured_same_magnitude(T):
    # TestPruningNN.test_unstructured_pruning_same_magnitude: ties are cut by count, not threshold
    prune = _prune(T)
    t = T.tensor(2 * np.random.RandomState(3).randint(-1, 2, (10, 7)))
    n = prune._compute_nparams_toprune(0.2, t.nelement())
    mask = prune.L1Unstructured(amount=0.2).compute_mask(t, default_mask=T.ones_like(t))
    return n, int((mask == 0).sum()), mask.dtype == t.dtype


def _random_structured_amount(T):
    # TestPruningNN.test_random_structured_pruning_amount: 0.6 of 2 columns on axis 2 = 1 column
    prune = _prune(T)
    t = T.tensor(2.0 * np.random.RandomState(4).randint(-1, 2, (5, 4, 2))).to(dtype=T.float32)
    mask = prune.RandomStructured(amount=0.6, dim=2).compute_mask(t, default_mask=T.ones_like(t))
    return sorted(int(s) for s in T.sum(mask == 0, dim=(0, 1))), mask.dtype, tuple(mask.shape)


_CONV_W = [[[[1.0, 2.0], [1.0, 2.5]], [[0.5, 1.0], [0.1, 0.1]], [[-3.0, -5.0], [0.1, -1.0]]]]


def _ln_structured_importance(T):
    # TestPruningNN.test_ln_structured_pruning_importance_scores: L2 over channels, then L1 over
    # the last axis, both by the scores rather than the weight
    prune = _prune(T)
    m = T.nn.Conv2d(3, 1, 2)
    m.weight.data = T.tensor(_CONV_W)
    scores = T.tensor([[[[10.0, 1.0], [10.0, 1.0]], [[30.0, 3.0], [30.0, 3.0]],
                        [[-20.0, -2.0], [-20.0, -2.0]]]])
    prune.ln_structured(m, "weight", amount=1, n=2, dim=1, importance_scores=scores)
    m1 = m.weight_mask.clone()
    prune.ln_structured(m, "weight", amount=1, n=1, dim=-1, importance_scores=scores)
    return m1, m.weight_mask, m.weight.detach()


def _ln_structured_inf_norm(T):
    # TestPruningNN.test_multiple_pruning_calls (its n=inf step): the max-norm slice is kept
    prune = _prune(T)
    m = T.nn.Conv2d(3, 1, 2)
    m.weight.data = T.tensor(_CONV_W)
    prune.ln_structured(m, "weight", amount=1, n=float("inf"), dim=1)
    return m.weight_mask, m.weight.detach()


def _identity_pruning(T):
    # TestPruningNN.test_identity_pruning: a mask of ones changes neither output nor gradients;
    # the gradient lands on weight_orig
    prune = _prune(T)
    m = fill(T, T.nn.Linear(5, 2))
    x = T.ones(1, 5)
    y0 = m(x)
    y0.sum().backward()
    g0 = m.weight.grad.clone()
    m.zero_grad()
    prune.identity(m, name="weight")
    y1 = m(x)
    y1.sum().backward()
    return (y0.detach(), y1.detach(), g0, m.weight_orig.grad, m.bias.grad, m.weight_mask,
            T.equal(m(x), m(x)), names(m))


def _mocked_mask(T, mask_fn, cls="RandomUnstructured"):
    prune = _prune(T)
    m = fill(T, T.nn.Linear(5, 2))
    mask = mask_fn(T, m)
    with mock.patch.object(getattr(prune, cls), "compute_mask", return_value=mask):
        prune.random_unstructured(m, name="weight", amount=0.9)
    return prune, m, mask


def _two_zeros(T, m):
    mask = T.ones_like(m.weight)
    mask[1, 0] = 0
    mask[0, 3] = 0
    return mask


def _random_pruning_grad_and_step(T):
    # TestPruningNN.test_random_pruning: the masked entries get zero gradient and an SGD step
    # leaves them as they were
    _, m, mask = _mocked_mask(T, _two_zeros)
    m(T.ones(1, 5)).sum().backward()
    g = m.weight_orig.grad.clone()
    old = m.weight_orig.detach().clone()
    for p in m.parameters():
        p.data.sub_(p.grad.data * 1.0)
    return (g, mask, m.bias.grad, old[1, 0] == m.weight_orig[1, 0], old[0, 3] == m.weight_orig[0, 3],
            m.weight_orig.detach())


def _random_pruning_forward(T):
    # TestPruningNN.test_random_pruning_forward: with a two-ones mask each output is one weight
    # plus its bias
    def two_ones(T, m):
        mask = T.zeros_like(m.weight)
        mask[1, 0] = 1
        mask[0, 3] = 1
        return mask
    _, m, _ = _mocked_mask(T, two_ones)
    y = m(T.ones(1, 5))
    return y.detach(), T.stack([m.weight_orig[0, 3] + m.bias[0], m.weight_orig[1, 0] + m.bias[1]]).detach()


def _remove_pruning_forward(T):
    # TestPruningNN.test_remove_pruning_forward: prune.remove keeps the pruned forward
    prune, m, _ = _mocked_mask(T, _two_zeros)
    x = T.ones(1, 5)
    y0 = m(x).detach()
    prune.remove(m, "weight")
    return y0, m(x).detach(), isinstance(m.weight, T.nn.Parameter), names(m)


def _pruning_id_consistency(T):
    # TestPruningNN.test_pruning_id_consistency: pruning and removing keep the Parameter object
    prune = _prune(T)
    m = T.nn.Linear(5, 2, bias=False)
    before = next(iter(m.parameters()))
    prune.random_unstructured(m, name="weight", amount=0.9)
    mid = next(iter(m.parameters()))
    prune.remove(m, "weight")
    return before is mid, before is next(iter(m.parameters()))


def _serialization_state_dict(T):
    # TestPruningNN.test_pruning_serialization_state_dict: after remove, the state_dict has the
    # plain keys and loads into an unpruned copy
    import io
    prune = _prune(T)

    def model():
        return fill(T, T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 1)))
    net = model()
    prune.l1_unstructured(module=net[0], name="weight", amount=0.9)
    keys_pruned = sorted(net.state_dict())
    w = net[0].weight.detach().clone()
    prune.remove(module=net[0], name="weight")
    keys_removed = sorted(net.state_dict())
    buf = io.BytesIO()
    T.save(net.state_dict(), buf)
    buf.seek(0)
    new = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 1))
    new.load_state_dict(T.load(buf))
    return keys_pruned, keys_removed, sorted(new.state_dict()), w, new[0].weight.detach()


def _pruned_state_dict_round_trip(T):
    # TestPruningNN.test_pruning_serialization_state_dict (a pruned state_dict, loaded into a module
    # pruned the same way: weight_orig and weight_mask come back and weight follows them)
    prune = _prune(T)
    a = fill(T, T.nn.Linear(4, 3))
    prune.l1_unstructured(a, "weight", amount=5)
    b = T.nn.Linear(4, 3)
    prune.identity(b, "weight")
    b.load_state_dict(a.state_dict())
    y = b(x_(T, 2, 4))   # the forward pre-hook recomputes weight from the loaded orig and mask
    return sorted(a.state_dict()), b.weight_mask, b.weight.detach(), a.weight.detach(), y.detach()


def _is_pruned_and_remove_errors(T):
    # TestPruningNN.test_remove_pruning_exception / test_remove_pruning (is_pruned before and
    # after; removing an unpruned name is a ValueError)
    prune = _prune(T)
    m = T.nn.Sequential(T.nn.Linear(3, 2), T.nn.Conv3d(2, 2, 2))
    out = [prune.is_pruned(m), raised(T, lambda: prune.remove(m[0], "weight"))]
    prune.random_unstructured(m[1], "bias", amount=0.5)
    out += [prune.is_pruned(m), prune.is_pruned(m[0]), prune.is_pruned(m[1]),
            raised(T, lambda: prune.remove(m[1], "weight"))]
    prune.remove(m[1], "bias")
    out += [prune.is_pruned(m), names(m)]
    return out


def _random_unstructured_counts(T):
    # TestPruningNN.test_random_pruning_sizes (the masks' sizes, dtypes and pruned counts)
    prune = _prune(T)
    out = []
    for m in (T.nn.Linear(5, 7), T.nn.Conv3d(2, 2, 2)):
        for name, amount in (("weight", 0.1), ("bias", 1)):
            prune.random_unstructured(m, name, amount=amount)
            mask = getattr(m, name + "_mask")
            out.append((tuple(mask.shape), mask.dtype, int((mask == 0).sum()),
                        tuple(getattr(m, name + "_orig").shape)))
    return out


def _global_random_counts_and_errors(T):
    # TestPruningNN.test_global_pruning (RandomUnstructured: the count over both tensors; a
    # structured method is refused)
    prune = _prune(T)
    m, n = T.nn.Linear(4, 2), T.nn.Linear(3, 1)
    prune.global_unstructured(((m, "weight"), (n, "weight")), pruning_method=prune.RandomUnstructured,
                              amount=5)
    pruned = int((m.weight_mask == 0).sum() + (n.weight_mask == 0).sum())
    p = T.nn.Linear(2, 2)
    bad = raised(T, lambda: prune.global_unstructured(((p, "weight"),), pruning_method=prune.LnStructured,
                                                      amount=1))
    return pruned, bad, prune.is_pruned(p), type(m._forward_pre_hooks[next(iter(m._forward_pre_hooks))]).__name__


def _global_l1_then_l1(T):
    # TestPruningNN.test_global_pruning + test_multiple_pruning_calls: a second global call builds
    # a PruningContainer and prunes among the survivors
    prune = _prune(T)
    m, n = T.nn.Linear(4, 2), T.nn.Linear(3, 1)
    m.weight = T.nn.Parameter(T.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]], dtype=T.float32))
    n.weight = T.nn.Parameter(T.tensor([[0, 0.1, -2]], dtype=T.float32))
    ps = ((m, "weight"), (n, "weight"))
    prune.global_unstructured(ps, pruning_method=prune.L1Unstructured, amount=4)
    prune.global_unstructured(ps, pruning_method=prune.L1Unstructured, amount=0.5)
    hook = next(iter(m._forward_pre_hooks.values()))
    return m.weight.detach(), n.weight.detach(), type(hook).__name__, len(hook), hook._tensor_name


def _custom_from_mask_module(T):
    # TestPruningNN.test_custom_from_mask_pruning (through the functional on a module: the mask is
    # taken as given, cast to the weight's dtype)
    prune = _prune(T)
    m = fill(T, T.nn.Linear(3, 2))
    prune.custom_from_mask(m, "weight", mask=T.tensor([[1, 0, 1], [0, 0, 1]]))
    prune.custom_from_mask(m, "weight", mask=T.tensor([[1, 1, 0], [1, 1, 1]]))
    hook = next(iter(m._forward_pre_hooks.values()))
    return m.weight_mask, m.weight.detach(), names(m), type(hook).__name__, [type(h).__name__ for h in hook]


def _remove_after_container(T):
    # TestPruningNN.test_multiple_pruning_calls + test_remove_pruning: removing a pruned-twice
    # tensor makes the product final and drops the hook
    prune = _prune(T)
    m = fill(T, T.nn.Conv2d(2, 2, 2))
    prune.l1_unstructured(m, "weight", amount=0.25)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    w = m.weight.detach().clone()
    prune.remove(m, "weight")
    return w, m.weight.detach(), len(m._forward_pre_hooks), names(m)


def _pruned_grad_flow(T):
    # TestPruningNN.test_random_pruning (l1 version): d loss / d weight_orig is the mask times
    # the plain gradient, and the bias gradient is untouched
    prune = _prune(T)
    m = fill(T, T.nn.Linear(3, 2))
    prune.l1_unstructured(m, "weight", amount=3)
    x = x_(T, 4, 3)
    (m(x) ** 2).sum().backward()
    return m.weight_orig.grad, m.bias.grad, m.weight_mask, m.weight_orig.requires_grad, m.weight.requires_grad


PRUNE = {
    "container_compute_mask": _container_compute_mask,
    "container_add_errors": _container_add_errors,
    "container_construction": _container_construction,
    "l1_importance_twice": _l1_importance_twice,
    "unstructured_same_magnitude": _unstructured_same_magnitude,
    "random_structured_amount": _random_structured_amount,
    "ln_structured_importance": _ln_structured_importance,
    "ln_structured_inf_norm": _ln_structured_inf_norm,
    "identity_pruning": _identity_pruning,
    "random_pruning_grad_and_step": _random_pruning_grad_and_step,
    "random_pruning_forward": _random_pruning_forward,
    "remove_pruning_forward": _remove_pruning_forward,
    "pruning_id_consistency": _pruning_id_consistency,
    "serialization_state_dict": _serialization_state_dict,
    "pruned_state_dict_round_trip": _pruned_state_dict_round_trip,
    "is_pruned_and_remove_errors": _is_pruned_and_remove_errors,
    "random_unstructured_counts": _random_unstructured_counts,
    "global_random_counts_and_errors": _global_random_counts_and_errors,
    "global_l1_then_l1": _global_l1_then_l1,
    "custom_from_mask_module": _custom_from_mask_module,
    "remove_after_container": _remove_after_container,
    "pruned_grad_flow": _pruned_grad_flow,
}


# ==== test/nn/test_parametrization.py =============================================================
def _P(T):
    return T.nn.utils.parametrize, T.nn.utils.parametrizations


def _spectral_norm_structure(T):
    # TestNNParametrization.test_new_spectral_norm (its structure half): _u/_v buffers, original a
    # parameter, weight neither; registering twice and on bias; removing bias keeps weight
    P, Ps = _P(T)
    m = Ps.spectral_norm(T.nn.Linear(5, 7))
    sn = m.parametrizations.weight[0]
    out = [tuple(sn._u.shape), tuple(sn._v.shape), sorted(sn._buffers), "original" in m.parametrizations.weight._parameters,
           "weight" in m._buffers, "weight" in m._parameters,
           m.parametrizations.weight.original.stride() == m.weight.stride()]
    m = P.remove_parametrizations(m, "weight")
    out += [hasattr(m, "parametrizations"), "weight" in m._parameters]
    m = Ps.spectral_norm(m, "weight")
    m = Ps.spectral_norm(m, "weight")
    m = Ps.spectral_norm(m, "bias")
    out += [names(m), len(m.parametrizations.weight)]
    m = P.remove_parametrizations(m, "bias")
    out += ["bias" in m._parameters, hasattr(m, "parametrizations"), "weight" in m._parameters]
    m = P.remove_parametrizations(m, "weight")
    out += [hasattr(m, "parametrizations"), P.is_parametrized(m), names(m)]
    return out


def _set_uv(T, m, seed=5):
    sn = m.parametrizations.weight[0]
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for b in (sn._u, sn._v):
            v = rs.uniform(-1, 1, tuple(b.shape))
            b.copy_(T.tensor(v / np.linalg.norm(v), dtype=b.dtype))
    return sn


def _spectral_norm_forward(T):
    # TestNNParametrization.test_new_spectral_norm_forward: one power iteration by hand, with
    # fixed u, v and weight
    Ps = _P(T)[1]
    F = T.nn.functional
    m = Ps.spectral_norm(T.nn.Linear(5, 7))
    fill(T, m)
    sn = _set_uv(T, m)
    x = x_(T, 3, 5)
    W = m.parametrizations.weight.original.detach()
    u = F.normalize(T.mv(W, sn._v), dim=0, eps=1e-12)
    v = F.normalize(T.mv(W.t(), u), dim=0, eps=1e-12)
    hand = F.linear(x, W / T.dot(u, T.mv(W, v)), m.bias.detach())
    y = m(x)
    return y.detach(), hand, sn._u, sn._v


def _spectral_norm_train_eval(T):
    # TestNNParametrization.test_new_spectral_norm (training/eval): u, v move in training, eval
    # repeats the last training output, removal in eval keeps the output, grads reach original
    P, Ps = _P(T)
    m = Ps.spectral_norm(fill(T, T.nn.Linear(3, 4)))
    sn = _set_uv(T, m)
    x = x_(T, 2, 3)
    m(x).sum().backward()
    g = m.parametrizations.weight.original.grad.clone()
    for p in m.parameters():   # one plain gradient step (the original's SGD step, lr 0.1)
        p.data.sub_(0.1 * p.grad)
    m(x)
    last = m(x).detach()
    u = sn._u.clone()
    m.eval()
    e0, e1 = m(x).detach(), m(x).detach()
    m = P.remove_parametrizations(m, "weight")
    return g, last, e0, e1, u, sn._u, m(x).detach(), names(m)


def _spectral_norm_state_dict(T):
    # TestNNParametrization.test_new_spectral_norm_load_state_dict: keys, strict/non-strict
    # loading, and reloading into a re-wrapped module repeats the outputs
    P, Ps = _P(T)
    m = Ps.spectral_norm(fill(T, T.nn.Linear(3, 5)))
    _set_uv(T, m)
    x = x_(T, 2, 3)
    m(x)
    sd = copy.deepcopy(m.state_dict())
    out = [sorted(sd)]
    bad = copy.deepcopy(sd)
    bad["nonsense"] = "nonsense"
    out.append(raised(T, lambda: m.load_state_dict(bad, strict=True)))
    for k in ("parametrizations.weight.original", "parametrizations.weight.0._u",
              "parametrizations.weight.0._v", "bias"):
        del bad[k]
        r = m.load_state_dict(bad, strict=False)
        out.append((sorted(r.missing_keys), sorted(r.unexpected_keys)))
    runs = []
    with T.no_grad():
        for _ in range(2):   # re-wrapping and reloading twice repeats eval, train, train outputs
            m = Ps.spectral_norm(P.remove_parametrizations(m, "weight"))
            m.load_state_dict(sd)
            m.eval()
            runs.append(m(x))
            m.train()
            runs += [m(x), m(x)]
    return out, runs


def _spectral_norm_dim(T):
    # TestNNParametrization.test_new_spectral_norm_dim: ConvTranspose2d normalises along dim 1
    Ps = _P(T)[1]
    m = Ps.spectral_norm(T.nn.ConvTranspose2d(3, 4, (2, 3)))
    y = m(x_(T, 1, 3, 3, 4))
    return tuple(m.parametrizations.weight[0]._u.shape), tuple(m.parametrizations.weight[0]._v.shape), tuple(y.shape)


def _spectral_norm_value(T):
    # TestNNParametrization.test_new_spectral_norm_value: a diagonal weight is divided by its
    # largest absolute entry
    Ps = _P(T)[1]
    m = T.nn.Linear(2, 2)
    with T.no_grad():
        d = T.tensor([0.3, -0.7])
        m.weight = T.nn.Parameter(T.diag(d))
        Ps.spectral_norm(m)
        return m.weight.detach(), T.diag(d / d.abs().max())


def _orthogonal_errors(T):
    # TestNNParametrization.test_orthogonal_errors: a bad map name, a vector, a wrong-shaped
    # assignment are ValueErrors; remove works after them
    P, Ps = _P(T)
    m = T.nn.Linear(3, 4)
    out = [raised(T, lambda: Ps.orthogonal(m, "weight", "foo")), raised(T, lambda: Ps.orthogonal(m, "bias"))]
    Ps.orthogonal(m, "weight")

    def assign():
        m.weight = T.randn(5, 5)
    out.append(raised(T, assign))
    P.remove_parametrizations(m, "weight")
    out += [P.is_parametrized(m), names(m)]
    return out


def _orthogonal_complex_and_assign_errors(T):
    # TestNNParametrization.test_orthogonal_parametrization: householder refuses complex weights
    # (ValueError); matrix_exp/cayley without trivialization cannot be assigned to
    # (NotImplementedError: the same branch for both maps, so only cayley runs here, the cheaper
    # one to compile); householder can
    Ps = _P(T)[1]
    out = [raised(T, lambda: Ps.orthogonal(T.nn.Linear(3, 3, dtype=T.complex64), "weight", "householder"))]
    for name in ("cayley",):
        m = Ps.orthogonal(fill(T, T.nn.Linear(3, 4)), "weight", name, use_trivialization=False)

        def assign():
            m.weight = T.eye(4, 3)
        out.append(raised(T, assign))
    m = Ps.orthogonal(fill(T, T.nn.Linear(3, 4)), "weight", "householder", use_trivialization=False)
    q = T.linalg.qr(x_(T, 4, 3)).Q
    m.weight = q
    out.append(T.allclose(m.weight, q, atol=1e-5))
    return out


def _weight_norm_state_dict_compat(T):
    # TestNNParametrization.test_weight_norm_state_dict_compat: the old weight_norm's
    # weight_g/weight_v load into the parametrized one
    Ps = _P(T)[1]
    m = T.nn.utils.weight_norm(fill(T, T.nn.Linear(4, 5)))
    old = m.state_dict()
    m2 = Ps.weight_norm(T.nn.Linear(4, 5))
    r = m2.load_state_dict(old)
    x = x_(T, 3, 4)
    return sorted(old), sorted(m2.state_dict()), m(x).detach(), m2(x).detach(), list(r.missing_keys)


def _weight_norm_pickle_deepcopy(T):
    # TestNNParametrization.test_weight_norm_pickle / test_weight_norm_deepcopy: pickling a
    # parametrized module is a RuntimeError, deepcopy gives the same outputs
    Ps = _P(T)[1]
    m = Ps.weight_norm(fill(T, T.nn.Linear(4, 5)))
    err = raised(T, lambda: pickle.dumps(m))
    m2 = copy.deepcopy(m)
    x = x_(T, 3, 4)
    return err, m(x).detach(), m2(x).detach(), names(m2)


def _weight_norm_old_api_warns_and_loads(T):
    # TestNNParametrization.test_weight_norm_state_dict_compat (the old API's FutureWarning, which
    # names the parametrization to use instead, and its weight_g/weight_v keys)
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = T.nn.utils.weight_norm(fill(T, T.nn.Linear(3, 2)))
    texts = [(x.category.__name__, "parametrizations.weight_norm" in str(x.message)) for x in w]
    return texts, sorted(m.state_dict())


def _buffer_and_many_to_one_state_dict(T):
    # TestNNParametrization.test_register_and_remove_buffer_parametrization /
    # test_errors_unparametrized_tensor_parametrization: a parametrized buffer stays a buffer
    # (original under parametrizations.<name>), a two-output right_inverse stores original0/1
    # and refuses leave_parametrized=False
    P = _P(T)[0]
    _, Double, _ = _affine_params(T)

    class Sum(T.nn.Module):
        def forward(self, x, y):
            return x + y

        def right_inverse(self, z):
            return z, T.zeros_like(z)
    m = fill(T, T.nn.Linear(2, 2))
    m.register_buffer("buf", T.tensor([1.0, -2.0]))
    P.register_parametrization(m, "buf", Double())
    P.register_parametrization(m, "weight", Sum())
    out = [sorted(m.state_dict()), sorted(n for n, _ in m.named_buffers()), m.buf,
           m.parametrizations.buf.original, m.weight.detach(),
           raised(T, lambda: P.remove_parametrizations(m, "weight", leave_parametrized=False))]
    P.remove_parametrizations(m, "buf", leave_parametrized=True)
    return out, names(m), m.buf


def _transfer_single_param(T):
    # TestNNParametrization.test_transfer_parametrizations_and_params_single_param (onto a plain
    # Linear): only the named tensor's chain moves
    P = _P(T)[0]
    m = fill(T, T.nn.Linear(3, 3))
    for name in ("weight", "bias"):
        for c in _affine_params(T):
            P.register_parametrization(m, name, c())
    to = T.nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(m, to, "weight")
    return (m.weight.detach(), to.weight.detach(), to.parametrizations.weight.original.detach(),
            "bias" in to.parametrizations, P.is_parametrized(to, "bias"), len(to.parametrizations.weight), names(to))


def _transfer_many_to_one(T):
    # TestNNParametrization.test_transfer_parametrizations_and_params_many_to_one: a two-output
    # right_inverse (rank one) moves with both originals; a later tensor transfers on its own
    P = _P(T)[0]
    RankOne, Double = _rank_one(T), _affine_params(T)[1]
    m = fill(T, T.nn.Linear(3, 3))
    P.register_parametrization(m, "weight", RankOne())
    P.register_parametrization(m, "weight", Double())
    hold = m.weight.detach().clone()
    to = T.nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(m, to)
    out = [P.is_parametrized(to, "weight"), m.weight.detach(), to.weight.detach(), hold,
           to.parametrizations.weight.original0.detach(), to.parametrizations.weight.original1.detach()]
    m.test_param = T.nn.Parameter(x_(T, 3, 3, seed=7))
    P.register_parametrization(m, "test_param", RankOne())
    out.append(hasattr(to, "test_param"))
    P.transfer_parametrizations_and_params(m, to, "test_param")
    out += [to.test_param.detach(), m.test_param.detach(), names(to)]
    return out


PARAM = {
    "spectral_norm_structure": _spectral_norm_structure,
    "spectral_norm_forward": _spectral_norm_forward,
    "spectral_norm_train_eval": _spectral_norm_train_eval,
    "spectral_norm_state_dict": _spectral_norm_state_dict,
    "spectral_norm_dim": _spectral_norm_dim,
    "spectral_norm_value": _spectral_norm_value,
    "orthogonal_errors": _orthogonal_errors,
    "orthogonal_complex_and_assign_errors": _orthogonal_complex_and_assign_errors,
    "weight_norm_state_dict_compat": _weight_norm_state_dict_compat,
    "weight_norm_pickle_deepcopy": _weight_norm_pickle_deepcopy,
    "weight_norm_old_api_warns_and_loads": _weight_norm_old_api_warns_and_loads,
    "buffer_and_many_to_one_state_dict": _buffer_and_many_to_one_state_dict,
    "transfer_single_param": _transfer_single_param,
    "transfer_many_to_one": _transfer_many_to_one,
}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params({**PRUNE, **PARAM}, XFAIL))
def test_ported_case(fn):
    # torch itself must run the program to its end: a case both libraries fail alike proves nothing
    want = outcome(torch, fn)
    assert not (isinstance(want, tuple) and want[:1] == ("raised",)), want
    same_outcome(fn)
