"""Helpers shared by test_nn_files_ported.py and test_nn_files_ported_layers.py (ports of
PyTorch's test/nn/ files run under the ``T`` fixture)."""
import warnings

import pytest


def raises_class(fn):
    """The builtin exception class ``fn()`` raises (torch's own classes subclass them), or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is the observation
        return next(k for k in type(e).__mro__ if k.__module__ == "builtins")
    return None


def xfail_tracegrad(request, T, reason):
    """Mark the running ``T`` test a strict xfail on its tracegrad run (torch must still pass)."""
    if T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def warning_texts(fn):
    """``fn()`` with every warning recorded; returns the ``(category name, message)`` list."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category.__name__, str(x.message)) for x in w]
