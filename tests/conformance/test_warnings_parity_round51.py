"""Warnings parity with torch 2.13, eager (round 51): the same call gives the same warnings.

Each case is one user line run with ``T`` = torch and ``T`` = tracegrad under an "always" filter,
twice; per call the warnings must agree in category, first sentence of the message (torch's
"(Triggered internally ..." suffix and the library's own name aside) and place: where torch names
the user's line, tracegrad names that line too; where torch names a line of its own, tracegrad
names its own or the user's (the brief asks for the user's line). Warnings torch gives once per
process (TORCH_WARN_ONCE and its Python equivalents) are checked in a fresh interpreter.
"""
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tracegrad  # noqa: E402

HERE = os.path.abspath(__file__)


def _a(T, *shape):
    return T.tensor((np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7 + 0.1))


def _p(T, *shape):
    return T.nn.Parameter(_a(T, *shape))


def _sgd(T):
    return T.optim.SGD([_p(T, 3)], lr=0.1)


def _ro(shape=(2, 3)):
    return np.broadcast_to(np.ones(shape[-1], np.float32), shape)     # a read-only view


def _hook_backward(T):
    m = T.nn.Linear(2, 2)
    m.register_backward_hook(lambda *args: None)
    m(_a(T, 2).requires_grad_()).sum().backward()


def _anomaly(T):
    with T.autograd.detect_anomaly():
        pass


def _autocast_cpu_float64(T):
    with T.autocast("cpu", dtype=T.float64):
        pass


def _autocast_cuda_without_cuda(T):
    with T.autocast("cuda"):
        pass


def _sched_epoch(T):
    opt = _sgd(T)
    opt.step()
    T.optim.lr_scheduler.StepLR(opt, 1).step(1)


def _sched_in_order(T):
    opt = _sgd(T)
    sched = T.optim.lr_scheduler.StepLR(opt, 1)
    opt.step()
    sched.step()


F = "nn.functional"

# per-call warnings (each call gives them again); cases with no warning check none is spurious
CASES = {
    "range": lambda T: T.range(0, 3),
    "T_2d_none": lambda T: _a(T, 2, 3).T,
    "mT_3d_none": lambda T: _a(T, 2, 3, 4).mT,
    "upsample": lambda T: T.nn.functional.upsample(_a(T, 1, 1, 2, 2), scale_factor=2),
    "upsample_nearest": lambda T: T.nn.functional.upsample_nearest(_a(T, 1, 1, 2, 2), scale_factor=2),
    "upsample_bilinear": lambda T: T.nn.functional.upsample_bilinear(_a(T, 1, 1, 2, 2), scale_factor=2),
    "Upsample_module_none": lambda T: T.nn.Upsample(scale_factor=2)(_a(T, 1, 1, 2, 2)),
    "F_sigmoid_none": lambda T: T.nn.functional.sigmoid(_a(T, 3)),
    "F_tanh_none": lambda T: T.nn.functional.tanh(_a(T, 3)),
    "softmax_nodim": lambda T: T.nn.functional.softmax(_a(T, 2, 3)),
    "log_softmax_nodim": lambda T: T.nn.functional.log_softmax(_a(T, 2, 3)),
    "softmin_nodim": lambda T: T.nn.functional.softmin(_a(T, 2, 3)),
    "softmax_dim_none": lambda T: T.nn.functional.softmax(_a(T, 2, 3), dim=1),
    "Softmax_module_nodim": lambda T: T.nn.Softmax()(_a(T, 2, 3)),
    "LogSoftmax_module_nodim": lambda T: T.nn.LogSoftmax()(_a(T, 2, 3)),
    "Softmin_module_nodim": lambda T: T.nn.Softmin()(_a(T, 2, 3)),
    "mse_size_average": lambda T: T.nn.functional.mse_loss(_a(T, 3), _a(T, 3), size_average=False),
    "nll_reduce": lambda T: T.nn.functional.nll_loss(T.log_softmax(_a(T, 2, 3), 1), T.tensor([0, 1]), reduce=False),
    "cross_entropy_size_average": lambda T: T.nn.functional.cross_entropy(_a(T, 2, 3), T.tensor([0, 1]),
                                                                          size_average=True),
    "hinge_size_average": lambda T: T.nn.functional.hinge_embedding_loss(_a(T, 3), T.tensor([1., -1., 1.]),
                                                                         size_average=True),
    "MSELoss_reduce": lambda T: T.nn.MSELoss(reduce=False),
    "L1Loss_size_average": lambda T: T.nn.L1Loss(size_average=False),
    "BCELoss_reduce": lambda T: T.nn.BCELoss(reduce=True),
    "MSELoss_reduction_none": lambda T: T.nn.MSELoss(reduction="sum"),
    "mse_broadcast": lambda T: T.nn.functional.mse_loss(_a(T, 3, 1), _a(T, 3)),
    "l1_broadcast": lambda T: T.nn.functional.l1_loss(_a(T, 3, 1), _a(T, 3)),
    "smooth_l1_broadcast": lambda T: T.nn.functional.smooth_l1_loss(_a(T, 3, 1), _a(T, 3)),
    "huber_broadcast": lambda T: T.nn.functional.huber_loss(_a(T, 3, 1), _a(T, 3)),
    "MSELoss_broadcast": lambda T: T.nn.MSELoss()(_a(T, 3, 1), _a(T, 3)),
    "mse_same_shape_none": lambda T: T.nn.functional.mse_loss(_a(T, 3), _a(T, 3)),
    "kl_div_mean": lambda T: T.nn.functional.kl_div(T.log_softmax(_a(T, 2, 3), 1), T.softmax(_a(T, 2, 3), 1)),
    "KLDivLoss_mean": lambda T: T.nn.KLDivLoss()(T.log_softmax(_a(T, 2, 3), 1), T.softmax(_a(T, 2, 3), 1)),
    "kl_div_batchmean_none": lambda T: T.nn.functional.kl_div(T.log_softmax(_a(T, 2, 3), 1), T.softmax(_a(T, 2, 3), 1),
                                                              reduction="batchmean"),
    "clip_grad_norm": lambda T: T.nn.utils.clip_grad_norm([_p(T, 3)], 1.0),
    "clip_grad_norm__none": lambda T: T.nn.utils.clip_grad_norm_([_p(T, 3)], 1.0),
    "init_normal": lambda T: T.nn.init.normal(_a(T, 3)),
    "init_uniform": lambda T: T.nn.init.uniform(_a(T, 3)),
    "init_constant": lambda T: T.nn.init.constant(_a(T, 3), 1.0),
    "init_xavier_uniform": lambda T: T.nn.init.xavier_uniform(_a(T, 3, 3)),
    "init_kaiming_normal": lambda T: T.nn.init.kaiming_normal(_a(T, 3, 3)),
    "init_orthogonal": lambda T: T.nn.init.orthogonal(_a(T, 3, 3)),
    "init_normal__none": lambda T: T.nn.init.normal_(_a(T, 3)),
    "init_kaiming_uniform_zero_element": lambda T: T.nn.init.kaiming_uniform_(T.empty(0, 3)),
    "init_kaiming_normal_zero_element": lambda T: T.nn.init.kaiming_normal_(T.empty(0, 3)),
    "Dropout2d_2d": lambda T: T.nn.Dropout2d()(_a(T, 3, 3)),
    "Dropout2d_3d": lambda T: T.nn.Dropout2d()(_a(T, 2, 3, 3)),
    "Dropout3d_3d": lambda T: T.nn.Dropout3d()(_a(T, 3, 3, 3)),
    "Dropout_1d_none": lambda T: T.nn.Dropout(0.5)(_a(T, 3)),
    "nonleaf_grad": lambda T: (_a(T, 3).requires_grad_() * 2).grad,
    "nonleaf_sum_grad": lambda T: (_a(T, 3).requires_grad_() * 2).sum().grad,
    "retained_nonleaf_grad_none": lambda T: (lambda y: (y.retain_grad(), y.grad))(_a(T, 3).requires_grad_() * 2),
    "leaf_grad_none": lambda T: _a(T, 3).grad,
    "sched_step_before_optimizer": lambda T: T.optim.lr_scheduler.StepLR(_sgd(T), 1).step(),
    "sched_step_epoch": _sched_epoch,
    "sched_in_order_none": _sched_in_order,
    "sched_get_lr": lambda T: T.optim.lr_scheduler.StepLR(_sgd(T), 1).get_lr(),
    "optimizer_duplicate_params": lambda T: (lambda p: T.optim.SGD([p, p], lr=0.1))(_p(T, 3)),
    "checkpoint_no_use_reentrant": lambda T: T.utils.checkpoint.checkpoint(lambda x: x * 2, _a(T, 3).requires_grad_()),
    "checkpoint_sequential_no_use_reentrant": lambda T: T.utils.checkpoint.checkpoint_sequential(
        T.nn.Sequential(T.nn.Identity(), T.nn.Identity()), 2, _a(T, 3).requires_grad_()),
    "checkpoint_reentrant_no_grad_inputs": lambda T: T.utils.checkpoint.checkpoint(lambda x: x * 2, _a(T, 3),
                                                                                   use_reentrant=True),
    "checkpoint_use_reentrant_false_none": lambda T: T.utils.checkpoint.checkpoint(
        lambda x: x * 2, _a(T, 3).requires_grad_(), use_reentrant=False),
    "tensor_of_tensor": lambda T: T.tensor(_a(T, 3)),
    "new_tensor_of_tensor": lambda T: _a(T, 3).new_tensor(_a(T, 3)),
    "resize_non_inplace": lambda T: _a(T, 1, 3).resize(3),
    "std_dof": lambda T: _a(T, 1).std(),
    "var_dof": lambda T: _a(T, 1).var(),
    "std_mean_dof": lambda T: T.std_mean(_a(T, 1)),
    "lstm_dropout_one_layer": lambda T: T.nn.LSTM(2, 2, num_layers=1, dropout=0.5),
    "rnn_dropout_one_layer": lambda T: T.nn.RNN(2, 2, num_layers=1, dropout=0.5),
    "transformer_encoder_nested": lambda T: T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(4, 2, 8), 1),
    "mha_mismatched_masks": lambda T: T.nn.MultiheadAttention(4, 2)(
        _a(T, 2, 1, 4), _a(T, 2, 1, 4), _a(T, 2, 1, 4), key_padding_mask=T.tensor([[False, True]]),
        attn_mask=T.zeros(2, 2)),
    "weight_norm": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2)),
    "register_backward_hook": _hook_backward,
    "state_dict_positional": lambda T: T.nn.Linear(2, 2).state_dict({}, "p"),
    "detect_anomaly": _anomaly,
    "testing_assert_allclose": lambda T: T.testing.assert_allclose(_a(T, 2), _a(T, 2)),
    "cuda_amp_gradscaler": lambda T: T.cuda.amp.GradScaler(),
    "cpu_amp_autocast": lambda T: T.cpu.amp.autocast(),
    "tensor_of_read_only_none": lambda T: T.tensor(_ro()),
    "cross_with_dim_none": lambda T: T.cross(_a(T, 3, 3), _a(T, 3, 3) + 1, dim=1),
    "meshgrid_indexing_none": lambda T: T.meshgrid(_a(T, 2), _a(T, 3), indexing="ij"),
    "grid_sample_no_align_corners": lambda T: T.nn.functional.grid_sample(_a(T, 1, 1, 2, 2), _a(T, 1, 2, 2, 2) - 0.5),
    "affine_grid_no_align_corners": lambda T: T.nn.functional.affine_grid(_a(T, 1, 2, 3), [1, 1, 2, 2]),
    "grid_sample_align_corners_none": lambda T: T.nn.functional.grid_sample(_a(T, 1, 1, 2, 2), _a(T, 1, 2, 2, 2) - 0.5,
                                                                            align_corners=False),
    "autocast_cpu_float64": _autocast_cpu_float64,
    "autocast_cuda_without_cuda": _autocast_cuda_without_cuda,
    "amp_gradscaler_cuda_without_cuda": lambda T: T.amp.GradScaler("cuda"),
    "amp_gradscaler_cpu_none": lambda T: T.amp.GradScaler("cpu"),
    "is_autocast_cpu_enabled": lambda T: T.is_autocast_cpu_enabled(),
    "trunc_normal_mean_far": lambda T: T.nn.init.trunc_normal_(_a(T, 3), mean=10.0),
    "nll_elementwise_mean": lambda T: T.nn.functional.nll_loss(T.log_softmax(_a(T, 2, 3), 1), T.tensor([0, 1]),
                                                               reduction="elementwise_mean"),
    "Dropout2d_5d": lambda T: T.nn.Dropout2d()(_a(T, 1, 1, 1, 2, 2)),
    "Variable_volatile": lambda T: T.autograd.Variable(_a(T, 3), volatile=True),
    "plateau_step_epoch": lambda T: T.optim.lr_scheduler.ReduceLROnPlateau(_sgd(T)).step(1.0, 1),
    "cosine_get_lr": lambda T: T.optim.lr_scheduler.CosineAnnealingLR(_sgd(T), 3).get_lr(),
    "index_with_uint8": lambda T: T.arange(3)[T.tensor([1, 0, 1], dtype=T.uint8)],
    "index_with_bool_none": lambda T: T.arange(3)[T.tensor([True, False, True])],
    "encoder_norm_first_nested": lambda T: T.nn.TransformerEncoder(
        T.nn.TransformerEncoderLayer(4, 2, 8, norm_first=True), 1),
}


def _head(message):
    """The part of a warning's text both libraries must share: its first sentence (or line),
    torch's C++ suffix dropped and the library's own name read as torch's."""
    text = str(message).split(" (Triggered internally")[0].replace("tracegrad", "torch")
    return re.split(r"(?<=\.)\s|\n", text, maxsplit=1)[0]


def _given(T, fn, calls=2):
    out = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        for _ in range(calls):
            n = len(log)
            fn(T)
            out.append([(w.category, _head(w.message), w.filename, w.lineno) for w in log[n:]])
    return out


def _same(tw, gw):
    (tc, tm, tf, tl), (gc, gm, gf, gl) = tw, gw
    if (tc, tm) != (gc, gm):
        return False
    if tf == HERE:                       # torch names the user's line: so must tracegrad
        return (gf, gl) == (HERE, tl)
    # torch names a line of its own: tracegrad names its own or the user's
    return gf == HERE or os.path.dirname(tracegrad.__file__) in gf


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_warnings_match_torch(name):
    fn = CASES[name]
    want, got = _given(torch, fn), _given(tracegrad, fn)
    assert [len(c) for c in got] == [len(c) for c in want], (want, got)
    for tcall, gcall in zip(want, got):
        for tw, gw in zip(tcall, gcall):
            assert _same(tw, gw), (tw, gw)
    if name.endswith("_none"):
        assert want == [[], []]          # the case is a negative one: neither library warns
    else:
        assert all(want), want           # each call warns in torch (a per-call warning)


# given once per process (TORCH_WARN_ONCE, or torch's Python once-flag), then every call under
# set_warn_always(True): run in a fresh interpreter, each library on its own
ONCE = {
    "T_0d": "_a(T, 1).reshape(()).T",
    "T_3d": "_a(T, 2, 3, 4).T",
    "requires_grad_to_float": "float(_a(T, 1).requires_grad_())",
    "requires_grad_item_none": "_a(T, 1).requires_grad_().item()",
    "typed_storage": "_a(T, 3).storage()",
    "conv_same_even_kernel": "T.nn.functional.conv1d(_a(T, 1, 1, 5), _a(T, 1, 1, 2), padding='same')",
    "stft_no_window": "T.stft(_a(T, 16), 8, return_complex=True)",
    "istft_no_window": "T.istft(T.stft(_a(T, 16), 8, window=T.ones(8), return_complex=True), 8)",
    "addcmul_deprecated_overload": "T.addcmul(T.ones(2), 0.5, T.ones(2), T.ones(2))",
    "lu": "T.lu(_a(T, 3, 3) + T.eye(3) * 5)",
    "cross_nodim": "T.cross(_a(T, 3, 3), _a(T, 3, 3) + 1)",
    "meshgrid_no_indexing": "T.meshgrid(_a(T, 2), _a(T, 3))",
    "chain_matmul": "T.chain_matmul(_a(T, 2, 2), _a(T, 2, 2))",
    "set_default_tensor_type": "T.set_default_tensor_type(T.FloatTensor)",
    "tensor_of_ndarray_list": "T.tensor([np.ones(2, np.float32), np.ones(2, np.float32)])",
    "from_numpy_read_only": "T.from_numpy(_ro())",
    "as_tensor_read_only": "T.as_tensor(_ro())",
    "as_tensor_read_only_converted": "T.as_tensor(_ro(), dtype=T.float64)",
}
# (a case, whether set_warn_always is on): from_numpy and as_tensor share one once-flag
ONCE_PLAN = [("T_0d", False), ("T_3d", False), ("requires_grad_item_none", False), ("requires_grad_to_float", False),
             ("typed_storage", False), ("conv_same_even_kernel", False), ("stft_no_window", False),
             ("istft_no_window", False), ("stft_no_window", True), ("addcmul_deprecated_overload", False),
             ("addcmul_deprecated_overload", True), ("lu", False), ("cross_nodim", False),
             ("meshgrid_no_indexing", False), ("chain_matmul", False),
             ("set_default_tensor_type", False), ("tensor_of_ndarray_list", False),
             ("from_numpy_read_only", False), ("as_tensor_read_only", False),
             ("as_tensor_read_only_converted", False),
             ("lu", True), ("cross_nodim", True), ("chain_matmul", True), ("meshgrid_no_indexing", True),
             ("as_tensor_read_only", True), ("T_3d", True), ("requires_grad_to_float", True),
             ("requires_grad_item_none", True),
             ("typed_storage", True)]
# not planned: tensor_of_ndarray_list under set_warn_always(True), where torch warns twice per
# call (its C++ reads the list twice, an accident of its internals); tracegrad once

_SCRIPT = r"""
import json, re, sys, warnings
import numpy as np
lib = sys.argv[1]
T = __import__(lib)
def _a(T, *shape):
    return T.tensor((np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7 + 0.1))
def _ro(shape=(2, 3)):
    return np.broadcast_to(np.ones(shape[-1], np.float32), shape)
cases, plan = json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = []
for name, always in plan:
    T.set_warn_always(always)
    code = compile(cases[name], "<case>", "eval")
    counts, heads = [], []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        for _ in range(3):
            n = len(log)
            eval(code)
            counts.append(len(log) - n)
            heads += [(w.category.__name__, str(w.message)) for w in log[n:]]
    out.append((name, always, counts, heads))
T.set_warn_always(False)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def once_runs():
    def run(lib):
        r = subprocess.run([sys.executable, "-c", _SCRIPT, lib, json.dumps(ONCE), json.dumps(ONCE_PLAN)],
                           capture_output=True, text=True, timeout=240,
                           env={**os.environ, "PYTHONWARNINGS": ""})
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])
    return run("torch"), run("tracegrad")


@pytest.mark.parametrize("i", range(len(ONCE_PLAN)), ids=[f"{n}-{'always' if a else 'once'}" for n, a in ONCE_PLAN])
def test_once_per_process_warnings_match_torch(once_runs, i):
    (name, always, tcounts, theads), (_, _, gcounts, gheads) = once_runs[0][i], once_runs[1][i]
    assert gcounts == tcounts, (name, always, tcounts, gcounts)
    assert [(c, _head(m)) for c, m in gheads] == [(c, _head(m)) for c, m in theads]
    if name.endswith("_none") or name == "typed_storage" and always:
        assert tcounts == [0, 0, 0]      # no warning; TypedStorage's once-flag ignores set_warn_always
    elif name == "as_tensor_read_only" and not always:
        assert tcounts == [0, 0, 0]      # from_numpy's once-flag is the same one
    elif always:
        assert tcounts == [1, 1, 1]
    elif name != "as_tensor_read_only_converted":
        assert tcounts == [1, 0, 0]
