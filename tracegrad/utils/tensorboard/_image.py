"""Images for ``add_image``/``add_images``: an array in any ``dataformats`` layout becomes an
``(H, W, C)`` uint8 image (a batch tiled into a grid, eight per row), PNG-encoded with Pillow --
the same pixels torch's writer produces for the same input."""
from __future__ import annotations

import io
import math

import numpy as np


def _bad_format(msg):
    # torch's writer raises AssertionError for a layout that does not fit the array; raised
    # explicitly here so ``python -O`` keeps it
    return AssertionError(f"SummaryWriter.add_image: {msg}")


def to_hwc(arr: np.ndarray, dataformats: str) -> np.ndarray:
    """``arr`` laid out as ``dataformats`` (letters from N, C, H, W; e.g. "CHW", "HWC", "HW",
    "NCHW") as an ``(H, W, 3 or 4)`` array: grey images repeat into three channels, a batch
    (an ``N`` axis) is tiled by ``make_grid``. Raises AssertionError when a letter repeats or
    the array's rank differs from the layout's."""
    if len(set(dataformats)) != len(dataformats):
        raise _bad_format(f"dataformats {dataformats!r} names one axis twice")
    if arr.ndim != len(dataformats):
        raise _bad_format(f"the image has shape {arr.shape} but dataformats is {dataformats!r}; "
                          "pass the layout that matches the array (e.g. 'CHW', 'HWC', 'HW', 'NCHW')")
    fmt = dataformats.upper()
    if len(fmt) == 4:
        return make_grid(arr.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc
    return np.repeat(arr.transpose([fmt.find(c) for c in "HW"])[:, :, None], 3, axis=2)


def make_grid(batch: np.ndarray, ncols: int = 8) -> np.ndarray:
    """``(N, 1 or 3, H, W)`` images tiled row by row, ``ncols`` per row, into one ``(3, H*rows,
    W*cols)`` image (unused cells stay 0). Raises AssertionError for another channel count."""
    if batch.shape[1] == 1:
        batch = np.repeat(batch, 3, axis=1)
    if batch.ndim != 4 or batch.shape[1] != 3:
        raise _bad_format(f"a batch of images needs 1 or 3 channels, got shape {batch.shape}")
    n, _, h, w = batch.shape
    cols = min(n, ncols)
    rows = math.ceil(n / cols)
    canvas = np.zeros((3, h * rows, w * cols), dtype=batch.dtype)
    for i in range(n):
        r, c = divmod(i, cols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = batch[i]
    return canvas


def to_uint8(hwc: np.ndarray) -> np.ndarray:
    """uint8 images stay as they are; any other dtype is read as [0, 1] and scaled by 255,
    out-of-range values clipped (torch's rule: the dtype, not the values, decides)."""
    scale = 1 if hwc.dtype == np.uint8 else 255
    return (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def encode_png(hwc: np.ndarray, rescale: float = 1):
    """``(height, width, channels, PNG bytes)`` of a uint8 ``(H, W, C)`` image, resized by
    ``rescale`` first. Raises ImportError naming Pillow when it is not installed."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("SummaryWriter.add_image needs Pillow to encode PNG images: pip install pillow") from e
    h, w, c = hwc.shape
    img = Image.fromarray(hwc).resize((int(w * rescale), int(h * rescale)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return h, w, c, buf.getvalue()
