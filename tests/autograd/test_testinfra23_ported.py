"""PyTorch's test/test_autograd.py (TestAutograd), the cases earlier rounds left out, ported as
programs run with torch 2.13 (the oracle) and with tracegrad, whose logs must be equal.

What they cover: the harness pieces the file itself needs (``torch.autograd._force_original_view_tracking``
in TestAutograd.tearDown, ``_calculate_shape``, ``kineto_available``, ``autograd.profiler_util`` with
torch's ``FunctionEvent``/``FunctionEventAvg`` constructors and ``EventList._populate_cpu_children``);
the ``torch._C`` nodes torch's tests apply to tensors (``_functions.DelayedError``,
``_functions.UndefinedGrad``, ``_functions.AccumulateGrad``), ``_current_autograd_node``,
``_WeakTensorRef``; ``torch.autograd._functions.Resize``; ``torch.autograd.SavedTensor()``
refusing construction; a Node post-hook registered while the node runs seeing None
grad_outputs; ``_will_engine_execute_node`` (and so ``register_multi_grad_hook``) for an
input the roots do not reach; ``F.embedding_bag``'s deprecated (weight, input) argument order.
Each test names its original in a comment. Tiny shapes."""
import gc
import math
import warnings

import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _r(v):
    """A tensor or number as nested lists of floats rounded to 6 places (bools/ints kept)."""
    if hasattr(v, "tolist"):
        v = v.detach().tolist()
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, (list, tuple)):
        return [_r(x) for x in v]
    return v


def _both(program):
    """``program(T)`` with torch and with tracegrad; their logs must be equal."""
    want = program(torch)
    got = program(tracegrad)
    assert got == want
    return got


def _outcome(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001  (the class and words are what we compare)
        return type(e).__name__, str(e)
    return "ok", ""


# ---- the harness names TestAutograd uses --------------------------------------------------------

def test_force_original_view_tracking_and_calculate_shape():
    # TestAutograd.tearDown; TestAutograd.test_calculate_shape_util (dense part)
    def prog(T):
        log = []
        T.autograd._force_original_view_tracking(False)
        log.append(T.autograd.is_view_replay_enabled())
        with T.autograd._force_original_view_tracking(True):
            log.append(T.autograd.is_view_replay_enabled())
        log.append(T.autograd.is_view_replay_enabled())
        out = T.ones(10, 5)
        grad = T.ones(5, 10)
        log.append([tuple(s) for s in T.autograd._calculate_shape(out, grad, False)])
        log.append([tuple(s) for s in T.autograd._calculate_shape(out, T.ones(3, 10, 5), True)])
        log.append(T.autograd.kineto_available())
        return log
    _both(prog)


def test_profiler_util_events_by_hand():
    # TestAutograd.test_profiler_aggregation_fake, test_profiler_function_event_avg
    def prog(T):
        from importlib import import_module
        pu = import_module(T.__name__ + ".autograd.profiler_util")
        events = pu.EventList()
        ids = iter(range(1, 10))
        for thread, ranges in ((1, [(0, 1), (1, 2)]), (0, [(0, 2), (1, 2), (1, 3)])):
            for start, end in ranges:
                events.append(pu.FunctionEvent(id=next(ids), node_id=0, name="", thread=thread,
                                               start_us=start, end_us=end))
        events._populate_cpu_children()
        log = [[c.id for c in e.cpu_children] for e in events]
        log.append([None if e.cpu_parent is None else e.cpu_parent.id for e in events])
        avg = pu.FunctionEventAvg()
        avg.add(pu.FunctionEvent(id=0, node_id=0, name="foo", thread=0, start_us=10, end_us=15))
        avg.add(pu.FunctionEvent(id=1, node_id=0, name="foo", thread=0, start_us=20, end_us=30))
        avg.add(avg)
        log.append([avg.key, avg.count, avg.cpu_time_total, avg.self_cpu_time_total, avg.cpu_time,
                    avg.device_time_total])
        log.append([pu._format_time(12.5), pu._format_time(1234.5), pu._format_time(2.5e6)])
        return log
    _both(prog)


def test_recorded_events_know_their_children():
    # TestAutograd.test_record_function: ranges hold the ops run inside them
    def prog(T):
        x = T.ones(2, 2)
        with T.autograd.profiler.profile() as p:
            with T.autograd.profiler.record_function("outer"):
                x * 2
        outer = next(e for e in p.function_events if e.name == "outer")
        return ["aten::mul" in [c.name for c in outer.cpu_children],
                all(c.cpu_parent is outer for c in outer.cpu_children)]
    assert _both(prog) == [True, True]


# ---- torch._C nodes and helpers -----------------------------------------------------------------

def test_delayed_error_node_runs_only_when_needed():
    # TestAutograd.test_copy_slices_graph_task_updates
    def prog(T):
        log = []
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3.0, 4.0], requires_grad=True)
        y_safe = T._C._functions.DelayedError("Boom!", 1)(y)
        log.append(type(y_safe.grad_fn).__name__)

        def f(x, y):
            out = x.clone().view(-1)
            b = out * 2
            out += y
            return out + b
        log.append(_outcome(lambda: f(x, y_safe).sum().backward()))
        log.append(_outcome(lambda: T.autograd.grad(f(x, y_safe).sum(), y)))
        log.append(_r(T.autograd.grad(f(x, y_safe).sum(), x)))
        log.append(_r(T.autograd.grad(f(x, y_safe).sum(), (x, y_safe))))

        def f3(x, y):
            out = x.clone().view(-1)
            out.register_hook(lambda *a: log.append("hook ran"))
            b = out + y
            out += y
            return out + b, b
        out, b = f3(x, y_safe)
        log.append(_r(T.autograd.grad(out.sum(), (b, y_safe))))
        return log
    _both(prog)


def test_undefined_grad_node_and_materialize():
    # TestAutograd.test_materialize_grads, test_dont_materialize_grads
    def prog(T):
        log = []
        for materialize in (True, False):
            class MyFunction(T.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.set_materialize_grads(materialize)
                    return x

                @staticmethod
                def backward(ctx, grad):
                    log.append(None if grad is None else _r(grad))
                    return grad

            x = T.ones(1, requires_grad=True)
            out = T._C._functions.UndefinedGrad()(MyFunction.apply(x))
            log.append(type(out.grad_fn).__name__)
            out.backward()
            log.append(None if x.grad is None else _r(x.grad))
            # an op's node between them passes the undefined gradient on; the Function still runs
            x2 = T.ones(1, requires_grad=True)
            T._C._functions.UndefinedGrad()(MyFunction.apply(x2) * 2).backward()
            log.append(None if x2.grad is None else _r(x2.grad))
        return log
    _both(prog)


def test_accumulate_grad_class_and_node_subclasses():
    # TestAutograd.test_next_functions, test_autograd_node_isinstance (the parts that hold)
    def prog(T):
        x = T.ones(2, requires_grad=True)
        a = x + 1
        Node = T.autograd.graph.Node
        return [isinstance(a.grad_fn.next_functions[0][0], T._C._functions.AccumulateGrad),
                issubclass(T._C._functions.AccumulateGrad, Node),
                issubclass(T._C._functions.DelayedError, Node)]
    assert _both(prog) == [True, True, True]


def test_weak_tensor_ref():
    # TestAutograd.test_retain_grad_cycle; TestAutogradForwardMode.test_detach_view_tracking
    def prog(T):
        x = T.ones(2, 2, requires_grad=True)

        def run():
            y = x * 2
            y.retain_grad()
            return y / 2, T._C._WeakTensorRef(y)
        z, ref = run()
        log = [ref.expired()]
        z.sum().backward()
        foo = T.ones(2)
        ref2 = T._C._WeakTensorRef(foo)
        log.append(ref2.expired())
        foo.detach()
        del foo
        gc.collect()
        log.append(ref2.expired())
        return log
    assert _both(prog) == [True, False, True]


def test_current_autograd_node_and_post_hook_registered_while_running():
    # TestAutograd.test_node_post_hook_registered_during_unpack_hook
    def prog(T):
        log = []
        a = T.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
        log.append(T._C._current_autograd_node())

        def unpack(t):
            node = T._C._current_autograd_node()
            log.append(type(node).__name__)

            def hook(outputs, inputs):
                log.append(all(i is None for i in inputs))
                return tuple(None if o is None else o / 2.0 for o in outputs)
            node.register_hook(hook)
            return t

        def model():
            var, mean = T.var_mean(a, dim=0)
            (var + mean).sum().backward()
        model()
        ref = a.grad.clone()
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            model()
        log.append(_r(a.grad - ref * 1.5))
        # a post-hook there before the node ran sees the real grad_outputs
        b = T.tensor([1.0, 2.0], requires_grad=True)
        c = b * 3
        c.grad_fn.register_hook(lambda gi, go: log.append(_r(go)))
        c.sum().backward()
        return log
    _both(prog)


def test_resize_function():
    # TestAutograd.test_grad_to_node (the Resize node)
    def prog(T):
        import importlib
        resize = importlib.import_module(T.__name__ + ".autograd._functions").Resize
        x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True).clone()
        y = resize.apply(x, (2, 2))
        log = [type(y.grad_fn).__name__, tuple(y.shape)]
        edge = T.autograd.graph.get_gradient_edge(y)
        log.append(_r(T.autograd.grad((y * 3).sum(), edge)))
        log.append(_r(T.autograd.grad((y * 3).sum(), x)))
        log.append(_outcome(lambda: resize.apply(x, (3,)))[0])
        return log
    _both(prog)


def test_saved_tensor_cannot_be_made_from_python():
    # TestAutograd.test_saved_tensor_constructor_forbidden_without_flag
    _both(lambda T: _outcome(lambda: T.autograd.SavedTensor()))


# ---- the engine: inputs the roots do not reach -------------------------------------------------

def test_will_engine_execute_node_for_unreachable_inputs():
    # TestAutograd.test_multi_grad_all_hooks (without its C++ extension op)
    def prog(T):
        log = []
        t1 = T.tensor([1.0, 2.0], requires_grad=True).mul(2)
        t2 = T.tensor([3.0, 4.0], requires_grad=True).clone()
        t3 = T._C._functions.UndefinedGrad()(T.tensor([5.0, 6.0], requires_grad=True))
        t4 = T.tensor([7.0, 8.0], requires_grad=True).clone()
        leaf = T.tensor([1.0, 1.0], requires_grad=True)
        leaf_acc = leaf.clone().grad_fn.next_functions[0][0]
        seen = {}

        def probe(g):
            seen["t1"] = T._C._will_engine_execute_node(t1.grad_fn)
            seen["t3"] = T._C._will_engine_execute_node(t3.grad_fn)
            if "leaf" in seen:
                seen["leaf"] = T._C._will_engine_execute_node(leaf_acc)
        t3.register_hook(probe)
        h = T.autograd.graph.register_multi_grad_hook(
            (t1, t2, t3, t4), lambda gs: log.append([g is not None for g in gs]))
        out = t2 * t3
        for inputs in ((t2, t3), (t1, t4), (t1, t3), (t3,)):
            out.sum().backward(inputs=inputs, retain_graph=True)
            log.append(dict(seen))
        seen["leaf"] = None
        out.sum().backward(inputs=(t1, t3, leaf), retain_graph=True)
        log.append(dict(seen))
        T.autograd.grad(out.sum(), (t1, t3), allow_unused=True, retain_graph=True)
        log.append(dict(seen))
        h.remove()
        out.sum().backward(inputs=(t1, t3), retain_graph=True)
        return log
    _both(prog)


# ---- nn.functional ------------------------------------------------------------------------------

def test_embedding_bag_old_argument_order():
    # TestAutograd.test_no_grad_copy_sparse: F.embedding_bag(weight, input, offsets) still works
    def prog(T):
        weight = T.arange(30.0).reshape(10, 3).requires_grad_()
        ids = T.tensor([1, 2, 4, 5, 4, 3, 2, 9])
        offsets = T.tensor([0, 4])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = T.nn.functional.embedding_bag(weight, ids, offsets, mode="sum")
        log = [_r(out), [(x.category.__name__, "Argument order" in str(x.message)) for x in w]]
        out.sum().backward()
        log.append(_r(weight.grad))
        ref = T.nn.functional.embedding_bag(ids, weight, offsets, mode="sum")
        log.append(_r(ref))
        return log
    _both(prog)


def test_calculate_shape_returns_sizes():
    # TestAutograd.test_calculate_shape_util: the results compare equal to torch.Size
    def prog(T):
        o, g = T.autograd._calculate_shape(T.ones(10, 5), T.ones(5, 10), False)
        return [o == T.Size([10, 5]), g == T.Size([5, 10]), math.prod(o)]
    assert _both(prog) == [True, True, 50]


# ---- grad_fn names and saved attributes (TestAutograd.test_grad_fn_attr_bindings) ---------------

def test_div_with_rounding_mode_is_div_backward2():
    # TestAutograd.test_grad_fn_attr_bindings: an explicit rounding_mode (None too) is torch's
    # DivBackward2, which shows _saved_rounding_mode; gradients as torch's (zero when rounding)
    def prog(T):
        log = []
        a = T.tensor([3.0, 5.0], requires_grad=True)
        for f in (lambda: a / 2, lambda: T.true_divide(a, 2.0), lambda: T.div(a, 2.0),
                  lambda: T.div(a, 2.0, rounding_mode=None), lambda: T.div(a, a, rounding_mode="trunc"),
                  lambda: a.div(2, rounding_mode="floor"), lambda: T.divide(a, a, rounding_mode=None),
                  lambda: a.clone().div_(2, rounding_mode=None), lambda: a.clone().div_(a)):
            out = f()
            g = out.grad_fn
            log.append([type(g).__name__, getattr(g, "_saved_rounding_mode", "-"), _r(out),
                        _r(T.autograd.grad(out.sum(), a)[0])])
        return log
    _both(prog)


def test_saved_attributes_of_upsample_conv_logit_im2col():
    # TestAutograd.test_grad_fn_attr_bindings
    def prog(T):
        F = T.nn.functional
        log = []
        for shape, modes in (((1, 1, 2), ("linear", "nearest")), ((1, 1, 2, 2), ("bilinear", "nearest")),
                             ((1, 1, 2, 2, 2), ("trilinear",))):
            a = T.ones(*shape, requires_grad=True)
            for m in modes:
                for kw in ({"size": 4}, {"scale_factor": 2.0}):
                    g = F.interpolate(a, mode=m, **kw).grad_fn
                    log.append((type(g).__name__, [(n, getattr(g, "_saved_" + n))
                                                   for n in ("scales", "scales_d", "scales_h", "scales_w")
                                                   if hasattr(g, "_saved_" + n)]))
        x = T.ones(1, 1, 3, 3, requires_grad=True)
        for bias in (True, False):
            log.append(T.nn.Conv2d(1, 1, 3, bias=bias)(x).grad_fn._saved_bias_sym_sizes_opt)
        y = T.ones(1, 1, 2, requires_grad=True)
        log.append([T.logit(y, 0.25).grad_fn._saved_eps, T.logit(y).grad_fn._saved_eps])
        g = F.unfold(T.ones(1, 1, 3, 4, requires_grad=True), 2).grad_fn
        log.append([g._saved_self_sym_argsize_minus_2, g._saved_self_sym_argsize_minus_1])
        return log
    _both(prog)


def test_raw_saved_tensors_of_custom_function_and_index():
    # TestAutograd.test_custom_function_saved_tensors, test_grad_fn_attr_bindings (indices),
    # test_saved_tensor_constructor_with_hooks
    def prog(T):
        log = []

        class MyFn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        a = T.tensor([1.0, 2.0], requires_grad=True)
        y = MyFn.apply(a)
        saved = y.grad_fn._raw_saved_tensors
        log.append([isinstance(s, T._C._autograd.SavedTensor) for s in saved])
        log.append(_outcome(lambda: saved[1].register_hooks(lambda x: x, lambda x: x))[0])
        log.append(_outcome(lambda: saved[0].register_hooks(lambda x: x))[0])
        log.append(_outcome(lambda: saved[0].register_hooks(1, 1))[0])
        saved[0].register_hooks(lambda x: x, lambda x: x)
        log.append(_outcome(lambda: saved[0].register_hooks(lambda x: x, lambda x: x))[0])
        y.sum().backward()
        log.append(_outcome(lambda: y.grad_fn._raw_saved_tensors)[0])
        b = T.ones(2, 2, requires_grad=True)
        out = b[:, T.tensor([0, 1])]
        raw = out.grad_fn._raw_saved_indices
        log.append([type(r).__name__ for r in raw])
        log.append(_outcome(lambda: raw[0].register_hooks(lambda x: x, lambda x: x))[0])
        counts = [0, 0]

        def pack(x):
            counts[0] += 1
            return x

        def unpack(x):
            counts[1] += 1
            return x
        with T.autograd.graph.saved_tensors_hooks(pack, unpack):
            s = T._C._autograd._make_saved_tensor(a, is_output=False)
            log.append(list(counts))
            log.append(_r(s.unpack()))
            s.unpack()
            log.append(list(counts))
        log.append(T._C._autograd._saved_tensors_hooks_is_enabled())
        with T.autograd.graph.disable_saved_tensors_hooks("no"):
            log.append(T._C._autograd._saved_tensors_hooks_is_enabled())
        return log
    _both(prog)
