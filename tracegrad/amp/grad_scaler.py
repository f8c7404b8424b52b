"""``GradScaler``: mirrors ``torch.amp.GradScaler`` -- dynamic loss scaling for low-precision
training. ``scale(loss)`` multiplies by the scale; ``step(optimizer)`` unscales the gradients,
checks them for inf/NaN and skips the step when any are found; ``update()`` backs the scale
off after an overflow and grows it after ``growth_interval`` clean steps. Disabled, every
method is a pass-through (``scale`` returns its input, ``step`` calls ``optimizer.step``).

The per-step overflow decision reads one value on the host (``found_inf``), as torch's eager
scaler does; the scale and growth tracker stay tensors.
"""
from __future__ import annotations

import warnings
from enum import Enum

import tracegrad

from .. import compiler
from .._tensor.device import cuda_devices

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Mirrors ``torch.amp.GradScaler(device='cuda', init_scale=2**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``.

    Raises: RuntimeError for out-of-order calls (``unscale_`` twice or after ``step``, ``step``
    twice before ``update``, a ``closure`` while enabled, loading an empty state dict);
    ValueError when unscaling float16 gradients; AssertionError from ``update``/``step`` when no
    inf check was recorded (as torch). A 'cuda' scaler without a GPU warns and disables itself.
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        if enabled and getattr(device, "type", device) == "cuda" and not cuda_devices():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            enabled = False
        self._enabled = enabled
        if enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale, self._growth_factor, self._backoff_factor = init_scale, growth_factor, backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._scale = None
            self._growth_tracker = None
            self._per_optimizer_states = {}

    # ---- scale ----------------------------------------------------------------------------------
    def _lazy_init(self):
        self._scale = tracegrad.full((), self._init_scale, dtype=tracegrad.float32)
        self._growth_tracker = tracegrad.full((), self._init_growth_tracker, dtype=tracegrad.int32)

    def scale(self, outputs):
        """Multiplies a tensor (or nested lists/tuples of tensors) by the scale factor."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init()
        if hasattr(outputs, "dtype"):
            return outputs * self._scale.to(outputs.dtype if outputs.dtype.is_floating_point else self._scale.dtype)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _opt_state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    # ---- unscale / step / update ----------------------------------------------------------------
    def unscale_(self, optimizer):
        """Divides ``optimizer``'s gradients by the scale in place and records whether any is
        inf/NaN. At most once per optimizer between ``update`` calls, before ``step``."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        st = self._opt_state(optimizer)
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found = tracegrad.zeros((), dtype=tracegrad.float32)
        with tracegrad.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype is tracegrad.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    found = tracegrad.maximum(found, (~p.grad.isfinite()).any().float())
                    p.grad.mul_(inv_scale.to(p.grad.dtype))
        st["found_inf"] = found
        st["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales (unless ``unscale_`` was called) and calls ``optimizer.step(*args, **kwargs)``
        unless the gradients held inf/NaN; returns its result (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        st = self._opt_state(optimizer)
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if st["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not st["found_inf"].item():
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Sets the next scale: ``new_scale`` if given, else backs off by ``backoff_factor`` after
        an overflow in any optimizer this iteration, or grows by ``growth_factor`` after
        ``growth_interval`` consecutive clean iterations."""
        if not self._enabled:
            return
        self._check_scale("update")
        with tracegrad.no_grad():
            if new_scale is not None:
                if isinstance(new_scale, float):
                    self._scale.fill_(new_scale)
                else:
                    # torch asserts the device, size and requires_grad (its copy_ converts the
                    # dtype); it reads new_scale.device first, so a non-tensor is an AttributeError
                    reason = "new_scale should be a float or a 1-element torch.FloatTensor with requires_grad=False."
                    if not isinstance(new_scale, tracegrad.Tensor):
                        raise AttributeError(f"GradScaler.update: '{type(new_scale).__name__}' object has no "
                                             f"attribute 'device'; {reason}")
                    if new_scale.numel() != 1 or new_scale.requires_grad:
                        raise AssertionError(reason)
                    self._scale.copy_(new_scale)   # (as torch: a 1-element 1-d scale does not fit the 0-d one)
            else:
                found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
                if not found:
                    raise AssertionError("No inf checks were recorded prior to update.")
                overflow = bool(sum(f.item() for f in found))
                if overflow:
                    self._scale.mul_(self._backoff_factor)
                    self._growth_tracker.zero_()
                else:
                    grown = self._growth_tracker + 1
                    if grown.item() == self._growth_interval:
                        self._scale.mul_(self._growth_factor)
                        self._growth_tracker.zero_()
                    else:
                        self._growth_tracker.copy_(grown)
        self._per_optimizer_states = {}

    def _check_scale(self, fn):
        if self._scale is None:
            raise AssertionError(f"Attempted {fn} but _scale is None.  This may indicate your script did not use "
                                 f"scaler.scale(loss or outputs) earlier in the iteration.")

    # ---- queries and state ----------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (a float); 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        """``growth_factor``; read inside a compiled function it is guarded (``_read``)."""
        return self._read("_growth_factor")

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """``backoff_factor``; read inside a compiled function it is guarded (``_read``)."""
        return self._read("_backoff_factor")

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """``growth_interval``; read inside a compiled function it is guarded (``_read``)."""
        return self._read("_growth_interval")

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()

    def is_enabled(self) -> bool:
        """Whether the scaler is enabled; read inside a compiled function it is guarded."""
        return self._read("_enabled")

    def _read(self, name):
        """``self.<name>``, a Python value that a compiled function reading it through these
        getters would bake into its program: guarded then (``compiler._guard_read``), so a
        ``set_growth_factor`` between calls traces again instead of returning the old number."""
        if compiler._tracing():
            compiler._guard_read(self, name)
        return getattr(self, name)

    def state_dict(self) -> dict:
        """torch's layout: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
        (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
