"""Custom ``autograd.Function`` behaviour from PyTorch's test/test_autograd.py (TestAutograd),
ported for the ``T`` fixture: each body runs under torch 2.13 (the oracle) and tracegrad, and
each test names the original it ports. Ports already living in tests/autograd/test_function.py
and tests/conformance/test_autograd_ported*.py / test_ported_round3.py are not repeated.

Covered: forward/backward values and double backward (graph of the gradient), python scalars
and non-tensor outputs, ``None`` gradients, wrong gradients (shape, type, count, for a
non-tensor input), setup_context in its three shapes, ctx lifetime (stashed ctx, saved None,
saved inputs and outputs, the ctx/output cycle), returning inputs, leaves and duplicates,
mark_dirty on leaves and on views with several outputs, mark_non_differentiable, views
returned by a Function, reentrant backward (a backward or a hook that runs autograd itself),
the error a raising backward gives, grad_fn class/name/next_functions and hooks on outputs.

Skipped: forward-mode AD (``jvp``, ``save_for_forward``, dual tensors: tracegrad has no
``autograd.forward_ad``), ``vmap``/``generate_vmap_rule`` and torch.func over Functions, CUDA
and multi-device tests, ``torch._C`` internals (``UndefinedGrad``, ``_WeakTensorRef``,
``_will_engine_execute_node``, ``_raw_saved_tensors``, ``_input_metadata``), the
``queue_callback`` reentrant tests, tensor subclasses / ``__torch_function__`` and the
150000-deep graph tests (run here at a depth that keeps the file fast).
"""
import gc
import warnings
import weakref

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def _graph(fn):
    """``ClassName(child, ...)`` of a node and everything below it (torch's ``graph_desc``)."""
    if fn is None:
        return "None"
    return type(fn).__name__ + "(" + ", ".join(_graph(n) for n, _ in fn.next_functions) + ")"


def _rand(T, *shape, seed=0, **kw):
    return T.tensor(np.random.RandomState(seed).rand(*shape).tolist(), **kw)


# ---- values, scalars, double backward --------------------------------------------------------
def _scalar_mix(T, once):
    """a + k*b + a*b with a python scalar ``k`` between two tensors (TestAutograd.test_function)."""
    def backward(ctx, g):
        assert T.is_grad_enabled() is not once
        a, b = ctx.saved_tensors
        assert isinstance(a, T.Tensor) and isinstance(g, T.Tensor)
        return g + g * b, None, g * ctx.k + g * a

    class ScalarMix(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            ctx.k = k
            ctx.save_for_backward(a, b)
            return a + k * b + a * b

    ScalarMix.backward = staticmethod(T.autograd.function.once_differentiable(backward) if once else backward)
    return ScalarMix


@pytest.mark.parametrize("once", [False, True])
def test_function_create_graph(T, once):
    # TestAutograd.test_function / test_once_differentiable: grads right, and with create_graph
    # the grads have a graph -- through the backward's ops, or through the Error node that
    # once_differentiable puts in front of the Function's inputs
    x, y = _rand(T, 2, 3, requires_grad=True), _rand(T, 2, 3, seed=1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch: backward(create_graph=True) warns of a cycle
        _scalar_mix(T, once).apply(x, 2, y).sum().backward(T.ones((), requires_grad=True), create_graph=True)
    np.testing.assert_allclose(_np(x.grad), _np(y) + 1, rtol=1e-6)
    np.testing.assert_allclose(_np(y.grad), _np(x) + 2, rtol=1e-6)
    if once:   # one Error node, an edge per gradient the backward returned (None included)
        for t in (x, y):
            assert "Error(AccumulateGrad(), None, AccumulateGrad())" in _graph(t.grad.grad_fn)
        with pytest.raises(RuntimeError, match="once_differentiable"):
            x.grad.sum().backward()
    else:
        assert x.grad.grad_fn is not None and y.grad.grad_fn is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (gx,) = T.autograd.grad(x.grad.sum(), y)     # d/dy of (1 + y) summed
        assert _np(gx).tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("once", [False, True])
def test_function_create_graph_graph_desc(T, once):
    # TestAutograd.test_function / test_once_differentiable (graph_desc of x.grad.grad_fn)
    x, y = _rand(T, 2, 3, requires_grad=True), _rand(T, 2, 3, seed=1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _scalar_mix(T, once).apply(x, 2, y).sum().backward(T.ones((), requires_grad=True), create_graph=True)
    want = ("CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))" if once else
            "CopyBackwards(None, AddBackward0(ExpandBackward0(AccumulateGrad()), "
            "MulBackward0(ExpandBackward0(AccumulateGrad()), AccumulateGrad())))")
    assert _graph(x.grad.grad_fn) == want


@pytest.mark.parametrize("shape", [(1,), ()])
def test_function_returns_input_scalar_shapes(T, shape):
    # TestAutograd.test_function_returns_input: a leaf and a clone returned as-is, 0-d and 1-d
    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    v = T.ones(shape, requires_grad=True)
    Id.apply(v).backward()
    assert _np(v.grad).tolist() == np.full(shape, 2.0).tolist()
    with T.no_grad():
        v.grad.zero_()
    Id.apply(v.clone()).backward()
    assert _np(v.grad).tolist() == np.full(shape, 2.0).tolist()


def test_function_returns_undefined_tensor(T):
    # TestAutograd.test_function_returns_undefined_tensor: a None gradient stays undefined (no
    # zeros appear in .grad), through a leaf, through another op, and for autograd.grad
    class NoGrad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None

    x = T.ones(1, requires_grad=True)
    NoGrad.apply(x).backward()
    assert x.grad is None
    NoGrad.apply(x ** 2).backward()
    assert x.grad is None
    NoGrad.apply(x).sum().backward()
    assert x.grad is None
    assert T.autograd.grad(NoGrad.apply(x), x, allow_unused=True)[0] is None


def test_custom_function_non_tensor_inputs_outputs(T):
    # TestAutograd.test_custom_function_non_tensor_inputs_outputs: non-tensor outputs get None
    # gradients, non-tensor inputs take None, an input returned as-is gets its gradient
    seen = []

    class Mixed(T.autograd.Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = (t1 + t2 * t3) * scale
            t5 = (t1 * t2 + t3) * scale
            ctx.scale = scale
            ctx.save_for_backward(t1, t2, t3)
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, *grads):
            seen.append([g is None for g in grads])
            s = ctx.scale
            v1, v2, v3 = ctx.saved_tensors
            return (grads[1] * s + grads[4] * v2 * s + grads[6], grads[1] * v3 * s + grads[4] * v1 * s,
                    None, grads[1] * v2 * s + grads[4] * s)

    t1 = _rand(T, 4, dtype=T.float64, requires_grad=True)
    t2 = _rand(T, 4, seed=1, dtype=T.float64, requires_grad=True)
    t3 = _rand(T, 4, seed=2, dtype=T.float64)
    res = Mixed.apply(t1, t2, 3, t3)
    assert res[0] == 3 and res[2] is None and res[3] is True and res[5] == "bar"
    np.testing.assert_allclose(_np(res[1]), (_np(t1) + _np(t2) * _np(t3)) * 3)
    np.testing.assert_allclose(_np(res[4]), (_np(t1) * _np(t2) + _np(t3)) * 3)
    assert _np(res[6]).tolist() == _np(t1).tolist() and res[6] is not t1
    T.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert seen == [[True, False, True, True, False, True, False]]
    np.testing.assert_allclose(_np(t1.grad), 3 + _np(t2) * 3 + 1)
    np.testing.assert_allclose(_np(t2.grad), _np(t3) * 3 + _np(t1) * 3)
    assert t3.grad is None
    assert T.autograd.gradcheck(lambda a, b, c: [Mixed.apply(a, b, 3, c)[i] for i in (1, 4, 6)], (t1, t2, t3))


def test_custom_function_no_tensors(T):
    # TestAutograd.test_custom_function_no_tensors: apply with python numbers only is forward
    class Plain(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, scale, c):
            return scale, (a + b * c) * scale, None, True, (a * b + c) * scale, "bar", a

        @staticmethod
        def backward(ctx, *gs):
            raise AssertionError("no graph: backward never runs")

    assert Plain.apply(0.5, 0.25, 4, 2.0) == (4, 4.0, None, True, 8.5, "bar", 0.5)


# ---- wrong gradients ---------------------------------------------------------------------
def _returns(T, value):
    """A Function ``x * 2`` (extra arguments ignored) whose backward returns ``value(g)``."""
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, *rest):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return value(g)
    return Bad


def test_invalid_gradients_shape(T):
    # TestAutograd.test_invalid_gradients: a gradient that cannot be summed to the input's shape
    x = T.ones(5, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected shape"):
        _returns(T, lambda g: T.ones(10, dtype=T.float64)).apply(x).sum().backward()


def test_gradient_other_dtype_is_cast(T):
    # TestAutograd.test_invalid_gradients (dtype half): a float64 gradient for a float32 input
    # is cast to the input's dtype, not an error
    x = T.ones(3, requires_grad=True)
    _returns(T, lambda g: g.double() * 3).apply(x).sum().backward()
    assert x.grad.dtype == T.float32 and _np(x.grad).tolist() == [3.0] * 3


def test_gradient_not_a_tensor(T):
    # validate_outputs in torch's python_function: backward returning a number is refused
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected Variable or None"):
        _returns(T, lambda g: 3).apply(x).sum().backward()


def test_gradient_for_non_tensor_input(T):
    # TestAutograd.test_function (the python scalar's slot must get None)
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="position 2, but the corresponding forward input was not a Variable"):
        _returns(T, lambda g: (g, g)).apply(x, 2.0).sum().backward()


def test_gradient_broadcast_shape_is_summed(T):
    # validate_outputs in torch's engine: a gradient the input's shape expands to is summed
    # back to that shape (leading and size-1 dimensions)
    x = T.ones(1, 3, requires_grad=True)
    _returns(T, lambda g: g.expand(4, 2, 3)).apply(x).sum().backward()
    assert _np(x.grad).tolist() == [[8.0] * 3]


def test_too_many_grads_trailing_none(T):
    # TestAutograd.test_too_many_grads: extra trailing Nones are accepted and dropped
    x = T.ones(3, requires_grad=True)
    _returns(T, lambda g: (g * 4, None, None)).apply(x).sum().backward()
    assert _np(x.grad).tolist() == [4.0] * 3


def test_custom_function_error(T):
    # TestAutograd.test_custom_function_error: the messages for a missing forward / backward and
    # for defining both backward and vjp
    class NoForward(T.autograd.Function):
        @staticmethod
        def backward(ctx, g):
            return g

    class NoBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

    class Both(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    x = T.ones(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        NoForward.apply(x)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        NoBackward.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        Both.apply(x).sum().backward()


def test_custom_function_exception(T):
    # TestAutograd.test_custom_function_exception: the backward's own exception reaches the
    # caller of .backward() unchanged (class and message)
    class Raises(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            raise ValueError("Simulate error on backward pass")

    t1, t2 = T.ones(3, 3, requires_grad=True), T.ones(3, 3, requires_grad=True)
    out = Raises.apply((t1 + t2) * (t1 + t2))
    with pytest.raises(ValueError, match="Simulate error on backward pass"):
        out.sum().backward()


# ---- setup_context ---------------------------------------------------------------------------
def test_custom_function_setup_context_simple(T):
    # TestAutograd.test_custom_function_setup_context_simple
    class Square(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = T.tensor(1.5, requires_grad=True)
    (gx,) = T.autograd.grad(Square.apply(x), x)
    assert gx.item() == 3.0


def test_custom_function_setup_context_multi_output(T):
    # TestAutograd.test_custom_function_setup_context_multi_output: setup_context sees the whole
    # output tuple, including its non-tensor part
    class Square(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2, x.item() * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.two_x = output[1]

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g, _):
            return g * ctx.two_x

    x = T.tensor(1.5, requires_grad=True)
    y, two_x = Square.apply(x)
    assert two_x == 3.0
    (gx,) = T.autograd.grad(y, x)
    assert gx.item() == 3.0


@pytest.mark.parametrize("shape,scales", [((24,), ((3, 8), 7, 11)), ((2, 3, 4), ((6, 4), -1, 2))])
def test_custom_function_setup_context_multi_input(T, shape, scales):
    # TestAutograd.test_custom_function_setup_context_multi_input: the same Function written
    # with setup_context and with a ctx-taking forward gives the same values and gradients
    def bwd(ctx, g):
        return g.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    class New(T.autograd.Function):
        @staticmethod
        def forward(x, shape, scale_forward, scale_backward):
            return x.reshape(shape) * scale_forward

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.x_shape, ctx.scale_backward = inputs[0].shape, inputs[3]

        backward = staticmethod(bwd)

    class Old(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, shape, scale_forward, scale_backward):
            ctx.x_shape, ctx.scale_backward = x.shape, scale_backward
            return x.reshape(shape) * scale_forward

        backward = staticmethod(bwd)

    x = _rand(T, *shape, requires_grad=True)
    results = []
    for fn in (New, Old):
        y = fn.apply(x, *scales).sum()
        results.append((y.item(), _np(T.autograd.grad(y, x)[0])))
    assert results[0][0] == pytest.approx(results[1][0])
    assert results[0][1].tolist() == results[1][1].tolist() == np.full(shape, scales[2]).tolist()


# ---- ctx and saved tensors ---------------------------------------------------------------------
def test_naughty_autograd_function_stashing_ctx(T):
    # TestAutograd.test_naughty_autograd_function_stashing_ctx: a ctx kept by its backward. In
    # torch 2.13 the stashed ctx keeps a retained graph's saved tensors (the original expected an
    # error there); after a backward without retain_graph, saved_tensors raises RuntimeError
    stash = []

    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            stash.append(ctx)
            return ctx.saved_tensors

    p = T.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward(retain_graph=True)
    del loss
    gc.collect()
    assert stash[0].saved_tensors[0] is p
    stash.clear()
    Id.apply(p * 1).backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        stash[0].saved_tensors


def test_save_none_for_backward(T):
    # TestAutograd.test_save_none_for_backward: None saved between tensors comes back as None
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x, None)
            return x * x

        @staticmethod
        def backward(ctx, g):
            n1, x, n2 = ctx.saved_tensors
            assert n1 is None and n2 is None
            return 2 * x * g

    x = _rand(T, 5, requires_grad=True)
    F.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * _np(x), rtol=1e-6)


def test_custom_function_saved_tensors(T):
    # TestAutograd.test_custom_function_saved_tensors (public part): saved_tensors through
    # grad_fn, the freed-graph error after backward, and () when nothing was saved
    def make(save):
        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                if save:
                    ctx.save_for_backward(x, None)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return F

    a = _rand(T, 5, requires_grad=True)
    y = make(True).apply(a)
    saved = y.grad_fn.saved_tensors
    assert len(saved) == 2 and saved[0] is a and saved[1] is None
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors
    assert make(False).apply(a).grad_fn.saved_tensors == ()


def test_saved_variables_deprecated(T):
    # TestAutograd.test_saved_variables_deprecated: ctx.saved_variables still works and warns
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x + y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_variables
            return g * 0 + x, g * 0 + y

    x, y = T.ones(2, requires_grad=True), T.full((2,), 3.0, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated"):
        F.apply(x, y).sum().backward()
    assert _np(x.grad).tolist() == [1.0, 1.0] and _np(y.grad).tolist() == [3.0, 3.0]


def _double_fns(T):
    class Double(T.autograd.Function):
        """x**2, saving input and output; backward from the input."""

        @staticmethod
        def forward(ctx, x):
            y = x ** 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, _ = ctx.saved_tensors
            return g * 2 * x

    class Double2(Double):
        """Same, but backward from the saved output (2*y/x)."""

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 2 * y / x
    return Double, Double2


def test_custom_autograd_no_early_free(T):
    # TestAutograd.test_custom_autograd_no_early_free: a saved output stays usable through
    # gradcheck/gradgradcheck and through double backward of both variants
    Double, Double2 = _double_fns(T)
    x = (_rand(T, 3, dtype=T.float64) + 0.5).requires_grad_()
    assert T.autograd.gradcheck(Double.apply, (x,))
    assert T.autograd.gradgradcheck(Double.apply, (x,))
    assert T.autograd.gradcheck(Double2.apply, (x,))
    assert T.autograd.gradgradcheck(Double2.apply, (x,))
    y = Double.apply(x)
    T.autograd.grad(y.sum(), x, create_graph=True)
    T.autograd.grad(y.sum(), x)        # the first create_graph call freed nothing
    y = Double2.apply(x)
    T.autograd.grad(y.sum(), x, create_graph=True)
    T.autograd.grad(y.sum(), x)


def test_custom_autograd_repeated_grad_grad(T):
    # TestAutograd.test_custom_autograd_repeated_grad_grad: grad-of-grad through a Function
    # whose backward reads a saved output is the same when taken twice on one graph, and equals
    # the one through plain ops
    class Mult(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.prod(dim=-1).prod(dim=-1)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return (g * y)[:, None, None] / x

    def twice(x, y):
        out = []
        for _ in range(2):
            (gy,) = T.autograd.grad(y[0], x, create_graph=True)
            (ggy,) = T.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
            out.append(_np(ggy))
        np.testing.assert_array_equal(out[0], out[1])
        return out[0]

    x = T.ones(2, 3, 3).requires_grad_()
    ref = twice(x, x.prod(dim=-1).prod(dim=-1))
    np.testing.assert_allclose(twice(x, Mult.apply(x)), ref, rtol=1e-6)


def test_naughty_autograd_function_attribute_access(T):
    # TestAutograd.test_naughty_autograd_function_attribute_access (public part): instantiating
    # a Function warns and still gives an instance; calling it is the legacy-style error; apply
    # names the node <Name>Backward
    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    assert isinstance(f, Id)
    x = T.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        f(x)
    assert Id.apply(x).grad_fn.name() == "IdBackward"


def test_custom_autograd_ac_early_stop(T):
    # TestAutograd.test_custom_autograd_ac_early_stop: under non-reentrant checkpoint a Function
    # runs twice (forward, recompute) and nothing it saved outlives the backward. (The original
    # asserts this with gc off; torch 2.13 keeps the forward's copy in a cycle until a
    # collection, and tracegrad the recomputed one, so this port collects first.)
    refs = []

    class Keep(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.clone()
            ctx.save_for_backward(y)
            refs.append(weakref.ref(y))
            return y

        @staticmethod
        def backward(ctx, *gs):
            ctx.saved_tensors
            return None

    inp = _rand(T, 3, 3, requires_grad=True)

    def scope():
        out = T.utils.checkpoint.checkpoint(Keep.apply, inp, use_reentrant=False)
        out.sum().backward()

    scope()
    gc.collect()
    assert len(refs) == 2 and all(r() is None for r in refs)


def test_custom_function_cycle(T):
    # TestAutograd.test_custom_function_cycle: an output kept in a ctx attribute (a cycle
    # output -> node -> ctx dict -> output) is collected by gc, with and without a backward
    class Keep(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, meta):
            x = x.clone()
            ctx.meta = meta
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert x.item() == pytest.approx(3.14) and ctx.meta["foo"].item() == pytest.approx(3.14)
            return g * x, None

    def scope(with_backward):
        a = T.tensor(3.14, requires_grad=True)
        meta = {}
        out = Keep.apply(a, meta)
        meta["foo"] = out
        if with_backward:
            out.sum().backward()
            assert a.grad.item() == pytest.approx(3.14)
        return weakref.ref(out)

    for with_backward in (False, True):
        gc.collect()
        gc.disable()
        try:
            ref = scope(with_backward)
            assert ref() is not None      # only the cycle keeps it
        finally:
            gc.enable()
        gc.collect()
        assert ref() is None


# ---- returning inputs, leaves and duplicates ---------------------------------------------------
def test_return_leaf(T):
    # TestAutograd.test_return_leaf: an input returned as-is is a new node output, so a hook on
    # it sees only the gradient that flows through it, not the leaf's other uses
    class Ident(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga + gb, gb

    seen = []
    x, y = T.ones(2, 2, requires_grad=True), T.ones(2, 2, requires_grad=True)
    q, p = Ident.apply(x, y)
    q.register_hook(lambda g: seen.append(_np(g).tolist()))
    (q + p + x).sum().backward()
    assert seen == [[[1.0, 1.0]] * 2]
    assert _np(x.grad).tolist() == [[3.0, 3.0]] * 2 and _np(y.grad).tolist() == [[1.0, 1.0]] * 2


def test_return_leaf_inplace(T):
    # TestAutograd.test_return_leaf_inplace: a dirty input that did not require grad is the
    # output object itself, now with the Function's node
    class Inplace(T.autograd.function.InplaceFunction):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga + gb

    x, y = T.ones(2, 2), T.ones(2, 2, requires_grad=True)
    q, p = Inplace.apply(x, y)
    assert q is x and q.requires_grad
    assert type(q.grad_fn).__name__ == "InplaceBackward" and q.grad_fn is p.grad_fn
    assert _np(x).tolist() == [[2.0, 2.0]] * 2
    q.sum().backward()
    assert _np(y.grad).tolist() == [[1.0, 1.0]] * 2


def test_return_duplicate(T):
    # TestAutograd.test_return_duplicate: one new tensor returned twice is one object; its two
    # gradients reach backward separately
    class Dup(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            return out, out

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    def fn(x):
        a, b = Dup.apply(x)
        assert a is b
        return a + b

    x = _rand(T, 3, dtype=T.float64, requires_grad=True)
    assert T.autograd.gradcheck(fn, (x,)) and T.autograd.gradgradcheck(fn, (x,))


def test_return_duplicate_takes_last_position(T):
    # TestAutograd.test_return_duplicate (which slot): the one object's edge is its last
    # position, so that slot gets the gradient and the earlier ones get zeros
    seen = []

    class Three(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y, y

        @staticmethod
        def backward(ctx, *gs):
            seen.append([_np(g).tolist() for g in gs])
            return sum(gs)

    p, q, r = Three.apply(T.ones(2, requires_grad=True))
    assert p is q is r and p.output_nr == 2
    p.sum().backward()
    assert seen == [[[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]]


def test_return_duplicate_inplace(T):
    # TestAutograd.test_return_duplicate_inplace: a dirty input returned twice; a leaf that
    # requires grad is refused, and so is a view when the Function has more than one output
    class DupInplace(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    def fn(x):
        a, b = DupInplace.apply(x.clone())
        assert a is b
        return a + b

    x = _rand(T, 3, dtype=T.float64, requires_grad=True)
    assert T.autograd.gradcheck(fn, (x,)) and T.autograd.gradgradcheck(fn, (x,))
    assert DupInplace.apply(x.clone())[0].output_nr == 1
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        DupInplace.apply(x)
    with pytest.raises(RuntimeError, match="cannot return more than one Tensor"):
        DupInplace.apply(x.clone()[0])


def test_custom_function_local_inplace(T):
    # TestAutograd.test_custom_function_local_inplace: in-place ops on forward's own temporaries
    # (a view of a clone) leave the output's grad_fn the Function's node
    class Slice(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, g):
            return T.cat([g, g.new_zeros(7)]), None

    base = _rand(T, 10, requires_grad=True)
    for inplace in (False, True):
        out = Slice.apply(base, inplace)
        assert type(out.grad_fn).__name__ == "SliceBackward"
        np.testing.assert_allclose(_np(out), _np(base)[:3] + (2 if inplace else 0), rtol=1e-6)


def test_custom_function_return_view_in_nograd(T):
    # TestAutograd.test_custom_function_return_view_in_nograd: applied under no_grad, a view
    # output behaves like the same view op (no grad), and writing it in place under grad mode
    # is refused as a view made inside a custom Function
    class Alias(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, g):
            return g

    inp = _rand(T, 2, requires_grad=True)
    with T.no_grad():
        out = Alias.apply(inp)
        expected = inp[:]
    assert out.requires_grad == expected.requires_grad
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        out.zero_()


def test_custom_function_view_output_inplace(T):
    # TestAutograd.test_autograd_simple_views_python (the inplace part): a view returned by a
    # Function under grad mode may not be modified in place
    class Alias(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, g):
            return g

    out = Alias.apply(_rand(T, 2, requires_grad=True))
    assert type(out.grad_fn).__name__ == "AliasBackward"
    with pytest.raises(RuntimeError, match="Output 0 of Alias is a view and is being modified inplace"):
        out.zero_()


def test_function_returns_input_inplace_refused(T):
    # TestAutograd.test_function_returns_input / test_autograd_simple_views_python: the alias
    # of an input returned as-is may not be modified in place
    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    out = Id.apply(T.ones(2, requires_grad=True).clone())
    with pytest.raises(RuntimeError, match="Output 0 of Id is a view and is being modified inplace"):
        out.add_(1)


def test_mark_dirty_non_input_warns(T):
    # custom_function.cpp _wrap_outputs: mark_dirty on a tensor forward made (not an input)
    # warns when the graph is recorded and is otherwise harmless
    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            t = x * 2
            ctx.mark_dirty(t)
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = T.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="mark_dirty.. received a tensor that was not an input"):
        y = Dirty.apply(x)
    y.sum().backward()
    assert _np(x.grad).tolist() == [2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Dirty.apply(T.ones(2))


def test_saved_tensors_hooks_on_function(T):
    # TestAutograd saved-tensor hooks on a custom Function (test_custom_function_saved_tensors,
    # the intermediates case): pack runs at save for the input and for a tensor made in forward
    # (not None), in order; unpack runs when backward reads them and its values are used
    log = []

    class Saves(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inter = x.exp()
            ctx.save_for_backward(x, inter, None)
            return inter * 2

        @staticmethod
        def backward(ctx, g):
            x, inter, none = ctx.saved_tensors
            assert none is None
            return g * inter * 2

    def pack(t):
        log.append(("pack", _np(t).round(4).tolist()))
        return t * 10

    def unpack(t):
        log.append(("unpack", _np(t).round(4).tolist()))
        return t / 10

    x = T.tensor([0.0, 1.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = Saves.apply(x)
    assert log == [("pack", [0.0, 1.0]), ("pack", [1.0, 2.7183])]
    y.sum().backward()
    assert log[2:] == [("unpack", [0.0, 10.0]), ("unpack", [10.0, 27.1828])]
    np.testing.assert_allclose(_np(x.grad), 2 * np.exp([0.0, 1.0]), rtol=1e-5)


def test_integer_output_not_differentiable(T):
    # TestAutograd.test_mark_non_differentiable-style: an integer output needs no marking; its
    # gradient reaches backward materialized as an integer zero
    seen = []

    class ArgMax(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x.argmax()

        @staticmethod
        def backward(ctx, g, g_idx):
            seen.append((g_idx.dtype == T.int64, g_idx.item()))
            return g * 2

    x = T.tensor([1.0, 3.0, 2.0], requires_grad=True)
    y, idx = ArgMax.apply(x)
    assert y.requires_grad and not idx.requires_grad and idx.grad_fn is None and idx.item() == 1
    y.sum().backward()
    assert seen == [(True, 0)] and _np(x.grad).tolist() == [2.0] * 3


# ---- mark_non_differentiable ------------------------------------------------------------------
def test_mark_non_differentiable_none(T):
    # TestAutograd.test_mark_non_differentiable_none: the only output non-differentiable: it
    # does not require grad, and backward through other uses of the input works
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.clone()
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return None

    x = _rand(T, 3, 3, requires_grad=True)
    r = F.apply(x * x)
    assert not r.requires_grad and r.grad_fn is None
    (r * x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(x) ** 2, rtol=1e-6)


def test_non_differentiable_input_returned_and_no_grad_apply(T):
    # TestAutograd.test_no_grad_input / test_mark_non_differentiable_mixed: an input returned
    # as-is and marked non-differentiable is a new alias without history; forward always runs
    # with grad off and sees needs_input_grad from its inputs, under no_grad too; a second
    # save_for_backward replaces the first
    seen = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append((tuple(ctx.needs_input_grad), T.is_grad_enabled()))
            ctx.mark_non_differentiable(x)
            ctx.save_for_backward(x)
            ctx.save_for_backward(y * 3)
            return x, y * 2

        @staticmethod
        def backward(ctx, gx, gy):
            seen.append(_np(gx).tolist())
            (y3,) = ctx.saved_tensors
            return None, gy * y3

    a, b = T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)
    with T.no_grad():
        p, q = F.apply(a, b)
    assert p is not a and not p.requires_grad and not q.requires_grad and q.grad_fn is None
    p, q = F.apply(a, b)
    assert p is not a and not p.requires_grad and p.grad_fn is None and q.grad_fn.name() == "FBackward"
    (q + q).sum().backward()
    assert seen == [((True, True), False), ((True, True), False), [0.0, 0.0]]
    assert _np(b.grad).tolist() == [6.0, 6.0] and a.grad is None


def test_dep_nograd(T):
    # TestAutograd.test_dep_nograd: a non-differentiable output feeding another Function does
    # not make it require a gradient there
    class F1(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = T.ones(x.shape)
            ctx.mark_non_differentiable(out)
            return x, out

        @staticmethod
        def backward(ctx, g, ignored):
            return g

    class F2(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, ignored):
            assert ctx.needs_input_grad == (True, False)
            return x

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = _rand(T, 5, requires_grad=True)
    a, b = F1.apply(x)
    b = b + 1
    assert not b.requires_grad
    F2.apply(a, b).backward(T.ones(5))
    assert _np(x.grad).tolist() == [1.0] * 5


def test_set_materialize_grads_none_for_unused_and_nondiff(T):
    # TestAutograd.test_set_materialize_non_diff_grads / test_dont_materialize_grads: with
    # set_materialize_grads(False) both an unused output and a non-differentiable one get None
    seen = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            a, b, c = x.clone(), x.clone(), x.clone()
            ctx.mark_non_differentiable(c)
            return a, b, c

        @staticmethod
        def backward(ctx, ga, gb, gc):
            seen.append((ga is None, gb is None, gc is None))
            return ga

    x = T.tensor(1.0, requires_grad=True)
    F.apply(x)[0].backward()
    assert seen == [(False, True, True)] and x.grad.item() == 1.0


# ---- reentrant backward ---------------------------------------------------------------------
def test_simple_reentrant(T):
    # TestAutograd.test_simple_reentrant: a backward that runs .backward() on a graph forward
    # built under enable_grad
    y_data = _rand(T, 2, 2, seed=3)

    class Reenter(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with T.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = y_data.detach().requires_grad_()
                ctx.out = ctx.x * ctx.y
            return ctx.out.detach()

        @staticmethod
        def backward(ctx, g):
            with T.enable_grad():
                ctx.out.sum().backward()
            return ctx.x.grad * g

    x = _rand(T, 2, 2, requires_grad=True)
    Reenter.apply(x).sum().backward()
    assert _np(x.grad).tolist() == _np(y_data).tolist()


def test_reentrant_child_error(T):
    # TestAutograd.test_reentrant_child_error: an error in a reentrant (child) backward reaches
    # the outer .backward() caller
    class Raises(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("Simulate error on backward pass")

    b = T.ones(3, 3, requires_grad=True)
    inner_root = Raises.apply(b * b).sum()

    class Reentrant(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            inner_root.backward()
            return g

    a = T.ones(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Simulate error"):
        Reentrant.apply(a * a).sum().backward()


def test_grad_mode_restored_reentrant(T):
    # TestAutograd.test_grad_mode_restored_reentrant: autograd.grad inside a backward under
    # enable_grad; grad mode afterwards is what the engine set (off, or on with create_graph)
    modes = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            before = T.is_grad_enabled()
            with T.enable_grad():
                foo = T.full(g.shape, 2.0, requires_grad=True)
                (grad,) = T.autograd.grad(foo ** 3, foo, grad_outputs=g)
                inside = T.is_grad_enabled()
            modes.append((before, inside, T.is_grad_enabled()))
            return grad

    inp = T.ones(3, requires_grad=True)
    F.apply(inp).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.apply(inp).sum().backward(create_graph=True)
    assert modes == [(False, True, False), (True, True, True)]
    assert _np(inp.grad).tolist() == [24.0] * 3


def test_reentrant_with_leaf_variable_hook(T):
    # TestAutograd.test_reentrant_with_leaf_variable_hook: a leaf's hook that runs its own
    # backward (and resets .grad) inside the outer one
    param = _rand(T, 4, requires_grad=True)
    handle = []

    def penalty(grad):
        handle[0].remove()
        old = grad
        param.grad = None
        with T.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            ((g * 2) + new_param).sum().backward()
        param.grad = old
        return g.grad + grad

    handle.append(param.register_hook(penalty))
    (param * param).sum().backward()
    # the hook put the old grad back in .grad; accumulation then adds the hook's result to it
    np.testing.assert_allclose(_np(param.grad), 4 * _np(param) + 2, rtol=1e-6)


def test_reentrant_with_non_leaf_variable_hook(T):
    # TestAutograd.test_reentrant_with_non_leaf_variable_hook
    param = _rand(T, 4, requires_grad=True)
    handle = []

    def bump(grad):
        handle[0].remove()
        with T.enable_grad():
            g = grad.detach().requires_grad_()
            ((g * 2) + 5).sum().backward()
        return g.grad + grad

    tmp = param * param
    handle.append(tmp.register_hook(bump))
    tmp.sum().backward()
    np.testing.assert_allclose(_np(param.grad), 6 * _np(param), rtol=1e-6)


def test_reentrant_priority(T):
    # TestAutograd.test_reentrant_priority: reentrant tasks run before a pending task of the
    # outer graph (all 10 Reentrant backwards, then MyFunction's)
    order = []

    class Plain(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            order.append("Plain")
            return g

    class Reentrant(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with T.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            order.append("Reentrant")
            if ctx.x < 0:
                return g
            with T.enable_grad():
                Reentrant.apply(ctx.x).backward()
            return g

    a = Plain.apply(T.tensor(6.0, requires_grad=True))
    b = Reentrant.apply(T.tensor(9.0, requires_grad=True))
    (a * b).backward()
    assert order == ["Reentrant"] * 10 + ["Plain"]


# ---- grad_fn and hooks on Function outputs ------------------------------------------------
def test_function_node_identity(T):
    # TestAutograd.test_function / test_grad_fn_attr_bindings-style: the node of a Function is a
    # BackwardCFunction subclass named <Name>Backward, a graph.Node, registered as
    # Function._backward_cls, shared by all outputs, with next_functions for tensor inputs only
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            return a * k, b * k

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, None, gb

    a, b = T.ones(2, requires_grad=True), T.ones(2)
    p, q = Two.apply(a, 2.0, b)
    node = p.grad_fn
    assert q.grad_fn is node and (p.output_nr, q.output_nr) == (0, 1)
    assert isinstance(node, T.autograd.function.BackwardCFunction) and isinstance(node, T.autograd.graph.Node)
    assert type(node) is Two._backward_cls and type(node)._forward_cls is Two
    assert node.name() == "TwoBackward" and node.metadata == {}
    assert _graph(node) == "TwoBackward(AccumulateGrad(), None)"
    assert node.next_functions[0][0].variable is a


def test_gradient_edge_graph_ownership(T):
    # TestAutograd.test_gradient_edge_graph_ownership: an edge of a Function output keeps its
    # node (and graph) alive after the output is deleted
    class Clone(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g.clone()

    leaf = T.ones(1, requires_grad=True)
    out = Clone.apply(leaf.clone())
    edge = T.autograd.graph.get_gradient_edge(out)
    T.autograd.backward(edge, retain_graph=True)
    del out
    T.autograd.backward(edge)
    assert leaf.grad.tolist() == [2.0]


def test_tensor_hooks_inplace_multiple_outputs(T):
    # TestAutograd.test_tensor_hooks_inplace_multiple_outputs (custom Function half): a hook
    # registered before an in-place op on one output still runs with the pre-op gradient; one
    # registered after sees the new version's
    class DoubleMul(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    seen = []
    b = T.ones(2, requires_grad=True)
    out1, out2 = DoubleMul.apply(b)
    out1.register_hook(lambda g: seen.append(("out1 before", _np(g).tolist())))
    out2.register_hook(lambda g: seen.append(("out2", _np(g).tolist())))
    out1.mul_(2)
    out1.register_hook(lambda g: seen.append(("out1 after", _np(g).tolist())))
    (out1 + out2 * 3).sum().backward()
    assert sorted(seen) == [("out1 after", [1.0, 1.0]), ("out1 before", [2.0, 2.0]), ("out2", [3.0, 3.0])]
    assert _np(b.grad).tolist() == [13.0, 13.0]


def test_hooks_on_function_outputs_order(T):
    # TestAutograd.test_hook_order / test_grad_fn_prehooks on a custom Function: tensor hooks on
    # the outputs run first, then the node's pre-hooks (seeing every output's grad, None for a
    # non-differentiable one), the backward, then post-hooks with (grad_inputs, grad_outputs)
    log = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            idx = (x > 0).float()
            ctx.mark_non_differentiable(idx)
            return x * k, idx

        @staticmethod
        def backward(ctx, g, gidx):
            log.append(("backward", _np(g).tolist()))
            return g * 3, None

    x = T.ones(2, requires_grad=True)
    y, idx = F.apply(x, 3.0)
    y.register_hook(lambda g: (log.append(("tensor", _np(g).tolist())), g * 2)[1])
    y.grad_fn.register_prehook(lambda go: log.append(("pre", len(go), go[1] is None)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi), _np(gi[0]).tolist(), _np(go[0]).tolist())))
    y.sum().backward()
    assert log == [("tensor", [1.0, 1.0]), ("pre", 2, True), ("backward", [2.0, 2.0]),
                   ("post", 1, [6.0, 6.0], [2.0, 2.0])]
    assert _np(x.grad).tolist() == [6.0, 6.0]


def test_accumulate_grad(T):
    # TestAutograd.test_accumulate_grad: a second backward adds into .grad in place, unless
    # create_graph, where .grad is replaced by a new tensor
    def run(create_graph):
        x = _rand(T, 2, 2, requires_grad=True)
        y = x + 2
        y.backward(T.ones(2, 2), retain_graph=True)
        first, copy = x.grad, x.grad.clone()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(T.ones(2, 2), create_graph=create_graph)
        return first, copy, x.grad

    first, copy, now = run(False)
    assert now is first and _np(first).tolist() == (_np(copy) * 2).tolist()
    first, copy, now = run(True)
    assert now is not first and _np(first).tolist() == _np(copy).tolist()
    assert _np(now).tolist() == [[2.0, 2.0]] * 2


def test_free_deep_graph_pyfunction(T):
    # TestAutograd.test_free_deep_graph_pyfunction (depth 3000, not 150000): dropping a deep
    # chain of Function nodes does not overflow the stack
    class Add(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g

    def scope():
        y = T.ones(1, requires_grad=True).clone()
        for _ in range(3000):
            y = Add.apply(y, y)
    scope()
