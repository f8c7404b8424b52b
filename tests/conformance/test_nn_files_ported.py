"""Behaviour tests from PyTorch's test/nn/ files (test_dropout.py, test_init.py,
test_packed_sequence.py, test_load_state_dict.py, test_lazy_modules.py, test_pruning.py,
test_parametrization.py) restated for the ``T`` fixture or as ``run_both`` programs: every body
runs under torch 2.13 (the oracle) and under tracegrad. Each test names its original. Tests the
older ports already cover (tests/conformance/test_nn_ported.py, tests/nn/test_prune.py,
tests/nn/test_parametrize.py) are not repeated; CUDA/JIT/quantized/internal-machinery tests are
skipped. The conv/pooling/embedding/attention files live in test_nn_files_ported_layers.py."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from _nn_files_helpers import raises_class, warning_texts
from parity import init_params, randn, run_both


# ==== test/nn/test_dropout.py ===================================================================
def test_invalid_dropout_p(T):
    # TestDropoutNN.test_invalid_dropout_p: p outside [0, 1] is a ValueError at construction
    nn, F = T.nn, T.nn.functional
    for cls in (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout):
        for p in (-0.1, 1.1):
            with pytest.raises(ValueError):
                cls(p)
    for p in (-0.1, 1.1):
        with pytest.raises(ValueError):
            F.dropout(T.ones(1), p)


def test_empty_dropout(T):
    # TestDropoutNNDeviceType.test_empty_dropout
    x = T.tensor([])
    assert T.nn.functional.dropout(x).size() == x.size()


@pytest.mark.parametrize("cls, shape", [("Dropout", (1000,)), ("Dropout1d", (40, 10, 3)),
                                        ("Dropout2d", (400, 2, 2, 2)), ("Dropout3d", (400, 2, 1, 2, 2))])
def test_dropout_mean_and_eval(T, cls, shape):
    # TestDropoutNNDeviceType._test_dropout (test_Dropout/test_Dropout1d/2d/3d): input filled with
    # 1 - p keeps its mean in training (kept values are scaled by 1/(1-p)), the gradient too;
    # inplace works on a non-leaf; eval mode is the identity
    p = 0.2
    mod = getattr(T.nn, cls)
    x = T.empty(*shape).fill_(1 - p)
    for inplace in (False, True):
        xv = x.clone().requires_grad_()
        out = mod(p, inplace)(xv + 0 if inplace else xv)
        assert abs(out.mean().item() - (1 - p)) < 0.05
        out.backward(x)
        assert abs(xv.grad.mean().item() - (1 - p)) < 0.05
        kept = out[out != 0]
        assert T.allclose(kept, T.full_like(kept, 1.0))
    for inplace in (False, True):
        assert T.equal(mod(p, inplace).eval()(x), x)
    assert cls in repr(mod(p)) and cls in str(mod(p))


def test_dropout_p_zero_keeps_values(T):
    # TestDropoutNNDeviceType._test_dropout_discontiguous: p == 0 (and p ~ 0) keep a strided input's values
    inp = T.ones(2, 3, 3, 3)
    disc = T.empty(2, 3, 3, 6)[..., ::2]
    disc.copy_(inp)
    for cls in ("Dropout", "Dropout2d", "Dropout3d"):
        for p in (0, 1e-10):
            assert T.equal(getattr(T.nn, cls)(p=p)(disc), disc)


def test_dropoutNd_shape_checks_and_warnings(T):
    # TestDropoutNNDeviceType.test_Dropout1d / test_Dropout2d / test_Dropout3d: Dropout1d's rank
    # errors; Dropout2d/3d warn on unexpected ranks (and 3-D input to Dropout2d)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input, but received a 4D input"):
        T.nn.Dropout1d(p=0.5)(T.rand(1, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input, but received a 1D input"):
        T.nn.Dropout1d(p=0.5)(T.rand(2))
    for cls, shape, fragment in [("Dropout2d", (1, 2, 2, 2, 2), "Received a 5-D input to dropout2d"),
                                 ("Dropout2d", (1, 2), "Received a 2-D input to dropout2d"),
                                 ("Dropout2d", (1, 2, 2), "assuming that channel-wise 1D dropout behavior is desired"),
                                 ("Dropout3d", (1, 2, 2, 2, 2, 2), "Received a 6-D input to dropout3d"),
                                 ("Dropout3d", (1, 2, 2), "Received a 3-D input to dropout3d")]:
        got = warning_texts(lambda: getattr(T.nn, cls)(p=0.5)(T.rand(*shape)))
        assert any(c == "UserWarning" and fragment in m for c, m in got), (cls, shape, got)


@pytest.mark.parametrize("cls, shape", [("Dropout1d", (10, 4, 2)), ("Dropout2d", (10, 4, 2, 2)),
                                        ("Dropout3d", (10, 4, 2, 2, 2))])
def test_dropoutNd_drops_whole_channels(T, cls, shape):
    # TestDropoutNNDeviceType._test_dropoutNd_channel_zero: each channel is kept or zeroed whole
    per_channel = int(np.prod(shape[2:]))
    for inplace in (False, True):
        out = getattr(T.nn, cls)(p=0.5, inplace=inplace)(T.ones(*shape))
        counts = (out != 0).reshape(shape[0], shape[1], -1).sum(-1)
        assert set(counts.flatten().tolist()) <= {0, per_channel}


@pytest.mark.parametrize("cls, shape", [("Dropout1d", (50, 2)), ("Dropout3d", (50, 2, 2, 2))])
def test_dropoutNd_no_batch_dim(T, cls, shape):
    # TestDropoutNNDeviceType._test_dropoutNd_no_batch: an unbatched input draws as a batch of
    # one (same RNG state, same mask)
    x = T.rand(*shape)
    for inplace in (False, True):
        T.manual_seed(3)
        a = getattr(T.nn, cls)(p=0.5, inplace=inplace)(x.clone())
        T.manual_seed(3)
        b = getattr(T.nn, cls)(p=0.5, inplace=inplace)(x.clone().unsqueeze(0)).squeeze(0)
        assert T.equal(a, b)


@pytest.mark.parametrize("cls, shape", [("AlphaDropout", (5000,)), ("FeatureAlphaDropout", (1000, 2, 1, 2, 2))])
def test_alpha_dropout_keeps_mean_and_std(T, cls, shape):
    # TestDropoutNN.test_AlphaDropout / test_FeatureAlphaDropout (_test_alpha_dropout): a
    # zero-mean unit-std input keeps its mean and std within 0.1, and backward runs
    T.manual_seed(0)
    x = T.randn(*shape)
    for p in (0.2, 0.5, 0.8):
        xv = x.clone().requires_grad_()
        out = getattr(T.nn, cls)(p)(xv)
        assert abs(out.mean().item() - x.mean().item()) < 0.1
        assert abs(out.std().item() - x.std().item()) < 0.1
        out.backward(x)
        assert xv.grad.shape == x.shape


# ==== test/nn/test_init.py ======================================================================
def test_init_constant_ones_zeros_eye(T):
    # TestNNInit.test_constant / test_ones_and_zeros / test_eye
    for shape in [(3,), (2, 4), (2, 1, 3, 2)]:
        x = T.zeros(*shape)
        T.nn.init.constant_(x, 2.5)
        assert T.equal(x, T.full(shape, 2.5))
        for fn, val in ((T.nn.init.ones_, 1.0), (T.nn.init.zeros_, 0.0)):
            fn(x)
            assert T.equal(x, T.full(shape, val))
    for shape in [(3, 5), (4, 2), (1, 1)]:
        x = T.nn.init.eye_(T.empty(*shape))
        assert x.tolist() == np.eye(*shape).tolist()


def test_init_fan_errors_below_2d(T):
    # TestNNInit.test_xavier_uniform_errors_on_inputs_smaller_than_2d / test_xavier_normal_errors... /
    # test_kaiming_normal_errors_on_inputs_smaller_than_2d (0-D and 1-D)
    init = T.nn.init
    for shape in [(), (1,)]:
        for fn in (init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_):
            with pytest.raises(ValueError):
                fn(T.zeros(shape))


@pytest.mark.parametrize("fn", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_warning_on_zero_element_tensor(T, fn):
    # TestNNInit.test_kaiming_uniform_warning_on_0element_tensor / test_kaiming_normal_warning_...
    got = warning_texts(lambda: getattr(T.nn.init, fn)(T.empty(0, 1)))
    assert any(c == "UserWarning" and "Initializing zero-element tensors is a no-op" in m for c, m in got)


def test_init_distributions_scale(T):
    # TestNNInit.test_uniform / test_normal / test_xavier_uniform / test_xavier_normal /
    # test_kaiming_uniform / test_kaiming_normal: the sample's range and std follow the fan formulas
    # (moments instead of scipy's KS test)
    init = T.nn.init
    T.manual_seed(0)
    x = init.uniform_(T.empty(60, 50), a=-1.5, b=2.5)
    assert x.min().item() >= -1.5 and x.max().item() <= 2.5 and abs(x.mean().item() - 0.5) < 0.1
    x = init.normal_(T.empty(60, 50), mean=2.0, std=3.0)
    assert abs(x.mean().item() - 2.0) < 0.25 and abs(x.std().item() - 3.0) < 0.2
    for shape in [(40, 30), (20, 10, 2, 3)]:
        fan_in = shape[1] * int(np.prod(shape[2:]))
        fan_out = shape[0] * int(np.prod(shape[2:]))
        std = 0.7 * math.sqrt(2.0 / (fan_in + fan_out))
        x = init.xavier_uniform_(T.empty(*shape), gain=0.7)
        assert x.abs().max().item() <= std * math.sqrt(3) + 1e-6 and abs(x.std().item() / std - 1) < 0.1
        assert abs(init.xavier_normal_(T.empty(*shape), gain=0.7).std().item() / std - 1) < 0.1
        for a in (0, 0.5):
            for mode, n in (("fan_in", fan_in), ("fan_out", fan_out)):
                std = math.sqrt(2.0 / ((1 + a ** 2) * n))
                x = init.kaiming_uniform_(T.empty(*shape), a=a, mode=mode)
                assert x.abs().max().item() <= std * math.sqrt(3) + 1e-6 and abs(x.std().item() / std - 1) < 0.1
                assert abs(init.kaiming_normal_(T.empty(*shape), a=a, mode=mode).std().item() / std - 1) < 0.1


def test_dirac_properties(T):
    # TestNNInit.test_dirac_properties: min(out/groups, in) ones per group, nothing else
    for dims in (3, 4, 5):
        for groups in (1, 2, 3):
            shape = (2 * groups, 3, 2, 3, 2)[:dims]
            x = T.nn.init.dirac_(T.randn(*shape), groups)
            expected = min(shape[0] // groups, shape[1]) * groups
            assert T.nonzero(x).size(0) == expected
            assert x.sum().item() == expected


def test_dirac_identity(T):
    # TestNNInit.test_dirac_identity: a dirac filter makes conv1d/2d/3d pass the input's
    # (cropped) channels through, one copy per group, with the extra output channels zero
    batch, in_c, out_c, size, k = 2, 3, 9, 4, 3
    for groups in (1, 3):
        eff = out_c // groups
        for conv, nd in ((T.nn.functional.conv1d, 1), (T.nn.functional.conv2d, 2), (T.nn.functional.conv3d, 3)):
            x = randn(T, (batch, in_c) + (size,) * nd, nd)
            w = T.cat([T.zeros((eff, in_c) + (k,) * nd)] * groups)
            T.nn.init.dirac_(w, groups)
            out = conv(x, w)
            crop = (slice(None), slice(None)) + (slice(1, -1),) * nd
            for g in range(groups):
                assert T.equal(x[crop], out[:, eff * g:eff * g + in_c])
                assert T.count_nonzero(out[:, eff * g + in_c:eff * (g + 1)]).item() == 0


def test_orthogonal_with_gain(T):
    # TestNNInit.test_orthogonal: the flattened matrix's rows (or columns) are orthonormal * gain
    for gain in (1.0, 0.7):
        for shape in [(3, 4), (4, 3), (6, 2, 3, 4), (2, 3, 4, 5)]:
            x = T.nn.init.orthogonal_(T.zeros(*shape), gain=gain)
            m = x.reshape(shape[0], -1)
            gram = m.t() @ m if m.shape[0] > m.shape[1] else m @ m.t()
            assert T.allclose(gram, T.eye(gram.shape[0]) * gain ** 2, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trunc_normal_bounds_and_values(T, dtype):
    # TestNNInitDeviceType.test_trunc_normal_all_dtypes / test_trunc_normal_narrow_interval /
    # test_trunc_normal_unique_values / test_trunc_normal_no_boundary_values_small_std
    dt = getattr(T, dtype)
    t = T.nn.init.trunc_normal_(T.zeros(40, 30, dtype=dt), mean=0.5, std=0.3, a=0.2, b=0.9)
    assert t.dtype == dt and t.min().item() >= 0.2 and t.max().item() <= 0.9
    t = T.nn.init.trunc_normal_(T.empty(10000, dtype=dt), mean=0.0, std=1.0, a=2.0, b=3.0)
    assert t.min().item() >= 2.0 and t.max().item() <= 3.0 and t.mean().item() < 2.5
    t = T.nn.init.trunc_normal_(T.empty(10000, dtype=dt), mean=0.0, std=1.0, a=-2.0, b=2.0)
    assert t.unique().numel() > 5000 and not t.isinf().any() and not t.isnan().any()
    t = T.nn.init.trunc_normal_(T.empty(10000, dtype=dt), mean=0.0, std=0.1, a=-2.0, b=2.0)
    assert (t == -2.0).sum().item() == 0 and (t == 2.0).sum().item() == 0


def test_trunc_normal_generator(T):
    # TestNNInit.test_trunc_normal_generator: a Generator seeded like the global one draws the same
    gen = T.Generator()
    gen.manual_seed(42)
    a = T.nn.init.trunc_normal_(T.empty(5), generator=gen)
    T.manual_seed(42)
    b = T.nn.init.trunc_normal_(T.empty(5))
    assert T.equal(a, b) and a.min().item() >= -2 and a.max().item() <= 2


# ==== test/nn/test_packed_sequence.py ===========================================================
_CASTS = ("double", "float", "long", "int", "short", "char", "byte")


def _ordered_int_sequences(T, seed=0, lengths=(6, 5, 3, 3, 1)):
    rs = np.random.RandomState(seed)
    return [T.tensor(rs.randint(0, 100, size=n)) for n in lengths]


def test_packed_sequence_type_casts():
    # PackedSequenceTest.test_type_casts: casting a PackedSequence then unpacking gives the cast type
    def program(T, log):
        rnn = T.nn.utils.rnn
        for src in _CASTS:
            padded = getattr(rnn.pad_sequence(_ordered_int_sequences(T)), src)()
            for cast in _CASTS:
                for enforce_sorted in (True, False):
                    packed = rnn.pack_padded_sequence(padded, [6, 5, 3, 3, 1], enforce_sorted=enforce_sorted)
                    unpacked, _ = rnn.pad_packed_sequence(getattr(packed, cast)())
                    log(f"{src}->{cast}", unpacked.type())
    run_both(program)


def test_pack_wrong_order(T):
    # PackedSequenceTest.test_wrong_order: increasing lengths with enforce_sorted=True raise
    b_a = T.nn.utils.rnn.pad_sequence([T.ones(22, 3), T.ones(25, 3)])
    with pytest.raises(RuntimeError):
        T.nn.utils.rnn.pack_padded_sequence(b_a, [22, 25], enforce_sorted=True)


def test_pad_sequence_inputs(T):
    # PackedSequenceTest.test_pad_sequence_with_tensor_sequences / ..._with_non_iterable_sequences
    rnn = T.nn.utils.rnn
    from_tuple = rnn.pad_sequence((T.tensor([[7, 6]]), T.tensor([[-7, -1]])))
    from_tensor = rnn.pad_sequence(T.tensor([[[7, 6]], [[-7, -1]]]))
    assert T.equal(from_tuple, from_tensor) and from_tuple.shape == T.Size([1, 2, 2])
    with pytest.raises(RuntimeError, match="Expected iterable for input sequences, but got arg of type"):
        rnn.pad_sequence(5)


def test_pad_packed_total_length(T):
    # PackedSequenceTest.test_total_length: total_length below the longest raises ValueError;
    # above it pads with zeros (batch_first or not)
    rnn = T.nn.utils.rnn
    seqs = [randn(T, (n,), n) for n in (6, 5, 3, 3, 1)]
    lengths = [6, 5, 3, 3, 1]
    packed = rnn.pack_padded_sequence(rnn.pad_sequence(seqs), lengths)
    for total in (-1, 0, 5):
        for batch_first in (True, False):
            with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest"):
                rnn.pad_packed_sequence(packed, batch_first=batch_first, total_length=total)
    for batch_first in (True, False):
        plain, _ = rnn.pad_packed_sequence(packed, batch_first=batch_first)
        for delta in (0, 1, 8):
            out, lens = rnn.pad_packed_sequence(packed, batch_first=batch_first, total_length=6 + delta)
            assert lens.tolist() == lengths and out.size(1 if batch_first else 0) == 6 + delta
            extra = plain.new_zeros((5, delta) if batch_first else (delta, 5))
            assert T.equal(out, T.cat([plain, extra], 1 if batch_first else 0))


def test_packed_sequence_to(T):
    # PackedSequenceTest.test_to (CPU part): to/cpu return self when nothing changes; a dtype cast works
    rnn = T.nn.utils.rnn
    for enforce_sorted in (True, False):
        padded = rnn.pad_sequence(_ordered_int_sequences(T)).int()
        a = rnn.pack_padded_sequence(padded, [6, 5, 3, 3, 1], enforce_sorted=enforce_sorted).cpu()
        assert a is a.to("cpu") and a is a.cpu() and a is a.to("cpu", dtype=T.int32)
        b, c = a.long(), a.to(T.int64)
        assert T.equal(b.data, c.data) and b.data.dtype == T.int64 and T.equal(b.batch_sizes, c.batch_sizes)


def test_pad_sequence_values(T):
    # PackedSequenceTest.test_pad_sequence: batch_first, padding_value, sorted and N-D sequences
    rnn = T.nn.utils.rnn
    a, b, c = T.tensor([1, 2, 3]), T.tensor([4, 5]), T.tensor([6])
    expected = T.tensor([[4, 5, 0], [1, 2, 3], [6, 0, 0]])
    assert T.equal(rnn.pad_sequence([b, a, c], True), expected)
    assert T.equal(rnn.pad_sequence([b, a, c]), expected.t())
    assert T.equal(rnn.pad_sequence([b, a, c], True, 1), T.tensor([[4, 5, 1], [1, 2, 3], [6, 1, 1]]))
    assert T.equal(rnn.pad_sequence([a, b, c], True), T.tensor([[1, 2, 3], [4, 5, 0], [6, 0, 0]]))
    for num_dim in (0, 1, 2):
        seqs = [randn(T, (n, 2) + (2,) * num_dim, n) for n in (4, 1, 9, 2)]
        expected = T.stack([T.cat([s, s.new_zeros((9 - s.size(0),) + tuple(s.shape[1:]))]) for s in seqs])
        assert T.equal(rnn.pad_sequence(seqs, True), expected)
        assert T.equal(rnn.pad_sequence(seqs), expected.transpose(0, 1))


def test_unpad_and_unpack_sequence(T):
    # PackedSequenceTest.test_unpad_sequence / test_unpack_sequence: both invert their packers
    rnn = T.nn.utils.rnn
    for num_dim in (-1, 0, 2):
        seqs = ([T.tensor([1, 2, 3]), T.tensor([4, 5]), T.tensor([6])] if num_dim < 0 else
                [randn(T, (n, 2) + (2,) * num_dim, n) for n in (4, 1, 9, 2)])
        lengths = T.as_tensor([s.size(0) for s in seqs])
        for batch_first in (True, False):
            back = rnn.unpad_sequence(rnn.pad_sequence(seqs, batch_first=batch_first), lengths, batch_first=batch_first)
            assert len(back) == len(seqs) and all(T.equal(x, y) for x, y in zip(back, seqs))
        back = rnn.unpack_sequence(rnn.pack_sequence(seqs, enforce_sorted=False))
        assert len(back) == len(seqs) and all(T.equal(x, y) for x, y in zip(back, seqs))


def test_pack_sequence_indices_and_compatibility(T):
    # PackedSequenceTest.test_pack_sequence: batch sizes, data order, sorted/unsorted indices;
    # pack_sequence agrees with pad_sequence + pack_padded_sequence and pad_packed_sequence
    rnn = T.nn.utils.rnn
    a, b, c = T.tensor([1, 2, 3]), T.tensor([4, 5]), T.tensor([6])
    expected = [1, 4, 6, 2, 5, 3]
    p = rnn.pack_sequence([a, b, c], enforce_sorted=False)
    assert (p.batch_sizes.tolist(), p.data.tolist(), p.sorted_indices.tolist(), p.unsorted_indices.tolist()) == \
        ([3, 2, 1], expected, [0, 1, 2], [0, 1, 2])
    p = rnn.pack_sequence([b, c, a], enforce_sorted=False)
    assert (p.batch_sizes.tolist(), p.data.tolist(), p.sorted_indices.tolist(), p.unsorted_indices.tolist()) == \
        ([3, 2, 1], expected, [2, 0, 1], [1, 2, 0])
    p = rnn.pack_sequence([a, b, c], enforce_sorted=True)
    assert p.data.tolist() == expected and p.sorted_indices is None and p.unsorted_indices is None
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn.pack_sequence([b, c, a], enforce_sorted=True)
    with pytest.raises(RuntimeError, match="You can pass `enforce_sorted=False`"):
        rnn.pack_sequence([b, c, a], enforce_sorted=True)
    for num_dim in (0, 2):
        seqs = [randn(T, (n, 2) + (2,) * num_dim, n) for n in (9, 4, 2, 1)]
        shuffled = [seqs[i] for i in (2, 0, 3, 1)]
        for batch_first in (True, False):
            for ss, sorted_ok in ((seqs, (True, False)), (shuffled, (False,))):
                for enforce_sorted in sorted_ok:
                    padded = rnn.pad_sequence(ss, batch_first)
                    packed = rnn.pack_sequence(ss, enforce_sorted)
                    assert T.equal(rnn.pad_packed_sequence(packed, batch_first)[0], padded)
                    again = rnn.pack_padded_sequence(padded, [s.size(0) for s in ss], batch_first, enforce_sorted)
                    assert T.equal(again.data, packed.data) and T.equal(again.batch_sizes, packed.batch_sizes)


@pytest.mark.parametrize("lengths, shuffle", [([10, 8, 4, 2, 2, 2, 1], False), ([11, 10, 8, 6, 4, 3, 1], True)])
def test_pack_padded_sequence_data_and_grad(lengths, shuffle):
    # PackedSequenceTest.test_pack_padded_sequence: packed data order, batch sizes, the inverse,
    # and the gradient reaching exactly the unpadded entries
    def program(T, log):
        rnn = T.nn.utils.rnn
        max_len = lengths[0]
        cols = [T.cat([i * 100 + T.arange(1.0, 5 * n + 1).view(n, 1, 5), T.zeros(max_len - n, 1, 5)])
                for i, n in enumerate(lengths, 1)]
        padded, lens = T.cat(cols, 1), lengths
        if shuffle:
            perm = T.tensor([3, 0, 6, 1, 5, 2, 4])
            padded, lens = padded.index_select(1, perm), T.tensor(lengths).index_select(0, perm)
        for batch_first in (True, False):
            src = padded.clone().requires_grad_()
            x = src.transpose(0, 1) if batch_first else src
            packed = rnn.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=not shuffle)
            log("packed", [packed.data, packed.batch_sizes, packed.unsorted_indices])
            out, out_lens = rnn.pad_packed_sequence(packed, batch_first=batch_first)
            log("roundtrip", [T.equal(out, x), out_lens])
            out.backward(randn(T, tuple(out.shape), 3))
            log("grad", src.grad)
        for name, call in [("unsorted", lambda: rnn.pack_padded_sequence(randn(T, (3, 3), 0), [1, 3, 2])),
                           ("empty", lambda: rnn.pack_padded_sequence(T.zeros(0, 0), [])),
                           ("empty batch_first", lambda: rnn.pack_padded_sequence(T.zeros(0, 1, 10), [0], True))]:
            log(name, raises_class(call))
    run_both(program)


# ==== test/nn/test_load_state_dict.py ===========================================================
def test_load_state_dict_invalid(T):
    # TestLoadStateDict.test_load_state_dict_invalid / test_load_state_dict_type
    m = T.nn.Linear(2, 2, bias=False)
    for bad in (np.random.randn(2, 2), ((1.0, 1.0), (2.0, 2.0))):
        with pytest.raises(RuntimeError, match="expected torch.Tensor or Tensor-like object from checkpoint"):
            m.load_state_dict({"weight": bad})
    for bad in ("", 2):
        with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got"):
            T.nn.Module().load_state_dict(bad)


def _shared_net(T):
    lin = T.nn.Linear(5, 5)
    block = T.nn.Module()
    block.conv1 = T.nn.Conv2d(3, 3, 3, bias=True)
    block.conv2 = T.nn.Conv2d(3, 3, 3, bias=False)
    net = T.nn.Module()
    net.linear1, net.linear2, net.bn, net.block = lin, lin, T.nn.BatchNorm2d(2), block
    net.add_module("empty", None)
    return net


def test_load_state_dict_strict_and_keys(T):
    # TestLoadStateDict.test_load_state_dict: shared submodules, a None child, DDP prefixes,
    # missing/unexpected keys with strict and strict=False, size mismatches, untouched entries
    net = _shared_net(T)
    new = {"linear1.weight": T.ones(5, 5), "block.conv1.bias": T.arange(1, 4, dtype=T.float32),
           "bn.running_mean": randn(T, (2,), 0)}
    sd = net.state_dict()
    sd.update(new)
    ddp = {"module." + k: v for k, v in net.state_dict().items()}
    ddp.update({"module." + k: v for k, v in new.items()})
    T.nn.modules.utils.consume_prefix_in_state_dict_if_present(ddp, "module.")
    for d in (sd, ddp):
        res = net.load_state_dict(d)
        assert res.missing_keys == [] and res.unexpected_keys == [] and "Incompatible" not in str(res)
        for k in new:
            assert T.equal(net.state_dict()[k], d[k])
    for extra in ("extra", "extra.param"):
        d = net.state_dict()
        d[extra] = T.ones(5)
        with pytest.raises(RuntimeError):
            net.load_state_dict(d)
        res = net.load_state_dict(d, strict=False)
        assert res.missing_keys == [] and res.unexpected_keys == [extra] and "Incompatible" in str(res)
    d = net.state_dict()
    del d["linear1.weight"]
    with pytest.raises(RuntimeError):
        net.load_state_dict(d)
    assert net.load_state_dict(d, strict=False).missing_keys == ["linear1.weight"]
    d["extra.param"] = T.ones(5)
    res = net.load_state_dict(d, strict=False)
    assert (res.missing_keys, res.unexpected_keys) == (["linear1.weight"], ["extra.param"])
    d = net.state_dict()
    d["bn.running_mean"] = T.rand(14, 4)
    for strict in (True, False):
        with pytest.raises(RuntimeError):
            net.load_state_dict(d, strict=strict)
    old = copy.deepcopy(net.state_dict())
    net.load_state_dict(dict(new, nonexistent_key=T.rand(3)), strict=False)
    now = net.state_dict()
    assert all(T.equal(now[k], new[k]) for k in new)
    assert all(v.equal(now[k]) for k, v in old.items() if k not in new)


def test_load_state_dict_batchnorm_version(T):
    # TestLoadStateDict.test_load_state_dict_BC: a version-1 (or unversioned) BatchNorm state
    # without num_batches_tracked loads it as a long 0
    bn = T.nn.BatchNorm2d(3)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.dtype == T.long and bn.num_batches_tracked.item() == 0
    del sd._metadata[""]["version"]
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.dtype == T.long and bn.num_batches_tracked.item() == 0


def test_load_state_dict_child_pre_hook(T):
    # TestLoadStateDict.test_load_state_dict_child: a nested child's pre-hook sees the state it loads
    model = T.nn.Linear(1, 1)
    for _ in range(2):
        model = T.nn.Sequential(*[copy.deepcopy(model) for _ in range(3)])
    seen = []

    def hook(module, state_dict, prefix, *rest):
        seen.append((prefix, len(module.state_dict()), sorted(state_dict)[:2]))

    model[0][0].register_load_state_dict_pre_hook(hook)
    model.load_state_dict(model.state_dict(), strict=True)
    assert seen[0][0] == "0.0." and seen[0][1] == 2


def test_state_dict_pre_hook_after_pickle(T, tmp_path):
    # TestLoadStateDict.test_register_state_dict_pre_hook_backward_compat: a module saved without
    # _state_dict_pre_hooks still gives state_dict() and accepts new pre-hooks after loading
    called = []
    m = T.nn.Linear(1, 1)
    assert hasattr(m, "_state_dict_pre_hooks")
    delattr(m, "_state_dict_pre_hooks")
    T.save(m, str(tmp_path / "m.pt"))
    m = T.load(str(tmp_path / "m.pt"), weights_only=False)
    m.state_dict()
    m.register_state_dict_pre_hook(lambda *a, **k: called.append(1))
    m.state_dict()
    assert called == [1]


def test_load_state_dict_custom_save_load(T):
    # TestLoadStateDict.test_load_state_dict_custom: overridden _save_to_state_dict /
    # _load_from_state_dict are used, nested in a Sequential
    class CustomState(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = T.nn.Parameter(T.ones(1))
            self.sub = T.nn.Linear(5, 5)

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            destination[prefix + "serialized"] = self.param.data + 1

        def _load_from_state_dict(self, state_dict, prefix, *rest):
            self.param.data.copy_(state_dict[prefix + "serialized"] - 1)

    m = T.nn.Sequential(CustomState())
    with T.no_grad():
        m[0].param[0] = 10
        m[0].sub.weight[0, 0] = 555
    sd = m.state_dict()
    assert sd["0.serialized"].item() == 11 and "0.sub.weight" in sd and "0.param" not in sd
    mm = T.nn.Sequential(CustomState())
    assert mm[0].param[0].item() == 1
    mm.load_state_dict(sd)
    assert mm[0].param[0].item() == 10 and mm[0].sub.weight[0, 0].item() == 555


class _FcBn:
    """``Linear(3, 5)`` then ``BatchNorm1d(5)`` (plus an optional frozen Parameter ``x``), built
    for either library: the module of test_load_state_dict_assign_*."""

    @staticmethod
    def build(T, with_x=False):
        class MyModule(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.bn = T.nn.Linear(3, 5), T.nn.BatchNorm1d(5)
                if with_x:
                    self.x = T.nn.Parameter(T.rand(5), requires_grad=False)

            def forward(self, input):
                out = self.bn(self.fc1(input))
                return out + self.x if with_x else out
        return MyModule


@pytest.mark.parametrize("keep_vars", [True, False])
def test_load_state_dict_assign_meta(T, keep_vars):
    # TestLoadStateDict.test_load_state_dict_assign_meta (swap off): assign=True onto a meta
    # module takes the checkpoint's tensors (Parameters kept when keep_vars, else re-wrapped with
    # the old requires_grad), buffers by identity, order kept, same outputs
    cls = _FcBn.build(T, with_x=True)
    net = cls()
    sd = net.state_dict(keep_vars=keep_vars)
    for v in sd.values():
        v.requires_grad_(False)
    with T.device("meta"):
        meta = cls()
    old = meta.state_dict(keep_vars=True)
    meta.load_state_dict(sd, assign=True)
    new = meta.state_dict(keep_vars=True)
    for key in sd:
        if key in meta._parameters:
            assert (sd[key] is new[key]) if keep_vars else (new[key] is not old[key])
            assert old[key].requires_grad == new[key].requires_grad
            assert T.equal(sd[key], new[key])
        elif key in meta._buffers and key not in meta._non_persistent_buffers_set:
            assert sd[key] is new[key]
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in meta.named_parameters()]
    assert [n for n, _ in net.named_buffers()] == [n for n, _ in meta.named_buffers()]
    t = randn(T, (4, 3), 0)
    assert T.allclose(net(t), meta(t.clone()))


def test_load_state_dict_assign_with_optimizer():
    # TestLoadStateDict.test_load_state_dict_assign_with_optimizer: a meta module loaded with
    # assign=True, then an optimizer built on it and loaded, trains exactly like the original
    def program(T, log):
        cls = _FcBn.build(T)
        net = init_params(T, cls(), 0)
        opt = T.optim.Adam(net.parameters(), lr=1000)
        x = randn(T, (4, 3), 1)
        for _ in range(3):
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()
        opt_sd, net_sd = copy.deepcopy(opt.state_dict()), copy.deepcopy(net.state_dict())
        with T.device("meta"):
            meta = cls()
        meta.load_state_dict(net_sd, assign=True)
        opt2 = T.optim.Adam(meta.parameters(), lr=1000)
        opt2.load_state_dict(opt_sd)
        for _ in range(3):
            for o, m in ((opt, net), (opt2, meta)):
                o.zero_grad()
                m(x.clone()).sum().backward()
                o.step()
        log("same params", [T.equal(a, b) for a, b in zip(net.state_dict().values(), meta.state_dict().values())])
        log("same optimizer state", [T.equal(a["exp_avg"], b["exp_avg"])
                                     for a, b in zip(opt.state_dict()["state"].values(),
                                                     opt2.state_dict()["state"].values())])
        # (the values themselves are not compared across libraries: the batch norm makes the
        # gradients rounding noise, which Adam at lr=1000 amplifies)
    run_both(program)


def test_load_state_dict_assign_shape_stride(T):
    # TestLoadStateDict.test_load_state_dict_assign_shape_stride: assign accepts another stride,
    # not another shape
    cls = _FcBn.build(T)
    sd = cls().state_dict()
    sd["fc1.weight"] = T.randn(3, 5).transpose(0, 1)
    net2 = cls()
    net2.load_state_dict(sd, strict=False, assign=True)
    assert T.equal(net2.fc1.weight, sd["fc1.weight"])
    sd["fc1.weight"] = T.randn(2, 4)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight: copying a param with shape"):
        net2.load_state_dict(sd, strict=False, assign=True)


def test_load_state_dict_warn_assign(T):
    # TestLoadStateDict.test_load_state_dict_warn_assign: copying a real tensor into a meta
    # parameter without assign=True warns
    with T.device("meta"):
        m = T.nn.Linear(3, 5)
    sd = m.state_dict()
    sd["weight"] = T.empty_like(sd["weight"], device="cpu")
    got = warning_texts(lambda: m.load_state_dict(sd))
    assert any("for weight: copying from a non-meta parameter in the checkpoint to a meta" in msg for _, msg in got)


def test_load_state_dict_with_unexpected_key(T):
    # TestLoadStateDict.test_load_state_dict_with_unexpected_key: also a key that extends a valid one
    m = T.nn.Sequential()
    m.fc1 = T.nn.Linear(5, 10)
    for bad in ("fc1.bad_suffix", "fc1.weight.bad_suffix"):
        sd = m.state_dict()
        sd[bad] = T.randn(5, 10)
        with pytest.raises(RuntimeError, match="Unexpected key"):
            m.load_state_dict(sd)
        assert bad in m.load_state_dict(sd, strict=False).unexpected_keys


# ==== test/nn/test_lazy_modules.py ==============================================================
def _lazy_module(T):
    class LazyModule(T.nn.modules.lazy.LazyModuleMixin, T.nn.Module):
        pass
    return LazyModule()


def _uninit(T, kind):
    return T.nn.parameter.UninitializedParameter() if kind == "param" else T.nn.parameter.UninitializedBuffer()


def _put(T, m, kind, value):
    if kind == "param":
        m.register_parameter("test", value)
    else:
        m.test = value


@pytest.mark.parametrize("kind", ["param", "buffer"])
def test_lazy_module_state_dict(T, kind):
    # TestLazyModules.test_lazy_module_parameter / test_lazy_module_buffer: placeholders appear in
    # state_dict; loading one into a real tensor raises; a real one materializes the placeholder;
    # a placeholder loaded into a placeholder leaves it uninitialized
    P = T.nn.Parameter if kind == "param" else T.nn.Buffer
    cls = T.nn.parameter.UninitializedParameter if kind == "param" else T.nn.parameter.UninitializedBuffer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _lazy_module(T)
        _put(T, m, kind, _uninit(T, kind))
        assert m.has_uninitialized_params()
        sd = m.state_dict()
        assert isinstance(sd["test"], cls)
        new = _lazy_module(T)
        _put(T, new, kind, P(T.ones(5, 5)))
        with pytest.raises(RuntimeError, match="shape of an uninitialized"):
            new.load_state_dict(sd)
        m.load_state_dict(new.state_dict())
        assert T.equal(m.test, T.ones(5, 5)) and not m.has_uninitialized_params()
        m, new = _lazy_module(T), _lazy_module(T)
        _put(T, m, kind, _uninit(T, kind))
        _put(T, new, kind, _uninit(T, kind))
        m.load_state_dict(new.state_dict())
        m.load_state_dict(new.state_dict())
        assert m.has_uninitialized_params()


@pytest.mark.parametrize("kind", ["param", "buffer"])
def test_lazy_share_memory(T, kind):
    # TestLazyModules.test_lazy_share_memory_param / test_lazy_share_memory_buffer
    m = _lazy_module(T)
    _put(T, m, kind, _uninit(T, kind))
    with pytest.raises(RuntimeError, match="share memory on an uninitialized"):
        m.share_memory()


def test_lazy_linear(T):
    # TestLazyModules.test_linear / test_linear_state / test_lazy_linear_state_and_forward /
    # test_chained_initialization
    m = T.nn.LazyLinear(10)
    assert isinstance(m.weight, T.nn.parameter.UninitializedParameter)
    assert isinstance(m.bias, T.nn.parameter.UninitializedParameter)
    x = T.ones(5, 5)
    out = m(x)
    assert isinstance(m, T.nn.Linear) and not isinstance(m, T.nn.LazyLinear)
    assert m.weight.shape == (10, 5) and m.bias.shape == (10,)
    assert (m.weight != 0).any() and (m.bias != 0).any() and (out != 0).any()
    assert T.equal(T.nn.functional.linear(x, m.weight, m.bias), m(x))
    lazy = T.nn.LazyLinear(10)
    lazy.load_state_dict(T.nn.Linear(5, 10).state_dict())
    # (torch 2.13 keeps the Lazy class and in_features 0 until the first forward)
    assert lazy.weight.shape == (10, 5) and lazy.bias.shape == (10,) and not lazy.has_uninitialized_params()
    lazy(T.randn(5, 5))
    assert type(lazy) is T.nn.Linear and lazy.in_features == 5
    with pytest.raises(RuntimeError, match="shape of an uninitialized"):
        T.nn.Linear(5, 10).load_state_dict(T.nn.LazyLinear(10).state_dict())

    class MyNetwork(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear_1, self.linear_2 = T.nn.LazyLinear(15), T.nn.LazyLinear(10)

        def forward(self, x):
            return self.linear_2(self.linear_1(x))

    net = MyNetwork()
    net(T.ones(5, 10))
    assert [tuple(p.shape) for p in net.parameters()] == [(15, 10), (15,), (10, 15), (10,)]


_LAZY_CONVS = [  # (class, input shape, weight shape, forward kwargs)
    ("Conv1d", (2, 4, 7), (6, 4, 2), {}),
    ("Conv2d", (2, 4, 5, 4), (6, 4, 2, 2), {}),
    ("Conv3d", (2, 4, 3, 3, 3), (6, 4, 2, 2, 2), {}),
    ("ConvTranspose1d", (2, 4, 7), (4, 6, 2), {}),
    ("ConvTranspose1d", (2, 4, 7), (4, 6, 2), {"output_size": (8,)}),
    ("ConvTranspose2d", (2, 4, 5, 4), (4, 6, 2, 2), {"output_size": (6, 5)}),
    ("ConvTranspose3d", (2, 4, 3, 3, 3), (4, 6, 2, 2, 2), {"output_size": (4, 4, 4)}),
]


@pytest.mark.parametrize("name, shape, wshape, kw", _LAZY_CONVS, ids=[f"{c[0]}{'-kw' if c[3] else ''}" for c in _LAZY_CONVS])
def test_lazy_conv(T, name, shape, wshape, kw):
    # TestLazyModules.test_lazy_conv{1,2,3}d / test_lazy_conv_transpose{1,2,3}d(_kwargs) /
    # _pickle / _state (_check_lazy_conv, _check_lazy_conv_pickle, _check_lazy_conv_state)
    cls, lazy_cls = getattr(T.nn, name), getattr(T.nn, "Lazy" + name)
    func = getattr(T.nn.functional, name.lower().replace("transpose", "_transpose"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lazy_cls(6, 2)
        assert isinstance(m.weight, T.nn.parameter.UninitializedParameter)
        m = pickle.loads(pickle.dumps(m))
        assert isinstance(m, lazy_cls) and isinstance(m.bias, T.nn.parameter.UninitializedParameter)
        x = T.ones(*shape)
        m(x, **kw)
        assert isinstance(m, cls) and not isinstance(m, lazy_cls)
        assert m.weight.shape == wshape and m.bias.shape == (6,)
        assert T.equal(func(x, m.weight, m.bias), m(x))
        m2 = pickle.loads(pickle.dumps(m))
        assert type(m2) is cls and not isinstance(m2.weight, T.nn.parameter.UninitializedParameter)
        lazy = lazy_cls(6, 2)
        ref = cls(shape[1], 6, 2)
        lazy.load_state_dict(ref.state_dict())
        assert lazy.weight.shape == wshape
        assert T.equal(lazy(x), ref(x)) and type(lazy) is cls
        with pytest.raises(RuntimeError, match="shape of an uninitialized"):
            cls(shape[1], 6, 2).load_state_dict(lazy_cls(6, 2).state_dict())


def test_lazy_conv_state_and_forward_with_padding(T):
    # TestLazyModules.test_lazy_conv2d_state_and_forward / test_lazy_conv_transpose2d_state_and_forward
    for name in ("Conv2d", "ConvTranspose2d"):
        ref = getattr(T.nn, name)(3, 4, 3, padding=1)
        lazy = getattr(T.nn, "Lazy" + name)(4, 3, padding=1)
        lazy.load_state_dict(ref.state_dict())
        x = T.randn(1, 3, 5, 5)
        assert T.equal(lazy(x), ref(x)) and type(lazy) is getattr(T.nn, name)


def test_lazy_pre_and_forward_hooks(T):
    # TestLazyModules.test_lazy_pre_forward_hook / test_lazy_forward_hook: other hooks still apply
    for register, hook in (("register_forward_pre_hook", lambda m, inp: inp[0] + 1),
                           ("register_forward_hook", lambda m, inp, out: inp[0] + 1)):
        class TestModule(T.nn.modules.lazy.LazyModuleMixin, T.nn.Module):
            def initialize_parameters(self, input):
                return None

            def forward(self, input):
                return input
        m = TestModule()
        getattr(m, register)(hook)
        assert T.equal(m(T.zeros(2, 2)), T.ones(2, 2))


_LAZY_NORMS = [("BatchNorm1d", (4, 3, 5)), ("BatchNorm1d", (4, 3)), ("BatchNorm2d", (4, 3, 2, 3)),
               ("BatchNorm3d", (4, 3, 2, 2, 2)), ("InstanceNorm1d", (4, 3, 5)), ("InstanceNorm2d", (4, 3, 2, 3)),
               ("InstanceNorm3d", (4, 3, 2, 2, 2))]


@pytest.mark.parametrize("name, shape", _LAZY_NORMS, ids=[f"{n}-{len(s)}d" for n, s in _LAZY_NORMS])
def test_lazy_norm(T, name, shape):
    # TestLazyModules.test_lazy_batchnorm{1,2,3}d / test_lazy_instancenorm{1,2,3}d (+ _pickle):
    # placeholders per affine/track_running_stats, materialized like the eager module, same output
    cls, lazy_cls = getattr(T.nn, name), getattr(T.nn, "Lazy" + name)
    x = randn(T, shape, 0)
    for affine in (False, True):
        for track in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lazy = pickle.loads(pickle.dumps(lazy_cls(affine=affine, track_running_stats=track)))
                assert isinstance(lazy, lazy_cls)
                if affine:
                    assert isinstance(lazy.weight, T.nn.parameter.UninitializedParameter)
                if track:
                    assert isinstance(lazy.running_mean, T.nn.parameter.UninitializedBuffer)
                out = lazy(x)
                assert isinstance(lazy, cls) and not isinstance(lazy, lazy_cls)
                ref = cls(shape[1], affine=affine, track_running_stats=track)
                assert T.allclose(out, ref(x), atol=1e-6)
                for key, t in ref.state_dict().items():
                    assert T.equal(lazy.state_dict()[key], t), key
                again = pickle.loads(pickle.dumps(lazy))
                assert type(again) is cls
                if track:
                    assert not isinstance(again.running_var, T.nn.parameter.UninitializedBuffer)


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm3d"])
def test_lazy_norm_state(T, name):
    # TestLazyModules.test_lazy_batchnorm{1,2,3}d_state / test_lazy_instancenorm{1,2,3}d_state /
    # test_lazy_batchnorm2d_state_and_forward
    cls, lazy_cls = getattr(T.nn, name), getattr(T.nn, "Lazy" + name)
    for affine, track in ((True, True), (False, True), (True, False)):
        ref = cls(10, affine=affine, track_running_stats=track)
        lazy = lazy_cls(affine=affine, track_running_stats=track)
        lazy.load_state_dict(ref.state_dict())
        for key, t in ref.state_dict().items():
            assert lazy.state_dict()[key].shape == t.shape
    with pytest.raises(RuntimeError, match="shape of an uninitialized"):
        cls(10, affine=True, track_running_stats=True).load_state_dict(
            lazy_cls(affine=True, track_running_stats=True).state_dict())
    if name == "BatchNorm2d":
        ref = cls(4).eval()
        lazy = lazy_cls()
        lazy.load_state_dict(ref.state_dict())
        lazy.eval()
        x = T.randn(2, 4, 3, 3)
        assert T.allclose(lazy(x), ref(x))


def test_lazy_batchnorm_with_dict_input(T):
    # TestLazyModules.test_lazy_batchnorm_with_dict_input: input passed as a keyword
    for name, shape in (("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (4, 3, 2, 3))):
        x = randn(T, shape, 1)
        out = getattr(T.nn, "Lazy" + name)()(input=x)
        assert T.allclose(out, getattr(T.nn, name)(3)(input=x), atol=1e-6)


def test_lazy_materialize_dtype(T):
    # TestLazyModules.test_materialize_dtype / test_materialize_device (CPU part)
    m = _lazy_module(T)
    m.register_parameter("test_param", T.nn.parameter.UninitializedParameter())
    m.test_param.materialize(10)
    assert m.test_param.dtype == T.get_default_dtype() and m.test_param.device.type == "cpu"
    m = _lazy_module(T)
    m.register_parameter("test_param", T.nn.parameter.UninitializedParameter())
    m.half()
    m.test_param.materialize(10)
    assert m.test_param.dtype == T.float16


@pytest.mark.parametrize("opt", ["Adadelta", "Adagrad", "Adamax", "Adam", "AdamW", "ASGD", "SGD", "Rprop",
                                 "RMSprop", "LBFGS", "NAdam", "RAdam"])
def test_lazy_optimizer_pass(T, opt):
    # TestLazyModules.test_optimizer_pass: an optimizer built before materialization steps the
    # materialized parameter (Adagrad refuses the placeholder up front)
    m = _lazy_module(T)
    m.register_parameter("test_param", T.nn.parameter.UninitializedParameter())
    cls = getattr(T.optim, opt)
    if opt == "Adagrad":   # Adagrad's full_like(p) raises
        with pytest.raises(ValueError, match="uninitialized parameter"):
            cls(m.parameters())
        return
    o = cls(m.parameters(), lr=0.0) if opt == "SGD" else cls(m.parameters())
    assert isinstance(o.param_groups[0]["params"][0], T.nn.parameter.UninitializedParameter)
    m.test_param.materialize(10)
    p = o.param_groups[0]["params"][0]
    assert isinstance(p, T.nn.Parameter) and not isinstance(p, T.nn.parameter.UninitializedParameter)
    p.grad = T.rand_like(p)
    o.step(lambda: 1.0) if opt == "LBFGS" else o.step()


def test_lazy_weight_norm_and_spectral_norm(T):
    # TestLazyModules.test_weight_norm / test_spectral_norm
    for fn in (T.nn.utils.weight_norm, T.nn.utils.spectral_norm):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match="have uninitialized parameters."):
                fn(T.nn.LazyLinear(7))


def test_lazy_invalid_functions(T):
    # TestLazyModules.test_invalid_functions
    param = T.nn.parameter.UninitializedParameter()
    for call in (lambda: T.empty_like(param), lambda: T.add(param, param), lambda: param + param):
        with pytest.raises(ValueError, match="uninitialized parameter"):
            call()


# ==== test/nn/test_pruning.py ===================================================================
def _prune(T):
    import importlib
    return importlib.import_module(T.__name__ + ".nn.utils.prune")


def test_prune_amount_validation(T):
    # TestPruningNN.test_validate_pruning_amount_init / test_validate_pruning_amount /
    # test_compute_nparams_to_prune
    prune = _prune(T)
    with pytest.raises(TypeError):
        prune._validate_pruning_amount_init(amount="I'm a string")
    for bad in (1.1, 20.0, -10):
        with pytest.raises(ValueError):
            prune._validate_pruning_amount_init(amount=bad)
    for ok in (0.34, 1500, 0, 0.0, 1, 1.0):
        prune._validate_pruning_amount_init(amount=ok)
    with pytest.raises(ValueError):
        prune._validate_pruning_amount(amount=20, tensor_size=19)
    for amount, size in ((0.3, 0), (19, 20), (0, 0), (1, 1)):
        prune._validate_pruning_amount(amount=amount, tensor_size=size)
    assert [prune._compute_nparams_toprune(amount=a, tensor_size=n)
            for a, n in ((0, 15), (10, 15), (1, 15), (1.0, 15), (0.4, 17))] == [0, 10, 1, 15, 7]


def _linear_conv3d(T):
    return [T.nn.Linear(5, 7), T.nn.Conv3d(2, 2, 2)]


def test_random_pruning_sizes_orig_and_new_weight(T):
    # TestPruningNN.test_random_pruning_sizes / test_random_pruning_orig / test_random_pruning_new_weight /
    # test_random_pruning_pickle / test_remove_pruning / test_remove_pruning_exception
    prune = _prune(T)
    for m in _linear_conv3d(T):
        for name in ("weight", "bias"):
            with pytest.raises(ValueError):
                prune.remove(m, name)
    for m in _linear_conv3d(T):
        for name in ("weight", "bias"):
            orig = getattr(m, name)
            prune.random_unstructured(m, name=name, amount=0.1)
            assert getattr(m, name + "_mask").size() == orig.size() == getattr(m, name).size()
            assert T.equal(getattr(m, name + "_orig"), orig)
            assert T.equal(getattr(m, name), getattr(m, name + "_orig") * getattr(m, name + "_mask").to(orig.dtype))
            assert isinstance(pickle.loads(pickle.dumps(m)), type(m))
    for m in _linear_conv3d(T):
        for name in ("weight", "bias"):
            prune.random_unstructured(m, name, amount=0.5)
            assert name + "_orig" in dict(m.named_parameters()) and name + "_mask" in dict(m.named_buffers())
            assert name not in dict(m.named_parameters())
            pruned = getattr(m, name)
            prune.remove(m, name)
            assert name in dict(m.named_parameters()) and name + "_orig" not in dict(m.named_parameters())
            assert name + "_mask" not in dict(m.named_buffers()) and T.equal(pruned, getattr(m, name))


def _fixed_mask_pruning(T, m, mask):
    """random_unstructured with its compute_mask patched to return ``mask``, as the original's mock."""
    from unittest import mock
    prune = _prune(T)
    with mock.patch.object(prune.RandomUnstructured, "compute_mask", return_value=mask):
        prune.random_unstructured(m, name="weight", amount=0.9)


@pytest.mark.parametrize("how", ["identity", "ones mask"])
def test_identity_pruning(T, how):
    # TestPruningNN.test_identity_pruning / test_random_pruning_0perc: a mask of ones changes
    # neither the output nor the gradients (now on weight_orig)
    x = T.ones(1, 5)
    m = init_params(T, T.nn.Linear(5, 2), 0)
    y0 = m(x)
    y0.sum().backward()
    gw, gb = m.weight.grad.clone(), m.bias.grad.clone()
    assert T.equal(gw, T.ones_like(m.weight)) and T.equal(gb, T.ones_like(m.bias))
    m.zero_grad()
    if how == "identity":
        _prune(T).identity(m, name="weight")
    else:
        _fixed_mask_pruning(T, m, T.ones_like(m.weight))
    y1 = m(x)
    assert T.equal(y0, y1)
    y1.sum().backward()
    assert T.equal(gw, m.weight_orig.grad) and T.equal(gb, m.bias.grad)
    assert T.equal(m(x), m(x))


def test_random_pruning_masked_grads_and_forward(T):
    # TestPruningNN.test_random_pruning / test_random_pruning_forward / test_remove_pruning_forward
    def pruned_at_two(seed, keep):
        """A Linear(5, 2) whose mask is ``keep`` except at [1, 0] and [0, 3]."""
        m = init_params(T, T.nn.Linear(5, 2), seed)
        mask = T.full_like(m.weight, float(keep))
        mask[1, 0] = mask[0, 3] = 1 - keep
        _fixed_mask_pruning(T, m, mask)
        return m, mask

    x = T.ones(1, 5)
    m, mask = pruned_at_two(0, 1)
    y = m(x)
    y.sum().backward()
    assert T.equal(m.weight_orig.grad, mask) and T.equal(m.bias.grad, T.ones_like(m.bias))
    old = m.weight_orig.clone()
    for p in m.parameters():
        p.data.sub_(p.grad.data)
    assert old[1, 0] == m.weight_orig[1, 0] and old[0, 3] == m.weight_orig[0, 3]
    y = m(x)
    _prune(T).remove(m, "weight")
    assert T.equal(y, m(x))
    m, _ = pruned_at_two(1, 0)
    yhat = m(x)
    assert T.allclose(yhat[0, 0], m.weight_orig[0, 3] + m.bias[0])
    assert T.allclose(yhat[0, 1], m.weight_orig[1, 0] + m.bias[1])


def test_pruning_id_consistency(T):
    # TestPruningNN.test_pruning_id_consistency: an optimizer's parameter object survives pruning
    m = T.nn.Linear(5, 2, bias=False)
    pid = id(next(iter(m.parameters())))
    _prune(T).random_unstructured(m, name="weight", amount=0.9)
    assert pid == id(next(iter(m.parameters())))
    _prune(T).remove(m, "weight")
    assert pid == id(next(iter(m.parameters())))


def test_multiple_pruning_calls(T):
    # TestPruningNN.test_multiple_pruning_calls: the hook becomes a PruningContainer in call order
    prune = _prune(T)
    m = init_params(T, T.nn.Conv3d(2, 2, 2), 0)
    prune.l1_unstructured(m, name="weight", amount=0.1)
    mask0 = m.weight_mask
    prune.ln_structured(m, name="weight", amount=0.3, n=2, dim=0)
    hook = next(iter(m._forward_pre_hooks.values()))
    assert isinstance(hook, prune.PruningContainer) and hook._tensor_name == "weight" and len(hook) == 2
    assert isinstance(hook[0], prune.L1Unstructured) and isinstance(hook[1], prune.LnStructured)
    assert T.all(m.weight_mask[mask0 == 0] == 0)
    prune.ln_structured(m, name="weight", amount=0.1, n=float("inf"), dim=1)
    assert next(iter(m._forward_pre_hooks.values()))._tensor_name == "weight"


def test_pruning_container(T):
    # TestPruningNN.test_pruning_container / test_pruning_container_compute_mask
    prune = _prune(T)
    container = prune.PruningContainer()
    container._tensor_name = "test"
    assert len(container) == 0
    p = prune.L1Unstructured(amount=2)
    p._tensor_name = "test"
    container.add_pruning_method(p)
    q = prune.L1Unstructured(amount=2)
    q._tensor_name = "another_test"
    with pytest.raises(ValueError):
        container.add_pruning_method(q)
    for bad in (10, "ugh"):
        with pytest.raises(TypeError):
            container.add_pruning_method(bad)
    t = T.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=T.float32)
    default = T.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    assert container.compute_mask(t, default).tolist() == [[0, 0, 1, 0], [1, 1, 0, 1]]
    for method, expected in ((prune.LnStructured(amount=1, n=2, dim=0), [[0, 0, 0, 0], [1, 1, 0, 1]]),
                             (prune.LnStructured(amount=1, n=2, dim=1), [[0, 1, 1, 0], [0, 1, 0, 1]])):
        method._tensor_name = "test"
        container.add_pruning_method(method)
        out = container.compute_mask(t, default)
        assert out.tolist() == expected and out.dtype == T.float32


def test_l1_unstructured_by_hand(T):
    # TestPruningNN.test_l1_unstructured_pruning / ..._with_importance_scores: repeated pruning
    # respects the previous mask
    prune = _prune(T)
    for scores, first, second in (
            (None, [[0, 2, 3, 4], [-4, -3, -2, 0]], [[0, 0, 3, 4], [-4, -3, 0, 0]]),
            ([[4, 2, 1, 3], [-3, -1, -2, -4]], [[1, 2, 0, 4], [-4, 0, -2, -1]], [[1, 0, 0, 4], [-4, 0, 0, -1]])):
        m = T.nn.Linear(4, 2)
        m.weight = T.nn.Parameter(T.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]], dtype=T.float32))
        kw = {} if scores is None else {"importance_scores": T.tensor(scores, dtype=T.float32)}
        prune.l1_unstructured(m, "weight", amount=2, **kw)
        assert m.weight.tolist() == first
        prune.l1_unstructured(m, "weight", amount=2, **kw)
        assert m.weight.tolist() == second


def test_unstructured_same_magnitude_and_random_structured_amount(T):
    # TestPruningNN.test_unstructured_pruning_same_magnitude / test_random_structured_pruning_amount
    prune = _prune(T)
    t = 2 * T.randint(low=-1, high=2, size=(10, 7))
    mask = prune.L1Unstructured(amount=0.2).compute_mask(t, default_mask=T.ones_like(t))
    assert int(T.sum(mask == 0)) == prune._compute_nparams_toprune(0.2, t.nelement())
    t = 2 * T.randint(low=-1, high=2, size=(5, 4, 2)).to(dtype=T.float32)
    mask = prune.RandomStructured(amount=0.6, dim=2).compute_mask(t, default_mask=T.ones_like(t))
    assert sorted(T.sum(mask == 0, dim=(0, 1)).tolist()) == [0, 20]


@pytest.mark.parametrize("scores", [False, True])
def test_ln_structured_by_hand(T, scores):
    # TestPruningNN.test_ln_structured_pruning / test_ln_structured_pruning_importance_scores
    prune = _prune(T)
    m = T.nn.Conv2d(3, 1, 2)
    m.weight.data = T.tensor([[[[1.0, 2.0], [1.0, 2.5]], [[0.5, 1.0], [0.1, 0.1]], [[-3.0, -5.0], [0.1, -1.0]]]])
    kw = {}
    if scores:
        kw["importance_scores"] = T.tensor([[[[10.0, 1.0], [10.0, 1.0]], [[30.0, 3.0], [30.0, 3.0]],
                                             [[-20.0, -2.0], [-20.0, -2.0]]]])
    expected = T.ones_like(m.weight)
    expected[:, 0 if scores else 1] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=2, dim=1, **kw)
    assert T.equal(expected, m.weight_mask)
    expected[:, :, :, 1 if scores else 0] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=1, dim=-1, **kw)
    assert T.equal(expected, m.weight_mask)


@pytest.mark.parametrize("scores", [False, True])
def test_global_pruning_by_hand(T, scores):
    # TestPruningNN.test_global_pruning / test_global_pruning_importance_scores
    prune = _prune(T)
    m, n = T.nn.Linear(4, 2), T.nn.Linear(3, 1)
    m.weight = T.nn.Parameter(T.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]]).to(dtype=T.float32))
    n.weight = T.nn.Parameter(T.tensor([[0, 0.1, -2]]).to(dtype=T.float32))
    kw = {}
    if scores:
        kw["importance_scores"] = {(m, "weight"): T.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=T.float32),
                                   (n, "weight"): T.tensor([[0, 10.0, -0.2]])}
    prune.global_unstructured(((m, "weight"), (n, "weight")), pruning_method=prune.L1Unstructured, amount=4, **kw)
    if scores:
        assert m.weight.tolist() == [[1, 2, 0, 4], [-4, 0, -2, -1]]
        assert T.equal(n.weight, T.tensor([[0, 0.1, 0]]))
    else:
        assert m.weight.tolist() == [[0, 2, 3, 4], [-4, -3, -2, 0]] and n.weight.tolist() == [[0, 0, -2]]


def test_custom_from_mask_and_prune(T):
    # TestPruningNN.test_custom_from_mask_pruning / test_prune / test_prune_importance_scores /
    # test_prune_importance_scores_mimic_default
    prune = _prune(T)
    mask, default = T.tensor([[0, 1, 1, 0], [0, 0, 1, 1]]), T.tensor([[0, 0, 0, 0], [1, 1, 1, 1]])
    out = prune.CustomFromMask(mask=mask).compute_mask(T.rand(2, 4), default)
    assert out.tolist() == [[0, 0, 0, 0], [0, 0, 1, 1]]
    p = prune.L1Unstructured(amount=2)
    t = T.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=T.float32)
    default = T.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    expected = t * T.tensor([[0, 0, 1, 0], [1, 1, 0, 1]])
    assert T.equal(p.prune(t, default), expected) and T.equal(p.prune(t, default, importance_scores=t), expected)
    scores = T.tensor([[1, 2, 3, 4], [1.5, 1.6, 1.7, 1.8]])
    assert T.equal(p.prune(t, default, importance_scores=scores), t * T.tensor([[0, 1, 1, 0], [0, 1, 0, 1]]))


def test_pruning_rollback(T):
    # TestPruningNN.test_pruning_rollback: a failing compute_mask leaves the module unpruned
    from unittest import mock
    prune = _prune(T)
    for m in _linear_conv3d(T):
        for name in ("weight", "bias"):
            with mock.patch.object(prune.L1Unstructured, "compute_mask", side_effect=Exception("HA!")):
                with pytest.raises(Exception):
                    prune.l1_unstructured(m, name=name, amount=0.9)
            assert name in dict(m.named_parameters()) and name + "_mask" not in dict(m.named_buffers())
            assert name + "_orig" not in dict(m.named_parameters())


def test_pruning_serialization(T, tmp_path):
    # TestPruningNN.test_pruning_serialization_model / test_pruning_serialization_state_dict
    prune = _prune(T)

    def model():
        return T.nn.Sequential(T.nn.Linear(10, 10), T.nn.ReLU(), T.nn.Linear(10, 1))

    net = model()
    assert "0.weight" in net.state_dict() and "0.weight_orig" not in net.state_dict()
    prune.l1_unstructured(module=net[0], name="weight", amount=0.9)
    keys = net.state_dict()
    assert "0.weight_orig" in keys and "0.weight_mask" in keys and "0.weight" not in keys
    pruned = net[0].weight
    T.save(net, str(tmp_path / "m.pt"))
    back = T.load(str(tmp_path / "m.pt"), weights_only=False)
    assert "0.weight_orig" in back.state_dict() and "0.weight" not in back.state_dict()
    assert T.equal(pruned, back[0].weight)
    prune.remove(module=net[0], name="weight")
    assert "0.weight" in net.state_dict() and "0.weight_mask" not in net.state_dict()
    T.save(net.state_dict(), str(tmp_path / "sd.pt"))
    fresh = model()
    fresh.load_state_dict(T.load(str(tmp_path / "sd.pt")))
    assert "0.weight_orig" not in fresh.state_dict() and T.equal(pruned, fresh[0].weight)


def test_rnn_pruning(T):
    # TestPruningNN.test_rnn_pruning: pruning an LSTM weight makes its flat weight a plain
    # tensor; removing the pruning restores the Parameter under the original name
    prune = _prune(T)
    lstm = T.nn.LSTM(4, 4)
    prune.l1_unstructured(lstm, "weight_ih_l0", 0.5)
    assert sum(isinstance(p, T.nn.Parameter) for p in lstm._flat_weights) == 3
    prune.remove(lstm, "weight_ih_l0")
    assert sum(isinstance(p, T.nn.Parameter) for p in lstm._flat_weights) == 4
    assert lstm._parameters["weight_ih_l0"] is not None and "weight_ih_l0_orig" not in lstm._parameters
    assert dict(lstm.named_parameters())["weight_ih_l0"] is not None
    assert "weight_ih_l0_orig" not in dict(lstm.named_parameters())


# ==== test/nn/test_parametrization.py ===========================================================
def _pz(T):
    import importlib
    return importlib.import_module(T.__name__ + ".nn.utils.parametrize")


def _param_modules(T):
    """The small parametrizations test_parametrization.py defines, for either library."""
    class Skew(T.nn.Module):
        def forward(self, X):
            X = X.tril(-1)
            return X - X.T

    class Orthogonal(T.nn.Module):   # the Cayley map: orthogonal for a skew-symmetric input
        def forward(self, X):
            Id = T.eye(X.size(0))
            return T.linalg.solve(Id + X, Id - X).contiguous()

    class Resize(T.nn.Module):
        def forward(self, X):
            return X[[0]]

    class NoResize(T.nn.Module):
        def forward(self, X):
            return X

    class FirstZero(T.nn.Module):
        def forward(self, x):
            return T.cat([x.new_zeros(1), x[1:]])

    class LastZero(T.nn.Module):
        def forward(self, x):
            return T.cat([x[:-1], x.new_zeros(1)])
    return Skew, Orthogonal, Resize, NoResize, FirstZero, LastZero


def test_register_and_remove_parametrization(T):
    # TestNNParametrization.test_register_and_remove_parametrization (swap off)
    pz = _pz(T)
    Skew, Orthogonal, Resize, NoResize, FirstZero, LastZero = _param_modules(T)
    model = init_params(T, T.nn.Linear(8, 8), 0)
    wid, bid = id(model.weight), id(model.bias)
    initial = copy.deepcopy(model)

    def unparametrized_again():
        assert not hasattr(model, "parametrizations") and model.__class__ is T.nn.Linear
        assert T.equal(model.weight, initial.weight) and id(model.weight) == wid

    with pytest.raises(ValueError, match="Registering a parametrization may not change the shape of the tensor"):
        pz.register_parametrization(model, "weight", Resize())
    for chain in ([(Resize(), True)], [(Resize(), True), (NoResize(), False)], [(Skew(), True)], [(Skew(), False)]):
        for p, unsafe in chain:
            pz.register_parametrization(model, "weight", p, unsafe=unsafe)
        assert pz.is_parametrized(model) and pz.is_parametrized(model, "weight")
        assert not pz.is_parametrized(model, "bias") and "weight" not in model._parameters
        if isinstance(chain[0][0], Resize):
            assert model.weight.shape[0] == 1
        else:
            assert T.equal(model.weight, -model.weight.T)
        pz.remove_parametrizations(model, "weight", leave_parametrized=False)
        unparametrized_again()
    pz.register_parametrization(model, "weight", Skew())
    pz.register_parametrization(model, "weight", Orthogonal())
    X = model.weight
    assert T.allclose(X.T @ X, T.eye(8), atol=1e-5) and "weight" in model.parametrizations
    pz.remove_parametrizations(model, "weight", leave_parametrized=False)
    unparametrized_again()
    pz.register_parametrization(model, "weight", Skew())
    pz.register_parametrization(model, "weight", Orthogonal())
    pz.register_parametrization(model, "bias", FirstZero())
    pz.register_parametrization(model, "bias", LastZero())
    assert pz.is_parametrized(model, "bias") and model.bias[0].item() == 0.0 and model.bias[-1].item() == 0.0
    assert len(list(model.parameters())) == 2
    sgd = T.optim.SGD(model.parameters(), lr=0.01)

    def step_changes_both():
        w, b = model.weight.clone(), model.bias.clone()
        sgd.zero_grad()
        (model.weight.T @ model.bias).sum().backward()
        sgd.step()
        assert not T.equal(model.weight, w) and not T.equal(model.bias, b)

    step_changes_both()
    pz.remove_parametrizations(model, "weight", leave_parametrized=False)
    assert pz.is_parametrized(model) and not pz.is_parametrized(model, "weight") and pz.is_parametrized(model, "bias")
    assert model.bias[0].item() == 0.0 and not T.equal(model.weight, initial.weight) and id(model.weight) == wid
    step_changes_both()
    pz.remove_parametrizations(model, "bias", leave_parametrized=False)
    assert not pz.is_parametrized(model) and model.bias[0].item() != 0.0 and id(model.bias) == bid
    assert model.__class__ is T.nn.Linear and len(list(model.parameters())) == 2
    step_changes_both()
    for _ in range(2):
        pz.register_parametrization(model, "weight", Skew())
        pz.register_parametrization(model, "weight", Orthogonal())
        pz.remove_parametrizations(model, "weight", leave_parametrized=True)
        assert id(model.weight) == wid and id(model.bias) == bid
        step_changes_both()


def test_register_and_remove_nested_parametrization(T):
    # TestNNParametrization.test_register_and_remove_nested_parametrization
    pz = _pz(T)
    Skew = _param_modules(T)[0]
    model = T.nn.Linear(8, 8)
    pz.register_parametrization(model, "weight", Skew())
    param_mod = model.parametrizations.weight
    assert not hasattr(param_mod, "parametrizations") and not pz.is_parametrized(param_mod)
    pz.register_parametrization(param_mod, "original", Skew())
    assert pz.is_parametrized(param_mod, "original") and "original" not in param_mod._parameters
    A = param_mod.original
    assert T.equal(A, -A.T)
    pz.remove_parametrizations(param_mod, "original", leave_parametrized=False)
    assert not hasattr(param_mod, "parametrizations") and param_mod.__class__ is pz.ParametrizationList
    pz.remove_parametrizations(model, "weight", leave_parametrized=False)
    assert not hasattr(model, "parametrizations") and model.__class__ is T.nn.Linear


def test_register_and_remove_buffer_parametrization(T):
    # TestNNParametrization.test_register_and_remove_buffer_parametrization
    pz = _pz(T)
    FirstZero, LastZero = _param_modules(T)[4:]
    model = T.nn.Linear(8, 8)
    delattr(model, "bias")
    model.bias = T.nn.Buffer(T.ones(8))
    pz.register_parametrization(model, "bias", FirstZero())
    pz.register_parametrization(model, "bias", LastZero())
    for leave in (None, True):
        if leave:
            pz.remove_parametrizations(model, "bias", leave_parametrized=True)
        assert pz.is_parametrized(model, "bias") is (leave is None)
        assert model.bias.tolist() == [0.0] + [1.0] * 6 + [0.0] and len(list(model.parameters())) == 1


def test_serialization_parametrization(T, tmp_path):
    # TestNNParametrization.test_serialization_parametrization: a stateful parametrization
    # round-trips through state_dict; saving the whole parametrized module raises
    pz = _pz(T)

    class Orthogonal(T.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.id = T.nn.Buffer(T.eye(n))
            self.B = T.nn.Buffer(T.empty(n, n))
            T.nn.init.orthogonal_(self.B)

        def forward(self, X):
            A = X.triu(1)
            A = A - A.T
            return self.B @ T.linalg.solve(self.id + A, self.id - A)

    def get_model():
        model = T.nn.Sequential(T.nn.Linear(5, 5), T.nn.ReLU(), T.nn.Linear(5, 1))
        pz.register_parametrization(model[0], "weight", Orthogonal(5))
        return model

    model = get_model()
    new = get_model()
    T.save(model.state_dict(), str(tmp_path / "sd.pt"))
    new.load_state_dict(T.load(str(tmp_path / "sd.pt")))
    assert pz.is_parametrized(new[0], "weight")
    assert T.allclose(model[0].weight, new[0].weight)
    assert T.equal(model[0].parametrizations.weight[0].B, new[0].parametrizations.weight[0].B)
    with pytest.raises(RuntimeError, match="state_dict"):
        T.save(model, str(tmp_path / "m.pt"))


def test_initialization_parametrization(T):
    # TestNNParametrization.test_initialization_parametrization: assigning through right_inverse
    pz = _pz(T)

    class Skew(T.nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.T

        def right_inverse(self, X):
            if not T.allclose(X, -X.T, atol=1e-6):
                raise ValueError("The matrix is not skew-symmetric.")
            return X.triu(1)

    class Orthogonal(T.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.B = T.nn.Buffer(T.eye(n))

        def forward(self, X):
            Id = T.eye(X.size(0))
            return self.B @ T.linalg.solve(Id + X, Id - X)

        def right_inverse(self, X):
            if not T.allclose(X.T @ X, T.eye(X.size(0)), atol=1e-4):
                raise ValueError("The input is not orthogonal.")
            self.B = X
            return T.zeros_like(X)

    N = 5
    model = T.nn.Linear(N, N)
    skew = Skew()
    with T.no_grad():
        model.weight.set_(skew(model.weight))
    pz.register_parametrization(model, "weight", skew)
    with pytest.raises(ValueError):
        model.weight = T.rand(N, N)
    X = randn(T, (N, N), 0)
    X = X - X.T
    model.weight = X
    assert T.equal(model.parametrizations.weight.original, X.triu(1)) and T.equal(model.weight, X)
    pz.register_parametrization(model, "weight", Orthogonal(N))
    with pytest.raises(ValueError):
        model.weight = T.rand(N, N)
    X = T.nn.init.orthogonal_(T.rand(N, N))
    model.weight = X
    assert T.allclose(model.weight, X, atol=1e-6)
    assert T.equal(model.parametrizations.weight.original, T.zeros_like(X))


def _identity_cls(T):
    class Identity(T.nn.Module):
        def forward(self, x):
            return x
    return Identity


def test_errors_unparametrized_tensor_parametrization(T):
    # TestNNParametrization.test_errors_unparametrized_tensor_parametrization
    pz = _pz(T)
    module = T.nn.Linear(3, 4)
    w0 = module.weight.clone()
    Identity = _identity_cls(T)
    with pytest.raises(ValueError, match="does not have a parameter"):
        pz.register_parametrization(module, "foo", Identity())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        pz.remove_parametrizations(module, "bias")
    assert not pz.is_parametrized(module)

    class Sum(T.nn.Module):
        def forward(self, x, y):
            return x + y

        def right_inverse(self, z):
            return z, T.zeros_like(z)

    pz.register_parametrization(module, "weight", Sum())
    with pytest.raises(ValueError, match="leave_parametrized=False"):
        pz.remove_parametrizations(module, "weight", leave_parametrized=False)
    pz.remove_parametrizations(module, "weight", leave_parametrized=True)

    def cls(forward, right_inverse=None):
        body = {"forward": lambda self, *xs: forward(*xs)}
        if right_inverse is not None:
            body["right_inverse"] = lambda self, w: right_inverse(w)
        return type("P", (T.nn.Module,), body)

    for exc, pattern, p in [
            (TypeError, "positional argument", cls(lambda x, y, z: x + y + z, lambda w: (w, T.zeros_like(w)))),
            (ValueError, "Tensor or a Sequence of", cls(lambda x: x, lambda z: None)),
            (ValueError, "of the sequence with type", cls(lambda x, y: x, lambda z: (None, z))),
            (ValueError, "outputs one tensor, it may not change the dtype", cls(lambda x: x.float(), lambda w: w.bool())),
            (ValueError, "outputs one tensor, it may not change the device",
             cls(lambda x: x.float(), lambda w: w.to(T.device("meta")))),
            (ValueError, "must return a tensor", cls(lambda x: 2)),
            (ValueError, "may not change the dtype", cls(lambda x: x.bool())),
            (ValueError, "may not change the shape", cls(lambda x: x[:-1])),
            (ValueError, "may not change the dtype", cls(lambda x, y: (x + y).bool(), lambda w: (w, w + 1)))]:
        with pytest.raises(exc, match=pattern):
            pz.register_parametrization(module, "weight", p())
        assert not pz.is_parametrized(module)
    pz.register_parametrization(module, "weight", cls(lambda x: x, lambda w: (w,))())
    assert hasattr(module.parametrizations.weight, "original0")
    assert not hasattr(module.parametrizations.weight, "original1")
    module.weight
    pz.remove_parametrizations(module, "weight", leave_parametrized=True)
    assert not pz.is_parametrized(module) and T.equal(module.weight, w0)


def test_errors_parametrized_tensor_parametrization(T):
    # TestNNParametrization.test_errors_parametrized_tensor_parametrization: a failing second
    # parametrization leaves the first alone
    pz = _pz(T)
    Identity = _identity_cls(T)
    module = T.nn.Linear(3, 4)
    pz.register_parametrization(module, "weight", Identity())

    def cls(forward, right_inverse=None):
        body = {"forward": lambda self, x: forward(x)}
        if right_inverse is not None:
            body["right_inverse"] = lambda self, w: right_inverse(w)
        return type("P", (T.nn.Module,), body)

    for pattern, p in [("must return a tensor", cls(lambda x: (x, x))),
                       ("may not change the dtype", cls(lambda x: x.bool())),
                       ("may not change the shape", cls(lambda x: x[:-1])),
                       ("right_inverse must return a tensor", cls(lambda x: x, lambda x: (x, x))),
                       ("must have the same dtype", cls(lambda x: x, lambda x: x.bool())),
                       ("must have the same shape", cls(lambda x: x, lambda x: x[:-1]))]:
        with pytest.raises(ValueError, match=pattern):
            pz.register_parametrization(module, "weight", p())
        assert len(module.parametrizations.weight) == 1 and isinstance(module.parametrizations.weight[0], Identity)


def test_multiple_inputs_parametrization(T):
    # TestNNParametrization.test_multiple_inputs_parametrization: a rank-one parametrization
    # with two originals, chained with a one-input one, trained and removed
    pz = _pz(T)

    class RankOne(T.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Y):
            U, S, Vh = T.linalg.svd(Y, full_matrices=False)
            s0 = S[0].sqrt().unsqueeze(-1)
            return U[..., :, 0] * s0, Vh[..., 0, :] * s0

    Double = _affine_params(T)[1]
    model = init_params(T, T.nn.Linear(3, 3), 0)
    pz.register_parametrization(model, "weight", RankOne())
    plist = model.parametrizations.weight
    assert "original0" in plist._parameters and "original1" in plist._parameters
    assert "weight" not in model._parameters and T.linalg.matrix_rank(model.weight).item() == 1
    for _ in range(2):
        with pytest.raises(ValueError, match="leave_parametrized=False"):
            pz.remove_parametrizations(model, "weight", leave_parametrized=False)
        pz.remove_parametrizations(model, "weight", leave_parametrized=True)
        assert model.__class__ is T.nn.Linear and not pz.is_parametrized(model) and "weight" in model._parameters
        assert T.linalg.matrix_rank(model.weight).item() == 1
        if len(list(model.parameters())) == 2 and not hasattr(model, "_done"):
            model._done = True
            w0 = model.weight.clone()
            pz.register_parametrization(model, "weight", RankOne())
            assert T.allclose(w0, model.weight, atol=1e-5)
            pz.register_parametrization(model, "weight", Double())
            assert T.allclose(2.0 * w0, model.weight, atol=1e-5) and len(list(model.parameters())) == 3
        sgd = T.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            sgd.zero_grad()
            (model.weight.T @ model.bias).sum().backward()
            sgd.step()
        if not pz.is_parametrized(model):
            break


def test_caching_parametrization(T):
    # TestNNParametrization.test_caching_parametrization /
    # test_caching_parametrization_with_transfer_parametrizations_and_params (to a plain Linear)
    pz = _pz(T)
    Skew, Orthogonal = _param_modules(T)[:2]
    model = T.nn.Linear(5, 5)
    pz.register_parametrization(model, "weight", Skew())
    pz.register_parametrization(model, "weight", Orthogonal())
    to_model = T.nn.Linear(5, 5)
    pz.transfer_parametrizations_and_params(model, to_model)
    with pz.cached():
        X, Y = model.weight, model.weight
        A, B = to_model.weight, to_model.weight
        assert X is Y and A is B and A is not X
    assert model.weight is not model.weight


def test_parametrization_training_mode_and_type(T):
    # TestNNParametrization.test_parametrization_same_training_mode / test_type_before_parametrizations
    pz = _pz(T)
    Identity = _identity_cls(T)
    module = T.nn.Linear(4, 4)
    module.eval()
    pz.register_parametrization(module, "weight", Identity())
    assert not module.parametrizations.weight[0].training
    module.train()
    pz.register_parametrization(module, "weight", Identity().eval())
    assert module.parametrizations.weight[0].training and module.parametrizations.weight[1].training
    model = T.nn.Linear(5, 5)
    assert pz.type_before_parametrizations(model) is T.nn.Linear
    pz.register_parametrization(model, "weight", Identity())
    assert pz.type_before_parametrizations(model) is T.nn.Linear and type(model) is not T.nn.Linear


def _affine_params(T):
    """``AddOne``, ``Double`` (with a right_inverse) and ``MinusOne`` parametrizations."""
    class AddOne(T.nn.Module):
        def forward(self, x):
            return x + 1.0

    class Double(T.nn.Module):
        def forward(self, x):
            return 2.0 * x

        def right_inverse(self, x):
            return 0.5 * x

    class MinusOne(T.nn.Module):
        def forward(self, x):
            return x - 1.0
    return AddOne, Double, MinusOne


def test_deepcopy_after_parametrization(T):
    # TestNNParametrization.test_deepcopy_after_parametrization (with and without a custom __deepcopy__)
    pz = _pz(T)

    AddOne = _affine_params(T)[0]

    class ModelWithoutDeepcopy(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = T.nn.Parameter(T.tensor([1.0, 1.0, 1.0, 1.0]))
            self.bias = T.nn.Parameter(T.tensor([0.0, 0.0, 0.0, 0.0]))
            self.attr = [1.0, 2.0, 3.0, 4.0]

    class ActualModel(ModelWithoutDeepcopy):
        def __deepcopy__(self, memo):
            result = self.__new__(self.__class__)
            memo[id(self)] = result
            result.__dict__ = copy.deepcopy(self.__dict__, memo)
            return result

    def check(m1, m2):
        w1, w2 = m1.parametrizations.weight.original, m2.parametrizations.weight.original
        b1 = m1.parametrizations.bias.original if pz.is_parametrized(m1, "bias") else m1.bias
        b2 = m2.parametrizations.bias.original if pz.is_parametrized(m2, "bias") else m2.bias
        assert m1.__dict__.keys() == m2.__dict__.keys() and m1 is not m2
        assert T.equal(w1, w2) and w1 is not w2 and T.equal(b1, b2) and b1 is not b2
        assert m1.attr == m2.attr and m1.attr is not m2.attr
        assert T.equal(m1.weight, m2.weight)

    for model in (ModelWithoutDeepcopy(), ActualModel()):
        for name in ("weight", "bias", "weight"):
            pz.register_parametrization(model, name, AddOne())
            check(model, copy.deepcopy(model))


def test_transfer_parametrizations_and_params(T):
    # TestNNParametrization.test_transfer_parametrizations_and_params (to a plain Linear, not a
    # quantized-aware one): values, originals, independence, and a parameter the target lacks
    pz = _pz(T)

    AddOne, Double, MinusOne = _affine_params(T)
    model = T.nn.Linear(5, 5)
    for p in (AddOne(), Double(), MinusOne()):
        pz.register_parametrization(model, "weight", p)
    hold = model.weight
    to_model = T.nn.Linear(5, 5)
    pz.transfer_parametrizations_and_params(model, to_model)
    assert pz.is_parametrized(to_model, "weight") and T.equal(model.weight, to_model.weight)
    assert T.equal(model.parametrizations.weight.original, to_model.parametrizations.weight.original)
    assert T.equal(hold, model.weight)
    pz.remove_parametrizations(to_model, "weight")
    assert not pz.is_parametrized(to_model, "weight") and pz.is_parametrized(model, "weight")
    model.test_param = T.nn.Parameter(T.randn(5, 5))
    assert not hasattr(to_model, "test_param")
    pz.register_parametrization(model, "test_param", Double())
    hold = model.test_param
    pz.transfer_parametrizations_and_params(model, to_model, "test_param")
    assert T.equal(model.test_param, to_model.test_param) and T.equal(hold, model.test_param)
    assert T.equal(model.parametrizations.test_param.original, to_model.parametrizations.test_param.original)
