"""``@fresh_process``: run a test in a new Python process.

For tests that empty every process-wide cache (``_state.clear_caches()``): in a long test
worker that has compiled tens of thousands of programs, destroying them all took a minute
(XLA frees each executable's code), which says nothing about the code under test. The child
runs the same test function under pytest, with the same conftest; the parent passes when the
child does and shows its output when it does not.

The ``@fresh_process`` tests of one file share one child: the first of them to run starts it
for all of them (each parametrization included), and each parent test then reports its own
result from the child's JUnit report (a test skipped there is skipped here). Every such test still runs away from the long test
worker; starting a Python with torch, JAX and tracegrad and collecting the file cost ~5 s a
child on CI, once per test before."""
from __future__ import annotations

import functools
import inspect
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

_CHILD = "TRACEGRAD_TEST_FRESH_PROCESS"
_GROUPS: dict[str, list[str]] = {}          # test file -> its @fresh_process node ids
_RESULTS: dict[str, dict] = {}              # test file -> {test name: failure text or None}


def _current_name():
    """The running test's name with its parametrization id (``test_x[a]``)."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.rsplit(" ", 1)[0].split("::")[-1]


def _run_group(path):
    nodes = _GROUPS[path]
    env = {**os.environ, _CHILD: "\n".join(nodes)}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "-o", "addopts=", f"--junitxml={report}", *nodes],
                              env=env, capture_output=True, text=True, timeout=600)
        results = {}
        if os.path.exists(report):
            for case in ET.parse(report).iter("testcase"):
                bad = [e for e in case if e.tag in ("failure", "error")]
                skipped = [e for e in case if e.tag == "skipped"]
                results[case.get("name")] = ("\n".join((e.get("message") or "") + "\n" + (e.text or "")
                                                       for e in bad) if bad
                                             else ("skipped", skipped[0].get("message") or "") if skipped else None)
    results["__output__"] = f"{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    return results


def fresh_process(fn):
    path = inspect.getfile(fn)
    node = f"{path}::{fn.__name__}"
    _GROUPS.setdefault(path, []).append(node)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if node in os.environ.get(_CHILD, "").split("\n"):
            return fn(*args, **kwargs)
        if path not in _RESULTS:
            _RESULTS[path] = _run_group(path)
        results = _RESULTS[path]
        name = _current_name()
        assert name in results, f"{node} ({name}) did not run in the fresh process:\n{results['__output__']}"
        if isinstance(results[name], tuple):       # skipped in the child: skipped here too
            pytest.skip(results[name][1])
        assert results[name] is None, \
            f"{node} ({name}) failed in a fresh process:\n{results[name][-6000:]}\n{results['__output__']}"
    return wrapper
