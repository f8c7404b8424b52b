"""Sparse COO tensors against torch: construction, metadata and repr, coalesce, to_dense/to_sparse,
add/mul/sum/mm and their gradients (w.r.t. values and the dense operand, a sparse leaf's .grad),
nn.Embedding(sparse=True)'s gradient, SGD/Adagrad/SparseAdam on it, and torch's errors."""
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]          # (0, 2) twice: uncoalesced
VAL = [1.0, 2.0, 3.0, 4.0]


def _np(t):
    return np.asarray(t.detach().numpy())


def _same_sparse(g, t, coalesced=True):
    """tracegrad sparse ``g`` equals torch sparse ``t``: layout, size, nnz, dtype, flag, entries."""
    assert g.is_sparse and g.layout is tracegrad.sparse_coo and t.layout is torch.sparse_coo
    assert tuple(g.shape) == tuple(t.shape) and g._nnz() == t._nnz()
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert (g.sparse_dim(), g.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    if coalesced:   # entry order: compare as torch lists them once coalesced
        assert g.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(_np(g._indices()), t._indices().numpy())
        np.testing.assert_allclose(_np(g._values()), t._values().detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(g.to_dense()), t.detach().to_dense().numpy(), rtol=1e-6)


def _both(fn):
    return fn(torch), fn(tracegrad)


def test_construction_metadata_and_repr_match_torch():
    cases = [lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 3)),
             lambda T: T.sparse_coo_tensor(T.tensor(IDX), T.tensor(VAL), (2, 3), dtype=T.float64, requires_grad=True),
             lambda T: T.sparse_coo_tensor(IDX, T.ones(4, 2)),                          # hybrid, size inferred
             lambda T: T.sparse_coo_tensor(T.zeros(2, 0, dtype=T.int64), T.zeros(0), (2, 3)),
             lambda T: T.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]]).to_sparse(),
             lambda T: T.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]]).to_sparse(1)]
    for make in cases:
        t, g = _both(make)
        _same_sparse(g, t)
        # the same text; lines may wrap elsewhere ("tracegrad.float64" is longer than torch's name)
        assert " ".join(repr(g).replace("tracegrad.", "torch.").split()) == " ".join(repr(t).split())
        assert (g.requires_grad, g.is_leaf, g.ndim, g.numel(), len(g)) == (t.requires_grad, t.is_leaf, t.ndim, t.numel(), len(t))
    assert tracegrad.ones(2).layout is tracegrad.strided and not tracegrad.ones(2).is_sparse
    assert repr(tracegrad.sparse_coo) == "tracegrad.sparse_coo" and repr(tracegrad.strided) == "tracegrad.strided"


def test_coalesce_indices_values_and_to_dense():
    t, g = _both(lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 3)))
    _same_sparse(g.coalesce(), t.coalesce())
    assert g.coalesce().coalesce() is g.coalesce().coalesce().coalesce() or g.coalesce().is_coalesced()
    c = g.coalesce()
    assert c.coalesce() is c                                   # already coalesced: itself, as torch
    np.testing.assert_array_equal(_np(c.indices()), t.coalesce().indices().numpy())
    np.testing.assert_array_equal(_np(c.values()), t.coalesce().values().numpy())
    for T, s in ((torch, t), (tracegrad, g)):
        with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
            s.indices()
        with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
            s.values()
    np.testing.assert_array_equal(_np(g._indices()), np.array(IDX))      # stored as given
    np.testing.assert_array_equal(_np(g.to_dense()), t.to_dense().numpy())


def test_arithmetic_matches_torch():
    def prog(T):
        a = T.sparse_coo_tensor(IDX, VAL, (2, 3))
        b = T.sparse_coo_tensor([[1], [1]], [7.0], (2, 3))
        d = T.arange(6.0).reshape(2, 3)
        x = T.ones(2, 3)
        x.add_(a, alpha=2)
        return dict(both_coalesced=a.coalesce() + b.coalesce(), uncoalesced=a + b, scaled=a * 2, rscaled=0.5 * a,
                    neg=-a, sub=a.coalesce() - b.coalesce(), dense_plus=d + a, dense_add=T.add(d, a, alpha=3),
                    inplace=x, div=a / 4, int_scalar=T.sparse_coo_tensor(IDX, [1, 2, 3, 4], (2, 3)) * 2.5)
    t, g = _both(prog)
    for k in t:
        if t[k].layout is torch.sparse_coo:
            _same_sparse(g[k], t[k], coalesced=k != "uncoalesced")
        else:
            assert not g[k].is_sparse, k
            np.testing.assert_allclose(_np(g[k]), t[k].numpy(), err_msg=k)


def test_sum_and_mm_values_match_torch():
    def prog(T):
        s = T.sparse_coo_tensor(IDX, VAL, (2, 3))
        h = T.sparse_coo_tensor([[0, 1, 0]], T.arange(6.0).reshape(3, 2), (2, 2))    # hybrid
        m = T.arange(6.0).reshape(3, 2)
        return dict(all=T.sparse.sum(s), all_method=s.sum(), all_fn=T.sum(s), dim1=T.sparse.sum(s, 1),
                    dim0=T.sparse.sum(s, 0), both=T.sparse.sum(s, (0, 1)), hybrid_dense=T.sparse.sum(h, 1),
                    hybrid_sparse=T.sparse.sum(h, 0), mm=T.sparse.mm(s, m), mm_fn=T.mm(s, m), spmm=T.spmm(s, m),
                    method=s.mm(m), matmul=s @ m)
    t, g = _both(prog)
    for k in t:
        assert g[k].is_sparse == t[k].is_sparse, k
        if t[k].is_sparse:
            _same_sparse(g[k], t[k])
        else:
            np.testing.assert_allclose(_np(g[k]), t[k].numpy(), rtol=1e-6, err_msg=k)


def test_gradients_through_to_dense_sum_and_mm():
    def prog(T):
        v = T.tensor(VAL, requires_grad=True)
        m = T.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2) - 2, requires_grad=True)
        s = T.sparse_coo_tensor(IDX, v, (2, 3))
        w = T.arange(6.0).reshape(2, 3)
        names = [type(s.grad_fn).__name__, s.is_leaf]
        outs = [(s.to_dense() * w).sum(), T.sparse.mm(s, m).pow(2).sum(), T.mm(s * 3, m).sum(), T.sparse.sum(s * 2),
                s.coalesce().to_dense().sum()]
        names += [type(o.grad_fn).__name__ for o in (s.to_dense(), T.sparse.mm(s, m), T.mm(s, m), s * 2, s.coalesce())]
        grads = [g.numpy() for o in outs
                 for g in T.autograd.grad(o, (v, m), allow_unused=True, materialize_grads=True, retain_graph=True)]
        return names, grads
    (nt, gt), (ng, gg) = _both(prog)
    assert nt == ng
    for a, b in zip(gt, gg):
        np.testing.assert_allclose(np.asarray(b), a, rtol=1e-6)


def test_sparse_leaf_grad_matches_torch():
    def prog(T):
        s = T.sparse_coo_tensor(IDX, VAL, (2, 3), requires_grad=True)
        (s.to_dense() * T.arange(6.0).reshape(2, 3)).sum().backward()
        T.sparse.mm(s, T.ones(3, 2)).sum().backward()     # accumulates
        return s
    t, g = _both(prog)
    assert g.is_leaf and g.grad_fn is None
    _same_sparse(g.grad, t.grad, coalesced=False)
    np.testing.assert_array_equal(_np(g.grad._indices()), t.grad._indices().numpy())
    g.grad = None
    assert g.grad is None


def _embedding_grad(T, padding_idx, sparse=True):
    e = T.nn.Embedding(5, 3, sparse=sparse, padding_idx=padding_idx)
    x = T.tensor([[0, 2, 1], [2, 4, 0]])
    w = T.arange(18.0).reshape(2, 3, 3)
    (e(x) * w).sum().backward()
    (T.nn.functional.embedding(x[:1], e.weight, sparse=sparse) * 2).sum().backward()   # accumulates
    return e.weight.grad, type(e(x).grad_fn).__name__


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_grad_matches_torch(padding_idx):
    (t, nt), (g, ng) = _both(lambda T: _embedding_grad(T, padding_idx))
    assert ng == nt == "EmbeddingBackward0"
    assert not g.is_coalesced() and g.is_sparse
    _same_sparse(g, t, coalesced=False)
    np.testing.assert_array_equal(_np(g._indices()), t._indices().numpy())   # one entry per lookup, in order
    np.testing.assert_allclose(_np(g._values()), t._values().numpy())
    dense, _ = _embedding_grad(tracegrad, padding_idx, sparse=False)
    np.testing.assert_allclose(_np(g.to_dense()), _np(dense))


SPARSE_OPTIMS = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
                 ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)), ("Adagrad", dict(lr=0.1)),
                 ("Adagrad", dict(lr=0.1, lr_decay=0.1, maximize=True, initial_accumulator_value=0.1)),
                 ("SparseAdam", dict(lr=0.1)), ("SparseAdam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True))]


def _train_embedding(T, name, kw, steps=3):
    e = T.nn.Embedding(5, 3, sparse=True, padding_idx=1)
    with T.no_grad():
        e.weight.copy_(T.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)))
    opt = getattr(T.optim, name)(e.parameters(), **kw)
    x = T.tensor([[0, 2, 1], [2, 4, 0]])
    for i in range(steps):
        opt.zero_grad()
        (e(x) * T.arange(18.0).reshape(2, 3, 3) * (i + 1) / 10).sum().backward()
        opt.step()
    return e.weight, opt


@pytest.mark.parametrize("name,kw", SPARSE_OPTIMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SPARSE_OPTIMS)])
def test_optimizers_step_on_sparse_grads_like_torch(name, kw):
    (wt, ot), (wg, og) = _both(lambda T: _train_embedding(T, name, kw))
    np.testing.assert_allclose(_np(wg), wt.detach().numpy(), rtol=1e-6, atol=1e-6)
    st, sg = ot.state[wt], og.state[wg]
    assert list(st) == list(sg)
    for k, v in st.items():
        if isinstance(v, torch.Tensor):
            assert sg[k].is_sparse == v.is_sparse, k
            np.testing.assert_allclose(_np(sg[k].to_dense()), v.to_dense().numpy(), rtol=1e-6, atol=1e-6, err_msg=k)
        else:
            assert sg[k] == v, k


@pytest.mark.parametrize("name,kw,msg", [
    ("Adam", {}, "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", {}, "Adam does not support sparse gradients"), ("RMSprop", {}, "RMSprop does not support sparse"),
    ("Adadelta", {}, "Adadelta does not support sparse"), ("NAdam", {}, "NAdam does not support sparse"),
    ("Adafactor", {}, "Adafactor does not support sparse"), ("Muon", {}, "Muon does not support sparse"),
    ("SGD", dict(weight_decay=0.1), r"add\(sparse, dense\) is not supported"),
    ("Adagrad", dict(weight_decay=0.1), "weight_decay option is not compatible with sparse gradients")])
def test_optimizers_refuse_sparse_grads_like_torch(name, kw, msg):
    for T in (torch, tracegrad):
        with pytest.raises(RuntimeError, match=msg):
            _train_embedding(T, name, kw, steps=1)


def test_sparse_adam_errors_match_torch():
    for T in (torch, tracegrad):
        p = T.nn.Parameter(T.ones(3))
        p.grad = T.ones(3)
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            T.optim.SparseAdam([p]).step()
        with pytest.raises(ValueError, match="Invalid learning rate"):
            T.optim.SparseAdam([p], lr=0.0)
        with pytest.raises(ValueError, match="SparseAdam requires dense parameter tensors"):
            T.optim.SparseAdam([T.ones(3).to_sparse()])


@pytest.mark.parametrize("case", ["exp", "view", "getitem", "relu", "cat", "gt", "mean"])
def test_unsupported_ops_raise_not_implemented_naming_the_op(case):
    s = tracegrad.sparse_coo_tensor(IDX, VAL, (2, 3))
    calls = {"exp": lambda: s.exp(), "view": lambda: s.view(6), "getitem": lambda: s[0],
             "relu": lambda: tracegrad.nn.functional.relu(s), "cat": lambda: tracegrad.cat([s, s]),
             "gt": lambda: s > 0, "mean": lambda: s.mean()}
    with pytest.raises(NotImplementedError, match=f"'aten::{case}' with arguments from the 'SparseCPU' backend") as e:
        calls[case]()
    assert "jax" not in str(e.value).lower()
    if case in ("exp", "view"):   # torch raises the same class for these
        with pytest.raises(NotImplementedError, match=f"aten::{case}"):
            getattr(torch.sparse_coo_tensor(IDX, VAL, (2, 3)), case)(*([6] if case == "view" else []))


ERRORS = [(lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 2)), RuntimeError, "size is inconsistent with indices"),
          (lambda T: T.sparse_coo_tensor(IDX, [1.0, 2.0, 3.0], (2, 3)), RuntimeError, "indices and values must have same nnz"),
          (lambda T: T.sparse_coo_tensor(IDX, VAL, (6,)), RuntimeError, "len\\(size\\) == sparse_dim \\+ dense_dim"),
          (lambda T: T.mm(T.sparse_coo_tensor(IDX, VAL, (2, 3)), T.ones(4, 2)), RuntimeError, "Expected dim 0 size 3, got 4"),
          (lambda T: T.mm(T.sparse_coo_tensor(IDX, VAL, (2, 3)), T.ones(3, 2, dtype=T.float64)), RuntimeError,
           "expected scalar type Float but found Double"),
          (lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 3)) + T.sparse_coo_tensor(IDX, VAL, (3, 3)), RuntimeError,
           "add: expected sizes of 'self' and 'other' to match"),
          (lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 3)) + T.ones(2, 3), RuntimeError, r"add\(sparse, dense\) is not supported"),
          (lambda T: T.sparse_coo_tensor(IDX, VAL, (2, 3)).numpy(), TypeError, "can't convert Sparse layout tensor to numpy")]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    make, cls, msg = ERRORS[i]
    for T in (torch, tracegrad):
        kw = dict(check_invariants=True) if i == 0 and T is torch else {}   # tracegrad always checks bounds
        with pytest.raises(cls, match=msg):
            if kw:
                T.sparse_coo_tensor(IDX, VAL, (2, 2), **kw)
            else:
                make(T)


def test_lbfgs_densifies_sparse_grads_like_torch():
    def prog(T):
        e = T.nn.Embedding(5, 3, sparse=True)
        with T.no_grad():
            e.weight.copy_(T.arange(15.0).reshape(5, 3) / 10)
        opt = T.optim.LBFGS(e.parameters(), lr=0.5, max_iter=3)
        x = T.tensor([0, 2, 2])

        def closure():
            opt.zero_grad()
            loss = e(x).pow(2).sum()
            loss.backward()
            return loss.detach()
        opt.step(closure)
        return e.weight
    t, g = _both(prog)
    np.testing.assert_allclose(_np(g), t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_dense_factories_refuse_a_sparse_layout_instead_of_a_dense_result():
    s = tracegrad.sparse_coo_tensor(IDX, VAL, (2, 3))
    ts = torch.sparse_coo_tensor(IDX, VAL, (2, 3))
    # zeros/zeros_like give torch's sparse result: no stored entries (round 36), never a dense one
    for z, tz in ((tracegrad.zeros_like(s), torch.zeros_like(ts)),
                  (tracegrad.zeros(2, layout=tracegrad.sparse_coo), torch.zeros(2, layout=torch.sparse_coo))):
        assert tz.is_sparse and z.is_sparse
        assert (tuple(z.shape), z._nnz()) == (tuple(tz.shape), tz._nnz())
    with pytest.raises(NotImplementedError, match="sparse_coo_tensor or Tensor.to_sparse"):
        tracegrad.ones_like(s)
    assert tracegrad.zeros(2, layout=tracegrad.strided).layout is tracegrad.strided


def test_module_and_copy_helpers():
    import copy
    s = tracegrad.sparse_coo_tensor(IDX, VAL, (2, 3), requires_grad=True)
    c = copy.deepcopy(s)
    assert c is not s and c.requires_grad and not c.is_coalesced()
    np.testing.assert_array_equal(_np(c.to_dense()), _np(s.to_dense()))
    with pytest.raises(NotImplementedError, match="nn.Parameter of a sparse COO tensor"):
        tracegrad.nn.Parameter(s.detach())


@pytest.mark.parametrize("mode,padding_idx,weighted", [("mean", 1, False), ("sum", None, True)])
def test_embedding_bag_sparse_grad_matches_torch(mode, padding_idx, weighted):
    def prog(T):
        e = T.nn.EmbeddingBag(5, 3, sparse=True, mode=mode, padding_idx=padding_idx)
        with T.no_grad():
            e.weight.copy_(T.arange(15.0).reshape(5, 3))
        w = T.tensor([1.0, 2, 3, 4, 5]) if weighted else None
        y = e(T.tensor([0, 1, 2, 1, 3]), T.tensor([0, 2]), per_sample_weights=w)
        (y * T.arange(6.0).reshape(2, 3)).sum().backward()
        return y, type(y.grad_fn).__name__, e.weight.grad
    (yt, nt, gt), (yg, ng, gg) = _both(prog)
    assert ng == nt
    np.testing.assert_allclose(_np(yg), yt.detach().numpy())
    _same_sparse(gg, gt, coalesced=False)
    np.testing.assert_array_equal(_np(gg._indices()), gt._indices().numpy())
    np.testing.assert_allclose(_np(gg._values()), gt._values().numpy())
    for T in (torch, tracegrad):
        with pytest.raises(ValueError, match="max mode does not support sparse weights"):
            T.nn.EmbeddingBag(5, 3, sparse=True, mode="max")(T.tensor([[0, 1]]))


@pytest.mark.parametrize("args", [lambda T: (T.tensor(IDX), T.tensor(VAL), (2, 3)),   # uncoalesced, kept
                                  lambda T: (T.tensor(IDX), T.tensor([1, 2, 3, 4])),    # values' dtype kept
                                  lambda T: (2, 3), lambda T: ()])
@pytest.mark.filterwarnings("ignore:torch.sparse.SparseTensor")
def test_legacy_typed_sparse_constructors_match_torch(args):
    """torch.sparse.FloatTensor(indices, values[, size]), or sizes."""
    t, g = _both(lambda T: T.sparse.FloatTensor(*args(T)))
    _same_sparse(g, t, coalesced=False)
    assert isinstance(g, tracegrad.sparse.FloatTensor) == isinstance(t, torch.sparse.FloatTensor)
    assert not isinstance(tracegrad.zeros(2), tracegrad.sparse.FloatTensor)
    assert isinstance(tracegrad.sparse.DoubleTensor(2), tracegrad.sparse.DoubleTensor)


def test_legacy_typed_sparse_constructors_warn_once_per_form_as_torch():
    """Deprecated, with torch's message, once per process and form (torch's TORCH_WARN_ONCE): the
    once-registry is cleared here so the first call warns whatever ran before."""
    from tracegrad._ops import warn as _warn_mod
    forms = [lambda T: (T.tensor(IDX), T.tensor(VAL), (2, 3)), lambda T: (2, 3), lambda T: ()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in forms:
            torch.sparse.FloatTensor(*f(torch))     # torch's once-flags are now spent, as ours will be
    for f in forms:
        _warn_mod._WARNED_ONCE -= {m for m in _warn_mod._WARNED_ONCE
                                   if isinstance(m, str) and m.startswith("torch.sparse.SparseTensor(")}
        with pytest.warns(UserWarning, match=r"torch\.sparse\.SparseTensor\(.*is deprecated") as first:
            tracegrad.sparse.FloatTensor(*f(tracegrad))
        assert len(first) == 1
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            tracegrad.sparse.FloatTensor(*f(tracegrad))
            torch.sparse.FloatTensor(*f(torch))
        assert again == []


@pytest.mark.parametrize("args, exc", [(lambda T: (T.tensor(IDX).int(), T.tensor(VAL), (2, 3)), RuntimeError),
                                       (lambda T: ([1, 2],), TypeError)])
def test_legacy_typed_sparse_constructor_errors_match_torch(args, exc):
    for T in (torch, tracegrad):
        with pytest.raises(exc):
            T.sparse.FloatTensor(*args(T))


@pytest.mark.parametrize("op", ["mul_", "div_", "neg_"])
@pytest.mark.parametrize("coalesce", [False, True])
def test_inplace_scalar_ops_alias_values_as_torch(op, coalesce):
    """torch's sparse ``mul_`` gives self a new values tensor and marks it uncoalesced (values
    taken earlier with ``_values()`` keep their numbers), while ``div_``/``neg_`` change the values
    tensor in place and keep the flag: poincare-embeddings' RiemannianSGD relies on the first."""
    seen = []
    for mod in (torch, tracegrad):
        s = mod.sparse_coo_tensor(mod.tensor(IDX), mod.tensor(VAL), (2, 3))
        if coalesce:
            s = s.coalesce()
        held = s._values()
        out = getattr(s, op)(*(() if op == "neg_" else (2.0,)))
        seen.append((out is s, s.is_coalesced(), _np(held).tolist(), _np(s.to_dense()).tolist()))
    assert seen[0] == seen[1]


def test_inplace_mul_dtype_error_matches_torch():
    for mod in (torch, tracegrad):
        s = mod.sparse_coo_tensor(mod.tensor(IDX), mod.tensor([1, 2, 3, 4]), (2, 3))
        with pytest.raises(RuntimeError):
            s.mul_(2.5)


@pytest.mark.parametrize("create_graph", [False, True])
def test_dense_grad_into_sparse_dot_grad_gives_dense_sum_like_torch(create_graph):
    # AccumulateGrad with a sparse .grad and a dense incoming gradient: a new dense .grad (dense
    # + sparse), also under create_graph, where sparse + dense used to raise
    def prog(T):
        p = T.tensor([1.5, 1.5]).requires_grad_()
        p.grad = T.sparse_coo_tensor(T.tensor([[1, 1]]), T.tensor([1.0, 2.0]))
        old = p.grad
        p.backward(T.tensor([0.5, 0.25]), create_graph=create_graph)
        return p.grad, p.grad is old
    (t, t_same), (g, g_same) = _both(prog)
    assert g_same == t_same and g.is_sparse == t.is_sparse
    np.testing.assert_allclose(_np(g.to_dense()), t.detach().to_dense().numpy())


def test_scalar_to_sparse_transpose_and_functional_div_match_torch():
    # a 0-dim tensor's to_sparse() (no sparse dims; nnz 0 or 1), t()/transpose of sparse tensors
    # (index rows swapped, uncoalesced), and torch.div/true_divide(sparse, number) (sparse div)
    progs = [lambda T: T.tensor(1.5).to_sparse(), lambda T: T.tensor(0.0).to_sparse(),
             lambda T: T.tensor(1.5).to_sparse().t(),
             lambda T: T.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse().t(),
             lambda T: T.transpose(T.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse(), 1, 0),
             lambda T: T.arange(3.0).to_sparse().t(),
             lambda T: T.true_divide(T.tensor([0, 3, -4]).to_sparse(), 2),
             lambda T: T.div(T.tensor([[0.0, 3.0], [1.0, 0.0]]).to_sparse(), 4)]
    for p in progs:
        t, g = _both(p)
        _same_sparse(g, t)
    for p in (lambda T: T.zeros(3).to_sparse(0), lambda T: T.ones(2, 2, 2).to_sparse().t(),
              lambda T: T.ones(2, 2).to_sparse(1).t(), lambda T: T.ones(2, 2, 2).to_sparse(2).transpose(0, 2)):
        with pytest.raises(RuntimeError) as te:
            p(torch)
        with pytest.raises(RuntimeError) as ge:
            p(tracegrad)
        assert str(ge.value).split(" (")[0].split(";")[0][:40] == str(te.value)[:40]
