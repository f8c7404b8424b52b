"""A sparse COO tensor passed to a compiled function (pygcn's ``forward(x, adj)`` with
``torch.spmm(adj, support)``): it runs as a captured sparse tensor does, compiled equals eager,
including after its values change in place, with another sparse tensor, and for a sparse leaf
that requires grad. (Keying the call read the sparse tensor's dense value, which it has not:
torch's sparse-backend NotImplementedError for a plain call.)"""
import numpy as np
import pytest

import tracegrad as tg

IDX = [[0, 1, 2, 2], [1, 0, 2, 0]]
W0 = np.random.RandomState(0).randn(3, 2).astype(np.float32) * 0.1


def _adj(values):
    return tg.sparse_coo_tensor(tg.tensor(IDX), values, (3, 3))


def _train(compiled):
    w = tg.nn.Parameter(tg.tensor(W0))
    opt = tg.optim.SGD([w], lr=0.01)

    def step(adj, x):
        opt.zero_grad()
        loss = (tg.spmm(adj, x @ w) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = tg.compile(step)
    adj, x = _adj(tg.tensor([1.0, 2.0, 3.0, 4.0])), tg.ones(3, 3)
    losses = [step(adj, x).item() for _ in range(3)]
    adj._values().mul_(0.5)                 # the next calls read the new values
    losses += [step(adj, x).item() for _ in range(2)]
    other = _adj(tg.tensor([0.5, -1.0, 2.0, 1.0]))
    losses += [step(other, x).item() for _ in range(2)]
    return losses, w.detach().numpy(), getattr(step, "stats", None)


def test_sparse_argument_compiled_equals_eager():
    eager, w_eager, _ = _train(False)
    comp, w_comp, stats = _train(True)
    np.testing.assert_allclose(comp, eager, rtol=1e-5)
    np.testing.assert_allclose(w_comp, w_eager, rtol=1e-5, atol=1e-7)
    assert stats["graph_breaks"] == [] and stats["traces"] >= 1


def test_sparse_argument_matches_torch():
    torch = pytest.importorskip("torch")
    eager, w_eager, _ = _train(False)
    w = torch.nn.Parameter(torch.tensor(W0))
    opt = torch.optim.SGD([w], lr=0.01)
    adj = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor([1.0, 2.0, 3.0, 4.0]), (3, 3))
    x, losses = torch.ones(3, 3), []
    for values in ([1.0, 2.0, 3.0, 4.0],) * 3 + ([0.5, 1.0, 1.5, 2.0],) * 2 + ([0.5, -1.0, 2.0, 1.0],) * 2:
        adj = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(values), (3, 3))
        opt.zero_grad()
        loss = (torch.spmm(adj, x @ w) ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(eager, losses, rtol=1e-5)
    np.testing.assert_allclose(w_eager, w.detach().numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("compiled", [False, True])
def test_sparse_leaf_argument_gets_its_grad(compiled):
    s = _adj(tg.tensor([1.0, 2.0, 3.0, 4.0])).requires_grad_()

    def f(s, x):
        y = tg.sparse.mm(s, x).sum()
        y.backward()
        return y

    if compiled:
        f = tg.compile(f)
    x = tg.ones(3, 2)
    for _ in range(3):
        f(s, x)
    dense = np.zeros((3, 3), np.float32)
    dense[tuple(IDX)] = 3 * 2.0             # three backwards, each d(sum)/ds_ij = 2 (columns of x)
    np.testing.assert_array_equal(s.grad.to_dense().numpy(), dense)


# ---- a new sparse batch on every call (SpyTorch's sparse_data_generator, round 46) --------------
def _spike_batches(T, n):
    """``n`` sparse COO batches made anew each time, as SpyTorch's generator makes them
    (``torch.sparse.FloatTensor(LongTensor, FloatTensor, Size)``): two index sets that repeat."""
    out = []
    for i in range(n):
        rs = np.random.RandomState(i % 2)
        dense = (rs.uniform(0, 1, (2, 5, 4)) > 0.6).astype(np.float32)
        idx = np.stack(np.nonzero(dense))
        out.append(T.sparse_coo_tensor(T.tensor(idx), T.tensor(dense[tuple(idx)] * (i + 1)), (2, 5, 4)))
    return out


def _spike_run(T, compiled):
    w = T.nn.Parameter(T.tensor(np.random.RandomState(5).randn(4, 3).astype(np.float32)))
    opt = T.optim.Adam([w], lr=0.01)

    def step(x_local):
        h = T.einsum("abc,cd->abd", (x_local.to_dense(), w))
        loss = h.max(1)[0].logsumexp(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = T.compile(step)
    losses = [step(x).item() for x in _spike_batches(T, 5)]
    return losses, w.detach().numpy(), getattr(step, "stats", None)


def test_new_sparse_batch_each_call_reuses_the_program():
    """The sparse argument is its indices and values, fed to the program: a batch made anew with
    an nnz seen before runs the program traced for it (keyed by identity, every batch traced a
    program of its own until ``cache_size_limit`` made the function eager)."""
    torch = pytest.importorskip("torch")
    ref, w_ref, _ = _spike_run(torch, False)
    eager, w_eager, _ = _spike_run(tg, False)
    comp, w_comp, stats = _spike_run(tg, True)
    np.testing.assert_allclose(eager, ref, rtol=1e-5)
    np.testing.assert_allclose(w_eager, w_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(comp, eager, rtol=1e-5)
    np.testing.assert_allclose(w_comp, w_eager, rtol=1e-5, atol=1e-7)
    # call 1 eager; calls 2-5 alternate between two index sets: one program each
    assert stats["graph_breaks"] == [] and stats["traces"] == 2, stats


def test_returned_sparse_argument_is_the_callers():
    f = tg.compile(lambda s, x: (s, (s.to_dense() * x).sum()))
    for s in _spike_batches(tg, 4):
        back, total = f(s, tg.ones(4))
        assert back is s
        np.testing.assert_allclose(total.item(), s.to_dense().sum().item(), rtol=1e-6)
    assert f.stats["graph_breaks"] == [] and f.stats["traces"] == 2, f.stats
