"""``tracegrad.utils.swap_tensors`` and the ``tracegrad.functional`` module against torch."""
import weakref

import numpy as np
import pytest

from parity import both, run_both

torch = pytest.importorskip("torch")


# pytorch/tutorials recipes_source/recipes/swap_tensors.py (its first part: t1/t2 of different
# sizes swapped and printed; a Parameter referenced by a module and an optimizer swapped in place)
def test_swap_tensors_exchanges_contents_in_place():
    def program(torch, log):
        lin = torch.nn.Linear(2, 3)
        with torch.no_grad():
            lin.weight.copy_(torch.tensor(np.arange(6.0).reshape(3, 2)))
        opt = torch.optim.SGD(lin.parameters(), lr=0.5)
        w = lin.weight
        t = torch.tensor([1.0, -1.0], requires_grad=True)
        t.tag = "plain"
        torch.utils.swap_tensors(w, t)
        log("types", [type(w).__name__, type(t).__name__])
        log("values", [w, t])
        log("flags", [w.requires_grad, t.requires_grad, w.is_leaf, getattr(w, "tag", None), hasattr(t, "tag")])
        # the module and the optimizer keep the same object, which now holds t's contents
        log("same object", [lin.weight is w, opt.param_groups[0]["params"][0] is w])
        (w * 2).sum().backward()
        log("grad", [w.grad, t.grad])
        a, b = torch.arange(2), torch.arange(3)
        print(f"Before swapping, t1: {a}, t2: {b}")
        torch.utils.swap_tensors(a, b)
        print(f"After swapping, t1: {a}, t2: {b}")
    run_both(program)


def test_swap_tensors_errors_and_poisoned_accumulator():
    def program(mod, log):
        def outcome(fn):
            try:
                fn()
                log.append("ok")
            except Exception as e:  # noqa: BLE001 -- the class is compared
                log.append(next(k for k in type(e).__mro__ if k.__module__ == "builtins").__name__)
        p = mod.nn.Parameter(mod.ones(2))
        loss = (p * 2).sum()     # an AccumulateGrad node for p is alive in this graph
        other = mod.zeros(2, requires_grad=True)
        mod.utils.swap_tensors(p, other)
        outcome(loss.backward)
        outcome(lambda: (other * 3).sum().backward())   # still the poisoned node: torch raises too
        del loss
        a, b = mod.zeros(1), mod.ones(1)
        ref = weakref.ref(a)
        outcome(lambda: mod.utils.swap_tensors(a, b))
        outcome(lambda: mod.utils.swap_tensors(b, ref()))
        outcome(lambda: mod.utils.swap_tensors(mod.ones(1), mod.nn.Parameter(mod.ones(1))))
    assert both(program)[:2] == ["RuntimeError", "RuntimeError"]


def test_swap_tensors_rejects_non_tensors():
    import tracegrad
    with pytest.raises(TypeError, match="swap_tensors"):
        tracegrad.utils.swap_tensors(tracegrad.ones(1), [1.0])


# pytorch/tutorials beginner_source/introyt/modelsyt_tutorial.py imports ``torch.functional as F``
def test_torch_functional_module():
    import tracegrad
    import tracegrad.functional as tf
    import torch.functional as ref
    assert set(ref.__all__) - set(tf.__all__) == set()
    for name in tf.__all__:
        assert getattr(tf, name) is getattr(tracegrad, name)
    assert tf.F is tracegrad.nn.functional and tracegrad.functional is tf

    def program(torch, log):
        F = torch.functional
        x = torch.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        log("einsum", F.einsum("ij,kj->ik", x, x))
        log("meshgrid", F.meshgrid(torch.arange(2), torch.arange(3), indexing="ij"))
        log("split", F.split(x, [1, 2], dim=1))
        log("unique", F.unique(torch.tensor([3, 1, 3, 2]), return_counts=True))
        log("relu", F.F.relu(x - 2))
    run_both(program)
