"""Conformance tests ported from PyTorch's test/test_torch.py (TestTorch, TestTorchDeviceType):
the behaviours those tests check, re-expressed as small call tables run once with torch (the
oracle) and once with tracegrad. Each call's result (dtype, shape, values, Python values) or the
builtin exception class it raises must agree. Each test names the PyTorch tests it covers."""
import copy
import pickle

import numpy as np
import pytest

import tracegrad
from parity import run_both, run_cases

torch = pytest.importorskip("torch")


def dt(d):
    return str(d).rsplit(".", 1)[-1]


# ---- copy_ -------------------------------------------------------------------------------------
def test_copy_between_dtypes_and_broadcast():
    # test_copy_broadcast, test_copy_dtypes, test_copy_transpose, test_copy_all_dtypes_and_devices
    def into(T, dst, src):
        dst.copy_(src)
        return dst
    run_cases({
        "row into matrix": lambda T: into(T, T.zeros(2, 3), T.tensor([1., 2., 3.])),
        "column into matrix": lambda T: into(T, T.zeros(2, 3), T.tensor([[1.], [2.]])),
        "scalar tensor into matrix": lambda T: into(T, T.zeros(2, 2), T.tensor(7.)),
        "float into int truncates": lambda T: into(T, T.zeros(3, dtype=T.int64), T.tensor([1.7, -1.7, 2.5])),
        "float into uint8": lambda T: into(T, T.zeros(2, dtype=T.uint8), T.tensor([3.9, 200.2])),
        "int into bool": lambda T: into(T, T.zeros(3, dtype=T.bool), T.tensor([0, 2, -1])),
        "bool into float": lambda T: into(T, T.zeros(2), T.tensor([True, False])),
        "double into half": lambda T: into(T, T.zeros(2, dtype=T.float16), T.tensor([1 / 3, 65504.], dtype=T.float64)),
        "complex into float drops imag": lambda T: into(T, T.zeros(2), T.tensor([1 + 2j, 3 - 1j])),
        "float into complex": lambda T: into(T, T.zeros(2, dtype=T.complex64), T.tensor([1., 2.])),
        "transposed source": lambda T: into(T, T.zeros(3, 2), T.arange(6.).reshape(2, 3).t()),
        "into transposed view": lambda T: into(T, T.zeros(2, 3).t(), T.arange(6.).reshape(3, 2)),
        "not broadcastable": lambda T: into(T, T.zeros(2, 3), T.ones(4)),
        "larger source": lambda T: into(T, T.zeros(3), T.ones(2, 3)),
        "same numel other shape": lambda T: into(T, T.zeros(2, 3), T.ones(3, 2)),
        "empty": lambda T: into(T, T.zeros(0, 2), T.ones(2)),
        "returns self": lambda T: (lambda d: d.copy_(T.ones(2)) is d)(T.zeros(2)),
        "into expanded dst refused": lambda T: into(T, T.zeros(1, 3).expand(2, 3), T.ones(2, 3)),
        "copy_ of self": lambda T: (lambda d: into(T, d, d))(T.arange(3.)),
    })


def test_copy_into_view_writes_base():
    # test_copy_ (slice), test_narrow_copy semantics: a copy into a view changes the base
    def program(T, log):
        a = T.zeros(3, 4)
        a[1].copy_(T.arange(4.))
        a[:, 2].copy_(T.tensor([9., 8., 7.]))
        a.narrow(1, 0, 1).copy_(T.tensor([[5], [6], [7]]))
        log("base", a)
        v = a.view(-1)
        v[::5].copy_(T.tensor(-1.))
        log("strided", a)
    run_both(program)


# ---- type(), type_as(), to() ---------------------------------------------------------------
def test_type_names_and_conversions():
    # test_type, test_type_conversion_via_dtype_name, test_to, test_type_as
    def program(T, log):
        x = T.tensor([1.5, 2.5])
        for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
                     "BoolTensor", "HalfTensor", "ShortTensor", "CharTensor", "BFloat16Tensor"):
            y = x.type(f"torch.{name}")
            log(name, [y.type().replace("tracegrad.", "torch."), dt(y.dtype), y.float().tolist()])
        for d in (T.float64, T.int32, T.bool, T.complex64):
            log(f"type({dt(d)})", [x.type(d).type().replace("tracegrad.", "torch."), dt(x.type(d).dtype)])
        log("type() no arg", x.type().replace("tracegrad.", "torch."))
        log("type same dtype is self", x.type(T.float32) is x)
        log("type_as", x.type_as(T.tensor([1], dtype=T.int16)))
        log("type_as same is self", x.type_as(T.zeros(1)) is x)
        log("to dtype", x.to(T.int64))
        log("to same dtype is self", x.to(T.float32) is x)
        log("to copy", x.to(T.float32, copy=True) is x)
        log("to other", x.to(T.zeros(1, dtype=T.float64)))
        log("to device str", x.to("cpu") is x)
        log("to device+dtype", x.to("cpu", T.float16))
        log("to kw", x.to(device="cpu", dtype=T.int8))
        log("to device obj", x.to(T.device("cpu"), dtype=T.float64).dtype)
        log("to non_blocking", x.to(T.float64, non_blocking=True))
        log("double/half/bfloat16/bool/char/short", [dt(x.double().dtype), dt(x.half().dtype),
                                                     dt(x.bfloat16().dtype), dt(x.bool().dtype),
                                                     dt(x.char().dtype), dt(x.short().dtype),
                                                     dt(x.byte().dtype), dt(x.int().dtype), dt(x.long().dtype)])
        log("cfloat/cdouble", [dt(x.cfloat().dtype), dt(x.cdouble().dtype)])
        log("is_floating_point/is_complex/is_signed", [x.is_floating_point(), x.cfloat().is_complex(),
                                                       x.byte().is_signed(), x.long().is_signed()])
    run_both(program)


def test_type_and_to_errors():
    # test_type: bad type strings; test_to: wrong argument kinds
    x = lambda T: T.tensor([1.5, 2.])  # noqa: E731
    run_cases({
        "type bad string": lambda T: x(T).type("torch.NoSuchTensor"),
        "type not a type": lambda T: x(T).type(3),
        "to bad device": lambda T: x(T).to("nodevice"),
        "to bad kwarg": lambda T: x(T).to(dtyp=T.float64),
        "to two dtypes": lambda T: x(T).to(T.float64, T.float32),
        "type_as non tensor": lambda T: x(T).type_as(3),
    })


# ---- resize_, resize_as_, set_, storage ------------------------------------------------------
def test_resize_and_resize_as():
    # test_resize_all_dtypes_and_devices, test_resize_as_all_dtypes_and_devices, test_resize_as_preserves_strides
    def program(T, log):
        a = T.arange(6.)
        r = a.resize_(2, 3)
        log("resize_ returns self", r is a)
        log("reshaped", a)
        a.resize_(2, 2)
        log("shrunk", [tuple(a.shape), a.tolist()])
        b = T.arange(4, dtype=T.int32)
        b.resize_as_(T.zeros(2, 2, dtype=T.float64))
        log("resize_as_ shape keeps dtype", [tuple(b.shape), dt(b.dtype), b.tolist()])
        c = T.ones(3)
        c.resize_(0)
        log("to empty", c)
        d = T.zeros(2, 3)
        d.resize_(3, 2)
        log("same numel", d)
        log("contiguous strides", d.stride())
    run_both(program)


def test_resize_errors():
    # test_resize_overflow / negative sizes; resize_ of a tensor that requires grad
    run_cases({
        "negative": lambda T: T.zeros(2).resize_(-1),
        "leaf requires grad": lambda T: T.zeros(2, requires_grad=True).resize_(3),
        "resize_as_ non tensor": lambda T: T.zeros(2).resize_as_([1, 2]),
    })


def test_set_and_storage():
    # test_storage, test_set_, test_storage_setitem, test_tensor_set_errors
    def program(T, log):
        a = T.tensor([1., 2., 3.])
        st = a.untyped_storage()
        log("untyped nbytes", st.nbytes())
        log("storage len", len(a.storage()))
        log("storage dtype", a.storage().dtype)
        b = T.empty(0)
        b.set_(a)
        log("set_ shares", [b.tolist(), b.data_ptr() == a.data_ptr()])
        b.add_(1)
        log("write via set_ alias", a)
        c = T.tensor([5.])
        c.set_()
        log("set_ empty", [tuple(c.shape), c.numel()])
        e = T.zeros(4)
        e.set_(a.untyped_storage(), 1, (2,), (1,))
        log("set_ from storage view", e)
        log("storage_offset", e.storage_offset())
        log("is_set_to", [b.is_set_to(a), e.is_set_to(a)])
    run_both(program)


def test_set_errors():
    # test_tensor_set_errors: dtype mismatch between tensor and source
    run_cases({
        "dtype mismatch": lambda T: T.zeros(2).set_(T.zeros(2, dtype=T.float64)),
        "int into float": lambda T: T.zeros(2).set_(T.zeros(2, dtype=T.int64)),
    })


# ---- clone and memory formats --------------------------------------------------------------
def test_clone_memory_format():
    # test_memory_format_clone, test_memory_format_preserved_after_permute, test_memory_format_to
    def program(T, log):
        x = T.arange(24.).reshape(1, 2, 3, 4)
        cl = x.contiguous(memory_format=T.channels_last)
        log("channels_last strides", cl.stride())
        log("is_contiguous cl", [cl.is_contiguous(), cl.is_contiguous(memory_format=T.channels_last)])
        log("clone preserve", cl.clone().stride())
        log("clone contiguous", cl.clone(memory_format=T.contiguous_format).stride())
        log("clone to cl", x.clone(memory_format=T.channels_last).stride())
        log("values kept", cl.clone(memory_format=T.contiguous_format))
        t = x.permute(0, 2, 3, 1)
        log("permuted clone preserve", t.clone().stride())
        log("to channels_last", x.to(memory_format=T.channels_last).stride())
        log("empty_like preserve", T.empty_like(cl).stride())
        log("zeros_like contiguous", T.zeros_like(cl, memory_format=T.contiguous_format).stride())
        y = T.arange(120.).reshape(1, 2, 3, 4, 5)
        log("channels_last_3d", y.contiguous(memory_format=T.channels_last_3d).stride())
    run_both(program)


def test_memory_format_errors():
    run_cases({
        "channels_last on 3d": lambda T: T.zeros(2, 3, 4).contiguous(memory_format=T.channels_last),
        "channels_last_3d on 4d": lambda T: T.zeros(2, 3, 4, 5).clone(memory_format=T.channels_last_3d),
    })


# ---- masked_fill / masked_scatter / masked_select -----------------------------------------
def test_masked_ops():
    # test_masked_fill, test_masked_fill_bool_tensor, test_masked_scatter, test_masked_select,
    # test_masked_fill_mem_overlap, test_masked_select_discontiguous
    x = lambda T: T.arange(6.).reshape(2, 3)  # noqa: E731
    m = lambda T: T.tensor([True, False, True])  # noqa: E731
    run_cases({
        "fill broadcast mask": lambda T: x(T).masked_fill(m(T), -1.),
        "fill 0-d tensor value": lambda T: x(T).masked_fill(m(T), T.tensor(5.)),
        "fill int value into float": lambda T: x(T).masked_fill(m(T), 3),
        "fill float value into int": lambda T: T.arange(3).masked_fill(m(T), 2.7),
        "fill_ inplace": lambda T: x(T).masked_fill_(T.tensor([[True], [False]]), 9.),
        "fill uint8 mask": lambda T: x(T).masked_fill(m(T).to(T.uint8), 1.),
        "fill float mask": lambda T: x(T).masked_fill(m(T).float(), 1.),
        "fill 1-d value": lambda T: x(T).masked_fill(m(T), T.tensor([1., 2.])),
        "fill mask not broadcastable": lambda T: x(T).masked_fill(T.tensor([True, False]), 1.),
        "fill_ mask bigger than self": lambda T: T.zeros(3).masked_fill_(T.ones(2, 3, dtype=T.bool), 1.),
        "fill out of place mask bigger": lambda T: T.zeros(3).masked_fill(T.ones(2, 3, dtype=T.bool), 1.),
        "fill value tensor of other dtype": lambda T: x(T).masked_fill(m(T), T.tensor(2, dtype=T.int64)),
        "fill bool": lambda T: T.zeros(3, dtype=T.bool).masked_fill(m(T), True),
        "select broadcast": lambda T: x(T).masked_select(m(T)),
        "select mask broadcasts self": lambda T: T.tensor([1., 2., 3.]).masked_select(T.tensor([[True, False, True], [False, True, False]])),
        "select uint8 mask": lambda T: x(T).masked_select(m(T).to(T.uint8)),
        "select non contiguous": lambda T: x(T).t().masked_select(T.tensor([[True, False], [False, True], [True, True]])),
        "select empty": lambda T: T.zeros(0, 3).masked_select(m(T)),
        "scatter": lambda T: T.zeros(2, 3).masked_scatter(m(T), T.arange(10., 16.)),
        "scatter_ 2d mask": lambda T: T.zeros(2, 3).masked_scatter_(T.tensor([[True, False, False], [True, True, False]]), T.tensor([[1., 2.], [3., 4.]])),
        "scatter source too small": lambda T: T.zeros(2, 3).masked_scatter(m(T), T.ones(2)),
        "scatter dtype mismatch": lambda T: T.zeros(2, 3).masked_scatter(m(T), T.ones(6, dtype=T.float64)),
        "scatter uint8 mask": lambda T: T.zeros(3).masked_scatter(m(T).to(T.uint8), T.ones(3)),
        "fill_ nonleaf grad": lambda T: (lambda a: a.masked_fill(m(T), 0.).sum())(T.ones(3, requires_grad=True)).backward(),
    })


def test_masked_grads():
    # test_masked_fill / masked_scatter / masked_select autograd through torch's formulas
    def program(T, log):
        a = T.arange(1., 7.).reshape(2, 3).requires_grad_()
        src = T.arange(10., 16.).requires_grad_()
        m = T.tensor([[True, False, True], [False, False, True]])
        out = a.masked_fill(m, 0.) * 2 + a.masked_scatter(m, src) + a.masked_select(m).sum()
        out.sum().backward()
        log("grad a", a.grad)
        log("grad src", src.grad)
        log("grad_fns", [a.masked_fill(m, 0.).grad_fn.name(), a.masked_select(m).grad_fn.name(),
                         a.masked_scatter(m, src).grad_fn.name()])
    run_both(program)


# ---- index_add / index_copy / index_fill / index_reduce ------------------------------------
def test_index_family():
    # test_index_add, test_index_add_all_dtypes, test_index_copy, test_index_fill,
    # test_index_reduce, test_index_add_correctness, test_index_copy_scalars
    idx = lambda T: T.tensor([0, 2, 0])  # noqa: E731
    src = lambda T: T.arange(1., 10.).reshape(3, 3)  # noqa: E731
    run_cases({
        "add duplicates": lambda T: T.zeros(3, 3).index_add(0, idx(T), src(T)),
        "add alpha": lambda T: T.ones(3, 3).index_add(1, idx(T), src(T), alpha=-2),
        "add int alpha float": lambda T: T.zeros(3, dtype=T.int64).index_add(0, T.tensor([1]), T.tensor([3]), alpha=2.5),
        "add int": lambda T: T.zeros(3, dtype=T.int64).index_add(0, T.tensor([1, 1]), T.tensor([3, 4])),
        "add_ negative dim": lambda T: T.zeros(2, 3).index_add_(-1, T.tensor([2]), T.ones(2, 1)),
        "add 0-d": lambda T: T.tensor(1.).index_add(0, T.tensor([0]), T.tensor(5.)),
        "add out of range": lambda T: T.zeros(3).index_add(0, T.tensor([3]), T.ones(1)),
        "add float index": lambda T: T.zeros(3).index_add(0, T.tensor([1.]), T.ones(1)),
        "add 2-d index": lambda T: T.zeros(3).index_add(0, T.tensor([[1]]), T.ones(1)),
        "add wrong source size": lambda T: T.zeros(3, 3).index_add(0, T.tensor([0, 1]), T.ones(3, 3)),
        "add dtype mismatch": lambda T: T.zeros(3).index_add(0, T.tensor([0]), T.ones(1, dtype=T.float64)),
        "add int32 index": lambda T: T.zeros(3).index_add(0, T.tensor([2], dtype=T.int32), T.ones(1)),
        "copy": lambda T: T.zeros(3, 3).index_copy(0, T.tensor([2, 0]), src(T)[:2]),
        "copy_ dim1": lambda T: T.zeros(2, 3).index_copy_(1, T.tensor([1]), T.tensor([[7.], [8.]])),
        "copy 0-d": lambda T: T.tensor(1.).index_copy(0, T.tensor([0]), T.tensor(5.)),
        "copy out of range": lambda T: T.zeros(3).index_copy(0, T.tensor([5]), T.ones(1)),
        "copy dtype mismatch": lambda T: T.zeros(3).index_copy(0, T.tensor([0]), T.ones(1, dtype=T.int64)),
        "copy index count mismatch": lambda T: T.zeros(3).index_copy(0, T.tensor([0, 1]), T.ones(3)),
        "fill": lambda T: T.zeros(3, 3).index_fill(1, T.tensor([0, 2]), -1.),
        "fill 0-d tensor value": lambda T: T.zeros(3).index_fill(0, T.tensor([1]), T.tensor(4.)),
        "fill 1-d tensor value": lambda T: T.zeros(3).index_fill(0, T.tensor([1]), T.tensor([4.])),
        "fill negative index": lambda T: T.zeros(3).index_fill(0, T.tensor([-1]), 2.),
        "fill out of range": lambda T: T.zeros(3).index_fill(0, T.tensor([3]), 2.),
        "fill_ int with float": lambda T: T.zeros(3, dtype=T.int64).index_fill_(0, T.tensor([0]), 2.9),
        "fill bool": lambda T: T.zeros(3, dtype=T.bool).index_fill(0, T.tensor([1]), True),
        "fill 0-d self": lambda T: T.tensor(1.).index_fill(0, T.tensor([0]), 3.),
        **{f"reduce {r} include_self={s}": (
            lambda T, r=r, s=s: T.full((3, 2), 2.).index_reduce(0, T.tensor([0, 2, 0, 1]),
                                                                T.tensor([[1., 2.], [3., 4.], [5., 6.], [7., -8.]]), r, include_self=s))
           for r in ("prod", "mean", "amax", "amin") for s in (True, False)},
        "reduce int mean": lambda T: T.full((2,), 3).index_reduce(0, T.tensor([0, 0]), T.tensor([4, 6]), "mean"),
        "reduce bad op": lambda T: T.zeros(2).index_reduce(0, T.tensor([0]), T.ones(1), "sum"),
        "reduce_ untouched rows": lambda T: T.full((3,), 5.).index_reduce_(0, T.tensor([1]), T.tensor([2.]), "amin", include_self=False),
    })


def test_index_add_grad():
    def program(T, log):
        a = T.zeros(3, 2, requires_grad=True)
        s = T.arange(1., 7.).reshape(3, 2).requires_grad_()
        w = T.tensor([[1., 2.], [3., 4.], [5., 6.]])
        out = a.index_add(0, T.tensor([2, 0, 2]), s, alpha=3.)
        log("grad_fn", out.grad_fn.name())
        (out * w).sum().backward()
        log("grads", [a.grad, s.grad])
        b = T.ones(3, requires_grad=True)
        c = T.tensor([5., 7.], requires_grad=True)
        r = b.index_copy(0, T.tensor([2, 0]), c)
        (r * T.tensor([1., 2., 3.])).sum().backward()
        log("index_copy grads", [b.grad, c.grad, r.grad_fn.name()])
    run_both(program)


# ---- put_ / take ------------------------------------------------------------------------------
def test_put_and_take():
    # test_put, test_put_accumulate, test_take, test_take_empty, test_put_empty
    src = lambda T: T.arange(6.).reshape(2, 3)  # noqa: E731
    run_cases({
        "take": lambda T: src(T).take(T.tensor([[0, 5], [-1, 2]])),
        "take transposed": lambda T: src(T).t().take(T.tensor([1, 2])),
        "take empty index": lambda T: src(T).take(T.tensor([], dtype=T.int64)),
        "take out of range": lambda T: src(T).take(T.tensor([6])),
        "take float index": lambda T: src(T).take(T.tensor([1.])),
        "take from empty": lambda T: T.zeros(0).take(T.tensor([0])),
        "put_": lambda T: src(T).put_(T.tensor([1, -1]), T.tensor([9., 8.])),
        "put_ duplicates accumulate": lambda T: src(T).put_(T.tensor([1, 1, 4]), T.tensor([1., 2., 3.]), accumulate=True),
        "put_ 2d index": lambda T: src(T).put_(T.tensor([[0], [5]]), T.tensor([[7.], [6.]])),
        "put out of place": lambda T: T.put(src(T), T.tensor([0]), T.tensor([-5.])),
        "put_ out of range": lambda T: src(T).put_(T.tensor([6]), T.tensor([1.])),
        "put_ size mismatch": lambda T: src(T).put_(T.tensor([0, 1]), T.tensor([1.])),
        "put_ dtype mismatch": lambda T: src(T).put_(T.tensor([0]), T.tensor([1])),
        "put_ on transposed": lambda T: (lambda t: (t.put_(T.tensor([1]), T.tensor([-3.])), t.contiguous())[1])(src(T).t().clone().t()),
        "put_ empty": lambda T: src(T).put_(T.tensor([], dtype=T.int64), T.tensor([])),
    })


def test_take_and_put_grad():
    def program(T, log):
        a = T.arange(1., 7.).reshape(2, 3).requires_grad_()
        t = a.take(T.tensor([0, 0, 5]))
        (t * T.tensor([1., 2., 3.])).sum().backward()
        log("take grad", a.grad)
        b = T.ones(4, requires_grad=True)
        v = T.tensor([2., 3.], requires_grad=True)
        r = b.put(T.tensor([1, 1]), v, accumulate=True)
        (r * T.arange(4.)).sum().backward()
        log("put grads", [b.grad, v.grad])
    run_both(program)


def test_take_and_put_grad_fn_names():
    def program(T, log):
        a = T.ones(2, 3, requires_grad=True)
        log("names", [a.take(T.tensor([1])).grad_fn.name(),
                      a.put(T.tensor([1]), T.tensor([2.])).grad_fn.name(),
                      a.clone().put_(T.tensor([1]), T.tensor([2.])).grad_fn.name()])
    run_both(program)


# ---- where / nonzero ----------------------------------------------------------------------------
def test_where_with_scalars_and_nonzero():
    # test_where_scalar_handcrafted_values, test_where_tensor, test_nonzero*, test_nonzero_astuple_out
    c = lambda T: T.tensor([[True, False], [False, True]])  # noqa: E731
    run_cases({
        "two floats": lambda T: T.where(c(T), 1., 0.),
        "two ints": lambda T: T.where(c(T), 1, 0),
        "int and float": lambda T: T.where(c(T), 1, 0.5),
        "tensor and int scalar": lambda T: T.where(c(T), T.ones(2, 2, dtype=T.float64), 3),
        "int tensor and float scalar": lambda T: T.where(c(T), T.ones(2, dtype=T.int32), 2.5),
        "half tensor and float scalar": lambda T: T.where(c(T), T.ones(2, dtype=T.float16), 2.5),
        "bool tensors": lambda T: T.where(c(T), T.tensor(True), T.tensor(False)),
        "complex scalar": lambda T: T.where(c(T), T.ones(2), 1j),
        "mixed tensor dtypes": lambda T: T.where(c(T), T.ones(2, dtype=T.int8), T.zeros(2, dtype=T.float16)),
        "0-d tensor vs scalar": lambda T: T.where(c(T), T.tensor(2, dtype=T.int16), 5),
        "broadcast three": lambda T: T.where(T.tensor([True, False]), T.arange(2.).reshape(2, 1), T.tensor(-1.)),
        "uint8 condition": lambda T: T.where(T.tensor([1, 0], dtype=T.uint8), 1., 0.),
        "float condition": lambda T: T.where(T.tensor([1., 0.]), 1., 0.),
        "method": lambda T: T.arange(4.).where(T.tensor([True, False, True, False]), -1.),
        "not broadcastable": lambda T: T.where(T.tensor([True, False, True]), T.ones(2), 0.),
        "condition only": lambda T: T.where(c(T)),
        "nonzero": lambda T: T.tensor([[0, 1, 2], [3, 0, 0]]).nonzero(),
        "nonzero as_tuple": lambda T: T.tensor([[0, 1, 2], [3, 0, 0]]).nonzero(as_tuple=True),
        "nonzero 0-d": lambda T: T.tensor(5).nonzero(),
        "nonzero 0-d zero": lambda T: T.tensor(0.).nonzero(),
        "nonzero 0-d as_tuple": lambda T: T.nonzero(T.tensor(5), as_tuple=True),
        "nonzero empty": lambda T: T.zeros(2, 0).nonzero(),
        "nonzero empty as_tuple": lambda T: T.zeros(0, 3).nonzero(as_tuple=True),
        "nonzero bool nan": lambda T: T.tensor([float("nan"), 0., -0.]).nonzero(),
        "argwhere": lambda T: T.argwhere(T.tensor([[0, 1], [1, 0]])),
        "count_nonzero dims": lambda T: T.count_nonzero(T.tensor([[0, 1, 2], [3, 0, 0]]), dim=(0, 1)),
        "nonzero_static": lambda T: T.nonzero_static(T.tensor([0, 3, 0, 4]), size=3, fill_value=-1),
    })


# ---- bincount / histc / histogram --------------------------------------------------------------
def test_bincount_histc_histogram():
    # test_bincount, test_histc, test_histc_extremal_values, test_histogramdd (1-d cases), test_histogram
    run_cases({
        "bincount": lambda T: T.bincount(T.tensor([0, 1, 1, 3])),
        "bincount minlength": lambda T: T.bincount(T.tensor([1, 1]), minlength=5),
        "bincount weights float": lambda T: T.bincount(T.tensor([0, 1, 1]), weights=T.tensor([0.5, 1., 2.])),
        "bincount weights double": lambda T: T.bincount(T.tensor([0, 2]), weights=T.tensor([1., 2.], dtype=T.float64)),
        "bincount weights int": lambda T: T.bincount(T.tensor([0, 2]), weights=T.tensor([1, 2])),
        "bincount empty": lambda T: T.bincount(T.tensor([], dtype=T.int64)),
        "bincount empty minlength": lambda T: T.bincount(T.tensor([], dtype=T.int64), minlength=3),
        "bincount uint8": lambda T: T.bincount(T.tensor([3, 3], dtype=T.uint8)),
        "bincount negative": lambda T: T.bincount(T.tensor([-1, 2])),
        "bincount float input": lambda T: T.bincount(T.tensor([1., 2.])),
        "bincount 2-d": lambda T: T.bincount(T.tensor([[1, 2]])),
        "bincount weights size": lambda T: T.bincount(T.tensor([1, 2]), weights=T.tensor([1.])),
        "bincount negative minlength": lambda T: T.bincount(T.tensor([1]), minlength=-1),
        "histc": lambda T: T.histc(T.tensor([1., 2., 1., 4.]), bins=4, min=0, max=4),
        "histc auto range": lambda T: T.histc(T.tensor([1., 2., 1., 4.]), bins=3),
        "histc equal min max": lambda T: T.histc(T.tensor([2., 2.]), bins=2),
        "histc out of range ignored": lambda T: T.histc(T.tensor([-1., 0.5, 3.]), bins=2, min=0, max=1),
        "histc double": lambda T: T.histc(T.tensor([0., 1.], dtype=T.float64), bins=2),
        "histc int": lambda T: T.histc(T.tensor([0, 1]), bins=2),
        "histc bins 0": lambda T: T.histc(T.tensor([1.]), bins=0),
        "histc max < min": lambda T: T.histc(T.tensor([1.]), bins=2, min=2, max=1),
        "histc nan range": lambda T: T.histc(T.tensor([1., float("nan")]), bins=2),
        "histc inf": lambda T: T.histc(T.tensor([1., float("inf")]), bins=2),
        "histogram int bins": lambda T: T.histogram(T.tensor([1., 2., 1.]), bins=4),
        "histogram range": lambda T: T.histogram(T.tensor([1., 2., 1.]), bins=2, range=(0., 3.)),
        "histogram edges": lambda T: T.histogram(T.tensor([1., 2., 1., 5.]), T.tensor([0., 1.5, 4.])),
        "histogram weights density": lambda T: T.histogram(T.tensor([1., 2., 1.]), bins=3, weight=T.tensor([1., 2., 3.]), density=True),
        "histogram int input": lambda T: T.histogram(T.tensor([1, 2]), bins=2),
        "histogram double": lambda T: T.histogram(T.tensor([1., 2.], dtype=T.float64), bins=2),
        "histogram bad range": lambda T: T.histogram(T.tensor([1., 2.]), bins=2, range=(3., 1.)),
    })


# ---- cdist / diff / gradient --------------------------------------------------------------
def test_cdist():
    # test_cdist_norm, test_cdist_norm_batch, test_cdist_empty, test_cdist_same_inputs, test_cdist_non_contiguous
    a = lambda T: T.tensor([[0., 0.], [1., 2.], [3., -1.]])  # noqa: E731
    b = lambda T: T.tensor([[1., 1.], [-2., 0.5]])  # noqa: E731
    run_cases({
        **{f"p={p}": (lambda T, p=p: T.cdist(a(T), b(T), p=p)) for p in (0., 1., 2., 3., float("inf"), 0.5)},
        "batched broadcast": lambda T: T.cdist(a(T).expand(2, 3, 2), b(T)),
        "empty": lambda T: T.cdist(T.zeros(0, 2), b(T)),
        "zero dim features": lambda T: T.cdist(T.zeros(2, 0), T.zeros(3, 0)),
        "same inputs": lambda T: T.cdist(a(T), a(T)),
        "transposed": lambda T: T.cdist(a(T).t().contiguous().t(), b(T)),
        "double": lambda T: T.cdist(a(T).double(), b(T).double()),
        "negative p": lambda T: T.cdist(a(T), b(T), p=-1.),
        "feature mismatch": lambda T: T.cdist(a(T), T.zeros(2, 3)),
        "1-d": lambda T: T.cdist(T.zeros(3), T.zeros(3)),
        "int": lambda T: T.cdist(T.zeros(2, 2, dtype=T.int64), T.zeros(2, 2, dtype=T.int64)),
        "mm modes": lambda T: T.cdist(a(T), b(T), compute_mode="donot_use_mm_for_euclid_dist"),
        "bad mode": lambda T: T.cdist(a(T), b(T), compute_mode="nope"),
    })


def test_cdist_grad():
    def program(T, log):
        for p in (1., 2., float("inf")):
            a = T.tensor([[0., 0.], [1., 2.], [3., -1.]], requires_grad=True)
            b = T.tensor([[1., 1.], [-2., 0.5]], requires_grad=True)
            d = T.cdist(a, b, p=p)
            (d * T.tensor([[1., 2.], [3., 4.], [5., 6.]])).sum().backward()
            log(f"p={p}", [a.grad, b.grad])
    run_both(program)


def test_diff_and_gradient():
    # test_diff, test_diff_noncontig, test_gradient_all, test_gradient_spacing_list_length_error,
    # test_gradient_type_promotion, test_gradient_extreme_cases
    x = lambda T: T.tensor([[1., 4., 9., 16.], [2., 3., 5., 7.]])  # noqa: E731
    run_cases({
        "diff": lambda T: T.diff(x(T)),
        "diff dim0": lambda T: T.diff(x(T), dim=0),
        "diff n=2": lambda T: T.diff(x(T), n=2),
        "diff n larger than size": lambda T: T.diff(x(T), n=5),
        "diff n=0": lambda T: T.diff(x(T), n=0),
        "diff prepend append": lambda T: T.diff(x(T), prepend=T.zeros(2, 1), append=T.ones(2, 2)),
        "diff prepend broadcast refused": lambda T: T.diff(x(T), prepend=T.zeros(1)),
        "diff bool": lambda T: T.diff(T.tensor([True, False, False, True])),
        "diff int": lambda T: T.diff(T.tensor([1, 5, 2], dtype=T.int16)),
        "diff 0-d": lambda T: T.diff(T.tensor(1.)),
        "diff negative n": lambda T: T.diff(x(T), n=-1),
        "diff mixed prepend dtype": lambda T: T.diff(T.tensor([1, 2]), prepend=T.tensor([0.5])),
        "gradient": lambda T: T.gradient(x(T)),
        "gradient scalar spacing": lambda T: T.gradient(x(T), spacing=2.),
        "gradient dim": lambda T: T.gradient(x(T), dim=1),
        "gradient spacing list": lambda T: T.gradient(x(T), spacing=[0.5, 2.]),
        "gradient coordinates": lambda T: T.gradient(x(T), spacing=(T.tensor([0., 1.]), T.tensor([0., 1., 3., 6.]))),
        "gradient edge_order 2": lambda T: T.gradient(x(T), edge_order=2, dim=1),
        "gradient int": lambda T: T.gradient(T.tensor([1, 4, 9, 16])),
        "gradient int spacing": lambda T: T.gradient(T.tensor([1, 4, 9, 16]), spacing=2),
        "gradient too short": lambda T: T.gradient(T.tensor([1.])),
        "gradient edge_order 2 too short": lambda T: T.gradient(T.tensor([1., 2.]), edge_order=2),
        "gradient edge_order 3": lambda T: T.gradient(x(T), edge_order=3),
        "gradient spacing length": lambda T: T.gradient(x(T), spacing=[1., 2., 3.]),
        "gradient dim list": lambda T: T.gradient(x(T), dim=[0, 1], spacing=[1., 3.]),
        "gradient coordinate length": lambda T: T.gradient(x(T), spacing=(T.tensor([0., 1., 2.]),), dim=1),
    })


# ---- cumulative ops ------------------------------------------------------------------------------
def test_cumulative_dtypes():
    # test_cumsum, test_cumprod, test_cumsum_integral_types, test_cummax_cummin, test_logcumsumexp
    run_cases({
        "cumsum int32 -> int64": lambda T: T.tensor([1, 2, 3], dtype=T.int32).cumsum(0),
        "cumsum bool -> int64": lambda T: T.tensor([True, True, False]).cumsum(0),
        "cumsum uint8 -> int64": lambda T: T.tensor([200, 100], dtype=T.uint8).cumsum(0),
        "cumsum dtype arg": lambda T: T.tensor([1, 2], dtype=T.int8).cumsum(0, dtype=T.float64),
        "cumsum dtype narrower": lambda T: T.tensor([100, 100], dtype=T.int64).cumsum(0, dtype=T.int8),
        "cumsum half": lambda T: T.tensor([1., 2.], dtype=T.float16).cumsum(0),
        "cumsum_ int32 keeps": lambda T: T.tensor([1, 2], dtype=T.int32).cumsum_(0),
        "cumsum negative dim": lambda T: T.arange(6.).reshape(2, 3).cumsum(-1),
        "cumsum 0-d": lambda T: T.tensor(3).cumsum(0),
        "cumsum empty": lambda T: T.zeros(0, 2).cumsum(0),
        "cumsum dim out of range": lambda T: T.zeros(2).cumsum(1),
        "cumprod int8 -> int64": lambda T: T.tensor([3, 4, 5], dtype=T.int8).cumprod(0),
        "cumprod bool": lambda T: T.tensor([True, False]).cumprod(0),
        "cumprod dtype arg": lambda T: T.tensor([3, 4]).cumprod(0, dtype=T.float32),
        "cumprod zeros": lambda T: T.tensor([2., 0., 3.]).cumprod(0),
        "cummax": lambda T: T.tensor([1., 3., 2., 3., float("nan"), 0.]).cummax(0),
        "cummin int": lambda T: T.tensor([3, 1, 2, 1]).cummin(0),
        "cummax bool": lambda T: T.tensor([False, True, False]).cummax(0),
        "logcumsumexp": lambda T: T.tensor([0., 1., float("-inf")]).logcumsumexp(0),
        "logcumsumexp int": lambda T: T.tensor([0, 1]).logcumsumexp(0),
    })


def test_cumprod_grad_with_zeros():
    # test_cumprod backward with zeros in the input
    def program(T, log):
        for vals in ([2., 0., 3., 4.], [0., 0., 2., 1.], [1., 2., 3., 0.]):
            a = T.tensor(vals, requires_grad=True)
            a.cumprod(0).sum().backward()
            log(str(vals), a.grad)
    run_both(program)


# ---- clamp ------------------------------------------------------------------------------------
def test_clamp_tensor_bounds_and_nan():
    # test_clamp, test_clamp_propagates_nans, test_clamp_min_max_tensor (TestTorchDeviceType)
    x = lambda T: T.tensor([-2., 0.5, float("nan"), 3., 7.])  # noqa: E731
    run_cases({
        "scalars": lambda T: x(T).clamp(0., 2.),
        "min only": lambda T: x(T).clamp(min=1.),
        "max only": lambda T: x(T).clamp(max=1.),
        "min > max": lambda T: x(T).clamp(3., 1.),
        "tensor bounds": lambda T: x(T).clamp(T.tensor([0., 0., 0., 4., 4.]), T.tensor([1., 1., 1., 5., 5.])),
        "tensor bounds broadcast": lambda T: T.arange(6.).reshape(2, 3).clamp(T.tensor([1., 2., 3.]), T.tensor([[2.], [4.]])),
        "nan bound": lambda T: x(T).clamp(min=T.tensor(float("nan"))),
        "nan scalar bound": lambda T: T.tensor([1., 2.]).clamp(max=float("nan")),
        "no bounds": lambda T: x(T).clamp(),
        "int tensor float bound": lambda T: T.tensor([1, 5, 9]).clamp(2.5, 6.5),
        "int tensor int tensor bound": lambda T: T.tensor([1, 5, 9]).clamp(T.tensor(2, dtype=T.int8), 6),
        "int8 with float64 tensor bound": lambda T: T.tensor([1, 5], dtype=T.int8).clamp(min=T.tensor([2.5, 2.5], dtype=T.float64)),
        "mixed scalar and tensor": lambda T: x(T).clamp(0., T.tensor(1.)),
        "clamp_min/clamp_max": lambda T: (x(T).clamp_min(0.), x(T).clamp_max(T.tensor(1.))),
        "clip alias": lambda T: T.clip(x(T), -1., 1.),
        "clamp_ int with float": lambda T: T.tensor([1, 5]).clamp_(2.5, 3.5),
        "bool": lambda T: T.tensor([True, False]).clamp(min=True),
        "not broadcastable": lambda T: x(T).clamp(T.zeros(2)),
        "inf bounds": lambda T: x(T).clamp(float("-inf"), float("inf")),
    })


def test_clamp_grad_at_bounds():
    def program(T, log):
        a = T.tensor([-1., 0., 0.5, 1., 2.], requires_grad=True)
        lo = T.tensor([0., 0., 0., 0., 0.], requires_grad=True)
        hi = T.tensor([1., 1., 1., 1., 1.], requires_grad=True)
        a.clamp(lo, hi).sum().backward()
        log("grads", [a.grad, lo.grad, hi.grad])
        b = T.tensor([0., 1.], requires_grad=True)
        b.clamp(0., 1.).sum().backward()
        log("scalar bounds at edge", b.grad)
    run_both(program)


# ---- random state -----------------------------------------------------------------------------
def test_rng_state_round_trip():
    # test_RNGState, test_RNGStateAliasing, test_manual_seed, test_generator_cpu, test_get_set_rng_state_all
    for T in (torch, tracegrad):
        g = T.manual_seed(123)
        assert isinstance(g, T.Generator)
        assert T.initial_seed() == 123
        state = T.get_rng_state()
        assert state.dtype == T.uint8 and state.dim() == 1
        a = T.rand(4)
        T.set_rng_state(state)
        assert T.equal(T.rand(4), a)
        T.set_rng_state(state)
        assert T.equal(T.randn(3), T.randn(3)) is False
        saved = state.clone()
        T.rand(2)
        assert T.equal(state, saved)  # the returned state is a snapshot, not a live alias
        gen = T.Generator()
        assert gen.manual_seed(7) is gen and gen.initial_seed() == 7
        s = gen.get_state()
        x = T.rand(3, generator=gen)
        gen.set_state(s)
        assert T.equal(T.rand(3, generator=gen), x)
        g1, g2 = T.Generator().manual_seed(5), T.Generator().manual_seed(5)
        assert T.equal(T.randint(0, 100, (5,), generator=g1), T.randint(0, 100, (5,), generator=g2))
        assert T.equal(T.randperm(6, generator=T.Generator().manual_seed(1)),
                       T.randperm(6, generator=T.Generator().manual_seed(1)))
        seed = gen.seed()
        assert isinstance(seed, int) and gen.initial_seed() == seed
        assert T.default_generator.initial_seed() == 123
        assert str(gen.device) == "cpu"


def test_rng_state_errors():
    run_cases({
        "set_rng_state not a tensor": lambda T: T.set_rng_state([1, 2]),
        "set_rng_state float": lambda T: T.set_rng_state(T.zeros(3)),
        "generator set_state wrong": lambda T: T.Generator().set_state(T.zeros(2, dtype=T.uint8)),
        "manual_seed string": lambda T: T.manual_seed("abc"),
        "manual_seed negative": lambda T: T.manual_seed(-1).initial_seed(),
        "manual_seed returns the default generator": lambda T: T.manual_seed(3) is T.default_generator,
        "manual_seed float": lambda T: T.manual_seed(1.5).initial_seed(),
        "manual_seed too large": lambda T: T.manual_seed(2 ** 64).initial_seed(),
        "generator bad device": lambda T: T.Generator(device="nodevice").initial_seed(),
    })


# ---- is_same_size / equal / deterministic flags ------------------------------------------
def test_equal_and_is_same_size():
    # test_equal, test_is_same_size, test_equal_nan (torch.equal never treats NaN as equal)
    run_cases({
        "equal": lambda T: T.equal(T.tensor([1., 2.]), T.tensor([1., 2.])),
        "equal shapes differ": lambda T: T.equal(T.tensor([1., 2.]), T.tensor([[1., 2.]])),
        "equal dtypes differ": lambda T: T.equal(T.tensor([1, 2]), T.tensor([1., 2.])),
        "equal nan": lambda T: T.equal(T.tensor([float("nan")]), T.tensor([float("nan")])),
        "equal empty": lambda T: T.equal(T.zeros(0), T.zeros(0)),
        "equal views": lambda T: (lambda a: T.equal(a, a.t().t()))(T.arange(4.).reshape(2, 2)),
        "equal non contiguous": lambda T: T.equal(T.arange(4.).reshape(2, 2).t(), T.tensor([[0., 2.], [1., 3.]])),
        "equal bool int": lambda T: T.equal(T.tensor([True]), T.tensor([1])),
        "equal non tensor": lambda T: T.equal(T.zeros(1), [0.]),
        "is_same_size": lambda T: T.zeros(2, 3).is_same_size(T.ones(2, 3, dtype=T.int64)),
        "is_same_size differs": lambda T: T.zeros(2, 3).is_same_size(T.zeros(3, 2)),
        "is_nonzero": lambda T: T.tensor([0.]).is_nonzero(),
        "is_nonzero many": lambda T: T.tensor([1., 2.]).is_nonzero(),
        "is_nonzero empty": lambda T: T.tensor([]).is_nonzero(),
        "bool of many": lambda T: bool(T.tensor([1., 2.])),
    })


def test_deterministic_flags():
    # test_deterministic_flag, test_deterministic_flag_warn_only, test_nondeterministic_alert_*
    # (tracegrad only: torch's first use_deterministic_algorithms(True) takes seconds; the expected
    # values are torch's documented ones)
    for T in (tracegrad,):
        before = (T.are_deterministic_algorithms_enabled(), T.is_deterministic_algorithms_warn_only_enabled())
        try:
            for mode, warn in ((True, False), (True, True), (False, False)):
                T.use_deterministic_algorithms(mode, warn_only=warn)
                assert T.are_deterministic_algorithms_enabled() is mode
                assert T.is_deterministic_algorithms_warn_only_enabled() is warn
            for mode, expect in (("default", 0), ("warn", 1), ("error", 2), (1, 1), (0, 0)):
                T.set_deterministic_debug_mode(mode)
                assert T.get_deterministic_debug_mode() == expect
            for bad, cls in (("sometimes", RuntimeError), (3, RuntimeError), (1.5, TypeError)):
                with pytest.raises(cls):
                    T.set_deterministic_debug_mode(bad)
            with pytest.raises(TypeError):
                T.use_deterministic_algorithms("yes")
        finally:
            T.use_deterministic_algorithms(before[0], warn_only=before[1])


# ---- assert_close -----------------------------------------------------------------------------
def test_assert_close_classes_and_messages():
    # test_testing.py's TestAssertClose behaviours that test_torch relies on
    def program(T, log):
        ac = T.testing.assert_close
        cases = {
            "equal": lambda: ac(T.tensor([1., 2.]), T.tensor([1., 2.])),
            "close": lambda: ac(T.tensor([1.]), T.tensor([1. + 1e-7])),
            "value mismatch": lambda: ac(T.tensor([1., 2., 3.]), T.tensor([1., 2.5, 3.])),
            "dtype mismatch": lambda: ac(T.tensor([1.]), T.tensor([1.], dtype=T.float64)),
            "dtype mismatch not checked": lambda: ac(T.tensor([1.]), T.tensor([1.], dtype=T.float64), check_dtype=False),
            "shape mismatch": lambda: ac(T.zeros(2), T.zeros(3)),
            "nan": lambda: ac(T.tensor([float("nan")]), T.tensor([float("nan")])),
            "nan equal_nan": lambda: ac(T.tensor([float("nan")]), T.tensor([float("nan")]), equal_nan=True),
            "rtol only": lambda: ac(T.tensor([1.]), T.tensor([1.]), rtol=0.1),
            "type mismatch": lambda: ac(T.tensor([1.]), np.array([1.], dtype=np.float32)),
            "scalars": lambda: ac(1.0, 1.0 + 1e-9),
            "scalar mismatch": lambda: ac(1, 2),
            "sequences": lambda: ac([T.zeros(1), T.ones(1)], [T.zeros(1), T.ones(1)]),
            "sequence length": lambda: ac([T.zeros(1)], [T.zeros(1), T.ones(1)]),
            "mapping keys": lambda: ac({"a": T.zeros(1)}, {"b": T.zeros(1)}),
            "int exact": lambda: ac(T.tensor([1]), T.tensor([2])),
            "msg string": lambda: ac(T.tensor([1.]), T.tensor([2.]), msg="custom"),
            "requires_grad mismatch": lambda: ac(T.zeros(1, requires_grad=True), T.zeros(1)),
            "bool": lambda: ac(T.tensor([True]), T.tensor([False])),
            "atol=0 rtol=0": lambda: ac(T.tensor([1.]), T.tensor([1. + 1e-6]), atol=0, rtol=0),
        }
        for name, fn in cases.items():
            try:
                fn()
                log(name, "ok")
            except Exception as e:  # noqa: BLE001 -- class and message lines compared
                lines = str(e).splitlines()
                log(name, [type(e).__name__, lines[0].replace("tracegrad.", "torch.") if lines else "",
                           [ln.split(":")[0].strip() for ln in lines[1:]]])
    run_both(program)


def test_assert_close_message_numbers():
    # the mismatch report names the count of mismatched elements and the greatest differences
    for T in (torch, tracegrad):
        with pytest.raises(AssertionError) as info:
            T.testing.assert_close(T.tensor([1., 2., 3., 4.]), T.tensor([1., 2.5, 3., 0.]))
        text = str(info.value)
        assert "Mismatched elements: 2 / 4 (50.0%)" in text
        assert "Greatest absolute difference: 4.0 at index (3,)" in text
        assert "Greatest relative difference: inf at index (3,)" in text


# ---- numpy interaction --------------------------------------------------------------------------
def test_numpy_scalars_and_arrays_with_tensors():
    # test_numpy_scalar_cmp, test_parse_numpy_int, test_ndarray_equal, __array_priority__ (test_torch
    # test_numpy_array_interface / test_multiplication_numpy_scalar)
    def program(T, log):
        t = T.tensor([1., 2.])
        i = T.tensor([1, 2])
        log("np.float64 * tensor", np.float64(2.0) * t)
        log("tensor * np.float64", t * np.float64(2.0))
        log("np.float32 + int tensor", np.float32(0.5) + i)
        log("np.int64 * float tensor", np.int64(3) * t)
        log("np.int64 - int tensor", np.int64(3) - i)
        log("np.float64 / tensor", np.float64(1.0) / t)
        log("np.float64 ** tensor", np.float64(2.0) ** t)
        log("np.float64 == tensor", np.float64(2.0) == t)
        log("np.float64 < tensor", np.float64(1.5) < t)
        log("tensor as index", np.arange(5)[T.tensor(2)])
        log("np.array(tensor)", np.array(t))
        log("np.asarray(tensor, float64)", np.asarray(t, dtype=np.float64))
        log("__array__ dtype", t.__array__(np.float64))
        log("np.sum(tensor)", float(np.sum(np.asarray(t))))
        log("tensor from np scalar", T.tensor(np.float32(2.5)))
        log("tensor from np int", T.tensor(np.int16(3)))
        log("full with np scalar", T.full((2,), np.float64(1.5)))
        log("tensor[np.int64]", t[np.int64(1)])
        log("reshape np ints", t.reshape(np.int64(2), np.int32(1)).shape)
        log("ones np int size", T.ones(np.int64(2)).shape)
        log("float(tensor)", float(T.tensor([3.5])))
        log("int(tensor)", int(T.tensor(3.9)))
        log("complex(tensor)", [complex(T.tensor(2.)).real, complex(T.tensor(2.)).imag])
        log("operator.index", [0, 1, 2][T.tensor(1)])
        log("np from int8", np.asarray(T.tensor([1], dtype=T.int8)).dtype.name)
        log("np from bool", np.asarray(T.tensor([True])).dtype.name)
    run_both(program)


def test_numpy_array_op_tensor_result_type():
    # ndarray op tensor: numpy's operator wins unless the tensor's priority takes over
    def program(T, log):
        t = T.tensor([1., 2.])
        out = t + np.array([1., 2.])
        log("tensor + ndarray type", type(out).__module__.split(".")[0] in ("torch", "tracegrad"))
        log("tensor + ndarray value", out)
        log("tensor + ndarray float64", (T.tensor([1, 2]) + np.array([0.5, 1.5])))
    run_both(program)


# ---- pickling / deepcopy ------------------------------------------------------------------------
def test_pickle_and_deepcopy():
    # test_pickle, test_pickle_parameter, test_pickle_size, test_pickle_dtype, test_pickle_gradscaler, test_deepcopy
    for T in (torch, tracegrad):
        a = T.tensor([[1.5, -2.], [3., 4.]], dtype=T.float64)
        b = pickle.loads(pickle.dumps(a))
        assert T.equal(a, b) and b.dtype == T.float64 and b.shape == (2, 2)
        v = a[:, 1]
        vb = pickle.loads(pickle.dumps(v))
        assert vb.tolist() == [-2., 4.]
        p = T.nn.Parameter(T.ones(2))
        pb = pickle.loads(pickle.dumps(p))
        assert isinstance(pb, T.nn.Parameter) and pb.requires_grad
        q = T.nn.Parameter(T.ones(2), requires_grad=False)
        assert pickle.loads(pickle.dumps(q)).requires_grad is False
        r = T.ones(2, requires_grad=True)
        assert pickle.loads(pickle.dumps(r)).requires_grad
        s = pickle.loads(pickle.dumps(T.Size([2, 3])))
        assert s == T.Size([2, 3]) and isinstance(s, T.Size)
        for d in (T.float32, T.int8, T.bool, T.complex64, T.bfloat16):
            assert pickle.loads(pickle.dumps(d)) is d
        assert pickle.loads(pickle.dumps(T.device("cpu"))) == T.device("cpu")
        nl = pickle.loads(pickle.dumps(r * 2))  # a non-leaf loads as a leaf that requires grad
        assert nl.is_leaf and nl.requires_grad and nl.grad_fn is None and nl.tolist() == [2., 2.]
        r.grad = T.ones(2)
        assert pickle.loads(pickle.dumps(r)).grad is None  # .grad is not pickled
        wide = pickle.loads(pickle.dumps(T.tensor([2 ** 40, -3])))
        assert wide.dtype == T.int64 and wide.tolist() == [2 ** 40, -3]
        both_ = pickle.loads(pickle.dumps((a, a)))
        assert both_[0] is both_[1]
        c = copy.deepcopy(a)
        assert T.equal(c, a) and c.data_ptr() != a.data_ptr()
        pair = copy.deepcopy([v, a])  # views keep sharing the deep-copied base
        pair[1][0, 1] = 100.
        assert pair[0][0].item() == 100.
        g = T.ones(2, requires_grad=True)
        g.grad = T.full((2,), 3.)
        gc = copy.deepcopy(g)
        assert gc.requires_grad and gc.grad.tolist() == [3., 3.]
        with pytest.raises(RuntimeError):
            copy.deepcopy(g * 2)


# ---- repr of special values -------------------------------------------------------------------
def test_repr_special_values():
    # test_print (special values, sci mode, ints, complex, empty)
    def program(T, log):
        for data in ([float("nan"), float("inf"), float("-inf"), 0.],
                     [1e-10, 1e10], [1e-5, 1.], [-0.0, 0.0], [1e20, -1e20, float("nan")],
                     [123456789.], [0.1, 0.25, 1 / 3], [1e308]):
            print(repr(T.tensor(data)).replace("tracegrad", "torch"))
            print(repr(T.tensor(data, dtype=T.float64)).replace("tracegrad", "torch"))
        print(repr(T.tensor([2 ** 62, -5])).replace("tracegrad", "torch"))
        print(repr(T.tensor([], dtype=T.int32).reshape(0, 3)).replace("tracegrad", "torch"))
        print(repr(T.tensor([float("nan") + 1j, 1 - 2j])).replace("tracegrad", "torch"))
        print(repr(T.tensor(float("nan"), requires_grad=True)).replace("tracegrad", "torch"))
        print(repr(T.tensor([True, False])).replace("tracegrad", "torch"))
        print(repr(T.tensor([1.5], dtype=T.float16)).replace("tracegrad", "torch"))
        print(repr(T.tensor([1.5, float("inf")], dtype=T.bfloat16)).replace("tracegrad", "torch"))
        print(repr(T.arange(2000.)).replace("tracegrad", "torch"))
    run_both(program)


# ---- new_* --------------------------------------------------------------------------------------
def test_new_methods():
    # test_new, test_new_methods_requires_grad, test_tensor_factories_empty (new_* inherit dtype)
    base = lambda T: T.tensor([1, 2], dtype=T.int16)  # noqa: E731
    run_cases({
        "new_zeros": lambda T: base(T).new_zeros(2, 3),
        "new_zeros tuple": lambda T: base(T).new_zeros((2,)),
        "new_ones dtype": lambda T: base(T).new_ones(2, dtype=T.float64),
        "new_full": lambda T: base(T).new_full((2,), 7),
        "new_full float value int dtype": lambda T: base(T).new_full((2,), 7.9),
        "new_empty shape dtype": lambda T: (lambda e: (dt(e.dtype), tuple(e.shape)))(base(T).new_empty(3, 1)),
        "new_tensor": lambda T: base(T).new_tensor([1.7, 2.2]),
        "new_tensor dtype": lambda T: base(T).new_tensor([1, 2], dtype=T.float32),
        "new_tensor from tensor": lambda T: base(T).new_tensor(T.tensor([0.5])),
        "new_tensor requires_grad": lambda T: T.zeros(1).new_tensor([1.], requires_grad=True).requires_grad,
        "new_zeros requires_grad": lambda T: T.zeros(1).new_zeros(2, requires_grad=True).requires_grad,
        "new_ones int requires_grad": lambda T: base(T).new_ones(2, requires_grad=True),
        "new_zeros from grad tensor": lambda T: T.zeros(1, requires_grad=True).new_zeros(2).requires_grad,
        "new_empty_strided": lambda T: T.zeros(1).new_empty_strided((2, 3), (1, 2)).stride(),
        "new() empty": lambda T: (lambda e: (dt(e.dtype), tuple(e.shape)))(base(T).new()),
        "new sizes": lambda T: (lambda e: (dt(e.dtype), tuple(e.shape)))(T.zeros(1, dtype=T.float64).new(2, 3)),
        "new list": lambda T: T.zeros(1, dtype=T.float64).new([1, 2]),
        "new_full bad size": lambda T: base(T).new_full(2, 1),
        "new_zeros negative": lambda T: base(T).new_zeros(-1),
    })


# ---- small tensor API corners ------------------------------------------------------------------
def test_tensor_metadata_and_python_callables():
    # test_element_size, test_is_storage / test_storage, test_apply / test_map, test_dim_order,
    # test_isposinf_isneginf (complex refused), test_sum_to_size, test_broadcast_shapes
    run_cases({
        "element_size": lambda T: [T.zeros(1, dtype=d).element_size() for d in (T.float16, T.int32, T.complex128, T.bool)],
        "nbytes/itemsize": lambda T: [T.zeros(3, dtype=T.float64).nbytes, T.zeros(3, dtype=T.int16).itemsize],
        "is_tensor/is_storage": lambda T: [T.is_tensor(T.zeros(1)), T.is_tensor(1), T.is_storage(T.zeros(1).untyped_storage()),
                                           T.is_storage(T.zeros(1))],
        "apply_": lambda T: T.tensor([1., 2.]).apply_(lambda v: v * 3),
        "apply_ int": lambda T: T.tensor([1, 2]).apply_(lambda v: v - 5),
        "map_": lambda T: T.tensor([[1., 2.], [3., 4.]]).map_(T.tensor([10., 20.]), lambda a, b: a + b),
        "dim_order": lambda T: [T.zeros(2, 3, 4).permute(2, 0, 1).dim_order(), T.zeros(2, 3).dim_order()],
        "isposinf complex": lambda T: T.isposinf(T.tensor([1j])),
        "isneginf complex": lambda T: T.isneginf(T.tensor([1j])),
        "isneginf int": lambda T: T.isneginf(T.tensor([1])),
        "sum_to_size": lambda T: T.arange(6.).reshape(2, 3).sum_to_size(1, 3),
        "sum_to_size bad": lambda T: T.arange(6.).reshape(2, 3).sum_to_size(2, 2),
        "broadcast_shapes": lambda T: T.broadcast_shapes((2, 1), (1, 3), ()),
        "broadcast_shapes bad": lambda T: T.broadcast_shapes((2, 3), (4,)),
        "item of many": lambda T: T.tensor([1, 2]).item(),
    })


def test_tensor_attributes_conversions_and_containment():
    # test_storage / test_data_ptr, test_type, test_copy_ (non_blocking, overlap), test_to, test_T / test_H,
    # test_size, test_contains, test_numpy (requires_grad, force), test_tensor_from_list_of_tensors
    run_cases({
        "storage size": lambda T: [T.zeros(3, dtype=T.float64).storage().size(), T.zeros(3).storage().element_size(),
                                   T.zeros(3, dtype=T.int16).untyped_storage().nbytes()],
        "view storage shared": lambda T: (lambda a: a[1:].untyped_storage().data_ptr() == a.untyped_storage().data_ptr())(T.zeros(3)),
        "data_ptr offset": lambda T: (lambda a: a[1:].data_ptr() - a.data_ptr())(T.zeros(3)),
        "is_pinned": lambda T: T.zeros(2).is_pinned(),
        "type() of view": lambda T: T.zeros(2, dtype=T.int8)[1:].type().replace("tracegrad", "torch"),
        "type_as int to float": lambda T: T.tensor([1, 2]).type_as(T.zeros(1, dtype=T.float16)),
        "copy_ non_blocking": lambda T: T.zeros(2).copy_(T.ones(2), non_blocking=True),
        "copy_ requires_grad src": lambda T: T.zeros(2).copy_(T.ones(2, requires_grad=True)).requires_grad,
        "copy_ into leaf requiring grad": lambda T: T.zeros(2, requires_grad=True).copy_(T.ones(2)),
        "copy_ partial overlap": lambda T: (lambda x: x[1:].copy_(x[:-1]))(T.arange(4.)),
        "to(other, non_blocking)": lambda T: T.zeros(2).to(T.ones(1, dtype=T.float64), non_blocking=True),
        "double().requires_grad": lambda T: T.zeros(2, requires_grad=True).double().requires_grad,
        "int().requires_grad": lambda T: T.zeros(2, requires_grad=True).int().requires_grad,
        "detach().requires_grad_": lambda T: T.zeros(2).detach().requires_grad_().is_leaf,
        "requires_grad_ int": lambda T: T.zeros(2, dtype=T.int64).requires_grad_(),
        "tensor grad int": lambda T: T.tensor([1], requires_grad=True),
        "T of 1d": lambda T: T.arange(3).T,
        "H": lambda T: T.tensor([[1j, 2]]).H.resolve_conj(),
        "mH": lambda T: T.tensor([[[1j, 2]]]).mH.shape,
        "ndim/dim/ndimension": lambda T: [T.zeros(2, 3).ndim, T.zeros(2, 3).dim(), T.zeros(2, 3).ndimension()],
        "nelement": lambda T: T.zeros(2, 3).nelement(),
        "size(dim) neg": lambda T: T.zeros(2, 3).size(-1),
        "size(dim) bad": lambda T: T.zeros(2, 3).size(2),
        "shape index bad": lambda T: T.zeros(2, 3).shape[5],
        "len 0-d": lambda T: len(T.tensor(1.)),
        "iter 0-d": lambda T: list(T.tensor(1.)),
        "contains": lambda T: [2 in T.tensor([1, 2]), 5 in T.tensor([1, 2]), T.tensor(2) in T.tensor([1, 2])],
        "contains bad": lambda T: "a" in T.tensor([1, 2]),
        "bool empty": lambda T: bool(T.tensor([])),
        "int of float many": lambda T: int(T.tensor([1.5, 2.])),
        "index of float": lambda T: [1, 2][T.tensor(1.)],
        "rounding of half tolist": lambda T: T.tensor([0.1], dtype=T.float16).tolist(),
        "numpy of requires_grad": lambda T: T.zeros(1, requires_grad=True).numpy(),
        "numpy(force)": lambda T: T.zeros(1, requires_grad=True).numpy(force=True),
        "from_numpy non-writable": lambda T: T.from_numpy(np.arange(3)),
        "as_tensor list": lambda T: T.as_tensor([1, 2.5]),
        "tensor of tensors list": lambda T: T.tensor([T.tensor(1.), T.tensor(2.)]),
    })


def test_copy_of_non_tensor_refused():
    run_cases({"copy_ list": lambda T: T.zeros(2).copy_([1., 2.])})
