"""tracegrad.utils.tensorboard.SummaryWriter against torch.utils.tensorboard's: the same calls
write the same events (read back with tensorboard's own loader; wall times aside). Without the
tensorboard package, importing the module raises ImportError that says how to install it."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import tracegrad


def test_import_without_tensorboard_says_how_to_install():
    # importing tracegrad itself never loads tensorboard (it would fail here if it tried)
    code = ("import sys; sys.modules['tensorboard'] = None\nimport tracegrad, tracegrad.utils\n"
            "try:\n    import tracegrad.utils.tensorboard\nexcept ImportError as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    assert out.startswith("ModuleNotFoundError") and "pip install tensorboard" in out


def _events(log_dir):
    """{relative run dir: [(step, what, summary values as dicts)]}, from every event file."""
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event
    from google.protobuf.json_format import MessageToDict
    runs = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "**", "events.out.tfevents.*"), recursive=True)):
        run = os.path.relpath(os.path.dirname(path), log_dir)
        for raw in RawEventFileLoader(path).Load():
            e = Event.FromString(raw)
            runs.setdefault(run, []).append((e.step, e.WhichOneof("what"),
                                             MessageToDict(e.summary) if e.HasField("summary") else str(e)
                                             .split("wall_time")[0] if e.HasField("file_version") else None))
    return runs


def _program(t, writer_cls, log_dir):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(50, 4)).astype(np.float32)
    with writer_cls(log_dir) as w:
        for step in range(3):
            w.add_scalar("loss/train", t.tensor(1.0 / (step + 1)), step)
            w.add_scalar("lr", 0.1 * step, step, new_style=True)
        w.add_scalars("run/acc", {"train": 0.5, "val": t.tensor(0.25)}, 7)
        w.add_histogram("weights", t.tensor(data), 2)
        w.add_histogram("few", t.tensor([1.0, 2.0, 2.0, 5.0]), 3, bins=4)
        w.flush()
    return _events(log_dir)


def test_summary_writer_writes_torchs_events(tmp_path):
    pytest.importorskip("tensorboard")
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tracegrad.utils.tensorboard import SummaryWriter
    ours = _program(tracegrad, SummaryWriter, str(tmp_path / "ours"))
    theirs = _program(torch, TorchWriter, str(tmp_path / "theirs"))
    assert sorted(ours) == sorted(theirs) == [".", "run_acc_train", "run_acc_val"]
    for run in theirs:
        assert len(ours[run]) == len(theirs[run])
        for a, b in zip(ours[run], theirs[run]):
            assert a[:2] == b[:2]
            if isinstance(b[2], dict) and "histo" in str(b[2]):
                ha, hb = a[2]["value"][0]["histo"], b[2]["value"][0]["histo"]
                for k in ("min", "max", "num", "sum"):
                    assert np.isclose(ha[k], hb[k], rtol=1e-6), k
                assert np.isclose(ha["sumSquares"], hb["sumSquares"], rtol=1e-5)
                assert np.allclose(ha["bucketLimit"], hb["bucketLimit"]) and ha["bucket"] == hb["bucket"]
            else:
                assert a[2] == b[2]


def test_summary_writer_default_dir_reopen_and_errors(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    from tracegrad.utils.tensorboard import SummaryWriter
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.add_scalar("x", 2.0, 1)     # a closed writer opens a new event file, as torch
    w.close()
    assert len(glob.glob(os.path.join(w.get_logdir(), "events.out.tfevents.*"))) == 2
    with SummaryWriter(str(tmp_path / "e")) as w2:
        with pytest.raises(ValueError):
            w2.add_scalar("bad", tracegrad.ones(3), 0)
        with pytest.raises(ValueError):
            w2.add_histogram("empty", tracegrad.zeros(0), 0)


def _media_program(t, writer_cls, log_dir):
    rng = np.random.default_rng(1)
    chw = rng.uniform(size=(3, 5, 4)).astype(np.float32)
    batch = rng.uniform(-0.2, 1.2, size=(10, 1, 3, 2)).astype(np.float32)   # clipped, 1 channel, 2 grid rows
    with writer_cls(log_dir) as w:
        w.add_image("chw", t.tensor(chw), 0)
        w.add_image("hwc", t.tensor(chw.transpose(1, 2, 0)), 1, dataformats="HWC")
        w.add_image("hw_uint8", np.arange(12, dtype=np.uint8).reshape(3, 4) * 20, 2, dataformats="HW")
        w.add_images("batch", t.tensor(batch), 3)
        w.add_images("nhwc", t.tensor(batch.transpose(0, 2, 3, 1)), 4, dataformats="NHWC")
        w.add_text("notes", "lr **0.1** é", 5)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "nesterov": True, "depth": t.tensor([3.0]), "skip": None},
                      {"hparam/acc": 0.9}, hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="hp",
                      global_step=6)
    return _events(log_dir)


def test_images_text_hparams_match_torch(tmp_path):
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tracegrad.utils.tensorboard import SummaryWriter
    ours = _media_program(tracegrad, SummaryWriter, str(tmp_path / "ours"))
    theirs = _media_program(torch, TorchWriter, str(tmp_path / "theirs"))
    assert sorted(ours) == sorted(theirs) == [".", "hp"]
    # same tags, steps, image sizes and PNG bytes, text and hparams plugin payloads
    assert ours == theirs


def test_read_back_with_event_accumulator(tmp_path):
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tracegrad.utils.tensorboard import SummaryWriter
    w = SummaryWriter(str(tmp_path), purge_step=0)
    for step in range(4):
        w.add_scalar("loss", tracegrad.tensor(2.0) ** -step, step)
    w.add_histogram("w", tracegrad.arange(10.0), 3)
    w.add_image("img", tracegrad.ones(1, 4, 6) * 0.5, 3)
    w.close()
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0}).Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(s, 2.0 ** -s) for s in range(4)]
    (h,) = acc.Histograms("w")
    assert (h.step, h.histogram_value.num, h.histogram_value.sum, h.histogram_value.max) == (3, 10, 45, 9)
    (img,) = acc.Images("img")
    assert (img.step, img.width, img.height) == (3, 6, 4)
    from PIL import Image
    import io
    assert np.asarray(Image.open(io.BytesIO(img.encoded_image_string))).tolist() == [[[127] * 3] * 6] * 4


def test_media_errors(tmp_path):
    pytest.importorskip("tensorboard")
    from tracegrad.utils.tensorboard import SummaryWriter
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(AssertionError, match="dataformats"):
            w.add_image("bad", tracegrad.ones(2, 3), 0)           # rank 2 against 'CHW'
        with pytest.raises(AssertionError, match="twice"):
            w.add_image("bad", tracegrad.ones(2, 3, 3), 0, dataformats="HHW")
        with pytest.raises(TypeError, match="dictionar"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(TypeError, match="hparam_domain_discrete"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
        with pytest.raises(ValueError, match="'opt'"):
            w.add_hparams({"opt": [1]}, {})
        with pytest.raises(NotImplementedError, match="viz"):
            w.add_graph(tracegrad.nn.Linear(2, 2), tracegrad.ones(1, 2))


def test_purge_step_marks_a_restart_as_torch(tmp_path):
    pytest.importorskip("tensorboard")
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tracegrad.utils.tensorboard import SummaryWriter

    def program(writer_cls, log_dir):
        with writer_cls(log_dir, purge_step=5) as w:
            w.add_scalar("loss", 0.5, 5)
        return _events(log_dir)
    ours, theirs = program(SummaryWriter, str(tmp_path / "ours")), program(TorchWriter, str(tmp_path / "theirs"))
    assert ours == theirs
    assert [(step, what) for step, what, _ in ours["."]] == [(0, "file_version"), (5, "file_version"),
                                                             (5, "session_log"), (5, "summary")]
