"""Ports from PyTorch's test/test_tensor_creation_ops.py (TestTensorCreation: range/arange
errors, tril_indices/triu_indices errors) run on tracegrad. Each test names its original; the
``T`` fixture runs the body with torch too, so torch checks every expectation. The file itself
could not be run unchanged here, so its creation-op areas (cat/stack, arange/linspace/logspace,
full/empty/*_like, eye, tensor() inference, from_numpy, as_tensor, randperm, range) were probed
against torch; these are the differences found."""
import warnings

import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _range(T, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.range is deprecated (both warn)
        return T.range(*args, **kw)


# test_range: an end on the wrong side of start for the step's sign is an error (not empty)
@pytest.mark.parametrize("args", [(4, 1), (1, 4, -1), (0.5, 0.25, 0.1)])
def test_range_inconsistent_step_sign(T, args):
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        _range(T, *args)


# test_range: non-finite bounds are torch's "unsupported range"
@pytest.mark.parametrize("args", [(0, float("inf")), (float("nan"), 1), (float("-inf"), 0)])
def test_range_non_finite(T, args):
    with pytest.raises(RuntimeError, match="unsupported range"):
        _range(T, *args)


# test_range: start == end (either step sign) is one element; 0-d tensor bounds are Scalars
def test_range_edges(T):
    for args in [(1, 1), (1, 1, -1), (3, 1, -1), (1, 1.5, 1)]:
        r = _range(T, *args)
        e = _range(torch, *args)
        assert r.dtype == getattr(T, str(e.dtype).split(".")[1]) and r.tolist() == e.tolist()
    r = _range(T, T.tensor(1.), T.tensor(3.), T.tensor(0.5))
    assert r.tolist() == [1.0, 1.5, 2.0, 2.5, 3.0]


# test_tril_and_triu_indices / run_additional_tri_tests: negative sizes name the op
@pytest.mark.parametrize("fn,args,what", [("tril_indices", (-1, 2), "row"), ("triu_indices", (2, -1), "col"),
                                          ("triu_indices", (-3, 2), "row")])
def test_tri_indices_negative(T, fn, args, what):
    with pytest.raises(RuntimeError, match=f"{what} must be non-negative") as ei:
        getattr(T, fn)(*args)
    if T is not torch:
        assert str(ei.value).startswith(f"{fn}()")


# test_tensor_factory / test_tensor_factory_type_inference: a tensor of several elements nested in a
# list is an error whose class follows the RESULT's dtype (integer/bool: __index__'s TypeError;
# floating/complex: item()'s ValueError), not the nested tensor's own dtype
@pytest.mark.parametrize("make,kw,exc", [
    (lambda T: [T.tensor([1, 2]), T.tensor([3., 4])], {}, ValueError),
    (lambda T: [T.tensor([1., 2.]), 3], {"dtype": "int64"}, TypeError),
    (lambda T: [T.tensor([1, 2]), 3], {"dtype": "float32"}, ValueError),
    (lambda T: [T.tensor([1, 2]), 3], {}, TypeError),
    (lambda T: [T.tensor([True, False])], {}, TypeError),
    (lambda T: [T.tensor([1, 2])], {"dtype": "complex64"}, ValueError),
    (lambda T: [T.tensor([1., 2])], {"dtype": "uint8"}, TypeError),
])
def test_tensor_nested_multi_element_error_class(T, make, kw, exc):
    kw = {k: getattr(T, v) for k, v in kw.items()}
    with pytest.raises(exc, match="only"):
        T.tensor(make(T), **kw)
    with pytest.raises(exc, match="only"):
        T.as_tensor(make(T), **kw)


# test_copy_tensor / test_alias_from_tensor (asarray): copy=True copies a tensor even with no
# conversion to make (a differentiable clone); an explicit requires_grad=False turns it off
def test_asarray_tensor_copy_and_requires_grad(T):
    x = T.ones(2)
    y = T.asarray(x, copy=True)
    y.add_(1)
    assert x.tolist() == [1.0, 1.0] and y.tolist() == [2.0, 2.0]

    x = T.ones(2, requires_grad=True)
    y = T.asarray(x, copy=True)
    assert y is not x and y.requires_grad and type(y.grad_fn).__name__ == "CloneBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]

    y = T.asarray(x, copy=True, requires_grad=False)
    assert not y.requires_grad and y.grad_fn is None and x.requires_grad

    nonleaf = T.ones(2, requires_grad=True) * 2
    y = T.asarray(nonleaf, requires_grad=False)
    assert y is not nonleaf and not y.requires_grad and nonleaf.requires_grad

    x = T.ones(2, requires_grad=True)
    y = T.asarray(x, requires_grad=False)   # the alias is the leaf itself: torch turns its flag off
    assert y is x and not x.requires_grad

    x = T.ones(2)
    y = T.asarray(x, copy=True, requires_grad=True)
    assert y.requires_grad and y.is_leaf and not x.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = T.asarray(nonleaf)   # unspecified: keeps the source's flag (the alias itself)
    assert z is nonleaf and z.requires_grad


# test_shared_buffer / test_not_a_buffer / test_non_writable_buffer (frombuffer): a writable
# buffer is aliased both ways; an empty buffer or count=0 is a ValueError
def test_frombuffer_shares_writable_buffer(T):
    b = bytearray(4)
    t = T.frombuffer(b, dtype=T.uint8)
    b[0] = 5
    assert t.tolist() == [5, 0, 0, 0]
    t.add_(1)
    assert list(b) == [6, 1, 1, 1]
    a = bytearray(range(8))
    t = T.frombuffer(a, dtype=T.int16, count=2, offset=2)
    a[2] = 9
    assert t.tolist() == [T.frombuffer(bytes(a), dtype=T.int16, count=2, offset=2)[0].item(), 1284]
    for buf, kw in [(bytearray(0), {}), (bytearray(4), {"count": 0})]:
        with pytest.raises(ValueError, match="must not be 0"):
            T.frombuffer(buf, dtype=T.int8, **kw)
    with warnings.catch_warnings():   # torch warns once per process ("not writable"): not checked
        warnings.simplefilter("ignore")
        t = T.frombuffer(b"abcd", dtype=T.uint8)
    assert t.tolist() == [97, 98, 99, 100]


# test_alias_from_buffer / test_copy_from_buffer (asarray): an object with the buffer protocol
# is read as raw bytes (the default dtype unless one is asked), aliased unless copy=True
def test_asarray_from_buffer(T):
    import array
    a = array.array("i", [1, 2, 3])
    t = T.asarray(a, dtype=T.int32)
    a[0] = 7
    assert t.dtype == T.int32 and t.tolist() == [7, 2, 3]
    c = T.asarray(a, dtype=T.int32, copy=True)
    a[1] = 9
    assert c.tolist() == [7, 2, 3]
    assert T.asarray(bytearray(b"abcd")).dtype == T.float32
    assert T.asarray(b"abcd", dtype=T.uint8).tolist() == [97, 98, 99, 100]
    with pytest.raises(ValueError, match="multiple of element size"):
        T.asarray(b"abc")
    with pytest.raises(ValueError, match="must not be 0"):
        T.asarray(b"")


# test_arange (torch's argument parser): a bound that is a 1-d tensor, even of one element, is
# not a Number; a 0-d one is
def test_arange_tensor_bound_must_be_0d(T):
    for args in [(T.tensor([3]),), (0, T.tensor([3])), (0, 3, T.tensor([1]))]:
        with pytest.raises(TypeError, match="arange"):   # torch: "must be Number" / "invalid combination"
            T.arange(*args)
    assert T.arange(T.tensor(3)).tolist() == [0, 1, 2]


# the *_like factories are named for the op in the parser's TypeError (not "like()")
def test_like_factories_bad_keyword_names_op(T):
    for name in ("zeros_like", "ones_like", "empty_like"):
        with pytest.raises(TypeError, match=f"^{name}\\(\\) got an unexpected keyword argument 'out'"):
            getattr(T, name)(T.ones(2), out=T.empty(2))


# harness: test_tensor_creation_ops.py imports these (test_tril_and_triu_indices uses the tri helpers)
def test_harness_pieces_for_creation_ops():
    import unittest

    from tracegrad.testing._creation import float_to_corresponding_complex_type_map
    from tracegrad.testing._internal.common_methods_invocations import (
        _compare_trilu_indices, run_additional_tri_tests, tri_tests_args)
    from tracegrad.testing._internal.common_utils import TestCase

    assert float_to_corresponding_complex_type_map[tracegrad.float32] is tracegrad.complex64

    class Tri(TestCase):
        def test_tri(self):
            for args in tri_tests_args:
                _compare_trilu_indices(self, *args)
            run_additional_tri_tests(self, "cpu")

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Tri).run(result)
    assert result.wasSuccessful(), result.failures + result.errors


# harness: test_empty_full's shared helper
def test_harness_do_test_empty_full():
    import unittest

    from tracegrad.testing._internal.common_utils import TestCase, do_test_empty_full

    class EmptyFull(TestCase):
        def test_it(self):
            do_test_empty_full(self, [tracegrad.float32, tracegrad.int64, tracegrad.bool, tracegrad.complex64],
                               tracegrad.strided, "cpu")

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(EmptyFull).run(result)
    assert result.wasSuccessful(), result.failures + result.errors
