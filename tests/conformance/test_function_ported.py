"""NOTE: the tests that followed PyTorch's test/test_autograd.py statement for statement (the same code
and literals, lightly edited, asserts renamed) were removed (a public repository's code stays out of
this project's commits); what remains is the tests written here. The text below describes the file
as it was.

Custom ``autograd.Function`` behaviour from PyTorch's test/test_autograd.py (TestAutograd),
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
import warnings

import numpy as np
import pytest


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


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


def test_gradient_not_a_tensor(T):
    # validate_outputs in torch's python_function: backward returning a number is refused
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected Variable or None"):
        _returns(T, lambda g: 3).apply(x).sum().backward()


def test_gradient_broadcast_shape_is_summed(T):
    # validate_outputs in torch's engine: a gradient the input's shape expands to is summed
    # back to that shape (leading and size-1 dimensions)
    x = T.ones(1, 3, requires_grad=True)
    _returns(T, lambda g: g.expand(4, 2, 3)).apply(x).sum().backward()
    assert _np(x.grad).tolist() == [[8.0] * 3]


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


