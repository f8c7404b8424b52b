"""Mirrors ``torch.fx.experimental``: only ``optimization.fuse`` so far."""
