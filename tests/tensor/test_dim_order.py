"""``Tensor.dim_order(ambiguity_check=...)`` against torch on random layouts: permuted, strided,
size-1 dims and channels_last, with the order, the ambiguity errors and their classes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _orders(mod, shape, perm, stride2, channels_last):
    x = mod.zeros(shape)
    if channels_last:
        x = x.contiguous(memory_format=mod.channels_last)
    elif perm:
        x = x.permute(*perm)
        if stride2 and x.shape[-1] > 1:
            x = x[..., ::2]
    checks = [False, True, [mod.contiguous_format]]
    if len(shape) == 4:
        checks.append([mod.contiguous_format, mod.channels_last])
    out = []
    for amb in checks:
        try:
            out.append(x.dim_order(ambiguity_check=amb))
        except RuntimeError as e:
            out.append(("RuntimeError", str(e)))
    return out


def test_dim_order_matches_torch_on_random_layouts():
    rng = np.random.default_rng(0)
    for trial in range(300):
        nd = int(rng.integers(0, 5))
        shape = tuple(int(v) for v in rng.integers(1, 4, size=nd))
        perm = tuple(int(p) for p in rng.permutation(nd))
        args = (shape, perm, bool(rng.integers(0, 2)), nd == 4 and trial % 5 == 0)
        assert _orders(tracegrad, *args) == _orders(torch, *args), args


@pytest.mark.parametrize("bad", ["ILLEGAL", 1, [1], None])
def test_dim_order_bad_ambiguity_check_is_a_type_error(bad):
    for mod in (tracegrad, torch):
        with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
            mod.empty(2, 3).dim_order(ambiguity_check=bad)
