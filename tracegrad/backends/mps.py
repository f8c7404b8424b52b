"""Mirrors ``torch.backends.mps``: JAX has no Metal backend here."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
