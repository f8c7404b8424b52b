"""testinfra31: PyTorch test functions from test/test_sort_and_select.py (``TestSortAndSelect``,
pytorch/pytorch commit 6f3cff94) copied as torch wrote them, with the dtype lists and sizes cut where
noted to keep the file fast, run on tracegrad through its own ``tracegrad.testing._internal``
harness. Then the torch 2.13 behaviours this round's probes of sort/select, shape ops, reductions
and losses found tracegrad getting wrong (now fixed), written in the same style: ``all``/``any``
with ``dim=()`` reduce nothing; ``clamp_min``/``clamp_max`` refuse a number bound the dtype cannot
hold; ``unique``/``unique_consecutive`` along a dim of a 0-d input is torch's IndexError;
``topk(k=0)`` of a 0-d input gives the element; ``smooth_l1_loss(beta=0)`` is ``l1_loss`` (its
grad_fn); ``aminmax``, ``mode``, ``diag_embed``, ``block_diag`` and ``cdist`` (its direct kernel)
are one node each; ``trapezoid``/``cumulative_trapezoid``, ``kron`` and ``renorm`` record torch's
nodes; ``ctc_loss``'s node has one edge, and ``zero_infinity`` adds torch's ``where`` node.
``TestKnownGapsTI31`` holds the strict expected failures. ``TI31_ORACLE=1`` runs the same classes
on torch 2.13 itself (``test_oracle_torch_passes`` does that in a subprocess), so every
expectation is torch's."""
import importlib
import os
import random
from itertools import product

import numpy as np

from _ported_helpers import oracle_test

torch = importlib.import_module("torch" if os.environ.get("TI31_ORACLE") else "tracegrad")
_cu = importlib.import_module(torch.__name__ + ".testing._internal.common_utils")
_cdt = importlib.import_module(torch.__name__ + ".testing._internal.common_device_type")
TestCase = _cu.TestCase
dtypes = _cdt.dtypes
make_tensor = torch.testing.make_tensor
nan = float("nan")


class TestSortAndSelectTI31(TestCase):
    """test/test_sort_and_select.py ``TestSortAndSelect``."""

    def test_sort_stable_none(self):
        # Called sort with stable=None used to trigger an assertion
        # See https://github.com/pytorch/pytorch/issues/117255
        x = torch.ones(10)
        y = x.sort(stable=None).values
        self.assertTrue(torch.all(y == torch.ones(10)).item())

    # torch: sizes (100, 1000, 10000) and all_types_and(half, bfloat16); here (100,) and four dtypes
    @dtypes(torch.int64, torch.uint8, torch.float32, torch.float16)
    def test_stable_sort(self, device, dtype):
        sizes = (100,)
        for ncopies in sizes:
            x = torch.tensor([0, 1] * ncopies, dtype=dtype, device=device)
            _, idx = x.sort(stable=True)
            self.assertEqual(
                idx[:ncopies],
                torch.arange(start=0, end=2 * ncopies, step=2, device=device)
            )
            self.assertEqual(
                idx[ncopies:],
                torch.arange(start=1, end=2 * ncopies, step=2, device=device)
            )

    @dtypes(torch.float32)
    def test_sort_restride(self, device, dtype):
        # Input: non-contiguous (stride: 5) 3-element array
        tensor = torch.randn((3, 5), dtype=dtype, device=device)[:, 0]
        # Outputs: 0-dim tensors
        # They will need to be resized, which means they will also be
        # restrided with the input tensor's strides as base.
        values = torch.tensor(0, dtype=dtype, device=device)
        indices = torch.tensor(0, dtype=torch.long, device=device)
        torch.sort(tensor, out=(values, indices))
        # Check: outputs were restrided to dense strides
        self.assertEqual(values.stride(), (1,))
        self.assertEqual(indices.stride(), (1,))
        # Check: 'tensor'  indexed by 'indices' is equal to 'values'
        self.assertEqual(tensor[indices], values)

    @dtypes(torch.float32)
    def test_sort_1d_output_discontiguous(self, device, dtype):
        tensor = torch.randn(12, device=device, dtype=dtype)[:6]
        values = torch.empty_like(tensor)[::2]
        indices = torch.empty(18, device=device, dtype=torch.long)[::3]
        torch.sort(tensor, out=(values, indices))
        values_cont, indices_cont = tensor.sort()
        self.assertEqual(indices, indices_cont)
        self.assertEqual(values, values_cont)

    @dtypes(torch.float32)
    def test_topk_1d_output_discontiguous(self, device, dtype):
        tensor = torch.randn(12, device=device, dtype=dtype)
        values = torch.empty_like(tensor)[::2]
        indices = torch.empty(18, device=device, dtype=torch.long)[::3]
        for sorted in (True, False):
            # outputs of `sorted=False` test are not guaranteed to be the same,
            # but with current implementation they are
            torch.topk(tensor, 6, sorted=sorted, out=(values, indices))
            values_cont, indices_cont = tensor.topk(6, sorted=sorted)
            self.assertEqual(indices, indices_cont)
            self.assertEqual(values, values_cont)

    # torch: all_types_and(half, bfloat16) and shapes up to [10, 20, 30]; here three dtypes, smaller shapes
    @dtypes(torch.int64, torch.float32, torch.float64)
    def test_msort(self, device, dtype):
        def test(shape):
            tensor = make_tensor(shape, dtype=dtype, device=device, low=-9, high=9)
            if tensor.size() != torch.Size([]):
                expected = torch.from_numpy(np.sort(tensor.cpu().numpy(), axis=0))   # np.msort is gone from NumPy 2
            else:
                expected = tensor  # numpy.msort() does not support empty shapes tensor

            result = torch.msort(tensor)
            self.assertEqual(result, expected)

            out = torch.empty_like(result)
            torch.msort(tensor, out=out)
            self.assertEqual(out, expected)

        shapes = (
            [],
            [0, ],
            [20, ],
            [1, 20],
            [5, 6],
            [2, 3, 4]
        )
        for shape in shapes:
            test(shape)

    @dtypes(torch.float)
    def test_sort_expanded_tensor(self, device, dtype):
        # https://github.com/pytorch/pytorch/issues/91420
        data = torch.scalar_tensor(True, device=device, dtype=dtype)
        data = data.expand([1, 1, 1])
        ref = torch.Tensor([[[True]]])
        out = torch.sort(data, stable=True, dim=1, descending=True)
        expected = torch.sort(ref, stable=True, dim=1, descending=True)
        self.assertEqual(out, expected)

        data = torch.randn(4, 1, 10, device=device, dtype=dtype)
        data = data.expand([4, 8, 10])
        ref = data.contiguous()
        out = torch.sort(data, stable=True, dim=1, descending=True)
        expected = torch.sort(ref, stable=True, dim=1, descending=True)
        self.assertEqual(out, expected)

    def test_topk(self, device):
        def topKViaSort(t, k, dim, dir):
            sorted, indices = t.sort(dim, dir)
            return sorted.narrow(dim, 0, k), indices.narrow(dim, 0, k)

        def compareTensors(t, res1, ind1, res2, ind2, dim):
            # Values should be exactly equivalent
            self.assertEqual(res1, res2, atol=0, rtol=0)

            # Indices might differ based on the implementation, since there is
            # no guarantee of the relative order of selection
            if not ind1.eq(ind2).all():
                # To verify that the indices represent equivalent elements,
                # gather from the input using the topk indices and compare against
                # the sort indices
                vals = t.gather(dim, ind2)
                self.assertEqual(res1, vals, atol=0, rtol=0)

        def compare(t, k, dim, dir):
            topKVal, topKInd = t.topk(k, dim, dir, True)
            sortKVal, sortKInd = topKViaSort(t, k, dim, dir)
            compareTensors(t, sortKVal, sortKInd, topKVal, topKInd, dim)

        # torch: sizes up to SIZE=100 each, 3x3 tries and (2, 100000)/(2, 10000) inputs; here a
        # fixed (5, 6, 7) input, one try of each kind (every k/dim reaches a new compile)
        rng = random.Random(31)
        t = torch.rand(5, 6, 7, device=device)

        for _kTries in range(1):
            for _dimTries in range(1):
                for transpose in (True, False):
                    for dir in (True, False):
                        testTensor = t
                        if transpose:
                            dim1 = rng.randrange(t.ndimension())
                            dim2 = dim1
                            while dim1 == dim2:
                                dim2 = rng.randrange(t.ndimension())

                            testTensor = t.transpose(dim1, dim2)

                        dim = rng.randrange(testTensor.ndimension())
                        k = rng.randint(1, testTensor.size(dim))
                        compare(testTensor, k, dim, dir)

    def test_topk_arguments(self, device):
        q = torch.randn(10, 2, 10, device=device)
        # Make sure True isn't mistakenly taken as the 2nd dimension (interpreted as 1)
        self.assertRaises(TypeError, lambda: q.topk(4, True))

    def test_unique_dim(self, device):
        self.assertFalse(hasattr(torch, 'unique_dim'))

        def run_test(device, dtype):
            x = torch.tensor([[[1., 1.],
                               [0., 1.],
                               [2., 1.],
                               [0., 1.]],
                              [[1., 1.],
                               [0., 1.],
                               [2., 1.],
                               [0., 1.]]],
                             dtype=dtype,
                             device=device)
            x_empty = torch.empty(5, 0, dtype=dtype, device=device)
            x_ill_formed_empty = torch.empty(5, 0, 0, dtype=dtype, device=device)
            x_ill_formed_empty_another = torch.empty(5, 0, 5, dtype=dtype, device=device)
            expected_unique_dim0 = torch.tensor([[[1., 1.],
                                                  [0., 1.],
                                                  [2., 1.],
                                                  [0., 1.]]],
                                                dtype=dtype,
                                                device=device)
            expected_inverse_dim0 = torch.tensor([0, 0])
            expected_counts_dim0 = torch.tensor([2])
            expected_unique_dim1 = torch.tensor([[[0., 1.],
                                                  [1., 1.],
                                                  [2., 1.]],
                                                 [[0., 1.],
                                                  [1., 1.],
                                                  [2., 1.]]],
                                                dtype=dtype,
                                                device=device)
            expected_unique_dim1_bool = torch.tensor([[[False, True], [True, True]],
                                                      [[False, True], [True, True]]],
                                                     dtype=torch.bool,
                                                     device=device)
            expected_inverse_dim1 = torch.tensor([1, 0, 2, 0])
            expected_inverse_dim1_bool = torch.tensor([1, 0, 1, 0])
            expected_counts_dim1 = torch.tensor([2, 1, 1])
            expected_counts_dim1_bool = torch.tensor([2, 2])
            expected_unique_dim2 = x.clone()
            expected_inverse_dim2 = torch.tensor([0, 1])
            expected_counts_dim2 = torch.tensor([1, 1])
            expected_unique_empty = torch.empty(5, 0, dtype=dtype, device=device)
            expected_inverse_empty = torch.tensor([], dtype=torch.long, device=device)
            expected_counts_empty = torch.tensor([], dtype=torch.long, device=device)

            # dim0, dim1, dim2 (torch spells out each flag combination; here a loop over them)
            for d, (u, inv, cnt) in enumerate([
                    (expected_unique_dim0, expected_inverse_dim0, expected_counts_dim0),
                    (expected_unique_dim1_bool, expected_inverse_dim1_bool, expected_counts_dim1_bool)
                    if x.dtype == torch.bool else
                    (expected_unique_dim1, expected_inverse_dim1, expected_counts_dim1),
                    (expected_unique_dim2, expected_inverse_dim2, expected_counts_dim2)]):
                self.assertEqual(u, torch.unique(x, dim=d))
                x_unique, x_inverse = torch.unique(x, return_inverse=True, dim=d)
                self.assertEqual(u, x_unique)
                self.assertEqual(inv, x_inverse)
                x_unique, x_counts = torch.unique(x, return_inverse=False, return_counts=True, dim=d)
                self.assertEqual(u, x_unique)
                self.assertEqual(cnt, x_counts)
                x_unique, x_inverse, x_counts = torch.unique(x, return_inverse=True, return_counts=True, dim=d)
                self.assertEqual(u, x_unique)
                self.assertEqual(inv, x_inverse)
                self.assertEqual(cnt, x_counts)

            # test empty tensor
            x_unique, x_inverse, x_counts = torch.unique(
                x_empty,
                return_inverse=True,
                return_counts=True,
                dim=1)
            self.assertEqual(expected_unique_empty, x_unique)
            self.assertEqual(expected_inverse_empty, x_inverse)
            self.assertEqual(expected_counts_empty, x_counts)

            # test not a well formed tensor
            # Checking for runtime error, as this is the expected behaviour
            with self.assertRaises(RuntimeError):
                torch.unique(
                    x_ill_formed_empty,
                    return_inverse=True,
                    return_counts=True,
                    dim=1)

            # test along dim2
            with self.assertRaises(RuntimeError):
                torch.unique(
                    x_ill_formed_empty_another,
                    return_inverse=True,
                    return_counts=True,
                    dim=2)

            # test consecutive version
            y = torch.tensor(
                [[0, 1],
                 [0, 1],
                 [0, 1],
                 [1, 2],
                 [1, 2],
                 [3, 4],
                 [0, 1],
                 [0, 1],
                 [3, 4],
                 [1, 2]],
                dtype=dtype,
                device=device
            )
            expected_y_inverse = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 4, 5], dtype=torch.int64, device=device)
            expected_y_counts = torch.tensor([3, 2, 1, 2, 1, 1], dtype=torch.int64, device=device)
            expected_y_inverse_bool = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 3, 3], dtype=torch.int64, device=device)
            expected_y_counts_bool = torch.tensor([3, 3, 2, 2], dtype=torch.int64, device=device)

            y_unique, y_inverse, y_counts = torch.unique_consecutive(y, return_inverse=True, return_counts=True, dim=0)
            if x.dtype == torch.bool:
                self.assertEqual(expected_y_inverse_bool, y_inverse)
                self.assertEqual(expected_y_counts_bool, y_counts)
            else:
                self.assertEqual(expected_y_inverse, y_inverse)
                self.assertEqual(expected_y_counts, y_counts)

            # Test dim is sorted same as NumPy with dims >= 3
            x = torch.tensor([[[[1, 0, 1, 0, 1, 1],
                                [0, 1, 1, 0, 1, 1]],
                               [[0, 1, 1, 0, 0, 1],
                                [0, 0, 0, 1, 0, 0]]],
                              [[[0, 1, 0, 1, 1, 1],
                                [0, 1, 1, 0, 1, 1]],
                               [[0, 0, 1, 1, 0, 1],
                                [1, 1, 0, 0, 0, 0]]]], dtype=dtype, device=device)
            xn = x.cpu().numpy()
            for d in range(x.dim()):
                t = torch.unique(x, dim=d)
                n = np.unique(xn, axis=d)
                self.assertEqual(t.cpu().numpy(), n)

        run_test(device, torch.float)
        run_test(device, torch.double)
        run_test(device, torch.long)
        run_test(device, torch.uint8)
        run_test(device, torch.bool)

    def _test_topk_dtype(self, device, dtype, integral, size):
        if integral:
            a = torch.randint(torch.iinfo(dtype).min, torch.iinfo(dtype).max,
                              size=(size,), dtype=dtype, device=device)
        else:
            a = torch.randn(size=(size,), dtype=dtype, device=device)

        sort_topk = a.sort()[0][-(size // 2):].flip(0)
        topk = a.topk(size // 2)
        self.assertEqual(sort_topk, topk[0])      # check values
        self.assertEqual(sort_topk, a[topk[1]])   # check indices

    # torch: sizes (10, 4096, 8192); here (10,)
    @dtypes(torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
    def test_topk_integral(self, device, dtype):
        small = 10
        for curr_size in (small,):
            self._test_topk_dtype(device, dtype, True, curr_size)

    @dtypes(torch.float, torch.double, torch.bfloat16, torch.half)
    def test_topk_nonfinite(self, device, dtype):
        x = torch.tensor([float('nan'), float('inf'), 1e4, 0, -1e4, -float('inf')], device=device, dtype=dtype)
        val, idx = x.topk(4)
        expect = torch.tensor([float('nan'), float('inf'), 1e4, 0], device=device, dtype=dtype)
        self.assertEqual(val, expect)
        self.assertEqual(idx, [0, 1, 2, 3])

        val, idx = x.topk(4, largest=False)
        expect = torch.tensor([-float('inf'), -1e4, 0, 1e4], device=device, dtype=dtype)
        self.assertEqual(val, expect)
        self.assertEqual(idx, [5, 4, 3, 2])

    def test_topk_4d(self, device):
        small = 128   # torch also runs 8192
        for size in (small,):
            x = torch.ones(2, size, 2, 2, device=device)
            x[:, 1, :, :] *= 2.
            x[:, 10, :, :] *= 1.5
            val, ind = torch.topk(x, k=2, dim=1)
            expected_ind = torch.ones(2, 2, 2, 2, dtype=torch.long, device=device)
            expected_ind[:, 1, :, :] = 10
            expected_val = torch.ones(2, 2, 2, 2, device=device)
            expected_val[:, 0, :, :] *= 2.
            expected_val[:, 1, :, :] *= 1.5
            self.assertEqual(val, expected_val, atol=0, rtol=0)
            self.assertEqual(ind, expected_ind, atol=0, rtol=0)

    # torch: all_types_and(bfloat16, half); here four of them
    @dtypes(torch.uint8, torch.int64, torch.float32, torch.bfloat16)
    def test_topk_zero(self, device, dtype):
        # https://github.com/pytorch/pytorch/issues/49205
        t = torch.rand(2, 2, device=device).to(dtype=dtype)
        val, idx = torch.topk(t, k=0, largest=False)
        self.assertEqual(val.size(), torch.Size([2, 0]))
        self.assertEqual(idx.size(), torch.Size([2, 0]))

    def _test_unique_scalar_empty(self, dtype, device, f):
        # test scalar
        x = torch.tensor(0, dtype=dtype, device=device)
        unique, inverse, counts = f(x, return_inverse=True, return_counts=True)
        expected_unique = torch.tensor([0], dtype=dtype, device=device)
        expected_inverse = torch.tensor(0, device=device)
        expected_counts = torch.tensor([1], device=device)
        self.assertEqual(unique, expected_unique)
        self.assertEqual(inverse, expected_inverse)
        self.assertEqual(counts, expected_counts)

        # test zero sized tensor
        x = torch.zeros((0, 0, 3), dtype=dtype, device=device)
        unique, inverse, counts = f(x, return_inverse=True, return_counts=True)
        expected_unique = torch.tensor([], dtype=dtype, device=device)
        expected_inverse = torch.empty((0, 0, 3), dtype=torch.long, device=device)
        expected_counts = torch.tensor([], dtype=torch.long, device=device)
        self.assertEqual(unique, expected_unique)
        self.assertEqual(inverse, expected_inverse)
        self.assertEqual(counts, expected_counts)

    def _test_unique_with_expects(self, device, dtype, f, x, expected_unique, expected_inverse, expected_counts, additional_shape):
        def ensure_tuple(x):
            if isinstance(x, torch.Tensor):
                return (x,)
            return x

        for return_inverse in [True, False]:
            for return_counts in [True, False]:
                # test with expected
                ret = ensure_tuple(f(x, return_inverse=return_inverse, return_counts=return_counts))
                self.assertEqual(len(ret), 1 + int(return_inverse) + int(return_counts))
                self.assertEqual(expected_unique, ret[0])
                if return_inverse:
                    self.assertEqual(expected_inverse, ret[1])
                if return_counts:
                    count_index = 1 + int(return_inverse)
                    self.assertEqual(expected_counts, ret[count_index])

                # tests per-element unique on a higher rank tensor.
                y = x.view(additional_shape)
                y_unique, y_inverse, y_counts = f(y, return_inverse=True, return_counts=True)
                self.assertEqual(expected_unique, y_unique)
                self.assertEqual(expected_inverse.view(additional_shape), y_inverse)
                self.assertEqual(expected_counts, y_counts)

    # torch: all_types_and(bool, float16, bfloat16); here four of them
    @dtypes(torch.bool, torch.uint8, torch.int64, torch.float16)
    def test_unique(self, device, dtype):
        def ensure_tuple(x):
            if isinstance(x, torch.Tensor):
                return (x,)
            return x

        if dtype is torch.bool:
            x = torch.tensor([True, False, False, False, True, False, True, False], dtype=torch.bool, device=device)
            expected_unique = torch.tensor([False, True], dtype=torch.bool, device=device)
            expected_inverse = torch.tensor([1, 0, 0, 0, 1, 0, 1, 0], dtype=torch.long, device=device)
            expected_counts = torch.tensor([5, 3], dtype=torch.long, device=device)
        else:
            x = torch.tensor([1, 2, 3, 2, 8, 5, 2, 3], dtype=dtype, device=device)
            expected_unique = torch.tensor([1, 2, 3, 5, 8], dtype=dtype, device=device)
            expected_inverse = torch.tensor([0, 1, 2, 1, 4, 3, 1, 2], device=device)
            expected_counts = torch.tensor([1, 3, 2, 1, 1], device=device)

        # test sorted unique
        fs = (
            lambda x, **kwargs: torch.unique(x, sorted=True, **kwargs),
            lambda x, **kwargs: x.unique(sorted=True, **kwargs),
        )
        x_sliced = torch.empty(x.size(0) * 2, dtype=dtype, device=device)[::2].copy_(x)
        xs = (x, x_sliced)
        for f, x in product(fs, xs):
            self._test_unique_with_expects(device, dtype, f, x, expected_unique, expected_inverse, expected_counts, (2, 2, 2))
            self._test_unique_scalar_empty(dtype, device, f)

        # test unsorted unique
        fs = (
            lambda x, **kwargs: torch.unique(x, sorted=False, **kwargs),
            lambda x, **kwargs: x.unique(sorted=False, **kwargs)
        )
        for f, x in product(fs, xs):
            self._test_unique_scalar_empty(dtype, device, f)
            for return_inverse, return_counts in product((True, False), repeat=2):
                ret = ensure_tuple(f(x, return_inverse=return_inverse, return_counts=return_counts))
                self.assertEqual(len(ret), 1 + int(return_inverse) + int(return_counts))
                x_list = x.tolist()
                x_unique_list = ret[0].tolist()
                self.assertEqual(expected_unique.tolist(), sorted(x_unique_list))
                if return_inverse:
                    x_inverse_list = ret[1].tolist()
                    for i, j in enumerate(x_inverse_list):
                        self.assertEqual(x_list[i], x_unique_list[j])
                if return_counts:
                    count_index = 1 + int(return_inverse)
                    x_counts_list = ret[count_index].tolist()
                    for i, j in zip(x_unique_list, x_counts_list):
                        count = 0
                        for k in x_list:
                            if k == i:
                                count += 1
                        self.assertEqual(j, count)

    @dtypes(torch.bool, torch.int64, torch.float32)
    def test_unique_consecutive(self, device, dtype):
        if dtype is torch.bool:
            x = torch.tensor([True, False, False, False, True, True, False, False, False], dtype=torch.bool, device=device)
            expected_unique = torch.tensor([True, False, True, False], dtype=torch.bool, device=device)
            expected_inverse = torch.tensor([0, 1, 1, 1, 2, 2, 3, 3, 3], dtype=torch.long, device=device)
            expected_counts = torch.tensor([1, 3, 2, 3], dtype=torch.long, device=device)
        else:
            x = torch.tensor([1, 2, 2, 2, 5, 5, 2, 2, 3], dtype=dtype, device=device)
            expected_unique = torch.tensor([1, 2, 5, 2, 3], dtype=dtype, device=device)
            expected_inverse = torch.tensor([0, 1, 1, 1, 2, 2, 3, 3, 4], device=device)
            expected_counts = torch.tensor([1, 3, 2, 2, 1], device=device)

        for f in [torch.unique_consecutive, lambda x, **kwargs: x.unique_consecutive(**kwargs)]:
            self._test_unique_with_expects(device, dtype, f, x, expected_unique, expected_inverse, expected_counts, (3, 3))
            self._test_unique_scalar_empty(dtype, device, f)

    @dtypes(torch.double)
    def test_kthvalue(self, device, dtype):
        SIZE = 6   # torch: 50
        rng = random.Random(31)
        x = torch.rand(SIZE, SIZE, SIZE, dtype=dtype, device=device)
        x0 = x.clone()

        k = rng.randint(1, SIZE)
        res1val, res1ind = torch.kthvalue(x, k, keepdim=False)
        res2val, res2ind = torch.sort(x)

        self.assertEqual(res1val[:, :], res2val[:, :, k - 1], atol=0, rtol=0)
        self.assertEqual(res1ind[:, :], res2ind[:, :, k - 1], atol=0, rtol=0)
        # test use of result tensors
        k = rng.randint(1, SIZE)
        res1val = torch.tensor([], dtype=dtype, device=device)
        res1ind = torch.tensor([], dtype=torch.long, device=device)
        torch.kthvalue(x, k, keepdim=False, out=(res1val, res1ind))
        res2val, res2ind = torch.sort(x)
        self.assertEqual(res1val[:, :], res2val[:, :, k - 1], atol=0, rtol=0)
        self.assertEqual(res1ind[:, :], res2ind[:, :, k - 1], atol=0, rtol=0)

        # test non-default dim
        k = rng.randint(1, SIZE)
        res1val, res1ind = torch.kthvalue(x, k, 0, keepdim=False)
        res2val, res2ind = torch.sort(x, 0)
        self.assertEqual(res1val, res2val[k - 1], atol=0, rtol=0)
        self.assertEqual(res1ind, res2ind[k - 1], atol=0, rtol=0)

        # non-contiguous
        y = x.narrow(1, 0, 1)
        y0 = y.contiguous()
        k = rng.randint(1, SIZE)
        res1val, res1ind = torch.kthvalue(y, k)
        res2val, res2ind = torch.kthvalue(y0, k)
        self.assertEqual(res1val, res2val, atol=0, rtol=0)
        self.assertEqual(res1ind, res2ind, atol=0, rtol=0)

        # non-contiguous [Reference: https://github.com/pytorch/pytorch/issues/45721]
        non_contig_t = torch.tensor([0, -1, 1, -2, 2], dtype=dtype, device=device)[::2]
        expected_val, expected_ind = non_contig_t.contiguous().kthvalue(2)
        out_val, out_ind = non_contig_t.kthvalue(2)
        self.assertEqual(expected_val, out_val, atol=0, rtol=0)
        self.assertEqual(expected_ind, out_ind, atol=0, rtol=0)

        # check that the input wasn't modified
        self.assertEqual(x, x0, atol=0, rtol=0)

        # simple test case (with repetitions)
        y = torch.tensor((3., 5, 4, 1, 1, 5), dtype=dtype, device=device)
        self.assertEqual(torch.kthvalue(y, 3)[0], 3, atol=0, rtol=0)
        self.assertEqual(torch.kthvalue(y, 2)[0], 1, atol=0, rtol=0)

        # simple test case (with NaN)
        x = torch.rand(SIZE, SIZE, SIZE, dtype=dtype, device=device)
        x[torch.arange(SIZE), :, torch.randint(SIZE, (SIZE,))] = nan
        ks = [rng.randint(1, SIZE), 1, SIZE, SIZE - 1]
        res2val, res2ind = torch.sort(x)
        for k in ks:
            res1val, res1ind = torch.kthvalue(x, k, keepdim=False)
            self.assertEqual(res1val[:, :], res2val[:, :, k - 1], atol=0, rtol=0)
            self.assertEqual(res1ind[:, :], res2ind[:, :, k - 1], atol=0, rtol=0)

    @dtypes(torch.float)
    def test_kthvalue_scalar(self, device, dtype):
        # Test scalar input (test case from https://github.com/pytorch/pytorch/issues/30818)
        # Tests that passing a scalar tensor or 1D tensor with 1 element work either way
        res = torch.tensor(2, device=device, dtype=dtype).kthvalue(1)
        ref = torch.tensor([2], device=device, dtype=dtype).kthvalue(1)
        self.assertEqual(res[0], ref[0].squeeze())
        self.assertEqual(res[1], ref[1].squeeze())

    # torch: all_types(); here three of them
    @dtypes(torch.uint8, torch.int64, torch.float32)
    def test_isin(self, device, dtype):
        def assert_isin_equal(a, b):
            # Compare to the numpy reference implementation.
            x = torch.isin(a, b)
            a = a.cpu().numpy() if torch.is_tensor(a) else np.array(a)
            b = b.cpu().numpy() if torch.is_tensor(b) else np.array(b)
            y = np.isin(a, b)
            self.assertEqual(x, y)

        # multi-dim tensor, multi-dim tensor
        a = torch.arange(24, device=device, dtype=dtype).reshape([2, 3, 4])
        b = torch.tensor([[10, 20, 30], [0, 1, 3], [11, 22, 33]], device=device, dtype=dtype)
        assert_isin_equal(a, b)

        # zero-dim tensor
        zero_d = torch.tensor(3, device=device, dtype=dtype)
        assert_isin_equal(zero_d, b)
        assert_isin_equal(a, zero_d)
        assert_isin_equal(zero_d, zero_d)

        # empty tensor
        empty = torch.tensor([], device=device, dtype=dtype)
        assert_isin_equal(empty, b)
        assert_isin_equal(a, empty)
        assert_isin_equal(empty, empty)

        # scalar
        assert_isin_equal(a, 6)
        assert_isin_equal(5, b)


class TestFixesTI31(TestCase):
    """The torch 2.13 behaviours this round fixed in tracegrad (each failed before the fix)."""

    def test_all_any_empty_dims_reduce_nothing(self, device):
        x = torch.tensor([[0, 1], [2, 0]], device=device)
        want = torch.tensor([[False, True], [True, False]], device=device)
        for op in (torch.all, torch.any):
            for dims in ((), []):
                self.assertEqual(op(x, dims), want)
                self.assertEqual(op(x, dim=dims, keepdim=True), want)
        self.assertEqual(x.all(dim=()).dtype, torch.bool)
        u = torch.tensor([0, 2], dtype=torch.uint8, device=device)
        self.assertEqual(u.any(dim=()), torch.tensor([0, 1], dtype=torch.uint8, device=device))
        # a float input gives bools; a 0-d input stays 0-d
        self.assertEqual(torch.tensor([[0., 1.5]], device=device).all(dim=()),
                         torch.tensor([[False, True]], device=device))
        self.assertEqual(torch.tensor(2., device=device).all(dim=()), torch.tensor(True, device=device))
        # dim=None still reduces every dim
        self.assertEqual(x.all(), torch.tensor(False, device=device))

    def test_clamp_min_max_bound_overflow(self, device):
        x = torch.tensor([1, 5], dtype=torch.int8, device=device)
        for fn in (lambda: torch.clamp_max(x, 300), lambda: torch.clamp_min(x, -200),
                   lambda: x.clamp_max(128), lambda: torch.clamp(x, max=300)):
            with self.assertRaisesRegex(RuntimeError, "value cannot be converted to type int8"):
                fn()
        h = torch.tensor([1., 5.], dtype=torch.float16, device=device)
        with self.assertRaisesRegex(RuntimeError, "value cannot be converted to type"):
            torch.clamp_min(h, 1e6)
        # a float bound of an integer input promotes (no overflow check); uint8 wraps as torch
        self.assertEqual(torch.clamp_min(x, 2.5), torch.tensor([2.5, 5.], device=device))
        self.assertEqual(torch.clamp_max(x, 127), x)
        self.assertEqual(torch.clamp_min(torch.tensor([1, 5], dtype=torch.uint8, device=device), -1),
                         torch.tensor([255, 255], dtype=torch.uint8, device=device))

    def test_unique_dim_of_0d_is_index_error(self, device):
        x = torch.tensor(2., device=device)
        for fn in (lambda: torch.unique(x, dim=0), lambda: torch.unique(x, dim=-1, return_counts=True),
                   lambda: x.unique(dim=0), lambda: torch.unique_consecutive(x, dim=0)):
            with self.assertRaisesRegex(IndexError, "Dimension specified as -?[01] but tensor has no dimensions"):
                fn()
        # without a dim a 0-d input is fine
        self.assertEqual(torch.unique(x), torch.tensor([2.], device=device))
        self.assertEqual(torch.unique_consecutive(x), torch.tensor([2.], device=device))

    def test_topk_k0_of_0d(self, device):
        x = torch.tensor(2., device=device)
        val, idx = torch.topk(x, 0)
        self.assertEqual(val, x)
        self.assertEqual(idx, torch.tensor(0, device=device))
        self.assertEqual(x.topk(1).values, x)
        with self.assertRaisesRegex(RuntimeError, "selected index k out of range"):
            torch.topk(x, 2)

    def test_smooth_l1_zero_beta_is_l1(self, device):
        F = torch.nn.functional
        x = torch.tensor([[0.5, -2.], [1., 0.25]], device=device)
        y = torch.zeros(2, 2, device=device)
        for red, name in (("none", "AbsBackward0"), ("mean", "MeanBackward0"), ("sum", "SumBackward0")):
            a = x.clone().requires_grad_()
            b = x.clone().requires_grad_()
            out = F.smooth_l1_loss(a, y, reduction=red, beta=0.)
            ref = F.l1_loss(b, y, reduction=red)
            self.assertEqual(out, ref)
            self.assertEqual(type(out.grad_fn).__name__, name)
            out.sum().backward()
            ref.sum().backward()
            self.assertEqual(a.grad, b.grad)
        a = x.clone().requires_grad_()
        self.assertEqual(type(F.smooth_l1_loss(a, y, beta=0.5).grad_fn).__name__, "SmoothL1LossBackward0")

    def test_ctc_loss_graph(self, device):
        F = torch.nn.functional
        lp = torch.tensor(np.random.RandomState(31).standard_normal((6, 2, 4)), dtype=torch.float32,
                          device=device).log_softmax(2).detach().requires_grad_()
        targets = torch.tensor([[1, 2, 2], [3, 0, 0]], device=device)
        args = (torch.tensor([6, 2], device=device), torch.tensor([3, 1], device=device))
        # the targets and lengths have no edge on the node
        out = F.ctc_loss(lp, targets, *args, reduction="none")
        self.assertEqual(type(out.grad_fn).__name__, "CtcLossBackward0")
        self.assertEqual(len(out.grad_fn.next_functions), 1)
        # zero_infinity: torch puts a where() over the node (both losses here are finite)
        for red, chain in (("none", ["WhereBackward0", "CtcLossBackward0"]),
                           ("sum", ["SumBackward0", "WhereBackward0", "CtcLossBackward0"]),
                           ("mean", ["MeanBackward0", "DivBackward0", "WhereBackward0", "CtcLossBackward0"])):
            node, names = F.ctc_loss(lp, targets, *args, reduction=red, zero_infinity=True).grad_fn, []
            while node is not None and type(node).__name__ != "AccumulateGrad":
                names.append(type(node).__name__)
                node = [n for n, _ in node.next_functions if n is not None][0]
            self.assertEqual(names, chain)
        # sample 1 is impossible (3 labels with repeats need 5 steps, it has 2): loss and gradient zero
        bad = torch.tensor([[1, 1, 1], [1, 1, 1]], device=device)
        out = F.ctc_loss(lp, bad, torch.tensor([6, 2], device=device), torch.tensor([3, 3], device=device),
                         reduction="none", zero_infinity=True)
        self.assertEqual(out[1], torch.tensor(0., device=device))
        out.sum().backward()
        self.assertEqual(lp.grad[:, 1], torch.zeros(6, 4, device=device))

    def test_aminmax_one_node(self, device):
        x = torch.tensor([[1., 5., 5.], [0., 0., 2.]], device=device, requires_grad=True)
        mn, mx = torch.aminmax(x, dim=1)
        self.assertEqual(type(mn.grad_fn).__name__, "AminmaxBackward0")
        self.assertTrue(mn.grad_fn is mx.grad_fn)
        self.assertEqual((mn.output_nr, mx.output_nr), (0, 1))
        (mn + 2 * mx).sum().backward()
        # ties share the gradient evenly, as amin/amax
        self.assertEqual(x.grad, torch.tensor([[1., 1., 1.], [0.5, 0.5, 2.]], device=device))
        mn, mx = x.aminmax()
        self.assertTrue(mn.grad_fn is mx.grad_fn)
        self.assertEqual(torch.aminmax(x, keepdim=True).max.shape, (1, 1))
        with self.assertRaises(NotImplementedError):
            torch.aminmax(torch.tensor([1 + 1j], device=device))

    def test_mode_one_node(self, device):
        x = torch.tensor([[1., 2., 2., 0.], [3., 0., 0., 3.]], device=device, requires_grad=True)
        for keepdim in (False, True):
            v, i = torch.mode(x, 1, keepdim)
            self.assertEqual(type(v.grad_fn).__name__, "ModeBackward0")
            self.assertEqual(v, torch.tensor([2., 0.], device=device).view((2, 1) if keepdim else (2,)))
            self.assertEqual(i, torch.tensor([2, 2], device=device).view((2, 1) if keepdim else (2,)))
        x.grad = None
        torch.mode(x, 0).values.sum().backward()
        self.assertEqual(x.grad.sum(), torch.tensor(4., device=device))
        z = torch.tensor(2., device=device, requires_grad=True)
        self.assertEqual(type(torch.mode(z).values.grad_fn).__name__, "ModeBackward0")

    def test_diag_embed_one_node(self, device):
        x = torch.tensor([[1., 2.], [3., 4.]], device=device, requires_grad=True)
        for offset, dim1, dim2 in ((0, -2, -1), (1, 0, 2), (-1, 2, 0)):
            y = torch.diag_embed(x, offset, dim1, dim2)
            self.assertEqual(type(y.grad_fn).__name__, "DiagEmbedBackward0")
            self.assertTrue(y.is_contiguous())
            self.assertEqual(y.diagonal(offset, dim1, dim2), x)
            self.assertEqual(y.abs().sum(), x.abs().sum())
            x.grad = None
            (y * 2).sum().backward()
            self.assertEqual(x.grad, torch.full((2, 2), 2., device=device))

    def test_trapezoid_nodes(self, device):
        def names(t):
            out, node = [], t.grad_fn
            while node is not None and type(node).__name__ != "AccumulateGrad":
                out.append(type(node).__name__)
                node = [n for n, _ in node.next_functions if n is not None][0]
            return out
        y = torch.tensor([[1., 2., 4.], [0., 3., 1.]], device=device, requires_grad=True)
        # (y.sum(d) - (y[0] + y[-1]) * 0.5) * dx: products by a C++ Scalar
        self.assertEqual(names(torch.trapezoid(y, dx=2.5)), ["MulBackward1", "SubBackward0", "SumBackward1"])
        self.assertEqual(torch.trapezoid(y, dx=2.5), torch.tensor([11.25, 8.75], device=device))
        self.assertEqual(names(torch.trapezoid(y, torch.tensor([0., 1., 3.], device=device)))[:2],
                         ["DivBackward1", "SumBackward1"])
        self.assertEqual(names(torch.cumulative_trapezoid(y))[:2], ["CumsumBackward0", "MulBackward1"])
        # no samples: zeros in y's dtype, no history
        e = torch.trapezoid(torch.ones(2, 0, dtype=torch.int64, device=device))
        self.assertEqual(e, torch.zeros(2, dtype=torch.int64, device=device))
        self.assertIsNone(torch.trapezoid(torch.ones(2, 0, device=device, requires_grad=True)).grad_fn)
        self.assertEqual(type(torch.cumulative_trapezoid(torch.ones(2, 0, device=device, requires_grad=True)).grad_fn).__name__,
                         "CumsumBackward0")

    def test_kron_unsafe_view_nodes(self, device):
        a = torch.tensor([[1., 2.], [3., 4.]], device=device, requires_grad=True)
        b = torch.tensor([[0.5, -1., 2.]], device=device, requires_grad=True)
        r = torch.kron(a, b)
        self.assertEqual(type(r.grad_fn).__name__, "UnsafeViewBackward0")
        mul = r.grad_fn.next_functions[0][0]
        self.assertEqual(type(mul).__name__, "MulBackward0")
        self.assertEqual([type(n).__name__ for n, _ in mul.next_functions], ["UnsafeViewBackward0"] * 2)
        r.sum().backward()
        self.assertEqual(a.grad, torch.full((2, 2), 1.5, device=device))
        self.assertEqual(b.grad, torch.full((1, 3), 10., device=device))

    def test_renorm_one_node(self, device):
        x = torch.tensor([[1., -2., 0.], [0.1, 0.2, 0.], [0., 0., 0.]], device=device, requires_grad=True)
        for p in (1, 2, 0.5, float("inf")):
            r = torch.renorm(x, p, 0, 1.)
            self.assertEqual(type(r.grad_fn).__name__, "RenormBackward0")
            x.grad = None
            r.sum().backward()
            # the slices left alone pass the gradient through; a zero element gets a finite one
            self.assertEqual(x.grad[1:], torch.ones(2, 3, device=device))
            self.assertFalse(x.grad.isnan().any() or x.grad.isinf().any())
        self.assertEqual(torch.renorm(x, 2, 0, 1.)[0].norm(), torch.tensor(1., device=device), atol=1e-6, rtol=0)

    def test_block_diag_one_node(self, device):
        a = torch.ones(2, device=device, requires_grad=True)
        b = torch.tensor(3., dtype=torch.float64, device=device, requires_grad=True)
        c = torch.ones(2, 2, dtype=torch.int64, device=device)
        r = torch.block_diag(a, b, c)
        self.assertEqual(r.dtype, torch.float32)   # a 0-d float64 does not promote
        self.assertEqual(type(r.grad_fn).__name__, "BlockDiagBackward0")
        self.assertEqual([type(n).__name__ if n is not None else None for n, _ in r.grad_fn.next_functions],
                         ["AccumulateGrad", "AccumulateGrad", None])
        (r * torch.arange(r.numel(), device=device).reshape(r.shape)).sum().backward()
        self.assertEqual(a.grad, torch.tensor([0., 1.], device=device))
        self.assertEqual(b.grad, torch.tensor(7., dtype=torch.float64, device=device))


    def test_cdist_one_node(self, device):
        x1 = torch.tensor([[0., 1., 2.], [1., 1., 1.]], device=device, requires_grad=True)
        x2 = torch.tensor([[0., 1., 2.], [2., 1., 0.], [0., 0., 0.]], device=device, requires_grad=True)
        for p in (0., 1., 1.5, 2., float("inf")):
            r = torch.cdist(x1, x2, p)
            self.assertEqual(type(r.grad_fn).__name__, "CdistBackward0")
            x1.grad = x2.grad = None
            r.sum().backward()
            # a zero distance (x1[0] == x2[0]) gives no NaN
            self.assertFalse(x1.grad.isnan().any() or x2.grad.isnan().any())
        r = torch.cdist(x1, x2)
        self.assertEqual(r[1, 1], torch.tensor(2., device=device).sqrt())
        # more than 25 rows: torch's matrix-product path, not the CdistBackward0 kernel
        big = torch.ones(26, 3, device=device, requires_grad=True)
        self.assertNotEqual(type(torch.cdist(big, x2).grad_fn).__name__, "CdistBackward0")


class TestKnownGapsTI31(TestCase):
    """Differences found and left here, fixed later (each passes on tracegrad and the oracle)."""

    def test_rot90_node(self, device):
        # torch records one Rot90Backward0 node whose result has strides (1, 3) for a (2, 3)
        # input turned once; tracegrad composed flip + transpose (TransposeBackward0) until
        # testinfra35 made rot90 one op with torch's strides
        x = torch.zeros(2, 3, device=device, requires_grad=True)
        y = torch.rot90(x)
        self.assertEqual(y.stride(), (1, 3))
        self.assertEqual(type(y.grad_fn).__name__, "Rot90Backward0")


_cdt.instantiate_device_type_tests(TestSortAndSelectTI31, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestFixesTI31, globals(), only_for="cpu")
_cdt.instantiate_device_type_tests(TestKnownGapsTI31, globals(), only_for="cpu")


test_oracle_torch_passes = oracle_test("TI31_ORACLE", __file__)
