"""``repr`` of tensors in torch's format: ``tensor([1., 2.], requires_grad=True)``.

Floats print with 4 decimals (or as ``1.`` when all are integral, or in scientific notation
when the range is wide), columns right-aligned, rows wrapped like torch; more than 1000
elements are summarised with ``...`` keeping 3 items per edge.
"""
from __future__ import annotations

import jax
import numpy as np

from .._ops import dtypes as _dt

_DEFAULT_SHOWN = ("float32", "complex64", "int64", "bool")
_JaxTracer = jax.core.Tracer


def _formatter(values, dtype):
    if dtype.is_floating_point:
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return lambda v: _special(v) or f"{v:.4f}"
        a = np.abs(finite.astype(np.float64))
        nz = a[a != 0]
        # torch's _Formatter: integral values print as "1." unless the range is wide
        if np.all(finite == np.round(finite)):
            if nz.size and (nz.max() / nz.min() > 1000 or nz.max() > 1e8):
                return lambda v: _special(v) or f"{v:.4e}"
            return lambda v: _special(v) or f"{v:.0f}."
        if nz.size and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or nz.min() < 1e-4):
            return lambda v: _special(v) or f"{v:.4e}"
        return lambda v: _special(v) or f"{v:.4f}"
    if dtype is _dt.bool_:
        return lambda v: "True" if v else "False"
    return lambda v: str(int(v))


def _complex_formatter(sample, dtype):
    """torch's complex format: the real and imaginary parts each get the float formatter of
    all real (imaginary) parts; the real part is right-aligned, the imaginary part follows
    with its sign and ``j`` (``1.+2.j``). Returns (format, element width, per-line width)."""
    real_dt = dtype.to_real()
    re = np.real(sample).astype(np.float64)
    im = np.imag(sample).astype(np.float64)
    fr, fi = _formatter(re, real_dt), _formatter(im, real_dt)
    # torch's widths count the nonzero finite values only
    wr = max((len(fr(v)) for v in re.ravel() if v != 0 and np.isfinite(v)), default=0)
    wi = max((len(fi(v)) for v in im.ravel() if v != 0 and np.isfinite(v)), default=0)

    def fmt(v):
        v = complex(v)
        imag = fi(v.imag)
        if not imag.startswith("-") and not imag.startswith("+"):
            imag = "+" + imag
        return fr(v.real).rjust(wr) + imag + "j"
    return fmt, 0, wr + wi + 1


def _special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _summarize(arr, edge=3):
    if arr.ndim == 0 or arr.shape[0] <= 2 * edge:
        return arr
    return np.concatenate([arr[:edge], arr[-edge:]])


def format_array(arr, dtype, indent):
    summarize = arr.size > 1000
    sample = arr
    if summarize:
        sample = arr
        for ax in range(arr.ndim):
            idx = np.r_[0:min(3, arr.shape[ax]), max(arr.shape[ax] - 3, 0):arr.shape[ax]] if arr.shape[ax] > 6 else np.arange(arr.shape[ax])
            sample = np.take(sample, idx, axis=ax)
    if dtype.is_complex:
        fmt, width, per_width = _complex_formatter(sample, dtype)
    else:
        fmt = _formatter(sample.astype(np.float64) if dtype.is_floating_point else sample, dtype)
        flat = [fmt(v) for v in sample.ravel()]
        width = per_width = max((len(s) for s in flat), default=0)

    def rec(a, ind):
        if a.ndim == 0:
            return fmt(a.item()).rjust(width)
        n = a.shape[0]
        if a.ndim == 1:
            items = [fmt(v).rjust(width) for v in (a[:3].tolist() + a[-3:].tolist() if summarize and n > 6 else a.tolist())]
            if summarize and n > 6:
                items = items[:3] + [" ..."] + items[3:]   # torch's literal, not padded
            per_line = max(1, (80 - ind) // (per_width + 2))
            lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (ind + 1)).join(lines) + "]"
        rows = list(range(n))
        if summarize and n > 6:
            rows = [0, 1, 2, None, n - 3, n - 2, n - 1]
        parts = ["..." if r is None else rec(a[r], ind + 1) for r in rows]
        sep = "," + "\n" * (a.ndim - 1) + " " * (ind + 1)
        return "[" + sep.join(parts) + "]"
    return rec(arr, indent)


def tensor_repr(t, prefix="tensor("):
    """torch's ``repr`` of tensor ``t``, read duck-typed (``_value``, ``dtype``, ``device``,
    ``grad_fn``, ``requires_grad``): this module sits below ``tensor.py``, which imports it."""
    v = t._value
    dtype = t.dtype
    suffixes = []
    if isinstance(v, _JaxTracer):
        body = f"<traced {tuple(v.shape)}>"
    else:
        arr = np.asarray(v)
        if arr.dtype == _dt.bfloat16.np:
            arr = arr.astype(np.float32)
        if arr.size == 0 and arr.ndim != 1:
            body = "[]"
            suffixes.append(f"size={tuple(arr.shape)}")
        else:
            body = format_array(arr, dtype, len(prefix))
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if dtype.name not in _DEFAULT_SHOWN or (arr.size == 0 if not isinstance(v, _JaxTracer) else False) and dtype.name != "float32":
        suffixes.append(f"dtype={dtype!r}")
    gf = t.grad_fn
    if gf is not None:
        suffixes.append(f"grad_fn=<{type(gf).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    tangent = t.__dict__.get("_fw")      # forward-mode AD's tangent (autograd/_forward_ad_impl.py)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return join_suffixes(prefix + body, suffixes, len(prefix))


def join_suffixes(text, suffixes, indent, linewidth=80):
    """Appends ``, suffix`` items as torch's repr does: an item that would take the current last
    line past ``linewidth`` goes on a new line indented by ``indent``."""
    out = [text]
    line = len(text) - text.rfind("\n") + 1   # torch's count (one more than the visible length)
    for s in suffixes:
        if line + len(s) + 2 > linewidth:
            out.append(",\n" + " " * indent + s)
            line = indent + len(s)
        else:
            out.append(", " + s)
            line += len(s) + 2
    return "".join(out) + ")"
