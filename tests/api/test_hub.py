"""``tracegrad.hub`` against ``torch.hub``: checkpoints by URL (file:// URLs here: no network)
into the cache directory, hash checks, atomic downloads, hubconf repositories from a local
directory, and torch's errors."""
import hashlib
import os

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

HUBCONF = '''
dependencies = ["numpy"]

def tiny(width=3, **kwargs):
    """A tiny linear model."""
    import {mod} as t
    return t.nn.Linear(2, width, **kwargs)

def _private():
    return None

NOT_CALLABLE = 3
'''


@pytest.fixture(params=["torch", "tracegrad"])
def hub_mod(request, tmp_path, monkeypatch):
    """torch or tracegrad, with its hub directory under tmp_path."""
    mod = torch if request.param == "torch" else tracegrad
    old = mod.hub.get_dir()
    mod.hub.set_dir(tmp_path / "hub")
    yield mod
    mod.hub.set_dir(old)


def _checkpoint(tmp_path, name="weights-{}.pth"):
    """A state dict saved by torch; returns its file:// URL, its path and the tensors."""
    torch.manual_seed(0)
    sd = torch.nn.Linear(3, 2).state_dict()
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    raw = src / "w.pth"
    torch.save(sd, raw)
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    final = src / name.format(digest[:8])
    os.replace(raw, final)
    return final.as_uri(), final, {k: v.numpy() for k, v in sd.items()}


def test_get_dir_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    old_t, old_g = torch.hub._hub_dir if hasattr(torch.hub, "_hub_dir") else None, tracegrad.hub._HUB_DIR[0]
    tracegrad.hub._HUB_DIR[0] = None
    try:
        assert tracegrad.hub.get_dir() == str(tmp_path / "th" / "hub")
        if old_t is None:
            assert torch.hub.get_dir() == tracegrad.hub.get_dir()
    finally:
        tracegrad.hub._HUB_DIR[0] = old_g


def test_load_state_dict_from_url_downloads_once_and_loads(hub_mod, tmp_path):
    url, path, expect = _checkpoint(tmp_path)
    sd = hub_mod.hub.load_state_dict_from_url(url, progress=False, check_hash=True)
    assert sorted(sd) == sorted(expect)
    for k in expect:
        np.testing.assert_array_equal(sd[k].numpy(), expect[k])
    cached = os.path.join(hub_mod.hub.get_dir(), "checkpoints", path.name)
    assert os.path.isfile(cached)
    os.remove(path)                         # the second call reads the cache, not the URL
    sd2 = hub_mod.hub.load_state_dict_from_url(url, progress=False)
    np.testing.assert_array_equal(sd2["weight"].numpy(), expect["weight"])
    m = hub_mod.nn.Linear(3, 2)
    m.load_state_dict(sd2)


def test_model_dir_and_file_name(hub_mod, tmp_path):
    url, _, expect = _checkpoint(tmp_path)
    sd = hub_mod.hub.load_state_dict_from_url(url, model_dir=tmp_path / "md", file_name="x.pt", progress=False)
    assert os.path.isfile(tmp_path / "md" / "x.pt")
    np.testing.assert_array_equal(sd["bias"].numpy(), expect["bias"])


def test_bad_hash_raises_and_leaves_nothing(hub_mod, tmp_path):
    url, path, _ = _checkpoint(tmp_path, name="weights-deadbeef{}.pth")
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub_mod.hub.load_state_dict_from_url(url, progress=False, check_hash=True)
    left = os.listdir(os.path.join(hub_mod.hub.get_dir(), "checkpoints"))
    assert left == []


def test_download_url_to_file(hub_mod, tmp_path):
    url, path, _ = _checkpoint(tmp_path)
    dst = tmp_path / "out" / "copy.bin"
    os.makedirs(dst.parent)
    hub_mod.hub.download_url_to_file(url, str(dst), progress=False)
    assert dst.read_bytes() == path.read_bytes()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    hub_mod.hub.download_url_to_file(url, str(dst), hash_prefix=digest[:10], progress=False)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub_mod.hub.download_url_to_file(url, str(tmp_path / "out" / "bad.bin"), hash_prefix="0000zz",
                                         progress=False)
    assert not os.path.exists(tmp_path / "out" / "bad.bin")


def _repo(tmp_path, mod_name):
    d = tmp_path / f"repo_{mod_name}"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF.format(mod=mod_name))
    return d


def test_local_hubconf_load(hub_mod, tmp_path):
    d = _repo(tmp_path, hub_mod.__name__)
    m = hub_mod.hub.load(str(d), "tiny", 4, source="local", bias=False)
    assert isinstance(m, hub_mod.nn.Linear) and m.out_features == 4 and m.bias is None


@pytest.mark.parametrize("case", ["unknown source", "missing entry", "not callable", "missing dependency"])
def test_local_hubconf_errors_as_torch(tmp_path, case):
    outcomes = []
    for mod in (torch, tracegrad):
        d = _repo(tmp_path / mod.__name__ if (tmp_path / mod.__name__).mkdir() is None else tmp_path, mod.__name__)
        if case == "missing dependency":
            (d / "hubconf.py").write_text("dependencies = ['no_such_module_xyz']\ndef f():\n    return 1\n")
        call = {"unknown source": lambda: mod.hub.load(str(d), "tiny", source="gitlab"),
                "missing entry": lambda: mod.hub.load(str(d), "nope", source="local"),
                "not callable": lambda: mod.hub.load(str(d), "NOT_CALLABLE", source="local"),
                "missing dependency": lambda: mod.hub.load(str(d), "f", source="local")}[case]
        with pytest.raises(Exception) as e:
            call()
        outcomes.append(e.type)
    assert outcomes[0] is outcomes[1]
