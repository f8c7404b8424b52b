"""Recurrent layers at the ``tracegrad._api.rnn_functions`` level (torch's ``_VF.lstm``/``gru``/
``rnn_tanh`` kernels, one layer and direction at a time): argument normalisation, then one
op of ``_ops/rnn.py``. ``tracegrad.nn.modules.rnn`` stacks layers and directions on top."""
from __future__ import annotations

from ..autograd._dispatch import apply_op
from .._ops.registry import OPS

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")


def rnn_layer(mode, input, hx, cx, weight_ih, weight_hh, bias_ih=None, bias_hh=None, weight_hr=None,
              lengths=None, reverse=False):
    """One recurrent layer in one direction over a whole sequence.

    Args: mode one of ``MODES``; input ``(T, B, I)``; hx ``(B, P)``; cx ``(B, H)`` (LSTM, else
    None); weight_ih ``(G*H, I)``; weight_hh ``(G*H, P)``; biases ``(G*H,)`` or None;
    weight_hr ``(P, H)`` or None (LSTM projections, ``P = proj_size``, else ``P = H``);
    lengths: int64 ``(B,)`` or None -- steps at or past a length keep the state and output
    zeros (packed sequences); reverse: run from the last step to the first.
    Returns: ``(output (T, B, P), h_T (B, P))``, plus ``c_T (B, H)`` for LSTM.
    Autograd: one ``MkldnnRnnLayerBackward0`` node (torch CPU's LSTM layer node).
    Raises: ValueError for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"Unrecognized RNN mode: {mode}; expected one of {MODES}")
    args = (input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, weight_hr, lengths)
    static = (("mode", mode), ("reverse", bool(reverse)))
    if mode == "LSTM":
        return apply_op(OPS["lstm_layer"], args, static)
    return apply_op(OPS["rnn_layer"], args[:6] + (None, None, lengths), static)


def pack_padded_rows(input, batch_sizes, batch_first=False):
    """torch's ``_pack_padded_sequence`` data: the valid steps of ``input`` (``(T, B, *)``, or
    ``(B, T, *)`` with ``batch_first``; batch sorted by decreasing length) in packed order,
    step 0 of every sequence first. batch_sizes: list of ints, one per step.
    Returns ``(sum(batch_sizes), *)``. Autograd: one ``PackPaddedSequenceBackward0`` node."""
    steps, width = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    rows = tuple(b * steps + t if batch_first else t * width + b for t, n in enumerate(batch_sizes) for b in range(n))
    return apply_op(OPS["pack_padded_sequence"], (input,), (("rows", rows),))
