"""Round 23 of PyTorch's own tests, ported: test/test_autograd.py (TestAutograd) on custom
``autograd.Function`` edge cases (test_mark_dirty / test_autograd_function_mark_dirty_view,
test_mark_non_differentiable*, test_materialize_grads / test_set_materialize_non_diff_grads,
test_once_differentiable, test_needs_input_grad, test_save_output_nr,
test_custom_function_save_for_backward_non_tensor, test_function_returns_input*, a Function
applied twice in one graph, test_no_grad_input), in-place writes on leaves and on views of
tensors that need grad (test_inplace_on_view_leaf_errors, test_inplace_on_view_of_view,
test_inplace_view_backprop_view_of_view, test_no_grad_modifies_version,
test_version_counter / test_inplace_mutation_shared_storage), torch.autograd.grad
(test_grad_nonleaf, test_grad_unreachable, test_grad_materialize_grads,
test_grad_batched_grad, test_grad_badcalls) and torch.utils.checkpoint
(test_checkpointing*, test_checkpoint_rng_state, test_checkpointing_without_reentrant_*,
kwargs and early errors). Earlier ports of several of these torch tests exist
(test_function_ported.py, test_autograd_ported*.py, test_checkpoint_ported*.py); the programs
here check what those left out: the full logs (values, grads, grad_fn names, versions, call
counts, the exception class and the words of its message at each step).

Each check is a program run with torch 2.13 (the oracle) and with tracegrad: the log it returns
and the warning classes must be equal. Tiny shapes: (2,), (2, 2)."""
import pytest
from _observe_helpers import attempt, make_check, msg_has, norm

torch = pytest.importorskip("torch")

check = make_check(norm)


def X(T, n=2):
    return T.tensor([1.5, -2.0, 3.0][:n], requires_grad=True)


def _fn(T, forward, backward, setup=None):
    """A custom Function from ``forward(ctx, *args)`` / ``backward(ctx, *grads)``."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if setup is not None:
        body["setup_context"] = staticmethod(setup)
    return type("Fn", (T.autograd.Function,), body)


def _gname(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# ---- custom Function: mark_dirty -------------------------------------------------------------

def _dirty_fn(T, write, nondiff=False):
    """A Function whose forward writes its input in place with ``write``, marks it dirty (and
    non-differentiable with ``nondiff``) and returns it; its backward doubles the gradient."""
    def fwd(ctx, a):
        write(a)
        ctx.mark_dirty(a)
        if nondiff:
            ctx.mark_non_differentiable(a)
        return a

    return _fn(T, fwd, lambda ctx, g: g * 2)


def _mark_dirty_view_of_nonleaf(T):
    # test_autograd_function_mark_dirty_view: a Function writes into a view of a non-leaf and
    # marks it dirty; the view is returned, the base is rebased onto a CopySlices
    F = _dirty_fn(T, lambda v: v.mul_(2))
    x = X(T)
    base = x.clone()
    v = base[:1]
    out = F.apply(v)
    log = [out is v, _gname(out), _gname(base), base._version, v._version]
    base.sum().backward()
    return log + [x.grad, base]


def _mark_dirty_versions(T):
    # torch's mark_dirty bumps each marked tensor's version once more (under no_grad too), on
    # top of the forward's own in-place write; a saved use of it from before is then stale
    F = _dirty_fn(T, lambda a: a.add_(1))
    x = X(T)
    c = x.clone()
    s = c * c
    out = [c._version]
    F.apply(c)
    out.append(c._version)
    with T.no_grad():
        F.apply(c)
    out += [c._version, msg_has(lambda: s.sum().backward(), "is at version 4; expected version 0")]
    d = T.ones(2)
    F.apply(d)
    return out + [d._version, d.requires_grad]


def _mark_dirty_view_of_leaf(T):
    # a Function that marks dirty a view of a leaf that requires grad is refused
    F = _dirty_fn(T, lambda v: v.mul_(2))
    x = X(T)
    return [msg_has(lambda: F.apply(x[:1]), "view of a leaf Variable that requires grad"),
            msg_has(lambda: F.apply(x), "leaf Variable that requires grad")]


def _mark_dirty_two_outputs_of_view(T):
    # test_return_duplicate_inplace: a Function that modifies a view in place must return only
    # the dirty view; two outputs are refused
    def fwd(ctx, v):
        v.mul_(2)
        ctx.mark_dirty(v)
        return v, v * 3

    F = _fn(T, fwd, lambda ctx, g1, g2: g1 + g2)
    x = X(T, 3)
    c = x.clone()
    r = attempt(lambda: F.apply(c[:2]))
    return [r if isinstance(r, tuple) and r and r[0] == "raises" else [_gname(t) for t in r]]


def _mark_dirty_not_differentiable(T):
    # test_custom_function_mark_dirty_not_differentiable: an input marked dirty and also
    # non-differentiable: the input keeps its history, the output is a detached alias of it
    F = _dirty_fn(T, lambda a: a.add_(1), nondiff=True)
    x = X(T)
    c = x.clone()
    out = attempt(lambda: F.apply(c))
    if isinstance(out, tuple):
        return out
    return [out is c, out.requires_grad, _gname(out), c._version]


# ---- custom Function: non-differentiable outputs, materialize_grads ---------------------------

def _non_diff_output_grad_received(T):
    # test_mark_non_differentiable_mixed: the backward sees zeros for the non-differentiable
    # output (materialized), or None with set_materialize_grads(False)
    seen = []

    def make(materialize):
        def fwd(ctx, a):
            ctx.set_materialize_grads(materialize)
            m, d = a + 1, a * 2
            ctx.mark_non_differentiable(m)
            return m, d

        def bwd(ctx, gm, gd):
            seen.append((None if gm is None else gm.tolist(), gd.tolist()))
            return gd * 2
        return _fn(T, fwd, bwd)

    out = []
    for mat in (True, False):
        x = X(T)
        m, d = make(mat).apply(x)
        out += [m.requires_grad, d.requires_grad, _gname(m), _gname(d)]
        d.sum().backward()
        out.append(x.grad)
    return out + [seen]


def _materialize_false_unused_outputs(T):
    # test_materialize_grads / test_dont_materialize_grads: unused outputs arrive as None
    seen = []

    def fwd(ctx, a, b):
        ctx.set_materialize_grads(False)
        return a * 2, b * 3, a + b

    def bwd(ctx, g1, g2, g3):
        seen.append([g is None for g in (g1, g2, g3)])
        ga = (g1 * 2 if g1 is not None else 0) + (g3 if g3 is not None else 0)
        gb = None if g2 is None and g3 is None else ((g2 * 3 if g2 is not None else 0)
                                                      + (g3 if g3 is not None else 0))
        return ga, gb

    F = _fn(T, fwd, bwd)
    a, b = X(T), X(T).detach().neg().requires_grad_()
    o1, o2, o3 = F.apply(a, b)
    o1.sum().backward()
    log = [a.grad, b.grad]
    a2, b2 = X(T), X(T).detach().requires_grad_()
    o1, o2, o3 = F.apply(a2, b2)
    (o3 * 2).sum().backward()
    return log + [a2.grad, b2.grad, seen]


def _materialize_true_with_none_returned(T):
    # test_materialize_grads: materialized zeros come in; a backward returning None for an input
    # that requires grad leaves that input's .grad None
    def fwd(ctx, a, b):
        return a + b, a - b

    def bwd(ctx, g1, g2):
        return g1 + g2, None

    F = _fn(T, fwd, bwd)
    a, b = X(T), X(T).detach().requires_grad_()
    s, _ = F.apply(a, b)
    s.sum().backward()
    return [a.grad, b.grad]


# ---- custom Function: once_differentiable, needs_input_grad, save_for_backward ---------------

def _once_differentiable_double_backward(T):
    # test_once_differentiable: the grads made with create_graph need grad, and differentiating
    # them raises RuntimeError naming once_differentiable; without create_graph nothing is graphed
    def fwd(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    def bwd(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g

    Sq = _fn(T, fwd, T.autograd.function.once_differentiable(bwd))

    x = X(T)
    (g0,) = T.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)   # grad_output needs no grad
    go = T.tensor(1.0, requires_grad=True)
    (g,) = T.autograd.grad(Sq.apply(x).sum(), x, go, create_graph=True)
    log = [g0.requires_grad, g, g.requires_grad, _gname(g)]
    log.append(msg_has(lambda: g.sum().backward(), "trying to differentiate twice a function that was marked "
                       "with @once_differentiable"))
    (g2,) = T.autograd.grad(Sq.apply(x).sum(), x)
    return log + [g2.requires_grad, _gname(g2)]


def _needs_input_grad(T):
    # test_needs_input_grad: one flag per forward argument (non-tensors False), and what the
    # backward returns for an input that does not need grad is ignored
    seen = []

    def fwd(ctx, a, k, b, c):
        return a * k + b + c

    def bwd(ctx, g):
        seen.append(tuple(ctx.needs_input_grad))
        return g * 2, None, g, g

    F = _fn(T, fwd, bwd)
    a, b, c = X(T), X(T).detach(), X(T).detach().requires_grad_()
    F.apply(a, 3, b, c).sum().backward()
    return [a.grad, b.grad, c.grad, seen]


def _save_for_backward_non_tensor(T):
    # test_custom_function_save_for_backward_non_tensor: saving a Python value is a TypeError
    def fwd(ctx, a):
        ctx.save_for_backward(a, 3)
        return a * 2

    F = _fn(T, fwd, lambda ctx, g: g * 2)
    return [msg_has(lambda: F.apply(X(T)), "save_for_backward can only save variables")]


def _save_output_then_modify(T):
    # test_save_output_nr: a saved output read back in the backward; modifying that output in
    # place afterwards is the version-counter error
    def fwd(ctx, a):
        out = a.exp()
        ctx.save_for_backward(out)
        return out

    def bwd(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out

    F = _fn(T, fwd, bwd)
    x = X(T)
    y = F.apply(x)
    y.sum().backward(retain_graph=True)
    log = [x.grad]
    with T.no_grad():
        y.mul_(2)
    log.append(msg_has(lambda: y.sum().backward(), "modified by an inplace operation"))
    return log


def _saved_tensors_after_free(T):
    # ctx.saved_tensors read a second time after the graph was freed
    ctxs = []

    def fwd(ctx, a):
        ctx.save_for_backward(a)
        return a * 2

    def bwd(ctx, g):
        ctxs.append(ctx)
        return g * 2

    F = _fn(T, fwd, bwd)
    y = F.apply(X(T))
    y.sum().backward()
    return [msg_has(lambda: ctxs[0].saved_tensors, "backward through the graph a second time")]


# ---- custom Function: returning inputs, applied twice, under no_grad ---------------------------

def _returns_input_unchanged(T):
    # test_function_returns_input: an input returned as is becomes a new tensor with the
    # Function's node; hooks on the output see only the Function's gradient
    F = _fn(T, lambda ctx, a: a, lambda ctx, g: g * 3)
    x = X(T)
    y = F.apply(x)
    log = [y is x, _gname(y), y.is_leaf, y.requires_grad]
    (y * 2).sum().backward()
    h = X(T).detach()
    y2 = F.apply(h)
    return log + [x.grad, y2 is h, y2.requires_grad, _gname(y2)]


def _returns_input_inner(T):
    # test_function_returns_input_inner: returning a non-leaf input unchanged
    F = _fn(T, lambda ctx, a: a, lambda ctx, g: g * 3)
    x = X(T)
    m = x * 2
    y = F.apply(m)
    log = [y is m, _gname(y), _gname(m)]
    y.sum().backward()
    return log + [x.grad]


def _applied_twice_one_graph(T):
    # a Function used twice in one graph: each use has its own ctx, and backward runs twice
    calls = []

    def fwd(ctx, a, k):
        ctx.k = k
        ctx.save_for_backward(a)
        return a * k

    def bwd(ctx, g):
        calls.append(ctx.k)
        return g * ctx.k, None

    F = _fn(T, fwd, bwd)
    x = X(T)
    y = F.apply(x, 2.0)
    z = F.apply(y, 5.0) + F.apply(x, 7.0)
    z.sum().backward()
    return [x.grad, sorted(calls), y.grad_fn is z.grad_fn]


def _apply_under_no_grad(T):
    # test_no_grad_input: Function.apply under no_grad gives no graph, and forward runs with
    # grad mode off; inference_mode too
    modes = []

    def fwd(ctx, a):
        modes.append(T.is_grad_enabled())
        return a * 2

    F = _fn(T, fwd, lambda ctx, g: g * 2)
    x = X(T)
    with T.no_grad():
        y = F.apply(x)
    with T.inference_mode():
        z = F.apply(x)
    w = F.apply(x)
    return [y.requires_grad, _gname(y), z.requires_grad, z.is_inference(), w.requires_grad, modes]


def _backward_wrong_count(T):
    # test_invalid_gradients: a backward returning too few gradients is a RuntimeError
    F = _fn(T, lambda ctx, a, b: a + b, lambda ctx, g: g)
    x, y = X(T), X(T).detach().requires_grad_()
    return [msg_has(lambda: F.apply(x, y).sum().backward(), "returned an incorrect number of gradients")]


def _setup_context_ctx_access(T):
    # setup_context style: ctx attributes set there are visible in backward; needs_input_grad
    seen = []

    def fwd(a, b):
        return a * b

    def setup(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a, b)
        ctx.tag = "t"

    def bwd(ctx, g):
        a, b = ctx.saved_tensors
        seen.append((ctx.tag, tuple(ctx.needs_input_grad)))
        return g * b, g * a

    F = _fn(T, fwd, bwd, setup)
    x, y = X(T), X(T).detach() + 1
    F.apply(x, y).sum().backward()
    return [x.grad, seen]


def test_custom_function_edge_cases():
    check([_mark_dirty_view_of_nonleaf, _mark_dirty_versions, _mark_dirty_view_of_leaf,
           _mark_dirty_two_outputs_of_view,
           _mark_dirty_not_differentiable, _non_diff_output_grad_received,
           _materialize_false_unused_outputs, _materialize_true_with_none_returned,
           _once_differentiable_double_backward, _needs_input_grad, _save_for_backward_non_tensor,
           _save_output_then_modify, _saved_tensors_after_free, _returns_input_unchanged,
           _returns_input_inner, _applied_twice_one_graph, _apply_under_no_grad,
           _backward_wrong_count, _setup_context_ctx_access])


# ---- in-place on leaves and views; version counters ---------------------------------------------

def _inplace_on_leaf_and_views(T):
    # test_inplace_on_view_leaf_errors: the leaf, a view of it, a view of a view, under no_grad
    x = X(T, 3)
    out = [msg_has(lambda: x.add_(1), "a leaf Variable that requires grad is being used in an in-place"),
           msg_has(lambda: x[:2].add_(1), "a view of a leaf Variable that requires grad"),
           msg_has(lambda: x[:2][1:].mul_(2), "a view of a leaf Variable that requires grad"),
           msg_has(lambda: x.view(3).zero_(), "a view of a leaf Variable"),
           msg_has(lambda: x.detach().add_(1) and None)]
    with T.no_grad():
        x[:1].mul_(2)
    return out + [x, x._version, x.requires_grad, x.is_leaf]


def _inplace_on_view_created_in_no_grad(T):
    # a view made under no_grad of a tensor that needs grad, written with grad mode on
    x = X(T, 3)
    m = x * 1
    with T.no_grad():
        v = m[:2]
    return [v.requires_grad, msg_has(lambda: v.mul_(2), "view was created in no_grad mode"),
            msg_has(lambda: v.copy_(T.ones(2)), "no_grad mode")]


def _inplace_on_view_of_view(T):
    # test_inplace_on_view_of_view / test_inplace_view_backprop_view_of_view: writing a view of
    # a view rebases the base; the gradient of an earlier view sees the write
    x = X(T, 3)
    base = x * 1
    v1 = base[1:]
    v2 = v1[:1]
    v2.mul_(4)
    log = [_gname(base), _gname(v1), _gname(v2), base._version, v1._version, v2._version, base]
    v1.sum().backward()
    return log + [x.grad]


def _version_counter_shared(T):
    # test_version_counter: views share the counter with their base; detach shares it too
    x = T.ones(2, 2)
    v = x[0]
    d = x.detach()
    log = [x._version, v._version, d._version]
    v.add_(1)
    log += [x._version, v._version, d._version]
    d.mul_(2)
    x[1] = 3.0
    log += [x._version, v._version, d._version, T.ones(2).add_(1)._version]
    y = x.clone()
    return log + [y._version, x.data._version]


def _version_error_message(T):
    # the version-counter error names the tensor's shape, the node it is output of, and the
    # versions; the hint about anomaly detection is in it
    a = X(T)
    b = a * 2
    c = b.sin()
    b.add_(1)
    e = attempt(lambda: c.sum().backward())
    return [e, msg_has(lambda: c.sum().backward(), "one of the variables needed for gradient computation has been"
                       " modified by an inplace operation", "[torch.FloatTensor [2]], which is output 0 of Add,",
                       "is at version 1; expected version 0 instead", "Hint: enable anomaly detection to find the"
                       " operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True")]


def _version_error_anomaly_and_2d(T):
    # the same error for a (2, 3) tensor, with anomaly mode on (its hint points at the backtrace)
    x = T.zeros(2, 3, requires_grad=True)
    with T.autograd.set_detect_anomaly(True, check_nan=False):
        y = x * 1
        z = y.sin()
        y.add_(1)
        return [msg_has(lambda: z.sum().backward(), "[torch.FloatTensor [2, 3]], which is output 0 of Add,",
                        "Hint: the backtrace further above shows the operation that failed to compute its gradient")]


def _version_error_on_leaf_saved(T):
    # a leaf that does not need grad, saved by mul, then modified in place
    w = T.tensor([2.0, 3.0])
    x = X(T)
    y = x * w
    w.add_(1)
    return [msg_has(lambda: y.sum().backward(), "modified by an inplace operation", "[torch.FloatTensor [2]]",
                    "is at version 1; expected version 0 instead")]


def _no_grad_modifies_version(T):
    # test_no_grad_modifies_version: a write under no_grad still bumps the version
    x, y = X(T), X(T).detach().requires_grad_()
    z = (x * y).sum()
    v0 = y._version
    with T.no_grad():
        y *= 2
    return [v0, y._version, msg_has(lambda: z.backward(), "modified by an inplace operation")]


def _inplace_shared_storage(T):
    # test_inplace_mutation_shared_storage-like: two views of one base; a write through one is
    # seen by the other's saved value check
    x = X(T, 3)
    base = x * 1
    a, b = base[:2], base[1:]
    s = a.pow(2)
    b.mul_(3)
    return [a._version, b._version, _gname(a), msg_has(lambda: s.sum().backward(), "modified by an inplace operation")]


def _inplace_on_output_that_needs_grad(T):
    # an in-place op on a non-leaf whose backward does not need the value is fine (add), one that
    # saves its output (exp_) then written again is not
    x = X(T)
    y = x * 2
    y.add_(1)
    y.exp_()
    z = y * 1
    log = [_gname(y), y._version]
    z.sum().backward(retain_graph=True)
    log.append(x.grad)
    y.add_(0)
    return log + [msg_has(lambda: z.sum().backward(), "modified by an inplace operation",
                             "[torch.FloatTensor [2]], which is output 0 of Exp, is at version 3; expected version 2")]


def _inplace_index_copy_on_view(T):
    # index_copy_ (and its peers) through a view of a fresh tensor: CopySlices over the source's
    # own node, as torch (no view node between)
    d = X(T, 3)
    out = []
    for write in (lambda v: v.index_copy_(0, T.tensor([0, 2, 4]), d), lambda v: v.index_add_(0, T.tensor([1, 2, 3]), d),
                  lambda v: v[1:4].copy_(d)):
        base = T.zeros(3, 2)
        write(base.view(6))
        out.append([_gname(base)] + [(type(n).__name__ if n else None) for n, _ in base.grad_fn.next_functions])
    c = T.zeros(3)
    c.index_copy_(0, T.tensor([2, 0, 1]), d)
    (c * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    return out + [[(type(n).__name__ if n else None) for n, _ in c.grad_fn.next_functions], d.grad]


def test_inplace_views_and_versions():
    check([_inplace_on_leaf_and_views, _inplace_on_view_created_in_no_grad, _inplace_on_view_of_view,
           _version_counter_shared, _version_error_message, _version_error_anomaly_and_2d,
           _version_error_on_leaf_saved,
           _no_grad_modifies_version, _inplace_shared_storage, _inplace_on_output_that_needs_grad,
           _inplace_index_copy_on_view])


# ---- torch.autograd.grad ----------------------------------------------------------------------

def _grad_create_graph(T):
    # test_grad / test_grad_nonleaf: second derivative through create_graph, on a leaf and a
    # non-leaf input; the first-order grad has a grad_fn only with create_graph
    x = X(T)
    m = x * 1
    y = (m ** 3).sum()
    (g,) = T.autograd.grad(y, m, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    (h,) = T.autograd.grad((x ** 3).sum(), x)
    return [g, g.requires_grad, gg, h.requires_grad, x.grad is None]


def _grad_allow_unused(T):
    # test_grad_unreachable: an unused input is an error unless allow_unused; then None, or zeros
    # with materialize_grads
    x, y = X(T), X(T).detach().requires_grad_()
    z = (x * 2).sum()
    return [attempt(lambda: T.autograd.grad(z, [x, y], retain_graph=True)),
            msg_has(lambda: T.autograd.grad(z, [x, y], retain_graph=True), "allow_unused=True"),
            T.autograd.grad(z, [x, y], retain_graph=True, allow_unused=True),
            T.autograd.grad(z, [x, y], retain_graph=True, materialize_grads=True),
            T.autograd.grad(z, [x, y], retain_graph=True, allow_unused=True, materialize_grads=True),
            attempt(lambda: T.autograd.grad(z, [x, y], retain_graph=True, allow_unused=False,
                                            materialize_grads=True))]


def _grad_materialize_nested(T):
    # test_grad_materialize_grads: a materialized zero for an unused input, then its own grad
    x = T.tensor(0.5, requires_grad=True)
    a = T.tensor(1.0, requires_grad=True)
    y = x * a
    (dydx,) = T.autograd.grad(y, x, create_graph=True)
    (d2,) = T.autograd.grad(dydx, x, materialize_grads=True)
    return [dydx, d2, d2.requires_grad]


def _grad_batched(T):
    # test_grad_batched_grad: is_grads_batched runs one backward per row of grad_outputs
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * x
    go = T.stack([T.eye(2), 2 * T.eye(2)])
    (g,) = T.autograd.grad(y, x, go, retain_graph=True, is_grads_batched=True)
    out = [g]
    out.append(attempt(lambda: T.autograd.grad(y, x, T.ones(3, 2), retain_graph=True, is_grads_batched=True)))
    return out


def _grad_badcalls(T):
    # test_grad_badcalls-like: outputs that do not need grad, implicit grad for a non-scalar,
    # grad_outputs of the wrong shape, inputs that are not leaves of this graph
    x = X(T)
    y = x * 2
    return [msg_has(lambda: T.autograd.grad(T.ones(2).sum(), x), "does not require grad and does not have a grad_fn"),
            msg_has(lambda: T.autograd.grad(y, x, retain_graph=True), "grad can be implicitly created only for scalar"),
            msg_has(lambda: T.autograd.grad(y, x, T.ones(3), retain_graph=True), "Mismatch in shape"),
            attempt(lambda: T.autograd.grad(y, x, [T.ones(2), T.ones(2)], retain_graph=True)),
            attempt(lambda: T.autograd.grad(y.sum(), T.ones(2))),
            attempt(lambda: T.autograd.grad([y.sum(), y.sum()], x, retain_graph=True))]


def _grad_outputs_none_and_retain(T):
    # grad with a list of outputs, a None grad_output for a scalar; grad twice without retain
    x = X(T)
    a, b = (x * 2).sum(), (x * 3).sum()
    (g,) = T.autograd.grad([a, b], x, [None, T.tensor(2.0)], retain_graph=True)
    (g2,) = T.autograd.grad([a, b], x)
    return [g, g2, msg_has(lambda: T.autograd.grad([a, b], x), "backward through the graph a second time")]


def test_autograd_grad():
    check([_grad_create_graph, _grad_allow_unused, _grad_materialize_nested, _grad_batched, _grad_badcalls,
           _grad_outputs_none_and_retain])


# ---- torch.utils.checkpoint ----------------------------------------------------------------

def _drop(T, v):
    return T.nn.functional.dropout(v * 1.5, p=0.5, training=True).sin()


def _ckpt_rng_state(T):
    # test_checkpoint_rng_state / test_checkpointing: with preserve_rng_state the recomputed
    # dropout mask is the forward's, so grads equal the plain run's (both variants)
    out = []
    for reentrant in (True, False):
        x = T.ones(64, requires_grad=True)
        T.manual_seed(3)
        y_plain = _drop(T, x)
        y_plain.sum().backward()
        g_plain = x.grad.clone()
        x.grad = None
        T.manual_seed(3)
        y = T.utils.checkpoint.checkpoint(lambda v: _drop(T, v), x, use_reentrant=reentrant)
        y.sum().backward()
        out += [bool(T.equal(y, y_plain)), bool(T.equal(x.grad, g_plain)), _gname(y)]
    return out


def _ckpt_no_preserve_rng(T):
    # preserve_rng_state=False: the recomputation draws a new mask (the forward value is the
    # same as the plain run's, the grad is not)
    out = []
    for reentrant in (True, False):
        x = T.ones(64, requires_grad=True)
        T.manual_seed(3)
        _drop(T, x).sum().backward()
        g_plain = x.grad.clone()
        x.grad = None
        T.manual_seed(3)
        y = T.utils.checkpoint.checkpoint(lambda v: _drop(T, v), x, use_reentrant=reentrant,
                                          preserve_rng_state=False)
        y.sum().backward()
        out.append(bool(T.equal(x.grad, g_plain)))
    return out


def _ckpt_kwargs(T):
    # use_reentrant=False passes keyword arguments to the function; the reentrant variant refuses
    def f(a, scale=1.0, *, shift):
        return (a * scale + shift).sin()

    x = X(T)
    y = T.utils.checkpoint.checkpoint(f, x, 2.0, shift=T.tensor(0.5), use_reentrant=False)
    y.sum().backward()
    return [y, x.grad, msg_has(lambda: T.utils.checkpoint.checkpoint(f, x, shift=1.0, use_reentrant=True),
                               "Unexpected keyword arguments")]


def _ckpt_no_input_requires_grad(T):
    # test_checkpointing_without_reentrant_input_requires_grad_False: the reentrant variant warns
    # and its output does not need grad; the non-reentrant one still tracks the parameters
    lin = T.nn.Linear(2, 1)
    with T.no_grad():
        lin.weight.copy_(T.tensor([[0.5, -1.0]]))
        lin.bias.fill_(0.25)
    x = T.tensor([[1.0, 2.0]])
    out = []
    for reentrant in (True, False):
        lin.zero_grad()
        y = T.utils.checkpoint.checkpoint(lin, x, use_reentrant=reentrant)
        out += [y.requires_grad, y]
        if y.requires_grad:
            y.sum().backward()
            out += [lin.weight.grad, lin.bias.grad]
    return out


def _ckpt_grad_not_allowed_reentrant(T):
    # test_checkpointing: the reentrant variant cannot be used with autograd.grad or
    # backward(inputs=...)
    x = X(T)
    y = T.utils.checkpoint.checkpoint(lambda v: v.exp(), x, use_reentrant=True).sum()
    return [msg_has(lambda: T.autograd.grad(y, x, retain_graph=True), "incompatible with .grad()",
                    "use_reentrant=False"),
            msg_has(lambda: y.backward(inputs=[x]), "incompatible with .grad()", "`inputs`")]


def _ckpt_grad_nonreentrant(T):
    # the non-reentrant variant supports autograd.grad, create_graph and backward twice with
    # retain_graph
    x = X(T)
    y = T.utils.checkpoint.checkpoint(lambda v: (v ** 3).sum(), x, use_reentrant=False)
    (g,) = T.autograd.grad(y, x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    z = T.utils.checkpoint.checkpoint(lambda v: v.exp().sum(), x, use_reentrant=False)
    z.backward(retain_graph=True)
    z.backward()
    return [g, gg, x.grad]


def _ckpt_non_tensor_io(T):
    # non-tensor inputs and outputs pass through; None inputs too
    def f(a, k, none, tag):
        return a * k, tag, none

    out = []
    for reentrant in (True, False):
        x = X(T)
        y, tag, none = T.utils.checkpoint.checkpoint(f, x, 3, None, "tag", use_reentrant=reentrant)
        y.sum().backward()
        out += [y, tag, none, x.grad]
    return out


def _ckpt_use_reentrant_unset(T):
    # no use_reentrant: what torch 2.13 does (an error or a warning class) is matched
    x = X(T)
    r = attempt(lambda: T.utils.checkpoint.checkpoint(lambda v: v * 2, x))
    return r if isinstance(r, tuple) else [r]


def _ckpt_sequential(T):
    # checkpoint_sequential over segments, both variants, equal to the plain run
    T.manual_seed(0)
    seq = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.Tanh(), T.nn.Linear(2, 2), T.nn.Tanh())
    with T.no_grad():
        for i, p in enumerate(seq.parameters()):
            p.copy_(T.arange(p.numel(), dtype=T.float32).reshape(p.shape) * 0.1 - 0.2 * i)
    x = T.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    seq(x).sum().backward()
    ref = [x.grad.clone()] + [p.grad.clone() for p in seq.parameters()]
    out = [ref]
    for reentrant in (True, False):
        x.grad = None
        seq.zero_grad()
        y = T.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=reentrant)
        y.sum().backward()
        out.append([x.grad] + [p.grad for p in seq.parameters()])
    return out


def test_checkpoint():
    check([_ckpt_rng_state, _ckpt_no_preserve_rng, _ckpt_kwargs, _ckpt_no_input_requires_grad,
           _ckpt_grad_not_allowed_reentrant, _ckpt_grad_nonreentrant, _ckpt_non_tensor_io,
           _ckpt_use_reentrant_unset, _ckpt_sequential])
