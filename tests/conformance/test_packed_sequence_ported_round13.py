"""Ported from PyTorch's test/nn/test_packed_sequence.py (PackedSequenceTest), round 13:
pad_sequence / unpad_sequence, pack_sequence / unpack_sequence, pack_padded_sequence with and
without enforce_sorted, pad_packed_sequence's total_length, casts and ``to`` on a
PackedSequence, and their errors. Each case is a ``same_outcome`` program: torch 2.13 is the
oracle and tracegrad must return equal values or raise the same builtin exception class.

Adapted: sequences come from fixed numpy draws instead of ``random_``/``torch.rand``, and
shuffles use a fixed numpy permutation, so both libraries see the same data."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")

def _seqs(T, trailing=(), n=5, dtype="float32"):
    """Sequences of lengths k*k (k = 1..n) in a fixed shuffled order."""
    order = np.random.RandomState(n + len(trailing)).permutation(n)
    return [T.tensor(np.random.RandomState(int(k)).standard_normal(((k + 1) ** 2, 3) + tuple(trailing)).astype(dtype))
            for k in order]


def _abc(T):
    return T.tensor([1, 2, 3]), T.tensor([4, 5]), T.tensor([6])


def _rnn(T):
    return T.nn.utils.rnn


def _pad_sequence_basic(T):
    # test_pad_sequence: batch_first both ways, padding_value, already sorted input
    a, b, c = _abc(T)
    R = _rnn(T)
    return (R.pad_sequence([b, a, c], True), R.pad_sequence([b, a, c]), R.pad_sequence([b, a, c], True, 1),
            R.pad_sequence([a, b, c], True))


def _pad_sequence_dims(T):
    # test_pad_sequence "more dimensions": trailing dims of every rank
    R = _rnn(T)
    out = []
    for nd in range(4):
        s = _seqs(T, (2,) * nd)
        out += [R.pad_sequence(s, True), R.pad_sequence(s)]
    return out


def _pad_sequence_padding_side(T):
    # pad_sequence(padding_side="left") pads before the data
    a, b, c = _abc(T)
    R = _rnn(T)
    return R.pad_sequence([b, a, c], True, padding_side="left"), R.pad_sequence([b, a, c], padding_side="left")


def _pad_sequence_bad_side(T):
    a, b, c = _abc(T)
    return _rnn(T).pad_sequence([a, b], padding_side="middle")


def _pad_sequence_tensor_input(T):
    # test_pad_sequence_with_tensor_sequences: a stacked tensor is iterated along dim 0
    R = _rnn(T)
    x = R.pad_sequence((T.tensor([[7, 6]]), T.tensor([[-7, -1]])))
    y = R.pad_sequence(T.tensor([[[7, 6]], [[-7, -1]]]))
    return x, y, tuple(x.shape)


def _pad_sequence_non_iterable(T):
    # test_pad_sequence_with_non_iterable_sequences
    return _rnn(T).pad_sequence(5)


def _pad_sequence_grad(T):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([4.0, 5.0], requires_grad=True)
    p = _rnn(T).pad_sequence([a, b], True, -1.0)
    (p * T.arange(6.0).view(2, 3)).sum().backward()
    return p, a.grad, b.grad


def _unpad_sequence(T):
    # test_unpad_sequence
    R = _rnn(T)
    out = []
    for nd in range(3):
        s = _seqs(T, (2,) * nd)
        lengths = T.as_tensor([v.size(0) for v in s])
        for bf in (True, False):
            out.append(R.unpad_sequence(R.pad_sequence(s, batch_first=bf), lengths, batch_first=bf))
    return out


def _pack_sequence_fields(T):
    # test_pack_sequence: data, batch_sizes, sorted/unsorted indices
    a, b, c = _abc(T)
    R = _rnn(T)
    p = R.pack_sequence([a, b, c], enforce_sorted=False)
    u = R.pack_sequence([b, c, a], enforce_sorted=False)
    s = R.pack_sequence([a, b, c], enforce_sorted=True)
    return (p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices, u.data, u.batch_sizes,
            u.sorted_indices, u.unsorted_indices, s.data, s.sorted_indices is None, s.unsorted_indices is None,
            p.batch_sizes.dtype, p.batch_sizes.device.type)


def _pack_sequence_unsorted_error(T):
    a, b, c = _abc(T)
    try:
        _rnn(T).pack_sequence([b, c, a], enforce_sorted=True)
    except RuntimeError as e:
        return "must be sorted in decreasing order" in str(e), "enforce_sorted=False" in str(e)
    return "no error"


def _pack_sequence_compat(T):
    # test_pack_sequence _compatibility_test: pack_sequence == pack_padded_sequence(pad_sequence)
    R = _rnn(T)
    out = []
    for nd in range(3):
        s = sorted(_seqs(T, (2,) * nd), key=len, reverse=True)
        lengths = [len(v) for v in s]
        for bf in (True, False):
            padded = R.pad_sequence(s, bf)
            for es in (True, False):
                packed = R.pack_sequence(s, es)
                unpacked, lens = R.pad_packed_sequence(packed, bf)
                pp = R.pack_padded_sequence(padded, lengths, bf, es)
                out += [unpacked, lens, packed.data, pp.data, pp.batch_sizes]
    return out


def _unpack_sequence(T):
    # test_unpack_sequence
    R = _rnn(T)
    a, b, c = _abc(T)
    out = [R.unpack_sequence(R.pack_sequence([a, b, c], enforce_sorted=False))]
    for nd in range(3):
        out.append(R.unpack_sequence(R.pack_sequence(_seqs(T, (2,) * nd), enforce_sorted=False)))
    return out


def _padded(T, dtype="float32"):
    s = sorted(_seqs(T, dtype=dtype), key=len, reverse=True)
    s = [v[:, 0] for v in s]
    return _rnn(T).pad_sequence(s), [len(v) for v in s]


def _pack_padded_sequence(T):
    # test_pack_padded_sequence: data order, batch_sizes, round trip, gradient through pad/pack
    R = _rnn(T)
    lengths = [6, 4, 4, 2, 1]
    x = T.tensor(np.arange(30.0, dtype=np.float32).reshape(6, 5), requires_grad=True)
    out = []
    for bf in (False, True):
        inp = x.t() if bf else x
        p = R.pack_padded_sequence(inp, lengths, batch_first=bf)
        un, lens = R.pad_packed_sequence(p, batch_first=bf)
        out += [p.data, p.batch_sizes, un, lens]
    p = R.pack_padded_sequence(x, lengths)
    (p.data * T.arange(p.data.numel(), dtype=T.float32)).sum().backward()
    out.append(x.grad)
    return out


def _pack_padded_unsorted(T):
    # test_pack_padded_sequence with should_shuffle: enforce_sorted=False, then back
    R = _rnn(T)
    x = T.tensor(np.arange(30.0, dtype=np.float32).reshape(6, 5), requires_grad=True)
    lengths = [2, 6, 1, 4, 4]
    p = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
    un, lens = R.pad_packed_sequence(p)
    un.sum().backward()
    return p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices, un, lens, x.grad


def _pack_padded_tensor_lengths(T):
    R = _rnn(T)
    x = T.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    p = R.pack_padded_sequence(x, T.tensor([4, 2, 1]))
    return p.data, p.batch_sizes


def _wrong_order(T):
    # test_wrong_order: enforce_sorted=True with increasing lengths
    R = _rnn(T)
    b_a = R.pad_sequence([T.ones(22, 3), T.ones(25, 3)])
    return R.pack_padded_sequence(b_a, [22, 25], enforce_sorted=True)


def _zero_length(T):
    # pack_padded_sequence refuses a length of 0
    x = T.ones(3, 2)
    return _rnn(T).pack_padded_sequence(x, [3, 0])


def _total_length_too_small(T):
    # test_total_length: total_length below the longest sequence is a ValueError
    R = _rnn(T)
    padded, lengths = _padded(T)
    packed = R.pack_padded_sequence(padded, lengths)
    res = []
    for tl in (-1, 0, max(lengths) - 1):
        for bf in (True, False):
            try:
                R.pad_packed_sequence(packed, batch_first=bf, total_length=tl)
                res.append("ok")
            except ValueError as e:
                res.append("Expected total_length to be at least the length of the longest sequence" in str(e))
    return res


def _total_length_pads(T):
    # test_total_length: extra rows are padding_value
    R = _rnn(T)
    padded, lengths = _padded(T)
    packed = R.pack_padded_sequence(padded, lengths)
    out = []
    for bf in (True, False):
        for delta in (0, 1, 4):
            un, lens = R.pad_packed_sequence(packed, batch_first=bf, total_length=max(lengths) + delta,
                                             padding_value=-2.0)
            out += [un, lens]
    return out


def _type_casts(T):
    # test_type_casts: casting a PackedSequence casts its data only
    R = _rnn(T)
    out = []
    for src in ("float32", "int64", "int32"):
        padded, lengths = _padded(T)
        padded = padded.to(getattr(T, src))
        for es in (True, False):
            p = R.pack_padded_sequence(padded, lengths, enforce_sorted=es)
            for cast in ("double", "float", "long", "int", "short", "char", "byte", "half"):
                q = getattr(p, cast)()
                un, _ = R.pad_packed_sequence(q)
                out += [un.dtype, q.batch_sizes.dtype, type(q).__name__]
    return out


def _to(T):
    # test_to: same device and dtype returns self; a dtype change makes a new PackedSequence
    R = _rnn(T)
    padded, lengths = _padded(T)
    out = []
    for es in (True, False):
        a = R.pack_padded_sequence(padded.int(), lengths, enforce_sorted=es).cpu()
        out += [a is a.to("cpu"), a is a.cpu(), a is a.to("cpu", dtype=T.int32), a.long().data,
                a.to(T.int64).data, a.to(T.int64).sorted_indices, a.is_cuda, a.is_pinned()]
    return out


def _packed_fields_and_repr(T):
    # PackedSequence is a namedtuple of four fields
    R = _rnn(T)
    a, b, c = _abc(T)
    p = R.pack_sequence([a, b, c])
    return type(p).__name__, p._fields, len(p), isinstance(p, tuple)


def _rnn_on_packed(T):
    # an RNN consumes a PackedSequence and returns one; padding positions stay out of h_n
    R = _rnn(T)
    T.manual_seed(0)
    rnn = T.nn.RNN(2, 3)
    with T.no_grad():
        for i, p in enumerate(rnn.parameters()):
            p.copy_(T.tensor(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape)).astype(np.float32)) * 0.5)
    x = T.tensor(np.random.RandomState(13).standard_normal((4, 3, 2)).astype(np.float32), requires_grad=True)
    p = R.pack_padded_sequence(x, [4, 1, 3], enforce_sorted=False)
    out, h = rnn(p)
    un, lens = R.pad_packed_sequence(out)
    (un.sum() + h.sum()).backward()
    return type(out).__name__, un, lens, h, x.grad


CASES = {
    "pad_sequence_basic": _pad_sequence_basic,
    "pad_sequence_dims": _pad_sequence_dims,
    "pad_sequence_padding_side": _pad_sequence_padding_side,
    "pad_sequence_bad_side": _pad_sequence_bad_side,
    "pad_sequence_tensor_input": _pad_sequence_tensor_input,
    "pad_sequence_non_iterable": _pad_sequence_non_iterable,
    "pad_sequence_grad": _pad_sequence_grad,
    "unpad_sequence": _unpad_sequence,
    "pack_sequence_fields": _pack_sequence_fields,
    "pack_sequence_unsorted_error": _pack_sequence_unsorted_error,
    "pack_sequence_compat": _pack_sequence_compat,
    "unpack_sequence": _unpack_sequence,
    "pack_padded_sequence": _pack_padded_sequence,
    "pack_padded_unsorted": _pack_padded_unsorted,
    "pack_padded_tensor_lengths": _pack_padded_tensor_lengths,
    "wrong_order": _wrong_order,
    "zero_length": _zero_length,
    "total_length_too_small": _total_length_too_small,
    "total_length_pads": _total_length_pads,
    "type_casts": _type_casts,
    "to": _to,
    "packed_fields": _packed_fields_and_repr,
    "rnn_on_packed": _rnn_on_packed,
}

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_packed_sequence_round13(fn):
    same_outcome(fn)
