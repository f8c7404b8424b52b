"""Bad-input parity table: hundreds of wrong calls generated from a compact table, each run
with torch (the oracle) and tracegrad. tracegrad must raise the same exception class, and its
message must not carry another library's text (JAX, XLA, numpy). Cases torch accepts must be
accepted too (valid edge cases sit in the same table)."""
import itertools

import pytest

import tracegrad

from _bad_input_helpers import assert_gist, assert_same_class

torch = pytest.importorskip("torch")

CASES = {}


def case(name, fn):
    assert name not in CASES, name
    CASES[name] = fn


# ---- binary ops: shapes that do not broadcast (RuntimeError) -----------------------------
BINARY = {
    "add": lambda T, a, b: a + b, "sub": lambda T, a, b: a - b, "mul": lambda T, a, b: a * b,
    "div": lambda T, a, b: a / b, "pow": lambda T, a, b: a ** b, "floordiv": lambda T, a, b: a // b,
    "mod": lambda T, a, b: a % b, "maximum": lambda T, a, b: T.maximum(a, b),
    "minimum": lambda T, a, b: T.minimum(a, b), "atan2": lambda T, a, b: T.atan2(a, b),
    "eq": lambda T, a, b: a == b, "lt": lambda T, a, b: a < b, "ge": lambda T, a, b: a >= b,
    "where": lambda T, a, b: T.where(a > 0, a, b), "lerp": lambda T, a, b: T.lerp(a, b, 0.5),
    "fmod": lambda T, a, b: T.fmod(a, b), "bitwise_and": lambda T, a, b: (a > 0) & (b > 0),
    "logical_or": lambda T, a, b: T.logical_or(a, b), "isclose": lambda T, a, b: T.isclose(a, b),
    "add_": lambda T, a, b: a.clone().add_(b), "mul_": lambda T, a, b: a.clone().mul_(b),
    "mse_loss": lambda T, a, b: T.nn.functional.mse_loss(a, b),
}
MISMATCH = [((2, 3), (4,)), ((2, 3), (3, 2)), ((5,), (4,)), ((2, 1, 3), (4, 2))]
OK_BROADCAST = [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2))]
for (op, f), (sa, sb) in itertools.product(BINARY.items(), MISMATCH + OK_BROADCAST):
    if op.endswith("_") and len(sb) > len(sa):
        continue
    case(f"{op}{sa}{sb}", lambda T, f=f, sa=sa, sb=sb: f(T, T.ones(sa) * 0.5, T.ones(sb) * 0.5))

# ---- reductions and dim-taking ops: dims out of range, repeated, valid 0-d ---------------
DIM_OPS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d), "max": lambda x, d: x.max(d),
    "min": lambda x, d: x.min(d), "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: x.argmin(d),
    "std": lambda x, d: x.std(d), "var": lambda x, d: x.var(d), "logsumexp": lambda x, d: x.logsumexp(d),
    "softmax": lambda x, d: x.softmax(d), "log_softmax": lambda x, d: x.log_softmax(d),
    "cumsum": lambda x, d: x.cumsum(d), "cumprod": lambda x, d: x.cumprod(d),
    "norm": lambda x, d: x.norm(dim=d), "all": lambda x, d: x.all(d), "any": lambda x, d: x.any(d),
    "sort": lambda x, d: x.sort(d), "argsort": lambda x, d: x.argsort(d),
    "squeeze": lambda x, d: x.squeeze(d), "unsqueeze": lambda x, d: x.unsqueeze(d),
    "flip": lambda x, d: x.flip(d), "median": lambda x, d: x.median(d), "unbind": lambda x, d: x.unbind(d),
    "select": lambda x, d: x.select(d, 0), "narrow": lambda x, d: x.narrow(d, 0, 1),
    "transpose": lambda x, d: x.transpose(d, 0), "chunk": lambda x, d: x.chunk(2, d),
    "split": lambda x, d: x.split(1, d), "topk": lambda x, d: x.topk(1, d),
    "kthvalue": lambda x, d: x.kthvalue(1, d), "cat": lambda x, d: tracegrad_cat(x, d),
    "stack": lambda x, d: type(x).__module__ and _stack(x, d), "roll": lambda x, d: x.roll(1, d),
    "index_select": lambda x, d: x.index_select(d, _zeros_idx(x)), "movedim": lambda x, d: x.movedim(d, 0),
    "count_nonzero": lambda x, d: x.count_nonzero(d), "nansum": lambda x, d: x.nansum(d),
}


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else tracegrad


def tracegrad_cat(x, d):
    return _lib(x).cat([x, x], d)


def _stack(x, d):
    return _lib(x).stack([x, x], d)


def _zeros_idx(x):
    return _lib(x).zeros(1, dtype=_lib(x).int64)


for (op, f), d in itertools.product(DIM_OPS.items(), [3, -4, 1, -1]):
    case(f"{op}(2x3, dim={d})", lambda T, f=f, d=d: f(T.ones(2, 3), d))
for op in ("sum", "mean", "amax", "amin", "std", "var", "logsumexp", "norm", "nansum", "flip", "count_nonzero"):
    case(f"{op}(repeated dims)", lambda T, f=DIM_OPS[op]: f(T.ones(2, 3), (0, 0)))
    case(f"{op}(repeated wrapped dims)", lambda T, f=DIM_OPS[op]: f(T.ones(2, 3), (1, -1)))
for op in ("sum", "mean", "amax", "amin", "prod", "softmax", "log_softmax", "logsumexp", "all", "any",
           "nansum", "norm", "squeeze", "unsqueeze", "flip", "std", "var", "max", "min", "argmax",
           "argmin", "cumsum", "cumprod", "sort", "argsort", "median", "kthvalue", "topk"):
    for d in (0, -1, 1):
        case(f"{op}(0-d, dim={d})", lambda T, f=DIM_OPS[op], d=d: f(T.tensor(2.0), d))

# ---- shape ops ----------------------------------------------------------------------------
SHAPE = {
    "view_bad": lambda T: T.ones(2, 3).view(4),
    "view_two_minus1": lambda T: T.ones(2, 3).view(-1, -1),
    "view_noncontig": lambda T: T.ones(2, 3).t().view(6),
    "reshape_bad": lambda T: T.ones(2, 3).reshape(5),
    "reshape_ok_noncontig": lambda T: T.ones(2, 3).t().reshape(6),
    "permute_short": lambda T: T.ones(2, 3).permute(0),
    "permute_repeat": lambda T: T.ones(2, 3).permute(0, 0),
    "expand_bad": lambda T: T.ones(2, 3).expand(4, 3),
    "expand_fewer": lambda T: T.ones(2, 3).expand(3),
    "expand_ok": lambda T: T.ones(1, 3).expand(4, 3),
    "chunk0": lambda T: T.ones(3).chunk(0),
    "chunk_neg": lambda T: T.ones(3).chunk(-1),
    "split_sizes_bad": lambda T: T.ones(5).split([2, 2]),
    "narrow_oob": lambda T: T.ones(3).narrow(0, 2, 5),
    "select_oob": lambda T: T.ones(3).select(0, 5),
    "index_int_oob": lambda T: T.ones(3)[5],
    "index_too_many": lambda T: T.ones(3)[0, 0],
    "flip_kw": lambda T: T.flip(T.ones(2, 3), dims=(0,)),
    "flip_kw_repeat": lambda T: T.flip(T.ones(2, 3), dims=(1, 1)),
    "movedim_repeat": lambda T: T.ones(2, 3, 4).movedim((0, 0), (1, 2)),
    "movedim_len": lambda T: T.ones(2, 3, 4).movedim((0, 1), (1,)),
    "roll_mismatch": lambda T: T.ones(2, 3).roll((1, 2), (0,)),
    "cat_tensor": lambda T: T.cat(T.ones(2, 3)),
    "cat_empty": lambda T: T.cat([]),
    "cat_shape": lambda T: T.cat([T.ones(2, 3), T.ones(2, 4)]),
    "cat_ndim": lambda T: T.cat([T.ones(2, 3), T.ones(3)]),
    "cat_none": lambda T: T.cat([T.ones(2), None]),
    "stack_none": lambda T: T.stack([T.ones(2), None]),
    "stack_shape": lambda T: T.stack([T.ones(2), T.ones(3)]),
    "stack_tensor": lambda T: T.stack(T.ones(2, 3)),
    "stack_empty": lambda T: T.stack([]),
    "outer_2d": lambda T: T.outer(T.ones(2, 2), T.ones(2)),
    "tril_1d": lambda T: T.tril(T.ones(3)),
    "diagonal_same": lambda T: T.ones(2, 3).diagonal(0, 0, 0),
    "unflatten_bad": lambda T: T.ones(6).unflatten(0, (4, 2)),
    "repeat_fewer": lambda T: T.ones(2, 3).repeat(2),
    "t_3d": lambda T: T.ones(2, 3, 4).t(),
    "squeeze_ok_nonone": lambda T: T.ones(2, 3).squeeze(0),
    "broadcast_tensors_bad": lambda T: T.broadcast_tensors(T.ones(2, 3), T.ones(4)),
    "broadcast_shapes_bad": lambda T: T.broadcast_shapes((2, 3), (4,)),
    "broadcast_shapes_int_ok": lambda T: T.broadcast_shapes((2, 1), 3),
    "stride_contig": lambda T: T.ones(2, 3).stride(),
    "stride_t": lambda T: T.ones(2, 3).t().stride(),
    "stride_dim_oob": lambda T: T.ones(2, 3).stride(4),
    "item_many": lambda T: T.ones(2).item(),
    "bool_many": lambda T: bool(T.ones(2)),
    "float_many": lambda T: float(T.ones(2)),
    "len_0d": lambda T: len(T.tensor(1.0)),
    "iter_0d": lambda T: list(T.tensor(1.0)),
    "numpy_requires_grad": lambda T: T.ones(2, requires_grad=True).numpy(),
}
for k, f in SHAPE.items():
    case(k, f)

# ---- linear algebra -----------------------------------------------------------------------
LINALG = {
    "mm_shape": lambda T: T.mm(T.ones(2, 3), T.ones(4, 5)),
    "mm_1d": lambda T: T.mm(T.ones(3), T.ones(3, 2)),
    "mm_bool": lambda T: T.mm(T.ones(2, 2, dtype=T.bool), T.ones(2, 2, dtype=T.bool)),
    "mm_dtype": lambda T: T.mm(T.ones(2, 2), T.ones(2, 2, dtype=T.float64)),
    "bmm_2d": lambda T: T.bmm(T.ones(2, 3), T.ones(3, 2)),
    "bmm_batch": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(3, 3, 2)),
    "mv_shape": lambda T: T.mv(T.ones(2, 3), T.ones(4)),
    "mv_stride0": lambda T: T.mv(T.ones(2, 3), T.ones(1).expand(3)),
    "dot_shape": lambda T: T.dot(T.ones(3), T.ones(4)),
    "dot_2d": lambda T: T.dot(T.ones(2, 2), T.ones(2, 2)),
    "matmul_0d": lambda T: T.matmul(T.tensor(1.0), T.ones(2)),
    "matmul_batch": lambda T: T.matmul(T.ones(2, 2, 3), T.ones(3, 3, 4)),
    "matmul_inner": lambda T: T.ones(2, 3) @ T.ones(2, 3),
    "matmul_int_float": lambda T: T.ones(2, 2, dtype=T.int64) @ T.ones(2, 2),
    "addmm_shape": lambda T: T.addmm(T.ones(3), T.ones(2, 3), T.ones(4, 3)),
    "einsum_bad": lambda T: T.einsum("ij,jk->ik", T.ones(2, 3), T.ones(4, 5)),
}
for k, f in LINALG.items():
    case(k, f)

# ---- dtypes and integer arithmetic --------------------------------------------------------
DTYPE = {
    "softmax_long": lambda T: T.softmax(T.tensor([1, 2]), 0),
    "log_softmax_long": lambda T: T.log_softmax(T.tensor([1, 2]), 0),
    "softmax_long_dtype_ok": lambda T: T.softmax(T.tensor([1, 2]), 0, dtype=T.float32),
    "mean_long": lambda T: T.tensor([1, 2]).mean(),
    "std_long": lambda T: T.tensor([1, 2]).std(),
    "sub_bool": lambda T: T.ones(2, dtype=T.bool) - T.ones(2, dtype=T.bool),
    "neg_bool": lambda T: -T.ones(2, dtype=T.bool),
    "floordiv_int_zero": lambda T: T.tensor([1, 2]) // T.tensor([0, 1]),
    "floordiv_int_zero_scalar": lambda T: T.tensor([1, 2]) // 0,
    "mod_int_zero": lambda T: T.tensor([1, 2]) % 0,
    "fmod_int_zero": lambda T: T.fmod(T.tensor([1, 2]), T.tensor([1, 0])),
    "div_trunc_int_zero": lambda T: T.div(T.tensor([1, 2]), 0, rounding_mode="trunc"),
    "div_int_zero_true_ok": lambda T: T.tensor([1, 2]) / 0,
    "floordiv_float_zero_ok": lambda T: T.tensor([1.0]) // 0,
    "int_pow_neg_scalar": lambda T: T.tensor([2, 3]) ** -1,
    "int_pow_neg_tensor_ok": lambda T: T.tensor([2, 1, -1]) ** T.tensor([-1, -2, -3]),
    "float_pow_neg_ok": lambda T: T.tensor([2.0]) ** -1,
    "requires_grad_int": lambda T: T.ones(2, dtype=T.int64).requires_grad_(),
    "tensor_requires_grad_int": lambda T: T.tensor([1, 2], requires_grad=True),
    "add_str": lambda T: T.ones(2) + "a",
    "mul_none": lambda T: T.ones(2) * None,
    "inplace_int_from_float": lambda T: T.ones(2, dtype=T.int64).add_(T.ones(2) * 0.5),
    "inplace_bool_from_int": lambda T: T.ones(2, dtype=T.bool).add_(T.ones(2, dtype=T.int64)),
    "where_cond_float": lambda T: T.where(T.ones(2), T.ones(2), T.ones(2)),
    "bitwise_float": lambda T: T.ones(2) & T.ones(2),
    "div_bad_rounding": lambda T: T.div(T.ones(2), 2, rounding_mode="round"),
    "to_bad": lambda T: T.ones(2).to("not-a-device"),
}
for k, f in DTYPE.items():
    case(k, f)

# ---- autograd misuse ----------------------------------------------------------------------
AUTOGRAD = {
    "backward_nonscalar": lambda T: (T.ones(2, requires_grad=True) * 2).backward(),
    "backward_no_grad": lambda T: T.ones(2).sum().backward(),
    "backward_twice": lambda T: _twice(T),
    "grad_empty_inputs": lambda T: T.autograd.grad(T.ones(2, requires_grad=True).sum(), []),
    "grad_unused": lambda T: T.autograd.grad(T.ones(2, requires_grad=True).sum(), T.ones(2, requires_grad=True)),
    "grad_input_no_rg": lambda T: T.autograd.grad(T.ones(2, requires_grad=True).sum(), T.ones(2)),
    "grad_assign_shape": lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(3)),
    "grad_assign_dtype": lambda T: setattr(T.ones(2, requires_grad=True), "grad", T.ones(2, dtype=T.float64)),
    "leaf_inplace": lambda T: T.ones(2, requires_grad=True).add_(1),
    "leaf_view_inplace": lambda T: T.ones(2, requires_grad=True)[:1].add_(1),
    "nonleaf_requires_grad_false": lambda T: setattr(T.ones(2, requires_grad=True) * 2, "requires_grad", False),
    "unbind_inplace": lambda T: T.ones(2, 2, requires_grad=True).clone().unbind()[0].mul_(2),
    "split_inplace": lambda T: T.ones(4, requires_grad=True).clone().split(2)[1].mul_(2),
    "chunk_inplace": lambda T: T.ones(4, requires_grad=True).clone().chunk(2)[0].zero_(),
    "unbind_inplace_no_rg_ok": lambda T: T.ones(2, 2).unbind()[0].mul_(2),
    "inference_inplace_outside": lambda T: _inference(T).add_(1),
    "inference_saved": lambda T: (_inference(T) * T.ones(2, requires_grad=True)).sum(),
    "inference_view_ok": lambda T: _inference(T)[:1] + 1,
    "version_error": lambda T: _version(T),
    "retain_grad_no_rg": lambda T: T.ones(2).retain_grad(),
    "register_hook_no_rg": lambda T: T.ones(2).register_hook(lambda g: g),
}


def _twice(T):
    y = (T.ones(2, requires_grad=True) * T.ones(2, requires_grad=True)).sum()
    y.backward()
    y.backward()


def _inference(T):
    with T.inference_mode():
        return T.ones(2)


def _version(T):
    a = T.ones(3, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    (b * 1).sum().backward()
    c = a * 1
    d = c.sin()
    c.add_(1)
    d.sum().backward()


for k, f in AUTOGRAD.items():
    case(k, f)

# ---- nn.functional --------------------------------------------------------------------
NN = {
    "linear_shape": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(4, 5)),
    "linear_0d": lambda T: T.nn.Linear(3, 2)(T.tensor(1.0)),
    "conv2d_channels": lambda T: T.nn.functional.conv2d(T.ones(1, 2, 5, 5), T.ones(3, 4, 3, 3)),
    "conv2d_3d_input_ok": lambda T: T.nn.functional.conv2d(T.ones(2, 5, 5), T.ones(3, 2, 3, 3)),
    "conv2d_kernel_big": lambda T: T.nn.functional.conv2d(T.ones(1, 1, 2, 2), T.ones(1, 1, 3, 3)),
    "conv2d_stride0": lambda T: T.nn.Conv2d(1, 1, 3, stride=0),
    "conv2d_pad_neg": lambda T: T.nn.Conv2d(1, 1, 3, padding=-1),
    "maxpool_k0": lambda T: T.nn.MaxPool2d(0)(T.ones(1, 1, 4, 4)),
    "maxpool_big": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 2, 2), 3),
    "avgpool_big": lambda T: T.nn.functional.avg_pool2d(T.ones(1, 1, 2, 2), 3),
    "batchnorm_channels": lambda T: T.nn.BatchNorm1d(3)(T.ones(4, 5)),
    "groupnorm_channels": lambda T: T.nn.GroupNorm(2, 4)(T.ones(2, 6, 3)),
    "layernorm_shape": lambda T: T.nn.functional.layer_norm(T.ones(2, 3), (4,)),
    "layernorm_long": lambda T: T.nn.functional.layer_norm(T.ones(2, 3, dtype=T.int64), (3,)),
    "ce_weight_size": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1]), weight=T.ones(4)),
    "ce_target_oob": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 5])),
    "ce_batch_mismatch": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1, 2])),
    "ce_float_target_shape": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 4)),
    "ce_all_ignored_ok": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([-100, -100])),
    "nll_1d_target_2d": lambda T: T.nn.functional.nll_loss(T.ones(3), T.tensor([[0]])),
    "bce_out_of_range": lambda T: T.nn.functional.binary_cross_entropy(T.tensor([1.5]), T.tensor([1.0])),
    "bce_negative": lambda T: T.nn.functional.binary_cross_entropy(T.tensor([-0.5]), T.tensor([1.0])),
    "bce_edges_ok": lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.0, 1.0]), T.tensor([1.0, 0.0])),
    "bce_shape": lambda T: T.nn.functional.binary_cross_entropy(T.ones(2) * 0.5, T.ones(3)),
    "huber_neg_delta": lambda T: T.nn.functional.huber_loss(T.ones(2), T.ones(2), delta=-1.0),
    "huber_zero_delta": lambda T: T.nn.functional.huber_loss(T.ones(2), T.ones(2), delta=0.0),
    "smooth_l1_neg_beta": lambda T: T.nn.functional.smooth_l1_loss(T.ones(2), T.ones(2), beta=-1.0),
    "mse_long": lambda T: T.nn.functional.mse_loss(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64)),
    "one_hot_oob": lambda T: T.nn.functional.one_hot(T.tensor([5]), 3),
    "one_hot_neg": lambda T: T.nn.functional.one_hot(T.tensor([-1]), 3),
    "one_hot_float": lambda T: T.nn.functional.one_hot(T.tensor([1.0]), 3),
    "embedding_oob": lambda T: T.nn.functional.embedding(T.tensor([5]), T.ones(3, 2)),
    "embedding_neg": lambda T: T.nn.functional.embedding(T.tensor([-1]), T.ones(3, 2)),
    "embedding_float_idx": lambda T: T.nn.functional.embedding(T.tensor([1.0]), T.ones(3, 2)),
    "dropout_p": lambda T: T.nn.functional.dropout(T.ones(2), p=1.5),
    "dropout_module_p": lambda T: T.nn.Dropout(p=-0.1),
    "parameter_int": lambda T: T.nn.Parameter(T.ones(2, dtype=T.int64)),
    "softmax_no_dim_ok": lambda T: T.nn.functional.softmax(T.ones(2, 3), dim=1),
    "pad_neg_too_big": lambda T: T.nn.functional.pad(T.ones(2, 3), (-4, 0)),
    "linear_module_input": lambda T: T.nn.Linear(3, 2)(T.ones(2, 4)),
    "sequential_bad_module": lambda T: T.nn.Sequential(T.nn.Linear(2, 2), 3),
    "module_bad_attr": lambda T: T.nn.Linear(2, 2).nonexistent,
    "load_state_dict_missing": lambda T: T.nn.Linear(2, 2).load_state_dict({}),
    "load_state_dict_shape": lambda T: T.nn.Linear(2, 2).load_state_dict({"weight": T.ones(3, 3), "bias": T.ones(2)}),
    # more layer argument checks (shapes and, in eager, index values), valid edges beside them
    "maxpool_big_3d": lambda T: T.nn.functional.max_pool2d(T.ones(1, 2, 2), 3),
    "maxpool_pad_fits_ok": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 2, 2), 3, padding=1),
    "maxpool_ceil_ok": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 3, 3), 2, stride=2, ceil_mode=True),
    "maxpool1d_big": lambda T: T.nn.functional.max_pool1d(T.ones(1, 1, 2), 3),
    "avgpool1d_big": lambda T: T.nn.functional.avg_pool1d(T.ones(1, 1, 2), 3),
    "maxpool_stride0": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 2, 2), 2, stride=0),
    "maxpool_indices_stride0": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 4, 4), 2, stride=0,
                                                                     return_indices=True),
    "maxpool_2d_input": lambda T: T.nn.functional.max_pool2d(T.ones(2, 2), 1),
    "maxpool_5d_input": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 1, 2, 2), 1),
    "avgpool_5d_input": lambda T: T.nn.functional.avg_pool2d(T.ones(1, 1, 1, 2, 2), 1),
    "maxpool_empty_channel": lambda T: T.nn.functional.max_pool2d(T.ones(1, 0, 2, 2), 1),
    "maxpool_empty_batch_ok": lambda T: T.nn.functional.max_pool2d(T.ones(0, 1, 2, 2), 1),
    "maxpool_dilation0": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 4, 4), 2, dilation=0),
    "maxpool_pad_neg": lambda T: T.nn.functional.max_pool2d(T.ones(1, 1, 4, 4), 2, padding=-1),
    "avgpool_pad_half": lambda T: T.nn.functional.avg_pool2d(T.ones(1, 1, 2, 2), 2, padding=2),
    "avgpool1d_k0": lambda T: T.nn.functional.avg_pool1d(T.ones(1, 1, 4), 0),
    "maxpool_module_big": lambda T: T.nn.MaxPool2d(3)(T.ones(1, 1, 2, 2)),
    "avgpool_module_big": lambda T: T.nn.AvgPool2d(3)(T.ones(1, 1, 2, 2)),
    "adaptive_avg_neg": lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 1, 2, 2), -1),
    "adaptive_avg_zero_ok": lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 1, 2, 2), 0),
    # issue 10 round 3: torch reads dim -3 of avg_pool2d's input first (IndexError), an adaptive max
    # pool to size 0 is an empty tensor, a fill value that is not a number is a TypeError
    "avgpool_2d_input": lambda T: T.nn.functional.avg_pool2d(T.ones(2, 2), 1),
    "avgpool_1d_input": lambda T: T.nn.functional.avg_pool2d(T.ones(4), 2),
    "avgpool_2d_input_bad_stride": lambda T: T.nn.functional.avg_pool2d(T.ones(2, 2), 1, stride=0),
    "avgpool_module_2d_input": lambda T: T.nn.AvgPool2d(2)(T.ones(2, 2)),
    "avgpool_3d_input_ok": lambda T: T.nn.functional.avg_pool2d(T.ones(2, 2, 2), 1),
    "adaptive_max_zero_ok": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 2, 2), 0),
    "adaptive_max_zero_one_ok": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 2, 2), (0, 1)),
    "adaptive_max_none_zero_ok": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 2, 2), (None, 0)),
    "adaptive_max_3d_zero_ok": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 2, 2), 0),
    "adaptive_max1d_zero_ok": lambda T: T.nn.functional.adaptive_max_pool1d(T.ones(1, 1, 2), 0),
    "adaptive_max_module_zero_ok": lambda T: T.nn.AdaptiveMaxPool2d(0)(T.ones(1, 1, 2, 2)),
    "adaptive_max_2d_input": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(2, 2), 1),
    "adaptive_max_empty_spatial": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 0, 2), 1),
    "adaptive_max_empty_batch_ok": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(0, 1, 2, 2), 1),
    "adaptive_max_long": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 2, 2, dtype=T.int64), 1),
    "adaptive_max_neg": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 1, 2, 2), -1),
    # (test/nn/test_pooling.py run unchanged) an output size whose byte size overflows int64 is
    # torch's RuntimeError; it hung in the window-bounds loop before
    "adaptive_max1d_size_overflow": lambda T: T.nn.AdaptiveMaxPool1d(0x3FFFFFFFFFFFFFFF)(T.empty(2, 2, 2)),
    "adaptive_avg1d_size_overflow": lambda T: T.nn.AdaptiveAvgPool1d(0x3FFFFFFFFFFFFFFF)(T.empty(2, 2, 2)),
    "adaptive_max3d_empty_channels": lambda T: T.nn.AdaptiveMaxPool3d(3)(T.ones(1, 0, 5, 4, 3)),
    "adaptive_max3d_empty_batch_ok": lambda T: T.nn.AdaptiveMaxPool3d(3)(T.ones(0, 2, 5, 4, 3)),
    "adaptive_max2d_size_overflow": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(2, 2, 2),
                                                                                   (0x3FFFFFFFFFFFFFFF, 4)),
    "fill__str": lambda T: T.zeros(2).fill_("a"),
    "fill__none": lambda T: T.zeros(2).fill_(None),
    "fill__list": lambda T: T.zeros(2).fill_([1]),
    "fill__bytes": lambda T: T.zeros(2).fill_(b"a"),
    "fill__object": lambda T: T.zeros(2).fill_(object()),
    "fill__complex_real": lambda T: T.zeros(2).fill_(1 + 2j),
    "fill__complex_ok": lambda T: T.zeros(2, dtype=T.complex64).fill_(1 + 2j),
    "fill__bool_ok": lambda T: T.zeros(2).fill_(True),
    "fill__0d_tensor_ok": lambda T: T.zeros(2).fill_(T.tensor(3.0)),
    "fill__float_into_long_ok": lambda T: T.zeros(2, dtype=T.int64).fill_(1.5),
    "masked_fill_str": lambda T: T.zeros(2).masked_fill(T.ones(2, dtype=T.bool), "a"),
    "masked_fill__str": lambda T: T.zeros(2).masked_fill_(T.ones(2, dtype=T.bool), "a"),
    "masked_fill__none": lambda T: T.zeros(2).masked_fill_(T.ones(2, dtype=T.bool), None),
    "embedding_module_oob": lambda T: T.nn.Embedding(3, 2)(T.tensor([3])),
    "embedding_2d_ids_ok": lambda T: T.nn.functional.embedding(T.tensor([[0, 2]]), T.ones(3, 2)),
    "embedding_int32_ok": lambda T: T.nn.functional.embedding(T.tensor([0], dtype=T.int32), T.ones(3, 2)),
    "embedding_1d_weight": lambda T: T.nn.functional.embedding(T.tensor([0]), T.ones(3)),
    "embedding_padding_idx": lambda T: T.nn.functional.embedding(T.tensor([0]), T.ones(3, 2), padding_idx=5),
    "layernorm_int32": lambda T: T.nn.functional.layer_norm(T.ones(2, 3, dtype=T.int32), (3,)),
    "layernorm_module_long": lambda T: T.nn.LayerNorm(3)(T.ones(2, 3, dtype=T.int64)),
    "groupnorm_long": lambda T: T.nn.functional.group_norm(T.ones(2, 4, dtype=T.int64), 2),
    "batchnorm_long": lambda T: T.nn.functional.batch_norm(T.ones(2, 3, dtype=T.int64), None, None, training=True),
    "linear_fn_0d": lambda T: T.nn.functional.linear(T.tensor(1.0), T.ones(2, 3)),
    "linear_0d_weight": lambda T: T.nn.functional.linear(T.ones(3), T.tensor(1.0)),
    "linear_1d_ok": lambda T: T.nn.functional.linear(T.ones(3), T.ones(2, 3)),
    "linear_1d_weight_ok": lambda T: T.nn.functional.linear(T.ones(3), T.ones(3)),
    "linear_long_ok": lambda T: T.nn.functional.linear(T.ones(2, 3, dtype=T.int64), T.ones(2, 3, dtype=T.int64)),
    "one_hot_infer_neg": lambda T: T.nn.functional.one_hot(T.tensor([-1])),
    "one_hot_infer_empty": lambda T: T.nn.functional.one_hot(T.tensor([], dtype=T.int64)),
    "one_hot_empty_ok": lambda T: T.nn.functional.one_hot(T.tensor([], dtype=T.int64), 3),
    "one_hot_zero_classes": lambda T: T.nn.functional.one_hot(T.tensor([1]), 0),
    "one_hot_neg_classes": lambda T: T.nn.functional.one_hot(T.tensor([1]), -2),
    "one_hot_int32": lambda T: T.nn.functional.one_hot(T.tensor([1], dtype=T.int32), 3),
    "one_hot_ok": lambda T: T.nn.functional.one_hot(T.tensor([0, 2]), 3),
    "parameter_bool": lambda T: T.nn.Parameter(T.ones(2, dtype=T.bool)),
    "parameter_int_no_grad_ok": lambda T: T.nn.Parameter(T.ones(2, dtype=T.int64), requires_grad=False),
    "parameter_complex_ok": lambda T: T.nn.Parameter(T.ones(2, dtype=T.complex64)),
}
for k, f in NN.items():
    case(k, f)

# ---- indexing ops ----------------------------------------------------------------------------
INDEX = {
    "index_select_oob": lambda T: T.index_select(T.ones(3), 0, T.tensor([5])),
    "index_select_neg": lambda T: T.index_select(T.ones(3), 0, T.tensor([-1])),
    "index_select_float": lambda T: T.index_select(T.ones(3), 0, T.tensor([1.0])),
    "index_select_2d_idx": lambda T: T.index_select(T.ones(3), 0, T.tensor([[1]])),
    "gather_oob": lambda T: T.gather(T.ones(3), 0, T.tensor([5])),
    "gather_ndim": lambda T: T.gather(T.ones(3, 2), 0, T.tensor([1])),
    "scatter_oob": lambda T: T.zeros(3).scatter(0, T.tensor([5]), T.ones(1)),
    "scatter_add_oob": lambda T: T.zeros(3).scatter_add(0, T.tensor([5]), T.ones(1)),
    "index_add_oob": lambda T: T.zeros(3).index_add(0, T.tensor([5]), T.ones(1)),
    "take_along_dim_oob": lambda T: T.take_along_dim(T.ones(3), T.tensor([5]), 0),
    "kthvalue_k_big": lambda T: T.ones(3).kthvalue(5),
    "topk_k_big": lambda T: T.ones(3).topk(5),
    "masked_fill_shape": lambda T: T.ones(3).masked_fill(T.ones(4, dtype=T.bool), 0.0),
    "masked_fill_nonbool": lambda T: T.ones(3).masked_fill(T.ones(3), 0.0),
    "masked_fill__list_mask": lambda T: T.ones(3).masked_fill_([True, False, True], 0.0),
    "masked_fill__none_mask": lambda T: T.ones(3).masked_fill_(None, 0.0),
    "masked_fill__uint8_mask": lambda T: T.ones(3).masked_fill_(T.ones(3, dtype=T.uint8), 0.0),
    "bool_index_shape": lambda T: T.ones(3)[T.ones(4, dtype=T.bool)],
    "tensor_index_oob": lambda T: T.ones(3)[T.tensor([5])],
    "setitem_oob": lambda T: T.ones(3).__setitem__(5, 1.0),
    "setitem_shape": lambda T: T.ones(3).__setitem__(slice(None), T.ones(4)),
}
for k, f in INDEX.items():
    case(k, f)

# ---- factories and random -----------------------------------------------------------------
FACTORY = {
    "tensor_overflow": lambda T: T.tensor([2 ** 63]),
    "tensor_ragged": lambda T: T.tensor([[1, 2], [3]]),
    "tensor_str": lambda T: T.tensor(["a"]),
    "ones_neg": lambda T: T.ones(-1),
    "zeros_float_size": lambda T: T.zeros(2.5),
    "arange_sign": lambda T: T.arange(0, 5, -1),
    "arange_step0": lambda T: T.arange(0, 5, 0),
    "randn_long": lambda T: T.randn(3, dtype=T.int64),
    "rand_long": lambda T: T.rand(3, dtype=T.int64),
    "randint_empty": lambda T: T.randint(5, 2, (3,)),
    "randperm_neg": lambda T: T.randperm(-1),
    "normal_neg_std": lambda T: T.normal(0.0, -1.0, (2,)),
    "bernoulli_p": lambda T: T.bernoulli(T.ones(2) * 1.5),
    "multinomial_neg": lambda T: T.multinomial(T.tensor([-1.0, 1.0]), 1),
    "multinomial_zero": lambda T: T.multinomial(T.tensor([0.0, 0.0]), 1),
    "full_like_bad": lambda T: T.full((2,), "a"),
    "eye_neg": lambda T: T.eye(-1),
    "linspace_neg_steps": lambda T: T.linspace(0, 1, -1),
    "empty_ok": lambda T: T.empty(0, 3),
    # more factory/random argument checks (torch 2.13's classes), valid edges beside them
    "tensor_overflow_neg": lambda T: T.tensor([-2 ** 63 - 1]),
    "tensor_overflow_0d": lambda T: T.tensor(2 ** 63),
    "tensor_int64_min_ok": lambda T: T.tensor([-2 ** 63, 2 ** 63 - 1]),
    "tensor_bigint_float_ok": lambda T: T.tensor([[2 ** 63]], dtype=T.float32),
    "tensor_bigint_mixed_float_ok": lambda T: T.tensor([1.0, 2 ** 70]),
    "tensor_overflow_dtype": lambda T: T.tensor([2 ** 63], dtype=T.int64),
    "tensor_int32_overflow": lambda T: T.tensor([2 ** 40], dtype=T.int32),
    "tensor_int8_overflow": lambda T: T.tensor([300], dtype=T.int8),
    "tensor_float_to_int_overflow": lambda T: T.tensor([1.5e10], dtype=T.int32),
    "tensor_uint8_wrap_ok": lambda T: T.tensor([-1], dtype=T.uint8),
    "tensor_str_nested": lambda T: T.tensor([["a"]]),
    "tensor_str_0d": lambda T: T.tensor("a"),
    "tensor_str_later": lambda T: T.tensor([1, "a"]),
    "tensor_str_later_nested": lambda T: T.tensor([[1, 2], [3, "a"]]),
    "tensor_bytes": lambda T: T.tensor([b"a"]),
    "tensor_none": lambda T: T.tensor(None),
    "tensor_none_in_list": lambda T: T.tensor([1, None]),
    "tensor_object": lambda T: T.tensor([object()]),
    "arange_down": lambda T: T.arange(5, 0),
    "arange_down_ok": lambda T: T.arange(5, 0, -1),
    "arange_empty_ok": lambda T: T.arange(5, 5, -1),
    "arange_float_sign": lambda T: T.arange(0.0, 1.0, -0.1),
    "arange_inf": lambda T: T.arange(0, float("inf")),
    "arange_nan": lambda T: T.arange(float("nan")),
    "arange_bool": lambda T: T.arange(0, 5, dtype=T.bool),
    "bernoulli_p_arg": lambda T: T.bernoulli(T.ones(2), 1.5),
    "bernoulli_neg": lambda T: T.bernoulli(T.ones(2) * -0.1),
    "bernoulli_nan": lambda T: T.bernoulli(T.tensor([float("nan")])),
    "bernoulli_ok": lambda T: T.bernoulli(T.tensor([0.0, 0.5, 1.0])),
    "bernoulli__p": lambda T: T.ones(2).bernoulli_(2.0),
    "eye_neg_m": lambda T: T.eye(2, -1),
    "eye_zero_ok": lambda T: T.eye(0),
    "full_none": lambda T: T.full((2,), None),
    "full_list": lambda T: T.full((2,), [1]),
    "full_str_dtype": lambda T: T.full((2,), "a", dtype=T.float32),
    "full_like_str": lambda T: T.full_like(T.ones(2), "a"),
    "full_uint8_overflow": lambda T: T.full((2,), 300, dtype=T.uint8),
    "full_int64_overflow": lambda T: T.full((2,), 2 ** 63),
    "full_tensor_ok": lambda T: T.full((2,), T.tensor(1.0)),
    "full_float_to_int_ok": lambda T: T.full((2,), 1.5, dtype=T.int64),
    "logspace_neg_steps": lambda T: T.logspace(0, 1, -1),
    "linspace_zero_ok": lambda T: T.linspace(0, 1, 0),
    "multinomial_too_many": lambda T: T.multinomial(T.tensor([1.0, 1.0]), 3),
    "multinomial_zero_row": lambda T: T.multinomial(T.tensor([[1.0, 1.0], [0.0, 0.0]]), 1),
    "multinomial_nan": lambda T: T.multinomial(T.tensor([1.0, float("nan")]), 1),
    "multinomial_inf": lambda T: T.multinomial(T.tensor([1.0, float("inf")]), 1),
    "multinomial_long": lambda T: T.multinomial(T.tensor([1, 1]), 1),
    "multinomial_n0": lambda T: T.multinomial(T.tensor([1.0, 1.0]), 0),
    "multinomial_3d": lambda T: T.multinomial(T.ones(2, 2, 2), 1),
    "multinomial_replacement_ok": lambda T: T.multinomial(T.tensor([1.0, 1.0]), 3, replacement=True),
    "normal_tensor_neg_std": lambda T: T.normal(T.zeros(2), T.tensor([1.0, -1.0])),
    "normal_float_mean_neg_std": lambda T: T.normal(0.0, T.tensor([1.0, -1.0])),
    "normal_tensor_mean_neg_std": lambda T: T.normal(T.zeros(2), -1.0),
    "normal_long": lambda T: T.normal(0.0, 1.0, (2,), dtype=T.int64),
    "normal__neg_std": lambda T: T.ones(2).normal_(0, -1),
    "normal__long": lambda T: T.ones(2, dtype=T.int64).normal_(),
    "uniform__range": lambda T: T.ones(2).uniform_(1, 0),
    "uniform__long": lambda T: T.ones(2, dtype=T.int64).uniform_(),
    "rand_int32": lambda T: T.rand(2, dtype=T.int32),
    "rand_bool": lambda T: T.rand(2, dtype=T.bool),
    "randn_int32": lambda T: T.randn(2, dtype=T.int32),
    "randn_bool": lambda T: T.randn(2, dtype=T.bool),
    "rand_like_long": lambda T: T.rand_like(T.ones(2, dtype=T.int64)),
    "randn_like_long": lambda T: T.randn_like(T.ones(2, dtype=T.int64)),
    "randint_equal": lambda T: T.randint(2, 2, (3,)),
    "randint_high0": lambda T: T.randint(0, (3,)),
    "randint_neg_high": lambda T: T.randint(-1, (2,)),
    "randint_float_ok": lambda T: T.randint(3, (2,), dtype=T.float32),
    "randint_overflow": lambda T: T.randint(0, 2 ** 63, (2,)),
    "randint_like_empty": lambda T: T.randint_like(T.ones(2), 3, 1),
    "randperm_bool": lambda T: T.randperm(3, dtype=T.bool),
    "randperm_float_ok": lambda T: T.randperm(3, dtype=T.float32),
}
for k, f in FACTORY.items():
    case(k, f)


# ---- a non-Tensor (None, a string, a list) where the Tensor argument goes: TypeError ---------
NON_TENSOR_FNS = ["abs", "exp", "sigmoid", "tanh", "sqrt", "floor", "neg", "abs_", "exp_", "sin_",
                  "alias_copy", "detach_copy", "t_copy", "amax", "argmax", "argsort", "sort", "msort",
                  "atleast_1d", "atleast_2d", "atleast_3d", "clamp_min_", "addmv_", "erfinv_",
                  "zeros_like", "ones_like", "empty_like", "rand_like"]
for fn_name, (label, bad) in itertools.product(["cdist", "cross", "dist", "inner", "kron", "polar", "is_same_size"],
                                               [("None", None), ("str", "abc"), ("float", 1.5)]):
    case(f"{fn_name}(t, {label})", lambda T, n=fn_name, b=bad: getattr(T, n)(T.ones(2, 3), b))
for fn_name, (label, bad) in itertools.product(["block_diag", "broadcast_tensors", "cartesian_prod", "chain_matmul",
                                                "combinations", "cholesky_inverse"],
                                               [("None", None), ("str", "abc"), ("list", [1.0, 2.0])]):
    case(f"{fn_name}({label})", lambda T, n=fn_name, b=bad: getattr(T, n)(b))
for fn_name, (label, bad) in itertools.product(["mm", "bmm", "mv", "dot", "outer"],
                                               [("None", None), ("str", "abc"), ("float", 1.5)]):
    case(f"{fn_name}(t, {label})", lambda T, n=fn_name, b=bad: getattr(T, n)(T.ones(2, 2, 2)[(0,) * {"bmm": 0, "mm": 1, "mv": 1}.get(n, 2)], b))
for fn_name, (label, bad) in itertools.product(NON_TENSOR_FNS, [("None", None), ("str", "abc"),
                                                                 ("list", [1.0, 2.0])]):
    case(f"{fn_name}({label})", lambda T, n=fn_name, b=bad: getattr(T, n)(b))

# the hot families' function forms (their Tensor methods always have a Tensor self): a non-Tensor
# first argument, with the rest of a valid call
HOT_FUNCTION_FORMS = {"flip": ([0],), "reshape": ((2,),), "permute": (0,), "clone": (), "where": (), "round": (),
                      "t": (), "trace": (), "diag": (), "diagonal": (), "flatten": (), "fliplr": (), "flipud": (),
                      "adjoint": (), "get_device": (), "detach_": (), "hstack": (), "vstack": (), "row_stack": ()}
for fn_name, (label, bad) in itertools.product(HOT_FUNCTION_FORMS, [("None", None), ("str", "abc"),
                                                                     ("list", [1.0, 2.0])]):
    if label == "None" and fn_name.endswith("stack"):
        continue
    case(f"{fn_name}({label}, ...)", lambda T, n=fn_name, b=bad: getattr(T, n)(b, *HOT_FUNCTION_FORMS[n]))
for fn_name, (label, bad) in itertools.product(["view_as", "reshape_as", "expand_as"],
                                               [("None", None), ("int", 3), ("list", [1.0, 2.0])]):
    case(f"Tensor.{fn_name}({label})", lambda T, n=fn_name, b=bad: getattr(T.ones(2), n)(b))
# dtype arguments: a tensor, a string or None where a dtype goes
for fn_name, (label, pair) in itertools.product(["can_cast", "promote_types"], [
        ("tensor", lambda T: (T.ones(2), T.float32)), ("str", lambda T: (T.float32, "abc")),
        ("None", lambda T: (None, T.int64)), ("ok", lambda T: (T.int32, T.float32))]):
    case(f"{fn_name}({label})", lambda T, n=fn_name, p=pair: getattr(T, n)(*p(T)))

# keepdim takes only a bool (1 == True would share a static key); torch has no dim=None overload
# for these, though tracegrad's own default is None
STATIC_KINDS = {
    "sum(keepdim=1)": lambda T: T.sum(T.ones(2, 3), 0, keepdim=1), "mean(t, 0, 0)": lambda T: T.ones(2, 3).mean(0, 0),
    "max(keepdims=1)": lambda T: T.ones(2, 3).max(0, keepdims=1), "var(keepdim=tensor)": lambda T: T.ones(2, 3).var(0, keepdim=T.tensor(True)),
    "amax(keepdim=None)": lambda T: T.amax(T.ones(2, 3), 0, keepdim=None), "sum(keepdim=True)": lambda T: T.ones(2, 3).sum(0, True),
    "median(t, None)": lambda T: T.median(T.ones(2, 3), None), "nanmedian(dim=None)": lambda T: T.ones(2, 3).nanmedian(dim=None),
    "squeeze(t, None)": lambda T: T.squeeze(T.ones(2, 1), None), "min(dim=None)": lambda T: T.ones(2, 3).min(dim=None),
    "median(t)": lambda T: T.median(T.ones(2, 3)), "prod(t)": lambda T: T.ones(2, 3).prod(),
    # a list or a string where a Tensor-or-Number bound / exponent goes
    "clamp(min=list)": lambda T: T.clamp(T.ones(2), min=[1]), "clamp(max=str)": lambda T: T.ones(2).clamp(max="a"),
    "clamp_(min=list)": lambda T: T.ones(2).clamp_(min=[1]), "clamp_min(list)": lambda T: T.clamp_min(T.ones(2), [1]),
    "clamp_max(list)": lambda T: T.ones(2).clamp_max([1]), "pow_(list)": lambda T: T.ones(2).pow_([2]),
    "clamp(None, 1)": lambda T: T.ones(2).clamp(None, 1), "pow_(2)": lambda T: T.ones(2).pow_(2),
    # tensor_split takes exactly one of indices_or_sections / sections= / indices=
    "tensor_split(t, None)": lambda T: T.tensor_split(T.ones(4), None), "tensor_split(t)": lambda T: T.ones(4).tensor_split(),
    "tensor_split(t, 2, sections=2)": lambda T: T.tensor_split(T.ones(4), 2, sections=2),
    "tensor_split(sections=2)": lambda T: T.ones(4).tensor_split(sections=2),
    # an integer or bool target of binary_cross_entropy_with_logits
    "BCEWithLogits(long target)": lambda T: T.nn.BCEWithLogitsLoss()(T.zeros(2, 3), T.ones(2, 3, dtype=T.long)),
    "BCEWithLogits(int32 target)": lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.zeros(2), T.ones(2, dtype=T.int32)),
    "BCEWithLogits(bool target)": lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.zeros(2), T.ones(2, dtype=T.bool)),
    "BCEWithLogits(float64 target)": lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.zeros(2), T.ones(2, dtype=T.float64)),
}
for k, f in STATIC_KINDS.items():
    case(k, f)

# the autograd API's own arguments: no outputs / inputs (None), a flag that is not a bool
def _leaf(T):
    return T.ones(2, requires_grad=True)


AUTOGRAD_ARGS = {
    "grad(None, x)": lambda T: T.autograd.grad(None, _leaf(T)),
    "grad(y, None)": lambda T: T.autograd.grad(_leaf(T).sum(), None),
    "grad(retain_graph=str)": lambda T: (lambda a: T.autograd.grad(a.sum(), a, retain_graph="a"))(_leaf(T)),
    "grad(create_graph=None)": lambda T: (lambda a: T.autograd.grad(a.sum(), a, create_graph=None))(_leaf(T)),
    "grad(allow_unused=str)": lambda T: (lambda a: T.autograd.grad(a.sum(), a, allow_unused="a"))(_leaf(T)),
    "grad(retain_graph=1)": lambda T: (lambda a: T.autograd.grad(a.sum(), a, retain_graph=1))(_leaf(T)),
    "autograd.backward(None)": lambda T: T.autograd.backward(None),
    "Tensor.backward(None)": lambda T: T.Tensor.backward(None),
    "backward(retain_graph=str)": lambda T: _leaf(T).sum().backward(retain_graph="a"),
}
for k, f in AUTOGRAD_ARGS.items():
    case(k, f)

# nn.functional: a non-Tensor input, or a non-Tensor beside a (2, 3) float input
F_NON_TENSOR = {"relu": lambda T, b: T.nn.functional.relu(b), "relu_": lambda T, b: T.nn.functional.relu_(b),
                "elu_": lambda T, b: T.nn.functional.elu_(b), "selu_": lambda T, b: T.nn.functional.selu_(b),
                "pdist": lambda T, b: T.nn.functional.pdist(b),
                "linear(weight)": lambda T, b: T.nn.functional.linear(T.ones(2, 3), b),
                "cross_entropy(target)": lambda T, b: T.nn.functional.cross_entropy(T.ones(2, 3), b),
                "nll_loss(target)": lambda T, b: T.nn.functional.nll_loss(T.ones(2, 3), b),
                "prelu(weight)": lambda T, b: T.nn.functional.prelu(T.ones(2, 3), b),
                "cosine_similarity(x2)": lambda T, b: T.nn.functional.cosine_similarity(T.ones(2, 3), b),
                "multi_margin_loss(target)": lambda T, b: T.nn.functional.multi_margin_loss(T.ones(2, 3), b)}
for fn_name, (label, bad) in itertools.product(F_NON_TENSOR, [("None", None), ("str", "abc"), ("float", 1.5)]):
    case(f"F.{fn_name}({label})", lambda T, n=fn_name, b=bad: F_NON_TENSOR[n](T, b))

# ---- an argument of the wrong kind where an int, dim, size, bool or Tensor goes: torch's parser
# raises TypeError (tracegrad: argcheck's guard, numpy_names' guard, op_error); where torch accepts
# or raises another class (a Tensor overload, a Python-level function), tracegrad follows
WRONG_KIND = {"None": lambda T: None, "str": lambda T: "abc", "float": lambda T: 1.5,
              "tensor": lambda T: T.ones(3, 2), "long_tensor": lambda T: T.ones(2, 3, dtype=T.int64),
              "list": lambda T: [1.0, 2.0]}
for fn_name, label in itertools.product(
        ["ones", "rand", "amax", "logsumexp", "prod", "diagonal", "tril", "vander", "unsqueeze_copy", "qr", "take",
         "channel_shuffle", "diagonal_scatter", "complex", "lu_unpack", "permute_copy", "max", "randint_like",
         "bincount", "hann_window", "group_norm", "masked_select", "cumsum", "nan_to_num"],
        ["str", "float", "tensor", "long_tensor", "None"]):
    case(f"{fn_name}(t, {label}) kind",
         lambda T, n=fn_name, b=label: getattr(T, n)(T.arange(6.).reshape(2, 3), WRONG_KIND[b](T)))
for fn_name, label in itertools.product(["positive", "imag", "cov", "trapezoid", "selu", "tril", "lu_unpack"],
                                        ["None", "str", "list"]):
    case(f"{fn_name}({label}) kind", lambda T, n=fn_name, b=label: getattr(T, n)(WRONG_KIND[b](T)))
for meth, label in itertools.product(["sum", "any", "argmax", "std", "nansum", "split_with_sizes", "diagonal", "take",
                                      "slice_scatter", "eq", "div_", "copysign", "sum_to_size", "gcd_", "cumsum_",
                                      "polygamma_", "nan_to_num", "unfold"],
                                     ["None", "str", "float", "tensor", "long_tensor", "list"]):
    case(f"Tensor.{meth}({label}) kind",
         lambda T, m=meth, b=label: getattr(T.arange(6.).reshape(2, 3), m)(WRONG_KIND[b](T)))
for fn_name, label in itertools.product(["avg_pool1d", "avg_pool2d", "max_pool2d", "softplus", "pixel_shuffle",
                                         "softmax", "softmin", "rms_norm", "embedding", "one_hot", "elu", "relu",
                                         "interpolate", "adaptive_avg_pool2d"],
                                        ["str", "float", "tensor", "long_tensor"]):
    case(f"F.{fn_name}(t, {label}) kind",
         lambda T, n=fn_name, b=label: getattr(T.nn.functional, n)(T.arange(6.).reshape(2, 3), WRONG_KIND[b](T)))

# ---- wrong kinds JAX or Python would accept silently (a float count, an int or str flag, a number
# where only a Tensor goes, no size at all): torch's parser raises TypeError before the kernel
SILENT = {
    "topk(1.5)": lambda T: T.ones(2, 3).topk(1.5), "kthvalue(1.5)": lambda T: T.ones(2, 3).kthvalue(1.5),
    "topk(0-d tensor k)_ok": lambda T: T.ones(2, 3).topk(T.tensor(1)),
    "rot90(k=1.5)": lambda T: T.rot90(T.ones(2, 3), 1.5), "mvlgamma(p=1.5)": lambda T: T.mvlgamma(T.ones(2) + 3, 1.5),
    "group_norm(1.5)": lambda T: T.group_norm(T.ones(2, 4, 3), 1.5),
    "adaptive_avg_pool1d(1.5)": lambda T: T.adaptive_avg_pool1d(T.ones(1, 2, 4), 1.5),
    "round(positional decimals)": lambda T: T.round(T.ones(2), 2), "Tensor.round(None)": lambda T: T.ones(2).round(None),
    "round(decimals=2)_ok": lambda T: T.round(T.ones(2), decimals=2),
    "zeros(size=())_ok": lambda T: T.zeros(size=()),
    "zeros(())_ok": lambda T: T.zeros(()),
    "requires_grad_(1)": lambda T: T.ones(2).requires_grad_(1), "requires_grad_('a')": lambda T: T.ones(2).requires_grad_("a"),
    "requires_grad_(None)": lambda T: T.ones(2).requires_grad_(None),
    "requires_grad_(False)_ok": lambda T: T.ones(2).requires_grad_(False),
    "Tensor.qr('a')": lambda T: T.ones(2, 2).qr("a"), "Tensor.svd(None)": lambda T: T.ones(2, 2).svd(None),
    "Tensor.svd(1)": lambda T: T.ones(2, 2).svd(1), "Tensor.lu(pivot=1)": lambda T: T.eye(2).lu(pivot=1),
    "lu('a')": lambda T: T.lu(T.eye(2), "a"), "qr(1)": lambda T: T.qr(T.eye(2), 1),
    "cholesky(upper=1)": lambda T: T.cholesky(T.eye(2), 1),
    "unique(sorted=1)": lambda T: T.unique(T.ones(3), sorted=1), "unique(dim=1.5)": lambda T: T.unique(T.ones(3), dim=1.5),
    "Tensor.unique('a')": lambda T: T.ones(3).unique("a"),
    "unique_consecutive(return_counts='a')": lambda T: T.unique_consecutive(T.ones(3), return_counts="a"),
    "unique(return_counts=True)_ok": lambda T: T.unique(T.ones(3), return_counts=True),
    "nextafter(t, 1.5)": lambda T: T.nextafter(T.ones(2), 1.5), "logaddexp2(t, 2)": lambda T: T.logaddexp2(T.ones(2), 2),
    "igamma(t, 1.0)": lambda T: T.igamma(T.ones(2), 1.0), "trapezoid(t, 99)": lambda T: T.trapezoid(T.ones(3), 99),
    "trapezoid(dx=2)_ok": lambda T: T.trapezoid(T.ones(3), dx=2),
    "pairwise_distance(t, 1.5)": lambda T: T.pairwise_distance(T.ones(2, 3), 1.5),
    "celu(t, tensor)": lambda T: T.celu(T.ones(2, 3), T.ones(2, 3)),
    "hardshrink(t, tensor)": lambda T: T.hardshrink(T.ones(2, 3), T.ones(2, 3)),
    "hardshrink(t, 0-d)_ok": lambda T: T.hardshrink(T.ones(2, 3), T.tensor(0.5)),
    "logit(t, tensor)": lambda T: T.logit(T.ones(2, 3) * 0.5, T.ones(2, 3)),
    "nan_to_num(t, None)_ok": lambda T: T.nan_to_num(T.ones(2), None),
    "Tensor.float(None)": lambda T: T.ones(2).float(None), "Tensor.long(None)": lambda T: T.ones(2).long(None),
    "cross_entropy(int32 target)": lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1], dtype=T.int32)),
    "nll_loss(uint8 target)_ok": lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([0, 1], dtype=T.uint8)),
    "unique(t, t)": lambda T: T.unique(T.ones(2, 3), T.ones(2, 3)),
    "unique_consecutive(t, t)": lambda T: T.unique_consecutive(T.ones(2, 3), T.ones(2, 3)),
    "unique(t, t, t, t, t)": lambda T: T.unique(*[T.ones(2, 3)] * 5),
    "batch_norm(0 channels)_ok": lambda T: T.nn.functional.batch_norm(T.ones(2, 0), None, None, training=True),
    "lstsq(None)": lambda T: T.lstsq(None), "lstsq(t, t)": lambda T: T.lstsq(T.eye(2), T.eye(2)),
    "Tensor.eig(t, t, t, t)": lambda T: T.eye(2).eig(*[T.eye(2)] * 3), "matrix_rank()": lambda T: T.matrix_rank(),
    # sizes and dims: a float is not truncated, None / a string / a tensor of several elements refused
    "view(None)": lambda T: T.ones(2, 3).view(None), "view(2.0, 3.0)": lambda T: T.ones(2, 3).view(2.0, 3.0),
    "view('float32')": lambda T: T.ones(2, 4).view("float32"), "reshape(6.0)": lambda T: T.ones(2, 3).reshape(6.0),
    "repeat('a')": lambda T: T.ones(2, 3).repeat("a"), "permute(tensor)": lambda T: T.ones(2, 3).permute(T.ones(2, 3)),
    "expand(2.5, 3)": lambda T: T.ones(1, 3).expand(2.5, 3), "flip(dims=None)": lambda T: T.ones(2).flip(dims=None),
    "view(numpy int)_ok": lambda T: T.ones(2, 3).view(__import__("numpy").int64(6)),
    "view(0-d int tensor)_ok": lambda T: T.ones(2, 3).view(T.tensor(6)),
    "view(dtype)_ok": lambda T: T.ones(2, 4).view(T.int32),
    "transpose(0, 1.5)": lambda T: T.ones(2, 3).transpose(0, 1.5), "softmax(1.5)": lambda T: T.ones(2, 3).softmax(1.5),
    "cumsum(1.5)": lambda T: T.ones(2, 3).cumsum(1.5), "unsqueeze(1.5)": lambda T: T.ones(2, 3).unsqueeze(1.5),
    "sum(keepdim='a')": lambda T: T.ones(2, 3).sum(0, keepdim="a"),
    "sort(descending=None)": lambda T: T.ones(3).sort(descending=None),
    "sum(keepdim=True)_ok": lambda T: T.ones(2, 3).sum(0, keepdim=True),
}
for k, f in SILENT.items():
    case(k, f)


# ---- badinput5: bounds, dtypes, kernel order and activations (each fixed from the badinput5 probe)
BADINPUT5 = {
    # a required bound of None; a non-Tensor where clamp's input goes
    "clamp_max(t, None)": lambda T: T.clamp_max(T.ones(2), None), "Tensor.clamp_min(None)": lambda T: T.ones(2).clamp_min(None),
    "Tensor.clamp_max_(None)": lambda T: T.ones(2).clamp_max_(None), "clamp(None)": lambda T: T.clamp(None),
    "clamp_max(t, 0.5)_ok": lambda T: T.clamp_max(T.ones(2), 0.5),
    # Tensor's autograd methods called on the class with a non-Tensor
    "Tensor.retain_grad(None)": lambda T: T.Tensor.retain_grad(None),
    "Tensor.register_hook(None, f)": lambda T: T.Tensor.register_hook(None, lambda g: g),   # Python in torch
    "Tensor.register_post_accumulate_grad_hook(None, f)": lambda T: T.Tensor.register_post_accumulate_grad_hook(
        None, lambda t: None),
    # BatchNorm of 0 features: torch reads element 0 of the empty affine weight
    "BatchNorm1d(0)(2x0)": lambda T: T.nn.BatchNorm1d(0)(T.ones(2, 0)),
    "BatchNorm2d(0)(1x0x2x2)": lambda T: T.nn.BatchNorm2d(0)(T.ones(1, 0, 2, 2)),
    "BatchNorm1d(0, affine=False)(2x0)_ok": lambda T: T.nn.BatchNorm1d(0, affine=False)(T.ones(2, 0)),
    "F.batch_norm(2x0, empty weight)": lambda T: T.nn.functional.batch_norm(T.ones(2, 0), None, None, T.ones(0),
                                                                              training=True),
    # dtype= by name or as a numpy type (torch takes a torch.dtype or a Python number type)
    "zeros(dtype=str)": lambda T: T.zeros(2, dtype="float32"), "ones_like(dtype=str)": lambda T: T.ones_like(T.ones(2), dtype="float32"),
    "tensor(dtype=str)": lambda T: T.tensor([1.0], dtype="float32"), "rand(dtype=str)": lambda T: T.rand(2, dtype="float32"),
    "arange(dtype=numpy)": lambda T: T.arange(3, dtype=__import__("numpy").float32),
    "Tensor.sum(dtype=str)": lambda T: T.ones(2).sum(dtype="float32"), "mean(dtype=str)": lambda T: T.mean(T.ones(2), dtype="float32"),
    "softmax(dtype=str)": lambda T: T.softmax(T.ones(2), 0, dtype="float32"),
    "Tensor.cumsum(dtype=numpy)": lambda T: T.ones(2).cumsum(0, dtype=__import__("numpy").float64),
    "zeros(dtype=float)_ok": lambda T: T.zeros(2, dtype=float), "Tensor.sum(dtype=int)_ok": lambda T: T.ones(2).sum(dtype=int),
    "full(dtype=bool)_ok": lambda T: T.full((2,), 1, dtype=bool),
    # a non-int diagonal / offset, a None input reaching the op
    "triu(t, None)": lambda T: T.triu(T.ones(2, 3), None), "Tensor.tril('abc')": lambda T: T.ones(2, 3).tril("abc"),
    "Tensor.diag(list)": lambda T: T.ones(2, 3).diag([1]), "Tensor.diagonal(object)": lambda T: T.ones(2, 3).diagonal(object()),
    "triu(None)": lambda T: T.triu(None),
    # the operands' kinds, then broadcasting, before a bitwise / integer kernel's dtype check
    "Tensor.bitwise_and(None)": lambda T: T.ones(2).bitwise_and(None), "bitwise_or(t, 'a')": lambda T: T.bitwise_or(T.ones(2), "a"),
    "Tensor.bitwise_xor(list)": lambda T: T.ones(2).bitwise_xor([1]), "Tensor.lcm_(None)": lambda T: T.ones(2).lcm_(None),
    "Tensor.bitwise_left_shift_(None)": lambda T: T.ones(2).bitwise_left_shift_(None),
    "Tensor.bitwise_and(3x2 float)": lambda T: T.ones(2, 3).bitwise_and(T.ones(3, 2)),
    "Tensor.gcd(3x2 float)": lambda T: T.ones(2, 3).gcd(T.ones(3, 2)),
    "Tensor.bitwise_and(float)": lambda T: T.ones(2).bitwise_and(T.ones(2)),
    # floating-only activations: an integer or bool input is NotImplementedError
    **{f"F.{n}({dt})": (lambda T, n=n, dt=dt: getattr(T.nn.functional, n)(T.ones(2, 3, dtype=getattr(T, dt))))
       for n in ("gelu", "elu", "selu", "celu", "leaky_relu", "softplus", "mish", "hardswish", "hardsigmoid",
                 "logsigmoid", "hardshrink", "softshrink", "rrelu", "silu", "relu", "relu6", "hardtanh")
       for dt in ("int64", "bool")},
    "selu(long)": lambda T: T.selu(T.ones(2, dtype=T.int64)), "celu(bool)": lambda T: T.celu(T.ones(2, dtype=T.bool)),
    "nn.GELU()(long)": lambda T: T.nn.GELU()(T.ones(2, dtype=T.int64)), "nn.ELU()(long)": lambda T: T.nn.ELU()(T.ones(2, dtype=T.int64)),
    "Tensor.relu(bool)": lambda T: T.ones(2, dtype=T.bool).relu(), "nn.ReLU()(bool)": lambda T: T.nn.ReLU()(T.ones(2, dtype=T.bool)),
    "F.gelu(float)_ok": lambda T: T.nn.functional.gelu(T.ones(2)),
    # Tensor-only arguments a kernel's own check used to see first; sizes as ints
    "take_along_dim(t, None)": lambda T: T.take_along_dim(T.ones(2, 3), None),
    "Tensor.take_along_dim(1.5)": lambda T: T.ones(2, 3).take_along_dim(1.5),
    "Tensor.masked_select(1.5)": lambda T: T.ones(2, 3).masked_select(1.5),
    "split_with_sizes(t, floats)": lambda T: T.split_with_sizes(T.ones(2, 3), [0.5, 1.5]),
    # dims of another kind where an int goes (float, str, tensor of several elements)
    "Tensor.flatten(1.5)": lambda T: T.ones(2, 3).flatten(1.5), "flatten(t, 1.5)": lambda T: T.flatten(T.ones(2, 3), 1.5),
    "flatten(t, tensor)": lambda T: T.flatten(T.ones(2, 3), T.ones(3, 2)),
    "Tensor.size(1.5)": lambda T: T.ones(2, 3).size(1.5), "Tensor.softmax('a')": lambda T: T.ones(2, 3).softmax("a"),
    "Tensor.select(1.0, 0)": lambda T: T.ones(2, 3).select(1.0, 0),
    "Tensor.size(numpy int)_ok": lambda T: T.ones(2, 3).size(__import__("numpy").int64(1)),
    "Tensor.sum(0-d int tensor)_ok": lambda T: T.ones(2, 3).sum(T.tensor(1)),
    "Tensor.roll('abc')": lambda T: T.ones(2, 3).roll("abc"), "Tensor.roll(floats)": lambda T: T.ones(2, 3).roll([0.5, 0.25]),
    "roll(t, tensor)": lambda T: T.roll(T.ones(2, 3), T.ones(3, 2)), "Tensor.roll(0-d tensor)_ok": lambda T: T.ones(2, 3).roll(T.tensor(1)),
    # non-Tensor inputs of functions torch parses one call down
    "unique(None)": lambda T: T.unique(None), "unique_consecutive('a')": lambda T: T.unique_consecutive("a"),
    "meshgrid(t, None)": lambda T: T.meshgrid(T.ones(2), None, indexing="ij"),
    # the random in-place draws: numbers only (random_'s bounds: ints)
    "Tensor.normal_(tensor)": lambda T: T.ones(2, 3).normal_(T.ones(3, 2)), "Tensor.normal_(list)": lambda T: T.ones(2, 3).normal_([1.0]),
    "Tensor.log_normal_('a')": lambda T: T.ones(2, 3).log_normal_("a"), "Tensor.random_(None)": lambda T: T.ones(2, 3).random_(None),
    "Tensor.random_(1.5)": lambda T: T.ones(2, 3).random_(1.5), "Tensor.exponential_(tensor)": lambda T: T.ones(2, 3).exponential_(T.ones(2)),
    "Tensor.cauchy_(0, tensor)": lambda T: T.ones(2, 3).cauchy_(0.0, T.ones(2)),
    "Tensor.uniform_(-1, 1)_ok": lambda T: T.ones(2, 3).uniform_(-1, 1), "Tensor.random_(0, 10)_ok": lambda T: T.ones(2, 3).random_(0, 10),
    "Tensor.normal_(0-d tensor, 1)_ok": lambda T: T.ones(2, 3).normal_(T.tensor(0.0), 1.0),
    "Tensor.bernoulli_(tensor)_ok": lambda T: T.ones(2, 3).bernoulli_(T.ones(2, 3) * 0.5),
    "Tensor.random_(0-d int tensor)_ok": lambda T: T.ones(2, 3).random_(T.tensor(3)),
    # F.pad's pad must be ints; padding / pooling layers keep what they are given (checked in forward)
    "F.pad(t, floats)": lambda T: T.nn.functional.pad(T.ones(1, 2, 4), (1.5, 1)),
    "F.pad(t, None)": lambda T: T.nn.functional.pad(T.ones(1, 2, 4), None),
    "F.pad(t, (1, None))": lambda T: T.nn.functional.pad(T.ones(1, 2, 4), (1, None)),
    "F.pad(t, tensor)": lambda T: T.nn.functional.pad(T.ones(1, 2, 4), T.tensor([1, 1])),
    "F.pad(t, numpy ints)_ok": lambda T: T.nn.functional.pad(T.ones(1, 2, 4), (__import__("numpy").int64(1), 1)),
    "ZeroPad2d(2.5)_ok": lambda T: T.nn.ZeroPad2d(2.5), "ZeroPad2d(2.5)(x)": lambda T: T.nn.ZeroPad2d(2.5)(T.ones(1, 2, 4, 4)),
    "ZeroPad2d((1, 1))(x)_ok": lambda T: T.nn.ZeroPad2d((1, 1))(T.ones(1, 2, 4, 4)),
    "ReflectionPad2d([2, 2])_ok": lambda T: T.nn.ReflectionPad2d([2, 2]),
    "ConstantPad1d('abc', 0.0)(x)": lambda T: T.nn.ConstantPad1d("abc", 0.0)(T.ones(1, 2, 4)),
    "AvgPool1d(None)_ok": lambda T: T.nn.AvgPool1d(None), "AvgPool1d(2.5)(x)": lambda T: T.nn.AvgPool1d(2.5)(T.ones(1, 2, 4)),
}
for k, f in BADINPUT5.items():
    case(k, f)


# ---- badinput6: Tensor methods called on the class with a non-Tensor self (NOTE [unbound self])
BADINPUT6 = {
    **{f"unbound Tensor.{n}(None)": (lambda T, n=n: getattr(T.Tensor, n)(None))
       for n in ("flatten", "view", "reshape", "permute", "t", "t_", "expand", "repeat", "diag", "diagonal", "trace",
                 "fliplr", "flipud", "adjoint", "clone", "contiguous", "detach", "detach_", "dim", "ndimension",
                 "numel", "nelement", "size", "item", "requires_grad_", "float", "long", "bool", "half", "double",
                 "to", "get_device", "round", "normal_", "uniform_", "random_", "bernoulli_", "clamp_",
                 "resolve_neg", "sparse_dim")},
    "unbound Tensor.view('abc', 2)": lambda T: T.Tensor.view("abc", 2), "unbound Tensor.float([1.0])": lambda T: T.Tensor.float([1.0]),
    "Tensor.flatten(t)_ok": lambda T: T.Tensor.flatten(T.ones(2, 3)), "Tensor.size(t, 1)_ok": lambda T: T.Tensor.size(T.ones(2, 3), 1),
    "Tensor.float(t)_ok": lambda T: T.Tensor.float(T.ones(2, dtype=T.int64)), "Tensor.to(t, float64)_ok": lambda T: T.Tensor.to(T.ones(2), T.float64),
    "flatten(None)": lambda T: T.flatten(None), "t(None)": lambda T: T.t(None), "clone(None)": lambda T: T.clone(None),
    # a required size / dims argument left out (x.view(()) is the 0-d shape)
    "Tensor.reshape()": lambda T: T.ones(1).reshape(), "Tensor.view()": lambda T: T.ones(1).view(),
    "Tensor.permute()": lambda T: T.ones(2).permute(), "Tensor.expand()": lambda T: T.ones(2).expand(),
    "Tensor.repeat()": lambda T: T.ones(2).repeat(), "reshape(t)": lambda T: T.reshape(T.ones(1)),
    "Tensor.view(())_ok": lambda T: T.ones(1).view(()), "Tensor.reshape([])_ok": lambda T: T.ones(1).reshape([]),
    "broadcast_tensors(0-d, 0-d)_ok": lambda T: T.broadcast_tensors(T.tensor(1.0), T.tensor(2.0)),
    "tile(0-d, ())_ok": lambda T: T.tile(T.tensor(1.0), ()),
    # where with one of input/other; layouts by name; gelu's keyword-only approximate
    "where(c, t)": lambda T: T.where(T.ones(2) > 0, T.ones(2)), "where(c, 1.5)": lambda T: T.where(T.ones(2) > 0, 1.5),
    "where(c)_ok": lambda T: T.where(T.ones(2) > 0),
    "zeros(layout=str)": lambda T: T.zeros(2, layout="strided"), "ones_like(layout=str)": lambda T: T.ones_like(T.ones(2), layout="strided"),
    "randn(layout=str)": lambda T: T.randn(2, layout="strided"), "zeros(layout=strided)_ok": lambda T: T.zeros(2, layout=T.strided),
    "F.gelu(t, 'tanh')": lambda T: T.nn.functional.gelu(T.ones(2), "tanh"),
    "F.gelu(t, approximate='tanh')_ok": lambda T: T.nn.functional.gelu(T.ones(2), approximate="tanh"),
    # hstack & co given a Tensor instead of a sequence of them
    **{f"{n}(t)": (lambda T, n=n: getattr(T, n)(T.ones(2, 3))) for n in ("hstack", "vstack", "dstack", "column_stack", "row_stack")},
    "hstack([t])_ok": lambda T: T.hstack([T.ones(2)]),
    # non-Tensor inputs and sizes of the wrong kind in nn.functional
    "F.alpha_dropout(None)": lambda T: T.nn.functional.alpha_dropout(None),
    "F.feature_alpha_dropout('a')": lambda T: T.nn.functional.feature_alpha_dropout("a"),
    "F.adaptive_avg_pool2d(t, None)": lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 2, 4, 4), None),
    "F.adaptive_max_pool2d(t, 1.5)": lambda T: T.nn.functional.adaptive_max_pool2d(T.ones(1, 2, 4, 4), 1.5),
    "F.adaptive_avg_pool1d(t, None)": lambda T: T.nn.functional.adaptive_avg_pool1d(T.ones(1, 2, 4), None),
    "F.adaptive_avg_pool2d(t, (None, 2))_ok": lambda T: T.nn.functional.adaptive_avg_pool2d(T.ones(1, 2, 4, 4), (None, 2)),
    "F.fractional_max_pool2d(2-d, k) no size": lambda T: T.nn.functional.fractional_max_pool2d(T.ones(2, 3), 2),
    "F.grid_sample(t, None)": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 2, 2), None),
    # dims given as a tensor of several elements (the hot methods have no guard)
    "Tensor.flatten(tensor)": lambda T: T.ones(2, 3).flatten(T.ones(3, 2)), "Tensor.size(tensor)": lambda T: T.ones(2, 3).size(T.ones(2)),
    "Tensor.softmax(tensor)": lambda T: T.ones(2, 3).softmax(T.ones(2)),
    "Tensor.size(0-d int tensor)_ok": lambda T: T.ones(2, 3).size(T.tensor(1)),
    "unique(t, t, t, t, t)_flags first": lambda T: T.unique(T.ones(2), T.ones(2), T.ones(2), T.ones(2), T.ones(2)),
    # the recurrent kernels' functional forms with too few arguments
    "lstm(t)": lambda T: T.lstm(T.ones(2, 3)), "gru(t, None)": lambda T: T.gru(T.ones(2, 3), None),
    "rnn_tanh(t, t)": lambda T: T.rnn_tanh(T.ones(2, 3), T.ones(2, 3)),
    # strings where numbers go (numpy's comparison error before), sizes and scalars of the wrong kind
    "quantile(t, 'a')": lambda T: T.quantile(T.ones(2, 3), "a"), "Tensor.quantile([0.5])": lambda T: T.ones(2, 3).quantile([0.5]),
    "Tensor.nanquantile('a')": lambda T: T.ones(2, 3).nanquantile("a"),
    "quantile(t, 0.5)_ok": lambda T: T.quantile(T.ones(2, 3), 0.5),
    "bernoulli(t, 'a')": lambda T: T.bernoulli(T.ones(2, 3) / 2, "a"), "normal(t, 'a')": lambda T: T.normal(T.ones(2, 3), "a"),
    "Tensor.split('abc')": lambda T: T.ones(2, 3).split("abc"), "Tensor.split([1.0, 1.0])": lambda T: T.ones(2, 3).split([1.0, 1.0]),
    "split(t, tensor)": lambda T: T.split(T.ones(2, 3), T.ones(3, 2)), "Tensor.split([1, 1])_ok": lambda T: T.ones(2, 3).split([1, 1]),
    "scalar_tensor(None)": lambda T: T.scalar_tensor(None), "scalar_tensor(t)": lambda T: T.scalar_tensor(T.ones(2)),
    "scalar_tensor(0-d t)_ok": lambda T: T.scalar_tensor(T.tensor(2.0)),
    # in-place rounding of bool (no kernel in torch); interpolate's size / scale_factor first
    **{f"Tensor.{n}_(bool)": (lambda T, n=n: getattr(T.ones(2, dtype=T.bool), n + "_")())
       for n in ("ceil", "floor", "round", "trunc", "fix", "frac", "abs", "sign")},
    "Tensor.frac_(long)": lambda T: T.ones(2, dtype=T.int64).frac_(), "Tensor.floor_(long)_ok": lambda T: T.ones(2, dtype=T.int64).floor_(),
    "abs_(None) fn": lambda T: T.abs_(None), "unbound Tensor.ceil_(None)": lambda T: T.Tensor.ceil_(None),
    "F.interpolate(2-d) no size": lambda T: T.nn.functional.interpolate(T.ones(2, 3)),
    "F.interpolate(None)": lambda T: T.nn.functional.interpolate(None),
    "F.dropout2d(long)": lambda T: T.nn.functional.dropout2d(T.ones(2, 3, dtype=T.int64)),
    "F.dropout1d(long)": lambda T: T.nn.functional.dropout1d(T.ones(2, 3, dtype=T.int64)),
    "F.dropout2d(long, p=1)_ok": lambda T: T.nn.functional.dropout2d(T.ones(2, 3, dtype=T.int64), p=1.0),
    # numbers where torch's parser takes a Number / an int
    "F.leaky_relu(t, tensor)": lambda T: T.nn.functional.leaky_relu(T.ones(2, 3), T.ones(3, 2)),
    "F.leaky_relu(t, 0-d tensor)_ok": lambda T: T.nn.functional.leaky_relu(T.ones(2, 3), T.tensor(0.1)),
    "F.celu(t, tensor)": lambda T: T.nn.functional.celu(T.ones(2, 3), T.ones(3, 2)),
    "F.rrelu(t, tensor)": lambda T: T.nn.functional.rrelu(T.ones(2, 3), T.ones(3, 2)),
    "F.hardtanh(t, None)": lambda T: T.nn.functional.hardtanh(T.ones(2, 3), None),
    "F.hardtanh(t, tensor)": lambda T: T.nn.functional.hardtanh(T.ones(2, 3), T.ones(3, 2)),
    "F.hardtanh_(t, None)": lambda T: T.nn.functional.hardtanh_(T.ones(2, 3), None),
    "F.normalize(t, None)_ok": lambda T: T.nn.functional.normalize(T.ones(2, 3), None),
    "nn.Bilinear(tensor, 3, 2)": lambda T: T.nn.Bilinear(T.ones(2), 3, 2),
    "Tensor.stft(t, t, t, t, t, t)": lambda T: T.ones(16).stft(*[T.ones(16)] * 6),
    "F.normalize(t, tensor)": lambda T: T.nn.functional.normalize(T.ones(2, 3), T.ones(3, 2)),
    "Tensor.matrix_power(1.5)": lambda T: T.ones(2, 2).matrix_power(1.5),
    "Tensor.matrix_power(tensor)": lambda T: T.ones(2, 2).matrix_power(T.ones(2)),
    "Tensor.matrix_power(0-d int tensor)_ok": lambda T: T.ones(2, 2).matrix_power(T.tensor(2)),
    "arange(list)": lambda T: T.arange([1, 2]), "arange(None)": lambda T: T.arange(None),
    "Tensor.norm('abc')": lambda T: T.ones(2, 3).norm("abc"), "Tensor.norm(tensor)": lambda T: T.ones(2, 3).norm(T.ones(3, 2)),
    "Tensor.bernoulli_(p of another shape)": lambda T: T.ones(2, 3).bernoulli_(T.ones(3, 2) / 2),
    "Tensor.bernoulli_(p broadcast)_ok": lambda T: T.ones(2, 3).bernoulli_(T.ones(3) / 2),
    "tril_indices(t, 3)": lambda T: T.tril_indices(T.ones(2, 3), 3), "randint(t, 5)": lambda T: T.randint(T.ones(2, 3), 5),
    "randint(10, (3,))_ok": lambda T: T.randint(10, (3,)),
    "F.embedding(idx, None)": lambda T: T.nn.functional.embedding(T.tensor([0, 1]), None),
    "orgqr(t, None)": lambda T: T.orgqr(T.ones(3, 2), None),
    "Tensor.fill_diagonal_(None)": lambda T: T.ones(2, 3).fill_diagonal_(None),
    "Tensor.fill_diagonal_(tensor)": lambda T: T.ones(2, 3).fill_diagonal_(T.ones(3, 2)),
    "isin(t, None)": lambda T: T.isin(T.ones(2), None), "isin(t, 1.0)_ok": lambda T: T.isin(T.ones(2), 1.0),
    "Tensor.float_power_(None)": lambda T: T.ones(2, dtype=T.float64).float_power_(None),
    "stft(t, None)": lambda T: T.stft(T.ones(16), None), "istft(t, 1.5)": lambda T: T.istft(T.ones(5, 3), 1.5),
    "segment_reduce(t, None)": lambda T: T.segment_reduce(T.ones(2, 3), None),
    "meshgrid(2-d, None)": lambda T: T.meshgrid(T.ones(2, 3), None, indexing="ij"),
    "F.adaptive_max_pool3d(t, None)": lambda T: T.nn.functional.adaptive_max_pool3d(T.ones(1, 2, 2, 2), None),
    "histogram(t)_ok": lambda T: T.histogram(T.ones(3)),
    # torch's Python-level functions fail on a non-Tensor with AttributeError; from_dlpack's capsule check
    "svd_lowrank(None)": lambda T: T.svd_lowrank(None), "pca_lowrank('a')": lambda T: T.pca_lowrank("a"),
    "lobpcg(None)": lambda T: T.lobpcg(None), "from_dlpack(None)": lambda T: T.from_dlpack(None),
    "F.adaptive_max_pool3d(2-d, 'abc')": lambda T: T.nn.functional.adaptive_max_pool3d(T.ones(2, 3), "abc"),
    "Tensor.contiguous(format positional)": lambda T: T.ones(2).contiguous(T.contiguous_format),
    # bool (and uint8) inputs torch's statistics refuse
    "cov(bool)": lambda T: T.cov(T.ones(2, 3, dtype=T.bool)), "corrcoef(bool)": lambda T: T.corrcoef(T.ones(2, 3, dtype=T.bool)),
    "trapezoid(bool)": lambda T: T.trapezoid(T.ones(2, 3, dtype=T.bool)),
    "cumulative_trapezoid(bool)": lambda T: T.cumulative_trapezoid(T.ones(2, 3, dtype=T.bool)),
    "trapezoid(t, bool x)": lambda T: T.trapezoid(T.ones(3), T.ones(3, dtype=T.bool)),
    "gradient(bool)": lambda T: T.gradient(T.ones(2, 3, dtype=T.bool)), "gradient(uint8)": lambda T: T.gradient(T.ones(3, dtype=T.uint8)),
    "cov(long)_ok": lambda T: T.cov(T.ones(2, 3, dtype=T.int64)),
    "igamma(t, 1.5)": lambda T: T.igamma(T.ones(2), 1.5), "pinverse(t, None)": lambda T: T.pinverse(T.ones(2, 2), None),
    "nn.Bilinear(0, 3, 2)": lambda T: T.nn.Bilinear(0, 3, 2), "nn.Bilinear(3, 0, 2)_ok": lambda T: T.nn.Bilinear(3, 0, 2),
    "Tensor.orgqr(None)": lambda T: T.ones(3, 2).orgqr(None),
    "F.avg_pool1d(t, None)": lambda T: T.nn.functional.avg_pool1d(T.ones(1, 1, 4), None),
    "repeat_interleave(t, 1.5)": lambda T: T.repeat_interleave(T.ones(2, 3), 1.5),
    "repeat_interleave(int tensor)_ok": lambda T: T.repeat_interleave(T.tensor([1, 2])),
}
for k, f in BADINPUT6.items():
    case(k, f)


def _tmpdir():
    import tempfile
    return tempfile.mkdtemp()


def _bytes_file(data):
    import os
    path = os.path.join(_tmpdir(), "x.pt")
    with open(path, "wb") as fh:
        fh.write(data)
    return path


# ---- save / load misuse -----------------------------------------------------------------------
SAVE_LOAD = {
    "save(directory)": lambda T: T.save({"a": T.ones(2)}, _tmpdir()),
    "save(float f)": lambda T: T.save({"a": T.ones(2)}, 3.5),
    "load(None)": lambda T: T.load(None),
    "load(missing)": lambda T: T.load(_tmpdir() + "/missing.pt"),
    "load(garbage)": lambda T: T.load(_bytes_file(b"\x00\x01 not a checkpoint")),
    "load(empty file)": lambda T: T.load(_bytes_file(b"")),
    "load(directory)": lambda T: T.load(_tmpdir()),
}
for k, f in SAVE_LOAD.items():
    case(k, f)

# ---- floating-only kernels check the operands' common dtype (int64 beside float32 computes) --
MIXED = {"f32": lambda T: T.arange(6.).reshape(2, 3), "i64": lambda T: T.arange(6).reshape(2, 3),
         "bool": lambda T: T.ones(2, 3, dtype=T.bool)}
for fn_name, (la, lb) in itertools.product(
        ["cosine_similarity", "dist", "hypot", "igamma", "igammac", "logaddexp", "nextafter"],
        [("f32", "i64"), ("i64", "f32"), ("i64", "i64"), ("bool", "f32"), ("bool", "bool")]):
    case(f"{fn_name}({la},{lb})", lambda T, n=fn_name, a=la, b=lb: getattr(T, n)(MIXED[a](T), MIXED[b](T)))

# tracegrad's deliberate differences (README "Differences from torch") and gaps not fixed yet;
# each must fail (strict xfail), so fixing one is noticed.
# (take_along_dim_oob left this list: torch 2.13 takes take_along_dim's indices modulo the dim's
# size, which tracegrad now does too.)
# (randint_like's float and None bounds left it in round 9: TypeError as torch's parser)
KNOWN = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n])) if n in KNOWN else n
    for n in sorted(CASES)])
def test_bad_input_parity(name):
    assert_same_class(name, CASES[name], torch, tracegrad)


def test_table_is_large():
    assert len(CASES) >= 300


def test_masked_fill__names_the_mask_dtype():
    # the in-place form says which dtype it got, as torch and the out-of-place form do
    for dt, word in (("uint8", "unsigned char"), ("int64", "long int"), ("float32", "float")):
        assert_gist(dt, lambda T: T.ones(3).masked_fill_(T.ones(3, dtype=getattr(T, dt)), 0.0),
                    f"only supports boolean masks, but got mask with dtype {word}", torch, tracegrad)

