"""Round 8 of PyTorch's own test/test_autograd.py, ported for the ``T`` fixture: the
TestAutogradDeviceType methods no earlier round ported (in-place ops on views and their
gradients, multi-output views, gradients spread over tied min/max values, grad layouts, real to
complex copies, Python scalar conversions, version bumps) and TestAllowMutationOnSaved. Each
body runs under torch 2.13 (the oracle, so every expectation here is torch's) and under
tracegrad, device 'cpu', float32/float64. Each test names the original it ports. Random inputs
are fixed numpy draws; ``gradcheck``/``gradgradcheck`` run in float64 on small shapes.

Not ported: CUDA/multi-device/stream tests, sparse tensors, channels_last layouts (tracegrad has
no memory formats: ``test_strided_leaf_grad_layout`` keeps its contiguous and non-dense halves),
``torch._C`` internals and profiler/NVTX tests."""
import itertools
import math
import sys

import numpy as np
import pytest

from _ported_helpers import eq as _eq, rn as _rn, to_np


_np = to_np


def eq(a, b, tol=1e-6):
    return _eq(a, b, tol)


def rn(T, *shape, seed=0, dtype="float64", grad=False):
    return _rn(T, *shape, seed=seed, dtype=dtype, grad=grad)


# ==== TestAutogradDeviceType =====================================================================
@pytest.mark.parametrize("fname", ["min", "max", "median", "nanmedian"])
def test_min_max_median_backprops_to_all_values(T, fname):
    # test_min_max_median_backprops_to_all_values: ties share the gradient evenly
    f = getattr(T, fname)
    for vals in ([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [float("nan")] * 3):
        x = T.tensor(vals, requires_grad=True)
        f(x).backward()
        assert abs(x.grad.sum().item() - 1.0) < 1e-6
        assert (x.grad == 1 / 3).sum().item() == 3


@pytest.mark.parametrize("fname,reduction", list(itertools.product(["scatter_reduce", "index_reduce"], ["amin", "amax"])))
def test_scatter_index_reduce_amin_amax_backprops_to_all_values(T, fname, reduction):
    # test_scatter_index_reduce_amin_amax_backprops_to_all_values: src equal to input (all ties)
    inp = rn(T, 2, 3, grad=True)
    src = inp.clone().detach_().requires_grad_(True)
    idx = T.arange(2)
    if fname == "scatter_reduce":
        idx = idx.unsqueeze(-1).expand((2, 3))
    assert T.autograd.gradcheck(getattr(T, fname), (inp, 0, idx, src, reduction), check_batched_grad=False)
    out = getattr(T, fname)(inp, 0, idx, src, reduction)
    out.sum().backward()
    assert eq(inp.grad, np.full((2, 3), 0.5)) and eq(src.grad, np.full((2, 3), 0.5))


def test_parameter_resize(T):
    # test_parameter_resize: a Parameter set_ to a slice of itself under no_grad, then used
    asd = T.nn.Parameter(T.ones(16, dtype=T.double))
    for n in (15, 14):
        with T.no_grad():
            asd.set_(asd[1:])
            asd.grad = None
        m = T.cat((asd, asd))
        m.sum().backward()
        assert tuple(asd.shape) == (n,)
        assert eq(asd.grad, np.full(n, 2.0))


def test_pyscalar_conversions(T):
    # test_pyscalar_conversions: int()/float()/bool() of one-element tensors
    lt = T.zeros(1, 1, 1, dtype=T.long)
    lt[0] = -12345
    assert int(lt) == -12345
    f = rn(T, 1, 1)
    f[0] = -12345.1
    assert float(f) == -12345.1
    f[0] = math.nan
    assert math.isnan(float(f))
    f[0] = math.inf
    assert float(f) == math.inf
    f[0] = -math.inf
    assert float(f) == -math.inf
    big = 1234567890123456789
    lt[0] = big
    assert float(lt) == float(big)
    f[0] = math.nan
    with pytest.raises(ValueError):
        int(f[0])
    for v in (math.inf, -math.inf):
        f[0] = v
        with pytest.raises(OverflowError):
            int(f[0])
    f[0] = sys.float_info.max
    assert int(f) == int(sys.float_info.max)
    for t, v, want in ((lt, 0, False), (lt, -2, True), (f, 0.0, False), (f, sys.float_info.min, True),
                       (f, math.nan, True), (f, math.inf, True), (f, -math.inf, True)):
        t[0] = v
        assert bool(t) is want and bool(t) is want


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int16", "int32", "int64"])
def test_set_requires_grad_only_for_floats(T, dtype):
    # test_set_requires_grad_only_for_floats
    d = getattr(T, dtype)
    a = T.ones(1, dtype=d)
    a.requires_grad = False
    a.requires_grad_(False)

    def f1():
        T.ones(1, dtype=d).requires_grad_()

    def f2():
        T.ones(1, dtype=d).requires_grad = True

    def f3():
        T.ones(1, dtype=d, requires_grad=True)
    for f in (f1, f2, f3):
        if d.is_floating_point:
            f()
        else:
            with pytest.raises(RuntimeError, match="floating point"):
                f()


def test_advanced_indexing_backwards(T):
    # test_advanced_indexing_backwards_memory_format (contiguous index): repeated positions add up
    x = rn(T, 2, 8, 1, 2, grad=True)
    i = T.tensor(np.random.RandomState(1).randint(0, 2, (2, 8, 1, 2)))
    x[i].sum().backward()
    want = np.zeros((2, 8, 1, 2))
    for k in np.asarray(i.tolist()).reshape(-1):
        want[k] += 1
    assert eq(x.grad, want)


def test_where_functional_and_scalar(T):
    # test_where_functional, test_where_scalar: gradcheck/gradgradcheck of where, with broadcasting
    cond = T.tensor(np.random.RandomState(2).rand(3, 3) > 0.5)
    x, y = rn(T, 3, 3, grad=True), rn(T, 3, 3, seed=1, grad=True)
    gc, ggc = T.autograd.gradcheck, T.autograd.gradgradcheck
    assert gc(T.where, (cond, x, y), raise_exception=True)
    assert ggc(T.where, (cond, x, y), (rn(T, 3, 3, seed=3),))
    x, y = rn(T, 3, 1, 3, grad=True), rn(T, 3, 3, 1, seed=1, grad=True)
    assert gc(T.where, (cond, x, y), raise_exception=True)
    assert ggc(T.where, (cond, x, y), (rn(T, 3, 3, 3, seed=4),))
    x = rn(T, 3, 3, grad=True)
    assert gc(lambda c, x: T.where(c, 4.0, x), (cond, x))
    assert ggc(lambda c, x: T.where(c, x, 4.0), (cond, x))


def test_grad_assignment(T):
    # test_grad_assignment (cpu part): wrong type, shape, dtype and self-assignment raise
    x = rn(T, 5, 5, dtype="float32")
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = 0
    with pytest.raises(RuntimeError):
        x.grad = rn(T, 2, 2, dtype="float32")
    with pytest.raises(RuntimeError):
        x.grad = T.zeros(5, 5, dtype=T.long)
    with pytest.raises(RuntimeError):
        x.grad = x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_requires_grad_factory(T, dtype):
    # test_requires_grad_factory: ones_like/randn_like honour dtype and requires_grad
    d = getattr(T, dtype)
    x = rn(T, 2, 3).to(d)
    for fn in (T.ones_like, T.randn_like):
        for rg in (True, False):
            out = fn(x, dtype=d, device="cpu", requires_grad=rg)
            assert out.requires_grad == rg and out.dtype is d and str(x.device) == "cpu"


def test_copy_(T):
    # test_copy_: copying a grad-requiring tensor into any floating dtype records the graph
    x = rn(T, 10, dtype="float32", grad=True)
    for dt in (T.float16, T.bfloat16, T.float32, T.float64):
        y = T.empty(10, dtype=dt)
        y.copy_(x)
        assert y.requires_grad
        assert x.to(T.bfloat16).requires_grad


def test_copy_forward_ad(T):
    # test_copy_forward_ad_broadcasting, test_copy_forward_ad_same_layout_copies_grad
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        dual = fwAD.make_dual(rn(T, 3, 3), rn(T, 3, 3, seed=1))
        non_dual = rn(T, 1, 3, 3, seed=2)
        non_dual.copy_(dual)
        assert eq(fwAD.unpack_dual(non_dual).tangent, _np(rn(T, 3, 3, seed=1))[None])
    primal = T.tensor([[3.0], [4.0]])
    tangent = T.tensor([[5.0], [6.0]])
    with fwAD.dual_level():
        x_dual = fwAD.make_dual(primal, tangent)
        nd = T.tensor([[1.0], [2.0]])
        nd.copy_(x_dual)
        t = fwAD.unpack_dual(nd).tangent
        assert t is not tangent and eq(t, [[5.0], [6.0]])


def test_inplace_on_view_backprop_base(T):
    # test_inplace_on_view_backprop_base
    root = rn(T, 2, 2, grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[2, 2], [1, 1]]


def test_inplace_on_view_backprop_view_of_view(T):
    # test_inplace_on_view_backprop_view_of_view
    root = rn(T, 2, 2, grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = x.narrow(0, 0, 1)
    v1.mul_(2)
    v2.sum().backward()
    assert root.grad.tolist() == [[2, 2], [0, 0]]


def test_inplace_on_view_of_view(T):
    # test_inplace_on_view_of_view
    root = rn(T, 2, 2, grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1]]


def test_inplace_on_view_then_no_grad(T):
    # test_inplace_on_view_then_no_grad: reading grad_fn under no_grad, then backward
    a = T.ones(3, 1, dtype=T.double, requires_grad=True)
    c = (a * 2).view_as(a)
    c[0][0] = 3
    with T.no_grad():
        assert c.grad_fn is not None
    c.sum().backward()
    assert a.grad.tolist() == [[0.0], [2.0], [2.0]]


def test_inplace_on_view_gradcheck(T):
    # test_inplace_on_view_gradcheck
    a, b = rn(T, 4, 4, grad=True), rn(T, 2, 2, seed=1, grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
        x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
        return x
    assert T.autograd.gradcheck(func, [a, b], raise_exception=True)
    assert T.autograd.gradgradcheck(func, (a, b), (rn(T, 4, 4, seed=2, grad=True),))


def test_inplace_on_view_multiple_outputs(T):
    # test_inplace_on_view_multiple_outputs, test_inplace_on_view_of_multiple_output_view,
    # test_inplace_multiple_output_view_of_view: unbind's views refuse in-place ops
    root = T.arange(9.0, dtype=T.double).reshape(3, 3).requires_grad_()
    with pytest.raises(RuntimeError):
        root.clone().unbind()[0].mul_(2)
    a = rn(T, 10, grad=True).clone()
    b = a.unbind(0)
    with pytest.raises(RuntimeError):
        b[0].view_as(b[0]).mul_(2)
    a = rn(T, 10, grad=True).clone()
    with pytest.raises(RuntimeError):
        a.view_as(a).unbind(0)[0].mul_(2)


def test_inplace_on_view_makes_base_require_grad(T):
    # test_inplace_on_view_makes_base_require_grad
    a, b = rn(T, 4, 4), rn(T, 4, 2, seed=1, grad=True)
    seen = []

    def func(root, b):
        x = root.clone()
        seen.append(x.requires_grad)
        x.narrow(1, 2, 2).mul_(b)
        seen.append(x.requires_grad)
        return x
    assert T.autograd.gradcheck(func, [a, b], raise_exception=True)
    assert seen[:2] == [False, True]
    assert T.autograd.gradgradcheck(func, (a, b), (rn(T, 4, 4, seed=2, grad=True),))


def test_inplace_on_view_backprop_view(T):
    # test_inplace_on_view_backprop_view
    a = T.tensor([2.0, 5.0])
    b = T.tensor([3.0], requires_grad=True)
    a.narrow(0, 1, 1).mul_(b).sum().backward()
    assert b.grad.tolist() == [5]
    assert a.grad is None


def test_inplace_on_view_modify_base(T):
    # test_inplace_on_view_modify_base: an earlier view follows its base into the graph
    r = T.ones(1, dtype=T.double, requires_grad=True)
    flags = []

    def fn(r):
        x = T.ones(5, dtype=T.double)
        v = x.select(0, 1)
        flags.append((v.requires_grad, v.grad_fn is None))
        x.add_(r)
        flags.append((v.requires_grad,))
        return v
    assert T.autograd.gradcheck(fn, [r])
    assert T.autograd.gradgradcheck(fn, [r])
    assert flags[0] == (False, True) and flags[1] == (True,)


def test_inplace_on_view_python(T):
    # test_inplace_on_view_python: a custom Function that marks its view input dirty (the base
    # gets a CopySlices of the Function's node)
    class PyAdd(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x
    a, b = rn(T, 4, 4, grad=True), rn(T, 2, 2, seed=1, grad=True)
    assert T.autograd.gradcheck(func, [a, b], raise_exception=True)
    assert T.autograd.gradgradcheck(func, (a, b), (rn(T, 4, 4, seed=2, grad=True),))
    out = func(a, b)
    assert type(out.grad_fn).__name__ == "CopySlices"
    out.sum().backward()
    assert eq(a.grad, np.ones((4, 4))) and eq(b.grad, np.full((2, 2), 2.0))


def test_inplace_on_view_non_contig(T):
    # test_inplace_on_view_non_contig
    root = T.ones(2, 3, 2).select(2, 1).t().requires_grad_(True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1], [1, 1]]


def test_inplace_on_view_multi_output_unsafe_and_safe(T):
    # test_inplace_on_view_multi_output_unsafe, test_inplace_on_view_multi_output_safe
    for f in (lambda t: t.unsafe_split(1), lambda t: t.unsafe_split_with_sizes((1, 1, 1)),
              lambda t: t.unsafe_chunk(3)):
        a = rn(T, 3, 3, dtype="float32", grad=True)
        s1, s2, s3 = f(a + a)
        s1.mul_(s2)
        s1.sum().backward()
        # s1 = b0 * b1 with b = 2a: d/da0 = 2 b1 = 4 a1, d/da1 = 2 b0 = 4 a0
        assert eq(a.grad, np.concatenate([4 * _np(a[1:2]), 4 * _np(a[0:1]), np.zeros((1, 3))]), tol=1e-5)
    for f in (lambda t: t.split(1), lambda t: t.split_with_sizes((1, 1, 1)), lambda t: t.chunk(3)):
        a = rn(T, 3, 3, dtype="float32", grad=True)
        s1, s2, s3 = f(a + a)
        with pytest.raises(RuntimeError, match="This view is the output of a function that returns multiple views."):
            s1.mul_(s2)


def test_inplace_on_view_undefined_grad_output(T):
    # test_inplace_on_view_undefined_grad_output: a None gradient for the other input
    a = T.tensor([1.0], requires_grad=True)
    v = a.clone()[:]
    b = T.tensor(1.0, requires_grad=True)

    class InplaceFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None
    InplaceFunc.apply(v, b).backward()
    assert b.grad is None
    assert a.grad.item() == 2


def test_mv_grad_stride_0(T):
    # test_mv_grad_stride_0: a matrix-vector product with an expanded (stride 0) vector
    mat = rn(T, 2, 2)
    vec = rn(T, 1, seed=1, grad=True)

    def fn(vec):
        return (mat @ vec.expand(2)).sum()
    assert T.autograd.gradcheck(fn, (vec,))
    assert T.autograd.gradgradcheck(fn, (vec,))


def test_strided_leaf_grad_layout(T):
    # test_strided_leaf_grad_layout (contiguous and non-dense halves)
    a = T.rand((2, 3, 4, 5)).requires_grad_()
    b = T.rand((2, 3, 4, 5)).requires_grad_()
    a.sum().backward()
    assert a.grad.stride() == a.stride()
    a.grad = None
    (a * b).sum().backward()
    assert a.grad.stride() == a.stride() and b.grad.stride() == b.stride()
    c = T.empty_strided((2, 2), (4, 2)).copy_(T.rand((2, 2)))
    c.requires_grad_()
    c.sum().backward()
    assert c.grad.stride() == (2, 1)
    c.grad = None
    (c * T.rand((2, 2))).sum().backward()
    assert c.grad.stride() == (2, 1)


def test_copy_r_to_c_and_to_r_to_c(T):
    # test_copy_r_to_c, test_to_r_to_c: a real leaf's grad is the real part, no warning
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out_c = T.empty(3, 2, dtype=T.cdouble)
        inp = rn(T, 3, 2, grad=True)
        out_c.copy_(inp)
        s = out_c.sum()
        s.abs().backward()
        with T.no_grad():
            assert eq(inp.grad, _np(T.ones_like(inp) * T.sgn(s).real))
        inp = rn(T, 3, 2, seed=1, grad=True)
        s = inp.to(T.complex128).sum()
        s.abs().backward()
        with T.no_grad():
            assert eq(inp.grad, _np(T.ones_like(inp) * T.sgn(s).real))


def test_non_differentiable_ops(T):
    # test_non_differentiable_ops: isin and signbit results never require grad
    x = T.tensor([[1, 2], [3, 4.0]], requires_grad=True)
    assert not T.isin(x, T.tensor([2, 3])).requires_grad
    assert not T.signbit(rn(T, 3, 3, grad=True)).requires_grad


def test_complex_scalar_backward(T):
    # test_complex_scalar_backward
    a = T.zeros(1, requires_grad=True)
    b = a * 0.5j
    msg = "grad can be implicitly created only for real scalar outputs"
    with pytest.raises(RuntimeError, match=msg):
        b.backward()
    with pytest.raises(RuntimeError, match=msg):
        T.autograd.grad(b, a)


def test_pow_real_negative_base_complex_exponent(T):
    # test_pow_real_negative_base_complex_exponent
    base = -T.ones(2, dtype=T.double)
    e = T.tensor(np.random.RandomState(3).standard_normal(2) + 1j * np.random.RandomState(4).standard_normal(2),
                 requires_grad=True)
    assert T.autograd.gradcheck(lambda e: T.pow(base, e), (e,))
    assert T.autograd.gradcheck(lambda e: T.pow(-1, e), (e,))


def test_resize_version_bump(T):
    # test_resize_version_bump: a resize that changes the shape bumps the version; a no-op does not
    x = T.rand((1,))
    y = rn(T, 3)
    x.resize_((1, 2))
    assert x._version == 1
    x.resize_as_(y)
    assert x._version == 2
    x.resize_((3,))
    assert x._version == 2
    x.resize_as_(y)
    assert x._version == 2


# ==== TestAllowMutationOnSaved ===================================================================
def _ctx(T):
    return T.autograd.graph.allow_mutation_on_saved_tensors()


def test_allow_mutation_basic_and_views(T):
    # TestAllowMutationOnSaved.test_basic, test_views
    for use_view in (False, True):
        a = rn(T, 2, 3, dtype="float32", grad=True)

        def fn(a):
            b = a.clone()
            c = b.view_as(b) if use_view else b
            out = (b ** 2).sum()
            c.sin_()
            out.sum().backward()
            return a.grad
        with pytest.raises(RuntimeError, match="variables needed for gradient computation has been modified by an inplace"):
            fn(a)
        a.grad = None
        with _ctx(T):
            da = fn(a)
        assert eq(da, _np(a * 2), tol=1e-5)


def test_allow_mutation_save_base_modify_view_and_back(T):
    # TestAllowMutationOnSaved.test_save_base_and_modify_view, test_save_view_modify_base
    with _ctx(T):
        a = rn(T, 2, 3, dtype="float32", grad=True)
        b = a.clone()
        c = b[:1]
        out = b ** 2
        c *= 10
        out.sum().backward()
    assert eq(a.grad, _np(a * 2), tol=1e-5)
    with _ctx(T):
        a = rn(T, 2, 3, dtype="float32", grad=True)
        b = a.clone()
        out = (b[:] ** 2).sum()
        b *= 2
        out.backward()
        assert eq(a.grad, _np(a * 2), tol=1e-5)


def test_allow_mutation_double_backward(T):
    # TestAllowMutationOnSaved.test_double_backward
    with _ctx(T):
        a = rn(T, 2, 3, dtype="float32", grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        T.autograd.grad(out, a, create_graph=True)
        (da,) = T.autograd.grad(out, a, create_graph=True)
        (d2a,) = T.autograd.grad(da.sum(), a)
    assert eq(d2a, np.full((2, 3), 2.0))


def test_allow_mutation_with_math_views_and_out(T):
    # TestAllowMutationOnSaved.test_with_math_views, test_with_out_variant
    with _ctx(T):
        a = T.tensor([1 + 1j], requires_grad=True)
        out = (a.clone().conj() ** 2).sum()
        out.abs().backward()
        assert a.grad is not None
        a = T.tensor([1.0], requires_grad=True)
        b = T.tensor([1.0])
        out = a * b
        T.sin(T.tensor([2.0]), out=b)
        out.backward()
        assert a.grad.tolist() == [1.0]


def test_allow_mutation_backward_out_of_context(T):
    # TestAllowMutationOnSaved.test_backward_out_of_context
    msg = "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    with _ctx(T):
        a = rn(T, 2, 3, dtype="float32", grad=True)
        out = (a ** 2).sum()
    with pytest.raises(AssertionError, match=msg):
        out.backward()
    with _ctx(T):
        a = rn(T, 2, 3, dtype="float32", grad=True)
        out = (a ** 2).sum()
    with _ctx(T):
        with pytest.raises(AssertionError, match=msg):
            out.backward()


def test_allow_mutation_disallow_nesting(T):
    # TestAllowMutationOnSaved.test_disallow_nesting
    with _ctx(T):
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
            with _ctx(T):
                pass


def test_allow_mutation_inplace_foreach(T):
    # TestAllowMutationOnSaved.test_inplace_foreach
    with _ctx(T):
        a = [T.tensor(1.0, requires_grad=True), T.tensor(1.0, requires_grad=True)]
        b = T._foreach_exp(a)
        T._foreach_add_(b, 1)
        (b[0] + b[1]).backward()
    assert eq(a[0].grad, math.e) and eq(a[1].grad, math.e)
