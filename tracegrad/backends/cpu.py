"""Mirrors ``torch.backends.cpu``."""


def get_cpu_capability() -> str:
    """Mirrors ``torch.backends.cpu.get_cpu_capability``: XLA chooses its vector ISA itself."""
    return "DEFAULT"
