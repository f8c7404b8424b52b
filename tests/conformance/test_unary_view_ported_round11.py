"""Round 11 of PyTorch's own tests, ported: test/test_unary_ufuncs.py (TestUnaryUfuncs: the
OpInfo-generic layout checks and the hand-written special-value tests not ported before) and
test/test_view_ops.py gaps (TestViewOps / TestOldViewOps), device 'cpu', float32/float64.

The layout checks (test_contig_vs_every_other, test_contig_vs_transposed, test_non_contig,
test_non_contig_index, test_non_contig_expand, test_contig_size1, test_batch_vs_slicing) ask
the same question of every unary op: the op of a strided view equals the same slice of the op
of the whole. Each op's program makes those views once and returns every observation, run with
torch (the oracle) and with tracegrad (``parity.same_outcome``). Each case names its original."""
import numpy as np
import pytest

from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")

# one fixed positive-ish input so every op below is in its domain (log/sqrt/rsqrt/digamma ...)
_X = (np.random.RandomState(11).uniform(0.1, 0.9, size=(4, 6))).astype(np.float32)


def _layouts(T, name):
    """The layout checks of test_unary_ufuncs for ``T.<name>`` on one (4, 6) float32 input."""
    op = getattr(T, name)
    x = T.tensor(_X)
    whole = op(x)
    every_other = op(x[:, ::2])                       # test_contig_vs_every_other
    transposed = op(x.t())                            # test_contig_vs_transposed
    nc = x.t().contiguous().t()                       # test_non_contig: same values, other strides
    index = op(x[:, 1::2][1:3])                       # test_non_contig_index
    expanded = op(x[:1].expand(3, 6))                 # test_non_contig_expand
    size1 = op(x[1:2, 2:3])                           # test_contig_size1
    batch = T.stack([op(x[i]) for i in range(x.shape[0])])  # test_batch_vs_slicing
    same = (lambda a, b: bool(T.allclose(a, b, equal_nan=True)))
    return (whole,
            same(every_other, whole[:, ::2]), same(transposed, whole.t()),
            same(op(nc), whole), not nc.is_contiguous(),
            same(index, whole[:, 1::2][1:3]), same(expanded, whole[:1].expand(3, 6)),
            same(size1, whole[1:2, 2:3]), same(batch, whole))


UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin",
         "cos", "tan", "tanh", "sinh", "asin", "acos", "atan", "asinh", "sigmoid", "erf", "erfc",
         "erfinv", "lgamma", "digamma", "reciprocal", "floor", "ceil", "round", "trunc", "frac",
         "sign", "sgn", "square", "logit", "i0", "sinc", "angle", "deg2rad", "rad2deg"]

LAYOUTS = {f"layouts_{n}": (lambda T, n=n: _layouts(T, n)) for n in UNARY}


@pytest.mark.parametrize("fn", outcome_params(LAYOUTS))
def test_unary_layouts(fn):
    same_outcome(fn)


def _t(T, vals, dtype="float32"):
    return T.tensor(vals, dtype=getattr(T, dtype))


_SPECIAL = [0., -0., 1., -1., 0.5, -2.5, float("inf"), -float("inf"), float("nan"), 1e-30, 3e38]

SPECIAL = {
    # test_float_domains: ops outside their domain give nan (not an error)
    "float_domains_log": lambda T: T.log(_t(T, [-1., -1e-3, 0.])),
    "float_domains_sqrt": lambda T: T.sqrt(_t(T, [-1., -0., 4.])),
    "float_domains_acos_asin": lambda T: (T.acos(_t(T, [1.5, -1.5, 1.])), T.asin(_t(T, [1.01, -2., 0.]))),
    "float_domains_atanh": lambda T: T.atanh(_t(T, [1., -1., 2., 0.5])),
    "float_domains_log1p": lambda T: T.log1p(_t(T, [-1., -2., -0.5])),
    "float_domains_logit": lambda T: T.logit(_t(T, [0., 1., -0.5, 1.5, 0.25])),
    "float_domains_erfinv": lambda T: T.erfinv(_t(T, [1., -1., 1.5, 0.])),
    # test_nan_to_num (defaults, explicit values, in-place, out=)
    "nan_to_num_defaults": lambda T: T.nan_to_num(_t(T, _SPECIAL)),
    "nan_to_num_values": lambda T: T.nan_to_num(_t(T, _SPECIAL, "float64"), nan=1.5, posinf=2., neginf=-3.),
    "nan_to_num_inplace": lambda T: (lambda x: (x.nan_to_num_(nan=0.25), x)[1])(_t(T, _SPECIAL)),
    "nan_to_num_out": lambda T: (lambda o: (T.nan_to_num(_t(T, _SPECIAL), posinf=9., out=o), o)[1])(T.empty(11)),
    "nan_to_num_int_noop": lambda T: T.nan_to_num(T.tensor([1, -2, 3])),
    "nan_to_num_bool": lambda T: T.nan_to_num(T.tensor([True, False])),
    "nan_to_num_grad": lambda T: (lambda x: (T.nan_to_num(x * 2).sum().backward(), x.grad)[1])(
        _t(T, [1., float("inf"), float("nan")]).requires_grad_()),
    # test_frexp / test_frexp_out / test_frexp_assert_raises
    "frexp_values": lambda T: T.frexp(_t(T, [0., 1., -3.5, 1024., 1e-3, 7.25], "float64")),
    "frexp_float32": lambda T: T.frexp(_t(T, [0.1, 2., -0.75, 6.])),
    "frexp_out": lambda T: (lambda m, e: (T.frexp(_t(T, [4., -0.3]), out=(m, e)), m, e)[1:])(
        T.empty(2), T.empty(2, dtype=T.int32)),
    "frexp_int_raises": lambda T: T.frexp(T.tensor([1, 2])),
    "frexp_out_wrong_exponent_dtype": lambda T: T.frexp(_t(T, [4.]), out=(T.empty(1), T.empty(1, dtype=T.int64))),
    "frexp_out_wrong_mantissa_dtype": lambda T: T.frexp(_t(T, [4.]), out=(T.empty(1, dtype=T.float64), T.empty(1, dtype=T.int32))),
    # test_ldexp (TestBinaryUfuncs holds it too; the unary file's frexp round trip)
    "frexp_ldexp_roundtrip": lambda T: (lambda m, e: T.ldexp(m, e))(*T.frexp(_t(T, [3., -0.1, 80.]))),
    "ldexp_int_exponent_promotes": lambda T: T.ldexp(_t(T, [1., 2.]), T.tensor([3, -1])),
    "ldexp_int_both_float_result": lambda T: T.ldexp(T.tensor([1, 2]), T.tensor([1, 2])),
    # test_polygamma_neg: n < 0 is a RuntimeError
    "polygamma_neg": lambda T: T.polygamma(-1, _t(T, [1., 2.])),
    "polygamma_values": lambda T: [T.polygamma(n, _t(T, [0.5, 1., 3.2], "float64")) for n in range(4)],
    # test_digamma_special / test_digamma
    "digamma_special": lambda T: T.digamma(_t(T, [0., -0., -1., -2., 1., 0.5, float("inf"), -float("inf"), float("nan")], "float64")),
    "digamma_negative_noninteger": lambda T: T.digamma(_t(T, [-0.5, -1.5, -2.25], "float64")),
    # test_op_invert: ~ on bool and integer tensors, TypeError-free; float is an error
    "op_invert_bool": lambda T: ~T.tensor([True, False, True]),
    "op_invert_int": lambda T: (~T.tensor([0, 1, -5, 127], dtype=T.int8), ~T.tensor([0, 3], dtype=T.uint8)),
    "op_invert_float_raises": lambda T: ~_t(T, [1.]),
    # test_abs_zero: abs(-0.) is +0.
    "abs_zero_sign": lambda T: T.signbit(T.abs(_t(T, [-0., 0.]))),
    # test_isposinf_isneginf_non_boolean_output / test_isnan and friends
    "isposinf_isneginf": lambda T: (T.isposinf(_t(T, _SPECIAL)), T.isneginf(_t(T, _SPECIAL))),
    "isposinf_int": lambda T: (T.isposinf(T.tensor([1, 2])), T.isneginf(T.tensor([1, 2]))),
    "isposinf_out_non_bool_raises": lambda T: T.isposinf(_t(T, [1.]), out=T.empty(1)),
    "isneginf_out_non_bool_raises": lambda T: T.isneginf(_t(T, [1.]), out=T.empty(1)),
    "isfinite_isinf_isnan": lambda T: (T.isfinite(_t(T, _SPECIAL)), T.isinf(_t(T, _SPECIAL)), T.isnan(_t(T, _SPECIAL))),
    "isreal_isfinite_int": lambda T: (T.isfinite(T.tensor([1, 2])), T.isnan(T.tensor([0]))),
    # int -> float promotion of the floating unary ops (test_reference_numerics' int inputs)
    "int_promotes_sin": lambda T: T.sin(T.tensor([0, 1, 2])),
    "int_promotes_exp_sqrt": lambda T: (T.exp(T.tensor([0, 1], dtype=T.int32)), T.sqrt(T.tensor([4, 9], dtype=T.uint8))),
    "int_promotes_sigmoid_erf": lambda T: (T.sigmoid(T.tensor([0, -1])), T.erf(T.tensor([True, False]))),
    "int_promotes_log_default_dtype": lambda T: T.log(T.tensor([1, 2], dtype=T.int16)).dtype,
    "int_abs_stays_int": lambda T: T.abs(T.tensor([-3, 2], dtype=T.int16)),
    "int_floor_stays_int": lambda T: (T.floor(T.tensor([3, -2])), T.ceil(T.tensor([1])), T.round(T.tensor([5])), T.trunc(T.tensor([7]))),
    "int_sign_stays_int": lambda T: T.sign(T.tensor([-3, 0, 5])),
    "int_inplace_float_result_raises": lambda T: T.tensor([1, 2]).sin_(),
    "out_int_for_float_result_raises": lambda T: T.sin(_t(T, [1.]), out=T.empty(1, dtype=T.int64)),
    "out_float64_for_float32": lambda T: (lambda o: (T.exp(_t(T, [1., 2.]), out=o), o)[1])(T.empty(2, dtype=T.float64)),
    "out_resizes_empty": lambda T: (lambda o: (T.tanh(_t(T, [[0.5, 1.]]), out=o), o.shape)[1])(T.empty(0)),
    # sigmoid / logit edge cases (test_sigmoid, test_logit, the eps argument)
    "sigmoid_extremes": lambda T: T.sigmoid(_t(T, [-1000., -100., -20., 0., 20., 100., 1000., float("nan")])),
    "sigmoid_extremes_float64": lambda T: T.sigmoid(_t(T, [-800., -40., 40., 800.], "float64")),
    "sigmoid_grad_extremes": lambda T: (lambda x: (T.sigmoid(x).sum().backward(), x.grad)[1])(
        _t(T, [-100., 0., 100.]).requires_grad_()),
    "logit_eps": lambda T: T.logit(_t(T, [0., 1e-8, 0.5, 1., 1.2], "float64"), eps=1e-6),
    "logit_eps_grad": lambda T: (lambda x: (T.logit(x, eps=0.1).sum().backward(), x.grad)[1])(
        _t(T, [0.05, 0.5, 0.95], "float64").requires_grad_()),
    "logit_grad_edges": lambda T: (lambda x: (T.logit(x).sum().backward(), x.grad)[1])(
        _t(T, [0.25, 0.5], "float64").requires_grad_()),
    "special_logit_alias": lambda T: T.special.logit(_t(T, [0.1, 0.9]), eps=0.2),
    "special_expit_alias": lambda T: T.special.expit(_t(T, [-1., 2.])),
    # test_hardsigmoid_grad / test_hardswish_grad / test_hardshrink edge cases
    "hardsigmoid_grad": lambda T: (lambda x: (T.nn.functional.hardsigmoid(x).sum().backward(), x.grad)[1])(
        _t(T, [-4., -3., -1., 0., 2.5, 3., 4.], "float64").requires_grad_()),
    "hardswish_grad": lambda T: (lambda x: (T.nn.functional.hardswish(x).sum().backward(), x.grad)[1])(
        _t(T, [-4., -3., -1., 0., 2.5, 3., 4.], "float64").requires_grad_()),
    "hardshrink_edge_cases": lambda T: [T.nn.functional.hardshrink(_t(T, [-1., -0.5, 0., 0.5, 1., float("inf"), float("nan")]), l)
                                        for l in (0., 0.5, 1.)],
    "softshrink_values": lambda T: T.nn.functional.softshrink(_t(T, [-2., -0.4, 0., 0.3, 1.5]), 0.5),
    "softshrink_negative_lambd": lambda T: T.nn.functional.softshrink(_t(T, [1.]), -0.5),
    # test_silu / test_mish with special values
    "silu_special": lambda T: T.nn.functional.silu(_t(T, _SPECIAL)),
    "mish_special": lambda T: T.nn.functional.mish(_t(T, [-20., -1., 0., 1., 20., float("inf"), -float("inf")])),
    # test_sinc: sinc(0) = 1 and its gradient at 0 is 0
    "sinc_zero_and_grad": lambda T: (lambda x: (T.sinc(x).sum().backward(), T.sinc(x.detach()), x.grad)[1:])(
        _t(T, [0., 0.5, -1., 2.5], "float64").requires_grad_()),
    # test_i0_range1 / test_i0_range2 / test_special_i0_i1 (values against torch)
    "i0_range1": lambda T: T.i0(_t(T, np.linspace(-10, 10, 9))),
    "i0_range2": lambda T: T.i0(_t(T, [50., 80., -85.])),
    "special_i0e_i1_i1e": lambda T: (T.special.i0e(_t(T, [0., 1., 10.])), T.special.i1(_t(T, [0., 1., -2.])), T.special.i1e(_t(T, [0., 5.]))),
    "special_ndtr_log_ndtr": lambda T: (T.special.ndtr(_t(T, [-3., 0., 2.], "float64")),
                                        T.special.log_ndtr(_t(T, [-30., -1., 0., 5.], "float64"))),
    "special_erfcx_entr": lambda T: (T.special.erfcx(_t(T, [-1., 0., 3., 30.], "float64")),
                                     T.special.entr(_t(T, [-1., 0., 0.5, 1.]))),
    "special_ndtri": lambda T: T.special.ndtri(_t(T, [0., 0.1, 0.5, 0.975, 1.], "float64")),
    # test_exp_slow / exp and expm1 extremes
    "exp_extremes": lambda T: (T.exp(_t(T, [-1000., 88., 89., float("nan")])), T.expm1(_t(T, [1e-10, -50., 100.]))),
    # test_nonzero_empty
    "nonzero_empty": lambda T: (T.nonzero(T.zeros(0, 3)).shape, T.nonzero(T.zeros(2, 0, 3)).shape, T.nonzero(T.tensor(0.)).shape),
    # test_reciprocal on zeros and integers
    "reciprocal_zero_int": lambda T: (T.reciprocal(_t(T, [0., -0., 2.])), T.reciprocal(T.tensor([1, 2, 4]))),
    # test_log1p_complex / test_sqrt_complex_edge_values (principal branches, small values)
    "log1p_complex": lambda T: T.log1p(T.tensor([1e-8 + 1e-8j, -0.5 + 0.5j, 2j], dtype=T.complex128)),
    "sqrt_complex_edge_values": lambda T: T.sqrt(T.tensor([-4 + 0j, -4 - 0j, 1j, -1j], dtype=T.complex128)),
    "exp_complex": lambda T: T.exp(T.tensor([0j, 1 + np.pi * 1j, -2 - 0.5j], dtype=T.complex128)),
    "abs_angle_complex_to_float": lambda T: (T.abs(T.tensor([3 + 4j], dtype=T.complex64)), T.angle(T.tensor([1j, -1 + 0j]))),
    "angle_real_negative_and_nan": lambda T: T.angle(_t(T, [-2., 0., 3., float("nan")])),
    # test_threshold (nn.functional.threshold of nan and with in-place)
    "threshold_values": lambda T: T.nn.functional.threshold(_t(T, [-1., 0.5, 1., float("nan")]), 0.5, -9.),
    "threshold_inplace": lambda T: (lambda x: (T.nn.functional.threshold_(x, 0., 2.), x)[1])(_t(T, [-1., 0., 1.])),
    # test_unary_out_op_mem_overlap: out= that partially overlaps the input is refused
    "unary_out_partial_overlap": lambda T: (lambda x: T.sin(x[:3], out=x[1:4]))(T.arange(5.)),
    # test_pow_scalar_overloads_mem_overlap (its values part): scalar ** tensor and tensor ** scalar
    "pow_scalar_overloads": lambda T: (T.pow(2, _t(T, [0., 1., -1.])), T.pow(_t(T, [2., 3.]), 2), 2 ** T.tensor([1, 3])),
}

SPECIAL_XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(SPECIAL, SPECIAL_XFAIL))
def test_unary_special(fn):
    same_outcome(fn)


def _view_case(T, make, write=lambda v: v.fill_(-1.)):
    src = T.arange(24., dtype=T.float64).reshape(2, 3, 4)
    v = make(src)
    seen = (v.clone(), v._base is src)
    write(v)
    return seen + (src,)


VIEWS = {
    # TestViewOps.test_view_tensor_hsplit / _vsplit / _dsplit: every piece is a view of the source
    "view_tensor_hsplit": lambda T: _view_case(T, lambda s: T.hsplit(s, [1, 2])[1]),
    "view_tensor_vsplit": lambda T: _view_case(T, lambda s: T.vsplit(s, 2)[1]),
    "view_tensor_dsplit": lambda T: _view_case(T, lambda s: T.dsplit(s, [1, 3])[1]),
    # test_basic_indexing_slice_view / _ellipses_view / _newaxis_view
    "basic_indexing_slice_view": lambda T: _view_case(T, lambda s: s[:1, 1:, ::3]),
    "basic_indexing_ellipses_view": lambda T: _view_case(T, lambda s: s[..., 2]),
    "basic_indexing_newaxis_view": lambda T: _view_case(T, lambda s: s[None, 1, :, None]),
    "basic_indexing_int_scalar_view": lambda T: _view_case(T, lambda s: s[1, 2, 3]),
    # test_split_with_sizes (TestOldViewOps): pieces, errors on sizes that do not add up
    "split_with_sizes": lambda T: [p.shape for p in T.arange(10.).split_with_sizes([2, 3, 5])],
    "split_with_sizes_bad_sum": lambda T: T.arange(10.).split_with_sizes([2, 3]),
    "split_with_sizes_negative": lambda T: T.arange(10.).split_with_sizes([12, -2]),
    # test_view_as_complex (its error half): last dim 2, stride 1, float dtype
    "view_as_complex_errors_last_dim": lambda T: T.view_as_complex(T.zeros(3, 3)),
    "view_as_complex_errors_stride": lambda T: T.view_as_complex(T.zeros(2, 4)[:, ::2]),
    "view_as_complex_errors_int": lambda T: T.view_as_complex(T.zeros(3, 2, dtype=T.int64)),
    "view_as_complex_write_through": lambda T: (lambda s: (T.view_as_complex(s).mul_(1j), s)[1])(T.arange(6.).reshape(3, 2)),
    # as_strided with overlapping windows and an explicit offset; its write lands in storage
    "as_strided_overlap_view": lambda T: _view_case(T, lambda s: s.view(-1).as_strided((4, 3), (2, 1), 1),
                                                    lambda v: v[1].fill_(-7.)),
    # view of a view: _base is always the root (test_view_view's chain, three deep)
    "view_of_view_three_deep": lambda T: (lambda s: (lambda a: (lambda b: (lambda c: (c._base is s, b._base is s, c.shape))(b[1:]))(a.t()))(s.view(6, 4)))(T.zeros(24)),
    # test_unbind_grad: gradient of unbind pieces, some unused
    "unbind_grad": lambda T: (lambda x: ((lambda p: (p[0] * 2 + p[2]).sum())(x.unbind(1)).backward(), x.grad)[1])(
        T.arange(12., dtype=T.float64).reshape(4, 3).requires_grad_()),
    # in-place through a view bumps the base's version counter (and the view's)
    "version_counter_shared": lambda T: (lambda s: (lambda v: (s._version, v.add_(1), s._version, v._version)[::2] + (v._version,))(s[1]))(T.zeros(3, 2)),
    "version_counter_detach_shared": lambda T: (lambda s: (lambda d: (d.mul_(2), s._version)[1])(s.detach()))(T.ones(2)),
    # transposes (test_transposes / test_transposes_errors): T on >2-D, mT on 1-D, mH of complex
    "T_on_1d_and_0d": lambda T: (T.arange(3.).T.shape, T.tensor(1.).T.shape),
    "mT_on_1d_raises": lambda T: T.arange(3.).mT,
    "mH_complex_conjugates": lambda T: T.tensor([[1 + 1j, 2 - 1j]]).mH,
    "adjoint_on_1d_raises": lambda T: T.arange(3.).adjoint(),
    # contiguous-ness of common views
    "contiguity_of_views": lambda T: (lambda s: (s.t().is_contiguous(), s[:, ::2].is_contiguous(), s[1:].is_contiguous(),
                                                 s[:, :1].is_contiguous(), s.unsqueeze(1).is_contiguous(),
                                                 s.expand(2, 3, 4).is_contiguous()))(T.zeros(3, 4)),
    "contiguous_returns_self": lambda T: (lambda s: s.contiguous() is s)(T.zeros(3, 4)),
}

VIEWS_XFAIL = {}


@pytest.mark.parametrize("fn", outcome_params(VIEWS, VIEWS_XFAIL))
def test_view_gaps(fn):
    same_outcome(fn)
