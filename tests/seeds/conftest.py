# Loads tests/seeds/_parity.py under a unique module name, so the seed tests can
# `from _seeds_parity import ...` without colliding with other `_parity` helpers
# when test directories are not packages.
import importlib.util
import pathlib
import sys

_path = pathlib.Path(__file__).with_name("_parity.py")
if "_seeds_parity" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("_seeds_parity", _path)
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["_seeds_parity"] = _mod
    _spec.loader.exec_module(_mod)
