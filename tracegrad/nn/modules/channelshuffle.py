"""Mirrors ``torch.nn.modules.channelshuffle``."""
from .layers_more import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
