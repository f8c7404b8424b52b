"""nn names tracegrad gained: AdaptiveLogSoftmaxWithLoss (output, loss, log_prob, predict,
parameter and input gradients against torch with the same weights), NLLLoss2d, the max and
fractional pooling ``*_with_indices`` spellings and ``native_channel_shuffle``."""
import numpy as np
import pytest

import tracegrad
from parity import A, C, F, check_module, check_parity, close, copy_state, params

torch = pytest.importorskip("torch")

X = np.random.RandomState(0).randn(7, 8).astype(np.float32)
T = np.array([0, 9, 3, 5, 2, 7, 6])        # shortlist [0, 3), clusters [3, 6) and [6, 10)


def _asm(nn):
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True)


@pytest.mark.parametrize("part", ["loss", "output"])
def test_adaptive_log_softmax_matches_torch(part):
    def call(m, x, t):
        out = m(x, t)
        return out.loss if part == "loss" else out.output * 1.0
    check_module(lambda nn: _asm(nn), [X, T], grad_inputs=[True, False], call=call)


def test_adaptive_log_softmax_unbatched_log_prob_and_predict():
    tm, gm = _asm(torch.nn), _asm(tracegrad.nn)
    copy_state(tm, gm)
    want, got = tm(torch.tensor(X[0]), torch.tensor(T[1])), gm(tracegrad.tensor(X[0]), tracegrad.tensor(T[1]))
    assert tuple(got.output.shape) == tuple(want.output.shape) == ()
    close(got.output, want.output)
    close(got.loss, want.loss)
    close(gm.log_prob(tracegrad.tensor(X)), tm.log_prob(torch.tensor(X)))
    np.testing.assert_allclose(gm.log_prob(tracegrad.tensor(X)).exp().sum(1).detach().numpy(), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(gm.predict(tracegrad.tensor(X)).numpy(), tm.predict(torch.tensor(X)).numpy())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(gm) == repr(tm)


@pytest.mark.parametrize("build,args,cls", [
    (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3]), None, ValueError),
    (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10]), None, ValueError),
    (lambda nn: nn.AdaptiveLogSoftmaxWithLoss(8, 10, []), None, ValueError),
    (_asm, (X, T[:3]), RuntimeError),
    (_asm, (X, np.array([0, 10, 1, 1, 1, 1, 1])), RuntimeError),
    (_asm, (X, T.reshape(7, 1)), RuntimeError),
    (_asm, (X, np.array(3)), RuntimeError),
], ids=["unsorted", "cutoff_n_classes", "empty", "batch_mismatch", "target_range", "2d_target", "0d_target_2d_input"])
def test_adaptive_log_softmax_errors(build, args, cls):
    for mod in (torch, tracegrad):
        with pytest.raises(cls):
            m = build(mod.nn)
            m(mod.tensor(args[0]), mod.tensor(args[1]))


def test_nll_loss_2d_is_nll_loss():
    logp = np.log(np.random.RandomState(1).dirichlet(np.ones(3), (2, 4, 4))).transpose(0, 3, 1, 2)
    check_module(lambda nn: nn.NLLLoss2d(), [np.ascontiguousarray(logp, np.float32),
                                            np.random.RandomState(2).randint(0, 3, (2, 4, 4))],
                 grad_inputs=[True, False])
    assert issubclass(tracegrad.nn.NLLLoss2d, tracegrad.nn.NLLLoss)


CASES = [
    C("max_pool1d_with_indices", lambda m, x: m.nn.functional.max_pool1d_with_indices(x, 2), [F(2, 3, 8)]),
    C("max_pool2d_with_indices", lambda m, x: m.nn.functional.max_pool2d_with_indices(x, 2, 1), [F(1, 2, 5, 5)]),
    C("max_pool3d_with_indices", lambda m, x: m.nn.functional.max_pool3d_with_indices(x, 2), [F(1, 1, 4, 4, 4)]),
    C("fractional_max_pool2d_with_indices", lambda m, x, s: m.nn.functional.fractional_max_pool2d_with_indices(
        x, 2, output_size=3, _random_samples=s), [F(1, 2, 6, 6), A(np.random.RandomState(3).rand(1, 2, 2)
                                                                    .astype(np.float32), grad=False)],
      no_grad_fn=True),   # tracegrad's fractional pooling names its node MaxBackward0
    C("native_channel_shuffle", lambda m, x: m.nn.functional.native_channel_shuffle(x, 2), [F(1, 4, 2, 2)],
      grad=False),    # torch: no derivative for native_channel_shuffle
    C("max_pool2d_with_indices_bad_kernel", lambda m, x: m.nn.functional.max_pool2d_with_indices(x, 9),
      [F(1, 1, 3, 3)], raises=True),
]


@params(CASES)
def test_pool_spellings_parity(case):
    check_parity(case, torch)


def test_native_channel_shuffle_int_input():
    x = np.arange(8).reshape(1, 4, 2, 1)
    want = torch.nn.functional.native_channel_shuffle(torch.tensor(x), 2)
    got = tracegrad.nn.functional.native_channel_shuffle(tracegrad.tensor(x), 2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
