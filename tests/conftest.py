"""Shared test setup: seeds, the ``jax_x64`` fixture, and torch at one thread
(torch's and JAX's thread pools fight on small machines and slow torch ops 50x)."""
import gc
import os

import numpy as np
import pytest
from hypothesis import settings

import tracegrad
from tracegrad._api.compilation_cache import write_entries_atomically

try:
    import torch as _torch
    _torch.set_num_threads(1)
except ImportError:  # torch is an optional oracle
    _torch = None


# pytest-xdist workers share one cache folder, whichever it is: NOTE [cache entries written
# whole] (tracegrad/_api/compilation_cache.py); a no-op where tracegrad's import did it already
write_entries_atomically()


# Property tests draw the same examples on every run (CI must not meet a new example by
# chance); HYPOTHESIS_PROFILE=explore draws fresh ones when hunting for bugs.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# NOTE [slow tests]
# The default test command (the README's, which CI runs on a fresh 2-core machine with an empty
# compilation cache and a 90-minute limit) leaves out the tests listed in slow_tests.txt: the
# ~10% that each took more than 0.5 s in a full run with a warm compilation cache or in a run of
# the rest with an empty one (where the first test to meet an op and shape compiles it), 85% of
# the suite's time (whole public programs trained for a few steps, compiled three ways, the
# ported linear-algebra sweeps over every dtype). The whole suite had grown past 90 minutes
# there. `--runslow` (or TRACEGRAD_RUN_SLOW=1) runs every test; run it before a release or a
# change to the compiler.
# A test added since the list was written runs by default until scripts/slow_tests.py writes
# the list again from a full run's durations.
_SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow_tests.txt")
_SLOW_LEFT = pytest.StashKey[set]()


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests in tests/slow_tests.txt (NOTE [slow tests])")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: listed in tests/slow_tests.txt; run with --runslow")


def _slow_ids():
    try:
        with open(_SLOW_LIST, encoding="utf-8") as f:
            return {line.strip() for line in f if line.strip() and not line.startswith("#")}
    except FileNotFoundError:
        return set()


def _named_tests(config):
    """The node ids named on the command line (``path::test``): a slow test asked for by name
    runs."""
    out = []
    for arg in config.args:
        path, sep, rest = str(arg).partition("::")
        if sep:
            rel = os.path.relpath(os.path.abspath(path), str(config.rootpath)).replace(os.sep, "/")
            out.append(rel + sep + rest)
    return tuple(out)


def pytest_collection_modifyitems(config, items):
    slow = _slow_ids()
    if not slow:
        return
    run_slow = config.getoption("--runslow") or os.environ.get("TRACEGRAD_RUN_SLOW") == "1"
    named = _named_tests(config)
    keep, left = [], []
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
            if not run_slow and not item.nodeid.startswith(named):
                left.append(item)
                continue
        keep.append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = keep
    config.stash[_SLOW_LEFT] = {str(item.path) for item in left}


@pytest.fixture
def whole_module(request):
    """Skips a test that checks what the other tests of its module covered (every op of a file
    met in a parity case) unless all of them run: none left out by ``-k`` or as slow."""
    if request.config.option.keyword or str(request.path) in request.config.stash.get(_SLOW_LEFT, ()):
        pytest.skip("runs only with the whole module (add --runslow)")


@pytest.fixture
def jax_x64():
    """JAX's x64 mode on for the test's own JAX code (a float64 ``jax.grad`` oracle, a
    hand-written ``jax.jit`` over tracegrad code). tracegrad turns x64 on only around its own
    calls (DESIGN 2.7), so a test's own JAX code opts in as a user would. Use with
    ``pytestmark = pytest.mark.usefixtures("jax_x64")``."""
    import jax
    with jax.enable_x64(True):
        yield


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    tracegrad.manual_seed(0)
    if _torch is not None:
        # CPU torch has only this generator to seed; torch.manual_seed also queues a lazy seed
        # for every accelerator backend, formatting the whole Python stack for each (~4 ms a
        # test under pytest's deep stacks)
        _torch.default_generator.manual_seed(0)
    # a program that turns distribution validation off for the process (PPO's
    # ``Distribution.set_default_validate_args(False)``) must not change later tests' warnings
    validate = [(d, d._validate_args) for d in _distribution_bases()]
    # nor a program's ``set_printoptions`` (a notebook's ``edgeitems=2``) later tests' reprs
    printing = [(m, m._tensor_str.get_printoptions()) for m in (tracegrad, _torch) if m is not None]
    # torch (and tracegrad, as torch) remember for the process whether a global module backward
    # hook was ever a full one, even after it is removed: a test registering the other kind
    # failed after an unrelated earlier test in the same worker. Each test starts with neither.
    tracegrad.nn.modules.module._global_is_full_backward_hook[0] = None
    if _torch is not None:
        _torch.nn.modules.module._global_is_full_backward_hook = None
        # torch's own test utilities (torch.testing._internal.common_utils, imported by the
        # files that use the oracle's harness) freeze torch.backends' flags for the process
        # (disable_global_flags): a later program setting ``cudnn.benchmark = True`` at top
        # level, as scripts do, raised RuntimeError in its torch run, depending on which files
        # its worker ran first. Each test starts with them settable, as in a script.
        flags = _torch.backends.flags_frozen.__globals__
        settable = flags["__allow_nonbracketed_mutation_flag"]
        flags["__allow_nonbracketed_mutation_flag"] = True
    yield
    if _torch is not None:
        flags["__allow_nonbracketed_mutation_flag"] = settable
    for d, v in validate:
        d._validate_args = v
    for m, opts in printing:
        if m._tensor_str.get_printoptions() != opts:
            m.set_printoptions(**opts)


def _distribution_bases():
    bases = [tracegrad.distributions.Distribution]
    if _torch is not None:
        bases.append(_torch.distributions.Distribution)
    return bases


# Long-lived objects (torch, JAX, op_db's samples, the caches earlier modules filled) are frozen
# out of the cyclic collector: a full ``gc.collect()`` then scans only what the running module
# made. Unfrozen, the heap late in the run is ~10x an import's, and each collection (a test's own
# or Python's automatic ones) took seconds. What a test allocates stays collectable, so tests
# that check an object is freed still check it; one that must see every referrer asks for
# ``whole_heap_gc``.
def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def _freeze_module_survivors():
    yield
    # a module's Tensor subclass or TorchFunctionMode turned __torch_function__ dispatch on for
    # the process (NOTE [trampolines]): turn it off, so later modules run plain tensors at full speed
    from tracegrad._tensor import overridable
    overridable.deactivate()
    gc.collect()
    gc.freeze()


@pytest.fixture
def whole_heap_gc():
    """The cyclic collector over the whole heap for this test (``gc.get_referrers`` and
    ``gc.get_objects`` see no frozen object); frozen again afterwards."""
    gc.unfreeze()
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture
def fresh_warn_once():
    """tracegrad's once-per-process warnings (``_ops.warn.warn_once``, torch's TORCH_WARN_ONCE)
    as in a fresh process for this test, whatever earlier tests triggered; restored afterwards."""
    from tracegrad._ops import warn as _warn
    saved = set(_warn._WARNED_ONCE)
    _warn._WARNED_ONCE.clear()
    yield
    _warn._WARNED_ONCE.clear()
    _warn._WARNED_ONCE.update(saved)


class _EventCount(list):
    """``[count]`` plus ``names``: the function JAX named for each event, for failure messages."""
    def __init__(self, items):
        super().__init__(items)
        self.names = []


def _count_jax_events(event):
    """A list whose item counts JAX's monitoring ``event`` while the fixture is active."""
    import jax
    n = _EventCount([0])

    def on_event(name, secs, **kw):
        if name == event:
            n[0] += 1
            n.names.append(kw.get("fun_name"))
    jax.monitoring.register_event_duration_secs_listener(on_event)
    yield n
    jax.monitoring.unregister_event_duration_listener(on_event)


@pytest.fixture
def jax_traces():
    """Counts JAX traces (its ``jaxpr_trace_duration`` monitoring event) while the test runs:
    ``n[0]`` is how many functions JAX traced for jit. Unlike a jitted function's
    ``_cache_size()``, which JAX's process-wide executable cache may evict under many earlier
    tests, and unlike counting backend compiles, which the persistent compilation cache skips,
    a trace is counted whatever ran before."""
    yield from _count_jax_events("/jax/core/compile/jaxpr_trace_duration")


@pytest.fixture
def jax_compiles():
    """Counts XLA compiles (JAX's backend-compile monitoring event) while the test runs."""
    yield from _count_jax_events("/jax/core/compile/backend_compile_duration")
