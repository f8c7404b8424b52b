"""tracegrad.testing._internal (torch's test harness) against torch's own: the same assertEqual
calls through torch's TestCase on torch tensors and through ours on tracegrad tensors agree on
pass/fail and the failure class; parametrized and device-type tests get torch's names; and a
torch-style test module run with ``sys.modules["torch"] = tracegrad`` gives the expected
pass/skip/fail counts."""
import math
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import unittest

import numpy as np
import pytest

import tracegrad
from tracegrad.autograd.gradcheck import GradcheckError
from tracegrad.testing._internal import common_device_type as tg_cdt
from tracegrad.testing._internal import common_dtype as tg_dtype
from tracegrad.testing._internal import common_nn as tg_nn
from tracegrad.testing._internal import common_utils as tg_cu

torch = pytest.importorskip("torch")
torch_cu = pytest.importorskip("torch.testing._internal.common_utils")
torch_cdt = pytest.importorskip("torch.testing._internal.common_device_type")
torch_dtype = pytest.importorskip("torch.testing._internal.common_dtype")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _outcome(case_cls, lib, make, method="assertEqual"):
    x, y, kw = (make(lib) + ({},))[:3]
    try:
        getattr(case_cls(), method)(x, y, **kw)
    except Exception as e:   # noqa: BLE001  (the class is what we compare)
        return type(e).__name__, str(e)
    return "pass", ""


nan = math.nan
CASES = {
    "equal": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.0])),
    "close_f32": lambda t: (t.ones(3), t.ones(3) + 1e-7),
    "not_close_f32": lambda t: (t.ones(3), t.ones(3) + 1e-3),
    "dtype_mismatch": lambda t: (t.ones(2), t.ones(2, dtype=t.float64)),
    "dtype_free": lambda t: (t.ones(2), t.ones(2, dtype=t.float64), {"exact_dtype": False}),
    "shape_mismatch": lambda t: (t.ones(2, 3), t.ones(3, 2)),
    "int_vs_float_tensor": lambda t: (t.tensor([1, 2]), t.tensor([1.0, 2.0])),
    "int_vs_float_tensor_free": lambda t: (t.tensor([1, 2]), t.tensor([1.0, 2.0]), {"exact_dtype": False}),
    "uint8_vs_int64_free": lambda t: (t.tensor([1, 2], dtype=t.uint8), t.tensor([1, 2]), {"exact_dtype": False}),
    "int_vs_float_number": lambda t: (1, 1.0),
    "ints_differ": lambda t: (1, 2),
    "float_numbers_f32_tol": lambda t: (1.0, 1.0 + 1e-6),
    "float_numbers_far": lambda t: (1.0, 1.001),
    "nan_tensors": lambda t: (t.tensor([nan, 1.0]), t.tensor([nan, 1.0])),
    "nan_not_equal": lambda t: (t.tensor([nan]), t.tensor([nan]), {"equal_nan": False}),
    "nan_numbers": lambda t: (nan, nan),
    "inf_vs_big": lambda t: (t.tensor([math.inf]), t.tensor([3e38])),
    "atol_rtol_loose": lambda t: (t.tensor([1.0]), t.tensor([1.05]), {"atol": 0.1, "rtol": 0.0}),
    "atol_rtol_tight": lambda t: (t.tensor([1.0]), t.tensor([1.05]), {"atol": 0.01, "rtol": 0.0}),
    "only_atol": lambda t: (t.tensor([1.0]), t.tensor([1.0]), {"atol": 0.1}),
    "only_rtol_number": lambda t: (1.0, 1.0, {"rtol": 0.1}),
    "tensor_vs_list": lambda t: (t.tensor([1.0, 2.0]), [1.0, 2.0]),
    "tensor_vs_int_list": lambda t: (t.tensor([1.0, 2.0]), [1, 2]),
    "list_vs_tensor_mismatch": lambda t: ([1.0, 3.0], t.tensor([1.0, 2.0])),
    "tensor_vs_nested_list": lambda t: (t.ones(2, 2), [[1, 1], [1, 1]]),
    "tensor_vs_ragged_list": lambda t: (t.ones(2, 2), [[1, 1], [1]]),
    "tensor_vs_list_of_scalars": lambda t: (t.ones(2), [t.tensor(1.0), t.tensor(1.0)]),
    "tensor_vs_string": lambda t: (t.ones(2), "ab"),
    "tensor_vs_number": lambda t: (t.tensor([2.0]), 2),
    "zero_dim_vs_float": lambda t: (t.tensor(1.0), 1.0 + 1e-6),
    "zero_dim_vs_float_far": lambda t: (t.tensor(1.0), 1.5),
    "many_vs_number": lambda t: (t.ones(3), 1.0),
    "empty_vs_number": lambda t: (t.ones(0), 1.0),
    "bool_tensors": lambda t: (t.tensor([True, False]), t.tensor([True, False])),
    "bool_tensors_differ": lambda t: (t.tensor([True, False]), t.tensor([True, True])),
    "bool_vs_one_elem": lambda t: (True, t.tensor([1])),
    "bool_vs_number": lambda t: (True, 2),
    "bool_vs_many": lambda t: (True, t.ones(2)),
    "bools_differ": lambda t: (True, False),
    "complex_close": lambda t: (t.tensor([1 + 1j]), t.tensor([1 + 1j]) + 1e-7),
    "complex_differ": lambda t: (t.tensor([1 + 1j]), t.tensor([1 + 2j])),
    "complex_numbers": lambda t: (1 + 1j, 1 + 1.0000001j),
    "empty": lambda t: (t.ones(0), t.zeros(0)),
    "empty_shapes": lambda t: (t.ones(0), t.ones(0, 2)),
    "zero_dim_vs_one_elem": lambda t: (t.tensor(1.0), t.tensor([1.0])),
    "numpy_vs_tensor": lambda t: (np.array([1.0, 2.0]), t.tensor([1.0, 2.0], dtype=t.float64)),
    "numpy_vs_tensor_dtype": lambda t: (np.array([1.0, 2.0]), t.tensor([1.0, 2.0])),
    "numpy_vs_tensor_free": lambda t: (t.tensor([1.0, 2.0]), np.array([1.0, 2.0]), {"exact_dtype": False}),
    "numpy_scalar": lambda t: (np.float32(1.5), t.tensor(1.5)),
    "numpy_object_array": lambda t: (np.array(["a", "b"], dtype=object), ["a", "b"]),
    "nested_lists_of_tensors": lambda t: ([[t.ones(2)], [t.zeros(1)]], [[t.ones(2)], [t.zeros(1)]]),
    "nested_lists_differ": lambda t: ([[t.ones(2)], [t.zeros(1)]], [[t.ones(2)], [t.ones(1)]]),
    "list_vs_tuple": lambda t: ([t.ones(1), 2], (t.ones(1), 2)),
    "sequence_length": lambda t: ([t.ones(1)], [t.ones(1), t.ones(1)]),
    "list_of_tensor_vs_list_of_list": lambda t: ([t.ones(2)], [[1.0, 1.0]]),
    "dicts": lambda t: ({"a": t.ones(2), "b": [1, 2]}, {"a": t.ones(2), "b": [1, 2]}),
    "dict_keys": lambda t: ({"a": t.ones(2)}, {"b": t.ones(2)}),
    "dict_values": lambda t: ({"a": t.ones(2)}, {"a": t.zeros(2)}),
    "tensor_vs_dict": lambda t: (t.ones(2), {"a": 1}),
    "strings": lambda t: ("abc", "abc"),
    "strings_differ": lambda t: ("abc", "abd"),
    "none": lambda t: (None, None),
    "none_vs_tensor": lambda t: (None, t.ones(1)),
    "sets": lambda t: ({1, 2}, {2, 1}),
    "sets_differ": lambda t: ({1, 2}, {1, 3}),
    "types": lambda t: (int, float),
    "half_tolerance": lambda t: (t.tensor([1.0], dtype=t.float16), t.tensor([1.0005], dtype=t.float16)),
    "requires_grad": lambda t: (t.ones(2, requires_grad=True) * 1, t.ones(2)),
    "parameter_vs_tensor": lambda t: (t.nn.Parameter(t.ones(2)), t.ones(2)),
    "size_vs_tuple": lambda t: (t.ones(2, 3).shape, (2, 3)),
    "size_vs_tuple_differ": lambda t: (t.ones(2, 3).shape, (3, 2)),
    "msg_string": lambda t: (t.ones(1), t.zeros(1), {"msg": "extra words"}),
    "msg_callable": lambda t: (t.ones(1), t.zeros(1), {"msg": lambda m: "wrapped"}),
    "exact_device": lambda t: (t.ones(1), t.ones(1), {"exact_device": True}),
    "exact_stride": lambda t: (t.ones(2, 3).t(), t.ones(3, 2), {"exact_stride": True}),
    "stride_ignored": lambda t: (t.ones(2, 3).t(), t.ones(3, 2)),
    "module_lists": lambda t: (t.nn.ParameterList([t.nn.Parameter(t.ones(1))]), [t.ones(1)]),
    "module_lists_differ": lambda t: (t.nn.ParameterList([t.nn.Parameter(t.ones(1))]), [t.zeros(1)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_assert_equal_matches_torch(name):
    want = _outcome(torch_cu.TestCase, torch, CASES[name])
    got = _outcome(tg_cu.TestCase, tracegrad, CASES[name])
    assert got[0] == want[0], f"torch: {want}\ntracegrad: {got}"
    if name.startswith("msg_"):
        assert got[1].endswith("extra words") == want[1].endswith("extra words")
        assert (got[1] == "wrapped") == (want[1] == "wrapped")


@pytest.mark.parametrize("name", ["equal", "not_close_f32", "dtype_mismatch", "tensor_vs_dict", "many_vs_number",
                                  "dict_keys", "strings_differ"])
def test_assert_not_equal_matches_torch(name):
    want = _outcome(torch_cu.TestCase, torch, CASES[name], "assertNotEqual")
    got = _outcome(tg_cu.TestCase, tracegrad, CASES[name], "assertNotEqual")
    assert got[0] == want[0], f"torch: {want}\ntracegrad: {got}"


@pytest.mark.parametrize("precision,rel_tol", [(0.0, 0.0), (0.1, 0.0), (0.0, 0.1)])
def test_precision_and_rel_tol_loosen_like_torch(precision, rel_tol):
    outcomes = []
    for cls, t in ((torch_cu.TestCase, torch), (tg_cu.TestCase, tracegrad)):
        case = cls()
        case.precision, case.rel_tol = precision, rel_tol
        row = []
        for x, y in ((t.tensor([1.0]), t.tensor([1.05])), (1.0, 1.05), (t.tensor(10.0), 10.5)):
            try:
                case.assertEqual(x, y)
                row.append("pass")
            except AssertionError:
                row.append("fail")
        outcomes.append(row)
    assert outcomes[0] == outcomes[1]


# ---- generated test names --------------------------------------------------------------------------
def _parametrized_class(cu, t):
    class TestNames(cu.TestCase):
        @cu.parametrize("x", [1, 2.5, "s", t.float64, (1, 2)])
        def test_one(self, x):
            pass

        @cu.parametrize("a,b", [(1, 2), cu.subtest((3, 4), name="named")])
        @cu.parametrize("c", [True, None])
        def test_two(self, a, b, c):
            pass

        @cu.parametrize("n", [1, 2], name_fn=lambda n: f"custom{n}")
        def test_named(self, n):
            pass

        @cu.decorateIf(unittest.skip("two"), lambda params: params["x"] == 2)
        @cu.parametrize("x", [1, 2])
        def test_decorated(self, x):
            pass

        @cu.reparametrize(cu.parametrize("x", [1, 2]), lambda name, kw: [(name + "_r", kw)] if kw["x"] == 1 else None)
        def test_reparametrized(self, x):
            pass

        def test_plain(self):
            pass
    return TestNames


def _test_names(cls):
    return sorted(n for n in dir(cls) if n.startswith("test"))


def test_parametrized_names_match_torch():
    results = []
    for cu, t in ((torch_cu, torch), (tg_cu, tracegrad)):
        cls = cu.instantiate_parametrized_tests(_parametrized_class(cu, t))
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(cls).run(result)
        results.append((_test_names(cls), result.testsRun, sorted(c.id().rsplit(".", 1)[1] for c, _ in result.skipped)))
    assert results[1] == results[0] and "test_two_named_c_True" in results[1][0]
    assert results[1][2] == ["test_decorated_x_2"]


def _device_class(cu, cdt, t):
    class TestDev(cu.TestCase):
        @cdt.dtypes(t.float32, t.int64)
        def test_d(self, device, dtype):
            pass

        @cdt.dtypes((t.float32, t.float64), (t.int32, t.int64))
        def test_pairs(self, device, dtypes):
            pass

        @cu.parametrize("k", [1, 2])
        @cdt.dtypes(t.float64)
        @cdt.dtypesIfCPU(t.float32, t.float16)
        def test_pk(self, device, dtype, k):
            pass

        def test_device_only(self, device):
            pass

        @cdt.deviceCountAtLeast(1)
        def test_devices(self, devices):
            pass

        def test_no_device(self):
            pass
    return TestDev


def test_device_type_names_match_torch():
    names = []
    for cu, cdt, t in ((torch_cu, torch_cdt, torch), (tg_cu, tg_cdt, tracegrad)):
        scope = {"TestDev": _device_class(cu, cdt, t)}
        generic = scope["TestDev"]
        cdt.instantiate_device_type_tests(generic, scope, only_for="cpu")
        assert set(scope) == {"TestDevCPU"} and _test_names(generic) == []
        names.append(_test_names(scope["TestDevCPU"]))
    assert names[1] == names[0] and "test_pk_k_1_cpu_float16" in names[1]


def test_dtype_groups_match_torch():
    def as_names(group):
        return [str(d).split(".")[1] for d in group]
    for fn, args in [("floating_types", ()), ("floating_types_and", ("half", "bfloat16")), ("integral_types", ()),
                     ("complex_types", ()), ("all_types_and_complex_and", ("bool", "half")),
                     ("floating_and_complex_types_and", ("bfloat16",)), ("all_types", ()), ("float8_types", ()),
                     ("get_all_dtypes", ()), ("get_all_fp_dtypes", ()), ("get_all_int_dtypes", ())]:
        want = as_names(getattr(torch_dtype, fn)(*(getattr(torch, a) for a in args)))
        got = as_names(getattr(tg_dtype, fn)(*(getattr(tracegrad, a) for a in args)))
        assert got == want, fn
    with pytest.raises(AssertionError):
        tg_dtype.floating_types_and("float16")


# ---- TestCase state handling ------------------------------------------------------------------------
def test_setup_seeds_every_test_and_restores_grad_mode():
    draws = []

    class TestSeeded(tg_cu.TestCase):
        def test_a(self):
            draws.append(tracegrad.rand(3).tolist())
            tracegrad.set_grad_enabled(False)

        def test_b(self):
            draws.append(tracegrad.rand(3).tolist())
            draws.append(tracegrad.is_grad_enabled())
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(TestSeeded).run(result)
    assert result.wasSuccessful(), result.errors + result.failures
    tracegrad.manual_seed(tg_cu.SEED)
    assert draws == [tracegrad.rand(3).tolist()] * 2 + [True]


def test_rng_dtype_and_warning_helpers():
    tracegrad.manual_seed(3)
    with tg_cu.freeze_rng_state():
        inside = tracegrad.rand(2).tolist()
    assert tracegrad.rand(2).tolist() == inside
    with tg_cu.set_default_dtype(tracegrad.float64):
        assert tracegrad.ones(1).dtype == tracegrad.float64
    assert tracegrad.get_default_dtype() == tracegrad.float32
    case = tg_cu.TestCase()
    import warnings
    with case.assertWarnsOnceRegex(UserWarning, "ab+c"):
        warnings.warn("abbbc here", UserWarning)
    with pytest.raises(AssertionError):
        with case.assertWarnsOnceRegex(UserWarning, "xyz"):
            warnings.warn("abc", UserWarning)
    with pytest.raises(AssertionError, match="no warning caught"):
        with case.assertWarnsOnceRegex(UserWarning, ""):
            pass


class _WrongBackward(tracegrad.autograd.Function):
    """Doubles its input; its backward says triple."""

    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_gradcheck_wrappers_pass_and_fail():
    x = tracegrad.randn(3, dtype=tracegrad.float64, requires_grad=True)
    assert tg_cu.gradcheck(lambda a: (a * a).sin(), (x,))
    assert tg_cu.gradgradcheck(lambda a: (a * a).sin(), (x,))

    with pytest.raises(GradcheckError):
        tg_cu.gradcheck(_WrongBackward.apply, (x,))


def test_tolerance_override_and_skips_in_device_tests():
    seen = []

    class TestTol(tg_cu.TestCase):
        @tg_cdt.toleranceOverride({tracegrad.float32: tg_cdt.tol(atol=0.5, rtol=0.0)})
        @tg_cdt.precisionOverride({tracegrad.float64: 0.25})
        @tg_cdt.dtypes(tracegrad.float32, tracegrad.float64, tracegrad.int64)
        def test_t(self, device, dtype):
            seen.append((dtype, self.precision, self.rel_tol))

        @tg_cdt.onlyCUDA
        def test_cuda(self, device):
            pass

        @tg_cdt.skipMeta
        @tg_cdt.onlyNativeDeviceTypes
        @tg_cdt.largeTensorTest("1000000GB")
        def test_large(self, device):
            pass

        @tg_cdt.deviceCountAtLeast(1)
        def test_one_device(self, devices):
            seen.append(devices)

        @tg_cdt.deviceCountAtLeast(2)
        def test_two_devices(self, devices):
            pass

        @tg_cdt.expectedFailureCPU
        def test_fails_on_cpu(self, device):
            self.assertEqual(device, "cuda")
    scope = {"TestTol": TestTol}
    tg_cdt.instantiate_device_type_tests(TestTol, scope)
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(scope["TestTolCPU"]).run(result)
    assert result.wasSuccessful() and result.testsRun == 8, result.failures + result.errors
    assert sorted(r for _, r in result.skipped) == ["Insufficient cpu memory", "Only runs on cuda",
                                                    "fewer than 2 devices detected"]
    assert ["cpu"] in seen
    seen.remove(["cpu"])
    assert sorted(seen, key=str) == sorted([(tracegrad.float32, 0.5, 0.0), (tracegrad.float64, 0.25, 0),
                                            (tracegrad.int64, 0, 0)], key=str)


class _ModuleJacobian(tg_nn.NNTestCase):
    """torch's test_nn wiring of NNTestCase's hooks (forward, input grad, parameters and grads)."""

    def _forward(self, module, input):
        return module(input)

    def _backward(self, module, input, output, grad_output, create_graph=False):
        output.backward(grad_output, retain_graph=True, create_graph=create_graph)
        return input.grad

    def _get_parameters(self, module):
        params = list(module.parameters())
        return params, [p.grad for p in params]

    def _zero_grad_parameters(self, module):
        for p in module.parameters():
            if p.grad is not None:
                p.grad.zero_()


def test_nn_test_case_check_jacobian():
    case = _ModuleJacobian()
    with tg_cu.set_default_dtype(tracegrad.float64):
        linear = tracegrad.nn.Linear(2, 2)
        x = tracegrad.randn(1, 2, requires_grad=True)
        case.check_jacobian(linear, x)

        class Doubler(tracegrad.nn.Module):
            def forward(self, a):
                return _WrongBackward.apply(a)
        with pytest.raises(AssertionError):
            case.check_jacobian(Doubler(), tracegrad.randn(2, requires_grad=True))
        tg_nn._test_module_empty_input(case, tracegrad.nn.Linear(2, 2), tracegrad.randn(0, 2))



def test_create_basic_net_matches_torch():
    torch_nn = pytest.importorskip("torch.testing._internal.common_nn")

    def layout(nets):
        return [(sorted((k, tuple(v.shape)) for k, v in m.state_dict().items()),
                 [type(p).__name__ for p in m.parameters()], [len(list(m.buffers()))]) for m in nets]

    ours, theirs = tg_nn._create_basic_net(), torch_nn._create_basic_net()
    assert layout(ours) == layout(theirs)
    assert ours[2][0] is ours[2][1] and ours[1] is ours[2][0]

# ---- a torch-style test module, run with torch aliased to tracegrad -----------------------------------
TORCH_STYLE_MODULE = '''
import inspect
import sys
import unittest

import tracegrad
sys.modules["torch"] = tracegrad

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing._internal.common_device_type import (
    dtypes, instantiate_device_type_tests, onlyCPU, onlyCUDA, precisionOverride)
from torch.testing._internal.common_dtype import floating_types_and
from torch.testing._internal.common_utils import (
    TEST_WITH_TORCHDYNAMO, TestCase, instantiate_parametrized_tests, parametrize, run_tests, skipIfTorchDynamo,
    slowTest, subtest)

print("HARNESS", inspect.getfile(TestCase), flush=True)
print("SAME_MODULES", nn is tracegrad.nn and F is tracegrad.nn.functional and nn.Module is tracegrad.nn.Module,
      flush=True)
# the module's first import by its aliased name leaves the package attribute (the function) alone
from torch.autograd.gradcheck import get_numerical_jacobian  # noqa: E402,F401
print("GRADCHECK_ATTR", inspect.isfunction(torch.autograd.gradcheck),
      inspect.ismodule(sys.modules["torch.autograd.gradcheck"]), flush=True)


class TestArith(TestCase):
    @parametrize("n", [1, 2, subtest(3, name="three"),
                       subtest(4, name="xfail4", decorators=[unittest.expectedFailure])])
    def test_double(self, n):
        self.assertEqual(torch.tensor([n]) * 2, [2 * n] if n != 4 else [9])

    @skipIfTorchDynamo("not under dynamo")
    def test_grad(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        self.assertEqual(x.grad, torch.tensor([2.0, 4.0]))

    @slowTest
    def test_slow(self):
        self.fail("slow tests do not run by default")

    def test_deliberately_wrong(self):
        self.assertEqual(torch.ones(2), torch.tensor([1.0, 1.5]))


instantiate_parametrized_tests(TestArith)


class TestOps(TestCase):
    @dtypes(*floating_types_and(torch.int64))
    def test_add(self, device, dtype):
        a = torch.ones(2, device=device, dtype=dtype)
        self.assertEqual(a + a, torch.full((2,), 2, dtype=dtype))
        self.assertEqual((a + a).dtype, dtype)

    @precisionOverride({torch.float32: 0.1})
    @dtypes(torch.float32)
    def test_loose(self, device, dtype):
        self.assertEqual(torch.tensor(1.0, dtype=dtype, device=device), 1.05)

    @parametrize("shape", [(2,), (2, 3)])
    def test_shape(self, device, shape):
        self.assertEqual(torch.zeros(shape, device=device).shape, shape)

    @onlyCUDA
    def test_cuda_only(self, device):
        self.fail("no CUDA variant here")

    def test_linear(self, device):
        m = nn.Linear(3, 2).to(device)
        x = torch.ones(4, 3, device=device)
        self.assertEqual(m(x), F.linear(x, m.weight, m.bias))

    @onlyCPU
    def test_raises(self, device):
        with self.assertRaisesRegex(RuntimeError, "size"):
            torch.ones(2, device=device) + torch.ones(3, device=device)


instantiate_device_type_tests(TestOps, globals(), only_for="cpu")

if __name__ == "__main__":
    run_tests()
'''


def test_torch_style_module_runs_with_torch_aliased(tmp_path):
    path = tmp_path / "test_torch_style.py"
    path.write_text(textwrap.dedent(TORCH_STYLE_MODULE))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for var in ("PYTORCH_TEST_WITH_SLOW", "PYTORCH_TEST_WITH_DYNAMO"):
        env.pop(var, None)
    p = subprocess.run([sys.executable, str(path), "-v"], capture_output=True, text=True, env=env, timeout=120,
                       cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out                      # the deliberately wrong test fails the run
    harness = re.search(r"^HARNESS (.*)$", out, re.M).group(1)
    assert pathlib.Path(harness).resolve() == ROOT / "tracegrad/testing/_internal/common_utils.py"
    assert "SAME_MODULES True" in out                  # torch.nn is tracegrad.nn: no second copy (_torch_alias.py)
    # torch.autograd.gradcheck stays the function after ``from torch.autograd.gradcheck import ...``
    # (as in torch: test_aliased_submodule_import_keeps_the_package_attribute); every later
    # harness gradcheck called the module before (PyTorch's test_autograd.py imports it in a test)
    assert "GRADCHECK_ATTR True True" in out
    status = dict(re.findall(r"^(test_\w+) \(.*?\) \.\.\. (ok|FAIL|ERROR|skipped|expected failure)", out, re.M))
    assert status == {
        "test_double_n_1": "ok", "test_double_n_2": "ok", "test_double_three": "ok",
        "test_double_xfail4": "expected failure", "test_grad": "ok", "test_slow": "skipped",
        "test_deliberately_wrong": "FAIL",
        "test_add_cpu_float32": "ok", "test_add_cpu_float64": "ok", "test_add_cpu_int64": "ok",
        "test_loose_cpu_float32": "ok", "test_shape_shape0_cpu": "ok", "test_shape_shape1_cpu": "ok",
        "test_cuda_only_cpu": "skipped", "test_raises_cpu": "ok", "test_linear_cpu": "ok",
    }, out
    assert "FAILED (failures=1, skipped=2, expected failures=1)" in out, out
    assert "Tensor-likes are not close!" in out and "Mismatched elements: 1 / 2 (50.0%)" in out


def test_aliased_submodule_import_keeps_the_package_attribute():
    # what the aliased run of test_torch_style_module_runs_with_torch_aliased checks
    # (GRADCHECK_ATTR), as torch does it: importing the module torch.autograd.gradcheck by name
    # leaves torch.autograd.gradcheck the function
    import inspect
    from torch.autograd.gradcheck import get_numerical_jacobian  # noqa: F401
    assert inspect.isfunction(torch.autograd.gradcheck)
    assert inspect.ismodule(sys.modules["torch.autograd.gradcheck"])


def test_common_nn_reexports_what_torch_test_files_import_from_it():
    # PyTorch's test/nn/test_dropout.py does ``from ...common_nn import NNTestCase, freeze_rng_state``
    torch_nn = pytest.importorskip("torch.testing._internal.common_nn")
    for name in ("NNTestCase", "freeze_rng_state"):
        assert hasattr(torch_nn, name)
        assert hasattr(tg_nn, name), name
    tracegrad.manual_seed(0)
    with tg_nn.freeze_rng_state():
        a = tracegrad.rand(3)
    assert tracegrad.equal(a, tracegrad.rand(3))


def test_swap_parametrizer_names_and_flag_match_torch():
    # common_utils.swap: one test per flag value, named ..._swap_<value>, run with torch.__future__'s
    # swap flag set (PyTorch's test/nn/test_load_state_dict.py uses it on every test)
    got = {}
    for lib, cu in ((torch, torch_cu), (tracegrad, tg_cu)):
        class T(cu.TestCase):
            @cu.swap([True, False])
            def test_a(self):
                got.setdefault(lib.__name__, []).append(lib.__future__.get_swap_module_params_on_conversion())

        cu.instantiate_parametrized_tests(T)
        names = sorted(n for n in dir(T) if n.startswith("test_"))
        unittest.TextTestRunner(stream=open(os.devnull, "w")).run(unittest.TestLoader().loadTestsFromTestCase(T))
        got[lib.__name__ + "_names"] = names
        assert lib.__future__.get_swap_module_params_on_conversion() is False   # restored
    assert got["torch_names"] == got["tracegrad_names"] == ["test_a_swap_False", "test_a_swap_True"]
    assert got["torch"] == got["tracegrad"] == [False, True]


@pytest.mark.parametrize("name,kwargs", [
    ("CosineEmbeddingLoss", dict(reduction="none")), ("CosineEmbeddingLoss", dict(margin=0.5)),
    ("MarginRankingLoss", dict(reduction="none")), ("MarginRankingLoss", dict(margin=0.5, reduction="sum")),
    ("TripletMarginLoss", dict()), ("TripletMarginLoss", dict(swap=True, reduction="none"))])
def test_loss_reference_fns_agree_with_torchs(name, kwargs):
    """common_nn.loss_reference_fns (the references test/test_nn.py checks losses against) give
    torch's references' values."""
    from torch.testing._internal import common_nn as torch_nn
    rs = np.random.RandomState(0)
    if name == "TripletMarginLoss":
        arrays = [rs.randn(5, 4) for _ in range(3)]
    elif name == "CosineEmbeddingLoss":
        arrays = [rs.randn(6, 4), rs.randn(6, 4), np.sign(rs.randn(6))]
    else:
        arrays = [rs.randn(6) * 3, rs.randn(6) * 3, np.sign(rs.randn(6))]
    want = torch_nn.loss_reference_fns[name](*[torch.tensor(a) for a in arrays], **kwargs)
    got = tg_nn.loss_reference_fns[name](*[tracegrad.tensor(a) for a in arrays], **kwargs)
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-12, atol=1e-12)


def test_compare_with_numpy_keeps_dtype_of_negative_stride_results():
    """np.flip/np.rot90 return negative-stride views; torch's harness compares them through a
    copy with their own dtype, so a complex128 flip passes and a dtype change still fails."""
    def run(T, cu, fn, np_fn, dtype):
        class C(cu.TestCase):
            def test(self):
                self.compare_with_numpy(fn(T), np_fn, T.arange(6).reshape(2, 3).to(dtype(T)))
        r = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(C("test"))
        return r.wasSuccessful()

    for fn, np_fn, dtype in [(lambda T: (lambda t: T.flip(t, (1,))), lambda a: np.flip(a, 1), lambda T: T.complex128),
                             (lambda T: (lambda t: T.rot90(t)), np.rot90, lambda T: T.int16),
                             (lambda T: (lambda t: T.flip(t, (1,)).to(T.complex64)), lambda a: np.flip(a, 1),
                              lambda T: T.complex128)]:
        assert run(tracegrad, tg_cu, fn, np_fn, dtype) == run(torch, torch_cu, fn, np_fn, dtype)
    assert not run(tracegrad, tg_cu, *[(lambda T: (lambda t: T.flip(t, (1,)).to(T.complex64))),
                                       lambda a: np.flip(a, 1), lambda T: T.complex128])
    assert run(tracegrad, tg_cu, lambda T: (lambda t: T.flip(t, (1,))), lambda a: np.flip(a, 1), lambda T: T.complex128)
