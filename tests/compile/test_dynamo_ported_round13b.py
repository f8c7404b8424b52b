"""Round-13 ports of test/inductor/test_torchinductor.py (CommonTemplate): small op-level tests,
each a compiled function that must equal torch eager and tracegrad eager on every call, with
values that change between calls (the first call runs eagerly, the second traces). One table
row per original test (its name in the row's id; the body is the original's op mix at tiny
shapes); rows marked ``grad`` also compare the inputs' gradients. The rest of the round-13
ports are in test_dynamo_ported_round13.py and test_dynamo_ported_round13c.py."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ._dynamo_port import check, rand  # noqa: E402


def f32(T, i, *shape, seed=0, rg=False):
    return rand(T, i, *shape, rg=rg, seed=seed)


def ints(T, i, *shape, lo=-8, hi=8, seed=0, dtype="int64"):
    a = np.random.RandomState(seed + i).randint(lo, hi, size=shape)
    return T.tensor(a.astype(dtype))


def nz(T, i, *shape, seed=0):
    """Floats kept away from zero (divisors)."""
    a = np.random.RandomState(seed + i).randn(*shape)
    return T.tensor((np.sign(a) * (np.abs(a) + 0.5)).astype("float32"))


def pos(T, i, *shape, seed=0, rg=False):
    a = np.abs(np.random.RandomState(seed + i).randn(*shape)) + 0.2
    t = T.tensor(a.astype("float32"))
    return t.requires_grad_() if rg else t


def _setitem(a, b):
    a[b, 1:] = 3.0
    a[b[:1]] += a[2:3]
    return a


def _one(g):
    return lambda T, i: (g(T, i),)


# name -> (fn(T, *args), args(T, i), grad)
CASES = {
    "add_const_int": (lambda T, a: (a + 1, T.add(a, 1, alpha=2)), _one(lambda T, i: ints(T, i, 3, 4)), False),
    "add_const_float": (lambda T, a: (a + 1.5, T.add(a, 1.5, alpha=-2)), _one(lambda T, i: f32(T, i, 3, 4)), False),
    "add_inplace_permuted": (lambda T, a, b: a.add_(b.permute(1, 0)) * 1,
                             lambda T, i: (f32(T, i, 4, 3), f32(T, i, 3, 4, seed=4)), False),
    "abs": (lambda T, a: (a / (T.abs(a) + 1),), _one(lambda T, i: f32(T, i, 5, 3, rg=True)), True),
    "sgn": (lambda T, a: (T.sgn(a), T.sgn(a + 1) - 1), _one(lambda T, i: f32(T, i, 5, 3)), False),
    "max_min": (lambda T, a, b: (T.maximum(a, b), T.minimum(a, b)),
                lambda T, i: (f32(T, i, 4, 4, rg=True), f32(T, i, 4, 4, seed=9, rg=True)), True),
    "neg_max_uint8": (lambda T, a: T.max(-a), _one(lambda T, i: ints(T, i, 8, lo=0, hi=250, dtype="uint8")), False),
    "fmin_fmax": (lambda T, a, b: (T.fmin(a, b), T.fmax(a, b), T.fmax(a + T.nan, b)),
                  lambda T, i: (f32(T, i, 6), f32(T, i, 6, seed=3)), False),
    "bitwise": (lambda T, x, y: (T.bitwise_not(x), T.bitwise_or(x, y), T.bitwise_xor(x, y), T.bitwise_and(x, y)),
                lambda T, i: (ints(T, i, 8, lo=0, hi=100, dtype="int32"), ints(T, i, 8, lo=0, hi=100, seed=3, dtype="int32")),
                False),
    "bitwise2": (lambda T, x: (T.bitwise_not(x), ~x), _one(lambda T, i: T.tensor([True, False, i % 2 == 0])), False),
    "bitwise3": (lambda T, x, y: (T.bitwise_left_shift(x, y), T.bitwise_right_shift(x, y), x << 1, x >> 2),
                 lambda T, i: (ints(T, i, 6, lo=0, hi=64, dtype="int32"), ints(T, i, 6, lo=0, hi=5, seed=2, dtype="int32")),
                 False),
    "inf": (lambda T, a: (a + float("inf"), a + float("-inf"), a * -float("inf")),
            _one(lambda T, i: nz(T, i, 5)), False),
    "div1": (lambda T, a, b: (T.div(a, b), T.div(a, b, rounding_mode="floor"), T.div(a, b, rounding_mode="trunc")),
             lambda T, i: (f32(T, i, 4, 4) * 10, nz(T, i, 4, 4, seed=5)), False),
    "div_int": (lambda T, a, b: (T.div(a, b), T.div(a, b, rounding_mode="floor"), T.div(a, b, rounding_mode="trunc"),
                                 a // b),
                lambda T, i: (ints(T, i, 8, lo=-50, hi=50), ints(T, i, 8, lo=1, hi=7, seed=4) * (1 - 2 * (i % 2))),
                False),
    "div_scalar": (lambda T, a: (a / 3, T.div(a, 3, rounding_mode="floor"), 7 / (a.abs() + 1)),
                   _one(lambda T, i: ints(T, i, 6)), False),
    "div_zero_dim": (lambda T, a, b: (a / b, b / a, T.div(a, b, rounding_mode="floor")),
                     lambda T, i: (nz(T, i, 5), T.tensor(2.5 + i)), False),
    "both_scalars": (lambda T, a, b: (a + b, b + a, a - b, b * a, a / b),
                     lambda T, i: (T.tensor(2 + i), T.tensor(3.3 - i)), False),
    "sum1": (lambda T, a, b: ((a + b).sum(-1),), lambda T, i: (f32(T, i, 3, 5, rg=True), f32(T, i, 3, 5, seed=1)), True),
    "sum2": (lambda T, a, b: ((a + b).sum([1, 2]), (a + b).sum(-1)),
             lambda T, i: (f32(T, i, 2, 3, 4), f32(T, i, 2, 3, 4, seed=1)), False),
    "sum_int_dtype": (lambda T, a: (a.sum(), a.sum(0, dtype=T.float32), T.sum(a > 0)), _one(lambda T, i: ints(T, i, 4, 3)),
                      False),
    "prod": (lambda T, a: (a.prod(0), a.prod(1), a.prod()), _one(lambda T, i: f32(T, i, 4, 3, rg=True)), True),
    "split_cumsum": (lambda T, a: [t.cumsum(0) for t in a.split(2)], _one(lambda T, i: f32(T, i, 5, 3)), False),
    "split_cumprod": (lambda T, a: [t.cumprod(1) for t in a.split(1, 1)] + [a.cumprod(0)],
                      _one(lambda T, i: f32(T, i, 4, 3, rg=True)), False),
    "round": (lambda T, a: (T.round(a), T.round(a, decimals=1), T.round(a * 10, decimals=-1)),
              _one(lambda T, i: f32(T, i, 8) * 3), False),
    "round_half": (lambda T, a: T.round(a), _one(lambda T, i: T.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 3.5 + i])), False),
    "trunc_floor_ceil": (lambda T, a: (T.trunc(a), T.floor(a), T.ceil(a), T.frac(a)), _one(lambda T, i: f32(T, i, 8) * 3),
                         False),
    "clamp": (lambda T, a: (T.clamp(a, -0.5, 0.5), a.clamp(min=0.1), a.clamp(max=-0.1)),
              _one(lambda T, i: f32(T, i, 6, rg=True)), True),
    "clamp_type_promotion": (lambda T, a: (T.clamp(a, min=-1.5, max=2.5), T.clamp(a, min=T.tensor(1.5))),
                             _one(lambda T, i: ints(T, i, 6)), False),
    "where_with_logical_op": (lambda T, a, b: (T.where(T.logical_and(a > 0, b > 0), a, b),
                                               T.where(T.logical_or(a > 0, b > 0), a, b), T.where(~(a > 0), 1.0, b)),
                              lambda T, i: (f32(T, i, 6), f32(T, i, 6, seed=2)), False),
    "argmax_argmin1": (lambda T, x: (T.argmax(x), T.argmin(x), x.argmax(1, keepdim=True), x.argmin(0)),
                       _one(lambda T, i: f32(T, i, 4, 5)), False),
    "argmax_argmin_ties": (lambda T, x: (x.argmax(1), x.argmin(1)), _one(lambda T, i: ints(T, i, 3, 6, lo=0, hi=3)), False),
    "min_max_reduction": (lambda T, a: (a.max(), a.min(), a.amax(1), a.amin(0), T.max(a, 1)[0], T.min(a, 0)[1]),
                          _one(lambda T, i: f32(T, i, 4, 5, rg=True)), False),
    "min_max_reduction_nan": (lambda T, a: (a.max(), a.min(), a.amax(0), a.amin(1)),
                              _one(lambda T, i: f32(T, i, 3, 4).index_fill(1, T.tensor([i % 4]), float("nan"))), False),
    "softmax_logsoftmax": (lambda T, a: (T.softmax(a, -1), T.log_softmax(a, 0), T.logsumexp(a, 1)),
                           _one(lambda T, i: f32(T, i, 3, 5, rg=True)), True),
    "logsumexp_inf": (lambda T, a: T.logsumexp(a, 1), _one(lambda T, i: f32(T, i, 2, 3).index_fill(1, T.tensor([i % 3]),
                                                                                            float("-inf"))), False),
    "layer_norm": (lambda T, a, w, b: T.nn.functional.layer_norm(a, (4,), w, b),
                   lambda T, i: (f32(T, i, 3, 4, rg=True), pos(T, i, 4, rg=True), f32(T, i, 4, seed=2, rg=True)), True),
    "var_mean_std": (lambda T, a: (*T.var_mean(a, 1), a.std(0), a.var(correction=0), T.std_mean(a, 1, correction=2)[0]),
                     _one(lambda T, i: f32(T, i, 4, 5, rg=True)), False),
    "gather_scatter": (lambda T, a, idx: (T.gather(a, 1, idx), T.zeros(3, 4).scatter(1, idx, a[:, :2]),
                                          T.zeros(3, 4).scatter_add(1, idx, a[:, :2]), T.zeros(3, 4).scatter(1, idx, 2.5)),
                       lambda T, i: (f32(T, i, 3, 4), ints(T, i, 3, 2, lo=0, hi=4)), False),
    "scatter_reduce": (lambda T, a, idx: (a.scatter_reduce(0, idx, a * 2, "sum"), a.scatter_reduce(0, idx, a, "amax"),
                                          a.scatter_reduce(0, idx, a, "mean", include_self=False),
                                          a.scatter(0, idx, a, reduce="multiply")),
                       lambda T, i: (f32(T, i, 4, 3), ints(T, i, 4, 3, lo=0, hi=4)), False),
    "index_put": (lambda T, a, b, c: (T.index_put(a, (b,), c), T.index_put(a, (b,), c, accumulate=True)),
                  lambda T, i: (f32(T, i, 6), ints(T, i, 4, lo=0, hi=6), f32(T, i, 4, seed=3)), False),
    "index_put_setitem": (lambda T, a, b: _setitem(a.clone(), b),
                          lambda T, i: (f32(T, i, 4, 3), T.tensor([i % 4, 2])), False),
    "index_select_add": (lambda T, a, idx, s: (a.index_select(0, idx), a.index_add(0, idx, s), a.index_copy(0, idx, s)),
                         lambda T, i: (f32(T, i, 5, 3), T.tensor([(i + 1) % 5, 3]), f32(T, i, 2, 3, seed=1)), False),
    "masked_fill_promotion": (lambda T, a, m: (a.masked_fill(m, 2.5), a.float().masked_fill(m, -1),
                                               T.zeros(3, 4, dtype=T.int64).masked_fill(m, 3)),
                              lambda T, i: (ints(T, i, 3, 4).float(), f32(T, i, 3, 4, seed=2) > 0), False),
    "masked_scatter": (lambda T, a, m, s: a.masked_scatter(m, s), lambda T, i: (f32(T, i, 3, 4), f32(T, i, 3, 4, seed=5) > 0,
                                                                              f32(T, i, 12, seed=7)), False),
    "cat_stack": (lambda T, a, b: (T.cat([a, b], 0), T.cat([a, b, a], 1), T.stack([a, b], 2), T.cat([a, T.empty(0)])),
                  lambda T, i: (f32(T, i, 2, 3, rg=True), f32(T, i, 2, 3, seed=1, rg=True)), True),
    "expand_repeat": (lambda T, a: (a.expand(3, 4, 2) + 1, a.repeat(2, 1, 3), a.repeat_interleave(2, dim=1)),
                      _one(lambda T, i: f32(T, i, 4, 1, rg=True)), True),
    "roll_flip": (lambda T, a: (a.roll(1, 0), a.roll((2, -1), (0, 1)), a.flip(0), a.flip((0, 1)), a.roll(3)),
                  _one(lambda T, i: f32(T, i, 3, 4)), False),
    "slice_scatter_select_scatter": (lambda T, a, b: (T.slice_scatter(a, b, 1, 0, 4, 2), T.select_scatter(a, b[:, 0], 1, 2),
                                                      T.diagonal_scatter(a[:, :3], b[:, 1])),
                                     lambda T, i: (f32(T, i, 3, 5), f32(T, i, 3, 2, seed=4)), False),
    "diagonal_unbind_unfold": (lambda T, a: (T.diagonal(a, 1), *T.unbind(a, 1), a.unfold(1, 2, 1), a.diag_embed()),
                               _one(lambda T, i: f32(T, i, 3, 4)), False),
    "pow": (lambda T, a, b: (a ** 2, a ** 0.5, 2 ** a, a.pow(b), T.pow(a, -1), a ** 3),
            lambda T, i: (pos(T, i, 5, rg=True), f32(T, i, 5, seed=2)), True),
    "pow_int": (lambda T, a: (a ** 2, a ** 3, T.pow(2, a.clamp(0, 6)), a.pow(0)), _one(lambda T, i: ints(T, i, 6)), False),
    "activations": (lambda T, a: (T.nn.functional.glu(a, 1), T.nn.functional.gelu(a), T.nn.functional.gelu(a, approximate="tanh"),
                                  T.nn.functional.silu(a), T.nn.functional.hardswish(a), T.nn.functional.hardsigmoid(a)),
                    _one(lambda T, i: f32(T, i, 3, 4, rg=True) * 3), True),
    "activations2": (lambda T, a: (T.nn.functional.elu(a, 0.7), T.nn.functional.leaky_relu(a, 0.2), T.nn.functional.hardtanh(a, -1, 2),
                                   T.nn.functional.relu6(a * 3), T.nn.functional.softplus(a, 2.0, 3.0), T.nn.functional.mish(a)),
                     _one(lambda T, i: f32(T, i, 3, 4, rg=True) * 3), True),
    "special_functions": (lambda T, a: (T.erf(a), T.erfc(a), T.erfinv(a.tanh() * 0.9), T.lgamma(a.abs() + 0.5), T.log1p(a.abs()),
                                        T.expm1(a), T.sigmoid(a), T.tanh(a)),
                          _one(lambda T, i: f32(T, i, 6, rg=True)), True),
    "remainder_fmod": (lambda T, a, b: (T.remainder(a, b), T.fmod(a, b), a % 3, T.fmod(a, -2.5), T.remainder(-a, 1.5)),
                       lambda T, i: (f32(T, i, 6) * 5, nz(T, i, 6, seed=3)), False),
    "remainder_int": (lambda T, a, b: (a % b, T.fmod(a, b), T.remainder(a, -3)),
                      lambda T, i: (ints(T, i, 6, lo=-20, hi=20), ints(T, i, 6, lo=1, hi=6, seed=3)), False),
    "cumulative": (lambda T, a: (a.cumsum(1), a.cumprod(0), T.logcumsumexp(a, 1), T.cummax(a, 1)[0], T.cummin(a, 0)[1]),
                   _one(lambda T, i: f32(T, i, 3, 4, rg=True)), False),
    "bucketize_searchsorted": (lambda T, a, bnd: (T.bucketize(a, bnd), T.bucketize(a, bnd, right=True),
                                                  T.searchsorted(bnd, a), T.searchsorted(bnd, a, side="right")),
                               lambda T, i: (f32(T, i, 7), T.tensor([-1.0, -0.2, 0.0, 0.3, 1.1 + 0.1 * i])), False),
    "topk_sort": (lambda T, a: (*T.topk(a, 2, 1), *T.topk(a, 2, 0, largest=False), *T.sort(a, 1), *T.sort(a, 0, descending=True)),
                  _one(lambda T, i: f32(T, i, 3, 5)), False),
    "isinf_isnan_nan_to_num": (lambda T, a: (T.isinf(a), T.isnan(a), T.isfinite(a), T.nan_to_num(a), T.nan_to_num(a, 1.0, 2.0, -3.0)),
                               _one(lambda T, i: T.tensor([float("nan"), float("inf"), -float("inf"), 1.5 + i, -2.0])), False),
    "lerp": (lambda T, a, b: (T.lerp(a, b, 0.3), T.lerp(a, b, b.sigmoid())),
             lambda T, i: (f32(T, i, 5, rg=True), f32(T, i, 5, seed=2, rg=True)), True),
    "addmm_bmm_linear": (lambda T, a, b, c: (T.addmm(c, a, b), T.addmm(c, a, b, beta=0.5, alpha=2),
                                             T.bmm(a[None], b[None]), T.nn.functional.linear(a, b.t(), c[0])),
                         lambda T, i: (f32(T, i, 3, 4, rg=True), f32(T, i, 4, 2, seed=1, rg=True), f32(T, i, 3, 2, seed=2)),
                         True),
    "mm_views": (lambda T, a, b: T.mm(a.t(), b.t()), lambda T, i: (f32(T, i, 4, 3, rg=True), f32(T, i, 2, 4, seed=1, rg=True)), True),
    "conv2d_pool": (lambda T, x, w: (T.nn.functional.conv2d(x, w, padding=1),
                                     T.nn.functional.max_pool2d(x, 2), T.nn.functional.avg_pool2d(x, 3, 1, 1),
                                     T.nn.functional.adaptive_avg_pool2d(x, (2, 3)), T.nn.functional.max_pool2d(x, 3, 2, 1)),
                    lambda T, i: (f32(T, i, 1, 2, 5, 6, rg=True), f32(T, i, 3, 2, 3, 3, seed=4, rg=True)), True),
    "upsample": (lambda T, x: (T.nn.functional.interpolate(x, scale_factor=2, mode="nearest"),
                               T.nn.functional.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                               T.nn.functional.interpolate(x, size=(3, 5), mode="bilinear", align_corners=True),
                               T.nn.functional.pixel_shuffle(T.cat([x, x], 1), 2)),
                 _one(lambda T, i: f32(T, i, 1, 2, 3, 4, rg=True)), True),
    "padding": (lambda T, x: (T.nn.functional.pad(x, (1, 2, 0, 1), value=0.5), T.nn.functional.pad(x, (1, 1, 2, 0), mode="reflect"),
                              T.nn.functional.pad(x, (2, 1, 1, 1), mode="replicate"), T.nn.functional.pad(x, (1, 1, 1, 1), mode="circular")),
                _one(lambda T, i: f32(T, i, 1, 2, 3, 4, rg=True)), True),
    "tril_triu": (lambda T, a: (a.tril(), a.triu(1), T.tril(a, -1), a.triu(-2)), _one(lambda T, i: f32(T, i, 4, 5)), False),
    "factories": (lambda T, a: (T.full_like(a, 3.5), T.zeros_like(a, dtype=T.int32), a.new_ones(2, 3), a.new_zeros(4),
                                T.arange(2, 9, 3), T.arange(0.5, 2.0, 0.25), T.linspace(-1, 1, 5), T.eye(3, 4),
                                T.ones(2, dtype=T.bool), T.full((2,), 7)),
                  _one(lambda T, i: f32(T, i, 2, 3)), False),
    "arange_from_input": (lambda T, a: T.arange(a.shape[0] * 2) * a.sum(), _one(lambda T, i: f32(T, i, 3 + i)), False),
    "views": (lambda T, a: (a.view(3, 4).t().contiguous().view(-1), a.reshape(2, 6)[:, ::2], a.unsqueeze(1).squeeze(1).permute(1, 0),
                            a.transpose(0, 1).reshape(-1)[3:7], a.view(12)[::3], a.narrow(1, 1, 2), a.movedim(0, 1)),
              _one(lambda T, i: f32(T, i, 3, 4, rg=True)), True),
    "inplace_chain": (lambda T, a: a.mul_(2).add_(1).clamp_(-1, 2).sin_(), _one(lambda T, i: f32(T, i, 6)), False),
    "log_fp64": (lambda T, a: (T.log(a), T.log2(a), T.log10(a), T.sqrt(a), T.rsqrt(a)),
                 _one(lambda T, i: pos(T, i, 5).double()), False),
    "type_promotion_mix": (lambda T, a, b, c: (a + b, a * c, b / c, a - 1.5, c.float() + b.double(), a + True),
                           lambda T, i: (ints(T, i, 4, dtype="int32"), f32(T, i, 4), ints(T, i, 4, lo=1, hi=5, seed=3, dtype="int16")),
                           False),
    "embedding": (lambda T, w, idx: (T.nn.functional.embedding(idx, w), T.nn.functional.embedding(idx, w, padding_idx=0)),
                  lambda T, i: (f32(T, i, 5, 3, rg=True), ints(T, i, 2, 3, lo=0, hi=5)), True),
    "batch_norm_eval": (lambda T, x, m, v: T.nn.functional.batch_norm(x, m, v, training=False, eps=1e-3),
                        lambda T, i: (f32(T, i, 2, 3, 2, rg=True), f32(T, i, 3, seed=1), pos(T, i, 3, seed=2)), True),
    "complex_ops": (lambda T, a, b: (T.view_as_real(T.polar(a.abs(), b)), T.view_as_real(T.complex(a, b) * 2).sum(-1), T.complex(a, b).abs()),
                    lambda T, i: (f32(T, i, 4), f32(T, i, 4, seed=1)), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inductor_op(name):
    # CommonTemplate.test_<name>: compiled equals eager (torch's and tracegrad's), values on
    # every call, and for grad rows the inputs' grads of the first output's sum
    fn, args, grad = CASES[name]
    # three calls: eager, trace, then the program on new values
    check(lambda T: (lambda *a: fn(T, *a)), args, calls=3, backward=grad)
