"""Autocast state and the casts it applies (layer L0: imports nothing from tracegrad).

``tracegrad.autocast`` pushes a (device type -> dtype) setting; functions on torch's autocast
op lists call :func:`cast` on their tensor inputs first, as torch's Autocast dispatch key does:
* ``"lower"`` (matmul, linear, conv, prelu, scaled_dot_product_attention...): floating inputs other than
  float64 go to the autocast dtype;
* ``"fp32"`` (losses; on CUDA also softmax/log_softmax/layer_norm/group_norm): they go to float32.
Only tensors on the autocast's device type are cast. The state is thread-local, like torch's.

NOTE [autocast cast cache]
As torch's ``cached_cast``, a "lower" cast of a float32 leaf that requires grad and is no view
(a model weight) is made once and reused until the outermost ``autocast`` exits
(``clear_cache``): every use of the weight in a forward, and a backward that enters autocast
again, shares one ``ToCopyBackward0`` node and one low-precision copy. The cast is made with
grad on even under ``no_grad`` (a later grad-enabled use must still reach the weight), never
inside ``inference_mode`` (its tensors cannot join a graph), never while a region is captured
(a trace's cast holds traced values), and not with the cache disabled. The cache is
process-wide, as torch's (a backward run from another thread finds the forward's cast).
Differs from torch: the key is (weight, dtype); torch keys by the weight alone, so a float16
autocast nested in a bfloat16 one got the bfloat16 copy back (mm then refused the dtype mix).
"""
from __future__ import annotations

import contextlib
import threading
import weakref

from . import _state as _st

_local = threading.local()
# NOTE [autocast cast cache]: (id(weight), dtype) -> (weakref to the weight, its cast)
_CAST_CACHE: dict = {}
_CACHE_ENABLED: list = [True]   # torch.is_autocast_cache_enabled(); each autocast sets its own

# torch's op lists that tracegrad's functions consult (the rest of torch's lists are ops
# tracegrad does not have, or already compute in float32)
# losses on both of torch's float32 lists (CPU and CUDA)
_MORE_LOSSES = ("cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
                "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss")
FP32_OPS = {
    "cpu": {"mse_loss", "nll_loss", "cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
            "binary_cross_entropy", "binary_cross_entropy_with_logits", "avg_pool3d", *_MORE_LOSSES},
    "cuda": {"mse_loss", "nll_loss", "cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
             "binary_cross_entropy_with_logits", "softmax", "log_softmax", "layer_norm", "group_norm", *_MORE_LOSSES},
}


def _state() -> dict:
    s = getattr(_local, "state", None)
    if s is None:
        s = _local.state = {}
    return s


def dtype_for(device_type: str):
    """The autocast dtype active for ``device_type``, or None when autocast is off there."""
    return _state().get(device_type)


def set_dtype(device_type: str, dtype) -> object:
    """Set (dtype) or clear (None) autocast for ``device_type``; returns the previous value."""
    s = _state()
    prev = s.get(device_type)
    if dtype is None:
        s.pop(device_type, None)
    else:
        s[device_type] = dtype
    return prev


def active() -> bool:
    return bool(getattr(_local, "state", None))


def key() -> tuple:
    """The active settings as a hashable (part of ``tracegrad.compile``'s guards: a program
    traced outside autocast must not serve calls inside it)."""
    s = getattr(_local, "state", None)
    return tuple(sorted((d, t.name) for d, t in s.items())) if s else ()


def cast(kind: str, op: str, *tensors):
    """Cast ``tensors`` (None and non-tensors pass through) for op ``op`` of list ``kind``
    ('lower' or 'fp32') under the active autocast. Returns a tuple (or the one tensor)."""
    s = getattr(_local, "state", None)
    if not s:
        return tensors if len(tensors) != 1 else tensors[0]
    out = []
    for t in tensors:
        dt = getattr(t, "dtype", None)
        if dt is not None and dt.is_floating_point and dt.name != "float64":
            kind_dev = t.device.type
            target = s.get(kind_dev)
            if target is not None:
                if kind == "lower":
                    if dt is not target:
                        t = _cached_cast(t, target) if dt.name == "float32" and t.requires_grad else t.to(target)
                elif op in FP32_OPS.get(kind_dev, ()) and dt.name != "float32":
                    t = t.float()
        out.append(t)
    return tuple(out) if len(out) != 1 else out[0]


def _cached_cast(t, target):
    """``t.to(target)`` through the cast cache (NOTE [autocast cast cache]); ``t`` is float32 and
    requires grad."""
    if (not _CACHE_ENABLED[0] or t._base is not None or t.grad_fn is not None
            or _st.CAPTURE[0] is not None or _st.in_inference_mode()):
        return t.to(target)
    key = (id(t), target)
    hit = _CAST_CACHE.get(key)
    if hit is not None and hit[0]() is t:
        return hit[1]
    slot, prev = _st.swap_grad_enabled(True)
    try:
        out = t.to(target)
    finally:
        _st.GRAD_MODE.v[slot] = prev
    _CAST_CACHE[key] = (weakref.ref(t), out)
    return out


def add_nesting(step: int) -> int:
    """Move this thread's autocast nesting depth by ``step`` (never below 0); returns the new depth."""
    depth = _local.depth = max(getattr(_local, "depth", 0) + step, 0)
    return depth


@contextlib.contextmanager
def entered(settings):
    """Run a block under the autocast ``settings`` (a dict device type -> dtype, a snapshot of
    ``_state()``) as an ``autocast`` context would (checkpoint's recomputation, a replayed
    segment): one nesting level, so the casts cached inside are dropped when the outermost level
    closes (NOTE [autocast cast cache]); the outer settings come back on exit."""
    state = _state()
    outer = dict(state)
    state.clear()
    state.update(settings)
    add_nesting(1)
    try:
        yield
    finally:
        if add_nesting(-1) == 0:
            clear_cache()
        state.clear()
        state.update(outer)


def clear_cache() -> None:
    """Drop every cached cast (``torch.clear_autocast_cache``; the outermost autocast's exit)."""
    _CAST_CACHE.clear()
