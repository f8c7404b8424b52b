"""``repr`` of tensors in torch's format: ``tensor([1., 2.], requires_grad=True)``.

One column format serves every element of a tensor (complex: one for the real parts, one for
the imaginary parts). It is chosen from the nonzero finite values, as torch does: integral
values print as ``1.``, others with ``precision`` decimals, and scientific notation when the
magnitudes span more than a factor 1000, exceed 1e8 or (non-integral) go below 1e-4. Values
are right-aligned to the widest of those values, so ``inf``/``nan`` do not widen the column.
More than ``threshold`` elements are summarised with ``...``, keeping ``edgeitems`` per edge;
rows wrap at ``linewidth``. ``set_printoptions`` changes these settings (``_state.PRINT_OPTS``).
"""
from __future__ import annotations

import math

import jax
import numpy as np

from .. import _state
from .._ops import dtypes as _dt
from .._ops.tracers import concrete_primal

_JaxTracer = jax.core.Tracer
_OPTS = _state.PRINT_OPTS
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
_NAME_EXTRA = len("tracegrad") - len("torch")   # how much longer a dtype's name prints here


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Mirrors ``torch.set_printoptions``: how ``repr`` prints tensors from now on.

    Args: precision (decimals, default 4); threshold (element count above which a tensor is
    summarised, default 1000); edgeitems (items kept per edge when summarised, default 3);
    linewidth (characters per line, default 80); profile (``'default'``, ``'short'`` or
    ``'full'``: sets the four above first); sci_mode (True/False forces scientific notation
    on/off, None lets each tensor choose). As torch, every call sets ``sci_mode`` (to None when
    not given) and an unknown profile name changes nothing."""
    if profile in _PROFILES:
        _OPTS.update(_PROFILES[profile])
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            _OPTS[key] = value
    _OPTS["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    """Mirrors ``torch._tensor_str.get_printoptions``: the current options as a dict of
    ``set_printoptions``' keywords."""
    _state.note_setting_read()
    return {k: _OPTS.get(k) for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Column:
    """The format shared by all elements of one (real) array: ``width`` and ``format(v)``."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci = floating, True, False
        prec = self.prec = _OPTS["precision"]
        flat = values.ravel()
        if not floating:
            self.width = max((len(_plain(v)) for v in flat.tolist()), default=1)
            return
        self.width = 1
        shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if shown.size:
            mag = np.abs(shown)
            lo, hi = float(mag.min()), float(mag.max())
            self.int_mode = bool(np.all(shown == np.ceil(shown)))
            self.sci = hi / lo > 1000.0 or hi > 1e8 or (not self.int_mode and lo < 1e-4)
            if _OPTS["sci_mode"] is not None:   # before the width: it is the forced notation's width
                self.sci = _OPTS["sci_mode"]
            if self.sci:
                texts = [f"{v:.{prec}e}" for v in shown.tolist()]
            elif self.int_mode:
                texts = [f"{v:.0f}." for v in shown.tolist()]
            else:
                texts = [f"{v:.{prec}f}" for v in shown.tolist()]
            self.width = max(len(t) for t in texts)
        # no nonzero finite value: torch keeps the plain notation whatever sci_mode says

    def format(self, v) -> str:
        if not self.floating:
            s = _plain(v)
        elif self.sci:
            s = f"{v:.{self.prec}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("." if math.isfinite(v) else "")
        else:
            s = f"{v:.{self.prec}f}"
        return s.rjust(self.width)


def _plain(v) -> str:
    return ("True" if v else "False") if isinstance(v, bool) else str(v)


class _Formats:
    """How to print one element: a real column, or a real and an imaginary column."""

    def __init__(self, sample, dtype):
        if dtype.is_complex:
            self.re, self.im = _Column(np.real(sample), True), _Column(np.imag(sample), True)
            self.width = self.re.width + self.im.width + 3   # ", " between items and the "j"
        else:
            self.re, self.im = _Column(sample, dtype.is_floating_point), None
            self.width = self.re.width + 2

    def element(self, v) -> str:
        if self.im is None:
            return self.re.format(v)
        imag = (self.im.format(v.imag) + "j").lstrip()
        return self.re.format(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _edges(arr, edge):
    """The elements a summarised print shows: ``edge`` items at each end of every dim."""
    for ax in range(arr.ndim):
        n = arr.shape[ax]
        if n > 2 * edge:
            arr = np.take(arr, np.r_[0:edge, n - edge:n], axis=ax)
    return arr


def format_array(arr, dtype, indent):
    """The bracketed body of a tensor's repr (``[1., 2.]``), ``indent`` columns after the prefix."""
    summarize = arr.size > _OPTS["threshold"]
    edge = _OPTS["edgeitems"]
    if summarize and not edge and arr.ndim:   # no items kept: torch prints the elision alone
        return "[...]"
    fmt = _Formats(_edges(arr, edge) if summarize else arr, dtype)

    def rec(a, ind):
        n = a.shape[0]
        cut = summarize and n > 2 * edge
        if a.ndim == 1:
            vals = a[:edge].tolist() + a[n - edge:].tolist() if cut else a.tolist()
            items = [fmt.element(v) for v in vals]
            if cut:
                items = items[:edge] + [" ..."] + items[edge:]   # torch's literal, not padded
            per_line = max(1, int((_OPTS["linewidth"] - ind) // fmt.width))
            lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (ind + 1)).join(lines) + "]"
        rows = list(range(edge)) + [None] + list(range(n - edge, n)) if cut else range(n)
        parts = ["..." if r is None else rec(a[r], ind + 1) for r in rows]
        return "[" + ("," + "\n" * (a.ndim - 1) + " " * (ind + 1)).join(parts) + "]"
    if arr.ndim == 0:
        return fmt.element(arr.item())
    return rec(arr, indent)


def _shows_dtype(dtype) -> bool:
    """torch leaves the dtype out for the default float dtype, its complex partner, int64 and bool."""
    default = _state.DEFAULT_DTYPE[0]
    complex_default = _dt.complex128 if default is _dt.float64 else _dt.complex64
    return dtype not in (default, complex_default, _dt.int64, _dt.bool_)


def tensor_repr(t, prefix="tensor("):
    """torch's ``repr`` of tensor ``t``, read duck-typed (``_value``, ``dtype``, ``device``,
    ``grad_fn``, ``requires_grad``): this module sits below ``tensor.py``, which imports it."""
    v = t._value
    if isinstance(v, _JaxTracer) and _state.CAPTURE[0] is None:
        p = concrete_primal(v)             # NOTE [concrete primals]: a func transform's value
        v = v if p is None else p
    dtype = t.dtype
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.device.type == "meta":      # no data to show (NOTE [meta tensors])
        body = "..."
        suffixes.append(f"size={tuple(v.shape)}")
        if dtype is not _state.DEFAULT_DTYPE[0]:   # no element tells the dtype: torch names it
            suffixes.append(f"dtype={dtype!r}")
    elif isinstance(v, _JaxTracer):
        body = f"<traced {tuple(v.shape)}>"
        if _shows_dtype(dtype):
            suffixes.append(f"dtype={dtype!r}")
    elif v.size == 0:
        body = "[]"
        if v.ndim != 1:
            suffixes.append(f"size={tuple(v.shape)}")
        if dtype is not _state.DEFAULT_DTYPE[0]:   # no element tells the dtype: torch names it
            suffixes.append(f"dtype={dtype!r}")
    else:
        body = format_array(printable(v), dtype, len(prefix))
        if not _OPTS["edgeitems"]:   # torch names the size when no edge items show it
            suffixes.append(f"size={tuple(v.shape)}")
        if _shows_dtype(dtype):
            suffixes.append(f"dtype={dtype!r}")
    suffixes += autograd_suffixes(t)
    tangent = t.__dict__.get("_fw")      # forward-mode AD's tangent (autograd/_forward_ad_impl.py)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return join_suffixes(prefix + body, suffixes, len(prefix))


def printable(v) -> np.ndarray:
    """A host array of ``v`` to format: half precision goes through float32, as torch prints it."""
    arr = np.asarray(v)
    if arr.dtype == _dt.bfloat16.np or arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    return arr


def autograd_suffixes(t) -> list:
    """``grad_fn=<Name>`` or ``requires_grad=True`` (or nothing), as the repr ends."""
    try:
        gf = t.grad_fn
    except RuntimeError:
        # as torch: a view whose history cannot be rebased (made under no_grad/inference_mode,
        # its base written in place since) raises on grad_fn; printing it must not
        return ["grad_fn=<Invalid>"]
    if gf is not None:
        return [f"grad_fn=<{type(gf).__name__}>"]
    return ["requires_grad=True"] if t.requires_grad else []


def join_suffixes(text, suffixes, indent, linewidth=None):
    """Appends ``, suffix`` items as torch's repr does: an item that would take the current last
    line past ``linewidth`` (the print option by default) goes on a new line indented by ``indent``."""
    linewidth = _OPTS["linewidth"] if linewidth is None else linewidth
    out = [text]
    line = len(text) - text.rfind("\n") + 1   # torch's count (one more than the visible length)
    for s in suffixes:
        # a suffix naming a dtype (``dtype=tracegrad.float64``) counts as long as torch's
        # (``dtype=torch.float64``): lines break where torch's do, and the text is torch's
        # but for the module's name
        n = len(s) - _NAME_EXTRA * s.count("tracegrad.")
        if line + n + 2 > linewidth:
            out.append(",\n" + " " * indent + s)
            line = indent + n
        else:
            out.append(", " + s)
            line += n + 2
    return "".join(out) + ")"
