"""``SummaryWriter`` and ``FileWriter``: mirror ``torch.utils.tensorboard.writer``. Event files
are written by tensorboard's ``EventFileWriter`` (its own record format and flush thread)."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _summary

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Mirrors ``torch.utils.tensorboard.writer.FileWriter``: one event file in ``log_dir``;
    ``add_event``/``add_summary`` queue protocol buffers, written every ``flush_secs`` seconds,
    when ``max_queue`` are pending, on ``flush()`` and on ``close()``."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Mirrors ``torch.utils.tensorboard.SummaryWriter(log_dir=None, comment='', purge_step=None,
    max_queue=10, flush_secs=120, filename_suffix='')``.

    ``log_dir`` defaults to ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``. Methods here:
    ``add_scalar``, ``add_scalars`` (one sub-writer per tag, in ``<log_dir>/<main_tag>_<tag>``),
    ``add_histogram``, ``flush``, ``close``, ``get_logdir``; it is a context manager that closes
    on exit. Values may be tracegrad tensors, numpy arrays or numbers.
    Differs from torch: images, audio, text, graphs, embeddings, hparams, PR curves and meshes
    are not provided (AttributeError).
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step, self.max_queue = purge_step, max_queue
        self.flush_secs, self.filename_suffix = flush_secs, filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _summary.default_bins()

    def _get_file_writer(self):
        """The main FileWriter; made again after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step, self.purge_step = self.purge_step, None
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """Records one number (a float, or a one-element tensor) under ``tag`` at ``global_step``."""
        summary = _summary.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Records several scalars on one chart: each ``tag`` goes to its own run directory
        ``<log_dir>/<main_tag with '/' as '_'>_<tag>`` under the summary tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            key = root + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(key)
            if writer is None:
                writer = FileWriter(key, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[key] = writer
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """Records a histogram of ``values`` (any shape; flattened). ``bins``: "tensorflow"
        (TensorFlow's exponential edges, the default), or an int / edges / a numpy rule name.
        Raises: ValueError for empty ``values``."""
        bins = self.default_bins if isinstance(bins, str) and bins == "tensorflow" else bins
        self._get_file_writer().add_summary(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def flush(self):
        """Writes every pending event of every sub-writer to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flushes and closes every event file; a later ``add_*`` opens new ones."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
