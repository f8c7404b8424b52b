"""Ported from PyTorch's test/test_autograd.py (TestAutogradForwardMode): dual levels, packing
and unpacking, tangents reused as-is, version counters, views and in-place ops on dual tensors,
detach, no_grad, level cleanup. Each body runs under torch 2.13 (the oracle) and tracegrad
through the ``T`` fixture; each test names its original.

Adapted: torch's ``_C._WeakTensorRef`` is ``weakref.ref``; ``storage().data_ptr()`` is the
tensor's ``data_ptr()`` (every tensor compared starts at offset 0). Not ported: the metadata
checks on conj/neg bits and storage numel (tracegrad tensors have neither), inference tensors
and ``__torch_function__`` subclasses, and the batched forward-grad tests (vmap over tangents).
"""
import gc
import weakref

import pytest


@pytest.fixture(autouse=True)
def _no_level_left(T):
    yield
    fa = T.autograd.forward_ad
    while True:      # a failing test must not leave its level open for the next one
        try:
            fa.exit_dual_level()
        except RuntimeError:
            break


def _eq(a, b):
    return a.shape == b.shape and bool((a.detach() == b.detach()).all())


def test_forward_level_cleanup(T):
    # TestAutogradForwardMode.test_forward_level_cleanup
    fa = T.autograd.forward_ad
    foo = T.rand(2)
    with fa.dual_level():
        tangent = T.rand(2, requires_grad=True)
        ref = weakref.ref(tangent)
        dual = fa.make_dual(foo, tangent)
        assert fa.unpack_dual(dual)[1] is tangent          # reused as-is
        del tangent
        gc.collect()
        assert ref() is not None                           # the dual keeps it alive
        del dual
        gc.collect()
        assert ref() is None                               # the level does not


def test_size_check(T):
    # TestAutogradForwardMode.test_size_check
    fa = T.autograd.forward_ad
    foo, tangent = T.rand(2), T.rand(3)
    with fa.dual_level():
        with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a different size"):
            fa.make_dual(foo, tangent)
        fa.make_dual(foo, tangent[1:])


def test_default_level(T):
    # TestAutogradForwardMode.test_default_level
    fa = T.autograd.forward_ad
    foo, bar = T.rand(2), T.rand(2)
    with fa.dual_level():
        baz = fa.make_dual(foo, bar)
        baz_primal, baz_tangent = fa.unpack_dual(baz)
    assert _eq(baz_primal, foo) and baz_tangent is bar
    baz_primal, baz_tangent = fa.unpack_dual(baz)
    assert _eq(baz_primal, foo) and baz_tangent is None


def test_nested_level(T):
    # TestAutogradForwardMode.test_nested_level
    fa = T.autograd.forward_ad
    with fa.dual_level() as level:
        assert level == 0
    with fa.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
            fa.enter_dual_level()


def test_print(T):
    # TestAutogradForwardMode.test_print
    fa = T.autograd.forward_ad
    with fa.dual_level():
        a = T.rand(3)
        assert "tangent=" not in str(a)
        b = fa.make_dual(a, T.rand(3))
        assert "tangent=" not in str(a) and "tangent=" in str(b)
        b_primal, b_tangent = fa.unpack_dual(b)
        assert "tangent=" not in str(b_primal) and "tangent=" not in str(b_tangent)


def test_basic_packing_unpacking(T):
    # TestAutogradForwardMode.test_basic_packing_unpacking
    fa = T.autograd.forward_ad
    foo, bar = T.rand(2), T.rand(2)
    with fa.dual_level():
        baz = fa.make_dual(foo, bar)
        baz_primal, baz_tangent = fa.unpack_dual(baz)
        assert _eq(baz_primal, foo) and baz_tangent is bar
        foo_primal, foo_tangent = fa.unpack_dual(foo)
        assert _eq(foo_primal, foo) and foo_tangent is None


def test_advanced_packing_unpacking(T):
    # TestAutogradForwardMode.test_advanced_packing_unpacking
    fa = T.autograd.forward_ad
    foo, bar = T.rand(2), T.ones(2)
    with fa.dual_level():
        dual = fa.make_dual(foo, bar)
        assert dual.data_ptr() == foo.data_ptr()            # memory and version counter shared
        assert foo._version == dual._version
        foo.add_(1)
        assert foo._version == dual._version
        dual_primal, dual_tangent = fa.unpack_dual(dual)    # unpacking makes aliases only
        assert dual_primal.data_ptr() == foo.data_ptr() and dual_tangent.data_ptr() == bar.data_ptr()
        assert dual_tangent is bar
        assert foo._version == dual_primal._version
        foo.add_(1)
        assert foo._version == dual_primal._version
        assert bar._version == dual_tangent._version
        bar.add_(1)
        assert bar._version == dual_tangent._version

    with fa.dual_level():     # backward mode through packing and unpacking
        foo.requires_grad_()
        bar.requires_grad_()
        dual = fa.make_dual(foo, bar)
        p, t = fa.unpack_dual(dual)
        gfoo, gbar = T.autograd.grad(p.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        assert _eq(gfoo, T.ones_like(foo)) and gbar is None
        gfoo, gbar = T.autograd.grad(t.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        assert gfoo is None and _eq(gbar, T.ones_like(bar))

        p, t = fa.unpack_dual(dual.detach() * 2)            # detach() drops the tangent
        assert not p.requires_grad and _eq(p, foo * 2) and t is None

        with T.no_grad():                                   # no_grad does not
            out = dual * 3
        p, t = fa.unpack_dual(out)
        assert not p.requires_grad and not t.requires_grad
        assert _eq(p, foo * 3) and _eq(t, bar * 3)

        dual = dual.clone()                                 # nor does detach_() keep it
        dual.detach_()
        p, t = fa.unpack_dual(dual * 2)
        assert not p.requires_grad and _eq(p, foo * 2) and t is None


def test_view_inplace_non_differentiable_views(T):
    # TestAutogradForwardMode.test_view_inplace_non_differentiable_views
    fa = T.autograd.forward_ad
    original_foo = T.rand(2, dtype=T.double)
    original_bar = T.ones(2, dtype=T.double)
    foo, bar = original_foo.clone(), original_bar.clone()
    with fa.dual_level():
        dual = fa.make_dual(foo, bar)
        dual *= 2
        assert fa.unpack_dual(foo)[1] is None               # make_dual's view is not updated
        assert _eq(bar, original_bar * 2)
        assert _eq(fa.unpack_dual(dual)[1], original_bar * 2)
        assert _eq(foo, original_foo * 2)
        assert _eq(fa.unpack_dual(dual)[0], original_foo * 2)
        dual_primal, dual_tangent = fa.unpack_dual(dual)
        assert fa.unpack_dual(dual_primal)[1] is None
        assert fa.unpack_dual(dual_tangent)[1] is None
        dual_primal *= 2
        assert _eq(fa.unpack_dual(dual)[0], original_foo * 4)
        assert _eq(fa.unpack_dual(dual)[1], original_bar * 2)
        dual_tangent *= 2
        assert _eq(fa.unpack_dual(dual)[0], original_foo * 4)
        assert _eq(fa.unpack_dual(dual)[1], original_bar * 4)


def test_view_inplace_differentiable_views(T):
    # TestAutogradForwardMode.test_view_inplace_differentiable_views
    fa = T.autograd.forward_ad
    foo, bar = T.rand(2), T.ones(2)
    with fa.dual_level():
        dual = fa.make_dual(foo, bar)
        view = dual.narrow(0, 0, 1)
        view *= 2
        assert fa.unpack_dual(foo)[1] is None
        assert _eq(fa.unpack_dual(dual)[1], T.tensor([2.0, 1.0]))
        assert _eq(fa.unpack_dual(view)[1], T.tensor([2.0]))

        baz = T.rand(2)             # a tensor that was not dual becomes dual
        baz += dual
        assert _eq(fa.unpack_dual(baz)[1], fa.unpack_dual(dual)[1])
        baz = T.rand(2)             # through a view too
        baz[0] = dual[0]
        assert _eq(fa.unpack_dual(baz)[1][0], fa.unpack_dual(dual)[1][0])
        assert fa.unpack_dual(baz)[1][1].item() == 0.0

        baz = T.rand(2)             # a detach()ed alias does not pass the tangent to its source
        view = baz.detach()
        view += dual
        assert fa.unpack_dual(baz)[1] is None


def test_grad_cleanup(T):
    # TestAutogradForwardMode.test_grad_cleanup
    fa = T.autograd.forward_ad
    foo, bar, baz = T.rand(2), T.rand(2), T.rand(2)
    with fa.dual_level():
        dual = fa.make_dual(foo, bar)
        assert fa.unpack_dual(foo)[1] is None
        assert fa.unpack_dual(dual)[1] is bar
    assert fa.unpack_dual(dual)[1] is None
    with fa.dual_level():
        assert fa.unpack_dual(foo)[1] is None
        new_dual = fa.make_dual(foo, baz)
        dual_primal, dual_tangent = fa.unpack_dual(dual)
        new_dual_primal, new_dual_tangent = fa.unpack_dual(new_dual)
        assert _eq(dual_primal, new_dual_primal) and dual_tangent is None
        assert _eq(new_dual_tangent, baz)


def test_detach_view_tracking(T):
    # TestAutogradForwardMode.test_detach_view_tracking: detach() keeps no reference to its source
    foo = T.rand(2)
    ref = weakref.ref(foo)
    out = foo.detach()   # noqa: F841
    del foo
    gc.collect()
    assert ref() is None


def test_inplace_on_view_base(T):
    # TestAutogradForwardMode.test_inplace_on_view_base: a view of a non-dual base written with
    # a dual value gives the base a tangent, zero outside the view
    fa = T.autograd.forward_ad
    with fa.dual_level():
        base = T.zeros(2, 3)
        view = base[0]
        view.copy_(fa.make_dual(T.ones(3), T.tensor([1.0, 2.0, 3.0])))
        assert _eq(fa.unpack_dual(base)[1], T.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
        assert _eq(fa.unpack_dual(view)[1], T.tensor([1.0, 2.0, 3.0]))
        other = base[1]             # a view taken afterwards sees the base's tangent
        assert _eq(fa.unpack_dual(other)[1], T.zeros(3))


def test_out_variant(T):
    # TestAutogradForwardMode.test_out_variant
    fa = T.autograd.forward_ad
    with fa.dual_level():
        foo = fa.make_dual(T.rand(2), T.rand(2))
        bar = T.rand(2)
        with pytest.raises(RuntimeError, match="out= function"):
            T.add(bar, bar, out=foo)
        with pytest.raises(RuntimeError, match="out= function"):
            T.add(foo, bar, out=bar)


def test_non_differentiable(T):
    # TestAutogradForwardMode.test_non_differentiable: ops with no derivative give no tangent
    fa = T.autograd.forward_ad
    with fa.dual_level():
        foo = fa.make_dual(T.rand(2), T.rand(2))
        assert fa.unpack_dual(foo.eq(foo))[1] is None
        assert fa.unpack_dual(T.argmax(foo))[1] is None


def test_backward_graph_destruction(T):
    # TestAutogradForwardMode.test_backward_graph_destruction: a level closed while a graph
    # built under it is still alive, then the graph is freed
    fa = T.autograd.forward_ad

    def fn():
        a = T.rand(10, requires_grad=True)
        da = fa.make_dual(T.rand_like(a), a)
        db = (da.exp() * 2).sum()    # the tangent's history holds tensors of the level
        return db
    with fa.dual_level():
        fn()
    gc.collect()


@pytest.mark.parametrize("op", ["add_", "mul_", "copy_"])
def test_view_inplace_always_creates_a_view(T, op):
    # TestAutogradForwardMode.test_view_inplace_always_creates_a_view: a non-dual view written
    # with a dual value: its base's primal and tangent are both tied to the view afterwards
    fa = T.autograd.forward_ad
    base = T.randn(2, 2)
    view = base.transpose(0, 1)
    with fa.dual_level():
        dual = fa.make_dual(T.randn(2, 2), T.randn(2, 2))
        getattr(view, op)(dual)
        p, t = fa.unpack_dual(base)
        p_clone, t_clone = p.clone(), t.clone()
        view *= 2
        p, t = fa.unpack_dual(base)
        assert T.allclose(p_clone * 2, p) and T.allclose(t_clone * 2, t)


@pytest.mark.parametrize("op", ["uniform_", "normal_", "bernoulli_", "zero_", "fill_", "floor_"])
def test_inplace_without_derivative_zeroes_the_tangent(T, op):
    # random fills, constant fills and piecewise-constant ops leave a zero tangent (torch's
    # formulas for them)
    fa = T.autograd.forward_ad
    args = {"bernoulli_": (0.5,), "fill_": (2.0,)}.get(op, ())
    with fa.dual_level():
        x = fa.make_dual(T.rand(3), T.ones(3))
        getattr(x, op)(*args)
        assert _eq(fa.unpack_dual(x).tangent, T.zeros(3))
