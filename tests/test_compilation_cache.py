"""NOTE [cache entries written whole] (tracegrad/_api/compilation_cache.py): where tracegrad
chose the persistent compilation cache folder, JAX's entries are written to a file of their own
and renamed into place, so a process reading the shared folder sees no entry or the whole one.
A folder the user configured is left to JAX."""
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from tracegrad._api.compilation_cache import write_entries_atomically

lru_cache = pytest.importorskip("jax._src.lru_cache")


def _cache(tmp_path):
    write_entries_atomically()      # the test processes have it (conftest); idempotent
    return lru_cache.LRUCache(str(tmp_path), max_size=-1)


def _entries(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir())


def test_put_writes_the_whole_entry_then_names_it(tmp_path, monkeypatch):
    cache = _cache(tmp_path)
    final = tmp_path / f"k1{lru_cache._CACHE_SUFFIX}"
    seen = []
    real_write = os.write

    def write(fd, data):
        seen.append(final.exists())     # while bytes go out, the entry's name is not there
        return real_write(fd, data[:1000])      # short writes: the loop must finish the file
    monkeypatch.setattr(os, "write", write)
    value = bytes(range(256)) * 40
    cache.put("k1", value)
    monkeypatch.undo()
    assert seen and not any(seen)
    assert len(seen) == len(value) // 1000 + 1
    assert cache.get("k1") == value
    assert _entries(tmp_path) == [final.name]       # no temporary file left
    cache.put("k1", b"other")                       # an entry stays as first written (JAX's rule)
    assert cache.get("k1") == value


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    cache = _cache(tmp_path)

    def write(fd, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError):
        cache.put("k2", b"x" * 100)
    monkeypatch.undo()
    assert _entries(tmp_path) == []
    assert cache.get("k2") is None


def test_reader_never_sees_a_partial_entry(tmp_path):
    cache = _cache(tmp_path)
    size, keys = 1 << 20, 40
    done = threading.Event()
    partial = []

    def read():
        while not done.is_set():
            for name in os.listdir(tmp_path):
                if name.endswith(lru_cache._CACHE_SUFFIX):
                    n = os.path.getsize(tmp_path / name)
                    if n != size:
                        partial.append((name, n))
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for k in range(keys):
            cache.put(f"key{k}", bytes([k]) * size)
    finally:
        done.set()
        reader.join()
    assert partial == []
    assert len([n for n in _entries(tmp_path) if n.endswith(lru_cache._CACHE_SUFFIX)]) == keys


def test_cache_with_eviction_stays_jax_own(tmp_path):
    # a size limit turns on JAX's eviction and its file lock: its own put runs
    cache = lru_cache.LRUCache(str(tmp_path), max_size=1 << 20)
    cache.put("k3", b"abc")
    assert cache.get("k3") == b"abc"
    assert any(n.endswith(lru_cache._ATIME_SUFFIX) for n in _entries(tmp_path))   # JAX's bookkeeping


_PROBE = textwrap.dedent("""
    import json
    import tracegrad
    from jax._src import lru_cache
    print("PROBE" + json.dumps(getattr(lru_cache.LRUCache.put, "_tracegrad_whole", False)))
""")


@pytest.mark.parametrize("who", ["tracegrad", "user"])
def test_only_a_folder_tracegrad_chose(tmp_path, who):
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if who == "tracegrad":
        env["TRACEGRAD_CACHE_DIR"] = str(tmp_path)
    else:
        env["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("PROBE"))
    assert json.loads(line[len("PROBE"):]) is (who == "tracegrad")
