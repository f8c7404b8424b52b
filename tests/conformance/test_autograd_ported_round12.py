"""Ported from PyTorch's test/test_autograd.py (TestAutograd) and test/autograd/
test_inference_mode.py, round 12: hooks and retain_grad on views and in-place results,
set_grad_enabled as decorator and context manager, inference_mode errors, detect_anomaly,
saved tensor hooks (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks), Node
prehooks/hooks, grad_fn.next_functions/name(), get_gradient_edge and forward-mode dual numbers.
Each case is a ``same_outcome`` program: torch 2.13 runs it as the oracle and tracegrad must
return equal values or raise the same builtin exception class. Each case names its original.

Adapted: fixed float64 inputs instead of ``randn`` draws, small shapes."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

pytest.importorskip("torch")

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def x_(T, grad=True):
    return T.tensor(X, requires_grad=grad)


def _hook_on_view(T):
    # TestAutograd.test_hooks (views): a hook on a view sees the view's gradient, the base's
    # grad is unchanged by the hook's return value only where it replaces it
    seen = []
    x = x_(T)
    y = x * 2
    v = y[0]
    v.register_hook(lambda g: seen.append(g.clone()))
    v.register_hook(lambda g: g * 3)
    (v.sum() + y.sum()).backward()
    return seen, x.grad


def _hook_on_inplace_view(T):
    # TestAutograd.test_tensor_hooks_inplace_over_view: a hook registered on the base before an
    # in-place op on its view fires with the gradient of the base's old version
    seen = []
    x = x_(T)
    y = x.clone()
    y.register_hook(lambda g: seen.append(("before", g.clone())))
    y[0].mul_(2)
    y.register_hook(lambda g: seen.append(("after", g.clone())))
    y.sum().backward()
    return seen, x.grad


def _retain_grad_view(T):
    # TestAutograd.test_retain_grad_inplace_on_view
    x = x_(T)
    y = x * 1
    v = y[:, 1]
    v.retain_grad()
    v.mul_(3)
    y.sum().backward()
    return v.grad, x.grad, v.retains_grad


def _retain_grad_inplace_multiple_outputs(T):
    # TestAutograd.test_retain_grad_inplace_multiple_outputs
    x = x_(T)
    a, b = (x * 1).unbind(0)
    a.retain_grad()
    b.retain_grad()
    c = a.clone()
    c.retain_grad()
    c.mul_(2)
    (c.sum() + b.sum() * 3).backward()
    return a.grad, b.grad, c.grad, x.grad


def _retain_grad_leaf_noop(T):
    x = x_(T)
    x.retain_grad()
    (x * x).sum().backward()
    return x.retains_grad, x.grad


def _retain_grad_no_requires_grad(T):
    return x_(T, grad=False).retain_grad()


def _set_grad_enabled_decorator(T):
    # TestAutograd.test_set_grad_enabled (as a decorator and as a context manager)
    x = x_(T)

    @T.set_grad_enabled(False)
    def f(a):
        return a * 2

    with T.set_grad_enabled(False):
        y = x * 2
        with T.set_grad_enabled(True):
            z = x * 2
    return f(x).requires_grad, y.requires_grad, z.requires_grad, T.is_grad_enabled()


def _set_grad_enabled_function_call(T):
    # calling set_grad_enabled(False) outside a with takes effect at once; restored after
    T.set_grad_enabled(False)
    try:
        r = (x_(T) * 2).requires_grad, T.is_grad_enabled()
    finally:
        T.set_grad_enabled(True)
    return r + (T.is_grad_enabled(),)


def _no_grad_decorator_generator(T):
    # TestAutograd.test_no_grad_python_function-like: no_grad as decorator on a generator
    x = x_(T)

    @T.no_grad()
    def gen():
        yield (x * 2).requires_grad
        yield T.is_grad_enabled()

    return list(gen()), T.is_grad_enabled()


def _enable_grad_in_no_grad(T):
    x = x_(T)
    with T.no_grad():
        with T.enable_grad():
            y = x * 2
        z = x * 2
    return y.requires_grad, z.requires_grad


def _inference_mode_tensor_flags(T):
    # test_inference_mode.py TestInferenceMode.test_inference_mode_tensor_creation
    with T.inference_mode():
        a = T.ones(2)
        b = x_(T) * 2
    return a.is_inference(), b.is_inference(), b.requires_grad, x_(T).is_inference()


def _inference_tensor_inplace_outside_errors(T):
    # TestInferenceMode.test_inference_mode_inf_tensor_in_normal_mode_inplace_op
    with T.inference_mode():
        a = T.ones(2)
    a.add_(1)


def _inference_tensor_in_autograd_errors(T):
    # TestInferenceMode.test_inference_mode_handle_direct_view_on_rebase-like: saving an
    # inference tensor for backward outside inference mode is an error
    with T.inference_mode():
        a = T.ones(3)
    x = T.ones(3, requires_grad=True)
    return (x * a).sum().backward()


def _inference_mode_false(T):
    with T.inference_mode():
        with T.inference_mode(False):
            y = x_(T) * 2
            flag = T.is_inference_mode_enabled()
    return y.requires_grad, y.is_inference(), flag, T.is_inference_mode_enabled()


def _inference_mode_decorator(T):
    @T.inference_mode()
    def f(a):
        return a * 2, T.is_grad_enabled()

    y, g = f(x_(T))
    return y.requires_grad, y.is_inference(), g


def _anomaly_nan(T):
    # TestAutograd.test_anomaly_detect_nan: a backward producing NaN raises under detect_anomaly
    class MyFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = x_(T)
    with T.autograd.detect_anomaly():
        MyFunc.apply(x).sum().backward()


def _anomaly_nan_check_off(T):
    # TestAutograd.test_anomaly_mode_no_check_nan
    class MyFunc(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = x_(T)
    with T.autograd.detect_anomaly(check_nan=False):
        MyFunc.apply(x).sum().backward()
    return bool(x.grad.isnan().all())


def _anomaly_flag(T):
    with T.autograd.detect_anomaly():
        inside = T.is_anomaly_enabled()
    T.autograd.set_detect_anomaly(True)
    try:
        on = T.is_anomaly_enabled()
    finally:
        T.autograd.set_detect_anomaly(False)
    return inside, on, T.is_anomaly_enabled()


def _saved_hooks_pack_unpack(T):
    # TestAutograd.test_saved_variable_packing_unpacking_saved_original_with_hooks
    log = []

    def pack(t):
        log.append("pack")
        return t * 2

    def unpack(t):
        log.append("unpack")
        return t / 2

    x = x_(T)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.pow(2)
    y.sum().backward()
    return sorted(set(log)), x.grad


def _saved_hooks_change_value(T):
    # packed values changed by the hooks change the gradient (the hook's output is used)
    x = x_(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x * x
    y.sum().backward()
    return x.grad


def _saved_hooks_nested_inner_wins(T):
    # TestAutograd.test_setting_default_saved_variable_hooks_twice_should_use_inner
    x = x_(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: 3 * t, lambda t: 3 * t):
        with T.autograd.graph.saved_tensors_hooks(lambda t: 5 * t, lambda t: 5 * t):
            y = x * x
        z = x * x
    y.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    z.sum().backward()
    return g1, x.grad


def _saved_hooks_double_backward(T):
    # TestAutograd.test_default_saved_variable_hooks_double_backward
    x = x_(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.pow(3)
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    g.sum().backward()
    return g, x.grad


def _disable_saved_hooks(T):
    # TestAutograd.test_disabling_saved_tensor_hooks
    with T.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass


def _save_on_cpu(T):
    # TestAutograd.test_graph_save_on_cpu
    x = x_(T)
    with T.autograd.graph.save_on_cpu():
        y = x.sin() * x
    y.sum().backward()
    return y, x.grad


def _save_on_cpu_pin(T):
    x = x_(T)
    with T.autograd.graph.save_on_cpu(pin_memory=False):
        y = (x * x).exp()
    y.sum().backward()
    return x.grad


def _grad_fn_prehooks(T):
    # TestAutograd.test_grad_fn_prehooks: a prehook sees the grad_outputs and may replace them
    seen = []
    x = x_(T)
    y = x.sin()
    y.grad_fn.register_prehook(lambda go: seen.append(go[0].clone()))
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    (y * 3).sum().backward()
    return seen, x.grad


def _grad_fn_prehooks_remove(T):
    # TestAutograd.test_grad_fn_prehooks_remove_hooks
    x = x_(T)
    y = x * 2
    h = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    h.remove()
    y.sum().backward()
    return x.grad


def _grad_fn_hook(T):
    # TestAutograd.test_hooks (Node.register_hook): grad_inputs, grad_outputs; replacing grad_inputs
    seen = []
    x = x_(T)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: seen.append((gi[0].clone(), go[0].clone())))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    y.sum().backward()
    return seen, x.grad


def _next_functions(T):
    # TestAutograd.test_next_functions
    x = x_(T)
    y = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    z = x * 2 + y
    nf = z.grad_fn.next_functions
    return (z.grad_fn.name(), len(nf), nf[0][0].name(), nf[1][0] is None, nf[0][1],
            nf[0][0].next_functions[0][0].name(), nf[0][0].next_functions[0][0].variable is x)


def _node_isinstance(T):
    # TestAutograd.test_node_isinstance-like: grad_fn objects are autograd.graph.Node
    x = x_(T)
    y = x.exp()
    return (isinstance(y.grad_fn, T.autograd.graph.Node), isinstance(None, T.autograd.graph.Node),
            isinstance(y.grad_fn.next_functions[0][0], T.autograd.graph.Node))


def _grad_fn_metadata(T):
    x = x_(T)
    y = x * 2
    y.grad_fn.metadata["k"] = 5
    return y.grad_fn.metadata, y.grad_fn.metadata is y.grad_fn.metadata


def _get_gradient_edge(T):
    # TestAutograd.test_gradient_edge_output / test_get_gradient_edge: grad w.r.t. an edge
    x = x_(T)
    y = x * 3
    z = y.exp()
    edge = T.autograd.graph.get_gradient_edge(y)
    (gy,) = T.autograd.grad(z.sum(), edge)
    return gy


def _get_gradient_edge_leaf(T):
    x = x_(T)
    edge = T.autograd.graph.get_gradient_edge(x)
    (gx,) = T.autograd.grad((x * x).sum(), edge)
    return gx


def _fw_dual_values(T):
    # TestAutograd forward AD: make_dual/unpack_dual inside dual_level
    import importlib
    fwAD = importlib.import_module(T.__name__ + ".autograd.forward_ad")
    p = x_(T, grad=False)
    tan = T.ones_like(p) * 0.5
    with fwAD.dual_level():
        d = fwAD.make_dual(p, tan)
        out = (d.sin() * d).sum()
        primal, tangent = fwAD.unpack_dual(out)
        u = fwAD.unpack_dual(d)
        return primal, tangent, u.primal, u.tangent


def _fw_unpack_plain(T):
    import importlib
    fwAD = importlib.import_module(T.__name__ + ".autograd.forward_ad")
    with fwAD.dual_level():
        return fwAD.unpack_dual(x_(T, grad=False)).tangent is None


def _fw_make_dual_outside_level(T):
    import importlib
    fwAD = importlib.import_module(T.__name__ + ".autograd.forward_ad")
    return fwAD.make_dual(x_(T, grad=False), T.ones(2, 3, dtype=T.float64))


def _fw_make_dual_shape_mismatch(T):
    import importlib
    fwAD = importlib.import_module(T.__name__ + ".autograd.forward_ad")
    with fwAD.dual_level():
        return fwAD.make_dual(x_(T, grad=False), T.ones(3, dtype=T.float64))


def _fw_views(T):
    # views of a dual tensor carry the tangent's view
    import importlib
    fwAD = importlib.import_module(T.__name__ + ".autograd.forward_ad")
    with fwAD.dual_level():
        d = fwAD.make_dual(x_(T, grad=False), T.arange(6.0, dtype=T.float64).view(2, 3))
        return fwAD.unpack_dual(d[1]).tangent, fwAD.unpack_dual(d.t()).tangent


def _no_grad_copy(T):
    # TestAutograd.test_no_grad_copy-like: copy_ under no_grad leaves no graph
    x = x_(T)
    y = T.zeros(2, 3, dtype=T.float64)
    with T.no_grad():
        y.copy_(x)
    return y.requires_grad, y.grad_fn is None, y


def _set_materialize_grads(T):
    # TestAutograd.test_set_materialize_grads: with materialize off, unused outputs' grads are None
    seen = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a.clone(), a.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            return g1 if g1 is not None else None

    x = x_(T)
    a, _ = F.apply(x)
    a.sum().backward()
    return seen, x.grad


def _saved_tensors_freed(T):
    # TestAutograd.test_backward_twice_with_saved_values
    x = x_(T)
    y = x * x
    y.sum().backward()
    return y.sum().backward()


def _requires_grad_nonleaf_errors(T):
    # TestAutograd.test_requires_grad_: requires_grad_(False) on a non-leaf is an error
    return (x_(T) * 2).requires_grad_(False)


def _requires_grad_int_errors(T):
    return T.tensor([1, 2]).requires_grad_()



# ---- more TestAutograd corners (hooks on views across in-place ops, post-accumulate-grad hooks,
# saved tensors of nodes, inference_mode views and in-place, forward AD levels/in-place/dtypes,
# autograd.grad allow_unused/materialize_grads/is_grads_batched, backward(inputs=)) -----------
def hook_view_base_after_inplace(T):
    x = x_(T); y = x.clone(); v = y[0]; seen = []
    v.register_hook(lambda g: seen.append(g.clone()))
    y.mul_(2)
    y.sum().backward()
    return seen, x.grad

def retain_grad_view_then_base_inplace(T):
    x = x_(T); y = x.clone(); v = y[:, 0]; v.retain_grad()
    y.add_(1)
    (y * y).sum().backward()
    return v.grad, x.grad

def grad_fn_of_view_after_inplace(T):
    x = x_(T); y = x.clone(); v = y[0]; y.mul_(2)
    return v.grad_fn.name(), y.grad_fn.name(), v._version, y._version

def register_hook_no_grad_err(T):
    return x_(T, grad=False).register_hook(lambda g: g)

def post_accumulate_hook(T):
    x = x_(T); seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (x * 3).sum().backward(); (x * 3).sum().backward()
    return seen

def post_acc_nonleaf_err(T):
    return (x_(T) * 2).register_post_accumulate_grad_hook(lambda p: None)

def node_register_hook_on_accumulate(T):
    x = x_(T); y = x * 2; acc = y.grad_fn.next_functions[0][0]; seen = []
    acc.register_hook(lambda gi, go: seen.append(go[0].clone()))
    y.sum().backward()
    return seen, acc.name()

def saved_tensors_access(T):
    x = x_(T); y = x.exp()
    return y.grad_fn._saved_result, y.grad_fn._saved_result is y

def saved_self_mul(T):
    x = x_(T); z = x_(T) * 1; y = x * z
    return y.grad_fn._saved_self, y.grad_fn._saved_other

def inference_mode_view_of_normal(T):
    x = x_(T, grad=False)
    with T.inference_mode():
        v = x[0]
    return v.is_inference(), v.requires_grad

def inference_inplace_on_normal(T):
    x = T.ones(3)
    with T.inference_mode():
        x.add_(1)
    return x, x._version

def inference_mode_requires_grad_err(T):
    with T.inference_mode():
        a = T.ones(3)
    return a.requires_grad_()

def no_grad_view_inplace(T):
    x = x_(T); y = x * 1
    with T.no_grad():
        v = y[0]
    v.mul_(2)

def detect_anomaly_warns(T):
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            pass
    return len(w) >= 1

def set_grad_enabled_bad(T):
    return T.set_grad_enabled("yes")

def grad_mode_on_class(T):
    @T.no_grad()
    class A:
        pass
    return A

def fw_tangent_wrong_dtype(T):
    fw = __import__(T.__name__ + ".autograd.forward_ad", fromlist=["x"])
    with fw.dual_level():
        return fw.make_dual(x_(T, grad=False), T.ones(2, 3, dtype=T.float32))

def fw_int_primal(T):
    fw = __import__(T.__name__ + ".autograd.forward_ad", fromlist=["x"])
    with fw.dual_level():
        return fw.make_dual(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))

def fw_inplace(T):
    fw = __import__(T.__name__ + ".autograd.forward_ad", fromlist=["x"])
    with fw.dual_level():
        d = fw.make_dual(x_(T, grad=False).clone(), T.ones(2, 3, dtype=T.float64))
        d.mul_(fw.make_dual(T.full((2, 3), 3.0, dtype=T.float64), T.full((2, 3), 0.5, dtype=T.float64)))
        return fw.unpack_dual(d).tangent, fw.unpack_dual(d).primal

def fw_plus_backward(T):
    fw = __import__(T.__name__ + ".autograd.forward_ad", fromlist=["x"])
    x = x_(T)
    with fw.dual_level():
        d = fw.make_dual(x, T.ones(2, 3, dtype=T.float64))
        y = (d * d).sum()
        p, tn = fw.unpack_dual(y)
        (p + tn).backward()
    return x.grad

def fw_enter_exit(T):
    fw = __import__(T.__name__ + ".autograd.forward_ad", fromlist=["x"])
    lvl = fw.enter_dual_level()
    try:
        d = fw.make_dual(x_(T, grad=False), T.ones(2, 3, dtype=T.float64))
        r = fw.unpack_dual(d.exp()).tangent
    finally:
        fw.exit_dual_level(level=lvl)
    return lvl, r

def grad_unused_allow(T):
    x = x_(T); z = x_(T)
    return T.autograd.grad((x * 2).sum(), [x, z], allow_unused=True, materialize_grads=True)

def grad_unused_err(T):
    x = x_(T); z = x_(T)
    return T.autograd.grad((x * 2).sum(), [x, z])

def backward_inputs(T):
    x = x_(T); z = x_(T)
    (x * z).sum().backward(inputs=[z])
    return x.grad, z.grad

def backward_nonscalar_err(T):
    (x_(T) * 2).backward()

def grad_is_grads_batched(T):
    x = x_(T)
    y = x * x
    return T.autograd.grad(y, x, T.eye(6, dtype=T.float64).view(6, 2, 3), is_grads_batched=True)


CASES = {
    "hooks_on_view": _hook_on_view,
    "tensor_hooks_inplace_over_view": _hook_on_inplace_view,
    "retain_grad_inplace_on_view": _retain_grad_view,
    "retain_grad_inplace_multiple_outputs": _retain_grad_inplace_multiple_outputs,
    "retain_grad_leaf_noop": _retain_grad_leaf_noop,
    "retain_grad_no_requires_grad_errors": _retain_grad_no_requires_grad,
    "set_grad_enabled_decorator_and_context": _set_grad_enabled_decorator,
    "set_grad_enabled_function_call": _set_grad_enabled_function_call,
    "no_grad_decorator_generator": _no_grad_decorator_generator,
    "enable_grad_in_no_grad": _enable_grad_in_no_grad,
    "inference_mode_tensor_flags": _inference_mode_tensor_flags,
    "inference_tensor_inplace_outside_errors": _inference_tensor_inplace_outside_errors,
    "inference_tensor_saved_for_backward_errors": _inference_tensor_in_autograd_errors,
    "inference_mode_false_nested": _inference_mode_false,
    "inference_mode_decorator": _inference_mode_decorator,
    "anomaly_detect_nan": _anomaly_nan,
    "anomaly_mode_no_check_nan": _anomaly_nan_check_off,
    "anomaly_flags": _anomaly_flag,
    "saved_hooks_pack_unpack": _saved_hooks_pack_unpack,
    "saved_hooks_change_value": _saved_hooks_change_value,
    "saved_hooks_twice_use_inner": _saved_hooks_nested_inner_wins,
    "saved_hooks_double_backward": _saved_hooks_double_backward,
    "disable_saved_tensors_hooks_errors": _disable_saved_hooks,
    "graph_save_on_cpu": _save_on_cpu,
    "graph_save_on_cpu_no_pin": _save_on_cpu_pin,
    "grad_fn_prehooks": _grad_fn_prehooks,
    "grad_fn_prehooks_remove_hooks": _grad_fn_prehooks_remove,
    "grad_fn_hook_replaces_grad_inputs": _grad_fn_hook,
    "next_functions": _next_functions,
    "node_isinstance": _node_isinstance,
    "grad_fn_metadata": _grad_fn_metadata,
    "gradient_edge_output": _get_gradient_edge,
    "get_gradient_edge_leaf": _get_gradient_edge_leaf,
    "forward_ad_make_unpack_dual": _fw_dual_values,
    "forward_ad_unpack_plain_tensor": _fw_unpack_plain,
    "forward_ad_make_dual_outside_level_errors": _fw_make_dual_outside_level,
    "forward_ad_make_dual_shape_mismatch_errors": _fw_make_dual_shape_mismatch,
    "forward_ad_views": _fw_views,
    "no_grad_copy": _no_grad_copy,
    "set_materialize_grads": _set_materialize_grads,
    "backward_twice_with_saved_values_errors": _saved_tensors_freed,
    "requires_grad_nonleaf_false_errors": _requires_grad_nonleaf_errors,
    "requires_grad_int_errors": _requires_grad_int_errors,
}

CASES.update({
    "hook_view_base_after_inplace": hook_view_base_after_inplace,
    "retain_grad_view_then_base_inplace": retain_grad_view_then_base_inplace,
    "grad_fn_of_view_after_inplace": grad_fn_of_view_after_inplace,
    "register_hook_no_grad_err": register_hook_no_grad_err,
    "post_accumulate_hook": post_accumulate_hook,
    "post_acc_nonleaf_err": post_acc_nonleaf_err,
    "node_register_hook_on_accumulate": node_register_hook_on_accumulate,
    "saved_tensors_access": saved_tensors_access,
    "saved_self_mul": saved_self_mul,
    "inference_mode_view_of_normal": inference_mode_view_of_normal,
    "inference_inplace_on_normal": inference_inplace_on_normal,
    "inference_mode_requires_grad_err": inference_mode_requires_grad_err,
    "no_grad_view_inplace": no_grad_view_inplace,
    "detect_anomaly_warns": detect_anomaly_warns,
    "set_grad_enabled_bad": set_grad_enabled_bad,
    "grad_mode_on_class": grad_mode_on_class,
    "fw_tangent_wrong_dtype": fw_tangent_wrong_dtype,
    "fw_int_primal": fw_int_primal,
    "fw_inplace": fw_inplace,
    "fw_plus_backward": fw_plus_backward,
    "fw_enter_exit": fw_enter_exit,
    "grad_unused_allow": grad_unused_allow,
    "grad_unused_err": grad_unused_err,
    "backward_inputs": backward_inputs,
    "backward_nonscalar_err": backward_nonscalar_err,
    "grad_is_grads_batched": grad_is_grads_batched,
})

XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(CASES, XFAIL))
def test_autograd_round12(fn):
    same_outcome(fn)
