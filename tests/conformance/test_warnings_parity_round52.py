"""Warnings parity with torch 2.13, eager and compiled (round 52): the same call gives the same
warnings, taking the warnings round 51 did not cover.

Per call (``CASES``), each case is one user line run with ``T`` = torch and ``T`` = tracegrad
under an "always" filter, twice: per call the same count of warnings, each with the same
category, first sentence (torch's C++ suffix, the library's own name and whitespace aside: torch
writes "solve_triangularand") and place -- the user's line where torch names it, else the user's
line or tracegrad's own. ``LAZY`` runs warnings that name the user's line while a Lazy module's
UninitializedParameter (a ``__torch_function__`` subclass) is alive: tracegrad then dispatches
property reads and functions through torch_function.py, which a fixed ``stacklevel`` named instead
of the user's line. Once-per-process warnings (``ONCE_PLAN``) are replayed step by step, torch
in a fresh interpreter, tracegrad in-process from a fresh once-state (``fresh_warn_once``).
Compiled (``COMPILED``): a compiled function gives per call the warnings eager gives.
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
PACKAGE = os.path.dirname(tracegrad.__file__)


from test_warnings_parity_round51 import _a, _p, _sgd  # noqa: E402  (round 51's inputs: T.tensor, Parameter, SGD)


def _lu(T):
    return T.linalg.lu_factor(_a(T, 3, 3) + T.eye(3) * 5)


def _iterable_len_mismatch(T):
    class Short(T.utils.data.IterableDataset):     # says 2 samples, yields 3
        def __iter__(self):
            return iter(range(3))

        def __len__(self):
            return 2

        def __repr__(self):
            return "Short"

    loader = T.utils.data.DataLoader(Short(), batch_size=None)
    len(loader), list(loader)


def _step_overridden(T):
    opt = _sgd(T)
    sched = T.optim.lr_scheduler.StepLR(opt, 1)
    opt.step = lambda *args, **kwargs: None        # replaced after the scheduler wrapped it
    sched.step()


def _grad_only_inputs(T):
    x = _a(T, 3).requires_grad_()
    T.autograd.grad((x * x).sum(), x, only_inputs=False)


def _gradcheck_float32(T):
    T.autograd.gradcheck(lambda x: x * 2, (T.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2, rtol=1e-2)


def _layer(T, **kw):
    return T.nn.TransformerEncoderLayer(4, 2, 8, **kw)


def _mha(T, key_padding_mask, attn_mask):
    x = _a(T, 2, 1, 4)
    return T.nn.MultiheadAttention(4, 2)(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)


# per-call warnings (each call gives them again); cases ending _none check that neither warns
CASES = {
    # nn.functional and nn modules
    "F_dropout2d_3d": lambda T: T.nn.functional.dropout2d(_a(T, 2, 3, 3)),
    "F_dropout2d_2d": lambda T: T.nn.functional.dropout2d(_a(T, 3, 3)),
    "F_dropout3d_3d": lambda T: T.nn.functional.dropout3d(_a(T, 3, 3, 3)),
    "F_dropout3d_4d_none": lambda T: T.nn.functional.dropout3d(_a(T, 1, 2, 2, 2)),
    "softmax_0d_nodim": lambda T: T.nn.functional.softmax(_a(T, 1).reshape(())),
    "log_softmax_3d_nodim": lambda T: T.nn.functional.log_softmax(_a(T, 2, 3, 4)),
    "Softmax_dim_None": lambda T: T.nn.Softmax(dim=None)(_a(T, 2, 3)),
    "interpolate_bilinear_none": lambda T: T.nn.functional.interpolate(_a(T, 1, 1, 2, 2), scale_factor=2,
                                                                       mode="bilinear"),
    "embedding_max_norm_none": lambda T: T.nn.functional.embedding(T.tensor([0, 1]), _a(T, 3, 2), max_norm=1.0),
    "BatchNorm_momentum_None_none": lambda T: T.nn.BatchNorm1d(2, momentum=None)(_a(T, 3, 2)),
    "poisson_nll_reduce": lambda T: T.nn.functional.poisson_nll_loss(_a(T, 3), _a(T, 3), reduce=False),
    "kl_div_reduce": lambda T: T.nn.functional.kl_div(_a(T, 3), _a(T, 3), reduce=False),
    "CrossEntropyLoss_reduce": lambda T: T.nn.CrossEntropyLoss(reduce=False),
    "init_sparse": lambda T: T.nn.init.sparse(_a(T, 3, 3), 0.5),
    "init_dirac": lambda T: T.nn.init.dirac(_a(T, 2, 2, 3)),
    "gru_dropout_one_layer": lambda T: T.nn.GRU(2, 2, num_layers=1, dropout=0.5),
    "lstm_proj_dropout_one_layer": lambda T: T.nn.LSTM(2, 3, proj_size=2, dropout=0.3),
    "Transformer_not_batch_first": lambda T: T.nn.Transformer(4, 2, 1, 1, 8),
    "encoder_odd_heads": lambda T: T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(3, 3, 8, batch_first=True), 1),
    "encoder_callable_activation": lambda T: T.nn.TransformerEncoder(
        _layer(T, batch_first=True, activation=T.nn.functional.silu), 1),
    "mha_float_padding_bool_attn": lambda T: _mha(T, T.tensor([[0., 1.]]), T.zeros(2, 2, dtype=T.bool)),
    # tensors, autograd
    "nonleaf_view_grad": lambda T: (lambda y: y.grad)(_a(T, 3).requires_grad_().view(3)),
    "leaf_retain_grad_none": lambda T: _p(T, 3).retain_grad(),
    "autograd_grad_only_inputs": _grad_only_inputs,
    "gradcheck_float32": _gradcheck_float32,
    # optim, data, checkpoint
    "onecycle_get_lr": lambda T: T.optim.lr_scheduler.OneCycleLR(_sgd(T), 1.0, total_steps=5).get_lr(),
    "scheduler_optimizer_step_overridden": _step_overridden,
    "dataloader_too_many_workers": lambda T: T.utils.data.DataLoader(list(range(4)), num_workers=64),
    "iterable_dataset_length": _iterable_len_mismatch,
    "random_split_empty_parts": lambda T: T.utils.data.random_split(list(range(2)), [0.0, 0.0, 1.0]),
    "checkpoint_sequential_reentrant_no_grad": lambda T: T.utils.checkpoint.checkpoint_sequential(
        T.nn.Sequential(T.nn.Identity(), T.nn.Identity()), 2, _a(T, 3), use_reentrant=True),
}


def _head(message):
    """The part of a warning's text both libraries must share: its first sentence (or line),
    torch's C++ suffix dropped, the library's own name read as torch's, whitespace ignored."""
    text = str(message).split(" (Triggered internally")[0].replace("tracegrad", "torch")
    return re.sub(r"\s+", "", re.split(r"(?<=\.)\s|\n", text, maxsplit=1)[0])


def _record(call, calls, results=None):
    """Per call of ``call()`` under an "always" filter: its warnings as (category name, first
    sentence, file, line); each result appended to ``results`` when given."""
    out = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        for _ in range(calls):
            n = len(log)
            r = call()
            if results is not None:
                results.append(r)
            out.append([(w.category.__name__, _head(w.message), w.filename, w.lineno) for w in log[n:]])
    return out


def _given(T, fn, calls=2):
    return _record(lambda: fn(T), calls)


def _same(tw, gw, user_file=HERE):
    (tc, tm, tf, tl), (gc, gm, gf, gl) = tw, gw
    if (tc, tm) != (gc, gm):
        return False
    if tf == user_file:                  # torch names the user's line: so must tracegrad
        return (gf, gl) == (user_file, tl)
    # torch names a line of its own: tracegrad names its own or the user's
    return gf == user_file or gf.startswith(PACKAGE)


def _check_calls(want, got, user_file=HERE):
    assert [len(c) for c in got] == [len(c) for c in want], (want, got)
    for tcall, gcall in zip(want, got):
        for tw, gw in zip(tcall, gcall):
            assert _same(tw, gw, user_file), (tw, gw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_warnings_match_torch(name):
    fn = CASES[name]
    want, got = _given(torch, fn), _given(tracegrad, fn)
    _check_calls(want, got)
    if name.endswith("_none"):
        assert want == [[], []]          # a negative case: neither library warns
    else:
        assert all(want), want           # each call warns in torch (a per-call warning)


# warnings at the user's line, given while a Lazy module's parameter is alive
LAZY = {
    "dropout2d_3d": lambda T: T.nn.functional.dropout2d(_a(T, 2, 3, 3)),
    "dropout3d_3d": lambda T: T.nn.functional.dropout3d(_a(T, 3, 3, 3)),
    "autograd_grad_only_inputs": _grad_only_inputs,
    "nonleaf_view_grad": lambda T: _a(T, 3).requires_grad_().view(3).grad,
    "mse_broadcast": lambda T: T.nn.functional.mse_loss(_a(T, 3, 1), _a(T, 3)),
    "index_with_uint8": lambda T: T.arange(3)[T.tensor([1, 0, 1], dtype=T.uint8)],
    "resize_non_inplace": lambda T: _a(T, 1, 3).resize(3),
    "resize_as_non_inplace": lambda T: _a(T, 1, 3).resize_as(_a(T, 3)),
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_user_line_named_with_a_torch_function_subclass_alive(name):
    runs = []
    for T in (torch, tracegrad):
        lazy = T.nn.LazyLinear(2)        # holds an UninitializedParameter while the case runs
        runs.append(_given(T, LAZY[name]))
        del lazy
    want, got = runs
    assert all(want), want
    assert all(w[2] == HERE for call in want for w in call), want
    _check_calls(want, got)


# given once per process (TORCH_WARN_ONCE, or torch's Python once-flag), then every call under
# set_warn_always(True)
ONCE = {
    "backward_create_graph": "(lambda p: (p * p).sum().backward(create_graph=True))(_p(T, 3))",
    "autograd_backward_create_graph": "(lambda p: T.autograd.backward((p * p).sum(), create_graph=True))(_p(T, 3))",
    "lu_solve": "T.lu_solve(_a(T, 3, 1), *_lu(T))",
    "lu_solve_method": "_a(T, 3, 1).lu_solve(*_lu(T))",
    "qr": "T.qr(_a(T, 3, 3))",
    "cholesky": "T.cholesky(_a(T, 3, 3) @ _a(T, 3, 3).T + T.eye(3))",
    "triangular_solve": "T.triangular_solve(_a(T, 3, 1), _a(T, 3, 3).triu() + T.eye(3))",
    "conv2d_same_even_kernel": "T.nn.functional.conv2d(_a(T, 1, 1, 4, 4), _a(T, 1, 1, 3, 2), padding='same')",
    "Conv1d_same_even_kernel": "T.nn.Conv1d(1, 1, 2, padding='same')(_a(T, 1, 1, 5))",
    "add_deprecated_overload": "_a(T, 3).add(1, _a(T, 3))",
    "sub__deprecated_overload": "_a(T, 3).sub_(1, _a(T, 3))",
    "where_uint8": "T.where(T.tensor([1, 0, 1], dtype=T.uint8), _a(T, 3), _a(T, 3))",
}
# (a case, whether set_warn_always is on)
ONCE_PLAN = [("backward_create_graph", False), ("autograd_backward_create_graph", False),
             ("lu_solve", False), ("lu_solve_method", False), ("qr", False), ("cholesky", False),
             ("triangular_solve", False), ("conv2d_same_even_kernel", False), ("Conv1d_same_even_kernel", False),
             ("add_deprecated_overload", False), ("sub__deprecated_overload", False), ("where_uint8", False),
             ("backward_create_graph", True), ("lu_solve_method", True), ("cholesky", True), ("where_uint8", True)]
# steps whose once-flag an earlier step spent: torch.lu_solve's is its method's too, conv1d's
# padding='same' note is conv2d's, backward's create_graph note autograd.backward's
SILENT_ONCE = {"lu_solve_method", "sub__deprecated_overload", "autograd_backward_create_graph",
               "Conv1d_same_even_kernel"}


def _run_step(T, name, always, filename="<case>"):
    """Three calls of ONCE[name] under set_warn_always(always): per call, the warnings given."""
    code = compile(ONCE[name], filename, "eval")
    env = {"T": T, "_a": _a, "_p": _p, "_lu": _lu}
    T.set_warn_always(always)
    try:
        return _record(lambda: eval(code, env), 3)
    finally:
        T.set_warn_always(False)


_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import test_warnings_parity_round52 as m
print(json.dumps([m._run_step(torch, name, always) for name, always in m.ONCE_PLAN]))
"""


@pytest.fixture(scope="module")
def torch_once():
    """torch's warnings for ONCE_PLAN, step by step, from a fresh interpreter (torch's once
    flags cannot be reset in-process)."""
    r = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.dirname(HERE)], capture_output=True, text=True,
                       timeout=240, env={**os.environ, "PYTHONWARNINGS": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("i", range(len(ONCE_PLAN)), ids=[f"{n}-{'always' if a else 'once'}" for n, a in ONCE_PLAN])
def test_once_per_process_warnings_match_torch(torch_once, i, fresh_warn_once):
    for name, always in ONCE_PLAN[:i]:   # tracegrad from a fresh once-state, through the same steps
        _run_step(tracegrad, name, always)
    name, always = ONCE_PLAN[i]
    want = [[tuple(w) for w in call] for call in torch_once[i]]
    got = _run_step(tracegrad, name, always)
    _check_calls(want, got, user_file="<case>")
    counts = [len(c) for c in want]
    if always:
        assert counts == [1, 1, 1]
    elif name in SILENT_ONCE:
        assert counts == [0, 0, 0]       # an earlier step spent the same once-flag
    else:
        assert counts == [1, 0, 0]


# compiled: per call what eager gives (tracegrad against itself; the eager cases above hold it to torch)
F = tracegrad.nn.functional


def _x(*shape):
    return tracegrad.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


COMPILED = {
    "dropout2d_3d_eval": lambda x: F.dropout2d(x.reshape(2, 3, 2), training=False).sum(),
    "poisson_nll_reduce": lambda x: F.poisson_nll_loss(x, x * 0.5, reduce=False).sum(),
    "margin_ranking_size_average": lambda x: F.margin_ranking_loss(x[0], x[1], x[2].sign(), size_average=False),
    "log_softmax_3d_nodim": lambda x: F.log_softmax(x.reshape(1, 3, 4)).sum(),
    "nonleaf_view_grad": lambda x: (lambda y: y.sum() if y.grad is None else y.grad.sum())(
        x.detach().requires_grad_().view(12)),
}


def _given_tg(fn, calls=3):
    values = []
    return _record(lambda: fn(_x(3, 4)).detach().numpy(), calls, values), values


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_warns_per_call_as_eager(name):
    fn = COMPILED[name]
    eager, eager_v = _given_tg(fn)
    cf = tracegrad.compile(fn)
    compiled, compiled_v = _given_tg(cf)
    assert all(eager), eager
    assert compiled == eager
    assert cf.stats["traces"] == 1, cf.stats
    for a, b in zip(compiled_v, eager_v):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["qr", "lu_solve"])
def test_compiled_once_per_process_stays_once(name, fresh_warn_once):
    fn = {"qr": lambda x: tracegrad.qr(x[:3, :3] + 3 * tracegrad.eye(3))[1].sum(),
          "lu_solve": lambda x: tracegrad.lu_solve(x[:3, :1], *tracegrad.linalg.lu_factor(
              x[:3, :3] + 5 * tracegrad.eye(3))).sum()}[name]
    eager, _ = _given_tg(fn)
    from tracegrad._ops import warn as _warn
    _warn._WARNED_ONCE.clear()           # as in a fresh process again
    compiled, _ = _given_tg(tracegrad.compile(fn))
    assert [len(w) for w in eager] == [1, 0, 0], eager
    assert compiled == eager


@pytest.mark.xfail(strict=True, reason="the function form of a deprecated scalar-first overload "
                   "(torch.addcmul(x, 0.5, t1, t2), torch.add(x, 2, y)) names the method form's signature in "
                   "the warning's second line: Tensor methods and functions are one object in tracegrad "
                   "(_api/functions.py), and telling them apart would cost a wrapper on every torch.add call")
def test_function_form_deprecated_overload_names_its_signature(fresh_warn_once):
    texts = []
    for T in (torch, tracegrad):
        T.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as log:
                warnings.simplefilter("always")
                T.addcmul(T.ones(2), 0.5, T.ones(2), T.ones(2))
        finally:
            T.set_warn_always(False)
        texts.append([str(w.message).split(" (Triggered internally")[0].split("\n")[1] for w in log])
    assert texts[0] == ["\taddcmul(Tensor input, Number value, Tensor tensor1, Tensor tensor2, *, Tensor out = None)"]
    assert texts[1] == texts[0]
