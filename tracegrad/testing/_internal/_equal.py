"""``TestCase.assertEqual``'s comparison: torch's "relaxed" pairs on top of ``assert_close``.

torch's internal ``assertEqual`` (``torch/testing/_internal/common_utils.py``) walks the two
inputs like ``assert_close`` but accepts more pairs: a number or bool against a one-element
tensor, a tensor against a numpy array, a tensor against a (nested) list of numbers, strings,
sets, types and any other object through ``==``. It first *originates* every pair of the two
structures (structural problems -- a length or key mismatch, an uncomparable pair, only one of
``rtol``/``atol`` -- raise at once, without the user's ``msg``), then compares the pairs and
raises the first mismatch with the user's ``msg`` appended. This module is that walk, with the
tensor and number comparisons of ``tracegrad.testing._comparison``.
"""
from __future__ import annotations

import cmath
import collections.abc
import enum
import unittest

import numpy as np

import tracegrad
from tracegrad import Tensor
from tracegrad.testing._comparison import _DEFAULT_TOLERANCES, _compare_tensors, _diff_lines, _Mismatch


class _Unsupported(Exception):
    """This pair kind does not take these inputs: try the next kind (torch's ``UnsupportedInputs``)."""


# the numpy dtypes that have a tensor dtype; an array of any other dtype is compared as a list
_NUMPY_DTYPES = {np.dtype(n) for n in ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                                       "int64", "float16", "float32", "float64", "complex64", "complex128")}
# assertEqual reads Python floats and complexes at single precision (torch's RelaxedNumberPair)
_RELAXED_NUMBER_DTYPE = {int: tracegrad.int64, float: tracegrad.float32, complex: tracegrad.complex64}
_NUMBER_TYPES = (int, float, complex, np.number)
_TENSOR_LIKE = (Tensor, np.ndarray)
_UNSIGNED_WIDE = (tracegrad.uint16, tracegrad.uint32, tracegrad.uint64)


def _tolerances(*dtypes, rtol, atol, rtol_override, atol_override, path):
    if (rtol is None) != (atol is None):
        raise _Mismatch(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is None:
        pairs = [_DEFAULT_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    # a test's precision / rel_tol (precisionOverride, toleranceOverride) only ever loosens
    return max(rtol, rtol_override), max(atol, atol_override)


def _numel(x):
    return x.numel() if isinstance(x, Tensor) else x.size


def _one_item(x, what, path):
    if _numel(x) > 1:
        raise _Mismatch(ValueError, f"Only single element tensor-likes can be compared against a {what}. "
                                    f"Got {_numel(x)} elements instead.", path)
    return x.item()


# ---- the pair kinds, tried in torch's order; each returns a comparison thunk or raises _Unsupported
def _none_pair(a, e, path, opts):
    if a is not None and e is not None:
        raise _Unsupported

    def compare():
        if not (a is None and e is None):
            raise _Mismatch(AssertionError, f"None mismatch: {a} is not {e}", path)
    return compare


def _bool_pair(a, e, path, opts):
    bools = (bool, np.bool_)
    others = bools + _NUMBER_TYPES + _TENSOR_LIKE
    if not ((isinstance(a, bools) and isinstance(e, others)) or (isinstance(e, bools) and isinstance(a, others))):
        raise _Unsupported

    def to_bool(x):
        if isinstance(x, np.number):
            return bool(x.item())
        if type(x) in (int, float, complex):
            return bool(x)
        if isinstance(x, _TENSOR_LIKE):
            return bool(_one_item(x, "boolean", path))
        if isinstance(x, bool):
            return x
        if isinstance(x, np.bool_):
            return x.item()
        raise _Mismatch(TypeError, f"Unknown boolean type {type(x)}.", path)
    a, e = to_bool(a), to_bool(e)

    def compare():
        if a is not e:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {a} is not {e}", path)
    return compare


def _number_pair(a, e, path, opts):
    if not ((isinstance(a, _NUMBER_TYPES) and isinstance(e, _NUMBER_TYPES + _TENSOR_LIKE))
            or (isinstance(e, _NUMBER_TYPES) and isinstance(a, _NUMBER_TYPES + _TENSOR_LIKE))):
        raise _Unsupported

    def to_number(x):
        if isinstance(x, _TENSOR_LIKE):
            n = _one_item(x, "number", path)
            return int(n) if isinstance(n, bool) else n
        if isinstance(x, enum.Enum):
            return int(x)
        n = x.item() if isinstance(x, np.number) else x
        if type(n) not in _RELAXED_NUMBER_DTYPE:
            raise _Unsupported
        return n
    a, e = to_number(a), to_number(e)
    rtol, atol = _tolerances(_RELAXED_NUMBER_DTYPE[type(a)], _RELAXED_NUMBER_DTYPE[type(e)], path=path, **opts["tol"])

    def compare():                               # (d)types never matter here: 1 == 1.0 passes
        if a == e or (opts["equal_nan"] and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= atol + rtol * abs(e):
            return
        rel = float("inf") if e == 0 else diff / abs(e)
        raise _Mismatch(AssertionError, _diff_lines("Scalars", diff, rel, rtol, atol,
                                                    extra=f"Expected {e} but got {a}."), path)
    return compare


def _tensor_pair(a, e, path, opts):
    if not (isinstance(a, _TENSOR_LIKE) and isinstance(e, _TENSOR_LIKE)):
        raise _Unsupported
    a, e = (x if isinstance(x, Tensor) else tracegrad.as_tensor(x) for x in (a, e))   # a tensor vs an array is fine
    rtol, atol = _tolerances(a.dtype, e.dtype, path=path, **opts["tol"])

    def compare():
        # sparse COO tensors: as stored, or dense against another layout (``_compare_tensors``)
        x, y = a, e
        if x.dtype != y.dtype and not opts["exact_dtype"] and x.shape == y.shape:
            # wide unsigned ints compare as int64 (promote_types has no common type for them), as torch
            x, y = (t.to(tracegrad.int64) if t.dtype in _UNSIGNED_WIDE else t for t in (x, y))
        try:
            _compare_tensors(x, y, rtol=rtol, atol=atol, equal_nan=opts["equal_nan"],
                             check_device=opts["exact_device"], check_dtype=opts["exact_dtype"],
                             check_stride=opts["exact_stride"], check_layout=opts["exact_layout"])
        except _Mismatch as m:
            raise _Mismatch(m.cls, m.msg, path) from None
    return compare


def _unittest_pair(cls, type_name):
    def pair(a, e, path, opts):
        if not (isinstance(a, cls) and isinstance(e, cls)):
            raise _Unsupported

        def compare():
            case = unittest.TestCase()
            try:
                case.assertEqual(a, e)
            except case.failureException as error:
                raise _Mismatch(AssertionError, f"{type_name} comparison failed: {error}", path) from None
        return compare
    return pair


_PAIRS = (_none_pair, _bool_pair, _number_pair, _tensor_pair, _unittest_pair((str, bytes), "String"),
          _unittest_pair(set, "Set"), _unittest_pair(type, "Type"), _unittest_pair(object, "Object"))


def _container_types():
    """Sequence and mapping types walked elementwise: the abc ones plus nn's containers and Subset."""
    from tracegrad import nn
    from tracegrad.utils.data import Subset
    return ((collections.abc.Sequence, nn.Sequential, nn.ModuleList, nn.ParameterList, Subset),
            (collections.abc.Mapping, nn.ModuleDict, nn.ParameterDict))


def _originate(a, e, path, opts, out):
    seqs, maps = opts["containers"]
    if isinstance(a, seqs) and isinstance(e, seqs) and not isinstance(a, str) and not isinstance(e, str):
        if len(a) != len(e):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(a)} != {len(e)}", path)
        for i in range(len(a)):
            _originate(a[i], e[i], path + (i,), opts, out)
        return
    if isinstance(a, maps) and isinstance(e, maps):
        a_keys, e_keys = set(a.keys()), set(e.keys())
        if a_keys != e_keys:
            raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {sorted(e_keys - a_keys)}\n"
                                            f"Additional keys in the actual mapping: {sorted(a_keys - e_keys)}", path)
        try:
            keys = sorted(a_keys)                    # deterministic order when the keys sort
        except TypeError:
            keys = list(a_keys)
        for k in keys:
            _originate(a[k], e[k], path + (k,), opts, out)
        return
    for pair in _PAIRS:
        try:
            out.append(pair(a, e, path, opts))
            return
        except _Unsupported:
            continue
        except _Mismatch:
            raise
        except Exception as error:                   # e.g. .item() of an empty tensor: torch's RuntimeError
            raise RuntimeError(f"Originating a comparison pair at item {_where(path)} with\n\n"
                               f"{type(a).__name__}(): {a}\n\nand\n\n{type(e).__name__}(): {e}\n\n"
                               f"resulted in the unexpected exception above.") from error
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(a)} and {type(e)}.", path)


def _where(path):
    return "".join(str([k]) for k in path)


def _message(m: _Mismatch):
    return m.msg + (f"\n\nThe failure occurred for item {_where(m.path)}" if m.path else "")


def assert_equal(x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True, exact_device=False,
                 exact_stride=False, exact_layout=False, atol_override=0.0, rtol_override=0.0, long_message=True):
    """The body of ``TestCase.assertEqual`` (see its docstring); raises the first mismatch."""
    __tracebackhide__ = True
    if any(isinstance(v, np.ndarray) and v.dtype not in _NUMPY_DTYPES for v in (x, y)):
        # an array of a dtype tensors lack (object, str, longdouble...) is compared element by element
        x, y = (v.tolist() if isinstance(v, (Tensor, np.ndarray)) else list(v) for v in (x, y))
    elif isinstance(x, Tensor) and isinstance(y, collections.abc.Sequence):
        y = tracegrad.as_tensor(y, dtype=x.dtype, device=x.device)
    elif isinstance(x, collections.abc.Sequence) and isinstance(y, Tensor):
        x = tracegrad.as_tensor(x, dtype=y.dtype, device=y.device)
    opts = dict(tol=dict(rtol=rtol, atol=atol, rtol_override=rtol_override, atol_override=atol_override),
                equal_nan=equal_nan, exact_dtype=exact_dtype, exact_device=exact_device, exact_stride=exact_stride,
                exact_layout=exact_layout, containers=_container_types())
    pairs = []
    try:
        _originate(x, y, (), opts, pairs)
    except _Mismatch as m:                           # structural errors: raised as they are, without msg
        raise m.cls(_message(m)) from None
    for compare in pairs:
        try:
            compare()
        except _Mismatch as m:
            if isinstance(msg, str):
                text = f"{_message(m)}\n{msg}" if long_message else msg
            elif callable(msg):
                text = msg(_message(m))
            else:
                text = _message(m)
            raise m.cls(text) from None
