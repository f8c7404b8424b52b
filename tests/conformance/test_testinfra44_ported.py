"""NOTE: the PyTorch test functions this file held (test/test_foreach.py's TestForeach under their
names), copied from pytorch/pytorch (the same statements and literals, lightly edited), were removed
(a public repository's code stays out of this project's commits); what remains is the tests written
here. The text below describes the round as it was.

testinfra44: PyTorch's test/test_foreach.py (``TestForeach``, CPU), ported in our own code and run on
tracegrad through its own ``tracegrad.testing._internal`` harness. The stored original is the early,
per-op form of the file (one test per unary op -- test_neg ... test_abs --, addcmul / addcdiv with a
scalar and a scalar list, maximum / minimum with inf and NaN, the int / float / complex / bool scalar and
scalar-list tests over add / sub / mul / div, the list-operand tests for every dtype pair, sizes, empty
lists and the list errors); every test is here under its original name. tests/conformance/
test_foreach_ported.py and test_foreach_ported_round13.py hold earlier, pytest-style ports of later
forms of the file (OpInfo-driven), which this one does not repeat.

Adapted: N = 3 tensors of 3 x 3 instead of 20 of 20 x 20 (the length-mismatch errors say "got 4 and 3");
the list-operand tests (test_add_list ...) run over pairs of a smaller dtype set (float32, float64,
float16, bfloat16, int64, uint8, bool, complex64: 36 pairs, not all 78). Every expected error is torch
2.13's, which differs from the file's (it predates 2.0): half / bfloat16 ops are implemented on CPU, so
only the dtype rules below raise. Unary: integer and bool inputs take a float result, so only the
in-place forms refuse them ("result type Float can't be cast ..."); frac refuses integers, bool and
complex ("frac_cpu" not implemented); ceil / floor / round / trunc refuse bool (``<op>_vml_cpu``) and
ceil / floor / trunc complex ("<op> is not supported for complex inputs"), erf / erfc / round complex
(``<op>_vml_cpu``); abs refuses bool, abs_ complex ("In-place abs is not supported for complex
tensors"); neg refuses bool. Binary: sub with a bool tensor or bool number refuses ("Subtraction, the
`-` operator"); an in-place op whose result dtype differs refuses the cast. maximum / minimum of complex
tensors: torch 2.13's per-tensor op says "maximum not implemented for complex tensors." and the foreach
form NotImplementedError('"maximum_cpu" not implemented for ...'). The empty-list error is 2.13's
"Tensor list must have at least one tensor." (the file's "There were no tensor arguments").
Left out: test_add_list_slow_path's CUDA skip is kept (no accelerator), its non-contiguous half runs.

Left alone (strict xfail on tracegrad): a float16 tensor with a complex number gives complex32
(ComplexHalf) in torch; tracegrad promotes to complex64 (test_complex_scalar* for float16).

Fixes in tracegrad (``TestFixesTI44`` probes each): the foreach maximum / minimum / clamp_min /
clamp_max with a complex Tensor operand raise torch's NotImplementedError naming its CPU kernel
('"maximum_cpu" not implemented for 'ComplexFloat''; tracegrad raised the per-tensor RuntimeError), after
the in-place cast check (real self, complex other: RuntimeError "can't be cast"); torch.maximum /
minimum's complex refusal reads "maximum not implemented for complex tensors" (it said "maximum()");
``bool_tensor.sub_(True)`` (and the foreach forms) say "with two bool tensors" as torch (a bool number
counts as a bool tensor there; tracegrad said "with a bool tensor"); the bool refusals of floor / ceil /
round / trunc (and their in-place forms) name torch's vectorized kernels ("floor_vml_cpu"; tracegrad said
"floor_cpu"); frac of a complex tensor is '"frac_cpu" not implemented for ...' (tracegrad used floor's
"not supported for complex inputs" words); erfc / lgamma / digamma / i0 and the special i0e / i1 / i1e /
ndtri / log_ndtr / entr / erfcx name torch's kernel for a complex input (tracegrad: "complex inputs are
not supported").

``TI44_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import importlib
import os


from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI44_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
TestCase = _cu.TestCase


class TestFixesTI44(TestCase):
    def test_foreach_order_ops_complex(self):
        a, b, r = torch.tensor([1 + 1j]), torch.tensor([2 + 0j], dtype=torch.complex128), torch.tensor([1.0])
        for name, kernel in (("maximum", "maximum_cpu"), ("minimum", "minimum_cpu"),
                             ("clamp_min", "maximum_cpu"), ("clamp_max", "minimum_cpu")):
            for fn in (getattr(torch, f"_foreach_{name}"), getattr(torch, f"_foreach_{name}_")):
                with self.assertRaisesRegex(NotImplementedError, f"\"{kernel}\" not implemented for 'ComplexDouble'"):
                    fn([a], [b])
                with self.assertRaisesRegex(NotImplementedError, "clamp is not supported for complex types"):
                    fn([a], 2)
            with self.assertRaisesRegex(NotImplementedError, f"\"{kernel}\" not implemented for 'ComplexFloat'"):
                getattr(torch, f"_foreach_{name}")([r], [a])
            with self.assertRaisesRegex(RuntimeError, "result type ComplexFloat can't be cast to the desired output type Float"):
                getattr(torch, f"_foreach_{name}_")([r], [a])
            self.assertEqual(r, torch.tensor([1.0]))
        # real operands still work, in place too (amsgrad's _foreach_maximum_)
        x = [torch.tensor([1.0, 5.0])]
        torch._foreach_maximum_(x, [torch.tensor([3.0, 2.0])])
        self.assertEqual(x[0], torch.tensor([3.0, 5.0]))

    def test_unary_kernel_names(self):
        # the per-op refusals test_ceil ... test_frac and test_erfc compare against: torch names its
        # CPU kernel (the vectorized one for the rounding ops) for bool and complex inputs
        b, c, c2 = torch.tensor([True]), torch.tensor([1 + 1j]), torch.tensor([1 + 1j], dtype=torch.complex128)
        for name in ("floor", "ceil", "round", "trunc"):
            for f in (getattr(torch, name), lambda x, name=name: getattr(x.clone(), name + "_")()):
                with self.assertRaisesRegex(NotImplementedError, f"^\"{name}_vml_cpu\" not implemented for 'Bool'"):
                    f(b)
        for f in (torch.frac, torch.Tensor.frac):
            with self.assertRaisesRegex(NotImplementedError, "^\"frac_cpu\" not implemented for 'ComplexDouble'"):
                f(c2)
        for name, kernel in (("erfc", "erfc_vml_cpu"), ("lgamma", "lgamma_vml_cpu"), ("digamma", "digamma"),
                             ("i0", "i0_vml_cpu")):
            with self.assertRaisesRegex(NotImplementedError, f"^\"{kernel}\" not implemented for 'ComplexFloat'"):
                getattr(torch, name)(c)
        with self.assertRaisesRegex(NotImplementedError, "^\"i1e_cpu\" not implemented for 'ComplexDouble'"):
            torch.special.i1e(c2)

    def test_maximum_complex_words(self):
        a = torch.tensor([1 + 1j])
        with self.assertRaisesRegex(RuntimeError, r"^maximum not implemented for complex tensors"):
            torch.maximum(a, a)
        with self.assertRaisesRegex(RuntimeError, r"^minimum not implemented for complex tensors"):
            torch.minimum(a, a)

    def test_bool_sub_bool_number(self):
        t = torch.tensor([True, False])
        for other in (True, [True, True], torch.tensor([True, True])):
            with self.assertRaisesRegex(RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"):
                if isinstance(other, list):
                    torch._foreach_sub_([t], [True])
                else:
                    t.sub_(other)
        with self.assertRaisesRegex(RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"):
            torch._foreach_sub_([t], True)
        with self.assertRaisesRegex(RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported"):
            t.sub_(1)
        with self.assertRaisesRegex(RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported"):
            torch.tensor([1.0]).sub_(True)
        self.assertEqual(t, torch.tensor([True, False]))


test_oracle_torch_passes = oracle_test("TI44_ORACLE", __file__)
