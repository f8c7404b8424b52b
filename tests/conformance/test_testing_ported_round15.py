"""Round 15 of PyTorch's own tests, ported: test/test_testing.py (TestAssertClose,
TestAssertCloseErrorMessage, TestAssertCloseContainer, TestMakeTensor). Every
``assert_close`` call runs with torch 2.13 (the oracle) and with tracegrad: the same outcome,
pass or the same exception class with the same message (``tracegrad.`` read as ``torch.``).
Cases tests/testing/test_testing.py has are not repeated. Each test loops over its cases."""
import math
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

nan, inf = math.nan, math.inf


def _outcome(T, make):
    args = make(T)
    kw = args[2] if len(args) > 2 else {}
    try:
        T.testing.assert_close(args[0], args[1], **kw)
    except Exception as e:   # noqa: BLE001  (the class and message are what we compare)
        return type(e).__name__, str(e).replace("tracegrad.", "torch.")
    return None


def check_cases(cases):
    bad = {}
    for name, make in cases.items():
        theirs, ours = _outcome(torch, make), _outcome(tracegrad, make)
        if theirs != ours:
            bad[name] = (theirs, ours)
    assert not bad, bad


def test_tensor_pairs_attributes_values_and_messages():
    """test_mismatching_stride, test_matching_atol/rtol, test_matching_nan(_with_equal_nan) on
    complex, infinities, integer and bool mismatches (the greatest difference and its index),
    zero-division in the relative difference, empty tensors, 0-d against 1-d, default tolerances
    of mixed dtypes (test_default_tolerance_selection_mismatching_dtypes) and meta tensors
    (test_meta: only the attributes compare)."""
    check_cases({
        "stride": lambda t: (t.ones(2, 3), t.ones(3, 2).t(), {"check_stride": True}),
        "stride_unchecked": lambda t: (t.ones(2, 3), t.ones(3, 2).t()),
        "abs_diff_2d": lambda t: (t.tensor([[1., 2.], [3., 4.]]), t.tensor([[1., 2.], [5., 4.]])),
        "rel_diff_index": lambda t: (t.tensor([1., 2., 3., 4.]), t.tensor([1.5, 2., 3., 40.])),
        "rel_diff_zero": lambda t: (t.tensor([1., 0.]), t.tensor([0., 1.])),
        "int": lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 5, 3])),
        "uint8": lambda t: (t.tensor([1, 200], dtype=t.uint8), t.tensor([3, 10], dtype=t.uint8)),
        "int8": lambda t: (t.tensor([-100, 100], dtype=t.int8), t.tensor([100, -100], dtype=t.int8)),
        "bool": lambda t: (t.tensor([True, True, False]), t.tensor([False, True, True])),
        "matching_atol": lambda t: (t.tensor([1.]), t.tensor([1.4]), {"rtol": 0., "atol": 0.5}),
        "matching_rtol": lambda t: (t.tensor([2.]), t.tensor([2.4]), {"rtol": 0.25, "atol": 0.}),
        "exact": lambda t: (t.tensor([1.]), t.tensor([2.]), {"rtol": 0., "atol": 0.}),
        "nan_positions": lambda t: (t.tensor([nan, 1.]), t.tensor([1., nan]), {"equal_nan": True}),
        "complex_nan": lambda t: (t.tensor([complex(nan, 0)]), t.tensor([complex(0, nan)]), {"equal_nan": True}),
        "complex_nan_unequal": lambda t: (t.tensor([complex(nan, 0)]), t.tensor([complex(0, nan)])),
        "complex": lambda t: (t.tensor([1 + 1j, 2]), t.tensor([1 + 1j, 2 + 1j])),
        "inf_signs": lambda t: (t.tensor([-inf]), t.tensor([inf])),
        "inf_nan": lambda t: (t.tensor([inf]), t.tensor([nan])),
        "large_rel": lambda t: (t.tensor([1e10]), t.tensor([1e10 + 1e5])),
        "empty": lambda t: (t.ones(0), t.ones(0)),
        "empty_shapes": lambda t: (t.ones(0, 2), t.ones(2, 0)),
        "0d_vs_1d": lambda t: (t.tensor(1.), t.tensor([1.])),
        "int_vs_float": lambda t: (t.tensor([1, 2]), t.tensor([1.0, 2.5]), {"check_dtype": False}),
        "int_vs_float_tol": lambda t: (t.tensor([1]), t.tensor([1.000001]), {"check_dtype": False}),
        "half_vs_double": lambda t: (t.tensor([1.], dtype=t.float16), t.tensor([1.0009], dtype=t.float64),
                                     {"check_dtype": False}),
        "bf16_vs_half": lambda t: (t.tensor([1.], dtype=t.bfloat16), t.tensor([1.], dtype=t.float16),
                                   {"check_dtype": False}),
        "requires_grad": lambda t: (t.ones(2, requires_grad=True), t.ones(2, requires_grad=True)),
        "many": lambda t: (t.arange(16.).reshape(4, 4), t.arange(16.).reshape(4, 4) + t.eye(4)),
        "meta": lambda t: (t.ones(2, device="meta"), t.ones(2, device="meta")),
        "meta_vs_cpu": lambda t: (t.ones(2, device="meta"), t.ones(2)),
        "meta_vs_cpu_unchecked": lambda t: (t.ones(2, device="meta"), t.ones(2), {"check_device": False}),
        "meta_shape": lambda t: (t.ones(2, device="meta"), t.ones(3, device="meta")),
        "parameter": lambda t: (t.nn.Parameter(t.ones(2)), t.ones(2)),
        "parameter_no_subclasses": lambda t: (t.nn.Parameter(t.ones(2)), t.ones(2), {"allow_subclasses": False}),
        "parameters_no_subclasses": lambda t: (t.nn.Parameter(t.ones(2)), t.nn.Parameter(t.ones(2)),
                                               {"allow_subclasses": False}),
        "rtol_only": lambda t: (t.tensor([1.]), t.tensor([1.]), {"rtol": 0.1}),
        "atol_with_none_rtol": lambda t: (t.tensor([1.]), t.tensor([1.]), {"atol": 0.1, "rtol": None}),
    })


def test_numbers_none_and_numpy():
    """test_scalar, test_bool, test_None (None only matches None: AssertionError otherwise),
    numpy scalars compared as the Python numbers they hold (np.float64 against float passes the
    type check), numpy arrays with their strides (check_stride) and the pairs no comparison handles
    (test_unknown_type, test_mismatching_types)."""
    check_cases({
        "nan": lambda t: (nan, nan),
        "nan_equal": lambda t: (nan, nan, {"equal_nan": True}),
        "complex": lambda t: (1 + 1j, 1 + 2j),
        "inf": lambda t: (inf, inf),
        "close": lambda t: (1.0, 1.0 + 1e-8),
        "big_ints": lambda t: (2 ** 62, 2 ** 62 + 1),
        "float_vs_complex": lambda t: (1.0, 1 + 0j),
        "float_vs_complex_unchecked": lambda t: (1.0, 1 + 0j, {"check_dtype": False}),
        "int_float_no_subclasses": lambda t: (1, 1.0, {"allow_subclasses": False, "check_dtype": False}),
        "none_vs_tensor": lambda t: (None, t.tensor(1.)),
        "none_vs_tensor_1d": lambda t: (None, t.tensor([1., 2.])),
        "number_vs_none": lambda t: (1, None),
        "none_in_list": lambda t: ([None], [t.ones(2)]),
        "np_float64": lambda t: (np.float64(1.), np.float64(1.)),
        "np_float64_vs_float": lambda t: (np.float64(1.), 1.0),
        "np_float32_tol": lambda t: (np.float32(1.0), np.float32(1.0 + 1e-7)),
        "np_int_vs_int": lambda t: (np.int32(3), 4),
        "np_bool_vs_bool": lambda t: (np.bool_(True), False),
        "np_dtype": lambda t: (np.array([1.], dtype=np.float32), np.array([1.])),
        "np_0d": lambda t: (np.array(1.), np.array(2.)),
        "np_stride": lambda t: (np.ones((2, 3)), np.ones((3, 2)).T, {"check_stride": True}),
        "np_same_stride": lambda t: (np.ones((3, 2)).T, np.ones((3, 2)).T.copy(order="F"), {"check_stride": True}),
        "np_vs_tensor": lambda t: (np.array([1.]), t.tensor([1.])),
        "object": lambda t: (object, object),
        "strings": lambda t: ("a", "b"),
        "bytes": lambda t: (b"a", b"a"),
        "set": lambda t: ({1}, {1}),
    })


def test_containers_and_messages():
    """TestAssertCloseContainer: sequences (tuple, list, range, namedtuple return types),
    mappings (OrderedDict against dict), nesting with the failing item's path, mixed
    sequence/mapping; TestAssertCloseErrorMessage: ``msg`` as a string replaces the message,
    as a callable it gets the generated message including the item's path."""
    check_cases({
        "namedtuple": lambda t: (t.max(t.tensor([1., 3.]), 0), (t.tensor(3.), t.tensor(1))),
        "range": lambda t: (range(3), [0, 1, 2]),
        "strings_in_list": lambda t: (["a"], ["a"]),
        "ordered_dict": lambda t: (OrderedDict(a=t.tensor(1.)), {"a": t.tensor(1.)}),
        "dict_vs_list": lambda t: ({"a": 1}, [1]),
        "nested_path": lambda t: ({"a": [1, {"b": t.tensor([1., 2.])}]}, {"a": [1, {"b": t.tensor([1., 3.])}]}),
        "type_error_path": lambda t: ([1, t.tensor(1.)], [1, 1.0]),
        "list_of_arrays": lambda t: ([np.array([1.])], [np.array([1.5])]),
        "msg_str_in_list": lambda t: ([t.tensor(1.)], [t.tensor(2.)], {"msg": "custom"}),
        "msg_callable_in_tuple": lambda t: ((t.tensor(1.),), (t.tensor(2.),), {"msg": lambda m: m.upper()}),
        "msg_callable_prefix": lambda t: ([t.tensor(1.)], [t.tensor(2.)], {"msg": lambda m: "X" + m[:10]}),
        "msg_on_type_error": lambda t: (t.tensor(1.), 1.0, {"msg": "custom"}),
        "msg_on_value_error": lambda t: (t.tensor(1.), t.tensor(1.), {"msg": "custom", "rtol": 1}),
    })


def _made(T, **kw):
    shape = kw.pop("shape", (2, 3))
    kw.setdefault("device", "cpu")
    try:
        x = T.testing.make_tensor(*shape, **kw) if isinstance(shape, tuple) else T.testing.make_tensor(shape, **kw)
    except Exception as e:   # noqa: BLE001
        return type(e).__name__
    return str(x.dtype).split(".")[-1], tuple(x.shape), x.stride(), x.is_contiguous(), x.requires_grad, x.device.type


def test_make_tensor():
    """TestMakeTensor: shapes given as ints, a tuple or a Size; dtype/device; the layouts
    (noncontiguous with the same shape, channels_last strides); requires_grad (ValueError for
    integers); the value ranges ([low, high); integers by default -9..9, uint8 from 0, bool,
    clamped to the dtype), exclude_zero, and the ValueErrors for low > high and NaN bounds."""
    f32, i64 = {"dtype": "float32"}, {"dtype": "int64"}

    def kw(T, d):
        return {k: (getattr(T, v) if k == "dtype" else v) for k, v in d.items()}
    cases = [
        dict(f32), dict(f32, shape=[2, 3]), dict(i64, shape="size"), dict(f32, shape=()),
        dict(f32, noncontiguous=True), dict(f32, shape=(1,), noncontiguous=True),
        dict(f32, shape=(0,), noncontiguous=True), dict(f32, shape=(2, 3, 4, 5), memory_format="cl"),
        dict(f32, shape=(2, 3, 4, 5), memory_format="cl", noncontiguous=True),
        dict(f32, shape=(2, 3, 4), memory_format="cl"),
        dict(f32, requires_grad=True), dict(i64, requires_grad=True),
        dict(f32, low=2, high=1), dict(f32, low=nan), dict(f32, high=nan), dict(f32, low=-inf),
        dict(f32, shape="bad_dtype"), dict(f32, shape=(-1,)),
        dict({"dtype": "complex64"}), dict({"dtype": "bfloat16"}), dict({"dtype": "float16"}),
    ]
    for case in cases:
        results = []
        for T in (torch, tracegrad):
            c = kw(T, case)
            if c.get("shape") == "size":
                c["shape"] = T.Size([2, 3])
            if c.get("shape") == "bad_dtype":
                c["shape"], c["dtype"] = (2,), "float32"
            if c.get("memory_format") == "cl":
                c["memory_format"] = T.channels_last
            results.append(_made(T, **c))
        assert results[0] == results[1], (case, results)

    mt = tracegrad.testing.make_tensor
    cpu = "cpu"
    x = mt(400, dtype=tracegrad.float32, device=cpu)
    assert -9 <= float(x.min()) and float(x.max()) < 9
    x = mt(400, dtype=tracegrad.float32, device=cpu, low=2, high=3)
    assert 2 <= float(x.min()) and float(x.max()) < 3
    x = mt(400, dtype=tracegrad.float32, device=cpu, low=5)        # only low: up to the default high
    assert 5 <= float(x.min()) and float(x.max()) < 9
    assert set(mt(400, dtype=tracegrad.int64, device=cpu, low=0, high=3).tolist()) == {0, 1, 2}   # high excluded
    x = mt(2000, dtype=tracegrad.int64, device=cpu)
    assert int(x.min()) == -9 and int(x.max()) == 9
    x = mt(400, dtype=tracegrad.uint8, device=cpu)
    assert 0 <= int(x.min()) and int(x.max()) <= 9
    x = mt(400, dtype=tracegrad.int8, device=cpu, low=-1000, high=1000)   # clamped to int8's range
    assert -128 <= int(x.min()) and int(x.max()) <= 127
    assert int(mt(200, dtype=tracegrad.uint8, device=cpu, low=250, high=1000).min()) >= 250
    assert bool(mt(100, dtype=tracegrad.float16, device=cpu, low=-1e10, high=1e10).isfinite().all())
    assert set(mt(200, dtype=tracegrad.bool, device=cpu).tolist()) == {False, True}
    assert 0 not in mt(400, dtype=tracegrad.int64, device=cpu, low=-1, high=1, exclude_zero=True).tolist()
    assert set(mt(50, dtype=tracegrad.bool, device=cpu, exclude_zero=True).tolist()) == {True}
    z = mt(300, dtype=tracegrad.complex64, device=cpu, low=-1, high=1)
    assert -1 <= float(z.real.min()) and float(z.imag.max()) < 1
    nc = mt(2, 3, dtype=tracegrad.float32, device=cpu, noncontiguous=True)
    assert not nc.is_contiguous() and nc.shape == (2, 3)
