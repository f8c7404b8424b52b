"""Ported from PyTorch's test/test_autograd.py and test/autograd/ (each test names its
original). Bodies run under torch and tracegrad (the ``T`` fixture): torch 2.13 checks the
expectations, tracegrad must meet them."""
import gc

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# ---- autograd.grad / .grad assignment ------------------------------------------------------
def test_grad_empty_inputs(T):
    # TestAutograd.test_grad_empty_inputs (torch 2.13 raises RuntimeError; older: ValueError)
    x = T.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="inputs"):
        T.autograd.grad(2 * x, [], grad_outputs=T.tensor([1.0]))


@pytest.mark.parametrize("bad", ["shape", "dtype"])
def test_grad_assignment_checks(T, bad):
    # TestAutograd.test_grad_assignment ("assigned grad has data of a different size/type")
    x = T.ones(2, 3, requires_grad=True)
    g = T.ones(3, 2) if bad == "shape" else T.ones(2, 3, dtype=T.float64)
    with pytest.raises(RuntimeError):
        x.grad = g


# ---- hooks ---------------------------------------------------------------------------------
def test_hook_order_node_prehooks_and_post_accumulate(T):
    # test/autograd/test_hooks-style ordering, TestAutograd.test_post_accumulate_grad_hook_ordering
    log = []
    a = T.ones(2, requires_grad=True)
    b = a * 2
    c = b.sum()
    b.register_hook(lambda g: log.append("tensor"))
    b.grad_fn.register_prehook(lambda g: log.append("pre1"))
    b.grad_fn.register_prehook(lambda g: log.append("pre2"))
    b.retain_grad()
    a.register_post_accumulate_grad_hook(lambda t: log.append("pag1"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("pag2"))
    b.grad_fn.register_hook(lambda gi, go: log.append("post"))
    c.backward()
    assert log == ["tensor", "pre1", "pre2", "post", "pag1", "pag2"]
    assert _np(b.grad).tolist() == [1.0, 1.0]


def test_post_accumulate_grad_hook_on_non_leaf(T):
    # TestAutograd.test_post_accumulate_grad_hook_on_non_leaf
    b = T.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        b.register_post_accumulate_grad_hook(lambda t: None)


@pytest.mark.parametrize("returns", ["new", "self"])
def test_post_accumulate_grad_hook_returns_not_none(T, returns):
    # TestAutograd.test_post_accumulate_grad_hook_returns_not_None: a new value is an error;
    # torch 2.13 tolerates the hook returning the tensor itself
    a = T.ones(2, requires_grad=True)
    a.register_post_accumulate_grad_hook(lambda t: t * 100 if returns == "new" else t)
    if returns == "new":
        with pytest.raises(RuntimeError, match="should return None"):
            (a * 2).sum().backward()
    else:
        (a * 2).sum().backward()
        assert _np(a.grad).tolist() == [2.0, 2.0]


def test_post_accumulate_grad_hook_sees_accumulated_grad(T):
    # TestAutograd.test_post_accumulate_grad_hook_gets_cleaned_up / _multiple_hooks (values)
    a = T.ones(3, requires_grad=True)
    seen = []
    a.register_post_accumulate_grad_hook(lambda t: seen.append(_np(t.grad).tolist()))
    (a * 2).sum().backward()
    (a * 3).sum().backward()
    assert seen == [[2.0] * 3, [5.0] * 3]


# ---- in-place on views ---------------------------------------------------------------------
@pytest.mark.parametrize("split", ["unbind", "split", "chunk"])
def test_inplace_on_multi_output_view(T, split):
    # test/autograd (TestAutogradDeviceType).test_inplace_on_view_multi_output_safe
    base = T.ones(4, 2, requires_grad=True).clone()
    views = {"unbind": lambda: base.unbind(), "split": lambda: base.split(2),
             "chunk": lambda: base.chunk(2)}[split]()
    with pytest.raises(RuntimeError, match="multiple views"):
        views[0].mul_(2)


def test_inplace_on_multi_output_view_without_grad_writes_base(T):
    # same test, the no-grad half: writing a multi-output view of a plain tensor is allowed
    base = T.ones(2, 3)
    x, _ = base.unbind()
    x.mul_(2)
    assert _np(base).tolist() == [[2.0] * 3, [1.0] * 3]


def test_retain_grad_inplace_over_view(T):
    # TestAutograd.test_retain_grad_inplace_on_view: the retained grad follows the base onto
    # its CopySlices history
    a = T.ones(3, requires_grad=True)
    b = a * 1
    b.retain_grad()
    b[:2].mul_(2)
    b.sum().backward()
    assert _np(b.grad).tolist() == [1.0, 1.0, 1.0]
    assert _np(a.grad).tolist() == [2.0, 2.0, 1.0]


def test_backprop_through_view_after_inplace_on_base(T):
    # TestAutograd.test_inplace_on_view_backprop_view / test_inplace_on_view_gradcheck-style
    a = T.ones(4, requires_grad=True)
    b = a.clone()
    v = b[1:3]
    b.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * v).sum().backward()
    assert _np(a.grad).tolist() == [0.0, 8.0, 8.0, 0.0]


def test_inplace_view_of_view(T):
    # TestAutograd.test_inplace_view_of_view
    a = T.ones(4, requires_grad=True)
    b = a.clone()
    v = b[1:][:2]
    v.mul_(3)
    b.sum().backward()
    assert _np(a.grad).tolist() == [1.0, 3.0, 3.0, 1.0]


def test_detach_then_inplace_over_saved(T):
    # TestAutograd.test_detach_base / test_inplace_on_view_saved_output (version error names it)
    a = T.ones(3, requires_grad=True)
    b = a.sin()
    c = b.cos()
    b.detach().zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_version_counter_error_names_output(T):
    # TestAutograd.test_saved_variable_version_counter: the message names the op's output
    a = T.ones(3, requires_grad=True)
    b = a.exp()
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of Exp, is at version 1; expected version 0"):
        b.sum().backward()


@pytest.mark.parametrize("case", ["input_rebased", "leaf_detached"])
def test_version_counter_error_names_current_op(T, case):
    # TestAutograd.test_saved_variable_version_counter / test_inplace_not_requires_grad: an input
    # is named by the op that last wrote it; a leaf (through detach) is named by nothing
    a = T.ones(3, requires_grad=True)
    if case == "input_rebased":
        b = a.sin()
        c = b * b
        b.add_(1)
        pattern = r"\], which is output 0 of Add, is at version 1"
    else:
        b = a.detach()
        c = a * b
        b.add_(1)
        pattern = r"\] is at version 1; expected version 0"
    with pytest.raises(RuntimeError, match=pattern):
        c.sum().backward()


# ---- inference mode ------------------------------------------------------------------------
def test_inference_mode_inf_tensor_in_normal_mode_inplace_op(T):
    # test/autograd/test_inference_mode-style: TestAutograd.test_inference_mode_inf_tensor_in_normal_mode_inplace_op
    with T.inference_mode():
        x = T.ones(2)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        x.add_(1)


def test_inference_mode_inf_tensor_in_normal_mode_functional_op(T):
    # TestAutograd.test_inference_mode_inf_tensor_in_normal_mode_functional_op (saving one errors)
    with T.inference_mode():
        x = T.ones(2)
    y = T.ones(2, requires_grad=True)
    out = x + 1
    assert not out.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (y * x).sum()


def test_inference_mode_inf_tensor_in_normal_mode_view_op(T):
    # TestAutograd.test_inference_mode_inf_tensor_in_normal_mode_view_op: views of an inference
    # tensor are inference tensors, also outside the mode
    with T.inference_mode():
        x = T.ones(2, 3)
    for v in (x[:1], x.view(6), x.transpose(0, 1), x.unbind()[0]):
        assert v.is_inference()


def test_inference_mode_tensor_creation_and_multi_output(T):
    # TestAutograd.test_inference_mode_tensor_creation (+ a multi-output op inside the mode)
    with T.inference_mode():
        made = [T.ones(2), T.tensor([1.0]), T.zeros_like(T.ones(2)), *T.ones(4).sort()]
    assert all(t.is_inference() for t in made)
    normal = T.ones(2, 3)
    with T.inference_mode():
        assert not normal[:1].is_inference()   # a view of a normal tensor stays normal
        assert (normal * 2).is_inference()


# ---- custom Function ----------------------------------------------------------------------
def test_function_returns_input_twice(T):
    # TestAutograd.test_function_returns_input / test_function_returns_undefined_tensor family
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2

    a = T.ones(2, requires_grad=True)
    x, y = F.apply(a)
    assert x is not y
    (x + 2 * y).sum().backward()
    assert _np(a.grad).tolist() == [3.0, 3.0]


def test_setup_context_sees_forward_defaults(T):
    # TestAutogradFunction (test/autograd/test_functional... test_setup_context_when_forward_has_default_args)
    class F(T.autograd.Function):
        @staticmethod
        def forward(x, k=3.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            assert len(inputs) == 2
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    a = T.ones(2, requires_grad=True)
    F.apply(a).sum().backward()
    assert _np(a.grad).tolist() == [3.0, 3.0]


def test_mark_dirty_view_of_leaf(T):
    # TestAutograd.test_custom_function_mark_dirty_on_view_of_leaf (error at apply)
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = T.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        F.apply(a[:2])


@pytest.mark.parametrize("bad", ["arity", "shape"])
def test_function_backward_returns_wrong(T, bad):
    # TestAutograd.test_function_returns_invalid_grad_count / test_invalid_gradients
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g if bad == "arity" else (T.ones(3), g)

    a = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients" if bad == "arity" else "invalid gradient"):
        F.apply(a, a).sum().backward()


# ---- gradients at kinks (TestAutograd.test_pow_zero_tensor_gradient, test_atan2, ...) -----
def test_pow_zero_tensor_gradient(T):
    # TestAutograd.test_pow_zero_tensor_gradient
    a = T.tensor([0.0, 1.0], requires_grad=True)
    (a ** a).sum().backward()
    assert _np(a.grad).tolist() == [0.0, 1.0]
    b = T.zeros(3, requires_grad=True)
    (b ** T.zeros(3)).sum().backward()
    assert _np(b.grad).tolist() == [0.0] * 3


def test_atan2_at_origin(T):
    # test_ops-style gradcheck of atan2 at (0, 0): torch zeroes the reciprocal there
    a = T.zeros(1, requires_grad=True)
    b = T.zeros(1, requires_grad=True)
    T.atan2(a, b).sum().backward()
    assert _np(a.grad).tolist() == [0.0] and _np(b.grad).tolist() == [0.0]


def test_max_min_ties(T):
    # TestAutograd.test_max_min_backward ties: max() over all spreads evenly; min picks
    a = T.tensor([1.0, 3.0, 3.0], requires_grad=True)
    a.max().backward()
    assert _np(a.grad).tolist() == [0.0, 0.5, 0.5]


# ---- memory: a dropped graph is freed without the cyclic GC --------------------------------
def test_graph_dropped_without_backward_freed_by_refcount(T):
    # TestAutograd.test_free_unneeded_tensor-style: with gc off, dropping the last reference
    # to an output whose node saved it must free the storage
    import weakref
    gc.collect()
    gc.disable()
    try:
        x = T.ones(8, requires_grad=True)
        y = x.exp()   # ExpBackward0 saves its result: y <-> its node must not be a cycle
        r = weakref.ref(y)
        del y
        assert r() is None
        y = x.exp()
        y.mul_(2)     # the in-place op's saved result is y again
        r = weakref.ref(y)
        del y
        assert r() is None
    finally:
        gc.enable()


def test_saved_output_still_checked_and_differentiable(T):
    # TestAutograd.test_saved_variable_saved_original_inplace_detach-style: the saved result is
    # still version-checked, and double backward through it works
    x = T.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    assert np.allclose(_np(gg), np.exp([0.5, 1.0]))
    y2 = x.sigmoid()
    y2.mul_(1)   # rebases y2; the sigmoid node's saved result is now stale
    assert y2.grad_fn.name() == "MulBackward0"
