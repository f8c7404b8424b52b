"""``@fresh_process``: run one test in a new Python process.

For tests that empty every process-wide cache (``_state.clear_caches()``): in a long test
worker that has compiled tens of thousands of programs, destroying them all took a minute
(XLA frees each executable's code), which says nothing about the code under test. The child
runs the same test function under pytest, with the same conftest; the parent passes when the
child does and shows its output when it does not."""
from __future__ import annotations

import functools
import inspect
import os
import subprocess
import sys

_CHILD = "TRACEGRAD_TEST_FRESH_PROCESS"


def fresh_process(fn):
    node = f"{inspect.getfile(fn)}::{fn.__name__}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if os.environ.get(_CHILD) == node:
            return fn(*args, **kwargs)
        env = {**os.environ, _CHILD: node}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "-o", "addopts=", node], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{node} failed in a fresh process:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    return wrapper
