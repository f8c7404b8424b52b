"""Basic indexing records torch's chain of nodes (NOTE [indexing nodes as torch]): one
``SelectBackward0`` / ``SliceBackward0`` / ``UnsqueezeBackward0`` per key entry, in torch's
order, each with torch's ``_saved_*`` attributes (and listed by ``dir``), the gradients flowing
through each node as torch's do; and the saved attributes of other common nodes."""
import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")

KEYS = ["x[1:3, 1:3]", "x[0]", "x[1:3]", "x[:, 2]", "x[..., 1]", "x[:, None]", "x[None]",
        "x[::2, -1]", "x[1, 2, 3]", "x[:]", "x[-3:-1]", "x[:, :, ::3]", "x[0, :, 1:4]",
        "x[..., None, 2:]", "x[:, 0:5]", "x[:, 0:100]", "x[(slice(0, 4),)]", "x[:, :]", "x[...]",
        "x[1:100]", "x[-100:2]", "x[3:1]", "x[None, 0]", "x[0][None]", "x[-1, -1]", "x[:, -5:]",
        "x[1:3, [0, 1]]", "x[[0, 1], 1:3]", "x[None, ..., 0]", "x[1, ..., None, ::2]",
        "x[x[:, 0, 0] > 0, 1:3]", "x[True]"]


def chain(t):
    """``[(name, {saved attr: value}), ...]`` from ``t.grad_fn`` down its first edges."""
    out, fn = [], t.grad_fn
    while fn is not None and "AccumulateGrad" not in fn.name():
        saved = {}
        for a in dir(fn):
            if a.startswith("_saved_") and a != "_saved_tensors":
                v = getattr(fn, a)
                saved[a] = tuple(v.shape) if hasattr(v, "shape") and not isinstance(v, tuple) else (
                    tuple(tuple(i.shape) if hasattr(i, "shape") else i for i in v) if isinstance(v, tuple) else v)
        out.append((fn.name(), saved))
        fn = fn.next_functions[0][0]
    return out


@pytest.mark.parametrize("key", KEYS)
def test_chain_and_saved_attributes_as_torch(key):
    data = np.random.default_rng(0).standard_normal((4, 5, 6)).astype(np.float32)
    res = {}
    for mod in (tracegrad, torch):
        x = mod.tensor(data, requires_grad=True)
        y = eval(key, {"x": x})
        nodes = chain(y)      # (before backward frees the saved index tensors, as torch's)
        y.pow(2).sum().backward()
        res[mod.__name__] = (nodes, tuple(y.shape), x.grad.numpy())
    (gc, gs, gg), (tc, ts, tg) = res["tracegrad"], res["torch"]
    assert gc == tc
    assert gs == ts
    np.testing.assert_allclose(gg, tg, rtol=1e-6)


def test_hooks_on_each_node_see_torch_gradients():
    """A hook on each node of ``x[1:3, 0, None]``'s chain gets the gradient of that node's
    output, as torch's do (the chain is real, not a name)."""
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    seen = {}
    for mod in (tracegrad, torch):
        x = mod.tensor(data, requires_grad=True)
        y = x[1:3, 0, None]
        log = seen[mod.__name__] = []
        fn = y.grad_fn
        while "AccumulateGrad" not in fn.name():
            fn.register_hook(lambda gi, go, name=fn.name(): log.append(
                (name, [tuple(g.shape) for g in gi if g is not None], [g.numpy().tolist() for g in go])))
            fn = fn.next_functions[0][0]
        (y * mod.tensor([[1.0], [2.0]])).sum().backward()
    assert seen["tracegrad"] == seen["torch"]
    assert [n for n, _, _ in seen["torch"]] == ["UnsqueezeBackward0", "SelectBackward0", "SliceBackward0"]


def test_no_grad_keys_and_in_place_through_chained_views():
    """Without history one program reads the key; with it, writing through a chained view
    rebases the base's history (CopySlices) and the gradients match torch's."""
    data = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    grads = {}
    for mod in (tracegrad, torch):
        with mod.no_grad():
            v = mod.tensor(data)[1:3, 2:4]
        assert v.grad_fn is None and tuple(v.shape) == (2, 2)
        w = mod.tensor(data, requires_grad=True)
        base = w * 1
        view = base[1:3, ::2]
        view.mul_(3)
        assert base.grad_fn.name().endswith("CopySlices")
        (base.sum() + view.sum()).backward()
        grads[mod.__name__] = w.grad.numpy()
    np.testing.assert_allclose(grads["tracegrad"], grads["torch"])


NODES = ["x.view(20)", "x.transpose(0, 1)", "x.permute(1, 0)", "x.unsqueeze(-1)", "x.unsqueeze(1)",
         "x[:, :1].squeeze(1)", "x[:, :1].squeeze(-1)", "x.squeeze(0)", "x.expand(2, 4, 5)", "x.sum(1)",
         "x.mean(0)", "x.softmax(1)", "x.cumsum(1)", "x.flip(0)", "x.roll(1, 0)", "x.diagonal()",
         "x.repeat(2, 1)", "x.unbind(1)[0]", "x.narrow(1, 1, 2)", "x.select(1, -1)", "x.prod(1)",
         "x.std(1)", "x.amax(1)", "x.logsumexp(1)", "M.cat([x, x], 1)", "M.stack([x, x])", "x.mT",
         "x.tril()", "x.unfold(1, 2, 1)", "x.movedim(0, 1)", "x.split(2)[0]", "x.chunk(2, 1)[1]",
         "x.gather(1, M.tensor([[0], [1], [2], [3]]))", "x.as_strided((2, 2), (1, 2))",
         "x.as_strided((2, 2), (1, 2), 3)", "x.as_strided((2, 2), (1, 2), 0)", "M.nn.functional.pad(x, (1, 1, 0, 0))",
         "M.nn.functional.pad(x, (1, 2))", "x.topk(2).values", "x.sort(1).values", "x.kthvalue(2, 1).values",
         "x.median(1).values", "x.cummax(1).values", "M.nn.functional.elu(x, 0.5)",
         "M.nn.functional.layer_norm(x, (5,))", "x[1:3, [0, 1]]", "M.nn.functional.selu(x - 3)",
         "M.nn.functional.celu(x - 3, 2.0)"]


def _plain(v):
    """A saved value to compare across libraries: a tensor as its shape and values."""
    if hasattr(v, "shape") and not isinstance(v, tuple):
        return ("tensor", tuple(v.shape), np.round(np.asarray(v.detach().numpy(), dtype=np.float64), 4).tolist())
    if isinstance(v, (tuple, list)):
        return tuple(_plain(i) for i in v)
    return v


@pytest.mark.parametrize("expr", NODES)
def test_saved_attributes_of_common_nodes_as_torch(expr):
    """Each ``_saved_*`` torch's node lists, tracegrad's lists too with the same value."""
    got = {}
    for mod in (tracegrad, torch):
        x = mod.tensor(np.arange(20.0, dtype=np.float32).reshape(4, 5) % 7, requires_grad=True)
        fn = eval(expr, {"x": x, "M": mod}).grad_fn
        names = sorted(a for a in dir(fn) if a.startswith("_saved_") and a != "_saved_tensors")
        got[mod.__name__] = (fn.name(), names, [_plain(getattr(fn, a)) for a in names])
    tname, tnames, tvals = got["torch"]
    gname, gnames, gvals = got["tracegrad"]
    assert gname == tname
    assert set(tnames) <= set(gnames)
    assert [gvals[gnames.index(n)] for n in tnames] == tvals
