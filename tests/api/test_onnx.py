"""tracegrad.onnx: importable as torch.onnx is; export raises a clear RuntimeError."""
import pytest

import tracegrad
import tracegrad.nn as nn

torch = pytest.importorskip("torch")


def test_onnx_import_and_flag():
    import tracegrad.onnx as onnx
    assert tracegrad.onnx is onnx
    assert onnx.is_in_onnx_export() is False
    assert torch.onnx.is_in_onnx_export() is False


@pytest.mark.parametrize("name", ["export", "dynamo_export"])
def test_export_raises_clear_runtime_error(name, tmp_path):
    f = tmp_path / "m.onnx"
    with pytest.raises(RuntimeError, match="not supported by tracegrad.*torch"):
        getattr(tracegrad.onnx, name)(nn.Linear(2, 2), (tracegrad.zeros(1, 2),), str(f))
    assert not f.exists()
