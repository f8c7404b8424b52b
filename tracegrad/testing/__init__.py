"""``tracegrad.testing``: mirrors ``torch.testing`` -- ``assert_close`` and the deprecated
``assert_allclose`` (``_comparison.py``) and
``make_tensor`` (``_creation.py``). Written against tracegrad's own API."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
