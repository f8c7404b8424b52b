"""Names real programs import that tracegrad lacked (round 22): the private helpers that
vendored copies of torch's optimizer sources import from ``torch.optim.optimizer``, torch's
functional optimizer forms (``torch.optim._functional.adam`` ...), ``torch.backends.mkldnn`` /
``openmp``, ``torch.__config__`` and ``torch.utils.collect_env``. torch 2.13 is the oracle."""
import math

import numpy as np
import pytest

import tracegrad
import tracegrad.optim._functional as tF
import tracegrad.optim.optimizer as tO

torch = pytest.importorskip("torch")
import torch.optim._functional as F  # noqa: E402
import torch.optim.optimizer as O  # noqa: E402


def _np(t):
    t = t.detach()
    if t.is_complex():
        t = (tracegrad if isinstance(t, tracegrad.Tensor) else torch).view_as_real(t)
    return np.asarray(t.tolist())


def _vendored_adamw(lib, opt):
    """An AdamW written the way repositories vendor torch's sources: the private helpers of
    ``<lib>.optim.optimizer`` and its shared doc strings (``opt``: that module)."""
    # torch 2.13 dropped _dispatch_sqrt (older copies import it); on a float it is math.sqrt
    dispatch_sqrt = getattr(opt, "_dispatch_sqrt", math.sqrt)

    class VendoredAdamW(opt.Optimizer):
        __doc__ = "AdamW.\n    " + "\n    ".join([opt._params_doc, opt._foreach_doc, opt._maximize_doc,
                                                   opt._capturable_doc, opt._differentiable_doc, opt._fused_doc])

        def __init__(self, params, lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                          differentiable=False, foreach=None))
            self.grad_mode_in_step = []

        @opt._use_grad_for_differentiable
        def step(self, closure=None):
            self.grad_mode_in_step.append(lib.is_grad_enabled())
            for group in self.param_groups:
                params, grads, avgs, sqs, steps = [], [], [], [], []
                for p in group["params"]:
                    state = self.state[p]
                    if not state:
                        state["step"] = lib.tensor(0.0, dtype=opt._get_scalar_dtype())
                        state["exp_avg"] = lib.zeros_like(p)
                        state["exp_avg_sq"] = lib.zeros_like(p)
                    params.append(p)
                    grads.append(p.grad)
                    avgs.append(state["exp_avg"])
                    sqs.append(state["exp_avg_sq"])
                    steps.append(state["step"])
                fused, foreach = opt._default_to_fused_or_foreach(params, False, use_fused=False)
                assert (fused, foreach) == (False, False)     # CPU: the for-loop path
                opt._view_as_real(params, grads, avgs, sqs)
                beta1, beta2 = group["betas"]
                for s in steps:
                    s += 1
                bias1 = opt._stack_if_compiling([1 - beta1 ** opt._get_value(s) for s in steps])
                for p, g, m, v, s, bc1 in zip(params, grads, avgs, sqs, steps, bias1):
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    m.lerp_(g, 1 - beta1)
                    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                    bc2_sqrt = dispatch_sqrt(1 - beta2 ** opt._get_value(s))
                    denom = (v.sqrt() / bc2_sqrt).add_(group["eps"])
                    p.addcdiv_(m, denom, value=-group["lr"] / bc1)

    return VendoredAdamW


def _train(lib, make_opt, steps=2):
    w = lib.tensor([[0.5, -1.0, 2.0], [0.25, 1.5, -0.75]], requires_grad=True)
    z = lib.tensor([1.0 + 2.0j, -0.5 + 0.25j, 0.75 - 1.0j], dtype=lib.complex64, requires_grad=True)
    x = lib.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]])
    opt = make_opt([w, z])
    for _ in range(steps):
        opt.zero_grad()
        loss = (x @ w.t()).tanh().sum() + (z.abs() ** 2).sum()
        loss.backward()
        opt.step()
    return opt, w, z


def test_vendored_adamw_trains_like_torch():
    ours_opt, w, z = _train(tracegrad, _vendored_adamw(tracegrad, tO))
    theirs_opt, tw, tz = _train(torch, _vendored_adamw(torch, O))
    ref_opt, rw, rz = _train(torch, lambda ps: torch.optim.AdamW(ps, lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1))
    for a, b, c in [(w, tw, rw), (z, tz, rz)]:
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(a), _np(c), rtol=1e-5, atol=1e-6)
    assert ours_opt.grad_mode_in_step == theirs_opt.grad_mode_in_step == [False, False]
    assert tracegrad.is_grad_enabled()                   # restored after step
    st = ours_opt.state[z]
    assert st["exp_avg"].dtype == tracegrad.complex64 and st["step"].dtype == tracegrad.float32
    assert float(st["step"]) == 2.0
    assert "maximize" in type(ours_opt).__doc__ and "capturable" in type(ours_opt).__doc__


def test_optimizer_private_helpers_match_torch():
    t3, tt3 = tracegrad.tensor([2.5]), torch.tensor([2.5])
    assert tO._get_value(tracegrad.tensor(3.0)) == O._get_value(torch.tensor(3.0)) == 3.0
    assert tO._get_value(1.5) == 1.5 and type(tO._get_value(tracegrad.tensor(2))) is int
    assert tO._to_scalar(t3).shape == O._to_scalar(tt3).shape == ()
    assert tO._to_scalar(0.5) == 0.5
    assert tO._stack_if_compiling([1.0, 2.0]) == O._stack_if_compiling([1.0, 2.0]) == [1.0, 2.0]
    assert tO._dispatch_sqrt(9.0) == 3.0 and float(tO._dispatch_sqrt(tracegrad.tensor(4.0))) == 2.0
    assert isinstance(tO._dispatch_sqrt(tracegrad.tensor(4.0)), tracegrad.Tensor)
    old = tracegrad.get_default_dtype()
    try:
        assert str(tO._get_scalar_dtype()).split(".")[-1] == str(O._get_scalar_dtype()).split(".")[-1] == "float32"
        tracegrad.set_default_dtype(tracegrad.float64)
        assert tO._get_scalar_dtype() is tracegrad.float64 and tO._get_scalar_dtype(is_fused=True) is tracegrad.float32
    finally:
        tracegrad.set_default_dtype(old)
    # torch's default choice for CPU tensors: fused only when asked and floating, never foreach
    for args in [(False, False), (False, True), (True, True)]:
        want = O._default_to_fused_or_foreach([torch.zeros(2), None], *args)
        assert tO._default_to_fused_or_foreach([tracegrad.zeros(2), None], *args) == want
    assert tO._default_to_fused_or_foreach([tracegrad.nn.Parameter(tracegrad.zeros(2))], False, True) == \
        O._default_to_fused_or_foreach([torch.nn.Parameter(torch.zeros(2))], False, True) == (True, False)
    assert tO._get_capturable_supported_devices(False) == [d for d in O._get_capturable_supported_devices(False)
                                                          if d != "privateuseone"] + ["privateuseone"]
    assert "cpu" not in tO._get_capturable_supported_devices()
    with pytest.raises(RuntimeError, match="fused=True"):
        O._device_dtype_check_for_fused(torch.zeros(2, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="fused=True"):
        tO._device_dtype_check_for_fused(tracegrad.zeros(2, dtype=tracegrad.int64))
    tO._device_dtype_check_for_fused(tracegrad.zeros(2))
    # _view_as_real swaps list entries for real views: writes reach the complex tensor
    c = tracegrad.tensor([1 + 1j, 2 - 1j])
    r = tracegrad.zeros(3)
    ps, gs = [c, r], [c.clone(), r]
    tO._view_as_real(ps, gs)
    assert ps[0].shape == (2, 2) and gs[0].shape == (2, 2) and ps[1] is r and gs[1] is r
    ps[0].add_(1)
    assert c.tolist() == [2 + 2j, 3 + 0j]
    assert tO._disable_dynamo_if_unsupported(single_tensor_fn=None)(len)([1, 2]) == 2
    assert tO._foreach_supported_types == [tracegrad.Tensor, tracegrad.nn.Parameter]
    # grouping parallel lists by (device, dtype) for a foreach update, as torch (both spellings)
    from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype as torch_group
    from tracegrad.utils._foreach_utils import _group_tensors_by_device_and_dtype as ours_group
    ours = _foreach_sgd(tracegrad, tO, ours_group)
    theirs = _foreach_sgd(torch, O, torch_group)
    assert ours[2] == theirs[2] == {"float32": [0, 2], "float64": [1]}
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):    # writes reach the original tensors
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6)
    lists = [[tracegrad.zeros(1), tracegrad.zeros(1, dtype=tracegrad.float64)], [None, None]]
    got = tracegrad.optim.Optimizer._group_tensors_by_device_and_dtype(lists)
    assert sorted(str(k[1]) for k in got) == ["tracegrad.float32", "tracegrad.float64"]
    assert all(idx == [] and bs == [None] for (_, bs), idx in got.values())
    assert tO._group_tensors_by_device_and_dtype(lists, True).keys() == got.keys()
    import tracegrad.utils._foreach_utils as fu
    import torch.utils._foreach_utils as tfu
    assert fu._get_foreach_kernels_supported_devices() == tO._get_foreach_kernels_supported_devices() == \
        [d if d != tfu.torch._C._get_privateuse1_backend_name() else "privateuseone"
         for d in tfu._get_foreach_kernels_supported_devices()]
    assert fu._has_foreach_support([tracegrad.zeros(1), None], tracegrad.device("cpu")) is \
        tfu._has_foreach_support([torch.zeros(1), None], torch.device("cpu")) is True
    for group, lib in [(ours_group, tracegrad), (torch_group, torch)]:
        one, two = lib.zeros(1), lib.ones(1)
        (lists, _), = group([[one, two], []]).values()       # an empty later list is allowed
        assert lists[0][0] is one and lists[0][1] is two and lists[1] == []
        for bad in ([[]], [[one, two], [one]]):
            with pytest.raises(RuntimeError):
                group(bad)
    # while compiling, _get_value keeps the tensor (no host read of a traced value)
    f = tracegrad.compile(lambda t: tO._get_value(t) * 2)
    out = f(tracegrad.tensor(3.0))
    assert isinstance(out, tracegrad.Tensor) and float(out) == 6.0
    # older vendored sources ask torch._utils.is_compiling (deprecated: a warning, same answer)
    for lib in (torch, tracegrad):
        with pytest.warns(UserWarning, match="compiler.is_compiling"):
            assert lib._utils.is_compiling() is False
    with pytest.warns(UserWarning, match="compiler.is_compiling"):
        g = tracegrad.compile(lambda t: t * (2.0 if tracegrad._utils.is_compiling() else 3.0))
        assert float(g(tracegrad.tensor(1.0))) == 2.0


def _foreach_sgd(lib, opt, group):
    """The foreach branch of a vendored SGD: tensors grouped by (device, dtype), one
    ``_foreach_*`` call per group; returns {dtype name: indices} of the grouping."""
    params = [lib.tensor([1.0, -2.0]), lib.tensor([0.5], dtype=lib.float64), lib.tensor([3.0, 0.25, 1.0])]
    grads = [lib.tensor([0.5, 0.25]), lib.tensor([-1.0], dtype=lib.float64), lib.tensor([0.1, 0.2, -0.3])]
    bufs = [None, lib.tensor([0.2], dtype=lib.float64), None]
    groups = group([params, grads, bufs], with_indices=True)
    seen = {}
    for (device, dtype), ((ps, gs, bs), indices) in groups.items():
        assert device.type == "cpu"
        seen[str(dtype).split(".")[-1]] = indices
        lib._foreach_mul_(gs, 0.5)
        lib._foreach_add_(ps, gs, alpha=-0.1)
    return params, grads, seen


def _fresh(lib, value):
    return lib.tensor(value)


# name: (state lists built from (lib, p) -> list of lists, keyword arguments)
_P = [0.5, -1.0, 2.0]
_G = ([0.3, -0.2, 0.1], [-0.1, 0.4, 0.25])
_FUNCTIONAL = {
    "adam": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
             dict(amsgrad=True, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, eps=1e-8, maximize=False)),
    "adamw": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
              dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, eps=1e-8, maximize=True)),
    "sgd": (lambda L, p: [[None]],
            dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.1, nesterov=False, maximize=True)),
    "rmsprop": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
                dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.5, centered=True)),
    "adagrad": (lambda L, p: [[L.full_like(p, 0.1)], [L.tensor(0.0)]],
                dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, eps=1e-10, maximize=False)),
    "adadelta": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
                 dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1, maximize=False)),
    "adamax": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
               dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1)),
    "nadam": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(1.0)], [L.tensor(0.0)]],
              dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, momentum_decay=4e-3, eps=1e-8,
                   decoupled_weight_decay=True)),
    "radam": (lambda L, p: [[L.zeros_like(p)], [L.zeros_like(p)], [L.tensor(0.0)]],
              dict(beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.1, eps=1e-8)),
    "rprop": (lambda L, p: [[L.zeros_like(p)], [L.full_like(p, 0.01)], [L.tensor(0.0)]],
              dict(step_size_min=1e-6, step_size_max=50.0, etaminus=0.5, etaplus=1.2)),
    "asgd": (lambda L, p: [[L.zeros_like(p)], [L.tensor(1.0)], [L.tensor(0.1)], [L.tensor(0.0)]],
             dict(lambd=1e-4, lr=0.1, t0=1.0, alpha=0.75, weight_decay=0.1)),
}


def _run_functional(L, mod, name):
    make, kw = _FUNCTIONAL[name]
    p = L.tensor(_P)
    lists = make(L, p)
    fn = getattr(mod, name)
    for g in _G:
        fn([p], [L.tensor(g)], *lists, **kw)
    return p, lists


def test_functional_forms_match_torch():
    for name in _FUNCTIONAL:
        p, lists = _run_functional(tracegrad, tF, name)
        tp, tlists = _run_functional(torch, F, name)
        np.testing.assert_allclose(_np(p), _np(tp), rtol=1e-5, atol=1e-7, err_msg=name)
        assert not np.allclose(_np(p), _P), name          # the two steps moved the parameter
        for a, b in zip(lists, tlists):
            assert (a[0] is None) == (b[0] is None), name
            if a[0] is not None:     # moments, step counts, sgd's buffer made on the first step
                np.testing.assert_allclose(_np(a[0]), _np(b[0]), rtol=1e-5, atol=1e-7, err_msg=name)
    # a compiled step calling a functional form updates the same state (step counts stay tensors)
    kw = _FUNCTIONAL["adamw"][1]
    p = tracegrad.tensor(_P)
    m, v, s = tracegrad.zeros_like(p), tracegrad.zeros_like(p), tracegrad.tensor(0.0)
    step = tracegrad.compile(lambda g: tF.adamw([p], [g], [m], [v], [], [s], **kw))
    for g in _G:
        step(tracegrad.tensor(g))
    tp, tlists = _run_functional(torch, F, "adamw")
    np.testing.assert_allclose(_np(p), _np(tp), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_np(v), _np(tlists[1][0]), rtol=1e-5, atol=1e-9)
    assert float(s) == 2.0
    # the per-optimizer modules export the same functions, as torch's
    from tracegrad.optim import adamw as adamw_module, sgd as sgd_module
    assert adamw_module.adamw is tF.adamw and "adamw" in adamw_module.__all__
    from torch.optim.sgd import sgd as torch_sgd
    assert sgd_module.sgd is tF.sgd and torch_sgd is F.sgd
    # state steps must be tensors (the old float-step API), as torch
    for lib, mod in [(torch, F), (tracegrad, tF)]:
        p = lib.zeros(3)
        with pytest.raises(RuntimeError, match="state_steps"):
            mod.adam([p], [p], [p.clone()], [p.clone()], [], [0.0], amsgrad=False, beta1=0.9, beta2=0.99,
                     lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)


def test_backends_mkldnn_openmp_config_collect_env():
    import tracegrad.backends.mkldnn as mk
    # no oneDNN / OpenMP in an XLA build (torch's CPU wheel has both: True there)
    assert tracegrad.backends.mkldnn.is_available() is False and mk.is_acl_available() is False
    assert tracegrad.backends.openmp.is_available() is False
    assert tracegrad.backends.mkl.is_available() is False       # no oneMKL either
    # nor NNPACK: torch._nnpack_available gates NNPACK-only tests (test/nn/test_convolution.py)
    assert tracegrad._nnpack_available() is False and isinstance(torch._nnpack_available(), bool)
    with tracegrad.backends.mkl.verbose(tracegrad.backends.mkl.VERBOSE_ON) as v:
        assert v.enable == 1
    assert torch.backends.mkldnn.is_available() in (True, False)
    names = ("enabled", "deterministic", "allow_tf32")
    assert [getattr(mk, n) for n in names] == [getattr(torch.backends.mkldnn, n) for n in names]
    for m in (mk, torch.backends.mkldnn):
        with m.flags(enabled=False, deterministic=True):
            assert (m.enabled, m.deterministic) == (False, True)
        assert (m.enabled, m.deterministic) == (True, False)
        with pytest.raises(ZeroDivisionError):
            with m.flags(enabled=False):
                1 / 0
        assert m.enabled is True
    mk.enabled = False
    try:
        assert tracegrad.backends.mkldnn.enabled is False
    finally:
        mk.enabled = True
    assert mk.set_flags(None, None, None, None) == torch.backends.mkldnn.set_flags(None, None, None, None) \
        == (True, False, None, "none")
    for m in (mk, torch.backends.mkldnn):   # TF32 on oneDNN: Intel GPUs only; a warning, stays None
        with pytest.warns(UserWarning, match="TF32"):
            m.set_flags(_allow_tf32=True)
        assert m.allow_tf32 is None
    with mk.verbose(mk.VERBOSE_ON) as v:
        assert v.level == 1
    with pytest.raises(RuntimeError, match="VERBOSE_OFF"):
        mk.verbose(7)
    # torch.__config__: the same functions, describing tracegrad's build honestly
    show, par = tracegrad.__config__.show(), tracegrad.__config__.parallel_info()
    assert isinstance(torch.__config__.show(), str) and "at::get_num_threads()" in torch.__config__.parallel_info()
    import jax
    assert show.startswith("tracegrad built with:") and f"JAX {jax.__version__}" in show
    assert "torch 2.13" in show and "oneDNN" in show
    assert f"at::get_num_threads() : {tracegrad.get_num_threads()}" in par
    assert f"XLA backend : {jax.default_backend()}" in par
    import tracegrad.utils.collect_env as ce
    import torch.utils.collect_env as tce
    env = ce.get_env_info()
    assert isinstance(env, ce.SystemEnv) and hasattr(tce, "SystemEnv")
    assert env.jax_version == jax.__version__ and env.xla_backend == jax.default_backend()
    assert env.torch_semantics_version == str(tracegrad.__version__)
    assert env.is_cuda_available == tracegrad.cuda.is_available()
    pretty = ce.get_pretty_env_info()
    assert f"JAX version: {jax.__version__}" in pretty and "Is CUDA available: " in pretty
    assert tracegrad.utils.collect_env is ce
