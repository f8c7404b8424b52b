"""Which public objects take part in ``__torch_function__`` dispatch, and how they start to.

NOTE [trampolines]
Plain tensors must not pay for the protocol (DESIGN 2.1: the per-op path is the budget), and the
objects ``__torch_function__`` receives must be the public ones (``func is torch.add``). So no
public function is wrapped. Until the protocol is needed, every public function runs its own
code, as before. ``activate()`` -- run once, when the first Tensor subclass that does not opt out
is created, a ``TorchFunctionMode`` is entered, or a class statement defines
``__torch_function__`` (a duck tensor: ``install_class_observer``) -- gives each public function
a copy of itself (the implementation) and replaces the function's ``__code__`` by a trampoline
that calls ``torch_function.dispatch(public, kind, implementation, args, kwargs)``. The function
object stays the same (identities and references taken earlier keep working); from then on each
call checks its arguments (~0.5 us) and runs the implementation unless an override or mode
applies. The trampoline finds its dispatcher in a keyword-only default (``__kwdefaults__``)
and declares as many free variables as the function's closure has cells (Python checks the count
when ``__code__`` is set; the trampoline never reads them).

What takes part, and as what, follows torch 2.13 (read off torch with
``torch.overrides.get_overridable_functions`` and by calling each operator on a logging subclass):
functions torch implements in C++ pass only non-Tensor overloaded types in ``types``; those it
implements in Python (``Tensor.backward``, ``F.relu``, ``torch.split``...) count plain Tensors
too; properties pass ``Tensor.<name>.__get__``/``__set__`` and always their tensor; operators
report the method torch reports (``a + b`` is ``Tensor.add``, ``a < b`` ``Tensor.lt``).
"""
from __future__ import annotations

import builtins
import inspect
import sys
import threading
import types
from functools import partial

from . import torch_function as _tf

# Tensor attributes torch does not dispatch (or does not have)
TENSOR_NONE = frozenset({
    "__hash__", "__iter__", "__init__", "__new__", "__init_subclass__", "__torch_function__", "__str__",
    "as_subclass", "_make", "_value", "_write", "_base_tensor", "jax", "std_mean", "var_mean",
    "eig", "lstsq", "solve", "symeig", "unflatten"})
# Tensor attributes torch implements in Python (plain Tensors count among the types)
TENSOR_PY = frozenset({
    "__array__", "__contains__", "__deepcopy__", "__dlpack__", "__dlpack_device__", "__floordiv__", "__format__",
    "__ipow__", "__len__", "__pow__", "__reduce_ex__", "__repr__", "__rfloordiv__", "__rlshift__", "__rmatmul__",
    "__rmod__", "__rpow__", "__rrshift__", "__rsub__", "__rtruediv__", "backward", "dim_order", "is_shared",
    "istft", "lu", "norm", "register_hook", "register_post_accumulate_grad_hook", "resize", "resize_as",
    "share_memory_", "split", "stft", "storage", "unique", "unique_consecutive"})
# methods that run user code (hooks, callables): the calls it makes dispatch again
RUNS_USER_CODE = frozenset({"backward", "apply_", "map_", "map2_"})
# private Tensor attributes torch dispatches
TENSOR_PRIVATE = frozenset({"_version"})
# operators torch reports as another method
OPERATOR_AS = {
    "__abs__": "abs", "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__itruediv__": "div_", "__matmul__": "matmul", "__ge__": "ge", "__gt__": "gt", "__le__": "le",
    "__lt__": "lt", "__ne__": "ne", "__mod__": "remainder", "__neg__": "neg", "__pos__": "positive",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor"}
# binary operators: a TypeError from dispatch becomes NotImplemented (Python tries the other side)
BINARY_OPERATORS = frozenset(
    n for n in OPERATOR_AS if n not in ("__abs__", "__neg__", "__pos__")) | frozenset({
        "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__eq__", "__floordiv__", "__pow__",
        "__rsub__", "__rtruediv__", "__rfloordiv__", "__rpow__", "__rmod__", "__rmatmul__", "__rlshift__",
        "__rrshift__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__ipow__"})

# namespaces: torch's name, tracegrad's module, names that do not dispatch, names in Python
NAMESPACES = (
    ("torch", "tracegrad", frozenset({
        "are_deterministic_algorithms_enabled", "broadcast_shapes", "compile", "cond", "eig", "from_dlpack",
        "from_jax", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype", "get_default_device",
        "get_default_dtype", "get_deterministic_debug_mode", "get_float32_matmul_precision",
        "get_num_interop_threads", "get_num_threads", "get_rng_state", "initial_seed",
        "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_autocast_cpu_enabled", "is_autocast_enabled",
        "is_deterministic_algorithms_warn_only_enabled", "is_grad_enabled", "is_inference_mode_enabled",
        "is_storage", "is_tensor", "is_warn_always_enabled", "load", "lstsq", "manual_seed", "matrix_rank",
        "save", "seed", "set_anomaly_enabled", "set_default_device", "set_default_dtype",
        "set_default_tensor_type", "set_deterministic_debug_mode", "set_float32_matmul_precision",
        "set_flush_denormal", "set_num_interop_threads", "set_num_threads", "set_printoptions", "set_rng_state",
        "set_warn_always", "solve", "symeig", "typename", "use_deterministic_algorithms", "vmap", "while_loop"}),
     frozenset({"atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors", "cartesian_prod",
                "cdist", "chain_matmul", "einsum", "lu", "meshgrid", "norm", "split", "stft", "tensordot",
                "unique", "unique_consecutive", "unravel_index"})),
    ("torch.nn.functional", "tracegrad.nn.functional", frozenset({
        "accepts_out", "check_same_dtype", "flatten", "scalar_name", "sigmoid", "tanh", "upsample",
        "upsample_bilinear", "upsample_nearest"}),
     frozenset({
         "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices",
         "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
         "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout", "batch_norm", "binary_cross_entropy",
         "binary_cross_entropy_with_logits", "celu", "cosine_embedding_loss", "cross_entropy", "ctc_loss",
         "dropout", "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag",
         "feature_alpha_dropout", "fold", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
         "fractional_max_pool3d", "fractional_max_pool3d_with_indices", "gaussian_nll_loss", "glu", "grid_sample",
         "group_norm", "gumbel_softmax", "hardsigmoid", "hardswish", "hardtanh", "hinge_embedding_loss",
         "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm", "leaky_relu",
         "local_response_norm", "log_softmax", "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss",
         "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
         "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish", "mse_loss",
         "multi_head_attention_forward", "multi_margin_loss", "multilabel_margin_loss",
         "multilabel_soft_margin_loss", "nll_loss", "normalize", "pad", "poisson_nll_loss", "relu", "relu6",
         "rms_norm", "rrelu", "selu", "silu", "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin",
         "softsign", "tanhshrink", "threshold", "triplet_margin_loss", "triplet_margin_with_distance_loss",
         "unfold"})),
    ("torch.linalg", "tracegrad.linalg", frozenset({"accepts_out", "check_same_dtype", "eye"}), frozenset()),
    ("torch.special", "tracegrad.special", frozenset({
        "add_out", "get_default_dtype", "igamma", "igammac", "lgamma", "mvlgamma", "sigmoid", "xlog_op"}),
     frozenset()),
    ("torch.fft", "tracegrad.fft", frozenset({"accepts_out", "get_default_dtype", "to_complex", "to_dtype"}),
     frozenset()),
)
# namespaces of which only a few functions dispatch (all implemented in Python in torch)
NAMESPACES_ONLY = (("torch.autograd", "tracegrad.autograd", frozenset({"grad", "backward"})),)


def _tensor_cls():
    return _tf.PLAIN_TYPES[0]


def tensor_entries():
    """``(name, attribute, kind)`` for each Tensor method and property that dispatches."""
    out = []
    for name, attr in vars(_tensor_cls()).items():
        if name in TENSOR_NONE:
            continue
        if name.startswith("__") and name not in _DISPATCHED_DUNDERS:
            continue       # Python's own protocol methods (__init__, __hash__...) and the slots
        if name.startswith("_") and not name.startswith("__") and name not in TENSOR_PRIVATE:
            continue       # tracegrad's internals
        if isinstance(attr, property):
            out.append((name, attr, _tf.ATTR_KIND))
        elif isinstance(attr, types.FunctionType):
            kind = _tf.PY_KIND if name in TENSOR_PY else _tf.C_KIND
            out.append((name, attr, kind | (_tf.RUNS_USER_CODE if name in RUNS_USER_CODE else 0)))
    return out


# the dunders torch dispatches
_DISPATCHED_DUNDERS = frozenset(
    {n for n in TENSOR_PY if n.startswith("__")} | set(OPERATOR_AS) | BINARY_OPERATORS
    | {"__bool__", "__complex__", "__float__", "__int__", "__index__", "__getitem__", "__setitem__", "__invert__"})


def namespace_entries(with_autograd=True):
    """``(torch namespace name, name, function, kind)`` for each dispatching namespace function
    (torch's functions in Python live in ``torch.functional``; ``torch.autograd``'s two are not
    listed by torch's ``get_overridable_functions``: ``with_autograd=False`` leaves them out)."""
    out = []
    for torch_name, mod_name, none, py in NAMESPACES:
        mod = sys.modules.get(mod_name)
        if mod is None:
            continue
        for name, fn in vars(mod).items():
            if name.startswith("_") or name in none or not isinstance(fn, types.FunctionType):
                continue
            if not (getattr(fn, "__module__", None) or "").startswith("tracegrad"):
                continue
            if torch_name == "torch" and name in py:
                out.append(("torch.functional", name, fn, _tf.PY_KIND))
            else:
                out.append((torch_name, name, fn, _tf.PY_KIND if name in py else _tf.C_KIND))
    for torch_name, mod_name, only in NAMESPACES_ONLY if with_autograd else ():
        mod = sys.modules.get(mod_name)
        for name in sorted(only):
            fn = getattr(mod, name, None)
            if isinstance(fn, types.FunctionType):     # they run hooks: their calls dispatch again
                out.append((torch_name, name, fn, _tf.PY_KIND | _tf.RUNS_USER_CODE))
    return out


# ---- activation ----------------------------------------------------------------------------------
_LOCK = threading.Lock()
ACTIVE: list = [False]
_TRAMPOLINES: dict = {}     # number of free variables -> trampoline code object
IMPLEMENTATIONS: dict = {}  # id(public function) -> (it, its implementation: a copy of its old self)
_TRAMPOLINE_FILE = _tf.TRAMPOLINE_FILE


def _trampoline_code(nfree):
    code = _TRAMPOLINES.get(nfree)
    if code is None:
        names = [f"_cell{i}" for i in range(nfree)]
        src = ["def _outer():"]
        if names:
            src.append(f"    {' = '.join(names)} = None")
        src.append("    def torch_function_dispatch(*args, _tg_dispatch_=None, **kwargs):")
        if names:     # never runs: only makes the cells free variables of the trampoline
            src.append(f"        if _tg_dispatch_ is None: return ({', '.join(names)},)")
        src.append("        return _tg_dispatch_(args, kwargs)")
        src.append("    return torch_function_dispatch")
        ns: dict = {}
        # a file name inside the package: _ops/warn.py attributes warnings past these frames
        exec(compile("\n".join(src), _TRAMPOLINE_FILE, "exec"), ns)
        code = _TRAMPOLINES[nfree] = ns["_outer"]().__code__
    return code


def _operator_dispatch(public, kind, impl, args, kwargs):
    try:
        return _tf.dispatch(public, kind, impl, args, kwargs)
    except TypeError:
        if _tf.has_torch_function(args):
            return NotImplemented      # as torch's operators: let Python try the other operand
        raise


_tf.DISPATCH_CODES.add(_operator_dispatch.__code__)


def _install(fn, public, kind, operator=False):
    """Give ``fn`` a trampoline to ``dispatch(public, kind, <copy of fn>)`` (NOTE [trampolines])."""
    if id(fn) in IMPLEMENTATIONS:
        return
    impl = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    impl.__kwdefaults__ = fn.__kwdefaults__
    impl.__qualname__, impl.__module__, impl.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    impl.__dict__.update(fn.__dict__)
    sig = None
    if "__wrapped__" not in fn.__dict__:    # (a wrapper's signature is still found through __wrapped__)
        try:
            sig = inspect.signature(impl, follow_wrapped=False)
        except (TypeError, ValueError):
            pass
    IMPLEMENTATIONS[id(fn)] = (fn, impl)
    fn.__code__ = _trampoline_code(len(fn.__closure__ or ()))
    fn.__kwdefaults__ = {"_tg_dispatch_": partial(_operator_dispatch if operator else _tf.dispatch,
                                                  public, kind, impl)}
    if sig is not None:
        fn.__signature__ = sig


def activate() -> None:
    """Turn the protocol on for the process (once; NOTE [trampolines])."""
    if ACTIVE[0]:
        return
    with _LOCK:
        if ACTIVE[0]:
            return
        T = _tensor_cls()
        for name, attr, kind in tensor_entries():
            if isinstance(attr, property):
                if isinstance(attr.fget, types.FunctionType):
                    _install(attr.fget, attr.__get__, kind)
                if isinstance(attr.fset, types.FunctionType):
                    _install(attr.fset, attr.__set__, kind)
                continue
            target = OPERATOR_AS.get(name)
            public = vars(T)[target] if target is not None and target in vars(T) else attr
            _install(attr, public, kind, operator=name in BINARY_OPERATORS)
        for _, _, fn, kind in namespace_entries():
            _install(fn, fn, kind)
        ACTIVE[0] = True
        _remove_class_observer()


def deactivate() -> None:
    """Give every public function its own code back (the protocol off, plain tensors at full
    speed again). For tests, which must not leave one module's subclass slowing the next; a
    no-op while a mode is active in this thread."""
    with _LOCK:
        if not ACTIVE[0] or _tf.STATE.modes:
            return
        for fn, impl in IMPLEMENTATIONS.values():
            fn.__code__, fn.__kwdefaults__ = impl.__code__, impl.__kwdefaults__
            fn.__dict__.pop("__signature__", None)
            if "__signature__" in impl.__dict__:   # its own (argcheck's guard sets one), kept by _install
                fn.__signature__ = impl.__signature__
        IMPLEMENTATIONS.clear()
        ACTIVE[0] = False
        install_class_observer()


_tf.ACTIVATE[0] = activate


# ---- duck tensors --------------------------------------------------------------------------------
# A class that is no Tensor but defines __torch_function__ (torch's test_overrides
# DiagonalTensor) must reach its override from torch.* functions too. Nothing in its class
# statement calls tracegrad, so until the protocol is active the class statements of the process
# are observed (builtins.__build_class__, wrapped, costs about a microsecond per class statement);
# the first that defines __torch_function__ outside tracegrad (and torch) activates it; the observer is
# removed. (A class made by calling type() directly is not seen: enter a TorchFunctionMode or
# call tracegrad._tensor.overridable.activate() to turn the protocol on for it.)
_ORIGINAL_BUILD_CLASS = builtins.__build_class__
# tracegrad's own classes, and torch's (a program may import torch too): not tracegrad's duck tensors
_NOT_DUCKS = ("tracegrad", "torch")


def _observe_build_class(func, name, *bases, **kwds):
    cls = _ORIGINAL_BUILD_CLASS(func, name, *bases, **kwds)
    d = getattr(cls, "__dict__", None)
    if d is not None and "__torch_function__" in d and not str(d.get("__module__", "")).startswith(_NOT_DUCKS):
        activate()
    return cls


def install_class_observer() -> None:
    if not ACTIVE[0] and builtins.__build_class__ is _ORIGINAL_BUILD_CLASS:
        builtins.__build_class__ = _observe_build_class


def _remove_class_observer() -> None:
    if builtins.__build_class__ is _observe_build_class:
        builtins.__build_class__ = _ORIGINAL_BUILD_CLASS
