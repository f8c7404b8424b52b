"""``tracegrad.version``: mirrors ``torch.version`` -- what the build supports, as scripts print
it (``torch.version.cuda``). tracegrad has no CUDA/ROCm/XPU build of its own: it runs on
whatever JAX has (``tracegrad.cuda.is_available()`` says whether that includes a GPU), so the
toolkit versions are None, as torch's CPU build reports them.

``__version__`` (also ``tracegrad.__version__``) is the torch release whose semantics tracegrad
follows (DESIGN: torch 2.13), not the package's own version (that one is in the distribution's
metadata: ``importlib.metadata.version("tracegrad")``). Programs gate code paths on it
(``torch.__version__ >= "1.5.0"``, ``torch.__version__ < (2, 0)``,
``int(torch.__version__.split(".")[0])``), and under ``import tracegrad as torch`` they must take
the branches they take under the torch tracegrad mirrors."""
import re

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(.*?)\s*$")


class TorchVersion(str):
    """A ``str`` that compares as a version number, as ``torch.__version__`` does: against
    another string (``"1.10.0"``), a tuple or list of numbers (``(1, 10)`` means 1.10) or a
    ``packaging`` ``Version`` (by its string). Release numbers compare numerically (1.10 > 1.9,
    missing parts are 0); at equal releases a pre-release (``a``/``b``/``rc``/``dev`` suffix) is
    older and a ``+local`` label newer than the plain release. Where either side is no version
    (``"parrot"``) the comparison is plain ``str`` ordering; other objects (an ``int``) raise
    TypeError. ``!=`` stays ``str``'s, as torch's (so ``v == "2.13"`` and ``v != "2.13"`` can
    both hold)."""

    __slots__ = ()

    @staticmethod
    def _parse(value):
        if isinstance(value, (tuple, list)):
            value = ".".join(str(v) for v in value)
        elif not isinstance(value, str):
            if type(value).__name__ != "Version":      # packaging.version.Version
                return None
            value = str(value)
        m = _RELEASE.match(value)
        if m is None:
            return None
        release, rest = tuple(int(p) for p in m.group(1).split(".")), m.group(2)
        if rest.startswith("+"):
            rank = (1, rest)                      # local build label: after the release
        elif rest:
            rank = (-1, rest)                     # a0, rc1, .dev0, ...: before the release
        else:
            rank = (0, "")
        return release, rank

    def _compare(self, other, op):
        a, b = self._parse(self), self._parse(other)
        if a is None or b is None:
            return getattr(str, op)(self, other)
        n = max(len(a[0]), len(b[0]))
        ka = (a[0] + (0,) * (n - len(a[0])), a[1])
        kb = (b[0] + (0,) * (n - len(b[0])), b[1])
        return getattr(ka, op)(kb)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__


__version__ = TorchVersion("2.13.0")
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
