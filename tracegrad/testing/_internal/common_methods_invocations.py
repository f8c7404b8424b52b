"""The small part of torch's ``common_methods_invocations`` that test files import outside the
OpInfo database: the ``tril_indices``/``triu_indices`` checks test_tensor_creation_ops.py runs and
``wrapper_set_seed``.
Our own code: each result is checked against the mask of ``ones(row, col).tril/triu(offset)``."""
from __future__ import annotations

import tracegrad

# (row, col, offset) shapes the tri-indices tests sweep: square, wide, tall, empty and offsets
# past either edge
tri_tests_args = [
    (1, 1), (3, 3), (3, 3, 1), (3, 3, -1), (3, 3, 3), (3, 3, -3), (3, 3, 10), (3, 3, -10),
    (5, 3), (5, 3, 2), (5, 3, -2), (3, 5), (3, 5, 2), (3, 5, -2), (0, 3), (3, 0), (0, 0), (0, 3, 1),
    (1, 7, -1), (7, 1, 1), (6, 6, 0, tracegrad.int32), (4, 9, 2, tracegrad.int32),
]


def _compare_trilu_indices(self, row, col, offset=0, dtype=tracegrad.long, device="cpu"):
    """``tril_indices``/``triu_indices`` equal the coordinates of the ones in the masked matrix."""
    ones = tracegrad.ones(row, col, dtype=tracegrad.long, device="cpu")
    for fn, mask in ((tracegrad.tril_indices, ones.tril(offset)), (tracegrad.triu_indices, ones.triu(offset))):
        got = fn(row, col, offset, dtype=dtype, device=device)
        want = mask.nonzero().transpose(0, 1).to(dtype)
        if want.numel() == 0:
            want = tracegrad.zeros(2, 0, dtype=dtype)
        self.assertEqual(want, got.cpu(), exact_device=False)


def run_additional_tri_tests(self, device):
    """Extra checks: an explicit dtype is kept, a non-integer dtype and negative sizes are errors."""
    x = tracegrad.ones(3, 3, dtype=tracegrad.long, device=device, layout=tracegrad.strided)
    l = x.tril(0).nonzero().transpose(0, 1)
    u = x.triu(0).nonzero().transpose(0, 1)
    self.assertEqual(l, tracegrad.tril_indices(3, 3, device=device))
    self.assertEqual(l, tracegrad.tril_indices(3, 3, device=device, layout=tracegrad.strided))
    self.assertEqual(u, tracegrad.triu_indices(3, 3, device=device))
    self.assertEqual(u, tracegrad.triu_indices(3, 3, device=device, layout=tracegrad.strided))
    for fn in (tracegrad.tril_indices, tracegrad.triu_indices):
        self.assertEqual(fn(3, 3, dtype=tracegrad.int32).dtype, tracegrad.int32)
        self.assertRaises(RuntimeError, lambda: fn(-1, 3))
        self.assertRaises(RuntimeError, lambda: fn(3, -1))
        self.assertRaises((RuntimeError, NotImplementedError), lambda: fn(3, 3, dtype=tracegrad.float32))


def mask_not_all_zeros(shape):
    """Mirrors torch's helper of that name: a random bool mask of ``shape`` with at least one
    True element (drawn again until it has one)."""
    if len(shape) == 0:
        raise ValueError("mask_not_all_zeros: shape must have at least one dimension")
    while True:
        mask = tracegrad.randn(shape) > 0
        if bool(mask.any()):
            return mask


def wrapper_set_seed(op, *args, **kwargs):
    """Mirrors ``common_methods_invocations.wrapper_set_seed``: ``op(*args, **kwargs)`` run with
    the default generator seeded to 42 and its state restored afterwards, so a random op
    (dropout, sdpa's ``dropout_p``) draws the same values on every call (gradcheck's repeated
    evaluations see one function)."""
    from tracegrad.testing._internal.common_utils import freeze_rng_state
    with freeze_rng_state():
        tracegrad.manual_seed(42)
        return op(*args, **kwargs)
