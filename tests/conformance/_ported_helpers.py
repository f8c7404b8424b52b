"""Helpers shared by the ported PyTorch test files: values as float64 NumPy arrays, a tolerant
equality with shapes included, and fixed normal draws both libraries see alike."""
import numpy as np


def to_np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def eq(a, b, tol=1e-5):
    """``a`` and ``b`` (tensors or numbers) are equal within ``tol``, shapes included."""
    a = to_np(a) if hasattr(a, "detach") else np.asarray(a, dtype=np.float64)
    b = to_np(b) if hasattr(b, "detach") else np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def rn(T, *shape, seed=0, dtype="float32", grad=False):
    """A fixed numpy normal draw as a tensor (both libraries see the same values)."""
    a = np.random.RandomState(seed).standard_normal(shape).astype(dtype)
    return T.tensor(a, requires_grad=grad)
