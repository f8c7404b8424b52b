"""Mirror ``torch.nn.Flatten`` and ``torch.nn.Unflatten``."""
from __future__ import annotations

from .module import Module


class Flatten(Module):
    """Mirrors ``torch.nn.Flatten``: flattens dims ``start_dim..end_dim`` (default 1..-1)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Mirrors ``torch.nn.Unflatten``: splits ``dim`` into ``unflattened_size`` (a tuple or list of
    ints; TypeError otherwise, as torch)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type {}".format(
                type(unflattened_size).__name__))
        for pos, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(elem).__name__} at pos {pos}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
