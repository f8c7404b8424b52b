"""Mirrors ``torch.utils.data._utils``: its ``collate`` module under torch's path
(``from torch.utils.data._utils.collate import default_collate`` is common in user code)."""
from . import collate  # noqa: F401
