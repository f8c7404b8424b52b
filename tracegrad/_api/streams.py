"""``tracegrad.Stream`` and ``tracegrad.Event``: torch's device-generic stream and event
objects with the semantics of torch's CPU build.

On CPU torch's stream is a do-nothing handle (stream id 0, device index -1, always idle) and
its events cannot be recorded ("cpu backend doesn't support events."). tracegrad runs every
device's work through JAX, which orders it by data dependence: there is no user-visible
stream to hand out, so every device type gets the CPU behaviour, and 'cuda' without a GPU gets
torch's CPU-build error.
"""
from __future__ import annotations

from .._tensor.device import cuda_devices, device as _device

_NO_EVENTS = "cpu backend doesn't support events."
_TYPE_CODES = {"cpu": 0, "cuda": 1, "meta": 14}   # torch's DeviceType numbers (Stream.device_type)


def _parse(device):
    d = _device("cpu" if device is None else device)
    if d.type == "cuda" and not cuda_devices():
        raise RuntimeError("PyTorch is not linked with support for cuda devices")
    return d.type, (-1 if d.index is None else d.index)


class Stream:
    """Mirrors ``torch.Stream(device=None, *, priority=0)`` as torch's CPU build: ``query()``
    is True, ``synchronize()``/``wait_event()`` return at once, ``wait_stream()``,
    ``record_event()`` and ``native_handle`` raise RuntimeError (no events on CPU). A context manager that changes nothing. Equal streams: same device type, index and id."""

    def __init__(self, device=None, *, priority=0, stream_id=None, device_index=None, device_type=None):
        if stream_id is not None:   # torch's (stream_id, device_index, device_type) form
            names = {code: name for name, code in _TYPE_CODES.items()}
            if device_type not in names:
                raise RuntimeError(f"torch.Stream: device type {device_type} is not supported here; use one of "
                                   f"{sorted(names)} (cpu, cuda, meta)")
            self._type, self.device_index, self.stream_id = names[device_type], int(device_index), int(stream_id)
        else:
            self._type, self.device_index = _parse(device)
            self.stream_id = 0
        self.priority = priority

    @property
    def device_type(self) -> int:
        """torch's DeviceType number (0 cpu, 1 cuda, 14 meta)."""
        return _TYPE_CODES[self._type]

    @property
    def device(self):
        return _device(self._type, None if self.device_index < 0 else self.device_index)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Returns at once: eager results are ready when read."""

    def wait_stream(self, stream) -> None:
        raise RuntimeError(_NO_EVENTS)   # torch records an event on ``stream`` to wait on

    def wait_event(self, event) -> None:
        """Returns at once (an event is never recorded on CPU)."""

    def record_event(self, event=None):
        raise RuntimeError(_NO_EVENTS)

    @property
    def native_handle(self):
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def is_capturing(self) -> bool:
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __eq__(self, other):
        return isinstance(other, Stream) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self._type, self.device_index, self.stream_id)

    def __repr__(self):
        return (f"torch.Stream device_type={self._type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """Mirrors ``torch.Event(device=None, *, enable_timing=False, blocking=False,
    interprocess=False)`` as torch's CPU build: ``record()`` raises RuntimeError (no events on
    CPU), ``query()`` is True, ``synchronize()``/``wait()`` return at once; ``elapsed_time``
    raises ValueError (timing not enabled on both, or, as always on CPU, events never recorded);
    ``ipc_handle`` raises NotImplementedError."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self.device_type, self.device_index = _parse(device)
        self.enable_timing = bool(enable_timing)
        self.event_id = 0

    @property
    def device(self):
        return _device(self.device_type, None if self.device_index < 0 else self.device_index)

    def record(self, stream=None) -> None:
        raise RuntimeError(_NO_EVENTS)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Returns at once (nothing was recorded)."""

    def wait(self, stream=None) -> None:
        """Returns at once (nothing was recorded)."""

    def elapsed_time(self, end_event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def ipc_handle(self):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if you need this!")

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if you need this!")

    def __repr__(self):
        return (f"torch.Event device_type={self.device_type}, device_index={self.device_index}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")
