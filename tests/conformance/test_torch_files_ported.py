"""NOTE: the tests that followed PyTorch's test files (test_weak.py, test_autocast.py, ...) statement
for statement (the same code and literals, lightly edited, asserts renamed) were removed (a public
repository's code stays out of this project's commits); what remains is the tests written here. The
text below describes the file as it was.

Conformance tests ported from PyTorch's test/test_complex.py (TestComplexTensor),
test/test_namedtuple_return_api.py (TestNamedTupleAPI) and test/test_autocast.py
(TestAutocastCPU, TestTorchAutocast): complex tolist/dtype inference/eq/ne, the field names and
types of ``return_types``, and CPU autocast's op lists. Each body runs under torch 2.13 (the
oracle) and tracegrad; each test names its original in a comment."""
import numpy as np
import pytest

import tracegrad
from parity import outcome_params, same_outcome

torch = pytest.importorskip("torch")


def dn(d):
    return str(d).rsplit(".", 1)[-1]


# ==== test/test_autocast.py ========================================================================
# TestAutocastCPU runs each op of torch's CPU op lists (torch.testing._internal.autocast_test_lists.
# AutocastCPUTestLists) under autocast: the result has the list's dtype, the torch.* and Tensor.*
# forms agree, and the result equals (bitwise) running the op with autocast off on inputs cast by
# hand. Restated here with tiny shapes for the ops tracegrad has; values also compared to torch.
_N = 4


def _r(T, *shape, seed=0, dtype="float32", unit=False):
    a = np.random.RandomState(seed).standard_normal(shape).astype(np.float32)
    if unit:    # probabilities, for binary_cross_entropy and nll_loss
        a = np.abs(a) / (1 + np.abs(a))
    return T.tensor(a, dtype=getattr(T, dtype))


n = _N
del n


def test_autocast_unsupported_cpu_dtype_disables(T):
    # TestAutocastCPU (the dtype check of torch.autocast on CPU): float32 warns and disables
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        with T.autocast("cpu", dtype=T.float32):
            assert not T.is_autocast_enabled("cpu")
            assert dn(T.mm(_r(T, 2, 2), _r(T, 2, 2)).dtype) == "float32"


# ==== test/test_weak.py ============================================================================
# WeakTest and WeakKeyDictionaryTestCase (CPython's weakref and mapping tests with tensor keys),
# run on torch.utils.weak and tracegrad.utils.weak. The TorchScript-object variant is not ported.
import copy  # noqa: E402
import gc  # noqa: E402


def _weak(T):
    import importlib
    return importlib.import_module(f"{T.__name__}.utils.weak")


def test_weak_entry_dies_with_key(T):
    # WeakTest (the weak part of every test): an entry goes when its key is collected, also
    # while the dictionary is being iterated
    W = _weak(T).WeakIdKeyDictionary
    keys = [T.zeros(1) for _ in range(4)]
    d = W({k: i for i, k in enumerate(keys)})
    it = iter(d)
    next(it)
    del keys[1:]
    gc.collect()
    rest = list(it)
    assert len(rest) <= 3 and len(d) == 1
    assert list(d.values()) == [0]


# ==== test/test_sort_and_select.py and test/test_reductions.py (parts not ported elsewhere) =======
# test_isin*, test_bucketization (searchsorted/bucketize: sides, sorter, out_int32, scalars, the
# shape and dtype errors), test_topk_integral, test_topk_4d, test_topk_zero, test_kthvalue_scalar,
# test_kthvalue (repeats, non-contiguous), test_kthvalue_overlap, test_unique*/_scalar_empty.
# Each program runs with torch and tracegrad: equal results or the same exception class.
nan, inf = float("nan"), float("inf")
SELECT = {
    "isin_basic": lambda T: T.isin(T.tensor([[1, 2], [3, 4]]), T.tensor([2, 3])),
    "isin_invert": lambda T: T.isin(T.tensor([1, 2, 3, 4]), T.tensor([2, 3]), invert=True),
    "isin_assume_unique": lambda T: T.isin(T.tensor([1, 5, 3]), T.tensor([3, 1, 7]), assume_unique=True),
    "isin_scalar_elements": lambda T: T.isin(2, T.tensor([1, 2])),
    "isin_scalar_test": lambda T: T.isin(T.tensor([1, 2, 3]), 2),
    "isin_both_scalars": lambda T: T.isin(1, 2),
    "isin_float_int": lambda T: T.isin(T.tensor([1., 2.5, 3.]), T.tensor([1, 3])),
    "isin_nan": lambda T: T.isin(T.tensor([nan, 1.]), T.tensor([nan, 1.])),
    "isin_empty": lambda T: T.isin(T.zeros(0), T.tensor([1.])),
    "isin_empty_test": lambda T: T.isin(T.tensor([1., 2.]), T.zeros(0)),
    "isin_bool": lambda T: T.isin(T.tensor([True, False]), T.tensor([True])),
    "isin_complex": lambda T: T.isin(T.tensor([1j, 2]), T.tensor([1j])),
    "isin_uint8_int64": lambda T: T.isin(T.tensor([1, 200], dtype=T.uint8), T.tensor([200, -56])),
    "isin_large_test": lambda T: T.isin(T.arange(20), T.arange(0, 40, 3)),
    "isin_nd_test": lambda T: T.isin(T.arange(6).reshape(2, 3), T.tensor([[1, 4], [5, 9]])),
    "isin_out": lambda T: (lambda o: (T.isin(T.tensor([1, 2]), T.tensor([2]), out=o), o)[1])(T.empty(2, dtype=T.bool)),
    "searchsorted_basic": lambda T: T.searchsorted(T.tensor([1, 3, 5, 7, 9]), T.tensor([3, 6, 9])),
    "searchsorted_right": lambda T: T.searchsorted(T.tensor([1, 3, 5, 7, 9]), T.tensor([3, 6, 9]), right=True),
    "searchsorted_side": lambda T: T.searchsorted(T.tensor([1, 3, 5, 7, 9]), T.tensor([3, 6, 9]), side="right"),
    "searchsorted_side_conflict": lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([3]), right=False, side="right"),
    "searchsorted_bad_side": lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([3]), side="middle"),
    "searchsorted_2d": lambda T: T.searchsorted(T.tensor([[1, 3, 5], [2, 4, 6]]), T.tensor([[3, 6], [1, 7]])),
    "searchsorted_int32": lambda T: T.searchsorted(T.tensor([1., 3., 5.]), T.tensor([2., 4.]), out_int32=True),
    "searchsorted_scalar": lambda T: T.searchsorted(T.tensor([1., 3., 5.]), 4.),
    "searchsorted_sorter": lambda T: T.searchsorted(T.tensor([5., 1., 3.]), T.tensor([2., 4.]), sorter=T.tensor([1, 2, 0])),
    "searchsorted_nan_inf": lambda T: T.searchsorted(T.tensor([-inf, 0., inf, nan]), T.tensor([nan, inf, -inf, 0.])),
    "searchsorted_nan_inf_right": lambda T: T.searchsorted(T.tensor([-inf, 0., inf, nan]), T.tensor([nan, inf, -inf, 0.]),
                                                           right=True),
    "searchsorted_nan_run": lambda T: [T.searchsorted(T.tensor([0., nan, nan]), T.tensor([nan, 1., -1.]), right=r)
                                       for r in (False, True)],
    "searchsorted_2d_nan": lambda T: T.searchsorted(T.tensor([[1., 2., nan], [nan, nan, nan]]),
                                                    T.tensor([[2., nan], [0., 5.]])),
    "searchsorted_ties_long": lambda T: [T.searchsorted(T.tensor([1, 2, 2, 2, 2, 2, 3, 7, 7]), T.tensor([2, 7, 8, 0]),
                                                        side=s) for s in ("left", "right")],
    "searchsorted_one_elem": lambda T: T.searchsorted(T.tensor([5.]), T.tensor([4., 5., 6.]), right=True),
    "searchsorted_empty_seq": lambda T: T.searchsorted(T.zeros(0), T.tensor([1.])),
    "searchsorted_dim_mismatch": lambda T: T.searchsorted(T.tensor([[1, 3], [2, 4]]), T.tensor([[1, 2, 3]]).T),
    "searchsorted_leading_mismatch": lambda T: T.searchsorted(T.tensor([[1, 3], [2, 4]]), T.tensor([[1], [2], [3]])),
    "searchsorted_0d_seq": lambda T: T.searchsorted(T.tensor(1), T.tensor([1])),
    "searchsorted_dtype_mix": lambda T: T.searchsorted(T.tensor([1, 3, 5]), T.tensor([2.5, 4.5])),
    "searchsorted_out_int32_out": lambda T: (lambda o: (T.searchsorted(T.tensor([1., 3.]), T.tensor([2.]), out_int32=True, out=o), o)[1])(T.empty(1, dtype=T.int32)),
    "bucketize_basic": lambda T: T.bucketize(T.tensor([[3, 6, 9], [3, 6, 9]]), T.tensor([1, 3, 5, 7, 9])),
    "bucketize_right": lambda T: T.bucketize(T.tensor([3, 6, 9]), T.tensor([1, 3, 5, 7, 9]), right=True),
    "bucketize_scalar": lambda T: T.bucketize(3, T.tensor([1, 3, 5, 7, 9])),
    "bucketize_int32": lambda T: T.bucketize(T.tensor([3., 6.]), T.tensor([1., 3., 5.]), out_int32=True),
    "bucketize_2d_boundaries": lambda T: T.bucketize(T.tensor([3]), T.tensor([[1, 3]])),
    "bucketize_empty": lambda T: T.bucketize(T.zeros(0), T.tensor([1., 3.])),
    "topk_integral_int8": lambda T: T.tensor([-128, 127, 5, -3, 0, 100, -100, 7, 9, 1], dtype=T.int8).topk(5),
    "topk_integral_uint8": lambda T: T.tensor([0, 255, 5, 3, 10, 100, 200, 7, 9, 1], dtype=T.uint8).topk(5),
    "topk_4d": lambda T: (lambda x: T.topk(x, k=2, dim=1))(T.ones(2, 16, 2, 2) * T.tensor([1.] + [2.] + [1.] * 8 + [1.5] + [1.] * 5).reshape(1, 16, 1, 1)),
    "topk_zero": lambda T: T.topk(T.ones(2, 2), k=0, largest=False),
    "topk_zero_int": lambda T: T.topk(T.ones(2, 2, dtype=T.int32), k=0),
    "kthvalue_scalar": lambda T: T.tensor(2.).kthvalue(1),
    "kthvalue_overlap": lambda T: (lambda a: T.kthvalue(a, 3, out=(a, T.empty((), dtype=T.long))))(T.arange(5.)),
    "kthvalue_repeat": lambda T: [T.kthvalue(T.tensor((3., 5, 4, 1, 1, 5)), k)[0] for k in (2, 3)],
    "kthvalue_noncontig": lambda T: T.tensor([0., -1, 1, -2, 2])[::2].kthvalue(2),
    "kthvalue_k_out_of_range": lambda T: T.kthvalue(T.tensor([1., 2.]), 3),
    "unique_scalar": lambda T: T.unique(T.tensor(0), return_inverse=True, return_counts=True),
    "unique_empty": lambda T: T.unique(T.zeros((0, 0, 3)), return_inverse=True, return_counts=True),
    "unique_consecutive_empty": lambda T: T.unique_consecutive(T.zeros((0, 0, 3)), return_inverse=True, return_counts=True),
    "unique_consecutive_scalar": lambda T: T.unique_consecutive(T.tensor(0), return_inverse=True, return_counts=True),
    "unique_nd_inverse": lambda T: T.tensor([1, 2, 3, 2, 8, 5, 2, 3]).view(2, 2, 2).unique(return_inverse=True, return_counts=True),
    "unique_bool": lambda T: T.unique(T.tensor([True, False, False, True]), return_inverse=True, return_counts=True),
    "unique_consec_bool": lambda T: T.unique_consecutive(T.tensor([True, False, False, False, True, True, False]), return_inverse=True, return_counts=True),
    "unique_consecutive_3x3": lambda T: T.tensor([1, 2, 2, 2, 5, 5, 2, 2, 3]).view(3, 3).unique_consecutive(return_inverse=True, return_counts=True),
    "searchsorted_scalar_2d": lambda T: T.searchsorted(T.tensor([[1, 3]]), 2),
    "searchsorted_right_side_left": lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([3]), right=True, side="left"),
    "searchsorted_right_side_right": lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([3]), right=True, side="right"),
    "searchsorted_sorter_size": lambda T: T.searchsorted(T.tensor([1., 3.]), T.tensor([2.]), sorter=T.tensor([0, 1, 2])),
    "searchsorted_sorter_float": lambda T: T.searchsorted(T.tensor([1., 3.]), T.tensor([2.]), sorter=T.tensor([0., 1.])),
    "searchsorted_sorter_range": lambda T: T.searchsorted(T.tensor([1., 3.]), T.tensor([2.]), sorter=T.tensor([0, 5])),
    "searchsorted_sorter_2d": lambda T: T.searchsorted(T.tensor([[3., 1.], [2., 4.]]), T.tensor([[2.], [3.]]),
                                                    sorter=T.tensor([[1, 0], [0, 1]])),
    "searchsorted_bool": lambda T: T.searchsorted(T.tensor([False, True]), T.tensor([True])),
    "bucketize_complex": lambda T: T.bucketize(T.tensor([1j]), T.tensor([1.])),
    "isin_bool_test": lambda T: T.isin(T.tensor([1, 2]), T.tensor([True])),
    "isin_complex_test": lambda T: T.isin(T.tensor([1.]), T.tensor([1j])),
}
SELECT_XFAIL = {
    "kthvalue_overlap": "out= that overlaps the input is not detected (tracegrad/_tensor/out.py, outside this port)",
}


@pytest.mark.parametrize("fn", outcome_params(SELECT, SELECT_XFAIL))
def test_sort_select_and_bucketization(fn):
    same_outcome(fn)


# ==== test/test_subclass.py =======================================================================
# TestSubclass over three tensor classes: Tensor itself, a plain Python subclass, and one with a
# pass-through __torch_function__ (torch's subclass_db holds __torch_dispatch__ wrapper subclasses,
# not ported; deepcopy/save of a non-wrapper subclass raises in torch, so those two checks run on
# Tensor only). Each check returns plain facts that must agree between torch and tracegrad.
import io  # noqa: E402


def _subclass(T, kind):
    if kind == "Tensor":
        return T.Tensor

    class Plain(T.Tensor):
        pass

    class WithTorchFunction(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})
    return {"Plain": Plain, "WithTorchFunction": WithTorchFunction}[kind]


def _sub_tensor(T, cls):
    base = T.tensor([1., 2., 3.])
    return base if cls is T.Tensor else base.as_subclass(cls)


def _param_invariants(T, cls, rg):
    # test_param_invariants: Parameter's requires_grad wins, the source tensor is not changed
    x = _sub_tensor(T, cls).requires_grad_(rg)
    p = T.nn.Parameter(x, requires_grad=not rg)
    return [isinstance(p, T.nn.Parameter), p.requires_grad, isinstance(x, T.nn.Parameter), x.requires_grad,
            isinstance(p, cls)]


def _repr(T, cls, as_param):
    # test_repr: the subclass name once in the repr, "Parameter" once for a parameter
    x = _sub_tensor(T, cls)
    s = repr(T.nn.Parameter(x) if as_param else x)
    return [s.count(f"{cls.__name__}(") if cls is not T.Tensor else None, s.count("Parameter")]


def _type_propagation(T, cls, as_param):
    # test_type_propagation: an op keeps the subclass (closed under ops) but not parameter-ness
    x = _sub_tensor(T, cls)
    out = (T.nn.Parameter(x) if as_param else x) + T.ones(3)
    return [isinstance(out, cls), isinstance(out, T.nn.Parameter)]


def _copies(T, cls, as_param):
    # test_deepcopy, test_serialization
    x = _sub_tensor(T, cls)
    x = T.nn.Parameter(x) if as_param else x
    y = copy.deepcopy(x)
    buf = io.BytesIO()
    T.save(x, buf)
    buf.seek(0)
    z = T.load(buf, weights_only=False)
    return [[T.equal(x, c), c is not x, type(c) is type(x), isinstance(c, T.nn.Parameter)] for c in (y, z)]


def _module_optimization(T, cls):
    # test_module_optimization: subclass parameters in Parameter/ParameterList/ParameterDict train
    nn = T.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.p1 = nn.Parameter(_sub_tensor(T, cls))
            self.p_list = nn.ParameterList([_sub_tensor(T, cls) for _ in range(3)])
            self.p_list.append(_sub_tensor(T, cls))
            self.p_dict = nn.ParameterDict({"foo": _sub_tensor(T, cls), "bar": _sub_tensor(T, cls)})
            self.p_dict["baz"] = _sub_tensor(T, cls)

        def forward(self, x):
            out = self.p1 + x
            for p in list(self.p_list) + list(self.p_dict.values()):
                out = p + out
            return out
    m = M()
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    m(_sub_tensor(T, cls)).sum().backward(T.tensor(1.))
    opt.step()
    return [len(m.state_dict()), [isinstance(p, cls) for p in m.parameters()], m.p1.tolist()]


def _parametrization(T, cls, leave):
    # test_parametrization: a parametrized subclass weight stays of its class, as does the output
    import importlib
    P = importlib.import_module(f"{T.__name__}.nn.utils.parametrize")

    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = T.nn.Parameter(_sub_tensor(T, cls))

        def forward(self, x):
            return self.weight + x

    class Neg(T.nn.Module):
        def forward(self, X):
            return -X
    m = M()
    P.register_parametrization(m, "weight", Neg())
    facts = [isinstance(m.weight, cls), isinstance(m(T.ones(3)), cls)]
    P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    return facts + [isinstance(m.weight, cls), m.weight.tolist()]


_SUBCLASS_CHECKS = {
    "param_invariants": lambda T, c: _param_invariants(T, c, False),
    "param_invariants_tensor_requires_grad": lambda T, c: _param_invariants(T, c, True),
    "repr": lambda T, c: _repr(T, c, False),
    "repr_param": lambda T, c: _repr(T, c, True),
    "type_propagation": lambda T, c: _type_propagation(T, c, False),
    "type_propagation_param": lambda T, c: _type_propagation(T, c, True),
    "module_optimization": _module_optimization,
    "parametrization": lambda T, c: _parametrization(T, c, False),
    "parametrization_leave": lambda T, c: _parametrization(T, c, True),
}


def _subclass_cases():
    out = []
    for kind in ("Tensor", "Plain", "WithTorchFunction"):
        for check in list(_SUBCLASS_CHECKS) + (["copies", "copies_param"] if kind == "Tensor" else []):
            out.append(pytest.param(kind, check, id=f"{kind}-{check}"))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("kind,check", _subclass_cases())
def test_subclass(kind, check):
    def run(T):
        cls = _subclass(T, kind)
        if check.startswith("copies"):
            return _copies(T, cls, check == "copies_param")
        return _SUBCLASS_CHECKS[check](T, cls)
    assert run(tracegrad) == run(torch)


# ==== test/test_binary_ufuncs.py (parts not ported in test_ufuncs_ported.py) ======================
# test_div_rounding_modes, test_div_rounding_nonfinite, test_floor_divide_zero,
# test_fmod_remainder_by_zero_integral, test_fmod_remainder, test_pow/test_int_pow/
# test_complex_scalar_pow_tensor/test_long_tensor_pow_floats, test_float_power(_exceptions),
# test_bitwise_shift(_float, _overflow), test_xlogy_xlog1py, test_heaviside(_complex,
# _cross_device), test_copysign, test_nextafter, test_gcd/test_lcm, test_atan2_edgecases,
# test_logaddexp, test_maximum_minimum_(nan, complex), test_sub_typing, test_add_with_alpha,
# test_inplace_dunders/type promotion errors, test_lerp, test_ldexp, test_addcmul/addcdiv,
# test_binary_op_scalar_overflow, test_comparison_ops_type_promotion, test_true_divide_out,
# test_bitwise_ops, test_hypot, test_igamma, test_polar/test_complex (complex() dtypes).
def ip(T, x, f):
    f(x)
    return x


BINARY = {
    "div_trunc_int": lambda T: T.div(T.tensor([-7, 7, -8, 8]), T.tensor([2, -2, 3, 3]), rounding_mode="trunc"),
    "div_floor_int": lambda T: T.div(T.tensor([-7, 7, -8, 8]), T.tensor([2, -2, 3, 3]), rounding_mode="floor"),
    "div_floor_float": lambda T: T.div(T.tensor([-7., 7., -0., 5.]), T.tensor([2., -2., 3., 0.]), rounding_mode="floor"),
    "div_trunc_float_zero": lambda T: T.div(T.tensor([-7., 7., 0.]), T.tensor([0., 0., 0.]), rounding_mode="trunc"),
    "div_int_zero_floor": lambda T: T.div(T.tensor([1]), T.tensor([0]), rounding_mode="floor"),
    "div_int_zero_trunc": lambda T: T.div(T.tensor([1]), T.tensor([0]), rounding_mode="trunc"),
    "div_int_zero_true": lambda T: T.div(T.tensor([1, -1, 0]), T.tensor([0, 0, 0])),
    "div_bad_mode": lambda T: T.div(T.tensor([1.]), 2, rounding_mode="round"),
    "floor_divide_int_zero": lambda T: T.floor_divide(T.tensor([5]), 0),
    "remainder_int_zero": lambda T: T.remainder(T.tensor([5]), 0),
    "fmod_int_zero": lambda T: T.fmod(T.tensor([5]), 0),
    "remainder_neg": lambda T: T.remainder(T.tensor([-3., 3., -3., 3.]), T.tensor([2., -2., -2., 2.])),
    "fmod_neg": lambda T: T.fmod(T.tensor([-3., 3., -3., 3.]), T.tensor([2., -2., -2., 2.])),
    "remainder_float_zero": lambda T: T.remainder(T.tensor([1., -1.]), 0.),
    "remainder_int_scalar_float": lambda T: T.remainder(T.tensor([5, -5]), 1.5),
    "remainder_scalar_tensor": lambda T: T.remainder(5, T.tensor([3, -3])),
    "pow_int_neg": lambda T: T.pow(T.tensor([2, 3]), -1),
    "pow_int_neg_tensor": lambda T: T.pow(T.tensor([2, 3]), T.tensor([-1, 2])),
    "pow_int_float_exp": lambda T: T.pow(T.tensor([2, 3]), 0.5),
    "pow_scalar_base": lambda T: T.pow(2, T.tensor([1, 2, 3])),
    "pow_scalar_base_float": lambda T: T.pow(2.5, T.tensor([1, 2])),
    "pow_complex_scalar": lambda T: T.pow(1j, T.tensor([1., 2.])),
    "pow_bool": lambda T: T.pow(T.tensor([True, False]), 2),
    "pow_uint8_overflow": lambda T: T.pow(T.tensor([4], dtype=T.uint8), 4),
    "pow_inplace_int_float": lambda T: ip(T, T.tensor([2, 3]), lambda x: x.pow_(1.5)),
    "float_power": lambda T: T.float_power(T.tensor([2, 3]), 2),
    "float_power_inplace_float": lambda T: ip(T, T.tensor([2., 3.]), lambda x: x.float_power_(2)),
    "float_power_inplace_double": lambda T: ip(T, T.tensor([2., 3.], dtype=T.float64), lambda x: x.float_power_(2)),
    "float_power_complex": lambda T: T.float_power(T.tensor([1j]), 2),
    "lshift_neg": lambda T: T.tensor([1, 8]) << T.tensor([-1, 70]),
    "rshift_big": lambda T: T.tensor([-8, 8]) >> T.tensor([70, 70]),
    "lshift_int8": lambda T: T.tensor([64], dtype=T.int8) << 1,
    "shift_float": lambda T: T.tensor([1.5]) << 1,
    "xlogy_nan_zero": lambda T: T.xlogy(T.tensor([0., 0., 1., nan]), T.tensor([0., nan, 0., 1.])),
    "xlog1py": lambda T: T.special.xlog1py(T.tensor([0., 0., 2.]), T.tensor([-1., nan, 1.])),
    "heaviside": lambda T: T.heaviside(T.tensor([-1., 0., 2.]), T.tensor([0.5])),
    "heaviside_dtype_mismatch": lambda T: T.heaviside(T.tensor([-1., 0.]), T.tensor([1])),
    "heaviside_complex": lambda T: T.heaviside(T.tensor([1j]), T.tensor([1j])),
    "copysign_int": lambda T: T.copysign(T.tensor([1, -2]), T.tensor([-0., 0.])),
    "nextafter": lambda T: T.nextafter(T.tensor([1., 0.]), T.tensor([2., -1.])),
    "nextafter_int": lambda T: T.nextafter(T.tensor([1]), T.tensor([2])),
    "gcd": lambda T: T.gcd(T.tensor([0, 4, -6, 7]), T.tensor([0, 6, 4, 0])),
    "lcm": lambda T: T.lcm(T.tensor([0, 4, -6, 7]), T.tensor([0, 6, 4, 0])),
    "gcd_float": lambda T: T.gcd(T.tensor([1.]), T.tensor([2.])),
    "atan2_edges": lambda T: T.atan2(T.tensor([0., -0., 0., -0., inf, -inf]), T.tensor([0., 0., -0., -0., inf, -inf])),
    "logaddexp_inf": lambda T: T.logaddexp(T.tensor([-inf, inf, -inf]), T.tensor([-inf, inf, 1.])),
    "logaddexp2": lambda T: T.logaddexp2(T.tensor([1., -inf]), T.tensor([2., -inf])),
    "max_min_nan": lambda T: (T.maximum(T.tensor([nan, 1.]), T.tensor([1., nan])), T.fmax(T.tensor([nan, 1.]), T.tensor([1., nan]))),
    "maximum_complex": lambda T: T.maximum(T.tensor([1j]), T.tensor([1j])),
    "sub_bool": lambda T: T.tensor([True]) - T.tensor([False]),
    "rsub_bool": lambda T: T.rsub(T.tensor([True]), T.tensor([False])),
    "add_alpha_int_float": lambda T: T.add(T.tensor([1]), T.tensor([2]), alpha=1.5),
    "add_alpha_bool": lambda T: T.add(T.tensor([True]), T.tensor([True]), alpha=2),
    "inplace_int_by_float": lambda T: ip(T, T.tensor([1, 2]), lambda x: x.add_(1.5)),
    "inplace_div_int": lambda T: ip(T, T.tensor([1, 2]), lambda x: x.div_(2)),
    "inplace_div_int_floor": lambda T: ip(T, T.tensor([1, 2]), lambda x: x.div_(2, rounding_mode="floor")),
    "inplace_mul_bool_int": lambda T: ip(T, T.tensor([True]), lambda x: x.mul_(2)),
    "inplace_broadcast_fail": lambda T: ip(T, T.zeros(3), lambda x: x.add_(T.ones(2, 3))),
    "lerp": lambda T: T.lerp(T.tensor([0., 1.]), T.tensor([10., 5.]), 0.3),
    "lerp_tensor_weight": lambda T: T.lerp(T.tensor([0., 1.]), T.tensor([10., 5.]), T.tensor([0.9, 0.1])),
    "lerp_dtype_mismatch": lambda T: T.lerp(T.tensor([0., 1.]), T.tensor([10., 5.], dtype=T.float64), 0.5),
    "ldexp": lambda T: T.ldexp(T.tensor([1., 2.]), T.tensor([3, -1])),
    "addcmul_int_value_float": lambda T: T.addcmul(T.tensor([1]), T.tensor([2]), T.tensor([3]), value=0.5),
    "addcdiv_int": lambda T: T.addcdiv(T.tensor([1]), T.tensor([2]), T.tensor([3])),
    "mul_uint8_scalar_overflow": lambda T: T.tensor([200], dtype=T.uint8) * 2,
    "add_int8_scalar_overflow": lambda T: T.tensor([100], dtype=T.int8) + 1000,
    "comparison_int_float_scalar": lambda T: T.tensor([1, 2]) < 1.5,
    "eq_uint8_neg": lambda T: T.tensor([255], dtype=T.uint8) == -1,
    "long_pow_float_list": lambda T: T.tensor([2, 3]) ** 2.0,
    "true_divide_out_int": lambda T: T.true_divide(T.tensor([1, 2]), 2, out=T.empty(2, dtype=T.long)),
    "bitwise_and_float": lambda T: T.bitwise_and(T.tensor([1.]), T.tensor([1.])),
    "bitwise_xor_bool": lambda T: T.bitwise_xor(T.tensor([True, False]), T.tensor([True, True])),
    "hypot_int": lambda T: T.hypot(T.tensor([3]), T.tensor([4])),
    "igamma": lambda T: T.igamma(T.tensor([1., 2.]), T.tensor([0.5, 3.])),
    "polar": lambda T: T.polar(T.tensor([1., 2.]), T.tensor([0., 1.5])),
    "complex_fn": lambda T: T.complex(T.tensor([1.]), T.tensor([2.])),
    "complex_fn_dtype_mismatch": lambda T: T.complex(T.tensor([1.]), T.tensor([2.], dtype=T.float64)),
    "complex_fn_int": lambda T: T.complex(T.tensor([1]), T.tensor([2])),
}


@pytest.mark.parametrize("fn", outcome_params(BINARY))
def test_binary_ufuncs(fn):
    same_outcome(fn)


# ==== test/test_tensor_creation_ops.py and test/test_shape_ops.py (parts not ported in
# test_shape_creation_ported.py) ====================================================================
# test_cat_* (empty legacy, type promotion, out=, bad dims), test_stack/hstack/vstack/dstack/
# column_stack/row_stack, test_full_inference, test_*_like, test_eye, test_arange_* (bad steps,
# inf, int dtypes), test_range, test_linspace/logspace (steps, int/complex dtypes), test_tensor_*
# (nested mismatch, overflow, mixed types), test_as_tensor, test_asarray, test_randint/randperm
# (shapes, dtypes, errors), test_empty_strided, test_tril/triu_indices, test_cartesian_prod,
# test_combinations, test_meshgrid; test_flip/fliplr/flipud, test_rot90, test_roll, test_movedim,
# test_diagonal, test_diagflat, test_clamp, test_nonzero(_static), test_argwhere, test_unflatten,
# test_take_along_dim, test_tensor_split, test_hsplit/vsplit, test_unbind, test_squeeze,
# test_expand, test_repeat, test_repeat_interleave. Random results are compared only where the
# values do not depend on the stream (shapes, dtypes, a sorted permutation).
CREATION_SHAPE = {
    "cat_empty_1d_legacy": lambda T: T.cat([T.zeros(0), T.ones(2, 3)]),
    "cat_mixed_dtype": lambda T: T.cat([T.tensor([1], dtype=T.int8), T.tensor([2.5])]),
    "cat_bool_int": lambda T: T.cat([T.tensor([True]), T.tensor([2])]),
    "cat_out_of_range_dim": lambda T: T.cat([T.ones(2), T.ones(2)], dim=1),
    "cat_zero_dim": lambda T: T.cat([T.tensor(1.), T.tensor(2.)]),
    "cat_shape_mismatch": lambda T: T.cat([T.ones(2, 3), T.ones(2, 4)]),
    "cat_empty_list": lambda T: T.cat([]),
    "cat_neg_dim": lambda T: T.cat([T.ones(2, 1), T.zeros(2, 2)], -1),
    "cat_out": lambda T: (lambda o: (T.cat([T.ones(2), T.zeros(1)], out=o), o)[1])(T.empty(3)),
    "stack_shape_mismatch": lambda T: T.stack([T.ones(2), T.ones(3)]),
    "stack_neg_dim": lambda T: T.stack([T.ones(2, 3), T.zeros(2, 3)], -1),
    "stack_mixed_dtype": lambda T: T.stack([T.tensor([1]), T.tensor([1.5])]),
    "hstack_0d": lambda T: T.hstack([T.tensor(1), T.tensor(2)]),
    "vstack_1d": lambda T: T.vstack([T.tensor([1, 2]), T.tensor([3, 4])]),
    "dstack_1d": lambda T: T.dstack([T.tensor([1, 2]), T.tensor([3, 4])]),
    "column_stack": lambda T: T.column_stack([T.tensor([1, 2]), T.tensor([[3], [4]])]),
    "row_stack": lambda T: T.row_stack([T.tensor([1, 2]), T.tensor([3, 4])]),
    "full_bool": lambda T: T.full((2,), True),
    "full_int": lambda T: T.full((2,), 3),
    "full_complex": lambda T: T.full((2,), 1 + 2j),
    "full_like_dtype": lambda T: T.full_like(T.zeros(2, dtype=T.int32), 2.7),
    "zeros_like_bool": lambda T: T.zeros_like(T.tensor([True])),
    "empty_like_shape": lambda T: T.empty_like(T.zeros(2, 3)).shape,
    "eye_nm": lambda T: T.eye(2, 3),
    "eye_neg": lambda T: T.eye(-1),
    "eye_dtype": lambda T: T.eye(2, dtype=T.int64),
    "arange_float_step": lambda T: T.arange(0, 1, 0.3),
    "arange_neg_step": lambda T: T.arange(5, 0, -2),
    "arange_zero_step": lambda T: T.arange(0, 5, 0),
    "arange_wrong_sign": lambda T: T.arange(0, 5, -1),
    "arange_inf": lambda T: T.arange(0, inf),
    "arange_dtype_int_float_args": lambda T: T.arange(0.5, 3, dtype=T.int64),
    "arange_int_default": lambda T: T.arange(5).dtype,
    "arange_float_default": lambda T: T.arange(5.).dtype,
    "range_deprecated": lambda T: T.range(0, 3),
    "linspace_steps1": lambda T: T.linspace(2, 5, 1),
    "linspace_int": lambda T: T.linspace(0, 10, 4, dtype=T.int64),
    "linspace_neg_steps": lambda T: T.linspace(0, 1, -1),
    "linspace_complex": lambda T: T.linspace(0, 1j, 3),
    "logspace_base2": lambda T: T.logspace(0, 3, 4, base=2),
    "logspace_int": lambda T: T.logspace(0, 2, 3, dtype=T.int64),
    "tensor_nested_mismatch": lambda T: T.tensor([[1, 2], [3]]),
    "tensor_mixed_bool_int": lambda T: T.tensor([True, 2]),
    "tensor_int_overflow": lambda T: T.tensor([2 ** 63]),
    "tensor_uint8_neg": lambda T: T.tensor([-1], dtype=T.uint8),
    "tensor_from_np_float16": lambda T: T.tensor(np.array([1.5], dtype=np.float16)),
    "tensor_from_list_of_tensors": lambda T: T.tensor([T.tensor(1.), T.tensor(2.)]),
    "tensor_empty_nested": lambda T: T.tensor([[], []]),
    "as_tensor_dtype": lambda T: T.as_tensor([1, 2], dtype=T.float32),
    "as_tensor_same": lambda T: (lambda x: T.as_tensor(x) is x)(T.ones(2)),
    "asarray_list": lambda T: T.asarray([1.5, 2]),
    "zeros_neg_size": lambda T: T.zeros(-1),
    "zeros_tuple_and_args": lambda T: T.zeros((2, 3)).shape,
    "ones_size_obj": lambda T: T.ones(T.Size([2, 1])),
    "randint_bad_range": lambda T: T.randint(5, 2, (3,)),
    "randint_shape_dtype": lambda T: (T.randint(0, 5, (2, 3)).shape, T.randint(0, 5, (2,)).dtype),
    "randn_int_dtype": lambda T: T.randn(2, dtype=T.int64),
    "rand_like_int": lambda T: T.rand_like(T.zeros(2, dtype=T.int64)),
    "randperm": lambda T: T.randperm(5).sort().values,
    "randperm_dtype": lambda T: T.randperm(3, dtype=T.float32).dtype,
    "empty_strided": lambda T: T.empty_strided((2, 3), (1, 2)).stride(),
    "tril_indices": lambda T: T.tril_indices(3, 4, 1),
    "triu_indices": lambda T: T.triu_indices(4, 3, -1),
    "cartesian_prod": lambda T: T.cartesian_prod(T.tensor([1, 2]), T.tensor([3, 4, 5])),
    "combinations": lambda T: T.combinations(T.tensor([1, 2, 3]), 2, with_replacement=True),
    "meshgrid_ij": lambda T: T.meshgrid(T.tensor([1, 2]), T.tensor([3, 4, 5]), indexing="ij"),
    "meshgrid_xy": lambda T: T.meshgrid(T.tensor([1, 2]), T.tensor([3, 4, 5]), indexing="xy"),
    "meshgrid_bad": lambda T: T.meshgrid(T.tensor([1, 2]), indexing="zz"),
    "flip_dims": lambda T: T.arange(8).view(2, 2, 2).flip(0, 2),
    "flip_dup_dims": lambda T: T.arange(4).view(2, 2).flip(0, 0),
    "fliplr_1d": lambda T: T.fliplr(T.arange(3)),
    "flipud": lambda T: T.flipud(T.arange(4).view(2, 2)),
    "rot90_k": lambda T: [T.rot90(T.arange(4).view(2, 2), k) for k in (-1, 2, 5)],
    "rot90_bad_dims": lambda T: T.rot90(T.arange(4).view(2, 2), 1, [0, 0]),
    "roll_multi": lambda T: T.roll(T.arange(6).view(2, 3), (1, -1), (0, 1)),
    "roll_flat": lambda T: T.roll(T.arange(6).view(2, 3), 2),
    "roll_mismatch": lambda T: T.roll(T.arange(6).view(2, 3), (1, 2), (0,)),
    "movedim_multi": lambda T: T.movedim(T.zeros(2, 3, 4), (0, 1), (2, 0)).shape,
    "movedim_dup": lambda T: T.movedim(T.zeros(2, 3), (0, 0), (1, 0)),
    "diagonal_offsets": lambda T: [T.arange(12).view(3, 4).diagonal(o) for o in (-1, 0, 2, 5)],
    "diagflat": lambda T: T.diagflat(T.tensor([[1, 2], [3, 4]]), 1),
    "clamp_min_max_tensor": lambda T: T.clamp(T.arange(5.), T.tensor(1.), T.tensor(3.)),
    "clamp_none": lambda T: T.clamp(T.arange(5.)),
    "clamp_min_gt_max": lambda T: T.clamp(T.arange(5.), 3, 1),
    "clamp_nan": lambda T: T.clamp(T.tensor([nan, 1.]), 0, 0.5),
    "nonzero_0d": lambda T: T.nonzero(T.tensor(1)),
    "nonzero_as_tuple": lambda T: T.nonzero(T.tensor([[0, 1], [1, 1]]), as_tuple=True),
    "nonzero_static": lambda T: T.nonzero_static(T.tensor([0, 3, 0, 4]), size=3, fill_value=-1),
    "argwhere": lambda T: T.argwhere(T.tensor([[0, 1], [1, 0]])),
    "unflatten": lambda T: T.arange(6).unflatten(0, (2, -1)),
    "unflatten_bad": lambda T: T.arange(6).unflatten(0, (4, -1)),
    "take_along_dim_none": lambda T: T.take_along_dim(T.tensor([[3, 1], [2, 4]]), T.tensor([0, 3])),
    "tensor_split_indices": lambda T: T.tensor_split(T.arange(7), [1, 5]),
    "tensor_split_tensor": lambda T: T.tensor_split(T.arange(7), T.tensor(3)),
    "hsplit_vsplit": lambda T: (T.hsplit(T.arange(8).view(2, 4), 2), T.vsplit(T.arange(8).view(4, 2), [1])),
    "unbind_neg": lambda T: T.unbind(T.arange(6).view(2, 3), -1),
    "squeeze_multi": lambda T: T.zeros(1, 2, 1, 1).squeeze((0, 2)).shape,
    "expand_as_err": lambda T: T.zeros(2).expand(3, 3),
    "repeat_fewer_dims": lambda T: T.zeros(2, 3).repeat(2),
    "repeat_interleave_tensor": lambda T: T.repeat_interleave(T.tensor([1, 2]), T.tensor([2, 3])),
    "repeat_interleave_only_repeats": lambda T: T.repeat_interleave(T.tensor([2, 0, 1])),
    "repeat_interleave_neg": lambda T: T.repeat_interleave(T.tensor([1, 2]), T.tensor([-1, 3])),
}


@pytest.mark.parametrize("fn", outcome_params(CREATION_SHAPE))
def test_creation_and_shape_ops(fn):
    same_outcome(fn)


# ==== test/test_reductions.py (parts not ported in test_sort_reduce_ported.py) ====================
# test_sum_dtype/test_sum_bool/test_prod_*, test_mean_int_error/test_mean_dtype, test_nansum/
# test_nanmean, test_amax/amin and max/min on empty dims, test_argmax/argmin (NaN, ties, bool),
# test_var/std (correction, unbiased, var_mean/std_mean, int error, complex), test_logsumexp
# (inf, int, empty), test_all_any (uint8, float, empty, dim tuples), test_count_nonzero,
# test_aminmax, test_norm/test_dist, test_cumsum/cumprod/cummax/logcumsumexp dtypes and edges,
# test_mode/median/nanmedian on empty and all-NaN input, test_quantile (interpolation, bad q,
# int error), test_nanquantile, 0-d reductions with a dim, test_histc, test_bincount, dim lists.
REDUCTIONS_MORE = {
    "sum_bool_dtype": lambda T: T.tensor([True, True]).sum(),
    "sum_int8_dtype": lambda T: T.tensor([100, 100], dtype=T.int8).sum(),
    "sum_dtype_arg": lambda T: T.tensor([1, 2]).sum(dtype=T.float32),
    "sum_empty_dims": lambda T: T.ones(2, 3).sum(()),
    "sum_dup_dims": lambda T: T.ones(2, 3).sum((0, 0)),
    "prod_int_dtype": lambda T: T.tensor([2, 3], dtype=T.int32).prod(),
    "prod_bool": lambda T: T.tensor([True, False]).prod(),
    "prod_empty": lambda T: T.ones(0).prod(),
    "mean_int_err": lambda T: T.tensor([1, 2]).mean(),
    "mean_int_dtype": lambda T: T.tensor([1, 2]).mean(dtype=T.float64),
    "mean_empty": lambda T: T.ones(0).mean(),
    "nansum": lambda T: T.nansum(T.tensor([1., nan, 2.])),
    "nansum_int": lambda T: T.nansum(T.tensor([1, 2])),
    "nanmean_all_nan": lambda T: T.nanmean(T.tensor([nan, nan])),
    "nanmean_dim": lambda T: T.nanmean(T.tensor([[1., nan], [nan, nan]]), 1),
    "amax_empty_dim": lambda T: T.ones(0, 3).amax(1),
    "amax_empty_err": lambda T: T.ones(0, 3).amax(0),
    "max_empty": lambda T: T.ones(0).max(),
    "max_dim_empty": lambda T: T.ones(0, 2).max(1),
    "argmax_ties_nan": lambda T: (T.tensor([1., nan, 3., nan]).argmax(), T.tensor([1., 3., 3.]).argmax()),
    "argmin_keepdim": lambda T: T.tensor([[3, 1], [0, 5]]).argmin(1, keepdim=True),
    "argmax_bool": lambda T: T.tensor([False, True, True]).argmax(),
    "std_correction": lambda T: [T.tensor([1., 2., 4.]).std(correction=c) for c in (0, 1, 2, 3)],
    "var_unbiased_kw": lambda T: T.tensor([1., 2., 4.]).var(unbiased=False),
    "var_mean": lambda T: T.var_mean(T.tensor([[1., 2.], [3., 5.]]), 1),
    "std_mean_dims": lambda T: T.std_mean(T.arange(8.).view(2, 2, 2), (0, 2), keepdim=True),
    "var_int_err": lambda T: T.tensor([1, 2]).var(),
    "var_single": lambda T: T.tensor([1.]).var(),
    "var_complex": lambda T: T.tensor([1 + 1j, 2 - 1j]).var(),
    "logsumexp_inf": lambda T: T.logsumexp(T.tensor([[-inf, -inf], [inf, 1.]]), 1),
    "logsumexp_int": lambda T: T.logsumexp(T.tensor([1, 2]), 0),
    "logsumexp_empty": lambda T: T.logsumexp(T.ones(0, 2), 0),
    "all_any_uint8": lambda T: (T.tensor([1, 0], dtype=T.uint8).all(), T.tensor([1, 0], dtype=T.uint8).any()),
    "all_any_float": lambda T: (T.tensor([1., 0.5]).all(), T.tensor([0., nan]).any()),
    "all_empty": lambda T: (T.ones(0).all(), T.ones(0).any()),
    "all_dims_tuple": lambda T: T.ones(2, 3, dtype=T.bool).all((0, 1)),
    "count_nonzero": lambda T: T.count_nonzero(T.tensor([[0, 1], [2, 0]]), dim=(0, 1)),
    "count_nonzero_dim": lambda T: T.count_nonzero(T.tensor([[0, 1], [2, 0]]), dim=0),
    "aminmax_dim": lambda T: T.aminmax(T.tensor([[1, 5], [3, 2]]), dim=1),
    "aminmax_empty": lambda T: T.aminmax(T.ones(0)),
    "norm_p": lambda T: [T.tensor([3., -4.]).norm(p) for p in (0, 1, 2, inf, -inf, 0.5)],
    "norm_int_err": lambda T: T.tensor([3, 4]).norm(),
    "dist": lambda T: T.dist(T.tensor([1., 2.]), T.tensor([4., 6.]), 3),
    "cumsum_int_dtype": lambda T: T.tensor([1, 2], dtype=T.int8).cumsum(0).dtype,
    "cumsum_bool": lambda T: T.tensor([True, True]).cumsum(0),
    "cumprod_zero": lambda T: T.tensor([2., 0., 3.]).cumprod(0),
    "cummax_nan": lambda T: T.tensor([1., nan, 3.]).cummax(0),
    "logcumsumexp": lambda T: T.tensor([-inf, 0., inf]).logcumsumexp(0),
    "mode_empty": lambda T: T.ones(0, 3).mode(0),
    "median_empty": lambda T: T.ones(0).median(),
    "nanmedian_all_nan_dim": lambda T: T.tensor([[nan, nan], [1., nan]]).nanmedian(1),
    "quantile_interp": lambda T: [T.quantile(T.tensor([1., 2., 4., 8.]), 0.4, interpolation=m) for m in ("linear", "lower", "higher", "midpoint", "nearest")],
    "quantile_bad_q": lambda T: T.quantile(T.tensor([1., 2.]), 1.5),
    "quantile_int_err": lambda T: T.quantile(T.tensor([1, 2]), 0.5),
    "nanquantile": lambda T: T.nanquantile(T.tensor([1., nan, 3.]), T.tensor([0.25, 0.5])),
    "sum_keepdim_0d": lambda T: T.tensor(3.).sum(0, keepdim=True),
    "sum_dim_0d_err": lambda T: T.tensor(3.).sum(1),
    "max_0d_dim": lambda T: T.tensor(3.).max(0),
    "histc": lambda T: T.histc(T.tensor([1., 2., 1., 4.]), bins=4, min=0, max=4),
    "histc_int_err": lambda T: T.histc(T.tensor([1, 2]), bins=2),
    "bincount_weights": lambda T: T.bincount(T.tensor([0, 1, 1, 3]), T.tensor([0.5, 1., 1., 2.]), minlength=5),
    "tensor_sum_dim_list_neg": lambda T: T.arange(24.).view(2, 3, 4).sum([-1, 0]),
    "mean_dim_none_keepdim": lambda T: T.arange(6.).view(2, 3).mean(None, keepdim=True),
    "std_dim_none_keepdim": lambda T: T.arange(6.).view(2, 3).std(None, keepdim=True),
}


@pytest.mark.parametrize("fn", outcome_params(REDUCTIONS_MORE))
def test_reductions_more(fn):
    same_outcome(fn)


# ==== test/test_tensorboard.py (the SummaryWriter parts tracegrad has) ============================
# TestTensorBoardPyTorchNumpy.test_pytorch_write/test_pytorch_histogram(_raw),
# TestTensorBoardSummaryWriter.test_summary_writer_ctx/_close/test_pathlib. Both libraries write
# the same data; the event files are read back with tensorboard's EventAccumulator and compared.
# Not ported: audio/video/pr-curve/mesh/embedding/figure writers and the summary/_utils/_convert_np
# internals (tracegrad has none of them).
def _tb_write(T, logdir):
    import importlib
    SW = importlib.import_module(f"{T.__name__}.utils.tensorboard").SummaryWriter
    with SW(logdir) as w:
        w.add_scalar("scalar", T.tensor([0.25]), 0)
        w.add_scalar("scalar_requires_grad", T.ones(1, requires_grad=True) * 2, 1)
        w.add_histogram("float histogram", T.arange(50.) / 50)
        w.add_histogram("int histogram", T.arange(0, 100, 2))
        w.add_histogram("bfloat16 histogram", (T.arange(50.) / 50).to(T.bfloat16))
        floats = np.arange(50, dtype=np.float64) / 50
        counts, limits = np.histogram(floats, [0.0, 0.25, 0.5, 0.75, 1.0])
        w.add_histogram_raw("float histogram raw", min=floats.min(), max=floats.max(), num=50, sum=floats.sum(),
                            sum_squares=floats.dot(floats), bucket_limits=limits[1:].tolist(),
                            bucket_counts=counts.tolist())
        ints = T.tensor(range(100)).float()
        w.add_histogram_raw("histc raw", min=ints.min().item(), max=ints.max().item(), num=100,
                            sum=ints.sum().item(), sum_squares=ints.dot(ints).item(),
                            bucket_limits=T.tensor(range(100)).tolist(),
                            bucket_counts=T.histc(ints, bins=100, min=0, max=99).tolist())
        with pytest.raises(ValueError):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0, 2.0], [1])
    assert w.file_writer is None       # closed by the with block
    return w


def _tb_read(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(logdir, size_guidance={"histograms": 0, "scalars": 0}).Reload()
    tags = acc.Tags()
    scalars = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags["scalars"]}
    hists = {}
    for t in tags["histograms"]:
        (h,) = acc.Histograms(t)
        v = h.histogram_value
        hists[t] = (v.min, v.max, v.num, v.sum, round(v.sum_squares, 6), list(v.bucket_limit), list(v.bucket))
    return scalars, hists


def test_tensorboard_summary_writer(tmp_path):
    pytest.importorskip("tensorboard")
    got = {}
    for T in (torch, tracegrad):
        d = str(tmp_path / T.__name__)
        _tb_write(T, d)
        got[T.__name__] = _tb_read(d)
    assert set(got["torch"][0]) == {"scalar", "scalar_requires_grad"} and len(got["torch"][1]) == 5
    assert got["tracegrad"][0] == got["torch"][0]
    for tag in ("float histogram raw", "histc raw"):
        assert got["tracegrad"][1][tag] == got["torch"][1][tag], tag
    for tag in ("float histogram", "int histogram", "bfloat16 histogram"):   # our bucket layout is our own
        assert got["tracegrad"][1][tag][:5] == pytest.approx(got["torch"][1][tag][:5], rel=1e-6), tag


