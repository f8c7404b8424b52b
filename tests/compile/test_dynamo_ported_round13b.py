"""Round-13 ports of test/inductor/test_torchinductor.py (CommonTemplate): small op-level tests,
each a compiled function that must equal torch eager and tracegrad eager on every call, with
values that change between calls (the first call runs eagerly, the second traces). One table
row per original test (its name in the row's id; the body is the original's op mix at tiny
shapes); rows marked ``grad`` also compare the inputs' gradients. Then ports of
test/dynamo/test_repros.py (user-reported bugs with plain tensor/nn code; each test names its
original). The rest of the round-13 ports are in test_dynamo_ported_round13.py."""
import collections

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

from ._dynamo_port import CALLS, _np, check, rand, same  # noqa: E402


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


# ---- test/dynamo/test_repros.py --------------------------------------------------------------
def test_rng_state_get_set():
    # ReproTests.test_rng_state: get_rng_state, rand, set_rng_state, rand gives the same draws,
    # on every call (and a fresh pair each call)
    def fn(T):
        state = T.get_rng_state()
        before = T.rand(20)
        T.set_rng_state(state)
        return before, T.rand(20)
    comp = tracegrad.compile(lambda: fn(tracegrad))
    prev = None
    for i in range(CALLS):
        before, after = comp()
        same(before, after, f"call{i}")
        assert prev is None or not np.allclose(_np(prev), _np(before)), f"call{i} repeats"
        prev = before


def test_seq_append_list():
    # ReproTests.test_seq_append_list: a Sequential whose forward appends to the list it is
    # passed; the caller's list grows on every call and the same list is returned
    def build(T):
        class SequentialAppendList(T.nn.Sequential):
            def forward(self, x, ll):
                for layer in self:
                    x = layer(x)
                    ll.append(x)
                return x, ll
        T.manual_seed(0)
        m = SequentialAppendList(T.nn.Linear(10, 10), T.nn.ReLU(), T.nn.Linear(10, 10), T.nn.ReLU())
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32") * 0.3))
        return m
    fns = [build(torch), tracegrad.compile(build(tracegrad))]
    for i in range(CALLS):
        seen = []
        for T, m in zip((torch, tracegrad), fns):
            x = rand(T, i, 4, 10)
            ll = [x]
            res, l3 = m(x, ll)
            assert l3 is ll
            seen.append((res, ll))
        same(seen[0], seen[1], f"call{i}")


def test_batch_norm_act_eval():
    # ReproTests.test_batch_norm_act: BatchNorm2d subclass (eval) followed by an activation
    def build(T):
        class BatchNormAct2d(T.nn.BatchNorm2d):
            def __init__(self, n):
                super().__init__(n)
                self.act = T.nn.ReLU()

            def forward(self, x):
                return self.act(super().forward(x))
        m = BatchNormAct2d(2).eval()
        with T.no_grad():
            m.running_mean.fill_(0.3)
            m.running_var.fill_(1.7)
        return m
    check(build, lambda T, i: (rand(T, i, 3, 2, 4, 4),))


def test_get_parameter_dtype():
    # ReproTests.test_get_parameter_dtype: the dtype of a module's first parameter picks the
    # dtype of a factory call
    def build(T):
        m = T.nn.Sequential(T.nn.Linear(3, 3))

        def fn(x):
            dt = next(m.parameters()).dtype
            return x + T.ones(3, dtype=dt), str(dt).split(".")[-1]
        return fn
    check(build, lambda T, i: (rand(T, i, 3),))


def test_nn_parameter_created_inside():
    # ReproTests.test_nn_parameter: a Parameter made inside the compiled function is a
    # Parameter (and requires grad), every call
    @tracegrad.compile
    def fn(x):
        a = tracegrad.nn.Parameter(x * 2)
        assert isinstance(a, tracegrad.nn.Parameter)
        return a
    for i in range(CALLS):
        out = fn(rand(tracegrad, i, 3))
        assert isinstance(out, tracegrad.nn.Parameter) and out.requires_grad
        np.testing.assert_allclose(_np(out), _np(rand(tracegrad, i, 3)) * 2, rtol=1e-6)


def test_size_and_indexing_with_list():
    # ReproTests.test_Size / test_indexing_with_list: torch.Size built inside, numpy and tensor
    # indexing with None agree
    def build(T):
        def fn(x):
            s = T.Size([1, 2, 3])
            assert isinstance(s, T.Size)
            npx = x.numpy()
            shapes = [tuple(x[idx].shape) == npx[idx].shape for idx in ((None, None), (1, None))]
            return x * 2, s, shapes
        return fn
    check(build, lambda T, i: (T.arange(0, 10) + i,))


def test_recursive_map_dict_arg():
    # ReproTests.test_recursive_map: a nested dict argument walked (and rewritten in place)
    def build(T):
        def _recursive_map(struct):
            for k, v in struct.items():
                if v is not None:
                    if isinstance(v, dict):
                        _recursive_map(v)
                    else:
                        struct[k] = v

        def toy_example(a, b, v):
            x = a / (T.abs(a) + 1)
            if v is not None:
                _recursive_map(v)
            return x * b
        return toy_example
    check(build, lambda T, i: (rand(T, i, 10), rand(T, i, 10, seed=1),
                               {"layer0": {"memory_keys": rand(T, i, 10, seed=2)}}))


def test_with_on_graph_break_inst():
    # ReproTests.test_with_on_graph_break_inst: enable_grad inside a function called under
    # no_grad, a print (graph break) inside, and a backward inside; x.grad returned
    def build(T):
        def reversible(x):
            print("Hello world")
            return T.sin(T.cos(x))

        def fn(x):
            with T.enable_grad():
                a = T.sin(x)
                c = T.sigmoid(reversible(a))
                c.sum().backward()
                return x.grad
        return fn
    fns = [(torch, build(torch)), (tracegrad, tracegrad.compile(build(tracegrad)))]
    for i in range(CALLS):
        seen = []
        for T, fn in fns:
            x = rand(T, i, 3, rg=True)
            with T.no_grad():
                seen.append(fn(x))
        same(seen[0], seen[1], f"call{i}")


def test_grad_mode_carrying_correct_state_after_graph_break():
    # ReproTests.test_grad_mode_carrying_correct_state_after_graph_break (torchdynamo 1446)
    def build(T):
        def fn(x):
            with T.no_grad():
                y = x * 3
                print("Break")
                z = x + 2
            return y, z
        return fn
    check(build, lambda T, i: (rand(T, i, 3, rg=True),))


def test_abc_setattr():
    # ReproTests.test_abc_setattr: an ABC module subclass with __setattr__ and super() calls,
    # setting a plain attribute in forward
    import abc

    def build(T):
        class BaseModule(T.nn.Module, abc.ABC):
            def blah(self, x):
                return x + 1

        class Derived(BaseModule):
            def __setattr__(self, name, value):
                super().__setattr__(name, value)

            def forward(self, x):
                self.foo = 0
                return self.blah(x)

            def blah(self, x):
                return super().blah(x)
        return Derived()
    m = check(build, lambda T, i: (rand(T, i, 3, rg=True),), backward=True)
    assert m is not None


def test_guard_fail_nested_tuple():
    # ReproTests.test_guard_fail_nested_tuple: the argument's structure changes between calls
    def build(T):
        return lambda args: (T.ones(()), args[0] * 2)

    def args(T, i):
        return ((T.ones(1) * i, (T.ones(1), T.ones(1))) if i % 2 else (T.ones(1) * i, T.ones(1)),)
    check(build, args)


def test_torch_ops_aten():
    # ReproTests.test_torch_ops_aten: torch.ops.aten.absolute under fullgraph
    check(lambda T: (lambda x: T.ops.aten.absolute(x)), lambda T, i: (rand(T, i, 3),), fullgraph=True)


def test_dict_iter_and_list_values():
    # ReproTests.test_dict_iter / test_dict_list_values: a dict iterated in forward; zip with
    # itertools.count over a list argument whose length changes
    import itertools

    def build(T):
        def fn(x, tensors):
            z = {"my": 1, "const": 2, "dict": 3, "variable": 4}
            tot = 0
            for key in z:
                tot += z[key]
            return x + tot, [t[1].shape for t in zip(itertools.count(), tensors["args"])]
        return fn
    check(build, lambda T, i: (T.tensor([i]), {"args": [T.ones(5, 5 + k) for k in range(1 + i % 3)]}))


def test_sort_and_sigmoid_out():
    # ReproTests.test_sort_out / test_sigmoid_out: out= tensors of another shape are resized
    def build(T):
        def fn(x):
            values1 = T.tensor(0.0)
            indices1 = T.tensor(0)
            T.sort(x[:, 0], out=(values1, indices1))
            out1 = T.tensor(0.0)
            T.sigmoid(x, out=out1)
            return values1, indices1, values1.stride(), out1, out1.numel()
        return fn
    check(build, lambda T, i: (rand(T, i, 3, 5),))


def test_slice_into_list_mutable():
    # ReproTests.test_slice_into_list_mutable: a slice of a list argument rebound in a loop
    def build(T):
        def fn(listy, y):
            x = listy[3:5]
            for k in range(4):
                x[0] = T.abs(y * k) + 1
            return x
        return fn
    check(build, lambda T, i: ([rand(T, i, 4)] * 6, rand(T, i, 4, seed=3)))


def test_vdd_duplicate_error():
    # ReproTests.test_vdd_duplicate_error: the same tensor reached twice through a plain
    # object's dict of objects
    class Value:
        def __init__(self, v):
            self._value = v

    class Sample:
        def __init__(self, v):
            self._jt_dict = {"POSITION_ID": Value(v)}

    def build(T):
        def fn(a, dt):
            keys = list(dt._jt_dict.keys())
            p = T.cos(dt._jt_dict[keys[0]]._value)
            q = T.sin(a)
            r = T.sigmoid(dt._jt_dict[keys[0]]._value)
            return p + q + r
        return fn
    check(build, lambda T, i: (rand(T, i, 4), Sample(rand(T, i, 4, seed=5))), fullgraph=True)


def test_specialized_stride():
    # ReproTests.test_specialized_stride: the stride of a strided slice of a fresh tensor
    check(lambda T: (lambda x: (x + T.empty(4)[::2].stride()[0], T.empty(4)[::2].stride())),
          lambda T, i: (rand(T, i, 2),))


def test_bigbird_unsqueeze_inplace():
    # ReproTests.test_bigbird_unsqueeze_inplace: unsqueeze_ on a clone, cat of one, view
    def build(T):
        def fn(reshape_2):
            view_2 = reshape_2.clone()
            view_2.unsqueeze_(2)
            cat_11 = T.cat([view_2], dim=2)
            return (cat_11.view((2, 3, 4, -1)),)
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, 4, 4, rg=True),), backward=True, backend="aot_eager")


def test_issue1466_size_aot_autograd():
    # ReproTests.test_issue1466_size_aot_autograd: a size taken before a print, used after
    def build(T):
        def fn(x):
            y = x * 2
            x_size = x.size()
            print("arf")
            return y.view(x_size) + 1
        return fn
    check(build, lambda T, i: (rand(T, i, 2, 3, rg=True),), backward=True, backend="aot_eager")


def test_ellipsis_layernorm_linear():
    # ReproTests.test_ellipsis: LayerNorm, an index with slice/slice/Ellipsis, then Linear
    def build(T):
        class Repro(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lnorm = T.nn.LayerNorm((8,), eps=1e-06, elementwise_affine=True)
                self.linear = T.nn.Linear(in_features=8, out_features=8, bias=True)

            def forward(self, cat_10):
                lnorm = self.lnorm(cat_10)
                return (self.linear(lnorm[(slice(None, None, None), slice(0, 1, None), Ellipsis)]),)
        m = Repro()
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32")))
        return m
    check(build, lambda T, i: (rand(T, i, 2, 5, 8, rg=True),), backward=True, fullgraph=True)


def test_class_member_and_named_buffers():
    # ReproTests.test_class_member / test_named_buffers / test_modules: class attributes
    # (an int and a tensor), buffers summed through named_buffers, a loop over self.modules()
    def build(T):
        class Foo(T.nn.Module):
            a = 4
            b = T.ones(3, 4)

            def __init__(self):
                super().__init__()
                self.c = 4
                self.register_buffer("x", T.ones(3) * 2)
                self.register_buffer("y", T.ones(3))
                self.fc = T.nn.Linear(4, 4)
                with T.no_grad():
                    self.fc.weight.copy_(T.tensor(np.eye(4, dtype="float32") * 0.5))
                    self.fc.bias.fill_(0.25)

            def forward(self, x):
                res = 0
                for name, buffer in self.named_buffers():
                    res += buffer.sum()
                out = x.cos() + self.a + self.b + self.c + res
                acc = T.zeros(3, 4)
                for mod in self.modules():
                    acc += self.fc(x)
                return out, acc
        return Foo()
    check(build, lambda T, i: (rand(T, i, 3, 4),), fullgraph=True)


def test_tokenization_userdict():
    # ReproTests.test_tokenization: a UserDict subclass with __getattr__ built inside
    from collections import UserDict

    class BatchEncoding(UserDict):
        def __getattr__(self, item):
            try:
                return self.data[item]
            except KeyError:
                raise AttributeError from None

    def build(T):
        return lambda x: BatchEncoding({"key": x})["key"] * 2
    check(build, lambda T, i: (rand(T, i, 1, 4),))


def test_for_and_while_loop_graph_break():
    # ReproTests.test_for_loop_graph_break / test_while_loop_graph_break: a graph break in a
    # loop whose body's results are dropped; the function returns x unchanged
    def build(T):
        def fn(x):
            i = 5
            while i > 0:
                T.sin(x)
                T._dynamo.graph_break()
                i -= 1
            for _ in range(3):
                x = x + 1
            return x
        return fn
    check(build, lambda T, i: (rand(T, i, 4),))


# ---- test/dynamo/test_repros.py (2) ----------------------------------------------------------
class _ModelOutput(collections.OrderedDict):
    # ReproTests' ModelOutput (an OrderedDict with attribute access, as HuggingFace's)
    def __getitem__(self, k):
        if isinstance(k, str):
            return {k: v for (k, v) in self.items()}[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def test_hf_model_output():
    # ReproTests.test_hf_model_output: the ModelOutput read by key, attribute, to_tuple, index
    def mo(T, i):
        ex = _ModelOutput()
        for k, name in enumerate("abc"):
            ex[name] = rand(T, i, 10, seed=k)
        return (ex,)
    for f in (lambda x: x["a"] + 1, lambda x: x.a + 1, lambda x: x.to_tuple()[0] + 1, lambda x: x[0] + 1):
        check(lambda T, f=f: f, mo, fullgraph=True)


def test_create_rand_mask_from_inputs():
    # ReproTests.test_create_rand_mask_from_inputs (HF big_bird): stack of gathered rows,
    # view, einsum
    def build(T):
        def fn(from_blocked_mask, to_blocked_mask, rand_attn, num_attention_heads, num_rand_blocks,
               batch_size, from_seq_length, from_block_size):
            num_windows = from_seq_length // from_block_size - 2
            rand_mask = T.stack([p1[i1.flatten()] for p1, i1 in zip(to_blocked_mask, rand_attn)])
            rand_mask = rand_mask.view(batch_size, num_attention_heads, num_windows,
                                       num_rand_blocks * from_block_size)
            return T.einsum("blq,bhlk->bhlqk", from_blocked_mask[:, 1:-1], rand_mask)
        return fn

    def args(T, i):
        return (rand(T, i, 1, 8, 4), rand(T, i, 1, 8, 4, seed=1),
                ints(T, i, 1, 2, 6, 3, lo=0, hi=8), 2, 3, 1, 32, 4)
    check(build, args)


def test_reformer_sorting_and_min_chunk_len():
    # ReproTests.test_reformer_sorting / test_reformer_min_chunk_len (hf_Reformer): a stable
    # argsort by scaling, an undo-sort by scatter_ into new(); a config read into fill_
    class DummyConfig:
        attn_layers = ["local", "lsh", "local", "lsh"]
        lsh_attn_chunk_length = 64
        local_attn_chunk_length = 32

    def build(T):
        def stable_argsort(vector, dim):
            scale_offset = T.arange(vector.shape[dim]).view(1, 1, -1).expand(vector.shape)
            return T.argsort(vector.shape[dim] * vector + (scale_offset % vector.shape[dim]), dim=dim)

        def fn(buckets, cfg):
            with T.no_grad():
                sorted_idx = stable_argsort(buckets, dim=-1)
                indices = T.arange(sorted_idx.shape[-1]).view(1, 1, -1).expand(sorted_idx.shape)
                undo = sorted_idx.new(*sorted_idx.size())
                undo.scatter_(-1, sorted_idx, indices)
            t = T.empty(3)
            kinds = set(cfg.attn_layers)
            t.fill_(min(cfg.lsh_attn_chunk_length, cfg.local_attn_chunk_length) if len(kinds) == 2 else 1)
            return sorted_idx, undo, t[0]
        return fn
    check(build, lambda T, i: (ints(T, i, 1, 2, 16, lo=0, hi=4), DummyConfig()))


def test_slicing_dynamic_shape():
    # ReproTests.test_slicing_dynamic_shape / _setitem: a slice bound read from a tensor
    def build(T):
        def fn(y, new_ones_1):
            out = (T.ones(8)[y[0]:] + 3) * 5
            new_ones_1 = new_ones_1.clone()
            new_ones_1[(3, slice(y[3], None, None))] = 0
            return out, new_ones_1
        return fn
    check(build, lambda T, i: (ints(T, i, 10, lo=0, hi=6), rand(T, i, 5, 7)))


def test_rewrite_assert_with_msg():
    # ReproTests.test_rewrite_assert_with_msg / test_not_rewrite_assert_for_other_errors: an
    # assert (or a raise) on a tensor's value holds on passing calls and raises on failing ones,
    # every call, with the function's message
    def f(x):
        b = x.sin()
        assert x[0] == 3, "First dim need to be 3"
        return x.cos() + b

    def g(x):
        b = x.sin()
        if not x.sum() <= 3:
            raise ValueError("input sum needs to be 3")
        return x.cos() + b
    cf, cg = tracegrad.compile(f), tracegrad.compile(g)
    for i in range(CALLS):
        good = tracegrad.tensor([3.0, 4.0 + i, 5.0])
        same(f(good), cf(good), f"call{i}")
        with pytest.raises(AssertionError, match="First dim need to be 3"):
            cf(tracegrad.tensor([4.0, 4.0, 5.0 + i]))
        small = tracegrad.tensor([-3.0 - i, 1.0, 2.0])
        same(g(small), cg(small), f"call{i}")
        with pytest.raises(ValueError, match="input sum needs to be 3"):
            cg(tracegrad.tensor([3.0, 4.0, 5.0 + i]))


def test_rewrite_assert_noop():
    # ReproTests.test_rewrite_assert_noop: asserts on constants and dtypes under fullgraph
    def build(T):
        def f(x):
            b = x.sin()
            assert True
            assert x.dtype == T.float32
            return x.cos() + b
        return f
    check(build, lambda T, i: (rand(T, i, 3),), fullgraph=True)


def test_guard_ordering_shape_fail():
    # ReproTests.test_guard_ordering_shape_fail: a module method called with a tensor, then an
    # int, then a tensor of another shape
    def build(T):
        class TestModule(T.nn.Module):
            def inner_fn(self, left, right):
                return tuple(left) == tuple(right)

            def fn(self, tensor):
                if type(tensor) is int:
                    return False
                T.add(tensor, tensor)
                return self.inner_fn(tensor.shape, (1, 2, 3))
        m = TestModule()
        return lambda a: m.fn(a)
    vals = [lambda T: T.ones((5, 5)), lambda T: -3, lambda T: T.ones((1, 2, 3)), lambda T: T.ones((5, 5))]
    check(build, lambda T, i: (vals[i](T),))


def test_boxes_len_and_isinstance_tuple():
    # ReproTests.test_boxes_len / test_tensor_isinstance_tuple / test_isinstance_dtype: len()
    # and __len__ of a user class holding a tensor; isinstance checks against tuples and dtypes
    class Boxes:
        def __init__(self, tensor):
            self.tensor = tensor

        def __len__(self):
            return self.tensor.shape[0]

    def build(T):
        def fn(boxes):
            if not isinstance(boxes.tensor, (int, T.Tensor)) or not isinstance(T.bfloat16, T.dtype):
                raise ValueError("not a tensor")
            return len(boxes) + boxes.__len__() + boxes.tensor
        return fn
    check(build, lambda T, i: (Boxes(T.arange(0, 8 + 4 * i).reshape((-1, 4))),), fullgraph=True)


def test_issue175_transformer_encoder_layer():
    # ReproTests.test_issue175: a small TransformerEncoderLayer (MultiheadAttention, LayerNorm,
    # feed-forward; eval, so dropout is off), fullgraph, values and grads
    def build(T):
        class FeedForwardLayer(T.nn.Module):
            def __init__(self, d_model, dim_feedforward, activation, dropout):
                super().__init__()
                self.linear1 = T.nn.Linear(d_model, dim_feedforward)
                self.activation = activation
                self.dropout1 = T.nn.Dropout(dropout)
                self.linear2 = T.nn.Linear(dim_feedforward, d_model)
                self.dropout2 = T.nn.Dropout(dropout)

            def forward(self, x):
                return self.dropout2(self.linear2(self.dropout1(self.activation(self.linear1(x)))))

        class TransformerEncoderLayer(T.nn.Module):
            def __init__(self, d_model, nhead, dim_feedforward=16, dropout=0.1):
                super().__init__()
                self.self_attn = T.nn.MultiheadAttention(d_model, nhead, dropout=dropout)
                self.norm1 = T.nn.LayerNorm(d_model)
                self.norm2 = T.nn.LayerNorm(d_model)
                self.dropout = T.nn.Dropout(dropout)
                self.ff_block = FeedForwardLayer(d_model, dim_feedforward, T.nn.ReLU(), dropout)

            def forward(self, src):
                x = src
                x = self.norm1(x + self.dropout(self.self_attn(x, x, x, need_weights=False)[0]))
                return self.norm2(x + self.ff_block(x))
        m = TransformerEncoderLayer(8, 2).eval()
        with T.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(T.tensor(np.random.RandomState(k).randn(*p.shape).astype("float32") * 0.3))
        return m
    check(build, lambda T, i: (rand(T, i, 3, 8, rg=True),), backward=True, fullgraph=True)
