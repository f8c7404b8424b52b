"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Ported from PyTorch's test/test_autograd.py (TestAutograd): the engine-level API --
``autograd.grad``/``backward`` arguments and their errors, ``is_grads_batched``, gradient
accumulation and ``.grad`` identity, retain_graph, version counters and leaf in-place errors,
``requires_grad`` rules, attribute deletion, ``next_functions``, grad modes and anomaly mode.
Each body runs under torch 2.13 (the oracle) and tracegrad through the ``T`` fixture; each test
names its original. Tests already ported in the neighbouring files (hooks, custom Functions,
grad_nonleaf*, backward(inputs=...), GradientEdge, generators under grad modes, inference mode)
are not repeated here.

Not ported: CUDA/device tests, sparse gradients (the sparse halves of
test_accumulate_grad_tensor_reference and test_sparse_*), forward-mode AD (ported in
test_autograd_forward_mode_ported.py), the profiler, checkpointing, reentrant/multithreaded backward, and
``Tensor.volatile``/``_backward_hooks``/``_grad_fn`` (legacy or private attributes tracegrad does
not have), test_mul_out* (tracegrad ops take no ``out=``), test_nested_anomaly_detect_nan (the
"Previous calculation was induced by" parent traces) and the non-Tensor *output* check of
``autograd.grad`` (torch raises a bare AssertionError there; tracegrad a TypeError).
"""
import warnings

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def test_grad_outputs_must_be_tensors_or_none(T):
    # torch.autograd.grad's _make_grads check: a Python number is not a gradient
    x = T.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        T.autograd.grad((x * 2).sum(), x, grad_outputs=[3.0])
    # None stands for ones on a scalar output, next to a real gradient
    (g,) = T.autograd.grad([x.sum(), (x * 2).sum()], x, grad_outputs=[None, T.tensor(3.0)])
    assert _np(g).tolist() == [7.0, 7.0]


def test_grad_only_inputs_is_deprecated(T):
    # torch.autograd.grad: only_inputs=False warns (FutureWarning) and is otherwise ignored
    x = T.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (g,) = T.autograd.grad((x * 3).sum(), x, only_inputs=False)
    assert _np(g).tolist() == [3.0, 3.0] and x.grad is None
    assert [w.category for w in seen if "only_inputs argument is deprecated" in str(w.message)] == [FutureWarning]


@pytest.mark.parametrize("shape", [(3,), (3, 3)])
def test_grad_is_grads_batched_shape_error(T, shape):
    # torch.autograd.grad(is_grads_batched=True): the first dim is the batch, the rest must be
    # the output's shape
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"If `is_grads_batched=True`, we interpret the first dimension"):
        T.autograd.grad(x * 2, x, T.ones(*shape), is_grads_batched=True)


def test_retain_grad_requires_grad(T):
    # Tensor.retain_grad on a tensor that does not require grad is an error
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        T.ones(2).retain_grad()


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_set_grad_enabled_requires_bool(T, bad):
    # torch.set_grad_enabled(mode): mode must be a bool (TypeError), and the mode is unchanged
    with pytest.raises(TypeError, match="must be bool"):
        T.set_grad_enabled(bad)
    assert T.is_grad_enabled()


@pytest.mark.parametrize("via", ["grad", "backward"])
def test_grad_output_dtype(T, via):
    # torch's _make_grads / validate_outputs: a real grad_output of another dtype is cast (the
    # gradient comes back in the input's dtype); a complex one must match the output exactly
    x = T.ones(2, requires_grad=True)
    go = T.tensor([1.0, 2.0], dtype=T.float64)
    if via == "grad":
        (g,) = T.autograd.grad(x * 2, x, go)
    else:
        (x * 2).backward(go)
        g = x.grad
    assert g.dtype == T.float32 and _np(g).tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="For complex Tensors, both grad_output and output are required to "
                                           "have the same dtype"):
        if via == "grad":
            T.autograd.grad(x * 2, x, T.ones(2, dtype=T.complex64))
        else:
            (x * 2).backward(T.ones(2, dtype=T.complex64))


def test_grad_dict_inputs(T):
    # torch.autograd.grad (2.13): inputs given as a dict give the gradients back keyed the same;
    # another Mapping type is a TypeError
    from collections import OrderedDict
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([3.0], requires_grad=True)
    out = (x * y).sum()
    res = T.autograd.grad(out, {"y": y, "x": x}, retain_graph=True)
    assert type(res) is dict and list(res) == ["y", "x"]
    assert _np(res["x"]).tolist() == [3.0, 3.0] and _np(res["y"]).tolist() == [3.0]
    with pytest.raises(TypeError, match="must be a dict, not OrderedDict"):
        T.autograd.grad(out, OrderedDict(x=x))


@pytest.mark.parametrize("via", ["grad", "backward"])
def test_gradient_count(T, via):
    # torch.autograd.grad / backward: fewer gradients than outputs is an error naming both
    # counts; extra ones are ignored (torch pairs them with zip)
    x = T.ones(2, requires_grad=True)
    call = (lambda outs, gs: T.autograd.grad(outs, x, gs, retain_graph=True)) if via == "grad" else \
        (lambda outs, gs: T.autograd.backward(outs, gs, retain_graph=True))
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        call([x * 2, x * 3], [T.ones(2)])
    call([x * 2], [T.ones(2), T.ones(5)])


def test_set_data_shares_the_value_storage(T):
    # torch's set_data: ``p.data = v`` makes ``p`` share ``v``'s storage (a view of it where
    # ``v`` is one), keeping its own version counter
    p = T.nn.Parameter(T.zeros(3))
    v = T.ones(3)
    p.data = v
    v.add_(1)
    assert _np(p).tolist() == [2.0, 2.0, 2.0] and p._version == 0
    w = T.arange(6.0)
    p.data = w[2:5]
    w.mul_(10)
    assert _np(p).tolist() == [20.0, 30.0, 40.0] and p.storage_offset() == 2 and p._base is None
    p.data -= 1
    assert _np(w).tolist() == [0.0, 10.0, 19.0, 29.0, 39.0, 50.0]
    assert p.requires_grad and p.is_leaf


