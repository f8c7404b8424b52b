"""Padding layers: mirror ``torch.nn.ReflectionPad1d/2d/3d``, ``ReplicationPad*``, ``CircularPad*``,
``ConstantPad*`` and ``ZeroPad*``, all thin wrappers over ``nn.functional.pad``."""
from __future__ import annotations

from .. import functional as F
from .module import Module


def _pairs(padding, nd):
    # as torch's layers: a non-sequence is repeated, a sequence kept as given (F.pad checks it
    # in forward: a 2-tuple given to ZeroPad2d pads the last dim only)
    if isinstance(padding, (str, bytes)) or not hasattr(padding, "__iter__"):
        return (padding,) * (2 * nd)
    return tuple(padding)


class _PadNd(Module):
    _mode = "constant"
    _nd = 1
    _zero = False

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = _pairs(padding, self._nd)
        if value is not None:
            self.value = value

    def forward(self, input):
        if self._mode == "circular" and input.dim() not in (self._nd + 1, self._nd + 2):
            # torch's CircularPad*d checks the rank itself (ValueError), before F.pad would
            raise ValueError(f"expected {self._nd + 1}D or {self._nd + 2}D input (got {input.dim()}D input)")
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not self._zero:
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


# torch's intermediate classes (``isinstance(m, nn.modules.padding._ReflectionPadNd)``; ZeroPad2d
# is a ConstantPad2d): one per mode, the layers per rank below them
class _ConstantPadNd(_PadNd):
    _mode = "constant"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


_BASES = {"reflect": _ReflectionPadNd, "replicate": _ReplicationPadNd, "circular": _CircularPadNd,
          "constant": _ConstantPadNd}


def _make(name, mode, nd, doc, zero):
    base = _BASES[mode]
    if mode != "constant":
        def init(self, padding):
            _PadNd.__init__(self, padding)
    elif zero:
        base = globals()[f"ConstantPad{nd}d"]

        def init(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    else:
        def init(self, padding, value):
            _PadNd.__init__(self, padding, value)
    return type(name, (base,), {"_nd": nd, "_zero": zero, "__init__": init, "__doc__": doc,
                                "__module__": __name__})


_DOC = ("Mirrors ``torch.nn.{name}``: pads the last {nd} dim(s) of ``(N, C, *)`` or unbatched input; "
        "``padding`` an int or a {n2}-tuple (left, right{more}). {extra}")
_EXTRA = {"reflect": "grad_fn ``ReflectionPad{nd}DBackward0``; RuntimeError if a pad is not smaller than its dim.",
          "replicate": "grad_fn ``ReplicationPad{nd}DBackward0``.",
          "circular": "Wraps around; RuntimeError if a pad exceeds its dim, ValueError for an input of "
                      "another rank.",
          "constant": "grad_fn ``ConstantPadNdBackward0``."}

for _nd in (1, 2, 3):
    for _prefix, _mode, _zero in (("Reflection", "reflect", False), ("Replication", "replicate", False),
                                  ("Circular", "circular", False), ("Constant", "constant", False),
                                  ("Zero", "constant", True)):
        _name = f"{_prefix}Pad{_nd}d"
        _doc = _DOC.format(name=_name, nd=_nd, n2=2 * _nd, more=", top, bottom" if _nd > 1 else "",
                           extra=_EXTRA[_mode].format(nd=_nd))
        globals()[_name] = _make(_name, _mode, _nd, _doc, _zero)

__all__ = [f"{p}Pad{n}d" for n in (1, 2, 3) for p in ("Reflection", "Replication", "Circular", "Constant", "Zero")]
