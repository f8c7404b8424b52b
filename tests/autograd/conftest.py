# Loads the shared parity helpers (tests/seeds/_parity.py) and this directory's graph
# helpers (_ag.py) under unique module names, so tests can `from _ag import ...` without
# colliding with other directories' helpers (test directories are not packages).
import importlib.util
import pathlib
import sys

_here = pathlib.Path(__file__).parent
for _name, _path in (("_seeds_parity", _here.parent / "seeds" / "_parity.py"),
                     ("_ag", _here / "_ag.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, _path)
        _mod = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _mod
        _spec.loader.exec_module(_mod)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    """A test that leaves grad mode off (a bug under test) must not break the next ones."""
    yield
    import tracegrad
    tracegrad.set_grad_enabled(True)
    try:
        import torch
        torch.set_grad_enabled(True)
    except ImportError:
        pass
