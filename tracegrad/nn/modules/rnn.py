"""Recurrent layers: mirror ``torch.nn.RNN``, ``LSTM``, ``GRU`` and ``RNNCell``, ``LSTMCell``,
``GRUCell`` -- torch's constructor arguments, parameter names (``weight_ih_l0``,
``bias_hh_l1_reverse``, ``weight_hr_l0``...), shapes and initialisation
(``uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``), so ``state_dict``s interchange.

Each layer and direction is one op (``tracegrad._api.rnn_functions.rnn_layer``: a scan over time
inside one jitted program). The layers above it are plain tracegrad code: directions are
concatenated (``CatBackward0``), dropout applies between layers in training mode, final
states are stacked (``StackBackward0``) as torch does. The cells are written with public ops
in torch's order, so their grad_fns are torch's (``MulBackward0``/``AddBackward0`` for LSTMCell).
"""
from __future__ import annotations

import math
import numbers

import tracegrad
from tracegrad._api import rnn_functions as _R
from tracegrad._api.promotion import _SCALAR_NAME

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, packed_to_padded, padded_to_packed
from .module import Module
from ..._ops.warn import warn as _warn

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_NAMES = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _states(hx):
    return tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)   # an LSTM pair may be a list


def _check_int(value, name):
    if not isinstance(value, int):   # torch's isinstance test: a bool passes
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")


def _check_batch_sizes(batch_sizes, data):
    """A PackedSequence made by hand, checked as torch's packed RNN kernel reads it: int64
    ``batch_sizes`` (TypeError for a floating one, RuntimeError for another integer dtype), none
    larger than the one before, and no more rows than ``data`` has (RuntimeError; fewer rows are
    read in part, as torch)."""
    if not isinstance(batch_sizes, tracegrad.Tensor):
        return
    if batch_sizes.dtype.is_floating_point or batch_sizes.dtype.is_complex:
        raise TypeError(f"zeros(): argument 'size' must be tuple of ints, but got a {batch_sizes.dtype} Tensor "
                        "(PackedSequence.batch_sizes must be int64; build it with pack_padded_sequence)")
    if batch_sizes.dtype != tracegrad.int64:
        raise RuntimeError(f"expected scalar type Long but found {batch_sizes.dtype} (PackedSequence.batch_sizes "
                           "must be int64; build it with pack_padded_sequence)")
    bs = batch_sizes.tolist()
    if any(b > a for a, b in zip(bs, bs[1:])):
        raise RuntimeError(f"PackedSequence batch_sizes {bs} increase from one step to the next; they must not "
                           "(build the packed sequence with pack_padded_sequence or pack_sequence)")
    if sum(bs) > data.shape[0]:
        raise RuntimeError(f"start ({sum(bs) - bs[-1]}) + length ({bs[-1]}) exceeds dimension size ({data.shape[0]}): "
                           f"PackedSequence batch_sizes {bs} need more rows than its data has")


class RNNBase(Module):
    """Base of :class:`RNN`, :class:`LSTM`, :class:`GRU` (mirrors ``torch.nn.RNNBase``).

    Parameters per layer ``k`` and direction (suffix ``_reverse`` for the backward one):
    ``weight_ih_lk (G*H, I_k)``, ``weight_hh_lk (G*H, P)``, ``bias_ih_lk``/``bias_hh_lk (G*H,)``
    (with ``bias``), ``weight_hr_lk (P, H)`` (LSTM with ``proj_size``), where G is 4 (LSTM),
    3 (GRU) or 1, ``P`` is ``proj_size`` or ``hidden_size``, ``I_0 = input_size`` and
    ``I_k = P * num_directions``. Raises ValueError/TypeError for bad arguments as torch."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        try:
            float(dropout)   # torch reads float(dropout) first: TypeError for None, a list...
        except TypeError:
            raise TypeError(f"float() argument must be a string or a real number, not '{type(dropout).__name__}' "
                            f"({type(self).__name__}: dropout must be a number in [0, 1])") from None
        except ValueError:
            pass
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            _warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                  f"expects num_layers greater than 1, but got dropout={dropout} and "
                  f"num_layers={num_layers}")
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        _check_int(input_size, "input_size")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_int(hidden_size, "hidden_size")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if type(hidden_size) is bool and _GATES[mode] == 1 and hidden_size:
            # torch sizes a plain RNN's weights by hidden_size itself (the gated kinds by a multiple of it,
            # an int): a bool as a size is its factory's TypeError
            raise TypeError("empty(): argument 'size' must be tuple of ints, but found element of type bool at pos 0; "
                            "pass hidden_size as an int")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        ndir = 2 if bidirectional else 1
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(ndir):
                layer_input = input_size if layer == 0 else real_hidden * ndir
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(tracegrad.empty(shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """Parameters grouped per layer and direction, as torch's ``all_weights``."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """Accepted for torch compatibility; a no-op (there is no cuDNN weight buffer to compact)."""

    def reset_parameters(self):
        """torch's init: every parameter ~ ``uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- argument checks (torch's messages) ---------------------------------------------------
    def check_input(self, input, batch_sizes):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _expected_sizes(self, mini_batch):
        nd = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * nd, mini_batch, real_hidden), (self.num_layers * nd, mini_batch, self.hidden_size)

    @staticmethod
    def check_hidden_size(hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    # ---- forward -----------------------------------------------------------------------------
    def forward(self, input, hx=None):
        """Run the stacked layers. Input ``(T, B, I)`` (``(B, T, I)`` with ``batch_first``),
        unbatched ``(T, I)``, or a :class:`PackedSequence`. ``hx`` (``(h_0, c_0)`` for LSTM)
        ``(num_layers * num_directions, B, P)`` (``c_0``: hidden_size), zeros when None.
        Returns ``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM); output
        ``(T, B, num_directions * P)``, a PackedSequence for packed input.
        Raises ValueError for a wrong input rank or dtype, RuntimeError for wrong sizes or a hidden
        state whose dtype is not the input's; TypeError
        for a ``bidirectional`` that is not a bool (torch's kernel parses it at the call)."""
        if type(self.bidirectional) is not bool:
            raise TypeError(f"{self.mode.lower()}() received an invalid combination of arguments: bidirectional="
                            f"{type(self.bidirectional).__name__} ({type(self).__name__}: pass bidirectional=True "
                            f"or False)")
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            _check_batch_sizes(batch_sizes, data)
            bs = [int(v) for v in batch_sizes.tolist()]
            mini_batch, is_batched = bs[0], True
            w = self._flat_weights[0]
            if lstm and data.dtype != w.dtype:
                # torch's LSTM runs none of RNNBase's checks on a packed input: its kernel's matmul
                # refuses the dtype (RuntimeError, where check_input says ValueError)
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_SCALAR_NAME[data.dtype.name]} "
                                   f"and {_SCALAR_NAME[w.dtype.name]} (LSTM: convert the packed data with "
                                   f".to({w.dtype}))")
            self.check_input(data, batch_sizes)
        else:
            if input.dim() not in (2, 3):
                got = f"{input.dim()}D tensor" if self.mode.startswith("RNN") else f"{input.dim()}D"
                raise ValueError(f"{_NAMES[self.mode]}: Expected input to be 2D or 3D, got {got} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            sorted_indices = unsorted_indices = None
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        hx = self._prepare_hidden(hx, is_batched, lstm, sorted_indices is not None)
        if not packed:
            self.check_input(input, None)
            if input.size(1 if self.batch_first else 0) == 0:   # torch's kernel: no step to run
                raise RuntimeError(f"Expected sequence length to be larger than 0 in RNN ({type(self).__name__} got "
                                   f"input of shape {list(input.shape)})")
        exp_h, exp_c = self._expected_sizes(mini_batch)
        if hx is not None:
            if lstm:
                self.check_hidden_size(hx[0], exp_h, "Expected hidden[0] size {}, got {}")
                self.check_hidden_size(hx[1], exp_c, "Expected hidden[1] size {}, got {}")
            else:
                self.check_hidden_size(hx, exp_h)
            want = (data if packed else input).dtype
            for i, h in enumerate(_states(hx)):
                if h.dtype is not want:    # torch's kernel fails in its matmul (or mkldnn) on this
                    name = f"hidden[{i}]" if lstm else "hidden"
                    raise RuntimeError(f"{type(self).__name__}: expected {name} to have the input's dtype {want}, "
                                       f"but got {h.dtype}; convert it with .to({want})")
            if sorted_indices is not None:     # the caller's batch order -> the packed (sorted) order
                hx = tuple(h.index_select(1, sorted_indices) for h in _states(hx))
                hx = hx if lstm else hx[0]
        if packed:
            x, lengths = packed_to_padded(data, bs)
            lengths = tracegrad.tensor(lengths, dtype=tracegrad.int64)
        else:
            x, lengths = (input.transpose(0, 1) if self.batch_first else input), None
        out, hidden = self._run_layers(x, hx, exp_h, exp_c, lengths)
        if unsorted_indices is not None:
            hidden = tuple(h.index_select(1, unsorted_indices) for h in hidden)
        if packed:
            return PackedSequence(padded_to_packed(out, bs), batch_sizes, sorted_indices, unsorted_indices), \
                (hidden if lstm else hidden[0])
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(batch_dim)
            hidden = tuple(h.squeeze(1) for h in hidden)
        return out, (hidden if lstm else hidden[0])

    def _prepare_hidden(self, hx, is_batched, lstm, permuted=False):
        if hx is None:
            return None
        want = 3 if is_batched else 2
        kind = "batched 3-D" if is_batched else "unbatched 2-D"
        if lstm:
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not is_batched:   # torch rebuilds the pair from hx[0], hx[1] (any extra entry is dropped)
                return hx[0].unsqueeze(1), hx[1].unsqueeze(1)
            if permuted:         # so does its reordering for an unsorted packed batch
                return hx[0], hx[1]
            # what torch's lstm kernel refuses of a batched state: a Tensor for the pair (its parser:
            # TypeError) and a sequence of other than two (RuntimeError); unchecked, a (2, L, B, H)
            # tensor was taken as the pair and three states were unpacking's ValueError
            if not isinstance(hx, (tuple, list)):
                raise TypeError(f"lstm() received an invalid combination of arguments: hx must be a tuple of two "
                                f"Tensors (h_0, c_0), not {type(hx).__name__}")
            if len(hx) != 2:
                raise RuntimeError(f"lstm expects two hidden states (LSTM: pass (h_0, c_0), got {len(hx)})")
            return hx
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
        return hx if is_batched else hx.unsqueeze(1)

    def _run_layers(self, x, hx, exp_h, exp_c, lengths):
        """``x (T, B, I)`` time-major -> output ``(T, B, D*P)`` and the stacked final states."""
        if hx is None:
            h0 = tracegrad.zeros(exp_h, dtype=x.dtype)
            hx = (h0, tracegrad.zeros(exp_c, dtype=x.dtype)) if self.mode == "LSTM" else h0
        if not isinstance(x, tracegrad.Tensor):
            # a tensor-like that is no Tensor (it has __torch_function__): hand it to the public
            # kernel function (tracegrad.rnn_tanh, lstm...), whose override unwraps it, as torch's _VF
            res = getattr(tracegrad, self.mode.lower())(x, hx, self._flat_weights, self.bias, self.num_layers,
                                                        self.dropout, self.training, self.bidirectional, False)
            return res[0], tuple(res[1:])
        return run_stack(self.mode, x, hx, self.all_weights, self.bias, self.num_layers, self.dropout,
                         self.training, self.bidirectional, lengths)


def run_stack(mode, x, hx, weights, has_biases, num_layers, dropout, train, bidirectional, lengths=None):
    """The layers and directions of a recurrent net over a time-major sequence (torch's
    ``_VF.lstm``/``gru``/``rnn_*`` kernels; ``nn.RNNBase`` and ``tracegrad.lstm``... share it).

    Args: mode one of ``_GATES``; x ``(T, B, I)``; hx ``(L*D, B, P)`` (LSTM: the pair ``(h, c)``,
    c ``(L*D, B, H)``); weights one list per layer and direction, ``[w_ih, w_hh]`` then
    ``[b_ih, b_hh]`` when ``has_biases``, then ``w_hr`` for LSTM projections; dropout between
    layers when ``train``; lengths int64 ``(B,)`` or None (packed sequences).
    Returns ``(output (T, B, D*P), (h_n,) or (h_n, c_n))``."""
    lstm = mode == "LSTM"
    h0, c0 = hx if lstm else (hx, None)
    ndir = 2 if bidirectional else 1
    n_main = 4 if has_biases else 2
    finals_h, finals_c = [], []
    for layer in range(num_layers):
        outs = []
        for direction in range(ndir):
            k = layer * ndir + direction
            group = list(weights[k])
            w_ih, w_hh, b_ih, b_hh = (group[:4] if has_biases else group[:2] + [None, None])
            res = _R.rnn_layer(mode, x, h0[k], c0[k] if lstm else None, w_ih, w_hh, b_ih, b_hh,
                               group[n_main] if len(group) > n_main else None, lengths, reverse=direction == 1)
            outs.append(res[0])
            finals_h.append(res[1])
            if lstm:
                finals_c.append(res[2])
        x = outs[0] if ndir == 1 else tracegrad.cat(outs, 2)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    hidden = (tracegrad.stack(finals_h, 0),)
    if lstm:
        hidden += (tracegrad.stack(finals_c, 0),)
    return x, hidden


class RNN(RNNBase):
    """Mirrors ``torch.nn.RNN``: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``,
    ``nonlinearity`` 'tanh' (default) or 'relu'. Arguments, shapes and errors as
    :class:`RNNBase`; ValueError for another nonlinearity.
    Differs from torch: one ``MkldnnRnnLayerBackward0`` node per layer and direction where
    torch CPU unrolls the steps (``StackBackward0`` over ``TanhBackward0`` nodes)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Mirrors ``torch.nn.LSTM`` (gates i, f, g, o; ``proj_size`` projects ``h_t`` with
    ``weight_hr``). ``forward(input, (h_0, c_0)) -> output, (h_n, c_n)``.
    Autograd: one ``MkldnnRnnLayerBackward0`` per layer and direction, as torch CPU
    (torch falls back to unrolled steps with ``proj_size``; we keep the fused node)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Mirrors ``torch.nn.GRU`` (gates r, z, n; ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``).
    Differs from torch: grad_fn as :class:`RNN`."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---- cells ------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Base of the cells (mirrors ``torch.nn.RNNCellBase``): ``weight_ih (G*H, I)``,
    ``weight_hh (G*H, H)``, ``bias_ih``/``bias_hh (G*H,)``; torch's uniform init."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(tracegrad.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(tracegrad.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(tracegrad.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(tracegrad.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, input, hx, name, n_states):
        """Check ranks (ValueError as torch), add the batch dim to unbatched input, default the
        state(s) to zeros, check sizes (RuntimeError as torch's cell kernels)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if n_states == 2 and isinstance(hx, tracegrad.Tensor):   # torch's lstm_cell parser: a tuple
            raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor "
                            f"({name}: pass (h, c))")
        states = None if hx is None else ((hx,) if n_states == 1 else tuple(hx))
        if states is not None and len(states) != n_states:
            raise RuntimeError(f"lstm_cell expects two hidden states ({name}: pass (h, c), got {len(states)})")
        if states is not None:
            for i, h in enumerate(states):
                if h.dim() not in (1, 2):
                    what = "hidden" if n_states == 1 else f"hx[{i}]"
                    raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if states is None:
            z = tracegrad.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            states = (z,) * n_states
        elif not batched:
            states = tuple(h.unsqueeze(0) for h in states)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for i, h in enumerate(states):
            if h.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")
        return input, states, batched


class RNNCell(RNNCellBase):
    """Mirrors ``torch.nn.RNNCell``: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; input
    ``(B, I)`` or ``(I,)``, hx ``(B, H)`` or ``(H,)`` (zeros when None). grad_fn
    ``TanhBackward0``/``ReluBackward0`` as torch. ValueError for a wrong rank, RuntimeError
    for wrong sizes."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), batched = self._batch(input, hx, "RNNCell", 1)
        pre = F.linear(input, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        out = pre.tanh() if self.nonlinearity == "tanh" else pre.relu()
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """Mirrors ``torch.nn.LSTMCell``: ``(h', c') = cell(x, (h, c))`` with gates i, f, g, o.
    grad_fn ``MulBackward0`` (h') and ``AddBackward0`` (c') as torch."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h, c), batched = self._batch(input, hx, "LSTMCell", 2)
        gates = F.linear(input, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
        hy = o.sigmoid() * cy.tanh()
        return (hy, cy) if batched else (hy.squeeze(0), cy.squeeze(0))


class GRUCell(RNNCellBase):
    """Mirrors ``torch.nn.GRUCell`` (gates r, z, n). grad_fn ``AddBackward0`` as torch."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._batch(input, hx, "GRUCell", 1)
        xr, xz, xn = F.linear(input, self.weight_ih, self.bias_ih).chunk(3, 1)
        hr, hz, hn = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, 1)
        r, z = (hr + xr).sigmoid(), (hz + xz).sigmoid()
        n = (xn + hn * r).tanh()
        out = (h - n) * z + n
        return out if batched else out.squeeze(0)
