"""Behaviour tests from PyTorch's test/test_nn.py (CPU, public API) ported as programs that run
once with torch (the oracle) and once with tracegrad (``run_both``): every logged value,
gradient, dtype, repr line and exception class must agree. Each program names the test whose
semantics it follows. Areas already ported elsewhere (module API/hooks, RNN parity, vision
layer parity, losses) are not repeated; these cover the corners those files leave out."""
import warnings

import numpy as np
import pytest
from parity import init_params, randn, run_both

pytest.importorskip("torch")


def attempt(log, name, fn):
    """Log ``fn()``'s result, or the class of what it raised (so torch's raising is checked too)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the class is the observation
        log(name + ": raises", type(e))
        return None
    log(name, out)
    return out


def warned(fn):
    """``(result, [warning class names])`` of ``fn()`` with every warning recorded."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [x.category.__name__ for x in w]


def weighted_backward(T, out, seed=5):
    (out * randn(T, tuple(out.shape), seed)).sum().backward()


# ---- utils.rnn packing --------------------------------------------------------------------------
def test_pack_padded_sequence_unsorted_roundtrip():
    # TestNN.test_pack_padded_sequence (enforce_sorted=False) / test_pad_packed_sequence_total_length
    def program(T, log):
        rnn = T.nn.utils.rnn
        x = randn(T, (5, 3, 2), 0, requires_grad=True)
        packed = rnn.pack_padded_sequence(x, T.tensor([3, 5, 2]), enforce_sorted=False)
        for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
            log(name, getattr(packed, name))
        out, lengths = rnn.pad_packed_sequence(packed, padding_value=-1.0, total_length=7)
        weighted_backward(T, out)
        log("padded", out), log("lengths", lengths), log("grad", x.grad)
        log("to double", packed.double().data.dtype)
        attempt(log, "total_length too small", lambda: rnn.pad_packed_sequence(packed, total_length=3))
        attempt(log, "unsorted with enforce_sorted", lambda: rnn.pack_padded_sequence(x, T.tensor([3, 5, 2])))
        attempt(log, "zero length", lambda: rnn.pack_padded_sequence(x, T.tensor([5, 3, 0])))
        seqs = [randn(T, (n, 3), n) for n in (2, 4, 1)]
        packed = rnn.pack_sequence(seqs, enforce_sorted=False)
        log("pack_sequence", [packed.data, packed.batch_sizes, rnn.unpack_sequence(packed)])
        attempt(log, "pack_sequence unsorted", lambda: rnn.pack_sequence(seqs))
        log("pad left", rnn.pad_sequence(seqs, batch_first=True, padding_side="left", padding_value=2.0))
        log("unpad", rnn.unpad_sequence(randn(T, (4, 3, 2), 1), T.tensor([4, 2, 1])))
    run_both(program)


def test_packed_sequence_dtype_methods():
    # TestNN.test_type_casts-style check of PackedSequence (test_pack_sequence / test_packed_sequence_*)
    def program(T, log):
        packed = T.nn.utils.rnn.pack_sequence([T.ones(3, 2), T.ones(2, 2)])
        log("casts", [getattr(packed, m)().data.dtype for m in ("double", "float", "half", "long", "int", "short",
                                                                 "char", "byte")])
        log("unchanged", [packed.to(T.float32) is packed, packed.is_cuda, packed.cpu().batch_sizes])
    run_both(program)


# ---- RNN argument checks and layouts ------------------------------------------------------------
def test_rnn_argument_checks():
    # TestNN.test_rnn_args_check / test_projections_lstm_args_check / test_RNN_dropout_warning /
    # test_rnn_check_device-free parts of test_RNN_input_size_zero
    def program(T, log):
        nn = T.nn
        for name, build in [("proj >= hidden", lambda: nn.LSTM(3, 5, proj_size=5)),
                            ("negative proj", lambda: nn.LSTM(3, 5, proj_size=-1)),
                            ("proj on RNN", lambda: nn.RNN(3, 5, proj_size=2)),
                            ("dropout > 1", lambda: nn.RNN(3, 4, dropout=1.5)),
                            ("hidden 0", lambda: nn.RNN(3, 0)),
                            ("layers 0", lambda: nn.GRU(3, 2, num_layers=0)),
                            ("float hidden", lambda: nn.LSTM(3, 2.0)),
                            ("bad nonlinearity", lambda: nn.RNN(3, 2, nonlinearity="sigmoid"))]:
            attempt(log, name, lambda: build() and None)
        log("single-layer dropout warns", warned(lambda: nn.RNN(3, 4, dropout=0.5) and None)[1])
        gru, lstm = nn.GRU(3, 5), nn.LSTM(3, 5, proj_size=2)
        x = randn(T, (4, 2, 3), 0)
        attempt(log, "hidden batch", lambda: gru(x, randn(T, (1, 3, 5), 1)))
        attempt(log, "input size", lambda: gru(randn(T, (4, 2, 4), 2)))
        attempt(log, "4-D input", lambda: gru(randn(T, (4, 2, 3, 1), 2)))
        attempt(log, "unbatched with batched hidden", lambda: gru(randn(T, (4, 3), 2), randn(T, (1, 2, 5), 3)))
        attempt(log, "proj h size", lambda: lstm(x, (randn(T, (1, 2, 5), 1), randn(T, (1, 2, 5), 2))))
        attempt(log, "dtype mismatch", lambda: gru(randn(T, (3, 1, 3), 0, dtype=T.float64)))
        attempt(log, "cell input size", lambda: nn.LSTMCell(3, 4)(randn(T, (2, 5), 0)))
        attempt(log, "cell hidden batch", lambda: nn.GRUCell(3, 4)(randn(T, (2, 3), 0), randn(T, (3, 4), 1)))
        attempt(log, "cell 3-D", lambda: nn.RNNCell(3, 4)(randn(T, (2, 2, 3), 0)))
        out, (h, c) = nn.LSTM(2, 3)(T.zeros(4, 0, 2))
        log("empty batch", [tuple(out.shape), tuple(h.shape)])
    run_both(program)


def test_lstm_proj_bidirectional_packed_and_weights():
    # TestNN.test_LSTM_proj / test_rnn_weight_norm-free parts of test_RNN_change_dropout and
    # test_rnn_initial_hidden_state: proj_size with packed unsorted input, weight lists, names
    def program(T, log):
        lstm = init_params(T, T.nn.LSTM(2, 4, num_layers=2, proj_size=3, bidirectional=True), 0)
        x = randn(T, (5, 3, 2), 1, requires_grad=True)
        packed = T.nn.utils.rnn.pack_padded_sequence(x, T.tensor([3, 5, 2]), enforce_sorted=False)
        out, (h, c) = lstm(packed)
        padded, _ = T.nn.utils.rnn.pad_packed_sequence(out)
        (padded.sum() + h.sum() * 2 + c.sum()).backward()
        log("out", padded), log("h", h), log("c", c), log("x grad", x.grad)
        log("weight shapes", [[tuple(w.shape) for w in ws] for ws in lstm.all_weights])
        log("flat names", lstm._flat_weights_names)
        log("state_dict keys", list(lstm.state_dict()))
        gru = init_params(T, T.nn.GRU(3, 4, num_layers=3, dropout=0.9), 2).eval()
        log("eval ignores dropout", gru(randn(T, (4, 2, 3), 3))[0])
        with T.no_grad():
            gru.weight_hh_l0 = T.nn.Parameter(T.zeros(12, 4))
        log("assigned weight is used", [gru(randn(T, (2, 1, 3), 4))[0], gru._flat_weights[1]])
        log("repr", repr(T.nn.LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.2, bidirectional=True,
                                   proj_size=2)))
    run_both(program)


# ---- Embedding / EmbeddingBag ---------------------------------------------------------------------
def test_embedding_max_norm_padding_and_scale_grad_by_freq():
    # TestNN.test_embedding_max_norm / test_embedding_from_pretrained_padding_idx /
    # TestNNDeviceType.test_embedding_scale_grad_by_freq / test_embedding_padding_idx
    def program(T, log):
        w = randn(T, (6, 3), 0, scale=3.0)
        emb = T.nn.Embedding.from_pretrained(w.clone(), freeze=False, max_norm=1.0)
        out = emb(T.tensor([[0, 2], [2, 5]]))
        out.sum().backward()
        log("max_norm out", out), log("renormed in place", emb.weight.detach()), log("grad", emb.weight.grad)
        emb = T.nn.Embedding(6, 3, max_norm=2.0, norm_type=1.0)
        with T.no_grad():
            emb.weight.copy_(w)
        log("norm_type 1", [emb(T.tensor([1, 1, 4])), emb.weight.detach()])
        for pad in (-2, 1):
            emb = init_params(T, T.nn.Embedding(5, 3, padding_idx=pad, scale_grad_by_freq=True), 1)
            emb(T.tensor([[0, 3, 3], [1, 0, 3]])).pow(2).sum().backward()
            log(f"padding_idx {pad} with freq scaling", [emb.weight.grad, emb.padding_idx])
        log("padding row starts at zero", T.nn.Embedding(5, 3, padding_idx=1).weight[1])
        pre = T.nn.Embedding.from_pretrained(randn(T, (4, 2), 2), padding_idx=1)
        log("from_pretrained", [pre.weight.requires_grad, pre(T.tensor([1, 2])), repr(pre)])
        attempt(log, "padding_idx too big", lambda: T.nn.Embedding(5, 3, padding_idx=5))
        attempt(log, "padding_idx too small", lambda: T.nn.Embedding(5, 3, padding_idx=-6))
        attempt(log, "1-D pretrained", lambda: T.nn.Embedding.from_pretrained(randn(T, (4,), 0)))
        attempt(log, "float ids", lambda: T.nn.Embedding(5, 2)(T.tensor([1.0, 2.0])))
    run_both(program)


def test_embedding_bag_modes_offsets_and_checks():
    # TestNNDeviceType.test_embedding_bag_empty_input / test_EmbeddingBag_per_sample_weights_and_offsets /
    # test_embedding_bag_1D_padding_idx / test_EmbeddingBag_per_sample_weights_failures /
    # TestEmbeddingNN.test_embeddingbag_include_last_offset / test_embedding_bag_offsets checks
    def program(T, log):
        F = T.nn.functional
        w = randn(T, (6, 3), 0, requires_grad=True)
        ids, offsets = T.tensor([1, 2, 4, 5, 4, 3]), T.tensor([0, 2, 2, 6])
        outs = [F.embedding_bag(ids, w, offsets, mode=m, include_last_offset=True) for m in ("sum", "mean", "max")]
        psw = randn(T, (6,), 3, requires_grad=True)
        outs.append(F.embedding_bag(ids, w, offsets[:-1], mode="sum", per_sample_weights=psw))
        outs += [F.embedding_bag(T.tensor([[1, 2, 0], [0, 0, 0], [4, 0, 5]]), w, mode=m, padding_idx=0)
                 for m in ("sum", "mean", "max")]
        sum(o.pow(2).sum() for o in outs).backward()
        log("bags", outs), log("weight grad", w.grad), log("per-sample grad", psw.grad)
        # every id of a bag set occurs equally often (torch's scaling of unequal counts is off)
        w2 = randn(T, (6, 3), 1, requires_grad=True)
        scaled = [F.embedding_bag(T.tensor([1, 3, 1, 3, 4, 4]), w2, T.tensor([0, 3]), mode=m,
                                  scale_grad_by_freq=True) for m in ("sum", "mean")]
        sum(o.pow(2).sum() for o in scaled).backward()
        log("scale_grad_by_freq grad", w2.grad)
        bag = T.nn.EmbeddingBag.from_pretrained(randn(T, (6, 3), 2, scale=3.0), max_norm=1.0, mode="sum")
        log("max_norm", [bag(T.tensor([[0, 1], [1, 5]])), bag.weight])
        log("empty offsets", F.embedding_bag(T.tensor([1, 2, 3]), w, T.tensor([], dtype=T.long)))
        wd = w.detach()
        for name, call in [
                ("2-D input with offsets", lambda: F.embedding_bag(T.tensor([[1, 2]]), wd, T.tensor([0]))),
                ("1-D input without offsets", lambda: F.embedding_bag(T.tensor([1, 2]), wd)),
                ("bad mode", lambda: F.embedding_bag(T.tensor([[1, 2]]), wd, mode="prod")),
                ("per_sample_weights with mean", lambda: F.embedding_bag(
                    T.tensor([[1, 2]]), wd, mode="mean", per_sample_weights=T.ones(1, 2))),
                ("max mode with freq scaling", lambda: F.embedding_bag(
                    T.tensor([[1, 2]]), wd, mode="max", scale_grad_by_freq=True)),
                ("offsets[0] != 0", lambda: F.embedding_bag(T.tensor([1, 2, 3]), wd, T.tensor([1, 2]))),
                ("offsets past the end", lambda: F.embedding_bag(T.tensor([1, 2, 3]), wd, T.tensor([0, 4]))),
                ("last offset past the end", lambda: F.embedding_bag(
                    T.tensor([1, 2, 3]), wd, T.tensor([0, 4]), include_last_offset=True)),
                ("id out of range", lambda: F.embedding_bag(T.tensor([1, 7]), wd, T.tensor([0]))),
                ("negative id", lambda: F.embedding_bag(T.tensor([1, -1]), wd, T.tensor([0]))),
                ("float ids", lambda: F.embedding_bag(T.tensor([1.0, 2.0]), wd, T.tensor([0]))),
                ("float offsets", lambda: F.embedding_bag(T.tensor([1, 2]), wd, T.tensor([0.0])))]:
            attempt(log, name, call)
        log("repr", repr(T.nn.EmbeddingBag(4, 3, mode="max", padding_idx=1, include_last_offset=True)))
    run_both(program)


# ---- padding ----------------------------------------------------------------------------------
@pytest.mark.parametrize("pads", [(1, 2, 2, 1), (-1, 2, 0, -2), (2, -1, 1, 1), (-2, -1, 0, 3)])
def test_pad_modes_and_negative_pads(pads):
    # TestNN.test_pad_scalar_error-free parts of test_padding / TestNNDeviceType.test_pad
    # (negative pads crop first; circular then wraps and reflect/replicate read the cropped part)
    def program(T, log):
        x = randn(T, (1, 2, 4, 5), 0, requires_grad=True)
        outs = [T.nn.functional.pad(x, pads, mode=m) for m in ("constant", "circular", "reflect", "replicate")]
        sum((o * randn(T, tuple(o.shape), 7 + i)).sum() for i, o in enumerate(outs)).backward()
        log("outs", outs), log("grad", x.grad), log("nodes", [type(o.grad_fn).__name__ for o in outs[2:]])
        log("replicate past a crop that empties the dim", T.nn.functional.pad(x.detach()[0], (-5, 2), mode="replicate"))
    run_both(program)


def test_pad_errors_and_pad_module_reprs():
    # TestNN.test_pad_scalar_error / TestNNDeviceType.test_ReflectionPad_fails /
    # test_pad_value_nonconstant / the repr of each padding module
    def program(T, log):
        F, x = T.nn.functional, randn(T, (1, 2, 3), 0)
        for name, call in [("reflect >= size", lambda: F.pad(x, (3, 0), mode="reflect")),
                           ("odd pad length", lambda: F.pad(randn(T, (2, 3), 0), (1,))),
                           ("too many pads", lambda: F.pad(randn(T, (2, 3), 0), (1,) * 6)),
                           ("unknown mode", lambda: F.pad(x, (1, 1), mode="zeros")),
                           ("replicate on 1-D", lambda: F.pad(randn(T, (3,), 0), (1, 1), mode="replicate")),
                           ("2-D reflect on 3-D", lambda: F.pad(randn(T, (2, 3, 4), 0), (1,) * 4, mode="reflect")),
                           ("value with reflect", lambda: F.pad(x, (1, 1), mode="reflect", value=1.0)),
                           ("circular wraps twice", lambda: F.pad(x, (4, 0), mode="circular"))]:
            attempt(log, name, call)
        log("int constant", F.pad(T.arange(6).reshape(2, 3), (1, 1), value=7))
        log("reprs", [repr(T.nn.ZeroPad2d((1, 2, 3, 4))), repr(T.nn.ConstantPad1d(2, 3.5)),
                      repr(T.nn.ReflectionPad3d(1)), repr(T.nn.CircularPad2d(2)), repr(T.nn.ReplicationPad1d((1, 2)))])
    run_both(program)


# ---- interpolate ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, kw", [
    ((1, 2, 5, 7), dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 5, 7), dict(scale_factor=(1.7, 0.6), mode="bilinear", recompute_scale_factor=False)),
    ((1, 2, 5), dict(scale_factor=2.3, mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=0.7, mode="nearest-exact")),
    ((1, 1, 8, 9), dict(size=(3, 4), mode="bicubic", antialias=True)),
    ((1, 1, 3, 4, 5), dict(scale_factor=(1.5, 0.5, 2.0), mode="trilinear", align_corners=False)),
    ((1, 2, 6), dict(scale_factor=0.5, mode="area")),
    ((1, 1, 3, 4), dict(scale_factor=2.5, mode="bilinear", align_corners=True)),
])
def test_interpolate_scale_factor_paths(shape, kw):
    # TestNNDeviceType.test_upsamplingLinear1d / test_upsamplingBiMode2d / test_upsamplingTrilinear3d /
    # test_interpolate (recompute_scale_factor decides which scale drives the source index)
    def program(T, log):
        x = randn(T, shape, 0, requires_grad=True)
        out = T.nn.functional.interpolate(x, **kw)
        weighted_backward(T, out)
        log("out", out), log("grad", x.grad)
    run_both(program)


def test_interpolate_argument_errors_and_dtypes():
    # TestNN.test_interpolate_illegal_args-style checks / TestNNDeviceType.test_upsamplingNearest2d
    # on uint8 / test_upsampling_not_recompute_scale_factor
    def program(T, log):
        F = T.nn.functional
        x3, x4 = randn(T, (1, 1, 4), 0), randn(T, (1, 1, 4, 4), 1)
        for name, call in [("size and scale", lambda: F.interpolate(x3, size=3, scale_factor=2.0)),
                           ("neither", lambda: F.interpolate(x3)),
                           ("align_corners with nearest", lambda: F.interpolate(x3, size=3, align_corners=True)),
                           ("bilinear on 3-D", lambda: F.interpolate(x3, size=3, mode="bilinear")),
                           ("linear on 4-D", lambda: F.interpolate(x4, size=3, mode="linear")),
                           ("unknown mode", lambda: F.interpolate(x4, size=3, mode="foo")),
                           ("size length", lambda: F.interpolate(x4, size=(3, 3, 3))),
                           ("scale length", lambda: F.interpolate(x4, scale_factor=(2.0, 2.0, 2.0))),
                           ("2-D input", lambda: F.interpolate(randn(T, (4, 4), 0), size=3)),
                           ("antialias with nearest", lambda: F.interpolate(x4, size=3, antialias=True)),
                           ("recompute with size", lambda: F.interpolate(x4, size=3, recompute_scale_factor=True)),
                           ("empty output", lambda: F.interpolate(x4, scale_factor=0.1)),
                           ("float size", lambda: F.interpolate(x3, size=3.0)),
                           ("int64 nearest", lambda: F.interpolate(T.arange(8).reshape(1, 1, 8), size=4)),
                           ("int64 bilinear", lambda: F.interpolate(T.arange(16).reshape(1, 1, 4, 4), size=3,
                                                                    mode="bilinear")),
                           ("uint8 area", lambda: F.interpolate(T.ones(1, 1, 4, 4, dtype=T.uint8), size=2,
                                                                mode="area"))]:
            attempt(log, name, call)
        img = T.tensor((np.random.RandomState(0).rand(1, 1, 4, 5) * 255).astype(np.uint8))
        log("uint8 nearest", [F.interpolate(img, scale_factor=s, mode=m)
                              for s in (2, 0.6) for m in ("nearest", "nearest-exact")])
        log("reprs", [repr(T.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)),
                      repr(T.nn.UpsamplingNearest2d(size=3)), repr(T.nn.UpsamplingBilinear2d(scale_factor=2))])
    run_both(program)


# ---- grid_sample / affine_grid / pixel shuffle / fold ---------------------------------------------
def test_affine_grid_and_grid_sample_checks():
    # TestNN.test_affine_grid_error_checking / test_affine_grid_backward_cl_cf-free parts /
    # TestNNDeviceType.test_grid_sample_error_checking
    def program(T, log):
        F = T.nn.functional
        theta = randn(T, (2, 3, 4), 0, requires_grad=True)
        grid = F.affine_grid(theta, (2, 1, 2, 3, 4), align_corners=False)
        grid.pow(2).sum().backward()
        log("3-D grid", grid), log("theta grad", theta.grad)
        log("unit size warns", warned(lambda: F.affine_grid(randn(T, (1, 2, 3), 0), (1, 1, 1, 4),
                                                             align_corners=True)))
        t23 = randn(T, (2, 2, 3), 0)
        for name, call in [("theta shape", lambda: F.affine_grid(randn(T, (2, 2, 4), 0), (2, 1, 3, 4), False)),
                           ("batch mismatch", lambda: F.affine_grid(t23, (3, 1, 3, 4), align_corners=False)),
                           ("zero size", lambda: F.affine_grid(t23[:1], (1, 1, 0, 4), align_corners=False)),
                           ("int theta", lambda: F.affine_grid(T.ones(1, 2, 3, dtype=T.long), (1, 1, 3, 4), False)),
                           ("grid last dim", lambda: F.grid_sample(randn(T, (1, 2, 4, 5), 0), randn(T, (1, 3, 3, 3), 1),
                                                                   align_corners=False)),
                           ("grid batch", lambda: F.grid_sample(randn(T, (2, 2, 4, 5), 0), randn(T, (1, 3, 3, 2), 1),
                                                                align_corners=False)),
                           ("bad mode", lambda: F.grid_sample(randn(T, (1, 2, 4, 5), 0), randn(T, (1, 3, 3, 2), 1),
                                                              mode="foo", align_corners=False)),
                           ("bad padding", lambda: F.grid_sample(randn(T, (1, 2, 4, 5), 0), randn(T, (1, 3, 3, 2), 1),
                                                                 padding_mode="foo", align_corners=False))]:
            attempt(log, name, call)
        x, g = randn(T, (1, 2, 4, 5), 0, requires_grad=True), randn(T, (1, 3, 3, 2), 1, True, 0.8)
        out = F.grid_sample(x, g, mode="bicubic", padding_mode="reflection", align_corners=True)
        weighted_backward(T, out)
        log("bicubic reflection", [out, x.grad, g.grad])
    run_both(program)


def test_pixel_shuffle_and_fold_checks():
    # TestNN.test_pixel_shuffle_unshuffle / test_pixel_shuffle_nhwc_cpu-free parts /
    # test_fold_invalid_arg / test_unfold_invalid_arg
    def program(T, log):
        F = T.nn.functional
        x = randn(T, (2, 1, 8, 2, 3), 0, requires_grad=True)
        out = F.pixel_shuffle(x, 2)
        weighted_backward(T, out)
        log("5-D shuffle", [out, x.grad, F.pixel_unshuffle(out, 2)])
        log("int shuffle", F.pixel_shuffle(T.arange(16).reshape(1, 4, 2, 2), 2))
        for name, call in [("channels", lambda: F.pixel_shuffle(randn(T, (1, 6, 2, 2), 0), 2)),
                           ("2-D", lambda: F.pixel_shuffle(randn(T, (4, 2), 0), 2)),
                           ("zero factor", lambda: F.pixel_shuffle(randn(T, (1, 4, 2, 2), 0), 0)),
                           ("unshuffle zero factor", lambda: F.pixel_unshuffle(randn(T, (1, 1, 2, 2), 0), 0)),
                           ("unshuffle height", lambda: F.pixel_unshuffle(randn(T, (1, 1, 3, 4), 0), 2)),
                           ("fold blocks", lambda: F.fold(randn(T, (1, 12, 5), 0), (3, 4), 2)),
                           ("fold channels", lambda: F.fold(randn(T, (1, 10, 6), 0), (3, 4), 2)),
                           ("unfold 3-D", lambda: F.unfold(randn(T, (2, 3, 4), 0), 2).shape),
                           ("unfold too small", lambda: F.unfold(randn(T, (1, 2, 2, 2), 0), 3))]:
            attempt(log, name, call)
        y = randn(T, (2, 8, 9), 1, requires_grad=True)
        folded = F.fold(y, (5, 6), (2, 2), dilation=(2, 1), padding=1, stride=(2, 3))
        folded.sum().backward()
        log("fold with every option", [folded, y.grad])
        log("reprs", [repr(T.nn.PixelShuffle(3)), repr(T.nn.PixelUnshuffle(2)), repr(T.nn.Fold((4, 5), 2, stride=2)),
                      repr(T.nn.Unfold(3, padding=1))])
    run_both(program)


def test_adaptive_max_pool_return_indices():
    # TestNNDeviceType.test_AdaptiveMaxPool*_indices-style checks / test_MaxUnpool after adaptive pooling:
    # indices are flat positions of each bin's first maximum
    def program(T, log):
        F, nn = T.nn.functional, T.nn
        x4, x5 = randn(T, (2, 3, 7, 9), 0), randn(T, (1, 2, 5, 6, 7), 1)
        log("2d", nn.AdaptiveMaxPool2d((3, 4), return_indices=True)(x4))
        log("2d None", nn.AdaptiveMaxPool2d((None, 2), return_indices=True)(x4))
        log("1d", nn.AdaptiveMaxPool1d(4, return_indices=True)(x4[0]))
        log("3d", F.adaptive_max_pool3d_with_indices(x5, (2, 3, 4)))
        log("ties pick the first", F.adaptive_max_pool1d(T.tensor([[[1.0, 1.0, 2.0, 2.0, 0.0, 5.0, 5.0]]]), 3,
                                                         return_indices=True))
        v, i = F.adaptive_max_pool2d_with_indices(randn(T, (1, 1, 4, 4), 2), 2)
        log("unpool", F.max_unpool2d(v, i, 2))
    run_both(program)


# ---- CTC loss ----------------------------------------------------------------------------------
def test_ctc_loss_reductions_and_checks():
    # TestNN.test_CTCLoss_lengthchecks_cpu / test_CTCLoss_empty_target / test_CTCLoss_zero_infinity /
    # TestNNDeviceType.test_ctc_loss_unbatched-style parts
    def program(T, log):
        F = T.nn.functional
        targets, in_lens, tg_lens = T.tensor([[1, 2, 3], [4, 1, 0]]), T.tensor([6, 5]), T.tensor([3, 2])
        for red in ("none", "mean", "sum"):
            logits = randn(T, (6, 2, 5), 0, requires_grad=True)
            loss = F.ctc_loss(logits.log_softmax(2), targets, in_lens, tg_lens, reduction=red)
            loss.sum().backward()
            log(red, [loss, logits.grad])
        logits = randn(T, (6, 2, 5), 1, requires_grad=True)
        loss = F.ctc_loss(logits.log_softmax(2), T.tensor([1, 2, 3, 4, 1]), (6, 5), (3, 2))
        loss.backward()
        log("concatenated targets", [loss, logits.grad])
        short = randn(T, (3, 2, 5), 2, requires_grad=True)
        hard = T.tensor([[1, 1, 1], [2, 3, 4]])
        log("infeasible", F.ctc_loss(short.log_softmax(2), hard, T.tensor([3, 3]), T.tensor([3, 3]), reduction="none"))
        loss = F.ctc_loss(short.log_softmax(2), hard, T.tensor([3, 3]), T.tensor([3, 3]), zero_infinity=True,
                          reduction="sum")
        loss.backward()
        log("zero_infinity", [loss, short.grad])
        lp = randn(T, (6, 2, 5), 3).log_softmax(2)
        log("empty target", F.ctc_loss(lp, targets, in_lens, T.tensor([0, 2]), reduction="none"))
        log("blank=4", F.ctc_loss(lp, T.tensor([[0, 2, 3], [1, 0, 2]]), in_lens, tg_lens, blank=4))
        log("unbatched", F.ctc_loss(lp[:, 0], T.tensor([1, 2]), T.tensor(6), T.tensor(2)))
        log("int32", F.ctc_loss(lp, targets.int(), in_lens.int(), tg_lens.int()))
        for name, call in [("input length too big", lambda: F.ctc_loss(lp, targets, T.tensor([7, 5]), tg_lens)),
                           ("target length too big", lambda: F.ctc_loss(lp, targets, in_lens, T.tensor([4, 2]))),
                           ("lengths count", lambda: F.ctc_loss(lp, targets, T.tensor([6, 5, 4]), tg_lens)),
                           ("blank out of range", lambda: F.ctc_loss(lp, targets, in_lens, tg_lens, blank=5))]:
            attempt(log, name, call)
        log("repr", repr(T.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)))
    run_both(program)


# ---- MultiheadAttention / Transformer ------------------------------------------------------------
def _mha(T, **kw):
    return init_params(T, T.nn.MultiheadAttention(4, 2, **kw), 0)


def test_multihead_attention_variants():
    # TestNN.test_multihead_attn_add_bias_kv / test_multihead_attn_add_zero_attn /
    # test_multihead_attention_kdim_vdim / test_multihead_attn_3d_attn_mask /
    # test_multihead_attn_no_need_weights / test_multihead_attn_all_arguments*
    def program(T, log):
        m = _mha(T, kdim=3, vdim=5, bias=False)
        q, k, v = (randn(T, s, i, requires_grad=True) for i, s in enumerate([(3, 2, 4), (5, 2, 3), (5, 2, 5)]))
        out, w = m(q, k, v)
        (out.sum() + w.sum()).backward()
        log("kdim/vdim", [out, w, q.grad, k.grad, v.grad, [n for n, _ in m.named_parameters()]])
        m = _mha(T, add_bias_kv=True, add_zero_attn=True)
        q = randn(T, (3, 2, 4), 1, requires_grad=True)
        out, w = m(q, q, q, key_padding_mask=T.tensor([[False, False, True], [False, False, False]]))
        out.sum().backward()
        log("bias_kv + zero_attn", [out, w, q.grad])
        m = _mha(T, batch_first=True)
        qb = randn(T, (2, 3, 4), 2)
        kpm = T.tensor([[0.0, -1e9, 0.0], [0.0, 0.0, -2.0]])
        log("float key_padding_mask, per-head weights", m(qb, qb, qb, key_padding_mask=kpm, average_attn_weights=False))
        m = _mha(T)
        mask3 = T.tensor(np.random.RandomState(3).rand(4, 3, 3) > 0.7)
        log("3-D bool mask", m(q, q, q, attn_mask=mask3))
        log("no weights", m(q, q, q, need_weights=False))
        qu = randn(T, (3, 4), 4)
        log("unbatched", m(qu, qu, qu, key_padding_mask=T.tensor([False, True, False]), average_attn_weights=False))
        log("unbatched 3-D mask", m(qu, qu, qu, attn_mask=randn(T, (2, 3, 3), 5)))
        causal = T.nn.Transformer.generate_square_subsequent_mask(3)
        log("is_causal with mask", m(q, q, q, attn_mask=causal, is_causal=True))
        log("eval drops no weights", _mha(T, dropout=0.5).eval()(q, q, q))
        log("mismatched mask types warn", warned(lambda: m(q, q, q, attn_mask=T.zeros(3, 3), key_padding_mask=T.tensor(
            [[False, True, False]] * 2))[0]))
        log("state_dict keys", list(T.nn.MultiheadAttention(4, 2, kdim=3, vdim=2, add_bias_kv=True).state_dict()))
    run_both(program)


def test_multihead_attention_shape_errors():
    # TestNN.test_multihead_attn_invalid_shape / test_multihead_attn_embed_dim_not_divisible /
    # TestMultiheadAttentionNN.test_multihead_attn_fast_path_query_and_bias_have_different_dtypes-free checks
    def program(T, log):
        m, q = _mha(T), randn(T, (3, 2, 4), 0)
        qu = randn(T, (3, 4), 1)
        for name, call in [("embed not divisible", lambda: T.nn.MultiheadAttention(5, 2)),
                           ("embed dim", lambda: m(randn(T, (3, 2, 5), 0), randn(T, (3, 2, 5), 0),
                                                   randn(T, (3, 2, 5), 0))),
                           ("key/value length", lambda: m(q, randn(T, (4, 2, 4), 1), randn(T, (5, 2, 4), 2))),
                           ("separate proj key/value length", lambda: _mha(T, kdim=3, vdim=5)(
                               q, randn(T, (5, 2, 3), 1), randn(T, (4, 2, 5), 2))),
                           ("key rank", lambda: m(q, qu, qu)),
                           ("query rank", lambda: m(q[None], q[None], q[None])),
                           ("key_padding_mask rank", lambda: m(q, q, q, key_padding_mask=T.zeros(3, dtype=T.bool))),
                           ("unbatched 3-D mask shape", lambda: m(qu, qu, qu, attn_mask=T.zeros(3, 3, 3))),
                           ("2-D mask shape", lambda: m(q, q, q, attn_mask=T.zeros(2, 3))),
                           ("int mask", lambda: m(q, q, q, attn_mask=T.zeros(3, 3, dtype=T.long))),
                           ("is_causal without mask", lambda: m(q, q, q, is_causal=True))]:
            attempt(log, name, call)
    run_both(program)


def test_transformer_encoder_semantics():
    # TestNN.test_transformerencoder / test_transformerencoderlayer_gelu / test_transformer_args_check
    # (the math path: fast-path-independent results)
    def program(T, log):
        nn = T.nn
        layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, batch_first=True, norm_first=True,
                                           activation="gelu")
        enc = init_params(T, nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4), enable_nested_tensor=False), 1)
        log("encoder with padding mask", enc.eval()(randn(T, (2, 3, 4), 2), src_key_padding_mask=T.tensor(
            [[False, False, True], [False, False, False]])))
        log("layers are copies", [enc.layers[0].linear1.weight is enc.layers[1].linear1.weight, enc.layers[0] is layer])
        layer = init_params(T, nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0,
                                                          activation=T.nn.functional.silu), 3)
        x = randn(T, (3, 2, 4), 4, requires_grad=True)
        out = layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(3))
        out.sum().backward()
        log("callable activation, causal mask", [out, x.grad, layer.linear1.weight.grad])
        attempt(log, "unknown activation", lambda: nn.TransformerEncoderLayer(4, 2, activation="tanh"))
        tr = init_params(T, nn.Transformer(4, 2, 1, 1, 6, dropout=0.0), 5)
        log("transformer", tr(randn(T, (3, 2, 4), 6), randn(T, (2, 2, 4), 7), tgt_is_causal=True,
                              tgt_mask=tr.generate_square_subsequent_mask(2)))
        attempt(log, "batch mismatch", lambda: tr(randn(T, (3, 2, 4), 0), randn(T, (2, 3, 4), 1)))
        attempt(log, "feature mismatch", lambda: tr(randn(T, (3, 2, 4), 0), randn(T, (2, 2, 5), 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's nested-tensor advice when batch_first is False
        run_both(program)


# ---- gradient clipping and parameter vectors -----------------------------------------------------
def _with_grads(T):
    params = [T.nn.Parameter(randn(T, (3, 4), i)) for i in range(3)]
    for i, p in enumerate(params):
        p.grad = randn(T, (3, 4), 10 + i, scale=i + 1.0)
    return params


def test_clip_grad_norm_and_value():
    # TestNN.test_clip_grad_norm / test_clip_grad_norm_error_if_nonfinite / test_clip_grad_value /
    # test_clip_grads_with_norm_ (total norm computed first with get_total_norm)
    def program(T, log):
        U = T.nn.utils
        for kw in (dict(norm_type="inf"), dict(norm_type=3.0, foreach=True), dict(norm_type=0), dict()):
            ps = _with_grads(T)
            log(f"norm {kw}", [U.clip_grad_norm_(ps, 1.5, **kw), [p.grad for p in ps]])
        ps = _with_grads(T)
        log("generator of parameters", [U.clip_grad_norm_((p for p in ps), 1.0), [p.grad for p in ps]])
        ps = _with_grads(T)
        log("large max_norm leaves grads", [U.clip_grad_norm_(ps, 1e9), [p.grad for p in ps]])
        ps = _with_grads(T)
        log("single tensor", [U.clip_grad_norm_(ps[0], 0.5), ps[0].grad])
        log("no grads", U.clip_grad_norm_([T.nn.Parameter(T.ones(2))], 1.0))
        ps = _with_grads(T)
        ps[1].grad[0, 0] = float("nan")
        attempt(log, "nan with error_if_nonfinite", lambda: U.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True))
        ps = _with_grads(T)
        ps[1].grad[0, 0] = float("inf")
        log("inf without the check", [U.clip_grad_norm_(ps, 1.0), [p.grad for p in ps]])
        ps = _with_grads(T)
        total = U.get_total_norm([p.grad for p in ps], norm_type=1.5)
        U.clip_grads_with_norm_(ps, 1.0, total)
        log("clip_grads_with_norm_", [total, [p.grad for p in ps]])
        ps = _with_grads(T)
        ps[2].grad = None
        U.clip_grad_value_(ps, 0.7, foreach=False)
        log("clip value", [p.grad for p in ps])
    run_both(program)


def test_parameters_to_vector_roundtrip():
    # TestNN.test_parameters_to_vector / test_vector_to_parameters
    def program(T, log):
        U = T.nn.utils
        m = init_params(T, T.nn.Sequential(T.nn.Linear(3, 2), T.nn.Conv1d(2, 2, 2)), 0)
        vec = U.parameters_to_vector(m.parameters())
        U.vector_to_parameters(vec * 2, m.parameters())
        log("vector", vec), log("written back", list(m.parameters()))
        lin = init_params(T, T.nn.Linear(3, 2), 1)
        (U.parameters_to_vector(lin.parameters()) ** 2).sum().backward()
        log("differentiable", lin.weight.grad)
        attempt(log, "2-D vector", lambda: U.vector_to_parameters(T.ones(2, 4), lin.parameters()))
        attempt(log, "list vector", lambda: U.vector_to_parameters([1.0, 2.0], lin.parameters()))
    run_both(program)


# ---- nn.init ------------------------------------------------------------------------------------
def test_init_gains_errors_and_sparse():
    # TestNNInit.test_calculate_gain_* / test_kaiming_*_errors_on_inputs_smaller_than_2d /
    # test_sparse_only_works_on_2d_inputs / test_sparse_default_std / test_dirac_only_works_on_3_4_5d_inputs /
    # test_eye_only_works_on_2d_inputs / test_deprecation
    def program(T, log):
        init = T.nn.init
        log("gains", [init.calculate_gain(*a) for a in [("leaky_relu",), ("leaky_relu", 0.2), ("selu",), ("tanh",),
                                                        ("conv2d",), ("relu", 3)]])
        for name, call in [("unknown nonlinearity", lambda: init.calculate_gain("foo")),
                           ("bad param", lambda: init.calculate_gain("leaky_relu", "a")),
                           ("kaiming 1-D", lambda: init.kaiming_uniform_(T.empty(3))),
                           ("xavier 1-D", lambda: init.xavier_normal_(T.empty(3))),
                           ("bad fan mode", lambda: init.kaiming_normal_(T.empty(3, 4), mode="fan_foo")),
                           ("orthogonal 1-D", lambda: init.orthogonal_(T.empty(3))),
                           ("dirac 2-D", lambda: init.dirac_(T.empty(3, 4))),
                           ("dirac groups", lambda: init.dirac_(T.empty(5, 2, 3), groups=2)),
                           ("eye 3-D", lambda: init.eye_(T.empty(3, 4, 2))),
                           ("sparse 3-D", lambda: init.sparse_(T.empty(10, 4, 2), 0.3))]:
            attempt(log, name, call)
        log("dirac groups", init.dirac_(T.empty(6, 2, 3), groups=2))
        log("zero-element kaiming warns", warned(lambda: tuple(init.kaiming_uniform_(T.empty(0, 3)).shape)))
        sparse = init.sparse_(T.empty(10, 4), 0.3)
        log("sparse zeros per column", (sparse == 0).sum(0))
        log("sparse std", bool(sparse.std() < 0.05))
        log("deprecated aliases", [warned(lambda: init.eye(T.empty(2, 2))),
                                   warned(lambda: init.dirac(T.empty(2, 2, 1))),
                                   warned(lambda: tuple(init.sparse(T.empty(4, 2), 0.5).shape))])
        p = T.nn.Parameter(T.ones(2, 2))
        out = init.xavier_uniform_(p)
        log("in place on a leaf", [out is p, out.requires_grad, out.grad_fn is None])
    run_both(program)


# ---- weight_norm / spectral_norm ---------------------------------------------------------------
def _fix_power_iteration(T, u, v):
    with T.no_grad():
        u.copy_(T.tensor([0.5, 0.5, 0.5, 0.5]))
        v.copy_(T.tensor([1.0, 0.0, 0.0]))


def test_weight_norm_and_spectral_norm():
    # TestNN.test_weight_norm / test_weight_norm_pickle-free parts / test_spectral_norm /
    # test_spectral_norm_load_state_dict-free parts / test_new_spectral_norm (parametrizations)
    def program(T, log):
        U = T.nn.utils
        m = U.weight_norm(init_params(T, T.nn.Linear(3, 4), 0), dim=None)
        x = randn(T, (2, 3), 1, requires_grad=True)
        out = m(x)
        out.sum().backward()
        log("old weight_norm", [out, m.weight_g, m.weight_v.grad, m.weight_g.grad, sorted(n for n, _ in
                                                                                          m.named_parameters())])
        attempt(log, "weight_norm twice", lambda: U.weight_norm(m))
        attempt(log, "remove missing", lambda: U.remove_weight_norm(T.nn.Linear(3, 4)))
        conv = U.weight_norm(init_params(T, T.nn.Conv1d(2, 3, 2), 2), dim=1)
        log("dim=1 g shape", tuple(conv.weight_g.shape))
        U.remove_weight_norm(conv)
        log("removed", [conv.weight, sorted(n for n, _ in conv.named_parameters())])
        m = U.parametrizations.weight_norm(init_params(T, T.nn.Linear(3, 4), 3), dim=0)
        out = m(x)
        out.sum().backward()
        p = m.parametrizations.weight
        log("parametrized weight_norm", [out, p.original0, p.original1.grad, list(m.state_dict())])
        m = U.spectral_norm(init_params(T, T.nn.Linear(3, 4), 4), n_power_iterations=5)
        log("old spectral_norm names", [sorted(n for n, _ in m.named_parameters()),
                                        sorted(n for n, _ in m.named_buffers()), list(m.state_dict())])
        _fix_power_iteration(T, m.weight_u, m.weight_v)
        log("train step updates u, v", [m(randn(T, (2, 3), 5)), m.weight_u, m.weight_v])
        attempt(log, "spectral_norm twice", lambda: U.spectral_norm(m))
        m.eval()
        U.remove_spectral_norm(m)
        log("removed spectral", [m.weight, sorted(n for n, _ in m.named_parameters())])
        m = U.parametrizations.spectral_norm(init_params(T, T.nn.Linear(3, 4), 6))
        sn = m.parametrizations.weight[0]
        _fix_power_iteration(T, sn._u, sn._v)
        log("parametrized spectral_norm", [m.eval().weight, list(m.state_dict())])
        attempt(log, "spectral dim", lambda: U.parametrizations.spectral_norm(T.nn.Linear(3, 4), dim=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's deprecation of the hook-based weight_norm
        run_both(program)


# ---- containers ---------------------------------------------------------------------------------
def _seq(T):
    return T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU(), T.nn.Linear(3, 1), T.nn.Tanh())


def _names(mods):
    return [type(m).__name__ for m in mods]


def test_sequential_behaviours():
    # TestNN.test_Sequential_getitem / _setitem / _delitem / _add / _iadd / _mul / _rmul / _imul /
    # _append / _pop / _insert / _insert_fail_case / _extend
    def program(T, log):
        nn, s = T.nn, _seq(T)
        log("slices", [type(s[1:3]).__name__, _names(s[1:3]), _names(s[::-1]), list(s[::-1]._modules)])
        attempt(log, "index out of range", lambda: s[4])
        s[1] = nn.Sigmoid()
        del s[0]
        del s[-1]
        log("set/del", [repr(s), list(s._modules)])
        s = _seq(T)
        del s[1:3]
        log("del slice", [list(s._modules), _names(s)])
        s = _seq(T)
        s.insert(1, nn.Identity())
        s.insert(-1, nn.ELU())
        s.append(nn.ReLU6()).extend([nn.GELU()])
        log("insert/append/extend", [_names(s), list(s._modules)])
        attempt(log, "insert out of range", lambda: _seq(T).insert(10, nn.ReLU()))
        attempt(log, "insert non-module", lambda: _seq(T).insert(1, 3))
        log("pop", [type(s.pop(1)).__name__, list(s._modules)])
        log("add", list((_seq(T) + _seq(T))._modules))
        attempt(log, "add a list", lambda: _seq(T) + [1])
        s = _seq(T)
        same = s
        s += nn.Sequential(nn.ReLU())
        log("iadd in place", [s is same, len(s)])
        s = nn.Sequential(nn.ReLU(), nn.Tanh())
        twice = s * 2
        log("mul", [len(twice), list(twice._modules), twice[0] is twice[2], len(3 * s)])
        s *= 3
        log("imul", [len(s), s[0] is s[4]])
        attempt(log, "mul by 0", lambda: s * 0)
        attempt(log, "mul by float", lambda: s * 1.5)
        log("dir hides indices", ["0" in dir(s), "3" in dir(s)])
    run_both(program)


def test_module_list_and_dict_behaviours():
    # TestNN.test_ModuleList / test_ModuleDict
    def program(T, log):
        nn = T.nn
        ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        ml.append(nn.ELU())
        ml.extend([nn.GELU(), nn.SiLU()])
        ml.insert(1, nn.Identity())
        log("list", [_names(ml), list(ml._modules), type(ml[1:3]).__name__, len(ml + nn.ModuleList([nn.ReLU()]))])
        del ml[::2]
        log("del every other", [_names(ml), list(ml._modules)])
        ml[-1] = nn.ReLU6()
        log("pop", [type(ml.pop(0)).__name__, repr(ml)])
        attempt(log, "extend with a module", lambda: nn.ModuleList().extend(nn.ReLU()))
        attempt(log, "index out of range", lambda: nn.ModuleList([nn.ReLU()])[3])
        log("repr groups repeats", repr(nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])))
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        md.update([("c", nn.ELU())])
        md["d"] = nn.GELU()
        popped = md.pop("b")
        log("dict", [list(md.keys()), type(popped).__name__, "a" in md, len(md), repr(md)])
        for name, call in [("update with non-pairs", lambda: nn.ModuleDict().update([1, 2])),
                           ("update with an int", lambda: nn.ModuleDict().update(3)),
                           ("update with a triple", lambda: nn.ModuleDict().update([("a", nn.ReLU(), 3)])),
                           ("missing key", lambda: nn.ModuleDict()["x"])]:
            attempt(log, name, call)
        md.clear()
        log("cleared", len(md))
    run_both(program)


def test_parameter_list_behaviours():
    # TestNN.test_ParameterList / test_ParameterList_replication-free parts / test_ParameterList_meta-free
    def program(T, log):
        nn = T.nn
        pl = nn.ParameterList([nn.Parameter(T.ones(2)), T.ones(3)])
        pl.append(T.zeros(1))
        pl.extend([nn.Parameter(T.ones(1, 1)), "str", 3])
        log("entries", [[type(p).__name__ for p in pl], pl[1].requires_grad, repr(pl),
                        [n for n, _ in pl.named_parameters()]])
        sl = pl[1:4]
        log("slice", [type(sl).__name__, len(sl), sl[0] is pl[1]])
        pl[0] = T.zeros(4)
        log("setitem wraps", [tuple(pl[0].shape), isinstance(pl[0], nn.Parameter)])
        pl += [T.ones(3)]
        log("iadd", [len(pl), "0" in dir(pl)])
        attempt(log, "extend with a tensor", lambda: nn.ParameterList().extend(T.ones(2)))
        attempt(log, "index out of range", lambda: pl[10])
        attempt(log, "call", lambda: nn.ParameterList()())
        m = nn.Module()
        m.pl = nn.ParameterList([T.ones(2), T.zeros(1)])
        m.pd = nn.ParameterDict({"w": T.ones(1)})
        log("state_dict keys", list(m.state_dict()))
    run_both(program)


def test_parameter_dict_behaviours():
    # TestNN.test_ParameterDict / test_ParameterDict_replication-free parts
    def program(T, log):
        from collections import OrderedDict
        nn = T.nn
        pd = nn.ParameterDict({"b": T.ones(2), "a": nn.Parameter(T.zeros(1))})
        log("plain dict goes in sorted", list(pd.keys()))
        pd.update(OrderedDict([("z", T.ones(1)), ("c", T.ones(3))]))
        pd["s"] = "x"
        popped = pd.pop("a")
        log("entries", [list(pd.keys()), type(popped).__name__, pd.get("missing", 5), repr(pd),
                        [n for n, _ in pd.named_parameters()], isinstance(pd["c"], nn.Parameter)])
        pd = nn.ParameterDict()
        pd.setdefault("a", T.ones(2))
        log("setdefault keeps", pd.setdefault("a", T.zeros(2)))
        fk = pd.fromkeys(["q", "r"], T.ones(1))
        log("fromkeys", [list(fk.keys()), type(fk).__name__])
        other = nn.ParameterDict({"b": T.ones(1)})
        union = pd | other
        pd |= other
        log("or", [list(union.keys()), list(pd.keys()), pd.copy()["a"] is pd["a"], list(reversed(pd))])
        key, val = pd.popitem()
        log("popitem", [key, val, list(pd.keys())])
        del pd["a"]
        log("del", [list(pd.keys()), len(list(pd.parameters()))])
        pd = nn.ParameterDict({"a": T.ones(2), "b": T.zeros(1)})
        pd.clear()
        log("clear", [len(pd), list(pd.parameters())])
        for name, call in [("update with an int", lambda: nn.ParameterDict().update(3)),
                           ("update with a single", lambda: nn.ParameterDict().update([("a",)])),
                           ("update with a non-iterable", lambda: nn.ParameterDict().update([3])),
                           ("missing key", lambda: nn.ParameterDict()["x"]),
                           ("pop missing", lambda: nn.ParameterDict().pop("x")),
                           ("popitem empty", lambda: nn.ParameterDict().popitem()),
                           ("int key", lambda: nn.ParameterDict({1: T.ones(2)})),
                           ("call", lambda: nn.ParameterDict()(1))]:
            attempt(log, name, call)
    run_both(program)


# ---- state_dict / load_state_dict / conversions -----------------------------------------------------
def test_state_dict_extra_state_and_positional_args():
    # TestNN.test_extra_state / test_extra_state_missing_set_extra_state /
    # test_extra_state_missing_get_extra_state / test_state_dict positional-args deprecation
    def program(T, log):
        class Extra(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.v, self.lin = 3, T.nn.Linear(1, 1)

            def get_extra_state(self):
                return {"v": self.v}

            def set_extra_state(self, state):
                self.v = state["v"] * 10

        sd = Extra().state_dict()
        loaded = Extra()
        loaded.load_state_dict(sd)
        log("extra state", [sorted(sd), loaded.v])
        nested = T.nn.Sequential(T.nn.Linear(1, 1), Extra())
        log("nested keys", list(nested.state_dict()))
        attempt(log, "missing extra state", lambda: Extra().load_state_dict({"lin.weight": T.ones(1, 1),
                                                                              "lin.bias": T.ones(1)}))
        lenient = Extra()
        log("non-strict reports it", [repr(lenient.load_state_dict({}, strict=False)), lenient.v])
        attempt(log, "extra state nobody reads", lambda: T.nn.Linear(1, 1).load_state_dict(
            {"weight": T.ones(1, 1), "bias": T.ones(1), "_extra_state": 3}))
        log("positional args warn", warned(lambda: list(T.nn.Linear(1, 1).state_dict(OrderedDict(), "p."))))
    from collections import OrderedDict
    run_both(program)


def test_module_conversions():
    # TestNN.test_type / test_to / test_to_complex-free parts / test_skip_init / test_share_memory
    def program(T, log):
        nn = T.nn
        m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        w = m[0].weight
        m.double()
        log("double", [[p.dtype for p in m.parameters()], [b.dtype for b in m.buffers()], m[0].weight is w])
        m.half()
        log("half", [p.dtype for p in m.parameters()])
        m.type(T.float64)
        log("type casts int buffers too", [b.dtype for b in m.buffers()])
        m.type("torch.FloatTensor")
        log("type string", [p.dtype for p in m.parameters()])
        attempt(log, "to int", lambda: m.to(T.int64))
        lin = nn.Linear(2, 2)
        log("to complex warns", warned(lambda: [p.dtype for p in lin.to(T.complex64).parameters()])[1])
        lin = nn.Linear(2, 2)
        lin(T.ones(1, 2)).sum().backward()
        lin.double()
        log("grad converted", lin.weight.grad.dtype)
        log("share_memory returns self", lin.share_memory() is lin)
        lin.to_empty(device="cpu")
        log("to_empty keeps shapes", [tuple(lin.weight.shape), lin.weight.dtype])
        skipped = nn.utils.skip_init(nn.Linear, 5, 1)
        log("skip_init", [tuple(skipped.weight.shape), skipped.weight.requires_grad, type(skipped).__name__])

        class NoDevice(nn.Module):
            def __init__(self):
                super().__init__()
        attempt(log, "skip_init without device arg", lambda: nn.utils.skip_init(NoDevice))
        attempt(log, "skip_init of a non-module", lambda: nn.utils.skip_init(int))
    run_both(program)


def test_layer_constructor_and_call_checks():
    # TestNN.test_ConvTranspose2d_output_size / test_conv_modules_raise_error_on_incorrect_input_size /
    # test_unflatten_invalid_arg / test_hardtanh_backward-free check of test_hardtanh_inplace_gradgrad /
    # test_transformerencoderlayer_src_mask-free key_padding_mask shape check / test_to with positional non_blocking
    def program(T, log):
        nn = T.nn
        convt = init_params(T, nn.ConvTranspose2d(2, 3, 3, stride=2), 0)
        x = randn(T, (1, 2, 4, 4), 1)
        log("output_size", [tuple(convt(x, output_size=(9, 10)).shape), tuple(convt(x, output_size=[1, 3, 10, 9]).shape)])
        grouped = init_params(T, nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2, output_padding=1), 1)
        log("groups + dilation + output_padding", grouped(randn(T, (1, 4, 3, 3), 2)))
        layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0)
        for name, call in [("output_size unreachable", lambda: convt(x, output_size=(12, 12))),
                           ("output_padding >= stride", lambda: nn.ConvTranspose2d(2, 2, 3, output_padding=1)(
                               T.ones(1, 2, 3, 3))),
                           ("unflatten float size", lambda: nn.Unflatten(1, [2.0, 2])),
                           ("unflatten int size", lambda: nn.Unflatten(1, 4)),
                           ("unflatten wrong product", lambda: nn.Unflatten(1, (2, 2))(T.ones(2, 3))),
                           ("hardtanh bounds", lambda: nn.Hardtanh(2.0, 1.0)),
                           ("key_padding_mask (S, N)", lambda: layer(T.ones(3, 2, 4), src_key_padding_mask=T.ones(
                               3, 2).bool())),
                           ("to(dtype, non_blocking)", lambda: nn.Linear(2, 2).to(T.float64, True).weight.dtype),
                           ("to(device, -1)", lambda: nn.Linear(2, 2).to(T.device("cpu"), -1))]:
            attempt(log, name, call)
    run_both(program)


def test_fuse_conv_and_linear_with_batch_norm():
    # TestFusionEval.test_fuse_module_eval_numerics / TestNN.test_fuse_conv_bn-style checks
    def program(T, log):
        nn, U = T.nn, T.nn.utils

        def bn(cls, n, affine=True):
            b = init_params(T, cls(n, affine=affine), 9)
            with T.no_grad():
                b.running_mean.copy_(randn(T, (n,), 7))
                b.running_var.copy_(randn(T, (n,), 8).abs() + 0.5)
            return b.eval()
        x = randn(T, (1, 2, 4, 4), 0)
        for name, conv, b, kw in [
                ("conv", nn.Conv2d(2, 3, 2), bn(nn.BatchNorm2d, 3), {}),
                ("conv without biases", nn.Conv2d(2, 3, 2, bias=False), bn(nn.BatchNorm2d, 3, affine=False), {}),
                ("transposed", nn.ConvTranspose2d(2, 3, 2), bn(nn.BatchNorm2d, 3), dict(transpose=True))]:
            conv = init_params(T, conv, 1).eval()
            fused = U.fuse_conv_bn_eval(conv, b, **kw)
            log(name, [fused(x), b(conv(x)), fused.weight.requires_grad, fused.bias, fused is conv])
        lin = init_params(T, nn.Linear(2, 3), 2).eval()
        b = bn(nn.BatchNorm1d, 3)
        fused = U.fusion.fuse_linear_bn_eval(lin, b)
        y = randn(T, (4, 2), 3)
        log("linear", [fused(y), b(lin(y))])
        attempt(log, "training mode", lambda: U.fuse_conv_bn_eval(nn.Conv2d(2, 3, 2), nn.BatchNorm2d(3)))
        attempt(log, "feature mismatch", lambda: U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(2).eval()))
        w = randn(T, (3, 2, 2, 2), 4, requires_grad=True)
        fw, fb = U.fuse_conv_bn_weights(w, None, randn(T, (3,), 5), randn(T, (3,), 6).abs(), 1e-5, None, None)
        log("weights", [fw, fb, fw.requires_grad, fw.is_leaf, fb.requires_grad])
    run_both(program)


def test_module_utils_and_consume_prefix():
    # TestUtils.test_consume_prefix_in_state_dict_if_present / TestConstantPadNd.test_constant_pad_nd /
    # the int-or-tuple helpers of torch.nn.modules.utils
    def program(T, log):
        import importlib
        from collections import OrderedDict
        U = importlib.import_module(T.__name__ + ".nn.modules.utils")
        sd = OrderedDict([("module.a", T.ones(1)), ("module.b.c", T.ones(2)), ("x", T.zeros(1))])
        sd._metadata = OrderedDict([("", {}), ("module", {}), ("module.b", {})])
        U.consume_prefix_in_state_dict_if_present(sd, "module.")
        log("keys", list(sd)), log("metadata keys", list(sd._metadata))
        log("tuples", [U._pair(3), U._triple((1, 2, 3)), U._single([4]), U._ntuple(4)(2),
                       U._reverse_repeat_tuple((1, 2), 2), U._list_with_default([None, 3], (5, 6, 7, 8))])
        attempt(log, "list_with_default too short", lambda: U._list_with_default([None, 3], (5, 6)))
        x = randn(T, (1, 2, 3), 0, requires_grad=True)
        out = T.constant_pad_nd(x, (1, -1, 2, 0), 2.5)
        weighted_backward(T, out)
        log("constant_pad_nd crop + pad", [out, x.grad, type(out.grad_fn).__name__])
        log("int value", T.constant_pad_nd(T.arange(6).reshape(2, 3), (-1, 1), 7))
        attempt(log, "crop past the size", lambda: T.constant_pad_nd(T.ones(2, 3), (-2, -2)))
        p = T.nn.Parameter(T.ones(2))
        p.grad = T.ones(2)
        log("deprecated clip_grad_norm", warned(lambda: T.nn.utils.clip_grad_norm(p, 1.0)))
    run_both(program)


def test_stateless_functional_call_is_deprecated():
    # TestStatelessFunctionalAPI.test_functional_call_deprecation-style check (torch.nn.utils.stateless)
    def program(T, log):
        m = init_params(T, T.nn.Linear(2, 1), 0)
        out, warns = warned(lambda: T.nn.utils.stateless.functional_call(m, {"weight": T.ones(1, 2)},
                                                                           (randn(T, (3, 2), 1),)))
        log("out", out), log("warnings", warns), log("module untouched", m.weight)
    run_both(program)
