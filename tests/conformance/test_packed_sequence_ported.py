"""PyTorch's test/nn/test_packed_sequence.py (PackedSequenceTest), the parts the round-13 port
(test_packed_sequence_ported_round13.py) and test_autograd_nodes_ported_round21.py left out:
PackedSequence as a namedtuple (indexing, unpacking, _fields, _asdict), its constructor with
sorted_indices only, ``to`` with a dtype, a device, both, or another tensor (what it returns
self for, what the indices keep), the cast methods on a tensor that needs grad,
pack/unpack round trips with trailing dimensions, padding_value and total_length together,
enforce_sorted with ties and equal lengths, lengths given as int32 tensors or numpy integers,
length errors, gradients through pack_sequence / unpack_sequence / pad_packed_sequence, the
grad_fn names of the packing ops, and a batch_first RNN with an initial state on an unsorted
PackedSequence.

Each check is a program run with torch 2.13 (the oracle) and with tracegrad: the log it returns
(values, dtypes, shapes, identities, exception classes and message words) and the warning
classes must be equal. Adapted: data are fixed arrays instead of random draws."""
import numpy as np
import pytest
from _observe_helpers import attempt, make_check, msg_has, norm

torch = pytest.importorskip("torch")

check = make_check(norm)


def R(T):
    return T.nn.utils.rnn


def _seqs(T, trailing=(), requires_grad=False):
    """Three sequences of lengths 2, 3, 1 (unsorted) with ``trailing`` feature dims."""
    out = []
    for k, n in enumerate((2, 3, 1)):
        a = np.arange(n * int(np.prod(trailing, dtype=int)), dtype=np.float32).reshape((n,) + tuple(trailing))
        out.append(T.tensor((a + 10 * k) * 0.25, requires_grad=requires_grad))
    return out


def _dt(d):
    """A dtype's name (torch.float64 and tracegrad.float64 compare equal)."""
    return str(d).split(".")[-1]


def _namedtuple_access(T):
    # a PackedSequence is a namedtuple: index, unpack, _fields, _asdict, len, equality of fields
    p = R(T).pack_sequence(_seqs(T), enforce_sorted=False)
    data, bs, si, ui = p
    return [p[0] is p.data, p[1] is p.batch_sizes, data is p.data, bs, si, ui, p._fields, list(p._asdict()),
            len(p), p[-1] is p.unsorted_indices, type(p).__name__, type(p).__mro__[1].__name__]


def _constructor_sorted_indices_only(T):
    # PackedSequence(data, batch_sizes, sorted_indices): unsorted_indices is its inverse
    PS = R(T).PackedSequence
    data = T.arange(6.0)
    p = PS(data, T.tensor([3, 2, 1]), T.tensor([2, 0, 1]))
    q = PS(data, T.tensor([3, 2, 1]))
    r = PS(data, T.tensor([3, 2, 1]), T.tensor([2, 0, 1]), T.tensor([1, 2, 0]))
    return [p.sorted_indices, p.unsorted_indices, q.sorted_indices, q.unsorted_indices, r.unsorted_indices,
            _dt(p.batch_sizes.dtype), R(T).pad_packed_sequence(p)]


def _invert_permutation(T):
    f = R(T).invert_permutation
    return [f(T.tensor([2, 0, 3, 1])), f(None), f(T.tensor([0]))]


def _to_variants(T):
    # test_to: to(dtype), to(device, dtype), to(tensor), to(same) is self; indices stay int64
    padded = R(T).pad_sequence(_seqs(T))
    a = R(T).pack_padded_sequence(padded, [2, 3, 1], enforce_sorted=False)
    b = a.to(T.float64)
    c = a.to("cpu", T.float16)
    d = a.to(T.zeros(1, dtype=T.int32))
    e = a.to(device="cpu", dtype=T.float32)
    return [_dt(b.data.dtype), _dt(b.sorted_indices.dtype), _dt(b.batch_sizes.dtype), b.unsorted_indices,
            _dt(c.data.dtype), d.data,
            e is a, a.to(T.float32) is a, a.to("cpu") is a, b is a, type(b).__name__, a.is_cuda, a.is_pinned(),
            a.cpu() is a, _dt(a.double().data.dtype), _dt(a.half().data.dtype)]


def _casts_keep_graph(T):
    # casting a PackedSequence whose data needs grad keeps the graph
    x = T.tensor([[1.0, 2.0], [3.0, 0.0]], requires_grad=True)
    p = R(T).pack_padded_sequence(x, [2, 1])
    q = p.double()
    (q.data * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
    return [q.data.requires_grad, _dt(q.data.dtype), x.grad]


def _round_trip_trailing(T):
    # pack_sequence then pad_packed_sequence (batch_first both ways, padding_value and
    # total_length together) on sequences with trailing dims; then unpack_sequence
    s = _seqs(T, (2, 2))
    p = R(T).pack_sequence(s, enforce_sorted=False)
    out = [p.data.shape, p.batch_sizes]
    for bf in (True, False):
        out += list(R(T).pad_packed_sequence(p, batch_first=bf, padding_value=-1.0, total_length=5))
    out.append(R(T).unpack_sequence(p))
    return out


def _ties_and_equal_lengths(T):
    # lengths with ties: the order pack_sequence sorts them in; all-equal lengths with
    # enforce_sorted=True
    a, b, c = T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0, 5.0]), T.tensor([6.0, 7.0])
    p = R(T).pack_sequence([a, b, c, T.tensor([8.0, 9.0, 10.0])], enforce_sorted=False)
    q = R(T).pack_sequence([a, c], enforce_sorted=True)
    return [p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices, q.data, q.batch_sizes,
            R(T).pad_packed_sequence(p, batch_first=True)]


def _lengths_kinds(T):
    # lengths as an int32 tensor, as numpy integers, as a tuple
    x = T.arange(12.0).reshape(4, 3)
    r = R(T)
    return [r.pack_padded_sequence(x, T.tensor([4, 2, 1], dtype=T.int32)).batch_sizes,
            r.pack_padded_sequence(x, [np.int64(4), np.int64(3), np.int64(3)]).data,
            r.pack_padded_sequence(x, (3, 4, 1), enforce_sorted=False).sorted_indices,
            r.pack_padded_sequence(x.t(), T.tensor([2, 4, 4]), batch_first=True, enforce_sorted=False).data]


def _length_errors(T):
    # a count that is not the batch, a negative length, an empty list, unsorted lengths.
    # Left out: a length longer than the padded input (torch 2.13 reads past the input's end)
    x = T.ones(3, 2)
    r = R(T)
    return [attempt(lambda: r.pack_padded_sequence(x, [3])),
            attempt(lambda: r.pack_padded_sequence(x, [3, 2, 1])),
            attempt(lambda: r.pack_padded_sequence(x, [-1, 1])),
            attempt(lambda: r.pack_sequence([])),
            msg_has(lambda: r.pack_padded_sequence(x, [1, 3]), "`lengths` array must be sorted in decreasing order")]


def _grad_through_pack_sequence(T):
    # gradients reach each sequence through pack_sequence(enforce_sorted=False) and back out of
    # unpack_sequence (weighted per sequence, squared for the longest)
    s = _seqs(T, requires_grad=True)
    u = R(T).unpack_sequence(R(T).pack_sequence(s, enforce_sorted=False))
    (sum((t * (i + 1)).sum() for i, t in enumerate(u)) + (u[1] ** 2).sum()).backward()
    return [t.grad for t in s]


def _desc(g):
    """A node and everything under it, as torch's graph_desc in test_autograd.py, down to a
    CopySlices (torch's _pad_packed_sequence writes one per time step, each from a view of a
    slice of the data; tracegrad writes all steps at once: one CopySlices over the data)."""
    if g is None:
        return "None"
    if type(g).__name__ == "CopySlices":
        return "CopySlices(...)"
    return f"{type(g).__name__}({', '.join(_desc(n) for n, _ in g.next_functions)})"


def _grad_fn_names(T):
    # the nodes the packing ops record: pack_padded_sequence one PackPaddedSequenceBackward0 (after
    # an IndexSelectBackward0 when it sorts), pad_packed_sequence a CopySlices, transposed for
    # batch_first, then an IndexSelectBackward0 back to the input's order
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]], requires_grad=True)
    r = R(T)
    p = r.pack_padded_sequence(x, [2, 1, 2], enforce_sorted=False)
    q = r.pack_padded_sequence(x, [2, 2, 1])
    b = r.pack_padded_sequence(x.t(), [2, 2, 1], batch_first=True)
    out = [_desc(p.data.grad_fn), _desc(q.data.grad_fn), _desc(b.data.grad_fn)]
    for packed in (p, q):
        for bf in (False, True):
            un, _ = r.pad_packed_sequence(packed, batch_first=bf, total_length=3)
            out.append(_desc(un.grad_fn))
    un, _ = r.pad_packed_sequence(p, batch_first=True)
    (un * T.arange(6.0).view(3, 2)).sum().backward()
    return out + [x.grad]


def _set_params(T, m):
    """Fixed weights, the same in both libraries."""
    with T.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(T.tensor(np.sin(np.arange(p.numel()) + i).reshape(tuple(p.shape)).astype(np.float32)) * 0.4)


def _rnn_batch_first_h0(T):
    # a batch_first RNN on an unsorted PackedSequence with h0 given in the input's batch order:
    # outputs in the packed order, h back in the input's order, gradients to the padded input
    # and to h0 (the round-13 port runs the same RNN and lengths time-major without h0)
    rnn = T.nn.RNN(2, 3, batch_first=True)
    _set_params(T, rnn)
    x = T.tensor(np.cos(np.arange(24.0)).reshape(3, 4, 2).astype(np.float32), requires_grad=True)
    h0 = T.tensor(np.sin(np.arange(9.0)).reshape(1, 3, 3).astype(np.float32), requires_grad=True)
    p = R(T).pack_padded_sequence(x, [4, 1, 3], batch_first=True, enforce_sorted=False)
    out, h = rnn(p, h0)
    un, lens = R(T).pad_packed_sequence(out, batch_first=True)
    (un.sum() + h.sum()).backward()
    # to 4 decimals: a near-zero output's 5th significant digit is float32 rounding
    return [type(out).__name__, out.sorted_indices, out.batch_sizes, lens] + \
        [T.round(t, decimals=4) for t in (un, h, x.grad, h0.grad)]


def test_packed_sequence():
    check([_namedtuple_access, _constructor_sorted_indices_only, _invert_permutation, _to_variants,
           _casts_keep_graph, _round_trip_trailing, _ties_and_equal_lengths, _lengths_kinds, _length_errors,
           _grad_through_pack_sequence, _grad_fn_names, _rnn_batch_first_h0])
