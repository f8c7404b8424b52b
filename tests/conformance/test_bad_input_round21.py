"""Bad-input parity, round 21 (reductions and scans, linalg, F.interpolate, F.pad, conv, nn.Module
API, DataLoader, save, custom autograd.Function, compile): a probe over ~850 wrong calls across those
areas left these differences from torch 2.13, fixed here:

- ``torch.norm``/``Tensor.norm`` took any ``dtype=``: an integer or bool one gave an integer norm,
  and a narrowing (float64 -> float32) or real/complex-switching one was cast (torch: RuntimeError,
  vector_norm's dtype checks, now shared with ``linalg.vector_norm``/``matrix_norm``); a str
  ``dim`` was int()'s ValueError (TypeError) and ``p='fro'`` over 3 dims was taken (torch:
  matrix_norm's RuntimeError); ``linalg.matrix_norm(ord=None)`` was RuntimeError (TypeError);
- ``F.interpolate`` resampled a tensor with an empty channel dim (torch's upsample kernels:
  RuntimeError "Non-empty 4D data tensor expected"; area mode, an adaptive pool, takes it), raised
  Python's ValueError/OverflowError for a nan/inf ``scale_factor`` (torch's kernel: RuntimeError;
  with ``recompute_scale_factor=True`` torch floors in Python and raises those: kept), int()'s
  ValueError for a Tensor ``size`` of several elements (torch's parser: TypeError) and took a size
  past int64 (TypeError); area mode floors a scale in Python as torch does (ValueError for nan);
- ``F.pad`` with a ``mode`` that is not a str (None, 3) raised NotImplementedError (bytes, which
  torch's parser reads as a str, too), and a list input AttributeError (torch's parser: TypeError);
  a circular pad whose crop empties the dim failed on an empty float index (torch: an empty result);
- the convolutions did not check ``groups`` against the weight: ``groups=0`` said "expected input
  to have 0 channels", a weight dim 0 not divisible by ``groups`` leaked the op's generic failure
  and an empty weight (``(0, C, k, k)``) gave an empty output; the transposed ones took a negative
  ``output_padding`` and a weight with an empty dim 1 (torch: RuntimeError for each);
- ``ConvTranspose{1,2,3}d.forward(output_size=)`` of the wrong length took its last elements
  (torch: ValueError; the spatial sizes alone, or with the batch and channel sizes in front);
- a custom ``autograd.Function`` whose backward returned a complex gradient for a real input had it
  cast to real, dropping the imaginary part (torch: RuntimeError); under ``func.vmap`` a user's
  Function with ``forward(ctx, ...)``, or with no vmap rule (neither a ``vmap`` staticmethod nor
  ``generate_vmap_rule=True``), ran (torch: RuntimeError; round 17's strict xfail of it now passes);
- ``compile(mode='foo')`` with no model (the decorator form) raised at once; torch checks the
  arguments when the decorator gets its model.

Found and left alone: ``nn.ModuleList.insert`` of a non-Module is TypeError (torch stores it
unchecked); a circular pad whose crop leaves exactly nothing of a dim but pads it (``(-3, 1)`` on 3)
is ZeroDivisionError (torch's result there is uninitialised memory); ``logsumexp(x, dim=())``
reduces over every dim (torch 2.13 raises a RuntimeError from its out= shape check: a torch quirk,
not a documented refusal); ``torch.load`` of a text file is torch's incidental KeyError from the
unpickler (tracegrad: UnpicklingError); ``compile(backend=3)`` is InvalidBackend at once (torch:
BackendCompilerFailed at the first call; both RuntimeErrors); errors inside a compiled function keep
their eager class (torch wraps them in TorchRuntimeError); the LinAlgError cases (singular
inverse/solve, non-PD cholesky) match by name and are covered in round 15. Each call runs under
torch (the oracle) and tracegrad: the same exception class (or none), no text of the layers below
tracegrad; ``_ok`` calls are ones torch accepts.
"""
import importlib
import math
import os

import numpy as np
import pytest

import tracegrad

from _bad_input_helpers import doubled_function, table_tests

torch = pytest.importorskip("torch")


def _x(T):
    return T.arange(6.).reshape(2, 3)


def _img(T, c=2):
    return T.ones(1, c, 4, 4)


def _F(T):
    return T.nn.functional


def _data(T):
    return importlib.import_module(T.__name__ + ".utils.data")


def _doubling(T, grad):
    """A Function doubling its input, ``forward(ctx, x)`` style (no functorch support), whose
    backward returns ``grad(T, g)``."""
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return grad(T, g)
    return Fn


def _fn_backward(T, grad):
    """``Fn.apply(x).sum().backward()`` for a ``_doubling`` Function; the input's gradient."""
    x = T.ones(2, requires_grad=True)
    _doubling(T, grad).apply(x).sum().backward()
    return x.grad


def _linear_state(T, **entries):
    return T.nn.Linear(2, 2).load_state_dict({"weight": T.ones(2, 2), "bias": T.ones(2), **entries})


CASES = {
    # reductions and scans
    "sum(dim=(0, 0))": lambda T: _x(T).sum((0, 0)),
    "logsumexp(dim=2)": lambda T: _x(T).logsumexp(2),
    "amax(empty)": lambda T: T.ones(0).amax(),
    "amin(empty reduced dim)": lambda T: T.ones(0, 2).amin(0),
    "cummax(dim=2)": lambda T: _x(T).cummax(2),
    "topk(k=3 along a dim of 2)": lambda T: _x(T).topk(3, 0),
    "kthvalue(0-d, k=2)": lambda T: T.tensor(1.).kthvalue(2),
    "median(complex)": lambda T: T.ones(3, dtype=T.complex64).median(),
    "nanmean(int64)": lambda T: T.nanmean(T.ones(2, dtype=T.int64)),
    "norm(dtype=int64)": lambda T: T.norm(T.ones(3), dtype=T.int64),
    "norm(p=1, dim=0, dtype=int32)": lambda T: T.norm(T.ones(3), p=1, dim=0, dtype=T.int32),
    "Tensor.norm(dtype=bool)": lambda T: T.ones(3).norm(dtype=T.bool),
    "norm(dtype=float64)_ok": lambda T: T.norm(T.ones(3), dtype=T.float64),
    "norm(float64 input, dtype=float32)": lambda T: T.norm(T.ones(3, dtype=T.float64), dtype=T.float32),
    "norm(real input, dtype=complex64)": lambda T: T.norm(T.ones(3), dtype=T.complex64),
    "norm(dim='a')": lambda T: T.norm(T.ones(3), dim="a"),
    "norm(p='fro', dim of 3)": lambda T: T.norm(T.ones(2, 2, 2), p="fro", dim=(0, 1, 2)),
    "linalg.matrix_norm(ord=None)": lambda T: T.linalg.matrix_norm(T.ones(2, 2), ord=None),
    # linalg
    "matmul(2x3 @ 2x3)": lambda T: _x(T) @ _x(T),
    "bmm(batch 2 vs 3)": lambda T: T.bmm(T.ones(2, 2, 2), T.ones(3, 2, 2)),
    "linalg.det(2x3)": lambda T: T.linalg.det(T.ones(2, 3)),
    "linalg.solve(B of the wrong size)": lambda T: T.linalg.solve(T.eye(2), T.ones(3)),
    "linalg.cholesky_ex(non-PD)_ok": lambda T: T.linalg.cholesky_ex(-T.eye(2)),
    "linalg.norm(ord='fro' of a vector)": lambda T: T.linalg.norm(T.ones(3), ord="fro"),
    "linalg.matrix_norm(ord=3)": lambda T: T.linalg.matrix_norm(T.ones(2, 3), ord=3),
    # F.interpolate
    "interpolate(size and scale_factor)": lambda T: _F(T).interpolate(_img(T), size=2, scale_factor=2.),
    "interpolate(mode='foo')": lambda T: _F(T).interpolate(_img(T), scale_factor=2., mode="foo"),
    "interpolate(nearest, align_corners)": lambda T: _F(T).interpolate(_img(T), scale_factor=2., align_corners=True),
    "interpolate(empty channel)": lambda T: _F(T).interpolate(_img(T, 0), size=2),
    "interpolate(bilinear, empty channel)": lambda T: _F(T).interpolate(_img(T, 0), size=2, mode="bilinear"),
    "interpolate(area, empty channel)_ok": lambda T: _F(T).interpolate(_img(T, 0), size=2, mode="area"),
    "interpolate(scale nan)": lambda T: _F(T).interpolate(_img(T), scale_factor=math.nan),
    "interpolate(scale inf)": lambda T: _F(T).interpolate(_img(T), scale_factor=math.inf),
    "interpolate(scale nan, recompute)": lambda T: _F(T).interpolate(_img(T), scale_factor=math.nan,
                                                                     recompute_scale_factor=True),
    "interpolate(area, scale nan)": lambda T: _F(T).interpolate(_img(T), scale_factor=math.nan, mode="area"),
    "interpolate(size=tensor of 2)": lambda T: _F(T).interpolate(_img(T), size=T.tensor([2, 2])),
    "interpolate(size=tensor of 1)_ok": lambda T: _F(T).interpolate(_img(T), size=T.tensor([2])),
    "interpolate(size 2**63)": lambda T: _F(T).interpolate(_img(T), size=2 ** 63),
    # F.pad
    "pad(odd length)": lambda T: _F(T).pad(_img(T), (1, 1, 1)),
    "pad(reflect wider than the input)": lambda T: _F(T).pad(_img(T), (4, 4), mode="reflect"),
    "pad(mode=None)": lambda T: _F(T).pad(_img(T), (1, 1), mode=None),
    "pad(mode=3)": lambda T: _F(T).pad(_img(T), (1, 1), mode=3),
    "pad(mode=b'reflect')_ok": lambda T: _F(T).pad(T.ones(1, 1, 3), (1, 1), mode=b"reflect"),
    "pad(list input)": lambda T: _F(T).pad([1., 2.], (1, 1)),
    "pad(circular, crop to empty)_ok": lambda T: _F(T).pad(T.ones(1, 1, 3), (-4, 1), mode="circular"),
    # conv
    "conv2d(padding='same', stride 2)": lambda T: _F(T).conv2d(_img(T), T.ones(2, 2, 3, 3), stride=2, padding="same"),
    "Conv2d(padding='same', stride 2)": lambda T: T.nn.Conv2d(2, 2, 3, stride=2, padding="same"),
    "Conv2d(groups not dividing in_channels)": lambda T: T.nn.Conv2d(3, 4, 3, groups=2),
    "conv2d(groups=0)": lambda T: _F(T).conv2d(_img(T), T.ones(2, 2, 3, 3), groups=0),
    "conv2d(weight dim 0 not divisible by groups)": lambda T: _F(T).conv2d(T.ones(1, 4, 4, 4), T.ones(3, 2, 3, 3),
                                                                          groups=2),
    "conv2d(empty weight)": lambda T: _F(T).conv2d(_img(T), T.ones(0, 2, 3, 3)),
    "conv_transpose2d(groups > weight dim 0)": lambda T: _F(T).conv_transpose2d(T.ones(1, 1, 4, 4),
                                                                                T.ones(1, 1, 3, 3), groups=2),
    "conv_transpose1d(output_padding=-1)": lambda T: _F(T).conv_transpose1d(T.ones(1, 2, 4), T.ones(2, 1, 3),
                                                                           output_padding=-1),
    "conv_transpose2d(weight dim 1 empty)": lambda T: _F(T).conv_transpose2d(_img(T), T.ones(2, 0, 3, 3)),
    "ConvTranspose2d(output_size of 3)": lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=2)(_img(T),
                                                                                         output_size=(9, 9, 9)),
    "ConvTranspose2d(output_size of 1)": lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=2)(_img(T), output_size=(9,)),
    "ConvTranspose1d(output_size of 2)": lambda T: T.nn.ConvTranspose1d(2, 2, 3, stride=2)(T.ones(1, 2, 4),
                                                                                          output_size=(9, 9)),
    "ConvTranspose2d(output_size N, C, H, W)_ok": lambda T: T.nn.ConvTranspose2d(2, 2, 3, stride=2)(
        _img(T), output_size=(1, 2, 9, 9)),
    # nn.Module API
    "register_buffer('a.b')": lambda T: T.nn.Linear(2, 2).register_buffer("a.b", T.ones(1)),
    "register_buffer('')": lambda T: T.nn.Linear(2, 2).register_buffer("", T.ones(1)),
    "register_parameter(plain tensor)": lambda T: T.nn.Linear(2, 2).register_parameter("p", T.ones(1)),
    "add_module('a.b')": lambda T: T.nn.Linear(2, 2).add_module("a.b", T.nn.Linear(1, 1)),
    "get_submodule('0.x')": lambda T: T.nn.Sequential(T.nn.Linear(1, 1)).get_submodule("0.x"),
    "load_state_dict(unexpected key)": lambda T: _linear_state(T, extra=T.ones(1)),
    "load_state_dict(buffer of the wrong shape)": lambda T: T.nn.BatchNorm1d(2).load_state_dict(
        {**T.nn.BatchNorm1d(2).state_dict(), "running_mean": T.ones(3)}),
    # DataLoader
    "DataLoader(batch_size=0)": lambda T: _data(T).DataLoader([T.ones(2)] * 4, batch_size=0),
    "DataLoader(sampler, shuffle=True)": lambda T: _data(T).DataLoader([T.ones(2)] * 4, shuffle=True,
                                                                      sampler=_data(T).SequentialSampler(range(4))),
    "DataLoader(batch_sampler, batch_size=2)": lambda T: _data(T).DataLoader(
        [T.ones(2)] * 4, batch_size=2, batch_sampler=_data(T).BatchSampler(range(4), 2, False)),
    # save
    "save(into a missing directory)": lambda T: T.save(T.ones(1), os.path.join(os.sep, "nonexistent_dir_21", "x.pt")),
    # custom autograd.Function
    "Function: too many gradients": lambda T: _fn_backward(T, lambda T, g: (g, g)),
    "Function: gradient of the wrong shape": lambda T: _fn_backward(T, lambda T, g: T.ones(3)),
    "Function: complex gradient for a real input": lambda T: _fn_backward(T, lambda T, g: g.to(T.complex64)),
    "Function: int64 gradient_ok": lambda T: _fn_backward(T, lambda T, g: g.to(T.int64)),
    "vmap(old-style Function)": lambda T: T.func.vmap(_doubling(T, lambda T, g: g * 2).apply)(T.ones(2, 2)),
    "vmap(Function, generate_vmap_rule)_ok": lambda T: T.func.vmap(doubled_function(T, True).apply)(T.ones(2, 2)),
    # compile (test_bad_input_compile.py has the refusals)
    "compile(mode='foo') decorator form_ok": lambda T: T.compile(mode="foo"),
}

# both libraries' messages hold these words (the API or the argument)
GIST = {
    "norm(dtype=int64)": "dtype should be floating point or complex",
    "interpolate(empty channel)": "Non-empty 4D data tensor expected",
    "interpolate(scale nan)": "int64_t",
    "pad(mode=None)": "argument 'mode'",
    "conv2d(groups=0)": "non-positive groups",
    "conv2d(weight dim 0 not divisible by groups)": "divisible by 2 at dimension 0",
    "conv2d(empty weight)": "expected weight to be at least 1 at dimension 0",
    "ConvTranspose2d(output_size of 3)": "output_size must have 2 or 4 elements",
    "register_buffer('a.b')": 'contain "."',
    "load_state_dict(unexpected key)": "Unexpected key(s)",
    "load_state_dict(buffer of the wrong shape)": "size mismatch for running_mean",
    "Function: too many gradients": "incorrect number of gradients",
    "norm(float64 input, dtype=float32)": "without narrowing",
    "norm(real input, dtype=complex64)": "dtype should be real for real inputs",
    "norm(dim='a')": "argument 'dim'",
    "norm(p='fro', dim of 3)": "dim must be a 2-tuple",
    "linalg.matrix_norm(ord=None)": "ord",
    "pad(list input)": "argument 'input'",
    "conv_transpose1d(output_padding=-1)": "negative output_padding",
    "vmap(old-style Function)": "setup_context",
}

test_same_class_as_torch, test_message_gist = table_tests(CASES, GIST, torch, tracegrad)


def test_output_size_with_batch_and_channels():
    """``output_size`` of ConvTranspose2d given as (N, C, H, W) picks the same output as torch."""
    got = tracegrad.nn.ConvTranspose2d(2, 2, 3, stride=2)(_img(tracegrad), output_size=(1, 2, 10, 9))
    want = torch.nn.ConvTranspose2d(2, 2, 3, stride=2)(_img(torch), output_size=(1, 2, 10, 9))
    assert tuple(got.shape) == tuple(want.shape) == (1, 2, 10, 9)


def test_interpolate_size_tensor_of_one():
    got = _F(tracegrad).interpolate(_img(tracegrad), size=tracegrad.tensor([2]))
    want = _F(torch).interpolate(_img(torch), size=torch.tensor([2]))
    assert tuple(got.shape) == tuple(want.shape)


def test_function_int_gradient_is_cast():
    """An integer gradient for a float input is cast (only complex-for-real is refused), as torch."""
    got = _fn_backward(tracegrad, lambda T, g: (g * 3).to(T.int64))
    want = _fn_backward(torch, lambda T, g: (g * 3).to(T.int64))
    assert got.dtype == tracegrad.float32 and want.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_compile_decorator_checks_on_application():
    """``compile(mode=...)`` with no model is a decorator; the good form still compiles."""
    deco = tracegrad.compile(mode="reduce-overhead")
    np.testing.assert_array_equal(deco(lambda x: x * 2)(tracegrad.ones(2)).numpy(), [2., 2.])
    with pytest.raises(RuntimeError):
        tracegrad.compile(mode="foo")(None)
    with pytest.raises(RuntimeError):
        torch.compile(mode="foo")(None)
