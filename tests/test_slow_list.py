"""The slow-test list (NOTE [slow tests] in conftest.py): how scripts/slow_tests.py reads a
run's durations, and that the list names tests by pytest's node ids."""
import importlib.util
import os

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _script():
    spec = importlib.util.spec_from_file_location("slow_tests", os.path.join(_ROOT, "scripts", "slow_tests.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_durations_sum_the_phases_of_each_test():
    table = """\
============================ slowest durations =============================
2.50s call     tests/a/test_x.py::test_one[p-1]
0.25s setup    tests/a/test_x.py::test_one[p-1]
0.40s call     tests/a/test_x.py::test_two
0.02s teardown tests/a/test_x.py::test_two
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
1 passed in 3.2s
"""
    got = _script().durations(table.splitlines())
    assert sorted(got) == ["tests/a/test_x.py::test_one[p-1]", "tests/a/test_x.py::test_two"]
    assert abs(got["tests/a/test_x.py::test_one[p-1]"] - 2.75) < 1e-9
    assert abs(got["tests/a/test_x.py::test_two"] - 0.42) < 1e-9


def test_the_list_names_test_files_of_this_suite():
    with open(os.path.join(_ROOT, "tests", "slow_tests.txt"), encoding="utf-8") as f:
        ids = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert ids and len(ids) == len(set(ids))
    files = {i.split("::")[0] for i in ids}
    gone = sorted(p for p in files if not os.path.exists(os.path.join(_ROOT, p)))
    assert not gone, f"slow_tests.txt names files that no longer exist: {gone[:5]}"
