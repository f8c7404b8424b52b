"""``tracegrad.testing``: mirrors ``torch.testing`` -- ``assert_close`` (``_comparison.py``) and
``make_tensor`` (``_creation.py``). Written against tracegrad's own API."""
from ._comparison import assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "make_tensor"]
