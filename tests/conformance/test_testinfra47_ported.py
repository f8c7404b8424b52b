"""testinfra47: PyTorch's test/test_autograd.py, compiled. Earlier ports (test_autograd_ported*.py,
test_autograd_hooks_ported.py, test_ported_round3.py, tests/autograd/test_testinfra2[36]_ported.py,
test_testinfra28_ported.py ...) took every CPU test of ``TestAutograd`` by name, each run eagerly on
torch and tracegrad. What no port did is run the training-relevant ones under ``tracegrad.compile``:
hooks (tensor, Node pre/post, post-accumulate-grad, a hook removed inside a hook), ``retain_grad``
and ``.grad`` of views, saved tensors and their hooks (``saved_tensors_hooks``, ``save_on_cpu``,
version-counter errors), custom ``autograd.Function`` edge cases (``mark_dirty``,
``mark_non_differentiable``, ``set_materialize_grads``, ``once_differentiable``,
``needs_input_grad``), ``autograd.grad`` options (``allow_unused``, ``materialize_grads``,
``is_grads_batched``, ``create_graph``) and ``backward(inputs=...)``.

Each test here rewrites one original (named in its comment) as a step function called three times
on fresh inputs and returning a log (values, grads, hook calls in order). The same program runs on
torch 2.13 eagerly (the oracle), on tracegrad eagerly and with the step wrapped in
``tracegrad.compile``; the three logs must agree (DESIGN 2.5: compiled equals eager, hook side
effects on every call, in eager order). Where tracegrad cannot capture a step it runs it eagerly,
which must give the same log. Errors compare by class and message fragment. Of the 64 compiled
programs 40 run as XLA programs and 24 fall back to eager with tracegrad.compile's warning (a hook
registered inside the step, a Node pre-hook, a saved-tensors hook, bool() of a tensor in a backward).

test_post_accumulate_grad_hook_ordering runs here as written (its earlier "port" in
test_autograd_ported.py is a different program): it found that tracegrad's AccumulateGrad copied the
incoming gradient where torch keeps it (``TestFixesTI47``, NOTE [stolen gradient]): left as strict
xfails, the steal tried from Python reference counts being unreliable (NOTE [stolen gradient]).

Then the few ``TestAutograd`` tests no port took by name that run on the CPU:
test_gc_in_destructor, test_naughty_anomaly_access (an expectedFailure in torch: the port checks
what torch 2.13 does), test_backward_respects_torch_function (adapted: ``Tensor.as_subclass``
instead of ``_make_wrapper_subclass``). Left out: test_named_tensor_for_complex_views (torch 2.13 has
no named tensors: ``refine_names`` is gone), test_view_func_replay* (``Tensor._view_func``),
TestAutogradMultipleDispatch and test_warning_in_backward (torch-internal test operators
``torch._test_autograd_multiple_dispatch*``, ``torch._C._nn._test_warn_in_autograd``), the vmap- and
dispatch-internal forward-mode tests, CUDA / profiler-internal ones.
"""
import gc
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

CALLS = 3


# ==== helpers ===================================================================================
def _tree(v):
    """A log entry with tensors as (array, shape, requires_grad) so logs compare across libraries."""
    if isinstance(v, (list, tuple)):
        return [_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: _tree(x) for k, x in v.items()}
    if hasattr(v, "detach") and hasattr(v, "requires_grad"):
        return ("T", np.asarray(v.detach().tolist(), dtype=np.float64), tuple(v.shape), v.requires_grad)
    if isinstance(v, float):
        return ("F", v)
    return v


def _tag(v):
    return v[0] if isinstance(v, tuple) and v and isinstance(v[0], str) else None


def _same(a, b, path="log"):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: {a!r} vs {b!r}"
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif _tag(a) == "T" or _tag(b) == "T":
        assert _tag(a) == _tag(b), f"{path}: {a!r} vs {b!r}"
        assert a[2] == b[2], f"{path}: shape {a[2]} vs {b[2]}"
        assert a[3] == b[3], f"{path}: requires_grad {a[3]} vs {b[3]}"
        np.testing.assert_allclose(b[1], a[1], rtol=1e-4, atol=1e-5, err_msg=path)
    elif isinstance(a, tuple) and a and a[0] == "F":
        assert isinstance(b, tuple) and b[0] == "F", f"{path}: {a!r} vs {b!r}"
        np.testing.assert_allclose(b[1], a[1], rtol=1e-4, atol=1e-5, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def _outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as e:   # noqa: BLE001  (the class and message are what we compare)
        # the message's first words: tracegrad may add a hint after torch's sentence
        return ("raised", type(e).__name__, str(e).split("\n")[0][:45])


def _check(program, calls=CALLS):
    """``program(T, wrap)`` builds its state, wraps its step with ``wrap`` and returns the log of
    ``calls`` calls. torch eager, tracegrad eager and tracegrad compiled must log the same."""
    ref = _tree(program(torch, lambda f: f, calls))
    eager = _tree(program(tracegrad, lambda f: f, calls))
    _same(ref, eager, "tracegrad eager vs torch")
    with warnings.catch_warnings():
        # a step tracegrad cannot capture runs eagerly with a warning: allowed, the log must agree
        warnings.simplefilter("ignore", UserWarning)
        compiled = _tree(program(tracegrad, tracegrad.compile, calls))
    _same(ref, compiled, "tracegrad.compile vs torch")


def _x(T, i, *shape, rg=False, seed=0, dtype="float32"):
    t = T.tensor(np.asarray(np.random.RandomState(seed + i).randn(*shape)).astype(dtype))
    return t.requires_grad_() if rg else t


def _p(T, *shape, seed=100):
    return T.tensor(np.random.RandomState(seed).randn(*shape).astype("float32"), requires_grad=True)


def _each(step, args, calls, log=None):
    """``step(*args(i))`` for each call; with ``log``, paired with what the call appended to it
    (then cleared, so each entry is one call's)."""
    out = []
    for i in range(calls):
        r = step(*args(i))
        out.append(r if log is None else [r, list(log)])
        if log is not None:
            log.clear()
    return out


# ==== tensor hooks, Node hooks, post-accumulate-grad hooks ======================================
def test_post_accumulate_grad_hook_e2e():
    # TestAutograd.test_post_accumulate_grad_hook_e2e: an Adam step per parameter from its
    # post-accumulate-grad hook ("optimizer in backward") equals stepping after backward
    def program(T, wrap, calls):
        T.manual_seed(0)
        model = T.nn.Linear(3, 2)
        with T.no_grad():
            model.weight.copy_(T.tensor(np.arange(6.0, dtype="float32").reshape(2, 3) / 10))
            model.bias.copy_(T.tensor([0.1, -0.2]))
        optims = {p: T.optim.Adam([p], lr=0.1) for p in model.parameters()}

        def hook(p):
            optims[p].step()
            optims[p].zero_grad()

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(hook)

        def step(x):
            loss = (model(x) ** 2).sum()
            loss.backward()
            return loss.detach()

        step = wrap(step)
        return [[step(_x(T, i, 2, 3)), [p.detach().clone() for p in model.parameters()],
                 [p.grad for p in model.parameters()]] for i in range(calls)]
    _check(program)


def _ordering_program(read_grad_outputs):
    # TestAutograd.test_post_accumulate_grad_hook_ordering: tensor pre-hook, AccumulateGrad
    # pre-hook, post-accumulate-grad hook, AccumulateGrad post-hook, in that order; the original
    # sets .grad from the post-hook's grad_outputs[0], which is .grad itself in torch
    def program(T, wrap, calls):
        t = _p(T, 3)
        log = []

        def pre(g):
            log.append("tensor")
            return g.sub(2.0)

        def acc_pre(gs):
            log.append("acc_pre")
            return (gs[0].div(5.0),)

        def post_acc(tensor):
            log.append("post_acc")
            tensor.grad.add_(0.5)

        def acc_post(gi, go):
            log.append("acc_post")
            t.grad = (go[0] if read_grad_outputs else t.grad).mul(10)

        acc = t.view_as(t).grad_fn.next_functions[0][0]
        t.register_hook(pre)
        acc.register_prehook(acc_pre)
        t.register_post_accumulate_grad_hook(post_acc)
        acc.register_hook(acc_post)

        def step(x):
            t.grad = None
            (t * x).sum().backward()
            return t.grad.clone()

        step = wrap(step)
        return [[step(_x(T, i, 3)), list(log)] for i in range(calls)]
    return program


def test_post_accumulate_grad_hook_ordering():
    # the order and the values, with the last hook reading .grad
    _check(_ordering_program(read_grad_outputs=False))


_NO_STEAL = "NOTE [stolen gradient] (tracegrad/autograd/_graph_impl.py): tracegrad always gives .grad its own storage, so an in-place write to .grad by a post-accumulate-grad hook does not show in the AccumulateGrad post-hooks' grad_outputs as torch's stolen gradient does"


@pytest.mark.xfail(strict=True, reason=_NO_STEAL)
def test_post_accumulate_grad_hook_ordering_grad_outputs_alias_grad():
    # TestAutograd.test_post_accumulate_grad_hook_ordering as written: ((1 - 2) / 5 + 0.5) * 10
    _check(_ordering_program(read_grad_outputs=True))


def test_post_accumulate_grad_hook_multiple_hooks():
    # TestAutograd.test_post_accumulate_grad_hook_multiple_hooks: both hooks run, in order, and
    # write the parameter in place (sub the grad, then scale by 4)
    def program(T, wrap, calls):
        t = _p(T, 3)

        def hook1(p):
            with T.no_grad():
                p.sub_(p.grad)

        def hook2(p):
            with T.no_grad():
                p.mul_(0.5)

        t.register_post_accumulate_grad_hook(hook1)
        t.register_post_accumulate_grad_hook(hook2)

        def step(x):
            t.grad = None
            (t * x).sum().backward()
            return t.detach().clone()

        step = wrap(step)
        return [step(_x(T, i, 3)) for i in range(calls)]
    _check(program)


def test_post_accumulate_grad_hook_returns_not_None():
    # TestAutograd.test_post_accumulate_grad_hook_returns_not_None: "hooks should return None."
    def program(T, wrap, calls):
        t = _p(T, 2, 3)
        t.register_post_accumulate_grad_hook(lambda p: p.grad)

        def step(x):
            (t * x).sum().backward()
            return t.grad

        step = wrap(step)
        return [_outcome(step, _x(T, i, 2, 3)) for i in range(calls)]
    _check(program)


def test_hooks():
    # TestAutograd.test_hooks: counting hooks on a leaf and a non-leaf, a handle removed, then
    # hooks that double the gradient
    def program(T, wrap, calls):
        x = _p(T, 2, 2)
        y = _p(T, 2, 2, seed=101)
        counter = [0]

        def bump(inc):
            def hook(g):
                counter[0] += inc
            return hook

        def step(i):
            x.grad = y.grad = None
            z = x ** 2 + x * 2 + x * y + y
            x.register_hook(bump(0))
            h1 = z.register_hook(bump(1))
            z.backward(T.ones(2, 2), retain_graph=True)
            h2 = z.register_hook(bump(2))
            z.backward(T.ones(2, 2), retain_graph=True)
            h2.remove()
            h1.remove()
            z.register_hook(lambda g: g.mul(2))
            y.register_hook(lambda g: g.mul(2))
            z.backward(T.ones(2, 2))
            return [x.grad.clone(), y.grad.clone()]

        step = wrap(step)
        return [[step(i), counter[0]] for i in range(calls)]
    _check(program)


def test_grad_fn_prehooks():
    # TestAutograd.test_grad_fn_prehooks: three counting pre-hooks double the grad_output, the
    # ones returning None or their input change nothing; post-hooks see the result
    def program(T, wrap, calls):
        a = _p(T, 3)
        log = []

        def prehook(go):
            log.append("pre")
            return (go[0] * 2,)

        def posthook(gi, go):
            log.append(("post", round(float(gi[0].sum()), 4), round(float(go[0].sum()), 4)))

        def step(x):
            a.grad = None
            b = a * x
            b.grad_fn.register_hook(posthook)
            b.grad_fn.register_prehook(prehook)
            b.grad_fn.register_prehook(lambda g: None)
            b.grad_fn.register_prehook(prehook)
            b.grad_fn.register_prehook(lambda g: g)
            b.sum().backward()
            return a.grad

        step = wrap(step)
        return [[step(_x(T, i, 3)), list(log)] for i in range(calls)]
    _check(program)


def test_grad_fn_prehooks_remove_hooks():
    # TestAutograd.test_grad_fn_prehooks_remove_hooks: a pre-hook removes a later one (and one
    # already removed) while the node runs; the removed hook does not run
    def program(T, wrap, calls):
        a = _p(T, 3, 3)
        counter = [0]

        def step(x):
            a.grad = None
            b = a * x
            handles = {}

            def prehook1(go):
                handles["h2"].remove()
                handles["h3"].remove()

            def prehook2(go):
                counter[0] += 1
                return (go[0] * 3,)

            b.grad_fn.register_prehook(prehook1)
            handles["h2"] = b.grad_fn.register_prehook(prehook2)
            handles["h3"] = b.grad_fn.register_prehook(prehook2)
            handles["h3"].remove()
            b.sum().backward()
            return a.grad

        step = wrap(step)
        return [[step(_x(T, i, 3, 3)), counter[0]] for i in range(calls)]
    _check(program)


def test_prehook_ordering():
    # TestAutograd.test_prehook_ordering: tensor hooks run before Node pre-hooks whatever the
    # registration order; grad() runs an input's hooks without running its AccumulateGrad
    def program(T, wrap, calls):
        log = []

        def hook1(g):
            log.append(1)
            return g * 3

        def hook2(gs):
            log.append(2)
            return tuple(g * 2 for g in gs)

        def step(x):
            a = x.detach().requires_grad_()
            b = a.clone()
            b.grad_fn.register_prehook(hook2)
            b.register_hook(hook1)
            b.grad_fn.register_prehook(hook2)
            acc = b.grad_fn.next_functions[0][0]
            a.register_hook(hook1)
            acc.register_prehook(hook2)
            a.register_hook(hook1)
            b.sum().backward(retain_graph=True)
            first = [a.grad.clone(), list(log)]
            log.clear()
            g, = T.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
            second = [g, list(log)]
            log.clear()
            b.sum().backward(inputs=(b,))
            third = [b.grad, list(log)]
            log.clear()
            return [first, second, third]

        step = wrap(step)
        return [step(_x(T, i, 2)) for i in range(calls)]
    _check(program)


def test_retains_grad_can_always_observe_tensor_prehook():
    # TestAutograd.test_retains_grad_can_always_observe_tensor_prehook: .grad of a retained
    # non-leaf is the value after every tensor pre-hook, registered before or after retain_grad
    def program(T, wrap, calls):
        a = _p(T, 2)

        def step(x):
            b = a * x
            b.register_hook(lambda g: g * 2)
            b.retain_grad()
            b.register_hook(lambda g: g * 2)
            b.clone().sum().backward()
            c = a * x
            c.retain_grad()
            c.register_hook(lambda g: g * 2)
            c.clone().sum().backward()
            return [b.grad, c.grad, a.grad.clone()]

        step = wrap(step)
        return [step(_x(T, i, 2)) for i in range(calls)]
    _check(program)


def test_retain_grad():
    # TestAutograd.test_retain_grad: retain_grad twice is fine, the non-leaf's .grad accumulates
    # over backward calls, and on a leaf it is a no-op
    def program(T, wrap, calls):
        inp = _p(T, 1, 3)

        def step(x):
            inp.grad = None
            h1 = inp * x
            out = (h1 * h1).sum()
            h1.retain_grad()
            h1.retain_grad()
            out.backward(retain_graph=True)
            g1 = h1.grad.clone()
            out.backward(retain_graph=True)
            inp.retain_grad()
            out.backward()
            return [g1, h1.grad, inp.grad]

        step = wrap(step)
        return [step(_x(T, i, 1, 3)) for i in range(calls)]
    _check(program)


def test_retain_grad_inplace_over_view():
    # TestAutograd.test_retain_grad_inplace_over_view: retain_grad moves with the view's grad_fn
    # when the view is written in place (CopySlices)
    def program(T, wrap, calls):
        leaf = _p(T, 3)

        def step(x):
            base = (leaf * x).clone()
            view = base[:2]
            view2 = base[:2]
            view.retain_grad()
            view2.retain_grad()
            view.mul_(2)
            (view + view2).sum().backward()
            return [view.grad, view2.grad, leaf.grad.clone(), type(view.grad_fn).__name__]

        step = wrap(step)
        return [step(_x(T, i, 3)) for i in range(calls)]
    _check(program)


def test_tensor_hooks_inplace():
    # TestAutograd.test_tensor_hooks_inplace: a hook registered before an in-place op sees the
    # gradient of the old version, one registered after sees the new version's
    def program(T, wrap, calls):
        a = _p(T, 2)
        seen = []

        def fn1(g):
            seen.append(("fn1", g.tolist()))
            return g * 2

        def fn2(g):
            seen.append(("fn2", g.tolist()))
            return g * 2

        def step(x):
            a.grad = None
            b = a.clone()
            b.register_hook(fn1)
            b.mul_(x)
            b.register_hook(fn2)
            b.sum().backward()
            return a.grad

        step = wrap(step)
        out = []
        for i in range(calls):
            g = step(_x(T, i, 2))
            out.append([g, [(n, [round(v, 4) for v in vals]) for n, vals in seen]])
            seen.clear()
        return out
    _check(program)


def test_hook_edge_case_when_called_with_grad():
    # TestAutograd.test_hook_edge_case_when_called_with_grad: grad() runs the tensor hooks of the
    # inputs it stops at but not their nodes' pre/post hooks; backward(inputs=) runs them all
    def program(T, wrap, calls):
        counts = {"tensor": 0, "pre": 0, "post": 0}

        def bump(k):
            def hook(*args):
                counts[k] += 1
            return hook

        def step(x):
            a = x.detach().requires_grad_()
            b = a * 2
            c = b * 2
            a.register_hook(bump("tensor"))
            b.register_hook(bump("tensor"))
            acc = b.grad_fn.next_functions[0][0]
            acc.register_hook(bump("post"))
            acc.register_prehook(bump("pre"))
            b.grad_fn.register_hook(bump("post"))
            b.grad_fn.register_prehook(bump("pre"))
            out = []
            T.autograd.grad(c.sum(), inputs=(b,), retain_graph=True)
            out.append(dict(counts))
            T.autograd.grad(c.sum(), inputs=(a, b), retain_graph=True)
            out.append(dict(counts))
            c.sum().backward(retain_graph=True)
            out.append(dict(counts))
            c.sum().backward(inputs=(a, b), retain_graph=True)
            out.append(dict(counts))
            for k in counts:
                counts[k] = 0
            return [out, a.grad.clone(), b.grad.clone()]

        step = wrap(step)
        return [step(_x(T, i, 2)) for i in range(calls)]
    _check(program)


def test_accumulate_grad_posthooks_can_observe_tensor_prehook():
    # TestAutograd.test_accumulate_grad_posthooks_can_observe_tensor_prehook: AccumulateGrad's
    # pre- and post-hooks see the gradient after the tensor's pre-hook doubled it
    def program(T, wrap, calls):
        a = _p(T, 2)
        seen = []
        b = a.clone()
        acc = b.grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: seen.append(("post", len(gi), [round(v, 4) for v in go[0].tolist()])))
        acc.register_prehook(lambda go: seen.append(("pre", len(go), [round(v, 4) for v in go[0].tolist()])))
        a.register_hook(lambda g: g * 2)

        def step(x):
            a.grad = None
            (a * x).sum().backward()
            return a.grad

        return _each(wrap(step), lambda i: (_x(T, i, 2),), calls, seen)
    _check(program)


def test_multi_grad_any_hooks():
    # TestAutograd.test_multi_grad_any_hooks: a mode="any" multi-grad hook over a module's two
    # outputs runs once per backward, before the tensor hook of the tensor both come from
    def program(T, wrap, calls):
        lin = T.nn.Linear(3, 3)
        with T.no_grad():
            lin.weight.copy_(T.tensor(np.eye(3, dtype="float32") * 0.5))
            lin.bias.zero_()
        order = []

        def step(x):
            z = lin(x)
            outs = (T.sin(z), T.cos(z))
            z.register_hook(lambda g: order.append("z"))
            T.autograd.graph.register_multi_grad_hook(outs, lambda g: order.append("any"), mode="any")
            (outs[0] + outs[1]).sum().backward()
            return [lin.weight.grad.clone()]

        step = wrap(step)
        out = []
        for i in range(calls):
            lin.zero_grad()
            out.append([step(_x(T, i, 2, 3)), list(order)])
            order.clear()
        return out
    _check(program)


# ==== saved tensors and their hooks ===============================================================
def test_saved_variable_packing_unpacking_saved_original_with_default_hooks():
    # TestAutograd.test_saved_variable_packing_unpacking_saved_original_with_default_hooks:
    # default hooks pack/unpack every saved tensor; a pack that doubles without an unpack that
    # halves doubles the gradient of a * a twice
    def program(T, wrap, calls):
        def step(x):
            out = []
            for pack, unpack in ((lambda t: t, lambda t: t), (lambda t: 2 * t, lambda t: t / 2),
                                 (lambda t: 2 * t, lambda t: t)):
                a = x.detach().requires_grad_()
                with T.autograd.graph.saved_tensors_hooks(pack, unpack):
                    y = a * a
                y.sum().backward()
                out.append(a.grad)
            return out

        step = wrap(step)
        return [step(_x(T, i, 4)) for i in range(calls)]
    _check(program)


def test_setting_default_saved_variable_hooks_twice_should_use_inner():
    # TestAutograd.test_setting_default_saved_variable_hooks_twice_should_use_inner
    def program(T, wrap, calls):
        def step(x, w):
            a = x.detach().requires_grad_()
            b = w.detach().requires_grad_()
            with T.autograd.graph.saved_tensors_hooks(lambda t: 3 * t, lambda t: 3 * t):
                with T.autograd.graph.saved_tensors_hooks(lambda t: 5 * t, lambda t: 5 * t):
                    y = a * a
                z = b * b
            y.sum().backward()
            z.sum().backward()
            return [a.grad, b.grad]

        step = wrap(step)
        return [step(_x(T, i, 3), _x(T, i, 3, seed=7)) for i in range(calls)]
    _check(program)


def test_unpack_hooks_exec_count():
    # TestAutograd.test_unpack_hooks_exec_count: x * y with only x requiring grad packs once and
    # unpacks once, at backward
    def program(T, wrap, calls):
        counts = {"pack": 0, "unpack": 0}

        def pack(t):
            counts["pack"] += 1
            return t

        def unpack(t):
            counts["unpack"] += 1
            return t

        def step(x, y):
            x = x.detach().requires_grad_()
            with T.autograd.graph.saved_tensors_hooks(pack, unpack):
                out = x * y
                mid = dict(counts)
                out.sum().backward()
            return [mid, dict(counts), x.grad]

        step = wrap(step)
        out = []
        for i in range(calls):
            out.append(step(_x(T, i, 4), _x(T, i, 4, seed=3)))
            counts.update(pack=0, unpack=0)
        return out
    _check(program)


def test_save_on_cpu_and_checkpoint():
    # TestAutograd.test_save_on_cpu_and_checkpoint: save_on_cpu around a checkpoint and a
    # checkpoint around save_on_cpu give the plain gradient
    def program(T, wrap, calls):
        ckpt = T.utils.checkpoint.checkpoint

        def step(x):
            a = x.detach().requires_grad_()
            a.pow(2).pow(2).pow(2).sum().backward()
            plain = a.grad.clone()
            a.grad = None
            with T.autograd.graph.save_on_cpu():
                h = a.pow(2)
                h = ckpt(lambda t: t.pow(2).pow(2), h, use_reentrant=False)
                c = h.pow(2)
            c.sum().backward()
            outer = a.grad.clone()
            a.grad = None

            def f(t):
                h = t.pow(2)
                with T.autograd.graph.save_on_cpu():
                    h = h.pow(2)
                return h.pow(2)

            ckpt(f, a, use_reentrant=False).sum().backward()
            return [plain, outer, a.grad]

        step = wrap(step)
        return [step(_x(T, i, 2, 2) * 0.5) for i in range(calls)]
    _check(program)


def test_default_saved_tensors_hooks_double_backward():
    # TestAutograd.test_default_saved_tensors_hooks_double_backward: a**3's double backward under
    # a doubling pack hook, the hook active for the forward, the backward, or both
    def program(T, wrap, calls):
        def step(x):
            out = []
            a = x.detach().requires_grad_()
            with T.autograd.graph.saved_tensors_hooks(lambda t: 2 * t, lambda t: t):
                s = (a ** 3).sum()
            g, = T.autograd.grad(s, (a,), create_graph=True)
            g.sum().backward()
            out.append(a.grad)
            a = x.detach().requires_grad_()
            s = (a ** 3).sum()
            with T.autograd.graph.saved_tensors_hooks(lambda t: 2 * t, lambda t: t):
                g, = T.autograd.grad(s, (a,), create_graph=True)
                g.sum().backward()
            out.append(a.grad)
            return out

        step = wrap(step)
        return [step(_x(T, i, 3)) for i in range(calls)]
    _check(program)


def test_saved_tensor_hooks_custom_error_propagation():
    # TestAutograd.test_saved_tensor_hooks_custom_error_propagation: an exception raised in a
    # pack hook (at forward) or an unpack hook (at backward) reaches the caller as raised
    def program(T, wrap, calls):
        class CustomError(Exception):
            pass

        def raiser(msg):
            def hook(t):
                raise CustomError(msg)
            return hook

        def fwd(x):
            a = x.detach().requires_grad_()
            with T.autograd.graph.saved_tensors_hooks(raiser("pack"), lambda t: t):
                return T.sin(a)

        def bwd(x):
            a = x.detach().requires_grad_()
            with T.autograd.graph.saved_tensors_hooks(lambda t: t, raiser("unpack")):
                T.sin(a).sum().backward()
            return a.grad

        fwd, bwd = wrap(fwd), wrap(bwd)
        return [[_outcome(fwd, _x(T, i, 2)), _outcome(bwd, _x(T, i, 2))] for i in range(calls)]
    _check(program)


def test_no_grad_modifies_version():
    # TestAutograd.test_no_grad_modifies_version / test_detach_then_inplace_raises_in_autograd:
    # an in-place write under no_grad, or through a detached alias, to a saved input is caught
    # at backward
    def program(T, wrap, calls):
        def nograd(x, y):
            x = x.detach().requires_grad_()
            z = (x * y).sum()
            with T.no_grad():
                x *= 2
            z.backward()

        def detached(x):
            x = x.clone().requires_grad_()
            y = x ** 2
            x.detach().zero_()
            y.sum().backward()

        nograd, detached = wrap(nograd), wrap(detached)
        return [[_outcome(nograd, _x(T, i, 3), _x(T, i, 3, seed=5)), _outcome(detached, _x(T, i, 3))]
                for i in range(calls)]
    _check(program)


# ==== custom autograd.Function edge cases =========================================================
def test_mark_non_differentiable_mixed():
    # TestAutograd.test_mark_non_differentiable_mixed: the non-differentiable output's gradient
    # arrives as zeros, the other as ones
    def program(T, wrap, calls):
        seen = []

        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                a = inp + 1
                b = inp + 2
                ctx.mark_non_differentiable(a)
                return a, b

            @staticmethod
            def backward(ctx, grad_a, grad_b):
                seen.append((bool((grad_a == 0).all()), bool((grad_b == 1).all())))
                return grad_b

        def step(x):
            x = x.detach().requires_grad_()
            a, b = MyFunction.apply(x)
            b.sum().backward()
            return [a.requires_grad, b.requires_grad, x.grad]

        return _each(wrap(step), lambda i: (_x(T, i, 2, 2),), calls, seen)
    _check(program)


def test_set_materialize_non_diff_grads():
    # TestAutograd.test_set_materialize_non_diff_grads / test_dont_materialize_grads: with
    # materialization off the unused output's gradient arrives as None
    def program(T, wrap, calls):
        seen = []

        class Func(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, g0, g1):
                seen.append((g0 is None, g1 is None))
                return g0 * 3

        def step(x):
            x = x.detach().requires_grad_()
            out = Func.apply(x)[0]
            out.sum().backward()
            return x.grad

        return _each(wrap(step), lambda i: (_x(T, i, 3),), calls, seen)
    _check(program)


def test_once_differentiable():
    # TestAutograd.test_once_differentiable: the backward runs with grad mode off; its result
    # is correct, and a double backward through it raises
    def program(T, wrap, calls):
        modes = []

        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, t1, pyscalar, t2):
                ctx.pyscalar = pyscalar
                ctx.save_for_backward(t1, t2)
                return t1 + pyscalar * t2 + t1 * t2

            @staticmethod
            @T.autograd.function.once_differentiable
            def backward(ctx, g):
                modes.append(T.is_grad_enabled())
                t1, t2 = ctx.saved_tensors
                return g + g * t2, None, g * ctx.pyscalar + g * t1

        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            MyFunction.apply(x, 2, y).sum().backward()
            return [x.grad, y.grad]

        def double(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            gx, = T.autograd.grad(MyFunction.apply(x, 2, y).sum(), x, create_graph=True)
            gx.sum().backward()

        step, double = wrap(step), wrap(double)
        out = []
        for i in range(calls):
            args = (_x(T, i, 2, 2), _x(T, i, 2, 2, seed=9))
            out.append([step(*args), _outcome(double, *args), list(modes)])
            modes.clear()
        return out
    _check(program)


def test_return_duplicate_inplace():
    # TestAutograd.test_return_duplicate_inplace: a Function that writes its input in place,
    # marks it dirty and returns it twice; the two outputs are one tensor
    def program(T, wrap, calls):
        class DoubleInplace(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 2

        def step(x):
            x = x.detach().requires_grad_()
            a, b = DoubleInplace.apply(x.clone())
            out = a + b
            out.sum().backward()
            return [a is b, out, x.grad]

        step = wrap(step)
        return [step(_x(T, i, 2, 2, dtype="float64")) for i in range(calls)]
    _check(program)


def test_hook_none():
    # TestAutograd.test_hook_none: needs_input_grad says which inputs require grad; a tensor
    # hook on an output whose gradient the Function returns as None still sees a tensor
    def program(T, wrap, calls):
        seen = []

        class NoneGradientFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                seen.append(tuple(ctx.needs_input_grad))
                return x, y

            @staticmethod
            def backward(ctx, gx, gy):
                return gx, None

        def step(x, y):
            x = x.detach().requires_grad_()
            rx, ry = NoneGradientFunction.apply(x, y)
            rx.register_hook(lambda g: seen.append(g is not None))
            ry.register_hook(lambda g: seen.append(g is not None))
            (rx + ry).sum().backward()
            return x.grad

        return _each(wrap(step), lambda i: (_x(T, i, 3), _x(T, i, 3, seed=4)), calls, seen)
    _check(program)


def test_custom_function_non_tensor_inputs_outputs():
    # TestAutograd.test_custom_function_non_tensor_inputs_outputs: non-tensor outputs come back
    # as given, their grads arrive as None, t3 (no grad) gets no .grad
    def program(T, wrap, calls):
        seen = []

        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, t1, t2, scale, t3):
                t4 = t1 + t2 * t3
                t5 = t1 * t2 + t3
                t4 *= scale
                t5 *= scale
                ctx.scale = scale
                ctx.save_for_backward(t1, t2, t3)
                return scale, t4, None, True, t5, "bar", t1

            @staticmethod
            @T.autograd.function.once_differentiable
            def backward(ctx, *grads):
                seen.append([len(grads)] + [g is None for g in grads])
                scale = ctx.scale
                v1, v2, v3 = ctx.saved_tensors
                return (grads[1] * scale + grads[4] * v2 * scale + grads[6],
                        grads[1] * v3 * scale + grads[4] * v1 * scale, None,
                        grads[1] * v2 * scale + grads[4] * scale)

        def step(t1, t2, t3):
            t1 = t1.detach().requires_grad_()
            t2 = t2.detach().requires_grad_()
            res = MyFunction.apply(t1, t2, 3, t3)
            T.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
            return [res[0], res[1], res[2], res[3], res[4], res[5], t1.grad, t2.grad, t3.grad]

        args = lambda i: (_x(T, i, 4), _x(T, i, 4, seed=2), _x(T, i, 4, seed=3))   # noqa: E731
        return _each(wrap(step), args, calls, seen)
    _check(program)


def test_inplace_on_view_python():
    # TestAutogradDeviceType.test_inplace_on_view_python: a custom Function writing two views of
    # a clone in place (mark_dirty), then the gradient through the base
    def program(T, wrap, calls):
        class PyAdd(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_dirty(x)
                x.add_(y)
                return x

            @staticmethod
            def backward(ctx, g):
                return g, g

        def step(root, b, go):
            root = root.detach().requires_grad_()
            b = b.detach().requires_grad_()
            x = root.clone()
            PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
            PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
            x.backward(go)
            return [x, root.grad, b.grad]

        step = wrap(step)
        return [step(_x(T, i, 4, 4), _x(T, i, 2, 2, seed=1), _x(T, i, 4, 4, seed=2)) for i in range(calls)]
    _check(program)


# ==== autograd.grad options and backward(inputs=...) =============================================
def test_grad_materialize_grads():
    # TestAutograd.test_grad_materialize_grads: an unused input's gradient is None with
    # allow_unused and zeros with materialize_grads (which implies allow_unused)
    def program(T, wrap, calls):
        def step(x, a):
            x = x.detach().requires_grad_()
            a = a.detach().requires_grad_()
            y = x * a
            dydx = T.autograd.grad(y, x, create_graph=True)
            none = T.autograd.grad(dydx, x, create_graph=True, allow_unused=True)
            d2 = T.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
            d3 = T.autograd.grad(d2, x, materialize_grads=True)
            return [dydx[0], none[0] is None, d2[0], d3[0]]

        step = wrap(step)
        return [step(_x(T, i), _x(T, i, seed=1)) for i in range(calls)]
    _check(program)


def test_grad_materialize_grads_refuses_allow_unused_false():
    # TestAutograd.test_grad_materialize_grads: materialize_grads with allow_unused=False is a
    # ValueError "Expected allow_unused to be True or not passed when ..."
    def program(T, wrap, calls):
        def step(x):
            x = x.detach().requires_grad_()
            return T.autograd.grad(x * 2, x, allow_unused=False, materialize_grads=True)

        step = wrap(step)
        return [_outcome(step, _x(T, i)) for i in range(calls)]
    _check(program)


def test_unused_grad_requires_grad_with_materialize():
    # TestAutograd.test_unused_grad_requires_grad_with_materialize: without create_graph the
    # materialized zeros do not require grad
    def program(T, wrap, calls):
        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            z = (x ** 2).sum()
            return list(T.autograd.grad(z, (x, y), allow_unused=True, materialize_grads=True,
                                        create_graph=False))

        step = wrap(step)
        return [step(_x(T, i, 5), _x(T, i, 5, seed=8)) for i in range(calls)]
    _check(program)


def test_grad_batched_grad():
    # TestAutograd.test_grad_batched_grad: is_grads_batched takes the first dim of each
    # grad_output as a batch of vectors (also for a scalar output); a wrong shape is refused
    def program(T, wrap, calls):
        def step(x, v):
            x = x.detach().requires_grad_()
            out = x.clone()
            g, = T.autograd.grad(out, (x,), (v,), is_grads_batched=True)
            s = (x * x).sum()
            gs, = T.autograd.grad(s, (x,), (v[:, 0, 0].contiguous(),), is_grads_batched=True)
            return [g, gs]

        def bad(x):
            x = x.detach().requires_grad_()
            return T.autograd.grad(x.clone(), (x,), (T.ones(2, 2),), is_grads_batched=True)

        step, bad = wrap(step), wrap(bad)
        return [[step(_x(T, i, 2, 2), _x(T, i, 3, 2, 2, seed=6)), _outcome(bad, _x(T, i, 2, 2))]
                for i in range(calls)]
    _check(program)


def test_grad_unreachable():
    # TestAutograd.test_grad_unreachable: allow_unused gives None for an input the output does
    # not reach; without it the call raises ("Set allow_unused=True")
    def program(T, wrap, calls):
        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            w = y * 2   # noqa: F841  (y gets a grad accumulator)
            gx, gy = T.autograd.grad(x * 2, [x, y], allow_unused=True)
            return [gx, gy is None]

        def strict(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            return T.autograd.grad((x * 2).sum(), [x, y], allow_unused=False)

        step, strict = wrap(step), wrap(strict)
        return [[step(_x(T, i, 1), _x(T, i, 1, seed=1)), _outcome(strict, _x(T, i, 2), _x(T, i, 2, seed=1))]
                for i in range(calls)]
    _check(program)


def test_grad_nonleaf():
    # TestAutograd.test_grad_nonleaf: five gradient-ascent steps on a non-leaf with
    # create_graph=True, then one backward to both leaves
    def program(T, wrap, calls):
        def step(x0, y):
            x0 = x0.detach().requires_grad_()
            y = y.detach().requires_grad_()
            x = x0
            fn = lambda t: t ** 2 + y * t + y ** 2   # noqa: E731
            for _ in range(5):
                gx, = T.autograd.grad(fn(x), x, grad_outputs=T.ones(2, 2), create_graph=True)
                x = x + 0.05 * gx
            x.backward(T.ones(2, 2))
            return [x, x0.grad, y.grad, fn(x).sum() > fn(x0).sum()]

        step = wrap(step)
        return [step(_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)) for i in range(calls)]
    _check(program)


def test_hessian_vector():
    # TestAutograd.test_hessian_vector: backward(create_graph=True) then a backward of a
    # combination of the grads accumulates the Hessian-vector product into .grad
    def program(T, wrap, calls):
        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            z = x ** 2 + y * x + y ** 2
            z.backward(T.ones(2, 2), create_graph=True)
            g1 = [x.grad.detach().clone(), y.grad.detach().clone()]
            (2 * x.grad + y.grad).backward(T.ones(2, 2))
            return [g1, x.grad.detach(), y.grad.detach()]

        step = wrap(step)
        return [step(_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)) for i in range(calls)]
    _check(program)


def test_accumulate_grad():
    # TestAutograd.test_accumulate_grad: .grad accumulates in place without create_graph (the
    # tensor read before the second backward changes) and out of place with it
    def program(T, wrap, calls):
        def step(x, create_graph):
            x = x.detach().requires_grad_()
            y = x + 2
            y.backward(T.ones(2, 2), retain_graph=True)
            first = x.grad
            clone = first.clone()
            y.backward(T.ones(2, 2), create_graph=create_graph)
            return [first.detach().clone(), clone, x.grad.detach()]

        step = wrap(step)
        return [[step(_x(T, i, 2, 2), False), step(_x(T, i, 2, 2), True)] for i in range(calls)]
    _check(program)


def test_backward_with_inputs():
    # TestAutograd.test_backward_with_inputs: backward(inputs=[...]) fills only the listed
    # leaves; an empty inputs list is refused ("cannot be empty")
    def program(T, wrap, calls):
        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            fn = lambda: x ** 2 + y * x + y ** 2   # noqa: E731
            T.autograd.backward(fn(), T.ones(2, 2), inputs=[x])
            gx, gy1 = x.grad.clone(), y.grad
            T.autograd.backward(fn(), T.ones(2, 2), inputs=y)
            return [gx, gy1 is None, x.grad, y.grad]

        def empty(x):
            x = x.detach().requires_grad_()
            T.autograd.backward(x ** 2, T.ones(2, 2), inputs=[])

        step, empty = wrap(step), wrap(empty)
        return [[step(_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)), _outcome(empty, _x(T, i, 2, 2))]
                for i in range(calls)]
    _check(program)


def test_backward_with_nonleaf_inputs():
    # TestAutograd.test_backward_with_nonleaf_inputs: a non-leaf among inputs= gets its .grad;
    # an input the output does not reach keeps .grad None
    def program(T, wrap, calls):
        def step(x, y, z):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            z = z.detach().requires_grad_()
            xn = x * 1
            out = xn ** 2 + y * xn + y ** 2
            out.backward(T.ones(2, 2), create_graph=True, inputs=[x, y, xn])
            res = [x.grad.detach().clone(), y.grad.detach().clone(), xn.grad.detach().clone()]
            out.backward(T.ones(2, 2), create_graph=True, inputs=[z])
            return [res, z.grad is None]

        step = wrap(step)
        return [step(_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1), _x(T, i, 2, 2, seed=2)) for i in range(calls)]
    _check(program)


def test_sharded_grad():
    # TestAutograd.test_sharded_grad: d loss / d intermediates in shards via grad(), then the rest
    # of the backward from the intermediates with those gradients
    def program(T, wrap, calls):
        def step(seed_t):
            leaves = [(seed_t * (k + 1)).detach().requires_grad_() for k in range(4)]
            inter = [leaf * k + leaf * leaf for k, leaf in enumerate(leaves)]
            loss = sum(v * k for k, v in enumerate(inter)).sum()
            d = [g for s in range(0, 4, 2) for g in T.autograd.grad(loss, inter[s:s + 2], retain_graph=True)]
            T.autograd.backward(inter, d)
            return [leaf.grad for leaf in leaves]

        step = wrap(step)
        return [step(_x(T, i, 2, 2)) for i in range(calls)]
    _check(program)


def test_inplace_on_view_backprop_base():
    # TestAutogradDeviceType.test_inplace_on_view_backprop_base / _view_of_view / _of_view:
    # gradients through a base whose view was written in place
    def program(T, wrap, calls):
        def step(r):
            root = r.detach().requires_grad_()
            x = root.clone()
            x.narrow(0, 0, 1).mul_(2)
            x.sum().backward()
            g1 = root.grad.clone()
            root.grad = None
            x = root.clone()
            v1 = x.narrow(0, 0, 1)
            v2 = x.narrow(0, 0, 1)
            v1.mul_(2)
            v2.sum().backward()
            g2 = root.grad.clone()
            root.grad = None
            x = root.clone()
            x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
            x.sum().backward()
            return [g1, g2, root.grad]

        step = wrap(step)
        return [step(_x(T, i, 2, 2)) for i in range(calls)]
    _check(program)


# ==== TestAutograd tests no earlier port took ====================================================
def test_gc_in_destructor(T):
    # TestAutograd.test_gc_in_destructor: a legacy (instance) Function whose __del__ collects;
    # calling its forward method directly is plain Python and the leaf's backward works. The
    # instantiation warns (DeprecationWarning "should not be instantiated") as torch 2.13 does.
    class CollectOnDelete(T.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

        def __del__(self):
            gc.collect()

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            x = T.randn(1, requires_grad=True)
            CollectOnDelete().forward(x).backward()
            assert x.grad.tolist() == [1.0]
    msgs = [(x.category, "should not be instantiated" in str(x.message)) for x in w]
    assert msgs == [(DeprecationWarning, True)] * 3


def test_naughty_anomaly_access(T):
    # TestAutograd.test_naughty_anomaly_access (an expectedFailure in the file): reading a
    # custom Function node's metadata after backward and after the output is gone; in torch
    # 2.13 both reads give the (empty) dict, and what is stored in it stays
    class MyFunction(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = T.zeros(1, requires_grad=True)
    y = MyFunction.apply(x)
    y.backward()
    assert y.grad_fn.metadata == {}
    g = y.grad_fn
    g.metadata["k"] = 1
    del y
    assert g.metadata == {"k": 1}


def test_backward_respects_torch_function(T):
    # TestAutograd.test_backward_respects_torch_function, adapted: a Tensor subclass (made with
    # ``as_subclass``, not ``_make_wrapper_subclass``) sees autograd.backward in its
    # __torch_function__, and the backward reaches the leaf
    called = []

    class Tracked(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is T.autograd.backward:
                called.append("backward")
            return super().__torch_function__(func, types, args, kwargs or {})

    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    T.autograd.backward(y.as_subclass(Tracked), T.ones_like(y))
    assert called == ["backward"]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ==== more of TestAutograd, compiled: in-place, views, anomaly mode, re-entrant backward =========
def test_inplace():
    # TestAutograd.test_inplace: add saves nothing, so writing its input in place is fine; mul
    # saved it, so its backward raises; exp_ saves its result
    def program(T, wrap, calls):
        def add_ok(x, y):
            x = x.detach().requires_grad_()
            z = x * y
            q = z + y
            z.add_(2)
            q.backward(T.ones(2, 2))
            return x.grad

        def mul_bad(x, y):
            x = x.detach().requires_grad_()
            z = x * y
            w = z * y
            z.add_(2)
            w.backward(T.ones(2, 2))

        def exp_ok(x, y):
            x = x.detach().requires_grad_()
            z = x / 2 + y / 8
            r = z + y
            w = z.exp_()
            r.backward(T.ones(2, 2), retain_graph=True)
            w.backward(T.ones(2, 2))
            return [w, x.grad]

        add_ok, mul_bad, exp_ok = wrap(add_ok), wrap(mul_bad), wrap(exp_ok)
        out = []
        for i in range(calls):
            a, b = _x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)
            out.append([add_ok(a, b), _outcome(mul_bad, a, b), exp_ok(a, b)])
        return out
    _check(program)


def test_mark_non_differentiable_none():
    # TestAutograd.test_mark_non_differentiable_none: a non-differentiable output used in a
    # differentiable expression; the Function's backward returning None is fine
    def program(T, wrap, calls):
        class MyFunction(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                out = inp.clone()
                ctx.mark_non_differentiable(out)
                return out

            @staticmethod
            def backward(ctx, g):
                return None

        def step(x):
            x = x.detach().requires_grad_()
            r = MyFunction.apply(x * x)
            (r * x).sum().backward()
            return [r.requires_grad, x.grad]

        step = wrap(step)
        return [step(_x(T, i, 3)) for i in range(calls)]
    _check(program)


def test_dep_nograd():
    # TestAutograd.test_dep_nograd: a non-differentiable output of one Function fed to another
    # Function beside a differentiable one
    def program(T, wrap, calls):
        class F1(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                out = inp * 0 + 7
                ctx.mark_non_differentiable(out)
                return inp, out

            @staticmethod
            def backward(ctx, g, ignored):
                return g

        class F2(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp, ignored):
                return inp

            @staticmethod
            def backward(ctx, g):
                return g, None

        def step(x):
            x = x.detach().requires_grad_()
            a, b = F1.apply(x)
            b = b + 1
            c = F2.apply(a, b)
            c.backward(T.ones(c.size()))
            return [a.requires_grad, b.requires_grad, x.grad]

        step = wrap(step)
        return [step(_x(T, i, 5)) for i in range(calls)]
    _check(program)


def test_return_leaf():
    # TestAutograd.test_return_leaf: a Function returning its input as-is; the hook on that
    # output sees only that output's gradient
    def program(T, wrap, calls):
        seen = []

        class Identity(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a, a + b

            @staticmethod
            def backward(ctx, ga, gb):
                return ga + gb, gb

        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            q, p = Identity.apply(x, y)
            q.register_hook(lambda g: seen.append(g.tolist()))
            (q + p + x).sum().backward()
            return [x.grad, y.grad]

        return _each(wrap(step), lambda i: (_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)), calls, seen)
    _check(program)


def test_too_many_grads():
    # TestAutograd.test_too_many_grads / test_save_none_for_backward: extra None gradients are
    # dropped; None saved for backward comes back as None
    def program(T, wrap, calls):
        seen = []

        class Extra(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                ctx.save_for_backward(None, inp, None)
                return inp * inp

            @staticmethod
            def backward(ctx, g):
                n1, inp, n2 = ctx.saved_tensors
                seen.append((n1 is None, n2 is None))
                return 2 * inp * g, None, None

        def step(x):
            x = x.detach().requires_grad_()
            Extra.apply(x).sum().backward()
            return x.grad

        return _each(wrap(step), lambda i: (_x(T, i, 3),), calls, seen)
    _check(program)


def test_backward_twice_with_saved_values():
    # TestAutograd.test_backward_twice_with_saved_values / _retained_graph_*: a second backward
    # through freed saved values raises "Specify retain_graph=True"; with retain_graph it works
    def program(T, wrap, calls):
        def twice(b, retain):
            b = b.detach().requires_grad_()
            c = T.zeros(3)
            c[[1, 2]] = b[[1, 1]]
            c.backward(T.ones(3), retain_graph=retain)
            c.backward(T.ones(3))
            return b.grad

        twice = wrap(twice)
        return [[_outcome(twice, _x(T, i, 3), False), _outcome(twice, _x(T, i, 3), True)] for i in range(calls)]
    _check(program)


def test_leaf_assignment():
    # TestAutograd.test_leaf_assignment: writing grad-requiring values into a tensor that does
    # not require grad makes it require grad, with a graph back to the values
    def program(T, wrap, calls):
        def step(x, y, z):
            y = y.detach().requires_grad_()
            z = z.detach().requires_grad_()
            x = x.clone()
            x[0] = y
            x[1] = 2 * z
            x.sum().backward()
            return [x, x.requires_grad, y.grad, z.grad]

        step = wrap(step)
        return [step(_x(T, i, 3, 4), _x(T, i, 4, seed=1), _x(T, i, 4, seed=2)) for i in range(calls)]
    _check(program)


def test_detach():
    # TestAutograd.test_detach: detach() and in-place detach_() cut the graph; detach_ on a view
    # raises
    def program(T, wrap, calls):
        def step(x, y):
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            a = x * 2
            (y + a).sum().backward(retain_graph=True)
            a.detach_()
            (y + a).sum().backward()
            return [a.requires_grad, x.grad, y.grad]

        def view_detach(x):
            x = x.detach().requires_grad_()
            x.narrow(0, 1, 2).detach_()

        step, view_detach = wrap(step), wrap(view_detach)
        return [[step(_x(T, i, 4, 3), _x(T, i, 4, 3, seed=1)), _outcome(view_detach, _x(T, i, 4, 3))]
                for i in range(calls)]
    _check(program)


def test_inplace_on_view_leaf_errors():
    # TestAutograd.test_inplace_on_view_leaf_errors / test_inplace_on_view_multi_output_safe:
    # writing a view of a leaf that requires grad, or one of several views split() returned,
    # fails at the write
    def program(T, wrap, calls):
        def leaf_view(x):
            x = x.detach().requires_grad_()
            x.view_as(x).add_(1)

        def split_view(x):
            x = x.detach().requires_grad_()
            s1, s2, s3 = (x + x).split(1)
            s1.mul_(s2)

        def unsafe_split(x):
            x = x.detach().requires_grad_()
            s1, s2, s3 = (x + x).unsafe_split(1)
            s1.mul_(s2)
            s1.sum().backward()
            return x.grad

        fns = [wrap(f) for f in (leaf_view, split_view, unsafe_split)]
        return [[_outcome(f, _x(T, i, 3, 3)) for f in fns] for i in range(calls)]
    _check(program)


def test_custom_function_return_view_in_nograd():
    # TestAutograd.test_custom_function_return_view_in_nograd: a Function returning a view of its
    # input under no_grad gives what the plain view gives; writing it in place then raises
    def program(T, wrap, calls):
        class Alias(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x[:]

            @staticmethod
            def backward(ctx, gx):
                return gx

        def step(inp):
            inp = inp.detach().requires_grad_()
            with T.no_grad():
                out = Alias.apply(inp)
            with T.no_grad():
                ref = inp[:]
            return [out.requires_grad, ref.requires_grad, _outcome(lambda: out.zero_())]

        step = wrap(step)
        return [step(_x(T, i, 2)) for i in range(calls)]
    _check(program)


def test_custom_function_inplace_on_view_of_leaf():
    # TestAutograd.test_custom_function_inplace_on_view_of_leaf /
    # test_custom_function_mark_output_view_of_intermediate: mark_dirty on a view of a leaf
    # that requires grad, or on a tensor that is not an input, raises
    def program(T, wrap, calls):
        class AddOne(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                inp.add_(1)
                ctx.mark_dirty(inp)
                return inp

            @staticmethod
            def backward(ctx, g):
                return g

        class NotInput(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                out = inp.clone().view_as(inp)
                ctx.mark_dirty(out)
                return out

            @staticmethod
            def backward(ctx, g):
                return g

        def view_of_leaf(x):
            x = x.detach().requires_grad_()
            return AddOne.apply(x.view_as(x))

        def not_input(x):
            x = x.detach().requires_grad_()
            return NotInput.apply(x.clone())

        fns = [wrap(f) for f in (view_of_leaf, not_input)]
        return [[_outcome(f, _x(T, i, 2)) for f in fns] for i in range(calls)]
    _check(program)


def test_saved_variable_saved_original_inplace_detach():
    # TestAutograd.test_saved_variable_saved_original_inplace_detach: detach_() of a saved input
    # makes its backward raise; of a saved output it does not
    def program(T, wrap, calls):
        def saved_input(x):
            a = x.detach().requires_grad_().clone()
            b = a.sin()
            a.detach_()
            b.sum().backward()

        def saved_output(x):
            leaf = x.detach().requires_grad_()
            a = leaf.clone()
            b = a.exp()
            a.detach_()
            b.sum().backward()
            return leaf.grad

        fns = [wrap(f) for f in (saved_input, saved_output)]
        return [[_outcome(f, _x(T, i, 2)) for f in fns] for i in range(calls)]
    _check(program)


def test_anomaly_detect_nan():
    # TestAutograd.test_anomaly_detect_nan: under detect_anomaly a NaN returned by a backward is
    # "Function 'MyFuncBackward' returned nan values in its 0th output."; outside it is not
    # checked
    def program(T, wrap, calls):
        class MyFunc(T.autograd.Function):
            @staticmethod
            def forward(ctx, inp1, inp2, fail_0th):
                ctx.fail_0th = fail_0th
                return inp1.sum(0, keepdim=True)

            @staticmethod
            def backward(ctx, g):
                gi = g.clone().expand(3).clone()
                gi[0] = 0
                gi[0] /= 0
                return (gi, None, None) if ctx.fail_0th else (None, gi, None)

        def plain(x):
            x = x.detach().requires_grad_()
            MyFunc.apply(x, x, True).backward()
            return x.grad

        def anomaly(x, fail_0th):
            x = x.detach().requires_grad_()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with T.autograd.detect_anomaly():
                    MyFunc.apply(x, x, fail_0th).backward()

        plain, anomaly = wrap(plain), wrap(anomaly)
        return [[plain(_x(T, i, 3)), _outcome(anomaly, _x(T, i, 3), True), _outcome(anomaly, _x(T, i, 3), False)]
                for i in range(calls)]
    _check(program)


def test_anomaly_grad_warnings():
    # TestAutograd.test_anomaly_grad_warnings: the in-place error under detect_anomaly comes with
    # two warnings, "Anomaly Detection has been enabled" and "Error detected in PowBackward0"
    def program(T, wrap, calls):
        def step(x):
            a = x.detach().requires_grad_()
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with T.autograd.detect_anomaly():
                    d1 = a + 1
                    d2 = d1 ** 2
                    d1 += 1
                    res = _outcome(T.autograd.grad, d2.sum(), a)
            msgs = [str(m.message) for m in w]
            return [res, len(msgs), "Anomaly Detection has been enabled" in msgs[0],
                    any("Error detected in PowBackward0" in m for m in msgs)]

        step = wrap(step)
        return [step(_x(T, i, 5)) for i in range(calls)]
    _check(program)


def test_simple_reentrant():
    # TestAutograd.test_simple_reentrant / test_grad_mode_restored_reentrant: a Function whose
    # backward runs another backward (on a graph its forward built with grad enabled)
    def program(T, wrap, calls):
        modes = []

        class Reenter(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y_data):
                with T.enable_grad():
                    ctx.x = x.detach().requires_grad_()
                    ctx.y = y_data.detach().requires_grad_()
                    ctx.out = ctx.x * ctx.y
                return ctx.out.detach()

            @staticmethod
            def backward(ctx, g):
                before = T.is_grad_enabled()
                with T.enable_grad():
                    ctx.out.sum().backward()
                modes.append((before, T.is_grad_enabled()))
                return ctx.x.grad * g, None

        def step(x, y):
            x = x.detach().requires_grad_()
            Reenter.apply(x, y).sum().backward()
            return x.grad

        return _each(wrap(step), lambda i: (_x(T, i, 2, 2), _x(T, i, 2, 2, seed=1)), calls, modes)
    _check(program)


def test_reentrant_with_non_leaf_variable_hook():
    # TestAutograd.test_reentrant_with_non_leaf_variable_hook: a hook that removes itself and runs
    # a backward of its own to add a penalty to the gradient
    def program(T, wrap, calls):
        def step(x):
            param = x.detach().requires_grad_()
            handle = []

            def hook(grad):
                handle[0].remove()
                with T.enable_grad():
                    g = grad.detach().requires_grad_()
                    ((g * 2) + 5).sum().backward()
                return g.grad + grad

            tmp = param * param
            handle.append(tmp.register_hook(hook))
            tmp.sum().backward()
            return param.grad

        step = wrap(step)
        return [step(_x(T, i, 4)) for i in range(calls)]
    _check(program)


def test_grad_nonleaf_register_hook():
    # TestAutograd.test_grad_nonleaf_register_hook: a hook on one unbind() output sees its
    # gradient, then None when another output's backward runs UnbindBackward; each backward
    # accumulates into the base's .grad
    def program(T, wrap, calls):
        def step(x):
            x = x.detach().requires_grad_()
            parts = x.unbind()
            seen = []
            # torch runs the hook, with None, also when another output's backward runs the node
            parts[0].register_hook(lambda g: seen.append(None if g is None else float(g)))
            grads = []
            for k in range(3):
                parts[k].backward()
                grads.append(x.grad.clone())
            return [grads, seen, [p.grad is None for p in parts[:3]]]

        step = wrap(step)
        return [step(_x(T, i, 4)) for i in range(calls)]
    _check(program)


def test_grad_unreachable_discovery():
    # TestAutograd.test_grad_unreachable_discovery: nodes that do not lead to the requested
    # inputs never run (their backward would fail the test)
    def program(T, wrap, calls):
        ran = []

        class MyFunc(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                ran.append("MyFunc")
                return g

        def step(a, y, z):
            x = MyFunc.apply(a.detach().requires_grad_() * 2)
            y = y.detach().requires_grad_()
            z = z.detach().requires_grad_()
            gy, gz = T.autograd.grad((x + z).sum(), (y, z), allow_unused=True)
            x2 = MyFunc.apply(a.detach().requires_grad_() * 2)
            T.autograd.backward(x2.sum(), inputs=(y,))
            return [gy is None, gz, y.grad is None, list(ran)]

        step = wrap(step)
        out = []
        for i in range(calls):
            out.append(step(_x(T, i, 1), _x(T, i, 1, seed=1), _x(T, i, 1, seed=2)))
            ran.clear()
        return out
    _check(program)


def test_set_grad_enabled_in_step():
    # TestAutograd.test_set_grad_enabled / test_no_grad / test_enable_grad_decorator_no_paren:
    # grad-mode context managers and decorators inside a step
    def program(T, wrap, calls):
        @T.enable_grad
        def doubler(t):
            return t * 2

        @T.no_grad()
        def adder(a, b):
            return a + b

        def step(x, y):
            x = x.detach().requires_grad_()
            with T.set_grad_enabled(False):
                a = x * 2
            with T.no_grad():
                b = doubler(x)
            c = adder(x, y)
            with T.set_grad_enabled(False):
                T.set_grad_enabled(True)
                d = x * 3
            (b + d).sum().backward()
            return [a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, x.grad]

        step = wrap(step)
        return [step(_x(T, i, 3), _x(T, i, 3, seed=1)) for i in range(calls)]
    _check(program)


# ==== fixes in tracegrad =========================================================================
class TestFixesTI47:
    """NOTE [stolen gradient] (tracegrad/autograd/_graph_impl.py): with .grad None, torch's
    AccumulateGrad keeps the incoming gradient itself when nothing else holds it, and a copy
    otherwise. tracegrad always made a new storage, so test_post_accumulate_grad_hook_ordering
    as written (the AccumulateGrad post-hook reads grad_outputs[0] after a post-accumulate-grad
    hook wrote .grad in place) gave -0.47 where torch gives 4.53. These check both sides; the
    alias side is a strict xfail for tracegrad (the steal was dropped: NOTE [stolen gradient])."""

    def test_post_hook_grad_outputs_alias_grad(self, T, request):
        if T is tracegrad:
            request.applymarker(pytest.mark.xfail(strict=True, reason=_NO_STEAL))
        t = T.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        acc = t.view_as(t).grad_fn.next_functions[0][0]

        def add_half(p):
            p.grad.add_(0.5)

        t.register_post_accumulate_grad_hook(add_half)
        acc.register_hook(lambda gi, go: seen.append(go[0].tolist()))
        (t * 3).sum().backward()
        assert seen == [[3.5, 3.5]]
        assert t.grad.tolist() == [3.5, 3.5]

    def test_two_leaves_given_aliases_of_one_gradient_get_their_own_grads(self, T):
        # a backward returning two detached aliases of one gradient: each leaf's .grad is its
        # own (an in-place write to one must not show in the other), as torch's
        class Both(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, go):
                return go.detach(), go.detach()
        a, b = T.ones(3, requires_grad=True), T.ones(3, requires_grad=True)
        Both.apply(a, b).sum().backward()
        a.grad.add_(1)
        assert (a.grad.tolist(), b.grad.tolist()) == ([2.0] * 3, [1.0] * 3)

    def test_gradient_a_hook_keeps_is_copied(self, T):
        x = T.ones(3, requires_grad=True)
        kept = []
        x.register_hook(lambda g: kept.append(g))
        (x * 2).sum().backward()
        (x * 2).sum().backward()
        assert kept[0].tolist() == [2.0, 2.0, 2.0]
        assert x.grad.tolist() == [4.0, 4.0, 4.0]

    def test_gradient_a_hook_returns_and_keeps_is_copied(self, T):
        x = T.ones(3, requires_grad=True)
        kept = []

        def hook(g):
            kept.append(g * 2)
            return kept[-1]

        x.register_hook(hook)
        (x * 2).sum().backward()
        (x * 2).sum().backward()
        assert kept[0].tolist() == [4.0, 4.0, 4.0]
        assert x.grad.tolist() == [8.0, 8.0, 8.0]

    def test_fresh_gradient_a_hook_returns_is_kept(self, T, request):
        if T is tracegrad:
            request.applymarker(pytest.mark.xfail(strict=True, reason=_NO_STEAL))
        # the hook's new tensor is what .grad becomes (nothing else holds it)
        x = T.ones(2, requires_grad=True)
        seen = []
        acc = x.view_as(x).grad_fn.next_functions[0][0]
        x.register_hook(lambda g: g * 2)

        def add_one(p):
            p.grad.add_(1)

        x.register_post_accumulate_grad_hook(add_one)
        acc.register_hook(lambda gi, go: seen.append(go[0].tolist()))
        (x * 3).sum().backward()
        assert seen == [[7.0, 7.0]]

    def test_caller_grad_output_is_copied(self, T):
        x = T.ones(3, requires_grad=True)
        go = T.full((3,), 2.0)
        x.backward(go)
        x.grad.add_(1)
        assert go.tolist() == [2.0, 2.0, 2.0]
        assert x.grad.tolist() == [3.0, 3.0, 3.0]

    def test_one_gradient_for_two_leaves(self, T):
        class Both(T.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, g):
                return g, g

        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        Both.apply(a, b).sum().backward()
        a.grad.add_(1)
        assert b.grad.tolist() == [1.0, 1.0]
        assert a.grad.tolist() == [2.0, 2.0]

    def test_second_backward_accumulates_in_place(self, T):
        # .grad is accumulated in place by the next backward (the same tensor)
        x = T.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        first = x.grad
        (x * 2).sum().backward()
        assert first is x.grad
        assert first.tolist() == [4.0, 4.0]


# ==== checkpoint with hooks, compiled ============================================================
def test_checkpointing_without_reentrant_parameter_used_in_an_out():
    # TestAutograd.test_checkpointing_without_reentrant_parameter_used_in_an_out: a weight used
    # outside and inside a non-reentrant checkpoint gets its tensor hook called once per backward
    def program(T, wrap, calls):
        w = _p(T, 3, 3)
        count = [0]

        def hook(g):
            count[0] += 1

        w.register_hook(hook)

        def step(x):
            w.grad = None
            h = w * x
            out = T.utils.checkpoint.checkpoint(lambda t: w * t, h, use_reentrant=False)
            out.sum().backward()
            return [w.grad, count[0]]

        return _each(wrap(step), lambda i: (_x(T, i, 3, 3),), calls)
    _check(program)


def test_checkpointing_without_reentrant_correct_grad():
    # TestAutograd.test_checkpointing_without_reentrant_correct_grad: checkpoint(exp) gives the
    # plain gradient through backward() and through autograd.grad()
    def program(T, wrap, calls):
        def step(x):
            a = x.detach().requires_grad_()
            T.exp(a).sum().backward()
            plain = a.grad.clone()
            a.grad = None
            T.utils.checkpoint.checkpoint(T.exp, a, use_reentrant=False).sum().backward()
            via_backward = a.grad.clone()
            d = T.utils.checkpoint.checkpoint(T.exp, a, use_reentrant=False).sum()
            via_grad, = T.autograd.grad(d, (a,))
            return [plain, via_backward, via_grad]

        return _each(wrap(step), lambda i: (_x(T, i, 2, 2),), calls)
    _check(program)


def test_no_grad_python_function():
    # TestAutograd.test_no_grad_python_function / test_no_grad_input: a custom Function applied
    # under no_grad records nothing
    def program(T, wrap, calls):
        class MyOp(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x + 1

            @staticmethod
            def backward(ctx, dy):
                return dy

        def step(x):
            x = x.detach().requires_grad_()
            with T.no_grad():
                y = MyOp.apply(x)
            z = MyOp.apply(x)
            z.sum().backward()
            return [y, y.grad_fn is None, z, x.grad]

        return _each(wrap(step), lambda i: (_x(T, i, 5),), calls)
    _check(program)
