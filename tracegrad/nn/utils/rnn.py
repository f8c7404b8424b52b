"""Variable-length sequences: mirrors ``torch.nn.utils.rnn`` (``PackedSequence``, ``pad_sequence``,
``pack_padded_sequence``, ``pad_packed_sequence``, ``pack_sequence``, ``unpad_sequence``,
``unpack_sequence``).

A packed sequence stores the valid time steps of a batch sorted by decreasing length, time
major: ``data[offset[t] + b]`` is step ``t`` of (sorted) sequence ``b`` for
``b < batch_sizes[t]``. Packing and unpacking are gathers with integer index tensors, so they
are differentiable. ``pack_padded_sequence`` records torch's one ``PackPaddedSequenceBackward0``
node, ``pad_packed_sequence`` a ``CopySlices`` (the packed rows written into a padded tensor at
once; torch writes one time step at a time, a chain of ``CopySlices``, each over a view of a
slice of the data); the recurrent modules' internal packing stays plain gathers.
"""
from __future__ import annotations

import numbers
from collections import namedtuple

import tracegrad
from tracegrad._api import rnn_functions as _R

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence", "invert_permutation"]


def invert_permutation(permutation):
    """The inverse of an int64 permutation tensor (None stays None)."""
    if permutation is None:
        return None
    inv = [0] * permutation.numel()
    for i, p in enumerate(permutation.tolist()):
        inv[p] = i
    return tracegrad.tensor(inv, dtype=tracegrad.int64)


# torch's name for the tuple PackedSequence derives from
PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(PackedSequence_):
    """Mirrors ``torch.nn.utils.rnn.PackedSequence``: ``data (sum(lengths), *)``, ``batch_sizes``
    int64 ``(max_length,)``, ``sorted_indices``/``unsorted_indices`` int64 ``(B,)`` or None.
    Build it with :func:`pack_padded_sequence` or :func:`pack_sequence`; recurrent layers accept it.
    As torch's constructor, ``PackedSequence((data, batch_sizes))`` takes the pair as one argument
    (AssertionError for anything but a 2-element list/tuple there), a ``batch_sizes`` given on its
    own must be a CPU tensor (ValueError for another device, AttributeError for a non-Tensor:
    torch reads ``batch_sizes.device``)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2 (PackedSequence((data, "
                                     "batch_sizes)) when batch_sizes is not given; build packed sequences with "
                                     "pack_padded_sequence or pack_sequence)")
            data, batch_sizes = data
        else:
            if not isinstance(batch_sizes, tracegrad.Tensor):
                raise AttributeError(f"'{type(batch_sizes).__name__}' object has no attribute 'device' "
                                     "(PackedSequence: batch_sizes must be a CPU int64 Tensor)")
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                                 "created manually; build them with pack_sequence or pack_padded_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(...)``; the index tensors stay as they are (torch keeps them on the data's device)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                          self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _cast_method(name, dtype_name):
    def cast(self):
        return self.to(dtype=getattr(tracegrad, dtype_name))
    cast.__name__ = name
    cast.__doc__ = f"The packed sequence with ``data`` cast to {dtype_name} (as torch's ``PackedSequence.{name}``)."
    return cast


# torch's dtype shortcuts of PackedSequence, each ``to(dtype=...)`` on the data
for _name, _dtype in (("double", "float64"), ("float", "float32"), ("half", "float16"), ("long", "int64"),
                      ("int", "int32"), ("short", "int16"), ("char", "int8"), ("byte", "uint8")):
    setattr(PackedSequence, _name, _cast_method(_name, _dtype))


def _lengths_list(lengths):
    # torch reads a non-tensor ``lengths`` as ``as_tensor(lengths, dtype=int64)``: a number is a
    # 0-d tensor (RuntimeError below), a str/None/mapping is no tensor data (TypeError)
    if isinstance(lengths, (int, float)):
        raise RuntimeError("pack_padded_sequence: 'lengths' argument should be a 1D CPU int64 tensor, but got 0D; "
                           "pass one length per sequence (a list or a 1-D tensor)")
    if isinstance(lengths, tracegrad.Tensor):
        if lengths.device.type != "cpu":
            # torch's kernel takes CPU lengths only (a meta one has no values to read either)
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device.type} tensor; pass lengths.cpu()")
        if lengths.dim() != 1:
            raise RuntimeError(f"pack_padded_sequence: 'lengths' must be a 1D tensor or list, got "
                               f"{lengths.dim()}D")
        return [int(v) for v in lengths.tolist()]
    if lengths is None or isinstance(lengths, (str, bytes, dict)) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"pack_padded_sequence: 'lengths' must be a list or a 1-D tensor of ints, not "
                        f"{type(lengths).__name__}")
    lengths = list(lengths)
    for v in lengths:
        if isinstance(v, (list, tuple)):
            raise RuntimeError("pack_padded_sequence: 'lengths' argument should be a 1D CPU int64 tensor, but got "
                               "a nested sequence; pass one length per sequence")
        if not isinstance(v, (int, float)) and not hasattr(v, "__index__"):
            raise TypeError(f"pack_padded_sequence: 'lengths' must hold numbers, not {type(v).__name__}")
    return [int(v) for v in lengths]


def _batch_sizes(sorted_lengths):
    return [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])]


def _packed_rows(batch_sizes, width):
    """Row of each packed element in a ``(T * width)`` time-major flattening."""
    return [t * width + b for t, n in enumerate(batch_sizes) for b in range(n)]


def padded_to_packed(padded, batch_sizes):
    """``(T, B, *)`` time-major padded (batch sorted by length) -> packed data ``(sum, *)``: the
    packed output of an RNN. Concatenates each step's first ``batch_sizes[t]`` rows, as torch's
    packed RNN kernels do, so the data's node is torch's ``CatBackward0`` (a gather of rows gave
    ``IndexBackward0``)."""
    return tracegrad.cat([padded[t, :n] for t, n in enumerate(batch_sizes)])


def packed_to_padded(data, batch_sizes, padding_value=0.0, total_length=None):
    """Packed data ``(sum, *)`` -> ``(T, B, *)`` time-major, sorted batch order, plus the sorted
    lengths (a list). Padded cells hold ``padding_value``."""
    B, T = batch_sizes[0], len(batch_sizes)
    T_out = T if total_length is None else total_length
    n = data.shape[0]
    index, off = [], 0
    for t in range(T_out):
        bs = batch_sizes[t] if t < T else 0
        index.append([off + b if b < bs else n for b in range(B)])
        off += bs
    pad_row = tracegrad.full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    padded = tracegrad.cat([data, pad_row])[tracegrad.tensor(index, dtype=tracegrad.int64)]
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    return padded, lengths


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Mirrors ``torch.nn.utils.rnn.pack_padded_sequence``.

    Args: input ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``); lengths: list or 1-D int
    tensor of ``B`` lengths, each in ``[1, T]``; enforce_sorted: lengths must be decreasing
    (else they are sorted and ``sorted_indices`` records the order).
    Returns: :class:`PackedSequence`; its data's node is ``PackPaddedSequenceBackward0``, as
    torch's (after an ``IndexSelectBackward0`` when it sorts). Raises: RuntimeError for unsorted lengths with
    ``enforce_sorted=True``, a length <= 0 or > T, or a lengths count that is not B; TypeError
    for an input that is not a Tensor."""
    if not isinstance(input, tracegrad.Tensor):
        raise TypeError(f"pack_padded_sequence(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = tracegrad.tensor(order, dtype=tracegrad.int64)
        lengths = [lengths[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    _strict_bool("_pack_padded_sequence", "batch_first", 3, batch_first)
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.ndim or 1}, "
                         f"{max(input.ndim - 1, 0)}], but got 1)")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if not lengths or lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length ({lengths[0]}) is larger than the padded input's "
                           f"time dimension ({steps}); check `lengths` and `batch_first`")
    bs = _batch_sizes(lengths)
    data = _R.pack_padded_rows(input, bs, batch_first)   # torch's PackPaddedSequenceBackward0
    return PackedSequence(data, tracegrad.tensor(bs, dtype=tracegrad.int64, device="cpu"), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Mirrors ``torch.nn.utils.rnn.pad_packed_sequence``: the inverse of
    :func:`pack_padded_sequence`. Returns ``(padded (T, B, *) or (B, T, *), lengths int64 (B,))``
    in the original batch order; ``T`` is the longest length or ``total_length``. Autograd: a
    ``CopySlices`` (then ``TransposeBackward0`` for batch_first, ``IndexSelectBackward0`` to unsort).
    Raises: ValueError when ``total_length`` is shorter than the longest sequence."""
    bs = [int(v) for v in sequence.batch_sizes.tolist()]
    if total_length is not None and total_length < len(bs):
        raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                         f"got total_length={total_length} and max sequence length being {len(bs)}")
    _strict_bool("_pad_packed_sequence", "batch_first", 3, batch_first)
    # as torch's _pad_packed_sequence: the packed rows copied into a tensor of padding_value
    # (a CopySlices node), transposed for batch_first, then put back in the input's order
    data, B = sequence.data, bs[0]
    steps = len(bs) if total_length is None else total_length
    padded = tracegrad.full((steps, B, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = tracegrad.tensor(_packed_rows(bs, B), dtype=tracegrad.int64, device=data.device)
    padded.view(steps * B, *data.shape[1:]).index_copy_(0, rows, data)
    lengths = tracegrad.tensor([sum(1 for n in bs if n > b) for b in range(B)], dtype=tracegrad.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices]
    return padded, lengths


def _strict_bool(fn, name, pos, value):
    """torch's parser reads a ``bool`` argument of its rnn kernels as a Python bool only:
    TypeError for an int, None, a NumPy bool or a tensor."""
    if type(value) is not bool:
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be bool, not {type(value).__name__}")


def _real_number(v):
    """``pad_sequence``'s ``padding_value`` as torch's parser reads a ``float`` argument: a Python
    or NumPy real number, a bool, or a 0-d real tensor; TypeError for anything else."""
    if isinstance(v, tracegrad.Tensor) and v.dim() == 0:
        if v.dtype.is_complex:
            raise RuntimeError("pad_sequence: value cannot be converted to type double without overflow "
                               "(a complex padding_value); pass a real number")
        return v.item()
    if isinstance(v, numbers.Real):    # Python and NumPy reals, bool
        return v
    raise TypeError(f"pad_sequence(): argument 'padding_value' (position 3) must be float, not "
                    f"{type(v).__name__}")


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Mirrors ``torch.nn.utils.rnn.pad_sequence``: a list of ``(L_i, *)`` tensors -> ``(T, B, *)``
    (``(B, T, *)`` with ``batch_first``), ``T = max L_i``, padded with ``padding_value`` on
    ``padding_side`` ('right' or 'left'). As torch's kernel, the result has the first sequence's
    dtype and trailing shape, and each sequence is copied in (cast to that dtype, broadcast to
    ``(L_i, *trailing)``). Raises RuntimeError for another padding_side, an empty list, a
    non-iterable ``sequences`` or a sequence that does not broadcast to its slot; TypeError for a
    ``padding_value`` that is not a real number (torch's ``float`` argument)."""
    if isinstance(sequences, tracegrad.Tensor):
        sequences = list(sequences.unbind(0))
    try:
        sequences = list(sequences)
    except TypeError:
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}; pass a list or tuple of tensors") from None
    for i, s in enumerate(sequences):   # torch's parser reads a list of Tensors
        if not isinstance(s, tracegrad.Tensor):
            raise TypeError(f"pad_sequence(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(s).__name__}")
    # torch's order: the iterable check, then its parser (the list, batch_first, padding_value),
    # then the kernel's padding_side check
    _strict_bool("pad_sequence", "batch_first", 2, batch_first)
    padding_value = _real_number(padding_value)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences; pass at least one tensor")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("pad_sequence: a sequence must have at least one dim (its length); got a 0-d tensor")
    trailing, dtype = tuple(sequences[0].shape[1:]), sequences[0].dtype
    T = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        # torch copies each sequence into its slot of a tensor of the first one's dtype:
        # copy_ casts (an int64 first sequence truncates later float ones) and broadcasts
        slot = (s.shape[0], *trailing)
        if tuple(s.shape) != slot:
            try:
                s = s.expand(slot)
            except RuntimeError:
                raise RuntimeError(f"pad_sequence: a sequence of shape {list(s.shape)} does not broadcast to its "
                                   f"slot {list(slot)} (the first sequence's trailing shape); pad or reshape "
                                   "the sequences to match") from None
        s = s.to(dtype)
        fill = tracegrad.full((T - s.shape[0], *trailing), padding_value, dtype=dtype)
        rows.append(tracegrad.cat([s, fill] if padding_side == "right" else [fill, s]))
    return tracegrad.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Mirrors ``torch.nn.utils.rnn.unpad_sequence``: padded ``(T, B, *)`` -> list of ``(L_i, *)``.
    ``lengths`` is a 1-D tensor of ``B`` lengths: AttributeError for another kind (torch reads
    ``lengths.device``), ValueError for a count that is not ``B``."""
    if not isinstance(lengths, tracegrad.Tensor):
        raise AttributeError(f"unpad_sequence: 'lengths' must be a Tensor (torch reads lengths.device), not "
                             f"{type(lengths).__name__}; pass tracegrad.tensor(lengths)")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths = _lengths_list(lengths)
    if len(lengths) != padded_sequences.shape[0]:
        raise ValueError(f"unpad_sequence: got {len(lengths)} lengths for a batch of {padded_sequences.shape[0]} "
                         "sequences; pass one length per sequence")
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Mirrors ``torch.nn.utils.rnn.pack_sequence``: a list of ``(L_i, *)`` tensors -> PackedSequence
    (``enforce_sorted`` as :func:`pack_padded_sequence`)."""
    for i, s in enumerate(sequences):
        if isinstance(s, tracegrad.Tensor) and s.dim() == 0:
            # its length is its dim 0 (torch: "Dimension specified as 0 but tensor has no dimensions")
            raise IndexError(f"pack_sequence: sequence {i} is a 0-d tensor (it has no dimensions, so no length "
                             "at dim 0); pass tensors (L_i, *), e.g. s.reshape(1) for one step")
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Mirrors ``torch.nn.utils.rnn.unpack_sequence``: PackedSequence -> list of ``(L_i, *)``."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
