"""More ports of PyTorch's activation-checkpointing tests (see test_checkpoint_ported.py for
the sources and what is skipped): nested reentrant checkpoints, side effects re-run by the
recomputation, test/test_autograd.py ``TestSelectiveActivationCheckpoint``, and checkpointed
training steps under ``tracegrad.compile`` compared with eager
(tests/compile/_harness.py ``check_compiled``) and with torch. Bodies with a ``T`` argument
run under torch and tracegrad."""
import functools
import warnings

import numpy as np
import pytest

from _checkpoint_helpers import _close, _gap, _op, _rand
from tests.compile._harness import check_compiled, data, np_init


@pytest.mark.parametrize("outer,inner", [(True, True), (True, False), (False, True)])
def test_nested_checkpoint_reentrant_variants(T, outer, inner):
    # TestNestedCheckpoint.test_nested_checkpoint_two_children with the reentrant variant
    # on either level (torch's tests nest only use_reentrant=False): plain gradients
    def f(x):
        return x.sin().exp().sin()

    def g(x):
        return x.cos().sin().exp()

    ck = T.utils.checkpoint

    def hc(x):
        h = ck.checkpoint(f, x, use_reentrant=inner)
        return ck.checkpoint(g, h, use_reentrant=inner)

    a = _rand(T, 21, 3, 3, rg=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = ck.checkpoint(hc, a, use_reentrant=outer)
    # a reentrant outer forward runs under no_grad: a reentrant inner one sees no input
    # requiring grad and warns (its recomputation, under enable_grad, does not)
    assert [str(m.message) for m in w] == (["None of the inputs have requires_grad=True. Gradients will be None"]
                                           if outer and inner else [])
    out.sum().backward()
    got, a.grad = a.grad, None
    g(f(a)).sum().backward()
    _close(got, a.grad)


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("early_stop", [True, False])
@pytest.mark.parametrize("tail", [False, True])
def test_checkpoint_reruns_buffer_updates(T, use_reentrant, early_stop, tail, request):
    # torch.utils.checkpoint docs ("the forward runs twice"): a BatchNorm in training mode
    # inside the checkpoint updates its running stats in the forward and again in the
    # recomputation, whether it is the region's last op or not, with or without early stop
    # (with early stop and batch_norm as the region's last saving op, the recomputation ends
    # inside that op's save: batch_norm still updates the stats, as torch's kernel has by then)
    bn = T.nn.BatchNorm1d(3)
    x = T.tensor(np.arange(12, dtype="float32").reshape(4, 3), requires_grad=True)
    with T.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        out = T.utils.checkpoint.checkpoint(lambda v: bn(v).sin() if tail else bn(v), x,
                                            use_reentrant=use_reentrant)
    assert int(bn.num_batches_tracked) == 1
    out.sum().backward()
    assert int(bn.num_batches_tracked) == 2
    _close(bn.running_mean, 0.19 * T.tensor([4.5, 5.5, 6.5]))
    _close(bn.running_var, 0.81 + 0.19 * T.full((3,), 15.0))   # unbiased batch variance 15


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_input_modified_in_place_before_backward(T, use_reentrant):
    # both variants keep the checkpoint's tensor inputs as saved tensors: changing one in
    # place between forward and backward is autograd's version-counter error
    x = T.ones(3, requires_grad=True)
    x2 = x * 1
    out = T.utils.checkpoint.checkpoint(lambda v: v.sin(), x2, use_reentrant=use_reentrant)
    with T.no_grad():
        x2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ---- TestSelectiveActivationCheckpoint (test/test_autograd.py) --------------------------------
def _sac(T, policy, **kw):
    ck = T.utils.checkpoint
    return functools.partial(ck.create_selective_checkpoint_contexts, policy, **kw)


def test_sac_bad_inputs(T):
    # TestSelectiveActivationCheckpoint.test_bad_inputs (torch's OpOverloadPacket case is
    # torch-only): a non-op in the list is a ValueError, neither list nor callable a TypeError
    ck = T.utils.checkpoint
    with pytest.raises(ValueError, match="Expected op in `op_list` to be an"):
        ck.create_selective_checkpoint_contexts([2])
    with pytest.raises(TypeError, match="either a function or a list of ops."):
        ck.create_selective_checkpoint_contexts(2)


def test_sac_output_already_has_autograd_meta(T):
    # TestSelectiveActivationCheckpoint.test_output_already_has_autograd_meta: a view of an
    # integer tensor (kept by the policy) next to a differentiable output
    def fn(x, y):
        return x.view(-1), y.sin().cos()

    x = T.tensor([1, 2, 3])
    y = _rand(T, 16, 3, rg=True)
    out = T.utils.checkpoint.checkpoint(fn, x, y, use_reentrant=False,
                                        context_fn=_sac(T, [_op(T, "view")]))
    out[1].sum().backward()
    assert out[0].tolist() == [1, 2, 3]
    _close(y.grad, -y.sin().sin() * y.cos())


def test_sac_policy_with_state(T, request):
    # TestSelectiveActivationCheckpoint.test_policy_with_state: a stateful policy keeps its
    # state across calls. Newer torch also asks it in the recomputation (is_recompute=True,
    # counting from 1 again); torch 2.13 asks once per op of the forward only
    _gap(T, request, "tracegrad asks a selective-checkpoint policy about each op whose output is "
         "saved for backward (here the first two sins), torch about each op the forward runs "
         "(three sins): tracegrad has no per-op dispatch hook to ask from")
    calls = []

    class Policy:
        def __init__(self):
            self.n = {False: 0, True: 0}

        def __call__(self, ctx, op, *args, **kwargs):
            self.n[ctx.is_recompute] += 1
            calls.append(self.n[ctx.is_recompute])
            return T.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE

    x = _rand(T, 17, 3, rg=True)
    out = T.utils.checkpoint.checkpoint(lambda v: v.sin().sin().sin(), x, use_reentrant=False,
                                        context_fn=_sac(T, Policy(), allow_cache_entry_mutation=True))
    out.sum().backward()
    assert calls == [1, 2, 3]


def test_sac_version_counter(T, request):
    # TestSelectiveActivationCheckpoint.test_version_counter: a kept output changed in place
    # later in the region raises at backward unless allow_cache_entry_mutation
    _gap(T, request, "tracegrad decides what to keep per saved tensor by the op that last wrote "
         "it (its grad_fn): sin's output changed in place by mul_ is seen as mul's and not kept, "
         "so the mutation is not reported; torch caches each op's output when the op runs")
    sin = _op(T, "sin")
    ck = T.utils.checkpoint

    def policy(ctx, op, *args, **kwargs):
        return ck.CheckpointPolicy.MUST_SAVE if op == sin else ck.CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        return x.sin().mul_(2).cos().exp()

    x = _rand(T, 18, 3, rg=True)
    out = ck.checkpoint(fn, x, use_reentrant=False, context_fn=_sac(T, policy))
    with pytest.raises(RuntimeError, match="has been mutated"):
        out.sum().backward()
    out = ck.checkpoint(fn, x, use_reentrant=False, context_fn=_sac(T, policy, allow_cache_entry_mutation=True))
    out.sum().backward()


def test_sac_function_with_more_than_one_output(T):
    # TestSelectiveActivationCheckpoint.test_function_with_more_than_one_output: var_mean's
    # two outputs kept by the policy, which is asked once for the op (torch 2.13; newer torch
    # asks again in the recomputation); the gradient equals the plain one
    var_mean = _op(T, "var_mean", "correction")
    counter = [0]
    ck = T.utils.checkpoint

    def policy(ctx, op, *args, **kwargs):
        if op == var_mean:
            counter[0] += 1
            return ck.CheckpointPolicy.MUST_SAVE
        return ck.CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        a, b = T.var_mean(x)
        return a * b

    x = _rand(T, 19, 3, rg=True)
    out = ck.checkpoint(fn, x, use_reentrant=False, context_fn=_sac(T, policy))
    (got,) = T.autograd.grad(out.sum(), (x,))
    (want,) = T.autograd.grad(fn(x).sum(), (x,))
    _close(got, want)
    assert counter[0] == 1


def test_sac_can_only_trigger_recompute_once(T):
    # TestSelectiveActivationCheckpoint.test_can_only_trigger_recompute_once: a second
    # backward (retain_graph) through a region whose outputs the policy kept raises
    ck = T.utils.checkpoint
    sin = _op(T, "sin")

    def policy(ctx, op, *args, **kwargs):
        return ck.CheckpointPolicy.MUST_SAVE if op == sin else ck.CheckpointPolicy.PREFER_RECOMPUTE

    x = _rand(T, 20, 3, rg=True)
    out = ck.checkpoint(lambda v: v.sin().cos().exp(), x, use_reentrant=False, context_fn=_sac(T, policy))
    out.sum().backward(retain_graph=True)
    _close(x.grad, -x.sin().cos().exp() * x.sin().sin() * x.cos())
    with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
        out.sum().backward(retain_graph=True)


# ---- checkpointed training steps under tracegrad.compile --------------------------------------
def _ckpt_program(use_reentrant, nested=False, dropout=False, selective=False, autocast=False):
    """A small MLP training step whose hidden blocks run under checkpoint, with a keyword
    argument and a non-tensor output; optionally nested, with a dropout inside, selective,
    or its forward under CPU autocast (bfloat16)."""
    def make(mod, wrap):
        ck = mod.utils.checkpoint
        blocks = mod.nn.ModuleList([mod.nn.Sequential(mod.nn.Linear(6, 6), mod.nn.Tanh())
                                    for _ in range(3)])
        if dropout:
            blocks.append(mod.nn.Dropout(0.3))
        head = mod.nn.Linear(6, 2)
        model = mod.nn.ModuleDict({"blocks": blocks, "head": head})
        np_init(model, mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        kw = {}
        if selective:
            kw["context_fn"] = functools.partial(ck.create_selective_checkpoint_contexts,
                                                 [_op(mod, "mm"), _op(mod, "addmm")])

        def block(h, scale=1.0):
            for b in blocks:
                h = b(h)
            return h * scale, "tag"

        def region(h, scale):
            if nested:
                h = ck.checkpoint(lambda v: block(v, scale=scale)[0], h, use_reentrant=use_reentrant)
                return ck.checkpoint(lambda v: (v.sin(), "tag"), h, use_reentrant=use_reentrant)
            if use_reentrant:
                return ck.checkpoint(block, h, scale, use_reentrant=True)
            return ck.checkpoint(block, h, use_reentrant=False, scale=scale, **kw)

        def step(x, y):
            opt.zero_grad()
            with mod.autocast("cpu", dtype=mod.bfloat16, enabled=autocast):
                h, tag = region(x, 0.5)
            assert h.dtype == (mod.bfloat16 if autocast else mod.float32)
            assert tag == "tag"
            loss = mod.nn.functional.mse_loss(head(h.float()), y)
            loss.backward()
            opt.step()
            return loss

        return wrap(step), {"model": model, "opt": opt}, lambda i: (
            data(mod, i, 4, 6).requires_grad_(), data(mod, i, 4, 2, seed=300))
    return make


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("variant", ["plain", "nested"])
def test_compiled_checkpointed_step_matches_eager_and_torch(use_reentrant, variant):
    # the compiled step equals tracegrad eager and torch eager: params, grads, optimizer state
    pytest.importorskip("torch")
    comp = check_compiled(_ckpt_program(use_reentrant, nested=variant == "nested"), torch_too=True)
    assert comp.step.stats["graph_breaks"] == []


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_compiled_checkpointed_step_with_dropout_matches_eager(use_reentrant):
    # TestCheckpoint.test_checkpoint_rng_cpu inside a compiled step: the recomputation
    # reproduces the forward's dropout mask there too (the generator differs from torch's,
    # so compared with tracegrad eager only)
    comp = check_compiled(_ckpt_program(use_reentrant, dropout=True))
    assert comp.step.stats["graph_breaks"] == []


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_compiled_checkpointed_step_under_autocast_matches_eager(use_reentrant):
    # TestAutograd.test_checkpointing_non_reentrant_autocast_cpu inside a compiled step: the
    # forward runs under CPU autocast, the backward outside it; the recomputation must use
    # bfloat16 again (a float32 recomputation is a CheckpointError without reentrant). XLA
    # fuses and rounds bfloat16 differently from eager: compared with eager to a bfloat16 ulp
    comp = check_compiled(_ckpt_program(use_reentrant, autocast=True), rtol=2e-2, atol=1e-3)
    assert comp.step.stats["graph_breaks"] == []


def test_compiled_selective_checkpoint_step_matches_eager_and_torch():
    # TestSelectiveActivationCheckpoint (op list) inside a compiled step
    pytest.importorskip("torch")
    comp = check_compiled(_ckpt_program(False, selective=True), torch_too=True)
    assert comp.step.stats["graph_breaks"] == []
