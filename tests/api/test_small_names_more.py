"""More of torch's smaller public names, each against torch on the same program:
``Stream``/``Event`` (CPU semantics), ``as_strided_scatter``, ``slice_inverse``, the function
forms of ``as_strided_``/``resize_as_``, ``Tensor.chalf``/``Tensor.name``, the
``DisableTorchFunction`` context managers, ``nn.Container``, ``torch.embedding_bag``'s ATen form,
``torch.lstm``/``gru``/``rnn_tanh``/``rnn_relu`` and ``linear_cross_entropy``."""
import itertools
import warnings

import numpy as np
import pytest

import tracegrad

torch = pytest.importorskip("torch")


def _outcome(f):
    try:
        return repr(f())
    except Exception as e:  # noqa: BLE001  (the class and message are what is compared)
        return type(e).__name__, str(e)


def _streams(lib):
    s, e = lib.Stream(), lib.Event()
    calls = (lambda: s, lambda: e, lambda: e.record(), lambda: e.record(s), lambda: e.synchronize(), lambda: e.wait(),
             lambda: e.event_id, lambda: e.query(), lambda: s.query(), lambda: s.synchronize(),
             lambda: s.wait_stream(s), lambda: s.wait_event(e), lambda: s.record_event(), lambda: s.native_handle,
             lambda: s.is_capturing(), lambda: s == lib.Stream(), lambda: hash(s) == hash(lib.Stream()),
             lambda: e.elapsed_time(e),
             lambda: lib.Event(enable_timing=True).elapsed_time(lib.Event(enable_timing=True)),
             lambda: e.ipc_handle(), lambda: lib.Stream(device="cpu", priority=0),
             lambda: lib.Event("cpu", enable_timing=True), lambda: lib.Stream(device="meta"),
             lambda: (s.device, s.device_index, s.stream_id, s.device_type, e.device),
             lambda: lib.Stream(stream_id=3, device_index=0, device_type=0))
    out = [_outcome(f) for f in calls]
    with s as entered:
        out.append(entered is s)
    return out


def test_stream_and_event_match_torch_cpu():
    assert _streams(tracegrad) == _streams(torch)


def _as_strided_scatter(lib):
    x = lib.arange(6.).reshape(2, 3).requires_grad_()
    src = lib.tensor([10., 20.], requires_grad=True)
    out = lib.as_strided_scatter(x * 1, src, (2,), (4,), 1)
    (out * lib.arange(6.).reshape(2, 3)).sum().backward()
    return out.detach().numpy(), x.detach().as_strided_scatter(src.detach(), (2,), (4,), 1).numpy(), src.grad.numpy()


def test_as_strided_scatter_values_and_src_grad_match_torch():
    for ours, theirs in zip(_as_strided_scatter(tracegrad), _as_strided_scatter(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_as_strided_scatter_input_grad_zeroes_the_written_positions():
    # torch 2.13's AsStridedScatterBackward0 returns the gradient *at* the written positions for
    # input (it should zero them, as select_scatter's does); ours is the true derivative
    x = tracegrad.zeros(2, 3, requires_grad=True)
    out = tracegrad.as_strided_scatter(x, tracegrad.ones(2), (2,), (4,), 1)
    (gx,) = tracegrad.autograd.grad(out, (x,), tracegrad.arange(6.).reshape(2, 3))
    np.testing.assert_array_equal(gx.numpy(), [[0, 0, 2], [3, 4, 0]])
    for lib in (tracegrad, torch):
        with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
            lib.as_strided_scatter(lib.zeros(2, 3), lib.ones(2), (3,), (1,))


def test_slice_inverse_and_function_forms_match_torch():
    def run(lib):
        base = lib.arange(12.).reshape(6, 2)
        t = base.t()
        inv = lib.slice_inverse(t[:, 1:3], t, 1, 1, 3)
        y = lib.zeros(3)
        lib.as_strided_(y, (2,), (1,), 1)
        z = lib.zeros(3)
        lib.resize_as_(z, lib.zeros(2, 2))
        too_far = _outcome(lambda: lib.slice_inverse(base[1:3].clone(), base, 0, 1, 3))
        return (lib.slice_inverse(base[1:5:2], base, 0, 1, 5, 2).numpy(), inv.numpy(), inv.stride(),
                tuple(y.shape), y.storage_offset(), tuple(z.shape), too_far[0])
    ours, theirs = run(tracegrad), run(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_tensor_name_chalf_and_disable_torch_function():
    assert tracegrad.ones(2).name is None and torch.ones(2).name is None
    with pytest.raises(AttributeError):
        tracegrad.ones(2).name = "x"
    with pytest.raises(NotImplementedError, match="complex32"):   # XLA has no complex32 arrays
        tracegrad.ones(2).chalf()

    class Sub(tracegrad.Tensor):
        seen = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = tracegrad.ones(2).as_subclass(Sub)
    with tracegrad.DisableTorchFunctionSubclass():
        y = x + 1
    assert Sub.seen == [] and type(y) is tracegrad.Tensor
    with tracegrad.DisableTorchFunction():
        x * 2
    assert Sub.seen == []
    x * 2
    assert Sub.seen


def test_container_is_deprecated_module():
    for lib in (tracegrad, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = lib.nn.Container(a=lib.nn.Linear(1, 1))

            class Sub(lib.nn.Container):
                pass
        assert [x.category for x in w] == [FutureWarning, FutureWarning]
        assert list(dict(c.named_children())) == ["a"] and "nn.Container` is deprecated" in str(w[0].message)


def _embedding_bag(lib):
    out = []
    w = lib.arange(12.).reshape(6, 2)
    w[3, 1] = 11.   # a tie with row 5 in feature 1: the first position wins
    i, o = lib.tensor([1, 2, 4, 5, 4, 3]), lib.tensor([0, 2, 2])
    for mode, pidx in itertools.product((0, 1, 2), (None, 4)):
        out.append([r.tolist() for r in lib.embedding_bag(w, i, o, False, mode, False, None, False, pidx)])
    out.append([r.tolist() for r in lib.embedding_bag(w, i, lib.tensor([0, 2, 6]), False, 1, False, None, True, None)])
    out.append([r.tolist() for r in lib.embedding_bag(w, i, o, False, 0, False, lib.arange(6.), False, None)])
    out.append(_outcome(lambda: lib.embedding_bag(w, i, None, False, 2, False, None, False, None)))
    # ATen's shape checks: RuntimeError (nn.functional.embedding_bag raises ValueError)
    out.append(_outcome(lambda: lib.embedding_bag(w, lib.zeros(2, 0, 3, dtype=lib.long), o)))
    out.append(_outcome(lambda: lib.embedding_bag(w, i, lib.zeros(2, 1, dtype=lib.long))))
    out.append(_outcome(lambda: lib.embedding_bag(lib.zeros(2, 2, 2), i, o)))
    return out


def test_embedding_bag_aten_form_matches_torch():
    assert _embedding_bag(tracegrad) == _embedding_bag(torch)


def _private_embedding_bag(lib):
    # torch._embedding_bag / _embedding_bag_forward_only: the ATen ops behind embedding_bag, whose
    # padding_idx default -1 means none; test/nn/test_embedding.py calls both
    w = lib.arange(12.).reshape(6, 2).requires_grad_()
    i, o = lib.tensor([1, 2, 4, 5, 4, 3]), lib.tensor([0, 2, 2])
    out = []
    for f in (lib._embedding_bag, lib._embedding_bag_forward_only):
        with lib.no_grad():
            out += [[r.tolist() for r in f(w, i, o, False, mode, False, None, False, pidx)]
                    for mode, pidx in itertools.product((0, 1, 2), (-1, 4))]
        out.append(_outcome(lambda: f(w, lib.zeros(2, 0, 3, dtype=lib.long), o)))
        out.append(_outcome(lambda: f(w, i, lib.zeros(2, 1, dtype=lib.long))))
        out.append(_outcome(lambda: f(lib.zeros(2, 2, 2), i, o)))
    r = lib._embedding_bag(w, i, o, mode=1)[0]
    r.sum().backward()
    out += [type(r.grad_fn).__name__, w.grad.tolist()]
    out.append(type(_outcome(lambda: lib._embedding_bag_forward_only(w, i, o))).__name__)   # torch raises
    return out


def test_private_embedding_bag_ops_match_torch():
    ours, theirs = _private_embedding_bag(tracegrad), _private_embedding_bag(torch)
    assert ours[-1] == theirs[-1] == "tuple"
    assert ours == theirs


def _recurrent(lib, mode, bidirectional, batch_first, packed, has_biases):
    rs = np.random.RandomState(0)
    L, D, H, I, B, T = 2, 2 if bidirectional else 1, 3, 4, 2, 3
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    params = []
    for layer in range(L):
        for _ in range(D):
            shapes = [(G * H, I if layer == 0 else H * D), (G * H, H)] + ([(G * H,), (G * H,)] if has_biases else [])
            params += [lib.tensor(rs.randn(*s).astype(np.float32) * 0.5, requires_grad=True) for s in shapes]
    x = lib.tensor(rs.randn(*((B, T, I) if batch_first else (T, B, I))).astype(np.float32), requires_grad=True)
    h0 = lib.tensor(rs.randn(L * D, B, H).astype(np.float32))
    hx = (h0, lib.tensor(rs.randn(L * D, B, H).astype(np.float32))) if mode == "lstm" else h0
    fn = getattr(lib, mode)
    if packed:
        seq = lib.nn.utils.rnn.pack_padded_sequence(x, [3, 2], batch_first=batch_first)
        res = fn(seq.data, seq.batch_sizes, hx, params, has_biases, L, 0.0, False, bidirectional)
    else:
        res = fn(x, hx, params, has_biases, L, 0.0, False, bidirectional, batch_first)
    w = [lib.tensor(rs.randn(*r.shape).astype(np.float32)) for r in res]
    sum((r * wi).sum() for r, wi in zip(res, w)).backward()
    return [r.detach().numpy() for r in res] + [x.grad.numpy()] + [p.grad.numpy() for p in params]


@pytest.mark.parametrize("mode,bidirectional,batch_first,packed,has_biases",
                         [("lstm", True, False, True, True), ("lstm", False, True, False, False),
                          ("gru", True, True, False, True), ("rnn_tanh", False, False, True, True),
                          ("rnn_relu", False, True, False, True)])
def test_functional_recurrent_nets_match_torch(mode, bidirectional, batch_first, packed, has_biases):
    ours = _recurrent(tracegrad, mode, bidirectional, batch_first, packed, has_biases)
    theirs = _recurrent(torch, mode, bidirectional, batch_first, packed, has_biases)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-5)


def _linear_cross_entropy(lib):
    rs = np.random.RandomState(0)
    F, out = lib.nn.functional, []
    x = lib.tensor(rs.randn(5, 3).astype(np.float32), requires_grad=True)
    w = lib.tensor(rs.randn(4, 3).astype(np.float32), requires_grad=True)
    b = lib.tensor(rs.randn(4).astype(np.float32), requires_grad=True)
    t = lib.tensor([0, 3, 1, -100, 2])
    for kw in ({}, dict(linear_bias=b, reduction="sum"), dict(reduction="none", ignore_index=-100),
               dict(label_smoothing=0.1, weight=lib.tensor([1., 2., 3., 4.]))):
        loss = F.linear_cross_entropy(x, w, t, **kw)
        out.append([loss.detach().numpy(), *(g.numpy() for g in lib.autograd.grad(loss.sum(), (x, w)))])
    wk = lib.tensor(rs.randn(4, 2, 3).astype(np.float32))   # K-dimensional loss
    out.append([F.linear_cross_entropy(x.detach(), wk, lib.tensor(rs.randint(0, 4, (5, 2)))).numpy()])
    probs = lib.softmax(lib.tensor(rs.randn(5, 4).astype(np.float32)), 1)
    out.append([F.linear_cross_entropy(x.detach(), w.detach(), probs).numpy()])
    m = lib.nn.LinearCrossEntropyLoss(3, 4, bias=True, out_features=(2,))
    with lib.no_grad():
        m.linear.weight.copy_(lib.tensor(rs.randn(8, 3).astype(np.float32)))
        m.linear.bias.copy_(lib.tensor(rs.randn(8).astype(np.float32)))
    out.append([m(x.detach(), lib.tensor(rs.randint(0, 4, (5, 2)))).detach().numpy()])
    errors = [_outcome(f) for f in (
        lambda: F.linear_cross_entropy(x[None], w, t), lambda: F.linear_cross_entropy(x, w[0], t),
        lambda: F.linear_cross_entropy(x, w[:, :2], t), lambda: F.linear_cross_entropy(x, w, t, linear_bias=b[:2]),
        lambda: F.linear_cross_entropy(x[0], wk, t[0]), lambda: F.linear_cross_entropy(x, w, probs, ignore_index=1),
        lambda: lib.nn.LinearCrossEntropyLoss(3, 4, weight=lib.ones(3)),
        lambda: lib.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=2.0))]
    return out, errors, repr(m)


def test_linear_cross_entropy_matches_torch():
    (ours, our_errors, our_repr), (theirs, their_errors, their_repr) = (_linear_cross_entropy(tracegrad),
                                                                        _linear_cross_entropy(torch))
    for a, b in zip(ours, theirs):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, atol=1e-5)
    assert our_errors == their_errors and all(e[0] == "RuntimeError" for e in our_errors)
    assert our_repr == their_repr


def test_linear_cross_entropy_options_warn_and_compute_the_same():
    x, w = tracegrad.randn(4, 3), tracegrad.randn(5, 3)
    t = tracegrad.tensor([0, 1, 2, 3])
    opts = tracegrad.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    ref = tracegrad.nn.functional.linear_cross_entropy(x, w, t)
    assert float(tracegrad.nn.functional.linear_cross_entropy(x, w, t, options=opts)) == float(ref)
    with pytest.warns(UserWarning, match="options`` ignored"):
        tracegrad.nn.functional.linear_cross_entropy(x, w, t, options=opts, label_smoothing=0.1)
