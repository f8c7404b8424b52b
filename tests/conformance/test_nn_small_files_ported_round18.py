"""Small files of torch's test/nn/, ported in our own words against torch 2.13:
test/nn/test_linear_cross_entropy.py (written for a later signature with ``chunking_strategy=``;
here its checks run on 2.13's ``options=LinearCrossEntropyOptions(...)``),
test/nn/test_linear_module_validation.py and test/nn/test_optimizer_hooks.py. Each program
runs with torch and with tracegrad; values and gradients must agree, and errors must have the
same class."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
LIBS = (torch, tracegrad)


def _attempt(call):
    try:
        r = call()
        return round(r.item(), 9) if hasattr(r, "item") else r
    except Exception as e:  # noqa: BLE001 - the class is what both libraries must agree on
        return type(e).__name__


def _data(lib, *shape, scale=1.0, seed=0):
    vals = np.random.default_rng(seed).standard_normal(shape) * scale
    return lib.tensor(vals, dtype=lib.float64)


def _lce_case(lib, reduction, smoothing, ignore, options, bias=True):
    """Loss and gradients of linear_cross_entropy and of linear + cross_entropy on one input."""
    F = lib.nn.functional
    x = _data(lib, 6, 5, seed=1).requires_grad_()
    w = _data(lib, 7, 5, seed=2).requires_grad_()
    b = _data(lib, 7, seed=3).requires_grad_() if bias else None
    t = lib.tensor([0, 3, 6, 1, 3, 2])
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if ignore is not None:
        kw["ignore_index"] = ignore
    opts = None if options is None else lib.nn.LinearCrossEntropyOptions(**options)
    if lib is torch:
        opts = None   # (torch's chunked path costs ~5 s at its first call; its values are the reference's)
    fused = F.linear_cross_entropy(x, w, t, linear_bias=b, options=opts, **kw)
    ref = F.cross_entropy(F.linear(x, w, b), t, **dict(kw, ignore_index=-100 if ignore is None else ignore))
    params = [p for p in (x, w, b) if p is not None]
    g = lib.autograd.grad(fused.sum(), params)
    g_ref = lib.autograd.grad(ref.sum(), params)
    return (fused.detach().numpy(), ref.detach().numpy(), [v.numpy() for v in g], [v.numpy() for v in g_ref],
            tuple(fused.shape), fused.dtype == lib.float64)


CASES = [("mean", 0.0, None, None), ("sum", 0.2, 3, None), ("none", 0.0, 3, {"batch_chunk_size": 4})]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_linear_cross_entropy_matches_the_reference_and_torch():
    # TestLinearCrossEntropyCPU.test_forward_backward_matches_reference_auto / test_vocab_chunking /
    # test_batch_chunking / test_reduction_and_options / test_gradcheck (as a comparison of gradients)
    for case in CASES:
        theirs, ours = (_lce_case(lib, *case) for lib in LIBS)
        for got, want in zip([*ours[:2], *ours[2], *ours[3]], [*theirs[:2], *theirs[2], *theirs[3]]):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=str(case))
        np.testing.assert_allclose(ours[0], ours[1], rtol=1e-10, atol=1e-12, err_msg=str(case))
        assert ours[4:] == theirs[4:], case


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_linear_cross_entropy_all_ignored_and_argument_errors():
    # TestLinearCrossEntropyCPU.test_all_targets_ignored / test_parameter_validation
    def program(lib):
        F = lib.nn.functional
        x, w, b = _data(lib, 6, 5, seed=1), _data(lib, 7, 5, seed=2), _data(lib, 7, seed=3)
        t = lib.full((6,), -1, dtype=lib.int64)
        out = []
        for opts in (None, None if lib is torch else lib.nn.LinearCrossEntropyOptions(batch_chunk_size=2)):
            for reduction in ("mean", "sum", "none"):
                loss = F.linear_cross_entropy(x, w, t, linear_bias=b, reduction=reduction, ignore_index=-1,
                                              options=opts)
                out.append(loss.tolist())
        t = lib.tensor([0, 3, 6, 1, 3, 2])
        bad = [dict(reduction="invalid"), dict(label_smoothing=-0.1), dict(label_smoothing=1.1),
               dict(linear_bias=lib.zeros(3, dtype=lib.float64))]
        out += [_attempt(lambda: F.linear_cross_entropy(x, w, t, **kw)) for kw in bad]
        out += [_attempt(lambda: F.linear_cross_entropy(x[:, :4], w, t)),
                _attempt(lambda: F.linear_cross_entropy(x.reshape(2, 3, 5), w, t)),
                _attempt(lambda: F.linear_cross_entropy(x, w[0], t)),
                _attempt(lambda: F.linear_cross_entropy(x, w, F.one_hot(t, 7).double(), ignore_index=1))]
        return out
    theirs, ours = (program(lib) for lib in LIBS)
    assert str(ours[0]) == str(theirs[0]) == "nan"
    assert ours == theirs or str(ours) == str(theirs)


def test_linear_and_bilinear_reject_non_integer_sizes():
    # TestLinearValidation / TestBilinearInitialization
    def program(lib):
        nn = lib.nn
        return [_attempt(lambda: nn.Linear(in_features=10.5, out_features=5)),
                _attempt(lambda: nn.Linear(in_features=10, out_features="five")),
                _attempt(lambda: nn.Bilinear(in1_features=10.5, in2_features=5, out_features=3)),
                _attempt(lambda: nn.Bilinear(in1_features=10, in2_features="five", out_features=3)),
                _attempt(lambda: nn.Bilinear(in1_features=10, in2_features=5, out_features="three")),
                tuple(nn.Linear(3, 2).weight.shape), tuple(nn.Bilinear(3, 4, 2).weight.shape)]
    theirs, ours = (program(lib) for lib in LIBS)
    assert theirs[:5] == ["TypeError"] * 5
    assert ours == theirs


def test_optimizer_step_pre_and_post_hooks():
    # test_pre_hook / test_post_hook / test_pre_and_post_hook
    def program(lib):
        log = []
        p = lib.Tensor([1, 1])
        opt = lib.optim.SGD([p], lr=0.001)
        def record(what):
            return lambda o, args, kwargs: log.append((what, o is opt, [a is opt for a in args], kwargs))
        pre = opt.register_step_pre_hook(record("pre"))
        post = opt.register_step_post_hook(record("post"))
        opt.step()
        opt.step(closure=None)
        pre.remove()
        opt.step()
        post.remove()
        opt.step()
        return log, p.tolist()
    theirs, ours = (program(lib) for lib in LIBS)
    assert [e[0] for e in theirs[0]] == ["pre", "post", "pre", "post", "post"]
    assert ours == theirs
