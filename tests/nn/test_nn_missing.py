"""nn names tracegrad gained: AdaptiveLogSoftmaxWithLoss (output, loss, log_prob, predict,
parameter and input gradients against torch with the same weights), NLLLoss2d, the max and
fractional pooling ``*_with_indices`` spellings, ``native_channel_shuffle`` and the ATen
spellings ``grid_sampler``/``grid_sampler_2d``/``grid_sampler_3d`` (integer modes),
``norm_except_dim``, ``embedding_renorm_`` and ``feature_dropout_``."""
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


GRID = A((np.random.RandomState(4).rand(2, 3, 3, 2) * 2.2 - 1.1).astype(np.float32))
GRID3 = A((np.random.RandomState(5).rand(1, 2, 2, 2, 3) * 2.2 - 1.1).astype(np.float32))
ATEN_CASES = [
    C(f"grid_sampler_{mode}_{pad}_{corners}",
      lambda m, x, g, mode=mode, pad=pad, corners=corners: m.grid_sampler(x, g, mode, pad, corners),
      [F(2, 2, 4, 5), GRID], tol=(1e-4, 1e-5))
    for mode in range(3) for pad in range(3) for corners in (False, True)
] + [
    C("grid_sampler_2d", lambda m, x, g: m.grid_sampler_2d(x, g, 0, 1, True), [F(2, 2, 4, 5), GRID]),
    C("grid_sampler_3d", lambda m, x, g: m.grid_sampler_3d(x, g, 1, 2, False), [F(1, 2, 3, 3, 3), GRID3]),
    C("grid_sampler_3d_via_grid_sampler", lambda m, x, g: m.grid_sampler(x, g, 0, 0, False),
      [F(1, 2, 3, 3, 3), GRID3]),
    C("grid_sampler_2d_of_5d", lambda m, x, g: m.grid_sampler_2d(x, g, 0, 0, False), [F(1, 2, 3, 3, 3), GRID3],
      raises=True),
    C("grid_sampler_3d_of_4d", lambda m, x, g: m.grid_sampler_3d(x, g, 0, 0, False), [F(2, 2, 4, 5), GRID],
      raises=True),
    C("grid_sampler_batch_mismatch", lambda m, x, g: m.grid_sampler(x, g, 0, 0, False), [F(3, 2, 4, 5), GRID],
      raises=True),
] + [
    # torch computes dim=0 as a view of a norm (ViewBackward0): the values and gradients are compared
    C(f"norm_except_dim_{p}_{d}", lambda m, v, p=p, d=d: m.norm_except_dim(v, p, d), [F(3, 4, 5)],
      no_grad_fn=True)
    for p, d in ((2, 0), (2, 1), (2, 2), (2, -1), (2, -2), (3, 0), (1, 2))
] + [
    C("norm_except_dim_defaults", lambda m, v: m.norm_except_dim(v), [F(4, 3)], no_grad_fn=True),
    C("norm_except_dim_out_of_range", lambda m, v: m.norm_except_dim(v, 2, 3), [F(3, 4, 5)], raises=True),
]


@params(ATEN_CASES)
def test_aten_spellings_parity(case):
    check_parity(case, torch)


@pytest.mark.parametrize("bad", [("interpolation_mode", 3), ("padding_mode", -1)])
def test_grid_sampler_unknown_mode_raises(bad):
    # torch does not check these (its result is uninitialised memory there): a clear error instead
    modes = {"interpolation_mode": 0, "padding_mode": 0, bad[0]: bad[1]}
    x, g = tracegrad.zeros(1, 1, 2, 2), tracegrad.zeros(1, 1, 1, 2)
    with pytest.raises(RuntimeError, match=f"grid_sampler\\(\\): {bad[0]} must be one of"):
        tracegrad.grid_sampler(x, g, modes["interpolation_mode"], modes["padding_mode"], False)


def test_embedding_renorm_in_place_matches_torch():
    w = np.random.RandomState(6).randn(6, 3).astype(np.float32) * 2
    idx = np.array([0, 2, 2, 5])
    for max_norm, norm_type in ((1.0, 2.0), (0.5, 1.0), (10.0, 2.0)):
        tw, gw = torch.tensor(w), tracegrad.tensor(w)
        assert torch.embedding_renorm_(tw, torch.tensor(idx), max_norm, norm_type) is tw
        assert tracegrad.embedding_renorm_(gw, tracegrad.tensor(idx), max_norm, norm_type) is gw
        close(gw, tw, 1e-6, 1e-6)


def test_feature_dropout_in_place_zeroes_whole_channels():
    x = tracegrad.ones(4, 6, 5)
    tracegrad.manual_seed(0)
    assert tracegrad.feature_dropout_(x, 0.5, True) is x
    per_channel = x.numpy()
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert all(len(np.unique(per_channel[n, c])) == 1 for n in range(4) for c in range(6))
    assert 0 < (per_channel == 0).mean() < 1
    y = tracegrad.ones(2, 3, 4)
    assert tracegrad.feature_dropout_(y, 0.5, False) is y and bool((y == 1).all())
