"""``tracegrad.nn.utils.prune`` against ``torch.nn.utils.prune``: the same pruning calls on
modules with the same parameters give the same masks, parameters, buffers, hooks, gradients
and error classes (``parity.both``). Random methods are checked by their invariants only
(random streams differ)."""
import importlib

import numpy as np
import pytest

import tracegrad
from parity import both


def _prune(mod):
    return importlib.import_module(mod.__name__ + ".nn.utils.prune")


def _conv(mod, seed=0):
    m = mod.nn.Conv2d(2, 4, 2)
    rs = np.random.RandomState(seed)
    with mod.no_grad():
        for p in m.parameters():
            p.copy_(mod.tensor(rs.randn(*p.shape).astype(np.float32)))
    return m


def _arr(t):
    return t.detach().numpy().round(5).tolist()


def test_iterative_pruning_container_importance_scores_and_remove():
    def program(mod, log):
        prune = _prune(mod)
        m = _conv(mod)
        scores = mod.tensor(np.arange(32, dtype=np.float32).reshape(4, 2, 2, 2))
        prune.l1_unstructured(m, "weight", amount=5, importance_scores=scores)
        prune.ln_structured(m, "weight", amount=1, n=1, dim=1)
        prune.ln_structured(m, "weight", amount=0.5, n=float("inf"), dim=-1)
        prune.custom_from_mask(m, "bias", mask=mod.tensor([1., 0., 1., 0.]))
        prune.identity(m, "bias")
        hook = [h for h in m._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
        log.append((type(hook).__name__, [type(h).__name__ for h in hook], len(hook), type(hook[0]).__name__))
        log.append((_arr(m.weight_mask), _arr(m.bias_mask), _arr(m.weight), m.weight.grad_fn.name()))
        log.append([n for n, _ in m.named_parameters()] + [n for n, _ in m.named_buffers()])
        out = m(mod.tensor(np.random.RandomState(1).randn(1, 2, 3, 3).astype(np.float32)))
        out.sum().backward()
        log.append((_arr(out), _arr(m.weight_orig.grad), _arr(m.bias_orig.grad)))
        log.append((prune.is_pruned(m), list(m.state_dict())))
        orig = m.weight_orig
        prune.remove(m, "weight")
        log.append((m.weight is orig, isinstance(m.weight, mod.nn.Parameter), _arr(m.weight),
                    [n for n, _ in m.named_parameters()], len(m._forward_pre_hooks)))
        prune.remove(m, "bias")
        log.append((prune.is_pruned(m), [n for n, _ in m.named_buffers()]))
        log.append(_arr(prune.L1Unstructured(amount=2).prune(mod.tensor([3., -1., 0.5, 2.]))))
    both(program)


def test_global_unstructured_with_importance_scores():
    def program(mod, log):
        prune = _prune(mod)
        a, b = _conv(mod, 1), mod.nn.Linear(3, 2)
        with mod.no_grad():
            b.weight.copy_(mod.tensor(np.random.RandomState(2).randn(2, 3).astype(np.float32)))
        prune.l1_unstructured(b, "weight", amount=1)     # an existing mask joins the global one
        prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured,
                                  importance_scores={(a, "weight"): a.weight.abs() * 10}, amount=0.3)
        log.append((_arr(a.weight_mask), _arr(b.weight_mask)))
        log.append([type(h).__name__ for h in b._forward_pre_hooks.values()])
    both(program)


@pytest.mark.parametrize("case", [
    lambda prune, m: prune.l1_unstructured(m, "weight", amount=-1),
    lambda prune, m: prune.l1_unstructured(m, "weight", amount=1.2),
    lambda prune, m: prune.l1_unstructured(m, "weight", amount=None),
    lambda prune, m: prune.l1_unstructured(m, "weight", amount=33),
    lambda prune, m: prune.l1_unstructured(m, "weight", amount=1, importance_scores=m.bias),
    lambda prune, m: prune.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda prune, m: prune.ln_structured(m, "weight", amount=1, n=2, dim=4),
    lambda prune, m: prune.remove(m, "bias"),
    lambda prune, m: prune.custom_from_mask(m, "bias", mask=m.bias.new_ones(3)),
    lambda prune, m: prune.global_unstructured([(m, "weight")], prune.RandomStructured, amount=1),
    lambda prune, m: prune.global_unstructured([(m, "weight")], prune.L1Unstructured, importance_scores=[1],
                                               amount=1),
])
def test_errors_match_torch_and_leave_the_module_as_it_was(case):
    def program(mod, log):
        m = _conv(mod)
        try:
            case(_prune(mod), m)
            log.append("no error")
        except Exception as e:  # noqa: BLE001 -- the class is the observation
            log.append(type(e).__name__)
        log.append(([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                    len(m._forward_pre_hooks)))
    both(program)


def test_random_methods_keep_their_counts():
    prune = tracegrad.nn.utils.prune
    m = _conv(tracegrad)
    prune.random_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == 8
    prune.random_structured(m, "weight", amount=2, dim=0)
    zero_rows = (m.weight_mask.sum(dim=(1, 2, 3)) == 0).sum()
    assert int(zero_rows) >= 2 and int((m.weight_mask == 0).sum()) >= 8 + 8
    assert isinstance(m._forward_pre_hooks[next(iter(m._forward_pre_hooks))], prune.PruningContainer)
