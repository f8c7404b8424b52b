"""Where torch's ``torch.nn.modules.<file>`` names live in tracegrad, when our file differs.

User code imports layers by torch's file (``from torch.nn.modules.conv import LazyConv2d``,
``from torch.nn.modules.loss import CTCLoss``); tracegrad groups some of them elsewhere
(``lazy.py``, ``loss_more.py``, ``layers_more.py``). Each of those torch files' modules here
answers the missing names through ``__getattr__`` (PEP 562), resolved on first use: a plain
import at the bottom of ``conv.py`` would be a cycle (``lazy.py`` builds on ``conv.py``).
"""
from __future__ import annotations

import importlib

_LAZY_CONV = ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
              "LazyConvTranspose3d", "_LazyConvXdMixin", "LazyModuleMixin")
_MORE_LOSSES = ("CTCLoss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
                "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss",
                "SoftMarginLoss", "TripletMarginWithDistanceLoss", "LinearCrossEntropyLoss",
                "LinearCrossEntropyOptions")
_MORE_POOLS = ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "_MaxUnpoolNd", "FractionalMaxPool2d",
               "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "_LPPoolNd", "AdaptiveMaxPool3d")

# torch's file -> {name: our file}
WHERE = {
    # transformer.py builds its layers from this file's activations: the names it defines that
    # torch's activation.py holds are answered lazily, not imported back here
    "activation": {"MultiheadAttention": "transformer", "NonDynamicallyQuantizableLinear": "linear"},
    "conv": {**dict.fromkeys(_LAZY_CONV, "lazy"), **dict.fromkeys(("_single", "_pair", "_triple",
                                                                   "_reverse_repeat_tuple"), "utils")},
    "instancenorm": dict.fromkeys(("LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
                                   "_LazyNormBase"), "lazy"),
    "linear": dict.fromkeys(("LazyLinear", "LazyModuleMixin"), "lazy"),
    "loss": {**dict.fromkeys(_MORE_LOSSES, "loss_more"), "PairwiseDistance": "distance"},
    "normalization": dict.fromkeys(("LocalResponseNorm", "CrossMapLRN2d"), "layers_more"),
    "pooling": {**dict.fromkeys(_MORE_POOLS, "layers_more"),
                **dict.fromkeys(("_single", "_pair", "_triple"), "utils")},
}


def module_getattr(module_name: str):
    """The ``__getattr__`` of ``tracegrad.nn.modules.<file>``: torch's names of that file that
    tracegrad defines in another; AttributeError (as any module) for the rest."""
    table = WHERE[module_name.rsplit(".", 1)[1]]
    package = module_name.rsplit(".", 1)[0]

    def __getattr__(name):
        src = table.get(name)
        if src is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{src}"), name)
    return __getattr__
