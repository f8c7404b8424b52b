"""Mirrors ``torch.backends.mha``: the flag that lets ``nn.TransformerEncoder`` take torch's
fast inference path (nested tensors: padded positions come out as zeros)."""

_FASTPATH = [True]


def get_fastpath_enabled() -> bool:
    """Mirrors ``torch.backends.mha.get_fastpath_enabled``: whether the fast path may be taken
    (True by default)."""
    return _FASTPATH[0]


def set_fastpath_enabled(value: bool) -> None:
    """Mirrors ``torch.backends.mha.set_fastpath_enabled``: with False, ``nn.TransformerEncoder``
    always runs its layers on the padded batch, as torch's math path."""
    _FASTPATH[0] = bool(value)
