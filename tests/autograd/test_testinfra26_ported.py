"""PyTorch's test/test_autograd.py, cases of TestAutograd and of its other CPU classes
(TestAutogradForwardMode, TestAutogradInferenceMode, TestMultithreadAutograd, ...) that earlier
rounds left failing, ported as programs run with torch 2.13 (the oracle) and with tracegrad,
whose logs must be equal.

What they cover: forward-grad mode (``torch._C._set_fwd_grad_enabled``,
``forward_ad._is_fwd_grad_enabled``, ``forward_ad._set_fwd_grad_enabled``): while it is off an
open dual level propagates nothing and ``unpack_dual`` sees no tangent, while ``make_dual``
still attaches one. Each test names its original in a comment. Tiny shapes."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

from test_testinfra23_ported import _both, _r  # noqa: E402  (the shared torch-vs-tracegrad log helpers)


def _outcome(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return type(e).__name__
    return "ok"


# TestAutogradForwardMode.test_fwd_grad_enabled / test_set_fwd_grad_enabled
def test_fwd_grad_mode_pauses_tangents():
    def program(T):
        fwAD = T.autograd.forward_ad
        log = [fwAD._is_fwd_grad_enabled(), T._C._is_fwd_grad_enabled()]
        try:
            with fwAD.dual_level():
                x = fwAD.make_dual(T.tensor([1.0, 2.0]), T.tensor([1.0, 1.0]))
                T._C._set_fwd_grad_enabled(False)
                log.append(fwAD._is_fwd_grad_enabled())
                log.append(_r(fwAD.unpack_dual(x).tangent))      # hidden while off
                y = x * 3                                        # propagates nothing
                z = fwAD.make_dual(T.ones(2), T.full((2,), 5.0))  # still attached
                T._C._set_fwd_grad_enabled(True)
                log += [_r(fwAD.unpack_dual(x).tangent), _r(fwAD.unpack_dual(y).tangent),
                        _r(fwAD.unpack_dual(z).tangent), _r(fwAD.unpack_dual(x * z).tangent)]
                with fwAD._set_fwd_grad_enabled(False):
                    log += [fwAD._is_fwd_grad_enabled(), _r(fwAD.unpack_dual(x * 2).tangent)]
                log += [fwAD._is_fwd_grad_enabled(), _r(fwAD.unpack_dual(x * 2).tangent)]
            # a level entered while the mode is off opens paused
            T._C._set_fwd_grad_enabled(False)
            with fwAD.dual_level():
                w = fwAD.make_dual(T.ones(2), T.ones(2))
                log.append(_r(fwAD.unpack_dual(w.exp()).tangent))
                T._C._set_fwd_grad_enabled(True)
                log.append(_r(fwAD.unpack_dual(w * 4).tangent))
        finally:
            T._C._set_fwd_grad_enabled(True)
        log.append(_outcome(lambda: T._C._set_fwd_grad_enabled(1)))
        return log
    assert _both(program)[3] is None


# TestAllowMutationOnSaved.test_saved_same_tensor_many_times / _different_versions /
# test_saved_but_not_anymore / test_with_out_variant / test_save_base_and_modify_view
def test_allow_mutation_on_saved_counts_clones_as_torch():
    def program(T):
        import gc
        log = []
        ams = T.autograd.graph.allow_mutation_on_saved_tensors
        n = lambda ctx: len(list(ctx.cloned.items()))
        with ams() as ctx:
            leaf = T.tensor([0.5, 1.0, 2.0], requires_grad=True)
            a = leaf.clone()
            b = a ** 2
            c = a ** 2          # the same tensor at the same version: one handle
            log.append(len(list(ctx.tid_to_weakhandle.items())))
            a.sin_()            # sin_ saves a clone of a's old value, never counted
            log.append(n(ctx))
            del b, c
            gc.collect()
            log.append(n(ctx))
            b = a ** 2
            a.cos_()
            c = a ** 2
            a.exp_()
            log.append(n(ctx))  # two versions of a saved and written since
            del b
            gc.collect()
            log.append(n(ctx))
            log.append(_r(T.autograd.grad(c.sum(), leaf)[0]))   # through the saved old values
            del c
            gc.collect()
            log.append(n(ctx))
            # an out= write to a saved tensor
            x = T.tensor([1.0], requires_grad=True)
            y = T.tensor([1.0])
            out = x * y
            T.sin(T.tensor([2.0]), out=y)
            log.append(n(ctx))
            out.backward()
            log += [n(ctx), _r(x.grad)]
            # a write through a view of a saved base: CopySlices keeps nothing that counts
            p = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
            q = p.clone()
            v = q[:1]
            o = q ** 2
            v *= 10
            log.append(n(ctx))
            o.sum().backward()
            log += [n(ctx), _r(p.grad)]
        return log
    log = _both(program)
    assert log[1:3] == [1, 0]   # the handle a was saved under: counted once written, gone with b and c


# TestAutograd.test_gradcheck_adjusted_atol_complex_inputs draws its input with
# torch.rand(dtype=complex128): both parts are uniform draws
def test_rand_complex_fills_both_parts():
    def program(T):
        T.manual_seed(3)
        log = []
        for make in (lambda: T.rand(4000, dtype=T.complex128),
                     lambda: T.rand_like(T.zeros(4000, dtype=T.complex64)),
                     lambda: T.empty(4000, dtype=T.complex64).uniform_(2, 3)):
            z = make()
            re, im = z.real, z.imag
            lo = 2.0 if float(re.min()) >= 1 else 0.0
            log.append((str(z.dtype).split(".")[-1], bool((re >= lo).all()), bool((re < lo + 1).all()),
                        bool((im >= lo).all()), bool((im < lo + 1).all()),
                        abs(float(im.mean()) - (lo + 0.5)) < 0.05, float(im.std()) > 0.2))
        return log
    assert all(all(entry[1:]) for entry in _both(program))


# TestAutograd.test_gradcheck_adjusted_atol_complex_inputs (fast_mode=False, with the input
# torch's seed 97 draws): torch compares a complex input's Jacobian entries as complex numbers
def test_gradcheck_complex_input_entries_compared_in_modulus():
    z_parts = [[0.0006156674467756707, 0.0004301913813374936], [0.007709603902816519, 0.008219129866459042]]

    def program(T):
        z = T.view_as_complex(T.tensor(z_parts, dtype=T.float64)).requires_grad_()
        f = lambda z: 1.0 / T.norm(z)   # noqa: E731
        log = []
        for atol, rtol in ((8.3e-6, 1e-9), (2e-6, 1e-9)):
            log.append(T.autograd.gradcheck(f, (z,), atol=atol, rtol=rtol, raise_exception=False))
        return log
    assert _both(program) == [True, False]


# TestAutograd.test_autograd_print_tensor: a view made under no_grad (or inference_mode) whose
# storage was then written in place has no grad_fn torch can give (RuntimeError), also when its
# base is a leaf; its repr says grad_fn=<Invalid>
def test_no_grad_view_written_since_has_invalid_grad_fn():
    def program(T):
        log = []
        for nonleaf in (False, True):
            for mode, write_base in ((T.no_grad, False), (T.no_grad, True), (T.inference_mode, False)):
                a = T.ones(2, requires_grad=True)
                if nonleaf:
                    a = a.clone()
                with mode():
                    b = a[:1]
                    log.append(_outcome(lambda: b.grad_fn))
                    if write_base:
                        a.mul_(2)
                    else:
                        b.mul_(2)
                log += [_outcome(lambda: b.grad_fn), _outcome(lambda: b.is_leaf), repr(b)]
        return log
    log = _both(program)
    assert "tensor([2.], grad_fn=<Invalid>)" in log[:4]


# TestAutograd.test_view_replay_enabled: a view made with view replay on regenerates its grad_fn
# after an in-place write as its view op's node (AsStridedBackward0 with replay off)
def test_view_replay_names_regenerated_node():
    def program(T):
        x = T.ones(2, 2, requires_grad=True)
        log = []
        for replay in (False, True):
            with T.autograd._force_original_view_tracking(replay):
                log.append(T.autograd.is_view_replay_enabled())
                for make in (lambda c: c.view(-1), lambda c: c.t(), lambda c: c[0], lambda c: c.select(1, 1)):
                    out = make(x.clone())
                    out.add_(1)
                    log.append(type(out.grad_fn).__name__)
                    (out * T.arange(1.0, 1.0 + out.numel()).reshape(out.shape)).sum().backward()
                    log.append(_r(x.grad))
                    x.grad = None
            log.append(T.autograd.is_view_replay_enabled())
        return log
    assert "ViewBackward0" in _both(program)


# TestSelectiveActivationCheckpoint.test_bad_inputs / test_output_already_has_autograd_meta
def test_selective_checkpoint_op_list_checks_and_aten_methods():
    def program(T):
        import functools
        from importlib import import_module
        ckpt = import_module(T.__name__ + ".utils.checkpoint")
        make = ckpt.create_selective_checkpoint_contexts
        log = []
        for bad in ([2], [T.ops.aten.sin], 2):
            try:
                make(bad)
                log.append("ok")
            except (ValueError, TypeError) as e:
                log.append((type(e).__name__, "OpOverload" in str(e), "OpOverloadPacket" in str(e)))
        # an aten operator that is only a Tensor method in torch
        y = T.randn(3, requires_grad=True)
        x = T.tensor([1, 2, 3])

        def fn(x, y):
            return x.view(-1), y.sin().cos()
        out = ckpt.checkpoint(fn, x, y, use_reentrant=False,
                              context_fn=functools.partial(make, [T.ops.aten.view.default]))
        out[1].sum().backward()
        log.append(_r(T.ops.aten.view.default(T.arange(6.0), [2, 3])))
        log.append(y.grad is not None)
        return log
    assert _both(program)[0][1]
