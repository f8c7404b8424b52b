"""save/load durability and interop: stale temp files of killed saves are cleaned, bfloat16
and complex64 interoperate with torch's and safetensors' own readers and writers, deep
nesting gives a clear error, and every load error names the file."""
import io
import pickle
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


def test_killed_save_leaves_temp_that_next_save_removes(tmp_path):
    path = tmp_path / "ckpt.tg"
    # a child process that dies (SIGKILL) in the middle of writing: its temp file stays
    code = textwrap.dedent(f"""
        import os, signal, tracegrad, tracegrad.serialization as ser
        real = os.fsync
        def die(fd):
            os.kill(os.getpid(), signal.SIGKILL)
        ser.os.fsync = die
        tracegrad.save({{"w": tracegrad.ones(1000)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(left) == 1
    tracegrad.save({"w": tracegrad.zeros(2)}, path)
    assert os.listdir(tmp_path) == ["ckpt.tg"]
    assert tracegrad.load(path)["w"].tolist() == [0.0, 0.0]


def test_other_targets_and_live_writers_temps_are_kept(tmp_path):
    # a temp of another target, and one whose writer (this process's parent) is alive
    other = tmp_path / ".other.tg.tracegrad-save.1.abc.tmp"
    other.write_bytes(b"x")
    live = tmp_path / f".ckpt.tg.tracegrad-save.{os.getppid()}.abc.tmp"
    live.write_bytes(b"x")
    tracegrad.save({"a": 1}, tmp_path / "ckpt.tg")
    assert other.exists() and live.exists()


@pytest.mark.parametrize("dtype", ["bfloat16", "complex64"])
def test_torch_reads_tracegrad_bf16_and_complex_with_dtype_and_shape(dtype):
    x = (tracegrad.arange(6).reshape(2, 3) * 0.5).to(getattr(tracegrad, dtype))
    buf = io.BytesIO()
    tracegrad.save({"x": x}, buf)
    got = st_torch.load(buf.getvalue())["0"]
    assert got.dtype == getattr(torch, dtype) and tuple(got.shape) == (2, 3)
    assert torch.equal(got, (torch.arange(6).reshape(2, 3) * 0.5).to(getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["bfloat16", "complex64", "float16", "int64", "bool"])
def test_tracegrad_reads_torch_safetensors(tmp_path, dtype):
    t = (torch.arange(6).reshape(3, 2) % 3).to(getattr(torch, dtype))
    path = tmp_path / "w.safetensors"
    st_torch.save_file({"w": t}, str(path))
    back = tracegrad.load(path)["w"]
    assert back.dtype is getattr(tracegrad, dtype) and tuple(back.shape) == (3, 2)
    assert np.array_equal(np.asarray(back.to(tracegrad.float64 if dtype != "complex64" else tracegrad.complex128).tolist()),
                          np.asarray(t.to(torch.float64 if dtype != "complex64" else torch.complex128).tolist()))


def test_complex128_round_trips():
    x = tracegrad.tensor([1 + 2j, -3j], dtype=tracegrad.complex128)
    buf = io.BytesIO()
    tracegrad.save(x, buf)
    buf.seek(0)
    back = tracegrad.load(buf)
    assert back.dtype is tracegrad.complex128 and back.tolist() == x.tolist()


def test_deep_nesting_gives_clear_error():
    obj = []
    for _ in range(100000):
        obj = [obj]
    with pytest.raises(ValueError, match="nested too deeply"):
        tracegrad.save(obj, io.BytesIO())


@pytest.mark.parametrize("damage", ["truncate_data", "bad_dtype", "not_safetensors"])
def test_load_errors_name_the_file(tmp_path, damage):
    path = tmp_path / "bad.tg"
    tracegrad.save({"w": tracegrad.ones(64)}, path)
    data = path.read_bytes()
    if damage == "truncate_data":
        data = data[:-40]
    elif damage == "bad_dtype":
        data = data.replace(b'"F32"', b'"X32"')
    else:
        data = b"hello world, not a checkpoint"
    path.write_bytes(data)
    # a file of another format is torch's UnpicklingError; a damaged checkpoint a RuntimeError
    with pytest.raises(pickle.UnpicklingError if damage == "not_safetensors" else RuntimeError, match="bad.tg"):
        tracegrad.load(path)
