"""``assert_close``: torch.testing's comparison of tensors, numbers and nested sequences or
mappings of them, with torch's default tolerances per dtype and its mismatch messages."""
from __future__ import annotations

import cmath
import collections.abc
import math

import numpy as np

import tracegrad
from tracegrad import Tensor
from .._ops.warn import warn as _warn

# (rtol, atol) when neither is given; other dtypes (integers, bool) compare exactly
_DEFAULT_TOLERANCES = {
    tracegrad.float16: (1e-3, 1e-5), tracegrad.bfloat16: (1.6e-2, 1e-5), tracegrad.float32: (1.3e-6, 1e-5),
    tracegrad.float64: (1e-7, 1e-7), tracegrad.complex64: (1.3e-6, 1e-5), tracegrad.complex128: (1e-7, 1e-7),
}
# a Python number's tolerances are those of the dtype it would become in a float64/complex128 tensor
_NUMBER_DTYPE = {bool: tracegrad.bool, int: tracegrad.int64, float: tracegrad.float64, complex: tracegrad.complex128}


class _Mismatch(Exception):
    """A failed comparison: the class to raise, its message, and the path of the item."""

    def __init__(self, cls, msg, path=()):
        super().__init__(msg)
        self.cls, self.msg, self.path = cls, msg, path


def _tolerances(*dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_DEFAULT_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_lines(what, abs_diff, rel_diff, rtol, atol, *, extra=None, abs_idx=None, rel_idx=None):
    equal = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if equal else 'close'}!", ""]
    if extra:
        lines.append(extra)
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol), ("relative", rel_diff, rel_idx, rtol)):
        line = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
        lines.append(line if equal else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def _first_max(values):
    """Index and value of the largest entry (the first NaN wins, as torch.max)."""
    best = 0
    for i, v in enumerate(values):
        if v != v:
            return i, v
        if v > values[best]:
            best = i
    return best, values[best]


def _compare_numbers(actual, expected, *, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    rtol, atol = _tolerances(_NUMBER_DTYPE[type(actual)], _NUMBER_DTYPE[type(expected)], rtol=rtol, atol=atol)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    diff = abs(actual - expected)
    finite = not (cmath.isinf(actual) or cmath.isinf(expected))
    if finite and not math.isnan(diff) and diff <= atol + rtol * abs(expected):
        return
    rel = float("inf") if expected == 0 else diff / abs(expected)
    raise _Mismatch(AssertionError, _diff_lines("Scalars", diff, rel, rtol, atol,
                                                extra=f"Expected {expected} but got {actual}."))


def _as_tensor(x):
    return tracegrad.from_numpy(np.asarray(x)) if isinstance(x, np.ndarray) else x


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype, check_stride,
                     check_layout=True):
    for attr in ("shape",) + (("device",) if check_device else ()) + (("dtype",) if check_dtype else ()):
        a, e = getattr(actual, attr), getattr(expected, attr)
        if a != e:
            raise _Mismatch(AssertionError, f"The values for attribute '{attr}' do not match: {a} != {e}.")
    if actual.layout != expected.layout:
        if check_layout:
            raise _Mismatch(AssertionError, f"The values for attribute 'layout' do not match: "
                                            f"{actual.layout} != {expected.layout}.")
        actual, expected = actual.to_dense(), expected.to_dense()     # as torch without check_layout
    if actual.is_sparse:
        # as torch: two sparse COO tensors compare as stored (not coalesced): sparse dims and nnz
        # equal, indices equal, values close
        for what, a, e in (("sparse dimensions", actual.sparse_dim(), expected.sparse_dim()),
                           ("specified values", actual._nnz(), expected._nnz())):
            if a != e:
                raise _Mismatch(AssertionError, f"The number of {what} in sparse COO tensors does not match: {a} != {e}")
        for what, a, e, tol in (("indices", actual._indices(), expected._indices(), dict(rtol=0, atol=0)),
                                ("values", actual._values(), expected._values(), dict(rtol=rtol, atol=atol))):
            try:
                _compare_tensors(a, e, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                                 check_stride=False, **tol)
            except _Mismatch as m:
                raise _Mismatch(m.cls, m.msg.replace("Tensor-likes", f"Sparse COO {what}", 1)) from None
        return
    if check_stride and actual.stride() != expected.stride():
        raise _Mismatch(AssertionError, f"The values for attribute 'stride()' do not match: "
                                        f"{actual.stride()} != {expected.stride()}.")
    if actual.device.type == "meta" or expected.device.type == "meta":
        return                                  # a meta tensor has no values: only the attributes compare
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual = actual.cpu()
        expected = expected.cpu()
    if actual.dtype != expected.dtype:
        common = tracegrad.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.dtype.is_floating_point and actual.dtype.itemsize == 1:
        # float8 has no isclose (torch's neither): compared in float32, exactly by default, as torch
        actual, expected = actual.float(), expected.float()
    matches = tracegrad.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.dim() == 0:
        return _compare_numbers(actual.item(), expected.item(), rtol=rtol, atol=atol, equal_nan=equal_nan,
                                check_dtype=False)
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a, e = a.to(tracegrad.int64), e.to(tracegrad.int64)
    abs_diff = (a - e).abs()
    abs_diff[m] = 0
    rel_diff = abs_diff / e.abs()
    rel_diff[m] = 0
    n, bad = m.numel(), m.numel() - int(m.sum())
    shape = tuple(matches.shape)

    def unravel(i):
        return tuple(int(k) for k in np.unravel_index(i, shape))
    (ai, av), (ri, rv) = _first_max(abs_diff.tolist()), _first_max(rel_diff.tolist())
    raise _Mismatch(AssertionError, _diff_lines("Tensor-likes", av, rv, rtol, atol,
                                                extra=f"Mismatched elements: {bad} / {n} ({bad / n:.1%})",
                                                abs_idx=unravel(ai), rel_idx=unravel(ri)))


def _is_number(x):
    return isinstance(x, (bool, int, float, complex))


def _is_tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray))


def _numpy_strides(x):
    return tuple(st // x.itemsize for st in x.strides)


def _compare(actual, expected, path, **kw):
    if actual is None or expected is None:
        if actual is None and expected is None:
            return
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)
    # numpy scalars (np.float32(1), np.bool_(True)) compare as the Python numbers they hold, as torch
    actual, expected = (x.item() if isinstance(x, (np.number, np.bool_)) else x for x in (actual, expected))
    if kw["check_stride"] and isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray) and \
            actual.shape == expected.shape and _numpy_strides(actual) != _numpy_strides(expected):
        # torch compares the strides of the tensors from_numpy gives, numpy's strides in elements
        raise _Mismatch(AssertionError, f"The values for attribute 'stride()' do not match: "
                                        f"{_numpy_strides(actual)} != {_numpy_strides(expected)}.", path)
    # a tensor is compared with a tensor and an ndarray with an ndarray, never across (as torch)
    # ... and a tensor subclass (Parameter) only with allow_subclasses, as torch
    if _is_tensor_like(actual) and _is_tensor_like(expected) and \
            isinstance(actual, Tensor) == isinstance(expected, Tensor) and \
            (kw["allow_subclasses"] or type(actual) is type(expected)):
        try:
            return _compare_tensors(_as_tensor(actual), _as_tensor(expected),
                                    **{k: v for k, v in kw.items() if k != "allow_subclasses"})
        except _Mismatch as m:
            raise _Mismatch(m.cls, m.msg, path) from None
    if _is_number(actual) and _is_number(expected):
        try:
            return _compare_numbers(actual, expected, rtol=kw["rtol"], atol=kw["atol"], equal_nan=kw["equal_nan"],
                                    check_dtype=kw["check_dtype"])
        except _Mismatch as m:
            raise _Mismatch(m.cls, m.msg, path) from None
    seq = (collections.abc.Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (i,), **kw)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        a_keys, e_keys = set(actual), set(expected)
        if a_keys != e_keys:
            missing, extra = sorted(e_keys - a_keys, key=str), sorted(a_keys - e_keys, key=str)
            msg = "The keys of the mappings do not match:\n"
            if missing:
                msg += f"Missing keys in the actual mapping: {missing}\n"
            if extra:
                msg += f"Additional keys in the actual mapping: {extra}\n"
            raise _Mismatch(AssertionError, msg.strip(), path)
        for k in actual:
            _compare(actual[k], expected[k], path + (k,), **kw)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {_type(actual)} and "
                               f"{_type(expected)}.", path)


def _type(x):
    return "<class 'tracegrad.Tensor'>" if type(x) is Tensor else str(type(x))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Mirrors ``torch.testing.assert_close``: passes when ``actual`` and ``expected`` are close,
    elementwise ``|actual - expected| <= atol + rtol * |expected|`` (NaNs equal only with
    ``equal_nan``; infinities must be equal).

    Args: tensors (or numpy arrays), Python numbers, ``None``, or sequences/mappings of them,
    nested; both sides of each pair of the same kind. ``rtol``/``atol``: both or neither; when
    omitted, the larger defaults of the two dtypes (float16 ``(1e-3, 1e-5)``, bfloat16
    ``(1.6e-2, 1e-5)``, float32/complex64 ``(1.3e-6, 1e-5)``, float64/complex128/Python
    float ``(1e-7, 1e-7)``, integers and bool exact). Tensors must agree in shape, and in
    device and dtype unless ``check_device``/``check_dtype`` is False (then both are moved to
    the CPU and the common dtype). ``check_stride`` compares strides. ``msg``: a string that
    replaces the message, or a callable that gets the generated message and returns one.
    Raises: AssertionError listing the mismatched count, the greatest absolute and relative
    differences and their indices (and which item of a sequence/mapping failed); TypeError
    for an uncomparable pair (a tensor against a number or list); ValueError when only one of
    ``rtol``/``atol`` is given.
    ``None`` matches only ``None``; numpy scalars compare as Python numbers; a meta tensor
    compares only its attributes.
    Sparse COO tensors compare as torch's: sparse dims and nnz equal, indices equal, values
    close, as stored (uncoalesced entries are not summed); a layout mismatch fails unless
    ``check_layout=False`` (then both are compared dense).
    Differs from torch: no quantized or nested layouts (tracegrad has none). ``allow_subclasses=False``: a tensor
    subclass (``nn.Parameter``) against a plain tensor is the TypeError of an uncomparable pair.
    """
    try:
        _compare(actual, expected, (), rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                 check_dtype=check_dtype, check_stride=check_stride, check_layout=check_layout,
                 allow_subclasses=allow_subclasses)
    except _Mismatch as m:
        text = m.msg
        if m.cls is AssertionError and isinstance(msg, str):
            text = msg
        else:
            if m.path:
                text += "\n\nThe failure occurred for item " + "".join(f"[{k!r}]" for k in m.path)
            if m.cls is AssertionError and callable(msg):
                text = msg(text)            # the callable sees the message with the item's path
        raise m.cls(text) from None


# torch.testing.assert_allclose's own (looser) defaults; other dtypes compare exactly
_ALLCLOSE_TOLERANCES = {tracegrad.float16: (1e-3, 1e-3), tracegrad.float32: (1e-4, 1e-5),
                        tracegrad.float64: (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Mirrors ``torch.testing.assert_allclose`` (deprecated since torch 1.12, still used by
    older test suites): warns FutureWarning, turns non-tensors into tensors (``expected`` in
    ``actual``'s dtype), then compares as ``assert_close`` with NaNs equal by default and the
    dtypes free to differ. Default tolerances, the larger of the two dtypes': float16
    ``(1e-3, 1e-3)``, float32 ``(1e-4, 1e-5)``, float64 ``(1e-5, 1e-8)``, other dtypes exact.
    Raises AssertionError (or ValueError for one of rtol/atol alone), as ``assert_close``."""
    _warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
          "release. Please use `torch.testing.assert_close()` instead.", FutureWarning)
    if not isinstance(actual, Tensor):
        actual = tracegrad.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tracegrad.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(d, (0.0, 0.0)) for d in (actual.dtype, expected.dtype)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
