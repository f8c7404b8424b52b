"""Conformance tests ported from PyTorch's test/test_foreach.py (TestForeach): the
``torch._foreach_*`` functions on lists of tensors -- values against the per-tensor op, in-place
variants, argument forms (number, list of numbers, list of Tensors, 0-dim Tensor, alpha), the
slow-path layouts (expanded, transposed, sliced), inf/nan, autograd, and the errors. Each body
runs under torch 2.13 (the oracle) and tracegrad; each test names the originals it covers."""
import pytest

import tracegrad
from parity import run_both, run_cases

torch = pytest.importorskip("torch")

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
         "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


def _foreach_names(mod):
    return sorted(n for n in dir(mod) if n.startswith("_foreach_"))


def test_every_torch_foreach_function_exists():
    # the OpInfo loop of TestForeach runs over foreach_unary/binary/pointwise/reduce/other op dbs
    assert _foreach_names(tracegrad) == _foreach_names(torch)


def _lists(T):
    # two tensors of different shapes (one non-contiguous), values in (0.1, 0.9) so every unary op
    # is defined
    a = T.tensor([[0.1, 0.5], [0.3, 0.9]]).t()
    b = T.tensor([0.2, 0.4, 0.6])
    return [a, b]


@pytest.mark.parametrize("op", UNARY)
def test_unary_op_values_and_inplace(op):
    # test_parity / test_unary_op (OpInfo loop over foreach_unary_op_db), test_inplace_foreach
    def program(T, log):
        xs = _lists(T)
        ref = [getattr(x, op)() for x in xs]
        out = getattr(T, f"_foreach_{op}")(xs)
        log("out", out)
        log("same as loop", all(T.equal(o, r) for o, r in zip(out, ref)))
        ys = [x.clone() for x in xs]
        ret = getattr(T, f"_foreach_{op}_")(ys)
        log("inplace returns self", ret is ys)
        log("inplace", ys)
        ints = [T.tensor([1, 2]), T.tensor([3])]
        log("int out", _outcome(lambda: [o.dtype for o in getattr(T, f"_foreach_{op}")(ints)]))
    run_both(program)


def test_unary_op_dtypes_and_errors():
    # test_neg (bool), test_sqrt/test_exp/... (integer in-place: "result type Float can't be cast")
    b = lambda T: [T.tensor([True, False])]  # noqa: E731
    i = lambda T: [T.tensor([1, 4]), T.tensor([9])]  # noqa: E731
    run_cases({
        "neg bool": lambda T: T._foreach_neg(b(T)),
        "neg_ bool": lambda T: T._foreach_neg_(b(T)),
        "sign bool": lambda T: T._foreach_sign(b(T)),
        "abs int": lambda T: T._foreach_abs(i(T)),
        "sqrt int promotes": lambda T: T._foreach_sqrt(i(T)),
        "sqrt_ int refused": lambda T: T._foreach_sqrt_(i(T)),
        "exp_ int refused": lambda T: T._foreach_exp_(i(T)),
        "neg_ int": lambda T: T._foreach_neg_(i(T)),
        "float64 list": lambda T: T._foreach_exp([T.tensor([1., 2.], dtype=T.float64)]),
        "mixed dtypes": lambda T: T._foreach_sqrt([T.tensor([4.]), T.tensor([9], dtype=T.int32), T.tensor([16.], dtype=T.float64)]),
        "empty list": lambda T: T._foreach_exp([]),
        "empty_ list": lambda T: T._foreach_exp_([]),
        "not a list": lambda T: T._foreach_exp(T.ones(2)),
        "list with a number": lambda T: T._foreach_exp([T.ones(2), 3.0]),
        "empty tensors": lambda T: T._foreach_exp([T.ones(0), T.ones(2, 0)]),
        "tuple input": lambda T: T._foreach_exp((T.ones(2),)),
        "zero_": lambda T: T._foreach_zero_([T.ones(2), T.ones(3, dtype=T.int64)]),
        "clone": lambda T: T._foreach_clone([T.ones(2), T.arange(3)]),
    })


BINARY = ("add", "sub", "mul", "div", "clamp_min", "clamp_max", "maximum", "minimum", "pow")


@pytest.mark.parametrize("op", BINARY)
def test_binary_op_argument_forms(op):
    # test_binary_op (scalar, scalarlist, tensorlist, 0-dim tensor overloads), test_parity
    def program(T, log):
        xs = _lists(T)
        ys = [T.tensor([[0.5, 2.0], [1.5, 0.25]]), T.tensor([3.0, 0.5, 2.0])]
        forms = {"number": 2.0, "int": 3, "numbers": [2.0, 0.5], "mixed numbers": [2, 0.5],
                 "tensors": ys, "0-dim tensor": T.tensor(1.5)}
        for form, other in forms.items():
            out = _outcome(lambda: getattr(T, f"_foreach_{op}")(xs, other))
            if isinstance(out, str):
                log(form, out)
                continue
            per = other if isinstance(other, list) else [other] * 2
            # torch's maximum/minimum with a number are the clamps
            ref = [getattr(x, {"maximum": "clamp_min", "minimum": "clamp_max"}.get(op, op) if isinstance(o, (int, float)) else op)(o)
                   for x, o in zip(xs, per)]
            log(form, out)
            log(form + " same as loop", all(T.allclose(o, r, equal_nan=True) for o, r in zip(out, ref)))
            zs = [x.clone() for x in xs]
            ret = getattr(T, f"_foreach_{op}_")(zs, other)
            log(form + " inplace", [ret is zs, zs])
    run_both(program)


def test_binary_op_alpha_and_type_promotion():
    # test_binary_op_scalar_with_different_tensor_dtypes, test_add/sub with alpha, test_div_reciprocal
    ints = lambda T: [T.tensor([1, 2]), T.tensor([3], dtype=T.int32)]  # noqa: E731
    fl = lambda T: [T.ones(2), T.ones(3)]  # noqa: E731
    run_cases({
        "add tensors alpha": lambda T: T._foreach_add(fl(T), fl(T), alpha=2),
        "sub tensors alpha": lambda T: T._foreach_sub(fl(T), [T.ones(2), T.full((3,), 4.)], alpha=0.5),
        "add 0-dim alpha": lambda T: T._foreach_add(fl(T), T.tensor(2.), alpha=3),
        "add number alpha refused": lambda T: T._foreach_add(fl(T), 1, alpha=2),
        "add numbers alpha refused": lambda T: T._foreach_add(fl(T), [1., 2.], alpha=2),
        "mul alpha refused": lambda T: T._foreach_mul(fl(T), fl(T), alpha=2),
        "int + float number": lambda T: T._foreach_add(ints(T), 1.5),
        "int + int number": lambda T: T._foreach_add(ints(T), 2),
        "int / int number": lambda T: T._foreach_div(ints(T), 2),
        "int * float 0-dim": lambda T: T._foreach_mul(ints(T), T.tensor(2.)),
        "int + float numbers": lambda T: T._foreach_add(ints(T), [1.5, 2]),
        "int += float refused": lambda T: T._foreach_add_(ints(T), 1.5),
        "int /= int refused": lambda T: T._foreach_div_(ints(T), 2),
        "bool - number refused": lambda T: T._foreach_sub([T.tensor([True])], 1),
        "mixed dtypes + 0-dim": lambda T: T._foreach_add([T.ones(2, dtype=T.float64), T.ones(2, dtype=T.int64)], T.tensor(1.5)),
        "float16 * number": lambda T: T._foreach_mul([T.tensor([1.5], dtype=T.float16)], 3),
        "pow number base": lambda T: T._foreach_pow(2., fl(T)),
        "pow int base int exps": lambda T: T._foreach_pow(2, ints(T)),
        "div reciprocal": lambda T: T._foreach_div([T.tensor([2., 4.])], [T.tensor([0.5, 0.25])]),
        "complex mul": lambda T: T._foreach_mul([T.tensor([1 + 2j])], [T.tensor([3 - 1j])]),
        "keyword scalar": lambda T: T._foreach_add(fl(T), scalar=2.),
        "keyword scalars": lambda T: T._foreach_mul(fl(T), scalars=[2., 3.]),
    })


def test_binary_op_list_error_cases():
    # test_binary_op_list_error_cases, test_0dim_tensor_overload_exception,
    # test_add_scalar_with_empty_list_and_empty_tensor
    one = lambda T: [T.tensor([1.])]  # noqa: E731
    for op in ("add", "mul", "div", "sub", "maximum", "clamp_min", "pow"):
        for suffix in ("", "_"):
            f = lambda T: getattr(T, f"_foreach_{op}{suffix}")  # noqa: E731
            run_cases({
                "both empty": lambda T: f(T)([], []),
                "empty self, number": lambda T: f(T)([], 1),
                "empty other list": lambda T: f(T)(one(T), []),
                "1 and 2 tensors": lambda T: f(T)(one(T), [T.tensor([1.]), T.tensor([1.])]),
                "1 tensor, 2 numbers": lambda T: f(T)(one(T), [1., 2.]),
                "sizes not broadcastable": lambda T: f(T)([T.zeros(2, 2)], [T.ones(3, 3)]),
                "broadcasting sizes": lambda T: f(T)([T.zeros(2, 2)], [T.ones(1, 2)]),
                "1-d tensor as scalar": lambda T: f(T)(one(T), T.tensor([2.])),
                "2-d tensor as scalar": lambda T: f(T)(one(T), T.ones(1, 1)),
                "tensor as self": lambda T: f(T)(T.ones(2), 1),
                "numbers and tensors mixed": lambda T: f(T)(one(T) * 2, [T.tensor([1.]), 2.]),
                "string other": lambda T: f(T)(one(T), "x"),
                "empty tensor with number": lambda T: f(T)([T.ones(0)], 2),
                "empty tensor with empty tensor": lambda T: f(T)([T.ones(0)], [T.ones(0)]),
            })


def test_binary_op_list_slow_path():
    # test_binary_op_list_slow_path: 0-strides, different strides, non-contiguous and sliced
    def program(T, log):
        base = T.arange(1., 13.).reshape(3, 4)
        cases = {
            "expanded other": ([base], [T.tensor([2.]).expand(3, 4)]),
            "transposed other": ([T.ones(4, 3)], [base.t()]),
            "non-contiguous both": ([base[:, ::2]], [base[:, 1::2]]),
            "sliced other": ([T.ones(3, 2)], [base[:, ::3]]),
        }
        for name, (xs, ys) in cases.items():
            for op in ("add", "mul", "div", "sub"):
                log(f"{name} {op}", getattr(T, f"_foreach_{op}")(xs, ys))
                zs = [x.clone() for x in xs]
                getattr(T, f"_foreach_{op}_")(zs, ys)
                log(f"{name} {op}_", zs)
        v = T.zeros(2, 3)
        T._foreach_add_([v[0], v[:, 1]], [T.ones(3), T.full((2,), 5.)])
        log("in-place into overlapping views of one base", v)
        log("in-place into expanded", _outcome(lambda: T._foreach_add_([T.zeros(1).expand(3)], 1.)))
    run_both(program)


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the builtin class is what is compared
        return next(k for k in type(e).__mro__ if k.__module__ == "builtins").__name__


def test_binary_op_float_inf_nan():
    # test_binary_op_float_inf_nan
    def program(T, log):
        inf, nan = float("inf"), float("nan")
        xs = [T.tensor([inf]), T.tensor([-inf]), T.tensor([nan]), T.tensor([nan])]
        ys = [T.tensor([-inf]), T.tensor([inf]), T.tensor([inf]), T.tensor([nan])]
        for op in ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"):
            log(op, getattr(T, f"_foreach_{op}")(xs, ys))
    run_both(program)


def test_pointwise_ops():
    # test_pointwise_op_with_tensor_of_scalarlist_overload, test_addcmul/addcdiv (OpInfo),
    # test_pointwise_op_errors
    def lists(T):
        return ([T.tensor([1., 2.]), T.tensor([[3.]])],
                [T.tensor([0.5, -1.]), T.tensor([[2.]])],
                [T.tensor([4., 0.5]), T.tensor([[8.]])])
    cases = {}
    for op in ("addcmul", "addcdiv"):
        for suffix in ("", "_"):
            f = lambda T, op=op, suffix=suffix: getattr(T, f"_foreach_{op}{suffix}")  # noqa: E731
            cases.update({
                f"{op}{suffix} default value": lambda T, f=f: f(T)(*lists(T)),
                f"{op}{suffix} value=": lambda T, f=f: f(T)(*lists(T), value=-2),
                f"{op}{suffix} scalars list": lambda T, f=f: f(T)(*lists(T), [0.5, 3]),
                f"{op}{suffix} scalars tensor": lambda T, f=f: f(T)(*lists(T), T.tensor([0.5, 3.])),
                f"{op}{suffix} scalars wrong length": lambda T, f=f: f(T)(*lists(T), [0.5]),
                f"{op}{suffix} tensor1 short": lambda T, f=f: f(T)(lists(T)[0], lists(T)[1][:1], lists(T)[2]),
                f"{op}{suffix} empty": lambda T, f=f: f(T)([], [], []),
                f"{op}{suffix} bad shapes": lambda T, f=f: f(T)([T.ones(2)], [T.ones(3)], [T.ones(2)]),
            })
    cases["addcdiv int refused"] = lambda T: T._foreach_addcdiv([T.tensor([1])], [T.tensor([1])], [T.tensor([2])])
    run_cases(cases)


def test_lerp():
    # test_lerp (foreach_lerp_op_db: tensor weights, scalar weight, scalar-list weight)
    def lists(T):
        return [T.tensor([1., 2.]), T.tensor([[3.], [4.]])], [T.tensor([5., -2.]), T.tensor([[0.], [1.]])]
    cases = {}
    for suffix in ("", "_"):
        f = lambda T, s=suffix: getattr(T, f"_foreach_lerp{s}")  # noqa: E731
        cases.update({
            f"lerp{suffix} number": lambda T, f=f: f(T)(*lists(T), 0.25),
            f"lerp{suffix} numbers": lambda T, f=f: f(T)(*lists(T), [0.25, 2.]),
            f"lerp{suffix} tensors": lambda T, f=f: f(T)(*lists(T), [T.tensor([0.5, 0.]), T.tensor([[1.], [-1.]])]),
            f"lerp{suffix} 0-dim": lambda T, f=f: f(T)(*lists(T), T.tensor(0.75)),
            f"lerp{suffix} int": lambda T, f=f: f(T)([T.tensor([1])], [T.tensor([2])], 0.5),
            f"lerp{suffix} short": lambda T, f=f: f(T)(lists(T)[0], lists(T)[1][:1], 0.5),
        })
    run_cases(cases)


def test_reduce_ops():
    # test_foreach_reduce_large_input, test_foreach_l2_large_value_input (CPU part),
    # test_big_num_tensors, foreach_reduce_op_db (norm, max, powsum)
    xs = lambda T: [T.tensor([3., -4.]), T.tensor([[1., -2.], [2., 0.]]), T.tensor(5.)]  # noqa: E731
    big = lambda T: [T.full((2,), 3e38), T.full((3,), 1e20)]  # noqa: E731
    inf = float("inf")
    run_cases({
        "norm default": lambda T: T._foreach_norm(xs(T)),
        "norm 1": lambda T: T._foreach_norm(xs(T), 1),
        "norm inf": lambda T: T._foreach_norm(xs(T), inf),
        "norm -inf": lambda T: T._foreach_norm(xs(T), -inf),
        "norm 0": lambda T: T._foreach_norm(xs(T), 0),
        "norm 3.5": lambda T: T._foreach_norm(xs(T), 3.5),
        "norm dtype": lambda T: T._foreach_norm(xs(T), 2, dtype=T.float64),
        "norm half to float": lambda T: T._foreach_norm([T.tensor([1., 2.], dtype=T.float16)], dtype=T.float32),
        "norm overflow": lambda T: T._foreach_norm(big(T)),
        "norm empty tensor": lambda T: T._foreach_norm([T.ones(0)]),
        "norm int refused": lambda T: T._foreach_norm([T.tensor([1, 2])]),
        "norm empty list": lambda T: T._foreach_norm([]),
        "norm many": lambda T: T._foreach_norm([T.full((3,), float(i)) for i in range(40)]),
        "max": lambda T: T._foreach_max(xs(T)),
        "max int": lambda T: T._foreach_max([T.tensor([1, 7, 3])]),
        "max empty tensor": lambda T: T._foreach_max([T.ones(0)]),
        "powsum 2": lambda T: T._foreach_powsum(xs(T), 2),
        "powsum 3": lambda T: T._foreach_powsum(xs(T), 3),
        "powsum 1.5": lambda T: T._foreach_powsum(xs(T), 1.5),
    })


def test_other_ops():
    # test_foreach_copy_with_multi_dtypes (CPU), foreach_other_op_db (_foreach_mm), zero_, clone
    def program(T, log):
        dst = [T.zeros(2), T.zeros(2, 2, dtype=T.float64), T.zeros(3, dtype=T.int64)]
        src = [T.tensor([1.5, 2.5]), T.tensor([1., 2.]), T.tensor([1.7, -1.7, 9.])]
        ret = T._foreach_copy_(dst, src)
        log("copy_ casts and broadcasts", dst)
        log("copy_ returns self", ret is dst)
        log("copy_ bad shape", _outcome(lambda: T._foreach_copy_([T.zeros(2)], [T.ones(3)])))
        log("copy_ lengths", _outcome(lambda: T._foreach_copy_([T.zeros(2)], [T.ones(2), T.ones(2)])))
        m = [T.arange(6.).reshape(2, 3), T.ones(1, 2)]
        log("mm", T._foreach_mm(m, [T.ones(3, 2), T.tensor([[2.], [3.]])]))
        log("mm 1-d refused", _outcome(lambda: T._foreach_mm([T.ones(2)], [T.ones(2)])))
        log("mm shapes refused", _outcome(lambda: T._foreach_mm([T.ones(2, 3)], [T.ones(2, 3)])))
        c = [T.ones(2)]
        cl = T._foreach_clone(c)
        cl[0].add_(1)
        log("clone is a copy", [c, cl])
        z = [T.ones(2), T.ones(1, dtype=T.bool)]
        log("zero_", [T._foreach_zero_(z) is z, z])
    run_both(program)


def test_inplace_foreach_leaf_check_and_grad_fn():
    # test_inplace_foreach_leaf_check_and_grad_fn, test_outplace_with_invalid_grads (autograd of
    # the out-of-place ops reaches every input)
    def program(T, log):
        leaf = T.ones(2, requires_grad=True)
        log("leaf add_", _outcome(lambda: T._foreach_add_([leaf], 1.)))
        log("leaf exp_", _outcome(lambda: T._foreach_exp_([leaf])))
        a = T.tensor([0.5, 1.5], requires_grad=True)
        b = T.tensor([2., -1., 3.], requires_grad=True)
        xs = [a * 1, b * 1]
        T._foreach_mul_(xs, [T.tensor([2., 3.]), T.tensor(4.)])
        T._foreach_exp_(xs)
        log("in-place results", xs)
        log("have grad_fn", [x.grad_fn is not None for x in xs])
        (xs[0].sum() + xs[1].sum()).backward()
        log("grads in-place", [a.grad, b.grad])
        a.grad = b.grad = None
        outs = T._foreach_addcmul([a, b], [a, b], [a, b], value=0.5)
        n = T._foreach_norm(outs)
        (n[0] + n[1]).backward()
        log("grads out-of-place", [a.grad, b.grad])
        a.grad = b.grad = None
        y = T._foreach_lerp([a], [b[:2]], 0.25)[0]
        y.sum().backward()
        log("lerp grads", [a.grad, b.grad])
        with T.no_grad():
            log("no_grad in-place on leaf", T._foreach_add_([leaf], 1.)[0])
    run_both(program)
