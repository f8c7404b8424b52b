"""Round 7 of PyTorch's own test/test_autograd.py (TestAutograd), ported for the ``T`` fixture:
each body runs under torch 2.13 (the oracle, so every expectation here is torch's) and under
tracegrad, on device 'cpu' in float32/float64. Each test names the original it ports; tests
earlier rounds ported (test_autograd_ported*.py, test_autograd_hooks_ported.py, ...) are not
repeated. Shapes are cut down from the originals (every distinct shape is an XLA compile)."""
import gc
import pickle
import warnings

import numpy as np
import pytest

from _ported_helpers import eq, rn, to_np


_np = to_np


# ---- backward basics ------------------------------------------------------------------------------
def test_indexing_duplicates(T):
    # TestAutograd.test_indexing_duplicates: repeated indices accumulate into the gradient
    y = T.arange(1., 17).view(4, 4).requires_grad_()
    idx = [1, 1, 3, 2, 1, 2]
    y[T.tensor(idx)].sum().backward()
    exp = np.zeros((4, 4))
    for i in idx:
        exp[i] += 1
    assert eq(y.grad, exp)

    y = T.arange(1., 17).view(4, 4).requires_grad_()
    y[[idx, [0]]].sum().backward()
    exp = np.zeros((4, 4))
    for i in idx:
        exp[i][0] += 1
    assert eq(y.grad, exp)

    y = T.arange(1., 17).view(4, 4).requires_grad_()
    y[[[[1, 2], [0, 0]], [[0, 1], [1, 1]]]].sum().backward()
    assert eq(y.grad, [[0, 2, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])

    y = T.arange(1., 65).view(4, 4, 4).requires_grad_()
    y[[[1, 1, 1], slice(None), slice(None)]].sum().backward()
    exp = np.zeros((4, 4, 4))
    exp[1] = 3
    assert eq(y.grad, exp)


def _setitem(T, size, index):
    x = T.ones(*size, requires_grad=True)
    y = x + 2
    v = y._version
    y[index] = 2
    assert y._version != v
    y.backward(T.ones(*size))
    exp = T.ones(*size)
    exp[index] = 0
    assert eq(x.grad, exp)


def _setitem_tensor(T, size, index):
    x = T.ones(*size, requires_grad=True)
    y = x + 2
    v = y._version
    value = x.new(x[index].size()).fill_(7)
    value.requires_grad = True
    y[index] = value
    assert y._version != v
    y.backward(T.ones(*size))
    exp = T.ones(*size)
    exp[index] = 0
    assert eq(x.grad, exp)
    assert eq(value.grad, T.ones_like(value))


def test_setitem_mask(T):
    # TestAutograd.test_setitem_mask: boolean-mask assignment zeroes the masked gradient
    mask = T.tensor(np.random.RandomState(3).rand(5, 5) > 0.5)
    _setitem(T, (5, 5), mask)
    _setitem(T, (5,), mask[0])
    _setitem(T, (1,), mask[0, 0:1])
    _setitem_tensor(T, (5, 5), mask)
    _setitem_tensor(T, (5,), mask[0])


def test_select_sum(T):
    # TestAutograd.test_select_sum: select then sum, checked with gradcheck/gradgradcheck
    x = rn(T, 10, dtype="float64", grad=True)
    fn = lambda x: x.select(0, 1).sum()  # noqa: E731
    assert T.autograd.gradcheck(fn, [x])
    assert T.autograd.gradgradcheck(fn, [x])


@pytest.mark.parametrize("kind", ["stack", "hstack", "vstack", "dstack"])
def test_stack_family(T, kind):
    # TestAutograd.test_stack / test_hstack / test_vstack / test_dstack: each input's gradient
    # is its slice of the output gradient
    xs = [rn(T, 3, 3, seed=i, grad=True) for i in range(3)]
    out = getattr(T, kind)(xs) if kind != "stack" else T.stack(xs, 0)
    g = rn(T, *out.shape, seed=9)
    out.backward(g)
    part = {"stack": lambda i: g[i], "hstack": lambda i: g[:, 3 * i:3 * i + 3],
            "vstack": lambda i: g[3 * i:3 * i + 3], "dstack": lambda i: g[:, :, i]}[kind]
    for i, x in enumerate(xs):
        assert eq(x.grad, part(i))


def test_hstack_1d(T):
    # TestAutograd.test_hstack (1-D case: inputs are concatenated end to end)
    xs = [rn(T, 4, seed=i, grad=True) for i in range(3)]
    g = rn(T, 12, seed=7)
    T.hstack(xs).backward(g)
    for i, x in enumerate(xs):
        assert eq(x.grad, g[4 * i:4 * i + 4])


def test_fill(T):
    # TestAutograd.test_fill: fill_ on a clone cuts the gradient to the root
    root = rn(T, 4, 5, dtype="float64", grad=True)

    def fn(root):
        x = root.clone()
        x.fill_(2)
        return x

    assert T.autograd.gradcheck(fn, [root])
    assert T.autograd.gradgradcheck(fn, [root])
    fn(root).sum().backward()
    assert eq(root.grad, np.zeros((4, 5)))


def test_put_and_put_accumulate(T):
    # TestAutograd.test_put / test_put_accumulate
    root = rn(T, 4, 5, dtype="float64", grad=True)
    values = rn(T, 6, seed=1, dtype="float64", grad=True)
    for idx, acc in (([1, 2, 3, -1, -2, -3], False), ([1, 2, 3, 1, 2, 3], True)):
        idx = T.tensor(idx)

        def fn(root, values):
            x = root.clone()
            x.put_(idx, values, accumulate=acc)
            return x

        assert T.autograd.gradcheck(fn, [root, values])
        assert T.autograd.gradgradcheck(fn, [root, values])


def test_unused_output(T):
    # TestAutograd.test_unused_output: only the used chunk receives gradient
    x = rn(T, 10, 4, grad=True)
    o = x.chunk(5)[2] * 4 + 2
    o.sum().backward()
    exp = np.zeros((10, 4))
    exp[4:6] = 4
    assert eq(x.grad, exp)

    with T.no_grad():
        x.grad.zero_()
    g = rn(T, 2, 4, seed=5)
    x.chunk(5)[0].backward(g)
    exp = np.zeros((10, 4))
    exp[:2] = _np(g)
    assert eq(x.grad, exp)


@pytest.mark.parametrize("size_x,size_ind,dim", [((4, 4), (2, 4), 0), ((4, 4, 3), (4, 2, 3), 1),
                                                 ((4, 4, 3), (4, 4, 2), -1), ((4,), (), 0),
                                                 ((), (2,), 0), ((), (), 0)])
def test_sparse_gather(T, size_x, size_ind, dim):
    # TestAutograd.test_sparse_gather_dim0 / _dim1 / _dim_neg / _ind_scalar / _x_scalar /
    # _both_scalar (the dense-gradient half: gather's gradient scatters-adds into x)
    x = rn(T, *size_x, grad=True) if size_x else T.tensor(0.5, requires_grad=True)
    rs = np.random.RandomState(1)
    if size_ind and size_x:
        ind = T.tensor(rs.randint(0, size_x[dim], size_ind))
    else:
        ind = T.zeros(size_ind, dtype=T.int64)
    out = T.gather(x, dim, ind)
    g = T.tensor(rs.rand(*size_ind).astype("float32")) if size_ind else T.tensor(0.25)
    out.backward(g)
    exp = np.zeros(size_x)
    xi, gi = _np(ind).astype(int), _np(g)
    for pos in np.ndindex(*size_ind):
        tgt = (list(pos) if pos else [0] * len(size_x)) if size_x else []
        if size_x:
            tgt[dim] = xi[pos]
        exp[tuple(tgt)] += gi[pos]
    assert eq(x.grad, exp)


def test_numpy_requires_grad(T):
    # TestAutograd.test_numpy_requires_grad
    x = rn(T, 2, 2, grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    with T.no_grad():
        x.numpy()
    x.detach().numpy()
    rn(T, 2, 2).numpy()


def test_backward_copy(T):
    # TestAutograd.test_backward_copy: one gradient buffered in three places is summed correctly
    x = T.ones(3, 3, requires_grad=True)
    y = T.ones(3, 3, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    add2 = (a + b) + c
    for _ in range(4):
        a, b, c = a * 2, b * 2, c * 2
    (add2 + (a + b + c)).backward(T.ones(3, 3))
    assert eq(x.grad, np.full((3, 3), 34.))
    assert eq(y.grad, np.full((3, 3), 17.))


def test_trapz(T):
    # TestAutograd.test_trapz: gradcheck of trapz(y, x) in y and x
    y = rn(T, 2, 3, dtype="float64", grad=True)
    x = T.tensor([[1.0, 2.0, 5.5], [2.3, 0.5, 6.2]], dtype=T.float64, requires_grad=True)
    assert T.autograd.gradcheck(lambda y, x: T.trapz(y, x), (y, x))
    assert T.autograd.gradgradcheck(lambda y, x: T.trapz(y, x), (y, x))


def test_var_mean_differentiable(T):
    # TestAutograd.test_var_mean_differentiable: var_mean's gradient equals var's plus mean's
    a = rn(T, 3, 2, 4, 2, grad=True)
    b = a.detach().clone().requires_grad_()
    v1, m1 = T.var_mean(a, dim=[1, 3], keepdim=False)
    v2, m2 = b.var(dim=[1, 3]), b.mean(dim=[1, 3])
    r1, r2 = v1 * v1 * m1 * m1, v2 * v2 * m2 * m2
    assert T.allclose(r1, r2, rtol=0.01, atol=0.0)
    g = rn(T, 3, 4, seed=2)
    T.autograd.backward(r1, g)
    T.autograd.backward(r2, g)
    assert T.allclose(a.grad, b.grad, rtol=0.01, atol=1e-6)


@pytest.mark.parametrize("size,p", [((10,), 2), ((4, 4), 2), ((10,), 3), ((10,), 1), ((10,), 1.5)])
def test_norm_subgradient(T, size, p):
    # TestAutograd.test_norm_subgradient: the norm's gradient at zero is the zero subgradient
    x = T.zeros(*size, requires_grad=True)
    x.norm(p).backward()
    assert x.grad.abs().sum().item() == 0


def test_chain_matmul(T):
    # TestAutograd.test_chain_matmul: gradcheck/gradgradcheck through every factor
    rs = np.random.RandomState(0)
    for p in ([3, 4, 2, 3], [2, 3, 2, 4, 2]):
        ms = [T.tensor(rs.standard_normal((a, b)), requires_grad=True) for a, b in zip(p[:-1], p[1:])]
        assert T.autograd.gradcheck(lambda *m: T.chain_matmul(*m), ms)
        assert T.autograd.gradgradcheck(lambda *m: T.chain_matmul(*m), ms)


def test_variable_traverse(T):
    # TestAutograd.test_variable_traverse: an intermediate kept alive only by a reference cycle
    # does not break backward after gc
    def make():
        inp = rn(T, 10, grad=True)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        lst = [tmp]
        lst.append(lst)
        return out, inp

    out, inp = make()
    gc.collect()
    out.backward(T.ones(10))
    assert eq(inp.grad, np.ones(10))


def test_gradcheck_fail_when_no_differentiable_outputs_and_num_grad_not_zero(T):
    # TestAutograd.test_gradcheck_fail_when_no_differentiable_outputs_and_num_grad_not_zero
    def fn(x):
        out = T.detach(x)
        assert not out.requires_grad
        return out

    x = T.ones(3, 3, dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
        T.autograd.gradcheck(fn, x, eps=1e-6, atol=1e-5)


def test_resize(T):
    # TestAutograd.test_resize (Tensor.resize, deprecated alias of reshape-with-new-storage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuple(T.ones(2, 3).resize(3, 2).size()) == (3, 2)


def test_as_strided(T):
    # TestAutograd.test_as_strided: gradcheck/gradgradcheck of as_strided on views, expands,
    # overlapping and transposed layouts
    def check(x, pre, size, strides, offset=None):
        x = x.to(T.double).detach().requires_grad_()

        def fn(x):
            if pre is not None:
                x = pre(x)
            return x.as_strided(size, strides, offset)

        assert T.autograd.gradcheck(fn, [x])
        assert T.autograd.gradgradcheck(fn, [x])

    check(T.arange(0, 25), lambda x: x.view(5, 5), [3, 3], [6, 2], 2)
    check(rn(T, 12), None, [1, 2, 1, 5], [0, 5, 100, 1], 2)
    check(rn(T, 5), None, [3, 3, 3], [0, 1, 0], 2)
    check(rn(T, 5), None, [3, 3, 3], [0, 0, 0], 4)
    check(rn(T, 15), None, [3, 2], [3, 6], 2)
    check(rn(T, 3, 4), None, [4, 3], [1, 4])
    x = rn(T, 6, 2)
    assert eq(x[3:].as_strided([3, 2], [2, 1], 0), x[:3])


def test_lerp_tensor_weights(T):
    # TestAutograd.test_lerp_tensor_weights: gradcheck with every operand broadcasting in turn
    shapes = [((3, 3), (3, 3), (3, 3)), ((3,), (3, 3), (3, 3)), ((3, 3), (3,), (3, 3)),
              ((3, 3), (3, 3), (3,)), ((), (3, 3), (3, 3)), ((3, 3), (), (3, 3)),
              ((3, 3), (3, 3), ()), ((3, 3), (2, 3, 3), (3,))]
    for i, sh in enumerate(shapes):
        ins = [rn(T, *s, seed=i * 3 + k, dtype="float64", grad=True) for k, s in enumerate(sh)]
        assert T.autograd.gradcheck(T.lerp, ins)
        assert T.autograd.gradgradcheck(T.lerp, ins)


def test_inplace_view_saved_output(T):
    # TestAutograd.test_inplace_view_saved_output: an in-place op on a view that saves its
    # output creates no reference cycle (the hooked node is freed with the graph)
    dealloc = [0]

    class IncrementOnDelete:
        def __del__(self):
            dealloc[0] += 1

    def run():
        root = rn(T, 3, 3, grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(IncrementOnDelete())
        view = copy.view(9)
        T.nn.functional.relu(view, inplace=True)

    run()
    gc.collect()
    assert dealloc[0] == 1


def test_inplace_view_backward(T):
    # TestAutograd.test_inplace_view_backward: double backward through in-place relu/threshold
    net = T.nn.Sequential(T.nn.InstanceNorm2d(2), T.nn.ReLU(True))
    x = T.tensor([[[[1.0, 1.0]]]], requires_grad=True)
    g, = T.autograd.grad(net(x).pow(2), [x], grad_outputs=x.new_ones(x.shape), create_graph=True)
    T.autograd.grad(g.sum(), [x])
    assert eq(x, [[[[1.0, 1.0]]]])

    inputs = T.ones((1, 3, 4, 4), requires_grad=True)
    tmp1 = (inputs + 1).view_as(inputs)
    tmp2 = T.nn.functional.threshold(tmp1, 0., 0., True)
    prob = T.sigmoid(tmp2)
    grads = T.autograd.grad(outputs=prob, inputs=inputs, grad_outputs=T.ones(prob.size()),
                            create_graph=True, retain_graph=True)[0]
    penalty = grads.sum()
    penalty.backward()
    assert inputs.grad is not None and inputs.grad.shape == inputs.shape


def test_mul_out_result_requires_grad(T):
    # TestAutograd.test_mul_out_result_requires_grad: out= into a tensor requiring grad raises
    a, b = rn(T, 2, 2), rn(T, 2, 2, seed=1)
    x = T.zeros(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        T.mul(a, b, out=x)


def test_mul_out_inputs_require_grad(T):
    # TestAutograd.test_mul_out: out= with inputs requiring grad raises; in no_grad it works
    a, b = rn(T, 2, 2, grad=True), rn(T, 2, 2, seed=1, grad=True)
    x = T.zeros_like(a)
    with pytest.raises(RuntimeError, match="out="):
        T.mul(a, b, out=x)
    with T.no_grad():
        T.mul(a, b, out=x)
    assert eq(x, a * b)


def test_gradcheck_nondeterministic(T):
    # TestAutograd.test_gradcheck_nondeterministic: a backward that differs between calls is
    # "not reentrant" unless nondet_tol covers the jitter
    class NonDet(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, g):
            return NonDet.apply(g, ctx._jitter) * (1 + T.rand_like(g) * ctx._jitter), None

    inp = rn(T, 3, 3, dtype="float64", grad=True)
    assert T.autograd.gradcheck(lambda x: NonDet.apply(x, 0.0), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        T.autograd.gradcheck(lambda x: NonDet.apply(x, 1e-6), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        T.autograd.gradgradcheck(lambda x: NonDet.apply(x, 1e-12), inp)
    assert T.autograd.gradcheck(lambda x: NonDet.apply(x, 0.0), inp, nondet_tol=1e-5)
    assert T.autograd.gradcheck(lambda x: NonDet.apply(x, 1e-6), inp, nondet_tol=1e-5)
    assert T.autograd.gradgradcheck(lambda x: NonDet.apply(x, 1e-12), inp, nondet_tol=1e-5)


def test_deep_reentrant(T):
    # TestAutograd.test_deep_reentrant (depth cut from 2000 to 30): backward re-enters the engine
    # from inside a custom backward, recursively
    class DeepReentrant(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with T.enable_grad():
                ctx.x = T.autograd.Variable(x.detach(), requires_grad=True) - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            if ctx.x < 0:
                return g
            with T.enable_grad():
                DeepReentrant.apply(ctx.x).sum().backward()
            return g

    v = T.tensor(30.0, requires_grad=True)
    DeepReentrant.apply(v).sum().backward()
    assert v.grad.item() == 1.0


@pytest.mark.parametrize("depths,outer,inner", [([0], 1, 0), ([1], 0, 1), ([0, 1], 1, 1)])
def test_reentrant_with_callbacks(T, depths, outer, inner):
    # TestAutograd.test_reentrant_with_callbacks_depth_0 / _depth_1 / _both_depths: a callback
    # queued in a (nested) backward runs once, at the end of the backward that queued it
    counter = {"inner": 0, "outer": 0}

    def inc(k):
        return lambda: counter.__setitem__(k, counter[k] + 1)

    class MyFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            if 1 in depths:
                T.autograd.Variable._execution_engine.queue_callback(inc("inner"))
            return g

    class MyReentrantFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            if 0 in depths:
                T.autograd.Variable._execution_engine.queue_callback(inc("outer"))
            tmp = g.detach().requires_grad_()
            with T.enable_grad():
                out = MyFunc.apply(tmp).sum()
            out.backward()
            return g

    t1 = rn(T, 3, 3, grad=True)
    T.autograd.backward([MyReentrantFunc.apply(t1).sum()])
    assert counter == {"inner": inner, "outer": outer}


def test_autograd_views_codegen(T):
    # TestAutograd.test_autograd_views_codegen: view_as/unbind outputs are views; in-place on
    # unbind outputs raises when they require grad, and on any view made in no_grad mode of a
    # tensor requiring grad
    def run(grad_mode, requires_grad, should_raise):
        inp = rn(T, 2, grad=requires_grad).clone()
        with T.set_grad_enabled(grad_mode):
            out = inp.view_as(inp)
        assert out._is_view()
        maybe_raise(lambda: out.add_(1), should_raise[0])
        inp = rn(T, 2, grad=requires_grad).clone()
        with T.set_grad_enabled(grad_mode):
            outs = inp.unbind()
        assert outs[0]._is_view() and outs[1]._is_view()
        maybe_raise(lambda: outs[0].add_(1), should_raise[1])
        maybe_raise(lambda: outs[1].add_(1), should_raise[2])

    def maybe_raise(fn, msg):
        if msg is None:
            fn()
        else:
            with pytest.raises(RuntimeError, match=msg):
                fn()

    run(True, False, (None, None, None))
    multi = "is a view and is being modified inplace"
    run(True, True, (None, multi, multi))
    nograd = "A view was created in no_grad mode and is being modified inplace"
    run(False, True, (nograd, nograd, nograd))
    run(False, False, (None, None, None))


def test_set_data_tensor_type(T):
    # TestAutograd.test_set_data_tensorimpl_type (dense half) / test_set_data_preserve_pyobj:
    # x.data = y keeps the Python object and takes y's shape and values
    a, b = rn(T, 1, 2), rn(T, 2, 3, seed=1)
    bid = id(b)
    b.data = a
    assert id(b) == bid and tuple(b.shape) == (1, 2) and eq(b, a)


# ---- custom Functions and in-place views ------------------------------------------------------------
def test_autograd_inplace_views_python(T):
    # TestAutograd.test_autograd_inplace_views_python (newer name:
    # test_autograd_python_custom_function_inplace): mark_dirty inputs (plain, edited again
    # in place, a view), a dirty non-input warns, a multi-output dirty view raises, a dirty
    # tensor not returned raises
    bw = [0]

    class MyAdder(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            bw[0] += 1
            return g, g

    a = T.ones(2, requires_grad=True)
    b = T.ones(2, requires_grad=True)
    MyAdder.apply(a.clone(), b).sum().backward()
    assert bw[0] == 1
    bw[0] = 0
    c = MyAdder.apply(a.clone(), b)
    c += 2
    c.sum().backward()
    assert bw[0] == 1
    bw[0] = 0
    MyAdder.apply(a.clone().view_as(a), b).sum().backward()
    assert bw[0] == 1

    class MyBadAdder(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw[0] += 1
            return ga + gab, ga + gab

    bw[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    (c * d).sum().backward()
    assert bw[0] == 1
    bw[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    c += 2
    (c * d).sum().backward()
    assert bw[0] == 1
    with pytest.raises(RuntimeError, match="your Function modifies inplace an input that is a view of another Tensor"):
        MyBadAdder.apply(a.clone().view_as(a), b)

    class MyOutPlaceAdder(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + 2 * gab

    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method were not returned as output."):
        MyOutPlaceAdder.apply(a.clone().view_as(a), b)


def test_autograd_complex_views_python(T):
    # TestAutograd.test_autograd_complex_views_python / test_autograd_multiple_views_python: a
    # custom Function returning a select
    # view of its input runs its backward once; editing that view in place raises
    bw = [0]

    class ComplexView(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, idx):
            res = a.narrow(0, idx, 1)
            res = a.select(0, idx)
            ctx.save_for_backward(a)
            ctx.idx = idx
            return res

        @staticmethod
        def backward(ctx, g):
            bw[0] += 1
            a, = ctx.saved_tensors
            res = T.zeros_like(a)
            res.select(0, ctx.idx).copy_(g)
            return res, None

    a = T.ones(2, requires_grad=True)
    ComplexView.apply(a.clone(), 1).sum().backward()
    assert bw[0] == 1 and eq(a.grad, [0., 1.])
    out = ComplexView.apply(a.clone(), 1)
    # (torch 2.13 names the Function, "ComplexView"; newer originals say "ComplexViewBackward")
    with pytest.raises(RuntimeError, match="Output 0 of ComplexView is a view and is being modified "
                                           "inplace. This view was created inside a custom Function"):
        out += 1


def test_power_function(T):
    # TestAutograd.test_power_function: d(0**b)/db is -inf at b=-1 and 0 at b=0, 1
    a = T.tensor([0., 0., 0.])
    b = T.tensor([-1., 0., 1.], requires_grad=True)
    T.sum(a ** b).backward()
    assert _np(b.grad).tolist() == [-np.inf, 0., 0.]
    b = T.tensor([-1., 0., 1.], requires_grad=True)
    T.sum(0 ** b).backward()
    assert _np(b.grad).tolist() == [-np.inf, 0., 0.]


def test_nansum_with_nans(T):
    # TestAutograd.test_nansum_with_nans: gradcheck of nansum over all, one and several dims
    a = rn(T, 2, 2, 2, 2, dtype="float64")
    with T.no_grad():
        a[a < 0.2] = float("nan")
    a.requires_grad = True
    for fn in (lambda x: x.nansum(), lambda x: x.nansum(0), lambda x: x.nansum((0, 2)),
               lambda x: x.nansum((0, -1)), lambda x: x.nansum((0, -1), True)):
        assert T.autograd.gradcheck(fn, a)
        assert T.autograd.gradgradcheck(fn, a)


def test_nansum_dtype(T):
    # TestAutograd.test_nansum_dtype: sum(dtype=) backward returns the input's dtype
    inp = rn(T, 2, 2, 2, 2)
    for in_dt, out_dt in ((T.float, T.double), (T.double, T.float)):
        with T.no_grad():
            a = inp.to(in_dt)
        a.requires_grad = True
        T.sum(a, dtype=out_dt).backward()
        assert a.grad.dtype == a.dtype


def test_complex_real_imag_grads(T):
    # TestAutogradComplex.test_real / test_imag: d sum(x.real)/dx = 1, d sum(x.imag)/dx = 1j
    # (torch 2.13's conjugate convention; the old original asserted -1j)
    x = (rn(T, 3, 4, dtype="float64") + 1j * rn(T, 3, 4, seed=1, dtype="float64")).requires_grad_()
    x.real.sum().backward()
    assert T.equal(x.grad, T.ones_like(x))
    x.grad = None
    x.imag.sum().backward()
    assert T.equal(x.grad, 1j * T.ones_like(x))


def test_view_func_for_complex_views(T):
    # TestAutogradComplex.test_view_func_for_complex_views: in-place ops through chains of
    # view_as_complex / view_as_real / reshape give the same gradients as without the views
    x = rn(T, 2, 2, 2, dtype="float64", grad=True)
    y = x.detach().requires_grad_(True)
    x2 = T.view_as_real(T.view_as_complex(x.clone()))
    x2.mul_(2)
    x2.sum().backward()
    y0 = y.clone()
    y0.mul_(2)
    y0.sum().backward()
    assert eq(x.grad, y.grad)

    def fn(a):
        return T.view_as_complex(a.clone()).reshape(-1)

    x = rn(T, 2, 2, 2, dtype="float64", grad=True)
    y = x.detach().requires_grad_(True)
    x0 = fn(x)
    x0.mul_(2)
    T.view_as_real(x0).sum().backward()
    T.view_as_real(fn(y).mul(2)).sum().backward()
    assert eq(x.grad, y.grad)

    x = (rn(T, 10, dtype="float64") + 1j * rn(T, 10, seed=1, dtype="float64")).requires_grad_()
    y = x.detach().requires_grad_(True)

    def fn2(a):
        return T.view_as_real(a.clone().reshape(5, 2))

    x0 = fn2(x)
    x0.mul_(2)
    x0.sum().backward()
    fn2(y).mul(2).sum().backward()
    assert T.equal(x.grad, y.grad)


# ---- saved tensors and their hooks ------------------------------------------------------------------
@pytest.mark.parametrize("is_leaf", [True, False])
def test_saved_variable_packing_unpacking_saved_original_with_hooks(T, is_leaf):
    # TestAutograd.test_saved_variable_packing_unpacking_saved_original_with_hooks
    def get_input():
        x = rn(T, 5, grad=True)
        return x if is_leaf else 1 + x

    a = get_input()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x / 2)
    assert eq(a, y.grad_fn._saved_self)
    if not is_leaf:
        assert y.grad_fn._saved_self.grad_fn is a.grad_fn
    y.sum().backward()
    if is_leaf:
        assert eq(2 * a, a.grad)

    a = get_input()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
    assert eq(2 * a, y.grad_fn._saved_self)
    y.sum().backward()
    if is_leaf:
        assert eq(3 * a, a.grad)

    a = get_input()
    y = a ** 3
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    g, = T.autograd.grad(T.sum(y), (a,), create_graph=True)
    g.sum().backward()
    if is_leaf:
        assert eq(6 * a, a.grad)

    a = get_input()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: 1)
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor"):
        y.grad_fn._saved_self

    y = get_input() * get_input()
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        y.grad_fn._raw_saved_self.register_hooks(lambda x, b: x, lambda x: x)

    def inplace_double(x):
        x *= 2
        return x

    a = get_input()
    t = a * a
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
        t.grad_fn._raw_saved_self.register_hooks(inplace_double, lambda x: x / 2)


def test_saved_variable_packing_unpacking_did_not_save_original_with_hooks(T):
    # TestAutograd.test_saved_variable_packing_unpacking_did_not_save_original_with_hooks
    a = rn(T, 5, grad=True)
    y = T.exp(a)
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    assert eq(y, y.grad_fn._saved_result)
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
    y.sum().backward()
    assert eq(a.grad, y)


def test_saved_variable_packing_unpacking_saved_original_with_default_hooks(T):
    # TestAutograd.test_saved_variable_packing_unpacking_saved_original_with_default_hooks
    hooks = T.autograd.graph.saved_tensors_hooks

    def pack(x):
        warnings.warn("pack")
        return x

    with hooks(pack, lambda x: x):
        a = T.ones(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a * a
            assert len(w) == 2   # a is saved twice (self and other)

    for p, u, saved, grad in ((lambda x: x, lambda x: x, 1, 2), (lambda x: 2 * x, lambda x: x / 2, 1, 2),
                              (lambda x: 2 * x, lambda x: x, 2, 4)):
        with hooks(p, u):
            a = rn(T, 5, grad=True)
            y = a * a
            assert eq(saved * a, y.grad_fn._saved_self)
            assert eq(saved * a, y.grad_fn._saved_other)
            y.sum().backward()
            assert eq(grad * a, a.grad)
    a = rn(T, 5, grad=True)
    y = a * a
    assert eq(a, y.grad_fn._saved_self)
    y.sum().backward()
    assert eq(2 * a, a.grad)


def test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks(T):
    # TestAutograd.test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks
    with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = rn(T, 5, grad=True)
        y = T.exp(a)
        assert eq(y, y.grad_fn._saved_result)
        y.sum().backward()
        assert eq(a.grad, y)


def test_setting_default_saved_variable_hooks_twice(T):
    # TestAutograd.test_setting_default_saved_variable_hooks_twice_should_not_fail /
    # test_setting_default_saved_variable_hooks_twice_should_use_inner
    hooks = T.autograd.graph.saved_tensors_hooks
    with hooks(lambda x: x, lambda x: x):
        with hooks(lambda x: x, lambda x: x):
            pass
    with hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = rn(T, 5, grad=True)
        with hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = rn(T, 5, seed=1, grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    assert eq(2 * 5 * 5 * a, a.grad)
    assert eq(2 * 3 * 3 * b, b.grad)


def test_disabling_saved_tensor_hooks_nested(T):
    # TestAutograd.test_disabling_saved_tensor_hooks_nested: the innermost message wins
    graph = T.autograd.graph
    with graph.disable_saved_tensors_hooks("outer"):
        with graph.disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                with graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                    pass
        with pytest.raises(RuntimeError, match="outer"):
            with graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


def test_saved_tensor_hooks_custom_error_propagation(T):
    # TestAutograd.test_saved_tensor_hooks_custom_error_propagation: a hook's own exception
    # class reaches the caller unchanged, from the forward (pack) and the backward (unpack)
    class CustomError(Exception):
        pass

    def raise_(msg):
        raise CustomError(msg)

    a = T.tensor(1.0, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda x: raise_("pack"), lambda x: x):
        with pytest.raises(CustomError, match="pack"):
            T.sin(a)
    with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: raise_("unpack")):
        out = T.sin(a)
        with pytest.raises(CustomError, match="unpack"):
            out.backward()


def test_saved_tensor_hooks_custom_function_intermediates(T):
    # TestAutograd.test_saved_tensor_hooks_custom_function_intermediates
    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inter = x.exp()
            ctx.save_for_backward(inter.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            inter, = ctx.saved_tensors
            return g * inter

    a = T.tensor(1.0, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Func.apply(a)
    out.backward()
    assert abs(a.grad.item() - np.e) < 1e-5


def test_unpack_hooks_exec_count(T):
    # TestAutograd.test_unpack_hooks_exec_count: x * y with only x requiring grad packs and
    # unpacks once (only y is saved)
    counts = [0, 0]

    def pack(x):
        counts[0] += 1
        return x

    def unpack(x):
        counts[1] += 1
        return x

    x, y = T.ones(4, requires_grad=True), T.ones(4)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = x * y
        assert counts == [1, 0]
        out.sum().backward()
        assert counts == [1, 1]


def test_pack_hook_with_inplace_modification_should_fail(T):
    # TestAutograd.test_pack_hook_with_inplace_modification_should_fail
    a = rn(T, 5, grad=True)

    def inc(x):
        x += 1
        return x

    with T.autograd.graph.saved_tensors_hooks(inc, lambda x: x):
        with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
            T.exp(a)
    y = T.exp(a)
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
        y.grad_fn._raw_saved_result.register_hooks(inc, lambda x: x)


def test_saving_variable_to_disk(T, tmp_path):
    # TestAutograd.test_saving_variable_to_disk: pack hooks that save to a file, unpack that loads
    n = [0]

    def pack(x):
        n[0] += 1
        name = str(tmp_path / f"saved{n[0]}.pt")
        T.save(x, name)
        return name

    with T.autograd.graph.saved_tensors_hooks(pack, lambda name: T.load(name)):
        a = T.ones(5, requires_grad=True)
        y = a * a
        assert eq(a, y.grad_fn._saved_self)
        y.sum().backward()
        assert eq(2 * a, a.grad)


def test_default_saved_tensors_hooks_double_backward(T):
    # TestAutograd.test_default_saved_tensors_hooks_double_backward: a doubling pack hook
    # active in the forward doubles the one save of a (x2), active in the create_graph
    # backward doubles grad and a (x4), active in both: x8
    hooks = T.autograd.graph.saved_tensors_hooks

    def run(fwd, bwd):
        with (hooks(lambda x: 2 * x, lambda x: x) if fwd else hooks(lambda x: x, lambda x: x)):
            a = rn(T, 5, grad=True)
            s = T.sum(a ** 3)
        with (hooks(lambda x: 2 * x, lambda x: x) if bwd else hooks(lambda x: x, lambda x: x)):
            g, = T.autograd.grad(s, (a,), create_graph=True)
            g.sum().backward()
        return a

    a = run(False, False)
    assert eq(6 * a, a.grad)
    a = run(True, False)
    assert eq(6 * 2 * a, a.grad)
    a = run(False, True)
    assert eq(6 * 4 * a, a.grad)
    a = run(True, True)
    assert eq(6 * 8 * a, a.grad)


def test_wrapped_number_saved_tensors_hooks(T):
    # TestAutograd.test_wrapped_number_saved_tensors_hooks: a Python number saved by mul does
    # not go through the saved-tensor hooks
    def err_hook(x):
        raise RuntimeError("this hook should not be called")

    with T.autograd.graph.saved_tensors_hooks(err_hook, err_hook):
        a = rn(T, 5, grad=True)
        out = (a * 3).sum()
        g, = T.autograd.grad(out, (a,))
    assert eq(g, np.full(5, 3.0))


@pytest.mark.parametrize("pin_memory", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_graph_save_on_cpu(T, pin_memory, dtype):
    # TestAutograd.test_graph_save_on_cpu (dense inputs; pin_memory is a no-op without a GPU)
    with T.autograd.graph.save_on_cpu(pin_memory):
        a = rn(T, 5, dtype=dtype, grad=True)
        y = a * a
        assert eq(a, y.grad_fn._saved_self) and eq(a, y.grad_fn._saved_other)
        assert a.dtype == y.grad_fn._saved_self.dtype
        assert a.layout == y.grad_fn._saved_self.layout
        y.sum().backward()
        assert eq(2 * a, a.grad)


def test_multi_grad_hooks_invalid_mode(T):
    # TestAutograd.test_multi_grad_hooks_invalid_mode
    t1, t2 = rn(T, 2, grad=True), rn(T, 2, seed=1, grad=True)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got foo"):
        T.autograd.graph.register_multi_grad_hook((t1, t2), lambda _: None, mode="foo")


def test_grad_thread_safety(T):
    # TestAutograd.test_grad_thread_safety: concurrent reads of .grad see one tensor
    import threading
    import weakref
    from concurrent.futures import ThreadPoolExecutor

    for _ in range(3):
        t = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (t ** 2).sum().backward()
        barrier = threading.Barrier(4)

        def access(barrier=barrier, t=t):
            barrier.wait()
            return weakref.ref(t.grad)

        with ThreadPoolExecutor(max_workers=4) as ex:
            futures = [ex.submit(access) for _ in range(4)]
            for f in futures:
                assert f.result()() is t.grad
        assert eq(t.grad, [2.0, 4.0, 6.0])


def test_input_buffer_accum(T):
    # TestAutograd.test_input_buffer_accum (dense): the gradients given to backward are not
    # modified in place when the engine accumulates them
    leaf = rn(T, 2, 2, grad=True)
    out2 = leaf.gather(0, T.tensor([[0, 0]]))
    out1 = leaf.clone()
    g1_orig = rn(T, 2, 2, seed=1)
    g1 = g1_orig.clone()
    g2 = rn(T, 1, 2, seed=2)
    T.autograd.backward((out1, out2), (g1, g2))
    assert T.equal(g1, g1_orig)


def test_full_backward_hook_double_backward(T):
    # TestAutograd.test_full_backward_hook_double_backward: the module's full backward hook
    # fires for the first backward only
    x = T.tensor([0.3], requires_grad=True)
    y = T.tensor([0.8])
    func = T.nn.MSELoss()
    counter = [0]
    func.register_full_backward_hook(lambda m, gi, go: counter.__setitem__(0, counter[0] + 1))
    f = func(x, y)
    gx, = T.autograd.grad(f, x, create_graph=True)
    assert counter[0] == 1
    T.autograd.grad(gx, x)
    assert counter[0] == 1


@pytest.mark.parametrize("use_custom_function", [True, False])
@pytest.mark.parametrize("use_tensor_hook", [True, False])
def test_hook_closure_cycle(T, use_custom_function, use_tensor_hook):
    # TestAutograd.test_hook_closure_cycle: a hook whose closure holds the node it is on keeps
    # firing after gc while the graph lives, and is freed with the graph
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class Sentinel:
        pass

    count = [0]

    def scope():
        import weakref
        a = T.tensor(1.0, requires_grad=True)
        b = F.apply(a) if use_custom_function else a.clone()
        gfb = b.grad_fn
        obj = Sentinel()

        def hook(*args):
            gfb, obj  # noqa: B018  (the closure holds both)
            count[0] += 1

        if use_tensor_hook:
            b.register_hook(hook)
        else:
            b.grad_fn.register_hook(hook)
        return b.clone(), weakref.ref(obj)

    gc.disable()
    try:
        out, ref = scope()
        out.backward(retain_graph=True)
        gc.collect()
        out.backward(retain_graph=True)
        assert count[0] == 2
        assert ref() is not None
        del out
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


def test_custom_function_forward_mode_non_differentiable(T):
    # TestAutograd.test_custom_function_forward_mode_non_differentiable
    fwAD = T.autograd.forward_ad

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            out = y.clone()
            ctx.mark_non_differentiable(out)
            return x.clone(), out

        @staticmethod
        def jvp(ctx, xt, yt):
            return xt, None

    x, xt, y = T.tensor(2.0), T.tensor(1.0), T.tensor(3.0)
    with fwAD.dual_level():
        _, o2 = Func.apply(fwAD.make_dual(x, xt), y)
        assert fwAD.unpack_dual(o2).tangent is None

    class Func2(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, xt, yt):
            assert yt is None
            return xt, None

    with fwAD.dual_level():
        _, o2 = Func2.apply(fwAD.make_dual(x, xt), T.tensor(3))
        assert fwAD.unpack_dual(o2).tangent is None

    class FuncWrong(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            out = y.clone()
            ctx.mark_non_differentiable(out)
            return x.clone(), out

        @staticmethod
        def jvp(ctx, xt, yt):
            return xt, xt.clone()

    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="You should return None at that position instead"):
            FuncWrong.apply(fwAD.make_dual(x, xt), y)

    class Func3(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), object(), x.clone()

        @staticmethod
        def jvp(ctx, xt):
            return xt, None, xt

    with fwAD.dual_level():
        o1, _, o3 = Func3.apply(fwAD.make_dual(x, xt))
        assert eq(fwAD.unpack_dual(o1).tangent, xt)
        assert eq(fwAD.unpack_dual(o3).tangent, xt)


def test_integer_outputs_more(T):
    # TestAutograd.test_integer_outputs (newer half): bucketize, count_nonzero and every unique
    # variant give outputs that do not require grad, except unique's values
    bins = T.linspace(0, 1.0, steps=5, requires_grad=True)
    vals = rn(T, 2, 2, grad=True)
    out = T.bucketize(vals, bins)
    assert not out.dtype.is_floating_point and not out.requires_grad
    assert not T.empty(5).requires_grad_().count_nonzero().requires_grad
    inp = T.tensor([0.3, 0.1, 0.3, 0.7], requires_grad=True)

    def only_first(res):
        res = res if isinstance(res, tuple) else (res,)
        assert res[0].requires_grad
        assert all(r is None or not r.requires_grad for r in res[1:])

    for inv in (True, False):
        for cnt in (True, False):
            only_first(T.unique(inp, sorted=True, return_inverse=inv, return_counts=cnt))
            only_first(T.unique(inp, sorted=True, return_inverse=inv, return_counts=cnt, dim=0))
            only_first(T.unique_consecutive(inp, return_inverse=inv, return_counts=cnt))
            only_first(T.unique_consecutive(inp, return_inverse=inv, return_counts=cnt, dim=0))


@pytest.mark.parametrize("name", ["transpose_", "t_", "squeeze_", "unsqueeze_", "swapdims_", "as_strided_"])
def test_autograd_inplace_views_creation_meta(T, name, request):
    if name == "as_strided_" and T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "tracegrad refuses shape-changing in-place ops (as_strided_) on tensors that require grad")))
    # TestAutograd.test_autograd_inplace_views_creation_meta: an in-place view op on a view made
    # in no_grad mode, by a multi-output op or by a custom Function, then an in-place op on the
    # result: which of the two raises, by grad mode at each step and requires_grad
    fn = {"transpose_": lambda v: v.transpose_(0, 0), "t_": lambda v: v.t_(),
          "squeeze_": lambda v: v.squeeze_(0), "unsqueeze_": lambda v: v.unsqueeze_(0),
          "swapdims_": lambda v: v.swapdims_(0, 0), "as_strided_": lambda v: v.as_strided_((1, 0), (2, 2))}[name]

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    no_grad_err = "A view was created in no_grad mode"
    multi_err = "function that returns multiple views"
    custom_err = "view was created inside a custom Function"
    for kind in ("normal", "multi_view", "custom"):
        for gm_view in (True, False):
            for gm_iview in (True, False):
                for rg in (True, False):
                    e1 = e2 = None
                    if rg:
                        if not gm_view and gm_iview:
                            e1 = no_grad_err
                        if not gm_view and not gm_iview:
                            e2 = no_grad_err
                        if kind == "multi_view" and gm_view:
                            e1, e2 = (multi_err, None) if gm_iview else (None, multi_err)
                        if kind == "custom" and gm_view:
                            e1, e2 = (custom_err, None) if gm_iview else (None, custom_err)
                    base = rn(T, 2, 3, grad=rg).clone()
                    with T.set_grad_enabled(gm_view):
                        inp = (base.unbind()[0] if kind == "multi_view" else
                               Func.apply(base) if kind == "custom" else base.view_as(base))
                    with T.set_grad_enabled(gm_iview):
                        if e1 is not None:
                            with pytest.raises(RuntimeError, match=e1):
                                fn(inp)
                            continue
                        fn(inp)
                    if e2 is not None:
                        with pytest.raises(RuntimeError, match=e2):
                            inp.add_(1)
                    else:
                        inp.add_(1)


def test_autograd_print_tensor(T, request):
    # TestAutograd.test_autograd_print_tensor
    a = T.ones(1, requires_grad=True)
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(a.clone()) == "tensor([1.], grad_fn=<CloneBackward0>)"
    with T.no_grad():
        b = a[:]
        b *= 2
    assert repr(b) == "tensor([2.], grad_fn=<Invalid>)"

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    assert repr(Func.apply(a)) == "tensor([2.], grad_fn=<FuncBackward>)"


def test_autograd_inplace_view_of_view(T):
    # TestAutograd.test_autograd_inplace_view_of_view: a view of a no_grad / inference_mode view
    # that later requires grad cannot be modified in place
    x = T.zeros(2)
    with T.no_grad():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the no_grad block"):
        z /= 2
    x = T.zeros(2)
    with T.inference_mode():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the inference_mode"):
        z /= 2


def test_autograd_inplace_views_cross_dtype(T, request):
    if T.__name__ == "tracegrad":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "torch's known bug (pytorch issue 49825): transpose_ on a view_as_real view gives a transposed "
            "gradient; tracegrad gives the same gradient as the out-of-place transpose")))
    # TestAutograd.test_autograd_inplace_views_cross_dtype: torch's known quirk kept as is (the
    # in-place transpose_ of a view_as_real view gives the transposed gradient)
    a0 = (rn(T, 3, 3) + 1j * rn(T, 3, 3, seed=1)).requires_grad_()
    b = T.view_as_real(a0.clone()).transpose(0, 1)
    b += 1
    b.backward(T.arange(0, 18, dtype=T.float).view(3, 3, 2))
    g1 = a0.grad
    a1 = (rn(T, 3, 3) + 1j * rn(T, 3, 3, seed=1)).requires_grad_()
    b = T.view_as_real(a1.clone())
    b.transpose_(0, 1)
    b += 1
    b.backward(T.arange(0, 18, dtype=T.float).view(3, 3, 2))
    assert T.equal(g1.T, a1.grad)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_check_forward_or_backward_only(T, fast_mode):
    # TestAutograd.test_gradcheck_check_forward_or_backward_only: only the requested modes run
    # (a failing vjp/jvp is reached only when its mode is checked; the backward failure is
    # reported first); asking for neither is an AssertionError
    class UserFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, foo, fwd_bad, bwd_bad):
            ctx.fwd_bad, ctx.bwd_bad = fwd_bad, bwd_bad
            return foo * 2

        @staticmethod
        def vjp(ctx, g):
            if ctx.bwd_bad:
                raise RuntimeError("FAIL BWD")
            return 2 * g, None, None

        @staticmethod
        def jvp(ctx, gi, _1, _2):
            if ctx.fwd_bad:
                raise RuntimeError("FAIL FWD")
            return 2 * gi

    x = T.tensor([0.3, 0.7], dtype=T.float64, requires_grad=True)
    for fwd in (True, False):
        for bwd in (True, False):
            for fwd_bad in (True, False):
                for bwd_bad in (True, False):
                    def run():
                        return T.autograd.gradcheck(UserFn.apply, (x, fwd_bad, bwd_bad), check_forward_ad=fwd,
                                                    check_backward_ad=bwd, check_undefined_grad=bwd,
                                                    check_batched_grad=False, fast_mode=fast_mode)
                    if not fwd and not bwd:
                        with pytest.raises(AssertionError, match="Expected at least one of"):
                            run()
                        continue
                    fail = "FAIL BWD" if (bwd_bad and bwd) else "FAIL FWD" if (fwd_bad and fwd) else None
                    if fail is None:
                        assert run()
                    else:
                        with pytest.raises(RuntimeError, match=fail):
                            run()


def test_gradcheck_validates_inputs_dense(T):
    # TestAutograd.test_gradcheck_validates_inputs (dense cases): no input requiring grad is a
    # ValueError and a stride-0 input a RuntimeError, even with raise_exception=False; a float32
    # input warns
    x = T.ones(4)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        T.autograd.gradcheck(lambda x: x, (x,), raise_exception=False)
    x = T.ones(1, dtype=T.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        assert T.autograd.gradcheck(lambda x: x, (x,), atol=1e-1)
    x = T.ones(1, dtype=T.float64, requires_grad=True).expand((2, 2))
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        T.autograd.gradcheck(lambda x: x, (x,), raise_exception=False)


def test_gradcheck_check_no_differentiable_outputs(T):
    # TestAutograd.test_gradcheck_check_no_differentiable_outputs
    x = T.ones((1,), dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
        T.autograd.gradcheck(lambda x: x.detach() * 2, x)
    assert not T.autograd.gradcheck(lambda x: x.detach() * 2, x, raise_exception=False)
    assert T.autograd.gradcheck(lambda x: (), (x,))


def test_gradcheck_backward_mul_by_grad_output(T):
    # TestAutograd.test_gradcheck_backward_mul_by_grad_output (dense case): a hook that adds a
    # constant to the gradient makes the backward not linear in grad_output
    def fn(x):
        y = x.clone()
        y.register_hook(lambda g: g + 1e-2)
        return y

    x = T.ones(1, dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="backward not multiplied by grad_output"):
        T.autograd.gradcheck(fn, (x,), atol=1e-1)
    assert not T.autograd.gradcheck(fn, (x,), atol=1e-1, raise_exception=False)


def test_clear_saved_tensors_on_access(T):
    # TestAutograd.test_clear_saved_tensors_on_access: the first access hands the saved tensors
    # over (the node keeps no reference: deleting the local frees it)
    import weakref
    freed = []

    class MyFn(T.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ref = weakref.ref(x)
            del x
            freed.append(ref() is None)
            return g

    x = rn(T, 3, grad=True)
    MyFn.apply(x.clone()).sum().backward()
    assert freed == [True] and eq(x.grad, np.ones(3))


def test_clear_saved_tensors_on_access_double_access_error(T):
    # TestAutograd.test_clear_saved_tensors_on_access_double_access_error
    class MyFn(T.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors
            ctx.saved_tensors
            return g

    y = MyFn.apply(rn(T, 3, grad=True))
    with pytest.raises(RuntimeError, match="can only be accessed once"):
        y.sum().backward()


def test_autograd_node_isinstance(T):
    # TestAutograd.test_autograd_node_isinstance (the isinstance/issubclass part; torch's Node is
    # a virtual base, tracegrad's a real one, so the mro assertions are left out)
    Node = T.autograd.graph.Node
    a = rn(T, 3, 3, grad=True)
    b = a.exp()
    assert isinstance(b.grad_fn, Node) and issubclass(type(b.grad_fn), Node)
    assert isinstance(b.grad_fn.next_functions[0][0], Node)
    assert not isinstance(None, Node) and not isinstance(1, Node) and not isinstance(Node, Node)
    assert issubclass(Node, Node) and issubclass(T.autograd.function.BackwardCFunction, Node)
    seen = []

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(isinstance(ctx, Node))
            return x

        @staticmethod
        def backward(ctx, g):
            seen.append(isinstance(ctx, Node))
            return g

    out = Func.apply(a)
    assert isinstance(out.grad_fn, Node) and issubclass(type(out.grad_fn), Node)
    out.sum().backward()
    assert seen == [True, True]
