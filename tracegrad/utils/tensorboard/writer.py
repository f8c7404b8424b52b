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
    ``add_histogram``, ``add_image``, ``add_images``, ``add_text``, ``add_hparams``,
    ``add_graph`` (raises NotImplementedError), ``flush``, ``close``, ``get_logdir``; it is a
    context manager that closes on exit. Values may be tracegrad tensors, numpy arrays or
    numbers. ``purge_step``: the first event written is a restart marker at that step, so
    TensorBoard hides events of an earlier (crashed) run at or after it.
    Differs from torch: ``add_graph`` (no TorchScript tracer), audio, video, figures,
    embeddings, PR curves, meshes and custom scalars are not provided.
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

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,  # noqa: A002
                          global_step=None, walltime=None):
        """Records a histogram from precomputed statistics (mirrors torch's ``add_histogram_raw``):
        ``min``/``max``/``num``/``sum``/``sum_squares`` of the values, ``bucket_limits`` (right
        edges) and ``bucket_counts``, lists or 1-D tensors of one length.
        Raises: ValueError when the two lengths differ."""
        self._get_file_writer().add_summary(
            _summary.histogram_raw(tag, min, max, num, sum, sum_squares, list(bucket_limits), list(bucket_counts)),
            global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Records one image. ``img_tensor``: a tensor or numpy array laid out as ``dataformats``
        ("CHW" default, "HWC", "HW"; C is 1, 3 or 4). Floating images are read as [0, 1],
        uint8 as [0, 255]; out-of-range values are clipped. Needs Pillow (ImportError naming it).
        Raises AssertionError, as torch, when the layout does not fit the array's rank."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Records a batch of images as one image, tiled eight per row. ``img_tensor``:
        ``(N, C, H, W)`` by default (C 1 or 3), or any layout named by ``dataformats``."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Records ``text_string`` (markdown in TensorBoard's text tab) under ``<tag>/text_summary``."""
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Records one hyperparameter run for TensorBoard's HPARAMS tab, as torch: the
        experiment, session start/end summaries and each metric as a scalar go to a sub-run
        ``<log_dir>/<run_name>`` (``run_name`` defaults to ``str(time.time())``).
        ``hparam_dict`` values: int, float, str, bool, one-element Tensor or None (skipped).
        Raises TypeError when either dict is not a dict, ValueError for another value type."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries.")
        summaries = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        log_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=log_dir) as run:
            for summary in summaries:
                run.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                run.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Not provided: torch builds the graph with its TorchScript tracer, which tracegrad
        has no counterpart of. Raises NotImplementedError (nothing is written)."""
        raise NotImplementedError("SummaryWriter.add_graph: tracegrad has no TorchScript tracer to build a model "
                                  "graph from; draw the autograd graph of an output with tracegrad.viz.make_dot instead.")

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
