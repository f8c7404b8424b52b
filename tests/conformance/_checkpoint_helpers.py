"""Helpers shared by the checkpoint ports (test_checkpoint_ported*.py)."""
import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def _rand(T, seed, *shape, rg=False):
    t = T.tensor(np.random.RandomState(seed).standard_normal(shape).astype("float32"))
    return t.requires_grad_() if rg else t


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def _gap(T, request, reason):
    """xfail (strict) on tracegrad only, for a gap too deep to fix in this port."""
    if T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def _op(T, name, overload="default"):
    """The op a selective-checkpoint policy is handed: an OpOverload in torch, the aten name
    in tracegrad (which has no torch.ops)."""
    return getattr(getattr(T.ops.aten, name), overload) if T.__name__ == "torch" else name
