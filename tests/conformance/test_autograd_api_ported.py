"""Ported from PyTorch's test/test_autograd.py (TestAutograd): the engine-level API --
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


# ---- autograd.grad arguments ---------------------------------------------------------------
def test_grad_unreachable_names_the_index(T):
    # TestAutograd.test_grad_unreachable: with and without a grad accumulator allocated for the
    # unused input; allow_unused=False names it (torch 2.13 gives its index)
    x = T.ones(1, requires_grad=True)
    y = T.ones(1, requires_grad=True)
    _ = y * 2            # y now has a grad accumulator
    gx, gy = T.autograd.grad(x * 2, [x, y], allow_unused=True)
    assert _np(gx).tolist() == [2.0] and gy is None
    z = T.ones(1, requires_grad=True)
    gx, gz = T.autograd.grad(x * 2, [x, z], allow_unused=True)
    assert _np(gx).tolist() == [2.0] and gz is None
    with pytest.raises(RuntimeError, match="at index 1 appears to not have been used in the graph. "
                                           "Set allow_unused=True"):
        T.autograd.grad(x * 2, [x, y], allow_unused=False)


@pytest.mark.parametrize("via", ["grad", "backward"])
def test_inputs_must_be_tensors(T, via):
    # torch.autograd.grad / backward(inputs=...) argument check ("all inputs have to be Tensors
    # or GradientEdges"); TestAutograd.test_grad_badcalls-style bad input
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="all inputs have to be Tensors or GradientEdges, but got int"):
        if via == "grad":
            T.autograd.grad((x * 2).sum(), [x, 3])
        else:
            (x * 2).sum().backward(inputs=[x, 3])


def test_grad_outputs_must_be_tensors_or_none(T):
    # torch.autograd.grad's _make_grads check: a Python number is not a gradient
    x = T.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got float"):
        T.autograd.grad((x * 2).sum(), x, grad_outputs=[3.0])
    # None stands for ones on a scalar output, next to a real gradient
    (g,) = T.autograd.grad([x.sum(), (x * 2).sum()], x, grad_outputs=[None, T.tensor(3.0)])
    assert _np(g).tolist() == [7.0, 7.0]


def test_grad_shape_mismatch_message(T):
    # TestAutograd.test_grad (last part): the exact message, scalar output included
    x = T.ones(2, 2, requires_grad=True)
    s = (x * x).sum(0)
    go = T.ones(3)
    with pytest.raises(RuntimeError) as e:
        T.autograd.grad(outputs=[s], grad_outputs=[go], inputs=[x])
    assert str(e.value) == ("Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and "
                            "output[0] has a shape of torch.Size([2]).")
    with pytest.raises(RuntimeError, match=r"has a shape of torch.Size\(\[1\]\) and output\[0\] has a "
                                           r"shape of torch.Size\(\[\]\)"):
        T.autograd.grad(x.sum(), x, grad_outputs=T.ones(1))


def test_grad_only_inputs_is_deprecated(T):
    # torch.autograd.grad: only_inputs=False warns (FutureWarning) and is otherwise ignored
    x = T.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (g,) = T.autograd.grad((x * 3).sum(), x, only_inputs=False)
    assert _np(g).tolist() == [3.0, 3.0] and x.grad is None
    assert [w.category for w in seen if "only_inputs argument is deprecated" in str(w.message)] == [FutureWarning]


def test_grad_is_grads_batched(T):
    # TestAutograd.test_grad_batched_grad-style: each row of the batched grad_outputs gives one
    # vector-Jacobian product, equal to separate autograd.grad calls
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    y = x.exp() * x.sum()
    v = T.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0.5, -1.0, 3.0]], dtype=T.float64)
    (batched,) = T.autograd.grad(y, x, v, retain_graph=True, is_grads_batched=True)
    rows = [T.autograd.grad(y, x, v[i], retain_graph=True)[0] for i in range(4)]
    assert tuple(batched.shape) == (4, 3)
    np.testing.assert_allclose(_np(batched), np.stack([_np(r) for r in rows]), rtol=1e-12)
    # with create_graph the rows stay differentiable
    (jac,) = T.autograd.grad(y, x, T.eye(3, dtype=T.float64), create_graph=True, is_grads_batched=True)
    (gg,) = T.autograd.grad(jac.trace(), x)
    xs = _np(x)
    # d/dx_k sum_i d y_i / d x_i = d/dx_k sum_i e^{x_i}(s + 1) = e^{x_k}(s + 1) + sum_i e^{x_i}
    np.testing.assert_allclose(_np(gg), np.exp(xs) * (xs.sum() + 1) + np.exp(xs).sum(), rtol=1e-12)


@pytest.mark.parametrize("shape", [(3,), (3, 3)])
def test_grad_is_grads_batched_shape_error(T, shape):
    # torch.autograd.grad(is_grads_batched=True): the first dim is the batch, the rest must be
    # the output's shape
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"If `is_grads_batched=True`, we interpret the first dimension"):
        T.autograd.grad(x * 2, x, T.ones(*shape), is_grads_batched=True)


# ---- backward -------------------------------------------------------------------------------
def test_backward_create_graph_warns(T):
    # TestAutograd.test_backward_create_graph_warns: backward(create_graph=True) warns about the
    # parameter <-> gradient reference cycle; autograd.grad does not
    prev = T.is_warn_always_enabled()
    T.set_warn_always(True)   # both warn once per process otherwise (torch's TORCH_WARN_ONCE)
    try:
        b = T.tensor([0.5, 1.0, 2.0], requires_grad=True)
        c = b * b
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            c.backward(T.ones_like(c), create_graph=True)
        b.grad = None
        assert any("Using backward() with create_graph=True" in str(w.message) for w in seen)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            T.autograd.grad(c, b, T.ones_like(c), create_graph=True)
        assert not any("Using backward() with create_graph=True" in str(w.message) for w in seen)
    finally:
        T.set_warn_always(prev)


@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulate_grad(T, create_graph):
    # TestAutograd.test_accumulate_grad: in place without create_graph (the first .grad object
    # sees the sum), out of place with it (the first object keeps its value)
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x + 2
    go = T.ones(2, 2)
    y.backward(go, retain_graph=True)
    first, first_value = x.grad, _np(x.grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y.backward(go, create_graph=create_graph)
    np.testing.assert_allclose(_np(first), first_value * (1 if create_graph else 2))
    np.testing.assert_allclose(_np(x.grad), first_value * 2)


@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulate_grad_tensor_reference(T, create_graph):
    # TestAutograd.test_accumulate_grad_tensor_reference (dense half): a dense .grad keeps its
    # identity across accumulation only when create_graph=False
    params = T.tensor([1.5, 1.5]).requires_grad_()
    params.grad = T.tensor([1.5, 1.5])
    saved = params.grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params.backward(T.tensor([1.5, 1.5]), create_graph=create_graph)
    assert (saved is params.grad) == (not create_graph)
    assert _np(params.grad).tolist() == [3.0, 3.0]


def test_duplicate_backward_root(T):
    # TestAutograd.test_duplicate_backward_root: the same root twice sums its gradients
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, -1.0], requires_grad=True)
    x = a * b
    go = T.tensor([0.5, 2.0])
    T.autograd.backward([x, x], [go, go])
    assert _np(a.grad).tolist() == [3.0, -4.0]
    assert _np(b.grad).tolist() == [1.0, 8.0]


def test_backward_no_grad(T):
    # TestAutograd.test_backward_no_grad: a None gradient for a non-scalar root is an error
    a = T.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        T.autograd.backward([a + 2], [None])


def _index_put_graph(T):
    b = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    c = T.zeros(3, dtype=T.float64)
    c[[1, 2]] = b[[1, 1]]
    return b, c


def test_backward_twice_with_saved_values(T):
    # TestAutograd.test_backward_twice_with_saved_values: the indexing nodes saved their
    # indices, so a second backward without retain_graph is an error
    b, c = _index_put_graph(T)
    c.backward(T.ones(3, dtype=T.float64))
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(T.ones(3, dtype=T.float64))


@pytest.mark.parametrize("saved", [True, False])
def test_backward_twice_retained_or_without_saved_values(T, saved):
    # TestAutograd.test_backward_twice_retained_graph_with_saved_values /
    # test_backward_twice_without_saved_values / test_backward_twice_retained_graph_without_saved_values
    if saved:
        b, c = _index_put_graph(T)
        c.backward(T.ones(3, dtype=T.float64), retain_graph=True)
    else:
        b = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
        c = b + 1
        c.backward(T.ones(3, dtype=T.float64))   # nothing saved: no retain_graph needed
    c.backward(T.ones(3, dtype=T.float64))
    assert _np(b.grad).tolist() == ([0.0, 4.0, 0.0] if saved else [2.0, 2.0, 2.0])


def test_backward_twice_through_saved_tensor_message(T):
    # TestAutograd.test_retain_graph-family: the message explains retain_graph; reading a
    # saved tensor of a freed node raises the same error
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn._saved_self


def test_next_functions(T):
    # TestAutograd.test_next_functions
    x = T.ones(2, 2, requires_grad=True)
    y = T.ones(2, 2, requires_grad=True)
    a = x + y
    nf = a.grad_fn.next_functions
    assert len(nf) == 2
    assert [type(n).__name__ for n, _ in nf] == ["AccumulateGrad", "AccumulateGrad"]
    assert [i for _, i in nf] == [0, 0]
    assert nf[0][0].variable is x and nf[1][0].variable is y
    b = a + 5
    assert len(b.grad_fn.next_functions) == 2
    assert b.grad_fn.next_functions[0][0] is a.grad_fn
    assert b.grad_fn.next_functions[1][0] is None


def test_grad_fn_badcalls(T):
    # TestAutograd.test_grad_fn_badcalls: calling a node checks the number of gradients
    x = T.ones(1, requires_grad=True)
    y = x ** 2
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn()
    assert _np(y.grad_fn(x.detach())).tolist() == [2.0]


def test_sum_to_with_empty_dim_grad(T):
    # TestAutograd.test_sum_to_with_empty_dim_grad
    a = T.ones(4, 0, requires_grad=True)
    b = T.ones(4, 1, requires_grad=True)
    c = a + b
    assert tuple(c.shape) == (4, 0)
    c.sum().backward()
    assert tuple(a.grad.shape) == (4, 0)
    assert _np(b.grad).tolist() == [[0.0]] * 4


def test_unbind_one_gradient(T):
    # TestAutograd.test_unbind: backward through all outputs, and grad from one output only
    stacked = T.arange(12.0).reshape(3, 2, 2).requires_grad_()
    go = T.arange(12.0).reshape(3, 2, 2) * 0.5
    T.autograd.backward(list(stacked.unbind()), list(go.unbind()))
    np.testing.assert_allclose(_np(stacked.grad), _np(go))
    for i in range(3):
        outs = stacked.unbind()
        (g,) = T.autograd.grad(outs[i], stacked, go[i])
        want = np.zeros((3, 2, 2))
        want[i] = _np(go[i])
        np.testing.assert_allclose(_np(g), want)


# ---- in-place and version counters ----------------------------------------------------------
def test_inplace(T):
    # TestAutograd.test_inplace: whether an in-place change breaks a backward depends on what
    # each node saved
    x = T.ones(2, 2, requires_grad=True)
    y = (T.ones(2, 2) * 4).requires_grad_()
    ones = T.ones(2, 2)
    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(ones, retain_graph=True)          # add saved nothing
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward(ones)                          # mul saved z
    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(ones, retain_graph=True)           # w is the latest version
    r.backward(ones, retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(ones)
    with T.no_grad():
        x.grad.zero_()
    m = x / 2
    z = m + y / 8
    q = z * y
    r = z + y
    prev = z._version
    w = z.exp_()
    assert z._version != prev
    r.backward(ones, retain_graph=True)
    np.testing.assert_allclose(_np(x.grad), np.full((2, 2), 0.5))
    w.backward(ones, retain_graph=True)           # d exp(x/2 + 1/2)/dx at x=1 is e/2
    np.testing.assert_allclose(_np(x.grad), np.full((2, 2), (1 + np.e) / 2), rtol=1e-6)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        q.backward(ones)
    leaf = T.ones(2, 2, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    assert _np(x).tolist() == [[11.0, 11.0]] * 2
    (x + 2).backward(ones)
    assert _np(leaf.grad).tolist() == [[1.0, 1.0]] * 2
    z = x * (x + 2)
    x.add_(2)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 1 instead"):
        z.backward(ones)


@pytest.mark.parametrize("write", ["add_", "copy_", "setitem_view", "view_mul_"])
def test_leaf_inplace_errors(T, write):
    # TestAutograd.test_no_requires_grad_inplace (last part) / test_leaf_assignment-style: a
    # leaf that requires grad (or a view of it) cannot be written in place under grad mode
    a = T.zeros(2, 3, requires_grad=True)
    fn = {"add_": lambda: a.add_(5), "copy_": lambda: a.copy_(T.ones(2, 3)),
          "setitem_view": lambda: a.__setitem__(0, 3.0), "view_mul_": lambda: a[:].mul_(2)}[write]
    want = ("a leaf Variable that requires grad is being used in an in-place operation."
            if write in ("add_", "copy_") else
            "a view of a leaf Variable that requires grad is being used in an in-place operation.")
    with pytest.raises(RuntimeError, match=want):
        fn()
    with T.no_grad():        # allowed without grad mode
        fn()
    assert a.is_leaf and a.requires_grad


def test_no_requires_grad_inplace(T):
    # TestAutograd.test_no_requires_grad_inplace: writes before requires_grad is set are fine,
    # also through a view; a view taken before then still counts as a view of the leaf
    a = T.zeros(2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert _np(a.grad).tolist() == [[1.0] * 3] * 2
    a = T.zeros(2, 3)
    b = a[:]
    b.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert _np(a.grad).tolist() == [[1.0] * 3] * 2
    a = T.zeros(2, 3)
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError):
        a.add_(5)
    with pytest.raises(RuntimeError):
        b.add_(5)


def test_requires_grad_inplace(T):
    # TestAutograd.test_requires_grad_inplace: an in-place op with an input that requires grad
    # makes the written tensor require grad (leaf or not)
    for a in (T.zeros(2, 2), T.zeros(2, 2) + 0):
        b = T.ones(2, 2, requires_grad=True)
        a += b
        assert a.requires_grad and not a.is_leaf
        (a * 3).sum().backward()
        assert _np(b.grad).tolist() == [[3.0, 3.0]] * 2


def test_index_backward_does_not_save_tensor(T):
    # TestAutograd.test_index_backward_does_not_save_tensor: indexing does not save the indexed
    # tensor, so writing into it afterwards does not break backward
    a = T.tensor([1.0, 0.0, 0.0])
    b = T.zeros(3, requires_grad=True)
    t = b + 0
    t[a != 0] = t[a != 0]
    t.backward(T.zeros_like(t))
    assert _np(b.grad).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("index", [1, (slice(None), [1, 3]), [[0, 2]]])
def test_setitem(T, index):
    # TestAutograd.test_setitem / _test_setitem_tensor: writing a constant cuts the gradient at
    # the written places; writing a tensor sends it there
    x = T.ones(4, 4, requires_grad=True)
    y = x + 2
    v = y._version
    y[index] = 2
    assert y._version != v
    y.backward(T.ones(4, 4))
    want = np.ones((4, 4))
    want[index] = 0
    np.testing.assert_allclose(_np(x.grad), want)
    x = T.ones(4, 4, requires_grad=True)
    y = x + 2
    value = T.full(tuple(y[index].shape), 7.0, requires_grad=True)
    y[index] = value
    y.backward(T.ones(4, 4))
    np.testing.assert_allclose(_np(x.grad), want)
    assert _np(value.grad).tolist() == np.ones(tuple(value.shape)).tolist()


def test_setitem_broadcast_value(T):
    # TestAutograd._test_setitem_tensor (last case): the written value broadcasts, its gradient
    # sums back to its own shape
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = T.zeros(2, 3, 4)
    y[1] = x
    y.backward(T.arange(24.0).reshape(2, 3, 4))
    assert _np(x.grad).tolist() == [12 + 16 + 20 + k * 3 for k in range(4)] and tuple(x.grad.shape) == (4,)


# ---- requires_grad ---------------------------------------------------------------------------
def test_requires_grad_(T):
    # TestAutograd.test_requires_grad_: returns self; a non-leaf refuses False but accepts True
    x = T.ones(2, 2)
    y = T.ones(2, 2, requires_grad=True)
    assert x.requires_grad_() is x and x.requires_grad
    assert y.requires_grad_() is y and y.requires_grad
    assert x.requires_grad_(True) is x and x.requires_grad
    z = x * y
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert z.requires_grad_(True) is z and z.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert y.requires_grad_(False) is y and not y.requires_grad


def test_requires_grad(T):
    # TestAutograd.test_requires_grad: requires_grad propagates through ops; backward reaches
    # only what requires grad
    x = T.ones(2, 2)
    y = T.ones(2, 2)
    z = T.ones(2, 2, requires_grad=True)
    a = x + y
    assert not a.requires_grad
    b = a + z
    assert b.requires_grad
    b.backward(T.ones(2, 2))
    assert x.grad is None and y.grad is None and _np(z.grad).tolist() == [[1.0, 1.0]] * 2


@pytest.mark.parametrize("how", ["factory", "requires_grad_", "attribute"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_requires_grad_needs_floating_dtype(T, how, dtype):
    # TestAutograd.test_requires_grad_factory / integer-tensor checks: only floating point
    # (and complex) tensors can require gradients
    dt = getattr(T, dtype)
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        if how == "factory":
            T.zeros(2, dtype=dt, requires_grad=True)
        elif how == "requires_grad_":
            T.zeros(2, dtype=dt).requires_grad_()
        else:
            T.zeros(2, dtype=dt).requires_grad = True
    assert not T.zeros(2, dtype=dt).requires_grad_(False).requires_grad


def test_integer_outputs_do_not_require_grad(T):
    # TestAutograd.test_integer_outputs: integer and bool results of differentiable inputs
    x = T.tensor([1.0, 3.0, 2.0], requires_grad=True)
    for out in (x.argmax(), x > 1, x.long(), T.argsort(x)):
        assert not out.requires_grad and out.grad_fn is None


def test_attribute_deletion(T):
    # TestAutograd.test_attribute_deletion (the public attributes)
    x = T.ones(2, 2, requires_grad=True)
    (x * 2).sum().backward()
    del x.grad
    assert x.grad is None
    with pytest.raises(RuntimeError):
        del x.data
    with pytest.raises(TypeError):
        x.data = None
    with pytest.raises(RuntimeError):
        del x.requires_grad
    assert x.requires_grad and tuple(x.shape) == (2, 2)


def test_nonleaf_grad_access_warns(T):
    # TestAutograd.test_tensor_grad_warnings: .grad of a non-leaf that does not retain it warns
    # (and is None); no warning for a leaf or after retain_grad
    x = T.ones(2, requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert y.grad is None
    assert any("is not a leaf Tensor is being accessed" in str(w.message) for w in seen)
    y.retain_grad()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert y.grad is None and x.grad is None
    assert not any("not a leaf" in str(w.message) for w in seen)


def test_retain_grad(T):
    # TestAutograd.test_retain_grad: retain_grad may be called twice, accumulates across
    # backwards, and is a no-op on a leaf
    inp = T.tensor([[0.5, 1.0, -2.0]], requires_grad=True)
    h1 = inp * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()
    out.backward(retain_graph=True)
    np.testing.assert_allclose(_np(h1.grad), _np(h1) * 2)
    out.backward(retain_graph=True)
    np.testing.assert_allclose(_np(h1.grad), _np(h1) * 4)
    with T.no_grad():
        inp.grad.zero_()
    inp.retain_grad()
    inp.retain_grad()
    out.backward()
    np.testing.assert_allclose(_np(inp.grad), _np(inp) * 18)


def test_retain_grad_requires_grad(T):
    # Tensor.retain_grad on a tensor that does not require grad is an error
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        T.ones(2).retain_grad()


# ---- grad modes -------------------------------------------------------------------------------
def test_no_grad(T):
    # TestAutograd.test_no_grad: results made under no_grad (block or decorator) have no graph;
    # the decorator nests inside the block
    x = T.ones(2, 2, requires_grad=True)
    y = T.ones(2, 2) * 4
    with T.no_grad():
        w = x + y

    @T.no_grad()
    def adder(a, b):
        return a + b

    z = adder(x, y)
    for t in (w, z):
        assert not t.requires_grad and t.grad_fn is None
        with pytest.raises(RuntimeError, match="does not require grad"):
            t.backward(T.ones(2, 2))
    with T.no_grad():
        assert not T.is_grad_enabled()
        adder(x, y)
        assert not T.is_grad_enabled()
    assert T.is_grad_enabled()


def test_enable_grad_inside_no_grad_records(T):
    # TestAutograd.test_enable_grad-style: enable_grad inside no_grad records a graph
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        with T.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad
    y.sum().backward()
    assert _np(x.grad).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_set_grad_enabled_requires_bool(T, bad):
    # torch.set_grad_enabled(mode): mode must be a bool (TypeError), and the mode is unchanged
    with pytest.raises(TypeError, match="must be bool"):
        T.set_grad_enabled(bad)
    assert T.is_grad_enabled()


# ---- anomaly mode ------------------------------------------------------------------------------
def _nan_backward(T):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt() * 0          # sqrt'(0) = inf; inf * 0 = nan in SqrtBackward0
    y.sum().backward()
    return x


def test_anomaly_detect_nan(T):
    # TestAutograd.test_anomaly_detect_nan (with a builtin op): the error names the backward
    # node and the output; a warning carries the forward traceback
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output."):
                _nan_backward(T)
    msgs = [str(w.message) for w in seen]
    assert any("Anomaly Detection has been enabled" in m for m in msgs)
    tb = [m for m in msgs if m.startswith("Error detected in SqrtBackward0. Traceback of forward call")]
    assert len(tb) == 1 and "_nan_backward" in tb[0] and "x.sqrt() * 0" in tb[0]


def test_anomaly_mode_no_check_nan(T):
    # TestAutograd.test_anomaly_mode_no_check_nan: check_nan=False lets the NaN through
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.detect_anomaly(check_nan=False):
            assert T.is_anomaly_enabled() and not T.is_anomaly_check_nan_enabled()
            x = _nan_backward(T)
    assert np.isnan(_np(x.grad)[0]) and _np(x.grad)[1] == 0.0
    assert not T.is_anomaly_enabled()


def test_anomaly_grad_warnings(T):
    # TestAutograd.test_anomaly_grad_warnings (with a hook instead of a custom Function): any
    # error raised while a node runs is reported with that node's forward traceback
    x = T.ones(2, requires_grad=True)

    def hook(g):
        raise ValueError("boom")

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            y = x.exp()
            y.register_hook(hook)
            with pytest.raises(ValueError, match="boom"):
                y.sum().backward()
    tb = [str(w.message) for w in seen if "Error detected in" in str(w.message)]
    assert len(tb) == 1 and tb[0].startswith("Error detected in ExpBackward0.") and "x.exp()" in tb[0]


def test_set_detect_anomaly_nesting(T):
    # TestAutograd.test_anomaly_* flags: set_detect_anomaly switches at once and restores the
    # previous state as a context manager, nested inside detect_anomaly
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.detect_anomaly():
            with T.autograd.set_detect_anomaly(False):
                assert not T.is_anomaly_enabled()
            assert T.is_anomaly_enabled() and T.is_anomaly_check_nan_enabled()
        with T.autograd.set_detect_anomaly(True, check_nan=False):
            assert T.is_anomaly_enabled() and not T.is_anomaly_check_nan_enabled()
    assert not T.is_anomaly_enabled() and T.is_anomaly_check_nan_enabled()
    # without anomaly mode a NaN gradient passes silently
    x = _nan_backward(T)
    assert np.isnan(_np(x.grad)[0])


def test_anomaly_grad_warnings_on_version_error(T):
    # TestAutograd.test_anomaly_grad_warnings: an error that is not a NaN (here a version
    # check) also gets the "Error detected in" warning, after the mode's own warning
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been "
                                           "modified by an inplace operation"):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with T.autograd.detect_anomaly():
                a = T.ones(5, requires_grad=True)
                d1 = a + 1
                d2 = d1 ** 2
                d1 += 1
                T.autograd.grad(d2.sum(), a)
    msgs = [str(w.message) for w in seen]
    assert len(msgs) == 2
    assert "Anomaly Detection has been enabled" in msgs[0]
    assert "Error detected in PowBackward0" in msgs[1]


# ---- detach, .data and assignment --------------------------------------------------------------
def test_detach(T):
    # TestAutograd.test_detach: a detached tensor is a leaf without grad that still feeds
    # values; detach_() cuts a non-view in place and refuses a view
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    y = y.detach()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    z = x + y
    z.sum().backward()
    assert _np(x.grad).tolist() == [[1.0, 1.0]] * 2
    a = x * 2
    a.detach_()
    assert not a.requires_grad and a.grad_fn is None and a.is_leaf
    view = (x * 2)[0]
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead."):
        view.detach_()
    # a detached tensor shares storage and version counter with its source
    s = x * 3
    d = s.detach()
    d.add_(1)
    assert d._version == s._version == 1 and _np(s).tolist() == [[4.0, 7.0], [10.0, 13.0]]


def test_set_data_self_requires_grad(T):
    # TestAutograd.test_set_data_self_requires_grad: .data may change the storage of a tensor
    # that requires grad, but not to an integer dtype
    a = T.tensor(1.0, requires_grad=True)
    a.data = T.tensor(2.0)
    assert a.requires_grad and a.is_leaf and float(a.detach()) == 2.0
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        a.data = T.tensor(3, dtype=T.int64)
    b = T.ones(2)
    b.data = T.zeros(3, dtype=T.int64)   # fine when grad is not required
    assert tuple(b.shape) == (3,) and not b.requires_grad


def test_no_grad_assignment(T):
    # TestAutograd.test_no_grad_assignment: writing into a leaf that requires grad is allowed
    # under no_grad and keeps it a leaf
    x = T.ones(3, 3, requires_grad=True)
    y = T.arange(3.0) * 4
    with T.no_grad():
        x[0] = y
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert _np(x[0]).tolist() == [0.0, 4.0, 8.0]


def test_leaf_assignment(T):
    # TestAutograd.test_leaf_assignment: writing tensors that require grad into a plain tensor
    # makes it a non-leaf whose gradient reaches the written values
    x = T.zeros(3, 3)
    y = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad and x.grad_fn is not None
    (x * T.arange(9.0).reshape(3, 3)).sum().backward()
    assert _np(y.grad).tolist() == [0.0, 1.0, 2.0]
    assert _np(z.grad).tolist() == [6.0, 8.0, 10.0]


# ---- gradients through dtype changes and in-place views -------------------------------------
def test_reduce_dtype(T):
    # TestAutograd.test_reduce_dtype: a reduction to float64 still gives a float32 gradient
    x = T.tensor([[1.0, 2.0, 3.0], [0.5, 0.25, 2.0], [1.0, 1.0, 4.0]], requires_grad=True)
    for op, dimless in ((T.sum, True), (T.prod, True), (T.cumsum, False), (T.cumprod, False)):
        if dimless:
            (g1,) = T.autograd.grad([op(x)], [x])
            (g2,) = T.autograd.grad([op(x, dtype=T.float64)], [x])
            assert g2.dtype == T.float32
            np.testing.assert_allclose(_np(g1), _np(g2), rtol=1e-6)
        shape = tuple(op(x, dim=0).shape)
        gi = T.linspace(-1, 1, int(np.prod(shape))).reshape(shape)
        (g1,) = T.autograd.grad([op(x, dim=0)], [x], gi)
        (g2,) = T.autograd.grad([op(x, dim=0, dtype=T.float64)], [x], gi.double())
        assert g2.dtype == T.float32
        np.testing.assert_allclose(_np(g1), _np(g2), rtol=1e-6)


def test_type_conversions_backward(T):
    # TestAutograd.test_type_conversions-style: a dtype conversion is differentiable and the
    # gradient comes back in the input's dtype
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.dtype == T.float64 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.dtype == T.float32 and _np(x.grad).tolist() == [2.0, 4.0]


def test_isolated_node(T):
    # TestAutograd.test_isolated_node: an integer branch (argmax indices) joins the graph
    # without breaking backward
    x = T.tensor([1.0, 5.0], requires_grad=True)
    y = T.tensor([2.0, -1.0], requires_grad=True)
    a = x + y
    b = T.max(a, 0, True)[1].repeat(2).to(a.dtype)
    (b + a).sum().backward()
    assert _np(x.grad).tolist() == [1.0, 1.0] and _np(y.grad).tolist() == [1.0, 1.0]


def test_inplace_view_weak_grad_fn(T):
    # TestAutograd.test_inplace_view_weak_grad_fn: the grad_fn of an in-place-modified view of
    # a clone survives the view's deletion
    import gc
    a = T.arange(10.0, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()
    assert float(s.detach()) == 1.0
    assert _np(a.grad).tolist() == [0.0, 1.0] + [0.0] * 8


def test_diagonal_derivative_requires_grad(T):
    # TestAutograd.test_diagonal_derivative_requires_grad: the first derivative through
    # diagonal keeps a graph under create_graph
    a = T.arange(12.0).reshape(3, 4).requires_grad_()
    (d,) = T.autograd.grad((T.diagonal(a) ** 2).sum(), a, create_graph=True)
    assert d.requires_grad
    (dd,) = T.autograd.grad(d.sum(), a)
    want = np.zeros((3, 4))
    want[[0, 1, 2], [0, 1, 2]] = 2.0
    np.testing.assert_allclose(_np(dd), want)


def test_no_unnecessary_unwrapping(T):
    # TestAutograd.test_no_unnecessary_unwrapping: a saved input is the very tensor given to the
    # op; a saved output equals the output but is a distinct object; freed after backward
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    c = a * b
    d = T.exp(a)
    assert b.grad_fn._saved_self is a and b.grad_fn._saved_other is a
    assert c.grad_fn._saved_self is a and c.grad_fn._saved_other is b
    assert d.grad_fn._saved_result is not d
    np.testing.assert_allclose(_np(d.grad_fn._saved_result), _np(d))
    c.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        c.grad_fn._saved_self
    assert _np(a).tolist() == [1.0, 2.0]


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


# ---- gradcheck (the argument checks and verdicts, not the op coverage) ------------------------
def _f64(T, *vals, rg=True):
    return T.tensor(list(vals), dtype=T.float64, requires_grad=rg)


def test_gradcheck_validates_inputs(T):
    # TestAutograd.test_gradcheck_validates_inputs (dense part): at least one input must require
    # grad; a float32 input that does warns about precision
    with pytest.raises(ValueError, match="at least one input tensor to require gradient, but none of them "
                                         "have requires_grad=True"):
        T.autograd.gradcheck(lambda x: x * x, (_f64(T, 1.0, 2.0, rg=False),))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        T.autograd.gradcheck(lambda x: x * 2, (T.tensor([1.0, 2.0], requires_grad=True),), eps=1e-2, atol=1e-2)
    assert any("Input #0 requires gradient and is not a double precision floating point" in str(w.message)
               for w in seen)


def test_gradcheck_single_input_and_unrelated_inputs(T):
    # TestAutograd.test_gradcheck_single_input / test_unrelated_inputs: a bare tensor is an
    # input tuple of one; an input the output ignores passes gradcheck and gradgradcheck
    assert T.autograd.gradcheck(lambda x: x.exp(), _f64(T, 0.5, 1.5))
    f = lambda x, y: x * x  # noqa: E731
    args = (_f64(T, 1.0, 2.0), _f64(T, 3.0, 4.0))
    assert T.autograd.gradcheck(f, args) and T.autograd.gradgradcheck(f, args)


def test_gradcheck_jacobian_mismatch(T):
    # TestAutograd.test_gradcheck_jacobian_mismatch: a wrong backward is reported (GradcheckError,
    # a RuntimeError) or, with raise_exception=False, gives False
    class Wrong(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = _f64(T, 1.0, 2.0)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0") as e:
        T.autograd.gradcheck(Wrong.apply, (x,))
    assert type(e.value).__name__ == "GradcheckError"
    assert T.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_gradcheck_outputs_without_gradient(T):
    # TestAutograd.test_gradcheck_check_no_differentiable_outputs / test_gradcheck_test_outputs:
    # constant and integer outputs are skipped
    x = _f64(T, 1.0, 2.0)
    assert T.autograd.gradcheck(lambda a: T.ones(2, dtype=T.float64), (x,))
    assert T.autograd.gradcheck(lambda a: (a * 2, a.long()), (x,))


# ---- version counters, .data identity, backward inside hooks, final callbacks -------------
def test_version_counter(T):
    # TestAutograd.test_version_counter: in-place ops bump it, a view shares it, `x.data = y`
    # keeps x's counter (still shared with the view)
    x = T.ones(1, 2)
    v0 = x._version
    x.add_(1).add_(1)
    assert x._version > v0
    xz = x[:]
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    saved = x._version
    x.data = T.ones(2, 3)
    assert x._version == saved
    x.add_(1)
    assert x._version > saved and x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version


def test_set_data_preserve_pyobj(T):
    # TestAutograd.test_set_data_preserve_pyobj
    a = T.tensor([[1.0, 2.0]])
    b = T.zeros(1, 2)
    ident = id(b)
    b.data = a
    assert id(b) == ident and _np(b).tolist() == [[1.0, 2.0]]


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


def test_reentrant_with_leaf_variable_hook(T):
    # TestAutograd.test_reentrant_with_leaf_variable_hook: a leaf's hook runs a backward of its
    # own and returns a changed gradient
    handle = None
    param = T.tensor([0.5, 1.0, 2.0], requires_grad=True)

    def penalty(grad):
        handle.remove()
        old = grad
        param.grad = None
        with T.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            ((g * 2) + new_param).sum().backward()
        res = g.grad + grad
        param.grad = old
        return res

    handle = param.register_hook(penalty)
    (param * param).sum().backward()
    # the hook restored .grad to the plain gradient, then its result (2p + 2) accumulated onto it
    np.testing.assert_allclose(_np(param.grad), 4 * _np(param) + 2)


def test_reentrant_with_non_leaf_variable_hook(T):
    # TestAutograd.test_reentrant_with_non_leaf_variable_hook
    handle = None
    param = T.tensor([0.5, 1.0, 2.0], requires_grad=True)

    def increase(grad):
        handle.remove()
        with T.enable_grad():
            g = grad.detach().requires_grad_()
            ((g * 2) + 5).sum().backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(increase)
    tmp.sum().backward()
    np.testing.assert_allclose(_np(param.grad), 6 * _np(param))


def test_callback_adds_callback(T):
    # TestAutograd.test_callback_adds_callback (queued from a tensor hook instead of a custom
    # Function): callbacks run after the leaves got their .grad, and may queue more
    engine = T.autograd.Variable._execution_engine
    log = []
    x = T.ones(2, requires_grad=True)

    def final():
        log.append("final")

    def adds():
        log.append(("adds", _np(x.grad).tolist()))
        engine.queue_callback(final)

    y = x * 3
    y.register_hook(lambda g: engine.queue_callback(adds))
    y.sum().backward()
    assert log == [("adds", [3.0, 3.0]), "final"]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        engine.queue_callback(final)


@pytest.mark.parametrize("depths", [(0,), (1,), (0, 1)])
def test_reentrant_with_callbacks(T, depths):
    # TestAutograd.test_reentrant_with_callbacks_depth_0 / _depth_1 / _both_depths (a hook runs
    # the inner backward): each callback runs once, at the end of the backward it was queued in
    engine = T.autograd.Variable._execution_engine
    counter = {"outer": 0, "inner": 0}

    def inner_hook(g):
        if 1 in depths:
            engine.queue_callback(lambda: counter.__setitem__("inner", counter["inner"] + 1))

    def outer_hook(g):
        if 0 in depths:
            engine.queue_callback(lambda: counter.__setitem__("outer", counter["outer"] + 1))
        tmp = g.detach().requires_grad_()
        with T.enable_grad():
            out = tmp * 1
            out.register_hook(inner_hook)
            out.sum().backward()

    t1 = T.ones(3, 3, requires_grad=True)
    t2 = t1 * 1
    t2.register_hook(outer_hook)
    T.autograd.backward([t2.sum()])
    assert counter == {"outer": int(0 in depths), "inner": int(1 in depths)}
