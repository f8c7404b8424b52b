"""Python ``range`` objects as index elements and as ``tensor()`` data, as torch accepts them
(pytorch/examples' forward-forward: ``x_[range(x.shape[0]), y] = x.max()``)."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def test_range_in_getitem_setitem_and_tensor_as_torch():
    def run(T):
        x = T.arange(12.0).reshape(3, 4).requires_grad_(True)
        y = T.tensor([1, 0, 3])
        picked = x[range(3), y]
        (picked * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        z = T.zeros(3, 4)
        z[range(3), y] = 5.0
        z[range(1, 3)] += 1.0
        r = T.tensor(range(4))
        return picked.detach().numpy(), x.grad.numpy(), z.numpy(), r.numpy(), str(r.dtype).split(".")[-1]
    for a, b in zip(run(tracegrad), run(torch)):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)
