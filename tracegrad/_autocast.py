"""Autocast state and the casts it applies (layer L0: imports nothing from tracegrad).

``tracegrad.autocast`` pushes a (device type -> dtype) setting; functions on torch's autocast
op lists call :func:`cast` on their tensor inputs first, as torch's Autocast dispatch key does:
* ``"lower"`` (matmul, linear, conv, prelu, scaled_dot_product_attention...): floating inputs other than
  float64 go to the autocast dtype;
* ``"fp32"`` (losses; on CUDA also softmax/log_softmax/layer_norm/group_norm): they go to float32.
Only tensors on the autocast's device type are cast. The state is thread-local, like torch's.
"""
from __future__ import annotations

import threading

_local = threading.local()

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
                    t = t.to(target) if dt is not target else t
                elif op in FP32_OPS.get(kind_dev, ()) and dt.name != "float32":
                    t = t.float()
        out.append(t)
    return tuple(out) if len(out) != 1 else out[0]
