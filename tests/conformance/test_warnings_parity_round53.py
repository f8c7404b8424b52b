"""Warnings parity with torch 2.13 (round 53): the warnings that passed a fixed ``stacklevel`` to
``warnings.warn`` now go through ``_ops.warn.warn``, which names the first frame outside tracegrad.

Per call site (``CASES``), one user line runs with ``T`` = torch and ``T`` = tracegrad under an
"always" filter, twice: per call the same count of warnings, each with torch's category and first
sentence (round 52's ``_head``), and tracegrad's names this file (``w.filename == __file__``),
whatever torch names. The same again while an ``nn.LazyLinear`` is alive: its
UninitializedParameter (a ``__torch_function__`` subclass) routes calls through
torch_function.py, an extra layer a fixed ``stacklevel`` counted wrong. A few run inside
``tracegrad.compile``d functions (``COMPILED``): each call gives what eager gives, at the user's
line.
"""
import contextlib
import importlib
import io
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tracegrad  # noqa: E402

from test_warnings_parity_round51 import _a, _p, _sgd  # noqa: E402  (T.tensor, Parameter, SGD)
from test_warnings_parity_round52 import _head  # noqa: E402  (a message's first sentence)

HERE = os.path.abspath(__file__)


def _lr_plateau_epoch(T):
    T.optim.lr_scheduler.ReduceLROnPlateau(_sgd(T)).step(1.0, epoch=1)


def _sched_before_opt(T):
    T.optim.lr_scheduler.StepLR(_sgd(T), 1).step()


def _sched_epoch(T):
    opt = _sgd(T)
    sched = T.optim.lr_scheduler.StepLR(opt, 1)
    opt.step()
    sched.step(1)


def _container_subclass(T):
    type("C", (T.nn.Container,), {})


def _non_full_hook(T, module):
    module.register_backward_hook(lambda *a: None)
    module(_a(T, 1, 2).requires_grad_())


def _full_hook_dict_output(T):
    class M(T.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    m = M()
    m.register_full_backward_hook(lambda *a: None)
    m(_a(T, 2).requires_grad_())


def _full_hook_no_input_grad(T):
    m = T.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda *a: None)
    m(_a(T, 1, 2)).sum().backward()


def _meta_load(T):
    T.nn.Linear(2, 2, device="meta").load_state_dict(T.nn.Linear(2, 2).state_dict())


def _distribution_no_constraints(T):
    class D(T.distributions.Distribution):
        pass

    D(validate_args=True)


def _grad_mode_class(T):
    class K:
        def __init__(self):
            pass

    T.no_grad()(K)


def _function_instance(T):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

    Fn()


def _saved_variables(T):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ctx.saved_variables[0] * g

    Fn.apply(_a(T, 2).requires_grad_()).sum().backward()


def _sdp_kernel(T):
    with T.backends.cuda.sdp_kernel():
        pass


def _pytree_register(T):
    class P:
        pass

    T.utils._pytree._register_pytree_node(P, lambda p: ([], None), lambda v, c: P())


def _hook(grad):
    return grad


def _save_hooked(T):
    x = _a(T, 2).requires_grad_()
    x.register_hook(_hook)                 # one function: the message names it
    T.save(x, io.BytesIO())


def _pin_memory(T):
    list(T.utils.data.DataLoader([1, 2], pin_memory=True))


def _sub(T, name):
    """``T``'s submodule ``name`` (``autograd.gradcheck`` is also a function's name)."""
    return importlib.import_module(f"{T.__name__}.{name}")


def _script_method(self):
    return None


def _flop_counter_mods(T):
    _sub(T, "utils.flop_counter").FlopCounterMode(mods=T.nn.Linear(1, 1), display=False)


def _mode_push(T):
    class Mode(T.overrides.TorchFunctionMode):
        pass

    Mode.push()


def _raising(T, fn, error):
    """``fn()``, which raises ``error`` in both libraries (its warnings come first)."""
    with pytest.raises(error):
        fn()


def _anomaly_nan(T):
    x = _a(T, 1).neg().requires_grad_()
    with T.autograd.detect_anomaly():   # warns on entering, and names the failing node
        _raising(T, lambda: T.sqrt(x).sum().backward(), RuntimeError)


def _non_full(T, forward, *args):
    m = type("M", (T.nn.Module,), {"forward": forward})()
    m.register_backward_hook(lambda *a: None)
    m(*args)


def _always_call_hook_raises(T):
    def forward(self, x):
        raise ValueError("forward")

    def hook(*args):
        raise KeyError("hook")

    m = type("M", (T.nn.Module,), {"forward": forward})()
    m.register_forward_hook(hook, always_call=True)
    _raising(T, lambda: m(_a(T, 1)), ValueError)


def _mark_dirty_not_input(T):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = T.ones(2)
            ctx.mark_dirty(y)
            return y

    Fn.apply(_a(T, 2).requires_grad_())


def _load(T, **kwargs):
    buf = io.BytesIO()
    T.save(_a(T, 2), buf)
    buf.seek(0)
    T.load(buf, **kwargs)


# per-call warnings, one case per call site (file: line of tracegrad's)
CASES = {
    # optim
    "lr_plateau_epoch": _lr_plateau_epoch,
    "optimizer_duplicate_params": lambda T: (lambda p: T.optim.SGD([p, p], lr=0.1))(_p(T, 2)),
    "scheduler_step_before_optimizer": _sched_before_opt,
    "scheduler_step_epoch": _sched_epoch,
    "onecycle_get_lr": lambda T: T.optim.lr_scheduler.OneCycleLR(_sgd(T), 1.0, total_steps=5).get_lr(),
    # nn.Module and containers
    "Container": lambda T: T.nn.Container(),
    "Container_subclass": _container_subclass,
    "non_full_hook_multiple_nodes": lambda T: _non_full_hook(T, T.nn.Sequential(T.nn.Linear(2, 2), T.nn.ReLU())),
    "module_to_complex": lambda T: T.nn.Linear(2, 2).to(T.complex64),
    "state_dict_positional": lambda T: T.nn.Linear(2, 2).state_dict({}, ""),
    "load_state_dict_into_meta": _meta_load,
    "full_hook_dict_output": _full_hook_dict_output,
    "non_full_hook_list_output": lambda T: _non_full(T, lambda self, x: [x * 2], _a(T, 2).requires_grad_()),
    "non_full_hook_non_tensor_input": lambda T: _non_full(T, lambda self, x, y: x * y, _a(T, 2).requires_grad_(), 3),
    "non_full_hook_outputs_of_two_nodes": lambda T: _non_full(T, lambda self, x: (x * 2, x + 1),
                                                              _a(T, 2).requires_grad_()),
    "forward_hook_always_call_raises": _always_call_hook_raises,
    "full_hook_no_input_grad": _full_hook_no_input_grad,
    "InstanceNorm_num_features": lambda T: T.nn.InstanceNorm1d(3)(_a(T, 1, 4, 5)),
    "RNN_dropout_one_layer": lambda T: T.nn.RNN(2, 2, dropout=0.5),
    "Hardtanh_min_value": lambda T: T.nn.Hardtanh(min_value=-2.0),
    "Hardtanh_max_value": lambda T: T.nn.Hardtanh(max_value=2.0),
    "encoder_nested_tensor": lambda T: T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(4, 2, 8), 1),
    # nn.init, nn.functional, nn.utils
    "trunc_normal_far_mean": lambda T: T.nn.init.trunc_normal_(_a(T, 3), mean=5.0, a=-1.0, b=1.0),
    "kaiming_uniform_empty": lambda T: T.nn.init.kaiming_uniform_(T.empty(0, 3)),
    "kaiming_normal_empty": lambda T: T.nn.init.kaiming_normal_(T.empty(0, 3)),
    "init_normal_alias": lambda T: T.nn.init.normal(_a(T, 3)),
    "upsample": lambda T: T.nn.functional.upsample(_a(T, 1, 1, 2), scale_factor=2),
    "upsample_nearest": lambda T: T.nn.functional.upsample_nearest(_a(T, 1, 1, 2), scale_factor=2),
    "embedding_bag_argument_order": lambda T: T.nn.functional.embedding_bag(_a(T, 3, 2), T.tensor([[0, 1]])),
    "mse_loss_elementwise_mean": lambda T: T.nn.functional.mse_loss(_a(T, 2), _a(T, 2), reduction="elementwise_mean"),
    "causal_lower_right_longer_query": lambda T: _sub(T, "nn.attention.bias").causal_lower_right(3, 2)._materialize(),
    "mse_loss_size_average": lambda T: T.nn.functional.mse_loss(_a(T, 2), _a(T, 2), size_average=True),
    "l1_loss_reduce": lambda T: T.nn.functional.l1_loss(_a(T, 2), _a(T, 2), reduce=False),
    "MSELoss_size_average": lambda T: T.nn.MSELoss(size_average=False),
    "linear_cross_entropy_options_ignored": lambda T: T.nn.functional.linear_cross_entropy(
        _a(T, 2, 3), _a(T, 4, 3), T.tensor([0, 1]), label_smoothing=0.1, options=T.nn.LinearCrossEntropyOptions()),
    "affine_grid_unit_size": lambda T: T.nn.functional.affine_grid(_a(T, 1, 2, 3), [1, 1, 1, 2], align_corners=True),
    "clip_grad_norm_empty_generator": lambda T: T.nn.utils.clip_grad_norm_((p for p in []), 1.0),
    "clip_grad_norm": lambda T: T.nn.utils.clip_grad_norm([_p(T, 2)], 1.0),
    "weight_norm": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2)),
    "stateless_functional_call": lambda T: T.nn.utils.stateless.functional_call(T.nn.Linear(2, 2), {}, (_a(T, 1, 2),)),
    # autograd
    "Variable_volatile": lambda T: T.autograd.Variable(_a(T, 2), volatile=True),
    "no_grad_decorates_class": _grad_mode_class,
    "get_numerical_jacobian": lambda T: _sub(T, "autograd.gradcheck").get_numerical_jacobian(
        lambda x: x * 2, (T.ones(2, dtype=T.float64, requires_grad=True),)),
    "get_analytical_jacobian": lambda T: (lambda x: _sub(T, "autograd.gradcheck").get_analytical_jacobian(
        (x,), x * 2))(T.ones(2, dtype=T.float64, requires_grad=True)),
    "Function_instantiated": _function_instance,
    "mark_dirty_not_input": _mark_dirty_not_input,
    "anomaly_nan_in_backward": _anomaly_nan,
    "detect_anomaly": lambda T: T.autograd.detect_anomaly(),
    "saved_variables": _saved_variables,
    # distributions
    "Wishart_low_df": lambda T: T.distributions.Wishart(T.tensor(2.5), covariance_matrix=T.eye(3)),
    "Distribution_without_arg_constraints": _distribution_no_constraints,
    # torch namespace, backends, amp
    "is_compiling": lambda T: T._utils.is_compiling(),
    "check_is_size": lambda T: T._check_is_size(3),
    "mkldnn_set_flags_allow_tf32": lambda T: T.backends.mkldnn.set_flags(None, None, True),
    "set_float32_matmul_precision_unknown": lambda T: T.set_float32_matmul_precision("fastest"),
    "sdp_kernel": _sdp_kernel,
    "is_autocast_cpu_enabled": lambda T: T.is_autocast_cpu_enabled(),
    "cpu_amp_autocast": lambda T: T.cpu.amp.autocast(),
    "jit_script_method": lambda T: T.jit.script_method(_script_method),
    "MaskedTensor_requires_grad": lambda T: T.masked.MaskedTensor(_a(T, 2).requires_grad_(), T.tensor([True, False])),
    # utils, testing, profiler, overrides
    "pytree_register_private": _pytree_register,
    "pytree_register_private_to_str_fn": lambda T: T.utils._pytree._register_pytree_node(
        type("Q", (), {}), lambda q: ([], None), lambda v, c: None, to_str_fn=str),
    "pytree_children_specs": lambda T: T.utils._pytree.tree_flatten([1])[1].children_specs,
    "pytree_LeafSpec": lambda T: T.utils._pytree.LeafSpec(),
    "save_tensor_with_hook": _save_hooked,
    "dataloader_pin_memory": _pin_memory,
    "checkpoint_no_input_requires_grad": lambda T: T.utils.checkpoint.checkpoint(lambda x: x * 2, _a(T, 2),
                                                                                 use_reentrant=True),
    "checkpoint_without_use_reentrant": lambda T: T.utils.checkpoint.checkpoint(lambda x: x * 2,
                                                                                _a(T, 2).requires_grad_()),
    "checkpoint_sequential_without_use_reentrant": lambda T: T.utils.checkpoint.checkpoint_sequential(
        T.nn.Sequential(T.nn.Identity(), T.nn.Identity()), 2, _a(T, 2).requires_grad_()),
    "load_pickle_args_with_weights_only": lambda T: _load(T, weights_only=True, encoding="utf-8"),
    "flop_counter_mods": _flop_counter_mods,
    "profiler_schedule_no_warmup": lambda T: T.profiler.schedule(wait=1, warmup=0, active=1),
    "testing_make_tensor_low_eq_high": lambda T: T.testing.make_tensor((2,), dtype=T.float32, device="cpu",
                                                                       low=1, high=1),
    "testing_assert_allclose": lambda T: T.testing.assert_allclose(_a(T, 2), _a(T, 2)),
    "TorchFunctionMode_push": _mode_push,
}


def _given(T, fn, calls=2):
    """Per call of ``fn(T)`` under an "always" filter: its warnings as (category name, first
    sentence, file)."""
    out = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        for _ in range(calls):
            n = len(log)
            fn(T)
            out.append([(w.category.__name__, _head(w.message), w.filename) for w in log[n:]])
    return out


def _check(want, got):
    """tracegrad gives per call torch's warnings (category, first sentence), each at this file."""
    assert all(want), want                                    # torch warns on each call
    assert [[w[:2] for w in c] for c in got] == [[w[:2] for w in c] for c in want], (want, got)
    assert all(w[2] == HERE for c in got for w in c), got     # the user's line, whatever torch names


@pytest.mark.parametrize("name", sorted(CASES))
def test_warning_names_the_user_line(name):
    _check(_given(torch, CASES[name]), _given(tracegrad, CASES[name]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_warning_names_the_user_line_with_a_lazy_module_alive(name):
    runs = []
    for T in (torch, tracegrad):
        lazy = T.nn.LazyLinear(2)        # holds an UninitializedParameter while the case runs
        runs.append(_given(T, CASES[name]))
        del lazy
    _check(*runs)


def _dispatch_subclass():
    class S(tracegrad.Tensor):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return NotImplemented


# warnings of tracegrad's own (no torch counterpart): at the user's line too
OWN = {
    "torch_dispatch_subclass": _dispatch_subclass,
    "share_memory_": lambda: tracegrad.ones(2).share_memory_(),
    "autocast_unsupported_device": lambda: tracegrad.autocast("xla"),
}


@pytest.mark.parametrize("name", sorted(OWN))
def test_own_warning_names_the_user_line(name):
    for lazy in (None, tracegrad.nn.LazyLinear(2)):
        got = _given(None, lambda _: OWN[name]())
        assert [len(c) for c in got] == [1, 1], got
        assert all(w[:1] == ("UserWarning",) and w[2] == HERE for c in got for w in c), got
    del lazy


def test_warning_through_contextlib_names_the_user_line():
    """A warning given by a generator context manager (``@contextlib.contextmanager``) names the
    ``with`` line, not contextlib's ``__enter__``, also when entered through an ExitStack."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        with contextlib.ExitStack() as stack:
            stack.enter_context(tracegrad.backends.cuda.sdp_kernel())
    assert [(w.category, w.filename) for w in log] == [(FutureWarning, HERE)]


# compiled: per call what eager gives, at the user's line
F = tracegrad.nn.functional


def _x(*shape):
    return tracegrad.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


COMPILED = {
    "upsample": lambda x: F.upsample(x.reshape(1, 3, 4), scale_factor=2).sum(),
    "mse_loss_size_average": lambda x: F.mse_loss(x, x * 0.5, size_average=True),
    "embedding_bag_argument_order": lambda x: F.embedding_bag(x, tracegrad.tensor([[0, 1]])).sum(),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_warning_names_the_user_line(name):
    fn = COMPILED[name]
    cf = tracegrad.compile(fn)
    eager = _given(None, lambda _: fn(_x(3, 4)), calls=3)
    compiled = _given(None, lambda _: cf(_x(3, 4)), calls=3)
    assert all(eager), eager
    assert compiled == eager
    assert all(w[2] == HERE for c in compiled for w in c), compiled
    assert cf.stats["traces"] == 1, cf.stats


# given once per process in torch (TORCH_WARN_ONCE), every call under set_warn_always(True); each
# case has a once-flag of its own
ONCE = {
    "H_0d": "T.tensor(1.0).H",
    "mT_0d": "T.tensor(1.0).mT",
    "mH_0d": "T.tensor(1.0).mH",
    "adjoint_0d": "T.tensor(1.0).adjoint()",
    "stft_return_complex_false": "T.stft(T.ones(16), 4, window=T.ones(4), return_complex=False)",
    "frombuffer_readonly": "T.frombuffer(b'abcd', dtype=T.uint8)",
}
ONCE_PLAN = [(name, False) for name in ONCE] + [("H_0d", True), ("frombuffer_readonly", True)]


def _run_step(T, name, always):
    """Three calls of ONCE[name] (a line of this file) under set_warn_always(always): per call,
    the warnings given."""
    code = compile(ONCE[name], HERE, "eval")
    T.set_warn_always(always)
    try:
        return _given(T, lambda T: eval(code, {"T": T}), calls=3)
    finally:
        T.set_warn_always(False)


_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import test_warnings_parity_round53 as m
print(json.dumps([m._run_step(torch, name, always) for name, always in m.ONCE_PLAN]))
"""


@pytest.fixture(scope="module")
def torch_once():
    """torch's warnings for ONCE_PLAN, step by step, from a fresh interpreter (torch's once-flags
    cannot be reset in-process)."""
    import json
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.dirname(HERE)], capture_output=True, text=True,
                       timeout=240, env={**os.environ, "PYTHONWARNINGS": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("i", range(len(ONCE_PLAN)), ids=[f"{n}-{'always' if a else 'once'}" for n, a in ONCE_PLAN])
def test_once_per_process_warning_names_the_user_line(torch_once, i, fresh_warn_once):
    name, always = ONCE_PLAN[i]
    want = [[tuple(w) for w in call] for call in torch_once[i]]
    assert [len(c) for c in want] == ([1, 1, 1] if always else [1, 0, 0]), want
    got = _run_step(tracegrad, name, always)
    assert [[w[:2] for w in c] for c in got] == [[w[:2] for w in c] for c in want], (want, got)
    assert all(w[2] == HERE for c in got for w in c), got
    lazy = tracegrad.nn.LazyLinear(2)    # through the __torch_function__ layer: still the user's line
    got = _run_step(tracegrad, name, True)
    del lazy
    assert [len(c) for c in got] == [1, 1, 1] and all(w[2] == HERE for c in got for w in c), got
