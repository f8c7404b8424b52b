"""The 'meta' device (NOTE [meta tensors] in ``_tensor/meta.py``) and ``with device(...)``
against torch 2.13: what programs read of meta tensors (device, shape, dtype, repr), torch's
errors for reading their data, ``Module.to('meta')``/``to_empty``, factories inside
``with device('meta')`` (the model-ensembling tutorial's meta skeleton is a program test in
tests/api/test_public_programs_round3.py)."""
import pytest

import tracegrad

torch = pytest.importorskip("torch")

LIBS = (tracegrad, torch)


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(2, 3, device="meta"),
    lambda lib: lib.zeros(0, device="meta"),
    lambda lib: lib.tensor(3.0, device="meta"),
    lambda lib: lib.empty(2, 2, dtype=lib.int64, device=lib.device("meta")),
    lambda lib: lib.randn(4, device="meta"),
    lambda lib: lib.ones(2, 3).to("meta"),
])
def test_meta_factories_and_repr(make):
    ours, theirs = make(tracegrad), make(torch)
    assert str(ours.device) == str(theirs.device) == "meta"
    assert ours.is_meta and theirs.is_meta
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert repr(ours).replace("tracegrad.", "torch.") == repr(theirs)


@pytest.mark.parametrize("read,error", [
    (lambda t: t[:1].reshape(()).item() if t.numel() else None, RuntimeError),
    (lambda t: t.tolist(), NotImplementedError),
    (lambda t: t.numpy(), TypeError),
    (lambda t: t.to("cpu"), NotImplementedError),
    (lambda t: bool(t[0, 0]), RuntimeError),
])
def test_reading_meta_data_raises_as_torch(read, error):
    for lib in LIBS:
        t = lib.ones(2, 3, device="meta")
        with pytest.raises(error):
            read(t)
    assert not tracegrad.ones(2).is_meta


def test_module_to_meta_and_to_empty():
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        w = m[0].weight
        m.to("meta")
        # a meta tensor's data cannot be swapped in place: new Parameter objects, as torch
        assert m[0].weight is not w and type(m[0].weight).__name__ == "Parameter" and m[0].weight.requires_grad
        assert not w.is_meta
        assert all(p.is_meta for p in m.parameters()) and all(b.is_meta for b in m.buffers())
        m.to_empty(device="cpu")
        assert not any(p.is_meta for p in m.parameters()) and str(m[0].weight.device) == "cpu"
        assert tuple(m[0].weight.shape) == (4, 3) and m[1].num_batches_tracked.dtype == lib.int64


def test_device_as_context_manager():
    for lib in LIBS:
        with lib.device("meta"):
            layer = lib.nn.Linear(2, 5)
            inner_default = str(lib.zeros(1).device)
            with lib.device("cpu"):
                assert str(lib.zeros(1).device) == "cpu"
            assert str(lib.zeros(1).device) == "meta"
        assert inner_default == "meta" and layer.weight.is_meta
        assert str(lib.zeros(1).device) == "cpu"
    import jax
    assert jax.config.jax_default_device is None      # the user's JAX setting is back


def test_device_names():
    assert str(tracegrad.device("meta")) == "meta" and repr(tracegrad.device("meta")) == repr(torch.device("meta"))
    with pytest.raises(RuntimeError):
        tracegrad.device("nosuch")


_META_OPS = {
    "add scalar": lambda T, m, c: m + 1,
    "matmul": lambda T, m, c: m @ T.ones(3, 2, device="meta"),
    "with 0-d cpu": lambda T, m, c: m + T.tensor(1.0),
    "sum": lambda T, m, c: m.sum(),
    "index view": lambda T, m, c: m[0],
    "relu": lambda T, m, c: T.nn.functional.relu(m),
    "cat": lambda T, m, c: T.cat([m, m]),
    "max dim": lambda T, m, c: m.max(0),
    "compare": lambda T, m, c: m > 0,
    "linear": lambda T, m, c: T.nn.Linear(3, 4, device="meta")(m),
    "with cpu tensor": lambda T, m, c: m + c,
}


@pytest.mark.parametrize("case", list(_META_OPS))
def test_ops_on_meta_tensors_give_meta_tensors(case):
    """Each result's device and shape (or torch's error class) as torch's."""
    torch = pytest.importorskip("torch")

    def run(T):
        m, c = T.ones(2, 3, device="meta"), T.ones(2, 3)
        try:
            r = _META_OPS[case](T, m, c)
        except RuntimeError as e:
            return "RuntimeError", "meta" in str(e)
        rs = tuple(r) if isinstance(r, tuple) else (r,)
        return [(str(x.device), tuple(x.shape), str(x.dtype).replace("torch.", "").replace("tracegrad.", ""))
                for x in rs]
    assert run(tracegrad) == run(torch)
    assert tracegrad.ones(2).add(1).device.type == "cpu"     # plain tensors stay as they were


# ---- data-free meta tensors (NOTE [meta tensors] in _tensor/meta.py) ---------------------------
# A (10**6, 10**6) float32 tensor is 4 TB: each case below would fail with a MemoryError if any
# step allocated the elements, so passing at all shows that nothing was.
HUGE = 10 ** 6


def _described(lib, make):
    """What a program observes of ``make(lib)``'s results: (device, shape, dtype) per tensor,
    other values as they are, or the class of the exception it raised."""
    try:
        out = make(lib)
    except (RuntimeError, TypeError, NotImplementedError, IndexError, ValueError) as e:
        return type(e).__name__
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [(str(x.device), tuple(x.shape), str(x.dtype).split(".")[-1]) if hasattr(x, "shape") else x
            for x in outs]


def _in_meta(lib, build):
    with lib.device("meta"):
        return build()


_HUGE_CASES = {
    "zeros": lambda T: T.zeros(HUGE, HUGE, device="meta"),
    "ones int": lambda T: T.ones(HUGE, HUGE, dtype=T.int64, device="meta"),
    "full": lambda T: T.full((HUGE, HUGE), 2.0, device="meta"),
    "empty channels_last": lambda T: T.empty(HUGE, 3, HUGE, 1, device="meta", memory_format=T.channels_last),
    "rand": lambda T: T.rand(HUGE, HUGE, device="meta"),
    "randn": lambda T: T.randn(HUGE, HUGE, device="meta"),
    "randint": lambda T: T.randint(0, 5, (HUGE, HUGE), device="meta"),
    "arange": lambda T: T.arange(HUGE * HUGE, device="meta"),
    "eye": lambda T: T.eye(HUGE, device="meta"),
    "*_like": lambda T: [f(T.zeros(HUGE, HUGE, device="meta")) for f in (T.zeros_like, T.ones_like, T.empty_like,
                                                                          T.rand_like, T.randn_like)],
    "full_like": lambda T: T.full_like(T.zeros(HUGE, HUGE, device="meta"), 3),
    "new_*": lambda T: [f((HUGE, HUGE)) for f in (T.zeros(2, device="meta").new_zeros, T.zeros(2, device="meta").new_ones,
                                                   T.zeros(2, device="meta").new_empty)],
    "inside with device": lambda T: _in_meta(T, lambda: T.zeros(HUGE, HUGE)),
    "Linear inside with device": lambda T: list(_in_meta(T, lambda: T.nn.Linear(HUGE, HUGE)).parameters()),
    "Linear device=": lambda T: list(T.nn.Linear(HUGE, HUGE, device="meta").parameters()),
    "Embedding device=": lambda T: list(T.nn.Embedding(HUGE, HUGE, device="meta").parameters()),
    "nn.init": lambda T: [f(T.empty(HUGE, HUGE, device="meta")) for f in (
        T.nn.init.kaiming_uniform_, T.nn.init.xavier_normal_, T.nn.init.trunc_normal_, T.nn.init.zeros_,
        T.nn.init.normal_, lambda t: T.nn.init.constant_(t, 2.0))],
    "in-place": lambda T: T.zeros(HUGE, HUGE, device="meta").add_(1).mul_(2).fill_(3).zero_().normal_().uniform_(),
    "views": lambda T: [T.zeros(HUGE, HUGE, device="meta").t(), T.zeros(HUGE, HUGE, device="meta")[::2, 3],
                        T.zeros(HUGE, 1, device="meta").expand(HUGE, HUGE), T.zeros(HUGE, HUGE, device="meta").view(-1)],
    "Linear forward and backward": lambda T: _linear_grads(T, T.nn.Linear(HUGE, HUGE, device="meta")),
    "storage": lambda T: (T.zeros(HUGE, HUGE, device="meta").untyped_storage().nbytes(),
                          T.zeros(HUGE, HUGE, device="meta").data_ptr()),
}


def _linear_grads(T, layer):
    out = layer(T.ones(4, HUGE, device="meta"))
    out.sum().backward()
    return [out, layer.weight.grad, layer.bias.grad]


@pytest.mark.parametrize("case", list(_HUGE_CASES))
def test_huge_meta_tensors_hold_no_data(case):
    ours, theirs = _described(tracegrad, _HUGE_CASES[case]), _described(torch, _HUGE_CASES[case])
    assert ours == theirs
    assert isinstance(ours, list)      # made, not refused


def test_module_to_meta_and_pickling_keep_no_data():
    import io
    import pickle
    m = tracegrad.nn.Linear(3, 2).to("meta")
    assert m.weight.is_meta and m.weight.untyped_storage().data_ptr() == 0
    buf = io.BytesIO()
    tracegrad.save({"w": m.weight, "row": m.weight[1]}, buf)
    buf.seek(0)
    back = tracegrad.load(buf)
    assert back["w"].is_meta and tuple(back["row"].shape) == (3,) and back["row"].is_meta
    st = pickle.loads(pickle.dumps(m.weight.untyped_storage()))
    assert st.device.type == "meta" and st.nbytes() == 24 and st.data_ptr() == 0


def _transformer(T):
    T.manual_seed(0)
    m = T.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                         dropout=0.0, device="meta")
    return m(T.ones(5, 2, 8, device="meta"), T.ones(3, 2, 8, device="meta"))


def _encoder_backward(T):
    layer = T.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, device="meta")
    out = layer(T.ones(2, 5, 8, device="meta"))
    out.sum().backward()
    return [out] + [p.grad for p in layer.parameters()]


def _conv_backward(T):
    conv = T.nn.Conv2d(3, 4, 3, stride=2, device="meta")
    x = T.ones(2, 3, 8, 8, device="meta", requires_grad=True)
    y = conv(x)
    y.pow(2).mean().backward()
    return y, x.grad, conv.weight.grad, conv.bias.grad


def _layer_norm(T):
    ln = T.nn.LayerNorm(8, device="meta")
    x = T.randn(3, 8, device="meta", requires_grad=True)
    y = ln(x)
    y.sum().backward()
    return y, x.grad, ln.weight.grad


def _embedding(T):
    emb = T.nn.Embedding(10, 4, device="meta")
    y = emb(T.tensor([[1, 2], [3, 4]], device="meta"))
    y.sum().backward()
    return y, emb.weight.grad, emb(T.tensor([1, 2]))     # CPU indices index a meta weight, as torch


def _matmul_backward(T):
    x = T.zeros(4, 6, device="meta", requires_grad=True)
    w = T.ones(6, 3, device="meta", requires_grad=True)
    loss = (x @ w).relu().sum()
    loss.backward()
    return loss, x.grad, w.grad, type(loss.grad_fn).__name__, x.is_leaf


def _views_backward(T):
    x = T.zeros(4, 6, device="meta", requires_grad=True)
    y = x.clone()
    y[1:].mul_(2)
    a, b = y.split([2, 4], 1)
    values, indices = b.max(1)
    (a.sum() + values.sum()).backward()
    return x.grad, indices, type(y.grad_fn).__name__


def _in_place(T):
    x = T.zeros(4, 6, device="meta")
    v = x._version
    x.add_(1)
    x[0].mul_(2)
    x.copy_(T.ones(4, 6))        # a meta tensor may be written from the CPU
    x.fill_(2.0).zero_().normal_().uniform_(-1, 1)
    x.add_(T.ones(4, 6))
    return x, x._version - v


def _load_assign(T):
    with T.device("meta"):
        m = T.nn.Linear(3, 2)
    sd = T.nn.Linear(3, 2).state_dict()
    m.load_state_dict(sd, assign=True)
    return [m.weight, m.bias, type(m.weight).__name__, m.weight.requires_grad, bool((m.weight == sd["weight"]).all())]


def _to_empty(T):
    with T.device("meta"):
        m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4))
    m.to_empty(device="cpu")
    return list(m.parameters()) + list(m.buffers()) + [m(T.ones(2, 3))]


_PROGRAMS = {
    "Transformer": _transformer,
    "TransformerEncoderLayer backward": _encoder_backward,
    "MultiheadAttention": lambda T: T.nn.MultiheadAttention(8, 2, device="meta")(
        T.ones(5, 2, 8, device="meta"), T.ones(4, 2, 8, device="meta"), T.ones(4, 2, 8, device="meta")),
    "Conv2d backward": _conv_backward,
    "LayerNorm backward": _layer_norm,
    "Embedding backward": _embedding,
    "cross_entropy backward": lambda T: (lambda x: (T.nn.functional.cross_entropy(
        x, T.zeros(4, dtype=T.int64, device="meta")).backward(), x.grad)[1])(T.ones(4, 5, device="meta", requires_grad=True)),
    "matmul backward": _matmul_backward,
    "autograd.grad": lambda T: T.autograd.grad(T.zeros(4, 6, device="meta", requires_grad=True).exp().sum(),
                                               T.zeros(1, device="meta", requires_grad=True), allow_unused=True),
    "views backward": _views_backward,
    "views": lambda T: [f(T.zeros(4, 6, device="meta")) for f in (
        lambda x: x.view(6, 4), lambda x: x.t().contiguous(), lambda x: x[1:, ::2], lambda x: x.unsqueeze(0).expand(3, 4, 6),
        lambda x: x.as_strided((2, 2), (1, 2)), lambda x: x.transpose(0, 1).reshape(-1), lambda x: x.unbind(0)[0],
        lambda x: x.narrow(1, 1, 2), lambda x: x.new_tensor([1, 2]))],
    "strides": lambda T: (lambda x: [x.t().stride(), x[1:, ::2].stride(), x.t().is_contiguous(),
                                     x[1:, ::2].storage_offset(), x[1].data_ptr()])(T.zeros(4, 6, device="meta")),
    "in-place": _in_place,
    "indexing": lambda T: (lambda x: [x[T.tensor([0, 2], device="meta")], x[[1, 2]], x.index_select(0, T.tensor([1])),
                                      T.gather(x, 1, T.zeros(5, 2, dtype=T.int64, device="meta"))])(T.zeros(5, 3, device="meta")),
    "reductions and casts": lambda T: (lambda x: [x.sum(), x.mean(), x.argmax(), x.double(), x.to(T.int32), x.sum() > 0,
                                                  T.cat([x, x], 1), T.stack([x, x])])(T.zeros(2, 3, device="meta")),
    "requires_grad": lambda T: (lambda x: [x.requires_grad, (x * 2).requires_grad, x.is_leaf])(
        T.zeros(2, device="meta", requires_grad=True)),
    "cpu to meta is differentiable": lambda T: (lambda y: [y, type(y.grad_fn).__name__])(
        T.ones(2, 3, requires_grad=True).to("meta")),
    "with a 0-d cpu tensor": lambda T: T.tensor(1.0) + T.zeros(2, device="meta"),
    "with a cpu tensor": lambda T: T.zeros(2, 3, device="meta") + T.zeros(2, 3),
    "cpu with a 0-d meta tensor": lambda T: T.zeros(2, 3) * T.zeros((), device="meta"),
    "copy_ out of meta": lambda T: T.zeros(2, 3).copy_(T.ones(2, 3, device="meta")),
    "empty_like to cpu": lambda T: T.empty_like(T.zeros(2, 3, device="meta"), device="cpu"),
    "to_empty(device=None) stays meta": lambda T: list(T.nn.Linear(3, 4, device="meta").to_empty(device=None).parameters()),
    "to_empty": _to_empty,
    "load_state_dict assign": _load_assign,
    "normal_ std < 0": lambda T: T.zeros(2, device="meta").normal_(0.0, -1.0),
}


@pytest.mark.parametrize("case", list(_PROGRAMS))
def test_meta_programs_as_torch(case):
    """Devices, shapes, dtypes (and error classes) of each program's results, against torch."""
    assert _described(tracegrad, _PROGRAMS[case]) == _described(torch, _PROGRAMS[case])


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(2, 3, device="meta", requires_grad=True),
    lambda lib: lib.zeros(2, 3, device="meta", dtype=lib.float64),
    lambda lib: lib.zeros(2, 3, device="meta", requires_grad=True) * 2,
    lambda lib: lib.zeros((), device="meta"),
])
def test_meta_repr_as_torch(make):
    assert repr(make(tracegrad)).replace("tracegrad.", "torch.") == repr(make(torch))


def _optimizer_steps(T):
    layer = T.nn.Linear(3, 2, device="meta")
    seen = []
    for opt in (T.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9), T.optim.AdamW(layer.parameters())):
        for _ in range(2):      # the second backward accumulates into the meta .grad
            layer(T.ones(4, 3, device="meta")).sum().backward()
        opt.step()
        opt.zero_grad()
        seen += [layer.weight] + [v for v in opt.state[layer.weight].values()]
    return seen


def _double_backward(T):
    x = T.zeros(3, device="meta", requires_grad=True)
    g, = T.autograd.grad((x * x).sum(), x, create_graph=True)
    g.sum().backward()
    return g, x.grad, type(g.grad_fn).__name__


_PROGRAMS_MORE = {
    "optimizer steps": _optimizer_steps,
    "double backward": _double_backward,
    "draws from meta parameters": lambda T: [
        T.ones(4, 3, device="meta").multinomial(2), T.bernoulli(T.ones(3, device="meta")),
        T.normal(T.ones(3, 1, device="meta", requires_grad=True), T.ones(2, device="meta")),
        T.normal(T.ones(3, device="meta"), 1.0), T.ones(3, device="meta").bernoulli_(0.3)],
}


@pytest.mark.parametrize("case", list(_PROGRAMS_MORE))
def test_meta_training_as_torch(case):
    assert _described(tracegrad, _PROGRAMS_MORE[case]) == _described(torch, _PROGRAMS_MORE[case])


def test_compile_runs_meta_calls_eagerly():
    f = tracegrad.compile(lambda x: (x * 2).sum(1))
    with pytest.warns(UserWarning, match="meta tensor"):
        outs = [f(tracegrad.ones(2, 3, device="meta")) for _ in range(3)]
    assert all(o.is_meta and tuple(o.shape) == (2,) for o in outs)


@pytest.mark.parametrize("swap", [False, True])
def test_load_state_dict_assign_under_swap_flag_keeps_objects_as_torch(swap):
    # torch.__future__.set_swap_module_params_on_conversion(True) makes load_state_dict(assign=True)
    # swap the checkpoint into the module's own Parameter/buffer objects (PyTorch's
    # test/nn/test_load_state_dict.py test_load_state_dict_assign_meta_swap_True_*)
    seen = []
    for T in LIBS:
        before = T.__future__.get_swap_module_params_on_conversion()
        T.__future__.set_swap_module_params_on_conversion(swap)
        try:
            with T.device("meta"):
                m = T.nn.BatchNorm1d(2)
            old = m.state_dict(keep_vars=True)
            sd = T.nn.BatchNorm1d(2).state_dict()
            m.load_state_dict(sd, assign=True)
            new = m.state_dict(keep_vars=True)
            seen.append([(k, new[k] is old[k], new[k] is sd[k], type(new[k]).__name__, new[k].requires_grad,
                          new[k].device.type) for k in sd])
            assert m(T.ones(3, 2)).shape == (3, 2)
        finally:
            T.__future__.set_swap_module_params_on_conversion(before)
    assert seen[0] == seen[1]
