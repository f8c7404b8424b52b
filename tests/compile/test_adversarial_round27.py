"""Twenty-seventh round of adversarial compiled-vs-eager programs: ``nn.MultiheadAttention``
training steps with a ``key_padding_mask`` (bool and float) that changes per call,
gradient accumulation over micro-batches through one shared encoder output
(``retain_graph=True``), two optimizers stepping different parameter subsets (one of them on
alternate calls), a ``zero_grad`` that alternates between ``set_to_none`` and zeros while a
parameter is used on alternate calls only (Adam steps a zero gradient, skips a ``None``),
optimizer state tensors returned by the step and written by the caller, a compiled function
appending to and rebinding a global Python list of tensors, grad-mode contexts nested three
deep, an eval loop compiled under ``inference_mode`` outside alternating with training calls,
schedulers stepped outside for twenty calls with one trace, and ``Module.compile()`` on a
submodule of an eager model. torch eager, tracegrad eager and ``tracegrad.compile`` run each
program from the same state and must agree after every call (``_dynamo_port.compare``)."""
import numpy as np
import pytest

import tracegrad

from ._dynamo_port import compare, same
from ._dynamo_port import randn32 as _rand
from ._dynamo_port import seeded_linear as _linear

torch = pytest.importorskip("torch")


def _seed(T, module, seed=0, scale=0.3):
    """Every parameter of ``module`` drawn from numpy's ``seed`` (the same in torch and
    tracegrad); returns ``module``."""
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for _, p in sorted(module.named_parameters()):
            p.copy_(T.tensor(rs.randn(*p.shape).astype("float32") * scale))
    return module


@pytest.mark.parametrize("float_mask", [False, True])
def test_multihead_attention_with_a_key_padding_mask_that_changes_per_call(float_mask):
    """A batch-first ``MultiheadAttention`` training step (Adam) whose ``key_padding_mask``
    pads a different number of keys on every call (bool, or a float mask of ``-inf``/0), and
    returns the head-averaged attention weights: losses, weights and parameters as eager's."""
    def build(T, wrap):
        mha = _seed(T, T.nn.MultiheadAttention(4, 2, batch_first=True), seed=1)
        opt = T.optim.Adam(mha.parameters(), lr=0.02)

        def step(x, mask):
            opt.zero_grad()
            y, w = mha(x, x, x, key_padding_mask=mask)
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, w

        f = wrap(step)

        def run(i):
            pad = np.zeros((2, 5), dtype=bool)
            pad[0, 5 - (i % 4):] = True          # 0..3 padded keys in row 0
            pad[1, :1 + i % 2] = True            # 1 or 2 padded keys in row 1
            mask = T.tensor(pad)
            if float_mask:
                mask = T.zeros(2, 5).masked_fill(mask, float("-inf"))
            loss, w = f(_rand(T, i, 2, 5, 4), mask)
            return loss, w, mha.in_proj_weight, mha.out_proj.weight
        return run
    compare(build, calls=5)


def test_gradient_accumulation_over_micro_batches_through_one_encoder_output():
    """An encoder runs once; three micro-batch heads backward through its output with
    ``retain_graph=True`` (the last without), accumulating into the encoder's grads; then
    ``clip_grad_norm_`` and one SGD step: the accumulated grads, norm and weights as eager's."""
    def build(T, wrap):
        enc = T.nn.Sequential(_linear(T, 3, 4, seed=1), T.nn.Tanh())
        head = _linear(T, 4, 2, seed=2)
        params = list(enc.parameters()) + list(head.parameters())
        opt = T.optim.SGD(params, lr=0.1, momentum=0.5)

        def step(x, targets):
            opt.zero_grad()
            h = enc(x)
            losses = []
            for k, t in enumerate(targets):
                loss = (head(h[k::3]) - t).pow(2).mean() / len(targets)
                loss.backward(retain_graph=k < len(targets) - 1)
                losses.append(loss.detach())
            norm = T.nn.utils.clip_grad_norm_(params, 0.5)
            opt.step()
            return T.stack(losses), norm

        f = wrap(step)

        def run(i):
            ts = [_rand(T, 10 * i + k, 2, 2) for k in range(3)]
            out = f(_rand(T, i, 6, 3), ts)
            return out, enc[0].weight.grad, params
        return run
    compare(build, calls=4)


def test_two_optimizers_on_different_parameter_subsets_one_stepping_on_alternate_calls():
    """SGD with momentum on the body and Adam on the head in one step; the head's optimizer
    steps only when the Python flag is set (a second program), and its grads are kept
    accumulating while it does not: weights, grads and both states as eager's."""
    def build(T, wrap):
        body = _linear(T, 3, 4, seed=1)
        head = _linear(T, 4, 1, seed=2)
        o_body = T.optim.SGD(body.parameters(), lr=0.1, momentum=0.9)
        o_head = T.optim.Adam(head.parameters(), lr=0.05)

        def step(x, step_head):
            o_body.zero_grad()
            loss = head(body(x).relu()).pow(2).mean()
            loss.backward()
            o_body.step()
            if step_head:
                o_head.step()
                o_head.zero_grad()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3), i % 2 == 1)
            st = o_head.state.get(head.weight, {})
            return (loss, body.weight, head.weight, head.weight.grad,
                    o_body.state[body.weight]["momentum_buffer"], st.get("exp_avg"))
        return run
    compare(build, calls=6)


def test_zero_grad_alternating_set_to_none_with_a_parameter_used_on_alternate_calls():
    """``zero_grad(set_to_none=i % 2 == 0)`` while the second layer takes part in the loss on
    even calls only: on odd calls after a ``set_to_none=False`` its grad is zeros and Adam
    steps it (the moments decay and the weight keeps moving), after ``None`` Adam skips it."""
    def build(T, wrap):
        a, b = _linear(T, 3, 3, seed=1), _linear(T, 3, 3, seed=2)
        opt = T.optim.Adam(list(a.parameters()) + list(b.parameters()), lr=0.05)

        def step(x, use_b, to_none):
            opt.zero_grad(set_to_none=to_none)
            y = a(x)
            if use_b:
                y = b(y.tanh())
            loss = y.pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f = wrap(step)

        def run(i):
            loss = f(_rand(T, i, 2, 3), i % 2 == 0, (i // 2) % 2 == 0)
            st = opt.state.get(b.weight, {})
            return loss, b.weight, b.weight.grad, st.get("exp_avg"), a.weight
        return run
    compare(build, calls=8)
