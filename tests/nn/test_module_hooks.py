"""Module hooks: firing order, arguments and replacement semantics, compared with torch."""
import numpy as np
import pytest

import tracegrad
from parity import both, get_torch


def _desc(v):
    if v is None:
        return None
    if isinstance(v, tuple):
        return tuple(_desc(e) for e in v)
    if hasattr(v, "shape"):
        return ("T", tuple(v.shape), np.round(v.detach().numpy().astype(np.float64), 4).tolist())
    return repr(v)


def _lin(mod, i, o, seed):
    m = mod.nn.Linear(i, o)
    r = np.random.RandomState(seed)
    with mod.no_grad():
        m.weight.copy_(mod.tensor(r.randn(o, i).astype(np.float32)))
        m.bias.copy_(mod.tensor(r.randn(o).astype(np.float32)))
    return m


def test_forward_hook_order_and_replacement():
    def program(mod, log):
        nn = mod.nn
        m = _lin(mod, 3, 2, 0)
        x = mod.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        hs = []
        hs.append(nn.modules.module.register_module_forward_pre_hook(lambda m_, a: log.append(("gpre", _desc(a)))))
        hs.append(nn.modules.module.register_module_forward_hook(lambda m_, a, o: log.append(("gpost", _desc(o)))))
        hs.append(m.register_forward_pre_hook(lambda m_, a: log.append("pre1")))
        hs.append(m.register_forward_pre_hook(lambda m_, a: (a[0] * 2,)))
        hs.append(m.register_forward_pre_hook(lambda m_, a: log.append(("pre-first", _desc(a))), prepend=True))
        hs.append(m.register_forward_pre_hook(lambda m_, a, k: log.append(("prekw", sorted(k))) , with_kwargs=True))
        hs.append(m.register_forward_hook(lambda m_, a, o: o + 1))
        hs.append(m.register_forward_hook(lambda m_, a, o: log.append(("post", _desc(a), _desc(o)))))
        hs.append(m.register_forward_hook(lambda m_, a, k, o: log.append(("postkw", sorted(k))), with_kwargs=True))
        hs.append(m.register_forward_hook(lambda m_, a, o: log.append("post-first"), prepend=True))
        y = m(x)
        log.append(("y", _desc(y), type(y.grad_fn).__name__))
        for h in hs:
            h.remove()
        log.append(("after remove", _desc(m(x))))
    both(program)


def test_forward_pre_hook_kwargs_replacement_and_errors():
    def program(mod, log):
        nn = mod.nn

        class M(nn.Module):
            def forward(self, x, scale=1.0):
                return x * scale
        m = M()
        m.register_forward_pre_hook(lambda m_, a, k: (a, {"scale": 3.0}), with_kwargs=True)
        log.append(_desc(m(mod.ones(2))))
        m2 = M()
        m2.register_forward_pre_hook(lambda m_, a, k: 5, with_kwargs=True)
        try:
            m2(mod.ones(2))
        except RuntimeError:
            log.append("RuntimeError")
        m3 = M()
        m3.register_forward_pre_hook(lambda m_, a: mod.ones(3))  # non-tuple -> wrapped
        log.append(_desc(m3(mod.ones(2))))
    both(program)


def test_always_call_forward_hook():
    def program(mod, log):
        nn = mod.nn

        class Bad(nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        m = Bad()
        m.register_forward_hook(lambda m_, a, o: log.append(("always", o)), always_call=True)
        m.register_forward_hook(lambda m_, a, o: log.append("never"))
        try:
            m(mod.ones(1))
        except ValueError as e:
            log.append(str(e))
    both(program)


def test_full_backward_hooks_order_and_args():
    def program(mod, log):
        nn = mod.nn
        mm = nn.modules.module
        a = _lin(mod, 3, 4, 1)
        b = _lin(mod, 4, 2, 2)
        seq = nn.Sequential(a, nn.Tanh(), b)
        hs = [
            mm.register_module_full_backward_pre_hook(lambda m, go: log.append(("gbpre", type(m).__name__, _desc(go)))),
            mm.register_module_full_backward_hook(lambda m, gi, go: log.append(("gb", type(m).__name__, _desc(gi)))),
            a.register_full_backward_pre_hook(lambda m, go: log.append(("a-pre", _desc(go)))),
            a.register_full_backward_hook(lambda m, gi, go: log.append(("a", _desc(gi), _desc(go)))),
            b.register_full_backward_hook(lambda m, gi, go: log.append(("b", _desc(gi), _desc(go)))),
            b.register_full_backward_pre_hook(lambda m, go: log.append(("b-pre", _desc(go)))),
            seq.register_full_backward_hook(lambda m, gi, go: log.append(("seq", _desc(gi), _desc(go)))),
        ]
        x = mod.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        y = seq(x)
        log.append(type(y.grad_fn).__name__)
        y.sum().backward()
        log.append(("x.grad", _desc(x.grad)))
        for h in hs:
            h.remove()
    both(program)


def test_backward_hook_replaces_grad_input_and_pre_hook_replaces_grad_output():
    def program(mod, log):
        a = _lin(mod, 3, 2, 3)
        a.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
        a.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0 + 1,))
        a.register_full_backward_hook(lambda m, gi, go: log.append(("second sees", _desc(gi))))
        x = mod.tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
        a(x).sum().backward()
        log.append(("x", _desc(x.grad), "w", _desc(a.weight.grad)))
    both(program)


def test_backward_hook_when_input_does_not_require_grad():
    def program(mod, log):
        a = _lin(mod, 3, 2, 4)
        a.register_full_backward_hook(lambda m, gi, go: log.append(("hook", _desc(gi), _desc(go))))
        x = mod.tensor(np.ones((1, 3), dtype=np.float32))
        a(x).sum().backward()
        log.append(_desc(a.bias.grad))
    both(program)


def test_hook_handles_and_legacy_mixing_error():
    torch = get_torch()
    for mod in (torch, tracegrad):
        m = mod.nn.Linear(2, 2)
        h = m.register_forward_hook(lambda *a: None)
        assert len(m._forward_hooks) == 1
        h.remove()
        h.remove()
        assert len(m._forward_hooks) == 0
        with m.register_forward_pre_hook(lambda *a: None):
            assert len(m._forward_pre_hooks) == 1
        assert len(m._forward_pre_hooks) == 0
        m.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError):
            m.register_backward_hook(lambda *a: None)
        m2 = mod.nn.Linear(2, 2)
        m2.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError):
            m2.register_full_backward_hook(lambda *a: None)


def test_legacy_backward_hook_sees_last_node_grads():
    def program(mod, log):
        a = _lin(mod, 3, 2, 5)
        a.register_backward_hook(lambda m, gi, go: log.append(("legacy", _desc(gi), _desc(go))))
        x = mod.tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
        a(x).sum().backward()
        log.append(_desc(x.grad))
    both(program)


def test_hook_dicts_hold_the_hooks_themselves():
    # programs read module._forward_pre_hooks.values() (torch.nn.utils.prune finds its methods
    # there); the with_kwargs / always_call flags live in torch's side dicts, emptied on removal
    def program(mod, log):
        m = _lin(mod, 2, 2, 0)

        def pre(module, args):
            return None

        def post(module, args, kwargs, out):
            return None
        h1 = m.register_forward_pre_hook(pre, with_kwargs=False)
        h2 = m.register_forward_hook(post, with_kwargs=True, always_call=True)
        h3 = m.register_full_backward_hook(lambda *a: None)
        log.append([v is pre for v in m._forward_pre_hooks.values()])
        log.append([v is post for v in m._forward_hooks.values()])
        log.append([callable(v) and not hasattr(v, "with_kwargs") for v in m._backward_hooks.values()])
        log.append((dict(m._forward_pre_hooks_with_kwargs), list(m._forward_hooks_with_kwargs.values()),
                    list(m._forward_hooks_always_called.values())))
        m(mod.ones(1, 2)).sum().backward()
        for h in (h1, h2, h3):
            h.remove()
        log.append((len(m._forward_pre_hooks), len(m._forward_hooks), len(m._forward_hooks_with_kwargs),
                    len(m._forward_hooks_always_called), len(m._backward_hooks)))
    both(program)
