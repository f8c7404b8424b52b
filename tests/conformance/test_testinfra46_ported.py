"""testinfra46: the rest of PyTorch's test/test_autocast.py for the CPU, then test/nn/test_dropout.py,
test/nn/test_init.py and test/nn/test_embedding.py parts no earlier port covered, ported in our own code and
run on tracegrad through its own ``tracegrad.testing._internal`` harness. Each test keeps its original's
name (the class names carry ``TI46``).

test/test_autocast.py (tests/conformance/test_torch_files_ported.py and test_testinfra45_ported.py hold the
op-list tests, nesting, the decorator, the fast dtypes and the device-type errors): ``TestAutocastCPU``'s
test_autocast_disabled_with_fp32_dtype, test_generic_autocast and test_cpu_autocast_deprecated_warning;
``TestAutocastGPU``'s test_cast_cache_is_global, test_cache_disabled and test_autocast_prioritize, adapted
to the CPU (autocast bfloat16 instead of CUDA float16). The cache tests count casts of the weight with a
``TorchDispatchMode`` that tracegrad does not have; here the count is read from the graph instead: a cached
cast is one ``ToCopyBackward0`` node, so the backward's product (run with ``create_graph=True``) reaches
the forward's cast node exactly when the weight was cast once. test_cache_disabled marks the weight as a
cached tensor (``torch._C._add_cached_tensor``, not in tracegrad); here ``autocast(cache_enabled=False)``
turns the cache off, the other way torch's ``cached_cast`` refuses to cache.
Left out: test_autocast_rnn (torch's mkldnn bfloat16 LSTM).

test/nn/test_dropout.py (tests/conformance/test_nn_files_ported.py and test_lrscheduler_dropout_ported_round12.py
hold its pytest-style ports): ``TestDropoutNNDeviceType.test_Dropout`` as written (the mean and
eval checks of ``_test_dropout`` in float32 and bfloat16, ``_test_dropout_discontiguous`` in contiguous and
channels_last layouts, ``_test_dropout_stride_mean_preserve`` over every permutation and shift, with p in
1e-10 and 0.5 instead of four values), test_Dropout1d, test_Dropout2d and test_Dropout3d as written (the
channels_last runs, the rank warnings and errors, the no-batch and whole-channel checks; 1000 channels of
2 x 2 x 3 instead of random sizes; a fixed seed per test), and ``TestDropoutNN.test_native_dropout_corner_case`` on the
CPU (the file skips it without CUDA; its loop over devices has the CPU in it).

test/nn/test_init.py (earlier ports check scales and errors, not distributions): ``TestNNInit``'s
Kolmogorov-Smirnov tests through scipy, as written: test_uniform, test_normal, test_xavier_uniform,
test_xavier_normal, test_kaiming_uniform, test_kaiming_normal, test_sparse_default_std, plus
test_dirac_properties, test_dirac_identity and test_deprecation; ``TestNNInitDeviceType``'s
test_trunc_normal_all_dtypes and test_trunc_normal_narrow_interval (float32 / float64).
Adapted: sizes drawn from 10-20 (30-50 for the uniform / normal ones) instead of 20-50 a side.

test/nn/test_embedding.py (tests/conformance/test_nn_files_ported_layers.py runs a few combinations of each):
``TestEmbeddingNNDeviceType``'s test_embedding_bag_1D_padding_idx and test_embedding_bag_2D_padding_idx over
the whole product of modes, sparse, include_last_offset, all-padding draws and every padding index, float32
and float64. Adapted: 4 bags of at most 4 ids over 8 words (1-D); 2 x 4 ids over 6 words (2-D); ids and
weights drawn from NumPy; two padding indices per combination instead of every id drawn (1-D: the largest
id and None; 2-D: the repeated row's id and the last id of the first row), for time. Then
test_EmbeddingBag_per_sample_weights_and_new_offsets (with the file's ``_embedding_bag_reference_impl``),
on four of its sixteen (index, offsets, weight) dtype triples, one per weight dtype.

Fixes in tracegrad (``TestFixesTI46``): autocast caches its cast of a weight as torch does (a float32 leaf
that requires grad and is no view, cast to the autocast dtype, reused until the outermost autocast exits;
made with grad on under ``no_grad``, never in ``inference_mode``; NOTE [autocast cast cache] in
tracegrad/_autocast.py): tracegrad cast the weight at every use, so two uses in one forward made two
``ToCopyBackward0`` nodes where torch has one, and a backward entering autocast again cast the weight
again. ``autocast(cache_enabled=False)`` turns the cache off inside its block and
``is_autocast_cache_enabled`` says so (tracegrad ignored the flag); ``autocast`` contexts count their
nesting (``autocast_increment_nesting`` returned 1 inside one context: torch 2), and checkpoint's
recomputation and a replayed graph segment enter the forward's autocast as one more level, so casts they
cache end with them. ``torch.library.register_autocast`` / ``CustomOpDef.register_autocast`` exist
(torch's custom operators under autocast: inputs cast, the body run with autocast off; tracegrad had
neither).

``TI46_ORACLE=1`` runs the same classes on torch 2.13 itself (``test_oracle_torch_passes`` does that in a
subprocess), so every expectation is torch's.
"""
import itertools
import math
import random
import warnings
from functools import reduce
from operator import mul

import numpy as np
import pytest

from _ported_helpers import oracle_test, ported_library

_ORACLE, torch, _cu, _cdt, _cdtype = ported_library("TI46_ORACLE")
TestCase = _cu.TestCase
dtypes = _cdt.dtypes
parametrize = _cu.parametrize
nn = torch.nn
F = torch.nn.functional
init = torch.nn.init


def _global_state():
    """What a test here could leave changed for the tests after it in the worker: autocast per
    device, its cache flag and nesting depth, the cache-clearing function, the default dtype."""
    depth = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return (tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda")),
            torch.is_autocast_cache_enabled(), depth, torch.clear_autocast_cache, torch.get_default_dtype())


@pytest.fixture(autouse=True)
def _restores_global_state():
    # earlier ports leaked autocast state into later tests of the same worker: each test here
    # must leave it as it found it (put back, then reported)
    before = _global_state()
    yield
    after = _global_state()
    if after != before:
        (cpu, cuda), cache, _, clear, default = before
        for d, (on, dt) in (("cpu", cpu), ("cuda", cuda)):
            torch.set_autocast_enabled(d, on)
            torch.set_autocast_dtype(d, dt)
        torch.set_autocast_cache_enabled(cache)
        torch.clear_autocast_cache = clear
        torch.set_default_dtype(default)
        pytest.fail(f"the test changed global state: {before} -> {after}")


def _np_tensor(*shape, seed=0, dtype=None):
    t = torch.tensor(np.random.RandomState(seed).standard_normal(shape).astype(np.float32))
    return t if dtype is None else t.to(dtype)


# ---- test/test_autocast.py -----------------------------------------------------------------------
def _lower_precision_ops():
    """Our own short form of torch's CPU ``torch_16`` list: (op, args) on float32 inputs."""
    return [("mm", (_np_tensor(3, 4), _np_tensor(4, 2, seed=1))),
            ("bmm", (_np_tensor(2, 3, 4), _np_tensor(2, 4, 2, seed=1))),
            ("matmul", (_np_tensor(3, 4), _np_tensor(4, 2, seed=1))),
            ("addmm", (_np_tensor(3, 2), _np_tensor(3, 4, seed=1), _np_tensor(4, 2, seed=2))),
            ("conv1d", (_np_tensor(2, 3, 5), _np_tensor(4, 3, 2, seed=1))),
            ("conv2d", (_np_tensor(1, 2, 4, 4), _np_tensor(3, 2, 2, 2, seed=1)))]


class TestAutocastCPUTI46(TestCase):
    def tearDown(self):
        # no test may leave autocast on for the tests after it in this worker
        self.assertFalse(torch.is_autocast_enabled("cpu"))
        super().tearDown()

    def test_autocast_disabled_with_fp32_dtype(self):
        # a float32 dtype is refused with a warning only when the context is enabled
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with torch.autocast(device_type="cpu", dtype=torch.float32, enabled=False):
                _ = torch.ones(10)
        self.assertEqual([str(w.message) for w in seen], [])

    def test_generic_autocast(self):
        for op, args in _lower_precision_ops():
            with torch.amp.autocast(device_type="cpu"):
                generic_autocast_output = getattr(torch, op)(*args)
            with torch.autocast("cpu"):
                cpu_autocast_output = getattr(torch, op)(*args)
            self.assertEqual(generic_autocast_output.dtype, torch.bfloat16)
            self.assertEqual(generic_autocast_output, cpu_autocast_output)

    def test_cpu_autocast_deprecated_warning(self):
        lib = torch.__name__
        with self.assertWarnsRegex(
                FutureWarning,
                rf"`{lib}.cpu.amp.autocast\(args...\)` is deprecated. Please use `{lib}.amp.autocast\('cpu', args...\)` instead."):
            with torch.cpu.amp.autocast():
                _ = torch.ones(10)


class CustomLinear(torch.autograd.Function):
    """The file's CustomLinear, with its backward's autocast on the CPU; the backward keeps its
    product with the weight (``seen``) so a test can read the cast it used."""
    seen = []

    @staticmethod
    def forward(ctx, x, w_t):
        ctx.save_for_backward(x, w_t)
        return torch.nn.functional.linear(x, w_t)

    @staticmethod
    def backward(ctx, grad_output):
        x, w_t = ctx.saved_tensors
        with torch.autocast(device_type="cpu"):
            dL_dX = torch.matmul(grad_output, w_t)
            dL_dW = torch.matmul(x.transpose(0, 1), grad_output).transpose(0, 1)
        CustomLinear.seen.append(dL_dX)
        return dL_dX, dL_dW


def _cast_node(out):
    """The ``ToCopyBackward0`` node of the weight's cast behind a ``mm(x, weight)``-shaped result."""
    node = out.grad_fn.next_functions[1][0]
    assert type(node).__name__ == "ToCopyBackward0", type(node).__name__
    return node


class TestAutocastCacheTI46(TestCase):
    """TestAutocastGPU's cache tests on the CPU (module docstring)."""

    def _run(self, cache_enabled):
        # torch's test keeps the cache past the forward's autocast by replacing clear_autocast_cache
        data = _np_tensor(2, 3).bfloat16()
        weight = torch.nn.Parameter(_np_tensor(4, 3, seed=1))
        real_clear = torch.clear_autocast_cache
        torch.clear_autocast_cache = lambda: None
        CustomLinear.seen.clear()
        try:
            with torch.autocast(device_type="cpu", cache_enabled=cache_enabled):
                probe = torch.mm(_np_tensor(2, 4, seed=2), weight)   # the forward's cast of the weight
                output = CustomLinear.apply(data, weight)
                s = output.float().sum() + probe.float().sum() * 0
            # the backward's own graph shows which cast its product used
            s.backward(create_graph=True)
        finally:
            torch.clear_autocast_cache = real_clear
            torch.clear_autocast_cache()
        (dL_dX,) = CustomLinear.seen
        self.assertEqual(dL_dX.dtype, torch.bfloat16)
        self.assertEqual(weight.grad.dtype, torch.float32)
        return _cast_node(probe), _cast_node(dL_dX)

    def test_cast_cache_is_global(self):
        forward_cast, backward_cast = self._run(cache_enabled=True)
        self.assertTrue(forward_cast is backward_cast)      # the weight was cast once

    def test_cache_disabled(self):
        forward_cast, backward_cast = self._run(cache_enabled=False)
        self.assertFalse(forward_cast is backward_cast)     # cast twice

    def test_autocast_prioritize(self):
        dtype = torch.bfloat16
        with torch.autocast(device_type="cpu", enabled=True, dtype=dtype):
            t = _np_tensor(3, 4, 5).to(dtype).requires_grad_()
            index = torch.tensor(np.random.RandomState(1).randint(0, 3, (3, 4, 5)))
            val = _np_tensor(1, seed=2).to(dtype)
            res = torch.index_put(t, [index], val)
            loss = res.mean()
            loss.backward()
        self.assertEqual(res.dtype, dtype)
        self.assertEqual(t.grad.dtype, dtype)
        # index_put(t, [index], val): rows 0..2 of t written, the rest kept
        written = torch.zeros(t.shape[0], dtype=torch.bool)
        written[index.flatten().unique()] = True
        self.assertTrue(torch.equal(res[written], val.expand_as(res[written])))
        self.assertEqual(res[~written], t.detach()[~written])


class TestFixesTI46(TestCase):
    """The autocast cast cache and nesting, probed against torch 2.13's graph and flags."""

    def test_cache_shares_one_cast_per_context(self):
        x, w = _np_tensor(2, 3), torch.nn.Parameter(_np_tensor(3, 4, seed=1))
        with torch.autocast("cpu"):
            a, b = torch.mm(x, w), torch.mm(x, w)
            self.assertTrue(_cast_node(a) is _cast_node(b))
            with torch.autocast("cpu"):     # a nested context shares the outer one's cache
                c = torch.mm(x, w)
            self.assertTrue(_cast_node(a) is _cast_node(c))
            v = torch.mm(x, w[:, :])        # a view is not cached
            self.assertFalse(_cast_node(a) is _cast_node(v))
        with torch.autocast("cpu"):         # the cache ended with the outermost context
            d = torch.mm(x, w)
        self.assertFalse(_cast_node(a) is _cast_node(d))
        (a.float().sum() + b.float().sum()).backward()
        self.assertEqual(w.grad, torch.mm(x.t().bfloat16(), torch.ones(2, 4, dtype=torch.bfloat16)).float() * 2)

    def test_cache_under_no_grad_and_inference_mode(self):
        x, w = _np_tensor(2, 3), torch.nn.Parameter(_np_tensor(3, 4, seed=1))
        with torch.autocast("cpu"):
            with torch.no_grad():
                first = torch.mm(x, w)
            self.assertIsNone(first.grad_fn)
            later = torch.mm(x, w)          # the cast cached under no_grad still reaches w
            later.float().sum().backward()
            self.assertIsNotNone(w.grad)
        w.grad = None
        with torch.autocast("cpu"):
            with torch.inference_mode():
                torch.mm(x, w)
            later = torch.mm(x, w)
            later.float().sum().backward()
            self.assertIsNotNone(w.grad)

    def test_cache_flag_and_nesting(self):
        self.assertTrue(torch.is_autocast_cache_enabled())
        with torch.autocast("cpu", cache_enabled=False):
            self.assertFalse(torch.is_autocast_cache_enabled())
            with torch.autocast("cpu", enabled=False):      # cache_enabled=None keeps the flag
                self.assertFalse(torch.is_autocast_cache_enabled())
                self.assertEqual(torch.autocast_increment_nesting(), 3)
                self.assertEqual(torch.autocast_decrement_nesting(), 2)
                with torch.autocast("cpu", cache_enabled=True):
                    self.assertTrue(torch.is_autocast_cache_enabled())
            self.assertFalse(torch.is_autocast_cache_enabled())
        self.assertTrue(torch.is_autocast_cache_enabled())
        self.assertEqual(torch.autocast_increment_nesting(), 1)
        self.assertEqual(torch.autocast_decrement_nesting(), 0)

    def test_checkpoint_recompute_does_not_keep_stale_casts(self):
        # the recomputation of a checkpoint taken under autocast runs in backward, outside the
        # forward's context: the casts it makes must not outlive it (next step's weights change)
        lin = torch.nn.Linear(3, 3)
        opt = torch.optim.SGD(lin.parameters(), lr=0.5)
        x = _np_tensor(4, 3)
        outs = []
        for _ in range(2):
            opt.zero_grad()
            with torch.autocast("cpu"):
                h = torch.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
            h.float().pow(2).sum().backward()
            opt.step()
            with torch.autocast("cpu"):
                outs.append(lin(x))
        self.assertFalse(torch.equal(outs[0], outs[1]))
        with torch.autocast("cpu"):
            fresh = F.linear(x.bfloat16(), lin.weight.bfloat16(), lin.bias.bfloat16())
            self.assertEqual(lin(x), fresh)

    def test_custom_op_register_autocast(self):
        # torch.library.register_autocast (torch's documented example, on the CPU): inside
        # autocast the op's floating inputs (float64 excepted) are cast, its body runs with
        # autocast off; the first registration for a device stays
        name = f"ti46::my_mm_{next(_OP_IDS)}"
        seen = []

        @torch.library.custom_op(name, mutates_args=())
        def my_mm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            seen.append((torch.is_autocast_enabled("cpu"), x.dtype, y.dtype, torch.mm(x, y).dtype))
            return torch.mm(x, y)

        def setup_context(ctx, inputs, output):
            ctx.x, ctx.y = inputs

        my_mm.register_autograd(lambda ctx, g: (g @ ctx.y.t(), ctx.x.t() @ g), setup_context=setup_context)
        x = _np_tensor(2, 3).requires_grad_()
        y = _np_tensor(3, 2, seed=1)
        with torch.autocast("cpu"):
            self.assertEqual(my_mm(x, y).dtype, torch.bfloat16)     # the body's mm is autocast
        self.assertEqual(seen.pop(), (True, torch.float32, torch.float32, torch.bfloat16))
        torch.library.register_autocast(name, "cpu", torch.float16)
        torch.library.register_autocast(name, "cpu", torch.bfloat16)   # ignored: the first stays
        with torch.autocast("cpu"):
            out = my_mm(x, y)
            self.assertEqual(my_mm(x.double(), y.double()).dtype, torch.float64)
            self.assertTrue(torch.is_autocast_enabled("cpu"))
        out.float().sum().backward()    # (outside autocast: the backward's products stay float16)
        self.assertEqual(seen[0], (False, torch.float16, torch.float16, torch.float16))
        self.assertEqual(out.dtype, torch.float16)
        self.assertEqual(x.grad.dtype, torch.float32)
        self.assertEqual(x.grad, (torch.ones(2, 2, dtype=torch.float16) @ y.half().t()).float(), atol=1e-3, rtol=0)
        self.assertEqual(my_mm(x, y).dtype, torch.float32)          # outside autocast: as written
        with self.assertRaisesRegex(ValueError, "Expected `device_type` of type `str`"):
            my_mm.register_autocast(torch.device("cpu"), torch.float16)
        with self.assertRaisesRegex(RuntimeError, "device type at start of device string: xyz"):
            torch.library.register_autocast(name, "xyz", torch.float16)


_OP_IDS = itertools.count()


# ---- test/nn/test_dropout.py ---------------------------------------------------------------------
class TestDropoutNNDeviceTypeTI46(TestCase):
    def _test_dropout(self, cls, device, input, memory_format=torch.contiguous_format):
        p = 0.2
        input = input.to(device).fill_(1 - p)

        module = cls(p)
        input_var = input.clone(memory_format=memory_format).requires_grad_()
        output = module(input_var)
        self.assertTrue(output.is_contiguous(memory_format=memory_format))
        self.assertLess(abs(output.data.mean() - (1 - p)), 0.05)
        output.backward(input)
        self.assertTrue(input_var.grad.is_contiguous(memory_format=memory_format))
        self.assertLess(abs(input_var.grad.data.mean() - (1 - p)), 0.05)

        module = cls(p, True)
        input_var = input.clone(memory_format=memory_format).requires_grad_()
        output = module(input_var + 0)
        self.assertTrue(output.is_contiguous(memory_format=memory_format))
        self.assertLess(abs(output.data.mean() - (1 - p)), 0.05)
        output.backward(input)
        self.assertTrue(input_var.grad.is_contiguous(memory_format=memory_format))
        self.assertLess(abs(input_var.grad.data.mean() - (1 - p)), 0.05)

        for inplace in [True, False]:       # eval mode changes nothing
            module = cls(p, inplace).eval()
            self.assertEqual(input, module(input))
        repr(module), str(module)

    def _test_dropout_discontiguous(self, cls, device, memory_format=torch.contiguous_format):
        # p == 0 keeps the input's strides; p ~ 0 makes a fresh tensor in the layout: same values
        for p in [0, 1e-10]:
            inp = torch.ones(2, 3, 3, 3, device=device)
            inp_discontiguous = torch.empty(2, 3, 3, 6, device=device, memory_format=memory_format)[..., ::2]
            inp_discontiguous.copy_(inp)
            out = cls(p=p)(inp_discontiguous)
            if p != 0:
                self.assertTrue(out.is_contiguous(memory_format=memory_format))
            self.assertEqual(inp_discontiguous, out)

    def _test_dropout_stride_mean_preserve(self, cls, device):
        def invert_perm(p):
            d = {x: i for i, x in enumerate(p)}
            return (d[0], d[1], d[2], d[3])

        inp = torch.ones(2, 3, 4, 5, device=device)
        for perm in itertools.permutations((0, 1, 2, 3), r=4):
            for shift in [(0, 0), (1, 0), (0, 1), (1, 1)]:
                for p in [1e-10, 0.5]:
                    permuted_inp = inp.permute(perm).contiguous().permute(invert_perm(perm))
                    permuted_inp = permuted_inp[shift[0]:, shift[1]:, :, :]
                    out = cls(p=p)(permuted_inp)
                    self.assertTrue(out.permute(perm).is_contiguous())
                    self.assertEqual(inp.mean(), out.mean(), rtol=0.5, atol=0.5)
                    if p == 1e-10:
                        self.assertEqual(permuted_inp, out)
                    else:
                        self.assertNotEqual(permuted_inp, out)

    def test_Dropout(self, device):
        torch.manual_seed(0)
        input = torch.empty(1000)
        self._test_dropout(nn.Dropout, device, input)
        self._test_dropout_discontiguous(nn.Dropout, device)
        self._test_dropout_discontiguous(nn.Dropout, device, memory_format=torch.channels_last)
        self._test_dropout_stride_mean_preserve(nn.Dropout, device)
        self._test_dropout(nn.Dropout, device, input.bfloat16())

    def _test_dropoutNd_no_batch(self, dropout, input):
        input_clone = input.clone()
        with _cu.freeze_rng_state():
            res_no_batch = dropout(input)
        with _cu.freeze_rng_state():
            res_batched = dropout(input_clone.unsqueeze(0)).squeeze(0)
        self.assertEqual(res_no_batch, res_batched)

    def _test_dropoutNd_channel_zero(self, dropout, input):
        # each channel of an all-positive input is zeroed whole or kept whole
        B, C = input.shape[:2]
        channel_numel = torch.tensor(input.shape[2:]).prod()
        result = dropout(input)
        for b, c in itertools.product(range(B), range(C)):
            self.assertTrue(result[b, c].count_nonzero() in (0, channel_numel))

    def test_Dropout1d(self, device):
        torch.manual_seed(1)
        with _cu.set_default_dtype(torch.double):
            rng = random.Random(1)
            N, C, L = rng.randint(10, 15), rng.randint(10, 15), rng.randint(10, 15)
            self._test_dropout(nn.Dropout1d, device, torch.empty(N, C, L))
            with self.assertRaisesRegex(RuntimeError, "Expected 2D or 3D input, but received a 4D input"):
                nn.Dropout1d(p=0.5)(torch.rand(1, 2, 2, 2, device=device))
            with self.assertRaisesRegex(RuntimeError, "Expected 2D or 3D input, but received a 1D input"):
                nn.Dropout1d(p=0.5)(torch.rand(2, device=device))
            input = torch.rand(50, 2, device=device)
            self._test_dropoutNd_no_batch(nn.Dropout1d(p=0.5), input)
            self._test_dropoutNd_no_batch(nn.Dropout1d(p=0.5, inplace=True), input)
            input = torch.ones(10, 4, 2, device=device)
            self._test_dropoutNd_channel_zero(nn.Dropout1d(p=0.5), input)
            self._test_dropoutNd_channel_zero(nn.Dropout1d(p=0.5, inplace=True), input)

    def test_Dropout2d(self, device):
        # (1000 channels of b x w x h, each random in 1..5, in the file; of 2 x 2 x 3 here)
        torch.manual_seed(2)
        input = torch.empty(1000, 2, 2, 3)
        self._test_dropout(nn.Dropout2d, device, input)
        self._test_dropout(nn.Dropout2d, device, input, memory_format=torch.channels_last)
        self._test_dropout_discontiguous(nn.Dropout2d, device)
        self._test_dropout_discontiguous(nn.Dropout2d, device, memory_format=torch.channels_last)
        with self.assertWarnsRegex(UserWarning, "Received a 5-D input to dropout2d"):
            nn.Dropout2d(p=0.5)(torch.rand(1, 2, 2, 2, 2, device=device))
        with self.assertWarnsRegex(UserWarning, "Received a 2-D input to dropout2d"):
            nn.Dropout2d(p=0.5)(torch.rand(1, 2, device=device))
        with self.assertWarnsRegex(UserWarning, "assuming that channel-wise 1D dropout behavior is desired"):
            nn.Dropout2d(p=0.5)(torch.rand(1, 2, 2, device=device))
        input = torch.ones(10, 4, 2, 2, device=device)
        self._test_dropoutNd_channel_zero(nn.Dropout2d(p=0.5), input)
        self._test_dropoutNd_channel_zero(nn.Dropout2d(p=0.5, inplace=True), input)

    def test_Dropout3d(self, device):
        torch.manual_seed(3)
        input = torch.empty(1000, 2, 1, 2, 3)
        self._test_dropout(nn.Dropout3d, device, input)
        self._test_dropout_discontiguous(nn.Dropout3d, device)
        self._test_dropout_discontiguous(nn.Dropout3d, device, memory_format=torch.channels_last)
        with self.assertWarnsRegex(UserWarning, "Received a 6-D input to dropout3d"):
            nn.Dropout3d(p=0.5)(torch.rand(1, 2, 2, 2, 2, 2, device=device))
        with self.assertWarnsRegex(UserWarning, "Received a 3-D input to dropout3d"):
            nn.Dropout3d(p=0.5)(torch.rand(1, 2, 2, device=device))
        input = torch.rand(50, 2, 2, 2, device=device)
        self._test_dropoutNd_no_batch(nn.Dropout3d(p=0.5), input)
        self._test_dropoutNd_no_batch(nn.Dropout3d(p=0.5, inplace=True), input)
        input = torch.ones(10, 4, 2, 2, 2, device=device)
        self._test_dropoutNd_channel_zero(nn.Dropout3d(p=0.5), input)
        self._test_dropoutNd_channel_zero(nn.Dropout3d(p=0.5, inplace=True), input)

    def test_native_dropout_corner_case(self, device):
        for train in [True, False]:
            for p in [0.0, 1.0]:
                x = _np_tensor(5).to(device).requires_grad_()
                x_ref = x.detach().requires_grad_()
                o = torch.native_dropout(x, p, train)[0]
                o_ref = torch.dropout(x_ref, p, train)
                o.sum().backward()
                o_ref.sum().backward()
                self.assertTrue(o.equal(o_ref))
                self.assertTrue(x.grad.equal(x_ref.grad))


_cdt.instantiate_device_type_tests(TestDropoutNNDeviceTypeTI46, globals(), only_for="cpu")


# ---- test/nn/test_init.py ------------------------------------------------------------------------
stats = pytest.importorskip("scipy.stats")


class TestNNInitTI46(TestCase):
    def setUp(self):
        super().setUp()
        random.seed(123)
        torch.manual_seed(123)

    def _is_normal(self, tensor, mean, std):
        p_value = stats.kstest(tensor.reshape(-1).tolist(), "norm", args=(mean, std))[1]
        return p_value > 0.0001

    def _is_uniform(self, tensor, a, b):
        p_value = stats.kstest(tensor.reshape(-1).tolist(), "uniform", args=(a, (b - a)))[1]
        return p_value > 0.0001

    def _create_random_nd_tensor(self, dims, size_min, size_max):
        return torch.zeros([random.randint(size_min, size_max) for _ in range(dims)])

    def _random_float(self, a, b):
        return (b - a) * random.random() + a

    @staticmethod
    def _fans(t):
        fan_in, fan_out = t.size(1), t.size(0)
        if t.dim() > 2:
            fan_in *= t[0, 0].numel()
            fan_out *= t[0, 0].numel()
        return fan_in, fan_out

    def test_uniform(self):
        for dims in [1, 2, 4]:
            input_tensor = self._create_random_nd_tensor(dims, size_min=30 if dims < 4 else 6, size_max=50 if dims < 4 else 8)
            a = self._random_float(-3, 3)
            b = a + self._random_float(1, 5)
            init.uniform_(input_tensor, a=a, b=b)
            self.assertTrue(self._is_uniform(input_tensor, a, b))

    def test_normal(self):
        for dims in [1, 2, 4]:
            input_tensor = self._create_random_nd_tensor(dims, size_min=30 if dims < 4 else 6, size_max=50 if dims < 4 else 8)
            mean = self._random_float(-3, 3)
            std = self._random_float(1, 5)
            init.normal_(input_tensor, mean=mean, std=std)
            self.assertTrue(self._is_normal(input_tensor, mean, std))

    def _xavier(self, fn, check):
        for use_gain in [True, False]:
            for dims in [2, 4]:
                input_tensor = self._create_random_nd_tensor(dims, size_min=10, size_max=20)
                gain = self._random_float(0.1, 2) if use_gain else 1
                if use_gain:
                    fn(input_tensor, gain=gain)
                else:
                    fn(input_tensor)
                fan_in, fan_out = self._fans(input_tensor)
                self.assertTrue(check(input_tensor, gain * math.sqrt(2.0 / (fan_in + fan_out))))

    def test_xavier_uniform(self):
        self._xavier(init.xavier_uniform_, lambda t, std: self._is_uniform(t, -std * math.sqrt(3), std * math.sqrt(3)))

    def test_xavier_normal(self):
        self._xavier(init.xavier_normal_, lambda t, std: self._is_normal(t, 0, std))

    def _kaiming(self, fn, check):
        for use_a in [True, False]:
            for dims in [2, 4]:
                for mode in ["fan_in", "fan_out"]:
                    input_tensor = self._create_random_nd_tensor(dims, size_min=10, size_max=20)
                    if use_a:
                        a = self._random_float(0.1, 2)
                        fn(input_tensor, a=a, mode=mode)
                    else:
                        a = 0
                        fn(input_tensor, mode=mode)
                    fan_in, fan_out = self._fans(input_tensor)
                    n = fan_in if mode == "fan_in" else fan_out
                    self.assertTrue(check(input_tensor, math.sqrt(2.0 / ((1 + a ** 2) * n))))

    def test_kaiming_uniform(self):
        self._kaiming(init.kaiming_uniform_, lambda t, std: self._is_uniform(t, -std * math.sqrt(3.0), std * math.sqrt(3.0)))

    def test_kaiming_normal(self):
        self._kaiming(init.kaiming_normal_, lambda t, std: self._is_normal(t, 0, std))

    def test_sparse_default_std(self):
        for use_random_std in [True, False]:
            input_tensor = self._create_random_nd_tensor(2, size_min=30, size_max=35)
            rows = input_tensor.size(0)
            sparsity = self._random_float(0.1, 0.2)
            std = 0.01
            if use_random_std:
                std = self._random_float(0.01, 0.2)
                init.sparse_(input_tensor, sparsity=sparsity, std=std)
            else:
                init.sparse_(input_tensor, sparsity=sparsity)
            for col_idx in range(input_tensor.size(1)):
                column = input_tensor[:, col_idx]
                self.assertGreaterEqual(column[column == 0].nelement(), math.ceil(sparsity * rows))
            self.assertTrue(self._is_normal(input_tensor[input_tensor != 0], 0, std))

    def test_dirac_properties(self):
        for dims in [3, 4, 5]:
            for groups in [1, 2, 3]:
                a, c, d, e = (random.randint(1, 5) for _ in range(4))
                b = random.randint(1, 5 * groups)
                input_tensor = torch.randn((a * groups, b, c, d, e)[:dims])
                init.dirac_(input_tensor, groups)
                min_d = min(input_tensor.size(0) // groups, input_tensor.size(1))
                self.assertEqual(torch.nonzero(input_tensor).size(0), min_d * groups)
                self.assertEqual(input_tensor.sum(), min_d * groups)

    def test_dirac_identity(self):
        for groups in [1, 3]:
            batch, in_c, out_c, size, kernel_size = 2, 3, 9, 5, 3
            eff_out_c = out_c // groups
            for conv, nd in ((F.conv1d, 1), (F.conv2d, 2), (F.conv3d, 3)):
                input_var = _np_tensor(batch, in_c, *([size] * nd), seed=nd)
                filter_var = torch.zeros(eff_out_c, in_c, *([kernel_size] * nd))
                filter_var = torch.cat([filter_var] * groups)
                init.dirac_(filter_var, groups)
                output_tensor = conv(input_var, filter_var).data
                inner = (slice(None), slice(None)) + (slice(1, -1),) * nd
                for g in range(groups):
                    self.assertEqual(input_var[inner], output_tensor[:, eff_out_c * g:eff_out_c * g + in_c])
                    self.assertEqual(torch.nonzero(output_tensor[:, eff_out_c * g + in_c:eff_out_c * (g + 1)]).numel(), 0)

    def test_deprecation(self):
        x = torch.randn(3, 3)
        with self.assertWarnsRegex(FutureWarning, "deprecated"):
            init.normal(x)


class TestNNInitDeviceTypeTI46(TestCase):
    def _is_trunc_normal(self, tensor, mean, std, a, b):
        z_samples = ((tensor.reshape(-1) - mean) / std).tolist()
        p_value = stats.kstest(z_samples, "truncnorm", args=((a - mean) / std, (b - mean) / std))[1]
        return p_value > 0.0001

    @parametrize("dims", [1, 2, 4])
    @dtypes(torch.float32, torch.float64)
    def test_trunc_normal_all_dtypes(self, device, dims, dtype):
        rng = random.Random(7 + dims)
        torch.manual_seed(7 + dims)
        size = [rng.randint(30, 50) for _ in range(dims)] if dims < 4 else [rng.randint(6, 9) for _ in range(4)]
        input_tensor = torch.zeros(size, dtype=dtype, device=device)
        mean = rng.uniform(-3, 3)
        std = rng.uniform(0.01, 1)
        a = rng.uniform(mean - 2 * std, mean)
        b = rng.uniform(mean, mean + 2 * std)
        init.trunc_normal_(input_tensor, mean=mean, std=std, a=a, b=b)
        lo = torch.tensor(a, dtype=dtype).item()
        hi = torch.tensor(b, dtype=dtype).item()
        self.assertTrue(input_tensor.min().item() >= lo)
        self.assertTrue(input_tensor.max().item() <= hi)
        self.assertTrue(self._is_trunc_normal(input_tensor.float().cpu(), mean, std, a, b))

    @dtypes(torch.float32, torch.float64)
    def test_trunc_normal_narrow_interval(self, device, dtype):
        torch.manual_seed(3)
        mean, std, a, b = 0.0, 1.0, 2.0, 3.0
        t = torch.empty(10000, dtype=dtype, device=device)
        init.trunc_normal_(t, mean=mean, std=std, a=a, b=b)
        self.assertTrue(t.min().item() >= a)
        self.assertTrue(t.max().item() <= b)
        self.assertTrue(self._is_trunc_normal(t.float().cpu(), mean, std, a, b))


_cdt.instantiate_device_type_tests(TestNNInitDeviceTypeTI46, globals(), only_for="cpu")


# ---- test/nn/test_embedding.py -------------------------------------------------------------------
class TestEmbeddingNNDeviceTypeTI46(TestCase):
    @dtypes(torch.float32, torch.float64)
    def test_embedding_bag_1D_padding_idx(self, device, dtype):
        num_features, max_indices_per_bag, num_bags, num_words = 3, 4, 4, 8
        rng = np.random.RandomState(5)

        def gen_1D_indices_offsets(include_last_offset, allpad):
            # one bag full and one empty, as the file does
            empty_bag, full_bag = 1, 2
            indices, offsets, cur = [], [], 0
            for bag in range(num_bags):
                offsets.append(cur)
                size = (max_indices_per_bag if bag == full_bag else 0 if bag == empty_bag
                        else int(rng.randint(1, max_indices_per_bag)))
                indices += [1 if allpad else int(rng.randint(0, num_words)) for _ in range(size)]
                cur += size
            if include_last_offset:
                offsets.append(len(indices))
            return indices, offsets

        def gen_2D_indices_from_1D(indices_1D, offsets, include_last_offset, padding_idx):
            if include_last_offset:
                offsets = offsets[:-1]
            rows = []
            for bag in range(num_bags):
                start = offsets[bag]
                end = len(indices_1D) if bag + 1 == num_bags else offsets[bag + 1]
                row = indices_1D[start:end]
                rows.append(row + [padding_idx] * (max_indices_per_bag - len(row)))
            return torch.tensor(rows, device=device)

        seed = itertools.count()
        for mode, sparse, include_last_offset, allpad in itertools.product(
                ["max", "mean", "sum"], [False, True], [False, True], [False, True]):
            if mode == "max" and sparse:
                continue
            indices_1D, offsets = gen_1D_indices_offsets(include_last_offset, allpad)
            # (the file tries every id as the padding index; two keep the kernel count small)
            for padding_idx_1D in [sorted(set(indices_1D))[-1], None]:
                msg = f"mode {mode} sparse {sparse} last {include_last_offset} padding_idx {padding_idx_1D}"
                padding_idx_2D = padding_idx_1D if padding_idx_1D is not None else num_words
                n_words = num_words if padding_idx_1D is not None else num_words + 1
                indices_2D = gen_2D_indices_from_1D(indices_1D, offsets, include_last_offset, padding_idx_2D)
                weights = _np_tensor(n_words, num_features, seed=next(seed), dtype=dtype).requires_grad_()
                weights_check = weights.detach().clone().requires_grad_(True)
                bag = F.embedding_bag(torch.tensor(indices_1D, device=device), weights,
                                      torch.tensor(offsets, device=device), padding_idx=padding_idx_1D,
                                      mode=mode, sparse=sparse, include_last_offset=include_last_offset)
                bag_check = F.embedding_bag(indices_2D, weights_check, padding_idx=padding_idx_2D,
                                            mode=mode, sparse=sparse)
                self.assertEqual(bag, bag_check, msg=msg)
                bag.sum().backward()
                bag_check.sum().backward()
                self.assertEqual(weights.grad, weights_check.grad, msg=msg)

    @dtypes(torch.float32, torch.float64)
    def test_embedding_bag_2D_padding_idx(self, device, dtype):
        def embedding_bag_check(indices, weights, mode, sparse, padding_idx):
            embedding = F.embedding(indices, weights, padding_idx=padding_idx, sparse=sparse)
            reduction_dim = indices.dim() - 1
            if mode in ("sum", "mean"):
                per_sample_weights = indices.ne(padding_idx).to(dtype).unsqueeze(-1)
                res = embedding.mul(per_sample_weights).sum(dim=reduction_dim)
                if mode == "mean":
                    res = res.div(per_sample_weights.sum(dim=reduction_dim))
            else:
                res = embedding.masked_fill(indices.unsqueeze(-1) == padding_idx, -float("inf")).amax(dim=reduction_dim)
            if mode in ("mean", "max"):     # an all-padding row gives zeros
                res = res.masked_fill(indices.eq(padding_idx).all(dim=-1).unsqueeze(-1), 0)
            return res

        num_features, num_words, indices_dim1 = 3, 6, 4
        rng = np.random.RandomState(9)
        seed = itertools.count(100)
        for mode, sparse, allpad, indices_dim0 in itertools.product(
                ["max", "mean", "sum"], [False, True], [False, True], [1, 2]):
            if mode == "max" and sparse:
                continue
            if allpad:
                indices = torch.empty(indices_dim0, indices_dim1, dtype=torch.long, device=device).fill_(1)
            else:
                ids = rng.randint(0, num_words, (indices_dim0, indices_dim1))
                if indices_dim0 > 1:        # one row of one repeated id: a fully padded row
                    ids[1] = ids[1][0]
                indices = torch.tensor(ids, device=device)
            # (the file tries every id; the repeated row's id pads a whole row, and one more)
            for padding_idx in sorted({int(indices[-1, 0]), int(indices[0, -1])}):
                weights = _np_tensor(num_words, num_features, seed=next(seed), dtype=dtype).requires_grad_()
                weights_check = weights.detach().clone().requires_grad_(True)
                msg = f"mode {mode} sparse {sparse} padding_idx {padding_idx} allpad {allpad}"
                bag_check = embedding_bag_check(indices, weights_check, mode, sparse, padding_idx)
                bag = F.embedding_bag(indices, weights, padding_idx=padding_idx, mode=mode, sparse=sparse)
                self.assertEqual(bag, bag_check, msg=msg)
                bag_check.sum().backward()
                bag.sum().backward()
                self.assertEqual(weights.grad, weights_check.grad, msg=msg)

    def _embedding_bag_reference_impl(self, input, weight, offsets=None, mode="sum", per_sample_weights=None,
                                      include_last_offset=False):
        # the file's reference: each bag reduced on its own, an empty bag zeros
        if per_sample_weights is None:
            per_sample_weights = torch.ones(input.size()).to(dtype=weight.dtype, device=weight.device)
        embeddings = weight.index_select(0, input.to(torch.long)) * per_sample_weights.unsqueeze(1)
        starts = offsets.tolist()
        ends = starts[1:] if include_last_offset else starts[1:] + [len(input)]
        if include_last_offset:
            starts = starts[:-1]
        bags = []
        for start, end in zip(starts, ends):
            length = end - start
            if length == 0:
                bags.append(torch.tensor([0] * weight.size(1)).to(dtype=embeddings.dtype, device=embeddings.device))
            elif mode == "sum":
                bags.append(embeddings.narrow(0, start, length).sum(0))
            elif mode == "mean":
                bags.append(embeddings.narrow(0, start, length).sum(0).div(length))
            else:
                bags.append(embeddings.narrow(0, start, length).max(0)[0])
        return torch.stack(bags)

    # (the file runs every (int | long) x (int | long) x (float, double, half, bfloat16); four of them here)
    @dtypes((torch.long, torch.long, torch.float), (torch.int, torch.long, torch.double),
            (torch.long, torch.int, torch.half), (torch.int, torch.int, torch.bfloat16))
    def test_EmbeddingBag_per_sample_weights_and_new_offsets(self, device, dtypes):
        prec = _cu.dtype2prec_DONTUSE[dtypes[2]]
        torch.manual_seed(11)

        def test_per_sample_weights_new_offsets(mode, trainable_scale, include_last_offset, has_weight=True):
            es = nn.EmbeddingBag(5, 2, mode=mode, include_last_offset=include_last_offset).to(
                dtype=dtypes[2], device=device)
            es.weight.data.copy_(torch.arange(1, 11, device=device).view_as(es.weight).to(dtypes[2]))
            input = torch.tensor([3, 1, 1, 1, 4, 0], device=device, dtype=dtypes[0])
            offsets = torch.tensor([0, 0, 3, 3, 6], device=device, dtype=dtypes[1])
            if include_last_offset:
                offsets = torch.cat((offsets, torch.tensor([input.size(0)], device=device, dtype=dtypes[1])), 0)
            if has_weight:
                per_sample_weights = torch.randn_like(input, device=device, dtype=dtypes[2]).requires_grad_(trainable_scale)
                ref_per_sample_weights = per_sample_weights.detach().requires_grad_(trainable_scale)
            else:
                per_sample_weights = ref_per_sample_weights = None
            reference_weights = es.weight.detach().requires_grad_()
            expected = self._embedding_bag_reference_impl(input, reference_weights, offsets, mode,
                                                          ref_per_sample_weights, include_last_offset)
            result = es(input, offsets, per_sample_weights)
            self.assertEqual(result, expected, atol=prec, rtol=0)
            grad = torch.randn_like(expected)
            result.backward(grad)
            expected.backward(grad)
            self.assertEqual(es.weight.grad, reference_weights.grad, atol=prec, rtol=0)
            if has_weight and trainable_scale:
                self.assertEqual(per_sample_weights.grad, ref_per_sample_weights.grad, atol=prec, rtol=0)

        for (mode, has_weight), trainable, include_last_offset in itertools.product(
                (("sum", True), ("max", False), ("mean", False)), (True, False), (True, False)):
            test_per_sample_weights_new_offsets(mode, trainable, include_last_offset, has_weight)


_cdt.instantiate_device_type_tests(TestEmbeddingNNDeviceTypeTI46, globals(), only_for="cpu")
_cu.instantiate_parametrized_tests(TestNNInitTI46)

test_oracle_torch_passes = oracle_test("TI46_ORACLE", __file__)
