"""Round 17 of PyTorch's own tests, ported: test/test_view_ops.py (TestViewOps
.test_view_dtype_new's error order, test_diagonal_view, test_unfold_view, test_as_strided_view,
views of views and their strides/offsets), test/test_shape_ops.py (TestShapeOps.test_diagonal:
identical dims refused), test/test_indexing.py (TestIndexing.test_index_put_accumulate_*,
test_setitem_expansion_error, test_step / test_step_assignment: a zero or negative slice step,
test_out_of_bound_index: which position an out-of-range int index is named by,
index_put's value-shape check) and test/test_linalg.py / test/nn/test_linear (addmm's and
Linear's dtype mismatch words). Each program runs under torch (the oracle) and tracegrad
(``run_both``): equal logs of values, strides, offsets and messages' gists. Tensors of shape
(2, 3, 4) / (3, 4) / (5,) float32 only."""

import pytest

from parity import error_gist, run_both

torch = pytest.importorskip("torch")


err = error_gist


def test_view_errors_and_layouts():
    # test_view_dtype_new (error order), test_diagonal (identical dims), view layouts
    def program(T, log):
        x = T.arange(24.0).reshape(2, 3, 4)
        log("diagonal identical dims", [err(lambda: x.diagonal(0, 1, 1)), err(lambda: T.diagonal(x, 0, -1, 2)),
                                        err(lambda: x.diagonal(dim1=0, dim2=-3))])
        f = T.float64
        log("view(dtype) errors", {
            # last size odd (and last stride != 1): torch names the size
            "size then stride": err(lambda: x.transpose(1, 2).view(f)),
            # odd offset (and last stride != 1): the offset first
            "offset then stride": err(lambda: T.zeros(9, 4).t()[1:, :4].view(f)),
            "stride(-1)": err(lambda: T.zeros(7, 4).t()[:, 1:5].view(f)),
            "stride(0)": err(lambda: T.zeros(3, 5)[:, 0:4].view(f)),
            "narrowing, stride(-1)": err(lambda: x.transpose(1, 2).view(T.float16)),
            "0-d": err(lambda: T.tensor(1.0).view(f)),
        })
        ok = T.zeros(3, 4)[:, 2:4].view(f)
        log("view(dtype) that fits", [ok.shape, ok.stride(), ok.storage_offset()])

        # layouts of views and views of views (all share x's storage)
        u = x.unfold(2, 2, 1)
        d = x.diagonal(offset=-1, dim1=2, dim2=0)
        a = x.as_strided((2, 2), (1, 2), 3)
        aa = a.as_strided((3,), (2,), 1)      # as_strided of a view: offsets are into the storage
        nn_ = x.narrow(1, 1, 2).narrow(2, 1, 2)
        log("layouts", [(v.shape, v.stride(), v.storage_offset()) for v in (u, d, a, aa, nn_, x.movedim(0, -1))])
        log("values", [d, a, aa, nn_])
        y = x.clone()
        y.diagonal(0, 1, 2).fill_(-1)
        y.unfold(2, 2, 2)[..., 0].zero_()
        y.transpose(0, 2)[1].add_(100)
        log("writes through views", y)
        log("expanded write", err(lambda: x[:, :1].expand(2, 3, 4).add_(1)))
        log("overlapping as_strided write", err(lambda: T.zeros(4).as_strided((2, 2), (1, 1)).add_(1)))

        g = T.ones(2, 3, requires_grad=True)
        grads = []
        for view in (lambda t: t.unfold(1, 2, 1), lambda t: t.as_strided((2, 2), (1, 1)), lambda t: t.diagonal(1) * 3):
            g.grad = None
            view(g).sum().backward()
            grads.append(g.grad)
        log("grads through views", grads)

    run_both(program)


def test_index_put_and_slice_steps():
    # test_index_put_accumulate_*, test_setitem_expansion_error, test_step(_assignment)
    def program(T, log):
        x = T.zeros(5)
        v3 = T.tensor([1.0, 2.0, 3.0])
        i2 = T.tensor([0, 1])
        log("value shape mismatch", {
            "index_put_": err(lambda: x.index_put_((i2,), v3)),
            "index_put": err(lambda: T.index_put(x, (i2,), v3)),
            "accumulate": err(lambda: x.index_put_((i2,), v3, accumulate=True)),
            "setitem": err(lambda: x.__setitem__(i2, v3)),
            "2-d result": err(lambda: T.zeros(5, 2).index_put_((i2,), v3)),
            "bool mask": err(lambda: T.zeros(5, 2).index_put_((T.tensor([True, False, True, False, False]),), v3)),
            "setitem, leading dims": err(lambda: T.zeros(2, 3, 4).__setitem__(0, T.ones(2))),
        })
        # an int index out of range: torch names its position in the key (None and ... count)
        z = T.zeros(2, 3, 4)
        log("out of range", [err(lambda: z[None, -3]), err(lambda: z[0, None, 5]), err(lambda: z[..., 7]),
                             err(lambda: z[:, None, 3]), err(lambda: z.__setitem__((None, None, Ellipsis, 9), 1.0))])
        log("broadcast value is fine", T.zeros(5, 2).index_put_((i2,), T.tensor([[1.0, 2.0]])))
        log("slice steps", [err(lambda: x[::0]), err(lambda: x[::-1]), err(lambda: x.__setitem__(slice(None, None, 0), 1.0)),
                            err(lambda: x.__setitem__(slice(None, None, -1), 1.0)), x[1::2].stride()])

        y = T.zeros(5)
        y.index_put_((T.tensor([0, 0, 2]),), v3, accumulate=True)
        y.index_put_((T.tensor([1]),), T.tensor(5.0))
        m = T.zeros(2, 3)
        m.index_put_((T.tensor([0, 0]), T.tensor([1, 1])), T.tensor(1.0), accumulate=True)
        m.index_put_((T.tensor([[True, False, True], [False, False, False]]),), T.tensor([4.0, 5.0]), accumulate=True)
        log("accumulate", [y, m, T.index_put(m, (T.tensor([1]),), v3)])

        a = T.zeros(3, requires_grad=True)
        v = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([1.0, 2.0, 3.0])
        got = []
        for acc, idx in ((True, [0, 0]), (False, [0, 2])):
            a.grad, v.grad = None, None
            (a.clone().index_put((T.tensor(idx),), v, accumulate=acc) * w).sum().backward()
            got.append((a.grad, v.grad))
        log("index_put grads", got)

        s = T.zeros(2, 3, 4)
        s[:, T.tensor([0, 2])] = T.tensor([[1.0], [2.0]])
        s[..., 1] = 7.0
        s[None, 0, None] = 3.0
        s[[0, 1], :, [0, 0]] = T.ones(2, 3) * 9
        s[T.tensor([True, False])] = T.ones(1, 3, 4) * 2
        log("setitem broadcasting", s)

    run_both(program)


def test_addmm_and_linear_dtype_messages():
    # addmm compares self with mat2 first, then mat1 with mat2; Linear with a bias is addmm
    def program(T, log):
        f32, f64 = T.float32, T.float64
        msgs = []
        for s, m1, m2 in ((f32, f64, f32), (f32, f32, f64), (f64, f32, f32)):
            msgs.append(err(lambda: T.addmm(T.ones(3, dtype=s), T.ones(3, 4, dtype=m1), T.ones(4, 3, dtype=m2))))
        lin = T.nn.Linear(4, 3)
        msgs.append(err(lambda: lin(T.ones(3, 4, dtype=f64))))
        msgs.append(err(lambda: lin(T.ones(2, 3, 4, dtype=f64))))
        log("messages", msgs)
        log("same dtype works", T.addmm(T.ones(3, dtype=f64), T.ones(3, 4, dtype=f64), T.ones(4, 3, dtype=f64)))

    run_both(program)
