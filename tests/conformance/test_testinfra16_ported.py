"""Ported from PyTorch's test/test_nn.py, class TestNN, second half (test_affine_grid_3d to the end
of the class): the cases that found tracegrad bugs, as small parity checks against torch 2.13.

- layouts: torch.sparse_csr/sparse_csc/sparse_bsr/sparse_bsc exist (test_linear_autograd's
  parametrization names them; the module failed to import without them)
- channel_shuffle's dim-check message (test_channel_shuffle_input_checks)
- fold/unfold: a non-positive sliding-block grid reports torch's message with the grid
  (test_fold_invalid_arg, test_unfold_invalid_arg)
- interpolate: a non-integer size is torch's TypeError message, after the length check
  (test_interpolate)
- upsample of bfloat16/float16 accumulates in float32 and rounds once, forward and backward
  (test_upsampling_bfloat16)
"""
import re

import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _raises(lib, fn):
    try:
        fn(lib)
    except Exception as e:   # noqa: BLE001 - the class is compared
        return type(e).__name__, str(e)
    return None, None


def _same_error(fn, words):
    t_cls, t_msg = _raises(torch, fn)
    g_cls, g_msg = _raises(tracegrad, fn)
    assert t_cls is not None and g_cls == t_cls, (g_cls, g_msg, t_cls, t_msg)
    assert re.search(words, t_msg) and re.search(words, g_msg), (g_msg, t_msg)
    return g_msg, t_msg


def test_sparse_compressed_layout_names():
    # test_linear_autograd (its parametrize names torch.sparse_csr, sparse_csc)
    for name in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        lay = getattr(tracegrad, name)
        assert isinstance(lay, tracegrad.layout)
        assert repr(lay).split(".")[-1] == repr(getattr(torch, name)).split(".")[-1]
        assert lay != tracegrad.strided and lay != tracegrad.sparse_coo
    assert tracegrad.randn(2).layout != tracegrad.sparse_csr


def test_channel_shuffle_dims_message():
    # test_channel_shuffle_input_checks
    g, t = _same_error(lambda lib: lib.native_channel_shuffle(lib.rand([1, 2]), 2),
                       r"channel_shuffle expects input with > 2 dims,")
    assert g == t
    g, t = _same_error(lambda lib: lib.nn.ChannelShuffle(2)(lib.rand([1, 2])), r"> 2 dims")
    assert g == t


@pytest.mark.parametrize("kw, shape", [
    (dict(kernel_size=(2, 3)), (1, 2, 2, 2)),
    (dict(kernel_size=(5, 3), padding=(1, 1)), (1, 2, 2, 3)),
    (dict(kernel_size=(1, 3), padding=(1, 1), dilation=(1, 2)), (2, 2, 2)),
])
def test_unfold_nonpositive_blocks_message(kw, shape):
    # test_unfold_invalid_arg
    g, t = _same_error(lambda lib: lib.nn.Unfold(**kw)(lib.randn(*shape)), r"its components must be at least one")
    assert g == t


@pytest.mark.parametrize("kw, shape", [
    (dict(output_size=(4, 5), kernel_size=(2, 2), stride=1, dilation=8, padding=0), (1, 12, 12)),
    (dict(output_size=(4, 5), kernel_size=(2, 2), stride=1, dilation=8, padding=0), (12, 12)),
    (dict(output_size=(4, 5), kernel_size=(2, 2), stride=3, dilation=8, padding=0), (4, 1)),
])
def test_fold_nonpositive_blocks_message(kw, shape):
    # test_fold_invalid_arg (the last case: the two negative block counts multiply to input.size(2));
    # stride 3 checks torch's flooring block count ((4 - 9) // 3 + 1 = -1)
    g, t = _same_error(lambda lib: lib.nn.Fold(**kw)(lib.randn(*shape)),
                       r"calculated shape of the array of sliding blocks as")
    assert g == t


def test_fold_block_count_checked_before_grid():
    # test_fold_invalid_arg: the block count is checked first (stride 3 gives -1 * -1 = 1 block)
    g, t = _same_error(lambda lib: lib.nn.Fold(output_size=(4, 5), kernel_size=(2, 2), stride=3, dilation=8)(
        lib.randn(12, 12)), r"match the calculated number of sliding blocks -1 \* -1 = 1")
    assert g == t


def test_fold_block_count_still_checked():
    # test_fold_invalid_arg (a positive grid whose count does not match input.size(2))
    _same_error(lambda lib: lib.nn.Fold(output_size=(4, 5), kernel_size=(2, 3), stride=(2, 2), dilation=(1, 2),
                                        padding=(2, 0))(lib.randn(1, 6, 5)),
                r"match the calculated number of sliding blocks")


@pytest.mark.parametrize("size", [(1.0,), "tensor", (1.0, 1.0)])
def test_interpolate_non_integer_size(size):
    # test_interpolate (_test_interpolate_non_integer_size_warning); a wrong-length tuple is
    # torch's ValueError even with a float in it
    def fn(lib):
        s = (lib.tensor(1.0),) if size == "tensor" else size
        return lib.nn.functional.interpolate(lib.ones(1, 1, 2), size=s, mode="nearest")
    words = r"Input and output must have the same number" if len(size) == 2 and size != "tensor" \
        else r"expected size to be one of int or"
    _same_error(fn, words)


@pytest.mark.parametrize("mode, shape", [("nearest", (1, 4, 3, 3)), ("bilinear", (1, 4, 3, 3)),
                                         ("linear", (2, 3, 5))])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_upsample_16bit_accumulates_in_float32(mode, shape, dtype):
    # test_upsampling_bfloat16: the gradient of a 16-bit upsample sums in float32 and rounds once
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    out_shape = shape[:2] + tuple(2 * s for s in shape[2:])
    g = rng.standard_normal(out_shape).astype(np.float32)
    res = {}
    for lib in (torch, tracegrad):
        dt = getattr(lib, dtype)
        xi = lib.tensor(x).to(dt).requires_grad_(True)
        out = lib.nn.functional.interpolate(xi, scale_factor=2, mode=mode)
        out.backward(lib.tensor(g).to(dt))
        res[lib.__name__] = (out.detach().float().numpy(), xi.grad.float().numpy(), str(out.dtype).split(".")[-1])
    (to, tg, tdt), (go, gg, gdt) = res["torch"], res["tracegrad"]
    assert gdt == tdt
    np.testing.assert_array_equal(go, to)
    np.testing.assert_array_equal(gg, tg)
