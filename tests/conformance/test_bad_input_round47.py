"""Bad-input parity, round 47: tracegrad.compile's call arity and torch._dynamo/torch.compiler names,
torch.utils.checkpoint (use_reentrant, preserve_rng_state, context_fn, determinism_check,
checkpoint_sequential segments), autograd.Function misuse (backward's count, type, shape and dtype of
gradients, save_for_backward of non-tensors, mark_dirty/mark_non_differentiable misuse,
set_materialize_grads), saved_tensors_hooks and register_multi_grad_hook misuse, tensor hooks and
retain_grad on tensors without grad, backward twice, in-place on leaves and views (no_grad and
inference-mode views, multi-output views), manual_seed/Generator seeds and states, nn.init on 0-d,
empty and integer tensors, autocast device types and dtypes, GradScaler misuse and optimizers given
sparse gradients. The calls are written here for this table (no other repository's tests copied);
torch 2.13 is the oracle.

Fixed after the probe (the lead, same session): a view of a view made under no_grad, written in
place with grad mode on, is refused as torch refuses it (the creation mode is inherited by views of
the view); ``autocast`` refuses a dtype that is no dtype, a non-bool ``cache_enabled`` and the
'meta' device on entry, and decorating a non-callable; ``amp.is_autocast_available`` checks its
device type; ``compiler.disable`` takes torch's ``reason``; ``GradScaler.step`` with no gradient
recorded asserts, and a sparse gradient is unscaled through its values. The mismatches left are
strict xfails below:
- ``graph.save_on_cpu(device_type=3)``: torch TypeError, tracegrad accepts;
- ``compile(f, backend=3)``: refused at once (kept; an earlier round chose it), not tabled;
- ``_dynamo.run(3)`` accepted (torch AssertionError); ``_dynamo.explain(3)()`` TypeError (torch
  AssertionError);
  ``compiler.substitute_in_graph`` missing; ``_dynamo.config.patch(cache_size_limit="x")`` refused
  (torch accepts); ``compiler.assume_constant_result(3)`` TypeError (torch AttributeError).

Each call runs under torch and tracegrad: the same exception class (or none), no text of the
layers below tracegrad.
"""
import logging

import pytest

import tracegrad

from _bad_input_helpers import assert_same_class, table_tests

torch = pytest.importorskip("torch")
import torch.utils.checkpoint  # noqa: E402
import tracegrad.utils.checkpoint  # noqa: E402,F811

C = {}


def enter(cm):
    """Enter and leave a context manager (so an accepted one leaves no global state behind). The
    autocast state is put back too: torch's autocast refusing ``cache_enabled="no"`` on entry has
    already turned CPU autocast on (every later autocast test in the process then differed)."""
    T = tracegrad if type(cm).__module__.startswith("tracegrad") else torch
    was = (T.is_autocast_enabled("cpu"), T.get_autocast_dtype("cpu"))
    level = _torch_nesting() if T is torch else 0
    cache = torch.is_autocast_cache_enabled() if T is torch else None
    try:
        with cm:
            pass
    finally:
        T.set_autocast_enabled("cpu", was[0])
        T.set_autocast_dtype("cpu", was[1])
        if T is torch:
            # (and its nesting count, left one up: the autocast cache was never cleared again,
            # so later torch autocast steps reused stale low-precision weight casts)
            while _torch_nesting() > level:
                torch.autocast_decrement_nesting()
            torch.set_autocast_cache_enabled(cache)
            torch.clear_autocast_cache()


def _torch_nesting():
    """torch's autocast nesting count (it has no getter: one up and back down)."""
    torch.autocast_increment_nesting()
    return torch.autocast_decrement_nesting()

# ---- autograd.Function, hooks, backward, in-place on leaves and views ----
def fn_cls(T, nret=1, kind="ok"):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b=None):
            if kind == "save_int": ctx.save_for_backward(a, 3)
            elif kind == "save_list": ctx.save_for_backward([a])
            elif kind == "dirty_not_input": ctx.mark_dirty(a * 2)
            elif kind == "dirty_not_returned": ctx.mark_dirty(a); return a.clone()
            elif kind == "nondiff_int": ctx.mark_non_differentiable(3)
            elif kind == "needs": ctx.needs_input_grad = (True,)
            elif kind == "save_twice": ctx.save_for_backward(a); ctx.save_for_backward(a)
            elif kind == "mat": ctx.set_materialize_grads("yes")
            elif kind == "ret_int": return 3
            elif kind == "ret_none": return None
            elif kind == "ret_list": return [a * 2]
            elif kind == "save_out_later": pass
            return a * 2
        @staticmethod
        def backward(ctx, g):
            if nret == 0: return ()
            if nret == "none": return None
            if nret == "int": return 3
            if nret == "wrongshape": return T.ones(5)
            if nret == "wrongdtype": return T.ones(2, dtype=T.int64)
            if nret == "list": return [g]
            if nret == "complex": return g.to(T.complex64)
            return (g,) * nret
    return Fn
a = lambda T: T.ones(2, requires_grad=True)
for n in (0, 2, 3, "none", "int", "wrongshape", "wrongdtype", "list", "complex"):
    C[f"fn_backward_{n}"] = (lambda n: lambda T: fn_cls(T, n).apply(a(T)).sum().backward())(n)
for k in ("save_int", "save_list", "dirty_not_input", "dirty_not_returned", "nondiff_int", "needs", "save_twice", "mat", "ret_int", "ret_none", "ret_list"):
    C[f"fn_{k}"] = (lambda k: lambda T: fn_cls(T, 1, k).apply(a(T)).sum().backward())(k)
C["fn_apply_kwarg"] = lambda T: fn_cls(T).apply(a=a(T))
C["fn_direct_call"] = lambda T: fn_cls(T)()(a(T))
C["fn_forward_direct"] = lambda T: fn_cls(T).forward(None, a(T))
C["fn_no_forward"] = lambda T: type("G", (T.autograd.Function,), {})().apply(a(T))
C["fn_no_forward_cls"] = lambda T: type("G", (T.autograd.Function,), {}).apply(a(T))
C["fn_no_backward"] = lambda T: type("G", (T.autograd.Function,), {"forward": staticmethod(lambda ctx, x: x * 2)}).apply(a(T)).sum().backward()
C["fn_dirty_leaf"] = lambda T: fn_cls(T, 1, "dirty_leaf").apply(a(T))
# hooks
C["hook_leaf_nograd"] = lambda T: T.ones(2).register_hook(lambda g: g)
C["hook_not_callable"] = lambda T: a(T).register_hook(5)
C["post_acc_nonleaf"] = lambda T: (a(T) * 2).register_post_accumulate_grad_hook(lambda t: None)
C["post_acc_nograd"] = lambda T: T.ones(2).register_post_accumulate_grad_hook(lambda t: None)
C["retain_grad_int"] = lambda T: T.ones(2, dtype=T.int64).retain_grad()
C["retain_grad_nograd"] = lambda T: T.ones(2).retain_grad()
C["requires_grad_int"] = lambda T: T.ones(2, dtype=T.int64).requires_grad_()
C["requires_grad_nonleaf_false"] = lambda T: (a(T) * 2).requires_grad_(False)
C["backward_twice"] = lambda T: (lambda y: (y.backward(), y.backward()))((a(T) * a(T)).sum())
C["backward_nonscalar"] = lambda T: (a(T) * 2).backward()
C["backward_nograd"] = lambda T: T.ones(2).sum().backward()
C["grad_unused"] = lambda T: (lambda x: T.autograd.grad((x * 2).sum(), [x, T.ones(2, requires_grad=True)]))(a(T))
C["grad_nograd_input"] = lambda T: T.autograd.grad((a(T) * 2).sum(), [T.ones(2)])
C["inplace_leaf"] = lambda T: a(T).add_(1)
C["inplace_leaf_view"] = lambda T: a(T)[0].mul_(2)
def vv(T):
    x = a(T); y = x * 1
    with T.no_grad():
        v = y.view(2)[0:1]
    v.mul_(2)
    return v
C["view_created_nograd_inplace"] = vv
def vv2(T):
    x = a(T); y = x * 1
    with T.no_grad():
        v = y.view(2)
    v.view(2)[0:1].mul_(2)
def vv3(T):
    x = a(T)
    with T.no_grad():
        v = x[0:1]
    v.mul_(2)
def vv4(T):
    x = a(T); y = x.view(2).unbind(0)
    y[0].mul_(2)
def vv5(T):
    x = a(T) * 1; y = x.unbind(0)
    y[0].mul_(2)
def vv6(T):
    x = a(T) * 1; y = x.split(1)
    y[0].mul_(2)
def vv7(T):
    x = a(T) * 1; y = x.chunk(2)[0].view(1)
    y.mul_(2)
C["view_of_view_nograd"] = vv2; C["leaf_view_nograd_inplace"] = vv3; C["unbind_leaf_inplace"] = vv4
C["unbind_inplace"] = vv5; C["split_inplace"] = vv6; C["chunk_view_inplace"] = vv7
def vv8(T):
    x = a(T) * 1
    with T.inference_mode():
        y = T.ones(2)
    y.add_(1)
    x.add_(y)
def vv9(T):
    with T.inference_mode():
        y = T.ones(2)
    y.requires_grad_()
def vv10(T):
    with T.inference_mode():
        y = T.ones(2)
    (a(T)*y).sum().backward()
def vv11(T):
    with T.inference_mode():
        y = T.ones(2)
    y.add_(1)
C["inference_inplace_outside"] = vv8; C["inference_requires_grad"] = vv9; C["inference_use"] = vv10; C["inference_inplace_out"] = vv11

# ---- checkpoint, saved-tensor hooks, multi-grad hooks, seeds ----
a = lambda T: T.ones(2, requires_grad=True)
ck = lambda T: T.utils.checkpoint
f = lambda x: x.sin() * 2
C["ck_prs_str"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, preserve_rng_state="no").sum().backward()
C["ck_prs_none"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, preserve_rng_state=None).sum().backward()
C["ck_no_reentrant_arg"] = lambda T: ck(T).checkpoint(f, a(T))
C["ck_reentrant_str"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant="yes")
C["ck_reentrant_unknown_kw"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=True, foo=1)
C["ck_noreentrant_unknown_kw"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, foo=1)
C["ck_not_callable"] = lambda T: ck(T).checkpoint(3, a(T), use_reentrant=False)
C["ck_not_callable_r"] = lambda T: ck(T).checkpoint(3, a(T), use_reentrant=True)
C["ck_reentrant_noinputs_grad"] = lambda T: ck(T).checkpoint(f, T.ones(2), use_reentrant=True).sum().backward()
C["ck_reentrant_autograd_grad"] = lambda T: (lambda x: T.autograd.grad(ck(T).checkpoint(f, x, use_reentrant=True).sum(), x))(a(T))
C["ck_context_fn_reentrant"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=True, context_fn=lambda: (None, None))
C["ck_context_fn_bad"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, context_fn=3)
C["ck_determinism_bad"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, determinism_check="foo")
C["ck_determinism_none_ok"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=False, determinism_check="none")
def ck_debug_str(T):
    # torch's debug mode sets its "LoggingTensor" logger to INFO without propagation and does not
    # put it back when the checkpoint raises: later torch checkpoints in the process then logged
    # through pytest's handler (test_checkpoint_ported's failure in a full run)
    lg = logging.getLogger("LoggingTensor")
    was = (lg.level, lg.propagate, list(lg.handlers))
    try:
        return ck(T).checkpoint(f, a(T), use_reentrant=False, debug="x")
    finally:
        lg.setLevel(was[0])
        lg.propagate = was[1]
        lg.handlers[:] = was[2]


C["ck_debug_str"] = ck_debug_str
C["ck_reentrant_debug"] = lambda T: ck(T).checkpoint(f, a(T), use_reentrant=True, debug=True)
C["ck_returns_int"] = lambda T: ck(T).checkpoint(lambda x: 3, a(T), use_reentrant=False)
C["ck_returns_int_r"] = lambda T: ck(T).checkpoint(lambda x: 3, a(T), use_reentrant=True)
C["ck_backward_twice"] = lambda T: (lambda y: (y.backward(retain_graph=True), y.backward()))(ck(T).checkpoint(f, a(T), use_reentrant=False).sum())
C["ck_backward_twice_r"] = lambda T: (lambda y: (y.backward(), y.backward()))(ck(T).checkpoint(f, a(T), use_reentrant=True).sum())
seqm = lambda T: T.nn.Sequential(T.nn.Linear(2, 2), T.nn.ReLU(), T.nn.Linear(2, 2))
cs = lambda T, seg, **k: ck(T).checkpoint_sequential(seqm(T), seg, T.ones(1, 2, requires_grad=True), **k)
for seg in (0, -1, 4, 10, 1.5, "2", None, 2.0, True):
    C[f"cs_seg_{seg!r}"] = (lambda seg: lambda T: cs(T, seg, use_reentrant=False))(seg)
C["cs_no_reentrant"] = lambda T: cs(T, 2)
C["cs_prs_str"] = lambda T: cs(T, 2, use_reentrant=False, preserve_rng_state="x")
C["cs_functions_list"] = lambda T: ck(T).checkpoint_sequential(list(seqm(T)), 2, T.ones(1, 2), use_reentrant=False)
C["cs_functions_int"] = lambda T: ck(T).checkpoint_sequential(3, 2, T.ones(1, 2), use_reentrant=False)
C["cs_input_tuple"] = lambda T: ck(T).checkpoint_sequential(seqm(T), 2, (T.ones(1, 2),), use_reentrant=False)
C["cs_input_int"] = lambda T: ck(T).checkpoint_sequential(seqm(T), 2, 3, use_reentrant=False)
C["cs_kw_unknown"] = lambda T: cs(T, 2, use_reentrant=False, foo=1)
C["cs_empty"] = lambda T: ck(T).checkpoint_sequential(T.nn.Sequential(), 1, T.ones(1, 2), use_reentrant=False)
# saved tensor hooks
g = lambda T: T.autograd.graph
def sth(T, pack, unpack):
    x = a(T)
    with g(T).saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward()
    return x.grad
C["sth_pack_not_callable"] = lambda T: sth(T, 3, lambda t: t)
C["sth_unpack_not_callable"] = lambda T: sth(T, lambda t: t, 3)
C["sth_unpack_returns_int"] = lambda T: sth(T, lambda t: t, lambda t: 3)
C["sth_unpack_returns_none"] = lambda T: sth(T, lambda t: t, lambda t: None)
C["sth_unpack_wrong_shape"] = lambda T: sth(T, lambda t: t, lambda t: T.ones(5))
C["sth_pack_raises"] = lambda T: sth(T, lambda t: 1 / 0, lambda t: t)
C["sth_pack_inplace"] = lambda T: sth(T, lambda t: t.add_(1), lambda t: t)
C["sth_one_arg"] = lambda T: g(T).saved_tensors_hooks(lambda t: t)
def sth_disabled(T):
    with g(T).disable_saved_tensors_hooks("no hooks here"):
        with g(T).saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
C["sth_disabled"] = sth_disabled
def sth_disabled2(T):
    with g(T).saved_tensors_hooks(lambda t: t, lambda t: t):
        with g(T).disable_saved_tensors_hooks("no hooks here"):
            (a(T) * a(T)).sum()
C["sth_disabled_inner"] = sth_disabled2
C["save_on_cpu_bad"] = lambda T: g(T).save_on_cpu(pin_memory="x", device_type=3)
# multi grad hook
def mgh(T, tensors, fn, mode="all"):
    return g(T).register_multi_grad_hook(tensors, fn, mode=mode)
C["mgh_mode_bad"] = lambda T: mgh(T, [a(T)], lambda gs: None, mode="some")
C["mgh_empty"] = lambda T: mgh(T, [], lambda gs: None)
C["mgh_nograd"] = lambda T: mgh(T, [T.ones(2)], lambda gs: None)
C["mgh_not_tensor"] = lambda T: mgh(T, [3], lambda gs: None)
C["mgh_tensor_not_seq"] = lambda T: mgh(T, a(T), lambda gs: None)
C["mgh_fn_not_callable_fire"] = lambda T: (lambda x: (mgh(T, [x], 3), (x * 2).sum().backward()))(a(T))
C["mgh_any_nograd"] = lambda T: mgh(T, [T.ones(2)], lambda gs: None, mode="any")
# Generator / manual_seed
for s in (-1, 2**64, 2**64 - 1, -2**63, -2**63 - 1, 1.5, "3", None, float("nan"), True, 2**63):
    C[f"manual_seed_{s!r}"] = (lambda s: lambda T: T.manual_seed(s))(s)
    C[f"gen_manual_seed_{s!r}"] = (lambda s: lambda T: T.Generator().manual_seed(s))(s)
C["gen_device_bad"] = lambda T: T.Generator(device="foo")
C["gen_device_int"] = lambda T: T.Generator(device=3.5)
C["gen_set_state_bad"] = lambda T: T.Generator().set_state(T.ones(3))
C["gen_set_state_list"] = lambda T: T.Generator().set_state([1, 2])
C["set_rng_state_bad"] = lambda T: T.set_rng_state(T.ones(3))
C["set_rng_state_int"] = lambda T: T.set_rng_state(3)
C["randn_gen_str"] = lambda T: T.randn(2, generator="x")
C["randn_gen_wrong_device_ok"] = lambda T: T.rand(2, generator=T.Generator())
C["gen_seed_method_arg"] = lambda T: T.Generator().seed(3)
C["gen_graphsafe"] = lambda T: T.Generator().graphsafe_get_state()
C["random_seed_bad"] = lambda T: T.random.manual_seed("a")
C["random_fork_rng_devices"] = lambda T: enter(T.random.fork_rng(devices=3))
C["random_fork_rng_devtype"] = lambda T: enter(T.random.fork_rng(device_type="foo"))
C["initial_seed_arg"] = lambda T: T.initial_seed(3)

# ---- nn.init, autocast, GradScaler, sparse grads ----
I = lambda T: T.nn.init
fns = ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_", "eye_", "dirac_", "trunc_normal_", "uniform_", "normal_", "constant_", "ones_", "zeros_"]
shapes = [(), (3,), (0, 3), (2, 3, 4), (2, 0)]
for fn in fns:
    for s in shapes[:1] + shapes[2:3]:
        extra = {"sparse_": (0.5,), "constant_": (1.0,)}.get(fn, ())
        C[f"init_{fn}{s}"] = (lambda fn, s, extra: lambda T: getattr(I(T), fn)(T.empty(*s), *extra))(fn, s, extra)
C["init_kaiming_mode_bad"] = lambda T: I(T).kaiming_uniform_(T.empty(2, 3), mode="fan_foo")
C["init_kaiming_nonlin_bad"] = lambda T: I(T).kaiming_normal_(T.empty(2, 3), nonlinearity="foo")
C["init_gain_bad"] = lambda T: I(T).calculate_gain("foo")
C["init_gain_leaky_str"] = lambda T: I(T).calculate_gain("leaky_relu", "x")
C["init_gain_leaky_bool"] = lambda T: I(T).calculate_gain("leaky_relu", True)
C["init_gain_selu"] = lambda T: I(T).calculate_gain("selu", 3)
C["init_gain_conv"] = lambda T: I(T).calculate_gain("conv2d", 3)
C["init_int_tensor_uniform"] = lambda T: I(T).uniform_(T.zeros(3, dtype=T.int64))
C["init_int_tensor_normal"] = lambda T: I(T).normal_(T.zeros(3, dtype=T.int64))
C["init_int_xavier"] = lambda T: I(T).xavier_uniform_(T.zeros(2, 3, dtype=T.int64))
C["init_int_orth"] = lambda T: I(T).orthogonal_(T.zeros(2, 3, dtype=T.int64))
C["init_eye_int_ok"] = lambda T: I(T).eye_(T.zeros(2, 3, dtype=T.int64))
C["init_dirac_groups_bad"] = lambda T: I(T).dirac_(T.empty(4, 2, 3), groups=3)
C["init_dirac_groups0"] = lambda T: I(T).dirac_(T.empty(4, 2, 3), groups=0)
C["init_sparse_neg"] = lambda T: I(T).sparse_(T.empty(3, 4), -0.5)
C["init_sparse_big"] = lambda T: I(T).sparse_(T.empty(3, 4), 2.0)
C["init_trunc_a_gt_b"] = lambda T: I(T).trunc_normal_(T.empty(3), a=2., b=-2.)
C["init_uniform_a_gt_b"] = lambda T: I(T).uniform_(T.empty(3), a=2., b=-2.)
C["init_normal_neg_std"] = lambda T: I(T).normal_(T.empty(3), std=-1.)
C["init_not_tensor"] = lambda T: I(T).xavier_uniform_([[1., 2.]])
C["init_leaf_rg_ok"] = lambda T: I(T).normal_(T.empty(3, requires_grad=True))
C["init_fan_1d"] = lambda T: I(T)._calculate_fan_in_and_fan_out(T.empty(3))
C["init_generator_bad"] = lambda T: I(T).uniform_(T.empty(3), generator=3)
# autocast
C["autocast_devtype_bad"] = lambda T: T.autocast(device_type="foo")
C["autocast_devtype_int"] = lambda T: T.autocast(device_type=3)
C["autocast_cpu_dtype_int"] = lambda T: enter(T.autocast(device_type="cpu", dtype=T.int32))
C["autocast_cpu_dtype_f64"] = lambda T: enter(T.autocast(device_type="cpu", dtype=T.float64))
C["autocast_cpu_dtype_f16_ok"] = lambda T: T.autocast(device_type="cpu", dtype=T.float16)
C["autocast_cpu_dtype_str"] = lambda T: enter(T.autocast(device_type="cpu", dtype="bfloat16"))
C["autocast_no_args"] = lambda T: T.autocast()
C["autocast_enabled_str"] = lambda T: T.autocast("cpu", enabled="yes")
C["autocast_cache_str"] = lambda T: enter(T.autocast("cpu", cache_enabled="no"))
C["autocast_cuda_ctor"] = lambda T: T.autocast("cuda")
C["autocast_meta"] = lambda T: enter(T.autocast("meta"))
C["cpu_amp_autocast_f64"] = lambda T: enter(T.cpu.amp.autocast(dtype=T.float64))
C["amp_autocast_mode_dec_bad"] = lambda T: T.amp.autocast("cpu")(3)
C["amp_custom_fwd_no_devtype"] = lambda T: T.amp.custom_fwd(lambda x: x)
C["amp_custom_fwd_bad_devtype"] = lambda T: T.amp.custom_fwd(lambda x: x, device_type=3)
C["amp_custom_bwd_bad_devtype"] = lambda T: T.amp.custom_bwd(lambda x: x, device_type="foo")
C["amp_is_autocast_available_bad"] = lambda T: T.amp.is_autocast_available(3)
C["amp_is_autocast_available_foo"] = lambda T: T.amp.is_autocast_available("foo")
C["get_autocast_dtype_bad"] = lambda T: T.get_autocast_dtype("foo")
def set_autocast_dtype_bad(T):
    # torch accepts it: put the process-wide dtype back, or every later autocast test in this
    # process runs in int32 (test_amp's failures in a full run)
    was = T.get_autocast_dtype("cpu")
    try:
        T.set_autocast_dtype("cpu", T.int32)
    finally:
        T.set_autocast_dtype("cpu", was)


C["set_autocast_dtype_bad"] = set_autocast_dtype_bad
C["set_autocast_enabled_bad"] = lambda T: T.set_autocast_enabled("foo", True)
C["is_autocast_enabled_bad"] = lambda T: T.is_autocast_enabled("foo")
# GradScaler
GS = lambda T, **k: T.amp.GradScaler("cpu", **k)
def opt(T):
    p = T.nn.Parameter(T.ones(2)); return p, T.optim.SGD([p], lr=0.1)
def gs_step_twice(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o); s.step(o)
def gs_unscale_twice(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.unscale_(o); s.unscale_(o)
def gs_unscale_after_step(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o); s.unscale_(o)
def gs_update_bad(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o); s.update(3.0)
def gs_update_tensor_int(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o); s.update(T.tensor([2]))
def gs_update_tensor_shape(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o); s.update(T.tensor([2., 3.]))
def gs_step_closure(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()).backward(); s.step(o, closure=lambda: 1)
def gs_step_no_backward(T):
    p, o = opt(T); s = GS(T); s.scale((p * 2).sum()); s.step(o)
def gs_step_not_opt(T):
    s = GS(T); s.step(3)
def gs_unscale_nofp32(T):
    p = T.nn.Parameter(T.ones(2, dtype=T.float16)); o = T.optim.SGD([p], lr=0.1); s = GS(T); s.scale((p * 2).sum()).backward(); s.unscale_(o)
def gs_scale_int(T): GS(T).scale(3)
def gs_scale_list(T): GS(T).scale([T.ones(2), (T.ones(1),)])
def gs_scale_inttensor(T): GS(T).scale(T.ones(2, dtype=T.int64))
def gs_load_state_bad(T): GS(T).load_state_dict({})
def gs_load_state_disabled(T): GS(T, enabled=False).load_state_dict({"scale": 1.})
def gs_state_dict_disabled(T): return GS(T, enabled=False).state_dict()
def gs_bad_init_scale(T): GS(T, init_scale=-1.)
def gs_bad_growth(T): GS(T, growth_factor=0.5)
def gs_bad_backoff(T): GS(T, backoff_factor=2.)
def gs_bad_interval(T): GS(T, growth_interval=0)
def gs_bad_device(T): T.amp.GradScaler("foo")
def gs_set_growth_factor_str(T): GS(T).set_growth_factor("x")
def gs_get_scale(T): return GS(T).get_scale()
def gs_sparse(T):
    p = T.nn.Parameter(T.ones(3, 2)); e = T.nn.functional.embedding(T.tensor([0, 1]), p, sparse=True)
    o = T.optim.SGD([p], lr=0.1); s = GS(T); s.scale(e.sum()).backward(); s.step(o); s.update()
for k, v in list(globals().items()):
    if k.startswith("gs_"): C[k] = v
# optimizer sparse grads
def sparse_step(T, name, **kw):
    p = T.nn.Parameter(T.ones(3, 2)); e = T.nn.functional.embedding(T.tensor([0, 1]), p, sparse=True)
    o = getattr(T.optim, name)([p], **kw); e.sum().backward(); o.step()
for name in ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "SparseAdam", "LBFGS"]:
    kw = {"lr": 0.1}
    C[f"sparse_{name}"] = (lambda name, kw: lambda T: sparse_step(T, name, **kw))(name, kw)
C["sparse_SGD_momentum"] = lambda T: sparse_step(T, "SGD", lr=0.1, momentum=0.9)
C["sparse_SGD_wd"] = lambda T: sparse_step(T, "SGD", lr=0.1, weight_decay=0.1)
C["sparse_Adagrad_wd"] = lambda T: sparse_step(T, "Adagrad", lr=0.1, weight_decay=0.1)
C["sparse_Adam_foreach"] = lambda T: sparse_step(T, "Adam", lr=0.1, foreach=True)
C["sparseadam_dense"] = lambda T: (lambda p: (T.optim.SparseAdam([p]), (p * 2).sum().backward(), T.optim.SparseAdam([p]).step()))(T.nn.Parameter(T.ones(2)))
C["sparseadam_dense_ctor"] = lambda T: T.optim.SparseAdam([T.nn.Parameter(T.ones(2))], lr=-1)
C["sparse_Adagrad_lrdecay"] = lambda T: sparse_step(T, "Adagrad", lr=0.1, lr_decay=0.1)
C["sparse_Adam_amsgrad"] = lambda T: sparse_step(T, "Adam", lr=0.1, amsgrad=True)

# ---- compile arity, _dynamo / compiler names ----
def f2(x, y): return x * y
C["cc_too_few"] = lambda T: T.compile(f2)(T.ones(2))
C["cc_too_many"] = lambda T: T.compile(f2)(T.ones(2), T.ones(2), T.ones(2))
C["cc_bad_kw"] = lambda T: T.compile(f2)(T.ones(2), z=T.ones(2))
C["cc_dup_kw"] = lambda T: T.compile(f2)(T.ones(2), x=T.ones(2))
C["cc_too_few_second"] = lambda T: (lambda g: (g(T.ones(2), T.ones(2)), g(T.ones(2))))(T.compile(f2))
C["cc_too_many_second"] = lambda T: (lambda g: (g(T.ones(2), T.ones(2)), g(T.ones(2), T.ones(2), 1)))(T.compile(f2))
C["cc_module_arity"] = lambda T: T.compile(T.nn.Linear(2, 2))(T.ones(1, 2), T.ones(1, 2))
C["cc_module_arity2"] = lambda T: (lambda m: (m(T.ones(1, 2)), m(T.ones(1, 2), T.ones(1, 2))))(T.compile(T.nn.Linear(2, 2)))
C["cc_method_compile_arity"] = lambda T: (lambda m: (m.compile(), m(T.ones(1, 2), 3)))(T.nn.Linear(2, 2))
C["cc_none"] = lambda T: T.compile(None)
C["cc_fullgraph_str"] = lambda T: T.compile(f2, fullgraph="yes")(T.ones(2), T.ones(2))
C["cc_dynamic_int"] = lambda T: T.compile(f2, dynamic=3)(T.ones(2), T.ones(2))
C["cc_backend_int"] = lambda T: T.compile(f2, backend=3)
C["cc_backend_none"] = lambda T: T.compile(f2, backend=None)
C["cc_backend_callable_ok"] = lambda T: T.compile(f2, backend=lambda gm, ex: gm)
C["cc_mode_none_ok"] = lambda T: T.compile(f2, mode=None)(T.ones(2), T.ones(2))
C["cc_disable_str"] = lambda T: T.compile(f2, disable="x")(T.ones(2), T.ones(2))
C["cc_options_list"] = lambda T: T.compile(f2, options=[1])
C["dyn_reset_ok"] = lambda T: T._dynamo.reset()
C["dyn_disable_notcallable"] = lambda T: T._dynamo.disable(3)
C["dyn_disable_recursive_str"] = lambda T: T._dynamo.disable(f2, recursive="x")
C["compiler_disable_notcallable"] = lambda T: T.compiler.disable(3)
C["compiler_disable_kw"] = lambda T: T.compiler.disable(f2, reason=3)
C["dyn_allow_in_graph_str"] = lambda T: T._dynamo.allow_in_graph("f")
C["dyn_allow_in_graph_list"] = lambda T: T._dynamo.allow_in_graph([f2, 3])
C["dyn_mark_dynamic_bad_dim"] = lambda T: T._dynamo.mark_dynamic(T.ones(2), 5)
C["dyn_mark_dynamic_not_tensor"] = lambda T: T._dynamo.mark_dynamic(3, 0)
C["dyn_mark_static_bad_dim"] = lambda T: T._dynamo.mark_static(T.ones(2), 5)
C["dyn_maybe_mark_dynamic_bad"] = lambda T: T._dynamo.maybe_mark_dynamic(T.ones(2), 5)
C["dyn_mark_dynamic_minmax"] = lambda T: T._dynamo.mark_dynamic(T.ones(2), 0, min=5, max=2)
C["dyn_explain_notcallable"] = lambda T: T._dynamo.explain(3)()
C["dyn_run_notcallable"] = lambda T: T._dynamo.run(3)
C["compiler_reset_arg"] = lambda T: T.compiler.reset(3)
C["compiler_is_compiling_arg"] = lambda T: T.compiler.is_compiling(3)
C["compiler_assume_constant_result_bad"] = lambda T: T.compiler.assume_constant_result(3)
C["compiler_list_backends_bad"] = lambda T: T.compiler.list_backends(exclude_tags=3)
C["compiler_substitute_in_graph_bad"] = lambda T: T.compiler.substitute_in_graph(3)
def stance(T, *args, **kwargs):
    """``set_stance`` with bad arguments, the default stance put back after: torch stores
    ``skip_guard_eval_unsafe="x"`` and every later torch.compile call in the process raised."""
    try:
        return T.compiler.set_stance(*args, **kwargs)
    finally:
        T.compiler.set_stance("default")


C["compiler_set_stance_kw_bad"] = lambda T: stance(T, "default", skip_guard_eval_unsafe="x")
C["compiler_set_stance_fallback_bad"] = lambda T: stance(T, "fail_on_recompile", force_backend="eager")
C["compiler_cudagraph_mark_step_arg"] = lambda T: T.compiler.cudagraph_mark_step_begin(3)
C["dynamo_config_patch_bad"] = lambda T: enter(T._dynamo.config.patch(no_such=1))
C["dynamo_config_patch_type"] = lambda T: enter(T._dynamo.config.patch(cache_size_limit="x"))
C["dynamo_graph_break_args"] = lambda T: T._dynamo.graph_break(3)

# Mismatches found this round, left for a later fix (see the module docstring).
LEFT = {
    "save_on_cpu_bad": "save_on_cpu(device_type=3): torch TypeError, tracegrad accepts",
    "cc_backend_int": "compile(backend=3): tracegrad refuses at once (kept by an earlier round), torch accepts",
    "dyn_explain_notcallable": "_dynamo.explain(3)(): torch AssertionError, tracegrad TypeError",
    "dyn_run_notcallable": "_dynamo.run(3): torch AssertionError, tracegrad accepts",
    "compiler_assume_constant_result_bad": "assume_constant_result(3): torch AttributeError, tracegrad TypeError",
    "compiler_substitute_in_graph_bad": "compiler.substitute_in_graph is missing in tracegrad",
    "dynamo_config_patch_type": "config.patch(cache_size_limit='x'): torch accepts, tracegrad ValueError",
}
MATCHED = {k: v for k, v in C.items() if k not in LEFT}
test_same_class_as_torch, test_message_gist = table_tests(MATCHED, {
    "fn_backward_2": "incorrect number of gradients",
    "fn_save_int": "save_for_backward can only save variables",
    "fn_dirty_not_returned": "marked as dirty",
    "hook_leaf_nograd": "doesn't require gradient",
    "retain_grad_int": "can't retain_grad",
    "backward_twice": "backward through the graph a second time",
    "inplace_leaf": "leaf Variable that requires grad",
    "unbind_inplace": "returns multiple views",
    "view_created_nograd_inplace": "created in no_grad mode",
    "ck_context_fn_reentrant": "only supported when use_reentrant=False",
    "ck_determinism_bad": "determinism_check",
    "mgh_mode_bad": "Expects mode to be one of",
    "sth_pack_inplace": "pack hook is modifying its input in place",
}, torch, tracegrad)


@pytest.mark.parametrize("name", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=r))
                                  for k, r in LEFT.items()])
def test_left_mismatch(name):
    assert_same_class(name, C[name], torch, tracegrad)
