"""``Tensor.dim_order(ambiguity_check=...)`` against torch on random layouts: permuted, strided,
size-1 dims and channels_last, with the order, the ambiguity errors and their classes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _layout(mod, shape, perm, stride2, channels_last):
    x = mod.zeros(shape)
    if channels_last:
        x = x.contiguous(memory_format=mod.channels_last)
    elif perm:
        x = x.permute(*perm)
        if stride2 and x.shape[-1] > 1:
            x = x[..., ::2]
    return x


def _orders(x, mod):
    checks = [False, True, [mod.contiguous_format]]
    if x.dim() == 4:
        checks.append([mod.contiguous_format, mod.channels_last])
    out = []
    for amb in checks:
        try:
            out.append(x.dim_order(ambiguity_check=amb))
        except RuntimeError as e:
            out.append(("RuntimeError", str(e)))
    return out


def _random_layouts(rng, trials):
    for trial in range(trials):
        nd = int(rng.integers(0, 5))
        shape = tuple(int(v) for v in rng.integers(1, 4, size=nd))
        perm = tuple(int(p) for p in rng.permutation(nd))
        yield shape, perm, bool(rng.integers(0, 2)), nd == 4 and trial % 5 == 0


def test_dim_order_matches_torch_on_random_layouts():
    # dim_order reads only sizes and strides: random layouts (torch's view's strides, rebuilt
    # with empty_strided) cover permuted, strided and size-1 dims and channels_last; each
    # non-dense layout costs one XLA program, so 100 draws (about 60 distinct layouts) ...
    outcomes = set()
    for args in _random_layouts(np.random.default_rng(0), 100):
        t = _layout(torch, *args)
        x = tracegrad.empty_strided(tuple(t.shape), t.stride())
        got = _orders(x, tracegrad)
        assert got == _orders(t, torch), args
        outcomes.update(o[0] == "RuntimeError" for o in got if o)
        outcomes.add(("channels_last", args[3]))
    # (the draws reach both answers -- an order and the ambiguity error -- and channels_last)
    assert {True, False, ("channels_last", True)} <= outcomes
    # ... and layouts made by tracegrad's own zeros/permute/slice/channels_last, so the strides
    # those ops give reach dim_order too (0-d, size-1 dims, strided, channels_last)
    layouts = [((), (), False, False), ((3,), (0,), True, False), ((2, 1, 3), (2, 0, 1), True, False),
               ((1, 3, 2), (1, 2, 0), False, False), ((2, 3, 1, 2), (0, 2, 3, 1), True, False),
               ((2, 3, 1, 2), (), False, True), ((1, 3, 1, 1), (), False, True)]
    for args in layouts:
        x, t = _layout(tracegrad, *args), _layout(torch, *args)
        assert x.stride() == t.stride(), args
        assert _orders(x, tracegrad) == _orders(t, torch), args


@pytest.mark.parametrize("bad", ["ILLEGAL", 1, [1], None])
def test_dim_order_bad_ambiguity_check_is_a_type_error(bad):
    for mod in (tracegrad, torch):
        with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
            mod.empty(2, 3).dim_order(ambiguity_check=bad)
