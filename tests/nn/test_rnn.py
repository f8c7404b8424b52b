"""nn.RNN/LSTM/GRU, the cells and nn.utils.rnn against torch: torch's initialised weights are
copied in through the parameters, then outputs, final states, grad_fn names and every
parameter and input gradient are compared; state_dict keys, init ranges, errors too."""
import warnings

import numpy as np
import pytest

import tracegrad
from _fresh_process import fresh_process
from tracegrad._ops import OPS
from parity import check_module, close, copy_state, get_torch, record_ops

R = np.random.RandomState(0)
RTOL, ATOL = 1e-5, 1e-5
_SEEN = set()     # ops the tracegrad side of run_both dispatched (coverage test at the end)


def x(*shape):
    return R.randn(*shape).astype(np.float32)


def _flat(h):
    return h if isinstance(h, tuple) else (h,)


def run_both(build, program, seed=0):
    """``program(mod, m) -> (tensors to compare, tensors whose .grad to compare, loss)`` runs
    on torch's module and on a tracegrad copy of it; everything listed must agree."""
    torch = get_torch()
    torch.manual_seed(seed)
    tm, gm = build(torch.nn), build(tracegrad.nn)
    copy_state(tm, gm)
    res = []
    for mod, m in ((torch, tm), (tracegrad, gm)):
        with record_ops() as rec:
            outs, leaves, loss = program(mod, m)
            loss.backward()
        if mod is tracegrad:
            _SEEN.update(rec.names)
        res.append((outs, [t.grad for t in leaves] + [p.grad for p in m.parameters()]))
    (to, tg), (go, gg) = res
    assert len(to) == len(go) and len(tg) == len(gg)
    for a, b in zip(go, to):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b, RTOL, ATOL)
    for a, b in zip(gg, tg):
        close(a, b, RTOL, ATOL)
    return tm, gm, to, go


def _loss(out, hidden):
    # weights every element differently so that a wrong permutation cannot cancel out
    return (out * out).sum() + sum((h * (i + 1.5)).sum() for i, h in enumerate(_flat(hidden)))


CONFIGS = [
    ("LSTM", {}, (5, 2, 3)),
    ("LSTM", dict(num_layers=2), (4, 3, 3)),
    ("LSTM", dict(bidirectional=True), (4, 2, 3)),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), (2, 4, 3)),
    ("LSTM", dict(proj_size=2), (4, 2, 3)),
    ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True), (4, 2, 3)),
    ("LSTM", dict(bias=False), (4, 2, 3)),
    ("LSTM", {}, (4, 3)),                                        # unbatched
    ("GRU", {}, (5, 2, 3)),
    ("GRU", dict(num_layers=2, bidirectional=True, bias=False), (4, 2, 3)),
    ("GRU", dict(batch_first=True), (2, 4, 3)),
    ("RNN", {}, (5, 2, 3)),
    ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True), (4, 2, 3)),
    ("RNN", dict(batch_first=True), (4, 3)),                     # unbatched, batch_first
]


@pytest.mark.parametrize("cls,kw,shape", CONFIGS, ids=lambda v: str(v))
def test_module_parity_zero_state(cls, kw, shape):
    xs = x(*shape)

    def program(mod, m):
        inp = mod.tensor(xs, requires_grad=True)
        out, hidden = m(inp)
        return (out,) + _flat(hidden), [inp], _loss(out, hidden)
    _, _, to, go = run_both(lambda nn: getattr(nn, cls)(3, 4, **kw), program)
    # grad_fn: torch CPU's oneDNN LSTM node per layer; torch unrolls RNN/GRU and projected
    # LSTMs per step, where we keep one MkldnnRnnLayerBackward0 node (documented difference)
    if cls == "LSTM" and not kw.get("proj_size"):
        assert type(go[0].grad_fn).__name__ == type(to[0].grad_fn).__name__
    for a, b in zip(go[1:], to[1:]):
        assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__


@pytest.mark.parametrize("cls,kw,batched", [("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2), True),
                                            ("LSTM", {}, False), ("GRU", dict(num_layers=2), False),
                                            ("RNN", dict(bidirectional=True), True)])
def test_module_parity_given_state(cls, kw, batched):
    nd = 2 if kw.get("bidirectional") else 1
    L, B = kw.get("num_layers", 1) * nd, 2
    P = kw.get("proj_size") or 4
    xs = x(4, B, 3) if batched else x(4, 3)
    hs = x(L, B, P) if batched else x(L, P)
    cs = x(L, B, 4) if batched else x(L, 4)

    def program(mod, m):
        inp, h0 = mod.tensor(xs, requires_grad=True), mod.tensor(hs, requires_grad=True)
        leaves = [inp, h0]
        if cls == "LSTM":
            c0 = mod.tensor(cs, requires_grad=True)
            leaves.append(c0)
            out, hidden = m(inp, (h0, c0))
        else:
            out, hidden = m(inp, h0)
        return (out,) + _flat(hidden), leaves, _loss(out, hidden)
    run_both(lambda nn: getattr(nn, cls)(3, 4, **kw), program)


@pytest.mark.parametrize("cls,kw,enforce_sorted,with_state", [
    ("LSTM", dict(num_layers=2, bidirectional=True), True, False), ("GRU", dict(bidirectional=True), False, True),
    ("RNN", {}, False, False), ("LSTM", dict(batch_first=True, proj_size=2), False, True)])
def test_packed_sequence_parity(cls, kw, enforce_sorted, with_state):
    bf = kw.get("batch_first", False)
    lengths = [5, 3, 2] if enforce_sorted else [3, 5, 2]
    xs = x(5, 3, 3)
    nd = 2 if kw.get("bidirectional") else 1
    hs, cs = x(kw.get("num_layers", 1) * nd, 3, kw.get("proj_size") or 4), x(kw.get("num_layers", 1) * nd, 3, 4)

    def program(mod, m):
        inp = mod.tensor(xs.transpose(1, 0, 2) if bf else xs, requires_grad=True)
        packed = mod.nn.utils.rnn.pack_padded_sequence(inp, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
        hx = None
        if with_state:
            hx = (mod.tensor(hs), mod.tensor(cs)) if cls == "LSTM" else mod.tensor(hs)
        out, hidden = m(packed, hx)
        assert isinstance(out, mod.nn.utils.rnn.PackedSequence)
        padded, lens = mod.nn.utils.rnn.pad_packed_sequence(out, batch_first=bf, total_length=6)
        assert lens.tolist() == lengths
        return (out.data, out.batch_sizes, padded) + _flat(hidden), [inp], _loss(padded, hidden)
    run_both(lambda nn: getattr(nn, cls)(3, 4, **kw), program)


def test_packed_padded_positions_are_zero_and_state_is_last_valid_step():
    gm = tracegrad.nn.LSTM(3, 4)
    xs = tracegrad.tensor(x(5, 2, 3))
    packed = tracegrad.nn.utils.rnn.pack_padded_sequence(xs, [5, 2])
    out, (h, c) = gm(packed)
    padded, _ = tracegrad.nn.utils.rnn.pad_packed_sequence(out)
    assert float(padded[2:, 1].abs().sum()) == 0.0
    close(h[0, 1], padded[1, 1])
    _, (h_short, _) = gm(xs[:2, 1:2])          # the short sequence alone, unpacked
    close(h[0, 1], h_short[0, 0])


# ---- nn.utils.rnn -------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(batch_first=True, padding_value=-1.0), dict(padding_side="left"),
                                dict(batch_first=True, padding_side="left", padding_value=2.0)])
def test_pad_sequence(kw):
    torch = get_torch()
    seqs = [x(n, 2) for n in (2, 4, 3)]
    want = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
    got = tracegrad.nn.utils.rnn.pad_sequence([tracegrad.tensor(s) for s in seqs], **kw)
    assert tuple(got.shape) == tuple(want.shape)
    close(got, want)


def test_pack_sequence_and_unpack_roundtrip():
    torch = get_torch()
    seqs = [x(n, 2) for n in (2, 4, 3)]
    p1 = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    p2 = tracegrad.nn.utils.rnn.pack_sequence([tracegrad.tensor(s) for s in seqs], enforce_sorted=False)
    for a, b in zip(p2, p1):
        close(a, b)
    assert p2.batch_sizes.dtype is tracegrad.int64
    for a, s in zip(tracegrad.nn.utils.rnn.unpack_sequence(p2), seqs):
        close(a, s)
    p3 = tracegrad.nn.utils.rnn.PackedSequence(p2.data, p2.batch_sizes, p2.sorted_indices)
    assert p3.unsorted_indices.tolist() == p1.unsorted_indices.tolist()
    assert p2.to(tracegrad.float64).data.dtype is tracegrad.float64


def test_pack_padded_gradient_flows_to_input():
    torch = get_torch()
    xs = x(4, 3, 2)
    grads = []
    for mod in (torch, tracegrad):
        inp = mod.tensor(xs, requires_grad=True)
        p = mod.nn.utils.rnn.pack_padded_sequence(inp, [4, 2, 1])
        (p.data * mod.arange(p.data.shape[0] * 2).reshape(-1, 2)).sum().backward()
        grads.append(inp.grad)
    close(grads[1], grads[0])


def _same_error(fn):
    torch = get_torch()
    errs = []
    for mod in (torch, tracegrad):
        with pytest.raises(Exception) as ei:
            fn(mod)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]), (errs[1], errs[0])
    return errs


SAME_TEXT = {"unsorted", "zero_len", "total_length", "bad_side", "input_size", "hidden_size", "lstm_cx_size", "rank4",
             "hx_rank", "lstm_hx_rank", "cell_rank", "cell_input_size", "cell_hidden", "proj_ge_hidden",
             "dropout_range", "bias_type", "nonlin", "dtype"}
ERRORS = {
    "unsorted": lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 2, 1), [1, 3]),
    "zero_len": lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 2, 1), [3, 0]),
    "total_length": lambda m: m.nn.utils.rnn.pad_packed_sequence(
        m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 2, 1), [3, 2]), total_length=2),
    "bad_side": lambda m: m.nn.utils.rnn.pad_sequence([m.zeros(2)], padding_side="top"),
    "input_size": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 6)),
    "hidden_size": lambda m: m.nn.GRU(3, 4)(m.zeros(5, 2, 3), m.zeros(1, 3, 4)),
    "lstm_cx_size": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3), (m.zeros(1, 2, 4), m.zeros(1, 2, 5))),
    "rank4": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3, 1)),
    "hx_rank": lambda m: m.nn.RNN(3, 4)(m.zeros(5, 2, 3), m.zeros(2, 4)),
    "lstm_hx_rank": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 3), (m.zeros(1, 1, 4), m.zeros(1, 1, 4))),
    "cell_rank": lambda m: m.nn.LSTMCell(3, 4)(m.zeros(5, 2, 3)),
    "cell_input_size": lambda m: m.nn.GRUCell(3, 4)(m.zeros(2, 5)),
    "cell_hidden": lambda m: m.nn.RNNCell(3, 4)(m.zeros(2, 3), m.zeros(3, 4)),
    "proj_ge_hidden": lambda m: m.nn.LSTM(3, 4, proj_size=4),
    "proj_on_gru": lambda m: m.nn.GRU(3, 4, proj_size=2),
    "dropout_range": lambda m: m.nn.LSTM(3, 4, dropout=1.5),
    "bias_type": lambda m: m.nn.LSTM(3, 4, bias=1),
    "nonlin": lambda m: m.nn.RNN(3, 4, nonlinearity="gelu"),
    "dtype": lambda m: m.nn.LSTM(3, 4)(m.zeros(5, 2, 3, dtype=m.float64)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    theirs, ours = _same_error(ERRORS[name])
    if name in SAME_TEXT:
        assert str(ours).replace("tracegrad.", "torch.") == str(theirs), (str(ours), str(theirs))


# ---- cells ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu")), ("GRUCell", {}),
                                    ("GRUCell", dict(bias=False))])
@pytest.mark.parametrize("shape", [(2, 3), (3,)])
@pytest.mark.parametrize("with_state", [False, True])
def test_single_state_cells(cls, kw, shape, with_state):
    inputs = [x(*shape)] + ([x(*(shape[:-1] + (4,)))] if with_state else [])
    check_module(lambda nn: getattr(nn, cls)(3, 4, **kw), inputs)


@pytest.mark.parametrize("shape", [(2, 3), (3,)])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_cell(shape, with_state):
    hs, cs = x(*(shape[:-1] + (4,))), x(*(shape[:-1] + (4,)))

    def program(mod, m):
        inp = mod.tensor(x_in, requires_grad=True)
        leaves = [inp]
        if with_state:
            h0, c0 = mod.tensor(hs, requires_grad=True), mod.tensor(cs, requires_grad=True)
            leaves += [h0, c0]
            h, c = m(inp, (h0, c0))
        else:
            h, c = m(inp)
        return (h, c), leaves, _loss(h, c)
    x_in = x(*shape)
    _, _, to, go = run_both(lambda nn: nn.LSTMCell(3, 4), program)
    for a, b in zip(go, to):
        assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__


def test_cell_unrolled_equals_layer():
    """A GRUCell stepped by hand with a GRU's weights gives the GRU's output."""
    gru, cell = tracegrad.nn.GRU(3, 4), tracegrad.nn.GRUCell(3, 4)
    cell.load_state_dict({k[:-3]: v for k, v in gru.state_dict().items()})
    xs = tracegrad.tensor(x(5, 2, 3))
    out, h_n = gru(xs)
    h = None
    for t in range(5):
        h = cell(xs[t], h)
        close(out[t], h)
    close(h_n[0], h)


# ---- parameters, state_dict, init ------------------------------------------------------------
@pytest.mark.parametrize("cls,kw", [("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
                                    ("GRU", dict(bias=False, num_layers=2)), ("RNN", dict(bidirectional=True)),
                                    ("LSTMCell", {}), ("GRUCell", dict(bias=False))])
def test_state_dict_interchange(cls, kw):
    torch = get_torch()
    tm, gm = getattr(torch.nn, cls)(3, 4, **kw), getattr(tracegrad.nn, cls)(3, 4, **kw)
    tsd, gsd = tm.state_dict(), gm.state_dict()
    assert list(gsd) == list(tsd)
    assert [tuple(v.shape) for v in gsd.values()] == [tuple(v.shape) for v in tsd.values()]
    gm.load_state_dict({k: tracegrad.tensor(v.numpy()) for k, v in tsd.items()})
    for k, v in gm.state_dict().items():
        close(v, tsd[k])
    tm2 = getattr(torch.nn, cls)(3, 4, **kw)
    tm2.load_state_dict({k: torch.tensor(v.numpy()) for k, v in gm.state_dict().items()})
    assert repr(gm) == repr(tm)


def test_init_is_torch_uniform():
    gm = tracegrad.nn.LSTM(3, 16, num_layers=2)
    bound = 1 / 16 ** 0.5
    allv = np.concatenate([p.detach().numpy().ravel() for p in gm.parameters()])
    assert np.abs(allv).max() <= bound and allv.std() > 0.8 * bound / 3 ** 0.5
    assert len(gm.all_weights) == 2 and len(gm.all_weights[0]) == 4
    gm.flatten_parameters()                  # accepted, nothing to do


def test_dropout_between_layers_train_only():
    gm = tracegrad.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    xs = tracegrad.tensor(x(5, 2, 3))
    gm.eval()
    a, _ = gm(xs)
    b, _ = gm(xs)
    close(a, b)
    gm.train()
    c, _ = gm(xs)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
    with pytest.warns(UserWarning, match="dropout"):
        tracegrad.nn.GRU(3, 4, dropout=0.2)


@fresh_process      # JAX's process-wide jit caches are bounded LRUs: a long worker's evictions retrace
def test_one_program_per_shape(jax_traces):
    """The layer op is one jitted scan: new values of the same shapes reuse the program."""
    gm = tracegrad.nn.LSTM(3, 4)
    xs = x(6, 2, 3)
    for _ in range(2):          # the second backward accumulates into .grad: an add
        gm(tracegrad.tensor(xs))[0].sum().backward()
    before = jax_traces[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gm(tracegrad.tensor(xs + 1.0))[0].sum().backward()
        gm(tracegrad.tensor(xs - 1.0))[0].sum().backward()
    assert jax_traces[0] == before
    gm(tracegrad.tensor(x(13, 1, 3)))      # a shape no other test here runs: traced
    assert jax_traces[0] > before


def test_float64_module():
    torch = get_torch()
    torch.manual_seed(0)
    tm = torch.nn.GRU(3, 4).double()
    gm = tracegrad.nn.GRU(3, 4, dtype=tracegrad.float64)
    copy_state(tm, gm)
    xs = x(4, 2, 3).astype(np.float64)
    out, h = gm(tracegrad.tensor(xs))
    assert out.dtype is tracegrad.float64
    close(out, tm(torch.tensor(xs))[0], 1e-12, 1e-12)


def test_compiled_training_step_equals_eager():
    """An LSTM inside tracegrad.compile traces through the scan op: same losses as eager."""
    data = x(5, 2, 3), x(5, 2, 1)

    def losses(compiled):
        tracegrad.manual_seed(0)
        m, head = tracegrad.nn.LSTM(3, 4, num_layers=2, bidirectional=True), tracegrad.nn.Linear(8, 1)
        opt = tracegrad.optim.SGD(list(m.parameters()) + list(head.parameters()), lr=0.1)
        xs, ys = tracegrad.tensor(data[0]), tracegrad.tensor(data[1])

        def step(a, b):
            opt.zero_grad()
            loss = ((head(m(a)[0]) - b) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        step = tracegrad.compile(step) if compiled else step
        return [step(xs, ys).item() for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a graph break (eager fallback) warns: none allowed
        compiled = losses(True)
    np.testing.assert_allclose(compiled, losses(False), rtol=1e-6)


@pytest.mark.parametrize("kind,kw", [("LSTM", {}), ("GRU", {"num_layers": 2, "bidirectional": True}),
                                     ("RNN", {})])
def test_packed_output_node_is_cat(kind, kw):
    """A packed RNN's output data is the concatenation of each step's rows, as torch's packed
    kernels build it: its node is ``CatBackward0`` (it was a row gather, ``IndexBackward0``);
    values and gradients as torch."""
    torch = get_torch()
    seqs = [x(4, 3), x(2, 3), x(3, 3)]
    w = x(9, 8 if kw.get("bidirectional") else 4)
    got = []
    for mod in (torch, tracegrad):
        mod.manual_seed(0)
        m = getattr(mod.nn, kind)(3, 4, **kw)
        if mod is tracegrad:
            copy_state(tm, m)
        else:
            tm = m
        ins = [mod.tensor(a, requires_grad=True) for a in seqs]
        out, _ = m(mod.nn.utils.rnn.pack_sequence(ins, enforce_sorted=False))
        (out.data * mod.tensor(w)).sum().backward()
        got.append((type(out.data.grad_fn).__name__, out.data.detach().numpy(), [t.grad.numpy() for t in ins]))
    assert got[1][0] == got[0][0] == "CatBackward0"
    close(got[1][1], got[0][1], RTOL, ATOL)
    for a, b in zip(got[1][2], got[0][2]):
        close(a, b, RTOL, ATOL)


def test_every_rnn_op_has_a_parity_case(whole_module):
    """STYLE 11: every op of ``_ops/rnn.py`` ran in a torch parity case of this module."""
    if len(_SEEN) == 0:
        pytest.skip("runs only with the whole module")
    ours = {n for n, op in OPS.items() if getattr(op.fn, "__module__", "").endswith("_ops.rnn")}
    assert ours and not sorted(ours - _SEEN), f"rnn ops without a parity case: {sorted(ours - _SEEN)}"
