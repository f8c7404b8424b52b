"""``GradScaler``: mirrors ``torch.amp.GradScaler`` -- dynamic loss scaling for low-precision
training. ``scale(loss)`` multiplies by the scale; ``step(optimizer)`` unscales the gradients,
checks them for inf/NaN and skips the step when any are found (a fused optimizer, marked
``_step_supports_amp_scaling``, gets the scale and the check as ``optimizer.grad_scale`` /
``optimizer.found_inf`` and unscales and skips by itself, as torch's); ``update()`` backs the scale
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
from .._lowering import masked_step
from .._lowering.capture import GraphBreak
from .._lowering.region import CallOnlyBreak
from .._tensor.device import cuda_devices
from .._ops.warn import warn as _warn

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
            # at the user's line, as torch's amp.GradScaler("cuda") names it
            _warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
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
        # as torch: no gradient at all records no inf check (step() then asserts)
        st["found_inf"] = _check_grads(optimizer, inv_scale)
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
        takes_scale = getattr(optimizer, "_step_supports_amp_scaling", False)
        if takes_scale and not compiler._tracing():
            return self._step_taking_the_scale(optimizer, st, args, kwargs)
        if takes_scale and st["stage"] is OptState.READY:
            # compiled: the masked step below, with the gradients unscaled only without an
            # overflow, as the fused step the eager branch calls leaves them
            st["found_inf"] = _check_grads(optimizer, self._scale.double().reciprocal().float(),
                                           keep_on_overflow=True)
            st["stage"] = OptState.UNSCALED
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if st["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if compiler._tracing() and _maskable(optimizer):
            retval = _masked_step(optimizer, st["found_inf"], args, kwargs)
        elif not st["found_inf"].item():
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def _step_taking_the_scale(self, optimizer, st, args, kwargs):
        """torch's branch for an optimizer whose step unscales itself (a fused one, marked
        ``_step_supports_amp_scaling``): the gradients are checked for inf/NaN but left scaled,
        and the step gets ``optimizer.grad_scale`` (None after ``unscale_``) and
        ``optimizer.found_inf`` for its call only; it skips its own update on an overflow
        (NOTE [amp scaling inputs] in tracegrad/optim/optimizer.py). A compiled step keeps the
        masked path of ``step``, which reads no value on the host."""
        grad_scale = None
        if st["stage"] is OptState.READY:
            st["found_inf"] = _check_grads(optimizer, None)
            grad_scale = self._scale.float()
        found_inf = st["found_inf"] if st["found_inf"] is not None else tracegrad.zeros(())
        optimizer.grad_scale, optimizer.found_inf = grad_scale, found_inf
        retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        del optimizer.grad_scale, optimizer.found_inf
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
                self._update_scale(sum(found[1:], found[0]))
        # emptied, not rebound: a compiled step that updates leaves the scaler's Python state as
        # it found it (a new dict would be a Python side effect, run eagerly)
        self._per_optimizer_states.clear()

    def _update_scale(self, found_inf):
        """torch's ``_amp_update_scale_`` as tensor ops (no value read on the host, so a compiled
        step keeps it in its program): after an inf/NaN (``found_inf`` nonzero) the scale backs off
        and the growth tracker restarts; after ``growth_interval`` clean steps in a row the scale
        grows, unless that would make it inf, and the tracker restarts. The products are taken in
        float64 and rounded to the scale's float32, as torch's kernel."""
        scale, tracker = self._scale, self._growth_tracker
        overflow = found_inf != 0
        successful = tracker + 1
        grow = overflow.logical_not() & (successful == self._growth_interval)
        wide = scale.double()
        backed_off = (wide * self._backoff_factor).float()
        grown = (wide * self._growth_factor).float()
        scale.copy_(tracegrad.where(overflow, backed_off,
                                    tracegrad.where(grow & grown.isfinite(), grown, scale)))
        tracker.copy_(tracegrad.where(overflow | grow, tracegrad.zeros_like(tracker), successful))

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


def _check_grads(optimizer, inv_scale, keep_on_overflow=False):
    """Whether ``optimizer``'s gradients hold an inf/NaN (a float32 0-d Tensor, None when no
    parameter has a gradient); with ``inv_scale`` each gradient is multiplied by it in place
    (with ``keep_on_overflow``, only when none holds an inf/NaN: a fused step's unscaling)."""
    found = tracegrad.zeros((), dtype=tracegrad.float32)
    grads = []
    with tracegrad.no_grad():
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if g.dtype is tracegrad.float16 and inv_scale is not None:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grads.append(g)
                # a sparse gradient (an Embedding's with sparse=True): its values, as torch's
                values = g.coalesce()._values() if g.is_sparse else g
                found = tracegrad.maximum(found, (~values.isfinite()).any().float())
                if inv_scale is not None and not keep_on_overflow:
                    g.mul_(inv_scale.to(g.dtype))
        if inv_scale is not None and keep_on_overflow:
            factor = tracegrad.where(found != 0, tracegrad.ones_like(inv_scale), inv_scale)
            for g in grads:
                g.mul_(factor.to(g.dtype))
    return found if grads else None


def _maskable(optimizer) -> bool:
    """Whether ``GradScaler.step`` in a trace can run ``optimizer``'s step and keep the old values
    after an inf/NaN (NOTE [skipped steps in a trace], ``_lowering/masked_step.py``): no step
    hooks, whose Python would run on every call. An optimizer whose lr scheduler has not seen
    it step yet (eager's skipped step leaves it unmarked) runs this call eagerly."""
    hooks = tracegrad.optim.optimizer     # (reached at run time: optim imports amp)
    if hooks._global_optimizer_pre_hooks or hooks._global_optimizer_post_hooks \
            or getattr(optimizer, "_optimizer_step_pre_hooks", None) or getattr(optimizer, "_optimizer_step_post_hooks", None):
        return False
    if hasattr(optimizer.step, "_wrapped_by_lr_sched") and not getattr(optimizer, "_opt_called", False):
        raise CallOnlyBreak("GradScaler.step: the optimizer has not stepped yet, and its lr scheduler notes "
                            "the first step (which an inf/NaN gradient skips): this call runs eagerly")
    return True


def _state_layout(optimizer):
    """Per parameter in ``optimizer.state``: its entries' names, tensor identities and Python values."""
    return {id(p): tuple((k, id(v) if isinstance(v, tracegrad.Tensor) else ("value", v)) for k, v in d.items())
            if isinstance(d, dict) else ("value", d) for p, d in optimizer.state.items()}


def _masked_step(optimizer, found_inf, args, kwargs):
    """``optimizer.step(*args, **kwargs)`` inside a trace, its writes undone where ``found_inf``
    is nonzero (NOTE [skipped steps in a trace])."""
    tensors = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            tensors.append(p)
            if p.grad is not None:
                tensors.append(p.grad)
    tensors += [v for d in optimizer.state.values() if isinstance(d, dict) for v in d.values()
                if isinstance(v, tracegrad.Tensor)]
    layout = _state_layout(optimizer)
    retval = masked_step.run_unless(found_inf._value != 0, tensors, lambda: optimizer.step(*args, **kwargs))
    after = _state_layout(optimizer)
    if after != layout:
        if any(layout.get(k) != v for k, v in after.items() if k in layout and layout[k]):
            raise GraphBreak("GradScaler.step: the optimizer step rebinds tensors or Python values in its state, "
                             "which a skipped step (inf/NaN gradients) would leave as they were")
        # its first step creates the state: eager's skipped step creates none
        raise CallOnlyBreak("GradScaler.step: the optimizer's first step creates its state, which a skipped "
                            "step (inf/NaN gradients) would not: this call runs eagerly")
    if retval is not None:
        raise GraphBreak("GradScaler.step: the optimizer step returned a value, which a skipped step "
                         "(inf/NaN gradients) would not")
    return retval
