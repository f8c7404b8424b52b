"""Ported from PyTorch's activation-checkpointing tests: test/test_utils.py ``TestCheckpoint``
and test/test_autograd.py (``TestAutograd`` checkpoint tests, ``TestNestedCheckpoint``,
``TestSelectiveActivationCheckpoint``). Each test names its original in a comment. Bodies run
under torch and tracegrad (the ``T`` fixture), so torch 2.13 checks every expectation.
test_checkpoint_ported_more.py holds the selective-checkpoint ports and the checks of
checkpointed training steps under ``tracegrad.compile``.

Already ported in tests/utils/test_checkpoint.py, so not repeated here: TestCheckpoint
test_checkpoint_valid, test_checkpoint_non_tensor, test_checkpoint_non_tensor_inputs_outputs,
test_checkpoint_no_tensors, test_checkpoint_partial_grad, test_checkpoint_sequential_deprecated_*
and the use_reentrant warnings; TestAutograd test_checkpointing_without_reentrant_correct_grad,
_arbitrary_input_output and _custom_function_works.

Skipped, and why:
  * test_checkpoint_rng_gpu, test_get_device_states_recursive,
    test_infer_device_state_recursive_multi_gpu, test_checkpoint_preserves_device_context,
    test_checkpointing_non_reentrant_autocast_gpu: need an accelerator or several devices.
  * test_checkpointing_without_reentrant_early_free, _memory_savings and
    TestSelectiveActivationCheckpoint.test_flops_and_mem: measure accelerator memory counters
    and FlopCounterMode.
  * test_infer_device_state_recursive_meta: private ``_infer_device_type`` on meta tensors.
  * test_checkpointing_without_reentrant_dataparallel: nn.DataParallel.
  * test_checkpointing_without_reentrant_with_context_fn: records ops with a TorchDispatchMode
    (what a plain context manager observes of ``context_fn`` is ported instead), and the
    dispatch-count half of test_nested_checkpoint_set_early_stop_no_recompution_needed.
  * TestSelectiveActivationCheckpoint.test_subclass_dispatching_sizes (a __torch_dispatch__
    tensor subclass), test_storage_lifetime (_CachingTorchDispatchMode internals),
    test_function_with_non_tensor_output (torch.library.custom_op), and the
    OpOverloadPacket case of test_bad_inputs (tracegrad names ops by strings).
"""
import collections
import contextlib
import copy
import gc
import warnings
import weakref

import pytest

from _checkpoint_helpers import _close, _np, _rand
from parity import torch_logger_restored


def _mlp(T, sizes=(6, 5, 4, 3)):
    T.manual_seed(0)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [T.nn.Linear(a, b), T.nn.ReLU()]
    return T.nn.Sequential(*layers)


# ---- TestCheckpoint (test/test_utils.py) ----------------------------------------------------
@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 4])
def test_checkpoint_sequential_matches_plain(T, use_reentrant, segments):
    # TestCheckpoint.test_checkpoint + test_checkpoint_module_list (_check_checkpoint_sequential):
    # nn.Sequential, a list of its children and an nn.ModuleList held by another module give
    # the plain model's output, input grad and parameter grads, for any number of segments
    class ModuleListNet(T.nn.Module):
        def __init__(self, seq):
            super().__init__()
            self.module_list = T.nn.ModuleList(list(seq.children()))

        def forward(self, x):
            for layer in self.module_list:
                x = layer(x)
            return x

    model = ModuleListNet(_mlp(T))
    x = _rand(T, 1, 2, 6, rg=True)
    out = model(x)
    out.sum().backward()
    ref = [out.detach().clone(), x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
    for form in (model.module_list, list(model.module_list.children()),
                 T.nn.Sequential(*model.module_list)):
        model.zero_grad()
        xd = x.detach()
        xd.requires_grad = True
        out = T.utils.checkpoint.checkpoint_sequential(form, segments, xd, use_reentrant=use_reentrant)
        out.sum().backward()
        got = [out, xd.grad] + [p.grad for p in model.parameters()]
        for a, b in zip(got, ref):
            _close(a, b)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_trigger_uneven_segments(T, use_reentrant):
    # TestCheckpoint.test_checkpoint_trigger with 10 modules in 3 segments: two checkpointed
    # chunks of 3 (each module runs twice), the remaining 4 run once
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.counter = 0

        def forward(self, x):
            self.counter += 1
            return x * T.tensor(2.0)

    modules = [Net() for _ in range(10)]
    x = _rand(T, 2, 3, 4, rg=True)
    out = T.utils.checkpoint.checkpoint_sequential(modules, 3, x, use_reentrant=use_reentrant)
    assert [m.counter for m in modules] == [1] * 10
    out.sum().backward()
    assert [m.counter for m in modules] == [2] * 6 + [1] * 4
    _close(x.grad, T.full((3, 4), 1024.0))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_rng_cpu(T, use_reentrant):
    # TestCheckpoint.test_checkpoint_rng_cpu: a dropout inside the checkpoint, after one
    # outside it; restoring the generator state and running without checkpoint gives the same
    # input gradient (the recomputation reproduces the forward's mask)
    for _ in range(3):
        inp = _rand(T, 3, 400, rg=True)
        phase1, phase2 = T.nn.Dropout(), T.nn.Dropout()
        state = T.get_rng_state()
        out = T.utils.checkpoint.checkpoint(phase2, phase1(inp), use_reentrant=use_reentrant)
        out.sum().backward()
        with_ckpt, inp.grad = inp.grad, None
        T.set_rng_state(state)
        phase2(phase1(inp)).sum().backward()
        _close(with_ckpt, inp.grad)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_not_preserve_rng_state(T, use_reentrant):
    # TestCheckpoint.test_checkpoint_not_preserve_rng_state_and_without_reentrant (on CPU):
    # preserve_rng_state=False runs; the recomputation draws a fresh dropout mask, so the
    # gradient's mask is not the forward's (400 draws: equal with probability 2**-400)
    x = _rand(T, 4, 400).abs().add(0.5).requires_grad_()
    layer = T.nn.Dropout()
    out = T.utils.checkpoint.checkpoint(layer, x, use_reentrant=use_reentrant, preserve_rng_state=False)
    out.sum().backward()
    fwd_mask, grad_mask = _np(out) != 0, _np(x.grad) != 0
    assert (fwd_mask != grad_mask).any()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_rng(T, use_reentrant):
    # TestCheckpoint.test_checkpoint_rng_cpu through checkpoint_sequential: dropouts in the
    # checkpointed segments; with the generator state restored, the plain run gives the same
    # output and input gradient; preserve_rng_state is passed through as a keyword
    model = T.nn.Sequential(T.nn.Linear(8, 8), T.nn.Dropout(), T.nn.Tanh(), T.nn.Dropout(), T.nn.Linear(8, 2))
    x = _rand(T, 30, 16, 8, rg=True)
    state = T.get_rng_state()
    out = T.utils.checkpoint.checkpoint_sequential(model, 2, x, use_reentrant=use_reentrant,
                                                   preserve_rng_state=True)
    out.sum().backward()
    got, x.grad = x.grad, None
    T.set_rng_state(state)
    ref = model(x)
    ref.sum().backward()
    _close(out, ref)
    _close(got, x.grad)


# ---- TestAutograd checkpoint tests (test/test_autograd.py) ------------------------------------
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_identity_function(T, use_reentrant):
    # the identity function of TestAutograd.test_checkpoint_warns_if_use_reentrant_not_passed_
    # explcitly: no warning when use_reentrant is passed; the non-reentrant checkpoint returns
    # the input itself, the reentrant one a new output of CheckpointFunctionBackward
    a = T.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = T.utils.checkpoint.checkpoint(lambda v: v, a, use_reentrant=use_reentrant)
    assert w == []
    assert (out is a) == (not use_reentrant)
    assert (type(out.grad_fn).__name__ if out.grad_fn else None) == (
        "CheckpointFunctionBackward" if use_reentrant else None)
    (out * 2).sum().backward()
    _close(a.grad, T.full((3,), 2.0))
def test_checkpointing_reentrant_many_inputs(T):
    # TestAutograd.test_checkpointing (scaled down): one module checkpointed once per input,
    # outputs stacked and reduced; the gradients equal an un-checkpointed copy's
    module = T.nn.Sequential(T.nn.Linear(4, 16), T.nn.ReLU(), T.nn.Linear(16, 4))
    plain = copy.deepcopy(module)
    feats, feats_plain = [], []
    for i in range(6):
        d = _rand(T, 10 + i, 1, 4).uniform_().requires_grad_()
        feats.append(T.utils.checkpoint.checkpoint(module, d, use_reentrant=True))
        feats_plain.append(plain(d))
    T.stack(feats).mean().backward()
    T.stack(feats_plain).mean().backward()
    for p, q in zip(module.parameters(), plain.parameters()):
        _close(p.grad, q.grad)


@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_checkpointing_without_reentrant_kwargs_input(T, input_requires_grad):
    # TestAutograd.test_checkpointing_without_reentrant (scaled down): the module takes its
    # input as a keyword argument; parameter grads equal the plain copy's whether or not the
    # input requires grad
    class MyModule(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = T.nn.Sequential(T.nn.Linear(4, 16), T.nn.ReLU(), T.nn.Linear(16, 4))

        def forward(self, data):
            return self.module(data)

    module = MyModule()
    plain = copy.deepcopy(module)
    feats, feats_plain = [], []
    for i in range(6):
        d = _rand(T, 20 + i, 1, 4)
        d.requires_grad = input_requires_grad
        feats.append(T.utils.checkpoint.checkpoint(module, data=d, use_reentrant=False))
        feats_plain.append(plain(d.clone()))
    T.stack(feats).mean().backward()
    T.stack(feats_plain).mean().backward()
    for p, q in zip(module.parameters(), plain.parameters()):
        _close(p.grad, q.grad)


def test_checkpoint_valid_reset_on_error(T):
    # TestAutograd.test_checkpoint_valid_reset_on_error: after autograd.grad refused a
    # reentrant checkpoint, a later backward through one works
    a = _rand(T, 5, 2, 2, rg=True)
    b = T.utils.checkpoint.checkpoint(T.exp, a, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match="torch.utils.checkpoint is incompatible"):
        T.autograd.grad(b, (a,))
    c = T.utils.checkpoint.checkpoint(T.exp, a, use_reentrant=True).sum()
    c.backward()
    _close(a.grad, a.exp())


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpointing_without_reentrant_detached_tensor(T, use_reentrant):
    # TestAutograd.test_checkpointing_without_reentrant_detached_tensor: the checkpointed
    # module runs under no_grad; the reentrant variant raises at backward, the non-reentrant
    # one gives the gradient of the part outside
    class NoGradModule(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = T.nn.Linear(2, 2, bias=False)
            self.lin2 = T.nn.Linear(2, 2, bias=False)

        def forward(self, x):
            with T.no_grad():
                return self.lin2(self.linear(x))

    module = NoGradModule()
    a = _rand(T, 6, 2, 2, rg=True)
    for _ in range(3):
        out = T.utils.checkpoint.checkpoint(module, a, use_reentrant=use_reentrant)
        out += a
        if use_reentrant:
            with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
                out.sum().backward()
        else:
            out.sum().backward()
    if not use_reentrant:
        _close(a.grad, T.full((2, 2), 3.0))


def test_checkpointing_without_reentrant_saved_object_identity(T):
    # TestAutograd.test_checkpointing_without_reentrant_saved_object_identity: a saved input
    # that does not require grad comes back as the very same object, with and without checkpoint
    seen = []

    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.saved_tensors[0])
            return g, None

    a = T.tensor(1.0, requires_grad=True)
    b = T.tensor(1.0)
    Fn.apply(a, b).backward()
    T.utils.checkpoint.checkpoint(Fn.apply, a, b, use_reentrant=False).backward()
    assert seen[0] is b and seen[1] is b


def test_checkpointing_without_reentrant_parameter_used_in_an_out(T):
    # TestAutograd.test_checkpointing_without_reentrant_parameter_used_in_an_out: a tensor
    # hook on a parameter used both outside and inside the checkpoint fires once
    w = _rand(T, 7, 4, 4, rg=True)
    count = [0]
    w.register_hook(lambda g: count.__setitem__(0, count[0] + 1))
    x = _rand(T, 8, 4, 4, rg=True)
    h = w * x
    out = T.utils.checkpoint.checkpoint(lambda v: w * v, h, use_reentrant=False)
    out.sum().backward()
    assert count[0] == 1
    _close(w.grad, 2 * w * x)
    _close(x.grad, w * w)


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("enabled", [True, False])
def test_checkpointing_non_reentrant_autocast_cpu(T, enabled, use_reentrant):
    # TestAutograd.test_checkpointing_non_reentrant_autocast_cpu (+ the reentrant variant,
    # which torch's CheckpointFunction handles the same way): the recomputation runs under
    # the forward's autocast state (mm in bfloat16), whatever the state at backward (early
    # stop off, so the recomputation reaches the dtype record at the end)
    dtypes = []

    def foo(x, y, z):
        x = T.mm(x, y)
        y = T.mm(x, z)
        z = T.mm(z, z)
        dtypes.append(z.dtype)
        return z

    x, y, z = (_rand(T, 9 + i, 3, 3, rg=True) for i in range(3))
    with T.autocast(device_type="cpu", dtype=T.bfloat16, enabled=enabled):
        loss = T.utils.checkpoint.checkpoint(foo, x, y, z, use_reentrant=use_reentrant, early_stop=False).sum()
    loss.backward()
    want = T.bfloat16 if enabled else T.float32
    assert dtypes == [want, want]
    assert z.grad.dtype == T.float32
    g_ckpt = z.grad.clone()
    z.grad = None
    with T.autocast(device_type="cpu", dtype=T.bfloat16, enabled=enabled):
        loss = foo(x, y, z).sum()
    loss.backward()
    _close(g_ckpt, z.grad)


def test_checkpointing_without_reentrant_context_fn_contexts(T):
    # TestAutograd.test_checkpointing_without_reentrant_with_context_fn, observed through
    # plain context managers instead of a TorchDispatchMode: the first context wraps the
    # forward, the second the recomputation in backward
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(name + " enter")
        try:
            yield
        finally:   # early stop ends the recomputation with an exception
            log.append(name + " exit")

    def body(v):
        log.append("run")
        return v.exp()

    x = T.tensor(1.0, requires_grad=True)
    out = T.utils.checkpoint.checkpoint(body, x, use_reentrant=False,
                                        context_fn=lambda: (tag("fwd"), tag("recompute")))
    assert log == ["fwd enter", "run", "fwd exit"]
    out.backward()
    assert log[3:] == ["recompute enter", "run", "recompute exit"]
    _close(x.grad, x.exp())


def test_checkpoint_context_fn_suppressing_forward_error(T):
    # torch.utils.checkpoint.checkpoint (use_reentrant=False): a forward context from
    # context_fn that swallows the function's exception leaves no value to return, which
    # checkpoint reports as a RuntimeError (torch's checkpoint raises it since 2.x)
    class Swallow:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True

    def boom(v):
        raise ValueError("inside")

    x = T.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="suppressed an exception raised during the checkpointed forward"):
        T.utils.checkpoint.checkpoint(boom, x, use_reentrant=False,
                                      context_fn=lambda: (Swallow(), contextlib.nullcontext()))
    with pytest.raises(ValueError, match="inside"):
        T.utils.checkpoint.checkpoint(boom, x, use_reentrant=False)


def test_checkpoint_graph_execution_group(T):
    # TestAutograd.test_checkpoint_graph_execution_group: under one GraphExecGroup, backward
    # calls over disjoint parts of a checkpointed graph recompute once in all; without it
    # each call recomputes. Overlapping calls under a group raise.
    ck = T.utils.checkpoint

    def run(use_group):
        counter = [0]

        def fn(x):
            counter[0] += 1
            y = x.sin().cos()
            return y, y.sin().cos()

        x = _rand(T, 12, 3, 3, rg=True)
        y, z = ck.checkpoint(fn, x, use_reentrant=False)
        with ck.GraphExecGroup() if use_group else contextlib.nullcontext():
            (gy,) = T.autograd.grad(z, inputs=(y,), grad_outputs=(T.ones(3, 3),))
            (gx,) = T.autograd.grad(y, inputs=(x,), grad_outputs=(gy,))
        assert counter[0] == (2 if use_group else 3)
        xd = x.detach().requires_grad_()
        (ref,) = T.autograd.grad(fn(xd)[1].sum(), xd)
        _close(gx, ref)

    run(True)
    run(False)
    out = ck.checkpoint(lambda v: v.sin().cos(), _rand(T, 13, 3, rg=True), use_reentrant=False)
    with ck.GraphExecGroup():
        out.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="Performing two backward calls that overlap"):
            out.sum().backward()
    with ck.GraphExecGroup():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with ck.GraphExecGroup():
                pass


def test_checkpoint_detects_non_determinism(T):
    # TestAutograd.test_checkpoint_detects_non_determinism: fewer / more / differently shaped
    # tensors saved by the recomputation raise CheckpointError (more only without early
    # stop); debug=True and set_checkpoint_debug_enabled change the message
    ck = T.utils.checkpoint

    def save_3(x):
        return x.sin().exp().sin()

    def save_2(x):
        return x.sin().exp()

    def save_2_alt(x):
        return x.sin() * T.tensor([1.0, 2.0])

    def changing(first, later):
        calls = [0]

        def fn(x):
            calls[0] += 1
            return first(x) if calls[0] == 1 else later(x)
        return fn

    a = T.tensor([0.3], requires_grad=True)
    with pytest.raises(ck.CheckpointError, match="A different number of tensors was saved"):
        ck.checkpoint(changing(save_3, save_2), a, use_reentrant=False).backward()
    with ck.set_checkpoint_early_stop(False):
        out = ck.checkpoint(changing(save_2, save_3), a, use_reentrant=False)
    with pytest.raises(ck.CheckpointError, match="trying to save more tensors during recomputation"):
        out.backward()
    a.grad = None
    ck.checkpoint(changing(save_2, save_3), a, use_reentrant=False).backward()   # early stop: fine
    _close(a.grad, a.cos() * a.sin().exp())
    with pytest.raises(ck.CheckpointError, match="tensors have different metadata"):
        ck.checkpoint(changing(save_2, save_2_alt), a, use_reentrant=False).sum().backward()
    debug_msg = "You are seeing this error because you passed `debug=True` to checkpoint"
    with torch_logger_restored(T), pytest.raises(ck.CheckpointError, match=debug_msg):
        ck.checkpoint(changing(save_2, save_2_alt), a, use_reentrant=False, debug=True).sum().backward()
    with torch_logger_restored(T), pytest.raises(ck.CheckpointError, match=debug_msg):
        with ck.set_checkpoint_debug_enabled(True):
            ck.checkpoint(changing(save_2, save_2_alt), a, use_reentrant=False, debug=False).sum().backward()
    with pytest.raises(ck.CheckpointError, match="Recomputed values for the following tensors have different") as e:
        with ck.set_checkpoint_debug_enabled(False):
            ck.checkpoint(changing(save_2, save_2_alt), a, use_reentrant=False, debug=True).sum().backward()
    assert debug_msg not in str(e.value)


def test_access_saved_tensor_twice_without_recomputation_works(T):
    # TestAutograd.test_access_saved_tensor_twice_without_recomputation_works: each access to
    # a saved tensor outside backward recomputes, backward recomputes once more, and after it
    # the saved tensor is freed
    count = [0]

    def foo(a):
        count[0] += 1
        b = a * a
        c = a * b  # noqa: F841  (saved tensors the recomputation also makes)
        return T.exp(a)

    a = _rand(T, 14, 5, rg=True)
    d = T.utils.checkpoint.checkpoint(foo, a, use_reentrant=False)
    assert count[0] == 1
    _close(d.grad_fn._saved_result, a.exp())
    assert count[0] == 2
    d.grad_fn._saved_result
    assert count[0] == 3
    d.sum().backward()
    assert count[0] == 4
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        d.grad_fn._saved_result


# ---- TestNestedCheckpoint (test/test_autograd.py) ---------------------------------------------
def _grad(T, fn):
    def wrapper(x):
        with T.enable_grad():
            (g,) = T.autograd.grad(fn(x), inputs=(x,), create_graph=True)
        return g
    return wrapper


def _sum(fn):
    return lambda x: fn(x).sum()


def _ckpt(T, fn):
    return lambda *a, **k: T.utils.checkpoint.checkpoint(fn, *a, use_reentrant=False, **k)


def _assert_graph_dies(T, fn):
    """TestNestedCheckpoint.check_graph_dies: every node of the graph ``fn`` builds is freed
    once its output goes away (no cycle through the checkpoint's saved-tensor hooks)."""
    class Handle:
        pass

    def scope():
        out = fn(T.tensor(0.7, requires_grad=True))
        refs, seen, queue = [], {out.grad_fn}, collections.deque([out.grad_fn])
        while queue:
            node = queue.popleft()
            h = Handle()
            refs.append(weakref.ref(h))
            node.metadata["handle"] = h
            for nxt, _ in node.next_functions:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return refs

    gc.disable()   # freed by reference counting alone: no reference cycle
    try:
        refs = scope()
        assert [r for r in refs if r() is not None] == []
    finally:
        gc.enable()


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint: a function, its grad, grad of grad and
    # third derivative equal the same wrapped in checkpoints in various ways, also when the
    # checkpointed function itself calls autograd.grad; every graph is freed after
    def f(x):
        return x.sin().exp().sin()

    def g(x):
        a = x.sin().exp().sin()
        b = x.sin().exp().sin()
        T.autograd.grad(a, x)
        T.autograd.grad(b, x)
        return x.sin()

    def grad(fn):
        return _grad(T, fn)

    def c(fn):
        return _ckpt(T, fn)

    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        x = T.tensor(0.4, requires_grad=True)
        for fn in (f, g):
            cases = (
                (fn, (c(fn), c(c(fn)))),
                (grad(fn), (grad(c(fn)), grad(c(c(fn))))),
                (grad(grad(fn)), (grad(c(grad(fn))), c(grad(grad(c(fn)))), grad(c(grad(c(fn)))))),
                (grad(grad(grad(fn))), (grad(c(grad(grad(c(fn))))), grad(c(grad(c(grad(c(fn)))))))),
            )
            for expected_fn, actual_fns in cases:
                expected = expected_fn(x)
                for actual_fn in actual_fns:
                    _close(actual_fn(x), expected)
                    _assert_graph_dies(T, actual_fn)


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint_two_children(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint_two_children: a checkpoint around two
    # sibling checkpoints, differentiated twice (also with a checkpoint between the grads)
    def grad(fn):
        return _grad(T, fn)

    def c(fn):
        return _ckpt(T, fn)

    def f(x):
        return x.sin().exp().sin()

    def g(x):
        return x.cos().sin().exp()

    def hc(x):
        return c(g)(c(f)(x))

    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        a = _rand(T, 15, 3, 3, rg=True)
        expected = grad(_sum(grad(_sum(lambda v: g(f(v))))))(a)
        _close(grad(_sum(grad(_sum(c(hc)))))(a), expected)
        _close(grad(_sum(c(grad(_sum(c(hc))))))(a), expected)
        _assert_graph_dies(T, grad(c(hc)))
        _assert_graph_dies(T, grad(_sum(grad(_sum(c(hc))))))
        _assert_graph_dies(T, grad(_sum(c(grad(_sum(c(hc)))))))


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint_non_tensor_inputs_and_outputs(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint_non_tensor_inputs_and_outputs: an int, a
    # function among the inputs, an int and a str among the outputs
    def fn(k, a, b, f):
        return f(k * a * b.exp()), 1, "abcd"

    a, b = T.tensor(2.0, requires_grad=True), T.tensor(0.3, requires_grad=True)
    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        out, one, s = T.utils.checkpoint.checkpoint(fn, 3, a, b, T.sin, use_reentrant=False)
    assert (one, s) == (1, "abcd")
    got = T.autograd.grad(out, (a, b))
    want = T.autograd.grad(fn(3, a, b, T.sin)[0], (a, b))
    for u, v in zip(got, want):
        _close(u, v)


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint_kwargs(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint_kwargs: a tensor keyword argument gets its
    # gradient
    def fn(a, blah=None):
        out = a.sin().exp()
        if blah is not None:
            out = out * blah
        return out.sin().exp()

    a, b = T.tensor(2.0, requires_grad=True), T.tensor(0.3, requires_grad=True)
    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        got = T.autograd.grad(T.utils.checkpoint.checkpoint(fn, a, blah=b, use_reentrant=False), (a, b))
        want = T.autograd.grad(fn(a, blah=b), (a, b))
    for u, v in zip(got, want):
        _close(u, v)


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint_same_graph(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint_same_graph: backward runs the forward's
    # graph (a hook on one of its nodes fires once), not the recomputed one
    counter = [0]
    a = T.tensor(1.0, requires_grad=True)
    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        out = T.utils.checkpoint.checkpoint(lambda v: v.sin().cos().sin(), a, use_reentrant=False)
    out.grad_fn.next_functions[0][0].register_hook(lambda *_: counter.__setitem__(0, counter[0] + 1))
    out.backward()
    assert counter[0] == 1
    _close(a.grad, a.sin().cos().cos() * -a.sin().sin() * a.cos())


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoint_reentrant_backwards(T, early_stop):
    # TestNestedCheckpoint.test_nested_checkpoint_reentrant_backwards: a node hook starts a
    # second backward from an intermediate output of the same checkpoint
    def fn(a):
        x = a.sin().cos()
        return x, x.sin()

    a = T.tensor(1.0, requires_grad=True)
    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        x, out = T.utils.checkpoint.checkpoint(fn, a, use_reentrant=False)
    out.grad_fn.register_hook(lambda *_: x.backward(retain_graph=True))
    out.backward(retain_graph=True)
    ad = a.detach().requires_grad_()
    xd, outd = fn(ad)
    (want,) = T.autograd.grad(xd + outd, ad)
    _close(a.grad, want)


def test_nested_checkpoint_set_early_stop(T):
    # TestNestedCheckpoint.test_nested_checkpoint_set_early_stop: a trailing op that saves
    # nothing is re-run only without early stop; set_checkpoint_early_stop (active when the
    # checkpoint is created) wins over the early_stop argument, innermost context first
    ck = T.utils.checkpoint
    counter = [0]

    def fn(x):
        y = x.sin().cos()
        counter[0] += 1
        return y.clone()

    def runs(ctx=None, **kw):
        counter[0] = 0
        a = T.tensor(1.0, requires_grad=True)
        with ctx if ctx is not None else contextlib.nullcontext():
            out = ck.checkpoint(fn, a, use_reentrant=False, **kw)
        out.backward()
        return counter[0]

    assert runs() == 1
    assert runs(early_stop=False) == 2
    assert runs(early_stop=True) == 1
    assert runs(ck.set_checkpoint_early_stop(False)) == 2
    assert runs(ck.set_checkpoint_early_stop(True)) == 1
    with ck.set_checkpoint_early_stop(False):
        assert runs(ck.set_checkpoint_early_stop(True), early_stop=False) == 1
    assert runs(ck.set_checkpoint_early_stop(False), early_stop=True) == 2
    assert runs(ck.set_checkpoint_early_stop(True), early_stop=False) == 1


def test_nested_checkpoint_set_early_stop_no_recomputation_needed(T):
    # TestNestedCheckpoint.test_nested_checkpoint_set_early_stop_no_recompution_needed (the
    # Python-level counts): a function that saves only its input is still re-run (once);
    # one that saves nothing is never re-run, with or without early stop
    ck = T.utils.checkpoint
    for body, want in ((lambda v: v.sin(), 2), (lambda v: v.clone(), 1)):
        for early in (True, False):
            counter = [0]

            def fn(x, body=body, counter=counter):
                counter[0] += 1
                return body(x)

            a = T.tensor(1.0, requires_grad=True)
            with ck.set_checkpoint_early_stop(early):
                out = ck.checkpoint(fn, a, use_reentrant=False)
            out.backward()
            assert counter[0] == want
