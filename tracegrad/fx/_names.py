"""Which torch name a tracegrad callable goes by, so graphs print and generate code as torch's
(``torch.relu``, ``torch.nn.functional.relu``, ``torch._C._nn.linear``), and the ``torch``
object generated code runs with, on which those same dotted paths reach tracegrad's functions."""
from __future__ import annotations

import sys

# searched in this order: torch.relu and Tensor.relu are one object in tracegrad, and torch
# names F.conv2d 'torch.conv2d' (the function lives in torch's top namespace first)
_NAMESPACES = (("torch", "tracegrad"), ("torch.nn.functional", "tracegrad.nn.functional"),
               ("torch.linalg", "tracegrad.linalg"), ("torch.fft", "tracegrad.fft"),
               ("torch.special", "tracegrad.special"))

# functions torch defines in another module than the one users call them from; torch.fx prints
# the defining module (read off torch 2.13 with torch.fx.node._get_qualified_name)
_DEFINED_IN = {}
for _name in ("atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
              "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu", "meshgrid", "norm", "split", "stft",
              "tensordot", "unique", "unique_consecutive", "unravel_index"):
    _DEFINED_IN[("torch", _name)] = "torch.functional"
for _name in ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_", "channel_shuffle", "conv1d", "conv2d",
              "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "cosine_similarity", "hardshrink", "native_channel_shuffle", "pairwise_distance", "pdist",
              "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_", "rrelu_", "selu_", "threshold_"):
    _DEFINED_IN[("torch.nn.functional", _name)] = "torch"
for _name in ("avg_pool2d", "avg_pool3d", "elu_", "gelu", "hardtanh_", "leaky_relu_", "linear", "one_hot",
              "scaled_dot_product_attention", "softplus", "softshrink"):
    _DEFINED_IN[("torch.nn.functional", _name)] = "torch._C._nn"
del _name


def torch_name(func) -> str | None:
    """``'torch.<path>.<name>'`` when ``func`` is the public tracegrad function of that name,
    else None."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None
    for torch_ns, ours in _NAMESPACES:
        mod = sys.modules.get(ours)
        if mod is not None and getattr(mod, name, None) is func:
            return f"{_DEFINED_IN.get((torch_ns, name), torch_ns)}.{name}"
    return None


def is_tensor_method(func) -> bool:
    """True when ``func`` is reached as a ``Tensor`` method but is no namespace function (the
    ``Tensor.add`` a ``tensor + proxy`` dispatches): torch records such calls as call_method."""
    from .._tensor.tensor import Tensor
    name = getattr(func, "__name__", None)
    return isinstance(name, str) and getattr(Tensor, name, None) is func and torch_name(func) is None


def type_repr(t) -> str:
    """How torch writes an annotation class: ``torch.Tensor``, ``int``, ``module.Class``."""
    from .._tensor.tensor import Tensor
    if t is Tensor:
        return "torch.Tensor"
    if t.__module__ == "builtins":
        return t.__qualname__
    return f"{t.__module__}.{t.__qualname__}"


class _TorchPath:
    """``torch`` (or ``torch._C``...) as generated code sees it: a path of ``_DEFINED_IN``
    resolves to the tracegrad function, anything else to the tracegrad attribute of that name."""

    def __init__(self, path: str, fallback):
        self._path, self._fallback = path, fallback

    def __getattr__(self, name):
        full = f"{self._path}.{name}"
        fn = _by_path().get(full)
        if fn is not None:
            return fn
        if full in ("torch._C", "torch._C._nn", "torch.functional"):
            import tracegrad
            return _TorchPath(full, {"torch._C": tracegrad._C}.get(full, tracegrad))
        return getattr(self._fallback, name)

    def __repr__(self):
        return f"<tracegrad as {self._path}>"


_BY_PATH = {}


def _by_path() -> dict:
    if not _BY_PATH:
        for (torch_ns, name), where in _DEFINED_IN.items():
            mod = sys.modules["tracegrad" + torch_ns[len("torch"):]]
            fn = getattr(mod, name, None)
            if fn is not None:
                _BY_PATH[f"{where}.{name}"] = fn
    return _BY_PATH


def torch_for_code() -> _TorchPath:
    """The object bound to ``torch`` in generated code."""
    import tracegrad
    import tracegrad.nn.functional  # noqa: F401  (the table reads it)
    return _TorchPath("torch", tracegrad)
