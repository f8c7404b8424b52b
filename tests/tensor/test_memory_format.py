"""Memory formats and strides against torch (NOTE [storage layouts] in _tensor/memory_format.py):
channels_last / channels_last_3d / preserve_format layouts, what each factory, conversion and op
gives, what stays unchanged (values, gradients, autograd facts), and torch's errors."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tracegrad
from parity import outcome_params, run_both, same_outcome

torch = pytest.importorskip("torch")


def _x(T, *shape):
    """Deterministic distinct values (both libraries build the same tensor)."""
    n = int(np.prod(shape))
    return (T.arange(n, dtype=T.float32) - n / 3).reshape(*shape) / 7


def _obs(t, T):
    """What a program can read of a tensor's layout, and its values."""
    return (t.stride(), t.is_contiguous(), t.is_contiguous(memory_format=T.channels_last)
            if t.ndim == 4 else t.is_contiguous(memory_format=T.channels_last_3d), t)


def _cl(T):
    return _x(T, 2, 3, 4, 5).to(memory_format=T.channels_last)


def _views_in_place(T):
    a = _cl(T).requires_grad_()
    b = a * 2
    b[:, 0] += 1
    b[:, 1].mul_(3)
    (b * _x(T, 2, 3, 4, 5)).sum().backward()
    c = _cl(T)
    c[:, :, 1].fill_(7.)
    c[0] = 1
    return b.stride(), b, a.grad.stride(), a.grad, c.stride(), c


CASES = {
    # the formats themselves
    "to_channels_last": lambda T: _obs(_cl(T), T),
    "contiguous_channels_last": lambda T: _obs(_x(T, 2, 3, 4, 5).contiguous(memory_format=T.channels_last), T),
    "contiguous_channels_last_3d": lambda T: _obs(_x(T, 2, 3, 2, 3, 4).contiguous(memory_format=T.channels_last_3d), T),
    "clone_channels_last": lambda T: _obs(_x(T, 2, 3, 4, 5).clone(memory_format=T.channels_last), T),
    "ambiguous_size1_dims": lambda T: [_obs(_x(T, *s).to(memory_format=T.channels_last), T)
                                       for s in ((1, 3, 1, 1), (2, 1, 4, 5), (2, 3, 1, 1))],
    "empty_channels_last": lambda T: T.empty(2, 3, 4, 5, memory_format=T.channels_last).stride(),
    "empty_strided_dense": lambda T: _obs(T.empty_strided((2, 3, 4, 5), (60, 1, 15, 3)), T)[:3],
    "already_in_format_is_self": lambda T: [
        _cl(T).contiguous(memory_format=T.channels_last).stride(),
        (lambda c: [c.contiguous(memory_format=T.channels_last) is c, c.to(memory_format=T.channels_last) is c,
                    c.contiguous() is c, c.to(memory_format=T.preserve_format) is c])(_cl(T))],
    "back_to_contiguous": lambda T: _obs(_cl(T).contiguous(), T),
    "contiguous_preserve_of_contiguous": lambda T: _x(T, 2, 3).contiguous(memory_format=T.preserve_format).stride(),
    "is_contiguous_other_ranks": lambda T: [_x(T, 2, 3).is_contiguous(memory_format=T.channels_last),
                                            _cl(T).is_contiguous(memory_format=T.channels_last_3d),
                                            _cl(T).is_contiguous(memory_format=T.preserve_format)],
    # preserve_format (the default) of *_like, clone and to
    "clone_permuted": lambda T: _obs(_x(T, 2, 3, 4, 5).permute(0, 2, 3, 1).clone(), T),
    "clone_permuted_size1": lambda T: _x(T, 1, 2, 3, 4).permute(0, 2, 3, 1).clone().stride(),
    "clone_sliced_permuted": lambda T: _x(T, 2, 3, 4, 5).permute(0, 3, 1, 2)[:, ::2].clone().stride(),
    "clone_sliced_is_contiguous": lambda T: _x(T, 2, 3, 4, 5)[:, :, ::2].clone().stride(),
    "clone_expanded": lambda T: _x(T, 1, 3, 4, 5).expand(2, 3, 4, 5).clone().stride(),
    "clone_channels_last_preserved": lambda T: _obs(_cl(T).clone(), T),
    "clone_to_contiguous": lambda T: _obs(_cl(T).clone(memory_format=T.contiguous_format), T),
    "likes_preserve": lambda T: [f(_x(T, 2, 3, 4, 5).permute(0, 2, 3, 1)).stride() for f in (
        T.empty_like, T.zeros_like, T.ones_like, T.rand_like, T.randn_like,
        lambda t: T.full_like(t, 2.), lambda t: T.randint_like(t, 5))],
    "likes_of_channels_last": lambda T: [f(_cl(T)).stride() for f in (
        T.empty_like, T.zeros_like, T.ones_like, lambda t: T.full_like(t, 2.))],
    "likes_formats": lambda T: [
        T.zeros_like(_x(T, 2, 3, 4, 5), memory_format=T.channels_last).stride(),
        T.randn_like(_cl(T), memory_format=T.contiguous_format).stride(),
        T.randint_like(_x(T, 2, 3, 4, 5), 5, memory_format=T.channels_last).stride(),
        T.ones_like(_x(T, 2, 3, 2, 3, 4), memory_format=T.channels_last_3d).stride()],
    "likes_values": lambda T: [T.ones_like(_cl(T)), T.full_like(_cl(T), 3.), T.zeros_like(_cl(T))],
    "to_dtype_preserves": lambda T: [_cl(T).double().stride(), _cl(T).to(T.float64),
                                     _x(T, 2, 3, 4, 5).to(T.float64, memory_format=T.channels_last).stride(),
                                     _x(T, 2, 3).t().to(T.float64).stride()],
    "casts_take_memory_format": lambda T: [
        _x(T, 2, 3, 4, 5).float(memory_format=T.channels_last).stride(),
        _x(T, 2, 3, 4, 5).double(memory_format=T.channels_last).stride(),
        _x(T, 2, 3, 4, 5).cpu(memory_format=T.channels_last).stride(),
        _cl(T).half(memory_format=T.contiguous_format).stride(),
        T.testing.make_tensor(2, 3, 4, 5, dtype=T.float32, device="cpu", memory_format=T.channels_last).stride()],
    # ops' outputs (TensorIterator and the channels-last kernels)
    "unary": lambda T: [_obs(f(_cl(T)), T) for f in (T.exp, T.relu, T.sigmoid, T.tanh, T.neg, T.abs)],
    "binary_same_layout": lambda T: _obs(_cl(T) * _cl(T), T),
    "binary_first_decides": lambda T: [(_cl(T) + _x(T, 2, 3, 4, 5)).stride(), (_x(T, 2, 3, 4, 5) + _cl(T)).stride()],
    "binary_broadcast": lambda T: [(_cl(T) + _x(T, 3, 1, 1)).stride(), (_x(T, 3, 1, 1) + _cl(T)).stride(),
                                   (_cl(T) + _x(T, 5)).stride(), (_cl(T) + 1).stride()],
    "scalar_operand_ambiguous": lambda T: (_x(T, 2, 1, 4, 5).to(memory_format=T.channels_last) + 1).stride(),
    "comparison_where_clamp": lambda T: [(_cl(T) > 0).stride(), T.where(_cl(T) > 0, _cl(T), 0.).stride(),
                                         _cl(T).clamp(-1, 1).stride()],
    "sliced_input": lambda T: [(_cl(T)[:, :2] + 1).stride(), _cl(T)[:, :2].stride(), _cl(T)[0].stride()],
    "activations": lambda T: [_obs(f(_cl(T)), T) for f in (
        T.nn.functional.gelu, T.nn.functional.silu, T.nn.functional.leaky_relu, T.nn.functional.elu)],
    "conv2d_input_cl": lambda T: _obs(T.nn.functional.conv2d(_cl(T), _x(T, 4, 3, 3, 3)), T),
    "conv2d_weight_cl": lambda T: _obs(T.nn.functional.conv2d(
        _x(T, 2, 3, 4, 5), _x(T, 4, 3, 3, 3).to(memory_format=T.channels_last)), T),
    # (test/nn/test_convolution.py) a plain view whose strides suggest channels_last -- an NHWC
    # image's permute(0, 3, 1, 2) -- gives a channels_last output as well; 1-d stays row-major
    "conv2d_nhwc_permuted_view": lambda T: [_obs(f(_x(T, 2, 4, 5, 3).permute(0, 3, 1, 2)), T) for f in (
        lambda x: T.nn.functional.conv2d(x, _x(T, 4, 3, 3, 3)),
        lambda x: T.nn.functional.conv_transpose2d(x, _x(T, 3, 2, 3, 3)),
        lambda x: T.nn.functional.conv2d(x.contiguous(), _x(T, 4, 3, 3, 3).permute(0, 2, 3, 1).contiguous()
                                         .permute(0, 3, 1, 2)))] + [
        T.nn.functional.conv1d(_x(T, 2, 5, 3).transpose(1, 2), _x(T, 4, 3, 2)).stride()],
    "max_pool2d": lambda T: _obs(T.nn.functional.max_pool2d(_cl(T), 2), T),
    # (test/nn/test_pooling.py run unchanged) max_unpool2d's output follows its input's layout,
    # max_unpool3d's is always contiguous
    "max_unpool2d": lambda T: _obs(T.nn.functional.max_unpool2d(*T.nn.functional.max_pool2d(
        _x(T, 2, 3, 4, 4).to(memory_format=T.channels_last), 2, return_indices=True), 2), T),
    "max_unpool2d_cl_values_only": lambda T: _obs(T.nn.functional.max_unpool2d(
        T.nn.functional.max_pool2d(_x(T, 2, 3, 4, 4), 2).contiguous(memory_format=T.channels_last),
        T.nn.functional.max_pool2d(_x(T, 2, 3, 4, 4), 2, return_indices=True)[1], 2), T),
    "max_unpool3d": lambda T: _obs(T.nn.functional.max_unpool3d(*T.nn.functional.max_pool3d(
        _x(T, 2, 3, 2, 4, 4).contiguous(memory_format=T.channels_last_3d), 2, return_indices=True), 2), T),
    "batch_norm": lambda T: _obs(T.nn.functional.batch_norm(_cl(T), T.zeros(3), T.ones(3)), T),
    # (test/test_nn.py run unchanged) batch norm's CPU kernel keeps a view's channels-last format,
    # even the ambiguous (1, C, H, 1) one suggest_memory_format calls contiguous; pixel
    # (un)shuffle follow suggest_memory_format, views included
    "batch_norm_of_views": lambda T: [[_obs(T.batch_norm(v, None, None, T.zeros(v.shape[1]), T.ones(v.shape[1]),
                                                         training, 0.1, 1e-5, False), T)
                                       for training in (False, True)] for v in (
        _x(T, 1, 3, 2, 1).permute(0, 2, 1, 3), _x(T, 2, 4, 3, 5).permute(0, 3, 1, 2),
        _x(T, 2, 4, 5, 3).permute(0, 3, 1, 2)[:, :, :, :4], _x(T, 2, 5, 3, 4).permute(0, 2, 1, 3),
        _x(T, 2, 3, 4, 5).permute(0, 1, 3, 2), _x(T, 2, 3, 4, 2, 3).permute(0, 4, 1, 2, 3),
        _x(T, 4, 5, 3).transpose(1, 2))],
    "pixel_shuffle_unshuffle": lambda T: [_obs(f(x), T) for f in (
        lambda x: T.nn.functional.pixel_shuffle(x, 2), lambda x: T.nn.functional.pixel_unshuffle(x, 2)) for x in (
        _x(T, 2, 8, 4, 6).to(memory_format=T.channels_last), _x(T, 2, 4, 6, 8).permute(0, 3, 1, 2),
        _x(T, 2, 8, 4, 6).permute(0, 1, 3, 2))],
    "group_norm_pool_upsample": lambda T: [_obs(f(_cl(T)), T) for f in (
        lambda x: T.nn.functional.group_norm(x, 1), lambda x: T.nn.functional.avg_pool2d(x, 2),
        lambda x: T.nn.functional.adaptive_avg_pool2d(x, 2), lambda x: T.nn.functional.interpolate(x, scale_factor=2),
        lambda x: T.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"))],
    "dropout_follows": lambda T: T.nn.functional.dropout(_cl(T), 0.5).stride(),
    "layer_norm_row_major": lambda T: T.nn.functional.layer_norm(_cl(T), (5,)).stride(),
    "cat": lambda T: [T.cat([_cl(T), _cl(T)]).stride(), T.cat([_cl(T), _x(T, 2, 3, 4, 5)]).stride()],
    "reduction_and_matmul": lambda T: [_cl(T).sum(), _cl(T).sum(1), (_cl(T) @ _x(T, 5, 2))],
    # views of a laid-out tensor: view errors where the strides do not allow it, reshape copies
    "view_error": lambda T: _cl(T).view(-1),
    "reshape_copies": lambda T: [_cl(T).reshape(-1), _cl(T).flatten(1).stride(), _cl(T).reshape(-1).stride()],
    "view_of_nhwc_permute": lambda T: [_cl(T).permute(0, 2, 3, 1).is_contiguous(),
                                       _cl(T).permute(0, 2, 3, 1).view(-1)],
    "as_strided_reads_physical_order": lambda T: _cl(T).as_strided((2, 3), (1, 2)),
    "in_place_keeps_layout": lambda T: (lambda c: (c.add_(1).stride(), c.mul_(2), c.stride()))(_cl(T)),
    "storage_facts": lambda T: (lambda c: [c.storage_offset(), c.data_ptr() == c.untyped_storage().data_ptr(),
                                           c._base is None, c._is_view(), c.is_leaf, c.dim_order()])(_cl(T)),
    "detach_and_data": lambda T: [_cl(T).detach().stride(), _cl(T).data.stride()],
    "size1_strides_of_permute_views": lambda T: [_x(T, 1, 3).t().stride(), _x(T, 1, 2, 3, 4).transpose(0, 3).stride(),
                                                 _x(T, 1, 2, 3, 4).permute(0, 2, 3, 1).stride()],
    "suggest_memory_format": lambda T: [str(T._prims_common.suggest_memory_format(t)).split(".")[-1] for t in (
        _cl(T), _x(T, 2, 3, 4, 5), _x(T, 1, 3, 1, 1).to(memory_format=T.channels_last), _x(T, 2, 3, 4, 5)[:, :, ::2],
        _x(T, 2, 3, 2, 3, 4).to(memory_format=T.channels_last_3d), _x(T, 2, 3).t(),
        _x(T, 2, 3, 4, 5).permute(0, 2, 3, 1).permute(0, 3, 1, 2))],
    "size1_strides_of_slices": lambda T: [v.stride() for v in (
        _x(T, 2, 3, 4, 5)[:, 1:2], _x(T, 2, 3, 4, 5)[0:1, ::2], _x(T, 2, 3, 4, 5)[:, :, ::4],
        _x(T, 2, 3, 4, 5).narrow(3, 2, 1), _x(T, 2, 3, 4, 5).chunk(2, 0)[1], _cl(T).split(2, 1)[1],
        _cl(T).chunk(2, 0)[0], _cl(T).unbind(1)[0], _cl(T).narrow(2, 1, 2))],
    "in_place_through_views_and_autograd": lambda T: _views_in_place(T),
    # errors
    "channels_last_rank_3": lambda T: T.zeros(2, 3, 4).contiguous(memory_format=T.channels_last),
    "channels_last_3d_rank_4": lambda T: T.zeros(2, 3, 4, 5).clone(memory_format=T.channels_last_3d),
    "empty_channels_last_rank_2": lambda T: T.empty(2, 3, memory_format=T.channels_last),
    "empty_preserve": lambda T: T.empty(2, 3, 4, 5, memory_format=T.preserve_format),
    "contiguous_preserve_of_channels_last": lambda T: _cl(T).contiguous(memory_format=T.preserve_format),
    "like_wrong_rank": lambda T: T.empty_like(_cl(T), memory_format=T.channels_last_3d),
    "memory_format_not_a_format": lambda T: _cl(T).is_contiguous(memory_format="channels_last"),
}


@pytest.mark.parametrize("fn", outcome_params(CASES))
def test_layout_matches_torch(fn):
    same_outcome(fn)


def test_gradients_and_grad_layout():
    """Values and gradients through channels_last tensors equal the row-major ones, and a
    channels_last leaf's .grad takes its strides (torch's AccumulateGrad)."""
    def program(T, log):
        w = _x(T, 4, 3, 3, 3).to(memory_format=T.channels_last).requires_grad_()
        x = _x(T, 2, 3, 5, 5).to(memory_format=T.channels_last).requires_grad_()
        y = T.nn.functional.conv2d(x, w).relu()
        log("out", y)
        log("out strides", y.stride())
        (y * y).sum().backward()
        log("w.grad", w.grad)
        log("grad strides", [w.grad.stride(), x.grad.stride()])
        w.grad = None
        (w * 2).sum().backward()
        log("second grad strides", w.grad.stride())
        t = _x(T, 3, 4).t().detach().requires_grad_()
        t.exp().sum().backward()
        log("transposed leaf grad strides", t.grad.stride())
        log("grad_fn names", [type(x.clone(memory_format=T.contiguous_format).grad_fn).__name__,
                              type(x.detach().requires_grad_().to(memory_format=T.contiguous_format).grad_fn).__name__])
    run_both(program)


def test_module_to_channels_last():
    def program(T, log):
        m = T.nn.Conv2d(3, 4, 3)
        with T.no_grad():
            m.weight.copy_(_x(T, 4, 3, 3, 3))
            m.bias.copy_(_x(T, 4))
        weight = m.weight
        m.to(memory_format=T.channels_last)
        log("same parameter", m.weight is weight)
        log("strides", [m.weight.stride(), m.bias.stride(), m.weight.is_leaf, type(m.weight).__name__])
        out = m(_x(T, 2, 3, 5, 5).to(memory_format=T.channels_last))
        log("out", out)
        out.sum().backward()
        log("weight grad strides", m.weight.grad.stride())
        log("weight grad", m.weight.grad)
    run_both(program)


def test_numpy_tolist_print_and_copies_unaffected():
    x = _x(tracegrad, 2, 3, 2, 2)
    cl = x.to(memory_format=tracegrad.channels_last)
    assert np.array_equal(cl.numpy(), x.numpy()) and cl.tolist() == x.tolist()
    assert repr(cl) == repr(x)
    for c in (pickle.loads(pickle.dumps(cl)), copy.deepcopy(cl)):
        assert c.stride() == cl.stride() and c.tolist() == x.tolist()
    assert (copy.deepcopy(cl) + 1).stride() == cl.stride()   # the copy is still laid out


def test_compiled_function_takes_channels_last_arguments():
    x = _x(tracegrad, 2, 3, 4, 5)
    cl = x.to(memory_format=tracegrad.channels_last)
    f = tracegrad.compile(lambda a: (a.exp() * 2).sum(1))
    want = (x.exp() * 2).sum(1)
    for _ in range(3):
        assert np.allclose(f(cl).numpy(), want.numpy(), rtol=1e-6)
    assert np.allclose(f(x).numpy(), want.numpy(), rtol=1e-6)
