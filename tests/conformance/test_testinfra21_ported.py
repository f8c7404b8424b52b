"""Ports from PyTorch's test/test_tensor_creation_ops.py (TestTensorCreation and the like-ops
classes), run unchanged on tracegrad from a temp dir; these are the differences it found. Each
test names its original; the ``T`` fixture runs the body with torch too, so torch checks every
expectation."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

_OVERLAP = "unsupported operation: some elements of the input tensor and the written-to tensor"


# test_cat_out: an input that is the out tensor itself is refused even when it is empty
# (torch calls identical tensors a full overlap before it looks at the elements)
def test_cat_out_is_empty_input(T):
    x = T.zeros(0)
    y = T.randn(4, 6)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        T.cat([x, y], dim=0, out=x)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        T.cat([x, y], dim=0, out=y)


# test_tensor_factories_empty: randint / randint_like refuse a complex dtype (even for an empty shape)
@pytest.mark.parametrize("shape", [(0,), (2, 3)])
def test_randint_complex_dtype_refused(T, shape):
    with pytest.raises(RuntimeError, match="check_random_bounds handles only integral, floating-point and boolean"):
        T.randint(6, shape, dtype=T.complex64)
    with pytest.raises(RuntimeError, match="check_random_bounds handles only integral, floating-point and boolean"):
        T.randint_like(T.zeros(shape, dtype=T.complex128), 6)


# test_empty_like (TestLikeTensorCreation) uses the harness's assertEqualTypeString
def test_harness_assert_equal_type_string():
    from tracegrad.testing._internal.common_utils import TestCase

    class _T(TestCase):
        def runTest(self):
            pass

    t = _T()
    t.assertEqualTypeString(tracegrad.empty_like(tracegrad.randn(2)), tracegrad.zeros(3))
    with pytest.raises(AssertionError):
        t.assertEqualTypeString(tracegrad.zeros(2, dtype=tracegrad.int32), tracegrad.zeros(2))
