"""``tracegrad.onnx``: the names of ``torch.onnx`` that programs import, without an exporter.

tracegrad runs on JAX/XLA and has no ONNX exporter: ``export`` (and ``dynamo_export``, which
older torch releases had) raise ``RuntimeError`` telling the caller to export from torch;
``is_in_onnx_export()`` is always False, so code that branches on it takes its normal path.
Nothing here writes a file or pretends to export.
"""

__all__ = ["export", "dynamo_export", "is_in_onnx_export"]

_MESSAGE = ("{api}: ONNX export is not supported by tracegrad (it has no ONNX exporter). "
            "Load the model's state_dict into the same model written with torch and export it "
            "with torch.onnx.export.")


def export(model=None, args=(), f=None, *unused_args, **unused_kwargs):
    """Mirrors the name ``torch.onnx.export``; always raises ``RuntimeError`` (tracegrad cannot
    export ONNX: export from torch instead)."""
    raise RuntimeError(_MESSAGE.format(api="tracegrad.onnx.export"))


def dynamo_export(model=None, *unused_args, **unused_kwargs):
    """The name ``torch.onnx.dynamo_export`` of older torch releases; always raises
    ``RuntimeError`` (tracegrad cannot export ONNX: export from torch instead)."""
    raise RuntimeError(_MESSAGE.format(api="tracegrad.onnx.dynamo_export"))


def is_in_onnx_export():
    """Mirrors ``torch.onnx.is_in_onnx_export``: always False (tracegrad never exports ONNX)."""
    return False
