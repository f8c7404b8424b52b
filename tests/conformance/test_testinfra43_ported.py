"""NOTE: the PyTorch test functions this file held (TestNumPyInterop, TestLazyModules, TestSWAUtils
under their names), copied from pytorch/pytorch (the same statements and literals, lightly edited),
were removed (a public repository's code stays out of this project's commits); what remains is the
tests written here. The text below describes the round as it was.

testinfra43: PyTorch's test/test_numpy_interop.py (``TestNumPyInterop``, CPU), test/nn/test_lazy_modules.py
(``TestLazyModules``) and test/optim/test_swa_utils.py (``TestSWAUtils``), ported in our own code and run on
tracegrad through its own ``tracegrad.testing._internal`` harness. Every test function is here under its
original name with its original checks (the one-line lazy conv / norm tests are generated from one table,
each under the file's name). tests/conformance/test_misc_files_ported.py, test_nn_files_ported.py,
test_lazy_modules_ported_round20.py and test_optim_misc_ported.py hold earlier, pytest-style ports of
parts of the same files.

Adapted: sizes made smaller (the lazy convolutions run 3 -> 4 channels on batches of 2 and spatial sizes
of 3..7 instead of 16 -> 32 channels on 192 samples of up to 50, output_size following; the lazy norms run
4 x 3 x (5 | 5x4 | 3x4x2) inputs instead of 16 x 3 x (6 | 6x7 | 6x7x8); test_numpy_index_multi uses dims 2
and 8 instead of 2..32; the update_bn tests use 20 samples instead of 100, batches of 5 as the file).
``make_tensor`` takes dtype/device as keywords. NumPy 2: test_numpy_array_interface builds its unsigned
reference with ``np.array([1, -2, 3, -4]).astype(dtype)`` (NumPy 2 refuses ``np.array(-2, dtype=uint8)``),
test_parse_numpy_int_overflow passes ``np.uint64(2 ** 64 - 1)`` (NumPy 2 refuses ``np.uint64(-1)``) and
expects torch 2.13's ValueError ("Overflow when unpacking long long"; the file's RuntimeError is older).
torch 2.13's load_state_dict into a lazy module (the file is newer: it expects the class and in_features /
in_channels / num_features to change at load): in 2.13 the loaded tensors materialize the placeholders,
the module keeps its Lazy class until its first forward, and in_channels / num_features stay 0 even
after it (in_features is inferred at that forward); the *_state tests check that (no uninitialized
parameters, the shapes, the Lazy class, and for Linear / conv the class change at the first forward),
not the sizes. test_from_numpy_no_leak_on_invalid_dtype and test_lazy_module_jit_* run as they are
(tracegrad.jit.script refuses an uninitialized module with torch's words).
Left out: test_materialize_device and the CUDA branches of the SWA tests (no accelerator; skipped as in
the file).

Differs from torch (not a failure here): a NumPy complex64 scalar operand keeps its imaginary part in
tracegrad; torch drops it (pytorch#43579, a TODO in test_numpy_scalar_cmp: ``t == np.complex64(1+3j)`` is
False there, ``t + np.complex64(1+3j)`` adds 1), so that check asserts torch's value only under the
oracle. Left alone (an expected failure on tracegrad): ``Tensor.numpy()`` of bfloat16 gives an ml_dtypes
array where torch raises TypeError ("Got unsupported ScalarType BFloat16"); tracegrad's own code and tests
read bfloat16 arrays that way (test_misc_files_ported.py and test_bad_input_round37.py keep the same
strict xfail).

Fixes in tracegrad (``TestFixesTI43`` probes each): a sparse COO tensor has ``conj()`` /
``conj_physical()`` and ``torch.conj`` / ``torch.conj_physical`` take one (torch conjugates the values:
sparse layouts have no conj bit, ``ConjPhysicalBackward0``); test_to_numpy_force_argument needs it. The
NotImplementedError for a function without a sparse kernel names the function ("Could not run
'aten::logit' ..."): it named an argument checker's locals ('aten::checked', 'aten::eps') or, once the
__torch_function__ protocol was in use, the trampoline ('aten::torch_function_dispatch'). ``save`` of a
lazy module or its state_dict pickles the placeholders by class, as torch (it read their shape and
raised): a weights-only load refuses UninitializedParameter unless allowlisted, weights_only=False gives
fresh placeholders. AveragedModel: keeping the buffers in sync refuses a model with other buffers
(torch's ``zip(..., strict=True)`` ValueError; tracegrad stopped at the shorter list); the default rule is
torch's CPU one, get_swa_avg_fn per tensor (it was the foreach rule, which averaged an int64
num_batches_tracked under use_buffers=True only because tracegrad's foreach form took integers);
get_swa_multi_avg_fn refuses integer tensors as torch's foreach kernels (addcdiv_'s
"Integer division with addcdiv is no longer supported", add_'s float-alpha error).

``TI43_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import importlib
import io
import os
import pickle


from _ported_helpers import oracle_test

_ORACLE = bool(os.environ.get("TI43_ORACLE"))
torch = importlib.import_module("torch" if _ORACLE else "tracegrad")
nn = torch.nn
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_param = importlib.import_module(torch.__name__ + ".nn.parameter")
_swa = importlib.import_module(torch.__name__ + ".optim.swa_utils")
TestCase = _cu.TestCase
UninitializedBuffer, UninitializedParameter = _param.UninitializedBuffer, _param.UninitializedParameter
AveragedModel, update_bn = _swa.AveragedModel, _swa.update_bn
get_ema_multi_avg_fn, get_swa_multi_avg_fn = _swa.get_ema_multi_avg_fn, _swa.get_swa_multi_avg_fn


# ==== what the ports found (each probe holds under torch 2.13 too) ===================================
class TestFixesTI43(TestCase):
    def test_sparse_conj(self):
        # test_to_numpy_force_argument conjugates a sparse tensor: torch's sparse layout has no conj
        # bit, conj() gives the conjugated values (ConjPhysicalBackward0 through them)
        v = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        s = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), v, (3,))
        for c in (s.conj(), torch.conj(s), s.conj_physical(), torch.conj_physical(s)):
            self.assertTrue(c.is_sparse)
            self.assertFalse(c.is_conj())
            self.assertIs(c.resolve_conj(), c)
            self.assertEqual(type(c.grad_fn).__name__, "ConjPhysicalBackward0")
            self.assertEqual(c.to_dense(), torch.tensor([1 - 2j, 0, 3 + 1j]))
        s.conj().to_dense().real.sum().backward()
        self.assertEqual(v.grad, torch.ones(2, dtype=torch.complex64))
        real = torch.tensor([1.0, 0.0]).to_sparse()
        self.assertIs(real.conj(), real)
        for force in (False, True):
            with self.assertRaisesRegex(TypeError, r"Use Tensor\.to_dense\(\) first"):
                s.detach().conj().numpy(force=force)

    def test_sparse_refusal_names_the_function(self):
        # a function without a sparse kernel names itself (an argument-checking wrapper's local names
        # leaked into the message: 'aten::checked', 'aten::neginf', 'aten::eps')
        s = torch.tensor([1.0, 0.0, 2.0]).to_sparse()
        for name in ("angle", "lgamma", "logit", "sinc"):
            with self.assertRaisesRegex(NotImplementedError, f"Could not run 'aten::{name}' with arguments from the "
                                                             f"'SparseCPU' backend"):
                getattr(torch, name)(s)

    def test_save_lazy_placeholders(self):
        # torch.save of a lazy module's state_dict (or the module) pickles the placeholders by class
        # (tracegrad read their shape and raised); a weights-only load refuses the class unless
        # allowlisted, weights_only=False gives fresh placeholders that materialize at the forward
        buf = io.BytesIO()
        torch.save(nn.LazyLinear(3).state_dict(), buf)
        buf.seek(0)
        with self.assertRaises(pickle.UnpicklingError):
            torch.load(buf)
        buf.seek(0)
        sd = torch.load(buf, weights_only=False)
        self.assertEqual(list(sd), ["weight", "bias"])
        for v in sd.values():
            self.assertIsInstance(v, UninitializedParameter)
        with torch.serialization.safe_globals([UninitializedParameter]):
            buf.seek(0)
            self.assertIsInstance(torch.load(buf)["weight"], UninitializedParameter)
        m = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d())
        buf = io.BytesIO()
        torch.save(m, buf)
        buf.seek(0)
        m2 = torch.load(buf, weights_only=False)
        self.assertIsInstance(m2[0].weight, UninitializedParameter)
        self.assertIsInstance(m2[1].running_mean, UninitializedBuffer)
        self.assertEqual(m2(torch.ones(4, 2)).shape, (4, 3))
        self.assertIsInstance(m2[0], nn.Linear)
        self.assertEqual(m2[0].weight.shape, (3, 2))

    def test_averaged_model_buffer_mismatch(self):
        # AveragedModel keeps its buffers in sync with the model it is given: a model with other
        # buffers is refused (zip(..., strict=True) in torch); tracegrad stopped at the shorter list
        averaged = AveragedModel(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)))
        with self.assertRaisesRegex(ValueError, "zip\\(\\) argument 2 is shorter than argument 1"):
            averaged.update_parameters(nn.Sequential(nn.Linear(2, 3), nn.Identity()))

    def test_averaged_model_integer_buffers(self):
        # use_buffers=True averages num_batches_tracked too: the default rule is get_swa_avg_fn per
        # tensor (torch's CPU path), truncated into the int64 buffer; the foreach swa rule refuses ints
        bn = nn.BatchNorm1d(2)
        averaged = AveragedModel(bn, use_buffers=True)
        for _ in range(1):
            bn(torch.randn(4, 2))
        averaged.update_parameters(bn)                          # copies: 1
        for _ in range(3):
            bn(torch.randn(4, 2))
        averaged.update_parameters(bn)                          # 1 + (4 - 1) / 2 = 2.5 -> 2
        self.assertEqual(averaged.module.num_batches_tracked, torch.tensor(2))
        self.assertEqual(averaged.module.num_batches_tracked.dtype, torch.int64)
        multi = AveragedModel(bn, multi_avg_fn=get_swa_multi_avg_fn(), use_buffers=True)
        multi.update_parameters(bn)
        with self.assertRaisesRegex(RuntimeError, "Integer division with addcdiv is no longer supported"):
            multi.update_parameters(bn)
        a, b = [torch.tensor([1, 3])], [torch.tensor([2, 6])]
        with self.assertRaisesRegex(RuntimeError, "argument alpha must not be a floating point number"):
            get_swa_multi_avg_fn()(a, b, 1)

    def test_lazy_conv_transpose_output_size_words(self):
        # test_lazy_conv_transpose*_kwargs pass output_size at materialization; one out of range is
        # refused with torch's words, the spatial sizes as a torch.Size (tracegrad printed a list)
        m = nn.LazyConvTranspose1d(3, 2)
        with self.assertRaisesRegex(ValueError, r"requested an output size of \(20,\), but valid sizes range from "
                                                r"\[5\] to \[5\] \(for an input of torch\.Size\(\[4\]\)\)"):
            m(torch.ones(1, 2, 4), output_size=(20,))

    def test_compiled_averaged_model(self):
        # the default rule inside a compiled step equals eager (the first-update select included)
        def run(compiled):
            torch.manual_seed(0)
            model = nn.Linear(3, 2)
            averaged = AveragedModel(model)
            # (torch's own compiler takes seconds here: the oracle run checks its eager-backend form)
            step = averaged.update_parameters if not compiled else \
                torch.compile(averaged.update_parameters, **({"backend": "eager"} if _ORACLE else {}))
            for k in range(3):
                with torch.no_grad():
                    model.weight.add_(float(k + 1))
                step(model)
            return averaged.module.weight.detach().clone(), int(averaged.n_averaged)

        (w_eager, n_eager), (w_comp, n_comp) = run(False), run(True)
        self.assertEqual(n_eager, 3)
        self.assertEqual(n_comp, 3)
        self.assertEqual(w_comp, w_eager)


test_oracle_torch_passes = oracle_test("TI43_ORACLE", __file__)
