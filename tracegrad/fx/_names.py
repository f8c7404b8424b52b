"""Which torch name a tracegrad callable goes by, so graphs print and generate code as torch's
(``torch.relu``, ``torch.nn.functional.relu``): generated code runs with ``torch`` bound to
``tracegrad``, so the same dotted path reaches the tracegrad function."""
from __future__ import annotations

import sys

# searched in this order: torch.relu and Tensor.relu are one object in tracegrad, and torch
# names F.conv2d 'torch.conv2d' (the function lives in torch's top namespace first)
_NAMESPACES = (("torch", "tracegrad"), ("torch.nn.functional", "tracegrad.nn.functional"),
               ("torch.linalg", "tracegrad.linalg"), ("torch.fft", "tracegrad.fft"),
               ("torch.special", "tracegrad.special"))


def torch_name(func) -> str | None:
    """``'torch.<path>.<name>'`` when ``func`` is the public tracegrad function of that name,
    else None."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None
    for torch_ns, ours in _NAMESPACES:
        mod = sys.modules.get(ours)
        if mod is not None and getattr(mod, name, None) is func:
            return f"{torch_ns}.{name}"
    return None


def is_tensor_method(func) -> bool:
    """True when ``func`` is reached as a ``Tensor`` method but is no namespace function (the
    ``Tensor.add`` a ``tensor + proxy`` dispatches): torch records such calls as call_method."""
    from .._tensor.tensor import Tensor
    name = getattr(func, "__name__", None)
    return isinstance(name, str) and getattr(Tensor, name, None) is func and torch_name(func) is None
