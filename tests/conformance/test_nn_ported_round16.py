"""Round 16 of PyTorch's own tests, ported: test/test_nn.py's pointwise-loss checks
(TestNN.test_pointwise_loss_target_grad_none_reduction, test_pointwise_loss_broadcast,
test_loss_equal_input_target_shape, test_KLDivLoss_* and the criterion tests' dtype
expectations) for the loss kernels' dtype and argument rules: huber_loss and soft_margin_loss
compute in the input's dtype, binary_cross_entropy_with_logits in the target's, kl_div refuses
integer operands, soft_margin_loss has no gradient for its target and never grows its input by
broadcasting (grad_fn ``SoftMarginLossBackward0`` with one edge); and TestNN.test_rnn_args_check's
neighbour: an RNN/LSTM/GRU (or cell) hidden state of another dtype than the input is refused, as
torch's kernels refuse it. Each program runs with torch
(the oracle) and tracegrad (``run_cases``/``same_outcome``): equal values, dtypes, shapes and
grad_fn names, or the same exception class. Float tensors of shape (2, 3) only."""
import numpy as np
import pytest

import tracegrad
from _bad_input_helpers import assert_gist
from parity import run_cases, same_outcome

torch = pytest.importorskip("torch")

X = np.array([[0.1, -0.5, 2.0], [1.0, 0.3, -0.2]])
SIG = 1 / (1 + np.exp(-X))


def t(T, a=X, dtype="float32", grad=False):
    return T.tensor(np.asarray(a), dtype=getattr(T, dtype), requires_grad=grad)


LOSSES = ("huber_loss", "soft_margin_loss", "smooth_l1_loss", "l1_loss", "mse_loss", "kl_div",
          "binary_cross_entropy", "binary_cross_entropy_with_logits", "poisson_nll_loss", "multilabel_soft_margin_loss")
# (input dtype, target dtype): mixed floats both ways, an integer target, an integer-valued
# float input, a half target
PAIRS = (("float32", "float64"), ("float64", "float32"), ("float32", "int64"), ("float32", "float16"))


def _dtype_case(name, a, b):
    def fn(T):
        x = t(T, SIG, a, grad=True)
        y = t(T, SIG if "int" not in b else np.ones((2, 3)), b)
        out = getattr(T.nn.functional, name)(x, y)
        if name == "huber_loss" or b == "float16":
            # torch's HuberLossBackward0 refuses mixed dtypes ("Found dtype Double but expected
            # Float"), tracegrad differentiates them; a half target rounds torch's in-place
            # intermediates differently: only the forward is compared there
            return out, type(out.grad_fn).__name__
        g, = T.autograd.grad(out, x)
        return out, type(out.grad_fn).__name__, g
    return fn


def test_pointwise_loss_result_dtypes():
    # the output dtype (and its value, grad_fn and the input's gradient) for each mixed pair
    run_cases({f"{name}_{a}_{b}": _dtype_case(name, a, b) for name in LOSSES for a, b in PAIRS})


def _soft_margin(T):
    F = T.nn.functional
    x, y = t(T, grad=True), t(T, np.sign(X))
    out = []
    for red in ("none", "mean", "sum"):
        loss = F.soft_margin_loss(x, y, reduction=red)
        out += [loss, type(loss.grad_fn).__name__, len(loss.grad_fn.next_functions),
                T.autograd.grad(loss.sum(), x)]
    # the target broadcasts to the input (a row, a scalar); a bool target counts as 0/1
    out += [F.soft_margin_loss(x, t(T, [1.0, -1.0, 1.0]), reduction="none"), F.soft_margin_loss(x, t(T, 1.0)),
            F.soft_margin_loss(x.double(), T.tensor([True, False, True]))]
    with T.no_grad():   # a target requiring grad is fine when nothing is recorded
        out.append(F.soft_margin_loss(x, t(T, grad=True)))
    return out


def test_soft_margin_loss_kernel_rules():
    same_outcome(_soft_margin)


def _bce_logits_dtype(T):
    # float64 logits against a float32 target: a float32 loss, a float64 gradient for the logits
    x = t(T, dtype="float64", grad=True)
    loss = T.nn.functional.binary_cross_entropy_with_logits(x, t(T, SIG), pos_weight=t(T, [1.0, 2.0, 0.5], "float64"))
    loss.backward()
    half = T.nn.functional.binary_cross_entropy_with_logits(
        t(T), t(T, SIG, "float16"), weight=t(T, [1.0, 2.0, 0.5], "float64"), reduction="none")
    return loss, type(loss.grad_fn).__name__, x.grad, half.dtype, half.shape


def test_bce_with_logits_follows_the_target_dtype():
    same_outcome(_bce_logits_dtype)


ERRORS = {
    "soft_margin_target_requires_grad": (lambda T: T.nn.functional.soft_margin_loss(t(T), t(T, grad=True)),
                                         "is not differentiable with respect to argument 'target'"),
    "soft_margin_input_grows": (lambda T: T.nn.functional.soft_margin_loss(t(T)[:, :1], t(T)),
                                "doesn't match the broadcast shape"),
    "soft_margin_int_input": (lambda T: T.nn.functional.soft_margin_loss(T.ones(2, 3, dtype=T.int64), t(T)),
                              "can't be cast to the desired output type Long"),
    "soft_margin_int_both": (lambda T: T.nn.functional.soft_margin_loss(T.ones(2, 3, dtype=T.int64),
                                                                        T.ones(2, 3, dtype=T.int64)),
                             "can't be cast to the desired output type Long"),
    "kl_div_int_target": (lambda T: T.nn.functional.kl_div(t(T), T.ones(2, 3, dtype=T.int64), reduction="sum"),
                          "Integral inputs not supported"),
    "kl_div_int_input": (lambda T: T.nn.functional.kl_div(T.ones(2, 3, dtype=T.int64), t(T), reduction="sum"),
                         "Integral inputs not supported"),
    "kl_div_bool_log_target": (lambda T: T.nn.functional.kl_div(t(T), T.ones(2, 3, dtype=T.bool), reduction="sum",
                                                                log_target=True),
                               "Integral inputs not supported"),
    "SoftMarginLoss_module_target_grad": (lambda T: T.nn.SoftMarginLoss()(t(T), t(T, grad=True)),
                                          "not differentiable with respect to argument 'target'"),
}


def test_loss_argument_errors():
    run_cases({name: fn for name, (fn, _) in ERRORS.items()})
    for name, (fn, gist) in ERRORS.items():
        assert_gist(name, fn, gist, torch, tracegrad)


def _rnn_hidden(mode, cell, dtype):
    def fn(T):
        m = getattr(T.nn, mode + ("Cell" if cell else ""))(3, 4)
        x = T.ones(2, 3) if cell else T.ones(2, 1, 3)
        shape = (2, 4) if cell else (1, 1, 4)
        h = T.zeros(shape, dtype=getattr(T, dtype))
        return m(x, (h, T.zeros(shape)) if mode == "LSTM" else h)
    return fn


def test_rnn_hidden_state_dtype_must_match_input():
    cases = {f"{mode}{'Cell' if cell else ''}_{dt}": _rnn_hidden(mode, cell, dt)
             for mode in ("RNN", "LSTM", "GRU") for cell in (False, True) for dt in ("float64", "float16")}
    cases["RNN_double_module_float_hidden"] = lambda T: T.nn.RNN(3, 4).double()(T.ones(2, 1, 3, dtype=T.float64),
                                                                                 T.zeros(1, 1, 4))
    cases["RNN_unbatched_double_hidden"] = lambda T: T.nn.RNN(3, 4)(T.ones(2, 3), T.zeros(1, 4, dtype=T.float64))
    run_cases(cases)


def test_native_channel_shuffle_matches_channel_shuffle():
    # TestNN.test_channel_shuffle_*: torch.native_channel_shuffle gives channel_shuffle's values
    # and errors (torch has no derivative for it; tracegrad's is channel_shuffle's, so grads and
    # grad_fn are not compared)
    def values(T, fn):
        x = T.arange(16.).reshape(1, 4, 2, 2)
        return fn(T)(x, 2), fn(T)(x.reshape(2, 8)[:1].reshape(1, 8), 4)
    run_cases({
        "values": lambda T: values(T, lambda T: T.native_channel_shuffle),
        "same_as_channel_shuffle": lambda T: bool(T.equal(values(T, lambda T: T.native_channel_shuffle)[0],
                                                           values(T, lambda T: T.nn.functional.channel_shuffle)[0])),
        "groups_not_dividing": lambda T: T.native_channel_shuffle(T.ones(1, 4, 2, 2), 3),
        "groups_zero": lambda T: T.native_channel_shuffle(T.ones(1, 4, 2, 2), 0),
        "one_dim_input": lambda T: T.native_channel_shuffle(T.ones(4), 2),
    })
