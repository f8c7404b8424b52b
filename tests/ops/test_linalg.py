"""tracegrad.linalg against torch.linalg: values and gradients (batched), named results,
error classes for bad input, and a linalg op inside a compiled step."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _spd(n, batch=(), seed=0):
    a = np.random.RandomState(seed).randn(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float64)


def _mat(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float64)


def _both(fn, *arrays, grad=True):
    """fn(mod, *tensors) on both libraries; returns (torch outs, tracegrad outs, grads)."""
    outs, grads = [], []
    for mod in (torch, tracegrad):
        ts = [mod.tensor(a, requires_grad=grad) for a in arrays]
        out = fn(mod, *ts)
        flat = list(out) if isinstance(out, tuple) else [out]
        if grad:
            w = [np.random.RandomState(7 + i).randn(*tuple(o.shape)) for i, o in enumerate(flat)]
            total = sum((o * mod.tensor(wi, dtype=o.dtype)).sum() for o, wi in zip(flat, w))
            total.backward()
            grads.append([t.grad.detach().numpy() for t in ts])
        outs.append([o.detach().numpy() for o in flat])
    return outs, grads


CASES = [
    ("vector_norm", lambda m, a: m.linalg.vector_norm(a), [_mat(3, 4)]),
    ("vector_norm_ord3_dim", lambda m, a: m.linalg.vector_norm(a, 3, dim=1, keepdim=True), [_mat(3, 4)]),
    ("vector_norm_inf", lambda m, a: m.linalg.vector_norm(a, float("inf"), dim=(0, 1)), [_mat(3, 4)]),
    ("norm_default", lambda m, a: m.linalg.norm(a), [_mat(2, 3, 4)]),
    ("norm_fro_dim", lambda m, a: m.linalg.norm(a, "fro", dim=(1, 2)), [_mat(2, 3, 4)]),
    ("norm_nuc", lambda m, a: m.linalg.norm(a, "nuc"), [_mat(4, 3)]),
    ("matrix_norm_1", lambda m, a: m.linalg.matrix_norm(a, 1), [_mat(2, 3, 4)]),
    ("inv", lambda m, a: m.linalg.inv(a), [_spd(4, (2,))]),
    ("det", lambda m, a: m.linalg.det(a), [_mat(2, 3, 3)]),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a))[1], [_mat(2, 3, 3)]),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [_spd(3, (2,)), _mat(2, 3, 2)]),
    ("solve_vector", lambda m, a, b: m.linalg.solve(a, b), [_spd(3), _mat(3)]),
    ("solve_right", lambda m, a, b: m.linalg.solve(a, b, left=False), [_spd(3), _mat(2, 3)]),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), [_spd(4, (2,))]),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky(a, upper=True), [_spd(3)]),
    ("qr_R", lambda m, a: m.linalg.qr(a).R.abs(), [_mat(5, 3)]),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [_mat(2, 4, 3)]),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), [_spd(4, (2,))]),
    ("pinv", lambda m, a: m.linalg.pinv(a), [_mat(4, 3)]),
    # a tolerance with batch dims A lacks: one pseudo-inverse per tolerance (torch broadcasts)
    ("pinv_rtol_batch", lambda m, a: m.linalg.pinv(a, rtol=m.tensor([0.1, 0.5], dtype=a.dtype)), [_mat(3, 4)]),
    ("pinv_atol_rtol_batch", lambda m, a: m.linalg.pinv(a, atol=m.tensor([[0.1], [2.0]], dtype=a.dtype),
                                                         rtol=m.tensor([0.0, 0.5], dtype=a.dtype)), [_mat(2, 3, 4)]),
    ("cross", lambda m, a, b: m.linalg.cross(a, b), [_mat(2, 3), _mat(2, 3, seed=1)]),
    ("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), [_mat(3, 3)]),
    ("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2), [_spd(3)]),
    ("multi_dot", lambda m, a, b: m.linalg.multi_dot([a, b, a.mT]), [_mat(2, 3), _mat(3, 3)]),
    ("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), [_mat(2, 3), _mat(2, 3, seed=1)]),
]


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_linalg_matches_torch(name, fn, arrays):
    (ref, got), (gref, ggot) = _both(fn, *arrays)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=1e-7, atol=1e-9, err_msg=name)
    for r, g in zip(gref, ggot):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-8, err_msg=name + " grad")


def test_factorizations_reconstruct_and_are_named():
    a = tracegrad.tensor(_mat(4, 3))
    q, r = tracegrad.linalg.qr(a)
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-12)
    u, s, vh = tracegrad.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose((u * s @ vh).numpy(), a.numpy(), atol=1e-12)
    spd = tracegrad.tensor(_spd(3))
    w, v = tracegrad.linalg.eigh(spd)
    np.testing.assert_allclose((v * w @ v.mT).numpy(), spd.numpy(), atol=1e-10)
    sign, logabs = tracegrad.linalg.slogdet(spd)
    assert float(sign) == 1.0 and float(logabs) == pytest.approx(np.log(np.linalg.det(_spd(3))))


def test_bad_inputs_raise_torch_classes():
    for mod in (torch, tracegrad):
        with pytest.raises(RuntimeError, match="square"):
            mod.linalg.inv(mod.ones(2, 3))
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            mod.linalg.det(mod.ones(3))
        with pytest.raises(RuntimeError):
            mod.linalg.inv(mod.ones(2, 2, dtype=mod.int64))
        with pytest.raises(mod.linalg.LinAlgError):
            mod.linalg.inv(mod.zeros(2, 2))
        with pytest.raises(mod.linalg.LinAlgError):
            mod.linalg.cholesky(-mod.eye(2))
        with pytest.raises(RuntimeError, match="length 3"):
            mod.linalg.cross(mod.ones(2, 4), mod.ones(2, 4))
    assert issubclass(tracegrad.linalg.LinAlgError, RuntimeError)


def test_norm_of_zero_has_zero_gradient_and_compiles():
    x = tracegrad.zeros(3, requires_grad=True)
    tracegrad.linalg.vector_norm(x).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    lin = tracegrad.nn.Linear(3, 3)
    opt = tracegrad.optim.SGD(lin.parameters(), lr=0.1)

    def step(v):
        opt.zero_grad()
        loss = tracegrad.linalg.norm(lin(v), dim=1).mean() + tracegrad.linalg.matrix_norm(lin.weight)
        loss.backward()
        opt.step()
        return loss
    f = tracegrad.compile(step)
    v = tracegrad.ones(4, 3)
    tracegrad.manual_seed(0)
    import copy
    lin_e = copy.deepcopy(lin)
    opt_e = tracegrad.optim.SGD(lin_e.parameters(), lr=0.1)
    for _ in range(3):
        got = float(f(v))
        opt_e.zero_grad()
        le = tracegrad.linalg.norm(lin_e(v), dim=1).mean() + tracegrad.linalg.matrix_norm(lin_e.weight)
        le.backward()
        opt_e.step()
        assert got == pytest.approx(float(le), rel=1e-6)
    assert f.stats["traces"] == 1 and not f.stats["graph_breaks"]


@pytest.mark.parametrize("shape", [(4, 3), (2, 3), (0, 3)])
def test_svd_full_matrices_gradient_of_non_square(shape):
    """linalg.svd's default full_matrices=True on a non-square (or empty) input: torch narrows U/Vh
    to their first min(m, n) columns/rows for the backward (the completion carries no gradient);
    tracegrad raised on the backward (JAX has no full-matrices derivative). Loss invariant to the
    singular vectors' signs, weighted over the completion too."""
    a = _mat(*shape)
    grads = []
    for mod in (torch, tracegrad):
        t = mod.tensor(a, requires_grad=True)
        u, s, v = mod.svd(t, some=False)          # torch.svd(some=False) -> linalg.svd(full_matrices=True)
        w = [mod.tensor(np.random.RandomState(i).randn(*tuple(o.shape))) for i, o in enumerate((u, s, v))]
        loss = (u.abs() * w[0]).sum() + (s * w[1]).sum() + (v.abs() * w[2]).sum()
        grads.append(mod.autograd.grad(loss, t)[0].detach().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-9)
