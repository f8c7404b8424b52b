"""``tracegrad.hub``: mirrors ``torch.hub`` -- checkpoints fetched by URL into a cache directory
and loaded (``load_state_dict_from_url``), and models published as a ``hubconf.py`` (``load``,
``list``, ``help``) from a local directory or a GitHub repository.

The cache is torch's: ``$TORCH_HOME/hub`` (``TORCH_HOME`` defaults to
``$XDG_CACHE_HOME/torch``, else ``~/.cache/torch``), so checkpoints torch already downloaded are
found, and the files are the same ``torch.save`` files (``tracegrad.load`` reads them).
Downloads go to a temporary file beside the destination and are moved into place only when
complete (and their SHA-256 prefix matches, when one is asked for): an interrupted download
never leaves a partial checkpoint that a later call would load.
"""
from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import zipfile
from ._ops.warn import warn as _warn

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_HUB_DIR = [None]                      # set_dir's override
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")   # "resnet18-5c106cde.pth": the hash prefix
_TRUSTED = "trusted_list"              # the file in the hub directory naming trusted repositories
_READ_CHUNK = 1 << 16


def get_dir() -> str:
    """Mirrors ``torch.hub.get_dir``: the directory hub downloads go to (``set_dir``'s, else
    ``$TORCH_HOME/hub``)."""
    if _HUB_DIR[0] is not None:
        return _HUB_DIR[0]
    home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(home, "hub")


def set_dir(d) -> None:
    """Mirrors ``torch.hub.set_dir``: hub downloads go to ``d`` (a path) from now on."""
    _HUB_DIR[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Mirrors ``torch.hub.download_url_to_file``: the object at ``url`` saved as ``dst``.

    ``hash_prefix``: when given, the file's SHA-256 hex digest must start with it, else
    RuntimeError and nothing is written. ``progress``: a tqdm bar on stderr. The file appears at
    ``dst`` only once complete (written beside it, then moved). Network errors are urllib's, as
    in torch."""
    import urllib.request   # ~2 ms: only when something is downloaded
    dst = os.path.expanduser(os.fspath(dst))
    req = urllib.request.Request(url, headers={"User-Agent": "tracegrad.hub"})
    with urllib.request.urlopen(req) as response:   # noqa: S310  (the user's URL, as torch)
        length = response.headers.get("Content-Length") if hasattr(response, "headers") else None
        total = int(length) if length and length.isdigit() else None
        folder = os.path.dirname(os.path.abspath(dst))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(dst) + ".", suffix=".partial", dir=folder)
        try:
            sha = hashlib.sha256() if hash_prefix is not None else None
            with os.fdopen(fd, "wb") as out, _progress(total, progress) as bar:
                while True:
                    chunk = response.read(_READ_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    if sha is not None:
                        sha.update(chunk)
                    bar.update(len(chunk))
            if sha is not None:
                digest = sha.hexdigest()
                if not digest.startswith(hash_prefix):
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def _progress(total, enabled):
    from tqdm import tqdm   # a dependency; imported here so that importing tracegrad stays light
    return tqdm(total=total, disable=not enabled, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


def load_state_dict_from_url(url: str, model_dir=None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False):
    """Mirrors ``torch.hub.load_state_dict_from_url``: the object saved at ``url``, downloaded
    once into ``model_dir`` (default ``<get_dir()>/checkpoints``) and then read from there with
    ``tracegrad.load(file, map_location=..., weights_only=...)``.

    ``file_name``: the cached file's name (default: the URL's last path component);
    ``check_hash``: the name's ``-<hex>.`` part must prefix the file's SHA-256 (RuntimeError
    otherwise). A zip holding one ``.pth``-style file (torch's legacy layout) is unpacked first.
    """
    from . import serialization
    model_dir = os.path.expanduser(os.fspath(model_dir)) if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        prefix = None
        if check_hash:
            m = _HASH_IN_NAME.search(name)
            prefix = m.group(1) if m else None
        download_url_to_file(url, cached, prefix, progress=progress)
    if zipfile.is_zipfile(cached) and not _is_torch_zip(cached):
        cached = _unpack_legacy_zip(cached, model_dir)
    return serialization.load(cached, map_location=map_location, weights_only=weights_only)


def _is_torch_zip(path) -> bool:
    # torch.save's own format is a zip with a data.pkl inside its one top folder
    with zipfile.ZipFile(path) as z:
        return any(n.endswith("/data.pkl") or n == "data.pkl" for n in z.namelist())


def _unpack_legacy_zip(path, model_dir):
    with zipfile.ZipFile(path) as z:
        members = [m for m in z.infolist() if not m.is_dir()]
        if len(members) != 1:
            raise RuntimeError(f"tracegrad.hub: {path!r} is a zip of {len(members)} files; only a zip of one "
                               "checkpoint can be loaded")
        z.extractall(model_dir)
        return os.path.join(model_dir, members[0].filename)


# ---- hubconf.py repositories ----------------------------------------------------------------

def _parse_repo(github: str):
    owner_repo, _, ref = github.partition(":")
    owner, _, repo = owner_repo.partition("/")
    if not owner or not repo or "/" in repo:
        raise ValueError(f'Invalid input: repo_or_dir {github!r} should be "repo_owner/repo_name[:ref]" '
                         "(or a local directory with source='local')")
    return owner, repo, ref or None


def _trusted(hub_dir):
    path = os.path.join(hub_dir, _TRUSTED)
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip()}


def _check_trust(owner, repo, trust_repo, hub_dir, repo_dir_exists):
    key = f"{owner}_{repo}"
    trusted = _trusted(hub_dir)
    if trust_repo is True:
        trusted.add(key)
    elif trust_repo is None:
        if not repo_dir_exists and key not in trusted:
            _warn("You are about to download and run code from an untrusted repository. In a future release, "
                  "this won't be allowed. To add the repository to your trusted list, change the command to "
                  "{calling_fn}(..., trust_repo=False) and a command prompt will appear asking for an "
                  "explicit confirmation of trust, or load(..., trust_repo=True), which will assume that "
                  "the prompt is to be answered with 'yes'. You can also use load(..., trust_repo='check') "
                  "which will only prompt for confirmation if the repo is not already trusted. This will "
                  "eventually be the default behaviour")
        return
    elif key not in trusted or trust_repo is False:
        answer = builtins.input(f"The repository {key} does not belong to the list of trusted repositories and as "
                                "such cannot be downloaded. Do you trust this repository and wish to add it to the "
                                "trusted list of repositories (y/N)?")
        if answer.lower() not in ("y", "yes"):
            raise Exception("Untrusted repository.")   # torch raises a plain Exception here
        trusted.add(key)
    os.makedirs(hub_dir, exist_ok=True)
    tmp = os.path.join(hub_dir, _TRUSTED + ".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(sorted(trusted)) + "\n")
    os.replace(tmp, os.path.join(hub_dir, _TRUSTED))


def _repo_dir(github, force_reload, trust_repo, verbose):
    """The directory of ``github`` ("owner/repo[:ref]") under the hub directory, downloaded
    (GitHub's zipball of the ref, default branch 'main') unless already there."""
    owner, repo, ref = _parse_repo(github)
    ref = ref or "main"
    hub_dir = get_dir()
    target = os.path.join(hub_dir, "_".join((owner, repo, ref.replace("/", "_"))))
    exists = os.path.exists(target) and not force_reload
    _check_trust(owner, repo, trust_repo, hub_dir, exists)
    if exists:
        if verbose:
            sys.stderr.write(f"Using cache found in {target}\n")
        return target
    os.makedirs(hub_dir, exist_ok=True)
    archive = target + ".zip"
    download_url_to_file(f"https://github.com/{owner}/{repo}/zipball/{ref}", archive, progress=False)
    try:
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            unpacked = os.path.join(hub_dir, top)
            shutil.rmtree(unpacked, ignore_errors=True)
            z.extractall(hub_dir)
    finally:
        os.remove(archive)
    shutil.rmtree(target, ignore_errors=True)
    shutil.move(unpacked, target)
    return target


def _hubconf(repo_or_dir, source, force_reload, trust_repo, verbose):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    directory = (_repo_dir(repo_or_dir, force_reload, trust_repo, verbose) if source == "github"
                 else os.path.expanduser(os.fspath(repo_or_dir)))
    path = os.path.join(directory, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"tracegrad.hub: no hubconf.py in {directory!r}")
    sys.path.insert(0, directory)   # hubconf imports its repository's own modules
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(directory)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):  # noqa: A001
    """Mirrors ``torch.hub.list``: the names of the callables a repository's ``hubconf.py``
    publishes (those not starting with '_'). ``github``: "owner/repo[:ref]"."""
    module = _hubconf(github, "github", force_reload, trust_repo, verbose)
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001
    """Mirrors ``torch.hub.help``: the docstring of entry point ``model`` of a repository."""
    return _entry(_hubconf(github, "github", force_reload, trust_repo, True), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Mirrors ``torch.hub.load``: ``hubconf.<model>(*args, **kwargs)`` of a repository.

    ``source='local'``: ``repo_or_dir`` is a directory holding ``hubconf.py``; ``'github'``:
    "owner/repo[:ref]", downloaded into the hub directory once. ``hubconf.dependencies`` must
    all be importable (RuntimeError naming the missing ones). ValueError for an unknown
    ``source``; RuntimeError when ``model`` is not a callable of the hubconf."""
    return _entry(_hubconf(repo_or_dir, source, force_reload, trust_repo, verbose), model)(*args, **kwargs)
